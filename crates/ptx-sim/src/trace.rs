//! An opt-in record of what the warps of a launch did, instruction by instruction: which lanes
//! were active, and for each memory access the lanes' addresses, with the shared-memory banks and
//! the global sectors they touch. It is what the book's pictures of a warp are drawn from.
//!
//! Off by default ([`Machine::set_tracing`](crate::Machine::set_tracing) turns it on): a launch
//! that is not traced does nothing more than test one flag per warp instruction, and its counters
//! are the same whether traced or not. Only the first [`TraceOptions::blocks`] blocks of a launch
//! (in order of their linear index) are recorded, and at most [`TraceOptions::max_steps`] warp
//! instructions, so a trace of a large launch stays small.

use std::collections::BTreeMap;

use crate::stats::{bank_conflicts, sectors, shared_atomic_conflicts};

/// What a traced launch records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceOptions {
    /// The blocks recorded: those of linear index below this.
    pub blocks: u64,
    /// The most warp instructions recorded per launch (the rest run, unrecorded, and the trace is
    /// marked [`LaunchTrace::truncated`]).
    pub max_steps: usize,
}

impl Default for TraceOptions {
    /// The first block, up to 2^20 warp instructions.
    fn default() -> TraceOptions {
        TraceOptions { blocks: 1, max_steps: 1 << 20 }
    }
}

/// The record of one traced launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchTrace {
    pub kernel: String,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// The kernel's instructions as written in the PTX, by PC (what [`WarpStep::pc`] indexes).
    pub instructions: Vec<String>,
    /// The recorded warp instructions, in the order they ran.
    pub steps: Vec<WarpStep>,
    /// Whether more warp instructions ran in the recorded blocks than were recorded.
    pub truncated: bool,
}

/// One warp instruction: a warp's lanes at one PC, issued together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarpStep {
    /// The block's linear index (x fastest).
    pub block: u64,
    /// The warp within its block.
    pub warp: u32,
    pub pc: u32,
    /// The lanes at this instruction (bit `l` for lane `l`).
    pub active: u32,
    /// The active lanes whose guard predicate held: those that executed it.
    pub executed: u32,
    /// Barriers (`bar.sync`) this warp had passed before this instruction: the round of a
    /// block-wide algorithm.
    pub phase: u32,
    /// Its memory access, for a load, store or atomic of shared or global memory.
    pub access: Option<Access>,
}

/// Where an access lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessSpace {
    /// The block's shared memory: addresses are byte offsets into it.
    Shared,
    /// Global memory: addresses are device addresses.
    Global,
}

/// What an access does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load,
    Store,
    Atomic,
}

/// One lane's part of a warp-level access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneAccess {
    pub lane: u32,
    /// A shared-memory byte offset, or a global address.
    pub address: u64,
    /// Bytes moved by this lane (all the elements of a vector access).
    pub bytes: u32,
}

/// The memory access of one warp instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub space: AccessSpace,
    pub kind: AccessKind,
    /// The executing lanes' accesses, lowest lane first.
    pub lanes: Vec<LaneAccess>,
}

/// Shared memory has 32 banks of 4-byte words.
pub const BANKS: u32 = 32;
/// Global memory moves 32-byte sectors.
pub const SECTOR_BYTES: u64 = 32;

impl Access {
    fn pairs(&self) -> Vec<(u64, u32)> {
        self.lanes.iter().map(|l| (l.address, l.bytes)).collect()
    }

    /// The bank of each lane's first word (shared memory).
    pub fn banks(&self) -> Vec<(u32, u32)> {
        self.lanes.iter().map(|l| (l.lane, ((l.address / 4) % BANKS as u64) as u32)).collect()
    }

