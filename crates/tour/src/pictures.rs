//! The book's pictures of what a warp does (`report::pictures`), drawn from the chapters' own
//! kernels: each step named below is run once on a fresh CPU simulator at a small case, its first
//! block traced, and the warp instruction the picture shows picked from the trace. `--pictures`
//! redraws them into `book/src/pictures/` (a test checks that the committed ones are what the
//! kernels draw); `cargo course pictures` draws the kernels of the workspace it runs in (a
//! student's starter copy) beside the committed pictures of the reference.

use std::path::{Path, PathBuf};

use gpu_harness::{Case, Device};
use measuring::session::find_entry;
use report::pictures::{
    Access, AccessKind, AccessSpace, LaunchTrace, TraceOptions, banks_picture, lanes_picture,
    sectors_picture,
};

/// The folder of the book's pictures, under the workspace root.
pub const FOLDER: &str = "book/src/pictures";

/// The seed of the pictures' inputs (fixed: a picture is compared byte for byte).
const SEED: u64 = 49;

/// What a picture draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The lanes of the first block over its barrier phases.
    Lanes,
    /// A shared access against the banks.
    Banks,
    /// A global access against the sectors.
    Sectors,
}

/// One panel: a step at a case, and (for banks and sectors) the access: warp 0's first access of
/// this space and kind, in this barrier phase or later.
#[derive(Debug, Clone, Copy)]
pub struct Panel {
    pub crate_name: &'static str,
    pub step: &'static str,
    pub case: &'static str,
    pub access: Option<(AccessSpace, AccessKind, u32)>,
}

/// A picture of the book.
#[derive(Debug, Clone)]
pub struct Picture {
    /// Its file under [`FOLDER`].
    pub file: &'static str,
    /// The chapter (crate) it illustrates.
    pub chapter: &'static str,
    pub title: &'static str,
    pub kind: Kind,
    pub panels: Vec<Panel>,
}

const fn lanes(crate_name: &'static str, step: &'static str) -> Panel {
    Panel { crate_name, step, case: "2^16", access: None }
}

const fn access(
    crate_name: &'static str,
    step: &'static str,
    case: &'static str,
    access: (AccessSpace, AccessKind, u32),
) -> Panel {
    Panel { crate_name, step, case, access: Some(access) }
}

/// Every picture of the book.
pub fn pictures() -> Vec<Picture> {
    use AccessKind::*;
    use AccessSpace::*;
    vec![
        Picture {
            file: "reduce-naive-lanes.svg",
            chapter: "reduce-naive",
            title: "reduce_naive, block 0: which lanes work in each round",
            kind: Kind::Lanes,
            panels: vec![lanes("reduce-naive", "naive")],
        },
        Picture {
            file: "reduce-interleaved-lanes.svg",
            chapter: "reduce-interleaved",
            title: "Block 0 of each step: which lanes work in each round",
            kind: Kind::Lanes,
            panels: vec![
                lanes("reduce-naive", "naive"),
                lanes("reduce-interleaved", "strided-index"),
                lanes("reduce-interleaved", "interleaved"),
            ],
        },
        Picture {
            file: "reduce-interleaved-banks.svg",
            chapter: "reduce-interleaved",
            title: "Warp 0's first shared load of round 1, against the 32 banks",
            kind: Kind::Banks,
            panels: vec![
                access("reduce-interleaved", "strided-index", "2^16", (Shared, Load, 1)),
                access("reduce-interleaved", "interleaved", "2^16", (Shared, Load, 1)),
            ],
        },
        Picture {
            file: "transpose-coalescing.svg",
            chapter: "transpose",
            title: "transpose_naive, warp 0: the sectors of its read and of its write",
            kind: Kind::Sectors,
            panels: vec![
                access("transpose", "naive", "256x256", (Global, Load, 0)),
                access("transpose", "naive", "256x256", (Global, Store, 0)),
            ],
        },
        Picture {
            file: "transpose-banks.svg",
            chapter: "transpose",
            title: "Warp 0 reads a column of the tile: 32 banks, unpadded and padded",
            kind: Kind::Banks,
            panels: vec![
                access("transpose", "tiled", "256x256", (Shared, Load, 0)),
                access("transpose", "padded", "256x256", (Shared, Load, 0)),
            ],
        },
        Picture {
            file: "histogram-banks.svg",
            chapter: "histogram",
            title: "Warp 0's first shared atomic on all-equal bytes: a copy per block, per warp, \
                    per lane",
            kind: Kind::Banks,
            panels: vec![
                access("histogram", "shared-atomics", "2^16 all-equal", (Shared, Atomic, 0)),
                access("histogram", "per-warp", "2^16 all-equal", (Shared, Atomic, 0)),
                access("histogram", "lane-copies", "2^16 all-equal", (Shared, Atomic, 0)),
            ],
        },
        Picture {
            file: "batch-stats-coalescing.svg",
            chapter: "batch-stats",
            title: "Warp 0's first load of the tensor: a thread per channel, and a block per \
                    channel",
            kind: Kind::Sectors,
            panels: vec![
                access("batch-stats", "naive", "2x64x8x8", (Global, Load, 0)),
                access("batch-stats", "coalesced", "2x64x8x8", (Global, Load, 0)),
            ],
        },
    ]
}

