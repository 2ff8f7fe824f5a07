//! # reduce-numerics: what a sum is worth
//!
//! The reduction family's last chapter asks how accurate the sums are, and what half-precision
//! inputs change. Every kernel of `cuda/reduce_numerics.cu` is reduce-atomic's deterministic single
//! pass (a grid that fills the GPU once, 16-byte loads, a block reduction, the last block finishing
//! in a fixed order) with another value accumulated:
//!
//! - [`Numerics::sum_halves`] and [`Numerics::mean_halves`]: f16 or bf16 inputs (their 16-bit
//!   words, see [`HalfFormat`]), 8 per 16-byte load, accumulated in f32.
//! - [`Numerics::compensated_sum`]: an f32 sum that carries its own rounding error (Neumaier's form
//!   of Kahan summation, kept through the whole tree with TwoSum).
//! - [`Numerics::moments`] and [`Numerics::moments_halves`]: count, mean and the sum of squared
//!   deviations in one pass (per-thread groups of four, combined with Chan's formula), from which
//!   [`Moments::variance`] and [`Moments::sample_variance`].
//!
//! Rules: the sum of nothing is 0; the mean and the moments of nothing are errors; one element has
//! a variance of 0, and its sample variance is an error. A NaN anywhere makes every result NaN; an
//! infinity makes the sum and the mean infinite (NaN if both signs occur) and the variance NaN.

use gpu_harness::{
    Case, Checked, Device, DeviceBuffer, DeviceView, GpuError, GpuShape, Kernel, KernelSource,
    Prepared, Result, StepEntry, kernel_source,
};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use reduction::reference::{sum_mismatch, sum_tolerance};
use reduction::{DeviceFinish, ReductionPlan, grid_stride_blocks};

/// Threads per block.
pub const BLOCK_SIZE: u32 = 256;

const SOURCE: KernelSource = kernel_source!("reduce_numerics.cu");

/// The two 16-bit float formats the kernels read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HalfFormat {
    /// IEEE half: 5 exponent bits, 10 fraction bits (largest finite value 65504).
    F16,
    /// bfloat16: f32's 8 exponent bits, 7 fraction bits.
    BF16,
}

impl HalfFormat {
    /// The bits of `x` rounded to the nearest value of this format (ties to even).
    pub fn from_f32(self, x: f32) -> u16 {
        match self {
            HalfFormat::F16 => half::f16::from_f32(x).to_bits(),
            HalfFormat::BF16 => half::bf16::from_f32(x).to_bits(),
        }
    }

    /// The value of `bits`, exactly, as f32.
    pub fn to_f32(self, bits: u16) -> f32 {
        match self {
            HalfFormat::F16 => half::f16::from_bits(bits).to_f32(),
            HalfFormat::BF16 => half::bf16::from_bits(bits).to_f32(),
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            HalfFormat::F16 => "f16",
            HalfFormat::BF16 => "bf16",
        }
    }
}

/// The count, mean and sum of squared deviations from the mean (`m2`) of an input, as the kernels
/// accumulate them (mean and `m2` in f32).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moments {
    pub count: u64,
    pub mean: f32,
    pub m2: f32,
}

impl Moments {
    /// The population variance, `m2 / n`: 0 for one element.
    pub fn variance(&self) -> f64 {
        f64::from(self.m2) / self.count as f64
    }

    /// The sample variance, `m2 / (n - 1)`; an error for fewer than two elements.
    pub fn sample_variance(&self) -> Result<f64> {
        if self.count < 2 {
            return Err(GpuError::BadInput(format!(
                "the sample variance of {} element(s) is undefined",
                self.count
            )));
        }
        Ok(f64::from(self.m2) / (self.count - 1) as f64)
    }

    /// Decodes the kernels' `struct Moments { unsigned long long count; float mean; float m2; }`.
    fn from_words(words: [u64; 2]) -> Moments {
        Moments {
            count: words[0],
            mean: f32::from_bits(words[1] as u32),
            m2: f32::from_bits((words[1] >> 32) as u32),
        }
    }
}

