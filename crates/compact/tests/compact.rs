//! compact's tests: every step against the CPU filter, exactly, at edge and large sizes, with masks
//! of every density and shape, predicates on NaN, infinities, -0.0 and integer extremes, odd
//! offsets, outputs too small, more than 2^31 elements, several threads on one device; a look-back
//! stress test; launch plans and the worked example as snapshots.

use compact::measured::POISON_WORD;
use compact::plan::{COMPACT_TILE, compact_plan};
use compact::{
    Compact, CompactElement, CompactStep, DeviceKeep, Keep, Predicate, Selection, compact_mismatch,
    cpu_compact,
};
use gpu_harness::{Device, GpuError, GpuShape};
use gpu_test::{
    TestResult, TestRng, TestSuite, enough_memory, fits_test_time, on_threads, test_size,
};
use rand::RngExt;
use scan::{Scan, ScanElement};

const TILE: usize = COMPACT_TILE.threads as usize * COMPACT_TILE.items as usize;
const BLOCK: usize = COMPACT_TILE.threads as usize;
/// Inputs above this size run two of the [`masks`] on the CPU simulator, not all of them.
const SIMULATOR_ALL_MASKS: usize = 1 << 21;

/// Sizes every step is tested at: empty, one, around a warp, a block, a warp's part of a tile, a
/// tile, a wave of tiles, and large sizes that are not powers of two.
fn sizes() -> Vec<usize> {
    let warp_part = 32 * COMPACT_TILE.items as usize;
    let mut sizes = vec![
        0,
        1,
        2,
        3,
        5,
        31,
        32,
        33,
        BLOCK - 1,
        BLOCK,
        BLOCK + 1,
        warp_part - 1,
        warp_part,
        warp_part + 1,
    ];
    sizes.extend([
        TILE - 1,
        TILE,
        TILE + 1,
        2 * TILE + 3,
        33 * TILE + 1,
        (1 << 20) + 3,
        (3 << 22) + 11,
    ]);
    sizes
}

/// The masks each size is tested with: none kept, all, alternating, only the last, only the
/// first, and random densities (mask bytes of any nonzero value keep).
fn masks(rng: &mut TestRng, n: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut random = |share: f64| -> Vec<u8> {
        (0..n)
            .map(|_| if rng.rng().random_bool(share) { rng.rng().random_range(1..=255) } else { 0 })
            .collect()
    };
    let (one_percent, half, most) = (random(0.01), random(0.5), random(0.99));
    vec![
        ("none", vec![0; n]),
        ("all", vec![1; n]),
        ("alternating", (0..n).map(|i| (i % 2 == 0) as u8).collect()),
        ("only the last", (0..n).map(|i| (i + 1 == n) as u8 * 255).collect()),
        ("only the first", (0..n).map(|i| (i == 0) as u8).collect()),
        ("1%", one_percent),
        ("50%", half),
        ("99%", most),
    ]
}

/// Whether a 4-byte element still holds the poison word.
fn poisoned<T: CompactElement>(x: T) -> bool {
    // Every CompactElement is a 4-byte number.
    let bits: u32 = unsafe { std::mem::transmute_copy(&x) };
    bits == POISON_WORD
}

