//! Gradescope: its `results.json` ([`results_json`], what `cargo course grade --gradescope` writes)
//! and its autograder bundle ([`write_bundle`], what `cargo course gradescope` writes).
//!
//! Gradescope builds an image from the bundle (a zip of `setup.sh`, `run_autograder` and whatever
//! else it holds, unpacked into `/autograder/source`), running `setup.sh` once; then, for each
//! submission, it puts the student's files in `/autograder/submission`, runs
//! `/autograder/run_autograder` and reads `/autograder/results/results.json`. The bundle holds a
//! copy of the instructor's workspace (`course/`, solutions included: students never see the
//! bundle), which `setup.sh` builds and grades once; `run_autograder` grades the submission with
//! `--submission`, so the instructor's tests grade the student's files. Both scripts take their
//! root from `AUTOGRADER_ROOT` (default `/autograder`), so that a test can run them in a folder
//! laid out as Gradescope's.

use std::path::{Path, PathBuf};

use crate::optimisation::{OPTIMISATION_POINTS, Optimisation, graded_steps, number};
use crate::{
    CORRECTNESS_POINTS, CrateGrade, Result, SPEED_POINTS, speed_points, sync_tree, workspace_files,
};

/// The folder of the bundle that holds the instructor's workspace.
pub const COURSE_FOLDER: &str = "course";

