//! Bar charts of measured bandwidth for the book, rendered as SVG strings by plotters.
//!
//! Two charts share one style:
//!
//! - [`technique_chart`]: the steps of one technique at one size, from its results file;
//! - [`ladder_chart`]: any list of steps, for a cross-technique summary.
//!
//! Each bar is a step's effective bandwidth, labelled with its GB/s and its share of the copy roof.
//! A solid line marks the copy roof and a dashed one the theoretical DRAM peak, each labelled to the
//! right of the plot.
//!
//! The output is meant to be committed and compared byte for byte with a fresh render, so it
//! depends only on the input: a fixed canvas, no dates, no locale, no fonts read at render time
//! (plotters is built without its font features; the SVG names the `sans-serif` family and the
//! reader's browser picks the face). The canvas is painted white, with dark text, so the chart
//! reads the same in the book's light and dark themes.

use gpu_harness::bench::{BenchResults, size_label};
use gpu_harness::report::{SUMMARY_SIZE, ladder_steps, load_results, render_book_tables, results_by_gpu};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Canvas size in pixels.
pub const SIZE: (u32, u32) = (800, 420);

/// The step name that marks a size's copy roof in a results file.
const COPY_STEP: &str = "copy";

/// Width of the column right of the plot that holds the roof lines' labels.
const LINE_LABEL_WIDTH: u32 = 132;
/// Height of the area under the plot that holds the (wrapped) step names.
const STEP_LABEL_HEIGHT: u32 = 48;
/// Font sizes to choose from, largest first: each survives plotters' scaling exactly (13 does not).
const FONT_SIZES: [u32; 5] = [12, 11, 10, 9, 8];
/// Font sizes of the bar labels: largest, smallest with "% of copy", smallest at all; and the
/// smallest for step names. In pixels.
const BAR_FONT_MAX: u32 = 12;
const BAR_FONT_LONG_MIN: u32 = 10;
const BAR_FONT_MIN: u32 = 8;
const STEP_FONT_MIN: u32 = 9;

const BACKGROUND: RGBColor = WHITE;
const TEXT: RGBColor = RGBColor(0x1a, 0x1a, 0x1a);
const BAR: RGBColor = RGBColor(0x3b, 0x6e, 0xa8);
const COPY_LINE: RGBColor = RGBColor(0xb3, 0x47, 0x00);
const PEAK_LINE: RGBColor = RGBColor(0x5b, 0x3a, 0x8c);
const GRID: RGBColor = RGBColor(0xe3, 0xe3, 0xe3);
const AXIS: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChartError {
    /// The results file has no `copy` record at the requested size, so there is no roof.
    #[error("{technique}: no copy record at n = {n}")]
    NoCopyRecord { technique: String, n: u64 },
    /// The results file has no step (other than `copy`) at the requested size.
    #[error("{technique}: no step measured at n = {n}")]
    NoSteps { technique: String, n: u64 },
    /// A ladder chart was asked for with no steps.
    #[error("a ladder chart needs at least one step")]
    EmptyLadder,
    /// A bandwidth that cannot be drawn: negative, NaN or infinite (or a zero copy roof).
    #[error("{what}: bandwidth {gbs} GB/s cannot be charted")]
    BadValue { what: String, gbs: f64 },
    /// plotters failed to draw (it should not, when writing to a string).
    #[error("drawing failed: {0}")]
    Drawing(String),
}

