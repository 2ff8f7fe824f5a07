"""torch.distributed.all_reduce measured the way reduce-multi-gpu's bench measures NCCL and the ring.

One process per GPU (torchrun starts them), f32 buffers of 64 KiB to 1 GiB, a sum all-reduce in place.
Each size, by the bench's rule (gpu_harness::measure::median_ms_timed_by): one warm-up call, one timed
call that sizes a batch to about a millisecond (1 to 1000 calls), then 15 batches timed with CUDA events
on every rank; a batch's time per call is the slowest rank's mean, and the result is the median batch.
Prints on rank 0, in the bench's format:

    allreduce torch <gpus> <bytes> <ms per call>

    NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node=<gpus> scripts/torch_allreduce.py [MIN_KIB MAX_KIB]
"""

import math
import os
import sys

import torch
import torch.distributed as dist


def timed_batch(buffer: torch.Tensor, calls: int) -> float:
    """Milliseconds per all-reduce of `calls` in a row: the slowest rank's mean."""
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
    return ms.item()


def main() -> None:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    world = dist.get_world_size()
    low_kib, high_kib = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (64, 1 << 20)

    # A check first: rank r holds r + 1 everywhere, so the sum is n(n + 1)/2.
    check = torch.full((1 << 20,), float(rank + 1), device="cuda")
    dist.all_reduce(check)
    expected = world * (world + 1) / 2
    if not bool((check == expected).all()):
        raise SystemExit(f"rank {rank}: all_reduce gave {check[:4].tolist()}, expected {expected}")

    if rank == 0:
        print(f"# torch {torch.__version__} (nccl {'.'.join(map(str, torch.cuda.nccl.version()))})", flush=True)
    kib = low_kib
    while kib <= high_kib:
        size = kib << 10
        buffer = torch.zeros(size // 4, dtype=torch.float32, device="cuda")
        dist.all_reduce(buffer)
        once = timed_batch(buffer, 1)
        calls = max(1, min(1000, math.ceil(1.0 / max(once, 1e-4))))
        batches = sorted(timed_batch(buffer, calls) for _ in range(15))
        if rank == 0:
            print(f"allreduce torch {world} {size} {batches[len(batches) // 2]:.5f}", flush=True)
        kib *= 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
