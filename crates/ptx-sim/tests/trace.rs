//! The trace ([`Machine::set_tracing`]): on a small kernel whose every access is counted by hand
//! here, it records each warp instruction's lanes, addresses, banks and sectors; on the course's
//! kernels, traced over every block, it adds up to the launch's counters, which tracing leaves as
//! they are; it keeps to the blocks and the number of steps asked for. Needs NVRTC, no GPU.

mod common;

use common::{f32_bytes, integer_inputs, module_of, module_of_source};
use gpu_test::{TestResult, TestSuite};
use ptx_sim::{
    AccessKind, AccessSpace, LaunchStats, LaunchTrace, Machine, ParamValue, TraceOptions,
};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .nvrtc("trace::hand_counted_accesses", hand_counted_accesses)
        .nvrtc("trace::adds_up_to_the_counters_and_leaves_them_alone", adds_up_to_the_counters)
        .nvrtc("trace::keeps_to_its_blocks_and_steps", keeps_to_its_blocks_and_steps)
        .run()
}

/// One warp of 32 threads, every access chosen to be counted by hand.
const SMALL: &str = r#"
extern "C" __global__ void small(const float* in, float* out) {
    __shared__ float s[64];
    __shared__ int bins[4];
    unsigned t = threadIdx.x;
    if (t < 4) bins[t] = 0;
    s[t * 2] = in[t * 2];
    __syncthreads();
    atomicAdd(&bins[t % 4], 1);
    if (t < 8) out[t] = s[t] + (float)bins[0];
}
"#;

fn hand_counted_accesses() -> TestResult {
    let module = module_of_source("small.cu", SMALL);
    let mut m = Machine::new();
    let input = m.alloc(64 * 4)?;
    m.write(input, &f32_bytes(&integer_inputs(64, 3)))?;
    let out = m.alloc(8 * 4)?;
    m.set_tracing(Some(TraceOptions::default()));
    let stats = m.launch(
        &module,
        "small",
        (1, 1, 1),
        (32, 1, 1),
        0,
        &[ParamValue::U64(input), ParamValue::U64(out)],
    )?;
    let traces = m.take_traces();
    assert_eq!(traces.len(), 1, "one launch, one trace");
    assert!(m.take_traces().is_empty(), "taken traces are forgotten");
    let trace = &traces[0];
    assert_eq!(
        (trace.kernel.as_str(), trace.grid, trace.block, trace.truncated),
        ("small", (1, 1, 1), (32, 1, 1), false)
    );
    let accesses: Vec<_> =
        trace.steps.iter().filter_map(|s| s.access.as_ref().map(|a| (s, a))).collect();
    let kinds: Vec<(AccessSpace, AccessKind, usize)> =
        accesses.iter().map(|(_, a)| (a.space, a.kind, a.lanes.len())).collect();
    use AccessKind::*;
    use AccessSpace::*;
    assert_eq!(
        kinds,
        [
            (Shared, Store, 4),
            (Global, Load, 32),
            (Shared, Store, 32),
            (Shared, Atomic, 32),
            (Shared, Load, 8),
            (Shared, Load, 8),
            (Global, Store, 8)
        ],
        "bins[t] = 0; in[2t]; s[2t] =; atomicAdd(bins[t % 4]); s[t]; bins[0]; out[t] ="
    );
    let (zero, load, store, atomic, s_t, bin0, write) =
        (accesses[0], accesses[1], accesses[2], accesses[3], accesses[4], accesses[5], accesses[6]);
    // bins[t] = 0 for 4 lanes: its step has 32 lanes at the instruction, 4 executing it (or 4
    // there, after a branch); either way 4 lanes stored.
    assert_eq!(zero.0.executed.count_ones(), 4);
    // in[2t]: lane l reads the 4 bytes at in + 8 l: 256 bytes from the start, 8 sectors.
    for (l, lane) in load.1.lanes.iter().enumerate() {
        assert_eq!((lane.lane, lane.address, lane.bytes), (l as u32, input + 8 * l as u64, 4));
    }
    let first = input / 32;
    assert_eq!(load.1.sectors(), (first..first + 8).collect::<Vec<_>>());
    // s[2t]: words 0, 2, .., 62 (s lies at the start of shared memory or after bins): two lanes on
    // each even bank, one extra wavefront.
    let banks = store.1.banks();
    let base_bank = banks[0].1;
    for (l, &(lane, bank)) in banks.iter().enumerate() {
        assert_eq!((lane, bank), (l as u32, (base_bank + 2 * l as u32) % 32));
    }
    assert_eq!((store.1.wavefronts(), store.1.extra_wavefronts()), (2, 1));
    // atomicAdd(&bins[t % 4]): 8 lanes on each of 4 words (4 banks), each taking its own turn.
    assert_eq!((atomic.1.wavefronts(), atomic.1.extra_wavefronts()), (8, 7));
    // After the barrier: phase 1. s[t] for t < 8: 8 banks, one wavefront; bins[0]: a broadcast.
    assert_eq!((load.0.phase, store.0.phase, atomic.0.phase, s_t.0.phase), (0, 0, 1, 1));
    assert_eq!((s_t.1.wavefronts(), bin0.1.wavefronts()), (1, 1));
    assert_eq!(s_t.0.executed, 0xff);
    // out[t] for t < 8: 32 contiguous bytes, one sector.
    assert_eq!(write.1.sectors(), vec![out / 32]);
    // Every lane's instructions: the trace's lanes add up to the counters'.
    assert_adds_up(trace, &stats);
    assert_eq!(stats.shared_bank_conflicts, 1);
    assert_eq!(stats.shared_atomic_conflicts, 7);
    assert_eq!(stats.global_sectors, 9);
    Ok(())
}

