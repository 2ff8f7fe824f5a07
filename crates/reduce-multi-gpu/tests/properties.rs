//! reduce-multi-gpu's property tests (proptest, `gpu_test::props`), on worlds of 1 to 5 devices:
//! fresh CPU simulators on the simulator, the first 1 to 5 GPUs of `World::shared()` on a GPU
//! machine (as many as it has).
//!
//! - The scalar reductions (host-combined, across the GPUs by the ring, and by NCCL where it
//!   runs): sum, min and max of f32, i32 and u32 of drawn inputs split across the devices by
//!   `World::scatter` (no elements, one, fewer than the devices, not divisible by them, parts
//!   around a warp, a block and a wave of blocks; NaN with payloads, infinities, subnormals, -0.0,
//!   the largest magnitudes, integer extremes and wrap-around, all-equal and skewed data) against
//!   the CPU: f32 sums exactly where every order of additions gives the same sum, else within the
//!   bound of the per-device kernel's addition chain plus one addition per device; integer sums
//!   (wrapping), min and max exactly (NaN wins); every device holds the same total; the min and
//!   max of nothing are `BadInput`.
//! - The element-wise all-reduce of any `A: AllReduce<T>` ([`all_reduce_property`], here for the
//!   ring and NCCL): drawn buffers of one length per device (around 0, 1, the device count, 4k ± 1
//!   for vector loads, a few thousand), every operation, every element of every device's buffer
//!   against the CPU, f32 sums the same bits on every device; a second call queued right behind
//!   the first, on its results, must combine what the first left.
//! - Bad input ([`bad_input_property`]): buffers of unequal lengths, too few or too many, one on
//!   another device of the world or on a device outside it, a launcher made for another world: a
//!   `BadInput` error, never a panic or a wrong answer, and the launcher still works afterwards.
//!
//! A failure prints its smallest input and the seed:
//! `TEST_SEED=<seed> cargo test -p reduce-multi-gpu --test properties` replays it.

use std::cell::RefCell;

use gpu_harness::{Device, DeviceBuffer, DeviceView, Result};
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::sample::select;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{self, Drawn, Input, Word, expect_bad_input, order_free_sum, same_value};
use gpu_test::{TestResult, TestSuite};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use reduce_atomic::DeterministicReduce;
use reduce_multi_gpu::{
    AcrossGpus, AllReduce, BySize, HostCombined, Nccl, OneShot, Ring, TwoShot, TwoShotWrites,
    World, nccl_missing, part_range, peer_kernels_missing, ring, views,
};
use reduction::full::reference;
use reduction::reference::{sum_bound, sum_f64};
use reduction::{FullReduction, ReduceElement, ReduceOp};

/// Cases of the scalar properties (on a GPU, on the simulator).
const SCALAR_CASES: (u32, u32) = (256, 128);
/// Cases of the all-reduce properties (on a GPU, on the simulator).
const ALL_REDUCE_CASES: (u32, u32) = (256, 128);
/// Cases of the bad-input properties (on a GPU, on the simulator).
const BAD_INPUT_CASES: (u32, u32) = (128, 64);

/// The most devices in a world the properties draw.
const MAX_DEVICES: usize = 5;

/// The element types (f32, i32, u32), with the shared mixtures.
pub trait Element: ReduceElement + Drawn {}
impl<T: ReduceElement + Drawn> Element for T {}

/// Worlds of 1 to 5 devices: fresh CPU simulators on the simulator; on a GPU machine the first
/// 1 to 5 GPUs of [`World::shared`] (as many as there are).
fn worlds(device: &Device) -> Result<Vec<World>> {
    if device.is_simulated() {
        return (1..=MAX_DEVICES).map(World::simulated).collect();
    }
    let all = World::shared()?;
    (1..=MAX_DEVICES.min(all.len())).map(|n| all.first(n)).collect()
}

