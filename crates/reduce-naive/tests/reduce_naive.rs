//! reduce-naive's tests: the shared reduction suite, plus its launch plans, the block partials of
//! a fixed integer input, and its error messages, frozen as insta snapshots.

use gpu_harness::GpuError;
use gpu_harness::reduction::HostFinishedStep;
use gpu_harness::testing::{TestResult, TestSuite, rows};
use reduce_naive::{BLOCK_SIZE, Naive, ReduceNaive};

/// A fixed integer-valued input: 6 full blocks and a partial one of 100 elements.
fn fixed_input() -> Vec<f32> {
    (0..6 * BLOCK_SIZE as usize + 100).map(|i| ((i * 7) % 17) as f32 - 8.0).collect()
}

/// What the block partials of [`fixed_input`] must be: each block's sum, computed on the CPU.
fn reference_partials(input: &[f32]) -> Vec<f32> {
    input.chunks(BLOCK_SIZE as usize).map(|block| block.iter().sum()).collect()
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .sum_reduction_suite::<ReduceNaive>()
        .cpu("launch_plans", || {
            let sizes = [0usize, 1, 255, 256, 257, 1 << 20, (1 << 20) + 3, 1 << 28];
            let plans: Vec<String> =
                sizes.iter().map(|&n| Naive::plan(n, 132).map(|p| p.to_string())).collect::<Result<_, _>>()?;
            insta::assert_snapshot!("launch_plans", plans.join("\n"));
            Ok(())
        })
        .cpu("bad_input_error_messages", || {
            let too_large = Naive::plan(1 << 32, 132).expect_err("2^32 elements overflow 32-bit indexing");
            let messages = [
                too_large.to_string(),
                GpuError::NoDriver { library: "libcuda.so.1".into() }.to_string(),
                GpuError::BadInput("view 5..3 of a buffer of 10 elements".into()).to_string(),
            ];
            insta::assert_snapshot!("bad_input_error_messages", messages.join("\n"));
            Ok(())
        })
        .cpu("partials_of_fixed_input", || {
            // The CPU reference writes the snapshot the GPU test below must match exactly.
            insta::assert_snapshot!("partials_of_fixed_input", rows(&reference_partials(&fixed_input()), 8));
            Ok(())
        })
        .gpu("gpu_partials_of_fixed_input", |device| -> TestResult {
            let input = fixed_input();
            let buffer = device.upload(&input)?;
            let mut reducer = ReduceNaive::new(device)?;
            reducer.reserve(input.len())?;
            gpu_harness::reduction::SumReduction::poison_scratch(&mut reducer)?;
            let count = reducer.block_partials(buffer.as_view())?;
            let partials = reducer.partials(count)?.to_host()?;
            insta::assert_snapshot!("partials_of_fixed_input", rows(&partials, 8));
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
