//! What only reduce-multi-gpu uses, kept apart from the single-GPU core every step uses: opening
//! every GPU by ordinal ([`Device::gpu_count`], [`Device::open_gpu_ordinal`]) or a simulated world
//! of them ([`Device::simulated_world`]), forks (a second stream on the same GPU,
//! [`Device::fork`]), peer access between GPUs (with the memory pool's access,
//! [`Device::enable_peer_access`]), [`Event`]s that order streams across devices, and the copies of
//! [`Device::copy_into`] between two GPUs' memories. It stays in gpu-harness because it reaches
//! into the device's backends (cudarc contexts, streams and the simulator's memory), which no crate
//! outside this module sees.
//!
//! A simulated world is `n` simulated devices whose buffers live in one simulated global memory
//! (one `ptx_sim::Machine`), as GPUs with peer access reach each other's: a kernel of device 0 may
//! dereference a pointer to device 1's buffer, and [`crate::launch_together`] runs one launch per
//! device interleaved, so that kernels waiting for each other's flags make progress. Each stays a
//! device of its own: its ordinal, its kernel cache and launch records, and copies between two of
//! them are copies between devices, counted and timed on the model below like any other.
//!
//! On the simulator, copies between devices are also counted ([`Device::transfers`]) and timed on a
//! model: a copy takes one tick per byte on the stream it is queued on, anything else (kernels,
//! copies within a device or with the host) none; recording an event stamps it with its stream's
//! clock and a wait moves a stream's clock up to the event's. Links are never shared, so the latest
//! end of a copy is the length, in bytes, of the longest chain of copies that wait for each other:
//! what a collective's copies cost when every link works at once.

use std::sync::{Arc, Mutex};

use cudarc::driver::sys;

use super::{
    Backend, CpuBackend, CudaBackend, Device, Inner, catch_driver_panic, driver_gpu_count, lock,
    open_cpu_on, open_uncaught, sim_error,
};
use crate::error::{GpuError, Result};

/// A point in a device's stream that other streams (of any device) can wait for: made by
/// [`Device::event`], set by [`Device::record`], waited for by [`Device::wait_for`]. The CPU
/// simulator finishes every operation before the next starts, so there it orders nothing: it
/// carries its stream's clock on the model of copies' time.
pub struct Event {
    cuda: Option<cudarc::driver::CudaEvent>,
    /// On the simulator: the recording stream's clock at its last record (0 before any).
    at: Mutex<u64>,
}

/// What the CPU simulator counted of the copies between one device and the others since it was
/// opened (shared by its forks): see the module's model of their time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Transfers {
    /// Copies from this device to another.
    pub copies_sent: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The model's time (ticks, one per byte copied) at which the last copy from or into this
    /// device ended.
    pub finished_at: u64,
}

impl Device {
    /// How many CUDA GPUs the driver reports (an error when there is no driver).
    pub fn gpu_count() -> Result<usize> {
        catch_driver_panic(driver_gpu_count)
    }

    /// Opens GPU `ordinal` (0 for the first), with its own handle, stream and kernel cache.
    pub fn open_gpu_ordinal(ordinal: usize) -> Result<Device> {
        catch_driver_panic(|| open_uncaught(ordinal))
    }

    /// `n` CPU simulators whose buffers live in one simulated global memory, as GPUs with peer
    /// access: kernels of one may read and write the others' buffers through their addresses, and
    /// [`crate::launch_together`] runs kernels that wait for each other on them. Each is a device
    /// of its own (ordinals 0 to `n - 1`, its own kernel cache, launch records and stream; it
    /// shares memory only with itself and its forks), and peer access between them is enabled.
    pub fn simulated_world(n: usize) -> Result<Vec<Device>> {
        let machine = Arc::new(Mutex::new(ptx_sim::Machine::new()));
        (0..n).map(|ordinal| open_cpu_on(machine.clone(), ordinal)).collect()
    }

