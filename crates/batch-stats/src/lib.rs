//! # batch-stats: reductions at work, across a strided axis
//!
//! The mean and the variance of every channel of an NCHW tensor, as
//! `torch.var_mean(x, dim=(0, 2, 3), correction=k)` computes them (the statistics batch
//! normalisation normalises with), on the GPU, in the steps of the chapter (kernels in
//! `cuda/batch_stats.cu`):
//!
//! | [`Step`] | kernel | what changes |
//! |---|---|---|
//! | [`Step::Naive`] | `batch_stats_naive` | a thread per channel: strided loads, C threads |
//! | [`Step::Coalesced`] | `batch_stats_coalesced` | a block per channel, coalesced loads |
//! | [`Step::Split`] | `batch_stats_split` | several blocks per channel, the last combines |
//! | [`Step::Vectors`] | `batch_stats_vectors` | step 3 with loads of up to 16 bytes |
//! | [`Step::Flat`] | `batch_stats_flat` | step 4, a block's share as one stream of vectors |
//!
//! Two element types ([`Value`]): `f32`, and bfloat16 held as its 16-bit words in `u16` (read as
//! bf16, computed in f32); the statistics are f32 either way. Every step takes both (`<kernel>` and
//! `<kernel>_bf16`).
//!
//! Which variance ([`Variance`]): [`Variance::Unbiased`] divides the sum of squared deviations by
//! `count - 1`, torch.var_mean's default (`correction=1`); [`Variance::Population`] by `count`,
//! what BatchNorm normalises with (`correction=0`). What special inputs give is torch's: a NaN in a
//! channel makes its mean and variance NaN; an infinity makes its variance NaN; a channel of one
//! element has an unbiased variance of NaN (0 / 0) and a population variance of 0; a tensor with no
//! elements per channel (N, H or W of 0) has NaN statistics; one with no channels has none.
//! Constant data has a variance of exactly 0, at 1e38 too (no sum of squares overflows). Two
//! differ: the mean of a channel with an infinity is that infinity (NaN where both signs meet), as
//! numpy's, where torch's Welford update makes it NaN; and a variance past f32's range is +inf with
//! a finite mean, where torch gives NaN for both.
//!
//! ```no_run
//! # use gpu_harness::Device;
//! # use batch_stats::{BatchStats, Nchw, Step, Variance};
//! # fn run(device: &Device) -> gpu_harness::Result<()> {
//! // 2 x 2 x 1 x 2: channel 0 holds 1, 2, 5, 6; channel 1 holds 3, 4, 7, 8.
//! let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
//! let mut stats = BatchStats::new(device, Step::Vectors)?;
//! let (mean, var) = stats.stats_host(&x, Nchw::new(2, 2, 1, 2), Variance::Unbiased)?;
//! // mean [3.5, 5.5], var [5.667, 5.667]
//! # Ok(())
//! # }
//! ```
//!
//! N, C and H x W each below 2^31 work (and a channel's pieces, about N x H x W / 512, below
//! 2^31); lengths that do not match the shape, or shapes past the kernels' 32-bit indices, are a
//! [`GpuError::BadInput`] that says why, before a launch.

pub mod measured;

use std::fmt;

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, GpuError, GpuShape, Kernel, KernelSource, LaunchConfig,
    Result,
};

pub use gpu_harness::bf16::{Value, bf16_to_f32, f32_to_bf16};
pub use measured::steps;

const SOURCE: KernelSource = gpu_harness::kernel_source!("batch_stats.cu");

/// Threads per block of every kernel (`THREADS` in `cuda/batch_stats.cu`).
pub const THREADS: u32 = 256;

/// Step 1 folds a channel's values in runs of this many, merged into the channel's accumulator
/// (`NAIVE_RUN` in `cuda/batch_stats.cu`).
pub const NAIVE_RUN: u64 = 4096;

/// The blocks of steps 3 to 5 an SM holds at once (`BLOCKS_PER_SM`, their `__launch_bounds__`:
/// up to 64 registers a thread, so a lane's values and accumulators need no spilling).
pub const BLOCKS_PER_SM: usize = 4;

