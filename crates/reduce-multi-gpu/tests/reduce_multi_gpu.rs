//! reduce-multi-gpu's tests: the three steps' sum, min and max of f32, i32 and u32 against a CPU
//! reference (exact for integers, within tolerance for f32 sums) at sizes 0, 1, smaller than the
//! number of GPUs, not divisible by it, around a block and large; NaN, wrap-around, more than 2^32
//! elements; the buffer all-reduce of NCCL and of the ring; a world of one; bad input; the ring's
//! schedule and the split, without a GPU; the one-shot and two-shot all-reduces (kernels launched
//! together on every device, meeting at flags in each other's memory), also on a simulated world.
//!
//! `World::shared()` is every GPU of the machine, or two simulated devices on the CPU simulator
//! (where the NCCL tests are ignored with the reason).

use gpu_harness::{Device, DeviceBuffer, GpuError};
use gpu_test::{Failed, TestResult, TestRng, TestSuite, on_threads, test_size};
use reduce_multi_gpu::{
    AcrossGpus, Algorithm, AllReduce, BySize, HostCombined, Nccl, OneShot, Queue, Ring, RingOp,
    Signal, TwoShot, TwoShotWrites, World, all_reduce_plan, nccl_missing, part_range,
    peer_kernels_missing, ring, ring_plan, ring_schedule, shots, views,
};
use reduction::reference::sum_tolerance;
use reduction::{ReduceElement, ReduceOp};

/// Equal, or both NaN.
fn same<T: ReduceElement>(a: T, b: T) -> bool {
    a == b || (a.to_f64().is_nan() && b.to_f64().is_nan())
}

/// Checks `got`, the `op` of `host` across a world of `gpus`, against the CPU reference: exact,
/// except f32 sums, which are within the single-pass kernel's tolerance plus one rounding per GPU.
fn check<T: ReduceElement>(
    rng: &TestRng,
    what: &str,
    op: ReduceOp,
    host: &[T],
    gpus: usize,
    got: T,
) -> TestResult {
    if T::ROUNDS && op == ReduceOp::Sum {
        let reference: f64 = host.iter().map(|x| x.to_f64()).sum();
        let magnitude: f64 = host.iter().map(|x| x.to_f64().abs()).sum();
        let tolerance = sum_tolerance(host.len(), magnitude)
            + f64::from(f32::EPSILON) * gpus as f64 * magnitude;
        if (got.to_f64() - reference).abs() <= tolerance
            || (got.to_f64().is_nan() && reference.is_nan())
        {
            return Ok(());
        }
        return Err(rng.fail(format!(
            "{what}: got {got:?}, reference {reference} (tolerance {tolerance:e})"
        )));
    }
    let reference = reduction::full::reference(op, host);
    if same(got, reference) {
        return Ok(());
    }
    Err(rng.fail(format!("{what}: got {got:?}, expected {reference:?}")))
}

/// A scalar reduction across a world: the three steps, as the tests drive them.
trait Step<T: ReduceElement>: Sized {
    const NAME: &'static str;
    fn make(world: &World) -> gpu_harness::Result<Self>;
    fn reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        parts: &[gpu_harness::DeviceView<'_, T>],
    ) -> gpu_harness::Result<T>;
    /// Every GPU's copy of the total, where the step leaves one on each.
    fn totals(&self) -> gpu_harness::Result<Vec<T>>;
}

impl<T: ReduceElement> Step<T> for HostCombined<T> {
    const NAME: &'static str = "host-combined";
    fn make(world: &World) -> gpu_harness::Result<Self> {
        HostCombined::new(world)
    }
    fn reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        parts: &[gpu_harness::DeviceView<'_, T>],
    ) -> gpu_harness::Result<T> {
        HostCombined::reduce(self, world, op, parts)
    }
    fn totals(&self) -> gpu_harness::Result<Vec<T>> {
        Ok(Vec::new())
    }
}

impl<T: ReduceElement, A: AllReduce<T>> Step<T> for AcrossGpus<T, A> {
    const NAME: &'static str = A::STEP;
    fn make(world: &World) -> gpu_harness::Result<Self> {
        AcrossGpus::new(world)
    }
    fn reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        parts: &[gpu_harness::DeviceView<'_, T>],
    ) -> gpu_harness::Result<T> {
        AcrossGpus::reduce(self, world, op, parts)
    }
    fn totals(&self) -> gpu_harness::Result<Vec<T>> {
        AcrossGpus::totals(self)
    }
}

/// The sizes every step is checked at: 1, fewer elements than GPUs, as many, one more, around a
/// warp and a block, a prime, and (on a GPU) past one wave of blocks.
fn sizes(device: &Device, gpus: usize) -> Vec<usize> {
    let mut sizes =
        vec![1, gpus.saturating_sub(1).max(1), gpus, gpus + 1, 31, 32, 33, 255, 256, 257, 100_003];
    sizes.push(test_size(device, 3_000_017, 200_003));
    sizes
}

