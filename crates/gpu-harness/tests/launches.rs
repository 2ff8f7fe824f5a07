//! Launches are checked against the kernel's parameters, on the GPU as on the CPU simulator: a
//! launch with too few or too many arguments, or an argument of the wrong size, is an error naming
//! the kernel and the parameter, before anything runs. The simulator also records the name of
//! every kernel it launches, so that a test can check which kernel a step launches, and counts and
//! times (on a model) the copies between simulated devices.

use gpu_harness::{Device, GpuError, KernelSource, LaunchConfig, kernel_source};
use gpu_test::{TestResult, TestSuite};

const ROOFS: KernelSource = kernel_source!("roofs.cu");

/// `read_roof_unroll4(const float4* input, float* sink, long long count, float never)`.
fn expect_argument_error(device: &Device, arguments: usize, count_as_u32: bool) -> Result<String, String> {
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
        Ok(()) => Err(format!("a launch with {arguments} arguments (count as u32: {count_as_u32}) ran")),
        Err(other) => Err(format!("expected an Arguments error, got {other}")),
    }
}

/// Launches roofs.cu's `name` (a streaming read with the same parameters as `read_roof_unroll4`)
/// on 16 floats.
fn launch_roof(device: &Device, name: &str) -> TestResult {
    let kernel = device.kernel(&ROOFS, name)?;
    let (input, sink) = (device.upload(&[1.0f32; 16])?, device.alloc::<f32>(1)?);
    device.launch(&kernel, LaunchConfig::linear(1, 32, 0)).arg(&input).arg(&sink).arg(4i64).arg(f32::NAN).run()?;
    Ok(())
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
        .nvrtc("the_simulator_records_the_kernels_it_launches", || {
            let device = Device::simulator()?;
            launch_roof(&device, "read_roof_unroll4")?;
            launch_roof(&device, "read_roof_unroll8")?;
            // A launch refused for its arguments never ran: not recorded.
            let _ = expect_argument_error(&device, 3, false)?;
            // A clone shares the list.
            let launched = device.clone().take_launched_kernels();
            if launched != ["read_roof_unroll4", "read_roof_unroll8"] {
                return Err(format!("launched {launched:?}, expected read_roof_unroll4 then read_roof_unroll8").into());
            }
            let again = device.take_launched_kernels();
            if !again.is_empty() {
                return Err(format!("a second take returned {again:?}, expected nothing").into());
            }
            Ok(())
        })
        .nvrtc("the_simulator_counts_and_times_copies_between_devices", || {
            // Three simulated devices; a's copies go through a fork of a (its copy stream).
            let (a, b, c) = (Device::simulator()?, Device::simulator()?, Device::simulator()?);
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
        })
        .gpu_if(
            "a_gpu_records_no_kernel_names",
            |device| device.is_simulated().then(|| "needs a GPU: the simulator records the names".to_string()),
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
