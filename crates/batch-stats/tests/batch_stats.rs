//! batch-stats' tests: every step on f32 and bf16 tensors of C from 1 to 2048 channels, planes of
//! H x W = 1, 3, 31, 33, 195, 196, 197 and 1100 elements (not multiples of anything, and shorter or
//! longer than a piece) and around bf16's pieces of 1024 (520, 704, 1024, 1025, 1536), N of 1 and
//! odd, both variances, on fresh random values, against the f64
//! CPU reference within `batch_stats::tolerance`; what torch does with constant data (a variance of
//! exactly 0), magnitudes of 1e17, 1e30 and 1e38, NaN, infinities, one element per channel and
//! empty tensors; tensors at odd offsets (the narrower loads of step 4); wrong lengths; the same
//! bits on every run; many threads at once; a bf16 tensor of more than 2^32 elements on GPUs with
//! the memory; and snapshots of launch plans, a worked example and the simulator's counters.
//! Outputs are poisoned before every launch.

use std::fmt::Write as _;

use batch_stats::{
    BatchStats, MAX_SIDE, Nchw, Step, Value, Variance, channel_stats, f32_to_bf16, first_mismatch,
    stats_cpu,
};
use gpu_harness::{Device, GpuError, GpuShape};
use gpu_test::{
    TestResult, TestRng, TestSuite, by_index, counters_comparable, fits_test_time, on_threads,
    too_large_here,
};

/// The shapes every step is tested at: N x C x H x W.
const SHAPES: &[(usize, usize, usize, usize)] = &[
    (1, 1, 1, 1),
    (3, 1, 1, 31),
    (1, 3, 3, 11),
    (5, 2, 13, 15),
    (2, 3, 1, 197),
    (3, 5, 14, 14),
    (1, 2048, 1, 1),
    (3, 2048, 1, 3),
    (1, 64, 1, 33),
    (5, 3, 1, 1100),
    (7, 2, 30, 40),
    (1, 3, 56, 56),
    // Around bf16's pieces of 1024 (two halves of 512): one half and a bit, a whole piece and one
    // past it, a piece and a half.
    (2, 2, 1, 520),
    (2, 3, 1, 704),
    (2, 2, 1, 1024),
    (2, 2, 1, 1025),
    (1, 3, 1, 1536),
    // One channel of 40 pieces or more (80 f32, 40 bf16): more than 32 slices on a GPU of 132 SMs,
    // so the last block combines the partials with a block reduction, not a warp's.
    (40, 1, 1, 520),
    // One channel of 529 of step 5's turns of 512 f32: on 132 SMs, 528 slices of 129 vectors of 4
    // cover it before the last three, which have none and finish with an empty accumulator.
    (1, 1, 520, 520),
];

/// Fills the statistics before a launch: -7, which no variance is, and no mean of the tests' data.
const POISON: f32 = -7.0;

/// Values uniform in [-1, 1) plus an offset of 3: a mean away from 0, so a wrong count shows.
fn values<T: Value>(rng: &mut TestRng, n: usize) -> Vec<T> {
    rng.uniform_f32(n, 2.0, 4.0).into_iter().map(T::from_f32).collect()
}

/// Runs `stats` on `host` (of `shape`) into poisoned outputs and checks them.
fn check<T: Value>(
    device: &Device,
    stats: &mut BatchStats,
    rng: &TestRng,
    host: &[T],
    shape: Nchw,
    variance: Variance,
) -> TestResult {
    let input = device.upload(host)?;
    let (mut mean, mut var) =
        (device.alloc::<f32>(shape.channels)?, device.alloc::<f32>(shape.channels)?);
    mean.fill(POISON)?;
    var.fill(POISON)?;
    stats.stats(input.as_view(), shape, variance, &mut mean, &mut var)?;
    let chain = stats.plan::<T>(shape)?.longest_chain(shape);
    match first_mismatch(host, shape, variance, chain, &mean.to_host()?, &var.to_host()?) {
        None => Ok(()),
        Some(wrong) => {
            Err(rng.fail(format!("{} {} {variance:?}: {wrong}", stats.step().name(), T::NAME)))
        }
    }
}

