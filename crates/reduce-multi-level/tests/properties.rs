//! reduce-multi-level's property tests: the reduction family's shared properties
//! (`crates/reduction/tests/common/properties.rs`) for [`MultiLevel`]: sum, min, max and mean of
//! f32, i32 and u32 and the f32 dot product against the CPU on drawn inputs (sizes around warps,
//! blocks, the single-block limit and grids, offsets into a buffer, NaN, infinities, subnormals,
//! -0.0, huge and tiny values, integer extremes and wrap-around, all-equal and skewed data), the
//! input left as it was, the same answers at any offset, errors for empty inputs and dot products
//! of different lengths; and the row sums ([`RowSums`]) of drawn matrices, each row against the
//! CPU, with a shape that does not fit the input an error. A failure prints its smallest input and
//! the seed: `TEST_SEED=<seed> cargo test -p reduce-multi-level --test properties` replays it.

#[path = "../../reduction/tests/common/properties.rs"]
mod properties;

use std::cell::RefCell;

use gpu_test::props::proptest::prelude::*;
use gpu_test::props::{self, Guarded, expect_bad_input, f32_arith_specials, f32_sum_mixes};
use gpu_test::{TestSuite, test_size};
use properties::{PropertySuites, f32_sum_mismatch, reduction_family};
use reduce_multi_level::{
    MIN_CHUNK_COLUMNS, MultiLevel, RowSums, SHORT_ROW_COLUMNS, SINGLE_BLOCK_LIMIT,
};
use reduction::passes_chain;

reduction_family!(MultiLevelFamily, MultiLevel);

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .full_properties::<MultiLevelFamily>()
        .gpu("properties::row_sums_match_the_reference", |device| {
            let row_sums = RefCell::new(RowSums::new(device)?);
            let most = test_size(device, 1 << 21, 60_000);
            let rows = props::sizes(&[1, 8, 100], test_size(device, 5000, 300));
            let cols = props::sizes(
                &[1, 32, SHORT_ROW_COLUMNS, MIN_CHUNK_COLUMNS, SINGLE_BLOCK_LIMIT],
                test_size(device, 100_000, 20_000),
            );
            let shapes = (rows, cols)
                .prop_filter("at most the test's elements", move |&(r, c)| r * c <= most);
            let cases = (
                shapes,
                props::input(Just(0usize), 7, f32_sum_mixes(), f32_arith_specials(), 4),
                0..4u8,
            );
            props::check(device, (256, 24), cases, |((rows, cols), recipe, wrong)| {
                let mut row_sums = row_sums.borrow_mut();
                let values = props::Input { len: rows * cols, ..recipe.clone() }.values();
                let input = Guarded::input(device, &values, recipe.offset)?;
                if wrong == 0 && rows * cols > 0 {
                    // One case in four, a shape that does not fit: an error.
                    let result = row_sums.sum_rows(input.view()?, rows + 1, cols);
                    return expect_bad_input(
                        &format!("{} x {cols} rows of {} values", rows + 1, values.len()),
                        result,
                    );
                }
                row_sums.poison(rows, cols)?;
                let sums = row_sums.sum_rows(input.view()?, rows, cols)?;
                input.check_unchanged("the input")?;
                let chain = passes_chain(&row_sums.plan(rows, cols)?.passes);
                for (row, &got) in sums.iter().enumerate() {
                    let values = &values[row * cols..(row + 1) * cols];
                    if let Some(why) = f32_sum_mismatch(values, got, chain) {
                        return Err(format!("row {row} of {rows} x {cols}: {why}").into());
                    }
                }
                Ok(())
            })
        })
        .run()
}
