//! Launches are checked against the kernel's parameters, on the GPU as on the CPU simulator: a
//! launch with too few or too many arguments, or an argument of the wrong size, is an error naming
//! the kernel and the parameter, before anything runs. The simulator also records the name of
//! every kernel it launches, so that a test can check which kernel a step launches, and counts and
//! times (on a model) the copies between simulated devices, separate ones or those of a simulated
//! world (one memory), where kernels launched together reach each other's buffers.

use gpu_harness::{
    Device, GpuError, GpuProfile, KernelSource, LaunchConfig, kernel_source, launch_together,
};
use gpu_test::{TestResult, TestSuite};

const ROOFS: KernelSource = kernel_source!("roofs.cu");

/// `read_roof_unroll4(const float4* input, float* sink, long long count, float never)`.
fn expect_argument_error(
    device: &Device,
    arguments: usize,
    count_as_u32: bool,
) -> Result<String, String> {
    let kernel = device.kernel(&ROOFS, "read_roof_unroll4").map_err(|e| e.to_string())?;
    let input = device.upload(&[1.0f32; 16]).map_err(|e| e.to_string())?;
    let sink = device.alloc::<f32>(1).map_err(|e| e.to_string())?;
    let mut launch = device.launch(&kernel, LaunchConfig::linear(1, 32, 0)).arg(&input).arg(&sink);
    if arguments >= 3 {
        launch = if count_as_u32 { launch.arg(4u32) } else { launch.arg(4i64) };
    }
    if arguments >= 4 {
        launch = launch.arg(f32::NAN);
    }
    if arguments >= 5 {
        launch = launch.arg(7u32);
    }
    match launch.run() {
        Err(GpuError::Arguments { kernel, problem }) => Ok(format!("{kernel}: {problem}")),
        Ok(()) => {
            Err(format!("a launch with {arguments} arguments (count as u32: {count_as_u32}) ran"))
        }
        Err(other) => Err(format!("expected an Arguments error, got {other}")),
    }
}

/// Launches roofs.cu's `name` (a streaming read with the same parameters as `read_roof_unroll4`)
/// on 16 floats.
fn launch_roof(device: &Device, name: &str) -> TestResult {
    let kernel = device.kernel(&ROOFS, name)?;
    let (input, sink) = (device.upload(&[1.0f32; 16])?, device.alloc::<f32>(1)?);
    device
        .launch(&kernel, LaunchConfig::linear(1, 32, 0))
        .arg(&input)
        .arg(&sink)
        .arg(4i64)
        .arg(f32::NAN)
        .run()?;
    Ok(())
}

/// Three devices' copies between each other, each checked by hand against the simulator's count
/// and model of their time; a's copies go through a fork of a (its copy stream).
fn copies_between_devices(a: Device, b: Device, c: Device) -> TestResult {
    let copier = a.fork()?;
    let on_a = a.upload(&[1.0f32; 100])?;
    let (mut on_b, mut on_c) = (b.alloc::<f32>(100)?, c.alloc::<f32>(100)?);
    copier.copy_into(on_a.as_view(), &mut on_b, 0)?; // 400 bytes: the copier at 400
    let sent = copier.event()?;
    copier.record(&sent)?;
    b.wait_for(&sent)?; // b at 400
    b.copy_into(on_b.view(0..50)?, &mut on_c, 0)?; // 200 bytes: b at 600
    let mut on_a = on_a;
    c.copy_into(on_c.view(0..25)?, &mut on_a, 0)?; // 100 bytes, waiting for nothing: c at 100
    // A fork starts where its parent is: 4 bytes from 600.
    b.fork()?.copy_into(on_b.view(0..1)?, &mut on_a, 99)?;
    let got = [a.transfers(), copier.transfers(), b.transfers(), c.transfers()];
    let counted = |copies_sent, bytes_sent, bytes_received, finished_at| {
        Some(gpu_harness::Transfers { copies_sent, bytes_sent, bytes_received, finished_at })
    };
    // By hand: a sent 400 and received 100 + 4, the last ending at 604; the copier is a.
    let expected = [
        counted(1, 400, 104, 604),
        counted(1, 400, 104, 604),
        counted(2, 204, 400, 604),
        counted(1, 100, 200, 600),
    ];
    if got != expected {
        return Err(format!("counted {got:?}, expected {expected:?}").into());
    }
    if on_a.to_host()?[99] != 1.0 || on_c.to_host()?[..50] != [1.0; 50] {
        return Err("the copies did not copy".into());
    }
    Ok(())
}

