//! Effective bandwidth of the single-launch f32 sum, atomic and deterministic (last block), at 2^20,
//! 2^24 and 2^28, with the result left on the device, and the copy roof of each size. The atomic
//! finish's 4-byte memset of the result is inside the timed region.

use gpu_harness::bench::{self, SIZES_1D};
use gpu_harness::full::{FullReduction, ReduceOp};
use reduce_atomic::{AtomicReduce, DeterministicReduce};

fn main() -> std::process::ExitCode {
    bench::run("reduce-atomic", |bench| {
        let mut atomic = AtomicReduce::<f32>::new(bench.device())?;
        let mut deterministic = DeterministicReduce::<f32>::new(bench.device())?;
        for &n in SIZES_1D {
            let input = bench.random_f32(n)?;
            atomic.reserve(n)?;
            deterministic.reserve(n)?;
            // Bytes that must move: the input read once, the result written once.
            let bytes = 4 * n as u64 + 4;
            bench.case("atomic", n, bytes, || atomic.queue(ReduceOp::Sum, input.as_view()))?;
            bench.case("last-block", n, bytes, || deterministic.queue(ReduceOp::Sum, input.as_view()))?;
        }
        Ok(())
    })
}
