//! The registry names real things: every chapter's crate exists, every step's kernel is written out
//! in its chapter's kernel file and is an entry point of it (compiled by NVRTC), every peer's
//! function is in `scripts/peers/` (PyTorch's peers have none: their script measures them).

use std::collections::HashMap;
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
                    return Err(format!(
                        "course.toml names crate `{name}`, which has no {}",
                        manifest.display()
                    )
                    .into());
                }
            }
            Ok(())
        })
        .cpu("every_step_kernel_is_written_out_in_its_kernel_file", || -> TestResult {
            let mut problems = Vec::new();
            for step in course::registry().steps() {
                // A peer's kernel is a C function in scripts/peers/, not in a kernel file of ours
                // (the NVRTC test below finds it there).
                let Some(file) = step.kernel_file() else { continue };
                // Only the chapter's own .cu is read: the shared headers (cuda/*.cuh) hold device
                // functions, and every entry point is in the file of the chapter that teaches it.
                let path = root().join("cuda").join(&file);
                let source = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let before_hopper =
                    step.step.hopper.as_ref().and_then(|h| h.kernel_before.as_ref());
                for kernel in std::iter::once(&step.step.kernel).chain(before_hopper) {
                    if !course::kernel_written_out(&source, kernel) {
                        problems.push(format!(
                            "{}/{}: no `extern \"C\"` kernel `{kernel}` written out in cuda/{file}",
                            step.crate_name,
                            step.name()
                        ));
                    }
                }
            }
            if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
        })
        .cpu("a_kernel_name_made_by_a_macro_is_not_written_out", || -> TestResult {
            let pasted = "#define PASS(S) \\\n    extern \"C\" __global__ void \\\n        \
                          scan_tiles_##S(float* x) {}\nPASS(f32)\n";
            let handed = "#define PASS(NAME) \\\n    extern \"C\" __global__ void \\\n        \
                          NAME(float* x) {}\nPASS(scan_tiles_f32)\n";
            let explicit = "extern \"C\" __global__ void \
                            __launch_bounds__(1024)\nscan_tiles_f32(float* x) {}\n";
            let longer = "extern \"C\" __global__ void multi_scan_tiles_f32(float* x) {}\n";
            for (what, source, expected) in [
                ("pasted", pasted, false),
                ("handed", handed, false),
                ("explicit", explicit, true),
                ("longer", longer, false),
            ] {
                if course::kernel_written_out(source, "scan_tiles_f32") != expected {
                    return Err(
                        format!("{what}: written_out should be {expected} for\n{source}").into()
                    );
                }
            }
            Ok(())
        })
        .cpu("kernel_from_must_name_a_chapter_of_the_family", || -> TestResult {
            let bad = course::REGISTRY.replace(
                "kernel_from = \"reduce-atomic\"",
                "kernel_from = \
                \"scan\"",
            );
            if bad == course::REGISTRY {
                return Err("course.toml has no `kernel_from = \"reduce-atomic\"` to change".into());
            }
            match course::Course::parse(&bad) {
                Err(e) if e.contains("not a chapter of family `reduction`") => Ok(()),
                other => {
                    Err(format!("a kernel_from naming another family's chapter gave {other:?}")
                        .into())
                }
            }
        })
        .nvrtc("every_step_kernel_is_an_entry_point_of_its_kernel_file", || -> TestResult {
            // The `.entry` names of each kernel file's PTX, compiled once per file.
            let mut entries: HashMap<String, Vec<String>> = HashMap::new();
            let peers: String = files("scripts/peers", "cu")
                .iter()
                .map(|p| std::fs::read_to_string(p).unwrap_or_default())
                .collect();
            let mut problems = Vec::new();
            // PyTorch's peers have no kernel: scripts/torch_reductions.py measures them.
            for step in course::registry().steps().filter(|s| s.timed_by_tour()) {
                let kernel = &step.step.kernel;
                let found = match step.kernel_file() {
                    Some(file) => {
                        if !entries.contains_key(&file) {
                            let path = root().join("cuda").join(&file);
                            let source = KernelSource {
                                file: file.clone().leak(),
                                code: std::fs::read_to_string(&path)?.leak(),
                            };
                            let image = compile(
                                &source,
                                Target::Ptx { major: 9, minor: 0 },
                                &[("BLOCK_SIZE", "256".into())],
                            )?;
                            let ptx = image.ptx_text().unwrap_or_default();
                            let names = ptx
                                .lines()
                                .filter_map(|l| l.split(".entry ").nth(1))
                                .map(|l| l.split(['(', ' ']).next().unwrap_or_default().to_string())
                                .collect();
                            entries.insert(file.clone(), names);
                        }
                        entries[&file].contains(kernel)
                    }
                    // A peer is a C function, written out or made by a macro such as
                    // SEED_PEER(naive, ...).
                    None => {
                        peers.contains(&format!(" {kernel}("))
                            || kernel
                                .split_once('_')
                                .is_some_and(|(_, rest)| peers.contains(&format!("PEER({rest},")))
                    }
                };
                if !found {
                    let file = step
                        .kernel_file()
                        .map_or("scripts/peers/".to_string(), |f| format!("cuda/{f}"));
                    problems.push(format!(
                        "{}/{}: no kernel `{kernel}` in {file}",
                        step.crate_name,
                        step.name()
                    ));
                }
            }
            if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
        })
        .run()
}
