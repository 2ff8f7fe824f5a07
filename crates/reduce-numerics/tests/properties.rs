//! reduce-numerics' property tests (proptest, `gpu_test::props`): the compensated f32 sum, the
//! f16 and bf16 sums and means, and the moments (count, mean, m2) of f32 and half inputs against
//! f64 references on drawn inputs (sizes around vectors, warps, blocks and grids, offsets into a
//! buffer, NaN, infinities, subnormals, -0.0, huge and tiny values, all-equal and skewed data,
//! huge values with a small spread). What must hold:
//!
//! - a sum is exact where every order of additions gives the same one (NaN for a NaN or both
//!   infinities, an infinity, or an exact sum), else within its bound (`compensated_tolerance`
//!   for the compensated sum, the bound of the half sum's longest addition chain for half
//!   inputs); the same at any offset where it is exact;
//! - moments: the count; a NaN makes the mean and the variance NaN; an infinity makes the mean
//!   that infinity (NaN if both signs occur) and the variance NaN (as numpy and torch); otherwise
//!   the mean is finite wherever the true mean is, and within the f32 sum's tolerance over n, and
//!   m2 is finite wherever the true m2 is (1000 copies of 1e38: mean 1e38, m2 0), never
//!   negative, within `variance_tolerance`, and +inf where the true m2 is past f32's range;
//! - the mean of half words is their sum over n; the sums of nothing are 0, the mean and moments
//!   of nothing and the sample variance of one element are errors;
//! - the input buffer (with poisoned guard words around the view) is left as it was.
//!
//! A failure prints its smallest input and the seed:
//! `TEST_SEED=<seed> cargo test -p reduce-numerics --test properties` replays it.

use std::cell::RefCell;

use gpu_harness::Device;
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::sample::select;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{
    self, F32Mix, Guarded, expect_bad_input, f32_arith_specials, f32_moment_mixes, f32_sum_mixes,
    order_free_sum, same_value,
};
use gpu_test::{Failed, TestSuite};
use reduce_numerics::{
    HalfFormat, Moments, Numerics, compensated_tolerance, exact_sum, halves_chain,
    two_pass_moments, variance_tolerance,
};
use reduction::reference::{sum_bound, sum_tolerance};

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 32);

/// Sizes around a vector of halves (8) and of floats (4), a warp, a block, and one full grid of
/// this device and of an H100/H200 (256 threads, 4 or 8 elements each); any size up to 40,000 on
/// the simulator, 2^21 on a GPU.
fn sizes(device: &Device) -> BoxedStrategy<usize> {
    let wave = device.facts().shape().threads_in_one_wave(256);
    let hopper = gpu_harness::GpuShape::HOPPER_132_SMS.threads_in_one_wave(256);
    let edges = [1, 2, 3, 4, 8, 9, 32, 256, 4 * wave, 8 * wave, 4 * hopper, 8 * hopper];
    props::sizes(&edges, props::max_len(device))
}

/// Why `got` is not the sum of `values` within `bound` (given the f64 sum and the magnitudes' sum).
fn sum_mismatch_within(
    values: &[f32],
    got: f32,
    bound: impl Fn(f64, f64) -> f64,
) -> Option<String> {
    if let Some(want) = order_free_sum(values) {
        return (!same_value(got, want)).then(|| {
            format!(
                "the sum of {} values is {got}, expected exactly {want} (every order gives it)",
                values.len()
            )
        });
    }
    let exact = exact_sum(values.iter().copied());
    let sum_abs: f64 = values.iter().map(|&x| f64::from(x).abs()).sum();
    let tolerance = bound(exact, sum_abs);
    let error = (f64::from(got) - exact).abs();
    (error.is_nan() || error > tolerance).then(|| {
        format!("the sum of {} values is {got}, expected {exact} ± {tolerance:e}", values.len())
    })
}

