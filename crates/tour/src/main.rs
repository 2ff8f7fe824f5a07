//! `tour`: the workspace's main command (`cargo run --release`).
//!
//! Runs every step the registry (`course.toml`) lists, family by family, case by case, through the
//! same path as the benches (`measuring::Session`): each step is prepared on a random input,
//! checked against the CPU, timed (median of CUDA-event-timed batches) and recorded next to the
//! read and copy roofs of its case, measured in the same run. Peers (CUB, the seeds' kernels) run
//! too when `COURSE_PEERS` names their library; PyTorch's are measured by
//! `scripts/torch_reductions.py` instead (the tour runs without torch), and the book reads that
//! script's output beside ours. It prints each chapter's table and each family's summary, writes
//! one results file per crate into `book/src/data/<gpu>/`, and redraws the book's tables and
//! charts. Without a GPU it runs every step on the CPU simulator and prints what each launch did.
//! `--charts` only redraws the book from the committed data; `--pictures` only redraws the book's
//! pictures of what a warp does, from the chapters' kernels on the CPU simulator.

mod classroom;
mod cli;
mod counting;
mod pictures;
mod steps;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use course::{Family, StepRef};
use gpu_harness::peer::PeerLibrary;
use gpu_harness::{Case, Device, GpuError, PIP_INSTALL_NVRTC, StepEntry};
use indicatif::{ProgressBar, ProgressStyle};
use measuring::session::{Failure, Session, find_entry};
use measuring::tables::{chapter_table, summary_table};

use cli::Options;

/// The seed of the tour's random inputs (one per run, printed, so a failure can be replayed).
fn run_seed() -> u64 {
    std::env::var("TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    })
}

fn main() -> ExitCode {
    let options = Options::parse();
    let ok = match &options.command {
        Some(command) => classroom::run(command),
        None if options.charts => render_book(),
        None if options.pictures => draw_pictures(&options.crates),
        None => tour(&options),
    };
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// A step chosen for this run, at one case.
struct Run<'a> {
    step: StepRef<'a>,
    entry: StepEntry,
    case: &'a Case,
}

/// The steps of `family` that `options` select, each at each of its cases, in the order they run:
/// case by case, and in registry order within a case.
fn runs<'a>(
    family: &'a Family,
    options: &Options,
    entries: &[StepEntry],
    peers: bool,
) -> Vec<Run<'a>> {
    let steps: Vec<(StepRef, StepEntry)> = family
        .steps()
        .filter(|s| {
            options.wants(&family.id, s.crate_name)
                && s.timed_by_tour()
                && (peers || s.peer.is_none())
        })
        .filter_map(|s| Some((s, find_entry(entries, &s)?.clone())))
        .collect();
    let mut cases: Vec<&Case> = Vec::new();
    for (step, _) in &steps {
        for case in step.cases() {
            if !cases.contains(&case) && options.wants_case(&case.label) {
                cases.push(case);
            }
        }
    }
    let mut runs = Vec::new();
    for case in cases {
        for (step, entry) in &steps {
            if step.cases().contains(case) {
                runs.push(Run { step: *step, entry: entry.clone(), case });
            }
        }
    }
    runs
}

