//! Thread block clusters (Hopper): kernels with `.reqnctapercluster` run cluster by cluster, the
//! blocks of a cluster interleaved at the cluster barrier, reading each other's shared memory
//! through `mapa` and `ld.shared::cluster`. Most kernels here are PTX written by hand (no NVRTC
//! needed); one is CUDA compiled by NVRTC with `__cluster_dims__` and the sm_90 cluster builtins.

mod common;

use gpu_test::{TestResult, TestSuite};
use ptx_sim::{Fault, LaunchStats, Machine, Module, ParamValue, SimError};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .cpu("parse::cluster_directives", cluster_directives)
        .cpu(
            "run::ranks_exchange_values_through_shared_memory",
            ranks_exchange_values_through_shared_memory,
        )
        .cpu(
            "run::a_read_before_the_barrier_sees_a_later_rank_unwritten",
            a_read_before_the_barrier_sees_a_later_rank_unwritten,
        )
        .cpu(
            "run::a_block_that_leaves_while_others_read_its_memory_faults",
            a_block_that_leaves_while_others_read_its_memory_faults,
        )
        .cpu(
            "run::stores_atomics_and_generic_loads_reach_other_blocks",
            stores_atomics_and_generic_loads_reach_other_blocks,
        )
        .cpu(
            "run::an_exited_block_does_not_hold_the_barrier",
            an_exited_block_does_not_hold_the_barrier,
        )
        .cpu(
            "run::a_kernel_without_a_cluster_is_a_cluster_of_one",
            a_kernel_without_a_cluster_is_a_cluster_of_one,
        )
        .cpu(
            "launch::a_grid_of_part_of_a_cluster_is_refused",
            a_grid_of_part_of_a_cluster_is_refused,
        )
        .cpu(
            "faults::a_block_barrier_against_the_cluster_barrier_deadlocks",
            a_block_barrier_against_the_cluster_barrier_deadlocks,
        )
        .cpu("faults::waits_and_arrivals_out_of_order", waits_and_arrivals_out_of_order)
        .cpu("faults::ranks_outside_the_cluster", ranks_outside_the_cluster)
        .cpu("budget::a_runaway_cluster_stops", a_runaway_cluster_stops)
        .nvrtc("nvrtc::cluster_builtins_of_a_2x2_cluster", cluster_builtins_of_a_2x2_cluster)
        .run()
}

/// A module of one kernel: `directives` between its parameters and its body.
fn ptx_module(name: &str, params: &str, directives: &str, body: &str) -> Module {
    let header = ".version 8.0\n.target sm_90\n.address_size 64\n";
    let ptx = format!("{header}\n.visible .entry {name}({params})\n{directives}\n{{\n{body}\n}}\n");
    ptx_sim::parse(&ptx).unwrap_or_else(|e| panic!("{name}: {e}\n{ptx}"))
}

