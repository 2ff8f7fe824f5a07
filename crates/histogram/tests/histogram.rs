//! histogram's tests: every byte step against the CPU histogram, exactly, on inputs built to make
//! lanes collide (uniform, all equal, two values alternating, one value in a sea of another, text)
//! at edge sizes and odd offsets; the packed counters past what 16 bits hold; f32 even bins on bin
//! edges, bounds, NaN, infinities and a range where rounding reaches bin `bins`; errors; and
//! snapshots of launch plans, of the counts of a fixed input and of the simulator's counters.

use gpu_harness::{Device, DeviceBuffer, GpuError, GpuShape};
use gpu_test::{
    TestResult, TestRng, TestSuite, counters_comparable, enough_memory, fits_test_time, on_threads,
    rows, test_size,
};
use histogram::reference::{byte_histogram, even_histogram, mismatch};
use histogram::{
    BLOCK_SIZE, BYTE_BINS, ByteHistogram, ByteStep, EvenBins, EvenHistogram, EvenStep,
    PACKED_COUNTER_MAX, packed_flush_rounds,
};
use rand::RngExt;

/// The inputs that make lanes collide in different ways.
#[derive(Debug, Clone, Copy)]
enum Pattern {
    /// Random bytes: lanes rarely share a bin, but often a bank.
    Uniform,
    /// One value: every lane of every warp adds to the same bin.
    AllEqual,
    /// Two values, alternating: half the lanes on each of two bins.
    Alternating,
    /// One value in a sea of another: 1 byte in 1000 differs.
    Sea,
    /// English text: a few dozen bins, very unequal.
    Text,
}

const PATTERNS: [Pattern; 5] =
    [Pattern::Uniform, Pattern::AllEqual, Pattern::Alternating, Pattern::Sea, Pattern::Text];

const TEXT: &str = "It was the best of times, it was the worst of times, it was the age of \
                    wisdom, it was the \
                    age of foolishness, it was the epoch of belief, it was the epoch of \
                    incredulity.\n";

fn make(pattern: Pattern, n: usize, rng: &mut TestRng) -> Vec<u8> {
    let r = rng.rng();
    match pattern {
        Pattern::Uniform => (0..n).map(|_| r.random::<u8>()).collect(),
        Pattern::AllEqual => vec![r.random::<u8>(); n],
        Pattern::Alternating => {
            let (a, b) = (r.random::<u8>(), r.random::<u8>());
            (0..n).map(|i| if i % 2 == 0 { a } else { b }).collect()
        }
        Pattern::Sea => {
            let (sea, island) = (r.random::<u8>(), r.random::<u8>());
            (0..n).map(|_| if r.random_range(0..1000) == 0 { island } else { sea }).collect()
        }
        Pattern::Text => TEXT.bytes().cycle().skip(r.random_range(0..TEXT.len())).take(n).collect(),
    }
}

/// Sizes around the kernels' boundaries: a vector, a block of threads, the bytes a block counts per
/// iteration (512 threads x 32 bytes), a full wave of blocks on this device, and a large odd size.
fn sizes(device: &Device) -> Vec<usize> {
    let block = BLOCK_SIZE as usize;
    let per_block = block * 32;
    let wave = device.facts().shape().resident_blocks(BLOCK_SIZE) as usize * per_block;
    let mut sizes = vec![
        0,
        1,
        15,
        16,
        17,
        33,
        block - 1,
        block,
        block + 1,
        per_block - 1,
        per_block,
        per_block + 1,
    ];
    sizes.extend([wave - 1, wave + 17, (1 << 20) + 3]);
    sizes.retain(|&n| fits_test_time(device, n).is_none());
    sizes
}

/// Counts `host[offset..]` with `histogram` (bins poisoned first) and compares with the CPU.
fn check_bytes(
    device: &Device,
    rng: &TestRng,
    histogram: &ByteHistogram,
    host: &[u8],
    offset: usize,
) -> TestResult {
    let buffer = device.upload(host)?;
    let mut bins = device.alloc::<u32>(BYTE_BINS)?;
    bins.fill_words(0xdead_beef)?;
    histogram.count(buffer.view(offset..)?, &mut bins)?;
    let got = bins.to_host()?;
    match mismatch(&byte_histogram(&host[offset..]), &got) {
        None => Ok(()),
        Some(why) => Err(rng.fail(format!(
            "{}: {} bytes at offset {offset}: {why}",
            histogram.step().name(),
            host.len() - offset
        ))),
    }
}

