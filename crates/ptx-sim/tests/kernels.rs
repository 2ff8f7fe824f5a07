//! The interpreter on the course's real kernels: every kernel's PTX (from NVRTC, for compute_90)
//! parses; the ladder's kernels and reduce_atomic.cu's i32 sums give exact results on
//! integer-valued inputs; the counters of the first steps are frozen as snapshots; the speed is
//! printed. These need NVRTC but no GPU: without NVRTC they are reported as ignored, with the
//! reason.

mod common;

use common::{integer_inputs, module_of, run_partials};
use gpu_test::{TestResult, TestSuite, counters_comparable};
use ptx_sim::{Machine, ParamValue};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .nvrtc("parse::every_kernel_ptx_parses", every_kernel_ptx_parses)
        .nvrtc("run::reduce_naive_partials_are_exact", reduce_naive_partials_are_exact)
        .nvrtc("run::interleaved_steps_are_exact", interleaved_steps_are_exact)
        .nvrtc("run::first_add_steps_are_exact", first_add_steps_are_exact)
        .nvrtc("run::unroll_steps_are_exact", unroll_steps_are_exact)
        .nvrtc("run::shuffle_steps_are_exact", shuffle_steps_are_exact)
        .nvrtc(
            "run::atomic_and_last_block_i32_sums_are_exact",
            atomic_and_last_block_i32_sums_are_exact,
        )
        .nvrtc_if(
            "counters::naive_vs_interleaved",
            counters_comparable,
            naive_vs_interleaved_counters,
        )
        .nvrtc("speed::interpreter_speed", interpreter_speed)
        .run()
}

fn every_kernel_ptx_parses() -> TestResult {
    let files = common::kernel_files();
    assert!(!files.is_empty(), "no kernels in cuda/");
    for file in files {
        let module = common::module_of(&file);
        assert!(!module.kernels.is_empty(), "{file}: no kernels");
        for k in &module.kernels {
            println!(
                "{file}: {} ({} params, {} instructions, {} B static shared)",
                k.name,
                k.params.len(),
                k.instruction_count(),
                k.static_shared_bytes
            );
        }
    }
    Ok(())
}

const SIZES: [usize; 5] = [1, 31, 256, 257, 5000];

/// Kernels whose block `b` reduces `input[b * per_block .. (b + 1) * per_block]`.
fn check_per_block(file: &str, kernel: &str, per_block: usize, shared: u32) {
    let module = module_of(file);
    for n in SIZES {
        let input = integer_inputs(n, n as u64);
        let grid = n.div_ceil(per_block) as u32;
        let (partials, _) = run_partials(&module, kernel, &input, grid, shared);
        let expected: Vec<f32> = input.chunks(per_block).map(|c| c.iter().sum()).collect();
        assert_eq!(partials, expected, "{kernel}, n = {n}");
    }
}

/// Grid-stride kernels: the partials add up to the total.
fn check_total(file: &str, kernel: &str, grid: u32, shared: u32) {
    let module = module_of(file);
    for n in SIZES.into_iter().chain([4099, 20000]) {
        let input = integer_inputs(n, n as u64 + 7);
        let (partials, _) = run_partials(&module, kernel, &input, grid, shared);
        let total: f32 = partials.iter().sum();
        assert_eq!(total, input.iter().sum::<f32>(), "{kernel}, n = {n}, grid {grid}");
    }
}

fn reduce_naive_partials_are_exact() -> TestResult {
    check_per_block("reduce_naive.cu", "reduce_naive", 256, 1024);
    Ok(())
}

fn interleaved_steps_are_exact() -> TestResult {
    check_per_block("reduce_interleaved.cu", "reduce_strided_index", 256, 1024);
    check_per_block("reduce_interleaved.cu", "reduce_interleaved", 256, 1024);
    Ok(())
}

fn first_add_steps_are_exact() -> TestResult {
    check_per_block("reduce_first_add.cu", "reduce_first_add", 512, 1024);
    for grid in [1, 3, 8] {
        check_total("reduce_first_add.cu", "reduce_grid_stride", grid, 1024);
    }
    Ok(())
}

fn unroll_steps_are_exact() -> TestResult {
    for grid in [1, 5] {
        check_total("reduce_unroll.cu", "reduce_unroll_last_warp", grid, 1024);
        check_total("reduce_unroll.cu", "reduce_complete_unroll", grid, 0);
    }
    Ok(())
}

