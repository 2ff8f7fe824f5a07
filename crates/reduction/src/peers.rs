//! The family's peers, measured by the tour beside its steps: NVIDIA CUB's `DeviceReduce::Sum`, and
//! seed 004's kernels as the seed writes them (`scripts/peers/reduce.cu`, built by
//! `scripts/build-peers` into the library `COURSE_PEERS` names). They are timed with the same
//! function, on the same stream, against the roofs of the same run as the steps.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::peer::{PeerLibrary, check_peer};
use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};

use crate::measured::{RandomInput, random_input};
use crate::reference::sum_mismatch;

/// The crate that offers the peers (the registry names it).
const CRATE: &str = env!("CARGO_PKG_NAME");

/// The peers as the tour measures them.
pub fn steps() -> Vec<StepEntry> {
    vec![
        StepEntry { crate_name: CRATE, step: "cub-sum", prepare: prepare_cub_sum },
        seed::<SeedNaive>(),
        seed::<SeedInterleaved>(),
        seed::<SeedFirstAdd>(),
        seed::<SeedGridStride>(),
        seed::<SeedWarpUnroll>(),
        seed::<SeedCompleteUnroll>(),
        seed::<SeedShuffle>(),
    ]
}

/// The device's stream, which peers need (the CPU simulator has none).
fn stream(device: &Device) -> Result<*mut c_void> {
    device.raw_stream().ok_or_else(|| GpuError::Unsupported("peers run on a GPU, not on the CPU simulator".into()))
}

type CubSum = unsafe extern "C" fn(*const f32, *mut f32, i64, *mut c_void, *mut u64, *mut c_void) -> c_int;

/// CUB's sum on a random input, its scratch allocated once (what is timed is the library call).
struct CubSumCase {
    function: CubSum,
    input: Arc<RandomInput>,
    result: DeviceBuffer<f32>,
    temp: DeviceBuffer<u8>,
    stream: *mut c_void,
}

const CUB_SUM: &str = "cub_reduce_sum_f32";

fn prepare_cub_sum(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let library = PeerLibrary::shared()?;
    // The library exports this symbol with this signature (scripts/peers/reduce.cu).
    let function: CubSum = unsafe { library.function(CUB_SUM)? };
    let input = random_input(device, case.elements()?, seed)?;
    let stream = stream(device)?;
    let result = device.alloc::<f32>(1)?;
    let mut temp_bytes = 0u64;
    let n = input.host.len() as i64;
    let pointer = input.device.as_view().raw_address() as *const f32;
    // With no scratch, CUB only says how much it needs.
    let code = unsafe {
        function(pointer, result.as_view().raw_address() as *mut f32, n, std::ptr::null_mut(), &mut temp_bytes, stream)
    };
    check_peer(CUB_SUM, code)?;
    let temp = device.alloc::<u8>(temp_bytes.max(1) as usize)?;
    Ok(Box::new(CubSumCase { function, input, result, temp, stream }))
}

impl Prepared for CubSumCase {
    fn queue(&mut self) -> Result<()> {
        let mut temp_bytes = self.temp.len() as u64;
        let code = unsafe {
            (self.function)(
                self.input.device.as_view().raw_address() as *const f32,
                self.result.as_view().raw_address() as *mut f32,
                self.input.host.len() as i64,
                self.temp.as_view().raw_address() as *mut c_void,
                &mut temp_bytes,
                self.stream,
            )
        };
        check_peer(CUB_SUM, code)
    }

    fn check(&mut self) -> Result<Checked> {
        self.result.fill(f32::NAN)?;
        self.queue()?;
        let got = self.result.to_host()?[0];
        Ok(sum_mismatch(&self.input.host, got).map_or(Checked::Correct, |why| self.input.wrong("cub-sum", why)))
    }
}

/// One of seed 004's kernels: its step name and its functions in the peer library.
trait SeedKernel: 'static {
    const STEP: &'static str;
    /// Launches the kernel: `(input, partials, n, stream)`.
    const RUN: &'static str;
    /// How many partials it writes for `n` elements.
    const PARTIALS: &'static str;
}

macro_rules! seed_kernels {
    ($($kind:ident => $step:literal, $symbol:literal;)*) => {$(
        struct $kind;
        impl SeedKernel for $kind {
            const STEP: &'static str = $step;
            const RUN: &'static str = $symbol;
            const PARTIALS: &'static str = concat!($symbol, "_partials");
        }
    )*};
}

seed_kernels! {
    SeedNaive => "seed-naive", "seed004_naive";
    SeedInterleaved => "seed-interleaved", "seed004_interleaved";
    SeedFirstAdd => "seed-first-add", "seed004_first_add";
    SeedGridStride => "seed-grid-stride", "seed004_grid_stride";
    SeedWarpUnroll => "seed-warp-unroll", "seed004_warp_unroll";
    SeedCompleteUnroll => "seed-complete-unroll", "seed004_complete_unroll";
    SeedShuffle => "seed-shuffle", "seed004_shuffle";
}

fn seed<K: SeedKernel>() -> StepEntry {
    StepEntry { crate_name: CRATE, step: K::STEP, prepare: prepare_seed::<K> }
}

type SeedRun = unsafe extern "C" fn(*const f32, *mut f32, i64, *mut c_void) -> c_int;
type SeedPartials = unsafe extern "C" fn(i64) -> i64;

/// A seed kernel on a random input: what is timed is the kernel; the host adds its partials.
struct SeedCase {
    run: SeedRun,
    symbol: &'static str,
    input: Arc<RandomInput>,
    partials: DeviceBuffer<f32>,
    stream: *mut c_void,
}

fn prepare_seed<K: SeedKernel>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let library = PeerLibrary::shared()?;
    // The library exports these symbols with these signatures (scripts/peers/reduce.cu).
    let (run, count): (SeedRun, SeedPartials) = unsafe { (library.function(K::RUN)?, library.function(K::PARTIALS)?) };
    let input = random_input(device, case.elements()?, seed)?;
    let partials = device.alloc::<f32>(unsafe { count(input.host.len() as i64) }.max(1) as usize)?;
    Ok(Box::new(SeedCase { run, symbol: K::RUN, input, partials, stream: stream(device)? }))
}

impl Prepared for SeedCase {
    fn queue(&mut self) -> Result<()> {
        let input = self.input.device.as_view().raw_address() as *const f32;
        let partials = self.partials.as_view().raw_address() as *mut f32;
        let code = unsafe { (self.run)(input, partials, self.input.host.len() as i64, self.stream) };
        check_peer(self.symbol, code)
    }

    fn check(&mut self) -> Result<Checked> {
        self.partials.fill(f32::NAN)?;
        self.queue()?;
        let total: f64 = self.partials.to_host()?.iter().map(|&p| f64::from(p)).sum();
        let got = total as f32;
        Ok(sum_mismatch(&self.input.host, got).map_or(Checked::Correct, |why| self.input.wrong(self.symbol, why)))
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        vec![("partials", self.partials.len() as u64)]
    }
}
