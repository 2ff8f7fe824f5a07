//! Optimisation points: what each step's technique exists to reduce, counted on the CPU simulator.
//!
//! A step of `course.toml` names the simulator counters its technique improves (`improves`), each
//! per element, per block, per launch or per run of the step. `cargo course grade` runs the
//! student's kernel and the reference solution's on the same input, in the same run, counts both,
//! and scores each counter by the student's count over the reference's: full marks at or under
//! [`FULL_MARKS_AT`] times the reference, none at or over [`NO_MARKS_AT`] times it, a straight line
//! between. A step scores its worst counter (a technique half applied is not applied), and a
//! crate's optimisation points are [`OPTIMISATION_POINTS`] times the mean of its steps' scores.
//!
//! The counts are exact and deterministic (the simulator runs the blocks of a launch in order, warp
//! by warp), so the slack is not for noise: it lets a solution written differently (another loop
//! form, one more instruction per round) keep its points, while one that leaves the technique out
//! (the divergent modulo of reduce-naive in sequential addressing's place) lands far past twice the
//! reference.

use std::collections::BTreeMap;
use std::fmt;

use gpu_harness::{Case, LaunchCounters, Transfers};
use serde::{Deserialize, Serialize};

/// The optimisation points of a crate whose graded steps all match the reference.
pub const OPTIMISATION_POINTS: f64 = 5.0;
/// A count at or under this multiple of the reference's gets full marks.
pub const FULL_MARKS_AT: f64 = 1.1;
/// A count at or over this multiple of the reference's gets none.
pub const NO_MARKS_AT: f64 = 2.0;
/// The seed of the inputs steps are counted on: the student's and the reference's runs, and a
/// starter's recorded reference, all count the same input.
pub const COUNT_SEED: u64 = 27;

/// A simulator counter a technique improves (its name in `course.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
pub enum Counter {
    /// Warp instructions executed.
    #[serde(rename = "warp instructions")]
    WarpInstructions,
    /// Warp-level branches executed (loop back-edges, tests that are not predicated away).
    #[serde(rename = "branches")]
    Branches,
    /// Branches that split a warp.
    #[serde(rename = "divergent branches")]
    DivergentBranches,
    /// Block-wide barriers completed (`__syncthreads`; `__syncwarp` is not one).
    #[serde(rename = "barriers")]
    Barriers,
    /// Warp-level shared-memory loads and stores.
    #[serde(rename = "shared accesses")]
    SharedAccesses,
    /// Extra shared-memory wavefronts from bank conflicts (loads and stores).
    #[serde(rename = "bank conflicts")]
    BankConflicts,
    /// Warp-level global loads and stores.
    #[serde(rename = "global requests")]
    GlobalRequests,
    /// 32-byte sectors per global request (4 is coalesced 4-byte access): a ratio of two counts.
    #[serde(rename = "sectors per request")]
    SectorsPerRequest,
    /// Thread-level atomics on global memory.
    #[serde(rename = "global atomics")]
    GlobalAtomics,
    /// Thread-level atomics on shared memory.
    #[serde(rename = "shared atomics")]
    SharedAtomics,
    /// Extra turns of shared atomics: lanes of a warp whose words share a bank.
    #[serde(rename = "shared atomic conflicts")]
    SharedAtomicConflicts,
    /// Warp-level loads marked `.relaxed`, `.acquire` or `.volatile`: reads of what other blocks
    /// publish (a look-back's status words).
    #[serde(rename = "strong loads")]
    StrongLoads,
    /// Blocks launched.
    #[serde(rename = "blocks")]
    Blocks,
    /// Kernel launches.
    #[serde(rename = "launches")]
    Launches,
    /// Warp instructions of each launch's longest block, summed over the launches: the step's span
    /// were every block of a launch to run at once.
    #[serde(rename = "longest block")]
    LongestBlock,
    /// Warp instructions of each launch's busiest warp, summed over the launches: the longest
    /// chain of instructions issued in order, which no block finishes sooner than.
    #[serde(rename = "longest warp")]
    LongestWarp,
    /// Of a step on several simulated devices: the latest end of a copy between them on the
    /// simulator's model (one tick per byte on the stream it is queued on, links never shared), the
    /// bytes of the longest chain of copies that wait for each other.
    #[serde(rename = "copy span")]
    CopySpan,
    /// Of a step on several simulated devices: the bytes copied into the device that receives the
    /// most from the others.
    #[serde(rename = "bytes into the busiest device")]
    BusiestDeviceBytes,
}

