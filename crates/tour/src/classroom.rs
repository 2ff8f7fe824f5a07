//! The course-mode commands: `starter`, `grade` and `check` (`cargo course <command>`), and
//! `count`, which `grade` runs in a build of a student's files.

use std::path::{Path, PathBuf};
use std::process::Command;

use classroom::gradescope;
use classroom::optimisation::{Optimisation, StepCounts, StepScore, graded_steps, score};
use classroom::{
    ClassroomRecord, CopyLock, CrateGrade, Grade, RecordedReference, assigned_crates, counts_json,
    grade, grade_json, grade_table, overlay_submission, read_counts, speed, starter_files,
    sync_tree, tests_digest, write_starter,
};
use gpu_harness::Device;

use crate::cli::CourseCommand;
use crate::counting;

/// Runs a course command; returns whether it succeeded.
pub fn run(command: &CourseCommand) -> bool {
    let root = measuring::workspace_root();
    let result = match command {
        CourseCommand::Starter { dest, crates } => starter(&root, dest, crates),
        CourseCommand::Grade {
            crates,
            submission,
            json,
            gradescope,
            speed,
            require_all,
            require_optimised,
            tests_digest,
        } => grade_command(
            &root,
            crates,
            submission.as_deref(),
            Outputs { json: json.as_deref(), gradescope: gradescope.as_deref() },
            *speed,
            Require { all: *require_all, optimised: *require_optimised },
            tests_digest.as_deref(),
        ),
        CourseCommand::Gradescope { dest, crates } => gradescope_bundle(&root, dest, crates),
        CourseCommand::Check { crates } => check(&root, crates),
        CourseCommand::Count { crates, json } => count_command(crates, json),
        CourseCommand::Pictures { crates, dest } => pictures_command(&root, crates, dest),
    };
    match result {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("course: {e}");
            false
        }
    }
}

/// The crates asked for, or every one of `universe`; a crate outside it is an error.
fn chosen(crates: &[String], universe: Vec<String>, what: &str) -> Result<Vec<String>, String> {
    if crates.is_empty() {
        return Ok(universe);
    }
    for name in crates {
        if !universe.contains(name) {
            return Err(format!("`{name}` is not {what} (those are: {})", universe.join(", ")));
        }
    }
    Ok(crates.to_vec())
}

/// Crates with solution regions: what a starter can stub and `check` checks.
fn with_regions(root: &Path, crates: &[String]) -> Result<Vec<String>, String> {
    chosen(crates, assigned_crates(root)?, "a crate with solution regions")
}

/// The course's technique crates, in teaching order: what `grade` grades (a starter copy has no
/// regions left to find them by).
fn technique_crates(crates: &[String]) -> Result<Vec<String>, String> {
    chosen(
        crates,
        course::registry().crates().map(str::to_string).collect(),
        "a technique crate of the course",
    )
}

fn starter(root: &Path, dest: &Path, crates: &[String]) -> Result<bool, String> {
    let crates = with_regions(root, crates)?;
    // The reference solution's counts, recorded for grading in place: an autograder grading the
    // student's repository has no solution to count.
    let reference = match counting::count(&crates).and_then(|counts| Ok((nvrtc()?, counts))) {
        Ok((nvrtc, counts)) => Some(RecordedReference { nvrtc, counts }),
        Err(e) => {
            eprintln!(
                "note: the reference solution could not be counted ({e}); the starter's \
                 autograder will grade \
                 tests only, not optimisation"
            );
            None
        }
    };
    let stubbed = write_starter(root, dest, &crates, reference)?;
    println!(
        "wrote a starter copy to {} with {} solution regions stubbed:",
        dest.display(),
        stubbed.len()
    );
    for a in &stubbed {
        println!("  {:<20} {}:{}  {}", a.crate_name, a.file.display(), a.line, a.task);
    }
    println!(
        "\nStudents: edit the TODOs, then `cargo test -p <crate>`. Grading: `cargo course grade` \
         there, or \
         `cargo course grade --submission <their copy>` here. Gradescope: `cargo course \
         gradescope <dir>` here. GitHub Classroom (whose grading actions GitHub has deprecated): \
         .github/classroom/autograding.json."
    );
    Ok(true)
}

