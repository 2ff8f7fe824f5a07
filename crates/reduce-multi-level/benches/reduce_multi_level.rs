//! Effective bandwidth of the multi-level sum of f32 at 2^20, 2^24 and 2^28 (all passes, result left
//! on the device), and of batched row sums of 2^28 elements in two shapes, with the copy roof.

use gpu_harness::bench::{self, SIZES_1D};
use gpu_harness::full::{FullReduction, ReduceOp};
use reduce_multi_level::{MultiLevel, RowSums};

fn main() -> std::process::ExitCode {
    bench::run("reduce-multi-level", |bench| {
        let mut reducer = MultiLevel::<f32>::new(bench.device())?;
        for &n in SIZES_1D {
            let input = bench.random_f32(n)?;
            reducer.reserve(n)?;
            // Bytes that must move: the input read once, the result written once.
            bench.case("multi-level", n, 4 * n as u64 + 4, || reducer.queue(ReduceOp::Sum, input.as_view()))?;
        }
        let n = 1 << 28;
        let input = bench.random_f32(n)?;
        let mut rows = RowSums::new(bench.device())?;
        for (label, r, c) in [("rows-2^20x256", 1 << 20, 256), ("rows-16x2^24", 16, 1 << 24)] {
            rows.queue(input.as_view(), r, c)?;
            bench.case(label, n, 4 * (n as u64 + r as u64), || rows.queue(input.as_view(), r, c))?;
        }
        Ok(())
    })
}