fn byte_tests(mut suite: TestSuite) -> TestSuite {
    for step in ByteStep::ALL {
        let name = step.name();
        for pattern in PATTERNS {
            suite = suite.gpu(format!("{name}::{pattern:?}_at_edge_sizes"), move |device| {
                let mut rng = TestRng::new();
                let histogram = ByteHistogram::new(device, step)?;
                for n in sizes(device) {
                    let host = make(pattern, n, &mut rng);
                    check_bytes(device, &rng, &histogram, &host, 0)?;
                }
                Ok(())
            });
        }
        suite = suite
            .gpu(format!("{name}::odd_offsets"), move |device| {
                let mut rng = TestRng::new();
                let histogram = ByteHistogram::new(device, step)?;
                let host = make(Pattern::Uniform, 100_003, &mut rng);
                for (start, end) in [
                    (1, host.len() - 2),
                    (3, 3),
                    (7, 8),
                    (5, 4100),
                    (15, 15 + 16 + 33),
                    (9, 16_393),
                ] {
                    check_bytes(device, &rng, &histogram, &host[..end], start)?;
                }
                let equal = make(Pattern::AllEqual, 70_001, &mut rng);
                check_bytes(device, &rng, &histogram, &equal, 13)
            })
            .gpu(format!("{name}::random_sizes"), move |device| {
                let mut rng = TestRng::new();
                let histogram = ByteHistogram::new(device, step)?;
                for _ in 0..3 {
                    let n = rng.size_in(1..=test_size(device, 5_000_000, 200_000));
                    let pattern = PATTERNS[rng.size_in(0..=PATTERNS.len() - 1)];
                    let host = make(pattern, n, &mut rng);
                    check_bytes(device, &rng, &histogram, &host, 0)?;
                }
                Ok(())
            })
            .gpu(format!("{name}::counts_of_fixed_text"), move |device| {
                let text: Vec<u8> = TEXT.bytes().cycle().take(5000).collect();
                let got = ByteHistogram::new(device, step)?.count_host(&text)?;
                if let Some(why) = mismatch(&byte_histogram(&text), &got) {
                    return Err(format!("{name}: {why}").into());
                }
                insta::assert_snapshot!("counts_of_fixed_text", nonzero_counts(&got));
                Ok(())
            })
            .nvrtc_if(
                format!("illustration::{name}::simulator_counters"),
                counters_comparable,
                move || {
                    insta::assert_snapshot!(
                        format!("{name}_simulator_counters"),
                        byte_counters(step)?
                    );
                    Ok(())
                },
            );
    }
    suite
}

/// `bin: count` for every non-empty bin, the byte shown as a character where it prints.
fn nonzero_counts(counts: &[u32]) -> String {
    let cells: Vec<String> = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(b, c)| {
            let ch = char::from(b as u8);
            if ch.is_ascii_graphic() { format!("'{ch}' {c}") } else { format!("{b:#04x} {c}") }
        })
        .collect();
    rows(&cells, 6)
}

/// What one launch of `step` does on the simulator on 8192 uniform bytes and on 8192 equal bytes.
fn byte_counters(step: ByteStep) -> Result<String, gpu_test::Failed> {
    let device = Device::simulator()?;
    let histogram = ByteHistogram::new(&device, step)?;
    let mut text = String::new();
    for (what, host) in fixed_byte_inputs() {
        let buffer = device.upload(&host)?;
        let mut bins = device.alloc::<u32>(BYTE_BINS)?;
        histogram.count(buffer.as_view(), &mut bins)?;
        if let Some(why) = mismatch(&byte_histogram(&host), &bins.to_host()?) {
            return Err(format!("{}: {why}", step.name()).into());
        }
        let counters = device.last_launch_counters().ok_or("the simulator recorded no launch")?;
        let plan = histogram.plan(host.len())?;
        text += &format!("{} on {what}:\n{plan}\n{counters}\n", step.kernel());
    }
    Ok(text)
}