/// Reduces `host` split across the world with step `S`, checks the result and every GPU's total.
fn reduce_and_check<T: ReduceElement, S: Step<T>>(
    rng: &TestRng,
    world: &World,
    step: &mut S,
    op: ReduceOp,
    host: &[T],
) -> TestResult {
    let parts = world.scatter(host)?;
    let got = step.reduce(world, op, &views(&parts))?;
    let what = format!(
        "{} {}<{}> of {} elements on {} devices",
        S::NAME,
        op.name(),
        T::SUFFIX,
        host.len(),
        world.len()
    );
    check(rng, &what, op, host, world.len(), got)?;
    for (k, total) in step.totals()?.into_iter().enumerate() {
        if !same(total, got) {
            return Err(rng.fail(format!("{what}: device {k} holds {total:?}, device 0 {got:?}")));
        }
    }
    Ok(())
}

/// Every operation on random data at every size, the sum of nothing, and (f32) NaN and infinities.
fn scalar_suite<T: ReduceElement, S: Step<T>>(world: &World) -> TestResult {
    let mut rng = TestRng::new();
    let device = &world.devices()[0];
    let mut step = S::make(world)?;
    for n in sizes(device, world.len()) {
        let host = T::random(rng.rng(), n);
        for op in ReduceOp::ALL {
            reduce_and_check(&rng, world, &mut step, op, &host)?;
        }
    }
    // The sum of nothing is 0; its min and max are errors.
    let empty = world.scatter::<T>(&[])?;
    let sum = step.reduce(world, ReduceOp::Sum, &views(&empty))?;
    if !same(sum, T::identity(ReduceOp::Sum)) {
        return Err(rng.fail(format!("sum of nothing: {sum:?}")));
    }
    match step.reduce(world, ReduceOp::Min, &views(&empty)) {
        Err(GpuError::BadInput(_)) => Ok(()),
        other => Err(rng.fail(format!("min of nothing: {other:?}, expected BadInput"))),
    }
}

/// f32 specials: a NaN on the last GPU's part wins min and max; infinities; -0.0.
fn f32_specials<S: Step<f32>>(world: &World) -> TestResult {
    let rng = TestRng::new();
    let mut step = S::make(world)?;
    let n = 10_007;
    let mut host: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    host[n - 3] = f32::NAN;
    for op in ReduceOp::ALL {
        reduce_and_check(&rng, world, &mut step, op, &host)?;
    }
    let mut infinite = vec![1.0f32; n];
    infinite[0] = f32::INFINITY;
    infinite[n - 1] = f32::NEG_INFINITY;
    for op in ReduceOp::ALL {
        reduce_and_check(&rng, world, &mut step, op, &infinite)?;
    }
    reduce_and_check(&rng, world, &mut step, ReduceOp::Max, &[-0.0f32; 7])
}

/// u32 and i32 sums that wrap around 2^32 within one GPU's part and across GPUs.
fn wrap_around<S: Step<u32>>(world: &World) -> TestResult {
    let rng = TestRng::new();
    let mut step = S::make(world)?;
    for n in [5usize, 4099] {
        reduce_and_check(&rng, world, &mut step, ReduceOp::Sum, &vec![u32::MAX - 1; n])?;
    }
    Ok(())
}

/// The bytes of a plain numeric value (f32, i32, u32), to compare bits, -0.0 and NaNs included.
fn bytes_of<T: ReduceElement>(value: &T) -> &[u8] {
    unsafe {
        std::slice::from_raw_parts((value as *const T).cast::<u8>(), std::mem::size_of::<T>())
    }
}

/// Every GPU's buffer after an all-reduce against the element-wise CPU reference.
fn check_all_reduce<T: ReduceElement>(
    rng: &TestRng,
    what: &str,
    op: ReduceOp,
    inputs: &[Vec<T>],
    buffers: &[DeviceBuffer<T>],
) -> TestResult {
    let len = inputs[0].len();
    let first = buffers[0].to_host()?;
    let mut column = Vec::with_capacity(inputs.len());
    for (i, &got) in first.iter().enumerate() {
        column.clear();
        column.extend(inputs.iter().map(|input| input[i]));
        if check(rng, what, op, &column, inputs.len(), got).is_err() {
            return check(
                rng,
                &format!("{what}, element {i} on device 0"),
                op,
                &column,
                inputs.len(),
                got,
            );
        }
    }
    for (k, buffer) in buffers.iter().enumerate().skip(1) {
        let got = buffer.to_host()?;
        // Every GPU ends with the same bits (data-parallel training relies on it).
        if let Some(i) = (0..len).find(|&i| bytes_of(&got[i]) != bytes_of(&first[i])) {
            return Err(rng.fail(format!(
                "{what}: element {i} is {:?} on device {k}, {:?} on device 0",
                got[i], first[i]
            )));
        }
    }
    Ok(())
}

