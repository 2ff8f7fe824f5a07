//! Effective bandwidth of both reduce-interleaved kernels at 2^20, 2^24 and 2^28 f32, with the copy
//! roof of each size. Times the kernel; the host's final add of the partials is not timed.

use gpu_harness::bench::{self, SIZES_1D};
use gpu_harness::reduction::bench_step;
use reduce_interleaved::{Interleaved, StridedIndex};

fn main() -> std::process::ExitCode {
    bench::run("reduce-interleaved", |bench| {
        for &n in SIZES_1D {
            let input = bench.random_f32(n)?;
            bench_step::<StridedIndex>(bench, &input)?;
            bench_step::<Interleaved>(bench, &input)?;
        }
        Ok(())
    })
}
