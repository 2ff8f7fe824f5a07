//! # histogram: counting values into bins, and why contention decides the speed
//!
//! Two histograms, with kernels in `cuda/histogram.cu`:
//!
//! - [`ByteHistogram`]: bytes (text, image channels) into 256 bins, one per byte value. Each
//!   [`ByteStep`] is one step of the chapter: global atomics, then privatised shared-memory
//!   counts, then 16-byte loads, then the ways of keeping the lanes of a warp from adding to the
//!   same word (a copy of the bins per warp, one per lane, runs of equal bytes added once, packed
//!   16-bit counters).
//! - [`EvenHistogram`]: f32 values into `bins` even bins over `[lower, upper)` ([`EvenBins`]),
//!   like CUB's `DeviceHistogram::HistogramEven`. Values below `lower`, at or above `upper`, NaN
//!   and both infinities are not counted.
//!
//! Counts are u32. An input of 2^32 elements or more is an error
//! ([`gpu_harness::GpuError::TooLarge`] says to count it in pieces and add the counts as u64),
//! never a wrapped count; an empty input gives zero counts. Both launchers take device views (any
//! offset into a buffer) and host slices.
//!
//! Launch plans ([`HistogramPlan`]) are pure functions of the step, the size and the GPU's shape.

pub mod measured;
mod plan;
pub mod reference;

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, GpuError, GpuShape, Kernel, KernelSource, Result,
    kernel_source,
};

pub use measured::steps;
pub use plan::{BLOCK_SIZE, EVEN_SHARED_WORDS, HistogramPlan, MAX_ELEMENTS, blocks};

const SOURCE: KernelSource = kernel_source!("histogram.cu");

/// Bins of a byte histogram: one per byte value.
pub const BYTE_BINS: usize = 256;

/// Counts one 16-bit packed counter holds before the packed step must flush it.
pub const PACKED_COUNTER_MAX: u32 = u16::MAX as u32;

// ANCHOR: byte_steps
gpu_harness::steps! {
    /// The steps of the byte histogram, in the chapter's order.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ByteStep {
        /// 1. One global atomic per byte.
        GlobalAtomics => "global-atomics",
        /// 2. A copy of the bins per block in shared memory, merged into the global bins once.
        SharedAtomics => "shared-atomics",
        /// 3. Step 2 with 16-byte loads, two in flight per thread.
        VectorLoads => "vector-loads",
        /// 4a. One copy of the bins per warp.
        PerWarp => "per-warp",
        /// 4b. One copy per lane, interleaved so that each lane has its own bank.
        LaneCopies => "lane-copies",
        /// 4c. Lane copies, and 16 equal bytes added with one atomic.
        Runs => "runs",
        /// 4d. Step 4c with the address arithmetic written out: two instructions per byte, not
        /// four.
        Addresses => "addresses",
        /// 4e (an extra). Lane copies in 16-bit counters, two per word, flushed before they
        /// overflow.
        Packed => "packed",
    }
}

impl ByteStep {
    /// Its kernel in `cuda/histogram.cu`.
    pub fn kernel(self) -> &'static str {
        match self {
            ByteStep::GlobalAtomics => "histogram_global_atomics",
            ByteStep::SharedAtomics => "histogram_shared_atomics",
            ByteStep::VectorLoads => "histogram_vector_loads",
            ByteStep::PerWarp => "histogram_per_warp",
            ByteStep::LaneCopies => "histogram_lane_copies",
            ByteStep::Runs => "histogram_runs",
            ByteStep::Packed => "histogram_packed",
            ByteStep::Addresses => "histogram_addresses",
        }
    }

    /// Bytes of shared memory its copies of the bins take per block.
    pub fn shared_bytes(self) -> u32 {
        let words = match self {
            ByteStep::GlobalAtomics => 0,
            ByteStep::SharedAtomics | ByteStep::VectorLoads => BYTE_BINS,
            ByteStep::PerWarp => BYTE_BINS * (BLOCK_SIZE / 32) as usize,
            ByteStep::LaneCopies | ByteStep::Runs | ByteStep::Addresses => BYTE_BINS * 32,
            ByteStep::Packed => BYTE_BINS / 2 * 32,
        };
        4 * words as u32
    }

    /// Bytes one thread counts per loop iteration: one, or two 16-byte vectors.
    pub fn per_thread(self) -> u32 {
        match self {
            ByteStep::GlobalAtomics | ByteStep::SharedAtomics => 1,
            _ => 32,
        }
    }

    /// The launch plan for `n` bytes on a GPU of shape `gpu`.
    pub fn plan(self, n: usize, gpu: GpuShape) -> Result<HistogramPlan> {
        let mut plan = plan::plan(
            "byte histogram",
            self.kernel(),
            n as u64,
            self.per_thread(),
            (self.shared_bytes(), 0),
            gpu,
        )?;
        if self == ByteStep::Packed {
            plan.flush_rounds = packed_flush_rounds();
        }
        Ok(plan)
    }
}

