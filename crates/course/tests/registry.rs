//! The registry names real things: every chapter's crate exists, every step's kernel is an entry
//! point of a kernel file (compiled by NVRTC), every peer's function is in `scripts/peers/`.

use std::path::PathBuf;

use gpu_harness::KernelSource;
use gpu_harness::compile::{Target, compile};
use gpu_test::{TestResult, TestSuite};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn files(folder: &str, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(folder))
        .expect("readable folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .cpu("every_chapter_crate_exists", || -> TestResult {
            for name in course::registry().crates() {
                let manifest = root().join("crates").join(name).join("Cargo.toml");
                if !manifest.is_file() {
                    return Err(format!("course.toml names crate `{name}`, which has no {}", manifest.display()).into());
                }
            }
            Ok(())
        })
        .nvrtc("every_step_kernel_is_an_entry_point", || -> TestResult {
            let mut entries = Vec::new();
            for path in files("cuda", "cu") {
                let source = KernelSource {
                    file: path.file_name().unwrap().to_string_lossy().into_owned().leak(),
                    code: std::fs::read_to_string(&path)?.leak(),
                };
                let image = compile(&source, Target::Ptx { major: 9, minor: 0 }, &[("BLOCK_SIZE", "256".into())])?;
                let ptx = image.ptx_text().unwrap_or_default();
                entries.extend(
                    ptx.lines()
                        .filter_map(|l| l.split(".entry ").nth(1))
                        .map(|l| l.split(['(', ' ']).next().unwrap_or_default().to_string()),
                );
            }
            let peers: String =
                files("scripts/peers", "cu").iter().map(|p| std::fs::read_to_string(p).unwrap_or_default()).collect();
            let mut problems = Vec::new();
            for step in course::registry().steps() {
                let kernel = &step.step.kernel;
                let found = match step.peer {
                    None => entries.contains(kernel),
                    // A peer is a C function, written out or made by a macro such as SEED_PEER(naive, ...).
                    Some(_) => {
                        peers.contains(&format!(" {kernel}("))
                            || kernel.split_once('_').is_some_and(|(_, rest)| peers.contains(&format!("PEER({rest},")))
                    }
                };
                if !found {
                    problems.push(format!("{}/{}: no kernel `{kernel}`", step.crate_name, step.name()));
                }
            }
            if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
        })
        .run()
}