/// The elements of a piece of a plane of `plane` elements, the most a warp takes at a time
/// (`piece_of` in `cuda/batch_stats.cu`): for planes of more than 256 elements, 32 lanes x 64 bytes
/// (16 f32 or 32 bf16 values a lane: pieces of 512 or 1024), and 32 x 8 for shorter ones (a plane
/// of 196 fills most of a piece of 256).
pub const fn piece(plane: usize, bf16: bool) -> usize {
    match (plane > 256, bf16) {
        (false, _) => 256,
        (true, false) => 512,
        (true, true) => 1024,
    }
}

/// N, C and H x W are each at most this, and so are a channel's pieces (N x ceil(H x W / 512)):
/// the kernels index them with 32-bit integers (offsets are 64-bit).
pub const MAX_SIDE: usize = i32::MAX as usize;

/// The most blocks of a one-dimensional grid.
pub const MAX_BLOCKS: usize = i32::MAX as usize;

/// The shape of an NCHW tensor: `batch` planes of each of `channels` channels, each plane `height x
/// width` contiguous elements; element `(n, c, h, w)` is at `((n * C + c) * H + h) * W + w`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Nchw {
    pub batch: usize,
    pub channels: usize,
    pub height: usize,
    pub width: usize,
}

impl Nchw {
    pub const fn new(batch: usize, channels: usize, height: usize, width: usize) -> Nchw {
        Nchw { batch, channels, height, width }
    }

    /// Elements of a plane, `H x W` (saturating).
    pub fn plane(&self) -> usize {
        self.height.saturating_mul(self.width)
    }

    /// Elements of a channel, `N x H x W` (saturating).
    pub fn per_channel(&self) -> usize {
        self.batch.saturating_mul(self.plane())
    }

    /// Elements of the tensor, or `None` past a usize.
    pub fn elements(&self) -> Option<usize> {
        self.batch.checked_mul(self.channels)?.checked_mul(self.height)?.checked_mul(self.width)
    }

    /// A channel's pieces of f32 or bf16 elements (`N x ceil(H x W / piece)`, saturating,
    /// [`piece`]), the units the warps of steps 2 to 4 take.
    pub fn pieces(&self, bf16: bool) -> usize {
        self.batch.saturating_mul(self.plane().div_ceil(piece(self.plane(), bf16)))
    }

    /// A channel's turns of step 5: its `N x H x W` elements in units of 32 lanes x 64 bytes (512
    /// f32 or 1024 bf16), counted across planes.
    pub fn turns(&self, bf16: bool) -> usize {
        self.per_channel().div_ceil(if bf16 { 1024 } else { 512 })
    }
}

impl fmt::Display for Nchw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}x{}", self.batch, self.channels, self.height, self.width)
    }
}

/// What the sum of squared deviations is divided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variance {
    /// By `count`: the population variance, what BatchNorm normalises with (`correction=0`).
    Population,
    /// By `count - 1`: the unbiased estimate, torch.var_mean's default (`correction=1`).
    Unbiased,
}

impl Variance {
    /// torch's `correction`: what is taken from the count.
    pub const fn correction(self) -> u32 {
        match self {
            Variance::Population => 0,
            Variance::Unbiased => 1,
        }
    }
}

// ANCHOR: step
gpu_harness::steps! {
    /// A step of the batch-stats ladder.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Step {
        /// Step 1: a thread per channel walks its planes.
        Naive => "naive",
        /// Step 2: a block per channel, consecutive lanes on consecutive elements.
        Coalesced => "coalesced",
        /// Step 3: several blocks per channel; the last one of a channel to finish combines.
        Split => "split",
        /// Step 4: step 3 with loads of up to 16 bytes.
        Vectors => "vectors",
        /// Step 5: step 4 with a block's share of its channel walked as one stream of vectors
        /// across its planes (no turn is a plane's short last piece).
        Flat => "flat",
    }
}