/// Every chart the book's data folder should hold, as `(path, SVG)`: per results file, its steps at
/// [`SUMMARY_SIZE`] (`<technique>.svg`, files without that size are skipped), and per GPU folder the
/// reduction ladder (`reduction-summary.svg`).
pub fn render_book_charts(data_dir: &std::path::Path) -> Result<Vec<(std::path::PathBuf, String)>, BookError> {
    let all = load_results(data_dir)?;
    let mut outputs = Vec::new();
    for (json, results) in &all {
        match technique_chart(results, SUMMARY_SIZE) {
            Ok(svg) => outputs.push((json.with_extension("svg"), svg)),
            Err(ChartError::NoCopyRecord { .. } | ChartError::NoSteps { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    for (folder, results) in results_by_gpu(&all) {
        let steps = ladder_steps(&results);
        let Some((_, _, first)) = steps.first() else { continue };
        let bars: Vec<(String, f64)> = steps.iter().map(|(_, step, r)| (step.to_string(), r.gbs)).collect();
        let gpu = &results[0].device.name;
        let title = format!("Sum of {} f32, every reduction step, on {gpu}", size_label(SUMMARY_SIZE as usize));
        let peak = results[0].theoretical_gbs;
        outputs.push((folder.join("reduction-summary.svg"), ladder_chart(&bars, first.copy_gbs, peak, &title)?));
    }
    Ok(outputs)
}

/// Everything the book's data folder should hold: the tables of `gpu_harness::report` and the charts.
pub fn render_book(data_dir: &std::path::Path) -> Result<Vec<(std::path::PathBuf, String)>, BookError> {
    let mut outputs = render_book_tables(data_dir)?;
    outputs.extend(render_book_charts(data_dir)?);
    Ok(outputs)
}

/// Why the book's tables or charts could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error(transparent)]
    Data(#[from] gpu_harness::GpuError),
    #[error(transparent)]
    Chart(#[from] ChartError),
}

/// Renders one technique's steps at size `n`: one bar per step (in the file's order), the copy roof
/// measured at that size, and the theoretical peak when the file has one.
pub fn technique_chart(results: &BenchResults, n: u64) -> Result<String, ChartError> {
    let at_n = || results.records.iter().filter(move |r| r.n == n);
    let copy = at_n()
        .find(|r| r.step == COPY_STEP)
        .ok_or_else(|| ChartError::NoCopyRecord { technique: results.technique.clone(), n })?;
    let bars: Vec<(String, f64)> = at_n().filter(|r| r.step != COPY_STEP).map(|r| (r.step.clone(), r.gbs)).collect();
    if bars.is_empty() {
        return Err(ChartError::NoSteps { technique: results.technique.clone(), n });
    }
    let title = format!("{}, n = {}, on {}", results.technique, size_label(n as usize), results.device.name);
    render(&BarChart { title: &title, bars: &bars, copy_gbs: copy.gbs, peak_gbs: results.theoretical_gbs })
}

/// Renders a cross-technique summary: one bar per `(label, GB/s)` step, in the given order, with
/// the copy roof and, when given, the theoretical peak.
pub fn ladder_chart(
    steps: &[(String, f64)],
    copy_gbs: f64,
    peak_gbs: Option<f64>,
    title: &str,
) -> Result<String, ChartError> {
    if steps.is_empty() {
        return Err(ChartError::EmptyLadder);
    }
    render(&BarChart { title, bars: steps, copy_gbs, peak_gbs })
}

/// What both charts draw.
struct BarChart<'a> {
    title: &'a str,
    bars: &'a [(String, f64)],
    copy_gbs: f64,
    peak_gbs: Option<f64>,
}

impl BarChart<'_> {
    /// Rejects values that would break the axis or the percentages.
    fn validate(&self) -> Result<(), ChartError> {
        let bad = |what: &str, gbs: f64| ChartError::BadValue { what: what.to_string(), gbs };
        for (label, gbs) in self.bars {
            if !gbs.is_finite() || *gbs < 0.0 {
                return Err(bad(label, *gbs));
            }
        }
        if !self.copy_gbs.is_finite() || self.copy_gbs <= 0.0 {
            return Err(bad("copy roof", self.copy_gbs));
        }
        match self.peak_gbs {
            Some(peak) if !peak.is_finite() || peak <= 0.0 => Err(bad("theoretical peak", peak)),
            _ => Ok(()),
        }
    }

    /// Top of the y axis: room above the tallest bar for its two-line label, and above the lines for
    /// a label lifted over them.
    fn y_max(&self) -> f64 {
        let tallest_bar = self.bars.iter().map(|(_, gbs)| *gbs).fold(0.0, f64::max);
        let highest_line = self.copy_gbs.max(self.peak_gbs.unwrap_or(0.0));
        (tallest_bar * 1.25).max(highest_line * 1.2)
    }
}

/// A plotters text style whose SVG `font-size` is exactly `px` (plotters divides by 1.24; the
/// sizes used here survive the round trip unchanged).
fn font(px: u32, color: RGBColor) -> TextStyle<'static> {
    TextStyle { color: color.to_backend_color(), ..TextStyle::from((FontFamily::SansSerif, f64::from(px) * 1.24)) }
}

/// Estimated width of `text` at `px` pixels, used to fit labels into a bar's slot. The SVG holds
/// text, so the true width is known only to the browser; these per-glyph widths (in ems) are those
/// of DejaVu Sans rounded up, a wide face, so narrower ones fit too.
fn text_width(text: &str, px: u32) -> f64 {
    let em = |c: char| match c {
        'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.3,
        ' ' | '/' | 'f' | '-' => 0.36,
        't' | 'r' | '(' | ')' | '[' | ']' => 0.42,
        's' | 'c' | 'z' => 0.56,
        '0'..='9' => 0.64,
        'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.95,
        'A'..='Z' => 0.78,
        _ => 0.64,
    };
    text.chars().map(em).sum::<f64>() * f64::from(px)
}

fn drawing<E: std::error::Error>(e: E) -> ChartError {
    ChartError::Drawing(e.to_string())
}

fn render(chart: &BarChart) -> Result<String, ChartError> {
    chart.validate()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

fn draw(root: &DrawingArea<SVGBackend, Shift>, chart: &BarChart) -> Result<(), ChartError> {
    root.fill(&BACKGROUND).map_err(drawing)?;
    let count = chart.bars.len();
    let y_max = chart.y_max();

    let mut plot = ChartBuilder::on(root)
        .caption(chart.title, font(18, TEXT))
        .margin(12)
        .margin_right(LINE_LABEL_WIDTH)
        .x_label_area_size(STEP_LABEL_HEIGHT)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..count as f64, 0.0..y_max)
        .map_err(drawing)?;
    plot.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .y_desc("GB/s")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(font(12, TEXT))
        .axis_desc_style(font(12, TEXT))
        .axis_style(AXIS)
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(drawing)?;

    // Bars, then the lines over them, so a line stays visible where a bar reaches it.
    plot.draw_series(chart.bars.iter().enumerate().map(|(i, (_, gbs))| {
        let x = i as f64;
        Rectangle::new([(x + 0.18, 0.0), (x + 0.82, *gbs)], BAR.filled())
    }))
    .map_err(drawing)?;
    let right = count as f64;
    plot.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, chart.copy_gbs), (right, chart.copy_gbs)],
        COPY_LINE.stroke_width(2),
    )))
    .map_err(drawing)?;
    if let Some(peak) = chart.peak_gbs {
        plot.draw_series(std::iter::once(DashedPathElement::new(
            vec![(0.0, peak), (right, peak)],
            8,
            5,
            PEAK_LINE.stroke_width(2),
        )))
        .map_err(drawing)?;
    }

    // Pixel geometry, for the labels drawn on the root area.
    let (left_px, _) = plot.backend_coord(&(0.0, 0.0));
    let (right_px, bottom_px) = plot.backend_coord(&(right, 0.0));
    let slot_px = f64::from(right_px - left_px) / count as f64;

    let line_ys: Vec<i32> =
        std::iter::once(chart.copy_gbs).chain(chart.peak_gbs).map(|y| plot.backend_coord(&(0.0, y)).1).collect();
    draw_bar_labels(root, chart, slot_px, &line_ys, |x, y| plot.backend_coord(&(x, y)))?;
    draw_step_names(root, chart.bars, slot_px, left_px, bottom_px)?;
    draw_line_labels(root, chart, right_px, |y| plot.backend_coord(&(0.0, y)).1)?;
    Ok(())
}

