//! `tour`: the workspace's main command (`cargo run --release`).
//!
//! Runs every step of every technique on the GPU in ladder order ([`steps::STEPS`]). For each step
//! and size it checks the result against the CPU, measures the median device time of one call
//! (what the step's bench times, with CUDA events), and compares it with the copy roof measured at
//! that size in the same run. It prints a table per technique and size, writes one results file
//! per technique in the book's data format (`<out>/<gpu>/<technique>.json`), and re-renders the
//! book's tables and charts. `--charts` only re-renders them, with no GPU.

mod cli;
mod report;
mod steps;

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use gpu_harness::bench::size_label;
use gpu_harness::measure::{copy_roof_gbs, median_ms};
use gpu_harness::report::book_data_dir;
use gpu_harness::testing::TestRng;
use gpu_harness::{Device, DeviceView, Result};
use indicatif::{ProgressBar, ProgressStyle};

use cli::Options;
use report::{Outcome, Timing};
use steps::{Check, Runner, STEPS, Step};

/// Timed samples per median, as the benches take.
const SAMPLES: usize = 15;

fn main() -> ExitCode {
    let options = Options::parse();
    let out = options.out.clone().unwrap_or_else(book_data_dir);
    let ok = if options.charts { render_charts(&out) } else { tour(&options, &out) };
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// A step chosen for this run, with its launcher (or why it could not be built).
struct Selected {
    step: &'static Step,
    runner: std::result::Result<Box<dyn Runner>, String>,
}

/// The whole tour. Returns whether every check passed and every file was written.
fn tour(options: &Options, out: &Path) -> bool {
    let device = match Device::shared() {
        Ok(device) => device,
        Err(e) => {
            eprintln!("tour: cannot run kernels on this machine: {e}");
            eprintln!(
                "The tour needs an NVIDIA GPU with its driver, and NVRTC (see README.md, Requirements). \
                 Without a GPU, `cargo test --workspace` runs every test that needs none, and \
                 `cargo run --release -- --charts` re-renders the book from its committed data."
            );
            return false;
        }
    };
    if device.is_simulated() {
        return simulated_tour(&device, options);
    }
    let sizes = options.sizes();
    let chosen: Vec<&'static Step> = STEPS.iter().filter(|s| options.wants(s.technique)).collect();
    let ticks_at = |n: usize| chosen.iter().filter(|s| s.runs_at(n)).count() as u64;
    let bar = progress_bar(sizes.iter().map(|&n| ticks_at(n)).sum());
    let mut ok = true;

    bar.set_message("compiling kernels");
    let mut selected: Vec<Selected> = chosen
        .iter()
        .map(|&step| Selected { step, runner: (step.build)(&device).map_err(|e| e.to_string()) })
        .collect();

    let mut roofs = Vec::new();
    for &n in &sizes {
        bar.set_message(format!("copy roof at {}", size_label(n)));
        match copy_roof_gbs(&device, 4 * n) {
            Ok(gbs) => roofs.push((n, gbs)),
            Err(e) => {
                bar.suspend(|| eprintln!("tour: copy roof at {} failed, size skipped: {e}", size_label(n)));
                bar.inc(ticks_at(n));
                ok = false;
            }
        }
    }
    bar.suspend(|| println!("{}\n", report::header(device.facts(), &roofs)));

    let mut rng = TestRng::new();
    let mut outcomes = Vec::new();
    for &(n, copy_gbs) in &roofs {
        let at_n = run_size(&device, &bar, &mut rng, &mut selected, n, copy_gbs);
        match at_n {
            Ok(at_n) => outcomes.extend(at_n),
            Err(e) => {
                bar.suspend(|| eprintln!("tour: no input of {} elements, size skipped: {e}", size_label(n)));
                bar.inc(ticks_at(n));
                ok = false;
            }
        }
    }
    bar.finish_and_clear();

    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| !o.check.passed()).collect();
    ok &= failed.is_empty();
    ok &= write_results(&device, out, &roofs, &outcomes);
    if !options.no_charts {
        ok &= render_charts(out);
    }
    if !failed.is_empty() {
        eprintln!("tour: {} of {} step runs failed (not recorded):", failed.len(), outcomes.len());
        for o in failed {
            eprintln!("  {} / {} at {}: {}", o.technique, o.step, size_label(o.n), o.check.label());
        }
    }
    ok
}

