//! The steps and their peers (CUB's `DeviceScan::InclusiveSum` of f32 and `ExclusiveSum` of i32,
//! `scripts/peers/scan.cu`) as the tour and the benches measure them: timed on exactly their
//! launches, checked against the CPU scan.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::inputs::{self, Input};
use gpu_harness::peer::{PeerCall, peer_function, peer_stream};
use gpu_harness::{Case, Device, DeviceBuffer, DeviceView, Measured, Result, StepEntry};

use crate::element::{ScanElement, ScanKind};
use crate::multi_pass::MultiPassScan;
use crate::one_block::OneBlockScan;
use crate::plan::{MultiPass, OneBlock, SinglePass};
use crate::reference::scan_mismatch;
use crate::single_pass::Scan;

/// The word outputs are poisoned with before a check: NaN as f32, an unlikely integer.
pub const POISON_WORD: u32 = 0xffc0_0001;

const CRATE: &str = env!("CARGO_PKG_NAME");

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes), then the peers.
pub fn steps() -> Vec<StepEntry> {
    use ScanKind::{Exclusive, Inclusive};
    vec![
        entry::<f32>("hillis-steele", || one_block(OneBlock::HillisSteele)),
        entry::<f32>("blelloch", || one_block(OneBlock::Blelloch)),
        entry::<f32>("blelloch-padded", || one_block(OneBlock::BlellochPadded)),
        entry::<f32>("scan-then-propagate", || multi_pass(MultiPass::ScanThenPropagate)),
        entry::<f32>("reduce-then-scan", || multi_pass(MultiPass::ReduceThenScan)),
        entry::<f32>("single-pass", || single_pass(SinglePass::Classic, Inclusive)),
        entry::<f32>("early-loads", || single_pass(SinglePass::EarlyLoads, Inclusive)),
        entry::<i32>("early-loads-i32", || single_pass(SinglePass::EarlyLoads, Exclusive)),
        entry::<f32>("wide-look-back", || single_pass(SinglePass::WideLookBack, Inclusive)),
        entry::<f32>("bulk-copy", || single_pass(SinglePass::BulkCopy, Inclusive)),
        entry::<i32>("bulk-copy-i32", || single_pass(SinglePass::BulkCopy, Exclusive)),
        entry::<f32>("cub-inclusive-f32", || cub("cub_inclusive_sum_f32", Inclusive)),
        entry::<i32>("cub-exclusive-i32", || cub("cub_exclusive_sum_i32", Exclusive)),
    ]
}

/// The entry of step `name`, measured on elements `T` with the launcher that `make` sets up.
fn entry<T: ScanElement>(
    name: &'static str,
    make: impl Fn() -> MakeRun<T> + Send + Sync + 'static,
) -> StepEntry {
    StepEntry::new(CRATE, name, move |device, case, seed| measure::<T>(device, case, seed, make()))
}

/// The random input of `case` drawn from `seed`: uniform in [-1, 1) for f32 (the same values as
/// every family's f32 input), every bit pattern for integers.
pub fn random_input<T: ScanElement>(
    device: &Device,
    case: &Case,
    seed: u64,
) -> Result<Arc<Input<T>>> {
    inputs::random_input(device, case, seed, T::draw)
}

/// What is timed: the launches of one scan of the input into the output.
type Run<T> = Box<dyn FnMut(DeviceView<'_, T>, &mut DeviceBuffer<T>) -> Result<()>>;

/// Makes a step's [`Run`] for an input of `n` elements, and says which scan it computes.
type MakeRun<T> =
    Box<dyn FnOnce(&Device, &Input<T>, &DeviceBuffer<T>) -> Result<(Run<T>, ScanKind)>>;

/// A step (or peer) on a case's input, checked against the CPU's scan.
fn measure<T: ScanElement>(
    device: &Device,
    case: &Case,
    seed: u64,
    make: MakeRun<T>,
) -> Result<Measured<T>> {
    let input = random_input::<T>(device, case, seed)?;
    let (output, data) = (device.alloc(input.host.len())?, input.clone());
    let (mut run, kind) = make(device, &input, &output)?;
    let compare =
        move |got: &[T]| input.outcome(kind.name(), scan_mismatch(kind, &input.host, got));
    Ok(Measured::new(
        output,
        POISON_WORD,
        move |output| run(data.device.as_view(), output),
        compare,
    ))
}

fn one_block<T: ScanElement>(step: OneBlock) -> MakeRun<T> {
    Box::new(move |device, _, _| {
        let mut scan = OneBlockScan::<T>::new(device, step)?;
        Ok((Box::new(move |input, output| scan.scan(input, output)), step.kind()))
    })
}

fn multi_pass<T: ScanElement>(strategy: MultiPass) -> MakeRun<T> {
    Box::new(move |device, input, _| {
        let mut scan = MultiPassScan::<T>::new(device, strategy)?;
        scan.reserve(input.host.len())?;
        Ok((Box::new(move |input, output| scan.inclusive(input, output)), ScanKind::Inclusive))
    })
}

fn single_pass<T: ScanElement>(form: SinglePass, kind: ScanKind) -> MakeRun<T> {
    Box::new(move |device, input, _| {
        let mut scan = Scan::<T>::with_form(device, form)?;
        scan.reserve(input.host.len())?;
        Ok((Box::new(move |input, output| scan.scan(kind, input, output)), kind))
    })
}

/// `(input, output, n, temp, temp_bytes, stream)`: CUB's scan, with its scratch protocol.
type CubScan<T> =
    unsafe extern "C" fn(*const T, *mut T, i64, *mut c_void, *mut u64, *mut c_void) -> c_int;

/// A CUB scan of the input into the output, its scratch allocated once: what is timed is the call.
fn cub<T: ScanElement>(symbol: &'static str, kind: ScanKind) -> MakeRun<T> {
    Box::new(move |device, input, output| {
        // The library exports this symbol with this signature (scripts/peers/scan.cu).
        let (function, stream): (CubScan<T>, _) =
            (unsafe { peer_function(symbol)? }, peer_stream(device)?);
        let (from, to, n) = (
            input.device.as_view().raw_address(),
            output.as_view().raw_address(),
            input.host.len(),
        );
        let mut call = PeerCall::with_scratch(device, symbol, move |temp, bytes| unsafe {
            function(from as *const T, to as *mut T, n as i64, temp, bytes, stream)
        })?;
        Ok((Box::new(move |_, _| call.queue()), kind))
    })
}
