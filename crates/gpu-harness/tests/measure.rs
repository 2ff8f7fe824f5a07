//! The one measuring path's rules, checked with a fake clock (no GPU): [`median_ms_timed_by`]
//! warms up once, sizes its batches to about a millisecond from one timed call, and returns the
//! median of the batches' time per call.

use std::cell::Cell;

use gpu_harness::measure::median_ms_timed_by;
use gpu_test::{TestResult, TestSuite};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .cpu(
            "median_ms_timed_by_batches_to_a_millisecond_and_takes_the_median",
            || -> TestResult {
                // On the fake clock a call takes 0.25 ms, except calls 6 to 8 (counting from 0: the
                // warm-up, the timed call, then the first batch's four): 10 ms each, in one slow
                // batch that the median outvotes.
                let calls = Cell::new(0usize);
                let mut batch_sizes = Vec::new();
                let ms = median_ms_timed_by(
                    5,
                    |batch| {
                        let before = calls.get();
                        batch()?;
                        batch_sizes.push(calls.get() - before);
                        Ok((before..calls.get())
                            .map(|call| if (6..9).contains(&call) { 10.0 } else { 0.25 })
                            .sum())
                    },
                    || {
                        calls.set(calls.get() + 1);
                        Ok(())
                    },
                )?;
                // One warm-up call, one timed call (0.25 ms, so four calls fill a millisecond),
                // then five batches of four.
                if calls.get() != 1 + 1 + 5 * 4 || batch_sizes != [1, 4, 4, 4, 4, 4] {
                    return Err(format!(
                        "{} calls in timed batches of {batch_sizes:?}",
                        calls.get()
                    )
                    .into());
                }
                if ms != 0.25 {
                    return Err(format!("median {ms} ms per call, expected 0.25").into());
                }
                Ok(())
            },
        )
        .run()
}
