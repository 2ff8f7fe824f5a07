//! Steps 1 and 2: the whole input scanned by a single block (Hillis-Steele, Blelloch, Blelloch
//! with padding).

use std::marker::PhantomData;

use gpu_harness::{Device, DeviceBuffer, DeviceView, GpuError, Kernel, Result};

use crate::compile;
use crate::element::{ScanElement, ScanKind};
use crate::plan::{LaunchPlan, OneBlock, one_block_plan};

// ANCHOR: launcher
/// A one-block scan of `T` (at most [`OneBlock::max_elements`] elements): Hillis-Steele's is
/// inclusive, Blelloch's exclusive.
pub struct OneBlockScan<T: ScanElement> {
    device: Device,
    step: OneBlock,
    kernel: Kernel,
    element: PhantomData<T>,
}

impl<T: ScanElement> OneBlockScan<T> {
    pub fn new(device: &Device, step: OneBlock) -> Result<Self> {
        let kernel = compile(device, &format!("{}_{}", step.kernel(), T::SUFFIX))?;
        Ok(OneBlockScan { device: device.clone(), step, kernel, element: PhantomData })
    }

    /// What this step computes.
    pub fn kind(&self) -> ScanKind {
        self.step.kind()
    }

    pub fn plan(&self, n: usize) -> Result<LaunchPlan> {
        one_block_plan(self.step, T::SUFFIX, n)
    }

    /// Scans `input` into `output[..input.len()]`.
    pub fn scan(&mut self, input: DeviceView<'_, T>, output: &mut DeviceBuffer<T>) -> Result<()> {
        let n = input.len();
        if output.len() < n {
            return Err(GpuError::BadInput(format!(
                "a scan of {n} elements into a buffer of {}",
                output.len()
            )));
        }
        for planned in self.plan(n)?.launches {
            self.device
                .launch(&self.kernel, planned.config)
                .arg(input)
                .arg(&mut *output)
                .arg(n as u32)
                .run()?;
        }
        Ok(())
    }

    /// The scan of a host slice.
    pub fn scan_host(&mut self, input: &[T]) -> Result<Vec<T>> {
        let input = self.device.upload(input)?;
        let mut output = self.device.alloc(input.len())?;
        self.scan(input.as_view(), &mut output)?;
        output.to_host()
    }
}
// ANCHOR_END: launcher
