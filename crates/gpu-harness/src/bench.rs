//! Bench helpers: criterion timed by CUDA events, the copy roof in the same run, and a stable
//! results file the book's tables and charts are drawn from.
//!
//! A bench file (`harness = false`) looks like:
//!
//! ```text
//! fn main() -> std::process::ExitCode {
//!     gpu_harness::bench::run("reduce-multi-level", |bench| {
//!         let mut reducer = MultiLevel::<f32>::new(bench.device())?;
//!         for &n in gpu_harness::bench::SIZES_1D {
//!             let input = bench.random_f32(n)?;
//!             reducer.reserve(n)?; // allocate outside the timed calls
//!             bench.case("multi-level", n, 4 * n as u64 + 4, || reducer.queue(ReduceOp::Sum, input.as_view()))?;
//!         }
//!         Ok(())
//!     })
//! }
//! ```
//!
//! Host-finished ladder steps need one line per step: [`crate::reduction::bench_step`].
//!
//! Each case is timed twice: by criterion (`iter_custom`, device time from CUDA events, throughput
//! in decimal bytes, so its report shows GB/s), and by [`measure::median_ms`] for the results file,
//! because criterion keeps its own numbers private. Every size gets a `copy` case first: a
//! device-to-device copy of the same input, the roof line that size is compared with.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::{Device, DeviceBuffer, DeviceFacts, GpuError, Result, measure};

/// The sizes of 1-D benches: 2^20 (4 MiB of f32, inside the L2, launch cost shows), 2^24 (64 MiB)
/// and 2^28 (1 GiB, far beyond the L2: DRAM bandwidth).
pub const SIZES_1D: &[usize] = &[1 << 20, 1 << 24, 1 << 28];

/// Samples per case for the results file's median.
const SAMPLES: usize = 15;

/// One measured case: a step of a technique at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// The step's name (`copy` for the roof line).
    pub step: String,
    /// Number of elements.
    pub n: u64,
    /// Bytes the step must move: each input read once, each output written once.
    pub bytes: u64,
    /// Median device time of one call, in milliseconds.
    pub median_ms: f64,
    /// Effective bandwidth, `bytes / median time`, in GB/s (10^9 B/s).
    pub gbs: f64,
    /// The copy roof at the same size, measured in the same run, in GB/s.
    pub copy_gbs: f64,
}

/// The results file of one bench run: `measurements/<technique>.json` under criterion's home.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    pub technique: String,
    /// UTC date of the run, `YYYY-MM-DD`.
    pub date: String,
    pub device: DeviceFacts,
    /// Theoretical DRAM bandwidth from the memory clock and bus width, in GB/s.
    pub theoretical_gbs: Option<f64>,
    pub records: Vec<BenchRecord>,
}

/// A bench run in progress: the device, criterion, and what has been measured so far.
pub struct BenchRun {
    technique: String,
    device: Device,
    criterion: Criterion,
    /// Whether this is a real `--bench` run (criterion's test mode runs each case once, unmeasured).
    measuring: bool,
    copy_roof: BTreeMap<u64, f64>,
    records: Vec<BenchRecord>,
}