/// The buffer all-reduce of `A` at lengths around the number of GPUs, a block and (on a GPU) past
/// several pieces per chunk; every operation; two calls queued back to back.
fn all_reduce_suite<T: ReduceElement, A: AllReduce<T>>(world: &World) -> TestResult {
    let mut rng = TestRng::new();
    let device = &world.devices()[0];
    let mut all_reduce = A::new(world)?;
    let gpus = world.len();
    let several_pieces = ring::PIECE_BYTES / std::mem::size_of::<T>() * gpus * 2 + 13;
    let mut lengths =
        vec![1, gpus.saturating_sub(1).max(1), gpus, gpus + 1, 4, 5, 31, 257, 1023, 1025, 65_537];
    lengths.push(test_size(device, several_pieces, 100_003));
    for len in lengths {
        for op in ReduceOp::ALL {
            let inputs: Vec<Vec<T>> = (0..gpus).map(|_| T::random(rng.rng(), len)).collect();
            let mut buffers: Vec<DeviceBuffer<T>> = world
                .devices()
                .iter()
                .zip(&inputs)
                .map(|(d, input)| d.upload(input))
                .collect::<Result<_, _>>()?;
            all_reduce.all_reduce(world, op, &mut buffers)?;
            let what = format!(
                "{} all-reduce {}<{}> of {len} on {gpus} devices",
                A::STEP,
                op.name(),
                T::SUFFIX
            );
            check_all_reduce(&rng, &what, op, &inputs, &buffers)?;
            if len > 100_000 && op != ReduceOp::Sum {
                // The element-wise reference is slow; the sum covers the back-to-back case.
                continue;
            }
            // Twice more, on the results, queued right behind: each GPU then holds the op of n^2
            // copies of the first result (the same result for min and max).
            let first: Vec<T> = buffers[0].to_host()?;
            all_reduce.all_reduce(world, op, &mut buffers)?;
            all_reduce.all_reduce(world, op, &mut buffers)?;
            let copies: Vec<Vec<T>> = (0..gpus * gpus).map(|_| first.clone()).collect();
            check_all_reduce(&rng, &format!("{what}, called twice more"), op, &copies, &buffers)?;
        }
    }
    Ok(())
}

/// A test on a world.
type WorldTest = fn(&World) -> TestResult;

/// Why a test cannot run on a world (`None`: it can): [`runs_anywhere`], [`nccl_missing`] or
/// [`peer_kernels_missing`].
type Needs = fn(&World) -> Option<String>;

/// The ring and the host-combined step run on any world.
fn runs_anywhere(_: &World) -> Option<String> {
    None
}

/// The suites of one element type for one step.
fn step_tests<T: ReduceElement, S: Step<T> + 'static>(suite: TestSuite, needs: Needs) -> TestSuite {
    let name = format!("{}::{}_{}", S::NAME.replace('-', "_"), "sum_min_max", T::SUFFIX);
    world_test(suite, name, needs, scalar_suite::<T, S>)
}

/// A test on the shared world, ignored (with the reason) where what it needs is missing.
fn world_test(
    suite: TestSuite,
    name: String,
    needs: Needs,
    test: impl FnOnce(&World) -> TestResult + Send + 'static,
) -> TestSuite {
    suite.gpu_if(
        name,
        move |_| {
            let world = World::shared().ok()?;
            needs(&world)
        },
        move |_| test(&World::shared()?),
    )
}

/// Memory a ring operation touches: GPU g's buffer, or its `received` landing slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Memory {
    Buffer(usize),
    Received(usize),
}

/// One read or write of a range of elements by the operation at `op` on `queue`.
#[derive(Debug, Clone)]
struct Access {
    op: usize,
    queue: Queue,
    memory: Memory,
    elements: std::ops::Range<usize>,
    write: bool,
}

/// Replays `calls` ring all-reduces back to back as the GPUs would run them: operations on one
/// queue in order, a wait after the record it names (the last one queued before it), nothing else.
/// Between calls, each GPU's stream writes its buffer (the caller's next input) and, before the
/// first, its `received` (the zero-fill of the allocation); after the last, it reads its buffer.
/// Returns every pair of accesses to the same elements, one a write, that nothing orders.
fn ring_races(len: usize, gpus: usize, pieces: usize, calls: usize) -> Vec<String> {
    let plan = ring_plan(len, gpus, pieces);
    let queues: Vec<Queue> = (0..gpus).flat_map(|g| [Queue::Main(g), Queue::Copier(g)]).collect();
    let index = |q: Queue| queues.iter().position(|&x| x == q).expect("a queue of the plan");
    // Vector clocks: clock[op][q] = how many operations of queue q happen before op (op included).
    let mut clocks: Vec<Vec<usize>> = Vec::new();
    let mut last_on_queue: Vec<Option<usize>> = vec![None; queues.len()];
    let mut last_record: std::collections::HashMap<(usize, Signal), usize> =
        std::collections::HashMap::new();
    let mut accesses: Vec<Access> = Vec::new();
    let mut push =
        |queue: Queue, waits_for: Option<usize>, clocks: &mut Vec<Vec<usize>>| -> usize {
            let q = index(queue);
            let mut clock = last_on_queue[q].map_or(vec![0; queues.len()], |op| clocks[op].clone());
            if let Some(record) = waits_for {
                for (c, r) in clock.iter_mut().zip(&clocks[record]) {
                    *c = (*c).max(*r);
                }
            }
            clock[q] += 1;
            clocks.push(clock);
            last_on_queue[q] = Some(clocks.len() - 1);
            clocks.len() - 1
        };
    let whole = 0..len;
    let all_slots = 0..plan.slot * plan.pieces;
    for call in 0..calls {
        for g in 0..gpus {
            let op = push(Queue::Main(g), None, &mut clocks);
            accesses.push(Access {
                op,
                queue: Queue::Main(g),
                memory: Memory::Buffer(g),
                elements: whole.clone(),
                write: true,
            });
            if call == 0 {
                let memory = Memory::Received(g);
                accesses.push(Access {
                    op,
                    queue: Queue::Main(g),
                    memory,
                    elements: all_slots.clone(),
                    write: true,
                });
            }
        }
        for step in &plan.ops {
            match step {
                RingOp::Record { gpu, signal } => {
                    let op = push(signal.queue(*gpu), None, &mut clocks);
                    last_record.insert((*gpu, *signal), op);
                }
                RingOp::Wait { queue, gpu, signal } => {
                    push(*queue, last_record.get(&(*gpu, *signal)).copied(), &mut clocks);
                }
                RingOp::Send { from, to, elements, slot } => {
                    let queue = Queue::Copier(*from);
                    let op = push(queue, None, &mut clocks);
                    accesses.push(Access {
                        op,
                        queue,
                        memory: Memory::Buffer(*from),
                        elements: elements.clone(),
                        write: false,
                    });
                    let (memory, range) = match slot {
                        Some(slot) => (Memory::Received(*to), slot.clone()),
                        None => (Memory::Buffer(*to), elements.clone()),
                    };
                    accesses.push(Access { op, queue, memory, elements: range, write: true });
                }
                RingOp::Fold { gpu, elements, slot } => {
                    let queue = Queue::Main(*gpu);
                    let op = push(queue, None, &mut clocks);
                    accesses.push(Access {
                        op,
                        queue,
                        memory: Memory::Received(*gpu),
                        elements: slot.clone(),
                        write: false,
                    });
                    accesses.push(Access {
                        op,
                        queue,
                        memory: Memory::Buffer(*gpu),
                        elements: elements.clone(),
                        write: true,
                    });
                }
            }
        }
    }
    for g in 0..gpus {
        let op = push(Queue::Main(g), None, &mut clocks);
        accesses.push(Access {
            op,
            queue: Queue::Main(g),
            memory: Memory::Buffer(g),
            elements: whole.clone(),
            write: false,
        });
    }
    let before =
        |a: &Access, b: &Access| clocks[a.op][index(a.queue)] <= clocks[b.op][index(a.queue)];
    let mut races = Vec::new();
    for (i, a) in accesses.iter().enumerate() {
        for b in &accesses[i + 1..] {
            let overlap = a.elements.start < b.elements.end && b.elements.start < a.elements.end;
            if a.memory == b.memory
                && overlap
                && (a.write || b.write)
                && !before(a, b)
                && !before(b, a)
            {
                races
                    .push(format!("{gpus} GPUs, {len} elements, {pieces} pieces: {a:?} and {b:?}"));
            }
        }
    }
    races
}

