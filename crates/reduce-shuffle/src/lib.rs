//! # reduce-shuffle: step 5 of the reduction ladder
//!
//! The shared-memory tree is replaced by warp shuffles (`__shfl_down_sync`): each warp reduces in
//! registers, one shared slot per warp holds its result, and warp 0 reduces those. The warp and
//! block reductions live in `cuda/block_reduce.cuh`, shared with the steps that finish on the
//! device. Kernels in `cuda/reduce_shuffle.cu`:
//!
//! - [`Shuffle`] (`reduce_shuffle`): grid-stride 4-byte loads, then the shuffle block reduction.
//! - [`ShuffleVec4`] (`reduce_shuffle_vec4`), the final form: 16-byte `float4` loads, four in
//!   flight per thread, with scalar loads for a head (inputs that do not start on a 16-byte
//!   boundary, such as a view at an odd offset) and a tail (`n % 4`).
//! - [`Extremes`]: max, min and argmax with the same kernel shape. NaN wins: a NaN anywhere makes
//!   max and min NaN, and argmax returns the first NaN's index (as numpy does). Ties go to the
//!   first index. An empty input is an error (there is no maximum of nothing).

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, GpuError, GpuShape, Kernel, KernelSource, Launch, Result,
    StepEntry, kernel_source,
};
use reduction::{
    HostFinishedStep, HostFinishedSum, ReductionPlan, check_fits_u32, grid_stride_blocks, measured,
};

/// Threads per block.
pub const BLOCK_SIZE: u32 = 256;

const SOURCE: KernelSource = kernel_source!("reduce_shuffle.cu");

fn grid_boundaries() -> Vec<usize> {
    let grid = GpuShape::HOPPER_132_SMS.threads_in_one_wave(BLOCK_SIZE);
    vec![3, 4, 5, 7, 8, 9, 63, 64, 65, grid - 1, grid + 1, 4 * grid + 3]
}

/// Shuffle block reduction, 4-byte grid-stride loads.
pub struct Shuffle;

/// The scalar-load shuffle launcher.
pub type ReduceShuffleScalar = HostFinishedSum<Shuffle>;

impl HostFinishedStep for Shuffle {
    const STEP: &'static str = "shuffle";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_shuffle";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    /// The GPU filled once; the kernel's shared memory (one slot per warp) is static.
    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
        check_fits_u32("reduce-shuffle", n)?;
        Ok(ReductionPlan::single_pass(
            Self::KERNEL,
            n,
            grid_stride_blocks(n, BLOCK_SIZE, 1, gpu),
            BLOCK_SIZE,
            0,
        ))
    }

    fn boundary_sizes() -> Vec<usize> {
        grid_boundaries()
    }
}

// ANCHOR: step
/// Shuffle block reduction, 16-byte vector loads: the ladder's last host-finished step.
pub struct ShuffleVec4;

/// The reduce-shuffle launcher (vector loads, the step's final form).
pub type ReduceShuffle = HostFinishedSum<ShuffleVec4>;

impl HostFinishedStep for ShuffleVec4 {
    const STEP: &'static str = "shuffle-vec4";
    const SOURCE: KernelSource = SOURCE;
    const KERNEL: &'static str = "reduce_shuffle_vec4";

    /// Queues the kernel with its arguments `(input, partial, n)`.
    fn launch(
        kernel: Launch<'_>,
        input: DeviceView<'_, f32>,
        partials: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        kernel.arg(input).arg(partials).arg(input.len() as u32).run()
    }

    /// The GPU filled once, or fewer blocks when there is less than one float4 per thread.
    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
        vec4_plan(Self::KERNEL, n, gpu)
    }

    fn boundary_sizes() -> Vec<usize> {
        grid_boundaries()
    }
}
// ANCHOR_END: step

fn vec4_plan(kernel: &'static str, n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
    check_fits_u32("reduce-shuffle", n)?;
    Ok(ReductionPlan::single_pass(
        kernel,
        n,
        grid_stride_blocks(n, BLOCK_SIZE, 4, gpu),
        BLOCK_SIZE,
        0,
    ))
}

/// The launch plan of `max` and `min` (`argmax` uses the scalar grid-stride plan of [`Shuffle`]).
pub fn extremes_plan(kernel: &'static str, n: usize, gpu: GpuShape) -> Result<ReductionPlan> {
    vec4_plan(kernel, n, gpu)
}

/// The larger of two values, NaN winning (the kernels' `Max<float>`).
pub fn nan_max(a: f32, b: f32) -> f32 {
    if a > b || a.is_nan() { a } else { b }
}

/// The smaller of two values, NaN winning (the kernels' `Min<float>`).
pub fn nan_min(a: f32, b: f32) -> f32 {
    if a < b || a.is_nan() { a } else { b }
}

