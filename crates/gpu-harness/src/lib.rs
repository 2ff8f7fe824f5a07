//! The lean core every technique crate builds on, and nothing else:
//!
//! - [`Device`] (`device.rs`): a CUDA GPU (driver loaded at run time) or the CPU simulator, opened
//!   once per process ([`Device::shared`]), and its kernels, compiled by NVRTC from embedded
//!   sources (`compile.rs`: [`KernelSource`], [`kernel_source!`]) and cached per device. Beside it,
//!   in `device/`: `facts.rs` ([`DeviceFacts`], [`GpuShape`]), `buffer.rs` ([`DeviceBuffer`],
//!   [`DeviceView`], copies to and from the host), `launch.rs` ([`Device::launch`], checked against
//!   the kernel's parameters), `timing.rs` ([`Device::time_ms`] with CUDA events,
//!   [`Device::synchronize`]) and `multi_gpu.rs`, what only reduce-multi-gpu uses (GPUs by ordinal,
//!   forks with a second stream, [`Event`]s across devices, peer access and peer-to-peer copies).
//! - [`GpuError`] (`error.rs`): one typed error for everything that can fail, with messages that
//!   say what to do.
//! - [`measure`]: CUDA-event timing, effective bandwidth, and the copy and read roofs.
//! - [`workload`]: what the tour and the benches measure: a step ([`StepEntry`]) prepared on a
//!   [`Case`].
//! - [`inputs`]: the random inputs steps are measured on, made once per type, case and seed.
//! - [`peer`]: the shared library of peers (CUB, the seeds' kernels) loaded at run time, and calls
//!   into it with CUB's scratch protocol ([`peer::PeerCall`]).
//! - [`profiles`]: GPUs as data ([`GpuProfile`]: architecture, shape, limits), and `GPU_PROFILE`,
//!   which runs an older GPU's code path and limits on a newer GPU or on the simulator.
//! - [`bf16`]: bfloat16 on the host, for the families that take f32 and bf16: the element trait
//!   [`bf16::Value`] and the conversions (the kernels' are in `cuda/bf16.cuh`).
//!
//! Test helpers live in `gpu-test`, bench helpers in `gpu-bench`, the measuring session, the
//! results format and its tables in `measuring`, the book's charts and pages in `report`, and each
//! family's shared code in its own crate (`reduction`).

pub mod bf16;
pub mod compile;
mod device;
mod error;
pub mod inputs;
pub mod measure;
pub mod peer;
pub mod profiles;
mod steps;
pub mod workload;

pub use compile::KernelSource;
pub use device::{
    Device, DeviceBuffer, DeviceFacts, DeviceView, Element, Event, GpuShape, Kernel, KernelArg,
    Launch, LaunchConfig, LaunchCounters, PinnedBuffer, Transfers, launch_together,
};
pub use error::{GpuError, PIP_INSTALL_NVRTC, Result};
pub use profiles::GpuProfile;
pub use workload::{Case, Checked, Measured, Prepared, Shape, Stateful, StepEntry};
