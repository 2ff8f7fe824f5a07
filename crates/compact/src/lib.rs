//! # compact: stream compaction, built on the scan, as fast as CUB's select
//!
//! Keeps the elements of an input whose mask byte is nonzero, or that pass a test
//! ([`Predicate`]: greater than, less than, not equal, not NaN), in their original order, and
//! returns how many it kept: `a[mask]` in array libraries. An element's place in the output is the
//! number of kept elements before it, an exclusive scan of the keep flags; the steps, in
//! `cuda/compact.cu`, differ in how they get it:
//!
//! 1. [`CompactStep::FlagsScanScatter`]: a flag per element to global memory, the [`scan`] crate's
//!    exclusive scan of the flags, a scatter. Three launches, 16 bytes of flag traffic per element.
//! 2. [`CompactStep::CountScanScatter`]: each tile's count, a scan of the counts (one per 8192
//!    elements), then a scatter that ranks each tile's kept elements in registers with warp
//!    ballots: no flag goes to global memory, but the input is read twice.
//! 3. [`CompactStep::SinglePass`]: one launch, the input read once. Each block ranks its tile in
//!    registers, finds the earlier tiles' count by decoupled look-back (`cuda/look_back.cuh`, the
//!    scan's machinery), stages its kept elements in shared memory and writes them as one
//!    coalesced run. The crate's API ([`Compact::new`]).
//!
//! Every step takes f32, i32 and u32, of device buffers or host slices, up to 2^32 - 1 elements,
//! into an output the caller sizes (an error if it is too small, with nothing written past it) or
//! the launcher allocates. Launch plans ([`plan`]) are pure functions of the size and the GPU's
//! shape.

pub mod element;
pub mod launcher;
pub mod measured;
pub mod plan;

use gpu_harness::{Device, Kernel, KernelSource, Result, StepEntry, kernel_source};

pub use element::{CompactElement, Keep, Predicate, compact_mismatch, cpu_compact};
pub use launcher::{Compact, Compacted, DeviceKeep};
pub use plan::{COMPACT_TILE, CompactStep, CompactTile, Selection};

/// Every compaction kernel.
pub const SOURCE: KernelSource = kernel_source!("compact.cu");

/// Loads kernel `name` of `cuda/compact.cu`, compiled with the tile shape of steps 2 and 3.
pub fn compile(device: &Device, name: &str) -> Result<Kernel> {
    device.kernel_with_defines(&SOURCE, name, &COMPACT_TILE.defines())
}

/// The steps as the tour and the benches measure them, and the CUB peers.
pub fn steps() -> Vec<StepEntry> {
    measured::steps()
}
