//! What a scan scans: its element types and its two kinds, and the CPU scans every kernel is
//! checked against.

use std::fmt::Debug;

use gpu_harness::Element;
use rand::RngExt;
use rand::rngs::SmallRng;

/// Inclusive (`out[i] = x[0] + ... + x[i]`) or exclusive (`out[i] = x[0] + ... + x[i-1]`, `out[0] =
/// 0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanKind {
    Inclusive,
    Exclusive,
}

impl ScanKind {
    pub const BOTH: [ScanKind; 2] = [ScanKind::Inclusive, ScanKind::Exclusive];

    /// The word in kernel names: `inclusive` or `exclusive`.
    pub fn name(self) -> &'static str {
        match self {
            ScanKind::Inclusive => "inclusive",
            ScanKind::Exclusive => "exclusive",
        }
    }
}

/// The element types the scans support: f32, i32 and u32. Integer sums wrap around modulo 2^32 (as
/// the hardware's adds do), and are compared exactly; f32 sums round, and are compared within
/// [`crate::reference::scan_tolerance`].
pub trait ScanElement: Element + PartialEq + Debug {
    /// Kernel-name suffix: `f32`, `i32`, `u32`.
    const SUFFIX: &'static str;
    /// Whether sums of this type are exact (integers, wrapping) rather than rounded (f32).
    const EXACT: bool;

    /// `self + other` as the kernels compute it (wrapping for integers).
    fn add(self, other: Self) -> Self;
    /// The value as f64.
    fn to_f64(self) -> f64;
    /// One random value: uniform in [-1, 1) for f32, every bit pattern for integers.
    fn draw(rng: &mut SmallRng) -> Self;
    /// `n` random values, each from [`ScanElement::draw`].
    fn random(rng: &mut SmallRng, n: usize) -> Vec<Self> {
        (0..n).map(|_| Self::draw(rng)).collect()
    }
    /// The value `k` (small), for worked examples.
    fn from_small(k: i32) -> Self;
    /// Whether two results are the same value (for f32: the same bits, or both NaN).
    fn same(self, other: Self) -> bool {
        self == other
    }
}

impl ScanElement for f32 {
    const SUFFIX: &'static str = "f32";
    const EXACT: bool = false;

    fn add(self, other: Self) -> Self {
        self + other
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn draw(rng: &mut SmallRng) -> Self {
        gpu_harness::inputs::uniform_f32(rng)
    }
    fn from_small(k: i32) -> Self {
        k as f32
    }
    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits() || (self.is_nan() && other.is_nan())
    }
}

/// The integer element types: wrapping sums, random values over every bit pattern.
macro_rules! integer_elements {
    ($($t:ty => $suffix:literal),*) => {$(
        impl ScanElement for $t {
            const SUFFIX: &'static str = $suffix;
            const EXACT: bool = true;

            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn draw(rng: &mut SmallRng) -> Self {
                rng.random::<$t>()
            }
            fn from_small(k: i32) -> Self {
                k as $t
            }
        }
    )*};
}

integer_elements!(i32 => "i32", u32 => "u32");
