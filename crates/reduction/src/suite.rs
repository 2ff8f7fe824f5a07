//! The family's shared test suites (feature `suite`): every sum launcher runs the sum suite, every
//! full reduction the full suite, each with one line in its crate's tests:
//!
//! ```text
//! use reduction::suite::ReductionSuites;
//! TestSuite::new().sum_reduction_suite::<ReduceNaive>().full_reduction_suite::<MultiLevelFamily>()
//! ```
//!
//! and [`step_snapshot_tests!`](crate::step_snapshot_tests) adds the snapshots of a host-finished
//! step (launch plans, block partials, simulator counters).

use gpu_harness::{Device, DeviceView, GpuError, GpuShape, Result};
pub use gpu_test::counters_comparable;
use gpu_test::{
    Failed, TestResult, TestRng, TestSuite, enough_memory, fits_test_time, rows, short_type_name,
    test_size,
};

use crate::full::{FullReduction, ReduceElement, ReduceOp, reference};
use crate::host_finished::{HostFinishedStep, HostFinishedSum};
use crate::reference::{dot_tolerance, exact_integer_bound, fixed_integer_input, sum_mismatch};

/// What a sum is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// The f64 sum exactly (integer-valued inputs whose partial sums stay exact in f32).
    Exact,
    /// The f64 sum within the bound of a step whose longest addition chain is `chain`
    /// ([`crate::reference::sum_bound`]).
    Within { chain: u64 },
}

/// Checks `got` against the f64 sum of `input` as `expected` says; a failure carries the seed.
pub fn check_sum(
    rng: &TestRng,
    what: &str,
    input: &[f32],
    got: f32,
    expected: Expected,
) -> TestResult {
    let reference = crate::reference::sum_f64(input);
    let chain = match expected {
        Expected::Exact if f64::from(got) != reference => {
            return Err(rng.fail(format!(
                "{what}: n = {}: got {got}, expected exactly {reference}",
                input.len()
            )));
        }
        Expected::Exact => return Ok(()),
        Expected::Within { chain } => chain,
    };
    match sum_mismatch(input, got, chain) {
        None => Ok(()),
        Some(why) => Err(rng.fail(format!("{what}: {why}"))),
    }
}

/// The family's suites, added to a [`TestSuite`].
pub trait ReductionSuites: Sized {
    /// The shared correctness suite of the f32 sum launcher `R`.
    fn sum_reduction_suite<R: SumReduction>(self) -> Self;
    /// Sum, min, max and mean over f32, i32 and u32 at edge and large sizes and at every 16-byte
    /// alignment, NaN and infinities, empty inputs, more than 2^31 elements, and the dot product,
    /// for the launcher family `F`.
    fn full_reduction_suite<F: FullReductionFamily>(self) -> Self;
}

/// A launcher that sums f32 on the device.
pub trait SumReduction: Sized + Send + 'static {
    /// Compiles (or fetches from the cache) the kernels and prepares an empty launcher.
    fn create(device: &Device) -> Result<Self>;

    /// Sizes the scratch buffers for inputs of up to `n` elements (allocating only when they must
    /// grow), so that no allocation happens inside a timed call.
    fn reserve(&mut self, n: usize) -> Result<()>;

    /// Fills every scratch buffer with NaN, so a partial result the kernel forgot to write turns
    /// the sum into NaN and fails the test.
    fn poison_scratch(&mut self) -> Result<()>;

    /// Sums `input` on the device; an empty input sums to 0.0.
    fn sum(&mut self, input: DeviceView<'_, f32>) -> Result<f32>;

    /// The most additions one input goes through in a sum of `n` elements: the step's own bound
    /// ([`crate::reference::sum_bound`]).
    fn addition_chain(&self, n: usize) -> u64;

    /// Sizes that sit on this launcher's own boundaries (block size ± 1, items per block ± 1, ...),
    /// tested on top of the shared [`EDGE_SIZES`].
    fn boundary_sizes() -> Vec<usize> {
        Vec::new()
    }
}