impl Step {
    /// Its kernel in `cuda/batch_stats.cu` (f32; the bf16 one ends in `_bf16`).
    pub const fn kernel(self) -> &'static str {
        match self {
            Step::Naive => "batch_stats_naive",
            Step::Coalesced => "batch_stats_coalesced",
            Step::Split => "batch_stats_split",
            Step::Vectors => "batch_stats_vectors",
            Step::Flat => "batch_stats_flat",
        }
    }

    /// Whether the step ends with the last-block finish (partials and a counter per channel),
    /// where a channel has more than one slice.
    pub const fn finishes_on_the_last_block(self) -> bool {
        matches!(self, Step::Split | Step::Vectors | Step::Flat)
    }

    /// The launch that takes the statistics of a tensor of `shape` of `T` (f32, or bf16 as `u16`)
    /// on a GPU of `gpu`'s shape.
    pub fn plan<T: Value>(self, shape: Nchw, gpu: GpuShape) -> Result<StatsPlan> {
        check_shape(shape)?;
        if self == Step::Flat && shape.per_channel() > MAX_SIDE {
            return Err(GpuError::BadInput(format!(
                "{}: a {shape} tensor has {} elements a channel; step 5 counts a channel's \
                 vectors in 32 bits, so at \
                 most {MAX_SIDE} (2^31 - 1): take the statistics of fewer samples at a time, or \
                 use step 4",
                self.name(),
                shape.per_channel()
            )));
        }
        // Step 5's units are its turns (32 lanes x K values across planes), the others' pieces.
        let pieces = if self == Step::Flat { shape.turns(T::BF16) } else { shape.pieces(T::BF16) };
        let channels = shape.channels;
        let (grid, slices) = match self {
            Step::Naive => (channels.div_ceil(THREADS as usize), 1),
            Step::Coalesced => (channels, 1),
            Step::Split | Step::Vectors | Step::Flat => {
                let slices = slices(channels, pieces, gpu);
                (channels * slices, slices)
            }
        };
        if grid > MAX_BLOCKS {
            return Err(GpuError::BadInput(format!(
                "{}: {shape} needs {grid} blocks, more than a grid's {MAX_BLOCKS}; take fewer \
                 channels at a time",
                self.name()
            )));
        }
        let per_slice = pieces.div_ceil(slices) as u32;
        // One slice per channel: its block writes the statistics, and there is nothing to combine.
        let partials = if self.finishes_on_the_last_block() && slices > 1 { grid } else { 0 };
        let config = LaunchConfig::linear(grid as u32, THREADS, 0);
        let halves = match self {
            Step::Naive => false,
            Step::Flat => T::BF16,
            _ => piece(shape.plane(), T::BF16) > 512,
        };
        Ok(StatsPlan {
            step: self,
            config,
            pieces: pieces as u32,
            slices: slices as u32,
            per_slice,
            partials,
            halves,
        })
    }
}
// ANCHOR_END: step

// ANCHOR: slices
/// Blocks per channel of steps 3 to 5: as many as fill the GPU once with the channels' blocks
/// together (C x slices at most the [`BLOCKS_PER_SM`] blocks each SM holds at once, so every block
/// starts at once and none waits for a second wave), at least one, and at most a channel's pieces.
/// At one slice (the channels alone fill the GPU) the step is step 2: no partials, no finish.
fn slices(channels: usize, pieces: usize, gpu: GpuShape) -> usize {
    let resident = gpu.multiprocessors as usize * BLOCKS_PER_SM;
    (resident / channels.max(1)).clamp(1, pieces.max(1))
}
// ANCHOR_END: slices

/// N, C, H x W and a channel's pieces each within [`MAX_SIDE`].
fn check_shape(shape: Nchw) -> Result<()> {
    let sides = [shape.batch, shape.channels, shape.plane(), shape.pieces(false)];
    if sides.iter().any(|&side| side > MAX_SIDE) || shape.elements().is_none() {
        return Err(GpuError::BadInput(format!(
            "a {shape} tensor: N, C, H x W and a channel's pieces (N x ceil(H x W / 512)) must \
             each be at most {MAX_SIDE} (2^31 - 1), \
             for the kernels' 32-bit indices; take the statistics of fewer samples at a time and \
             combine them"
        )));
    }
    Ok(())
}

