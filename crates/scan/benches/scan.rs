//! Effective bandwidth of every scan step at the cases the registry (`course.toml`) gives it,
//! against the copy roof of the same run (`gpu_bench`).

fn main() -> std::process::ExitCode {
    gpu_bench::main(scan::steps())
}
