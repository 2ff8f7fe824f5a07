//! Timing with CUDA events, effective bandwidth, and the two roofs every step is compared with.
//!
//! The tour and the benches time every step with [`time_step`], and measure the roofs of each case
//! with [`Roofs::measure`], in the same run as the steps:
//!
//! - the **copy roof**: a device-to-device copy of the case's input, counting bytes read plus bytes
//!   written, the yardstick of steps that read and write (scan, transpose);
//! - the **read roof**: the fastest streaming read of the same bytes this workspace knows
//!   (`cuda/roofs.cu`: 16-byte loads, eight in flight per thread), the yardstick of steps that only
//!   read (reductions, histograms). A read moves bytes one way only, so it runs faster than a copy
//!   on HBM, and a read-only step may pass the copy roof without passing its own.

use crate::workload::Prepared;
use crate::{Device, KernelSource, LaunchConfig, Result, kernel_source};

/// Timed batches per median, in the tour and the benches alike.
pub const SAMPLES: usize = 15;

const ROOFS: KernelSource = kernel_source!("roofs.cu");

/// Effective bandwidth in GB/s (10^9 bytes per second) of moving `bytes` in `ms` milliseconds.
pub fn gigabytes_per_second(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// Median device time of one call of `work`, in milliseconds.
///
/// `work` is called once to warm up (module load, first-touch costs), then timed in `samples`
/// batches with CUDA events. Each batch repeats `work` enough times to last about a millisecond,
/// so event resolution and launch gaps between batches do not dominate short kernels.
pub fn median_ms(device: &Device, samples: usize, work: impl FnMut() -> Result<()>) -> Result<f64> {
    median_ms_timed_by(samples, |batch| device.time_ms(batch), work)
}

/// The median time of one call of a prepared step, in milliseconds: the one timing function of the
/// tour and the benches.
pub fn time_step(device: &Device, step: &mut dyn Prepared) -> Result<f64> {
    median_ms(device, SAMPLES, || step.queue())
}

/// The roofs of one case, measured on a buffer of the case's input size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roofs {
    /// Device-to-device copy, bytes read + bytes written, in GB/s.
    pub copy_gbs: f64,
    /// Streaming read, bytes read, in GB/s.
    pub read_gbs: f64,
}

impl Roofs {
    /// Measures both roofs on `bytes` bytes (rounded up to whole 16-byte vectors).
    pub fn measure(device: &Device, bytes: u64) -> Result<Roofs> {
        let vectors = bytes.div_ceil(16).max(1) as usize;
        let source = device.upload(&vec![1.0f32; 4 * vectors])?;
        Ok(Roofs {
            copy_gbs: copy_roof_gbs(device, &source)?,
            read_gbs: read_roof_gbs(device, &source)?,
        })
    }
}

/// Device-to-device copy bandwidth of `source`, counting bytes read plus bytes written.
fn copy_roof_gbs(device: &Device, source: &crate::DeviceBuffer<f32>) -> Result<f64> {
    let mut destination = device.alloc::<f32>(source.len())?;
    let ms = median_ms(device, SAMPLES, || device.copy(source.as_view(), &mut destination))?;
    Ok(gigabytes_per_second(2 * 4 * source.len() as u64, ms))
}

/// The fastest of the streaming reads of `cuda/roofs.cu` over `source`, bytes read: four or eight
/// loads in flight per thread, on a grid that fills the GPU once or on one just large enough for
/// each thread to make one pass of its loads (which wins on small inputs, where the launch costs
/// more than the loads).
fn read_roof_gbs(device: &Device, source: &crate::DeviceBuffer<f32>) -> Result<f64> {
    let sink = device.alloc::<f32>(1)?;
    let vectors = (source.len() / 4) as u64;
    let full_wave = device.facts().shape().resident_blocks(256);
    let mut best = 0.0f64;
    for (name, unroll) in [("read_roof_unroll4", 4u64), ("read_roof_unroll8", 8)] {
        let kernel = device.kernel(&ROOFS, name)?;
        let one_pass = vectors.div_ceil(256 * unroll).clamp(1, u64::from(full_wave)) as u32;
        let mut grids = vec![full_wave, one_pass];
        grids.dedup();
        // Each grid twice: on small inputs a single median moves with the clocks.
        for blocks in [grids.clone(), grids].concat() {
            let config = LaunchConfig::linear(blocks, 256, 0);
            let ms = median_ms(device, SAMPLES, || {
                device
                    .launch(&kernel, config)
                    .arg(source)
                    .arg(&sink)
                    .arg(vectors as i64)
                    .arg(f32::NAN)
                    .run()
            })?;
            best = best.max(gigabytes_per_second(16 * vectors, ms));
        }
    }
    Ok(best)
}

/// [`median_ms`]'s rules (one warm-up call, batches that last about a millisecond, the median of
/// `samples` batches' time per call) for work that one device's CUDA events cannot time: `time`
/// runs the batch it is given once and returns how long it took, in milliseconds, in place of
/// [`Device::time_ms`]. reduce-multi-gpu's bench passes CUDA events joined across every GPU for
/// its all-reduces, and the host's clock for a sum whose answer is read on the host.
/// `median_ms(device, samples, work)` is
/// `median_ms_timed_by(samples, |batch| device.time_ms(batch), work)`.
pub fn median_ms_timed_by(
    samples: usize,
    mut time: impl FnMut(&mut dyn FnMut() -> Result<()>) -> Result<f64>,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    work()?;
    let once = time(&mut work)?;
    let repeats = ((1.0 / once.max(1e-4)).ceil() as usize).clamp(1, 1000);
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples.max(1) {
        let ms = time(&mut || (0..repeats).try_for_each(|_| work()))?;
        times.push(ms / repeats as f64);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
