//! CPU references, and the bound every f32 sum is checked within: its step's own.

/// The sum in f64, the reference every f32 reduction is checked against.
pub fn sum_f64(values: &[f32]) -> f64 {
    values.iter().map(|&x| f64::from(x)).sum()
}

/// The bound on the rounding error of an f32 sum in which no input goes through more than `chain`
/// additions (the longest path of the summation tree,
/// [`crate::ReductionPlan::longest_addition_chain`]) and whose values' magnitudes add up to
/// `sum_abs`: `γ(chain) · Σ|x|`, with `γ(k) = k·u / (1 − k·u)` and u = 2^-24 (Higham, *Accuracy and
/// Stability of Numerical Algorithms*, section 4.2). Each addition rounds its result by at most u
/// of itself, and an input is part of at most `chain` of them. A result outside its step's bound is
/// a bug, not rounding. Integer-valued inputs are compared exactly instead.
pub fn sum_bound(chain: u64, sum_abs: f64) -> f64 {
    let k = chain as f64 * f64::from(f32::EPSILON) / 2.0;
    if k >= 1.0 { f64::INFINITY } else { k / (1.0 - k) * sum_abs }
}

/// The chain of a pairwise tree over `n` values with short serial runs, `2 · (⌈log2 n⌉ + 2)`: the
/// shape assumed for code whose own shape we do not plan (NVIDIA's libraries, NCCL), and for the
/// mean of [`crate::FullReduction::mean`]'s tests. It gives `ε · (⌈log2 n⌉ + 2) · Σ|x|`.
pub fn tree_chain(n: usize) -> u64 {
    2 * (u64::from((n.max(1) as u64).next_power_of_two().trailing_zeros()) + 2)
}

/// [`sum_bound`] for a tree over `n` values ([`tree_chain`]).
pub fn sum_tolerance(n: usize, sum_abs: f64) -> f64 {
    sum_bound(tree_chain(n), sum_abs)
}

/// Why `got` is not an acceptable f32 sum of `input` by a step whose longest addition chain is
/// `chain`, or `None` when it is: equal to the f64 reference (the same infinity, or NaN where NaN
/// is due), or within [`sum_bound`] of it.
pub fn sum_mismatch(input: &[f32], got: f32, chain: u64) -> Option<String> {
    let reference = sum_f64(input);
    if f64::from(got) == reference || (got.is_nan() && reference.is_nan()) {
        return None;
    }
    let sum_abs: f64 = input.iter().map(|&x| f64::from(x).abs()).sum();
    let tolerance = sum_bound(chain, sum_abs);
    let error = (f64::from(got) - reference).abs();
    (error.is_nan() || error > tolerance).then(|| {
        format!(
            "n = {}: got {got}, reference {reference}, error {error:e} > bound {tolerance:e} \
             (chain of {chain} additions)",
            input.len()
        )
    })
}

/// The largest magnitude of integer-valued floats that keeps every partial sum of `n` of them
/// exact in f32 (below 2^24), capped at 8.
pub fn exact_integer_bound(n: usize) -> i32 {
    ((1usize << 24) / n.max(1)).clamp(1, 8) as i32
}

/// Tolerance of a dot product of `a` and `b` by a step whose longest addition chain is `chain`:
/// [`sum_bound`] of the products' magnitudes, plus one rounding per product: relative, or, for a
/// product that lands among the subnormals, absolute (half the smallest subnormal, 2^-150), where
/// a relative bound does not hold.
pub fn dot_tolerance(a: &[f32], b: &[f32], chain: u64) -> f64 {
    let magnitude: f64 = a.iter().zip(b).map(|(&x, &y)| (f64::from(x) * f64::from(y)).abs()).sum();
    let underflow = a.len().min(b.len()) as f64 * 2f64.powi(-150);
    sum_bound(chain, magnitude) + f64::from(f32::EPSILON) * magnitude + underflow
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
    fn bound_grows_with_the_chain() {
        assert!(sum_tolerance(1 << 20, 1.0) > sum_tolerance(1 << 10, 1.0));
        assert!(sum_bound(1056, 1.0) > sum_bound(40, 1.0));
        assert_eq!(sum_tolerance(0, 0.0), 0.0);
        assert_eq!(sum_bound(1 << 25, 1.0), f64::INFINITY, "past 1/u additions no bound holds");
        // The tree bound is the ε (⌈log2 n⌉ + 2) Σ|x| the workspace used before, to first order.
        let old = f64::from(f32::EPSILON) * (20.0 + 2.0);
        assert!((sum_tolerance(1 << 20, 1.0) / old - 1.0).abs() < 1e-5);
    }

    /// A serial chain really reaches its bound's order: 2^20 copies of 0.1 added one after another
    /// in f32 err by far more than a tree's bound allows, and stay within the chain's.
    #[test]
    fn a_serial_chain_needs_its_own_bound() {
        let input = vec![0.1f32; 1 << 20];
        let serial = input.iter().fold(0.0f32, |acc, &x| acc + x);
        assert!(sum_mismatch(&input, serial, tree_chain(input.len())).is_some());
        assert_eq!(sum_mismatch(&input, serial, input.len() as u64), None);
    }

    /// Found by a property test on an H200: 7.131856e-6 x 1.667522e-28 = 1.1892e-33 is normal, but
    /// products that land among the subnormals round to a grid of 2^-149, which no relative bound
    /// covers. The tolerance allows half a step of that grid per product.
    #[test]
    fn a_dot_product_of_subnormal_products_is_within_tolerance() {
        let (a, b) = ([7.131856e-6f32, 1e-20], [1.667522e-28f32, 4.9e-22]);
        let exact: f64 = a.iter().zip(&b).map(|(&x, &y)| f64::from(x) * f64::from(y)).sum();
        let rounded: f32 = a.iter().zip(&b).map(|(&x, &y)| x * y).sum();
        let error = (f64::from(rounded) - exact).abs();
        assert!(error > 0.0 && error <= dot_tolerance(&a, &b, tree_chain(2)), "error {error:e}");
    }

    #[test]
    fn mismatch_catches_a_dropped_element_and_a_wrong_nan() {
        let input = [1.0e6f32, 2.0, 3.0];
        let chain = tree_chain(3);
        assert_eq!(sum_mismatch(&input, 1_000_005.0, chain), None);
        assert!(sum_mismatch(&input, 1_000_002.0, chain).is_some());
        assert!(sum_mismatch(&input, f32::NAN, chain).is_some());
        assert_eq!(sum_mismatch(&[1.0, f32::INFINITY], f32::INFINITY, chain), None);
        assert!(sum_mismatch(&[1.0, f32::INFINITY], f32::NAN, chain).is_some());
        assert_eq!(sum_mismatch(&[f32::NAN], f32::NAN, chain), None);
    }
}
