//! # reduce-multi-gpu: the reduction past one GPU
//!
//! The input is split across every GPU of the machine (a [`World`]); each GPU reduces its part with
//! reduce-atomic's deterministic single-pass kernel; then the per-GPU values are combined, in one
//! of three ways:
//!
//! 1. [`HostCombined`]: the host reads one value from each GPU and combines them. The simplest
//!    correct form; only the host ends with the total.
//! 2. [`NcclReduce`]: NCCL's all-reduce ([`Nccl`]), the library every framework uses: every GPU
//!    ends with the total. NCCL is loaded at run time; without it, [`Nccl::new`] returns
//!    [`gpu_harness::GpuError::NoLibrary`] naming what to install.
//! 3. [`RingReduce`]: a ring all-reduce written here ([`Ring`]): reduce-scatter then all-gather,
//!    chunks moved by peer-to-peer copies, pipelined in pieces. It teaches what NCCL does.
//!
//! Beside the scalar reductions (sum, min and max of f32, i32 and u32, with the semantics of
//! `reduction::full`), [`Nccl`] and [`Ring`] all-reduce whole buffers element-wise
//! ([`AllReduce::all_reduce`]): every GPU's buffer ends holding the element-wise sum (or min, or
//! max) of all of them. This is what data-parallel training does with its gradients, and what the
//! bench measures at 4 MiB to 1 GiB.
//!
//! On the CPU simulator a [`World`] is two simulated devices whose buffers live in one simulated
//! memory, as GPUs with peer access ([`World::simulated`]): the splitting, the host combine and the
//! ring run there (the copies between simulated devices are counted and timed on the simulator's
//! model), and so do kernels launched on every device at once with
//! [`gpu_harness::launch_together`]; NCCL needs GPUs.

use std::ops::Range;

use gpu_harness::{Device, DeviceBuffer, DeviceView, GpuError, LaunchCounters, Result, Transfers};
use reduce_atomic::DeterministicReduce;
use reduction::{FullReduction, ReduceElement, ReduceOp};

mod nccl;
pub mod ring;
pub mod shots;

pub use nccl::{Nccl, nccl_missing, nccl_version};
pub use ring::{Phase, Queue, Ring, RingOp, RingPlan, Signal, Transfer, ring_plan, ring_schedule};
pub use shots::{
    Algorithm, AllReducePlan, BySize, CROSSOVERS, OneShot, TwoShot, TwoShotWrites, all_reduce_plan,
    peer_kernels_missing,
};

/// Every GPU of the machine (or a simulated world): the devices a reduction is spread across.
#[derive(Clone)]
pub struct World {
    devices: Vec<Device>,
}

/// How many simulated devices a [`World`] has on the CPU simulator.
pub const SIMULATED_WORLD: usize = 2;

impl World {
    /// Every GPU the driver reports, GPU 0 being [`Device::shared`]; on the CPU simulator, a world
    /// of [`SIMULATED_WORLD`] simulated devices. Peer access is enabled between every pair of GPUs
    /// that allows it.
    pub fn open() -> Result<World> {
        let first = Device::shared()?;
        if first.is_simulated() {
            return World::simulated(SIMULATED_WORLD);
        }
        let mut devices = vec![first];
        for ordinal in 1..Device::gpu_count()? {
            devices.push(Device::open_gpu_ordinal(ordinal)?);
        }
        World::of(devices)
    }

    /// The process-wide [`World::open`], opened on first use (tests and benches share it, so
    /// kernels compile once per device).
    pub fn shared() -> Result<World> {
        static SHARED: std::sync::OnceLock<Result<World>> = std::sync::OnceLock::new();
        SHARED.get_or_init(World::open).clone()
    }

    /// A world of `n` fresh CPU simulators ([`Device::simulated_world`]): devices 0 to `n - 1`,
    /// each with its own buffers, kernels and launch records, whose buffers live in one simulated
    /// memory, so that a kernel of one device reaches another's buffers through their addresses
    /// (peer access, enabled between every pair) and [`gpu_harness::launch_together`] runs one
    /// kernel per device at once.
    pub fn simulated(n: usize) -> Result<World> {
        World::of(Device::simulated_world(n)?)
    }

