//! reduce-multi-gpu's measurements: what `cargo bench -p reduce-multi-gpu` and
//! `scripts/torch_allreduce.py` printed in one session on one machine, kept as
//! `book/src/data/multi-gpu/<machine>.txt`, drawn here as bus-bandwidth charts and tables.
//!
//! A file is `#` lines (`# device NVIDIA H200 x2`, `# date ...`, `# nccl ...`, `# torch ...`) and
//! measurement lines `<kind> <method> <gpus> <bytes> <ms>`: kind `allreduce` (an all-reduce of
//! `bytes` on every GPU, device time per call) or `full` (the sum of `bytes` of f32 split across
//! `gpus` GPUs, wall-clock time to the answer). Bandwidths are derived here, in one place.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::charts::{ChartError, draw_lines, drawing};
use crate::data::{MULTI_GPU as FOLDER, data_files};

/// The all-reduce methods, in the order charts show them: the peers, then the chapter's steps.
pub const METHODS: [&str; 7] =
    ["nccl", "torch", "ring", "one-shot", "two-shot", "two-shot-writes", "by-size"];

/// The chapter's steps that all-reduce a buffer, in order, with their names in tables.
pub const STEPS: [(&str, &str); 5] = [
    ("ring", "ring"),
    ("one-shot", "one-shot"),
    ("two-shot", "two-shot"),
    ("two-shot-writes", "two-shot by writes"),
    ("by-size", "by size"),
];

/// The course's best all-reduce in a session: the plan's choice by size where it was measured,
/// else the ring.
pub fn best_method(file: &MachineFile) -> &'static str {
    if file.rows.iter().any(|r| r.method == "by-size") { "by-size" } else { "ring" }
}

/// One measurement line.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub kind: String,
    pub method: String,
    pub gpus: usize,
    pub bytes: u64,
    pub ms: f64,
}

impl Row {
    /// Bytes per second of the data reduced, in GB/s (nccl-tests' algorithm bandwidth).
    pub fn algbw(&self) -> f64 {
        self.bytes as f64 / (self.ms * 1e-3) / 1e9
    }

    /// nccl-tests' bus bandwidth: algbw x 2(n - 1)/n.
    pub fn busbw(&self) -> f64 {
        self.algbw() * 2.0 * (self.gpus as f64 - 1.0) / self.gpus as f64
    }
}

/// One machine's session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MachineFile {
    /// The file's stem, e.g. `nvidia-h200-x2`.
    pub slug: String,
    /// `# name value` lines, in order.
    pub facts: Vec<(String, String)>,
    pub rows: Vec<Row>,
}

impl MachineFile {
    pub fn fact(&self, name: &str) -> &str {
        fact(&self.facts, name)
    }

    /// The all-reduce row of `method` on `gpus` GPUs at `bytes`.
    pub fn all_reduce(&self, method: &str, gpus: usize, bytes: u64) -> Option<&Row> {
        self.rows.iter().find(|r| {
            r.kind == "allreduce" && r.method == method && r.gpus == gpus && r.bytes == bytes
        })
    }

    /// The GPU counts the all-reduce was measured on, ascending.
    pub fn gpu_counts(&self) -> Vec<usize> {
        let mut counts: Vec<usize> =
            self.rows.iter().filter(|r| r.kind == "allreduce").map(|r| r.gpus).collect();
        counts.sort_unstable();
        counts.dedup();
        counts
    }

    /// The all-reduce sizes, ascending.
    pub fn sizes(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> =
            self.rows.iter().filter(|r| r.kind == "allreduce").map(|r| r.bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }
}

/// A session file's facts: `(name, value)` in file order.
pub(crate) type Facts = Vec<(String, String)>;

/// The `# name value` lines of a session file (multi-GPU or host data) as facts, in order, and
/// its other non-empty lines with their line numbers (from 1), trimmed.
pub(crate) fn facts_and_lines(text: &str) -> (Facts, Vec<(usize, &str)>) {
    let mut facts = Vec::new();
    let mut lines = Vec::new();
    for (number, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())) {
        if let Some(fact) = line.strip_prefix("# ") {
            let (name, value) = fact.split_once(' ').unwrap_or((fact, ""));
            facts.push((name.to_string(), value.to_string()));
        } else if !line.is_empty() {
            lines.push((number, line));
        }
    }
    (facts, lines)
}

