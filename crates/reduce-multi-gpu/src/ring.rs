//! Step 3: a ring all-reduce over peer-to-peer copies.
//!
//! The n GPUs form a ring (GPU i sends to GPU i + 1 mod n) and each buffer is cut into n chunks.
//!
//! - **Reduce-scatter**, n - 1 steps: at step s GPU i sends chunk (i - s) mod n to GPU i + 1, which
//!   folds it into its own copy of that chunk. After the last step GPU i holds chunk (i + 1) mod n
//!   reduced over every GPU.
//! - **All-gather**, n - 1 steps: at step s GPU i sends chunk (i + 1 - s) mod n, complete, to GPU
//!   i + 1, which keeps it. After the last step every GPU holds every chunk.
//!
//! Every link carries 2(n - 1)/n of the buffer and all links work at once, whatever n is: that is
//! why the ring is bandwidth-optimal, and why nccl-tests multiplies by 2(n - 1)/n to get the bus
//! bandwidth. [`ring_schedule`] lists the transfers; [`Ring`] runs them.
//!
//! Each chunk moves in pieces of [`PIECE_BYTES`] (fewer, larger ones past [`MAX_PIECES`] pieces; a
//! chunk of at most [`PIECE_BYTES`] moves whole): copies run on a second stream per GPU
//! (a fork of the device), folds on the device's own stream, and events order them, so that the
//! fold of piece p overlaps the copy of piece p + 1 and a GPU can forward piece p before the rest
//! of its chunk has arrived.

use std::ops::Range;

use gpu_harness::{
    Device, DeviceBuffer, Event, Kernel, KernelSource, LaunchConfig, Result, kernel_source,
};
use reduction::{ReduceElement, ReduceOp};

use crate::{AllReduce, World, check_buffers, check_world, part_range, queueing};

const SOURCE: KernelSource = kernel_source!("reduce_multi_gpu.cu");

/// Threads per block of the fold kernel.
pub const BLOCK_SIZE: u32 = 256;

/// The size of the pieces a chunk moves in, until there would be more than [`MAX_PIECES`].
pub const PIECE_BYTES: usize = 16 << 20;

/// The most pieces a chunk is cut into (each costs the host a few driver calls per GPU and step).
pub const MAX_PIECES: usize = 8;

/// The two halves of a ring all-reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Chunks are folded into the receiver's copy.
    ReduceScatter,
    /// Complete chunks are copied over the receiver's.
    AllGather,
}

/// One chunk sent from one GPU to the next at one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub phase: Phase,
    pub step: usize,
    pub from: usize,
    pub to: usize,
    pub chunk: usize,
    /// The chunk's elements.
    pub elements: Range<usize>,
}

// ANCHOR: schedule
/// Every transfer of a ring all-reduce of `len` elements over `gpus` GPUs, in order: step by step,
/// reduce-scatter then all-gather; within a step, every GPU sends at once.
pub fn ring_schedule(len: usize, gpus: usize) -> Vec<Transfer> {
    let mut transfers = Vec::new();
    for (phase, first_chunk) in [(Phase::ReduceScatter, 0), (Phase::AllGather, 1)] {
        for step in 0..gpus.saturating_sub(1) {
            for from in 0..gpus {
                // ANCHOR: solution the chunk GPU `from` sends at `step`, (from - step) mod gpus in the reduce-scatter and one further, (from + 1 - step) mod gpus, in the all-gather (first_chunk is 0 or 1), and its elements (part_range)
                let chunk = (from + first_chunk + gpus - step) % gpus;
                let elements = part_range(len, gpus, chunk);
                // ANCHOR_END: solution
                // ANCHOR: stub let chunk = (from + first_chunk) % gpus;
                // ANCHOR: stub let elements = part_range(len, gpus, chunk);
                transfers.push(Transfer {
                    phase,
                    step,
                    from,
                    to: (from + 1) % gpus,
                    chunk,
                    elements,
                });
            }
        }
    }
    transfers
}
// ANCHOR_END: schedule

