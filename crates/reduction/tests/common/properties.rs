//! The reduction family's property tests, shared by its crates' `tests/properties.rs` (each
//! includes this file by its path, with `#[path]` on `mod properties;`, so the reduction library
//! itself is untouched): every sum launcher and every full reduction checked against the CPU on
//! inputs drawn by proptest (`gpu_test::props`), one suite entry per property:
//!
//! ```text
//! use properties::PropertySuites;
//! TestSuite::new().sum_properties::<ReduceNaive>().full_properties::<MultiLevelFamily>().run()
//! ```
//!
//! What holds for every launcher: its answer is the CPU's (exactly where every order of additions
//! gives the same f32 sum, and for integers; within the step's own bound,
//! [`reduction::reference::sum_bound`] of its longest addition chain, where orders round
//! differently); NaN anywhere makes a
//! sum, min and max NaN, both infinities make a sum NaN, integer sums wrap around; the input buffer
//! (with poisoned guard words around the view) is left as it was; the same input at another offset
//! gives the same answer; empty inputs and dot products of different lengths are errors where the
//! answer is undefined.

#![allow(dead_code, unused_macros)] // each crate uses the suites that fit its launchers

use std::cell::RefCell;

use gpu_harness::{Device, GpuShape};
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::sample::select;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{
    self, Drawn, F32Mix, Guarded, Input, expect_bad_input, f32_arith_specials, f32_specials,
    f32_sum_mixes, f32_value_mixes, order_free_sum, same_value,
};
use gpu_test::{TestSuite, short_type_name};

use reduction::full::{FullReduction, ReduceElement, ReduceOp, reference};
use reduction::reference::{dot_tolerance, sum_bound, sum_f64};
use reduction::suite::{FullReductionFamily, SumReduction};

/// The family's property suites, added to a [`TestSuite`].
pub trait PropertySuites: Sized {
    /// The f32 sum of launcher `R`: against the CPU, and at any offset.
    fn sum_properties<R: SumReduction>(self) -> Self;
    /// Sum, min, max and mean of f32, i32 and u32, and the f32 dot product, of the launcher family
    /// `F`: against the CPU, at any offset, and the errors.
    fn full_properties<F: FullReductionFamily>(self) -> Self;
}

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 32);
/// Cases of the properties that launch twice or more per case.
const FEWER_CASES: (u32, u32) = (128, 16);

/// Sizes near the edges of the family's kernels: a warp, a 256-thread block, two loads per thread,
/// a 16-byte vector, one full grid of this device (256 threads per block, 1 and 4 elements per
/// thread) and of an H100/H200, and the launcher's own `boundary_sizes`; any size up to 40,000 on
/// the simulator (which holds a full grid of vectors: 32,768) and 2^21 on a GPU.
pub fn reduction_sizes(device: &Device, boundaries: &[usize]) -> BoxedStrategy<usize> {
    let wave = device.facts().shape().threads_in_one_wave(256);
    let hopper = GpuShape::HOPPER_132_SMS.threads_in_one_wave(256);
    let mut edges = vec![
        1,
        3,
        4,
        5,
        8,
        32,
        64,
        256,
        512,
        1024,
        4096,
        wave,
        4 * wave,
        4 * wave + 4,
        hopper,
        4 * hopper,
    ];
    edges.extend_from_slice(boundaries);
    props::sizes(&edges, props::max_len(device))
}

/// Why `got` is not the f32 sum of `values` by a step whose longest addition chain is `chain`: it
/// must be exactly [`order_free_sum`] where that is defined (NaN, an infinity, or an exact sum),
/// else within [`sum_bound`] of the f64 sum.
pub fn f32_sum_mismatch(values: &[f32], got: f32, chain: u64) -> Option<String> {
    match order_free_sum(values) {
        Some(want) if same_value(got, want) => None,
        Some(want) => Some(format!(
            "the sum of {} values is {got}, expected exactly {want} (every order of additions \
             gives it)",
            values.len()
        )),
        None => {
            let want = sum_f64(values);
            let bound = sum_bound(chain, values.iter().map(|&x| f64::from(x).abs()).sum());
            let error = (f64::from(got) - want).abs();
            (error.is_nan() || error > bound).then(|| {
                format!(
                    "the sum of {} values is {got}, expected {want} ± {bound:e} (chain of {chain})",
                    values.len()
                )
            })
        }
    }
}

/// Sums `values` at `offset` into a guarded buffer, checking that the buffer is left as it was.
fn guarded_sum<R: SumReduction>(
    device: &Device,
    reducer: &mut R,
    values: &[f32],
    offset: usize,
) -> Result<f32, gpu_test::Failed> {
    let input = Guarded::input(device, values, offset)?;
    reducer.reserve(values.len())?;
    reducer.poison_scratch()?;
    let got = reducer.sum(input.view()?)?;
    input.check_unchanged("the input")?;
    Ok(got)
}

