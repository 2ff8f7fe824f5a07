//! The course's headline, on the book's front page: each family's final step beside the peers it
//! is measured against (NVIDIA's CUB and cuBLAS), on every GPU measured, at the family's summary
//! case; and the all-reduce of the reduction across GPUs beside NCCL and PyTorch, on every machine
//! measured. One table and one chart, from the committed data, like every other generated page.
//!
//! A family's final step is the last step of its ladder in the registry (not an extra, not a
//! peer) that runs at the family's summary case (the histogram's f32 step runs on another input);
//! its peers are those whose `counterpart` it is.

use std::fmt::Write as _;

use course::{Course, Family, StepRef};

use crate::charts::{ChartError, Group, GroupBars, SHARE_NARROW, ShareBar, share_chart};
use crate::multi_gpu::{MachineFile, Row as MachineRow};
use measuring::results::{Record, Results};
use measuring::tables::{Align, Table, find_record, roof_binds};

/// One GPU's results: its name (`NVIDIA H200`) and every results file measured on it.
pub struct GpuResults<'a> {
    pub name: &'a str,
    pub results: &'a [Results],
}

/// The last step of a family's ladder that runs at the family's summary case.
pub fn final_step(family: &Family) -> Option<StepRef<'_>> {
    family.steps().filter(|s| s.on_ladder() && s.cases().contains(&family.summary_case)).last()
}

/// The peers whose counterpart `step` is.
pub fn peers_of<'a>(family: &'a Family, step: &StepRef) -> Vec<StepRef<'a>> {
    family
        .steps()
        .filter(|s| s.peer.and_then(|p| p.counterpart.as_deref()) == Some(step.name()))
        .collect()
}

/// A family's final step and its peers measured on one GPU, at the family's summary case.
pub struct Measured<'a> {
    pub family: &'a Family,
    pub gpu: &'a str,
    /// The GPU's L2 cache, in bytes (for [`roof_binds`]).
    pub l2_cache_bytes: u64,
    pub step: StepRef<'a>,
    pub record: &'a Record,
    /// Each peer with its record, where it was measured.
    pub peers: Vec<(StepRef<'a>, &'a Record)>,
}

/// Every family's final step on every GPU where it was measured, families in teaching order, GPUs
/// in the order given.
pub fn measured<'a>(course: &'a Course, gpus: &[GpuResults<'a>]) -> Vec<Measured<'a>> {
    let mut all = Vec::new();
    for family in &course.families {
        let Some(step) = final_step(family) else { continue };
        let case = &family.summary_case.label;
        for gpu in gpus {
            let Some(record) = find_record(gpu.results, &step, case) else { continue };
            let peers = peers_of(family, &step)
                .into_iter()
                .filter_map(|peer| Some((peer, find_record(gpu.results, &peer, case)?)))
                .collect();
            let l2_cache_bytes = gpu.results.first().map_or(0, |r| r.device.l2_cache_bytes);
            all.push(Measured { family, gpu: gpu.name, l2_cache_bytes, step, record, peers });
        }
    }
    all
}

/// The reduction across GPUs on one machine: our best all-reduce
/// ([`crate::multi_gpu::best_method`]) and the others' (NCCL, PyTorch's torch.distributed) at the
/// largest size, on the most GPUs it was measured on.
pub struct AllReduce<'a> {
    pub machine: &'a MachineFile,
    pub gpus: usize,
    /// Our best step's name and row.
    pub step: &'static str,
    pub ours: &'a MachineRow,
    /// `(name, its row)`: NCCL, then PyTorch where the session measured it.
    pub others: Vec<(String, &'a MachineRow)>,
}

/// The all-reduce of each machine that measured the ring.
pub fn all_reduces(machines: &[MachineFile]) -> Vec<AllReduce<'_>> {
    machines
        .iter()
        .filter_map(|machine| {
            let step = crate::multi_gpu::best_method(machine);
            let ring = |gpus: usize, bytes: u64| machine.all_reduce(step, gpus, bytes);
            let gpus = machine
                .gpu_counts()
                .into_iter()
                .rev()
                .find(|&g| machine.sizes().iter().any(|&b| ring(g, b).is_some()))?;
            let bytes = machine.sizes().into_iter().rev().find(|&b| ring(gpus, b).is_some())?;
            let version = |fact: &str| {
                machine.fact(fact).split_whitespace().next().unwrap_or("?").to_string()
            };
            let others = [
                ("nccl", format!("NCCL {}", version("nccl"))),
                ("torch", format!("PyTorch {} (torch.distributed)", version("torch"))),
            ]
            .into_iter()
            .filter_map(|(method, name)| Some((name, machine.all_reduce(method, gpus, bytes)?)))
            .collect();
            Some(AllReduce { machine, gpus, step, ours: ring(gpus, bytes)?, others })
        })
        .collect()
}

