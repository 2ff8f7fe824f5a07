//! `cargo course grade` scores the optimisation, not only the answer, on the CPU simulator. Copies
//! made from a starter of reduce-interleaved, their two regions written in four ways, are graded
//! with `--submission` as an instructor would: the reference solution (full points), the divergent
//! modulo of reduce-naive in sequential addressing's place (full correctness, no optimisation
//! points for the interleaved step), other loop forms as good as the reference (full points), and
//! the stubs left in place (no points). The same starter graded in place, as GitHub Classroom's
//! autograder does, fails the divergent modulo on its optimisation line. reduce-multi-gpu's ring,
//! graded on simulated devices, likewise: the reference (full points), a ring that passes whole
//! vectors along (correct, no optimisation points) and the stub (no points). The grade tables are
//! snapshots.
//!
//! The copies build in `target/course/target` (what `cargo course check` builds in too, so CI
//! builds that folder once); a grade after the first rebuilds only reduce-interleaved.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use gpu_test::{TestResult, TestSuite};

#[path = "../src/steps.rs"]
#[allow(dead_code, unused_imports)]
mod steps;

#[path = "../src/counting.rs"]
mod counting;

const CRATE: &str = "reduce-interleaved";
const KERNEL: &str = "cuda/reduce_interleaved.cu";

fn root() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    dir.canonicalize().unwrap_or(dir)
}

fn tests_folder() -> PathBuf {
    root().join("target/course/tests")
}

