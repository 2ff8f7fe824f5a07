//! What the tour and the benches measure: a step of a technique, prepared on one case.
//!
//! A technique crate lists its steps as [`StepEntry`]s (`pub fn steps() -> Vec<StepEntry>`). The
//! course registry (`course.toml`) names the same steps and says at which [`Case`]s they run, what
//! they move and how many bytes that is; the tour (`cargo run --release`) and every crate's bench
//! join the two, so a step is timed, checked and recorded by one path wherever it runs.
//!
//! A step's `prepare` closure takes the case's input (random, from the given seed, shared through
//! [`crate::inputs`]), allocates its scratch and compiles its kernels; the [`Prepared`] it returns
//! then queues exactly what is timed ([`Prepared::queue`]) and checks a result against the CPU
//! ([`Prepared::check`]). A crate's `steps()` maps each registry name to its launcher in one line:
//!
//! ```text
//! StepEntry::new(CRATE, "tiled", |device, case, seed| measure(device, case, seed, Step::Tiled))
//! ```
//!
//! where the crate's `measure` sets its launcher up on the case's input and returns one of the two
//! common shapes: [`Measured`] (queue, then compare the output with the CPU) or [`Stateful`] (for a
//! result kept inside the launcher).

use std::fmt;
use std::sync::Arc;

use crate::{Device, DeviceBuffer, Element, GpuError, Result};

/// One measured case of a family: a size, a matrix shape, and optionally a kind of input.
///
/// Written as text in the registry and in results files: `2^28` (elements), `1000000`,
/// `2^20x256` or `16384x16384` (rows x columns), `32x64x56x56` (an NCHW tensor: batch, channels,
/// height, width), each optionally followed by a word naming the input (`2^30 all-equal`,
/// `2^28 50%`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Case {
    /// The text the case was written as, used as its name in results and tables.
    pub label: String,
    pub shape: Shape,
    /// The kind of input, where the family has several (`uniform`, `all-equal`, `50%`).
    pub variant: Option<String>,
}

/// The size of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A one-dimensional input of `n` elements.
    Elements(u64),
    /// A row-major matrix.
    Matrix { rows: u64, cols: u64 },
    /// A four-dimensional NCHW tensor (batch, channels, height, width; `w` varies fastest). As a
    /// matrix it is its `n * c` planes of `h * w` elements each.
    Tensor4 { n: u64, c: u64, h: u64, w: u64 },
}

impl Case {
    /// Number of elements of the input.
    pub fn n(&self) -> u64 {
        match self.shape {
            Shape::Elements(n) => n,
            Shape::Matrix { rows, cols } => rows.saturating_mul(cols),
            Shape::Tensor4 { .. } => self.rows().saturating_mul(self.cols()),
        }
    }

    /// Rows of a matrix case; a one-dimensional case is one row; an NCHW tensor has a row per
    /// plane, `n * c`.
    pub fn rows(&self) -> u64 {
        match self.shape {
            Shape::Elements(_) => 1,
            Shape::Matrix { rows, .. } => rows,
            Shape::Tensor4 { n, c, .. } => n.saturating_mul(c),
        }
    }

    /// Columns of a matrix case; a one-dimensional case is one row of `n` columns; an NCHW tensor's
    /// rows are its planes of `h * w`.
    pub fn cols(&self) -> u64 {
        match self.shape {
            Shape::Elements(n) => n,
            Shape::Matrix { cols, .. } => cols,
            Shape::Tensor4 { h, w, .. } => h.saturating_mul(w),
        }
    }

    /// The number of elements as `usize`, or an error where it does not fit this machine.
    pub fn elements(&self) -> Result<usize> {
        usize::try_from(self.n()).map_err(|_| {
            GpuError::BadInput(format!("case {}: too many elements for this machine", self.label))
        })
    }

