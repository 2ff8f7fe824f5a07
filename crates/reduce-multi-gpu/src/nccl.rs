//! Step 2: NCCL's all-reduce, through cudarc's `nccl` bindings (loaded at run time).
//!
//! One thread drives every GPU: `ncclCommInitAll` makes one communicator per GPU, and each
//! collective is queued on every GPU's stream between `ncclGroupStart` and `ncclGroupEnd`, which
//! is how NCCL lets a single thread own several GPUs (one process per GPU, as frameworks do, is
//! the other way).
//!
//! Sums, and the min and max of integers, are one `ncclAllReduce`. NCCL does not say what its min
//! and max do with a NaN, and the reductions here promise that a NaN wins; so for the min and max
//! of f32 every GPU gathers all the GPUs' buffers (`ncclAllGather`) and folds them with the ring's
//! fold kernel, whose rule is ours.

use std::ffi::c_void;

use cudarc::nccl::{result, sys};
use gpu_harness::{Device, DeviceBuffer, GpuError, Result};
use reduction::{ReduceElement, ReduceOp};

use crate::ring::{KernelsByOp, fold_config};
use crate::{AllReduce, World, check_buffers, check_world, queueing};

/// What to install when NCCL is missing: cudarc looks for `libnccl.so` (and `libnccl.so.<CUDA
/// major>`), which the NCCL development package provides.
const INSTALL_NCCL: &str = "install NCCL's library and its development link (Debian/Ubuntu: `apt \
                            install libnccl2 \
     libnccl-dev`, which gives /usr/lib/x86_64-linux-gnu/libnccl.so); with pip's \
     `nvidia-nccl-cu13`, which has only \
     libnccl.so.2, link libnccl.so to it in a folder on LD_LIBRARY_PATH";

/// Why NCCL cannot run here, as the error [`Nccl::new`] returns (`None` when it can).
fn nccl_unavailable(world: &World) -> Option<GpuError> {
    let install = if world.devices()[0].is_simulated() {
        "it needs GPUs, and the CPU simulator has none"
    } else if !unsafe { sys::is_culib_present() } {
        INSTALL_NCCL
    } else {
        return None;
    };
    Some(GpuError::NoLibrary { library: "NCCL".into(), install: install.into() })
}

/// Why NCCL cannot run here (`None` when it can): tests that need it are ignored with this reason.
pub fn nccl_missing(world: &World) -> Option<String> {
    nccl_unavailable(world).map(|error| error.to_string())
}

fn nccl_error(call: &'static str, error: result::NcclError) -> GpuError {
    GpuError::Driver { call, message: format!("{:?}", error.0) }
}

/// NCCL's name for the element type.
fn nccl_type<T: ReduceElement>() -> sys::ncclDataType_t {
    match T::SUFFIX {
        "f32" => sys::ncclDataType_t::ncclFloat32,
        "i32" => sys::ncclDataType_t::ncclInt32,
        _ => sys::ncclDataType_t::ncclUint32,
    }
}

/// One communicator per GPU of a world, and what the f32 min and max need besides.
pub struct Nccl<T: ReduceElement> {
    comms: Vec<sys::ncclComm_t>,
    /// Per GPU: its device, its folds (for the f32 min and max), and room for every GPU's buffer.
    devices: Vec<Device>,
    folds: Vec<KernelsByOp>,
    gathered: Vec<DeviceBuffer<T>>,
}

impl<T: ReduceElement> Drop for Nccl<T> {
    fn drop(&mut self) {
        for &comm in &self.comms {
            // Nothing better to do with a failure while dropping.
            let _ = unsafe { result::comm_destroy(comm) };
        }
    }
}

/// NCCL's version, e.g. `2.28.3`.
pub fn nccl_version() -> Result<String> {
    let code = result::get_nccl_version().map_err(|e| nccl_error("ncclGetVersion", e))?;
    Ok(format!("{}.{}.{}", code / 10000, code / 100 % 100, code % 100))
}

