//! The device handle, its facts, device buffers, kernels and launches.
//!
//! Launchers use only the types in this module (and [`crate::KernelSource`]); none of them names a
//! cudarc type. Behind them are two backends: a CUDA GPU (through cudarc), and a CPU simulator
//! (`ptx-sim`) that executes the same kernels' PTX and counts what they do, chosen with
//! `GPU_BACKEND=cpu`. The simulator does not time kernels.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, PushKernelArg,
    ValidAsZeroBits, sys,
};
use cudarc::nvrtc::Ptx;
use serde::{Deserialize, Serialize};

use crate::compile::{self, KernelSource, OwnedDefines, Target};
use crate::error::{GpuError, Result};

/// Element types that can live in a [`DeviceBuffer`]. Sealed: implemented for the plain numeric
/// types the kernels use.
pub trait Element: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static + sealed::Sealed {}
mod sealed {
    pub trait Sealed {}
}
macro_rules! elements {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl Element for $t {})* };
}
elements!(f32, f64, i32, u32, i64, u64, u8, u16);

/// What a benchmark or a reader needs to know about the GPU the numbers came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFacts {
    pub name: String,
    /// (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    pub multiprocessors: u32,
    /// Threads that can be resident on one SM at once (2048 on A100, H100 and H200).
    #[serde(default = "default_threads_per_multiprocessor")]
    pub max_threads_per_multiprocessor: u32,
    pub l2_cache_bytes: u64,
    pub memory_bytes: u64,
    /// Memory clock in MHz, where the driver reports it.
    pub memory_clock_mhz: Option<f64>,
    /// Memory bus width in bits, where the driver reports it.
    pub memory_bus_bits: Option<u32>,
    /// The CUDA version the driver supports, e.g. "13.0".
    pub driver_cuda_version: String,
    /// The driver's release, e.g. "580.159.04", where the OS exposes it.
    pub driver_release: Option<String>,
    /// The NVRTC that compiles the kernels, e.g. "13.0".
    pub nvrtc_version: String,
}

fn default_threads_per_multiprocessor() -> u32 {
    2048
}

/// What launch plans need to know about a GPU: how many SMs, and how many threads each holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuShape {
    pub multiprocessors: u32,
    pub max_threads_per_multiprocessor: u32,
}

impl GpuShape {
    /// An H100 SXM or H200: 132 SMs of 2048 threads. Launch-plan snapshots use this shape.
    pub const HOPPER_132_SMS: GpuShape = GpuShape { multiprocessors: 132, max_threads_per_multiprocessor: 2048 };

    /// Blocks of `threads` that fill every SM once: the grid of a grid-stride kernel.
    pub fn resident_blocks(&self, threads: u32) -> u32 {
        self.multiprocessors * (self.max_threads_per_multiprocessor / threads.max(1)).max(1)
    }

    /// Threads of one full wave of blocks of `threads`: where a grid-stride loop starts its second
    /// stride (tests put sizes around it).
    pub fn threads_in_one_wave(&self, threads: u32) -> usize {
        self.resident_blocks(threads) as usize * threads as usize
    }
}

impl DeviceFacts {
    /// The SM count and threads per SM that launch plans use.
    pub fn shape(&self) -> GpuShape {
        GpuShape {
            multiprocessors: self.multiprocessors,
            max_threads_per_multiprocessor: self.max_threads_per_multiprocessor,
        }
    }

    /// Theoretical DRAM bandwidth in GB/s (10^9 bytes/s): two transfers per memory clock
    /// (double data rate) times the bus width in bytes.
    pub fn theoretical_bandwidth_gbs(&self) -> Option<f64> {
        let clock_hz = self.memory_clock_mhz? * 1e6;
        let bus_bytes = f64::from(self.memory_bus_bits?) / 8.0;
        Some(2.0 * clock_hz * bus_bytes / 1e9)
    }
}

/// A handle to a CUDA GPU (the first, unless opened by ordinal): its context, the one stream all
/// work queued through this handle goes to, its facts and the kernels loaded on it. Cheap to clone.
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    facts: DeviceFacts,
    /// The GPU's ordinal (0 for the first), or the simulator's index in its world.
    ordinal: usize,
    backend: Backend,
}

type ModuleKey = (KernelSource, OwnedDefines);

/// Where kernels run.
enum Backend {
    Cuda(CudaBackend),
    Cpu(CpuBackend),
}

struct CudaBackend {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    target: Target,
    /// Shared with the handle's forks (same context, so the same loaded modules serve them).
    modules: Arc<Mutex<HashMap<ModuleKey, LoadedModule>>>,
}

/// A module loaded on the GPU, with the PTX NVRTC produced beside it (for the kernels' parameter
/// lists, which launches are checked against).
type LoadedModule = (Arc<CudaModule>, Option<Arc<String>>);

/// The CPU simulator: one simulated global memory, the parsed PTX modules, and the counters of the
/// last launch.
struct CpuBackend {
    /// Shared with the handle's forks: one simulated device, one memory.
    machine: Arc<Mutex<ptx_sim::Machine>>,
    modules: Arc<Mutex<HashMap<ModuleKey, Arc<ptx_sim::Module>>>>,
    last_counters: Arc<Mutex<Option<LaunchCounters>>>,
}

