//! Bar charts of measured bandwidth for the book, rendered as SVG strings by plotters.
//!
//! Each bar is a step's effective bandwidth, labelled with its GB/s and its share of its own roof
//! (the read roof for a step that only reads, the copy roof for one that reads and writes). Solid
//! lines mark the read roof and the copy roof measured in the same run, a dashed one the theoretical
//! DRAM peak, each labelled to the right of the plot.
//!
//! The output is meant to be committed and compared byte for byte with a fresh render, so it
//! depends only on the input: a fixed canvas, no dates, no locale, no fonts read at render time
//! (plotters is built without its font features; the SVG names the `sans-serif` family and the
//! reader's browser picks the face). The canvas is painted white, with dark text, so the chart
//! reads the same in the book's light and dark themes.

use course::{Chapter, Family};

use crate::results::{Record, Results};
use crate::tables::find_record;
use gpu_harness::{Case, Shape};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Canvas size in pixels.
pub const SIZE: (u32, u32) = (800, 420);

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
const READ_LINE: RGBColor = RGBColor(0x1b, 0x7a, 0x3a);
const PEAK_LINE: RGBColor = RGBColor(0x5b, 0x3a, 0x8c);
const GRID: RGBColor = RGBColor(0xe3, 0xe3, 0xe3);
const AXIS: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChartError {
    /// A chart was asked for with no bars.
    #[error("a chart needs at least one bar")]
    NoBars,
    /// A bandwidth that cannot be drawn: negative, NaN or infinite (or a zero roof).
    #[error("{what}: bandwidth {gbs} GB/s cannot be charted")]
    BadValue { what: String, gbs: f64 },
    /// plotters failed to draw (it should not, when writing to a string).
    #[error("drawing failed: {0}")]
    Drawing(String),
}

/// One bar: a step, its bandwidth, and the roof it is compared with.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub gbs: f64,
    /// `read` or `copy`.
    pub roof: String,
    pub roof_gbs: f64,
}

impl Bar {
    fn from_record(label: &str, record: &Record) -> Bar {
        Bar { label: label.to_string(), gbs: record.gbs, roof: record.roof.clone(), roof_gbs: record.roof_gbs() }
    }
}

/// The horizontal lines of a chart, in GB/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lines {
    pub read_gbs: f64,
    pub copy_gbs: f64,
    pub peak_gbs: Option<f64>,
}

/// The chart of a chapter on one GPU at `case`: the chapter's peers and steps measured there, and
/// its extras of the same size and kind. `None` when none was.
pub fn chapter_chart(
    family: &Family,
    chapter: &Chapter,
    results: &[Results],
    case: &Case,
) -> Result<Option<String>, ChartError> {
    let steps = crate::tables::chapter_steps(family, chapter);
    let records: Vec<(String, &Record)> = steps
        .iter()
        .flat_map(|s| s.cases().iter().filter(|c| same_input(c, case)).map(move |c| (s, c)))
        .filter_map(|(s, c)| Some((s.name().to_string(), find_record(results, s, &c.label)?)))
        .collect();
    let Some((_, first)) = records.first() else { return Ok(None) };
    let gpu = &results[0].device.name;
    let title = format!("{}, {}, on {gpu}", chapter.crate_name, case.label);
    let bars: Vec<Bar> = records.iter().map(|(label, r)| Bar::from_record(label, r)).collect();
    render(&BarChart { title: &title, bars: &bars, lines: lines(first, results) }).map(Some)
}

/// The summary chart of a family on one GPU: its peers and ladder steps at the summary case.
pub fn summary_chart(family: &Family, results: &[Results]) -> Result<Option<String>, ChartError> {
    let case = &family.summary_case.label;
    let records: Vec<(String, &Record)> = family
        .steps()
        .filter(|s| s.on_ladder() || s.peer.is_some())
        .filter_map(|s| Some((s.name().to_string(), find_record(results, &s, case)?)))
        .collect();
    let Some((_, first)) = records.first() else { return Ok(None) };
    let gpu = &results[0].device.name;
    let title = format!("{}, every step at {case}, on {gpu}", family.title);
    let bars: Vec<Bar> = records.iter().map(|(label, r)| Bar::from_record(label, r)).collect();
    render(&BarChart { title: &title, bars: &bars, lines: lines(first, results) }).map(Some)
}

/// Whether two cases have the same input: the same number of elements and kind, and, when both are
/// matrices, the same shape (16384x16384 and 2^20x256 are different inputs of as many elements).
fn same_input(a: &Case, b: &Case) -> bool {
    let different_matrices =
        matches!((a.shape, b.shape), (Shape::Matrix { .. }, Shape::Matrix { .. })) && a.shape != b.shape;
    a.n() == b.n() && a.variant == b.variant && !different_matrices
}

