//! Pictures of what a warp does, drawn from a simulator trace (`ptx_sim::LaunchTrace`) of a real
//! kernel, in the charts' style (white canvas, the charts' colours, `sans-serif`, sizes from the
//! input alone, so a fresh drawing compares byte for byte with the committed one):
//!
//! - [`lanes_picture`]: a block's threads across, its barrier phases (the rounds of a tree) down;
//!   each lane coloured by whether it did the phase's memory work, idled while its warp did it
//!   (divergence: the warp issues for lanes that do nothing), or belonged to a warp that skipped
//!   it;
//! - [`banks_picture`]: one warp-level shared access, its words in the 32 banks, one row per turn
//!   the banks take (extra rows are bank conflicts);
//! - [`sectors_picture`]: one warp-level global access, its lanes and the 32-byte sectors they
//!   touch (what the memory moves against what the lanes use).
//!
//! A picture has one or more panels, drawn under each other (the steps of a chapter, or a
//! student's kernel beside the reference's, [`beside`]).

use std::collections::BTreeMap;
use std::fmt::Write;

use plotters::style::RGBColor;
pub use ptx_sim::{Access, AccessKind, AccessSpace, LaunchTrace, TraceOptions, WarpStep};

use crate::charts::{AXIS, BAR, COPY_LINE, GRID, TEXT, text_width};

const MARGIN: f64 = 12.0;
const TITLE_PX: u32 = 16;
const LABEL_PX: u32 = 12;
const SMALL_PX: u32 = 10;
const TINY_PX: u32 = 9;
/// The width the grids of a picture aim at (pixels).
const GRID_WIDTH: f64 = 640.0;
/// Light grey: a warp that skipped the work.
const SKIPPED: RGBColor = GRID;

fn rgb(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// An SVG being written: its elements, and how far down the picture has got.
struct Svg {
    body: String,
    width: f64,
    y: f64,
    /// The right edge of the widest text so far (estimated for a wide face): the canvas grows to
    /// hold it.
    right: f64,
}

impl Svg {
    fn new(width: f64) -> Svg {
        Svg { body: String::new(), width, y: MARGIN, right: 0.0 }
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: RGBColor) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="{}"/>"#,
            rgb(fill)
        );
    }

    fn outline(&mut self, x: f64, y: f64, w: f64, h: f64, stroke: RGBColor) {
        let _ = writeln!(
            self.body,
            "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{w:.2}\" height=\"{h:.2}\" fill=\"none\" \
             stroke=\"{}\" stroke-width=\"1\"/>",
            rgb(stroke)
        );
    }

    fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: RGBColor) {
        let _ = writeln!(
            self.body,
            "<line x1=\"{x1:.2}\" y1=\"{y1:.2}\" x2=\"{x2:.2}\" y2=\"{y2:.2}\" stroke=\"{}\" \
             stroke-width=\"1\"/>",
            rgb(stroke)
        );
    }

    /// Text whose baseline is at `y`, anchored `start`, `middle` or `end` at `x`.
    fn text(&mut self, x: f64, y: f64, px: u32, anchor: &str, text: &str) {
        let w = text_width(text, px);
        self.right = self.right.max(match anchor {
            "start" => x + w,
            "middle" => x + w / 2.0,
            _ => x,
        });
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.2}\" y=\"{y:.2}\" font-family=\"sans-serif\" font-size=\"{px}\" \
             text-anchor=\"{anchor}\" fill=\"{}\">{}</text>",
            rgb(TEXT),
            escape(text)
        );
    }

    /// Text written upwards, centred on `(x, y)`.
    fn text_up(&mut self, x: f64, y: f64, px: u32, text: &str) {
        let _ = writeln!(
            self.body,
            "<text x=\"0\" y=\"0\" transform=\"translate({x:.2},{y:.2}) rotate(-90)\" \
             font-family=\"sans-serif\" font-size=\"{px}\" text-anchor=\"middle\" \
             fill=\"{}\">{}</text>",
            rgb(TEXT),
            escape(text)
        );
    }

    /// The title, centred, at the top.
    fn title(&mut self, title: &str) {
        let px = [TITLE_PX, 14, 12]
            .into_iter()
            .find(|&px| text_width(title, px) <= self.width - 2.0 * MARGIN)
            .unwrap_or(12);
        self.y += f64::from(px);
        let centre = self.width / 2.0;
        self.text(centre, self.y, px, "middle", title);
        self.y += 8.0;
    }

    /// A one-row legend, centred: a swatch and a text per entry.
    fn legend(&mut self, entries: &[(RGBColor, &str)]) {
        let widths: Vec<f64> =
            entries.iter().map(|(_, t)| 17.0 + text_width(t, LABEL_PX)).collect();
        let total = widths.iter().sum::<f64>() + 20.0 * entries.len().saturating_sub(1) as f64;
        let mut x = (self.width - total).max(2.0 * MARGIN) / 2.0;
        self.y += 12.0;
        for ((colour, text), w) in entries.iter().zip(widths) {
            self.rect(x, self.y - 10.0, 12.0, 12.0, *colour);
            self.text(x + 17.0, self.y, LABEL_PX, "start", text);
            x += w + 20.0;
        }
        self.y += 10.0;
    }

    fn finish(self) -> String {
        let (w, h) = (self.width.max(self.right + MARGIN).ceil(), (self.y + MARGIN).ceil());
        format!(
            "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             xmlns=\"http://www.w3.org/2000/svg\">\n\
             <rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n{}</svg>\n",
            self.body
        )
    }
}

