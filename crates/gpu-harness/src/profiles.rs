//! GPUs as data: one [`GpuProfile`] per GPU a student is likely to have, from NVIDIA's published
//! figures, and `GPU_PROFILE=<name>`, which runs that GPU's code path and limits on a newer GPU or
//! on the CPU simulator.
//!
//! The per-architecture limits (threads, registers and shared memory per SM and per block) are the
//! CUDA C++ Programming Guide's table "Technical Specifications per Compute Capability"; the SM
//! count, L2, bandwidth and memory of each GPU are its datasheet's (or, where the datasheet leaves
//! one out, its architecture whitepaper's), as each row's comment says. Sizes in KiB and GiB are
//! what the guide and the datasheets write as KB and GB.

use std::sync::OnceLock;

use crate::error::{GpuError, Result};

/// What a GPU is to the code: its architecture, its shape and its limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuProfile {
    /// The name `GPU_PROFILE` takes (case does not matter).
    pub name: &'static str,
    /// (major, minor), e.g. (7, 5) for Turing.
    pub compute_capability: (u32, u32),
    pub multiprocessors: u32,
    /// Threads resident on one SM at once.
    pub max_threads_per_multiprocessor: u32,
    pub max_threads_per_block: u32,
    /// 32-bit registers of one SM (a block's threads x registers per thread must fit them).
    pub registers_per_multiprocessor: u32,
    pub max_registers_per_thread: u32,
    /// Shared memory of one SM, at the largest carve-out.
    pub shared_bytes_per_multiprocessor: u32,
    /// The most shared memory (static and dynamic) one block may have, with the opt-in
    /// (`cudaFuncAttributeMaxDynamicSharedMemorySize`) where it is above 48 KiB.
    pub max_shared_bytes_per_block: u32,
    pub l2_cache_bytes: u64,
    /// DRAM bandwidth, GB/s (10^9 bytes/s).
    pub dram_bandwidth_gbs: f64,
    pub memory_bytes: u64,
}

