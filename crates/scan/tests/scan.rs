//! scan's tests: every step against the CPU scan (exact for integers, within
//! `reference::scan_tolerance` for f32) at edge and large sizes, odd offsets, in place and from
//! host slices; segmented scans; a look-back stress test; launch plans, worked examples and
//! simulator counters as snapshots.

use gpu_harness::{Device, DeviceBuffer, GpuError};
use gpu_test::{
    TestResult, TestRng, TestSuite, counters_comparable, fits_test_time, on_threads, test_size,
};
use rand::RngExt;
use scan::measured::POISON_WORD;
use scan::plan::{SINGLE_PASS_TILE, multi_pass_plan, one_block_plan};
use scan::reference::{scan_mismatch, segmented_mismatch};
use scan::{
    MultiPass, MultiPassScan, OneBlock, OneBlockScan, Scan, ScanElement, ScanKind, SinglePass,
};

/// Elements per single-pass tile (the bulk copy's is twice as large), and about one wave of tiles
/// on an H100/H200 (132 SMs, 8 blocks each).
const TILE: usize = (SINGLE_PASS_TILE.threads * SINGLE_PASS_TILE.items) as usize;
const BULK_TILE: usize = (SINGLE_PASS_TILE.threads * SINGLE_PASS_TILE.bulk_items) as usize;
const WAVE_TILES: usize = 132 * 8;

/// Sizes every single-pass scan is tested at: empty, one, around a warp, a block, a warp's part of
/// a tile, a tile, a wave of tiles, and large sizes that are not powers of two.
fn single_pass_sizes() -> Vec<usize> {
    let warp_part = 32 * SINGLE_PASS_TILE.items as usize;
    let mut sizes = vec![0, 1, 2, 3, 5, 31, 32, 33, 255, 256, 257];
    sizes.extend([
        warp_part - 1,
        warp_part,
        warp_part + 1,
        TILE - 1,
        TILE,
        TILE + 1,
        2 * TILE + 3,
        33 * TILE + 1,
    ]);
    sizes.extend([BULK_TILE - 1, BULK_TILE, BULK_TILE + 1, 2 * BULK_TILE - 1]);
    sizes.extend([WAVE_TILES * TILE - 1, WAVE_TILES * TILE + 1, (1 << 20) + 3, (1 << 26) + 7]);
    sizes
}

/// A scan of `input` with `scan` into a poisoned buffer, checked against the CPU.
fn check_scan<T: ScanElement>(
    device: &Device,
    rng: &TestRng,
    scan: &mut Scan<T>,
    kind: ScanKind,
    host: &[T],
    offset: usize,
) -> TestResult {
    let buffer = device.upload(host)?;
    let input = buffer.view(offset..)?;
    let mut output = device.alloc::<T>(input.len() + 1)?;
    output.fill_words(POISON_WORD)?;
    scan.scan(kind, input, &mut output)?;
    let got = output.to_host()?;
    if let Some(why) = scan_mismatch(kind, &host[offset..], &got[..input.len()]) {
        return Err(rng.fail(format!("{} from offset {offset}: {why}", T::SUFFIX)));
    }
    if !poisoned(got[input.len()]) {
        return Err(rng.fail("the element after the output was overwritten"));
    }
    Ok(())
}

/// Whether a 4-byte element still holds the poison word.
fn poisoned<T: ScanElement>(x: T) -> bool {
    // Every ScanElement is a 4-byte number.
    let bits: u32 = unsafe { std::mem::transmute_copy(&x) };
    bits == POISON_WORD
}

/// Inputs that make every partial sum exact: small integers (as f32, below 2^24 in all), or every
/// bit pattern for integers (sums wrap around).
fn exact_input<T: ScanElement>(rng: &mut TestRng, n: usize) -> Vec<T> {
    if T::EXACT {
        return T::random(rng.rng(), n);
    }
    let bound = ((1usize << 24) / n.max(1)).clamp(1, 8) as i32;
    (0..n).map(|_| T::from_small(rng.rng().random_range(-bound..=bound))).collect()
}

