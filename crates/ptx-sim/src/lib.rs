//! # ptx-sim: run the course's kernels on the CPU, and count what makes them slow
//!
//! A PTX interpreter for the PTX that NVRTC emits for `cuda/*.cu`:
//!
//! - [`parse`] turns PTX text into a [`Module`] (module `parser`, types in module `ptx`), and
//!   decodes each kernel once into the compact form the interpreter runs (module `decode`:
//!   register indices, ready-made constants, instruction-index branch targets; instructions without
//!   a dedicated form run through the general per-lane interpreter, module `lane`);
//! - a [`Machine`] owns a flat simulated global memory ([`Machine::alloc`], [`Machine::write`],
//!   [`Machine::read`]) and runs kernels with [`Machine::launch`] (module `exec`), or several
//!   launches of one kernel at once with [`Machine::launch_together`];
//! - each launch returns [`LaunchStats`]: warp instructions, divergence, barriers (block and
//!   cluster), shared-memory bank conflicts, accesses to other blocks' shared memory, global-memory
//!   coalescing, atomics (global and shared, and the bank conflicts of shared atomics), blocks, the
//!   longest block and the busiest warp (module `stats`).
//! - on request ([`Machine::set_tracing`]), a launch also records what its first blocks' warps did,
//!   instruction by instruction ([`LaunchTrace`]: active lanes, and each memory access's lanes,
//!   addresses, banks and sectors; module `trace`), which the book's pictures of a warp are drawn
//!   from; off by default, and the counters are the same either way.
//!
//! Execution model: the blocks of a grid run one after another in order, so single-pass kernels
//! that wait on earlier blocks make progress. Inside a block, warps of 32 lanes run in lockstep
//! with an active mask; divergence is handled by min-PC scheduling (each lane has its own PC; a
//! warp step runs the instruction at the lowest PC among its runnable lanes, for every lane at that
//! PC), so lanes reconverge as soon as their PCs meet. Faults (out-of-bounds or misaligned
//! accesses, unsupported instructions) are errors naming the kernel, block, thread, instruction and
//! address, never silent wrong results.
//!
//! Thread block clusters (Hopper; `.reqnctapercluster` in the PTX, from CUDA's `__cluster_dims__`,
//! shape X x Y x Z in [`Kernel::cluster`]): the grid runs cluster after cluster, in order, and the
//! blocks of one cluster run interleaved. Each block in turn, rank 0 first (rank = x + y X +
//! z X Y within the cluster), runs until it has finished or every thread it has left waits at the
//! cluster barrier (`barrier.cluster.wait`); the barrier completes once every thread of the cluster
//! that has not exited has arrived (`barrier.cluster.arrive`), and the blocks run again in turn.
//! Blocks read and write each other's shared memory through `mapa` and `ld`/`st`/`atom` of
//! `shared::cluster` (or generic) addresses, encoded as module `memory` describes. Because rank 0
//! runs first, a read of another block's shared memory that no cluster barrier orders after the
//! write sees the value of a higher rank unwritten (zero): a missing barrier shows in the results.
//! A read of the shared memory of a block that has exited faults, and so does a cluster whose every
//! thread waits where none can go on ([`Fault::Deadlock`]). A kernel without clusters runs as
//! clusters of one block, which is the order above.
//!
//! Launches run together ([`Machine::launch_together`]: one kernel, grid and block, a parameter
//! list per launch, such as one launch per GPU of a simulated world whose GPUs share this memory)
//! run block by block too, and block `b` of every launch runs interleaved with block `b` of the
//! others: each in turn, launch 0 first, for a turn of at least 4096 warp instructions, until all
//! have finished. So kernels that meet at flags in each other's buffers (`st.release` and a spin
//! on `ld.acquire`) make progress, as long as block `b` waits only for block `b` (or earlier
//! blocks) of the other launches. Each launch has its own counters; a fault names the launch
//! ([`FaultSite::launch`]).
//!
//! A block that runs more than [`Machine::instruction_budget`] warp instructions
//! ([`DEFAULT_INSTRUCTION_BUDGET`], 2^26, unless [`INSTRUCTION_BUDGET_VAR`] or
//! [`Machine::set_instruction_budget`] says otherwise; a block of a cluster counts over all its
//! turns) stops the launch with [`Fault::InstructionBudgetExceeded`], naming the kernel, block and
//! warp: a kernel that never finishes (a spin-wait nothing ends, a barrier some threads never
//! reach) fails instead of hanging.
//!
//! Registers are 64 bits per lane, stored per warp (register `r` of the 32 lanes side by side), so
//! a warp instruction works on whole rows; `.f16`, `.bf16` and their pairs are computed in f64 and
//! rounded once (module `half`).

mod decode;
mod error;
mod exec;
mod half;
mod lane;
mod memory;
mod parser;
mod ptx;
mod stats;
mod trace;

pub use error::{Fault, FaultSite, SimError};
pub use exec::{DEFAULT_INSTRUCTION_BUDGET, INSTRUCTION_BUDGET_VAR, Machine, ParamValue};
pub use parser::parse;
pub use ptx::{Kernel, Module, Param};
pub use stats::LaunchStats;
pub use trace::{
    Access, AccessKind, AccessSpace, BANKS, LaneAccess, LaunchTrace, SECTOR_BYTES, TraceOptions,
    WarpStep,
};