fn lines(record: &Record, results: &[Results]) -> Lines {
    Lines { read_gbs: record.read_gbs, copy_gbs: record.copy_gbs, peak_gbs: results[0].theoretical_gbs }
}

/// Renders bars with the roof lines: the chart of any list of steps.
pub fn bar_chart(title: &str, bars: &[Bar], lines: Lines) -> Result<String, ChartError> {
    render(&BarChart { title, bars, lines })
}

/// What a chart draws.
struct BarChart<'a> {
    title: &'a str,
    bars: &'a [Bar],
    lines: Lines,
}

impl BarChart<'_> {
    /// Rejects values that would break the axis or the percentages.
    fn validate(&self) -> Result<(), ChartError> {
        let bad = |what: &str, gbs: f64| ChartError::BadValue { what: what.to_string(), gbs };
        if self.bars.is_empty() {
            return Err(ChartError::NoBars);
        }
        for bar in self.bars {
            if !bar.gbs.is_finite() || bar.gbs < 0.0 {
                return Err(bad(&bar.label, bar.gbs));
            }
            if !bar.roof_gbs.is_finite() || bar.roof_gbs <= 0.0 {
                return Err(bad(&format!("{}'s roof", bar.label), bar.roof_gbs));
            }
        }
        for (what, gbs) in [("copy roof", self.lines.copy_gbs), ("read roof", self.lines.read_gbs)] {
            if !gbs.is_finite() || gbs <= 0.0 {
                return Err(bad(what, gbs));
            }
        }
        match self.lines.peak_gbs {
            Some(peak) if !peak.is_finite() || peak <= 0.0 => Err(bad("theoretical peak", peak)),
            _ => Ok(()),
        }
    }

    /// The horizontal lines: (name, GB/s, colour, dashed).
    fn lines(&self) -> Vec<(&'static str, f64, RGBColor, bool)> {
        let mut lines = vec![
            ("read roof", self.lines.read_gbs, READ_LINE, false),
            ("copy roof", self.lines.copy_gbs, COPY_LINE, false),
        ];
        if let Some(peak) = self.lines.peak_gbs {
            lines.push(("theoretical peak", peak, PEAK_LINE, true));
        }
        lines
    }

    /// Top of the y axis: room above the tallest bar for its two-line label, and above the lines for
    /// a label lifted over them.
    fn y_max(&self) -> f64 {
        let tallest_bar = self.bars.iter().map(|b| b.gbs).fold(0.0, f64::max);
        let highest_line = self.lines().iter().map(|l| l.1).fold(0.0, f64::max);
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

/// A plotters failure as a [`ChartError`].
pub(crate) fn drawing<E: std::error::Error>(e: E) -> ChartError {
    ChartError::Drawing(e.to_string())
}

/// The colours of the line charts' series, in order.
pub(crate) const LINE_COLORS: [RGBColor; 5] = [
    RGBColor(0xb3, 0x47, 0x00),
    RGBColor(0x3b, 0x6e, 0xa8),
    RGBColor(0x1b, 0x7a, 0x3a),
    RGBColor(0x5b, 0x3a, 0x8c),
    RGBColor(0x80, 0x80, 0x80),
];

/// Draws each `(name, points)` as a line with a marker on every point, in [`LINE_COLORS`] order,
/// and the legend at `legend`: what the line charts (accuracy, multi-GPU bandwidth) share.
pub(crate) fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[(String, Vec<(f64, f64)>)],
    legend: SeriesLabelPosition,
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for ((name, line), color) in series.iter().zip(LINE_COLORS.iter().cycle()) {
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(drawing)?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        chart.draw_series(line.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(drawing)?;
    }
    chart
        .configure_series_labels()
        .position(legend)
        .label_font(("sans-serif", 11.0 * 1.24).into_font())
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(drawing)
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
    plot.draw_series(chart.bars.iter().enumerate().map(|(i, bar)| {
        let x = i as f64;
        Rectangle::new([(x + 0.18, 0.0), (x + 0.82, bar.gbs)], BAR.filled())
    }))
    .map_err(drawing)?;
    let right = count as f64;
    for (_, gbs, color, dashed) in chart.lines() {
        let points = vec![(0.0, gbs), (right, gbs)];
        if dashed {
            plot.draw_series(std::iter::once(DashedPathElement::new(points, 8, 5, color.stroke_width(2))))
        } else {
            plot.draw_series(std::iter::once(PathElement::new(points, color.stroke_width(2))))
        }
        .map_err(drawing)?;
    }

    // Pixel geometry, for the labels drawn on the root area.
    let (left_px, _) = plot.backend_coord(&(0.0, 0.0));
    let (right_px, bottom_px) = plot.backend_coord(&(right, 0.0));
    let slot_px = f64::from(right_px - left_px) / count as f64;

    let line_ys: Vec<i32> = chart.lines().iter().map(|line| plot.backend_coord(&(0.0, line.1)).1).collect();
    draw_bar_labels(root, chart, slot_px, &line_ys, |x, y| plot.backend_coord(&(x, y)))?;
    draw_step_names(root, chart.bars, slot_px, left_px, bottom_px)?;
    draw_line_labels(root, chart, right_px, |y| plot.backend_coord(&(0.0, y)).1)?;
    Ok(())
}

/// The two lines over a bar: its GB/s and its share of its own roof. A label that would cross a
/// line is lifted above it; an opaque backdrop keeps grid lines from crossing the text.
fn draw_bar_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &BarChart,
    slot_px: f64,
    line_ys: &[i32],
    to_px: impl Fn(f64, f64) -> (i32, i32),
) -> Result<(), ChartError> {
    // "4388 GB/s" over "97% of read" where that fits; in narrow slots only "97%".
    let label = |bar: &Bar, long: bool| {
        let percent = 100.0 * bar.gbs / bar.roof_gbs;
        let percent = if percent < 10.0 { format!("{percent:.1}%") } else { format!("{percent:.0}%") };
        [format!("{:.0} GB/s", bar.gbs), if long { format!("{percent} of {}", bar.roof) } else { percent }]
    };
    // One form and font size for every bar: the largest that fits the slots.
    let width = |labels: &[[String; 2]], px: u32| -> Vec<f64> {
        labels.iter().map(|lines| lines.iter().map(|l| text_width(l, px)).fold(0.0, f64::max)).collect()
    };
    let labels_in = |long: bool| -> Vec<[String; 2]> { chart.bars.iter().map(|bar| label(bar, long)).collect() };
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
    for (i, (bar, lines)) in chart.bars.iter().zip(labels).enumerate() {
        let (cx, top) = to_px(i as f64 + 0.5, bar.gbs);
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
    bars: &[Bar],
    slot_px: f64,
    left_px: i32,
    bottom_px: i32,
) -> Result<(), ChartError> {
    let max_width = slot_px - 4.0;
    let fits = |px: u32| {
        let wrapped: Vec<Vec<String>> =
            bars.iter().map(|bar| wrap(&bar.label, |line| text_width(line, px) <= max_width)).collect();
        let widths: Vec<f64> =
            wrapped.iter().map(|lines| lines.iter().map(|l| text_width(l, px)).fold(0.0, f64::max)).collect();
        wrapped.iter().all(|lines| lines.len() <= 2) && fits_slots(&widths, slot_px)
    };
    let px = FONT_SIZES.into_iter().filter(|&px| px <= 12).find(|&px| fits(px)).unwrap_or(STEP_FONT_MIN);
    let line_px = (f64::from(px) * 1.25).round() as i32;
    let style = font(px, TEXT).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, bar) in bars.iter().enumerate() {
        let cx = left_px + ((i as f64 + 0.5) * slot_px).round() as i32;
        for (row, line) in wrap(&bar.label, |line| text_width(line, px) <= max_width).iter().enumerate() {
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

/// The lines' names and values, right of the plot at each line's height, pushed apart where lines
/// are too close for their labels.
fn draw_line_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &BarChart,
    right_px: i32,
    y_px: impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let px = 12;
    let line_px = 15;
    let mut labels: Vec<(i32, &str, f64, RGBColor)> =
        chart.lines().into_iter().map(|(name, gbs, color, _)| (y_px(gbs), name, gbs, color)).collect();
    // Each label is two lines centred on its line's height; keep centres two lines apart, moving
    // labels down from the top, then the whole stack up if it left the plot's bottom.
    labels.sort_by_key(|label| label.0);
    let gap = 2 * line_px + 2;
    let mut shifted: Vec<i32> = Vec::new();
    for label in &labels {
        let lowest_allowed = shifted.last().map_or(i32::MIN, |&previous| previous + gap);
        shifted.push(label.0.max(lowest_allowed));
    }
    let overshoot = shifted.iter().zip(&labels).map(|(s, l)| s - l.0).max().unwrap_or(0) / 2;
    for ((_, name, gbs, color), y) in labels.into_iter().zip(shifted) {
        let y = y - overshoot;
        let style = font(px, color).pos(Pos::new(HPos::Left, VPos::Bottom));
        let x = right_px + 8;
        root.draw(&Text::new(name, (x, y), style.clone())).map_err(drawing)?;
        let value = format!("{gbs:.0} GB/s");
        root.draw(&Text::new(value, (x, y + line_px), style)).map_err(drawing)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_join_cases_of_one_input() {
        let case = |text: &str| text.parse::<Case>().unwrap();
        assert!(same_input(&case("2^28"), &case("2^20x256")));
        assert!(same_input(&case("16384x16384"), &case("16384x16384")));
        assert!(!same_input(&case("16384x16384"), &case("2^20x256")));
        assert!(!same_input(&case("2^28"), &case("2^28 all-equal")));
    }

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
