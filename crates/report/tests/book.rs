//! The book and the README stay true to the registry, the code and the data: every generated file
//! (tables, charts, the GPU tabs of each chapter, SUMMARY.md, the README's status table) is what
//! the committed registry and data render; every include names a real file and anchor; every number
//! quoted in the prose is the measured one; every chapter the registry names exists.

use std::path::PathBuf;

use measuring::workspace_root;
use report::render_book;

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
    assert!(
        stale.is_empty(),
        "out of date (run `cargo run --release -- --charts`): {}",
        stale.join(", ")
    );
}

#[test]
fn every_chapter_and_summary_the_registry_names_exists() {
    let src = workspace_root().join("book/src");
    for family in &course::registry().families {
        let pages = family
            .chapters
            .iter()
            .map(|c| c.file.clone())
            .chain(family.summary.iter().map(|p| p.file.clone()));
        for page in pages {
            assert!(
                src.join(&page).is_file(),
                "course.toml names book/src/{page}, which does not exist"
            );
        }
    }
}

#[test]
fn numbers_quoted_in_the_prose_are_the_measured_ones() {
    let problems = report::prose::check_book(&workspace_root().join("book/src"));
    assert!(
        problems.is_empty(),
        "numbers in the book that the data does not back:\n{}",
        problems.join("\n")
    );
}

/// Every `.md` file under `src`, in every folder.
fn markdown_files(src: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("readable book folder") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files
}

