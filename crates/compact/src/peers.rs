//! The chapter's peers, measured by the tour beside its steps: NVIDIA CUB's `DeviceSelect::Flagged`
//! (by the same mask) and `DeviceSelect::If` (by the same threshold) over the same f32 values, from
//! `scripts/peers/compact.cu`, built by `scripts/build-peers` into the library `COURSE_PEERS` names.
//! They are timed with the same function, on the same stream, against the roofs of the same run as
//! the steps, and checked against the same CPU compaction.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::peer::{PeerLibrary, check_peer};
use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};

use crate::element::Predicate;
use crate::measured::{Input, POISON_WORD, input};

const CRATE: &str = env!("CARGO_PKG_NAME");

const FLAGGED: &str = "cub_select_flagged_f32";
const IF_GREATER: &str = "cub_select_if_greater_f32";

/// The peers as the tour measures them.
pub fn steps() -> Vec<StepEntry> {
    vec![
        StepEntry { crate_name: CRATE, step: "cub-flagged", prepare: prepare::<true> },
        StepEntry { crate_name: CRATE, step: "cub-if", prepare: prepare::<false> },
    ]
}

/// `(input, flags, output, kept, n, temp, temp_bytes, stream)`.
type Flagged =
    unsafe extern "C" fn(*const f32, *const u8, *mut f32, *mut u32, i64, *mut c_void, *mut u64, *mut c_void) -> c_int;
/// `(input, output, kept, n, threshold, temp, temp_bytes, stream)`.
type IfGreater =
    unsafe extern "C" fn(*const f32, *mut f32, *mut u32, i64, f32, *mut c_void, *mut u64, *mut c_void) -> c_int;

enum Function {
    Flagged(Flagged),
    IfGreater(IfGreater, f32),
}

/// A CUB selection on a case's input, its scratch allocated once: what is timed is the library call.
struct CubCase {
    function: Function,
    symbol: &'static str,
    input: Arc<Input>,
    output: DeviceBuffer<f32>,
    kept: DeviceBuffer<u32>,
    temp: DeviceBuffer<u8>,
    stream: *mut c_void,
}

impl CubCase {
    /// One call; with a null `temp` it only writes the scratch CUB needs to `temp_bytes`.
    fn call(&self, temp: *mut c_void, temp_bytes: &mut u64) -> c_int {
        let values = self.input.device_values.as_view().raw_address() as *const f32;
        let output = self.output.as_view().raw_address() as *mut f32;
        let kept = self.kept.as_view().raw_address() as *mut u32;
        let n = self.input.values.len() as i64;
        // The library exports these symbols with these signatures (scripts/peers/compact.cu).
        unsafe {
            match self.function {
                Function::Flagged(f) => {
                    let flags = self.input.device_mask.as_view().raw_address() as *const u8;
                    f(values, flags, output, kept, n, temp, temp_bytes, self.stream)
                }
                Function::IfGreater(f, threshold) => {
                    f(values, output, kept, n, threshold, temp, temp_bytes, self.stream)
                }
            }
        }
    }
}

fn prepare<const BY_MASK: bool>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let library = PeerLibrary::shared()?;
    let input = input(device, case, seed)?;
    let (symbol, function) = if BY_MASK {
        (FLAGGED, Function::Flagged(unsafe { library.function(FLAGGED)? }))
    } else {
        let Predicate::Greater(threshold) = input.predicate else {
            return Err(GpuError::BadInput("CUB's peer keeps by x > threshold only".into()));
        };
        (IF_GREATER, Function::IfGreater(unsafe { library.function(IF_GREATER)? }, threshold))
    };
    let stream = device
        .raw_stream()
        .ok_or_else(|| GpuError::Unsupported("peers run on a GPU, not on the CPU simulator".into()))?;
    let output = device.alloc::<f32>(input.values.len())?;
    let mut case = CubCase { function, symbol, input, output, kept: device.alloc(1)?, temp: device.alloc(1)?, stream };
    let mut temp_bytes = 0u64;
    check_peer(symbol, case.call(std::ptr::null_mut(), &mut temp_bytes))?;
    case.temp = device.alloc::<u8>(temp_bytes.max(1) as usize)?;
    Ok(Box::new(case))
}

impl Prepared for CubCase {
    fn queue(&mut self) -> Result<()> {
        let mut temp_bytes = self.temp.len() as u64;
        let temp = self.temp.as_view().raw_address() as *mut c_void;
        check_peer(self.symbol, self.call(temp, &mut temp_bytes))
    }

    fn check(&mut self) -> Result<Checked> {
        self.output.fill_words(POISON_WORD)?;
        self.queue()?;
        let kept = (self.kept.to_host()?[0] as usize).min(self.output.len());
        let got = if kept == 0 { Vec::new() } else { self.output.view(..kept)?.to_host()? };
        Ok(self.input.check(self.symbol, matches!(self.function, Function::Flagged(_)), &got))
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        let by_mask = matches!(self.function, Function::Flagged(_));
        vec![("kept", self.input.expected(by_mask).len() as u64)]
    }
}
