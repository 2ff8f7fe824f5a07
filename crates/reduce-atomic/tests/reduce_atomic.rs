//! reduce-atomic's tests: the full-reduction suite (sum, min, max, mean over f32, i32, u32, the dot
//! product, more than 2^31 elements) and the ladder's sum suite for both finishes; bit-identical
//! results of the deterministic finish; the launch plans.

use gpu_harness::{DeviceView, GpuShape, Result};
use gpu_test::{TestRng, TestSuite, counters_comparable, test_size};
use reduce_atomic::{AtomicReduce, DeterministicReduce, plan};
use reduction::suite::{FullReductionFamily, ReductionSuites, SumOf, full_counters_snapshot};
use reduction::{FullReduction, ReduceElement};

/// [`AtomicReduce`] for every element type, for the shared full-reduction suite.
struct AtomicFamily;

impl FullReductionFamily for AtomicFamily {
    type For<T: ReduceElement> = AtomicReduce<T>;

    fn dot(
        launcher: &mut AtomicReduce<f32>,
        a: DeviceView<'_, f32>,
        b: DeviceView<'_, f32>,
    ) -> Result<f32> {
        launcher.dot(a, b)
    }
}

/// [`DeterministicReduce`] for every element type, for the shared full-reduction suite.
struct DeterministicFamily;

impl FullReductionFamily for DeterministicFamily {
    type For<T: ReduceElement> = DeterministicReduce<T>;

    fn dot(
        launcher: &mut DeterministicReduce<f32>,
        a: DeviceView<'_, f32>,
        b: DeviceView<'_, f32>,
    ) -> Result<f32> {
        launcher.dot(a, b)
    }
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .full_reduction_suite::<AtomicFamily>()
        .full_reduction_suite::<DeterministicFamily>()
        .sum_reduction_suite::<SumOf<AtomicReduce<f32>>>()
        .sum_reduction_suite::<SumOf<DeterministicReduce<f32>>>()
        .gpu("subnormals::every_finish_keeps_them", |device| {
            // The hardware's float atomicAdd flushes subnormal operands and results to zero; the
            // finishes add with the same rules as the rest of the reduction, so tiny values add up
            // exactly: n copies of 2^-149 (n a power of two) sum to n * 2^-149, and a subnormal
            // alone, or beside zeros, comes back unchanged.
            let n = test_size(device, 1 << 20, 1 << 14);
            let tiny = f32::from_bits(1);
            let exact = (n as f64 * f64::from(tiny)) as f32;
            let mut lone = vec![0.0f32; 4099];
            lone[1234] = 1e-40;
            for (input, want) in [(vec![tiny; n], exact), (vec![1e-40f32], 1e-40), (lone, 1e-40)] {
                let input = device.upload(&input)?;
                let atomic = AtomicReduce::<f32>::create(device)?.sum(input.as_view())?;
                let last_block =
                    DeterministicReduce::<f32>::create(device)?.sum(input.as_view())?;
                if atomic.to_bits() != want.to_bits() || last_block.to_bits() != want.to_bits() {
                    let n = input.len();
                    return Err(format!(
                        "{n} elements: atomic {atomic:e}, last-block \
                                        {last_block:e}, exact {want:e}"
                    )
                    .into());
                }
            }
            Ok(())
        })
        .cpu("illustration::launch_plans", || {
            let sizes = [0usize, 1, 4096, 1 << 20, 1 << 28, 1_000_000_007];
            let plans: Vec<String> = sizes
                .iter()
                .map(|&n| plan("last_block_sum_f32", n, GpuShape::HOPPER_132_SMS).to_string())
                .collect();
            insta::assert_snapshot!("launch_plans", plans.join("\n"));
            Ok(())
        })
        .nvrtc_if("illustration::simulator_counters", counters_comparable, || {
            let atomic = full_counters_snapshot::<AtomicReduce<f32>>("atomic_sum_f32")?;
            let last_block =
                full_counters_snapshot::<DeterministicReduce<f32>>("last_block_sum_f32")?;
            insta::assert_snapshot!("atomic_simulator_counters", format!("{atomic}\n{last_block}"));
            Ok(())
        })
        .gpu("deterministic::bit_identical_from_run_to_run", |device| {
            let mut rng = TestRng::new();
            let mut reducer = DeterministicReduce::<f32>::new(device)?;
            let sizes = [
                test_size(device, 1 << 24, 1 << 16),
                rng.size_in(
                    test_size(device, 1_000_000, 100_000)..=test_size(device, 30_000_000, 300_000),
                ),
            ];
            for n in sizes {
                let host = rng.uniform_f32(n, -1.0, 1.0);
                let input = device.upload(&host)?;
                let first = reducer.sum(input.as_view())?.to_bits();
                let dot_first = reducer.dot(input.as_view(), input.view(..)?)?.to_bits();
                for run in 1..50 {
                    let again = reducer.sum(input.as_view())?.to_bits();
                    let dot_again = reducer.dot(input.as_view(), input.view(..)?)?.to_bits();
                    if again != first || dot_again != dot_first {
                        return Err(rng.fail(format!(
                            "n = {n}, run {run}: sum bits {again:#x} vs {first:#x}, dot bits \
                             {dot_again:#x} vs {dot_first:#x}"
                        )));
                    }
                }
            }
            Ok(())
        })
        .gpu("deterministic::matches_across_launchers", |device| {
            // Two launchers (two ticket counters) interleaved on one stream give the same bits.
            let mut rng = TestRng::new();
            let host = rng.uniform_f32(test_size(device, 5_000_011, 300_007), -1.0, 1.0);
            let input = device.upload(&host)?;
            let (mut a, mut b) = (
                DeterministicReduce::<f32>::new(device)?,
                DeterministicReduce::<f32>::new(device)?,
            );
            let (x, y) = (a.sum(input.as_view())?, b.sum(input.as_view())?);
            if x.to_bits() != y.to_bits() {
                return Err(rng.fail(format!("{x} vs {y}")));
            }
            Ok(())
        })
        .run()
}