// ANCHOR: plan
/// One launch, as reduce-atomic's: a grid that fills the GPU once, or fewer blocks when there is
/// less than one 16-byte vector per thread (`per_vector` elements: 8 halves, or 4 floats).
pub fn plan(kernel: &'static str, n: usize, per_vector: u32, gpu: GpuShape) -> ReductionPlan {
    let blocks = grid_stride_blocks(n, BLOCK_SIZE, per_vector, gpu);
    let mut plan = ReductionPlan::single_pass(kernel, n, blocks, BLOCK_SIZE, 0);
    plan.host_adds = 0;
    plan.on_device = true;
    plan.finish = DeviceFinish::LastBlock;
    plan
}
// ANCHOR_END: plan

/// The kernels, with the scratch of the deterministic finish: one partial per block (two words
/// each, the largest accumulator being 16 bytes), the ticket counter, and the result.
pub struct Numerics {
    device: Device,
    sum_f16: Kernel,
    sum_bf16: Kernel,
    compensated: Kernel,
    moments_f32: Kernel,
    moments_f16: Kernel,
    moments_bf16: Kernel,
    partials: DeviceBuffer<u64>,
    ticket: DeviceBuffer<u32>,
    result: DeviceBuffer<u64>,
}

impl Numerics {
    /// Compiles the kernels (once per process); the ticket counter starts at 0.
    pub fn new(device: &Device) -> Result<Self> {
        let kernel = |name: &str| device.kernel(&SOURCE, name);
        Ok(Numerics {
            device: device.clone(),
            sum_f16: kernel("numerics_sum_f16")?,
            sum_bf16: kernel("numerics_sum_bf16")?,
            compensated: kernel("numerics_sum_f32_compensated")?,
            moments_f32: kernel("numerics_moments_f32")?,
            moments_f16: kernel("numerics_moments_f16")?,
            moments_bf16: kernel("numerics_moments_bf16")?,
            partials: device.alloc(0)?,
            ticket: device.alloc(1)?,
            result: device.alloc(2)?,
        })
    }

