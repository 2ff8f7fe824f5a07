//! reduce-shuffle's property tests: the reduction family's shared properties
//! (`crates/reduction/tests/common/properties.rs`) for the scalar and vector-load sums, and max,
//! min and argmax ([`Extremes`]) against the CPU: NaN wins (argmax is the first NaN's index), ties
//! go to the first index, -0.0 and 0.0 tie, the largest and smallest magnitudes; the input left as
//! it was, the same answer at any offset, an empty input an error. A failure prints its smallest
//! input and the seed: `TEST_SEED=<seed> cargo test -p reduce-shuffle --test properties` replays
//! it.

#[path = "../../reduction/tests/common/properties.rs"]
mod properties;

use std::cell::RefCell;

use gpu_harness::Device;
use gpu_test::props::{self, Guarded, expect_bad_input, f32_specials, f32_value_mixes, same_value};
use gpu_test::{Failed, TestSuite};
use properties::{PropertySuites, reduction_sizes};
use reduce_shuffle::{Extremes, ReduceShuffle, ReduceShuffleScalar};

/// Max, min and argmax of `values` on the CPU: NaN wins (the first NaN for argmax), then the first
/// index of the largest value.
fn cpu_extremes(values: &[f32]) -> (f32, f32, (f32, usize)) {
    if let Some(i) = values.iter().position(|x| x.is_nan()) {
        return (f32::NAN, f32::NAN, (f32::NAN, i));
    }
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let min = values.iter().copied().fold(f32::INFINITY, f32::min);
    let first = values.iter().position(|&x| x == max).unwrap_or(usize::MAX);
    (max, min, (max, first))
}

/// Max, min and argmax of `values` at `offset` into a guarded buffer, checked against the CPU.
fn extremes_at(
    device: &Device,
    extremes: &mut Extremes,
    values: &[f32],
    offset: usize,
) -> Result<(f32, f32, (f32, usize)), Failed> {
    let input = Guarded::input(device, values, offset)?;
    let view = input.view()?;
    if values.is_empty() {
        expect_bad_input("the max of nothing", extremes.max(view))?;
        expect_bad_input("the min of nothing", extremes.min(view))?;
        expect_bad_input("the argmax of nothing", extremes.argmax(view))?;
        return Ok((f32::NAN, f32::NAN, (f32::NAN, 0)));
    }
    extremes.poison_scratch(values.len())?;
    let max = extremes.max(view)?;
    extremes.poison_scratch(values.len())?;
    let min = extremes.min(view)?;
    extremes.poison_scratch(values.len())?;
    let argmax = extremes.argmax(view)?;
    input.check_unchanged("the input")?;
    let (want_max, want_min, want_argmax) = cpu_extremes(values);
    let right = same_value(max, want_max)
        && same_value(min, want_min)
        && same_value(argmax.0, want_argmax.0)
        && argmax.1 == want_argmax.1;
    if !right {
        return Err(format!(
            "offset {offset}: max {max}, min {min}, argmax {argmax:?}; expected {want_max}, \
             {want_min}, {want_argmax:?}"
        )
        .into());
    }
    Ok((max, min, argmax))
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .sum_properties::<ReduceShuffleScalar>()
        .sum_properties::<ReduceShuffle>()
        .gpu("properties::extremes::max_min_argmax_match_the_reference", |device| {
            let extremes = RefCell::new(Extremes::new(device)?);
            let inputs =
                props::input(reduction_sizes(device, &[]), 7, f32_value_mixes(), f32_specials(), 4);
            props::check(device, (256, 32), inputs, |input| {
                extremes_at(device, &mut extremes.borrow_mut(), &input.values(), input.offset)
                    .map(drop)
            })
        })
        .gpu("properties::extremes::same_answers_at_any_offset", |device| {
            let extremes = RefCell::new(Extremes::new(device)?);
            let inputs =
                props::input(reduction_sizes(device, &[]), 7, f32_value_mixes(), f32_specials(), 4);
            props::check(device, (128, 16), (inputs, 0..8usize), |(input, other)| {
                let values = input.values();
                // Each is checked against the CPU's, so they also agree with each other.
                extremes_at(device, &mut extremes.borrow_mut(), &values, input.offset)?;
                extremes_at(device, &mut extremes.borrow_mut(), &values, other).map(drop)
            })
        })
        .run()
}
