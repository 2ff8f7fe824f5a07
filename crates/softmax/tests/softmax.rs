//! softmax's tests: every step on f32 and bf16 rows of the lengths (1, 31, 32, 33, 1000,
//! 4097, 2^17 + 3) and several row counts, on fresh random logits, against the f64 CPU reference
//! within `softmax::tolerance` (each row also summing to 1 within its bound); what torch does with
//! masked (-inf) entries, rows of only -inf, +inf, NaN and logits of 1e4; rows at odd offsets (the
//! one-element-at-a-time path of the 16-byte loads); wrong lengths, empty matrices and shapes past
//! the kernels' indices; many threads at once; bf16 matrices of more than 2^32 elements, long rows
//! and short, on GPUs with the memory; and snapshots of launch plans, a worked example and the
//! simulator's counters. Outputs are poisoned before every launch (in the test of more than 2^32
//! elements, the rows it reads back).

use std::fmt::Write as _;

use gpu_harness::{Device, GpuError, GpuShape};
use gpu_test::{
    TestResult, TestRng, TestSuite, by_index, counters_comparable, fits_test_time,
    matrices_too_large_here, on_threads, rows_past_32_bits,
};
use softmax::{
    MAX_SIDE, Softmax, Step, Value, bf16_to_f32, f32_to_bf16, first_mismatch, softmax_cpu,
};

/// The row lengths, each with the row counts it is tested at.
const SHAPES: &[(usize, &[usize])] = &[
    (1, &[1, 5]),
    (31, &[1, 3]),
    (32, &[2, 9]),
    (33, &[1, 7]),
    (1000, &[1, 3]),
    (4097, &[2]),
    ((1 << 17) + 3, &[1]),
];

/// Fills outputs before a launch: -7, which no softmax writes (not even in a NaN row), so an
/// element a kernel forgets fails the check. Exact in bf16.
const POISON: f32 = -7.0;

/// Logits: uniform in [-20, 20), a wide enough spread that exp(x - max) reaches 1e-17.
fn logits<T: Value>(rng: &mut TestRng, n: usize) -> Vec<T> {
    rng.uniform_f32(n, -20.0, 20.0).into_iter().map(T::from_f32).collect()
}

/// Runs `softmax` on `host` (`rows x cols`) into a poisoned output and checks it.
fn check<T: Value>(
    device: &Device,
    softmax: &mut Softmax,
    rng: &TestRng,
    host: &[T],
    (rows, cols): (usize, usize),
) -> TestResult {
    let input = device.upload(host)?;
    let mut output = device.alloc::<T>(host.len())?;
    output.fill(T::from_f32(POISON))?;
    softmax.softmax(input.as_view(), rows, cols, &mut output)?;
    match first_mismatch(host, &output.to_host()?, rows, cols) {
        None => Ok(()),
        Some(wrong) => Err(rng.fail(format!(
            "{} {}: {rows} x {cols}: {wrong}",
            softmax.step().name(),
            T::NAME
        ))),
    }
}

/// The step on every shape of [`SHAPES`] (those the device runs in test time), in type `T`.
fn every_length<T: Value>(device: &Device, step: Step) -> TestResult {
    let mut rng = TestRng::new();
    let mut softmax = Softmax::new(device, step)?;
    for &(cols, row_counts) in SHAPES {
        for &rows in row_counts {
            if fits_test_time(device, rows * cols).is_some() {
                continue;
            }
            let host = logits::<T>(&mut rng, rows * cols);
            check(device, &mut softmax, &rng, &host, (rows, cols))?;
        }
    }
    Ok(())
}