/// One compaction of `values[offset..]` (by `mask[mask_offset..]`, or a test) into a poisoned
/// output one longer than the input, checked against the CPU: the kept elements, the count, and
/// the untouched rest.
fn check<T: CompactElement>(
    device: &Device,
    rng: &TestRng,
    compact: &mut Compact<T>,
    what: &str,
    values: &[T],
    keep: Keep<'_, T>,
    (offset, mask_offset): (usize, usize),
) -> TestResult {
    let buffer = device.upload(values)?;
    let input = buffer.view(offset..)?;
    let n = input.len();
    let mut output = device.alloc::<T>(n + 1)?;
    output.fill_words(POISON_WORD)?;
    let (want, kept) = match keep {
        Keep::Mask(mask) => {
            let mask_buffer = device.upload(mask)?;
            let mask_view = mask_buffer.view(mask_offset..mask_offset + n)?;
            let want =
                cpu_compact(&values[offset..], Keep::Mask(&mask[mask_offset..mask_offset + n]));
            (want, compact.by_mask(input, mask_view, &mut output)?)
        }
        Keep::Test(predicate) => (
            cpu_compact(&values[offset..], keep),
            compact.by_predicate(input, predicate, &mut output)?,
        ),
    };
    let context = format!(
        "{:?} {} n = {n} {what} (offsets {offset}, {mask_offset})",
        compact.step(),
        T::SUFFIX
    );
    if kept != want.len() {
        return Err(rng.fail(format!("{context}: counted {kept} kept, expected {}", want.len())));
    }
    let got = output.to_host()?;
    if let Some(why) = compact_mismatch(&want, &got[..kept]) {
        return Err(rng.fail(format!("{context}: {why}")));
    }
    if let Some(i) = (kept..=n).find(|&i| !poisoned(got[i])) {
        return Err(
            rng.fail(format!("{context}: output element {i}, past the {kept} kept, was written"))
        );
    }
    Ok(())
}

/// [`check`] of each predicate in turn, on the whole of `values`.
fn check_predicates<T: CompactElement>(
    device: &Device,
    rng: &TestRng,
    compact: &mut Compact<T>,
    values: &[T],
    predicates: &[Predicate<T>],
) -> TestResult {
    for &predicate in predicates {
        check(
            device,
            rng,
            compact,
            &format!("{predicate:?}"),
            values,
            Keep::Test(predicate),
            (0, 0),
        )?;
    }
    Ok(())
}

fn step_suite<T: CompactElement>(mut suite: TestSuite, step: CompactStep) -> TestSuite {
    let (s, t) = (step.step(), T::SUFFIX);
    for n in sizes() {
        suite = suite.gpu_if(
            format!("{s}::{t}::masks::n_{n}"),
            move |d| fits_test_time(d, n),
            move |device| {
                let mut rng = TestRng::new();
                let mut compact = Compact::<T>::with_step(device, step)?;
                let values = T::random(rng.rng(), n);
                for (what, mask) in masks(&mut rng, n) {
                    // On the CPU simulator the largest size runs with two of the masks (a GPU runs
                    // them all): the others run the same code over as many tiles.
                    if device.is_simulated()
                        && n > SIMULATOR_ALL_MASKS
                        && !matches!(what, "50%" | "only the last")
                    {
                        continue;
                    }
                    check(device, &rng, &mut compact, what, &values, Keep::Mask(&mask), (0, 0))?;
                }
                Ok(())
            },
        );
    }
    suite
        .gpu(format!("{s}::{t}::predicates"), move |device| {
            let mut rng = TestRng::new();
            let mut compact = Compact::<T>::with_step(device, step)?;
            for n in [1, 33, TILE + 1, test_size(device, (1 << 22) + 5, 70_001)] {
                let values = T::random(rng.rng(), n);
                let pivot = values[rng.rng().random_range(0..n)];
                check_predicates(
                    device,
                    &rng,
                    &mut compact,
                    &values,
                    &[
                        Predicate::Greater(pivot),
                        Predicate::Less(pivot),
                        Predicate::NotEqual(pivot),
                        Predicate::NotNan,
                        Predicate::Greater(T::from_small(0)),
                    ],
                )?;
            }
            Ok(())
        })
        .gpu(format!("{s}::{t}::odd_offsets"), move |device| {
            let mut rng = TestRng::new();
            let mut compact = Compact::<T>::with_step(device, step)?;
            for n in [7, TILE + 9, 5 * TILE + 3] {
                let values = T::random(rng.rng(), n);
                let mask: Vec<u8> = (0..n + 8).map(|_| rng.rng().random_range(0..2)).collect();
                for offsets in [(1, 1), (3, 0), (0, 2), (4, 4), (5, 3)] {
                    check(
                        device,
                        &rng,
                        &mut compact,
                        "50% mask",
                        &values,
                        Keep::Mask(&mask),
                        offsets,
                    )?;
                }
                check(
                    device,
                    &rng,
                    &mut compact,
                    "x > 0",
                    &values,
                    Keep::Test(Predicate::Greater(T::from_small(0))),
                    (3, 0),
                )?;
            }
            Ok(())
        })
        .gpu(format!("{s}::{t}::output_too_small"), move |device| {
            let mut rng = TestRng::new();
            let mut compact = Compact::<T>::with_step(device, step)?;
            let n = 3 * TILE + 17;
            let values = T::random(rng.rng(), n);
            let mask: Vec<u8> = (0..n).map(|i| (i % 3 != 1) as u8).collect();
            let want = cpu_compact(&values, Keep::Mask(&mask));
            let (input, mask_buffer) = (device.upload(&values)?, device.upload(&mask)?);
            for capacity in [0, 1, want.len() / 2, want.len() - 1] {
                let mut output = device.alloc::<T>(capacity)?;
                match compact.by_mask(input.as_view(), mask_buffer.as_view(), &mut output) {
                    Err(GpuError::BadInput(_)) => {}
                    other => {
                        return Err(rng.fail(format!(
                            "{} kept into {capacity}: expected BadInput, got {other:?}",
                            want.len()
                        )));
                    }
                }
                let got = output.to_host()?;
                if let Some(why) = compact_mismatch(&want[..capacity], &got) {
                    return Err(rng.fail(format!("the first {capacity} kept: {why}")));
                }
            }
            let mut exact = device.alloc::<T>(want.len())?;
            if compact.by_mask(input.as_view(), mask_buffer.as_view(), &mut exact)? != want.len() {
                return Err(rng.fail("an output of exactly the kept length was refused"));
            }
            Ok(())
        })
}

