//! Launches run together ([`Machine::launch_together`]): one launch per simulated GPU of a world
//! that shares one memory, of kernels that read each other's buffers and meet at flags (written
//! with `st.release.sys`, spun on with `ld.acquire.sys`), the way reduce-multi-gpu's device-side
//! all-reduces do. Block `b` of every launch runs interleaved with block `b` of the others, so the
//! spin-waits make progress; a wait for a flag nobody writes ends at the instruction budget.

mod common;

use gpu_test::{TestResult, TestSuite};
use ptx_sim::{Fault, Machine, Module, ParamValue, SimError};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .nvrtc(
            "exchange::every_launch_reads_every_other_launchs_data",
            every_launch_reads_every_other_launchs_data,
        )
        .nvrtc(
            "exchange::one_launch_together_counts_like_a_launch",
            one_launch_together_counts_like_a_launch,
        )
        .nvrtc(
            "budget::a_flag_nobody_writes_ends_at_the_budget",
            a_flag_nobody_writes_ends_at_the_budget,
        )
        .nvrtc("launch::parameters_are_checked_per_launch", parameters_are_checked_per_launch)
        .cpu("launch::a_kernel_with_clusters_is_refused", a_kernel_with_clusters_is_refused)
        .cpu("launch::no_launches_run_nothing", no_launches_run_nothing)
        .run()
}

