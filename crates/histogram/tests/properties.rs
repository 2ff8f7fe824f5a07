//! histogram's property tests (proptest, `gpu_test::props`): every byte step and the f32 even bins
//! against the CPU histograms, exactly, on drawn inputs (sizes around a vector, a block and a
//! block's bytes per iteration, offsets into a buffer, random, all-equal, alternating and
//! sea-and-island bytes; f32 values with NaN, infinities, subnormals, -0.0, the largest
//! magnitudes, values on the bounds and on bin edges, ranges from tiny to the whole of f32). The
//! counts must be the CPU's; inputs are left as they were; every value the bins count lands within
//! one bin of where the real numbers put it; `EvenBins::new` rejects the bin counts and bounds it
//! documents, and a range whose width (upper - lower) overflows f32; a bins buffer of another
//! length is an error. A failure prints its smallest input and the seed:
//! `TEST_SEED=<seed> cargo test -p histogram --test properties` replays it.
//!
//! The bins buffer must hold exactly the bins, so no guard words fit around it: on the simulator a
//! write past it faults (its allocations are separated by unmapped gaps), and the input's guards
//! are checked everywhere.

use std::cell::RefCell;

use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::sample::select;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{self, Guarded, expect_bad_input, f32_specials, f32_value_mixes};
use gpu_test::{TestResult, TestSuite, test_size};
use histogram::reference::{byte_histogram, even_histogram, mismatch};
use histogram::{
    BLOCK_SIZE, BYTE_BINS, ByteHistogram, ByteStep, EvenBins, EvenHistogram, EvenStep,
};

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 32);

/// Where the bins of an even histogram come from: a count and a range.
#[derive(Debug, Clone, Copy)]
struct Range {
    bins: u32,
    lower: f32,
    upper: f32,
}

/// Bin counts around powers of two and the most there are; ranges ordinary (around 0, 1 and 1000,
/// from 1e-3 to 256 wide), tiny (a few ulps of a subnormal or of a large value) and huge (to the
/// whole of f32, whose width overflows f32).
/// The width of [lower, upper), in f64.
fn width(lower: f32, upper: f32) -> f64 {
    f64::from(upper) - f64::from(lower)
}

fn ranges() -> BoxedStrategy<Range> {
    let max = EvenBins::MAX_BINS;
    let bins = prop_oneof![select(vec![1u32, 2, 3, 255, 256, 257, 1000, max - 1, max]), 1..=max];
    let ordinary = (
        select(vec![0.0f32, -1.0, 1000.0, -1e-30, 1e6]),
        select(vec![1.0f32, 256.0, 1e-3, 3.0, 1e5]),
    )
        .prop_map(|(lower, width)| (lower, lower + width));
    let tiny = (select(vec![0.0f32, 1e-45, -3e-45, 1.0, 3e38, -1e20]), 1..64u32).prop_map(
        |(lower, ulps)| {
            let upper = f32::from_bits(lower.to_bits().wrapping_add(if lower < 0.0 {
                -(ulps as i32) as u32
            } else {
                ulps
            }));
            if lower == 0.0 {
                (lower, f32::from_bits(ulps))
            } else {
                (lower.min(upper), lower.max(upper))
            }
        },
    );
    let huge = (
        select(vec![-f32::MAX, -3e38, -1e38, -1.0, 0.0]),
        select(vec![f32::MAX, 3e38, 1e38, 1.0, 1e30]),
    );
    (bins, prop_oneof![ordinary, tiny, huge])
        .prop_map(|(bins, (lower, upper))| Range { bins, lower, upper })
        .boxed()
}

/// Where the values of an even histogram sit: as drawn (mostly outside small ranges), spread over
/// the range, or on its bin edges and bounds (and one ulp either side).
#[derive(Debug, Clone, Copy)]
enum Place {
    AsDrawn,
    InRange,
    OnEdges,
}

fn places() -> impl Strategy<Value = Place> {
    select(vec![Place::AsDrawn, Place::InRange, Place::OnEdges])
}

