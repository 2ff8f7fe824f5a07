//! reduce-numerics' tests: half-precision sums against an exact reference at every alignment and
//! awkward size; the compensated sum within its derived bound, and exact where the plain f32 sum is
//! not; mean and variance against a two-pass f64 reference within the derived bound, exactly 0 for
//! constant data, never negative; NaN and infinities; the rules for 0 and 1 elements.

use gpu_harness::{Device, GpuError, GpuShape};
use gpu_test::{TestResult, TestRng, TestSuite, fits_test_time};
use reduce_numerics::{
    HalfFormat, Numerics, compensated_tolerance, exact_sum, halves_chain, moments_mismatch, plan,
    random_halves, within,
};
use reduction::reference::sum_mismatch;

/// Edge sizes: empty, one element, around a 16-byte vector of halves (8) and of floats (4), a warp,
/// a block, one full grid of an H100/H200 (1056 blocks of 256 threads, 8 halves each), and large
/// sizes that are not powers of two.
const SIZES: &[usize] =
    &[0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 255, 256, 257, 4099, 2_162_687, 2_162_689, (1 << 20) + 3];

fn check_halves(
    device: &Device,
    rng: &TestRng,
    numerics: &mut Numerics,
    format: HalfFormat,
    host: &[u16],
) -> TestResult {
    let buffer = device.upload(host)?;
    for offset in [0usize, 1, 3, 7].into_iter().filter(|&o| o <= host.len()) {
        let view = buffer.view(offset..)?;
        let values: Vec<f32> = host[offset..].iter().map(|&h| format.to_f32(h)).collect();
        numerics.poison(view.len())?;
        let got = numerics.sum_halves(view, format)?;
        if let Some(why) =
            sum_mismatch(&values, got, halves_chain(values.len(), device.facts().shape()))
        {
            return Err(rng.fail(format!("{format:?} sum at offset {offset}: {why}")));
        }
        if !values.is_empty() {
            numerics.poison(view.len())?;
            let moments = numerics.moments_halves(view, format)?;
            if let Some(why) = moments_mismatch(&values, moments) {
                return Err(rng.fail(format!("{format:?} moments at offset {offset}: {why}")));
            }
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new();
    for &n in SIZES {
        for format in [HalfFormat::F16, HalfFormat::BF16] {
            suite = suite.gpu_if(
                format!("halves::{format:?}::sum_and_moments_at_every_alignment::n_{n}"),
                move |d| fits_test_time(d, n + 7),
                move |device| {
                    let rng = TestRng::new();
                    let host = random_halves(n + 7, format, rng.seed());
                    check_halves(device, &rng, &mut Numerics::new(device)?, format, &host)
                },
            );
        }
        suite = suite.gpu_if(
            format!("f32::compensated_and_moments::n_{n}"),
            move |d| fits_test_time(d, n + 3),
            move |device| {
                let mut rng = TestRng::new();
                let host = rng.uniform_f32(n + 3, -1.0, 1.0);
                let buffer = device.upload(&host)?;
                let mut numerics = Numerics::new(device)?;
                for offset in 0..4 {
                    let view = buffer.view(offset..offset + n)?;
                    let values = &host[offset..offset + n];
                    numerics.poison(n)?;
                    let got = numerics.compensated_sum(view)?;
                    let exact = exact_sum(values.iter().copied());
                    let sum_abs: f64 = values.iter().map(|&x| f64::from(x).abs()).sum();
                    let tolerance = compensated_tolerance(n, exact, sum_abs);
                    if !within((f64::from(got) - exact).abs(), tolerance) {
                        return Err(rng.fail(format!(
                            "compensated sum of {n} at {offset}: {got}, exact {exact}"
                        )));
                    }
                    if n > 0 {
                        numerics.poison(n)?;
                        if let Some(why) = moments_mismatch(values, numerics.moments(view)?) {
                            return Err(
                                rng.fail(format!("moments of {n} at offset {offset}: {why}"))
                            );
                        }
                    }
                }
                Ok(())
            },
        );
    }
    suite
        .gpu("compensated::exact_where_the_f32_sum_is_not", |device| {
            // 1 and many tiny values: added one at a time to 1, f32 drops each 2^-25 entirely (half
            // an ulp of 1, rounded to even). The compensated sum must return the exact sum rounded
            // once to f32.
            let mut host = vec![2f32.powi(-25); 1 << 20];
            host[0] = 1.0;
            let exact = exact_sum(host.iter().copied());
            let sequential = host.iter().fold(0.0f32, |sum, &x| sum + x);
            let input = device.upload(&host)?;
            let got = Numerics::new(device)?.compensated_sum(input.as_view())?;
            if got != exact as f32 || sequential == exact as f32 {
                return Err(format!(
                    "compensated sum {got}, exact {exact}, sequential f32 {sequential}"
                )
                .into());
            }
            Ok(())
        })
        .gpu("moments::constant_data_has_a_variance_of_exactly_zero", |device| {
            let mut numerics = Numerics::new(device)?;
            for value in [0.1f32, -3.75, 1000.5, 1e-30] {
                for n in [1usize, 5, 4099, 300_007] {
                    let input = device.upload(&vec![value; n])?;
                    let moments = numerics.moments(input.as_view())?;
                    if moments.m2 != 0.0 || moments.mean != value || moments.count != n as u64 {
                        return Err(format!("{n} x {value}: {moments:?}").into());
                    }
                    let halves = vec![HalfFormat::F16.from_f32(value.clamp(-60000.0, 60000.0)); n];
                    let h = numerics
                        .moments_halves(device.upload(&halves)?.as_view(), HalfFormat::F16)?;
                    if h.m2 != 0.0 {
                        return Err(format!("{n} f16 copies of {value}: m2 = {}", h.m2).into());
                    }
                }
            }
            Ok(())
        })
        .gpu("moments::offset_data_within_the_derived_bound", |device| {
            let mut rng = TestRng::new();
            let mut numerics = Numerics::new(device)?;
            for offset in [8.0f32, 1000.0] {
                let n = 100_003;
                let host: Vec<f32> =
                    rng.uniform_f32(n, -1.0, 1.0).into_iter().map(|x| x + offset).collect();
                let moments = numerics.moments(device.upload(&host)?.as_view())?;
                if let Some(why) = moments_mismatch(&host, moments) {
                    return Err(rng.fail(format!("offset {offset}: {why}")));
                }
                if moments.m2 < 0.0 {
                    return Err(rng.fail(format!("negative m2 {}", moments.m2)));
                }
            }
            Ok(())
        })
        .gpu("moments::finite_wherever_the_true_mean_and_m2_are", |device| {
            // Sums of four values near f32's limit overflow before they are quartered, and the
            // difference of two means of opposite signs can overflow: neither may reach the result.
            let mut numerics = Numerics::new(device)?;
            for (value, n) in [(1e38f32, 1000usize), (f32::MAX, 4099), (-3e38, 7), (3.3e38, 1)] {
                let moments = numerics.moments(device.upload(&vec![value; n])?.as_view())?;
                if moments.mean != value || moments.m2 != 0.0 {
                    return Err(format!("{n} copies of {value:e}: {moments:?}").into());
                }
            }
            // Half the values at -3e38, half at +3e38: mean 0, m2 = n * 9e76, past f32: +inf.
            let host: Vec<f32> = (0..1000).map(|i| if i % 2 == 0 { -3e38 } else { 3e38 }).collect();
            let moments = numerics.moments(device.upload(&host)?.as_view())?;
            if !(moments.mean.abs() <= 3e38 * 1e-3 && moments.m2 == f32::INFINITY) {
                return Err(format!(
                    "+-3e38 alternating: {moments:?} (mean 0, m2 past f32 expected)"
                )
                .into());
            }
            Ok(())
        })
        .gpu("moments::an_infinity_anywhere_gives_a_nan_variance", |device| {
            // numpy.var and torch.var: x - mean is inf - inf for the infinite element, so NaN; the
            // mean is the infinity. Wherever the infinity sits: in a four-value group, the tail,
            // the only element.
            let mut numerics = Numerics::new(device)?;
            for n in [1usize, 5, 4099, 10_000] {
                for at in [0, n / 2, n - 1] {
                    for infinity in [f32::INFINITY, f32::NEG_INFINITY] {
                        let mut host = vec![0.5f32; n];
                        host[at] = infinity;
                        let moments = numerics.moments(device.upload(&host)?.as_view())?;
                        let mut halves = |format: HalfFormat| -> gpu_harness::Result<_> {
                            let words: Vec<u16> =
                                host.iter().map(|&x| format.from_f32(x)).collect();
                            numerics.moments_halves(device.upload(&words)?.as_view(), format)
                        };
                        let f16 = halves(HalfFormat::F16)?;
                        let bf16 = halves(HalfFormat::BF16)?;
                        for (what, got) in [("f32", moments), ("f16", f16), ("bf16", bf16)] {
                            if got.mean != infinity || !got.variance().is_nan() {
                                return Err(
                                    format!("{what}: {infinity} at {at} of {n}: {got:?}").into()
                                );
                            }
                        }
                    }
                }
            }
            Ok(())
        })
        .gpu("nan_and_infinities_follow_the_documented_rules", |device| {
            let mut numerics = Numerics::new(device)?;
            let mut host = vec![1.0f32; 10_000];
            host[4321] = f32::NAN;
            let input = device.upload(&host)?;
            let (sum, moments) =
                (numerics.compensated_sum(input.as_view())?, numerics.moments(input.as_view())?);
            if !(sum.is_nan() && moments.mean.is_nan() && moments.variance().is_nan()) {
                return Err(format!("NaN input: sum {sum}, {moments:?}").into());
            }
            host[4321] = f32::INFINITY;
            let input = device.upload(&host)?;
            let (sum, moments) =
                (numerics.compensated_sum(input.as_view())?, numerics.moments(input.as_view())?);
            if !(sum == f32::INFINITY
                && moments.mean == f32::INFINITY
                && moments.variance().is_nan())
            {
                return Err(format!("+inf input: sum {sum}, {moments:?}").into());
            }
            let halves: Vec<u16> = host.iter().map(|&x| HalfFormat::BF16.from_f32(x)).collect();
            let sum = numerics.sum_halves(device.upload(&halves)?.as_view(), HalfFormat::BF16)?;
            if sum != f32::INFINITY {
                return Err(format!("bf16 +inf input: sum {sum}").into());
            }
            Ok(())
        })
        .gpu("halves::f32_accumulation_holds_sums_past_the_half_range_and_subnormals", |device| {
            // Halves are summed in f32 and the sum returned as f32: 1000 x 65504 (f16's largest
            // value) is 65,504,000 exactly, not the f16 infinity (numpy's sum of f16 values returns
            // an f16). The smallest subnormal of each format, 1000 times, sums exactly.
            let mut numerics = Numerics::new(device)?;
            let largest = vec![HalfFormat::F16.from_f32(65504.0); 1000];
            let sum = numerics.sum_halves(device.upload(&largest)?.as_view(), HalfFormat::F16)?;
            if sum != 65_504_000.0 {
                return Err(format!("1000 x 65504 in f16: got {sum}").into());
            }
            for format in [HalfFormat::F16, HalfFormat::BF16] {
                let tiny = vec![1u16; 1000];
                let sum = numerics.sum_halves(device.upload(&tiny)?.as_view(), format)?;
                let exact = 1000.0 * format.to_f32(1);
                if sum != exact || exact == 0.0 {
                    return Err(format!(
                        "{format:?}: 1000 x the smallest subnormal: got {sum:e}, exact {exact:e}"
                    )
                    .into());
                }
            }
            Ok(())
        })
        .gpu("compensated::subnormals_and_signed_zeros", |device| {
            // The compensated sum adds subnormals exactly (4099 x 2^-149) and, like every sum here,
            // starts from +0.0: zeros of either sign sum to +0.0. The mean of zeros is a zero and
            // their m2 is 0.
            let mut numerics = Numerics::new(device)?;
            let tiny = device.upload(&vec![f32::from_bits(1); 4099])?;
            let sum = numerics.compensated_sum(tiny.as_view())?;
            if sum.to_bits() != 4099 {
                return Err(format!("4099 x 2^-149: got {sum:e}").into());
            }
            for n in [1usize, 2, 4099] {
                let zeros = device.upload(&vec![-0.0f32; n])?;
                let sum = numerics.compensated_sum(zeros.as_view())?;
                let moments = numerics.moments(zeros.as_view())?;
                if sum.to_bits() != 0 || moments.mean != 0.0 || moments.m2 != 0.0 {
                    return Err(format!("{n} x -0.0: sum {sum:e}, {moments:?}").into());
                }
            }
            Ok(())
        })
        .gpu("empty_and_single_inputs_follow_the_documented_rules", |device| {
            let mut numerics = Numerics::new(device)?;
            let empty_f32 = device.alloc::<f32>(0)?;
            let empty_half = device.alloc::<u16>(0)?;
            if numerics.compensated_sum(empty_f32.as_view())? != 0.0
                || numerics.sum_halves(empty_half.as_view(), HalfFormat::F16)? != 0.0
            {
                return Err("the sum of nothing must be 0".into());
            }
            for result in [
                numerics.moments(empty_f32.as_view()).map(drop),
                numerics.mean_halves(empty_half.as_view(), HalfFormat::F16).map(drop),
            ] {
                if !matches!(result, Err(GpuError::BadInput(_))) {
                    return Err(
                        format!("expected BadInput for an empty input, got {result:?}").into()
                    );
                }
            }
            let one = numerics.moments(device.upload(&[2.5f32])?.as_view())?;
            if one.variance() != 0.0 || one.mean != 2.5 {
                return Err(format!("one element: {one:?}").into());
            }
            match one.sample_variance() {
                Err(GpuError::BadInput(message)) => {
                    insta::assert_snapshot!("sample_variance_of_one_element", message);
                    Ok(())
                }
                other => Err(format!("expected BadInput, got {other:?}").into()),
            }
        })
        .cpu("half_conversions_round_to_nearest_even", || {
            // 1 + 2^-11 is halfway between two f16 values: it rounds to the even one, 1.
            assert_eq!(
                HalfFormat::F16.from_f32(1.0 + 2f32.powi(-11)),
                HalfFormat::F16.from_f32(1.0)
            );
            assert_eq!(HalfFormat::F16.to_f32(HalfFormat::F16.from_f32(65504.0)), 65504.0);
            assert_eq!(HalfFormat::BF16.to_f32(HalfFormat::BF16.from_f32(1.0)), 1.0);
            assert!(HalfFormat::F16.to_f32(HalfFormat::F16.from_f32(1e6)).is_infinite());
            Ok(())
        })
        .cpu("illustration::launch_plans", || {
            let plans: Vec<String> =
                [(0usize, 8u32), (1, 8), (4099, 8), (1 << 20, 8), (1 << 28, 8), (1 << 28, 4)]
                    .iter()
                    .map(|&(n, per)| plan("numerics", n, per, GpuShape::HOPPER_132_SMS).to_string())
                    .collect();
            insta::assert_snapshot!("launch_plans", plans.join("\n"));
            Ok(())
        })
        .run()
}
