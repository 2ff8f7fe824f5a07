//! What a bench, a reader or a launch plan needs to know about a device: [`DeviceFacts`] (read once
//! when the device is opened) and the [`GpuShape`] launch plans are computed from.

use serde::{Deserialize, Serialize};

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
    pub const HOPPER_132_SMS: GpuShape =
        GpuShape { multiprocessors: 132, max_threads_per_multiprocessor: 2048 };

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
