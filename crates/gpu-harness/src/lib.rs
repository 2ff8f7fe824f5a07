//! Plumbing shared by every technique crate of the workspace, kept in one place so that each
//! technique crate holds only its kernel and a short launcher:
//!
//! - [`Device`]: the first CUDA GPU (driver loaded at run time), its [`DeviceFacts`], buffers,
//!   kernels compiled by NVRTC from embedded sources ([`KernelSource`], [`kernel_source!`]) and
//!   launches ([`Device::launch`]).
//! - [`GpuError`]: one typed error for everything that can fail, with messages that say what to do.
//! - [`measure`]: CUDA-event timing, effective bandwidth and the measured copy roof line.
//! - [`testing`]: a test harness that reports GPU tests as ignored (with the reason) when there is no
//!   GPU, seeded random inputs, f64 references and checks that print the seed.
//! - [`reduction`]: the reduction ladder's launch plans, the launcher of host-finished steps
//!   ([`reduction::HostFinishedSum`]), and the shared sum suite.
//! - [`full`]: reductions finished on the device (operations, element types, traits) and their
//!   shared suite.
//! - [`bench`](mod@bench): criterion benches timed with CUDA events, writing a stable results file.
//! - [`report`]: the book's measured tables, rendered from results files.

pub mod bench;
pub mod compile;
mod device;
mod error;
pub mod full;
pub mod measure;
pub mod reduction;
pub mod report;
pub mod testing;

pub use compile::KernelSource;
pub use device::{
    Device, DeviceBuffer, DeviceFacts, DeviceView, Element, GpuShape, Kernel, KernelArg, Launch, LaunchConfig,
    LaunchCounters,
};
pub use error::{GpuError, Result};
