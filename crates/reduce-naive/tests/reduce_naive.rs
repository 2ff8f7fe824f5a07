//! reduce-naive's tests: the shared reduction suite; snapshots of the launch plans and of the block
//! partials of a fixed integer input; the partials checked against a CPU model of the kernel; and
//! the error messages for bad input.

use gpu_harness::{GpuError, GpuShape};
use gpu_test::{TestSuite, rows};
use reduce_naive::{BLOCK_SIZE, Naive, ReduceNaive};
use reduction::reference::fixed_integer_input;
use reduction::suite::ReductionSuites;
use reduction::{HostFinishedStep, step_snapshot_tests};

fn main() -> std::process::ExitCode {
    let suite = TestSuite::new().sum_reduction_suite::<ReduceNaive>();
    step_snapshot_tests!(suite, Naive)
        .cpu("illustration::naive::cpu_model_of_partials", || {
            // One block per BLOCK_SIZE consecutive elements: the CPU computes what the GPU snapshot
            // `naive_partials_of_fixed_input` must hold.
            let partials: Vec<f32> =
                fixed_integer_input().chunks(BLOCK_SIZE as usize).map(|b| b.iter().sum()).collect();
            insta::assert_snapshot!("naive_partials_of_fixed_input", rows(&partials, 10));
            Ok(())
        })
        .cpu("bad_input_error_messages", || {
            let too_large = Naive::plan(1 << 32, GpuShape::HOPPER_132_SMS)
                .expect_err("2^32 overflows 32-bit indexing");
            let messages = [
                too_large.to_string(),
                GpuError::NoDriver { library: "libcuda.so.1".into() }.to_string(),
                GpuError::BadInput("view 5..3 of a buffer of 10 elements".into()).to_string(),
            ];
            insta::assert_snapshot!("bad_input_error_messages", messages.join("\n"));
            Ok(())
        })
        .gpu("view_out_of_range_is_an_error", |device| {
            let buffer = device.upload(&[1.0f32; 10])?;
            match buffer.view(5..11) {
                Err(GpuError::BadInput(_)) => Ok(()),
                other => Err(format!("expected BadInput, got {:?}", other.map(|v| v.len())).into()),
            }
        })
        .run()
}
