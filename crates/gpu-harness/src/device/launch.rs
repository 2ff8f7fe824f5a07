//! Kernels and their launches: a [`Kernel`] loaded by [`Device::kernel`], the [`LaunchConfig`],
//! [`KernelArg`]s (buffers, views and scalars), and the [`Launch`] that [`Device::launch`] starts,
//! whose arguments are checked against the kernel's parameters before anything runs.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, PushKernelArg};
use serde::{Deserialize, Serialize};

use super::{Backend, CpuBackend, Device, DeviceBuffer, DeviceView, Element, LaunchCounters, lock};
use crate::error::{GpuError, Result};

/// A compiled kernel, loaded on a device.
pub struct Kernel {
    pub(super) backend: KernelBackend,
    pub(super) name: String,
    /// The size in bytes of each parameter, in order, from the kernel's PTX (always there on the
    /// simulator; beside the CUBIN where this NVRTC keeps it): launches are checked against it.
    pub(super) param_sizes: Option<Vec<usize>>,
    /// What one thread and one block of the kernel take, where the backend knows it: launches are
    /// checked against the limits of `GPU_PROFILE`'s GPU with it.
    pub(super) footprint: KernelFootprint,
}

/// The registers a thread of a kernel takes (from the loaded machine code: on a GPU only) and its
/// statically declared shared memory.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct KernelFootprint {
    pub(super) registers_per_thread: Option<u32>,
    pub(super) static_shared_bytes: Option<u32>,
}

pub(super) enum KernelBackend {
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
    ($($t:ty => $v:ident),*) => {
        $(impl From<$t> for KernelArg {
            fn from(x: $t) -> Self {
                KernelArg(ArgValue::$v(x))
            }
        })*
    };
}
scalar_args!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32);

/// A launch being described: [`Device::launch`], then `.arg(..)` per kernel parameter, then
/// `.run()`.
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
                problem: format!(
                    "it takes {} parameter(s), the launch passes {}",
                    sizes.len(),
                    self.args.len()
                ),
            });
        }
        for (index, (&size, KernelArg(value))) in sizes.iter().zip(&self.args).enumerate() {
            if size != value.size() {
                return Err(GpuError::Arguments {
                    kernel,
                    problem: format!(
                        "parameter {index} is {size} bytes, the launch passes {}",
                        value.describe()
                    ),
                });
            }
        }
        Ok(())
    }

    /// Checks the launch against the limits of the GPU the device stands in for (`GPU_PROFILE`):
    /// threads per block, shared memory per block (static and dynamic), and the registers of a
    /// block (per thread x threads) where the compiled kernel says how many a thread takes.
    fn check_profile(&self) -> Result<()> {
        let Some(profile) = self.device.inner.profile else { return Ok(()) };
        let LaunchConfig { block, shared_bytes, .. } = self.config;
        let threads = u64::from(block.0) * u64::from(block.1) * u64::from(block.2);
        let exceeds = |limit: String| GpuError::ExceedsProfile {
            kernel: self.kernel.name.clone(),
            profile: profile.name.to_string(),
            limit,
        };
        if threads > u64::from(profile.max_threads_per_block) {
            return Err(exceeds(format!(
                "a block of {threads} threads, where it allows at most {} a block",
                profile.max_threads_per_block
            )));
        }
        let footprint = self.kernel.footprint;
        let static_shared = u64::from(footprint.static_shared_bytes.unwrap_or(0));
        let shared = static_shared + u64::from(shared_bytes);
        if shared > u64::from(profile.max_shared_bytes_per_block) {
            return Err(exceeds(format!(
                "{shared} bytes of shared memory a block ({static_shared} static, {shared_bytes} \
                 dynamic), where it allows at most {} ({} KiB) a block",
                profile.max_shared_bytes_per_block,
                profile.max_shared_bytes_per_block >> 10
            )));
        }
        if let Some(registers) = footprint.registers_per_thread {
            let block_registers = u64::from(registers) * threads;
            if registers > profile.max_registers_per_thread
                || block_registers > u64::from(profile.registers_per_multiprocessor)
            {
                return Err(exceeds(format!(
                    "{registers} registers a thread x {threads} threads = {block_registers} \
                     registers a block, where it allows at most {} a thread and {} a block (an \
                     SM's)",
                    profile.max_registers_per_thread, profile.registers_per_multiprocessor
                )));
            }
        }
        Ok(())
    }

    /// The arguments as the simulator takes them.
    fn sim_params(&self) -> Vec<ptx_sim::ParamValue> {
        self.args
            .iter()
            .map(|KernelArg(value)| match *value {
                ArgValue::Address(a) | ArgValue::U64(a) => ptx_sim::ParamValue::U64(a),
                ArgValue::U32(x) => ptx_sim::ParamValue::U32(x),
                ArgValue::I32(x) => ptx_sim::ParamValue::I32(x),
                ArgValue::I64(x) => ptx_sim::ParamValue::I64(x),
                ArgValue::F32(x) => ptx_sim::ParamValue::F32(x),
            })
            .collect()
    }

    /// Records what the simulator counted in this launch on its device (`cpu`, its backend): its
    /// last launch's counters, and one more kernel launched ([`Device::take_launches`]).
    fn record(&self, cpu: &CpuBackend, counters: LaunchCounters) {
        lock(&cpu.launched).push((self.kernel.name.clone(), counters.clone()));
        *lock(&cpu.last_counters) = Some(counters);
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
        if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 || block.0 == 0 || block.1 == 0 || block.2 == 0
        {
            return Err(fail(format!("empty launch: grid {grid:?}, block {block:?}")));
        }
        self.check_arguments()?;
        self.check_profile()?;
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
                let config = cudarc::driver::LaunchConfig {
                    grid_dim: grid,
                    block_dim: block,
                    shared_mem_bytes: shared_bytes,
                };
                unsafe { builder.launch(config) }.map(|_| ()).map_err(|e| fail(e.to_string()))
            }
            (KernelBackend::Cpu(module), Backend::Cpu(cpu)) => {
                let counters = lock(&cpu.machine)
                    .launch(
                        module,
                        &self.kernel.name,
                        grid,
                        block,
                        shared_bytes,
                        &self.sim_params(),
                    )
                    .map_err(|e| fail(e.to_string()))?;
                self.record(cpu, counters);
                Ok(())
            }
            _ => Err(fail("a kernel used with another device's backend".into())),
        }
    }
}

