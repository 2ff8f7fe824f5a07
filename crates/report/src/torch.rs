//! PyTorch's ops as peers: the output of `scripts/torch_reductions.py` ([`course::TORCH_SCRIPT`]),
//! committed in a GPU's folder as [`FILE`], read as records of the peers course.toml declares with
//! `torch = "<op> <type>"`, so tables and charts show them like any peer.
//!
//! The tour does not time these peers: it runs without torch. The script runs on the GPU machine
//! in the tour's session, right after it, and times each op by the tour's rule (a warm-up, batches
//! of about a millisecond timed with CUDA events, their median). Its lines give each case's time
//! and bytes; the roofs a peer is compared with are the ones the tour measured in that session at
//! the same case, on an input of as many bytes, taken from the records of the peer's crate in the
//! same folder. A line of an op no peer declares is left alone (the script also measures the ops of
//! chapters still being written); a folder without the file has no torch records.

use std::path::Path;

use course::{Course, StepRef};
use gpu_harness::GpuError;
use gpu_harness::measure::gigabytes_per_second;

use measuring::results::{Record, Results, io_error};

/// The script's output in a GPU folder.
pub const FILE: &str = "torch-reductions.txt";

/// One measurement of the script: `torch <op> <type> <case> <bytes> <ms per call>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Where it is in the file, from 1.
    pub number: usize,
    /// The op and the type, as a peer's `torch` names them: `softmax f32`.
    pub torch: String,
    /// The case's label, as course.toml writes it: `4096x2^14`.
    pub case: String,
    /// The bytes a call must move.
    pub bytes: u64,
    /// The median time of one call, in milliseconds.
    pub ms: f64,
}

/// The measurements of the script's output: blank lines and `#` lines (its header) are skipped,
/// anything else that is not a measurement is an error naming its line. The case may hold a space
/// (`2^28 50%`): it is what lies between the type and the bytes.
pub fn parse(text: &str) -> Result<Vec<Line>, String> {
    let mut lines: Vec<Line> = Vec::new();
    for (index, text) in text.lines().enumerate() {
        let number = index + 1;
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        let (&["torch", op, dtype, .., bytes, ms], 6..) = (words.as_slice(), words.len()) else {
            return Err(format!(
                "line {number}: expected `torch <op> <type> <case> <bytes> <ms>`, found `{text}`"
            ));
        };
        let bytes = bytes
            .parse::<u64>()
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| format!("line {number}: `{bytes}` is not a number of bytes"))?;
        let ms = ms
            .parse::<f64>()
            .ok()
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .ok_or_else(|| format!("line {number}: `{ms}` is not a time in ms"))?;
        let line = Line {
            number,
            torch: format!("{op} {dtype}"),
            case: words[3..words.len() - 2].join(" "),
            bytes,
            ms,
        };
        if let Some(earlier) = lines.iter().find(|l| l.torch == line.torch && l.case == line.case) {
            return Err(format!(
                "line {number}: {} at {} again (line {})",
                line.torch, line.case, earlier.number
            ));
        }
        lines.push(line);
    }
    Ok(lines)
}

/// Reads `folder`'s [`FILE`], if there is one, into records of the course's torch peers, added to
/// the results of each peer's crate in that folder ([`merge_lines`]).
pub fn merge(course: &Course, folder: &Path, results: &mut [Results]) -> Result<(), GpuError> {
    let path = folder.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(&path, e)),
    };
    let bad = |e: String| GpuError::BadInput(format!("{}: {e}", path.display()));
    merge_lines(course, &parse(&text).map_err(bad)?, results).map_err(bad)
}

/// Adds a record for each line of a torch peer of `course` to the results of the peer's crate,
/// with the roofs of a record of that crate at the same case on an input of as many bytes. A line
/// whose case is not one of the peer's, or whose bytes are not the peer's (where its formula needs
/// only the case), is an error: the script and course.toml disagree. A line without such a record
/// (the tour did not measure that case there) gives none.
pub fn merge_lines(course: &Course, lines: &[Line], results: &mut [Results]) -> Result<(), String> {
    for peer in course.steps().filter(|s| s.torch().is_some()) {
        for line in lines.iter().filter(|l| Some(l.torch.as_str()) == peer.torch()) {
            if let Some(record) = record(&peer, line, results)? {
                if let Some(own) = results.iter_mut().find(|r| r.crate_name == peer.crate_name) {
                    own.records.push(record);
                }
            }
        }
    }
    Ok(())
}

