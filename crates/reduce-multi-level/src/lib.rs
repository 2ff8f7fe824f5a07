//! # reduce-multi-level: the whole reduction on the device, pass after pass
//!
//! The first five steps leave one partial per block for the host. This crate launches the block
//! reduction again on the partials until one value remains, all on the device; the host reads only
//! the final value. Every pass is reduce-shuffle's final kernel shape (16-byte grid-stride loads,
//! shuffle block reduction), from `cuda/reduce_multi_level.cu`.
//!
//! - [`MultiLevel`]: sum, min, max and mean over f32, i32 and u32, and the dot product of two f32
//!   vectors (see `reduction::full` for the exact semantics: wrapping integer sums, NaN-wins min
//!   and max, 64-bit sums for integer means). Any size up to the device's memory: indices are
//!   64-bit.
//! - [`operators::Reduce`]: the same passes with any of eleven operators (sum, product, min, max,
//!   argmin, argmax, all, any, bitwise and/or/xor) over the types where each means something, and
//!   [`operators::UserReduce`], with a user's operator written in CUDA C++ and compiled by NVRTC
//!   into the same kernel templates (`cuda/operators.cuh`, `cuda/reduce_operators.cu`). The
//!   operators themselves (their types, CPU reference and tests) are `reduction::operators`'; the
//!   one-launch form of the same operators is reduce-atomic's `operators::Reduce`.
//! - [`RowSums`]: a row-major `(rows, cols)` matrix reduced to one sum per row. Many short rows get
//!   one block per row; few long rows are cut into chunks, reduced, and the chunk sums reduced
//!   again.
//!
//! Scratch buffers follow the plan of the largest input seen (see [`plan`]), so a timed loop that
//! was warmed up never allocates.

pub mod operators;

use std::collections::HashMap;
use std::sync::Arc;

use gpu_harness::inputs::Input;
use gpu_harness::{
    Case, Checked, Device, DeviceBuffer, DeviceView, Element, GpuError, GpuShape, Kernel,
    KernelSource, LaunchConfig, Prepared, Result, StepEntry, kernel_source,
};
use reduction::measured;
use reduction::reference::sum_mismatch;
use reduction::{
    DeviceFinish, FullReduction, POISON_WORD, PassPlan, ReduceElement, ReduceOp, ReductionPlan,
    grid_stride_blocks, passes_chain,
};

/// Threads per block in every pass.
pub const BLOCK_SIZE: u32 = 256;
/// Inputs up to this many elements are reduced by a single block (16 float4 per thread).
pub const SINGLE_BLOCK_LIMIT: usize = 16 * 4 * BLOCK_SIZE as usize;

const SOURCE: KernelSource = kernel_source!("reduce_multi_level.cu");

// ANCHOR: plan
/// The passes that reduce `n` values to one: while more than one value is left, a pass of the block
/// reduction, with a grid that fills the GPU once (four elements per thread at least), or a single
/// block once few enough remain. `first` and `later` name the kernels, for display.
pub fn plan(first: &'static str, later: &'static str, n: usize, gpu: GpuShape) -> ReductionPlan {
    let mut passes = Vec::new();
    // ANCHOR: solution push passes while more than one value is left (a single value still takes one pass): one block once at most SINGLE_BLOCK_LIMIT remain, else a grid that fills the GPU with at least four elements per thread (grid_stride_blocks); the first pass runs `first`, later ones `later`, and each pass's outputs are the next one's inputs
    let mut count = n;
    while count > 1 || (count == 1 && passes.is_empty()) {
        let blocks = if count <= SINGLE_BLOCK_LIMIT {
            1
        } else {
            grid_stride_blocks(count, BLOCK_SIZE, 4, gpu)
        };
        let kernel = if passes.is_empty() { first } else { later };
        let config = LaunchConfig::linear(blocks, BLOCK_SIZE, 0);
        passes.push(PassPlan { kernel, config, inputs: count as u64, outputs: u64::from(blocks) });
        count = blocks as usize;
    }
    // ANCHOR_END: solution
    ReductionPlan {
        n: n as u64,
        passes,
        host_adds: 0,
        on_device: true,
        finish: DeviceFinish::Partials,
    }
}
// ANCHOR_END: plan

