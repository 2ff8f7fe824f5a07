//! Property tests on the GPU or the CPU simulator (feature `proptest`): a runner that fits the
//! [`crate::TestSuite`] (one suite entry per property), the inputs the families share (sizes near
//! their edges, offsets into a buffer, values drawn from mixtures that include NaN, infinities,
//! subnormals, -0.0, huge and tiny magnitudes, integer extremes, all-equal and skewed data) and
//! buffers with poisoned guard words on both sides.
//!
//! ```text
//! TestSuite::new().gpu("properties::sum", |device| {
//!     let inputs = props::input(sizes, 7, f32_sum_mixes(), f32_arith_specials(), 3);
//!     props::check(device, (256, 24), inputs, |input| {
//!         let values = input.values();
//!         ... // Ok(()) or Err(message.into())
//!     })
//! })
//! ```
//!
//! An input is a recipe ([`Input`]): its length, its offset into the device buffer, its mixture,
//! the seed its values are drawn from and a few special values at given places. A failure shrinks
//! the recipe (shorter, offset 0, a simpler mixture, fewer special values), which takes a few dozen
//! runs rather than one per element, and prints the smallest failing recipe with the first values
//! it makes, the seed of the run, and how to replay it: `TEST_SEED=<seed>` draws the same cases
//! (and shrinks them the same way), as for the crate's other random tests. Failures are not
//! written to proptest's persistence files: the seed replays them, and CI starts from a clean tree.
//!
//! Case counts: `PROPTEST_CASES` when set, else the property's count for a GPU or for the
//! simulator ([`cases`]); `PROPTEST_MAX_SHRINK_ITERS` bounds the runs a failure's shrinking takes.

use std::fmt;
use std::ops::Range;

pub use proptest;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::BoxedStrategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRunner};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use gpu_harness::{Device, DeviceBuffer, DeviceView, Element, GpuError};

use crate::TestResult;

/// Elements of poison on each side of every guarded buffer.
pub const GUARD: usize = 16;

/// Cases a property runs: `PROPTEST_CASES` when set, else `on_gpu` on a GPU and `on_simulator` on
/// the CPU simulator.
pub fn cases(device: &Device, on_gpu: u32, on_simulator: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if device.is_simulated() { on_simulator } else { on_gpu })
}

/// Runs `test` on inputs drawn from `strategy`: `cases.0` of them on a GPU, `cases.1` on the
/// simulator. A failing input is shrunk (at most 256 runs on the simulator, 2048 on a GPU, or
/// `PROPTEST_MAX_SHRINK_ITERS`) and reported with the seed that replays it.
pub fn check<S>(
    device: &Device,
    cases: (u32, u32),
    strategy: S,
    test: impl Fn(S::Value) -> TestResult,
) -> TestResult
where
    S: Strategy,
    S::Value: fmt::Debug,
{
    let shrinks = if device.is_simulated() { 256 } else { 2048 };
    run(self::cases(device, cases.0, cases.1), shrinks, strategy, test)
}

/// [`check`] for a property that needs no device: `cases` inputs (or `PROPTEST_CASES`).
pub fn check_cpu<S>(cases: u32, strategy: S, test: impl Fn(S::Value) -> TestResult) -> TestResult
where
    S: Strategy,
    S::Value: fmt::Debug,
{
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(cases);
    run(cases, 4096, strategy, test)
}

fn run<S>(
    cases: u32,
    shrinks: u32,
    strategy: S,
    test: impl Fn(S::Value) -> TestResult,
) -> TestResult
where
    S: Strategy,
    S::Value: fmt::Debug,
{
    let shrinks = std::env::var("PROPTEST_MAX_SHRINK_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(shrinks);
    let seed = crate::TestRng::new().seed();
    let config =
        Config { cases, failure_persistence: None, max_shrink_iters: shrinks, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, rng_of(seed));
    let outcome = runner.run(&strategy, |value| {
        test(value)
            .map_err(|failed| TestCaseError::fail(failed.message().unwrap_or("failed").to_string()))
    });
    let replay = format!("(seed {seed}; replay with TEST_SEED={seed})");
    match outcome {
        Ok(()) => Ok(()),
        Err(TestError::Fail(why, minimal)) => {
            Err(format!("{why}\nsmallest failing input: {minimal:#?}\n{replay}").into())
        }
        Err(TestError::Abort(why)) => Err(format!("the property gave up: {why}\n{replay}").into()),
    }
}

/// proptest's generator seeded from a 64-bit seed.
fn rng_of(seed: u64) -> proptest::test_runner::TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes(),
        );
    }
    proptest::test_runner::TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// The longest input a property draws: 40,000 elements on the simulator (a few tiles or grids of
