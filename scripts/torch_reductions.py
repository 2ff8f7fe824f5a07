"""PyTorch's reductions at work, timed the way the tour times the steps: the peers of the softmax,
norm and batch-norm statistics chapters (issue 29).

At the issue's shapes, on GPU 0, for f32 and bf16 inputs (random normal values, made once):
    softmax    torch.softmax(x, dim=-1)                        768x2^16 4096x2^14 32768x2^11 131072x512
    layer-norm torch.nn.functional.layer_norm(x, (cols,), w, b) 8192x4096 65536x1024
    rms-norm   torch.nn.functional.rms_norm(x, (cols,), w)      8192x4096 65536x1024
    var-mean   torch.var_mean(x, dim=(0, 2, 3))                 32x64x56x56 256x64x56x56 64x512x14x14
Each, by the tour's rule (gpu_harness::measure::median_ms_timed_by): one warm-up call, one timed
call that sizes a batch to about a millisecond (1 to 1000 calls), then 15 batches timed with CUDA
events; the result is the median batch's time per call. The bytes a call must move are printed
beside it (each input read once and each output written once; the weights and the statistics
counted too), so a reader gets GB/s as bytes / ms / 1e6.

Prints one line per measurement, after a header line naming the versions and the GPU:

    # torch <version> CUDA <version> on <GPU name>
    torch <op> <dtype> <case> <bytes> <ms per call>

where <case> is the shape as course.toml writes the case (4096x2^14, 32x64x56x56). The chapters'
data files are this output, committed as book/src/data/<gpu folder>/torch-reductions.txt (the gpu
folder is the tour's, e.g. nvidia-h200), run in the tour's session: the book reads each line of
an op and dtype that a peer of course.toml names (torch = "softmax f32") as that peer's record,
beside the tour's steps and against the roofs the tour measured at the same case.

    python3 scripts/torch_reductions.py > book/src/data/nvidia-h200/torch-reductions.txt
    python3 scripts/torch_reductions.py softmax        # only the ops named

The tour and the benches never need torch; this script is the only place that imports it.
"""

import statistics
import sys

import torch
import torch.nn.functional as F

SAMPLES = 15

# Each shape with its case as course.toml writes it (the chapters match lines by these labels).
SOFTMAX = [((768, 1 << 16), "768x2^16"), ((4096, 1 << 14), "4096x2^14"), ((32768, 1 << 11), "32768x2^11"),
           ((131072, 512), "131072x512")]
NORMS = [((8192, 4096), "8192x4096"), ((65536, 1024), "65536x1024")]
STATS = [(32, 64, 56, 56), (256, 64, 56, 56), (64, 512, 14, 14)]


def label(shape) -> str:
    """A tensor's shape as the registry writes its cases: its sides joined by x."""
    return "x".join(str(n) for n in shape)


def batch_ms(call, calls: int) -> float:
    """Milliseconds per call over `calls` calls in a row, by CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def median_ms(call) -> float:
    """The tour's rule: a warm-up, a batch sized to about 1 ms, the median of SAMPLES batches."""
    call()
    once = batch_ms(call, 1)
    calls = max(1, min(1000, round(1.0 / max(once, 1e-6))))
    return statistics.median(batch_ms(call, calls) for _ in range(SAMPLES))


def main() -> None:
    ops = set(sys.argv[1:]) or {"softmax", "layer-norm", "rms-norm", "var-mean"}
    name = torch.cuda.get_device_name(0)
    print(f"# torch {torch.__version__} CUDA {torch.version.cuda} on {name}", flush=True)
    generator = torch.Generator(device="cuda").manual_seed(29)
    for dtype, word in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        size = torch.tensor([], dtype=dtype).element_size()

        def report(op: str, case: str, bytes_moved: int, call) -> None:
            print(f"torch {op} {word} {case} {bytes_moved} {median_ms(call):.6f}", flush=True)

        def random(*shape) -> torch.Tensor:
            return torch.randn(*shape, device="cuda", dtype=dtype, generator=generator)

        if "softmax" in ops:
            for (rows, cols), case in SOFTMAX:
                x = random(rows, cols)
                report("softmax", case, 2 * size * rows * cols, lambda: torch.softmax(x, dim=-1))
                del x
        if "layer-norm" in ops or "rms-norm" in ops:
            # x read and y written; the weight (and the layer norm's bias) read once, of x's type:
            # course.toml's bytes, 8*n + 8*cols and 8*n + 4*cols for f32, half for bf16.
            for (rows, cols), case in NORMS:
                x, w, b = random(rows, cols), random(cols), random(cols)
                moved = 2 * size * rows * cols
                if "layer-norm" in ops:
                    report("layer-norm", case, moved + 2 * size * cols,
                           lambda: F.layer_norm(x, (cols,), w, b))
                if "rms-norm" in ops:
                    report("rms-norm", case, moved + size * cols, lambda: F.rms_norm(x, (cols,), w))
                del x, w, b
        if "var-mean" in ops:
            for shape in STATS:
                x = random(*shape)
                channels = shape[1]
                report("var-mean", label(shape), size * x.numel() + 2 * size * channels,
                       lambda: torch.var_mean(x, dim=(0, 2, 3)))
                del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
