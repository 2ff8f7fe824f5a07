//! Bar charts of measured bandwidth for the book, rendered as SVG strings by plotters.
//!
//! Each bar is a step's effective bandwidth, labelled with its GB/s and its share of its own roof
//! (the read roof for a step that only reads, the copy roof for one that reads and writes; no share
//! where the roofs do not bind, [`measuring::tables::roof_binds`]). The course's steps are blue,
//! the peers (NVIDIA's libraries, PyTorch, the seeds' kernels) grey with their names in italics;
//! where a chart draws several series (steps on f32 and on bf16 rows, two peers, a peer on two
//! types), each has its own colour ([`OUR_COLORS`], [`PEER_COLORS`]), and the legend under the
//! title names every one. Solid lines mark the read roof and the copy roof measured in the same
//! run, a dashed one the theoretical DRAM peak, each labelled to the right of the plot.
//!
//! Every text stays inside the picture and clear of the others: the widths of texts are estimated
//! for a wide face ([`text_width`]), the column of the lines' labels is as wide as they need, and
//! where the steps are too many for their names to fit under their bars in two lines, the names are
//! written upwards and the canvas grows to hold them (`scripts/check-book-render` measures every
//! chart's texts in a browser).
//!
//! The output is meant to be committed and compared byte for byte with a fresh render, so it
//! depends only on the input: a canvas sized from the input alone, no dates, no locale, no fonts
//! read at render time (plotters is built without its font features; the SVG names the
//! `sans-serif` family and the reader's browser picks the face). The canvas is painted white, with
//! dark text, so the chart reads the same in the book's light and dark themes.

use course::{Chapter, Family};

use gpu_harness::{Case, Shape};
use measuring::results::{Record, Results};
use measuring::tables::{find_record, roof_binds};
use plotters::coord::CoordTranslate;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Canvas size in pixels: the width of every chart, and the height of one whose step names fit
/// under their bars (one whose names are written upwards is taller).
pub const SIZE: (u32, u32) = (800, 420);

/// Margin around the plot, in pixels.
const MARGIN: u32 = 12;
/// Width of the area left of the plot that holds the y axis' labels.
const Y_LABEL_WIDTH: u32 = 56;
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
/// The title's font sizes, largest first, and the legend's.
const TITLE_SIZES: [u32; 3] = [18, 16, 14];
const LEGEND_PX: u32 = 12;
/// Font size of the lines' labels right of the plot.
const LINE_LABEL_PX: u32 = 12;

const BACKGROUND: RGBColor = WHITE;
pub(crate) const TEXT: RGBColor = RGBColor(0x1a, 0x1a, 0x1a);
/// The course's steps.
pub(crate) const BAR: RGBColor = RGBColor(0x3b, 0x6e, 0xa8);
/// Peers: NVIDIA's libraries, the seeds' kernels.
const PEER_BAR: RGBColor = RGBColor(0x8c, 0x8c, 0x8c);
/// The course's series of a chart (one per element type), in the order first drawn: blues and
/// greens, told apart by lightness too.
pub const OUR_COLORS: [RGBColor; 5] = [
    BAR,
    RGBColor(0x8e, 0xbb, 0xe8),
    RGBColor(0x2a, 0x9d, 0x8f),
    RGBColor(0x1d, 0x3a, 0x63),
    RGBColor(0x9a, 0xd8, 0xc8),
];
/// The peers' series of a chart (one per source and element type), in the order first drawn:
/// greys and browns, none of them a blue.
pub const PEER_COLORS: [RGBColor; 5] = [
    PEER_BAR,
    RGBColor(0xcc, 0xa8, 0x6e),
    RGBColor(0x4a, 0x4a, 0x4a),
    RGBColor(0xd2, 0xd2, 0xd2),
    RGBColor(0x8a, 0x5a, 0x2b),
];
pub(crate) const COPY_LINE: RGBColor = RGBColor(0xb3, 0x47, 0x00);
const READ_LINE: RGBColor = RGBColor(0x1b, 0x7a, 0x3a);
const PEAK_LINE: RGBColor = RGBColor(0x5b, 0x3a, 0x8c);
pub(crate) const GRID: RGBColor = RGBColor(0xe3, 0xe3, 0xe3);
pub(crate) const AXIS: RGBColor = RGBColor(0x55, 0x55, 0x55);

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
    /// For a peer, where it comes from (`CUB DeviceReduce::Sum`, `seed 004`): it is drawn grey, its
    /// name in italics, and the legend names its source. `None` for the course's steps.
    pub peer: Option<String>,
    /// Whether its share of its roof is shown: `false` where the bytes it moves fit in the GPU's L2
    /// ([`measuring::tables::roof_binds`]); its label then says `in L2`.
    pub roof_binds: bool,
    /// The element type of its input (`f32`, `bf16`); where a chart's bars have several, each
    /// type is a series of its own colour. `None`: one type, not named.
    pub dtype: Option<String>,
}

impl Bar {
    /// A bar of the course's own steps whose roof binds.
    pub fn new(label: &str, gbs: f64, roof: &str, roof_gbs: f64) -> Bar {
        Bar {
            label: label.to_string(),
            gbs,
            roof: roof.to_string(),
            roof_gbs,
            peer: None,
            roof_binds: true,
            dtype: None,
        }
    }

