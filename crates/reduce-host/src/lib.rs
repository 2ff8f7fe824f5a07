//! # reduce-host: the sum of data that starts on the host
//!
//! Every other chapter starts with its input in GPU memory. Here it starts in host memory (a `Vec`,
//! a NumPy array), and the time to the answer includes crossing the host link. Each step reduces a
//! host slice of f32 to its sum with reduce-atomic's deterministic single-pass kernel (no kernel of
//! its own); what changes is how the data reaches it:
//!
//! 1. [`HostReduce::copy_then_reduce`] from pageable memory (a plain `Vec`): one copy of the whole
//!    input, which the driver stages through a pinned buffer of its own, then the kernel.
//! 2. The same call on pinned memory ([`gpu_harness::PinnedBuffer`], allocated pinned or a `Vec`
//!    pinned in place): the copy engine reads the host memory directly.
//! 3. [`HostReduce::chunked`]: the input in chunks ([`PipelinePlan`]), each copied and reduced on
//!    one of [`STREAMS`] streams, so that the copy engine copies chunk k + 1 while the SMs reduce
//!    chunk k; the input stays on the device for more work. Events order the chunks' sums before
//!    the last launch adds them.
//! 4. [`HostReduce::streamed`]: the same pipeline through a ring of chunk buffers that fits in a
//!    device memory budget the caller gives, for inputs bigger than the GPU's memory.
//! 5. [`cpu_sum`]: the same sum on the host's cores (`std::thread`, independent accumulators the
//!    compiler vectorises), measured beside them.
//!
//! The semantics are reduce-atomic's f32 sum: the sum of nothing is 0, NaN and infinities
//! propagate.

use std::fmt;

use gpu_harness::{Device, DeviceBuffer, Event, GpuError, Result};
use reduce_atomic::DeterministicReduce;
use reduction::{FullReduction, POISON_WORD, ReduceOp};

/// The bytes of one chunk, chosen by measurement: the bench's sweep of 1 to 64 MiB chunks on 2 and
/// 3 streams over 1 GiB on an H200 (lines `chunk-2` and `chunk-3` of
/// `book/src/data/nvidia-h200/reduce-host.txt`; the first session's, which chose it, is in
/// `scripts/lab/reduce-host/`). Each chunk costs about 3 µs beyond its copy, and the overlap can
/// hide no more than the kernel's time, so the chunks are as large as keeps that cost small: 16 to
/// 64 MiB were level with one copy of the whole GiB; 32 chunks per GiB.
pub const CHUNK_BYTES: usize = 32 << 20;
/// Streams the chunks go round: one copies while another reduces.
pub const STREAMS: usize = 2;

// ANCHOR: plan
/// How a host input of `n` f32 is cut into chunks and where they land on the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelinePlan {
    pub n: usize,
    /// Elements per chunk (the last may be shorter).
    pub chunk: usize,
    pub chunks: usize,
    /// Streams the chunks go round (chunk k on stream k mod streams).
    pub streams: usize,
    /// `None`: every chunk lands in its place in one device buffer of `n` elements, which keeps
    /// the input. `Some(b)`: chunk k lands in buffer k mod b of a ring of `b` chunk buffers.
    pub ring: Option<usize>,
}

/// The plan for `n` elements in chunks of at most `chunk` elements on `streams` streams. With a
/// `budget` of device bytes for the input, the chunks go through a ring of as many chunk buffers as
/// fit in it (at most one per stream); a budget smaller than one chunk is an error. Without one,
/// they land in place.
pub fn pipeline_plan(
    n: usize,
    chunk: usize,
    streams: usize,
    budget: Option<usize>,
) -> Result<PipelinePlan> {
    if chunk == 0 || streams == 0 {
        return Err(GpuError::BadInput(format!(
            "chunks of {chunk} elements on {streams} streams: both must be at least 1"
        )));
    }
    let chunk = chunk.min(n);
    let chunks = if n == 0 { 0 } else { n.div_ceil(chunk) };
    let streams = streams.min(chunks.max(1));
    let ring = match budget {
        None => None,
        Some(bytes) => {
            let chunk_bytes = chunk * std::mem::size_of::<f32>();
            if bytes < chunk_bytes {
                return Err(GpuError::BadInput(format!(
                    "a device budget of {bytes} bytes holds no chunk of {chunk} elements \
                     ({chunk_bytes} bytes): \
                     give at least {chunk_bytes} bytes, or plan smaller chunks"
                )));
            }
            // An empty input has chunks of no bytes: any budget holds one per stream.
            Some(bytes.checked_div(chunk_bytes).map_or(streams, |fit| fit.min(streams)))
        }
    };
    // The ring's buffers bound the streams too: one buffer per stream, reused in stream order.
    let streams = ring.map_or(streams, |buffers| buffers.min(streams));
    Ok(PipelinePlan { n, chunk, chunks, streams, ring })
}

