//! Timing and waiting on a device's stream: [`Device::synchronize`] and [`Device::time_ms`] (CUDA
//! events around the work; `crate::measure` builds the medians on it).

use cudarc::driver::sys;

use super::{Backend, Device};
use crate::error::{GpuError, Result};

impl Device {
    /// Waits for all queued work; reports a kernel fault that happened meanwhile.
    pub fn synchronize(&self) -> Result<()> {
        match &self.inner.backend {
            Backend::Cuda(cuda) => {
                cuda.stream.synchronize().map_err(|e| GpuError::driver("cuStreamSynchronize", e))
            }
            Backend::Cpu(_) => Ok(()), // the simulator runs each launch to completion
        }
    }

    /// Device time, in milliseconds, of the work that `work` queues, measured with CUDA events
    /// recorded before and after it on the device's stream.
    pub fn time_ms(&self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        let Backend::Cuda(cuda) = &self.inner.backend else {
            return Err(GpuError::Unsupported(
                "timing needs a GPU: the CPU simulator counts, it does not time".into(),
            ));
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