/// The value of the fact `name`, or `?`.
pub(crate) fn fact<'a>(facts: &'a [(String, String)], name: &str) -> &'a str {
    facts.iter().find(|(n, _)| n == name).map_or("?", |(_, v)| v.as_str())
}

/// Parses a machine file.
pub fn parse(slug: &str, text: &str) -> Result<MachineFile, String> {
    let mut file = MachineFile { slug: slug.to_string(), ..MachineFile::default() };
    let (facts, lines) = facts_and_lines(text);
    file.facts = facts;
    for (number, line) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let bad = |why: &str| format!("{slug}.txt line {number}: {why}: `{line}`");
        let [kind, method, gpus, bytes, ms] = words[..] else {
            return Err(bad("expected 5 words"));
        };
        let row = Row {
            kind: kind.to_string(),
            method: method.to_string(),
            gpus: gpus.parse().map_err(|_| bad("GPU count"))?,
            bytes: bytes.parse().map_err(|_| bad("bytes"))?,
            ms: ms.parse().map_err(|_| bad("milliseconds"))?,
        };
        if !(row.ms.is_finite() && row.ms > 0.0 && row.gpus > 0) {
            return Err(bad("a time and a GPU count must be positive"));
        }
        file.rows.push(row);
    }
    Ok(file)
}

/// Every machine file under `data_dir/multi-gpu/`, sorted by name.
pub fn load_machines(data_dir: &Path) -> gpu_harness::Result<Vec<MachineFile>> {
    data_files(&data_dir.join(FOLDER), "txt")?
        .into_iter()
        .map(|(slug, text)| parse(&slug, &text).map_err(gpu_harness::GpuError::BadInput))
        .collect()
}

/// A size in KiB, MiB or GiB.
pub(crate) fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{} KiB", b >> 10),
    }
}

/// The all-reduce tables of `gpus` GPUs: the bus bandwidth of each of the chapter's steps, then
/// the best of them (by size) beside NCCL and PyTorch, time for time (above 1: ours is faster).
pub fn all_reduce_table(file: &MachineFile, gpus: usize) -> String {
    let steps: Vec<&(&str, &str)> =
        STEPS.iter().filter(|(m, _)| file.rows.iter().any(|r| r.method == *m)).collect();
    let cell = |method: &str, bytes: u64| {
        file.all_reduce(method, gpus, bytes)
            .map_or("-".to_string(), |r| format!("{:.1}", r.busbw()))
    };
    let mut out = String::from("| size per GPU |");
    for (_, name) in &steps {
        let _ = write!(out, " {name} |");
    }
    out += "\n| ---: |";
    out += &" ---: |".repeat(steps.len());
    out += "\n";
    for bytes in file.sizes() {
        let _ = write!(out, "| {} |", size_label(bytes));
        for (method, _) in &steps {
            let _ = write!(out, " {} |", cell(method, bytes));
        }
        out += "\n";
    }
    out += "\nBus bandwidth (GB/s), as nccl-tests reports it.\n\n";
    let best = best_method(file);
    let ms = |method: &str, bytes: u64| file.all_reduce(method, gpus, bytes).map(|r| r.ms);
    let time = |method: &str, bytes: u64| {
        ms(method, bytes).map_or("-".to_string(), |ms| format!("{:.1}", ms * 1e3))
    };
    let over = |peer: &str, bytes: u64| match (ms(peer, bytes), ms(best, bytes)) {
        (Some(theirs), Some(ours)) => format!("{:.2}", theirs / ours),
        _ => "-".into(),
    };
    let name = STEPS.iter().find(|(m, _)| *m == best).map_or(best, |(_, n)| *n);
    let _ = write!(
        out,
        "| size per GPU | NCCL (µs) | torch (µs) | {name} (µs) | NCCL / {name} | torch / {name} |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    );
    for bytes in file.sizes() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            size_label(bytes),
            time("nccl", bytes),
            time("torch", bytes),
            time(best, bytes),
            over("nccl", bytes),
            over("torch", bytes)
        );
    }
    out
}

