//! The interpreter: a [`Machine`] with global memory that launches kernels of a [`Module`].
//!
//! A block's state is laid out for warps: the registers of warp `w` are `32 * num_regs` values,
//! register `r` of its 32 lanes side by side, so a warp instruction reads and writes whole rows.
//! Each warp keeps its runnable lanes grouped by PC (sorted, distinct PCs); the group with the
//! lowest PC runs next, which is min-PC scheduling without scanning 32 lane PCs per step.
//!
//! Every launch runs cluster by cluster (a kernel without `.reqnctapercluster` has clusters of one
//! block). The state of each CTA of the running cluster is kept in a [`Cta`]; the one that runs is
//! swapped into the [`Block`]'s fields of the same names, so the interpreter works on plain fields,
//! and `shared::cluster` accesses reach the others' shared memory where it is kept.
//!
//! Launches run together ([`Machine::launch_together`], one per GPU of a simulated world) go one
//! level further: each launch's CTA, parameters and counters are kept in a [`Parked`] and swapped
//! into the [`Block`] for its turn, and [`Block::run`] pauses after a turn of warp instructions, so
//! that block `b` of every launch runs interleaved with block `b` of the others.

use std::mem::MaybeUninit;

use crate::decode::{
    AluOp, Arg, BoolOp, Cmp, CmpType, Dst, Inst, Kind, MemAccess, Order, ShflMode, Src,
};
use crate::error::{Fault, FaultSite, SimError};
use crate::lane::{f32_result, f64_result, sext};
use crate::memory::{CLUSTER_WINDOW, GlobalMemory, RANK_STRIDE, SHARED_WINDOW, read_le, write_le};
use crate::ptx::{Instr, Kernel, MemBase, Module, Operand, Space, Special, Symbol, Type};
use crate::stats::{LaunchStats, bank_conflicts, sectors, shared_atomic_conflicts};
use crate::trace::{AccessKind, AccessSpace, LaunchTrace, Recorder, TraceOptions};

/// The default budget of warp instructions per block: 2^26, about 67 million.
///
/// The largest legitimate per-block work in the course's tests is one block of 256 threads looping
/// over 2^24 elements: 65,536 iterations per thread, 8 warps, at most about 10 warp instructions
/// per iteration, so about 5 million warp instructions, 13 times less than the budget (a warp-wide
/// loop issues one warp instruction for 32 elements). A block that never finishes is stopped after
/// 2^26 warp instructions, a few seconds of simulation. Only a single thread looping alone over
/// millions of elements needs more: raise the budget for such launches with
/// [`Machine::set_instruction_budget`] or [`INSTRUCTION_BUDGET_VAR`].
pub const DEFAULT_INSTRUCTION_BUDGET: u64 = 1 << 26;
/// The environment variable that overrides [`DEFAULT_INSTRUCTION_BUDGET`] for machines made by
/// [`Machine::new`] (a positive integer: warp instructions per block).
pub const INSTRUCTION_BUDGET_VAR: &str = "PTX_SIM_INSTRUCTION_BUDGET";
/// Warp instructions a warp runs before the scheduler moves on to the next warp.
const SLICE: u32 = 4096;
/// Warp instructions a block of [`Machine::launch_together`] runs before the same block of the
/// next launch takes its turn (the turn ends after the round of warps that reaches it).
const TURN: u64 = SLICE as u64;
/// Largest shared memory per block (Hopper: 227 KiB).
const MAX_SHARED: u64 = 227 * 1024;
/// Most blocks in a cluster (Hopper: 8 portably, 16 where the kernel allows a non-portable size).
const MAX_CLUSTER: u64 = 16;

/// A kernel argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    /// Raw bytes, for `.b8` array (struct) parameters.
    Bytes(Vec<u8>),
}

impl ParamValue {
    fn bytes(&self) -> Vec<u8> {
        match self {
            ParamValue::U32(v) => v.to_le_bytes().to_vec(),
            ParamValue::I32(v) => v.to_le_bytes().to_vec(),
            ParamValue::U64(v) => v.to_le_bytes().to_vec(),
            ParamValue::I64(v) => v.to_le_bytes().to_vec(),
            ParamValue::F32(v) => v.to_le_bytes().to_vec(),
            ParamValue::F64(v) => v.to_le_bytes().to_vec(),
            ParamValue::Bytes(b) => b.clone(),
        }
    }
}

/// A simulated device: global memory, and launches that run on it.
///
/// Each block of a launch may run at most [`Machine::instruction_budget`] warp instructions; a
/// block that runs more (a spin-wait on a flag nothing sets, threads that wait at a barrier for
/// threads that never come) stops the launch with [`Fault::InstructionBudgetExceeded`], naming the
/// kernel, the block and the warp that was running.
pub struct Machine {
    global: GlobalMemory,
    instruction_budget: u64,
    /// What [`Machine::launch`] records, when it traces ([`Machine::set_tracing`]).
    tracing: Option<TraceOptions>,
    /// The traces recorded since [`Machine::take_traces`].
    traces: Vec<LaunchTrace>,
}

impl Default for Machine {
    /// A machine with no allocations and the instruction budget of [`Machine::new`].
    fn default() -> Machine {
        Machine {
            global: GlobalMemory::default(),
            instruction_budget: budget_from_environment(),
            tracing: None,
            traces: Vec::new(),
        }
    }
}

/// [`INSTRUCTION_BUDGET_VAR`] if set, else [`DEFAULT_INSTRUCTION_BUDGET`].
///
/// # Panics
/// If the variable is set to anything but a positive integer.
fn budget_from_environment() -> u64 {
    budget_from(std::env::var(INSTRUCTION_BUDGET_VAR).ok().as_deref())
}

/// The budget the value of [`INSTRUCTION_BUDGET_VAR`] asks for (`None`: unset).
fn budget_from(value: Option<&str>) -> u64 {
    match value {
        None => DEFAULT_INSTRUCTION_BUDGET,
        Some(text) => match text.trim().parse::<u64>() {
            Ok(budget) if budget > 0 => budget,
            _ => panic!(
                "{INSTRUCTION_BUDGET_VAR} must be a positive number of warp instructions, not \
                 `{text}`"
            ),
        },
    }
}

impl Machine {
    /// A machine with no allocations. Its instruction budget is [`DEFAULT_INSTRUCTION_BUDGET`], or
    /// the value of the environment variable [`INSTRUCTION_BUDGET_VAR`] when that is set.
    pub fn new() -> Machine {
        Machine::default()
    }

    /// The most warp instructions one block of a launch may run.
    pub fn instruction_budget(&self) -> u64 {
        self.instruction_budget
    }

    /// Sets the most warp instructions one block of a launch may run (at least 1); see
    /// [`DEFAULT_INSTRUCTION_BUDGET`] for the default and how it was chosen.
    pub fn set_instruction_budget(&mut self, warp_instructions: u64) {
        self.instruction_budget = warp_instructions.max(1);
    }

    /// Traces the launches that follow ([`Machine::launch`]; not [`Machine::launch_together`])
    /// with `options`, or stops tracing (`None`, the default). A traced launch counts exactly what
    /// an untraced one does; its record ([`LaunchTrace`]) waits in the machine for
    /// [`Machine::take_traces`], even when the launch faults.
    pub fn set_tracing(&mut self, options: Option<TraceOptions>) {
        self.tracing = options;
    }

    /// The traces of the launches traced since the last call, in launch order, and forgets them.
    pub fn take_traces(&mut self) -> Vec<LaunchTrace> {
        std::mem::take(&mut self.traces)
    }

    /// Allocates `bytes` zeroed bytes of global memory; returns the device address.
    pub fn alloc(&mut self, bytes: usize) -> Result<u64, SimError> {
        self.global.alloc(bytes)
    }

    /// Frees the allocation that [`Machine::alloc`] returned as `addr`.
    pub fn free(&mut self, addr: u64) -> Result<(), SimError> {
        self.global.free(addr)
    }

    /// Copies `len` bytes from device address `from` to device address `to` (device to device).
    pub fn copy(&mut self, from: u64, to: u64, len: usize) -> Result<(), SimError> {
        let bytes = self.read(from, len)?;
        self.write(to, &bytes)
    }

    /// Copies `bytes` to device address `addr`.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), SimError> {
        let out = self
            .global
            .slice_mut(addr, bytes.len())
            .ok_or(SimError::HostAccess { addr, len: bytes.len() })?;
        out.copy_from_slice(bytes);
        Ok(())
    }

    /// Copies `len` bytes from device address `addr`.
    pub fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, SimError> {
        self.global.slice(addr, len).map(<[u8]>::to_vec).ok_or(SimError::HostAccess { addr, len })
    }

    /// Runs `kernel` of `module` over `grid` blocks of `block` threads with `shared_bytes` of
    /// dynamic shared memory. Blocks run one after another, in order of their linear index.
    ///
    /// A kernel that declares a cluster shape (`.reqnctapercluster`, from CUDA's
    /// `__cluster_dims__`) runs cluster by cluster instead, in order of the clusters' linear index,
    /// and the blocks of a cluster run interleaved: each in turn, rank 0 first, until it has
    /// finished or every thread it has left waits at the cluster barrier (`barrier.cluster.wait`);
    /// when every block of the cluster is there, the barrier completes and they run again in turn.
    /// The grid must be a whole number of clusters in each dimension.
    pub fn launch(
        &mut self,
        module: &Module,
        kernel: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        params: &[ParamValue],
    ) -> Result<LaunchStats, SimError> {
        let k = checked_kernel(module, kernel, grid, block, shared_bytes)?;
        let (param_buf, param_offsets) = pack_params(k, params)?;
        let mut stats = LaunchStats::default();
        let (cx, cy, cz) = k.cluster;
        let recorder = self.tracing.map(|options| Box::new(Recorder::new(options, k, grid, block)));
        let mut ctx = Block::new(
            k,
            grid,
            block,
            shared_bytes,
            (&param_buf, &param_offsets),
            &mut stats,
            self,
        );
        ctx.recorder = recorder;
        let mut run = || {
            for z in (0..grid.2).step_by(cz as usize) {
                for y in (0..grid.1).step_by(cy as usize) {
                    for x in (0..grid.0).step_by(cx as usize) {
                        ctx.start_cluster((x, y, z));
                        ctx.run_cluster().map_err(|f| ctx.site(f))?;
                        ctx.count_finished_ctas();
                    }
                }
            }
            Ok(())
        };
        let result = run();
        let recorder = ctx.recorder.take();
        drop(ctx);
        if let Some(recorder) = recorder {
            self.traces.push(recorder.trace);
        }
        result.map(|()| stats)
    }

    /// Runs `params.len()` launches of `kernel` at the same time, one per parameter list, all over
    /// the same `grid` of `block` threads with `shared_bytes` of dynamic shared memory, in this
    /// machine's one global memory; returns each launch's counters, in the order of `params`.
    ///
    /// This is how the simulator runs kernels that wait for each other, one per GPU of a simulated
    /// world sharing this memory (each launch reads and writes the others' buffers, and they meet
    /// at flags, written with `st.release` and spun on with `ld.acquire`): run one after another,
    /// the first would spin forever on a flag the second has not written yet. Blocks run in order
    /// of their linear index, as in [`Machine::launch`], and block `b` of every launch runs
    /// interleaved with block `b` of the others: each in turn, launch 0 first, for a turn of at
    /// least 4096 warp instructions (the turn ends after the round, in which every warp of the
    /// block has its slice, that reaches 4096), until all have finished. So block `b` of one launch
    /// may wait for block `b` (or an earlier block) of another, never for a later block.
    ///
    /// Each block keeps its own instruction budget over all its turns: a block that spins on a
    /// flag nobody writes (every launch waiting for another, say) ends the call with
    /// [`Fault::InstructionBudgetExceeded`], whose [`FaultSite::launch`] names the launch. The
    /// kernel must not declare a cluster shape (its blocks would be interleaved two ways).
    pub fn launch_together(
        &mut self,
        module: &Module,
        kernel: &str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        params: &[Vec<ParamValue>],
    ) -> Result<Vec<LaunchStats>, SimError> {
        let k = checked_kernel(module, kernel, grid, block, shared_bytes)?;
        if k.cluster != (1, 1, 1) {
            return Err(SimError::BadLaunch {
                kernel: kernel.to_string(),
                reason: format!(
                    "launches run together cannot be of a kernel with a cluster shape (it \
                     declares clusters of {:?} \
                     blocks): its blocks would be interleaved with their cluster and with the \
                     other launches at once",
                    k.cluster
                ),
            });
        }
        let packed = params.iter().map(|p| pack_params(k, p)).collect::<Result<Vec<_>, _>>()?;
        let mut stats = vec![LaunchStats::default(); params.len()];
        let Some((_, param_offsets)) = packed.first() else { return Ok(stats) };
        // Each launch's CTA, parameters and counters, swapped into the block to take its turn.
        let threads = (block.0 * block.1 * block.2) as usize;
        let shared_total = k.dynamic_shared_offset as usize + shared_bytes as usize;
        let mut launches: Vec<Parked> = packed
            .iter()
            .zip(&mut stats)
            .map(|((param_buf, _), stats)| Parked {
                ctas: vec![Cta::new(threads.div_ceil(32), k.num_regs as usize, shared_total)],
                params: param_buf,
                stats,
            })
            .collect();
        // The block's own parameters and counters are never used: a launch's are swapped in for
        // its turns.
        let mut unused = LaunchStats::default();
        let mut ctx =
            Block::new(k, grid, block, shared_bytes, (&[], param_offsets), &mut unused, self);
        ctx.turn = TURN;
        for z in 0..grid.2 {
            for y in 0..grid.1 {
                for x in 0..grid.0 {
                    ctx.run_together((x, y, z), &mut launches)?;
                }
            }
        }
        drop(launches);
        Ok(stats)
    }
}