/// Every `{{#include path}}` and `{{#include path:anchor}}` in the book names a file that exists
/// and, where given, an anchor that file marks (mdbook itself includes nothing, silently, for a
/// missing anchor).
#[test]
fn every_include_names_an_existing_file_and_anchor() {
    let src = workspace_root().join("book/src");
    let chapters = markdown_files(&src);
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
                [name] if !name.is_empty() && !name.chars().all(|c| c.is_ascii_digit()) => {
                    Some(*name)
                }
                _ => None,
            };
            includes += 1;
            let path: PathBuf = chapter.parent().unwrap().join(file);
            match std::fs::read_to_string(&path) {
                Err(e) => problems.push(format!("{}: {file}: {e}", chapter.display())),
                Ok(included) => {
                    if let Some(anchor) = anchor {
                        // In code, a comment line; in a page, an HTML comment.
                        let marked = |marker: &str| {
                            included.contains(&format!("{marker}: {anchor}\n"))
                                || included.contains(&format!("<!-- {marker}: {anchor} -->"))
                        };
                        let (opens, closes) = (marked("ANCHOR"), marked("ANCHOR_END"));
                        if !(opens && closes) {
                            problems.push(format!(
                                "{}: {file} has no ANCHOR {anchor} ... ANCHOR_END",
                                chapter.display()
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(includes > 0, "no includes found under {}", src.display());
    assert!(problems.is_empty(), "broken includes:\n{}", problems.join("\n"));
}

/// The front page's table (`book/src/data/measured/headline.md`, included by the introduction) is
/// the data: for every family and every GPU measured, the family's final step (the last step of
/// its ladder that runs at its summary case) beside each peer whose counterpart it is, with the
/// GB/s of both and the peer's time over the step's, read here from the results files; then, for
/// every multi-GPU session, the ring's all-reduce beside NCCL's and PyTorch's.
#[test]
fn the_front_page_table_is_each_familys_final_step_beside_its_peer_as_measured() {
    let root = workspace_root();
    let introduction = std::fs::read_to_string(root.join("book/src/introduction.md")).unwrap();
    assert!(
        introduction.contains("{{#include data/measured/headline.md}}"),
        "the introduction shows no headline"
    );
    let page = std::fs::read_to_string(root.join("book/src/data/measured/headline.md")).unwrap();
    assert!(
        page.contains("src=\"data/measured/headline.svg\"")
            && page.contains("srcset=\"data/measured/headline-narrow.svg\""),
        "no headline chart, wide and for a phone:\n{page}"
    );

    // The table's rows, an empty cell repeating the one above it.
    let plain = |cell: &str| cell.trim().replace("<wbr>", "").replace('*', "");
    let mut rows: Vec<Vec<String>> = Vec::new();
    for line in page.lines().filter(|l| l.starts_with('|')).skip(2) {
        let cells: Vec<String> = line.trim_matches('|').split('|').map(plain).collect();
        let filled = match rows.last() {
            Some(above) => cells
                .iter()
                .zip(above)
                .map(|(c, a)| if c.is_empty() { a.clone() } else { c.clone() })
                .collect(),
            None => cells,
        };
        rows.push(filled);
    }

    let data = root.join("book/src/data");
    let gpus = report::load_results_by_gpu(course::registry(), &data).unwrap();
    let mut expected: Vec<[String; 7]> = Vec::new();
    for family in &course::registry().families {
        let summary = &family.summary_case;
        let Some(last) =
            family.steps().filter(|s| s.on_ladder() && s.cases().contains(summary)).last()
        else {
            continue;
        };
        let peers: Vec<_> = family
            .steps()
            .filter(|s| s.peer.and_then(|p| p.counterpart.as_deref()) == Some(last.name()))
            .collect();
        for (_, results) in &gpus {
            let find = |crate_name: &str, step: &str| {
                results
                    .iter()
                    .filter(|r| r.crate_name == crate_name)
                    .flat_map(|r| &r.records)
                    .find(|r| r.step == step && r.case == summary.label)
            };
            let Some(ours) = find(last.crate_name, last.name()) else { continue };
            let name = &results[0].device.name;
            let gpu = name.trim_start_matches("NVIDIA ").split(' ').next().unwrap().to_string();
            for peer in &peers {
                let Some(theirs) = find(peer.crate_name, peer.name()) else { continue };
                expected.push([
                    family.title.clone(),
                    gpu.clone(),
                    last.name().to_string(),
                    format!("{:.0}", ours.gbs),
                    peer.peer.unwrap().source.clone(),
                    format!("{:.0}", theirs.gbs),
                    format!("{:.2}x", theirs.median_ms / ours.median_ms),
                ]);
            }
        }
    }
    for machine in report::multi_gpu::load_machines(&data).unwrap() {
        let ring: Vec<_> =
            machine.rows.iter().filter(|r| r.kind == "allreduce" && r.method == "ring").collect();
        let Some(gpus) = ring.iter().map(|r| r.gpus).max() else { continue };
        let Some(bytes) = ring.iter().filter(|r| r.gpus == gpus).map(|r| r.bytes).max() else {
            continue;
        };
        let step = report::multi_gpu::best_method(&machine);
        let ours = machine.all_reduce(step, gpus, bytes).unwrap();
        for (method, name) in [("nccl", "NCCL"), ("torch", "PyTorch")] {
            let Some(theirs) = machine.all_reduce(method, gpus, bytes) else { continue };
            let device = machine
                .fact("device")
                .trim_start_matches("NVIDIA ")
                .split(' ')
                .next()
                .unwrap()
                .to_string();
            expected.push([
                "Across GPUs".into(),
                format!("{gpus} x {device}"),
                step.into(),
                format!("{:.0}", ours.busbw()),
                name.into(),
                format!("{:.0}", theirs.busbw()),
                format!("{:.2}x", theirs.ms / ours.ms),
            ]);
        }
    }
    assert!(expected.len() >= 10, "the data has too few pairs: {expected:?}");
    assert_eq!(rows.len(), expected.len(), "rows of the front page's table:\n{page}");
    for (row, want) in rows.iter().zip(&expected) {
        assert!(
            row[0].starts_with(&format!("[{}]", want[0])),
            "technique {:?}, expected {}",
            row[0],
            want[0]
        );
        assert_eq!(row[1..4], want[1..4], "{want:?}");
        assert!(row[4].starts_with(&want[4]), "peer {:?}, expected {}", row[4], want[4]);
        assert_eq!(row[5..7], want[5..7], "{want:?}");
    }
}

/// Every measured section opens on the tab of the GPU (or machine) that the prose around it quotes
/// most: counted here from the `<!-- data <gpu> ...` comments of the pages that include it, so that
/// the figures a reader reads are the ones the table shows.
#[test]
fn every_measured_section_opens_on_the_gpu_its_page_quotes_most() {
    let src = workspace_root().join("book/src");
    let pages: Vec<String> =
        markdown_files(&src).iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    let quotes = |text: &str, slug: &str| {
        [format!("<!-- data {slug} "), format!("multi-gpu {slug} "), format!("host {slug} ")]
            .iter()
            .map(|marker| text.matches(marker.as_str()).count())
            .sum::<usize>()
    };
    let mut checked = 0;
    for entry in std::fs::read_dir(src.join("data/measured")).unwrap().flatten() {
        let fragment = std::fs::read_to_string(entry.path()).unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let slugs: Vec<(String, bool)> = fragment
            .lines()
            .filter(|l| l.starts_with("<input type=\"radio\""))
            .map(|l| {
                let id = l.split("id=\"").nth(1).unwrap().split('"').next().unwrap();
                let stem = name.trim_end_matches(".md");
                let slug = id.strip_prefix(&format!("gpu-{stem}-")).unwrap().to_string();
                (slug, l.contains(" checked"))
            })
            .collect();
        if slugs.len() < 2 {
            continue;
        }
        let shown: Vec<&String> = slugs.iter().filter(|s| s.1).map(|s| &s.0).collect();
        assert_eq!(shown.len(), 1, "{name}: not one tab open at first");
        let prose: String = pages
            .iter()
            .filter(|page| page.contains(&format!("data/measured/{name}}}}}")))
            .cloned()
            .collect();
        for (slug, _) in &slugs {
            assert!(
                quotes(&prose, shown[0]) >= quotes(&prose, slug),
                "{name} opens on {} ({} quotes in its pages) though they quote {slug} {} times",
                shown[0],
                quotes(&prose, shown[0]),
                quotes(&prose, slug)
            );
        }
        checked += 1;
    }
    assert!(checked > 20, "only {checked} measured sections with tabs found");
}

/// The widest a line in `cuda/` and `crates/` may be: the book shows kernels and launchers in
/// listings this wide (book/css/listings.css), and a longer line runs off the right edge.
const BOOK_WIDTH: usize = 100;

/// Every line of the kernels and the crates fits the book's listings: rustfmt (`max_width`) and
/// clang-format (`ColumnLimit`) lay the code out within it, `scripts/reflow-comments` re-wraps long
/// comments. `ANCHOR` markers, which mdBook drops from listings, and lines holding a link are left
/// out.
#[test]
fn lines_fit_the_books_width() {
    fn sources(dir: &std::path::Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && path.file_name().is_some_and(|n| n != "target") {
                sources(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs" || e == "cu" || e == "cuh") {
                found.push(path);
            }
        }
    }
    let root = workspace_root();
    let mut files = Vec::new();
    sources(&root.join("cuda"), &mut files);
    sources(&root.join("crates"), &mut files);
    assert!(files.len() > 50, "found only {} source files under cuda/ and crates/", files.len());
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let shown = !line.contains("ANCHOR") && !line.contains("http");
            if shown && line.chars().count() > BOOK_WIDTH {
                let path = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
                long.push(format!("{path}:{}: {} columns", number + 1, line.chars().count()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "lines past {BOOK_WIDTH} columns (cargo fmt, scripts/format-cuda, reflow-comments):\n{}",
        long.join("\n")
    );
}