    fn from_record(step: &course::StepRef, record: &Record, l2_cache_bytes: u64) -> Bar {
        Bar {
            peer: step.peer.map(|p| p.source.clone()),
            roof_binds: roof_binds(record, l2_cache_bytes),
            dtype: Some(step.dtype().to_string()),
            ..Bar::new(step.name(), record.gbs, &record.roof, record.roof_gbs())
        }
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
    match chapter_bars(family, chapter, results, case) {
        Some((title, bars, lines)) => {
            render(&BarChart { title: &title, bars: &bars, lines }).map(Some)
        }
        None => Ok(None),
    }
}

/// What [`chapter_chart`] draws: its title, bars and lines.
fn chapter_bars(
    family: &Family,
    chapter: &Chapter,
    results: &[Results],
    case: &Case,
) -> Option<(String, Vec<Bar>, Lines)> {
    let steps = measuring::tables::chapter_steps(family, chapter);
    let records: Vec<(&course::StepRef, &Record)> = steps
        .iter()
        .flat_map(|s| s.cases().iter().filter(|c| same_input(c, case)).map(move |c| (s, c)))
        .filter_map(|(s, c)| Some((s, find_record(results, s, &c.label)?)))
        .collect();
    let (_, first) = records.first()?;
    let gpu = &results[0].device.name;
    let l2 = results[0].device.l2_cache_bytes;
    let title = format!("{}, {}, on {gpu}", chapter.crate_name, case.label);
    let bars: Vec<Bar> = records.iter().map(|(s, r)| Bar::from_record(s, r, l2)).collect();
    Some((title, bars, lines(first, results)))
}

/// The summary chart of a family on one GPU: its peers and ladder steps at the summary case.
pub fn summary_chart(family: &Family, results: &[Results]) -> Result<Option<String>, ChartError> {
    let case = &family.summary_case.label;
    let records: Vec<(course::StepRef, &Record)> = family
        .steps()
        .filter(|s| s.on_ladder() || s.peer.is_some())
        .filter_map(|s| Some((s, find_record(results, &s, case)?)))
        .collect();
    let Some((_, first)) = records.first() else { return Ok(None) };
    let gpu = &results[0].device.name;
    let l2 = results[0].device.l2_cache_bytes;
    let title = format!("{}, every step at {case}, on {gpu}", family.title);
    let bars: Vec<Bar> = records.iter().map(|(s, r)| Bar::from_record(s, r, l2)).collect();
    render(&BarChart { title: &title, bars: &bars, lines: lines(first, results) }).map(Some)
}

/// Whether two cases have the same input: the same number of elements and kind, and, when both are
/// matrices or tensors, the same shape (16384x16384 and 2^20x256 are different inputs of as many
/// elements, and so are 32x64x56x56 and 64x512x14x14).
fn same_input(a: &Case, b: &Case) -> bool {
    let shaped = |case: &Case| !matches!(case.shape, Shape::Elements(_));
    let different_shapes = shaped(a) && shaped(b) && a.shape != b.shape;
    a.n() == b.n() && a.variant == b.variant && !different_shapes
}

fn lines(record: &Record, results: &[Results]) -> Lines {
    Lines {
        read_gbs: record.read_gbs,
        copy_gbs: record.copy_gbs,
        peak_gbs: results[0].theoretical_gbs,
    }
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
        for (what, gbs) in [("copy roof", self.lines.copy_gbs), ("read roof", self.lines.read_gbs)]
        {
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

    /// Top of the y axis: room above the tallest bar for its two-line label, and above the lines
    /// for a label lifted over them.
    fn y_max(&self) -> f64 {
        let tallest_bar = self.bars.iter().map(|b| b.gbs).fold(0.0, f64::max);
        let highest_line = self.lines().iter().map(|l| l.1).fold(0.0, f64::max);
        (tallest_bar * 1.25).max(highest_line * 1.2)
    }

    /// The chart's series, in the order first drawn: the course's steps of each element type,
    /// then each peer's source on each type; each with its colour and its legend's entry (in
    /// italics for a peer). A type is named only where the chart has several.
    fn series(&self) -> Vec<Series> {
        let mut keys: Vec<(Option<&str>, Option<&str>)> = Vec::new();
        for bar in self.bars {
            let key = (bar.peer.as_deref(), bar.dtype.as_deref());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let mut types: Vec<Option<&str>> = keys.iter().map(|k| k.1).collect();
        types.sort_unstable();
        types.dedup();
        let typed = |dtype: Option<&str>| match dtype {
            Some(dtype) if types.len() > 1 => format!(", {dtype}"),
            _ => String::new(),
        };
        let ours = keys.iter().filter(|k| k.0.is_none()).zip(OUR_COLORS.iter().cycle());
        let peers = keys.iter().filter_map(|k| Some((k.0?, k.1))).zip(PEER_COLORS.iter().cycle());
        ours.map(|(&(_, dtype), &color)| Series {
            peer: None,
            dtype: dtype.map(str::to_string),
            color,
            legend: format!("the course's steps{}", typed(dtype)),
        })
        .chain(peers.map(|((source, dtype), &color)| Series {
            peer: Some(source.to_string()),
            dtype: dtype.map(str::to_string),
            color,
            legend: format!("peer: {source}{}", typed(dtype)),
        }))
        .collect()
    }

    /// The colour of `bar`'s series.
    fn color(&self, series: &[Series], bar: &Bar) -> RGBColor {
        series.iter().find(|s| s.peer == bar.peer && s.dtype == bar.dtype).map_or(BAR, |s| s.color)
    }

    /// The legend's entries: each series' colour, text, and whether it is a peer's (in italics).
    fn legend(&self) -> Vec<(RGBColor, String, bool)> {
        self.series().into_iter().map(|s| (s.color, s.legend, s.peer.is_some())).collect()
    }
}

/// Bars of one kind in a chart: the course's steps or one peer's, on one element type.
#[derive(Debug, Clone, PartialEq)]
struct Series {
    peer: Option<String>,
    dtype: Option<String>,
    color: RGBColor,
    legend: String,
}

/// A plotters text style whose SVG `font-size` is exactly `px` (plotters divides by 1.24; the
/// sizes used here survive the round trip unchanged).
fn font(px: u32, color: RGBColor) -> TextStyle<'static> {
    TextStyle {
        color: color.to_backend_color(),
        ..TextStyle::from((FontFamily::SansSerif, f64::from(px) * 1.24))
    }
}

/// [`font`] in italics: how peers are named.
fn italic(px: u32, color: RGBColor) -> TextStyle<'static> {
    TextStyle {
        font: FontDesc::new(FontFamily::SansSerif, f64::from(px) * 1.24, FontStyle::Italic),
        ..font(px, color)
    }
}

/// Estimated width of `text` at `px` pixels, used to fit labels into a bar's slot and the picture.
/// The SVG holds text, so the true width is known only to the browser; these per-glyph widths (in
/// ems) are those of DejaVu Sans rounded up, a wide face, so narrower ones fit too.
pub(crate) fn text_width(text: &str, px: u32) -> f64 {
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

/// Side of a legend's colour swatch, the gap after it and the gap between entries, in pixels.
const SWATCH: i32 = 12;
const SWATCH_GAP: i32 = 5;
const ENTRY_GAP: i32 = 20;

/// Height of a row of the legend and the gap between rows, in pixels.
const LEGEND_ROW: i32 = SWATCH + 6;

/// The width of one legend entry: its swatch, gap and text.
fn entry_width(text: &str) -> f64 {
    f64::from(SWATCH + SWATCH_GAP) + text_width(text, LEGEND_PX)
}

/// The legend's entries laid out in rows no wider than the canvas' width less its margins:
/// as many entries as fit in each row, in order.
fn legend_rows<T: AsRef<str>>(texts: &[T], width: u32) -> Vec<std::ops::Range<usize>> {
    let room = f64::from(width - 2 * MARGIN);
    let mut rows = Vec::new();
    let (mut start, mut used) = (0, 0.0);
    for (i, text) in texts.iter().enumerate() {
        let width = entry_width(text.as_ref());
        if i > start && used + f64::from(ENTRY_GAP) + width > room {
            rows.push(start..i);
            (start, used) = (i, width);
        } else {
            used += if i > start { f64::from(ENTRY_GAP) } else { 0.0 } + width;
        }
    }
    if start < texts.len() {
        rows.push(start..texts.len());
    }
    rows
}

/// The height a legend of these texts takes.
fn legend_height<T: AsRef<str>>(texts: &[T], width: u32) -> i32 {
    let rows = legend_rows(texts, width).len().max(1) as i32;
    rows * LEGEND_ROW - (LEGEND_ROW - SWATCH)
}

/// The title, centred at the top of the canvas at the largest size that fits its width; returns
/// the height it took.
fn draw_title(root: &DrawingArea<SVGBackend, Shift>, title: &str) -> Result<i32, ChartError> {
    let width = f64::from(root.dim_in_pixel().0 - 2 * MARGIN);
    let px = TITLE_SIZES
        .into_iter()
        .find(|&px| text_width(title, px) <= width)
        .unwrap_or(TITLE_SIZES[2]);
    let centre = (root.dim_in_pixel().0 / 2) as i32;
    let style = font(px, TEXT).pos(Pos::new(HPos::Center, VPos::Top));
    root.draw(&Text::new(title, (centre, MARGIN as i32), style)).map_err(drawing)?;
    Ok(MARGIN as i32 + (f64::from(px) * 1.25).round() as i32)
}

/// A legend from height `top`, in rows as wide as the canvas allows ([`legend_rows`]), each
/// centred: a colour swatch and a text per entry, the text in italics where the entry says so.
fn draw_legend(
    root: &DrawingArea<SVGBackend, Shift>,
    entries: &[(RGBColor, String, bool)],
    top: i32,
) -> Result<(), ChartError> {
    let canvas = root.dim_in_pixel().0;
    let texts: Vec<&str> = entries.iter().map(|(_, t, _)| t.as_str()).collect();
    for (row, range) in legend_rows(&texts, canvas).into_iter().enumerate() {
        let y = top + row as i32 * LEGEND_ROW;
        let width: f64 = texts[range.clone()].iter().map(|t| entry_width(t)).sum::<f64>()
            + f64::from(ENTRY_GAP) * (range.len() - 1) as f64;
        let mut x = ((f64::from(canvas) - width) / 2.0).round() as i32;
        for (color, text, italics) in &entries[range] {
            root.draw(&Rectangle::new([(x, y), (x + SWATCH, y + SWATCH)], color.filled()))
                .map_err(drawing)?;
            x += SWATCH + SWATCH_GAP;
            let style = if *italics { italic(LEGEND_PX, TEXT) } else { font(LEGEND_PX, TEXT) };
            let style = style.pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&Text::new(text.as_str(), (x, y + SWATCH / 2), style)).map_err(drawing)?;
            x += text_width(text, LEGEND_PX).ceil() as i32 + ENTRY_GAP;
        }
    }
    Ok(())
}

/// One bar of a [`share_chart`]: a step's or a peer's share of its own roof, labelled.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareBar {
    /// What the bar is, written after its share (`last-block`, `CUB DeviceReduce::Sum`).
    pub label: String,
    /// Its share of its roof in percent; `None` where the roof does not bind (the bar says `in
    /// L2`).
    pub percent: Option<f64>,
    pub peer: bool,
}

