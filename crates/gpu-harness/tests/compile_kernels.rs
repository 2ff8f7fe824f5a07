//! Compiles every kernel source in `cuda/` with NVRTC, for Hopper (sm_90) and for every other
//! architecture from Turing (sm_75, a T4) that the NVRTC in use lists, the PTX of each checked for
//! instructions its architecture does not have (an inline `asm` outside its `__CUDA_ARCH__`
//! guard). Needs the NVRTC library but no GPU, so it runs in CI.

use std::path::PathBuf;

use gpu_harness::compile::{self, Target};
use gpu_harness::{GpuError, KernelSource};
use gpu_test::{TestResult, TestSuite};

fn cuda_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../cuda")
}

/// Every `cuda/*.cu`, leaked to `'static` so it can be a [`KernelSource`].
fn every_kernel_source() -> Vec<KernelSource> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(cuda_dir())
        .expect("cuda/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| KernelSource {
            file: p.file_name().unwrap().to_string_lossy().into_owned().leak(),
            code: std::fs::read_to_string(&p).expect("readable source").leak(),
        })
        .collect()
}

fn compile_all(target: Target) -> TestResult {
    let sources = every_kernel_source();
    if sources.is_empty() {
        return Err("no kernels found in cuda/".into());
    }
    for source in &sources {
        let image = compile::compile(source, target, &[])?;
        println!("{} -> {} bytes for {target:?}", source.file, image.bytes.len());
        if let Target::Ptx { major, minor } = target {
            let ptx = image.ptx_text().unwrap_or_default();
            if let Some(problem) = newer_instruction(&ptx, major * 10 + minor) {
                return Err(format!("{} for compute_{major}{minor}: {problem}", source.file).into());
            }
        }
    }
    Ok(())
}

/// Instructions (as PTX spells their start) of a newer architecture than some GPUs have, with the
/// first one that has them (the PTX ISA's target requirements): what the kernels use, and kin.
const NEWER_INSTRUCTIONS: &[(&str, u32)] = &[
    ("max.NaN", 80),
    ("min.NaN", 80),
    ("cvt.rn.bf16", 80),
    ("cvt.rn.relu", 80),
    ("redux.sync", 80),
    ("cp.async.", 80),
    ("mbarrier.", 80),
    ("cp.async.bulk", 90),
    ("mbarrier.try_wait", 90),
    ("mbarrier.arrive.expect_tx", 90),
    ("fence.mbarrier_init", 90),
    ("barrier.cluster", 90),
    ("mapa.", 90),
    ("shared::cluster", 90),
    ("elect.sync", 90),
    ("setmaxnreg", 90),
    ("multimem.", 90),
];

/// The first instruction in `ptx` that an architecture `arch` (e.g. 75) does not have, if any.
/// NVRTC passes inline `asm` into PTX unchecked, so an instruction outside its `__CUDA_ARCH__`
/// guard compiles to PTX for an older GPU and only fails when that GPU's driver loads it.
fn newer_instruction(ptx: &str, arch: u32) -> Option<String> {
    let code =
        ptx.lines().map(str::trim).filter(|l| !l.starts_with("//") && !l.starts_with(".loc"));
    code.flat_map(|line| line.split_whitespace().map(move |word| (line, word))).find_map(
        |(line, word)| {
            let (start, from) = NEWER_INSTRUCTIONS
                .iter()
                .find(|(start, from)| *from > arch && word.contains(start))?;
            Some(format!("`{line}` uses {start}, which needs sm_{from}: is it under its guard?"))
        },
    )
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .nvrtc("every_kernel_compiles_for_sm_90", || {
            compile_all(Target::Cubin { major: 9, minor: 0 })
        })
        .nvrtc("every_kernel_compiles_for_every_architecture_from_sm_75", || {
            // Every architecture a student's GPU may have: Turing (7.5) to the newest this NVRTC
            // knows, as PTX (what the driver compiles on the student's GPU; the code under
            // `__CUDA_ARCH__` guards is each architecture's own). sm_90 is compiled to machine
            // code above.
            let archs: Vec<u32> =
                compile::supported_archs()?.into_iter().filter(|&a| a >= 75).collect();
            println!("NVRTC {:?} lists {archs:?}", compile::nvrtc_version()?);
            // One thread per architecture: NVRTC compiles separate programs at once.
            let failures: Vec<String> = std::thread::scope(|scope| {
                let compiles: Vec<_> = archs
                    .into_iter()
                    .filter(|&a| a != 90)
                    .map(|arch| {
                        let target = Target::Ptx { major: arch / 10, minor: arch % 10 };
                        (
                            arch,
                            scope.spawn(move || compile_all(target).map_err(|e| format!("{e:?}"))),
                        )
                    })
                    .collect();
                compiles
                    .into_iter()
                    .filter_map(|(arch, compile)| match compile.join() {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(format!("sm_{arch}: {e}")),
                        Err(_) => Some(format!("sm_{arch}: the compile panicked")),
                    })
                    .collect()
            });
            if failures.is_empty() { Ok(()) } else { Err(failures.join("\n").into()) }
        })
        .nvrtc("an_instruction_outside_its_guard_is_found", || {
            // NVRTC compiles sm_80's max.NaN, unguarded, to PTX for compute_75 without a word.
            let unguarded = KernelSource {
                file: "unguarded.cu",
                code: "extern \"C\" __global__ void k(float* x) {\n    float m;\n    \
                       asm(\"max.NaN.f32 %0, %1, %2;\" : \"=f\"(m) : \"f\"(x[0]), \
                       \"f\"(x[1]));\n    x[2] = m;\n}\n",
            };
            let ptx = |major, minor| -> gpu_harness::Result<String> {
                let image = compile::compile(&unguarded, Target::Ptx { major, minor }, &[])?;
                Ok(image.ptx_text().unwrap_or_default())
            };
            let found = (newer_instruction(&ptx(7, 5)?, 75), newer_instruction(&ptx(8, 0)?, 80));
            match found {
                (Some(problem), None) if problem.contains("max.NaN") => Ok(()),
                other => Err(format!("max.NaN for compute_75, compute_80: {other:?}").into()),
            }
        })
        .nvrtc("nvrtc_knows_hopper", || {
            let archs = compile::supported_archs()?;
            if !archs.contains(&90) {
                return Err(format!(
                    "NVRTC {:?} does not list sm_90: {archs:?}",
                    compile::nvrtc_version()?
                )
                .into());
            }
            Ok(())
        })
        .nvrtc("a_compile_error_names_file_and_line", || {
            let broken = KernelSource {
                file: "broken.cu",
                code: "extern \"C\" __global__ void k(float* out) {\n    out[0] = 1.0f;\n    \
                       out[1] = undefined_name;\n}\n",
            };
            match compile::compile(&broken, Target::Cubin { major: 9, minor: 0 }, &[]) {
                Err(GpuError::Compile { file, line, log })
                    if file == "broken.cu" && line == Some(3) =>
                {
                    if !log.contains("undefined_name") {
                        return Err(format!("log does not name the identifier: {log}").into());
                    }
                    Ok(())
                }
                other => {
                    Err(format!("expected a compile error at broken.cu:3, got {other:?}").into())
                }
            }
        })
        .nvrtc("shared_headers_are_includable", || {
            for (name, _) in compile::shared_headers() {
                let code =
                    format!("#include \"{name}\"\nextern \"C\" __global__ void k() {{}}\n").leak();
                compile::compile(
                    &KernelSource { file: "include_test.cu", code },
                    Target::Cubin { major: 9, minor: 0 },
                    &[],
                )?;
            }
            Ok(())
        })
        .run()
}
