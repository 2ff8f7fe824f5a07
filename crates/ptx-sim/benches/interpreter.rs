//! The simulator's own speed, in warp instructions per second (criterion's "elements"), on the two
//! kernels issue 16 measures: reduce_naive (shared memory, barriers, divergence) and
//! reduce_shuffle_vec4 (vector loads, shuffles); and reduce_naive traced (`Machine::set_tracing`):
//! its first block, as the book's pictures trace, and every block, the most a trace can record.
//! Needs NVRTC to compile the kernels to PTX.
//!
//! `cargo bench -p ptx-sim --bench interpreter`

#[path = "../tests/common/mod.rs"]
mod common;

use common::{integer_inputs, module_of, run_partials, run_partials_traced};
use criterion::{Criterion, Throughput};
use ptx_sim::TraceOptions;

/// 2^18 elements: one launch of reduce_naive runs about a million warp instructions.
const ELEMENTS: usize = 1 << 18;

fn bench_kernel(c: &mut Criterion, file: &str, kernel: &str, grid: u32, shared: u32) {
    let module = module_of(file);
    let input = integer_inputs(ELEMENTS, 1);
    let (partials, stats) = run_partials(&module, kernel, &input, grid, shared);
    assert_eq!(partials.iter().sum::<f32>(), input.iter().sum::<f32>(), "{kernel} sums wrong");
    let mut group = c.benchmark_group("warp_instructions");
    group.throughput(Throughput::Elements(stats.warp_instructions));
    group.sample_size(10);
    group
        .bench_function(kernel, |b| b.iter(|| run_partials(&module, kernel, &input, grid, shared)));
    group.finish();
}

/// reduce_naive as above, traced with `options`, named `name`.
fn bench_traced(c: &mut Criterion, name: &str, options: TraceOptions) {
    let module = module_of("reduce_naive.cu");
    let input = integer_inputs(ELEMENTS, 1);
    let grid = (ELEMENTS / 256) as u32;
    let (_, stats) = run_partials(&module, "reduce_naive", &input, grid, 1024);
    let mut group = c.benchmark_group("warp_instructions");
    group.throughput(Throughput::Elements(stats.warp_instructions));
    group.sample_size(10);
    group.bench_function(name, |b| {
        b.iter(|| run_partials_traced(&module, "reduce_naive", &input, grid, 1024, Some(options)))
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_kernel(&mut c, "reduce_naive.cu", "reduce_naive", (ELEMENTS / 256) as u32, 1024);
    bench_kernel(&mut c, "reduce_shuffle.cu", "reduce_shuffle_vec4", 64, 0);
    bench_traced(&mut c, "reduce_naive traced, block 0", TraceOptions::default());
    bench_traced(
        &mut c,
        "reduce_naive traced, every block",
        TraceOptions { blocks: u64::MAX, max_steps: usize::MAX },
    );
    c.final_summary();
}
