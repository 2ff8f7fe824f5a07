//! Peers: the libraries a step is compared with (NVIDIA's CUB and cuBLAS) and the seed documents'
//! own kernels, measured in the same run as the course's steps.
//!
//! CUB is a C++ template library, so its calls cannot be made from Rust directly: `scripts/peers/`
//! wraps each call the book compares with in a plain C function, and `scripts/build-peers` compiles
//! them with nvcc into one shared library. Pointing `COURSE_PEERS` at that library lets the tour
//! (and a bench) load it and time its functions like any step: with the same function, on the same
//! stream, against the roofs of the same run. Without it, peer steps are skipped with the reason.
//!
//! Every peer function returns a CUDA runtime error code (0 for success) and takes its stream last.

use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::{GpuError, Result};

/// The environment variable that names the peer library.
pub const PEERS_VARIABLE: &str = "COURSE_PEERS";

/// The loaded peer library.
pub struct PeerLibrary {
    library: libloading::Library,
    path: PathBuf,
}

impl PeerLibrary {
    /// The library `COURSE_PEERS` names, loaded once per process; an error saying how to build it
    /// when the variable is unset or the library does not load.
    pub fn shared() -> Result<Arc<PeerLibrary>> {
        static SHARED: OnceLock<Result<Arc<PeerLibrary>>> = OnceLock::new();
        SHARED.get_or_init(|| PeerLibrary::open_env().map(Arc::new)).clone()
    }

    fn open_env() -> Result<PeerLibrary> {
        let path = std::env::var_os(PEERS_VARIABLE).map(PathBuf::from).ok_or_else(|| {
            GpuError::Unsupported(format!(
                "no peer library: build it on a machine with nvcc (scripts/build-peers) and set {PEERS_VARIABLE} to it"
            ))
        })?;
        // Loading runs the library's initialisers (the CUDA runtime's): trusted, built from scripts/.
        let library = unsafe { libloading::Library::new(&path) }
            .map_err(|e| GpuError::Unsupported(format!("peer library {}: {e}", path.display())))?;
        Ok(PeerLibrary { library, path })
    }

    /// The function `symbol`, of C type `F` (an `unsafe extern "C" fn`).
    ///
    /// # Safety
    /// `F` must be the function's true signature.
    pub unsafe fn function<F: Copy>(&self, symbol: &str) -> Result<F> {
        let found = unsafe { self.library.get::<F>(symbol.as_bytes()) }
            .map_err(|e| GpuError::Unsupported(format!("{} has no `{symbol}`: {e}", self.path.display())))?;
        Ok(*found)
    }
}

/// Turns a peer function's return code into a result.
pub fn check_peer(symbol: &str, code: c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(GpuError::Launch { kernel: symbol.to_string(), message: format!("CUDA runtime error {code}") })
    }
}

/// A raw stream handle as peer functions take it.
pub type RawStream = *mut c_void;