/// f32 data built to break a comparison: NaNs, infinities, signed zeros, denormals, extremes.
fn special_floats(rng: &mut TestRng, n: usize) -> Vec<f32> {
    let specials = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-45,
        -1e-45,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1.0,
    ];
    (0..n).map(|_| specials[rng.rng().random_range(0..specials.len())]).collect()
}

fn special_suite(mut suite: TestSuite) -> TestSuite {
    for step in CompactStep::ALL {
        let s = step.step();
        suite = suite
            .gpu(format!("{s}::f32::nan_infinities_signed_zeros"), move |device| {
                let mut rng = TestRng::new();
                let mut compact = Compact::<f32>::with_step(device, step)?;
                for n in [12, TILE + 1, 9 * TILE + 5] {
                    let values = special_floats(&mut rng, n);
                    check_predicates(
                        device,
                        &rng,
                        &mut compact,
                        &values,
                        &[
                            Predicate::NotNan,
                            Predicate::NotEqual(0.0),
                            Predicate::NotEqual(f32::NAN),
                            Predicate::Greater(0.0),
                            Predicate::Less(-0.0),
                            Predicate::Greater(f32::NEG_INFINITY),
                            Predicate::Less(f32::NAN),
                        ],
                    )?;
                    let mask: Vec<u8> = values.iter().map(|x| x.is_nan() as u8).collect();
                    check(
                        device,
                        &rng,
                        &mut compact,
                        "the NaNs by mask",
                        &values,
                        Keep::Mask(&mask),
                        (0, 0),
                    )?;
                }
                Ok(())
            })
            .gpu(
                format!("{s}::f32::nan_payloads_and_signed_zeros_kept_bit_for_bit"),
                move |device| {
                    // Compaction moves the kept values' bits, never computes with them: NaN
                    // payloads (quiet, signalling, negative), -0.0 and subnormals arrive unchanged.
                    let words = [
                        0x7fc0_0000u32,
                        0x7f80_0001,
                        0xffc0_1234,
                        0x8000_0000,
                        0x0000_0001,
                        0x8000_0001,
                    ];
                    let n = 2 * TILE + 5;
                    let values: Vec<f32> =
                        (0..n).map(|i| f32::from_bits(words[i % words.len()])).collect();
                    let bits =
                        |kept: &[f32]| -> Vec<u32> { kept.iter().map(|x| x.to_bits()).collect() };
                    let mut compact = Compact::<f32>::with_step(device, step)?;
                    for mask in
                        [(0..n).map(|i| u8::from(i % 7 != 3)).collect::<Vec<u8>>(), vec![1; n]]
                    {
                        let want = bits(&cpu_compact(&values, Keep::Mask(&mask)));
                        let got = bits(&compact.by_mask_host(&values, &mask)?);
                        if got != want {
                            let i = (0..want.len())
                                .find(|&i| got.get(i) != Some(&want[i]))
                                .unwrap_or(want.len());
                            return Err(format!(
                                "kept {} of {}; element {i}: {:x?}, expected {:x?}",
                                got.len(),
                                want.len(),
                                got.get(i),
                                want.get(i)
                            )
                            .into());
                        }
                    }
                    Ok(())
                },
            )
            .gpu(format!("{s}::integers::extremes"), move |device| {
                let mut rng = TestRng::new();
                let mut signed = Compact::<i32>::with_step(device, step)?;
                let mut unsigned = Compact::<u32>::with_step(device, step)?;
                let n = 2 * TILE + 7;
                let ints: Vec<i32> = (0..n)
                    .map(|_| [i32::MIN, -1, 0, 1, i32::MAX][rng.rng().random_range(0..5)])
                    .collect();
                check_predicates(
                    device,
                    &rng,
                    &mut signed,
                    &ints,
                    &[
                        Predicate::Greater(-1),
                        Predicate::Less(i32::MIN),
                        Predicate::NotEqual(i32::MAX),
                        Predicate::Greater(i32::MIN),
                    ],
                )?;
                let uints: Vec<u32> = ints.iter().map(|&x| x as u32).collect();
                check_predicates(
                    device,
                    &rng,
                    &mut unsigned,
                    &uints,
                    &[Predicate::Greater(u32::MAX / 2), Predicate::Less(1), Predicate::NotNan],
                )?;
                Ok(())
            });
    }
    suite
}

