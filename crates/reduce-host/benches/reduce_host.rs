//! reduce-host's measurements: the sum of an f32 array that starts in host memory, from 64 KiB to
//! 8 GiB, by every step, beside the host link's roofs and the CPU, all in one run.
//!
//! Every time is the host's clock from the call to the answer (or, for a copy roof, to the copy's
//! end) on the host, by the one measuring path of the tour and every bench,
//! [`gpu_harness::measure::median_ms_timed_by`]'s rules (one warm-up call, batches of about a
//! millisecond, the median of [`SAMPLES`] batches' time per call). Methods:
//!
//! - `copy-pageable`, `copy-pinned`: the roofs, one host-to-device copy of the whole array from
//!   pageable or pinned memory;
//! - `copy-then-reduce` (step 1, pageable), `pinned` (step 2), `chunked` (step 3, pinned, the input
//!   kept on the device), `streamed` (step 4, pinned, a device budget of [`BUDGET`] bytes),
//!   `streamed-pageable` (step 4 from pageable memory, to 1 GiB);
//! - `cpu` (step 5, every thread of the host), `cpu-1` (one thread, to 256 MiB);
//! - `on-device`: the same sum of the array once it is on the device (the kernel alone).
//!
//! Also `pin <bytes> <ms>` (page-locking an existing array, `cuMemHostRegister`), `unpin`, and
//! `alloc-pinned` / `alloc-pageable` (new memory, zeroed), and `chunk <bytes> <streams> <ms>`: the
//! streamed step at 1 GiB with other chunk sizes and stream counts (what
//! [`reduce_host::CHUNK_BYTES`] was chosen from).
//!
//! Prints `<method> <bytes> <ms>` lines after `#` lines naming the machine;
//! `book/src/data/nvidia-h200/reduce-host.txt` holds what a run printed, with
//! `scripts/torch_host_sum.py`'s lines from the same session.
//!
//!     cargo bench -p reduce-host

use std::time::Instant;

use gpu_harness::measure::{SAMPLES, median_ms_timed_by};
use gpu_harness::{Device, Result};
use reduce_atomic::DeterministicReduce;
use reduce_host::{CHUNK_BYTES, HostReduce, cpu_sum, pipeline_plan, plan};
use reduction::FullReduction;

/// The device budget of the streamed step: a few chunks, whatever the input.
const BUDGET: usize = 4 * CHUNK_BYTES;
const KIB: usize = 1 << 10;
const GIB: usize = 1 << 30;

/// The host's clock around `batch`, in ms ([`once_ms`], in the shape the median takes).
fn wall_ms(batch: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    once_ms(batch)
}

/// Median ms per call of `work`, whose answer must be `want` (every input here sums to 0 exactly).
fn time(what: &str, bytes: usize, mut work: impl FnMut() -> Result<f32>) -> Result<()> {
    let got = work()?;
    if got != 0.0 {
        eprintln!("warning: {what} of {bytes} bytes summed to {got}, not 0");
    }
    let ms = median_ms_timed_by(SAMPLES, wall_ms, || work().map(|_| ()))?;
    println!("{what} {bytes} {ms:.5}");
    Ok(())
}

/// `n` values whose every run of 32 sums to 0 exactly, in every order the steps add them
/// (element i is ±(i mod 16 + 0.5), the sign flipping every 16): written by every thread.
fn input(n: usize, threads: usize) -> Vec<f32> {
    let mut values = vec![0.0f32; n];
    let part = n.div_ceil(threads.max(1)).next_multiple_of(32).max(32);
    std::thread::scope(|scope| {
        for (p, chunk) in values.chunks_mut(part).enumerate() {
            scope.spawn(move || {
                for (j, v) in chunk.iter_mut().enumerate() {
                    let i = p * part + j;
                    let magnitude = (i % 16) as f32 + 0.5;
                    *v = if (i / 16) % 2 == 0 { magnitude } else { -magnitude };
                }
            });
        }
    });
    values
}

/// The host's clock around one call of `work`, in ms.
fn once_ms(work: impl FnOnce() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    work()?;
    Ok(start.elapsed().as_secs_f64() * 1e3)
}