/// Why `got` is not acceptable as the moments of `values` (see the module's rules).
fn moments_mismatch(values: &[f32], got: Moments) -> Option<String> {
    let n = values.len();
    if got.count != n as u64 {
        return Some(format!("count {} for {n} values", got.count));
    }
    let nan = values.iter().any(|x| x.is_nan());
    let (up, down) = (values.contains(&f32::INFINITY), values.contains(&f32::NEG_INFINITY));
    if nan || up || down {
        let mean = if nan || (up && down) {
            f32::NAN
        } else if up {
            f32::INFINITY
        } else {
            f32::NEG_INFINITY
        };
        let right = same_value(got.mean, mean) && got.variance().is_nan();
        return (!right).then(|| {
            format!(
                "{got:?} (variance {}) for data with NaN or infinities: expected mean {mean}, \
                 variance NaN",
                got.variance()
            )
        });
    }
    let (mean, variance) = two_pass_moments(values);
    let m2 = variance * n as f64;
    let sum_abs: f64 = values.iter().map(|&x| f64::from(x).abs()).sum();
    // The bounds are relative; with gradual underflow a product below f32's smallest normal also
    // errs by up to half the smallest subnormal, 2^-150, which they do not cover (subnormal data:
    // the squares of its deviations underflow). A value goes through at most three products per
    // level of the combination tree.
    let underflow = 3.0 * ((n as f64).log2().ceil() + 2.0) * 2f64.powi(-150);
    let mean_tolerance = sum_tolerance(n, sum_abs) / n as f64 + underflow;
    let variance_bound = variance_tolerance(values) + underflow;
    let max = f64::from(f32::MAX);
    let mut wrong = Vec::new();
    if mean.abs() <= max
        && !((f64::from(got.mean) - mean).abs() <= mean_tolerance && got.mean.is_finite())
    {
        wrong.push(format!("mean {} (reference {mean} ± {mean_tolerance:e})", got.mean));
    }
    if m2 <= max {
        let close = (got.variance() - variance).abs() <= variance_bound;
        if !(got.m2.is_finite() && got.m2 >= 0.0 && close) {
            wrong.push(format!(
                "m2 {} (reference {m2}), variance {} (reference {variance} ± {variance_bound:e})",
                got.m2,
                got.variance()
            ));
        }
    } else if !(got.m2 == f32::INFINITY || (got.variance() - variance).abs() <= variance_bound) {
        wrong.push(format!(
            "m2 {} for a reference m2 of {m2:e}, past f32's range: expected +inf",
            got.m2
        ));
    }
    (!wrong.is_empty()).then(|| format!("moments of {n} values: {}", wrong.join("; ")))
}

/// Mixtures for half inputs: exact sums at exponents the format holds (f16 subnormals from 2^-24,
/// bf16's from 2^-133), uniform, every exponent the format holds, all equal, skewed.
fn half_mixes(format: HalfFormat) -> BoxedStrategy<F32Mix> {
    let (exponents, top) = match format {
        HalfFormat::F16 => (vec![0, -24, -14, -5, 10], 14),
        HalfFormat::BF16 => (vec![0, -133, -126, -20, 100], 100),
    };
    prop_oneof![
        Just(F32Mix::Zeros),
        select(exponents).prop_map(|exponent| F32Mix::Exact { exponent }),
        Just(F32Mix::Uniform),
        Just(F32Mix::Wide { max_exponent: top }),
        select(vec![1.0f32, -3.75, 0.1, 65504.0, 6e-8]).prop_map(F32Mix::AllEqual),
        Just(F32Mix::Skewed),
    ]
    .boxed()
}

fn formats() -> impl Strategy<Value = HalfFormat> {
    select(vec![HalfFormat::F16, HalfFormat::BF16])
}