/// The launch of one step on one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsPlan {
    pub step: Step,
    pub config: LaunchConfig,
    /// A channel's pieces (units of at most [`piece`] elements of a plane; step 5: its turns, 32
    /// lanes x 16 f32 or 32 bf16 values across planes, [`Nchw::turns`]).
    pub pieces: u32,
    /// Blocks per channel (1 for steps 1 and 2), and the pieces (turns) each takes.
    pub slices: u32,
    pub per_slice: u32,
    /// Accumulators of 16 bytes the blocks leave for the last one (steps 3 to 5: one per block,
    /// none at one slice per channel, where each block writes its channel's statistics).
    pub partials: usize,
    /// Whether a lane folds each of its pieces as two halves and combines them (pieces of 1024
    /// bf16): one more combination a piece.
    pub halves: bool,
}

impl StatsPlan {
    /// The longest chain of combinations of accumulators a value goes through on its way to its
    /// channel's statistics: what the tolerance of the result grows with ([`tolerance`]). Step 1
    /// folds a channel's values one at a time into runs of at most [`NAIVE_RUN`], and merges the
    /// runs one after another (a value goes through its run's folds, then every merge); the others
    /// fold a lane's pieces one after another (every [`THREADS`] / 32-th piece of the block's; two
    /// combinations a piece where it is folded in halves), then 5 levels of a warp and 3 of a block
    /// (8 warps); the last-block finish (more than one slice) adds the 5 levels of a warp where
    /// there are 32 slices or fewer, and otherwise a thread's partials and 8 more levels. Step 5's
    /// runs are cut by vectors, not turns; a block has at most `per_slice` turns all the same, and
    /// the bound counts one more, as slack.
    pub fn longest_chain(&self, shape: Nchw) -> u64 {
        let warps = (THREADS / 32) as u64;
        let per_piece = if self.halves { 2 } else { 1 };
        match self.step {
            Step::Naive => {
                let count = shape.per_channel() as u64;
                count.min(NAIVE_RUN) + count.div_ceil(NAIVE_RUN)
            }
            Step::Coalesced => per_piece * u64::from(self.pieces).div_ceil(warps) + 8,
            Step::Split | Step::Vectors | Step::Flat if self.slices == 1 => {
                per_piece * u64::from(self.pieces).div_ceil(warps) + 8
            }
            Step::Split | Step::Vectors | Step::Flat => {
                let finish = if self.slices <= 32 {
                    5
                } else {
                    u64::from(self.slices).div_ceil(THREADS.into()) + 8
                };
                let extra = u64::from(self.step == Step::Flat);
                per_piece * (u64::from(self.per_slice).div_ceil(warps) + extra) + 8 + finish
            }
        }
    }
}

impl fmt::Display for StatsPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LaunchConfig { grid, block, .. } = self.config;
        write!(f, "{}: grid {} of {} threads", self.step.kernel(), grid.0, block.0)?;
        let units = if self.step == Step::Flat { "turns" } else { "pieces" };
        match self.step {
            Step::Naive => write!(f, ", a thread per channel"),
            Step::Coalesced => write!(f, ", a block per channel of {} pieces", self.pieces),
            Step::Split | Step::Vectors | Step::Flat if self.slices == 1 => {
                write!(
                    f,
                    ", a block per channel of {} {units} (one slice: no partials, no finish)",
                    self.pieces
                )
            }
            Step::Split | Step::Vectors | Step::Flat => write!(
                f,
                ", {} blocks per channel of {} {units} each (of {}), {} partials",
                self.slices, self.per_slice, self.pieces, self.partials
            ),
        }
    }
}

