//! reduce-multi-level's operators: every built-in operator of every type it has kernels for, on
//! fresh random inputs at edge sizes (1 to 2^20 + 3 on a GPU; warps, blocks, the single-block limit
//! and grids) and at odd offsets, against the CPU (exactly, or within a bound for float sums and
//! products); the semantics the book's semantics page lists (float products that overflow,
//! underflow or meet NaN, integer products that wrap, ties and NaN in argmin and argmax, NaN and
//! -0.0 in all and any, identities of empty inputs, errors where there is none); user operators
//! compiled at run time (a sum of squares, the (count, mean, M2) moments, and a non-commutative 2x2
//! matrix product checked in order against the CPU), their compile errors with the operator's own
//! line numbers; and property tests over drawn operators, sizes and offsets. Scratch buffers are
//! poisoned before every launch.

use std::fmt::Debug;

use gpu_harness::{Device, GpuError};
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::{self};
use gpu_test::{TestResult, TestRng, TestSuite, enough_memory, fits_test_time, test_size};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use reduce_multi_level::SINGLE_BLOCK_LIMIT;
use reduce_multi_level::operators::{
    Kind, Operator, OperatorElement, Reduce, Reduced, UserOperator, UserReduce, reference,
    user_file,
};
use reduction::reference::sum_bound;

