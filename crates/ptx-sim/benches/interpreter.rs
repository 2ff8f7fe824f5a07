//! The simulator's own speed, in warp instructions per second (criterion's "elements"), on the two
//! kernels issue 16 measures: reduce_naive (shared memory, barriers, divergence) and
//! reduce_shuffle_vec4 (vector loads, shuffles). Needs NVRTC to compile the kernels to PTX.
//!
//! `cargo bench -p ptx-sim --bench interpreter`

#[path = "../tests/common/mod.rs"]
mod common;

use common::{integer_inputs, module_of, run_partials};
use criterion::{Criterion, Throughput};

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
    group.bench_function(kernel, |b| b.iter(|| run_partials(&module, kernel, &input, grid, shared)));
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_kernel(&mut c, "reduce_naive.cu", "reduce_naive", (ELEMENTS / 256) as u32, 1024);
    bench_kernel(&mut c, "reduce_shuffle.cu", "reduce_shuffle_vec4", 64, 0);
    c.final_summary();
}