/// Scratch elements a plan needs: the outputs of every pass but the last (which writes the result).
fn scratch_needed(plan: &ReductionPlan) -> usize {
    let before_last = plan.passes.len().saturating_sub(1);
    plan.passes[..before_last].iter().map(|p| p.outputs as usize).max().unwrap_or(0)
}

// ANCHOR: passes
/// Queues the passes of `plan`. `first_pass` launches pass 1 (reading the input) into the buffer
/// it is given; every later pass reduces the previous pass's output with `later`, alternating
/// between the two scratch buffers; the last pass writes `result`.
fn queue_passes<V: Element>(
    device: &Device,
    plan: &ReductionPlan,
    first_pass: impl FnOnce(&mut DeviceBuffer<V>, &PassPlan) -> Result<()>,
    later: &Kernel,
    scratch: &mut [DeviceBuffer<V>; 2],
    result: &mut DeviceBuffer<V>,
) -> Result<()> {
    let [even, odd] = scratch;
    let mut first_pass = Some(first_pass);
    for (i, pass) in plan.passes.iter().enumerate() {
        let (previous, this) = if i % 2 == 0 { (&*odd, &mut *even) } else { (&*even, &mut *odd) };
        let output = if i + 1 == plan.passes.len() { &mut *result } else { this };
        match first_pass.take() {
            Some(launch_first) => launch_first(output, pass)?,
            None => device
                .launch(later, pass.config)
                .arg(previous.view(..pass.inputs as usize)?)
                .arg(output)
                .arg(pass.inputs)
                .run()?,
        }
    }
    Ok(())
}
// ANCHOR_END: passes

/// Full reductions of `T` on the device, by repeated passes.
pub struct MultiLevel<T: ReduceElement> {
    device: Device,
    kernels: HashMap<ReduceOp, Kernel>,
    wide_first: Kernel,
    wide_later: Kernel,
    dot: Kernel,
    scratch: [DeviceBuffer<T>; 2],
    wide_scratch: [DeviceBuffer<T::Wide>; 2],
    result: DeviceBuffer<T>,
    wide_result: DeviceBuffer<T::Wide>,
}

/// The kernel of an operation and type suffix, e.g. `multi_level_sum_f32`.
fn kernel_name(op_and_type: &str) -> String {
    format!("multi_level_{op_and_type}")
}

impl<T: ReduceElement> MultiLevel<T> {
    /// Loads the kernels for `T` (compiled once per process).
    pub fn new(device: &Device) -> Result<Self> {
        let mut kernels = HashMap::new();
        for op in ReduceOp::ALL {
            let name = kernel_name(&format!("{}_{}", op.name(), T::SUFFIX));
            kernels.insert(op, device.kernel(&SOURCE, &name)?);
        }
        Ok(MultiLevel {
            device: device.clone(),
            kernels,
            wide_first: device.kernel(&SOURCE, &kernel_name(T::WIDE_SUM))?,
            wide_later: device.kernel(&SOURCE, &kernel_name(T::WIDE_LATER))?,
            dot: device.kernel(&SOURCE, "multi_level_dot_f32")?,
            scratch: [device.alloc(0)?, device.alloc(0)?],
            wide_scratch: [device.alloc(0)?, device.alloc(0)?],
            result: device.alloc(1)?,
            wide_result: device.alloc(1)?,
        })
    }

    /// The plan for `n` elements on this device.
    pub fn plan(&self, n: usize) -> ReductionPlan {
        plan("multi_level_<op>", "multi_level_<op>", n, self.device.facts().shape())
    }

    /// Grows the scratch buffers to what `n` elements need (never inside a warmed-up loop).
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let needed = scratch_needed(&self.plan(n));
        if self.scratch[0].len() < needed {
            self.scratch = [self.device.alloc(needed)?, self.device.alloc(needed)?];
            self.wide_scratch = [self.device.alloc(needed)?, self.device.alloc(needed)?];
        }
        Ok(())
    }

    /// Fills every scratch and result buffer with [`POISON_WORD`].
    fn poison_buffers(&mut self) -> Result<()> {
        for buffer in &mut self.scratch {
            buffer.fill_words(POISON_WORD)?;
        }
        for buffer in &mut self.wide_scratch {
            buffer.fill_words(POISON_WORD)?;
        }
        self.result.fill_words(POISON_WORD)?;
        self.wide_result.fill_words(POISON_WORD)
    }
}