/// its 4 SMs, a few milliseconds a launch), 2^21 on a GPU (a few grids of an H100/H200; the suites
/// test the largest sizes).
pub fn max_len(device: &Device) -> usize {
    crate::test_size(device, 1 << 21, 40_000)
}

/// Sizes near `edges` (each edge, one less and one more) three times in four, else any size up to
/// `max`. Shrinks toward smaller sizes.
pub fn sizes(edges: &[usize], max: usize) -> BoxedStrategy<usize> {
    let mut near: Vec<usize> =
        edges.iter().flat_map(|&e| [e.saturating_sub(1), e, e + 1]).filter(|&n| n <= max).collect();
    near.sort_unstable();
    near.dedup();
    prop_oneof![3 => select(near), 1 => 0..=max].boxed()
}

/// A way of drawing the values of an input, printed with a failing input.
pub trait Mix<T>: Clone + fmt::Debug + 'static {
    /// `n` values.
    fn values(&self, n: usize, rng: &mut SmallRng) -> Vec<T>;
}

/// An input as a recipe: `len` values drawn from `mix` with `seed`, with `specials` put in place
/// (each at its position modulo `len`), uploaded `offset` elements into a buffer.
#[derive(Clone)]
pub struct Input<M, T> {
    pub len: usize,
    pub offset: usize,
    pub mix: M,
    pub seed: u64,
    pub specials: Vec<(usize, T)>,
}

impl<M: Mix<T>, T: Copy> Input<M, T> {
    /// The values the recipe makes.
    pub fn values(&self) -> Vec<T> {
        let mut values = self.mix.values(self.len, &mut SmallRng::seed_from_u64(self.seed));
        if self.len > 0 {
            for &(at, value) in &self.specials {
                values[at % self.len] = value;
            }
        }
        values
    }
}

impl<M: Mix<T>, T: Copy + fmt::Debug> fmt::Debug for Input<M, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values();
        let specials: Vec<(usize, T)> =
            self.specials.iter().map(|&(at, v)| (at % self.len.max(1), v)).collect();
        f.debug_struct("Input")
            .field("len", &self.len)
            .field("offset", &self.offset)
            .field("mix", &self.mix)
            .field("seed", &self.seed)
            .field("specials (position, value)", &specials)
            .field("values", &Preview(&values))
            .finish()
    }
}

/// The first and last values of a long list.
struct Preview<'a, T>(&'a [T]);

impl<T: fmt::Debug> fmt::Debug for Preview<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 24;
        if self.0.len() <= SHOWN {
            return write!(f, "{:?}", self.0);
        }
        let (head, tail) = (&self.0[..SHOWN - 4], &self.0[self.0.len() - 4..]);
        write!(f, "{head:?} ... {tail:?} ({} values)", self.0.len())
    }
}

/// Inputs of a size from `sizes`, an offset up to `max_offset`, values from `mix` and up to
/// `max_specials` values from `special` in random places.
pub fn input<M, T>(
    sizes: impl Strategy<Value = usize> + 'static,
    max_offset: usize,
    mix: impl Strategy<Value = M> + 'static,
    special: impl Strategy<Value = T> + 'static,
    max_specials: usize,
) -> BoxedStrategy<Input<M, T>>
where
    M: Mix<T>,
    T: Copy + fmt::Debug + 'static,
{
    let specials = proptest::collection::vec((any::<usize>(), special), 0..=max_specials);
    (sizes, 0..=max_offset, mix, any::<u64>(), specials)
        .prop_map(|(len, offset, mix, seed, specials)| Input { len, offset, mix, seed, specials })
        .boxed()
}

