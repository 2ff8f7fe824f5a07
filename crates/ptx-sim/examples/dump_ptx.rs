//! Writes the PTX of every `cuda/*.cu` to the directory given as the first argument, for Hopper
//! (`<file>.ptx`), Ampere (`<file>.sm80.ptx`) and Turing (`<file>.sm75.ptx`: `ptxas -arch=sm_75 -v`
//! on a machine with the CUDA toolkit says what each kernel spills on a T4). Two dumps, before and
//! after an edit that should not change the code (a comment, a reformat), are the same but for
//! their `.loc` and `.file` lines, which carry source lines.
use gpu_harness::KernelSource;
use gpu_harness::compile::{Target, compile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).ok_or("usage: dump_ptx <dir>")?;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cuda");
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "cu") {
            continue;
        }
        let file: &'static str =
            path.file_name().ok_or("name")?.to_string_lossy().into_owned().leak();
        let code: &'static str = std::fs::read_to_string(&path)?.leak();
        let defines = [("BLOCK_SIZE", "256".to_string())];
        for (major, minor, suffix) in [(9, 0, ""), (8, 0, ".sm80"), (7, 5, ".sm75")] {
            let image =
                compile(&KernelSource { file, code }, Target::Ptx { major, minor }, &defines)?;
            let text = String::from_utf8_lossy(&image.bytes).trim_end_matches('\0').to_string();
            std::fs::write(std::path::Path::new(&out).join(format!("{file}{suffix}.ptx")), text)?;
        }
    }
    Ok(())
}