    /// The case with the same shape and kind, but `n` elements (for the simulator's small runs): a
    /// matrix keeps its columns and an NCHW tensor its channels and planes (`c x h x w`), each with
    /// at least one row or batch, so either may keep more than `n`.
    pub fn with_elements(&self, n: u64) -> Case {
        let shape = match self.shape {
            Shape::Elements(_) => Shape::Elements(n),
            Shape::Matrix { cols, .. } => Shape::Matrix { rows: (n / cols.max(1)).max(1), cols },
            Shape::Tensor4 { c, h, w, .. } => {
                let per_batch = c.saturating_mul(h).saturating_mul(w).max(1);
                Shape::Tensor4 { n: (n / per_batch).max(1), c, h, w }
            }
        };
        let mut label = match shape {
            Shape::Elements(n) => count_label(n),
            Shape::Matrix { rows, cols } => format!("{}x{}", count_label(rows), count_label(cols)),
            Shape::Tensor4 { n, c, h, w } => [n, c, h, w].map(count_label).join("x"),
        };
        if let Some(variant) = &self.variant {
            label = format!("{label} {variant}");
        }
        Case { label, shape, variant: self.variant.clone() }
    }
}

/// `2^k` for powers of two of at least 2^10, else the number: how counts are written in labels.
pub fn count_label(n: u64) -> String {
    if n.is_power_of_two() && n >= 1024 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

impl std::str::FromStr for Case {
    type Err = GpuError;

    /// Parses `2^28`, `1000000`, `2^20x256`, `16384x16384`, `32x64x56x56` (N x C x H x W), each
    /// optionally followed by a space and a word naming the input.
    fn from_str(text: &str) -> Result<Case> {
        let label = text.trim().to_string();
        let bad = |why: &str| GpuError::BadInput(format!("case `{label}`: {why}"));
        let mut words = label.split_whitespace();
        let size = words.next().ok_or_else(|| bad("empty"))?;
        let variant = words.next().map(str::to_string);
        if words.next().is_some() {
            return Err(bad("expected a size and at most one word naming the input"));
        }
        let count = |text: &str| -> Result<u64> {
            let value = match text.strip_prefix("2^") {
                Some(exponent) => {
                    let k: u32 = exponent.parse().map_err(|_| bad("2^k needs a whole k"))?;
                    1u64.checked_shl(k).filter(|_| k < 64).ok_or_else(|| bad("2^k needs k < 64"))?
                }
                None => text
                    .replace('_', "")
                    .parse()
                    .map_err(|_| bad("a size is a number, 2^k, or RxC"))?,
            };
            if value == 0 { Err(bad("a size must be at least 1")) } else { Ok(value) }
        };
        let sides: Vec<&str> = size.split('x').collect();
        let shape = match sides[..] {
            [n] => Shape::Elements(count(n)?),
            [rows, cols] => Shape::Matrix { rows: count(rows)?, cols: count(cols)? },
            [n, c, h, w] => {
                Shape::Tensor4 { n: count(n)?, c: count(c)?, h: count(h)?, w: count(w)? }
            }
            _ => {
                return Err(bad(
                    "a size is a number, 2^k, RxC (a matrix) or NxCxHxW (an NCHW tensor)",
                ));
            }
        };
        Ok(Case { label, shape, variant })
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// What a check of a step's result against the CPU found.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    Correct,
    /// A wrong result, with what was expected and what came back (and a seed to replay it).
    Wrong(String),
}

/// A step set up on one case: input uploaded, scratch allocated, kernels compiled.
pub trait Prepared {
    /// Queues one call of exactly what is timed; does not wait for the GPU.
    fn queue(&mut self) -> Result<()>;

    /// Runs the step once more and compares its result with a CPU reference.
    fn check(&mut self) -> Result<Checked>;

    /// Named counts for the registry's bytes formula besides `n`, `rows` and `cols` (for example
    /// `("partials", 1056)`, the block partials a host-finished reduction writes).
    fn counts(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// What a [`Measured`] step queues: its launches, writing the output.
type Run<O> = Box<dyn FnMut(&mut DeviceBuffer<O>) -> Result<()>>;
/// What a [`Measured`] step's check does with the output that came back.
type Compare<O> = Box<dyn Fn(&[O]) -> Checked>;

/// The common shape of a prepared step: `run` queues what is timed, writing `output`; a check
/// fills `output` with the poison, runs once more and hands what came back to `compare`.
pub struct Measured<O: Element> {
    run: Run<O>,
    compare: Compare<O>,
    output: DeviceBuffer<O>,
    poison: Poison<O>,
    counts: Vec<(&'static str, u64)>,
}

/// What a [`Measured`] step's check fills the output with: a 4-byte word on every 4 bytes, or a
/// value in every element.
enum Poison<O> {
    Word(u32),
    Value(O),
}

impl<O: Element> Measured<O> {
    /// A step whose check fills the output with the 4-byte word `poison` (outputs of 4- or 8-byte
    /// elements).
    pub fn new(
        output: DeviceBuffer<O>,
        poison: u32,
        run: impl FnMut(&mut DeviceBuffer<O>) -> Result<()> + 'static,
        compare: impl Fn(&[O]) -> Checked + 'static,
    ) -> Measured<O> {
        let poison = Poison::Word(poison);
        Measured {
            run: Box::new(run),
            compare: Box::new(compare),
            output,
            poison,
            counts: Vec::new(),
        }
    }

    /// The same for outputs of any element size (bf16's 2-byte words among them): a check fills
    /// every element with the value `poison`.
    pub fn with_poison_value(
        output: DeviceBuffer<O>,
        poison: O,
        run: impl FnMut(&mut DeviceBuffer<O>) -> Result<()> + 'static,
        compare: impl Fn(&[O]) -> Checked + 'static,
    ) -> Measured<O> {
        let poison = Poison::Value(poison);
        Measured {
            run: Box::new(run),
            compare: Box::new(compare),
            output,
            poison,
            counts: Vec::new(),
        }
    }

    /// The same, reporting a count for the registry's bytes formula ([`Prepared::counts`]).
    pub fn with_count(mut self, name: &'static str, value: u64) -> Measured<O> {
        self.counts.push((name, value));
        self
    }
}

impl<O: Element> Prepared for Measured<O> {
    fn queue(&mut self) -> Result<()> {
        (self.run)(&mut self.output)
    }

    fn check(&mut self) -> Result<Checked> {
        match self.poison {
            Poison::Word(word) => self.output.fill_words(word)?,
            Poison::Value(value) => self.output.fill(value)?,
        }
        self.queue()?;
        Ok((self.compare)(&self.output.to_host()?))
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        self.counts.clone()
    }
}

/// A prepared step whose result stays in its launcher (a reduction's sum): its `state` (launcher
/// and input), what is timed (`queue`) and the check, which runs it once more and compares.
pub struct Stateful<S> {
    state: S,
    queue: fn(&mut S) -> Result<()>,
    check: fn(&mut S) -> Result<Checked>,
    counts: Vec<(&'static str, u64)>,
}

impl<S> Stateful<S> {
    pub fn new(
        state: S,
        queue: fn(&mut S) -> Result<()>,
        check: fn(&mut S) -> Result<Checked>,
    ) -> Stateful<S> {
        Stateful { state, queue, check, counts: Vec::new() }
    }

    /// The same, reporting a count for the registry's bytes formula ([`Prepared::counts`]).
    pub fn with_count(mut self, name: &'static str, value: u64) -> Stateful<S> {
        self.counts.push((name, value));
        self
    }
}

impl<S> Prepared for Stateful<S> {
    fn queue(&mut self) -> Result<()> {
        (self.queue)(&mut self.state)
    }

    fn check(&mut self) -> Result<Checked> {
        (self.check)(&mut self.state)
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        self.counts.clone()
    }
}

/// Prepares a step on a case: `(device, case, seed of the random input)`.
pub type PrepareFn = Arc<dyn Fn(&Device, &Case, u64) -> Result<Box<dyn Prepared>> + Send + Sync>;

/// A step as a technique crate offers it to the tour and the benches. The registry names it by
/// `(crate_name, step)`; a test checks that the two lists agree, and another that the kernel its
/// launcher runs is the one the registry names for it.
#[derive(Clone)]
pub struct StepEntry {
    /// The crate that implements the step, e.g. `reduce-naive`.
    pub crate_name: &'static str,
    /// The step's name in the registry, the tables and the charts, e.g. `naive`.
    pub step: &'static str,
    pub prepare: PrepareFn,
}

impl StepEntry {
    /// The step `step` of crate `crate_name`, prepared by `prepare`.
    pub fn new<P: Prepared + 'static>(
        crate_name: &'static str,
        step: &'static str,
        prepare: impl Fn(&Device, &Case, u64) -> Result<P> + Send + Sync + 'static,
    ) -> StepEntry {
        let prepare: PrepareFn =
            Arc::new(move |device, case, seed| Ok(Box::new(prepare(device, case, seed)?)));
        StepEntry { crate_name, step, prepare }
    }
}

impl fmt::Debug for StepEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.crate_name, self.step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_parse_sizes_shapes_and_kinds() {
        let case: Case = "2^28".parse().unwrap();
        assert_eq!((case.n(), case.rows(), case.cols(), case.variant), (1 << 28, 1, 1 << 28, None));
        let case: Case = "2^20x256".parse().unwrap();
        assert_eq!((case.n(), case.rows(), case.cols()), (1 << 28, 1 << 20, 256));
        let case: Case = "2^30 all-equal".parse().unwrap();
        assert_eq!((case.n(), case.variant.as_deref()), (1 << 30, Some("all-equal")));
        assert_eq!("1_000_003".parse::<Case>().unwrap().n(), 1_000_003);
        for bad in ["", "2^x", "0", "2^64", "3x", "2^20 a b", "lots"] {
            assert!(bad.parse::<Case>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn smaller_cases_keep_their_shape_and_kind() {
        let case: Case = "2^20x256 skewed".parse().unwrap();
        let small = case.with_elements(1 << 16);
        assert_eq!(
            (small.rows(), small.cols(), small.label.as_str()),
            (256, 256, "256x256 skewed")
        );
        assert_eq!("2^28".parse::<Case>().unwrap().with_elements(1 << 16).label, "2^16");
    }

    #[test]
    fn nchw_tensors_are_planes_of_h_times_w() {
        let case: Case = "32x64x56x56".parse().unwrap();
        assert_eq!(case.shape, Shape::Tensor4 { n: 32, c: 64, h: 56, w: 56 });
        assert_eq!((case.n(), case.rows(), case.cols()), (32 * 64 * 56 * 56, 32 * 64, 56 * 56));
        let case: Case = "2^10x3x7x1 all-equal".parse().unwrap();
        assert_eq!(
            (case.n(), case.rows(), case.cols(), case.variant.as_deref()),
            (1024 * 21, 3072, 7, Some("all-equal"))
        );
        for bad in ["2x3x4", "1x2x3x4x5", "0x3x4x5", "2x3xx5", "2x3x4x5 a b"] {
            assert!(bad.parse::<Case>().is_err(), "{bad:?} parsed");
        }
        // The matrix form is unchanged: `x` twice is a matrix, three times an error.
        assert!(matches!("4x5".parse::<Case>().unwrap().shape, Shape::Matrix { rows: 4, cols: 5 }));
    }

    #[test]
    fn smaller_tensors_keep_their_channels_and_planes() {
        let case: Case = "256x64x56x56 normal".parse().unwrap();
        let small = case.with_elements(1 << 20);
        assert_eq!(small.shape, Shape::Tensor4 { n: 5, c: 64, h: 56, w: 56 });
        assert_eq!(small.label, "5x64x56x56 normal");
        // Fewer elements than one batch: one batch, as a matrix keeps at least one row.
        let one = "64x512x14x14".parse::<Case>().unwrap().with_elements(1 << 14);
        assert_eq!((one.label.as_str(), one.n()), ("1x512x14x14", 512 * 196));
        assert_eq!(
            "2^11x2048x1x1".parse::<Case>().unwrap().with_elements(1 << 12).label,
            "2x2^11x1x1"
        );
    }
}