/// What a lane did in one phase of its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneState {
    /// It executed a memory access of the phase.
    Works,
    /// Its warp issued the phase's memory accesses, without it: an issue slot spent on nothing.
    Idles,
    /// Its warp issued no memory access in the phase.
    Skipped,
}

/// The lanes of the first block of `trace`, phase by phase: `[phase][thread]`.
pub fn lane_states(trace: &LaunchTrace) -> Vec<Vec<LaneState>> {
    let threads = (trace.block.0 * trace.block.1 * trace.block.2) as usize;
    let warps = threads.div_ceil(32);
    let block = trace.steps.first().map_or(0, |s| s.block);
    let steps: Vec<&WarpStep> = trace.steps.iter().filter(|s| s.block == block).collect();
    let phases = steps.iter().map(|s| s.phase as usize + 1).max().unwrap_or(0);
    // Per phase and warp: the lanes that accessed memory, and whether the warp issued an access.
    let mut work = vec![vec![(0u32, false); warps]; phases];
    for s in &steps {
        if s.access.is_some() {
            let cell = &mut work[s.phase as usize][s.warp as usize];
            cell.0 |= s.executed;
            cell.1 = true;
        }
    }
    work.iter()
        .map(|row| {
            (0..threads)
                .map(|t| match row[t / 32] {
                    (lanes, _) if lanes >> (t % 32) & 1 == 1 => LaneState::Works,
                    (_, true) => LaneState::Idles,
                    _ => LaneState::Skipped,
                })
                .collect()
        })
        .collect()
}

