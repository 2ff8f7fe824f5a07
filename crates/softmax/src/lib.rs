//! # softmax: reductions at work, along the rows
//!
//! The softmax of every row of a row-major `rows x cols` matrix, as `torch.softmax(x, dim=-1)`
//! computes it, on the GPU, in the steps of the chapter (kernels in `cuda/softmax.cu`):
//!
//! | [`Step`] | kernels | what changes |
//! |---|---|---|
//! | [`Step::ThreePass`] | `softmax_max`, `softmax_sum`, `softmax_normalise` | three kernels |
//! | [`Step::Fused`] | `softmax_fused` | the three passes in one kernel, a block per row |
//! | [`Step::Online`] | `softmax_online` | the max and the sum in one sweep |
//! | [`Step::WarpRows`] | `softmax_warp_rows` | a warp per row, 16-byte loads: short rows |
//! | [`Step::SplitRows`] | `softmax_split_partial`, `softmax_split_normalise` | blocks per row |
//! | [`Step::OnChip`] | `softmax_on_chip_<group>x<values>` | the row read once, in registers |
//! | [`Step::ClusterRows`] | `softmax_cluster_<blocks>x<threads>x32` | long rows on a cluster |
//!
//! Two element types ([`Value`]): `f32`, and bfloat16 held as its 16-bit words in `u16` (read and
//! written as bf16, computed in f32; [`bf16_to_f32`] and [`f32_to_bf16`] convert on the host).
//! Every step takes both, through the same kernel template (`softmax_<step>` and
//! `softmax_<step>_bf16`).
//!
//! What a row with special values gives is torch's: a NaN anywhere makes the row NaN; -inf entries
//! (masked logits) give 0; a row of only -inf, or holding +inf, is NaN everywhere; logits of 1e4
//! do not overflow (the row's max is subtracted before exp).
//!
//! ```no_run
//! # use gpu_harness::Device;
//! # use softmax::{Softmax, Step};
//! # fn run(device: &Device) -> gpu_harness::Result<()> {
//! let logits = device.upload(&[1.0f32, 2.0, 3.0, 0.0, 0.0, f32::NEG_INFINITY])?; // 2 x 3
//! let mut probabilities = device.alloc::<f32>(6)?;
//! let mut softmax = Softmax::new(device, Step::WarpRows)?;
//! softmax.softmax(logits.as_view(), 2, 3, &mut probabilities)?;
//! let p = probabilities.to_host()?; // [0.090, 0.245, 0.665, 0.5, 0.5, 0.0]
//! # Ok(())
//! # }
//! ```
//!
//! Any shape with each side below 2^31 works; an empty matrix launches nothing; lengths that do
//! not match the shape, or shapes past what the kernels' 32-bit indices and the grid hold, are a
//! [`GpuError::BadInput`] that says why, before a launch.

pub mod measured;

use std::fmt;

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, GpuError, GpuShape, Kernel, KernelSource, LaunchConfig,
    Result,
};

pub use gpu_harness::bf16::{Value, bf16_to_f32, f32_to_bf16};
pub use measured::steps;

const SOURCE: KernelSource = gpu_harness::kernel_source!("softmax.cu");

/// Threads per block of every kernel (`THREADS` in `cuda/softmax.cu`).
pub const THREADS: u32 = 256;

/// Rows and columns are each at most this: the kernels index a row's elements with 32-bit
/// integers (offsets of rows are 64-bit, so the matrix may hold more than 2^32 elements).
pub const MAX_SIDE: usize = i32::MAX as usize;

/// The most blocks of a one-dimensional grid.
pub const MAX_BLOCKS: usize = i32::MAX as usize;

// ANCHOR: step
gpu_harness::steps! {
    /// A step of the softmax ladder.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Step {
        /// Step 1: three kernels (max, sum of exponentials, normalise), a block per row each.
        ThreePass => "three-pass",
        /// Step 2: the three passes in one kernel, a block per row.
        Fused => "fused",
        /// Step 3: online softmax, the max and the sum in one sweep, then the write.
        Online => "online",
        /// Step 4: a warp per row, 16-byte loads.
        WarpRows => "warp-rows",
        /// Step 5: several blocks per row, and a second kernel that merges and writes.
        SplitRows => "split-rows",
        /// Step 6: the row read once and held in registers, by a warp or a block sized to it
        /// ([`on_chip_group`]); longer rows go through [`Step::SplitRows`]'s kernels.
        OnChip => "on-chip",
        /// Step 7: rows longer than a block holds (at 32 f32 or 64 bf16 elements a thread), held in
        /// the registers of a thread block cluster ([`cluster_shape`]), the blocks exchanging their
        /// max and sum through
        /// distributed shared memory; shorter rows as [`Step::OnChip`], longer ones through
        /// [`Step::SplitRows`]'s kernels. Clusters need compute capability 9.0: on an older GPU the
        /// step runs as [`Step::OnChip`].
        ClusterRows => "cluster-rows",
    }
}

