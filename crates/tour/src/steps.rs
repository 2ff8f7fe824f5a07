//! The tour's steps, in one table: every step of every technique, in ladder order, with the
//! constructor of its launcher. The ladder steps must match `REDUCTION_LADDER` exactly (a test
//! checks it), so the ladder and the tour cannot drift apart.

use gpu_harness::full::{FullReduction, ReduceOp};
use gpu_harness::reduction::{HostFinishedStep, HostFinishedSum};
use gpu_harness::testing::{TestRng, check_sum};
use gpu_harness::{Device, DeviceView, Result};
use reduce_atomic::{Atomic, Finish, LastBlock, SinglePass};
use reduce_multi_level::{MultiLevel, RowSums};

/// How a step's result compared with the CPU's.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// Within the tolerance of the f64 reference.
    Passed,
    /// A result outside the tolerance, with the message (and the seed to replay it).
    Wrong(String),
    /// The step could not run (compile, launch or driver error).
    Error(String),
}

impl Check {
    pub fn passed(&self) -> bool {
        *self == Check::Passed
    }

    /// The short form for a table cell.
    pub fn label(&self) -> &'static str {
        match self {
            Check::Passed => "ok",
            Check::Wrong(_) => "WRONG",
            Check::Error(_) => "ERROR",
        }
    }

    /// The message of a failed check.
    pub fn message(&self) -> Option<&str> {
        match self {
            Check::Passed => None,
            Check::Wrong(m) | Check::Error(m) => Some(m),
        }
    }
}

/// A step's launcher, as the tour drives it: the same calls its bench makes.
pub trait Runner {
    /// Grows the scratch buffers for `n` inputs, so that no timed call allocates.
    fn reserve(&mut self, n: usize) -> Result<()>;

    /// Bytes one call must move at `n`: the number the step's bench divides by its time.
    fn bytes(&self, n: usize) -> Result<u64>;