/// `kernel` of `module`, after checking that a launch of it over `grid` blocks of `block` threads
/// with `shared_bytes` of dynamic shared memory fits it and the simulator.
fn checked_kernel<'m>(
    module: &'m Module,
    kernel: &str,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_bytes: u32,
) -> Result<&'m Kernel, SimError> {
    let k = module.kernel(kernel).ok_or_else(|| SimError::NoSuchKernel(kernel.to_string()))?;
    let bad = |reason: String| SimError::BadLaunch { kernel: kernel.to_string(), reason };
    let threads = block.0 as u64 * block.1 as u64 * block.2 as u64;
    if threads == 0 || threads > 1024 {
        return Err(bad(format!("block {block:?} has {threads} threads (1 to 1024 allowed)")));
    }
    if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 || grid.1 > 65535 || grid.2 > 65535 {
        return Err(bad(format!("grid {grid:?} is empty or too large")));
    }
    let shared_total = k.dynamic_shared_offset as u64 + shared_bytes as u64;
    if shared_total > MAX_SHARED {
        return Err(bad(format!("{shared_total} bytes of shared memory (at most {MAX_SHARED})")));
    }
    if k.cluster_shape_at_launch {
        return Err(bad(
            "the kernel declares `.explicitcluster` without `.reqnctapercluster`: its cluster \
             shape is given at \
             launch, which the simulator's launch cannot do"
                .into(),
        ));
    }
    let (cx, cy, cz) = k.cluster;
    let cluster_size = cx as u64 * cy as u64 * cz as u64;
    if cluster_size > MAX_CLUSTER {
        return Err(bad(format!(
            "clusters of {:?}, {cluster_size} blocks (at most {MAX_CLUSTER})",
            k.cluster
        )));
    }
    if grid.0 % cx != 0 || grid.1 % cy != 0 || grid.2 % cz != 0 {
        return Err(bad(format!(
            "grid {grid:?} is not a whole number of the kernel's clusters of {:?} blocks \
             (`.reqnctapercluster`) in \
             each dimension",
            k.cluster
        )));
    }
    Ok(k)
}

/// The parameter space of a launch of `k` with `params`: its bytes, and the offset of each
/// parameter in them (aligned as declared), after checking the values against the declarations.
fn pack_params(k: &Kernel, params: &[ParamValue]) -> Result<(Vec<u8>, Vec<u64>), SimError> {
    let bad = |reason: String| SimError::BadLaunch { kernel: k.name.clone(), reason };
    if params.len() != k.params.len() {
        return Err(bad(format!("{} parameters declared, {} given", k.params.len(), params.len())));
    }
    let mut param_buf = Vec::new();
    let mut param_offsets = Vec::new();
    for (i, (decl, value)) in k.params.iter().zip(params).enumerate() {
        let bytes = value.bytes();
        if bytes.len() != decl.size as usize {
            return Err(bad(format!(
                "parameter {i} (`{}`) is {} bytes, the value given is {value:?} ({} bytes)",
                decl.name,
                decl.size,
                bytes.len()
            )));
        }
        let offset = param_buf.len().next_multiple_of(decl.align.max(1) as usize);
        param_buf.resize(offset, 0);
        param_buf.extend_from_slice(&bytes);
        param_offsets.push(offset as u64);
    }
    Ok((param_buf, param_offsets))
}

/// A fault in a thread (block-linear index) at an instruction.
struct LaneFault {
    thread: usize,
    pc: usize,
    fault: Fault,
}

pub(crate) type Lane<T> = Result<T, Fault>;

/// The lanes of a warp, by PC.
#[derive(Default)]
struct Warp {
    /// Runnable lanes: (PC, lane mask), sorted by PC, PCs distinct, masks disjoint and non-empty.
    groups: Vec<(u32, u32)>,
    /// Lanes waiting at a barrier: (PC of the barrier, lane mask).
    waiting: Vec<(u32, u32)>,
    /// Lanes waiting at a named barrier: (PC of the barrier, lane mask, barrier id).
    named: Vec<(u32, u32, u32)>,
    /// Lanes waiting at the cluster barrier (`barrier.cluster.wait`): (PC of the wait, lane mask).
    cluster_waiting: Vec<(u32, u32)>,
    /// Lanes that arrived at the cluster barrier in its current phase (not yet complete).
    cluster_arrived: u32,
    /// Lanes that arrived in a phase that has completed and have not waited since: their next wait
    /// returns at once.
    cluster_passed: u32,
}

impl Warp {
    /// Lanes that wait at a block or named barrier without having arrived at the cluster barrier,
    /// as (PC, lane mask), if any: when every thread of the cluster waits, these never arrive.
    fn not_arrived(&self) -> Option<(u32, u32)> {
        let blocked =
            self.waiting.iter().copied().chain(self.named.iter().map(|&(pc, mask, _)| (pc, mask)));
        blocked.map(|(pc, mask)| (pc, mask & !self.cluster_arrived)).find(|&(_, mask)| mask != 0)
    }

    /// The cluster barrier's phase completes: the lanes waiting for it go on, and the lanes that
    /// arrived but have not reached their wait yet will pass it.
    fn pass_cluster_barrier(&mut self) {
        let mut released = 0;
        for (pc, mask) in self.cluster_waiting.drain(..) {
            insert_group(&mut self.groups, pc + 1, mask);
            released |= mask;
        }
        self.cluster_passed |= self.cluster_arrived & !released;
        self.cluster_arrived = 0;
    }
}

/// The state of one CTA of the running cluster: while another CTA runs, it is kept here; while it
/// runs, it is swapped into the [`Block`]'s fields of the same names (see [`Block::swap_cta`]).
#[derive(Default)]
struct Cta {
    ctaid: (u32, u32, u32),
    regs: Vec<u64>,
    warps: Vec<Warp>,
    arrived: [u32; NAMED_BARRIERS],
    issued: Vec<u64>,
    shared: Vec<u8>,
    steps: u64,
    ran_a_block: bool,
    /// Whether every thread of the CTA has exited (its shared memory is gone).
    exited: bool,
}

impl Cta {
    /// A CTA of `nwarps` warps of `nregs` registers with `shared_bytes` of shared memory, zeroed.
    fn new(nwarps: usize, nregs: usize, shared_bytes: usize) -> Cta {
        Cta {
            regs: vec![0; nwarps * nregs * 32],
            warps: (0..nwarps).map(|_| Warp::default()).collect(),
            issued: vec![0; nwarps],
            shared: vec![0; shared_bytes],
            ..Cta::default()
        }
    }
}

/// The named barriers (`bar.sync id, count`) of a block: threads arrived at each id so far.
const NAMED_BARRIERS: usize = 16;

/// Adds `mask` lanes at `pc` to sorted groups, merging with a group already at `pc`.
fn insert_group(groups: &mut Vec<(u32, u32)>, pc: u32, mask: u32) {
    if mask == 0 {
        return;
    }
    match groups.binary_search_by_key(&pc, |g| g.0) {
        Ok(i) => groups[i].1 |= mask,
        Err(i) => groups.insert(i, (pc, mask)),
    }
}

/// The memory accesses of the current warp instruction, `(address or offset, bytes)` per lane,
/// the byte offsets of its shared atomics, and scratch space to count them without allocating.
#[derive(Default)]
struct Trace {
    shared: Vec<(u64, u32)>,
    global: Vec<(u64, u32)>,
    shared_atomics: Vec<u64>,
    scratch: Vec<u64>,
    /// Whether a lane of the current warp instruction reached another CTA's shared memory.
    distributed: bool,
}

/// How the lanes of the running group move on after a warp instruction.
enum Flow {
    /// Every lane goes to the next instruction.
    Next,
    /// `taken` lanes go to `target`, the rest to the next instruction.
    Branch { target: u32, taken: u32 },
    /// These lanes exit; the rest go to the next instruction.
    Exit(u32),
    /// These lanes wait at the barrier; the rest go to the next instruction.
    Barrier(u32),
    /// These lanes wait at named barrier `id` until `count` threads have arrived there.
    NamedBarrier { waiting: u32, id: u32, count: u32 },
    /// These lanes wait at the cluster barrier; the rest go to the next instruction.
    ClusterWait(u32),
}