/// Lanes over time: one panel per `(label, trace)`, each the first block of its trace.
pub fn lanes_picture(title: &str, panels: &[(String, &LaunchTrace)]) -> String {
    let threads = panels
        .iter()
        .map(|(_, t)| (t.block.0 * t.block.1 * t.block.2) as usize)
        .max()
        .unwrap_or(32)
        .max(1);
    let warps = threads.div_ceil(32);
    let gap = if warps <= 16 { 4.0 } else { 1.0 };
    let cell = ((GRID_WIDTH - gap * (warps - 1) as f64) / threads as f64).clamp(0.5, 8.0);
    let grid_width = cell * threads as f64 + gap * (warps - 1) as f64;
    let left = MARGIN + 22.0 + text_width("phase 00", SMALL_PX) + 6.0;
    let right_column = text_width("lanes used", SMALL_PX) + 8.0;
    let width = left + grid_width + 8.0 + right_column + MARGIN;
    let mut svg = Svg::new(width);
    svg.title(title);
    svg.legend(&[
        (BAR, "lane does the phase's memory work"),
        (COPY_LINE, "lane idles, its warp works"),
        (SKIPPED, "warp skips it"),
    ]);
    let x_of = |t: usize| left + cell * t as f64 + gap * (t / 32) as f64;
    const ROW: f64 = 14.0;
    for (label, trace) in panels {
        let states = lane_states(trace);
        svg.y += 22.0;
        svg.text(left, svg.y, LABEL_PX, "start", label);
        svg.text(left + grid_width + 8.0 + right_column, svg.y, SMALL_PX, "end", "lanes used");
        svg.y += 6.0;
        let top = svg.y;
        for (phase, row) in states.iter().enumerate() {
            let y = top + phase as f64 * ROW;
            svg.text(left - 6.0, y + ROW - 4.0, SMALL_PX, "end", &format!("phase {phase}"));
            // Runs of equal states, drawn as one rectangle each.
            let mut t = 0;
            while t < row.len() {
                let mut end = t + 1;
                while end < row.len() && row[end] == row[t] && end % 32 != 0 {
                    end += 1;
                }
                let colour = match row[t] {
                    LaneState::Works => BAR,
                    LaneState::Idles => COPY_LINE,
                    LaneState::Skipped => SKIPPED,
                };
                svg.rect(x_of(t), y + 1.0, x_of(end - 1) + cell - x_of(t), ROW - 2.0, colour);
                t = end;
            }
            let works = row.iter().filter(|s| **s == LaneState::Works).count();
            let issued = row.iter().filter(|s| **s != LaneState::Skipped).count();
            let used = if issued == 0 {
                "-".to_string()
            } else {
                format!("{:.0}%", 100.0 * works as f64 / issued as f64)
            };
            svg.text(left + grid_width + 8.0 + right_column, y + ROW - 4.0, SMALL_PX, "end", &used);
        }
        let bottom = top + states.len() as f64 * ROW;
        svg.text_up(MARGIN + 8.0, (top + bottom) / 2.0, SMALL_PX, "barrier phase");
        svg.y = bottom + 12.0;
        let per_label = (32.0 * cell + gap).max(1.0);
        let step = (text_width("warp 00", TINY_PX) / per_label).ceil().max(1.0) as usize;
        for w in (0..states.first().map_or(0, Vec::len).div_ceil(32)).step_by(step) {
            let centre = x_of(w * 32) + 16.0 * cell;
            svg.text(centre, svg.y, TINY_PX, "middle", &format!("warp {w}"));
        }
        svg.y += 14.0;
        svg.text(
            left + grid_width / 2.0,
            svg.y,
            SMALL_PX,
            "middle",
            "threads of block 0, lane by lane, in warps of 32",
        );
    }
    svg.finish()
}

/// The banks of a shared access: for each bank, the turns it takes, each the lanes it serves then.
fn bank_turns(access: &Access) -> Vec<Vec<Vec<u32>>> {
    let mut banks: Vec<Vec<Vec<u32>>> = vec![Vec::new(); 32];
    if access.kind == AccessKind::Atomic {
        for l in &access.lanes {
            banks[((l.address / 4) % 32) as usize].push(vec![l.lane]);
        }
        return banks;
    }
    let mut words: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for l in &access.lanes {
        for word in l.address / 4..(l.address + u64::from(l.bytes.max(1))).div_ceil(4) {
            words.entry(word).or_default().push(l.lane);
        }
    }
    for (word, lanes) in words {
        banks[(word % 32) as usize].push(lanes);
    }
    banks
}

