//! Effective bandwidth of every batch-stats step, f32 and bf16, at the cases the registry
//! (`course.toml`) gives them, against the read roof of the same run (`gpu_bench`).

fn main() -> std::process::ExitCode {
    gpu_bench::main(batch_stats::steps())
}