/// What the CPU simulator counted during one launch: warp instructions, divergence, barriers,
/// shared-memory bank conflicts, global-memory coalescing, atomics.
pub type LaunchCounters = ptx_sim::LaunchStats;

/// Locks a mutex even if another thread panicked while holding it (the data stays usable).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The module cached under `key`, built by `build` (and cached) the first time it is asked for.
fn cached<M: Clone>(
    cache: &Mutex<HashMap<ModuleKey, M>>,
    key: ModuleKey,
    build: impl FnOnce() -> Result<M>,
) -> Result<M> {
    let mut modules = lock(cache);
    if let Some(module) = modules.get(&key) {
        return Ok(module.clone());
    }
    let module = build()?;
    modules.insert(key, module.clone());
    Ok(module)
}

fn sim_error(what: &str, e: ptx_sim::SimError) -> GpuError {
    GpuError::Launch { kernel: what.to_string(), message: e.to_string() }
}

/// The bytes of a slice of plain numeric elements.
fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    // Elements are sealed plain numeric types: no padding, every byte initialised.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
}

/// Elements from their bytes (`bytes.len()` a multiple of the element size).
fn from_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    let mut values = vec![T::default(); bytes.len() / std::mem::size_of::<T>()];
    // Every bit pattern is a valid value of the sealed numeric element types.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            values.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(&values[..]),
        )
    };
    values
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("facts", &self.inner.facts).finish()
    }
}

impl Device {
    /// The process-wide handle to GPU 0, opened on first use. Every test and bench shares it, so
    /// kernels are loaded once per process.
    pub fn shared() -> Result<Device> {
        static SHARED: OnceLock<Result<Device>> = OnceLock::new();
        SHARED.get_or_init(Device::open).clone()
    }

    /// Opens GPU 0 when there is one, otherwise the CPU simulator (which needs NVRTC but no GPU).
    /// `GPU_BACKEND=cpu` picks the simulator and `GPU_BACKEND=cuda` the GPU, whatever is present;
    /// `CUDA_REQUIRED=1` also insists on the GPU. Fails with a typed error, never a panic, when
    /// what is needed is missing.
    pub fn open() -> Result<Device> {
        let chosen = std::env::var("GPU_BACKEND").ok();
        let gpu_required = std::env::var("CUDA_REQUIRED").as_deref() == Ok("1");
        match (chosen.as_deref(), gpu_required) {
            (Some("cpu"), true) => {
                Err(GpuError::BadInput("GPU_BACKEND=cpu and CUDA_REQUIRED=1 contradict each other".into()))
            }
            (Some("cpu"), false) => Device::simulator(),
            (Some("cuda"), _) | (None, true) => Device::open_gpu(),
            (None, false) => match Device::open_gpu() {
                Err(gpu_error) if gpu_error.is_unavailable() => Device::simulator().map_err(|simulator_error| {
                    GpuError::NoBackend { gpu: gpu_error.to_string(), simulator: simulator_error.to_string() }
                }),
                result => result,
            },
            (Some(other), _) => Err(GpuError::BadInput(format!("GPU_BACKEND={other}: expected `cuda` or `cpu`"))),
        }
    }

    /// A fresh CPU simulator (its own memory), whatever hardware is present. Needs NVRTC.
    pub fn simulator() -> Result<Device> {
        open_cpu()
    }

    /// Opens GPU 0 (never the simulator).
    pub fn open_gpu() -> Result<Device> {
        Device::open_gpu_ordinal(0)
    }

    /// How many CUDA GPUs the driver reports (an error when there is no driver).
    pub fn gpu_count() -> Result<usize> {
        catch_driver_panic(driver_gpu_count)
    }

    /// Opens GPU `ordinal` (0 for the first), with its own handle, stream and kernel cache.
    pub fn open_gpu_ordinal(ordinal: usize) -> Result<Device> {
        catch_driver_panic(|| open_uncaught(ordinal))
    }

    /// A second handle to this device with its own stream: work queued through the two handles
    /// runs concurrently unless ordered with events ([`Device::record`], [`Device::wait_for`]).
    /// Buffers and kernels of either handle work on both. On the CPU simulator, which runs each
    /// operation to completion, the fork is the same simulated device.
    pub fn fork(&self) -> Result<Device> {
        let backend = match &self.inner.backend {
            Backend::Cuda(cuda) => Backend::Cuda(CudaBackend {
                context: cuda.context.clone(),
                stream: cuda.context.new_stream().map_err(|e| GpuError::driver("cuStreamCreate", e))?,
                target: cuda.target,
                modules: cuda.modules.clone(),
            }),
            Backend::Cpu(cpu) => Backend::Cpu(CpuBackend {
                machine: cpu.machine.clone(),
                modules: cpu.modules.clone(),
                last_counters: cpu.last_counters.clone(),
            }),
        };
        Ok(Device { inner: Arc::new(Inner { facts: self.inner.facts.clone(), ordinal: self.inner.ordinal, backend }) })
    }

    /// The GPU's ordinal (0 for the first); on the simulator, its index in a simulated world.
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// Whether buffers of `other` live in this device's memory (the same device, or a fork of it).
    pub fn shares_memory_with(&self, other: &Device) -> bool {
        match (&self.inner.backend, &other.inner.backend) {
            (Backend::Cuda(a), Backend::Cuda(b)) => Arc::ptr_eq(&a.context, &b.context),
            (Backend::Cpu(a), Backend::Cpu(b)) => Arc::ptr_eq(&a.machine, &b.machine),
            _ => false,
        }
    }

