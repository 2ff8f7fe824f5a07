//! # reduce-unroll: step 4 of the reduction ladder
//!
//! Loads as in reduce-first-add's grid-stride kernel; this crate changes the end of the tree, in
//! `cuda/reduce_unroll.cu`:
//!
//! - [`UnrollLastWarp`] (`reduce_unroll_last_warp`): once only warp 0 is active, it finishes the
//!   last six rounds alone with `__syncwarp()` between them instead of block-wide barriers.
//! - [`CompleteUnroll`] (`reduce_complete_unroll`): the block size is a compile-time constant
//!   (`-DBLOCK_SIZE=256`), so the loop over strides unrolls completely.
//! - [`VolatileRacy`] (`reduce_unroll_volatile_racy`): the classic `volatile` last-warp unroll with
//!   no synchronisation at all, a data race since Volta. Demonstration only: used by the
//!   `volatile_race` example, never by a launcher a user would pick, and not tested for
//!   correctness (it is not correct).

use gpu_harness::{
    DeviceBuffer, DeviceView, GpuShape, KernelSource, Launch, Result, StepEntry, kernel_source,
};
use reduction::{
    HostFinishedStep, HostFinishedSum, ReductionPlan, check_fits_u32, grid_stride_blocks, measured,
};

/// Threads per block; the complete unroll is compiled for this size.
pub const BLOCK_SIZE: u32 = 256;

const SOURCE: KernelSource = kernel_source!("reduce_unroll.cu");

/// A grid-stride plan: the GPU filled once, 256 threads per block, `shared_bytes` of dynamic shared
/// memory.
fn grid_stride(
    kernel: &'static str,
    n: usize,
    gpu: GpuShape,
    shared_bytes: u32,
) -> Result<ReductionPlan> {
    check_fits_u32("reduce-unroll", n)?;
    let blocks = grid_stride_blocks(n, BLOCK_SIZE, 1, gpu);
    Ok(ReductionPlan::single_pass(kernel, n, blocks, BLOCK_SIZE, shared_bytes))
}

fn grid_boundaries() -> Vec<usize> {
    let grid = GpuShape::HOPPER_132_SMS.threads_in_one_wave(BLOCK_SIZE);
    vec![63, 64, 65, grid - 1, grid + 1]
}

/// The last warp finishes the tree with `__syncwarp()`.
pub struct UnrollLastWarp;

/// The last-warp launcher.
pub type ReduceUnrollLastWarp = HostFinishedSum<UnrollLastWarp>;

impl HostFinishedStep for UnrollLastWarp {
    const STEP: &'static str = "unroll-last-warp";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_unroll_last_warp";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
        grid_stride(Self::KERNEL, n, gpu, BLOCK_SIZE * 4)
    }

    fn boundary_sizes() -> Vec<usize> {
        grid_boundaries()
    }
}

// ANCHOR: step
/// The tree unrolled completely for a block size fixed at compile time.
pub struct CompleteUnroll;

/// The reduce-unroll launcher (complete unrolling, the step's final form).
pub type ReduceUnroll = HostFinishedSum<CompleteUnroll>;

impl HostFinishedStep for CompleteUnroll {
    const STEP: &'static str = "complete-unroll";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_complete_unroll";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    /// The kernel declares its shared array statically, so no dynamic shared memory.
    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
        grid_stride(Self::KERNEL, n, gpu, 0)
    }

    fn defines() -> Vec<(&'static str, String)> {
        vec![("BLOCK_SIZE", BLOCK_SIZE.to_string())]
    }

    fn boundary_sizes() -> Vec<usize> {
        grid_boundaries()
    }
}
// ANCHOR_END: step

/// The classic `volatile` last-warp unroll, racy since Volta. Demonstration only.
pub struct VolatileRacy;

impl HostFinishedStep for VolatileRacy {
    const STEP: &'static str = "volatile-racy";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_unroll_volatile_racy";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
        grid_stride(Self::KERNEL, n, gpu, BLOCK_SIZE * 4)
    }
}

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes).
pub fn steps() -> Vec<StepEntry> {
    let crate_name = env!("CARGO_PKG_NAME");
    vec![
        measured::host_finished::<UnrollLastWarp>(crate_name),
        measured::host_finished::<CompleteUnroll>(crate_name),
    ]
}
