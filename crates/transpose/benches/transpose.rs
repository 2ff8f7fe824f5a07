//! Effective bandwidth of every transpose step, and of cuBLAS's geam where the peer library is
//! built (`COURSE_PEERS`), at the cases the registry (`course.toml`) gives them, against the copy
//! roof of the same run (`gpu_bench`).

fn main() -> std::process::ExitCode {
    gpu_bench::main(transpose::steps())
}