    /// Lets kernels and copies of this GPU reach `peer`'s memory directly (over NVLink or PCIe),
    /// where the hardware allows. Returns whether it does; copies between GPUs work either way
    /// (the driver stages them through the host otherwise). Always false on the simulator.
    pub fn enable_peer_access(&self, peer: &Device) -> Result<bool> {
        let (Backend::Cuda(cuda), Backend::Cuda(other)) = (&self.inner.backend, &peer.inner.backend) else {
            return Ok(false);
        };
        if Arc::ptr_eq(&cuda.context, &other.context) {
            return Ok(true);
        }
        let mut can = 0;
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, cuda.context.cu_device(), other.context.cu_device()) }
            .result()
            .map_err(|e| GpuError::driver("cuDeviceCanAccessPeer", e))?;
        if can == 0 {
            return Ok(false);
        }
        cuda.context.bind_to_thread().map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
        match unsafe { sys::cuCtxEnablePeerAccess(other.context.cu_ctx(), 0) } {
            sys::cudaError_enum::CUDA_SUCCESS | sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
            error => return Err(GpuError::driver("cuCtxEnablePeerAccess", format!("{error:?}"))),
        }
        // Buffers come from the peer's memory pool (cuMemAllocAsync), which peer access does not
        // cover: the pool must grant this GPU access too, or copies are staged through the host.
        let mut pool = std::ptr::null_mut();
        unsafe { sys::cuDeviceGetMemPool(&mut pool, other.context.cu_device()) }
            .result()
            .map_err(|e| GpuError::driver("cuDeviceGetMemPool", e))?;
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: cuda.context.ordinal() as i32,
            },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }
            .result()
            .map_err(|e| GpuError::driver("cuMemPoolSetAccess", e))?;
        Ok(true)
    }

    /// A marker to record on this device's stream and wait for on any device's stream.
    pub fn event(&self) -> Result<Event> {
        match &self.inner.backend {
            Backend::Cuda(cuda) => Ok(Event(Some(
                cuda.context
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                    .map_err(|e| GpuError::driver("cuEventCreate", e))?,
            ))),
            Backend::Cpu(_) => Ok(Event(None)),
        }
    }

    /// Records in `event` the work queued on this handle's stream so far (replacing what it held).
    /// `event` must come from this device or a fork of it.
    pub fn record(&self, event: &Event) -> Result<()> {
        match (&self.inner.backend, &event.0) {
            (Backend::Cuda(cuda), Some(event)) => {
                event.record(&cuda.stream).map_err(|e| GpuError::driver("cuEventRecord", e))
            }
            (Backend::Cpu(_), None) => Ok(()), // the simulator finishes each operation before the next
            _ => Err(GpuError::BadInput("an event recorded on another backend's device".into())),
        }
    }

    /// Makes work queued on this handle's stream from now on wait for what `event` recorded (on
    /// any device). Waiting for an event never recorded waits for nothing.
    pub fn wait_for(&self, event: &Event) -> Result<()> {
        match (&self.inner.backend, &event.0) {
            (Backend::Cuda(cuda), Some(event)) => {
                cuda.stream.wait(event).map_err(|e| GpuError::driver("cuStreamWaitEvent", e))
            }
            (Backend::Cpu(_), None) => Ok(()),
            _ => Err(GpuError::BadInput("an event waited for on another backend's device".into())),
        }
    }

    /// Copies `src` into `dst` starting at element `at`, queued on this handle's stream. `src` and
    /// `dst` may live on different GPUs (a peer-to-peer copy); this device must hold one of them.
    pub fn copy_into<T: Element>(&self, src: DeviceView<'_, T>, dst: &mut DeviceBuffer<T>, at: usize) -> Result<()> {
        if at.checked_add(src.len()).is_none_or(|end| end > dst.len()) {
            return Err(GpuError::BadInput(format!(
                "copy of {} elements at {at} into a buffer of {}",
                src.len(),
                dst.len()
            )));
        }
        let (from_device, to_device) = (&src.buffer.device, &dst.device);
        if !self.shares_memory_with(from_device) && !self.shares_memory_with(to_device) {
            return Err(GpuError::BadInput("a copy queued on a device that holds neither of its buffers".into()));
        }
        if src.is_empty() {
            return Ok(());
        }
        let bytes = src.len() * std::mem::size_of::<T>();
        let from = src.device_address();
        let to = dst.as_view().device_address() + (at * std::mem::size_of::<T>()) as u64;
        match (&self.inner.backend, &from_device.inner.backend, &to_device.inner.backend) {
            (Backend::Cuda(cuda), Backend::Cuda(source), Backend::Cuda(target)) => {
                cuda.context.bind_to_thread().map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
                if Arc::ptr_eq(&source.context, &target.context) {
                    unsafe { cudarc::driver::result::memcpy_dtod_async(to, from, bytes, cuda.stream.cu_stream()) }
                        .map_err(|e| GpuError::driver("cuMemcpyDtoDAsync", e))
                } else {
                    unsafe {
                        cudarc::driver::result::memcpy_peer_async(
                            target.context.cu_ctx(),
                            to,
                            source.context.cu_ctx(),
                            from,
                            bytes,
                            cuda.stream.cu_stream(),
                        )
                    }
                    .map_err(|e| GpuError::driver("cuMemcpyPeerAsync", e))
                }
            }
            (Backend::Cpu(_), Backend::Cpu(source), Backend::Cpu(target)) => {
                if Arc::ptr_eq(&source.machine, &target.machine) {
                    lock(&source.machine).copy(from, to, bytes).map_err(|e| sim_error("copy", e))
                } else {
                    let data = lock(&source.machine).read(from, bytes).map_err(|e| sim_error("copy", e))?;
                    lock(&target.machine).write(to, &data).map_err(|e| sim_error("copy", e))
                }
            }
            _ => Err(GpuError::BadInput("a copy between buffers of different backends".into())),
        }
    }

    /// The stream all work goes to, as a raw `CUstream` (the same handle as a runtime
    /// `cudaStream_t`), for code outside this workspace; `None` on the CPU simulator.
    pub fn raw_stream(&self) -> Option<*mut std::ffi::c_void> {
        match &self.inner.backend {
            Backend::Cuda(cuda) => Some(cuda.stream.cu_stream().cast()),
            Backend::Cpu(_) => None,
        }
    }

    /// Facts about this GPU and its software.
    pub fn facts(&self) -> &DeviceFacts {
        &self.inner.facts
    }

    /// Whether `other` is a handle to this same device (buffers of one can be used on the other).
    pub fn is_same(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// True on the CPU simulator: kernels run and are counted, but not timed.
    pub fn is_simulated(&self) -> bool {
        matches!(self.inner.backend, Backend::Cpu(_))
    }

    /// On the CPU simulator, what the last launch did; `None` on a GPU.
    pub fn last_launch_counters(&self) -> Option<LaunchCounters> {
        match &self.inner.backend {
            Backend::Cpu(cpu) => lock(&cpu.last_counters).clone(),
            Backend::Cuda(_) => None,
        }
    }

    /// Loads kernel `name` from `source`, compiled for this device (cached per process).
    pub fn kernel(&self, source: &KernelSource, name: &str) -> Result<Kernel> {
        self.kernel_with_defines(source, name, &[])
    }

    /// Like [`Device::kernel`], compiling with `-D NAME=VALUE` for each define (for compile-time
    /// constants such as a block size).
    pub fn kernel_with_defines(&self, source: &KernelSource, name: &str, defines: &[(&str, String)]) -> Result<Kernel> {
        let key = (*source, compile::owned_defines(defines));
        let missing = || GpuError::MissingKernel { file: source.file.to_string(), kernel: name.to_string() };
        let backend = match &self.inner.backend {
            Backend::Cuda(cuda) => {
                let (module, ptx) = cached(&cuda.modules, key, || {
                    let image = compile::compile(source, cuda.target, defines)?;
                    let loadable = match image.target {
                        Target::Cubin { .. } => Ptx::from_binary(image.bytes.clone()),
                        Target::Ptx { .. } => Ptx::from_src(ptx_text(&image.bytes)),
                    };
                    let module =
                        cuda.context.load_module(loadable).map_err(|e| GpuError::driver("cuModuleLoadData", e))?;
                    Ok((module, image.ptx_text().map(Arc::new)))
                })?;
                let function = module.load_function(name).map_err(|_| missing())?;
                let sizes = ptx.and_then(|ptx| compile::ptx_param_sizes(&ptx, name));
                (KernelBackend::Cuda(function), sizes)
            }
            Backend::Cpu(cpu) => {
                let module = cached(&cpu.modules, key, || {
                    let image = compile::compile(source, Target::Ptx { major: 9, minor: 0 }, defines)?;
                    let module = ptx_sim::parse(&ptx_text(&image.bytes)).map_err(|e| sim_error(source.file, e))?;
                    Ok(Arc::new(module))
                })?;
                let sizes = module.kernel(name).ok_or_else(missing)?.params.iter().map(|p| p.size as usize).collect();
                (KernelBackend::Cpu(module), Some(sizes))
            }
        };
        let (backend, param_sizes) = backend;
        Ok(Kernel { backend, name: name.to_string(), param_sizes })
    }

    /// A zero-filled buffer of `len` elements.
    pub fn alloc<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let storage = match &self.inner.backend {
            Backend::Cuda(cuda) => Storage::Cuda(
                if len == 0 { cuda.stream.null() } else { cuda.stream.alloc_zeros(len) }
                    .map_err(|e| GpuError::driver("cuMemAlloc", e))?,
            ),
            Backend::Cpu(cpu) => {
                let bytes = len
                    .checked_mul(std::mem::size_of::<T>())
                    .ok_or_else(|| GpuError::BadInput(format!("a buffer of {len} elements does not fit in memory")))?;
                let address = lock(&cpu.machine).alloc(bytes).map_err(|e| sim_error("alloc", e))?;
                Storage::Cpu { address, len, element: PhantomData }
            }
        };
        Ok(DeviceBuffer { storage, device: self.clone() })
    }

    /// A buffer holding a copy of `host`.
    pub fn upload<T: Element>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        if let Backend::Cuda(cuda) = &self.inner.backend {
            if !host.is_empty() {
                let slice = cuda.stream.clone_htod(host).map_err(|e| GpuError::driver("cuMemcpyHtoD", e))?;
                return Ok(DeviceBuffer { storage: Storage::Cuda(slice), device: self.clone() });
            }
        }
        let mut buffer = self.alloc(host.len())?;
        buffer.copy_from_host(host)?;
        Ok(buffer)
    }

    /// Starts describing a launch of `kernel`; add its arguments in order, then [`Launch::run`].
    pub fn launch<'a>(&'a self, kernel: &'a Kernel, config: LaunchConfig) -> Launch<'a> {
        Launch { device: self, kernel, config, args: Vec::new() }
    }

    /// Copies `src` into the start of `dst` on the device (device-to-device, asynchronous).
    pub fn copy<T: Element>(&self, src: DeviceView<'_, T>, dst: &mut DeviceBuffer<T>) -> Result<()> {
        self.copy_into(src, dst, 0)
    }

    /// Waits for all queued work; reports a kernel fault that happened meanwhile.
    pub fn synchronize(&self) -> Result<()> {
        match &self.inner.backend {
            Backend::Cuda(cuda) => cuda.stream.synchronize().map_err(|e| GpuError::driver("cuStreamSynchronize", e)),
            Backend::Cpu(_) => Ok(()), // the simulator runs each launch to completion
        }
    }

    /// Device time, in milliseconds, of the work that `work` queues, measured with CUDA events
    /// recorded before and after it on the device's stream.
    pub fn time_ms(&self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        let Backend::Cuda(cuda) = &self.inner.backend else {
            return Err(GpuError::Unsupported("timing needs a GPU: the CPU simulator counts, it does not time".into()));
        };
        let context = &cuda.context;
        let event = || {
            context
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| GpuError::driver("cuEventCreate", e))
        };
        let (start, end) = (event()?, event()?);
        start.record(&cuda.stream).map_err(|e| GpuError::driver("cuEventRecord", e))?;
        work()?;
        end.record(&cuda.stream).map_err(|e| GpuError::driver("cuEventRecord", e))?;
        let ms = start.elapsed_ms(&end).map_err(|e| GpuError::driver("cuEventElapsedTime", e))?;
        Ok(f64::from(ms))
    }
}

