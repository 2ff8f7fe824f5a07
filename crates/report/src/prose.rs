//! Numbers quoted in the book's prose are the measured ones.
//!
//! A measured number in a chapter carries, right after it, a comment naming where it comes from:
//!
//! ```text
//! sums 1 GiB in 2.60 ms<!-- data nvidia-h200 reduce-naive/naive 2^28 ms -->, 415 GB/s<!-- data
//! nvidia-h200 reduce-naive/naive 2^28 gbs -->
//! ```
//!
//! `data <gpu folder> <crate>/<step> <case> <value>`, where `<value>` is one of `gbs`, `tbs`, `ms`,
//! `us`, `roof%` (percent of the step's own roof), `copy%`, `read%`, `read-roof` and `copy-roof`
//! (the roofs of that case, GB/s), `peak` (theoretical GB/s), or `speedup:<crate>/<step>` (that
//! step's time over this one's). A PyTorch peer is named like any peer (`softmax/torch-softmax`):
//! its records come from the folder's `torch-reductions.txt` ([`crate::torch`]). reduce-multi-gpu's
//! numbers come from its sessions (`data/multi-gpu/<machine>.txt`): `data multi-gpu <machine>
//! <kind>/<method> <gpus> <bytes> <value>`, `<value>` one of `busbw`, `algbw` (GB/s), `ms`, `us`,
//! `ratio:<method>` (this bus bandwidth over that method's) or `speedup` (one GPU's time over this
//! one's). reduce-host's come from `data/<gpu>/reduce-host.txt`: `data host <gpu> <method> <bytes>
//! <value>` ([`crate::host::lookup`]). A step timed under an older GPU's profile
//! ([`crate::hopper`]) is `data hopper <gpu>-gpu-profile-<name> <crate>/<step> <case> <value>`, and
//! natively in the same run `data hopper <gpu> ...`. The rendered page does not show the comment;
//! [`check_book`] checks that the number before it, rounded as written, equals the data. A number
//! written as a measurement (followed by `GB/s`, `TB/s`, `% of copy`, `% of its roof`, `% of read`)
//! must carry such a comment, or `<!-- not measured here -->` when it is quoted from elsewhere (a
//! paper, the seeds).

use std::path::{Path, PathBuf};

use crate::data::load_results_by_gpu;
use crate::multi_gpu::{MachineFile, load_machines};
use measuring::results::{Record, Results};

const MARKER: &str = "<!-- data ";
const UNITS: &[&str] = &["GB/s", "TB/s", "ms", "µs", "%", "x", "×"];
const MEASUREMENT_WORDS: &[&str] = &[" GB/s", " TB/s", "% of copy", "% of its roof", "% of read"];

/// Every problem with the numbers quoted in the `.md` files under `book_src` (excluding its `data`
/// folder, whose files are generated): a marker that names nothing measured, a number that differs
/// from the data, or a measurement-like number without a marker.
pub fn check_book(book_src: &Path) -> Vec<String> {
    let data = match load_results_by_gpu(course::registry(), &book_src.join("data")) {
        Ok(gpus) => gpus,
        Err(e) => return vec![e.to_string()],
    };
    let machines = match load_machines(&book_src.join("data")) {
        Ok(machines) => machines,
        Err(e) => return vec![e.to_string()],
    };
    let mut problems = Vec::new();
    for page in markdown_pages(book_src) {
        let Ok(text) = std::fs::read_to_string(&page) else {
            problems.push(format!("{}: unreadable", page.display()));
            continue;
        };
        let name = page.strip_prefix(book_src).unwrap_or(&page).display().to_string();
        problems.extend(
            check_text(&text, &data, &machines).into_iter().map(|p| format!("{name}: {p}")),
        );
    }
    problems
}