impl Step {
    /// Its kernels in `cuda/softmax.cu` for f32 rows, or for bf16 rows (whose names then end in
    /// `_bf16`), in launch order; the on-chip step launches the one of its nine for the row's
    /// group, or split rows' two for rows too long for it; the cluster step one of its three for
    /// long rows (bf16's hold 64 elements a thread where f32's hold 32), or the on-chip step's.
    pub const fn kernels(self, bf16: bool) -> &'static [&'static str] {
        match self {
            Step::ThreePass => &["softmax_max", "softmax_sum", "softmax_normalise"],
            Step::Fused => &["softmax_fused"],
            Step::Online => &["softmax_online"],
            Step::WarpRows => &["softmax_warp_rows"],
            Step::SplitRows => SPLIT_KERNELS,
            Step::OnChip => ON_CHIP_KERNELS,
            Step::ClusterRows if bf16 => CLUSTER_KERNELS_BF16,
            Step::ClusterRows => CLUSTER_KERNELS_F32,
        }
    }

    /// The launches that take the softmax of a `rows x cols` matrix of `T` (f32, or bf16 as `u16`)
    /// on a GPU of `gpu`'s shape (with thread block clusters: compute capability 9.0 and later).
    pub fn plan<T: Value>(self, rows: usize, cols: usize, gpu: GpuShape) -> Result<SoftmaxPlan> {
        self.plan_for::<T>(rows, cols, gpu, true)
    }

    /// [`Step::plan`], on a GPU with or without clusters: without, the cluster step is the on-chip
    /// step.
    pub fn plan_for<T: Value>(
        self,
        rows: usize,
        cols: usize,
        gpu: GpuShape,
        clusters: bool,
    ) -> Result<SoftmaxPlan> {
        check_shape(rows, cols)?;
        let mut kernels = self.kernels(T::BF16);
        let mut threads = THREADS;
        let (mut group, mut cluster) = (0, 0);
        // The one kernel named `name`, among the step's.
        let only = |name: String| {
            let at = kernels.iter().position(|k| *k == name).expect("a shape with a kernel");
            std::slice::from_ref(&kernels[at])
        };
        let long_row =
            if self == Step::ClusterRows && clusters { cluster_shape(cols, T::BF16) } else { None };
        let on_chip = if matches!(self, Step::OnChip | Step::ClusterRows) {
            on_chip_group(cols)
        } else {
            None
        };
        let (grid, parts, chunk, scratch) = match (self, long_row, on_chip) {
            (Step::ThreePass, _, _) => (rows, 1, cols, 2 * rows),
            (Step::Fused | Step::Online, _, _) => (rows, 1, cols, 0),
            (Step::WarpRows, _, _) => (rows.div_ceil((THREADS / 32) as usize), 1, cols, 0),
            (_, Some(shape), _) => {
                kernels = only(shape.kernel());
                (threads, cluster) = (shape.threads, shape.blocks);
                (rows.saturating_mul(shape.blocks as usize), 1, cols, 0)
            }
            (_, None, Some(on_chip)) => {
                kernels = only(on_chip.kernel());
                (threads, group) = (on_chip.group.max(THREADS), on_chip.group);
                (rows.div_ceil((threads / group) as usize), 1, cols, 0)
            }
            (_, None, None) => {
                kernels = SPLIT_KERNELS;
                let (parts, chunk) = split(rows, cols, gpu);
                (rows * parts, parts, chunk, 2 * rows * parts)
            }
        };
        if grid > MAX_BLOCKS {
            return Err(GpuError::BadInput(format!(
                "{}: a {rows} x {cols} matrix needs {grid} blocks, more than a grid's \
                 {MAX_BLOCKS}; \
                 take the softmax of fewer rows at a time",
                self.name()
            )));
        }
        let config = LaunchConfig::linear(grid as u32, threads, 0);
        let (parts, chunk) = (parts as u32, chunk as u32);
        Ok(SoftmaxPlan { kernels, config, parts, chunk, scratch_floats: scratch, group, cluster })
    }
}
// ANCHOR_END: step