/// The step on every shape of [`SHAPES`], both variances, in type `T`.
fn every_shape<T: Value>(device: &Device, step: Step) -> TestResult {
    let mut rng = TestRng::new();
    let mut stats = BatchStats::new(device, step)?;
    for &(n, c, h, w) in SHAPES {
        let shape = Nchw::new(n, c, h, w);
        let host = values::<T>(&mut rng, shape.elements().unwrap());
        for variance in [Variance::Unbiased, Variance::Population] {
            check(device, &mut stats, &rng, &host, shape, variance)?;
        }
    }
    Ok(())
}

/// A larger tensor, several blocks per channel on a GPU: the smallest case, 32 x 64 x 56 x
/// 56, where it runs in test time; on the simulator 2 x 5 x 56 x 56.
fn a_larger_tensor(device: &Device, step: Step) -> TestResult {
    let mut rng = TestRng::new();
    let shape =
        if device.is_simulated() { Nchw::new(2, 5, 56, 56) } else { Nchw::new(32, 64, 56, 56) };
    if let Some(why) = fits_test_time(device, shape.elements().unwrap()) {
        return Err(why.into());
    }
    let host = values::<f32>(&mut rng, shape.elements().unwrap());
    check(device, &mut BatchStats::new(device, step)?, &rng, &host, shape, Variance::Unbiased)
}

/// Channels that torch answers in a particular way, 3 x 40 values each (so a lane holds several,
/// and planes of 40 are not a multiple of 16), with what must come out beside the reference's
/// check.
fn torch_channels() -> Vec<(&'static str, Vec<f32>)> {
    let inf = f32::INFINITY;
    let channel = |f: &dyn Fn(usize) -> f32| (0..120).map(f).collect::<Vec<f32>>();
    vec![
        ("constant", channel(&|_| 0.1)),
        ("constant 1e30", channel(&|_| 1e30)),
        ("constant 1e38", channel(&|_| 1e38)),
        ("constant -3e38", channel(&|_| -3e38)),
        ("1e17 and more", channel(&|i| 1e17 * (1.0 + (i % 7) as f32))),
        ("1e38 and 3e38", channel(&|i| if i % 2 == 0 { 1e38 } else { 3e38 })),
        ("-3e38 and 3e38", channel(&|i| if i % 2 == 0 { -3e38 } else { 3e38 })),
        ("a NaN", channel(&|i| if i == 77 { f32::NAN } else { i as f32 })),
        ("a +inf", channel(&|i| if i == 5 { inf } else { i as f32 })),
        (
            "+inf and -inf",
            channel(&|i| match i {
                3 => inf,
                90 => -inf,
                _ => 1.0,
            }),
        ),
        ("-0.0", channel(&|_| -0.0)),
        ("subnormal", channel(&|i| f32::from_bits(1 + (i % 3) as u32))),
    ]
}

