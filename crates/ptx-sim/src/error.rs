//! Errors: every way parsing or running a kernel can fail, typed.

use std::fmt;

/// Where in a launch a fault happened: kernel, block, thread and instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSite {
    pub kernel: String,
    pub block: (u32, u32, u32),
    pub thread: (u32, u32, u32),
    /// The instruction as written in the PTX.
    pub instruction: String,
    /// 1-based line of the instruction in the PTX text.
    pub ptx_line: usize,
    /// Which of the launches of [`crate::Machine::launch_together`] faulted (its index in their
    /// parameter lists); `None` for a launch on its own.
    pub launch: Option<usize>,
}

impl fmt::Display for FaultSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel `{}`", self.kernel)?;
        if let Some(launch) = self.launch {
            write!(f, " (launch {launch} of those run together)")?;
        }
        write!(
            f,
            ", block {:?}, thread {:?}, PTX line {}: `{}`",
            self.block, self.thread, self.ptx_line, self.instruction
        )
    }
}

/// Everything that can go wrong in the simulator.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The PTX text is not well formed (as far as this parser understands PTX).
    #[error("PTX parse error at line {line}: {message}")]
    Parse { line: usize, message: String },
    /// The PTX is well formed but uses a construct the simulator does not support.
    #[error("unsupported PTX construct at line {line}: {construct}")]
    UnsupportedConstruct { line: usize, construct: String },
    /// `launch` named a kernel the module does not define.
    #[error("no kernel named `{0}` in the module")]
    NoSuchKernel(String),
    /// The launch configuration or parameters do not fit the kernel.
    #[error("bad launch of `{kernel}`: {reason}")]
    BadLaunch { kernel: String, reason: String },
    /// A host read or write outside every allocation.
    #[error("host access of {len} bytes at {addr:#x} is outside every allocation")]
    HostAccess { addr: u64, len: usize },
    /// Simulated global memory is exhausted (the allocation would pass the address limit).
    #[error("cannot allocate {bytes} bytes of simulated global memory")]
    OutOfMemory { bytes: usize },
    /// A thread did something a GPU would fault on, or the simulator cannot do.
    #[error("{site}: {fault}")]
    Fault { site: Box<FaultSite>, fault: Fault },
}

/// What went wrong in a thread.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    #[error("{space} access of {size} bytes at address {addr:#x} is out of bounds")]
    OutOfBounds { space: &'static str, addr: u64, size: u32 },
    #[error("{space} access of {size} bytes at address {addr:#x} is misaligned")]
    Misaligned { space: &'static str, addr: u64, size: u32 },
    #[error("unsupported instruction: {0}")]
    Unsupported(String),
    #[error("integer division by zero")]
    DivisionByZero,
    #[error("shfl.sync reads lane {source_lane}, which is not executing the shuffle")]
    ShuffleFromInactiveLane { source_lane: u32 },
    #[error(
        "deadlock: every thread of the block (or of its cluster) waits and no barrier can complete"
    )]
    Deadlock,
    /// `mapa`, `getctarank` or a `shared::cluster` access named a CTA rank the cluster lacks.
    #[error("CTA rank {rank} is outside the cluster, which has {cluster_size} CTAs")]
    NoSuchClusterRank { rank: u64, cluster_size: u32 },
    /// `mapa` or `getctarank` of an address outside the executing CTA's shared memory.
    #[error("address {addr:#x} is not in this block's shared memory")]
    NotSharedAddress { addr: u64 },
    /// A `shared::cluster` access to a CTA of the cluster whose threads have all exited: its shared
    /// memory is gone (CUDA: a block must not exit while others may still access its shared
    /// memory).
    #[error(
        "shared::cluster access to CTA rank {rank} of the cluster, which has exited: blocks that \
         read each other's shared memory must wait at a cluster barrier before exiting"
    )]
    ExitedClusterCta { rank: u32 },
    /// `barrier.cluster.wait` by a thread that has not arrived since its last wait (undefined in
    /// PTX).
    #[error(
        "barrier.cluster.wait by a thread that has not arrived (barrier.cluster.arrive) since its \
         last wait"
    )]
    ClusterWaitWithoutArrive,
    /// `barrier.cluster.arrive` by a thread that arrived and has not waited since (undefined in
    /// PTX).
    #[error("barrier.cluster.arrive by a thread that arrived already and has not waited since")]
    ClusterArriveTwice,
    #[error("trap executed")]
    Trap,
    /// The block ran more warp instructions than the machine's budget
    /// ([`crate::Machine::set_instruction_budget`]): a loop that never ends, such as a spin-wait on
    /// a flag nothing sets, or threads waiting at a barrier for threads that never reach it.
    #[error(
        "warp {warp} was still running when the block used up its budget of {budget} warp \
         instructions \
         ({threads_at_barrier} threads of the block waiting at a barrier): the kernel never \
         finishes \
         (a spin-wait nothing ends, or a barrier some threads never reach?); raise the budget with \
         Machine::set_instruction_budget or PTX_SIM_INSTRUCTION_BUDGET if the work is legitimate"
    )]
    InstructionBudgetExceeded { budget: u64, warp: u32, threads_at_barrier: u32 },
}