/// The split step's kernels (also the on-chip and cluster steps', for rows too long for them).
const SPLIT_KERNELS: &[&str] = &["softmax_split_partial", "softmax_split_normalise"];

/// The kernels of the on-chip and cluster steps, in an order where each step's list is a run of
/// it: the cluster step's three for f32 rows, the on-chip step's (its nine shapes and split rows'
/// two, the same for both types), the cluster step's three for bf16 rows (64 elements a thread
/// where f32's hold 32: two bf16 in the register of one f32).
const ROW_KERNELS: &[&str] = &[
    "softmax_cluster_4x256x32",
    "softmax_cluster_8x256x32",
    "softmax_cluster_8x512x32",
    "softmax_on_chip_16x8",
    "softmax_on_chip_16x16",
    "softmax_on_chip_16x32",
    "softmax_on_chip_32x32",
    "softmax_on_chip_64x32",
    "softmax_on_chip_128x32",
    "softmax_on_chip_256x32",
    "softmax_on_chip_512x32",
    "softmax_on_chip_512x64",
    "softmax_split_partial",
    "softmax_split_normalise",
    "softmax_cluster_4x256x64",
    "softmax_cluster_8x256x64",
    "softmax_cluster_8x512x64",
];

/// How many of [`ROW_KERNELS`] are the cluster step's own for one element type, and how many the
/// on-chip step's.
const CLUSTER_KERNEL_COUNT: usize = 3;
const ON_CHIP_KERNEL_COUNT: usize = 11;

/// The on-chip step's kernels; the cluster step's with them, for f32 rows (theirs first) and for
/// bf16 rows (theirs last).
const ON_CHIP_KERNELS: &[&str] =
    ROW_KERNELS.split_at(CLUSTER_KERNEL_COUNT).1.split_at(ON_CHIP_KERNEL_COUNT).0;
const CLUSTER_KERNELS_F32: &[&str] =
    ROW_KERNELS.split_at(CLUSTER_KERNEL_COUNT + ON_CHIP_KERNEL_COUNT).0;
const CLUSTER_KERNELS_BF16: &[&str] = ROW_KERNELS.split_at(CLUSTER_KERNEL_COUNT).1;

// ANCHOR: on_chip_group
/// How the on-chip step holds a row: `group` threads (a power of two from 16 to 512) with
/// `values` elements each (8 to 64): the kernel `softmax_on_chip_<group>x<values>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnChipGroup {
    pub group: u32,
    pub values: u32,
}

impl OnChipGroup {
    /// The f32 kernel of this shape (the bf16 one ends in `_bf16`).
    pub fn kernel(self) -> String {
        format!("softmax_on_chip_{}x{}", self.group, self.values)
    }
}

/// The elements a thread of the on-chip step holds where the row allows: 32, which leaves a
/// block's 16 warps (512 threads) or its groups enough registers to keep many rows in flight.
pub const ON_CHIP_VALUES: usize = 32;

/// The most threads per row (blocks of 512 give each thread 128 registers: room for 64 elements)
/// and the fewest (half a warp: 2 rows a warp, twice the bytes in flight of a warp per row on
/// rows of 512 bf16).
pub const ON_CHIP_MAX_GROUP: usize = 512;
pub const ON_CHIP_MIN_GROUP: usize = 16;

/// The on-chip step's group for rows of `cols` elements: as many threads as hold the row at
/// [`ON_CHIP_VALUES`] elements each, a power of two from [`ON_CHIP_MIN_GROUP`] to
/// [`ON_CHIP_MAX_GROUP`]; each thread with as many elements as the row then needs (a power of
/// two from 8 to 64). `None` for an empty row or one longer than 512 x 64 (32,768 elements): the
/// step then runs split rows. (scripts/lab/softmax/group-shape.cu measured the shapes this picks
/// beside others; book/src/data/nvidia-h100-80gb-hbm3/softmax-tuning.txt.)
pub fn on_chip_group(cols: usize) -> Option<OnChipGroup> {
    if cols == 0 || cols > ON_CHIP_MAX_GROUP * 64 {
        return None;
    }
    let group = cols
        .div_ceil(ON_CHIP_VALUES)
        .next_power_of_two()
        .clamp(ON_CHIP_MIN_GROUP, ON_CHIP_MAX_GROUP);
    let values = cols.div_ceil(group).next_power_of_two().max(8);
    Some(OnChipGroup { group: group as u32, values: values as u32 })
}
// ANCHOR_END: on_chip_group