fn typed_suite<T: ScanElement>(mut suite: TestSuite) -> TestSuite {
    let t = T::SUFFIX;
    for kind in ScanKind::BOTH {
        let k = kind.name();
        for n in single_pass_sizes() {
            suite = suite.gpu_if(
                format!("single_pass::{t}::{k}::n_{n}"),
                move |d| fits_test_time(d, n + 3),
                move |device| {
                    let mut rng = TestRng::new();
                    let mut scan = Scan::<T>::new(device)?;
                    // Aligned (16-byte vectors), then every other offset within a vector.
                    let exact = exact_input::<T>(&mut rng, n + 3);
                    for offset in 0..4 {
                        check_scan(device, &rng, &mut scan, kind, &exact[..offset + n], offset)?;
                    }
                    if !T::EXACT {
                        let random = T::random(rng.rng(), n);
                        check_scan(device, &rng, &mut scan, kind, &random, 0)?;
                    }
                    Ok(())
                },
            );
        }
        suite = suite
            .gpu(format!("single_pass::{t}::{k}::random_sizes"), move |device| {
                let mut rng = TestRng::new();
                let mut scan = Scan::<T>::new(device)?;
                for _ in 0..6 {
                    let n = rng.size_in(1..=test_size(device, 5_000_000, 200_000));
                    let offset = rng.size_in(0..=5);
                    let host = exact_input::<T>(&mut rng, n + offset);
                    check_scan(device, &rng, &mut scan, kind, &host, offset)?;
                }
                Ok(())
            })
            .gpu(format!("single_pass::{t}::{k}::in_place_and_host_slices"), move |device| {
                let mut rng = TestRng::new();
                let mut scan = Scan::<T>::new(device)?;
                for n in [0, 1, 33, TILE + 1, 100_003] {
                    let host = exact_input::<T>(&mut rng, n + 2);
                    let mut data = device.upload(&host)?;
                    scan.scan_in_place(kind, &mut data, 1..n + 1)?;
                    let got = data.to_host()?;
                    let in_place = scan_mismatch(kind, &host[1..n + 1], &got[1..n + 1]);
                    let untouched = got[0].same(host[0]) && got[n + 1].same(host[n + 1]);
                    let from_host = scan.scan_host(kind, &host)?;
                    let host_slice = scan_mismatch(kind, &host, &from_host);
                    if let Some(why) = in_place.or(host_slice) {
                        return Err(rng.fail(why));
                    }
                    if !untouched {
                        return Err(rng.fail("an in-place scan wrote outside its range"));
                    }
                }
                Ok(())
            })
            .gpu(format!("single_pass::{t}::{k}::output_at_odd_offsets"), move |device| {
                let mut rng = TestRng::new();
                let mut scan = Scan::<T>::new(device)?;
                let n = 3 * TILE + 17;
                let host = exact_input::<T>(&mut rng, n);
                let input = device.upload(&host)?;
                for at in [1, 2, 3, 5] {
                    let mut output = device.alloc::<T>(n + at)?;
                    output.fill_words(POISON_WORD)?;
                    scan.scan_to(kind, input.as_view(), &mut output, at)?;
                    if let Some(why) = scan_mismatch(kind, &host, &output.to_host()?[at..]) {
                        return Err(rng.fail(format!("output from element {at}: {why}")));
                    }
                }
                Ok(())
            })
            .gpu(format!("other_forms::{t}::{k}"), move |device| {
                let mut rng = TestRng::new();
                for form in [SinglePass::Classic, SinglePass::EarlyLoads, SinglePass::WideLookBack]
                {
                    let mut scan = Scan::<T>::with_form(device, form)?;
                    for n in [
                        1,
                        33,
                        TILE - 1,
                        TILE + 1,
                        BULK_TILE + 1,
                        40 * TILE + 5,
                        test_size(device, (1 << 24) + 3, 1 << 20),
                    ] {
                        let host = exact_input::<T>(&mut rng, n + 1);
                        check_scan(device, &rng, &mut scan, kind, &host, 0)?;
                        check_scan(device, &rng, &mut scan, kind, &host, 1)?;
                    }
                }
                Ok(())
            })
            .gpu(format!("segmented::{t}::{k}"), move |device| {
                let mut rng = TestRng::new();
                let mut scan = Scan::<T>::new(device)?;
                let n = test_size(device, 3_000_017, 200_017);
                let values = exact_input::<T>(&mut rng, n);
                let long_segments: Vec<u8> = (0..n).map(|i| u8::from(i % 50_001 == 7)).collect();
                let random_heads: Vec<u8> =
                    (0..n).map(|_| u8::from(rng.rng().random_range(0..16) == 0)).collect();
                let patterns: [(&str, Vec<u8>); 5] = [
                    ("one segment", (0..n).map(|i| u8::from(i == 0)).collect()),
                    ("no head at all", vec![0; n]),
                    ("every element its own segment", vec![3; n]),
                    ("long segments across many tiles", long_segments),
                    ("random heads", random_heads),
                ];
                for (what, heads) in patterns {
                    let got = scan.segmented_host(kind, &values, &heads)?;
                    if let Some(why) = segmented_mismatch(kind, &values, &heads, &got) {
                        return Err(rng.fail(format!("{what}: {why}")));
                    }
                }
                Ok(())
            });
    }
    suite
}