/// Rounds of the packed step's loop between flushes. In one round a thread counts two vectors
/// (32 bytes), so a counter (one bin of one lane's copy, shared by the lanes of that number in
/// the block's 16 warps) grows by at most 16 x 32 = 512; the head and tail add at most 2 more.
pub fn packed_flush_rounds() -> u32 {
    let per_round = (BLOCK_SIZE / 32) * 32;
    (PACKED_COUNTER_MAX - 2) / per_round
}
// ANCHOR_END: byte_steps

/// Checks that `bins` holds `expected` counts.
fn check_bins(bins: &DeviceBuffer<u32>, expected: usize) -> Result<()> {
    if bins.len() != expected {
        return Err(GpuError::BadInput(format!(
            "the bins buffer holds {} u32 counts; this histogram has {expected} bins",
            bins.len()
        )));
    }
    Ok(())
}

/// Checks that `plan` is a plan of `kernel` for `n` elements (tests may change its grid).
fn check_plan(plan: &HistogramPlan, kernel: &str, n: usize) -> Result<()> {
    if plan.kernel != kernel || plan.n != n as u64 {
        return Err(GpuError::BadInput(format!(
            "a plan of {} for {} elements used for {kernel} on {n}",
            plan.kernel, plan.n
        )));
    }
    Ok(())
}

// ANCHOR: byte_histogram
/// A byte histogram on the device, with the kernel of one [`ByteStep`].
pub struct ByteHistogram {
    device: Device,
    step: ByteStep,
    kernel: Kernel,
}

impl ByteHistogram {
    /// Compiles (or fetches from the cache) the step's kernel.
    pub fn new(device: &Device, step: ByteStep) -> Result<Self> {
        Ok(ByteHistogram {
            device: device.clone(),
            step,
            kernel: device.kernel(&SOURCE, step.kernel())?,
        })
    }

    pub fn step(&self) -> ByteStep {
        self.step
    }

    /// The launch plan for `n` bytes on this device.
    pub fn plan(&self, n: usize) -> Result<HistogramPlan> {
        self.step.plan(n, self.device.facts().shape())
    }

    /// Counts the bytes of `input` into `bins` (256 counts, overwritten). Queued on the device's
    /// stream; nothing waits.
    pub fn count(&self, input: DeviceView<'_, u8>, bins: &mut DeviceBuffer<u32>) -> Result<()> {
        let plan = self.plan(input.len())?;
        self.count_with_plan(input, bins, &plan)
    }