/// Rows that torch answers in a particular way, 40 elements each (so a warp's lanes and the block's
/// threads hold more than one), with what must come out beside the reference's check.
fn torch_rows() -> Vec<(&'static str, Vec<f32>)> {
    let inf = f32::INFINITY;
    let row = |f: &dyn Fn(usize) -> f32| (0..40).map(f).collect::<Vec<f32>>();
    vec![
        (
            "masked: -inf every third entry",
            row(&|i| if i % 3 == 0 { -inf } else { (i as f32).sin() }),
        ),
        ("all -inf", row(&|_| -inf)),
        ("logits of 1e4", row(&|i| 1e4 - (i % 7) as f32)),
        ("1e4 and -1e4", row(&|i| if i % 2 == 0 { 1e4 } else { -1e4 })),
        ("a NaN", row(&|i| if i == 17 { f32::NAN } else { i as f32 / 10.0 })),
        ("a +inf", row(&|i| if i == 5 { inf } else { i as f32 / 10.0 })),
        ("one finite among -inf", row(&|i| if i == 39 { -3.0 } else { -inf })),
        ("all equal", row(&|_| 0.25)),
        // e^-90 is about 8e-40: subnormal in f32 and in bf16, which must not be flushed to zero.
        ("subnormal results", row(&|i| if i == 0 { 0.0 } else { -90.0 })),
    ]
}

/// torch's answers: checked against the reference, and spelled out where they are special.
fn torch_semantics<T: Value>(device: &Device, step: Step) -> TestResult {
    let rng = TestRng::new();
    let mut softmax = Softmax::new(device, step)?;
    for (what, row) in torch_rows() {
        let host: Vec<T> = row.iter().map(|&x| T::from_f32(x)).collect();
        check(device, &mut softmax, &rng, &host, (1, 40)).map_err(|e| format!("{what}: {e:?}"))?;
        let got: Vec<f64> =
            softmax.softmax_host(&host, 1, 40)?.into_iter().map(Value::to_f64).collect();
        let fail =
            |why: &str| Err(format!("{} {} {what}: {why}: {got:?}", step.name(), T::NAME).into());
        match what {
            "all -inf" | "a NaN" | "a +inf" if !got.iter().all(|y| y.is_nan()) => {
                return fail("expected NaN everywhere");
            }
            "masked: -inf every third entry" if got.iter().step_by(3).any(|&y| y != 0.0) => {
                return fail("masked entries must be exactly 0");
            }
            "one finite among -inf" if got[39] != 1.0 || got[..39].iter().any(|&y| y != 0.0) => {
                return fail("expected 1 at the finite entry and 0 elsewhere");
            }
            "logits of 1e4" | "1e4 and -1e4" if got.iter().any(|y| !y.is_finite()) => {
                return fail("overflowed");
            }
            "subnormal results" if got[1..].contains(&0.0) => {
                return fail("flushed a subnormal to zero");
            }
            _ => {}
        }
    }
    Ok(())
}

/// Plans of every step at the shapes and the tests' on an H100's or H200's 132 SMs.
fn plan_snapshot() -> Result<String, GpuError> {
    let shapes = [
        (1, 1),
        (5, 31),
        (3, 1000),
        (768, 1 << 16),
        (4096, 1 << 14),
        (32768, 1 << 11),
        (131072, 512),
        (1, (1 << 17) + 3),
        (8192, 4096),
    ];
    let mut text = String::from("on 132 SMs of 2048 threads (an H100 or H200)\n");
    for &(rows, cols) in &shapes {
        let _ = writeln!(text, "{rows} x {cols}:");
        for step in Step::ALL {
            let f32_plan = step.plan::<f32>(rows, cols, GpuShape::HOPPER_132_SMS)?.to_string();
            let bf16_plan = step.plan::<u16>(rows, cols, GpuShape::HOPPER_132_SMS)?.to_string();
            let _ = writeln!(text, "  {f32_plan}");
            if bf16_plan != f32_plan {
                let _ = writeln!(text, "    bf16: {bf16_plan}");
            }
        }
    }
    Ok(text)
}