/// The elements of a tensor of `shape`, or an error if `input`, `mean` or `var` holds another
/// number of elements than the shape says.
fn check_lengths(shape: Nchw, input: usize, mean: usize, var: usize) -> Result<usize> {
    let n = shape.elements().ok_or_else(|| {
        GpuError::BadInput(format!(
            "batch statistics: a {shape} tensor has more elements than a usize holds"
        ))
    })?;
    if input != n {
        return Err(GpuError::BadInput(format!(
            "batch statistics of a {shape} tensor: the input holds {input} elements, not N x C x \
             H x W = {n}"
        )));
    }
    for (what, len) in [("mean", mean), ("variance", var)] {
        if len != shape.channels {
            return Err(GpuError::BadInput(format!(
                "batch statistics of a {shape} tensor: the {what} holds {len} elements, not one \
                 per channel ({})",
                shape.channels
            )));
        }
    }
    Ok(n)
}

/// A word no kernel writes into the partials (a NaN with a payload): they are filled with it when
/// allocated, so a finish that reads a partial nobody wrote gets NaN, not a stale value.
pub const SCRATCH_POISON: u32 = 0x7fc0_5c0f;

// ANCHOR: launcher
/// Takes the statistics of NCHW tensors with one step's kernel.
pub struct BatchStats {
    device: Device,
    step: Step,
    f32_kernel: Kernel,
    bf16_kernel: Kernel,
    /// Steps 3 and 4: the blocks' accumulators (16 bytes each, as two u64 words) and one counter
    /// per channel (0 between launches); empty until a plan has more than one slice per channel.
    partials: Option<DeviceBuffer<u64>>,
    tickets: Option<DeviceBuffer<u32>>,
}

impl BatchStats {
    /// Compiles (or takes from the cache) the step's kernels, for f32 and bf16.
    pub fn new(device: &Device, step: Step) -> Result<Self> {
        let kernel = |suffix: &str| device.kernel(&SOURCE, &format!("{}{suffix}", step.kernel()));
        Ok(BatchStats {
            device: device.clone(),
            step,
            f32_kernel: kernel(f32::SUFFIX)?,
            bf16_kernel: kernel(u16::SUFFIX)?,
            partials: None,
            tickets: None,
        })
    }

    pub fn step(&self) -> Step {
        self.step
    }

    /// The launch this device would run for a tensor of `shape` of `T`.
    pub fn plan<T: Value>(&self, shape: Nchw) -> Result<StatsPlan> {
        self.step.plan::<T>(shape, self.device.facts().shape())
    }

    /// Writes each channel's mean of the NCHW tensor `input` into `mean`, and its variance into
    /// `var` (each `C` floats). Queued on the device's stream. No channels: nothing to do; no
    /// elements per channel: NaN statistics, written without a launch.
    pub fn stats<T: Value>(
        &mut self,
        input: DeviceView<'_, T>,
        shape: Nchw,
        variance: Variance,
        mean: &mut DeviceBuffer<f32>,
        var: &mut DeviceBuffer<f32>,
    ) -> Result<()> {
        check_shape(shape)?;
        check_lengths(shape, input.len(), mean.len(), var.len())?;
        if shape.channels == 0 {
            return Ok(());
        }
        if shape.per_channel() == 0 {
            mean.fill(f32::NAN)?;
            return var.fill(f32::NAN);
        }
        let plan = self.plan::<T>(shape)?;
        let (n, c, plane) = (shape.batch as u32, shape.channels as u32, shape.plane() as u32);
        let correction = variance.correction();
        let kernel = if T::SUFFIX.is_empty() { &self.f32_kernel } else { &self.bf16_kernel };
        if !self.step.finishes_on_the_last_block() {
            let launch = self.device.launch(kernel, plan.config).arg(input);
            return launch
                .arg(&mut *mean)
                .arg(&mut *var)
                .arg(n)
                .arg(c)
                .arg(plane)
                .arg(correction)
                .run();
        }
        if self.partials.as_ref().is_none_or(|p| p.len() < 2 * plan.partials) {
            let mut partials = self.device.alloc::<u64>(2 * plan.partials)?;
            partials.fill_words(SCRATCH_POISON)?;
            self.partials = Some(partials);
        }
        let counters = if plan.partials > 0 { shape.channels } else { 0 };
        if self.tickets.as_ref().is_none_or(|t| t.len() < counters) {
            let mut tickets = self.device.alloc::<u32>(counters)?;
            tickets.fill_words(0)?;
            self.tickets = Some(tickets);
        }
        let partials = self.partials.as_mut().expect("allocated above");
        let tickets = self.tickets.as_mut().expect("allocated above");
        self.device
            .launch(kernel, plan.config)
            .arg(input)
            .arg(partials)
            .arg(tickets)
            .arg(&mut *mean)
            .arg(&mut *var)
            .arg(n)
            .arg(c)
            .arg(plane)
            .arg(plan.slices)
            .arg(correction)
            .run()
    }

