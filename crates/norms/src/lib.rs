//! # norms: layer norm and RMS norm of every row
//!
//! Each row of a row-major `rows x cols` matrix normalised on the GPU as torch does over the last
//! dimension, in the steps of the chapter (kernels in `cuda/norms.cu`):
//!
//! | [`Norm`] | torch (`torch.nn.functional.`) | what is written |
//! |---|---|---|
//! | [`Norm::Layer`] | `layer_norm(x, (cols,), w, b, eps)` | `(x - mean) / sqrt(var + eps) w + b` |
//! | [`Norm::Rms`] | `rms_norm(x, (cols,), w, eps)` | `x / sqrt(mean(x^2) + eps) * w` |
//!
//! | [`Step`] | kernel (`<norm>` is `layer_norm` or `rms_norm`) | what changes |
//! |---|---|---|
//! | [`Step::TwoPass`] | `<norm>_two_pass` | a block per row: the mean, the variance, the write |
//! | [`Step::OnePass`] | `<norm>_one_pass` | the row in registers, Chan's combine: one read |
//! | [`Step::ByLength`] | `<norm>_by_length` | a warp (or a few) per row, 16-byte loads |
//!
//! Two element types ([`Value`]): `f32`, and bfloat16 held as its 16-bit words in `u16` (read and
//! written as bf16, computed in f32; [`bf16_to_f32`] and [`f32_to_bf16`] convert on the host). The
//! weight and the bias have the rows' type (a bf16 model's parameters are bf16, as in torch after
//! `model.to(torch.bfloat16)`), one value per column.
//!
//! What a row with special values gives is torch's: a NaN makes the row NaN; an infinity makes a
//! layer norm's row NaN and an RMS norm's row 0 (NaN where the infinity was); a constant row gives
//! exactly `b` (NaN with `eps = 0`). Where torch's f32 kernels overflow (a square of 1e30), these
//! do not: the statistics are taken on the row scaled by a power of two.
//!
//! ```no_run
//! # use gpu_harness::Device;
//! # use norms::{Norms, Step, DEFAULT_EPS};
//! # fn run(device: &Device) -> gpu_harness::Result<()> {
//! let x = device.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 5.0, 5.0, 5.0])?; // 2 x 4
//! let (w, b) = (device.upload(&[1.0f32; 4])?, device.upload(&[0.0f32; 4])?);
//! let mut y = device.alloc::<f32>(8)?;
//! let norms = Norms::new(device, Step::ByLength)?;
//! norms.layer_norm(x.as_view(), (2, 4), w.as_view(), b.as_view(), DEFAULT_EPS, &mut y)?;
//! let y = y.to_host()?; // [-1.342, -0.447, 0.447, 1.342, 0, 0, 0, 0]
//! # Ok(())
//! # }
//! ```
//!
//! Any shape with each side below 2^31 works; an empty matrix (0 rows, or rows of 0 columns)
//! launches nothing; lengths that do not match the shape, an `eps` that is not a finite
//! number at least 0, or shapes past what the kernels' 32-bit indices hold, are a
//! [`GpuError::BadInput`] that says why, before a launch.

pub mod measured;

use std::fmt;

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, GpuError, Kernel, KernelSource, LaunchConfig, Result,
};

pub use gpu_harness::bf16::{Value, bf16_to_f32, f32_to_bf16};
pub use measured::steps;

const SOURCE: KernelSource = gpu_harness::kernel_source!("norms.cu");

/// Threads per block of every kernel (`THREADS` in `cuda/norms.cu`).
pub const THREADS: u32 = 256;

/// Elements a thread of [`Step::OnePass`] keeps in registers (`SLOTS`): a block holds a row of
/// `THREADS * SLOTS` = 4096 elements; a longer row is read twice.
pub const SLOTS: usize = 16;

/// Elements a lane of [`Step::ByLength`] keeps in registers (`LANE_ELEMENTS`): eight 16-byte
/// vectors of f32, four of bf16. A warp holds a row of 1024, eight warps one of 8192.
pub const LANE_ELEMENTS: usize = 32;

/// torch's default `eps` for both norms.
pub const DEFAULT_EPS: f32 = 1e-5;

/// Rows and columns are each at most this: the kernels index a row's elements with 32-bit
/// integers (offsets of rows are 64-bit, so the matrix may hold more than 2^32 elements).
pub const MAX_SIDE: usize = i32::MAX as usize;