    /// A world of these devices, in this order (ring order). At least one; no device twice.
    pub fn of(devices: Vec<Device>) -> Result<World> {
        if devices.is_empty() {
            return Err(GpuError::BadInput("a world of no devices".into()));
        }
        for (i, a) in devices.iter().enumerate() {
            for b in &devices[i + 1..] {
                if a.shares_memory_with(b) {
                    return Err(GpuError::BadInput(format!(
                        "device {} is in the world twice",
                        a.ordinal()
                    )));
                }
                a.enable_peer_access(b)?;
                b.enable_peer_access(a)?;
            }
        }
        Ok(World { devices })
    }

    /// The world of the first `n` devices of this one (two of four GPUs, say).
    pub fn first(&self, n: usize) -> Result<World> {
        if n == 0 || n > self.len() {
            return Err(GpuError::BadInput(format!(
                "the first {n} devices of a world of {}",
                self.len()
            )));
        }
        Ok(World { devices: self.devices[..n].to_vec() })
    }

    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Never true: a world has at least one device.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// Splits `host` into one contiguous part per device ([`part_range`]) and uploads each part to
    /// its device.
    pub fn scatter<T: ReduceElement>(&self, host: &[T]) -> Result<Vec<DeviceBuffer<T>>> {
        let parts = self.len();
        self.devices
            .iter()
            .enumerate()
            .map(|(k, device)| device.upload(&host[part_range(host.len(), parts, k)]))
            .collect()
    }

    /// Waits for the work queued on every device.
    pub fn synchronize(&self) -> Result<()> {
        self.devices.iter().try_for_each(Device::synchronize)
    }

    /// Device time, in milliseconds, of the work `work` queues on the devices: from a start event
    /// on device 0 that every device waits for, to device 0 having waited for every device's end.
    /// The bench times its all-reduces with it, through
    /// [`gpu_harness::measure::median_ms_timed_by`].
    pub fn time_ms(&self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        let first = &self.devices[0];
        let start = first.event()?;
        let ends: Vec<_> = self.devices.iter().map(Device::event).collect::<Result<_>>()?;
        first.time_ms(|| {
            first.record(&start)?;
            for device in &self.devices[1..] {
                device.wait_for(&start)?;
            }
            work()?;
            for (device, end) in self.devices.iter().zip(&ends).skip(1) {
                device.record(end)?;
                first.wait_for(end)?;
            }
            Ok(())
        })
    }

    /// Checks that `views` has one view per device, each on its device.
    fn check_parts<T: ReduceElement>(&self, views: &[DeviceView<'_, T>]) -> Result<usize> {
        if views.len() != self.len() {
            return Err(GpuError::BadInput(format!(
                "{} parts for a world of {} devices",
                views.len(),
                self.len()
            )));
        }
        for (k, (view, device)) in views.iter().zip(&self.devices).enumerate() {
            if !view.device().shares_memory_with(device) {
                return Err(GpuError::BadInput(format!(
                    "part {k} is not on device {k} of the world"
                )));
            }
        }
        Ok(views.iter().map(DeviceView::len).sum())
    }
}

/// Held while work that makes GPUs wait for each other is queued (a ring all-reduce, an NCCL
/// collective, NCCL's set-up). NCCL's kernels wait for their peers and the ring's streams wait for
/// each other's events, so two such operations whose work reaches two GPUs' streams in different
/// orders would deadlock; queuing each one on all its GPUs under one lock gives every stream the
/// same order, so threads may share the GPUs.
pub(crate) fn queueing() -> std::sync::MutexGuard<'static, ()> {
    static QUEUEING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    QUEUEING.lock().unwrap_or_else(|e| e.into_inner())
}

// ANCHOR: part_range
/// The elements of part `k` when `n` elements are split into `parts` contiguous parts whose sizes
/// differ by at most one: `k * n / parts .. (k + 1) * n / parts`. When `n < parts` some are empty.
pub fn part_range(n: usize, parts: usize, k: usize) -> Range<usize> {
    let at = |k: usize| (k as u128 * n as u128 / parts as u128) as usize;
    at(k)..at(k + 1)
}
// ANCHOR_END: part_range

/// Views of whole buffers, one per device: what the reductions take.
pub fn views<T: ReduceElement>(buffers: &[DeviceBuffer<T>]) -> Vec<DeviceView<'_, T>> {
    buffers.iter().map(DeviceBuffer::as_view).collect()
}