/// The bars of one GPU in a [`Group`].
#[derive(Debug, Clone, PartialEq)]
pub struct GroupBars {
    /// The GPU's short name, left of its bars (`H100`).
    pub gpu: String,
    pub bars: Vec<ShareBar>,
}

/// A family in a [`share_chart`]: its name and case over its bars, then each GPU's bars.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub case: String,
    pub gpus: Vec<GroupBars>,
}

/// Vertical room, in pixels, of a bar, of the gap after a GPU's bars, and of a group's heading.
const SHARE_BAR_PX: i32 = 15;
const SHARE_GAP_PX: i32 = 8;
const SHARE_HEADING_PX: i32 = 22;
const SHARE_LABEL_PX: u32 = 11;
/// The width under which a [`share_chart`] is laid out for a phone's column.
pub const SHARE_NARROW: u32 = 600;
/// The label of the roof's line.
const ROOF_LABEL: &str = "its roof: 100%";
/// The dashed line of the roof, at 100%.
const ROOF_LINE: RGBColor = RGBColor(0x33, 0x33, 0x33);

/// A horizontal bar chart of shares of roofs: per group (a family), per GPU, a bar for the course's
/// step and one per peer, each labelled with its share and its name, a dashed line at 100%, and a
/// legend of the two colours (`legend`: ours, the peers'). The canvas is `width` pixels wide and
/// as tall as its bars need. On a narrow one (a phone's: under [`SHARE_NARROW`] pixels) each
/// label goes above its bar, the bars get the plot's whole width, and the title wraps, so that it
/// reads at its own size in a column that narrow.
pub fn share_chart(
    title: &str,
    groups: &[Group],
    legend: &[String; 2],
    width: u32,
) -> Result<String, ChartError> {
    let bars = || groups.iter().flat_map(|g| g.gpus.iter().flat_map(|gpu| gpu.bars.iter()));
    if bars().next().is_none() {
        return Err(ChartError::NoBars);
    }
    if let Some(bad) = bars().find(|b| b.percent.is_some_and(|p| !p.is_finite() || p < 0.0)) {
        return Err(ChartError::BadValue {
            what: bad.label.clone(),
            gbs: bad.percent.unwrap_or(f64::NAN),
        });
    }
    let share = |bar: &ShareBar| match bar.percent {
        Some(p) => format!("{p:.1}%"),
        None => measuring::tables::IN_L2.to_string(),
    };
    let label = |bar: &ShareBar| format!("{}  {}", share(bar), bar.label);

    // Across: the GPUs' names, the plot, the labels after the longest bar.
    let name_width = groups
        .iter()
        .flat_map(|g| g.gpus.iter().map(|gpu| text_width(&gpu.gpu, SHARE_LABEL_PX)))
        .fold(0.0, f64::max)
        .ceil() as i32;
    let narrow = width < SHARE_NARROW;
    let left = MARGIN as i32 + name_width + 8;
    let right = (width - MARGIN) as i32;
    let x_max = bars().filter_map(|b| b.percent).fold(100.0, f64::max);
    // The plot's width: room right of the roof for half its label, and the longest label after
    // its bar ending inside the canvas (above its bar on a narrow canvas: the whole width).
    let reserve = (text_width(ROOF_LABEL, 12) / 2.0).ceil() + 2.0;
    let plot_width = bars()
        .filter(|_| !narrow)
        .map(|b| {
            let room = f64::from(right - left) - text_width(&label(b), SHARE_LABEL_PX) - 6.0;
            room * x_max / b.percent.unwrap_or(0.0).max(x_max * 0.05)
        })
        .fold(f64::from(right - left) - reserve, f64::min)
        .floor();
    // A bar's row: its label above it on a narrow canvas.
    let label_row = if narrow { 14 } else { 0 };
    let row_px = SHARE_BAR_PX + label_row;
    let px = |percent: f64| left + (percent / x_max * plot_width).round() as i32;

    // Down: the title, the legend, the roof's label, then the groups, then the axis' labels.
    let room = f64::from(width - 2 * MARGIN);
    let (title_px, title_lines) =
        match TITLE_SIZES.into_iter().find(|&px| text_width(title, px) <= room) {
            Some(px) => (px, vec![title.to_string()]),
            None => (TITLE_SIZES[2], wrap_words(title, |t| text_width(t, TITLE_SIZES[2]), room)),
        };
    let title_line = (f64::from(title_px) * 1.25).round() as i32;
    let legend_top = MARGIN as i32 + title_line * title_lines.len() as i32 + 8;
    let entries = [(BAR, legend[0].clone(), false), (PEER_BAR, legend[1].clone(), true)];
    let legend_texts = [legend[0].as_str(), legend[1].as_str()];
    let top = legend_top + legend_height(&legend_texts, width) + 26;
    let mut height = top;
    for group in groups {
        height += SHARE_HEADING_PX;
        for gpu in &group.gpus {
            height += row_px * gpu.bars.len() as i32 + SHARE_GAP_PX;
        }
    }
    let bottom = height;
    let axis_name = "share of its own roof (the read roof for a step that only reads, the copy \
                     roof for one that writes)";
    let axis_name = if text_width(axis_name, 10) <= f64::from(right - left) {
        axis_name
    } else {
        "share of its own roof"
    };
    let canvas_height = (bottom + 12 + 20 + MARGIN as i32) as u32;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, canvas_height)).into_drawing_area();
        root.fill(&BACKGROUND).map_err(drawing)?;
        let centre = (width / 2) as i32;
        for (i, line) in title_lines.iter().enumerate() {
            root.draw(&Text::new(
                line.as_str(),
                (centre, MARGIN as i32 + i as i32 * title_line),
                font(title_px, TEXT).pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(drawing)?;
        }
        draw_legend(&root, &entries, legend_top)?;

        // The grid and the axis: a line every 20%, labelled under the plot.
        let ticks: Vec<f64> =
            (0..).map(|i| f64::from(i) * 20.0).take_while(|&t| t <= x_max).collect();
        for &tick in &ticks {
            let x = px(tick);
            root.draw(&PathElement::new(vec![(x, top - 6), (x, bottom)], GRID.stroke_width(1)))
                .map_err(drawing)?;
            let style = font(12, TEXT).pos(Pos::new(HPos::Center, VPos::Top));
            root.draw(&Text::new(format!("{tick:.0}%"), (x, bottom + 6), style))
                .map_err(drawing)?;
        }
        root.draw(&PathElement::new(
            vec![(left, bottom), (px(x_max), bottom)],
            AXIS.stroke_width(1),
        ))
        .map_err(drawing)?;
        root.draw(&PathElement::new(vec![(left, top - 6), (left, bottom)], AXIS.stroke_width(1)))
            .map_err(drawing)?;
        let axis_px = if text_width(axis_name, 12) <= f64::from(right - left) { 12 } else { 10 };
        let axis_style = font(axis_px, TEXT).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(axis_name, ((left + right) / 2, bottom + 24), axis_style))
            .map_err(drawing)?;

        // The roof, labelled above the plot; the bars' labels are written over it on backdrops.
        let roof = px(100.0);
        root.draw(&DashedPathElement::new(
            vec![(roof, top - 6), (roof, bottom)],
            6,
            4,
            ROOF_LINE.stroke_width(2),
        ))
        .map_err(drawing)?;
        let style = font(12, ROOF_LINE).pos(Pos::new(HPos::Center, VPos::Bottom));
        root.draw(&Text::new(ROOF_LABEL, (roof, top - 8), style)).map_err(drawing)?;

        // Each group: its heading, then each GPU's bars, the GPU's name left of them.
        let mut y = top;
        for group in groups {
            let heading = format!("{}, {}", group.name, group.case);
            let style = TextStyle {
                font: FontDesc::new(FontFamily::SansSerif, 12.0 * 1.24, FontStyle::Bold),
                ..font(12, TEXT)
            }
            .pos(Pos::new(HPos::Left, VPos::Center));
            let width = (text_width(&heading, 12) * 1.1).ceil() as i32;
            root.draw(&Rectangle::new(
                [(left + 1, y + 3), (left + 6 + width, y + SHARE_HEADING_PX - 3)],
                BACKGROUND.filled(),
            ))
            .map_err(drawing)?;
            root.draw(&Text::new(heading, (left + 4, y + SHARE_HEADING_PX / 2), style))
                .map_err(drawing)?;
            y += SHARE_HEADING_PX;
            for gpu in &group.gpus {
                let span = row_px * gpu.bars.len() as i32;
                let style = font(SHARE_LABEL_PX, TEXT).pos(Pos::new(HPos::Right, VPos::Center));
                root.draw(&Text::new(gpu.gpu.as_str(), (left - 6, y + span / 2), style))
                    .map_err(drawing)?;
                for bar in &gpu.bars {
                    let color = if bar.peer { PEER_BAR } else { BAR };
                    let end = px(bar.percent.unwrap_or(0.0));
                    let (bar_top, bar_bottom) = (y + label_row + 2, y + row_px - 2);
                    if end > left {
                        root.draw(&Rectangle::new(
                            [(left + 1, bar_top), (end, bar_bottom)],
                            color.filled(),
                        ))
                        .map_err(drawing)?;
                    }
                    let style = if bar.peer {
                        italic(SHARE_LABEL_PX, TEXT)
                    } else {
                        font(SHARE_LABEL_PX, TEXT)
                    }
                    .pos(Pos::new(HPos::Left, VPos::Center));
                    let width = text_width(&label(bar), SHARE_LABEL_PX).ceil() as i32;
                    // After the bar, or above it from the plot's left on a narrow canvas.
                    let (x, label_top) = if narrow { (left + 4, y) } else { (end + 6, y) };
                    let label_height = if narrow { label_row } else { SHARE_BAR_PX };
                    root.draw(&Rectangle::new(
                        [(x - 3, label_top + 1), (x + 2 + width, label_top + label_height - 1)],
                        BACKGROUND.filled(),
                    ))
                    .map_err(drawing)?;
                    root.draw(&Text::new(label(bar), (x, label_top + label_height / 2), style))
                        .map_err(drawing)?;
                    y += row_px;
                }
                y += SHARE_GAP_PX;
            }
        }
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// A plotters failure as a [`ChartError`].
pub(crate) fn drawing<E: std::error::Error>(e: E) -> ChartError {
    ChartError::Drawing(e.to_string())
}

/// The colours of the line charts' series, in order.
pub(crate) const LINE_COLORS: [RGBColor; 7] = [
    RGBColor(0xb3, 0x47, 0x00),
    RGBColor(0x3b, 0x6e, 0xa8),
    RGBColor(0x1b, 0x7a, 0x3a),
    RGBColor(0x5b, 0x3a, 0x8c),
    RGBColor(0x80, 0x80, 0x80),
    RGBColor(0x00, 0x9e, 0xa0),
    RGBColor(0x10, 0x10, 0x10),
];

/// The mark on every point of a line chart's series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Disc,
    Triangle,
    Square,
    Cross,
    Diamond,
    Ring,
    Plus,
}

