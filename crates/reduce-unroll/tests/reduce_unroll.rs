//! reduce-unroll's tests: the shared reduction suite for the two shipped kernels, and snapshots of
//! their launch plans and block partials. The racy `volatile` kernel is not tested here (it is not
//! correct); the `volatile_race` example demonstrates it.

use gpu_test::TestSuite;
use reduce_unroll::{CompleteUnroll, ReduceUnroll, ReduceUnrollLastWarp, UnrollLastWarp};
use reduction::step_snapshot_tests;
use reduction::suite::ReductionSuites;

fn main() -> std::process::ExitCode {
    let suite = TestSuite::new()
        .sum_reduction_suite::<ReduceUnrollLastWarp>()
        .sum_reduction_suite::<ReduceUnroll>();
    step_snapshot_tests!(suite, UnrollLastWarp, CompleteUnroll).run()
}
