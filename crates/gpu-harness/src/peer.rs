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

use crate::{Device, DeviceBuffer, GpuError, Result};

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
                "no peer library: build it on a machine with nvcc (scripts/build-peers) and set \
                 {PEERS_VARIABLE} to it"
            ))
        })?;
        // Loading runs the library's initialisers (the CUDA runtime's): trusted, built from
        // scripts/.
        let library = unsafe { libloading::Library::new(&path) }
            .map_err(|e| GpuError::Unsupported(format!("peer library {}: {e}", path.display())))?;
        Ok(PeerLibrary { library, path })
    }

    /// The function `symbol`, of C type `F` (an `unsafe extern "C" fn`).
    ///
    /// # Safety
    /// `F` must be the function's true signature.
    pub unsafe fn function<F: Copy>(&self, symbol: &str) -> Result<F> {
        let found = unsafe { self.library.get::<F>(symbol.as_bytes()) }.map_err(|e| {
            GpuError::Unsupported(format!("{} has no `{symbol}`: {e}", self.path.display()))
        })?;
        Ok(*found)
    }
}

/// Turns a peer function's return code into a result.
pub fn check_peer(symbol: &str, code: c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(GpuError::Launch {
            kernel: symbol.to_string(),
            message: format!("CUDA runtime error {code}"),
        })
    }
}

/// A raw stream handle as peer functions take it.
pub type RawStream = *mut c_void;

/// The stream peers run on: the device's own, so they queue behind the same work as our steps. The
/// CPU simulator has none: peers are NVIDIA's compiled libraries.
pub fn peer_stream(device: &Device) -> Result<RawStream> {
    device
        .raw_stream()
        .ok_or_else(|| GpuError::Unsupported("peers run on a GPU, not on the CPU simulator".into()))
}

/// The function `symbol` of the peer library, of C type `F`.
///
/// # Safety
/// `F` must be the function's true signature (`scripts/peers/*.cu`).
pub unsafe fn peer_function<F: Copy>(symbol: &str) -> Result<F> {
    unsafe { PeerLibrary::shared()?.function(symbol) }
}

/// A peer function with its arguments bound, called as `(temp, temp_bytes)`.
type BoundCall = Box<dyn FnMut(*mut c_void, &mut u64) -> c_int>;

/// One peer call bound to its arguments, with its scratch allocated once: `call(temp, temp_bytes)`
/// calls the library function with the other arguments it captured.
pub struct PeerCall {
    symbol: &'static str,
    call: BoundCall,
    temp: DeviceBuffer<u8>,
}

impl PeerCall {
    /// CUB's two-call protocol: a first call with a null `temp` only writes the scratch it needs to
    /// `temp_bytes`; that much is allocated here, once, and every later call gets it.
    pub fn with_scratch(
        device: &Device,
        symbol: &'static str,
        mut call: impl FnMut(*mut c_void, &mut u64) -> c_int + 'static,
    ) -> Result<PeerCall> {
        let mut temp_bytes = 0u64;
        check_peer(symbol, call(std::ptr::null_mut(), &mut temp_bytes))?;
        let temp = device.alloc::<u8>(temp_bytes.max(1) as usize)?;
        Ok(PeerCall { symbol, call: Box::new(call), temp })
    }

    /// A function with no scratch (cuBLAS, the seeds' kernels): `call` ignores both arguments.
    pub fn new(
        device: &Device,
        symbol: &'static str,
        call: impl FnMut(*mut c_void, &mut u64) -> c_int + 'static,
    ) -> Result<PeerCall> {
        Ok(PeerCall { symbol, call: Box::new(call), temp: device.alloc::<u8>(1)? })
    }

    /// Queues one call on the device's stream.
    pub fn queue(&mut self) -> Result<()> {
        let mut temp_bytes = self.temp.len() as u64;
        let temp = self.temp.as_view().raw_address() as *mut c_void;
        check_peer(self.symbol, (self.call)(temp, &mut temp_bytes))
    }

    pub fn symbol(&self) -> &'static str {
        self.symbol
    }
}