impl MultiLevel<f32> {
    /// The dot product `sum(a[i] * b[i])`: a first pass of products, then sum passes.
    pub fn dot(&mut self, a: DeviceView<'_, f32>, b: DeviceView<'_, f32>) -> Result<f32> {
        if a.len() != b.len() {
            return Err(GpuError::BadInput(format!(
                "dot product of lengths {} and {}",
                a.len(),
                b.len()
            )));
        }
        if a.is_empty() {
            return Ok(0.0);
        }
        let plan = self.plan(a.len());
        self.reserve(a.len())?;
        let (dot, device) = (&self.dot, &self.device);
        let first_pass = |output: &mut DeviceBuffer<f32>, pass: &PassPlan| {
            device.launch(dot, pass.config).arg(a).arg(b).arg(output).arg(pass.inputs).run()
        };
        let sum = &self.kernels[&ReduceOp::Sum];
        queue_passes(device, &plan, first_pass, sum, &mut self.scratch, &mut self.result)?;
        Ok(self.result.to_host()?[0])
    }
}

impl<T: ReduceElement> FullReduction<T> for MultiLevel<T> {
    fn create(device: &Device) -> Result<Self> {
        Self::new(device)
    }

    fn reserve(&mut self, n: usize) -> Result<()> {
        MultiLevel::reserve(self, n)
    }

    fn poison_scratch(&mut self, n: usize) -> Result<()> {
        self.reserve(n)?;
        self.poison_buffers()
    }

    fn queue(&mut self, op: ReduceOp, input: DeviceView<'_, T>) -> Result<()> {
        let plan = self.plan(input.len());
        self.reserve(input.len())?;
        let kernel = &self.kernels[&op];
        let device = &self.device;
        let first_pass = |output: &mut DeviceBuffer<T>, pass: &PassPlan| {
            device.launch(kernel, pass.config).arg(input).arg(output).arg(pass.inputs).run()
        };
        queue_passes(device, &plan, first_pass, kernel, &mut self.scratch, &mut self.result)
    }

    fn queue_wide_sum(&mut self, input: DeviceView<'_, T>) -> Result<()> {
        let plan = self.plan(input.len());
        self.reserve(input.len())?;
        let (first, device) = (&self.wide_first, &self.device);
        let first_pass = |output: &mut DeviceBuffer<T::Wide>, pass: &PassPlan| {
            device.launch(first, pass.config).arg(input).arg(output).arg(pass.inputs).run()
        };
        queue_passes(
            device,
            &plan,
            first_pass,
            &self.wide_later,
            &mut self.wide_scratch,
            &mut self.wide_result,
        )
    }

    fn result(&self) -> &DeviceBuffer<T> {
        &self.result
    }

    fn wide_result(&self) -> &DeviceBuffer<T::Wide> {
        &self.wide_result
    }
    fn addition_chain(&self, n: usize) -> u64 {
        self.plan(n).longest_addition_chain()
    }
}

// ANCHOR: rows_plan
/// Rows of at most this many columns get one warp each (8 rows per block).
pub const SHORT_ROW_COLUMNS: usize = 2048;
/// Longer rows are never cut into chunks shorter than this.
pub const MIN_CHUNK_COLUMNS: usize = 8192;

/// How a `(rows, cols)` matrix is summed row by row.
/// - Short rows (`cols <= SHORT_ROW_COLUMNS`): one warp per row, one pass.
/// - Longer rows, enough to fill the GPU: one block per row (`chunks = 1`), one pass.
/// - Fewer, longer rows: each row cut into as many chunks as fill the GPU (none shorter than
///   [`MIN_CHUNK_COLUMNS`]), one block per chunk, then a second pass sums each row's chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsPlan {
    pub rows: usize,
    pub cols: usize,
    pub chunks: usize,
    pub passes: Vec<PassPlan>,
}