    /// The statistics of a host tensor, through the device: uploads it, runs the step, downloads
    /// the means and the variances.
    pub fn stats_host<T: Value>(
        &mut self,
        input: &[T],
        shape: Nchw,
        variance: Variance,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        check_shape(shape)?;
        check_lengths(shape, input.len(), shape.channels, shape.channels)?;
        if shape.channels == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let tensor = self.device.upload(input)?;
        let (mut mean, mut var) =
            (self.device.alloc::<f32>(shape.channels)?, self.device.alloc::<f32>(shape.channels)?);
        self.stats(tensor.as_view(), shape, variance, &mut mean, &mut var)?;
        Ok((mean.to_host()?, var.to_host()?))
    }
}
// ANCHOR_END: launcher

// ANCHOR: reference
/// Each channel's mean and variance on the CPU, in f64, by two passes (the sum, then the squared
/// deviations from the mean), as torch defines them: the variance is `m2 / (count - correction)`,
/// NaN where that is not positive; an empty channel's mean is NaN; NaN and infinities propagate as
/// IEEE arithmetic does (an infinity's deviation is `inf - inf`, NaN). The reference the tests and
/// the tour compare with.
pub fn stats_cpu<T: Value>(input: &[T], shape: Nchw, variance: Variance) -> Vec<(f64, f64)> {
    assert_eq!(
        Some(input.len()),
        shape.elements(),
        "stats_cpu: a {shape} tensor needs N x C x H x W elements"
    );
    (0..shape.channels).map(|c| channel_stats(&channel(input, shape, c), variance)).collect()
}

/// Channel `c`'s values, plane after plane.
pub fn channel<T: Value>(input: &[T], shape: Nchw, c: usize) -> Vec<f64> {
    let plane = shape.plane();
    let mut values = Vec::with_capacity(shape.per_channel());
    for n in 0..shape.batch {
        let start = (n * shape.channels + c) * plane;
        values.extend(input[start..start + plane].iter().map(|x| x.to_f64()));
    }
    values
}

/// The mean and variance of `values` in f64 (see [`stats_cpu`]).
pub fn channel_stats(values: &[f64], variance: Variance) -> (f64, f64) {
    let count = values.len() as f64;
    let mean = values.iter().sum::<f64>() / count;
    let m2: f64 = values.iter().map(|x| (x - mean) * (x - mean)).sum();
    let dof = count - f64::from(variance.correction());
    (mean, if dof > 0.0 { m2 / dof } else { f64::NAN })
}

/// How far a step's mean and variance of `values` may be from [`channel_stats`]'s: `(mean, var)`
/// bounds, for a longest chain of `chain` combinations ([`StatsPlan::longest_chain`]).
///
/// With u = 2^-24, X = max |x|, D = max |x - mean| and h = chain + 6 (the 6 for a lane's 16 values
/// added as a tree, 4 levels, and the divisions): each combination rounds the mean it makes by at
/// most u |mean| + 3u |d| nb / n (|d| <= 2D: the move, d times the share, in three roundings), and
/// the rounding of the inputs passes on with weights that add to 1, so the mean is within
/// `u h (X + 6D)`. The variance's bound is the first-order one of Chan, Golub and LeVeque (1983)
/// for the updating and pairwise algorithms, a relative error of at most c h u κ with κ the
/// condition number sqrt(1 + mean² / variance): in absolute terms c h u σ rms <= c h u D X, plus 3
/// roundings of m2 per level (a lane's m2, the sum of its squared differences from its first value
/// less the mean's share, can be off by about a hundred roundings of itself where that first value
/// is an outlier, data whose X D is then many times its variance), so
/// `u h (8 X D + 3 var) n / (n - correction)` (c = 8,
/// generous: their constant is about 1 for a chain, and errors add up as a random walk in
/// practice). Beside both, `2^-149 h` for results in the subnormal range.
pub fn tolerance(values: &[f64], chain: u64, variance: Variance) -> (f64, f64) {
    let (mean, var) = channel_stats(values, Variance::Population);
    let largest = values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let spread = values.iter().fold(0.0f64, |m, x| m.max((x - mean).abs()));
    let u = f64::powi(2.0, -24);
    let h = chain as f64 + 6.0;
    let tiny = f64::powi(2.0, -149) * h;
    let n = values.len() as f64;
    let scale = n / (n - f64::from(variance.correction())).max(1.0);
    (
        u * h * (largest + 6.0 * spread) + tiny,
        u * h * (8.0 * largest * spread + 3.0 * var) * scale + tiny,
    )
}