/// Runs the scan `runs` times at `n` and compares every result bit for bit with the CPU's: a race
/// in the look-back shows as a result that changes from run to run.
fn stress<T: ScanElement>(device: &Device, form: SinglePass, n: usize, runs: usize) -> TestResult {
    let mut rng = TestRng::new();
    let mut scan = Scan::<T>::with_form(device, form)?;
    let host = exact_input::<T>(&mut rng, n);
    let input = device.upload(&host)?;
    let mut output = device.alloc::<T>(n)?;
    let expected = scan::reference::scan(ScanKind::Inclusive, &host);
    for run in 0..runs {
        output.fill_words(POISON_WORD)?;
        scan.inclusive(input.as_view(), &mut output)?;
        let got = output.to_host()?;
        if let Some(wrong) = got.iter().zip(&expected).position(|(g, e)| !g.same(*e)) {
            return Err(rng.fail(format!(
                "{form:?} {}, n = {n}, run {run} of {runs}: element {wrong} is {:?}, expected {:?}",
                T::SUFFIX,
                got[wrong],
                expected[wrong]
            )));
        }
    }
    if scan.state().counter().to_host()? != [0] {
        return Err("the tile counter was not reset to 0 after the launches".into());
    }
    Ok(())
}

fn one_block_suite(mut suite: TestSuite) -> TestSuite {
    for step in OneBlock::ALL {
        let name = step.step();
        suite = suite
            .gpu(format!("{name}::every_block_size"), move |device| {
                let mut rng = TestRng::new();
                let max = step.max_elements();
                let mut sizes =
                    vec![0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 500, max / 2 + 1, max - 1, max];
                sizes.push(rng.size_in(1..=max));
                for n in sizes {
                    check_one_block::<u32>(device, &mut rng, step, n)?;
                    check_one_block::<i32>(device, &mut rng, step, n)?;
                    check_one_block::<f32>(device, &mut rng, step, n)?;
                }
                Ok(())
            })
            .gpu(format!("{name}::too_large_is_an_error"), move |device| {
                let mut scan = OneBlockScan::<f32>::new(device, step)?;
                let input = device.alloc::<f32>(step.max_elements() + 1)?;
                let mut output = device.alloc::<f32>(step.max_elements() + 1)?;
                match scan.scan(input.as_view(), &mut output) {
                    Err(GpuError::TooLarge { .. }) => Ok(()),
                    other => Err(format!("expected TooLarge, got {other:?}").into()),
                }
            });
    }
    suite
}

fn check_one_block<T: ScanElement>(
    device: &Device,
    rng: &mut TestRng,
    step: OneBlock,
    n: usize,
) -> TestResult {
    let mut scan = OneBlockScan::<T>::new(device, step)?;
    let host = exact_input::<T>(rng, n);
    let input = device.upload(&host)?;
    let mut output = device.alloc::<T>(n)?;
    output.fill_words(POISON_WORD)?;
    scan.scan(input.as_view(), &mut output)?;
    match scan_mismatch(scan.kind(), &host, &output.to_host()?) {
        Some(why) => Err(rng.fail(format!("{} {}: {why}", step.step(), T::SUFFIX))),
        None => Ok(()),
    }
}

