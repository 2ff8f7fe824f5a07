//! Steps 4 to 7: all-reduces in which the GPUs read and write each other's memory from their own
//! kernels, one kernel per GPU and call ([`OneShot`], [`TwoShot`], [`TwoShotWrites`]), and the
//! choice between them and the ring by size ([`BySize`], from [`all_reduce_plan`]).
//!
//! The ring ([`crate::Ring`]) is driven from the host: for every step and piece the host queues
//! waits, records, copies and folds on every GPU, about 0.18 ms of issuing on four GPUs, which is
//! more than a buffer of a few MiB takes to cross NVLink. Here the host queues one kernel per GPU
//! ([`gpu_harness::launch_together`]) and the kernels meet at flags in each other's memory
//! (`cuda/reduce_multi_gpu.cu` says how). What each GPU needs besides its kernels lives in a
//! `Member`: a staging buffer of two halves (the one-shot's), an inbox (the two-shot by writes'),
//! the flags the others write, and the table of every GPU's addresses that its kernel reads.

use gpu_harness::{
    Device, DeviceBuffer, GpuError, GpuShape, LaunchConfig, Result, launch_together,
};
use reduction::{ReduceElement, ReduceOp};

use crate::ring::KernelsByOp;
use crate::{AllReduce, Ring, World, check_buffers, check_world, queueing};

/// Threads per block of the one-shot and two-shot kernels.
pub const PEER_THREADS: u32 = 512;

/// How an all-reduce moves its data: the kernels of steps 4 to 6, or the ring's copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Every GPU reads every GPU's buffer (step 4).
    OneShot,
    /// Every GPU reduces its 1/n of the buffer and writes it into every GPU (step 5).
    TwoShot,
    /// The two-shot with every transfer a store into the other GPUs' memory (step 6).
    TwoShotWrites,
    /// Reduce-scatter and all-gather by the copy engines, host-driven (step 3).
    Ring,
}

/// The plan's choice for one number of GPUs: buffers of up to `one_shot_max` bytes go to the
/// one-shot, up to `middle_max` to `middle` (a two-shot), larger ones to the ring; the kernels run
/// `blocks_per_sm` blocks per SM (1 or 2). Measured on H200s linked by NVLink through NVSwitch
/// (book/src/data/multi-gpu/), where each algorithm was timed at every size in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossover {
    pub gpus: usize,
    pub one_shot_max: usize,
    pub middle: Algorithm,
    pub middle_max: usize,
    pub blocks_per_sm: u32,
}

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

// ANCHOR: crossovers
/// The crossovers: a row serves its number of GPUs and any smaller one; the last row serves more.
pub const CROSSOVERS: [Crossover; 2] = [
    Crossover {
        gpus: 2,
        one_shot_max: 4 * MIB,
        middle: Algorithm::TwoShotWrites,
        middle_max: 128 * MIB,
        blocks_per_sm: 2,
    },
    Crossover {
        gpus: 4, // and any larger number
        one_shot_max: 128 * KIB,
        middle: Algorithm::TwoShot,
        middle_max: 64 * MIB,
        blocks_per_sm: 1,
    },
];
// ANCHOR_END: crossovers

/// What an all-reduce of one size on some GPUs does: its algorithm and, for the kernels, their
/// grid (the same on every GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllReducePlan {
    pub algorithm: Algorithm,
    pub blocks: u32,
    pub threads: u32,
}