/// The exchange kernel: block `b` (32 threads) of a cluster of 4 writes `100 * cluster + rank + 1`
/// to its shared `value`; thread `t < 4` reads rank `t`'s value into `out[8 b + t]`, and thread 0
/// sums the four into `out[8 b + 4]`; `out[8 b + 5..8]` get the rank, cluster and cluster size.
/// `before` comes between the write and the reads, `after` between the reads and the exit.
fn exchange(before: &str, after: &str) -> Module {
    let body = format!(
        "
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 value[4];

    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %cluster_ctarank;
    mov.u32 %r4, %cluster_nctarank;
    mov.u32 %r5, %clusterid.x;
    mov.u32 %r7, value;
    mul.wide.u32 %rd3, %r2, 32;
    add.s64 %rd4, %rd2, %rd3;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_written;
    mad.lo.s32 %r6, %r5, 100, %r3;
    add.s32 %r6, %r6, 1;
    st.shared.u32 [value], %r6;
    st.global.u32 [%rd4+20], %r3;
    st.global.u32 [%rd4+24], %r5;
    st.global.u32 [%rd4+28], %r4;
$L_written:
    {before}
    setp.ge.u32 %p2, %r1, %r4;
    @%p2 bra $L_read;
    mapa.shared::cluster.u32 %r8, %r7, %r1;
    ld.shared::cluster.u32 %r9, [%r8];
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r9;
$L_read:
    @%p1 bra $L_summed;
    mov.u32 %r10, 0;
    mov.u32 %r11, 0;
$L_loop:
    mapa.shared::cluster.u32 %r12, %r7, %r10;
    ld.shared::cluster.u32 %r13, [%r12];
    add.s32 %r11, %r11, %r13;
    add.s32 %r10, %r10, 1;
    setp.lt.u32 %p3, %r10, %r4;
    @%p3 bra $L_loop;
    st.global.u32 [%rd4+16], %r11;
$L_summed:
    {after}
    ret;"
    );
    ptx_module("exchange", ".param .u64 out", ".explicitcluster\n.reqnctapercluster 4, 1, 1", &body)
}

const SYNC: &str =
    "barrier.cluster.arrive.release.aligned;\n    barrier.cluster.wait.acquire.aligned;";

