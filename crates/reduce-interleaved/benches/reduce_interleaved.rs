//! Effective bandwidth of every reduce-interleaved step at the cases the registry (`course.toml`)
//! gives it, against the read and copy roofs of the same run (`gpu_bench`).

fn main() -> std::process::ExitCode {
    gpu_bench::main(reduce_interleaved::steps())
}