fn multi_pass_suite(mut suite: TestSuite) -> TestSuite {
    for strategy in MultiPass::ALL {
        let name = strategy.step();
        for n in [
            0,
            1,
            2047,
            2048,
            2049,
            3 * 2048 + 5,
            (1 << 20) + 3,
            2048 * 2048 - 1,
            2048 * 2048 + 1,
            (1 << 26) + 7,
        ] {
            suite = suite.gpu_if(
                format!("{name}::n_{n}"),
                move |d| fits_test_time(d, n),
                move |device| {
                    let mut rng = TestRng::new();
                    check_multi_pass::<u32>(device, &mut rng, strategy, n)?;
                    check_multi_pass::<f32>(device, &mut rng, strategy, n)
                },
            );
        }
        suite = suite.gpu(format!("{name}::random_floats"), move |device| {
            let mut rng = TestRng::new();
            let mut scan = MultiPassScan::<f32>::new(device, strategy)?;
            let host = f32::random(rng.rng(), test_size(device, 3_000_000, 300_000));
            let got = scan.inclusive_host(&host)?;
            match scan_mismatch(ScanKind::Inclusive, &host, &got) {
                Some(why) => Err(rng.fail(why)),
                None => Ok(()),
            }
        });
    }
    suite
}

fn check_multi_pass<T: ScanElement>(
    device: &Device,
    rng: &mut TestRng,
    strategy: MultiPass,
    n: usize,
) -> TestResult {
    let mut scan = MultiPassScan::<T>::new(device, strategy)?;
    let host = exact_input::<T>(rng, n);
    let input = device.upload(&host)?;
    let mut output = device.alloc::<T>(n)?;
    output.fill_words(POISON_WORD)?;
    scan.reserve(n)?;
    scan.poison_scratch(POISON_WORD)?;
    scan.inclusive(input.as_view(), &mut output)?;
    match scan_mismatch(ScanKind::Inclusive, &host, &output.to_host()?) {
        Some(why) => Err(rng.fail(format!("{} {}: {why}", strategy.step(), T::SUFFIX))),
        None => Ok(()),
    }
}

/// Sizes whose launch plans are frozen in the snapshots.
const PLAN_SIZES: &[usize] = &[0, 1, 1000, 2048, 2049, 4096, 1 << 20, (1 << 20) + 3, 1 << 28];

fn plans() -> gpu_harness::Result<String> {
    let mut text = String::new();
    for step in OneBlock::ALL {
        text += &format!("## {}\n", step.step());
        for n in [0, 1, 33, 1000, step.max_elements()] {
            text += &one_block_plan(step, "f32", n)?.to_string();
        }
    }
    for strategy in MultiPass::ALL {
        text += &format!("## {}\n", strategy.step());
        for &n in PLAN_SIZES {
            text += &multi_pass_plan(strategy, "f32", n)?.to_string();
        }
    }
    for form in SinglePass::ALL {
        text += &format!("## {}\n", form.step());
        for &n in PLAN_SIZES {
            text += &form.plan(ScanKind::Inclusive, "f32", n)?.to_string();
        }
    }
    Ok(text)
}

/// Every step on the seed's worked example, and the segmented one.
fn worked_examples(device: &Device) -> gpu_harness::Result<String> {
    let input = [1u32, 2, 3, 4];
    let mut text = format!("input {input:?}\n");
    for step in OneBlock::ALL {
        let mut scan = OneBlockScan::<u32>::new(device, step)?;
        text +=
            &format!("{} ({}): {:?}\n", step.step(), scan.kind().name(), scan.scan_host(&input)?);
    }
    for strategy in MultiPass::ALL {
        let got = MultiPassScan::<u32>::new(device, strategy)?.inclusive_host(&input)?;
        text += &format!("{} (inclusive): {got:?}\n", strategy.step());
    }
    for form in SinglePass::ALL {
        let mut scan = Scan::<u32>::with_form(device, form)?;
        for kind in ScanKind::BOTH {
            text += &format!(
                "{} ({}): {:?}\n",
                form.step(),
                kind.name(),
                scan.scan_host(kind, &input)?
            );
        }
    }
    let heads = [1u8, 0, 1, 0, 0, 1, 0, 0, 0];
    let values = [1u32, 2, 6, 7, 1, 1, 2, 3, 4];
    text += &format!("segmented: heads {heads:?}, values {values:?}\n");
    let mut scan = Scan::<u32>::new(device)?;
    for kind in ScanKind::BOTH {
        text += &format!(
            "segmented ({}): {:?}\n",
            kind.name(),
            scan.segmented_host(kind, &values, &heads)?
        );
    }
    Ok(text)
}

