//! The lean core every technique crate builds on, and nothing else:
//!
//! - [`Device`]: a CUDA GPU (the first, or any by ordinal; driver loaded at run time) or the CPU
//!   simulator, with forks (a second stream), [`Event`]s across devices, peer-to-peer copies, its
//!   [`DeviceFacts`], buffers, kernels compiled by NVRTC from embedded sources ([`KernelSource`],
//!   [`kernel_source!`]) and launches ([`Device::launch`]), checked against the kernel's parameters.
//! - [`GpuError`]: one typed error for everything that can fail, with messages that say what to do.
//! - [`measure`]: CUDA-event timing, effective bandwidth, and the copy and read roofs.
//! - [`workload`]: what the tour and the benches measure: a step ([`StepEntry`]) prepared on a
//!   [`Case`].
//! - [`peer`]: the shared library of peers (CUB, the seeds' kernels) loaded at run time.
//!
//! Test helpers live in `gpu-test`, bench helpers in `gpu-bench`, results, tables and charts in
//! `report`, and each family's shared code in its own crate (`reduction`).

pub mod compile;
mod device;
mod error;
pub mod measure;
pub mod peer;
pub mod workload;

pub use compile::KernelSource;
pub use device::{
    Device, DeviceBuffer, DeviceFacts, DeviceView, Element, Event, GpuShape, Kernel, KernelArg, Launch, LaunchConfig,
    LaunchCounters,
};
pub use error::{GpuError, PIP_INSTALL_NVRTC, Result};
pub use workload::{Case, Checked, Prepared, Shape, StepEntry};