impl Counter {
    /// Every counter, in the order tables list them.
    pub const ALL: [Counter; 18] = [
        Counter::WarpInstructions,
        Counter::Branches,
        Counter::DivergentBranches,
        Counter::Barriers,
        Counter::SharedAccesses,
        Counter::BankConflicts,
        Counter::GlobalRequests,
        Counter::SectorsPerRequest,
        Counter::GlobalAtomics,
        Counter::SharedAtomics,
        Counter::SharedAtomicConflicts,
        Counter::StrongLoads,
        Counter::Blocks,
        Counter::Launches,
        Counter::LongestBlock,
        Counter::LongestWarp,
        Counter::CopySpan,
        Counter::BusiestDeviceBytes,
    ];

    /// Its name in `course.toml` and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Counter::WarpInstructions => "warp instructions",
            Counter::Branches => "branches",
            Counter::DivergentBranches => "divergent branches",
            Counter::Barriers => "barriers",
            Counter::SharedAccesses => "shared accesses",
            Counter::BankConflicts => "bank conflicts",
            Counter::GlobalRequests => "global requests",
            Counter::SectorsPerRequest => "sectors per request",
            Counter::GlobalAtomics => "global atomics",
            Counter::SharedAtomics => "shared atomics",
            Counter::SharedAtomicConflicts => "shared atomic conflicts",
            Counter::StrongLoads => "strong loads",
            Counter::Blocks => "blocks",
            Counter::Launches => "launches",
            Counter::LongestBlock => "longest block",
            Counter::LongestWarp => "longest warp",
            Counter::CopySpan => "copy span",
            Counter::BusiestDeviceBytes => "bytes into the busiest device",
        }
    }

    /// Whether it is a ratio of two counts already (and so takes no `per`).
    pub fn is_ratio(self) -> bool {
        self == Counter::SectorsPerRequest
    }

    /// Its value over a whole run of a step: the counters of its launches added up.
    pub fn total(self, run: &RunCounters) -> f64 {
        let c = &run.counters;
        let count = match self {
            Counter::WarpInstructions => c.warp_instructions,
            Counter::Branches => c.branches,
            Counter::DivergentBranches => c.divergent_branches,
            Counter::Barriers => c.barriers,
            Counter::SharedAccesses => c.shared_accesses,
            Counter::BankConflicts => c.shared_bank_conflicts,
            Counter::GlobalRequests => c.global_requests,
            Counter::SectorsPerRequest => return c.sectors_per_request(),
            Counter::GlobalAtomics => c.global_atomics,
            Counter::SharedAtomics => c.shared_atomics,
            Counter::SharedAtomicConflicts => c.shared_atomic_conflicts,
            Counter::StrongLoads => c.strong_loads,
            Counter::Blocks => c.blocks,
            Counter::Launches => run.launches,
            Counter::LongestBlock => c.longest_block,
            Counter::LongestWarp => c.longest_warp,
            Counter::CopySpan => run.transfers.iter().map(|t| t.finished_at).max().unwrap_or(0),
            Counter::BusiestDeviceBytes => run.transfers.iter().map(|t| t.bytes_received).max().unwrap_or(0),
        };
        count as f64
    }
}

/// What a counter is divided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Per {
    /// The elements of the input (a matrix: rows times columns).
    #[serde(rename = "element")]
    Element,
    /// The blocks the step launched.
    #[serde(rename = "block")]
    Block,
    /// The step's launches.
    #[serde(rename = "launch")]
    Launch,
    /// One run of the step (everything it queues for one result).
    #[serde(rename = "run")]
    Run,
}

