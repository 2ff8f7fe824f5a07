//! Plumbing shared by every technique crate of the workspace, kept in one place so that each
//! technique crate holds only its kernel and a short launcher:
//!
//! - [`Device`]: the first CUDA GPU (driver loaded at run time), its [`DeviceFacts`], buffers,
//!   kernels compiled by NVRTC from embedded sources ([`KernelSource`], [`kernel_source!`]) and
//!   launches ([`Device::launch`]).
//! - [`GpuError`]: one typed error for everything that can fail, with messages that say what to do.
//! - [`measure`]: CUDA-event timing, effective bandwidth and the measured copy roof line.
//! - [`testing`]: a test harness that reports GPU tests as ignored (with the reason) when there is no
//!   GPU, seeded random inputs, f64 references and the shared reduction suite.
//! - [`bench`]: criterion benches timed with CUDA events, writing a stable results file.

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
};
pub use error::{GpuError, Result};