/// How the values of an f32 input are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum F32Mix {
    /// Every value 0 (what a failure shrinks toward).
    Zeros,
    /// `k · 2^exponent`, `|k| <= 8` (fewer for long inputs): every partial sum is exact in f32, in
    /// any order of additions, so sums must match exactly. `exponent = -149` makes subnormals.
    Exact { exponent: i32 },
    /// Uniform in [-1, 1).
    Uniform,
    /// Random signs, exponents from -149 (subnormals) to `max_exponent` and mantissas; a few zeros
    /// of either sign.
    Wide { max_exponent: i32 },
    /// One value, repeated.
    AllEqual(f32),
    /// Mostly small positive values and a few large ones of either sign.
    Skewed,
    /// Values within 2^-8 of `1.5 · 2^exponent`: a huge mean, a small spread.
    Band { exponent: i32 },
}

impl Mix<f32> for F32Mix {
    fn values(&self, n: usize, rng: &mut SmallRng) -> Vec<f32> {
        let draw = |rng: &mut SmallRng| -> f32 {
            match *self {
                F32Mix::Zeros => 0.0,
                F32Mix::Exact { exponent } => {
                    let bound = ((1usize << 24) / n.max(1)).clamp(1, 8) as i32;
                    (f64::from(rng.random_range(-bound..=bound)) * 2f64.powi(exponent)) as f32
                }
                F32Mix::Uniform => rng.random_range(-1.0f32..1.0),
                F32Mix::Wide { max_exponent } => {
                    let sign = if rng.random_bool(0.5) { -1.0f64 } else { 1.0 };
                    if rng.random_range(0..16) == 0 {
                        return (sign * 0.0) as f32;
                    }
                    let exponent = rng.random_range(-149..=max_exponent);
                    (sign * rng.random_range(1.0f64..2.0) * 2f64.powi(exponent)) as f32
                }
                F32Mix::AllEqual(value) => value,
                F32Mix::Skewed => {
                    if rng.random_range(0..64) == 0 {
                        rng.random_range(-1.0f32..1.0) * 1048576.0
                    } else {
                        rng.random_range(0.0f32..1.0) / 1024.0
                    }
                }
                F32Mix::Band { exponent } => {
                    (1.5 * 2f64.powi(exponent) * (1.0 + rng.random_range(-1.0f64..1.0) / 256.0))
                        as f32
                }
            }
        };
        (0..n).map(|_| draw(rng)).collect()
    }
}

/// Exponents of [`F32Mix::Exact`]: subnormals, tiny, around 1, huge (sums of up to 2^24 values
/// stay below 2^127).
const EXACT_EXPONENTS: [i32; 7] = [0, -149, -140, -100, -20, 30, 100];

/// Values repeated by [`F32Mix::AllEqual`] in inputs that are summed (their sums stay finite).
const SUMMABLE_EQUAL: [f32; 8] = [1.0, -3.75, 0.1, 1e-30, 1e-45, -1e-45, 1.2676506e30, -0.0];

/// Mixtures for sums: every f32 sum of them stays finite (below 2^127 for up to 2^20 values).
pub fn f32_sum_mixes() -> BoxedStrategy<F32Mix> {
    prop_oneof![
        Just(F32Mix::Zeros),
        select(EXACT_EXPONENTS.to_vec()).prop_map(|exponent| F32Mix::Exact { exponent }),
        Just(F32Mix::Uniform),
        Just(F32Mix::Wide { max_exponent: 100 }),
        select(SUMMABLE_EQUAL.to_vec()).prop_map(F32Mix::AllEqual),
        Just(F32Mix::Skewed),
    ]
    .boxed()
}

/// Mixtures for what moves or compares values without adding them (min, max, compaction,
/// histograms, transposes): the sums' and the largest magnitudes.
pub fn f32_value_mixes() -> BoxedStrategy<F32Mix> {
    let extremes = vec![f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 3e38, 1e38];
    prop_oneof![
        4 => f32_sum_mixes(),
        1 => Just(F32Mix::Wide { max_exponent: 127 }),
        1 => select(extremes).prop_map(F32Mix::AllEqual),
    ]
    .boxed()
}

/// Mixtures for means and variances: the sums', huge all-equal data (1000 copies of 1e38 has a
/// mean of 1e38 and a variance of 0) and huge values with a small spread.
pub fn f32_moment_mixes() -> BoxedStrategy<F32Mix> {
    let huge = vec![1e38, -3e38, f32::MAX, 3.4e38, 1e30];
    prop_oneof![
        3 => f32_sum_mixes(),
        1 => select(huge).prop_map(F32Mix::AllEqual),
        1 => select(vec![20, 40, 60, 126]).prop_map(|exponent| F32Mix::Band { exponent }),
    ]
    .boxed()
}