/// A warp's shared access against the 32 banks: one panel per `(label, access)`.
pub fn banks_picture(title: &str, panels: &[(String, Access)]) -> String {
    const CELL: f64 = 20.0;
    const ROW: f64 = 14.0;
    let left = MARGIN + 22.0 + text_width("00", SMALL_PX) + 6.0;
    let width = left + 32.0 * CELL + MARGIN + 8.0;
    let mut svg = Svg::new(width);
    svg.title(title);
    svg.legend(&[
        (BAR, "word served in the least turns possible"),
        (COPY_LINE, "extra turn: a bank conflict"),
    ]);
    for (label, access) in panels {
        let banks = bank_turns(access);
        let turns = banks.iter().map(Vec::len).max().unwrap_or(0);
        let least = access.wavefronts() - access.extra_wavefronts();
        svg.y += 22.0;
        let what = match access.kind {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::Atomic => "atomic",
        };
        let extra = access.extra_wavefronts();
        let article = if what == "atomic" { "an" } else { "a" };
        let summary = format!(
            "{label}: {article} {what} of {} lanes, {} turn{} ({} extra)",
            access.lanes.len(),
            access.wavefronts(),
            if access.wavefronts() == 1 { "" } else { "s" },
            extra
        );
        svg.text(left, svg.y, LABEL_PX, "start", &summary);
        svg.y += 16.0;
        for b in 0..32 {
            svg.text(left + (b as f64 + 0.5) * CELL, svg.y, TINY_PX, "middle", &b.to_string());
        }
        svg.y += 4.0;
        let top = svg.y;
        for (b, bank) in banks.iter().enumerate() {
            for (turn, lanes) in bank.iter().enumerate() {
                let (x, y) = (left + b as f64 * CELL, top + turn as f64 * ROW);
                let colour = if (turn as u64) < least { BAR } else { COPY_LINE };
                svg.rect(x + 1.0, y + 1.0, CELL - 2.0, ROW - 2.0, colour);
                let text =
                    if lanes.len() == 1 { lanes[0].to_string() } else { format!("{}+", lanes[0]) };
                let _ = writeln!(
                    svg.body,
                    "<text x=\"{:.2}\" y=\"{:.2}\" font-family=\"sans-serif\" \
                     font-size=\"{TINY_PX}\" text-anchor=\"middle\" fill=\"#ffffff\">{text}</text>",
                    x + CELL / 2.0,
                    y + ROW - 4.0
                );
            }
        }
        let bottom = top + turns.max(1) as f64 * ROW;
        for turn in 0..turns {
            if turn == 0 || (turn + 1) % 8 == 0 {
                svg.text(
                    left - 4.0,
                    top + turn as f64 * ROW + ROW - 4.0,
                    TINY_PX,
                    "end",
                    &(turn + 1).to_string(),
                );
            }
        }
        svg.outline(left, top, 32.0 * CELL, bottom - top, AXIS);
        svg.text_up(MARGIN + 8.0, (top + bottom) / 2.0, SMALL_PX, "turn");
        svg.y = bottom + 14.0;
        svg.text(
            left + 16.0 * CELL,
            svg.y,
            SMALL_PX,
            "middle",
            "bank (each cell: the lane whose word it serves; n+: lanes sharing a word)",
        );
    }
    svg.finish()
}

