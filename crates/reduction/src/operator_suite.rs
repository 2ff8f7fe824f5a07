//! The shared tests of the full reductions with operators ([`crate::operators`]; feature
//! `suite`): every built-in operator of every type it has kernels for, on fresh random inputs at
//! edge sizes (1 to 2^20 + 3 on a GPU; warps, blocks, the multi-level form's single-block limit
//! and grids) and at odd offsets, against the CPU (exactly, or within a bound for float sums and
//! products); the semantics the book's semantics page lists (float products that overflow,
//! underflow or meet NaN, integer products that wrap, ties and NaN in argmin and argmax, NaN and
//! -0.0 in all and any, identities of empty inputs, errors where there is none); an argmin's index
//! past 2^32 (GPU); and property tests over drawn operators, sizes and offsets. Scratch buffers are
//! poisoned before every launch. One line in a crate's tests runs them:
//!
//! ```text
//! TestSuite::new().operator_suite::<MultiLevelOperators>("operators")
//! ```

use gpu_harness::{Device, GpuError};
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::{self};
use gpu_test::{Failed, TestResult, TestRng, TestSuite, enough_memory, fits_test_time};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::operators::{
    Kind, Operator, OperatorElement, OperatorFamily, OperatorReduction, Reduced, reference,
};
use crate::reference::sum_bound;

/// The multi-level form's single-block limit (a block of 256 threads, 16 vectors of 4 each): its
/// plans change there.
const SINGLE_BLOCK_LIMIT: usize = 16 * 4 * 256;

/// Sizes every operator is tested at: around a warp, a block, a block of float4, the single-block
/// limit, and grids of several blocks; on a GPU also 2^20 + 3.
pub fn sizes(device: &Device) -> Vec<usize> {
    let mut sizes = vec![
        1,
        2,
        3,
        31,
        32,
        33,
        255,
        256,
        257,
        1023,
        1024,
        1025,
        4097,
        SINGLE_BLOCK_LIMIT + 1,
        65_537,
    ];
    if !device.is_simulated() {
        sizes.extend([(1 << 20) + 3, (1 << 24) - 1]);
    }
    sizes
}

/// Values that suit `op`: for products, factors near ±1 (floats) or odd integers (which never make
/// 0 modulo 2^32); for min, max, argmin and argmax, few distinct values (ties); for all and any,
/// mostly non-zero or mostly zero; else the type's random values.
pub trait Draw: OperatorElement {
    fn draw(op: Operator, rng: &mut SmallRng, n: usize) -> Vec<Self>;
}

fn ties<T>(rng: &mut SmallRng, n: usize, of: impl Fn(i32) -> T) -> Vec<T> {
    (0..n).map(|_| of(rng.random_range(-40..40))).collect()
}

fn logical<T>(op: Operator, rng: &mut SmallRng, n: usize, zero: T, one: T) -> Vec<T>
where
    T: Copy,
{
    // All: one zero in about n / 2 elements (so both answers occur); Any: the other way round.
    let odds = (2 * n).max(2) as u32;
    (0..n)
        .map(|_| {
            let rare = rng.random_range(0..odds) == 0;
            if (op == Operator::All) == rare { zero } else { one }
        })
        .collect()
}

macro_rules! draw_float {
    ($t:ty) => {
        impl Draw for $t {
            fn draw(op: Operator, rng: &mut SmallRng, n: usize) -> Vec<Self> {
                match op {
                    Operator::Product => (0..n)
                        .map(|_| {
                            let sign = if rng.random::<bool>() { -1.0 } else { 1.0 };
                            sign * (rng.random_range(-0.002..0.002) as $t).exp()
                        })
                        .collect(),
                    Operator::Min | Operator::Max | Operator::ArgMin | Operator::ArgMax => {
                        ties(rng, n, |v| v as $t * 0.25)
                    }
                    Operator::All | Operator::Any => {
                        let one = rng.random_range(0.5..2.0);
                        logical(op, rng, n, 0.0, one)
                    }
                    _ => (0..n).map(|_| rng.random_range(-1.0..1.0)).collect(),
                }
            }
        }
    };
}
draw_float!(f32);
draw_float!(f64);

