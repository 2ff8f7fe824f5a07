//! # course: the registry of the course
//!
//! `course.toml`, at the workspace root, lists the families in teaching order, each family's
//! chapters (one crate each) and each chapter's steps, with what the tour and the benches need to
//! measure them: the cases to run, the kernel, whether the step only reads or reads and writes
//! (which roof it is compared with), and a formula for the bytes it must move. Peers (CUB, the
//! seeds' kernels, PyTorch's ops) are listed beside the family's chapters.
//!
//! Everything that lists steps is generated from this registry or checked against it: the tour, the
//! benches, the summary pages, `book/src/SUMMARY.md` and the README's status table.
//!
//! ```
//! let course = course::registry();
//! let reduction = course.family("reduction").expect("the reduction family");
//! let naive = reduction.step("naive").expect("its first step");
//! assert_eq!(naive.crate_name, "reduce-naive");
//! let bytes = naive.step.bytes.eval(|name| match name {
//!     "n" => Some(1000),
//!     "partials" => Some(4),
//!     _ => None,
//! });
//! assert_eq!(bytes, Ok(4016));
//! ```

mod formula;
mod improvement;

use std::sync::OnceLock;

use gpu_harness::Case;
use serde::{Deserialize, Deserializer};

pub use formula::Formula;
pub use improvement::{Counter, Improvement, Per, RunCounters};

/// The script that measures the peers declared with `torch` (PyTorch's ops), which the tour does
/// not time: it runs without torch.
pub const TORCH_SCRIPT: &str = "scripts/torch_reductions.py";

/// The registry's text, embedded at build time.
pub const REGISTRY: &str = include_str!("../../../course.toml");

/// The course, parsed once per process from the embedded `course.toml`.
///
/// Panics with the parser's message if the file is invalid: it is part of the code, and the
/// registry's own tests fail first.
pub fn registry() -> &'static Course {
    static COURSE: OnceLock<Course> = OnceLock::new();
    COURSE.get_or_init(|| Course::parse(REGISTRY).unwrap_or_else(|e| panic!("course.toml: {e}")))
}

/// Every family of the course, in teaching order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Course {
    #[serde(rename = "family")]
    pub families: Vec<Family>,
}

/// A family of techniques (reduction, scan, ...): a part of the book.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Family {
    /// Short name, e.g. `reduction`.
    pub id: String,
    /// The part's title in the book, e.g. `Reduction`.
    pub title: String,
    /// What every step is measured at, unless it names its own cases.
    #[serde(deserialize_with = "cases")]
    pub cases: Vec<Case>,
    /// The case the summary compares every step at.
    #[serde(deserialize_with = "case")]
    pub summary_case: Case,
    /// The cases each chapter draws a chart of (default: the summary case alone).
    #[serde(default, deserialize_with = "optional_cases")]
    pub charts: Option<Vec<Case>>,
    /// What the tour runs each step at on the CPU simulator.
    #[serde(deserialize_with = "case")]
    pub simulator_case: Case,
    /// Bytes of a case's input, on which the roofs are measured.
    pub input_bytes: Formula,
    /// The element type of its input (`f32` unless named: `u8` for the histogram's bytes); a step
    /// of another type names its own. Charts tell the types apart.
    #[serde(default = "f32")]
    pub dtype: String,
    /// The family's summary page, after its chapters.
    pub summary: Option<Page>,
    #[serde(rename = "chapter")]
    pub chapters: Vec<Chapter>,
    /// Libraries and reference kernels the steps are compared with.
    #[serde(rename = "peer", default)]
    pub peers: Vec<Peer>,
}

/// A book page: its file under `book/src/` and its title.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    pub file: String,
    pub title: String,
}

