//! # reduce-first-add: step 3 of the reduction ladder
//!
//! reduce-interleaved leaves half its threads idle once they have loaded their element. This crate
//! gives every thread more than one element to add before the tree, in two kernels of
//! `cuda/reduce_first_add.cu` (the tree is reduce-interleaved's, unchanged):
//!
//! - [`FirstAdd`] (`reduce_first_add`): each thread loads two elements and adds them; half as many
//!   blocks.
//! - [`GridStride`] (`reduce_grid_stride`): a fixed grid that fills the GPU once (8 blocks of 256
//!   threads per SM on an H100/H200), each thread looping over the input in strides of the whole
//!   grid. The number of partials no longer grows with `n`.

use gpu_harness::{
    DeviceBuffer, DeviceView, GpuShape, KernelSource, Launch, Result, StepEntry, kernel_source,
};
use reduction::{
    HostFinishedStep, HostFinishedSum, ReductionPlan, blocks_covering, check_fits_u32,
    grid_stride_blocks, measured,
};

/// Threads per block.
pub const BLOCK_SIZE: u32 = 256;

const SOURCE: KernelSource = kernel_source!("reduce_first_add.cu");

/// Two elements per thread, added while loading.
pub struct FirstAdd;

impl HostFinishedStep for FirstAdd {
    const STEP: &'static str = "first-add";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_first_add";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    // ANCHOR: first_add_plan
    /// One block per `2 * BLOCK_SIZE` elements.
    fn plan(n: usize, _gpu: GpuShape) -> Result<ReductionPlan> {
        check_fits_u32("reduce-first-add", n)?;
        let blocks = blocks_covering(n, 2 * BLOCK_SIZE);
        Ok(ReductionPlan::single_pass(Self::KERNEL, n, blocks, BLOCK_SIZE, BLOCK_SIZE * 4))
    }
    // ANCHOR_END: first_add_plan

    fn boundary_sizes() -> Vec<usize> {
        let pair = 2 * BLOCK_SIZE as usize;
        vec![pair - 1, pair, pair + 1, 2 * pair + 1]
    }
}

/// The two-elements-per-thread launcher.
pub type ReduceFirstAdd = HostFinishedSum<FirstAdd>;

// ANCHOR: step
/// A fixed grid that fills the GPU once; each thread adds many elements in a grid-stride loop.
pub struct GridStride;

/// The reduce-first-add launcher (grid-stride, the step's final form).
pub type ReduceGridStride = HostFinishedSum<GridStride>;

impl HostFinishedStep for GridStride {
    const STEP: &'static str = "grid-stride";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_grid_stride";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    /// As many blocks as the GPU holds at once (`SMs * 2048 / 256`), fewer for small inputs (at
    /// least one element per thread).
    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
        check_fits_u32("reduce-first-add", n)?;
        let blocks = grid_stride_blocks(n, BLOCK_SIZE, 1, gpu);
        Ok(ReductionPlan::single_pass(Self::KERNEL, n, blocks, BLOCK_SIZE, BLOCK_SIZE * 4))
    }

    fn boundary_sizes() -> Vec<usize> {
        // Around one full grid of an H100/H200 (1056 blocks of 256 threads).
        let grid = GpuShape::HOPPER_132_SMS.threads_in_one_wave(BLOCK_SIZE);
        vec![grid - 1, grid, grid + 1, 3 * grid + 7]
    }
}
// ANCHOR_END: step

/// The grid-stride step as it was first written, with an unsigned 64-bit loop index: the compiler
/// cannot count its iterations, so it does not unroll it. Not on the ladder: measured to show what
/// the index type costs.
pub struct GridStrideUnsignedIndex;

impl HostFinishedStep for GridStrideUnsignedIndex {
    const STEP: &'static str = "grid-stride-unsigned-index";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_grid_stride_unsigned_index";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
        let mut plan = GridStride::plan(n, gpu)?;
        for pass in &mut plan.passes {
            pass.kernel = Self::KERNEL;
        }
        Ok(plan)
    }

    fn boundary_sizes() -> Vec<usize> {
        GridStride::boundary_sizes()
    }
}

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes).
pub fn steps() -> Vec<StepEntry> {
    let crate_name = env!("CARGO_PKG_NAME");
    vec![
        measured::host_finished::<FirstAdd>(crate_name),
        measured::host_finished::<GridStride>(crate_name),
        measured::host_finished::<GridStrideUnsignedIndex>(crate_name),
    ]
}