macro_rules! draw_int {
    ($t:ty) => {
        impl Draw for $t {
            fn draw(op: Operator, rng: &mut SmallRng, n: usize) -> Vec<Self> {
                match op {
                    Operator::Product => (0..n).map(|_| rng.random::<$t>() | 1).collect(),
                    Operator::Min | Operator::Max | Operator::ArgMin | Operator::ArgMax => {
                        ties(rng, n, |v| (v as $t).wrapping_mul(100))
                    }
                    Operator::All | Operator::Any => logical(op, rng, n, 0, 7),
                    // Bitwise and of random words is 0 after a few dozen; of mostly-ones words it
                    // keeps bits longer.
                    Operator::BitAnd => {
                        (0..n).map(|_| !(1 << rng.random_range(0..8u32)) as $t).collect()
                    }
                    _ => (0..n).map(|_| rng.random::<$t>()).collect(),
                }
            }
        }
    };
}
draw_int!(i32);
draw_int!(u32);
draw_int!(u64);
draw_int!(u8);

/// Why `got` is not `op` of `values`, or `None`. Float sums are compared with the f64 sum within
/// the plan's bound, float products with the f64 product within n roundings of it (each of the
/// n - 1 multiplications rounds the whole product by at most u, whatever the grouping); the rest
/// exactly.
pub fn mismatch<T: OperatorElement>(
    op: Operator,
    values: &[T],
    got: Reduced<T>,
    chain: u64,
) -> Option<String> {
    let want = reference(op, values)?;
    let close = match (op, got, want) {
        (Operator::Sum | Operator::Product, Reduced::Value(g), Reduced::Value(_)) if T::ROUNDS => {
            let u = if std::mem::size_of::<T>() == 4 {
                f64::powi(2.0, -24)
            } else {
                f64::powi(2.0, -53)
            };
            let (exact, bound) = if op == Operator::Sum {
                let sum_abs: f64 = values.iter().map(|v| v.to_f64().abs()).sum();
                let bound = sum_bound(chain, sum_abs) * u / f64::powi(2.0, -24);
                (values.iter().map(|v| v.to_f64()).sum::<f64>(), bound)
            } else {
                let product: f64 = values.iter().map(|v| v.to_f64()).product();
                (product, product.abs() * u * values.len() as f64)
            };
            (g.to_f64() - exact).abs() <= bound
        }
        _ => {
            got == want
                || matches!((got, want), (Reduced::Value(g), Reduced::Value(w))
                    if g.is_nan() && w.is_nan())
        }
    };
    (!close).then(|| {
        format!("{} of {} values: got {got:?}, the CPU gives {want:?}", op.name(), values.len())
    })
}

/// Runs `op` over `values` uploaded at `offset` elements into a buffer, scratch poisoned first.
fn run<T: OperatorElement, R: OperatorReduction<T>>(
    device: &Device,
    reduce: &mut R,
    op: Operator,
    values: &[T],
    offset: usize,
) -> Result<Reduced<T>, GpuError> {
    let mut padded = vec![T::default(); offset];
    padded.extend_from_slice(values);
    let buffer = device.upload(&padded)?;
    reduce.poison_scratch(values.len())?;
    reduce.reduce(op, buffer.view(offset..)?)
}

/// Every operator of `T` at every size of [`sizes`] and at offsets 1 to 3 (inputs that start
/// inside a 16-byte vector).
fn every_operator<T: Draw, R: OperatorReduction<T>>(device: &Device) -> TestResult {
    let rng = TestRng::new();
    let mut values_rng = SmallRng::seed_from_u64(rng.seed());
    let mut reduce = R::create(device)?;
    for &op in T::OPERATORS {
        for n in sizes(device) {
            let values = T::draw(op, &mut values_rng, n);
            let chain = reduce.plan(n).longest_addition_chain();
            for offset in [0, 1, 3] {
                if offset > 0 && n > 70_000 {
                    continue;
                }
                let got = run(device, &mut reduce, op, &values, offset)?;
                if let Some(why) = mismatch(op, &values, got, chain) {
                    return Err(rng.fail(format!("{} at offset {offset}: {why}", T::SUFFIX)));
                }
            }
        }
    }
    Ok(())
}

/// `op` of `values` must be `want` (NaN equal to NaN; -0.0 told from 0.0 by its bits).
fn expect<T: OperatorElement, R: OperatorReduction<T>>(
    device: &Device,
    reduce: &mut R,
    what: &str,
    op: Operator,
    values: &[T],
    want: Reduced<T>,
) -> TestResult {
    let got = run(device, reduce, op, values, 0)?;
    let same = |a: T, b: T| a.is_nan() && b.is_nan() || format!("{a:?}") == format!("{b:?}");
    let ok = match (got, want) {
        (Reduced::Value(g), Reduced::Value(w)) => same(g, w),
        (Reduced::Arg { value: g, index: i }, Reduced::Arg { value: w, index: j }) => {
            same(g, w) && i == j
        }
        (g, w) => g == w,
    };
    if !ok {
        return Err(
            format!("{what}: {} of {values:?} gave {got:?}, want {want:?}", op.name()).into()
        );
    }
    Ok(())
}

