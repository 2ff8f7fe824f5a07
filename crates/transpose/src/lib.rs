//! # transpose: coalescing and shared-memory banks
//!
//! Transposes a row-major `rows x cols` matrix into the row-major `cols x rows` one, on the GPU, in
//! the steps of the chapter (kernels in `cuda/transpose.cu`):
//!
//! | [`Step`] | kernel | what changes |
//! |---|---|---|
//! | ([`TileCopy`]) | `transpose_copy` | step 1, not a transpose: a copy, the ceiling |
//! | [`Step::Naive`] | `transpose_naive` | one element a thread: reads coalesced, writes not |
//! | [`Step::Tiled`] | `transpose_tiled` | a 32 x 32 tile in shared memory: both coalesced |
//! | [`Step::Padded`] | `transpose_padded` | the tile padded to 33 columns: no bank conflicts |
//! | [`Step::FourPerThread`] | `transpose_four_per_thread` | 32 x 8 threads, four elements each |
//! | [`Step::Swizzled`] | `transpose_swizzled` | (extra) step 5's tile swizzled, not padded |
//! | [`Step::WideTiles`] | `transpose_wide_tiles` | 64 x 64 tiles, eight elements a thread |
//! | [`Step::ColumnOrder`] | `transpose_column_order` | step 6 with the grid turned |
//!
//! A transpose only moves bits, so the kernels move 4-byte words and one kernel serves every
//! 4-byte type ([`Word`]: `f32`, `i32`, `u32`), NaN payloads and `-0.0` included. Any shape works,
//! 1 x 1 to tall and thin, as long as each side is below 2^31 and the rows fit in the grid (65,535
//! tiles down: 2,097,120 rows for the 32-row tiles, twice that for the wide ones; for step 7, whose
//! grid is turned, the columns); anything else is a [`GpuError`] that says why, before a launch.
//!
//! In place is not possible: the input is borrowed ([`DeviceView`]) while the output is borrowed
//! mutably, and Rust does not let one buffer be both, so passing the same buffer twice does not
//! compile:
//!
//! ```compile_fail,E0502
//! # use gpu_harness::Device;
//! # use transpose::{Step, Transposer};
//! # fn run(device: &Device) -> gpu_harness::Result<()> {
//! let mut square = device.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
//! let transposer = Transposer::new(device, Step::WideTiles)?;
//! transposer.transpose(square.as_view(), 2, 2, &mut square)?; // error[E0502]: `square` is
//! borrowed twice # Ok(())
//! # }
//! ```
//!
//! With a second buffer it does:
//!
//! ```no_run
//! # use gpu_harness::Device;
//! # use transpose::{Step, Transposer};
//! # fn run(device: &Device) -> gpu_harness::Result<()> {
//! let matrix = device.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?; // 2 x 3
//! let mut transposed = device.alloc::<f32>(6)?; // 3 x 2
//! Transposer::new(device, Step::WideTiles)?.transpose(matrix.as_view(), 2, 3, &mut transposed)?;
//! assert_eq!(transposed.to_host()?, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! # Ok(())
//! # }
//! ```

pub mod measured;

use std::fmt;

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, Element, GpuError, Kernel, KernelSource, LaunchConfig, Result,
};

pub use measured::steps;

const SOURCE: KernelSource = gpu_harness::kernel_source!("transpose.cu");

/// The element types the kernels move: the 4-byte ones. Sealed: `f32`, `i32` and `u32`.
pub trait Word: Element + sealed::Sealed {}
mod sealed {
    pub trait Sealed {}
}
impl sealed::Sealed for f32 {}
impl sealed::Sealed for i32 {}
impl sealed::Sealed for u32 {}
impl Word for f32 {}
impl Word for i32 {}
impl Word for u32 {}

/// Each side of a matrix is at most this, so the kernels' 32-bit tile arithmetic cannot wrap
/// (offsets into the matrix are 64-bit: it may hold more than 2^32 elements).
pub const MAX_SIDE: usize = i32::MAX as usize;