/// Queues one launch per device, all of the same kernel, grid and block, that run at the same time
/// and may wait for each other: kernels that meet at flags in each other's memory (peer access),
/// such as reduce-multi-gpu's one-shot and two-shot all-reduces. On GPUs each launch is queued on
/// its device's stream, in order; the GPUs run them concurrently.
///
/// On the CPU simulator, which runs one launch to completion before the next, the devices must be
/// of one simulated world ([`Device::simulated_world`]), whose memory is shared: the launches run
/// there interleaved, block by block (`ptx_sim::Machine::launch_together`: block `b` of each
/// launch in turn with block `b` of the others, so a kernel's block may wait for the same block of
/// the other launches, never for a later block), and each device records its launch's counters as
/// [`Launch::run`] does. Separate simulators cannot run them: [`GpuError::Unsupported`].
pub fn launch_together(launches: Vec<Launch<'_>>) -> Result<()> {
    let Some(first) = launches.first() else { return Ok(()) };
    if launches.iter().any(|l| l.config != first.config || l.kernel.name != first.kernel.name) {
        return Err(GpuError::BadInput(
            "launches run together must be of one kernel, grid and block".into(),
        ));
    }
    if launches.iter().any(|l| matches!(l.device.inner.backend, Backend::Cpu(_))) {
        return launch_together_simulated(&launches);
    }
    launches.into_iter().try_for_each(Launch::run)
}

/// [`launch_together`] on the CPU simulator: every launch's device must share the first one's
/// machine (one simulated world), and every kernel be the same PTX.
fn launch_together_simulated(launches: &[Launch<'_>]) -> Result<()> {
    let first = &launches[0];
    let fail = |message: String| GpuError::Launch { kernel: first.kernel.name.clone(), message };
    let Backend::Cpu(world) = &first.device.inner.backend else {
        return Err(GpuError::BadInput(
            "launches run together on GPUs and on the CPU simulator at once".into(),
        ));
    };
    let mut simulated = Vec::with_capacity(launches.len());
    for launch in launches {
        let (KernelBackend::Cpu(module), Backend::Cpu(cpu)) =
            (&launch.kernel.backend, &launch.device.inner.backend)
        else {
            return Err(GpuError::BadInput(
                "launches run together on GPUs and on the CPU simulator at once, or a kernel used \
                 with another \
                 device's backend"
                    .into(),
            ));
        };
        if !cpu.shares_machine_with(world) {
            return Err(GpuError::Unsupported(
                "kernels that wait for each other across simulated devices need devices of one \
                 simulated world \
                 (Device::simulated_world, which World::simulated uses), whose memory is shared \
                 and whose launches \
                 run interleaved: these are separate simulators, each running its launch to \
                 completion before the \
                 next"
                    .into(),
            ));
        }
        launch.check_arguments()?;
        launch.check_profile()?;
        simulated.push((module, cpu, launch.sim_params()));
    }
    let module = simulated[0].0;
    if simulated.iter().any(|(other, ..)| !Arc::ptr_eq(module, other) && module != *other) {
        return Err(GpuError::BadInput(
            "launches run together must be of one kernel: these devices compiled different PTX \
             for it"
                .into(),
        ));
    }
    let LaunchConfig { grid, block, shared_bytes } = first.config;
    let params: Vec<_> = simulated.iter().map(|(.., params)| params.clone()).collect();
    let counters = lock(&world.machine)
        .launch_together(module, &first.kernel.name, grid, block, shared_bytes, &params)
        .map_err(|e| fail(e.to_string()))?;
    for ((launch, (_, cpu, _)), counters) in launches.iter().zip(&simulated).zip(counters) {
        launch.record(cpu, counters);
    }
    Ok(())
}

impl Device {
    /// Starts describing a launch of `kernel`; add its arguments in order, then [`Launch::run`].
    pub fn launch<'a>(&'a self, kernel: &'a Kernel, config: LaunchConfig) -> Launch<'a> {
        Launch { device: self, kernel, config, args: Vec::new() }
    }
}
