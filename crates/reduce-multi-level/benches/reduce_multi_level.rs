//! Effective bandwidth of every reduce-multi-level step at the cases the registry (`course.toml`)
//! gives it, against the read and copy roofs of the same run (`gpu_bench`).

fn main() -> std::process::ExitCode {
    gpu_bench::main(reduce_multi_level::steps())
}
