//! CPU references and the tolerance every f32 sum is checked within.

/// The sum in f64, the reference every f32 reduction is checked against.
pub fn sum_f64(values: &[f32]) -> f64 {
    values.iter().map(|&x| f64::from(x)).sum()
}

/// Tolerance for an f32 sum of `n` values whose absolute values add up to `sum_abs`:
/// `ε · (⌈log2 n⌉ + 2) · Σ|x|`, with ε = 2^-23 the f32 machine epsilon.
///
/// Summing in a tree of depth ⌈log2 n⌉ loses at most about one rounding of the running magnitude
/// per level; the `+ 2` covers the short serial runs some kernels add before the tree and the
/// host's final conversion. Every reduction in this workspace is such a tree, so a result outside
/// this bound is a bug, not rounding. Integer-valued inputs are compared exactly instead.
pub fn sum_tolerance(n: usize, sum_abs: f64) -> f64 {
    let depth = (n.max(1) as f64).log2().ceil();
    f64::from(f32::EPSILON) * (depth + 2.0) * sum_abs
}

/// Why `got` is not an acceptable f32 sum of `input`, or `None` when it is: equal to the f64
/// reference (the same infinity, or NaN where NaN is due), or within [`sum_tolerance`] of it.
pub fn sum_mismatch(input: &[f32], got: f32) -> Option<String> {
    let reference = sum_f64(input);
    if f64::from(got) == reference || (got.is_nan() && reference.is_nan()) {
        return None;
    }
    let sum_abs: f64 = input.iter().map(|&x| f64::from(x).abs()).sum();
    let tolerance = sum_tolerance(input.len(), sum_abs);
    let error = (f64::from(got) - reference).abs();
    (error.is_nan() || error > tolerance).then(|| {
        format!("n = {}: got {got}, reference {reference}, error {error:e} > tolerance {tolerance:e}", input.len())
    })
}

/// The largest magnitude of integer-valued floats that keeps every partial sum of `n` of them
/// exact in f32 (below 2^24), capped at 8.
pub fn exact_integer_bound(n: usize) -> i32 {
    ((1usize << 24) / n.max(1)).clamp(1, 8) as i32
}

/// Tolerance of a dot product of `a` and `b`: [`sum_tolerance`] of the products' magnitudes, plus
/// one rounding per product.
pub fn dot_tolerance(a: &[f32], b: &[f32]) -> f64 {
    let magnitude: f64 = a.iter().zip(b).map(|(&x, &y)| (f64::from(x) * f64::from(y)).abs()).sum();
    sum_tolerance(a.len(), magnitude) + f64::from(f32::EPSILON) * magnitude
}

/// A fixed integer-valued input of 5000 elements (values -8..=8), whose block partials are exact
/// in f32 and therefore the same on every run and every GPU (the snapshots' input).
pub fn fixed_integer_input() -> Vec<f32> {
    (0..5000).map(|i| ((i * 7) % 17) as f32 - 8.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_bound_keeps_sums_below_2_pow_24() {
        for n in [1usize, 1000, 1 << 20, (1 << 20) + 3, 3 << 22, 1 << 28] {
            let bound = exact_integer_bound(n);
            assert!(n as u64 * bound as u64 <= 1 << 24 || bound == 1, "n = {n}");
        }
    }

    #[test]
    fn tolerance_grows_with_depth() {
        assert!(sum_tolerance(1 << 20, 1.0) > sum_tolerance(1 << 10, 1.0));
        assert_eq!(sum_tolerance(0, 0.0), 0.0);
    }

    #[test]
    fn mismatch_catches_a_dropped_element_and_a_wrong_nan() {
        let input = [1.0e6f32, 2.0, 3.0];
        assert_eq!(sum_mismatch(&input, 1_000_005.0), None);
        assert!(sum_mismatch(&input, 1_000_002.0).is_some());
        assert!(sum_mismatch(&input, f32::NAN).is_some());
        assert_eq!(sum_mismatch(&[1.0, f32::INFINITY], f32::INFINITY), None);
        assert!(sum_mismatch(&[1.0, f32::INFINITY], f32::NAN).is_some());
        assert_eq!(sum_mismatch(&[f32::NAN], f32::NAN), None);
    }
}