/// `x` moved to `place` in `range` (NaN and infinities stay as they are).
fn placed(x: f32, place: Place, range: Range) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let (lower, upper) = (f64::from(range.lower), f64::from(range.upper));
    let bits = x.to_bits();
    let fraction = f64::from(bits) / 2f64.powi(32);
    match place {
        Place::AsDrawn => x,
        Place::InRange => (lower + fraction * (upper - lower)) as f32,
        Place::OnEdges => {
            let k = bits % (range.bins + 1);
            let edge = (lower + f64::from(k) * (upper - lower) / f64::from(range.bins)) as f32;
            match bits >> 30 {
                0 => next_down(edge),
                1 => next_up(edge),
                _ => edge,
            }
        }
    }
}

/// The next f32 above finite `x` (`f32::next_up`, which is newer than the workspace's Rust).
fn next_up(x: f32) -> f32 {
    match x {
        0.0 => f32::from_bits(1),
        x if x > 0.0 => f32::from_bits(x.to_bits() + 1),
        x => f32::from_bits(x.to_bits() - 1),
    }
}

/// The next f32 below finite `x`.
fn next_down(x: f32) -> f32 {
    -next_up(-x)
}

/// The bin the real numbers put `x` in, `floor((x - lower) / (upper - lower) * bins)` in f64.
fn true_bin(x: f32, bins: &EvenBins) -> f64 {
    let (lower, upper) = (f64::from(bins.lower()), f64::from(bins.upper()));
    ((f64::from(x) - lower) / (upper - lower) * f64::from(bins.bins()))
        .floor()
        .min(f64::from(bins.bins() - 1))
}

