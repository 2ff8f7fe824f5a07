//! The launcher of the ladder's first steps, whose kernels leave one partial sum per block for the
//! host to add.

use std::marker::PhantomData;

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, GpuShape, Kernel, KernelSource, Launch, Result,
};

use crate::plan::ReductionPlan;

/// One step of the reduction ladder whose kernel writes one partial sum per block, for the host
/// to add. A step is its kernel, its launch plan and its launch (the kernel's arguments), all in
/// the step's crate; [`HostFinishedSum`] compiles the kernel, keeps the partials and adds them.
pub trait HostFinishedStep: Send + Sync + 'static {
    /// The step's name in benches and the book, e.g. `naive`.
    const STEP: &'static str;
    /// The kernel source file.
    const SOURCE: KernelSource;
    /// The kernel's name in [`Self::SOURCE`].
    const KERNEL: &'static str;

    /// Queues the kernel (compiled, with its plan's grid) on `input`, writing `partials`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()>;

    /// How `n` elements are reduced on a GPU of this shape. A pure function, so that plans are
    /// snapshot-tested without a GPU.
    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan>;

    /// `-D NAME=VALUE` defines the kernel is compiled with (compile-time constants).
    fn defines() -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Sizes on this step's own boundaries, added to the shared suite's [`EDGE_SIZES`].
    fn boundary_sizes() -> Vec<usize> {
        Vec::new()
    }
}

// ANCHOR: host_finished
/// The launcher of a [`HostFinishedStep`]: the compiled kernel and a scratch buffer of block
/// partials, which grows only when a larger input arrives (never inside a timed loop that was
/// warmed up). The host adds the partials in f64: they are a small fraction of the input, and
/// finishing on the device is what reduce-multi-level and reduce-atomic teach.
pub struct HostFinishedSum<S: HostFinishedStep> {
    device: Device,
    kernel: Kernel,
    partials: DeviceBuffer<f32>,
    step: PhantomData<S>,
}

impl<S: HostFinishedStep> HostFinishedSum<S> {
    /// Compiles the step's kernel (once per process) and starts with no scratch.
    pub fn new(device: &Device) -> Result<Self> {
        let kernel = device.kernel_with_defines(&S::SOURCE, S::KERNEL, &S::defines())?;
        Ok(HostFinishedSum {
            device: device.clone(),
            kernel,
            partials: device.alloc(0)?,
            step: PhantomData,
        })
    }

    /// The plan for `n` elements on this device.
    pub fn plan(&self, n: usize) -> Result<ReductionPlan> {
        S::plan(n, self.device.facts().shape())
    }

    /// Makes the partials buffer large enough for `n` inputs.
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let needed = self.plan(n)?.host_adds as usize;
        if self.partials.len() < needed {
            self.partials = self.device.alloc(needed)?;
        }
        Ok(())
    }

    /// Queues the kernel; afterwards [`Self::partials`] holds one sum per block. Returns the number
    /// of partials. Does not wait for the GPU.
    pub fn block_partials(&mut self, input: DeviceView<'_, f32>) -> Result<usize> {
        let plan = self.plan(input.len())?;
        self.reserve(input.len())?;
        for pass in &plan.passes {
            S::launch(self.device.launch(&self.kernel, pass.config), input, &mut self.partials)?;
        }
        Ok(plan.host_adds as usize)
    }

    /// Sums `input` on the device: the kernel, then the partials added on the host in f64.
    pub fn sum_device(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        let count = self.block_partials(input)?;
        let partials = self.partials.view(..count)?.to_host()?;
        // From +0.0, as every sum on the device starts: Rust's `Iterator::sum` starts from -0.0.
        Ok(partials.iter().fold(0.0f64, |sum, &p| sum + f64::from(p)) as f32)
    }

    /// Sums a host slice: uploads it, then [`Self::sum_device`].
    pub fn sum(&mut self, input: &[f32]) -> Result<f32> {
        let input = self.device.upload(input)?;
        self.sum_device(input.as_view())
    }

    /// Fills the partials with NaN, so a partial the kernel forgets to write turns the sum into NaN
    /// (tests poison before every launch).
    pub fn poison_partials(&mut self) -> Result<()> {
        self.partials.fill(f32::NAN)
    }

    /// The first `count` block partials of the last launch.
    pub fn partials(&self, count: usize) -> Result<DeviceView<'_, f32>> {
        self.partials.view(..count)
    }
}
// ANCHOR_END: host_finished