/// Why `got` is not `op` of `values`, or `None`. An f32 sum must be exactly [`order_free_sum`]
/// where every order of additions gives the same one (NaN, an infinity, an exact sum), else
/// within [`sum_bound`] of the f64 sum for a computation in which no value goes through more than
/// `chain` additions. Integer sums wrap; min and max are exact, a NaN wins.
fn mismatch<T: ReduceElement>(op: ReduceOp, values: &[T], got: T, chain: u64) -> Option<String> {
    if T::ROUNDS && op == ReduceOp::Sum {
        let values: Vec<f32> = values.iter().map(|&x| x.to_f64() as f32).collect();
        let got = got.to_f64() as f32;
        return match order_free_sum(&values) {
            Some(want) if same_value(got, want) => None,
            Some(want) => Some(format!(
                "the sum is {got:e}, expected exactly {want:e} (any order of additions gives it)"
            )),
            None => {
                let want = sum_f64(&values);
                let bound = sum_bound(chain, values.iter().map(|&x| f64::from(x).abs()).sum());
                let error = (f64::from(got) - want).abs();
                (error.is_nan() || error > bound).then(|| {
                    format!(
                        "the sum is {got:e}, expected {want:e} ± {bound:e} (chain of \
                                      {chain} additions)"
                    )
                })
            }
        };
    }
    let want = reference(op, values);
    let same =
        if T::ROUNDS { same_value(got.to_f64() as f32, want.to_f64() as f32) } else { got == want };
    (!same).then(|| format!("the {} is {got:?}, expected {want:?}", op.name()))
}