pub fn rows_plan(rows: usize, cols: usize, gpu: GpuShape) -> Result<RowsPlan> {
    let warps_per_block = (BLOCK_SIZE / 32) as usize;
    let resident = gpu.resident_blocks(BLOCK_SIZE) as usize;
    let short = cols <= SHORT_ROW_COLUMNS;
    let chunks = if short || rows >= resident {
        1
    } else {
        resident.div_ceil(rows.max(1)).min(cols.div_ceil(MIN_CHUNK_COLUMNS)).max(1)
    };
    let first_blocks =
        if short { rows.div_ceil(warps_per_block) } else { rows.saturating_mul(chunks) };
    if first_blocks > i32::MAX as usize {
        return Err(GpuError::BadInput(format!(
            "a {rows} x {cols} matrix needs {first_blocks} blocks, more than one launch holds \
             (2^31 - 1)"
        )));
    }
    let pass = |kernel, blocks: usize, inputs: usize| PassPlan {
        kernel,
        config: LaunchConfig::linear(blocks as u32, BLOCK_SIZE, 0),
        inputs: inputs as u64,
        outputs: if short { rows as u64 } else { blocks as u64 },
    };
    let mut passes = Vec::new();
    if rows > 0 && cols > 0 {
        let first_kernel = if short { "reduce_short_rows_sum_f32" } else { "reduce_rows_sum_f32" };
        passes.push(pass(first_kernel, first_blocks, rows * cols));
        if chunks > 1 {
            passes.push(pass("reduce_rows_sum_f32", rows, first_blocks));
        }
    }
    Ok(RowsPlan { rows, cols, chunks, passes })
}
// ANCHOR_END: rows_plan

impl std::fmt::Display for RowsPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} x {}: {} chunk(s) per row", self.rows, self.cols, self.chunks)?;
        for (i, p) in self.passes.iter().enumerate() {
            let (blocks, threads) = (p.config.grid.0, p.config.block.0);
            writeln!(
                f,
                "  pass {}: {} {blocks} blocks of {threads}: {} -> {}",
                i + 1,
                p.kernel,
                p.inputs,
                p.outputs
            )?;
        }
        Ok(())
    }
}

/// Sums of the rows of a row-major f32 matrix, on the device.
pub struct RowSums {
    device: Device,
    kernel: Kernel,
    short_rows: Kernel,
    chunk_sums: DeviceBuffer<f32>,
    sums: DeviceBuffer<f32>,
}

impl RowSums {
    pub fn new(device: &Device) -> Result<Self> {
        Ok(RowSums {
            device: device.clone(),
            kernel: device.kernel(&SOURCE, "reduce_rows_sum_f32")?,
            short_rows: device.kernel(&SOURCE, "reduce_short_rows_sum_f32")?,
            chunk_sums: device.alloc(0)?,
            sums: device.alloc(0)?,
        })
    }

    /// The plan for a `(rows, cols)` matrix on this device.
    pub fn plan(&self, rows: usize, cols: usize) -> Result<RowsPlan> {
        rows_plan(rows, cols, self.device.facts().shape())
    }