/// The page a family's name links to: its summary, else its first chapter.
fn family_page(family: &Family) -> Option<&str> {
    family
        .summary
        .as_ref()
        .map(|p| p.file.as_str())
        .or(family.chapters.first().map(|c| c.file.as_str()))
}

/// The headline table: a row per family, GPU and peer, then a row per machine and peer of the
/// all-reduce. `None` when nothing was measured.
pub fn headline_table(measured: &[Measured], all_reduces: &[AllReduce]) -> Option<Table> {
    if measured.is_empty() && all_reduces.is_empty() {
        return None;
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut previous_family = None;
    for m in measured {
        // The family's name on its first row only.
        let technique = if previous_family == Some(&m.family.id) {
            String::new()
        } else {
            let name = match family_page(m.family) {
                Some(page) => format!("[{}]({page})", m.family.title),
                None => m.family.title.clone(),
            };
            format!("{name}, {}", m.family.summary_case.label)
        };
        previous_family = Some(&m.family.id);
        let ours = [
            technique,
            short_gpu_name(m.gpu),
            format!("**{}**", m.step.name()),
            format!("{:.0}", m.record.gbs),
        ];
        if m.peers.is_empty() {
            rows.push([ours.to_vec(), vec!["-".into(); 3]].concat());
        }
        for (i, (peer, record)) in m.peers.iter().enumerate() {
            // A second peer of the same step on the same GPU: the step's cells are not repeated.
            let ours = if i == 0 { ours.to_vec() } else { vec![String::new(); ours.len()] };
            // `<wbr>`: where a long name may break, `DeviceReduce::Sum` after its `::`.
            let source =
                peer.peer.map_or(peer.name(), |p| p.source.as_str()).replace("::", "::<wbr>");
            let theirs = vec![
                format!("*{source}*"),
                format!("{:.0}", record.gbs),
                speed_up(record.median_ms, m.record.median_ms),
            ];
            rows.push([ours, theirs].concat());
        }
    }
    for (n, all_reduce) in all_reduces.iter().enumerate() {
        for (i, (name, row)) in all_reduce.others.iter().enumerate() {
            let technique = if n == 0 && i == 0 {
                format!(
                    "[Across GPUs](reduction/reduce-multi-gpu.md), all-reduce of {}",
                    crate::multi_gpu::size_label(all_reduce.ours.bytes)
                )
            } else {
                String::new()
            };
            let ours = if i == 0 {
                vec![
                    technique,
                    format!(
                        "{} x {}",
                        all_reduce.gpus,
                        short_gpu_name(all_reduce.machine.fact("device"))
                    ),
                    format!("**{}**", all_reduce.step),
                    format!("{:.0}", all_reduce.ours.busbw()),
                ]
            } else {
                vec![technique, String::new(), String::new(), String::new()]
            };
            let theirs = vec![
                format!("*{name}*"),
                format!("{:.0}", row.busbw()),
                speed_up(row.ms, all_reduce.ours.ms),
            ];
            rows.push([ours, theirs].concat());
        }
    }
    let columns = vec![
        ("technique", Align::Left),
        ("GPU", Align::Left),
        ("final step", Align::Left),
        ("GB/s", Align::Right),
        ("peer", Align::Left),
        ("peer GB/s", Align::Right),
        ("speed-up over the peer", Align::Right),
    ];
    let mut gpus: Vec<String> = Vec::new();
    for m in measured {
        let named = format!("{} is an {}", short_gpu_name(m.gpu), m.gpu);
        if !gpus.contains(&named) {
            gpus.push(named);
        }
    }
    let mut caption = String::from(
        "Each technique's final step beside its peer, measured in the same run on the same input, \
         at the \
         family's summary case; the speed-up is the peer's time over the step's (above 1: the \
         course's \
         step is the faster).",
    );
    if !gpus.is_empty() {
        let _ = write!(caption, " {}.", gpus.join(", "));
    }
    let peers: Vec<StepRef> =
        measured.iter().flat_map(|m| m.peers.iter().map(|(p, _)| *p)).collect();
    caption += &measuring::tables::script_note(&peers);
    if !all_reduces.is_empty() {
        caption += " Across GPUs, the GB/s are the all-reduce's bus bandwidth (as nccl-tests \
                    reports it), \
                    with NVLink SHARP (NVLS, NCCL's fastest all-reduce on NVSwitch machines) off.";
    }
    Some(Table { caption, columns, rows })
}

/// A speed-up: the peer's time over the step's, `1.05x`.
fn speed_up(peer_ms: f64, step_ms: f64) -> String {
    format!("{:.2}x", peer_ms / step_ms)
}

/// The headline chart, `width` pixels wide: per family, per GPU, the final step's and its peers'
/// shares of their roofs. `None` when nothing was measured on one GPU. The front page shows one
/// [`SIZE`](crate::charts::SIZE) wide, and on a phone one [`NARROW`] wide, laid out for it.
pub fn headline_chart(measured: &[Measured], width: u32) -> Result<Option<String>, ChartError> {
    let mut groups: Vec<Group> = Vec::new();
    for m in measured {
        if groups.last().is_none_or(|g| g.name != m.family.title) {
            groups.push(Group {
                name: m.family.title.clone(),
                case: m.family.summary_case.label.clone(),
                gpus: Vec::new(),
            });
        }
        let share = |record: &Record| {
            roof_binds(record, m.l2_cache_bytes).then(|| record.percent_of_roof())
        };
        let ours =
            ShareBar { label: m.step.name().to_string(), percent: share(m.record), peer: false };
        let peers = m.peers.iter().map(|(peer, record)| ShareBar {
            label: peer.peer.map_or(peer.name(), |p| p.source.as_str()).to_string(),
            percent: share(record),
            peer: true,
        });
        let bars = std::iter::once(ours).chain(peers).collect();
        if let Some(group) = groups.last_mut() {
            group.gpus.push(GroupBars { gpu: short_gpu_name(m.gpu), bars });
        }
    }
    if groups.is_empty() {
        return Ok(None);
    }
    let mut libraries: Vec<String> = Vec::new();
    for source in measured
        .iter()
        .flat_map(|m| m.peers.iter().filter_map(|(p, _)| p.peer.map(|p| p.source.as_str())))
    {
        let library = source.split_whitespace().next().unwrap_or(source).to_string();
        if !libraries.contains(&library) {
            libraries.push(library);
        }
    }
    let peers = if width < SHARE_NARROW {
        "its peer".to_string()
    } else {
        format!("its peer ({})", libraries.join(", "))
    };
    let legend = ["the course's final step".to_string(), peers];
    share_chart(
        "Each technique's final step and its peer: % of each one's own roof",
        &groups,
        &legend,
        width,
    )
    .map(Some)
}

/// The width of the front page's chart on a phone: its column at 400 pixels of screen.
pub const NARROW: u32 = 360;

/// `H100` for `NVIDIA H100 80GB HBM3`: the name without the vendor, to its first space.
pub fn short_gpu_name(name: &str) -> String {
    let name = name.strip_prefix("NVIDIA ").unwrap_or(name);
    name.split_whitespace().next().unwrap_or(name).to_string()
}

/// The front page's fragment: the chart (`chart`: the paths, from the including page, of the wide
/// chart and of the narrow one a phone shows) and the table.
pub fn headline_fragment(chart: Option<(&str, &str)>, table: Option<&Table>) -> String {
    let mut out = String::new();
    if let Some((wide, narrow)) = chart {
        // A picture: the narrow chart where the screen is a phone's, the wide one elsewhere.
        let _ = writeln!(
            out,
            "<div class=\"headline-chart\">\n<picture>\n<source media=\"(max-width: {}px)\" \
             srcset=\"{narrow}\">\n<img src=\"{wide}\" alt=\"Each technique's final step beside \
             its peer, on every GPU measured\">\n</picture>\n</div>\n",
            SHARE_NARROW
        );
    }
    match table {
        // In a `headline` block: book/css/headline.css sets the table tighter than mdBook's.
        Some(table) => {
            let _ = write!(out, "<div class=\"headline\">\n\n{}\n</div>\n", table.markdown());
        }
        None => out += "*Not measured yet: run the tour on a GPU (`cargo run --release`).*\n",
    }
    out
}
