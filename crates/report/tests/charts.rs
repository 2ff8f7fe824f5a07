//! Charts: what they draw, rendered from made-up bars (so these tests do not depend on the data),
//! and the errors for what cannot be drawn.

use report::charts::{Bar, ChartError, Lines, bar_chart};

fn bar(label: &str, gbs: f64, roof: &str, roof_gbs: f64) -> Bar {
    Bar::new(label, gbs, roof, roof_gbs)
}

const LINES: Lines = Lines { read_gbs: 4700.0, copy_gbs: 4200.0, peak_gbs: Some(4800.0) };

fn ladder() -> Vec<Bar> {
    [
        "naive",
        "strided-index",
        "interleaved",
        "first-add",
        "grid-stride",
        "unroll-last-warp",
        "shuffle-vec4",
    ]
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
    for line in
        ["read roof", "copy roof", "theoretical peak", "4700 GB/s", "4200 GB/s", "4800 GB/s"]
    {
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
fn the_background_is_an_opaque_white_rectangle() {
    let svg = bar_chart("t", &ladder(), LINES).unwrap();
    assert!(
        svg.contains(r##"<rect x="0" y="0" width="800" height="420" opacity="1" fill="#FFFFFF""##),
        "{svg}"
    );
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
    assert!(matches!(
        bar_chart("t", &ok, Lines { copy_gbs: 0.0, ..LINES }),
        Err(ChartError::BadValue { .. })
    ));
    let infinite_peak = Lines { peak_gbs: Some(f64::INFINITY), ..LINES };
    assert!(matches!(bar_chart("t", &ok, infinite_peak), Err(ChartError::BadValue { .. })));
}

#[test]
fn text_is_escaped() {
    let svg = bar_chart("x < y & z", &[bar("a<b & c", 10.0, "read", 20.0)], LINES).unwrap();
    assert!(svg.contains("x &lt; y &amp; z"), "{svg}");
    assert!(!svg.contains("a<b"));
}

/// An attribute of an SVG element's opening tag, e.g. `y` of `<text x="4" y="17" ...>`.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let start =
        if tag.starts_with(&key) { 0 } else { tag.find(&format!(" {key}"))? + 1 } + key.len();
    tag[start..].split('"').next()
}

fn number(tag: &str, name: &str) -> f64 {
    attribute(tag, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number {name} in {tag}"))
}

/// The chart's texts, as (opening tag, text).
fn texts(svg: &str) -> Vec<(&str, &str)> {
    svg.split("<text ")
        .skip(1)
        .map(|rest| rest.split_once('>').unwrap())
        .map(|(tag, rest)| (tag, rest.split("</text>").next().unwrap().trim()))
        .collect()
}

/// The pixel heights of the horizontal lines drawn in `color` (a dashed line is many segments).
fn line_heights(svg: &str, color: &str) -> Vec<f64> {
    svg.split("<polyline ")
        .skip(1)
        .map(|rest| rest.split("/>").next().unwrap())
        .filter(|tag| {
            attribute(tag, "stroke") == Some(color) && attribute(tag, "stroke-width") == Some("2")
        })
        .flat_map(|tag| {
            attribute(tag, "points")
                .unwrap()
                .split_whitespace()
                .map(|p| p.split_once(',').unwrap().1)
        })
        .map(|y| y.parse().unwrap())
        .collect()
}

/// A crowded chart, checked for what a person would look for: the labels of three close lines
/// pushed apart, the label of a bar just under them lifted above them, and every step's name
/// whole under its bar however many steps there are (across in pieces, or upwards in one).
/// `REPORT_SAMPLES=/tmp cargo test -p report` also writes it (and the ladder) to look at.
#[test]
fn a_crowded_chart_keeps_its_labels_apart() {
    // Close lines, a bar just under them and more steps than fit comfortably.
    let crowded: Vec<Bar> = (0..14)
        .map(|i| {
            bar(
                &format!("step-number-{i}"),
                if i == 13 { 4690.0 } else { 300.0 * i as f64 },
                "read",
                4750.0,
            )
        })
        .collect();
    let lines = Lines { read_gbs: 4750.0, copy_gbs: 4700.0, peak_gbs: Some(4800.0) };
    let svg = bar_chart("Crowded: close lines", &crowded, lines).unwrap();
    if let Ok(dir) = std::env::var("REPORT_SAMPLES") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::write(
            dir.join("sample-ladder.svg"),
            bar_chart("Sample ladder", &ladder(), LINES).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.join("sample-crowded.svg"), &svg).unwrap();
    }
    let texts = texts(&svg);

    // The lines' labels (name over value, left-aligned right of the plot, where the legend under
    // the title is not), top to bottom: no text closer than its font size to the one above it.
    let mut labels: Vec<(f64, f64, &str)> = texts
        .iter()
        .filter(|(tag, _)| {
            attribute(tag, "text-anchor") == Some("start") && number(tag, "x") > 600.0
        })
        .map(|(tag, text)| (number(tag, "y"), number(tag, "font-size"), *text))
        .collect();
    labels.sort_by(|a, b| a.0.total_cmp(&b.0));
    let names: Vec<&str> = labels.iter().map(|l| l.2).collect();
    assert_eq!(
        names,
        ["theoretical peak", "4800 GB/s", "read roof", "4750 GB/s", "copy roof", "4700 GB/s"]
    );
    for pair in labels.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 >= pair[1].1,
            "`{}` overlaps `{}`:\n{svg}",
            pair[1].2,
            pair[0].2
        );
    }

    // The last bar's label sits above all three lines (y grows downwards; a label's y is its
    // bottom). The lines are found by the colours of their labels.
    let colors: Vec<&str> = texts
        .iter()
        .filter(|(_, text)| ["theoretical peak", "read roof", "copy roof"].contains(text))
        .map(|(tag, _)| attribute(tag, "fill").unwrap())
        .collect();
    let highest_line =
        colors.iter().flat_map(|color| line_heights(&svg, color)).fold(f64::INFINITY, f64::min);
    assert!(highest_line.is_finite(), "no lines drawn:\n{svg}");
    // Its share of its roof, and its GB/s where the slots leave room for them.
    assert!(texts.iter().any(|(_, text)| *text == "99%"), "no 99% over the last bar:\n{svg}");
    for label in ["4690 GB/s", "99%"] {
        let Some((tag, _)) = texts.iter().find(|(_, text)| *text == label) else { continue };
        assert!(
            number(tag, "y") < highest_line,
            "`{label}` is not above the lines at {highest_line}:\n{svg}"
        );
    }

    // Every step's name under its bar: the pieces in its column read as the whole name. A bar's
    // column is that of its share of its roof, the bars' centred texts with a `%`, left to right.
    let mut shares: Vec<&str> = texts
        .iter()
        .filter(|(tag, text)| attribute(tag, "text-anchor") == Some("middle") && text.contains('%'))
        .map(|(tag, _)| *tag)
        .collect();
    shares.sort_by(|a, b| number(a, "x").total_cmp(&number(b, "x")));
    assert_eq!(shares.len(), crowded.len(), "one share per bar:\n{svg}");
    for (i, (bar, share)) in crowded.iter().zip(shares).enumerate() {
        let (x, y) = (number(share, "x"), number(share, "y"));
        // Below the share, in its column: the name's pieces.
        let mut pieces: Vec<(f64, &str)> = texts
            .iter()
            .filter(|(tag, text)| {
                (number(tag, "x") - x).abs() <= 1.0 && number(tag, "y") > y && !text.contains('%')
            })
            .map(|(tag, text)| (number(tag, "y"), *text))
            .collect();
        pieces.sort_by(|a, b| a.0.total_cmp(&b.0));
        let name: String = pieces.iter().map(|p| p.1).collect();
        assert_eq!(name, bar.label, "under bar {i}:\n{svg}");
    }
}