    /// Queues one call of exactly what the bench times; does not wait for the GPU.
    fn queue(&mut self, input: DeviceView<'_, f32>) -> Result<()>;

    /// Computes the full result of `input` on the device and checks it against `host`, the same
    /// values on the CPU; `what` names the step in a failure's message.
    fn check(&mut self, what: &str, rng: &TestRng, input: DeviceView<'_, f32>, host: &[f32]) -> Check;
}

/// Checks a device sum against the f64 sum of `host`.
fn check_device_sum(rng: &TestRng, what: &str, host: &[f32], got: Result<f32>) -> Check {
    match got {
        Err(e) => Check::Error(e.to_string()),
        Ok(got) => match check_sum(rng, what, host, got, false) {
            Ok(()) => Check::Passed,
            Err(failed) => Check::Wrong(failed.message().unwrap_or("wrong sum").to_string()),
        },
    }
}

/// Steps whose kernel leaves one partial per block: the bench times the kernel alone
/// (`block_partials`); the host's final additions are not timed.
impl<S: HostFinishedStep> Runner for HostFinishedSum<S> {
    fn reserve(&mut self, n: usize) -> Result<()> {
        HostFinishedSum::<S>::reserve(self, n)
    }

    fn bytes(&self, n: usize) -> Result<u64> {
        Ok(self.plan(n)?.bytes_moved())
    }

    fn queue(&mut self, input: DeviceView<'_, f32>) -> Result<()> {
        self.block_partials(input).map(drop)
    }

    fn check(&mut self, what: &str, rng: &TestRng, input: DeviceView<'_, f32>, host: &[f32]) -> Check {
        check_device_sum(rng, what, host, self.sum_device(input))
    }
}

/// Bytes of a reduction finished on the device: the input read once, the result written once.
fn finished_on_device_bytes(n: usize) -> u64 {
    4 * n as u64 + 4
}

/// Any reduction finished on the device, summing f32 (multi-level, atomic, last block).
pub struct OnDevice<L>(L);

impl<L: FullReduction<f32>> Runner for OnDevice<L> {
    fn reserve(&mut self, n: usize) -> Result<()> {
        self.0.reserve(n)
    }

    fn bytes(&self, n: usize) -> Result<u64> {
        Ok(finished_on_device_bytes(n))
    }

    fn queue(&mut self, input: DeviceView<'_, f32>) -> Result<()> {
        self.0.queue(ReduceOp::Sum, input)
    }

    fn check(&mut self, what: &str, rng: &TestRng, input: DeviceView<'_, f32>, host: &[f32]) -> Check {
        check_device_sum(rng, what, host, self.0.sum(input))
    }
}

/// Batched row sums of the input seen as a row-major `ROWS x COLS` matrix.
pub struct Rows<const ROWS: usize, const COLS: usize>(RowSums);

impl<const ROWS: usize, const COLS: usize> Runner for Rows<ROWS, COLS> {
    fn reserve(&mut self, _n: usize) -> Result<()> {
        Ok(()) // RowSums grows its buffers in `check`, which runs before any timed call
    }

    fn bytes(&self, n: usize) -> Result<u64> {
        Ok(4 * (n + ROWS) as u64)
    }

    fn queue(&mut self, input: DeviceView<'_, f32>) -> Result<()> {
        self.0.queue(input, ROWS, COLS)
    }

    fn check(&mut self, what: &str, rng: &TestRng, input: DeviceView<'_, f32>, host: &[f32]) -> Check {
        let sums = match self.0.sum_rows(input, ROWS, COLS) {
            Ok(sums) => sums,
            Err(e) => return Check::Error(e.to_string()),
        };
        for (row, (&got, values)) in sums.iter().zip(host.chunks(COLS)).enumerate() {
            let check = check_device_sum(rng, what, values, Ok(got));
            if let Check::Wrong(message) = check {
                return Check::Wrong(format!("row {row} of {ROWS}: {message}"));
            }
        }
        Check::Passed
    }
}

/// Where a step sits in its technique.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A step of `REDUCTION_LADDER`: runs at every size and is compared with the steps before it.
    Ladder,
    /// Another case its technique's bench measures, at one size only (a fixed matrix shape), so
    /// that the tour's results file holds everything the bench's does. Not on the ladder.
    Extra { n: usize },
}

/// One step of the tour.
pub struct Step {
    /// The technique's crate, e.g. `reduce-naive`.
    pub technique: &'static str,
    /// The step's name in benches and the book, e.g. `naive`.
    pub name: &'static str,
    pub kind: Kind,
    /// Compiles the step's kernels and builds its launcher.
    pub build: fn(&Device) -> Result<Box<dyn Runner>>,
}

impl Step {
    /// Whether the step runs at size `n`.
    pub fn runs_at(&self, n: usize) -> bool {
        match self.kind {
            Kind::Ladder => true,
            Kind::Extra { n: only } => n == only,
        }
    }

    pub fn on_ladder(&self) -> bool {
        self.kind == Kind::Ladder
    }
}

fn boxed<R: Runner + 'static>(runner: Result<R>) -> Result<Box<dyn Runner>> {
    Ok(Box::new(runner?))
}

fn build_host<S: HostFinishedStep>(device: &Device) -> Result<Box<dyn Runner>> {
    boxed(HostFinishedSum::<S>::new(device))
}

fn build_single_pass<F: Finish>(device: &Device) -> Result<Box<dyn Runner>> {
    boxed(SinglePass::<f32, F>::new(device).map(OnDevice))
}

fn build_rows<const ROWS: usize, const COLS: usize>(device: &Device) -> Result<Box<dyn Runner>> {
    boxed(RowSums::new(device).map(Rows::<ROWS, COLS>))
}

/// A ladder step finished by the host, named by its `STEP`.
const fn host<S: HostFinishedStep>(technique: &'static str) -> Step {
    Step { technique, name: S::STEP, kind: Kind::Ladder, build: build_host::<S> }
}