impl Per {
    pub fn name(self) -> &'static str {
        match self {
            Per::Element => "element",
            Per::Block => "block",
            Per::Launch => "launch",
            Per::Run => "run",
        }
    }
}

/// One counter a step's technique improves, and what a count above the reference says.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Improvement {
    pub counter: Counter,
    /// What it is divided by; none for a ratio (`sectors per request`).
    pub per: Option<Per>,
    /// Only the launches of this kernel count (the one that holds the technique, in a step that
    /// launches several); by default, every launch of the step.
    pub kernel: Option<String>,
    /// Why a count above the reference's happens, in a student's terms ("the active threads are
    /// not contiguous").
    pub why: String,
}

impl Improvement {
    /// `divergent branches per block`, `sectors per request`, `global atomics per element in
    /// compact_scatter_flagged_masked_f32`: its name in tables and results.
    pub fn label(&self) -> String {
        let name = match self.per {
            Some(per) => format!("{} per {}", self.counter.name(), per.name()),
            None => self.counter.name().to_string(),
        };
        match &self.kernel {
            Some(kernel) => format!("{name} in {kernel}"),
            None => name,
        }
    }

    /// A ratio takes no `per`; every other counter needs one; `why` says something.
    pub fn validate(&self) -> Result<(), String> {
        match (self.counter.is_ratio(), self.per) {
            (true, Some(_)) => return Err(format!("`{}` is a ratio already: no `per`", self.counter.name())),
            (false, None) => {
                return Err(format!("`{}` needs `per` (element, block, launch or run)", self.counter.name()));
            }
            _ => {}
        }
        if self.why.trim().is_empty() {
            return Err(format!("`{}` needs a `why`", self.label()));
        }
        Ok(())
    }

    /// Its value over the launches of one run of a step on `elements` elements (those of its
    /// kernel, if it names one), and over the copies between devices of a step on several
    /// (`transfers`, one per device; none for a step on one).
    pub fn value_of(&self, elements: u64, launches: &[(String, LaunchCounters)], transfers: &[Transfers]) -> f64 {
        let counted: Vec<(String, LaunchCounters)> =
            launches.iter().filter(|(name, _)| self.kernel.as_ref().is_none_or(|k| k == name)).cloned().collect();
        self.value(&RunCounters { transfers: transfers.to_vec(), ..RunCounters::of(elements, &counted) })
    }

    /// Its value over one run of a step.
    pub fn value(&self, run: &RunCounters) -> f64 {
        let total = self.counter.total(run);
        let per = match self.per {
            None | Some(Per::Run) => 1,
            Some(Per::Element) => run.elements,
            Some(Per::Block) => run.counters.blocks,
            Some(Per::Launch) => run.launches,
        };
        if per == 0 { total } else { total / per as f64 }
    }
}

/// What the simulator counted over one run of a step: its launches' counters added up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunCounters {
    /// The elements of the input it ran on.
    pub elements: u64,
    pub launches: u64,
    pub counters: LaunchCounters,
    /// A step on several simulated devices: each device's copies to and from the others, counted
    /// from a fresh world (so their model's clocks start at 0).
    pub transfers: Vec<Transfers>,
}

impl RunCounters {
    /// The counters of `launches` (as the device recorded them) over an input of `elements`.
    pub fn of(elements: u64, launches: &[(String, LaunchCounters)]) -> RunCounters {
        let mut counters = LaunchCounters::default();
        for (_, launch) in launches {
            counters.add(launch);
        }
        RunCounters { elements, launches: launches.len() as u64, counters, transfers: Vec::new() }
    }
}

/// The counts of one step at one case, by improvement label: what a counting run reports (the
/// student's build writes them as JSON for the grader).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct StepCounts {
    #[serde(rename = "crate")]
    pub crate_name: String,
    pub step: String,
    pub case: String,
    pub counts: BTreeMap<String, f64>,
}

