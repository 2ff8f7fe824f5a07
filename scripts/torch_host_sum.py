"""The sum of an f32 array in host memory by PyTorch, measured the way reduce-host's bench measures
its steps: `torch.from_numpy(x).cuda().sum().item()` (pageable memory), and the same from a pinned
copy (`.pin_memory()`, copied with `non_blocking=True`), 64 KiB to 8 GiB.

Each size, by the bench's rule (gpu_harness::measure::median_ms_timed_by): one warm-up call, one
timed call that sizes a batch to about a millisecond (1 to 1000 calls), then 15 batches timed by
the host's clock to the answer on the host; the result is the median batch's time per call. The
input is the bench's (every run of 32 elements sums to 0). Prints, in the bench's format:

    torch <bytes> <ms per call>
    torch-pinned <bytes> <ms per call>

    python3 scripts/torch_host_sum.py
"""

import math
import time

import numpy as np
import torch

SAMPLES = 15


def median_ms(call) -> float:
    call()
    start = time.perf_counter()
    call()
    once = (time.perf_counter() - start) * 1e3
    calls = max(1, min(1000, math.ceil(1.0 / max(once, 1e-4))))
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) * 1e3 / calls)
    return sorted(times)[len(times) // 2]


def bench_input(n: int) -> np.ndarray:
    """Element i is +-(i mod 16 + 0.5), the sign flipping every 16 (n a multiple of 32)."""
    half = np.arange(16, dtype=np.float32) + 0.5
    return np.tile(np.concatenate([half, -half]), n // 32)


def main() -> None:
    print(f"# torch {torch.__version__}", flush=True)
    size = 64 << 10
    while size <= 8 << 30:
        x = bench_input(size // 4)
        got = torch.from_numpy(x).cuda().sum().item()
        if got != 0.0:
            print(f"# warning: torch summed {size} bytes to {got}, not 0", flush=True)
        print(f"torch {size} {median_ms(lambda: torch.from_numpy(x).cuda().sum().item()):.5f}", flush=True)
        pinned = torch.from_numpy(x).pin_memory()
        del x
        ms = median_ms(lambda: pinned.cuda(non_blocking=True).sum().item())
        print(f"torch-pinned {size} {ms:.5f}", flush=True)
        del pinned
        size = 8 << 30 if size == 1 << 30 else size * 4


if __name__ == "__main__":
    main()
