//! CPU scans, the references every kernel is checked against, and the tolerance of f32 results.

use crate::element::{ScanElement, ScanKind};

/// The scan of `input` on the CPU, one element after another, with the kernels' arithmetic
/// (wrapping integer adds; f32 adds in order).
pub fn scan<T: ScanElement>(kind: ScanKind, input: &[T]) -> Vec<T> {
    let mut total = T::default();
    input
        .iter()
        .map(|&x| {
            let before = total;
            total = total.add(x);
            if kind == ScanKind::Inclusive { total } else { before }
        })
        .collect()
}

/// The segmented scan of `input` on the CPU: the scan starts again at every element whose head
/// flag is nonzero.
pub fn segmented_scan<T: ScanElement>(kind: ScanKind, input: &[T], heads: &[u8]) -> Vec<T> {
    let mut total = T::default();
    input
        .iter()
        .zip(heads)
        .map(|(&x, &head)| {
            if head != 0 {
                total = T::default();
            }
            let before = total;
            total = total.add(x);
            if kind == ScanKind::Inclusive { total } else { before }
        })
        .collect()
}

/// Tolerance of an f32 prefix sum whose terms' absolute values add up to `sum_abs`, in a scan of
/// `n` elements: `ε · (⌈log2 n⌉ + 2) · Σ|x|`, with ε = 2^-23, as for the reductions' sums.
///
/// Every kernel here adds in a tree rather than a chain, except the look-back's walk from tile to
/// tile, whose roundings add up like a random walk (their sum grows as the square root of their
/// number) on inputs of both signs. The bound holds for such inputs, which is what the tests use
/// (uniform in [-1, 1)); integer-valued f32 inputs whose sums stay below 2^24 are compared exactly.
pub fn scan_tolerance(n: usize, sum_abs: f64) -> f64 {
    let depth = (n.max(1) as f64).log2().ceil();
    f64::from(f32::EPSILON) * (depth + 2.0) * sum_abs
}

/// The first element where `got` is not an acceptable `kind` scan of `input`, described, or `None`
/// when every element is: equal for integers; within [`scan_tolerance`] of the f64 prefix sum for
/// f32.
pub fn scan_mismatch<T: ScanElement>(kind: ScanKind, input: &[T], got: &[T]) -> Option<String> {
    if got.len() != input.len() {
        return Some(format!("{} results for {} inputs", got.len(), input.len()));
    }
    if T::EXACT {
        let expected = scan(kind, input);
        let wrong = got.iter().zip(&expected).position(|(g, e)| !g.same(*e))?;
        return Some(describe(kind, input.len(), wrong, got, &expected));
    }
    let (mut sum, mut sum_abs) = (0.0f64, 0.0f64);
    for (i, (&x, &g)) in input.iter().zip(got).enumerate() {
        let (before, before_abs) = (sum, sum_abs);
        sum += x.to_f64();
        sum_abs += x.to_f64().abs();
        let (expected, magnitude) =
            if kind == ScanKind::Inclusive { (sum, sum_abs) } else { (before, before_abs) };
        let error = (g.to_f64() - expected).abs();
        let tolerance = scan_tolerance(input.len(), magnitude);
        if error.is_nan() || error > tolerance {
            return Some(format!(
                "{} scan of {} elements: element {i} is {}, expected {expected} ± {tolerance:e}",
                kind.name(),
                input.len(),
                g.to_f64()
            ));
        }
    }
    None
}

/// The first wrong element and its neighbours.
fn describe<T: ScanElement>(
    kind: ScanKind,
    n: usize,
    wrong: usize,
    got: &[T],
    expected: &[T],
) -> String {
    let (from, to) = (wrong.saturating_sub(2), (wrong + 3).min(n));
    format!(
        "{} scan of {n} elements: first wrong element {wrong}: elements {from}..{to} are {:?}, \
         expected {:?}",
        kind.name(),
        &got[from..to],
        &expected[from..to]
    )
}

/// Like [`scan_mismatch`] for a segmented scan, always exact (tests use integers, or f32 integers
/// whose sums are exact).
pub fn segmented_mismatch<T: ScanElement>(
    kind: ScanKind,
    input: &[T],
    heads: &[u8],
    got: &[T],
) -> Option<String> {
    let expected = segmented_scan(kind, input, heads);
    if got.len() != expected.len() {
        return Some(format!("{} results for {} inputs", got.len(), input.len()));
    }
    let wrong = got.iter().zip(&expected).position(|(g, e)| !g.same(*e))?;
    Some(format!("segmented {}", describe(kind, input.len(), wrong, got, &expected)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_worked_examples() {
        assert_eq!(scan(ScanKind::Inclusive, &[1, 2, 3, 4]), [1, 3, 6, 10]);
        assert_eq!(scan(ScanKind::Exclusive, &[1, 2, 3, 4]), [0, 1, 3, 6]);
        let flags = [1, 0, 1, 0, 0, 1, 0, 0, 0];
        let data = [1, 2, 6, 7, 1, 1, 2, 3, 4];
        assert_eq!(
            segmented_scan(ScanKind::Exclusive, &data, &flags),
            [0, 1, 0, 6, 13, 0, 1, 3, 6]
        );
        assert_eq!(
            segmented_scan(ScanKind::Inclusive, &data, &flags),
            [1, 3, 6, 13, 14, 1, 3, 6, 10]
        );
    }

    #[test]
    fn integer_scans_wrap_around() {
        assert_eq!(scan(ScanKind::Inclusive, &[u32::MAX, 2, 3]), [u32::MAX, 1, 4]);
        assert_eq!(scan(ScanKind::Exclusive, &[i32::MAX, 1, 1]), [0, i32::MAX, i32::MIN]);
    }

    #[test]
    fn mismatches_name_the_first_wrong_element() {
        let why = scan_mismatch(ScanKind::Inclusive, &[1u32, 2, 3, 4], &[1, 3, 7, 10]).unwrap();
        assert!(why.contains("first wrong element 2"), "{why}");
        assert!(scan_mismatch(ScanKind::Inclusive, &[0.5f32, 0.25], &[0.5, 0.75]).is_none());
        assert!(scan_mismatch(ScanKind::Inclusive, &[0.5f32, 0.25], &[0.5, 0.8]).is_some());
        assert!(scan_mismatch(ScanKind::Inclusive, &[1.0f32], &[f32::NAN]).is_some());
    }
}
