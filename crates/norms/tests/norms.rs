//! norms' tests: every step of both norms on f32 and bf16 rows of the lengths (1, 31, 32,
//! 33, 1000, 4097, 2^17 + 3) and those at and past the registers' capacity (1024 to 8193), several
//! row counts, on fresh random rows (shifted away from 0, so the mean matters), weights and biases,
//! against the f64 CPU reference within `norms::tolerance`; what torch does with constant rows,
//! zeros, NaN and infinities, and what it cannot do with 1e30 and 3e38 (overflow), tiny values and
//! subnormals, torch's eps, a custom one and 0; rows, weights and biases at odd offsets (the
//! one-element-at-a-time path of the 16-byte loads), and step 3's full-lanes kernel launched only
//! where every address is on a 16-byte boundary, with special rows between ordinary ones in the
//! same block; wrong lengths and eps, empty matrices and shapes past the kernels' indices; many
//! threads at once; bf16 matrices of more than 2^32 elements, long rows and short, on GPUs with the
//! memory; and snapshots of launch plans, a worked example and the simulator's counters. Outputs
//! are poisoned before every launch (in the test of more than 2^32 elements, the rows it reads
//! back).

use std::fmt::Write as _;

use gpu_harness::{Device, GpuError};
use gpu_test::{
    TestResult, TestRng, TestSuite, by_index, counters_comparable, fits_test_time,
    matrices_too_large_here, on_threads, rows_past_32_bits,
};
use norms::{
    DEFAULT_EPS, MAX_SIDE, Norm, Norms, Problem, Step, Value, bf16_to_f32, f32_to_bf16,
    first_mismatch, poison, reference, warps_per_row,
};

/// The row lengths and the registers' edges, each with the row counts it is tested at.
const SHAPES: &[(usize, &[usize])] = &[
    (1, &[1, 5]),
    (31, &[1, 3]),
    (32, &[2, 9]),
    (33, &[1, 7]),
    (1000, &[1, 3]),
    (1024, &[9]),
    (2048, &[3]),
    (4096, &[3]),
    (4097, &[2]),
    (8192, &[1]),
    (8193, &[1]),
    ((1 << 17) + 3, &[1]),
];

/// A row's values: uniform in [-2, 2) around a shift in [-8, 8) drawn per row, so that the mean is
/// not 0 and the variance is taken around it.
fn matrix<T: Value>(rng: &mut TestRng, rows: usize, cols: usize) -> Vec<T> {
    let mut x = Vec::with_capacity(rows * cols);
    for _ in 0..rows {
        let shift = rng.uniform_f32(1, -8.0, 8.0)[0];
        x.extend(rng.uniform_f32(cols, -2.0, 2.0).into_iter().map(|v| T::from_f32(v + shift)));
    }
    x
}

/// A weight in [-2, 2) (some negative) and a bias in [-1, 1), one per column.
fn parameters<T: Value>(rng: &mut TestRng, cols: usize) -> (Vec<T>, Vec<T>) {
    let draw = |rng: &mut TestRng, low, high| {
        rng.uniform_f32(cols, low, high).into_iter().map(T::from_f32).collect()
    };
    (draw(rng, -2.0, 2.0), draw(rng, -1.0, 1.0))
}

/// The registry's name of a step of a norm.
fn step_name(norm: Norm, step: Step) -> String {
    format!("{}{}", if norm == Norm::Rms { "rms-" } else { "" }, step.name())
}

/// Runs `norms` on `p` into a poisoned output and returns what came back.
fn run<T: Value>(device: &Device, norms: &Norms, p: &Problem<'_, T>) -> Result<Vec<T>, GpuError> {
    let (x, weight, bias) = (device.upload(p.x)?, device.upload(p.weight)?, device.upload(p.bias)?);
    let mut y = device.alloc::<T>(p.x.len())?;
    y.fill(poison::<T>())?;
    match p.norm {
        Norm::Layer => norms.layer_norm(
            x.as_view(),
            (p.rows, p.cols),
            weight.as_view(),
            bias.as_view(),
            p.eps,
            &mut y,
        )?,
        Norm::Rms => {
            norms.rms_norm(x.as_view(), (p.rows, p.cols), weight.as_view(), p.eps, &mut y)?
        }
    }
    y.to_host()
}

/// Runs `norms` on `p` and checks the result against the reference.
fn check<T: Value>(
    device: &Device,
    norms: &Norms,
    rng: &TestRng,
    p: &Problem<'_, T>,
) -> TestResult {
    let got = run(device, norms, p)?;
    match first_mismatch(p, &got) {
        None => Ok(()),
        Some(wrong) => Err(rng.fail(format!(
            "{} {}: {} x {}, eps {}: {wrong}",
            step_name(p.norm, norms.step()),
            T::NAME,
            p.rows,
            p.cols,
            p.eps
        ))),
    }
}