/// Which norm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Norm {
    /// `(x - mean) / sqrt(var + eps) * w + b`: two statistics, a weight and a bias.
    Layer,
    /// `x / sqrt(mean(x^2) + eps) * w`: one statistic (the sum of squares), a weight.
    Rms,
}

impl Norm {
    pub const ALL: [Norm; 2] = [Norm::Layer, Norm::Rms];

    /// `layer norm` or `RMS norm`, in messages.
    pub const fn name(self) -> &'static str {
        match self {
            Norm::Layer => "layer norm",
            Norm::Rms => "RMS norm",
        }
    }
}

// ANCHOR: step
gpu_harness::steps! {
    /// A step of the ladder (each for both norms).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Step {
        /// Step 1: a block per row; the mean, the variance of the deviations, the write: the row
        /// read three times (an RMS norm's twice).
        TwoPass => "two-pass",
        /// Step 2: a block per row; the row in registers, Chan's combine: the row read once.
        OnePass => "one-pass",
        /// Step 3: a warp per row for short rows, a few for longer ones (see [`warps_per_row`]),
        /// 16-byte loads.
        ByLength => "by-length",
    }
}

impl Step {
    /// Its kernel in `cuda/norms.cu` for `norm` on f32 rows (the bf16 one ends in `_bf16`); step 3
    /// has two more, for rows that fill every lane ([`Step::full_row_kernel`]) and for rows longer
    /// than its lanes hold ([`Step::long_row_kernel`]).
    pub const fn kernel(self, norm: Norm) -> &'static str {
        match (norm, self) {
            (Norm::Layer, Step::TwoPass) => "layer_norm_two_pass",
            (Norm::Layer, Step::OnePass) => "layer_norm_one_pass",
            (Norm::Layer, Step::ByLength) => "layer_norm_by_length",
            (Norm::Rms, Step::TwoPass) => "rms_norm_two_pass",
            (Norm::Rms, Step::OnePass) => "rms_norm_one_pass",
            (Norm::Rms, Step::ByLength) => "rms_norm_by_length",
        }
    }

    /// Step 3's kernel for rows that fill every lane of their warps (1024, 2048, 4096 or 8192
    /// elements: [`warps_per_row`] x 32 lanes x [`LANE_ELEMENTS`]), whose warps merge their lanes'
    /// states the short way: a kernel of its own, so that the general merges do not take its
    /// registers. It loads and stores 16 bytes at a time without checking the addresses:
    /// [`Norms`] launches it only where x, y, the weight and the bias start on 16-byte boundaries,
    /// and [`Step::kernel`]'s otherwise. The other steps take every row with [`Step::kernel`].
    pub const fn full_row_kernel(self, norm: Norm) -> &'static str {
        match (norm, self) {
            (Norm::Layer, Step::ByLength) => "layer_norm_by_length_full",
            (Norm::Rms, Step::ByLength) => "rms_norm_by_length_full",
            _ => self.kernel(norm),
        }
    }

    /// Step 3's kernel for rows longer than 8 warps' lanes hold (8192 elements), a chunk at a time:
    /// a kernel of its own, so that its loop does not take registers from the rows that fit. The
    /// other steps take every row with [`Step::kernel`].
    pub const fn long_row_kernel(self, norm: Norm) -> &'static str {
        match (norm, self) {
            (Norm::Layer, Step::ByLength) => "layer_norm_by_length_chunks",
            (Norm::Rms, Step::ByLength) => "rms_norm_by_length_chunks",
            _ => self.kernel(norm),
        }
    }

    /// The launch that normalises the rows of a `rows x cols` matrix with `norm` (f32 or bf16
    /// alike: a lane holds [`LANE_ELEMENTS`] of either).
    pub fn plan(self, norm: Norm, rows: usize, cols: usize) -> Result<NormPlan> {
        check_shape(rows, cols)?;
        let (warps, capacity) = match self {
            Step::TwoPass => (THREADS / 32, 0),
            Step::OnePass => (THREADS / 32, THREADS as usize * SLOTS),
            Step::ByLength => {
                let warps = warps_per_row(cols);
                (warps, 32 * warps as usize * LANE_ELEMENTS)
            }
        };
        let rows_per_block = THREADS / 32 / warps;
        let reads = match self {
            Step::TwoPass if norm == Norm::Layer => 3,
            Step::TwoPass => 2,
            _ if cols > capacity => 2,
            _ => 1,
        };
        let grid = rows.div_ceil(rows_per_block as usize).max(1);
        let config = LaunchConfig::linear(grid as u32, THREADS, 0);
        let kernel = if cols > capacity {
            self.long_row_kernel(norm)
        } else if cols == capacity {
            self.full_row_kernel(norm)
        } else {
            self.kernel(norm)
        };
        Ok(NormPlan { kernel, config, warps_per_row: warps, rows_per_block, reads })
    }
}
// ANCHOR_END: step

