//! The course-mode commands: `starter`, `grade` and `check` (`cargo course <command>`).

use std::path::{Path, PathBuf};
use std::process::Command;

use course::classroom::{
    Grade, StepSpeed, assigned_crates, grade, overlay_submission, speed, speed_points, tests_digest, write_starter,
};
use course::regions::starter_text_for;
use gpu_harness::Device;

use crate::cli::CourseCommand;

/// Runs a course command; returns whether it succeeded.
pub fn run(command: &CourseCommand) -> bool {
    let root = report::workspace_root();
    let result = match command {
        CourseCommand::Starter { dest, crates } => starter(&root, dest, crates),
        CourseCommand::Grade { crates, submission, json, speed, require_all, tests_digest } => grade_command(
            &root,
            crates,
            submission.as_deref(),
            json.as_deref(),
            *speed,
            *require_all,
            tests_digest.as_deref(),
        ),
        CourseCommand::Check { crates } => check(&root, crates),
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
    chosen(crates, course::registry().crates().map(str::to_string).collect(), "a technique crate of the course")
}

fn starter(root: &Path, dest: &Path, crates: &[String]) -> Result<bool, String> {
    let crates = with_regions(root, crates)?;
    let stubbed = write_starter(root, dest, &crates)?;
    println!("wrote a starter copy to {} with {} solution regions stubbed:", dest.display(), stubbed.len());
    for a in &stubbed {
        println!("  {:<20} {}:{}  {}", a.crate_name, a.file.display(), a.line, a.task);
    }
    println!(
        "\nStudents: edit the TODOs, then `cargo test -p <crate>`. Grading: `cargo course grade` there, or \
         `cargo course grade --submission <their copy>` here. GitHub Classroom: .github/classroom/autograding.json."
    );
    Ok(true)
}

/// Where a submission is laid over the instructor's workspace, and the tours of `--speed` write.
fn scratch(root: &Path, name: &str) -> Result<PathBuf, String> {
    let folder = root.join("target/course").join(name);
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    Ok(folder)
}

/// Where the copies (a submission overlaid on this workspace, the check's starter) build. Not the
/// workspace's own `target/`: cargo names a workspace member's binaries the same whichever folder
/// its source sits in, so a `cargo test` running beside a grade in a shared target could swap the
/// binary the grade runs for the workspace's own, and the grade would report the solution's passes.
fn copies_target(root: &Path) -> PathBuf {
    root.join("target/course/target")
}

fn backend() -> String {
    match Device::shared() {
        Ok(device) if device.is_simulated() => format!("the CPU simulator ({})", device.facts().name),
        Ok(device) => format!("a GPU ({})", device.facts().name),
        Err(e) => format!("no backend: GPU tests are ignored ({e})"),
    }
}

fn grade_command(
    root: &Path,
    crates: &[String],
    submission: Option<&Path>,
    json: Option<&Path>,
    with_speed: bool,
    require_all: bool,
    expected_digest: Option<&str>,
) -> Result<bool, String> {
    let crates = technique_crates(crates)?;
    if let Some(expected) = expected_digest {
        let found = tests_digest(root)?;
        if found != expected {
            return Err(format!(
                "the tests here are not the instructor's (digest {found}, expected {expected}): grading refused"
            ));
        }
    }
    let (graded_root, target) = match submission {
        Some(student) => {
            let copy = scratch(root, "submission")?;
            let taken = overlay_submission(root, student, &copy)?;
            println!("graded: {} file(s) of {} with this workspace's tests", taken.len(), student.display());
            (copy, Some(copies_target(root)))
        }
        None => (root.to_path_buf(), None),
    };
    println!("backend: {}\n", backend());
    let mut grades: Vec<(Grade, Option<Vec<StepSpeed>>)> = Vec::new();
    for name in &crates {
        let grade = grade(&graded_root, name, target.as_deref())?;
        // Speed is timed only for a correct solution: a crate with a failing graded test gets no
        // speed points (and its steps, whose checks fail, are not timed).
        let speeds = match (with_speed, submission) {
            (true, Some(_)) if grade.all_passed() => Some(speed(&graded_root, root, name, &scratch(root, "speed")?)?),
            (true, Some(_)) => Some(Vec::new()),
            _ => None,
        };
        grades.push((grade, speeds));
    }
    print!("{}", grade_table(&grades));
    if let Some(path) = json {
        std::fs::write(path, grade_json(&backend(), &grades)).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("grades written to {}", path.display());
    }
    let all_passed = grades.iter().all(|(g, _)| g.all_passed());
    Ok(all_passed || !require_all)
}

fn grade_table(grades: &[(Grade, Option<Vec<StepSpeed>>)]) -> String {
    let with_speed = grades.iter().any(|(_, s)| s.is_some());
    let mut out = format!("{:<22} {:>13} {:>8} {:>8}", "crate", "tests passed", "ignored", "points");
    if with_speed {
        out += &format!(" {:>8}", "speed");
    }
    out += "\n";
    let (mut total, mut most) = (0.0, 0.0);
    for (grade, speeds) in grades {
        let ran = grade.passed + grade.failed;
        out += &format!(
            "{:<22} {:>13} {:>8} {:>8.1}",
            grade.crate_name,
            format!("{} of {ran}", grade.passed),
            grade.ignored,
            grade.points()
        );
        total += grade.points();
        most += course::classroom::CORRECTNESS_POINTS;
        if let Some(speeds) = speeds {
            out += &format!(" {:>8.1}", speed_points(speeds));
            total += speed_points(speeds);
            most += course::classroom::SPEED_POINTS;
        }
        out += "\n";
        for failure in grade.failures.iter().take(5) {
            out += &format!("    failed: {failure}\n");
        }
        if speeds.as_ref().is_some_and(|s| s.is_empty()) {
            out += "    speed: not timed (a graded test fails)\n";
        }
    }
    out + &format!("{:<22} {:>40.1} of {most}\n", "total", total)
}

fn grade_json(backend: &str, grades: &[(Grade, Option<Vec<StepSpeed>>)]) -> String {
    let crates: Vec<serde_json::Value> = grades
        .iter()
        .map(|(g, speeds)| {
            serde_json::json!({
                "crate": g.crate_name,
                "passed": g.passed,
                "failed": g.failed,
                "ignored": g.ignored,
                "built": g.built,
                "failures": g.failures,
                "points": g.points(),
                "max_points": course::classroom::CORRECTNESS_POINTS,
                "speed": speeds.as_ref().map(|s| serde_json::json!({
                    "points": speed_points(s),
                    "max_points": course::classroom::SPEED_POINTS,
                    "steps": s.iter().map(|x| serde_json::json!({"step": x.step, "case": x.case, "time_over_reference": x.ratio, "score": x.score()})).collect::<Vec<_>>(),
                })),
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({ "backend": backend, "crates": crates })).unwrap_or_default()
        + "\n"
}

/// CI's contract: with every crate's stubs in place the workspace builds and every kernel
/// compiles; with one crate's stubs in place (the others solved), that crate's graded tests fail.
/// (That they pass with the solutions is the workspace's own `cargo test`.)
fn check(root: &Path, crates: &[String]) -> Result<bool, String> {
    let crates = with_regions(root, crates)?;
    let registry: Vec<&str> = course::registry().crates().collect();
    let missing: Vec<&&str> = registry.iter().filter(|c| !crates.contains(&c.to_string())).collect();
    if crates.len() == assigned_crates(root)?.len() && !missing.is_empty() {
        return Err(format!("technique crates with no solution region: {missing:?}"));
    }
    let copy = root.join("target/course/check");
    if copy.exists() {
        std::fs::remove_dir_all(&copy).map_err(|e| format!("{}: {e}", copy.display()))?;
    }
    write_starter(root, &copy, &crates)?;
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
    let assignments = course::classroom::assignments(root)?;
    for name in &crates {
        println!("== {name}: its stubs alone fail its graded tests");
        let files: Vec<&PathBuf> = assignments.iter().filter(|a| &a.crate_name == name).map(|a| &a.file).collect();
        // Solve every file, then stub this crate's regions.
        for file in assignments.iter().map(|a| &a.file) {
            std::fs::copy(root.join(file), copy.join(file)).map_err(|e| e.to_string())?;
        }
        for file in &files {
            let text = std::fs::read_to_string(root.join(file)).map_err(|e| e.to_string())?;
            let file_owner = course::classroom::file_crate(file);
            let stubbed = starter_text_for(&text, |owner| {
                owner.map(str::to_string).or(file_owner.clone()).as_ref() == Some(name)
            })?;
            std::fs::write(copy.join(file), stubbed).map_err(|e| e.to_string())?;
        }
        let grade = grade(&copy, name, Some(&copies_target(root)))?;
        if !grade.built {
            eprintln!("FAIL {name}: with its stubs the tests do not build: {:?}", grade.failures);
            ok = false;
        } else if grade.failed == 0 {
            eprintln!("FAIL {name}: with its stubs every graded test passes ({} ran)", grade.passed);
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
