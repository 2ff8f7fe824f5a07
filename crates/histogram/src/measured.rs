//! The steps and their peers (CUB's `DeviceHistogram::HistogramEven`, `scripts/peers/histogram.cu`)
//! as the tour and the benches measure them, on the registry's inputs: `2^30 uniform` (random
//! bytes), `2^30 all-equal` (one byte value) and `2^28 f32` (uniform in [0, 1), 256 bins).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::inputs::{Input, cached, fill_in_parallel, random_values};
use gpu_harness::peer::{PeerCall, peer_function, peer_stream};
use gpu_harness::{Case, Device, DeviceBuffer, Element, GpuError, Measured, Result, StepEntry};
use rand::{Rng, RngExt};

use crate::reference::{byte_histogram_parallel, even_histogram_parallel, mismatch};
use crate::{BYTE_BINS, ByteHistogram, ByteStep, EvenBins, EvenHistogram, EvenStep};

const CRATE: &str = env!("CARGO_PKG_NAME");

/// Every step of the chapter, then the peers (CUB), as the tour and the benches measure them.
pub fn steps() -> Vec<StepEntry> {
    let bytes = |name, step| StepEntry::new(CRATE, name, move |d, c, s| byte_step(d, c, s, step));
    let even = |name, step| StepEntry::new(CRATE, name, move |d, c, s| even_step(d, c, s, step));
    let mut entries: Vec<StepEntry> = ByteStep::ALL.map(|s| bytes(s.name(), s)).into();
    entries.extend([
        even("even-f32-one-copy", EvenStep::OneCopy),
        even("even-f32", EvenStep::LaneCopies),
        StepEntry::new(CRATE, "cub-bytes", cub_bytes),
        StepEntry::new(CRATE, "cub-even-f32", cub_even),
    ]);
    entries
}

/// The bins of the f32 cases: 256 over [0, 1).
pub fn unit_bins() -> EvenBins {
    EvenBins::new(256, 0.0, 1.0).expect("256 bins over [0, 1) are valid")
}

/// A case's input (bytes or f32) and its CPU histogram.
struct Counted<T: Element> {
    input: Input<T>,
    expected: Vec<u32>,
}

/// The byte input a case names: `2^30 uniform` (every byte drawn from 0..=255) or `2^30 all-equal`
/// (one byte value, drawn from the seed, throughout).
fn byte_input(device: &Device, case: &Case, seed: u64) -> Result<Arc<Counted<u8>>> {
    let kind = case.variant.as_deref().filter(|kind| ["uniform", "all-equal"].contains(kind));
    let why = || {
        GpuError::BadInput(format!(
            "case {case}: a byte histogram's case ends in `uniform` or `all-equal`"
        ))
    };
    let uniform = kind.ok_or_else(why)? == "uniform";
    cached(device, case, seed, || {
        let mut host = vec![random_values(1, seed, |rng| rng.random::<u8>())[0]; case.elements()?];
        if uniform {
            fill_in_parallel(&mut host, seed, |rng, chunk| rng.fill_bytes(chunk));
        }
        let expected = byte_histogram_parallel(&host);
        Ok(Counted {
            input: Input { device: device.upload(&host)?, host, case: case.label.clone(), seed },
            expected,
        })
    })
}

/// The f32 input of a case ending in `f32`: values uniform in [0, 1).
fn f32_input(device: &Device, case: &Case, seed: u64) -> Result<Arc<Counted<f32>>> {
    if case.variant.as_deref() != Some("f32") {
        return Err(GpuError::BadInput(format!(
            "case {case}: an f32 histogram's case ends in `f32`"
        )));
    }
    cached(device, case, seed, || {
        let host = random_values(case.elements()?, seed, |rng| rng.random::<f32>());
        let expected = even_histogram_parallel(&host, &unit_bins());
        Ok(Counted {
            input: Input { device: device.upload(&host)?, host, case: case.label.clone(), seed },
            expected,
        })
    })
}