/// Runs `open`, turning a panic of cudarc's (it panics when a library or symbol it needs is
/// missing) into an error too.
fn catch_driver_panic<R>(open: impl FnOnce() -> Result<R> + std::panic::UnwindSafe) -> Result<R> {
    match std::panic::catch_unwind(open) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown failure".into());
            Err(GpuError::NoDriver { library: format!("the CUDA driver API ({message})") })
        }
    }
}

/// How many GPUs the driver reports; an error when the driver library is missing.
fn driver_gpu_count() -> Result<usize> {
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoDriver { library: "libcuda.so.1".into() });
    }
    CudaContext::device_count().map(|c| c.max(0) as usize).map_err(|e| GpuError::NoDevice { reason: e.to_string() })
}

fn open_uncaught(ordinal: usize) -> Result<Device> {
    let count = driver_gpu_count()?;
    if count < 1 {
        return Err(GpuError::NoDevice { reason: "the driver reports 0 devices".into() });
    }
    if ordinal >= count {
        return Err(GpuError::NoDevice { reason: format!("GPU {ordinal} asked for, the driver reports {count}") });
    }
    let context = CudaContext::new(ordinal).map_err(|e| GpuError::NoDevice { reason: e.to_string() })?;
    // One stream, used in order, so cudarc's per-buffer event tracking (meant for several
    // streams) would only add host work to every launch.
    unsafe { context.disable_event_tracking() };
    let stream = context.default_stream();

    let attribute = |attr| context.attribute(attr).map_err(|e| GpuError::driver("cuDeviceGetAttribute", e));
    use sys::CUdevice_attribute_enum as A;
    let major = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32;
    let minor = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
    let positive = |v: i32| (v > 0).then_some(v);
    let mut driver_version = 0;
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .map_err(|e| GpuError::driver("cuDriverGetVersion", e))?;
    let (nvrtc_major, nvrtc_minor) = compile::nvrtc_version()?;
    let facts = DeviceFacts {
        name: context.name().map_err(|e| GpuError::driver("cuDeviceGetName", e))?,
        compute_capability: (major, minor),
        multiprocessors: attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        max_threads_per_multiprocessor: attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
        l2_cache_bytes: attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        memory_bytes: context.total_mem().map_err(|e| GpuError::driver("cuDeviceTotalMem", e))? as u64,
        memory_clock_mhz: attribute(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
            .ok()
            .and_then(positive)
            .map(|khz| f64::from(khz) / 1000.0),
        memory_bus_bits: attribute(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
            .ok()
            .and_then(positive)
            .map(|b| b as u32),
        driver_cuda_version: format!("{}.{}", driver_version / 1000, (driver_version % 1000) / 10),
        driver_release: driver_release(),
        nvrtc_version: format!("{nvrtc_major}.{nvrtc_minor}"),
    };
    let target = compile::target_for_device(major, minor)?;
    let cuda = CudaBackend { context, stream, target, modules: Arc::new(Mutex::new(HashMap::new())) };
    Ok(Device { inner: Arc::new(Inner { facts, ordinal, backend: Backend::Cuda(cuda) }) })
}

/// The CPU simulator as a device: it needs NVRTC (for PTX) but no GPU. Its shape is a small GPU (4
/// SMs of 2048 threads), so grid-stride plans stay short; its memory is capped at 8 GiB.
fn open_cpu() -> Result<Device> {
    let (nvrtc_major, nvrtc_minor) = compile::nvrtc_version()?;
    let facts = DeviceFacts {
        name: "ptx-sim (CPU simulator)".into(),
        compute_capability: (9, 0),
        multiprocessors: 4,
        max_threads_per_multiprocessor: 2048,
        l2_cache_bytes: 0,
        memory_bytes: 8 << 30,
        memory_clock_mhz: None,
        memory_bus_bits: None,
        driver_cuda_version: "none".into(),
        driver_release: None,
        nvrtc_version: format!("{nvrtc_major}.{nvrtc_minor}"),
    };
    let cpu = CpuBackend {
        machine: Arc::new(Mutex::new(ptx_sim::Machine::new())),
        modules: Arc::new(Mutex::new(HashMap::new())),
        last_counters: Arc::new(Mutex::new(None)),
    };
    Ok(Device { inner: Arc::new(Inner { facts, ordinal: 0, backend: Backend::Cpu(cpu) }) })
}

/// PTX text from NVRTC's NUL-terminated bytes.
fn ptx_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim_end_matches('\0').to_string()
}

/// The kernel module's release number from `/proc/driver/nvidia/version` (Linux), if readable.
fn driver_release() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    text.lines()
        .next()?
        .split_whitespace()
        .find(|word| {
            word.split('.').count() >= 2
                && word.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// A buffer of `T` in device memory, freed when dropped.
pub struct DeviceBuffer<T: Element> {
    storage: Storage<T>,
    device: Device,
}

enum Storage<T> {
    Cuda(CudaSlice<T>),
    Cpu { address: u64, len: usize, element: PhantomData<T> },
}

impl<T: Element> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if let (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) = (&self.storage, &self.device.inner.backend) {
            // A failed free only leaks simulated memory; there is nothing better to do in drop.
            let _ = lock(&cpu.machine).free(*address);
        }
    }
}

impl<T: Element> DeviceBuffer<T> {
    /// The device the buffer lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Cuda(slice) => slice.len(),
            Storage::Cpu { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole buffer as a view.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView { buffer: self, offset: 0, len: self.len() }
    }

    /// A sub-range of the buffer, like `&slice[range]`, or an error if it is out of bounds.
    pub fn view(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e + 1,
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len(),
        };
        if start > end || end > self.len() {
            return Err(GpuError::BadInput(format!("view {start}..{end} of a buffer of {} elements", self.len())));
        }
        Ok(DeviceView { buffer: self, offset: start, len: end - start })
    }

    /// Copies the buffer back to the host (waits for queued work first).
    pub fn to_host(&self) -> Result<Vec<T>> {
        self.as_view().to_host()
    }

    /// Overwrites the buffer with `host`, which must have the same length.
    pub fn copy_from_host(&mut self, host: &[T]) -> Result<()> {
        if host.len() != self.len() {
            return Err(GpuError::BadInput(format!(
                "copy of {} host elements into a buffer of {}",
                host.len(),
                self.len()
            )));
        }
        if host.is_empty() {
            return Ok(());
        }
        match (&mut self.storage, &self.device.inner.backend) {
            (Storage::Cuda(slice), Backend::Cuda(cuda)) => {
                cuda.stream.memcpy_htod(host, slice).map_err(|e| GpuError::driver("cuMemcpyHtoD", e))
            }
            (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) => {
                lock(&cpu.machine).write(*address, as_bytes(host)).map_err(|e| sim_error("copy to device", e))
            }
            _ => Err(GpuError::BadInput("a buffer used with another device's backend".into())),
        }
    }

    /// Overwrites `host.len()` elements starting at element `offset` with `host`.
    pub fn write_at(&mut self, offset: usize, host: &[T]) -> Result<()> {
        let end = offset.checked_add(host.len()).filter(|&end| end <= self.len()).ok_or_else(|| {
            GpuError::BadInput(format!(
                "a write of {} elements at {offset} into a buffer of {}",
                host.len(),
                self.len()
            ))
        })?;
        if host.is_empty() {
            return Ok(());
        }
        match (&mut self.storage, &self.device.inner.backend) {
            (Storage::Cuda(slice), Backend::Cuda(cuda)) => {
                let mut view = slice.slice_mut(offset..end);
                cuda.stream.memcpy_htod(host, &mut view).map_err(|e| GpuError::driver("cuMemcpyHtoD", e))
            }
            (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) => {
                let at = *address + (offset * std::mem::size_of::<T>()) as u64;
                lock(&cpu.machine).write(at, as_bytes(host)).map_err(|e| sim_error("copy to device", e))
            }
            _ => Err(GpuError::BadInput("a buffer used with another device's backend".into())),
        }
    }

    /// Sets every 32-bit word of the buffer to `word` on the device's stream, without a host copy
    /// and without waiting. For element types whose size is a multiple of 4 bytes.
    pub fn fill_words(&mut self, word: u32) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if size % 4 != 0 {
            return Err(GpuError::BadInput(format!("fill_words on {size}-byte elements")));
        }
        if self.is_empty() {
            return Ok(());
        }
        let words = self.len() * size / 4;
        match (&mut self.storage, &self.device.inner.backend) {
            (Storage::Cuda(slice), Backend::Cuda(cuda)) => {
                cuda.context.bind_to_thread().map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
                let (address, _write) = slice.device_ptr_mut(&cuda.stream);
                unsafe { sys::cuMemsetD32Async(address, word, words, cuda.stream.cu_stream()) }
                    .result()
                    .map_err(|e| GpuError::driver("cuMemsetD32Async", e))
            }
            (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) => {
                let bytes: Vec<u8> = std::iter::repeat_n(word.to_le_bytes(), words).flatten().collect();
                lock(&cpu.machine).write(*address, &bytes).map_err(|e| sim_error("fill", e))
            }
            _ => Err(GpuError::BadInput("a buffer used with another device's backend".into())),
        }
    }

    /// Sets every element to `value`; tests use it to poison outputs before a launch.
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.copy_from_host(&vec![value; self.len()])
    }
}

