//! Launch plans: which kernels a reduction launches, with what shape, turning how many values into
//! how many. Pure functions of the input size and the GPU's shape, snapshot-tested without a GPU.

use std::fmt;

use gpu_harness::{GpuError, GpuShape, LaunchConfig, Result};

// ANCHOR: pass_plan
/// One kernel launch of a reduction: which kernel, its shape, and how many values it turns into
/// how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassPlan {
    pub kernel: &'static str,
    pub config: LaunchConfig,
    pub inputs: u64,
    pub outputs: u64,
}
// ANCHOR_END: pass_plan

/// How a reduction of `n` values runs: its kernel passes in order, then how many values the host
/// adds up at the end. Launch plans are pure functions of `n`, snapshot-tested without a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReductionPlan {
    pub n: u64,
    pub passes: Vec<PassPlan>,
    /// How many values the host adds at the end (0 when the device finishes).
    pub host_adds: u64,
    /// Whether the last pass leaves the final result on the device.
    pub on_device: bool,
    /// How the blocks of a one-launch reduction combine their values on the device.
    pub finish: DeviceFinish,
}

/// How the blocks of a one-launch reduction combine their values into the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceFinish {
    /// Each block writes one value, for the next pass or the host.
    #[default]
    Partials,
    /// Each block adds its value into the result in turn (one atomic per block).
    Atomic,
    /// The last block to finish reduces every block's value: each of its threads adds a strided
    /// share of them, then the block's tree.
    LastBlock,
}

impl fmt::Display for ReductionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let finish = if self.on_device {
            "the result stays on the device".to_string()
        } else {
            format!("then the host adds {} value(s)", self.host_adds)
        };
        writeln!(f, "n = {}: {} kernel pass(es), {finish}", self.n, self.passes.len())?;
        for (i, pass) in self.passes.iter().enumerate() {
            let LaunchConfig { grid, block, shared_bytes } = pass.config;
            writeln!(
                f,
                "  pass {}: {} grid {}x{}x{} block {}x{}x{} shared {} B: {} -> {}",
                i + 1,
                pass.kernel,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared_bytes,
                pass.inputs,
                pass.outputs
            )?;
        }
        Ok(())
    }
}

impl ReductionPlan {
    /// The plan of a kernel that reduces `n` values to one partial per block in a single pass,
    /// with `shared_bytes` of dynamic shared memory, the partials then added by the host.
    /// `n == 0` launches nothing.
    pub fn single_pass(
        kernel: &'static str,
        n: usize,
        blocks: u32,
        threads: u32,
        shared_bytes: u32,
    ) -> Self {
        let pass = PassPlan {
            kernel,
            config: LaunchConfig::linear(blocks, threads, shared_bytes),
            inputs: n as u64,
            outputs: u64::from(blocks),
        };
        let passes = if n == 0 { vec![] } else { vec![pass] };
        let host_adds = if n == 0 { 0 } else { u64::from(blocks) };
        ReductionPlan {
            n: n as u64,
            passes,
            host_adds,
            on_device: false,
            finish: DeviceFinish::Partials,
        }
    }

    /// The most additions one input goes through on its way to the result: the longest path of
    /// the plan's summation tree, which bounds the rounding error of an f32 sum
    /// ([`crate::reference::sum_bound`]). Per pass, a thread adds its share of the inputs in turn
    /// (up to ⌈inputs / threads⌉ adds, plus 3 inside a 16-byte vector of up to eight values),
    /// then the block adds its threads' values in a tree of ⌈log2 threads⌉ levels; the finish adds
    /// the blocks' values in turn (atomics: one per block) or in the last block (a strided share
    /// per thread, then its tree); a host finish adds in f64 and rounds once.
    pub fn longest_addition_chain(&self) -> u64 {
        let mut chain = passes_chain(&self.passes);
        if let Some(last) = self.passes.last() {
            let (blocks, threads) = (u64::from(last.config.grid.0), u64::from(last.config.block.0));
            chain += match self.finish {
                DeviceFinish::Partials => 0,
                DeviceFinish::Atomic => blocks,
                DeviceFinish::LastBlock => blocks.div_ceil(threads) + tree(threads),
            };
        }
        chain + u64::from(self.host_adds > 0)
    }
}

/// Levels of a tree over `threads` values.
fn tree(threads: u64) -> u64 {
    u64::from(threads.max(1).next_power_of_two().trailing_zeros())
}

/// The longest addition chain through `passes`, each writing one value per block (or per row):
/// per pass, a thread's share of the inputs added in turn, then the block's tree (see
/// [`ReductionPlan::longest_addition_chain`]).
pub fn passes_chain(passes: &[PassPlan]) -> u64 {
    let pass = |pass: &PassPlan| {
        let (blocks, threads) = (u64::from(pass.config.grid.0), u64::from(pass.config.block.0));
        pass.inputs.div_ceil(blocks * threads).max(1) + 3 + tree(threads)
    };
    passes.iter().map(pass).sum()
}

/// Blocks of `items_per_block` elements that cover `n`.
pub fn blocks_covering(n: usize, items_per_block: u32) -> u32 {
    n.div_ceil(items_per_block as usize) as u32
}

/// The grid of a grid-stride kernel: enough blocks of `threads` to fill the GPU once, or fewer
/// when `n` gives each thread less than `items_per_thread` elements.
pub fn grid_stride_blocks(n: usize, threads: u32, items_per_thread: u32, gpu: GpuShape) -> u32 {
    blocks_covering(n, threads * items_per_thread).min(gpu.resident_blocks(threads))
}

/// Rejects inputs a kernel with 32-bit (`unsigned int`) element counts cannot address.
pub fn check_fits_u32(step: &str, n: usize) -> Result<()> {
    if n as u64 > u64::from(u32::MAX) {
        return Err(GpuError::TooLarge {
            what: step.to_string(),
            n: n as u64,
            max: u64::from(u32::MAX),
        });
    }
    Ok(())
}
