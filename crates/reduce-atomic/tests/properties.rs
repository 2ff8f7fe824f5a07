//! reduce-atomic's property tests: the reduction family's shared properties
//! (`crates/reduction/tests/common/properties.rs`) for both finishes, [`AtomicReduce`] and
//! [`DeterministicReduce`]: sum, min, max and mean of f32, i32 and u32 and the f32 dot product
//! against the CPU on drawn inputs (sizes around warps, blocks and grids, offsets into a buffer,
//! NaN, infinities, subnormals, -0.0, huge and tiny values, integer extremes and wrap-around,
//! all-equal and skewed data), the input left as it was, the same answers at any offset, errors
//! for empty inputs and dot products of different lengths. Subnormal sums are exact (where every
//! order of additions gives the same sum the answer must be that sum), so an atomic finish that
//! flushes subnormals to zero fails them; and 2^20 copies of 2^-149 sum to exactly 2^-129. A
//! failure prints its smallest input and the seed:
//! `TEST_SEED=<seed> cargo test -p reduce-atomic --test properties` replays it.

#[path = "../../reduction/tests/common/properties.rs"]
mod properties;

use gpu_harness::Device;
use gpu_test::{TestResult, TestSuite};
use properties::{PropertySuites, reduction_family};
use reduce_atomic::{AtomicReduce, DeterministicReduce};
use reduction::FullReduction;

reduction_family!(AtomicFamily, AtomicReduce);
reduction_family!(DeterministicFamily, DeterministicReduce);

/// 2^20 copies of the smallest subnormal, 2^-149, sum to exactly 2^-129 (every partial sum is a
/// multiple of 2^-149 below 2^24 of them, so exact in f32), whichever way the blocks combine.
fn subnormals_add_up<L: FullReduction<f32>>(device: &Device, what: &str) -> TestResult {
    let input = device.upload(&vec![2f32.powi(-149); 1 << 20])?;
    let mut launcher = L::create(device)?;
    launcher.poison_scratch(1 << 20)?;
    let got = launcher.sum(input.as_view())?;
    if got != 2f32.powi(-129) {
        return Err(format!(
            "{what}: 2^20 x 2^-149 summed to {got:e} ({:#010x}), not 2^-129",
            got.to_bits()
        )
        .into());
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .full_properties::<AtomicFamily>()
        .full_properties::<DeterministicFamily>()
        .gpu("properties::atomic::2_pow_20_subnormals_sum_exactly", |device| {
            subnormals_add_up::<AtomicReduce<f32>>(device, "atomic")
        })
        .gpu("properties::last_block::2_pow_20_subnormals_sum_exactly", |device| {
            subnormals_add_up::<DeterministicReduce<f32>>(device, "last block")
        })
        .run()
}