/// Each block of launch `rank` of `ranks` adds `rank + 1` to element `i` of every device's
/// `values` (peer pointers in the table `peers`, in this device's memory), one device after
/// another: thread 0 of block `b` of launch `r` waits until block `b` of launch `r - 1` has raised
/// its flag in this device's `flags[b]` to `r` (`ld.acquire.sys`), adds, then raises the flag of
/// device `r + 1` (`st.release.sys`). Every device's element ends as the sum of every rank + 1.
const CHAIN: KernelSource = KernelSource {
    file: "chain.cu",
    code: r#"
extern "C" __global__ void chain(unsigned rank, unsigned ranks, const unsigned long long* peers,
                                 const unsigned long long* peer_flags, unsigned* flags) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0 && rank > 0) {
        unsigned seen;
        do {
            asm volatile("ld.acquire.sys.global.u32 %0, [%1];"
                         : "=r"(seen)
                         : "l"(flags + blockIdx.x)
                         : "memory");
        } while (seen != rank);
    }
    __syncthreads();
    for (unsigned r = 0; r < ranks; ++r) ((unsigned*)peers[r])[i] += rank + 1;
    __syncthreads();
    if (threadIdx.x == 0 && rank + 1 < ranks) {
        unsigned* next = (unsigned*)peer_flags[rank + 1] + blockIdx.x;
        asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(next), "r"(rank + 1) : "memory");
    }
}
"#,
};