// ANCHOR: cluster_shape
/// How the cluster step holds a long row: a cluster of `blocks` blocks of `threads` threads with
/// `values` elements each, the kernel `softmax_cluster_<blocks>x<threads>x<values>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterShape {
    pub blocks: u32,
    pub threads: u32,
    pub values: u32,
}

impl ClusterShape {
    /// The kernel of this shape (for bf16 rows, with `_bf16` after it).
    pub fn kernel(self) -> String {
        format!("softmax_cluster_{}x{}x{}", self.blocks, self.threads, self.values)
    }
}

/// The elements a thread of the cluster step holds: 32 f32, or 64 bf16 (two to a register: the
/// registers of 32 f32), and the most blocks of a cluster that every Hopper GPU runs (the portable
/// cluster size).
pub const fn cluster_values(bf16: bool) -> usize {
    if bf16 { 64 } else { 32 }
}
pub const CLUSTER_MAX_BLOCKS: usize = 8;

/// The cluster step's shape for rows of `cols` elements (bf16 or f32): blocks of 256 threads (four
/// per SM) where 8 of them hold the row, as many as hold it (a power of two, 4 or 8); longer rows
/// on 8 blocks of 512 (two per SM). `None` for rows one block of step 6 holds (512 threads of 32
/// f32, 16,384; of 64 bf16, 32,768: the step runs them as step 6 does) and for rows longer than
/// 8 x 512 of them (131,072 f32, 262,144 bf16; split rows).
/// (scripts/lab/softmax/cluster-shape.cu and bf16-instructions.cu measured these shapes beside
/// others: book/src/data/nvidia-h100-80gb-hbm3/softmax-cluster-tuning.txt and
/// softmax-bf16-tuning.txt.)
pub fn cluster_shape(cols: usize, bf16: bool) -> Option<ClusterShape> {
    let values = cluster_values(bf16);
    let holds = |blocks: usize, threads: usize| blocks * threads * values;
    let (blocks, threads) = match cols {
        _ if cols <= holds(1, ON_CHIP_MAX_GROUP) => return None,
        _ if cols <= holds(CLUSTER_MAX_BLOCKS, 256) => {
            (cols.div_ceil(holds(1, 256)).next_power_of_two().max(4), 256)
        }
        _ if cols <= holds(CLUSTER_MAX_BLOCKS, 512) => (CLUSTER_MAX_BLOCKS, 512),
        _ => return None,
    };
    Some(ClusterShape { blocks: blocks as u32, threads, values: values as u32 })
}
// ANCHOR_END: cluster_shape

// ANCHOR: split
/// Blocks per row of the split step, and the elements of each: enough blocks in all to fill the GPU
/// twice (rows x parts at least two waves of blocks of [`THREADS`]), each chunk at least
/// [`MIN_CHUNK`] elements and a multiple of 8 (so chunks of a row that starts on a 16-byte boundary
/// do too).
fn split(rows: usize, cols: usize, gpu: GpuShape) -> (usize, usize) {
    let wanted = 2 * gpu.resident_blocks(THREADS) as usize;
    let most = cols.div_ceil(MIN_CHUNK).max(1);
    let parts = wanted.div_ceil(rows).clamp(1, most);
    let chunk = cols.div_ceil(parts).next_multiple_of(8);
    (cols.div_ceil(chunk).max(1), chunk)
}

/// The fewest elements a block of the split step takes (32 per thread).
pub const MIN_CHUNK: usize = 32 * THREADS as usize;
// ANCHOR_END: split

/// Rows and columns each within [`MAX_SIDE`].
fn check_shape(rows: usize, cols: usize) -> Result<()> {
    if rows > MAX_SIDE || cols > MAX_SIDE {
        return Err(GpuError::BadInput(format!(
            "a {rows} x {cols} matrix: rows and columns must each be at most {MAX_SIDE} (2^31 - \
             1), for the \
             kernels' 32-bit indices; split the matrix"
        )));
    }
    Ok(())
}