/// The problem of `norm` on `x`, with the bias only where the norm has one.
fn problem<'a, T>(
    norm: Norm,
    x: &'a [T],
    (rows, cols): (usize, usize),
    weight: &'a [T],
    bias: &'a [T],
    eps: f32,
) -> Problem<'a, T> {
    let bias = if norm == Norm::Layer { bias } else { &[] };
    Problem { norm, x, rows, cols, weight, bias, eps }
}

/// The step on every shape of [`SHAPES`] (those the device runs in test time), in type `T`.
fn every_length<T: Value>(device: &Device, norm: Norm, step: Step) -> TestResult {
    let mut rng = TestRng::new();
    let norms = Norms::new(device, step)?;
    for &(cols, row_counts) in SHAPES {
        for &rows in row_counts {
            if fits_test_time(device, rows * cols).is_some() {
                continue;
            }
            let x = matrix::<T>(&mut rng, rows, cols);
            let (weight, bias) = parameters::<T>(&mut rng, cols);
            check(
                device,
                &norms,
                &rng,
                &problem(norm, &x, (rows, cols), &weight, &bias, DEFAULT_EPS),
            )?;
        }
    }
    Ok(())
}

/// Rows that torch answers in a particular way (or would, without overflow), of `n` elements, and
/// the eps each is tested with.
fn torch_rows(n: usize) -> Vec<(&'static str, Vec<f32>, f32)> {
    let inf = f32::INFINITY;
    let row = |f: &dyn Fn(usize) -> f32| (0..n).map(f).collect::<Vec<f32>>();
    let wave = |i: usize| ((i * 7) % 13) as f32 / 13.0 - 0.5;
    vec![
        ("a constant row", row(&|_| 0.1), DEFAULT_EPS),
        ("a constant row of 1e30", row(&|_| 1e30), DEFAULT_EPS),
        ("a constant row of -3e38", row(&|_| -3e38), DEFAULT_EPS),
        ("zeros", row(&|_| 0.0), DEFAULT_EPS),
        ("negative zeros", row(&|_| -0.0), DEFAULT_EPS),
        ("a constant row, eps 0", row(&|_| 0.1), 0.0),
        ("zeros, eps 0", row(&|_| 0.0), 0.0),
        ("a NaN", row(&|i| if i == 17 { f32::NAN } else { wave(i) }), DEFAULT_EPS),
        ("a +inf", row(&|i| if i == 5 { inf } else { wave(i) }), DEFAULT_EPS),
        ("a -inf", row(&|i| if i == 33 { -inf } else { wave(i) }), DEFAULT_EPS),
        (
            "+inf and -inf",
            row(&|i| {
                if i == 3 {
                    inf
                } else if i == 4 {
                    -inf
                } else {
                    wave(i)
                }
            }),
            DEFAULT_EPS,
        ),
        ("magnitudes of 1e30", row(&|i| wave(i) * 1e30), DEFAULT_EPS),
        ("3e38 and -3e38", row(&|i| if i % 2 == 0 { 3e38 } else { -3e38 }), DEFAULT_EPS),
        ("1e30 around 1e32", row(&|i| 1e32 + wave(i) * 1e30), DEFAULT_EPS),
        (
            "one 1e30 among small values",
            row(&|i| if i == 21 { 1e30 } else { wave(i) }),
            DEFAULT_EPS,
        ),
        // 100 at every lane's first element of step 3's bf16 full lanes (vector l's first, element
        // 8 l, for the n / 32 lanes of a row of n): the one sweep's worst cancellation.
        (
            "outliers at the lanes' first elements",
            row(&|i| if i % 8 == 0 && i < n / 4 { 100.0 } else { wave(i) }),
            DEFAULT_EPS,
        ),
        ("magnitudes of 1e-30", row(&|i| wave(i) * 1e-30), DEFAULT_EPS),
        ("magnitudes of 1e-30, eps 0", row(&|i| wave(i) * 1e-30), 0.0),
        ("subnormals", row(&|i| wave(i) * 1e-40), DEFAULT_EPS),
        ("subnormals, eps 0", row(&|i| wave(i) * 1e-40), 0.0),
        ("a custom eps, 0.5", row(&wave), 0.5),
        ("eps 0", row(&wave), 0.0),
    ]
}

