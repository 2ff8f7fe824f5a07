//! Device memory: [`DeviceBuffer`] (owned, freed when dropped) and [`DeviceView`] (a borrowed
//! range of one, what launchers take), their [`Element`] types, fills, copies to and from the host,
//! and copies between buffers on the device ([`Device::copy`], [`Device::copy_into`]; a copy
//! between two GPUs' memories is finished in `multi_gpu.rs`).

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits, sys};

use super::{Backend, Device, lock, sim_error};
use crate::error::{GpuError, Result};

/// Element types that can live in a [`DeviceBuffer`]. Sealed: implemented for the plain numeric
/// types the kernels use.
pub trait Element:
    DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static + sealed::Sealed
{
}
mod sealed {
    pub trait Sealed {}
}
macro_rules! elements {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl Element for $t {})* };
}
elements!(f32, f64, i32, u32, i64, u64, u8, u16);

/// The bytes of a slice of plain numeric elements.
pub(super) fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    // Elements are sealed plain numeric types: no padding, every byte initialised.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
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

/// A buffer of `T` in device memory, freed when dropped.
pub struct DeviceBuffer<T: Element> {
    storage: Storage<T>,
    pub(super) device: Device,
}

enum Storage<T> {
    Cuda(CudaSlice<T>),
    Cpu { address: u64, len: usize, element: PhantomData<T> },
}

