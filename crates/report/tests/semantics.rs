//! The semantics page (`book/src/semantics.md`) stays backed by tests: every test its tables name
//! is still written in a crate's source, and every torch/numpy case it cites is one that
//! `scripts/torch_semantics.py` prints.

use std::path::{Path, PathBuf};

use measuring::workspace_root;

/// The `.rs` files under `dir`, skipping build output.
fn rust_sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() && path.file_name().is_some_and(|n| n != "target") {
            rust_sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The code spans (between backticks) of `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The rows of the page's tables, as cells (header and separator rows left out).
fn table_rows(page: &str) -> Vec<Vec<&str>> {
    page.lines()
        .filter(|line| {
            line.starts_with('|') && !line.starts_with("|---") && !line.starts_with("| behaviour")
        })
        .map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

/// Each test named in a table's last column is written in some crate: its last `::` segment (the
/// part a suite does not build from a step, type or size) appears in a source file. Names ending
/// in a size (`n_0`, `n_*`) are built from numbers and are not checked.
#[test]
fn every_test_the_page_names_is_written_in_a_crate() {
    let root = workspace_root();
    let page =
        std::fs::read_to_string(root.join("book/src/semantics.md")).expect("the semantics page");
    let mut files = Vec::new();
    rust_sources(&root.join("crates"), &mut files);
    let sources: String = files.iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect();
    let mut checked = 0;
    let mut missing = Vec::new();
    for row in table_rows(&page) {
        let Some(tests) = row.last() else { continue };
        for name in code_spans(tests) {
            let last = name.rsplit("::").next().unwrap_or(name);
            if last.starts_with("n_") || !name.contains("::") && !last.contains('_') {
                continue;
            }
            checked += 1;
            if !sources.contains(&format!("{last}\"")) {
                missing.push(name.to_string());
            }
        }
    }
    assert!(
        checked >= 40,
        "only {checked} test names found on the page: has its table format changed?"
    );
    assert!(
        missing.is_empty(),
        "tests named on book/src/semantics.md that no crate writes: {missing:?}"
    );
}

/// Each torch/numpy case a cell names (in parentheses, as code) is a case of the script.
#[test]
fn every_case_the_page_cites_is_printed_by_the_script() {
    let root = workspace_root();
    let page =
        std::fs::read_to_string(root.join("book/src/semantics.md")).expect("the semantics page");
    let script =
        std::fs::read_to_string(root.join("scripts/torch_semantics.py")).expect("the script");
    let mut missing = Vec::new();
    let mut checked = 0;
    for row in table_rows(&page) {
        let Some(cell) = row.iter().rev().nth(1) else { continue };
        let Some(cases) = cell.rfind('(').map(|at| &cell[at..]) else { continue };
        for case in code_spans(cases) {
            // `_x2` and `min_…` abbreviate the case before them; `.T.copy()` is a call, not a case.
            if case.starts_with('_') || case.contains('…') || case.contains('(') {
                continue;
            }
            checked += 1;
            if !script.contains(&format!("\"{case}\"")) {
                missing.push(case.to_string());
            }
        }
    }
    assert!(checked >= 40, "only {checked} cases found on the page: has its table format changed?");
    assert!(
        missing.is_empty(),
        "cases cited on book/src/semantics.md that the script does not print: {missing:?}"
    );
}