    /// [`ByteHistogram::count`] with a given plan: one from [`ByteHistogram::plan`], or one changed
    /// from it (fewer blocks, an earlier flush) to test what the usual plan does not reach.
    pub fn count_with_plan(
        &self,
        input: DeviceView<'_, u8>,
        bins: &mut DeviceBuffer<u32>,
        plan: &HistogramPlan,
    ) -> Result<()> {
        check_bins(bins, BYTE_BINS)?;
        check_plan(plan, self.step.kernel(), input.len())?;
        if self.step == ByteStep::Packed
            && !(1..=packed_flush_rounds()).contains(&plan.flush_rounds)
        {
            return Err(GpuError::BadInput(format!(
                "the packed step flushes every 1 to {} rounds, not {}",
                packed_flush_rounds(),
                plan.flush_rounds
            )));
        }
        bins.fill_words(0)?;
        let Some(config) = plan.launch else { return Ok(()) };
        let launch = self
            .device
            .launch(&self.kernel, config)
            .arg(input)
            .arg(&mut *bins)
            .arg(input.len() as u32);
        if self.step == ByteStep::Packed {
            launch.arg(plan.flush_rounds).run()
        } else {
            launch.run()
        }
    }

    /// The histogram of bytes on the host: uploads them, counts them, brings the counts back.
    pub fn count_host(&self, input: &[u8]) -> Result<Vec<u32>> {
        self.plan(input.len())?; // too large: fail before uploading
        let buffer = self.device.upload(input)?;
        let mut bins = self.device.alloc::<u32>(BYTE_BINS)?;
        self.count(buffer.as_view(), &mut bins)?;
        bins.to_host()
    }
}
// ANCHOR_END: byte_histogram

// ANCHOR: even_bins
/// `bins` even bins over `[lower, upper)`, as CUB's `HistogramEven` takes them (with `bins + 1`
/// levels).
///
/// Value `x` is counted in bin `min(floor((x - lower) * scale), bins - 1)` where
/// `scale = bins / (upper - lower)` (computed in f64, rounded to f32), the subtraction and the
/// product each rounded to f32, when `lower <= x < upper`. Values below `lower`, at or above
/// `upper`, NaN and both infinities are not counted. The clamp matters: for `x` just below
/// `upper`, rounding can make `(x - lower) * scale` equal to `bins`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvenBins {
    bins: u32,
    lower: f32,
    upper: f32,
    scale: f32,
}

impl EvenBins {
    /// The most bins an f32 histogram counts (its copies live in 32 KiB of shared memory).
    pub const MAX_BINS: u32 = EVEN_SHARED_WORDS;

    /// `bins` bins over `[lower, upper)`: 1 to [`EvenBins::MAX_BINS`] bins, finite bounds,
    /// `lower < upper`, a width `upper - lower` that f32 holds (the kernel bins `x` as
    /// `(x - lower) * scale` in f32, and with a finite width `x - lower` cannot overflow for any
    /// `x` in range), and a range wide enough that `scale` is finite in f32.
    pub fn new(bins: u32, lower: f32, upper: f32) -> Result<EvenBins> {
        let bad = |why: String| {
            Err(GpuError::BadInput(format!("even bins ({bins} over [{lower}, {upper})): {why}")))
        };
        if bins == 0 || bins > Self::MAX_BINS {
            return bad(format!("the number of bins must be 1 to {}", Self::MAX_BINS));
        }
        if !lower.is_finite() || !upper.is_finite() || lower >= upper {
            return bad("the bounds must be finite with lower < upper".into());
        }
        if !(upper - lower).is_finite() {
            return bad(format!(
                "the width upper - lower overflows f32 (past {:e}), and so would x - lower for \
                 the largest values: \
                 narrow the range, or count the two signs in two histograms",
                f32::MAX
            ));
        }
        let scale = (f64::from(bins) / (f64::from(upper) - f64::from(lower))) as f32;
        if !scale.is_finite() {
            return bad("the range is too narrow for f32: bins / (upper - lower) overflows".into());
        }
        Ok(EvenBins { bins, lower, upper, scale })
    }

    pub fn bins(&self) -> u32 {
        self.bins
    }

    pub fn lower(&self) -> f32 {
        self.lower
    }

    pub fn upper(&self) -> f32 {
        self.upper
    }