/// The state of one block while it runs, and of the other blocks (CTAs) of its cluster.
pub(crate) struct Block<'a> {
    kernel: &'a Kernel,
    code: &'a [Inst],
    ctaid: (u32, u32, u32),
    nctaid: (u32, u32, u32),
    ntid: (u32, u32, u32),
    /// The shape of a cluster, in blocks ((1, 1, 1): clusters of one block).
    cluster: (u32, u32, u32),
    nthreads: usize,
    nregs: usize,
    /// Register `r` of lane `l` of warp `w` is at `(w * nregs + r) * 32 + l`.
    regs: Vec<u64>,
    warps: Vec<Warp>,
    /// Threads arrived at each named barrier of the running block, since it last completed.
    arrived: [u32; NAMED_BARRIERS],
    /// Warp instructions each warp of the running block has issued.
    issued: Vec<u64>,
    shared: Vec<u8>,
    /// Warp steps the running block has taken (against the instruction budget).
    steps: u64,
    /// Whether the running block's registers were used by an earlier block (and hold its values).
    ran_a_block: bool,
    /// The CTAs of the running cluster, by rank; the entry of the one that runs holds the empty
    /// state swapped out of the fields above.
    ctas: Vec<Cta>,
    params: &'a [u8],
    param_offsets: &'a [u64],
    global: &'a mut GlobalMemory,
    pub(crate) stats: &'a mut LaunchStats,
    trace: Trace,
    budget: u64,
    /// The trace being recorded, when the launch is traced ([`Machine::set_tracing`]).
    pub(crate) recorder: Option<Box<Recorder>>,
    /// Whether the running block is recorded (set when it starts running).
    pub(crate) recording: bool,
    /// Warp instructions the running block runs before [`Block::run`] returns
    /// [`Turn::Paused`] to let another launch's block run ([`Machine::launch_together`]);
    /// `u64::MAX` in a launch on its own, which never pauses.
    turn: u64,
}

/// What [`Block::run`] stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// Every thread of the block has exited.
    Finished,
    /// Every thread the block has left waits, some of them at the cluster barrier: the other CTAs
    /// of the cluster run until the barrier completes.
    AtClusterBarrier,
    /// The block ran its turn of [`Block::turn`] warp instructions and can go on.
    Paused,
}

/// The state of one launch of [`Machine::launch_together`] while it waits for its turn: its CTA (a
/// cluster of one), its parameters and its counters, swapped into the [`Block`] for its turns
/// ([`Block::swap_launch`]).
struct Parked<'a> {
    ctas: Vec<Cta>,
    params: &'a [u8],
    stats: &'a mut LaunchStats,
}

/// Where a resolved address lives.
#[derive(Clone, Copy)]
pub(crate) enum Loc {
    /// Byte `offset` of the running block's shared memory.
    Shared(usize),
    /// Byte `offset` of the shared memory of the CTA of rank `rank` of the cluster (not the one
    /// running).
    Cluster {
        rank: usize,
        offset: usize,
    },
    /// Byte `offset` of global allocation number `alloc`.
    Global {
        alloc: usize,
        offset: usize,
    },
    Param(usize),
}

impl Loc {
    /// The location `bytes` further on (within the access `resolve` checked).
    pub(crate) fn plus(self, bytes: usize) -> Loc {
        match self {
            Loc::Shared(o) => Loc::Shared(o + bytes),
            Loc::Cluster { rank, offset } => Loc::Cluster { rank, offset: offset + bytes },
            Loc::Global { alloc, offset } => Loc::Global { alloc, offset: offset + bytes },
            Loc::Param(o) => Loc::Param(o + bytes),
        }
    }
}

/// Where every lane of a warp-wide access lands (see [`Block::warp_region`]).
#[derive(Clone, Copy)]
enum Region {
    Shared,
    /// Inside global allocation `alloc`, which starts at address `base`.
    Global {
        alloc: usize,
        base: u64,
    },
}

/// The lanes set in `m`, lowest first.
pub(crate) fn lanes(m: u32) -> impl Iterator<Item = usize> {
    let mut rest = m;
    std::iter::from_fn(move || {
        if rest == 0 {
            return None;
        }
        let l = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        Some(l)
    })
}

/// 32 lanes' values.
type Row = [u64; 32];

/// The row of `f(lane)` for the 32 lanes (a plain loop: `std::array::from_fn` does not vectorise).
#[inline(always)]
fn row_of(f: impl Fn(usize) -> u64) -> Row {
    let mut out = [0u64; 32];
    for (l, v) in out.iter_mut().enumerate() {
        *v = f(l);
    }
    out
}

/// For each byte of an execution mask, the all-ones (lane set) or all-zeros masks of its 8 lanes.
static LANE_MASKS: [[u64; 8]; 256] = {
    let mut table = [[0u64; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut lane = 0;
        while lane < 8 {
            if byte & (1 << lane) != 0 {
                table[byte][lane] = u64::MAX;
            }
            lane += 1;
        }
        byte += 1;
    }
    table
};

/// Lanes of zeros: the row of every operand an operation does not read.
static ZERO_ROW: Row = [0; 32];

/// Three operand rows and the masks of the widths they are read at.
struct Operands<'a> {
    x: &'a Row,
    y: &'a Row,
    z: &'a Row,
    masks: (u64, u64, u64),
    /// The second operand when it is a constant (`add.s32 %r1, %r2, 4`), masked: such maps read no
    /// row for it.
    y_constant: Option<u64>,
}

impl Operands<'_> {
    /// `f` applied lane by lane to the first `N` masked operands (the others read as 0); the
    /// result masked to `mask`.
    #[inline(always)]
    fn map<const N: usize>(&self, mask: u64, f: impl Fn(u64, u64, u64) -> u64) -> Row {
        let (ma, mb, mc) = self.masks;
        if let (true, Some(k)) = (N >= 2, self.y_constant) {
            return row_of(|l| {
                let c = if N >= 3 { self.z[l] & mc } else { 0 };
                f(self.x[l] & ma, k, c) & mask
            });
        }
        row_of(|l| {
            let b = if N >= 2 { self.y[l] & mb } else { 0 };
            let c = if N >= 3 { self.z[l] & mc } else { 0 };
            f(self.x[l] & ma, b, c) & mask
        })
    }
}

/// Whether `addr` is not a multiple of `size` (sizes are powers of two but for odd vectors).
#[inline(always)]
fn misaligned(addr: u64, size: u32) -> bool {
    if size.is_power_of_two() { addr & (size as u64 - 1) != 0 } else { addr % size as u64 != 0 }
}

/// The fault of a failed access of `size` bytes at `addr` (`offset` in its space): misaligned, or
/// else out of bounds.
fn access_fault(space: &'static str, offset: u64, addr: u64, size: u32) -> Fault {
    if misaligned(offset, size) {
        Fault::Misaligned { space, addr, size }
    } else {
        Fault::OutOfBounds { space, addr, size }
    }
}

