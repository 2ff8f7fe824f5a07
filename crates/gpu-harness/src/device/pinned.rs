//! Page-locked ("pinned") host memory, [`PinnedBuffer`]: host memory the GPU's copy engines read
//! directly, so that a copy from it to the device runs while the host and the device's other
//! streams go on (a copy from pageable memory goes through the driver's staging buffer first).
//!
//! Two ways to get it: [`Device::alloc_pinned`] allocates new page-locked memory, and
//! [`Device::pin`] page-locks the memory of a `Vec` the caller already has (and
//! [`PinnedBuffer::into_vec`] gives it back). Copies from it are the ordinary ones:
//! [`Device::copy_from_host`] (or [`crate::DeviceBuffer::write_at`]) of a slice of pinned memory is
//! queued on a stream and returns at once. So that no copy ever reads memory that was freed or is
//! being written, the buffer waits for its device's queued work before it is written through
//! [`PinnedBuffer::as_mut_slice`], given back or dropped (its device's: copy from it on another
//! GPU only after that GPU's `synchronize`).
//!
//! On the CPU simulator a pinned buffer is an ordinary `Vec` (its copies are host copies).

use cudarc::driver::sys;

use super::buffer::as_bytes;
use super::{Backend, Device, DeviceBuffer, Element, lock, sim_error};
use crate::error::{GpuError, Result};

/// `len` elements of `T` in page-locked host memory (see the module's documentation).
pub struct PinnedBuffer<T: Element> {
    ptr: *mut T,
    len: usize,
    memory: Memory<T>,
    device: Device,
}

/// Where a pinned buffer's memory came from, and so how it is given back.
enum Memory<T> {
    /// `cuMemHostAlloc`: freed with `cuMemFreeHost`.
    Allocated,
    /// A caller's `Vec`, page-locked with `cuMemHostRegister` (unless empty).
    Registered(Vec<T>),
    /// The CPU simulator, or an empty allocation: an ordinary `Vec`.
    Unpinned(Vec<T>),
}

// The memory is owned by the buffer like a `Vec`'s; the raw pointer only names it.
unsafe impl<T: Element> Send for PinnedBuffer<T> {}
unsafe impl<T: Element> Sync for PinnedBuffer<T> {}

impl Device {
    /// `len` zeroed elements of new page-locked host memory (`cuMemHostAlloc`, cached and not
    /// write-combined, so the host reads it at full speed too). On the simulator, a `Vec`.
    pub fn alloc_pinned<T: Element>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            GpuError::BadInput(format!("a host buffer of {len} elements does not fit in memory"))
        })?;
        let Backend::Cuda(cuda) = &self.inner.backend else {
            return Ok(unpinned(self, vec![T::default(); len]));
        };
        if bytes == 0 {
            return Ok(unpinned(self, Vec::new()));
        }
        cuda.context.bind_to_thread().map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
        let mut ptr = std::ptr::null_mut();
        unsafe { sys::cuMemHostAlloc(&mut ptr, bytes, 0) }
            .result()
            .map_err(|e| GpuError::driver("cuMemHostAlloc", e))?;
        // Zeroing touches every page: the allocation's full cost is paid here, not in a first copy.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, bytes) };
        Ok(PinnedBuffer { ptr: ptr.cast(), len, memory: Memory::Allocated, device: self.clone() })
    }

    /// Page-locks the memory of `host` in place (`cuMemHostRegister`), without copying it.
    /// [`PinnedBuffer::into_vec`] unlocks it and gives the `Vec` back. On the simulator, nothing
    /// is locked.
    pub fn pin<T: Element>(&self, mut host: Vec<T>) -> Result<PinnedBuffer<T>> {
        let Backend::Cuda(cuda) = &self.inner.backend else {
            return Ok(unpinned(self, host));
        };
        if host.is_empty() {
            return Ok(unpinned(self, host));
        }
        cuda.context.bind_to_thread().map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
        let (ptr, len) = (host.as_mut_ptr(), host.len());
        unsafe { sys::cuMemHostRegister_v2(ptr.cast(), std::mem::size_of_val(&host[..]), 0) }
            .result()
            .map_err(|e| GpuError::driver("cuMemHostRegister", e))?;
        Ok(PinnedBuffer { ptr, len, memory: Memory::Registered(host), device: self.clone() })
    }
}

