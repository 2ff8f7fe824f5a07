//! Launch plans: which kernel a histogram launches, with what grid and shared memory. Pure
//! functions of the step, the input size and the GPU's shape, snapshot-tested without a GPU.

use std::fmt;

use gpu_harness::{GpuError, GpuShape, LaunchConfig, Result};

/// Threads per block of every histogram kernel (`HIST_BLOCK` in `cuda/histogram.cu`).
pub const BLOCK_SIZE: u32 = 512;

/// The largest input a launch counts: its counts are u32, and its kernels index with a u32 `n`.
pub const MAX_ELEMENTS: u64 = u32::MAX as u64;

/// Shared-memory words an f32 histogram's copies may take (32 KiB, as the byte steps' lane copies).
pub const EVEN_SHARED_WORDS: u32 = 8192;

/// How one histogram runs: one kernel launch (none for an empty input, whose bins are only
/// zeroed), and the per-step parameters it passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramPlan {
    pub kernel: &'static str,
    /// Elements counted.
    pub n: u64,
    /// The launch, or `None` when there is nothing to count.
    pub launch: Option<LaunchConfig>,
    /// Shared memory per block, static and dynamic, in bytes.
    pub shared_bytes: u32,
    /// Elements one thread counts per loop iteration (1, 32 bytes, or 8 floats).
    pub per_thread: u32,
    /// The packed step's flush interval in loop rounds; 0 for the other steps.
    pub flush_rounds: u32,
    /// The copies of the bins per block of the f32 kernel (1 to 32); 0 for the byte steps.
    pub replicas: u32,
}

impl fmt::Display for HistogramPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n = {}: ", self.n)?;
        match self.launch {
            None => write!(f, "no launch (the bins are zeroed)")?,
            Some(LaunchConfig { grid, block, .. }) => write!(
                f,
                "{} grid {} block {}, {} B shared per block, {} element(s) per thread and \
                 iteration",
                self.kernel, grid.0, block.0, self.shared_bytes, self.per_thread
            )?,
        }
        if self.flush_rounds > 0 {
            write!(f, ", flush every {} rounds", self.flush_rounds)?;
        }
        if self.replicas > 0 {
            write!(f, ", {} copies of the bins", self.replicas)?;
        }
        Ok(())
    }
}

/// The error for an input of more than [`MAX_ELEMENTS`] elements.
pub fn too_large(what: &str, n: u64) -> GpuError {
    GpuError::TooLarge {
        what: format!(
            "{what} (u32 counts): count the input in pieces of fewer than 2^32 elements and add \
             their counts as u64"
        ),
        n,
        max: MAX_ELEMENTS,
    }
}

/// Blocks for `n` elements at `per_thread` elements per thread and iteration: enough for one
/// iteration per thread, at most the GPU filled once (4 blocks of 512 threads per SM).
pub fn blocks(n: u64, per_thread: u32, gpu: GpuShape) -> u32 {
    let wanted = n.div_ceil(u64::from(BLOCK_SIZE) * u64::from(per_thread)).max(1);
    wanted.min(u64::from(gpu.resident_blocks(BLOCK_SIZE))) as u32
}

/// The plan of a kernel that counts `n` elements, `per_thread` per thread and iteration, with
/// `static_shared` bytes of static and `dynamic_shared` of dynamic shared memory per block.
pub fn plan(
    what: &str,
    kernel: &'static str,
    n: u64,
    per_thread: u32,
    (static_shared, dynamic_shared): (u32, u32),
    gpu: GpuShape,
) -> Result<HistogramPlan> {
    if n > MAX_ELEMENTS {
        return Err(too_large(what, n));
    }
    let launch = (n > 0)
        .then(|| LaunchConfig::linear(blocks(n, per_thread, gpu), BLOCK_SIZE, dynamic_shared));
    Ok(HistogramPlan {
        kernel,
        n,
        launch,
        shared_bytes: static_shared + dynamic_shared,
        per_thread,
        flush_rounds: 0,
        replicas: 0,
    })
}