/// torch's answers: checked against the reference, and spelled out where they are special. Rows
/// of 40 elements (a warp's lanes and the block's threads hold more than one), and for step 3 rows
/// of 1024 and 4096 too (one warp and four, every lane full: its full-lanes kernel).
fn torch_semantics<T: Value>(device: &Device, norm: Norm, step: Step) -> TestResult {
    let lengths: &[usize] = if step == Step::ByLength { &[40, 1024, 4096] } else { &[40] };
    for &n in lengths {
        torch_semantics_of_length::<T>(device, norm, step, n)?;
    }
    Ok(())
}

fn torch_semantics_of_length<T: Value>(
    device: &Device,
    norm: Norm,
    step: Step,
    n: usize,
) -> TestResult {
    let rng = TestRng::new();
    let norms = Norms::new(device, step)?;
    let weight: Vec<T> = (0..n)
        .map(|i| T::from_f32(if i % 4 == 3 { -1.5 } else { 0.75 + (i % 40) as f32 / 64.0 }))
        .collect();
    let bias: Vec<T> = (0..n).map(|i| T::from_f32((i % 40) as f32 / 8.0 - 2.0)).collect();
    for (what, row, eps) in torch_rows(n) {
        let x: Vec<T> = row.iter().map(|&v| T::from_f32(v)).collect();
        let p = problem(norm, &x, (1, n), &weight, &bias, eps);
        check(device, &norms, &rng, &p).map_err(|e| format!("{what}, {n} elements: {e:?}"))?;
        let got: Vec<f64> = run(device, &norms, &p)?.into_iter().map(Value::to_f64).collect();
        let fail = |why: &str| {
            let shown = &got[..got.len().min(48)];
            Err(format!(
                "{} {} {what}, {n} elements: {why}: {shown:?}",
                step_name(norm, step),
                T::NAME
            )
            .into())
        };
        let all_nan = got.iter().all(|y| y.is_nan());
        let bias_exactly = got.iter().zip(&bias).all(|(&y, &b)| y == b.to_f64());
        match (norm, what) {
            (_, "a NaN") if !all_nan => return fail("expected NaN everywhere"),
            (Norm::Layer, "a +inf" | "a -inf" | "+inf and -inf") if !all_nan => {
                return fail("expected NaN everywhere");
            }
            (Norm::Rms, "a +inf" | "a -inf") => {
                let at = if what == "a +inf" { 5 } else { 33 };
                if !got[at].is_nan() || got.iter().enumerate().any(|(i, &y)| i != at && y != 0.0) {
                    return fail("expected NaN where the infinity is and 0 elsewhere");
                }
                // x / inf is a zero of the sign of x w, as torch's [0.0, nan, -0.0, 0.0] shows.
                let negative = |i: usize| (x[i].to_f64() * weight[i].to_f64()) < 0.0;
                if (0..n).any(|i| i != at && got[i].is_sign_negative() != negative(i)) {
                    return fail("expected each zero to carry the sign of x w");
                }
            }
            (
                Norm::Layer,
                "a constant row"
                | "a constant row of 1e30"
                | "a constant row of -3e38"
                | "zeros"
                | "negative zeros",
            ) if !bias_exactly => {
                return fail("a constant row must give the bias exactly");
            }
            (Norm::Layer, "a constant row, eps 0" | "zeros, eps 0")
            | (Norm::Rms, "zeros, eps 0")
                if !all_nan =>
            {
                return fail("0 / sqrt(0 + 0) is NaN");
            }
            (Norm::Rms, "zeros" | "negative zeros") if got.iter().any(|&y| y != 0.0) => {
                return fail("expected zeros");
            }
            (_, w)
                if (w.starts_with("magnitudes") || w.starts_with("3e38") || w.contains("1e30"))
                    && got.iter().any(|y| !y.is_finite()) =>
            {
                return fail("overflowed");
            }
            _ => {}
        }
    }
    Ok(())
}