/// Special values whose sums are the same in any order: NaNs (quiet, negative, with a payload,
/// signalling), both infinities and -0.0.
pub fn f32_arith_specials() -> BoxedStrategy<f32> {
    let specials = vec![
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(0xffc0_0001),
        f32::from_bits(0x7fc1_2345),
        f32::from_bits(0x7f80_0001),
    ];
    select(specials).boxed()
}

/// [`f32_arith_specials`] and the extremes of the finite values: the largest of both signs, the
/// smallest normal, the smallest subnormal of both signs.
pub fn f32_specials() -> BoxedStrategy<f32> {
    let extremes = vec![f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 1e-45, -1e-45];
    prop_oneof![3 => f32_arith_specials(), 2 => select(extremes)].boxed()
}

/// How the values of an integer input are drawn (as 32-bit patterns, for i32 or u32).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IntMix {
    /// Every value 0.
    Zeros,
    /// Values in `-bound..=bound` (as i32; u32 wraps the negative ones).
    Small { bound: i32 },
    /// Every bit pattern: sums wrap around.
    Bits,
    /// Only the extremes: 0, 1, -1, the type's least and greatest and their neighbours.
    Extremes,
    /// One bit pattern, repeated.
    AllEqual(u32),
}

/// Integer extremes as bit patterns (i32's and u32's least and greatest values and their
/// neighbours).
const INT_EXTREMES: [u32; 9] =
    [0, 1, u32::MAX, 0x7fff_ffff, 0x8000_0000, 0x7fff_fffe, 0x8000_0001, u32::MAX - 1, 2];

impl IntMix {
    fn bits(&self, n: usize, rng: &mut SmallRng) -> Vec<u32> {
        (0..n)
            .map(|_| match *self {
                IntMix::Zeros => 0,
                IntMix::Small { bound } => rng.random_range(-bound..=bound) as u32,
                IntMix::Bits => rng.random::<u32>(),
                IntMix::Extremes => INT_EXTREMES[rng.random_range(0..INT_EXTREMES.len())],
                IntMix::AllEqual(bits) => bits,
            })
            .collect()
    }
}

impl Mix<u32> for IntMix {
    fn values(&self, n: usize, rng: &mut SmallRng) -> Vec<u32> {
        self.bits(n, rng)
    }
}

impl Mix<i32> for IntMix {
    fn values(&self, n: usize, rng: &mut SmallRng) -> Vec<i32> {
        self.bits(n, rng).into_iter().map(|b| b as i32).collect()
    }
}

/// Integer mixtures.
pub fn int_mixes() -> BoxedStrategy<IntMix> {
    prop_oneof![
        Just(IntMix::Zeros),
        select(vec![1, 8, 1000]).prop_map(|bound| IntMix::Small { bound }),
        Just(IntMix::Bits),
        Just(IntMix::Extremes),
        select(INT_EXTREMES.to_vec()).prop_map(IntMix::AllEqual),
    ]
    .boxed()
}

/// Integer extremes, as special values of `T` (i32 or u32).
pub fn int_specials<T: From<IntBits> + Clone + fmt::Debug + 'static>() -> BoxedStrategy<T> {
    select(INT_EXTREMES.to_vec()).prop_map(|bits| T::from(IntBits(bits))).boxed()
}

/// A 32-bit pattern, converted to i32 or u32 by [`int_specials`].
#[derive(Debug, Clone, Copy)]
pub struct IntBits(pub u32);

impl From<IntBits> for u32 {
    fn from(bits: IntBits) -> u32 {
        bits.0
    }
}

impl From<IntBits> for i32 {
    fn from(bits: IntBits) -> i32 {
        bits.0 as i32
    }
}

/// How bytes (or mask bytes and head flags) are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ByteMix {
    /// Every byte 0 (for a mask: nothing kept).
    Zeros,
    /// Random bytes.
    Uniform,
    /// One byte, repeated.
    AllEqual(u8),
    /// Two bytes, alternating.
    Alternating(u8, u8),
    /// `sea` everywhere but one byte in `1 / island_odds`, which is `island`.
    Sea { sea: u8, island: u8, island_odds: u32 },
    /// Nonzero (any value 1 to 255) with probability `percent / 100`, else 0: masks and heads.
    Density { percent: u32 },
    /// Nonzero only at the first element.
    OnlyFirst,
    /// Nonzero only at the last element.
    OnlyLast,
}