fn f32_of(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

impl<'a> Block<'a> {
    /// The interpreter's state for a launch of `kernel` over `grid` blocks of `block` threads with
    /// `shared_bytes` of dynamic shared memory, parameter space `params` (bytes, offsets), counting
    /// into `stats`, on `machine`'s memory and instruction budget. The running CTA's fields start
    /// empty: each CTA of a cluster has its state in `ctas`, and it is swapped in to run.
    fn new(
        kernel: &'a Kernel,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        (params, param_offsets): (&'a [u8], &'a [u64]),
        stats: &'a mut LaunchStats,
        machine: &'a mut Machine,
    ) -> Block<'a> {
        let nthreads = (block.0 * block.1 * block.2) as usize;
        let nwarps = nthreads.div_ceil(32);
        let nregs = kernel.num_regs as usize;
        let shared_total = kernel.dynamic_shared_offset as usize + shared_bytes as usize;
        let (cx, cy, cz) = kernel.cluster;
        Block {
            kernel,
            code: &kernel.code,
            ctaid: (0, 0, 0),
            nctaid: grid,
            ntid: block,
            cluster: kernel.cluster,
            nthreads,
            nregs,
            regs: Vec::new(),
            warps: Vec::new(),
            arrived: [0; NAMED_BARRIERS],
            issued: Vec::new(),
            shared: Vec::new(),
            steps: 0,
            ran_a_block: false,
            ctas: (0..cx * cy * cz).map(|_| Cta::new(nwarps, nregs, shared_total)).collect(),
            params,
            param_offsets,
            global: &mut machine.global,
            stats,
            trace: Trace::default(),
            budget: machine.instruction_budget,
            recorder: None,
            recording: false,
            turn: u64::MAX,
        }
    }

    /// Swaps the CTA, parameters and counters of a launch of [`Machine::launch_together`] with the
    /// block's: in, for its turn, and out again.
    fn swap_launch(&mut self, launch: &mut Parked<'a>) {
        std::mem::swap(&mut self.ctas, &mut launch.ctas);
        std::mem::swap(&mut self.params, &mut launch.params);
        std::mem::swap(&mut self.stats, &mut launch.stats);
    }

    /// Runs the block at `ctaid` of every launch of [`Machine::launch_together`] to completion,
    /// interleaved: each launch's block in turn, launch 0 first, for a turn of [`Block::turn`] warp
    /// instructions (or until it waits at the cluster barrier of its cluster of one), until all
    /// have finished. A fault names the launch it happened in.
    fn run_together(
        &mut self,
        ctaid: (u32, u32, u32),
        launches: &mut [Parked<'a>],
    ) -> Result<(), SimError> {
        for launch in launches.iter_mut() {
            self.swap_launch(launch);
            self.start_cluster(ctaid);
            self.swap_launch(launch);
        }
        let mut finished = vec![false; launches.len()];
        while finished.contains(&false) {
            for (index, launch) in launches.iter_mut().enumerate() {
                if finished[index] {
                    continue;
                }
                self.swap_launch(launch);
                self.swap_cta(0);
                let turn = match self.run() {
                    Ok(turn) => turn,
                    Err(fault) => return Err(self.site_in_launch(fault, index)),
                };
                self.swap_cta(0);
                match turn {
                    Turn::Finished => {
                        self.count_finished_ctas();
                        finished[index] = true;
                    }
                    Turn::AtClusterBarrier => {
                        if let Err(fault) = self.complete_cluster_barrier() {
                            return Err(self.site_in_launch(fault, index));
                        }
                    }
                    Turn::Paused => {}
                }
                self.swap_launch(launch);
            }
        }
        Ok(())
    }

    /// [`Block::site`] of a fault in launch `index` of [`Machine::launch_together`].
    fn site_in_launch(&self, fault: LaneFault, index: usize) -> SimError {
        match self.site(fault) {
            SimError::Fault { mut site, fault } => {
                site.launch = Some(index);
                SimError::Fault { site, fault }
            }
            other => other,
        }
    }
}

impl Block<'_> {
    /// Adds the CTAs of the cluster that just finished to the launch's counters: blocks, the
    /// longest block and the busiest warp.
    fn count_finished_ctas(&mut self) {
        for cta in &self.ctas {
            self.stats.blocks += 1;
            self.stats.longest_block = self.stats.longest_block.max(cta.issued.iter().sum());
            let busiest = cta.issued.iter().copied().max().unwrap_or(0);
            self.stats.longest_warp = self.stats.longest_warp.max(busiest);
        }
    }

    /// Swaps the state of the cluster's CTA of rank `rank` with the running block's fields: in, to
    /// run it, and out again.
    fn swap_cta(&mut self, rank: usize) {
        let cta = &mut self.ctas[rank];
        std::mem::swap(&mut self.ctaid, &mut cta.ctaid);
        std::mem::swap(&mut self.regs, &mut cta.regs);
        std::mem::swap(&mut self.warps, &mut cta.warps);
        std::mem::swap(&mut self.arrived, &mut cta.arrived);
        std::mem::swap(&mut self.issued, &mut cta.issued);
        std::mem::swap(&mut self.shared, &mut cta.shared);
        std::mem::swap(&mut self.steps, &mut cta.steps);
        std::mem::swap(&mut self.ran_a_block, &mut cta.ran_a_block);
    }

    /// Prepares the CTAs of the cluster whose first block is `first` to run from their first
    /// instruction: rank `r` is the block at `r`'s position in the cluster's shape, x fastest.
    fn start_cluster(&mut self, first: (u32, u32, u32)) {
        let (cx, cy, _) = self.cluster;
        for rank in 0..self.ctas.len() {
            let r = rank as u32;
            self.swap_cta(rank);
            self.ctaid = (first.0 + r % cx, first.1 + (r / cx) % cy, first.2 + r / (cx * cy));
            self.reset();
            self.swap_cta(rank);
            self.ctas[rank].exited = false;
        }
    }

    /// Runs the CTAs of the cluster (started by [`Block::start_cluster`]) to completion: each in
    /// turn, rank 0 first, until it has finished or every thread it has left waits at the cluster
    /// barrier; then the barrier completes, and they run again. A fault leaves the faulting CTA
    /// swapped in, so that [`Block::site`] names it.
    fn run_cluster(&mut self) -> Result<(), LaneFault> {
        loop {
            let mut finished = true;
            for rank in 0..self.ctas.len() {
                if self.ctas[rank].exited {
                    continue;
                }
                self.swap_cta(rank);
                // A launch on its own never pauses (its turn is unlimited).
                let done = self.run()? == Turn::Finished;
                self.swap_cta(rank);
                self.ctas[rank].exited = done;
                finished &= done;
            }
            if finished {
                return Ok(());
            }
            self.complete_cluster_barrier()?;
        }
    }

    /// Completes the cluster barrier once every CTA of the cluster has finished or waits: every
    /// thread that has not exited must have arrived (PTX: the barrier waits for the cluster's
    /// non-exited threads). A thread that waits at a block or named barrier without having arrived
    /// never will: a deadlock, reported with its CTA swapped in.
    fn complete_cluster_barrier(&mut self) -> Result<(), LaneFault> {
        for rank in 0..self.ctas.len() {
            let stuck = self.ctas[rank]
                .warps
                .iter()
                .enumerate()
                .find_map(|(w, warp)| Some((w, warp.not_arrived()?)));
            if let Some((w, (pc, mask))) = stuck {
                self.swap_cta(rank);
                return Err(LaneFault {
                    thread: w * 32 + mask.trailing_zeros() as usize,
                    pc: pc as usize,
                    fault: Fault::Deadlock,
                });
            }
        }
        self.stats.cluster_barriers += 1;
        for cta in &mut self.ctas {
            cta.warps.iter_mut().for_each(Warp::pass_cluster_barrier);
        }
        Ok(())
    }

    /// Prepares the block at `self.ctaid` to run from its first instruction. Registers start at 0:
    /// the register file is new and zeroed for the first block, and later blocks clear only the
    /// registers the kernel may read before writing (the rest are overwritten before any read).
    fn reset(&mut self) {
        if self.ran_a_block {
            for w in 0..self.warps.len() {
                for &r in &self.kernel.registers_to_clear {
                    *self.row_mut(w, r) = [0; 32];
                }
            }
        }
        self.ran_a_block = true;
        self.shared.fill(0);
        self.issued.fill(0);
        self.steps = 0;
        let nthreads = self.nthreads;
        for (w, warp) in self.warps.iter_mut().enumerate() {
            let lanes_here = (nthreads - w * 32).min(32);
            let all = if lanes_here == 32 { u32::MAX } else { (1u32 << lanes_here) - 1 };
            warp.groups.clear();
            warp.groups.push((0, all));
            warp.waiting.clear();
            warp.named.clear();
            warp.cluster_waiting.clear();
            warp.cluster_arrived = 0;
            warp.cluster_passed = 0;
        }
        self.arrived = [0; NAMED_BARRIERS];
    }

    fn site(&self, f: LaneFault) -> SimError {
        let t = f.thread as u32;
        let (bx, by) = (self.ntid.0, self.ntid.1);
        let instr = self.kernel.instrs.get(f.pc);
        SimError::Fault {
            site: Box::new(FaultSite {
                kernel: self.kernel.name.clone(),
                block: self.ctaid,
                thread: (t % bx, (t / bx) % by, t / (bx * by)),
                instruction: instr
                    .map_or_else(|| "(end of kernel)".to_string(), |i| i.text.clone()),
                ptx_line: instr.map_or(0, |i| i.line),
                launch: None,
            }),
            fault: f.fault,
        }
    }

    /// Runs the block until it has finished, or every thread it has left waits, some of them at
    /// the cluster barrier, or it has run its turn ([`Block::turn`]; the round of warps in which
    /// it ends is completed, so that every warp has had its slice).
    fn run(&mut self) -> Result<Turn, LaneFault> {
        let block = self.linear_block();
        self.recording = self.recorder.as_ref().is_some_and(|r| r.records(block));
        let nwarps = self.warps.len();
        let mut steps = self.steps;
        let pause_at = steps.saturating_add(self.turn);
        loop {
            let mut progressed = false;
            for w in 0..nwarps {
                for _ in 0..SLICE {
                    if !self.step_warp(w)? {
                        break;
                    }
                    progressed = true;
                    steps += 1;
                    if steps > self.budget {
                        return Err(self.budget_exceeded(w));
                    }
                }
            }
            let running = self.warps.iter().any(|w| !w.groups.is_empty());
            let waiting = self.warps.iter().any(|w| !w.waiting.is_empty());
            let named = self.warps.iter().position(|w| !w.named.is_empty());
            let cluster_waiting = self.warps.iter().any(|w| !w.cluster_waiting.is_empty());
            if !running && !waiting && named.is_none() && !cluster_waiting {
                return Ok(Turn::Finished);
            }
            if !running && cluster_waiting {
                // Only the cluster barrier can release the threads that wait at it, and they may be
                // the ones the others wait for.
                self.steps = steps;
                return Ok(Turn::AtClusterBarrier);
            }
            if let (false, Some(w)) = (running, named) {
                // Lanes wait at a named barrier that no running thread can complete.
                let (pc, mask, _) = self.warps[w].named[0];
                return Err(LaneFault {
                    thread: w * 32 + mask.trailing_zeros() as usize,
                    pc: pc as usize,
                    fault: Fault::Deadlock,
                });
            }
            if !running {
                // Every thread still alive waits at a barrier: release them.
                self.stats.barriers += 1;
                for warp in &mut self.warps {
                    let Warp { groups, waiting, .. } = warp;
                    for (pc, mask) in waiting.drain(..) {
                        insert_group(groups, pc + 1, mask);
                    }
                }
            } else if !progressed {
                let (w, &(pc, mask)) = self
                    .warps
                    .iter()
                    .enumerate()
                    .find_map(|(w, warp)| warp.groups.first().map(|g| (w, g)))
                    .unwrap();
                return Err(LaneFault {
                    thread: w * 32 + mask.trailing_zeros() as usize,
                    pc: pc as usize,
                    fault: Fault::Deadlock,
                });
            }
            if steps >= pause_at {
                self.steps = steps;
                return Ok(Turn::Paused);
            }
        }
    }

    /// Warp `w`'s `waiting` lanes arrive at named barrier `id` (at `pc`) of `count` threads: a warp
    /// counts 32 (as the hardware counts it). When `count` have arrived, every lane waiting there
    /// goes on to the next instruction.
    fn arrive_at_named_barrier(&mut self, w: usize, pc: u32, waiting: u32, id: u32, count: u32) {
        if waiting == 0 {
            return;
        }
        self.warps[w].named.push((pc, waiting, id));
        let arrived = &mut self.arrived[id as usize];
        *arrived += 32;
        if *arrived < count {
            return;
        }
        *arrived = 0;
        self.stats.barriers += 1;
        for warp in &mut self.warps {
            let Warp { groups, named, .. } = warp;
            named.retain(|&(at, mask, waiting_for)| {
                if waiting_for == id {
                    insert_group(groups, at + 1, mask);
                }
                waiting_for != id
            });
        }
    }

    /// The fault of a block that ran past its instruction budget while warp `w` ran.
    fn budget_exceeded(&self, w: usize) -> LaneFault {
        let (pc, mask) = self.warps[w].groups.first().copied().unwrap_or((0, 1));
        let waiting: u32 = self
            .warps
            .iter()
            .flat_map(|warp| warp.waiting.iter().chain(&warp.cluster_waiting))
            .map(|&(_, m)| m.count_ones())
            .sum();
        LaneFault {
            thread: w * 32 + mask.trailing_zeros() as usize,
            pc: pc as usize,
            fault: Fault::InstructionBudgetExceeded {
                budget: self.budget,
                warp: w as u32,
                threads_at_barrier: waiting,
            },
        }
    }

    /// Executes one warp instruction of warp `w`; false when the warp cannot run now.
    fn step_warp(&mut self, w: usize) -> Result<bool, LaneFault> {
        let Some(&(pc, active)) = self.warps[w].groups.first() else {
            return Ok(false);
        };
        let code = self.code;
        let Some(inst) = code.get(pc as usize) else {
            // Falling off the end of the kernel is an exit.
            self.warps[w].groups.remove(0);
            return Ok(true);
        };
        let mut exec = active;
        if let Some((p, negated)) = inst.guard {
            let set = self.predicate_mask(w, p);
            exec &= if negated { !set } else { set };
        }
        self.stats.warp_instructions += 1;
        self.stats.active_lanes += active.count_ones() as u64;
        if inst.strong_load && exec != 0 {
            self.stats.strong_loads += 1;
        }
        self.issued[w] += 1;
        let flow = self
            .execute(w, pc as usize, inst, active, exec)
            .map_err(|(thread, fault)| LaneFault { thread, pc: pc as usize, fault })?;
        if let Flow::NamedBarrier { waiting, id, count } = flow {
            self.arrive_at_named_barrier(w, pc, waiting, id, count);
        }
        let warp = &mut self.warps[w];
        let stay = match flow {
            _ if matches!(flow, Flow::Next) => active,
            Flow::Next => active,
            Flow::Exit(exited) => active & !exited,
            Flow::Barrier(waiting) => {
                insert_group(&mut warp.waiting, pc, waiting);
                active & !waiting
            }
            Flow::NamedBarrier { waiting, .. } => active & !waiting,
            Flow::ClusterWait(waiting) => {
                insert_group(&mut warp.cluster_waiting, pc, waiting);
                active & !waiting
            }
            // A uniform branch that is taken: the whole group moves (if no group waits there yet).
            Flow::Branch { target, taken }
                if taken == active && warp.groups.get(1).is_none_or(|g| g.0 > target) =>
            {
                warp.groups[0].0 = target;
                0
            }
            // Not taken by any lane: a step like any other.
            Flow::Branch { taken: 0, .. } => active,
            Flow::Branch { target, taken } => {
                warp.groups.remove(0);
                insert_group(&mut warp.groups, target, taken);
                insert_group(&mut warp.groups, pc + 1, active & !taken);
                0
            }
        };
        let groups = &mut warp.groups;
        if stay != 0 {
            // The staying lanes move on to pc + 1, joining lanes already there.
            match groups.get(1) {
                Some(&(next_pc, _)) if next_pc == pc + 1 => {
                    groups[1].1 |= stay;
                    groups.remove(0);
                }
                _ => groups[0] = (pc + 1, stay),
            }
        } else if !matches!(flow, Flow::Branch { .. }) {
            groups.remove(0);
        }
        if !self.trace.shared.is_empty()
            || !self.trace.global.is_empty()
            || !self.trace.shared_atomics.is_empty()
        {
            self.account_memory();
        }
        if self.recording {
            self.record_step(
                w,
                pc,
                active,
                exec,
                exec != 0 && matches!(inst.kind, Kind::Barrier | Kind::NamedBarrier),
            );
        }
        Ok(true)
    }

    /// The running block's linear index (x fastest).
    fn linear_block(&self) -> u64 {
        let ((x, y, z), (nx, ny, _)) = (self.ctaid, self.nctaid);
        x as u64 + nx as u64 * (y as u64 + ny as u64 * z as u64)
    }

    /// Records warp `w`'s instruction at `pc` that has just run (its block is traced).
    #[cold]
    fn record_step(&mut self, w: usize, pc: u32, active: u32, exec: u32, barrier: bool) {
        let block = self.linear_block();
        let warps = self.warps.len();
        if let Some(recorder) = self.recorder.as_deref_mut() {
            recorder.step(block, w as u32, warps, pc, active, exec, barrier);
        }
    }

    /// Records thread `t`'s access of `bytes` bytes at `addr` in `space` for the running warp
    /// instruction (its block is traced): shared (by byte offset) and global accesses; others
    /// (parameters, another CTA's shared memory) are not recorded.
    #[cold]
    pub(crate) fn record_lane(
        &mut self,
        t: usize,
        space: Space,
        addr: u64,
        bytes: u32,
        kind: AccessKind,
    ) {
        let Some(recorder) = self.recorder.as_deref_mut() else { return };
        let shared_offset =
            |offset: u64| (offset < CLUSTER_WINDOW).then_some((AccessSpace::Shared, offset));
        let at = match space {
            Space::Shared | Space::SharedCluster => shared_offset(addr),
            Space::Global => Some((AccessSpace::Global, addr)),
            Space::Generic if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&addr) => {
                shared_offset(addr - SHARED_WINDOW)
            }
            Space::Generic => Some((AccessSpace::Global, addr)),
            _ => None,
        };
        if let Some((space, address)) = at {
            recorder.lane(space, kind, (t % 32) as u32, address, bytes);
        }
    }

    fn account_memory(&mut self) {
        let Trace { shared, global, shared_atomics, scratch, .. } = &mut self.trace;
        if !shared_atomics.is_empty() {
            self.stats.shared_atomic_conflicts += shared_atomic_conflicts(shared_atomics);
            shared_atomics.clear();
        }
        if !shared.is_empty() {
            self.stats.shared_accesses += 1;
            self.stats.shared_bank_conflicts += bank_conflicts(shared, scratch);
            shared.clear();
        }
        if !global.is_empty() {
            self.stats.global_requests += 1;
            self.stats.global_sectors += sectors(global, scratch);
            global.clear();
        }
    }

    // ----- registers and operands ----------------------------------------------------------

    fn row_index(&self, w: usize, r: u32) -> usize {
        (w * self.nregs + r as usize) * 32
    }

    fn row(&self, w: usize, r: u32) -> &Row {
        let i = self.row_index(w, r);
        (&self.regs[i..i + 32]).try_into().expect("a register row is 32 lanes")
    }

    fn row_mut(&mut self, w: usize, r: u32) -> &mut Row {
        let i = self.row_index(w, r);
        (&mut self.regs[i..i + 32]).try_into().expect("a register row is 32 lanes")
    }

    /// The lanes of warp `w` whose predicate register `p` is true.
    fn predicate_mask(&self, w: usize, p: u32) -> u32 {
        let row = self.row(w, p);
        let mut set = 0u32;
        for (byte, chunk) in row.chunks_exact(8).enumerate() {
            let mut bits = 0u32;
            for (i, v) in chunk.iter().enumerate() {
                bits |= ((*v & 1) as u32) << i;
            }
            set |= bits << (8 * byte);
        }
        set
    }

    /// Operand `a` for the 32 lanes of warp `w`, masked to its width.
    fn fetch(&self, w: usize, a: &Arg) -> Row {
        match a.src {
            Src::Imm(v) => [v; 32],
            Src::Reg(r) => {
                let row = self.row(w, r);
                let mut out = [0u64; 32];
                for l in 0..32 {
                    out[l] = row[l] & a.mask;
                }
                out
            }
            Src::NotReg(r) => {
                let row = self.row(w, r);
                let mut out = [0u64; 32];
                for l in 0..32 {
                    out[l] = ((row[l] & 1) ^ 1) & a.mask;
                }
                out
            }
            Src::Special(s) => {
                let row = self.special_row(w, s);
                row_of(|l| row[l] & a.mask)
            }
        }
    }

    /// Operand `a` for the 32 lanes of warp `w`, not yet masked: its register row in place, or
    /// `buf` filled with its values.
    #[inline(always)]
    fn operand<'s>(&'s self, w: usize, a: &Arg, buf: &'s mut MaybeUninit<Row>) -> &'s Row {
        // Registers first, by a conditional branch: a `match` jumps through a table, which
        // predicts worse.
        if let Src::Reg(r) = a.src {
            return self.row(w, r);
        }
        match a.src {
            Src::Reg(r) => self.row(w, r),
            Src::Imm(0) => &ZERO_ROW,
            Src::Imm(v) => buf.write([v; 32]),
            Src::NotReg(r) => {
                let row = self.row(w, r);
                buf.write(row_of(|l| (row[l] & 1) ^ 1))
            }
            Src::Special(s) => buf.write(self.special_row(w, s)),
        }
    }

    /// Writes `values` to register `dst` in the lanes of `exec`.
    fn write(&mut self, w: usize, dst: Dst, values: &Row, exec: u32) {
        let Some(r) = dst else { return };
        let row = self.row_mut(w, r);
        if exec == u32::MAX {
            *row = *values;
        } else if exec.count_ones() <= 8 {
            for l in lanes(exec) {
                row[l] = values[l];
            }
        } else {
            // A branch-free blend, 8 lanes at a time, with each lane's all-ones or all-zeros mask
            // from a table (shifting by the lane number does not vectorise).
            for (byte, (old, new)) in
                row.chunks_exact_mut(8).zip(values.chunks_exact(8)).enumerate()
            {
                let take = &LANE_MASKS[((exec >> (8 * byte)) & 0xff) as usize];
                for i in 0..8 {
                    old[i] = (new[i] & take[i]) | (old[i] & !take[i]);
                }
            }
        }
    }

    pub(crate) fn reg(&self, t: usize, r: u32) -> u64 {
        self.regs[self.row_index(t / 32, r) + t % 32]
    }

    pub(crate) fn set(&mut self, t: usize, op: &Operand, v: u64) -> Lane<()> {
        match op {
            Operand::Reg(r) => {
                let i = self.row_index(t / 32, *r) + t % 32;
                self.regs[i] = v;
                Ok(())
            }
            Operand::Sink => Ok(()),
            other => Err(Fault::Unsupported(format!("destination operand {other:?}"))),
        }
    }

    /// Reads `op` for thread `t` as a value of type `ty` (raw bits, masked to the width).
    pub(crate) fn get(&self, t: usize, op: &Operand, ty: Type) -> Lane<u64> {
        let v = match *op {
            Operand::Reg(r) => self.reg(t, r),
            Operand::NotReg(r) => (self.reg(t, r) & 1) ^ 1,
            Operand::Special(s) => self.special(t, s),
            ref other => match crate::decode::constant(other, ty) {
                Some(v) => v,
                None => return Err(Fault::Unsupported(format!("source operand {other:?}"))),
            },
        };
        Ok(v & crate::decode::mask(ty.bits()))
    }

    /// Special register `s` for the 32 lanes of warp `w`.
    fn special_row(&self, w: usize, s: Special) -> Row {
        match s {
            // One-dimensional blocks: %tid.x is the thread's index, no divisions needed.
            Special::Tid(0) if self.ntid.1 == 1 && self.ntid.2 == 1 => {
                row_of(|l| (w * 32 + l) as u64)
            }
            Special::Tid(_)
            | Special::LaneId
            | Special::LaneMaskEq
            | Special::LaneMaskLt
            | Special::LaneMaskLe
            | Special::LaneMaskGt
            | Special::LaneMaskGe => row_of(|l| self.special(w * 32 + l, s)),
            // The rest are the same in every lane of a warp.
            _ => [self.special(w * 32, s); 32],
        }
    }

    fn special(&self, t: usize, s: Special) -> u64 {
        let dim = |v: (u32, u32, u32), d: u8| match d {
            0 => v.0,
            1 => v.1,
            _ => v.2,
        } as u64;
        let (bx, by) = (self.ntid.0 as usize, self.ntid.1 as usize);
        let tid = (t % bx, (t / bx) % by, t / (bx * by));
        let lane = (t % 32) as u32;
        match s {
            Special::Tid(d) => [tid.0, tid.1, tid.2][d as usize] as u64,
            Special::Ntid(d) => dim(self.ntid, d),
            Special::Ctaid(d) => dim(self.ctaid, d),
            Special::Nctaid(d) => dim(self.nctaid, d),
            Special::LaneId => lane as u64,
            Special::WarpId => (t / 32) as u64,
            Special::NWarpId => self.nthreads.div_ceil(32) as u64,
            Special::SmId | Special::GridId => 0,
            Special::NSmId => 1,
            Special::LaneMaskEq => 1u64 << lane,
            Special::LaneMaskLt => (1u64 << lane) - 1,
            Special::LaneMaskLe => (1u64 << (lane + 1)) - 1,
            Special::LaneMaskGt => (!((1u64 << (lane + 1)) - 1)) & 0xffff_ffff,
            Special::LaneMaskGe => (!((1u64 << lane) - 1)) & 0xffff_ffff,
            Special::Clock | Special::Clock64 => self.stats.warp_instructions,
            Special::ClusterCtaRank => self.cluster_rank() as u64,
            Special::ClusterNCtaRank => self.ctas.len() as u64,
            Special::ClusterId(d) => dim(self.ctaid, d) / dim(self.cluster, d),
            Special::NClusterId(d) => dim(self.nctaid, d) / dim(self.cluster, d),
            Special::ClusterCtaId(d) => dim(self.ctaid, d) % dim(self.cluster, d),
            Special::ClusterNCtaId(d) => dim(self.cluster, d),
            Special::IsExplicitCluster => self.kernel.explicit_cluster as u64,
        }
    }

    /// The running block's rank in its cluster: its position in the cluster's shape, x fastest.
    pub(crate) fn cluster_rank(&self) -> usize {
        let (cx, cy, cz) = self.cluster;
        let (x, y, z) = self.ctaid;
        ((x % cx) + (y % cy) * cx + (z % cz) * cx * cy) as usize
    }

    /// The CTA rank and byte offset that `shared::cluster` address `address` names (see module
    /// `memory`): addresses below the cluster window are the running block's own.
    pub(crate) fn split_cluster_address(&self, address: u64) -> Lane<(usize, u64)> {
        let Some(above) = address.checked_sub(CLUSTER_WINDOW) else {
            return Ok((self.cluster_rank(), address));
        };
        let rank = above / RANK_STRIDE;
        if rank >= self.ctas.len() as u64 {
            return Err(Fault::NoSuchClusterRank { rank, cluster_size: self.ctas.len() as u32 });
        }
        Ok((rank as usize, above % RANK_STRIDE))
    }

    /// `mapa`: the `shared::cluster` address of the byte that shared (or `shared::cluster`) address
    /// `address` names, in the shared memory of the CTA of rank `rank`.
    pub(crate) fn cluster_address(&self, address: u64, rank: u64) -> Lane<u64> {
        let (_, offset) = self.split_cluster_address(address)?;
        // One past the end is a valid address (of an empty array at the end, say).
        if offset > self.shared.len() as u64 {
            return Err(Fault::NotSharedAddress { addr: address });
        }
        if rank >= self.ctas.len() as u64 {
            return Err(Fault::NoSuchClusterRank { rank, cluster_size: self.ctas.len() as u32 });
        }
        Ok(CLUSTER_WINDOW + rank * RANK_STRIDE + offset)
    }

    // ----- memory ----------------------------------------------------------------------------

    /// The base address of a memory operand for thread `t` (before resolving its state space).
    fn base_address(&self, t: usize, base: MemBase) -> Lane<u64> {
        Ok(match base {
            MemBase::Reg(r) => self.reg(t, r),
            MemBase::Symbol(Symbol::Shared(o)) => o as u64,
            MemBase::Symbol(Symbol::Param(i)) => self.param_offsets[i],
            MemBase::Symbol(Symbol::Global(_)) => {
                return Err(Fault::Unsupported("module-level .global variables".into()));
            }
            MemBase::Absolute => 0,
        })
    }

    /// The address of a memory operand (before resolving its state space).
    pub(crate) fn address(&self, t: usize, op: &Operand) -> Lane<u64> {
        let Operand::Mem { base, offset } = op else {
            return Err(Fault::Unsupported(format!("expected a memory operand, found {op:?}")));
        };
        Ok(self.base_address(t, *base)?.wrapping_add(*offset as u64))
    }

    /// Counts one thread's atomic at `loc`: global, or shared (traced, so that the warp
    /// instruction's shared atomics are checked for bank conflicts).
    pub(crate) fn count_atomic(&mut self, loc: Loc) {
        self.stats.atomics += 1;
        match loc {
            Loc::Shared(offset) => {
                self.stats.shared_atomics += 1;
                self.trace.shared_atomics.push(offset as u64);
            }
            Loc::Global { .. } => self.stats.global_atomics += 1,
            // Another CTA's shared memory: not traced for bank conflicts.
            Loc::Cluster { .. } => self.stats.shared_atomics += 1,
            Loc::Param(_) => {}
        }
    }

    /// Checks and resolves an access of `size` bytes at `addr` in `space`; `traced` accesses count
    /// towards the warp instruction's memory requests (atomics are counted on their own).
    pub(crate) fn resolve(
        &mut self,
        space: Space,
        addr: u64,
        size: u32,
        traced: bool,
    ) -> Lane<Loc> {
        match space {
            Space::Shared => self.shared_access(addr, addr, size, traced).map(Loc::Shared),
            Space::SharedCluster => self.cluster_access(addr, addr, size, traced),
            Space::Global => self.global_access(addr, size, traced),
            Space::Generic if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&addr) => {
                self.cluster_access(addr - SHARED_WINDOW, addr, size, traced)
            }
            Space::Generic => self.global_access(addr, size, traced),
            Space::Param => {
                let end = addr.checked_add(size as u64).filter(|&e| e <= self.params.len() as u64);
                match end {
                    Some(_) => Ok(Loc::Param(addr as usize)),
                    None => Err(Fault::OutOfBounds { space: "param", addr, size }),
                }
            }
            Space::Local => Err(Fault::Unsupported("local memory".into())),
            Space::Const => Err(Fault::Unsupported("constant memory".into())),
        }
    }

    /// The offset of an access of `size` bytes at byte `offset` of shared memory, if it is aligned
    /// and in bounds.
    #[inline(always)]
    fn shared_offset(&self, offset: u64, size: u32) -> Option<usize> {
        let in_bounds =
            offset.checked_add(size as u64).is_some_and(|e| e <= self.shared.len() as u64);
        (!misaligned(offset, size) && in_bounds).then_some(offset as usize)
    }

    /// Where an access of `size` bytes at global address `addr` lands, if it is aligned and inside
    /// one allocation.
    #[inline(always)]
    fn global_location(&self, addr: u64, size: u32) -> Option<Loc> {
        if misaligned(addr, size) {
            return None;
        }
        let (alloc, offset) = self.global.locate(addr, size as usize)?;
        Some(Loc::Global { alloc, offset })
    }

    /// Checks an access of `size` bytes at byte `offset` of shared memory (generic address `addr`).
    fn shared_access(&mut self, offset: u64, addr: u64, size: u32, traced: bool) -> Lane<usize> {
        let Some(at) = self.shared_offset(offset, size) else {
            return Err(access_fault("shared", offset, addr, size));
        };
        if traced {
            self.trace.shared.push((offset, size));
        }
        Ok(at)
    }

    /// Checks an access of `size` bytes at `shared::cluster` address `address` (generic address
    /// `addr`): in the running block's shared memory (traced as a shared access), or in another
    /// CTA's of the cluster (marked as distributed).
    fn cluster_access(&mut self, address: u64, addr: u64, size: u32, traced: bool) -> Lane<Loc> {
        if address < CLUSTER_WINDOW {
            return self.shared_access(address, addr, size, traced).map(Loc::Shared);
        }
        let (rank, offset) = self.split_cluster_address(address)?;
        if rank == self.cluster_rank() {
            return self.shared_access(offset, addr, size, traced).map(Loc::Shared);
        }
        if self.ctas[rank].exited {
            return Err(Fault::ExitedClusterCta { rank: rank as u32 });
        }
        // Every CTA of the cluster has as much shared memory as the running one.
        let Some(at) = self.shared_offset(offset, size) else {
            return Err(access_fault("shared::cluster", offset, addr, size));
        };
        self.trace.distributed |= traced;
        Ok(Loc::Cluster { rank, offset: at })
    }

    /// Counts the current warp instruction as a distributed shared access if one of its lanes
    /// reached another CTA's shared memory.
    pub(crate) fn count_distributed(&mut self) {
        if std::mem::take(&mut self.trace.distributed) {
            self.stats.distributed_shared_accesses += 1;
        }
    }

    /// Checks an access of `size` bytes at global address `addr`.
    fn global_access(&mut self, addr: u64, size: u32, traced: bool) -> Lane<Loc> {
        let Some(loc) = self.global_location(addr, size) else {
            return Err(access_fault("global", addr, addr, size));
        };
        if traced {
            self.trace.global.push((addr, size));
        }
        Ok(loc)
    }

    /// Resolves lane `l`'s access of `size` bytes at `addr` in `space` for a warp-wide load or
    /// store of warp `w`: shared and global accesses are checked inline, and only a failed check or
    /// another space goes through [`Block::resolve`] (which builds the fault).
    #[inline(always)]
    fn lane_access(
        &mut self,
        w: usize,
        l: usize,
        space: Space,
        addr: u64,
        size: u32,
    ) -> Result<Loc, (usize, Fault)> {
        let fast = match space {
            Space::Shared => self.shared_offset(addr, size).map(|at| {
                self.trace.shared.push((addr, size));
                Loc::Shared(at)
            }),
            Space::Global => {
                self.global_location(addr, size).inspect(|_| self.trace.global.push((addr, size)))
            }
            _ => None,
        };
        match fast {
            Some(loc) => Ok(loc),
            None => self.resolve(space, addr, size, true).map_err(|f| (w * 32 + l, f)),
        }
    }

    /// Copies `size` bytes from global address `from` to shared offset `to` (a bulk copy), traced
    /// as one global request.
    pub(crate) fn copy_to_shared(&mut self, from: u64, to: u64, size: u64) -> Lane<()> {
        let Some(bytes) = self.global.slice(from, size as usize) else {
            return Err(Fault::OutOfBounds { space: "global", addr: from, size: size as u32 });
        };
        let Some(end) = to.checked_add(size).filter(|&e| e <= self.shared.len() as u64) else {
            return Err(Fault::OutOfBounds {
                space: "shared",
                addr: to + SHARED_WINDOW,
                size: size as u32,
            });
        };
        self.shared[to as usize..end as usize].copy_from_slice(bytes);
        self.trace.global.push((from, size as u32));
        Ok(())
    }

    pub(crate) fn load(&self, loc: Loc, size: usize) -> u64 {
        match loc {
            Loc::Shared(o) => read_le(&self.shared[o..o + size]),
            Loc::Cluster { rank, offset: o } => read_le(&self.ctas[rank].shared[o..o + size]),
            Loc::Param(o) => read_le(&self.params[o..o + size]),
            Loc::Global { alloc, offset } => {
                read_le(&self.global.bytes(alloc)[offset..offset + size])
            }
        }
    }

    pub(crate) fn store(&mut self, loc: Loc, size: usize, v: u64) -> Lane<()> {
        match loc {
            Loc::Shared(o) => write_le(&mut self.shared[o..o + size], v),
            Loc::Cluster { rank, offset: o } => {
                write_le(&mut self.ctas[rank].shared[o..o + size], v)
            }
            Loc::Global { alloc, offset } => {
                write_le(&mut self.global.bytes_mut(alloc)[offset..offset + size], v)
            }
            Loc::Param(o) => {
                return Err(Fault::Unsupported(format!(
                    "store to kernel parameter space at offset {o}"
                )));
            }
        }
        Ok(())
    }

    // ----- instructions ---------------------------------------------------------------------

    /// Executes `inst` (number `pc`) for the lanes in `exec` (of those in `active`) of warp `w`.
    /// Errors name the faulting thread (block-linear index).
    fn execute(
        &mut self,
        w: usize,
        pc: usize,
        inst: &Inst,
        active: u32,
        exec: u32,
    ) -> Result<Flow, (usize, Fault)> {
        let lo = w * 32;
        // The most frequent kind first, by a conditional branch (see `operand`).
        if let Kind::Alu { op, dst, dst_mask, a, b, c } = &inst.kind {
            self.alu(w, *op, *dst, *dst_mask, a, b, c, exec)?;
            return Ok(Flow::Next);
        }
        match &inst.kind {
            Kind::Alu { op, dst, dst_mask, a, b, c } => {
                self.alu(w, *op, *dst, *dst_mask, a, b, c, exec)?;
                Ok(Flow::Next)
            }
            Kind::Setp { cmp, ty, bool_op, p, q, a, b, c } => {
                self.setp(w, *cmp, *ty, *bool_op, *p, *q, a, b, c, exec);
                Ok(Flow::Next)
            }
            Kind::Mem(access) => {
                self.memory(w, access, exec)?;
                Ok(Flow::Next)
            }
            Kind::Shfl { mode, dst, pred, a, b, c } => {
                self.shuffle(w, *mode, *dst, *pred, a, b, c, exec)?;
                Ok(Flow::Next)
            }
            Kind::Branch { target } => {
                self.stats.branches += 1;
                if exec != 0 && exec != active {
                    self.stats.divergent_branches += 1;
                }
                Ok(Flow::Branch { target: *target, taken: exec })
            }
            Kind::Barrier => Ok(Flow::Barrier(exec)),
            Kind::NamedBarrier => {
                let instr: &Instr = &self.kernel.instrs[pc];
                let first = lo + exec.trailing_zeros().min(31) as usize;
                let id =
                    self.get(first, &instr.args[0], Type::U(32)).map_err(|f| (first, f))? as u32;
                let count =
                    self.get(first, &instr.args[1], Type::U(32)).map_err(|f| (first, f))? as u32;
                if id as usize >= NAMED_BARRIERS || count == 0 || count % 32 != 0 {
                    let why = format!(
                        "bar.sync {id}, {count}: ids below {NAMED_BARRIERS}, counts of whole warps"
                    );
                    return Err((first, Fault::Unsupported(why)));
                }
                Ok(Flow::NamedBarrier { waiting: exec, id, count })
            }
            Kind::ClusterArrive => {
                let warp = &mut self.warps[w];
                let again = exec & (warp.cluster_arrived | warp.cluster_passed);
                if again != 0 {
                    return Err((lo + again.trailing_zeros() as usize, Fault::ClusterArriveTwice));
                }
                warp.cluster_arrived |= exec;
                Ok(Flow::Next)
            }
            Kind::ClusterWait => {
                let warp = &mut self.warps[w];
                let missing = exec & !(warp.cluster_arrived | warp.cluster_passed);
                if missing != 0 {
                    return Err((
                        lo + missing.trailing_zeros() as usize,
                        Fault::ClusterWaitWithoutArrive,
                    ));
                }
                // Lanes whose phase has completed pass; those that arrived in this one wait.
                warp.cluster_passed &= !exec;
                Ok(Flow::ClusterWait(exec & warp.cluster_arrived))
            }
            Kind::Exit => Ok(Flow::Exit(exec)),
            Kind::Nop => Ok(Flow::Next),
            Kind::Unsupported(message) => Err((
                lo + exec.trailing_zeros().min(31) as usize,
                Fault::Unsupported(message.clone()),
            )),
            Kind::PerLane => {
                let instr: &Instr = &self.kernel.instrs[pc];
                self.per_lane_warp(instr, lo, active, exec)?;
                Ok(Flow::Next)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn alu(
        &mut self,
        w: usize,
        op: AluOp,
        dst: Dst,
        m: u64,
        a: &Arg,
        b: &Arg,
        c: &Arg,
        exec: u32,
    ) -> Result<(), (usize, Fault)> {
        let (mut bx, mut by, mut bz) =
            (MaybeUninit::uninit(), MaybeUninit::uninit(), MaybeUninit::uninit());
        let o = Operands {
            x: self.operand(w, a, &mut bx),
            y: self.operand(w, b, &mut by),
            z: self.operand(w, c, &mut bz),
            masks: (a.mask, b.mask, c.mask),
            y_constant: if let Src::Imm(k) = b.src { Some(k) } else { None },
        };
        let r = match op {
            AluOp::Mov => o.map::<1>(m, |a, _, _| a),
            AluOp::Sext(bits) => o.map::<1>(m, |a, _, _| sext(a, bits) as u64),
            AluOp::Add => o.map::<2>(m, |a, b, _| a.wrapping_add(b)),
            AluOp::Sub => o.map::<2>(m, |a, b, _| a.wrapping_sub(b)),
            AluOp::MulLo | AluOp::MulWideU => o.map::<2>(m, |a, b, _| a.wrapping_mul(b)),
            AluOp::MulWideS(bits) => {
                o.map::<2>(m, |a, b, _| (sext(a, bits) as u64).wrapping_mul(sext(b, bits) as u64))
            }
            AluOp::MadLo | AluOp::MadWideU => {
                o.map::<3>(m, |a, b, c| a.wrapping_mul(b).wrapping_add(c))
            }
            AluOp::MadWideS(bits) => o.map::<3>(m, |a, b, c| {
                (sext(a, bits) as u64).wrapping_mul(sext(b, bits) as u64).wrapping_add(c)
            }),
            AluOp::Shl(bits) => o.map::<2>(m, |a, b, _| if b >= bits as u64 { 0 } else { a << b }),
            AluOp::ShrU(bits) => o.map::<2>(m, |a, b, _| if b >= bits as u64 { 0 } else { a >> b }),
            AluOp::ShrS(bits) => {
                o.map::<2>(m, |a, b, _| (sext(a, bits) >> b.min(bits as u64 - 1)) as u64)
            }
            AluOp::And => o.map::<2>(m, |a, b, _| a & b),
            AluOp::Or => o.map::<2>(m, |a, b, _| a | b),
            AluOp::Xor => o.map::<2>(m, |a, b, _| a ^ b),
            AluOp::Not => o.map::<1>(m, |a, _, _| !a),
            AluOp::MinU => o.map::<2>(m, |a, b, _| a.min(b)),
            AluOp::MaxU => o.map::<2>(m, |a, b, _| a.max(b)),
            AluOp::MinS(bits) => o.map::<2>(m, |a, b, _| sext(a, bits).min(sext(b, bits)) as u64),
            AluOp::MaxS(bits) => o.map::<2>(m, |a, b, _| sext(a, bits).max(sext(b, bits)) as u64),
            AluOp::DivU | AluOp::RemU => {
                if let Some(l) = lanes(exec).find(|&l| o.y[l] & b.mask == 0) {
                    return Err((w * 32 + l, Fault::DivisionByZero));
                }
                // One power-of-two divisor for the whole warp (`tid % (2 * stride)`): shift and
                // mask.
                let first = o.y[exec.trailing_zeros() as usize] & b.mask;
                if first.is_power_of_two() && lanes(exec).all(|l| o.y[l] & b.mask == first) {
                    let shift = first.trailing_zeros();
                    let r = if op == AluOp::DivU {
                        o.map::<1>(m, |a, _, _| a >> shift)
                    } else {
                        o.map::<1>(m, |a, _, _| a & (first - 1))
                    };
                    self.write(w, dst, &r, exec);
                    return Ok(());
                }
                if op == AluOp::DivU {
                    o.map::<2>(m, |a, b, _| a / b.max(1))
                } else {
                    o.map::<2>(m, |a, b, _| a % b.max(1))
                }
            }
            AluOp::Select => o.map::<3>(m, |a, b, c| if c != 0 { a } else { b }),
            AluOp::AddF32 => o.map::<2>(m, |a, b, _| f32_result(f32_of(a) + f32_of(b))),
            AluOp::SubF32 => o.map::<2>(m, |a, b, _| f32_result(f32_of(a) - f32_of(b))),
            AluOp::MulF32 => o.map::<2>(m, |a, b, _| f32_result(f32_of(a) * f32_of(b))),
            AluOp::FmaF32 => {
                o.map::<3>(m, |a, b, c| f32_result(f32_of(a).mul_add(f32_of(b), f32_of(c))))
            }
            AluOp::AddF64 => {
                o.map::<2>(m, |a, b, _| f64_result(f64::from_bits(a) + f64::from_bits(b)))
            }
            AluOp::SubF64 => {
                o.map::<2>(m, |a, b, _| f64_result(f64::from_bits(a) - f64::from_bits(b)))
            }
            AluOp::MulF64 => {
                o.map::<2>(m, |a, b, _| f64_result(f64::from_bits(a) * f64::from_bits(b)))
            }
            AluOp::FmaF64 => o.map::<3>(m, |a, b, c| {
                f64_result(f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c)))
            }),
        };
        self.write(w, dst, &r, exec);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn setp(
        &mut self,
        w: usize,
        cmp: Cmp,
        ty: CmpType,
        bool_op: Option<BoolOp>,
        p: Dst,
        q: Option<Dst>,
        a: &Arg,
        b: &Arg,
        c: &Arg,
        exec: u32,
    ) {
        let (mut bx, mut by) = (MaybeUninit::uninit(), MaybeUninit::uninit());
        let (x, y) = (self.operand(w, a, &mut bx), self.operand(w, b, &mut by));
        let (ma, mb) = (a.mask, b.mask);
        // One loop per comparison and operand type, so neither is matched again in every lane.
        macro_rules! compare_lanes {
            ($ty:expr; $($c:ident),*) => {
                match cmp {
                    $(Cmp::Ordered(Order::$c) => {
                        let ordered = Cmp::Ordered(Order::$c);
                        row_of(|l| compare(ordered, $ty, x[l] & ma, y[l] & mb) as u64)
                    })*
                    _ => row_of(|l| compare(cmp, $ty, x[l] & ma, y[l] & mb) as u64),
                }
            };
        }
        let result = match ty {
            CmpType::Unsigned => compare_lanes!(CmpType::Unsigned; Eq, Ne, Lt, Le, Gt, Ge),
            CmpType::Signed(bits) => compare_lanes!(CmpType::Signed(bits); Lt, Le, Gt, Ge),
            CmpType::F32 => compare_lanes!(CmpType::F32; Eq, Ne, Lt, Le, Gt, Ge),
            CmpType::F64 => compare_lanes!(CmpType::F64; Lt, Gt),
        };
        let combined = |values: Row| match bool_op {
            None => values,
            Some(op) => {
                let z = self.fetch(w, c);
                row_of(|l| match op {
                    BoolOp::And => values[l] & z[l],
                    BoolOp::Or => values[l] | z[l],
                    BoolOp::Xor => values[l] ^ z[l],
                })
            }
        };
        let p_values = combined(result);
        let q_values = q.map(|_| combined(row_of(|l| result[l] ^ 1)));
        self.write(w, p, &p_values, exec);
        if let (Some(q), Some(values)) = (q, q_values) {
            self.write(w, q, &values, exec);
        }
    }

    /// Where a warp-wide access of `total` bytes per lane at `addrs` (lanes of `exec`) in shared or
    /// global space lands, when every lane's access is aligned and inside shared memory, or inside
    /// one global allocation: then no lane needs checking on its own.
    #[inline(always)]
    fn warp_region(&self, space: Space, addrs: &Row, exec: u32, total: u32) -> Option<Region> {
        let (mut lowest, mut highest, mut address_bits) = (u64::MAX, 0u64, 0u64);
        for l in lanes(exec) {
            lowest = lowest.min(addrs[l]);
            highest = highest.max(addrs[l]);
            address_bits |= addrs[l];
        }
        if !total.is_power_of_two() || address_bits & (total as u64 - 1) != 0 {
            return None;
        }
        let end = highest.checked_add(total as u64)?;
        if space == Space::Shared {
            return (end <= self.shared.len() as u64).then_some(Region::Shared);
        }
        let (alloc, offset) = self.global.locate(lowest, usize::try_from(end - lowest).ok()?)?;
        Some(Region::Global { alloc, base: lowest - offset as u64 })
    }

    /// A load or store whose every lane lands in `region` (see [`Block::warp_region`]).
    #[inline(always)]
    fn memory_in_region(
        &mut self,
        w: usize,
        m: &MemAccess,
        exec: u32,
        addrs: &Row,
        region: Region,
    ) {
        let size = m.size as usize;
        let count = m.count as usize;
        let total = m.size * m.count;
        let base = match region {
            Region::Shared => 0,
            Region::Global { base, .. } => base,
        };
        // Unit stride (each lane's bytes follow the previous lane's): count the request here,
        // in closed form (as `stats::sectors` and `stats::bank_conflicts` would); else trace it.
        let mut next = addrs[exec.trailing_zeros() as usize];
        let unit_stride = lanes(exec).all(|l| {
            let follows = addrs[l] == next;
            next = addrs[l].wrapping_add(total as u64);
            follows
        });
        match (region, unit_stride) {
            (Region::Shared, true) => self.stats.shared_accesses += 1,
            (Region::Global { .. }, true) => {
                let start = addrs[exec.trailing_zeros() as usize];
                self.stats.global_requests += 1;
                self.stats.global_sectors += (next - 1) / 32 - start / 32 + 1;
            }
            (Region::Shared, false) => {
                self.trace.shared.extend(lanes(exec).map(|l| (addrs[l], total)))
            }
            (Region::Global { .. }, false) => {
                self.trace.global.extend(lanes(exec).map(|l| (addrs[l], total)))
            }
        }
        // Registers are read and written in place: row `r` of this warp starts at `rows + 32 * r`.
        let rows = w * self.nregs * 32;
        if m.load {
            let bytes: &[u8] = match region {
                Region::Shared => &self.shared,
                Region::Global { alloc, .. } => self.global.bytes(alloc),
            };
            let regs = &mut self.regs;
            for l in lanes(exec) {
                let at = (addrs[l] - base) as usize;
                for (k, dst) in m.dsts.iter().enumerate().take(count) {
                    let v = read_le(&bytes[at + k * size..at + (k + 1) * size]);
                    if let Some(r) = dst {
                        regs[rows + 32 * *r as usize + l] = match m.sign_extend {
                            Some(bits) => sext(v, bits) as u64,
                            None => v,
                        };
                    }
                }
            }
        } else {
            // Register and constant sources are read in place; others (rare) are fetched first.
            let fetched: Option<[Row; 4]> = m.srcs[..count]
                .iter()
                .any(|a| !matches!(a.src, Src::Reg(_) | Src::Imm(_)))
                .then(|| {
                    std::array::from_fn(
                        |k| if k < count { self.fetch(w, &m.srcs[k]) } else { [0; 32] },
                    )
                });
            let bytes: &mut [u8] = match region {
                Region::Shared => &mut self.shared,
                Region::Global { alloc, .. } => self.global.bytes_mut(alloc),
            };
            let regs = &self.regs;
            for l in lanes(exec) {
                let at = (addrs[l] - base) as usize;
                for (k, source) in m.srcs.iter().enumerate().take(count) {
                    let v = match (&fetched, source.src) {
                        (Some(values), _) => values[k][l],
                        (None, Src::Reg(r)) => regs[rows + 32 * r as usize + l] & source.mask,
                        (None, Src::Imm(v)) => v,
                        (None, _) => unreachable!("other sources are fetched"),
                    };
                    write_le(&mut bytes[at + k * size..at + (k + 1) * size], v);
                }
            }
        }
    }

    fn memory(&mut self, w: usize, m: &MemAccess, exec: u32) -> Result<(), (usize, Fault)> {
        if exec == 0 {
            return Ok(());
        }
        let first = w * 32 + exec.trailing_zeros() as usize;
        let size = m.size as usize;
        let count = m.count as usize;
        let total = m.size * m.count;
        let offset = m.offset as u64;
        let extend = |v: u64| match m.sign_extend {
            Some(bits) => sext(v, bits) as u64,
            None => v,
        };
        let addrs: Row = match m.base {
            MemBase::Reg(r) => {
                let row = self.row(w, r);
                row_of(|l| row[l].wrapping_add(offset))
            }
            base => {
                let address =
                    self.base_address(first, base).map_err(|f| (first, f))?.wrapping_add(offset);
                if m.load && m.space == Space::Param {
                    // Every lane reads the same parameter bytes (and parameter reads are not
                    // traced): read them once.
                    let at = match self.resolve(Space::Param, address, total, false) {
                        Ok(Loc::Param(at)) => at,
                        Ok(_) => unreachable!("parameter space resolves to parameter bytes"),
                        Err(f) => return Err((first, f)),
                    };
                    for (k, dst) in m.dsts.iter().enumerate().take(count) {
                        let v = extend(read_le(&self.params[at + k * size..at + (k + 1) * size]));
                        self.write(w, *dst, &[v; 32], exec);
                    }
                    return Ok(());
                }
                [address; 32]
            }
        };
        if self.recording {
            let kind = if m.load { AccessKind::Load } else { AccessKind::Store };
            for l in lanes(exec) {
                self.record_lane(w * 32 + l, m.space, addrs[l], total, kind);
            }
        }
        if matches!(m.space, Space::Shared | Space::Global) {
            if let Some(region) = self.warp_region(m.space, &addrs, exec, total) {
                self.memory_in_region(w, m, exec, &addrs, region);
                return Ok(());
            }
        }
        if m.load {
            let mut loaded = [[0u64; 32]; 4];
            for l in lanes(exec) {
                let (bytes, at): (&[u8], usize) =
                    match self.lane_access(w, l, m.space, addrs[l], total)? {
                        Loc::Shared(at) => (&self.shared, at),
                        Loc::Cluster { rank, offset } => (&self.ctas[rank].shared, offset),
                        Loc::Global { alloc, offset } => (self.global.bytes(alloc), offset),
                        Loc::Param(at) => (self.params, at),
                    };
                for (k, row) in loaded.iter_mut().enumerate().take(count) {
                    row[l] = extend(read_le(&bytes[at + k * size..at + (k + 1) * size]));
                }
            }
            for (dst, values) in m.dsts.iter().zip(&loaded).take(count) {
                self.write(w, *dst, values, exec);
            }
        } else {
            let values: [Row; 4] =
                std::array::from_fn(
                    |k| if k < count { self.fetch(w, &m.srcs[k]) } else { [0; 32] },
                );
            for l in lanes(exec) {
                let loc = self.lane_access(w, l, m.space, addrs[l], total)?;
                for (k, row) in values.iter().enumerate().take(count) {
                    self.store(loc.plus(k * size), size, row[l]).map_err(|f| (w * 32 + l, f))?;
                }
            }
        }
        self.count_distributed();
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn shuffle(
        &mut self,
        w: usize,
        mode: ShflMode,
        dst: Dst,
        pred: Option<Dst>,
        a: &Arg,
        b: &Arg,
        c: &Arg,
        exec: u32,
    ) -> Result<(), (usize, Fault)> {
        let (values, deltas, controls) = (self.fetch(w, a), self.fetch(w, b), self.fetch(w, c));
        let mut out = [0u64; 32];
        let mut in_range = [0u64; 32];
        for l in lanes(exec) {
            let bval = deltas[l] as u32 & 31;
            let (cval, seg) = (controls[l] as u32 & 31, (controls[l] as u32 >> 8) & 31);
            let lane = l as u32;
            let max_lane = (lane & seg) | (cval & !seg);
            let min_lane = lane & seg;
            let (j, ok) = match mode {
                ShflMode::Up => (lane.wrapping_sub(bval), lane >= bval && lane - bval >= max_lane),
                ShflMode::Down => (lane + bval, lane + bval <= max_lane),
                ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                ShflMode::Idx => {
                    let j = min_lane | (bval & !seg);
                    (j, j <= max_lane)
                }
            };
            let j = if ok { j } else { lane };
            if exec & (1 << j) == 0 {
                return Err((w * 32 + l, Fault::ShuffleFromInactiveLane { source_lane: j }));
            }
            out[l] = values[j as usize];
            in_range[l] = ok as u64;
        }
        self.write(w, dst, &out, exec);
        if let Some(p) = pred {
            self.write(w, p, &in_range, exec);
        }
        Ok(())
    }
}

/// `setp`'s comparison of two operands (raw bits, masked to the type's width).
#[inline(always)]
fn compare(cmp: Cmp, ty: CmpType, a: u64, b: u64) -> bool {
    use std::cmp::Ordering::{self, *};
    let holds = |order: Order, ord: Ordering| match order {
        Order::Eq => ord == Equal,
        Order::Ne => ord != Equal,
        Order::Lt => ord == Less,
        Order::Le => ord != Greater,
        Order::Gt => ord == Greater,
        Order::Ge => ord != Less,
    };
    match ty {
        CmpType::F32 | CmpType::F64 => {
            let (x, y) = if ty == CmpType::F32 {
                (f32_of(a) as f64, f32_of(b) as f64)
            } else {
                (f64::from_bits(a), f64::from_bits(b))
            };
            match (cmp, x.partial_cmp(&y)) {
                (Cmp::Ordered(order), Some(ord)) => holds(order, ord),
                (Cmp::Unordered(order), Some(ord)) => holds(order, ord),
                (Cmp::Ordered(_), None) => false,
                (Cmp::Unordered(_), None) => true,
                (Cmp::Num, ord) => ord.is_some(),
                (Cmp::Nan, ord) => ord.is_none(),
                // Integer-only comparisons never decode with a float type.
                (Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs, _) => false,
            }
        }
        CmpType::Signed(_) | CmpType::Unsigned => {
            let ord = match ty {
                CmpType::Signed(bits) => sext(a, bits).cmp(&sext(b, bits)),
                _ => a.cmp(&b),
            };
            match cmp {
                Cmp::Ordered(order) => holds(order, ord),
                Cmp::Lo => a < b,
                Cmp::Ls => a <= b,
                Cmp::Hi => a > b,
                Cmp::Hs => a >= b,
                // Float-only comparisons never decode with an integer type.
                Cmp::Unordered(_) | Cmp::Num | Cmp::Nan => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_variable_overrides_the_default() {
        assert_eq!(budget_from(None), DEFAULT_INSTRUCTION_BUDGET);
        assert_eq!(budget_from(Some("1000")), 1000);
        assert_eq!(budget_from(Some(" 4294967296\n")), 1 << 32);
    }

    #[test]
    #[should_panic(expected = "PTX_SIM_INSTRUCTION_BUDGET must be a positive number")]
    fn a_zero_budget_is_refused() {
        budget_from(Some("0"));
    }

    #[test]
    #[should_panic(expected = "not `lots`")]
    fn a_budget_that_is_not_a_number_is_refused() {
        budget_from(Some("lots"));
    }

    #[test]
    fn groups_stay_sorted_and_merge_at_equal_pcs() {
        let mut groups = vec![(3, 0b0001)];
        insert_group(&mut groups, 7, 0b0100);
        insert_group(&mut groups, 1, 0b1000);
        insert_group(&mut groups, 7, 0b0010);
        insert_group(&mut groups, 5, 0);
        assert_eq!(groups, vec![(1, 0b1000), (3, 0b0001), (7, 0b0110)]);
    }
}