/// CUDA's limit on `gridDim.y`: the most tiles down a matrix (across it, for step 7's turned grid).
pub const MAX_TILES_DOWN: usize = 65_535;

// ANCHOR: step
gpu_harness::steps! {
    /// A step of the ladder that transposes (step 1, the copy, is [`TileCopy`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Step {
        /// Step 2: one element per thread, reads coalesced, writes strided.
        Naive => "naive",
        /// Step 3: a 32 x 32 tile through shared memory, with 32-way bank conflicts on its columns.
        Tiled => "tiled",
        /// Step 4: the tile padded to 33 columns: no bank conflicts.
        Padded => "padded",
        /// Step 5: 32 x 8 threads per tile, four elements each.
        FourPerThread => "four-per-thread",
        /// Extra beside step 5: its tile swizzled (XOR) instead of padded.
        Swizzled => "swizzled",
        /// Step 6: 64 x 64 tiles, 32 x 16 threads, eight elements each.
        WideTiles => "wide-tiles",
        /// Step 7: step 6 with the grid turned, `gridDim.x` down the tile rows: the blocks running
        /// at once write whole output rows.
        ColumnOrder => "column-order",
    }
}

impl Step {
    /// Its kernel in `cuda/transpose.cu`.
    pub const fn kernel(self) -> &'static str {
        match self {
            Step::Naive => "transpose_naive",
            Step::Tiled => "transpose_tiled",
            Step::Padded => "transpose_padded",
            Step::FourPerThread => "transpose_four_per_thread",
            Step::Swizzled => "transpose_swizzled",
            Step::WideTiles => "transpose_wide_tiles",
            Step::ColumnOrder => "transpose_column_order",
        }
    }

    /// The side of the square tile one block moves, and the block's threads (x, y).
    pub const fn shape(self) -> (u32, (u32, u32)) {
        match self {
            Step::Naive | Step::Tiled | Step::Padded => (32, (32, 32)),
            Step::FourPerThread | Step::Swizzled => (32, (32, 8)),
            Step::WideTiles | Step::ColumnOrder => (64, (32, 16)),
        }
    }

    /// Whether the grid is turned: `gridDim.x` down the tile rows and `gridDim.y` across the tile
    /// columns (step 7), rather than the other way round.
    pub const fn turned(self) -> bool {
        matches!(self, Step::ColumnOrder)
    }

    /// The launch that transposes a `rows x cols` matrix: one block per tile, a 2-D grid.
    pub fn plan(self, rows: usize, cols: usize) -> Result<TransposePlan> {
        let (tile, block) = self.shape();
        tile_plan(self.kernel(), rows, cols, tile, block, self.turned())
    }
}
// ANCHOR_END: step

/// A launch of one of the kernels: its grid covers the matrix with square tiles, one per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransposePlan {
    pub kernel: &'static str,
    /// The side of a tile, in elements.
    pub tile: u32,
    pub config: LaunchConfig,
}

impl fmt::Display for TransposePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let LaunchConfig { grid, block, .. } = self.config;
        write!(
            f,
            "{}: grid ({}, {}) of blocks ({}, {}), one block per {} x {} tile",
            self.kernel, grid.0, grid.1, block.0, block.1, self.tile, self.tile
        )
    }
}