// ANCHOR: warps_per_row
/// Warps per row of [`Step::ByLength`]: the fewest of 1, 2, 4 and 8 whose lanes hold the row in
/// their registers, [`LANE_ELEMENTS`] each (1024 elements per warp); 8 (a block per row) for
/// longer rows, which are then read twice. A row of 1024 is one warp's, 8 rows per block; a row of
/// 4096 four warps', 2 rows per block.
pub fn warps_per_row(cols: usize) -> u32 {
    let per_warp = 32 * LANE_ELEMENTS;
    cols.div_ceil(per_warp).clamp(1, 8).next_power_of_two() as u32
}
// ANCHOR_END: warps_per_row

/// Rows and columns each within [`MAX_SIDE`].
fn check_shape(rows: usize, cols: usize) -> Result<()> {
    if rows > MAX_SIDE || cols > MAX_SIDE {
        return Err(GpuError::BadInput(format!(
            "a {rows} x {cols} matrix: rows and columns must each be at most {MAX_SIDE} (2^31 - \
             1), for the \
             kernels' 32-bit indices; split the matrix"
        )));
    }
    Ok(())
}

/// The launch of one step on one shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NormPlan {
    /// The f32 kernel.
    pub kernel: &'static str,
    pub config: LaunchConfig,
    /// Warps that share a row, and rows per block (8 / warps).
    pub warps_per_row: u32,
    pub rows_per_block: u32,
    /// Times the kernel reads each row from memory: 3 (two passes of a layer norm), 2 (of an RMS
    /// norm, or a row longer than the registers hold), 1.
    pub reads: u32,
}

impl fmt::Display for NormPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LaunchConfig { grid, block, .. } = self.config;
        write!(f, "{}: grid {} of {} threads, ", self.kernel, grid.0, block.0)?;
        match (self.warps_per_row, self.rows_per_block) {
            (_, 1) => write!(f, "a block per row")?,
            (1, n) => write!(f, "a warp per row, {n} rows per block")?,
            (w, n) => write!(f, "{w} warps per row, {n} rows per block")?,
        }
        let times = ["", "once", "twice", "three times"];
        write!(f, ", each row read {}", times[self.reads as usize])
    }
}

/// What a launch normalises: the shape, `x`'s, the weight's, the bias's (a layer norm's) and the
/// output's lengths, and eps. Their number of elements, or an error that says what is wrong.
fn check_lengths(
    norm: Norm,
    (rows, cols): (usize, usize),
    [x, weight, bias, output]: [usize; 4],
    eps: f32,
) -> Result<usize> {
    check_shape(rows, cols)?;
    let what = format!("{} of a {rows} x {cols} matrix", norm.name());
    let n = rows
        .checked_mul(cols)
        .ok_or_else(|| GpuError::BadInput(format!("{what}: more elements than a usize")))?;
    let problem = if x != n {
        format!("x holds {x} elements, not {rows} x {cols} = {n}")
    } else if weight != cols {
        format!("the weight holds {weight} elements, not one per column ({cols})")
    } else if norm == Norm::Layer && bias != cols {
        format!("the bias holds {bias} elements, not one per column ({cols})")
    } else if output != n {
        format!("the output holds {output} elements, not x's {n}")
    } else if !(eps.is_finite() && eps >= 0.0) {
        format!("eps is {eps}: it must be a finite number at least 0 (torch's default is 1e-5)")
    } else {
        return Ok(n);
    };
    Err(GpuError::BadInput(format!("{what}: {problem}")))
}

// ANCHOR: norms
/// Normalises rows with one step's kernels.
pub struct Norms {
    device: Device,
    step: Step,
    /// The step's kernels ([`Step::kernel`], and step 3's [`Step::full_row_kernel`] and
    /// [`Step::long_row_kernel`]) of a layer norm and of an RMS norm, f32 and bf16, by their names.
    kernels: Vec<(String, Kernel)>,
}

