//! Runs one course kernel on the simulator a fixed number of times, for profilers:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*Machine::launch*' \
//!     target/release/examples/profile_launch reduce_naive 3
//! ```
//!
//! counts the instructions of the launches alone. Kernels: reduce_naive, reduce_shuffle_vec4.

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let kernel = args.next().unwrap_or_else(|| "reduce_naive".to_string());
    let runs: u32 = args.next().map_or(1, |n| n.parse().expect("runs is a number"));
    let (file, grid, shared) = match kernel.as_str() {
        "reduce_naive" => ("reduce_naive.cu", 1024, 1024),
        "reduce_shuffle_vec4" => ("reduce_shuffle.cu", 64, 0),
        other => panic!("unknown kernel `{other}`"),
    };
    let module = common::module_of(file);
    let input = common::integer_inputs(1 << 18, 1);
    let mut instructions = 0;
    let start = std::time::Instant::now();
    let cpu_start = cpu_seconds();
    for _ in 0..runs {
        let (_, stats) = common::run_partials(&module, &kernel, &input, grid, shared);
        instructions += stats.warp_instructions;
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_start;
    println!(
        "{kernel}: {instructions} warp instructions in {secs:.3} s = {:.1} M/s ({cpu:.3} s on the \
         CPU = {:.1} M/s)",
        instructions as f64 / secs / 1e6,
        instructions as f64 / cpu / 1e6
    );
}

/// Seconds this process has run on a CPU (from /proc/self/schedstat; 0 where there is none), so
/// that other processes competing for the cores disturb the figure less than wall time.
fn cpu_seconds() -> f64 {
    let text = std::fs::read_to_string("/proc/self/schedstat").unwrap_or_default();
    text.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()).map_or(0.0, |ns| ns / 1e9)
}
