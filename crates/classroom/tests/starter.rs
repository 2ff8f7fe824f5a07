//! A starter copy's tests digest: it survives the student's edits of the files they write, and
//! changes with anything that defines the grade (the tests, `course.toml`'s entries that say what
//! each step's optimisation points measure, the reference counts the starter recorded).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use classroom::optimisation::StepCounts;
use classroom::{CLASSROOM_FILE, ClassroomRecord, RecordedReference, tests_digest, write_starter};
use gpu_test::{TestResult, TestSuite};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// `path` with `from` replaced by `to` (which must be there), and the digest of `starter` then;
/// the file is restored after.
fn digest_with(starter: &Path, path: &str, from: &str, to: &str) -> Result<String, String> {
    let file = starter.join(path);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{path}: {e}"))?;
    if !text.contains(from) {
        return Err(format!("{path} has no `{from}`"));
    }
    std::fs::write(&file, text.replacen(from, to, 1)).map_err(|e| e.to_string())?;
    let digest = tests_digest(starter);
    std::fs::write(&file, text).map_err(|e| e.to_string())?;
    digest
}

fn a_starters_digest_guards_the_grade_but_not_the_students_files() -> TestResult {
    let starter =
        std::env::temp_dir().join(format!("course-starter-digest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&starter);
    let reference = vec![StepCounts {
        crate_name: "reduce-interleaved".into(),
        step: "interleaved".into(),
        case: "2^16".into(),
        counts: BTreeMap::from([("divergent branches per block".to_string(), 6.0)]),
    }];
    let recorded = RecordedReference { nvrtc: "13.5".into(), counts: reference.clone() };
    write_starter(&root(), &starter, &["reduce-interleaved".into()], Some(recorded))?;
    let record = ClassroomRecord::read(&starter)?.ok_or("the starter has no classroom record")?;
    assert_eq!(record.student_files, [PathBuf::from("cuda/reduce_interleaved.cu")]);
    assert_eq!((record.nvrtc.as_deref(), &record.reference), (Some("13.5"), &reference));
    let digest = tests_digest(&starter)?;
    let autograding = std::fs::read_to_string(starter.join(".github/classroom/autograding.json"))?;
    assert!(
        autograding.contains(&format!("--require-optimised --tests-digest {digest}")),
        "{autograding}"
    );

    let student_edit =
        digest_with(&starter, "cuda/reduce_interleaved.cu", "// TODO(student)", "x; // done")?;
    assert_eq!(student_edit, digest, "the student's own file is theirs to edit");
    let why = "the active threads are not contiguous";
    assert_ne!(
        digest_with(&starter, "course.toml", why, "anything")?,
        digest,
        "what the points measure"
    );
    assert_ne!(
        digest_with(&starter, "course.toml", "per = \"block\"", "per = \"element\"")?,
        digest
    );
    assert_ne!(
        digest_with(&starter, CLASSROOM_FILE, "6.0", "60.0")?,
        digest,
        "the recorded reference counts"
    );
    assert_ne!(
        digest_with(
            &starter,
            CLASSROOM_FILE,
            "cuda/reduce_interleaved.cu",
            "crates/reduce-interleaved/tests/reduce_interleaved.rs"
        )?,
        digest,
        "a student who lists a test file as theirs"
    );
    assert_ne!(
        digest_with(
            &starter,
            "crates/reduce-interleaved/tests/reduce_interleaved.rs",
            "fn",
            "fn "
        )?,
        digest
    );
    // Another crate's region is still a region: its file is not in the digest either.
    assert_eq!(digest_with(&starter, "cuda/reduce_naive.cu", "__syncthreads();", "")?, digest);
    std::fs::remove_dir_all(&starter)?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .cpu(
            "a_starters_digest_guards_the_grade_but_not_the_students_files",
            a_starters_digest_guards_the_grade_but_not_the_students_files,
        )
        .run()
}
