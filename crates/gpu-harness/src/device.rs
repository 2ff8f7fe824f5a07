//! The device handle: which backend runs the kernels, opening it, its facts and its kernel cache.
//!
//! Launchers use only the types of this module and its submodules (and [`crate::KernelSource`]);
//! none of them names a cudarc type. Behind them are two backends: a CUDA GPU (through cudarc), and
//! a CPU simulator (`ptx-sim`) that executes the same kernels' PTX and counts what they do, chosen
//! with `GPU_BACKEND=cpu`. The simulator does not time kernels.
//!
//! - `device.rs` (this file): [`Device`] and its two backends, opening one ([`Device::open`],
//!   [`Device::shared`], [`Device::simulator`]), kernels compiled by NVRTC and cached per device
//!   ([`Device::kernel`]), and what the simulator records of its launches.
//! - `device/facts.rs`: [`DeviceFacts`] and the [`GpuShape`] launch plans use.
//! - `device/buffer.rs`: [`DeviceBuffer`], [`DeviceView`], [`Element`]; fills, copies to and from
//!   the host and on the device.
//! - `device/launch.rs`: [`Kernel`], [`LaunchConfig`], [`KernelArg`], [`Launch`], checked against
//!   the kernel's parameters.
//! - `device/timing.rs`: [`Device::synchronize`] and [`Device::time_ms`] (CUDA events).
//! - `device/multi_gpu.rs`: what only reduce-multi-gpu uses: GPUs by ordinal, simulated worlds
//!   (devices sharing one simulated memory), forks, peer access, [`Event`]s across devices, copies
//!   between GPUs.
//! - `device/pinned.rs`: [`PinnedBuffer`], page-locked host memory the copy engines read directly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaModule, CudaStream, sys};
use cudarc::nvrtc::Ptx;

use crate::compile::{self, KernelSource, OwnedDefines, Target};
use crate::error::{GpuError, Result};
use crate::profiles::GpuProfile;

mod buffer;
mod facts;
mod launch;
mod multi_gpu;
mod pinned;
mod timing;

pub use buffer::{DeviceBuffer, DeviceView, Element};
pub use facts::{DeviceFacts, GpuShape};
pub use launch::{Kernel, KernelArg, Launch, LaunchConfig, launch_together};
use launch::{KernelBackend, KernelFootprint};
pub use multi_gpu::{Event, Transfers};
pub use pinned::PinnedBuffer;

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
    /// The GPU `GPU_PROFILE` named, which this device stands in for: its architecture is what the
    /// kernels compile for, its shape is in `facts`, its limits are checked at every launch.
    profile: Option<&'static GpuProfile>,
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

