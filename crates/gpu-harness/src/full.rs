//! Full reductions, finished on the device: the operations and element types they support, the
//! traits their launchers implement, and the correctness suite they share (reduce-multi-level and
//! reduce-atomic each run it with one line).
//!
//! Semantics, the same on the GPU and in the CPU references here:
//! - `Sum` of f32 is compared with an f64 reference within [`crate::testing::sum_tolerance`].
//!   Sums of i32 and u32 wrap around modulo 2^32, as unsigned arithmetic does in C (and as the
//!   hardware's integer adds do); they are compared exactly with a wrapping reference.
//! - `Min` and `Max`: for f32, NaN wins (a NaN anywhere gives NaN). Exact.
//! - `mean` = sum / n as f64. For i32 and u32 the sum is accumulated in 64 bits (exact for any
//!   n < 2^32), so the mean does not wrap; for f32 it is the f32 sum divided by n.
//! - The min, max or mean of an empty input is a [`GpuError::BadInput`]; its sum is 0.

use std::fmt::Debug;

use crate::testing::{TestResult, TestRng, TestSuite, check_sum, fits_test_time, sum_tolerance};
use crate::{Device, DeviceBuffer, DeviceView, Element, GpuError, GpuShape, Result};

/// The 32-bit word tests fill scratch buffers with before a launch: a NaN as f32, and an unlikely
/// value as an integer, so a partial result a kernel forgot to write shows in the result.
pub const POISON_WORD: u32 = 0xffc0_0001;

/// What a full reduction computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Min,
    Max,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];

    /// The name used in kernel names: `sum`, `min`, `max`.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }

    /// Rejects an empty input where the operation has no answer (min and max).
    pub fn check_not_empty(self, n: usize) -> Result<()> {
        if n == 0 && self != ReduceOp::Sum {
            return Err(GpuError::BadInput(format!("the {} of an empty input is undefined", self.name())));
        }
        Ok(())
    }
}

/// The element types of the full reductions: f32, i32 and u32.
pub trait ReduceElement: Element + PartialEq + Debug {
    /// Kernel-name suffix: `f32`, `i32`, `u32`.
    const SUFFIX: &'static str;
    /// What the mean is accumulated in: 64-bit integers for i32 and u32, f32 for f32.
    type Wide: Element + Debug;
    /// Suffix of the kernel that sums 32-bit elements into [`Self::Wide`] (`wide_sum_i32`), or
    /// `sum_f32` for f32.
    const WIDE_SUM: &'static str;
    /// Suffix of the kernel that sums [`Self::Wide`] values (`sum_i64`, `sum_u64`, `sum_f32`).
    const WIDE_LATER: &'static str;

    /// The identity of `op` (0, the type's highest value for min, its lowest for max).
    fn identity(op: ReduceOp) -> Self;
    /// `op` on the CPU with the kernels' rules (wrapping integer sums, NaN-wins min and max).
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
    /// The 32-bit word a buffer of this type is filled with to hold `identity(op)`.
    fn identity_word(op: ReduceOp) -> u32;
    /// A wide sum as f64.
    fn wide_to_f64(sum: Self::Wide) -> f64;
    /// The value as f64.
    fn to_f64(self) -> f64;
    /// `n` random values for tests: uniform in [-1, 1) for f32, the full range for integers.
    fn random(rng: &mut TestRng, n: usize) -> Vec<Self>;
}

impl ReduceElement for f32 {
    const SUFFIX: &'static str = "f32";
    type Wide = f32;
    const WIDE_SUM: &'static str = "sum_f32";
    const WIDE_LATER: &'static str = "sum_f32";