/// Fails if a value `bins` counts lands more than one bin from its true bin.
fn bins_are_where_they_belong(values: &[f32], bins: &EvenBins) -> TestResult {
    for &x in values {
        if let Some(bin) = bins.bin_of(x) {
            let want = true_bin(x, bins);
            if (f64::from(bin) - want).abs() > 1.0 {
                return Err(format!(
                    "{x} is counted in bin {bin} of {bins:?}; it belongs in bin {want}"
                )
                .into());
            }
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .gpu("properties::bytes::counts_match_the_reference", |device| {
            let mut steps = Vec::new();
            for step in ByteStep::ALL {
                steps.push(ByteHistogram::new(device, step)?);
            }
            let per_block = BLOCK_SIZE as usize * 32;
            let wave = device.facts().shape().resident_blocks(BLOCK_SIZE) as usize * per_block;
            let edges = [1, 16, 32, BLOCK_SIZE as usize, per_block, 2 * per_block, wave];
            let sizes = props::sizes(&edges, test_size(device, 1 << 21, 70_000));
            let inputs = props::input(sizes, 16, props::byte_mixes(), any::<u8>(), 3);
            props::check(device, CASES, (0..steps.len(), inputs), |(step, input)| {
                let values = input.values();
                let data = Guarded::input(device, &values, input.offset)?;
                let mut bins = device.alloc::<u32>(BYTE_BINS)?;
                bins.fill_words(0xdead_beef)?;
                steps[step].count(data.view()?, &mut bins)?;
                data.check_unchanged("the input")?;
                match mismatch(&byte_histogram(&values), &bins.to_host()?) {
                    None => Ok(()),
                    Some(why) => Err(format!("{}: {why}", ByteStep::ALL[step].name()).into()),
                }
            })
        })
        .gpu("properties::even_f32::counts_match_the_reference", |device| {
            let steps = [
                EvenHistogram::new(device, EvenStep::OneCopy)?,
                EvenHistogram::new(device, EvenStep::LaneCopies)?,
            ];
            let per_block = BLOCK_SIZE as usize * 8;
            let sizes = props::sizes(&[1, 8, 16, per_block, 2 * per_block], props::max_len(device));
            let inputs = props::input(sizes, 7, f32_value_mixes(), f32_specials(), 4);
            props::check(
                device,
                CASES,
                (0..2usize, ranges(), inputs, places()),
                |(step, range, input, place)| {
                    let Ok(bins) = EvenBins::new(range.bins, range.lower, range.upper) else {
                        return Ok(()); // what is refused is the next property's
                    };
                    let values: Vec<f32> =
                        input.values().into_iter().map(|x| placed(x, place, range)).collect();
                    bins_are_where_they_belong(&values, &bins)?;
                    let data = Guarded::input(device, &values, input.offset)?;
                    let mut counts = device.alloc::<u32>(range.bins as usize)?;
                    counts.fill_words(0xdead_beef)?;
                    steps[step].count(data.view()?, &bins, &mut counts)?;
                    data.check_unchanged("the input")?;
                    mismatch(&even_histogram(&values, &bins), &counts.to_host()?).map_or(
                        Ok(()),
                        |why| {
                            let step = [EvenStep::OneCopy, EvenStep::LaneCopies][step];
                            Err(format!("{step:?}: {why}").into())
                        },
                    )
                },
            )
        })
        .cpu("properties::even_f32::bins_refuse_what_they_cannot_count", || {
            let any_bins = prop_oneof![0..=EvenBins::MAX_BINS + 2, Just(u32::MAX)];
            let bounds = prop_oneof![
                3 => ranges().prop_map(|r| (r.lower, r.upper)),
                1 => (props::f32_specials(), props::f32_specials()),
                1 => (any::<u32>(), any::<u32>())
                    .prop_map(|(a, b)| (f32::from_bits(a), f32::from_bits(b))),
            ];
            props::check_cpu(4096, (any_bins, bounds), |(bins, (lower, upper))| {
                let result = EvenBins::new(bins, lower, upper);
                let bad_count = bins == 0 || bins > EvenBins::MAX_BINS;
                let bad_bounds = !lower.is_finite() || !upper.is_finite() || lower >= upper;
                let width_overflows = !(upper - lower).is_finite();
                if bad_count || bad_bounds || width_overflows {
                    let why = if bad_count {
                        "a bin count"
                    } else if bad_bounds {
                        "bounds"
                    } else {
                        "a width that overflows f32"
                    };
                    return expect_bad_input(
                        &format!("{why}: {bins} bins over [{lower:e}, {upper:e})"),
                        result.map(|_| ()),
                    );
                }
                let ordinary =
                    lower.abs() <= 1e30 && upper.abs() <= 1e30 && width(lower, upper) >= 1e-30;
                match result {
                    Ok(even) => {
                        // Accepted: values spread over the range, each in its bin or the next.
                        let values: Vec<f32> = (0..=64)
                            .map(|k| {
                                (f64::from(lower) + f64::from(k) / 64.0 * width(lower, upper))
                                    as f32
                            })
                            .flat_map(|x| [next_down(x), x, next_up(x)])
                            .collect();
                        bins_are_where_they_belong(&values, &even)
                    }
                    Err(e) if ordinary => {
                        let range = format!("[{lower:e}, {upper:e})");
                        Err(format!("{bins} bins over {range} refused: {e}").into())
                    }
                    Err(_) => Ok(()),
                }
            })
        })
        .gpu("properties::a_bins_buffer_of_another_length_is_an_error", |device| {
            let (bytes, even) = (
                RefCell::new(ByteHistogram::new(device, ByteStep::Runs)?),
                EvenHistogram::new(device, EvenStep::LaneCopies)?,
            );
            props::check(
                device,
                (64, 16),
                (0..600usize, 1..300u32, 0..300usize),
                |(byte_bins, bins, even_len)| {
                    let input = Guarded::input(device, &[1u8, 2, 3], 0)?;
                    if byte_bins != BYTE_BINS {
                        let mut counts = Guarded::output_with(device, 0, byte_bins, 0)?;
                        expect_bad_input(
                            &format!("{byte_bins} byte bins"),
                            bytes.borrow().count(input.view()?, counts.buffer()),
                        )?;
                        counts.check_unchanged("a refused bins buffer")?;
                    }
                    let even_bins = EvenBins::new(bins, 0.0, 1.0)?;
                    if even_len != bins as usize {
                        let values = device.upload(&[0.5f32])?;
                        let mut counts = Guarded::output_with(device, 0, even_len, 0)?;
                        expect_bad_input(
                            &format!("{even_len} counts for {bins} bins"),
                            even.count(values.as_view(), &even_bins, counts.buffer()),
                        )?;
                        counts.check_unchanged("a refused counts buffer")?;
                    }
                    Ok(())
                },
            )
        })
        .run()
}
