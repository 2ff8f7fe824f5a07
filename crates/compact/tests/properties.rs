//! compact's property tests (proptest, `gpu_test::props`): every step's compaction of f32, i32 and
//! u32, by a mask and by a predicate, against the CPU filter on drawn inputs (sizes around warps,
//! blocks and tiles, offsets into a buffer for the values and the mask, NaN with payloads,
//! infinities, subnormals, -0.0, the largest magnitudes, integer extremes, all-equal data; masks of
//! every density; thresholds that are NaN, -0.0 or an input's own value). The kept values must be
//! the CPU's bit for bit, in order, and their count; nothing is written past the kept ones; the
//! values and the mask are left as they were; the same input at another offset keeps the same; a
//! mask of another length and an output too small are errors. A failure prints its smallest input
//! and the seed: `TEST_SEED=<seed> cargo test -p compact --test properties` replays it.

use std::cell::RefCell;

use compact::plan::COMPACT_TILE;
use compact::{
    Compact, CompactElement, CompactStep, DeviceKeep, Keep, Predicate, compact_mismatch,
    cpu_compact,
};
use gpu_harness::Device;
use gpu_test::TestSuite;
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{self, ByteMix, Drawn, Guarded, Input, expect_bad_input};

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 16);

/// Sizes around a warp, a block, a warp's part of a tile, a tile and a few tiles; any size up to
/// 40,000 on the simulator (five tiles), 2^21 on a GPU.
fn compact_sizes(device: &Device) -> BoxedStrategy<usize> {
    let (block, tile) = (COMPACT_TILE.threads as usize, COMPACT_TILE.elements() as usize);
    let warp_part = 32 * COMPACT_TILE.items as usize;
    props::sizes(
        &[1, 32, block, warp_part, tile, 2 * tile, 4 * tile, 129 * tile],
        props::max_len(device),
    )
}

/// An element type a compaction takes, with the shared mixtures.
trait Element: CompactElement + Drawn {}
impl<T: CompactElement + Drawn> Element for T {}

/// A predicate: which test (`Greater`, `Less`, `NotEqual`, `NotNan`) and its threshold, either a
/// special value or (when `from_input` is given) the input's value at that place.
#[derive(Debug, Clone)]
struct Test<T> {
    which: u8,
    special: T,
    from_input: Option<usize>,
}

impl<T: Element> Test<T> {
    fn predicate(&self, values: &[T]) -> Predicate<T> {
        let threshold = match self.from_input {
            Some(at) if !values.is_empty() => values[at % values.len()],
            _ => self.special,
        };
        match self.which {
            0 => Predicate::Greater(threshold),
            1 => Predicate::Less(threshold),
            2 => Predicate::NotEqual(threshold),
            _ => Predicate::NotNan,
        }
    }
}

fn tests<T: Element>() -> impl Strategy<Value = Test<T>> {
    (0..4u8, T::specials(), prop::option::of(any::<usize>()))
        .prop_map(|(which, special, from_input)| Test { which, special, from_input })
}

/// The output room: as long as the input plus a guard (so a write past the kept elements shows),
/// or (`short` set, one case in eight) fewer than are kept, which must be an error.
#[derive(Debug, Clone, Copy)]
struct Room {
    short: bool,
    fraction: u8,
}

fn rooms() -> impl Strategy<Value = Room> {
    (0..8u8, any::<u8>()).prop_map(|(short, fraction)| Room { short: short == 0, fraction })
}

/// Compacts `values` (at `offset`) by `keep` (a mask given with its offset, or a test) with
/// `compact` into an output of the given room, and checks everything a compaction promises.
fn check<T: Element>(
    device: &Device,
    compact: &mut Compact<T>,
    values: &[T],
    offset: usize,
    keep: Keep<'_, T>,
    mask_offset: usize,
    room: Room,
) -> Result<Vec<T>, gpu_test::Failed> {
    let want = cpu_compact(values, keep);
    let input = Guarded::input(device, values, offset)?;
    let mask = match keep {
        Keep::Mask(mask) => Some(Guarded::input(device, mask, mask_offset)?),
        Keep::Test(_) => None,
    };
    let device_keep = match (&mask, keep) {
        (Some(mask), _) => DeviceKeep::Mask(mask.view()?),
        (None, Keep::Test(predicate)) => DeviceKeep::Test(predicate),
        (None, Keep::Mask(_)) => unreachable!("a mask was uploaded"),
    };
    let capacity = if room.short && !want.is_empty() {
        want.len() * usize::from(room.fraction) / 256
    } else {
        values.len() + props::GUARD
    };
    let mut output = Guarded::output_with(device, 0, capacity, 0)?;
    let result = compact.compact(input.view()?, device_keep, output.buffer());
    input.check_unchanged("the values")?;
    if let Some(mask) = &mask {
        mask.check_unchanged("the mask")?;
    }
    let got = output.read()?;
    if capacity < want.len() {
        expect_bad_input(&format!("{} kept into an output of {capacity}", want.len()), result)?;
        // The output holds the first ones kept.
        return compact_mismatch(&want[..capacity], &got)
            .map_or(Ok(want), |why| Err(format!("the first {capacity} kept: {why}").into()));
    }
    let kept = result?;
    if kept != want.len() {
        return Err(format!("counted {kept} kept, expected {}", want.len()).into());
    }
    if let Some(why) = compact_mismatch(&want, &got[..kept]) {
        return Err(why.into());
    }
    if let Some(i) = (kept..capacity).find(|&i| !got[i].same_bits(T::poison())) {
        return Err(format!("output element {i}, past the {kept} kept, was written").into());
    }
    Ok(want)
}