/// What the simulator counts when `step` takes the softmax of 8 rows of 1024 f32, per kernel (the
/// cluster step: 2 rows of 2^15, the shortest rows it runs on a cluster).
fn counters(step: Step) -> Result<String, GpuError> {
    let device = Device::simulator()?;
    let (rows, cols) = if step == Step::ClusterRows { (2, 1 << 15) } else { (8, 1024) };
    let host: Vec<f32> = (0..rows * cols).map(|i| ((i * 37) % 101) as f32 / 16.0).collect();
    let input = device.upload(&host)?;
    let mut output = device.alloc::<f32>(rows * cols)?;
    let mut softmax = Softmax::new(&device, step)?;
    device.take_launches();
    softmax.softmax(input.as_view(), rows, cols, &mut output)?;
    let mut text = format!("{rows} rows of {cols} f32\n");
    for (kernel, counters) in device.take_launches() {
        let _ = write!(text, "{kernel}:\n{counters}\n");
    }
    Ok(text)
}

/// What torch gives for special values in one block's part (`part` elements) of a row of 2^16 on
/// the cluster step, across the cluster's exchange of max and sum.
fn semantics_across_a_cluster<T: Value>(device: &Device, part: usize) -> TestResult {
    const COLS: usize = 1 << 16;
    let rng = TestRng::new();
    let mut softmax = Softmax::new(device, Step::ClusterRows)?;
    let cols = COLS;
    let last = COLS - part;
    let rows: [(&str, &dyn Fn(usize) -> f32); 5] = [
        ("masked: the last block's part all -inf", &|i| {
            if i >= last { f32::NEG_INFINITY } else { 0.5 }
        }),
        ("a NaN in the third part", &|i| if i == 2 * part + 1000 { f32::NAN } else { 0.0 }),
        ("one finite, in the last part", &|i| if i == COLS - 1 { 2.0 } else { f32::NEG_INFINITY }),
        ("logits of 1e4 in the second part", &|i| if i / part == 1 { 1e4 } else { -1e4 }),
        ("all -inf", &|_| f32::NEG_INFINITY),
    ];
    for (what, row) in rows {
        let host: Vec<T> = (0..cols).map(|i| T::from_f32(row(i))).collect();
        check(device, &mut softmax, &rng, &host, (1, cols))
            .map_err(|e| format!("{} {what}: {e:?}", T::NAME))?;
        let got: Vec<f64> =
            softmax.softmax_host(&host, 1, cols)?.into_iter().map(T::to_f64).collect();
        let fail = |why: &str| Err(format!("cluster-rows {} {what}: {why}", T::NAME).into());
        match what {
            "a NaN in the third part" | "all -inf" if !got.iter().all(|y| y.is_nan()) => {
                return fail("expected NaN everywhere");
            }
            "masked: the last block's part all -inf" if got[last..].iter().any(|&y| y != 0.0) => {
                return fail("masked entries must be exactly 0");
            }
            "one finite, in the last part" if got[cols - 1] != 1.0 => {
                return fail("expected 1 at the finite entry");
            }
            _ => {}
        }
    }
    Ok(())
}

/// The shapes of the test of more than 2^32 elements: long rows (split rows' kernels, and the
/// cluster step's on a cluster of 4) and short ones (a warp per row, on-chip groups of 128).
const HUGE_SHAPES: [(usize, usize); 2] = [(65_537, 65_536), ((1 << 20) + 1, 4096)];