/// A borrowed range of a [`DeviceBuffer`], what launchers take as input.
#[derive(Clone, Copy)]
pub struct DeviceView<'a, T: Element> {
    buffer: &'a DeviceBuffer<T>,
    offset: usize,
    len: usize,
}

impl<'a, T: Element> DeviceView<'a, T> {
    /// The device the viewed buffer lives on.
    pub fn device(&self) -> &'a Device {
        &self.buffer.device
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Offset of the first element from the start of its buffer, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Copies the viewed elements back to the host (waits for queued work first).
    pub fn to_host(&self) -> Result<Vec<T>> {
        if self.len == 0 {
            return Ok(Vec::new());
        }
        match (&self.buffer.storage, &self.buffer.device.inner.backend) {
            (Storage::Cuda(slice), Backend::Cuda(cuda)) => {
                let mut host = vec![T::default(); self.len];
                let view = slice.slice(self.offset..self.offset + self.len);
                cuda.stream.memcpy_dtoh(&view, &mut host).map_err(|e| GpuError::driver("cuMemcpyDtoH", e))?;
                cuda.stream.synchronize().map_err(|e| GpuError::driver("cuStreamSynchronize", e))?;
                Ok(host)
            }
            (Storage::Cpu { .. }, Backend::Cpu(cpu)) => {
                let bytes = lock(&cpu.machine)
                    .read(self.device_address(), self.len * std::mem::size_of::<T>())
                    .map_err(|e| sim_error("copy to host", e))?;
                Ok(from_bytes(&bytes))
            }
            _ => Err(GpuError::BadInput("a buffer used with another device's backend".into())),
        }
    }