/// One crate, one kernel file and one book page.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chapter {
    /// The technique crate, e.g. `reduce-naive`.
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// The chapter's title in the book's table of contents.
    pub title: String,
    /// The chapter's file under `book/src/`.
    pub file: String,
    /// Its steps, measured by the tour and the benches on one GPU. A chapter whose work needs
    /// several
    /// GPUs (reduce-multi-gpu) lists none: its own bench measures it, and the book renders that.
    #[serde(rename = "step", default)]
    pub steps: Vec<Step>,
    /// Steps graded on a world of simulated devices (`[[family.chapter.world_step]]`), which the
    /// tour, on one GPU, does not measure: reduce-multi-gpu's ring all-reduce.
    #[serde(rename = "world_step", default)]
    pub world_steps: Vec<WorldStep>,
}

/// A step whose work needs several GPUs: graded on the CPU simulator, on a world of simulated
/// devices (its crate counts one run: `reduce_multi_gpu::count_ring`), never measured by the tour.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldStep {
    pub name: String,
    /// The simulated devices it is counted on.
    pub devices: usize,
    /// The case it is counted at: each device's buffer.
    #[serde(deserialize_with = "case")]
    pub count_case: Case,
    /// The chapter's section that teaches its technique.
    pub section: Option<String>,
    /// What its technique exists to reduce (as a step's `improves`).
    pub improves: Vec<Improvement>,
}

/// One measured step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub name: String,
    /// The kernel in `cuda/<crate_name>.cu` (or the file of `kernel_from`); for a peer, its C
    /// function in `scripts/peers/`. Empty only for a peer measured by [`TORCH_SCRIPT`].
    #[serde(default)]
    pub kernel: String,
    /// The chapter (crate) of the family whose kernel file defines `kernel`, where it is not the
    /// step's own: a step that measures another chapter's kernel beside its own (reduce-numerics
    /// measures reduce-atomic's f32 sum beside its half-precision sums).
    pub kernel_from: Option<String>,
    /// What the step does, in a few words.
    pub about: String,
    pub moves: Moves,
    pub bytes: Formula,
    /// A case the chapter measures besides the ladder (not compared with the steps before it).
    #[serde(default)]
    pub extra: bool,
    /// The cases this step runs at, where they are not the family's (a one-block step at its
    /// largest size, a matrix shape).
    #[serde(default, deserialize_with = "optional_cases")]
    pub cases: Option<Vec<Case>>,
    /// The bytes of its input, where they are not the family's `input_bytes` (an f32 variant of a
    /// family of byte inputs): the roofs are measured on this many bytes.
    pub input_bytes: Option<Formula>,
    /// The element type of its input, where not the family's (`bf16` rows in an f32 family): as
    /// wide as its input bytes per element say, and a PyTorch peer's the type it is timed at.
    pub dtype: Option<String>,
    /// What the step's technique exists to reduce, counted on the CPU simulator: `cargo course
    /// grade` compares a student's counts with the reference solution's (optimisation points).
    #[serde(default)]
    pub improves: Vec<Improvement>,
    /// The case the grader counts at, where not the family's simulator case (capped at the step's
    /// own first case): a kind of input that shows the technique (all-equal bytes), or a size past
    /// one look-back window.
    #[serde(default, deserialize_with = "optional_case")]
    pub count_case: Option<Case>,
    /// The chapter's section that teaches the step's technique (a heading of its page), named in
    /// the grader's advice.
    pub section: Option<String>,
    /// A feature of compute capability 9.0 (Hopper) the step's kernel uses, and what runs in its
    /// place on an older GPU (or under an older `GPU_PROFILE`).
    pub hopper: Option<HopperFeature>,
}

/// What a step needs Hopper for, and its fallback before compute capability 9.0.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopperFeature {
    /// The feature, in a few words (thread block clusters, bulk copies).
    pub uses: String,
    /// The kernel the launcher runs before 9.0 where it is not the step's own (whose older code
    /// path then does without the feature).
    pub kernel_before: Option<String>,
}