/// The simulator's counters for one launch of `step` on 2048 fixed elements.
fn one_block_counters(step: OneBlock) -> Result<String, gpu_test::Failed> {
    let device = Device::simulator()?;
    let host: Vec<u32> = (0..2048u32).map(|i| i % 7).collect();
    let n = step.max_elements();
    let input = device.upload(&host[..n])?;
    let mut output = device.alloc::<u32>(n)?;
    OneBlockScan::<u32>::new(&device, step)?.scan(input.as_view(), &mut output)?;
    let counters = device.last_launch_counters().ok_or("the simulator recorded no launch")?;
    Ok(format!(
        "{}_u32 on {n} elements, one block of {} threads:\n{counters}",
        step.kernel(),
        step.threads(n)
    ))
}

/// The simulator's counters for the single pass on 16 tiles.
fn single_pass_counters(form: SinglePass) -> Result<String, gpu_test::Failed> {
    let device = Device::simulator()?;
    let n = 16 * TILE;
    let host: Vec<u32> = (0..n as u32).map(|i| i % 7).collect();
    let input = device.upload(&host)?;
    let mut output: DeviceBuffer<u32> = device.alloc(n)?;
    Scan::<u32>::with_form(&device, form)?.inclusive(input.as_view(), &mut output)?;
    let counters = device.last_launch_counters().ok_or("the simulator recorded no launch")?;
    Ok(format!(
        "{} on {n} elements (16 tiles):\n{counters}",
        form.kernel(ScanKind::Inclusive, "u32")
    ))
}