/// The launches of one step on one shape: each kernel in turn, on the same grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftmaxPlan {
    /// The f32 kernels, in launch order.
    pub kernels: &'static [&'static str],
    pub config: LaunchConfig,
    /// Blocks per row, and the elements each takes (the split step; 1 and `cols` otherwise).
    pub parts: u32,
    pub chunk: u32,
    /// Floats of scratch between the kernels (rows' max and sum; the chunks' states).
    pub scratch_floats: usize,
    /// Threads per row of the on-chip step (0 for the others).
    pub group: u32,
    /// Blocks per row of the cluster step's cluster kernels (0 for the others).
    pub cluster: u32,
}

impl fmt::Display for SoftmaxPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LaunchConfig { grid, block, .. } = self.config;
        write!(f, "{}: grid {} of {} threads", self.kernels.join(" + "), grid.0, block.0)?;
        if self.parts > 1 {
            write!(f, ", {} blocks per row of {} elements", self.parts, self.chunk)?;
        }
        if self.group > 0 {
            write!(f, ", {} threads per row", self.group)?;
        }
        if self.cluster > 0 {
            write!(f, ", a cluster of {} blocks per row", self.cluster)?;
        }
        if self.scratch_floats > 0 {
            write!(f, ", {} floats of scratch", self.scratch_floats)?;
        }
        Ok(())
    }
}

/// The number of elements of a `rows x cols` matrix, or an error if `input` or `output` holds
/// another number.
fn check_lengths(rows: usize, cols: usize, input: usize, output: usize) -> Result<usize> {
    let n = rows.checked_mul(cols).ok_or_else(|| {
        GpuError::BadInput(format!(
            "softmax: a {rows} x {cols} matrix has more elements than a usize holds"
        ))
    })?;
    if input != n {
        return Err(GpuError::BadInput(format!(
            "softmax of a {rows} x {cols} matrix: the input holds {input} elements, not {rows} x \
             {cols} = {n}"
        )));
    }
    if output != n {
        return Err(GpuError::BadInput(format!(
            "softmax of a {rows} x {cols} matrix: the output holds {output} elements, not the \
             input's {n}"
        )));
    }
    Ok(n)
}

/// A word no kernel writes into scratch (a NaN with a payload): scratch is filled with it when it
/// is allocated, so a kernel that reads scratch nobody wrote gets NaN, not a stale value.
pub const SCRATCH_POISON: u32 = 0x7fc0_5c0f;

// ANCHOR: softmax
/// Takes the softmax of rows with one step's kernels.
pub struct Softmax {
    device: Device,
    step: Step,
    /// Whether the device runs thread block clusters (compute capability 9.0 and later).
    clusters: bool,
    /// The names of the step's kernels this device runs, for f32 rows and for bf16 rows
    /// ([`Step::kernels`]; the on-chip step's for the cluster step on a GPU without clusters), and
    /// those kernels, in those orders.
    f32_names: &'static [&'static str],
    bf16_names: &'static [&'static str],
    f32_kernels: Vec<Kernel>,
    bf16_kernels: Vec<Kernel>,
    /// Between kernels: the rows' max and sum (three passes), the chunks' states (split rows).
    scratch: Option<DeviceBuffer<f32>>,
}

impl Softmax {
    /// Compiles (or takes from the cache) the step's kernels, for f32 and bf16.
    pub fn new(device: &Device, step: Step) -> Result<Self> {
        let clusters = device.facts().compute_capability >= (9, 0);
        // Without clusters the cluster step plans as the on-chip step (Step::plan_for).
        let names = |bf16: bool| {
            if step == Step::ClusterRows && !clusters {
                Step::OnChip.kernels(bf16)
            } else {
                step.kernels(bf16)
            }
        };
        let compile = |names: &[&str], suffix: &str| -> Result<Vec<Kernel>> {
            names.iter().map(|k| device.kernel(&SOURCE, &format!("{k}{suffix}"))).collect()
        };
        Ok(Softmax {
            device: device.clone(),
            step,
            clusters,
            f32_kernels: compile(names(false), f32::SUFFIX)?,
            bf16_kernels: compile(names(true), u16::SUFFIX)?,
            f32_names: names(false),
            bf16_names: names(true),
            scratch: None,
        })
    }

    pub fn step(&self) -> Step {
        self.step
    }