/// The problems of one page's text against the data (grouped by GPU folder).
pub fn check_text(
    text: &str,
    data: &[(PathBuf, Vec<Results>)],
    machines: &[MachineFile],
) -> Vec<String> {
    let mut problems = Vec::new();
    let prose = without_code(text);
    let mut rest = prose.as_str();
    let mut consumed = 0;
    while let Some(at) = rest.find(MARKER) {
        let before = &prose[..consumed + at];
        let Some(end) = rest[at..].find("-->") else {
            problems.push("a `<!-- data` comment is not closed".to_string());
            break;
        };
        let spec = rest[at + MARKER.len()..at + end].trim();
        match quoted_number(before) {
            None => problems.push(format!("no number right before `<!-- data {spec} -->`")),
            Some((written, decimals)) => match lookup(spec, data, machines) {
                Err(why) => problems.push(format!("`{spec}`: {why}")),
                Ok(value) => {
                    let expected = format!("{value:.decimals$}");
                    if expected.parse::<f64>().ok() != written.parse::<f64>().ok() {
                        problems.push(format!(
                            "`{spec}` is {expected} in the data, the text says {written}"
                        ));
                    }
                }
            },
        }
        consumed += at + end + 3;
        rest = &prose[consumed..];
    }
    for line in prose.lines().filter(|l| !l.trim_start().starts_with('|')) {
        for word in MEASUREMENT_WORDS {
            for (at, _) in line.match_indices(word) {
                let number_before = line[..at]
                    .trim_end_matches('*')
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_ascii_digit());
                if number_before && !marked(&line[at..]) {
                    problems.push(format!(
                        "a measured number without a `<!-- data ... -->` comment: `{}`",
                        line.trim()
                    ));
                }
            }
        }
    }
    problems
}

/// What each `<!-- data ... -->` comment of a page's prose quotes, in order: the GPU folder
/// (`nvidia-h200`), or the machine (`multi-gpu <machine> ...`) or GPU (`host <gpu> ...`) its first
/// word names. How often a page quotes each is the GPU its tables open on
/// ([`crate::book`]).
pub fn quoted_sources(text: &str) -> Vec<String> {
    let prose = without_code(text);
    prose
        .split(MARKER)
        .skip(1)
        .filter_map(|rest| {
            let spec = rest.split("-->").next()?;
            let words: Vec<&str> = spec.split_whitespace().collect();
            match words.as_slice() {
                ["multi-gpu" | "host", source, ..] | [source, ..] => Some(source.to_string()),
                [] => None,
            }
        })
        .collect()
}

/// Whether the text after a number's unit carries its comment: a `<!--` before any other digit.
fn marked(after_number: &str) -> bool {
    match after_number.find("<!--") {
        Some(at) => !after_number[..at].chars().any(|c| c.is_ascii_digit()),
        None => false,
    }
}

/// The page with fenced code blocks removed (their numbers are code, not claims).
fn without_code(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            out += line;
            out += "\n";
        }
    }
    out
}

