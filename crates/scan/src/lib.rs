//! # scan: parallel prefix sums, from one block to a single pass as fast as CUB
//!
//! The kernels are in `cuda/scan.cu`, with the single pass's machinery (tile tickets, tile status
//! words, the look-back) in `cuda/look_back.cuh`. Step by step:
//!
//! 1. [`OneBlockScan`] with [`OneBlock::HillisSteele`]: an inclusive scan by one block in log2(n)
//!    steps and n log2(n) additions, double-buffered in shared memory.
//! 2. [`OneBlock::Blelloch`]: the work-efficient exclusive scan (up-sweep, down-sweep: 2n
//!    additions); [`OneBlock::BlellochPadded`] removes its shared-memory bank conflicts with
//!    padding.
//! 3. [`MultiPassScan`]: any size in several passes, scan-then-propagate
//!    ([`MultiPass::ScanThenPropagate`], 4n accesses) or reduce-then-scan
//!    ([`MultiPass::ReduceThenScan`], 3n).
//! 4. [`Scan`]: one pass with decoupled look-back (2n accesses), a block per tile
//!    ([`SinglePass::Classic`]); then [`SinglePass::EarlyLoads`], whose blocks load before their
//!    tile ticket is back: the crate's API, inclusive, exclusive and segmented scans of f32, i32
//!    and u32, of device buffers or host slices, of any size up to 2^32 - 1 elements, into another
//!    buffer or in place. A form that measured slower is kept for the chapter:
//!    [`SinglePass::WideLookBack`] (the look-back reads 128 predecessors per round trip).
//!
//! Launch plans ([`plan`]) are pure functions of the size and the GPU's shape. [`TileState`] (the
//! status words and the tile counter) and [`plan::TileShape`] are what another single-pass kernel
//! built on `cuda/look_back.cuh` needs from Rust.

pub mod element;
pub mod measured;
pub mod multi_pass;
pub mod one_block;
pub mod plan;
pub mod reference;
pub mod single_pass;
pub mod tile_state;

use gpu_harness::{Device, Kernel, KernelSource, Result, StepEntry, kernel_source};

pub use element::{ScanElement, ScanKind};
pub use multi_pass::MultiPassScan;
pub use one_block::OneBlockScan;
pub use plan::{LaunchPlan, MultiPass, OneBlock, SINGLE_PASS_TILE, SinglePass, TileShape};
pub use single_pass::Scan;
pub use tile_state::TileState;

/// Every scan kernel.
pub const SOURCE: KernelSource = kernel_source!("scan.cu");

/// Loads kernel `name` of `cuda/scan.cu`, compiled with the single pass's tile shape.
pub fn compile(device: &Device, name: &str) -> Result<Kernel> {
    device.kernel_with_defines(&SOURCE, name, &SINGLE_PASS_TILE.defines())
}

/// The steps as the tour and the benches measure them, and the CUB peers.
pub fn steps() -> Vec<StepEntry> {
    measured::steps()
}
