//! The steps as the tour and the benches measure them: each on the case's random matrix (f32
//! uniform in [-1, 1), every family's draw; bf16 the same values rounded), with a weight in
//! [0.5, 1.5) and a bias in [-0.5, 0.5) drawn from the same seed, torch's default eps, checked
//! against the f64 CPU reference within [`crate::tolerance`].

use std::sync::Arc;

use gpu_harness::inputs::{
    Input, random_values, uniform_bf16_input, uniform_f32, uniform_f32_input,
};
use gpu_harness::{Case, Device, DeviceBuffer, Measured, Result, StepEntry};

use crate::{DEFAULT_EPS, Norm, Norms, Problem, Step, Value, first_mismatch, poison};

const CRATE: &str = env!("CARGO_PKG_NAME");

/// Every step, in the registry's order: the layer norm's three steps (the ladder), the RMS norm's,
/// then the last step of each on bf16 rows.
pub fn steps() -> Vec<StepEntry> {
    let f32_step = |name, norm, step| {
        StepEntry::new(CRATE, name, move |d, c, s| {
            measure(d, c, uniform_f32_input(d, c, s)?, |i| i, norm, step, s)
        })
    };
    let bf16_step = |name, norm, step| {
        StepEntry::new(CRATE, name, move |d, c, s| {
            measure(d, c, uniform_bf16_input(d, c, s)?, |b| &b.0, norm, step, s)
        })
    };
    vec![
        f32_step("two-pass", Norm::Layer, Step::TwoPass),
        f32_step("one-pass", Norm::Layer, Step::OnePass),
        f32_step("by-length", Norm::Layer, Step::ByLength),
        f32_step("rms-two-pass", Norm::Rms, Step::TwoPass),
        f32_step("rms-one-pass", Norm::Rms, Step::OnePass),
        f32_step("rms-by-length", Norm::Rms, Step::ByLength),
        bf16_step("by-length-bf16", Norm::Layer, Step::ByLength),
        bf16_step("rms-by-length-bf16", Norm::Rms, Step::ByLength),
    ]
}

/// A weight in [0.5, 1.5) and a bias in [-0.5, 0.5), one per column, from `seed`.
fn parameters<T: Value>(cols: usize, seed: u64) -> (Vec<T>, Vec<T>) {
    let seed = seed ^ 0x6e6f_726d; // "norm": not the matrix's draw
    let draws = random_values(2 * cols, seed, uniform_f32);
    let weight = draws[..cols].iter().map(|&u| T::from_f32(1.0 + u / 2.0)).collect();
    let bias = draws[cols..].iter().map(|&u| T::from_f32(u / 2.0)).collect();
    (weight, bias)
}

/// A step on the case's matrix: queues one normalisation of every row; the check compares the
/// output with the CPU's.
fn measure<T: Value, I: Send + Sync + 'static>(
    device: &Device,
    case: &Case,
    input: Arc<I>,
    get: fn(&I) -> &Input<T>,
    norm: Norm,
    step: Step,
    seed: u64,
) -> Result<Measured<T>> {
    let (rows, cols) = (case.rows() as usize, case.cols() as usize);
    let norms = Norms::new(device, step)?;
    let (weight, bias) = parameters::<T>(cols, seed);
    let (w, b) = (device.upload(&weight)?, device.upload(&bias)?);
    let output = device.alloc::<T>(rows * cols)?;
    let data = input.clone();
    let name = format!("{}{}", if norm == Norm::Rms { "rms-" } else { "" }, step.name());
    let compare = move |got: &[T]| {
        let input = get(&input);
        let bias = if norm == Norm::Layer { &bias[..] } else { &[] };
        let p =
            Problem { norm, x: &input.host, rows, cols, weight: &weight, bias, eps: DEFAULT_EPS };
        input.outcome(&name, first_mismatch(&p, got))
    };
    let run = move |output: &mut DeviceBuffer<T>| {
        let x = get(&data).device.as_view();
        match norm {
            Norm::Layer => {
                norms.layer_norm(x, (rows, cols), w.as_view(), b.as_view(), DEFAULT_EPS, output)
            }
            Norm::Rms => norms.rms_norm(x, (rows, cols), w.as_view(), DEFAULT_EPS, output),
        }
    };
    Ok(Measured::with_poison_value(output, poison::<T>(), run, compare))
}
