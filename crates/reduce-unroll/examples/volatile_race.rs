//! Demonstrates why the classic `volatile` last-warp unroll is wrong on Volta and later GPUs.
//!
//! Runs `reduce_unroll_volatile_racy` and the correct `reduce_unroll_last_warp` on the same
//! integer-valued inputs many times and counts wrong block partials. A race need not show up as a
//! wrong answer on every run or every GPU (the compiler and the scheduler decide), so the reliable
//! witness is compute-sanitizer:
//!
//! ```sh
//! cargo build --release --example volatile_race -p reduce-unroll
//! compute-sanitizer --tool racecheck target/release/examples/volatile_race
//! ```
//!
//! which reports shared-memory hazards in the racy kernel and none in the correct one.

use gpu_harness::Device;
use gpu_test::TestRng;
use reduce_unroll::{UnrollLastWarp, VolatileRacy};
use reduction::reference::{exact_integer_bound, sum_f64};
use reduction::{HostFinishedStep, HostFinishedSum};

/// Runs `S` `runs` times on random integer-valued inputs and counts wrong sums.
fn count_wrong<S: HostFinishedStep>(
    device: &Device,
    rng: &mut TestRng,
    n: usize,
    runs: usize,
) -> gpu_harness::Result<usize> {
    let mut reducer = HostFinishedSum::<S>::new(device)?;
    let mut wrong = 0;
    for _ in 0..runs {
        let input = rng.small_integers_f32(n, exact_integer_bound(n));
        if f64::from(reducer.sum(&input)?) != sum_f64(&input) {
            wrong += 1;
        }
    }
    Ok(wrong)
}

fn main() -> gpu_harness::Result<()> {
    let device = Device::shared()?;
    let mut rng = TestRng::new();
    let (n, runs) = (1 << 16, 200);
    println!("{} on n = {n}, {runs} runs each (seed {}):", device.facts().name, rng.seed());
    for (name, wrong) in [
        (
            "volatile-racy (classic, no __syncwarp)",
            count_wrong::<VolatileRacy>(&device, &mut rng, n, runs)?,
        ),
        (
            "unroll-last-warp (__syncwarp)",
            count_wrong::<UnrollLastWarp>(&device, &mut rng, n, runs)?,
        ),
    ] {
        println!("  {name:<40} wrong sums: {wrong}/{runs}");
    }
    println!(
        "A data race may give right answers on a given GPU and compiler; racecheck shows it \
         regardless."
    );
    Ok(())
}