/// Input size of the tour on the CPU simulator: large enough to fill its grids, small enough to run
/// every step in seconds.
const SIMULATED_SIZE: usize = 1 << 16;

/// The tour without a GPU: every step runs on the CPU simulator, is checked against the CPU, and
/// the table shows what the simulator counted (these are not timings, and nothing is written).
fn simulated_tour(device: &Device, options: &Options) -> bool {
    println!(
        "No GPU here: running every step on {} at n = {}. The results are \
         checked, and the table shows what each launch did; these are counts, not timings, so no \
         results file is written. Run the tour on an NVIDIA GPU to measure bandwidth.\n",
        device.facts().name,
        size_label(SIMULATED_SIZE)
    );
    let mut rng = TestRng::new();
    let host = rng.uniform_f32(SIMULATED_SIZE, -1.0, 1.0);
    let input = match device.upload(&host) {
        Ok(input) => input,
        Err(e) => {
            eprintln!("tour: {e}");
            return false;
        }
    };
    println!(
        "{:<20} {:<16} {:>6} {:>11} {:>7} {:>10} {:>9} {:>8} {:>10} {:>9}",
        "technique", "step", "check", "warp instr", "lanes", "divergent", "barriers", "shared", "conflicts", "sectors"
    );
    let mut ok = true;
    for step in STEPS.iter().filter(|s| options.wants(s.technique) && s.runs_at(SIMULATED_SIZE)) {
        let mut runner = match (step.build)(device) {
            Ok(runner) => runner,
            Err(e) => {
                println!("{:<20} {:<16} ERROR: {e}", step.technique, step.name);
                ok = false;
                continue;
            }
        };
        let check = runner
            .reserve(SIMULATED_SIZE)
            .map_err(|e| Check::Error(e.to_string()))
            .map(|()| runner.check(step.name, &rng, input.as_view(), &host))
            .unwrap_or_else(|failed| failed);
        let counted = runner.queue(input.as_view()).ok().and_then(|()| device.last_launch_counters());
        ok &= check.passed();
        match counted {
            Some(c) => println!(
                "{:<20} {:<16} {:>6} {:>11} {:>7.1} {:>10} {:>9} {:>8} {:>10} {:>9.1}",
                step.technique,
                step.name,
                check.label(),
                c.warp_instructions,
                c.average_active_lanes(),
                c.divergent_branches,
                c.barriers,
                c.shared_accesses,
                c.shared_bank_conflicts,
                c.sectors_per_request()
            ),
            None => println!("{:<20} {:<16} {:>6} (no counts)", step.technique, step.name, check.label()),
        }
        if let Some(message) = check.message() {
            println!("    {message}");
        }
    }
    println!(
        "\nwarp instr: warp instructions executed; lanes: average active lanes per warp instruction; \
         divergent: branches that split a warp; shared: shared-memory accesses; conflicts: extra \
         wavefronts from bank conflicts; sectors: 32-byte sectors per global memory request. \
         Multi-pass steps show their last launch."
    );
    ok
}

