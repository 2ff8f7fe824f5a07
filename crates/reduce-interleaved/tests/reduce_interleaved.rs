//! reduce-interleaved's tests: the shared reduction suite for both kernels, and snapshots of their
//! launch plans and of their block partials of a fixed integer input.

use gpu_test::TestSuite;
use reduce_interleaved::{Interleaved, ReduceInterleaved, ReduceStridedIndex, StridedIndex};
use reduction::step_snapshot_tests;
use reduction::suite::ReductionSuites;

fn main() -> std::process::ExitCode {
    let suite = TestSuite::new()
        .sum_reduction_suite::<ReduceInterleaved>()
        .sum_reduction_suite::<ReduceStridedIndex>();
    step_snapshot_tests!(suite, StridedIndex, Interleaved).run()
}
