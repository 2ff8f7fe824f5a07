//! Effective bandwidth of reduce-naive at 2^20, 2^24 and 2^28 f32, with the copy roof of each size.
//! Times the kernel (the technique); the host's final add of n/256 partials is not in the timing.

use gpu_harness::bench::{self, SIZES_1D};
use reduce_naive::{ReduceNaive, plan};

fn main() -> std::process::ExitCode {
    bench::run("reduce-naive", |bench| {
        let mut reducer = ReduceNaive::new(bench.device())?;
        for &n in SIZES_1D {
            let input = bench.random_f32(n)?;
            reducer.reserve(n)?;
            // Bytes that must move: every input read once, every partial written once.
            let bytes = 4 * (n as u64 + plan(n)?.host_adds);
            bench.case("naive", n, bytes, || reducer.block_partials(input.as_view()).map(drop))?;
        }
        Ok(())
    })
}
