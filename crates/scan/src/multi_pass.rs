//! Step 3: scans of any size in several passes over tiles of 2048 elements, each tile scanned by
//! one block with the padded Blelloch scan: scan-then-propagate and reduce-then-scan.

use std::marker::PhantomData;

use gpu_harness::{Device, DeviceBuffer, DeviceView, GpuError, Kernel, KernelArg, Result};

use crate::compile;
use crate::element::ScanElement;
use crate::plan::{LaunchPlan, MultiPass, levels, multi_pass_plan, multi_pass_scratch};

// ANCHOR: launcher
/// An inclusive scan of `T` of any size in several passes. The tile sums of every level live in
/// one scratch buffer, which grows only when a larger input arrives.
pub struct MultiPassScan<T: ScanElement> {
    device: Device,
    strategy: MultiPass,
    scan_tiles: Kernel,
    add_tile_prefixes: Kernel,
    reduce_tiles: Kernel,
    scan_tiles_with_prefix: Kernel,
    sums: DeviceBuffer<T>,
    element: PhantomData<T>,
}

impl<T: ScanElement> MultiPassScan<T> {
    pub fn new(device: &Device, strategy: MultiPass) -> Result<Self> {
        let kernel = |name: &str| compile(device, &format!("{name}_{}", T::SUFFIX));
        Ok(MultiPassScan {
            device: device.clone(),
            strategy,
            scan_tiles: kernel("scan_tiles")?,
            add_tile_prefixes: kernel("add_tile_prefixes")?,
            reduce_tiles: kernel("reduce_tiles")?,
            scan_tiles_with_prefix: kernel("scan_tiles_with_prefix")?,
            sums: device.alloc(0)?,
            element: PhantomData,
        })
    }

    pub fn plan(&self, n: usize) -> Result<LaunchPlan> {
        multi_pass_plan(self.strategy, T::SUFFIX, n)
    }

    /// Makes the tile sums' scratch large enough for `n` elements.
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let needed = multi_pass_scratch(n as u64) as usize;
        if self.sums.len() < needed {
            self.sums = self.device.alloc(needed)?;
        }
        Ok(())
    }

    /// Fills the tile sums with `word` (tests poison them before a launch).
    pub fn poison_scratch(&mut self, word: u32) -> Result<()> {
        self.sums.fill_words(word)
    }

    /// The inclusive scan of `input` into `output[..input.len()]`, launching what
    /// [`Self::plan`] lists, in that order.
    pub fn inclusive(
        &mut self,
        input: DeviceView<'_, T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let n = input.len();
        if output.len() < n {
            return Err(GpuError::BadInput(format!(
                "a scan of {n} elements into a buffer of {}",
                output.len()
            )));
        }
        let plan = self.plan(n)?;
        if n == 0 {
            return Ok(());
        }
        self.reserve(n)?;
        // Level 0 is read from `input` and written to `output`; level k > 0 lives in the scratch,
        // after the levels before it, and is scanned in place.
        let sizes = levels(n as u64);
        let top = sizes.len() - 1;
        let mut starts = vec![0usize];
        for size in &sizes[1..] {
            starts.push(starts.last().copied().unwrap_or(0) + *size as usize);
        }
        let sums = |level: usize| -> Result<KernelArg> {
            Ok(self.sums.view(starts[level - 1]..starts[level - 1] + sizes[level] as usize)?.into())
        };
        let source = |level: usize| -> Result<KernelArg> {
            if level == 0 { Ok(input.into()) } else { sums(level) }
        };
        let target = |level: usize| -> Result<KernelArg> {
            if level == 0 { Ok(output.as_view().into()) } else { sums(level) }
        };
        let mut launches = plan.launches.iter();
        let mut next = || {
            launches.next().map(|l| l.config).ok_or_else(|| GpuError::BadInput("short plan".into()))
        };
        let device = &self.device;
        for (level, &size) in sizes.iter().enumerate().take(top) {
            match self.strategy {
                MultiPass::ScanThenPropagate => device
                    .launch(&self.scan_tiles, next()?)
                    .arg(source(level)?)
                    .arg(target(level)?)
                    .arg(sums(level + 1)?)
                    .arg(size)
                    .run()?,
                MultiPass::ReduceThenScan => device
                    .launch(&self.reduce_tiles, next()?)
                    .arg(source(level)?)
                    .arg(sums(level + 1)?)
                    .arg(size)
                    .run()?,
            }
        }
        // The top level is one tile; its total goes to the scratch's spare last slot.
        let spare: KernelArg = self.sums.view(self.sums.len() - 1..)?.into();
        device
            .launch(&self.scan_tiles, next()?)
            .arg(source(top)?)
            .arg(target(top)?)
            .arg(spare)
            .arg(sizes[top])
            .run()?;
        for (level, &size) in sizes.iter().enumerate().take(top).rev() {
            match self.strategy {
                MultiPass::ScanThenPropagate => device
                    .launch(&self.add_tile_prefixes, next()?)
                    .arg(target(level)?)
                    .arg(sums(level + 1)?)
                    .arg(size)
                    .run()?,
                MultiPass::ReduceThenScan => device
                    .launch(&self.scan_tiles_with_prefix, next()?)
                    .arg(source(level)?)
                    .arg(target(level)?)
                    .arg(sums(level + 1)?)
                    .arg(size)
                    .run()?,
            }
        }
        Ok(())
    }

    /// The inclusive scan of a host slice.
    pub fn inclusive_host(&mut self, input: &[T]) -> Result<Vec<T>> {
        let input = self.device.upload(input)?;
        let mut output = self.device.alloc(input.len())?;
        self.inclusive(input.as_view(), &mut output)?;
        output.to_host()
    }
}
// ANCHOR_END: launcher
