//! The steps and the peer (cuBLAS's `cublasSgeam`, C = 1 * A^T + 0 * B,
//! `scripts/peers/transpose.cu`) as the tour and the benches measure them, each checked bit for bit
//! on a random f32 matrix.

use std::ffi::{c_int, c_void};

use gpu_harness::inputs::{Input, uniform_f32_input};
use gpu_harness::peer::{PeerCall, peer_function, peer_stream};
use gpu_harness::{Case, Device, DeviceBuffer, DeviceView, Measured, Result, StepEntry};

use crate::{Step, TileCopy, Transposer, first_mismatch};

const CRATE: &str = env!("CARGO_PKG_NAME");

/// A word no correct transpose writes into a random input's output (a NaN with a payload the
/// uniform inputs never have): outputs are filled with it before a checked run.
pub const POISON: u32 = 0x7fc0_dead;

/// Every step and the peer, in the registry's order.
pub fn steps() -> Vec<StepEntry> {
    let step = |name, step| {
        StepEntry::new(CRATE, name, move |d, c, s| {
            let transposer = Transposer::new(d, step)?;
            measure(d, c, s, true, |_, _| {
                Ok(Box::new(move |i, r, c, o| transposer.transpose(i, r, c, o)))
            })
        })
    };
    let copy = StepEntry::new(CRATE, "copy", |d, c, s| {
        let copy = TileCopy::new(d)?;
        measure(d, c, s, false, |_, _| Ok(Box::new(move |i, r, c, o| copy.copy(i, r, c, o))))
    });
    let geam = StepEntry::new(CRATE, "cublas-geam", |d, c, s| {
        measure(d, c, s, true, |input, output| geam(d, c, input, output))
    });
    [copy].into_iter().chain(Step::ALL.map(|s| step(s.name(), s))).chain([geam]).collect()
}

/// What is timed: one launch of a step's kernel (`input`, rows, columns, `output`), or one call.
type Run = Box<dyn FnMut(DeviceView<'_, f32>, usize, usize, &mut DeviceBuffer<f32>) -> Result<()>>;

/// A step on a random matrix (uniform in [-1, 1)) that transposes it (or copies it).
fn measure(
    device: &Device,
    case: &Case,
    seed: u64,
    transposes: bool,
    make: impl FnOnce(&Input<f32>, &DeviceBuffer<f32>) -> Result<Run>,
) -> Result<Measured<f32>> {
    let input = uniform_f32_input(device, case, seed)?;
    let (rows, cols, output) =
        (case.rows() as usize, case.cols() as usize, device.alloc::<f32>(input.host.len())?);
    let (mut run, data) = (make(&input, &output)?, input.clone());
    let compare = move |got: &[f32]| {
        let wrong = if transposes {
            first_mismatch(&input.host, got, rows, cols).map(|m| m.to_string())
        } else {
            let same = got.len() == input.host.len()
                && got.iter().zip(&input.host).all(|(a, b)| a.to_bits() == b.to_bits());
            (!same).then(|| "the copy differs from its input".to_string())
        };
        input.outcome(if transposes { "transpose" } else { "copy" }, wrong)
    };
    Ok(Measured::new(
        output,
        POISON,
        move |output| run(data.device.as_view(), rows, cols, output),
        compare,
    ))
}

/// `(input, output, rows, cols, stream)`: the transpose of the row-major `rows x cols` input.
type Geam = unsafe extern "C" fn(*const f32, *mut f32, i64, i64, *mut c_void) -> c_int;

fn geam(
    device: &Device,
    case: &Case,
    input: &Input<f32>,
    output: &DeviceBuffer<f32>,
) -> Result<Run> {
    const SYMBOL: &str = "cublas_transpose_f32";
    // The library exports this symbol with this signature (scripts/peers/transpose.cu).
    let function: Geam = unsafe { peer_function(SYMBOL)? };
    let (from, to, stream) = (
        input.device.as_view().raw_address(),
        output.as_view().raw_address(),
        peer_stream(device)?,
    );
    let (rows, cols) = (case.rows() as i64, case.cols() as i64);
    let mut call = PeerCall::new(device, SYMBOL, move |_, _| unsafe {
        function(from as _, to as _, rows, cols, stream)
    })?;
    Ok(Box::new(move |_, _, _, _| call.queue()))
}