/// The single pass, run many times on inputs of many tiles: any race in the look-back or the
/// staging shows as a wrong count or a misplaced element.
fn stress(device: &Device, n: usize, runs: usize) -> TestResult {
    let mut rng = TestRng::new();
    let mut compact = Compact::<u32>::new(device)?;
    let values = u32::random(rng.rng(), n);
    let mask: Vec<u8> = (0..n).map(|_| rng.rng().random_range(0..2)).collect();
    let want = cpu_compact(&values, Keep::Mask(&mask));
    let (input, flags) = (device.upload(&values)?, device.upload(&mask)?);
    let mut output = device.alloc::<u32>(n)?;
    for run in 0..runs {
        output.fill_words(POISON_WORD)?;
        let kept = compact.by_mask(input.as_view(), flags.as_view(), &mut output)?;
        let got = output.to_host()?;
        if let Some(why) = compact_mismatch(&want, &got[..kept]) {
            return Err(rng.fail(format!("run {run} of {runs}, n = {n}: {why}")));
        }
    }
    Ok(())
}

/// Launch plans of every step at sizes around its tile, on an H100/H200's shape.
fn plans() -> gpu_harness::Result<String> {
    let mut text = String::new();
    for step in CompactStep::ALL {
        for n in [0, 1, TILE, TILE + 1, 1 << 20, 1 << 28] {
            let plan = compact_plan(step, Selection::Mask, "f32", n, GpuShape::HOPPER_132_SMS)?;
            text += &format!("{} by mask, {plan}", step.step());
        }
    }
    Ok(text)
}