/// A progress bar on stderr, one tick per (step, size); hidden when stderr is not a terminal.
fn progress_bar(ticks: u64) -> ProgressBar {
    let style = ProgressStyle::with_template("{elapsed_precise} [{bar:24}] {pos}/{len} {wide_msg}")
        .map(|style| style.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::new(ticks).with_style(style)
}

/// Runs every selected step at size `n` on one random input, printing each technique's table as
/// soon as its last step is done. Fails only when the input cannot be made; a step's own failure
/// is in its outcome.
fn run_size(
    device: &Device,
    bar: &ProgressBar,
    rng: &mut TestRng,
    selected: &mut [Selected],
    n: usize,
    copy_gbs: f64,
) -> Result<Vec<Outcome>> {
    bar.set_message(format!("random input of {}", size_label(n)));
    let host = rng.uniform_f32(n, -1.0, 1.0);
    let input = device.upload(&host)?;
    let mut running: Vec<&mut Selected> = selected.iter_mut().filter(|s| s.step.runs_at(n)).collect();
    let mut at_n: Vec<Outcome> = Vec::new();
    for i in 0..running.len() {
        let step = running[i].step;
        let last_of_technique = running.get(i + 1).is_none_or(|next| next.step.technique != step.technique);
        bar.set_message(format!("{}/{} at {}", step.technique, step.name, size_label(n)));
        let (timing, check) = match &mut running[i].runner {
            Ok(runner) => run_step(device, runner.as_mut(), step.name, rng, input.as_view(), &host),
            Err(message) => (None, Check::Error(message.clone())),
        };
        at_n.push(Outcome {
            technique: step.technique,
            step: step.name,
            on_ladder: step.on_ladder(),
            n,
            timing,
            check,
        });
        bar.inc(1);
        if last_of_technique {
            bar.suspend(|| println!("{}", report::technique_table(step.technique, n, copy_gbs, &at_n)));
        }
    }
    Ok(at_n)
}

/// One step at one size: the check against the CPU first, then the median time of one call.
fn run_step(
    device: &Device,
    runner: &mut dyn Runner,
    what: &str,
    rng: &TestRng,
    input: DeviceView<'_, f32>,
    host: &[f32],
) -> (Option<Timing>, Check) {
    let n = host.len();
    if let Err(e) = runner.reserve(n) {
        return (None, Check::Error(e.to_string()));
    }
    let check = runner.check(what, rng, input, host);
    if let Check::Error(_) = check {
        return (None, check);
    }
    let timed = runner.bytes(n).and_then(|bytes| {
        let median_ms = median_ms(device, SAMPLES, || runner.queue(input))?;
        Ok(Timing { bytes, median_ms })
    });
    match timed {
        Ok(timing) => (Some(timing), check),
        Err(e) => (None, Check::Error(e.to_string())),
    }
}

/// Writes one results file per technique into `<out>/<gpu>/`. Returns whether all were written.
fn write_results(device: &Device, out: &Path, roofs: &[(usize, f64)], outcomes: &[Outcome]) -> bool {
    let facts = device.facts();
    let folder = out.join(report::gpu_slug(&facts.name));
    let date = report::utc_date_today();
    let mut ok = true;
    for technique in steps::techniques() {
        let Some(results) = report::bench_results(technique, facts, &date, roofs, outcomes) else { continue };
        let path = folder.join(format!("{technique}.json"));
        let written =
            report::results_json(&results).map_err(|e| e.to_string()).and_then(|text| write_file(&path, &text));
        match written {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("tour: cannot write {}: {e}", path.display());
                ok = false;
            }
        }
    }
    ok
}

/// Writes `text` to `path`, creating its folder.
fn write_file(path: &Path, text: &str) -> std::result::Result<(), String> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|e| e.to_string())?;
    }
    std::fs::write(path, text).map_err(|e| e.to_string())
}

/// Re-renders the book's tables and charts from the results files under `data_dir` and writes
/// them beside those files. Returns whether all were written.
fn render_charts(data_dir: &Path) -> bool {
    let outputs = match book_charts::render_book(data_dir) {
        Ok(outputs) => outputs,
        Err(e) => {
            eprintln!("tour: cannot render the book's tables and charts from {}: {e}", data_dir.display());
            return false;
        }
    };
    let mut ok = true;
    for (path, text) in outputs {
        match write_file(&path, &text) {
            Ok(()) => println!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("tour: cannot write {}: {e}", path.display());
                ok = false;
            }
        }
    }
    ok
}