    /// A second handle to this device with its own stream: work queued through the two handles
    /// runs concurrently unless ordered with events ([`Device::record`], [`Device::wait_for`]).
    /// Buffers and kernels of either handle work on both. On the CPU simulator, which runs each
    /// operation to completion, the fork is the same simulated device.
    pub fn fork(&self) -> Result<Device> {
        let backend = match &self.inner.backend {
            Backend::Cuda(cuda) => Backend::Cuda(CudaBackend {
                context: cuda.context.clone(),
                stream: cuda
                    .context
                    .new_stream()
                    .map_err(|e| GpuError::driver("cuStreamCreate", e))?,
                target: cuda.target,
                modules: cuda.modules.clone(),
            }),
            Backend::Cpu(cpu) => Backend::Cpu(CpuBackend {
                machine: cpu.machine.clone(),
                identity: cpu.identity.clone(),
                modules: cpu.modules.clone(),
                last_counters: cpu.last_counters.clone(),
                launched: cpu.launched.clone(),
                transfers: cpu.transfers.clone(),
                target: cpu.target,
                // A new stream: nothing queued on it yet, so it starts where its parent is now.
                clock: Arc::new(Mutex::new(*lock(&cpu.clock))),
            }),
        };
        Ok(Device {
            inner: Arc::new(Inner {
                facts: self.inner.facts.clone(),
                ordinal: self.inner.ordinal,
                profile: self.inner.profile,
                backend,
            }),
        })
    }

    /// The GPU's ordinal (0 for the first); on the simulator, its index in a simulated world.
    pub fn ordinal(&self) -> usize {
        self.inner.ordinal
    }

    /// Whether buffers of `other` live in this device's memory (the same device, or a fork of it).
    /// Devices of one simulated world share a machine but not their memories: false between them.
    pub fn shares_memory_with(&self, other: &Device) -> bool {
        match (&self.inner.backend, &other.inner.backend) {
            (Backend::Cuda(a), Backend::Cuda(b)) => Arc::ptr_eq(&a.context, &b.context),
            (Backend::Cpu(a), Backend::Cpu(b)) => a.is_same_device(b),
            _ => false,
        }
    }