/// The course's plan: chunks of [`CHUNK_BYTES`] on [`STREAMS`] streams.
pub fn plan(n: usize, budget: Option<usize>) -> Result<PipelinePlan> {
    pipeline_plan(n, CHUNK_BYTES / std::mem::size_of::<f32>(), STREAMS, budget)
}
// ANCHOR_END: plan

impl PipelinePlan {
    /// The element range of chunk `k`.
    pub fn range(&self, k: usize) -> std::ops::Range<usize> {
        k * self.chunk..((k + 1) * self.chunk).min(self.n)
    }

    /// Device bytes the plan's input buffers take.
    pub fn device_bytes(&self) -> usize {
        let elements = match self.ring {
            None => self.n,
            Some(buffers) => buffers * self.chunk,
        };
        elements * std::mem::size_of::<f32>()
    }
}

impl fmt::Display for PipelinePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = if self.chunks == 0 { 0 } else { self.range(self.chunks - 1).len() };
        let lands = match self.ring {
            None => "in place".to_string(),
            Some(b) => format!("in a ring of {b} buffer(s)"),
        };
        write!(
            f,
            "n = {}: {} chunk(s) of {} (last {last}) on {} stream(s), {lands}: {} device bytes",
            self.n,
            self.chunks,
            self.chunk,
            self.streams,
            self.device_bytes()
        )
    }
}

/// One stream of the pipeline: its handle (a fork of the device), its reducer, its chunk buffer
/// (for a ring) and the event that marks its last chunk's sum.
struct Lane {
    stream: Device,
    reducer: DeterministicReduce<f32>,
    buffer: DeviceBuffer<f32>,
    done: Event,
}

/// Sums of host slices of f32 on the device, by every step of the chapter.
pub struct HostReduce {
    device: Device,
    /// The final launch (the chunks' sums, or the whole input), on the device's own stream.
    reducer: DeterministicReduce<f32>,
    /// The whole input, for steps 1 to 3.
    input: DeviceBuffer<f32>,
    /// One sum per chunk.
    sums: DeviceBuffer<f32>,
    lanes: Vec<Lane>,
    /// Marks the device's stream before the lanes start, so no lane writes `sums` or `input`
    /// while an earlier call's last launch may still read them.
    start: Event,
}

impl HostReduce {
    /// Loads the kernels; buffers grow on first use (a timed loop that was warmed up never
    /// allocates).
    pub fn new(device: &Device) -> Result<Self> {
        Ok(HostReduce {
            device: device.clone(),
            reducer: DeterministicReduce::new(device)?,
            input: device.alloc(0)?,
            sums: device.alloc(0)?,
            lanes: Vec::new(),
            start: device.event()?,
        })
    }

