//! Effective bandwidth of reduce-naive at 2^20, 2^24 and 2^28 f32, with the copy roof of each size.
//! Times the kernel (the technique); the host's final add of n/256 partials is not timed.

use gpu_harness::bench::{self, SIZES_1D};
use gpu_harness::reduction::bench_step;
use reduce_naive::Naive;

fn main() -> std::process::ExitCode {
    bench::run("reduce-naive", |bench| {
        for &n in SIZES_1D {
            let input = bench.random_f32(n)?;
            bench_step::<Naive>(bench, &input)?;
        }
        Ok(())
    })
}