impl HopperFeature {
    /// The kernel a device of `compute_capability` launches for a step of `kernel`.
    pub fn kernel_on<'a>(&'a self, kernel: &'a str, compute_capability: (u32, u32)) -> &'a str {
        match &self.kernel_before {
            Some(before) if compute_capability < (9, 0) => before,
            _ => kernel,
        }
    }
}

/// A library call or a reference kernel that steps are compared with.
#[derive(Debug, Clone, Deserialize)]
pub struct Peer {
    /// The crate whose code calls it (its `steps()` offers the peer like a step).
    #[serde(rename = "crate")]
    pub crate_name: String,
    #[serde(flatten)]
    pub step: Step,
    /// Where it comes from, e.g. `NVIDIA CUB 3.0 DeviceReduce::Sum` or `seed 004`.
    pub source: String,
    /// The course's step it is the counterpart of, if any (the summary puts them side by side).
    pub counterpart: Option<String>,
    /// For a PyTorch op, which the tour does not time: the op and type [`TORCH_SCRIPT`] measures
    /// it as, the second and third words of its output's lines (`softmax f32`).
    pub torch: Option<String>,
}

/// What a step moves, and so which roof it is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Moves {
    /// Reads its input and writes (next to) nothing: compared with the read roof.
    #[serde(rename = "read")]
    Read,
    /// Reads and writes about as much: compared with the copy roof.
    #[serde(rename = "read-write")]
    ReadWrite,
}

impl Moves {
    /// The roof's name in tables and charts: `read` or `copy`.
    pub fn roof(self) -> &'static str {
        match self {
            Moves::Read => "read",
            Moves::ReadWrite => "copy",
        }
    }
}

/// A step of a family with where it lives: its crate, and whether it is a peer.
#[derive(Debug, Clone, Copy)]
pub struct StepRef<'a> {
    pub family: &'a Family,
    pub crate_name: &'a str,
    pub step: &'a Step,
    /// The peer's description, for a peer.
    pub peer: Option<&'a Peer>,
}

impl<'a> StepRef<'a> {
    pub fn name(&self) -> &'a str {
        &self.step.name
    }

    /// The cases this step runs at.
    pub fn cases(&self) -> &'a [Case] {
        self.step.cases.as_deref().unwrap_or(&self.family.cases)
    }

    /// Whether the step is on the family's ladder (not an extra, not a peer).
    pub fn on_ladder(&self) -> bool {
        !self.step.extra && self.peer.is_none()
    }

    /// For a peer measured by [`TORCH_SCRIPT`], not by the tour: its op and type (`softmax f32`).
    pub fn torch(&self) -> Option<&'a str> {
        self.peer.and_then(|p| p.torch.as_deref())
    }

    /// Whether the tour and the benches time the step: every step and peer but those measured by
    /// [`TORCH_SCRIPT`].
    pub fn timed_by_tour(&self) -> bool {
        self.torch().is_none()
    }

    /// The element type of its input: its own `dtype`, else the family's.
    pub fn dtype(&self) -> &'a str {
        self.step.dtype.as_deref().unwrap_or(&self.family.dtype)
    }

    /// The file under `cuda/` that defines the step's kernel: its chapter's, or that of the chapter
    /// named by `kernel_from`. `None` for a peer, whose kernel is a C function in `scripts/peers/`.
    pub fn kernel_file(&self) -> Option<String> {
        if self.peer.is_some() {
            return None;
        }
        let crate_name = self.step.kernel_from.as_deref().unwrap_or(self.crate_name);
        // `validate` checked that `kernel_from` names a chapter of the family.
        self.family.chapter(crate_name).map(Chapter::kernel_file)
    }

    /// The bytes of the step's input at `case`, on which its roofs are measured.
    pub fn input_bytes(&self, case: &Case) -> u64 {
        match &self.step.input_bytes {
            // `validate` checked that the formula names only these.
            Some(formula) => formula.eval(|name| case_value(case, name)).unwrap_or(0),
            None => self.family.input_bytes(case),
        }
    }

    /// The case the grader counts the step at: its `count_case`, else the family's simulator case,
    /// or the step's own first case where that is smaller (a one-block step).
    pub fn count_case(&self) -> Case {
        if let Some(case) = &self.step.count_case {
            return case.clone();
        }
        let first = &self.cases()[0];
        first.with_elements(self.family.simulator_case.n().min(first.n()))
    }

    /// The chapter this step belongs to (`None` for a peer).
    pub fn chapter(&self) -> Option<&'a Chapter> {
        if self.peer.is_some() { None } else { self.family.chapter(self.crate_name) }
    }

    /// The bytes the step moves at `case`, given the counts it reported.
    pub fn bytes(&self, case: &Case, counts: &[(&str, u64)]) -> Result<u64, String> {
        let value = |name: &str| {
            case_value(case, name)
                .or_else(|| counts.iter().find(|(n, _)| *n == name).map(|&(_, v)| v))
        };
        self.step
            .bytes
            .eval(value)
            .map_err(|e| format!("{}/{}: {e}", self.crate_name, self.step.name))
    }
}

