//! # classroom: the course in a classroom: starter copies with the solutions removed, and grading
//! by the same tests
//!
//! - [`write_starter`]: a copy of the workspace in which every solution region (see
//!   [`crate::regions`]) of the chosen crates is replaced by its stub, the tests untouched, with a
//!   ready `.github/classroom/autograding.json`.
//! - [`grade`]: runs a crate's graded tests (every test but the illustrations, whose names start
//!   with `illustration::`) and counts them; with a submission, the student's files are laid over a
//!   copy of the instructor's workspace first, so the instructor's tests grade the student's code.
//! - [`speed`]: on a GPU, the student's steps timed against the reference solution's, in one run.
//! - Optimisation points (module [`crate::optimisation`]): on the CPU simulator, the counters each
//!   graded step's technique improves, the student's beside the reference solution's.
//! - [`grade_table`] and [`grade_json`]: what `cargo course grade` prints and writes.
//!
//! Copies of the workspace (a submission laid over the instructor's files, the check's starter)
//! are written into one folder by [`sync_tree`], which rewrites only the files whose bytes
//! changed: cargo then rebuilds only the crates a student touched. One folder and one build folder
//! keep that safe: cargo judges a crate fresh by its files' times, and names a crate's builds the
//! same whatever folder it is in, so a second copy building into the same folder could have its
//! crates taken for the first one's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

pub mod gradescope;
pub mod optimisation;
pub mod regions;

use serde::{Deserialize, Serialize};

use crate::optimisation::{OPTIMISATION_POINTS, Optimisation, StepCounts, number};
use crate::regions::{regions, starter_text_for};

/// Points a crate's graded tests are worth, and its speed score.
pub const CORRECTNESS_POINTS: f64 = 10.0;
pub const SPEED_POINTS: f64 = 5.0;
/// A step timed at or under this multiple of the reference solution's time gets full speed marks.
pub const FULL_MARKS_RATIO: f64 = 1.2;
/// What `cargo test` is told to skip when grading.
pub const SKIP_ILLUSTRATIONS: &str = "illustration::";
/// What a starter records for grading in place (an autograder): the files a student edits, and the
/// reference solution's counts (a starter has no solution left to count). The tests digest covers
/// it.
pub const CLASSROOM_FILE: &str = ".github/classroom/course-grade.json";

/// Why a course command failed.
pub type Result<T> = std::result::Result<T, String>;