/// Rows, weights and biases at offsets 1 to 3 into their buffers: the vectors of the last step do
/// not start on 16-byte boundaries, and it reads them one element at a time.
fn views_at_odd_offsets<T: Value>(device: &Device, norm: Norm, step: Step) -> TestResult {
    let mut rng = TestRng::new();
    let norms = Norms::new(device, step)?;
    for (rows, cols) in [(3, 33), (2, 1000), (1, 4097), (4, 64), (9, 1024)] {
        let n = rows * cols;
        let x = matrix::<T>(&mut rng, 1, n + 3);
        let (weight, bias) = parameters::<T>(&mut rng, cols + 3);
        let (xs, ws, bs) = (device.upload(&x)?, device.upload(&weight)?, device.upload(&bias)?);
        for offset in 0..=3 {
            let (w_at, b_at) = ((offset + 1) % 4, (offset + 2) % 4);
            let mut y = device.alloc::<T>(n)?;
            y.fill(poison::<T>())?;
            let xv = xs.view(offset..offset + n)?;
            let wv = ws.view(w_at..w_at + cols)?;
            let bv = bs.view(b_at..b_at + cols)?;
            match norm {
                Norm::Layer => norms.layer_norm(xv, (rows, cols), wv, bv, DEFAULT_EPS, &mut y)?,
                Norm::Rms => norms.rms_norm(xv, (rows, cols), wv, DEFAULT_EPS, &mut y)?,
            }
            let (w_host, b_host) = (&weight[w_at..w_at + cols], &bias[b_at..b_at + cols]);
            let p =
                problem(norm, &x[offset..offset + n], (rows, cols), w_host, b_host, DEFAULT_EPS);
            if let Some(m) = first_mismatch(&p, &y.to_host()?) {
                let at = format!("x at {offset}, weight at {w_at}, bias at {b_at}");
                return Err(rng.fail(format!(
                    "{} {} {rows} x {cols}, {at}: {m}",
                    step_name(norm, step),
                    T::NAME
                )));
            }
        }
    }
    Ok(())
}

/// Step 3's bf16 full-lanes layer norm takes a row's statistics unscaled first, and takes them
/// again scaled where the row fails its test (a NaN, an infinity, overflowing squares, a constant
/// row, tiny values); with several warps a row the verdict is the block's (the other kernels are
/// held to the same rows). Here every special row of
/// [`torch_rows`] (those at torch's eps) sits in a matrix between ordinary rows, so that blocks
/// hold passing and failing rows together: one warp a row (1024: eight rows a block), two (2048),
/// four (4096) and eight (8192: a block a row). Each row is checked against the reference.
fn special_rows_beside_plain_ones<T: Value>(device: &Device, norm: Norm, step: Step) -> TestResult {
    let mut rng = TestRng::new();
    let norms = Norms::new(device, step)?;
    for n in [1024, 2048, 4096, 8192] {
        let special: Vec<Vec<f32>> = torch_rows(n)
            .into_iter()
            .filter(|(_, _, eps)| *eps == DEFAULT_EPS)
            .map(|(_, row, _)| row)
            .collect();
        let mut x: Vec<T> = Vec::new();
        for (k, row) in special.iter().enumerate() {
            // One or two plain rows before each special one, so that the special rows fall at
            // every place in a block.
            x.extend(matrix::<T>(&mut rng, 1 + k % 2, n));
            x.extend(row.iter().map(|&v| T::from_f32(v)));
        }
        let rows = x.len() / n;
        if fits_test_time(device, rows * n).is_some() {
            continue;
        }
        let (weight, bias) = parameters::<T>(&mut rng, n);
        check(device, &norms, &rng, &problem(norm, &x, (rows, n), &weight, &bias, DEFAULT_EPS))?;
    }
    Ok(())
}

/// Step 3's full-lanes kernel loads and stores 16 bytes unchecked, so `Norms` launches it only
/// where x, y, the weight and the bias all start on 16-byte boundaries: rows of 1024 and 4096 at
/// element offsets that are, and are not, whole 16 bytes for `T` (4 elements of f32 are, of bf16
/// are not), on the simulator, which records each launch's kernel; each result checked too.
fn full_lanes_only_where_aligned<T: Value>() -> TestResult {
    let device = Device::simulator()?;
    let mut rng = TestRng::new();
    let norms = Norms::new(&device, Step::ByLength)?;
    for (rows, cols) in [(3, 1024), (2, 4096)] {
        let n = rows * cols;
        let x = matrix::<T>(&mut rng, 1, n + 8);
        let (weight, bias) = parameters::<T>(&mut rng, cols + 8);
        let (xs, ws, bs) = (device.upload(&x)?, device.upload(&weight)?, device.upload(&bias)?);
        for norm in Norm::ALL {
            for (x_at, w_at, b_at) in
                [(0, 0, 0), (4, 0, 4), (8, 8, 0), (1, 0, 0), (0, 2, 0), (0, 0, 3)]
            {
                let aligned = [x_at, w_at, b_at]
                    .iter()
                    .all(|at| (at * std::mem::size_of::<T>()) % 16 == 0)
                    || (norm == Norm::Rms
                        && [x_at, w_at].iter().all(|at| (at * std::mem::size_of::<T>()) % 16 == 0));
                let mut y = device.alloc::<T>(n)?;
                y.fill(poison::<T>())?;
                let (xv, wv, bv) = (
                    xs.view(x_at..x_at + n)?,
                    ws.view(w_at..w_at + cols)?,
                    bs.view(b_at..b_at + cols)?,
                );
                device.take_launched_kernels();
                match norm {
                    Norm::Layer => {
                        norms.layer_norm(xv, (rows, cols), wv, bv, DEFAULT_EPS, &mut y)?
                    }
                    Norm::Rms => norms.rms_norm(xv, (rows, cols), wv, DEFAULT_EPS, &mut y)?,
                }
                let launched = device.take_launched_kernels();
                let full = format!("{}{}", Step::ByLength.full_row_kernel(norm), T::SUFFIX);
                let general = format!("{}{}", Step::ByLength.kernel(norm), T::SUFFIX);
                let expected = if aligned { &full } else { &general };
                let at = format!(
                    "{} {} {rows} x {cols}, x at {x_at}, weight at {w_at}, bias at {b_at}",
                    norm.name(),
                    T::NAME
                );
                if launched != [expected.clone()] {
                    return Err(format!("{at}: launched {launched:?}, expected {expected}").into());
                }
                let p = problem(
                    norm,
                    &x[x_at..x_at + n],
                    (rows, cols),
                    &weight[w_at..w_at + cols],
                    &bias[b_at..b_at + cols],
                    DEFAULT_EPS,
                );
                if let Some(m) = first_mismatch(&p, &y.to_host()?) {
                    return Err(rng.fail(format!("{at}: {m}")));
                }
            }
        }
    }
    Ok(())
}