// ANCHOR: plan
/// The plan for an all-reduce of `bytes` per GPU (`elements` of them) across `gpus` GPUs of
/// `shape`: the algorithm by the [`CROSSOVERS`], and for the kernels a block per 512 16-byte
/// vectors, at most the row's blocks per SM, so that every block of the grid runs at once (a block
/// waits for the same block of the other GPUs; the kernels' launch bounds fit two per SM).
pub fn all_reduce_plan(
    elements: usize,
    bytes: usize,
    gpus: usize,
    shape: GpuShape,
) -> AllReducePlan {
    let row =
        CROSSOVERS.iter().find(|c| c.gpus >= gpus).unwrap_or(&CROSSOVERS[CROSSOVERS.len() - 1]);
    let algorithm = if bytes <= row.one_shot_max {
        Algorithm::OneShot
    } else if bytes <= row.middle_max {
        row.middle
    } else {
        Algorithm::Ring
    };
    let most = most_peer_blocks(shape).min(shape.multiprocessors.max(1) * row.blocks_per_sm);
    let vectors = elements.div_ceil(4).max(1);
    let blocks = vectors.div_ceil(PEER_THREADS as usize).clamp(1, most.max(1) as usize) as u32;
    AllReducePlan { algorithm, blocks, threads: PEER_THREADS }
}
// ANCHOR_END: plan

/// The most blocks the kernels' grid may have: two per SM (the kernels' launch bounds), or one
/// where an SM holds fewer than 1024 threads, so that all of them run at once. Each GPU has flags
/// for that many blocks.
pub fn most_peer_blocks(shape: GpuShape) -> u32 {
    shape.multiprocessors.max(1) * (shape.max_threads_per_multiprocessor / PEER_THREADS).clamp(1, 2)
}

/// Why the one-shot and two-shot kernels cannot run on `world` (`None` when they can): between GPUs
/// without peer access (on the CPU simulator, between simulators not made as one world by
/// [`World::simulated`]). Enables peer access where it can.
fn peer_kernels_unavailable(world: &World) -> Result<Option<GpuError>> {
    let devices = world.devices();
    for (k, a) in devices.iter().enumerate() {
        for b in &devices[k + 1..] {
            if !a.enable_peer_access(b)? || !b.enable_peer_access(a)? {
                return Ok(Some(GpuError::Unsupported(format!(
                    "devices {} and {} cannot reach each other's memory (no peer access): use the \
                     ring",
                    a.ordinal(),
                    b.ordinal()
                ))));
            }
        }
    }
    Ok(None)
}

/// Why the one-shot and two-shot kernels cannot run on `world` (`None` when they can): tests that
/// need them are ignored with this reason.
pub fn peer_kernels_missing(world: &World) -> Option<String> {
    match peer_kernels_unavailable(world) {
        Ok(reason) => reason.map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    }
}

/// What one GPU holds for the kernels: its staging buffer (two halves), its inbox, the flags the
/// other GPUs write, its table of addresses, and its kernels.
struct Member<T: ReduceElement> {
    device: Device,
    staging: DeviceBuffer<T>,
    inbox: DeviceBuffer<T>,
    flags: DeviceBuffer<u64>,
    table: DeviceBuffer<u64>,
    /// What `table` holds now, so that it is written again only when an address changes.
    written: Vec<u64>,
    /// The kernels, by algorithm, then by operation.
    kernels: Vec<(Algorithm, KernelsByOp)>,
}

/// The kernels' side of a world: a member per GPU and the call counter the epochs come from.
struct PeerKernels<T: ReduceElement> {
    members: Vec<Member<T>>,
    /// Elements in half a staging buffer and in an inbox slot (multiples of 4).
    half: usize,
    slot: usize,
    calls: u64,
    /// The smallest GPU's shape (its SMs): the grid, the same on every GPU, must fit each.
    shape: GpuShape,
}