/// The semantics page's lines for floats, each checked at a size of a few elements and, where the
/// special value could hide in a grid, inside 100,003 ordinary ones.
fn float_semantics<F: OperatorFamily>(device: &Device) -> TestResult {
    let mut reduce = F::For::<f32>::create(device)?;
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let r = &mut reduce;
    expect(device, r, "overflow", Operator::Product, &[1e30, 1e30, 1e30], Reduced::Value(inf))?;
    expect(
        device,
        r,
        "overflow, negative",
        Operator::Product,
        &[1e30, -1e30, 1e30],
        Reduced::Value(-inf),
    )?;
    expect(
        device,
        r,
        "underflow",
        Operator::Product,
        &[1e-30, 1e-30, -1e-30],
        Reduced::Value(-0.0),
    )?;
    expect(device, r, "inf times 0", Operator::Product, &[inf, 2.0, 0.0], Reduced::Value(nan))?;
    expect(
        device,
        r,
        "NaN in a product",
        Operator::Product,
        &[2.0, nan, 0.5],
        Reduced::Value(nan),
    )?;
    expect(device, r, "-0.0 in a product", Operator::Product, &[-0.0, 3.0], Reduced::Value(-0.0))?;
    expect(device, r, "NaN in a min", Operator::Min, &[1.0, nan, -5.0], Reduced::Value(nan))?;
    expect(
        device,
        r,
        "argmin ties",
        Operator::ArgMin,
        &[3.0, 1.0, 2.0, 1.0],
        Reduced::Arg { value: 1.0, index: 1 },
    )?;
    expect(
        device,
        r,
        "argmax ties",
        Operator::ArgMax,
        &[3.0, 1.0, 3.0],
        Reduced::Arg { value: 3.0, index: 0 },
    )?;
    expect(
        device,
        r,
        "argmax of -inf",
        Operator::ArgMax,
        &[-inf, -inf],
        Reduced::Arg { value: -inf, index: 0 },
    )?;
    expect(
        device,
        r,
        "argmin of +inf",
        Operator::ArgMin,
        &[inf, inf],
        Reduced::Arg { value: inf, index: 0 },
    )?;
    expect(
        device,
        r,
        "argmax NaN",
        Operator::ArgMax,
        &[1.0, nan, 9.0, nan],
        Reduced::Arg { value: nan, index: 1 },
    )?;
    expect(
        device,
        r,
        "argmin NaN",
        Operator::ArgMin,
        &[1.0, -9.0, nan],
        Reduced::Arg { value: nan, index: 2 },
    )?;
    expect(device, r, "NaN is true", Operator::All, &[1.0, nan], Reduced::Logical(true))?;
    expect(device, r, "-0.0 is false", Operator::Any, &[-0.0, 0.0], Reduced::Logical(false))?;
    expect(device, r, "-0.0 is false", Operator::All, &[1.0, -0.0], Reduced::Logical(false))?;
    // In a grid: the first of many ties, and a NaN late in the input.
    let n = 100_003;
    let mut values = vec![0.5f32; n];
    values[70_001] = -2.0;
    values[90_001] = -2.0;
    expect(
        device,
        r,
        "first of two minima in a grid",
        Operator::ArgMin,
        &values,
        Reduced::Arg { value: -2.0, index: 70_001 },
    )?;
    values[99_999] = nan;
    expect(
        device,
        r,
        "NaN late in a grid",
        Operator::ArgMin,
        &values,
        Reduced::Arg { value: nan, index: 99_999 },
    )?;
    expect(
        device,
        r,
        "equal values: the first index",
        Operator::ArgMax,
        &vec![1.5f32; n],
        Reduced::Arg { value: 1.5, index: 0 },
    )?;
    // Values equal to the identity's in every thread's share (nothing replaces the starting best).
    expect(
        device,
        r,
        "argmin of +inf in a grid",
        Operator::ArgMin,
        &vec![inf; n],
        Reduced::Arg { value: inf, index: 0 },
    )?;
    let mut values = vec![-inf; n];
    values[77_777] = nan;
    expect(
        device,
        r,
        "argmax of -inf and a NaN in a grid",
        Operator::ArgMax,
        &values,
        Reduced::Arg { value: nan, index: 77_777 },
    )?;
    Ok(())
}