/// Runs the benches of `technique`. With no GPU it says so and succeeds (fails with
/// `CUDA_REQUIRED=1`); on any other error it reports it and fails.
pub fn run(technique: &str, body: impl FnOnce(&mut BenchRun) -> Result<()>) -> ExitCode {
    let device = match Device::shared() {
        Ok(device) => device,
        Err(e) if e.is_unavailable() && std::env::var("CUDA_REQUIRED").as_deref() != Ok("1") => {
            println!("{technique}: benches skipped: {e}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{technique}: cannot run benches: {e}");
            return ExitCode::FAILURE;
        }
    };
    if device.is_simulated() {
        println!("{technique}: benches skipped: the CPU simulator runs kernels but does not time them");
        return ExitCode::SUCCESS;
    }
    let mut bench = BenchRun {
        technique: technique.to_string(),
        device,
        criterion: Criterion::default().configure_from_args(),
        measuring: std::env::args().any(|a| a == "--bench"),
        copy_roof: BTreeMap::new(),
        records: Vec::new(),
    };
    let outcome = body(&mut bench).and_then(|()| bench.write_results());
    bench.criterion.final_summary();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{technique}: bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

impl BenchRun {
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// `n` floats uniform in [-1, 1) from a fixed seed, on the device (never zeros: they can hide
    /// unwritten outputs and run faster than real data).
    pub fn random_f32(&self, n: usize) -> Result<DeviceBuffer<f32>> {
        let mut rng = SmallRng::seed_from_u64(0x5eed_0000 + n as u64);
        let host: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        self.device.upload(&host)
    }

    /// Benchmarks `work` (which queues one call of the step on the device) as step `step` at size
    /// `n`, moving `bytes` bytes. The copy roof for `input_bytes = 4 * n` is measured first, once
    /// per size.
    pub fn case(&mut self, step: &str, n: usize, bytes: u64, mut work: impl FnMut() -> Result<()>) -> Result<()> {
        let n64 = n as u64;
        if !self.copy_roof.contains_key(&n64) {
            self.measure_copy_roof(n)?;
        }
        let copy_gbs = self.copy_roof[&n64];
        self.bench(step, n, bytes, &mut work)?;
        if self.measuring {
            let median_ms = measure::median_ms(&self.device, SAMPLES, &mut work)?;
            let gbs = measure::gigabytes_per_second(bytes, median_ms);
            self.records.push(BenchRecord { step: step.into(), n: n64, bytes, median_ms, gbs, copy_gbs });
        }
        Ok(())
    }

    fn measure_copy_roof(&mut self, n: usize) -> Result<()> {
        let source = self.random_f32(n)?;
        let mut destination = self.device.alloc::<f32>(n)?;
        let device = self.device.clone();
        let bytes = 2 * 4 * n as u64;
        let mut copy = || device.copy(source.as_view(), &mut destination);
        self.bench("copy", n, bytes, &mut copy)?;
        let median_ms = measure::median_ms(&self.device, SAMPLES, &mut copy)?;
        let gbs = measure::gigabytes_per_second(bytes, median_ms);
        self.copy_roof.insert(n as u64, gbs);
        if self.measuring {
            let record = BenchRecord { step: "copy".into(), n: n as u64, bytes, median_ms, gbs, copy_gbs: gbs };
            self.records.push(record);
        }
        Ok(())
    }

    /// The criterion part: a group per size, device time from CUDA events.
    fn bench(&mut self, step: &str, n: usize, bytes: u64, work: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let device = self.device.clone();
        let mut failure = None;
        let mut group = self.criterion.benchmark_group(format!("{}/{}", self.technique, size_label(n)));
        group.throughput(Throughput::BytesDecimal(bytes));
        group.bench_function(step, |b| {
            b.iter_custom(|iters| {
                let timed = device.time_ms(|| (0..iters).try_for_each(|_| work()));
                match timed {
                    Ok(ms) => Duration::from_secs_f64(ms / 1e3),
                    Err(e) => {
                        failure.get_or_insert(e);
                        Duration::from_nanos(1)
                    }
                }
            })
        });
        group.finish();
        failure.map_or(Ok(()), Err)
    }

    fn write_results(&self) -> Result<()> {
        if self.records.is_empty() {
            return Ok(());
        }
        let facts = self.device.facts().clone();
        let results = BenchResults {
            technique: self.technique.clone(),
            date: utc_date_today(),
            theoretical_gbs: facts.theoretical_bandwidth_gbs(),
            device: facts,
            records: self.records.clone(),
        };
        println!("\n{}", summary_table(&results));
        let path = results_dir().join(format!("{}.json", self.technique));
        let text = serde_json::to_string_pretty(&results).map_err(|e| GpuError::BadInput(e.to_string()))?;
        std::fs::create_dir_all(path.parent().unwrap_or(&path))
            .and_then(|()| std::fs::write(&path, text + "\n"))
            .map_err(|e| GpuError::BadInput(format!("cannot write {}: {e}", path.display())))?;
        println!("results written to {}", path.display());
        Ok(())
    }
}

/// `2^k` for powers of two, else the number.
pub fn size_label(n: usize) -> String {
    if n.is_power_of_two() { format!("2^{}", n.trailing_zeros()) } else { n.to_string() }
}

/// A plain-text table of a results file: step, n, time, GB/s, % of copy.
pub fn summary_table(results: &BenchResults) -> String {
    let mut out = format!(
        "{} on {} (driver {}, CUDA {}, NVRTC {}){}\n",
        results.technique,
        results.device.name,
        results.device.driver_release.as_deref().unwrap_or("?"),
        results.device.driver_cuda_version,
        results.device.nvrtc_version,
        results.theoretical_gbs.map(|g| format!(", theoretical {g:.0} GB/s")).unwrap_or_default()
    );
    out += &format!("{:<14} {:>6} {:>11} {:>9} {:>10}\n", "step", "n", "time (ms)", "GB/s", "% of copy");
    for r in &results.records {
        out += &format!(
            "{:<14} {:>6} {:>11.4} {:>9.1} {:>9.1}%\n",
            r.step,
            size_label(r.n as usize),
            r.median_ms,
            r.gbs,
            100.0 * r.gbs / r.copy_gbs
        );
    }
    out
}

/// Where results files go: `$CRITERION_HOME/measurements`, else `<target>/criterion/measurements`.
pub fn results_dir() -> PathBuf {
    let home = std::env::var_os("CRITERION_HOME").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target")))
            .join("criterion")
    });
    home.join("measurements")
}

/// Today's UTC date as `YYYY-MM-DD` (civil-from-days on the Unix day count).
fn utc_date_today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    let days = (secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_labels() {
        assert_eq!(size_label(1 << 28), "2^28");
        assert_eq!(size_label(1000), "1000");
    }

    #[test]
    fn date_is_well_formed() {
        let date = utc_date_today();
        assert_eq!(date.len(), 10);
        assert!(date.starts_with("20"));
    }
}