fn f32() -> String {
    "f32".to_string()
}

/// The bytes of one element of each type a `dtype` may name.
const DTYPES: [(&str, u64); 8] =
    [("f64", 8), ("f32", 4), ("i32", 4), ("u32", 4), ("f16", 2), ("bf16", 2), ("u8", 1), ("i8", 1)];

/// A step's `dtype`: a type [`DTYPES`] knows, as wide as the step's input is per element at its
/// first case, and for a PyTorch peer the type of its `torch`.
fn validate_dtype(step: &StepRef) -> Result<(), String> {
    let name = step.name();
    let dtype = step.dtype();
    let Some(&(_, width)) = DTYPES.iter().find(|(known, _)| *known == dtype) else {
        return Err(format!("step `{name}`: unknown dtype `{dtype}`"));
    };
    if let Some(case) = step.cases().first() {
        let bytes = step.input_bytes(case);
        if bytes != width * case.n() {
            return Err(format!(
                "step `{name}`: its input is {bytes} bytes at {}, not {width} per element as \
                 {dtype} (name its `dtype`, or correct its `input_bytes`)",
                case.label
            ));
        }
    }
    match step.torch().and_then(|torch| torch.split(' ').nth(1)) {
        Some(timed) if timed != dtype => {
            Err(format!("peer `{name}`: timed as {timed} (`torch`), but its dtype is {dtype}"))
        }
        _ => Ok(()),
    }
}

/// A peer's `torch`: two words, the op and the type, as [`TORCH_SCRIPT`]'s lines write them.
fn validate_torch(peer: &Peer, torch: &str) -> Result<(), String> {
    let name = &peer.step.name;
    let words: Vec<&str> = torch.split(' ').collect();
    if words.len() != 2 || words.iter().any(|w| w.is_empty()) {
        return Err(format!(
            "peer `{name}`: `torch` is an op and a type, `softmax f32`, not `{torch}`"
        ));
    }
    if !peer.step.kernel.is_empty() {
        return Err(format!(
            "peer `{name}`: measured by {TORCH_SCRIPT} (`torch`), it has no `kernel`"
        ));
    }
    Ok(())
}

impl Course {
    /// Parses and validates a registry.
    pub fn parse(text: &str) -> Result<Course, String> {
        let course: Course = toml::from_str(text).map_err(|e| e.to_string())?;
        course.validate()?;
        Ok(course)
    }