const KIB: u32 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The limits of one compute capability (Programming Guide, "Technical Specifications per Compute
/// Capability"): threads per SM, shared memory per SM and per block. Every architecture here has
/// 64 Ki registers per SM, at most 255 a thread and 1024 threads a block.
struct Arch {
    compute_capability: (u32, u32),
    threads_per_sm: u32,
    shared_per_sm: u32,
    shared_per_block: u32,
}

/// An architecture of compute capability `cc` with `threads` per SM, and `sm_kib` and `block_kib`
/// of shared memory per SM and per block.
const fn arch(cc: (u32, u32), threads: u32, sm_kib: u32, block_kib: u32) -> Arch {
    Arch {
        compute_capability: cc,
        threads_per_sm: threads,
        shared_per_sm: sm_kib * KIB,
        shared_per_block: block_kib * KIB,
    }
}

const TURING: Arch = arch((7, 5), 1024, 64, 64);
const AMPERE_100: Arch = arch((8, 0), 2048, 164, 163);
const AMPERE_102: Arch = arch((8, 6), 1536, 100, 99);
const ADA: Arch = arch((8, 9), 1536, 100, 99);
const HOPPER: Arch = arch((9, 0), 2048, 228, 227);
const BLACKWELL_100: Arch = arch((10, 0), 2048, 228, 227);
const BLACKWELL_120: Arch = arch((12, 0), 1536, 100, 99);

/// A profile of `arch` with the GPU's own SM count, L2 (MiB), bandwidth (GB/s) and memory (GiB).
const fn gpu(
    name: &'static str,
    arch: Arch,
    sms: u32,
    l2_mib: u64,
    gbs: f64,
    gib: u64,
) -> GpuProfile {
    GpuProfile {
        name,
        compute_capability: arch.compute_capability,
        multiprocessors: sms,
        max_threads_per_multiprocessor: arch.threads_per_sm,
        max_threads_per_block: 1024,
        registers_per_multiprocessor: 64 * KIB,
        max_registers_per_thread: 255,
        shared_bytes_per_multiprocessor: arch.shared_per_sm,
        max_shared_bytes_per_block: arch.shared_per_block,
        l2_cache_bytes: l2_mib * MIB,
        dram_bandwidth_gbs: gbs,
        memory_bytes: gib * GIB,
    }
}

/// The GPUs `GPU_PROFILE` knows, oldest architecture first.
pub const PROFILES: &[GpuProfile] = &[
    // NVIDIA T4 datasheet (40 SMs: Turing whitepaper's TU104 with 40 of 48 SMs on), 4 MiB L2
    // (whitepaper), 320 GB/s, 16 GB GDDR6.
    gpu("T4", TURING, 40, 4, 320.0, 16),
    // NVIDIA A10 datasheet: 72 SMs (Ampere GA102 whitepaper), 6 MiB L2, 600 GB/s, 24 GB GDDR6.
    gpu("A10", AMPERE_102, 72, 6, 600.0, 24),
    // GeForce RTX 3090 specifications and the GA102 whitepaper: 82 SMs, 6 MiB L2, 936 GB/s, 24 GB.
    gpu("RTX3090", AMPERE_102, 82, 6, 936.0, 24),
    // NVIDIA L4 datasheet: 58 SMs (Ada whitepaper's AD104), 48 MiB L2, 300 GB/s, 24 GB GDDR6.
    gpu("L4", ADA, 58, 48, 300.0, 24),
    // GeForce RTX 4090 specifications and the Ada whitepaper: 128 SMs, 72 MiB L2, 1008 GB/s, 24 GB.
    gpu("RTX4090", ADA, 128, 72, 1008.0, 24),
    // NVIDIA A100 datasheet (80 GB SXM): 108 SMs (A100 whitepaper), 40 MiB L2, 2039 GB/s, 80 GB.
    gpu("A100", AMPERE_100, 108, 40, 2039.0, 80),
    // NVIDIA H100 datasheet (SXM): 132 SMs (H100 whitepaper), 50 MiB L2, 3350 GB/s, 80 GB HBM3.
    gpu("H100", HOPPER, 132, 50, 3350.0, 80),
    // NVIDIA H200 datasheet (SXM): 4800 GB/s, 141 GB HBM3e; 132 SMs and 60 MiB of L2 as the
    // driver reports them (book/src/data/nvidia-h200).
    gpu("H200", HOPPER, 132, 60, 4800.0, 141),
    // NVIDIA DGX B200 datasheet (per GPU: 1440 GB and 64 TB/s over 8): 180 GB, 8000 GB/s. Not on
    // the datasheet: 148 SMs and 126 MiB of L2, as the CUDA driver reports them on a B200.
    gpu("B200", BLACKWELL_100, 148, 126, 8000.0, 180),
    // GeForce RTX 5090 specifications and the Blackwell GB202 whitepaper: 170 SMs, 96 MiB L2,
    // 1792 GB/s, 32 GB GDDR7.
    gpu("RTX5090", BLACKWELL_120, 170, 96, 1792.0, 32),
];

impl GpuProfile {
    /// The profile called `name` (case and `-`, `_` and spaces do not matter: `rtx-4090` is
    /// `RTX4090`), or an error listing the known names.
    pub fn named(name: &str) -> Result<&'static GpuProfile> {
        let key = |s: &str| {
            s.chars().filter(|c| !matches!(c, '-' | '_' | ' ')).collect::<String>().to_uppercase()
        };
        PROFILES.iter().find(|p| key(p.name) == key(name)).ok_or_else(|| {
            let known: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
            GpuError::BadInput(format!(
                "GPU_PROFILE={name} is not a GPU this workspace knows: one of {}",
                known.join(", ")
            ))
        })
    }

    /// The profile `GPU_PROFILE` names, read once per process: `None` when it is unset or empty.
    pub fn from_env() -> Result<Option<&'static GpuProfile>> {
        static CHOSEN: OnceLock<Result<Option<&'static GpuProfile>>> = OnceLock::new();
        CHOSEN
            .get_or_init(|| match std::env::var("GPU_PROFILE") {
                Ok(name) if !name.trim().is_empty() => GpuProfile::named(name.trim()).map(Some),
                _ => Ok(None),
            })
            .clone()
    }

    /// Whether a GPU of compute capability `device` runs this profile's code: PTX for an older
    /// architecture is compiled forward by the driver, never backward.
    pub fn runs_on(&self, device: (u32, u32)) -> bool {
        self.compute_capability <= device
    }

    /// [`GpuProfile::runs_on`] as a result: an error naming both GPUs when `device` (a GPU called
    /// `device_name`) cannot run this profile's code.
    pub fn check_runs_on(&self, device_name: &str, device: (u32, u32)) -> Result<()> {
        if self.runs_on(device) {
            return Ok(());
        }
        let ((major, minor), (pmajor, pminor)) = (device, self.compute_capability);
        Err(GpuError::Profile {
            profile: self.name.into(),
            problem: format!(
                "a {} (compute capability {pmajor}.{pminor}) is newer than this {device_name} \
                 ({major}.{minor}), which cannot run its code: pick a profile of {major}.{minor} \
                 or older",
                self.name
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_consistent() {
        for p in PROFILES {
            let name = p.name;
            assert!(p.max_threads_per_block <= p.max_threads_per_multiprocessor, "{name}");
            assert_eq!(p.max_threads_per_multiprocessor % 32, 0, "{name}: whole warps");
            assert!(p.max_shared_bytes_per_block <= p.shared_bytes_per_multiprocessor, "{name}");
            assert!(p.max_shared_bytes_per_block >= 48 * KIB, "{name}: 48 KiB without opt-in");
            assert!(p.max_registers_per_thread <= 255, "{name}");
            assert!(
                p.max_registers_per_thread * 32 <= p.registers_per_multiprocessor,
                "{name}: a warp at the most registers fits an SM"
            );
            assert!(p.multiprocessors > 0 && p.l2_cache_bytes > 0, "{name}");
            assert!(p.dram_bandwidth_gbs > 100.0 && p.memory_bytes >= 8 * GIB, "{name}");
            assert!(p.compute_capability >= (7, 5), "{name}: NVRTC 13 starts at sm_75");
        }
    }

    #[test]
    fn names_are_unique_and_found_whatever_their_spelling() {
        for (i, p) in PROFILES.iter().enumerate() {
            assert!(PROFILES[..i].iter().all(|q| q.name != p.name), "{} twice", p.name);
            assert_eq!(GpuProfile::named(&p.name.to_lowercase()).unwrap().name, p.name);
        }
        assert_eq!(GpuProfile::named("rtx-4090").unwrap().name, "RTX4090");
        let unknown = GpuProfile::named("V100").unwrap_err().to_string();
        assert!(unknown.contains("GPU_PROFILE=V100") && unknown.contains("T4, A10"), "{unknown}");
    }

    #[test]
    fn the_issues_gpus_are_there_with_their_architectures() {
        let cc = |name| GpuProfile::named(name).unwrap().compute_capability;
        assert_eq!(
            ["T4", "A10", "L4", "A100", "H100", "H200", "B200", "RTX5090"].map(cc),
            [(7, 5), (8, 6), (8, 9), (8, 0), (9, 0), (9, 0), (10, 0), (12, 0)]
        );
        let t4 = GpuProfile::named("T4").unwrap();
        assert_eq!(
            (t4.max_threads_per_multiprocessor, t4.shared_bytes_per_multiprocessor),
            (1024, 64 * KIB)
        );
    }

    #[test]
    fn a_profile_runs_on_its_architecture_and_newer_ones_only() {
        let t4 = GpuProfile::named("T4").unwrap();
        assert!(t4.runs_on((7, 5)) && t4.runs_on((9, 0)) && !t4.runs_on((7, 0)));
        let b200 = GpuProfile::named("B200").unwrap();
        assert!(!b200.runs_on((9, 0)) && b200.runs_on((12, 0)));
        assert_eq!(t4.check_runs_on("NVIDIA H200", (9, 0)), Ok(()));
        let refused = b200.check_runs_on("NVIDIA H200", (9, 0)).unwrap_err();
        assert!(matches!(refused, GpuError::Profile { .. }), "{refused:?}");
        assert_eq!(
            refused.to_string(),
            "GPU_PROFILE=B200: a B200 (compute capability 10.0) is newer than this NVIDIA H200 \
             (9.0), which cannot run its code: pick a profile of 9.0 or older"
        );
    }
}