impl Device {
    /// Copies `host` into `dst` from element `at` on, queued on this handle's stream (`dst` lives
    /// in this device's memory: a buffer of the device, or of a fork of it, whose streams are
    /// separate). From pinned memory the copy runs on a copy engine while the host goes on, so
    /// several handles' copies and kernels overlap; from pageable memory the driver first stages
    /// `host` into its own pinned buffer and returns once it has (the host waits for that).
    pub fn copy_from_host<T: Element>(
        &self,
        host: &[T],
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        if at.checked_add(host.len()).is_none_or(|end| end > dst.len()) {
            return Err(GpuError::BadInput(format!(
                "a copy of {} host elements at {at} into a buffer of {}",
                host.len(),
                dst.len()
            )));
        }
        if !self.shares_memory_with(&dst.device) {
            return Err(GpuError::BadInput(
                "a copy from the host queued on a device that does not hold its buffer".into(),
            ));
        }
        if host.is_empty() {
            return Ok(());
        }
        let to = dst.as_view().device_address() + (at * std::mem::size_of::<T>()) as u64;
        match &self.inner.backend {
            Backend::Cuda(cuda) => {
                cuda.context
                    .bind_to_thread()
                    .map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(to, host, cuda.stream.cu_stream())
                }
                .map_err(|e| GpuError::driver("cuMemcpyHtoDAsync", e))
            }
            Backend::Cpu(cpu) => lock(&cpu.machine)
                .write(to, as_bytes(host))
                .map_err(|e| sim_error("copy to device", e)),
        }
    }
}

fn unpinned<T: Element>(device: &Device, mut host: Vec<T>) -> PinnedBuffer<T> {
    let (ptr, len) = (host.as_mut_ptr(), host.len());
    PinnedBuffer { ptr, len, memory: Memory::Unpinned(host), device: device.clone() }
}

impl<T: Element> PinnedBuffer<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the memory is page-locked (false on the simulator and for an empty buffer).
    pub fn is_pinned(&self) -> bool {
        !matches!(self.memory, Memory::Unpinned(_))
    }

    /// The elements, to read or to copy to the device from.
    pub fn as_slice(&self) -> &[T] {
        // The buffer owns `len` initialised elements at `ptr` (zeroed, or a Vec's).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The elements, to write; first waits for every copy queued on the device (which may be
    /// reading them).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.wait_for_device()?;
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }

    /// The elements as a `Vec`: a registered `Vec` is unlocked and given back (no copy), allocated
    /// memory is copied out and freed. Waits for the device's queued copies first.
    pub fn into_vec(mut self) -> Result<Vec<T>> {
        self.wait_for_device()?;
        let values = match std::mem::replace(&mut self.memory, Memory::Unpinned(Vec::new())) {
            Memory::Allocated => {
                let values = self.as_slice().to_vec();
                self.memory = Memory::Allocated; // freed by drop
                return Ok(values);
            }
            Memory::Registered(host) => {
                unsafe { sys::cuMemHostUnregister(self.ptr.cast()) }
                    .result()
                    .map_err(|e| GpuError::driver("cuMemHostUnregister", e))?;
                host
            }
            Memory::Unpinned(host) => host,
        };
        self.ptr = std::ptr::NonNull::dangling().as_ptr();
        self.len = 0;
        Ok(values)
    }

    /// Waits for all work queued on the buffer's GPU, on every stream.
    fn wait_for_device(&self) -> Result<()> {
        match (&self.device.inner.backend, &self.memory) {
            (Backend::Cuda(cuda), Memory::Allocated | Memory::Registered(_)) => {
                cuda.context.synchronize().map_err(|e| GpuError::driver("cuCtxSynchronize", e))
            }
            _ => Ok(()),
        }
    }
}

impl<T: Element> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // Errors cannot be reported from drop; the worst outcome is memory left locked.
        let _ = self.wait_for_device();
        match &self.memory {
            Memory::Allocated => {
                let _ = unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
            }
            Memory::Registered(_) => {
                let _ = unsafe { sys::cuMemHostUnregister(self.ptr.cast()) };
            }
            Memory::Unpinned(_) => {}
        }
    }
}