/// One block per `tile x tile` tile: `gridDim.x` across the columns, `gridDim.y` down the rows, or
/// (`turned`) `gridDim.x` down the rows and `gridDim.y` across the columns.
fn tile_plan(
    kernel: &'static str,
    rows: usize,
    cols: usize,
    tile: u32,
    block: (u32, u32),
    turned: bool,
) -> Result<TransposePlan> {
    if rows == 0 || cols == 0 {
        return Err(GpuError::BadInput(format!(
            "a {rows} x {cols} matrix is empty: there is nothing to launch"
        )));
    }
    if rows > MAX_SIDE || cols > MAX_SIDE {
        return Err(GpuError::BadInput(format!(
            "a {rows} x {cols} matrix: each side must be at most {MAX_SIDE} (2^31 - 1), for the \
             kernels' 32-bit tile arithmetic"
        )));
    }
    let side = tile as usize;
    let (across, down) = (cols.div_ceil(side), rows.div_ceil(side));
    if turned && across > MAX_TILES_DOWN {
        return Err(GpuError::BadInput(format!(
            "{kernel}: a matrix of {cols} columns needs {across} tiles of {tile} columns, more \
             than a grid's \
             {MAX_TILES_DOWN} (at most {} columns here: the grid is turned); step 6 (wide-tiles), \
             whose grid \
             is not, takes it",
            MAX_TILES_DOWN * side
        )));
    }
    if !turned && down > MAX_TILES_DOWN {
        return Err(GpuError::BadInput(format!(
            "{kernel}: a matrix of {rows} rows needs {down} tiles of {tile} rows, more than a \
             grid's {MAX_TILES_DOWN} \
             (at most {} rows here); transpose it in bands of rows",
            MAX_TILES_DOWN * side
        )));
    }
    let (x, y) = if turned { (down, across) } else { (across, down) };
    let config = LaunchConfig {
        grid: (x as u32, y as u32, 1),
        block: (block.0, block.1, 1),
        shared_bytes: 0,
    };
    Ok(TransposePlan { kernel, tile, config })
}

/// The number of elements of a `rows x cols` matrix, or an error if `input` or `output` holds
/// another number.
fn check_lengths(
    what: &str,
    rows: usize,
    cols: usize,
    input: usize,
    output: usize,
) -> Result<usize> {
    let n = rows.checked_mul(cols).ok_or_else(|| {
        GpuError::BadInput(format!(
            "{what}: a {rows} x {cols} matrix has more elements than a usize holds"
        ))
    })?;
    if input != n {
        return Err(GpuError::BadInput(format!(
            "{what} of a {rows} x {cols} matrix: the input holds {input} elements, not {rows} x \
             {cols} = {n}"
        )));
    }
    if output != n {
        return Err(GpuError::BadInput(format!(
            "{what} of a {rows} x {cols} matrix: the output holds {output} elements, not the {n} \
             of the result"
        )));
    }
    Ok(n)
}

// ANCHOR: transposer
/// Checks the lengths, plans the launch (`plan`) and queues `kernel` over `input` and `output`; an
/// empty matrix launches nothing. Every kernel takes `(in, out, rows, cols)`.
fn launch<T: Word>(
    device: &Device,
    kernel: &Kernel,
    what: &str,
    plan: impl FnOnce() -> Result<TransposePlan>,
    input: DeviceView<'_, T>,
    (rows, cols): (usize, usize),
    output: &mut DeviceBuffer<T>,
) -> Result<()> {
    if check_lengths(what, rows, cols, input.len(), output.len())? == 0 {
        return Ok(());
    }
    device
        .launch(kernel, plan()?.config)
        .arg(input)
        .arg(output)
        .arg(rows as u32)
        .arg(cols as u32)
        .run()
}

/// Transposes matrices with one step's kernel.
pub struct Transposer {
    device: Device,
    step: Step,
    kernel: Kernel,
}

impl Transposer {
    /// Compiles (or takes from the cache) the step's kernel.
    pub fn new(device: &Device, step: Step) -> Result<Self> {
        Ok(Transposer {
            device: device.clone(),
            step,
            kernel: device.kernel(&SOURCE, step.kernel())?,
        })
    }

    pub fn step(&self) -> Step {
        self.step
    }

    /// Writes the transpose of the row-major `rows x cols` matrix `input` into `output`, which must
    /// hold exactly `rows * cols` elements (the row-major `cols x rows` result). Queued on the
    /// device's stream; an empty matrix launches nothing.
    pub fn transpose<T: Word>(
        &self,
        input: DeviceView<'_, T>,
        rows: usize,
        cols: usize,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        launch(
            &self.device,
            &self.kernel,
            "transpose",
            || self.step.plan(rows, cols),
            input,
            (rows, cols),
            output,
        )
    }