/// The seed's worked example: the flags' exclusive scan (the places) and the compaction, by every
/// step.
fn worked_example(device: &Device) -> gpu_harness::Result<String> {
    let input = [3.0f32, 1.0, 8.0, 4.0, 6.0, 5.0, 2.0, 7.0];
    let mask = [1u8, 0, 1, 0, 1, 0, 1, 0];
    let flags: Vec<u32> = mask.iter().map(|&m| u32::from(m)).collect();
    let places = Scan::<u32>::new(device)?.exclusive_host(&flags)?;
    let mut text = format!(
        "input  {input:?}\nmask   {mask:?}\nplaces {places:?} (the exclusive scan of the mask)\n"
    );
    for step in CompactStep::ALL {
        let kept = Compact::<f32>::with_step(device, step)?.by_mask_host(&input, &mask)?;
        text += &format!("{:<18} {kept:?}\n", step.step());
    }
    Ok(text)
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new();
    for step in CompactStep::ALL {
        suite = step_suite::<u32>(step_suite::<i32>(step_suite::<f32>(suite, step), step), step);
    }
    special_suite(suite)
        .cpu("illustration::launch_plans", || {
            insta::assert_snapshot!("launch_plans", plans()?);
            Ok(())
        })
        .gpu("worked_example", |device| {
            insta::assert_snapshot!("worked_example", worked_example(device)?);
            Ok(())
        })
        .gpu("look_back_stress", |device| {
            let (n, runs) =
                if device.is_simulated() { (64 * TILE + 3, 2) } else { ((1 << 24) + 3, 100) };
            stress(device, 3 * TILE + 5, test_size(device, 400, 4))?;
            stress(device, n, runs)
        })
        .gpu_if(
            "single-pass::above_2_pow_31",
            |d| fits_test_time(d, (1 << 31) + 1).or_else(|| enough_memory(d, 20 << 30)),
            |device| {
                // u32 values i (as many as fit below 2^32), every third one kept: the output's
                // element j must be 3 j.
                let n = (1usize << 31) + 4099;
                let values: Vec<u32> = (0..n as u32).collect();
                let mask: Vec<u8> = (0..n).map(|i| (i % 3 == 0) as u8).collect();
                let mut compact = Compact::<u32>::new(device)?;
                let (input, flags) = (device.upload(&values)?, device.upload(&mask)?);
                drop((values, mask));
                let kept =
                    compact.compact_new(input.as_view(), DeviceKeep::Mask(flags.as_view()))?;
                if kept.len != n.div_ceil(3) {
                    return Err(
                        format!("kept {} of {n}, expected {}", kept.len, n.div_ceil(3)).into()
                    );
                }
                let got = kept.to_host()?;
                match got.iter().enumerate().find(|&(j, &x)| x as usize != 3 * j) {
                    None => Ok(()),
                    Some((j, x)) => {
                        Err(format!("kept element {j} is {x}, expected {}", 3 * j).into())
                    }
                }
            },
        )
        .gpu("compactions_from_several_threads", |device| {
            on_threads(4, |i| {
                let mut rng = TestRng::new();
                let mut compact = Compact::<f32>::new(device)?;
                for _ in 0..5 {
                    let n = 10_000 * (i + 1) + 3;
                    let values = f32::random(rng.rng(), n);
                    let predicate = Predicate::Greater(0.25 * i as f32 - 0.5);
                    let got = compact.by_predicate_host(&values, predicate)?;
                    if let Some(why) =
                        compact_mismatch(&cpu_compact(&values, Keep::Test(predicate)), &got)
                    {
                        return Err(rng.fail(why));
                    }
                }
                Ok(())
            })
        })
        .gpu("bad_input_is_an_error", |device| {
            let mut compact = Compact::<f32>::new(device)?;
            let input = device.alloc::<f32>(100)?;
            let mask = device.alloc::<u8>(99)?;
            let mut output = device.alloc::<f32>(100)?;
            let mut messages = Vec::new();
            match compact.by_mask(input.as_view(), mask.as_view(), &mut output) {
                Err(GpuError::BadInput(message)) => messages.push(message),
                other => return Err(format!("expected BadInput, got {other:?}").into()),
            }
            let too_many = compact_plan(
                CompactStep::SinglePass,
                Selection::Test,
                "f32",
                (1 << 32) + 1,
                GpuShape::HOPPER_132_SMS,
            );
            match too_many {
                Err(e @ GpuError::TooLarge { .. }) => messages.push(e.to_string()),
                other => return Err(format!("expected TooLarge, got {other:?}").into()),
            }
            if compact.by_predicate(input.view(..0)?, Predicate::NotNan, &mut output)? != 0 {
                return Err("an empty input kept something".into());
            }
            insta::assert_snapshot!("bad_input", messages.join("\n"));
            Ok(())
        })
        .run()
}