    /// The address of the view's first element on the device, for code outside this workspace that
    /// takes raw pointers (a peer library, cuBLAS). Meaningless on the CPU simulator.
    pub fn raw_address(&self) -> u64 {
        self.device_address()
    }

    fn device_address(&self) -> u64 {
        let base = match (&self.buffer.storage, &self.buffer.device.inner.backend) {
            (Storage::Cuda(slice), Backend::Cuda(cuda)) => slice.device_ptr(&cuda.stream).0,
            (Storage::Cpu { address, .. }, _) => *address,
            (Storage::Cuda(_), Backend::Cpu(_)) => 0, // cannot happen: buffers come from their device
        };
        base + (self.offset * std::mem::size_of::<T>()) as u64
    }
}

impl<'a, T: Element> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buffer: &'a DeviceBuffer<T>) -> Self {
        buffer.as_view()
    }
}

/// A point in a device's stream that other streams (of any device) can wait for: made by
/// [`Device::event`], set by [`Device::record`], waited for by [`Device::wait_for`]. A no-op on the
/// CPU simulator, which finishes every operation before the next starts.
pub struct Event(Option<cudarc::driver::CudaEvent>);

/// A compiled kernel, loaded on a device.
pub struct Kernel {
    backend: KernelBackend,
    name: String,
    /// The size in bytes of each parameter, in order, from the kernel's PTX (always there on the
    /// simulator; beside the CUBIN where this NVRTC keeps it): launches are checked against it.
    param_sizes: Option<Vec<usize>>,
}

