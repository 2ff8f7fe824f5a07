//! reduce-host's measurements: what `cargo bench -p reduce-host` and `scripts/torch_host_sum.py`
//! printed in one session on one GPU, kept as `book/src/data/<gpu>/reduce-host.txt`, drawn here as
//! a chart and tables of bandwidth against the host link's roofs.
//!
//! A file is `#` lines (`# device NVIDIA H200`, `# date ...`, `# torch ...`) and measurement lines
//! `<method> <bytes> <ms>`: the time from the call to the answer on the host (or, for the roofs
//! `copy-pageable` and `copy-pinned`, to the copy's end) of the sum of `bytes` of f32 in host
//! memory. Bandwidths are derived here, in one place: bytes / time.

use std::fmt::Write as _;
use std::path::Path;

use crate::charts::ChartError;
use crate::multi_gpu::{fact, facts_and_lines, size_label, size_lines_chart};

/// The data file's name in a GPU's folder.
pub const FILE: &str = "reduce-host.txt";
/// The chart's name beside it.
pub const CHART: &str = "reduce-host.svg";

/// The methods the main table shows, in order, with their names there: the roofs, the peers, the
/// chapter's steps, the CPU, and the sum of the array once it is on the GPU.
pub const METHODS: [(&str, &str); 11] = [
    ("copy-pinned", "pinned copy (roof)"),
    ("copy-pageable", "pageable copy (roof)"),
    ("torch", "torch"),
    ("torch-pinned", "torch, pinned"),
    ("copy-then-reduce", "1 copy then reduce"),
    ("pinned", "2 pinned"),
    ("chunked", "3 chunked"),
    ("streamed", "4 streamed"),
    ("cpu", "5 CPU threads"),
    ("cpu-1", "5 CPU, one thread"),
    ("on-device", "already on the GPU"),
];

/// The methods the chart draws (one colour each): the roofs, torch from pageable memory, steps 1,
/// 2 and 4 (step 3 and torch from pinned memory lie on step 2's line) and the CPU's threads.
pub const CHART_METHODS: [&str; 7] =
    ["copy-pinned", "copy-pageable", "torch", "copy-then-reduce", "pinned", "streamed", "cpu"];

/// One measurement line.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub method: String,
    pub bytes: u64,
    pub ms: f64,
}

impl Row {
    /// The bytes summed (or copied) per second, in GB/s.
    pub fn gbs(&self) -> f64 {
        self.bytes as f64 / (self.ms * 1e-3) / 1e9
    }
}

/// One GPU's session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostFile {
    /// The GPU folder's name, e.g. `nvidia-h200`.
    pub slug: String,
    pub facts: Vec<(String, String)>,
    pub rows: Vec<Row>,
}

impl HostFile {
    pub fn fact(&self, name: &str) -> &str {
        fact(&self.facts, name)
    }

    pub fn row(&self, method: &str, bytes: u64) -> Option<&Row> {
        self.rows.iter().find(|r| r.method == method && r.bytes == bytes)
    }

    /// The sizes every step was measured at (the lines of the copy roof), ascending.
    pub fn sizes(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> =
            self.rows.iter().filter(|r| r.method == "copy-pinned").map(|r| r.bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// The rows of `method` (`pin`, `chunk-2`), in file order.
    pub fn rows_of<'a>(&'a self, method: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.method == method)
    }
}

/// Parses a session file.
pub fn parse(slug: &str, text: &str) -> Result<HostFile, String> {
    let mut file = HostFile { slug: slug.to_string(), ..HostFile::default() };
    let (facts, lines) = facts_and_lines(text);
    file.facts = facts;
    for (number, line) in lines {
        let bad = |why: &str| format!("{slug}/{FILE} line {number}: {why}: `{line}`");
        let words: Vec<&str> = line.split_whitespace().collect();
        let [method, bytes, ms] = words[..] else { return Err(bad("expected 3 words")) };
        let row = Row {
            method: method.to_string(),
            bytes: bytes.parse().map_err(|_| bad("bytes"))?,
            ms: ms.parse().map_err(|_| bad("milliseconds"))?,
        };
        if !(row.ms.is_finite() && row.ms > 0.0) {
            return Err(bad("a time must be positive"));
        }
        file.rows.push(row);
    }
    Ok(file)
}

