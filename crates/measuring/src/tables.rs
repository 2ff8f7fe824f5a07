//! The measured tables, rendered once and written two ways: Markdown for the book, aligned text for
//! the tour's and the benches' output.

use std::fmt::Write as _;

use course::{Chapter, Family, StepRef};

use crate::results::{Record, Results};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table with a caption.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The line above the table (the GPU and its software, what was measured).
    pub caption: String,
    pub columns: Vec<(&'static str, Align)>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The table in Markdown, after its caption.
    pub fn markdown(&self) -> String {
        let mut out = format!("{}\n\n|", self.caption);
        for (name, _) in &self.columns {
            let _ = write!(out, " {name} |");
        }
        out += "\n|";
        for (_, align) in &self.columns {
            out += if *align == Align::Right { "---:|" } else { ":---|" };
        }
        out += "\n";
        for row in &self.rows {
            out += "|";
            for cell in row {
                let _ = write!(out, " {cell} |");
            }
            out += "\n";
        }
        out
    }

    /// The table as aligned plain text (Markdown emphasis removed, from the caption too), after its
    /// caption.
    pub fn text(&self) -> String {
        let plain = |cell: &str| cell.replace("**", "").replace('*', "");
        let cells: Vec<Vec<String>> =
            std::iter::once(self.columns.iter().map(|(n, _)| n.to_string()).collect())
                .chain(self.rows.iter().map(|row| row.iter().map(|c| plain(c)).collect()))
                .collect();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|row| row.get(i).map_or(0, |c| c.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = format!("{}\n", plain(&self.caption));
        for row in &cells {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .zip(&self.columns)
                .map(|((cell, &width), (_, align))| match align {
                    Align::Left => format!("{cell:<width$}"),
                    Align::Right => format!("{cell:>width$}"),
                })
                .collect();
            out += "  ";
            out += line.join("  ").trim_end();
            out += "\n";
        }
        out
    }
}

/// One line naming the GPU, its software and the date of the run.
pub fn measured_on(results: &Results) -> String {
    let d = &results.device;
    let mut line = format!(
        "Measured on an {} ({} SMs, compute capability {}.{}), driver {}, CUDA {}, NVRTC {}, \
         on {}.",
        d.name,
        d.multiprocessors,
        d.compute_capability.0,
        d.compute_capability.1,
        d.driver_release.as_deref().unwrap_or("?"),
        d.driver_cuda_version,
        d.nvrtc_version,
        results.date
    );
    if let Some(peak) = results.theoretical_gbs {
        let _ = write!(line, " Theoretical DRAM bandwidth: {peak:.0} GB/s.");
    }
    line
}

/// The record of a step (or peer) of the family among `results`, at `case`.
pub fn find_record<'a>(results: &'a [Results], step: &StepRef, case: &str) -> Option<&'a Record> {
    results
        .iter()
        .filter(|r| r.crate_name == step.crate_name)
        .find_map(|r| r.record(step.name(), case))
}

/// `2.6012` ms with four decimals below 10 ms, else two.
fn ms(value: f64) -> String {
    if value < 10.0 { format!("{value:.4}") } else { format!("{value:.2}") }
}

fn percent(value: f64) -> String {
    format!("{value:.1}%")
}

/// What a table shows in place of a step's share of a roof that does not bind (see [`roof_binds`]).
pub const IN_L2: &str = "in L2";

/// Whether the roofs bind a step at the size it was measured at: whether the bytes it moves (its
/// input read once, its output written once: [`Record::bytes`]) exceed the L2 cache of the GPU it
/// ran on (`l2_cache_bytes`: 50 MiB on an H100, 60 MiB on an H200).
///
/// Where they fit, the roofs are no limit. A step called again and again finds its input in the
/// L2, while the read roof's streaming loads (evicted first) keep reading DRAM and the copy roof is
/// one driver call: the launch and the L2, not DRAM, set the times, and a step can pass 100% of a
/// roof (the scan's one-block steps at 2^11 elements, the half-precision sums at 2^24). Tables then
/// print [`IN_L2`] instead of its share of a roof (book/src/bandwidth.md explains). Beyond the L2 a
/// step that streams as well as the roof kernel lands within a percent of it, on either side, and
/// its share is shown as measured, above 100% too. A GPU that reports no L2 (the simulator) has no
/// such sizes.
pub fn roof_binds(record: &Record, l2_cache_bytes: u64) -> bool {
    record.bytes > l2_cache_bytes
}

/// The L2 cache of the GPU `results` were measured on, in bytes (0 when none was).
fn l2_of(results: &[Results]) -> u64 {
    results.first().map_or(0, |r| r.device.l2_cache_bytes)
}

/// A step's share of a roof as tables print it: `98.7%`, or [`IN_L2`] where the roof does not bind.
pub fn share_of_roof(record: &Record, l2_cache_bytes: u64, share: f64) -> String {
    if roof_binds(record, l2_cache_bytes) { percent(share) } else { IN_L2.to_string() }
}

