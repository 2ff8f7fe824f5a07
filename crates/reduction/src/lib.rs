//! # reduction: what the reduction family's crates share
//!
//! - [`plan`]: launch plans ([`ReductionPlan`]), pure functions of the input size and GPU shape;
//! - [`host_finished`]: the launcher of the ladder's first five steps, [`HostFinishedSum`], whose
//!   kernels leave one partial per block for the host; a step is its kernel and its plan
//!   ([`HostFinishedStep`]);
//! - [`full`]: reductions finished on the device: operations ([`ReduceOp`]), element types
//!   ([`ReduceElement`]) and the launcher trait ([`FullReduction`]);
//! - [`operators`]: operators as data (sum, product, min, max, argmin, argmax, all, any, bitwise),
//!   their element types, CPU reference and launcher trait, for the full reductions that take one;
//! - [`reference`]: CPU references and the f32 sum tolerance;
//! - [`measured`]: the steps' entries for the tour and the benches, and the peers measured beside
//!   them (CUB and seed 004's kernels);
//! - `suite` and `operator_suite` (feature `suite`): the shared test suites, for the family's
//!   tests.

pub mod full;
pub mod host_finished;
pub mod measured;
#[cfg(feature = "suite")]
pub mod operator_suite;
pub mod operators;
pub mod plan;
pub mod reference;
#[cfg(feature = "suite")]
pub mod suite;

pub use full::{FullReduction, POISON_WORD, ReduceElement, ReduceOp};
pub use host_finished::{HostFinishedStep, HostFinishedSum};
pub use plan::{
    DeviceFinish, PassPlan, ReductionPlan, blocks_covering, check_fits_u32, grid_stride_blocks,
    passes_chain,
};