impl<T: ReduceElement> Nccl<T> {
    /// Queues `call(k)` for every GPU k between `ncclGroupStart` and `ncclGroupEnd`.
    fn group(&self, call: &'static str, each: impl Fn(usize) -> sys::ncclResult_t) -> Result<()> {
        let _queueing = queueing();
        result::group_start().map_err(|e| nccl_error("ncclGroupStart", e))?;
        let queued = (0..self.comms.len()).try_for_each(|k| each(k).result().map(|_| ()));
        let ended = result::group_end().map_err(|e| nccl_error("ncclGroupEnd", e));
        queued.map_err(|e| nccl_error(call, e))?;
        ended.map(|_| ())
    }

    fn stream(&self, k: usize) -> sys::cudaStream_t {
        self.devices[k].raw_stream().unwrap_or(std::ptr::null_mut()).cast()
    }
}

impl<T: ReduceElement> AllReduce<T> for Nccl<T> {
    const STEP: &'static str = "nccl";

    /// Opens NCCL on every GPU of `world` (each at most once).
    fn new(world: &World) -> Result<Self> {
        if let Some(error) = nccl_unavailable(world) {
            return Err(error);
        }
        let ordinals: Vec<i32> = world.devices().iter().map(|d| d.ordinal() as i32).collect();
        let mut comms = vec![std::ptr::null_mut(); ordinals.len()];
        let queueing = queueing();
        unsafe {
            result::comm_init_all(comms.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr())
        }
        .map_err(|e| nccl_error("ncclCommInitAll", e))?;
        drop(queueing);
        let mut nccl = Nccl {
            comms,
            devices: world.devices().to_vec(),
            folds: Vec::new(),
            gathered: Vec::new(),
        };
        for device in world.devices() {
            nccl.folds.push(KernelsByOp::load::<T>(device, "ring_combine")?);
            nccl.gathered.push(device.alloc(0)?);
        }
        Ok(nccl)
    }

    // ANCHOR: nccl
    fn all_reduce(
        &mut self,
        world: &World,
        op: ReduceOp,
        buffers: &mut [DeviceBuffer<T>],
    ) -> Result<()> {
        check_world(&self.devices, world)?;
        let len = check_buffers(world, buffers)?;
        if len == 0 {
            return Ok(());
        }
        let addresses: Vec<u64> = buffers.iter().map(|b| b.as_view().raw_address()).collect();
        let nan_wins = T::ROUNDS && op != ReduceOp::Sum;
        if !nan_wins {
            let nccl_op = match op {
                ReduceOp::Sum => sys::ncclRedOp_t::ncclSum,
                ReduceOp::Min => sys::ncclRedOp_t::ncclMin,
                ReduceOp::Max => sys::ncclRedOp_t::ncclMax,
            };
            return self.group("ncclAllReduce", |k| unsafe {
                let buffer = addresses[k] as *mut c_void;
                sys::ncclAllReduce(
                    buffer,
                    buffer,
                    len,
                    nccl_type::<T>(),
                    nccl_op,
                    self.comms[k],
                    self.stream(k),
                )
            });
        }
        // f32 min and max: gather every GPU's buffer, then fold them in with our NaN rule.
        let n = self.comms.len();
        for (gathered, device) in self.gathered.iter_mut().zip(&self.devices) {
            if gathered.len() < n * len {
                *gathered = device.alloc(n * len)?;
            }
        }
        let gathered: Vec<u64> = self.gathered.iter().map(|b| b.as_view().raw_address()).collect();
        self.group("ncclAllGather", |k| unsafe {
            let (from, into) = (addresses[k] as *const c_void, gathered[k] as *mut c_void);
            sys::ncclAllGather(from, into, len, nccl_type::<T>(), self.comms[k], self.stream(k))
        })?;
        // Every GPU folds the gathered buffers in rank order, from GPU 0's, so that every GPU keeps
        // the same NaN (which one wins depends on the order) and ends with the same bits.
        for (k, device) in self.devices.iter().enumerate() {
            let fold = self.folds[k].get(op);
            let config = fold_config(device, len);
            device.copy(self.gathered[k].view(0..len)?, &mut buffers[k])?;
            for other in 1..n {
                device
                    .launch(fold, config)
                    .arg(&buffers[k])
                    .arg(self.gathered[k].view(other * len..(other + 1) * len)?)
                    .arg(len as u64)
                    .run()?;
            }
        }
        Ok(())
    }
    // ANCHOR_END: nccl
}
