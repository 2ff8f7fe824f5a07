//! The counts behind the optimisation points: every graded step of a crate (a step whose
//! `course.toml` entry lists what its technique `improves`) run once on a fresh CPU simulator, at
//! its count case, on the input of [`COUNT_SEED`], checked against the CPU, and what every launch
//! it queued did added up.
//!
//! The grader counts the reference solution in its own process and the student's in a build of the
//! student's files (`tour count`, hidden from the help), with this same code: the same steps, the
//! same inputs, the same simulator.

use course::optimisation::{COUNT_SEED, StepCounts, graded_steps};
use gpu_harness::Device;
use report::session::{Failure, Session, find_entry};

/// The counts of every graded step of `crates`, in registry order.
pub fn count(crates: &[String]) -> Result<Vec<StepCounts>, String> {
    let device = Device::simulator().map_err(|e| format!("the CPU simulator cannot count: {e}"))?;
    let entries = crate::steps::entries();
    let session = Session::new(&device);
    let mut counts = Vec::new();
    for crate_name in crates {
        for step in graded_steps(course::registry(), crate_name) {
            let name = format!("{crate_name}/{}", step.name());
            let entry = find_entry(&entries, &step).ok_or_else(|| format!("{name}: no crate's steps() offers it"))?;
            let case = step.count_case();
            let mut prepared = session.prepare(entry, &case, COUNT_SEED).map_err(|failure| match failure {
                Failure::Wrong(m) => format!("{name} at {case}: a wrong result: {m}"),
                Failure::Error(m) => format!("{name} at {case}: {m}"),
            })?;
            device.take_launches(); // what preparing and checking launched
            prepared.queue().map_err(|e| format!("{name} at {case}: {e}"))?;
            device.synchronize().map_err(|e| format!("{name} at {case}: {e}"))?;
            let launches = device.take_launches();
            counts.push(StepCounts::of(crate_name, step.name(), &case.label, &step.step.improves, case.n(), &launches));
        }
    }
    Ok(counts)
}