    /// The input as the last of steps 1 to 3 left it on the device (its first `n` elements).
    pub fn input(&self, n: usize) -> Result<gpu_harness::DeviceView<'_, f32>> {
        self.input.view(..n)
    }

    /// Fills the input buffer, the chunks' sums and every lane's buffer and scratch with
    /// [`POISON_WORD`] (NaN), so that a chunk never copied or a sum never written shows in the
    /// result.
    pub fn poison(&mut self) -> Result<()> {
        self.input.fill_words(POISON_WORD)?;
        self.sums.fill_words(POISON_WORD)?;
        self.reducer.poison_scratch(0)?;
        for lane in &mut self.lanes {
            lane.buffer.fill_words(POISON_WORD)?;
            lane.reducer.poison_scratch(0)?;
            lane.stream.synchronize()?;
        }
        self.device.synchronize()
    }

    fn grow_input(&mut self, n: usize) -> Result<()> {
        if self.input.len() < n {
            self.input = self.device.alloc(0)?; // free the old one first
            self.input = self.device.alloc(n)?;
        }
        Ok(())
    }

    // ANCHOR: copy_then_reduce
    /// Steps 1 and 2: one copy of the whole input, then one launch. From pageable memory the
    /// driver stages the copy through its own pinned buffer; from pinned memory
    /// ([`gpu_harness::PinnedBuffer::as_slice`]) the copy engine reads `host` directly.
    pub fn copy_then_reduce(&mut self, host: &[f32]) -> Result<f32> {
        if host.is_empty() {
            return Ok(0.0);
        }
        self.grow_input(host.len())?;
        self.device.copy_from_host(host, &mut self.input, 0)?;
        self.reducer.sum(self.input.view(..host.len())?)
    }
    // ANCHOR_END: copy_then_reduce

    /// Step 3: the plan's chunks copied into place and reduced on its streams; the input stays
    /// on the device ([`HostReduce::input`]). `plan` must be one of `host.len()` elements, without
    /// a ring.
    pub fn chunked(&mut self, host: &[f32], plan: &PipelinePlan) -> Result<f32> {
        if plan.ring.is_some() {
            return Err(GpuError::BadInput(
                "chunked takes a plan without a ring: streamed takes one".into(),
            ));
        }
        self.grow_input(host.len())?;
        self.pipeline(host, plan)
    }

    /// Step 4: the plan's chunks through a ring of chunk buffers that fits in `budget` device
    /// bytes, so the input may be bigger than the GPU's memory. (The reducers' own scratch, a few
    /// KiB, is not counted.)
    pub fn streamed(&mut self, host: &[f32], budget: usize) -> Result<f32> {
        let plan = plan(host.len(), Some(budget))?;
        self.streamed_with(host, &plan)
    }

    /// Step 4 with a plan of one's own (which must have a ring).
    pub fn streamed_with(&mut self, host: &[f32], plan: &PipelinePlan) -> Result<f32> {
        if plan.ring.is_none() {
            return Err(GpuError::BadInput(
                "streamed takes a plan with a ring: chunked takes one without".into(),
            ));
        }
        self.pipeline(host, plan)
    }

    /// Lanes for `plan`: at least its streams, each with a reducer ready for a chunk and, for a
    /// ring, a chunk buffer.
    fn prepare(&mut self, plan: &PipelinePlan) -> Result<()> {
        let buffer = if plan.ring.is_some() { plan.chunk } else { 0 };
        while self.lanes.len() < plan.streams {
            let stream = self.device.fork()?;
            let lane = Lane {
                reducer: DeterministicReduce::new(&stream)?,
                buffer: stream.alloc(0)?,
                done: stream.event()?,
                stream,
            };
            self.lanes.push(lane);
        }
        for lane in &mut self.lanes[..plan.streams] {
            lane.reducer.reserve(plan.chunk)?;
            if lane.buffer.len() < buffer {
                lane.buffer = lane.stream.alloc(0)?;
                lane.buffer = lane.stream.alloc(buffer)?;
            }
        }
        if self.sums.len() < plan.chunks {
            self.sums = self.device.alloc(plan.chunks)?;
        }
        self.reducer.reserve(plan.chunks)?;
        // The lanes' buffers were made on their streams: the device's stream must see them made.
        for lane in &self.lanes[..plan.streams] {
            lane.stream.synchronize()?;
        }
        Ok(())
    }

    // ANCHOR: pipeline
    fn pipeline(&mut self, host: &[f32], plan: &PipelinePlan) -> Result<f32> {
        if plan.n != host.len() {
            return Err(GpuError::BadInput(format!(
                "a plan of {} elements for an input of {}",
                plan.n,
                host.len()
            )));
        }
        if host.is_empty() {
            return Ok(0.0);
        }
        self.prepare(plan)?;
        let lanes = &mut self.lanes[..plan.streams];
        // No lane overwrites the input or the sums before an earlier call's last launch is done.
        self.device.record(&self.start)?;
        for lane in lanes.iter() {
            lane.stream.wait_for(&self.start)?;
        }
        for k in 0..plan.chunks {
            let lane = &mut lanes[k % plan.streams];
            let range = plan.range(k);
            let chunk = match plan.ring {
                // In place: the chunk's own range of the input buffer.
                None => {
                    lane.stream.copy_from_host(
                        &host[range.clone()],
                        &mut self.input,
                        range.start,
                    )?;
                    self.input.view(range)?
                }
                // A ring: this lane's buffer, free once its previous chunk's launch is done, which
                // the lane's stream orders before this copy.
                Some(_) => {
                    lane.stream.copy_from_host(&host[range.clone()], &mut lane.buffer, 0)?;
                    lane.buffer.view(..range.len())?
                }
            };
            lane.reducer.queue(ReduceOp::Sum, chunk)?;
            lane.stream.copy_into(lane.reducer.result().as_view(), &mut self.sums, k)?;
        }
        // The last launch waits for every lane's last chunk sum.
        for lane in lanes.iter() {
            lane.stream.record(&lane.done)?;
            self.device.wait_for(&lane.done)?;
        }
        self.reducer.sum(self.sums.view(..plan.chunks)?)
    }
    // ANCHOR_END: pipeline

    /// The longest chain of additions an input goes through in the pipeline of `plan` (each
    /// chunk's launch, then the launch over the chunks' sums), which bounds the sum's rounding
    /// error ([`reduction::reference::sum_bound`]).
    pub fn pipeline_chain(&self, plan: &PipelinePlan) -> u64 {
        self.reducer.addition_chain(plan.chunk) + self.reducer.addition_chain(plan.chunks)
    }

    /// The longest addition chain of [`HostReduce::copy_then_reduce`] over `n` elements.
    pub fn whole_chain(&self, n: usize) -> u64 {
        self.reducer.addition_chain(n)
    }
}

