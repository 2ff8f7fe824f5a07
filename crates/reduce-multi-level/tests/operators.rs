//! reduce-multi-level's operators: the family's operator suite (`reduction::operator_suite`:
//! every built-in operator of every type against the CPU at edge sizes and offsets, the semantics
//! page's special values, identities of empty inputs, property tests) for [`Reduce`]; and user
//! operators compiled at run time (a sum of squares, the (count, mean, M2) moments, and a
//! non-commutative 2x2 matrix product checked in order against the CPU), their compile errors with
//! the operator's own line numbers. Scratch buffers are poisoned before every launch.

use gpu_harness::{Device, GpuError};
use gpu_test::{TestResult, TestRng, TestSuite, test_size};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use reduce_multi_level::operators::{MultiLevelOperators, UserOperator, UserReduce, user_file};
use reduction::operator_suite::{OperatorSuites, empty_inputs_and_unknown_operators, sizes};
use reduction::reference::sum_bound;

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

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .operator_suite::<MultiLevelOperators>("operators")
        .gpu("operators::semantics::empty_inputs_snapshot", |device| {
            let text = empty_inputs_and_unknown_operators::<MultiLevelOperators>(device)?;
            insta::assert_snapshot!("operators_of_nothing", text);
            Ok(())
        })
        .gpu("user::sum_of_squares", user_sum_of_squares)
        .gpu("user::moments", user_moments)
        .gpu("user::matrix_product_in_order", user_matrix_product)
        .gpu("user::compile_errors_have_the_operators_lines", user_compile_errors)
        .run()
}