/// The whole tour. Returns whether every check passed and every file was written.
fn tour(options: &Options) -> bool {
    let device = match Device::shared() {
        Ok(device) => device,
        Err(e) => {
            eprintln!("tour: cannot run kernels on this machine: {e}");
            if matches!(e, GpuError::NoBackend { .. } | GpuError::NoCompiler { .. }) {
                eprintln!(
                    "The tour runs on an NVIDIA GPU, or on the CPU simulator, which needs only \
                     NVRTC: \
                     `{PIP_INSTALL_NVRTC}`. `cargo run --release -- --charts` redraws the book \
                     from its \
                     committed data with neither."
                );
            }
            return false;
        }
    };
    let seed = run_seed();
    if device.is_simulated() {
        return simulated_tour(&device, options, seed);
    }
    let peers = match PeerLibrary::shared() {
        Ok(_) => true,
        Err(e) => {
            println!("peers skipped: {e}\n");
            false
        }
    };
    let entries = steps::entries();
    let course = course::registry();
    let families: Vec<(&Family, Vec<Run>)> = course
        .families
        .iter()
        .map(|f| (f, runs(f, options, &entries, peers)))
        .filter(|(_, r)| !r.is_empty())
        .collect();
    let bar = progress_bar(families.iter().map(|(_, r)| r.len() as u64).sum());
    bar.suspend(|| {
        println!(
            "{}\nrandom inputs from seed {seed} (TEST_SEED={seed} replays them)\n",
            header(&device)
        )
    });
    let mut session = Session::new(&device);
    let mut failures = Vec::new();
    for (family, runs) in &families {
        if let Some(note) = script_peers(family, options) {
            bar.suspend(|| println!("{note}"));
        }
        for run in runs {
            bar.set_message(format!(
                "{}/{} at {}",
                run.step.crate_name,
                run.step.name(),
                run.case.label
            ));
            if let Err(failure) = session.measure(&run.step, &run.entry, run.case, seed) {
                bar.suspend(|| {
                    eprintln!(
                        "{}/{} at {}: {failure}",
                        run.step.crate_name,
                        run.step.name(),
                        run.case
                    )
                });
                failures.push(failure);
            }
            bar.inc(1);
        }
        bar.suspend(|| print_family(family, &session));
    }
    bar.finish_and_clear();

    let mut ok = failures.is_empty();
    let out = options.out.clone().unwrap_or_else(report::book_data_dir);
    let folder = out.join(measuring::gpu_slug(&device.facts().name));
    for results in session.results() {
        match measuring::write_results(&folder, results) {
            Ok(path) => println!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("tour: {e}");
                ok = false;
            }
        }
    }
    if !options.no_charts && options.out.is_none() {
        ok &= render_book();
    }
    if !failures.is_empty() {
        eprintln!("tour: {} step run(s) failed and were not recorded (see above)", failures.len());
    }
    ok
}