/// Every GPU folder's session under `data_dir` (`<gpu>/reduce-host.txt`), sorted by folder.
pub fn load_sessions(data_dir: &Path) -> gpu_harness::Result<Vec<HostFile>> {
    let Ok(entries) = std::fs::read_dir(data_dir) else { return Ok(Vec::new()) };
    let mut paths: Vec<_> =
        entries.flatten().map(|e| e.path().join(FILE)).filter(|p| p.is_file()).collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| measuring::results::io_error(&path, e))?;
            let slug =
                path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
            parse(&slug.unwrap_or_default(), &text).map_err(gpu_harness::GpuError::BadInput)
        })
        .collect()
}

/// The value a prose marker `host <gpu> <method> <bytes> <value>` names: `gbs`, `ms`, `us`,
/// `roof%` (percent of the pinned copy's bandwidth at that size), `pageable%` (of the pageable
/// copy's) or `speedup:<method>` (that method's time over this one's).
pub fn lookup(words: &[&str], sessions: &[HostFile]) -> Result<f64, String> {
    let usage = "expected `host <gpu folder> <method> <bytes> <value>`";
    let [gpu, method, bytes, value] = words else { return Err(usage.into()) };
    let file = sessions
        .iter()
        .find(|f| f.slug == *gpu)
        .ok_or_else(|| format!("no reduce-host session in `{gpu}`"))?;
    let bytes: u64 = bytes.parse().map_err(|_| usage)?;
    let row = |method: &str| {
        file.row(method, bytes).ok_or_else(|| format!("no {method} at {bytes} bytes in {gpu}"))
    };
    let this = row(method)?;
    Ok(match *value {
        "gbs" => this.gbs(),
        "ms" => this.ms,
        "us" => this.ms * 1e3,
        "roof%" => 100.0 * this.gbs() / row("copy-pinned")?.gbs(),
        "pageable%" => 100.0 * this.gbs() / row("copy-pageable")?.gbs(),
        other => match other.strip_prefix("speedup:") {
            Some(base) => row(base)?.ms / this.ms,
            None => return Err(format!("unknown value `{other}`")),
        },
    })
}

/// The main table: per size, each method's GB/s, then the streamed step's share of the pinned
/// copy and its speed-up over torch and over copy-then-reduce (time over time).
pub fn table(file: &HostFile) -> String {
    // A row per method and a column per size: the sizes are fewer than the methods, so the table
    // fits the book's column.
    let methods: Vec<&(&str, &str)> =
        METHODS.iter().filter(|(m, _)| file.rows_of(m).next().is_some()).collect();
    let sizes = file.sizes();
    let mut out = String::from("| GB/s at |");
    for &bytes in &sizes {
        let _ = write!(out, " {} |", size_label(bytes));
    }
    out += "\n| :--- |";
    out += &" ---: |".repeat(sizes.len());
    out += "\n";
    let ratio = |a: Option<&Row>, b: Option<&Row>, scale: f64| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", scale * a.ms / b.ms),
        _ => "-".into(),
    };
    let mut row = |name: &str, cell: &dyn Fn(u64) -> String| {
        let _ = write!(out, "| {name} |");
        for &bytes in &sizes {
            let _ = write!(out, " {} |", cell(bytes));
        }
        out += "\n";
    };
    for (method, name) in &methods {
        row(name, &|bytes| {
            file.row(method, bytes).map_or("-".into(), |r| format!("{:.1}", r.gbs()))
        });
    }
    let streamed = |bytes| file.row("streamed", bytes);
    row("4 streamed, % of the pinned copy", &|bytes| match (
        streamed(bytes),
        file.row("copy-pinned", bytes),
    ) {
        (Some(s), Some(roof)) => format!("{:.1}", 100.0 * s.gbs() / roof.gbs()),
        _ => "-".into(),
    });
    row("torch / 4", &|bytes| ratio(file.row("torch", bytes), streamed(bytes), 1.0));
    row("1 / 4", &|bytes| ratio(file.row("copy-then-reduce", bytes), streamed(bytes), 1.0));
    out + "\nGB/s: bytes of the array over the time from the call to the answer on the host (for \
           the copies, to the copy's end); the last two rows are time over time (above 1: step 4 \
           is faster).\n"
}