/// Runs CHAIN on `devices` together (grid of 3 blocks of 64) and returns every device's values.
fn chain(devices: &[Device]) -> gpu_harness::Result<Vec<Vec<u32>>> {
    let (grid, block) = (3u32, 64u32);
    let n = (grid * block) as usize;
    let values: Vec<_> =
        devices.iter().map(|d| d.upload(&vec![7u32; n])).collect::<Result<_, _>>()?;
    let flags: Vec<_> =
        devices.iter().map(|d| d.alloc::<u32>(grid as usize)).collect::<Result<_, _>>()?;
    let table = |buffers: &[gpu_harness::DeviceBuffer<u32>]| -> Vec<u64> {
        buffers.iter().map(|b| b.as_view().raw_address()).collect()
    };
    let (value_table, flag_table) = (table(&values), table(&flags));
    let kernels: Vec<_> =
        devices.iter().map(|d| d.kernel(&CHAIN, "chain")).collect::<Result<_, _>>()?;
    let mut peers = Vec::new();
    for device in devices {
        peers.push((device.upload(&value_table)?, device.upload(&flag_table)?));
    }
    let config = LaunchConfig::linear(grid, block, 0);
    let launches = (0..devices.len())
        .map(|k| {
            devices[k]
                .launch(&kernels[k], config)
                .arg(k as u32)
                .arg(devices.len() as u32)
                .arg(&peers[k].0)
                .arg(&peers[k].1)
                .arg(&flags[k])
        })
        .collect();
    launch_together(launches)?;
    values.iter().map(|v| v.to_host()).collect()
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .gpu("wrong_argument_count_and_size_are_errors", |device| -> TestResult {
            let messages = [
                expect_argument_error(device, 3, false)?,
                expect_argument_error(device, 5, false)?,
                expect_argument_error(device, 4, true)?,
            ];
            insta::assert_snapshot!("argument_errors", messages.join("\n"));
            // The right arguments run.
            let kernel = device.kernel(&ROOFS, "read_roof_unroll4")?;
            let (input, sink) = (device.upload(&[1.0f32; 16])?, device.alloc::<f32>(1)?);
            device
                .launch(&kernel, LaunchConfig::linear(1, 32, 0))
                .arg(&input)
                .arg(&sink)
                .arg(4i64)
                .arg(f32::NAN)
                .run()?;
            device.synchronize()?;
            Ok(())
        })
        .nvrtc("a_profile_is_the_simulators_architecture_shape_and_limits", || {
            let t4 = GpuProfile::named("T4")?;
            let device = Device::simulator_as(t4)?;
            let facts = device.facts();
            let shape = (facts.compute_capability, facts.max_threads_per_multiprocessor);
            if shape != ((7, 5), 1024) || device.profile() != Some(t4) {
                return Err(format!("a simulated T4 has {shape:?}, {:?}", device.profile()).into());
            }
            let kernel = device.kernel(&ROOFS, "read_roof_unroll4")?;
            let (input, sink) = (device.upload(&[1.0f32; 16])?, device.alloc::<f32>(1)?);
            let run = |config| {
                device.launch(&kernel, config).arg(&input).arg(&sink).arg(4i64).arg(0.0f32).run()
            };
            let refused = |config| match run(config) {
                Err(e @ GpuError::ExceedsProfile { .. }) => Ok(e.to_string()),
                other => Err(format!("{config:?} on a T4: {other:?}, expected ExceedsProfile")),
            };
            let big_block = LaunchConfig { grid: (1, 1, 1), block: (512, 4, 1), shared_bytes: 0 };
            let messages = [refused(big_block)?, refused(LaunchConfig::linear(1, 32, 65 << 10))?];
            insta::assert_snapshot!("profile_limits", messages.join("\n"));
            // At the limits, it runs; the H200's 227 KiB a block are more than the T4's 64.
            run(LaunchConfig::linear(1, 1024, 64 << 10))?;
            let h200 = Device::simulator_as(GpuProfile::named("H200")?)?;
            let kernel = h200.kernel(&ROOFS, "read_roof_unroll4")?;
            let (input, sink) = (h200.upload(&[1.0f32; 16])?, h200.alloc::<f32>(1)?);
            h200.launch(&kernel, LaunchConfig::linear(1, 32, 65 << 10))
                .arg(&input)
                .arg(&sink)
                .arg(4i64)
                .arg(0.0f32)
                .run()?;
            Ok(())
        })
        .nvrtc("a_profile_compiles_its_architectures_code", || {
            // softmax.cu compiles its cluster kernels from compute capability 9.0 only.
            const SOFTMAX: KernelSource = kernel_source!("softmax.cu");
            let cluster_kernel = |profile| -> gpu_harness::Result<bool> {
                let device = Device::simulator_as(GpuProfile::named(profile)?)?;
                match device.kernel(&SOFTMAX, "softmax_cluster_4x256x32") {
                    Ok(_) => Ok(true),
                    Err(GpuError::MissingKernel { .. }) => Ok(false),
                    Err(e) => Err(e),
                }
            };
            let found = ["T4", "A100", "RTX4090", "H200", "B200"].map(cluster_kernel);
            if !matches!(found, [Ok(false), Ok(false), Ok(false), Ok(true), Ok(true)]) {
                return Err(format!(
                    "cluster kernel found for T4, A100, RTX4090, H200, B200: {found:?}"
                )
                .into());
            }
            Ok(())
        })
        .nvrtc("the_simulator_records_the_kernels_it_launches", || {
            let device = Device::simulator()?;
            launch_roof(&device, "read_roof_unroll4")?;
            launch_roof(&device, "read_roof_unroll8")?;
            // A launch refused for its arguments never ran: not recorded.
            let _ = expect_argument_error(&device, 3, false)?;
            // A clone shares the list.
            let launched = device.clone().take_launched_kernels();
            if launched != ["read_roof_unroll4", "read_roof_unroll8"] {
                return Err(format!(
                    "launched {launched:?}, expected read_roof_unroll4 then read_roof_unroll8"
                )
                .into());
            }
            let again = device.take_launched_kernels();
            if !again.is_empty() {
                return Err(format!("a second take returned {again:?}, expected nothing").into());
            }
            Ok(())
        })
        .nvrtc("the_simulator_counts_and_times_copies_between_devices", || {
            // Three separate simulated devices.
            copies_between_devices(Device::simulator()?, Device::simulator()?, Device::simulator()?)
        })
        .nvrtc("a_simulated_world_counts_and_times_copies_between_its_devices", || {
            // The same copies between the devices of one simulated world (one memory): counted the
            // same.
            let [a, b, c] =
                <[Device; 3]>::try_from(Device::simulated_world(3)?).expect("three devices");
            copies_between_devices(a, b, c)
        })
        .nvrtc("a_simulated_world_is_devices_of_one_memory", || {
            let world = Device::simulated_world(3)?;
            let ordinals: Vec<usize> = world.iter().map(Device::ordinal).collect();
            if ordinals != [0, 1, 2] {
                return Err(format!("ordinals {ordinals:?}, expected [0, 1, 2]").into());
            }
            for (i, a) in world.iter().enumerate() {
                for (j, b) in world.iter().enumerate() {
                    if a.shares_memory_with(b) != (i == j) || a.is_same(b) != (i == j) {
                        return Err(format!(
                            "devices {i} and {j}: sharing memory {}",
                            a.shares_memory_with(b)
                        )
                        .into());
                    }
                    if !a.enable_peer_access(b)? {
                        return Err(format!("no peer access from device {i} to device {j}").into());
                    }
                }
                let fork = a.fork()?;
                if !fork.shares_memory_with(a) || fork.ordinal() != i {
                    return Err(format!("device {i}'s fork is another device").into());
                }
            }
            if world[0].enable_peer_access(&Device::simulator()?)? {
                return Err("peer access between separate simulators".into());
            }
            Ok(())
        })
        .nvrtc("launch_together_runs_kernels_that_wait_for_each_other_on_a_simulated_world", || {
            let world = Device::simulated_world(3)?;
            let values = chain(&world)?;
            // 7, plus 1 + 2 + 3 from the three launches, on every device.
            if values.iter().any(|v| v.iter().any(|&x| x != 13)) {
                return Err(format!("got {values:?}, expected 13 everywhere").into());
            }
            for (k, device) in world.iter().enumerate() {
                let launched = device.take_launches();
                let counted = device.last_launch_counters().map(|c| c.blocks);
                if launched.len() != 1
                    || launched[0].0 != "chain"
                    || launched[0].1.blocks != 3
                    || counted != Some(3)
                {
                    return Err(
                        format!("device {k} recorded {launched:?} (last: {counted:?})").into()
                    );
                }
            }
            Ok(())
        })
        .nvrtc("launch_together_needs_one_simulated_world", || {
            let separate = [Device::simulator()?, Device::simulator()?];
            match chain(&separate) {
                Err(GpuError::Unsupported(reason)) if reason.contains("one simulated world") => {
                    Ok(())
                }
                other => Err(format!("expected Unsupported, got {other:?}").into()),
            }
        })
        .gpu_if(
            "a_gpu_records_no_kernel_names",
            |device| {
                device
                    .is_simulated()
                    .then(|| "needs a GPU: the simulator records the names".to_string())
            },
            |device| {
                launch_roof(device, "read_roof_unroll4")?;
                device.synchronize()?;
                let launched = device.take_launched_kernels();
                if !launched.is_empty() {
                    return Err(format!("a GPU recorded {launched:?}, expected nothing").into());
                }
                Ok(())
            },
        )
        .cpu("argument_error_message", || {
            let error = GpuError::Arguments {
                kernel: "k".into(),
                problem: "parameter 2 is 8 bytes, the launch passes the u32 4 (4 bytes)".into(),
            };
            insta::assert_snapshot!("argument_error_message", error.to_string());
            Ok(())
        })
        .run()
}