fn shuffle_steps_are_exact() -> TestResult {
    for grid in [1, 5] {
        check_total("reduce_shuffle.cu", "reduce_shuffle", grid, 0);
        check_total("reduce_shuffle.cu", "reduce_shuffle_vec4", grid, 0);
    }
    Ok(())
}

fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn input(n: usize) -> Vec<i32> {
    (0..n as i64).map(|i| ((i * 7919) % 2001 - 1000) as i32 * 1_000_003).collect()
}

fn atomic_and_last_block_i32_sums_are_exact() -> TestResult {
    let module = module_of("reduce_atomic.cu");
    for n in [1usize, 255, 1024, 5003] {
        let data = input(n);
        let expected = data.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        for grid in [1u32, 3] {
            let mut m = Machine::new();
            let inp = m.alloc(n * 4).unwrap();
            m.write(inp, &i32_bytes(&data)).unwrap();
            let result = m.alloc(4).unwrap();
            m.launch(
                &module,
                "atomic_sum_i32",
                (grid, 1, 1),
                (256, 1, 1),
                0,
                &[ParamValue::U64(inp), ParamValue::U64(result), ParamValue::U64(n as u64)],
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let got = i32::from_le_bytes(m.read(result, 4).unwrap().try_into().unwrap());
            assert_eq!(got, expected, "atomic_sum_i32 n={n} grid={grid}");

            let partial = m.alloc(grid as usize * 4).unwrap();
            let ticket = m.alloc(4).unwrap();
            let result = m.alloc(4).unwrap();
            let stats = m
                .launch(
                    &module,
                    "last_block_sum_i32",
                    (grid, 1, 1),
                    (256, 1, 1),
                    0,
                    &[
                        ParamValue::U64(inp),
                        ParamValue::U64(partial),
                        ParamValue::U64(ticket),
                        ParamValue::U64(result),
                        ParamValue::U64(n as u64),
                    ],
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let got = i32::from_le_bytes(m.read(result, 4).unwrap().try_into().unwrap());
            assert_eq!(got, expected, "last_block_sum_i32 n={n} grid={grid}");
            assert_eq!(m.read(ticket, 4).unwrap(), vec![0; 4], "the last block resets the ticket");
            assert_eq!(stats.atomics, grid as u64);
        }
    }
    Ok(())
}

fn counters(file: &str, kernel: &str) -> ptx_sim::LaunchStats {
    let module = module_of(file);
    let input = integer_inputs(1024, 42);
    let (partials, stats) = run_partials(&module, kernel, &input, 4, 1024);
    let expected: Vec<f32> = input.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(partials, expected, "{kernel}");
    stats
}

fn naive_vs_interleaved_counters() -> TestResult {
    let naive = counters("reduce_naive.cu", "reduce_naive");
    let strided = counters("reduce_interleaved.cu", "reduce_strided_index");
    let interleaved = counters("reduce_interleaved.cu", "reduce_interleaved");
    assert!(
        naive.divergent_branches > 2 * interleaved.divergent_branches,
        "{naive}\n{interleaved}"
    );
    assert!(naive.average_active_lanes() < interleaved.average_active_lanes());
    insta::assert_snapshot!("reduce_naive", naive.to_string());
    insta::assert_snapshot!("reduce_strided_index", strided.to_string());
    insta::assert_snapshot!("reduce_interleaved", interleaved.to_string());
    Ok(())
}

/// Measures the interpreter's speed in warp instructions per second (printed, not asserted).
fn interpreter_speed() -> TestResult {
    for (file, kernel, shared) in
        [("reduce_naive.cu", "reduce_naive", 1024), ("reduce_shuffle.cu", "reduce_shuffle_vec4", 0)]
    {
        let module = module_of(file);
        let n = 1 << 18;
        let input = integer_inputs(n, 1);
        let grid = if kernel == "reduce_naive" { (n / 256) as u32 } else { 64 };
        let start = std::time::Instant::now();
        let (partials, stats) = run_partials(&module, kernel, &input, grid, shared);
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(partials.iter().sum::<f32>(), input.iter().sum::<f32>());
        println!(
            "{kernel}: {} warp instructions in {secs:.3} s = {:.1} M warp instructions/s ({:.1} M \
             thread instructions/s)",
            stats.warp_instructions,
            stats.warp_instructions as f64 / secs / 1e6,
            stats.active_lanes as f64 / secs / 1e6
        );
    }
    Ok(())
}
