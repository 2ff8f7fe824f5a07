//! reduce-interleaved's property tests: the reduction family's shared properties
//! (`crates/reduction/tests/common/properties.rs`) for the strided-index and interleaved sums:
//! against the CPU on drawn inputs (sizes around warps, blocks and grids, offsets into a buffer,
//! NaN, infinities, subnormals, -0.0, huge and tiny values, all-equal and skewed data), the input
//! left as it was, the same answer at any offset. A failure prints its smallest input and the seed:
//! `TEST_SEED=<seed> cargo test -p reduce-interleaved --test properties` replays it.

#[path = "../../reduction/tests/common/properties.rs"]
mod properties;

use gpu_test::TestSuite;
use properties::PropertySuites;
use reduce_interleaved::{ReduceInterleaved, ReduceStridedIndex};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .sum_properties::<ReduceStridedIndex>()
        .sum_properties::<ReduceInterleaved>()
        .run()
}