impl<T: ReduceElement> PeerKernels<T> {
    fn new(world: &World) -> Result<Self> {
        if let Some(error) = peer_kernels_unavailable(world)? {
            return Err(error);
        }
        let devices = world.devices();
        let kernels = |device: &Device| -> Result<Vec<(Algorithm, KernelsByOp)>> {
            let kinds = [
                (Algorithm::OneShot, "one_shot"),
                (Algorithm::TwoShot, "two_shot"),
                (Algorithm::TwoShotWrites, "two_shot_writes"),
            ];
            kinds
                .into_iter()
                .map(|(algorithm, kind)| Ok((algorithm, KernelsByOp::load::<T>(device, kind)?)))
                .collect()
        };
        let members = devices
            .iter()
            .map(|device| {
                let most_blocks = most_peer_blocks(device.facts().shape()) as usize;
                Ok(Member {
                    device: device.clone(),
                    staging: device.alloc(0)?,
                    inbox: device.alloc(0)?,
                    flags: device.alloc(most_blocks * devices.len())?,
                    table: device.alloc(4 + 4 * devices.len())?,
                    written: Vec::new(),
                    kernels: kernels(device)?,
                })
            })
            .collect::<Result<_>>()?;
        let shape = (devices.iter().map(|d| d.facts().shape()))
            .min_by_key(|shape| most_peer_blocks(*shape))
            .expect("a world has a device");
        // The flags are zeroed on their own GPU's stream; the other GPUs write into them: let the
        // zeroing finish before any kernel runs.
        devices.iter().try_for_each(Device::synchronize)?;
        Ok(PeerKernels { members, half: 0, slot: 0, calls: 0, shape })
    }

    /// The buffers `algorithm` needs hold `len` elements (the one-shot's staging buffers two halves
    /// of `len`, the two-shot by writes' inboxes a slot per GPU of a chunk), and every GPU's table
    /// the addresses of this call.
    fn prepare(
        &mut self,
        algorithm: Algorithm,
        len: usize,
        buffers: &[DeviceBuffer<T>],
    ) -> Result<()> {
        let gpus = self.members.len();
        let half = if algorithm == Algorithm::OneShot { len.next_multiple_of(4) } else { 0 };
        // A chunk has at most ceil(len / 4 / gpus) vectors, and the last one up to 3 elements more.
        let slot = if algorithm == Algorithm::TwoShotWrites {
            (len / 4).div_ceil(gpus) * 4 + 4
        } else {
            0
        };
        if half > self.half || slot > self.slot {
            // The other GPUs may still read the old buffers: let every GPU finish first.
            self.members.iter().try_for_each(|m| m.device.synchronize())?;
            for member in &mut self.members {
                if half > self.half {
                    member.staging = member.device.alloc(2 * half)?;
                }
                if slot > self.slot {
                    member.inbox = member.device.alloc(gpus * slot)?;
                }
            }
            self.half = self.half.max(half);
            self.slot = self.slot.max(slot);
            // The other GPUs write into the new buffers: let their zeroing finish first.
            self.members.iter().try_for_each(|m| m.device.synchronize())?;
        }
        let addresses: Vec<u64> = (self.members.iter().map(|m| m.staging.as_view().raw_address()))
            .chain(self.members.iter().map(|m| m.inbox.as_view().raw_address()))
            .chain(self.members.iter().map(|m| m.flags.as_view().raw_address()))
            .chain(buffers.iter().map(|b| b.as_view().raw_address()))
            .collect();
        for (rank, member) in self.members.iter_mut().enumerate() {
            let header = [rank as u64, gpus as u64, self.half as u64, self.slot as u64];
            let table: Vec<u64> = header.into_iter().chain(addresses.iter().copied()).collect();
            if member.written != table {
                member.table.copy_from_host(&table)?;
                member.written = table;
            }
        }
        Ok(())
    }