    /// Queues the row sums of `input` (row-major, `rows * cols` elements); they land in
    /// [`Self::sums`]. Does not wait for the GPU.
    pub fn queue(&mut self, input: DeviceView<'_, f32>, rows: usize, cols: usize) -> Result<()> {
        if rows.checked_mul(cols) != Some(input.len()) {
            return Err(GpuError::BadInput(format!(
                "a {rows} x {cols} matrix needs {rows} * {cols} elements, got {}",
                input.len()
            )));
        }
        let plan = self.plan(rows, cols)?;
        if self.sums.len() < rows {
            self.sums = self.device.alloc(rows)?;
        }
        if plan.chunks > 1 && self.chunk_sums.len() < rows * plan.chunks {
            self.chunk_sums = self.device.alloc(rows * plan.chunks)?;
        }
        if plan.passes.is_empty() {
            // No columns: every row sums to 0 (and no rows: nothing to do).
            return self.sums.fill_words(0);
        }
        let (rows64, cols64, chunks64) = (rows as u64, cols as u64, plan.chunks as u64);
        if plan.passes[0].kernel == "reduce_short_rows_sum_f32" {
            let config = plan.passes[0].config;
            return self
                .device
                .launch(&self.short_rows, config)
                .arg(input)
                .arg(&mut self.sums)
                .arg(rows64)
                .arg(cols64)
                .run();
        }
        let first = self.device.launch(&self.kernel, plan.passes[0].config).arg(input);
        if plan.chunks == 1 {
            first.arg(&mut self.sums).arg(rows64).arg(cols64).arg(1u64).run()
        } else {
            first.arg(&mut self.chunk_sums).arg(rows64).arg(cols64).arg(chunks64).run()?;
            self.device
                .launch(&self.kernel, plan.passes[1].config)
                .arg(self.chunk_sums.view(..rows * plan.chunks)?)
                .arg(&mut self.sums)
                .arg(rows64)
                .arg(chunks64)
                .arg(1u64)
                .run()
        }
    }

    /// The row sums of the last [`Self::queue`].
    pub fn sums(&self, rows: usize) -> Result<DeviceView<'_, f32>> {
        self.sums.view(..rows)
    }

    /// One sum per row of a row-major `(rows, cols)` matrix.
    pub fn sum_rows(
        &mut self,
        input: DeviceView<'_, f32>,
        rows: usize,
        cols: usize,
    ) -> Result<Vec<f32>> {
        self.queue(input, rows, cols)?;
        self.sums(rows)?.to_host()
    }

    /// Fills the scratch and output buffers with [`POISON_WORD`] (NaN).
    pub fn poison(&mut self, rows: usize, cols: usize) -> Result<()> {
        let plan = self.plan(rows, cols)?;
        if self.sums.len() < rows {
            self.sums = self.device.alloc(rows)?;
        }
        if self.chunk_sums.len() < rows * plan.chunks {
            self.chunk_sums = self.device.alloc(rows * plan.chunks)?;
        }
        self.sums.fill_words(POISON_WORD)?;
        self.chunk_sums.fill_words(POISON_WORD)
    }
}

/// Batched row sums of a random input seen as the case's `rows x cols` matrix: what is timed is
/// every launch, the sums left on the device.
struct RowSumsCase {
    row_sums: RowSums,
    input: Arc<Input<f32>>,
    rows: usize,
    cols: usize,
}

fn prepare_row_sums(device: &Device, case: &Case, seed: u64) -> Result<RowSumsCase> {
    let input = measured::random_floats(device, case, seed)?;
    let (rows, cols) = (case.rows() as usize, case.cols() as usize);
    Ok(RowSumsCase { row_sums: RowSums::new(device)?, input, rows, cols })
}

impl Prepared for RowSumsCase {
    fn queue(&mut self) -> Result<()> {
        self.row_sums.queue(self.input.device.as_view(), self.rows, self.cols)
    }

    fn check(&mut self) -> Result<Checked> {
        let sums = self.row_sums.sum_rows(self.input.device.as_view(), self.rows, self.cols)?;
        let chain = passes_chain(&self.row_sums.plan(self.rows, self.cols)?.passes);
        for (row, (&got, values)) in sums.iter().zip(self.input.host.chunks(self.cols)).enumerate()
        {
            if let Some(why) = sum_mismatch(values, got, chain) {
                return Ok(self
                    .input
                    .outcome("row sums", Some(format!("row {row} of {}: {why}", self.rows))));
            }
        }
        Ok(Checked::Correct)
    }
}

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes): the multi-level sum, and the row sums in two shapes.
pub fn steps() -> Vec<StepEntry> {
    let crate_name = env!("CARGO_PKG_NAME");
    vec![
        measured::on_device::<MultiLevel<f32>>(crate_name, "multi-level"),
        StepEntry::new(crate_name, "rows-2^20x256", prepare_row_sums),
        StepEntry::new(crate_name, "rows-16x2^24", prepare_row_sums),
    ]
}