    /// How many turns (wavefronts) the banks take to serve this shared access, as the counters
    /// count them: the least any access of its words needs plus its bank conflicts. For an
    /// atomic, each lane takes its own turn at its bank. 0 for a global access.
    pub fn wavefronts(&self) -> u64 {
        if self.space != AccessSpace::Shared || self.lanes.is_empty() {
            return 0;
        }
        if self.kind == AccessKind::Atomic {
            let offsets: Vec<u64> = self.lanes.iter().map(|l| l.address).collect();
            return 1 + shared_atomic_conflicts(&offsets);
        }
        let words: u64 = {
            let mut w: Vec<u64> = Vec::new();
            for l in &self.lanes {
                w.extend(l.address / 4..(l.address + l.bytes.max(1) as u64).div_ceil(4));
            }
            w.sort_unstable();
            w.dedup();
            w.len() as u64
        };
        words.div_ceil(BANKS as u64).max(1) + self.extra_wavefronts()
    }

    /// The extra wavefronts of this shared access: what the `shared_bank_conflicts` counter (or
    /// `shared_atomic_conflicts`, for an atomic) adds for it.
    pub fn extra_wavefronts(&self) -> u64 {
        if self.space != AccessSpace::Shared || self.lanes.is_empty() {
            return 0;
        }
        if self.kind == AccessKind::Atomic {
            let offsets: Vec<u64> = self.lanes.iter().map(|l| l.address).collect();
            return shared_atomic_conflicts(&offsets);
        }
        bank_conflicts(&self.pairs(), &mut Vec::new())
    }

    /// The distinct 32-byte sectors a global access touches, by index (address / 32), sorted.
    pub fn sectors(&self) -> Vec<u64> {
        let mut s: Vec<u64> = Vec::new();
        for l in &self.lanes {
            s.extend(
                l.address / SECTOR_BYTES..=(l.address + l.bytes.max(1) as u64 - 1) / SECTOR_BYTES,
            );
        }
        s.sort_unstable();
        s.dedup();
        debug_assert_eq!(s.len() as u64, sectors(&self.pairs(), &mut Vec::new()));
        s
    }
}

/// The recorder a traced launch carries while it runs.
#[derive(Debug)]
pub(crate) struct Recorder {
    pub options: TraceOptions,
    pub trace: LaunchTrace,
    /// Barriers passed, per recorded block and warp (the blocks of a cluster run interleaved).
    pub phases: BTreeMap<u64, Vec<u32>>,
    /// The access of the warp instruction being run.
    pub pending: Option<Access>,
}

impl Recorder {
    pub(crate) fn new(
        options: TraceOptions,
        kernel: &crate::Kernel,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
    ) -> Recorder {
        Recorder {
            options,
            trace: LaunchTrace {
                kernel: kernel.name.clone(),
                grid,
                block,
                instructions: kernel.instrs.iter().map(|i| i.text.clone()).collect(),
                steps: Vec::new(),
                truncated: false,
            },
            phases: BTreeMap::new(),
            pending: None,
        }
    }

    /// Whether the block of linear index `block` is recorded.
    pub(crate) fn records(&self, block: u64) -> bool {
        block < self.options.blocks
    }

    /// Adds lane `lane`'s access to the running warp instruction's.
    pub(crate) fn lane(
        &mut self,
        space: AccessSpace,
        kind: AccessKind,
        lane: u32,
        address: u64,
        bytes: u32,
    ) {
        let access = self.pending.get_or_insert_with(|| Access { space, kind, lanes: Vec::new() });
        access.lanes.push(LaneAccess { lane, address, bytes });
    }

    /// Records a warp instruction of block `block` that has run (with the pending access), and
    /// counts a barrier it passed.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step(
        &mut self,
        block: u64,
        warp: u32,
        warps: usize,
        pc: u32,
        active: u32,
        executed: u32,
        barrier: bool,
    ) {
        let phases = self.phases.entry(block).or_insert_with(|| vec![0; warps]);
        let access = self.pending.take();
        let phase = phases[warp as usize];
        if barrier {
            phases[warp as usize] += 1;
        }
        if self.trace.steps.len() >= self.options.max_steps {
            self.trace.truncated = true;
            return;
        }
        self.trace.steps.push(WarpStep { block, warp, pc, active, executed, phase, access });
    }
}
