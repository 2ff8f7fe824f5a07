//! Operators in one launch: the full reduction with any built-in [`Operator`] (sum, product, min,
//! max, argmin, argmax, all, any, bitwise and/or/xor; `reduction::operators`), finished by the
//! last block (`cuda/reduce_atomic_operators.cu`).
//!
//! An extra beside the step, which is [`crate::DeterministicReduce`]'s sum: the same last-block
//! finish (partials, a ticket, the last block combines them in a fixed order, so the same input
//! gives the same bits every run) over the operator templates of `cuda/operators.cuh`, each thread
//! reading its share as reduce-multi-level's operators do. The atomic finish does not generalise:
//! the hardware has atomics for a few operators of a few types. The semantics are
//! `reduction::operators`' (numpy's and torch's), tested by the family's operator suite.

use std::collections::HashMap;
use std::marker::PhantomData;

use gpu_harness::{Device, DeviceBuffer, DeviceView, Kernel, KernelSource, Result, kernel_source};
use reduction::operators::{
    MAX_VALUE_WORDS, Operator, OperatorElement, OperatorFamily, OperatorReduction, Reduced, decode,
    empty, no_kernels,
};
use reduction::{DeviceFinish, POISON_WORD, ReductionPlan};

const SOURCE: KernelSource = kernel_source!("reduce_atomic_operators.cu");

// ANCHOR: reduce
/// The full reduction of `T` in one launch with any built-in [`Operator`] this type has kernels
/// for.
pub struct Reduce<T: OperatorElement> {
    device: Device,
    kernels: HashMap<Operator, Kernel>,
    /// One value (up to [`MAX_VALUE_WORDS`] words) per block.
    partials: DeviceBuffer<u32>,
    ticket: DeviceBuffer<u32>,
    result: DeviceBuffer<u32>,
    _element: PhantomData<T>,
}

impl<T: OperatorElement> Reduce<T> {
    /// Loads the kernels of every operator of `T` (compiled once per process); the ticket counter
    /// starts at 0 (a new buffer is zeroed) and every launch leaves it 0.
    pub fn new(device: &Device) -> Result<Self> {
        let mut kernels = HashMap::new();
        for &op in T::OPERATORS {
            let name = format!("last_block_{}_{}", op.name(), T::SUFFIX);
            kernels.insert(op, device.kernel(&SOURCE, &name)?);
        }
        Ok(Reduce {
            device: device.clone(),
            kernels,
            partials: device.alloc(0)?,
            ticket: device.alloc(1)?,
            result: device.alloc(MAX_VALUE_WORDS)?,
            _element: PhantomData,
        })
    }

    /// Grows the partials to what `n` elements need (never inside a warmed-up loop).
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let blocks = self.plan(n).passes.first().map_or(0, |p| p.outputs as usize);
        if self.partials.len() < blocks * MAX_VALUE_WORDS {
            self.partials = self.device.alloc(blocks * MAX_VALUE_WORDS)?;
        }
        Ok(())
    }
}

impl<T: OperatorElement> OperatorReduction<T> for Reduce<T> {
    fn create(device: &Device) -> Result<Self> {
        Self::new(device)
    }

    /// The plan for `n` elements on this device: one launch, finished by the last block.
    fn plan(&self, n: usize) -> ReductionPlan {
        ReductionPlan {
            finish: DeviceFinish::LastBlock,
            ..crate::plan("last_block_<op>_<type>", n, self.device.facts().shape())
        }
    }

    /// Sizes the partials for `n` elements and fills them and the result with [`POISON_WORD`].
    fn poison_scratch(&mut self, n: usize) -> Result<()> {
        self.reserve(n)?;
        self.partials.fill_words(POISON_WORD)?;
        self.result.fill_words(POISON_WORD)
    }

    /// `op` over `input`; only the result is read back. An operator without an identity (min, max,
    /// argmin, argmax) over an empty input, or one `T` has no kernels for, is a
    /// [`gpu_harness::GpuError::BadInput`].
    fn reduce(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<Reduced<T>> {
        if input.is_empty() {
            self.kernels.get(&op).ok_or_else(|| no_kernels::<T>(op))?;
            return empty(op);
        }
        self.queue(op, input)?;
        Ok(decode(op, &self.result.to_host()?))
    }

    /// Queues `op` over `input` (not empty); the result stays on the device (for timing).
    fn queue(&mut self, op: Operator, input: DeviceView<'_, T>) -> Result<()> {
        self.reserve(input.len())?;
        let config = self.plan(input.len()).passes[0].config;
        let kernel = self.kernels.get(&op).ok_or_else(|| no_kernels::<T>(op))?;
        self.device
            .launch(kernel, config)
            .arg(input)
            .arg(&mut self.partials)
            .arg(&mut self.ticket)
            .arg(&mut self.result)
            .arg(input.len() as u64)
            .run()
    }
}
// ANCHOR_END: reduce

/// [`Reduce`] of every element type.
pub struct OneLaunchOperators;
impl OperatorFamily for OneLaunchOperators {
    type For<T: OperatorElement> = Reduce<T>;
}