    /// The transpose of a host matrix, through the device: uploads it, transposes it, downloads the
    /// result.
    pub fn transpose_host<T: Word>(&self, input: &[T], rows: usize, cols: usize) -> Result<Vec<T>> {
        let n = check_lengths("transpose", rows, cols, input.len(), input.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let matrix = self.device.upload(input)?;
        let mut transposed = self.device.alloc::<T>(n)?;
        self.transpose(matrix.as_view(), rows, cols, &mut transposed)?;
        transposed.to_host()
    }
}
// ANCHOR_END: transposer

/// Step 1: copies a matrix with the transposes' access pattern (32 x 32 threads per 32 x 32 tile,
/// one element each), the ceiling of the steps that move one element per thread.
pub struct TileCopy {
    device: Device,
    kernel: Kernel,
}

impl TileCopy {
    /// The kernel's name in `cuda/transpose.cu`.
    pub const KERNEL: &'static str = "transpose_copy";

    pub fn new(device: &Device) -> Result<Self> {
        Ok(TileCopy { device: device.clone(), kernel: device.kernel(&SOURCE, Self::KERNEL)? })
    }

    /// The same launch as the naive transpose's.
    pub fn plan(rows: usize, cols: usize) -> Result<TransposePlan> {
        tile_plan(Self::KERNEL, rows, cols, 32, (32, 32), false)
    }

    /// Copies the `rows x cols` matrix `input` into `output` (both `rows * cols` elements).
    pub fn copy<T: Word>(
        &self,
        input: DeviceView<'_, T>,
        rows: usize,
        cols: usize,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        launch(
            &self.device,
            &self.kernel,
            "copy",
            || Self::plan(rows, cols),
            input,
            (rows, cols),
            output,
        )
    }
}

/// The transpose on the CPU: the reference the tests and the tour compare with.
pub fn transpose_cpu<T: Copy>(input: &[T], rows: usize, cols: usize) -> Vec<T> {
    assert_eq!(
        input.len(),
        rows * cols,
        "transpose_cpu: a {rows} x {cols} matrix needs {} elements",
        rows * cols
    );
    let mut out = Vec::with_capacity(input.len());
    for c in 0..cols {
        out.extend((0..rows).map(|r| input[r * cols + c]));
    }
    out
}

/// The first element where `transposed` is not the transpose of the `rows x cols` matrix `input`,
/// comparing bits (so NaN, -0.0 and integers compare exactly): `(row, column)` of the input, with
/// what was expected and what came back. Walks both in 64 x 64 blocks, so it is quick on 1 GiB.
pub fn first_mismatch<T: Word>(
    input: &[T],
    transposed: &[T],
    rows: usize,
    cols: usize,
) -> Option<Mismatch<T>> {
    let bits = |value: &T| -> u32 {
        // Words are 4-byte plain numeric types.
        unsafe { std::mem::transmute_copy::<T, u32>(value) }
    };
    if transposed.len() != input.len() {
        return Some(Mismatch { row: 0, col: 0, expected: None, got: None });
    }
    const BLOCK: usize = 64;
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for c in c0..(c0 + BLOCK).min(cols) {
                for r in r0..(r0 + BLOCK).min(rows) {
                    let (expected, got) = (input[r * cols + c], transposed[c * rows + r]);
                    if bits(&expected) != bits(&got) {
                        return Some(Mismatch {
                            row: r,
                            col: c,
                            expected: Some(expected),
                            got: Some(got),
                        });
                    }
                }
            }
        }
    }
    None
}

/// Where a transpose went wrong (see [`first_mismatch`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mismatch<T> {
    /// Row and column of the element in the input.
    pub row: usize,
    pub col: usize,
    /// The input's element there, and what the output held in its place (`None` when the lengths
    /// differ).
    pub expected: Option<T>,
    pub got: Option<T>,
}

impl<T: fmt::Debug> fmt::Display for Mismatch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.expected, &self.got) {
            (Some(expected), Some(got)) => write!(
                f,
                "element ({}, {}) should be at ({}, {}) of the output: expected {expected:?}, got \
                 {got:?}",
                self.row, self.col, self.col, self.row
            ),
            _ => write!(f, "the output's length differs from the input's"),
        }
    }
}