/// How a line chart's series is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    /// Dashes of 8 pixels with gaps of 4.
    Long,
    /// Dashes of 3 pixels with gaps of 3.
    Short,
}

/// The style of the line charts' series, in order: every series of a chart (seven at most) has
/// its own colour and its own marker, and consecutive ones differ in their strokes, so that lines
/// that lie on each other (two peers of one speed) both show: the one drawn later in dashes over
/// the other, their markers apart.
pub const LINE_STYLES: [(Marker, Dash); 7] = [
    (Marker::Disc, Dash::Solid),
    (Marker::Triangle, Dash::Long),
    (Marker::Square, Dash::Short),
    (Marker::Cross, Dash::Solid),
    (Marker::Diamond, Dash::Long),
    (Marker::Ring, Dash::Short),
    (Marker::Plus, Dash::Solid),
];

/// Draws a series' marker at `at` (a point of the chart, or a pixel of the legend) on `area`.
fn draw_marker<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    marker: Marker,
    color: RGBColor,
) -> Result<(), ChartError> {
    let filled = color.filled();
    let stroke = color.stroke_width(2);
    let anchor = EmptyElement::at(at);
    match marker {
        Marker::Disc => area.draw(&(anchor + Circle::new((0, 0), 3, filled))),
        Marker::Triangle => area.draw(&(anchor + TriangleMarker::new((0, 0), 5, filled))),
        Marker::Square => area.draw(&(anchor + Rectangle::new([(-3, -3), (3, 3)], filled))),
        Marker::Cross => area.draw(&(anchor + Cross::new((0, 0), 4, stroke))),
        Marker::Diamond => {
            area.draw(&(anchor + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], filled)))
        }
        Marker::Ring => area.draw(&(anchor + Circle::new((0, 0), 4, stroke))),
        Marker::Plus => area.draw(
            &(anchor
                + PathElement::new(vec![(-5, 0), (5, 0)], stroke)
                + PathElement::new(vec![(0, -5), (0, 5)], stroke)),
        ),
    }
    .map_err(drawing)
}

