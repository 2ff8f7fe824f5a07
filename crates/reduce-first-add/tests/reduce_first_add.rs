//! reduce-first-add's tests: the shared reduction suite for the three kernels (the grid-stride one
//! at sizes below, at and above one full grid), and snapshots of their launch plans and of their
//! block partials of a fixed integer input.

use gpu_test::TestSuite;
use reduce_first_add::{
    FirstAdd, GridStride, GridStrideUnsignedIndex, ReduceFirstAdd, ReduceGridStride,
};
use reduction::HostFinishedSum;
use reduction::step_snapshot_tests;
use reduction::suite::ReductionSuites;

fn main() -> std::process::ExitCode {
    let suite = TestSuite::new()
        .sum_reduction_suite::<ReduceFirstAdd>()
        .sum_reduction_suite::<ReduceGridStride>()
        .sum_reduction_suite::<HostFinishedSum<GridStrideUnsignedIndex>>();
    step_snapshot_tests!(suite, FirstAdd, GridStride, GridStrideUnsignedIndex).run()
}