    /// Grows the partials to what `n` elements need, so that no timed call allocates.
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let blocks = plan("", n, 4, self.device.facts().shape())
            .passes
            .first()
            .map_or(0, |p| p.outputs as usize);
        if self.partials.len() < 2 * blocks {
            self.partials = self.device.alloc(2 * blocks)?;
        }
        Ok(())
    }

    /// Fills the partials and the result with a NaN pattern, so a value a kernel forgot to write
    /// shows in the result (tests poison before every launch).
    pub fn poison(&mut self, n: usize) -> Result<()> {
        self.reserve(n)?;
        self.partials.fill_words(0xffc0_0001)?;
        self.result.fill_words(0xffc0_0001)
    }

    /// Queues `kernel` over `input` (`n` elements, `per_vector` to a 16-byte load).
    fn queue(&mut self, which: Which, input: gpu_harness::KernelArg, n: usize) -> Result<()> {
        let per_vector = if which.reads_halves() { 8 } else { 4 };
        self.reserve(n)?;
        let plan = plan("", n, per_vector, self.device.facts().shape());
        let kernel = match which {
            Which::Sum(HalfFormat::F16) => &self.sum_f16,
            Which::Sum(HalfFormat::BF16) => &self.sum_bf16,
            Which::Compensated => &self.compensated,
            Which::Moments(None) => &self.moments_f32,
            Which::Moments(Some(HalfFormat::F16)) => &self.moments_f16,
            Which::Moments(Some(HalfFormat::BF16)) => &self.moments_bf16,
        };
        self.device
            .launch(kernel, plan.passes[0].config)
            .arg(input)
            .arg(&mut self.partials)
            .arg(&mut self.ticket)
            .arg(&mut self.result)
            .arg(n as u64)
            .run()
    }

    /// Queues the f32 sum of half-precision words; the result stays on the device.
    pub fn queue_sum_halves(
        &mut self,
        input: DeviceView<'_, u16>,
        format: HalfFormat,
    ) -> Result<()> {
        self.queue(Which::Sum(format), input.into(), input.len())
    }

    /// The sum of `input` (the words of f16 or bf16 values) accumulated in f32; 0 for nothing.
    pub fn sum_halves(&mut self, input: DeviceView<'_, u16>, format: HalfFormat) -> Result<f32> {
        if input.is_empty() {
            return Ok(0.0);
        }
        self.queue_sum_halves(input, format)?;
        Ok(f32::from_bits(self.result.view(..1)?.to_host()?[0] as u32))
    }

    /// The mean of `input`, `sum / n`; an error for an empty input.
    pub fn mean_halves(&mut self, input: DeviceView<'_, u16>, format: HalfFormat) -> Result<f64> {
        if input.is_empty() {
            return Err(GpuError::BadInput("the mean of an empty input is undefined".into()));
        }
        Ok(f64::from(self.sum_halves(input, format)?) / input.len() as f64)
    }

    /// Queues the compensated f32 sum; the result stays on the device.
    pub fn queue_compensated_sum(&mut self, input: DeviceView<'_, f32>) -> Result<()> {
        self.queue(Which::Compensated, input.into(), input.len())
    }

    /// The compensated sum of `input`: its f32 sum plus the rounding error the kernel carried; 0
    /// for nothing.
    pub fn compensated_sum(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        if input.is_empty() {
            return Ok(0.0);
        }
        self.queue_compensated_sum(input)?;
        let word = self.result.view(..1)?.to_host()?[0];
        let (sum, error) = (f32::from_bits(word as u32), f32::from_bits((word >> 32) as u32));
        Ok(sum + error)
    }

    /// Queues the moments of an f32 input, or of half words when `format` is given.
    pub fn queue_moments(
        &mut self,
        input: gpu_harness::KernelArg,
        n: usize,
        format: Option<HalfFormat>,
    ) -> Result<()> {
        self.queue(Which::Moments(format), input, n)
    }

    /// Count, mean and sum of squared deviations of an f32 input, in one pass; an error for an
    /// empty input.
    pub fn moments(&mut self, input: DeviceView<'_, f32>) -> Result<Moments> {
        self.read_moments(input.into(), input.len(), None)
    }

    /// The same for half-precision words.
    pub fn moments_halves(
        &mut self,
        input: DeviceView<'_, u16>,
        format: HalfFormat,
    ) -> Result<Moments> {
        self.read_moments(input.into(), input.len(), Some(format))
    }

    fn read_moments(
        &mut self,
        input: gpu_harness::KernelArg,
        n: usize,
        format: Option<HalfFormat>,
    ) -> Result<Moments> {
        if n == 0 {
            return Err(GpuError::BadInput(
                "the mean and variance of an empty input are undefined".into(),
            ));
        }
        self.queue_moments(input, n, format)?;
        let words = self.result.to_host()?;
        Ok(Moments::from_words([words[0], words[1]]))
    }
}

/// Which kernel a launch runs.
#[derive(Debug, Clone, Copy)]
enum Which {
    Sum(HalfFormat),
    Compensated,
    Moments(Option<HalfFormat>),
}

impl Which {
    fn reads_halves(self) -> bool {
        matches!(self, Which::Sum(_) | Which::Moments(Some(_)))
    }
}

/// The exact sum of `values` (f32 values added in f64, exact while fewer than 2^29 values of
/// magnitude below 2^100 are added: each f32 has 24 significant bits, f64 has 53).
pub fn exact_sum(values: impl IntoIterator<Item = f32>) -> f64 {
    values.into_iter().map(f64::from).sum()
}

/// Mean and population variance in f64, by two passes: the reference of the moments.
pub fn two_pass_moments(values: &[f32]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let m2: f64 = values.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum();
    (mean, m2 / n)
}

