//! The family's steps as the tour and the benches measure them: each crate lists its steps with
//! these entries (`pub fn steps() -> Vec<StepEntry>`), and the registry (`course.toml`) says at which
//! cases they run and how many bytes they move.

use std::sync::{Arc, Mutex};

use gpu_harness::{Case, Checked, Device, DeviceBuffer, Prepared, Result, StepEntry};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::full::{FullReduction, ReduceOp};
use crate::host_finished::{HostFinishedStep, HostFinishedSum};
use crate::reference::sum_mismatch;

/// A random input of f32 uniform in [-1, 1), on the device and its copy on the host.
pub struct RandomInput {
    pub host: Vec<f32>,
    pub device: DeviceBuffer<f32>,
    pub seed: u64,
}

impl RandomInput {
    /// A failed check's message, with the seed that replays it.
    pub fn wrong(&self, step: &str, why: impl std::fmt::Display) -> Checked {
        Checked::Wrong(format!("{step}: {why} (random input of {} elements from seed {})", self.host.len(), self.seed))
    }
}

/// The random input of `n` elements drawn from `seed`. The last one made is kept, so steps measured
/// one after another at the same case share one input and one upload.
pub fn random_input(device: &Device, n: usize, seed: u64) -> Result<Arc<RandomInput>> {
    static LAST: Mutex<Option<(Device, Arc<RandomInput>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, input)) = last.as_ref() {
        if owner.is_same(device) && input.host.len() == n && input.seed == seed {
            return Ok(input.clone());
        }
    }
    *last = None; // free the previous input before making the next
    let mut rng = SmallRng::seed_from_u64(seed);
    let host: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let input = Arc::new(RandomInput { device: device.upload(&host)?, host, seed });
    *last = Some((device.clone(), input.clone()));
    Ok(input)
}

/// The entry of a host-finished step `S` of crate `crate_name`.
pub fn host_finished<S: HostFinishedStep>(crate_name: &'static str) -> StepEntry {
    StepEntry { crate_name, step: S::STEP, prepare: prepare_host_finished::<S> }
}

/// The entry of a full reduction `L` (its f32 sum) named `step` in crate `crate_name`.
pub fn on_device<L: FullReduction<f32>>(crate_name: &'static str, step: &'static str) -> StepEntry {
    StepEntry { crate_name, step, prepare: prepare_on_device::<L> }
}

/// A host-finished step on a random input: what is timed is the kernel, which leaves one partial
/// per block; the host's final additions are not.
struct HostFinishedCase<S: HostFinishedStep> {
    reducer: HostFinishedSum<S>,
    input: Arc<RandomInput>,
}

fn prepare_host_finished<S: HostFinishedStep>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let input = random_input(device, case.elements()?, seed)?;
    let mut reducer = HostFinishedSum::<S>::new(device)?;
    reducer.reserve(input.host.len())?;
    Ok(Box::new(HostFinishedCase { reducer, input }))
}

impl<S: HostFinishedStep> Prepared for HostFinishedCase<S> {
    fn queue(&mut self) -> Result<()> {
        self.reducer.block_partials(self.input.device.as_view()).map(drop)
    }

    fn check(&mut self) -> Result<Checked> {
        let got = self.reducer.sum_device(self.input.device.as_view())?;
        Ok(sum_mismatch(&self.input.host, got).map_or(Checked::Correct, |why| self.input.wrong(S::STEP, why)))
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        let partials = self.reducer.plan(self.input.host.len()).map_or(0, |plan| plan.host_adds);
        vec![("partials", partials)]
    }
}

/// A reduction finished on the device, summing a random input: what is timed is every launch,
/// the result left on the device.
struct OnDeviceCase<L> {
    launcher: L,
    input: Arc<RandomInput>,
}

fn prepare_on_device<L: FullReduction<f32>>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let input = random_input(device, case.elements()?, seed)?;
    let mut launcher = L::create(device)?;
    launcher.reserve(input.host.len())?;
    Ok(Box::new(OnDeviceCase { launcher, input }))
}

impl<L: FullReduction<f32>> Prepared for OnDeviceCase<L> {
    fn queue(&mut self) -> Result<()> {
        self.launcher.queue(ReduceOp::Sum, self.input.device.as_view())
    }

    fn check(&mut self) -> Result<Checked> {
        let got = self.launcher.sum(self.input.device.as_view())?;
        Ok(sum_mismatch(&self.input.host, got).map_or(Checked::Correct, |why| self.input.wrong("sum", why)))
    }
}
