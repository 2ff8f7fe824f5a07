//! Launch plans: which kernels a compaction launches (its own and the scan's), with what grid.
//! Pure functions of the step, the input size and the GPU's shape, snapshot-tested without a GPU.

use gpu_harness::{GpuError, GpuShape, LaunchConfig, Result};
use scan::ScanKind;
use scan::plan::{LaunchPlan, PlannedLaunch, SinglePass};

/// The most elements one compaction takes: counts and places are u32 on the device.
pub const MAX_ELEMENTS: u64 = u32::MAX as u64;

/// Threads per block of the flag and scatter kernels of step 1 (`FLAG_THREADS`).
pub const FLAG_THREADS: u32 = 256;

// ANCHOR: tile
/// The tile of steps 2 and 3: threads per block and elements per thread (a multiple of 4, the
/// 16-byte vectors), compiled into the kernels as `-D COMPACT_THREADS=... -D COMPACT_ITEMS=...`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompactTile {
    pub threads: u32,
    pub items: u32,
}

/// 512 threads of 16 elements: 8192 elements, 32 KiB of f32 staged in shared memory per block.
/// The fastest of 15 shapes from 128 x 24 to 1024 x 8 timed on an H200
/// (`scripts/lab/compact/tile-shape.cu`; `book/src/data/nvidia-h200/compact-tuning.txt`): larger
/// tiles mean fewer tiles to look back over, up to where shared memory and registers cut the blocks
/// per SM.
pub const COMPACT_TILE: CompactTile = CompactTile { threads: 512, items: 16 };
// ANCHOR_END: tile

impl CompactTile {
    /// Elements per tile.
    pub fn elements(self) -> u64 {
        u64::from(self.threads) * u64::from(self.items)
    }

    /// Tiles covering `n` elements.
    pub fn tiles(self, n: u64) -> u64 {
        n.div_ceil(self.elements())
    }

    /// The `-D` defines the kernels are compiled with.
    pub fn defines(self) -> Vec<(&'static str, String)> {
        vec![
            ("COMPACT_THREADS", self.threads.to_string()),
            ("COMPACT_ITEMS", self.items.to_string()),
        ]
    }
}

/// The steps of the chapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompactStep {
    /// Flags to global memory, an exclusive scan of them, a scatter (three launches).
    FlagsScanScatter,
    /// Each tile's count, a scan of the counts, a scatter that ranks in registers (three launches,
    /// no flags in memory).
    CountScanScatter,
    /// One launch: ranks in registers, decoupled look-back, staged writes (the crate's default).
    SinglePass,
}

impl CompactStep {
    pub const ALL: [CompactStep; 3] =
        [CompactStep::FlagsScanScatter, CompactStep::CountScanScatter, CompactStep::SinglePass];

    /// The step's name in the registry.
    pub fn step(self) -> &'static str {
        match self {
            CompactStep::FlagsScanScatter => "flags-scan-scatter",
            CompactStep::CountScanScatter => "count-scan-scatter",
            CompactStep::SinglePass => "single-pass",
        }
    }
}

/// How the kept elements are chosen: by a mask (one byte per element) or by a test of the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Selection {
    Mask,
    Test,
}

impl Selection {
    /// The word in kernel names: `masked` or `if`.
    pub fn word(self) -> &'static str {
        match self {
            Selection::Mask => "masked",
            Selection::Test => "if",
        }
    }
}

/// The name of kernel `base` (`compact_single_pass`) for a selection and an element type.
pub fn kernel_name(base: &str, selection: Selection, suffix: &str) -> String {
    format!("{base}_{}_{suffix}", selection.word())
}

fn launch(kernel: String, blocks: u64, threads: u32, note: String) -> PlannedLaunch {
    PlannedLaunch { kernel, config: LaunchConfig::linear(blocks as u32, threads, 0), note }
}

/// Blocks of the grid-stride kernels of step 1: one element per thread, at most the GPU filled
/// once.
pub fn flag_blocks(n: u64, gpu: GpuShape) -> u64 {
    n.div_ceil(u64::from(FLAG_THREADS)).clamp(1, u64::from(gpu.resident_blocks(FLAG_THREADS)))
}

