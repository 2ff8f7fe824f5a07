//! A starter copy's tests digest: it survives the student's edits of the files they write, and
//! changes with anything that defines the grade (the tests, `course.toml`'s entries that say what
//! each step's optimisation points measure, the reference counts the starter recorded). And the
//! book built in a starter shows no solution.

use std::collections::{BTreeMap, BTreeSet};
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

/// The text of an HTML page: tags dropped, the entities mdBook writes in code decoded.
fn html_text(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        text += &rest[..open];
        rest = rest[open..].find('>').map_or("", |close| &rest[open + close + 1..]);
    }
    text += rest;
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// `mdbook build` of the book in `workspace`, into `out`; the text of its one-page edition.
fn book_text(workspace: &Path, out: &Path) -> Result<String, String> {
    let output = std::process::Command::new("mdbook")
        .arg("build")
        .arg(workspace.join("book"))
        .arg("-d")
        .arg(out)
        .output()
        .map_err(|e| format!("cannot run mdbook: {e}"))?;
    if !output.status.success() {
        return Err(format!("mdbook build failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let page = std::fs::read_to_string(out.join("print.html")).map_err(|e| e.to_string())?;
    Ok(html_text(&page))
}

/// A starter of every crate with regions, its book built with mdBook: no line of a solution is in
/// it. (The book includes code from the kernel files, which the starter stubs; a line copied into
/// a page by hand would show.) The lines looked for are the solutions' code lines of 12 characters
/// or more that no kernel or crate of the starter holds: a line a later step's kernel keeps (the
/// sequential addressing of reduce-first-add) is the course's code, not the answer's. The
/// instructor's book, built the same way, shows them: the search can find what it looks for.
fn the_starters_book_shows_no_solution() -> TestResult {
    let folder = std::env::temp_dir().join(format!("course-starter-book-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    let starter = folder.join("starter");
    let crates = classroom::assigned_crates(&root())?;
    let (files, stubbed) = classroom::starter_files(&root(), &crates)?;
    let code: String = files
        .iter()
        .filter(|(f, _)| f.starts_with("cuda") || f.starts_with("crates"))
        .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
        .collect();
    classroom::sync_tree(&starter, &files)?;
    let mut lines = Vec::new();
    let files: BTreeSet<&PathBuf> = stubbed.iter().map(|a| &a.file).collect();
    for file in files {
        let text = std::fs::read_to_string(root().join(file))?;
        for region in classroom::regions::regions(&text)? {
            for line in region.solution.iter().map(|l| l.trim()) {
                if line.len() >= 12 && !line.starts_with("//") && !code.contains(line) {
                    lines.push((file.clone(), line.to_string()));
                }
            }
        }
    }
    if lines.len() < 50 {
        return Err(format!("only {} solution lines to look for", lines.len()).into());
    }
    let students = book_text(&starter, &folder.join("students"))?;
    let shown: Vec<String> = lines
        .iter()
        .filter(|(_, line)| students.contains(line.as_str()))
        .map(|(file, line)| format!("{}: {line}", file.display()))
        .collect();
    if !shown.is_empty() {
        return Err(format!("the starter's book shows solutions:\n{}", shown.join("\n")).into());
    }
    let instructors = book_text(&root(), &folder.join("instructors"))?;
    let found = lines.iter().filter(|(_, line)| instructors.contains(line.as_str())).count();
    if found * 2 < lines.len() {
        return Err(format!(
            "the instructor's book shows only {found} of the {} solution lines looked for",
            lines.len()
        )
        .into());
    }
    std::fs::remove_dir_all(&folder)?;
    Ok(())
}

/// Why mdBook's tests cannot run here, if they cannot.
fn no_mdbook() -> Option<String> {
    match std::process::Command::new("mdbook").arg("--version").output() {
        Ok(output) if output.status.success() => None,
        _ => Some("no mdbook here (cargo install mdbook)".into()),
    }
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .cpu_if(
            "the_starters_book_shows_no_solution",
            no_mdbook,
            the_starters_book_shows_no_solution,
        )
        .cpu(
            "a_starters_digest_guards_the_grade_but_not_the_students_files",
            a_starters_digest_guards_the_grade_but_not_the_students_files,
        )
        .run()
}
