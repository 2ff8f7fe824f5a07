//! # reduce-naive: step 1 of the reduction ladder
//!
//! Sums f32 values with `cuda/reduce_naive.cu`: one element per thread, then a tree of interleaved
//! pairs in shared memory selected by `tid % (2 * stride)`. That test makes warps diverge, which is
//! the bottleneck the next step removes.
//!
//! The step is its kernel, its launch plan ([`Naive::plan`]: grid, block, shared memory) and its
//! launch ([`Naive::launch`]: the kernel's arguments), all below. The launcher, [`ReduceNaive`], is
//! the family's [`HostFinishedSum`]: it compiles the kernel, queues the step's launch, which leaves
//! one partial sum per block of [`BLOCK_SIZE`] elements, copies the `n / 256` partials back and
//! adds them on the host in f64. Reading back 1/256 of the input is cheap next to the kernel, and
//! it keeps this step about one technique, the block tree. Finishing on the device is what
//! reduce-multi-level and reduce-atomic teach.
//!
//! ```no_run
//! use gpu_harness::Device;
//! use reduce_naive::ReduceNaive;
//!
//! let device = Device::shared()?;
//! let mut reducer = ReduceNaive::new(&device)?;
//! assert_eq!(reducer.sum(&[1.0, 2.0, 3.0])?, 6.0);
//! # Ok::<(), gpu_harness::GpuError>(())
//! ```

use gpu_harness::{
    DeviceBuffer, DeviceView, GpuShape, KernelSource, Launch, Result, StepEntry, kernel_source,
};
use reduction::{
    HostFinishedStep, HostFinishedSum, ReductionPlan, blocks_covering, check_fits_u32, measured,
};

/// Threads per block, and so elements per block: one element per thread.
pub const BLOCK_SIZE: u32 = 256;

// ANCHOR: step
/// The naive step: interleaved pairs chosen by a divergent modulo test.
pub struct Naive;

/// The reduce-naive launcher.
pub type ReduceNaive = HostFinishedSum<Naive>;

impl HostFinishedStep for Naive {
    const STEP: &'static str = "naive";
    const SOURCE: KernelSource = kernel_source!("reduce_naive.cu");
    const KERNEL: &'static str = "reduce_naive";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    /// One block per [`BLOCK_SIZE`] elements, 4 bytes of shared memory per thread, one partial per
    /// block. The kernel counts elements in 32 bits, so 2^32 or more are rejected.
    fn plan(n: usize, _gpu: GpuShape) -> Result<ReductionPlan> {
        check_fits_u32("reduce-naive", n)?;
        let blocks = blocks_covering(n, BLOCK_SIZE);
        Ok(ReductionPlan::single_pass(Self::KERNEL, n, blocks, BLOCK_SIZE, BLOCK_SIZE * 4))
    }

    fn boundary_sizes() -> Vec<usize> {
        let block = BLOCK_SIZE as usize;
        vec![block - 1, block, block + 1, 2 * block + 1]
    }
}
// ANCHOR_END: step

/// The step as the tour and the benches measure it (the registry, `course.toml`, says at what
/// sizes).
pub fn steps() -> Vec<StepEntry> {
    vec![measured::host_finished::<Naive>(env!("CARGO_PKG_NAME"))]
}
