//! What the tour prints and writes: the tables per technique and size, the header, and the
//! results files in the book's data format. Pure functions of the measurements, tested without a
//! GPU.

use std::fmt::Write as _;

use gpu_harness::DeviceFacts;
use gpu_harness::bench::{BenchRecord, BenchResults, size_label};
use gpu_harness::measure::gigabytes_per_second;

use crate::steps::Check;

/// The step name of a size's copy roof in a results file, as the benches write it.
const COPY_STEP: &str = "copy";

/// Bytes moved and median device time of one call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub bytes: u64,
    pub median_ms: f64,
}

impl Timing {
    pub fn gbs(&self) -> f64 {
        gigabytes_per_second(self.bytes, self.median_ms)
    }
}

/// What the tour found for one step at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub technique: &'static str,
    pub step: &'static str,
    /// Whether the step is on the ladder (only ladder steps get speedups).
    pub on_ladder: bool,
    pub n: usize,
    /// `None` when the step could not be timed.
    pub timing: Option<Timing>,
    pub check: Check,
}

/// A step's speedups: over the previous ladder step, and over the first, at the same size.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Speedups {
    pub step: Option<f64>,
    pub cumulative: Option<f64>,
}

/// The speedups of each of `outcomes` (one size, in ladder order). Steps without a time, and steps
/// off the ladder, get none and are skipped as the "previous" step.
pub fn speedups(outcomes: &[Outcome]) -> Vec<Speedups> {
    let mut first_ms = None;
    let mut previous_ms = None;
    outcomes
        .iter()
        .map(|o| {
            let Some(timing) = o.timing.filter(|_| o.on_ladder) else { return Speedups::default() };
            let ms = timing.median_ms;
            let first = *first_ms.get_or_insert(ms);
            let speedups = Speedups { step: Some(previous_ms.unwrap_or(ms) / ms), cumulative: Some(first / ms) };
            previous_ms = Some(ms);
            speedups
        })
        .collect()
}

/// The first ladder step with a time among `outcomes`: what cumulative speedups compare with.
fn first_timed(outcomes: &[Outcome]) -> Option<&'static str> {
    outcomes.iter().find(|o| o.on_ladder && o.timing.is_some()).map(|o| o.step)
}

/// The header: the GPU and its software, the theoretical bandwidth, and the copy roof per size.
pub fn header(facts: &DeviceFacts, roofs: &[(usize, f64)]) -> String {
    let mut line = format!(
        "{} ({} SMs, compute capability {}.{}), driver {}, CUDA {}, NVRTC {}",
        facts.name,
        facts.multiprocessors,
        facts.compute_capability.0,
        facts.compute_capability.1,
        facts.driver_release.as_deref().unwrap_or("?"),
        facts.driver_cuda_version,
        facts.nvrtc_version
    );
    match facts.theoretical_bandwidth_gbs() {
        Some(peak) => {
            let _ = write!(line, "; theoretical bandwidth {peak:.0} GB/s");
        }
        None => line += "; theoretical bandwidth unknown",
    }
    let roofs: Vec<String> = roofs.iter().map(|(n, gbs)| format!("{} {gbs:.0} GB/s", size_label(*n))).collect();
    if !roofs.is_empty() {
        let _ = write!(line, "\ncopy roof (device-to-device copy, read + write): {}", roofs.join(", "));
    }
    line
}

