//! batch-stats' property tests (proptest, `gpu_test::props`): every step, f32 and bf16, either
//! variance, on NCHW shapes of 1 to 5 samples, 1 to 70 channels and planes of 1 x 1 to 16 x 24
//! (up to 40 x 100 on a GPU), at offsets of 0 to 7 elements into a guarded buffer, with values from
//! the moments' mixtures (uniform, skewed, all equal at 1e38 and f32::MAX, bands of magnitude)
//! and up to three NaNs, infinities or -0.0 in random places: the statistics match the f64
//! reference within `batch_stats::tolerance`, every channel is written, and the input is left as
//! it was.

use std::cell::RefCell;

use batch_stats::{BatchStats, Nchw, Step, Value, Variance, f32_to_bf16, first_mismatch};
use gpu_harness::Device;
use gpu_test::TestSuite;
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::{self, Guarded, f32_arith_specials, f32_moment_mixes};

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 24);

/// Shapes of a few samples, channels and small planes (larger ones on a GPU).
fn shapes(device: &Device) -> BoxedStrategy<Nchw> {
    let (n, c, h, w): (usize, usize, usize, usize) =
        if device.is_simulated() { (5, 70, 16, 24) } else { (9, 300, 40, 100) };
    (1..=n, 1..=c, 1..=h, 1..=w).prop_map(|(n, c, h, w)| Nchw::new(n, c, h, w)).boxed()
}

/// Runs `stats` on `values` (`offset` elements into a guarded buffer) and checks the result.
fn check<T: Value + props::Word>(
    device: &Device,
    stats: &mut BatchStats,
    shape: Nchw,
    variance: Variance,
    values: &[T],
    offset: usize,
) -> gpu_test::TestResult {
    let data = Guarded::input(device, values, offset)?;
    let (mut mean, mut var) =
        (device.alloc::<f32>(shape.channels)?, device.alloc::<f32>(shape.channels)?);
    mean.fill(-7.0)?;
    var.fill(-7.0)?;
    stats.stats(data.view()?, shape, variance, &mut mean, &mut var)?;
    data.check_unchanged("the input")?;
    let chain = stats.plan::<T>(shape)?.longest_chain(shape);
    match first_mismatch(values, shape, variance, chain, &mean.to_host()?, &var.to_host()?) {
        None => Ok(()),
        Some(why) => Err(format!("{} {} {variance:?}: {why}", stats.step().name(), T::NAME).into()),
    }
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .gpu("properties::statistics_match_the_reference", |device| {
            let stats: Vec<RefCell<BatchStats>> = Step::ALL
                .iter()
                .map(|&step| BatchStats::new(device, step).map(RefCell::new))
                .collect::<Result<_, _>>()?;
            let cases = (shapes(device), 0..Step::ALL.len(), any::<bool>(), any::<bool>())
                .prop_flat_map(|(shape, step, unbiased, bf16)| {
                    let n = shape.elements().unwrap_or(0);
                    let input =
                        props::input(Just(n), 7, f32_moment_mixes(), f32_arith_specials(), 3);
                    (Just(shape), Just(step), Just(unbiased), Just(bf16), input)
                });
            props::check(device, CASES, cases, |(shape, step, unbiased, bf16, input)| {
                let variance = if unbiased { Variance::Unbiased } else { Variance::Population };
                let mut stats = stats[step].borrow_mut();
                let values = input.values();
                if bf16 {
                    let words: Vec<u16> = values.iter().map(|&x| f32_to_bf16(x)).collect();
                    check(device, &mut stats, shape, variance, &words, input.offset)
                } else {
                    check(device, &mut stats, shape, variance, &values, input.offset)
                }
            })
        })
        .run()
}
