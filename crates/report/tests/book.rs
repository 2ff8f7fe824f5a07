//! The book and the README stay true to the registry, the code and the data: every generated file
//! (tables, charts, the GPU tabs of each chapter, SUMMARY.md, the README's status table) is what
//! the committed registry and data render; every include names a real file and anchor; every number
//! quoted in the prose is the measured one; every chapter the registry names exists.

use std::path::PathBuf;

use report::{render_book, workspace_root};

#[test]
fn committed_pages_tables_and_charts_match_the_registry_and_the_data() {
    let outputs = render_book(course::registry(), &workspace_root()).expect("the book renders");
    let mut stale = Vec::new();
    for (path, expected) in &outputs {
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        if committed != *expected {
            stale.push(path.strip_prefix(workspace_root()).unwrap_or(path).display().to_string());
        }
    }
    assert!(stale.is_empty(), "out of date (run `cargo run --release -- --charts`): {}", stale.join(", "));
}

#[test]
fn every_chapter_and_summary_the_registry_names_exists() {
    let src = workspace_root().join("book/src");
    for family in &course::registry().families {
        let pages = family.chapters.iter().map(|c| c.file.clone()).chain(family.summary.iter().map(|p| p.file.clone()));
        for page in pages {
            assert!(src.join(&page).is_file(), "course.toml names book/src/{page}, which does not exist");
        }
    }
}

#[test]
fn numbers_quoted_in_the_prose_are_the_measured_ones() {
    let problems = report::prose::check_book(&workspace_root().join("book/src"));
    assert!(problems.is_empty(), "numbers in the book that the data does not back:\n{}", problems.join("\n"));
}

/// Every `{{#include path}}` and `{{#include path:anchor}}` in the book names a file that exists
/// and, where given, an anchor that file marks (mdbook itself includes nothing, silently, for a
/// missing anchor).
#[test]
fn every_include_names_an_existing_file_and_anchor() {
    let src = workspace_root().join("book/src");
    let mut chapters = Vec::new();
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("readable book folder") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                chapters.push(path);
            }
        }
    }
    let mut problems = Vec::new();
    let mut includes = 0;
    for chapter in &chapters {
        let text = std::fs::read_to_string(chapter).expect("readable chapter");
        for directive in text.split("{{#include ").skip(1) {
            let Some(end) = directive.find("}}") else { continue };
            let target = directive[..end].trim();
            // `file`, `file:anchor`, or a line range `file:5:` / `file:5:20`.
            let mut parts = target.split(':');
            let file = parts.next().unwrap_or_default();
            let rest: Vec<&str> = parts.collect();
            let anchor = match rest.as_slice() {
                [name] if !name.is_empty() && !name.chars().all(|c| c.is_ascii_digit()) => Some(*name),
                _ => None,
            };
            includes += 1;
            let path: PathBuf = chapter.parent().unwrap().join(file);
            match std::fs::read_to_string(&path) {
                Err(e) => problems.push(format!("{}: {file}: {e}", chapter.display())),
                Ok(included) => {
                    if let Some(anchor) = anchor {
                        let opens = included.contains(&format!("ANCHOR: {anchor}\n"));
                        let closes = included.contains(&format!("ANCHOR_END: {anchor}\n"));
                        if !(opens && closes) {
                            problems
                                .push(format!("{}: {file} has no ANCHOR {anchor} ... ANCHOR_END", chapter.display()));
                        }
                    }
                }
            }
        }
    }
    assert!(includes > 0, "no includes found under {}", src.display());
    assert!(problems.is_empty(), "broken includes:\n{}", problems.join("\n"));
}