// ANCHOR: host_combined
/// Step 1: every GPU reduces its part; the host reads the values and combines them, in device
/// order.
pub struct HostCombined<T: ReduceElement> {
    devices: Vec<Device>,
    reducers: Vec<DeterministicReduce<T>>,
}

impl<T: ReduceElement> HostCombined<T> {
    pub fn new(world: &World) -> Result<Self> {
        let reducers =
            world.devices().iter().map(DeterministicReduce::new).collect::<Result<_>>()?;
        Ok(HostCombined { devices: world.devices().to_vec(), reducers })
    }

    /// `op` over the concatenation of `parts` (part k on device k of the world).
    pub fn reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        parts: &[DeviceView<'_, T>],
    ) -> Result<T> {
        check_world(&self.devices, world)?;
        op.check_not_empty(world.check_parts(parts)?)?;
        // Queue every GPU's reduction before reading any result, so that they run at the same time.
        for (reducer, part) in self.reducers.iter_mut().zip(parts) {
            if !part.is_empty() {
                reducer.queue(op, *part)?;
            }
        }
        let mut total = T::identity(op);
        for (reducer, part) in self.reducers.iter().zip(parts) {
            if !part.is_empty() {
                total = T::combine(op, total, reducer.result().to_host()?[0]);
            }
        }
        Ok(total)
    }
}
// ANCHOR_END: host_combined

/// Checks that a launcher made for the devices `made_for` is used with a world of the same devices,
/// in the same order: another world's buffers would be other memory than the launcher's own.
fn check_world<'a>(made_for: impl IntoIterator<Item = &'a Device>, world: &World) -> Result<()> {
    let made_for: Vec<&Device> = made_for.into_iter().collect();
    if made_for.len() != world.len() {
        return Err(GpuError::BadInput(format!(
            "made for a world of {} devices, used with {}",
            made_for.len(),
            world.len()
        )));
    }
    let mismatch = (0..world.len()).find(|&k| !made_for[k].shares_memory_with(&world.devices()[k]));
    if let Some(k) = mismatch {
        return Err(GpuError::BadInput(format!(
            "made for another world: device {k} of this world is not the device {k} the launcher \
             was made for"
        )));
    }
    Ok(())
}

// ANCHOR: all_reduce
/// An all-reduce: buffers of equal length, one on each device of a world, combined element-wise;
/// every buffer ends holding the result.
pub trait AllReduce<T: ReduceElement>: Sized {
    /// The step's name in benches and the book.
    const STEP: &'static str;

    fn new(world: &World) -> Result<Self>;

    /// Combines `buffers[k]` (on device k) element-wise with `op`, in place.
    fn all_reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()>;
}
// ANCHOR_END: all_reduce

/// Checks an all-reduce's buffers: one per device, each on its device, of equal lengths. Returns
/// the length.
fn check_buffers<T: ReduceElement>(world: &World, buffers: &[DeviceBuffer<T>]) -> Result<usize> {
    world.check_parts(&views(buffers))?;
    let len = buffers[0].len();
    if let Some((k, other)) = buffers.iter().enumerate().find(|(_, b)| b.len() != len) {
        return Err(GpuError::BadInput(format!(
            "all-reduce of buffers of different lengths: {len} on device 0, {} on device {k}",
            other.len()
        )));
    }
    Ok(len)
}

// ANCHOR: across_gpus
/// Steps 2 and 3: every GPU reduces its part into a one-element buffer, then an all-reduce `A`
/// combines those buffers, so that every GPU holds the total.
pub struct AcrossGpus<T: ReduceElement, A: AllReduce<T>> {
    reducers: Vec<DeterministicReduce<T>>,
    values: Vec<DeviceBuffer<T>>,
    all_reduce: A,
}

/// Step 2: per-GPU values all-reduced by NCCL.
pub type NcclReduce<T> = AcrossGpus<T, Nccl<T>>;
/// Step 3: per-GPU values all-reduced by our ring.
pub type RingReduce<T> = AcrossGpus<T, Ring<T>>;

impl<T: ReduceElement, A: AllReduce<T>> AcrossGpus<T, A> {
    pub fn new(world: &World) -> Result<Self> {
        Ok(AcrossGpus {
            reducers: world
                .devices()
                .iter()
                .map(DeterministicReduce::new)
                .collect::<Result<_>>()?,
            values: world.devices().iter().map(|d| d.alloc(1)).collect::<Result<_>>()?,
            all_reduce: A::new(world)?,
        })
    }

