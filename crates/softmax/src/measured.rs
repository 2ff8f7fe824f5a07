//! The steps as the tour and the benches measure them: each on the case's random matrix (f32
//! uniform in [-1, 1), every family's draw; bf16 the same values rounded), checked against the f64
//! CPU reference within [`crate::tolerance`].

use std::sync::Arc;

use gpu_harness::inputs::{Input, uniform_bf16_input, uniform_f32_input};
use gpu_harness::{Case, Device, DeviceBuffer, Measured, Result, StepEntry};

use crate::{Softmax, Step, Value, first_mismatch};

const CRATE: &str = env!("CARGO_PKG_NAME");

/// A value no softmax writes (a negative one): outputs are filled with it before a checked run.
pub const POISON: f32 = -7.0;

/// Every step, in the registry's order: the seven f32 steps, then the last four on bf16 rows.
pub fn steps() -> Vec<StepEntry> {
    let f32_step = |name, step| {
        StepEntry::new(CRATE, name, move |d, c, s| {
            measure(d, c, uniform_f32_input(d, c, s)?, |i| i, step)
        })
    };
    let bf16_step = |name, step| {
        StepEntry::new(CRATE, name, move |d, c, s| {
            measure(d, c, uniform_bf16_input(d, c, s)?, |b| &b.0, step)
        })
    };
    vec![
        f32_step("three-pass", Step::ThreePass),
        f32_step("fused", Step::Fused),
        f32_step("online", Step::Online),
        f32_step("warp-rows", Step::WarpRows),
        f32_step("split-rows", Step::SplitRows),
        f32_step("on-chip", Step::OnChip),
        f32_step("cluster-rows", Step::ClusterRows),
        bf16_step("warp-rows-bf16", Step::WarpRows),
        bf16_step("split-rows-bf16", Step::SplitRows),
        bf16_step("on-chip-bf16", Step::OnChip),
        bf16_step("cluster-rows-bf16", Step::ClusterRows),
    ]
}

/// A step on the case's matrix: queues one softmax of every row; the check compares the output
/// with the CPU's.
fn measure<T: Value, I: Send + Sync + 'static>(
    device: &Device,
    case: &Case,
    input: Arc<I>,
    get: fn(&I) -> &Input<T>,
    step: Step,
) -> Result<Measured<T>> {
    let (rows, cols) = (case.rows() as usize, case.cols() as usize);
    let mut softmax = Softmax::new(device, step)?;
    let output = device.alloc::<T>(rows * cols)?;
    let data = input.clone();
    let compare = move |got: &[T]| {
        let input = get(&input);
        input.outcome(step.name(), first_mismatch(&input.host, got, rows, cols))
    };
    let run = move |output: &mut DeviceBuffer<T>| {
        softmax.softmax(get(&data).device.as_view(), rows, cols, output)
    };
    Ok(Measured::with_poison_value(output, T::from_f32(POISON), run, compare))
}