/// The line that says which of the family's peers the tour does not time, where it has some:
/// PyTorch's ops, measured by their script (`course::TORCH_SCRIPT`), which needs torch.
fn script_peers(family: &Family, options: &Options) -> Option<String> {
    let mut sources: Vec<&str> = Vec::new();
    for step in
        family.steps().filter(|s| !s.timed_by_tour() && options.wants(&family.id, s.crate_name))
    {
        let source = step.peer.map_or(step.name(), |p| p.source.as_str());
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    (!sources.is_empty()).then(|| {
        format!("{}: measured by {}, not by the tour", sources.join(", "), course::TORCH_SCRIPT)
    })
}

/// Each chapter's table and the family's summary, as text.
fn print_family(family: &Family, session: &Session) {
    for chapter in &family.chapters {
        if let Some(table) = chapter_table(family, chapter, session.results()) {
            println!("{}: {}\n{}", chapter.crate_name, chapter.title, table.text());
        }
    }
    if let Some(table) = summary_table(family, session.results()) {
        println!("{} summary\n{}", family.title, table.text());
    }
}

/// The GPU and its software.
fn header(device: &Device) -> String {
    let facts = device.facts();
    let peak =
        facts.theoretical_bandwidth_gbs().map_or("unknown".to_string(), |g| format!("{g:.0} GB/s"));
    format!(
        "{} ({} SMs, compute capability {}.{}), driver {}, CUDA {}, NVRTC {}; theoretical \
         bandwidth {peak}",
        facts.name,
        facts.multiprocessors,
        facts.compute_capability.0,
        facts.compute_capability.1,
        facts.driver_release.as_deref().unwrap_or("?"),
        facts.driver_cuda_version,
        facts.nvrtc_version
    )
}

/// The tour without a GPU: every step runs on the CPU simulator at its family's simulator case, is
/// checked against the CPU, and the table shows what the simulator counted (these are not
/// timings, and nothing is written).
fn simulated_tour(device: &Device, options: &Options, seed: u64) -> bool {
    println!(
        "No GPU here: running every step on {}, each family at its simulator size. The results are \
         checked, and the table shows what each launch did; these are counts, not timings, so no \
         results file is written. Run the tour on an NVIDIA GPU to measure bandwidth.\n",
        device.facts().name
    );
    println!(
        "{:<20} {:<16} {:>9} {:>6} {:>11} {:>7} {:>10} {:>9} {:>8} {:>10} {:>9}",
        "crate",
        "step",
        "case",
        "check",
        "warp instr",
        "lanes",
        "divergent",
        "barriers",
        "shared",
        "conflicts",
        "sectors"
    );
    let entries = steps::entries();
    let session = Session::new(device);
    let mut ok = true;
    for family in &course::registry().families {
        for step in
            family.steps().filter(|s| s.peer.is_none() && options.wants(&family.id, s.crate_name))
        {
            let Some(entry) = find_entry(&entries, &step) else { continue };
            // At the family's simulator size, or the step's own case where that is smaller (a
            // one-block step).
            let case =
                step.cases()[0].with_elements(family.simulator_case.n().min(step.cases()[0].n()));
            let outcome = session.prepare(entry, &case, seed).and_then(|mut prepared| {
                prepared.queue()?;
                Ok(device.last_launch_counters())
            });
            let label = match &outcome {
                Ok(_) => "ok",
                Err(Failure::Wrong(_)) => "WRONG",
                Err(Failure::Error(_)) => "ERROR",
            };
            print!("{:<20} {:<16} {:>9} {:>6}", step.crate_name, step.name(), case.label, label);
            match outcome {
                Ok(Some(c)) => println!(
                    " {:>11} {:>7.1} {:>10} {:>9} {:>8} {:>10} {:>9.1}",
                    c.warp_instructions,
                    c.average_active_lanes(),
                    c.divergent_branches,
                    c.barriers,
                    c.shared_accesses,
                    c.shared_bank_conflicts,
                    c.sectors_per_request()
                ),
                Ok(None) => println!(" (no counts)"),
                Err(failure) => {
                    println!("\n    {failure}");
                    ok = false;
                }
            }
        }
    }
    println!(
        "\nwarp instr: warp instructions executed; lanes: average active lanes per warp \
         instruction; \
         divergent: branches that split a warp; shared: shared-memory accesses; conflicts: extra \
         wavefronts from bank conflicts; sectors: 32-byte sectors per global memory request. \
         Multi-pass steps show their last launch. Inputs from seed {seed}."
    );
    ok
}

/// A progress bar on stderr, one tick per step and case; hidden when stderr is not a terminal.
fn progress_bar(ticks: u64) -> ProgressBar {
    let style = ProgressStyle::with_template("{elapsed_precise} [{bar:24}] {pos}/{len} {wide_msg}")
        .map(|style| style.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::new(ticks).with_style(style)
}

/// Redraws everything the book and the README show from the registry and the committed data.
fn render_book() -> bool {
    let root = measuring::workspace_root();
    match report::render_book(course::registry(), &root) {
        Ok(outputs) => write_changed(outputs),
        Err(e) => {
            eprintln!("tour: cannot render the book: {e}");
            false
        }
    }
}

/// Redraws the book's pictures of the chosen chapters (all when none is chosen) from their kernels,
/// on the CPU simulator.
fn draw_pictures(chapters: &[String]) -> bool {
    let root = measuring::workspace_root();
    match pictures::book_pictures(&root, chapters) {
        Ok(files) => write_changed(files),
        Err(e) => {
            eprintln!("tour: cannot draw the pictures: {e}");
            false
        }
    }
}

/// Writes each `(path, text)` whose file does not already hold it, saying so; false if one
/// cannot be written.
fn write_changed(files: Vec<(PathBuf, String)>) -> bool {
    let mut ok = true;
    for (path, text) in files {
        if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
            continue;
        }
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

/// Writes `text` to `path`, creating its folder.
fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)?;
    }
    std::fs::write(path, text)
}