    pub fn family(&self, id: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.id == id)
    }

    /// Every step of every family, in teaching order: each family's chapters' steps, then its
    /// peers.
    pub fn steps(&self) -> impl Iterator<Item = StepRef<'_>> {
        self.families.iter().flat_map(Family::steps)
    }

    /// Every technique crate, in teaching order.
    pub fn crates(&self) -> impl Iterator<Item = &str> {
        self.families.iter().flat_map(|f| f.chapters.iter().map(|c| c.crate_name.as_str()))
    }

    /// Names unique within a family, cases and formulas that make sense.
    fn validate(&self) -> Result<(), String> {
        let mut ids = Vec::new();
        let mut torch_ops: Vec<&str> = Vec::new();
        for family in &self.families {
            if ids.contains(&family.id) {
                return Err(format!("family `{}` twice", family.id));
            }
            ids.push(family.id.clone());
            family.input_bytes.eval(|name| ["n", "rows", "cols"].contains(&name).then_some(1))?;
            let mut names: Vec<&str> = Vec::new();
            for step in family.steps() {
                if names.contains(&step.name()) {
                    return Err(format!("family `{}`: step `{}` twice", family.id, step.name()));
                }
                names.push(step.name());
                match (step.peer, step.torch()) {
                    (Some(peer), Some(torch)) => {
                        validate_torch(peer, torch)?;
                        if torch_ops.contains(&torch) {
                            return Err(format!(
                                "peer `{}`: `torch = \"{torch}\"` twice",
                                step.name()
                            ));
                        }
                        torch_ops.push(torch);
                    }
                    _ if step.step.kernel.is_empty() => {
                        return Err(format!("step `{}`: no `kernel`", step.name()));
                    }
                    _ => {}
                }
                if let Some(formula) = &step.step.input_bytes {
                    formula.eval(|name| ["n", "rows", "cols"].contains(&name).then_some(1))?;
                }
                validate_dtype(&step)?;
                for improvement in &step.step.improves {
                    improvement.validate().map_err(|e| format!("step `{}`: {e}", step.name()))?;
                }
                if step.peer.is_some()
                    && (!step.step.improves.is_empty() || step.step.count_case.is_some())
                {
                    return Err(format!(
                        "peer `{}`: `improves` and `count_case` are for graded steps",
                        step.name()
                    ));
                }
                if let Some(from) = &step.step.kernel_from {
                    if step.peer.is_some() {
                        return Err(format!(
                            "peer `{}`: `kernel_from` is for steps (a peer's kernel is in \
                             scripts/peers/)",
                            step.name()
                        ));
                    }
                    if family.chapter(from).is_none() {
                        return Err(format!(
                            "step `{}`: `kernel_from` names `{from}`, not a chapter of family `{}`",
                            step.name(),
                            family.id
                        ));
                    }
                }
            }
            for chapter in &family.chapters {
                for world in &chapter.world_steps {
                    if names.contains(&world.name.as_str()) {
                        return Err(format!("family `{}`: step `{}` twice", family.id, world.name));
                    }
                    names.push(&world.name);
                    if world.devices < 2 || world.improves.is_empty() {
                        return Err(format!(
                            "world step `{}`: two devices or more, and `improves`",
                            world.name
                        ));
                    }
                    for improvement in &world.improves {
                        improvement
                            .validate()
                            .map_err(|e| format!("step `{}`: {e}", world.name))?;
                    }
                }
            }
            for peer in &family.peers {
                if let Some(counterpart) = &peer.counterpart {
                    if !family.steps().any(|s| s.peer.is_none() && s.name() == counterpart) {
                        return Err(format!("peer `{}`: no step `{counterpart}`", peer.step.name));
                    }
                }
            }
            if !family.cases.contains(&family.summary_case) {
                return Err(format!(
                    "family `{}`: its summary case is not one of its cases",
                    family.id
                ));
            }
        }
        Ok(())
    }
}