/// Every step on bf16 matrices of [`HUGE_SHAPES`], more than 2^32 elements each, checked on the
/// rows of [`rows_past_32_bits`].
fn more_than_2_to_the_32_elements(device: &Device) -> TestResult {
    let rng = TestRng::new();
    let seed = rng.seed();
    // Logits from a hash of the whole 64-bit index (and the seed): k / 16 - 8 in [-8, 8), exact in
    // bf16, every row different. The last row of each shape starts at element 2^32: an offset that
    // wraps there reads row 0's logits for it (other probabilities), or writes row 0 and leaves the
    // last row poisoned; one that wraps at 2^31 (a signed int) reads and writes before the matrix.
    // Either fails the rows checked at and past those offsets (or the launch).
    let logit = |i: usize| {
        ((i as u64 ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as f32 / 16.0 - 8.0
    };
    for (rows, cols) in HUGE_SHAPES {
        let checked = rows_past_32_bits(rows, cols);
        let input = device.upload(&by_index(rows * cols, |i| f32_to_bf16(logit(i))))?;
        let mut output = device.alloc::<u16>(rows * cols)?;
        let poisoned_row = vec![f32_to_bf16(POISON); cols];
        for step in Step::ALL {
            // The rows checked are poisoned before each launch (all 8 GiB, through the host, would
            // take seconds a launch).
            for &r in &checked {
                output.write_at(r * cols, &poisoned_row)?;
            }
            Softmax::new(device, step)?.softmax(input.as_view(), rows, cols, &mut output)?;
            for &r in &checked {
                let elements = r * cols..(r + 1) * cols;
                let x: Vec<u16> = elements.clone().map(|i| f32_to_bf16(logit(i))).collect();
                if let Some(wrong) = first_mismatch(&x, &output.view(elements)?.to_host()?, 1, cols)
                {
                    let at = format!("row {r} (from element {}), checked alone", r * cols);
                    return Err(
                        rng.fail(format!("{} bf16: {rows} x {cols}: {at}: {wrong}", step.name()))
                    );
                }
            }
        }
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
            for (step, rows, cols) in [
                (Step::Online, 1, MAX_SIDE + 1),
                (Step::WarpRows, MAX_SIDE + 1, 1),
                (Step::SplitRows, 3, MAX_SIDE + 1),
            ] {
                match step.plan::<f32>(rows, cols, GpuShape::HOPPER_132_SMS) {
                    Err(GpuError::BadInput(message)) => {
                        let _ = writeln!(text, "{} {rows} x {cols}: {message}", step.name());
                    }
                    other => {
                        return Err(
                            format!("{rows} x {cols}: expected BadInput, got {other:?}").into()
                        );
                    }
                }
            }
            insta::assert_snapshot!("rejected_plans", text);
            Ok(())
        })
        .cpu("cpu_reference_and_bf16_rounding", || {
            let p = softmax_cpu(&[1.0f32, 2.0, 3.0], 1, 3);
            let expected = [0.09003057317038046, 0.24472847105479767, 0.6652409557748219];
            if p.iter().zip(expected).any(|(a, b)| (a - b).abs() > 1e-15) {
                return Err(format!("softmax_cpu of [1, 2, 3]: {p:?}").into());
            }
            if !softmax_cpu(&[f32::NEG_INFINITY; 2], 1, 2).iter().all(|y| y.is_nan()) {
                return Err("softmax_cpu of an all -inf row is not NaN".into());
            }
            // Ties to even, the largest values, NaN kept quiet, -0.0 kept.
            let cases = [
                (1.0f32, 0x3f80u16),
                (f32::from_bits(0x3f80_8000), 0x3f80), // halfway, to even (down)
                (f32::from_bits(0x3f81_8000), 0x3f82), // halfway, to even (up)
                (f32::from_bits(0x3f80_8001), 0x3f81),
                (f32::MAX, 0x7f80),
                (f32::INFINITY, 0x7f80),
                (-0.0, 0x8000),
                (f32::from_bits(0x7f80_0001), 0x7fc0),
            ];
            for (x, bits) in cases {
                if f32_to_bf16(x) != bits {
                    return Err(format!(
                        "f32_to_bf16({x:e}) = {:#06x}, expected {bits:#06x}",
                        f32_to_bf16(x)
                    )
                    .into());
                }
            }
            if bf16_to_f32(0x3fc0) != 1.5 {
                return Err("bf16_to_f32(0x3fc0) is not 1.5".into());
            }
            Ok(())
        });

    for step in Step::ALL {
        let name = step.name();
        suite = suite
            .gpu(format!("{name}::f32_every_length"), move |device| {
                every_length::<f32>(device, step)
            })
            .gpu(format!("{name}::bf16_every_length"), move |device| {
                every_length::<u16>(device, step)
            })
            .gpu(format!("{name}::f32_torch_semantics"), move |device| {
                torch_semantics::<f32>(device, step)
            })
            .gpu(format!("{name}::bf16_torch_semantics"), move |device| {
                torch_semantics::<u16>(device, step)
            })
            .gpu(format!("{name}::views_at_odd_offsets"), move |device| {
                let mut rng = TestRng::new();
                let mut softmax = Softmax::new(device, step)?;
                for (rows, cols) in [(3, 33), (2, 1000), (1, 4097), (4, 64)] {
                    let n = rows * cols;
                    let host = logits::<f32>(&mut rng, n + 3);
                    let buffer = device.upload(&host)?;
                    let bf16: Vec<u16> = host.iter().map(|&x| f32_to_bf16(x)).collect();
                    let bf16_buffer = device.upload(&bf16)?;
                    for offset in 1..=3 {
                        let mut out = device.alloc::<f32>(n)?;
                        out.fill(POISON)?;
                        softmax.softmax(buffer.view(offset..offset + n)?, rows, cols, &mut out)?;
                        if let Some(m) =
                            first_mismatch(&host[offset..offset + n], &out.to_host()?, rows, cols)
                        {
                            return Err(rng.fail(format!(
                                "{name}: f32 {rows} x {cols} at offset {offset}: {m}"
                            )));
                        }
                        let mut out = device.alloc::<u16>(n)?;
                        out.fill(f32_to_bf16(POISON))?;
                        softmax.softmax(
                            bf16_buffer.view(offset..offset + n)?,
                            rows,
                            cols,
                            &mut out,
                        )?;
                        if let Some(m) =
                            first_mismatch(&bf16[offset..offset + n], &out.to_host()?, rows, cols)
                        {
                            return Err(rng.fail(format!(
                                "{name}: bf16 {rows} x {cols} at offset {offset}: {m}"
                            )));
                        }
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
            let (rows, cols) = (2, 4);
            let logits = [1.0f32, 2.0, 3.0, 4.0, 0.0, 0.0, f32::NEG_INFINITY, 1e4];
            let mut text = format!("logits, {rows} x {cols}: {logits:?}\n");
            let reference = softmax_cpu(&logits, rows, cols);
            let _ = writeln!(text, "f64 reference: {reference:.6?}");
            for step in Step::ALL {
                let got = Softmax::new(device, step)?.softmax_host(&logits, rows, cols)?;
                let _ = writeln!(text, "{:>10}: {got:.6?}", step.name());
                if let Some(m) = first_mismatch(&logits, &got, rows, cols) {
                    return Err(format!("{}: {m}", step.name()).into());
                }
            }
            insta::assert_snapshot!("worked_example", text);
            Ok(())
        })
        .gpu("wrong_lengths_are_errors", |device| {
            let mut softmax = Softmax::new(device, Step::SplitRows)?;
            let input = device.upload(&[0.0f32; 15])?;
            let mut text = String::new();
            for (rows, cols, out_len) in [(3, 4, 15), (3, 5, 14), (3, 5, 16), (1, MAX_SIDE + 1, 15)]
            {
                let mut out = device.alloc::<f32>(out_len)?;
                out.fill(POISON)?;
                match softmax.softmax(input.as_view(), rows, cols, &mut out) {
                    Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                    other => {
                        return Err(format!(
                            "{rows} x {cols} into {out_len}: expected BadInput, got {other:?}"
                        )
                        .into());
                    }
                }
                if out.to_host()?.iter().any(|&y| y != POISON) {
                    return Err(format!(
                        "{rows} x {cols} into {out_len}: an error wrote the output"
                    )
                    .into());
                }
            }
            match softmax.softmax_host(&[1u16; 7], 2, 3) {
                Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                other => {
                    return Err(format!(
                        "softmax_host of 7 as 2 x 3: expected BadInput, got {other:?}"
                    )
                    .into());
                }
            }
            match softmax.softmax_host(&[1.0f32; 4], usize::MAX / 2, 3) {
                Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                other => {
                    return Err(
                        format!("a shape past usize: expected BadInput, got {other:?}").into()
                    );
                }
            }
            insta::assert_snapshot!("wrong_lengths", text);
            Ok(())
        })
        .gpu("empty_matrices_launch_nothing", |device| {
            let device = &gpu_test::counting_device(device)?;
            for step in Step::ALL {
                let mut softmax = Softmax::new(device, step)?;
                let empty = device.alloc::<f32>(0)?;
                for (rows, cols) in [(0, 0), (0, 7), (7, 0)] {
                    let mut out = device.alloc::<f32>(0)?;
                    device.take_launches();
                    softmax.softmax(empty.as_view(), rows, cols, &mut out)?;
                    if !softmax.softmax_host::<u16>(&[], rows, cols)?.is_empty() {
                        return Err(format!(
                            "{}: the softmax of a {rows} x {cols} matrix is not empty",
                            step.name()
                        )
                        .into());
                    }
                    let launched = device.take_launches();
                    if !launched.is_empty() {
                        return Err(format!(
                            "{}: {rows} x {cols} launched {}",
                            step.name(),
                            launched.len()
                        )
                        .into());
                    }
                }
            }
            Ok(())
        })
        .gpu("on-chip::every_group_size_and_its_edges", |device| {
            // Each length where the on-chip group or the elements per thread change, and one past
            // it; 5 rows, so blocks of several groups have groups past the last row; up to the
            // longest row registers hold and one past it (split rows' kernels).
            let mut rng = TestRng::new();
            let mut softmax = Softmax::new(device, Step::OnChip)?;
            let mut lengths = vec![4, 128, 129, 256, 257, 512, 513];
            lengths.extend((10..=15).flat_map(|k| [1usize << k, (1 << k) + 1]));
            lengths.extend([(1 << 14) + 1, 3 << 13]);
            for cols in lengths {
                let rows = if cols > 1 << 14 { 2 } else { 5 };
                let host = logits::<f32>(&mut rng, rows * cols);
                check(device, &mut softmax, &rng, &host, (rows, cols))?;
                let host = logits::<u16>(&mut rng, rows * cols);
                check(device, &mut softmax, &rng, &host, (rows, cols))?;
            }
            Ok(())
        })
        .gpu("cluster-rows::every_cluster_size_and_its_edges", |device| {
            // Each length where the cluster grows, and one past it, from the longest row one block
            // holds (step 6's kernel) to one past the longest a cluster of 8 holds (split rows):
            // for f32 16,384 to 131,073, for bf16 (twice the elements a thread) 32,768 to 262,145;
            // rows whose parts are not all full, and rows at an odd offset (element by element).
            let mut rng = TestRng::new();
            let mut softmax = Softmax::new(device, Step::ClusterRows)?;
            let mut lengths = vec![1 << 14];
            lengths.extend((14..=18).map(|k| (1usize << k) + 1));
            lengths.extend([1 << 15, 1 << 16, 1 << 17, 1 << 18, 3 << 14, 3 << 15, (1 << 16) + 8]);
            for cols in lengths {
                let rows = if cols > 1 << 16 { 1 } else { 2 };
                if cols <= (1 << 17) + 1 {
                    let host = logits::<f32>(&mut rng, rows * cols);
                    check(device, &mut softmax, &rng, &host, (rows, cols))?;
                }
                let host = logits::<u16>(&mut rng, rows * cols);
                check(device, &mut softmax, &rng, &host, (rows, cols))?;
            }
            let (rows, cols) = (2, 40_000);
            let host = logits::<f32>(&mut rng, rows * cols + 1);
            let buffer = device.upload(&host)?;
            let mut out = device.alloc::<f32>(rows * cols)?;
            out.fill(POISON)?;
            softmax.softmax(buffer.view(1..rows * cols + 1)?, rows, cols, &mut out)?;
            if let Some(m) = first_mismatch(&host[1..], &out.to_host()?, rows, cols) {
                return Err(rng.fail(format!("cluster-rows: {rows} x {cols} at offset 1: {m}")));
            }
            Ok(())
        })
        .gpu("cluster-rows::runs_on_chip_before_hopper", |device| {
            // Before compute capability 9.0 (a GPU, or GPU_PROFILE=T4) the cluster step's kernels
            // are not compiled, and the step runs step 6's kernel; from 9.0 on, its own. On the
            // simulator, a device of its own, whose launches no other test adds to.
            let own;
            let device = if device.is_simulated() {
                own = Device::simulator()?;
                &own
            } else {
                device
            };
            let clusters = device.facts().compute_capability >= (9, 0);
            let mut softmax = Softmax::new(device, Step::ClusterRows)?;
            let expected = if clusters { Step::ClusterRows } else { Step::OnChip }.kernels(false);
            let mut rng = TestRng::new();
            let (rows, cols) = (2, 1 << 15);
            let host = logits::<f32>(&mut rng, rows * cols);
            check(device, &mut softmax, &rng, &host, (rows, cols))?;
            let launched = device.take_launched_kernels();
            // On a GPU nothing is recorded: there, the results checked above are the test.
            if device.is_simulated()
                && (launched.is_empty() || !launched.iter().all(|k| expected.contains(&k.as_str())))
            {
                let cc = device.facts().compute_capability;
                return Err(format!(
                    "compute capability {cc:?}: launched {launched:?}, expected some of \
                     {expected:?}"
                )
                .into());
            }
            Ok(())
        })
        .gpu("cluster-rows::torch_semantics_across_a_cluster", |device| {
            // Special values in one block's part of a row of 2^16: f32 on a cluster of 8 blocks
            // (8192 elements each), bf16 on one of 4 (16,384 each).
            semantics_across_a_cluster::<f32>(device, 1 << 13)?;
            semantics_across_a_cluster::<u16>(device, 1 << 14)
        })
        .cpu("cluster-rows::shapes", || {
            let mut text = String::new();
            for bf16 in [false, true] {
                let _ = writeln!(text, "{}:", if bf16 { "bf16" } else { "f32" });
                for k in [14, 15, 16, 17, 18] {
                    for cols in [1 << k, (1 << k) + 1] {
                        let _ =
                            writeln!(text, "  {cols}: {:?}", softmax::cluster_shape(cols, bf16));
                    }
                }
            }
            let gpu = GpuShape::HOPPER_132_SMS;
            for clusters in [true, false] {
                let plan = Step::ClusterRows.plan_for::<f32>(768, 1 << 16, gpu, clusters)?;
                let _ = writeln!(text, "768 x 2^16 f32, clusters {clusters}: {plan}");
                let plan = Step::ClusterRows.plan_for::<u16>(768, 1 << 16, gpu, clusters)?;
                let _ = writeln!(text, "768 x 2^16 bf16, clusters {clusters}: {plan}");
            }
            insta::assert_snapshot!("cluster_shapes", text);
            Ok(())
        })
        .cpu("on-chip::groups", || {
            let mut text = String::new();
            for cols in [
                0,
                1,
                31,
                256,
                257,
                512,
                513,
                1000,
                1024,
                1025,
                2048,
                4097,
                1 << 14,
                1 << 15,
                (1 << 15) + 1,
            ] {
                let _ = writeln!(text, "{cols}: {:?}", softmax::on_chip_group(cols));
            }
            insta::assert_snapshot!("on_chip_groups", text);
            Ok(())
        })
        .gpu_if(
            "huge::more_than_2^32_elements",
            |device| matrices_too_large_here(device, &HUGE_SHAPES, 2 * 2),
            more_than_2_to_the_32_elements,
        )
        .gpu("many_threads_on_one_device", |device| {
            let seed = TestRng::new().seed();
            on_threads(4, |k| {
                let mut rng = TestRng::with_seed(seed ^ k as u64);
                let step = Step::ALL[k % Step::ALL.len()];
                let mut softmax = Softmax::new(device, step)?;
                for _ in 0..3 {
                    let (rows, cols) = (rng.size_in(1..=20), rng.size_in(1..=300));
                    let host = logits::<f32>(&mut rng, rows * cols);
                    check(device, &mut softmax, &rng, &host, (rows, cols))?;
                }
                Ok(())
            })
        })
        .run()
}
