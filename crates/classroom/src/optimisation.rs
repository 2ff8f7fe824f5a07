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

use course::{Chapter, Course, Improvement, StepRef, WorldStep};
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
            counts: step
                .improves
                .iter()
                .map(|i| (i.label(), i.value_of(elements, launches, transfers)))
                .collect(),
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
                OPTIMISATION_POINTS * steps.iter().map(StepScore::score).sum::<f64>()
                    / steps.len() as f64
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
    course: &Course,
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
            return Err(format!(
                "{crate_name}/{name}: counted at {} and at {}",
                mine.case, theirs.case
            ));
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
        scores.push(StepScore {
            step: name.to_string(),
            case: mine.case,
            counters,
            see: step.see(),
        });
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
    OnOneDevice(StepRef<'a>),
    /// A step of several GPUs, run on a world of simulated devices by its crate.
    OnAWorld { chapter: &'a Chapter, step: &'a WorldStep },
}

impl GradedStep<'_> {
    /// The case it is counted at (see [`StepRef::count_case`]; a world step names its own).
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
    pub fn chapter(&self) -> Option<&Chapter> {
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
pub fn all_graded_steps(course: &Course) -> Vec<GradedStep<'_>> {
    let mut graded = Vec::new();
    for family in &course.families {
        for chapter in &family.chapters {
            for step in
                family.steps().filter(|s| s.peer.is_none() && s.crate_name == chapter.crate_name)
            {
                if !step.step.improves.is_empty() {
                    let (name, improves) = (step.step.name.as_str(), step.step.improves.as_slice());
                    let counted = Counted::OnOneDevice(step);
                    graded.push(GradedStep {
                        crate_name: &chapter.crate_name,
                        name,
                        improves,
                        counted,
                    });
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
pub fn graded_steps<'a>(course: &'a Course, crate_name: &str) -> Vec<GradedStep<'a>> {
    all_graded_steps(course).into_iter().filter(|s| s.crate_name == crate_name).collect()
}

/// The markdown table of every graded step: its crate, its name, the case it is counted at, each
/// counter its technique improves and why a count above the reference's happens. The instructors'
/// page shows it (a test checks that it matches this registry).
pub fn counters_table(course: &Course) -> String {
    let mut out = String::from(
        "| crate | step | counted at | counter | a count above the reference's says |\n",
    );
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
                    format!(
                        "{} (`{kernel}` only)",
                        improvement.label().replace(&format!(" in {kernel}"), "")
                    )
                }
                None => improvement.label(),
            };
            out +=
                &format!("| {crate_name} | {name} | {case} | {counter} | {} |\n", improvement.why);
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
            ["interleaved: 48 divergent branches per block, the reference has 6: the active \
                 threads are not contiguous (see \"Second move: sequential addressing\" in Step \
                 2: reduce-interleaved)"]
        );
        let full = StepScore {
            step: "strided-index".into(),
            counters: vec![step.counters[1].clone()],
            ..step.clone()
        };
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