/// Integer products wrap; min and max are exact at the type's extremes.
fn integer_semantics<F: OperatorFamily>(device: &Device) -> TestResult {
    let mut i32s = F::For::<i32>::create(device)?;
    expect(
        device,
        &mut i32s,
        "wraps to 0",
        Operator::Product,
        &[65_536, 65_536],
        Reduced::Value(0),
    )?;
    expect(device, &mut i32s, "wraps", Operator::Product, &[i32::MAX, 2], Reduced::Value(-2))?;
    expect(device, &mut i32s, "wraps", Operator::Sum, &[i32::MAX, 1], Reduced::Value(i32::MIN))?;
    expect(
        device,
        &mut i32s,
        "extremes",
        Operator::ArgMin,
        &[0, i32::MIN, i32::MIN],
        Reduced::Arg { value: i32::MIN, index: 1 },
    )?;
    expect(
        device,
        &mut i32s,
        "xor",
        Operator::BitXor,
        &[0b1100, 0b1010, -1],
        Reduced::Value(!0b0110),
    )?;
    expect(
        device,
        &mut i32s,
        "the identity's value in a grid",
        Operator::ArgMin,
        &vec![i32::MAX; 100_003],
        Reduced::Arg { value: i32::MAX, index: 0 },
    )?;
    let mut u32s = F::For::<u32>::create(device)?;
    expect(
        device,
        &mut u32s,
        "the identity's value in a grid",
        Operator::ArgMax,
        &vec![0; 100_003],
        Reduced::Arg { value: 0, index: 0 },
    )?;
    expect(device, &mut u32s, "wraps", Operator::Product, &[1 << 31, 2, 3], Reduced::Value(0))?;
    expect(
        device,
        &mut u32s,
        "extremes",
        Operator::ArgMax,
        &[u32::MAX, 1, u32::MAX],
        Reduced::Arg { value: u32::MAX, index: 0 },
    )?;
    let mut u64s = F::For::<u64>::create(device)?;
    expect(device, &mut u64s, "wraps", Operator::Product, &[1 << 63, 2], Reduced::Value(0))?;
    expect(device, &mut u64s, "64 bits", Operator::Sum, &[u64::MAX, 2], Reduced::Value(1))?;
    let mut bytes = F::For::<u8>::create(device)?;
    expect(device, &mut bytes, "bytes", Operator::All, &[1, 255, 0, 3], Reduced::Logical(false))?;
    expect(device, &mut bytes, "bytes", Operator::Any, &[0, 0, 0, 128, 0], Reduced::Logical(true))?;
    Ok(())
}

/// argmin and argmax past 2^32 elements: a thread's 32-bit count becomes a 64-bit index (GPU only:
/// 17 GiB). Equal values everywhere but two equal minima and one maximum past 2^32; whole and from
/// an odd offset (a head of elements before the first vector).
const ABOVE_2_POW_32: usize = (1 << 32) + (1 << 20) + 5;

fn arg_index_above_2_pow_32<F: OperatorFamily>(device: &Device) -> TestResult {
    let n = ABOVE_2_POW_32;
    let (low, high) = ((1usize << 32) + 9, (1usize << 32) + 3);
    let mut input = device.alloc::<i32>(n)?;
    input.fill_words(7)?;
    input.write_at(high, &[100])?;
    input.write_at(low, &[-1])?;
    input.write_at(low + 2, &[-1])?;
    let mut reduce = F::For::<i32>::create(device)?;
    for start in [0, 3] {
        for (op, value, at) in [(Operator::ArgMin, -1, low), (Operator::ArgMax, 100, high)] {
            reduce.poison_scratch(n - start)?;
            let got = reduce.reduce(op, input.view(start..)?)?;
            let want = Reduced::Arg { value, index: at - start };
            if got != want {
                return Err(
                    format!("{} of {} from {start}: {got:?}, want {want:?}", op.name(), n).into()
                );
            }
        }
    }
    Ok(())
}