    /// One all-reduce of `buffers` by the one-shot or two-shot kernels, queued on every GPU.
    fn all_reduce(
        &mut self,
        algorithm: Algorithm,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()> {
        let len = buffers[0].len();
        self.prepare(algorithm, len, buffers)?;
        let plan =
            all_reduce_plan(len, len * std::mem::size_of::<T>(), self.members.len(), self.shape);
        let config = LaunchConfig::linear(plan.blocks, plan.threads, 0);
        // Call c meets at epochs 2c + 1 (and 2c + 2); its parity picks the staging half. 64 bits
        // never wrap (a call a nanosecond would take 292 years).
        let epoch = 2 * self.calls + 1;
        self.calls += 1;
        let _queueing = queueing();
        let launches = self
            .members
            .iter()
            .zip(buffers.iter())
            .map(|(member, buffer)| {
                let (_, kernels) = member
                    .kernels
                    .iter()
                    .find(|(a, _)| *a == algorithm)
                    .expect("kernels per algorithm");
                let kernel = kernels.get(op);
                member
                    .device
                    .launch(kernel, config)
                    .arg(buffer)
                    .arg(&member.table)
                    .arg(len as u64)
                    .arg(epoch)
            })
            .collect();
        launch_together(launches)
    }
}

/// Runs `algorithm` on the kernels' side of a world, after the checks every all-reduce makes.
fn peer_all_reduce<T: ReduceElement>(
    kernels: &mut PeerKernels<T>,
    algorithm: Algorithm,
    world: &World,
    op: ReduceOp,
    buffers: &mut [DeviceBuffer<T>],
) -> Result<()> {
    check_world(kernels.members.iter().map(|m| &m.device), world)?;
    let len = check_buffers(world, buffers)?;
    if kernels.members.len() == 1 || len == 0 {
        return Ok(());
    }
    kernels.all_reduce(algorithm, op, buffers)
}

// ANCHOR: one_shot
/// Step 4: every GPU reads every GPU's buffer over NVLink and folds them, one kernel per GPU.
pub struct OneShot<T: ReduceElement>(PeerKernels<T>);

impl<T: ReduceElement> AllReduce<T> for OneShot<T> {
    const STEP: &'static str = "one-shot";

    fn new(world: &World) -> Result<Self> {
        Ok(OneShot(PeerKernels::new(world)?))
    }

    fn all_reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()> {
        peer_all_reduce(&mut self.0, Algorithm::OneShot, world, op, buffers)
    }
}
// ANCHOR_END: one_shot

/// Step 5: every GPU reduces its 1/n of the buffer from every GPU and writes it into every GPU.
pub struct TwoShot<T: ReduceElement>(PeerKernels<T>);

impl<T: ReduceElement> AllReduce<T> for TwoShot<T> {
    const STEP: &'static str = "two-shot";

    fn new(world: &World) -> Result<Self> {
        Ok(TwoShot(PeerKernels::new(world)?))
    }

    fn all_reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()> {
        peer_all_reduce(&mut self.0, Algorithm::TwoShot, world, op, buffers)
    }
}

/// Step 6: the two-shot with every transfer over NVLink a store: each GPU writes the other GPUs'
/// chunks into their inboxes, and folds its own chunk in its own memory.
pub struct TwoShotWrites<T: ReduceElement>(PeerKernels<T>);

impl<T: ReduceElement> AllReduce<T> for TwoShotWrites<T> {
    const STEP: &'static str = "two-shot-writes";

    fn new(world: &World) -> Result<Self> {
        Ok(TwoShotWrites(PeerKernels::new(world)?))
    }

    fn all_reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()> {
        peer_all_reduce(&mut self.0, Algorithm::TwoShotWrites, world, op, buffers)
    }
}

// ANCHOR: by_size
/// Step 7: the plan's algorithm for each call ([`all_reduce_plan`]): the one-shot for small
/// buffers, a two-shot for middle ones, the ring for the largest.
pub struct BySize<T: ReduceElement> {
    kernels: PeerKernels<T>,
    ring: Ring<T>,
}

impl<T: ReduceElement> AllReduce<T> for BySize<T> {
    const STEP: &'static str = "by-size";

    fn new(world: &World) -> Result<Self> {
        Ok(BySize { kernels: PeerKernels::new(world)?, ring: Ring::new(world)? })
    }

    fn all_reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()> {
        let len = buffers.first().map_or(0, DeviceBuffer::len);
        let plan =
            all_reduce_plan(len, len * std::mem::size_of::<T>(), world.len(), self.kernels.shape);
        match plan.algorithm {
            Algorithm::Ring => self.ring.all_reduce(world, op, buffers),
            algorithm => peer_all_reduce(&mut self.kernels, algorithm, world, op, buffers),
        }
    }
}
// ANCHOR_END: by_size