/// Sizes every operator is tested at: around a warp, a block, a block of float4, the single-block
/// limit, and grids of several blocks; on a GPU also 2^20 + 3.
fn sizes(device: &Device) -> Vec<usize> {
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
trait Draw: OperatorElement {
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
fn mismatch<T: OperatorElement>(
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
fn run<T: OperatorElement>(
    device: &Device,
    reduce: &mut Reduce<T>,
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
fn every_operator<T: Draw>(device: &Device) -> TestResult {
    let rng = TestRng::new();
    let mut values_rng = SmallRng::seed_from_u64(rng.seed());
    let mut reduce = Reduce::<T>::new(device)?;
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
fn expect<T: OperatorElement>(
    device: &Device,
    reduce: &mut Reduce<T>,
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
fn float_semantics(device: &Device) -> TestResult {
    let mut reduce = Reduce::<f32>::new(device)?;
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
fn integer_semantics(device: &Device) -> TestResult {
    let mut i32s = Reduce::<i32>::new(device)?;
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
    let mut u32s = Reduce::<u32>::new(device)?;
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
    let mut u64s = Reduce::<u64>::new(device)?;
    expect(device, &mut u64s, "wraps", Operator::Product, &[1 << 63, 2], Reduced::Value(0))?;
    expect(device, &mut u64s, "64 bits", Operator::Sum, &[u64::MAX, 2], Reduced::Value(1))?;
    let mut bytes = Reduce::<u8>::new(device)?;
    expect(device, &mut bytes, "bytes", Operator::All, &[1, 255, 0, 3], Reduced::Logical(false))?;
    expect(device, &mut bytes, "bytes", Operator::Any, &[0, 0, 0, 128, 0], Reduced::Logical(true))?;
    Ok(())
}

/// argmin and argmax past 2^32 elements: a thread's 32-bit count becomes a 64-bit index (GPU only:
/// 17 GiB). Equal values everywhere but two equal minima and one maximum past 2^32; whole and from
/// an odd offset (a head of elements before the first vector).
const ABOVE_2_POW_32: usize = (1 << 32) + (1 << 20) + 5;

fn arg_index_above_2_pow_32(device: &Device) -> TestResult {
    let n = ABOVE_2_POW_32;
    let (low, high) = ((1usize << 32) + 9, (1usize << 32) + 3);
    let mut input = device.alloc::<i32>(n)?;
    input.fill_words(7)?;
    input.write_at(high, &[100])?;
    input.write_at(low, &[-1])?;
    input.write_at(low + 2, &[-1])?;
    let mut reduce = Reduce::<i32>::new(device)?;
    for start in [0, 3] {
        for (op, value, at) in [(Operator::ArgMin, -1, low), (Operator::ArgMax, 100, high)] {
            reduce.poison_scratch(n - start)?;
            let got = reduce.reduce(op, input.view(start..)?)?;
            let want = Reduced::Arg { value, index: at - start };
            if got != want {
                return Err(format!("{} of {} from {start}: {got:?}, want {want:?}", op.name(), n)
                    .into());
            }
        }
    }
    Ok(())
}

/// Empty inputs: the identity where there is one, else an error; and operators a type has no
/// kernels for are errors, not panics.
fn empty_inputs_and_unknown_operators(device: &Device) -> TestResult {
    let mut f32s = Reduce::<f32>::new(device)?;
    let mut i32s = Reduce::<i32>::new(device)?;
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
    }
    let bytes = device.upload(&[1u8, 2])?;
    let product = Reduce::<u8>::new(device)?.reduce(Operator::Product, bytes.as_view());
    text += &format!("product of u8: {product:?}\n");
    insta::assert_snapshot!("operators_of_nothing", text);
    Ok(())
}

/// A sum of squares: the user's operator, with a lift.
const SUM_OF_SQUARES: &str = r#"
struct SumOfSquares {
    typedef float Input;
    typedef float Value;
    __device__ float lift(float x) const { return x * x; }
    __device__ float identity() const { return 0.0f; }
    __device__ float operator()(float a, float b) const { return a + b; }
};
"#;

// ANCHOR: moments
/// The (count, mean, M2) moments: mean and variance in one pass, Chan's combination.
const MOMENTS: &str = r#"
struct Moments3 {
    float count, mean, m2;
};

struct MeanVariance {
    typedef float Input;
    typedef Moments3 Value;
    __device__ Moments3 lift(float x) const { return Moments3{1.0f, x, 0.0f}; }
    __device__ Moments3 identity() const { return Moments3{0.0f, 0.0f, 0.0f}; }
    __device__ Moments3 operator()(Moments3 a, Moments3 b) const
    {
        if (a.count == 0.0f) return b;
        if (b.count == 0.0f) return a;
        const float count = a.count + b.count;
        const float d = b.mean - a.mean;
        return Moments3{count, a.mean + d * (b.count / count),
                        a.m2 + b.m2 + d * d * (a.count * b.count / count)};
    }
};
"#;
// ANCHOR_END: moments

// ANCHOR: matrices
/// 2x2 matrices of u32 multiplied modulo 2^32: associative, exact, and not commutative.
const MATRICES: &str = r#"
struct Matrix {
    unsigned int a, b, c, d;  // [[a, b], [c, d]]
};

struct MatrixProduct {
    typedef unsigned int Input;
    typedef Matrix Value;
    static constexpr bool commutative = false;
    __device__ Matrix lift(unsigned int x) const { return Matrix{x, 1u, 1u, 0u}; }
    __device__ Matrix identity() const { return Matrix{1u, 0u, 0u, 1u}; }
    __device__ Matrix operator()(Matrix p, Matrix q) const
    {
        return Matrix{p.a * q.a + p.b * q.c, p.a * q.b + p.b * q.d,
                      p.c * q.a + p.d * q.c, p.c * q.b + p.d * q.d};
    }
};
"#;
// ANCHOR_END: matrices

type Matrix = [u32; 4];

fn matrix_product(p: Matrix, q: Matrix) -> Matrix {
    let m = |x: u32, y: u32| x.wrapping_mul(y);
    [
        m(p[0], q[0]).wrapping_add(m(p[1], q[2])),
        m(p[0], q[1]).wrapping_add(m(p[1], q[3])),
        m(p[2], q[0]).wrapping_add(m(p[3], q[2])),
        m(p[2], q[1]).wrapping_add(m(p[3], q[3])),
    ]
}

fn user(name: &str, source: &str) -> UserOperator {
    UserOperator { name: name.into(), source: source.into() }
}

fn user_sum_of_squares(device: &Device) -> TestResult {
    let rng = TestRng::new();
    let mut values_rng = SmallRng::seed_from_u64(rng.seed());
    let mut squares = UserReduce::<f32>::new(device, &user("SumOfSquares", SUM_OF_SQUARES))?;
    for n in sizes(device) {
        let values: Vec<f32> = (0..n).map(|_| values_rng.random_range(-1.0..1.0)).collect();
        let buffer = device.upload(&values)?;
        squares.poison_scratch(n)?;
        let got = f32::from_bits(squares.reduce(buffer.as_view())?[0]);
        let want: f64 = values.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
        // The squares round once each, then add up as a sum does.
        let bound = sum_bound(squares.plan(n).longest_addition_chain() + 1, want);
        if (f64::from(got) - want).abs() > bound {
            return Err(rng.fail(format!(
                "sum of squares of {n}: {got}, the CPU gives {want} (bound {bound})"
            )));
        }
    }
    Ok(())
}

fn user_moments(device: &Device) -> TestResult {
    let rng = TestRng::new();
    let mut values_rng = SmallRng::seed_from_u64(rng.seed());
    let mut moments = UserReduce::<f32>::new(device, &user("MeanVariance", MOMENTS))?;
    if moments.value_words() != 3 {
        return Err(format!("(count, mean, M2) is 3 words, not {}", moments.value_words()).into());
    }
    for n in [1, 33, 1025, 65_537, test_size(device, 1 << 22, 100_000)] {
        let values: Vec<f32> = (0..n).map(|_| 3.0 + values_rng.random_range(-1.0..1.0)).collect();
        let buffer = device.upload(&values)?;
        moments.poison_scratch(n)?;
        let words = moments.reduce(buffer.as_view())?;
        let [count, mean, m2] = [0, 1, 2].map(|i| f64::from(f32::from_bits(words[i])));
        let want_mean = values.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64;
        let want_m2: f64 = values.iter().map(|&x| (f64::from(x) - want_mean).powi(2)).sum();
        // Generous: a few hundred roundings of the mean and of M2 (a chain of a few hundred).
        let tolerance = 1e-4;
        if count != n as f64
            || (mean - want_mean).abs() > tolerance * 4.0
            || (m2 - want_m2).abs() > tolerance * want_m2
        {
            return Err(rng.fail(format!(
                "moments of {n}: ({count}, {mean}, {m2}), the CPU gives ({n}, {want_mean}, \
                 {want_m2})"
            )));
        }
    }
    Ok(())
}

/// The non-commutative matrix product, in order, against the CPU, at every size and at offsets:
/// exact (integer arithmetic modulo 2^32).
fn user_matrix_product(device: &Device) -> TestResult {
    let rng = TestRng::new();
    let mut values_rng = SmallRng::seed_from_u64(rng.seed());
    let mut matrices = UserReduce::<u32>::new(device, &user("MatrixProduct", MATRICES))?;
    let empty = device.alloc::<u32>(1)?;
    if matrices.reduce(empty.view(..0)?)? != [1, 0, 0, 1] {
        return Err("the product of no matrices is the identity matrix".into());
    }
    for n in sizes(device) {
        let values: Vec<u32> = (0..n + 3).map(|_| values_rng.random()).collect();
        let buffer = device.upload(&values)?;
        for offset in [0, 3] {
            let input = &values[offset..offset + n];
            let want = input.iter().fold([1, 0, 0, 1], |p, &x| matrix_product(p, [x, 1, 1, 0]));
            matrices.poison_scratch(n)?;
            let got = matrices.reduce(buffer.view(offset..offset + n)?)?;
            if got != want {
                return Err(rng.fail(format!(
                    "product of {n} matrices at offset {offset}: {got:?}, in order {want:?}"
                )));
            }
        }
    }
    Ok(())
}

/// A compile error in a user's operator names its file and the line in its own source.
fn user_compile_errors(device: &Device) -> TestResult {
    let broken = "struct Broken {\n    typedef float Input;\n    typedef float Value;\n    \
                  __device__ float identity() \
                  const { return 0.0f }\n    __device__ float operator()(float a, float b) const \
                  { return a + b; }\n};\n";
    let mut text = String::new();
    for (name, source) in [("Broken", broken), ("SumOfSquares", SUM_OF_SQUARES)] {
        let as_int = UserReduce::<i32>::new(device, &user(name, source));
        match as_int {
            Err(GpuError::Compile { file, line, log }) => {
                let first =
                    log.lines().find(|l| l.contains("error")).unwrap_or_default().to_string();
                text += &format!("{name} over i32: {file} line {line:?}: {first}\n");
                if file != user_file(name) {
                    return Err(format!("the error names {file}, not the operator's file").into());
                }
            }
            other => {
                return Err(format!("{name} over i32 compiled: {:?}", other.map(|_| ())).into());
            }
        }
    }
    if !text.contains("Broken.cu line Some(4)") {
        return Err(format!("the missing ';' is on line 4 of Broken's source:\n{text}").into());
    }
    insta::assert_snapshot!("user_compile_errors", text);
    Ok(())
}

/// Drawn operators, sizes and offsets against the CPU, for f32 and i32.
fn drawn<T: Draw>(device: &Device) -> TestResult {
    let reduce = std::cell::RefCell::new(Reduce::<T>::new(device)?);
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
            let got = run(device, &mut reduce, op, &values, offset);
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

fn register<T: Draw + Debug>(suite: TestSuite) -> TestSuite {
    let name = T::SUFFIX;
    suite.gpu(format!("{name}::every_operator"), every_operator::<T>)
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new();
    suite = register::<f32>(suite);
    suite = register::<f64>(suite);
    suite = register::<i32>(suite);
    suite = register::<u32>(suite);
    suite = register::<u64>(suite);
    suite = register::<u8>(suite);
    suite
        .gpu("semantics::floats", float_semantics)
        .gpu("semantics::integers", integer_semantics)
        .gpu("semantics::empty_inputs_and_unknown_operators", empty_inputs_and_unknown_operators)
        .gpu_if(
            "semantics::arg_index_above_2_pow_32",
            |d| fits_test_time(d, ABOVE_2_POW_32).or_else(|| enough_memory(d, 18 << 30)),
            arg_index_above_2_pow_32,
        )
        .gpu("user::sum_of_squares", user_sum_of_squares)
        .gpu("user::moments", user_moments)
        .gpu("user::matrix_product_in_order", user_matrix_product)
        .gpu("user::compile_errors_have_the_operators_lines", user_compile_errors)
        .gpu("properties::f32_operators", drawn::<f32>)
        .gpu("properties::i32_operators", drawn::<i32>)
        .run()
}