/// Empty inputs: the identity where there is one, else an error; and operators a type has no
/// kernels for are errors, not panics. Returns what each gave, for the caller's snapshot.
pub fn empty_inputs_and_unknown_operators<F: OperatorFamily>(
    device: &Device,
) -> Result<String, Failed> {
    let mut f32s = F::For::<f32>::create(device)?;
    let mut i32s = F::For::<i32>::create(device)?;
    let empty_f32 = device.alloc::<f32>(1)?;
    let empty_i32 = device.alloc::<i32>(1)?;
    let mut text = String::new();
    for op in Operator::ALL {
        let f = f32s.reduce(op, empty_f32.view(..0)?);
        let i = i32s.reduce(op, empty_i32.view(..0)?);
        text += &format!("{:>8}: f32 {f:?}\n          i32 {i:?}\n", op.name());
        if op.has_identity() != i.is_ok() {
            return Err(format!("{} of nothing: {i:?}", op.name()).into());
        }
        let unknown = !f32::OPERATORS.contains(&op);
        if unknown != matches!(f, Err(GpuError::BadInput(ref why)) if why.contains("there is no")) {
            return Err(format!("{} of no f32: {f:?}", op.name()).into());
        }
    }
    let bytes = device.upload(&[1u8, 2])?;
    let product = F::For::<u8>::create(device)?.reduce(Operator::Product, bytes.as_view());
    if !matches!(product, Err(GpuError::BadInput(_))) {
        return Err(format!("a product of u8: {product:?}").into());
    }
    text += &format!("product of u8: {product:?}\n");
    Ok(text)
}

/// Drawn operators, sizes and offsets against the CPU, for f32 and i32.
fn drawn<T: Draw, R: OperatorReduction<T>>(device: &Device) -> TestResult {
    let reduce = std::cell::RefCell::new(R::create(device)?);
    let ops = 0..T::OPERATORS.len();
    let sizes = props::sizes(&[32, 256, 1024, SINGLE_BLOCK_LIMIT], props::max_len(device));
    props::check(
        device,
        (200, 24),
        (ops, sizes, 0..4usize, any::<u64>()),
        |(op, n, offset, seed)| {
            let op = T::OPERATORS[op];
            let values = T::draw(op, &mut SmallRng::seed_from_u64(seed), n);
            let mut reduce = reduce.borrow_mut();
            let got = run(device, &mut *reduce, op, &values, offset);
            match (got, op.has_identity() || n > 0) {
                (Err(GpuError::BadInput(_)), false) => Ok(()),
                (Ok(got), true) => {
                    match mismatch(op, &values, got, reduce.plan(n).longest_addition_chain()) {
                        Some(why) => Err(why.into()),
                        None if n == 0 => {
                            let identity =
                                matches!(got, Reduced::Logical(_)) || op.kind() == Kind::Value;
                            if identity {
                                Ok(())
                            } else {
                                Err(format!("{got:?} of nothing").into())
                            }
                        }
                        None => Ok(()),
                    }
                }
                (other, _) => Err(format!("{} of {n}: {:?}", op.name(), other.map(|_| ())).into()),
            }
        },
    )
}

/// The operator suites, added to a [`TestSuite`].
pub trait OperatorSuites: Sized {
    /// Every built-in operator of every type of the launcher family `F` (random inputs at edge
    /// sizes and offsets, the semantics page's special values, an index past 2^32 on a GPU, empty
    /// inputs, drawn properties), its tests named `<tag>::...`.
    fn operator_suite<F: OperatorFamily>(self, tag: &str) -> Self;
}

impl OperatorSuites for TestSuite {
    fn operator_suite<F: OperatorFamily>(self, tag: &str) -> Self {
        let every = |suite: TestSuite, name: &str, test: fn(&Device) -> TestResult| {
            suite.gpu(format!("{tag}::{name}::every_operator"), test)
        };
        let mut suite = self;
        suite = every(suite, "f32", every_operator::<f32, F::For<f32>>);
        suite = every(suite, "f64", every_operator::<f64, F::For<f64>>);
        suite = every(suite, "i32", every_operator::<i32, F::For<i32>>);
        suite = every(suite, "u32", every_operator::<u32, F::For<u32>>);
        suite = every(suite, "u64", every_operator::<u64, F::For<u64>>);
        suite = every(suite, "u8", every_operator::<u8, F::For<u8>>);
        suite
            .gpu(format!("{tag}::semantics::floats"), float_semantics::<F>)
            .gpu(format!("{tag}::semantics::integers"), integer_semantics::<F>)
            .gpu_if(
                format!("{tag}::semantics::arg_index_above_2_pow_32"),
                |d| fits_test_time(d, ABOVE_2_POW_32).or_else(|| enough_memory(d, 18 << 30)),
                arg_index_above_2_pow_32::<F>,
            )
            .gpu(format!("{tag}::semantics::empty_inputs"), |device| {
                empty_inputs_and_unknown_operators::<F>(device).map(|_| ())
            })
            .gpu(format!("{tag}::properties::f32_operators"), drawn::<f32, F::For<f32>>)
            .gpu(format!("{tag}::properties::i32_operators"), drawn::<i32, F::For<i32>>)
    }
}