/// A warp's global access against the 32-byte sectors it touches: one panel per `(label, access)`.
pub fn sectors_picture(title: &str, panels: &[(String, Access)]) -> String {
    const LANE: f64 = 20.0;
    let left = MARGIN + text_width("sectors", SMALL_PX) + 8.0;
    let rows: Vec<f64> = panels.iter().map(|(_, a)| sector_row(&a.sectors()).2).collect();
    let widest = rows.iter().copied().fold(32.0 * LANE, f64::max);
    let width = left + widest + MARGIN;
    // The lanes, centred over the widest row of sectors.
    let lanes_left = left + (widest - 32.0 * LANE) / 2.0;
    let mut svg = Svg::new(width);
    svg.title(title);
    svg.legend(&[(BAR, "bytes a lane uses"), (SKIPPED, "bytes moved for nothing")]);
    for (label, access) in panels {
        let sectors = access.sectors();
        let used: u64 = access.lanes.iter().map(|l| u64::from(l.bytes)).sum();
        let moved = sectors.len() as u64 * 32;
        svg.y += 22.0;
        let summary = format!(
            "{label}: {} lanes, {} sector{}: {moved} bytes moved for {used} used ({:.0}%)",
            access.lanes.len(),
            sectors.len(),
            if sectors.len() == 1 { "" } else { "s" },
            100.0 * used as f64 / moved.max(1) as f64
        );
        svg.text(left, svg.y, LABEL_PX, "start", &summary);
        svg.y += 8.0;
        // Lanes in a row.
        let lanes_top = svg.y;
        svg.text(lanes_left - 6.0, lanes_top + 14.0, SMALL_PX, "end", "lanes");
        for l in 0..32u32 {
            let x = lanes_left + f64::from(l) * LANE;
            let active = access.lanes.iter().any(|a| a.lane == l);
            svg.rect(x + 1.0, lanes_top, LANE - 2.0, 18.0, if active { BAR } else { SKIPPED });
            let _ = writeln!(
                svg.body,
                "<text x=\"{:.2}\" y=\"{:.2}\" font-family=\"sans-serif\" font-size=\"{TINY_PX}\" \
                 text-anchor=\"middle\" fill=\"{}\">{l}</text>",
                x + LANE / 2.0,
                lanes_top + 13.0,
                if active { "#ffffff" } else { "#1a1a1a" }
            );
        }
        // Sectors in address order, 8 words each; a wider gap where they are not adjacent.
        let (word, gap, row_width) = sector_row(&sectors);
        let start = left + (widest - row_width) / 2.0;
        let sectors_top = lanes_top + 18.0 + 70.0;
        let mut x_of_sector = Vec::with_capacity(sectors.len());
        let mut x = start;
        for (i, s) in sectors.iter().enumerate() {
            if i > 0 {
                x += if *s == sectors[i - 1] + 1 { 1.0 } else { gap };
            }
            x_of_sector.push(x);
            x += word * 8.0;
        }
        let word_x = |address: u64| {
            let i = sectors.binary_search(&(address / 32)).unwrap_or(0);
            x_of_sector[i] + word * ((address % 32) / 4) as f64
        };
        for (i, &x) in x_of_sector.iter().enumerate() {
            let s = sectors[i];
            // The outline first: the words paint over its inner half.
            svg.outline(x, sectors_top, word * 8.0, 18.0, AXIS);
            for w in 0..8u64 {
                let address = s * 32 + w * 4;
                let used = access
                    .lanes
                    .iter()
                    .any(|l| l.address <= address && address < l.address + u64::from(l.bytes));
                svg.rect(
                    x + word * w as f64,
                    sectors_top,
                    word,
                    18.0,
                    if used { BAR } else { SKIPPED },
                );
            }
        }
        for l in &access.lanes {
            let from = (lanes_left + (f64::from(l.lane) + 0.5) * LANE, lanes_top + 18.0);
            let to = (word_x(l.address) + word / 2.0, sectors_top);
            svg.line(from, to, AXIS);
        }
        svg.text(left - 6.0, sectors_top + 14.0, SMALL_PX, "end", "sectors");
        svg.y = sectors_top + 18.0 + 14.0;
        svg.text(
            left + widest / 2.0,
            svg.y,
            SMALL_PX,
            "middle",
            "32-byte sectors touched, in address order (a wider gap: not adjacent)",
        );
    }
    svg.finish()
}

/// The layout of a row of `sectors` (sorted): the width of a 4-byte word, the gap between sectors
/// that are not adjacent, and the row's width; at least 3 pixels a word, so that a used word
/// shows (a row wider than the lanes' grows the picture).
fn sector_row(sectors: &[u64]) -> (f64, f64, f64) {
    const GAP: f64 = 4.0;
    let adjacent = sectors.windows(2).filter(|p| p[1] == p[0] + 1).count() as f64;
    let apart = sectors.len().saturating_sub(1) as f64 - adjacent;
    let gaps = adjacent + GAP * apart;
    let word = ((32.0 * 20.0 - gaps) / (8.0 * sectors.len().max(1) as f64)).clamp(3.0, 20.0);
    (word, GAP, word * 8.0 * sectors.len() as f64 + gaps)
}

/// Two pictures under each other, each under a heading: a student's beside the reference's.
pub fn beside(first: (&str, &str), second: (&str, &str)) -> String {
    let size = |svg: &str| -> (f64, f64) {
        let number = |key: &str| {
            svg.split_once(&format!("{key}=\""))
                .and_then(|(_, rest)| rest.split_once('"'))
                .and_then(|(v, _)| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (number("width"), number("height"))
    };
    let (w1, h1) = size(first.1);
    let (w2, h2) = size(second.1);
    let width = w1
        .max(w2)
        .max(text_width(first.0, LABEL_PX).max(text_width(second.0, LABEL_PX)) + 2.0 * MARGIN);
    let mut svg = Svg::new(width);
    for ((heading, picture), h) in [(first, h1), (second, h2)] {
        svg.y += 14.0;
        svg.text(MARGIN, svg.y, LABEL_PX, "start", heading);
        svg.y += 4.0;
        let inner = picture.replacen("<svg ", &format!("<svg x=\"0\" y=\"{:.2}\" ", svg.y), 1);
        svg.body.push_str(&inner);
        svg.y += h;
    }
    svg.finish()
}