    fn identity(op: ReduceOp) -> Self {
        match op {
            ReduceOp::Sum => 0.0,
            ReduceOp::Min => f32::INFINITY,
            ReduceOp::Max => f32::NEG_INFINITY,
        }
    }
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
        match op {
            ReduceOp::Sum => a + b,
            ReduceOp::Min => {
                if a < b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
            ReduceOp::Max => {
                if a > b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
        }
    }
    fn identity_word(op: ReduceOp) -> u32 {
        Self::identity(op).to_bits()
    }
    fn wide_to_f64(sum: f32) -> f64 {
        f64::from(sum)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn random(rng: &mut TestRng, n: usize) -> Vec<Self> {
        rng.uniform_f32(n, -1.0, 1.0)
    }
}

macro_rules! integer_element {
    ($t:ty, $suffix:literal, $wide:ty, $wide_later:literal) => {
        impl ReduceElement for $t {
            const SUFFIX: &'static str = $suffix;
            type Wide = $wide;
            const WIDE_SUM: &'static str = concat!("wide_sum_", $suffix);
            const WIDE_LATER: &'static str = $wide_later;

            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => 0,
                    ReduceOp::Min => <$t>::MAX,
                    ReduceOp::Max => <$t>::MIN,
                }
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Max => a.max(b),
                }
            }
            fn identity_word(op: ReduceOp) -> u32 {
                Self::identity(op) as u32
            }
            fn wide_to_f64(sum: $wide) -> f64 {
                sum as f64
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn random(rng: &mut TestRng, n: usize) -> Vec<Self> {
                rng.random_bits(n).into_iter().map(|bits| bits as $t).collect()
            }
        }
    };
}
integer_element!(i32, "i32", i64, "sum_i64");
integer_element!(u32, "u32", u64, "sum_u64");

/// A launcher that reduces a whole input of `T` to one value on the device. A launcher provides the
/// queueing and its result buffers; the reading methods (`reduce`, `sum`, `min`, `max`, `mean`)
/// come with the trait, the same for every launcher.
pub trait FullReduction<T: ReduceElement>: Sized + Send + 'static {
    /// Compiles (or fetches from the cache) the kernels; allocates only small fixed buffers.
    fn create(device: &Device) -> Result<Self>;
    /// Grows the scratch buffers to what `n` elements need, so that no timed call allocates.
    fn reserve(&mut self, n: usize) -> Result<()>;
    /// Sizes the scratch buffers for `n` elements and fills every word of them with [`POISON_WORD`].
    fn poison_scratch(&mut self, n: usize) -> Result<()>;
    /// Queues `op` over `input` (not empty); the result stays on the device, in [`Self::result`].
    fn queue(&mut self, op: ReduceOp, input: DeviceView<'_, T>) -> Result<()>;
    /// Queues the sum of `input` (not empty) accumulated in [`ReduceElement::Wide`], into
    /// [`Self::wide_result`].
    fn queue_wide_sum(&mut self, input: DeviceView<'_, T>) -> Result<()>;
    /// The one-element buffer the last [`Self::queue`] leaves its result in.
    fn result(&self) -> &DeviceBuffer<T>;
    /// The one-element buffer the last [`Self::queue_wide_sum`] leaves its result in.
    fn wide_result(&self) -> &DeviceBuffer<T::Wide>;

    /// `op` over `input`, finished on the device; only the result is read back. The sum of nothing
    /// is 0; the min or max of nothing is an error.
    fn reduce(&mut self, op: ReduceOp, input: DeviceView<'_, T>) -> Result<T> {
        op.check_not_empty(input.len())?;
        if input.is_empty() {
            return Ok(T::identity(op));
        }
        self.queue(op, input)?;
        Ok(self.result().to_host()?[0])
    }

    fn sum(&mut self, input: DeviceView<'_, T>) -> Result<T> {
        self.reduce(ReduceOp::Sum, input)
    }

    fn min(&mut self, input: DeviceView<'_, T>) -> Result<T> {
        self.reduce(ReduceOp::Min, input)
    }

    fn max(&mut self, input: DeviceView<'_, T>) -> Result<T> {
        self.reduce(ReduceOp::Max, input)
    }

    /// The mean, `sum / n`, from a sum accumulated in [`ReduceElement::Wide`] (64 bits for
    /// integers, so it does not wrap). The mean of nothing is an error.
    fn mean(&mut self, input: DeviceView<'_, T>) -> Result<f64> {
        if input.is_empty() {
            return Err(GpuError::BadInput("the mean of an empty input is undefined".into()));
        }
        self.queue_wide_sum(input)?;
        Ok(T::wide_to_f64(self.wide_result().to_host()?[0]) / input.len() as f64)
    }
}

/// Any full reduction's f32 sum as a [`crate::reduction::SumReduction`], so the ladder's sum suite
/// runs on it too: `TestSuite::new().sum_reduction_suite::<SumOf<MyLauncher<f32>>>()`.
pub struct SumOf<L> {
    launcher: L,
    reserved: usize,
}

impl<L: FullReduction<f32>> crate::reduction::SumReduction for SumOf<L> {
    fn create(device: &Device) -> Result<Self> {
        Ok(SumOf { launcher: L::create(device)?, reserved: 0 })
    }
    fn reserve(&mut self, n: usize) -> Result<()> {
        self.reserved = self.reserved.max(n);
        Ok(())
    }
    fn poison_scratch(&mut self) -> Result<()> {
        self.launcher.poison_scratch(self.reserved)
    }
    fn sum(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        self.launcher.sum(input)
    }
}

/// A launcher that computes the dot product of two f32 vectors on the device.
pub trait DotProduct: Sized {
    /// `sum(a[i] * b[i])`; `a` and `b` must have the same length.
    fn dot(&mut self, a: DeviceView<'_, f32>, b: DeviceView<'_, f32>) -> Result<f32>;
}

/// A family of full-reduction launchers, one per element type (a generic launcher type).
pub trait FullReductionFamily: 'static {
    type For<T: ReduceElement>: FullReduction<T>;
}

