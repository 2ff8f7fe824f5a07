//! transpose's tests: every step on f32, i32 and u32 at edge and odd shapes (1 x 1 to tall and
//! thin, sides around the tiles), compared bit for bit with the CPU on fresh random words (NaN
//! payloads, infinities and -0.0 included); transposing twice; views at odd offsets; the copy;
//! wrong lengths, empty matrices and shapes the grid cannot hold; many threads at once; a matrix of
//! more than 2^32 elements on GPUs with the memory; and snapshots of launch plans, a worked example
//! and the simulator's counters.

use std::fmt::Write as _;

use gpu_harness::{Device, DeviceBuffer, GpuError};
use gpu_test::{
    TestResult, TestRng, TestSuite, counters_comparable, fits_test_time, on_threads, too_large_here,
};
use rand::RngExt;
use transpose::{
    MAX_SIDE, Step, TileCopy, TransposePlan, Transposer, Word, first_mismatch, transpose_cpu,
};

/// Shapes every step is tested on: the issue's, and sides at the tiles' edges (31, 32, 33, 63, 64,
/// 65) in both directions.
const SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (1, 1000),
    (1000, 1),
    (1, 31),
    (33, 1),
    (2, 3),
    (31, 31),
    (32, 32),
    (33, 33),
    (32, 33),
    (33, 65),
    (65, 33),
    (63, 64),
    (64, 63),
    (65, 65),
    (127, 129),
    (4097, 31),
    (31, 4097),
    (1000, 3000),
    (3001, 5003),
];

/// The bit patterns a transpose must carry unchanged: NaNs (quiet, signalling, negative, with
/// payloads), infinities, zeros of both signs, the smallest denormal, extremes of i32 and u32.
const SPECIAL_WORDS: &[u32] = &[
    0x7fc0_0000,
    0x7f80_0001,
    0xffc0_1234,
    0x7f80_0000,
    0xff80_0000,
    0x8000_0000,
    0x0000_0000,
    0x0000_0001,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0001,
];

/// Fills outputs before a launch: an element the kernel forgets stays this, and fails the check
/// unless the input held the same word there.
const POISON: u32 = 0xdead_beef;

/// A 4-byte type the tests draw random words of.
trait TestWord: Word + std::fmt::Debug {
    const NAME: &'static str;
    fn from_bits(bits: u32) -> Self;
}
impl TestWord for f32 {
    const NAME: &'static str = "f32";
    fn from_bits(bits: u32) -> Self {
        f32::from_bits(bits)
    }
}
impl TestWord for i32 {
    const NAME: &'static str = "i32";
    fn from_bits(bits: u32) -> Self {
        bits as i32
    }
}
impl TestWord for u32 {
    const NAME: &'static str = "u32";
    fn from_bits(bits: u32) -> Self {
        bits
    }
}

/// `n` random words with the special ones spread over them.
fn random_words<T: TestWord>(rng: &mut TestRng, n: usize) -> Vec<T> {
    let mut bits = rng.random_bits(n);
    for (k, &special) in SPECIAL_WORDS.iter().enumerate() {
        if n > 0 {
            let at = rng.rng().random_range(0..n);
            bits[(at + k) % n] = special;
        }
    }
    bits.into_iter().map(T::from_bits).collect()
}

/// Transposes `host` (a `rows x cols` matrix) with `transposer` on a poisoned output and checks
/// every element against the CPU; then transposes the result back and checks that it is `host`.
fn check_round_trip<T: TestWord>(
    device: &Device,
    transposer: &Transposer,
    rng: &TestRng,
    host: &[T],
    (rows, cols): (usize, usize),
) -> TestResult {
    let what = format!("{} {}: {rows} x {cols}", transposer.step().name(), T::NAME);
    let input = device.upload(host)?;
    let mut once = device.alloc::<T>(host.len())?;
    once.fill_words(POISON)?;
    transposer.transpose(input.as_view(), rows, cols, &mut once)?;
    let got = once.to_host()?;
    if let Some(mismatch) = first_mismatch(host, &got, rows, cols) {
        return Err(rng.fail(format!("{what}: {mismatch}")));
    }
    let mut twice = device.alloc::<T>(host.len())?;
    twice.fill_words(POISON)?;
    transposer.transpose(once.as_view(), cols, rows, &mut twice)?;
    if let Some(mismatch) = first_mismatch(&got, &twice.to_host()?, cols, rows) {
        return Err(rng.fail(format!("{what}, transposed back: {mismatch}")));
    }
    Ok(())
}