/// A step on its case's input: what is timed is `run` (zeroing the bins and the kernel, or one
/// library call, which zeroes them itself); a check compares the counts with the CPU's.
fn measured<T: Element>(
    input: Arc<Counted<T>>,
    counts: DeviceBuffer<u32>,
    run: impl FnMut(&mut DeviceBuffer<u32>) -> Result<()> + 'static,
) -> Measured<u32> {
    Measured::new(counts, 0xdead_beef, run, move |got| {
        input.input.outcome("histogram", mismatch(&input.expected, got))
    })
}

fn byte_step(device: &Device, case: &Case, seed: u64, step: ByteStep) -> Result<Measured<u32>> {
    let (histogram, input) = (ByteHistogram::new(device, step)?, byte_input(device, case, seed)?);
    histogram.plan(input.input.host.len())?;
    let data = input.clone();
    Ok(measured(input, device.alloc(BYTE_BINS)?, move |counts| {
        histogram.count(data.input.device.as_view(), counts)
    }))
}

fn even_step(device: &Device, case: &Case, seed: u64, step: EvenStep) -> Result<Measured<u32>> {
    let (histogram, input, bins) =
        (EvenHistogram::new(device, step)?, f32_input(device, case, seed)?, unit_bins());
    histogram.plan(input.input.host.len(), &bins)?;
    let data = input.clone();
    Ok(measured(input, device.alloc(BYTE_BINS)?, move |counts| {
        histogram.count(data.input.device.as_view(), &bins, counts)
    }))
}

/// `(samples, counts, n, temp, temp_bytes, stream)`: 256 bins of bytes.
type CubBytes =
    unsafe extern "C" fn(*const u8, *mut u32, i64, *mut c_void, *mut u64, *mut c_void) -> c_int;
/// `(samples, counts, n, bins, lower, upper, temp, temp_bytes, stream)`: even bins of f32.
type CubF32 = unsafe extern "C" fn(
    *const f32,
    *mut u32,
    i64,
    c_int,
    f32,
    f32,
    *mut c_void,
    *mut u64,
    *mut c_void,
) -> c_int;

// The library exports these symbols with these signatures (scripts/peers/histogram.cu).
fn cub_bytes(device: &Device, case: &Case, seed: u64) -> Result<Measured<u32>> {
    let (input, counts, stream) =
        (byte_input(device, case, seed)?, device.alloc::<u32>(BYTE_BINS)?, peer_stream(device)?);
    let (from, to, n) = (
        input.input.device.as_view().raw_address(),
        counts.as_view().raw_address(),
        input.input.host.len(),
    );
    let f: CubBytes = unsafe { peer_function("cub_histogram_even_u8")? };
    let mut call =
        PeerCall::with_scratch(device, "cub_histogram_even_u8", move |temp, bytes| unsafe {
            f(from as _, to as _, n as i64, temp, bytes, stream)
        })?;
    Ok(measured(input, counts, move |_| call.queue()))
}

fn cub_even(device: &Device, case: &Case, seed: u64) -> Result<Measured<u32>> {
    let (input, counts, stream) =
        (f32_input(device, case, seed)?, device.alloc::<u32>(BYTE_BINS)?, peer_stream(device)?);
    let (from, to, n) = (
        input.input.device.as_view().raw_address(),
        counts.as_view().raw_address(),
        input.input.host.len(),
    );
    let bins = unit_bins();
    let (count, lower, upper) = (bins.bins() as c_int, bins.lower(), bins.upper());
    let f: CubF32 = unsafe { peer_function("cub_histogram_even_f32")? };
    let mut call =
        PeerCall::with_scratch(device, "cub_histogram_even_f32", move |temp, bytes| unsafe {
            f(from as _, to as _, n as i64, count, lower, upper, temp, bytes, stream)
        })?;
    Ok(measured(input, counts, move |_| call.queue()))
}
