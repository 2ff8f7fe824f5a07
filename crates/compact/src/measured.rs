//! The steps as the tour and the benches measure them (`pub fn steps()`), and their inputs.
//!
//! A case names the share of elements kept: `2^28 50%` is 2^28 f32 values uniform in [-1, 1) with a
//! mask whose bytes are 1 with probability 0.5 (else 0); the predicate step keeps `x > 1 - 2p`,
//! which keeps about the same share. One input is made per case and kept, so the steps measured
//! one after another at a case share it.

use std::sync::{Arc, Mutex};

use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::element::{Keep, Predicate, compact_mismatch, cpu_compact};
use crate::launcher::{Compact, DeviceKeep};
use crate::plan::CompactStep;

const CRATE: &str = env!("CARGO_PKG_NAME");

/// The word outputs are poisoned with before a check (a NaN as f32).
pub const POISON_WORD: u32 = 0xffc0_0001;

/// Every step of the chapter, then the peers (CUB), as the tour and the benches measure them.
pub fn steps() -> Vec<StepEntry> {
    let entry = |step, prepare| StepEntry { crate_name: CRATE, step, prepare };
    let mut steps = vec![
        entry("flags-scan-scatter", prepare_masked::<0>),
        entry("count-scan-scatter", prepare_masked::<1>),
        entry("single-pass", prepare_masked::<2>),
        entry("single-pass-if", prepare_if),
    ];
    steps.extend(crate::peers::steps());
    steps
}

/// The share of elements a case keeps: `50%` is 0.5.
pub fn kept_share(case: &Case) -> Result<f64> {
    let share = case
        .variant
        .as_deref()
        .and_then(|v| v.strip_suffix('%'))
        .and_then(|p| p.parse::<f64>().ok())
        .filter(|p| (0.0..=100.0).contains(p));
    share.map(|p| p / 100.0).ok_or_else(|| {
        GpuError::BadInput(format!("case {case}: a compaction's case names the share kept, such as `2^28 50%`"))
    })
}

/// The predicate that keeps about `share` of values uniform in [-1, 1): `x > 1 - 2 share`.
pub fn predicate_for(share: f64) -> Predicate<f32> {
    Predicate::Greater((1.0 - 2.0 * share) as f32)
}

/// A case's input on the device and on the host, and what the CPU keeps of it, by its mask and by
/// its predicate.
pub struct Input {
    pub label: String,
    pub seed: u64,
    pub values: Vec<f32>,
    pub mask: Vec<u8>,
    pub predicate: Predicate<f32>,
    pub device_values: DeviceBuffer<f32>,
    pub device_mask: DeviceBuffer<u8>,
    pub kept_by_mask: Vec<f32>,
    pub kept_by_predicate: Vec<f32>,
}

impl Input {
    /// What the CPU keeps with this selection.
    pub fn expected(&self, by_mask: bool) -> &[f32] {
        if by_mask { &self.kept_by_mask } else { &self.kept_by_predicate }
    }

    /// The check of a compaction that came back.
    pub fn check(&self, step: &str, by_mask: bool, got: &[f32]) -> Checked {
        match compact_mismatch(self.expected(by_mask), got) {
            None => Checked::Correct,
            Some(why) => Checked::Wrong(format!("{step}: {why} (input {} from seed {})", self.label, self.seed)),
        }
    }
}

/// The input of `case` from `seed` (the last one made is kept and shared).
pub fn input(device: &Device, case: &Case, seed: u64) -> Result<Arc<Input>> {
    static LAST: Mutex<Option<(Device, Arc<Input>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, input)) = last.as_ref() {
        if owner.is_same(device) && input.label == case.label && input.seed == seed {
            return Ok(input.clone());
        }
    }
    *last = None; // free the previous input before making the next
    let share = kept_share(case)?;
    let n = case.elements()?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let values: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let mask: Vec<u8> = (0..n).map(|_| u8::from(rng.random_bool(share))).collect();
    let predicate = predicate_for(share);
    let input = Arc::new(Input {
        label: case.label.clone(),
        seed,
        kept_by_mask: cpu_compact(&values, Keep::Mask(&mask)),
        kept_by_predicate: cpu_compact(&values, Keep::Test(predicate)),
        device_values: device.upload(&values)?,
        device_mask: device.upload(&mask)?,
        values,
        mask,
        predicate,
    });
    *last = Some((device.clone(), input.clone()));
    Ok(input)
}

/// A step on a case's input, by its mask or its predicate.
struct Measured {
    step: &'static str,
    by_mask: bool,
    compact: Compact<f32>,
    input: Arc<Input>,
    output: DeviceBuffer<f32>,
}

impl Prepared for Measured {
    fn queue(&mut self) -> Result<()> {
        let keep = if self.by_mask {
            DeviceKeep::Mask(self.input.device_mask.as_view())
        } else {
            DeviceKeep::Test(self.input.predicate)
        };
        self.compact.queue(self.input.device_values.as_view(), keep, &mut self.output)
    }

    fn check(&mut self) -> Result<Checked> {
        self.output.fill_words(POISON_WORD)?;
        self.queue()?;
        let kept = self.compact.kept()?.min(self.output.len());
        let got = if kept == 0 { Vec::new() } else { self.output.view(..kept)?.to_host()? };
        Ok(self.input.check(self.step, self.by_mask, &got))
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        vec![("kept", self.input.expected(self.by_mask).len() as u64)]
    }
}

fn prepared(
    device: &Device,
    case: &Case,
    seed: u64,
    step: CompactStep,
    name: &'static str,
    by_mask: bool,
) -> Result<Box<dyn Prepared>> {
    let input = input(device, case, seed)?;
    let mut compact = Compact::<f32>::with_step(device, step)?;
    compact.reserve(input.values.len())?;
    let output = device.alloc(input.values.len())?;
    Ok(Box::new(Measured { step: name, by_mask, compact, input, output }))
}

fn prepare_masked<const STEP: usize>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let step = CompactStep::ALL[STEP];
    prepared(device, case, seed, step, step.step(), true)
}

fn prepare_if(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    prepared(device, case, seed, CompactStep::SinglePass, "single-pass-if", false)
}