/// A ladder step of reduce-atomic, named by its finish's `STEP`.
const fn single_pass<F: Finish>() -> Step {
    Step { technique: "reduce-atomic", name: F::STEP, kind: Kind::Ladder, build: build_single_pass::<F> }
}

/// A row-sums case of reduce-multi-level over the whole input of `ROWS * COLS` elements.
const fn rows<const ROWS: usize, const COLS: usize>(name: &'static str) -> Step {
    Step {
        technique: "reduce-multi-level",
        name,
        kind: Kind::Extra { n: ROWS * COLS },
        build: build_rows::<ROWS, COLS>,
    }
}

/// Every step, in ladder order (extras right after their technique's ladder steps, as its bench
/// runs them). `reduce_unroll::VolatileRacy` is left out on purpose: it is a racy demonstration.
pub const STEPS: &[Step] = &[
    host::<reduce_naive::Naive>("reduce-naive"),
    host::<reduce_interleaved::StridedIndex>("reduce-interleaved"),
    host::<reduce_interleaved::Interleaved>("reduce-interleaved"),
    host::<reduce_first_add::FirstAdd>("reduce-first-add"),
    host::<reduce_first_add::GridStride>("reduce-first-add"),
    host::<reduce_unroll::UnrollLastWarp>("reduce-unroll"),
    host::<reduce_unroll::CompleteUnroll>("reduce-unroll"),
    host::<reduce_shuffle::Shuffle>("reduce-shuffle"),
    host::<reduce_shuffle::ShuffleVec4>("reduce-shuffle"),
    Step {
        technique: "reduce-multi-level",
        name: "multi-level",
        kind: Kind::Ladder,
        build: |device| boxed(MultiLevel::<f32>::new(device).map(OnDevice)),
    },
    rows::<{ 1 << 20 }, 256>("rows-2^20x256"),
    rows::<16, { 1 << 24 }>("rows-16x2^24"),
    single_pass::<Atomic>(),
    single_pass::<LastBlock>(),
];

/// The techniques, in ladder order, each once.
pub fn techniques() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for step in STEPS {
        if !names.contains(&step.technique) {
            names.push(step.technique);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_harness::report::REDUCTION_LADDER;

    #[test]
    fn ladder_steps_are_the_reduction_ladder_in_order() {
        let ladder: Vec<(&str, &str)> = STEPS.iter().filter(|s| s.on_ladder()).map(|s| (s.technique, s.name)).collect();
        assert_eq!(ladder, REDUCTION_LADDER);
    }

    #[test]
    fn extras_belong_to_ladder_techniques_and_names_are_unique() {
        let ladder_techniques: Vec<&str> = REDUCTION_LADDER.iter().map(|(t, _)| *t).collect();
        for step in STEPS {
            assert!(ladder_techniques.contains(&step.technique), "{}", step.technique);
            let same = STEPS.iter().filter(|s| (s.technique, s.name) == (step.technique, step.name)).count();
            assert_eq!(same, 1, "{}/{} twice", step.technique, step.name);
        }
    }

    #[test]
    fn each_technique_is_contiguous() {
        // Tables are printed per technique as it finishes, so its steps must be next to each other.
        let runs = STEPS.windows(2).filter(|w| w[0].technique != w[1].technique).count() + 1;
        assert_eq!(runs, techniques().len());
        assert_eq!(techniques().first(), Some(&"reduce-naive"));
        assert_eq!(techniques().len(), 7);
    }

    #[test]
    fn extras_run_at_their_size_only() {
        let extras: Vec<&Step> = STEPS.iter().filter(|s| !s.on_ladder()).collect();
        assert_eq!(extras.len(), 2);
        for step in extras {
            assert!(step.runs_at(1 << 28), "{}", step.name);
            assert!(!step.runs_at(1 << 24), "{}", step.name);
        }
        assert!(STEPS[0].runs_at(12345));
    }

    #[test]
    fn racy_step_is_not_in_the_tour() {
        let racy = <reduce_unroll::VolatileRacy as HostFinishedStep>::STEP;
        assert!(STEPS.iter().all(|s| s.name != racy));
    }
}
