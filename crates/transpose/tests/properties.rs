//! transpose's property tests (proptest, `gpu_test::props`): every step (and the tile copy) on
//! drawn matrices: sides around the 32 and 64 tiles, tall and thin shapes, empty ones, the matrix
//! at an offset into a buffer; f32 words with NaN payloads, infinities, subnormals, -0.0 and the
//! largest magnitudes, and u32 words that are each element's own index (so a misplaced element
//! names where it came from). The output must be the CPU's transpose bit for bit; the input is left
//! as it was; lengths that do not match the shape are errors that write nothing. A failure prints
//! its smallest input and the seed: `TEST_SEED=<seed> cargo test -p transpose --test properties`
//! replays it.
//!
//! The output must hold exactly the matrix, so no guard words fit around it: on the simulator a
//! write past it faults (its allocations are separated by unmapped gaps).

use gpu_harness::{Device, DeviceBuffer, DeviceView};
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{
    self, F32Mix, Guarded, Input, Word, expect_bad_input, f32_specials, f32_value_mixes,
};
use gpu_test::{TestResult, TestSuite, test_size};
use transpose::{Step, TileCopy, Transposer, first_mismatch};

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 32);

/// Matrix shapes: both sides near the tiles' edges (up to 200 on the simulator, 3000 on a GPU), or
/// one side of 1 to 8 and the other up to 5000 (20,000 on a GPU), either way round.
fn shapes(device: &Device) -> BoxedStrategy<(usize, usize)> {
    let side = props::sizes(&[1, 8, 32, 64, 96, 128], test_size(device, 3000, 200));
    let long = 0..=test_size(device, 20_000, 5000);
    prop_oneof![
        2 => (side.clone(), side),
        1 => (1..=8usize, long.clone()),
        1 => (long, 1..=8usize),
    ]
    .boxed()
}

/// The kernels: each step's transposer, then the tile copy (which must copy, not transpose).
struct Kernels {
    transposers: Vec<Transposer>,
    copy: TileCopy,
}

impl Kernels {
    fn new(device: &Device) -> gpu_harness::Result<Self> {
        let mut transposers = Vec::new();
        for step in Step::ALL {
            transposers.push(Transposer::new(device, step)?);
        }
        Ok(Kernels { transposers, copy: TileCopy::new(device)? })
    }

    fn count(&self) -> usize {
        self.transposers.len() + 1
    }

    fn name(&self, which: usize) -> &'static str {
        self.transposers.get(which).map_or("copy", |t| t.step().name())
    }

    /// Runs kernel `which` on a `rows x cols` matrix.
    fn run<T: transpose::Word>(
        &self,
        which: usize,
        input: DeviceView<'_, T>,
        (rows, cols): (usize, usize),
        output: &mut DeviceBuffer<T>,
    ) -> gpu_harness::Result<()> {
        match self.transposers.get(which) {
            Some(transposer) => transposer.transpose(input, rows, cols, output),
            None => self.copy.copy(input, rows, cols, output),
        }
    }
}

/// Runs kernel `which` on `values` (a `rows x cols` matrix at `offset` into a guarded buffer) into
/// a poisoned output, and checks the output against the CPU and the input for changes.
fn check<T: transpose::Word + Word>(
    device: &Device,
    kernels: &Kernels,
    which: usize,
    values: &[T],
    offset: usize,
    (rows, cols): (usize, usize),
) -> TestResult {
    let input = Guarded::input(device, values, offset)?;
    let mut output = Guarded::output_with(device, 0, values.len(), 0)?;
    kernels.run(which, input.view()?, (rows, cols), output.buffer())?;
    input.check_unchanged("the input")?;
    let got = output.read()?;
    let name = kernels.name(which);
    if which == kernels.transposers.len() {
        // The copy: the same matrix.
        return match values.iter().zip(&got).position(|(a, b)| !a.same_bits(*b)) {
            None => Ok(()),
            Some(i) => Err(format!(
                "{name} {rows} x {cols}: element {i} is {:?}, expected {:?}",
                got[i], values[i]
            )
            .into()),
        };
    }
    first_mismatch(values, &got, rows, cols)
        .map_or(Ok(()), |m| Err(format!("{name} {rows} x {cols}: {m}").into()))
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .gpu("properties::f32_words_are_transposed_bit_for_bit", |device| {
            let kernels = Kernels::new(device)?;
            let words = (
                any::<u64>(),
                f32_value_mixes(),
                prop::collection::vec((any::<usize>(), f32_specials()), 0..=6),
            );
            props::check(
                device,
                CASES,
                (0..kernels.count(), shapes(device), 0..8usize, words),
                |(which, shape, offset, (seed, mix, specials))| {
                    let input: Input<F32Mix, f32> =
                        Input { len: shape.0 * shape.1, offset, mix, seed, specials };
                    check(device, &kernels, which, &input.values(), offset, shape)
                },
            )
        })
        .gpu("properties::each_element_lands_in_its_place", |device| {
            let kernels = Kernels::new(device)?;
            props::check(
                device,
                CASES,
                (0..kernels.count(), shapes(device), 0..8usize),
                |(which, shape, offset)| {
                    let values: Vec<u32> = (0..(shape.0 * shape.1) as u32).collect();
                    check(device, &kernels, which, &values, offset, shape)
                },
            )
        })
        .gpu("properties::lengths_that_do_not_fit_the_shape_are_errors", |device| {
            let kernels = Kernels::new(device)?;
            let lengths = (0..kernels.count(), 0..40usize, 0..40usize, 0..1700usize, 0..1700usize);
            props::check(
                device,
                (256, 64),
                lengths,
                |(which, rows, cols, input_len, output_len)| {
                    let n = rows * cols;
                    let (input_len, output_len) = if input_len == n && output_len == n {
                        (n + 1, n)
                    } else {
                        (input_len, output_len)
                    };
                    let input = Guarded::input(device, &vec![1.0f32; input_len], 0)?;
                    let mut output = Guarded::output_with(device, 0, output_len, 0)?;
                    let result = kernels.run(which, input.view()?, (rows, cols), output.buffer());
                    expect_bad_input(
                        &format!("{rows} x {cols} from {input_len} into {output_len}"),
                        result,
                    )?;
                    output.check_unchanged("the output of a refused transpose")
                },
            )
        })
        .run()
}