/// A panel's step, run on `device` with its first block traced: the trace of the step's kernel,
/// and a note when its result is wrong (a student's kernel is drawn all the same).
fn trace_panel(device: &Device, panel: &Panel) -> Result<(LaunchTrace, Option<String>), String> {
    let name = format!("{}/{}", panel.crate_name, panel.step);
    let course = course::registry();
    let step = course
        .steps()
        .find(|s| s.crate_name == panel.crate_name && s.name() == panel.step)
        .ok_or_else(|| format!("{name}: not a step of course.toml"))?;
    let entries = crate::steps::entries();
    let entry = find_entry(&entries, &step)
        .ok_or_else(|| format!("{name}: no crate's steps() offers it"))?;
    let case: Case = panel.case.parse().map_err(|e| format!("{name}: case {}: {e}", panel.case))?;
    let mut prepared =
        (entry.prepare)(device, &case, SEED).map_err(|e| format!("{name} at {case}: {e}"))?;
    device.take_launches();
    device.trace_launches(Some(TraceOptions::default()));
    let queued = prepared.queue().and_then(|()| device.synchronize());
    device.trace_launches(None);
    let traces = device.take_traces();
    queued.map_err(|e| format!("{name} at {case}: {e}"))?;
    let kernel = &step.step.kernel;
    let trace = traces
        .into_iter()
        .find(|t| t.kernel == *kernel)
        .ok_or_else(|| format!("{name} at {case}: it launched no `{kernel}`"))?;
    let wrong = match prepared.check() {
        Ok(gpu_harness::Checked::Correct) => None,
        Ok(gpu_harness::Checked::Wrong(why)) => Some(format!("its result is wrong: {why}")),
        Err(e) => Some(format!("its check failed: {e}")),
    };
    Ok((trace, wrong))
}

/// Warp 0's first access of `space` and `kind` in block 0 at barrier phase `phase` or later.
fn pick(
    trace: &LaunchTrace,
    (space, kind, phase): (AccessSpace, AccessKind, u32),
) -> Option<Access> {
    trace
        .steps
        .iter()
        .filter(|s| s.block == 0 && s.warp == 0 && s.phase >= phase)
        .filter_map(|s| s.access.as_ref())
        .find(|a| a.space == space && a.kind == kind)
        .cloned()
}