/// A scalar reduction across a world, as the properties drive it.
trait Scalar<T: ReduceElement>: Sized {
    const NAME: &'static str;
    fn make(world: &World) -> Result<Self>;
    fn reduce(&mut self, world: &World, op: ReduceOp, parts: &[DeviceView<'_, T>]) -> Result<T>;
    /// Every device's copy of the last total (none for the host combine).
    fn totals(&self) -> Result<Vec<T>>;
}

impl<T: ReduceElement> Scalar<T> for HostCombined<T> {
    const NAME: &'static str = "host_combined";
    fn make(world: &World) -> Result<Self> {
        HostCombined::new(world)
    }
    fn reduce(&mut self, world: &World, op: ReduceOp, parts: &[DeviceView<'_, T>]) -> Result<T> {
        HostCombined::reduce(self, world, op, parts)
    }
    fn totals(&self) -> Result<Vec<T>> {
        Ok(Vec::new())
    }
}

impl<T: ReduceElement, A: AllReduce<T>> Scalar<T> for AcrossGpus<T, A> {
    const NAME: &'static str = A::STEP;
    fn make(world: &World) -> Result<Self> {
        AcrossGpus::new(world)
    }
    fn reduce(&mut self, world: &World, op: ReduceOp, parts: &[DeviceView<'_, T>]) -> Result<T> {
        AcrossGpus::reduce(self, world, op, parts)
    }
    fn totals(&self) -> Result<Vec<T>> {
        AcrossGpus::totals(self)
    }
}

/// Lengths of a scalar reduction over `n` devices: nothing, one element, fewer than the devices,
/// as many, one more, not divisible by them; parts of a warp, a block and one or four waves of
/// blocks (`wave` elements) per device, give or take one; any length up to `max`.
fn scalar_lengths(n: usize, wave: usize, max: usize) -> BoxedStrategy<usize> {
    props::sizes(&[1, n, 2 * n, 32 * n, 256 * n, 1024 * n, wave * n, 4 * wave * n], max)
}

/// The mixtures of an operation's inputs: sums' (finite in f32) with NaN, infinities, -0.0 and
/// integer extremes; every magnitude for min and max.
fn op_inputs<T: Element>(
    op: ReduceOp,
    lengths: BoxedStrategy<usize>,
) -> BoxedStrategy<Input<T::Mix, T>> {
    match op {
        ReduceOp::Sum => props::input(lengths, 0, T::sum_mixes(), T::arith_specials(), 3),
        _ => props::input(lengths, 0, T::value_mixes(), T::specials(), 3),
    }
}

/// The scalar reduction `S` of f32, i32 or u32: every operation on drawn inputs split across a
/// world of 1 to 5 devices matches the CPU, every device holds the same total, and the min and
/// max of nothing are errors.
fn scalar_property<T: Element, S: Scalar<T>>(device: &Device) -> TestResult {
    let worlds = worlds(device)?;
    let steps: Vec<RefCell<S>> =
        worlds.iter().map(|w| S::make(w).map(RefCell::new)).collect::<Result<_>>()?;
    let per_device = DeterministicReduce::<T>::create(&worlds[0].devices()[0])?;
    let counts: Vec<usize> = worlds.iter().map(World::len).collect();
    let (wave, max) = (device.facts().shape().threads_in_one_wave(256), props::max_len(device));
    let cases = (0..worlds.len(), select(ReduceOp::ALL.to_vec())).prop_flat_map(move |(w, op)| {
        (Just(w), Just(op), op_inputs::<T>(op, scalar_lengths(counts[w], wave, max)))
    });
    props::check(device, SCALAR_CASES, cases, |(w, op, input)| {
        let (world, n) = (&worlds[w], worlds[w].len());
        let values = input.values();
        let parts = world.scatter(&values)?;
        let what = format!(
            "{} {}<{}> of {} elements on {n} devices",
            S::NAME,
            op.name(),
            T::SUFFIX,
            values.len()
        );
        let mut step = steps[w].borrow_mut();
        let result = step.reduce(world, op, &views(&parts));
        if values.is_empty() && op != ReduceOp::Sum {
            return expect_bad_input(&what, result);
        }
        let got = result?;
        // Each part's tree, then at most one addition per device to combine the parts.
        let parts_chain = (0..n)
            .map(|k| part_range(values.len(), n, k).len())
            .filter(|&len| len > 0)
            .map(|len| per_device.addition_chain(len))
            .max()
            .unwrap_or(0);
        if let Some(why) = mismatch(op, &values, got, parts_chain + n as u64) {
            return Err(format!("{what}: {why}").into());
        }
        for (k, total) in step.totals()?.into_iter().enumerate() {
            if !total.same_bits(got) {
                return Err(format!("{what}: device {k} holds {total:?}, device 0 {got:?}").into());
            }
        }
        Ok(())
    })
}

/// Lengths of an all-reduce's buffers over `n` devices: none, one, around the device count,
/// 4k ± 1 (vector loads), a block per device, a few thousand; any length up to 6,000 on the
/// simulator and 2^21 on a GPU, where one case in sixteen has chunks just past one and two pieces.
fn all_reduce_lengths<T>(device: &Device, n: usize) -> BoxedStrategy<usize> {
    let max = if device.is_simulated() { 6000 } else { props::max_len(device) };
    let near = props::sizes(&[1, n, 4, 8, 4 * n, 8 * n, 256 * n, 1024, 4096], max);
    if device.is_simulated() {
        return near;
    }
    let piece = n * (ring::PIECE_BYTES / std::mem::size_of::<T>());
    prop_oneof![15 => near, 1 => select(vec![piece - 1, piece + 1, 2 * piece + n + 1])].boxed()
}

/// One all-reduce case: a world (by index), an operation, each device's input (all of one length),
/// and whether each device copies its result aside on its own stream between the two calls.
type AllReduceCase<T> = (usize, ReduceOp, Vec<Input<<T as Drawn>::Mix, T>>, bool);

fn all_reduce_cases<T: Element>(
    device: &Device,
    worlds: &[World],
) -> BoxedStrategy<AllReduceCase<T>> {
    let counts: Vec<usize> = worlds.iter().map(World::len).collect();
    let device = device.clone();
    // The length is drawn beside the recipes, not before them, so that a failure shrinks it
    // without drawing new values.
    (0..worlds.len(), select(ReduceOp::ALL.to_vec()))
        .prop_flat_map(move |(w, op)| {
            let n = counts[w];
            let recipes = prop::collection::vec(op_inputs::<T>(op, Just(0).boxed()), n);
            (Just(w), Just(op), all_reduce_lengths::<T>(&device, n), recipes, any::<bool>())
        })
        .prop_map(|(w, op, len, recipes, snapshot)| {
            let inputs = recipes.into_iter().map(|recipe| Input { len, ..recipe }).collect();
            (w, op, inputs, snapshot)
        })
        .boxed()
}

/// Checks every device's buffer (`outputs`) after an all-reduce of `inputs` (one per device),
/// each input counted `copies` times, no value through more than `chain` additions: every element
/// against the CPU, and f32 sums the same bits on every device.
fn check_all_reduced<T: ReduceElement + Word>(
    what: &str,
    op: ReduceOp,
    inputs: &[Vec<T>],
    copies: usize,
    chain: u64,
    outputs: &[Vec<T>],
) -> TestResult {
    let len = inputs[0].len();
    let mut column = Vec::with_capacity(inputs.len() * copies);
    for i in 0..len {
        column.clear();
        for _ in 0..copies {
            column.extend(inputs.iter().map(|input| input[i]));
        }
        for (k, output) in outputs.iter().enumerate() {
            // A sum must be device 0's bits (checked once against the CPU, which is the slow part).
            if k > 0 && op == ReduceOp::Sum {
                if !output[i].same_bits(outputs[0][i]) {
                    return Err(format!(
                        "{what}: element {i} of {len} is {:?} on device {k}, {:?} on device 0",
                        output[i], outputs[0][i]
                    )
                    .into());
                }
                continue;
            }
            if let Some(why) = mismatch(op, &column, output[i], chain) {
                return Err(format!(
                    "{what}: element {i} of {len} on device {k}: {why} (inputs {column:?})"
                )
                .into());
            }
        }
    }
    Ok(())
}

/// Every device's buffer, read back.
fn read_all<T: ReduceElement>(buffers: &[DeviceBuffer<T>]) -> Result<Vec<Vec<T>>> {
    buffers.iter().map(DeviceBuffer::to_host).collect()
}

/// Uploads `inputs[k]` to device k of `world`.
fn upload<T: ReduceElement>(world: &World, inputs: &[Vec<T>]) -> Result<Vec<DeviceBuffer<T>>> {
    world.devices().iter().zip(inputs).map(|(device, input)| device.upload(input)).collect()
}

/// The element-wise all-reduce of `A` on `worlds` (one `A` per world, kept across cases, so that
/// state left by one length shows at the next), `cases` cases (on a GPU, on the simulator): random
/// buffers of one length per device, every operation; every element of every device's buffer
/// matches the CPU (f32 sums within the bound of `2n` additions, the same bits on every device);
/// a second call queued right behind the first, on its results, combines what the first left.
/// Half the cases copy each device's result aside on its own stream between the calls and check
/// both; the others queue the calls with nothing between and check the second against the inputs
/// counted n times.
pub fn all_reduce_property<T: Element, A: AllReduce<T>>(
    worlds: &[World],
    cases: (u32, u32),
) -> TestResult {
    let device = &worlds[0].devices()[0];
    let launchers: Vec<RefCell<A>> =
        worlds.iter().map(|w| A::new(w).map(RefCell::new)).collect::<Result<_>>()?;
    props::check(
        device,
        cases,
        all_reduce_cases::<T>(device, worlds),
        |(w, op, inputs, snapshot)| {
            let world = &worlds[w];
            let n = world.len();
            let inputs: Vec<Vec<T>> = inputs.iter().map(Input::values).collect();
            let len = inputs[0].len();
            let what = format!(
                "{} all-reduce {}<{}> of {len} elements on {n} devices",
                A::STEP,
                op.name(),
                T::SUFFIX
            );
            let mut all_reduce = launchers[w].borrow_mut();
            let mut buffers = upload(world, &inputs)?;
            all_reduce.all_reduce(world, op, &mut buffers)?;
            let mut aside: Vec<DeviceBuffer<T>> = Vec::new();
            if snapshot {
                for (device, buffer) in world.devices().iter().zip(&buffers) {
                    let mut copy = device.upload(&vec![T::poison(); len])?;
                    device.copy(buffer.as_view(), &mut copy)?;
                    aside.push(copy);
                }
            }
            all_reduce.all_reduce(world, op, &mut buffers)?;
            let second = read_all(&buffers)?;
            let chain = n as u64;
            if snapshot {
                let first = read_all(&aside)?;
                check_all_reduced(&what, op, &inputs, 1, chain, &first)?;
                check_all_reduced(
                    &format!("{what}, called again on its results"),
                    op,
                    &first,
                    1,
                    chain,
                    &second,
                )
            } else {
                check_all_reduced(
                    &format!("{what}, called twice"),
                    op,
                    &inputs,
                    n,
                    2 * chain,
                    &second,
                )
            }
        },
    )
}

/// What is wrong with an all-reduce's buffers, or with a scalar reduction's parts.
#[derive(Debug, Clone)]
enum Fault {
    /// Buffer `device` is `by` elements longer (or shorter, where it can be) than the others.
    Length { device: usize, longer: bool, by: usize },
    /// `count` buffers in a world of another number of devices.
    Count(usize),
    /// Buffer `device` is on device `(device + shift) % n` of the world.
    Misplaced { device: usize, shift: usize },
    /// Buffer `device` is on a CPU simulator outside the world.
    Stranger { device: usize },
    /// The launcher was made for world `other` (of another size).
    OtherWorld(usize),
}

/// The faults a world of `n` devices (index `w` of `worlds` worlds) can have.
fn faults(w: usize, n: usize, worlds: usize) -> BoxedStrategy<Fault> {
    let counts: Vec<usize> = (0..=n + 2).filter(|&c| c != n).collect();
    let mut faults = vec![
        select(counts).prop_map(Fault::Count).boxed(),
        (0..n).prop_map(|device| Fault::Stranger { device }).boxed(),
    ];
    if n > 1 {
        faults.push(
            (0..n, any::<bool>(), 1..=3usize)
                .prop_map(|(device, longer, by)| Fault::Length { device, longer, by })
                .boxed(),
        );
        faults.push(
            (0..n, 1..n).prop_map(|(device, shift)| Fault::Misplaced { device, shift }).boxed(),
        );
    }
    if worlds > 1 {
        let others: Vec<usize> = (0..worlds).filter(|&o| o != w).collect();
        faults.push(select(others).prop_map(Fault::OtherWorld).boxed());
    }
    prop::strategy::Union::new(faults).boxed()
}

/// A world (by index), a fault, a length up to 40 and a seed for the values.
fn bad_input_cases(worlds: &[World]) -> BoxedStrategy<(usize, Fault, usize, u64)> {
    let counts: Vec<usize> = worlds.iter().map(World::len).collect();
    (0..counts.len())
        .prop_flat_map(move |w| {
            (Just(w), faults(w, counts[w], counts.len()), 0..40usize, any::<u64>())
        })
        .boxed()
}

/// Buffers of `len` elements per device of `world`, with `fault`, drawn from `seed` (`stranger` is
/// a device outside the world). Returns the buffers and the world to call with (the world the
/// launcher was made for, or another one).
fn faulty_buffers<T: ReduceElement>(
    worlds: &[World],
    w: usize,
    len: usize,
    fault: &Fault,
    seed: u64,
    stranger: &Device,
) -> Result<(Vec<DeviceBuffer<T>>, usize)> {
    let world = &worlds[w];
    let n = world.len();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut target = w;
    let mut placed: Vec<(Device, usize)> =
        world.devices().iter().map(|d| (d.clone(), len)).collect();
    match *fault {
        Fault::Length { device, longer, by } => {
            placed[device].1 = if longer || len < by { len + by } else { len - by };
        }
        Fault::Count(count) => {
            placed = (0..count).map(|k| (world.devices()[k % n].clone(), len)).collect();
        }
        Fault::Misplaced { device, shift } => {
            placed[device].0 = world.devices()[(device + shift) % n].clone()
        }
        Fault::Stranger { device } => placed[device].0 = stranger.clone(),
        Fault::OtherWorld(other) => {
            target = other;
            placed = worlds[other].devices().iter().map(|d| (d.clone(), len)).collect();
        }
    }
    let buffers = placed
        .iter()
        .map(|(device, len)| device.upload(&T::random(&mut rng, *len)))
        .collect::<Result<_>>()?;
    Ok((buffers, target))
}

/// Bad input to the all-reduce `A` and to the scalar reduction across the GPUs by `A`, on
/// `worlds`: buffers (or parts) of unequal lengths (all-reduce only), too few or too many, one on
/// another device of the world or on a CPU simulator outside it, a launcher made for another
/// world. Each is a `BadInput` error, never a panic, and the launchers then still give the right
/// answers on good input.
pub fn bad_input_property<T: Element, A: AllReduce<T>>(
    worlds: &[World],
    cases: (u32, u32),
) -> TestResult {
    let device = &worlds[0].devices()[0];
    let stranger = Device::simulator()?;
    let all_reduces: Vec<RefCell<A>> =
        worlds.iter().map(|w| A::new(w).map(RefCell::new)).collect::<Result<_>>()?;
    let scalars: Vec<RefCell<AcrossGpus<T, A>>> =
        worlds.iter().map(|w| AcrossGpus::new(w).map(RefCell::new)).collect::<Result<_>>()?;
    let strategy = bad_input_cases(worlds);
    props::check(device, cases, strategy, |(w, fault, len, seed)| {
        let world = &worlds[w];
        let n = world.len();
        let what = format!("{} on {n} devices, {len} elements, {fault:?}", A::STEP);
        let (mut buffers, target) = faulty_buffers::<T>(worlds, w, len, &fault, seed, &stranger)?;
        let mut all_reduce = all_reduces[w].borrow_mut();
        let result = all_reduce.all_reduce(&worlds[target], ReduceOp::Sum, &mut buffers);
        expect_bad_input(&format!("all-reduce: {what}"), result)?;
        if !matches!(fault, Fault::Length { .. }) {
            let mut scalar = scalars[w].borrow_mut();
            let result = scalar.reduce(&worlds[target], ReduceOp::Sum, &views(&buffers));
            expect_bad_input(&format!("reduction: {what}"), result)?;
        }
        // The launchers still work.
        let inputs: Vec<Vec<T>> = (0..n)
            .map(|k| T::random(&mut SmallRng::seed_from_u64(seed.wrapping_add(k as u64 + 1)), len))
            .collect();
        let mut good = upload(world, &inputs)?;
        all_reduce.all_reduce(world, ReduceOp::Sum, &mut good)?;
        check_all_reduced(
            &format!("all-reduce after {what}"),
            ReduceOp::Sum,
            &inputs,
            1,
            n as u64,
            &read_all(&good)?,
        )?;
        let host: Vec<T> = inputs.concat();
        let got =
            scalars[w].borrow_mut().reduce(world, ReduceOp::Sum, &views(&world.scatter(&host)?))?;
        let chain = DeterministicReduce::<T>::create(&world.devices()[0])?
            .addition_chain(host.len())
            + n as u64;
        match mismatch(ReduceOp::Sum, &host, got, chain) {
            Some(why) => Err(format!("reduction after {what}: {why}").into()),
            None => Ok(()),
        }
    })
}

/// The host-combined reduction's bad input: too few or too many parts, one on another device of
/// the world or outside it, a launcher made for another world.
fn host_combined_bad_input<T: Element>(device: &Device) -> TestResult {
    let worlds = worlds(device)?;
    let stranger = Device::simulator()?;
    let steps: Vec<RefCell<HostCombined<T>>> =
        worlds.iter().map(|w| HostCombined::new(w).map(RefCell::new)).collect::<Result<_>>()?;
    let cases = bad_input_cases(&worlds)
        .prop_filter("parts may differ in length", |(_, fault, _, _)| {
            !matches!(fault, Fault::Length { .. })
        });
    props::check(device, BAD_INPUT_CASES, cases, |(w, fault, len, seed)| {
        let what =
            format!("host-combined on {} devices, {len} elements, {fault:?}", worlds[w].len());
        let (buffers, target) = faulty_buffers::<T>(&worlds, w, len, &fault, seed, &stranger)?;
        let result = steps[w].borrow_mut().reduce(&worlds[target], ReduceOp::Sum, &views(&buffers));
        expect_bad_input(&what, result)
    })
}

/// Adds the all-reduce properties of `A` on element type `T` ([`all_reduce_property`] and
/// [`bad_input_property`]) on the worlds of 1 to 5 devices, ignored with the reason where
/// `requirement` (asked of `World::shared()`) says `A` cannot run.
pub fn all_reduce_tests<T: Element, A: AllReduce<T> + 'static>(
    suite: TestSuite,
    requirement: fn(&World) -> Option<String>,
) -> TestSuite {
    let step = A::STEP.replace('-', "_");
    let needs = move |_: &Device| match World::shared() {
        Ok(world) => requirement(&world),
        Err(e) => Some(e.to_string()),
    };
    suite
        .gpu_if(format!("properties::{step}::all_reduce_{}", T::SUFFIX), needs, |device| {
            all_reduce_property::<T, A>(&worlds(device)?, ALL_REDUCE_CASES)
        })
        .gpu_if(format!("properties::{step}::bad_input_{}", T::SUFFIX), needs, |device| {
            bad_input_property::<T, A>(&worlds(device)?, BAD_INPUT_CASES)
        })
}

/// Adds the scalar property of step `S` on element type `T`.
fn scalar_tests<T: Element, S: Scalar<T> + 'static>(
    suite: TestSuite,
    requirement: fn(&World) -> Option<String>,
) -> TestSuite {
    let needs = move |_: &Device| match World::shared() {
        Ok(world) => requirement(&world),
        Err(e) => Some(e.to_string()),
    };
    suite.gpu_if(format!("properties::{}::sum_min_max_{}", S::NAME, T::SUFFIX), needs, |device| {
        scalar_property::<T, S>(device)
    })
}

/// Runs anywhere.
fn anywhere(_: &World) -> Option<String> {
    None
}

/// Needs NCCL (and GPUs).
fn needs_nccl(world: &World) -> Option<String> {
    nccl_missing(world)
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new();
    suite = scalar_tests::<f32, HostCombined<f32>>(suite, anywhere);
    suite = scalar_tests::<i32, HostCombined<i32>>(suite, anywhere);
    suite = scalar_tests::<u32, HostCombined<u32>>(suite, anywhere);
    suite = scalar_tests::<f32, AcrossGpus<f32, Ring<f32>>>(suite, anywhere);
    suite = scalar_tests::<i32, AcrossGpus<i32, Ring<i32>>>(suite, anywhere);
    suite = scalar_tests::<u32, AcrossGpus<u32, Ring<u32>>>(suite, anywhere);
    suite = scalar_tests::<f32, AcrossGpus<f32, Nccl<f32>>>(suite, needs_nccl);
    suite = scalar_tests::<i32, AcrossGpus<i32, Nccl<i32>>>(suite, needs_nccl);
    suite = scalar_tests::<u32, AcrossGpus<u32, Nccl<u32>>>(suite, needs_nccl);
    suite = all_reduce_tests::<f32, Ring<f32>>(suite, anywhere);
    suite = all_reduce_tests::<i32, Ring<i32>>(suite, anywhere);
    suite = all_reduce_tests::<u32, Ring<u32>>(suite, anywhere);
    suite = all_reduce_tests::<f32, Nccl<f32>>(suite, needs_nccl);
    suite = all_reduce_tests::<i32, Nccl<i32>>(suite, needs_nccl);
    suite = all_reduce_tests::<u32, Nccl<u32>>(suite, needs_nccl);
    suite = all_reduce_tests::<f32, OneShot<f32>>(suite, peer_kernels_missing);
    suite = all_reduce_tests::<u32, OneShot<u32>>(suite, peer_kernels_missing);
    suite = all_reduce_tests::<f32, TwoShot<f32>>(suite, peer_kernels_missing);
    suite = all_reduce_tests::<i32, TwoShot<i32>>(suite, peer_kernels_missing);
    suite = all_reduce_tests::<f32, TwoShotWrites<f32>>(suite, peer_kernels_missing);
    suite = all_reduce_tests::<u32, TwoShotWrites<u32>>(suite, peer_kernels_missing);
    suite = all_reduce_tests::<f32, BySize<f32>>(suite, peer_kernels_missing);
    suite = suite.gpu("properties::host_combined::bad_input", |device| {
        host_combined_bad_input::<f32>(device)?;
        host_combined_bad_input::<u32>(device)
    });
    suite.run()
}