fn gradescope_bundle(root: &Path, dest: &Path, crates: &[String]) -> Result<bool, String> {
    let crates = with_regions(root, crates)?;
    let nvrtc = nvrtc()
        .map_err(|e| eprintln!("note: no NVRTC here ({e}): setup.sh installs the latest"))
        .ok();
    gradescope::write_bundle(root, dest, &crates, nvrtc.as_deref())?;
    println!(
        "wrote Gradescope's autograder for {} to {}: setup.sh, run_autograder and this workspace \
         in course/ (with the solutions: students never see it). Zip it and upload the zip as \
         the assignment's autograder (Ubuntu base image):\n  (cd {} && zip -qr \
         ../autograder.zip .)",
        crates.join(", "),
        dest.display(),
        dest.display()
    );
    Ok(true)
}

/// This machine's NVRTC, `major.minor`.
fn nvrtc() -> Result<String, String> {
    let (major, minor) = gpu_harness::compile::nvrtc_version().map_err(|e| e.to_string())?;
    Ok(format!("{major}.{minor}"))
}

/// Where the tours of `--speed` write.
fn scratch(root: &Path, name: &str) -> Result<PathBuf, String> {
    let folder = root.join("target/course").join(name);
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    Ok(folder)
}

/// The one folder copies of this workspace are written into (a submission laid over it, the
/// check's starter), by `sync_tree`: only what changed is rewritten, so cargo rebuilds only the
/// crates a student touched.
fn copy_folder(root: &Path) -> PathBuf {
    root.join("target/course/workspace")
}

/// Where the copies build. Not the workspace's own `target/`: cargo names a workspace member's
/// builds the same whichever folder its source sits in, and judges them fresh by their files'
/// times, so a build of another folder in the same target could be taken for the copy's (and the
/// grade would report the solution's passes). One copy folder building into one target is safe.
fn copies_target(root: &Path) -> PathBuf {
    root.join("target/course/target")
}

/// Holds the lock on the copy folder while a grade or a check uses it (a second one waits).
fn lock_copies(root: &Path) -> Result<CopyLock, String> {
    let folder = root.join("target/course");
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    CopyLock::take(&folder.join("copy.lock"), |pid| {
        println!(
            "waiting for another grade or check (process {pid}) to finish with {} ...",
            copy_folder(root).display()
        );
    })
}

fn backend() -> String {
    match Device::shared() {
        Ok(device) if device.is_simulated() => {
            format!("the CPU simulator ({})", device.facts().name)
        }
        Ok(device) => format!("a GPU ({})", device.facts().name),
        Err(e) => format!("no backend: GPU tests are ignored ({e})"),
    }
}

/// Where a grade writes besides its table: `--json`, `--gradescope`.
#[derive(Debug, Clone, Copy)]
struct Outputs<'a> {
    json: Option<&'a Path>,
    gradescope: Option<&'a Path>,
}

/// What an autograder asks of a grade before it exits successfully.
#[derive(Debug, Clone, Copy)]
struct Require {
    /// Every graded test passed.
    all: bool,
    /// And every graded step's counts are within the reference's slack.
    optimised: bool,
}

/// Where the student's code is, and where the reference solution's counts come from.
enum Graded<'a> {
    /// `--submission`: the student's files laid over a copy of this workspace, built there; the
    /// reference is this workspace, counted in this process.
    Copy { root: PathBuf, target: PathBuf },
    /// The workspace itself (a student's copy, or the instructor's own): the student's code is
    /// this process's. The reference is the same code where the crate's solution is here, else the
    /// counts the starter recorded.
    InPlace { solved: Vec<String>, record: Option<&'a ClassroomRecord> },
}