impl Norms {
    /// Compiles (or takes from the cache) the step's kernels, for both norms, f32 and bf16.
    pub fn new(device: &Device, step: Step) -> Result<Self> {
        let mut kernels = Vec::new();
        for norm in Norm::ALL {
            let mut names =
                vec![step.kernel(norm), step.full_row_kernel(norm), step.long_row_kernel(norm)];
            names.dedup();
            for name in names {
                for suffix in ["", "_bf16"] {
                    let name = format!("{name}{suffix}");
                    kernels.push((name.clone(), device.kernel(&SOURCE, &name)?));
                }
            }
        }
        Ok(Norms { device: device.clone(), step, kernels })
    }

    pub fn step(&self) -> Step {
        self.step
    }

    /// Writes the layer norm of each row of the row-major `rows x cols` matrix `x` into `y` (the
    /// same shape): `weight` and `bias` hold one value per column. Queued on the device's stream;
    /// an empty matrix launches nothing.
    pub fn layer_norm<T: Value>(
        &self,
        x: DeviceView<'_, T>,
        shape: (usize, usize),
        weight: DeviceView<'_, T>,
        bias: DeviceView<'_, T>,
        eps: f32,
        y: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.launch(Norm::Layer, x, shape, weight, Some(bias), eps, y)
    }

    /// Writes the RMS norm of each row of `x` into `y`, as [`Norms::layer_norm`] does the layer
    /// norm (no bias).
    pub fn rms_norm<T: Value>(
        &self,
        x: DeviceView<'_, T>,
        shape: (usize, usize),
        weight: DeviceView<'_, T>,
        eps: f32,
        y: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.launch(Norm::Rms, x, shape, weight, None, eps, y)
    }

    #[allow(clippy::too_many_arguments)]
    fn launch<T: Value>(
        &self,
        norm: Norm,
        x: DeviceView<'_, T>,
        (rows, cols): (usize, usize),
        weight: DeviceView<'_, T>,
        bias: Option<DeviceView<'_, T>>,
        eps: f32,
        y: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let lengths = [x.len(), weight.len(), bias.map_or(0, |b| b.len()), y.len()];
        if check_lengths(norm, (rows, cols), lengths, eps)? == 0 {
            return Ok(());
        }
        let plan = self.step.plan(norm, rows, cols)?;
        // The full-lanes kernel reads and writes 16-byte vectors unchecked.
        let aligned = [
            x.raw_address(),
            weight.raw_address(),
            bias.map_or(0, |b| b.raw_address()),
            y.as_view().raw_address(),
        ]
        .iter()
        .all(|address| address % 16 == 0);
        let kernel = if plan.kernel == self.step.full_row_kernel(norm) && !aligned {
            self.step.kernel(norm)
        } else {
            plan.kernel
        };
        let name = format!("{kernel}{}", T::SUFFIX);
        let kernel = &self.kernels.iter().find(|(k, _)| *k == name).expect("a compiled kernel").1;
        let mut launch = self.device.launch(kernel, plan.config).arg(x).arg(weight);
        if let Some(bias) = bias {
            launch = launch.arg(bias);
        }
        launch = launch.arg(y).arg(rows as u32).arg(cols as u32).arg(eps);
        if self.step == Step::ByLength {
            launch = launch.arg(plan.warps_per_row);
        }
        launch.run()
    }

    /// A [`Problem`] normalised through the device: uploads it, runs the step, downloads the
    /// result.
    pub fn normalise_host<T: Value>(&self, p: &Problem<'_, T>) -> Result<Vec<T>> {
        let lengths = [p.x.len(), p.weight.len(), p.bias.len(), p.x.len()];
        let n = check_lengths(p.norm, (p.rows, p.cols), lengths, p.eps)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let (x, weight) = (self.device.upload(p.x)?, self.device.upload(p.weight)?);
        let mut y = self.device.alloc::<T>(n)?;
        match p.norm {
            Norm::Layer => {
                let bias = self.device.upload(p.bias)?;
                self.layer_norm(
                    x.as_view(),
                    (p.rows, p.cols),
                    weight.as_view(),
                    bias.as_view(),
                    p.eps,
                    &mut y,
                )?
            }
            Norm::Rms => {
                self.rms_norm(x.as_view(), (p.rows, p.cols), weight.as_view(), p.eps, &mut y)?
            }
        }
        y.to_host()
    }
}
// ANCHOR_END: norms

