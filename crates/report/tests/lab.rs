//! The lab (`scripts/lab/<technique>/`) stays tied to the book: every program in it is cited by a
//! chapter, by its path or through its folder's README (which a chapter cites and which names it);
//! every shared header in `scripts/lab/common/` is included by a program; and every `scripts/...`
//! path that the book, its data files, the kernels, the crates, the README or the scripts name
//! exists. (That the programs compile against the current kernels is `scripts/check-lab`'s, in CI.)

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace root")
}

/// Every file under `dir` (not `target`, not hidden), recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                folders.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// The chapters: every page of the book but the generated data pages.
fn chapters() -> String {
    let src = root().join("book/src");
    files(&src)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md") && !p.starts_with(src.join("data")))
        .map(|p| std::fs::read_to_string(p).expect("readable chapter"))
        .collect()
}

/// The lab's programs: every file in a technique's folder but its README and its outputs (`.txt`).
fn programs() -> Vec<PathBuf> {
    let lab = root().join("scripts/lab");
    let programs: Vec<PathBuf> = files(&lab)
        .into_iter()
        .filter(|file| {
            let name = file.file_name().unwrap().to_string_lossy();
            let folder = file.parent().unwrap();
            name != "README.md"
                && !name.ends_with(".txt")
                && folder != lab
                && folder != lab.join("common")
        })
        .collect();
    assert!(
        programs.len() >= 10,
        "found only {} lab programs under {}",
        programs.len(),
        lab.display()
    );
    programs
}

#[test]
fn every_lab_program_is_cited_by_a_chapter() {
    let chapters = chapters();
    let mut uncited = Vec::new();
    for file in programs() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let folder = file.parent().unwrap();
        let path = relative(&file);
        let readme = folder.join("README.md");
        let through_readme = chapters.contains(&relative(&readme))
            && std::fs::read_to_string(&readme)
                .is_ok_and(|text| text.contains(&format!("`{name}`")));
        if !chapters.contains(&path) && !through_readme {
            uncited.push(path);
        }
    }
    assert!(
        uncited.is_empty(),
        "lab programs no chapter cites (by path, or by its folder's README):\n{}",
        uncited.join("\n")
    );
}

#[test]
fn every_lab_folder_has_a_readme_naming_its_programs() {
    let mut problems = Vec::new();
    for file in programs() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let folder = file.parent().unwrap();
        match std::fs::read_to_string(folder.join("README.md")) {
            Ok(text) if text.contains(&format!("## `{name}`")) => {}
            Ok(_) => {
                problems.push(format!("{}: its README has no `## `{name}`` entry", relative(&file)))
            }
            Err(_) => problems.push(format!("{}: no README.md beside it", relative(&file))),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_shared_lab_header_is_included() {
    let lab = root().join("scripts/lab");
    let sources: Vec<(PathBuf, String)> = files(&lab)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cu" || e == "cuh"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable lab source");
            (p, text)
        })
        .collect();
    let mut unused = Vec::new();
    for header in files(&lab.join("common")) {
        let name = header.file_name().unwrap().to_string_lossy().into_owned();
        let included = sources.iter().any(|(path, text)| {
            path != &header
                && (text.contains(&format!("\"../common/{name}\""))
                    || text.contains(&format!("\"{name}\"")))
        });
        if !included {
            unused.push(relative(&header));
        }
    }
    assert!(unused.is_empty(), "shared lab headers nothing includes:\n{}", unused.join("\n"));
}

/// Every `scripts/...` path named in the book (chapters and data files), `cuda/`, the crates'
/// sources, the README, `.ci/run` and the scripts themselves: a path ends at the first character
/// that is not a letter, digit, `_`, `-`, `.` or `/`; a glob or a placeholder
/// (`scripts/torch_*.py`, `scripts/lab/<technique>/`) checks only its folder, and a path in another
/// revision (`rev:scripts/...`) is not checked.
#[test]
fn every_scripts_path_named_exists() {
    let root = root();
    let mut texts: Vec<PathBuf> = Vec::new();
    let readable = |p: &PathBuf| {
        p.extension()
            .is_some_and(|e| ["md", "txt", "rs", "cu", "cuh", "py"].iter().any(|x| e == *x))
            || p.extension().is_none()
    };
    texts.extend(files(&root.join("book/src")).into_iter().filter(readable));
    texts.extend(files(&root.join("cuda")));
    texts.extend(
        files(&root.join("crates"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "rs")),
    );
    texts.extend(files(&root.join("scripts")).into_iter().filter(readable));
    texts.push(root.join("README.md"));
    texts.push(root.join(".ci/run"));
    let mut missing = Vec::new();
    let mut named = 0;
    for file in texts {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (at, _) in text.match_indices("scripts/") {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || "/_-.:".contains(c)) {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c))
                .collect();
            let mut path = path.trim_end_matches('.');
            if text[at + path.len()..].starts_with(['*', '<']) {
                // A glob or a placeholder: its folder must exist.
                path = &path[..path.rfind('/').map_or(0, |slash| slash + 1)];
            }
            named += 1;
            if !root.join(path).exists() {
                missing.push(format!("{}: {path}", relative(&file)));
            }
        }
    }
    assert!(named > 50, "found only {named} scripts/ paths");
    assert!(missing.is_empty(), "paths under scripts/ that do not exist:\n{}", missing.join("\n"));
}
