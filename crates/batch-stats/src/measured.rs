//! The steps as the tour and the benches measure them: each on the case's random NCHW tensor (f32
//! uniform in [-1, 1), every family's draw; bf16 the same values rounded), the unbiased variance
//! (`correction=1`, torch.var_mean's default, the peer's), checked against the f64 CPU reference
//! within [`crate::tolerance`].

use std::sync::Arc;

use gpu_harness::inputs::{Input, uniform_bf16_input, uniform_f32_input};
use gpu_harness::{
    Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, Shape, StepEntry,
};

use crate::{BatchStats, Nchw, Step, Value, Variance, first_mismatch};

const CRATE: &str = env!("CARGO_PKG_NAME");

/// A value no step writes (a variance is never negative; a mean of values in [-1, 1) is not -7):
/// the statistics are filled with it before a checked run.
pub const POISON: f32 = -7.0;

/// What every measured step computes: torch.var_mean's default.
pub const MEASURED_VARIANCE: Variance = Variance::Unbiased;

/// Every step, in the registry's order: the five f32 steps, then the last two on bf16.
pub fn steps() -> Vec<StepEntry> {
    let f32_step = |name, step| {
        StepEntry::new(CRATE, name, move |d, c, s| {
            measure(d, c, uniform_f32_input(d, c, s)?, |i| i, step)
        })
    };
    vec![
        f32_step("naive", Step::Naive),
        f32_step("coalesced", Step::Coalesced),
        f32_step("split", Step::Split),
        f32_step("vectors", Step::Vectors),
        f32_step("flat", Step::Flat),
        StepEntry::new(CRATE, "vectors-bf16", |d, c, s| {
            measure(d, c, uniform_bf16_input(d, c, s)?, |b| &b.0, Step::Vectors)
        }),
        StepEntry::new(CRATE, "flat-bf16", |d, c, s| {
            measure(d, c, uniform_bf16_input(d, c, s)?, |b| &b.0, Step::Flat)
        }),
    ]
}

/// The NCHW shape of a case (`32x64x56x56`); other cases are an error.
pub fn nchw(case: &Case) -> Result<Nchw> {
    match case.shape {
        Shape::Tensor4 { n, c, h, w } => {
            let side = |x: u64| {
                usize::try_from(x)
                    .map_err(|_| GpuError::BadInput(format!("case {case}: too large")))
            };
            Ok(Nchw::new(side(n)?, side(c)?, side(h)?, side(w)?))
        }
        _ => Err(GpuError::BadInput(format!(
            "batch-stats measures NCHW tensors (NxCxHxW), not case `{case}`"
        ))),
    }
}

/// A step on the case's tensor: queues one computation of every channel's mean and variance; the
/// check compares them with the CPU's.
fn measure<T: Value, I: Send + Sync + 'static>(
    device: &Device,
    case: &Case,
    input: Arc<I>,
    get: fn(&I) -> &Input<T>,
    step: Step,
) -> Result<Statistics<T, I>> {
    let shape = nchw(case)?;
    let stats = BatchStats::new(device, step)?;
    let chain = stats.plan::<T>(shape)?.longest_chain(shape);
    let (mean, var) = (device.alloc::<f32>(shape.channels)?, device.alloc::<f32>(shape.channels)?);
    Ok(Statistics { stats, input, get, shape, chain, mean, var })
}

/// A prepared step: the launcher, the input, and the two outputs (C means, C variances).
pub struct Statistics<T: Value, I> {
    stats: BatchStats,
    input: Arc<I>,
    get: fn(&I) -> &Input<T>,
    shape: Nchw,
    chain: u64,
    mean: DeviceBuffer<f32>,
    var: DeviceBuffer<f32>,
}

impl<T: Value, I> Prepared for Statistics<T, I> {
    fn queue(&mut self) -> Result<()> {
        let input = (self.get)(&self.input).device.as_view();
        self.stats.stats(input, self.shape, MEASURED_VARIANCE, &mut self.mean, &mut self.var)
    }

    fn check(&mut self) -> Result<Checked> {
        self.mean.fill(POISON)?;
        self.var.fill(POISON)?;
        self.queue()?;
        let (mean, var) = (self.mean.to_host()?, self.var.to_host()?);
        let input = (self.get)(&self.input);
        let why =
            first_mismatch(&input.host, self.shape, MEASURED_VARIANCE, self.chain, &mean, &var);
        Ok(input.outcome(self.stats.step().name(), why))
    }

    /// The registry's bytes: the input, and 2 C f32 statistics (`channels`).
    fn counts(&self) -> Vec<(&'static str, u64)> {
        vec![("channels", self.shape.channels as u64)]
    }
}