enum KernelBackend {
    Cuda(CudaFunction),
    Cpu(Arc<ptx_sim::Module>),
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Grid and block shape of a launch, and its dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchConfig {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A one-dimensional launch.
    pub fn linear(grid: u32, block: u32, shared_bytes: u32) -> Self {
        LaunchConfig { grid: (grid, 1, 1), block: (block, 1, 1), shared_bytes }
    }
}

/// One kernel argument: a device address or a scalar, built with `From`.
#[derive(Clone, Copy)]
pub struct KernelArg(ArgValue);

#[derive(Clone, Copy)]
enum ArgValue {
    Address(u64),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
}

impl ArgValue {
    /// Size in bytes as a kernel parameter (an address is a 64-bit pointer).
    fn size(self) -> usize {
        match self {
            ArgValue::Address(_) | ArgValue::U64(_) | ArgValue::I64(_) => 8,
            ArgValue::U32(_) | ArgValue::I32(_) | ArgValue::F32(_) => 4,
        }
    }

    /// What the argument is, for error messages.
    fn describe(self) -> String {
        match self {
            ArgValue::Address(_) => "a device buffer (an 8-byte pointer)".into(),
            ArgValue::U32(x) => format!("the u32 {x} (4 bytes)"),
            ArgValue::I32(x) => format!("the i32 {x} (4 bytes)"),
            ArgValue::U64(x) => format!("the u64 {x} (8 bytes)"),
            ArgValue::I64(x) => format!("the i64 {x} (8 bytes)"),
            ArgValue::F32(x) => format!("the f32 {x} (4 bytes)"),
        }
    }
}

impl<T: Element> From<DeviceView<'_, T>> for KernelArg {
    fn from(view: DeviceView<'_, T>) -> Self {
        KernelArg(ArgValue::Address(view.device_address()))
    }
}
impl<T: Element> From<&DeviceBuffer<T>> for KernelArg {
    fn from(buffer: &DeviceBuffer<T>) -> Self {
        buffer.as_view().into()
    }
}
impl<T: Element> From<&mut DeviceBuffer<T>> for KernelArg {
    fn from(buffer: &mut DeviceBuffer<T>) -> Self {
        buffer.as_view().into()
    }
}
macro_rules! scalar_args {
    ($($t:ty => $v:ident),*) => { $(impl From<$t> for KernelArg { fn from(x: $t) -> Self { KernelArg(ArgValue::$v(x)) } })* };
}
scalar_args!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32);

