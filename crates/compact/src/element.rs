//! What a compaction keeps: its element types, the tests it can keep by, and the CPU filter every
//! kernel is checked against (exactly: compaction moves values, it never computes one).

use gpu_harness::KernelArg;
use scan::ScanElement;

/// The element types a compaction takes: f32, i32 and u32 (each a 4-byte value the kernels move
/// unchanged).
pub trait CompactElement: ScanElement + PartialOrd + Into<KernelArg> {
    /// Whether the value is a NaN (never, for integers).
    fn is_nan_value(self) -> bool {
        false
    }
}

impl CompactElement for f32 {
    fn is_nan_value(self) -> bool {
        self.is_nan()
    }
}
impl CompactElement for i32 {}
impl CompactElement for u32 {}

// ANCHOR: predicate
/// A test an element is kept by. Comparisons follow IEEE 754, as on the device: a NaN is neither
/// greater nor less than anything and not equal to anything (so `NotEqual` keeps it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Predicate<T> {
    /// `x > threshold`
    Greater(T),
    /// `x < threshold`
    Less(T),
    /// `x != threshold`
    NotEqual(T),
    /// `x == x`: drops NaNs (keeps every integer)
    NotNan,
}
// ANCHOR_END: predicate

impl<T: CompactElement> Predicate<T> {
    /// Whether `x` is kept (the CPU's form of the device's `passes`).
    pub fn keeps(self, x: T) -> bool {
        match self {
            Predicate::Greater(t) => x > t,
            Predicate::Less(t) => x < t,
            Predicate::NotEqual(t) => x != t,
            Predicate::NotNan => !x.is_nan_value(),
        }
    }

    /// The test's code (`KEEP_GREATER` ... in `cuda/compact.cu`) and its threshold (any value for
    /// `NotNan`, which has none).
    pub fn code_and_threshold(self) -> (i32, T) {
        match self {
            Predicate::Greater(t) => (0, t),
            Predicate::Less(t) => (1, t),
            Predicate::NotEqual(t) => (2, t),
            Predicate::NotNan => (3, T::from_small(0)),
        }
    }
}

/// What a compaction keeps: the elements whose mask byte is nonzero, or those that pass a test.
#[derive(Debug, Clone, Copy)]
pub enum Keep<'a, T> {
    Mask(&'a [u8]),
    Test(Predicate<T>),
}

/// The CPU's compaction: the kept elements in order.
pub fn cpu_compact<T: CompactElement>(input: &[T], keep: Keep<'_, T>) -> Vec<T> {
    match keep {
        Keep::Mask(mask) => {
            input.iter().zip(mask).filter(|(_, m)| **m != 0).map(|(&x, _)| x).collect()
        }
        Keep::Test(predicate) => input.iter().copied().filter(|&x| predicate.keeps(x)).collect(),
    }
}

/// Where `got` differs from the CPU's compaction `want` (for f32 the same bits, so -0.0 and 0.0 are
/// told apart; a NaN matches any NaN), or `None`.
pub fn compact_mismatch<T: CompactElement>(want: &[T], got: &[T]) -> Option<String> {
    if want.len() != got.len() {
        return Some(format!("kept {} elements, expected {}", got.len(), want.len()));
    }
    let i = want.iter().zip(got).position(|(w, g)| !w.same(*g))?;
    Some(format!("kept element {i} of {} is {:?}, expected {:?}", want.len(), got[i], want[i]))
}
