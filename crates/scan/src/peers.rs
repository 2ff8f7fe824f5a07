//! The family's peers, measured by the tour beside its steps: NVIDIA CUB's `DeviceScan::InclusiveSum`
//! of f32 and `DeviceScan::ExclusiveSum` of i32 (`scripts/peers/scan.cu`, built by
//! `scripts/build-peers` into the library `COURSE_PEERS` names), timed with the same function, on
//! the same stream, against the roofs of the same run as the steps.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::peer::{PeerLibrary, check_peer};
use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};

use crate::element::{ScanElement, ScanKind};
use crate::measured::{POISON_WORD, RandomInput, random_input};

const CRATE: &str = env!("CARGO_PKG_NAME");

/// The peers as the tour measures them.
pub fn steps() -> Vec<StepEntry> {
    vec![
        StepEntry { crate_name: CRATE, step: "cub-inclusive-f32", prepare: prepare::<f32, 0> },
        StepEntry { crate_name: CRATE, step: "cub-exclusive-i32", prepare: prepare::<i32, 1> },
    ]
}

/// `(input, output, n, temp, temp_bytes, stream)`: with a null `temp`, CUB only says how much
/// scratch it needs.
type CubScan<T> = unsafe extern "C" fn(*const T, *mut T, i64, *mut c_void, *mut u64, *mut c_void) -> c_int;

const SYMBOLS: [(&str, ScanKind); 2] =
    [("cub_inclusive_sum_f32", ScanKind::Inclusive), ("cub_exclusive_sum_i32", ScanKind::Exclusive)];

/// A CUB scan on a random input, its scratch allocated once (what is timed is the library call).
struct CubCase<T: ScanElement> {
    function: CubScan<T>,
    symbol: &'static str,
    kind: ScanKind,
    input: Arc<RandomInput<T>>,
    output: DeviceBuffer<T>,
    temp: DeviceBuffer<u8>,
    stream: *mut c_void,
}

fn prepare<T: ScanElement, const WHICH: usize>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let (symbol, kind) = SYMBOLS[WHICH];
    let library = PeerLibrary::shared()?;
    // The library exports this symbol with this signature (scripts/peers/scan.cu).
    let function: CubScan<T> = unsafe { library.function(symbol)? };
    let stream = device
        .raw_stream()
        .ok_or_else(|| GpuError::Unsupported("peers run on a GPU, not on the CPU simulator".into()))?;
    let input = random_input::<T>(device, case.elements()?, seed)?;
    let output = device.alloc::<T>(input.host.len())?;
    let mut temp_bytes = 0u64;
    let code = unsafe {
        function(
            input.device.as_view().raw_address() as *const T,
            output.as_view().raw_address() as *mut T,
            input.host.len() as i64,
            std::ptr::null_mut(),
            &mut temp_bytes,
            stream,
        )
    };
    check_peer(symbol, code)?;
    let temp = device.alloc::<u8>(temp_bytes.max(1) as usize)?;
    Ok(Box::new(CubCase { function, symbol, kind, input, output, temp, stream }))
}

impl<T: ScanElement> Prepared for CubCase<T> {
    fn queue(&mut self) -> Result<()> {
        let mut temp_bytes = self.temp.len() as u64;
        let code = unsafe {
            (self.function)(
                self.input.device.as_view().raw_address() as *const T,
                self.output.as_view().raw_address() as *mut T,
                self.input.host.len() as i64,
                self.temp.as_view().raw_address() as *mut c_void,
                &mut temp_bytes,
                self.stream,
            )
        };
        check_peer(self.symbol, code)
    }

    fn check(&mut self) -> Result<Checked> {
        self.output.fill_words(POISON_WORD)?;
        self.queue()?;
        let got = self.output.to_host()?;
        Ok(self.input.check(self.symbol, self.kind, &got))
    }
}
