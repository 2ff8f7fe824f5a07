//! Every way the plumbing can fail, as one typed error with a message that says what to do.

use std::fmt;

/// The one command that installs NVRTC for this workspace (the folders it installs into are
/// searched without any environment variable).
pub const PIP_INSTALL_NVRTC: &str = "python3 -m pip install --user nvidia-cuda-nvrtc";

/// The pip command that installs the newest NVRTC a driver of CUDA `major.minor` can load the
/// output of (an NVRTC's PTX needs a driver of at least its CUDA version), or `None` for a driver
/// older than CUDA 12, which this workspace does not support: update the driver. The CUDA 13
/// wheel is `nvidia-cuda-nvrtc`; CUDA 12's is `nvidia-cuda-nvrtc-cu12`, and the CUDA 13 one must
/// go first (its `libnvrtc.so.13` would be found before `libnvrtc.so.12`).
pub fn pip_install_nvrtc_for_driver(major: u32, minor: u32) -> Option<String> {
    let next = minor + 1;
    match major {
        13.. => Some(format!(
            "python3 -m pip install --user \"nvidia-cuda-nvrtc>={major}.0,<{major}.{next}\""
        )),
        12 => Some(format!(
            "python3 -m pip uninstall -y nvidia-cuda-nvrtc && python3 -m pip install --user \
             \"nvidia-cuda-nvrtc-cu12<12.{next}\""
        )),
        _ => None,
    }
}

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

    /// The driver cannot load what NVRTC produced (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION` and kin):
    /// the NVRTC is newer than the driver's CUDA. `fix` says what to install.
    #[error(
        "the NVIDIA driver (CUDA {driver_cuda}) cannot load the kernels NVRTC {nvrtc} compiled \
         ({message}): the driver is older than the NVRTC. {fix}"
    )]
    DriverTooOld { driver_cuda: String, nvrtc: String, message: String, fix: String },

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

    /// A launch asks for more than the GPU of `GPU_PROFILE` allows (`limit`: what, and how much).
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

    /// The error of a module load that failed with `code` (`message`, the driver's words), on a
    /// driver of CUDA `driver_cuda` with NVRTC `nvrtc` (both "major.minor"):
    /// [`GpuError::DriverTooOld`] for a PTX version the driver does not know, or for a PTX or
    /// machine code it cannot load from an NVRTC newer than it; otherwise [`GpuError::Driver`].
    pub fn module_load(
        code: cudarc::driver::sys::CUresult,
        message: String,
        driver_cuda: &str,
        nvrtc: &str,
    ) -> Self {
        use cudarc::driver::sys::CUresult as R;
        let parse = |v: &str| -> Option<(u32, u32)> {
            let (major, minor) = v.split_once('.')?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        };
        let (driver, compiler) = (parse(driver_cuda), parse(nvrtc));
        let newer_nvrtc = matches!((driver, compiler), (Some(d), Some(c)) if c > d);
        let too_old = match code {
            R::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => true,
            R::CUDA_ERROR_INVALID_PTX
            | R::CUDA_ERROR_NO_BINARY_FOR_GPU
            | R::CUDA_ERROR_INVALID_IMAGE => newer_nvrtc,
            _ => false,
        };
        if !too_old {
            return GpuError::Driver { call: "cuModuleLoadData", message };
        }
        let fix = match driver.and_then(|(major, minor)| pip_install_nvrtc_for_driver(major, minor))
        {
            Some(command) => format!(
                "Install the NVRTC of the driver's CUDA: `{command}` (or update the NVIDIA driver)."
            ),
            None => {
                "Update the NVIDIA driver: this workspace needs one of CUDA 12 or later.".into()
            }
        };
        GpuError::DriverTooOld {
            driver_cuda: driver_cuda.to_string(),
            nvrtc: nvrtc.to_string(),
            message,
            fix,
        }
    }

    pub(crate) fn driver(call: &'static str, err: impl fmt::Display) -> Self {
        GpuError::Driver { call, message: err.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult as R;

    #[test]
    fn each_driver_gets_the_nvrtc_of_its_cuda() {
        let pip = pip_install_nvrtc_for_driver;
        assert_eq!(
            pip(13, 0).unwrap(),
            r#"python3 -m pip install --user "nvidia-cuda-nvrtc>=13.0,<13.1""#
        );
        assert!(pip(13, 2).unwrap().ends_with(r#""nvidia-cuda-nvrtc>=13.0,<13.3""#));
        assert_eq!(
            pip(12, 4).unwrap(),
            "python3 -m pip uninstall -y nvidia-cuda-nvrtc && python3 -m pip install --user \
             \"nvidia-cuda-nvrtc-cu12<12.5\""
        );
        assert!(pip(12, 0).unwrap().ends_with(r#""nvidia-cuda-nvrtc-cu12<12.1""#));
        assert_eq!(pip(11, 8), None);
    }

    #[test]
    fn a_module_the_driver_is_too_old_for_says_what_to_install() {
        let message = || "CUDA_ERROR_UNSUPPORTED_PTX_VERSION".to_string();
        let error =
            GpuError::module_load(R::CUDA_ERROR_UNSUPPORTED_PTX_VERSION, message(), "12.4", "13.0");
        assert_eq!(
            error.to_string(),
            "the NVIDIA driver (CUDA 12.4) cannot load the kernels NVRTC 13.0 compiled \
             (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): the driver is older than the NVRTC. Install \
             the NVRTC of the driver's CUDA: `python3 -m pip uninstall -y nvidia-cuda-nvrtc && \
             python3 -m pip install --user \"nvidia-cuda-nvrtc-cu12<12.5\"` (or update the NVIDIA \
             driver)."
        );
        // Kin: PTX or machine code the driver cannot load, from an NVRTC newer than it.
        for code in [
            R::CUDA_ERROR_INVALID_PTX,
            R::CUDA_ERROR_NO_BINARY_FOR_GPU,
            R::CUDA_ERROR_INVALID_IMAGE,
        ] {
            let error = GpuError::module_load(code, message(), "13.0", "13.1");
            assert!(matches!(error, GpuError::DriverTooOld { .. }), "{code:?}: {error}");
            assert!(error.to_string().contains(r#""nvidia-cuda-nvrtc>=13.0,<13.1""#), "{error}");
            // ... but from an NVRTC no newer than the driver, it is something else.
            let error = GpuError::module_load(code, message(), "13.1", "13.1");
            assert!(matches!(error, GpuError::Driver { .. }), "{code:?}: {error}");
        }
        let error =
            GpuError::module_load(R::CUDA_ERROR_UNSUPPORTED_PTX_VERSION, message(), "11.8", "13.0");
        assert!(
            error.to_string().ends_with(
                "Update the NVIDIA driver: this workspace needs one of CUDA 12 or later."
            )
        );
        let error = GpuError::module_load(R::CUDA_ERROR_OUT_OF_MEMORY, message(), "12.4", "13.0");
        assert!(matches!(error, GpuError::Driver { .. }), "{error}");
    }
}