/// A launch being described: [`Device::launch`], then `.arg(..)` per kernel parameter, then `.run()`.
#[must_use = "a launch does nothing until .run()"]
pub struct Launch<'a> {
    device: &'a Device,
    kernel: &'a Kernel,
    config: LaunchConfig,
    args: Vec<KernelArg>,
}

impl Launch<'_> {
    /// Checks the arguments against the kernel's parameters (their number and each one's size),
    /// where the backend knows them: a mismatch would otherwise crash the kernel or read garbage.
    fn check_arguments(&self) -> Result<()> {
        let Some(sizes) = &self.kernel.param_sizes else { return Ok(()) };
        let kernel = self.kernel.name.clone();
        if sizes.len() != self.args.len() {
            return Err(GpuError::Arguments {
                kernel,
                problem: format!("it takes {} parameter(s), the launch passes {}", sizes.len(), self.args.len()),
            });
        }
        for (index, (&size, KernelArg(value))) in sizes.iter().zip(&self.args).enumerate() {
            if size != value.size() {
                return Err(GpuError::Arguments {
                    kernel,
                    problem: format!("parameter {index} is {size} bytes, the launch passes {}", value.describe()),
                });
            }
        }
        Ok(())
    }

    /// Appends the next kernel parameter (a buffer, a view or a scalar).
    pub fn arg(mut self, arg: impl Into<KernelArg>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Queues the kernel on the device's stream. Errors in the launch itself are reported here;
    /// faults while the kernel runs are reported by the next synchronising call.
    pub fn run(self) -> Result<()> {
        let LaunchConfig { grid, block, shared_bytes } = self.config;
        let fail = |message: String| GpuError::Launch { kernel: self.kernel.name.clone(), message };
        if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 || block.0 == 0 || block.1 == 0 || block.2 == 0 {
            return Err(fail(format!("empty launch: grid {grid:?}, block {block:?}")));
        }
        self.check_arguments()?;
        match (&self.kernel.backend, &self.device.inner.backend) {
            (KernelBackend::Cuda(function), Backend::Cuda(cuda)) => {
                let mut builder = cuda.stream.launch_builder(function);
                for KernelArg(value) in &self.args {
                    match value {
                        ArgValue::Address(a) => builder.arg(a),
                        ArgValue::U32(x) => builder.arg(x),
                        ArgValue::I32(x) => builder.arg(x),
                        ArgValue::U64(x) => builder.arg(x),
                        ArgValue::I64(x) => builder.arg(x),
                        ArgValue::F32(x) => builder.arg(x),
                    };
                }
                let config =
                    cudarc::driver::LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: shared_bytes };
                unsafe { builder.launch(config) }.map(|_| ()).map_err(|e| fail(e.to_string()))
            }
            (KernelBackend::Cpu(module), Backend::Cpu(cpu)) => {
                let params: Vec<ptx_sim::ParamValue> = self
                    .args
                    .iter()
                    .map(|KernelArg(value)| match *value {
                        ArgValue::Address(a) | ArgValue::U64(a) => ptx_sim::ParamValue::U64(a),
                        ArgValue::U32(x) => ptx_sim::ParamValue::U32(x),
                        ArgValue::I32(x) => ptx_sim::ParamValue::I32(x),
                        ArgValue::I64(x) => ptx_sim::ParamValue::I64(x),
                        ArgValue::F32(x) => ptx_sim::ParamValue::F32(x),
                    })
                    .collect();
                let counters = lock(&cpu.machine)
                    .launch(module, &self.kernel.name, grid, block, shared_bytes, &params)
                    .map_err(|e| fail(e.to_string()))?;
                *lock(&cpu.last_counters) = Some(counters);
                Ok(())
            }
            _ => Err(fail("a kernel used with another device's backend".into())),
        }
    }
}
