//! The results format: one file per crate and GPU, written by the tour into
//! `book/src/data/<gpu>/<crate>.json` and by a crate's bench into `target/criterion/measurements/`,
//! through the same [`write_results`], and read back by [`read_results`].

use std::path::{Path, PathBuf};

use gpu_harness::{DeviceFacts, GpuError, Result};
use serde::{Deserialize, Serialize};

/// Every measurement of one crate's steps on one GPU, in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The crate whose steps these are (`reduction` for the family's peers).
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// The family, e.g. `reduction`.
    pub family: String,
    /// UTC date of the run, `YYYY-MM-DD`.
    pub date: String,
    pub device: DeviceFacts,
    /// Theoretical DRAM bandwidth from the memory clock and bus width, in GB/s.
    pub theoretical_gbs: Option<f64>,
    pub records: Vec<Record>,
}

/// One step measured at one case, with the roofs of that case measured in the same run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub step: String,
    /// The case's label, e.g. `2^28` or `16384x16384`.
    pub case: String,
    /// Elements of the input.
    pub n: u64,
    /// Bytes the step must move: each input read once, each output written once.
    pub bytes: u64,
    /// Median device time of one call, in milliseconds.
    pub median_ms: f64,
    /// Effective bandwidth, `bytes / median time`, in GB/s (10^9 B/s).
    pub gbs: f64,
    /// `read` (the step only reads: its roof is the read roof) or `copy` (it reads and writes).
    pub roof: String,
    /// The copy roof of this case in the same run (bytes read + written), in GB/s.
    pub copy_gbs: f64,
    /// The read roof of this case in the same run, in GB/s.
    pub read_gbs: f64,
}

impl Record {
    /// The bandwidth of the roof this step is compared with.
    pub fn roof_gbs(&self) -> f64 {
        if self.roof == "read" { self.read_gbs } else { self.copy_gbs }
    }

    /// Percent of the step's own roof.
    pub fn percent_of_roof(&self) -> f64 {
        100.0 * self.gbs / self.roof_gbs()
    }

    /// Percent of the copy roof (how peers are quoted).
    pub fn percent_of_copy(&self) -> f64 {
        100.0 * self.gbs / self.copy_gbs
    }
}

impl Results {
    /// The record of `step` at `case`, if measured.
    pub fn record(&self, step: &str, case: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.step == step && r.case == case)
    }

    /// The cases measured, in the order first met.
    pub fn cases(&self) -> Vec<&str> {
        let mut cases: Vec<&str> = Vec::new();
        for record in &self.records {
            if !cases.contains(&record.case.as_str()) {
                cases.push(&record.case);
            }
        }
        cases
    }
}

/// The results file's text: pretty JSON and a final newline.
pub fn results_json(results: &Results) -> String {
    // Plain data with string keys: serialisation cannot fail.
    serde_json::to_string_pretty(results).unwrap_or_default() + "\n"
}

/// Writes `results` to `<folder>/<crate>.json`, creating the folder; returns the path.
pub fn write_results(folder: &Path, results: &Results) -> Result<PathBuf> {
    let path = folder.join(format!("{}.json", results.crate_name));
    std::fs::create_dir_all(folder)
        .and_then(|()| std::fs::write(&path, results_json(results)))
        .map_err(|e| io_error(&path, e))?;
    Ok(path)
}

/// Reads one results file.
pub fn read_results(path: &Path) -> Result<Results> {
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
    serde_json::from_str(&text)
        .map_err(|e| GpuError::BadInput(format!("{} is not a results file: {e}", path.display())))
}

/// An I/O error on `path`, as the harness's error type.
pub fn io_error(path: &Path, e: std::io::Error) -> GpuError {
    GpuError::BadInput(format!("{}: {e}", path.display()))
}

/// The folder name of a GPU's results: its name lower-cased, each run of other characters than
/// ASCII letters and digits turned into one `-` (`NVIDIA H200` becomes `nvidia-h200`).
pub fn gpu_slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() { "gpu".to_string() } else { slug.to_string() }
}

/// The UTC date `secs` seconds after the Unix epoch, as `YYYY-MM-DD`.
pub fn utc_date(secs: u64) -> String {
    let leap = |year: u64| (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let mut days = secs / 86_400;
    let mut year = 1970;
    while days >= if leap(year) { 366 } else { 365 } {
        days -= if leap(year) { 366 } else { 365 };
        year += 1;
    }
    let february = if leap(year) { 29 } else { 28 };
    let mut month = 1;
    for length in [31, february, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] {
        if days < length {
            break;
        }
        days -= length;
        month += 1;
    }
    format!("{year:04}-{month:02}-{:02}", days + 1)
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn utc_date_today() -> String {
    let since_epoch =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    utc_date(since_epoch.as_secs())
}

/// The workspace's root folder.
pub fn workspace_root() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    dir.canonicalize().unwrap_or(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_dates() {
        assert_eq!(gpu_slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(gpu_slug("***"), "gpu");
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_795_219_200), "2026-11-21");
    }
}
