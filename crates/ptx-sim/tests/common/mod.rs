//! Shared test helpers: PTX for `cuda/*.cu` from NVRTC, inputs, and a launch of a partials kernel.
#![allow(dead_code)]

use std::path::PathBuf;

use gpu_harness::KernelSource;
use gpu_harness::compile::{Target, compile};

pub fn cuda_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../cuda")
}

/// Every `cuda/*.cu` file name, sorted.
pub fn kernel_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cuda_dir())
        .expect("cuda/ is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cu"))
        .collect();
    names.sort();
    names
}

/// PTX for `compute_90` of `cuda/<file>`, compiled with `-DBLOCK_SIZE=256`.
pub fn ptx_of(file: &str) -> String {
    let code = std::fs::read_to_string(cuda_dir().join(file)).expect("kernel source is readable");
    let source = KernelSource { file: file.to_string().leak(), code: code.leak() };
    let image =
        compile(&source, Target::Ptx { major: 9, minor: 0 }, &[("BLOCK_SIZE", "256".to_string())])
            .expect("kernel compiles");
    String::from_utf8_lossy(&image.bytes).trim_end_matches('\0').to_string()
}

/// The parsed module of `cuda/<file>`.
pub fn module_of(file: &str) -> ptx_sim::Module {
    ptx_sim::parse(&ptx_of(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Little-endian bytes of f32 values.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// f32 values from little-endian bytes.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Integer-valued f32 inputs in [-8, 8], so every sum is exact.
pub fn integer_inputs(n: usize, seed: u64) -> Vec<f32> {
    // splitmix64: a fixed, dependency-free generator, so inputs are the same everywhere.
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z % 17) as i32 - 8) as f32
        })
        .collect()
}

/// Runs a kernel `(input, partials, n: u32)` over `grid` blocks of 256 and returns the partials.
pub fn run_partials(
    module: &ptx_sim::Module,
    kernel: &str,
    input: &[f32],
    grid: u32,
    shared: u32,
) -> (Vec<f32>, ptx_sim::LaunchStats) {
    run_partials_traced(module, kernel, input, grid, shared, None)
}

/// [`run_partials`], the launch traced with `tracing` (`None`: not traced).
pub fn run_partials_traced(
    module: &ptx_sim::Module,
    kernel: &str,
    input: &[f32],
    grid: u32,
    shared: u32,
    tracing: Option<ptx_sim::TraceOptions>,
) -> (Vec<f32>, ptx_sim::LaunchStats) {
    use ptx_sim::{Machine, ParamValue};
    let mut m = Machine::new();
    m.set_tracing(tracing);
    let inp = m.alloc(input.len() * 4).expect("alloc");
    m.write(inp, &f32_bytes(input)).expect("write");
    let out = m.alloc(grid as usize * 4).expect("alloc");
    m.write(out, &f32_bytes(&vec![f32::NAN; grid as usize])).expect("poison");
    let stats = m
        .launch(
            module,
            kernel,
            (grid, 1, 1),
            (256, 1, 1),
            shared,
            &[ParamValue::U64(inp), ParamValue::U64(out), ParamValue::U32(input.len() as u32)],
        )
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    (f32s(&m.read(out, grid as usize * 4).expect("read")), stats)
}

/// PTX for `compute_90` of an inline CUDA snippet (`name` is the file name NVRTC reports).
pub fn ptx_of_source(name: &'static str, code: &'static str) -> String {
    let image =
        compile(&KernelSource { file: name, code }, Target::Ptx { major: 9, minor: 0 }, &[])
            .unwrap_or_else(|e| panic!("{name} compiles: {e}"));
    String::from_utf8_lossy(&image.bytes).trim_end_matches('\0').to_string()
}

/// The parsed module of an inline CUDA snippet.
pub fn module_of_source(name: &'static str, code: &'static str) -> ptx_sim::Module {
    ptx_sim::parse(&ptx_of_source(name, code)).unwrap_or_else(|e| panic!("{name}: {e}"))
}