/// The most elements one transfer of [`ring_schedule`] moves (the largest chunk): what a landing
/// slot holds, and what sets how many pieces a chunk moves in.
pub fn largest_transfer(len: usize, gpus: usize) -> usize {
    ring_schedule(len, gpus).iter().map(|t| t.elements.len()).max().unwrap_or(0)
}

/// The launch of the fold over `n` elements: one wave of blocks at most.
pub(crate) fn fold_config(device: &Device, n: usize) -> LaunchConfig {
    let resident = device.facts().shape().resident_blocks(BLOCK_SIZE) as usize;
    LaunchConfig::linear(n.div_ceil(BLOCK_SIZE as usize).clamp(1, resident) as u32, BLOCK_SIZE, 0)
}

/// One GPU's kernels of one kind, one per operation: `<kind>_<op>_<type>` (the ring's folds,
/// `ring_combine`, which NCCL's f32 min and max use too, and the one-shot and two-shot kernels).
pub(crate) struct KernelsByOp(Vec<(ReduceOp, Kernel)>);

impl KernelsByOp {
    pub(crate) fn load<T: ReduceElement>(device: &Device, kind: &str) -> Result<KernelsByOp> {
        let kernel =
            |op: ReduceOp| device.kernel(&SOURCE, &format!("{kind}_{}_{}", op.name(), T::SUFFIX));
        Ok(KernelsByOp(
            ReduceOp::ALL.iter().map(|&op| Ok((op, kernel(op)?))).collect::<Result<_>>()?,
        ))
    }

    pub(crate) fn get(&self, op: ReduceOp) -> &Kernel {
        &self.0.iter().find(|(o, _)| *o == op).expect("a kernel per operation").1
    }
}

/// How many pieces a chunk of `chunk_bytes` moves in.
pub fn pieces(chunk_bytes: usize) -> usize {
    chunk_bytes.div_ceil(PIECE_BYTES).clamp(1, MAX_PIECES)
}

/// Where a ring operation is queued: GPU g's own stream (the device's), or its copy stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Queue {
    Main(usize),
    Copier(usize),
}

/// The events each GPU has, recorded again at every step: its stream has reached the all-reduce;
/// its fold of piece p is done; its copy of piece p to the next GPU is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    Start,
    Folded(usize),
    Sent(usize),
}

impl Signal {
    /// The queue GPU `gpu` records this signal on.
    pub fn queue(self, gpu: usize) -> Queue {
        match self {
            Signal::Start | Signal::Folded(_) => Queue::Main(gpu),
            Signal::Sent(_) => Queue::Copier(gpu),
        }
    }
}

/// One operation of a ring all-reduce, in the order the host queues them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingOp {
    /// GPU `gpu` records `signal` (on [`Signal::queue`]).
    Record { gpu: usize, signal: Signal },
    /// `queue` waits for what GPU `gpu`'s `signal` last recorded.
    Wait { queue: Queue, gpu: usize, signal: Signal },
    /// On `from`'s copy stream: its `elements` to GPU `to`, into its landing slot `slot` of
    /// `received` (reduce-scatter) or over the same elements of its buffer (all-gather, `slot`
    /// None).
    Send { from: usize, to: usize, elements: Range<usize>, slot: Option<Range<usize>> },
    /// On `gpu`'s stream: `buffer[elements] = op(buffer[elements], received[slot])`.
    Fold { gpu: usize, elements: Range<usize>, slot: Range<usize> },
}

/// A ring all-reduce as a list of operations: what [`Ring`] queues, and what a test checks for
/// races without a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingPlan {
    pub ops: Vec<RingOp>,
    /// Elements of each piece's landing slot in `received` (which holds `pieces` slots).
    pub slot: usize,
    pub pieces: usize,
}

