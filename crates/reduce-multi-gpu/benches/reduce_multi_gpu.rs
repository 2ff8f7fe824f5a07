//! reduce-multi-gpu's measurements, on every GPU of the machine (and on the first two of four):
//!
//! - the all-reduce of an f32 buffer of 64 KiB to 1 GiB on every GPU, by NCCL and by our ring,
//!   one-shot, two-shot and by-size steps:
//!   device time per call, CUDA events on GPU 0 joined with every GPU ([`World::time_ms`]);
//! - the full sum of 2^30 f32 on one GPU, and split across the GPUs by each step: wall-clock time
//!   to the answer on the host.
//!
//! Both are timed by the one measuring path of the tour and every bench,
//! [`gpu_harness::measure::median_ms`]'s rules ([`median_ms_timed_by`]: one warm-up call, batches
//! of about a millisecond, the median of [`SAMPLES`] batches' time per call), with the joined
//! events or the host's clock in place of one GPU's events.
//!
//! Prints one line per measurement, `<kind> <method> <gpus> <bytes> <ms>`, after `#` lines naming
//! the machine; `book/src/data/multi-gpu/<machine>.txt` holds what a run printed (with
//! `scripts/torch_allreduce.py`'s lines from the same session), and the book's tables and charts
//! are rendered from it (`cargo run --release -p tour -- --charts`).
//!
//!     cargo bench -p reduce-multi-gpu

use std::time::Instant;

use gpu_harness::measure::{SAMPLES, median_ms_timed_by};
use gpu_harness::{DeviceBuffer, Result};
use reduce_atomic::DeterministicReduce;
use reduce_multi_gpu::{
    AcrossGpus, AllReduce, BySize, HostCombined, Nccl, OneShot, Ring, TwoShot, TwoShotWrites,
    World, nccl_missing, nccl_version, part_range, peer_kernels_missing, views,
};
use reduction::{FullReduction, ReduceOp};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Device time of one all-reduce of `bytes` per GPU, in ms: from an event on GPU 0 that every GPU
/// waits for to GPU 0 having waited for every GPU.
fn time_all_reduce<A: AllReduce<f32>>(
    world: &World,
    all_reduce: &mut A,
    bytes: usize,
) -> Result<f64> {
    let mut buffers: Vec<DeviceBuffer<f32>> =
        world.devices().iter().map(|d| d.alloc(bytes / 4)).collect::<Result<_>>()?;
    median_ms_timed_by(
        SAMPLES,
        |batch| world.time_ms(batch),
        || all_reduce.all_reduce(world, ReduceOp::Sum, &mut buffers),
    )
}

/// The host's clock around `batch`, in ms: for a call that returns once the answer is on the host.
fn wall_ms(batch: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    batch()?;
    Ok(start.elapsed().as_secs_f64() * 1e3)
}