/// Sizes every reduction is tested at: empty, one element, around a warp, around a 256-thread
/// block, a page, and large sizes with and without a power of two.
pub const EDGE_SIZES: &[usize] = &[0, 1, 31, 32, 33, 255, 256, 257, 4096, 1 << 20, (1 << 20) + 3];

/// The largest input a kernel with a 32-bit element count takes: 2^32 - 1 elements (16 GiB of f32).
pub const LARGEST_U32_INPUT: usize = u32::MAX as usize;

/// Sums `host` with a fresh upload, poisoning the launcher's scratch first.
fn sum_of<R: SumReduction>(device: &Device, reducer: &mut R, host: &[f32]) -> Result<f32> {
    let input = device.upload(host)?;
    reducer.reserve(host.len())?;
    reducer.poison_scratch()?;
    reducer.sum(input.as_view())
}

fn sum_suite<R: SumReduction>(suite: TestSuite) -> TestSuite {
    {
        let tag = short_type_name::<R>();
        let mut sizes: Vec<usize> = EDGE_SIZES.iter().copied().chain(R::boundary_sizes()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let mut suite = suite;
        for n in sizes {
            suite = suite
                .gpu_if(
                    format!("sum_suite::{tag}::integers_exact::n_{n}"),
                    move |d| fits_test_time(d, n),
                    move |device| {
                        let mut rng = TestRng::new();
                        let input = rng.small_integers_f32(n, exact_integer_bound(n));
                        let got = sum_of(device, &mut R::create(device)?, &input)?;
                        check_sum(&rng, "integer-valued floats", &input, got, Expected::Exact)
                    },
                )
                .gpu_if(
                    format!("sum_suite::{tag}::random_floats::n_{n}"),
                    move |d| fits_test_time(d, n),
                    move |device| {
                        let mut rng = TestRng::new();
                        let input = rng.uniform_f32(n, -1.0, 1.0);
                        let mut reducer = R::create(device)?;
                        let got = sum_of(device, &mut reducer, &input)?;
                        let chain = reducer.addition_chain(n);
                        check_sum(
                            &rng,
                            "uniform floats in [-1, 1)",
                            &input,
                            got,
                            Expected::Within { chain },
                        )
                    },
                );
        }
        suite
            .gpu(format!("sum_suite::{tag}::all_equal_within_its_own_bound"), |device| {
                // Equal values of one sign make every rounding of a long serial run err the same
                // way: 2^26 copies of 0.1 summed by one atomic per block err by 1.8 times a tree's
                // bound. Each step is held to the bound of its own longest addition chain.
                let rng = TestRng::new();
                let mut reducer = R::create(device)?;
                for n in
                    [test_size(device, 1 << 26, 1 << 16), test_size(device, (1 << 24) + 5, 40_003)]
                {
                    let input = vec![0.1f32; n];
                    let got = sum_of(device, &mut reducer, &input)?;
                    let chain = reducer.addition_chain(n);
                    check_sum(&rng, "copies of 0.1", &input, got, Expected::Within { chain })?;
                }
                Ok(())
            })
            .gpu(format!("sum_suite::{tag}::random_sizes"), |device| {
                let mut rng = TestRng::new();
                let mut reducer = R::create(device)?;
                for _ in 0..4 {
                    let n = rng.size_in(1..=test_size(device, 3_000_000, 300_000));
                    let input = rng.small_integers_f32(n, exact_integer_bound(n));
                    let got = sum_of(device, &mut reducer, &input)?;
                    check_sum(
                        &rng,
                        "integer-valued floats at a random size",
                        &input,
                        got,
                        Expected::Exact,
                    )?;
                }
                Ok(())
            })
            .gpu_if(
                format!("sum_suite::{tag}::large_non_power_of_two"),
                |d| fits_test_time(d, (3 << 22) + 11),
                |device| {
                    let mut rng = TestRng::new();
                    let n = (3 << 22) + 11;
                    let input = rng.small_integers_f32(n, exact_integer_bound(n));
                    let got = sum_of(device, &mut R::create(device)?, &input)?;
                    check_sum(&rng, "integer-valued floats", &input, got, Expected::Exact)
                },
            )
            .gpu_if(
                format!("sum_suite::{tag}::markers_up_to_2_pow_32_minus_1"),
                |d| fits_test_time(d, LARGEST_U32_INPUT).or_else(|| enough_memory(d, 17 << 30)),
                |device| {
                    // The largest input a 32-bit count allows: zeros, and 1, 2, 4, 8 at the first
                    // element, on both sides of 2^31 and at the last. A loop index that wraps, or
                    // stops early, loses a marker; one that revisits elements counts one twice.
                    let n = LARGEST_U32_INPUT;
                    let mut input = device.alloc::<f32>(n)?;
                    input.fill_words(0)?;
                    for (at, value) in
                        [(0, 1.0f32), ((1 << 31) - 1, 2.0), (1 << 31, 4.0), (n - 1, 8.0)]
                    {
                        input.write_at(at, &[value])?;
                    }
                    let mut reducer = R::create(device)?;
                    reducer.reserve(n)?;
                    reducer.poison_scratch()?;
                    let got = reducer.sum(input.as_view())?;
                    if got != 15.0 {
                        return Err(format!(
                            "2^32 - 1 elements: got {got}, expected 15 (1 + 2 + 4 + 8)"
                        )
                        .into());
                    }
                    Ok(())
                },
            )
            .gpu(format!("sum_suite::{tag}::view_at_odd_offset"), |device| {
                let mut rng = TestRng::new();
                let host = rng.small_integers_f32(100_003, 8);
                let buffer = device.upload(&host)?;
                let mut reducer = R::create(device)?;
                for (start, end) in [(1, host.len() - 2), (3, 3), (7, 8), (5, 4100)] {
                    reducer.reserve(end - start)?;
                    reducer.poison_scratch()?;
                    let got = reducer.sum(buffer.view(start..end)?)?;
                    check_sum(
                        &rng,
                        &format!("view {start}..{end}"),
                        &host[start..end],
                        got,
                        Expected::Exact,
                    )?;
                }
                Ok(())
            })
            .gpu(format!("sum_suite::{tag}::reuses_scratch_across_sizes"), |device| {
                let mut rng = TestRng::new();
                let mut reducer = R::create(device)?;
                for n in [1 << 20, 5, (1 << 16) + 1, 0, 1 << 21] {
                    let input = rng.small_integers_f32(n, exact_integer_bound(n));
                    let got = sum_of(device, &mut reducer, &input)?;
                    check_sum(&rng, "one launcher, many sizes", &input, got, Expected::Exact)?;
                }
                Ok(())
            })
            .gpu(format!("sum_suite::{tag}::nan_and_infinity_propagate"), |device| {
                let mut reducer = R::create(device)?;
                let mut input = vec![1.0f32; 1000];
                let mut check = |input: &[f32], expect: f32| -> TestResult {
                    let got = sum_of(device, &mut reducer, input)?;
                    let same = (got.is_nan() && expect.is_nan()) || got == expect;
                    if !same {
                        return Err(format!("expected {expect}, got {got}").into());
                    }
                    Ok(())
                };
                input[517] = f32::NAN;
                check(&input, f32::NAN)?;
                input[517] = f32::INFINITY;
                check(&input, f32::INFINITY)?;
                input[3] = f32::NEG_INFINITY;
                check(&input, f32::NAN)
            })
            .gpu(format!("sum_suite::{tag}::overflow_subnormals_and_signed_zeros"), |device| {
                // A sum past f32's range is the infinity of its sign; subnormals are added, not
                // flushed to zero (1000 x 2^-149 is exact); a sum of zeros of either sign is +0.0,
                // as torch's and numpy's are: every sum starts from +0.0, on the device or the
                // host.
                let mut reducer = R::create(device)?;
                let tiny = f32::from_bits(1);
                let cases = [
                    (vec![f32::MAX; 2], f32::INFINITY),
                    (vec![-f32::MAX; 3], f32::NEG_INFINITY),
                    (vec![tiny; 1000], f32::from_bits(1000)),
                    (vec![-0.0; 1], 0.0),
                    (vec![-0.0; 2], 0.0),
                    (vec![-0.0; 4099], 0.0),
                ];
                for (input, want) in cases {
                    let got = sum_of(device, &mut reducer, &input)?;
                    if got.to_bits() != want.to_bits() {
                        return Err(format!(
                            "{} x {:e}: got {got:e}, expected {want:e}",
                            input.len(),
                            input[0]
                        )
                        .into());
                    }
                }
                Ok(())
            })
    }
}

impl<S: HostFinishedStep> SumReduction for HostFinishedSum<S> {
    fn create(device: &Device) -> Result<Self> {
        Self::new(device)
    }

    fn reserve(&mut self, n: usize) -> Result<()> {
        HostFinishedSum::reserve(self, n)
    }

    fn poison_scratch(&mut self) -> Result<()> {
        self.poison_partials()
    }

    fn sum(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        self.sum_device(input)
    }

    fn boundary_sizes() -> Vec<usize> {
        S::boundary_sizes()
    }

    fn addition_chain(&self, n: usize) -> u64 {
        self.plan(n).map_or(0, |plan| plan.longest_addition_chain())
    }
}

/// Sizes whose launch plans are frozen in each step's snapshot.
pub const PLAN_SNAPSHOT_SIZES: &[usize] =
    &[0, 1, 255, 256, 257, 4096, 1 << 20, (1 << 20) + 3, 1 << 28];

/// The launch plans of step `S` at [`PLAN_SNAPSHOT_SIZES`] on an H100/H200-shaped GPU, as text.
pub fn plan_snapshot<S: HostFinishedStep>() -> Result<String> {
    let plans = PLAN_SNAPSHOT_SIZES
        .iter()
        .map(|&n| S::plan(n, GpuShape::HOPPER_132_SMS).map(|p| p.to_string()))
        .collect::<Result<Vec<_>>>()?;
    Ok(plans.join("\n"))
}

/// Runs step `S` on [`fixed_integer_input`] (scratch poisoned first) and returns its block
/// partials as text, after checking that they add up to the exact sum.
pub fn partials_snapshot<S: HostFinishedStep>(
    device: &Device,
) -> std::result::Result<String, Failed> {
    let input = fixed_integer_input();
    let buffer = device.upload(&input)?;
    let mut reducer = HostFinishedSum::<S>::new(device)?;
    reducer.reserve(input.len())?;
    SumReduction::poison_scratch(&mut reducer)?;
    let count = reducer.block_partials(buffer.as_view())?;
    let partials = reducer.partials(count)?.to_host()?;
    let total: f64 = partials.iter().map(|&p| f64::from(p)).sum();
    let expected: f64 = input.iter().map(|&x| f64::from(x)).sum();
    if total != expected {
        return Err(format!(
            "{}: partials add up to {total}, expected {expected}: {partials:?}",
            S::STEP
        )
        .into());
    }
    Ok(rows(&partials, 10))
}

/// Runs step `S` once on [`fixed_integer_input`] on a fresh CPU simulator and returns what the
/// launch did (warp instructions, divergence, barriers, bank conflicts, coalescing), as text.
pub fn step_counters_snapshot<S: HostFinishedStep>() -> std::result::Result<String, Failed> {
    let device = Device::simulator()?;
    let input = device.upload(&fixed_integer_input())?;
    HostFinishedSum::<S>::new(&device)?.block_partials(input.as_view())?;
    let counters = device.last_launch_counters().ok_or("the simulator recorded no launch")?;
    Ok(format!("{} on {} elements, 256 threads per block:\n{counters}", S::KERNEL, input.len()))
}

/// Adds, for each listed [`HostFinishedStep`], three snapshot tests to a [`TestSuite`]: its launch
/// plans (no GPU needed), its block partials of [`fixed_integer_input`] (on the GPU, or the
/// simulator), and the simulator's counters for that launch (NVRTC only). A macro,
/// so that the snapshots live in the calling crate's `tests/snapshots` (the crate needs `insta`
/// as a dev-dependency).
#[macro_export]
macro_rules! step_snapshot_tests {
    ($suite:expr, $($step:ty),+ $(,)?) => {{
        let suite = $suite;
        $(
            let step = <$step as $crate::HostFinishedStep>::STEP;
            let suite = suite
                .cpu(format!("illustration::{step}::launch_plans"), move || {
                    let plans = $crate::suite::plan_snapshot::<$step>()?;
                    insta::assert_snapshot!(format!("{step}_launch_plans"), plans);
                    Ok(())
                })
                .gpu(format!("illustration::{step}::partials_of_fixed_input"), move |device| {
                    let partials = $crate::suite::partials_snapshot::<$step>(device)?;
                    insta::assert_snapshot!(format!("{step}_partials_of_fixed_input"), partials);
                    Ok(())
                })
                .nvrtc_if(
                    format!("illustration::{step}::simulator_counters"),
                    $crate::suite::counters_comparable,
                    move || {
                        let counters = $crate::suite::step_counters_snapshot::<$step>()?;
                        insta::assert_snapshot!(format!("{step}_simulator_counters"), counters);
                        Ok(())
                    },
                );
        )+
        suite
    }};
}
/// Any full reduction's f32 sum as a [`SumReduction`], so the ladder's sum suite
/// runs on it too: `TestSuite::new().sum_reduction_suite::<SumOf<MyLauncher<f32>>>()`.
pub struct SumOf<L> {
    launcher: L,
    reserved: usize,
}

impl<L: FullReduction<f32>> SumReduction for SumOf<L> {
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
    fn addition_chain(&self, n: usize) -> u64 {
        self.launcher.addition_chain(n)
    }
}

/// A family of full-reduction launchers, one per element type (a generic launcher type), with its
/// f32 dot product. A crate's tests define one:
///
/// ```text
/// struct Family;
/// impl FullReductionFamily for Family {
///     type For<T: ReduceElement> = MultiLevel<T>;
///     fn dot(l: &mut MultiLevel<f32>, a: DeviceView<f32>, b: DeviceView<f32>) -> Result<f32> {
///         l.dot(a, b)
///     }
/// }
/// ```
pub trait FullReductionFamily: 'static {
    type For<T: ReduceElement>: FullReduction<T>;

    /// `sum(a[i] * b[i])` with the f32 launcher; `a` and `b` must have the same length.
    fn dot(
        launcher: &mut Self::For<f32>,
        a: DeviceView<'_, f32>,
        b: DeviceView<'_, f32>,
    ) -> Result<f32>;
}

