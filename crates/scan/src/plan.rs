//! Launch plans: which kernels a scan launches, with what shape, over how many elements. Pure
//! functions of the input size and the GPU's shape, snapshot-tested without a GPU.

use std::fmt;

use gpu_harness::{GpuError, LaunchConfig, Result};

/// The most elements any scan here takes: 2^32 - 1 (tile numbers and element counts are 32-bit in
/// the launchers' arithmetic; the kernels index with 64 bits).
pub const MAX_ELEMENTS: u64 = u32::MAX as u64;

/// One kernel launch of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedLaunch {
    pub kernel: String,
    pub config: LaunchConfig,
    /// What it does, in a few words (`2^20 -> 512 tile sums`).
    pub note: String,
}

/// The launches of one scan of `n` elements, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    pub n: u64,
    pub launches: Vec<PlannedLaunch>,
}

impl fmt::Display for LaunchPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "n = {}: {} launch(es)", self.n, self.launches.len())?;
        for (i, launch) in self.launches.iter().enumerate() {
            let LaunchConfig { grid, block, shared_bytes } = launch.config;
            writeln!(
                f,
                "  {}: {} grid {} block {} dynamic shared {} B: {}",
                i + 1,
                launch.kernel,
                grid.0,
                block.0,
                shared_bytes,
                launch.note
            )?;
        }
        Ok(())
    }
}

fn launch(kernel: String, blocks: u64, threads: u32, note: String) -> PlannedLaunch {
    PlannedLaunch { kernel, config: LaunchConfig::linear(blocks as u32, threads, 0), note }
}

/// Rejects more elements than `limit`.
fn check_size(what: &str, n: usize, limit: u64) -> Result<()> {
    if n as u64 > limit {
        return Err(GpuError::TooLarge { what: what.to_string(), n: n as u64, max: limit });
    }
    Ok(())
}

// ---- one block ----

/// The one-block steps: the whole input is scanned by a single block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OneBlock {
    /// Inclusive, one element per thread: at most 1024 elements.
    HillisSteele,
    /// Exclusive, two elements per thread: at most 2048 elements.
    Blelloch,
    /// Blelloch with one padding word per 32, against bank conflicts.
    BlellochPadded,
}

impl OneBlock {
    pub const ALL: [OneBlock; 3] =
        [OneBlock::HillisSteele, OneBlock::Blelloch, OneBlock::BlellochPadded];

    /// The step's name in the registry.
    pub fn step(self) -> &'static str {
        match self {
            OneBlock::HillisSteele => "hillis-steele",
            OneBlock::Blelloch => "blelloch",
            OneBlock::BlellochPadded => "blelloch-padded",
        }
    }

    /// The kernel's name without its type suffix.
    pub fn kernel(self) -> &'static str {
        match self {
            OneBlock::HillisSteele => "scan_hillis_steele",
            OneBlock::Blelloch => "scan_blelloch",
            OneBlock::BlellochPadded => "scan_blelloch_padded",
        }
    }

    /// Hillis-Steele computes the inclusive scan, Blelloch the exclusive one.
    pub fn kind(self) -> crate::ScanKind {
        match self {
            OneBlock::HillisSteele => crate::ScanKind::Inclusive,
            _ => crate::ScanKind::Exclusive,
        }
    }

    /// The largest input one block takes: one element per thread, or two.
    pub fn max_elements(self) -> usize {
        match self {
            OneBlock::HillisSteele => 1024,
            _ => 2048,
        }
    }

    /// The block size for `n` elements: `n` rounded up to whole warps (Hillis-Steele), or half the
    /// power of two at or above `n`, at least one warp (Blelloch's tree needs a power of two).
    pub fn threads(self, n: usize) -> u32 {
        match self {
            OneBlock::HillisSteele => n.div_ceil(32).max(1) as u32 * 32,
            _ => (n.next_power_of_two() / 2).max(32) as u32,
        }
    }
}

// ANCHOR: one_block_plan
/// One block of [`OneBlock::threads`] threads; nothing for an empty input.
pub fn one_block_plan(step: OneBlock, suffix: &str, n: usize) -> Result<LaunchPlan> {
    check_size(step.step(), n, step.max_elements() as u64)?;
    let launches = if n == 0 {
        vec![]
    } else {
        vec![launch(
            format!("{}_{suffix}", step.kernel()),
            1,
            step.threads(n),
            format!("{n} elements in one block"),
        )]
    };
    Ok(LaunchPlan { n: n as u64, launches })
}
// ANCHOR_END: one_block_plan

// ---- several passes ----

/// Threads per block of the multi-pass kernels, and elements per tile (two per thread).
pub const MULTI_PASS_THREADS: u32 = 1024;
pub const MULTI_PASS_TILE: u64 = 2048;