/// Draws a series' stroke through `points` (pixels or the chart's coordinates) on `area`.
fn draw_stroke<DB: DrawingBackend, CT: CoordTranslate>(
    area: &DrawingArea<DB, CT>,
    points: Vec<CT::From>,
    dash: Dash,
    color: RGBColor,
) -> Result<(), ChartError>
where
    CT::From: Clone,
{
    let stroke = color.stroke_width(2);
    match dash {
        Dash::Solid => area.draw(&PathElement::new(points, stroke)),
        Dash::Long => area.draw(&DashedPathElement::new(points, 8, 4, stroke)),
        Dash::Short => area.draw(&DashedPathElement::new(points, 3, 3, stroke)),
    }
    .map_err(drawing)
}

/// A point of a line chart: x and y in the chart's coordinates.
type Point = (f64, f64);

/// Height of a line of the line charts' legend, and the length of its stretch of each line.
const LINE_LEGEND_ROW: i32 = 17;
const LINE_LEGEND_STROKE: i32 = 24;

/// Draws each `(name, points)` as a line with a marker on every point, in the colours of
/// [`LINE_COLORS`] and the markers and strokes of [`LINE_STYLES`], and the legend in the plot's
/// top left corner (each entry a stretch of its line with its marker, and its name): what the line
/// charts (accuracy, multi-GPU bandwidth, host data) share.
pub(crate) fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let area = chart.plotting_area();
    let styles = LINE_COLORS.iter().zip(LINE_STYLES.iter()).cycle();
    let mut drawn: Vec<(&[Point], RGBColor, Marker, Dash)> = series
        .iter()
        .zip(styles.clone())
        .map(|((_, line), (&color, &(mark, dash)))| (line.as_slice(), color, mark, dash))
        .collect();
    // Where two lines lie on each other both show: the solid strokes first, the dashed ones over
    // them; then the filled markers, the outlined ones (crosses, rings) over them.
    drawn.sort_by_key(|&(_, _, _, dash)| dash != Dash::Solid);
    for &(line, color, _, dash) in &drawn {
        draw_stroke(area, line.to_vec(), dash, color)?;
    }
    let outlined = |mark: Marker| matches!(mark, Marker::Cross | Marker::Ring | Marker::Plus);
    drawn.sort_by_key(|&(_, _, mark, _)| outlined(mark));
    for &(line, color, mark, _) in &drawn {
        for &point in line {
            draw_marker(area, point, mark, color)?;
        }
    }
    // The legend: a white box with a thin border, an entry per line.
    let pixels = area.strip_coord_spec();
    let px = 11;
    let widest = series.iter().map(|(name, _)| text_width(name, px)).fold(0.0, f64::max);
    let (left, top) = (10, 10);
    let width = LINE_LEGEND_STROKE + 8 + widest.ceil() as i32 + 14;
    let height = LINE_LEGEND_ROW * series.len() as i32 + 8;
    pixels
        .draw(&Rectangle::new([(left, top), (left + width, top + height)], WHITE.mix(0.9).filled()))
        .map_err(drawing)?;
    pixels
        .draw(&Rectangle::new([(left, top), (left + width, top + height)], BLACK.mix(0.3)))
        .map_err(drawing)?;
    for (i, ((name, _), (&color, &(mark, dash)))) in series.iter().zip(styles).enumerate() {
        let y = top + 4 + LINE_LEGEND_ROW * i as i32 + LINE_LEGEND_ROW / 2;
        let x = left + 7;
        draw_stroke(&pixels, vec![(x, y), (x + LINE_LEGEND_STROKE, y)], dash, color)?;
        draw_marker(&pixels, (x + LINE_LEGEND_STROKE / 2, y), mark, color)?;
        let style = font(px, TEXT).pos(Pos::new(HPos::Left, VPos::Center));
        pixels
            .draw(&Text::new(name.as_str(), (x + LINE_LEGEND_STROKE + 8, y), style))
            .map_err(drawing)?;
    }
    Ok(())
}

fn render(chart: &BarChart) -> Result<String, ChartError> {
    chart.validate()?;
    let layout = Layout::of(chart);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (SIZE.0, layout.height as u32)).into_drawing_area();
        draw(&root, chart, &layout)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// Where a chart's parts go, decided from the estimated widths of its texts.
struct Layout {
    /// The canvas' height.
    height: i32,
    /// Width of the column right of the plot that holds the lines' labels.
    line_label_width: u32,
    /// Height of the area under the plot that holds the step names.
    name_height: u32,
    /// How the step names are written.
    names: Names,
    /// Height of the legend under the title: a row, or more where its entries need them.
    legend_height: i32,
}

/// How the step names are written under the bars.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Names {
    /// Across, wrapped after hyphens into at most two lines, at this size.
    Across(u32),
    /// Upwards, ending at the axis, at this size: where they would not fit across.
    Upwards(u32),
}