/// The table of one technique at size `n`: its steps' time, GB/s, % of copy, speedups and check.
/// `at_n` holds every step measured at `n` so far, in ladder order (the speedups need the steps
/// of earlier techniques); failed checks are spelled out under the table.
pub fn technique_table(technique: &str, n: usize, copy_gbs: f64, at_n: &[Outcome]) -> String {
    let first = first_timed(at_n).unwrap_or("-");
    let mut out =
        format!("{technique}, n = {} (copy roof {copy_gbs:.0} GB/s; cumulative speedup over {first})\n", size_label(n));
    out += "  step              time (ms)     GB/s  % of copy  step speedup  cumulative  check\n";
    let speedups = speedups(at_n);
    let mut failures = String::new();
    for (o, s) in at_n.iter().zip(&speedups).filter(|(o, _)| o.technique == technique) {
        let (ms, gbs, percent) = match o.timing {
            Some(t) => (
                format!("{:.4}", t.median_ms),
                format!("{:.1}", t.gbs()),
                format!("{:.1}%", 100.0 * t.gbs() / copy_gbs),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let times = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}x"));
        let _ = writeln!(
            out,
            "  {:<16} {ms:>10} {gbs:>8} {percent:>10} {:>13} {:>11}  {}",
            o.step,
            times(s.step),
            times(s.cumulative),
            o.check.label()
        );
        if let Some(message) = o.check.message() {
            let _ = writeln!(failures, "  {}: {}", o.step, message.replace('\n', "\n    "));
        }
    }
    out + &failures
}

/// The results file of `technique`, in the format the benches write: per size, the `copy` record
/// first, then each step whose check passed (a wrong or failed step is not recorded). `None` when
/// nothing of `technique` was recorded.
pub fn bench_results(
    technique: &str,
    facts: &DeviceFacts,
    date: &str,
    roofs: &[(usize, f64)],
    outcomes: &[Outcome],
) -> Option<BenchResults> {
    let mut records = Vec::new();
    for &(n, copy_gbs) in roofs {
        let steps: Vec<BenchRecord> = outcomes
            .iter()
            .filter(|o| o.technique == technique && o.n == n && o.check.passed())
            .filter_map(|o| {
                let t = o.timing?;
                let (step, n) = (o.step.to_string(), n as u64);
                Some(BenchRecord { step, n, bytes: t.bytes, median_ms: t.median_ms, gbs: t.gbs(), copy_gbs })
            })
            .collect();
        if !steps.is_empty() {
            records.push(copy_record(n, copy_gbs));
            records.extend(steps);
        }
    }
    if records.is_empty() {
        return None;
    }
    Some(BenchResults {
        technique: technique.to_string(),
        date: date.to_string(),
        device: facts.clone(),
        theoretical_gbs: facts.theoretical_bandwidth_gbs(),
        records,
    })
}

/// A results file's text, as the benches write it: pretty JSON and a final newline.
pub fn results_json(results: &BenchResults) -> serde_json::Result<String> {
    Ok(serde_json::to_string_pretty(results)? + "\n")
}

/// The `copy` record of size `n`: a copy of `4 n` bytes reads and writes `8 n`.
fn copy_record(n: usize, gbs: f64) -> BenchRecord {
    let bytes = 2 * 4 * n as u64;
    let median_ms = bytes as f64 / (gbs * 1e9) * 1e3;
    BenchRecord { step: COPY_STEP.into(), n: n as u64, bytes, median_ms, gbs, copy_gbs: gbs }
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
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    utc_date(since_epoch.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> DeviceFacts {
        DeviceFacts {
            name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            max_threads_per_multiprocessor: 2048,
            l2_cache_bytes: 60 << 20,
            memory_bytes: 140 << 30,
            memory_clock_mhz: Some(3201.0),
            memory_bus_bits: Some(6016),
            driver_cuda_version: "13.0".into(),
            driver_release: Some("580.159.04".into()),
            nvrtc_version: "13.0".into(),
        }
    }

    fn outcome(technique: &'static str, step: &'static str, n: usize, ms: Option<f64>, check: Check) -> Outcome {
        let timing = ms.map(|median_ms| Timing { bytes: 4 * n as u64, median_ms });
        Outcome { technique, step, on_ladder: true, n, timing, check }
    }

    /// Four steps at 2^20: naive 4 ms, strided 2 ms, interleaved failed to run, first-add 1 ms.
    fn fake_run() -> Vec<Outcome> {
        let n = 1 << 20;
        vec![
            outcome("reduce-naive", "naive", n, Some(4.0), Check::Passed),
            outcome("reduce-interleaved", "strided-index", n, Some(2.0), Check::Passed),
            outcome("reduce-interleaved", "interleaved", n, None, Check::Error("launch failed".into())),
            outcome("reduce-first-add", "first-add", n, Some(1.0), Check::Wrong("got 3, reference 4\n(seed 7)".into())),
        ]
    }

    #[test]
    fn speedups_skip_steps_without_a_time() {
        let s = speedups(&fake_run());
        assert_eq!(s[0], Speedups { step: Some(1.0), cumulative: Some(1.0) });
        assert_eq!(s[1], Speedups { step: Some(2.0), cumulative: Some(2.0) });
        assert_eq!(s[2], Speedups::default());
        assert_eq!(s[3], Speedups { step: Some(2.0), cumulative: Some(4.0) });
    }

    #[test]
    fn extras_get_no_speedup_and_are_not_the_previous_step() {
        let mut run = fake_run();
        run.insert(
            2,
            Outcome { on_ladder: false, ..outcome("reduce-interleaved", "rows", 1 << 20, Some(0.5), Check::Passed) },
        );
        let s = speedups(&run);
        assert_eq!(s[2], Speedups::default());
        assert_eq!(s[4], Speedups { step: Some(2.0), cumulative: Some(4.0) });
    }

    #[test]
    fn table_of_one_technique() {
        // 4 MiB in 2 ms is 2.1 GB/s; the copy roof is 4.2 GB/s here, so 50%.
        let table = technique_table("reduce-interleaved", 1 << 20, 4.194304, &fake_run());
        let expected = "\
reduce-interleaved, n = 2^20 (copy roof 4 GB/s; cumulative speedup over naive)
  step              time (ms)     GB/s  % of copy  step speedup  cumulative  check
  strided-index        2.0000      2.1      50.0%         2.00x       2.00x  ok
  interleaved               -        -          -             -           -  ERROR
  interleaved: launch failed
";
        assert_eq!(table, expected);
    }

    #[test]
    fn table_spells_out_a_wrong_result() {
        let table = technique_table("reduce-first-add", 1 << 20, 4.194304, &fake_run());
        assert!(table.contains("  first-add            1.0000      4.2     100.0%         2.00x       4.00x  WRONG\n"));
        assert!(table.ends_with("  first-add: got 3, reference 4\n    (seed 7)\n"), "{table}");
    }

    #[test]
    fn header_names_the_gpu_software_peak_and_roofs() {
        let text = header(&facts(), &[(1 << 20, 2820.4), (1 << 28, 4230.8)]);
        assert_eq!(
            text,
            "NVIDIA H200 (132 SMs, compute capability 9.0), driver 580.159.04, CUDA 13.0, NVRTC 13.0; \
             theoretical bandwidth 4814 GB/s\n\
             copy roof (device-to-device copy, read + write): 2^20 2820 GB/s, 2^28 4231 GB/s"
        );
    }

    #[test]
    fn results_hold_copy_then_passed_steps_per_size() {
        let mut run = fake_run();
        run.push(outcome("reduce-interleaved", "strided-index", 1 << 24, Some(10.0), Check::Passed));
        let roofs = [(1 << 20, 4.194304), (1 << 24, 3000.0)];
        let results = bench_results("reduce-interleaved", &facts(), "2026-01-02", &roofs, &run);
        let Some(results) = results else { panic!("no results") };
        let steps: Vec<(&str, u64)> = results.records.iter().map(|r| (r.step.as_str(), r.n)).collect();
        assert_eq!(
            steps,
            [("copy", 1 << 20), ("strided-index", 1 << 20), ("copy", 1 << 24), ("strided-index", 1 << 24)]
        );
        let copy = &results.records[0];
        assert_eq!(copy.bytes, 8 << 20);
        assert!((copy.median_ms - 2.0).abs() < 1e-12, "{}", copy.median_ms);
        assert_eq!(copy.copy_gbs, copy.gbs);
        assert_eq!(results.records[3].copy_gbs, 3000.0);
        assert_eq!(results.theoretical_gbs, facts().theoretical_bandwidth_gbs());
        // A technique whose only step failed writes nothing.
        assert_eq!(bench_results("reduce-first-add", &facts(), "2026-01-02", &roofs, &run), None);
    }

    #[test]
    fn results_round_trip_as_bench_results() {
        let roofs = [(1 << 20, 4.194304)];
        let Some(results) = bench_results("reduce-naive", &facts(), "2026-01-02", &roofs, &fake_run()) else {
            panic!("no results")
        };
        let text = results_json(&results).unwrap_or_else(|e| panic!("{e}"));
        let back: BenchResults = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(back, results);
        assert_eq!(back.date, "2026-01-02");
        assert_eq!(back.records.len(), 2);
    }

    #[test]
    fn slugs() {
        assert_eq!(gpu_slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(gpu_slug("NVIDIA GeForce RTX 4090 (MIG 1g.10gb)"), "nvidia-geforce-rtx-4090-mig-1g-10gb");
        assert_eq!(gpu_slug("  "), "gpu");
    }

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_709_164_800), "2024-02-29");
        assert_eq!(utc_date(1_735_689_599), "2024-12-31");
        assert_eq!(utc_date(1_735_689_600), "2025-01-01");
        assert_eq!(utc_date(4_107_542_400), "2100-03-01");
        assert_eq!(utc_date_today().len(), 10);
    }
}
