//! Writes the PTX NVRTC emits for every kernel file in `cuda/`, for Hopper and Ampere, into a
//! folder: `cargo run -p gpu-harness --example dump_ptx -- <folder>`. Two dumps, before and after
//! an edit that should not change the code (a comment, a reformat), compare with
//! `diff -r <(...) <(...)` after dropping the `.loc` and `.file` lines, which carry source lines.

use std::path::PathBuf;

use gpu_harness::KernelSource;
use gpu_harness::compile::{Target, compile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).ok_or("usage: dump_ptx <folder>")?);
    std::fs::create_dir_all(&out)?;
    let cuda = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../cuda");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&cuda)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    paths.sort();
    for path in paths {
        let file = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let source = KernelSource { file: file.clone().leak(), code: std::fs::read_to_string(&path)?.leak() };
        for (major, minor) in [(9, 0), (8, 0)] {
            let image = compile(&source, Target::Ptx { major, minor }, &[])?;
            let ptx = image.ptx_text().ok_or("no PTX text")?;
            std::fs::write(out.join(format!("{file}.sm{major}{minor}.ptx")), ptx)?;
        }
    }
    Ok(())
}