/// The costs of pinning and the chunk sweep: what page-locking costs, and the streamed step at
/// other chunk sizes and stream counts.
pub fn costs_table(file: &HostFile) -> String {
    let mut out = String::from(
        "| size | pin in place (ms) | unpin (ms) | pin, GB/s |\n| ---: | ---: | ---: | ---: |\n",
    );
    for pin in file.rows_of("pin") {
        let unpin = file.row("unpin", pin.bytes).map_or("-".into(), |r| format!("{:.2}", r.ms));
        let _ = writeln!(
            out,
            "| {} | {:.2} | {unpin} | {:.1} |",
            size_label(pin.bytes),
            pin.ms,
            pin.gbs()
        );
    }
    let allocs: Vec<&Row> = file.rows_of("alloc-pinned").collect();
    if !allocs.is_empty() {
        out += "\n| size | new pinned memory, zeroed (ms) | new pageable memory, touched (ms) \
                |\n| ---: | ---: | ---: |\n";
        for alloc in allocs {
            let pageable = file
                .row("alloc-pageable", alloc.bytes)
                .map_or("-".into(), |r| format!("{:.2}", r.ms));
            let _ = writeln!(out, "| {} | {:.2} | {pageable} |", size_label(alloc.bytes), alloc.ms);
        }
    }
    let sweeps: Vec<&str> =
        ["chunk-2", "chunk-3"].into_iter().filter(|m| file.rows_of(m).next().is_some()).collect();
    if !sweeps.is_empty() {
        let at = file.fact("sweep");
        let (array_bytes, how) = at.split_once(' ').unwrap_or((at, ""));
        let array_bytes: u64 = array_bytes.parse().unwrap_or(0);
        let how = how.trim_start_matches("bytes").trim_start_matches(',').trim();
        let _ = write!(
            out,
            "\nStep 4 over {} ({how}) with other chunk sizes (GB/s):\n\n| chunk |",
            size_label(array_bytes)
        );
        for sweep in &sweeps {
            let _ = write!(out, " {} streams |", &sweep[6..]);
        }
        out += "\n| ---: |";
        out += &" ---: |".repeat(sweeps.len());
        out += "\n";
        let mut chunks: Vec<u64> = file.rows_of(sweeps[0]).map(|r| r.bytes).collect();
        chunks.sort_unstable();
        for chunk in chunks {
            let _ = write!(out, "| {} |", size_label(chunk));
            for sweep in &sweeps {
                let cell = file.row(sweep, chunk).map_or("-".into(), |r| {
                    format!("{:.1}", array_bytes as f64 / (r.ms * 1e-3) / 1e9)
                });
                let _ = write!(out, " {cell} |");
            }
            out += "\n";
        }
    }
    out
}

/// The chart: GB/s against the array's size (log2), a line per method of [`CHART_METHODS`].
pub fn chart(file: &HostFile) -> Result<String, ChartError> {
    let series: Vec<(String, Vec<(f64, f64)>)> = METHODS
        .iter()
        .filter(|(method, _)| CHART_METHODS.contains(method))
        .map(|&(method, name)| {
            let points = file.rows_of(method).map(|r| ((r.bytes as f64).log2(), r.gbs())).collect();
            (name.to_string(), points)
        })
        .filter(|(_, points): &(String, Vec<(f64, f64)>)| !points.is_empty())
        .collect();
    let title = format!("The sum of an f32 array in host memory, {}", file.fact("device"));
    // The CPU's line is highest at both ends: the legend goes above every line.
    size_lines_chart(&title, "array size", "GB/s to the answer on the host", &series, 1.6)
}

/// One GPU's part of the chapter: its facts, the chart, the tables.
pub fn section(file: &HostFile) -> Result<(String, String), ChartError> {
    let svg = chart(file)?;
    let alt = format!(
        "The sum of an f32 array in host memory by every step, the copies and torch, on an {}",
        file.fact("device")
    );
    let image = crate::book::chart_image(&alt, &format!("../data/{}/{CHART}", file.slug));
    let body = format!(
        "Measured on an {} on {}: driver {}; host {}; torch {}.\n\n{image}\n\n{}\n{}",
        file.fact("device"),
        file.fact("date"),
        file.fact("driver"),
        file.fact("host"),
        file.fact("torch"),
        table(file),
        costs_table(file)
    );
    Ok((svg, body))
}