// ANCHOR: plan
/// The operations of a ring all-reduce of `len` elements over `gpus` GPUs, chunks cut into
/// `pieces` pieces. Every wait is queued before the event it names is recorded again, so it waits
/// for the previous step's record.
pub fn ring_plan(len: usize, gpus: usize, pieces: usize) -> RingPlan {
    let slot = largest_transfer(len, gpus).div_ceil(pieces);
    let mut ops = Vec::new();
    // Piece p of the chunk a transfer moves, and where it lands in the receiver's `received`.
    let piece = |t: &Transfer, p: usize| {
        let within = part_range(t.elements.len(), pieces, p);
        (
            t.elements.start + within.start..t.elements.start + within.end,
            p * slot..p * slot + within.len(),
        )
    };
    // A GPU's copies start once its own stream and the next GPU's have reached this all-reduce
    // (what they queued before, the buffers' inputs and `received`'s allocation, is done).
    for gpu in 0..gpus {
        ops.push(RingOp::Record { gpu, signal: Signal::Start });
    }
    for gpu in 0..gpus {
        ops.push(RingOp::Wait { queue: Queue::Copier(gpu), gpu, signal: Signal::Start });
        ops.push(RingOp::Wait {
            queue: Queue::Copier(gpu),
            gpu: (gpu + 1) % gpus,
            signal: Signal::Start,
        });
    }
    for step in ring_schedule(len, gpus).chunks(gpus) {
        let phase = step[0].phase;
        for p in 0..pieces {
            for t in step {
                let copier = Queue::Copier(t.from);
                match phase {
                    // The sender's piece must hold its own fold of the previous step, and the
                    // receiver must have folded in what last landed in this piece's slot.
                    Phase::ReduceScatter => {
                        ops.push(RingOp::Wait {
                            queue: copier,
                            gpu: t.from,
                            signal: Signal::Folded(p),
                        });
                        ops.push(RingOp::Wait {
                            queue: copier,
                            gpu: t.to,
                            signal: Signal::Folded(p),
                        });
                    }
                    // The sender's piece must be complete: folded by it in the last reduce-scatter
                    // step, or received in the previous all-gather step.
                    Phase::AllGather if t.step == 0 => ops.push(RingOp::Wait {
                        queue: copier,
                        gpu: t.from,
                        signal: Signal::Folded(p),
                    }),
                    Phase::AllGather => {
                        let previous = (t.from + gpus - 1) % gpus;
                        ops.push(RingOp::Wait {
                            queue: copier,
                            gpu: previous,
                            signal: Signal::Sent(p),
                        });
                    }
                }
            }
            for t in step {
                let (elements, slot) = piece(t, p);
                let slot = (phase == Phase::ReduceScatter).then_some(slot);
                ops.push(RingOp::Send { from: t.from, to: t.to, elements, slot });
                ops.push(RingOp::Record { gpu: t.from, signal: Signal::Sent(p) });
            }
            if phase == Phase::ReduceScatter {
                for t in step {
                    let (elements, slot) = piece(t, p);
                    ops.push(RingOp::Wait {
                        queue: Queue::Main(t.to),
                        gpu: t.from,
                        signal: Signal::Sent(p),
                    });
                    ops.push(RingOp::Fold { gpu: t.to, elements, slot });
                    ops.push(RingOp::Record { gpu: t.to, signal: Signal::Folded(p) });
                }
            }
        }
    }
    // Each GPU's stream waits for the copies into its buffer (the previous GPU's) and out of it.
    for gpu in 0..gpus {
        let queue = Queue::Main(gpu);
        ops.push(RingOp::Wait {
            queue,
            gpu: (gpu + gpus - 1) % gpus,
            signal: Signal::Sent(pieces - 1),
        });
        ops.push(RingOp::Wait { queue, gpu, signal: Signal::Sent(pieces - 1) });
    }
    RingPlan { ops, slot, pieces }
}
// ANCHOR_END: plan

/// What one GPU needs to take part in the ring.
struct Member {
    device: Device,
    /// A fork of `device`: the stream the GPU's outgoing copies go to.
    copier: Device,
    /// The fold kernels, by operation.
    folds: KernelsByOp,
    /// Per piece: the fold of the piece into this GPU's chunk is done (so its data can be sent on
    /// and its landing place reused).
    folded: Vec<Event>,
    /// Per piece: this GPU's copy of the piece to the next GPU is done.
    sent: Vec<Event>,
    /// The device's stream has reached the all-reduce (its buffer is ready to be read).
    start: Event,
}

/// A ring all-reduce of buffers of `T` over the GPUs of a world.
pub struct Ring<T: ReduceElement> {
    members: Vec<Member>,
    /// Per GPU: where chunks arriving during the reduce-scatter land before they are folded in.
    received: Vec<DeviceBuffer<T>>,
}

