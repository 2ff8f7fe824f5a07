//! Effective bandwidth of both shipped reduce-unroll kernels at 2^20, 2^24 and 2^28 f32, with the
//! copy roof of each size. Times the kernel; the host's final add of the partials is not timed.

use gpu_harness::bench::{self, SIZES_1D};
use gpu_harness::reduction::bench_step;
use reduce_unroll::{CompleteUnroll, UnrollLastWarp};

fn main() -> std::process::ExitCode {
    bench::run("reduce-unroll", |bench| {
        for &n in SIZES_1D {
            let input = bench.random_f32(n)?;
            bench_step::<UnrollLastWarp>(bench, &input)?;
            bench_step::<CompleteUnroll>(bench, &input)?;
        }
        Ok(())
    })
}