/// 8192 bytes of a fixed pseudo-random sequence, and 8192 equal bytes.
fn fixed_byte_inputs() -> [(&'static str, Vec<u8>); 2] {
    let mut state = 12345u32;
    let uniform = (0..8192)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        })
        .collect();
    [("8192 uniform bytes", uniform), ("8192 equal bytes", vec![42; 8192])]
}

fn packed_tests(suite: TestSuite) -> TestSuite {
    suite
        .cpu("packed::flush_comes_before_a_counter_overflows", || {
            // A round adds at most 16 warps x 32 bytes to one counter; the head and tail 2 more.
            let rounds = packed_flush_rounds();
            let most = rounds * (BLOCK_SIZE / 32) * 32 + 2;
            let one_more = (rounds + 1) * (BLOCK_SIZE / 32) * 32 + 2;
            if most > PACKED_COUNTER_MAX || one_more <= PACKED_COUNTER_MAX {
                return Err(format!(
                    "{rounds} rounds between flushes reach {most}, one more {one_more}"
                )
                .into());
            }
            Ok(())
        })
        .gpu("packed::more_equal_bytes_per_block_than_a_counter_holds", |device| {
            // One block: every lane's counter of the bin gets 2^21 / 32 = 65536 > 65535 increments
            // (with a few more bytes for a head and a tail), so only the flushes keep it exact.
            let rng = TestRng::new();
            let histogram = ByteHistogram::new(device, ByteStep::Packed)?;
            let n = (1 << 21) + 20;
            let host = vec![200u8; n];
            let buffer = device.upload(&host)?;
            let view = buffer.view(3..)?;
            let mut plan = histogram.plan(view.len())?;
            plan.launch = plan.launch.map(|mut config| {
                config.grid.0 = 1;
                config
            });
            let mut bins = device.alloc::<u32>(BYTE_BINS)?;
            bins.fill_words(0xdead_beef)?;
            histogram.count_with_plan(view, &mut bins, &plan)?;
            if let Some(why) = mismatch(&byte_histogram(&host[3..]), &bins.to_host()?) {
                return Err(rng.fail(format!("one block, {} equal bytes: {why}", n - 3)));
            }
            Ok(())
        })
        .gpu("packed::flushing_every_round", |device| {
            let mut rng = TestRng::new();
            let histogram = ByteHistogram::new(device, ByteStep::Packed)?;
            for pattern in [Pattern::Uniform, Pattern::AllEqual, Pattern::Sea] {
                let host = make(pattern, test_size(device, 3_000_017, 300_017), &mut rng);
                let buffer = device.upload(&host)?;
                let mut plan = histogram.plan(host.len())?;
                plan.flush_rounds = 1;
                let mut bins = device.alloc::<u32>(BYTE_BINS)?;
                bins.fill_words(0xdead_beef)?;
                histogram.count_with_plan(buffer.as_view(), &mut bins, &plan)?;
                if let Some(why) = mismatch(&byte_histogram(&host), &bins.to_host()?) {
                    return Err(rng.fail(format!("{pattern:?}, a flush every round: {why}")));
                }
            }
            Ok(())
        })
        .gpu("packed::flush_interval_out_of_range_is_an_error", |device| {
            let histogram = ByteHistogram::new(device, ByteStep::Packed)?;
            let buffer = device.upload(&[1u8; 100])?;
            let mut bins = device.alloc::<u32>(BYTE_BINS)?;
            for rounds in [0, packed_flush_rounds() + 1] {
                let mut plan = histogram.plan(100)?;
                plan.flush_rounds = rounds;
                match histogram.count_with_plan(buffer.as_view(), &mut bins, &plan) {
                    Err(GpuError::BadInput(_)) => {}
                    other => {
                        return Err(format!(
                            "flush every {rounds} rounds: expected BadInput, got {other:?}"
                        )
                        .into());
                    }
                }
            }
            Ok(())
        })
}