impl<T: ReduceElement> Ring<T> {
    /// Makes sure every member has room for a chunk of `elements` and events for `pieces` pieces.
    fn reserve(&mut self, elements: usize, pieces: usize) -> Result<()> {
        for (member, received) in self.members.iter_mut().zip(&mut self.received) {
            if received.len() < elements {
                *received = member.device.alloc(elements)?;
            }
            while member.folded.len() < pieces {
                member.folded.push(member.device.event()?);
                member.sent.push(member.device.event()?);
            }
        }
        Ok(())
    }
}

impl<T: ReduceElement> AllReduce<T> for Ring<T> {
    const STEP: &'static str = "ring";

    fn new(world: &World) -> Result<Self> {
        let members = world
            .devices()
            .iter()
            .map(|device| {
                Ok(Member {
                    device: device.clone(),
                    copier: device.fork()?,
                    folds: KernelsByOp::load::<T>(device, "ring_combine")?,
                    folded: Vec::new(),
                    sent: Vec::new(),
                    start: device.event()?,
                })
            })
            .collect::<Result<_>>()?;
        let received = world.devices().iter().map(|d| d.alloc(0)).collect::<Result<_>>()?;
        Ok(Ring { members, received })
    }

    // ANCHOR: ring
    fn all_reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()> {
        check_world(self.members.iter().map(|m| &m.device), world)?;
        let len = check_buffers(world, buffers)?;
        let n = self.members.len();
        if n == 1 || len == 0 {
            return Ok(());
        }
        let pieces = pieces(largest_transfer(len, n) * std::mem::size_of::<T>());
        let plan = ring_plan(len, n, pieces);
        self.reserve(plan.slot * pieces, pieces)?;
        let _queueing = queueing();
        let (members, received) = (&self.members, &mut self.received);
        let event = |gpu: usize, signal: Signal| match signal {
            Signal::Start => &members[gpu].start,
            Signal::Folded(p) => &members[gpu].folded[p],
            Signal::Sent(p) => &members[gpu].sent[p],
        };
        let queue = |queue: Queue| match queue {
            Queue::Main(gpu) => &members[gpu].device,
            Queue::Copier(gpu) => &members[gpu].copier,
        };
        for step in plan.ops {
            match step {
                RingOp::Record { gpu, signal } => {
                    queue(signal.queue(gpu)).record(event(gpu, signal))?
                }
                RingOp::Wait { queue: waiting, gpu, signal } => {
                    queue(waiting).wait_for(event(gpu, signal))?
                }
                RingOp::Send { from, to, elements, slot: Some(slot) } => {
                    let source = buffers[from].view(elements)?;
                    members[from].copier.copy_into(source, &mut received[to], slot.start)?;
                }
                RingOp::Send { from, to, elements, slot: None } => {
                    let (source, target) = pair(buffers, from, to);
                    members[from].copier.copy_into(
                        source.view(elements.clone())?,
                        target,
                        elements.start,
                    )?;
                }
                RingOp::Fold { gpu, elements, slot } if !elements.is_empty() => {
                    let device = &members[gpu].device;
                    let fold = members[gpu].folds.get(op);
                    device
                        .launch(fold, fold_config(device, elements.len()))
                        .arg(buffers[gpu].view(elements.clone())?)
                        .arg(received[gpu].view(slot)?)
                        .arg(elements.len() as u64)
                        .run()?;
                }
                RingOp::Fold { .. } => {}
            }
        }
        Ok(())
    }
    // ANCHOR_END: ring
}

/// `buffers[from]` to read and `buffers[to]` to write (`from != to`).
fn pair<T: ReduceElement>(
    buffers: &mut [DeviceBuffer<T>],
    from: usize,
    to: usize,
) -> (&DeviceBuffer<T>, &mut DeviceBuffer<T>) {
    if from < to {
        let (low, high) = buffers.split_at_mut(to);
        (&low[from], &mut high[0])
    } else {
        let (low, high) = buffers.split_at_mut(from);
        (&high[0], &mut low[to])
    }
}