impl Family {
    /// Its chapters' steps, then its peers.
    pub fn steps(&self) -> impl Iterator<Item = StepRef<'_>> {
        let own = self.chapters.iter().flat_map(move |chapter| {
            chapter.steps.iter().map(move |step| StepRef {
                family: self,
                crate_name: &chapter.crate_name,
                step,
                peer: None,
            })
        });
        let peers = self.peers.iter().map(move |peer| StepRef {
            family: self,
            crate_name: &peer.crate_name,
            step: &peer.step,
            peer: Some(peer),
        });
        own.chain(peers)
    }

    /// The cases each chapter draws a chart of, the summary case first.
    pub fn chart_cases(&self) -> Vec<&Case> {
        let mut cases = vec![&self.summary_case];
        cases.extend(self.charts.iter().flatten().filter(|c| **c != self.summary_case));
        cases
    }

    /// The step (or peer) called `name`.
    pub fn step(&self, name: &str) -> Option<StepRef<'_>> {
        self.steps().find(|s| s.name() == name)
    }

    /// The chapter of `crate_name`.
    pub fn chapter(&self, crate_name: &str) -> Option<&Chapter> {
        self.chapters.iter().find(|c| c.crate_name == crate_name)
    }

    /// Bytes of the input of `case`, on which the roofs are measured.
    pub fn input_bytes(&self, case: &Case) -> u64 {
        // `validate` checked that the formula names only these.
        self.input_bytes.eval(|name| case_value(case, name)).unwrap_or(0)
    }
}

impl Chapter {
    /// The kernel file, `cuda/<crate_name>.cu` with `_` for `-`.
    pub fn kernel_file(&self) -> String {
        format!("{}.cu", self.crate_name.replace('-', "_"))
    }
}

/// The value of `n`, `rows` or `cols` for a case.
fn case_value(case: &Case, name: &str) -> Option<u64> {
    match name {
        "n" => Some(case.n()),
        "rows" => Some(case.rows()),
        "cols" => Some(case.cols()),
        _ => None,
    }
}

fn case<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Case, D::Error> {
    String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
}

fn cases<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Case>, D::Error> {
    let texts = Vec::<String>::deserialize(deserializer)?;
    texts.iter().map(|t| t.parse().map_err(serde::de::Error::custom)).collect()
}

fn optional_case<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Case>, D::Error> {
    case(deserializer).map(Some)
}

fn optional_cases<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Vec<Case>>, D::Error> {
    cases(deserializer).map(Some)
}

