//! Everything the book and the README show that comes from the registry or the measured data,
//! rendered in one place: per GPU and crate a table and a chart, per family a summary, per chapter
//! a fragment showing every GPU's measurements (one tab each), the front page's headline (every
//! family's final step beside its peers, [`crate::headline`]), the book's table of contents and
//! the README's status table. `cargo run --release -- --charts` writes them; a test checks that the
//! committed files are what the committed registry and data render.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use course::{Course, Family};
use gpu_harness::{Case, GpuError};

use crate::charts::{ChartError, chapter_chart, summary_chart};
use crate::data::{ACCURACY, FRAGMENTS, HOPPER, MULTI_GPU, load_results_by_gpu};
use crate::headline::{self, GpuResults};
use measuring::results::Results;
use measuring::tables::{
    Table, chapter_table, find_record, peers_table, share_of_roof, summary_table,
};

/// Why the book could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error(transparent)]
    Data(#[from] GpuError),
    #[error(transparent)]
    Chart(#[from] ChartError),
    #[error("{0}")]
    Layout(String),
}

/// Markers around the generated part of `book/src/SUMMARY.md` and of the README's status table.
pub const BEGIN: &str =
    "<!-- generated from course.toml: do not edit by hand (cargo run --release -- --charts) -->";
pub const END: &str = "<!-- end of the generated part -->";

/// One GPU's folder and results.
struct Gpu {
    /// The folder's name, e.g. `nvidia-h200`.
    slug: String,
    /// The GPU's name, e.g. `NVIDIA H200`.
    name: String,
    folder: PathBuf,
    results: Vec<Results>,
}

/// Every file the registry and the data under `root` (the workspace) render, as `(path, text)`.
pub fn render_book(course: &Course, root: &Path) -> Result<Vec<(PathBuf, String)>, BookError> {
    let data = root.join("book/src/data");
    let gpus: Vec<Gpu> = load_results_by_gpu(course, &data)?
        .into_iter()
        .map(|(folder, results)| Gpu {
            slug: folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            name: results[0].device.name.clone(),
            folder,
            results,
        })
        .collect();
    let quotes = Quotes::of_book(&root.join("book/src"));
    let mut outputs = Vec::new();
    for family in &course.families {
        for gpu in &gpus {
            outputs.extend(gpu_files(family, gpu)?);
        }
        outputs.extend(fragments(family, &gpus, &data.join(FRAGMENTS), &quotes)?);
    }
    outputs.extend(accuracy_files(&data, &quotes)?);
    outputs.extend(multi_gpu_files(&data, &quotes)?);
    outputs.extend(host_files(&data, &quotes)?);
    outputs.extend(hopper_files(course, &data, &quotes)?);
    outputs.extend(headline_files(course, &gpus, &data)?);
    outputs.push((
        root.join("book/src/SUMMARY.md"),
        table_of_contents(course, &root.join("book/src/SUMMARY.md"))?,
    ));
    let host = crate::host::readme_table(&crate::host::load_sessions(&data)?);
    outputs.push((
        root.join("README.md"),
        readme_status(course, &gpus, &host, &root.join("README.md"))?,
    ));
    Ok(outputs)
}

/// A chart file's name: `<name>.svg` for the summary case, `<name>-<case>.svg` for the others.
fn chart_file(name: &str, family: &Family, case: &Case) -> String {
    if *case == family.summary_case {
        format!("{name}.svg")
    } else {
        let slug: String =
            case.label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        format!("{name}-{slug}.svg")
    }
}

/// One GPU's tables and charts of a family: per chapter, and the summary.
fn gpu_files(family: &Family, gpu: &Gpu) -> Result<Vec<(PathBuf, String)>, BookError> {
    let mut files = Vec::new();
    for chapter in &family.chapters {
        let Some(table) = chapter_table(family, chapter, &gpu.results) else { continue };
        files.push((gpu.folder.join(format!("{}.md", chapter.crate_name)), table.markdown()));
        for case in family.chart_cases() {
            if let Some(svg) = chapter_chart(family, chapter, &gpu.results, case)? {
                files.push((gpu.folder.join(chart_file(&chapter.crate_name, family, case)), svg));
            }
        }
    }
    if let Some(table) = summary_table(family, &gpu.results) {
        files.push((gpu.folder.join(format!("{}-summary.md", family.id)), table.markdown()));
        if let Some(peers) = peers_table(family, &gpu.results) {
            files.push((gpu.folder.join(format!("{}-peers.md", family.id)), peers.markdown()));
        }
        if let Some(svg) = summary_chart(family, &gpu.results)? {
            files.push((gpu.folder.join(format!("{}-summary.svg", family.id)), svg));
        }
    }
    Ok(files)
}

/// The fragments the chapters include: every GPU's charts and table, one tab per GPU.
fn fragments(
    family: &Family,
    gpus: &[Gpu],
    folder: &Path,
    quotes: &Quotes,
) -> Result<Vec<(PathBuf, String)>, BookError> {
    let mut files = Vec::new();
    // A chapter with no steps here is measured by its own bench (reduce-multi-gpu:
    // `multi_gpu_files`).
    for chapter in family.chapters.iter().filter(|c| !c.steps.is_empty()) {
        let tabs = every_gpu(gpus, |gpu| {
            let table = chapter_table(family, chapter, &gpu.results)?;
            let mut body = String::new();
            for case in family.chart_cases() {
                let file = chart_file(&chapter.crate_name, family, case);
                if has_chart(family, chapter, gpu, case) {
                    let alt = format!(
                        "Effective bandwidth of each {} step at {} on an {}",
                        chapter.crate_name, case.label, gpu.name
                    );
                    let path = format!("../data/{}/{file}", gpu.slug);
                    let _ = writeln!(body, "{}\n", chart_image(&alt, &path));
                }
            }
            body += &folded_by_case(&table, &family.summary_case.label);
            Some(body)
        });
        files.push((
            folder.join(format!("{}.md", chapter.crate_name)),
            tabbed(&chapter.crate_name, &tabs, quotes),
        ));
    }
    let tabs = every_gpu(gpus, |gpu| {
        let table = summary_table(family, &gpu.results)?;
        let alt = format!(
            "{} at {}, every step, on an {}",
            family.title, family.summary_case.label, gpu.name
        );
        let path = format!("../data/{}/{}-summary.svg", gpu.slug, family.id);
        let mut body = format!("{}\n\n", chart_image(&alt, &path));
        body += &table.markdown();
        Some(body)
    });
    files.push((
        folder.join(format!("{}-summary.md", family.id)),
        tabbed(&format!("{}-summary", family.id), &tabs, quotes),
    ));
    let tabs = every_gpu(gpus, |gpu| Some(peers_table(family, &gpu.results)?.markdown()));
    if !tabs.is_empty() {
        files.push((
            folder.join(format!("{}-peers.md", family.id)),
            tabbed(&format!("{}-peers", family.id), &tabs, quotes),
        ));
    }
    Ok(files)
}

/// A chapter's table split by case, so that a long one reads a case at a time: its caption, then
/// per case a `<details>` whose summary names the case and what it holds, and whose table has the
/// case's rows without the case column; the family's summary case (else the first) is open. A
/// table of one case stays whole.
fn folded_by_case(table: &Table, open: &str) -> String {
    let mut cases: Vec<(&str, Vec<Vec<String>>)> = Vec::new();
    for row in &table.rows {
        let Some((case, cells)) = row.split_first() else { continue };
        match cases.iter_mut().find(|(c, _)| c == case) {
            Some((_, rows)) => rows.push(cells.to_vec()),
            None => cases.push((case, vec![cells.to_vec()])),
        }
    }
    if table.columns.first().is_none_or(|(name, _)| *name != "case") || cases.len() < 2 {
        return table.markdown();
    }
    let open = if cases.iter().any(|(case, _)| *case == open) { open } else { cases[0].0 };
    let mut out = format!("{}\n\n", table.caption);
    for (case, rows) in cases {
        let count = |peer: bool| {
            let kind = |step: &String| match (step.starts_with("**"), step.starts_with('*')) {
                (true, _) => Some(false),
                (false, true) => Some(true),
                _ => None,
            };
            rows.iter().filter(|row| kind(&row[0]) == Some(peer)).count()
        };
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let what = match count(true) {
            0 => plural(count(false), "step"),
            peers => format!("{}, {}", plural(peers, "peer"), plural(count(false), "step")),
        };
        let part = Table { caption: String::new(), columns: table.columns[1..].to_vec(), rows };
        let _ = write!(
            out,
            "<details{}>\n<summary>At <strong>{case}</strong>: the roofs, {what}</summary>\n\n{}\n\
             </details>\n\n",
            if case == open { " open" } else { "" },
            part.markdown().trim_start()
        );
    }
    out
}

/// A chart in a page: the image, scaled to the column, as a link to itself, so that a reader on a
/// phone opens it at its full size with a tap.
pub(crate) fn chart_image(alt: &str, path: &str) -> String {
    format!("[![{alt}]({path})]({path})")
}

/// A tab for every GPU measured where any of them has `body`: a GPU without it says so in its tab
/// (a chapter measured on one GPU still shows the other's tab, with what to run there). None where
/// no GPU has it.
fn every_gpu(gpus: &[Gpu], body: impl Fn(&Gpu) -> Option<String>) -> Vec<(&Gpu, String)> {
    let bodies: Vec<Option<String>> = gpus.iter().map(&body).collect();
    if bodies.iter().all(Option::is_none) {
        return Vec::new();
    }
    gpus.iter()
        .zip(bodies)
        .map(|(gpu, body)| {
            let missing = || {
                format!(
                    "*Not measured on an {} yet: run the tour there (`cargo run --release`).*\n",
                    gpu.name
                )
            };
            (gpu, body.unwrap_or_else(missing))
        })
        .collect()
}

fn has_chart(family: &Family, chapter: &course::Chapter, gpu: &Gpu, case: &Case) -> bool {
    matches!(chapter_chart(family, chapter, &gpu.results, case), Ok(Some(_)))
}

/// The accuracy studies' charts (`accuracy/<gpu>-<dataset>.svg`) and the fragment that shows them
/// with their tables, one tab per GPU (`measured/accuracy.md`).
fn accuracy_files(data: &Path, quotes: &Quotes) -> Result<Vec<(PathBuf, String)>, BookError> {
    let studies = crate::accuracy::load_accuracy(data)?;
    if studies.is_empty() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    let mut tabs = Vec::new();
    for (slug, file) in &studies {
        let mut body = format!("Measured on an {}, on {}.\n\n", file.device, file.date);
        for study in &file.studies {
            let name = crate::accuracy::chart_file(slug, study);
            files.push((
                data.join(ACCURACY).join(&name),
                crate::accuracy::study_chart(study, &file.device)?,
            ));
            let alt = format!(
                "Relative error of each way of summing {} against n on an {}",
                study.dataset, file.device
            );
            let path = format!("../data/{ACCURACY}/{name}");
            let _ = write!(
                body,
                "{}\n\n{}\n",
                chart_image(&alt, &path),
                crate::accuracy::study_table(study)
            );
        }
        tabs.push((slug.clone(), file.device.clone(), body));
    }
    let tabs: Vec<(Gpu, String)> = tabs
        .into_iter()
        .map(|(slug, name, body)| {
            (Gpu { slug, name, folder: PathBuf::new(), results: Vec::new() }, body)
        })
        .collect();
    let borrowed: Vec<(&Gpu, String)> =
        tabs.iter().map(|(gpu, body)| (gpu, body.clone())).collect();
    files.push((data.join(FRAGMENTS).join("accuracy.md"), tabbed("accuracy", &borrowed, quotes)));
    Ok(files)
}

/// reduce-multi-gpu's charts (`multi-gpu/<machine>-<gpus>gpus.svg`) and the fragment that shows
/// them with their tables, one tab per machine (`measured/reduce-multi-gpu.md`).
fn multi_gpu_files(data: &Path, quotes: &Quotes) -> Result<Vec<(PathBuf, String)>, BookError> {
    let machines = crate::multi_gpu::load_machines(data)?;
    let mut files = Vec::new();
    let mut tabs = Vec::new();
    for machine in &machines {
        let (charts, body) = crate::multi_gpu::machine_section(machine)?;
        for (name, svg) in charts {
            files.push((data.join(MULTI_GPU).join(name), svg));
        }
        let gpu = Gpu {
            slug: machine.slug.clone(),
            name: machine.fact("device").to_string(),
            folder: PathBuf::new(),
            results: Vec::new(),
        };
        tabs.push((gpu, body));
    }
    let borrowed: Vec<(&Gpu, String)> =
        tabs.iter().map(|(gpu, body)| (gpu, body.clone())).collect();
    files.push((
        data.join(FRAGMENTS).join("reduce-multi-gpu.md"),
        tabbed("reduce-multi-gpu", &borrowed, quotes),
    ));
    Ok(files)
}

/// reduce-host's chart in each GPU's folder (`<gpu>/reduce-host.svg`) and the fragment that shows
/// it with its tables, one tab per GPU (`measured/reduce-host.md`).
fn host_files(data: &Path, quotes: &Quotes) -> Result<Vec<(PathBuf, String)>, BookError> {
    let mut files = Vec::new();
    let mut tabs = Vec::new();
    for session in crate::host::load_sessions(data)? {
        let (svg, body) = crate::host::section(&session)?;
        files.push((data.join(&session.slug).join(crate::host::CHART), svg));
        let name = session.fact("device").to_string();
        tabs.push((
            Gpu { slug: session.slug, name, folder: PathBuf::new(), results: Vec::new() },
            body,
        ));
    }
    let borrowed: Vec<(&Gpu, String)> =
        tabs.iter().map(|(gpu, body)| (gpu, body.clone())).collect();
    files.push((
        data.join(FRAGMENTS).join("reduce-host.md"),
        tabbed("reduce-host", &borrowed, quotes),
    ));
    Ok(files)
}

/// What Hopper buys ([`crate::hopper`]): each GPU's chart (`what-hopper-buys/<gpu>.svg`) and the
/// fragment that shows it with its table, one tab per GPU (`measured/what-hopper-buys.md`, included
/// by `your-gpu.md` at the top of the book: its links start from there).
fn hopper_files(
    course: &Course,
    data: &Path,
    quotes: &Quotes,
) -> Result<Vec<(PathBuf, String)>, BookError> {
    let mut files = Vec::new();
    let mut tabs = Vec::new();
    for comparison in crate::hopper::load(data)? {
        let chart = format!("{}.svg", comparison.slug);
        files.push((data.join(HOPPER).join(&chart), crate::hopper::chart(course, &comparison)?));
        let name = comparison.native[0].device.name.clone();
        let body = format!(
            "{}\n![What Hopper's features buy on the {name}](data/{HOPPER}/{chart})\n",
            crate::hopper::table(course, &comparison),
        );
        let gpu = Gpu { slug: comparison.slug, name, folder: PathBuf::new(), results: Vec::new() };
        tabs.push((gpu, body));
    }
    let borrowed: Vec<(&Gpu, String)> =
        tabs.iter().map(|(gpu, body)| (gpu, body.clone())).collect();
    files.push((
        data.join(FRAGMENTS).join("what-hopper-buys.md"),
        tabbed("what-hopper-buys", &borrowed, quotes),
    ));
    Ok(files)
}

/// The front page's headline (`measured/headline.md`, included by `introduction.md`) and its chart
/// (`measured/headline.svg`): each family's final step beside its peers on every GPU, and the
/// all-reduce across GPUs beside NCCL and PyTorch on every machine.
fn headline_files(
    course: &Course,
    gpus: &[Gpu],
    data: &Path,
) -> Result<Vec<(PathBuf, String)>, BookError> {
    let gpus: Vec<GpuResults> =
        gpus.iter().map(|gpu| GpuResults { name: &gpu.name, results: &gpu.results }).collect();
    let measured = headline::measured(course, &gpus);
    let machines = crate::multi_gpu::load_machines(data)?;
    let all_reduces = headline::all_reduces(&machines);
    let table = headline::headline_table(&measured, &all_reduces);
    let folder = data.join(FRAGMENTS);
    let mut files = Vec::new();
    let chart = headline::headline_chart(&measured, crate::charts::SIZE.0)?;
    let narrow = headline::headline_chart(&measured, headline::NARROW)?;
    if let (Some(wide), Some(narrow)) = (chart.as_ref(), narrow) {
        files.push((folder.join(HEADLINE_CHART), wide.clone()));
        files.push((folder.join(HEADLINE_CHART_NARROW), narrow));
    }
    let wide_path = format!("data/{FRAGMENTS}/{HEADLINE_CHART}");
    let narrow_path = format!("data/{FRAGMENTS}/{HEADLINE_CHART_NARROW}");
    let fragment = headline::headline_fragment(
        chart.as_ref().map(|_| (wide_path.as_str(), narrow_path.as_str())),
        table.as_ref(),
    );
    files.push((folder.join(HEADLINE), fragment));
    Ok(files)
}

/// The front page's fragment, in the fragments' folder.
pub const HEADLINE: &str = "headline.md";
/// The front page's chart, beside its fragment, and the one it shows on a phone.
pub const HEADLINE_CHART: &str = "headline.svg";
pub const HEADLINE_CHART_NARROW: &str = "headline-narrow.svg";

/// Tabs, one per GPU, with CSS alone (`book/css/gpu-tabs.css`): radio buttons and labels, then
/// one panel per GPU. The panel shown until another label is clicked is the GPU the prose beside
/// it quotes ([`Quotes::default_tab`]), so that what is read is what is shown.
fn tabbed(name: &str, tabs: &[(&Gpu, String)], quotes: &Quotes) -> String {
    if tabs.is_empty() {
        return "*Not measured yet: run the tour on a GPU (`cargo run --release`).*\n".to_string();
    }
    let slugs: Vec<&str> = tabs.iter().map(|(gpu, _)| gpu.slug.as_str()).collect();
    let shown = quotes.default_tab(&format!("{name}.md"), &slugs);
    let mut out = String::from("<div class=\"gpu-tabs\">\n");
    for (i, (gpu, _)) in tabs.iter().enumerate() {
        let id = format!("gpu-{name}-{}", gpu.slug);
        let checked = if i == shown { " checked" } else { "" };
        let _ = writeln!(out, "<input type=\"radio\" name=\"gpu-{name}\" id=\"{id}\"{checked}>");
        let _ = writeln!(out, "<label for=\"{id}\">{}</label>", gpu.name);
    }
    for (_, body) in tabs {
        let _ = write!(out, "<div class=\"gpu-tab\">\n\n{body}\n</div>\n");
    }
    out + "</div>\n"
}

/// How often the book's prose quotes each GPU folder (or multi-GPU machine): its `<!-- data
/// ... -->` comments ([`crate::prose::quoted_sources`]), counted per fragment over the pages that
/// include it, and over the whole book.
#[derive(Debug, Default)]
pub struct Quotes {
    /// A fragment's file name (`softmax.md`) and the counts of the pages that include it.
    by_fragment: HashMap<String, HashMap<String, usize>>,
    book: HashMap<String, usize>,
}

impl Quotes {
    /// The quotes of the pages under `book_src` (outside its generated `data` folder).
    pub fn of_book(book_src: &Path) -> Quotes {
        let mut quotes = Quotes::default();
        for page in crate::prose::markdown_pages(book_src) {
            let Ok(text) = std::fs::read_to_string(&page) else { continue };
            let sources = crate::prose::quoted_sources(&text);
            for source in &sources {
                *quotes.book.entry(source.clone()).or_default() += 1;
            }
            let prefix = format!("data/{FRAGMENTS}/");
            for include in text.split("{{#include ").skip(1) {
                let target = include.split("}}").next().unwrap_or_default().trim();
                let Some((_, fragment)) = target.split_once(&prefix) else { continue };
                let counts = quotes.by_fragment.entry(fragment.to_string()).or_default();
                for source in &sources {
                    *counts.entry(source.clone()).or_default() += 1;
                }
            }
        }
        quotes
    }

    /// Which of the tabs `slugs` a fragment opens on: the one the pages that include it quote
    /// most; where they quote none of them more than another, the one the whole book quotes most;
    /// else the first.
    pub fn default_tab(&self, fragment: &str, slugs: &[&str]) -> usize {
        let most = |counts: Option<&HashMap<String, usize>>| {
            let count = |slug: &str| counts.and_then(|c| c.get(slug)).copied().unwrap_or(0);
            let top = slugs.iter().map(|s| count(s)).max().unwrap_or(0);
            let leaders: Vec<usize> =
                (0..slugs.len()).filter(|&i| count(slugs[i]) == top).collect();
            (top > 0 && leaders.len() == 1).then(|| leaders[0])
        };
        most(self.by_fragment.get(fragment)).or_else(|| most(Some(&self.book))).unwrap_or(0)
    }
}

/// `SUMMARY.md` with its generated part (between [`BEGIN`] and [`END`]) rendered from the registry:
/// a part per family, a line per chapter, then the family's summary page. Consecutive families of
/// one title (the chapters of "Reductions at work", each measured at its own cases) share a part.
fn table_of_contents(course: &Course, path: &Path) -> Result<String, BookError> {
    let mut generated = String::new();
    for (i, family) in course.families.iter().enumerate() {
        if i == 0 || course.families[i - 1].title != family.title {
            let _ = writeln!(generated, "# {}\n", family.title);
        } else {
            generated.truncate(generated.trim_end().len());
            generated += "\n";
        }
        for chapter in &family.chapters {
            let _ = writeln!(generated, "- [{}]({})", chapter.title, chapter.file);
        }
        if let Some(page) = &family.summary {
            let _ = writeln!(generated, "- [{}]({})", page.title, page.file);
        }
        generated += "\n";
    }
    replace_generated(path, generated.trim_end())
}

/// The README with its status table (between [`BEGIN`] and [`END`]) rendered from the registry and
/// the data: one row per step and peer, its share of its roof on each GPU at the summary case; then
/// `host`, reduce-host's table ([`crate::host::readme_table`]).
fn readme_status(
    course: &Course,
    gpus: &[Gpu],
    host: &str,
    path: &Path,
) -> Result<String, BookError> {
    let mut generated = String::new();
    for family in &course.families {
        let case = &family.summary_case.label;
        let _ = write!(
            generated,
            "**{}** (% of the step's own roof at {case}: the read roof for a step that only \
             reads, the copy \
             roof for one that reads and writes; measured by the tour, from \
             `book/src/data/<gpu>/`)\n\n| crate | step | what it does |",
            family.title
        );
        for gpu in gpus {
            let _ = write!(generated, " {} |", gpu.name);
        }
        generated += "\n|---|---|---|";
        generated += &"---:|".repeat(gpus.len());
        generated += "\n";
        for step in family.steps().filter(|s| !s.step.extra) {
            let what = match step.peer {
                Some(_) => format!("peer: {}", step.step.about),
                None => step.step.about.clone(),
            };
            let _ = write!(generated, "| `{}` | {} | {what} |", step.crate_name, step.name());
            for gpu in gpus {
                let l2 = gpu.results.first().map_or(0, |r| r.device.l2_cache_bytes);
                let cell = find_record(&gpu.results, &step, case)
                    .map_or("-".into(), |r| share_of_roof(r, l2, r.percent_of_roof()));
                let _ = write!(generated, " {cell} |");
            }
            generated += "\n";
        }
        generated += "\n";
    }
    generated += host;
    replace_generated(path, generated.trim_end())
}

/// The text of `path` with what lies between [`BEGIN`] and [`END`] replaced by `generated`.
fn replace_generated(path: &Path, generated: &str) -> Result<String, BookError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BookError::Layout(format!("{}: {e}", path.display())))?;
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        return Err(BookError::Layout(format!(
            "{} has no `{BEGIN}` ... `{END}` markers",
            path.display()
        )));
    };
    if end < begin {
        return Err(BookError::Layout(format!(
            "{}: the end marker comes before the begin marker",
            path.display()
        )));
    }
    Ok(format!("{}{BEGIN}\n{generated}\n{}", &text[..begin], &text[end..]))
}
