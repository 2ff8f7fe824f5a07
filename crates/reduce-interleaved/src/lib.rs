//! # reduce-interleaved: step 2 of the reduction ladder
//!
//! reduce-naive picks its active threads with `tid % (2 * stride) == 0`, scattering them over every
//! warp. This crate keeps everything else and changes how the tree picks its threads, in two
//! kernels of `cuda/reduce_interleaved.cu`:
//!
//! - [`StridedIndex`] (`reduce_strided_index`): thread `tid` works on index `2 * stride * tid`, so
//!   the active threads are the first of the block and whole warps idle together, but the strided
//!   index makes shared-memory bank conflicts.
//! - [`Interleaved`] (`reduce_interleaved`), the step itself: sequential addressing. The stride
//!   halves from `blockDim.x / 2` and thread `tid < stride` adds `sdata[tid + stride]`: contiguous
//!   active threads and conflict-free accesses.
//!
//! Both are launched like reduce-naive (one element per thread, the host adds the partials).

use gpu_harness::{
    DeviceBuffer, DeviceView, GpuShape, KernelSource, Launch, Result, StepEntry, kernel_source,
};
use reduction::{
    HostFinishedStep, HostFinishedSum, ReductionPlan, blocks_covering, check_fits_u32, measured,
};

/// Threads per block, and elements per block.
pub const BLOCK_SIZE: u32 = 256;

const SOURCE: KernelSource = kernel_source!("reduce_interleaved.cu");

/// One element per thread, one block per [`BLOCK_SIZE`] elements: reduce-naive's plan.
fn one_element_per_thread(kernel: &'static str, n: usize) -> Result<ReductionPlan> {
    check_fits_u32("reduce-interleaved", n)?;
    Ok(ReductionPlan::single_pass(
        kernel,
        n,
        blocks_covering(n, BLOCK_SIZE),
        BLOCK_SIZE,
        BLOCK_SIZE * 4,
    ))
}

fn block_boundaries() -> Vec<usize> {
    let block = BLOCK_SIZE as usize;
    vec![block - 1, block, block + 1, 2 * block + 1]
}

/// Harris's second kernel: strided index, no divergence inside working warps, bank conflicts.
pub struct StridedIndex;

impl HostFinishedStep for StridedIndex {
    const STEP: &'static str = "strided-index";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_strided_index";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    fn plan(n: usize, _gpu: GpuShape) -> Result<ReductionPlan> {
        one_element_per_thread(Self::KERNEL, n)
    }

    fn boundary_sizes() -> Vec<usize> {
        block_boundaries()
    }
}

// ANCHOR: step
/// Sequential addressing: contiguous active threads, no divergence, no bank conflicts.
pub struct Interleaved;

/// The reduce-interleaved launcher (sequential addressing).
pub type ReduceInterleaved = HostFinishedSum<Interleaved>;

impl HostFinishedStep for Interleaved {
    const STEP: &'static str = "interleaved";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_interleaved";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    fn plan(n: usize, _gpu: GpuShape) -> Result<ReductionPlan> {
        one_element_per_thread(Self::KERNEL, n)
    }

    fn boundary_sizes() -> Vec<usize> {
        block_boundaries()
    }
}
// ANCHOR_END: step

/// The strided-index launcher.
pub type ReduceStridedIndex = HostFinishedSum<StridedIndex>;

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes).
pub fn steps() -> Vec<StepEntry> {
    let crate_name = env!("CARGO_PKG_NAME");
    vec![
        measured::host_finished::<StridedIndex>(crate_name),
        measured::host_finished::<Interleaved>(crate_name),
    ]
}
