//! The peer: NVIDIA cuBLAS's `cublasSgeam` with its first operand transposed (C = 1 * A^T + 0 * B),
//! the library call a transpose is judged against. It is a C function in `scripts/peers/transpose.cu`,
//! built with the other peers by `scripts/build-peers` into the library `COURSE_PEERS` names (linked
//! against cuBLAS), and timed by the tour and the bench like any step, on the same stream, against
//! the copy roof of the same run. Without the library (or without cuBLAS, which it links) the tour
//! and the bench skip it and say why.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::peer::{PeerLibrary, check_peer};
use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};

use crate::measured::{CRATE, POISON, RandomMatrix, random_matrix};

/// The peer function's name in the library.
const GEAM: &str = "cublas_transpose_f32";

/// `(input, output, rows, cols, stream)`: the transpose of the row-major `rows x cols` input.
type Geam = unsafe extern "C" fn(*const f32, *mut f32, i64, i64, *mut c_void) -> c_int;

/// The peer as the tour and the bench measure it.
pub fn steps() -> Vec<StepEntry> {
    vec![StepEntry { crate_name: CRATE, step: "cublas-geam", prepare: prepare_geam }]
}

/// cuBLAS's transpose of a random matrix (what is timed is the library call).
struct GeamCase {
    function: Geam,
    input: Arc<RandomMatrix>,
    output: DeviceBuffer<f32>,
    stream: *mut c_void,
}

fn prepare_geam(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let library = PeerLibrary::shared()?;
    // The library exports this symbol with this signature (scripts/peers/transpose.cu).
    let function: Geam = unsafe { library.function(GEAM)? };
    let stream = device
        .raw_stream()
        .ok_or_else(|| GpuError::Unsupported("peers run on a GPU, not on the CPU simulator".into()))?;
    let input = random_matrix(device, case, seed)?;
    let output = device.alloc::<f32>(input.host.len())?;
    Ok(Box::new(GeamCase { function, input, output, stream }))
}

impl Prepared for GeamCase {
    fn queue(&mut self) -> Result<()> {
        let code = unsafe {
            (self.function)(
                self.input.device.as_view().raw_address() as *const f32,
                self.output.as_view().raw_address() as *mut f32,
                self.input.rows as i64,
                self.input.cols as i64,
                self.stream,
            )
        };
        check_peer(GEAM, code)
    }

    fn check(&mut self) -> Result<Checked> {
        self.output.fill_words(POISON)?;
        self.queue()?;
        let result = self.output.to_host()?;
        Ok(self.input.check("cublas-geam", &result, true))
    }
}
