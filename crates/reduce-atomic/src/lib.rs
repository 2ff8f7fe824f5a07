//! # reduce-atomic: the whole reduction in one kernel launch
//!
//! reduce-multi-level needs a second launch to reduce its partials. Here a single launch of
//! reduce-shuffle's kernel shape (16-byte grid-stride loads, shuffle block reduction, a grid that
//! fills the GPU once) finishes the job, in one of two ways (`cuda/reduce_atomic.cu`):
//!
//! - [`AtomicReduce`]: each block combines its value into the result with one atomic operation.
//!   The result is set to the operation's identity (a 4-byte memset on the stream) before each
//!   launch. **Not deterministic for f32 sums**: blocks finish in a different order from run to
//!   run, floating-point addition is not associative, and the last bits of the sum can change.
//!   Integer results, and min and max, are the same every run.
//! - [`DeterministicReduce`]: each block writes its value to a partials array, fences, and takes a
//!   ticket from an atomic counter; the block that draws the last ticket reduces the partials in a
//!   fixed order and resets the counter. The same input gives the same bits every run.
//!
//! Both support sum, min, max and mean over f32, i32 and u32, and the f32 dot product, with the
//! semantics of `reduction::full` (wrapping integer sums, NaN-wins min and max, 64-bit sums for
//! integer means), and any size up to the device's memory (64-bit indices).
//!
//! An extra, apart from the step: [`operators`], the last-block finish with any built-in operator
//! (product, argmin, logical and bitwise operators among them).

pub mod operators;

use std::collections::HashMap;
use std::marker::PhantomData;

use gpu_harness::{
    Device, DeviceBuffer, DeviceView, Element, GpuError, GpuShape, Kernel, KernelArg, KernelSource,
    Launch, LaunchConfig, Result, StepEntry, kernel_source,
};
use reduction::{
    DeviceFinish, FullReduction, POISON_WORD, ReduceElement, ReduceOp, ReductionPlan,
    grid_stride_blocks, measured,
};

/// Threads per block.
pub const BLOCK_SIZE: u32 = 256;

const SOURCE: KernelSource = kernel_source!("reduce_atomic.cu");

/// Where a single pass leaves its work: the result, and the last-block finish's partials and
/// ticket counter.
pub struct Outputs<'a, V: Element> {
    pub result: &'a mut DeviceBuffer<V>,
    pub partials: &'a mut DeviceBuffer<V>,
    pub ticket: &'a mut DeviceBuffer<u32>,
}

// ANCHOR: queue
/// How the blocks' values become one result.
pub trait Finish: Send + Sync + 'static {
    /// Kernel-name prefix: `atomic` or `last_block`.
    const PREFIX: &'static str;
    /// The step's name in benches and the book.
    const STEP: &'static str;
    /// How its blocks' values meet (for the plan's addition chain).
    const DEVICE_FINISH: DeviceFinish;

    /// Adds the finish's own arguments to `launch` (whose inputs are already set), then queues it.
    /// `identity_word` fills every 32-bit word of a value holding the operation's identity.
    fn finish<V: Element>(
        launch: Launch<'_>,
        out: Outputs<'_, V>,
        n: usize,
        identity_word: u32,
    ) -> Result<()>;
}

/// One atomic per block into the result, which is first set to the operation's identity.
pub struct Atomic;
impl Finish for Atomic {
    const PREFIX: &'static str = "atomic";
    const STEP: &'static str = "atomic";
    const DEVICE_FINISH: DeviceFinish = DeviceFinish::Atomic;

    fn finish<V: Element>(
        launch: Launch<'_>,
        out: Outputs<'_, V>,
        n: usize,
        identity_word: u32,
    ) -> Result<()> {
        out.result.fill_words(identity_word)?;
        launch.arg(out.result).arg(n as u64).run()
    }
}

/// Partials, a ticket counter, and the last block reduces them in a fixed order.
pub struct LastBlock;
impl Finish for LastBlock {
    const PREFIX: &'static str = "last_block";
    const STEP: &'static str = "last-block";
    const DEVICE_FINISH: DeviceFinish = DeviceFinish::LastBlock;

    fn finish<V: Element>(
        launch: Launch<'_>,
        out: Outputs<'_, V>,
        n: usize,
        _identity_word: u32,
    ) -> Result<()> {
        launch.arg(out.partials).arg(out.ticket).arg(out.result).arg(n as u64).run()
    }
}

/// Queues one launch of `kernel` over `inputs` (one or two arrays of `n` elements), finished by
/// `F`.
fn queue_single_pass<F: Finish, V: Element>(
    device: &Device,
    kernel: &Kernel,
    config: LaunchConfig,
    inputs: &[KernelArg],
    n: usize,
    identity_word: u32,
    out: Outputs<'_, V>,
) -> Result<()> {
    let launch =
        inputs.iter().fold(device.launch(kernel, config), |launch, input| launch.arg(*input));
    F::finish(launch, out, n, identity_word)
}
// ANCHOR_END: queue

// ANCHOR: plan
/// One launch: a grid that fills the GPU once, or fewer blocks when there is less than one 16-byte
/// vector per thread. The result stays on the device.
pub fn plan(kernel: &'static str, n: usize, gpu: GpuShape) -> ReductionPlan {
    let mut plan = ReductionPlan::single_pass(
        kernel,
        n,
        grid_stride_blocks(n, BLOCK_SIZE, 4, gpu),
        BLOCK_SIZE,
        0,
    );
    plan.host_adds = 0;
    plan.on_device = true;
    plan
}
// ANCHOR_END: plan