/// The largest input a u32 count allows, on GPUs with the memory: zeros, with markers at the first
/// byte, both sides of 2^31 and the last. An index that wraps or stops early loses a marker.
fn largest_input_test(suite: TestSuite) -> TestSuite {
    let n = u32::MAX as usize;
    suite.gpu_if(
        "bytes::markers_up_to_2_pow_32_minus_1",
        move |d| fits_test_time(d, n).or_else(|| enough_memory(d, 6 << 30)),
        move |device| {
            let mut host = vec![0u8; n];
            for (at, value) in [(0, 1u8), ((1 << 31) - 1, 2), (1 << 31, 3), (n - 1, 4)] {
                host[at] = value;
            }
            let buffer = device.upload(&host)?;
            drop(host);
            let mut expected = vec![0u32; BYTE_BINS];
            expected[0] = u32::MAX - 4;
            expected[1..5].fill(1);
            let mut bins = device.alloc::<u32>(BYTE_BINS)?;
            // Global atomics would take seconds here; the other steps all read 16 or 1 bytes at a
            // time.
            for step in ByteStep::ALL.into_iter().filter(|&s| s != ByteStep::GlobalAtomics) {
                bins.fill_words(0xdead_beef)?;
                ByteHistogram::new(device, step)?.count(buffer.as_view(), &mut bins)?;
                if let Some(why) = mismatch(&expected, &bins.to_host()?) {
                    return Err(format!("{}: 2^32 - 1 bytes: {why}", step.name()).into());
                }
            }
            Ok(())
        },
    )
}

// ---- f32 even bins ----

/// Counts `host[offset..]` into `bins` with `step` (counts poisoned first) and compares.
fn check_even(
    device: &Device,
    rng: &TestRng,
    step: EvenStep,
    bins: &EvenBins,
    host: &[f32],
    offset: usize,
) -> TestResult {
    let histogram = EvenHistogram::new(device, step)?;
    let buffer = device.upload(host)?;
    let mut counts = device.alloc::<u32>(bins.bins() as usize)?;
    counts.fill_words(0xdead_beef)?;
    histogram.count(buffer.view(offset..)?, bins, &mut counts)?;
    match mismatch(&even_histogram(&host[offset..], bins), &counts.to_host()?) {
        None => Ok(()),
        Some(why) => Err(rng.fail(format!(
            "{}: {} values at offset {offset} into {bins:?}: {why}",
            step.name(),
            host.len() - offset
        ))),
    }
}

/// The next f32 below `x` (for positive, finite x).
fn below(x: f32) -> f32 {
    if x > 0.0 {
        f32::from_bits(x.to_bits() - 1)
    } else if x == 0.0 {
        -f32::from_bits(1)
    } else {
        f32::from_bits(x.to_bits() + 1)
    }
}

/// Values on and around every edge of `bins`, outside the range, and the non-finite ones.
fn edge_values(bins: &EvenBins) -> Vec<f32> {
    let (lower, upper) = (bins.lower(), bins.upper());
    let width = (f64::from(upper) - f64::from(lower)) / f64::from(bins.bins());
    let mut values = vec![lower, below(upper), upper, below(lower), upper * 2.0 + 1.0, lower - 1.0];
    values.extend([
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::MIN_POSITIVE / 2.0,
    ]);
    values.extend([f32::MAX, f32::MIN]);
    for k in 0..=bins.bins() {
        let edge = (f64::from(lower) + width * f64::from(k)) as f32;
        values.extend([edge, below(edge), f32::from_bits(edge.to_bits().wrapping_add(1))]);
    }
    values
}

/// Even bins whose last value below `upper` rounds to bin `bins` before the clamp: a search, so the
/// test says so if none exists (it would then test nothing).
fn rounding_reaches_bins() -> Option<EvenBins> {
    for bins in 1..=4096u32 {
        for (lower, upper) in
            [(0.1f32, 0.7f32), (-1.0, 0.3), (1000.0, 1000.5), (0.0, 0.1), (-3.3, -0.7)]
        {
            let b = EvenBins::new(bins, lower, upper).ok()?;
            let x = below(upper);
            if (x - lower) * b.scale() >= bins as f32 {
                return Some(b);
            }
        }
    }
    None
}

