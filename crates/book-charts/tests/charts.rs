//! Charts rendered from the committed results files in `book/src/data/`.

use std::path::PathBuf;

use book_charts::{ChartError, ladder_chart, technique_chart};
use gpu_harness::bench::BenchResults;

/// The committed H200 results.
fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../book/src/data/nvidia-h200")
}

fn load(technique: &str) -> BenchResults {
    let path = data_dir().join(format!("{technique}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every committed results file, sorted by name.
fn all_results() -> Vec<BenchResults> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("data directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no results files in {}", data_dir().display());
    paths.iter().map(|path| serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()).collect()
}

/// The sizes a results file measured, in file order, without repeats.
fn sizes(results: &BenchResults) -> Vec<u64> {
    let mut sizes = Vec::new();
    for record in &results.records {
        if !sizes.contains(&record.n) {
            sizes.push(record.n);
        }
    }
    sizes
}

#[test]
fn technique_charts_name_the_gpu_every_step_and_the_roofs() {
    for results in all_results() {
        for n in sizes(&results) {
            let svg = technique_chart(&results, n).unwrap();
            assert!(svg.starts_with("<svg"), "{}: not an SVG", results.technique);
            assert!(svg.contains(&results.device.name), "{} at {n}: no GPU name", results.technique);
            assert!(svg.contains(&results.technique), "{} at {n}: no technique", results.technique);
            assert!(svg.contains("copy roof"), "{} at {n}: no copy roof label", results.technique);
            if results.theoretical_gbs.is_some() {
                assert!(svg.contains("theoretical peak"), "{} at {n}: no peak label", results.technique);
            }
            for record in results.records.iter().filter(|r| r.n == n && r.step != "copy") {
                // A long name may be wrapped after a hyphen; each of its pieces is in the SVG.
                for piece in record.step.split_inclusive('-') {
                    assert!(svg.contains(piece), "{} at {n}: no step {}", results.technique, record.step);
                }
                assert!(svg.contains(&format!("{:.0} GB/s", record.gbs)), "{}: no value", record.step);
            }
        }
    }
}

#[test]
fn technique_chart_title_has_the_size_as_a_power_of_two() {
    let results = load("reduce-shuffle");
    let svg = technique_chart(&results, 1 << 28).unwrap();
    assert!(svg.contains("reduce-shuffle, n = 2^28, on NVIDIA H200"), "{svg}");
    // The vector step's share of the copy roof, as the committed data has it.
    let vec4 = results.records.iter().find(|r| r.step == "shuffle-vec4" && r.n == 1 << 28).unwrap();
    let share = format!("{:.0}% of copy", 100.0 * vec4.gbs / vec4.copy_gbs);
    assert!(svg.contains(&share), "{share} not in the chart");
}

#[test]
fn rendering_is_deterministic() {
    let results = load("reduce-first-add");
    let first = technique_chart(&results, 1 << 24).unwrap();
    let second = technique_chart(&results.clone(), 1 << 24).unwrap();
    assert_eq!(first, second);

    let steps = ladder_steps();
    let first = ladder_chart(&steps, 4260.0, Some(4814.3), "Reduction ladder").unwrap();
    let second = ladder_chart(&steps, 4260.0, Some(4814.3), "Reduction ladder").unwrap();
    assert_eq!(first, second);
}

#[test]
fn the_background_is_an_opaque_white_rectangle() {
    let svg = technique_chart(&load("reduce-naive"), 1 << 28).unwrap();
    assert!(svg.contains(r##"<rect x="0" y="0" width="800" height="420" opacity="1" fill="#FFFFFF""##), "{svg}");
}

/// Every step of the ladder at 2^28, in crate order, as the summary shows it.
fn ladder_steps() -> Vec<(String, f64)> {
    let crates = ["reduce-naive", "reduce-interleaved", "reduce-first-add", "reduce-unroll", "reduce-shuffle"];
    crates
        .iter()
        .flat_map(|technique| load(technique).records)
        .filter(|r| r.n == 1 << 28 && r.step != "copy")
        .map(|r| (r.step, r.gbs))
        .collect()
}

#[test]
fn ladder_chart_shows_every_step() {
    let steps = ladder_steps();
    assert_eq!(steps.len(), 9);
    let svg = ladder_chart(&steps, 4260.5, None, "Sum of 2^28 f32 on NVIDIA H200").unwrap();
    assert!(svg.contains("Sum of 2^28 f32 on NVIDIA H200"));
    assert!(svg.contains("copy roof"));
    assert!(!svg.contains("theoretical peak"));
    for (step, _) in &steps {
        for piece in step.split_inclusive('-') {
            assert!(svg.contains(piece), "no step {step}");
        }
    }
}

#[test]
fn a_size_without_a_copy_record_is_an_error() {
    let mut results = load("reduce-naive");
    results.records.retain(|r| !(r.n == 1 << 24 && r.step == "copy"));
    assert_eq!(
        technique_chart(&results, 1 << 24),
        Err(ChartError::NoCopyRecord { technique: "reduce-naive".into(), n: 1 << 24 })
    );
    // The other sizes still render.
    assert!(technique_chart(&results, 1 << 28).is_ok());
}

#[test]
fn a_size_that_was_not_measured_is_an_error() {
    let results = load("reduce-naive");
    assert!(matches!(technique_chart(&results, 12345), Err(ChartError::NoCopyRecord { n: 12345, .. })));

    let mut copy_only = results.clone();
    copy_only.records.retain(|r| r.step == "copy");
    assert!(matches!(technique_chart(&copy_only, 1 << 20), Err(ChartError::NoSteps { .. })));
}

#[test]
fn bad_ladders_are_errors() {
    assert_eq!(ladder_chart(&[], 100.0, None, "empty"), Err(ChartError::EmptyLadder));
    let nan = [("nan".to_string(), f64::NAN)];
    assert!(matches!(ladder_chart(&nan, 100.0, None, "t"), Err(ChartError::BadValue { .. })));
    let ok = [("ok".to_string(), 50.0)];
    assert!(matches!(ladder_chart(&ok, 0.0, None, "t"), Err(ChartError::BadValue { .. })));
    assert!(matches!(ladder_chart(&ok, 100.0, Some(f64::INFINITY), "t"), Err(ChartError::BadValue { .. })));
}

#[test]
fn text_is_escaped() {
    let steps = [("a<b & c".to_string(), 10.0)];
    let svg = ladder_chart(&steps, 20.0, None, "x < y & z").unwrap();
    assert!(svg.contains("x &lt; y &amp; z"), "{svg}");
    assert!(!svg.contains("a<b"));
}

/// Writes sample charts for a person to look at: `BOOK_CHARTS_SAMPLES=/tmp cargo test -p book-charts`.
#[test]
fn write_samples_when_asked() {
    let Ok(dir) = std::env::var("BOOK_CHARTS_SAMPLES") else { return };
    let dir = PathBuf::from(dir);
    std::fs::write(dir.join("sample-chart.svg"), technique_chart(&load("reduce-shuffle"), 1 << 28).unwrap()).unwrap();
    std::fs::write(dir.join("sample-first-add.svg"), technique_chart(&load("reduce-first-add"), 1 << 20).unwrap())
        .unwrap();
    let ladder = ladder_chart(&ladder_steps(), 4260.474580325572, Some(4814.304), "Sum of 2^28 f32 on NVIDIA H200");
    std::fs::write(dir.join("sample-ladder.svg"), ladder.unwrap()).unwrap();
    // Close lines, a bar just under them and more steps than fit comfortably.
    let crowded: Vec<(String, f64)> =
        (0..14).map(|i| (format!("step-number-{i}"), if i == 13 { 4690.0 } else { 300.0 * i as f64 })).collect();
    let crowded = ladder_chart(&crowded, 4700.0, Some(4814.3), "Crowded: fourteen steps, close roof lines").unwrap();
    std::fs::write(dir.join("sample-crowded.svg"), crowded).unwrap();
}
