//! The instruction budget: kernels that never finish on the simulator stop with an error naming the
//! kernel, the block and the warp, instead of hanging the test run. Needs NVRTC (no GPU).

mod common;

use common::module_of_source;
use gpu_test::{TestResult, TestSuite};
use ptx_sim::{DEFAULT_INSTRUCTION_BUDGET, Fault, Machine, ParamValue, SimError};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .nvrtc("budget::spin_on_a_flag_nobody_sets_stops", spin_on_a_flag_nobody_sets_stops)
        .nvrtc("budget::waiting_for_a_later_block_stops", waiting_for_a_later_block_stops)
        .nvrtc(
            "budget::barrier_some_threads_never_reach_stops",
            barrier_some_threads_never_reach_stops,
        )
        .nvrtc(
            "budget::lanes_of_one_warp_waiting_on_each_other_stop",
            lanes_of_one_warp_waiting_on_each_other_stop,
        )
        .nvrtc("budget::work_within_the_budget_finishes", work_within_the_budget_finishes)
        .nvrtc(
            "budget::default_budget_stops_a_spin_in_seconds",
            default_budget_stops_a_spin_in_seconds,
        )
        .run()
}

const DEADLOCKS: &str = r#"
// Block 0 waits for a flag that nothing ever sets.
extern "C" __global__ void spin_on_flag(volatile int* flag)
{
    while (*flag == 0) { }
}

// A single-pass pattern that needs the blocks to run concurrently: block 0 waits for block 1,
// which the simulator (blocks in order) only runs after block 0 has finished.
extern "C" __global__ void wait_for_next_block(volatile int* flags)
{
    if (blockIdx.x == 0) {
        while (flags[1] == 0) { }
    } else {
        flags[blockIdx.x] = 1;
    }
}

// Warp 0 never reaches the barrier: it waits for a flag that warp 1 sets only after the barrier.
extern "C" __global__ void barrier_never_reached(volatile int* flag)
{
    if (threadIdx.x < 32) {
        while (*flag == 0) { }
    }
    __syncthreads();
    if (threadIdx.x == 32) {
        *flag = 1;
    }
}

// Two lanes of one warp, each waiting for the other to go first.
extern "C" __global__ void lanes_wait_on_each_other(volatile int* flags)
{
    if (threadIdx.x == 0) {
        while (flags[0] == 0) { }
        flags[1] = 1;
    } else if (threadIdx.x == 1) {
        while (flags[1] == 0) { }
        flags[0] = 1;
    }
}

// Legitimate work: one block counts to n.
extern "C" __global__ void count_to(volatile int* out, int n)
{
    for (int i = 0; i < n; ++i) {
        *out = i + 1;
    }
}
"#;

/// Launches `kernel(flag)` over `grid` blocks of `threads` with `budget`; returns the error.
fn stuck_launch(kernel: &str, grid: u32, threads: u32, budget: u64) -> SimError {
    let module = module_of_source("deadlocks.cu", DEADLOCKS);
    let mut m = Machine::new();
    m.set_instruction_budget(budget);
    let flags = m.alloc(64).unwrap();
    match m.launch(&module, kernel, (grid, 1, 1), (threads, 1, 1), 0, &[ParamValue::U64(flags)]) {
        Ok(stats) => {
            panic!("{kernel} finished, {} warp instructions:\n{stats}", stats.warp_instructions)
        }
        Err(e) => e,
    }
}