fn even_tests(mut suite: TestSuite) -> TestSuite {
    for step in [EvenStep::OneCopy, EvenStep::LaneCopies] {
        let name = step.name();
        suite = suite
            .gpu(format!("{name}::edges_bounds_nan_and_infinities"), move |device| {
                let rng = TestRng::new();
                for (count, lower, upper) in
                    [(256, 0.0f32, 1.0f32), (7, -2.5, 3.25), (1, -1.0, 1.0), (1000, 1e-3, 1e3)]
                {
                    let bins = EvenBins::new(count, lower, upper)?;
                    let values = edge_values(&bins);
                    // Many copies, so every lane sees every edge.
                    let host: Vec<f32> =
                        values.iter().cycle().take(values.len() * 37).copied().collect();
                    check_even(device, &rng, step, &bins, &host, 0)?;
                }
                Ok(())
            })
            .gpu(format!("{name}::rounding_never_reaches_bin_bins"), move |device| {
                let rng = TestRng::new();
                let bins = rounding_reaches_bins()
                    .ok_or("no range found where rounding reaches bin `bins`")?;
                let x = below(bins.upper());
                let host = vec![x; 1000];
                check_even(device, &rng, step, &bins, &host, 0)?;
                let counts = EvenHistogram::new(device, step)?.count_host(&host, &bins)?;
                if counts[bins.bins() as usize - 1] != 1000 {
                    return Err(format!(
                        "{x} below {}: expected in the last bin, got {counts:?}",
                        bins.upper()
                    )
                    .into());
                }
                Ok(())
            })
            .gpu(format!("{name}::random_values_sizes_and_offsets"), move |device| {
                let mut rng = TestRng::new();
                for count in [1, 7, 256, 1000, EvenBins::MAX_BINS] {
                    let bins = EvenBins::new(count, -1.0, 3.0)?;
                    for n in [
                        0,
                        1,
                        3,
                        4,
                        5,
                        511,
                        4096 + 3,
                        test_size(device, (1 << 22) + 3, (1 << 18) + 3),
                    ] {
                        let host = rng.uniform_f32(n + 3, -1.5, 3.5);
                        for offset in [0, 1, 2, 3] {
                            check_even(device, &rng, step, &bins, &host[..n + offset], offset)?;
                        }
                    }
                }
                Ok(())
            })
            .gpu(format!("{name}::all_equal_values"), move |device| {
                let rng = TestRng::new();
                let bins = EvenBins::new(256, 0.0, 1.0)?;
                let host = vec![0.5f32; test_size(device, 3_000_001, 200_001)];
                check_even(device, &rng, step, &bins, &host, 0)
            })
            .nvrtc_if(
                format!("illustration::{name}::simulator_counters"),
                counters_comparable,
                move || {
                    let device = Device::simulator()?;
                    let bins = EvenBins::new(256, 0.0, 1.0)?;
                    let histogram = EvenHistogram::new(&device, step)?;
                    let mut text = String::new();
                    let mut state = 7u32;
                    let uniform: Vec<f32> = (0..4096)
                        .map(|_| {
                            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                            (state >> 8) as f32 / (1 << 24) as f32
                        })
                        .collect();
                    for (what, host) in [
                        ("4096 uniform values", uniform),
                        ("4096 equal values", vec![0.5f32; 4096]),
                    ] {
                        let counts = histogram.count_host(&host, &bins)?;
                        if let Some(why) = mismatch(&even_histogram(&host, &bins), &counts) {
                            return Err(format!("{name}: {why}").into());
                        }
                        let counters = device
                            .last_launch_counters()
                            .ok_or("the simulator recorded no launch")?;
                        let plan = histogram.plan(host.len(), &bins)?;
                        text += &format!("histogram_even_f32 on {what}:\n{plan}\n{counters}\n");
                    }
                    insta::assert_snapshot!(format!("{name}_simulator_counters"), text);
                    Ok(())
                },
            );
    }
    suite
}

