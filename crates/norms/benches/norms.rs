//! Effective bandwidth of every norm step, f32 and bf16, at the cases the registry (`course.toml`)
//! gives them, against the copy roof of the same run (`gpu_bench`).

fn main() -> std::process::ExitCode {
    gpu_bench::main(norms::steps())
}