/// The better argmax candidate (the kernels' `better`): NaN beats numbers, then the larger value,
/// then the smaller index.
pub fn better_candidate(a: (f32, usize), b: (f32, usize)) -> (f32, usize) {
    match (a.0.is_nan(), b.0.is_nan()) {
        (true, false) => a,
        (false, true) => b,
        (false, false) if a.0 != b.0 => {
            if a.0 > b.0 {
                a
            } else {
                b
            }
        }
        _ => {
            if a.1 <= b.1 {
                a
            } else {
                b
            }
        }
    }
}

// ANCHOR: extremes
/// Max, min and argmax of f32 on the device, finished on the host like the sums.
pub struct Extremes {
    device: Device,
    max: Kernel,
    min: Kernel,
    argmax: Kernel,
    values: DeviceBuffer<f32>,
    indices: DeviceBuffer<u32>,
}

impl Extremes {
    pub fn new(device: &Device) -> Result<Self> {
        Ok(Extremes {
            device: device.clone(),
            max: device.kernel(&SOURCE, "reduce_max_vec4")?,
            min: device.kernel(&SOURCE, "reduce_min_vec4")?,
            argmax: device.kernel(&SOURCE, "reduce_argmax")?,
            values: device.alloc(0)?,
            indices: device.alloc(0)?,
        })
    }

    /// The largest element; NaN if any element is NaN.
    pub fn max(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        Ok(self.reduce(input, true)?.into_iter().fold(f32::NEG_INFINITY, nan_max))
    }

    /// The smallest element; NaN if any element is NaN.
    pub fn min(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        Ok(self.reduce(input, false)?.into_iter().fold(f32::INFINITY, nan_min))
    }

    /// The largest element and the index of its first occurrence (the first NaN, if any).
    pub fn argmax(&mut self, input: DeviceView<'_, f32>) -> Result<(f32, usize)> {
        let plan = self.prepare(
            "argmax",
            input.len(),
            Shuffle::plan(input.len(), self.device.facts().shape())?,
        )?;
        self.device
            .launch(&self.argmax, plan.passes[0].config)
            .arg(input)
            .arg(&mut self.values)
            .arg(&mut self.indices)
            .arg(input.len() as u32)
            .run()?;
        let count = plan.host_adds as usize;
        let values = self.values.view(..count)?.to_host()?;
        let indices = self.indices.view(..count)?.to_host()?;
        let candidates = values.into_iter().zip(indices.into_iter().map(|i| i as usize));
        Ok(candidates.fold((f32::NEG_INFINITY, usize::MAX), better_candidate))
    }

    /// Fills the scratch buffers with NaN and an impossible index (tests poison before a launch).
    pub fn poison_scratch(&mut self, n: usize) -> Result<()> {
        let plan = Shuffle::plan(n, self.device.facts().shape())?;
        self.grow(plan.host_adds as usize)?;
        self.values.fill(f32::NAN)?;
        self.indices.fill(u32::MAX)
    }

    /// Runs the max or min kernel and returns its block partials.
    fn reduce(&mut self, input: DeviceView<'_, f32>, max: bool) -> Result<Vec<f32>> {
        let (what, kernel_name) =
            if max { ("max", "reduce_max_vec4") } else { ("min", "reduce_min_vec4") };
        let plan = self.prepare(
            what,
            input.len(),
            extremes_plan(kernel_name, input.len(), self.device.facts().shape())?,
        )?;
        let kernel = if max { &self.max } else { &self.min };
        self.device
            .launch(kernel, plan.passes[0].config)
            .arg(input)
            .arg(&mut self.values)
            .arg(input.len() as u32)
            .run()?;
        self.values.view(..plan.host_adds as usize)?.to_host()
    }

    /// Rejects an empty input and makes the partial buffers large enough for `plan`.
    fn prepare(&mut self, what: &str, n: usize, plan: ReductionPlan) -> Result<ReductionPlan> {
        if n == 0 {
            return Err(GpuError::BadInput(format!("{what} of an empty input is undefined")));
        }
        self.grow(plan.host_adds as usize)?;
        Ok(plan)
    }

    fn grow(&mut self, partials: usize) -> Result<()> {
        if self.values.len() < partials {
            self.values = self.device.alloc(partials)?;
            self.indices = self.device.alloc(partials)?;
        }
        Ok(())
    }
}
// ANCHOR_END: extremes

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes).
pub fn steps() -> Vec<StepEntry> {
    let crate_name = env!("CARGO_PKG_NAME");
    vec![
        measured::host_finished::<Shuffle>(crate_name),
        measured::host_finished::<ShuffleVec4>(crate_name),
    ]
}