/// Checks one reduction's result against the CPU.
/// `chain` is the launcher's longest addition chain for `input` (the bound of a rounding sum).
fn check_result<T: ReduceElement>(
    rng: &TestRng,
    op: ReduceOp,
    input: &[T],
    got: T,
    what: &str,
    chain: u64,
) -> TestResult {
    if T::ROUNDS && op == ReduceOp::Sum {
        let as_f32: Vec<f32> = input.iter().map(|&x| x.to_f64() as f32).collect();
        return check_sum(rng, what, &as_f32, got.to_f64() as f32, Expected::Within { chain });
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

/// Checks a mean against the f64 mean of the input (integers exactly up to f64 rounding; a
/// rounding sum within the bound of the launcher's longest addition chain `chain`, over n).
fn check_mean<T: ReduceElement>(rng: &TestRng, input: &[T], got: f64, chain: u64) -> TestResult {
    let n = input.len() as f64;
    let expected = input.iter().map(|&x| x.to_f64()).sum::<f64>() / n;
    if got == expected || (got.is_nan() && expected.is_nan()) {
        return Ok(()); // equal, the same infinity, or NaN where NaN is due
    }
    let sum_abs: f64 = input.iter().map(|&x| x.to_f64().abs()).sum();
    let tolerance = if T::ROUNDS {
        crate::reference::sum_bound(chain, sum_abs) / n
    } else {
        1e-12 * (sum_abs / n + 1.0)
    };
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
    let chain = launcher.addition_chain(input.len());
    for op in ReduceOp::ALL {
        launcher.poison_scratch(input.len())?;
        match launcher.reduce(op, view) {
            Ok(got) => check_result(rng, op, input, got, &format!("offset {offset}"), chain)?,
            Err(GpuError::BadInput(_)) if input.is_empty() && op != ReduceOp::Sum => {}
            Err(e) => {
                return Err(rng.fail(format!("{} of {} elements: {e}", op.name(), input.len())));
            }
        }
    }
    if !input.is_empty() {
        launcher.poison_scratch(input.len())?;
        check_mean(rng, input, launcher.mean(view)?, chain)?;
    }
    Ok(())
}

/// Sizes of the full-reduction suite: the shared edge sizes, sizes around one full grid of an
/// H100/H200 (1056 blocks of 256 threads, 4 elements each), and large ones.
fn full_sizes() -> Vec<usize> {
    let grid = GpuShape::HOPPER_132_SMS.threads_in_one_wave(256) * 4;
    let mut sizes: Vec<usize> =
        EDGE_SIZES.iter().copied().chain([2, 3, 5, 4095, 4097, grid - 1, grid, grid + 5]).collect();
    sizes.push((3 << 22) + 11);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

fn full_suite<F: FullReductionFamily>(suite: TestSuite) -> TestSuite {
    {
        let tag = short_type_name::<F>();
        let suite = typed_full_suite::<F, u32>(typed_full_suite::<F, i32>(typed_full_suite::<
            F,
            f32,
        >(suite)));
        suite
            .gpu(format!("full_suite::{tag}::f32_nan_wins_and_infinities"), |device| {
                let rng = TestRng::new();
                let mut launcher = F::For::<f32>::create(device)?;
                let mut host: Vec<f32> = (0..100_000).map(|i| (i % 1000) as f32 - 500.0).collect();
                host[77_777] = f32::INFINITY;
                check_all_ops(device, &rng, &mut launcher, &host, 0)?;
                host[12_345] = f32::NAN;
                check_all_ops(device, &rng, &mut launcher, &host, 0)
            })
            .gpu(format!("full_suite::{tag}::f32_signed_zeros_and_subnormals"), |device| {
                // The sum starts from +0.0, so zeros sum to +0.0 whatever their signs (as CUB's,
                // whose initial value is 0). Min and max return one of the input's values: -0.0
                // when every value is -0.0, one of the two zeros when both signs occur (they
                // compare equal; which one depends on where they sit). Subnormals are compared and
                // added exactly, never flushed to zero.
                let mut launcher = F::For::<f32>::create(device)?;
                let tiny = f32::from_bits(1);
                let mut check =
                    |input: &[f32], op: ReduceOp, want: f32, any_zero: bool| -> TestResult {
                        let buffer = device.upload(input)?;
                        launcher.poison_scratch(input.len())?;
                        let got = launcher.reduce(op, buffer.as_view())?;
                        let same =
                            if any_zero { got == 0.0 } else { got.to_bits() == want.to_bits() };
                        if !same {
                            let n = input.len();
                            return Err(format!(
                                "{} of {n} values from {:e}: got {got:e}, expected {want:e}",
                                op.name(),
                                input[0]
                            )
                            .into());
                        }
                        Ok(())
                    };
                for n in [1, 2, 4099] {
                    check(&vec![-0.0; n], ReduceOp::Sum, 0.0, false)?;
                    check(&vec![-0.0; n], ReduceOp::Min, -0.0, false)?;
                    check(&vec![-0.0; n], ReduceOp::Max, -0.0, false)?;
                }
                for zeros in [[-0.0f32, 0.0], [0.0, -0.0]] {
                    for op in ReduceOp::ALL {
                        check(&zeros, op, 0.0, true)?;
                    }
                }
                let subnormals: Vec<f32> =
                    (0..4099u32).map(|i| f32::from_bits(3 - i % 3)).collect();
                check(&subnormals, ReduceOp::Sum, f32::from_bits(2 * 4099 + 1), false)?;
                check(&subnormals, ReduceOp::Min, tiny, false)?;
                check(&subnormals, ReduceOp::Max, f32::from_bits(3), false)
            })
            .gpu(format!("full_suite::{tag}::f32_only_infinities"), |device| {
                // The identities of min and max are the infinities, not the largest finite floats:
                // the min of nothing but +inf is +inf (CUB's Min starts from FLT_MAX, and
                // NVIDIA/cccl#1388 reports that it returned FLT_MAX here).
                let mut launcher = F::For::<f32>::create(device)?;
                for n in [1, 5, 4099] {
                    let positive = device.upload(&vec![f32::INFINITY; n])?;
                    let negative = device.upload(&vec![f32::NEG_INFINITY; n])?;
                    let min = launcher.reduce(ReduceOp::Min, positive.as_view())?;
                    let max = launcher.reduce(ReduceOp::Max, negative.as_view())?;
                    let sum = launcher.reduce(ReduceOp::Sum, negative.as_view())?;
                    if min != f32::INFINITY || max != f32::NEG_INFINITY || sum != f32::NEG_INFINITY
                    {
                        return Err(format!(
                            "{n} infinities: min of +inf {min}, max of -inf {max}, sum of \
                                     -inf {sum}"
                        )
                        .into());
                    }
                }
                Ok(())
            })
            .gpu(format!("full_suite::{tag}::integer_sums_wrap_and_means_do_not"), |device| {
                // 32-bit sums wrap around modulo 2^32 (as CUDA's integer adds; torch and numpy sum
                // int32 into int64 instead); the mean is accumulated in 64 bits and does not wrap.
                let mut signed = F::For::<i32>::create(device)?;
                let mut unsigned = F::For::<u32>::create(device)?;
                for (input, want) in [
                    (vec![i32::MAX, 1], i32::MIN),
                    (vec![i32::MIN, -1], i32::MAX),
                    (vec![i32::MAX; 4], -4),
                ] {
                    let got = signed.sum(device.upload(&input)?.as_view())?;
                    if got != want {
                        return Err(
                            format!("i32 sum of {input:?}: got {got}, expected {want}").into()
                        );
                    }
                }
                for (input, want) in [(vec![u32::MAX, 2], 1), (vec![u32::MAX; 4], u32::MAX - 3)] {
                    let got = unsigned.sum(device.upload(&input)?.as_view())?;
                    if got != want {
                        return Err(
                            format!("u32 sum of {input:?}: got {got}, expected {want}").into()
                        );
                    }
                }
                let mean_i32 = signed.mean(device.upload(&vec![i32::MAX; 4099])?.as_view())?;
                let mean_u32 = unsigned.mean(device.upload(&vec![u32::MAX; 4099])?.as_view())?;
                if mean_i32 != f64::from(i32::MAX) || mean_u32 != f64::from(u32::MAX) {
                    return Err(
                        format!("means of 4099 x MAX: i32 {mean_i32}, u32 {mean_u32}").into()
                    );
                }
                Ok(())
            })
            .gpu(format!("full_suite::{tag}::f32_dot_product"), |device| {
                let mut rng = TestRng::new();
                let mut launcher = F::For::<f32>::create(device)?;
                let sizes =
                    [0usize, 1, 3, 4, 5, 255, 257, 4099, 1 << 20, (1 << 20) + 3, (3 << 22) + 11];
                for n in sizes.into_iter().filter(|&n| fits_test_time(device, n).is_none()) {
                    let a = rng.uniform_f32(n + 3, -1.0, 1.0);
                    let b = rng.uniform_f32(n + 3, -1.0, 1.0);
                    let (da, db) = (device.upload(&a)?, device.upload(&b)?);
                    // Same alignment (vector loads), then different alignments (scalar path).
                    for (oa, ob) in [(0, 0), (1, 1), (3, 3), (0, 1), (2, 3)] {
                        let (x, y) = (&a[oa..oa + n], &b[ob..ob + n]);
                        let got =
                            F::dot(&mut launcher, da.view(oa..oa + n)?, db.view(ob..ob + n)?)?;
                        let expected: f64 =
                            x.iter().zip(y).map(|(&p, &q)| f64::from(p) * f64::from(q)).sum();
                        let tolerance = dot_tolerance(x, y, launcher.addition_chain(n));
                        let close = (f64::from(got) - expected).abs() <= tolerance; // false for NaN
                        if !close {
                            return Err(rng.fail(format!(
                                "dot of {n} at offsets ({oa}, {ob}): got {got}, expected \
                                 {expected} ± {tolerance:e}"
                            )));
                        }
                    }
                }
                Ok(())
            })
            .gpu(format!("full_suite::{tag}::dot_of_different_lengths_is_an_error"), |device| {
                let mut launcher = F::For::<f32>::create(device)?;
                let (a, b) = (device.upload(&[1.0f32; 10])?, device.upload(&[1.0f32; 9])?);
                match F::dot(&mut launcher, a.as_view(), b.as_view()) {
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
                        check_result(
                            &rng,
                            op,
                            &host,
                            got,
                            "2^31 + 13 elements",
                            launcher.addition_chain(n),
                        )?;
                    }
                    launcher.poison_scratch(n)?;
                    check_mean(
                        &rng,
                        &host,
                        launcher.mean(buffer.as_view())?,
                        launcher.addition_chain(n),
                    )
                },
            )
    }
}

fn typed_full_suite<F: FullReductionFamily, T: ReduceElement>(suite: TestSuite) -> TestSuite {
    {
        let mut suite = suite;
        for n in full_sizes() {
            suite = suite.gpu_if(
                format!("full_suite::{}::{}::n_{n}", short_type_name::<F>(), T::SUFFIX),
                move |device| fits_test_time(device, n + 3),
                move |device| {
                    let mut rng = TestRng::new();
                    let mut launcher = F::For::<T>::create(device)?;
                    let host = T::random(rng.rng(), n + 3);
                    // Every alignment within a 16-byte vector, so heads and tails are covered.
                    for offset in 0..4 {
                        check_all_ops(device, &rng, &mut launcher, &host[..offset + n], offset)?;
                    }
                    Ok(())
                },
            );
        }
        suite.gpu(
            format!("full_suite::{}::{}::empty_input_errors", short_type_name::<F>(), T::SUFFIX),
            |device| {
                let mut launcher = F::For::<T>::create(device)?;
                let empty = device.alloc::<T>(0)?;
                let sum = launcher.reduce(ReduceOp::Sum, empty.as_view())?;
                if sum != T::identity(ReduceOp::Sum) {
                    return Err(format!("sum of nothing: got {sum:?}").into());
                }
                for result in [
                    launcher.reduce(ReduceOp::Min, empty.as_view()),
                    launcher.reduce(ReduceOp::Max, empty.as_view()),
                ] {
                    if !matches!(result, Err(GpuError::BadInput(_))) {
                        return Err(format!("expected BadInput, got {result:?}").into());
                    }
                }
                match launcher.mean(empty.as_view()) {
                    Err(GpuError::BadInput(_)) => Ok(()),
                    other => {
                        Err(format!("expected BadInput for the mean of nothing, got {other:?}")
                            .into())
                    }
                }
            },
        )
    }
}

/// Runs the f32 sum of launcher `L` once on [`fixed_integer_input`] on a fresh CPU simulator and
/// returns what its (last) launch did, as text.
pub fn full_counters_snapshot<L: FullReduction<f32>>(
    kernel: &str,
) -> std::result::Result<String, Failed> {
    let device = Device::simulator()?;
    let input = device.upload(&fixed_integer_input())?;
    L::create(&device)?.queue(ReduceOp::Sum, input.as_view())?;
    let counters = device.last_launch_counters().ok_or("the simulator recorded no launch")?;
    Ok(format!("{kernel} on {} elements, 256 threads per block:\n{counters}", input.len()))
}

impl ReductionSuites for TestSuite {
    fn sum_reduction_suite<R: SumReduction>(self) -> Self {
        sum_suite::<R>(self)
    }

    fn full_reduction_suite<F: FullReductionFamily>(self) -> Self {
        full_suite::<F>(self)
    }
}