/// Inputs of a sum launcher `R`: sizes near its edges, offsets to 7, sum mixtures, special values.
fn sum_inputs<R: SumReduction>(device: &Device) -> BoxedStrategy<Input<F32Mix, f32>> {
    let sizes = reduction_sizes(device, &R::boundary_sizes());
    props::input(sizes, 7, f32_sum_mixes(), f32_arith_specials(), 3)
}

fn sum_properties<R: SumReduction>(suite: TestSuite) -> TestSuite {
    let tag = short_type_name::<R>();
    suite
        .gpu(format!("properties::{tag}::sum_matches_the_reference"), |device| {
            let reducer = RefCell::new(R::create(device)?);
            let inputs = sum_inputs::<R>(device);
            props::check(device, CASES, inputs, |input| {
                let values = input.values();
                let mut reducer = reducer.borrow_mut();
                let got = guarded_sum(device, &mut *reducer, &values, input.offset)?;
                let chain = reducer.addition_chain(values.len());
                f32_sum_mismatch(&values, got, chain).map_or(Ok(()), |why| Err(why.into()))
            })
        })
        .gpu(format!("properties::{tag}::same_sum_at_any_offset"), |device| {
            let reducer = RefCell::new(R::create(device)?);
            let inputs = sum_inputs::<R>(device);
            props::check(device, FEWER_CASES, (inputs, 0..8usize), |(input, other)| {
                let values = input.values();
                let mut reducer = reducer.borrow_mut();
                let (a, b) = (
                    guarded_sum(device, &mut *reducer, &values, input.offset)?,
                    guarded_sum(device, &mut *reducer, &values, other)?,
                );
                let exact = order_free_sum(&values).is_some();
                // Where the order rounds differently, vector loads group other elements at another
                // alignment: each answer must then be within the step's bound.
                let chain = reducer.addition_chain(values.len());
                let within = |sum| f32_sum_mismatch(&values, sum, chain).is_none();
                let agree = same_value(a, b) || (!exact && within(a) && within(b));
                if !agree {
                    return Err(format!("offset {}: {a}, offset {other}: {b}", input.offset).into());
                }
                Ok(())
            })
        })
}

/// A full-reduction element type with the shared mixtures.
pub trait PropertyElement: ReduceElement + Drawn {}
impl<T: ReduceElement + Drawn> PropertyElement for T {}

/// Why `got` is not `op` of `values` (an f32 sum by a step whose longest addition chain is
/// `chain`).
fn op_mismatch<T: ReduceElement>(op: ReduceOp, values: &[T], got: T, chain: u64) -> Option<String> {
    if T::ROUNDS && op == ReduceOp::Sum {
        let as_f32: Vec<f32> = values.iter().map(|&x| x.to_f64() as f32).collect();
        return f32_sum_mismatch(&as_f32, got.to_f64() as f32, chain);
    }
    let want = reference(op, values);
    let same =
        if T::ROUNDS { same_value(got.to_f64() as f32, want.to_f64() as f32) } else { got == want };
    (!same).then(|| {
        format!("the {} of {} values is {got:?}, expected {want:?}", op.name(), values.len())
    })
}

/// Why `got` is not the mean of `values`: for f32 the f32 sum's expectation (by a step whose
/// longest addition chain is `chain`) over n, for integers the exact sum over n (up to f64
/// rounding).
fn mean_mismatch<T: ReduceElement>(values: &[T], got: f64, chain: u64) -> Option<String> {
    let n = values.len() as f64;
    if T::ROUNDS {
        let as_f32: Vec<f32> = values.iter().map(|&x| x.to_f64() as f32).collect();
        if let Some(sum) = order_free_sum(&as_f32) {
            let want = f64::from(sum) / n;
            return (!(got == want || (got.is_nan() && want.is_nan()))).then(|| {
                format!("the mean of {} values is {got}, expected exactly {want}", values.len())
            });
        }
        let want = as_f32.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let tolerance = sum_bound(chain, as_f32.iter().map(|&x| f64::from(x).abs()).sum()) / n;
        return ((got - want).abs() > tolerance || got.is_nan()).then(|| {
            format!("the mean of {} values is {got}, expected {want} ± {tolerance:e}", values.len())
        });
    }
    // The exact sum (an f64 sum of 2^21 values near 2^32 already rounds), rounded once, over n.
    let want = values.iter().map(|&x| x.to_f64() as i128).sum::<i128>() as f64 / n;
    let tolerance = 1e-12 * (want.abs() + 1.0);
    ((got - want).abs() > tolerance || got.is_nan())
        .then(|| format!("the mean of {} values is {got}, expected {want}", values.len()))
}