/// Single-launch full reductions of `T`, finished by `F`.
pub struct SinglePass<T: ReduceElement, F: Finish> {
    device: Device,
    kernels: HashMap<ReduceOp, Kernel>,
    wide: Kernel,
    dot: Kernel,
    result: DeviceBuffer<T>,
    wide_result: DeviceBuffer<T::Wide>,
    partials: DeviceBuffer<T>,
    wide_partials: DeviceBuffer<T::Wide>,
    ticket: DeviceBuffer<u32>,
    finish: PhantomData<F>,
}

/// One atomic per block: fast, and not deterministic for f32 sums.
pub type AtomicReduce<T> = SinglePass<T, Atomic>;
/// The last block finishes in a fixed order: bit-identical results from run to run.
pub type DeterministicReduce<T> = SinglePass<T, LastBlock>;

impl<T: ReduceElement, F: Finish> SinglePass<T, F> {
    /// Loads the kernels for `T` (compiled once per process); the ticket counter starts at 0.
    pub fn new(device: &Device) -> Result<Self> {
        let name = |what: &str| format!("{}_{what}", F::PREFIX);
        let mut kernels = HashMap::new();
        for op in ReduceOp::ALL {
            kernels.insert(
                op,
                device.kernel(&SOURCE, &name(&format!("{}_{}", op.name(), T::SUFFIX)))?,
            );
        }
        Ok(SinglePass {
            device: device.clone(),
            kernels,
            wide: device.kernel(&SOURCE, &name(T::WIDE_SUM))?,
            dot: device.kernel(&SOURCE, &name("dot_f32"))?,
            result: device.alloc(1)?,
            wide_result: device.alloc(1)?,
            partials: device.alloc(0)?,
            wide_partials: device.alloc(0)?,
            ticket: device.alloc(1)?,
            finish: PhantomData,
        })
    }

    /// The plan for `n` elements on this device.
    pub fn plan(&self, n: usize) -> ReductionPlan {
        ReductionPlan {
            finish: F::DEVICE_FINISH,
            ..plan(F::PREFIX, n, self.device.facts().shape())
        }
    }

    /// Grows the partials (used by the last-block finish) to what `n` elements need.
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let blocks = self.plan(n).passes.first().map_or(0, |p| p.outputs as usize);
        if self.partials.len() < blocks {
            self.partials = self.device.alloc(blocks)?;
            self.wide_partials = self.device.alloc(blocks)?;
        }
        Ok(())
    }

    fn config(&mut self, n: usize) -> Result<LaunchConfig> {
        self.reserve(n)?;
        Ok(self.plan(n).passes[0].config)
    }

    fn poison_buffers(&mut self) -> Result<()> {
        self.result.fill_words(POISON_WORD)?;
        self.wide_result.fill_words(POISON_WORD)?;
        self.partials.fill_words(POISON_WORD)?;
        self.wide_partials.fill_words(POISON_WORD)
    }
}

impl<F: Finish> SinglePass<f32, F> {
    /// The dot product `sum(a[i] * b[i])` in one launch.
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
        let config = self.config(a.len())?;
        queue_single_pass::<F, f32>(
            &self.device,
            &self.dot,
            config,
            &[a.into(), b.into()],
            a.len(),
            0,
            Outputs {
                result: &mut self.result,
                partials: &mut self.partials,
                ticket: &mut self.ticket,
            },
        )?;
        Ok(self.result.to_host()?[0])
    }
}

impl<T: ReduceElement, F: Finish> FullReduction<T> for SinglePass<T, F> {
    fn create(device: &Device) -> Result<Self> {
        Self::new(device)
    }

    fn reserve(&mut self, n: usize) -> Result<()> {
        SinglePass::reserve(self, n)
    }

    fn poison_scratch(&mut self, n: usize) -> Result<()> {
        self.reserve(n)?;
        self.poison_buffers()
    }

    fn queue(&mut self, op: ReduceOp, input: DeviceView<'_, T>) -> Result<()> {
        let config = self.config(input.len())?;
        let outputs = Outputs {
            result: &mut self.result,
            partials: &mut self.partials,
            ticket: &mut self.ticket,
        };
        let identity = T::identity_word(op);
        queue_single_pass::<F, T>(
            &self.device,
            &self.kernels[&op],
            config,
            &[input.into()],
            input.len(),
            identity,
            outputs,
        )
    }

    fn queue_wide_sum(&mut self, input: DeviceView<'_, T>) -> Result<()> {
        let config = self.config(input.len())?;
        let outputs = Outputs {
            result: &mut self.wide_result,
            partials: &mut self.wide_partials,
            ticket: &mut self.ticket,
        };
        queue_single_pass::<F, T::Wide>(
            &self.device,
            &self.wide,
            config,
            &[input.into()],
            input.len(),
            0,
            outputs,
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

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes): the f32 sum with each finish.
pub fn steps() -> Vec<StepEntry> {
    let crate_name = env!("CARGO_PKG_NAME");
    vec![
        measured::on_device::<AtomicReduce<f32>>(crate_name, Atomic::STEP),
        measured::on_device::<DeterministicReduce<f32>>(crate_name, LastBlock::STEP),
    ]
}