/// torch's answers: checked against the reference, and spelled out where they are special. The
/// channels are laid out as an N = 3, C = 12, H x W = 40 tensor (channel c's values 0 .. 40 in its
/// plane of batch 0, and so on).
fn torch_semantics<T: Value>(device: &Device, step: Step) -> TestResult {
    let rng = TestRng::new();
    let mut stats = BatchStats::new(device, step)?;
    let channels = torch_channels();
    let shape = Nchw::new(3, channels.len(), 5, 8);
    let mut host = vec![T::from_f32(0.0); shape.elements().unwrap()];
    for (c, (_, values)) in channels.iter().enumerate() {
        for (i, &x) in values.iter().enumerate() {
            host[((i / 40) * shape.channels + c) * 40 + i % 40] = T::from_f32(x);
        }
    }
    for variance in [Variance::Unbiased, Variance::Population] {
        check(device, &mut stats, &rng, &host, shape, variance)?;
        let (mean, var) = stats.stats_host(&host, shape, variance)?;
        for (c, (what, values)) in channels.iter().enumerate() {
            let fail = |why: &str| {
                Err(format!(
                    "{} {} {what}: {why}: mean {}, variance {}",
                    step.name(),
                    T::NAME,
                    mean[c],
                    var[c]
                )
                .into())
            };
            let exact = T::from_f32(values[0]).to_f64() as f32;
            match *what {
                "constant" | "constant 1e30" | "constant 1e38" | "constant -3e38" | "-0.0"
                    if var[c] != 0.0 || mean[c] != exact =>
                {
                    return fail("constant data: the mean is the value and the variance exactly 0");
                }
                "a NaN" | "+inf and -inf" if !mean[c].is_nan() || !var[c].is_nan() => {
                    return fail("expected a NaN mean and variance");
                }
                "a +inf" if mean[c] != f32::INFINITY || !var[c].is_nan() => {
                    return fail("expected a mean of +inf and a NaN variance");
                }
                "1e17 and more" | "1e38 and 3e38" if !mean[c].is_finite() => {
                    return fail("the mean overflowed");
                }
                "1e17 and more" if !var[c].is_finite() => return fail("the variance overflowed"),
                "-3e38 and 3e38" if var[c] != f32::INFINITY => {
                    return fail("a variance past f32's range is +inf (torch: NaN)");
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Plans of every step at the shapes and the tests' on an H100's or H200's 132 SMs.
fn plan_snapshot() -> Result<String, GpuError> {
    let shapes = [
        Nchw::new(32, 64, 56, 56),
        Nchw::new(256, 64, 56, 56),
        Nchw::new(64, 512, 14, 14),
        Nchw::new(1, 1, 1, 1),
        Nchw::new(3, 2048, 1, 3),
        Nchw::new(5, 3, 1, 1100),
        Nchw::new(1, 3, 224, 224),
    ];
    let mut text = String::from("on 132 SMs of 2048 threads (an H100 or H200)\n");
    for shape in shapes {
        let _ = writeln!(text, "{shape}:");
        for step in Step::ALL {
            let plan = step.plan::<f32>(shape, GpuShape::HOPPER_132_SMS)?;
            let bf16 = step.plan::<u16>(shape, GpuShape::HOPPER_132_SMS)?;
            let (f32_line, bf16_line) = (
                format!("{plan}; longest chain {}", plan.longest_chain(shape)),
                format!("{bf16}; longest chain {}", bf16.longest_chain(shape)),
            );
            let _ = writeln!(text, "  {f32_line}");
            if bf16_line != f32_line {
                let _ = writeln!(text, "    bf16: {bf16_line}");
            }
        }
    }
    Ok(text)
}

/// What the simulator counts when `step` takes the statistics of a 4 x 8 x 30 x 30 f32 tensor.
fn counters(step: Step) -> Result<String, GpuError> {
    let device = Device::simulator()?;
    let shape = Nchw::new(4, 8, 30, 30);
    let host: Vec<f32> =
        (0..shape.elements().unwrap()).map(|i| ((i * 37) % 101) as f32 / 16.0).collect();
    let mut stats = BatchStats::new(&device, step)?;
    let input = device.upload(&host)?;
    let (mut mean, mut var) = (device.alloc::<f32>(8)?, device.alloc::<f32>(8)?);
    device.take_launches();
    stats.stats(input.as_view(), shape, Variance::Unbiased, &mut mean, &mut var)?;
    let mut text = format!("a {shape} f32 tensor: {}\n", stats.plan::<f32>(shape)?);
    for (kernel, counters) in device.take_launches() {
        let _ = write!(text, "{kernel}:\n{counters}\n");
    }
    Ok(text)
}

/// Expects a [`GpuError::BadInput`] and appends its message to `text`.
fn bad_input<T: std::fmt::Debug>(
    text: &mut String,
    what: &str,
    result: Result<T, GpuError>,
) -> TestResult {
    match result {
        Err(GpuError::BadInput(message)) => {
            let _ = writeln!(text, "{message}");
            Ok(())
        }
        other => Err(format!("{what}: expected BadInput, got {other:?}").into()),
    }
}

/// The shape of the test of more than 2^32 elements: 2 x (2^20 + 8) x 64 x 64, 2^33 + 2^16 elements
/// (16 GiB of bf16), where every part of an element's offset passes 2^32: the whole
/// `(n C + c) H W`, a batch's `n C H W` (batch 1) and a channel's `c H W` (channels 2^20 and up).
/// Channels of 8192 elements, so that step 1's tolerance (its chain is the channel's count) stays
/// below 0.005 and every step takes the shape (step 5 counts a channel's vectors in 32 bits).
const HUGE: Nchw = Nchw::new(2, (1 << 20) + 8, 64, 64);

/// Every step on a bf16 tensor of [`HUGE`]'s shape, more than 2^32 elements, every channel checked
/// against the f64 reference.
fn more_than_2_to_the_32_elements(device: &Device) -> TestResult {
    let rng = TestRng::new();
    let seed = rng.seed();
    let shape = HUGE;
    // Channel c's values are 2 + (c % 7) / 8, plus 1 past element 2^32 (2 past 2^33), plus a hash
    // of the whole 64-bit index (and the seed) in [0, 0.5): all exact in bf16. Any of the offsets
    // of [`HUGE`] wrapped at 2^32 reads, for half a channel or more, another channel's plane in the
    // 2^32 elements before, at least 5/8 lower: its mean comes out 0.3 or more low, where the bound
    // is below 0.005 for step 1 and 1e-5 for the others. One wrapped at 2^31 (a signed int) reads
    // before the tensor, and fails the launch or the channels past it.
    let value = |i: usize| {
        let c = i / shape.plane() % shape.channels;
        let hash = (i as u64 ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60;
        2.0 + (c % 7) as f32 / 8.0 + (i >> 32) as f32 + hash as f32 / 32.0
    };
    let host = by_index(shape.elements().unwrap(), |i| f32_to_bf16(value(i)));
    let input = device.upload(&host)?;
    let (mut mean, mut var) =
        (device.alloc::<f32>(shape.channels)?, device.alloc::<f32>(shape.channels)?);
    for step in Step::ALL {
        let mut stats = BatchStats::new(device, step)?;
        mean.fill(POISON)?;
        var.fill(POISON)?;
        stats.stats(input.as_view(), shape, Variance::Unbiased, &mut mean, &mut var)?;
        let chain = stats.plan::<u16>(shape)?.longest_chain(shape);
        let (m, v) = (mean.to_host()?, var.to_host()?);
        if let Some(wrong) = first_mismatch(&host, shape, Variance::Unbiased, chain, &m, &v) {
            return Err(rng.fail(format!("{} bf16: {wrong}", step.name())));
        }
    }
    Ok(())
}

/// One channel of 2 x 4096 x 4099 values (33.6 million, past 2^25), uniform in [-2, 2): folded
/// one value at a time into one f32 accumulator, the moves of its mean and m2 fall below half an
/// ulp and are lost (a variance of 1.2648 for 1.3332 on an H200), which step 1 now avoids by its
/// runs (`NAIVE_RUN`).
const LONG_CHANNEL: Nchw = Nchw::new(2, 1, 4096, 4099);

/// The variance bound of [`LONG_CHANNEL`] at a chain of `chain`, as a share of the variance.
fn long_channel_bound(values: &[f64], chain: u64) -> f64 {
    let (_, var) = channel_stats(values, Variance::Unbiased);
    batch_stats::tolerance(values, chain, Variance::Unbiased).1 / var
}

/// Step 1 on [`LONG_CHANNEL`], checked against the f64 reference within a bound that is now a few
/// percent of the variance (it was larger than the variance itself, at a chain of one combination
/// per value).
fn a_channel_past_2_to_the_25(device: &Device) -> TestResult {
    let mut rng = TestRng::new();
    let shape = LONG_CHANNEL;
    let host = rng.uniform_f32(shape.elements().unwrap(), -2.0, 2.0);
    let mut stats = BatchStats::new(device, Step::Naive)?;
    let chain = stats.plan::<f32>(shape)?.longest_chain(shape);
    let share = long_channel_bound(&batch_stats::channel(&host, shape, 0), chain);
    if share > 0.03 {
        return Err(format!(
            "the bound is {:.1}% of the variance: too wide to catch a 5% error",
            share * 100.0
        )
        .into());
    }
    check(device, &mut stats, &rng, &host, shape, Variance::Unbiased)
}

/// The fold step 1 used to do, one value at a time into one f32 accumulator (Chan's combination
/// with a one-value accumulator, as `MomentsOf::combine` computes it), on the CPU: on
/// [`LONG_CHANNEL`]'s values its variance is further from the reference than the bound the GPU
/// test allows step 1 now, so that test can fail.
fn one_value_fold_is_outside_the_bound() -> TestResult {
    let mut rng = TestRng::new();
    let host = rng.uniform_f32(LONG_CHANNEL.elements().unwrap(), -2.0, 2.0);
    let (mut count, mut mean, mut m2) = (0u64, 0.0f32, 0.0f32);
    for &x in &host {
        count += 1;
        let share = 1.0 / count as f32;
        let d = x - mean;
        mean += d * share;
        m2 += d * d * ((count - 1) as f32 * share);
    }
    let var = f64::from(m2) / (count - 1) as f64;
    let values: Vec<f64> = host.iter().map(|&x| f64::from(x)).collect();
    let (_, want) = channel_stats(&values, Variance::Unbiased);
    let chain = Step::Naive
        .plan::<f32>(LONG_CHANNEL, GpuShape::HOPPER_132_SMS)?
        .longest_chain(LONG_CHANNEL);
    let allowed = long_channel_bound(&values, chain) * want;
    if (var - want).abs() <= allowed {
        return Err(rng.fail(format!(
            "the one-value fold gave {var} for {want}, within the bound {allowed}"
        )));
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new()
        .cpu("illustration::launch_plans", || {
            insta::assert_snapshot!("launch_plans", plan_snapshot()?);
            Ok(())
        })
        .cpu("plans_reject_what_the_indices_cannot_hold", || {
            let mut text = String::new();
            for (step, shape) in [
                (Step::Naive, Nchw::new(1, MAX_SIDE + 1, 1, 1)),
                (Step::Coalesced, Nchw::new(2, 3, 1 << 16, 1 << 16)),
                (Step::Split, Nchw::new(1 << 30, 1, 1, 1025)),
                (Step::Vectors, Nchw::new(usize::MAX / 2, 3, 1, 1)),
                (Step::Flat, Nchw::new(1 << 16, 2, 1 << 8, 1 << 8)),
            ] {
                bad_input(
                    &mut text,
                    &format!("{} {shape}", step.name()),
                    step.plan::<f32>(shape, GpuShape::HOPPER_132_SMS),
                )?;
            }
            insta::assert_snapshot!("rejected_plans", text);
            Ok(())
        })
        .cpu("cpu_reference_is_torchs", || {
            let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
            let stats = stats_cpu(&x, Nchw::new(2, 2, 1, 2), Variance::Unbiased);
            // Channel 0 holds 1, 2, 5, 6; channel 1 holds 3, 4, 7, 8.
            if stats != [(3.5, 17.0 / 3.0), (5.5, 17.0 / 3.0)] {
                return Err(format!("stats_cpu of 2 x 2 x 1 x 2: {stats:?}").into());
            }
            let (mean, var) = channel_stats(&[2.5], Variance::Unbiased);
            if mean != 2.5 || !var.is_nan() {
                return Err(format!(
                    "one value, unbiased: ({mean}, {var}), torch gives (2.5, nan)"
                )
                .into());
            }
            if channel_stats(&[2.5], Variance::Population) != (2.5, 0.0) {
                return Err("one value, population: torch gives (2.5, 0)".into());
            }
            let (mean, var) = channel_stats(&[], Variance::Population);
            if !mean.is_nan() || !var.is_nan() {
                return Err(format!("no values: ({mean}, {var}), torch gives (nan, nan)").into());
            }
            Ok(())
        });

    for step in Step::ALL {
        let name = step.name();
        suite = suite
            .gpu(format!("{name}::f32_every_shape"), move |device| every_shape::<f32>(device, step))
            .gpu(format!("{name}::bf16_every_shape"), move |device| {
                every_shape::<u16>(device, step)
            })
            .gpu(format!("{name}::f32_torch_semantics"), move |device| {
                torch_semantics::<f32>(device, step)
            })
            .gpu(format!("{name}::bf16_torch_semantics"), move |device| {
                torch_semantics::<u16>(device, step)
            })
            .gpu(format!("{name}::a_larger_tensor"), move |device| a_larger_tensor(device, step))
            .gpu(format!("{name}::one_element_per_channel"), move |device| {
                let mut stats = BatchStats::new(device, step)?;
                let x = [2.5f32, -1.0, 1e38];
                for variance in [Variance::Unbiased, Variance::Population] {
                    let (mean, var) = stats.stats_host(&x, Nchw::new(1, 3, 1, 1), variance)?;
                    let want = if variance == Variance::Unbiased { f32::NAN } else { 0.0 };
                    let same =
                        |a: f32, b: f32| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan();
                    if mean != x || !var.iter().all(|&v| same(v, want)) {
                        return Err(format!(
                            "{name} {variance:?}: mean {mean:?}, variance {var:?}"
                        )
                        .into());
                    }
                }
                Ok(())
            })
            .gpu(format!("{name}::views_at_odd_offsets"), move |device| {
                let mut rng = TestRng::new();
                let mut stats = BatchStats::new(device, step)?;
                for shape in
                    [Nchw::new(3, 2, 14, 14), Nchw::new(1, 3, 16, 16), Nchw::new(2, 2, 1, 197)]
                {
                    let n = shape.elements().unwrap();
                    let host = values::<f32>(&mut rng, n + 7);
                    let bf16: Vec<u16> = host.iter().map(|&x| f32_to_bf16(x)).collect();
                    let (buffer, bf16_buffer) = (device.upload(&host)?, device.upload(&bf16)?);
                    for offset in 1..=7 {
                        let (mut mean, mut var) =
                            (device.alloc::<f32>(shape.channels)?, device.alloc(shape.channels)?);
                        for bf16_input in [false, true] {
                            mean.fill(POISON)?;
                            var.fill(POISON)?;
                            let chain = if bf16_input {
                                stats.plan::<u16>(shape)
                            } else {
                                stats.plan::<f32>(shape)
                            }?
                            .longest_chain(shape);
                            let wrong = if bf16_input {
                                let view = bf16_buffer.view(offset..offset + n)?;
                                stats.stats(
                                    view,
                                    shape,
                                    Variance::Unbiased,
                                    &mut mean,
                                    &mut var,
                                )?;
                                let (m, v) = (mean.to_host()?, var.to_host()?);
                                first_mismatch(
                                    &bf16[offset..offset + n],
                                    shape,
                                    Variance::Unbiased,
                                    chain,
                                    &m,
                                    &v,
                                )
                            } else {
                                let view = buffer.view(offset..offset + n)?;
                                stats.stats(
                                    view,
                                    shape,
                                    Variance::Unbiased,
                                    &mut mean,
                                    &mut var,
                                )?;
                                let (m, v) = (mean.to_host()?, var.to_host()?);
                                first_mismatch(
                                    &host[offset..offset + n],
                                    shape,
                                    Variance::Unbiased,
                                    chain,
                                    &m,
                                    &v,
                                )
                            };
                            if let Some(m) = wrong {
                                return Err(rng.fail(format!(
                                    "{name} at offset {offset} (bf16: {bf16_input}): {m}"
                                )));
                            }
                        }
                    }
                }
                Ok(())
            })
            .gpu(format!("{name}::the_same_bits_every_run"), move |device| {
                let mut rng = TestRng::new();
                let mut stats = BatchStats::new(device, step)?;
                let shape = Nchw::new(5, 3, 1, 1100);
                let host = values::<f32>(&mut rng, shape.elements().unwrap());
                let first = stats.stats_host(&host, shape, Variance::Unbiased)?;
                for _ in 0..3 {
                    if stats.stats_host(&host, shape, Variance::Unbiased)? != first {
                        return Err(rng.fail(format!("{name}: another run gave other bits")));
                    }
                }
                Ok(())
            })
            .nvrtc_if(
                format!("illustration::{name}::simulator_counters"),
                counters_comparable,
                move || {
                    insta::assert_snapshot!(format!("{name}_simulator_counters"), counters(step)?);
                    Ok(())
                },
            );
    }

    suite
        .gpu("worked_example", |device| {
            let shape = Nchw::new(2, 3, 1, 2);
            let x = [1.0f32, 2.0, 10.0, 10.0, -1.0, 1.0, 5.0, 6.0, 10.0, 10.0, -3.0, 3.0];
            let mut text = format!("x, {shape} (N x C x H x W): {x:?}\n");
            for variance in [Variance::Unbiased, Variance::Population] {
                let reference = stats_cpu(&x, shape, variance);
                let _ =
                    writeln!(text, "{variance:?}: f64 reference (mean, variance): {reference:?}");
                for step in Step::ALL {
                    let (mean, var) =
                        BatchStats::new(device, step)?.stats_host(&x, shape, variance)?;
                    let _ = writeln!(text, "{:>10}: mean {mean:?}, variance {var:?}", step.name());
                    if let Some(m) = first_mismatch(&x, shape, variance, 16, &mean, &var) {
                        return Err(format!("{}: {m}", step.name()).into());
                    }
                }
            }
            insta::assert_snapshot!("worked_example", text);
            Ok(())
        })
        .gpu_if(
            "naive::a_channel_past_2_to_the_25",
            |device| fits_test_time(device, LONG_CHANNEL.elements().unwrap()),
            a_channel_past_2_to_the_25,
        )
        .cpu("naive::one_value_fold_is_outside_the_bound", one_value_fold_is_outside_the_bound)
        .gpu("wrong_lengths_are_errors", |device| {
            let mut stats = BatchStats::new(device, Step::Vectors)?;
            let input = device.upload(&[0.0f32; 24])?;
            let mut text = String::new();
            for (shape, means, vars) in [
                (Nchw::new(2, 3, 2, 3), 3, 3),
                (Nchw::new(2, 3, 2, 2), 2, 3),
                (Nchw::new(2, 3, 2, 2), 3, 4),
                (Nchw::new(1, MAX_SIDE + 1, 1, 1), 3, 3),
            ] {
                let (mut mean, mut var) = (device.alloc::<f32>(means)?, device.alloc::<f32>(vars)?);
                mean.fill(POISON)?;
                var.fill(POISON)?;
                let what = format!("{shape} into {means} and {vars}");
                bad_input(
                    &mut text,
                    &what,
                    stats.stats(input.as_view(), shape, Variance::Unbiased, &mut mean, &mut var),
                )?;
                if mean.to_host()?.iter().chain(&var.to_host()?).any(|&y| y != POISON) {
                    return Err(format!("{what}: an error wrote the output").into());
                }
            }
            bad_input(
                &mut text,
                "7 as 2 x 1 x 1 x 3",
                stats.stats_host(&[1u16; 7], Nchw::new(2, 1, 1, 3), Variance::Unbiased),
            )?;
            let past = Nchw::new(usize::MAX / 2, 1, 1, 3);
            bad_input(
                &mut text,
                "past usize",
                stats.stats_host(&[1.0f32; 4], past, Variance::Unbiased),
            )?;
            insta::assert_snapshot!("wrong_lengths", text);
            Ok(())
        })
        .gpu("empty_tensors", |device| {
            let device = &gpu_test::counting_device(device)?;
            for step in Step::ALL {
                let mut stats = BatchStats::new(device, step)?;
                let empty = device.alloc::<f32>(0)?;
                for shape in [
                    Nchw::new(0, 3, 4, 4),
                    Nchw::new(2, 3, 0, 5),
                    Nchw::new(2, 3, 5, 0),
                    Nchw::new(2, 0, 4, 4),
                ] {
                    let (mut mean, mut var) =
                        (device.alloc::<f32>(shape.channels)?, device.alloc(shape.channels)?);
                    mean.fill(POISON)?;
                    var.fill(POISON)?;
                    device.take_launches();
                    stats.stats(
                        empty.as_view(),
                        shape,
                        Variance::Population,
                        &mut mean,
                        &mut var,
                    )?;
                    let launched = device.take_launches();
                    if !launched.is_empty() {
                        return Err(format!(
                            "{}: {shape} launched {}",
                            step.name(),
                            launched.len()
                        )
                        .into());
                    }
                    // torch: NaN statistics for every channel of no elements; none for no channels.
                    let (mean, var) = (mean.to_host()?, var.to_host()?);
                    if mean.len() != shape.channels || !mean.iter().chain(&var).all(|y| y.is_nan())
                    {
                        return Err(format!(
                            "{}: {shape}: mean {mean:?}, variance {var:?}",
                            step.name()
                        )
                        .into());
                    }
                    let (mean, var) = stats.stats_host::<u16>(&[], shape, Variance::Unbiased)?;
                    if mean.len() != shape.channels || !mean.iter().chain(&var).all(|y| y.is_nan())
                    {
                        return Err(format!(
                            "{}: {shape} bf16: mean {mean:?}, variance {var:?}",
                            step.name()
                        )
                        .into());
                    }
                }
            }
            Ok(())
        })
        .gpu_if(
            "huge::more_than_2^32_elements",
            |device| {
                let n = HUGE.elements().unwrap_or(usize::MAX);
                too_large_here(device, n, 2 * n as u64)
            },
            more_than_2_to_the_32_elements,
        )
        .gpu("many_threads_on_one_device", |device| {
            let seed = TestRng::new().seed();
            on_threads(4, |k| {
                let mut rng = TestRng::with_seed(seed ^ k as u64);
                let step = Step::ALL[k % Step::ALL.len()];
                let mut stats = BatchStats::new(device, step)?;
                for _ in 0..3 {
                    let shape = Nchw::new(
                        rng.size_in(1..=4),
                        rng.size_in(1..=40),
                        rng.size_in(1..=9),
                        rng.size_in(1..=30),
                    );
                    let host = values::<f32>(&mut rng, shape.elements().unwrap());
                    check(device, &mut stats, &rng, &host, shape, Variance::Unbiased)?;
                }
                Ok(())
            })
        })
        .run()
}