/// Plans of every step at the shapes and the tests' (they depend on neither the GPU nor
/// the element type).
fn plan_snapshot() -> Result<String, GpuError> {
    let shapes = [
        (1, 1),
        (5, 31),
        (3, 1000),
        (9, 1024),
        (8192, 4096),
        (65536, 1024),
        (2, 4097),
        (3, 2048),
        (1, 8192),
        (1, 8193),
        (1, (1 << 17) + 3),
    ];
    let mut text = String::new();
    for &(rows, cols) in &shapes {
        let _ = writeln!(text, "{rows} x {cols}:");
        for step in Step::ALL {
            let _ = writeln!(text, "  {}", step.plan(Norm::Layer, rows, cols)?);
        }
        let _ = writeln!(text, "  {}", Step::TwoPass.plan(Norm::Rms, rows, cols)?);
    }
    Ok(text)
}

/// What the simulator counts when `step` takes `norm` of `rows` rows of `cols` f32.
fn counters(norm: Norm, step: Step, rows: usize, cols: usize) -> Result<String, GpuError> {
    let device = Device::simulator()?;
    let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 37) % 101) as f32 / 16.0).collect();
    let weight: Vec<f32> = (0..cols).map(|i| 1.0 + (i % 7) as f32 / 8.0).collect();
    let bias: Vec<f32> = (0..cols).map(|i| (i % 5) as f32 / 4.0).collect();
    let norms = Norms::new(&device, step)?;
    let (xs, w, b) = (device.upload(&x)?, device.upload(&weight)?, device.upload(&bias)?);
    let mut y = device.alloc::<f32>(rows * cols)?;
    device.take_launches();
    match norm {
        Norm::Layer => norms.layer_norm(
            xs.as_view(),
            (rows, cols),
            w.as_view(),
            b.as_view(),
            DEFAULT_EPS,
            &mut y,
        )?,
        Norm::Rms => {
            norms.rms_norm(xs.as_view(), (rows, cols), w.as_view(), DEFAULT_EPS, &mut y)?
        }
    }
    let mut text = format!("{} of {rows} rows of {cols} f32\n", norm.name());
    for (kernel, counters) in device.take_launches() {
        let _ = write!(text, "{kernel}:\n{counters}\n");
    }
    Ok(text)
}

/// The shapes of the test of more than 2^32 elements: long rows (step 3's chunks, step 2's row
/// read twice) and rows of 4096 (step 3's full lanes, four warps a row; step 2's registers).
const HUGE_SHAPES: [(usize, usize); 2] = [(65_537, 65_536), ((1 << 20) + 1, 4096)];