/// How a multi-pass scan crosses tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MultiPass {
    /// Scan every tile and write its total; scan the totals; add them back: 4n accesses.
    ScanThenPropagate,
    /// Sum every tile; scan the sums; scan every tile again from its prefix: 3n accesses.
    ReduceThenScan,
}

impl MultiPass {
    pub const ALL: [MultiPass; 2] = [MultiPass::ScanThenPropagate, MultiPass::ReduceThenScan];

    pub fn step(self) -> &'static str {
        match self {
            MultiPass::ScanThenPropagate => "scan-then-propagate",
            MultiPass::ReduceThenScan => "reduce-then-scan",
        }
    }
}

/// The sizes of the levels of a multi-pass scan of `n` elements: `n`, then its tile sums, their
/// tile sums, ... down to a level of one tile.
pub fn levels(n: u64) -> Vec<u64> {
    let mut levels = vec![n];
    while let Some(&last) = levels.last().filter(|&&l| l > MULTI_PASS_TILE) {
        levels.push(last.div_ceil(MULTI_PASS_TILE));
    }
    levels
}

// ANCHOR: multi_pass_plan
/// Scan-then-propagate: `scan_tiles` at each level going up (each writes the next level's tile
/// sums; the top level is one tile), then `add_tile_prefixes` at each level coming down.
/// Reduce-then-scan: `reduce_tiles` going up, `scan_tiles` on the top level, then
/// `scan_tiles_with_prefix` coming down. Nothing for an empty input.
pub fn multi_pass_plan(strategy: MultiPass, suffix: &str, n: usize) -> Result<LaunchPlan> {
    check_size(strategy.step(), n, MAX_ELEMENTS)?;
    let mut launches = Vec::new();
    if n > 0 {
        let levels = levels(n as u64);
        let top = levels.len() - 1;
        let tiles = |level: usize| levels[level].div_ceil(MULTI_PASS_TILE);
        let up = match strategy {
            MultiPass::ScanThenPropagate => "scan_tiles",
            MultiPass::ReduceThenScan => "reduce_tiles",
        };
        for level in 0..top {
            let note =
                format!("level {level}: {} -> {} tile sums", levels[level], levels[level + 1]);
            launches.push(launch(format!("{up}_{suffix}"), tiles(level), MULTI_PASS_THREADS, note));
        }
        let note = format!("level {top}: {} in one tile", levels[top]);
        launches.push(launch(format!("scan_tiles_{suffix}"), 1, MULTI_PASS_THREADS, note));
        let down = match strategy {
            MultiPass::ScanThenPropagate => "add_tile_prefixes",
            MultiPass::ReduceThenScan => "scan_tiles_with_prefix",
        };
        for level in (0..top).rev() {
            let note = format!("level {level}: {} tiles from the scanned sums", tiles(level));
            launches.push(launch(
                format!("{down}_{suffix}"),
                tiles(level),
                MULTI_PASS_THREADS,
                note,
            ));
        }
    }
    Ok(LaunchPlan { n: n as u64, launches })
}
// ANCHOR_END: multi_pass_plan

/// Elements of tile sums a multi-pass scan of `n` needs: every level above the first, and one
/// spare slot for the top level's total (which nothing reads).
pub fn multi_pass_scratch(n: u64) -> u64 {
    levels(n).iter().skip(1).sum::<u64>() + 1
}

// ---- one pass ----

// ANCHOR: tile_shape
/// The shape of a single-pass tile: threads per block and elements per thread (a multiple of 4:
/// the 16-byte vectors), the elements per thread of the bulk-copy form's tile (which lives in
/// shared memory, a multiple of `items`), and how many predecessors each lane of the look-back
/// warp reads per round trip in the wide look-back (the form that was tried). The kernels are
/// compiled with these values (`-D SCAN_THREADS=...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileShape {
    pub threads: u32,
    pub items: u32,
    pub bulk_items: u32,
    pub look_back_per_lane: u32,
}

/// The tile of the single-pass scans: 128 threads of 24 elements (a 12 KiB tile of 4-byte
/// values, as CUB's tuning for Hopper); the bulk copy's tile of 48 elements a thread (24 KiB of
/// shared memory; 96 measured slower on an H100, scripts/lab/scan/persistent-pipeline.cu); and a
/// look-back of 4 x 32 tiles per round trip.
pub const SINGLE_PASS_TILE: TileShape =
    TileShape { threads: 128, items: 24, bulk_items: 48, look_back_per_lane: 4 };

impl TileShape {
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
            ("SCAN_THREADS", self.threads.to_string()),
            ("SCAN_ITEMS", self.items.to_string()),
            ("SCAN_BULK_ITEMS", self.bulk_items.to_string()),
            ("LOOK_BACK_PER_LANE", self.look_back_per_lane.to_string()),
        ]
    }
}
// ANCHOR_END: tile_shape