/// The workspace's files (relative paths), as git lists them (tracked, and untracked but not
/// ignored) where `root` is a repository's top folder; elsewhere (no git, or a copy inside another
/// repository's ignored folder, such as the grader's under `target/`), every file outside
/// `target/`, `.git/` and other build output.
pub fn workspace_files(root: &Path) -> Result<Vec<PathBuf>> {
    let git = root.join(".git").exists().then(|| {
        Command::new("git")
            .args(["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
            .current_dir(root)
            .output()
    });
    if let Some(Ok(output)) = git {
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
        let entries = std::fs::read_dir(root.join(&folder))
            .map_err(|e| format!("{}: {e}", folder.display()))?;
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

/// Where solution regions may be: kernels and headers under `cuda/`, launchers under
/// `crates/*/src/`.
fn may_hold_regions(path: &Path) -> bool {
    let text = path.to_string_lossy();
    (text.starts_with("cuda/") && (text.ends_with(".cu") || text.ends_with(".cuh")))
        || (text.starts_with("crates/") && text.contains("/src/") && text.ends_with(".rs"))
}

/// Every solution region of the workspace at `root`, in file order.
pub fn assignments(root: &Path) -> Result<Vec<Assignment>> {
    let mut found = Vec::new();
    for file in workspace_files(root)?.into_iter().filter(|f| may_hold_regions(f)) {
        let text = std::fs::read_to_string(root.join(&file))
            .map_err(|e| format!("{}: {e}", file.display()))?;
        for region in regions(&text).map_err(|e| format!("{}: {e}", file.display()))? {
            let crate_name =
                region.owner.clone().or_else(|| file_crate(&file)).ok_or_else(|| {
                    format!(
                        "{}:{}: a region in a shared file must name its crate: `solution(<crate>)`",
                        file.display(),
                        region.line
                    )
                })?;
            found.push(Assignment {
                file: file.clone(),
                line: region.line,
                crate_name,
                task: region.task,
            });
        }
    }
    Ok(found)
}

/// The crates that have solution regions, sorted.
pub fn assigned_crates(root: &Path) -> Result<Vec<String>> {
    let crates: BTreeSet<String> = assignments(root)?.into_iter().map(|a| a.crate_name).collect();
    Ok(crates.into_iter().collect())
}

/// Files to write into a folder: relative path, bytes.
pub type Files = Vec<(PathBuf, Vec<u8>)>;

/// Every file of the workspace at `root` with the regions of `crates` replaced by their stubs, and
/// the regions stubbed.
pub fn starter_files(root: &Path, crates: &[String]) -> Result<(Files, Vec<Assignment>)> {
    let stubbed: Vec<Assignment> =
        assignments(root)?.into_iter().filter(|a| crates.contains(&a.crate_name)).collect();
    let stub_files: BTreeSet<&PathBuf> = stubbed.iter().map(|a| &a.file).collect();
    let mut files = Vec::new();
    for file in workspace_files(root)? {
        let bytes = if stub_files.contains(&file) {
            let text = std::fs::read_to_string(root.join(&file))
                .map_err(|e| format!("{}: {e}", file.display()))?;
            let file_owner = file_crate(&file);
            let chosen = |owner: Option<&str>| {
                owner
                    .map(str::to_string)
                    .or_else(|| file_owner.clone())
                    .is_some_and(|c| crates.contains(&c))
            };
            starter_text_for(&text, chosen)
                .map_err(|e| format!("{}: {e}", file.display()))?
                .into_bytes()
        } else {
            std::fs::read(root.join(&file)).map_err(|e| format!("{}: {e}", file.display()))?
        };
        files.push((file, bytes));
    }
    Ok((files, stubbed))
}

/// What a starter records in [`CLASSROOM_FILE`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassroomRecord {
    /// The files a student edits (those that held the stubbed regions): the tests digest leaves
    /// them out, as it leaves out files with regions.
    pub student_files: Vec<PathBuf>,
    /// The NVRTC (`major.minor`) that compiled the kernels the reference was counted on: counts
    /// follow the PTX it emits, so a grade in place with another one does not score optimisation.
    #[serde(default)]
    pub nvrtc: Option<String>,
    /// The reference solution's counts of every graded step of the stubbed crates, counted on the
    /// simulator when the starter was made, with the tests this starter holds (the digest says so).
    pub reference: Vec<StepCounts>,
}

/// The reference solution's counts a starter records, and the NVRTC (`major.minor`) they were
/// counted with.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedReference {
    pub nvrtc: String,
    pub counts: Vec<StepCounts>,
}

impl ClassroomRecord {
    /// The record in the workspace at `root`, if it has one.
    pub fn read(root: &Path) -> Result<Option<ClassroomRecord>> {
        let path = root.join(CLASSROOM_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map(Some).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Copies the workspace at `root` to `dest`, with the regions of `crates` replaced by their stubs,
/// and writes [`CLASSROOM_FILE`] (with `reference`, the reference solution's counts, where they
/// could be counted) and `.github/classroom/autograding.json` grading those crates (optimisation
/// too, for the crates whose reference was counted). Returns the regions stubbed.
pub fn write_starter(
    root: &Path,
    dest: &Path,
    crates: &[String],
    reference: Option<RecordedReference>,
) -> Result<Vec<Assignment>> {
    if dest.exists() && std::fs::read_dir(dest).map_err(|e| e.to_string())?.next().is_some() {
        return Err(format!("{} exists and is not empty: choose a new folder", dest.display()));
    }
    let (files, stubbed) = starter_files(root, crates)?;
    sync_tree(dest, &files)?;
    let classroom = dest.join(".github/classroom");
    std::fs::create_dir_all(&classroom).map_err(|e| e.to_string())?;
    let student_files: BTreeSet<PathBuf> = stubbed.iter().map(|a| a.file.clone()).collect();
    let optimised: Vec<String> = match &reference {
        Some(r) => crates
            .iter()
            .filter(|c| r.counts.iter().any(|s| &s.crate_name == *c))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    let nvrtc = reference.as_ref().map(|r| r.nvrtc.clone());
    let record = ClassroomRecord {
        student_files: student_files.into_iter().collect(),
        nvrtc: nvrtc.clone(),
        reference: reference.map(|r| r.counts).unwrap_or_default(),
    };
    let text = serde_json::to_string_pretty(&record).map_err(|e| e.to_string())? + "\n";
    std::fs::write(dest.join(CLASSROOM_FILE), text).map_err(|e| e.to_string())?;
    let digest = tests_digest(dest)?;
    let autograding = autograding_json(crates, &optimised, nvrtc.as_deref(), &digest);
    std::fs::write(classroom.join("autograding.json"), autograding).map_err(|e| e.to_string())?;
    Ok(stubbed)
}

/// A lock on the folder copies of a workspace are written into (see [`CopyLock::take`]); released
/// when dropped.
#[derive(Debug)]
pub struct CopyLock {
    path: PathBuf,
}

impl CopyLock {
    /// Takes the lock `path` (a file that holds the process id of its holder; its folder is made
    /// where missing), waiting while another live process holds it; a lock left by a process that
    /// is gone is taken over. `wait` is told once, when the lock is held by another process.
    pub fn take(path: &Path, wait: impl FnOnce(u32)) -> Result<CopyLock> {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        }
        let mut wait = Some(wait);
        loop {
            let created = std::fs::OpenOptions::new().write(true).create_new(true).open(path);
            match created {
                Ok(mut file) => {
                    use std::io::Write;
                    write!(file, "{}", std::process::id())
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    return Ok(CopyLock { path: path.to_path_buf() });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let holder = std::fs::read_to_string(path)
                        .ok()
                        .and_then(|t| t.trim().parse::<u32>().ok());
                    match holder {
                        Some(pid) if process_alive(pid) => {
                            if let Some(tell) = wait.take() {
                                tell(pid);
                            }
                            std::thread::sleep(std::time::Duration::from_millis(200));
                        }
                        // Left by a process that is gone (or being written this instant: then
                        // the removal fails or the next attempt sees the new holder).
                        _ => {
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            let again = std::fs::read_to_string(path)
                                .ok()
                                .and_then(|t| t.trim().parse::<u32>().ok());
                            if again == holder {
                                let _ = std::fs::remove_file(path);
                            }
                        }
                    }
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }
}

impl Drop for CopyLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether process `pid` is running (Linux: its `/proc` entry; elsewhere `kill -0`).
fn process_alive(pid: u32) -> bool {
    if Path::new("/proc/self").exists() {
        return Path::new(&format!("/proc/{pid}")).exists();
    }
    Command::new("kill").args(["-0", &pid.to_string()]).output().is_ok_and(|o| o.status.success())
}

/// Makes the folder `dest` hold exactly `files` (relative path, bytes): a file whose bytes are
/// already there is left alone (its time too, so cargo does not rebuild its crate), the others
/// are written, and files that are not in the list are removed, but for a build in `dest/target/`
/// (the tours of `--speed` build there). Returns how many were written.
pub fn sync_tree(dest: &Path, files: &[(PathBuf, Vec<u8>)]) -> Result<usize> {
    let mut written = 0;
    for (file, bytes) in files {
        let target = dest.join(file);
        if std::fs::read(&target).is_ok_and(|old| old == *bytes) {
            continue;
        }
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        }
        std::fs::write(&target, bytes).map_err(|e| format!("{}: {e}", target.display()))?;
        written += 1;
    }
    let wanted: BTreeSet<&PathBuf> = files.iter().map(|(f, _)| f).collect();
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(dest.join(&folder)) else { continue };
        for entry in entries.flatten() {
            let relative = folder.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                if relative != Path::new("target") {
                    folders.push(relative);
                }
            } else if !wanted.contains(&relative) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| format!("{}: {e}", relative.display()))?;
            }
        }
    }
    Ok(written)
}

/// A digest of every file a student does not edit (the tests, the test kit, the registry, every
/// file without a solution region, under `crates/`, `cuda/` and the workspace's manifests): a
/// grade with `--tests-digest` refuses a workspace whose tests were changed. FNV-1a over paths and
/// contents: a check against edits by mistake or by a hurried student, not a signature.
///
/// In a starter, the files a student edits no longer hold regions: [`CLASSROOM_FILE`] lists them,
/// and its bytes (that list, and the reference counts the optimisation points are scored against)
/// are part of the digest, as `course.toml` (which says what each step's points measure) is.
pub fn tests_digest(root: &Path) -> Result<String> {
    let mut student_files: BTreeSet<PathBuf> =
        assignments(root)?.into_iter().map(|a| a.file).collect();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    if let Some(record) = ClassroomRecord::read(root)? {
        student_files.extend(record.student_files);
        eat(CLASSROOM_FILE.as_bytes());
        eat(&[0]);
        eat(&std::fs::read(root.join(CLASSROOM_FILE))
            .map_err(|e| format!("{CLASSROOM_FILE}: {e}"))?);
        eat(&[0]);
    }
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

/// GitHub Classroom's autograding file (GitHub has since deprecated the grading actions that read
/// it; it is written for the classes that still use them: Gradescope's bundle is
/// [`gradescope::write_bundle`]): one test per crate, graded on the CPU simulator (its
/// runners have no GPU), full points when every graded test of the crate passes and the tests are
/// the instructor's (their digest is written into the command); and, for each crate of `optimised`
/// (those whose reference counts the starter recorded), a second test worth the optimisation
/// points, passed when the tests pass and every graded step's counts are within the reference's
/// slack; its set-up installs the NVRTC release (`nvrtc`, `major.minor`) the reference was
/// counted with, since counts follow the PTX it emits.
pub fn autograding_json(
    crates: &[String],
    optimised: &[String],
    nvrtc: Option<&str>,
    digest: &str,
) -> String {
    let pinned = nvrtc.map_or(String::new(), |v| format!("=={v}.*"));
    let test = |title: &str, name: &str, flag: &str, points: f64| {
        let package = if flag == "--require-optimised" { pinned.as_str() } else { "" };
        format!(
            "    {{\n      \"name\": \"{title}\",\n      \"setup\": \"python3 -m pip install \
             --user nvidia-cuda-nvrtc{package}\",\n      \
             \"run\": \"cargo course grade --crates {name} {flag} \
             --tests-digest {digest}\",\n      \
             \"input\": \"\",\n      \
             \"output\": \"\",\n      \"comparison\": \"included\",\n      \"timeout\": 20,\n      \
             \"points\": {}\n    }}",
            points as u32
        )
    };
    let mut tests = Vec::new();
    for name in crates {
        tests.push(test(name, name, "--require-all", CORRECTNESS_POINTS));
        if optimised.contains(name) {
            tests.push(test(
                &format!("{name} optimisation"),
                name,
                "--require-optimised",
                OPTIMISATION_POINTS,
            ));
        }
    }
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
        if !self.built || ran == 0 {
            0.0
        } else {
            CORRECTNESS_POINTS * self.passed as f64 / ran as f64
        }
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
    command.args([
        "test",
        "--package",
        crate_name,
        "--no-fail-fast",
        "--",
        "--skip",
        SKIP_ILLUSTRATIONS,
    ]);
    if let Some(target) = target {
        command.env("CARGO_TARGET_DIR", target);
    }
    let output =
        command.current_dir(root).output().map_err(|e| format!("cannot run cargo: {e}"))?;
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
        let reason = stderr
            .lines()
            .filter(|l| l.starts_with("error"))
            .take(3)
            .collect::<Vec<_>>()
            .join("; ");
        grade.failures.push(format!("the tests did not build or run: {reason}"));
    }
    Ok(grade)
}

/// What [`overlay_submission`] took from a submission.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    /// The files a student edits (workspace paths): those holding the graded crates' regions.
    pub wanted: Vec<PathBuf>,
    /// The student's files laid over the instructor's copy (workspace paths).
    pub taken: Vec<PathBuf>,
    /// How many other files the submission holds: never used (tests, manifests, anything else are
    /// the instructor's).
    pub ignored: usize,
}

/// A copy of the instructor's workspace at `dest` with the student's versions of the files a
/// student edits taken from `submission`: those that hold a solution region of one of `crates`.
/// The instructor's tests grade the student's kernels and launchers, whatever the submission's
/// tests say. A student's file is found at its workspace path (a copy of the starter) or, where no
/// other file a student edits has its name, by its name at the submission's top (a file uploaded
/// alone: `reduce_interleaved.cu`); a file the submission lacks is the starter's (its regions
/// stubbed, as handed out), and every other file of the submission is left out. Written by
/// [`sync_tree`]: only what differs from the copy already there is rewritten.
pub fn overlay_submission(
    instructor: &Path,
    submission: &Path,
    dest: &Path,
    crates: &[String],
) -> Result<Overlay> {
    let student_files: BTreeSet<PathBuf> = assignments(instructor)?
        .into_iter()
        .filter(|a| crates.contains(&a.crate_name))
        .map(|a| a.file)
        .collect();
    let name_count = |name: &std::ffi::OsStr| {
        student_files.iter().filter(|f| f.file_name() == Some(name)).count()
    };
    let found = |file: &Path| -> Option<PathBuf> {
        let at_path = submission.join(file);
        if at_path.is_file() {
            return Some(at_path);
        }
        let name = file.file_name()?;
        let at_top = submission.join(name);
        (name_count(name) == 1 && at_top.is_file()).then_some(at_top)
    };
    let mut overlay =
        Overlay { wanted: student_files.iter().cloned().collect(), ..Overlay::default() };
    let mut used = BTreeSet::new();
    let mut files = Vec::new();
    for (file, starter) in starter_files(instructor, crates)?.0 {
        let bytes = match student_files.contains(&file).then(|| found(&file)).flatten() {
            Some(theirs) => {
                overlay.taken.push(file.clone());
                let bytes =
                    std::fs::read(&theirs).map_err(|e| format!("{}: {e}", theirs.display()))?;
                used.insert(theirs);
                bytes
            }
            None => starter,
        };
        files.push((file, bytes));
    }
    sync_tree(dest, &files)?;
    overlay.ignored =
        workspace_files(submission)?.iter().filter(|f| !used.contains(&submission.join(f))).count();
    Ok(overlay)
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
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let records =
        value["records"].as_array().ok_or_else(|| format!("{}: no records", json.display()))?;
    Ok(records
        .iter()
        .filter_map(|r| {
            Some((
                r["step"].as_str()?.to_string(),
                r["case"].as_str()?.to_string(),
                r["median_ms"].as_f64()?,
            ))
        })
        .collect())
}

/// Times `crate_name`'s steps in the student's workspace and in the reference (instructor's) one,
/// one after the other on the same GPU, with the tour; returns each step's time ratio.
pub fn speed(
    student: &Path,
    reference: &Path,
    crate_name: &str,
    scratch: &Path,
) -> Result<Vec<StepSpeed>> {
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

/// What `cargo course grade` found for one crate: its tests, its optimisation (where it has graded
/// steps) and, on a GPU with `--speed`, its steps' times.
#[derive(Debug, Clone, PartialEq)]
pub struct CrateGrade {
    pub grade: Grade,
    pub optimisation: Option<Optimisation>,
    pub speeds: Option<Vec<StepSpeed>>,
}

impl CrateGrade {
    /// Correctness, optimisation and speed points, and the most each could give.
    pub fn points(&self) -> (f64, f64) {
        let mut points = self.grade.points();
        let mut most = CORRECTNESS_POINTS;
        if let Some(optimisation) = &self.optimisation {
            points += optimisation.points();
            most += OPTIMISATION_POINTS;
        }
        if let Some(speeds) = &self.speeds {
            points += speed_points(speeds);
            most += SPEED_POINTS;
        }
        (points, most)
    }
}

/// The grade table: per crate, the tests, the correctness, optimisation and speed points; under
/// each crate its failures, each graded step's counters (the student's beside the reference's) and
/// what a student can act on.
pub fn grade_table(grades: &[CrateGrade]) -> String {
    let with_optimisation = grades.iter().any(|g| g.optimisation.is_some());
    let with_speed = grades.iter().any(|g| g.speeds.is_some());
    let mut out =
        format!("{:<22} {:>13} {:>8} {:>8}", "crate", "tests passed", "ignored", "points");
    if with_optimisation {
        out += &format!(" {:>13}", "optimisation");
    }
    if with_speed {
        out += &format!(" {:>8}", "speed");
    }
    out += "\n";
    let (mut total, mut most) = (0.0, 0.0);
    for crate_grade in grades {
        let grade = &crate_grade.grade;
        let ran = grade.passed + grade.failed;
        out += &format!(
            "{:<22} {:>13} {:>8} {:>8.1}",
            grade.crate_name,
            format!("{} of {ran}", grade.passed),
            grade.ignored,
            grade.points()
        );
        if with_optimisation {
            match &crate_grade.optimisation {
                Some(optimisation) => out += &format!(" {:>13.1}", optimisation.points()),
                None => out += &format!(" {:>13}", "-"),
            }
        }
        if let Some(speeds) = &crate_grade.speeds {
            out += &format!(" {:>8.1}", speed_points(speeds));
        }
        out += "\n";
        let (points, at_most) = crate_grade.points();
        total += points;
        most += at_most;
        for failure in grade.failures.iter().take(5) {
            out += &format!("    failed: {failure}\n");
        }
        match &crate_grade.optimisation {
            Some(Optimisation::Scored(steps)) => {
                let names: Vec<String> =
                    steps.iter().map(|s| format!("{} ({})", s.step, s.case)).collect();
                let step_width = names.iter().map(String::len).chain([17]).max().unwrap_or(17);
                let counter_width = steps
                    .iter()
                    .flat_map(|s| &s.counters)
                    .map(|c| c.counter.len())
                    .chain([7])
                    .max()
                    .unwrap_or(7);
                out += &format!(
                    "    {:<step_width$}  {:<counter_width$} {:>9} {:>9} {:>5}\n",
                    "step (counted at)", "counter", "student", "reference", "score"
                );
                for (step, name) in steps.iter().zip(&names) {
                    for (i, c) in step.counters.iter().enumerate() {
                        out += &format!(
                            "    {:<step_width$}  {:<counter_width$} {:>9} {:>9} {:>5.2}\n",
                            if i == 0 { name.as_str() } else { "" },
                            c.counter,
                            number(c.student),
                            number(c.reference),
                            c.score
                        );
                    }
                }
                for advice in steps.iter().flat_map(|s| s.advice()) {
                    out += &format!("    {advice}\n");
                }
            }
            Some(Optimisation::NotScored(why)) => {
                out += &format!("    optimisation: not counted ({why})\n")
            }
            None => {}
        }
        if crate_grade.speeds.as_ref().is_some_and(|s| s.is_empty()) {
            out += "    speed: not timed (a graded test fails)\n";
        }
    }
    let width = 31 + if with_optimisation { 14 } else { 0 } + if with_speed { 9 } else { 0 };
    out + &format!("{:<22} {:>width$.1} of {most}\n", "total", total)
}

/// The grades as JSON for an autograder: per crate, the tests, the points, the optimisation (each
/// step's counters: the student's, the reference's, the score) and the speed.
pub fn grade_json(backend: &str, grades: &[CrateGrade]) -> String {
    let crates: Vec<serde_json::Value> = grades
        .iter()
        .map(|CrateGrade { grade: g, optimisation, speeds }| {
            serde_json::json!({
                "crate": g.crate_name,
                "passed": g.passed,
                "failed": g.failed,
                "ignored": g.ignored,
                "built": g.built,
                "failures": g.failures,
                "points": g.points(),
                "max_points": CORRECTNESS_POINTS,
                "optimisation": optimisation.as_ref().map(|o| match o {
                    Optimisation::Scored(steps) => serde_json::json!({
                        "points": o.points(),
                        "max_points": OPTIMISATION_POINTS,
                        "steps": steps.iter().map(|s| serde_json::json!({
                            "step": s.step,
                            "case": s.case,
                            "score": s.score(),
                            "counters": s.counters,
                            "advice": s.advice(),
                        })).collect::<Vec<_>>(),
                    }),
                    Optimisation::NotScored(why) => serde_json::json!({
                        "points": 0.0,
                        "max_points": OPTIMISATION_POINTS,
                        "not_counted": why,
                    }),
                }),
                "speed": speeds.as_ref().map(|s| serde_json::json!({
                    "points": speed_points(s),
                    "max_points": SPEED_POINTS,
                    "steps": s.iter().map(|x| serde_json::json!({
                        "step": x.step,
                        "case": x.case,
                        "time_over_reference": x.ratio,
                        "score": x.score(),
                    })).collect::<Vec<_>>(),
                })),
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({ "backend": backend, "crates": crates }))
        .unwrap_or_default()
        + "\n"
}

/// The counts of every step of a results map, as the grader reads them back from a counting run.
pub fn read_counts(path: &Path) -> Result<Vec<StepCounts>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The counts as the counting run writes them (sorted by crate and step, for stable files).
pub fn counts_json(counts: &[StepCounts]) -> String {
    let mut sorted: BTreeMap<(&str, &str), &StepCounts> = BTreeMap::new();
    for c in counts {
        sorted.insert((&c.crate_name, &c.step), c);
    }
    serde_json::to_string_pretty(&sorted.values().collect::<Vec<_>>()).unwrap_or_default() + "\n"
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
        let grade = Grade {
            crate_name: "x".into(),
            passed: 3,
            failed: 1,
            ignored: 5,
            failures: vec![],
            built: true,
        };
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
    fn the_autograding_file_is_json_with_a_test_per_crate_and_one_for_its_optimisation() {
        let text = autograding_json(
            &["reduce-naive".into(), "reduce-atomic".into()],
            &["reduce-naive".into()],
            Some("13.5"),
            "0123456789abcdef",
        );
        let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(value["tests"].as_array().map(Vec::len), Some(3));
        assert_eq!(value["tests"][1]["name"], "reduce-naive optimisation");
        assert_eq!(
            value["tests"][1]["run"],
            "cargo course grade --crates reduce-naive --require-optimised --tests-digest \
             0123456789abcdef"
        );
        assert_eq!(value["tests"][1]["points"], OPTIMISATION_POINTS as u32);
        assert_eq!(
            value["tests"][1]["setup"],
            "python3 -m pip install --user nvidia-cuda-nvrtc==13.5.*"
        );
        assert_eq!(value["tests"][0]["setup"], "python3 -m pip install --user nvidia-cuda-nvrtc");
        assert_eq!(
            value["tests"][2]["run"],
            "cargo course grade --crates reduce-atomic --require-all \
             --tests-digest 0123456789abcdef"
        );
    }

    #[test]
    fn a_copy_lock_waits_for_its_holder_and_takes_over_a_dead_ones() {
        let path = std::env::temp_dir().join(format!("course-lock-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let first = CopyLock::take(&path, |_| panic!("free")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), std::process::id().to_string());
        let waited = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let second = scope.spawn(|| {
                CopyLock::take(&path, |_| waited.store(true, std::sync::atomic::Ordering::SeqCst))
            });
            std::thread::sleep(std::time::Duration::from_millis(300));
            assert!(
                waited.load(std::sync::atomic::Ordering::SeqCst),
                "held by a live process: it waits"
            );
            drop(first);
            drop(second.join().unwrap().unwrap());
        });
        assert!(!path.exists(), "released when dropped");
        // A process id no process has (past Linux's pid_max).
        std::fs::write(&path, "4194305").unwrap();
        drop(CopyLock::take(&path, |_| panic!("a dead holder is not waited for")).unwrap());
    }

    #[test]
    fn a_synced_tree_rewrites_only_what_changed_and_drops_the_rest() {
        let dest = std::env::temp_dir().join(format!("course-sync-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dest);
        let files = |a: &str| {
            vec![
                (PathBuf::from("a/x.txt"), a.as_bytes().to_vec()),
                (PathBuf::from("y.txt"), b"y".to_vec()),
            ]
        };
        assert_eq!(sync_tree(&dest, &files("one")).unwrap(), 2);
        std::fs::write(dest.join("a/stale.txt"), "old").unwrap();
        std::fs::create_dir_all(dest.join("target/debug")).unwrap();
        std::fs::write(dest.join("target/debug/build.txt"), "a build").unwrap();
        let time = |p: &str| std::fs::metadata(dest.join(p)).unwrap().modified().unwrap();
        let before = time("y.txt");
        assert_eq!(sync_tree(&dest, &files("two")).unwrap(), 1, "only a/x.txt changed");
        assert_eq!(std::fs::read_to_string(dest.join("a/x.txt")).unwrap(), "two");
        assert_eq!(time("y.txt"), before, "an unchanged file keeps its time");
        assert!(!dest.join("a/stale.txt").exists(), "a file not in the list is removed");
        assert!(dest.join("target/debug/build.txt").exists(), "a build is left alone");
        std::fs::remove_dir_all(&dest).unwrap();
    }
}