    /// The launches this device would run for a `rows x cols` matrix of `T`.
    pub fn plan<T: Value>(&self, rows: usize, cols: usize) -> Result<SoftmaxPlan> {
        self.step.plan_for::<T>(rows, cols, self.device.facts().shape(), self.clusters)
    }

    /// Writes the softmax of each row of the row-major `rows x cols` matrix `input` into `output`
    /// (the same shape). Queued on the device's stream; an empty matrix launches nothing.
    pub fn softmax<T: Value>(
        &mut self,
        input: DeviceView<'_, T>,
        rows: usize,
        cols: usize,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        check_shape(rows, cols)?;
        if check_lengths(rows, cols, input.len(), output.len())? == 0 {
            return Ok(());
        }
        let plan = self.plan::<T>(rows, cols)?;
        if self.scratch.as_ref().is_none_or(|s| s.len() < plan.scratch_floats) {
            let mut scratch = self.device.alloc::<f32>(plan.scratch_floats.max(1))?;
            scratch.fill_words(SCRATCH_POISON)?;
            self.scratch = Some(scratch);
        }
        let scratch = self.scratch.as_mut().expect("allocated above");
        let (names, compiled) = if T::BF16 {
            (self.bf16_names, &self.bf16_kernels)
        } else {
            (self.f32_names, &self.f32_kernels)
        };
        // The plan's kernels, in launch order, among those compiled.
        let kernels: Vec<&Kernel> = plan
            .kernels
            .iter()
            .map(|name| &compiled[names.iter().position(|k| k == name).expect("a compiled kernel")])
            .collect();
        let (r, c, config) = (rows as u32, cols as u32, plan.config);
        let launch = |k: usize| self.device.launch(kernels[k], config);
        if plan.group > 0 || plan.cluster > 0 {
            return launch(0).arg(input).arg(output).arg(r).arg(c).run();
        }
        match self.step {
            Step::ThreePass => {
                // The kernels write the rows' max and sum through these views (addresses).
                let (max, sum) = (scratch.view(..rows)?, scratch.view(rows..2 * rows)?);
                launch(0).arg(input).arg(max).arg(r).arg(c).run()?;
                launch(1).arg(input).arg(max).arg(sum).arg(r).arg(c).run()?;
                launch(2).arg(input).arg(max).arg(sum).arg(&mut *output).arg(r).arg(c).run()
            }
            Step::Fused | Step::Online | Step::WarpRows => {
                launch(0).arg(input).arg(output).arg(r).arg(c).run()
            }
            Step::SplitRows | Step::OnChip | Step::ClusterRows => {
                let (parts, chunk) = (plan.parts, plan.chunk);
                launch(0)
                    .arg(input)
                    .arg(&mut *scratch)
                    .arg(r)
                    .arg(c)
                    .arg(parts)
                    .arg(chunk)
                    .run()?;
                launch(1)
                    .arg(input)
                    .arg(scratch.as_view())
                    .arg(output)
                    .arg(r)
                    .arg(c)
                    .arg(parts)
                    .arg(chunk)
                    .run()
            }
        }
    }

