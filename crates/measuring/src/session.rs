//! The one measuring path of the tour and the benches: prepare a step on a case, check it against
//! the CPU, time it with [`gpu_harness::measure::time_step`], and record it next to the roofs of
//! the same case measured in the same run.

use std::collections::HashMap;

use course::StepRef;
use gpu_harness::measure::{Roofs, gigabytes_per_second, time_step};
use gpu_harness::{Case, Checked, Device, GpuError, Prepared, Result, StepEntry};

use crate::results::{Record, Results, utc_date_today};

/// A measuring run on one device: the roofs measured so far (once per input size) and the records
/// of every step timed, grouped by crate.
pub struct Session {
    device: Device,
    date: String,
    roofs: HashMap<u64, Roofs>,
    results: Vec<Results>,
}

/// Why a step could not be measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// It ran, and its result was wrong (with what was expected and the seed to replay it).
    Wrong(String),
    /// It could not run: a compile, launch or driver error, or a missing peer library.
    Error(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Wrong(m) => write!(f, "WRONG: {m}"),
            Failure::Error(m) => write!(f, "ERROR: {m}"),
        }
    }
}

impl From<GpuError> for Failure {
    fn from(e: GpuError) -> Self {
        Failure::Error(e.to_string())
    }
}

/// The code of `step` among `entries`: the same crate and name.
pub fn find_entry<'a>(entries: &'a [StepEntry], step: &StepRef) -> Option<&'a StepEntry> {
    entries.iter().find(|e| e.crate_name == step.crate_name && e.step == step.name())
}

impl Session {
    pub fn new(device: &Device) -> Session {
        Session {
            device: device.clone(),
            date: utc_date_today(),
            roofs: HashMap::new(),
            results: Vec::new(),
        }
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The roofs of a case whose input is `bytes` bytes, measured the first time they are asked
    /// for.
    pub fn roofs(&mut self, bytes: u64) -> Result<Roofs> {
        if let Some(roofs) = self.roofs.get(&bytes) {
            return Ok(*roofs);
        }
        let roofs = Roofs::measure(&self.device, bytes)?;
        self.roofs.insert(bytes, roofs);
        Ok(roofs)
    }

    /// Prepares `entry` (the code of `step`) at `case` with a random input drawn from `seed`, and
    /// checks one result against the CPU. What comes back is ready to be timed.
    pub fn prepare(
        &self,
        entry: &StepEntry,
        case: &Case,
        seed: u64,
    ) -> std::result::Result<Box<dyn Prepared>, Failure> {
        let mut prepared = (entry.prepare)(&self.device, case, seed)?;
        match prepared.check()? {
            Checked::Correct => Ok(prepared),
            Checked::Wrong(message) => Err(Failure::Wrong(message)),
        }
    }

    /// Times `prepared` (step `step` at `case`) and records it with the roofs of its case.
    pub fn time(
        &mut self,
        step: &StepRef,
        case: &Case,
        prepared: &mut dyn Prepared,
    ) -> Result<Record> {
        let bytes = step.bytes(case, &prepared.counts()).map_err(GpuError::BadInput)?;
        let roofs = self.roofs(step.input_bytes(case))?;
        let median_ms = time_step(&self.device, prepared)?;
        let record = Record {
            step: step.name().to_string(),
            case: case.label.clone(),
            n: case.n(),
            bytes,
            median_ms,
            gbs: gigabytes_per_second(bytes, median_ms),
            roof: step.step.moves.roof().to_string(),
            copy_gbs: roofs.copy_gbs,
            read_gbs: roofs.read_gbs,
        };
        self.results_of(step).records.push(record.clone());
        Ok(record)
    }

    /// Prepares, checks and times `entry` at `case`: [`Session::prepare`] then [`Session::time`].
    pub fn measure(
        &mut self,
        step: &StepRef,
        entry: &StepEntry,
        case: &Case,
        seed: u64,
    ) -> std::result::Result<Record, Failure> {
        let mut prepared = self.prepare(entry, case, seed)?;
        Ok(self.time(step, case, prepared.as_mut())?)
    }

    /// What was recorded, one [`Results`] per crate, in the order the crates were first measured.
    pub fn results(&self) -> &[Results] {
        &self.results
    }

    fn results_of(&mut self, step: &StepRef) -> &mut Results {
        let index = match self.results.iter().position(|r| r.crate_name == step.crate_name) {
            Some(index) => index,
            None => {
                let facts = self.device.facts().clone();
                self.results.push(Results {
                    crate_name: step.crate_name.to_string(),
                    family: step.family.id.clone(),
                    date: self.date.clone(),
                    theoretical_gbs: facts.theoretical_bandwidth_gbs(),
                    device: facts,
                    records: Vec::new(),
                });
                self.results.len() - 1
            }
        };
        &mut self.results[index]
    }
}