/// The two lines over a bar: its GB/s and its share of the copy roof. A label that would cross a
/// roof line is lifted above it; an opaque backdrop keeps grid lines from crossing the text.
fn draw_bar_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &BarChart,
    slot_px: f64,
    line_ys: &[i32],
    to_px: impl Fn(f64, f64) -> (i32, i32),
) -> Result<(), ChartError> {
    // "4388 GB/s" over "103% of copy" where that fits; in narrow slots only "103%", which the
    // copy roof's label ("= 100%") explains.
    let label = |gbs: f64, long: bool| {
        let percent = 100.0 * gbs / chart.copy_gbs;
        let percent = if percent < 10.0 { format!("{percent:.1}%") } else { format!("{percent:.0}%") };
        [format!("{gbs:.0} GB/s"), if long { format!("{percent} of copy") } else { percent }]
    };
    // One form and font size for every bar: the largest that fits the slots.
    let width = |labels: &[[String; 2]], px: u32| -> Vec<f64> {
        labels.iter().map(|lines| lines.iter().map(|l| text_width(l, px)).fold(0.0, f64::max)).collect()
    };
    let labels_in = |long: bool| -> Vec<[String; 2]> { chart.bars.iter().map(|(_, gbs)| label(*gbs, long)).collect() };
    let (long, short) = (labels_in(true), labels_in(false));
    let long_choices = FONT_SIZES.into_iter().filter(|&px| (BAR_FONT_LONG_MIN..=BAR_FONT_MAX).contains(&px));
    let short_choices = FONT_SIZES.into_iter().filter(|&px| (BAR_FONT_MIN..=BAR_FONT_MAX).contains(&px));
    let (labels, px) = long_choices
        .map(|px| (&long, px))
        .chain(short_choices.map(|px| (&short, px)))
        .find(|(labels, px)| fits_slots(&width(labels, *px), slot_px))
        .unwrap_or((&short, BAR_FONT_MIN));
    let line_px = (f64::from(px) * 1.25).round() as i32;
    let style = font(px, TEXT).pos(Pos::new(HPos::Center, VPos::Bottom));

    // Lines from the bottom of the plot up, so a label lifted over one is then checked against
    // those above it.
    let mut line_ys = line_ys.to_vec();
    line_ys.sort_unstable_by(|a, b| b.cmp(a));
    for (i, ((_, gbs), lines)) in chart.bars.iter().zip(labels).enumerate() {
        let (cx, top) = to_px(i as f64 + 0.5, *gbs);
        let mut bottom = top - 3;
        for &line_y in &line_ys {
            if line_y > bottom - 2 * line_px - 4 && line_y < bottom + 4 {
                bottom = line_y - 4;
            }
        }
        let half_width = (width(std::slice::from_ref(lines), px)[0] / 2.0).ceil() as i32 + 2;
        root.draw(&Rectangle::new(
            [(cx - half_width, bottom - 2 * line_px - 1), (cx + half_width, bottom + 1)],
            BACKGROUND.filled(),
        ))
        .map_err(drawing)?;
        for (row, line) in lines.iter().enumerate() {
            let y = bottom - (1 - row as i32) * line_px;
            root.draw(&Text::new(line.as_str(), (cx, y), style.clone())).map_err(drawing)?;
        }
    }
    Ok(())
}