/// Every step of both norms on bf16 matrices of [`HUGE_SHAPES`], more than 2^32 elements each,
/// checked on the rows of [`rows_past_32_bits`].
fn more_than_2_to_the_32_elements(device: &Device) -> TestResult {
    let mut rng = TestRng::new();
    let seed = rng.seed();
    // x from a hash of the whole 64-bit index (and the seed): k / 16 - 6 in [-6, 10), exact in
    // bf16, every row different and none constant. The last row of each shape starts at element
    // 2^32: an offset that wraps there reads row 0 for it (other statistics, other values: other
    // results), or writes row 0 and leaves the last row poisoned; one that wraps at 2^31 (a signed
    // int) reads and writes before the matrix. Either fails the rows checked at and past those
    // offsets (or the launch).
    let value = |i: usize| {
        ((i as u64 ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as f32 / 16.0 - 6.0
    };
    for (rows, cols) in HUGE_SHAPES {
        let checked = rows_past_32_bits(rows, cols);
        let (weight, bias) = parameters::<u16>(&mut rng, cols);
        let (w, b) = (device.upload(&weight)?, device.upload(&bias)?);
        let x = device.upload(&by_index(rows * cols, |i| f32_to_bf16(value(i))))?;
        let mut y = device.alloc::<u16>(rows * cols)?;
        let poisoned_row = vec![poison::<u16>(); cols];
        for step in Step::ALL {
            let norms = Norms::new(device, step)?;
            for norm in Norm::ALL {
                // The rows checked are poisoned before each launch (all 8 GiB, through the host,
                // would take seconds a launch).
                for &r in &checked {
                    y.write_at(r * cols, &poisoned_row)?;
                }
                match norm {
                    Norm::Layer => norms.layer_norm(
                        x.as_view(),
                        (rows, cols),
                        w.as_view(),
                        b.as_view(),
                        DEFAULT_EPS,
                        &mut y,
                    )?,
                    Norm::Rms => norms.rms_norm(
                        x.as_view(),
                        (rows, cols),
                        w.as_view(),
                        DEFAULT_EPS,
                        &mut y,
                    )?,
                }
                for &r in &checked {
                    let elements = r * cols..(r + 1) * cols;
                    let row: Vec<u16> = elements.clone().map(|i| f32_to_bf16(value(i))).collect();
                    let p = problem(norm, &row, (1, cols), &weight, &bias, DEFAULT_EPS);
                    if let Some(wrong) = first_mismatch(&p, &y.view(elements)?.to_host()?) {
                        let at = format!("row {r} (from element {}), checked alone", r * cols);
                        return Err(rng.fail(format!(
                            "{} bf16: {rows} x {cols}: {at}: {wrong}",
                            step_name(norm, step)
                        )));
                    }
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
        .cpu("warps_per_row_follows_the_rule", || {
            let cases = [
                (1, 1),
                (1024, 1),
                (1025, 2),
                (2048, 2),
                (3000, 4),
                (4096, 4),
                (8192, 8),
                (1 << 20, 8),
            ];
            for (cols, warps) in cases {
                if warps_per_row(cols) != warps {
                    return Err(format!(
                        "{cols} columns: {} warps, expected {warps}",
                        warps_per_row(cols)
                    )
                    .into());
                }
            }
            Ok(())
        })
        .cpu("cpu_reference_and_bf16_rounding", || {
            let x = [1.0f32, 2.0, 3.0, 4.0];
            let (w, b) = ([1.0f32, 1.0, 2.0, 2.0], [0.0f32, 0.5, 0.0, -1.0]);
            let y = reference(&Problem {
                norm: Norm::Layer,
                x: &x,
                rows: 1,
                cols: 4,
                weight: &w,
                bias: &b,
                eps: 0.0,
            });
            let z = 1.0 / 1.25f64.sqrt();
            let expected = [-1.5 * z, -0.5 * z + 0.5, 1.0 * z, 3.0 * z - 1.0];
            if y.iter().zip(expected).any(|(a, e)| (a - e).abs() > 1e-15) {
                return Err(
                    format!("layer norm of [1, 2, 3, 4]: {y:?}, expected {expected:?}").into()
                );
            }
            let y = reference(&Problem {
                norm: Norm::Rms,
                x: &x,
                rows: 1,
                cols: 4,
                weight: &w,
                bias: &[],
                eps: 0.0,
            });
            let r = 1.0 / 7.5f64.sqrt();
            let expected = [r, 2.0 * r, 6.0 * r, 8.0 * r];
            if y.iter().zip(expected).any(|(a, e)| (a - e).abs() > 1e-15) {
                return Err(
                    format!("RMS norm of [1, 2, 3, 4]: {y:?}, expected {expected:?}").into()
                );
            }
            for (x, bits) in [
                (1.0f32, 0x3f80u16),
                (f32::from_bits(0x3f80_8000), 0x3f80),
                (f32::from_bits(0x3f81_8000), 0x3f82),
            ] {
                if f32_to_bf16(x) != bits {
                    return Err(format!(
                        "f32_to_bf16({x:e}) = {:#06x}, expected {bits:#06x}",
                        f32_to_bf16(x)
                    )
                    .into());
                }
            }
            if bf16_to_f32(0x3fc0) != 1.5
                || !poison::<u16>().to_f64().is_nan()
                || !poison::<f32>().to_f64().is_nan()
            {
                return Err("bf16_to_f32(0x3fc0) is not 1.5, or a poison is not a NaN".into());
            }
            Ok(())
        })
        .cpu("plans_reject_what_the_indices_cannot_hold", || {
            for (rows, cols) in [(1, MAX_SIDE + 1), (MAX_SIDE + 1, 1)] {
                for step in Step::ALL {
                    match step.plan(Norm::Layer, rows, cols) {
                        Err(GpuError::BadInput(_)) => {}
                        other => {
                            return Err(format!(
                                "{rows} x {cols}: expected BadInput, got {other:?}"
                            )
                            .into());
                        }
                    }
                }
            }
            Ok(())
        });

    for norm in Norm::ALL {
        for step in Step::ALL {
            let name = step_name(norm, step);
            suite = suite
                .gpu(format!("{name}::f32_every_length"), move |device| {
                    every_length::<f32>(device, norm, step)
                })
                .gpu(format!("{name}::bf16_every_length"), move |device| {
                    every_length::<u16>(device, norm, step)
                })
                .gpu(format!("{name}::f32_torch_semantics"), move |device| {
                    torch_semantics::<f32>(device, norm, step)
                })
                .gpu(format!("{name}::bf16_torch_semantics"), move |device| {
                    torch_semantics::<u16>(device, norm, step)
                })
                .gpu(format!("{name}::f32_views_at_odd_offsets"), move |device| {
                    views_at_odd_offsets::<f32>(device, norm, step)
                })
                .gpu(format!("{name}::bf16_views_at_odd_offsets"), move |device| {
                    views_at_odd_offsets::<u16>(device, norm, step)
                })
                .nvrtc_if(
                    format!("illustration::{name}::simulator_counters"),
                    counters_comparable,
                    move || {
                        insta::assert_snapshot!(
                            format!("{name}_simulator_counters"),
                            counters(norm, step, 8, 1024)?
                        );
                        Ok(())
                    },
                );
        }
    }

    for norm in Norm::ALL {
        let name = step_name(norm, Step::ByLength);
        suite = suite
            .gpu(format!("{name}::f32_special_rows_beside_plain_ones"), move |device| {
                special_rows_beside_plain_ones::<f32>(device, norm, Step::ByLength)
            })
            .gpu(format!("{name}::bf16_special_rows_beside_plain_ones"), move |device| {
                special_rows_beside_plain_ones::<u16>(device, norm, Step::ByLength)
            });
    }

    suite
        .nvrtc("by-length::f32_full_lanes_only_where_aligned", full_lanes_only_where_aligned::<f32>)
        .nvrtc(
            "by-length::bf16_full_lanes_only_where_aligned",
            full_lanes_only_where_aligned::<u16>,
        )
        .nvrtc_if("illustration::by-length::simulator_counters_4096", counters_comparable, || {
            insta::assert_snapshot!(
                "by-length_simulator_counters_4096",
                counters(Norm::Layer, Step::ByLength, 2, 4096)?
            );
            Ok(())
        })
        .gpu("worked_example", |device| {
            let (rows, cols) = (2, 4);
            let x = [1.0f32, 2.0, 3.0, 4.0, -1e30, 1e30, 5.0, 5.0];
            let (weight, bias) = ([1.0f32, 0.5, 2.0, -1.0], [0.0f32, 0.25, 0.0, 1.0]);
            let mut text = format!(
                "x, {rows} x {cols}: {x:?}\nweight {weight:?}, bias {bias:?}, \
                                    eps {DEFAULT_EPS:e}\n"
            );
            for norm in Norm::ALL {
                let p = problem(norm, &x, (rows, cols), &weight, &bias, DEFAULT_EPS);
                let _ = writeln!(text, "{}, f64 reference: {:.6?}", norm.name(), reference(&p));
                for step in Step::ALL {
                    let got = Norms::new(device, step)?.normalise_host(&p)?;
                    let _ = writeln!(text, "{:>18}: {got:.6?}", step_name(norm, step));
                    if let Some(m) = first_mismatch(&p, &got) {
                        return Err(format!("{}: {m}", step_name(norm, step)).into());
                    }
                }
            }
            insta::assert_snapshot!("worked_example", text);
            Ok(())
        })
        .gpu("wrong_lengths_are_errors", |device| {
            let norms = Norms::new(device, Step::ByLength)?;
            let x = device.upload(&[0.5f32; 15])?;
            let ones = device.upload(&[1.0f32; 6])?;
            let mut text = String::new();
            // (rows, cols, weight, bias, output, eps)
            let cases = [
                (3, 4, 4, 4, 15, DEFAULT_EPS),
                (3, 5, 4, 5, 15, DEFAULT_EPS),
                (3, 5, 6, 5, 15, DEFAULT_EPS),
                (3, 5, 5, 4, 15, DEFAULT_EPS),
                (3, 5, 5, 5, 14, DEFAULT_EPS),
                (3, 5, 5, 5, 16, DEFAULT_EPS),
                (3, 5, 5, 5, 15, f32::NAN),
                (3, 5, 5, 5, 15, -1e-5),
                (3, 5, 5, 5, 15, f32::INFINITY),
                (1, MAX_SIDE + 1, 5, 5, 15, DEFAULT_EPS),
            ];
            for norm in Norm::ALL {
                for (rows, cols, w_len, b_len, out_len, eps) in cases {
                    if norm == Norm::Rms && b_len != cols {
                        continue; // an RMS norm has no bias
                    }
                    let mut out = device.alloc::<f32>(out_len)?;
                    out.fill(poison::<f32>())?;
                    let (w, b) = (ones.view(..w_len)?, ones.view(..b_len)?);
                    let result = match norm {
                        Norm::Layer => {
                            norms.layer_norm(x.as_view(), (rows, cols), w, b, eps, &mut out)
                        }
                        Norm::Rms => norms.rms_norm(x.as_view(), (rows, cols), w, eps, &mut out),
                    };
                    match result {
                        Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                        other => {
                            return Err(format!(
                                "{rows} x {cols}, weight {w_len}, bias {b_len}, \
                                                into {out_len}, eps {eps}: expected BadInput, got \
                                                {other:?}"
                            )
                            .into());
                        }
                    }
                    if out.to_host()?.iter().any(|y| y.to_bits() != poison::<f32>().to_bits()) {
                        return Err(format!(
                            "{rows} x {cols} into {out_len}: an error wrote the \
                                            output"
                        )
                        .into());
                    }
                }
            }
            let bf16 = [1u16; 7];
            let p = Problem {
                norm: Norm::Layer,
                x: &bf16,
                rows: 2,
                cols: 3,
                weight: &bf16[..3],
                bias: &bf16[..3],
                eps: DEFAULT_EPS,
            };
            match norms.normalise_host(&p) {
                Err(GpuError::BadInput(message)) => text += &format!("{message}\n"),
                other => {
                    return Err(format!(
                        "normalise_host of 7 as 2 x 3: expected BadInput, got \
                                             {other:?}"
                    )
                    .into());
                }
            }
            let p = Problem { rows: usize::MAX / 2, cols: 3, ..p };
            match norms.normalise_host(&p) {
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
                let norms = Norms::new(device, step)?;
                let empty = device.alloc::<f32>(0)?;
                for (rows, cols) in [(0, 0), (0, 7), (7, 0)] {
                    let w = device.upload(&vec![1.0f32; cols])?;
                    let mut out = device.alloc::<f32>(0)?;
                    device.take_launches();
                    norms.layer_norm(
                        empty.as_view(),
                        (rows, cols),
                        w.as_view(),
                        w.as_view(),
                        DEFAULT_EPS,
                        &mut out,
                    )?;
                    norms.rms_norm(
                        empty.as_view(),
                        (rows, cols),
                        w.as_view(),
                        DEFAULT_EPS,
                        &mut out,
                    )?;
                    let ones = vec![1u16; cols];
                    let p = Problem {
                        norm: Norm::Layer,
                        x: &[],
                        rows,
                        cols,
                        weight: &ones,
                        bias: &ones,
                        eps: DEFAULT_EPS,
                    };
                    if !norms.normalise_host(&p)?.is_empty() {
                        return Err(format!(
                            "{}: the norm of a {rows} x {cols} matrix is not empty",
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
        .gpu_if(
            "huge::more_than_2^32_elements",
            |device| matrices_too_large_here(device, &HUGE_SHAPES, 2 * 2),
            more_than_2_to_the_32_elements,
        )
        .gpu("many_threads_on_one_device", |device| {
            let seed = TestRng::new().seed();
            on_threads(4, |k| {
                let mut rng = TestRng::with_seed(seed ^ k as u64);
                let (norm, step) = (Norm::ALL[k % 2], Step::ALL[k % Step::ALL.len()]);
                let norms = Norms::new(device, step)?;
                for _ in 0..3 {
                    let (rows, cols) = (rng.size_in(1..=20), rng.size_in(1..=300));
                    let x = matrix::<f32>(&mut rng, rows, cols);
                    let (weight, bias) = parameters::<f32>(&mut rng, cols);
                    check(
                        device,
                        &norms,
                        &rng,
                        &problem(norm, &x, (rows, cols), &weight, &bias, DEFAULT_EPS),
                    )?;
                }
                Ok(())
            })
        })
        .run()
}
