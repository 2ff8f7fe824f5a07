//! The counts behind the optimisation points: every graded step of a crate (a step whose
//! `course.toml` entry lists what its technique `improves`) run once on a fresh CPU simulator, at
//! its count case, on the input of [`COUNT_SEED`], checked against the CPU, and what every launch
//! it queued did added up; a step of several GPUs (a world step) is run by its crate on a fresh
//! world of simulated devices, and its copies between them are counted too.
//!
//! The grader counts the reference solution in its own process and the student's in a build of the
//! student's files (`tour count`, hidden from the help), with this same code: the same steps, the
//! same inputs, the same simulator.

use classroom::optimisation::{COUNT_SEED, Counted, StepCounts, graded_steps};
use gpu_harness::Device;
use measuring::session::{Failure, Session, find_entry};

/// The counts of every graded step of `crates`, in registry order.
pub fn count(crates: &[String]) -> Result<Vec<StepCounts>, String> {
    let device = Device::simulator().map_err(|e| format!("the CPU simulator cannot count: {e}"))?;
    let entries = crate::steps::entries();
    let session = Session::new(&device);
    let mut counts = Vec::new();
    for crate_name in crates {
        for graded in graded_steps(course::registry(), crate_name) {
            let name = format!("{crate_name}/{}", graded.name);
            let case = graded.count_case();
            let step = match &graded.counted {
                Counted::OnOneDevice(step) => step,
                Counted::OnAWorld { step, .. } => {
                    let n = case.elements().map_err(|e| format!("{name}: {e}"))?;
                    let run = world_counter(crate_name, &step.name).ok_or_else(|| {
                        format!("{name}: no crate counts it on a world of devices")
                    })?;
                    let counted = run(step.devices, n, COUNT_SEED)
                        .map_err(|e| format!("{name} at {case}: {e}"))?;
                    counts.push(StepCounts::of(
                        &graded,
                        &case.label,
                        case.n(),
                        &counted.launches,
                        &counted.transfers,
                    ));
                    continue;
                }
            };
            let entry = find_entry(&entries, step)
                .ok_or_else(|| format!("{name}: no crate's steps() offers it"))?;
            let mut prepared =
                session.prepare(entry, &case, COUNT_SEED).map_err(|failure| match failure {
                    Failure::Wrong(m) => format!("{name} at {case}: a wrong result: {m}"),
                    Failure::Error(m) => format!("{name} at {case}: {m}"),
                })?;
            device.take_launches(); // what preparing and checking launched
            prepared.queue().map_err(|e| format!("{name} at {case}: {e}"))?;
            device.synchronize().map_err(|e| format!("{name} at {case}: {e}"))?;
            let launches = device.take_launches();
            counts.push(StepCounts::of(&graded, &case.label, case.n(), &launches, &[]));
        }
    }
    Ok(counts)
}

/// How a step graded on a world of simulated devices (a `world_step` of `course.toml`) is run and
/// counted: devices, elements per device, seed.
type WorldCounter = fn(usize, usize, u64) -> Result<reduce_multi_gpu::RingCounts, String>;

/// The counting of each world step, by crate and step (`count` fails for one not listed here).
fn world_counter(crate_name: &str, step: &str) -> Option<WorldCounter> {
    match (crate_name, step) {
        ("reduce-multi-gpu", "ring") => Some(reduce_multi_gpu::count_ring),
        _ => None,
    }
}
