//! The chapter's peers, measured by the tour beside its steps: NVIDIA CUB's
//! `DeviceHistogram::HistogramEven` on the same bytes (256 bins over levels 0 to 256) and on the
//! same f32 values (256 even bins over [0, 1)), from `scripts/peers/histogram.cu`, built by
//! `scripts/build-peers` into the library `COURSE_PEERS` names. They are timed with the same
//! function, on the same stream, against the roofs of the same run as the steps, and checked
//! against the same CPU histograms.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::peer::{PeerLibrary, check_peer};
use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};

use crate::BYTE_BINS;
use crate::measured::{Input, byte_input, f32_input, unit_bins};

const CRATE: &str = env!("CARGO_PKG_NAME");

const CUB_BYTES: &str = "cub_histogram_even_u8";
const CUB_F32: &str = "cub_histogram_even_f32";

/// The peers as the tour measures them.
pub fn steps() -> Vec<StepEntry> {
    vec![
        StepEntry { crate_name: CRATE, step: "cub-bytes", prepare: prepare_cub_bytes },
        StepEntry { crate_name: CRATE, step: "cub-even-f32", prepare: prepare_cub_f32 },
    ]
}

/// `(samples, counts, n, temp, temp_bytes, stream)`: 256 bins of bytes.
type CubBytes = unsafe extern "C" fn(*const u8, *mut u32, i64, *mut c_void, *mut u64, *mut c_void) -> c_int;
/// `(samples, counts, n, bins, lower, upper, temp, temp_bytes, stream)`: even bins of f32.
type CubF32 =
    unsafe extern "C" fn(*const f32, *mut u32, i64, c_int, f32, f32, *mut c_void, *mut u64, *mut c_void) -> c_int;

/// The device's stream, which peers need (the CPU simulator has none).
fn stream(device: &Device) -> Result<*mut c_void> {
    device.raw_stream().ok_or_else(|| GpuError::Unsupported("peers run on a GPU, not on the CPU simulator".into()))
}

/// One timed call of CUB: `(input, counts, scratch)`.
type CubCall<T> = Box<dyn Fn(&Input<T>, &DeviceBuffer<u32>, &DeviceBuffer<u8>) -> c_int>;

/// A CUB call on a case's input, its scratch allocated once: what is timed is the library call
/// (which zeroes the counts itself).
struct CubCase<T: gpu_harness::Element> {
    call: CubCall<T>,
    symbol: &'static str,
    input: Arc<Input<T>>,
    counts: DeviceBuffer<u32>,
    temp: DeviceBuffer<u8>,
}

impl<T: gpu_harness::Element> CubCase<T> {
    /// Asks CUB for its scratch size (a call with no scratch only says how much it needs).
    fn prepare(
        device: &Device,
        symbol: &'static str,
        input: Arc<Input<T>>,
        size: impl Fn(&Input<T>, &DeviceBuffer<u32>, &mut u64) -> c_int,
        call: CubCall<T>,
    ) -> Result<Box<dyn Prepared>> {
        let counts = device.alloc::<u32>(BYTE_BINS)?;
        let mut temp_bytes = 0u64;
        check_peer(symbol, size(&input, &counts, &mut temp_bytes))?;
        let temp = device.alloc::<u8>(temp_bytes.max(1) as usize)?;
        Ok(Box::new(CubCase { call, symbol, input, counts, temp }))
    }
}

impl<T: gpu_harness::Element> Prepared for CubCase<T> {
    fn queue(&mut self) -> Result<()> {
        check_peer(self.symbol, (self.call)(&self.input, &self.counts, &self.temp))
    }

    fn check(&mut self) -> Result<Checked> {
        self.counts.fill_words(0xdead_beef)?;
        self.queue()?;
        Ok(self.input.check(self.symbol, &self.counts.to_host()?))
    }
}

fn address<T: gpu_harness::Element>(buffer: &DeviceBuffer<T>) -> u64 {
    buffer.as_view().raw_address()
}

fn prepare_cub_bytes(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let library = PeerLibrary::shared()?;
    // The library exports this symbol with this signature (scripts/peers/histogram.cu).
    let function: CubBytes = unsafe { library.function(CUB_BYTES)? };
    let input = byte_input(device, case, seed)?;
    let stream = stream(device)?;
    let run = move |input: &Input<u8>, counts: &DeviceBuffer<u32>, temp: *mut c_void, bytes: &mut u64| unsafe {
        let n = input.host.len() as i64;
        function(address(&input.device) as *const u8, address(counts) as *mut u32, n, temp, bytes, stream)
    };
    CubCase::prepare(
        device,
        CUB_BYTES,
        input,
        move |input, counts, bytes| run(input, counts, std::ptr::null_mut(), bytes),
        Box::new(move |input, counts, temp| {
            let mut bytes = temp.len() as u64;
            run(input, counts, address(temp) as *mut c_void, &mut bytes)
        }),
    )
}

fn prepare_cub_f32(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let library = PeerLibrary::shared()?;
    // The library exports this symbol with this signature (scripts/peers/histogram.cu).
    let function: CubF32 = unsafe { library.function(CUB_F32)? };
    let input = f32_input(device, case, seed)?;
    let stream = stream(device)?;
    let bins = unit_bins();
    let run = move |input: &Input<f32>, counts: &DeviceBuffer<u32>, temp: *mut c_void, bytes: &mut u64| unsafe {
        let n = input.host.len() as i64;
        let (count, lower, upper) = (bins.bins() as c_int, bins.lower(), bins.upper());
        function(
            address(&input.device) as *const f32,
            address(counts) as *mut u32,
            n,
            count,
            lower,
            upper,
            temp,
            bytes,
            stream,
        )
    };
    CubCase::prepare(
        device,
        CUB_F32,
        input,
        move |input, counts, bytes| run(input, counts, std::ptr::null_mut(), bytes),
        Box::new(move |input, counts, temp| {
            let mut bytes = temp.len() as u64;
            run(input, counts, address(temp) as *mut c_void, &mut bytes)
        }),
    )
}
