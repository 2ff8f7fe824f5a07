//! Every way the plumbing can fail, as one typed error with a message that says what to do.

use std::fmt;

/// The one command that installs NVRTC for this workspace (the folders it installs into are
/// searched without any environment variable).
pub const PIP_INSTALL_NVRTC: &str = "python3 -m pip install --user nvidia-cuda-nvrtc";

/// Result type used throughout the workspace.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;

/// An error from the GPU plumbing or from a launcher's input checks.
///
/// Library code returns these instead of panicking: a missing driver, a missing GPU, a kernel that
/// does not compile and an input that a kernel cannot handle are all ordinary outcomes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// `libcuda.so` could not be loaded: no NVIDIA driver on this machine.
    #[error("no NVIDIA driver: could not load {library} (install the driver to run kernels)")]
    NoDriver { library: String },

    /// The driver loaded but reports no usable CUDA device.
    #[error("the NVIDIA driver loaded but found no CUDA device: {reason}")]
    NoDevice { reason: String },

    /// `libnvrtc.so` could not be loaded, so kernels cannot be compiled.
    #[error(
        "NVRTC not found; install it with `{PIP_INSTALL_NVRTC}` (nothing else to set), or the CUDA \
         toolkit (looked in {tried})"
    )]
    NoCompiler { tried: String },

    /// NVRTC rejected a kernel source. `line` is the first line NVRTC reported an error on.
    #[error(
        "{file}:{line}: kernel failed to compile; NVRTC's log:\n{log}",
        line = line.map_or("?".to_string(), |l| l.to_string())
    )]
    Compile { file: String, line: Option<u32>, log: String },

    /// Neither backend can run kernels here: no usable GPU, and no NVRTC for the CPU simulator.
    #[error("no CUDA GPU ({gpu}) and no CPU simulator ({simulator})")]
    NoBackend { gpu: String, simulator: String },

    /// A library loaded at run time (NCCL, say) is not installed; `install` says how to get it.
    #[error("{library} not found: {install}")]
    NoLibrary { library: String, install: String },

    /// A kernel named by a launcher is not in its compiled module.
    #[error("kernel `{kernel}` not found in {file}: is it declared `extern \"C\" __global__`?")]
    MissingKernel { file: String, kernel: String },

    /// A driver call failed (allocation, copy, module load, event, synchronisation).
    #[error("CUDA driver call {call} failed: {message}")]
    Driver { call: &'static str, message: String },

    /// A launch's arguments do not match the kernel's parameters (their number or a size).
    #[error(
        "kernel `{kernel}` launched with the wrong arguments: {problem} (do the launcher's \
         `.arg(..)` calls match the kernel's signature?)"
    )]
    Arguments { kernel: String, problem: String },

    /// A launch failed, or the kernel faulted while it ran.
    #[error("kernel `{kernel}` failed: {message}")]
    Launch { kernel: String, message: String },

    /// `GPU_PROFILE` names a GPU this device or this NVRTC cannot stand in for.
    #[error("GPU_PROFILE={profile}: {problem}")]
    Profile { profile: String, problem: String },

    /// A launch asks for more than the GPU of `GPU_PROFILE` allows (`limit` says what and how much).
    #[error(
        "kernel `{kernel}` asks for more than a {profile} allows (GPU_PROFILE={profile}): {limit}"
    )]
    ExceedsProfile { kernel: String, profile: String, limit: String },

    /// The input is larger than this kernel's indexing can address.
    #[error("{what}: {n} elements is more than this kernel can index (at most {max})")]
    TooLarge { what: String, n: u64, max: u64 },

    /// Something this backend cannot do (timing on the CPU simulator, say).
    #[error("unsupported here: {0}")]
    Unsupported(String),

    /// Any other input the launcher cannot accept, with the reason.
    #[error("bad input: {0}")]
    BadInput(String),
}

impl GpuError {
    /// True for the errors that mean "this machine cannot run kernels" rather than "this code is
    /// wrong".
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            GpuError::NoDriver { .. }
                | GpuError::NoDevice { .. }
                | GpuError::NoCompiler { .. }
                | GpuError::NoBackend { .. }
                | GpuError::NoLibrary { .. }
        )
    }

    pub(crate) fn driver(call: &'static str, err: impl fmt::Display) -> Self {
        GpuError::Driver { call, message: err.to_string() }
    }
}