// ANCHOR: cpu
/// Independent accumulators per thread: the additions into different ones do not wait for each
/// other, and the compiler turns the loop into vector additions.
pub const CPU_LANES: usize = 16;
/// No thread gets fewer elements than this (starting a thread costs more than summing fewer).
pub const CPU_MIN_PER_THREAD: usize = 1 << 16;

/// The sum on the host's cores: `threads` threads (fewer for small inputs) each sum a contiguous
/// part into [`CPU_LANES`] accumulators, then the parts are added in order.
pub fn cpu_sum(values: &[f32], threads: usize) -> f32 {
    let threads = cpu_threads(values.len(), threads);
    if threads <= 1 {
        return lanes_sum(values);
    }
    let part = values.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let parts: Vec<_> =
            values.chunks(part).map(|p| scope.spawn(move || lanes_sum(p))).collect();
        parts.into_iter().fold(0.0, |sum, part| {
            sum + part.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    })
}

/// One thread's sum: element i into accumulator i mod [`CPU_LANES`], then a tree over them.
fn lanes_sum(values: &[f32]) -> f32 {
    let mut acc = [0.0f32; CPU_LANES];
    let mut rows = values.chunks_exact(CPU_LANES);
    for row in &mut rows {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += v;
        }
    }
    for (a, &v) in acc.iter_mut().zip(rows.remainder()) {
        *a += v;
    }
    let mut width = CPU_LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0]
}
// ANCHOR_END: cpu

/// The threads [`cpu_sum`] uses for `n` elements when offered `threads`.
pub fn cpu_threads(n: usize, threads: usize) -> usize {
    threads.clamp(1, n.div_ceil(CPU_MIN_PER_THREAD).max(1))
}

/// The longest addition chain of [`cpu_sum`] over `n` elements on `threads` threads.
pub fn cpu_chain(n: usize, threads: usize) -> u64 {
    let threads = cpu_threads(n, threads);
    let part = n.div_ceil(threads);
    (part.div_ceil(CPU_LANES) + CPU_LANES.ilog2() as usize + threads) as u64
}