impl StepCounts {
    /// The counts of the improvements of `step` over the `launches` (and, on several devices, the
    /// `transfers`) of one run on `elements` elements at `case`.
    pub fn of(
        step: &GradedStep,
        case: &str,
        elements: u64,
        launches: &[(String, LaunchCounters)],
        transfers: &[Transfers],
    ) -> StepCounts {
        StepCounts {
            crate_name: step.crate_name.to_string(),
            step: step.name.to_string(),
            case: case.to_string(),
            counts: step.improves.iter().map(|i| (i.label(), i.value_of(elements, launches, transfers))).collect(),
        }
    }
}

/// The score of one count against the reference's: 1 at or under [`FULL_MARKS_AT`] times it, 0 at
/// or over [`NO_MARKS_AT`] times it (and above a reference of 0), linear between.
pub fn count_score(student: f64, reference: f64) -> f64 {
    // Counts are exact; the epsilon only absorbs the rounding of a division.
    let tolerance = 1e-9 * reference.abs().max(1.0);
    if student <= reference * FULL_MARKS_AT + tolerance {
        return 1.0;
    }
    if reference <= 0.0 {
        return 0.0;
    }
    let ratio = student / reference;
    ((NO_MARKS_AT - ratio) / (NO_MARKS_AT - FULL_MARKS_AT)).clamp(0.0, 1.0)
}

/// One counter of a step, the student's count beside the reference's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterScore {
    /// `divergent branches per block`.
    pub counter: String,
    pub student: f64,
    pub reference: f64,
    pub score: f64,
    /// Why a count above the reference's happens (from `course.toml`).
    #[serde(skip)]
    pub why: String,
}

/// A graded step's counters and score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepScore {
    pub step: String,
    pub case: String,
    pub counters: Vec<CounterScore>,
    /// Where the book teaches it: `"Second move: sequential addressing" in Step 2:
    /// reduce-interleaved`.
    #[serde(skip)]
    pub see: String,
}

impl StepScore {
    /// Its worst counter's score: a technique half applied is not applied.
    pub fn score(&self) -> f64 {
        self.counters.iter().map(|c| c.score).fold(1.0, f64::min)
    }

    /// What a student can act on, one line per counter that lost marks: `interleaved: 48 divergent
    /// branches per block, the reference has 6: the active threads are not contiguous (see ...)`.
    pub fn advice(&self) -> Vec<String> {
        self.counters
            .iter()
            .filter(|c| c.score < 1.0)
            .map(|c| {
                format!(
                    "{}: {} {}, the reference has {}: {} (see {})",
                    self.step,
                    number(c.student),
                    c.counter,
                    number(c.reference),
                    c.why,
                    self.see
                )
            })
            .collect()
    }
}

/// A crate's optimisation, as the grader found it.
#[derive(Debug, Clone, PartialEq)]
pub enum Optimisation {
    /// Its graded steps, counted for the student and the reference.
    Scored(Vec<StepScore>),
    /// Not counted, and why (a graded test fails; no reference solution to count).
    NotScored(String),
}

impl Optimisation {
    /// [`OPTIMISATION_POINTS`] times the mean of the steps' scores; none when not scored.
    pub fn points(&self) -> f64 {
        match self {
            Optimisation::Scored(steps) if !steps.is_empty() => {
                OPTIMISATION_POINTS * steps.iter().map(StepScore::score).sum::<f64>() / steps.len() as f64
            }
            _ => 0.0,
        }
    }

    /// Whether every graded step got full marks.
    pub fn full(&self) -> bool {
        matches!(self, Optimisation::Scored(steps) if steps.iter().all(|s| s.score() >= 1.0))
    }
}