/// The record of `line`, a measurement of `peer`, where `results` hold the roofs of its case.
fn record(peer: &StepRef, line: &Line, results: &[Results]) -> Result<Option<Record>, String> {
    let name = format!("{}/{}", peer.crate_name, peer.name());
    let Some(case) = peer.cases().iter().find(|c| c.label == line.case) else {
        let cases: Vec<&str> = peer.cases().iter().map(|c| c.label.as_str()).collect();
        return Err(format!(
            "line {}: {} at `{}`, not a case of {name} in course.toml ({})",
            line.number,
            line.torch,
            line.case,
            cases.join(", ")
        ));
    };
    // A formula with counts a step reports (batch-stats' `channels`) is not checked here.
    if let Ok(bytes) = peer.bytes(case, &[]) {
        if bytes != line.bytes {
            return Err(format!(
                "line {}: {} at {} moves {} bytes, {name} in course.toml {bytes}",
                line.number, line.torch, line.case, line.bytes
            ));
        }
    }
    let input_bytes = peer.input_bytes(case);
    let family = peer.family;
    let roofs =
        results.iter().filter(|r| r.crate_name == peer.crate_name).flat_map(|r| &r.records).find(
            |r| {
                r.case == line.case
                    && family
                        .step(&r.step)
                        .is_some_and(|s| s.timed_by_tour() && s.input_bytes(case) == input_bytes)
            },
        );
    Ok(roofs.map(|roofs| Record {
        step: peer.name().to_string(),
        case: line.case.clone(),
        n: case.n(),
        bytes: line.bytes,
        median_ms: line.ms,
        gbs: gigabytes_per_second(line.bytes, line.ms),
        roof: peer.step.moves.roof().to_string(),
        copy_gbs: roofs.copy_gbs,
        read_gbs: roofs.read_gbs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_harness::DeviceFacts;

    const OUTPUT: &str = "# torch 2.11.0+cu130 CUDA 13.0 on NVIDIA H100 80GB HBM3
torch rows f32 64x2^10 524288 0.002000
torch rows bf16 64x2^10 262144 0.001000

torch rows f32 2^10x64 524288 0.004000
torch other f32 64x2^10 524288 0.5
";

    /// A family of two steps (f32, and bf16 as an extra) and their torch peers.
    const REGISTRY: &str = r#"
[[family]]
id = "rows"
title = "Rows"
cases = ["64x2^10", "2^10x64"]
summary_case = "64x2^10"
simulator_case = "2^12"
input_bytes = "4*n"

[[family.chapter]]
crate = "rows"
title = "Rows"
file = "rows.md"

[[family.chapter.step]]
name = "fast"
kernel = "rows_fast"
about = "fast"
moves = "read-write"
bytes = "8*n"

[[family.chapter.step]]
name = "fast-bf16"
kernel = "rows_fast_bf16"
about = "fast on bf16"
moves = "read-write"
bytes = "4*n"
input_bytes = "2*n"
dtype = "bf16"
extra = true

[[family.peer]]
crate = "rows"
name = "torch-rows"
about = "torch.rows"
source = "torch.rows"
counterpart = "fast"
torch = "rows f32"
moves = "read-write"
bytes = "8*n"

[[family.peer]]
crate = "rows"
name = "torch-rows-bf16"
about = "torch.rows on bf16"
source = "torch.rows"
counterpart = "fast-bf16"
torch = "rows bf16"
moves = "read-write"
bytes = "4*n"
input_bytes = "2*n"
dtype = "bf16"
"#;

    fn device() -> DeviceFacts {
        DeviceFacts {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            max_threads_per_multiprocessor: 2048,
            l2_cache_bytes: 50 << 20,
            memory_bytes: 80 << 30,
            memory_clock_mhz: Some(2619.0),
            memory_bus_bits: Some(5120),
            driver_cuda_version: "13.0".into(),
            driver_release: Some("580.159.04".into()),
            nvrtc_version: "13.0".into(),
        }
    }

    /// The tour's record of `step` at 64x2^10, with the roofs of an input of `input_bytes`.
    fn tour_record(step: &str, bytes: u64, copy_gbs: f64) -> Record {
        Record {
            step: step.into(),
            case: "64x2^10".into(),
            n: 1 << 16,
            bytes,
            median_ms: 0.01,
            gbs: bytes as f64 / 1e7,
            roof: "copy".into(),
            copy_gbs,
            read_gbs: copy_gbs + 10.0,
        }
    }

    fn tour_results() -> Vec<Results> {
        vec![Results {
            crate_name: "rows".into(),
            family: "rows".into(),
            date: "2026-11-26".into(),
            device: device(),
            theoretical_gbs: Some(3352.0),
            records: vec![
                tour_record("fast", 1 << 19, 2900.0),
                tour_record("fast-bf16", 1 << 18, 2800.0),
            ],
        }]
    }

    #[test]
    fn the_scripts_lines_are_read_and_bad_ones_named_by_their_number() {
        let lines = parse(OUTPUT).unwrap();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[0],
            Line {
                number: 2,
                torch: "rows f32".into(),
                case: "64x2^10".into(),
                bytes: 524288,
                ms: 0.002
            }
        );
        assert_eq!((lines[2].number, lines[2].case.as_str()), (5, "2^10x64"));
        let spaced = parse("torch select f32 2^28 50% 100 1.5").unwrap();
        assert_eq!(spaced[0].case, "2^28 50%");
        for (text, error) in [
            (
                "torch rows f32 64x2^10 524288",
                "line 1: expected `torch <op> <type> <case> <bytes> <ms>`",
            ),
            ("# header\ncuda rows f32 64x2^10 524288 0.5", "line 2: expected"),
            ("torch rows f32 64x2^10 many 0.5", "line 1: `many` is not a number of bytes"),
            ("torch rows f32 64x2^10 0 0.5", "line 1: `0` is not a number of bytes"),
            ("torch rows f32 64x2^10 524288 nan", "line 1: `nan` is not a time in ms"),
            ("torch rows f32 64x2^10 524288 -1", "line 1: `-1` is not a time in ms"),
            (
                &format!("{OUTPUT}torch rows f32 64x2^10 524288 0.3"),
                "line 7: rows f32 at 64x2^10 again (line 2)",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(error), "{text:?}: {e}");
        }
    }

    #[test]
    fn each_line_of_a_declared_peer_becomes_its_record_with_the_roofs_of_its_case() {
        let course = Course::parse(REGISTRY).unwrap();
        let mut results = tour_results();
        merge_lines(&course, &parse(OUTPUT).unwrap(), &mut results).unwrap();
        let records = &results[0].records;
        // The f32 line at 2^10x64 has no tour record to take roofs from, and `other f32` no peer.
        assert_eq!(records.len(), 4, "{records:#?}");
        let f32 = results[0].record("torch-rows", "64x2^10").unwrap();
        assert_eq!(
            (f32.n, f32.bytes, f32.median_ms, f32.roof.as_str()),
            (1 << 16, 524288, 0.002, "copy")
        );
        assert!((f32.gbs - 524288.0 / 0.002 / 1e6).abs() < 1e-9);
        assert_eq!((f32.copy_gbs, f32.read_gbs), (2900.0, 2910.0), "the f32 step's roofs");
        let bf16 = results[0].record("torch-rows-bf16", "64x2^10").unwrap();
        assert_eq!(
            (bf16.copy_gbs, bf16.read_gbs),
            (2800.0, 2810.0),
            "the roofs of an input of 2n bytes"
        );
        assert!(results[0].record("torch-rows", "2^10x64").is_none());
    }

    #[test]
    fn lines_the_registry_disagrees_with_are_errors_and_no_lines_no_records() {
        let course = Course::parse(REGISTRY).unwrap();
        let mut results = tour_results();
        let unknown = parse("torch rows f32 2^6x2^10 524288 0.002").unwrap();
        let e = merge_lines(&course, &unknown, &mut results).unwrap_err();
        assert_eq!(
            e,
            "line 1: rows f32 at `2^6x2^10`, not a case of rows/torch-rows in course.toml \
             (64x2^10, 2^10x64)"
        );
        let bytes = parse("torch rows bf16 64x2^10 524288 0.002").unwrap();
        let e = merge_lines(&course, &bytes, &mut results).unwrap_err();
        assert_eq!(
            e,
            "line 1: rows bf16 at 64x2^10 moves 524288 bytes, rows/torch-rows-bf16 in course.toml \
             262144"
        );
        merge_lines(&course, &[], &mut results).unwrap();
        assert_eq!(results, tour_results());
    }

    #[test]
    fn a_folder_without_the_file_has_no_torch_records_and_one_with_it_has_them() {
        let course = Course::parse(REGISTRY).unwrap();
        let folder = std::env::temp_dir().join(format!("report-torch-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let mut results = tour_results();
        merge(&course, &folder, &mut results).unwrap();
        assert_eq!(results, tour_results());
        std::fs::write(folder.join(FILE), OUTPUT).unwrap();
        merge(&course, &folder, &mut results).unwrap();
        assert_eq!(results[0].records.len(), 4);
        std::fs::write(folder.join(FILE), "torch rows f32\n").unwrap();
        let e = merge(&course, &folder, &mut tour_results()).unwrap_err().to_string();
        assert!(e.contains(&format!("{FILE}: line 1: expected")), "{e}");
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