impl Layout {
    fn of(chart: &BarChart) -> Layout {
        let value = |gbs: f64| format!("{gbs:.0} GB/s");
        let line_label_width = chart
            .lines()
            .iter()
            .map(|&(name, gbs, _, _)| {
                text_width(name, LINE_LABEL_PX).max(text_width(&value(gbs), LINE_LABEL_PX))
            })
            .fold(0.0, f64::max)
            .ceil() as u32
            + 8
            + MARGIN;
        let plot_width = SIZE.0 - MARGIN - Y_LABEL_WIDTH - line_label_width;
        let slot_px = f64::from(plot_width) / chart.bars.len() as f64;
        let max_width = slot_px - 4.0;
        let across = |px: u32| {
            let wrapped: Vec<Vec<String>> = chart
                .bars
                .iter()
                .map(|bar| wrap(&bar.label, |line| text_width(line, px), max_width))
                .collect();
            let widths: Vec<f64> = wrapped
                .iter()
                .map(|lines| lines.iter().map(|l| text_width(l, px)).fold(0.0, f64::max))
                .collect();
            wrapped.iter().all(|lines| lines.len() <= 2) && fits_slots(&widths, slot_px)
        };
        let names =
            match FONT_SIZES.into_iter().filter(|&px| px >= STEP_FONT_MIN).find(|&px| across(px)) {
                Some(px) => Names::Across(px),
                // Upwards, a name is as wide as a line of text: the largest size whose lines, with
                // a gap, fit the slots.
                None => Names::Upwards(
                    FONT_SIZES
                        .into_iter()
                        .find(|&px| f64::from(px) * 1.25 + 4.0 <= slot_px)
                        .unwrap_or(BAR_FONT_MIN),
                ),
            };
        let name_height = match names {
            Names::Across(_) => STEP_LABEL_HEIGHT,
            Names::Upwards(px) => {
                let longest =
                    chart.bars.iter().map(|b| text_width(&b.label, px)).fold(0.0, f64::max);
                STEP_LABEL_HEIGHT.max(longest.ceil() as u32 + 12)
            }
        };
        let legend: Vec<String> = chart.legend().into_iter().map(|(_, text, _)| text).collect();
        let legend_height = legend_height(&legend, SIZE.0);
        Layout {
            height: (SIZE.1 - STEP_LABEL_HEIGHT + name_height) as i32 + legend_height - SWATCH,
            line_label_width,
            name_height,
            names,
            legend_height,
        }
    }
}

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &BarChart,
    layout: &Layout,
) -> Result<(), ChartError> {
    root.fill(&BACKGROUND).map_err(drawing)?;
    let title_bottom = draw_title(root, chart.title)?;
    let legend_top = title_bottom + 8;
    draw_legend(root, &chart.legend(), legend_top)?;
    let (_, plot_area) = root.split_vertically(legend_top + layout.legend_height + 4);

    let count = chart.bars.len();
    let y_max = chart.y_max();
    let mut plot = ChartBuilder::on(&plot_area)
        .margin(MARGIN)
        .margin_right(layout.line_label_width)
        .x_label_area_size(layout.name_height)
        .y_label_area_size(Y_LABEL_WIDTH)
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

    // Bars, each in its series' colour, then the lines over them, so a line stays visible where a
    // bar reaches it.
    let series = chart.series();
    plot.draw_series(chart.bars.iter().enumerate().map(|(i, bar)| {
        let x = i as f64;
        Rectangle::new([(x + 0.18, 0.0), (x + 0.82, bar.gbs)], chart.color(&series, bar).filled())
    }))
    .map_err(drawing)?;
    let right = count as f64;
    for (_, gbs, color, dashed) in chart.lines() {
        let points = vec![(0.0, gbs), (right, gbs)];
        if dashed {
            plot.draw_series(std::iter::once(DashedPathElement::new(
                points,
                8,
                5,
                color.stroke_width(2),
            )))
        } else {
            plot.draw_series(std::iter::once(PathElement::new(points, color.stroke_width(2))))
        }
        .map_err(drawing)?;
    }

    // Pixel geometry, for the labels drawn on the root area.
    let (left_px, top_px) = plot.backend_coord(&(0.0, y_max));
    let (right_px, bottom_px) = plot.backend_coord(&(right, 0.0));
    let slot_px = f64::from(right_px - left_px) / count as f64;

    let line_ys: Vec<i32> =
        chart.lines().iter().map(|line| plot.backend_coord(&(0.0, line.1)).1).collect();
    draw_bar_labels(root, chart, slot_px, &line_ys, top_px, |x, y| plot.backend_coord(&(x, y)))?;
    draw_step_names(root, chart.bars, layout.names, slot_px, left_px, bottom_px)?;
    draw_line_labels(root, chart, right_px, (top_px, bottom_px), |y| {
        plot.backend_coord(&(0.0, y)).1
    })?;
    Ok(())
}

/// The labels over a bar: its GB/s and its share of its own roof. A label that would cross a line
/// is lifted above it; an opaque backdrop keeps grid lines from crossing the text.
fn draw_bar_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &BarChart,
    slot_px: f64,
    line_ys: &[i32],
    top_px: i32,
    to_px: impl Fn(f64, f64) -> (i32, i32),
) -> Result<(), ChartError> {
    // "4388 GB/s" over "97% of read" where that fits; in narrower slots "4388 GB/s" over "97%";
    // in the narrowest "97%" alone (the axis gives the GB/s).
    let label = |bar: &Bar, form: Form| -> Vec<String> {
        let share = if bar.roof_binds {
            let percent = 100.0 * bar.gbs / bar.roof_gbs;
            let percent =
                if percent < 10.0 { format!("{percent:.1}%") } else { format!("{percent:.0}%") };
            if form == Form::Long { format!("{percent} of {}", bar.roof) } else { percent }
        } else {
            measuring::tables::IN_L2.to_string()
        };
        match form {
            Form::ShareOnly => vec![share],
            _ => vec![format!("{:.0} GB/s", bar.gbs), share],
        }
    };
    // One form and font size for every bar: the largest that fits the slots.
    let width = |labels: &[Vec<String>], px: u32| -> Vec<f64> {
        labels
            .iter()
            .map(|lines| lines.iter().map(|l| text_width(l, px)).fold(0.0, f64::max))
            .collect()
    };
    let labels_in = |form: Form| -> Vec<Vec<String>> {
        chart.bars.iter().map(|bar| label(bar, form)).collect()
    };
    let choices =
        |min: u32| FONT_SIZES.into_iter().filter(move |&px| (min..=BAR_FONT_MAX).contains(&px));
    let (form, px) = choices(BAR_FONT_LONG_MIN)
        .map(|px| (Form::Long, px))
        .chain(choices(BAR_FONT_MIN).map(|px| (Form::Short, px)))
        .chain(choices(BAR_FONT_MIN).map(|px| (Form::ShareOnly, px)))
        .find(|&(form, px)| fits_slots(&width(&labels_in(form), px), slot_px))
        .unwrap_or((Form::ShareOnly, BAR_FONT_MIN));
    let labels = labels_in(form);
    let line_px = (f64::from(px) * 1.25).round() as i32;
    let style = font(px, TEXT).pos(Pos::new(HPos::Center, VPos::Bottom));

    // Lines from the bottom of the plot up, so a label lifted over one is then checked against
    // those above it.
    let mut line_ys = line_ys.to_vec();
    line_ys.sort_unstable_by(|a, b| b.cmp(a));
    for (i, (bar, lines)) in chart.bars.iter().zip(&labels).enumerate() {
        let rows = lines.len() as i32;
        let (cx, top) = to_px(i as f64 + 0.5, bar.gbs);
        let mut bottom = top - 3;
        for &line_y in &line_ys {
            if line_y > bottom - rows * line_px - 4 && line_y < bottom + 4 {
                bottom = line_y - 4;
            }
        }
        // Never above the plot: the y axis leaves room over the highest line for a label.
        let bottom = bottom.max(top_px + rows * line_px + 1);
        let half_width = (width(std::slice::from_ref(lines), px)[0] / 2.0).ceil() as i32 + 2;
        root.draw(&Rectangle::new(
            [(cx - half_width, bottom - rows * line_px - 1), (cx + half_width, bottom + 1)],
            BACKGROUND.filled(),
        ))
        .map_err(drawing)?;
        for (row, line) in lines.iter().enumerate() {
            let y = bottom - (rows - 1 - row as i32) * line_px;
            root.draw(&Text::new(line.as_str(), (cx, y), style.clone())).map_err(drawing)?;
        }
    }
    Ok(())
}

/// What a bar's label says.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    /// Its GB/s over its share of its roof, naming the roof.
    Long,
    /// Its GB/s over its share.
    Short,
    /// Its share alone.
    ShareOnly,
}