/// Tolerance of the one-pass population variance of `values`, derived in the chapter. With
/// u = 2^-24, depth = ⌈log2 n⌉ + 2 levels of combination, μ the mean, X = max |x| and
/// D = max |x - μ|: every combination rounds m2 by at most 3u of itself, and the rounding of the
/// means (at most 2u·depth·X each) enters m2 through d^2, where |d| ≤ 2D, weighted by
/// na·nb/n, whose sum over a combination tree is at most n·depth/4. So
/// `|error of m2 / n| ≤ u · depth · (2 · depth · X · D + 3 · variance)`.
pub fn variance_tolerance(values: &[f32]) -> f64 {
    let (mean, variance) = two_pass_moments(values);
    let depth = (values.len().max(1) as f64).log2().ceil() + 2.0;
    let largest = values.iter().map(|&x| f64::from(x).abs()).fold(0.0, f64::max);
    let spread = values.iter().map(|&x| (f64::from(x) - mean).abs()).fold(0.0, f64::max);
    let u = f64::from(f32::EPSILON) / 2.0;
    u * depth * (2.0 * depth * largest * spread + 3.0 * variance)
}

/// Tolerance of a compensated sum of `n` values whose magnitudes add up to `sum_abs`:
/// `2 ε |S| + 4 n ε^2 Σ|x|`, Higham's bound for compensated summation (ε = 2^-24), where `S` is
/// the exact sum.
pub fn compensated_tolerance(n: usize, exact: f64, sum_abs: f64) -> f64 {
    let epsilon = f64::from(f32::EPSILON) / 2.0;
    2.0 * epsilon * exact.abs() + 4.0 * n as f64 * epsilon * epsilon * sum_abs
}

/// The longest addition chain of a sum of `n` half words on a GPU of shape `gpu` (its bound:
/// [`reduction::reference::sum_bound`]).
pub fn halves_chain(n: usize, gpu: GpuShape) -> u64 {
    plan("", n, 8, gpu).longest_addition_chain()
}

/// Why `got` is not an acceptable sum of the half words `input`, summed on a GPU of shape `gpu`.
fn halves_mismatch(input: &[u16], format: HalfFormat, got: f32, gpu: GpuShape) -> Option<String> {
    let values: Vec<f32> = input.iter().map(|&h| format.to_f32(h)).collect();
    sum_mismatch(&values, got, halves_chain(input.len(), gpu))
}

/// Random half words of values uniform in [-1, 1), from `seed`.
pub fn random_halves(n: usize, format: HalfFormat, seed: u64) -> Vec<u16> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| format.from_f32(rng.random_range(-1.0f32..1.0))).collect()
}

/// A half-input step on a random input: what is timed is the launch; the result stays on the
/// device.
struct HalvesCase {
    numerics: Numerics,
    input: DeviceBuffer<u16>,
    host: Vec<u16>,
    format: HalfFormat,
    moments: bool,
    seed: u64,
}

fn prepare_halves(
    device: &Device,
    case: &Case,
    seed: u64,
    format: HalfFormat,
    moments: bool,
) -> Result<HalvesCase> {
    let n = case.elements()?;
    let host = random_halves(n, format, seed);
    let mut numerics = Numerics::new(device)?;
    numerics.reserve(n)?;
    Ok(HalvesCase { numerics, input: device.upload(&host)?, host, format, moments, seed })
}

impl Prepared for HalvesCase {
    fn queue(&mut self) -> Result<()> {
        let n = self.input.len();
        if self.moments {
            self.numerics.queue_moments(self.input.as_view().into(), n, Some(self.format))
        } else {
            self.numerics.queue_sum_halves(self.input.as_view(), self.format)
        }
    }

    fn check(&mut self) -> Result<Checked> {
        let why = if self.moments {
            let got = self.numerics.moments_halves(self.input.as_view(), self.format)?;
            let values: Vec<f32> = self.host.iter().map(|&h| self.format.to_f32(h)).collect();
            moments_mismatch(&values, got)
        } else {
            let got = self.numerics.sum_halves(self.input.as_view(), self.format)?;
            halves_mismatch(&self.host, self.format, got, self.numerics.device.facts().shape())
        };
        Ok(why.map_or(Checked::Correct, |why| {
            Checked::Wrong(format!(
                "{}: {why} (random input from seed {})",
                self.format.suffix(),
                self.seed
            ))
        }))
    }
}

/// Whether an error is within a tolerance (never for a NaN error).
pub fn within(error: f64, tolerance: f64) -> bool {
    error <= tolerance
}

