//! CPU histograms: what every kernel's counts are compared with, exactly.

use crate::EvenBins;

/// The 256-bin histogram of `bytes`, by a plain loop.
pub fn byte_histogram(bytes: &[u8]) -> Vec<u32> {
    let mut counts = vec![0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    counts
}

/// [`byte_histogram`] of a large input on every core (the tour's 1 GiB inputs).
pub fn byte_histogram_parallel(bytes: &[u8]) -> Vec<u32> {
    let chunk = bytes.len().div_ceil(threads()).max(1 << 20);
    let parts: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            bytes.chunks(chunk).map(|part| scope.spawn(|| byte_histogram(part))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut counts = vec![0u32; 256];
    for part in parts {
        for (total, count) in counts.iter_mut().zip(part) {
            *total += count;
        }
    }
    counts
}

/// The histogram of `values` over `bins` even bins ([`EvenBins::bin_of`] for each value).
pub fn even_histogram(values: &[f32], bins: &EvenBins) -> Vec<u32> {
    let mut counts = vec![0u32; bins.bins() as usize];
    for &x in values {
        if let Some(bin) = bins.bin_of(x) {
            counts[bin as usize] += 1;
        }
    }
    counts
}

/// [`even_histogram`] on every core.
pub fn even_histogram_parallel(values: &[f32], bins: &EvenBins) -> Vec<u32> {
    let chunk = values.len().div_ceil(threads()).max(1 << 18);
    let parts: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            values.chunks(chunk).map(|part| scope.spawn(|| even_histogram(part, bins))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut counts = vec![0u32; bins.bins() as usize];
    for part in parts {
        for (total, count) in counts.iter_mut().zip(part) {
            *total += count;
        }
    }
    counts
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(32)
}

/// The first difference between two histograms, as text (`None` when they are equal).
pub fn mismatch(expected: &[u32], got: &[u32]) -> Option<String> {
    if expected.len() != got.len() {
        return Some(format!("{} bins came back, expected {}", got.len(), expected.len()));
    }
    let wrong: Vec<usize> = (0..expected.len()).filter(|&i| expected[i] != got[i]).collect();
    let &first = wrong.first()?;
    Some(format!(
        "{} of {} bins differ; bin {first}: got {}, expected {} (totals: got {}, expected {})",
        wrong.len(),
        expected.len(),
        got[first],
        expected[first],
        got.iter().map(|&c| u64::from(c)).sum::<u64>(),
        expected.iter().map(|&c| u64::from(c)).sum::<u64>()
    ))
}
