//! Charts: what they draw, rendered from made-up bars (so these tests do not depend on the data),
//! and the errors for what cannot be drawn.

use report::charts::{Bar, ChartError, Lines, bar_chart};

fn bar(label: &str, gbs: f64, roof: &str, roof_gbs: f64) -> Bar {
    Bar { label: label.to_string(), gbs, roof: roof.to_string(), roof_gbs }
}

const LINES: Lines = Lines { read_gbs: 4700.0, copy_gbs: 4200.0, peak_gbs: Some(4800.0) };

fn ladder() -> Vec<Bar> {
    ["naive", "strided-index", "interleaved", "first-add", "grid-stride", "unroll-last-warp", "shuffle-vec4"]
        .iter()
        .enumerate()
        .map(|(i, name)| bar(name, 400.0 + 650.0 * i as f64, "read", 4700.0))
        .collect()
}

#[test]
fn charts_name_every_step_value_and_line() {
    let bars = ladder();
    let svg = bar_chart("Reduction, every step at 2^28, on NVIDIA H200", &bars, LINES).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("Reduction, every step at 2^28, on NVIDIA H200"));
    for line in ["read roof", "copy roof", "theoretical peak", "4700 GB/s", "4200 GB/s", "4800 GB/s"] {
        assert!(svg.contains(line), "no {line}");
    }
    for bar in &bars {
        for piece in bar.label.split_inclusive('-') {
            assert!(svg.contains(piece), "no step {}", bar.label);
        }
        assert!(svg.contains(&format!("{:.0} GB/s", bar.gbs)), "no value of {}", bar.label);
    }
}

#[test]
fn bars_show_their_share_of_their_own_roof() {
    let bars = [bar("sum", 4512.0, "read", 4700.0), bar("scan", 3360.0, "copy", 4200.0)];
    let svg = bar_chart("t", &bars, LINES).unwrap();
    assert!(svg.contains("96% of read"), "{svg}");
    assert!(svg.contains("80% of copy"), "{svg}");
}

#[test]
fn rendering_is_deterministic() {
    let bars = ladder();
    assert_eq!(bar_chart("t", &bars, LINES).unwrap(), bar_chart("t", &bars.clone(), LINES).unwrap());
}

#[test]
fn the_background_is_an_opaque_white_rectangle() {
    let svg = bar_chart("t", &ladder(), LINES).unwrap();
    assert!(svg.contains(r##"<rect x="0" y="0" width="800" height="420" opacity="1" fill="#FFFFFF""##), "{svg}");
}

#[test]
fn without_a_peak_there_is_no_peak_line() {
    let svg = bar_chart("t", &ladder(), Lines { peak_gbs: None, ..LINES }).unwrap();
    assert!(!svg.contains("theoretical peak"));
}

#[test]
fn what_cannot_be_drawn_is_an_error() {
    assert_eq!(bar_chart("t", &[], LINES), Err(ChartError::NoBars));
    let nan = [bar("nan", f64::NAN, "read", 1.0)];
    assert!(matches!(bar_chart("t", &nan, LINES), Err(ChartError::BadValue { .. })));
    let no_roof = [bar("x", 5.0, "read", 0.0)];
    assert!(matches!(bar_chart("t", &no_roof, LINES), Err(ChartError::BadValue { .. })));
    let ok = [bar("ok", 50.0, "copy", 100.0)];
    assert!(matches!(bar_chart("t", &ok, Lines { copy_gbs: 0.0, ..LINES }), Err(ChartError::BadValue { .. })));
    let infinite_peak = Lines { peak_gbs: Some(f64::INFINITY), ..LINES };
    assert!(matches!(bar_chart("t", &ok, infinite_peak), Err(ChartError::BadValue { .. })));
}

#[test]
fn text_is_escaped() {
    let svg = bar_chart("x < y & z", &[bar("a<b & c", 10.0, "read", 20.0)], LINES).unwrap();
    assert!(svg.contains("x &lt; y &amp; z"), "{svg}");
    assert!(!svg.contains("a<b"));
}

/// Writes sample charts for a person to look at: `REPORT_SAMPLES=/tmp cargo test -p report`.
#[test]
fn write_samples_when_asked() {
    let Ok(dir) = std::env::var("REPORT_SAMPLES") else { return };
    let dir = std::path::PathBuf::from(dir);
    std::fs::write(dir.join("sample-ladder.svg"), bar_chart("Sample ladder", &ladder(), LINES).unwrap()).unwrap();
    // Close lines, a bar just under them and more steps than fit comfortably.
    let crowded: Vec<Bar> = (0..14)
        .map(|i| bar(&format!("step-number-{i}"), if i == 13 { 4690.0 } else { 300.0 * i as f64 }, "read", 4750.0))
        .collect();
    let lines = Lines { read_gbs: 4750.0, copy_gbs: 4700.0, peak_gbs: Some(4800.0) };
    std::fs::write(dir.join("sample-crowded.svg"), bar_chart("Crowded: close lines", &crowded, lines).unwrap())
        .unwrap();
}
