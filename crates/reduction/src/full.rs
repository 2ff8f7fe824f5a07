//! Full reductions, finished on the device: the operations and element types they support, and the
//! trait their launchers implement (reduce-multi-level and reduce-atomic).
//!
//! Semantics, the same on the GPU and in the CPU references here:
//! - `Sum` of f32 is compared with an f64 reference within the launcher's own bound
//!   ([`crate::reference::sum_bound`] of [`FullReduction::addition_chain`]).
//!   Sums of i32 and u32 wrap around modulo 2^32, as unsigned arithmetic does in C (and as the
//!   hardware's integer adds do); they are compared exactly with a wrapping reference.
//! - `Min` and `Max`: for f32, NaN wins (a NaN anywhere gives NaN). Exact.
//! - `mean` = sum / n as f64. For i32 and u32 the sum is accumulated in 64 bits (exact for any
//!   n < 2^32), so the mean does not wrap; for f32 it is the f32 sum divided by n.
//! - The min, max or mean of an empty input is a [`GpuError::BadInput`]; its sum is 0.

use std::fmt::Debug;

use gpu_harness::{Device, DeviceBuffer, DeviceView, Element, GpuError, Result};
use rand::RngExt;
use rand::rngs::SmallRng;

/// The 32-bit word tests fill scratch buffers with before a launch: a NaN as f32, and an unlikely
/// value as an integer, so a partial result a kernel forgot to write shows in the result.
pub const POISON_WORD: u32 = 0xffc0_0001;

/// What a full reduction computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Min,
    Max,
}

impl ReduceOp {
    pub const ALL: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];

    /// The name used in kernel names: `sum`, `min`, `max`.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }

    /// Rejects an empty input where the operation has no answer (min and max).
    pub fn check_not_empty(self, n: usize) -> Result<()> {
        if n == 0 && self != ReduceOp::Sum {
            return Err(GpuError::BadInput(format!(
                "the {} of an empty input is undefined",
                self.name()
            )));
        }
        Ok(())
    }
}

/// The element types of the full reductions: f32, i32 and u32.
pub trait ReduceElement: Element + PartialEq + Debug {
    /// Kernel-name suffix: `f32`, `i32`, `u32`.
    const SUFFIX: &'static str;
    /// Whether sums of this type round (f32) rather than wrap (integers): rounded sums are checked
    /// within a tolerance, wrapped ones exactly.
    const ROUNDS: bool;
    /// What the mean is accumulated in: 64-bit integers for i32 and u32, f32 for f32.
    type Wide: Element + Debug;
    /// Suffix of the kernel that sums 32-bit elements into [`Self::Wide`] (`wide_sum_i32`), or
    /// `sum_f32` for f32.
    const WIDE_SUM: &'static str;
    /// Suffix of the kernel that sums [`Self::Wide`] values (`sum_i64`, `sum_u64`, `sum_f32`).
    const WIDE_LATER: &'static str;

    /// The identity of `op` (0, the type's highest value for min, its lowest for max).
    fn identity(op: ReduceOp) -> Self;
    /// `op` on the CPU with the kernels' rules (wrapping integer sums, NaN-wins min and max).
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
    /// The 32-bit word a buffer of this type is filled with to hold `identity(op)`.
    fn identity_word(op: ReduceOp) -> u32;
    /// A wide sum as f64.
    fn wide_to_f64(sum: Self::Wide) -> f64;
    /// The value as f64.
    fn to_f64(self) -> f64;
    /// `n` random values: uniform in [-1, 1) for f32, the full range for integers.
    fn random(rng: &mut SmallRng, n: usize) -> Vec<Self>;
}

impl ReduceElement for f32 {
    const SUFFIX: &'static str = "f32";
    const ROUNDS: bool = true;
    type Wide = f32;
    const WIDE_SUM: &'static str = "sum_f32";
    const WIDE_LATER: &'static str = "sum_f32";

