//! Accuracy studies: how far each way of summing lands from the exact sum as n grows, measured by
//! `cargo run --release --example accuracy -p reduce-numerics` into
//! `book/src/data/accuracy/<gpu>.json`, drawn here as line charts (relative error on a log scale
//! against log2 n) and tables.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use serde::Deserialize;

use crate::charts::{ChartError, draw_lines, drawing};
use crate::data::{ACCURACY as FOLDER, data_files};

/// Relative errors below this (0 included: an exact sum) are drawn at it.
const FLOOR: f64 = 1e-10;

/// One GPU's accuracy studies.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AccuracyFile {
    pub device: String,
    pub date: String,
    pub studies: Vec<Study>,
}

/// One input's relative errors, per way of summing.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Study {
    pub dataset: String,
    pub about: String,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Series {
    pub method: String,
    /// `(n, relative error)`.
    pub points: Vec<(u64, f64)>,
}

/// Every accuracy file under `data_dir/accuracy/`, as `(its GPU folder name, the file)`, sorted.
pub fn load_accuracy(data_dir: &Path) -> gpu_harness::Result<Vec<(String, AccuracyFile)>> {
    let folder = data_dir.join(FOLDER);
    data_files(&folder, "json")?
        .into_iter()
        .map(|(slug, text)| {
            let file: AccuracyFile = serde_json::from_str(&text).map_err(|e| {
                let path = folder.join(format!("{slug}.json"));
                gpu_harness::GpuError::BadInput(format!(
                    "{} is not an accuracy file: {e}",
                    path.display()
                ))
            })?;
            Ok((slug, file))
        })
        .collect()
}

/// A relative error as a table shows it: `exact`, or three significant digits.
pub fn format_error(error: f64) -> String {
    if error == 0.0 { "exact".to_string() } else { format!("{error:.2e}") }
}

/// A study's table: one row per n, one column per way of summing.
pub fn study_table(study: &Study) -> String {
    let mut out =
        format!("Relative error of the sum of {} ({}).\n\n| n |", study.dataset, study.about);
    for series in &study.series {
        let _ = write!(out, " {} |", series.method);
    }
    out += "\n|---:|";
    out += &"---:|".repeat(study.series.len());
    out += "\n";
    let sizes: Vec<u64> =
        study.series.first().map(|s| s.points.iter().map(|p| p.0).collect()).unwrap_or_default();
    for (row, n) in sizes.iter().enumerate() {
        let _ = write!(out, "| {} |", gpu_harness::workload::count_label(*n));
        for series in &study.series {
            let cell = series.points.get(row).map_or("-".to_string(), |p| format_error(p.1));
            let _ = write!(out, " {cell} |");
        }
        out += "\n";
    }
    out
}

/// A study's chart: relative error (log scale, exact sums drawn at 1e-10) against log2 n, a line
/// and markers per way of summing.
pub fn study_chart(study: &Study, device: &str) -> Result<String, ChartError> {
    let points = || study.series.iter().flat_map(|s| s.points.iter());
    let (Some(min_n), Some(max_n)) = (points().map(|p| p.0).min(), points().map(|p| p.0).max())
    else {
        return Err(ChartError::NoBars);
    };
    if let Some(bad) = points().find(|p| !p.1.is_finite() || p.1 < 0.0) {
        return Err(ChartError::BadValue {
            what: format!("relative error at n = {}", bad.0),
            gbs: bad.1,
        });
    }
    let largest = points().map(|p| p.1).fold(FLOOR, f64::max);
    let (x_min, x_max) = ((min_n as f64).log2(), (max_n as f64).log2());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, crate::charts::SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let title = format!("Sum of {}: relative error, on {device}", study.dataset);
        let font = |px: f64| ("sans-serif", px * 1.24).into_font();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, font(16.0))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(
                x_min - 0.5..x_max + 0.5,
                (FLOOR / 2.0..largest * 300.0).log_scale(),
            )
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc("n (log2)")
            .y_desc("relative error")
            .x_label_formatter(&|x| format!("2^{x:.0}"))
            .y_label_formatter(&|y| {
                if *y <= FLOOR * 1.01 { "exact".to_string() } else { format!("{y:.0e}") }
            })
            .label_style(font(11.0))
            .axis_desc_style(font(11.0))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(drawing)?;
        let lines: Vec<(String, Vec<(f64, f64)>)> = study
            .series
            .iter()
            .map(|series| {
                let points = series
                    .points
                    .iter()
                    .map(|&(n, error)| ((n as f64).log2(), error.max(FLOOR)))
                    .collect();
                (series.method.clone(), points)
            })
            .collect();
        draw_lines(&mut chart, &lines)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// A chart file's name: `<gpu>-<dataset>.svg`.
pub fn chart_file(slug: &str, study: &Study) -> String {
    format!("{slug}-{}.svg", study.dataset)
}