    /// Lets kernels and copies of this GPU reach `peer`'s memory directly (over NVLink or PCIe),
    /// where the hardware allows. Returns whether it does; copies between GPUs work either way
    /// (the driver stages them through the host otherwise). On the simulator, true between devices
    /// of one simulated world ([`Device::simulated_world`]), whose kernels reach each other's
    /// buffers, and false between separate simulators.
    pub fn enable_peer_access(&self, peer: &Device) -> Result<bool> {
        let (cuda, other) = match (&self.inner.backend, &peer.inner.backend) {
            (Backend::Cuda(cuda), Backend::Cuda(other)) => (cuda, other),
            (Backend::Cpu(cpu), Backend::Cpu(other)) => return Ok(cpu.shares_machine_with(other)),
            _ => return Ok(false),
        };
        if Arc::ptr_eq(&cuda.context, &other.context) {
            return Ok(true);
        }
        let mut can = 0;
        unsafe {
            sys::cuDeviceCanAccessPeer(
                &mut can,
                cuda.context.cu_device(),
                other.context.cu_device(),
            )
        }
        .result()
        .map_err(|e| GpuError::driver("cuDeviceCanAccessPeer", e))?;
        if can == 0 {
            return Ok(false);
        }
        cuda.context.bind_to_thread().map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
        match unsafe { sys::cuCtxEnablePeerAccess(other.context.cu_ctx(), 0) } {
            sys::cudaError_enum::CUDA_SUCCESS
            | sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
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
        let cuda = match &self.inner.backend {
            Backend::Cuda(cuda) => Some(
                cuda.context
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                    .map_err(|e| GpuError::driver("cuEventCreate", e))?,
            ),
            Backend::Cpu(_) => None,
        };
        Ok(Event { cuda, at: Mutex::new(0) })
    }

    /// Records in `event` the work queued on this handle's stream so far (replacing what it held).
    /// `event` must come from this device or a fork of it.
    pub fn record(&self, event: &Event) -> Result<()> {
        match (&self.inner.backend, &event.cuda) {
            (Backend::Cuda(cuda), Some(event)) => {
                event.record(&cuda.stream).map_err(|e| GpuError::driver("cuEventRecord", e))
            }
            // The simulator finishes each operation before the next: only the model's clock moves.
            (Backend::Cpu(cpu), None) => {
                *lock(&event.at) = *lock(&cpu.clock);
                Ok(())
            }
            _ => Err(GpuError::BadInput("an event recorded on another backend's device".into())),
        }
    }

    /// Makes work queued on this handle's stream from now on wait for what `event` recorded (on
    /// any device). Waiting for an event never recorded waits for nothing.
    pub fn wait_for(&self, event: &Event) -> Result<()> {
        match (&self.inner.backend, &event.cuda) {
            (Backend::Cuda(cuda), Some(event)) => {
                cuda.stream.wait(event).map_err(|e| GpuError::driver("cuStreamWaitEvent", e))
            }
            (Backend::Cpu(cpu), None) => {
                let at = *lock(&event.at);
                let mut clock = lock(&cpu.clock);
                *clock = (*clock).max(at);
                Ok(())
            }
            _ => Err(GpuError::BadInput("an event waited for on another backend's device".into())),
        }
    }

    /// On the CPU simulator, what it counted of the copies between this device and others since
    /// it was opened (its forks' copies included); `None` on a GPU, which counts nothing.
    pub fn transfers(&self) -> Option<Transfers> {
        match &self.inner.backend {
            Backend::Cpu(cpu) => Some(*lock(&cpu.transfers)),
            Backend::Cuda(_) => None,
        }
    }

    /// The part of [`Device::copy_into`] where the source and the destination live in different
    /// devices' memories: a peer-to-peer copy between two GPUs (queued on this handle's stream), or
    /// on the simulator a read from one simulated memory and a write to the other.
    pub(super) fn copy_between_devices(
        &self,
        from_device: &Device,
        from: u64,
        to_device: &Device,
        to: u64,
        bytes: usize,
    ) -> Result<()> {
        match (&self.inner.backend, &from_device.inner.backend, &to_device.inner.backend) {
            (Backend::Cuda(cuda), Backend::Cuda(source), Backend::Cuda(target)) => {
                cuda.context
                    .bind_to_thread()
                    .map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
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
            (Backend::Cpu(stream), Backend::Cpu(source), Backend::Cpu(target)) => {
                // One lock at a time: the two devices may share one machine (a simulated world).
                let data =
                    lock(&source.machine).read(from, bytes).map_err(|e| sim_error("copy", e))?;
                lock(&target.machine).write(to, &data).map_err(|e| sim_error("copy", e))?;
                // The model: one tick per byte on the stream the copy is queued on.
                let end = {
                    let mut clock = lock(&stream.clock);
                    *clock += bytes as u64;
                    *clock
                };
                let mut sent = lock(&source.transfers);
                sent.copies_sent += 1;
                sent.bytes_sent += bytes as u64;
                sent.finished_at = sent.finished_at.max(end);
                drop(sent);
                let mut received = lock(&target.transfers);
                received.bytes_received += bytes as u64;
                received.finished_at = received.finished_at.max(end);
                Ok(())
            }
            _ => Err(GpuError::BadInput("a copy between buffers of different backends".into())),
        }
    }
}

impl CpuBackend {
    /// Whether `other` is this simulated device (or a fork of it).
    pub(super) fn is_same_device(&self, other: &CpuBackend) -> bool {
        Arc::ptr_eq(&self.identity, &other.identity)
    }

    /// Whether `other`'s buffers live in the same simulated memory as this device's: the same
    /// device, or another of its simulated world.
    pub(super) fn shares_machine_with(&self, other: &CpuBackend) -> bool {
        Arc::ptr_eq(&self.machine, &other.machine)
    }
}