/// Draws `picture` from the kernels this build holds; `label` names a panel from its step.
pub fn draw(
    picture: &Picture,
    label: impl Fn(&Panel, &LaunchTrace) -> String,
) -> Result<String, String> {
    let device = Device::simulator().map_err(|e| format!("the CPU simulator cannot draw: {e}"))?;
    let mut traces = Vec::new();
    for panel in &picture.panels {
        let (trace, wrong) = trace_panel(&device, panel)?;
        let mut text = label(panel, &trace);
        if let Some(wrong) = wrong {
            text = format!("{text} ({wrong})");
        }
        traces.push((panel, text, trace));
    }
    Ok(match picture.kind {
        Kind::Lanes => {
            let panels: Vec<(String, &LaunchTrace)> =
                traces.iter().map(|(_, l, t)| (l.clone(), t)).collect();
            lanes_picture(picture.title, &panels)
        }
        Kind::Banks | Kind::Sectors => {
            let mut panels = Vec::new();
            for (panel, text, trace) in &traces {
                let wanted = panel.access.expect("a banks or sectors panel names its access");
                let access = pick(trace, wanted).ok_or_else(|| {
                    format!(
                        "{}/{}: warp 0 makes no {wanted:?} access",
                        panel.crate_name, panel.step
                    )
                })?;
                panels.push((text.clone(), access));
            }
            if picture.kind == Kind::Banks {
                banks_picture(picture.title, &panels)
            } else {
                sectors_picture(picture.title, &panels)
            }
        }
    })
}

/// The book's label of a panel: the step, its kernel, and for an access which one.
pub fn book_label(panel: &Panel, trace: &LaunchTrace) -> String {
    let what = match panel.access {
        None => String::new(),
        Some((space, kind, _)) => {
            let space = if space == AccessSpace::Shared { "shared" } else { "global" };
            let kind = match kind {
                AccessKind::Load => "load",
                AccessKind::Store => "store",
                AccessKind::Atomic => "atomic",
            };
            format!(", {space} {kind}")
        }
    };
    format!("{} ({}{what}, at {})", panel.step, trace.kernel, panel.case)
}

/// The book's pictures of the chosen chapters (all when `chapters` is empty), as `(path, svg)`.
pub fn book_pictures(root: &Path, chapters: &[String]) -> Result<Vec<(PathBuf, String)>, String> {
    let mut files = Vec::new();
    for picture in
        pictures().iter().filter(|p| chapters.is_empty() || chapters.iter().any(|c| c == p.chapter))
    {
        let svg = draw(picture, book_label)?;
        files.push((root.join(FOLDER).join(picture.file), svg));
    }
    Ok(files)
}

/// The pictures of the chosen chapters drawn from this workspace's kernels (a student's), each
/// above the committed picture of the reference, as `(file name, svg)`.
pub fn student_pictures(root: &Path, chapters: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut files = Vec::new();
    for picture in
        pictures().iter().filter(|p| chapters.is_empty() || chapters.iter().any(|c| c == p.chapter))
    {
        let mine = draw(picture, |panel, trace| format!("yours: {}", book_label(panel, trace)))?;
        let reference_path = root.join(FOLDER).join(picture.file);
        let svg = match std::fs::read_to_string(&reference_path) {
            Ok(reference) => report::pictures::beside(
                ("Yours, drawn from the kernels in cuda/ of this workspace", &mine),
                (
                    &format!(
                        "The reference solution's, as the book shows it ({FOLDER}/{})",
                        picture.file
                    ),
                    &reference,
                ),
            ),
            Err(_) => mine,
        };
        files.push((picture.file.to_string(), svg));
    }
    Ok(files)
}

/// The pictures of `crate_name`'s chapter that draw its step `step`, for the grader's advice.
pub fn files_showing(crate_name: &str, step: &str) -> Vec<&'static str> {
    pictures()
        .into_iter()
        .filter(|p| {
            p.chapter == crate_name
                && p.panels.iter().any(|q| q.crate_name == crate_name && q.step == step)
        })
        .map(|p| p.file)
        .collect()
}