/// The forms of the single pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SinglePass {
    /// Decoupled look-back, the look-back warp reading 32 predecessors per round trip.
    Classic,
    /// The same, and a block's loads go out before its tile ticket is back (the crate's scan).
    EarlyLoads,
    /// Tried, slower: the look-back warp reads [`TileShape::look_back_per_lane`] predecessors per
    /// lane.
    WideLookBack,
    /// The tile comes into shared memory by one bulk copy, so it can be twice as large
    /// ([`TileShape::bulk_items`] a thread): the crate's scan.
    BulkCopy,
}

impl SinglePass {
    pub const ALL: [SinglePass; 4] = [
        SinglePass::Classic,
        SinglePass::EarlyLoads,
        SinglePass::WideLookBack,
        SinglePass::BulkCopy,
    ];

    /// The fastest form: what [`crate::Scan::new`] runs.
    pub const FASTEST: SinglePass = SinglePass::BulkCopy;

    /// The form's tile: [`SINGLE_PASS_TILE`], with `items` = `bulk_items` for the bulk copy.
    pub fn tile(self) -> TileShape {
        match self {
            SinglePass::BulkCopy => {
                TileShape { items: SINGLE_PASS_TILE.bulk_items, ..SINGLE_PASS_TILE }
            }
            _ => SINGLE_PASS_TILE,
        }
    }

    /// The step's name in the registry.
    pub fn step(self) -> &'static str {
        match self {
            SinglePass::Classic => "single-pass",
            SinglePass::WideLookBack => "wide-look-back",
            SinglePass::EarlyLoads => "early-loads",
            SinglePass::BulkCopy => "bulk-copy",
        }
    }

    /// The kernel's name for `kind` and `suffix`.
    pub fn kernel(self, kind: crate::ScanKind, suffix: &str) -> String {
        let form = match self {
            SinglePass::Classic => "scan_single_pass",
            SinglePass::WideLookBack => "scan_wide_look_back",
            SinglePass::EarlyLoads => "scan_early_loads",
            SinglePass::BulkCopy => "scan_bulk_copy",
        };
        format!("{form}_{}_{suffix}", kind.name())
    }

    /// The launch plan of a scan of `n` elements of type `suffix` (`"f32"`, ...) in this form.
    pub fn plan(self, kind: crate::ScanKind, suffix: &str, n: usize) -> Result<LaunchPlan> {
        single_pass_plan(self.kernel(kind, suffix), n, self.tile())
    }
}

// ANCHOR: single_pass_plan
/// One launch, a block per tile. Nothing for an empty input.
pub fn single_pass_plan(kernel: String, n: usize, shape: TileShape) -> Result<LaunchPlan> {
    check_size("single-pass scan", n, MAX_ELEMENTS)?;
    let tiles = shape.tiles(n as u64);
    let launches = if n == 0 {
        vec![]
    } else {
        let note = format!("{tiles} tile(s) of {} elements", shape.elements());
        vec![launch(kernel, tiles, shape.threads, note)]
    };
    Ok(LaunchPlan { n: n as u64, launches })
}
// ANCHOR_END: single_pass_plan

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_end_with_one_tile() {
        assert_eq!(levels(5), [5]);
        assert_eq!(levels(2048), [2048]);
        assert_eq!(levels(2049), [2049, 2]);
        assert_eq!(levels(1 << 28), [1 << 28, 1 << 17, 64]);
    }

    #[test]
    fn sizes_past_32_bits_are_refused() {
        let too_many = (1usize << 32) + 5;
        assert!(matches!(
            single_pass_plan("k".into(), too_many, SINGLE_PASS_TILE),
            Err(GpuError::TooLarge { .. })
        ));
        assert!(matches!(
            multi_pass_plan(MultiPass::ReduceThenScan, "f32", too_many),
            Err(GpuError::TooLarge { .. })
        ));
        assert!(matches!(
            one_block_plan(OneBlock::HillisSteele, "f32", 1025),
            Err(GpuError::TooLarge { .. })
        ));
    }

    /// The value `cuda/scan.cu` gives `name` when no `-D` sets it (`#define NAME value`).
    fn kernel_default(name: &str) -> Option<&'static str> {
        let source = include_str!("../../../cuda/scan.cu");
        source.lines().find_map(|line| {
            line.trim().strip_prefix("#define ")?.strip_prefix(name)?.strip_prefix(' ')
        })
    }

    #[test]
    fn the_kernel_file_defaults_to_the_tile_that_runs() {
        // The NVRTC compile test compiles cuda/scan.cu without defines: it compiles what runs only
        // if the file's defaults are SINGLE_PASS_TILE.
        for (name, value) in SINGLE_PASS_TILE.defines() {
            assert_eq!(
                kernel_default(name).map(str::trim),
                Some(value.as_str()),
                "#define {name} in cuda/scan.cu"
            );
        }
    }
}
