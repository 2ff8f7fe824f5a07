//! The book stays true to the code and the data: its tables and charts are the ones the committed
//! data produces, and every include names a real file and anchor.

use book_charts::render_book;
use gpu_harness::report::book_data_dir;

#[test]
fn committed_tables_and_charts_match_committed_data() {
    let outputs = render_book(&book_data_dir()).expect("book data is readable");
    assert!(!outputs.is_empty(), "no results files under book/src/data");
    for (path, expected) in outputs {
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(committed == expected, "{} is out of date: run `cargo run --release -- --charts`", path.display());
    }
}

/// Every `{{#include path}}` and `{{#include path:anchor}}` in the book names a file that exists
/// and, where given, an anchor that file marks (mdbook itself includes nothing, silently, for a
/// missing anchor).
#[test]
fn every_include_names_an_existing_file_and_anchor() {
    let src = book_data_dir().join("..");
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
            let path = chapter.parent().unwrap().join(file);
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