/// Scores the student's counts of `crate_name`'s graded steps against the reference's, step by step
/// in registry order. Every graded step must have been counted on both sides, at the same case.
pub fn score(
    course: &crate::Course,
    crate_name: &str,
    student: &[StepCounts],
    reference: &[StepCounts],
) -> Result<Vec<StepScore>, String> {
    let mut scores = Vec::new();
    for step in graded_steps(course, crate_name) {
        let name = step.name;
        let find = |counts: &[StepCounts], who: &str| {
            counts
                .iter()
                .find(|c| c.crate_name == crate_name && c.step == name)
                .cloned()
                .ok_or_else(|| format!("{crate_name}/{name}: the {who}'s run did not count it"))
        };
        let (mine, theirs) = (find(student, "student")?, find(reference, "reference")?);
        if mine.case != theirs.case {
            return Err(format!("{crate_name}/{name}: counted at {} and at {}", mine.case, theirs.case));
        }
        let mut counters = Vec::new();
        for improvement in step.improves {
            let label = improvement.label();
            let value = |c: &StepCounts, who: &str| {
                c.counts
                    .get(&label)
                    .copied()
                    .ok_or_else(|| format!("{crate_name}/{name}: no {label} in the {who}'s run"))
            };
            let (s, r) = (value(&mine, "student")?, value(&theirs, "reference")?);
            counters.push(CounterScore {
                counter: label,
                student: s,
                reference: r,
                score: count_score(s, r),
                why: improvement.why.clone(),
            });
        }
        scores.push(StepScore { step: name.to_string(), case: mine.case, counters, see: step.see() });
    }
    Ok(scores)
}

/// A step that earns optimisation points: its `improves`, and how it is counted.
#[derive(Debug, Clone)]
pub struct GradedStep<'a> {
    pub crate_name: &'a str,
    pub name: &'a str,
    pub improves: &'a [Improvement],
    pub counted: Counted<'a>,
}

/// How a graded step is counted.
#[derive(Debug, Clone)]
pub enum Counted<'a> {
    /// A step of the tour, run on one simulated device.
    OnOneDevice(crate::StepRef<'a>),
    /// A step of several GPUs, run on a world of simulated devices by its crate.
    OnAWorld { chapter: &'a crate::Chapter, step: &'a crate::WorldStep },
}

impl GradedStep<'_> {
    /// The case it is counted at (see [`crate::StepRef::count_case`]; a world step names its own).
    pub fn count_case(&self) -> Case {
        match &self.counted {
            Counted::OnOneDevice(step) => step.count_case(),
            Counted::OnAWorld { step, .. } => step.count_case.clone(),
        }
    }

    /// The section of its chapter that teaches it, if named.
    pub fn section(&self) -> Option<&str> {
        match &self.counted {
            Counted::OnOneDevice(step) => step.step.section.as_deref(),
            Counted::OnAWorld { step, .. } => step.section.as_deref(),
        }
    }

    /// Its chapter.
    pub fn chapter(&self) -> Option<&crate::Chapter> {
        match &self.counted {
            Counted::OnOneDevice(step) => step.chapter(),
            Counted::OnAWorld { chapter, .. } => Some(chapter),
        }
    }

    /// Where the book teaches it: its section of its chapter, or the chapter.
    fn see(&self) -> String {
        let chapter = self.chapter().map_or(self.crate_name.to_string(), |c| c.title.clone());
        match self.section() {
            Some(section) => format!("\"{section}\" in {chapter}"),
            None => chapter,
        }
    }
}

/// Every step of the course that earns optimisation points (those with `improves`), in teaching
/// order: each chapter's steps, then its world steps.
pub fn all_graded_steps(course: &crate::Course) -> Vec<GradedStep<'_>> {
    let mut graded = Vec::new();
    for family in &course.families {
        for chapter in &family.chapters {
            for step in family.steps().filter(|s| s.peer.is_none() && s.crate_name == chapter.crate_name) {
                if !step.step.improves.is_empty() {
                    let (name, improves) = (step.step.name.as_str(), step.step.improves.as_slice());
                    let counted = Counted::OnOneDevice(step);
                    graded.push(GradedStep { crate_name: &chapter.crate_name, name, improves, counted });
                }
            }
            for step in &chapter.world_steps {
                graded.push(GradedStep {
                    crate_name: &chapter.crate_name,
                    name: &step.name,
                    improves: &step.improves,
                    counted: Counted::OnAWorld { chapter, step },
                });
            }
        }
    }
    graded
}