/// Step names under the bars, peers' in italics: across, wrapped after hyphens, or upwards
/// ([`Names`]).
fn draw_step_names(
    root: &DrawingArea<SVGBackend, Shift>,
    bars: &[Bar],
    names: Names,
    slot_px: f64,
    left_px: i32,
    bottom_px: i32,
) -> Result<(), ChartError> {
    let style =
        |bar: &Bar, px: u32| if bar.peer.is_some() { italic(px, TEXT) } else { font(px, TEXT) };
    for (i, bar) in bars.iter().enumerate() {
        let cx = left_px + ((i as f64 + 0.5) * slot_px).round() as i32;
        match names {
            Names::Across(px) => {
                let line_px = (f64::from(px) * 1.25).round() as i32;
                let max_width = slot_px - 4.0;
                let style = style(bar, px).pos(Pos::new(HPos::Center, VPos::Top));
                for (row, line) in
                    wrap(&bar.label, |line| text_width(line, px), max_width).iter().enumerate()
                {
                    let y = bottom_px + 6 + row as i32 * line_px;
                    root.draw(&Text::new(line.as_str(), (cx, y), style.clone()))
                        .map_err(drawing)?;
                }
            }
            Names::Upwards(px) => {
                // Rotated a quarter turn anticlockwise about its anchor: the end of the text at
                // the anchor, under the axis, and the text running down from it, read upwards.
                let style = style(bar, px)
                    .pos(Pos::new(HPos::Right, VPos::Center))
                    .transform(FontTransform::Rotate270);
                root.draw(&Text::new(bar.label.as_str(), (cx, bottom_px + 6), style))
                    .map_err(drawing)?;
            }
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

/// Splits `label` into lines no wider than `max` by `width`, breaking after a `-` or at a newline:
/// one line where it fits, else the two most even lines that fit, else as many as it takes (a
/// piece with no break point that does not fit stays whole).
fn wrap(label: &str, width: impl Fn(&str) -> f64, max: f64) -> Vec<String> {
    let fits = |line: &str| width(line) <= max;
    let mut lines = Vec::new();
    for part in label.lines() {
        let pieces: Vec<&str> = part.split_inclusive('-').collect();
        let two = (1..pieces.len())
            .map(|at| (pieces[..at].concat(), pieces[at..].concat()))
            .filter(|(first, second)| fits(first) && fits(second))
            .min_by(|a, b| width(&a.0).max(width(&a.1)).total_cmp(&width(&b.0).max(width(&b.1))));
        match two {
            _ if fits(part) => lines.push(part.to_string()),
            Some((first, second)) => lines.extend([first, second]),
            None => {
                let mut line = String::new();
                for piece in pieces {
                    if !line.is_empty() && !fits(&format!("{line}{piece}")) {
                        lines.push(std::mem::take(&mut line));
                    }
                    line.push_str(piece);
                }
                lines.push(line);
            }
        }
    }
    lines
}

/// Splits `text` at spaces into lines no wider than `max` by `width` (a word wider than that
/// stays whole on its line).
fn wrap_words(text: &str, width: impl Fn(&str) -> f64, max: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if width(&format!("{line} {word}")) <= max => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The lines' names and values, right of the plot at each line's height, pushed apart where lines
/// are too close for their labels, and kept between the top and the bottom of the plot.
fn draw_line_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    chart: &BarChart,
    right_px: i32,
    (top_px, bottom_px): (i32, i32),
    y_px: impl Fn(f64) -> i32,
) -> Result<(), ChartError> {
    let line_px = 15;
    let mut labels: Vec<(i32, &str, f64, RGBColor)> = chart
        .lines()
        .into_iter()
        .map(|(name, gbs, color, _)| (y_px(gbs), name, gbs, color))
        .collect();
    // Each label is two lines, the name above the line's height and the value below it; keep
    // them two lines apart, moving labels down from the top, then the whole stack up if it left
    // the plot's bottom, and down if it then left its top.
    labels.sort_by_key(|label| label.0);
    let gap = 2 * line_px + 2;
    let mut shifted: Vec<i32> = Vec::new();
    for label in &labels {
        let lowest_allowed = shifted.last().map_or(i32::MIN, |&previous| previous + gap);
        shifted.push(label.0.max(lowest_allowed));
    }
    let overshoot = shifted.iter().zip(&labels).map(|(s, l)| s - l.0).max().unwrap_or(0) / 2;
    let below_bottom =
        shifted.last().map_or(0, |last| (last - overshoot + line_px - bottom_px).max(0));
    let above_top = shifted
        .first()
        .map_or(0, |first| (top_px + line_px - (first - overshoot - below_bottom)).max(0));
    for ((_, name, gbs, color), y) in labels.into_iter().zip(shifted) {
        let y = y - overshoot - below_bottom + above_top;
        let style = font(LINE_LABEL_PX, color).pos(Pos::new(HPos::Left, VPos::Bottom));
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
        assert!(!same_input(&case("32x64x56x56"), &case("64x512x14x14")));
        assert!(same_input(&case("64x512x14x14"), &case("64x512x14x14")));
    }

    #[test]
    fn wraps_after_hyphens() {
        let chars = |line: &str| line.chars().count() as f64;
        assert_eq!(wrap("unroll-last-warp", chars, 10.0), ["unroll-", "last-warp"]);
        assert_eq!(wrap("shuffle-vec4", chars, 12.0), ["shuffle-vec4"]);
        assert_eq!(wrap("complete-unroll", chars, 10.0), ["complete-", "unroll"]);
        assert_eq!(wrap("averyverylongname", chars, 4.0), ["averyverylongname"]);
        assert_eq!(wrap("two\nlines", chars, 20.0), ["two", "lines"]);
        // Two even lines rather than a full first line and a short second one.
        assert_eq!(wrap("cub-inclusive-f32", chars, 14.0), ["cub-", "inclusive-f32"]);
        assert_eq!(wrap("a-b-c-d-e-f", chars, 4.0), ["a-b-", "c-d-", "e-f"]);
    }

    /// A text and its box: `(text, left, top, right, bottom)`.
    type TextBox = (String, f64, f64, f64, f64);

    /// The texts of an SVG with their boxes as estimated by [`text_width`] (a wide face), and the
    /// canvas' size.
    fn estimated_boxes(svg: &str) -> ((f64, f64), Vec<TextBox>) {
        let attribute = |tag: &str, name: &str| -> Option<String> {
            let key = format!(" {name}=\"");
            let start = format!(" {tag}").find(&key)? + key.len() - 1;
            Some(tag[start..].split('"').next()?.to_string())
        };
        let number = |tag: &str, name: &str| {
            attribute(tag, name).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
        };
        let header = svg.split('>').next().unwrap_or_default();
        let size = (number(header, "width"), number(header, "height"));
        let boxes = svg
            .split("<text ")
            .skip(1)
            .filter_map(|rest| {
                let (tag, rest) = rest.split_once('>')?;
                let text = rest
                    .split("</text>")
                    .next()?
                    .trim()
                    .replace("&apos;", "'")
                    .replace("&amp;", "&");
                let (x, y, px) = (number(tag, "x"), number(tag, "y"), number(tag, "font-size"));
                let width = text_width(&text, px as u32);
                let (left, right) = match attribute(tag, "text-anchor").as_deref() {
                    Some("middle") => (x - width / 2.0, x + width / 2.0),
                    Some("end") => (x - width, x),
                    _ => (x, x + width),
                };
                let (top, bottom) = match attribute(tag, "dy").as_deref() {
                    Some("0.76em") => (y, y + px),
                    Some("0.5ex") => (y - px / 2.0, y + px / 2.0),
                    _ => (y - px, y),
                };
                // A quarter turn anticlockwise about (x, y): across becomes up, down becomes
                // across.
                let turned =
                    attribute(tag, "transform").is_some_and(|t| t.starts_with("rotate(270"));
                Some(if turned {
                    (text, x + (top - y), y - (right - x), x + (bottom - y), y - (left - x))
                } else {
                    (text, left, top, right, bottom)
                })
            })
            .collect();
        (size, boxes)
    }

    /// Every text of every chart the book draws from the committed data, and of crowded made-up
    /// ones, inside its canvas and clear of the others, by the widths estimated for a wide face
    /// (the browser check, scripts/check-book-render, measures the faces it has).
    #[test]
    fn every_chart_keeps_its_texts_inside_and_apart() {
        let bar = |i: usize, peer: bool| Bar {
            peer: peer.then(|| "NVIDIA CUB DeviceSomething::Long".to_string()),
            roof_binds: i % 5 != 0,
            ..Bar::new(&format!("a-rather-long-step-name-{i}"), 200.0 * i as f64, "copy", 4000.0)
        };
        let lines = Lines { read_gbs: 4100.0, copy_gbs: 4000.0, peak_gbs: Some(4800.0) };
        let mut charts: Vec<(String, String)> = [3, 8, 14, 24]
            .iter()
            .map(|&count| {
                let bars: Vec<Bar> = (0..count).map(|i| bar(i, i % 3 == 0)).collect();
                (format!("{count} made-up bars"), bar_chart("Made up", &bars, lines).unwrap())
            })
            .collect();
        let book =
            crate::book::render_book(course::registry(), &measuring::workspace_root()).unwrap();
        charts.extend(
            book.into_iter()
                .filter(|(path, _)| path.extension().is_some_and(|e| e == "svg"))
                .map(|(path, svg)| (path.display().to_string(), svg)),
        );
        assert!(charts.len() > 10, "the book's charts were not found");
        let mut problems = Vec::new();
        for (name, svg) in &charts {
            let ((width, height), boxes) = estimated_boxes(svg);
            for (text, left, top, right, bottom) in &boxes {
                if *left < 0.0 || *top < 0.0 || *right > width || *bottom > height {
                    problems.push(format!(
                        "{name}: `{text}` at [{left:.0}, {right:.0}] x [{top:.0}, {bottom:.0}]"
                    ));
                }
            }
            for (i, a) in boxes.iter().enumerate() {
                for b in &boxes[i + 1..] {
                    let across = a.3.min(b.3) - a.1.max(b.1);
                    let down = a.4.min(b.4) - a.2.max(b.2);
                    if across > 0.5 && down > 0.5 {
                        problems.push(format!("{name}: `{}` over `{}`", a.0, b.0));
                    }
                }
            }
        }
        assert!(
            problems.is_empty(),
            "texts outside their charts or over each other:\n{}",
            problems.join("\n")
        );
    }

    /// In every chapter's chart the book draws, and in a made-up one, two bars have one colour
    /// exactly when they are of one series (the course's steps or one peer, on one element type),
    /// and the legend shows each colour once: f32 and bf16 steps, and every peer, told apart.
    #[test]
    fn every_series_of_a_chart_has_its_own_colour_in_its_bars_and_legend() {
        fn fill(tag: &str) -> &str {
            tag.split("fill=\"").nth(1).unwrap().split('"').next().unwrap()
        }
        let check = |name: &str, bars: &[Bar], svg: &str| {
            let rects: Vec<&str> = svg
                .split("<rect ")
                .skip(1)
                .map(|r| r.split("/>").next().unwrap())
                .filter(|r| !r.contains("fill=\"#FFFFFF\""))
                .collect();
            let swatch = format!("width=\"{SWATCH}\" height=\"{SWATCH}\"");
            let (swatches, drawn): (Vec<&str>, Vec<&str>) =
                rects.iter().partition(|r| r.contains(&swatch));
            let legend: Vec<&str> = swatches.iter().map(|r| fill(r)).collect();
            assert_eq!(drawn.len(), bars.len(), "{name}: one rectangle per bar");
            for (i, a) in bars.iter().enumerate() {
                assert!(legend.contains(&fill(drawn[i])), "{name}: {}'s colour", a.label);
                for (j, b) in bars.iter().enumerate() {
                    let same_series = (&a.peer, &a.dtype) == (&b.peer, &b.dtype);
                    let same_colour = fill(drawn[i]) == fill(drawn[j]);
                    assert_eq!(same_series, same_colour, "{name}: {} and {}", a.label, b.label);
                }
            }
            let mut distinct = legend.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), legend.len(), "{name}: a colour twice in the legend");
        };
        let typed = |label: &str, dtype: &str, peer: Option<&str>| Bar {
            dtype: Some(dtype.to_string()),
            peer: peer.map(str::to_string),
            ..Bar::new(label, 100.0, "copy", 400.0)
        };
        let made_up = [
            typed("torch", "f32", Some("torch.softmax")),
            typed("torch-bf16", "bf16", Some("torch.softmax")),
            typed("cub", "f32", Some("CUB")),
            typed("a", "f32", None),
            typed("a-bf16", "bf16", None),
            typed("a-f16", "f16", None),
            typed("b", "f32", None),
        ];
        let lines = Lines { read_gbs: 410.0, copy_gbs: 400.0, peak_gbs: None };
        check("made up", &made_up, &bar_chart("Made up", &made_up, lines).unwrap());
        let mut charts = 0;
        let data = crate::data::book_data_dir();
        let gpus = crate::data::load_results_by_gpu(course::registry(), &data).unwrap();
        for family in &course::registry().families {
            for chapter in &family.chapters {
                for (_, results) in &gpus {
                    for case in family.chart_cases() {
                        let Some((title, bars, _)) = chapter_bars(family, chapter, results, case)
                        else {
                            continue;
                        };
                        let svg = chapter_chart(family, chapter, results, case).unwrap().unwrap();
                        check(&title, &bars, &svg);
                        charts += 1;
                    }
                }
            }
        }
        assert!(charts > 20, "only {charts} charts found");
    }

    /// Every series of a line chart has its own colour, marker and, from the one before it, stroke,
    /// and no line chart of the book has more series than there are styles.
    #[test]
    fn the_series_of_a_line_chart_never_share_a_style() {
        for (i, a) in LINE_STYLES.iter().enumerate() {
            for (j, b) in LINE_STYLES.iter().enumerate().skip(i + 1) {
                assert!(a.0 != b.0 && LINE_COLORS[i] != LINE_COLORS[j], "styles {i} and {j}");
            }
        }
        assert!(LINE_STYLES.windows(2).all(|pair| pair[0].1 != pair[1].1));
        assert!(crate::multi_gpu::METHODS.len() <= LINE_STYLES.len());
    }

    #[test]
    fn font_sizes_survive_plotters_scaling() {
        for px in FONT_SIZES.into_iter().chain([14, 16, 18]) {
            assert_eq!(format!("{}", f64::from(px) * 1.24 / 1.24), px.to_string());
        }
    }
}