impl<T: Element> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if let (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) =
            (&self.storage, &self.device.inner.backend)
        {
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
            return Err(GpuError::BadInput(format!(
                "view {start}..{end} of a buffer of {} elements",
                self.len()
            )));
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
            (Storage::Cuda(slice), Backend::Cuda(cuda)) => cuda
                .stream
                .memcpy_htod(host, slice)
                .map_err(|e| GpuError::driver("cuMemcpyHtoD", e)),
            (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) => lock(&cpu.machine)
                .write(*address, as_bytes(host))
                .map_err(|e| sim_error("copy to device", e)),
            _ => Err(GpuError::BadInput("a buffer used with another device's backend".into())),
        }
    }

    /// Overwrites `host.len()` elements starting at element `offset` with `host`.
    pub fn write_at(&mut self, offset: usize, host: &[T]) -> Result<()> {
        let end =
            offset.checked_add(host.len()).filter(|&end| end <= self.len()).ok_or_else(|| {
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
                cuda.stream
                    .memcpy_htod(host, &mut view)
                    .map_err(|e| GpuError::driver("cuMemcpyHtoD", e))
            }
            (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) => {
                let at = *address + (offset * std::mem::size_of::<T>()) as u64;
                lock(&cpu.machine)
                    .write(at, as_bytes(host))
                    .map_err(|e| sim_error("copy to device", e))
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
                cuda.context
                    .bind_to_thread()
                    .map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
                let (address, _write) = slice.device_ptr_mut(&cuda.stream);
                unsafe { sys::cuMemsetD32Async(address, word, words, cuda.stream.cu_stream()) }
                    .result()
                    .map_err(|e| GpuError::driver("cuMemsetD32Async", e))
            }
            (Storage::Cpu { address, .. }, Backend::Cpu(cpu)) => {
                let bytes: Vec<u8> =
                    std::iter::repeat_n(word.to_le_bytes(), words).flatten().collect();
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
    pub(super) buffer: &'a DeviceBuffer<T>,
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
                cuda.stream
                    .memcpy_dtoh(&view, &mut host)
                    .map_err(|e| GpuError::driver("cuMemcpyDtoH", e))?;
                cuda.stream
                    .synchronize()
                    .map_err(|e| GpuError::driver("cuStreamSynchronize", e))?;
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
    /// takes raw pointers (a peer library, cuBLAS), or for a table of peers' addresses that kernels
    /// read. On the CPU simulator it is a simulated address, which only kernels of the devices of
    /// its simulated world ([`Device::simulated_world`]) can dereference.
    pub fn raw_address(&self) -> u64 {
        self.device_address()
    }

    pub(super) fn device_address(&self) -> u64 {
        let base = match (&self.buffer.storage, &self.buffer.device.inner.backend) {
            (Storage::Cuda(slice), Backend::Cuda(cuda)) => slice.device_ptr(&cuda.stream).0,
            (Storage::Cpu { address, .. }, _) => *address,
            // Cannot happen: buffers come from their device.
            (Storage::Cuda(_), Backend::Cpu(_)) => 0,
        };
        base + (self.offset * std::mem::size_of::<T>()) as u64
    }
}

impl<'a, T: Element> From<&'a DeviceBuffer<T>> for DeviceView<'a, T> {
    fn from(buffer: &'a DeviceBuffer<T>) -> Self {
        buffer.as_view()
    }
}

impl Device {
    /// A zero-filled buffer of `len` elements.
    pub fn alloc<T: Element>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let storage = match &self.inner.backend {
            Backend::Cuda(cuda) => Storage::Cuda(
                if len == 0 { cuda.stream.null() } else { cuda.stream.alloc_zeros(len) }
                    .map_err(|e| GpuError::driver("cuMemAlloc", e))?,
            ),
            Backend::Cpu(cpu) => {
                let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
                    GpuError::BadInput(format!("a buffer of {len} elements does not fit in memory"))
                })?;
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
                let slice = cuda
                    .stream
                    .clone_htod(host)
                    .map_err(|e| GpuError::driver("cuMemcpyHtoD", e))?;
                return Ok(DeviceBuffer { storage: Storage::Cuda(slice), device: self.clone() });
            }
        }
        let mut buffer = self.alloc(host.len())?;
        buffer.copy_from_host(host)?;
        Ok(buffer)
    }

    /// Copies `src` into the start of `dst` on the device (device-to-device, asynchronous).
    pub fn copy<T: Element>(
        &self,
        src: DeviceView<'_, T>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.copy_into(src, dst, 0)
    }

    /// Copies `src` into `dst` starting at element `at`, queued on this handle's stream. `src` and
    /// `dst` may live on different GPUs (a peer-to-peer copy); this device must hold one of them.
    pub fn copy_into<T: Element>(
        &self,
        src: DeviceView<'_, T>,
        dst: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        if at.checked_add(src.len()).is_none_or(|end| end > dst.len()) {
            return Err(GpuError::BadInput(format!(
                "copy of {} elements at {at} into a buffer of {}",
                src.len(),
                dst.len()
            )));
        }
        let (from_device, to_device) = (&src.buffer.device, &dst.device);
        if !self.shares_memory_with(from_device) && !self.shares_memory_with(to_device) {
            return Err(GpuError::BadInput(
                "a copy queued on a device that holds neither of its buffers".into(),
            ));
        }
        if src.is_empty() {
            return Ok(());
        }
        let bytes = src.len() * std::mem::size_of::<T>();
        let from = src.device_address();
        let to = dst.as_view().device_address() + (at * std::mem::size_of::<T>()) as u64;
        match (&self.inner.backend, &from_device.inner.backend, &to_device.inner.backend) {
            (Backend::Cuda(cuda), Backend::Cuda(source), Backend::Cuda(target))
                if Arc::ptr_eq(&source.context, &target.context) =>
            {
                cuda.context
                    .bind_to_thread()
                    .map_err(|e| GpuError::driver("cuCtxSetCurrent", e))?;
                unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        to,
                        from,
                        bytes,
                        cuda.stream.cu_stream(),
                    )
                }
                .map_err(|e| GpuError::driver("cuMemcpyDtoDAsync", e))
            }
            (Backend::Cpu(_), Backend::Cpu(source), Backend::Cpu(target))
                if source.is_same_device(target) =>
            {
                lock(&source.machine).copy(from, to, bytes).map_err(|e| sim_error("copy", e))
            }
            // Two devices' memories (or two backends, an error): multi_gpu.rs.
            _ => self.copy_between_devices(from_device, from, to_device, to, bytes),
        }
    }
}