/// Every op and the mean of `values` at `offset`, in a guarded buffer: the answers, or why one was
/// wrong. An empty input's sum is the identity and its min, max and mean are errors.
fn all_ops<T: PropertyElement, L: FullReduction<T>>(
    device: &Device,
    launcher: &mut L,
    values: &[T],
    offset: usize,
) -> Result<(Vec<T>, Option<f64>), gpu_test::Failed> {
    let input = Guarded::input(device, values, offset)?;
    let view = input.view()?;
    let chain = launcher.addition_chain(values.len());
    let mut answers = Vec::new();
    for op in ReduceOp::ALL {
        launcher.poison_scratch(values.len())?;
        if values.is_empty() && op != ReduceOp::Sum {
            expect_bad_input(&format!("the {} of nothing", op.name()), launcher.reduce(op, view))?;
            continue;
        }
        let got = launcher.reduce(op, view)?;
        if let Some(why) = op_mismatch(op, values, got, chain) {
            return Err(format!("offset {offset}: {why}").into());
        }
        answers.push(got);
    }
    launcher.poison_scratch(values.len())?;
    let mean = if values.is_empty() {
        expect_bad_input("the mean of nothing", launcher.mean(view))?;
        None
    } else {
        let got = launcher.mean(view)?;
        if let Some(why) = mean_mismatch(values, got, chain) {
            return Err(format!("offset {offset}: {why}").into());
        }
        Some(got)
    };
    input.check_unchanged("the input")?;
    Ok((answers, mean))
}

fn typed_full_properties<F: FullReductionFamily, T: PropertyElement>(
    suite: TestSuite,
) -> TestSuite {
    let (tag, t) = (short_type_name::<F>(), T::SUFFIX);
    suite
        .gpu(format!("properties::{tag}::{t}::sum_min_max_mean_match_the_reference"), |device| {
            let launcher = RefCell::new(F::For::<T>::create(device)?);
            let inputs = props::input(
                reduction_sizes(device, &[]),
                7,
                T::sum_mixes(),
                T::arith_specials(),
                3,
            );
            props::check(device, CASES, inputs, |input: Input<T::Mix, T>| {
                all_ops(device, &mut *launcher.borrow_mut(), &input.values(), input.offset)
                    .map(drop)
            })
        })
        .gpu(format!("properties::{tag}::{t}::same_answers_at_any_offset"), |device| {
            let launcher = RefCell::new(F::For::<T>::create(device)?);
            let inputs = props::input(
                reduction_sizes(device, &[]),
                7,
                T::sum_mixes(),
                T::arith_specials(),
                3,
            );
            props::check(
                device,
                FEWER_CASES,
                (inputs, 0..8usize),
                |(input, other): (Input<T::Mix, T>, usize)| {
                    let values = input.values();
                    let mut launcher = launcher.borrow_mut();
                    let (a, mean_a) = all_ops(device, &mut *launcher, &values, input.offset)?;
                    let (b, mean_b) = all_ops(device, &mut *launcher, &values, other)?;
                    // Integer answers, f32 min and max, and f32 sums that every order gives alike
                    // must agree bit for bit (a rounded f32 sum may differ within its tolerance,
                    // checked).
                    let as_f32: Vec<f32> = values.iter().map(|&x| x.to_f64() as f32).collect();
                    let exact = !T::ROUNDS || order_free_sum(&as_f32).is_some();
                    let agree = a.iter().zip(&b).enumerate().all(|(i, (x, y))| {
                        (T::ROUNDS && same_value(x.to_f64() as f32, y.to_f64() as f32))
                            || x == y
                            || (i == 0 && !exact)
                    });
                    let means_agree = mean_a == mean_b
                        || !exact
                        || mean_a.zip(mean_b).is_some_and(|(x, y)| x.is_nan() && y.is_nan());
                    if !agree || !means_agree {
                        return Err(format!(
                        "offset {}: sum, min, max {a:?}, mean {mean_a:?}; offset {other}: {b:?}, \
                         mean {mean_b:?}",
                        input.offset
                    )
                    .into());
                    }
                    Ok(())
                },
            )
        })
}

/// Mixtures for dot products: products and their sums stay finite.
fn dot_mixes() -> BoxedStrategy<F32Mix> {
    prop_oneof![
        Just(F32Mix::Zeros),
        select(vec![0, -20, 30]).prop_map(|exponent| F32Mix::Exact { exponent }),
        Just(F32Mix::Uniform),
        Just(F32Mix::Wide { max_exponent: 60 }),
        Just(F32Mix::Skewed),
        Just(F32Mix::AllEqual(0.1)),
    ]
    .boxed()
}