/// A starter copy with reduce-interleaved's regions stubbed, made once by `tour starter` (which
/// also counts the reference solution for grading in place).
fn starter() -> Result<&'static Path, String> {
    static STARTER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    STARTER
        .get_or_init(|| {
            let dest = tests_folder().join("starter");
            if dest.exists() {
                std::fs::remove_dir_all(&dest).map_err(|e| format!("{}: {e}", dest.display()))?;
            }
            let output = Command::new(env!("CARGO_BIN_EXE_tour"))
                .args([
                    "starter",
                    dest.to_str().ok_or("a path that is not UTF-8")?,
                    "--crates",
                    CRATE,
                ])
                .output()
                .map_err(|e| format!("cannot run the tour: {e}"))?;
            if !output.status.success() {
                return Err(format!(
                    "tour starter failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            Ok(dest)
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// The instructor's two solutions (strided index, sequential addressing), as the regions hold them.
fn reference_solutions() -> Vec<String> {
    let text = std::fs::read_to_string(root().join(KERNEL)).expect("the kernel file");
    classroom::regions::regions(&text)
        .expect("its regions")
        .into_iter()
        .map(|r| r.solution.join("\n"))
        .collect()
}

/// The starter's kernel file with its two TODOs answered by `solutions`, in order (`None`: the
/// stubs, as handed out).
fn kernel_with(solutions: Option<[String; 2]>) -> Result<String, String> {
    let starter = std::fs::read_to_string(starter()?.join(KERNEL)).map_err(|e| e.to_string())?;
    let Some(solutions) = solutions else { return Ok(starter) };
    let mut out = String::new();
    let mut answers = solutions.iter();
    for line in starter.lines() {
        out += line;
        out += "\n";
        if line.contains("TODO(student)") {
            out += answers.next().ok_or("more TODOs than answers")?;
            out += "\n";
        }
    }
    if answers.next().is_some() {
        return Err("fewer TODOs than answers".into());
    }
    Ok(out)
}

/// A submission folder holding the student's `files` (path, text).
fn submission(name: &str, files: &[(&str, &str)]) -> Result<PathBuf, String> {
    let folder = tests_folder().join(name);
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(|e| e.to_string())?;
    }
    for (file, text) in files {
        let path = folder.join(file);
        std::fs::create_dir_all(path.parent().expect("a folder")).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
    }
    Ok(folder)
}

/// What a grade printed and wrote.
struct Graded {
    success: bool,
    /// From the header line to the total.
    table: String,
    json: serde_json::Value,
}

impl Graded {
    fn crate_grade(&self) -> &serde_json::Value {
        &self.json["crates"][0]
    }

    fn correctness(&self) -> f64 {
        self.crate_grade()["points"].as_f64().unwrap_or(-1.0)
    }

    fn optimisation(&self) -> f64 {
        self.crate_grade()["optimisation"]["points"].as_f64().unwrap_or(-1.0)
    }

    /// The table with the crate's counts of tests in place of numbers: the suites grow (property
    /// tests are added), and the snapshots show the grade, not how many tests there are.
    fn snapshot(&self) -> String {
        let g = self.crate_grade();
        let (passed, failed, ignored) = (
            g["passed"].as_u64().unwrap_or(0),
            g["failed"].as_u64().unwrap_or(0),
            g["ignored"].as_u64().unwrap_or(0),
        );
        let counts = format!("{:>13} {:>8}", format!("{passed} of {}", passed + failed), ignored);
        let ran = if failed == 0 { "all" } else { "some" };
        self.table.replacen(&counts, &format!("{:>13} {:>8}", format!("{ran} of them"), "n"), 1)
    }

    /// The optimisation score of `step`.
    fn step_score(&self, step: &str) -> Option<f64> {
        self.crate_grade()["optimisation"]["steps"]
            .as_array()?
            .iter()
            .find(|s| s["step"] == step)?["score"]
            .as_f64()
    }
}

fn table_of(stdout: &str) -> String {
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("crate ")).unwrap_or(0);
    let end = lines.iter().position(|l| l.starts_with("total ")).map_or(lines.len(), |i| i + 1);
    lines[start..end].join("\n") + "\n"
}

/// Runs `command` (a grade writing its JSON to `json`) and reads what it printed and wrote.
fn run_grade(mut command: Command, json: &Path) -> Result<Graded, String> {
    let _ = std::fs::remove_file(json);
    let output = command.output().map_err(|e| format!("cannot run the grade: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let text = std::fs::read_to_string(json).map_err(|e| {
        format!(
            "no grades written ({e}); stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    let json = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(Graded { success: output.status.success(), table: table_of(&stdout), json })
}

/// `tour grade --submission <folder> --crates reduce-interleaved --require-all`.
fn grade(name: &str, kernel: &str) -> Result<Graded, String> {
    grade_crate(CRATE, name, &[(KERNEL, kernel)])
}

/// `tour grade --submission <folder> --crates <crate_name> --require-all`, the folder holding
/// the student's `files` (path, text).
fn grade_crate(crate_name: &str, name: &str, files: &[(&str, &str)]) -> Result<Graded, String> {
    let folder = submission(name, files)?;
    let json = tests_folder().join(format!("{name}.json"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_tour"));
    command.args(["grade", "--crates", crate_name, "--require-all", "--submission"]).arg(&folder);
    command.arg("--json").arg(&json);
    run_grade(command, &json)
}

fn check(condition: bool, what: &str, graded: &Graded) -> TestResult {
    if condition {
        Ok(())
    } else {
        Err(format!("{what}; the grade:\n{}\n{:#}", graded.table, graded.json).into())
    }
}

fn reference_gets_full_points() -> TestResult {
    let [strided, sequential] =
        <[String; 2]>::try_from(reference_solutions()).map_err(|_| "two regions")?;
    let graded = grade("reference", &kernel_with(Some([strided, sequential]))?)?;
    check(graded.success && graded.correctness() == 10.0, "every graded test passes", &graded)?;
    check(graded.optimisation() == 5.0, "full optimisation points", &graded)?;
    insta::assert_snapshot!("grade_reference", graded.snapshot());
    Ok(())
}

const DIVERGENT_MODULO: &str = "    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }";

fn divergent_modulo_gets_no_optimisation_points_for_interleaved() -> TestResult {
    let strided = reference_solutions().remove(0);
    let graded =
        grade("divergent-modulo", &kernel_with(Some([strided, DIVERGENT_MODULO.into()]))?)?;
    check(
        graded.success && graded.correctness() == 10.0,
        "a correct answer: every graded test passes",
        &graded,
    )?;
    check(
        graded.step_score("strided-index") == Some(1.0),
        "strided-index as the reference",
        &graded,
    )?;
    check(
        graded.step_score("interleaved") == Some(0.0),
        "no optimisation points for interleaved",
        &graded,
    )?;
    check(graded.optimisation() == 2.5, "half the optimisation points (one step of two)", &graded)?;
    check(
        graded.table.contains(
            "interleaved: 48 divergent branches per block, the reference has 6: the active \
             threads are not contiguous",
        ),
        "advice a student can act on",
        &graded,
    )?;
    insta::assert_snapshot!("grade_divergent_modulo", graded.snapshot());
    Ok(())
}

/// Other loop forms, as good as the reference: signed indices and a shift for the strided index;
/// a while loop with the halving first for sequential addressing.
const OTHER_STRIDED: &str = "    for (int stride = 1; stride < (int)blockDim.x; stride <<= 1) {
        int index = 2 * stride * (int)tid;
        if (index < (int)blockDim.x) sdata[index] = sdata[index] + sdata[index + stride];
        __syncthreads();
    }";
const OTHER_SEQUENTIAL: &str = "    unsigned int half = blockDim.x;
    while (half > 1) {
        half /= 2;
        if (tid < half) sdata[tid] = sdata[tid] + sdata[half + tid];
        __syncthreads();
    }";

fn another_loop_form_gets_full_points() -> TestResult {
    let graded = grade(
        "other-loop-form",
        &kernel_with(Some([OTHER_STRIDED.into(), OTHER_SEQUENTIAL.into()]))?,
    )?;
    check(graded.success && graded.correctness() == 10.0, "every graded test passes", &graded)?;
    check(graded.optimisation() == 5.0, "full optimisation points", &graded)?;
    insta::assert_snapshot!("grade_other_loop_form", graded.snapshot());
    Ok(())
}

fn a_stub_gets_no_points() -> TestResult {
    let graded = grade("stub", &kernel_with(None)?)?;
    check(!graded.success && graded.correctness() < 10.0, "graded tests fail", &graded)?;
    check(graded.optimisation() == 0.0, "no optimisation points", &graded)?;
    check(
        graded.crate_grade()["optimisation"]["not_counted"] == "a graded test fails",
        "not counted, and why",
        &graded,
    )?;
    // Which tests fail, and how many, is the suite's business (its property tests change): the
    // snapshot keeps the lines about optimisation.
    let snapshot = graded.snapshot();
    let optimisation: Vec<&str> = snapshot.lines().filter(|l| l.contains("optimisation")).collect();
    insta::assert_snapshot!("grade_stub", optimisation.join("\n"));
    Ok(())
}

/// GitHub Classroom's optimisation line, run in the student's copy of the starter: the tests
/// digest accepts the student's edit of the kernel, the reference comes from the counts the
/// starter recorded, and the divergent modulo fails the line.
fn autograder_fails_the_divergent_modulo_on_its_optimisation_line() -> TestResult {
    let starter = starter()?;
    let autograding = std::fs::read_to_string(starter.join(".github/classroom/autograding.json"))
        .map_err(|e| format!("the starter's autograding file: {e}"))?;
    let autograding: serde_json::Value =
        serde_json::from_str(&autograding).map_err(|e| e.to_string())?;
    let line = autograding["tests"]
        .as_array()
        .and_then(|tests| tests.iter().find(|t| t["name"] == format!("{CRATE} optimisation")))
        .ok_or("no optimisation line in the autograding file")?;
    let run = line["run"].as_str().ok_or("no command")?;
    let digest = run.rsplit(' ').next().ok_or("no digest")?.to_string();
    if !run.contains("--require-optimised") {
        return Err(format!("the optimisation line does not require it: {run}").into());
    }
    // The student's copy: the starter with the divergent modulo written in. It is graded in the
    // folder the grader's copies use (their build folder is warm), holding its lock meanwhile.
    let strided = reference_solutions().remove(0);
    let kernel = kernel_with(Some([strided, DIVERGENT_MODULO.into()]))?;
    let mut files = Vec::new();
    for file in classroom::workspace_files(starter)? {
        let bytes = if file == Path::new(KERNEL) {
            kernel.clone().into_bytes()
        } else {
            std::fs::read(starter.join(&file)).map_err(|e| e.to_string())?
        };
        files.push((file, bytes));
    }
    let lock = classroom::CopyLock::take(&root().join("target/course/copy.lock"), |_| {})?;
    let copy = root().join("target/course/workspace");
    classroom::sync_tree(&copy, &files)?;
    let json = tests_folder().join("autograder.json");
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .args([
            "run",
            "--quiet",
            "--package",
            "tour",
            "--",
            "grade",
            "--crates",
            CRATE,
            "--require-optimised",
        ])
        .args(["--tests-digest", &digest, "--json"])
        .arg(&json)
        .env("CARGO_TARGET_DIR", root().join("target/course/target"))
        .current_dir(&copy);
    let graded = run_grade(command, &json)?;
    drop(lock);
    check(!graded.success, "the optimisation line fails", &graded)?;
    check(
        graded.correctness() == 10.0,
        "every graded test passes (the tests line passes)",
        &graded,
    )?;
    check(
        graded.optimisation() == 2.5,
        "the interleaved step has no optimisation points",
        &graded,
    )?;
    Ok(())
}

/// Gradescope's autograder, run as Gradescope runs it: `tour gradescope` writes the bundle into
/// `<root>/source` (where Gradescope unpacks it), `run_autograder` is copied to `<root>` and run
/// with `AUTOGRADER_ROOT=<root>` on four submissions made from the starter, each put in
/// `<root>/submission`; the scores are read from `<root>/results/results.json`. `COURSE_GRADER`
/// names this test's build of the grader (Gradescope's `setup.sh` builds the bundle's own, which
/// would take this test minutes): it grades with this workspace's tests, which are the bundle's.
/// - a copy of the whole starter with the solutions written in, and a test file of the student's
///   that would pass anything: 15 of 15 (the test file is not used);
/// - the kernel file alone, with the divergent modulo in sequential addressing's place: the tests'
///   10 points, the strided index's 2.5, none for the interleaved step, and the advice;
/// - no kernel file: the starter's stubs are graded (not the solution), and the student told;
/// - the kernel file, which NVRTC cannot compile: no points, the failed tests listed, the
///   optimisation not counted.
fn gradescope_autograder_grades_four_submissions() -> TestResult {
    let root = tests_folder().join("gradescope");
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| e.to_string())?;
    }
    let source = root.join("source");
    let output = Command::new(env!("CARGO_BIN_EXE_tour"))
        .args(["gradescope", source.to_str().ok_or("a path that is not UTF-8")?, "--crates", CRATE])
        .output()
        .map_err(|e| format!("cannot run the tour: {e}"))?;
    if !output.status.success() {
        return Err(
            format!("tour gradescope failed: {}", String::from_utf8_lossy(&output.stderr)).into()
        );
    }
    let setup = std::fs::read_to_string(source.join("setup.sh"))?;
    for expected in [
        "--profile minimal --default-toolchain stable",
        "nvidia-cuda-nvrtc==",
        &format!("tour grade --crates {CRATE} --submission"),
    ] {
        if !setup.contains(expected) {
            return Err(format!("setup.sh has no `{expected}`:\n{setup}").into());
        }
    }
    let bundled = std::fs::read_to_string(source.join("course").join(KERNEL))?;
    if classroom::regions::regions(&bundled)?.len() != 2 {
        return Err("the bundle's workspace does not hold the instructor's solutions".into());
    }
    for script in ["setup.sh", "run_autograder"] {
        let status = Command::new("bash").arg("-n").arg(source.join(script)).status()?;
        if !status.success() {
            return Err(format!("{script} does not parse").into());
        }
    }
    std::fs::copy(source.join("run_autograder"), root.join("run_autograder"))?;

    let [strided, sequential] =
        <[String; 2]>::try_from(reference_solutions()).map_err(|_| "two regions")?;
    let submission = root.join("submission");
    let grade = |files: Vec<(PathBuf, Vec<u8>)>| -> Result<serde_json::Value, String> {
        if submission.exists() {
            std::fs::remove_dir_all(&submission).map_err(|e| e.to_string())?;
        }
        classroom::sync_tree(&submission, &files)?;
        let output = Command::new("bash")
            .arg(root.join("run_autograder"))
            .env("AUTOGRADER_ROOT", &root)
            .env("COURSE_GRADER", env!("CARGO_BIN_EXE_tour"))
            .output()
            .map_err(|e| format!("cannot run run_autograder: {e}"))?;
        let results = std::fs::read_to_string(root.join("results/results.json")).map_err(|e| {
            format!("no results.json ({e}): {}", String::from_utf8_lossy(&output.stderr))
        })?;
        serde_json::from_str(&results).map_err(|e| format!("{e}: {results}"))
    };
    let test = |results: &serde_json::Value, name: &str| -> (f64, f64, String) {
        let found = results["tests"].as_array().and_then(|t| t.iter().find(|t| t["name"] == name));
        found.map_or((-1.0, -1.0, String::new()), |t| {
            (
                t["score"].as_f64().unwrap_or(-1.0),
                t["max_score"].as_f64().unwrap_or(-1.0),
                t["output"].as_str().unwrap_or_default().to_string(),
            )
        })
    };
    let expect = |condition: bool, what: &str, results: &serde_json::Value| -> TestResult {
        if condition { Ok(()) } else { Err(format!("{what}:\n{results:#}").into()) }
    };
    let tests_line = format!("{CRATE}: tests");
    let strided_line = format!("{CRATE}: optimisation, strided-index (2^16)");
    let interleaved_line = format!("{CRATE}: optimisation, interleaved (2^16)");

    // A copy of the whole starter, solved, with a test file that passes anything.
    let solved = kernel_with(Some([strided.clone(), sequential]))?;
    let tests_file = PathBuf::from("crates/reduce-interleaved/tests/reduce_interleaved.rs");
    let mut files = Vec::new();
    for file in classroom::workspace_files(starter()?)? {
        let bytes = if file == Path::new(KERNEL) {
            solved.clone().into_bytes()
        } else if file == tests_file {
            b"fn main() {}\n".to_vec()
        } else {
            std::fs::read(starter()?.join(&file)).map_err(|e| e.to_string())?
        };
        files.push((file, bytes));
    }
    let results = grade(files)?;
    expect(results["score"] == 15.0, "the solved starter: 15 points", &results)?;
    expect(test(&results, &tests_line).0 == 10.0, "every graded test passes", &results)?;
    expect(test(&results, &strided_line).0 == 2.5, "strided-index in full", &results)?;
    expect(test(&results, &interleaved_line).0 == 2.5, "interleaved in full", &results)?;
    let said = results["output"].as_str().unwrap_or_default();
    expect(
        said.contains(&format!("Graded with the course's tests: {KERNEL}."))
            && said.contains("other file(s) of the submission were not used"),
        "the student is told which file was graded and that the rest was not used",
        &results,
    )?;

    // The kernel file alone, with the divergent modulo.
    let modulo = kernel_with(Some([strided, DIVERGENT_MODULO.into()]))?;
    let results = grade(vec![("reduce_interleaved.cu".into(), modulo.into_bytes())])?;
    expect(results["score"] == 12.5, "the divergent modulo: 12.5 points", &results)?;
    expect(test(&results, &tests_line).0 == 10.0, "every graded test passes", &results)?;
    expect(test(&results, &strided_line).0 == 2.5, "strided-index in full", &results)?;
    let (score, most, advice) = test(&results, &interleaved_line);
    expect(
        score == 0.0
            && most == 2.5
            && advice.contains("48 divergent branches per block, the reference has 6"),
        "no points for the interleaved step, and the advice",
        &results,
    )?;

    // A submission without the kernel file: the starter's stubs are graded, not the solution.
    let results = grade(vec![("notes.txt".into(), b"done".to_vec())])?;
    expect(
        results["score"].as_f64().is_some_and(|s| s < 10.0)
            && test(&results, &interleaved_line).2 == "not counted: a graded test fails"
            && results["output"].as_str().is_some_and(|o| o.contains("none of the files")),
        "an empty submission: the stubs, graded",
        &results,
    )?;

    // A kernel NVRTC cannot compile.
    let broken = kernel_with(None)?.replacen("__syncthreads();", "__syncthreads()", 1);
    let results = grade(vec![("reduce_interleaved.cu".into(), broken.into_bytes())])?;
    let (score, _, failures) = test(&results, &tests_line);
    expect(
        results["score"] == 0.0 && score == 0.0,
        "a kernel that does not compile: every graded test fails, and nothing scores",
        &results,
    )?;
    expect(failures.contains("failed: "), "the failures are listed", &results)?;
    expect(
        test(&results, &interleaved_line).2 == "not counted: a graded test fails",
        "its optimisation is not counted, and why",
        &results,
    )?;
    Ok(())
}

const MULTI_GPU: &str = "reduce-multi-gpu";
const RING: &str = "crates/reduce-multi-gpu/src/ring.rs";

/// The ring's launcher with its region (the chunk a GPU sends at a step and its elements) written
/// as `solution` (`None`: the stub, as a starter hands it out); the submissions hold the
/// reference's fold beside it.
fn ring_with(solution: Option<&str>) -> Result<String, String> {
    let text = std::fs::read_to_string(root().join(RING)).map_err(|e| e.to_string())?;
    let regions = classroom::regions::regions(&text)?;
    let [region] = regions.as_slice() else { return Err(format!("{RING}: one region expected")) };
    let lines: Vec<&str> = text.lines().collect();
    let solution = match solution {
        Some(solution) => solution.to_string(),
        None => region
            .stub
            .iter()
            .map(|l| format!("                {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    // The opening marker is line `region.line`; the solution's lines follow it.
    let (before, after) = (&lines[..region.line], &lines[region.line + region.solution.len()..]);
    Ok(format!("{}\n{solution}\n{}\n", before.join("\n"), after.join("\n")))
}

fn multi_gpu_reference_gets_full_points() -> TestResult {
    let graded = grade_crate(
        MULTI_GPU,
        "multi-gpu-reference",
        &[(RING, &ring_reference()?), (FOLD, &fold()?)],
    )?;
    check(graded.success && graded.correctness() == 10.0, "every graded test passes", &graded)?;
    check(graded.optimisation() == 5.0, "full optimisation points", &graded)?;
    insta::assert_snapshot!("grade_multi_gpu_reference", graded.snapshot());
    Ok(())
}

const FOLD: &str = "cuda/reduce_multi_gpu.cu";

/// The reference's fold (the kernel's region of reduce-multi-gpu), which a submission of the ring
/// holds beside it, as a student who wrote the fold right submits it.
fn fold() -> Result<String, String> {
    std::fs::read_to_string(root().join(FOLD)).map_err(|e| e.to_string())
}

/// The reference's ring.rs, as the workspace holds it.
fn ring_reference() -> Result<String, String> {
    std::fs::read_to_string(root().join(RING)).map_err(|e| e.to_string())
}

/// A ring that passes whole vectors along, one GPU at a time: GPU s sends its whole buffer to GPU
/// s + 1 at step s of the reduce-scatter (so the last GPU ends with the total), and the total goes
/// round once in the all-gather; the other GPUs send nothing. Correct, and what the ring exists
/// to avoid: 2(n - 1) copies of the whole buffer one after another.
const WHOLE_VECTORS: &str = "                let chunk = 0;
                let sender = if first_chunk == 0 { step } else { (gpus - 1 + step) % gpus };
                let elements = if from == sender { 0..len } else { 0..0 };";

fn multi_gpu_whole_vectors_get_no_optimisation_points() -> TestResult {
    let graded = grade_crate(
        MULTI_GPU,
        "multi-gpu-whole-vectors",
        &[(RING, &ring_with(Some(WHOLE_VECTORS))?), (FOLD, &fold()?)],
    )?;
    check(
        graded.success && graded.correctness() == 10.0,
        "a correct answer: every graded test passes",
        &graded,
    )?;
    check(graded.step_score("ring") == Some(0.0), "no optimisation points for the ring", &graded)?;
    check(graded.optimisation() == 0.0, "no optimisation points", &graded)?;
    check(
        graded.table.contains(
            "ring: 24 copy span per element, the reference has 6: the copies wait for each other",
        ),
        "advice a student can act on",
        &graded,
    )?;
    insta::assert_snapshot!("grade_multi_gpu_whole_vectors", graded.snapshot());
    Ok(())
}

fn multi_gpu_stub_gets_no_points() -> TestResult {
    let graded =
        grade_crate(MULTI_GPU, "multi-gpu-stub", &[(RING, &ring_with(None)?), (FOLD, &fold()?)])?;
    check(!graded.success && graded.correctness() < 10.0, "graded tests fail", &graded)?;
    check(graded.optimisation() == 0.0, "no optimisation points", &graded)?;
    check(
        graded.crate_grade()["optimisation"]["not_counted"] == "a graded test fails",
        "not counted, and why",
        &graded,
    )?;
    Ok(())
}

const LOOK_BACK: &str = "cuda/look_back.cuh";

/// What a scan tile publishes once its look-back is done: its inclusive prefix.
const PUBLISH_PREFIX: &str = "    if (lane == 0) {
        publish<Op>(status, tile, TILE_PREFIX, Op::combine(exclusive, aggregate));
    }
";

/// A scan tile that never publishes its inclusive prefix is still right (a later tile looks back
/// past it, to tile 0), but every tile then reads tens of status words where one would do. Only
/// counted (`tour count` in the grader's copy, the look-back's region so written): the scan's
/// tests are the lead's business, and the count shows the points.
fn scan_tile_that_skips_its_prefix_gets_no_points_for_single_pass() -> TestResult {
    let text = std::fs::read_to_string(root().join(LOOK_BACK)).map_err(|e| e.to_string())?;
    if !text.contains(PUBLISH_PREFIX) {
        return Err(
            format!("{LOOK_BACK} no longer publishes the prefix as this test expects").into()
        );
    }
    let skipped = text.replace(PUBLISH_PREFIX, "");
    let mut files = Vec::new();
    for file in classroom::workspace_files(&root())? {
        let bytes = if file == Path::new(LOOK_BACK) {
            skipped.clone().into_bytes()
        } else {
            std::fs::read(root().join(&file)).map_err(|e| e.to_string())?
        };
        files.push((file, bytes));
    }
    std::fs::create_dir_all(tests_folder()).map_err(|e| e.to_string())?;
    let json = tests_folder().join("scan-skipped-prefix.json");
    let _ = std::fs::remove_file(&json);
    let lock = classroom::CopyLock::take(&root().join("target/course/copy.lock"), |_| {})?;
    let copy = root().join("target/course/workspace");
    classroom::sync_tree(&copy, &files)?;
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["run", "--quiet", "--package", "tour", "--", "count", "--crates", "scan", "--json"])
        .arg(&json)
        .env("CARGO_TARGET_DIR", root().join("target/course/target"))
        .current_dir(&copy)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    drop(lock);
    if !output.status.success() {
        return Err(
            format!("tour count failed: {}", String::from_utf8_lossy(&output.stderr)).into()
        );
    }
    let text = std::fs::read_to_string(&json).map_err(|e| e.to_string())?;
    let student: Vec<classroom::optimisation::StepCounts> =
        serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let reference = counting::count(&["scan".to_string()])?;
    let scores = classroom::optimisation::score(course::registry(), "scan", &student, &reference)?;
    let report = format!("{scores:#?}");
    for step in &scores {
        let expected = if step.step == "single-pass" { 0.0 } else { 1.0 };
        if step.score() != expected {
            return Err(format!(
                "{}: score {}, expected {expected}:\n{report}",
                step.step,
                step.score()
            )
            .into());
        }
    }
    let single = scores.iter().find(|s| s.step == "single-pass").ok_or("no single-pass")?;
    let strong = single
        .counters
        .iter()
        .find(|c| c.counter == "strong loads per block")
        .ok_or("no strong loads")?;
    if strong.student < 10.0 * strong.reference {
        return Err(format!(
            "strong loads per block: {} against {}:\n{report}",
            strong.student, strong.reference
        )
        .into());
    }
    Ok(())
}

/// Every graded step of every crate can be counted (its entry found, its result right at its count
/// case, every counter it names counted), as `grade` and `starter` count them.
fn every_graded_step_is_counted() -> TestResult {
    let course = course::registry();
    let crates: Vec<String> = course
        .crates()
        .filter(|c| !classroom::optimisation::graded_steps(course, c).is_empty())
        .map(str::to_string)
        .collect();
    let counts = counting::count(&crates)?;
    let mut problems = Vec::new();
    for crate_name in &crates {
        for step in classroom::optimisation::graded_steps(course, crate_name) {
            let Some(counted) =
                counts.iter().find(|c| c.crate_name == *crate_name && c.step == step.name)
            else {
                problems.push(format!("{crate_name}/{}: not counted", step.name));
                continue;
            };
            for improvement in step.improves {
                if !counted
                    .counts
                    .get(&improvement.label())
                    .is_some_and(|v| v.is_finite() && *v >= 0.0)
                {
                    problems.push(format!(
                        "{crate_name}/{}: no {} in {counted:?}",
                        step.name,
                        improvement.label()
                    ));
                }
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .nvrtc("count::every_graded_step_is_counted", every_graded_step_is_counted)
        .nvrtc("grade::reference_gets_full_points", reference_gets_full_points)
        .nvrtc(
            "grade::divergent_modulo_gets_no_optimisation_points_for_interleaved",
            divergent_modulo_gets_no_optimisation_points_for_interleaved,
        )
        .nvrtc("grade::another_loop_form_gets_full_points", another_loop_form_gets_full_points)
        .nvrtc("grade::a_stub_gets_no_points", a_stub_gets_no_points)
        .nvrtc(
            "grade::autograder_fails_the_divergent_modulo_on_its_optimisation_line",
            autograder_fails_the_divergent_modulo_on_its_optimisation_line,
        )
        .nvrtc(
            "gradescope::autograder_grades_four_submissions",
            gradescope_autograder_grades_four_submissions,
        )
        .nvrtc("grade::multi_gpu_reference_gets_full_points", multi_gpu_reference_gets_full_points)
        .nvrtc(
            "grade::multi_gpu_whole_vectors_get_no_optimisation_points",
            multi_gpu_whole_vectors_get_no_optimisation_points,
        )
        .nvrtc("grade::multi_gpu_stub_gets_no_points", multi_gpu_stub_gets_no_points)
        .nvrtc(
            "count::scan_tile_that_skips_its_prefix_gets_no_points_for_single_pass",
            scan_tile_that_skips_its_prefix_gets_no_points_for_single_pass,
        )
        .run()
}
