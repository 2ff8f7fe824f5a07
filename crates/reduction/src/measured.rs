//! The family's steps as the tour and the benches measure them (a crate's `steps()` lists them with
//! [`host_finished`] and [`on_device`]), and the peers: CUB's `DeviceReduce::Sum` and seed 004's
//! kernels as the seed writes them (`scripts/peers/reduce.cu`), timed the same way.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::inputs::{Input, uniform_f32_input};
use gpu_harness::peer::{PeerCall, peer_function, peer_stream};
use gpu_harness::{Case, Device, DeviceBuffer, Measured, Result, Stateful, StepEntry};

use crate::full::{FullReduction, ReduceOp};
use crate::host_finished::{HostFinishedStep, HostFinishedSum};
use crate::reference::{sum_mismatch, tree_chain};

/// The input every step sums: f32 uniform in [-1, 1), shared by the steps measured at a case.
pub fn random_floats(device: &Device, case: &Case, seed: u64) -> Result<Arc<Input<f32>>> {
    uniform_f32_input(device, case, seed)
}

/// A host-finished step `S`: what is timed is the kernel (one partial per block), not the host's
/// adds.
pub fn host_finished<S: HostFinishedStep>(crate_name: &'static str) -> StepEntry {
    StepEntry::new(crate_name, S::STEP, |device, case, seed| {
        let (input, mut reducer) =
            (random_floats(device, case, seed)?, HostFinishedSum::<S>::new(device)?);
        reducer.reserve(input.host.len())?;
        let partials = reducer.plan(input.host.len())?.host_adds;
        let check = |(reducer, input): &mut (HostFinishedSum<S>, Arc<Input<f32>>)| {
            let got = reducer.sum_device(input.device.as_view())?;
            let chain = reducer.plan(input.host.len())?.longest_addition_chain();
            Ok(input.outcome(S::STEP, sum_mismatch(&input.host, got, chain)))
        };
        let queue = |(reducer, input): &mut (HostFinishedSum<S>, Arc<Input<f32>>)| {
            reducer.block_partials(input.device.as_view()).map(drop)
        };
        Ok(Stateful::new((reducer, input), queue, check).with_count("partials", partials))
    })
}

/// A full reduction `L` (its f32 sum): what is timed is every launch, the result left on the
/// device.
pub fn on_device<L: FullReduction<f32>>(crate_name: &'static str, step: &'static str) -> StepEntry {
    StepEntry::new(crate_name, step, |device, case, seed| {
        let (input, mut launcher) = (random_floats(device, case, seed)?, L::create(device)?);
        launcher.reserve(input.host.len())?;
        let queue = |(launcher, input): &mut (L, Arc<Input<f32>>)| {
            launcher.queue(ReduceOp::Sum, input.device.as_view())
        };
        let check = |(launcher, input): &mut (L, Arc<Input<f32>>)| {
            let (got, chain) =
                (launcher.sum(input.device.as_view())?, launcher.addition_chain(input.host.len()));
            Ok(input.outcome("sum", sum_mismatch(&input.host, got, chain)))
        };
        Ok(Stateful::new((launcher, input), queue, check))
    })
}

const CRATE: &str = env!("CARGO_PKG_NAME");

/// Seed 004's kernels: step and symbol (`<symbol>_partials(n)` says how many partials it writes).
const SEED_KERNELS: [(&str, &str); 7] = [
    ("seed-naive", "seed004_naive"),
    ("seed-interleaved", "seed004_interleaved"),
    ("seed-first-add", "seed004_first_add"),
    ("seed-grid-stride", "seed004_grid_stride"),
    ("seed-warp-unroll", "seed004_warp_unroll"),
    ("seed-complete-unroll", "seed004_complete_unroll"),
    ("seed-shuffle", "seed004_shuffle"),
];

/// The peers as the tour measures them.
pub fn peers() -> Vec<StepEntry> {
    let seeds = SEED_KERNELS
        .map(|(step, symbol)| StepEntry::new(CRATE, step, move |d, c, s| seed(d, c, s, symbol)));
    [vec![StepEntry::new(CRATE, "cub-sum", cub_sum)], seeds.to_vec()].concat()
}

/// `(input, result, n, temp, temp_bytes, stream)`.
type CubSum =
    unsafe extern "C" fn(*const f32, *mut f32, i64, *mut c_void, *mut u64, *mut c_void) -> c_int;
/// `(input, partials, n, stream)`, and the count of partials for `n`.
type SeedRun = unsafe extern "C" fn(*const f32, *mut f32, i64, *mut c_void) -> c_int;
type SeedPartials = unsafe extern "C" fn(i64) -> i64;

/// A peer call on a random input that writes f32 values whose sum is the input's (CUB's one sum,
/// or a seed kernel's block partials, which the host adds).
fn peer_sum(input: Arc<Input<f32>>, sums: DeviceBuffer<f32>, mut call: PeerCall) -> Measured<f32> {
    let symbol = call.symbol();
    let compare = move |got: &[f32]| {
        let sum = got.iter().map(|&p| f64::from(p)).sum::<f64>() as f32;
        input.outcome(symbol, sum_mismatch(&input.host, sum, tree_chain(input.host.len())))
    };
    Measured::new(sums, f32::NAN.to_bits(), move |_| call.queue(), compare)
}

fn cub_sum(device: &Device, case: &Case, seed: u64) -> Result<Measured<f32>> {
    const SYMBOL: &str = "cub_reduce_sum_f32";
    // The library exports this symbol with this signature (scripts/peers/reduce.cu).
    let function: CubSum = unsafe { peer_function(SYMBOL)? };
    let (input, sums, stream) =
        (random_floats(device, case, seed)?, device.alloc::<f32>(1)?, peer_stream(device)?);
    let (from, to, n) =
        (input.device.as_view().raw_address(), sums.as_view().raw_address(), input.host.len());
    let call = PeerCall::with_scratch(device, SYMBOL, move |temp, bytes| unsafe {
        function(from as _, to as _, n as i64, temp, bytes, stream)
    })?;
    Ok(peer_sum(input, sums, call))
}

fn seed(device: &Device, case: &Case, seed: u64, symbol: &'static str) -> Result<Measured<f32>> {
    // The library exports these symbols with these signatures (scripts/peers/reduce.cu).
    let run: SeedRun = unsafe { peer_function(symbol)? };
    let count: SeedPartials = unsafe { peer_function(&format!("{symbol}_partials"))? };
    let input = random_floats(device, case, seed)?;
    let n = input.host.len();
    let sums = device.alloc::<f32>(unsafe { count(n as i64) }.max(1) as usize)?;
    let (from, to, stream) =
        (input.device.as_view().raw_address(), sums.as_view().raw_address(), peer_stream(device)?);
    let call = PeerCall::new(device, symbol, move |_, _| unsafe {
        run(from as _, to as _, n as i64, stream)
    })?;
    let partials = sums.len() as u64;
    Ok(peer_sum(input, sums, call).with_count("partials", partials))
}