/// Checks the error is a budget fault of `kernel` in `block` while `warp` ran, with
/// `threads_at_barrier` threads waiting, and that its message names all of them.
fn assert_budget_fault(
    e: &SimError,
    kernel: &str,
    block: u32,
    warp: u32,
    threads_at_barrier: u32,
    budget: u64,
) {
    let SimError::Fault { site, fault } = e else { panic!("not a fault: {e}") };
    assert_eq!(
        *fault,
        Fault::InstructionBudgetExceeded { budget, warp, threads_at_barrier },
        "{e}"
    );
    assert_eq!(site.kernel, kernel);
    assert_eq!(site.block, (block, 0, 0));
    assert_eq!(site.thread.0 / 32, warp, "the site is a thread of the warp: {e}");
    let message = e.to_string();
    for part in
        [format!("kernel `{kernel}`"), format!("block ({block}, 0, 0)"), format!("warp {warp} ")]
    {
        assert!(message.contains(&part), "`{part}` missing from: {message}");
    }
    println!("{message}");
}

fn spin_on_a_flag_nobody_sets_stops() -> TestResult {
    let e = stuck_launch("spin_on_flag", 1, 32, 100_000);
    assert_budget_fault(&e, "spin_on_flag", 0, 0, 0, 100_000);
    Ok(())
}

fn waiting_for_a_later_block_stops() -> TestResult {
    let e = stuck_launch("wait_for_next_block", 2, 64, 100_000);
    assert_budget_fault(&e, "wait_for_next_block", 0, 0, 0, 100_000);
    Ok(())
}

fn barrier_some_threads_never_reach_stops() -> TestResult {
    let e = stuck_launch("barrier_never_reached", 1, 64, 100_000);
    assert_budget_fault(&e, "barrier_never_reached", 0, 0, 32, 100_000);
    assert!(e.to_string().contains("32 threads of the block waiting at a barrier"), "{e}");
    Ok(())
}

fn lanes_of_one_warp_waiting_on_each_other_stop() -> TestResult {
    let e = stuck_launch("lanes_wait_on_each_other", 1, 32, 100_000);
    assert_budget_fault(&e, "lanes_wait_on_each_other", 0, 0, 0, 100_000);
    Ok(())
}

/// The budget counts per block: a launch whose every block stays under it finishes, even when the
/// grid as a whole runs far more; one block over it fails.
fn work_within_the_budget_finishes() -> TestResult {
    let module = module_of_source("deadlocks.cu", DEADLOCKS);
    let mut m = Machine::new();
    let out = m.alloc(4).unwrap();
    let params = [ParamValue::U64(out), ParamValue::I32(1000)];
    let one_block = m.launch(&module, "count_to", (1, 1, 1), (1, 1, 1), 0, &params).unwrap();
    m.set_instruction_budget(one_block.warp_instructions);
    let grid = m.launch(&module, "count_to", (8, 1, 1), (1, 1, 1), 0, &params).unwrap();
    assert_eq!(grid.warp_instructions, 8 * one_block.warp_instructions);
    assert_eq!(m.read(out, 4).unwrap(), 1000i32.to_le_bytes());
    m.set_instruction_budget(one_block.warp_instructions - 1);
    let e = m.launch(&module, "count_to", (1, 1, 1), (1, 1, 1), 0, &params).unwrap_err();
    assert!(
        matches!(e, SimError::Fault { fault: Fault::InstructionBudgetExceeded { .. }, .. }),
        "{e}"
    );
    Ok(())
}

/// With the default budget a spin-wait still stops within seconds (the time is printed).
fn default_budget_stops_a_spin_in_seconds() -> TestResult {
    assert_eq!(
        Machine::new().instruction_budget(),
        DEFAULT_INSTRUCTION_BUDGET,
        "PTX_SIM_INSTRUCTION_BUDGET is set"
    );
    let start = std::time::Instant::now();
    let e = stuck_launch("spin_on_flag", 1, 1, DEFAULT_INSTRUCTION_BUDGET);
    let secs = start.elapsed().as_secs_f64();
    assert_budget_fault(&e, "spin_on_flag", 0, 0, 0, DEFAULT_INSTRUCTION_BUDGET);
    println!(
        "the default budget of {DEFAULT_INSTRUCTION_BUDGET} warp instructions stopped a spin in \
         {secs:.1} s"
    );
    Ok(())
}