/// Tolerance of a dot product of `a` and `b`: [`sum_tolerance`] of the products' magnitudes, plus
/// one rounding per product.
pub fn dot_tolerance(a: &[f32], b: &[f32]) -> f64 {
    let magnitude: f64 = a.iter().zip(b).map(|(&x, &y)| (f64::from(x) * f64::from(y)).abs()).sum();
    sum_tolerance(a.len(), magnitude) + f64::from(f32::EPSILON) * magnitude
}

/// The CPU reference of `op` over `values` (f64 for f32 sums is done by the caller).
pub fn reference<T: ReduceElement>(op: ReduceOp, values: &[T]) -> T {
    values.iter().fold(T::identity(op), |a, &b| T::combine(op, a, b))
}

/// Checks one reduction's result against the CPU.
fn check_result<T: ReduceElement>(rng: &TestRng, op: ReduceOp, input: &[T], got: T, what: &str) -> TestResult {
    if T::SUFFIX == "f32" && op == ReduceOp::Sum {
        let as_f32: Vec<f32> = input.iter().map(|&x| x.to_f64() as f32).collect();
        return check_sum(rng, what, &as_f32, got.to_f64() as f32, false);
    }
    let expected = reference(op, input);
    let same = got == expected || (got.to_f64().is_nan() && expected.to_f64().is_nan());
    if !same {
        return Err(rng.fail(format!(
            "{what}: {} of {} {}: got {got:?}, expected {expected:?}",
            op.name(),
            input.len(),
            T::SUFFIX
        )));
    }
    Ok(())
}

/// Checks a mean against the f64 mean of the input (integers exactly up to f64 rounding).
fn check_mean<T: ReduceElement>(rng: &TestRng, input: &[T], got: f64) -> TestResult {
    let n = input.len() as f64;
    let expected = input.iter().map(|&x| x.to_f64()).sum::<f64>() / n;
    if got == expected || (got.is_nan() && expected.is_nan()) {
        return Ok(()); // equal, the same infinity, or NaN where NaN is due
    }
    let sum_abs: f64 = input.iter().map(|&x| x.to_f64().abs()).sum();
    let tolerance =
        if T::SUFFIX == "f32" { sum_tolerance(input.len(), sum_abs) / n } else { 1e-12 * (sum_abs / n + 1.0) };
    let close = (got - expected).abs() <= tolerance; // false for NaN
    if !close {
        return Err(rng.fail(format!(
            "mean of {} {}: got {got}, expected {expected} (tolerance {tolerance:e})",
            input.len(),
            T::SUFFIX
        )));
    }
    Ok(())
}