/// The steps and peers the README's table shows, with what they do.
const README_ROWS: [(&str, &str, &str); 7] = [
    (
        "copy-then-reduce",
        "copy-then-reduce",
        "one copy from pageable memory, then reduce-atomic's kernel",
    ),
    ("pinned", "pinned", "the same from pinned memory"),
    (
        "chunked",
        "chunked",
        "chunks on two streams, overlapping copies and kernels; the array stays on the GPU",
    ),
    ("streamed", "streamed", "the same through a ring of chunk buffers within a device budget"),
    ("cpu", "cpu", "the host's threads, 16 accumulators each"),
    ("torch", "peer: torch", "`torch.from_numpy(x).cuda().sum()`"),
    (
        "torch-pinned",
        "peer: torch pinned",
        "`x.pin_memory()` once, then `.cuda(non_blocking=True).sum()`",
    ),
];

/// The README's table of reduce-host (empty without sessions): each step's and peer's share of
/// the pinned copy's bandwidth at 1 GiB and 8 GiB on every GPU measured.
pub fn readme_table(sessions: &[HostFile]) -> String {
    if sessions.is_empty() {
        return String::new();
    }
    const SIZES: [u64; 2] = [1 << 30, 8 << 30];
    let mut out = String::from(
        "**Data on the host** (the sum of an f32 array in host memory, to the answer on the host: \
         % of the \
         pinned host-to-device copy's bandwidth in the same run; measured by `cargo bench -p \
         reduce-host` and \
         `scripts/torch_host_sum.py`, from `book/src/data/<gpu>/reduce-host.txt`)\n\n| crate | \
         step | what it does |",
    );
    for session in sessions {
        for bytes in SIZES {
            let _ = write!(out, " {} {} |", session.fact("device"), size_label(bytes));
        }
    }
    out += "\n|---|---|---|";
    out += &"---:|".repeat(sessions.len() * SIZES.len());
    out += "\n";
    for (method, step, what) in README_ROWS {
        let _ = write!(out, "| `reduce-host` | {step} | {what} |");
        for session in sessions {
            for bytes in SIZES {
                let cell = match (session.row(method, bytes), session.row("copy-pinned", bytes)) {
                    (Some(row), Some(roof)) => format!("{:.1}%", 100.0 * row.gbs() / roof.gbs()),
                    _ => "-".into(),
                };
                let _ = write!(out, " {cell} |");
            }
        }
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = "# device NVIDIA H200\n# sweep 1024 bytes, pinned\ncopy-pinned 1024 \
                           0.5\nstreamed 1024 1.0\n\
                           torch 1024 4.0\ncopy-pinned 2048 1.0\nchunk-2 256 2.0\n";

    #[test]
    fn a_session_reads_back_as_bandwidths_shares_and_speed_ups() {
        let file = parse("gpu", SESSION).unwrap();
        assert_eq!(file.fact("device"), "NVIDIA H200");
        assert_eq!(file.sizes(), vec![1024, 2048]);
        let sessions = [file];
        let value = |spec: &str| lookup(&spec.split_whitespace().collect::<Vec<_>>(), &sessions);
        assert_eq!(value("gpu streamed 1024 gbs").unwrap(), 1024.0 / 1e-3 / 1e9);
        assert_eq!(value("gpu streamed 1024 roof%").unwrap(), 50.0);
        assert_eq!(value("gpu streamed 1024 speedup:torch").unwrap(), 4.0);
        assert!(value("gpu streamed 2048 ms").is_err());
        assert!(value("other streamed 1024 ms").is_err());
        assert!(value("gpu streamed 1024 furlongs").is_err());
        let costs = costs_table(&sessions[0]);
        assert!(costs.contains("Step 4 over 1 KiB (pinned)"), "{costs}");
        assert!(readme_table(&sessions).contains("| `reduce-host` | streamed |"));
        assert_eq!(readme_table(&[]), "");
    }

    #[test]
    fn bad_lines_are_errors_that_name_them() {
        for bad in ["streamed 1024", "streamed x 1.0", "streamed 1024 0", "streamed 1024 -1"] {
            let error = parse("gpu", bad).unwrap_err();
            assert!(error.contains("line 1") && error.contains(bad), "{error}");
        }
    }
}