impl Mix<u8> for ByteMix {
    fn values(&self, n: usize, rng: &mut SmallRng) -> Vec<u8> {
        (0..n)
            .map(|i| match *self {
                ByteMix::Zeros => 0,
                ByteMix::Uniform => rng.random::<u8>(),
                ByteMix::AllEqual(b) => b,
                ByteMix::Alternating(a, b) => {
                    if i % 2 == 0 {
                        a
                    } else {
                        b
                    }
                }
                ByteMix::Sea { sea, island, island_odds } => {
                    if rng.random_range(0..island_odds.max(1)) == 0 { island } else { sea }
                }
                ByteMix::Density { percent } => {
                    if rng.random_range(0..100) < percent {
                        rng.random_range(1..=255)
                    } else {
                        0
                    }
                }
                ByteMix::OnlyFirst => u8::from(i == 0) * 7,
                ByteMix::OnlyLast => u8::from(i + 1 == n) * 255,
            })
            .collect()
    }
}

/// Byte mixtures for histograms: random, all equal, two alternating, a sea with islands.
pub fn byte_mixes() -> BoxedStrategy<ByteMix> {
    prop_oneof![
        Just(ByteMix::Zeros),
        Just(ByteMix::Uniform),
        any::<u8>().prop_map(ByteMix::AllEqual),
        (any::<u8>(), any::<u8>()).prop_map(|(a, b)| ByteMix::Alternating(a, b)),
        (any::<u8>(), any::<u8>(), select(vec![2u32, 1000]))
            .prop_map(|(sea, island, island_odds)| ByteMix::Sea { sea, island, island_odds }),
    ]
    .boxed()
}

/// Mixtures of mask bytes or head flags: none, all, the first or last only, densities from 1% to
/// 99% (nonzero bytes of any value).
pub fn flag_mixes() -> BoxedStrategy<ByteMix> {
    prop_oneof![
        Just(ByteMix::Zeros),
        Just(ByteMix::AllEqual(1)),
        Just(ByteMix::OnlyFirst),
        Just(ByteMix::OnlyLast),
        Just(ByteMix::Alternating(1, 0)),
        select(vec![1u32, 50, 99]).prop_map(|percent| ByteMix::Density { percent }),
    ]
    .boxed()
}

/// The 4-byte element types (f32, i32, u32) with their mixtures and special values, for properties
/// written once for every type.
pub trait Drawn: Word {
    type Mix: Mix<Self>;
    /// Mixtures whose sums are defined: finite for f32, any bits for integers.
    fn sum_mixes() -> BoxedStrategy<Self::Mix>;
    /// Mixtures for what moves or compares values: every magnitude.
    fn value_mixes() -> BoxedStrategy<Self::Mix>;
    /// Special values whose sums are the same in any order (NaN, infinities, -0.0; integer
    /// extremes).
    fn arith_specials() -> BoxedStrategy<Self>;
    /// Every special value: those and the largest and smallest finite magnitudes.
    fn specials() -> BoxedStrategy<Self>;
}

impl Drawn for f32 {
    type Mix = F32Mix;
    fn sum_mixes() -> BoxedStrategy<F32Mix> {
        f32_sum_mixes()
    }
    fn value_mixes() -> BoxedStrategy<F32Mix> {
        f32_value_mixes()
    }
    fn arith_specials() -> BoxedStrategy<f32> {
        f32_arith_specials()
    }
    fn specials() -> BoxedStrategy<f32> {
        f32_specials()
    }
}

macro_rules! drawn_integers {
    ($($t:ty),*) => {$(
        impl Drawn for $t {
            type Mix = IntMix;
            fn sum_mixes() -> BoxedStrategy<IntMix> {
                int_mixes()
            }
            fn value_mixes() -> BoxedStrategy<IntMix> {
                int_mixes()
            }
            fn arith_specials() -> BoxedStrategy<$t> {
                int_specials::<$t>()
            }
            fn specials() -> BoxedStrategy<$t> {
                int_specials::<$t>()
            }
        }
    )*};
}
drawn_integers!(i32, u32);