pub fn full_table(file: &MachineFile) -> String {
    let rows: Vec<&Row> = file.rows.iter().filter(|r| r.kind == "full").collect();
    let single = rows.iter().find(|r| r.gpus == 1).map(|r| r.ms);
    let mut out = String::from(
        "| how | GPUs | time to the answer (ms) | GB/s | speed-up over one GPU |\n| --- | ---: | \
         ---: | ---: | ---: |\n",
    );
    for row in rows {
        let speed_up = single.map_or("-".to_string(), |s| format!("{:.2}", s / row.ms));
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {:.0} | {speed_up} |",
            row.method,
            row.gpus,
            row.ms,
            row.algbw()
        );
    }
    out
}

/// The chart of `gpus` GPUs: bus bandwidth against the size per GPU (log2), a line per method.
pub fn all_reduce_chart(file: &MachineFile, gpus: usize) -> Result<String, ChartError> {
    let series: Vec<(String, Vec<(f64, f64)>)> = METHODS
        .iter()
        .map(|&method| {
            let points = file
                .sizes()
                .into_iter()
                .filter_map(|bytes| file.all_reduce(method, gpus, bytes))
                .map(|r| ((r.bytes as f64).log2(), r.busbw()))
                .collect();
            (method.to_string(), points)
        })
        .filter(|(_, points): &(String, Vec<(f64, f64)>)| !points.is_empty())
        .collect();
    let title = format!("All-reduce of f32 on {gpus} GPUs: bus bandwidth, {}", file.fact("device"));
    size_lines_chart(&title, "size per GPU", "bus bandwidth (GB/s)", &series, 1.15)
}

/// A line chart of `series` against a size in bytes on a log2 axis (`x` is log2 of the size), the
/// legend top left, the y axis up to `headroom` times the highest point (room for the legend above
/// the lines): the multi-GPU and host-data charts.
pub(crate) fn size_lines_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    headroom: f64,
) -> Result<String, ChartError> {
    let all = || series.iter().flat_map(|(_, p)| p.iter());
    let (Some(x_min), Some(x_max)) =
        (all().map(|p| p.0).reduce(f64::min), all().map(|p| p.0).reduce(f64::max))
    else {
        return Err(ChartError::NoBars);
    };
    let top = all().map(|p| p.1).fold(0.0, f64::max) * headroom;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, crate::charts::SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let font = |px: f64| ("sans-serif", px * 1.24).into_font();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, font(15.0))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x_min - 0.3..x_max + 0.3, 0.0..top)
            .map_err(drawing)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(series[0].1.len())
            .x_label_formatter(&|x| size_label(2f64.powf(x.round()) as u64))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(font(10.0))
            .axis_desc_style(font(11.0))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(drawing)?;
        draw_lines(&mut chart, series)?;
        root.present().map_err(drawing)?;
    }
    Ok(svg)
}

/// A chart's file name: `<machine>-<gpus>gpus.svg`.
pub fn chart_file(file: &MachineFile, gpus: usize) -> String {
    format!("{}-{gpus}gpus.svg", file.slug)
}

/// One machine's part of the chapter: its facts, per GPU count a chart and a table, and the full
/// reduction's table.
pub fn machine_section(file: &MachineFile) -> Result<(Vec<(String, String)>, String), ChartError> {
    let mut charts = Vec::new();
    let mut body = format!(
        "Measured on an {} machine on {}: driver {}; NCCL {} ({}); torch {}; links: {}.\n\n",
        file.fact("device"),
        file.fact("date"),
        file.fact("driver"),
        file.fact("nccl"),
        file.fact("nvls"),
        file.fact("torch"),
        file.fact("topology"),
    );
    for gpus in file.gpu_counts() {
        let name = chart_file(file, gpus);
        charts.push((name.clone(), all_reduce_chart(file, gpus)?));
        let alt = format!(
            "Bus bandwidth of NCCL, torch and the chapter's steps on {gpus} GPUs of {}",
            file.fact("device")
        );
        let image = crate::book::chart_image(&alt, &format!("../data/{FOLDER}/{name}"));
        let _ = write!(
            body,
            "**All-reduce on {gpus} GPUs.**\n\n{image}\n\n{}\n",
            all_reduce_table(file, gpus)
        );
    }
    if file.rows.iter().any(|r| r.kind == "full") {
        let _ = write!(
            body,
            "**The sum of 2^30 f32, to the answer on the host.**\n\n{}",
            full_table(file)
        );
    }
    Ok((charts, body))
}