/// The steps of `crate_name` that earn optimisation points, in order.
pub fn graded_steps<'a>(course: &'a crate::Course, crate_name: &str) -> Vec<GradedStep<'a>> {
    all_graded_steps(course).into_iter().filter(|s| s.crate_name == crate_name).collect()
}

/// The markdown table of every graded step: its crate, its name, the case it is counted at, each
/// counter its technique improves and why a count above the reference's happens. The instructors'
/// page shows it (a test checks that it matches this registry).
pub fn counters_table(course: &crate::Course) -> String {
    let mut out = String::from("| crate | step | counted at | counter | a count above the reference's says |\n");
    out += "|---|---|---|---|---|\n";
    for step in all_graded_steps(course) {
        for (i, improvement) in step.improves.iter().enumerate() {
            let (crate_name, name, case) = if i == 0 {
                let case = match &step.counted {
                    Counted::OnOneDevice(_) => step.count_case().label,
                    Counted::OnAWorld { step: world, .. } => {
                        format!("{} on {} devices", world.count_case.label, world.devices)
                    }
                };
                (format!("`{}`", step.crate_name), step.name.to_string(), case)
            } else {
                Default::default()
            };
            let counter = match &improvement.kernel {
                Some(kernel) => {
                    format!("{} (`{kernel}` only)", improvement.label().replace(&format!(" in {kernel}"), ""))
                }
                None => improvement.label(),
            };
            out += &format!("| {crate_name} | {name} | {case} | {counter} | {} |\n", improvement.why);
        }
    }
    out
}

/// A count for people: whole numbers as such, others to three significant digits.
pub fn number(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        return format!("{}", x.round() as i64);
    }
    let digits = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else if x.abs() >= 1.0 {
        2
    } else {
        3.max((-x.abs().log10()).ceil() as usize + 2).min(6)
    };
    format!("{x:.digits$}")
}