fn grade_command(
    root: &Path,
    crates: &[String],
    submission: Option<&Path>,
    outputs: Outputs,
    with_speed: bool,
    require: Require,
    expected_digest: Option<&str>,
) -> Result<bool, String> {
    let crates = technique_crates(crates)?;
    if let Some(expected) = expected_digest {
        let found = tests_digest(root)?;
        if found != expected {
            return Err(format!(
                "the tests here are not the instructor's (digest {found}, expected {expected}): \
                 grading refused"
            ));
        }
    }
    let mut _lock = None;
    let mut said = String::new();
    let record = ClassroomRecord::read(root)?;
    let graded = match submission {
        Some(student) => {
            _lock = Some(lock_copies(root)?);
            let copy = copy_folder(root);
            let overlay = overlay_submission(root, student, &copy, &crates)?;
            let files = |f: &[PathBuf]| {
                f.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            };
            said = match overlay.taken.as_slice() {
                [] => format!(
                    "The submission holds none of the files a student writes ({}): the \
                     starter's code was graded.",
                    files(&overlay.wanted)
                ),
                taken => format!("Graded with the course's tests: {}.", files(taken)),
            };
            if overlay.ignored > 0 {
                said += &format!(
                    " {} other file(s) of the submission were not used: only the files that \
                     hold the solutions are a student's to write.",
                    overlay.ignored
                );
            }
            println!("{said}");
            Graded::Copy { root: copy, target: copies_target(root) }
        }
        None => Graded::InPlace { solved: assigned_crates(root)?, record: record.as_ref() },
    };
    println!("backend: {}\n", backend());
    let mut grades = Vec::new();
    for name in &crates {
        let grade = match &graded {
            Graded::Copy { root, target } => grade(root, name, Some(target))?,
            Graded::InPlace { .. } => grade(root, name, None)?,
        };
        let optimisation = optimisation(&graded, name, &grade);
        // Speed is timed only for a correct solution: a crate with a failing graded test gets no
        // speed points (and its steps, whose checks fail, are not timed).
        let speeds = match (with_speed, &graded) {
            (true, Graded::Copy { root: copy, .. }) if grade.all_passed() => {
                Some(speed(copy, root, name, &scratch(root, "speed")?)?)
            }
            (true, Graded::Copy { .. }) => Some(Vec::new()),
            _ => None,
        };
        grades.push(CrateGrade { grade, optimisation, speeds });
    }
    print!("{}", grade_table(&grades));
    if let Some(path) = outputs.json {
        std::fs::write(path, grade_json(&backend(), &grades))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("grades written to {}", path.display());
    }
    if let Some(path) = outputs.gradescope {
        let output = format!("{said}\nBackend: {}.", backend()).trim_start().to_string();
        std::fs::write(path, gradescope::results_json(&output, &grades))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("Gradescope's results written to {}", path.display());
    }
    let all_passed = grades.iter().all(|g| g.grade.all_passed());
    let optimised = grades.iter().all(|g| g.optimisation.as_ref().is_none_or(Optimisation::full));
    Ok((all_passed || !(require.all || require.optimised)) && (optimised || !require.optimised))
}

/// The optimisation of `crate_name`, whose tests gave `grade`: `None` for a crate with no graded
/// step; not counted where a graded test fails or no reference can be counted.
fn optimisation(graded: &Graded, crate_name: &str, grade: &Grade) -> Option<Optimisation> {
    if graded_steps(course::registry(), crate_name).is_empty() {
        return None;
    }
    if !grade.all_passed() {
        return Some(Optimisation::NotScored("a graded test fails".into()));
    }
    let crates = [crate_name.to_string()];
    let counted = match graded {
        Graded::Copy { root, target } => count_in(root, target, crate_name).and_then(|student| {
            Ok((
                student,
                counting::count(&crates).map_err(|e| {
                    format!(
                        "the \
                reference: {e}"
                    )
                })?,
            ))
        }),
        Graded::InPlace { solved, record } => counting::count(&crates).and_then(|student| {
            if solved.iter().any(|c| c == crate_name) {
                // The solution is here: the student's code is the reference.
                return Ok((student.clone(), student));
            }
            match record {
                Some(r) if r.reference.iter().any(|c| c.crate_name == crate_name) => {
                    let here = nvrtc()?;
                    match &r.nvrtc {
                        Some(v) if *v != here => Err(format!(
                            "the starter's reference was counted with NVRTC {v}, and this machine \
                             has {here}: \
                             python3 -m pip install --user nvidia-cuda-nvrtc=={v}.*"
                        )),
                        _ => Ok((student, r.reference.clone())),
                    }
                }
                _ => Err("no reference solution here to count: grade with --submission from the \
                          instructor's \
                          workspace"
                    .to_string()),
            }
        }),
    };
    Some(
        match counted.and_then(|(student, reference)| {
            score(course::registry(), crate_name, &student, &reference)
        }) {
            Ok(steps) => Optimisation::Scored(
                steps.into_iter().map(|step| with_picture(crate_name, step)).collect(),
            ),
            Err(e) => Optimisation::NotScored(e),
        },
    )
}

/// `step`, whose advice also names the pictures that draw it (`cargo course pictures`), where the
/// book has one.
fn with_picture(crate_name: &str, mut step: StepScore) -> StepScore {
    let files = crate::pictures::files_showing(crate_name, &step.step);
    if !files.is_empty() {
        step.see = format!(
            "{}; `cargo course pictures --crates {crate_name}` draws your kernel beside the \
             reference in target/pictures/{}",
            step.see,
            files.join(", ")
        );
    }
    step
}

