//! Sums the same random f32 input many times with both single-launch finishes and counts the
//! distinct results (as bit patterns): the atomic finish may give several, the last-block finish
//! gives one.
//!
//! ```sh
//! cargo run --release --example determinism -p reduce-atomic
//! ```

use std::collections::BTreeSet;

use gpu_harness::Device;
use gpu_test::TestRng;
use reduce_atomic::{AtomicReduce, DeterministicReduce};
use reduction::FullReduction;
use reduction::reference::sum_f64;

fn main() -> gpu_harness::Result<()> {
    let device = Device::shared()?;
    let mut rng = TestRng::new();
    let runs = 200;
    println!(
        "{}: {runs} sums of the same input per size (seed {})",
        device.facts().name,
        rng.seed()
    );
    // The CPU simulator runs blocks one after another, so its atomics always land in the same
    // order; it also runs far slower than a GPU, so it gets small sizes.
    let sizes: &[usize] = if device.is_simulated() {
        &[1 << 12, 1 << 14, 1 << 16]
    } else {
        &[1 << 20, 1 << 24, 1 << 28]
    };
    if device.is_simulated() {
        println!(
            "  (CPU simulator: blocks run in order, so the atomic finish is deterministic here too)"
        );
    }
    for &n in sizes {
        let host = rng.uniform_f32(n, -1.0, 1.0);
        let input = device.upload(&host)?;
        let mut atomic = AtomicReduce::<f32>::new(&device)?;
        let mut last_block = DeterministicReduce::<f32>::new(&device)?;
        let (mut from_atomic, mut from_last_block) = (BTreeSet::new(), BTreeSet::new());
        for _ in 0..runs {
            from_atomic.insert(atomic.sum(input.as_view())?.to_bits());
            from_last_block.insert(last_block.sum(input.as_view())?.to_bits());
        }
        let spread = |set: &BTreeSet<u32>| {
            let values: Vec<f32> = set.iter().map(|&b| f32::from_bits(b)).collect();
            values.iter().copied().fold(f32::NEG_INFINITY, f32::max)
                - values.iter().copied().fold(f32::INFINITY, f32::min)
        };
        println!(
            "  n = 2^{:<2} f64 sum {:>14.6}: atomic {:>3} distinct results (spread {:e}), \
             last-block {} distinct",
            n.trailing_zeros(),
            sum_f64(&host),
            from_atomic.len(),
            spread(&from_atomic),
            from_last_block.len()
        );
    }
    Ok(())
}