    /// `op` over the concatenation of `parts` (part k on device k); every GPU ends with the total
    /// ([`AcrossGpus::totals`]), and device 0's copy is returned.
    pub fn reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        parts: &[DeviceView<'_, T>],
    ) -> Result<T> {
        check_world(self.values.iter().map(DeviceBuffer::device), world)?;
        op.check_not_empty(world.check_parts(parts)?)?;
        for (k, part) in parts.iter().enumerate() {
            if part.is_empty() {
                self.values[k].fill_words(T::identity_word(op))?;
            } else {
                self.reducers[k].queue(op, *part)?;
                world.devices()[k]
                    .copy(self.reducers[k].result().as_view(), &mut self.values[k])?;
            }
        }
        self.all_reduce.all_reduce(world, op, &mut self.values)?;
        Ok(self.values[0].to_host()?[0])
    }

    /// Every GPU's copy of the last total, in device order.
    pub fn totals(&self) -> Result<Vec<T>> {
        self.values.iter().map(|v| Ok(v.to_host()?[0])).collect()
    }
}
// ANCHOR_END: across_gpus

/// nccl-tests' bus bandwidth: the algorithm bandwidth (bytes / time) times 2(n - 1)/n, what each
/// link of a ring carries, so that the numbers of different GPU counts compare.
pub fn bus_bandwidth(algorithm_gbs: f64, gpus: usize) -> f64 {
    algorithm_gbs * 2.0 * (gpus as f64 - 1.0) / gpus as f64
}

/// What the course's grader counts of the ring (`cargo course grade`): what moved between the
/// devices of one all-reduce, and the kernels they launched.
#[derive(Debug, Clone, PartialEq)]
pub struct RingCounts {
    /// Each device's copies to and from the others (the simulator's count and its model of their
    /// time: [`Device::transfers`]).
    pub transfers: Vec<Transfers>,
    /// Every kernel launched, device by device.
    pub launches: Vec<(String, LaunchCounters)>,
}

/// One ring all-reduce (a u32 sum) of `len` elements per device on a fresh world of `devices` CPU
/// simulators, each device's input drawn from `seed`, checked against the CPU: what the grader
/// counts, the same way for the student's ring and the reference's. A fresh world, so the model's
/// clocks start at 0 and its latest end of a copy is the all-reduce's span.
pub fn count_ring(
    devices: usize,
    len: usize,
    seed: u64,
) -> std::result::Result<RingCounts, String> {
    use rand::SeedableRng;
    let failed = |e: GpuError| format!("a ring all-reduce on {devices} simulated devices: {e}");
    let world = World::simulated(devices).map_err(failed)?;
    let inputs: Vec<Vec<u32>> = (0..devices as u64)
        .map(|k| u32::random(&mut rand::rngs::SmallRng::seed_from_u64(seed.wrapping_add(k)), len))
        .collect();
    let all_reduce = || -> Result<Vec<DeviceBuffer<u32>>> {
        let mut buffers: Vec<DeviceBuffer<u32>> = world
            .devices()
            .iter()
            .zip(&inputs)
            .map(|(d, input)| d.upload(input))
            .collect::<Result<_>>()?;
        Ring::<u32>::new(&world)?.all_reduce(&world, ReduceOp::Sum, &mut buffers)?;
        world.synchronize()?;
        Ok(buffers)
    };
    let buffers = all_reduce().map_err(failed)?;
    let expected: Vec<u32> = (0..len)
        .map(|i| inputs.iter().fold(0u32, |sum, input| sum.wrapping_add(input[i])))
        .collect();
    for (k, buffer) in buffers.iter().enumerate() {
        let got = buffer.to_host().map_err(failed)?;
        if let Some(i) = (0..len).find(|&i| got[i] != expected[i]) {
            return Err(format!(
                "a wrong all-reduce: element {i} on device {k} of {devices} is {}, expected {}",
                got[i], expected[i]
            ));
        }
    }
    let devices = world.devices();
    Ok(RingCounts {
        transfers: devices.iter().map(|d| d.transfers().unwrap_or_default()).collect(),
        launches: devices.iter().flat_map(Device::take_launches).collect(),
    })
}