/// Every op, and the mean, of `host` (a fresh upload viewed from `offset`) against the CPU.
fn check_all_ops<T: ReduceElement, L: FullReduction<T>>(
    device: &Device,
    rng: &TestRng,
    launcher: &mut L,
    host: &[T],
    offset: usize,
) -> TestResult {
    let buffer = device.upload(host)?;
    let view = buffer.view(offset..)?;
    let input = &host[offset..];
    for op in ReduceOp::ALL {
        launcher.poison_scratch(input.len())?;
        match launcher.reduce(op, view) {
            Ok(got) => check_result(rng, op, input, got, &format!("offset {offset}"))?,
            Err(GpuError::BadInput(_)) if input.is_empty() && op != ReduceOp::Sum => {}
            Err(e) => return Err(rng.fail(format!("{} of {} elements: {e}", op.name(), input.len()))),
        }
    }
    if !input.is_empty() {
        launcher.poison_scratch(input.len())?;
        check_mean(rng, input, launcher.mean(view)?)?;
    }
    Ok(())
}

/// Sizes of the full-reduction suite: the shared edge sizes, sizes around one full grid of an
/// H100/H200 (1056 blocks of 256 threads, 4 elements each), and large ones.
fn full_sizes() -> Vec<usize> {
    let grid = GpuShape::HOPPER_132_SMS.threads_in_one_wave(256) * 4;
    let mut sizes: Vec<usize> =
        crate::reduction::EDGE_SIZES.iter().copied().chain([2, 3, 5, 4095, 4097, grid - 1, grid, grid + 5]).collect();
    sizes.push((3 << 22) + 11);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

impl TestSuite {
    /// Adds the full-reduction suite for launcher family `F`: sum, min, max and mean over f32, i32
    /// and u32 at edge and large sizes and at every 16-byte alignment, NaN and infinities, empty
    /// inputs, and the dot product.
    pub fn full_reduction_suite<F: FullReductionFamily>(self) -> Self
    where
        F::For<f32>: DotProduct,
    {
        let tag = crate::testing::short_type_name::<F>();
        self.typed_full_suite::<F, f32>()
            .typed_full_suite::<F, i32>()
            .typed_full_suite::<F, u32>()
            .gpu(format!("full_suite::{tag}::f32_nan_wins_and_infinities"), |device| {
                let rng = TestRng::new();
                let mut launcher = F::For::<f32>::create(device)?;
                let mut host: Vec<f32> = (0..100_000).map(|i| (i % 1000) as f32 - 500.0).collect();
                host[77_777] = f32::INFINITY;
                check_all_ops(device, &rng, &mut launcher, &host, 0)?;
                host[12_345] = f32::NAN;
                check_all_ops(device, &rng, &mut launcher, &host, 0)
            })
            .gpu(format!("full_suite::{tag}::f32_dot_product"), |device| {
                let mut rng = TestRng::new();
                let mut launcher = F::For::<f32>::create(device)?;
                let sizes = [0usize, 1, 3, 4, 5, 255, 257, 4099, 1 << 20, (1 << 20) + 3, (3 << 22) + 11];
                for n in sizes.into_iter().filter(|&n| fits_test_time(device, n).is_none()) {
                    let a = rng.uniform_f32(n + 3, -1.0, 1.0);
                    let b = rng.uniform_f32(n + 3, -1.0, 1.0);
                    let (da, db) = (device.upload(&a)?, device.upload(&b)?);
                    // Same alignment (vector loads), then different alignments (scalar path).
                    for (oa, ob) in [(0, 0), (1, 1), (3, 3), (0, 1), (2, 3)] {
                        let (x, y) = (&a[oa..oa + n], &b[ob..ob + n]);
                        let got = launcher.dot(da.view(oa..oa + n)?, db.view(ob..ob + n)?)?;
                        let expected: f64 = x.iter().zip(y).map(|(&p, &q)| f64::from(p) * f64::from(q)).sum();
                        let tolerance = dot_tolerance(x, y);
                        let close = (f64::from(got) - expected).abs() <= tolerance; // false for NaN
                        if !close {
                            return Err(rng.fail(format!(
                                "dot of {n} at offsets ({oa}, {ob}): got {got}, expected {expected} ± {tolerance:e}"
                            )));
                        }
                    }
                }
                Ok(())
            })
            .gpu(format!("full_suite::{tag}::dot_of_different_lengths_is_an_error"), |device| {
                let mut launcher = F::For::<f32>::create(device)?;
                let (a, b) = (device.upload(&[1.0f32; 10])?, device.upload(&[1.0f32; 9])?);
                match launcher.dot(a.as_view(), b.as_view()) {
                    Err(GpuError::BadInput(_)) => Ok(()),
                    other => Err(format!("expected BadInput, got {other:?}").into()),
                }
            })
            .gpu_if(
                format!("full_suite::{tag}::u32_above_2_pow_31_elements"),
                |device| enough_memory(device, 9 << 30),
                |device| {
                    // 2^31 + 13 elements: indices past 2^31 must be reached (64-bit indexing).
                    let n = (1usize << 31) + 13;
                    let mut host: Vec<u32> = (0..n).map(|i| (i % 251) as u32).collect();
                    host[n - 3] = u32::MAX;
                    host[(1 << 31) + 1] = 0;
                    host[0] = 7;
                    let rng = TestRng::new();
                    let mut launcher = F::For::<u32>::create(device)?;
                    let buffer = device.upload(&host)?;
                    for op in ReduceOp::ALL {
                        launcher.poison_scratch(n)?;
                        let got = launcher.reduce(op, buffer.as_view())?;
                        check_result(&rng, op, &host, got, "2^31 + 13 elements")?;
                    }
                    launcher.poison_scratch(n)?;
                    check_mean(&rng, &host, launcher.mean(buffer.as_view())?)
                },
            )
    }

    fn typed_full_suite<F: FullReductionFamily, T: ReduceElement>(self) -> Self {
        let mut suite = self;
        for n in full_sizes() {
            suite = suite.gpu_if(
                format!("full_suite::{}::{}::n_{n}", crate::testing::short_type_name::<F>(), T::SUFFIX),
                move |device| fits_test_time(device, n + 3),
                move |device| {
                    let mut rng = TestRng::new();
                    let mut launcher = F::For::<T>::create(device)?;
                    let host = T::random(&mut rng, n + 3);
                    // Every alignment within a 16-byte vector, so heads and tails are covered.
                    for offset in 0..4 {
                        check_all_ops(device, &rng, &mut launcher, &host[..offset + n], offset)?;
                    }
                    Ok(())
                },
            );
        }
        suite.gpu(
            format!("full_suite::{}::{}::empty_input_errors", crate::testing::short_type_name::<F>(), T::SUFFIX),
            |device| {
                let mut launcher = F::For::<T>::create(device)?;
                let empty = device.alloc::<T>(0)?;
                let sum = launcher.reduce(ReduceOp::Sum, empty.as_view())?;
                if sum != T::identity(ReduceOp::Sum) {
                    return Err(format!("sum of nothing: got {sum:?}").into());
                }
                for result in
                    [launcher.reduce(ReduceOp::Min, empty.as_view()), launcher.reduce(ReduceOp::Max, empty.as_view())]
                {
                    if !matches!(result, Err(GpuError::BadInput(_))) {
                        return Err(format!("expected BadInput, got {result:?}").into());
                    }
                }
                match launcher.mean(empty.as_view()) {
                    Err(GpuError::BadInput(_)) => Ok(()),
                    other => Err(format!("expected BadInput for the mean of nothing, got {other:?}").into()),
                }
            },
        )
    }
}

/// Runs the f32 sum of launcher `L` once on [`crate::reduction::fixed_integer_input`] on a fresh
/// CPU simulator and returns what its (last) launch did, as text.
pub fn counters_snapshot<L: FullReduction<f32>>(kernel: &str) -> std::result::Result<String, crate::testing::Failed> {
    let device = Device::simulator()?;
    let input = device.upload(&crate::reduction::fixed_integer_input())?;
    L::create(&device)?.queue(ReduceOp::Sum, input.as_view())?;
    let counters = device.last_launch_counters().ok_or("the simulator recorded no launch")?;
    Ok(format!("{kernel} on {} elements, 256 threads per block:\n{counters}", input.len()))
}

/// `None` when the device has at least `bytes` of memory, else the reason to skip.
pub fn enough_memory(device: &Device, bytes: u64) -> Option<String> {
    let have = device.facts().memory_bytes;
    (have < bytes)
        .then(|| format!("needs {} GiB of device memory, {} has {}", bytes >> 30, device.facts().name, have >> 30))
}