/// Element types of guarded buffers: a poison value and a comparison of bits.
pub trait Word: Element + fmt::Debug {
    /// What guard elements hold (a NaN for floats, an unlikely pattern for integers).
    fn poison() -> Self;
    /// The same bits.
    fn same_bits(self, other: Self) -> bool;
}

macro_rules! words {
    ($($t:ty => $poison:expr),*) => {$(
        impl Word for $t {
            fn poison() -> Self {
                $poison
            }
            fn same_bits(self, other: Self) -> bool {
                self == other
            }
        }
    )*};
}
words!(
    u32 => 0xffc0_0001,
    i32 => 0xffc0_0001u32 as i32,
    u16 => 0xffc1,
    u8 => 0xa5,
    u64 => 0xffc0_0001_ffc0_0001
);

impl Word for f32 {
    fn poison() -> Self {
        f32::from_bits(0xffc0_0001)
    }
    fn same_bits(self, other: Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

/// A device buffer whose range of interest sits between poisoned guard elements: an input (its
/// values, with `GUARD + offset` poison before them and [`GUARD`] after) or an output (poison
/// everywhere). Checks that nothing outside the range, or nothing at all, changed.
pub struct Guarded<T: Word> {
    buffer: DeviceBuffer<T>,
    uploaded: Vec<T>,
    range: Range<usize>,
}

impl<T: Word> Guarded<T> {
    /// `values`, `offset` elements after the leading guard.
    pub fn input(device: &Device, values: &[T], offset: usize) -> gpu_harness::Result<Self> {
        let start = GUARD + offset;
        let mut host = vec![T::poison(); start + values.len() + GUARD];
        host[start..start + values.len()].copy_from_slice(values);
        Ok(Guarded {
            buffer: device.upload(&host)?,
            uploaded: host,
            range: start..start + values.len(),
        })
    }

    /// `len` poisoned elements between [`GUARD`] poisoned ones on each side.
    pub fn output(device: &Device, len: usize) -> gpu_harness::Result<Self> {
        Self::output_with(device, GUARD, len, GUARD)
    }

    /// `len` poisoned elements with `before` and `after` poisoned ones around them.
    pub fn output_with(
        device: &Device,
        before: usize,
        len: usize,
        after: usize,
    ) -> gpu_harness::Result<Self> {
        let host = vec![T::poison(); before + len + after];
        Ok(Guarded { buffer: device.upload(&host)?, uploaded: host, range: before..before + len })
    }

    /// The range of interest.
    pub fn view(&self) -> gpu_harness::Result<DeviceView<'_, T>> {
        self.buffer.view(self.range.clone())
    }

    /// The whole buffer, guards included (for launchers that take a buffer and a position).
    pub fn buffer(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.buffer
    }

    /// Where the range of interest starts in the buffer.
    pub fn start(&self) -> usize {
        self.range.start
    }

    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// The range of interest, read back.
    pub fn read(&self) -> gpu_harness::Result<Vec<T>> {
        Ok(self.buffer.to_host()?[self.range.clone()].to_vec())
    }

    /// Fails if any element of the buffer differs from what was uploaded (an input must be left
    /// as it was, guards included).
    pub fn check_unchanged(&self, what: &str) -> TestResult {
        let now = self.buffer.to_host()?;
        match now.iter().zip(&self.uploaded).position(|(a, b)| !a.same_bits(*b)) {
            None => Ok(()),
            Some(i) => Err(format!(
                "{what}: element {i} of the buffer (range {:?}) changed from {:?} to {:?}",
                self.range, self.uploaded[i], now[i]
            )
            .into()),
        }
    }

    /// Fails if an element outside the range of interest changed (an output's guards).
    pub fn check_guards(&self, what: &str) -> TestResult {
        let now = self.buffer.to_host()?;
        let outside = |i: &usize| !self.range.contains(i);
        match (0..now.len()).filter(outside).find(|&i| !now[i].same_bits(self.uploaded[i])) {
            None => Ok(()),
            Some(i) => Err(format!(
                "{what}: guard element {i} (the output is elements {:?}) was overwritten with {:?}",
                self.range, now[i]
            )
            .into()),
        }
    }
}

/// Ok when `result` is a [`GpuError::BadInput`], else a failure naming `what`.
pub fn expect_bad_input<T: fmt::Debug>(what: &str, result: gpu_harness::Result<T>) -> TestResult {
    match result {
        Err(GpuError::BadInput(_)) => Ok(()),
        other => Err(format!("{what}: expected a BadInput error, got {other:?}").into()),
    }
}

/// The same value: equal (0.0 and -0.0 alike), or both NaN.
pub fn same_value(a: f32, b: f32) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// Whether every partial sum of the finite values of `values`, added in any order, is exact in
/// f32: they are all integer multiples of the smallest of their lowest set bits, and their
/// magnitudes in those units add up to less than 2^24.
pub fn exact_in_any_order(values: &[f32]) -> bool {
    // Each nonzero finite value as m · 2^e with m odd.
    let parts: Vec<(u64, i32)> = values
        .iter()
        .filter(|x| x.is_finite() && **x != 0.0)
        .map(|x| {
            let bits = x.to_bits();
            let (exponent, fraction) = ((bits >> 23) & 0xff, bits & 0x7f_ffff);
            let (m, e) = if exponent == 0 {
                (fraction, -149)
            } else {
                (fraction | 0x80_0000, exponent as i32 - 150)
            };
            let zeros = m.trailing_zeros();
            (u64::from(m >> zeros), e + zeros as i32)
        })
        .collect();
    let Some(unit) = parts.iter().map(|&(_, e)| e).min() else { return true };
    let mut total = 0u64;
    for (m, e) in parts {
        let shift = (e - unit) as u32;
        if shift >= 24 {
            return false;
        }
        total += m << shift;
        if total >= 1 << 24 {
            return false;
        }
    }
    // No partial sum is larger than the total, which must not overflow.
    total as f64 * 2f64.powi(unit) <= f64::from(f32::MAX)
}

/// The f32 sum of `values` where every order of additions gives the same one: NaN for a NaN or
/// both infinities, an infinity, or the exact sum when [`exact_in_any_order`]; `None` where the
/// order matters (rounding), for a comparison within a tolerance.
pub fn order_free_sum(values: &[f32]) -> Option<f32> {
    let nan = values.iter().any(|x| x.is_nan());
    let (up, down) = (values.contains(&f32::INFINITY), values.contains(&f32::NEG_INFINITY));
    if nan || (up && down) {
        return Some(f32::NAN);
    }
    if up || down {
        return Some(if up { f32::INFINITY } else { f32::NEG_INFINITY });
    }
    exact_in_any_order(values).then(|| values.iter().map(|&x| f64::from(x)).sum::<f64>() as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sums_are_recognised() {
        assert!(exact_in_any_order(&[1.0, 2.0, -3.0, 0.5]));
        assert!(exact_in_any_order(&[1e-45; 1000]));
        assert!(!exact_in_any_order(&[1.0, 1e-30]));
        assert!(!exact_in_any_order(&[16777216.0, 1.0]));
        assert!(!exact_in_any_order(&[2f32.powi(127), 2f32.powi(127)]));
        assert_eq!(order_free_sum(&[1.0, f32::NAN]).map(f32::is_nan), Some(true));
        assert_eq!(order_free_sum(&[f32::INFINITY, 1.0]), Some(f32::INFINITY));
        assert!(order_free_sum(&[f32::INFINITY, f32::NEG_INFINITY]).is_some_and(f32::is_nan));
        assert_eq!(order_free_sum(&[0.1, 0.2]), None);
        assert_eq!(order_free_sum(&vec![2f32.powi(-149); 1 << 20]), Some(2f32.powi(-129)));
    }

    #[test]
    fn recipes_make_the_same_values_from_the_same_seed() {
        let input = Input {
            len: 100,
            offset: 3,
            mix: F32Mix::Wide { max_exponent: 100 },
            seed: 7,
            specials: vec![(205, f32::NAN)],
        };
        let (a, b) = (input.values(), input.values());
        assert_eq!(a.len(), 100);
        assert!(a[5].is_nan());
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    }

    #[test]
    fn exact_mixes_are_exact() {
        let mut rng = SmallRng::seed_from_u64(1);
        for exponent in EXACT_EXPONENTS {
            let values = F32Mix::Exact { exponent }.values(5000, &mut rng);
            assert!(exact_in_any_order(&values), "exponent {exponent}");
        }
    }
}
