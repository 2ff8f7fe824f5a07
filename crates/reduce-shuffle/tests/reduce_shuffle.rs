//! reduce-shuffle's tests: the shared reduction suite for both sum kernels; the vector loads at
//! every alignment and tail length; max, min and argmax against the CPU, with NaN, -inf and ties;
//! and snapshots of launch plans and block partials.

use gpu_harness::{Device, GpuError};
use gpu_test::{TestResult, TestRng, TestSuite};
use reduce_shuffle::{Extremes, ReduceShuffle, ReduceShuffleScalar, Shuffle, ShuffleVec4};
use reduction::reference::exact_integer_bound;
use reduction::step_snapshot_tests;
use reduction::suite::{Expected, ReductionSuites, SumReduction, check_sum};

/// Sizes around the vector width and its tails, and a large one that is not a multiple of 4.
const VECTOR_SIZES: &[usize] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 33, 4099, (1 << 20) + 3];

/// The first index of the largest value, by a plain scan (inputs here hold no NaN).
fn cpu_argmax(values: &[f32]) -> (f32, usize) {
    let mut best = (values[0], 0);
    for (i, &v) in values.iter().enumerate() {
        if v > best.0 {
            best = (v, i);
        }
    }
    best
}

/// Checks max, min and argmax of `host[start..]` against the CPU.
fn check_extremes(device: &Device, rng: &TestRng, host: &[f32], start: usize) -> TestResult {
    let buffer = device.upload(host)?;
    let view = buffer.view(start..)?;
    let expected = &host[start..];
    let mut extremes = Extremes::new(device)?;
    extremes.poison_scratch(view.len())?;
    let max = extremes.max(view)?;
    extremes.poison_scratch(view.len())?;
    let min = extremes.min(view)?;
    extremes.poison_scratch(view.len())?;
    let argmax = extremes.argmax(view)?;
    let want_max = expected.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let want_min = expected.iter().copied().fold(f32::INFINITY, f32::min);
    let want_argmax = cpu_argmax(expected);
    if max != want_max || min != want_min || argmax != want_argmax {
        return Err(rng.fail(format!(
            "n = {}, offset {start}: got max {max}, min {min}, argmax {argmax:?}; \
             expected {want_max}, {want_min}, {want_argmax:?}",
            expected.len()
        )));
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let suite = TestSuite::new()
        .sum_reduction_suite::<ReduceShuffleScalar>()
        .sum_reduction_suite::<ReduceShuffle>();
    step_snapshot_tests!(suite, Shuffle, ShuffleVec4)
        .gpu("vec4::every_alignment_and_tail", |device| {
            let mut rng = TestRng::new();
            let mut reducer = ReduceShuffle::create(device)?;
            for &n in VECTOR_SIZES {
                let host = rng.small_integers_f32(n + 3, exact_integer_bound(n + 3));
                let buffer = device.upload(&host)?;
                for offset in 0..4 {
                    let view = buffer.view(offset..offset + n)?;
                    reducer.reserve(n)?;
                    reducer.poison_scratch()?;
                    let got = reducer.sum_device(view)?;
                    check_sum(
                        &rng,
                        &format!("offset {offset}"),
                        &host[offset..offset + n],
                        got,
                        Expected::Exact,
                    )?;
                }
            }
            Ok(())
        })
        .gpu("extremes::match_cpu_at_every_alignment", |device| {
            let mut rng = TestRng::new();
            for &n in VECTOR_SIZES.iter().chain(&[256, 257, 300_001]) {
                let host = rng.uniform_f32(n + 3, -1000.0, 1000.0);
                for offset in 0..4 {
                    check_extremes(device, &rng, &host[..offset + n], offset)?;
                }
            }
            Ok(())
        })
        .gpu("extremes::ties_go_to_the_first_index", |device| {
            let rng = TestRng::new();
            let mut host = vec![1.0f32; 10_000];
            for i in [9_999, 4_321, 77, 5_000] {
                host[i] = 7.0;
            }
            check_extremes(device, &rng, &host, 0)?;
            check_extremes(device, &rng, &host, 78)
        })
        .gpu("extremes::negative_infinity", |device| {
            let rng = TestRng::new();
            check_extremes(device, &rng, &[f32::NEG_INFINITY; 1000], 0)?;
            let mut host = vec![f32::NEG_INFINITY; 1000];
            host[500] = -1e30;
            check_extremes(device, &rng, &host, 0)
        })
        .gpu("extremes::nan_wins", |device| {
            let mut extremes = Extremes::new(device)?;
            let mut host: Vec<f32> = (0..100_000).map(|i| i as f32).collect();
            host[70_000] = f32::NAN;
            host[90_000] = f32::NAN;
            let buffer = device.upload(&host)?;
            let (max, min, argmax) = (
                extremes.max(buffer.as_view())?,
                extremes.min(buffer.as_view())?,
                extremes.argmax(buffer.as_view())?,
            );
            if !(max.is_nan() && min.is_nan() && argmax.0.is_nan() && argmax.1 == 70_000) {
                return Err(format!(
                    "expected NaN, NaN, (NaN, 70000); got {max}, {min}, {argmax:?}"
                )
                .into());
            }
            Ok(())
        })
        .gpu("extremes::empty_input_is_an_error", |device| {
            let mut extremes = Extremes::new(device)?;
            let empty = device.alloc::<f32>(0)?;
            for result in [extremes.max(empty.as_view()), extremes.min(empty.as_view())] {
                if !matches!(result, Err(GpuError::BadInput(_))) {
                    return Err(
                        format!("expected BadInput for an empty input, got {result:?}").into()
                    );
                }
            }
            match extremes.argmax(empty.as_view()) {
                Err(GpuError::BadInput(message)) => {
                    insta::assert_snapshot!("argmax_of_empty_input", message);
                    Ok(())
                }
                other => Err(format!("expected BadInput, got {other:?}").into()),
            }
        })
        .run()
}