/// One compaction launcher per step.
fn launchers<T: Element>(device: &Device) -> gpu_harness::Result<RefCell<Vec<Compact<T>>>> {
    let mut all = Vec::new();
    for step in CompactStep::ALL {
        all.push(Compact::<T>::with_step(device, step)?);
    }
    Ok(RefCell::new(all))
}

fn steps() -> impl Strategy<Value = usize> {
    0..CompactStep::ALL.len()
}

fn masks() -> impl Strategy<Value = (ByteMix, u64, usize)> {
    (props::flag_mixes(), any::<u64>(), 0..8usize)
}

fn typed<T: Element>(suite: TestSuite) -> TestSuite {
    let t = T::SUFFIX;
    suite
        .gpu(format!("properties::{t}::by_mask_matches_the_reference"), |device| {
            let compacts = launchers::<T>(device)?;
            let inputs = props::input(compact_sizes(device), 7, T::value_mixes(), T::specials(), 4);
            props::check(
                device,
                CASES,
                (steps(), inputs, masks(), rooms()),
                |(step, input, (mix, seed, mask_offset), room)| {
                    let values = input.values();
                    let mask = Input {
                        len: values.len(),
                        offset: mask_offset,
                        mix,
                        seed,
                        specials: vec![],
                    }
                    .values();
                    let compact = &mut compacts.borrow_mut()[step];
                    check(
                        device,
                        compact,
                        &values,
                        input.offset,
                        Keep::Mask(&mask),
                        mask_offset,
                        room,
                    )
                    .map(drop)
                },
            )
        })
        .gpu(format!("properties::{t}::by_predicate_matches_the_reference"), |device| {
            let compacts = launchers::<T>(device)?;
            let inputs = props::input(compact_sizes(device), 7, T::value_mixes(), T::specials(), 4);
            props::check(
                device,
                CASES,
                (steps(), inputs, tests::<T>(), rooms()),
                |(step, input, test, room)| {
                    let values = input.values();
                    let predicate = test.predicate(&values);
                    let compact = &mut compacts.borrow_mut()[step];
                    check(device, compact, &values, input.offset, Keep::Test(predicate), 0, room)
                        .map(drop)
                        .map_err(|failed| {
                            format!("{predicate:?}: {}", failed.message().unwrap_or("failed"))
                                .into()
                        })
                },
            )
        })
}

fn main() -> std::process::ExitCode {
    typed::<u32>(typed::<i32>(typed::<f32>(TestSuite::new())))
        .gpu("properties::same_compaction_at_any_offset", |device| {
            let compacts = launchers::<f32>(device)?;
            let inputs =
                props::input(compact_sizes(device), 7, f32::value_mixes(), f32::specials(), 4);
            let room = Room { short: false, fraction: 0 };
            props::check(
                device,
                CASES,
                (steps(), inputs, masks(), 0..8usize, 0..8usize),
                |(step, input, (mix, seed, a), other, b)| {
                    let values = input.values();
                    let mask = Input { len: values.len(), offset: a, mix, seed, specials: vec![] }
                        .values();
                    let compact = &mut compacts.borrow_mut()[step];
                    // `check` compares each with the CPU's, so they also agree with each other.
                    check(device, compact, &values, input.offset, Keep::Mask(&mask), a, room)?;
                    check(device, compact, &values, other, Keep::Mask(&mask), b, room).map(drop)
                },
            )
        })
        .gpu("properties::a_mask_of_another_length_is_an_error", |device| {
            let compacts = launchers::<u32>(device)?;
            let lengths = (steps(), 0..20_000usize, 0..20_000usize);
            props::check(device, (256, 32), lengths, |(step, n, mask_len)| {
                let mask_len = if mask_len == n { n + 1 } else { mask_len };
                let input = Guarded::input(device, &vec![7u32; n], 0)?;
                let mask = device.alloc::<u8>(mask_len)?;
                let mut output = Guarded::output_with(device, 0, n, 0)?;
                let result = compacts.borrow_mut()[step].by_mask(
                    input.view()?,
                    mask.as_view(),
                    output.buffer(),
                );
                expect_bad_input(&format!("{n} values by a mask of {mask_len}"), result)?;
                output.check_unchanged("the output of a refused compaction")?;
                input.check_unchanged("the values")
            })
        })
        .run()
}