impl fmt::Display for Improvement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_full_under_the_slack_and_none_at_twice() {
        assert_eq!(count_score(6.0, 6.0), 1.0);
        assert_eq!(count_score(6.6, 6.0), 1.0);
        assert_eq!(count_score(5.0, 6.0), 1.0, "better than the reference");
        assert_eq!(count_score(12.0, 6.0), 0.0);
        assert_eq!(count_score(48.0, 6.0), 0.0);
        assert!((count_score(9.3, 6.0) - 0.5).abs() < 1e-9, "{}", count_score(9.3, 6.0));
        assert_eq!(count_score(0.0, 0.0), 1.0);
        assert_eq!(count_score(0.001, 0.0), 0.0, "any count over a reference of none");
        // The rounding of a division is not a count above the reference.
        assert_eq!(count_score(1.0 / 3.0 * 1.1 + 1e-12, 1.0 / 3.0), 1.0);
    }

    #[test]
    fn improvements_name_their_counter_and_divisor() {
        let divergence = Improvement {
            counter: Counter::DivergentBranches,
            per: Some(Per::Block),
            kernel: None,
            why: "the active threads are not contiguous".into(),
        };
        assert_eq!(divergence.label(), "divergent branches per block");
        assert!(divergence.validate().is_ok());
        let sectors =
            Improvement { counter: Counter::SectorsPerRequest, per: None, kernel: None, why: "strided".into() };
        assert_eq!(sectors.label(), "sectors per request");
        let scatter = Improvement { kernel: Some("scatter".into()), ..sectors.clone() };
        assert_eq!(scatter.label(), "sectors per request in scatter");
        assert!(sectors.validate().is_ok());
        assert!(Improvement { per: Some(Per::Element), ..sectors.clone() }.validate().unwrap_err().contains("ratio"));
        assert!(Improvement { per: None, ..divergence.clone() }.validate().unwrap_err().contains("needs `per`"));
        assert!(Improvement { why: " ".into(), ..divergence }.validate().is_err());
        for counter in Counter::ALL {
            let text = format!("\"{}\"", counter.name());
            assert_eq!(serde_json::from_str::<Counter>(&text).unwrap(), counter, "{text}");
        }
    }

    #[test]
    fn values_are_divided_as_asked() {
        let counters = LaunchCounters {
            divergent_branches: 1536,
            blocks: 256,
            global_requests: 10,
            global_sectors: 45,
            shared_atomic_conflicts: 64,
            longest_block: 900,
            ..Default::default()
        };
        let run = RunCounters { elements: 1 << 16, launches: 2, counters, transfers: Vec::new() };
        let value = |counter, per| Improvement { counter, per, kernel: None, why: "x".into() }.value(&run);
        assert_eq!(value(Counter::DivergentBranches, Some(Per::Block)), 6.0);
        assert_eq!(value(Counter::SectorsPerRequest, None), 4.5);
        assert_eq!(value(Counter::SharedAtomicConflicts, Some(Per::Element)), 64.0 / 65536.0);
        assert_eq!(value(Counter::Launches, Some(Per::Run)), 2.0);
        assert_eq!(value(Counter::LongestBlock, Some(Per::Launch)), 450.0);
        // Only the named kernel's launches count.
        let first = LaunchCounters { global_atomics: 3, blocks: 1, ..Default::default() };
        let second = LaunchCounters { global_atomics: 5, ..first.clone() };
        let launches = [("a".to_string(), first), ("b".to_string(), second)];
        let atomics = |kernel: Option<&str>| {
            Improvement {
                counter: Counter::GlobalAtomics,
                per: Some(Per::Run),
                kernel: kernel.map(str::to_string),
                why: "x".into(),
            }
            .value_of(100, &launches, &[])
        };
        assert_eq!((atomics(None), atomics(Some("b")), atomics(Some("c"))), (8.0, 5.0, 0.0));
        // A step on several devices: its longest chain of copies and its busiest receiver.
        let transfers = [
            Transfers { copies_sent: 2, bytes_sent: 400, bytes_received: 100, finished_at: 300 },
            Transfers { copies_sent: 1, bytes_sent: 100, bytes_received: 400, finished_at: 500 },
        ];
        let world = |counter| {
            Improvement { counter, per: Some(Per::Element), kernel: None, why: "x".into() }
                .value_of(100, &launches, &transfers)
        };
        assert_eq!((world(Counter::CopySpan), world(Counter::BusiestDeviceBytes)), (5.0, 4.0));
    }

    #[test]
    fn a_step_scores_its_worst_counter_and_says_why() {
        let step = StepScore {
            step: "interleaved".into(),
            case: "2^16".into(),
            counters: vec![
                CounterScore {
                    counter: "divergent branches per block".into(),
                    student: 48.0,
                    reference: 6.0,
                    score: count_score(48.0, 6.0),
                    why: "the active threads are not contiguous".into(),
                },
                CounterScore {
                    counter: "bank conflicts per block".into(),
                    student: 0.0,
                    reference: 0.0,
                    score: 1.0,
                    why: "unused".into(),
                },
            ],
            see: "\"Second move: sequential addressing\" in Step 2: reduce-interleaved".into(),
        };
        assert_eq!(step.score(), 0.0);
        assert_eq!(
            step.advice(),
            ["interleaved: 48 divergent branches per block, the reference has 6: the active threads are not \
              contiguous (see \"Second move: sequential addressing\" in Step 2: reduce-interleaved)"]
        );
        let full = StepScore { step: "strided-index".into(), counters: vec![step.counters[1].clone()], ..step.clone() };
        assert_eq!(Optimisation::Scored(vec![full.clone(), step.clone()]).points(), 2.5);
        assert!(Optimisation::Scored(vec![full]).full());
        assert_eq!(Optimisation::NotScored("a graded test fails".into()).points(), 0.0);
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(48.0), "48");
        assert_eq!(number(3.75), "3.75");
        assert_eq!(number(18.25), "18.2");
        assert_eq!(number(0.0039), "0.00390");
        assert_eq!(number(1234.5), "1234");
        assert_eq!(number(0.5), "0.500");
    }
}