fn main() -> Result<()> {
    let device = Device::shared()?;
    if device.is_simulated() {
        println!("reduce-host's bench needs a GPU; the CPU simulator does not time kernels");
        return Ok(());
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let facts = device.facts();
    println!("# device {}", facts.name);
    println!(
        "# driver {} (CUDA {})",
        facts.driver_release.as_deref().unwrap_or("?"),
        facts.driver_cuda_version
    );
    println!("# host {threads} threads");
    println!("# chunk {CHUNK_BYTES} bytes, streamed budget {BUDGET} bytes");

    let mut reducer = HostReduce::new(&device)?;
    let mut on_device = DeterministicReduce::<f32>::new(&device)?;
    let mut copy_target = device.alloc::<f32>(0)?;
    let mut bytes = 64 * KIB;
    while bytes <= 8 * GIB {
        let n = bytes / 4;
        let host = input(n, threads);
        if copy_target.len() < n {
            drop(std::mem::replace(&mut copy_target, device.alloc(0)?)); // free the old one first
            copy_target = device.alloc(n)?;
        }
        // Pageable memory.
        time("copy-pageable", bytes, || {
            device.copy_from_host(&host, &mut copy_target, 0)?;
            device.synchronize()?;
            Ok(0.0)
        })?;
        time("copy-then-reduce", bytes, || reducer.copy_then_reduce(&host))?;
        if bytes <= GIB {
            time("streamed-pageable", bytes, || reducer.streamed(&host, BUDGET))?;
        }
        time("cpu", bytes, || Ok(cpu_sum(&host, threads)))?;
        if bytes <= GIB / 4 {
            time("cpu-1", bytes, || Ok(cpu_sum(&host, 1)))?;
        }
        time("on-device", bytes, || on_device.sum(copy_target.view(..n)?))?;
        // The same array pinned in place.
        let mut pinned = None;
        let pin_ms = once_ms(|| {
            pinned = Some(device.pin(host)?);
            Ok(())
        })?;
        println!("pin {bytes} {pin_ms:.5}");
        let pinned = pinned.expect("pinned above");
        let host = pinned.as_slice();
        time("copy-pinned", bytes, || {
            device.copy_from_host(host, &mut copy_target, 0)?;
            device.synchronize()?;
            Ok(0.0)
        })?;
        time("pinned", bytes, || reducer.copy_then_reduce(host))?;
        let whole = plan(n, None)?;
        time("chunked", bytes, || reducer.chunked(host, &whole))?;
        time("streamed", bytes, || reducer.streamed(host, BUDGET))?;
        time("cpu-pinned", bytes, || Ok(cpu_sum(host, threads)))?;
        if bytes == GIB {
            println!("# sweep {bytes} bytes, pinned, a ring of one chunk buffer per stream");
            for streams in [2, 3] {
                for chunk_mib in [1, 2, 4, 8, 16, 32, 64] {
                    let chunk = (chunk_mib << 20) / 4;
                    let ring = pipeline_plan(n, chunk, streams, Some(streams * chunk * 4))?;
                    let ms = median_ms_timed_by(SAMPLES, wall_ms, || {
                        reducer.streamed_with(host, &ring).map(|_| ())
                    })?;
                    println!("chunk-{streams} {} {ms:.5}", chunk * 4);
                }
            }
            let ms = once_ms(|| device.alloc_pinned::<f32>(n).map(drop))?;
            println!("alloc-pinned {bytes} {ms:.5}");
            let ms = once_ms(|| {
                let zeros = vec![0.0f32; n];
                // Touch every page, as alloc_pinned's zeroing does.
                std::hint::black_box(zeros.iter().step_by(1024).sum::<f32>());
                Ok(())
            })?;
            println!("alloc-pageable {bytes} {ms:.5}");
        }
        let unpin_ms = once_ms(|| pinned.into_vec().map(drop))?;
        println!("unpin {bytes} {unpin_ms:.5}");
        bytes *= 4;
        if bytes == 4 * GIB {
            bytes = 8 * GIB;
        }
    }
    Ok(())
}
