"""torch.distributed.all_reduce measured the way reduce-multi-gpu's bench measures NCCL and the ring.

One process per GPU (torchrun starts them), f32 buffers of 4 MiB to 1 GiB, a sum all-reduce in place.
Each size: warm-up calls, then repeated calls timed with CUDA events on every rank; the time of a call
is the slowest rank's mean, the median of three batches. Prints on rank 0, in the bench's format:

    allreduce torch <gpus> <bytes> <ms per call>

    NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node=<gpus> scripts/torch_allreduce.py [MIN_MIB MAX_MIB]
"""

import os
import sys

import torch
import torch.distributed as dist


def main() -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    world = dist.get_world_size()
    low_mib, high_mib = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (4, 1024)

    # A check first: rank r holds r + 1 everywhere, so the sum is n(n + 1)/2.
    check = torch.full((1 << 20,), float(rank + 1), device="cuda")
    dist.all_reduce(check)
    expected = world * (world + 1) / 2
    if not bool((check == expected).all()):
        raise SystemExit(f"rank {rank}: all_reduce gave {check[:4].tolist()}, expected {expected}")

    if rank == 0:
        print(f"# torch {torch.__version__} (nccl {'.'.join(map(str, torch.cuda.nccl.version()))})", flush=True)
    mib = low_mib
    while mib <= high_mib:
        size = mib << 20
        buffer = torch.zeros(size // 4, dtype=torch.float32, device="cuda")
        for _ in range(5):
            dist.all_reduce(buffer)
        calls = max(10, min(100, (2 << 30) // size))
        batches = []
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dist.barrier()
            torch.cuda.synchronize()
            start.record()
            for _ in range(calls):
                dist.all_reduce(buffer)
            end.record()
            torch.cuda.synchronize()
            ms = torch.tensor([start.elapsed_time(end) / calls], device="cuda")
            dist.all_reduce(ms, op=dist.ReduceOp.MAX)
            batches.append(ms.item())
        if rank == 0:
            print(f"allreduce torch {world} {size} {sorted(batches)[1]:.5f}", flush=True)
        mib *= 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