/// Step names under the bars, wrapped after hyphens when a name is wider than its slot, at the
/// largest size that needs at most two lines.
fn draw_step_names(
    root: &DrawingArea<SVGBackend, Shift>,
    bars: &[(String, f64)],
    slot_px: f64,
    left_px: i32,
    bottom_px: i32,
) -> Result<(), ChartError> {
    let max_width = slot_px - 4.0;
    let fits = |px: u32| {
        let wrapped: Vec<Vec<String>> =
            bars.iter().map(|(label, _)| wrap(label, |line| text_width(line, px) <= max_width)).collect();
        let widths: Vec<f64> =
            wrapped.iter().map(|lines| lines.iter().map(|l| text_width(l, px)).fold(0.0, f64::max)).collect();
        wrapped.iter().all(|lines| lines.len() <= 2) && fits_slots(&widths, slot_px)
    };
    let px = FONT_SIZES.into_iter().filter(|&px| px <= 12).find(|&px| fits(px)).unwrap_or(STEP_FONT_MIN);
    let line_px = (f64::from(px) * 1.25).round() as i32;
    let style = font(px, TEXT).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, (label, _)) in bars.iter().enumerate() {
        let cx = left_px + ((i as f64 + 0.5) * slot_px).round() as i32;
        for (row, line) in wrap(label, |line| text_width(line, px) <= max_width).iter().enumerate() {
            let y = bottom_px + 6 + row as i32 * line_px;
            root.draw(&Text::new(line.as_str(), (cx, y), style.clone())).map_err(drawing)?;
        }
    }
    Ok(())
}