/// The full sum of `n` ones split across `world` by `reduce`, wall-clock ms to the answer.
fn time_split(
    world: &World,
    n: usize,
    mut reduce: impl FnMut(&[gpu_harness::DeviceView<'_, f32>]) -> Result<f32>,
) -> Result<f64> {
    let mut parts = Vec::new();
    for (k, device) in world.devices().iter().enumerate() {
        let mut part = device.alloc::<f32>(part_range(n, world.len(), k).len())?;
        part.fill_words(1.0f32.to_bits())?;
        parts.push(part);
    }
    let views = views(&parts);
    let total = reduce(&views)?;
    if total != n as f32 {
        eprintln!("warning: the sum of {n} ones came out {total}");
    }
    median_ms_timed_by(SAMPLES, wall_ms, || reduce(&views).map(|_| ()))
}

fn main() -> Result<()> {
    let world = World::shared()?;
    if world.devices()[0].is_simulated() {
        println!("reduce-multi-gpu's bench needs GPUs; the CPU simulator does not time kernels");
        return Ok(());
    }
    let nccl = nccl_missing(&world);
    let facts = world.devices()[0].facts();
    println!("# device {} x{}", facts.name, world.len());
    println!(
        "# driver {} (CUDA {})",
        facts.driver_release.as_deref().unwrap_or("?"),
        facts.driver_cuda_version
    );
    // NVLink SHARP (multicast) changes what NCCL's all-reduce can do on NVSwitch machines.
    let nvls = std::env::var("NCCL_NVLS_ENABLE").unwrap_or_else(|_| "unset".into());
    println!("# nvls NCCL_NVLS_ENABLE={nvls}");
    match &nccl {
        None => println!("# nccl {}", nccl_version()?),
        Some(reason) => println!("# nccl missing: {reason}"),
    }
    let mut counts = vec![world.len()];
    if world.len() >= 4 {
        counts.insert(0, 2);
    }
    for &gpus in counts.iter().filter(|&&g| g >= 2) {
        let sub = world.first(gpus)?;
        let peers = peer_kernels_missing(&sub).is_none();
        let mut ring = Ring::<f32>::new(&sub)?;
        let mut nccl_all_reduce = if nccl.is_none() { Some(Nccl::<f32>::new(&sub)?) } else { None };
        let mut one_shot = if peers { Some(OneShot::<f32>::new(&sub)?) } else { None };
        let mut two_shot = if peers { Some(TwoShot::<f32>::new(&sub)?) } else { None };
        let mut writes = if peers { Some(TwoShotWrites::<f32>::new(&sub)?) } else { None };
        let mut by_size = if peers { Some(BySize::<f32>::new(&sub)?) } else { None };
        let mut bytes = 64 * KIB;
        while bytes <= 1024 * MIB {
            if let Some(nccl_all_reduce) = &mut nccl_all_reduce {
                println!(
                    "allreduce nccl {gpus} {bytes} {:.5}",
                    time_all_reduce(&sub, nccl_all_reduce, bytes)?
                );
            }
            println!(
                "allreduce ring {gpus} {bytes} {:.5}",
                time_all_reduce(&sub, &mut ring, bytes)?
            );
            if let (Some(one), Some(two), Some(writes), Some(by)) =
                (&mut one_shot, &mut two_shot, &mut writes, &mut by_size)
            {
                println!(
                    "allreduce one-shot {gpus} {bytes} {:.5}",
                    time_all_reduce(&sub, one, bytes)?
                );
                println!(
                    "allreduce two-shot {gpus} {bytes} {:.5}",
                    time_all_reduce(&sub, two, bytes)?
                );
                println!(
                    "allreduce two-shot-writes {gpus} {bytes} {:.5}",
                    time_all_reduce(&sub, writes, bytes)?
                );
                println!(
                    "allreduce by-size {gpus} {bytes} {:.5}",
                    time_all_reduce(&sub, by, bytes)?
                );
            }
            bytes *= 2;
        }
    }
    // The full sum of 2^30 f32: one GPU, then split across every GPU count.
    let n = 1usize << 30;
    let one = world.first(1)?;
    let mut single = DeterministicReduce::<f32>::new(&one.devices()[0])?;
    println!(
        "full one-gpu 1 {} {:.5}",
        4 * n,
        time_split(&one, n, |parts| single.reduce(ReduceOp::Sum, parts[0]))?
    );
    for &gpus in &counts {
        let sub = world.first(gpus)?;
        let mut host = HostCombined::<f32>::new(&sub)?;
        println!(
            "full host-combined {gpus} {} {:.5}",
            4 * n,
            time_split(&sub, n, |p| host.reduce(&sub, ReduceOp::Sum, p))?
        );
        if nccl.is_none() {
            let mut step = AcrossGpus::<f32, Nccl<f32>>::new(&sub)?;
            println!(
                "full nccl {gpus} {} {:.5}",
                4 * n,
                time_split(&sub, n, |p| step.reduce(&sub, ReduceOp::Sum, p))?
            );
        }
        let mut step = AcrossGpus::<f32, Ring<f32>>::new(&sub)?;
        println!(
            "full ring {gpus} {} {:.5}",
            4 * n,
            time_split(&sub, n, |p| step.reduce(&sub, ReduceOp::Sum, p))?
        );
        if peer_kernels_missing(&sub).is_none() {
            let mut step = AcrossGpus::<f32, OneShot<f32>>::new(&sub)?;
            let ms = time_split(&sub, n, |p| step.reduce(&sub, ReduceOp::Sum, p))?;
            println!("full one-shot {gpus} {} {ms:.5}", 4 * n);
        }
    }
    Ok(())
}
