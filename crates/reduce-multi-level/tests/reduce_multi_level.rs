//! reduce-multi-level's tests: the full-reduction suite (sum, min, max, mean over f32, i32, u32,
//! the dot product, more than 2^31 elements), the ladder's sum suite, the batched row sums against
//! the CPU, and snapshots of the pass structure and the row plans.

use gpu_harness::{DeviceView, GpuShape, Result};
use gpu_test::{TestRng, TestSuite, counters_comparable, fits_test_time};
use reduce_multi_level::{MultiLevel, RowSums, SINGLE_BLOCK_LIMIT, plan, rows_plan};
use reduction::reference::exact_integer_bound;
use reduction::suite::{
    Expected, FullReductionFamily, ReductionSuites, SumOf, check_sum, full_counters_snapshot,
};
use reduction::{POISON_WORD, ReduceElement, passes_chain};

/// [`MultiLevel`] for every element type, for the shared full-reduction suite.
struct MultiLevelFamily;

impl FullReductionFamily for MultiLevelFamily {
    type For<T: ReduceElement> = MultiLevel<T>;

    fn dot(
        launcher: &mut MultiLevel<f32>,
        a: DeviceView<'_, f32>,
        b: DeviceView<'_, f32>,
    ) -> Result<f32> {
        launcher.dot(a, b)
    }
}

/// Row shapes tested on the GPU: single elements, short and long rows, odd sizes, empty matrices.
const ROW_SHAPES: &[(usize, usize)] = &[
    (1, 1),
    (3, 7),
    (1000, 257),
    (1 << 14, 64),
    (9, 2048),
    (9, 2049),
    (7, 100_003),
    (1, (1 << 20) + 3),
    (2, 0),
    (0, 3),
    (2000, 33),
    (3000, 8195),
];

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .full_reduction_suite::<MultiLevelFamily>()
        .sum_reduction_suite::<SumOf<MultiLevel<f32>>>()
        .cpu("illustration::pass_structure", || {
            let sizes = [
                0,
                1,
                1 << 10,
                SINGLE_BLOCK_LIMIT,
                SINGLE_BLOCK_LIMIT + 1,
                1 << 20,
                1 << 28,
                1_000_000_007,
            ];
            let plans: Vec<String> = sizes
                .iter()
                .map(|&n| {
                    plan("multi_level_sum_f32", "multi_level_sum_f32", n, GpuShape::HOPPER_132_SMS)
                        .to_string()
                })
                .collect();
            insta::assert_snapshot!("pass_structure", plans.join("\n"));
            Ok(())
        })
        .cpu("illustration::row_plans", || {
            let shapes = [
                (1 << 20, 256),
                (16, 1 << 24),
                (1, 1 << 28),
                (1000, 1000),
                (1000, 2049),
                (5000, 10_000),
                (0, 5),
                (5, 0),
                (1056, 3),
            ];
            let plans = shapes
                .iter()
                .map(|&(r, c)| rows_plan(r, c, GpuShape::HOPPER_132_SMS).map(|p| p.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            insta::assert_snapshot!("row_plans", plans.join("\n"));
            Ok(())
        })
        .cpu("too_many_rows_is_an_error", || {
            let error = rows_plan(1 << 31, 4096, GpuShape::HOPPER_132_SMS)
                .expect_err("2^31 blocks do not fit a grid");
            insta::assert_snapshot!("too_many_rows_is_an_error", error.to_string());
            Ok(())
        })
        .gpu("rows::match_cpu", |device| {
            let mut rng = TestRng::new();
            let mut row_sums = RowSums::new(device)?;
            for &(rows, cols) in
                ROW_SHAPES.iter().filter(|&&(r, c)| fits_test_time(device, r * c).is_none())
            {
                for exact in [true, false] {
                    let host = if exact {
                        rng.small_integers_f32(rows * cols, exact_integer_bound(cols))
                    } else {
                        rng.uniform_f32(rows * cols, -1.0, 1.0)
                    };
                    let input = device.upload(&host)?;
                    row_sums.poison(rows, cols)?;
                    let sums = row_sums.sum_rows(input.as_view(), rows, cols)?;
                    if sums.len() != rows {
                        return Err(rng.fail(format!("{rows} x {cols}: {} sums", sums.len())));
                    }
                    let chain = passes_chain(&row_sums.plan(rows, cols)?.passes);
                    let expected = if exact { Expected::Exact } else { Expected::Within { chain } };
                    for (r, &got) in sums.iter().enumerate() {
                        let row = &host[r * cols..(r + 1) * cols];
                        check_sum(
                            &rng,
                            &format!("row {r} of {rows} x {cols}"),
                            row,
                            got,
                            expected,
                        )?;
                    }
                }
            }
            Ok(())
        })
        .gpu("rows::wrong_shape_is_an_error", |device| {
            let mut row_sums = RowSums::new(device)?;
            let input = device.upload(&[1.0f32; 10])?;
            match row_sums.sum_rows(input.as_view(), 3, 4) {
                Err(gpu_harness::GpuError::BadInput(message)) => {
                    insta::assert_snapshot!("rows_wrong_shape", message);
                    Ok(())
                }
                other => Err(format!("expected BadInput, got {other:?}").into()),
            }
        })
        .nvrtc_if("illustration::simulator_counters", counters_comparable, || {
            let counters = full_counters_snapshot::<MultiLevel<f32>>("multi_level_sum_f32")?;
            insta::assert_snapshot!("multi_level_simulator_counters", counters);
            Ok(())
        })
        .gpu("poison_word_is_nan_for_f32", |_| {
            if f32::from_bits(POISON_WORD).is_nan() {
                Ok(())
            } else {
                Err("POISON_WORD must be a NaN".into())
            }
        })
        .run()
}
