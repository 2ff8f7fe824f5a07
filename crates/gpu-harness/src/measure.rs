//! Timing with CUDA events, effective bandwidth, and the copy roof line.

use crate::{Device, Result};

/// Effective bandwidth in GB/s (10^9 bytes per second) of moving `bytes` in `ms` milliseconds.
pub fn gigabytes_per_second(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// Median device time of one call of `work`, in milliseconds.
///
/// `work` is called once to warm up (module load, first-touch costs), then timed in `samples`
/// batches with CUDA events. Each batch repeats `work` enough times to last about a millisecond,
/// so event resolution and launch gaps between batches do not dominate short kernels.
pub fn median_ms(device: &Device, samples: usize, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
    work()?;
    let once = device.time_ms(&mut work)?;
    let repeats = ((1.0 / once.max(1e-4)).ceil() as usize).clamp(1, 1000);
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples.max(1) {
        let ms = device.time_ms(|| (0..repeats).try_for_each(|_| work()))?;
        times.push(ms / repeats as f64);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Device-to-device copy bandwidth for `bytes` bytes, counting bytes read plus bytes written
/// (2 × `bytes`): the roof line a memory-bound kernel is compared with.
pub fn copy_roof_gbs(device: &Device, bytes: usize) -> Result<f64> {
    let words = bytes.div_ceil(4).max(1);
    let source = device.alloc::<u32>(words)?;
    let mut destination = device.alloc::<u32>(words)?;
    let ms = median_ms(device, 11, || device.copy(source.as_view(), &mut destination))?;
    Ok(gigabytes_per_second(2 * 4 * words as u64, ms))
}