/// The CPU simulator: one simulated global memory, the parsed PTX modules, the counters of the
/// last launch and the kernels launched (with their counters) since [`Device::take_launches`].
struct CpuBackend {
    /// The simulated global memory the device's buffers live in, shared with the handle's forks,
    /// and in a simulated world ([`Device::simulated_world`]) with the world's other devices.
    machine: Arc<Mutex<ptx_sim::Machine>>,
    /// Shared with the handle's forks and nothing else: what tells this simulated device from the
    /// others of its world, which share its machine.
    identity: Arc<()>,
    modules: Arc<Mutex<HashMap<ModuleKey, Arc<ptx_sim::Module>>>>,
    last_counters: Arc<Mutex<Option<LaunchCounters>>>,
    /// Shared with the handle's forks, like the counters.
    launched: Arc<Mutex<Vec<(String, LaunchCounters)>>>,
    /// The copies between this device and others (multi_gpu.rs), shared with the handle's forks.
    transfers: Arc<Mutex<Transfers>>,
    /// This handle's stream on the model of those copies' time (multi_gpu.rs): its own, not its
    /// forks' (each fork is another stream); clones share it.
    clock: Arc<Mutex<u64>>,
    /// What the kernels compile to: PTX for compute_90, or for the architecture of `GPU_PROFILE`.
    target: Target,
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
            (Some("cpu"), true) => Err(GpuError::BadInput(
                "GPU_BACKEND=cpu and CUDA_REQUIRED=1 contradict each other".into(),
            )),
            (Some("cpu"), false) => Device::simulator(),
            (Some("cuda"), _) | (None, true) => Device::open_gpu(),
            (None, false) => match Device::open_gpu() {
                Err(gpu_error) if gpu_error.is_unavailable() => {
                    Device::simulator().map_err(|simulator_error| GpuError::NoBackend {
                        gpu: gpu_error.to_string(),
                        simulator: simulator_error.to_string(),
                    })
                }
                result => result,
            },
            (Some(other), _) => {
                Err(GpuError::BadInput(format!("GPU_BACKEND={other}: expected `cuda` or `cpu`")))
            }
        }
    }

    /// A fresh CPU simulator (its own memory), whatever hardware is present. Needs NVRTC.
    pub fn simulator() -> Result<Device> {
        open_cpu()
    }

    /// A fresh CPU simulator standing in for `profile`'s GPU, whatever `GPU_PROFILE` says: kernels
    /// compile for its architecture and launches are checked against its limits.
    pub fn simulator_as(profile: &'static GpuProfile) -> Result<Device> {
        open_cpu_as(Arc::new(Mutex::new(ptx_sim::Machine::new())), 0, Some(profile))
    }

    /// Opens GPU 0 (never the simulator). Other GPUs: [`Device::open_gpu_ordinal`].
    pub fn open_gpu() -> Result<Device> {
        catch_driver_panic(|| open_uncaught(0))
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

    /// The GPU this device stands in for (`GPU_PROFILE`), if any: its architecture, shape and
    /// limits are this device's (see [`crate::profiles`]).
    pub fn profile(&self) -> Option<&'static GpuProfile> {
        self.inner.profile
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

    /// On the CPU simulator, the names of the kernels launched on this device since the last call,
    /// in launch order, and forgets them: it exists so that a test can check which kernel a step
    /// launches. Clones and forks of the device share the list. On a GPU nothing is recorded (no
    /// cost in timed loops) and it returns an empty `Vec`.
    pub fn take_launched_kernels(&self) -> Vec<String> {
        self.take_launches().into_iter().map(|(name, _)| name).collect()
    }

    /// Like [`Device::take_launched_kernels`], with what the simulator counted in each launch: the
    /// counters of everything a step queued, launch by launch (the course's grader adds them up).
    pub fn take_launches(&self) -> Vec<(String, LaunchCounters)> {
        match &self.inner.backend {
            Backend::Cpu(cpu) => std::mem::take(&mut *lock(&cpu.launched)),
            Backend::Cuda(_) => Vec::new(),
        }
    }

    /// On the CPU simulator, traces the launches that follow with `options` (what the warps of
    /// their first blocks did, instruction by instruction: `ptx_sim::LaunchTrace`), or stops
    /// (`None`); the counters are the same either way. Shared with every device of the simulated
    /// memory (forks, a world's devices). On a GPU nothing is traced.
    pub fn trace_launches(&self, options: Option<ptx_sim::TraceOptions>) {
        if let Backend::Cpu(cpu) = &self.inner.backend {
            lock(&cpu.machine).set_tracing(options);
        }
    }

    /// The traces of the launches traced since the last call (on the simulated memory this device
    /// shares), in launch order, and forgets them; empty on a GPU.
    pub fn take_traces(&self) -> Vec<ptx_sim::LaunchTrace> {
        match &self.inner.backend {
            Backend::Cpu(cpu) => lock(&cpu.machine).take_traces(),
            Backend::Cuda(_) => Vec::new(),
        }
    }

    /// Loads kernel `name` from `source`, compiled for this device (cached per process).
    pub fn kernel(&self, source: &KernelSource, name: &str) -> Result<Kernel> {
        self.kernel_with_defines(source, name, &[])
    }

    /// Like [`Device::kernel`], compiling with `-D NAME=VALUE` for each define (for compile-time
    /// constants such as a block size).
    pub fn kernel_with_defines(
        &self,
        source: &KernelSource,
        name: &str,
        defines: &[(&str, String)],
    ) -> Result<Kernel> {
        let key = (*source, compile::owned_defines(defines));
        let missing =
            || GpuError::MissingKernel { file: source.file.to_string(), kernel: name.to_string() };
        let backend = match &self.inner.backend {
            Backend::Cuda(cuda) => {
                let (module, ptx) = cached(&cuda.modules, key, || {
                    let image = compile::compile(source, cuda.target, defines)?;
                    let loadable = match image.target {
                        Target::Cubin { .. } => Ptx::from_binary(image.bytes.clone()),
                        Target::Ptx { .. } => Ptx::from_src(ptx_text(&image.bytes)),
                    };
                    let module = cuda.context.load_module(loadable).map_err(|e| {
                        let facts = &self.inner.facts;
                        let (driver, nvrtc) = (&facts.driver_cuda_version, &facts.nvrtc_version);
                        GpuError::module_load(e.0, e.to_string(), driver, nvrtc)
                    })?;
                    Ok((module, image.ptx_text().map(Arc::new)))
                })?;
                let function = module.load_function(name).map_err(|_| missing())?;
                let sizes = ptx.and_then(|ptx| compile::ptx_param_sizes(&ptx, name));
                let footprint = KernelFootprint {
                    registers_per_thread: function.num_regs().ok().map(|r| r.max(0) as u32),
                    static_shared_bytes: function
                        .get_attribute(
                            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                        )
                        .ok()
                        .map(|b| b.max(0) as u32),
                };
                (KernelBackend::Cuda(function), sizes, footprint)
            }
            Backend::Cpu(cpu) => {
                let module = cached(&cpu.modules, key, || {
                    let image = compile::compile(source, cpu.target, defines)?;
                    let module = ptx_sim::parse(&ptx_text(&image.bytes))
                        .map_err(|e| sim_error(source.file, e))?;
                    Ok(Arc::new(module))
                })?;
                let kernel = module.kernel(name).ok_or_else(missing)?;
                let sizes = kernel.params.iter().map(|p| p.size as usize).collect();
                // PTX's registers are virtual: how many a thread gets is the driver's choice.
                let footprint = KernelFootprint {
                    registers_per_thread: None,
                    static_shared_bytes: Some(kernel.static_shared_bytes),
                };
                (KernelBackend::Cpu(module), Some(sizes), footprint)
            }
        };
        let (backend, param_sizes, footprint) = backend;
        Ok(Kernel { backend, name: name.to_string(), param_sizes, footprint })
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
    CudaContext::device_count()
        .map(|c| c.max(0) as usize)
        .map_err(|e| GpuError::NoDevice { reason: e.to_string() })
}

fn open_uncaught(ordinal: usize) -> Result<Device> {
    let count = driver_gpu_count()?;
    if count < 1 {
        return Err(GpuError::NoDevice { reason: "the driver reports 0 devices".into() });
    }
    if ordinal >= count {
        return Err(GpuError::NoDevice {
            reason: format!("GPU {ordinal} asked for, the driver reports {count}"),
        });
    }
    let context =
        CudaContext::new(ordinal).map_err(|e| GpuError::NoDevice { reason: e.to_string() })?;
    // One stream, used in order, so cudarc's per-buffer event tracking (meant for several
    // streams) would only add host work to every launch.
    unsafe { context.disable_event_tracking() };
    let stream = context.default_stream();

    let attribute =
        |attr| context.attribute(attr).map_err(|e| GpuError::driver("cuDeviceGetAttribute", e));
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
        max_threads_per_multiprocessor: attribute(
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        )? as u32,
        l2_cache_bytes: attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        memory_bytes: context.total_mem().map_err(|e| GpuError::driver("cuDeviceTotalMem", e))?
            as u64,
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
    let profile = GpuProfile::from_env()?;
    let (facts, target) = match profile {
        None => (facts, compile::target_for_device(major, minor)?),
        Some(profile) => {
            profile.check_runs_on(&facts.name, (major, minor))?;
            (as_profile(facts, profile, false), profile_target(profile)?)
        }
    };
    let cuda =
        CudaBackend { context, stream, target, modules: Arc::new(Mutex::new(HashMap::new())) };
    let backend = Backend::Cuda(cuda);
    Ok(Device { inner: Arc::new(Inner { facts, ordinal, profile, backend }) })
}

/// The CPU simulator as a device with its own memory: [`open_cpu_on`] a new machine.
fn open_cpu() -> Result<Device> {
    open_cpu_on(Arc::new(Mutex::new(ptx_sim::Machine::new())), 0)
}

/// The CPU simulator as device `ordinal`, its buffers in `machine`'s memory: it needs NVRTC (for
/// PTX) but no GPU. Its shape is a small GPU (4 SMs of 2048 threads), so grid-stride plans stay
/// short; its memory is capped at 8 GiB. Under `GPU_PROFILE` it is the profile's GPU with 4 SMs.
fn open_cpu_on(machine: Arc<Mutex<ptx_sim::Machine>>, ordinal: usize) -> Result<Device> {
    open_cpu_as(machine, ordinal, GpuProfile::from_env()?)
}

/// [`open_cpu_on`], standing in for `profile`'s GPU where there is one.
fn open_cpu_as(
    machine: Arc<Mutex<ptx_sim::Machine>>,
    ordinal: usize,
    profile: Option<&'static GpuProfile>,
) -> Result<Device> {
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
    let (facts, target) = match profile {
        None => (facts, Target::Ptx { major: 9, minor: 0 }),
        Some(profile) => (as_profile(facts, profile, true), profile_target(profile)?),
    };
    let cpu = CpuBackend {
        machine,
        identity: Arc::new(()),
        modules: Arc::new(Mutex::new(HashMap::new())),
        last_counters: Arc::new(Mutex::new(None)),
        launched: Arc::new(Mutex::new(Vec::new())),
        transfers: Arc::new(Mutex::new(Transfers::default())),
        clock: Arc::new(Mutex::new(0)),
        target,
    };
    Ok(Device { inner: Arc::new(Inner { facts, ordinal, profile, backend: Backend::Cpu(cpu) }) })
}

/// `facts` of a device standing in for `profile`: its architecture, threads per SM and memory
/// (no more than the device has), and its SMs, but on the simulator, which keeps its 4 (so
/// grid-stride plans stay as short as without a profile). The L2 stays the device's: it is what
/// a measurement must flush.
fn as_profile(facts: DeviceFacts, profile: &GpuProfile, simulated: bool) -> DeviceFacts {
    DeviceFacts {
        name: format!("{} (GPU_PROFILE={})", facts.name, profile.name),
        compute_capability: profile.compute_capability,
        multiprocessors: if simulated { facts.multiprocessors } else { profile.multiprocessors },
        max_threads_per_multiprocessor: profile.max_threads_per_multiprocessor,
        memory_bytes: facts.memory_bytes.min(profile.memory_bytes),
        ..facts
    }
}

/// PTX for the profile's virtual architecture (`compute_XY`): the code under `__CUDA_ARCH__ < 900`
/// for a GPU before Hopper, compiled forward by the driver on a newer GPU. An error when this
/// NVRTC does not know the architecture.
fn profile_target(profile: &GpuProfile) -> Result<Target> {
    let (major, minor) = profile.compute_capability;
    if !compile::supported_archs()?.contains(&(major * 10 + minor)) {
        let (nvrtc_major, nvrtc_minor) = compile::nvrtc_version()?;
        return Err(GpuError::Profile {
            profile: profile.name.into(),
            problem: format!(
                "NVRTC {nvrtc_major}.{nvrtc_minor} cannot compile for compute_{major}{minor}; a \
                 newer NVRTC can (`{}`)",
                crate::PIP_INSTALL_NVRTC
            ),
        });
    }
    Ok(Target::Ptx { major, minor })
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