/// The counters a trace of every block of a launch adds up to.
fn assert_adds_up(trace: &LaunchTrace, stats: &LaunchStats) {
    assert!(!trace.truncated);
    let steps = &trace.steps;
    let accesses = || steps.iter().filter_map(|s| s.access.as_ref());
    let shared = || accesses().filter(|a| a.space == AccessSpace::Shared);
    let global = || accesses().filter(|a| a.space == AccessSpace::Global);
    let got = (
        steps.len() as u64,
        steps.iter().map(|s| s.active.count_ones() as u64).sum::<u64>(),
        shared().filter(|a| a.kind != AccessKind::Atomic).count() as u64,
        shared()
            .filter(|a| a.kind != AccessKind::Atomic)
            .map(|a| a.extra_wavefronts())
            .sum::<u64>(),
        shared()
            .filter(|a| a.kind == AccessKind::Atomic)
            .map(|a| a.extra_wavefronts())
            .sum::<u64>(),
        global().filter(|a| a.kind != AccessKind::Atomic).count() as u64,
        global()
            .filter(|a| a.kind != AccessKind::Atomic)
            .map(|a| a.sectors().len() as u64)
            .sum::<u64>(),
        accesses()
            .filter(|a| a.kind == AccessKind::Atomic)
            .map(|a| a.lanes.len() as u64)
            .sum::<u64>(),
    );
    let counted = (
        stats.warp_instructions,
        stats.active_lanes,
        stats.shared_accesses,
        stats.shared_bank_conflicts,
        stats.shared_atomic_conflicts,
        stats.global_requests,
        stats.global_sectors,
        stats.atomics,
    );
    assert_eq!(
        got, counted,
        "(instructions, lanes, shared, conflicts, atomic conflicts, requests, sectors, atomics)"
    );
}

/// Runs `kernel(input, out, n)` over `grid` blocks of 256 on integer inputs, traced with `options`
/// or not; the counters and the traces.
fn run(
    file: &str,
    kernel: &str,
    n: usize,
    grid: u32,
    options: Option<TraceOptions>,
) -> (LaunchStats, Vec<LaunchTrace>) {
    let module = module_of(file);
    let mut m = Machine::new();
    let input = m.alloc(n * 4).expect("alloc");
    m.write(input, &f32_bytes(&integer_inputs(n, 5))).expect("write");
    let out = m.alloc(grid as usize * 4).expect("alloc");
    m.set_tracing(options);
    // reduce_atomic.cu's kernels take a 64-bit count.
    let count = if file == "reduce_atomic.cu" {
        ParamValue::U64(n as u64)
    } else {
        ParamValue::U32(n as u32)
    };
    let params = [ParamValue::U64(input), ParamValue::U64(out), count];
    let stats = m.launch(&module, kernel, (grid, 1, 1), (256, 1, 1), 1024, &params).expect("runs");
    (stats, m.take_traces())
}

fn adds_up_to_the_counters() -> TestResult {
    let all = TraceOptions { blocks: u64::MAX, max_steps: usize::MAX };
    for (file, kernel) in [
        ("reduce_naive.cu", "reduce_naive"),
        ("reduce_interleaved.cu", "reduce_interleaved"),
        ("reduce_atomic.cu", "atomic_sum_f32"),
    ] {
        let (plain, none) = run(file, kernel, 3000, 12, None);
        assert!(none.is_empty(), "{kernel}: an untraced launch records nothing");
        let (traced, traces) = run(file, kernel, 3000, 12, Some(all));
        assert_eq!(plain, traced, "{kernel}: tracing changes no counter");
        assert_eq!(traces.len(), 1);
        assert_adds_up(&traces[0], &traced);
    }
    Ok(())
}

fn keeps_to_its_blocks_and_steps() -> TestResult {
    let (_, traces) = run(
        "reduce_naive.cu",
        "reduce_naive",
        3000,
        12,
        Some(TraceOptions { blocks: 2, max_steps: usize::MAX }),
    );
    let blocks: std::collections::BTreeSet<u64> = traces[0].steps.iter().map(|s| s.block).collect();
    assert_eq!(blocks.into_iter().collect::<Vec<_>>(), [0, 1]);
    let (_, traces) = run(
        "reduce_naive.cu",
        "reduce_naive",
        3000,
        12,
        Some(TraceOptions { blocks: 1, max_steps: 10 }),
    );
    assert_eq!((traces[0].steps.len(), traces[0].truncated), (10, true));
    // Each warp's phases count its barriers: reduce_naive's block passes one after loading and
    // one per round of its tree (8 rounds for 256 threads).
    let (_, traces) = run("reduce_naive.cu", "reduce_naive", 256, 1, Some(TraceOptions::default()));
    let last_phase = traces[0].steps.iter().filter(|s| s.warp == 0).map(|s| s.phase).max();
    assert_eq!(last_phase, Some(9));
    Ok(())
}
