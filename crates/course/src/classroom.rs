//! Course mode: starter copies with the solutions removed, and grading by the same tests.
//!
//! - [`write_starter`]: a copy of the workspace in which every solution region (see
//!   [`crate::regions`]) of the chosen crates is replaced by its stub, the tests untouched, with a
//!   ready `.github/classroom/autograding.json`.
//! - [`grade`]: runs a crate's graded tests (every test but the illustrations, whose names start
//!   with `illustration::`) and counts them; with a submission, the student's files are laid over a
//!   copy of the instructor's workspace first, so the instructor's tests grade the student's code.
//! - [`speed`]: on a GPU, the student's steps timed against the reference solution's, in one run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::regions::{regions, starter_text_for};

/// Points a crate's graded tests are worth, and its speed score.
pub const CORRECTNESS_POINTS: f64 = 10.0;
pub const SPEED_POINTS: f64 = 5.0;
/// A step timed at or under this multiple of the reference solution's time gets full speed marks.
pub const FULL_MARKS_RATIO: f64 = 1.2;
/// What `cargo test` is told to skip when grading.
pub const SKIP_ILLUSTRATIONS: &str = "illustration::";

/// Why a course command failed.
pub type Result<T> = std::result::Result<T, String>;

/// The workspace's files (relative paths), as git lists them (tracked, and untracked but not
/// ignored); where git is missing, every file outside `target/`, `.git/` and other build output.
pub fn workspace_files(root: &Path) -> Result<Vec<PathBuf>> {
    let git = Command::new("git")
        .args(["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
        .current_dir(root)
        .output();
    if let Ok(output) = git {
        if output.status.success() {
            let mut files: Vec<PathBuf> = output
                .stdout
                .split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
                .filter(|p| root.join(p).is_file())
                .collect();
            files.sort();
            files.dedup();
            return Ok(files);
        }
    }
    let mut files = Vec::new();
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(root.join(&folder)).map_err(|e| format!("{}: {e}", folder.display()))?;
        for entry in entries.flatten() {
            let relative = folder.join(entry.file_name());
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() {
                let skip = ["target", ".git", ".ci-deps"].contains(&name.as_str())
                    || name.starts_with(".gpu")
                    || relative == Path::new("book/book");
                if !skip {
                    folders.push(relative);
                }
            } else {
                files.push(relative);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The crate a file belongs to: `cuda/<crate_name>.cu` and everything under `crates/<crate>/`.
/// Shared headers belong to none (their regions name their owner).
pub fn file_crate(path: &Path) -> Option<String> {
    let parts: Vec<&str> = path.iter().filter_map(|p| p.to_str()).collect();
    match parts.as_slice() {
        ["crates", name, ..] => Some(name.to_string()),
        ["cuda", file] => file.strip_suffix(".cu").map(|stem| stem.replace('_', "-")),
        _ => None,
    }
}

/// One solution region: the file it is in, the crate whose assignment it is, and its task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub file: PathBuf,
    pub line: usize,
    pub crate_name: String,
    pub task: String,
}

/// Where solution regions may be: kernels and headers under `cuda/`, launchers under `crates/*/src/`.
fn may_hold_regions(path: &Path) -> bool {
    let text = path.to_string_lossy();
    (text.starts_with("cuda/") && (text.ends_with(".cu") || text.ends_with(".cuh")))
        || (text.starts_with("crates/") && text.contains("/src/") && text.ends_with(".rs"))
}

/// Every solution region of the workspace at `root`, in file order.
pub fn assignments(root: &Path) -> Result<Vec<Assignment>> {
    let mut found = Vec::new();
    for file in workspace_files(root)?.into_iter().filter(|f| may_hold_regions(f)) {
        let text = std::fs::read_to_string(root.join(&file)).map_err(|e| format!("{}: {e}", file.display()))?;
        for region in regions(&text).map_err(|e| format!("{}: {e}", file.display()))? {
            let crate_name = region.owner.clone().or_else(|| file_crate(&file)).ok_or_else(|| {
                format!(
                    "{}:{}: a region in a shared file must name its crate: `solution(<crate>)`",
                    file.display(),
                    region.line
                )
            })?;
            found.push(Assignment { file: file.clone(), line: region.line, crate_name, task: region.task });
        }
    }
    Ok(found)
}

/// The crates that have solution regions, sorted.
pub fn assigned_crates(root: &Path) -> Result<Vec<String>> {
    let crates: BTreeSet<String> = assignments(root)?.into_iter().map(|a| a.crate_name).collect();
    Ok(crates.into_iter().collect())
}

/// Copies the workspace at `root` to `dest`, with the regions of `crates` replaced by their stubs,
/// and writes `.github/classroom/autograding.json` grading those crates. Returns the regions
/// stubbed.
pub fn write_starter(root: &Path, dest: &Path, crates: &[String]) -> Result<Vec<Assignment>> {
    if dest.exists() && std::fs::read_dir(dest).map_err(|e| e.to_string())?.next().is_some() {
        return Err(format!("{} exists and is not empty: choose a new folder", dest.display()));
    }
    let stubbed: Vec<Assignment> = assignments(root)?.into_iter().filter(|a| crates.contains(&a.crate_name)).collect();
    let stub_files: BTreeSet<&PathBuf> = stubbed.iter().map(|a| &a.file).collect();
    for file in workspace_files(root)? {
        let target = dest.join(&file);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        }
        if stub_files.contains(&file) {
            let text = std::fs::read_to_string(root.join(&file)).map_err(|e| e.to_string())?;
            let file_owner = file_crate(&file);
            let chosen = |owner: Option<&str>| {
                owner.map(str::to_string).or_else(|| file_owner.clone()).is_some_and(|c| crates.contains(&c))
            };
            let starter = starter_text_for(&text, chosen).map_err(|e| format!("{}: {e}", file.display()))?;
            std::fs::write(&target, starter).map_err(|e| format!("{}: {e}", target.display()))?;
        } else {
            std::fs::copy(root.join(&file), &target).map_err(|e| format!("{}: {e}", file.display()))?;
        }
    }
    let classroom = dest.join(".github/classroom");
    std::fs::create_dir_all(&classroom).map_err(|e| e.to_string())?;
    let digest = tests_digest(dest)?;
    std::fs::write(classroom.join("autograding.json"), autograding_json(crates, &digest)).map_err(|e| e.to_string())?;
    Ok(stubbed)
}

/// A digest of every file a student does not edit (the tests, the test kit, the registry, every
/// file without a solution region, under `crates/`, `cuda/` and the workspace's manifests): a
/// grade with `--tests-digest` refuses a workspace whose tests were changed. FNV-1a over paths and
/// contents: a check against edits by mistake or by a hurried student, not a signature.
pub fn tests_digest(root: &Path) -> Result<String> {
    let student_files: BTreeSet<PathBuf> = assignments(root)?.into_iter().map(|a| a.file).collect();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for file in workspace_files(root)? {
        let text = file.to_string_lossy();
        let graded = text.starts_with("crates/")
            || text.starts_with("cuda/")
            || ["Cargo.toml", "Cargo.lock", "course.toml"].contains(&text.as_ref());
        if !graded || student_files.contains(&file) {
            continue;
        }
        eat(text.as_bytes());
        eat(&[0]);
        eat(&std::fs::read(root.join(&file)).map_err(|e| format!("{}: {e}", file.display()))?);
        eat(&[0]);
    }
    Ok(format!("{hash:016x}"))
}

/// GitHub Classroom's autograding file: one test per crate, graded on the CPU simulator (its
/// runners have no GPU), full points when every graded test of the crate passes and the tests are
/// the instructor's (their digest is written into the command).
pub fn autograding_json(crates: &[String], digest: &str) -> String {
    let tests: Vec<String> = crates
        .iter()
        .map(|name| {
            format!(
                "    {{\n      \"name\": \"{name}\",\n      \"setup\": \"python3 -m pip install --user nvidia-cuda-nvrtc\",\n      \
                 \"run\": \"cargo course grade --crates {name} --require-all --tests-digest {digest}\",\n      \"input\": \"\",\n      \
                 \"output\": \"\",\n      \"comparison\": \"included\",\n      \"timeout\": 20,\n      \"points\": {}\n    }}",
                CORRECTNESS_POINTS as u32
            )
        })
        .collect();
    format!("{{\n  \"tests\": [\n{}\n  ]\n}}\n", tests.join(",\n"))
}

/// A crate's graded tests, as one `cargo test` run counted them.
#[derive(Debug, Clone, PartialEq)]
pub struct Grade {
    pub crate_name: String,
    pub passed: usize,
    pub failed: usize,
    pub ignored: usize,
    /// The failed tests' names.
    pub failures: Vec<String>,
    /// Whether the tests were built and run at all (false: a build error).
    pub built: bool,
}

impl Grade {
    /// Correctness points: [`CORRECTNESS_POINTS`] times the share of graded tests that passed
    /// (ignored tests, which cannot run here, do not count).
    pub fn points(&self) -> f64 {
        let ran = self.passed + self.failed;
        if !self.built || ran == 0 { 0.0 } else { CORRECTNESS_POINTS * self.passed as f64 / ran as f64 }
    }

    /// Whether the crate is solved: its tests built, at least one ran, and none failed.
    pub fn all_passed(&self) -> bool {
        self.built && self.failed == 0 && self.passed > 0
    }
}

/// Runs the graded tests of `crate_name` in the workspace at `root` and counts them; `target`
/// names the build folder (another workspace's, to reuse its builds), else the workspace's own.
pub fn grade(root: &Path, crate_name: &str, target: Option<&Path>) -> Result<Grade> {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.args(["test", "--package", crate_name, "--no-fail-fast", "--", "--skip", SKIP_ILLUSTRATIONS]);
    if let Some(target) = target {
        command.env("CARGO_TARGET_DIR", target);
    }
    let output = command.current_dir(root).output().map_err(|e| format!("cannot run cargo: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut grade = Grade {
        crate_name: crate_name.to_string(),
        passed: 0,
        failed: 0,
        ignored: 0,
        failures: Vec::new(),
        built: true,
    };
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("test ") else { continue };
        let Some((name, outcome)) = rest.rsplit_once(" ... ") else { continue };
        let name = name.trim().to_string();
        match outcome.split_whitespace().next() {
            Some("ok") => grade.passed += 1,
            Some("FAILED") => {
                grade.failed += 1;
                grade.failures.push(name);
            }
            Some("ignored") => grade.ignored += 1,
            _ => {}
        }
    }
    if !output.status.success() && grade.failed == 0 {
        // Nothing failed, yet cargo did: the tests did not build (a stub or a solution that does
        // not compile), or a test binary crashed.
        grade.built = false;
        let reason = stderr.lines().filter(|l| l.starts_with("error")).take(3).collect::<Vec<_>>().join("; ");
        grade.failures.push(format!("the tests did not build or run: {reason}"));
    }
    Ok(grade)
}

/// A copy of the instructor's workspace at `dest` with the student's versions of every file that
/// holds a solution region (the files a student edits) taken from `submission`: the instructor's
/// tests grade the student's kernels and launchers, whatever the submission's tests say.
pub fn overlay_submission(instructor: &Path, submission: &Path, dest: &Path) -> Result<Vec<PathBuf>> {
    let student_files: BTreeSet<PathBuf> = assignments(instructor)?.into_iter().map(|a| a.file).collect();
    let mut taken = Vec::new();
    for file in workspace_files(instructor)? {
        let target = dest.join(&file);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        }
        let source = if student_files.contains(&file) && submission.join(&file).is_file() {
            taken.push(file.clone());
            submission.join(&file)
        } else {
            instructor.join(&file)
        };
        std::fs::copy(&source, &target).map_err(|e| format!("{}: {e}", source.display()))?;
    }
    Ok(taken)
}

/// One step's speed: the student's median time over the reference's, at one case.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSpeed {
    pub step: String,
    pub case: String,
    pub ratio: f64,
}

impl StepSpeed {
    /// Full marks at or under [`FULL_MARKS_RATIO`], then scaled down: `1.2 / ratio`.
    pub fn score(&self) -> f64 {
        if self.ratio <= FULL_MARKS_RATIO { 1.0 } else { FULL_MARKS_RATIO / self.ratio }
    }
}

/// Speed points of a crate: [`SPEED_POINTS`] times the mean score of its steps.
pub fn speed_points(steps: &[StepSpeed]) -> f64 {
    if steps.is_empty() {
        return 0.0;
    }
    SPEED_POINTS * steps.iter().map(StepSpeed::score).sum::<f64>() / steps.len() as f64
}

/// The median times of a tour results file: `(step, case, median ms)`.
fn median_times(json: &Path) -> Result<Vec<(String, String, f64)>> {
    let text = std::fs::read_to_string(json).map_err(|e| format!("{}: {e}", json.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let records = value["records"].as_array().ok_or_else(|| format!("{}: no records", json.display()))?;
    Ok(records
        .iter()
        .filter_map(|r| {
            Some((r["step"].as_str()?.to_string(), r["case"].as_str()?.to_string(), r["median_ms"].as_f64()?))
        })
        .collect())
}

/// Times `crate_name`'s steps in the student's workspace and in the reference (instructor's) one,
/// one after the other on the same GPU, with the tour; returns each step's time ratio.
pub fn speed(student: &Path, reference: &Path, crate_name: &str, scratch: &Path) -> Result<Vec<StepSpeed>> {
    let mut times = Vec::new();
    for (who, root) in [("student", student), ("reference", reference)] {
        let out = scratch.join(who);
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "run",
                "--release",
                "--quiet",
                "--package",
                "tour",
                "--",
                "--crates",
                crate_name,
                "--no-charts",
                "--out",
            ])
            .arg(&out)
            .current_dir(root)
            .status()
            .map_err(|e| format!("cannot run the tour: {e}"))?;
        if !status.success() {
            return Err(format!("the tour of {crate_name} failed in the {who}'s workspace"));
        }
        let json = std::fs::read_dir(&out)
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|gpu| gpu.path().join(format!("{crate_name}.json")))
            .find(|p| p.is_file())
            .ok_or_else(|| format!("the tour wrote no results for {crate_name}"))?;
        times.push(median_times(&json)?);
    }
    let (student, reference) = (&times[0], &times[1]);
    Ok(student
        .iter()
        .filter_map(|(step, case, ms)| {
            let (_, _, reference_ms) = reference.iter().find(|(s, c, _)| s == step && c == case)?;
            Some(StepSpeed { step: step.clone(), case: case.clone(), ratio: ms / reference_ms })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_belong_to_their_crates() {
        assert_eq!(file_crate(Path::new("cuda/reduce_naive.cu")).as_deref(), Some("reduce-naive"));
        assert_eq!(
            file_crate(Path::new("crates/reduce-multi-level/src/lib.rs")).as_deref(),
            Some("reduce-multi-level")
        );
        assert_eq!(file_crate(Path::new("cuda/block_reduce.cuh")), None);
    }

    #[test]
    fn points_count_what_ran() {
        let grade = Grade { crate_name: "x".into(), passed: 3, failed: 1, ignored: 5, failures: vec![], built: true };
        assert_eq!(grade.points(), 7.5);
        assert_eq!(Grade { built: false, ..grade.clone() }.points(), 0.0);
        let speeds = [
            StepSpeed { step: "a".into(), case: "2^20".into(), ratio: 1.1 },
            StepSpeed { step: "b".into(), case: "2^20".into(), ratio: 2.4 },
        ];
        assert_eq!(speeds[0].score(), 1.0);
        assert_eq!(speeds[1].score(), 0.5);
        assert_eq!(speed_points(&speeds), 3.75);
    }

    #[test]
    fn the_autograding_file_is_json_with_one_test_per_crate() {
        let text = autograding_json(&["reduce-naive".into(), "reduce-atomic".into()], "0123456789abcdef");
        let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(value["tests"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            value["tests"][1]["run"],
            "cargo course grade --crates reduce-atomic --require-all --tests-digest 0123456789abcdef"
        );
    }
}