/// The compensated sum of `values` at `offset` in a guarded buffer, the buffer checked after.
fn compensated_at(
    device: &Device,
    numerics: &mut Numerics,
    values: &[f32],
    offset: usize,
) -> Result<f32, Failed> {
    let input = Guarded::input(device, values, offset)?;
    numerics.poison(values.len())?;
    let got = numerics.compensated_sum(input.view()?)?;
    input.check_unchanged("the input")?;
    Ok(got)
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .gpu("properties::compensated_sum_matches_the_reference", |device| {
            let numerics = RefCell::new(Numerics::new(device)?);
            let inputs = props::input(sizes(device), 7, f32_sum_mixes(), f32_arith_specials(), 3);
            props::check(device, CASES, (inputs, 0..8usize), |(input, other)| {
                let values = input.values();
                let mut numerics = numerics.borrow_mut();
                let got = compensated_at(device, &mut numerics, &values, input.offset)?;
                let bound =
                    |exact: f64, sum_abs: f64| compensated_tolerance(values.len(), exact, sum_abs);
                if let Some(why) = sum_mismatch_within(&values, got, bound) {
                    return Err(format!("offset {}: {why}", input.offset).into());
                }
                let again = compensated_at(device, &mut numerics, &values, other)?;
                if let Some(why) = sum_mismatch_within(&values, again, bound) {
                    return Err(format!("offset {other}: {why}").into());
                }
                if order_free_sum(&values).is_some() && !same_value(got, again) {
                    return Err(
                        format!("offset {}: {got}, offset {other}: {again}", input.offset).into()
                    );
                }
                Ok(())
            })
        })
        .gpu("properties::moments_match_the_reference", |device| {
            let numerics = RefCell::new(Numerics::new(device)?);
            let inputs =
                props::input(sizes(device), 7, f32_moment_mixes(), f32_arith_specials(), 3);
            props::check(device, CASES, inputs, |input| {
                let values = input.values();
                let data = Guarded::input(device, &values, input.offset)?;
                let mut numerics = numerics.borrow_mut();
                numerics.poison(values.len())?;
                let result = numerics.moments(data.view()?);
                data.check_unchanged("the input")?;
                if values.is_empty() {
                    return expect_bad_input("the moments of nothing", result);
                }
                let got = result?;
                if values.len() == 1 {
                    expect_bad_input("the sample variance of one element", got.sample_variance())?;
                }
                moments_mismatch(&values, got).map_or(Ok(()), |why| Err(why.into()))
            })
        })
        .gpu("properties::half_sums_means_and_moments_match_the_reference", |device| {
            let numerics = RefCell::new(Numerics::new(device)?);
            let sizes = sizes(device);
            let cases = formats().prop_flat_map(move |format| {
                // 1e6 is past f16's range: an infinity there.
                let specials = select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e6]);
                (Just(format), props::input(sizes.clone(), 15, half_mixes(format), specials, 3))
            });
            props::check(device, CASES, cases, |(format, input)| {
                let words: Vec<u16> =
                    input.values().into_iter().map(|x| format.from_f32(x)).collect();
                let values: Vec<f32> = words.iter().map(|&h| format.to_f32(h)).collect();
                let data = Guarded::input(device, &words, input.offset)?;
                let mut numerics = numerics.borrow_mut();
                numerics.poison(words.len())?;
                let sum = numerics.sum_halves(data.view()?, format)?;
                let mean = numerics.mean_halves(data.view()?, format);
                numerics.poison(words.len())?;
                let moments = numerics.moments_halves(data.view()?, format);
                data.check_unchanged("the input")?;
                if words.is_empty() {
                    if sum != 0.0 {
                        return Err(format!("{format:?}: the sum of nothing is {sum}").into());
                    }
                    expect_bad_input("the mean of nothing", mean)?;
                    return expect_bad_input("the moments of nothing", moments);
                }
                let chain = halves_chain(values.len(), device.facts().shape());
                let bound = |_: f64, sum_abs: f64| sum_bound(chain, sum_abs);
                if let Some(why) = sum_mismatch_within(&values, sum, bound) {
                    return Err(format!("{format:?} sum: {why}").into());
                }
                let (mean, want) = (mean?, f64::from(sum) / values.len() as f64);
                if !(mean == want || (mean.is_nan() && want.is_nan())) {
                    return Err(
                        format!("{format:?}: the mean is {mean}, the sum over n {want}").into()
                    );
                }
                moments_mismatch(&values, moments?)
                    .map_or(Ok(()), |why| Err(format!("{format:?} {why}").into()))
            })
        })
        .run()
}
