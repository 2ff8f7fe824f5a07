//! norms' property tests (proptest, `gpu_test::props`): every step of both norms, f32 and bf16,
//! against the f64 CPU reference within `norms::tolerance` on drawn matrices: row lengths around a
//! warp's, a block's and the registers' capacities, up to a few rows; values from the moments'
//! mixtures (zeros, exact small integers at every scale from subnormals to 2^100, uniform, wide
//! exponents, skewed, all-equal rows of up to f32's largest value, huge values of a small spread)
//! with NaN, infinities, -0.0 and the extremes put in; rows, weights and biases at offsets into
//! their buffers (poisoned guard words around them, which must be left as they were); eps of
//! torch's default, 0.5 and 0. Outputs are poisoned first. A failure prints its smallest input and
//! the seed: `TEST_SEED=<seed> cargo test -p norms --test properties` replays it.

use gpu_harness::Device;
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::sample::select;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{self, F32Mix, Guarded, Input, Word, f32_moment_mixes, f32_specials};
use gpu_test::{TestResult, TestSuite};
use norms::{DEFAULT_EPS, Norm, Norms, Problem, Step, Value, first_mismatch, poison};

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 16);

/// A drawn problem: its shape, its values (a recipe: length rows x cols, offset, mixture, seed,
/// special values), where the weight and the bias sit in their buffers, and eps.
#[derive(Debug, Clone)]
struct Drawn {
    rows: usize,
    cols: usize,
    x: Input<F32Mix, f32>,
    weight_offset: usize,
    bias_offset: usize,
    eps: f32,
}

/// Row lengths near a warp's 32, the by-length step's 1024 a warp, the one-pass block's 4096 and
/// eight warps' 8192, or any up to 9000; up to 3 rows, at most 40,000 elements on the simulator.
fn problems(device: &Device) -> BoxedStrategy<Drawn> {
    let max = props::max_len(device);
    let cols = props::sizes(&[1, 32, 1024, 2048, 4096, 8192], 9000);
    (cols, 1..=3usize, 0..=3usize, 0..=3usize, select(vec![DEFAULT_EPS, 0.5, 0.0]))
        .prop_flat_map(move |(cols, rows, weight_offset, bias_offset, eps)| {
            let rows = rows.min(max / cols.max(1)).max(1);
            let x = props::input(Just(rows * cols), 3, f32_moment_mixes(), f32_specials(), 3);
            x.prop_map(move |x| Drawn { rows, cols, x, weight_offset, bias_offset, eps })
        })
        .boxed()
}

/// A weight in [-2, 2) and a bias in [-1, 1) from the recipe's seed.
fn parameters(d: &Drawn) -> (Vec<f32>, Vec<f32>) {
    let mix = F32Mix::Uniform;
    let weight =
        props::Input { len: d.cols, offset: 0, mix, seed: d.x.seed ^ 1, specials: Vec::new() };
    let bias =
        props::Input { len: d.cols, offset: 0, mix, seed: d.x.seed ^ 2, specials: Vec::new() };
    (weight.values().iter().map(|w| 2.0 * w).collect(), bias.values())
}

/// Every step of `norm` on `d`, its values as `T`.
fn every_step<T: Value + Word>(device: &Device, norm: Norm, d: &Drawn) -> TestResult {
    let to = |v: &[f32]| -> Vec<T> { v.iter().map(|&x| T::from_f32(x)).collect() };
    let (weight, bias) = parameters(d);
    let (x, weight, bias) = (to(&d.x.values()), to(&weight), to(&bias));
    let xs = Guarded::input(device, &x, d.x.offset)?;
    let ws = Guarded::input(device, &weight, d.weight_offset)?;
    let bs = Guarded::input(device, &bias, d.bias_offset)?;
    let bias_host: &[T] = if norm == Norm::Layer { &bias } else { &[] };
    let p = Problem {
        norm,
        x: &x,
        rows: d.rows,
        cols: d.cols,
        weight: &weight,
        bias: bias_host,
        eps: d.eps,
    };
    for step in Step::ALL {
        let norms = Norms::new(device, step)?;
        let mut y = device.alloc::<T>(x.len())?;
        y.fill(poison::<T>())?;
        let shape = (d.rows, d.cols);
        match norm {
            Norm::Layer => {
                norms.layer_norm(xs.view()?, shape, ws.view()?, bs.view()?, d.eps, &mut y)?
            }
            Norm::Rms => norms.rms_norm(xs.view()?, shape, ws.view()?, d.eps, &mut y)?,
        }
        if let Some(wrong) = first_mismatch(&p, &y.to_host()?) {
            return Err(format!("{} {:?} {}: {wrong}", norm.name(), step, T::NAME).into());
        }
        for (what, buffer) in [("x", &xs), ("the weight", &ws), ("the bias", &bs)] {
            buffer.check_unchanged(&format!("{} {:?} {}: {what}", norm.name(), step, T::NAME))?;
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new();
    for norm in Norm::ALL {
        let name = if norm == Norm::Layer { "layer_norm" } else { "rms_norm" };
        suite = suite
            .gpu(format!("properties::{name}::f32_every_step"), move |device| {
                props::check(device, CASES, problems(device), |d| {
                    every_step::<f32>(device, norm, &d)
                })
            })
            .gpu(format!("properties::{name}::bf16_every_step"), move |device| {
                props::check(device, CASES, problems(device), |d| {
                    every_step::<u16>(device, norm, &d)
                })
            });
    }
    suite.run()
}