/// Whether labels of these widths, centred in consecutive slots, leave a gap between neighbours
/// (a label may reach into a neighbour's slot where the neighbour's label is narrower) and stay
/// within the first and last slots.
fn fits_slots(widths: &[f64], slot_px: f64) -> bool {
    const GAP: f64 = 6.0;
    let ends = widths.first().into_iter().chain(widths.last()).all(|&w| w + GAP <= slot_px);
    ends && widths.windows(2).all(|pair| (pair[0] + pair[1]) / 2.0 + GAP <= slot_px)
}

/// Splits `label` into lines that `fits`, breaking after a `-` or at a newline; a piece with no
/// break point that does not fit stays whole.
fn wrap(label: &str, fits: impl Fn(&str) -> bool) -> Vec<String> {
    let mut lines = Vec::new();
    for part in label.lines() {
        let mut line = String::new();
        for piece in part.split_inclusive('-') {
            if !line.is_empty() && !fits(&format!("{line}{piece}")) {
                lines.push(std::mem::take(&mut line));
            }
            line.push_str(piece);
        }
        lines.push(line);
    }
    lines
}

/// The roof lines' names and values, right of the plot at each line's height, pushed apart when
/// the lines are too close for both.
fn draw_line_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &BarChart,
    right_px: i32,
    y_px: impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let px = 12;
    let line_px = 15;
    let mut labels = vec![(y_px(chart.copy_gbs), "copy roof = 100%", chart.copy_gbs, COPY_LINE)];
    if let Some(peak) = chart.peak_gbs {
        labels.push((y_px(peak), "theoretical peak", peak, PEAK_LINE));
    }
    // Each label is two lines centred on its line's height; keep the centres two lines apart.
    labels.sort_by_key(|label| label.0);
    if let [upper, lower] = labels.as_mut_slice() {
        let gap = lower.0 - upper.0;
        if gap < 2 * line_px + 2 {
            let push = (2 * line_px + 2 - gap + 1) / 2;
            upper.0 -= push;
            lower.0 += push;
        }
    }
    for (centre, name, gbs, color) in labels {
        let style = font(px, color).pos(Pos::new(HPos::Left, VPos::Bottom));
        let x = right_px + 8;
        root.draw(&Text::new(name, (x, centre), style.clone())).map_err(drawing)?;
        let value = format!("{gbs:.0} GB/s");
        root.draw(&Text::new(value, (x, centre + line_px), style)).map_err(drawing)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_after_hyphens() {
        let chars = |max: usize| move |line: &str| line.chars().count() <= max;
        assert_eq!(wrap("unroll-last-warp", chars(10)), ["unroll-", "last-warp"]);
        assert_eq!(wrap("shuffle-vec4", chars(12)), ["shuffle-vec4"]);
        assert_eq!(wrap("complete-unroll", chars(10)), ["complete-", "unroll"]);
        assert_eq!(wrap("averyverylongname", chars(4)), ["averyverylongname"]);
        assert_eq!(wrap("two\nlines", chars(20)), ["two", "lines"]);
    }

    #[test]
    fn font_sizes_survive_plotters_scaling() {
        for px in FONT_SIZES.into_iter().chain([14, 16, 18]) {
            assert_eq!(format!("{}", f64::from(px) * 1.24 / 1.24), px.to_string());
        }
    }
}