fn plan_and_error_tests(suite: TestSuite) -> TestSuite {
    suite
        .cpu("illustration::launch_plans", || {
            let gpu = GpuShape::HOPPER_132_SMS;
            let sizes = [
                0usize,
                1,
                511,
                512,
                513,
                16_383,
                16_384,
                16_385,
                (1 << 20) + 3,
                1 << 30,
                u32::MAX as usize,
            ];
            let mut text = String::new();
            for step in ByteStep::ALL {
                text += &format!("{}:\n", step.name());
                for n in sizes {
                    text += &format!("  {}\n", step.plan(n, gpu)?);
                }
            }
            for step in [EvenStep::OneCopy, EvenStep::LaneCopies] {
                text += &format!("{}:\n", step.name());
                for (n, bins) in [
                    (0usize, 256u32),
                    (1, 256),
                    (1 << 28, 256),
                    (1 << 28, 257),
                    (1 << 28, 1000),
                    (5, 8192),
                ] {
                    text += &format!("  {bins} bins: {}\n", step.plan(n, bins, gpu)?);
                }
            }
            insta::assert_snapshot!("launch_plans", text);
            Ok(())
        })
        .cpu("too_large_inputs_are_an_error", || {
            let n = 1usize << 32;
            for step in ByteStep::ALL {
                if !matches!(step.plan(n, GpuShape::HOPPER_132_SMS), Err(GpuError::TooLarge { .. }))
                {
                    return Err(format!("{}: 2^32 bytes should be TooLarge", step.name()).into());
                }
            }
            match EvenStep::LaneCopies.plan(n, 256, GpuShape::HOPPER_132_SMS) {
                Err(e @ GpuError::TooLarge { .. }) => {
                    insta::assert_snapshot!("too_large", e.to_string());
                    Ok(())
                }
                other => Err(format!("expected TooLarge, got {other:?}").into()),
            }
        })
        .cpu("even_bins_reject_bad_parameters", || {
            let bad = [
                (0, 0.0, 1.0),
                (EvenBins::MAX_BINS + 1, 0.0, 1.0),
                (10, 1.0, 1.0),
                (10, 2.0, 1.0),
                (10, f32::NAN, 1.0),
                (10, 0.0, f32::INFINITY),
                (10, f32::NEG_INFINITY, 0.0),
                (10, 0.0, f32::from_bits(1)),
                // Wider than f32 holds: x - lower overflowed, and 5e37 fell in bin 3 instead of 2.
                (4, -3e38, 3e38),
            ];
            let mut messages = Vec::new();
            for (bins, lower, upper) in bad {
                match EvenBins::new(bins, lower, upper) {
                    Err(GpuError::BadInput(message)) => messages.push(message),
                    other => {
                        return Err(format!(
                            "({bins}, {lower}, {upper}): expected BadInput, got {other:?}"
                        )
                        .into());
                    }
                }
            }
            insta::assert_snapshot!("bad_even_bins", messages.join("\n"));
            Ok(())
        })
        .gpu("even_bins_at_the_widest_range_f32_holds", |device| {
            // The widest accepted range: x - lower stays finite for every x in it, and each value
            // lands in the bin f64 arithmetic gives it, on the CPU and on the device.
            let bins = EvenBins::new(4, -1.7e38, 1.7e38)?;
            let values = [-1.7e38f32, -5e37, -1.0, 0.0, 5e37, 8.4e37, 1.69e38];
            let histogram = EvenHistogram::new(device, EvenStep::LaneCopies)?;
            let mut counts = device.alloc::<u32>(4)?;
            histogram.count(device.upload(&values)?.as_view(), &bins, &mut counts)?;
            let mut expected = vec![0u32; 4];
            for x in values {
                let exact = ((f64::from(x) + 1.7e38) / 3.4e38 * 4.0).floor() as u32;
                if bins.bin_of(x) != Some(exact) {
                    return Err(
                        format!("bin_of({x:e}) = {:?}, exact {exact}", bins.bin_of(x)).into()
                    );
                }
                expected[exact as usize] += 1;
            }
            let got = counts.to_host()?;
            if got != expected {
                return Err(format!("device counts {got:?}, expected {expected:?}").into());
            }
            Ok(())
        })
        .cpu("cpu_bins_follow_the_rules", || {
            let bins = EvenBins::new(4, 0.0, 1.0)?;
            let cases = [
                (0.0, Some(0)),
                (-0.0, Some(0)),
                (0.25, Some(1)),
                (below(0.25), Some(0)),
                (below(1.0), Some(3)),
                (1.0, None),
                (below(0.0), None),
                (f32::NAN, None),
                (f32::INFINITY, None),
                (f32::NEG_INFINITY, None),
            ];
            for (x, expected) in cases {
                if bins.bin_of(x) != expected {
                    return Err(format!(
                        "bin_of({x:e}) = {:?}, expected {expected:?}",
                        bins.bin_of(x)
                    )
                    .into());
                }
            }
            Ok(())
        })
        .gpu("bins_buffer_of_the_wrong_length_is_an_error", |device| {
            let input = device.upload(&[1u8, 2, 3])?;
            let histogram = ByteHistogram::new(device, ByteStep::Runs)?;
            for len in [0, 255, 257] {
                let mut bins = device.alloc::<u32>(len)?;
                if !matches!(
                    histogram.count(input.as_view(), &mut bins),
                    Err(GpuError::BadInput(_))
                ) {
                    return Err(format!("{len} bins: expected BadInput").into());
                }
            }
            let values = device.upload(&[0.5f32])?;
            let bins = EvenBins::new(10, 0.0, 1.0)?;
            let mut counts: DeviceBuffer<u32> = device.alloc(256)?;
            match EvenHistogram::new(device, EvenStep::LaneCopies)?.count(
                values.as_view(),
                &bins,
                &mut counts,
            ) {
                Err(GpuError::BadInput(message)) => {
                    insta::assert_snapshot!("wrong_bins_length", message);
                    Ok(())
                }
                other => Err(format!("expected BadInput, got {other:?}").into()),
            }
        })
        .gpu("host_slices_and_empty_inputs", |device| {
            let mut rng = TestRng::new();
            for step in [ByteStep::SharedAtomics, ByteStep::Runs] {
                let histogram = ByteHistogram::new(device, step)?;
                if histogram.count_host(&[])? != vec![0u32; BYTE_BINS] {
                    return Err(
                        format!("{}: the empty input should count nothing", step.name()).into()
                    );
                }
                let host = make(Pattern::Text, 10_001, &mut rng);
                if let Some(why) = mismatch(&byte_histogram(&host), &histogram.count_host(&host)?) {
                    return Err(rng.fail(why));
                }
            }
            let bins = EvenBins::new(5, 0.0, 5.0)?;
            let even = EvenHistogram::new(device, EvenStep::LaneCopies)?;
            if even.count_host(&[], &bins)? != vec![0u32; 5] {
                return Err("f32: the empty input should count nothing".into());
            }
            let got = even.count_host(&[0.0, 4.999, 5.0, -0.1, 2.5, f32::NAN], &bins)?;
            if got != [1, 0, 1, 0, 1] {
                return Err(format!("f32 worked example: got {got:?}").into());
            }
            Ok(())
        })
        .gpu("many_threads_on_one_device", |device| {
            let rng = TestRng::new();
            let seed = rng.seed();
            on_threads(ByteStep::ALL.len(), |k| {
                let step = ByteStep::ALL[k];
                let mut rng = TestRng::with_seed(seed ^ step as u64);
                let histogram = ByteHistogram::new(device, step)?;
                for pattern in PATTERNS {
                    let host = make(pattern, 40_000, &mut rng);
                    let got = histogram.count_host(&host)?;
                    if let Some(why) = mismatch(&byte_histogram(&host), &got) {
                        return Err(format!("{} on {pattern:?}: {why}", step.name()).into());
                    }
                }
                Ok(())
            })
            .map_err(|failed| rng.fail(failed.message().unwrap_or("failed")))
        })
}

fn main() -> std::process::ExitCode {
    let suite = byte_tests(TestSuite::new());
    let suite = packed_tests(suite);
    let suite = largest_input_test(suite);
    let suite = even_tests(suite);
    plan_and_error_tests(suite).run()
}
