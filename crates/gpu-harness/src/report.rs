//! Markdown tables for the book, rendered from committed results files, so that every number in
//! the book comes from a measurement.
//!
//! Layout: `book/src/data/<gpu>/<technique>.json` (written by a bench run, see [`crate::bench`]) and,
//! beside each, `<technique>.md`, which chapters include. [`render_book_tables`]
//! (through `cargo run --release -- --charts`, the tour, which also draws the charts) regenerates the `.md` files; a
//! test checks that the committed ones are current.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::bench::{BenchRecord, BenchResults, size_label};
use crate::{GpuError, Result};

/// One line naming the GPU, its software and the date of the run.
pub fn measured_on(results: &BenchResults) -> String {
    let d = &results.device;
    let mut line = format!(
        "Measured on an {} ({} SMs, compute capability {}.{}), driver {}, CUDA {}, NVRTC {}, on {}.",
        d.name,
        d.multiprocessors,
        d.compute_capability.0,
        d.compute_capability.1,
        d.driver_release.as_deref().unwrap_or("?"),
        d.driver_cuda_version,
        d.nvrtc_version,
        results.date
    );
    if let Some(peak) = results.theoretical_gbs {
        let _ = write!(line, " Theoretical DRAM bandwidth: {peak:.0} GB/s.");
    }
    line
}

/// The chapter table of one results file: every step at every size, with the copy roof of the
/// same size from the same run.
pub fn technique_table(results: &BenchResults) -> String {
    let mut out = measured_on(results) + "\n\n";
    out += "| size | step | time (ms) | GB/s | % of copy |\n|---:|:---|---:|---:|---:|\n";
    for r in &results.records {
        let step = if r.step == "copy" { "copy (roof)".to_string() } else { format!("**{}**", r.step) };
        let _ = writeln!(
            out,
            "| {} | {} | {:.4} | {:.0} | {:.1}% |",
            size_label(r.n as usize),
            step,
            r.median_ms,
            r.gbs,
            100.0 * r.gbs / r.copy_gbs
        );
    }
    out
}

/// Every results file under `data_dir` (`<gpu>/<technique>.json`), with its path, sorted by path.
pub fn load_results(data_dir: &Path) -> Result<Vec<(PathBuf, BenchResults)>> {
    let mut all = Vec::new();
    for json in files_with_extension(data_dir, "json")? {
        let text = std::fs::read_to_string(&json).map_err(|e| io_error(&json, e))?;
        let results: BenchResults = serde_json::from_str(&text)
            .map_err(|e| GpuError::BadInput(format!("{} is not a results file: {e}", json.display())))?;
        all.push((json, results));
    }
    Ok(all)
}

/// The results files grouped by the GPU folder they are in.
pub fn results_by_gpu(all: &[(PathBuf, BenchResults)]) -> Vec<(PathBuf, Vec<BenchResults>)> {
    let mut by_gpu: Vec<(PathBuf, Vec<BenchResults>)> = Vec::new();
    for (json, results) in all {
        let folder = json.parent().map(Path::to_path_buf).unwrap_or_default();
        match by_gpu.iter_mut().find(|(f, _)| *f == folder) {
            Some((_, group)) => group.push(results.clone()),
            None => by_gpu.push((folder, vec![results.clone()])),
        }
    }
    by_gpu
}

/// Every `(path of the .md, its text)` the data folder should hold: a table per results file, and
/// per GPU folder a `reduction-summary.md` of the ladder.
pub fn render_book_tables(data_dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    let all = load_results(data_dir)?;
    let mut outputs: Vec<(PathBuf, String)> =
        all.iter().map(|(json, results)| (json.with_extension("md"), technique_table(results))).collect();
    for (folder, results) in results_by_gpu(&all) {
        if let Some(table) = ladder_table(&results) {
            outputs.push((folder.join("reduction-summary.md"), table));
        }
    }
    Ok(outputs)
}

/// Files with `extension` in the sub-folders of `dir` (one level down), sorted.
fn files_with_extension(dir: &Path, extension: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for gpu in std::fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let gpu = gpu.map_err(|e| io_error(dir, e))?.path();
        if !gpu.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&gpu).map_err(|e| io_error(&gpu, e))? {
            let file = file.map_err(|e| io_error(&gpu, e))?.path();
            if file.extension().is_some_and(|e| e == extension) {
                files.push(file);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn io_error(path: &Path, e: std::io::Error) -> GpuError {
    GpuError::BadInput(format!("{}: {e}", path.display()))
}

/// The book's data folder in this workspace.
pub fn book_data_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../book/src/data"));
    dir.canonicalize().unwrap_or(dir)
}

/// The reduction ladder in teaching order: (technique crate, step). Drives the summary table.
pub const REDUCTION_LADDER: &[(&str, &str)] = &[
    ("reduce-naive", "naive"),
    ("reduce-interleaved", "strided-index"),
    ("reduce-interleaved", "interleaved"),
    ("reduce-first-add", "first-add"),
    ("reduce-first-add", "grid-stride"),
    ("reduce-unroll", "unroll-last-warp"),
    ("reduce-unroll", "complete-unroll"),
    ("reduce-shuffle", "shuffle"),
    ("reduce-shuffle", "shuffle-vec4"),
    ("reduce-multi-level", "multi-level"),
    ("reduce-atomic", "atomic"),
    ("reduce-atomic", "last-block"),
];

/// The size the summary table compares steps at: 2^28 floats, 1 GiB, far beyond the L2.
pub const SUMMARY_SIZE: u64 = 1 << 28;

/// The ladder steps found in `results` at [`SUMMARY_SIZE`], in ladder order: (crate, step, record).
pub fn ladder_steps(results: &[BenchResults]) -> Vec<(&'static str, &'static str, &BenchRecord)> {
    REDUCTION_LADDER
        .iter()
        .filter_map(|&(technique, step)| {
            let file = results.iter().find(|r| r.technique == technique)?;
            let record = file.records.iter().find(|r| r.step == step && r.n == SUMMARY_SIZE)?;
            Some((technique, step, record))
        })
        .collect()
}

/// A Harris-style table of every ladder step found in `results` at [`SUMMARY_SIZE`]: time, GB/s,
/// % of copy, speedup over the previous step and over the first. `None` if no step is there.
pub fn ladder_table(results: &[BenchResults]) -> Option<String> {
    let rows = ladder_steps(results);
    let first = results.iter().find(|r| r.records.iter().any(|x| x.n == SUMMARY_SIZE))?;
    let (_, _, first_record) = rows.first()?;
    let first_ms = first_record.median_ms;
    let mut out = measured_on(first) + "\n\n";
    out += &format!(
        "Sum of {} floats, every step measured in one run against the copy roof of the same run.\n\n",
        size_label(SUMMARY_SIZE as usize)
    );
    out += "| step | crate | time (ms) | GB/s | % of copy | step speedup | cumulative speedup |\n";
    out += "|:---|:---|---:|---:|---:|---:|---:|\n";
    let mut previous_ms = first_ms;
    for (technique, step, r) in rows {
        let _ = writeln!(
            out,
            "| {step} | {technique} | {:.3} | {:.0} | {:.1}% | {:.2}x | {:.2}x |",
            r.median_ms,
            r.gbs,
            100.0 * r.gbs / r.copy_gbs,
            previous_ms / r.median_ms,
            first_ms / r.median_ms
        );
        previous_ms = r.median_ms;
    }
    Some(out)
}