/// Runs the exchange kernel over `blocks` blocks of 32 threads; returns its 8 words per block.
fn run_exchange(module: &Module, blocks: u32) -> Result<(Vec<u32>, LaunchStats), SimError> {
    let mut m = Machine::new();
    let out = m.alloc(32 * blocks as usize).unwrap();
    let stats =
        m.launch(module, "exchange", (blocks, 1, 1), (32, 1, 1), 0, &[ParamValue::U64(out)])?;
    Ok((u32s(&m.read(out, 32 * blocks as usize).unwrap()), stats))
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The fault of a launch that must fail.
fn fault_of(result: Result<impl std::fmt::Debug, SimError>) -> (ptx_sim::FaultSite, Fault) {
    match result {
        Err(SimError::Fault { site, fault }) => {
            println!("{site}: {fault}");
            (*site, fault)
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

fn cluster_directives() -> TestResult {
    let exchange = exchange(SYNC, SYNC);
    let k = exchange.kernel("exchange").unwrap();
    assert_eq!((k.cluster, k.explicit_cluster), ((4, 1, 1), true));
    let plain = ptx_module("plain", "", ".maxntid 128, 1, 1", "ret;");
    let k = plain.kernel("plain").unwrap();
    assert_eq!((k.cluster, k.explicit_cluster), ((1, 1, 1), false));
    // Left-out dimensions are 1; `.maxclusterrank` is accepted (and bounds nothing here).
    let short = ptx_module("short", "", ".reqnctapercluster 2\n.maxclusterrank 8", "ret;");
    assert_eq!(short.kernel("short").unwrap().cluster, (2, 1, 1));
    let zero = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry \
                z()\n.reqnctapercluster 0, 1, 1\n{\nret;\n}\n";
    assert!(
        matches!(ptx_sim::parse(zero), Err(SimError::Parse { .. })),
        "a cluster dimension of 0"
    );
    // `.explicitcluster` alone: the shape would come with the launch, which the simulator lacks.
    let at_launch = ptx_module("at_launch", "", ".explicitcluster", "ret;");
    let e =
        Machine::new().launch(&at_launch, "at_launch", (2, 1, 1), (32, 1, 1), 0, &[]).unwrap_err();
    assert!(
        matches!(&e, SimError::BadLaunch { reason, .. } if reason.contains(".reqnctapercluster")),
        "{e}"
    );
    Ok(())
}

fn ranks_exchange_values_through_shared_memory() -> TestResult {
    let (out, stats) = run_exchange(&exchange(SYNC, SYNC), 8)?;
    for block in 0..8u32 {
        let (cluster, rank) = (block / 4, block % 4);
        let values: Vec<u32> = (0..4).map(|t| 100 * cluster + t + 1).collect();
        let row = &out[8 * block as usize..8 * block as usize + 8];
        assert_eq!(row[..4], values, "block {block} reads every rank's value");
        assert_eq!(
            row[4..],
            [values.iter().sum(), rank, cluster, 4],
            "block {block}: sum, rank, cluster, size"
        );
    }
    assert_eq!(stats.blocks, 8);
    // Two clusters, two barriers each.
    assert_eq!(stats.cluster_barriers, 2 * 2, "{stats:?}");
    assert_eq!(stats.barriers, 0);
    // Per block: the 4-lane read reaches 3 other ranks (1 distributed access) and its own (1 shared
    // access); thread 0's loop reads 3 other ranks (3) and its own (1); plus the shared store (1).
    assert_eq!(stats.distributed_shared_accesses, 8 * (1 + 3), "{stats:?}");
    assert_eq!(stats.shared_accesses, 8 * (1 + 1 + 1), "{stats:?}");
    assert_eq!(stats.shared_bank_conflicts, 0);
    // The blocks are alike: each ran the same warp instructions, and the longest is one of them.
    assert_eq!(stats.longest_block * 8, stats.warp_instructions);
    assert_eq!(stats.longest_warp, stats.longest_block);
    Ok(())
}

/// The simulator runs rank 0 of a cluster first, until it waits at the cluster barrier (or
/// exits), then rank 1, and so on: a read of another block's shared memory that no barrier orders
/// after its write sees the value only when the writer has a lower rank, and zero (shared memory
/// starts zeroed) otherwise, so a missing barrier shows as wrong results.
fn a_read_before_the_barrier_sees_a_later_rank_unwritten() -> TestResult {
    let (out, stats) = run_exchange(&exchange("", SYNC), 8)?;
    for block in 0..8u32 {
        let (cluster, rank) = (block / 4, block % 4);
        let seen: Vec<u32> =
            (0..4).map(|t| if t <= rank { 100 * cluster + t + 1 } else { 0 }).collect();
        assert_eq!(out[8 * block as usize..8 * block as usize + 4], seen, "block {block}");
    }
    assert_eq!(stats.cluster_barriers, 2);
    Ok(())
}

/// Without the barrier before the exit, rank 0 leaves once it has read the others' values, and
/// rank 1's read of rank 0's memory, which is gone, faults.
fn a_block_that_leaves_while_others_read_its_memory_faults() -> TestResult {
    let (site, fault) = fault_of(run_exchange(&exchange(SYNC, ""), 4));
    assert_eq!(fault, Fault::ExitedClusterCta { rank: 0 });
    assert_eq!((site.block, site.thread), ((1, 0, 0), (0, 0, 0)));
    assert!(site.instruction.starts_with("ld.shared::cluster"), "{}", site.instruction);
    Ok(())
}

/// Rank `r` stores `10 (r + 1)` into the `value` of rank `r + 1` (mod 4) with
/// `st.shared::cluster`, and every thread adds 1 to rank 0's `count` with
/// `atom.shared::cluster`; after the barrier, thread 0 reads its own `value` with `ld.shared`,
/// and rank 0's `count` through a generic address (`mapa.u64` of a `cvta` address).
fn stores_atomics_and_generic_loads_reach_other_blocks() -> TestResult {
    let body = "
    .reg .pred %p<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 value[4];
    .shared .align 4 .b8 count[4];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    add.s32 %r3, %r2, 1;
    and.b32 %r4, %r3, 3;
    mul.lo.s32 %r5, %r3, 10;
    mov.u32 %r6, value;
    mapa.shared::cluster.u32 %r7, %r6, %r4;
    setp.ne.u32 %p1, %r1, 0;
    @!%p1 st.shared::cluster.u32 [%r7], %r5;
    mov.u32 %r6, count;
    mapa.shared::cluster.u32 %r8, %r6, 0;
    atom.shared::cluster.add.u32 %r9, [%r8], 1;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    @%p1 bra $L_done;
    ld.shared.u32 %r10, [value];
    cvta.shared.u64 %rd1, count;
    mapa.u64 %rd2, %rd1, 0;
    ld.u32 %r11, [%rd2];
    ld.param.u64 %rd3, [out];
    mov.u32 %r3, %ctaid.x;
    mul.wide.u32 %rd4, %r3, 8;
    add.s64 %rd5, %rd3, %rd4;
    st.global.v2.u32 [%rd5], {%r10, %r11};
$L_done:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;";
    let module = ptx_module("remote", ".param .u64 out", ".reqnctapercluster 4, 1, 1", body);
    let mut m = Machine::new();
    let out = m.alloc(8 * 8).unwrap();
    let stats = m.launch(&module, "remote", (8, 1, 1), (32, 1, 1), 0, &[ParamValue::U64(out)])?;
    let expected: Vec<u32> = (0..8u32).flat_map(|b| [10 * ((b % 4 + 3) % 4 + 1), 4 * 32]).collect();
    assert_eq!(
        u32s(&m.read(out, 64)?),
        expected,
        "(value from the rank before, rank 0's count) per block"
    );
    // Per block: the store reaches another rank; the generic load does in ranks 1 to 3.
    assert_eq!(stats.distributed_shared_accesses, 2 * (4 + 3), "{stats:?}");
    assert_eq!((stats.shared_atomics, stats.atomics), (8 * 32, 8 * 32));
    Ok(())
}

/// PTX: the cluster barrier waits for the cluster's threads that have not exited. Rank 1 exits at
/// once; rank 0 waits at the barrier, which completes with rank 0's arrivals alone.
fn an_exited_block_does_not_hold_the_barrier() -> TestResult {
    let body = "
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %cluster_ctarank;
    setp.eq.u32 %p1, %r1, 1;
    @%p1 bra $L_exit;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ld.param.u64 %rd1, [out];
    mov.u32 %r2, %ctaid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], 7;
$L_exit:
    ret;";
    let module = ptx_module("early_exit", ".param .u64 out", ".reqnctapercluster 2, 1, 1", body);
    let mut m = Machine::new();
    let out = m.alloc(16).unwrap();
    let stats =
        m.launch(&module, "early_exit", (4, 1, 1), (64, 1, 1), 0, &[ParamValue::U64(out)])?;
    assert_eq!(u32s(&m.read(out, 16)?), [7, 0, 7, 0]);
    assert_eq!(stats.cluster_barriers, 2);
    Ok(())
}

/// Without `.reqnctapercluster` every block is a cluster of one: `mapa` to rank 0 and
/// `ld.shared::cluster` reach the block's own shared memory, and the cluster barrier waits for
/// the block's threads alone; rank 1 is outside the cluster.
fn a_kernel_without_a_cluster_is_a_cluster_of_one() -> TestResult {
    let body = "
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b8 value[128];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    shl.b32 %r3, %r1, 2;
    mov.u32 %r4, value;
    add.s32 %r4, %r4, %r3;
    add.s32 %r5, %r1, %r2;
    st.shared.u32 [%r4], %r5;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    xor.b32 %r3, %r3, 4;
    mov.u32 %r4, value;
    add.s32 %r4, %r4, %r3;
    ld.param.u32 %r6, [rank];
    mapa.shared::cluster.u32 %r4, %r4, %r6;
    ld.shared::cluster.u32 %r7, [%r4];
    mov.u32 %r6, %cluster_nctarank;
    add.s32 %r7, %r7, %r6;
    mov.u32 %r6, %cluster_ctarank;
    add.s32 %r7, %r7, %r6;
    ld.param.u64 %rd1, [out];
    mad.lo.s32 %r5, %r2, 32, %r1;
    mul.wide.u32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
    ret;";
    let module = ptx_module("alone", ".param .u64 out, .param .u32 rank", "", body);
    let mut m = Machine::new();
    let out = m.alloc(3 * 128).unwrap();
    let stats = m.launch(
        &module,
        "alone",
        (3, 1, 1),
        (32, 1, 1),
        0,
        &[ParamValue::U64(out), ParamValue::U32(0)],
    )?;
    let expected: Vec<u32> =
        (0..3u32).flat_map(|b| (0..32u32).map(move |t| (t ^ 1) + b + 1)).collect();
    assert_eq!(
        u32s(&m.read(out, 3 * 128)?),
        expected,
        "the neighbour lane's value, plus 1 CTA, rank 0"
    );
    assert_eq!(
        (stats.cluster_barriers, stats.distributed_shared_accesses, stats.blocks),
        (3, 0, 3)
    );
    let (site, fault) = fault_of(m.launch(
        &module,
        "alone",
        (3, 1, 1),
        (32, 1, 1),
        0,
        &[ParamValue::U64(out), ParamValue::U32(1)],
    ));
    assert_eq!(fault, Fault::NoSuchClusterRank { rank: 1, cluster_size: 1 });
    assert!(site.instruction.starts_with("mapa"), "{}", site.instruction);
    Ok(())
}

fn a_grid_of_part_of_a_cluster_is_refused() -> TestResult {
    let module = exchange(SYNC, SYNC);
    let mut m = Machine::new();
    let out = m.alloc(32 * 6).unwrap();
    for grid in [(6, 1, 1), (2, 1, 1)] {
        let e = m
            .launch(&module, "exchange", grid, (32, 1, 1), 0, &[ParamValue::U64(out)])
            .unwrap_err();
        let whole = "not a whole number of the kernel's clusters";
        assert!(matches!(&e, SimError::BadLaunch { reason, .. } if reason.contains(whole)), "{e}");
        println!("{e}");
    }
    let big = ptx_module("big", "", ".reqnctapercluster 4, 4, 2", "ret;");
    let e = m.launch(&big, "big", (4, 4, 2), (32, 1, 1), 0, &[]).unwrap_err();
    assert!(
        matches!(&e, SimError::BadLaunch { reason, .. }
            if reason.contains("32 blocks (at most 16)")),
        "{e}"
    );
    Ok(())
}

/// In rank 1, warp 1 waits at the block barrier before arriving at the cluster barrier, while
/// warp 0 waits at the cluster barrier before the block barrier: neither barrier can complete.
/// The fault names a thread that never arrives, at the block barrier.
fn a_block_barrier_against_the_cluster_barrier_deadlocks() -> TestResult {
    let body = "
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, %tid.x;
    setp.eq.u32 %p1, %r1, 1;
    setp.ge.u32 %p2, %r2, 32;
    and.pred %p1, %p1, %p2;
    @%p1 bra $L_block_first;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    bar.sync 0;
    ret;
$L_block_first:
    bar.sync 0;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;";
    let module = ptx_module("crossed", "", ".reqnctapercluster 2, 1, 1", body);
    let (site, fault) =
        fault_of(Machine::new().launch(&module, "crossed", (2, 1, 1), (64, 1, 1), 0, &[]));
    assert_eq!(fault, Fault::Deadlock);
    assert_eq!((site.block, site.thread), ((1, 0, 0), (32, 0, 0)));
    assert_eq!(site.instruction, "bar.sync 0;");
    Ok(())
}

fn waits_and_arrivals_out_of_order() -> TestResult {
    let wait_first =
        ptx_module("wait_first", "", ".reqnctapercluster 2, 1, 1", "barrier.cluster.wait;\nret;");
    let (site, fault) =
        fault_of(Machine::new().launch(&wait_first, "wait_first", (2, 1, 1), (32, 1, 1), 0, &[]));
    assert_eq!(
        (fault, site.block, site.thread),
        (Fault::ClusterWaitWithoutArrive, (0, 0, 0), (0, 0, 0))
    );
    let body = "barrier.cluster.arrive;\nbarrier.cluster.arrive;\nbarrier.cluster.wait;\nret;";
    let twice = ptx_module("twice", "", ".reqnctapercluster 2, 1, 1", body);
    let (_, fault) =
        fault_of(Machine::new().launch(&twice, "twice", (2, 1, 1), (32, 1, 1), 0, &[]));
    assert_eq!(fault, Fault::ClusterArriveTwice);
    // Arrive, work, wait: the wait of a completed phase returns at once, and the next arrival
    // starts the next phase.
    let body = "
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    mov.u32 %r1, 0;
$L_loop:
    barrier.cluster.arrive.relaxed;
    fence.acq_rel.cluster;
    add.s32 %r1, %r1, 1;
    barrier.cluster.wait;
    setp.lt.u32 %p1, %r1, 5;
    @%p1 bra $L_loop;
    ret;";
    let split = ptx_module("split", "", ".reqnctapercluster 2, 1, 1", body);
    let stats = Machine::new().launch(&split, "split", (4, 1, 1), (64, 1, 1), 0, &[])?;
    assert_eq!(stats.cluster_barriers, 2 * 5);
    Ok(())
}

fn ranks_outside_the_cluster() -> TestResult {
    let body = "
    .reg .b32 %r<4>;
    .shared .align 4 .b8 value[4];
    mov.u32 %r1, value;
    ld.param.u32 %r2, [rank];
    mapa.shared::cluster.u32 %r3, %r1, %r2;
    ret;";
    let module = ptx_module("mapa_rank", ".param .u32 rank", ".reqnctapercluster 4, 1, 1", body);
    let mut m = Machine::new();
    m.launch(&module, "mapa_rank", (4, 1, 1), (32, 1, 1), 0, &[ParamValue::U32(3)])?;
    let (_, fault) =
        fault_of(m.launch(&module, "mapa_rank", (4, 1, 1), (32, 1, 1), 0, &[ParamValue::U32(4)]));
    assert_eq!(fault, Fault::NoSuchClusterRank { rank: 4, cluster_size: 4 });
    // A shared::cluster address made up for rank 5 (0x8500_0000) faults when it is read.
    let body = "
    .reg .b32 %r<4>;
    .shared .align 4 .b8 value[4];
    ld.shared::cluster.u32 %r1, [0x85000000];
    ret;";
    let module = ptx_module("made_up", "", ".reqnctapercluster 4, 1, 1", body);
    let (_, fault) =
        fault_of(Machine::new().launch(&module, "made_up", (4, 1, 1), (32, 1, 1), 0, &[]));
    assert_eq!(fault, Fault::NoSuchClusterRank { rank: 5, cluster_size: 4 });
    Ok(())
}

fn a_runaway_cluster_stops() -> TestResult {
    // Rank 0 waits at the cluster barrier; rank 1 spins on a flag nothing sets.
    let body = "
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [flag];
    mov.u32 %r1, %cluster_ctarank;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $L_sync;
$L_spin:
    ld.volatile.global.u32 %r2, [%rd1];
    setp.eq.u32 %p2, %r2, 0;
    @%p2 bra $L_spin;
$L_sync:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;";
    let spin = ptx_module("spin", ".param .u64 flag", ".reqnctapercluster 2, 1, 1", body);
    let mut m = Machine::new();
    m.set_instruction_budget(10_000);
    let flag = m.alloc(4).unwrap();
    let (site, fault) =
        fault_of(m.launch(&spin, "spin", (2, 1, 1), (32, 1, 1), 0, &[ParamValue::U64(flag)]));
    assert!(matches!(
        fault,
        Fault::InstructionBudgetExceeded { budget: 10_000, warp: 0, threads_at_barrier: 0 }
    ));
    assert_eq!(site.block, (1, 0, 0));
    // Every block of the cluster passes barrier after barrier, forever: each block's own count
    // of warp instructions runs out, rank 0's first.
    let body = "
$L_again:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    bra.uni $L_again;";
    let forever = ptx_module("forever", "", ".reqnctapercluster 2, 1, 1", body);
    let (site, fault) = fault_of(m.launch(&forever, "forever", (2, 1, 1), (64, 1, 1), 0, &[]));
    assert!(matches!(fault, Fault::InstructionBudgetExceeded { budget: 10_000, .. }), "{fault}");
    assert_eq!(site.block, (0, 0, 0));
    Ok(())
}

const BUILTINS: &str = r#"
// A 2 x 2 cluster: block of rank r writes 1000 r + its block index to shared memory; after the
// cluster barrier, thread t reads the value of rank (r + t) % 4 through a generic pointer
// (mapa), and writes which rank that pointer is in, with the cluster's special registers.
extern "C" __global__ void __cluster_dims__(2, 2, 1) cluster_builtins(unsigned int* out)
{
    __shared__ unsigned int value;
    const unsigned int rank = __clusterRelativeBlockRank();
    if (threadIdx.x == 0) {
        value = 1000 * rank + blockIdx.x + 10 * blockIdx.y;
    }
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
    const unsigned int n = __clusterSizeInBlocks();
    const unsigned int other = (rank + threadIdx.x) % n;
    unsigned int* there = (unsigned int*)__cluster_map_shared_rank(&value, other);
    const unsigned int block = blockIdx.x + gridDim.x * blockIdx.y;
    out[block * 64 + threadIdx.x] = *there;
    out[block * 64 + 32 + threadIdx.x] = __cluster_query_shared_rank(there) + 100 * __clusterIdx().x
        + 1000 * __clusterIdx().y + 10000 * __clusterRelativeBlockIdx().y
        + 100000 * __clusterGridDimInClusters().x + 1000000 * __clusterDimIsSpecified();
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
}
"#;

fn cluster_builtins_of_a_2x2_cluster() -> TestResult {
    let ptx = common::ptx_of_source("cluster_builtins.cu", BUILTINS);
    assert!(ptx.contains("mapa.u64") && ptx.contains("getctarank"), "NVRTC's PTX changed:\n{ptx}");
    let module = ptx_sim::parse(&ptx)?;
    assert_eq!(module.kernel("cluster_builtins").unwrap().cluster, (2, 2, 1));
    let mut m = Machine::new();
    let out = m.alloc(8 * 64 * 4).unwrap();
    let stats =
        m.launch(&module, "cluster_builtins", (4, 2, 1), (32, 1, 1), 0, &[ParamValue::U64(out)])?;
    let out = u32s(&m.read(out, 8 * 64 * 4)?);
    for (x, y) in (0..2u32).flat_map(|y| (0..4u32).map(move |x| (x, y))) {
        let (cluster, rank) = (x / 2, x % 2 + 2 * y);
        let block = (x + 4 * y) as usize;
        for t in 0..32u32 {
            let q = (rank + t) % 4;
            let (qx, qy) = (2 * cluster + q % 2, q / 2);
            assert_eq!(
                out[64 * block + t as usize],
                1000 * q + qx + 10 * qy,
                "block ({x}, {y}), thread {t}"
            );
            let specials = q + 100 * cluster + 10000 * y + 100000 * 2 + 1000000;
            assert_eq!(out[64 * block + 32 + t as usize], specials, "block ({x}, {y}), thread {t}");
        }
    }
    assert_eq!((stats.cluster_barriers, stats.blocks), (2 * 2, 8));
    // Each block's 32 lanes read 4 ranks: 24 lanes reach the 3 others.
    assert_eq!(stats.distributed_shared_accesses, 8, "{stats:?}");
    Ok(())
}