/// Whether `source` defines the entry point `kernel` with its name written out: a line that starts
/// with `extern "C"` and has `kernel(` (as a whole name) on it or on the next line. A name made by
/// token pasting in a macro (`scan_tiles_##S(`) or handed to a macro (`PASS(multi_level_sum_f32,
/// Op)`) is not found: every kernel a chapter names can be found with grep.
pub fn kernel_written_out(source: &str, kernel: &str) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    let call = format!("{kernel}(");
    let names = |text: &str| {
        text.match_indices(&call)
            .any(|(at, _)| !text[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
    };
    lines.iter().enumerate().any(|(i, line)| {
        line.trim_start()
            .strip_prefix("extern \"C\"")
            .is_some_and(|rest| names(rest) || lines.get(i + 1).is_some_and(|next| names(next)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_that_needs_hopper_names_its_fallback_kernel_before_9_0() {
        let split = HopperFeature { uses: "clusters".into(), kernel_before: Some("split".into()) };
        assert_eq!(split.kernel_on("cluster", (9, 0)), "cluster");
        assert_eq!(split.kernel_on("cluster", (10, 0)), "cluster");
        assert_eq!(split.kernel_on("cluster", (8, 9)), "split");
        assert_eq!(split.kernel_on("cluster", (7, 5)), "split");
        let loads = HopperFeature { uses: "bulk copies".into(), kernel_before: None };
        assert_eq!(loads.kernel_on("bulk", (8, 0)), "bulk");
        let cluster = registry().steps().find(|s| s.name() == "cluster-rows");
        let cluster = cluster.and_then(|s| s.step.hopper.clone());
        assert_eq!(
            cluster.map(|h| h.kernel_on("x", (8, 0)).to_string()).as_deref(),
            Some("softmax_split_partial")
        );
    }

    /// A family of one step and a peer measured by the torch script (`peer` is the peer's lines).
    fn registry_with_peer(peer: &str) -> String {
        format!(
            r#"
[[family]]
id = "rows"
title = "Rows"
cases = ["64x2^10", "2^10x64"]
summary_case = "64x2^10"
simulator_case = "2^12"
input_bytes = "4*n"

[[family.chapter]]
crate = "rows"
title = "Rows"
file = "rows.md"

[[family.chapter.step]]
name = "fast"
kernel = "rows_fast"
about = "fast"
moves = "read-write"
bytes = "8*n"

[[family.peer]]
crate = "rows"
name = "torch-rows"
about = "torch.rows"
source = "torch.rows"
counterpart = "fast"
moves = "read-write"
bytes = "8*n"
{peer}
"#
        )
    }

    #[test]
    fn a_peer_measured_by_the_torch_script_has_an_op_and_a_type_and_no_kernel() {
        let course = Course::parse(&registry_with_peer("torch = \"rows f32\"")).unwrap();
        let family = course.family("rows").unwrap();
        let peer = family.step("torch-rows").unwrap();
        assert_eq!(peer.torch(), Some("rows f32"));
        assert!(!peer.timed_by_tour());
        assert_eq!(peer.cases(), &family.cases[..]);
        let fast = family.step("fast").unwrap();
        assert!(fast.timed_by_tour() && fast.torch().is_none());
        // The registry's own torch peers parse the same way.
        for step in registry().steps().filter(|s| s.torch().is_some()) {
            assert!(step.peer.is_some() && step.step.kernel.is_empty(), "{}", step.name());
        }
    }

    #[test]
    fn torch_peers_that_make_no_sense_are_refused() {
        for (peer, error) in [
            ("torch = \"rows\"", "`torch` is an op and a type"),
            ("torch = \"rows f32 x\"", "`torch` is an op and a type"),
            ("torch = \"rows  f32\"", "`torch` is an op and a type"),
            ("torch = \"rows f32\"\nkernel = \"cub_rows\"", "it has no `kernel`"),
            ("", "step `torch-rows`: no `kernel`"),
        ] {
            match Course::parse(&registry_with_peer(peer)) {
                Err(e) => assert!(e.contains(error), "{peer:?}: {e}"),
                Ok(_) => panic!("{peer:?} was accepted"),
            }
        }
        let twice = registry_with_peer("torch = \"rows f32\"")
            + "\n[[family.peer]]\ncrate = \"rows\"\nname = \"torch-again\"\nabout = \"a\"\nsource \
               = \"s\"\n\
               moves = \"read\"\nbytes = \"4*n\"\ntorch = \"rows f32\"\n";
        let error = Course::parse(&twice).map(|_| ()).unwrap_err();
        assert!(error.contains("peer `torch-again`: `torch = \"rows f32\"` twice"), "{error}");
    }

    #[test]
    fn a_steps_dtype_is_its_own_or_the_familys_and_agrees_with_its_bytes() {
        let half = "torch = \"rows bf16\"\ndtype = \"bf16\"\ninput_bytes = \"2*n\"";
        let course = Course::parse(&registry_with_peer(half)).unwrap();
        let family = course.family("rows").unwrap();
        assert_eq!(family.step("fast").unwrap().dtype(), "f32");
        assert_eq!(family.step("torch-rows").unwrap().dtype(), "bf16");
        for (peer, error) in [
            ("torch = \"rows f32\"\ndtype = \"bf17\"", "unknown dtype `bf17`"),
            ("torch = \"rows f32\"\ndtype = \"bf16\"", "not 2 per element as bf16"),
            ("torch = \"rows f32\"\ninput_bytes = \"2*n\"", "not 4 per element as f32"),
            ("torch = \"rows f32\"\ndtype = \"bf16\"\ninput_bytes = \"2*n\"", "timed as f32"),
        ] {
            match Course::parse(&registry_with_peer(peer)) {
                Err(e) => assert!(e.contains(error), "{peer:?}: {e}"),
                Ok(_) => panic!("{peer:?} was accepted"),
            }
        }
    }
}