// ANCHOR: plan
/// The launches of a compaction of `n` elements; nothing for an empty input.
/// - flags-scan-scatter: the flags (grid-stride), the scan crate's exclusive scan of n u32 in
///   place, the scatter (grid-stride);
/// - count-scan-scatter: a block per tile counts, the scan crate's inclusive scan of the tiles'
///   counts, a block per tile scatters;
/// - single-pass: a block per tile.
pub fn compact_plan(
    step: CompactStep,
    selection: Selection,
    suffix: &str,
    n: usize,
    gpu: GpuShape,
) -> Result<LaunchPlan> {
    let n64 = n as u64;
    if n64 > MAX_ELEMENTS {
        return Err(GpuError::TooLarge {
            what: format!("{} compaction (u32 counts and places)", step.step()),
            n: n64,
            max: MAX_ELEMENTS,
        });
    }
    let mut launches = Vec::new();
    if n == 0 {
        return Ok(LaunchPlan { n: 0, launches });
    }
    let name = |base: &str| kernel_name(base, selection, suffix);
    let tiles = COMPACT_TILE.tiles(n64);
    let threads = COMPACT_TILE.threads;
    match step {
        CompactStep::FlagsScanScatter => {
            let blocks = flag_blocks(n64, gpu);
            launches.push(launch(
                name("compact_write_flags"),
                blocks,
                FLAG_THREADS,
                format!("{n} flags"),
            ));
            let scan = SinglePass::FASTEST.plan(ScanKind::Exclusive, "u32", n)?;
            launches.extend(
                scan.launches
                    .into_iter()
                    .map(|l| PlannedLaunch { note: format!("{n} flags to places"), ..l }),
            );
            launches.push(launch(
                name("compact_scatter_flagged"),
                blocks,
                FLAG_THREADS,
                "kept elements to their places".into(),
            ));
        }
        CompactStep::CountScanScatter => {
            launches.push(launch(
                name("compact_count_tiles"),
                tiles,
                threads,
                format!("{tiles} tile count(s)"),
            ));
            let counts = tiles as usize;
            let scan = SinglePass::FASTEST.plan(ScanKind::Inclusive, "u32", counts)?;
            launches.extend(
                scan.launches
                    .into_iter()
                    .map(|l| PlannedLaunch { note: format!("{tiles} counts to tile ends"), ..l }),
            );
            launches.push(launch(
                name("compact_scatter_tiles"),
                tiles,
                threads,
                format!("{tiles} tile(s) ranked and scattered"),
            ));
        }
        CompactStep::SinglePass => {
            let note = format!("{tiles} tile(s) of {}", COMPACT_TILE.elements());
            launches.push(launch(name("compact_single_pass"), tiles, threads, note));
        }
    }
    Ok(LaunchPlan { n: n64, launches })
}
// ANCHOR_END: plan

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_past_32_bits_are_refused() {
        let too_many = (1usize << 32) + 5;
        for step in CompactStep::ALL {
            let planned =
                compact_plan(step, Selection::Mask, "f32", too_many, GpuShape::HOPPER_132_SMS);
            assert!(matches!(planned, Err(GpuError::TooLarge { .. })), "{step:?}");
        }
    }

    #[test]
    fn an_empty_input_launches_nothing() {
        for step in CompactStep::ALL {
            assert!(
                compact_plan(step, Selection::Test, "u32", 0, GpuShape::HOPPER_132_SMS)
                    .unwrap()
                    .launches
                    .is_empty()
            );
        }
    }

    #[test]
    fn the_kernel_file_defaults_to_the_tile_that_runs() {
        // The NVRTC compile test compiles cuda/compact.cu without defines: it compiles what runs
        // only if the file's defaults are COMPACT_TILE.
        let source = include_str!("../../../cuda/compact.cu");
        for (name, value) in COMPACT_TILE.defines() {
            let default = source.lines().find_map(|line| {
                line.trim().strip_prefix("#define ")?.strip_prefix(name)?.strip_prefix(' ')
            });
            assert_eq!(
                default.map(str::trim),
                Some(value.as_str()),
                "#define {name} in cuda/compact.cu"
            );
        }
    }
}