/// Hundreds of all-reduces queued back to back with no wait, by the one-shot, the two-shots and
/// the plan's choice in turn, on a small buffer and a large one in alternation (the staging halves,
/// the epochs and the algorithms all change between calls): each u32 sum multiplies the previous
/// result by the number of GPUs, so the last buffers are known exactly.
fn back_to_back(world: &World) -> TestResult {
    let rng = TestRng::new();
    let gpus = world.len() as u32;
    let device = &world.devices()[0];
    let lengths = [1001usize, test_size(device, (1 << 22) + 3, 70_001)];
    let mut one_shot = OneShot::<u32>::new(world)?;
    let mut two_shot = TwoShot::<u32>::new(world)?;
    let mut writes = TwoShotWrites::<u32>::new(world)?;
    let mut by_size = BySize::<u32>::new(world)?;
    let input = |len: usize, rank: u32| -> Vec<u32> {
        (0..len as u32).map(|i| i.wrapping_mul(7) ^ rank).collect()
    };
    let mut sets: Vec<Vec<DeviceBuffer<u32>>> = lengths
        .iter()
        .map(|&len| {
            world.devices().iter().zip(0..).map(|(d, r)| d.upload(&input(len, r))).collect()
        })
        .collect::<Result<_, _>>()?;
    let calls = if device.is_simulated() { 12 } else { 300 };
    for call in 0..calls {
        let buffers = &mut sets[call % 2];
        match call / 2 % 4 {
            0 => one_shot.all_reduce(world, ReduceOp::Sum, buffers)?,
            1 => two_shot.all_reduce(world, ReduceOp::Sum, buffers)?,
            2 => writes.all_reduce(world, ReduceOp::Sum, buffers)?,
            _ => by_size.all_reduce(world, ReduceOp::Sum, buffers)?,
        }
    }
    for (set, &len) in sets.iter().zip(&lengths) {
        let times = (calls / 2) as u32;
        for (k, buffer) in set.iter().enumerate() {
            let got = buffer.to_host()?;
            for (i, &value) in got.iter().enumerate() {
                let sum =
                    (0..gpus).fold(0u32, |s, r| s.wrapping_add((i as u32).wrapping_mul(7) ^ r));
                let expected = sum.wrapping_mul(gpus.wrapping_pow(times - 1));
                if value != expected {
                    return Err(rng.fail(format!(
                        "{len} elements, {times} sums on {gpus} GPUs: element {i} on device {k} \
                         is {value}, expected {expected}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The one-shot and both two-shots on a few small lengths, every operation, two calls back to back:
/// what compute-sanitizer runs (the full suites are too slow under it).
fn small_for_the_sanitizers(world: &World) -> TestResult {
    let rng = TestRng::new();
    let gpus = world.len();
    let mut one_shot = OneShot::<f32>::new(world)?;
    let mut two_shot = TwoShot::<f32>::new(world)?;
    let mut writes = TwoShotWrites::<f32>::new(world)?;
    for len in [1, 5, 1027, 70_001] {
        for op in ReduceOp::ALL {
            for step in 0..3 {
                let inputs: Vec<Vec<f32>> = (0..gpus)
                    .map(|k| (0..len).map(|i| ((i * 7 + k) % 23) as f32).collect())
                    .collect();
                let mut buffers: Vec<DeviceBuffer<f32>> = world
                    .devices()
                    .iter()
                    .zip(&inputs)
                    .map(|(d, input)| d.upload(input))
                    .collect::<Result<_, _>>()?;
                let all_reduce: &mut dyn FnMut(
                    &mut [DeviceBuffer<f32>],
                ) -> gpu_harness::Result<()> = match step {
                    0 => &mut |b| one_shot.all_reduce(world, op, b),
                    1 => &mut |b| two_shot.all_reduce(world, op, b),
                    _ => &mut |b| writes.all_reduce(world, op, b),
                };
                all_reduce(&mut buffers)?;
                let what = format!("step {step} {}<f32> of {len} on {gpus} devices", op.name());
                check_all_reduce(&rng, &what, op, &inputs, &buffers)?;
            }
        }
    }
    Ok(())
}

fn bad_input(world: &World) -> TestResult {
    let rng = TestRng::new();
    let mut step = HostCombined::<f32>::new(world)?;
    let parts = world.scatter(&[1.0f32; 100])?;
    let expect_bad = |what: &str, result: gpu_harness::Result<f32>| match result {
        Err(GpuError::BadInput(message)) => {
            println!("{what}: {message}");
            Ok(())
        }
        other => Err(rng.fail(format!("{what}: {other:?}, expected BadInput"))),
    };
    // One part too few.
    let too_few = views(&parts)[..world.len() - 1].to_vec();
    expect_bad("parts", step.reduce(world, ReduceOp::Sum, &too_few))?;
    if world.len() > 1 {
        // Two parts on device 0.
        let misplaced = vec![parts[0].as_view(); world.len()];
        expect_bad("misplaced", step.reduce(world, ReduceOp::Sum, &misplaced))?;
        // Buffers of different lengths for an all-reduce.
        let mut ring = Ring::<f32>::new(world)?;
        let mut buffers: Vec<DeviceBuffer<f32>> = world
            .devices()
            .iter()
            .enumerate()
            .map(|(k, d)| d.alloc(10 + k))
            .collect::<Result<_, _>>()?;
        match ring.all_reduce(world, ReduceOp::Sum, &mut buffers) {
            Err(GpuError::BadInput(message)) => println!("lengths: {message}"),
            other => return Err(rng.fail(format!("lengths: {other:?}, expected BadInput"))),
        }
        // A launcher made for another world.
        let one = world.first(1)?;
        expect_bad("world", step.reduce(&one, ReduceOp::Sum, &views(&one.scatter(&[1.0f32])?)))?;
    }
    // Launchers made for another world of as many devices (simulated ones, which any machine has):
    // its buffers are other memory, and every step says so instead of reading it.
    let other = World::simulated(world.len())?;
    let inputs = other.scatter(&[1.0f32; 100])?;
    expect_bad("other world, host", step.reduce(&other, ReduceOp::Sum, &views(&inputs)))?;
    expect_bad(
        "other world, ring",
        AcrossGpus::<f32, Ring<f32>>::new(world)?.reduce(&other, ReduceOp::Sum, &views(&inputs)),
    )?;
    let mut buffers: Vec<DeviceBuffer<f32>> =
        other.devices().iter().map(|d| d.alloc(100)).collect::<Result<_, _>>()?;
    let all_reduces: [(&str, gpu_harness::Result<()>); 2] = [
        (
            "other world, ring buffers",
            Ring::<f32>::new(world)?.all_reduce(&other, ReduceOp::Sum, &mut buffers),
        ),
        (
            "other world, by size",
            BySize::<f32>::new(world)?.all_reduce(&other, ReduceOp::Sum, &mut buffers),
        ),
    ];
    for (what, result) in all_reduces {
        match result {
            Err(GpuError::BadInput(message)) => println!("{what}: {message}"),
            other => return Err(rng.fail(format!("{what}: {other:?}, expected BadInput"))),
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let mut suite = TestSuite::new()
        .cpu("split::parts_cover_the_input_once", || {
            for n in [0usize, 1, 2, 3, 5, 31, 1000, 1_000_003, usize::MAX / 2] {
                for parts in 1..=8 {
                    let ranges: Vec<_> = (0..parts).map(|k| part_range(n, parts, k)).collect();
                    let contiguous = ranges.windows(2).all(|w| w[0].end == w[1].start);
                    let balanced =
                        ranges.iter().all(|r| r.len() == n / parts || r.len() == n / parts + 1);
                    if ranges[0].start != 0
                        || ranges[parts - 1].end != n
                        || !contiguous
                        || !balanced
                    {
                        return Err(Failed::from(format!("{n} in {parts} parts: {ranges:?}")));
                    }
                }
            }
            Ok(())
        })
        .cpu("illustration::ring_schedule", || {
            let lines: Vec<String> = ring_schedule(10, 3)
                .iter()
                .map(|t| {
                    format!(
                        "{:?} step {}: GPU {} -> GPU {}: chunk {} {:?}",
                        t.phase, t.step, t.from, t.to, t.chunk, t.elements
                    )
                })
                .collect();
            insta::assert_snapshot!("ring_schedule_10_elements_3_gpus", lines.join("\n"));
            Ok(())
        })
        .cpu("ring::schedule_reduces_every_element_once_per_gpu", || {
            // Replays the schedule on sets of contributors, element by element, each transfer of
            // a step sending what its sender held when the step began: every GPU must end with
            // every element holding every GPU's contribution exactly once.
            for gpus in 1..=8 {
                let len = gpus * 3 + 1;
                let mut held: Vec<Vec<Vec<usize>>> =
                    (0..gpus).map(|g| vec![vec![g]; len]).collect();
                let schedule = ring_schedule(len, gpus);
                for step in schedule.chunk_by(|a, b| (a.phase, a.step) == (b.phase, b.step)) {
                    let before = held.clone();
                    for t in step {
                        for e in t.elements.clone() {
                            let sent = before[t.from][e].clone();
                            match t.phase {
                                reduce_multi_gpu::Phase::ReduceScatter => {
                                    held[t.to][e].extend(sent)
                                }
                                reduce_multi_gpu::Phase::AllGather => held[t.to][e] = sent,
                            }
                        }
                    }
                }
                for (g, elements) in held.iter_mut().enumerate() {
                    for (e, contributors) in elements.iter_mut().enumerate() {
                        contributors.sort_unstable();
                        if *contributors != (0..gpus).collect::<Vec<_>>() {
                            return Err(Failed::from(format!(
                                "{gpus} GPUs: GPU {g} element {e}: \
                                {contributors:?}"
                            )));
                        }
                    }
                }
            }
            Ok(())
        })
        .nvrtc("illustration::ring_copies_by_hand", || {
            // What the grader counts of the ring, by hand: n GPUs and n chunks of c elements (4
            // bytes each); 2(n - 1) steps, in each of which every GPU sends one chunk to the next
            // and waits for what the step before sent it, so every GPU sends and receives
            // 2(n - 1) chunks of 4c bytes, and the longest chain of copies is 2(n - 1) of them.
            for (gpus, chunk) in [(2u64, 4u64), (3, 3), (4, 5)] {
                let counts =
                    reduce_multi_gpu::count_ring(gpus as usize, (gpus * chunk) as usize, 7)?;
                let bytes = 2 * (gpus - 1) * 4 * chunk;
                let each = gpu_harness::Transfers {
                    copies_sent: 2 * (gpus - 1),
                    bytes_sent: bytes,
                    bytes_received: bytes,
                    finished_at: bytes,
                };
                let folds = counts
                    .launches
                    .iter()
                    .filter(|(name, _)| name == "ring_combine_sum_u32")
                    .count() as u64;
                if counts.transfers != vec![each; gpus as usize] || folds != gpus * (gpus - 1) {
                    return Err(Failed::from(format!(
                        "{gpus} GPUs, chunks of {chunk}: {:?} and {folds} folds, expected \
                         {each:?} each and {} folds",
                        counts.transfers,
                        gpus * (gpus - 1)
                    )));
                }
            }
            Ok(())
        })
        .cpu("ring::plan_has_no_races", || {
            // Uneven chunks (lengths not divisible by the GPUs), pieces of uneven lengths, fewer
            // elements than GPUs, and two calls back to back.
            for gpus in 2..=5 {
                for len in [1, gpus - 1, gpus + 1, 7 * gpus + 3, 40] {
                    for pieces in 1..=3 {
                        let races = ring_races(len.max(1), gpus, pieces, 2);
                        if let Some(race) = races.first() {
                            return Err(Failed::from(format!(
                                "{} races, the first: {race}",
                                races.len()
                            )));
                        }
                    }
                }
            }
            Ok(())
        })
        .cpu("illustration::all_reduce_plan", || {
            // The algorithm and grid the plan picks, by size and GPU count, on an H200's 132 SMs.
            let mut lines = Vec::new();
            for gpus in [2, 3, 4, 8] {
                let mut bytes = 4 << 10;
                while bytes <= 1 << 30 {
                    let plan = all_reduce_plan(
                        bytes / 4,
                        bytes,
                        gpus,
                        gpu_harness::GpuShape::HOPPER_132_SMS,
                    );
                    lines.push(format!(
                        "{gpus} GPUs, {:>10} bytes: {:?}, {} blocks of {}",
                        bytes, plan.algorithm, plan.blocks, plan.threads
                    ));
                    bytes *= 4;
                }
            }
            insta::assert_snapshot!("all_reduce_plan", lines.join("\n"));
            Ok(())
        })
        .cpu("plan::every_size_has_one_algorithm_and_a_grid_that_fits", || {
            // Larger buffers never go back to an algorithm that lost at a smaller size, and the
            // grid never has more blocks than two per SM (a block waits for the other GPUs' same
            // block, so all must fit at once: the kernels' launch bounds promise two per SM).
            let order = |a: Algorithm| match a {
                Algorithm::OneShot => 0,
                Algorithm::TwoShot | Algorithm::TwoShotWrites => 1,
                Algorithm::Ring => 2,
            };
            for gpus in 1..=9 {
                for sms in [1u32, 40, 132] {
                    let shape = gpu_harness::GpuShape {
                        multiprocessors: sms,
                        max_threads_per_multiprocessor: 2048,
                    };
                    let mut last = 0;
                    for bytes in (0..=31).map(|b| 1usize << b).chain([0, 3, 5 << 20]) {
                        let plan = all_reduce_plan(bytes / 4, bytes, gpus, shape);
                        let most = shots::most_peer_blocks(shape);
                        if plan.blocks == 0
                            || plan.blocks > most
                            || most > 2 * sms
                            || plan.threads != shots::PEER_THREADS
                        {
                            return Err(Failed::from(format!(
                                "{gpus} GPUs, {bytes} bytes, {sms} \
                                SMs: {plan:?}"
                            )));
                        }
                        if bytes.is_power_of_two() {
                            let rank = order(plan.algorithm);
                            if rank < last {
                                return Err(Failed::from(format!(
                                    "{gpus} GPUs: {bytes} bytes goes \
                                    back to {plan:?}"
                                )));
                            }
                            last = rank;
                        }
                    }
                }
            }
            Ok(())
        })
        .cpu("ring::pieces", || {
            let got: Vec<usize> = [0, 1, ring::PIECE_BYTES, ring::PIECE_BYTES + 1, 1 << 40]
                .iter()
                .map(|&b| ring::pieces(b))
                .collect();
            if got != [1, 1, 1, 2, ring::MAX_PIECES] {
                return Err(Failed::from(format!("{got:?}")));
            }
            Ok(())
        });
    suite = step_tests::<f32, HostCombined<f32>>(suite, runs_anywhere);
    suite = step_tests::<i32, HostCombined<i32>>(suite, runs_anywhere);
    suite = step_tests::<u32, HostCombined<u32>>(suite, runs_anywhere);
    suite = step_tests::<f32, AcrossGpus<f32, Ring<f32>>>(suite, runs_anywhere);
    suite = step_tests::<i32, AcrossGpus<i32, Ring<i32>>>(suite, runs_anywhere);
    suite = step_tests::<u32, AcrossGpus<u32, Ring<u32>>>(suite, runs_anywhere);
    suite = step_tests::<f32, AcrossGpus<f32, Nccl<f32>>>(suite, nccl_missing);
    suite = step_tests::<i32, AcrossGpus<i32, Nccl<i32>>>(suite, nccl_missing);
    suite = step_tests::<u32, AcrossGpus<u32, Nccl<u32>>>(suite, nccl_missing);
    suite = world_test(
        suite,
        "host_combined::f32_specials".into(),
        runs_anywhere,
        f32_specials::<HostCombined<f32>>,
    );
    suite = world_test(
        suite,
        "ring::f32_specials".into(),
        runs_anywhere,
        f32_specials::<AcrossGpus<f32, Ring<f32>>>,
    );
    suite = world_test(
        suite,
        "nccl::f32_specials".into(),
        nccl_missing,
        f32_specials::<AcrossGpus<f32, Nccl<f32>>>,
    );
    suite = world_test(
        suite,
        "host_combined::wrap_around".into(),
        runs_anywhere,
        wrap_around::<HostCombined<u32>>,
    );
    suite = world_test(
        suite,
        "ring::wrap_around".into(),
        runs_anywhere,
        wrap_around::<AcrossGpus<u32, Ring<u32>>>,
    );
    suite = world_test(
        suite,
        "nccl::wrap_around".into(),
        nccl_missing,
        wrap_around::<AcrossGpus<u32, Nccl<u32>>>,
    );
    suite = world_test(
        suite,
        "ring::all_reduce_f32".into(),
        runs_anywhere,
        all_reduce_suite::<f32, Ring<f32>>,
    );
    suite = world_test(
        suite,
        "ring::all_reduce_i32".into(),
        runs_anywhere,
        all_reduce_suite::<i32, Ring<i32>>,
    );
    suite = world_test(
        suite,
        "ring::all_reduce_u32".into(),
        runs_anywhere,
        all_reduce_suite::<u32, Ring<u32>>,
    );
    suite = world_test(
        suite,
        "nccl::all_reduce_f32".into(),
        nccl_missing,
        all_reduce_suite::<f32, Nccl<f32>>,
    );
    suite = world_test(
        suite,
        "nccl::all_reduce_i32".into(),
        nccl_missing,
        all_reduce_suite::<i32, Nccl<i32>>,
    );
    suite = world_test(
        suite,
        "nccl::all_reduce_u32".into(),
        nccl_missing,
        all_reduce_suite::<u32, Nccl<u32>>,
    );
    suite = step_tests::<f32, AcrossGpus<f32, OneShot<f32>>>(suite, peer_kernels_missing);
    suite = step_tests::<u32, AcrossGpus<u32, TwoShot<u32>>>(suite, peer_kernels_missing);
    suite = step_tests::<i32, AcrossGpus<i32, BySize<i32>>>(suite, peer_kernels_missing);
    suite = step_tests::<f32, AcrossGpus<f32, TwoShotWrites<f32>>>(suite, peer_kernels_missing);
    // The kernels that meet at flags: each test on the shared world, ignored where they cannot run.
    let peer_tests: [(&str, WorldTest); 14] = [
        ("one_shot::f32_specials", f32_specials::<AcrossGpus<f32, OneShot<f32>>>),
        ("two_shot::wrap_around", wrap_around::<AcrossGpus<u32, TwoShot<u32>>>),
        ("one_shot::all_reduce_f32", all_reduce_suite::<f32, OneShot<f32>>),
        ("one_shot::all_reduce_i32", all_reduce_suite::<i32, OneShot<i32>>),
        ("one_shot::all_reduce_u32", all_reduce_suite::<u32, OneShot<u32>>),
        ("two_shot::all_reduce_f32", all_reduce_suite::<f32, TwoShot<f32>>),
        ("two_shot::all_reduce_i32", all_reduce_suite::<i32, TwoShot<i32>>),
        ("two_shot::all_reduce_u32", all_reduce_suite::<u32, TwoShot<u32>>),
        ("by_size::all_reduce_f32", all_reduce_suite::<f32, BySize<f32>>),
        ("shots::back_to_back", back_to_back),
        ("shots::small_for_the_sanitizers", small_for_the_sanitizers),
        ("two_shot_writes::all_reduce_f32", all_reduce_suite::<f32, TwoShotWrites<f32>>),
        ("two_shot_writes::all_reduce_i32", all_reduce_suite::<i32, TwoShotWrites<i32>>),
        ("two_shot_writes::all_reduce_u32", all_reduce_suite::<u32, TwoShotWrites<u32>>),
    ];
    for (name, test) in peer_tests {
        suite = world_test(suite, name.into(), peer_kernels_missing, test);
    }
    suite = world_test(suite, "world::bad_input".into(), runs_anywhere, bad_input);
    suite = world_test(suite, "world::threads_share_the_gpus".into(), runs_anywhere, |world| {
        // Four threads reduce at once on the same GPUs, two by the ring and (where NCCL is) two by
        // NCCL: every result is right and nothing deadlocks.
        let use_nccl = nccl_missing(world).is_none();
        on_threads(4, |t| {
            let mut rng = TestRng::new();
            let world = World::shared()?;
            let mut ring = AcrossGpus::<u32, Ring<u32>>::new(&world)?;
            let mut nccl = if use_nccl && t % 2 == 1 {
                Some(AcrossGpus::<u32, Nccl<u32>>::new(&world)?)
            } else {
                None
            };
            for _ in 0..10 {
                let n = rng.size_in(1..=300_000);
                let host = u32::random(rng.rng(), n);
                match &mut nccl {
                    Some(nccl) => reduce_and_check(&rng, &world, nccl, ReduceOp::Sum, &host)?,
                    None => reduce_and_check(&rng, &world, &mut ring, ReduceOp::Sum, &host)?,
                }
            }
            Ok(())
        })
    });
    suite = world_test(suite, "world::of_one".into(), runs_anywhere, |world| {
        let one = world.first(1)?;
        scalar_suite::<i32, HostCombined<i32>>(&one)?;
        scalar_suite::<f32, AcrossGpus<f32, Ring<f32>>>(&one)?;
        all_reduce_suite::<u32, OneShot<u32>>(&one)?;
        all_reduce_suite::<f32, BySize<f32>>(&one)
    });
    suite = world_test(suite, "nccl::world_of_one".into(), nccl_missing, |world| {
        let one = world.first(1)?;
        scalar_suite::<u32, AcrossGpus<u32, Nccl<u32>>>(&one)?;
        all_reduce_suite::<f32, Nccl<f32>>(&one)
    });
    suite = world_test(suite, "world::simulated_three".into(), runs_anywhere, |world| {
        // Three simulated devices (on a GPU machine too): a ring whose chunks are uneven, and the
        // kernels meeting at flags across three devices.
        let _ = world;
        let three = World::simulated(3)?;
        all_reduce_suite::<u32, Ring<u32>>(&three)?;
        small_for_the_sanitizers(&three)?;
        back_to_back(&three)
    });
    suite
        .gpu_if(
            "world::more_than_2_to_the_32_elements",
            |device| {
                if device.is_simulated() {
                    return Some("2^32 + 5 elements are too many for the CPU simulator".into());
                }
                let world = World::shared().ok()?;
                let per_gpu = ((1u64 << 32) + 5) * 4 / world.len() as u64 + 4;
                (device.facts().memory_bytes < per_gpu + (4 << 30))
                    .then(|| format!("needs {per_gpu} bytes per GPU"))
            },
            |_| {
                // 2^32 + 5 ones, split across every GPU: the u32 sum wraps to 5, the i32 sum too.
                let world = World::shared()?;
                let rng = TestRng::new();
                let n = (1usize << 32) + 5;
                let mut parts: Vec<DeviceBuffer<u32>> = Vec::new();
                for (k, device) in world.devices().iter().enumerate() {
                    let mut part = device.alloc(part_range(n, world.len(), k).len())?;
                    part.fill_words(1)?;
                    parts.push(part);
                }
                let host = HostCombined::<u32>::new(&world)?.reduce(
                    &world,
                    ReduceOp::Sum,
                    &views(&parts),
                )?;
                let ring = AcrossGpus::<u32, Ring<u32>>::new(&world)?.reduce(
                    &world,
                    ReduceOp::Sum,
                    &views(&parts),
                )?;
                let max = HostCombined::<u32>::new(&world)?.reduce(
                    &world,
                    ReduceOp::Max,
                    &views(&parts),
                )?;
                if (host, ring, max) != (5, 5, 1) {
                    return Err(rng.fail(format!(
                        "sum {host} (host), {ring} (ring), max {max}; expected 5, 5, 1"
                    )));
                }
                Ok(())
            },
        )
        .run()
}
