//! The bench kit: `cargo bench -p <crate>` measures the crate's steps at the cases the registry
//! (`course.toml`) gives them, through the same path as the tour (`measuring::Session`): each step
//! is prepared on a random input, checked against the CPU, timed by criterion (device time from
//! CUDA events, throughput in decimal bytes, so its report shows GB/s), then timed again by the
//! tour's function for the results file, next to the read and copy roofs of its case measured in
//! the same run. A dev-dependency only: no technique library links criterion.
//!
//! A crate's bench (`harness = false`) is one line:
//!
//! ```text
//! fn main() -> std::process::ExitCode {
//!     gpu_bench::main(reduce_naive::steps())
//! }
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use gpu_harness::peer::PeerLibrary;
use gpu_harness::{Device, StepEntry};
use measuring::session::{Failure, Session, find_entry};
use measuring::tables::chapter_table;

/// The seed of every bench input (a bench measures the same data each run).
const SEED: u64 = 0x5eed;

/// Benches every step of the crate that `entries` come from, and its peers when `COURSE_PEERS`
/// names the peer library (skipped with the reason otherwise). With no GPU it says so and succeeds
/// (fails with `CUDA_REQUIRED=1`); a step that fails its check or cannot run fails the bench.
pub fn main(entries: Vec<StepEntry>) -> ExitCode {
    let Some(crate_name) = entries.first().map(|e| e.crate_name) else {
        eprintln!("gpu-bench: no steps to measure");
        return ExitCode::FAILURE;
    };
    let device = match Device::shared() {
        Ok(device) if device.is_simulated() => {
            println!(
                "{crate_name}: benches skipped: the CPU simulator runs kernels but does not time \
                 them"
            );
            return ExitCode::SUCCESS;
        }
        Ok(device) => device,
        Err(e) if e.is_unavailable() && std::env::var("CUDA_REQUIRED").as_deref() != Ok("1") => {
            println!("{crate_name}: benches skipped: {e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{crate_name}: cannot run benches: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut criterion = Criterion::default().configure_from_args();
    let measuring = std::env::args().any(|a| a == "--bench");
    let mut session = Session::new(&device);
    let mut ok = true;
    let course = course::registry();
    for step in course.steps().filter(|s| s.crate_name == crate_name) {
        if let Some(torch) = step.torch() {
            println!(
                "{crate_name}: peer `{}` ({torch}) is measured by {}",
                step.name(),
                course::TORCH_SCRIPT
            );
            continue;
        }
        // A peer (cuBLAS, CUB) needs the peer library; without it the row is skipped, as in the
        // tour.
        if step.peer.is_some() {
            if let Err(e) = PeerLibrary::shared() {
                println!("{crate_name}: peer `{}` skipped: {e}", step.name());
                continue;
            }
        }
        let Some(entry) = find_entry(&entries, &step) else {
            eprintln!(
                "{crate_name}: the registry lists step `{}`, which the crate does not offer",
                step.name()
            );
            ok = false;
            continue;
        };
        for case in step.cases() {
            let outcome = session.prepare(entry, case, SEED).and_then(|mut prepared| {
                let bytes = step.bytes(case, &prepared.counts()).map_err(Failure::Error)?;
                let mut group = criterion.benchmark_group(format!("{crate_name}/{}", case.label));
                group.throughput(Throughput::BytesDecimal(bytes));
                let mut failure = None;
                group.bench_function(step.name(), |b| {
                    b.iter_custom(|iters| {
                        match device.time_ms(|| (0..iters).try_for_each(|_| prepared.queue())) {
                            Ok(ms) => Duration::from_secs_f64(ms / 1e3),
                            Err(e) => {
                                failure.get_or_insert(e);
                                Duration::from_nanos(1)
                            }
                        }
                    })
                });
                group.finish();
                if let Some(e) = failure {
                    return Err(e.into());
                }
                if measuring {
                    session.time(&step, case, prepared.as_mut())?;
                }
                Ok(())
            });
            if let Err(failure) = outcome {
                eprintln!("{crate_name}: {} at {}: {failure}", step.name(), case.label);
                ok = false;
            }
        }
    }
    criterion.final_summary();
    for results in session.results() {
        if let Some(family) = course.family(&results.family) {
            if let Some(chapter) = family.chapter(&results.crate_name) {
                if let Some(table) = chapter_table(family, chapter, session.results()) {
                    println!("\n{}", table.text());
                }
            }
        }
        match measuring::write_results(&results_dir(), results) {
            Ok(path) => println!("results written to {}", path.display()),
            Err(e) => {
                eprintln!("{crate_name}: {e}");
                ok = false;
            }
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Where bench results go: `$CRITERION_HOME/measurements`, else `<target>/criterion/measurements`.
pub fn results_dir() -> PathBuf {
    let home = std::env::var_os("CRITERION_HOME").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| measuring::workspace_root().join("target"))
            .join("criterion")
    });
    home.join("measurements")
}
