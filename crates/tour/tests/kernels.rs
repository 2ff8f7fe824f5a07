//! The kernel each step launches is the one the registry (`course.toml`) names for it. Every step
//! of every family (the peers are NVIDIA's libraries, not ours) is prepared through its crate's
//! `steps()` on a small case on the CPU simulator, which records the kernels a device launches,
//! and queued once, exactly as the tour and the benches time it: the registry's kernel must be
//! among those launched. Mapping a registry name to the wrong launcher (swapping two entries of a
//! step enum, or of a `steps()` list) fails here, where the tour would have measured one kernel
//! under another's name.

use std::process::ExitCode;

use gpu_harness::Device;
use gpu_test::TestSuite;

#[path = "../src/steps.rs"]
#[allow(dead_code, unused_imports)]
mod steps;

/// The largest input the check runs a step on: it needs a launch, not a measurement.
const ELEMENTS: u64 = 1 << 14;

fn main() -> ExitCode {
    let course = course::registry();
    let mut suite = TestSuite::new();
    for step in course.steps().filter(|step| step.peer.is_none()) {
        let (crate_name, name, kernel) =
            (step.crate_name.to_string(), step.name().to_string(), step.step.kernel.clone());
        let hopper = step.step.hopper.clone();
        let first = &step.cases()[0];
        let case = first.with_elements(step.family.simulator_case.n().min(first.n()).min(ELEMENTS));
        suite = suite.nvrtc(format!("launches_its_kernel::{crate_name}::{name}"), move || {
            let entries = steps::entries();
            let entry = entries
                .iter()
                .find(|e| e.crate_name == crate_name && e.step == name)
                .ok_or_else(|| format!("{crate_name}/{name}: no crate's steps() offers it"))?;
            let device = Device::simulator()?;
            let mut prepared = (entry.prepare)(&device, &case, 1)?;
            device.take_launched_kernels(); // whatever preparing launched
            prepared.queue()?;
            device.synchronize()?;
            let launched = device.take_launched_kernels();
            // Before Hopper (GPU_PROFILE=A100, say) a step that needs it runs its fallback.
            let kernel = match &hopper {
                Some(hopper) => hopper.kernel_on(&kernel, device.facts().compute_capability),
                None => &kernel,
            }
            .to_string();
            if launched.contains(&kernel) {
                Ok(())
            } else {
                Err(format!(
                    "{crate_name}/{name} at {case}: course.toml names kernel `{kernel}`, but the \
                     step launched {launched:?}"
                )
                .into())
            }
        });
    }
    suite.run()
}