    /// The softmax of a host matrix, through the device: uploads it, runs the step, downloads the
    /// result.
    pub fn softmax_host<T: Value>(
        &mut self,
        input: &[T],
        rows: usize,
        cols: usize,
    ) -> Result<Vec<T>> {
        check_shape(rows, cols)?;
        let n = check_lengths(rows, cols, input.len(), input.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let matrix = self.device.upload(input)?;
        let mut output = self.device.alloc::<T>(n)?;
        self.softmax(matrix.as_view(), rows, cols, &mut output)?;
        output.to_host()
    }
}
// ANCHOR_END: softmax

// ANCHOR: reference
/// The softmax of each row on the CPU, in f64, as torch defines it: `exp(x - max) / sum`, the max
/// and the sum over the row (a NaN max, or `exp(inf - inf)` and `exp(-inf - -inf)`, make the row
/// NaN). The reference the tests and the tour compare with.
pub fn softmax_cpu<T: Value>(input: &[T], rows: usize, cols: usize) -> Vec<f64> {
    assert_eq!(
        input.len(),
        rows * cols,
        "softmax_cpu: a {rows} x {cols} matrix needs {} elements",
        rows * cols
    );
    let mut out = Vec::with_capacity(input.len());
    for row in input.chunks(cols.max(1)) {
        let x: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
        let max = if x.iter().any(|v| v.is_nan()) {
            f64::NAN
        } else {
            x.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        };
        let e: Vec<f64> = x.iter().map(|&v| (v - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        out.extend(e.iter().map(|&v| v / sum));
    }
    out
}

/// How far an element of a step's result may be from [`softmax_cpu`]'s, relative to it:
/// `(3 h + 16 + |x - max|) 2^-24`, plus bf16's rounding of the result (2^-8) for bf16 rows. `h` is
/// the longest chain of additions into a row's sum, `ceil(cols / 32) + 64` (a lane of a warp per
/// row adds a 32nd of the row, then the merges); each addition, and each rescale of an online sum
/// (an exp, within 2 ulp), may round by 2^-24 of the sum. `|x - max| 2^-24` is the rounding of the
/// exponent x - max in f32; 16 covers exp (2 ulp), the reciprocal and the product. Beside it an
/// absolute `2^-148` (f32) or `2^-132` (bf16) for results in the subnormal range.
pub fn tolerance<T: Value>(cols: usize, x_minus_max: f64) -> (f64, f64) {
    let h = cols.div_ceil(32) as f64 + 64.0;
    let rel = (3.0 * h + 16.0 + x_minus_max.abs()) * f64::powi(2.0, -24);
    if T::SUFFIX.is_empty() {
        (rel, f64::powi(2.0, -148))
    } else {
        (rel + f64::powi(2.0, -8), f64::powi(2.0, -132))
    }
}

/// The first element (or row sum) where `got`, a step's softmax of the `rows x cols` matrix
/// `input`, is further from [`softmax_cpu`] than [`tolerance`] allows: a NaN where the reference
/// has a number or a number where it has NaN, an element off by more than its bound, or a row whose
/// elements do not add up to 1 within the largest bound of the row plus `cols` absolute bounds.
/// Rows are checked on every core.
pub fn first_mismatch<T: Value>(
    input: &[T],
    got: &[T],
    rows: usize,
    cols: usize,
) -> Option<String> {
    if input.len() != rows * cols || got.len() != input.len() {
        return Some(format!(
            "{rows} x {cols}: the input holds {}, the output {} elements",
            input.len(),
            got.len()
        ));
    }
    if cols == 0 || rows == 0 {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rows_per = rows.div_ceil(cores).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..rows)
            .step_by(rows_per)
            .map(|first| {
                scope.spawn(move || {
                    let last = (first + rows_per).min(rows);
                    (first..last).find_map(|r| {
                        row_mismatch(
                            &input[r * cols..(r + 1) * cols],
                            &got[r * cols..(r + 1) * cols],
                            r,
                        )
                    })
                })
            })
            .collect();
        handles.into_iter().find_map(|h| h.join().expect("a checking thread panicked"))
    })
}

/// The first way row `r` of a result is wrong (see [`first_mismatch`]).
fn row_mismatch<T: Value>(x: &[T], got: &[T], r: usize) -> Option<String> {
    let cols = x.len();
    let expected = softmax_cpu(x, 1, cols);
    let max = x.iter().map(|v| v.to_f64()).fold(f64::NEG_INFINITY, f64::max);
    let (mut sum, mut largest_rel, mut nan_row) = (0.0f64, 0.0f64, false);
    for (c, (&e, g)) in expected.iter().zip(got).enumerate() {
        let g = g.to_f64();
        let (rel, abs) = tolerance::<T>(cols, x[c].to_f64() - max);
        let bad =
            if e.is_nan() { !g.is_nan() } else { g.is_nan() || (g - e).abs() > e * rel + abs };
        if bad {
            return Some(format!(
                "row {r}, column {c} of {cols}: expected {e:e}, got {g:e} (input {:e}, row max \
                 {max:e}, bound {:e})",
                x[c].to_f64(),
                e * rel + abs
            ));
        }
        nan_row |= e.is_nan();
        sum += g;
        largest_rel = largest_rel.max(rel);
    }
    let sum_bound = largest_rel + cols as f64 * tolerance::<T>(cols, 0.0).1;
    if !nan_row && (sum - 1.0).abs() > sum_bound {
        return Some(format!(
            "row {r} of {cols} columns sums to {sum}, not 1 within {sum_bound:e}"
        ));
    }
    None
}
// ANCHOR_END: reference
