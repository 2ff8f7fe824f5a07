//! The book's data folder: the results files of every GPU (written by the tour through
//! [`measuring::write_results`]), with PyTorch's peers merged in, and the per-machine data files of
//! the accuracy studies and the multi-GPU runs.

use std::path::{Path, PathBuf};

use gpu_harness::Result;
use measuring::results::{Results, io_error, read_results};

/// The folder, under the data folder, of the fragments the chapters include.
pub const FRAGMENTS: &str = "measured";
/// The folder of the accuracy studies, under the book's data folder.
pub const ACCURACY: &str = "accuracy";
/// The folder of the multi-GPU measurements, under the book's data folder.
pub const MULTI_GPU: &str = "multi-gpu";
/// The folder of a GPU's steps timed natively and under an older profile ([`crate::hopper`]).
pub const HOPPER: &str = "what-hopper-buys";

/// Every results file under `data_dir` (`<gpu>/<crate>.json`), with its path, sorted by path.
pub fn load_results(data_dir: &Path) -> Result<Vec<(PathBuf, Results)>> {
    let mut all = Vec::new();
    for json in files_with_extension(data_dir, "json")? {
        let results = read_results(&json)?;
        all.push((json, results));
    }
    Ok(all)
}

/// Every GPU folder's results under `data_dir` ([`load_results`], [`results_by_gpu`]), with the
/// records of the course's torch peers read from each folder's script output
/// ([`crate::torch::merge`]): what the book and its checks show.
pub fn load_results_by_gpu(
    course: &course::Course,
    data_dir: &Path,
) -> Result<Vec<(PathBuf, Vec<Results>)>> {
    let mut gpus = results_by_gpu(&load_results(data_dir)?);
    for (folder, results) in &mut gpus {
        crate::torch::merge(course, folder, results)?;
    }
    Ok(gpus)
}

/// The results grouped by the GPU folder they are in: `(folder, its results)`, sorted by folder.
pub fn results_by_gpu(all: &[(PathBuf, Results)]) -> Vec<(PathBuf, Vec<Results>)> {
    let mut by_gpu: Vec<(PathBuf, Vec<Results>)> = Vec::new();
    for (json, results) in all {
        let folder = json.parent().map(Path::to_path_buf).unwrap_or_default();
        match by_gpu.iter_mut().find(|(f, _)| *f == folder) {
            Some((_, group)) => group.push(results.clone()),
            None => by_gpu.push((folder, vec![results.clone()])),
        }
    }
    by_gpu
}

/// Files with `extension` in the sub-folders of `dir` (one level down), sorted.
fn files_with_extension(dir: &Path, extension: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for gpu in std::fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let gpu = gpu.map_err(|e| io_error(dir, e))?.path();
        // The generated fragments, the accuracy studies, the multi-GPU sessions and the runs under
        // a profile have folders of their own.
        let not_a_gpu = gpu
            .file_name()
            .is_some_and(|n| n == FRAGMENTS || n == ACCURACY || n == MULTI_GPU || n == HOPPER);
        if !gpu.is_dir() || not_a_gpu {
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

/// The files with `extension` directly in `folder` (none when it does not exist), sorted by name,
/// each as `(its name without the extension, its text)`: the per-machine data files of the
/// accuracy studies and the multi-GPU sessions.
pub(crate) fn data_files(folder: &Path, extension: &str) -> Result<Vec<(String, String)>> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Ok(Vec::new()) };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
            let stem =
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            Ok((stem, text))
        })
        .collect()
}

/// The book's data folder in this workspace.
pub fn book_data_dir() -> PathBuf {
    measuring::workspace_root().join("book/src/data")
}