/// The first channel whose `got_mean` or `got_var` (a step's statistics of the NCHW tensor `input`,
/// by a step whose longest chain is `chain`) is further from [`stats_cpu`] than [`tolerance`]
/// allows: a NaN where the reference has a number or a number where it has NaN, a different
/// infinity, a negative variance, a value off by more than its bound. A variance whose m2 is past
/// f32's range must come back +inf (the kernels keep m2, not the variance, in f32). Channels are
/// checked on every core.
pub fn first_mismatch<T: Value>(
    input: &[T],
    shape: Nchw,
    variance: Variance,
    chain: u64,
    got_mean: &[f32],
    got_var: &[f32],
) -> Option<String> {
    if shape.elements() != Some(input.len())
        || got_mean.len() != shape.channels
        || got_var.len() != shape.channels
    {
        return Some(format!(
            "{shape}: the input holds {}, the means {} and the variances {} elements",
            input.len(),
            got_mean.len(),
            got_var.len()
        ));
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_core = shape.channels.div_ceil(cores).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..shape.channels)
            .step_by(per_core)
            .map(|first| {
                scope.spawn(move || {
                    let last = (first + per_core).min(shape.channels);
                    (first..last).find_map(|c| {
                        let values = channel(input, shape, c);
                        channel_mismatch(&values, variance, chain, got_mean[c], got_var[c]).map(
                            |why| {
                                format!("channel {c} of {shape} ({} values): {why}", values.len())
                            },
                        )
                    })
                })
            })
            .collect();
        handles.into_iter().find_map(|h| h.join().expect("a checking thread panicked"))
    })
}

/// Why `(mean, var)` are not acceptable statistics of `values` (see [`first_mismatch`]).
pub fn channel_mismatch(
    values: &[f64],
    variance: Variance,
    chain: u64,
    mean: f32,
    var: f32,
) -> Option<String> {
    let (want_mean, want_var) = channel_stats(values, variance);
    let (mean_bound, var_bound) = tolerance(values, chain, variance);
    let (mean, var) = (f64::from(mean), f64::from(var));
    let agrees = |got: f64, want: f64, bound: f64| match want {
        w if w.is_nan() => got.is_nan(),
        w if w.is_infinite() => got == w,
        w => (got - w).abs() <= bound,
    };
    let bad_mean = !agrees(mean, want_mean, mean_bound);
    let m2 = want_var * (values.len() as f64 - f64::from(variance.correction()));
    let bad_var =
        if want_var.is_finite() && m2 + var_bound * values.len() as f64 > f64::from(f32::MAX) {
            // m2 is past f32's range, or near enough that its rounding may take it there.
            !(var == f64::INFINITY || m2 <= f64::from(f32::MAX) && agrees(var, want_var, var_bound))
        } else {
            !agrees(var, want_var, var_bound) || var < 0.0
        };
    (bad_mean || bad_var).then(|| {
        format!(
            "mean {mean:e} (reference {want_mean:e}, bound {mean_bound:e}), variance {var:e} \
             (reference {want_var:e}, \
             bound {var_bound:e}), chain of {chain}"
        )
    })
}
// ANCHOR_END: reference