fn main() -> std::process::ExitCode {
    let suite = TestSuite::new();
    let suite = typed_suite::<u32>(typed_suite::<i32>(typed_suite::<f32>(suite)));
    let suite = multi_pass_suite(one_block_suite(suite));
    suite
        .cpu("illustration::launch_plans", || {
            insta::assert_snapshot!("launch_plans", plans()?);
            Ok(())
        })
        .gpu("worked_examples", |device| {
            insta::assert_snapshot!("worked_examples", worked_examples(device)?);
            Ok(())
        })
        .gpu("look_back_stress::few_tiles", |device| {
            let runs = test_size(device, 400, 4);
            for form in SinglePass::ALL {
                stress::<u32>(device, form, 3 * TILE + 5, runs)?;
                stress::<f32>(device, form, 3 * TILE + 5, runs)?;
            }
            Ok(())
        })
        .gpu("look_back_stress::many_waves", |device| {
            let (n, runs) = if device.is_simulated() {
                (WAVE_TILES * TILE / 4, 2)
            } else {
                ((1 << 24) + 3, 100)
            };
            for form in SinglePass::ALL {
                stress::<i32>(device, form, n, runs)?;
                stress::<f32>(device, form, n, runs / 2)?;
            }
            Ok(())
        })
        .gpu("single_pass::f32::nan_and_infinities_propagate_from_where_they_sit", |device| {
            // Every output from a NaN on is NaN, every output before it is untouched; an infinity
            // makes the outputs from it on infinite, until one of the other sign makes them NaN.
            // At the start, in the middle of a tile and in a later tile (through the look-back).
            let mut scan = Scan::<f32>::new(device)?;
            let n = 3 * TILE + 17;
            for at in [0, 7, TILE + 5, 3 * TILE + 16] {
                let mut nan = vec![1.0f32; n];
                nan[at] = f32::NAN;
                let mut infinities = vec![1.0f32; n];
                infinities[at] = f32::INFINITY;
                let later = (at + 3).min(n - 1);
                infinities[later] = f32::NEG_INFINITY;
                for kind in ScanKind::BOTH {
                    let first = if kind == ScanKind::Inclusive { at } else { at + 1 };
                    let got = scan.scan_host(kind, &nan)?;
                    let wrong = (0..n).find(|&i| got[i].is_nan() != (i >= first));
                    let got_inf = scan.scan_host(kind, &infinities)?;
                    let first_nan = if kind == ScanKind::Inclusive { later } else { later + 1 };
                    let expected = |i: usize| {
                        if i >= first_nan && later != at {
                            f32::NAN
                        } else if i >= first {
                            if later == at { f32::NEG_INFINITY } else { f32::INFINITY }
                        } else if kind == ScanKind::Inclusive {
                            i as f32 + 1.0
                        } else {
                            i as f32
                        }
                    };
                    let wrong_inf = (0..n).find(|&i| !got_inf[i].same(expected(i)));
                    if let Some(i) = wrong.or(wrong_inf) {
                        return Err(format!(
                            "{} scan, special value at {at}: element {i} is {} (NaN input) and {} \
                             (infinities), \
                             expected {}",
                            kind.name(),
                            got[i],
                            got_inf[i],
                            expected(i)
                        )
                        .into());
                    }
                }
            }
            Ok(())
        })
        .gpu("single_pass::f32::signed_zeros_and_subnormals", |device| {
            // Subnormals are added exactly (the inclusive output i of 2^-149s is (i + 1) 2^-149).
            // Every output is the scan's identity, +0.0, plus what comes before it, so a prefix of
            // -0.0s gives +0.0 (numpy's cumsum keeps the first element, -0.0, as it is).
            let mut scan = Scan::<f32>::new(device)?;
            let n = 2 * TILE + 3;
            let tiny = scan.inclusive_host(&vec![f32::from_bits(1); n])?;
            if let Some(i) = (0..n).find(|&i| tiny[i].to_bits() != i as u32 + 1) {
                return Err(
                    format!("inclusive scan of 2^-149s: element {i} is {:e}", tiny[i]).into()
                );
            }
            for kind in ScanKind::BOTH {
                let zeros = scan.scan_host(kind, &vec![-0.0f32; n])?;
                if let Some(i) = (0..n).find(|&i| zeros[i].to_bits() != 0) {
                    return Err(format!(
                        "{} scan of -0.0s: element {i} is {:e}",
                        kind.name(),
                        zeros[i]
                    )
                    .into());
                }
            }
            Ok(())
        })
        .gpu("single_pass::integers_wrap_around_modulo_2_pow_32", |device| {
            // As CUDA's (and CUB's) integer adds: i32 and u32 prefix sums wrap; torch.cumsum and
            // numpy.cumsum return int64 for int32 input instead.
            let signed = Scan::<i32>::new(device)?.inclusive_host(&[i32::MAX, 1, 1, i32::MIN])?;
            let unsigned = Scan::<u32>::new(device)?.exclusive_host(&[u32::MAX, 2, 3])?;
            if signed != [i32::MAX, i32::MIN, i32::MIN + 1, 1] || unsigned != [0, u32::MAX, 1] {
                return Err(format!("i32 inclusive {signed:?}, u32 exclusive {unsigned:?}").into());
            }
            Ok(())
        })
        .gpu("scans_from_several_threads", |device| {
            on_threads(4, |i| {
                let mut rng = TestRng::new();
                let mut scan = Scan::<u32>::new(device)?;
                for _ in 0..5 {
                    let host = u32::random(rng.rng(), 10_000 * (i + 1) + 3);
                    if let Some(why) =
                        scan_mismatch(ScanKind::Inclusive, &host, &scan.inclusive_host(&host)?)
                    {
                        return Err(rng.fail(why));
                    }
                }
                Ok(())
            })
        })
        .gpu("bad_input_is_an_error", |device| {
            let mut scan = Scan::<f32>::new(device)?;
            let input = device.alloc::<f32>(100)?;
            let mut small = device.alloc::<f32>(99)?;
            let heads = device.alloc::<u8>(99)?;
            let mut messages = Vec::new();
            for result in [
                scan.inclusive(input.as_view(), &mut small),
                scan.scan_to(ScanKind::Exclusive, input.view(..50)?, &mut small, 60),
                scan.segmented(ScanKind::Inclusive, input.as_view(), heads.as_view(), &mut small),
            ] {
                match result {
                    Err(GpuError::BadInput(message)) => messages.push(message),
                    other => return Err(format!("expected BadInput, got {other:?}").into()),
                }
            }
            insta::assert_snapshot!("bad_input", messages.join("\n"));
            Ok(())
        })
        .nvrtc_if("illustration::counters::blelloch_bank_conflicts", counters_comparable, || {
            insta::assert_snapshot!("blelloch_counters", one_block_counters(OneBlock::Blelloch)?);
            insta::assert_snapshot!(
                "blelloch_padded_counters",
                one_block_counters(OneBlock::BlellochPadded)?
            );
            insta::assert_snapshot!(
                "hillis_steele_counters",
                one_block_counters(OneBlock::HillisSteele)?
            );
            Ok(())
        })
        .nvrtc_if("illustration::counters::single_pass", counters_comparable, || {
            insta::assert_snapshot!(
                "single_pass_counters",
                single_pass_counters(SinglePass::Classic)?
            );
            insta::assert_snapshot!(
                "early_loads_counters",
                single_pass_counters(SinglePass::EarlyLoads)?
            );
            Ok(())
        })
        .run()
}