    fn identity(op: ReduceOp) -> Self {
        match op {
            ReduceOp::Sum => 0.0,
            ReduceOp::Min => f32::INFINITY,
            ReduceOp::Max => f32::NEG_INFINITY,
        }
    }
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
        match op {
            ReduceOp::Sum => a + b,
            ReduceOp::Min => {
                if a < b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
            ReduceOp::Max => {
                if a > b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
        }
    }
    fn identity_word(op: ReduceOp) -> u32 {
        Self::identity(op).to_bits()
    }
    fn wide_to_f64(sum: f32) -> f64 {
        f64::from(sum)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn random(rng: &mut SmallRng, n: usize) -> Vec<Self> {
        (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
    }
}

macro_rules! integer_element {
    ($t:ty, $suffix:literal, $wide:ty, $wide_later:literal) => {
        impl ReduceElement for $t {
            const SUFFIX: &'static str = $suffix;
            const ROUNDS: bool = false;
            type Wide = $wide;
            const WIDE_SUM: &'static str = concat!("wide_sum_", $suffix);
            const WIDE_LATER: &'static str = $wide_later;

            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => 0,
                    ReduceOp::Min => <$t>::MAX,
                    ReduceOp::Max => <$t>::MIN,
                }
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Max => a.max(b),
                }
            }
            fn identity_word(op: ReduceOp) -> u32 {
                Self::identity(op) as u32
            }
            fn wide_to_f64(sum: $wide) -> f64 {
                sum as f64
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn random(rng: &mut SmallRng, n: usize) -> Vec<Self> {
                (0..n).map(|_| rng.random::<u32>() as $t).collect()
            }
        }
    };
}
integer_element!(i32, "i32", i64, "sum_i64");
integer_element!(u32, "u32", u64, "sum_u64");

/// A launcher that reduces a whole input of `T` to one value on the device. A launcher provides the
/// queueing and its result buffers; the reading methods (`reduce`, `sum`, `min`, `max`, `mean`)
/// come with the trait, the same for every launcher.
pub trait FullReduction<T: ReduceElement>: Sized + Send + 'static {
    /// Compiles (or fetches from the cache) the kernels; allocates only small fixed buffers.
    fn create(device: &Device) -> Result<Self>;
    /// Grows the scratch buffers to what `n` elements need, so that no timed call allocates.
    fn reserve(&mut self, n: usize) -> Result<()>;
    /// Sizes the scratch buffers for `n` elements and fills every word of them with
    /// [`POISON_WORD`].
    fn poison_scratch(&mut self, n: usize) -> Result<()>;
    /// Queues `op` over `input` (not empty); the result stays on the device, in [`Self::result`].
    fn queue(&mut self, op: ReduceOp, input: DeviceView<'_, T>) -> Result<()>;
    /// Queues the sum of `input` (not empty) accumulated in [`ReduceElement::Wide`], into
    /// [`Self::wide_result`].
    fn queue_wide_sum(&mut self, input: DeviceView<'_, T>) -> Result<()>;
    /// The one-element buffer the last [`Self::queue`] leaves its result in.
    fn result(&self) -> &DeviceBuffer<T>;
    /// The one-element buffer the last [`Self::queue_wide_sum`] leaves its result in.
    fn wide_result(&self) -> &DeviceBuffer<T::Wide>;
    /// The most additions one input goes through in a sum of `n` elements (the longest path of
    /// the launcher's summation tree), which bounds an f32 sum's rounding error
    /// ([`crate::reference::sum_bound`]).
    fn addition_chain(&self, n: usize) -> u64;

    /// `op` over `input`, finished on the device; only the result is read back. The sum of nothing
    /// is 0; the min or max of nothing is an error.
    fn reduce(&mut self, op: ReduceOp, input: DeviceView<'_, T>) -> Result<T> {
        op.check_not_empty(input.len())?;
        if input.is_empty() {
            return Ok(T::identity(op));
        }
        self.queue(op, input)?;
        Ok(self.result().to_host()?[0])
    }

    fn sum(&mut self, input: DeviceView<'_, T>) -> Result<T> {
        self.reduce(ReduceOp::Sum, input)
    }

    fn min(&mut self, input: DeviceView<'_, T>) -> Result<T> {
        self.reduce(ReduceOp::Min, input)
    }

    fn max(&mut self, input: DeviceView<'_, T>) -> Result<T> {
        self.reduce(ReduceOp::Max, input)
    }

    /// The mean, `sum / n`, from a sum accumulated in [`ReduceElement::Wide`] (64 bits for
    /// integers, so it does not wrap). The mean of nothing is an error.
    fn mean(&mut self, input: DeviceView<'_, T>) -> Result<f64> {
        if input.is_empty() {
            return Err(GpuError::BadInput("the mean of an empty input is undefined".into()));
        }
        self.queue_wide_sum(input)?;
        Ok(T::wide_to_f64(self.wide_result().to_host()?[0]) / input.len() as f64)
    }
}

/// The CPU reference of `op` over `values` (f64 for f32 sums is done by the caller).
pub fn reference<T: ReduceElement>(op: ReduceOp, values: &[T]) -> T {
    values.iter().fold(T::identity(op), |a, &b| T::combine(op, a, b))
}