fn full_properties<F: FullReductionFamily>(suite: TestSuite) -> TestSuite {
    let tag = short_type_name::<F>();
    let suite =
        typed_full_properties::<F, u32>(typed_full_properties::<F, i32>(typed_full_properties::<
            F,
            f32,
        >(suite)));
    suite
        .gpu(format!("properties::{tag}::f32::min_max_of_extreme_values"), |device| {
            let launcher = RefCell::new(F::For::<f32>::create(device)?);
            let inputs =
                props::input(reduction_sizes(device, &[]), 7, f32_value_mixes(), f32_specials(), 4);
            props::check(device, CASES, inputs, |input| {
                let values = input.values();
                let guarded = Guarded::input(device, &values, input.offset)?;
                let mut launcher = launcher.borrow_mut();
                for op in [ReduceOp::Min, ReduceOp::Max] {
                    launcher.poison_scratch(values.len())?;
                    let result = launcher.reduce(op, guarded.view()?);
                    if values.is_empty() {
                        expect_bad_input("the min or max of nothing", result)?;
                    } else if let Some(why) = op_mismatch(op, &values, result?, 0) {
                        return Err(why.into());
                    }
                }
                guarded.check_unchanged("the input")
            })
        })
        .gpu(format!("properties::{tag}::f32::dot_matches_the_reference"), |device| {
            let launcher = RefCell::new(F::For::<f32>::create(device)?);
            let sizes = reduction_sizes(device, &[]);
            let nan = select(vec![f32::NAN]);
            let vectors = (
                props::input(sizes, 7, dot_mixes(), nan.clone(), 1),
                dot_mixes(),
                any::<u64>(),
                0..8usize,
                0..4u8,
                0..100usize,
            );
            props::check(
                device,
                FEWER_CASES,
                vectors,
                |(a, b_mix, b_seed, b_offset, same_length, other_length)| {
                    let x = a.values();
                    // One case in four, the second vector has another length: an error.
                    let b_len = if same_length == 0 && other_length != x.len() {
                        other_length
                    } else {
                        x.len()
                    };
                    let y = Input {
                        len: b_len,
                        offset: b_offset,
                        mix: b_mix,
                        seed: b_seed,
                        specials: vec![],
                    }
                    .values();
                    let (ga, gb) = (
                        Guarded::input(device, &x, a.offset)?,
                        Guarded::input(device, &y, b_offset)?,
                    );
                    let result = F::dot(&mut launcher.borrow_mut(), ga.view()?, gb.view()?);
                    ga.check_unchanged("the first vector")?;
                    gb.check_unchanged("the second vector")?;
                    if x.len() != y.len() {
                        return expect_bad_input(
                            &format!("a dot product of lengths {} and {}", x.len(), y.len()),
                            result,
                        );
                    }
                    let got = result?;
                    let want: f64 =
                        x.iter().zip(&y).map(|(&p, &q)| f64::from(p) * f64::from(q)).sum();
                    if want.is_nan() {
                        return if got.is_nan() {
                            Ok(())
                        } else {
                            Err(format!("dot product {got}, expected NaN").into())
                        };
                    }
                    let tolerance =
                        dot_tolerance(&x, &y, launcher.borrow().addition_chain(x.len()));
                    let error = (f64::from(got) - want).abs();
                    if error.is_nan() || error > tolerance {
                        return Err(format!(
                            "dot product of {} {got}, expected {want} ± {tolerance:e}",
                            x.len()
                        )
                        .into());
                    }
                    Ok(())
                },
            )
        })
}

impl PropertySuites for TestSuite {
    fn sum_properties<R: SumReduction>(self) -> Self {
        sum_properties::<R>(self)
    }

    fn full_properties<F: FullReductionFamily>(self) -> Self {
        full_properties::<F>(self)
    }
}

/// Declares `$family`, the launcher `$launcher<T>` for every element type with its dot product,
/// for [`PropertySuites::full_properties`].
macro_rules! reduction_family {
    ($family:ident, $launcher:ident) => {
        /// The launcher for every element type, for the full-reduction properties.
        struct $family;

        impl reduction::suite::FullReductionFamily for $family {
            type For<T: reduction::ReduceElement> = $launcher<T>;

            fn dot(
                launcher: &mut $launcher<f32>,
                a: gpu_harness::DeviceView<'_, f32>,
                b: gpu_harness::DeviceView<'_, f32>,
            ) -> gpu_harness::Result<f32> {
                launcher.dot(a, b)
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use reduction_family;