/// The step on every shape of [`SHAPES`] (those the device runs in test time), in type `T`.
fn every_shape<T: TestWord>(device: &Device, step: Step) -> TestResult {
    let mut rng = TestRng::new();
    let transposer = Transposer::new(device, step)?;
    for &(rows, cols) in SHAPES {
        if fits_test_time(device, rows * cols).is_some() {
            continue;
        }
        let host = random_words::<T>(&mut rng, rows * cols);
        check_round_trip(device, &transposer, &rng, &host, (rows, cols))?;
    }
    Ok(())
}

/// Plans of every step (and the copy) at the shapes and the measured ones.
fn plan_snapshot() -> Result<String, GpuError> {
    let shapes = [
        (1, 1),
        (1, 1000),
        (1000, 1),
        (33, 65),
        (1000, 3000),
        (4097, 31),
        (16384, 16384),
        (1 << 20, 256),
    ];
    let mut text = String::new();
    for &(rows, cols) in &shapes {
        let _ = writeln!(text, "{rows} x {cols}:");
        let _ = writeln!(text, "  {}", TileCopy::plan(rows, cols)?);
        for step in Step::ALL {
            let _ = writeln!(text, "  {}", step.plan(rows, cols)?);
        }
    }
    Ok(text)
}

/// A matrix as text, one row per line.
fn grid(values: &[u32], rows: usize, cols: usize) -> String {
    values
        .chunks(cols)
        .take(rows)
        .map(|row| row.iter().map(|v| format!("{v:>3}")).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the simulator counts when `kernel` moves a 64 x 64 matrix.
fn counters(
    run: impl FnOnce(&Device, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>) -> Result<(), GpuError>,
) -> Result<String, GpuError> {
    let device = Device::simulator()?;
    let (rows, cols) = (64, 64);
    let host: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let input = device.upload(&host)?;
    let mut output = device.alloc::<f32>(rows * cols)?;
    run(&device, &input, &mut output)?;
    let counters =
        device.last_launch_counters().ok_or_else(|| GpuError::Unsupported("no counters".into()))?;
    Ok(format!("a 64 x 64 matrix of f32\n{counters}"))
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new()
        .cpu("illustration::launch_plans", || {
            insta::assert_snapshot!("launch_plans", plan_snapshot()?);
            Ok(())
        })
        .cpu("plans_reject_what_the_grid_cannot_hold", || {
            let mut text = String::new();
            for (step, rows, cols) in [
                (Step::Padded, 0, 5),
                (Step::Padded, 2_097_121, 1),
                (Step::WideTiles, 4_194_241, 1),
                (Step::WideTiles, 1, MAX_SIDE + 1),
                (Step::ColumnOrder, 1, 4_194_241),
            ] {
                match step.plan(rows, cols) {
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
            // The largest shapes the grid holds are accepted; the turned grid of step 7 takes any
            // number of rows and at most 65,535 tiles of columns.
            let fit: [TransposePlan; 4] = [
                Step::Padded.plan(2_097_120, 1)?,
                Step::WideTiles.plan(4_194_240, 1)?,
                Step::ColumnOrder.plan(1, 4_194_240)?,
                Step::ColumnOrder.plan(4_194_241, 1)?,
            ];
            for plan in fit {
                let _ = writeln!(text, "{plan}");
            }
            insta::assert_snapshot!("rejected_plans", text);
            Ok(())
        })
        .cpu("cpu_reference_transposes", || {
            let matrix: Vec<u32> = (0..6).collect();
            if transpose_cpu(&matrix, 2, 3) != [0, 3, 1, 4, 2, 5] {
                return Err("transpose_cpu of a 2 x 3 matrix".into());
            }
            let back = transpose_cpu(&transpose_cpu(&matrix, 2, 3), 3, 2);
            if back != matrix
                || first_mismatch(&matrix, &transpose_cpu(&matrix, 2, 3), 2, 3).is_some()
            {
                return Err("transposing twice on the CPU".into());
            }
            match first_mismatch(&matrix, &matrix, 2, 3) {
                Some(m) if (m.row, m.col) == (1, 0) => Ok(()),
                other => {
                    Err(format!("first_mismatch missed the untransposed matrix: {other:?}").into())
                }
            }
        });

    for step in Step::ALL {
        let name = step.name();
        suite = suite
            .gpu(format!("{name}::f32_every_shape"), move |device| every_shape::<f32>(device, step))
            .gpu(format!("{name}::i32_every_shape"), move |device| every_shape::<i32>(device, step))
            .gpu(format!("{name}::u32_every_shape"), move |device| every_shape::<u32>(device, step))
            .gpu(format!("{name}::views_at_odd_offsets"), move |device| {
                let mut rng = TestRng::new();
                let transposer = Transposer::new(device, step)?;
                for (rows, cols) in [(33, 65), (64, 64), (5, 3)] {
                    let n = rows * cols;
                    let host = random_words::<f32>(&mut rng, n + 3);
                    let buffer = device.upload(&host)?;
                    for offset in 1..=3 {
                        let mut out = device.alloc::<f32>(n)?;
                        out.fill_words(POISON)?;
                        transposer.transpose(
                            buffer.view(offset..offset + n)?,
                            rows,
                            cols,
                            &mut out,
                        )?;
                        if let Some(m) =
                            first_mismatch(&host[offset..offset + n], &out.to_host()?, rows, cols)
                        {
                            return Err(rng
                                .fail(format!("{name}: {rows} x {cols} at offset {offset}: {m}")));
                        }
                    }
                }
                Ok(())
            })
            .nvrtc_if(
                format!("illustration::{name}::simulator_counters"),
                counters_comparable,
                move || {
                    let counted = counters(|device, input, output| {
                        Transposer::new(device, step)?.transpose(input.as_view(), 64, 64, output)
                    })?;
                    insta::assert_snapshot!(format!("{name}_simulator_counters"), counted);
                    Ok(())
                },
            )
            .gpu(format!("{name}::host_slices"), move |device| {
                let mut rng = TestRng::new();
                let transposer = Transposer::new(device, step)?;
                let (rows, cols) = (47, 29);
                let host = random_words::<i32>(&mut rng, rows * cols);
                let got = transposer.transpose_host(&host, rows, cols)?;
                if got != transpose_cpu(&host, rows, cols) {
                    return Err(
                        rng.fail(format!("{name}: transpose_host of a {rows} x {cols} matrix"))
                    );
                }
                Ok(())
            });
    }

    suite
        .gpu("copy::every_shape", |device| {
            let mut rng = TestRng::new();
            let copy = TileCopy::new(device)?;
            for &(rows, cols) in SHAPES {
                if fits_test_time(device, rows * cols).is_some() {
                    continue;
                }
                let host = random_words::<u32>(&mut rng, rows * cols);
                let input = device.upload(&host)?;
                let mut out = device.alloc::<u32>(host.len())?;
                out.fill_words(POISON)?;
                copy.copy(input.as_view(), rows, cols, &mut out)?;
                if out.to_host()? != host {
                    return Err(rng
                        .fail(format!("copy of a {rows} x {cols} matrix differs from its input")));
                }
            }
            Ok(())
        })
        .gpu("worked_example", |device| {
            let (rows, cols) = (3, 5);
            let matrix: Vec<u32> = (0..(rows * cols) as u32).collect();
            let mut text =
                format!("a {rows} x {cols} matrix, row-major:\n{}\n", grid(&matrix, rows, cols));
            let mut first: Option<Vec<u32>> = None;
            for step in Step::ALL {
                let got = Transposer::new(device, step)?.transpose_host(&matrix, rows, cols)?;
                match &first {
                    None => {
                        let _ = write!(
                            text,
                            "\nits transpose, {cols} x {rows}:\n{}\n",
                            grid(&got, cols, rows)
                        );
                        let _ = write!(text, "\nin memory: {got:?}\n");
                        first = Some(got);
                    }
                    Some(expected) if *expected != got => {
                        return Err(format!(
                            "{} differs from {}: {got:?}",
                            step.name(),
                            Step::ALL[0].name()
                        )
                        .into());
                    }
                    Some(_) => {}
                }
            }
            insta::assert_snapshot!("worked_example", text);
            Ok(())
        })
        .gpu("wrong_lengths_are_errors", |device| {
            let transposer = Transposer::new(device, Step::WideTiles)?;
            let input = device.upload(&[0.0f32; 15])?;
            let mut text = String::new();
            for (rows, cols, out_len) in [(3, 4, 15), (3, 5, 14), (3, 5, 16)] {
                let mut out = device.alloc::<f32>(out_len)?;
                match transposer.transpose(input.as_view(), rows, cols, &mut out) {
                    Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                    other => {
                        return Err(format!(
                            "{rows} x {cols} into {out_len}: expected BadInput, got {other:?}"
                        )
                        .into());
                    }
                }
            }
            match transposer.transpose_host(&[1u32; 7], 2, 3) {
                Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                other => {
                    return Err(format!(
                        "transpose_host of 7 as 2 x 3: expected BadInput, got {other:?}"
                    )
                    .into());
                }
            }
            let mut out = device.alloc::<f32>(15)?;
            match TileCopy::new(device)?.copy(input.view(1..)?, 3, 5, &mut out) {
                Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                other => {
                    return Err(
                        format!("copy of 14 as 3 x 5: expected BadInput, got {other:?}").into()
                    );
                }
            }
            insta::assert_snapshot!("wrong_lengths", text);
            Ok(())
        })
        .gpu("empty_matrices_launch_nothing", |device| {
            for step in Step::ALL {
                let transposer = Transposer::new(device, step)?;
                let empty = device.alloc::<f32>(0)?;
                for (rows, cols) in [(0, 0), (0, 7), (7, 0)] {
                    let mut out = device.alloc::<f32>(0)?;
                    transposer.transpose(empty.as_view(), rows, cols, &mut out)?;
                    if !transposer.transpose_host::<u32>(&[], rows, cols)?.is_empty() {
                        return Err(format!(
                            "{}: the transpose of a {rows} x {cols} matrix is not empty",
                            step.name()
                        )
                        .into());
                    }
                }
            }
            Ok(())
        })
        .gpu("many_threads_on_one_device", |device| {
            let seed = TestRng::new().seed();
            on_threads(4, |k| {
                let mut rng = TestRng::with_seed(seed ^ k as u64);
                let step = Step::ALL[k % Step::ALL.len()];
                let transposer = Transposer::new(device, step)?;
                for round in 0..3 {
                    let (rows, cols) = (rng.size_in(1..=200), rng.size_in(1..=200));
                    let host = random_words::<u32>(&mut rng, rows * cols);
                    let got = transposer.transpose_host(&host, rows, cols)?;
                    if let Some(m) = first_mismatch(&host, &got, rows, cols) {
                        return Err(rng.fail(format!("round {round}, {rows} x {cols}: {m}")));
                    }
                }
                Ok(())
            })
        })
        .gpu_if(
            "huge::more_than_2^32_elements",
            |device| {
                let n = 65_537usize * 65_536;
                too_large_here(device, n, 2 * 4 * n as u64)
            },
            |device| {
                // Words that differ beyond 2^32: element i holds its index's low 32 bits, scrambled
                // by the high ones, so an offset that wraps at 2^32 reads the wrong word.
                let (rows, cols) = (65_537usize, 65_536usize);
                let word = |i: usize| (i as u32) ^ ((i >> 32) as u32).wrapping_mul(0x9e37_79b9);
                let host: Vec<u32> = (0..rows * cols).map(word).collect();
                let input = device.upload(&host)?;
                drop(host);
                let mut out = device.alloc::<u32>(rows * cols)?;
                // Step 6 and step 7: the same offsets from a grid the other way round.
                for step in [Step::WideTiles, Step::ColumnOrder] {
                    out.fill_words(POISON)?;
                    Transposer::new(device, step)?.transpose(
                        input.as_view(),
                        rows,
                        cols,
                        &mut out,
                    )?;
                    let got = out.to_host()?;
                    for c in 0..cols {
                        for r in 0..rows {
                            if got[c * rows + r] != word(r * cols + c) {
                                let name = step.name();
                                return Err(format!(
                                    "{name}: {rows} x {cols}: element ({r}, {c}) is wrong"
                                )
                                .into());
                            }
                        }
                    }
                }
                Ok(())
            },
        )
        .nvrtc_if("copy::simulator_counters", counters_comparable, || {
            let counted = counters(|device, input, output| {
                TileCopy::new(device)?.copy(input.as_view(), 64, 64, output)
            })?;
            insta::assert_snapshot!("copy_simulator_counters", counted);
            Ok(())
        })
        .run()
}
