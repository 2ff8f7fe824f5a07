//! bfloat16 on the host, for the families whose kernels take f32 and bf16 (softmax, norms,
//! batch-stats): bf16 is held as its 16-bit words in `u16` (a `DeviceBuffer<u16>`), [`Value`] is
//! the element trait of the two types, and [`bf16_to_f32`] and [`f32_to_bf16`] convert. The
//! kernels' side is `cuda/bf16.cuh`.

use crate::Element;

/// The element types of a family's data: `f32`, and `u16` holding bfloat16 bits. Sealed.
pub trait Value: Element + sealed::Sealed {
    /// `f32` or `bf16`, in messages.
    const NAME: &'static str;
    /// What the bf16 kernels' names end with: `""` or `"_bf16"`.
    const SUFFIX: &'static str;
    /// Whether this is bf16 (the kernels whose names end in `_bf16`).
    const BF16: bool;
    /// Elements in a 16-byte vector: 4 or 8.
    const PER_VEC: usize;
    /// The value as f64 (exact for both).
    fn to_f64(self) -> f64;
    /// The nearest value to an f32 (ties to even; a NaN stays a NaN).
    fn from_f32(x: f32) -> Self;
    /// The value's bits, to tell a poisoned NaN from a computed one.
    fn bits(self) -> u32;
}
mod sealed {
    pub trait Sealed {}
}
impl sealed::Sealed for f32 {}
impl sealed::Sealed for u16 {}
impl Value for f32 {
    const NAME: &'static str = "f32";
    const SUFFIX: &'static str = "";
    const BF16: bool = false;
    const PER_VEC: usize = 4;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f32(x: f32) -> Self {
        x
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
}
impl Value for u16 {
    const NAME: &'static str = "bf16";
    const SUFFIX: &'static str = "_bf16";
    const BF16: bool = true;
    const PER_VEC: usize = 8;
    fn to_f64(self) -> f64 {
        f64::from(bf16_to_f32(self))
    }
    fn from_f32(x: f32) -> Self {
        f32_to_bf16(x)
    }
    fn bits(self) -> u32 {
        u32::from(self)
    }
}

/// The f32 value of a bfloat16 (its bits are f32's top half).
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// The bfloat16 nearest to `x`, ties to even (the kernels' rounding); a NaN stays a quiet NaN of
/// its sign and the top of its payload, as `float_to_bf16` in `cuda/bf16.cuh` keeps it, where
/// `float_to_bf16_cvt` (one instruction on sm_80 and later) writes bf16's canonical NaN, 0x7fff.
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if b & 0x7fff_ffff > 0x7f80_0000 {
        return ((b >> 16) | 0x40) as u16;
    }
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}
