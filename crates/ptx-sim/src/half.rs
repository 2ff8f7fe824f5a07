//! The 16-bit float formats of `cuda_fp16.h` and `cuda_bf16.h`: IEEE half (`.f16`: 5 exponent and
//! 10 fraction bits) and bfloat16 (`.bf16`: 8 and 7), alone or packed in pairs (`.f16x2`,
//! `.bf16x2`: the first element in the low 16 bits).
//!
//! Arithmetic is done in f64 and rounded once to the format, to nearest even: exact for sums,
//! differences and products (their exact values fit in an f64), and for `fma` whenever the exact
//! result fits in 53 bits (a rare double rounding could differ from the hardware otherwise).

/// A 16-bit float format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HalfFormat {
    F16,
    Bf16,
}

impl HalfFormat {
    fn exponent_bits(self) -> u32 {
        match self {
            HalfFormat::F16 => 5,
            HalfFormat::Bf16 => 8,
        }
    }

    fn fraction_bits(self) -> u32 {
        match self {
            HalfFormat::F16 => 10,
            HalfFormat::Bf16 => 7,
        }
    }

    fn bias(self) -> i32 {
        (1 << (self.exponent_bits() - 1)) - 1
    }

    fn exponent_mask(self) -> u64 {
        ((1 << self.exponent_bits()) - 1) << self.fraction_bits()
    }

    /// The value of `bits` (the low 16 bits are used).
    pub(crate) fn value(self, bits: u64) -> f64 {
        let fraction_bits = self.fraction_bits();
        let fraction = bits & ((1 << fraction_bits) - 1);
        let exponent = ((bits & self.exponent_mask()) >> fraction_bits) as i32;
        let magnitude = if exponent == 0 {
            fraction as f64 * power_of_two(1 - self.bias() - fraction_bits as i32)
        } else if exponent == (1 << self.exponent_bits()) - 1 {
            if fraction == 0 { f64::INFINITY } else { f64::NAN }
        } else {
            (fraction + (1 << fraction_bits)) as f64
                * power_of_two(exponent - self.bias() - fraction_bits as i32)
        };
        if bits & 0x8000 != 0 { -magnitude } else { magnitude }
    }

    /// `x` rounded to the nearest value of the format, ties to even; NaN becomes the canonical NaN
    /// (all exponent and fraction bits set).
    pub(crate) fn round(self, x: f64) -> u64 {
        let fraction_bits = self.fraction_bits();
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        if x.is_nan() {
            return 0x7fff;
        }
        let a = x.abs();
        if a.is_infinite() {
            return sign | self.exponent_mask();
        }
        if a == 0.0 {
            return sign;
        }
        let min_exponent = 1 - self.bias();
        // The exponent of `a` (f64 subnormals are far below half the smallest value of either
        // format).
        let exponent = ((a.to_bits() >> 52) as i32 - 1023).max(min_exponent);
        if exponent < min_exponent - fraction_bits as i32 - 2 {
            return sign;
        }
        // `a` in units of the last place at `exponent`: a power-of-two scaling, exact.
        let units = (a * power_of_two(fraction_bits as i32 - exponent)).round_ties_even() as u64;
        let (units, exponent) = if units == 1 << (fraction_bits + 1) {
            (units >> 1, exponent + 1)
        } else {
            (units, exponent)
        };
        if units < 1 << fraction_bits {
            return sign | units; // subnormal (or rounded to zero)
        }
        let biased = exponent + self.bias();
        if biased >= (1 << self.exponent_bits()) - 1 {
            return sign | self.exponent_mask(); // overflow to infinity
        }
        sign | (biased as u64) << fraction_bits | (units - (1 << fraction_bits))
    }
}

/// 2^e as an f64 (e within the normal range).
fn power_of_two(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `op` applied to each 16-bit element of `a`, `b`, `c` (`pair`: two elements, else one), in f64,
/// rounded back to `format`.
pub(crate) fn lanewise(
    format: HalfFormat,
    pair: bool,
    a: u64,
    b: u64,
    c: u64,
    op: impl Fn(f64, f64, f64) -> f64,
) -> u64 {
    let element = |v: u64, k: u32| format.value((v >> (16 * k)) & 0xffff);
    let count = if pair { 2 } else { 1 };
    (0..count).fold(0, |acc, k| {
        acc | format.round(op(element(a, k), element(b, k), element(c, k))) << (16 * k)
    })
}

#[cfg(test)]
mod tests {
    use super::HalfFormat::{Bf16, F16};

    #[test]
    fn known_half_values_round_trip() {
        for (x, bits) in [
            (1.0, 0x3c00),
            (-2.5, 0xc100),
            (65504.0, 0x7bff),
            (2f64.powi(-24), 0x0001),
            (2f64.powi(-14), 0x0400),
        ] {
            assert_eq!(F16.round(x), bits, "{x}");
            assert_eq!(F16.value(bits), x);
        }
        assert_eq!(F16.round(65520.0), 0x7c00, "half a step past the largest value overflows");
        assert_eq!(
            F16.round(2f64.powi(-25)),
            0,
            "a tie between 0 and the smallest subnormal goes to 0"
        );
        assert_eq!(F16.round(3.0 * 2f64.powi(-25)), 2, "and between 1 and 2 units to 2");
        assert_eq!(F16.round(-0.0), 0x8000);
        assert_eq!(Bf16.round(1.0), 0x3f80);
        assert_eq!(Bf16.round(f32::from_bits(0x3f80_8000) as f64), 0x3f80, "tie to even");
        assert_eq!(Bf16.round(f32::from_bits(0x3f81_8000) as f64), 0x3f82, "tie to even");
        assert!(F16.value(0x7e00).is_nan() && F16.value(0xfc00) == f64::NEG_INFINITY);
    }
}
