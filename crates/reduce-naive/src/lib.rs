//! # reduce-naive: step 1 of the reduction ladder
//!
//! Sums f32 values with [`cuda/reduce_naive.cu`](../../../cuda/reduce_naive.cu): one element per
//! thread, then a tree of interleaved pairs in shared memory selected by `tid % (2 * stride)`.
//! That test makes warps diverge, which is the bottleneck the next step removes.
//!
//! ## Where the sum is finished
//!
//! The kernel leaves one partial sum per block of [`BLOCK_SIZE`] elements. [`ReduceNaive::sum_device`]
//! copies those `n / 256` partials back and adds them on the host in f64. Reading back 1/256 of
//! the input is cheap next to the kernel, and it keeps this step about one technique: the block
//! tree. Finishing on the device is what reduce-multi-level and reduce-atomic teach.
//!
//! ```no_run
//! use gpu_harness::Device;
//! use reduce_naive::ReduceNaive;
//!
//! let device = Device::shared()?;
//! let mut reducer = ReduceNaive::new(&device)?;
//! assert_eq!(reducer.sum(&[1.0, 2.0, 3.0])?, 6.0);
//! # Ok::<(), gpu_harness::GpuError>(())
//! ```

use gpu_harness::reduction::{PassPlan, ReductionPlan, SumReduction};
use gpu_harness::{
    Device, DeviceBuffer, DeviceView, GpuError, Kernel, KernelSource, LaunchConfig, Result, kernel_source,
};

/// The kernel source, embedded at build time and compiled by NVRTC at run time.
pub const SOURCE: KernelSource = kernel_source!("reduce_naive.cu");
/// The kernel's name in [`SOURCE`].
pub const KERNEL: &str = "reduce_naive";
/// Threads per block, and so elements per block: one element per thread.
pub const BLOCK_SIZE: u32 = 256;
/// The largest input: the kernel indexes with 32-bit unsigned integers.
pub const MAX_ELEMENTS: u64 = u32::MAX as u64;

// ANCHOR: plan
/// How a sum of `n` elements runs: one block per [`BLOCK_SIZE`] elements, one partial per block,
/// the partials added on the host. `n == 0` launches nothing.
pub fn plan(n: usize) -> Result<ReductionPlan> {
    if n as u64 > MAX_ELEMENTS {
        return Err(GpuError::TooLarge { what: "reduce-naive".into(), n: n as u64, max: MAX_ELEMENTS });
    }
    let blocks = n.div_ceil(BLOCK_SIZE as usize) as u64;
    let pass = PassPlan {
        kernel: KERNEL,
        config: LaunchConfig::linear(blocks as u32, BLOCK_SIZE, BLOCK_SIZE * 4),
        inputs: n as u64,
        outputs: blocks,
    };
    Ok(ReductionPlan { n: n as u64, passes: if n == 0 { vec![] } else { vec![pass] }, host_adds: blocks })
}
// ANCHOR_END: plan

/// The reduce-naive launcher: the compiled kernel and its scratch buffer of block partials.
pub struct ReduceNaive {
    device: Device,
    kernel: Kernel,
    partials: DeviceBuffer<f32>,
}

impl ReduceNaive {
    /// Compiles the kernel (once per process) and starts with no scratch.
    pub fn new(device: &Device) -> Result<Self> {
        Ok(ReduceNaive { device: device.clone(), kernel: device.kernel(&SOURCE, KERNEL)?, partials: device.alloc(0)? })
    }

    /// Makes the partials buffer large enough for `n` inputs. Allocates only when it must grow,
    /// so a timed loop that called this once before starting never allocates.
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let needed = plan(n)?.host_adds as usize;
        if self.partials.len() < needed {
            self.partials = self.device.alloc(needed)?;
        }
        Ok(())
    }

    // ANCHOR: launch
    /// Queues the kernel: afterwards [`ReduceNaive::partials`] holds one sum per block. Returns the
    /// number of partials. Does not wait for the GPU.
    pub fn block_partials(&mut self, input: DeviceView<'_, f32>) -> Result<usize> {
        let plan = plan(input.len())?;
        self.reserve(input.len())?;
        for pass in &plan.passes {
            self.device
                .launch(&self.kernel, pass.config)
                .arg(input)
                .arg(&mut self.partials)
                .arg(input.len() as u32)
                .run()?;
        }
        Ok(plan.host_adds as usize)
    }

    /// Sums `input` on the device: the kernel, then the partials added on the host in f64.
    pub fn sum_device(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        let count = self.block_partials(input)?;
        let partials = self.partials.view(..count)?.to_host()?;
        Ok(partials.iter().map(|&p| f64::from(p)).sum::<f64>() as f32)
    }
    // ANCHOR_END: launch

    /// Sums a host slice: uploads it, then [`ReduceNaive::sum_device`].
    pub fn sum(&mut self, input: &[f32]) -> Result<f32> {
        let input = self.device.upload(input)?;
        self.sum_device(input.as_view())
    }

    /// The first `count` block partials of the last launch.
    pub fn partials(&self, count: usize) -> Result<DeviceView<'_, f32>> {
        self.partials.view(..count)
    }
}

impl SumReduction for ReduceNaive {
    fn create(device: &Device) -> Result<Self> {
        ReduceNaive::new(device)
    }

    fn reserve(&mut self, n: usize) -> Result<()> {
        ReduceNaive::reserve(self, n)
    }

    fn poison_scratch(&mut self) -> Result<()> {
        self.partials.fill(f32::NAN)
    }

    fn sum(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        self.sum_device(input)
    }

    fn boundary_sizes() -> Vec<usize> {
        let block = BLOCK_SIZE as usize;
        vec![block - 1, block, block + 1, 2 * block + 1]
    }
}