/// The grades as Gradescope's `results.json`: the total `score`, `output` (what the grade says
/// above its table: the files graded, the backend), and `tests`, each with `name`, `score`,
/// `max_score`, `status`, `output` and `visibility` (all visible): per crate, one for its graded
/// tests ([`CORRECTNESS_POINTS`]); one per graded step for its optimisation score (the crate's
/// [`OPTIMISATION_POINTS`] shared equally between its steps, the counters and the grader's advice
/// as output, or why they were not counted); and, with `--speed`, one for its speed.
pub fn results_json(output: &str, grades: &[CrateGrade]) -> String {
    let test = |name: String, score: f64, max_score: f64, output: String| {
        let status = if score + 1e-9 >= max_score { "passed" } else { "failed" };
        serde_json::json!({
            "name": name,
            "score": (score * 1000.0).round() / 1000.0,
            "max_score": (max_score * 1000.0).round() / 1000.0,
            "status": status,
            "output": output,
            "visibility": "visible",
        })
    };
    let mut tests = Vec::new();
    for CrateGrade { grade, optimisation, speeds } in grades {
        let name = &grade.crate_name;
        let ran = grade.passed + grade.failed;
        let mut out = format!("{} of {ran} graded tests passed", grade.passed);
        if grade.ignored > 0 {
            out += &format!(" ({} ignored: they cannot run on this backend)", grade.ignored);
        }
        for failure in grade.failures.iter().take(10) {
            out += &format!("\nfailed: {failure}");
        }
        if grade.failures.len() > 10 {
            out += &format!("\n... and {} more", grade.failures.len() - 10);
        }
        tests.push(test(format!("{name}: tests"), grade.points(), CORRECTNESS_POINTS, out));
        match optimisation {
            Some(Optimisation::Scored(steps)) => {
                let share = OPTIMISATION_POINTS / steps.len().max(1) as f64;
                for step in steps {
                    let mut out = String::new();
                    for c in &step.counters {
                        out += &format!(
                            "{}: {}, the reference {} (score {:.2})\n",
                            c.counter,
                            number(c.student),
                            number(c.reference),
                            c.score
                        );
                    }
                    for advice in step.advice() {
                        out += &format!("{advice}\n");
                    }
                    tests.push(test(
                        format!("{name}: optimisation, {} ({})", step.step, step.case),
                        share * step.score(),
                        share,
                        out.trim_end().to_string(),
                    ));
                }
            }
            Some(Optimisation::NotScored(why)) => {
                let steps = graded_steps(course::registry(), name);
                let share = OPTIMISATION_POINTS / steps.len().max(1) as f64;
                for step in steps {
                    tests.push(test(
                        format!(
                            "{name}: optimisation, {} ({})",
                            step.name,
                            step.count_case().label
                        ),
                        0.0,
                        share,
                        format!("not counted: {why}"),
                    ));
                }
            }
            None => {}
        }
        if let Some(speeds) = speeds {
            let out = if speeds.is_empty() {
                "not timed: a graded test fails".to_string()
            } else {
                speeds
                    .iter()
                    .map(|s| {
                        format!(
                            "{} at {}: {:.3} times the reference's time (score {:.2})",
                            s.step,
                            s.case,
                            s.ratio,
                            s.score()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            tests.push(test(format!("{name}: speed"), speed_points(speeds), SPEED_POINTS, out));
        }
    }
    let score: f64 = grades.iter().map(|g| g.points().0).sum();
    serde_json::to_string_pretty(&serde_json::json!({
        "score": (score * 1000.0).round() / 1000.0,
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }))
    .unwrap_or_default()
        + "\n"
}

/// The toolchain the workspace at `root` pins (`rust-toolchain.toml`'s `channel`, or the one line
/// of `rust-toolchain`), else `stable`.
pub fn pinned_toolchain(root: &Path) -> String {
    if let Ok(text) = std::fs::read_to_string(root.join("rust-toolchain.toml")) {
        let channel = text.lines().find_map(|line| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == "channel").then(|| value.trim().trim_matches('"').to_string())
        });
        if let Some(channel) = channel {
            return channel;
        }
    }
    match std::fs::read_to_string(root.join("rust-toolchain")) {
        Ok(text) if !text.trim().is_empty() => text.trim().to_string(),
        _ => "stable".to_string(),
    }
}

/// Gradescope's `setup.sh`: installs Rust (rustup, minimal profile, `toolchain`) and NVRTC (pip,
/// release `nvrtc` where given: `major.minor`) on Gradescope's Ubuntu image, builds the grader and
/// grades the instructor's own solution once (which must score in full), so that each
/// submission's grade rebuilds only what the student's files change.
pub fn setup_sh(crates: &[String], toolchain: &str, nvrtc: Option<&str>) -> String {
    let pin = nvrtc.map_or(String::new(), |v| format!("=={v}.*"));
    let crates = crates.join(",");
    format!(
        r#"#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image (Ubuntu): it installs
# Rust and NVRTC, builds the grader, and grades the instructor's solution once (full points, or the
# image fails to build), which also leaves the builds warm for the students' grades. Written by
# `cargo course gradescope`.
set -euo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
course="$root/source/{COURSE_FOLDER}"

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq curl ca-certificates build-essential python3 python3-pip >/dev/null

# Rust: rustup's minimal profile, with the toolchain the workspace pins (else stable).
curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs \
  | sh -s -- -y --profile minimal --default-toolchain {toolchain}
. "$HOME/.cargo/env"

# NVRTC compiles the kernels the CPU simulator runs (Gradescope has no GPU): the release the
# bundle was made with. --target keeps it out of the system's Python.
python3 -m pip install --quiet --disable-pip-version-check --target "$root/nvrtc" \
  "nvidia-cuda-nvrtc{pin}"
export NVRTC_LIB_DIR="$root/nvrtc"

cd "$course"
cargo build --release --quiet --package tour
target/release/tour grade --crates {crates} --submission "$course" --require-optimised
"#
    )
}

/// Gradescope's `run_autograder`: grades `$AUTOGRADER_ROOT/submission` (the student's files, laid
/// over the instructor's copy: see [`crate::overlay_submission`]) into
/// `$AUTOGRADER_ROOT/results/results.json`. `COURSE_GRADER` names another grader binary (a test's
/// build); where the grader writes nothing, the results say so with a score of 0.
pub fn run_autograder(crates: &[String]) -> String {
    let crates = crates.join(",");
    format!(
        r#"#!/usr/bin/env bash
# Gradescope runs this for each submission: the student's files in $root/submission (the files
# that hold their solutions, at their paths in the starter or uploaded alone; nothing else of the
# submission is used) are laid over the instructor's workspace and graded by its tests into
# $root/results/results.json. Written by `cargo course gradescope`.
set -uo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
course="$root/source/{COURSE_FOLDER}"
grader="${{COURSE_GRADER:-$course/target/release/tour}}"
if [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
if [ -d "$root/nvrtc" ]; then export NVRTC_LIB_DIR="$root/nvrtc"; fi
results="$root/results/results.json"
mkdir -p "$root/results"
rm -f "$results"
"$grader" grade --crates {crates} --submission "$root/submission" --gradescope "$results"
if [ ! -s "$results" ]; then
  printf '%s%s\n' '{{"score": 0, "output": "The grader failed before it could grade' \
    ' this submission: your instructor has its log."}}' >"$results"
fi
"#
    )
}

/// Writes Gradescope's autograder bundle for `crates` into `dest` (a new or empty folder):
/// `setup.sh`, `run_autograder` (both executable) and the workspace at `root` in `course/`.
/// `nvrtc` (`major.minor`) pins the NVRTC release `setup.sh` installs. Returns the files written.
pub fn write_bundle(
    root: &Path,
    dest: &Path,
    crates: &[String],
    nvrtc: Option<&str>,
) -> Result<Vec<PathBuf>> {
    if dest.exists() && std::fs::read_dir(dest).map_err(|e| e.to_string())?.next().is_some() {
        return Err(format!("{} exists and is not empty: choose a new folder", dest.display()));
    }
    let mut files = Vec::new();
    for file in workspace_files(root)? {
        let bytes =
            std::fs::read(root.join(&file)).map_err(|e| format!("{}: {e}", file.display()))?;
        files.push((Path::new(COURSE_FOLDER).join(file), bytes));
    }
    let toolchain = pinned_toolchain(root);
    files.push(("setup.sh".into(), setup_sh(crates, &toolchain, nvrtc).into_bytes()));
    files.push(("run_autograder".into(), run_autograder(crates).into_bytes()));
    sync_tree(dest, &files)?;
    for script in ["setup.sh", "run_autograder"] {
        set_executable(&dest.join(script))?;
    }
    Ok(files.into_iter().map(|(f, _)| f).collect())
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<()> {
    Ok(())
}