/// The number that ends `before` (after emphasis, spaces and a unit), as written, and its decimals.
fn quoted_number(before: &str) -> Option<(String, usize)> {
    let mut text = before.trim_end().trim_end_matches(['*', '_']).trim_end();
    for unit in UNITS {
        if let Some(stripped) = text.strip_suffix(unit) {
            text = stripped.trim_end();
            break;
        }
    }
    let start =
        text.rfind(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')).map_or(0, |i| i + 1);
    let number = text[start..].trim_end_matches('.').replace(',', "");
    if number.is_empty() || !number.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    Some((number, decimals))
}

/// The value a `multi-gpu ...` marker names.
fn lookup_multi_gpu(words: &[&str], machines: &[MachineFile]) -> Result<f64, String> {
    let usage = "expected `multi-gpu <machine> <kind>/<method> <gpus> <bytes> <value>`";
    let [machine, what, gpus, bytes, value] = words else { return Err(usage.into()) };
    let file = machines
        .iter()
        .find(|m| m.slug == *machine)
        .ok_or_else(|| format!("no multi-GPU session `{machine}`"))?;
    let (kind, method) = what.split_once('/').ok_or(usage)?;
    let gpus: usize = gpus.parse().map_err(|_| usage)?;
    let bytes: u64 = bytes.parse().map_err(|_| usage)?;
    let row = |method: &str, gpus: usize| {
        file.rows
            .iter()
            .find(|r| r.kind == kind && r.method == method && r.gpus == gpus && r.bytes == bytes)
            .ok_or_else(|| {
                format!("no {kind} {method} on {gpus} GPUs at {bytes} bytes in {machine}")
            })
    };
    let this = row(method, gpus)?;
    Ok(match *value {
        "busbw" => this.busbw(),
        "algbw" => this.algbw(),
        "ms" => this.ms,
        "us" => this.ms * 1e3,
        "speedup" => row("one-gpu", 1)?.ms / this.ms,
        other => match other.strip_prefix("ratio:") {
            Some(base) => this.busbw() / row(base, gpus)?.busbw(),
            None => return Err(format!("unknown value `{other}`")),
        },
    })
}

/// The value a marker's spec names.
fn lookup(
    spec: &str,
    data: &[(PathBuf, Vec<Results>)],
    machines: &[MachineFile],
) -> Result<f64, String> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    if let Some(("multi-gpu", rest)) = words.split_first().map(|(first, rest)| (*first, rest)) {
        return lookup_multi_gpu(rest, machines);
    }
    if let Some(("hopper", rest)) = words.split_first().map(|(first, rest)| (*first, rest)) {
        let folder = crate::data::book_data_dir().join(crate::data::HOPPER);
        let runs = crate::data::load_results(&folder).map_err(|e| e.to_string())?;
        return lookup(&rest.join(" "), &crate::data::results_by_gpu(&runs), machines);
    }
    if let Some(("host", rest)) = words.split_first().map(|(first, rest)| (*first, rest)) {
        let sessions =
            crate::host::load_sessions(&crate::data::book_data_dir()).map_err(|e| e.to_string())?;
        return crate::host::lookup(rest, &sessions);
    }
    // A case may name its input after its size (`2^30 all-equal`): every word between the step and
    // the value is the case's.
    let [gpu, step, case @ .., value] = words.as_slice() else {
        return Err("expected `<gpu folder> <crate>/<step> <case> <value>`".into());
    };
    if case.is_empty() {
        return Err("expected `<gpu folder> <crate>/<step> <case> <value>`".into());
    }
    let case = case.join(" ");
    let case = case.as_str();
    let (_, results) = data
        .iter()
        .find(|(folder, _)| folder.file_name().is_some_and(|n| n == *gpu))
        .ok_or_else(|| format!("no data folder `{gpu}`"))?;
    let record = find(results, step, case)?;
    let theoretical = results.first().and_then(|r| r.theoretical_gbs);
    Ok(match *value {
        "gbs" => record.gbs,
        "tbs" => record.gbs / 1000.0,
        "ms" => record.median_ms,
        "us" => record.median_ms * 1000.0,
        "roof%" => record.percent_of_roof(),
        "copy%" => record.percent_of_copy(),
        "read%" => 100.0 * record.gbs / record.read_gbs,
        "read-roof" => record.read_gbs,
        "copy-roof" => record.copy_gbs,
        "peak" => theoretical.ok_or("no theoretical bandwidth in the data")?,
        other => match other.strip_prefix("speedup:") {
            Some(base) => find(results, base, case)?.median_ms / record.median_ms,
            None => return Err(format!("unknown value `{other}`")),
        },
    })
}

fn find<'a>(results: &'a [Results], step: &str, case: &str) -> Result<&'a Record, String> {
    let (crate_name, step) = step.split_once('/').ok_or("steps are written `<crate>/<step>`")?;
    results
        .iter()
        .filter(|r| r.crate_name == crate_name)
        .find_map(|r| r.record(step, case))
        .ok_or_else(|| format!("no record of {crate_name}/{step} at {case}"))
}

/// The `.md` files under `book_src`, outside its generated `data` folder, sorted.
pub(crate) fn markdown_pages(book_src: &Path) -> Vec<PathBuf> {
    let mut pages = Vec::new();
    let mut folders = vec![book_src.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && path.file_name().is_some_and(|n| n != "data") {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_number_before_a_marker() {
        assert_eq!(quoted_number("sums in **2.60 ms"), Some(("2.60".into(), 2)));
        assert_eq!(quoted_number("reaches 4,573 GB/s**"), Some(("4573".into(), 0)));
        assert_eq!(quoted_number("at 108.0%"), Some(("108.0".into(), 1)));
        assert_eq!(quoted_number("a speedup of 11.1x"), Some(("11.1".into(), 1)));
        assert_eq!(quoted_number("no number here"), None);
    }

    #[test]
    fn names_the_gpu_or_machine_each_marker_quotes() {
        let text = "2.60 ms<!-- data nvidia-h200 reduce-naive/naive 2^28 ms -->, 3 GB/s<!-- \
                    data multi-gpu nvidia-h200-x4 allreduce/ring 4 1024 busbw -->, 5 GB/s<!-- \
                    data host nvidia-h100 pinned 1024 gbs -->\n```\n<!-- data in-code x/y 2^20 \
                    gbs -->\n```\n";
        assert_eq!(quoted_sources(text), ["nvidia-h200", "nvidia-h200-x4", "nvidia-h100"]);
    }
}