/// The student's counts of `crate_name`: this workspace's counting code, built with the student's
/// files in the copy at `root` (`tour count`, a debug build in `target`).
fn count_in(root: &Path, target: &Path, crate_name: &str) -> Result<Vec<StepCounts>, String> {
    let out = target.join("course-counts.json");
    let _ = std::fs::remove_file(&out);
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "run",
            "--quiet",
            "--package",
            "tour",
            "--",
            "count",
            "--crates",
            crate_name,
            "--json",
        ])
        .arg(&out)
        .env("CARGO_TARGET_DIR", target)
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last =
            stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").to_string();
        return Err(format!("counting the student's build failed: {last}"));
    }
    read_counts(&out)
}

/// `tour count`: the counts of the graded steps of `crates`, as JSON.
fn count_command(crates: &[String], json: &Path) -> Result<bool, String> {
    let crates = technique_crates(crates)?;
    let counts = counting::count(&crates)?;
    std::fs::write(json, counts_json(&counts)).map_err(|e| format!("{}: {e}", json.display()))?;
    Ok(true)
}

/// CI's contract: every chapter with steps to grade has solution regions; with every crate's stubs
/// in place the workspace builds and every kernel compiles; with one crate's stubs in place (the
/// others solved), that crate's graded tests fail. (That they pass with the solutions is the
/// workspace's own `cargo test`.) A chapter that lists no step (reduce-host: its bench times the
/// answer on the host, which neither the tour nor the grader measures) has nothing to grade.
fn check(root: &Path, crates: &[String]) -> Result<bool, String> {
    let crates = with_regions(root, crates)?;
    let course = course::registry();
    let graded = |c: &&str| {
        course
            .families
            .iter()
            .filter_map(|f| f.chapter(c))
            .any(|chapter| !(chapter.steps.is_empty() && chapter.world_steps.is_empty()))
    };
    let registry: Vec<&str> = course.crates().filter(graded).collect();
    let missing: Vec<&&str> =
        registry.iter().filter(|c| !crates.contains(&c.to_string())).collect();
    if crates.len() == assigned_crates(root)?.len() && !missing.is_empty() {
        return Err(format!("technique crates with no solution region: {missing:?}"));
    }
    let _lock = lock_copies(root)?;
    let copy = copy_folder(root);
    sync_tree(&copy, &starter_files(root, &crates)?.0)?;
    let cargo = |args: &[&str]| -> Result<bool, String> {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(args)
            .env("CARGO_TARGET_DIR", copies_target(root))
            .current_dir(&copy)
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        Ok(status.success())
    };
    let mut ok = true;
    println!("== with every stub in place: the workspace builds and every kernel compiles");
    if !cargo(&["build", "--quiet", "--workspace", "--all-targets"])? {
        eprintln!("FAIL: the starter copy does not build");
        ok = false;
    }
    if !cargo(&["test", "--quiet", "--package", "gpu-harness", "--test", "compile_kernels"])? {
        eprintln!("FAIL: a stubbed kernel does not compile");
        ok = false;
    }
    for name in &crates {
        println!("== {name}: its stubs alone fail its graded tests");
        // Every crate solved but this one.
        sync_tree(&copy, &starter_files(root, std::slice::from_ref(name))?.0)?;
        let grade = grade(&copy, name, Some(&copies_target(root)))?;
        if !grade.built {
            eprintln!("FAIL {name}: with its stubs the tests do not build: {:?}", grade.failures);
            ok = false;
        } else if grade.failed == 0 {
            eprintln!(
                "FAIL {name}: with its stubs every graded test passes ({} ran)",
                grade.passed
            );
            ok = false;
        } else {
            println!(
                "ok   {name}: {} of {} graded tests fail with the stubs",
                grade.failed,
                grade.passed + grade.failed
            );
        }
    }
    Ok(ok)
}

/// `cargo course pictures`: the pictures of the chosen chapters drawn from this workspace's
/// kernels, each above the reference's, written into `dest`.
fn pictures_command(root: &Path, crates: &[String], dest: &Path) -> Result<bool, String> {
    let files = crate::pictures::student_pictures(root, crates)?;
    if files.is_empty() {
        let mut drawn: Vec<&str> = crate::pictures::pictures().iter().map(|p| p.chapter).collect();
        drawn.dedup();
        return Err(format!(
            "no picture draws {} (the chapters with pictures: {})",
            crates.join(", "),
            drawn.join(", ")
        ));
    }
    std::fs::create_dir_all(dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
    for (file, svg) in files {
        let path = dest.join(file);
        std::fs::write(&path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(true)
}