/// One normalisation on the host: the norm, the row-major `rows x cols` matrix `x`, the weight and
/// the bias (one value per column; the bias is empty for an RMS norm) and eps.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a, T> {
    pub norm: Norm,
    pub x: &'a [T],
    pub rows: usize,
    pub cols: usize,
    pub weight: &'a [T],
    pub bias: &'a [T],
    pub eps: f32,
}

// ANCHOR: reference
/// The norm of each row on the CPU, in f64, as torch defines it: a layer norm's mean and biased
/// variance (two passes), `(x - mean) / sqrt(var + eps) * w + b`; an RMS norm's mean square,
/// `x / sqrt(ms + eps) * w`. NaN and infinities go through f64's arithmetic, which gives torch's
/// answers; f64 squares 1e30 without overflow, as the kernels' scaled statistics do (and torch's
/// f32 kernels do not).
/// The reference the tests and the tour compare with.
pub fn reference<T: Value>(p: &Problem<'_, T>) -> Vec<f64> {
    assert_eq!(p.x.len(), p.rows * p.cols, "reference: a {} x {} matrix", p.rows, p.cols);
    let mut out = Vec::with_capacity(p.x.len());
    for r in 0..p.rows {
        out.extend(row_reference(p, r).into_iter().map(|(y, _)| y));
    }
    out
}

/// Row `r`'s results, each with its bound (see [`tolerance`]).
fn row_reference<T: Value>(p: &Problem<'_, T>, r: usize) -> Vec<(f64, f64)> {
    let cols = p.cols;
    let x: Vec<f64> = p.x[r * cols..(r + 1) * cols].iter().map(|v| v.to_f64()).collect();
    let w = |c: usize| p.weight[c].to_f64();
    let eps = f64::from(p.eps);
    let n = cols as f64;
    let largest = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    match p.norm {
        Norm::Layer => {
            let mean = x.iter().sum::<f64>() / n;
            let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            let s = (var + eps).sqrt();
            let (low, high) = x
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
            let bound = tolerance::<T>(Norm::Layer, cols, ((high - low) / s, largest / s));
            (0..cols)
                .map(|c| {
                    let z = (x[c] - mean) / s;
                    let y = z * w(c) + p.bias[c].to_f64();
                    (y, bound(z, w(c), y))
                })
                .collect()
        }
        Norm::Rms => {
            let ms = x.iter().map(|v| v * v).sum::<f64>() / n;
            let r = 1.0 / (ms + eps).sqrt();
            let bound = tolerance::<T>(Norm::Rms, cols, (0.0, 0.0));
            (0..cols)
                .map(|c| {
                    let y = x[c] * r * w(c);
                    (y, bound(x[c] * r, w(c), y))
                })
                .collect()
        }
    }
}