/// Why `got` is not acceptable as the moments of `values`, or `None`.
pub fn moments_mismatch(values: &[f32], got: Moments) -> Option<String> {
    let (mean, variance) = two_pass_moments(values);
    if got.count != values.len() as u64 {
        return Some(format!("count {} for {} values", got.count, values.len()));
    }
    let sum_abs: f64 = values.iter().map(|&x| f64::from(x).abs()).sum();
    let mean_tolerance = sum_tolerance(values.len(), sum_abs) / values.len() as f64;
    let variance_tol = variance_tolerance(values);
    // Where the reference is not finite (an infinity or a NaN in the input), the result must be
    // the same special value: numpy's and torch's mean is the infinity (NaN where both signs
    // meet), their variance NaN.
    let agrees = |got: f64, want: f64, tolerance: f64| match want {
        w if w.is_nan() => got.is_nan(),
        w if w.is_infinite() => got == w,
        w => within((got - w).abs(), tolerance),
    };
    let bad_mean = !agrees(f64::from(got.mean), mean, mean_tolerance);
    // An m2 past f32's range can only come back as +inf.
    let m2_past_f32 = variance * values.len() as f64 > f64::from(f32::MAX);
    let bad_variance = if m2_past_f32 {
        got.m2 != f32::INFINITY
    } else {
        !agrees(got.variance(), variance, variance_tol) || got.m2 < 0.0
    };
    (bad_mean || bad_variance).then(|| {
        format!(
            "mean {} (reference {mean}, tolerance {mean_tolerance:e}), variance {} (reference \
             {variance}, tolerance {variance_tol:e})",
            got.mean,
            got.variance()
        )
    })
}

/// An f32 step (the compensated sum, or the moments) on a random input in [-1, 1).
struct FloatsCase {
    numerics: Numerics,
    input: std::sync::Arc<gpu_harness::inputs::Input<f32>>,
    moments: bool,
}

fn prepare_floats(device: &Device, case: &Case, seed: u64, moments: bool) -> Result<FloatsCase> {
    let input = reduction::measured::random_floats(device, case, seed)?;
    let mut numerics = Numerics::new(device)?;
    numerics.reserve(input.host.len())?;
    Ok(FloatsCase { numerics, input, moments })
}

impl Prepared for FloatsCase {
    fn queue(&mut self) -> Result<()> {
        let view = self.input.device.as_view();
        if self.moments {
            self.numerics.queue_moments(view.into(), view.len(), None)
        } else {
            self.numerics.queue_compensated_sum(view)
        }
    }

    fn check(&mut self) -> Result<Checked> {
        let view = self.input.device.as_view();
        let why = if self.moments {
            moments_mismatch(&self.input.host, self.numerics.moments(view)?)
        } else {
            let got = self.numerics.compensated_sum(view)?;
            let exact = exact_sum(self.input.host.iter().copied());
            let sum_abs: f64 = self.input.host.iter().map(|&x| f64::from(x).abs()).sum();
            let tolerance = compensated_tolerance(self.input.host.len(), exact, sum_abs);
            let error = (f64::from(got) - exact).abs();
            (!within(error, tolerance))
                .then(|| format!("got {got}, exact {exact}, error {error:e} > {tolerance:e}"))
        };
        Ok(self.input.outcome(if self.moments { "moments" } else { "compensated" }, why))
    }
}

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes).
pub fn steps() -> Vec<StepEntry> {
    let crate_name = env!("CARGO_PKG_NAME");
    let halves =
        |format, moments| move |d: &Device, c: &Case, s| prepare_halves(d, c, s, format, moments);
    vec![
        reduction::measured::on_device::<reduce_atomic::DeterministicReduce<f32>>(
            crate_name, "sum-f32",
        ),
        StepEntry::new(crate_name, "sum-f16", halves(HalfFormat::F16, false)),
        StepEntry::new(crate_name, "sum-bf16", halves(HalfFormat::BF16, false)),
        StepEntry::new(crate_name, "sum-compensated", |d, c, s| prepare_floats(d, c, s, false)),
        StepEntry::new(crate_name, "moments-f32", |d, c, s| prepare_floats(d, c, s, true)),
        StepEntry::new(crate_name, "moments-f16", halves(HalfFormat::F16, true)),
    ]
}