/// What a caption adds when a table printed [`IN_L2`].
fn in_l2_note(rows: &[Vec<String>], l2_cache_bytes: u64) -> String {
    if !rows.iter().flatten().any(|cell| cell == IN_L2) {
        return String::new();
    }
    format!(
        " *{IN_L2}*: the step moves no more bytes than the GPU's L2 cache holds ({} MiB), so the \
         L2 and \
         the launch, not DRAM, set its time, and no share of a DRAM roof is shown.",
        l2_cache_bytes >> 20
    )
}

/// What a caption adds where a table shows peers that the tour does not time (PyTorch's ops, timed
/// by their script in the tour's session: `report::torch`).
pub fn script_note(shown: &[StepRef]) -> String {
    let mut sources: Vec<&str> = Vec::new();
    for step in shown.iter().filter(|s| !s.timed_by_tour()) {
        let source = step.peer.map_or(step.name(), |p| p.source.as_str());
        if !sources.contains(&source) {
            sources.push(source);
        }
    }
    if sources.is_empty() {
        return String::new();
    }
    format!(
        " {}: timed by {} in the same run as the steps, by the same rule.",
        sources.join(", "),
        course::TORCH_SCRIPT
    )
}

/// The two roofs of a record's case: `(name, GB/s, % of copy)`.
fn roofs_of(record: &Record) -> [(&'static str, f64, f64); 2] {
    let percent_of_copy = |gbs: f64| 100.0 * gbs / record.copy_gbs;
    [
        ("read roof", record.read_gbs, percent_of_copy(record.read_gbs)),
        ("copy roof", record.copy_gbs, percent_of_copy(record.copy_gbs)),
    ]
}

/// A step's cells: roof, time, GB/s, % of its roof, % of copy (the shares only where the roofs
/// bind: [`roof_binds`]).
fn measured_cells(record: &Record, l2_cache_bytes: u64) -> [String; 5] {
    [
        record.roof.clone(),
        ms(record.median_ms),
        format!("{:.0}", record.gbs),
        share_of_roof(record, l2_cache_bytes, record.percent_of_roof()),
        share_of_roof(record, l2_cache_bytes, record.percent_of_copy()),
    ]
}

/// How a peer is named in a table: its source and name, in italics.
fn peer_label(step: &StepRef) -> String {
    match step.peer {
        Some(peer) => format!("*{}* ({})", step.name(), peer.source),
        None => format!("**{}**", step.name()),
    }
}

/// The steps of `chapter` and the family's peers whose counterpart is one of them, peers first.
pub fn chapter_steps<'a>(family: &'a Family, chapter: &'a Chapter) -> Vec<StepRef<'a>> {
    let own: Vec<StepRef> =
        family.steps().filter(|s| s.peer.is_none() && s.crate_name == chapter.crate_name).collect();
    let peers = family.steps().filter(|s| {
        s.peer
            .and_then(|p| p.counterpart.as_deref())
            .is_some_and(|c| own.iter().any(|o| o.name() == c))
    });
    peers.chain(own.iter().copied()).collect()
}

/// A chapter's table on one GPU: for every case measured, the roofs, the peers of the chapter's
/// steps, and the steps. `None` when nothing of the chapter was measured there.
pub fn chapter_table(family: &Family, chapter: &Chapter, results: &[Results]) -> Option<Table> {
    let steps = chapter_steps(family, chapter);
    let l2 = l2_of(results);
    let mut cases: Vec<&str> = Vec::new();
    for step in &steps {
        for case in step.cases() {
            if !cases.contains(&case.label.as_str()) {
                cases.push(&case.label);
            }
        }
    }
    let mut rows = Vec::new();
    let mut first = None;
    let mut shown = Vec::new();
    for case in cases {
        let found: Vec<(StepRef, &Record)> =
            steps.iter().filter_map(|s| Some((*s, find_record(results, s, case)?))).collect();
        let Some((_, any)) = found.first() else { continue };
        first.get_or_insert(results.iter().find(|r| r.records.contains(any))?);
        for (name, gbs, of_copy) in roofs_of(any) {
            rows.push(vec![
                case.into(),
                name.into(),
                "".into(),
                "".into(),
                format!("{gbs:.0}"),
                "".into(),
                percent(of_copy),
            ]);
        }
        for (step, record) in found {
            rows.push(
                [vec![case.to_string(), peer_label(&step)], measured_cells(record, l2).to_vec()]
                    .concat(),
            );
            shown.push(step);
        }
    }
    let columns = vec![
        ("case", Align::Right),
        ("step", Align::Left),
        ("roof", Align::Left),
        ("time (ms)", Align::Right),
        ("GB/s", Align::Right),
        ("% of its roof", Align::Right),
        ("% of copy", Align::Right),
    ];
    let caption = measured_on(first?) + &script_note(&shown) + &in_l2_note(&rows, l2);
    Some(Table { caption, columns, rows })
}

/// The family's summary on one GPU, at its summary case: the roofs, the peers, then every ladder
/// step with its speedup over the step before and over the first. `None` when no step was measured.
pub fn summary_table(family: &Family, results: &[Results]) -> Option<Table> {
    let case = family.summary_case.label.as_str();
    let peers: Vec<(StepRef, &Record)> = family
        .steps()
        .filter(|s| s.peer.is_some())
        .filter_map(|s| Some((s, find_record(results, &s, case)?)))
        .collect();
    let ladder: Vec<(StepRef, &Record)> = family
        .steps()
        .filter(|s| s.on_ladder())
        .filter_map(|s| Some((s, find_record(results, &s, case)?)))
        .collect();
    let (_, first) = ladder.first()?;
    let origin = results.iter().find(|r| r.records.contains(first))?;
    let l2 = l2_of(results);
    let mut rows: Vec<Vec<String>> = roofs_of(first)
        .into_iter()
        .map(|(name, gbs, of_copy)| {
            let cells = [name, "", "", "", &format!("{gbs:.0}"), "", &percent(of_copy), "", ""];
            cells.map(str::to_string).to_vec()
        })
        .collect();
    for (step, record) in &peers {
        let crate_name = step.crate_name.to_string();
        rows.push(
            [
                vec![peer_label(step), crate_name],
                measured_cells(record, l2).to_vec(),
                vec!["".into(), "".into()],
            ]
            .concat(),
        );
    }
    let mut previous = first.median_ms;
    for (step, record) in &ladder {
        let speedups = vec![
            format!("{:.2}x", previous / record.median_ms),
            format!("{:.2}x", first.median_ms / record.median_ms),
        ];
        rows.push(
            [
                vec![peer_label(step), step.crate_name.to_string()],
                measured_cells(record, l2).to_vec(),
                speedups,
            ]
            .concat(),
        );
        previous = record.median_ms;
    }
    let columns = vec![
        ("step", Align::Left),
        ("crate", Align::Left),
        ("roof", Align::Left),
        ("time (ms)", Align::Right),
        ("GB/s", Align::Right),
        ("% of its roof", Align::Right),
        ("% of copy", Align::Right),
        ("step speedup", Align::Right),
        ("cumulative speedup", Align::Right),
    ];
    let peer_steps: Vec<StepRef> = peers.iter().map(|(s, _)| *s).collect();
    let caption = format!(
        "{} {} at {case}, every step in one run against the roofs of the same run.{}{}",
        measured_on(origin),
        family.title,
        script_note(&peer_steps),
        in_l2_note(&rows, l2)
    );
    Some(Table { caption, columns, rows })
}

/// Each step beside the peer that is its counterpart, at the summary case and every other case
/// measured: their bandwidths and the peer's time over the step's (above 1: the step is faster).
/// `None` when no pair was measured.
pub fn peers_table(family: &Family, results: &[Results]) -> Option<Table> {
    let mut rows = Vec::new();
    let mut origin = None;
    let mut shown = Vec::new();
    let l2 = l2_of(results);
    for case in &family.cases {
        for peer_step in family.steps().filter(|s| s.peer.is_some()) {
            let Some(counterpart) = peer_step.peer.and_then(|p| p.counterpart.as_deref()) else {
                continue;
            };
            let Some(ours) = family.step(counterpart) else { continue };
            let (Some(theirs), Some(mine)) = (
                find_record(results, &peer_step, &case.label),
                find_record(results, &ours, &case.label),
            ) else {
                continue;
            };
            origin.get_or_insert(mine);
            shown.push(peer_step);
            rows.push(vec![
                case.label.clone(),
                format!("**{}**", ours.name()),
                format!("{:.0}", mine.gbs),
                share_of_roof(mine, l2, mine.percent_of_roof()),
                peer_label(&peer_step),
                format!("{:.0}", theirs.gbs),
                share_of_roof(theirs, l2, theirs.percent_of_roof()),
                format!("{:.3}", theirs.median_ms / mine.median_ms),
            ]);
        }
    }
    let first = origin?;
    let origin = results.iter().find(|r| r.records.contains(first))?;
    let columns = vec![
        ("case", Align::Right),
        ("step", Align::Left),
        ("GB/s", Align::Right),
        ("% of its roof", Align::Right),
        ("peer", Align::Left),
        ("peer GB/s", Align::Right),
        ("peer % of its roof", Align::Right),
        ("peer time / step time", Align::Right),
    ];
    let caption = format!(
        "{} Each step and its peer measured in the same run.{}{}",
        measured_on(origin),
        script_note(&shown),
        in_l2_note(&rows, l2)
    );
    Some(Table { caption, columns, rows })
}