/// How far an element of a step's result may be from [`reference`]'s, as a function of the
/// element's normalised value `z` (`(x - mean) / s` for a layer norm, `x / rms` for an RMS norm),
/// its weight `w` and its exact result `y`, for a row of `cols` elements whose range and largest
/// magnitude are `range_over_s` and `largest_over_s` times s = sqrt(var + eps). Derived in the
/// chapter ("How close is close"), with u = 2^-24 and:
///
/// - h = ceil(cols / 256) + 40, the most f32 additions on the way from an element to a statistic
///   (a thread of a block per row adds a 256th of the row, a lane of the last step 32 elements per
///   chunk; then the chunks, at most 8 levels of merges, the finish);
/// - the mean is off by at most E s, E = (h range + (10 + cols / 4096) max|x|) u / s: every sum
///   adds deviations from a pivot of the row (each below the range), and each merge and chunk
///   rounds the mean itself once;
/// - s^2 is off by a relative rho = 2 sqrt(log2 cols) E + E^2 + (h + 10) u: the merges' d^2 terms
///   carry the means' errors (bounded by Cauchy-Schwarz over the merge tree), the deviations from a
///   mean that is off by E s add (E s)^2, and the sums of squares round;
/// - so z is off by E + |z| (rho / 2 + 4 u) (the square root halves rho; the subtraction, the
///   root, the division and the product round), and y = z w + b by `|w|` times that plus
///   2 u (|y| + |w z|) (the multiply-add);
/// - an RMS norm's sum of squares has no cancellation: a relative (h + 2) u, halved by the square
///   root, plus 8 u for the division, the root and the products: `|y| (h / 2 + 8) u`; and where
///   x 2^-e is subnormal (x far below the row's largest), its rounding, 2^-150, is multiplied by
///   the factor (at most 2 sqrt(cols): the largest scaled square is at least 1/4) and w:
///   `|w| sqrt(cols) 2^-149`;
///
/// plus, for bf16 results, their rounding (2^-8 of the result), and an absolute `(1 + |w|) 2^-148`
/// (f32) or `2^-132` (bf16) for results in the subnormal range.
pub fn tolerance<T: Value>(
    norm: Norm,
    cols: usize,
    (range_over_s, largest_over_s): (f64, f64),
) -> impl Fn(f64, f64, f64) -> f64 {
    let u = f64::powi(2.0, -24);
    let h = cols.div_ceil(256) as f64 + 40.0;
    let e = (h * range_over_s + (10.0 + cols.div_ceil(4096) as f64) * largest_over_s) * u;
    let rho = 2.0 * (cols.max(2) as f64).log2().sqrt() * e + e * e + (h + 10.0) * u;
    let magnified = (cols as f64).sqrt() * f64::powi(2.0, -149);
    let bf16 = T::BF16;
    move |z: f64, w: f64, y: f64| {
        let f32_bound = match norm {
            Norm::Layer => {
                w.abs() * (e + z.abs() * (rho / 2.0 + 4.0 * u))
                    + 2.0 * u * (y.abs() + (w * z).abs())
            }
            Norm::Rms => y.abs() * (h / 2.0 + 8.0) * u + w.abs() * magnified,
        };
        if bf16 {
            f32_bound
                + (y.abs() + f32_bound) * f64::powi(2.0, -8)
                + (1.0 + w.abs()) * f64::powi(2.0, -132)
        } else {
            f32_bound + (1.0 + w.abs()) * f64::powi(2.0, -148)
        }
    }
}

/// The bits of a value no kernel writes (a NaN with a payload no arithmetic makes): outputs are
/// filled with it before every checked launch, and an element that still holds it was not
/// written.
pub const POISON_F32: u32 = 0x7fc0_5c0f;
/// The same for bf16 outputs.
pub const POISON_BF16: u16 = 0x7fc5;

/// The poison of `T`.
pub fn poison<T: Value>() -> T {
    T::from_f32(f32::from_bits(if T::BF16 { u32::from(POISON_BF16) << 16 } else { POISON_F32 }))
}

/// The first element where `got`, a step's result for `p`, is wrong: still the poison (not
/// written), a NaN where the reference has a number or a number where it has NaN, or further from
/// [`reference`] than [`tolerance`] allows. Rows are checked on every core.
pub fn first_mismatch<T: Value>(p: &Problem<'_, T>, got: &[T]) -> Option<String> {
    let (rows, cols) = (p.rows, p.cols);
    if p.x.len() != rows * cols || got.len() != p.x.len() {
        return Some(format!(
            "{rows} x {cols}: x holds {}, the output {} elements",
            p.x.len(),
            got.len()
        ));
    }
    if rows == 0 || cols == 0 {
        return None;
    }
    let poison = poison::<T>().bits();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rows_per = rows.div_ceil(cores).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..rows)
            .step_by(rows_per)
            .map(|first| {
                scope.spawn(move || {
                    (first..(first + rows_per).min(rows)).find_map(|r| {
                        let expected = row_reference(p, r);
                        expected.iter().enumerate().find_map(|(c, &(e, bound))| {
                            let g = got[r * cols + c];
                            let (gv, x) = (g.to_f64(), p.x[r * cols + c].to_f64());
                            let why = if g.bits() == poison {
                                "not written (still the poison)"
                            } else if e.is_nan() != gv.is_nan()
                                || (!e.is_nan() && (gv - e).abs() > bound)
                            {
                                "wrong"
                            } else {
                                return None;
                            };
                            Some(format!(
                                "{} row {r}, column {c} of {cols}: {why}: expected {e:e}, got \
                                 {gv:e} (x {x:e}, bound \
                                 {bound:e})",
                                p.norm.name()
                            ))
                        })
                    })
                })
            })
            .collect();
        handles.into_iter().find_map(|h| h.join().expect("a checking thread panicked"))
    })
}
// ANCHOR_END: reference