/// Launch `rank` of `ranks` (block `b`, thread `t`, element `i = b * blockDim + t`): writes
/// `value(rank, i)` to `data[i]` of its own buffer, then thread 0 of the block writes `rank + 1`
/// with `st.release.sys` to flag `[b][rank]` of every other launch's buffer and spins with
/// `ld.acquire.sys` until each of its own flags `[b][r]` holds `r + 1`; after a barrier, thread
/// `t` reads `data[i]` of every launch's buffer into `out[i * ranks + r]`. A buffer is
/// `gridDim * blockDim` data words, then `gridDim * ranks` flags; `peers` is a table of every
/// launch's buffer address, this launch's copy of it.
const EXCHANGE: &str = r#"
__device__ void store_release(unsigned* p, unsigned v) {
    asm volatile("st.release.sys.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

__device__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

extern "C" __global__ void exchange(unsigned rank, unsigned ranks, const unsigned long long* peers,
                                    unsigned* out) {
    unsigned n = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned* mine = (unsigned*)peers[rank];
    mine[i] = 1000000u * (rank + 1) + i;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (unsigned r = 0; r < ranks; ++r) {
            if (r != rank)
                store_release((unsigned*)peers[r] + n + blockIdx.x * ranks + rank, rank + 1);
        }
        for (unsigned r = 0; r < ranks; ++r) {
            if (r != rank) {
                while (load_acquire(mine + n + blockIdx.x * ranks + r) != r + 1) {}
            }
        }
    }
    __syncthreads();
    for (unsigned r = 0; r < ranks; ++r) out[i * ranks + r] = ((const unsigned*)peers[r])[i];
}
"#;

fn exchange_module() -> Module {
    common::module_of_source("exchange.cu", EXCHANGE)
}

/// The value launch `rank` writes to element `i` of its data.
fn value(rank: u32, i: u32) -> u32 {
    1_000_000 * (rank + 1) + i
}

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// One world's buffers on `m`: `launches` launches of the exchange kernel over `grid` blocks of
/// `block` threads, each with its buffer, its table of every buffer's address and its output;
/// `ranks` is what the kernel is told (more than `launches`: it waits for launches that never
/// come). Returns each launch's parameters and output address.
fn world(
    m: &mut Machine,
    launches: u32,
    ranks: u32,
    grid: u32,
    block: u32,
) -> Vec<(Vec<ParamValue>, u64)> {
    let n = (grid * block) as usize;
    let buffers: Vec<u64> =
        (0..ranks).map(|_| m.alloc((n + grid as usize * ranks as usize) * 4).unwrap()).collect();
    let table: Vec<u8> = buffers.iter().flat_map(|b| b.to_le_bytes()).collect();
    (0..launches)
        .map(|rank| {
            let peers = m.alloc(table.len()).unwrap();
            m.write(peers, &table).unwrap();
            let out = m.alloc(n * ranks as usize * 4).unwrap();
            m.write(out, &vec![0xff; n * ranks as usize * 4]).unwrap();
            let params = vec![
                ParamValue::U32(rank),
                ParamValue::U32(ranks),
                ParamValue::U64(peers),
                ParamValue::U64(out),
            ];
            (params, out)
        })
        .collect()
}

fn every_launch_reads_every_other_launchs_data() -> TestResult {
    let module = exchange_module();
    let grid = 3;
    for block in [32, 256] {
        for k in 1..=5u32 {
            let mut m = Machine::new();
            let launches = world(&mut m, k, k, grid, block);
            let params: Vec<Vec<ParamValue>> = launches.iter().map(|(p, _)| p.clone()).collect();
            let stats =
                m.launch_together(&module, "exchange", (grid, 1, 1), (block, 1, 1), 0, &params)?;
            assert_eq!(stats.len(), k as usize);
            let n = grid * block;
            for (rank, (_, out)) in launches.iter().enumerate() {
                let got = u32s(&m.read(*out, (n * k) as usize * 4)?);
                for i in 0..n {
                    for r in 0..k {
                        assert_eq!(
                            got[(i * k + r) as usize],
                            value(r, i),
                            "{k} launches of {grid} blocks of {block}: launch {rank}, element \
                             {i}, from launch {r}"
                        );
                    }
                }
                assert_eq!(stats[rank].blocks, grid as u64);
                // Each launch's thread 0s wrote k - 1 flags with st.release and spun on k - 1.
                assert!(stats[rank].strong_loads >= (grid * (k - 1)) as u64, "{:?}", stats[rank]);
            }
        }
    }
    Ok(())
}

fn one_launch_together_counts_like_a_launch() -> TestResult {
    let module = exchange_module();
    let (grid, block) = (4, 64);
    let counts = |together: bool| -> Result<(ptx_sim::LaunchStats, Vec<u32>), SimError> {
        let mut m = Machine::new();
        let launches = world(&mut m, 1, 1, grid, block);
        let (params, out) = &launches[0];
        let stats = if together {
            m.launch_together(
                &module,
                "exchange",
                (grid, 1, 1),
                (block, 1, 1),
                0,
                std::slice::from_ref(params),
            )?
            .remove(0)
        } else {
            m.launch(&module, "exchange", (grid, 1, 1), (block, 1, 1), 0, params)?
        };
        Ok((stats, u32s(&m.read(*out, (grid * block) as usize * 4)?)))
    };
    assert_eq!(counts(true)?, counts(false)?);
    Ok(())
}

fn a_flag_nobody_writes_ends_at_the_budget() -> TestResult {
    let module = exchange_module();
    for launches in [1, 3] {
        let mut m = Machine::new();
        m.set_instruction_budget(50_000);
        // Every launch waits for rank `launches`, which is never launched.
        let world = world(&mut m, launches, launches + 1, 2, 32);
        let params: Vec<Vec<ParamValue>> = world.into_iter().map(|(p, _)| p).collect();
        match m.launch_together(&module, "exchange", (2, 1, 1), (32, 1, 1), 0, &params) {
            Err(SimError::Fault {
                site,
                fault: Fault::InstructionBudgetExceeded { budget: 50_000, .. },
            }) => {
                println!("{site}");
                assert_eq!(
                    (site.launch, site.block),
                    (Some(0), (0, 0, 0)),
                    "launch 0's block 0 runs out first"
                );
                assert!(site.to_string().contains("(launch 0 of those run together)"), "{site}");
            }
            other => panic!("expected the budget to run out, got {other:?}"),
        }
    }
    Ok(())
}

fn parameters_are_checked_per_launch() -> TestResult {
    let module = exchange_module();
    let mut m = Machine::new();
    let mut params: Vec<Vec<ParamValue>> =
        world(&mut m, 2, 2, 1, 32).into_iter().map(|(p, _)| p).collect();
    params[1].pop();
    match m.launch_together(&module, "exchange", (1, 1, 1), (32, 1, 1), 0, &params) {
        Err(SimError::BadLaunch { reason, .. }) => {
            assert_eq!(reason, "4 parameters declared, 3 given")
        }
        other => panic!("expected a bad launch, got {other:?}"),
    }
    Ok(())
}

fn a_kernel_with_clusters_is_refused() -> TestResult {
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry \
               pair()\n.reqnctapercluster 2, 1, 1\n{\nret;\n}\n";
    let module = ptx_sim::parse(ptx)?;
    let mut m = Machine::new();
    match m.launch_together(&module, "pair", (2, 1, 1), (32, 1, 1), 0, &[vec![], vec![]]) {
        Err(e @ SimError::BadLaunch { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains("cluster shape") && message.contains("(2, 1, 1)"),
                "{message}"
            );
        }
        other => panic!("expected a bad launch, got {other:?}"),
    }
    Ok(())
}

fn no_launches_run_nothing() -> TestResult {
    let ptx =
        ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry nothing()\n{\nret;\n}\n";
    let module = ptx_sim::parse(ptx)?;
    assert_eq!(
        Machine::new().launch_together(&module, "nothing", (1, 1, 1), (32, 1, 1), 0, &[])?,
        vec![]
    );
    Ok(())
}