    /// `bins / (upper - lower)`, as the kernel multiplies by it.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// The bin of `x`, or `None` when it is not counted: the kernel's `even_bin`, on the CPU.
    pub fn bin_of(&self, x: f32) -> Option<u32> {
        if !(x >= self.lower && x < self.upper) {
            return None;
        }
        // f32 arithmetic, each operation rounded, as `__fsub_rn` and `__fmul_rn`; `as u32`
        // truncates and saturates like `__float2uint_rz`.
        let bin = ((x - self.lower) * self.scale) as u32;
        Some(bin.min(self.bins - 1))
    }
}
// ANCHOR_END: even_bins

/// The kernels of the f32 histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvenStep {
    /// One copy of the bins per block (an extra: what the lane copies gain on f32).
    OneCopy,
    /// Up to 32 copies, one per lane where the bins fit (32 copies of 256 bins take 32 KiB).
    LaneCopies,
}

impl EvenStep {
    pub fn name(self) -> &'static str {
        match self {
            EvenStep::OneCopy => "even-f32-one-copy",
            EvenStep::LaneCopies => "even-f32",
        }
    }

    /// Copies of the bins per block: 1, or the most (a power of two, at most 32) whose words fit
    /// in [`EVEN_SHARED_WORDS`].
    pub fn replicas(self, bins: u32) -> u32 {
        match self {
            EvenStep::OneCopy => 1,
            EvenStep::LaneCopies => {
                let mut replicas = 32;
                while replicas > 1 && replicas * bins > EVEN_SHARED_WORDS {
                    replicas /= 2;
                }
                replicas
            }
        }
    }

    /// The launch plan for `n` values into `bins` bins on a GPU of shape `gpu`: two float4 (8
    /// values) per thread and iteration.
    pub fn plan(self, n: usize, bins: u32, gpu: GpuShape) -> Result<HistogramPlan> {
        let replicas = self.replicas(bins);
        let mut plan =
            plan::plan("f32 histogram", EVEN_KERNEL, n as u64, 8, (0, 4 * bins * replicas), gpu)?;
        plan.replicas = replicas;
        Ok(plan)
    }
}

const EVEN_KERNEL: &str = "histogram_even_f32";

// ANCHOR: even_histogram
/// An f32 histogram over even bins on the device.
pub struct EvenHistogram {
    device: Device,
    step: EvenStep,
    kernel: Kernel,
}

impl EvenHistogram {
    pub fn new(device: &Device, step: EvenStep) -> Result<Self> {
        Ok(EvenHistogram {
            device: device.clone(),
            step,
            kernel: device.kernel(&SOURCE, EVEN_KERNEL)?,
        })
    }

    /// The launch plan for `n` values into `bins` on this device.
    pub fn plan(&self, n: usize, bins: &EvenBins) -> Result<HistogramPlan> {
        self.step.plan(n, bins.bins(), self.device.facts().shape())
    }

    /// Counts `input` into `counts` (`bins.bins()` counts, overwritten). Queued; nothing waits.
    pub fn count(
        &self,
        input: DeviceView<'_, f32>,
        bins: &EvenBins,
        counts: &mut DeviceBuffer<u32>,
    ) -> Result<()> {
        check_bins(counts, bins.bins() as usize)?;
        let plan = self.plan(input.len(), bins)?;
        counts.fill_words(0)?;
        let Some(config) = plan.launch else { return Ok(()) };
        self.device
            .launch(&self.kernel, config)
            .arg(input)
            .arg(&mut *counts)
            .arg(input.len() as u32)
            .arg(bins.bins())
            .arg(bins.lower())
            .arg(bins.upper())
            .arg(bins.scale())
            .arg(plan.replicas)
            .run()
    }

    /// The histogram of values on the host: uploads them, counts them, brings the counts back.
    pub fn count_host(&self, input: &[f32], bins: &EvenBins) -> Result<Vec<u32>> {
        self.plan(input.len(), bins)?;
        let buffer = self.device.upload(input)?;
        let mut counts = self.device.alloc::<u32>(bins.bins() as usize)?;
        self.count(buffer.as_view(), bins, &mut counts)?;
        counts.to_host()
    }
}
// ANCHOR_END: even_histogram
