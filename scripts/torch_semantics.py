"""What torch (on CUDA) and numpy give for every case of the book's semantics page.

book/src/semantics.md lists, per family, what the kernels do with NaN, infinities, -0.0,
subnormals, empty inputs and integer overflow, beside what torch and numpy do. This script is the
torch/numpy column: one line per case, in a stable text format,

    <family> <case> torch=<value> numpy=<value>

where a value is a number as Python writes it (-0.0 keeps its sign), a float's bits where they
matter (`0x7fc00000`), a list `[a,b,c]`, `<value>:<dtype>` where the result type is the point, a
count list `bin<i>=<count>,...`, or `error:<exception>`; `+warning:<category>` is appended when the
call warned. Lines starting with `#` say which versions and device produced the file. Its output is
committed as book/src/data/torch-semantics.txt:

    python3 scripts/torch_semantics.py > book/src/data/torch-semantics.txt

torch runs on the GPU (`cuda`); without one the script stops, unless given `--cpu` (the results
then describe torch's CPU kernels, and the header says so). `--only=<family>` prints that family's
cases alone.
"""

import math
import sys
import warnings

import numpy as np
import torch

F32_MAX = float(np.finfo(np.float32).max)
TINY = 2.0**-149  # the smallest f32 subnormal
NAN, INF = math.nan, math.inf


def number(x) -> str:
    """A scalar as text: ints as they are, floats by repr (so -0.0 and nan read back)."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return repr(float(x))


def show(result, mode: str = "value") -> str:
    """A torch tensor or numpy array (or scalar) as one token, by `mode`: `value`, `bits` (f32 words),
    `typed` (`<value>:<dtype>`), `counts` (the nonzero bins of a histogram)."""
    if isinstance(result, torch.Tensor):
        result = result.detach().cpu()
        dtype = str(result.dtype).replace("torch.", "")
        scalar = result.dim() == 0
        # The words of f32 results as integers: a float through Python's double would lose a
        # signalling NaN's bit.
        as_words = result.reshape(-1).view(torch.int32) if mode == "bits" else None
        values = (as_words if as_words is not None else result.reshape(-1)).tolist()
    else:
        array = np.asarray(result)
        dtype = str(array.dtype)
        scalar = array.ndim == 0
        values = (array.reshape(-1).view(np.uint32) if mode == "bits" else array.reshape(-1)).tolist()
    if mode == "bits":
        text = "[" + ",".join("0x%08x" % (v & 0xFFFFFFFF) for v in values) + "]"
    elif mode == "counts":
        text = ",".join("bin%d=%s" % (i, number(c)) for i, c in enumerate(values) if c != 0) or "none"
    else:
        text = number(values[0]) if scalar else "[" + ",".join(number(v) for v in values) + "]"
    return text + ":" + dtype if mode in ("typed", "counts") else text


def run(case) -> str:
    """Calls `case()` (which returns its token), turning an exception into `error:<type>` and
    appending the categories of the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with np.errstate(all="warn"):
                text = case()
        except Exception as e:  # noqa: BLE001 - the exception's type is the answer
            text = "error:" + type(e).__name__
    categories = sorted({w.category.__name__ for w in caught})
    return text + "".join("+warning:" + c for c in categories)


def cases(dev: str):
    """(family, case, torch call, numpy call): each call returns its token."""
    f32 = lambda values: torch.tensor(values, dtype=torch.float32, device=dev)  # noqa: E731
    n32 = lambda values: np.array(values, dtype=np.float32)  # noqa: E731
    i32 = lambda values: torch.tensor(values, dtype=torch.int32, device=dev)  # noqa: E731
    ni32 = lambda values: np.array(values, dtype=np.int32)  # noqa: E731
    f16 = lambda values: torch.tensor(values, dtype=torch.float16, device=dev)  # noqa: E731
    n16 = lambda values: np.array(values, dtype=np.float16)  # noqa: E731
    # f32 values made from their bits, never through Python's floats (which would quiet a
    # signalling NaN): NaNs quiet, signalling and negative with payloads, -0.0, the smallest
    # subnormal, 1.0.
    specials = [0x7FC00000, 0x7F800001, 0xFFC01234, 0x80000000, 0x00000001, 0x3F800000]
    word_f32 = (  # noqa: E731
        lambda ws: torch.tensor([w - 2**32 if w >= 2**31 else w for w in ws], dtype=torch.int32, device=dev).view(
            torch.float32
        ),
        lambda ws: np.array(ws, dtype=np.uint32).view(np.float32),
    )

    def both(family, case, values, torch_op, numpy_op, mode="value", make=(f32, n32)):
        """A case whose torch and numpy calls are the same operation on the same values."""
        return (
            family,
            case,
            lambda: show(torch_op(make[0](values)), mode),
            lambda: show(numpy_op(make[1](values)), mode),
        )

    sum_ = (torch.sum, np.sum)
    yield both("reduction", "sum_empty", [], *sum_)
    yield both("reduction", "sum_neg_zero_x1", [-0.0], *sum_)
    yield both("reduction", "sum_neg_zero_x2", [-0.0] * 2, *sum_)
    yield both("reduction", "sum_neg_zero_x4099", [-0.0] * 4099, *sum_)
    yield both("reduction", "sum_nan", [1.0, NAN, 1.0], *sum_)
    yield both("reduction", "sum_inf", [1.0, INF], *sum_)
    yield both("reduction", "sum_inf_and_neg_inf", [INF, -INF], *sum_)
    yield both("reduction", "sum_overflow", [F32_MAX, F32_MAX], *sum_)
    yield both("reduction", "sum_subnormal_x1000", [TINY] * 1000, *sum_, mode="bits")
    yield both("reduction", "sum_int32_max_plus_1", [2**31 - 1, 1], *sum_, mode="typed", make=(i32, ni32))
    yield both(
        "reduction",
        "sum_int32_max_plus_1_as_int32",
        [2**31 - 1, 1],
        lambda x: torch.sum(x, dtype=torch.int32),
        lambda x: np.sum(x, dtype=np.int32),
        mode="typed",
        make=(i32, ni32),
    )
    yield (
        "reduction",
        "sum_uint32_max_plus_2",
        lambda: show(torch.sum(torch.tensor([2**32 - 1, 2], dtype=torch.uint32, device=dev)), "typed"),
        lambda: show(np.sum(np.array([2**32 - 1, 2], dtype=np.uint32)), "typed"),
    )
    yield both("reduction", "mean_int32", [2**31 - 1, 1], torch.mean, np.mean, mode="typed", make=(i32, ni32))
    yield both("reduction", "mean_empty", [], torch.mean, np.mean)
    yield both("reduction", "min_empty", [], torch.min, np.min)
    yield both("reduction", "max_empty", [], torch.max, np.max)
    yield both("reduction", "max_nan", [1.0, NAN, 3.0], torch.max, np.max)
    yield both("reduction", "min_nan", [1.0, NAN, -3.0], torch.min, np.min)
    yield both("reduction", "max_neg_zero_then_zero", [-0.0, 0.0], torch.max, np.max)
    yield both("reduction", "min_neg_zero_then_zero", [-0.0, 0.0], torch.min, np.min)
    yield both("reduction", "max_zero_then_neg_zero", [0.0, -0.0], torch.max, np.max)
    yield both("reduction", "min_zero_then_neg_zero", [0.0, -0.0], torch.min, np.min)
    yield both("reduction", "max_neg_zero_x4099", [-0.0] * 4099, torch.max, np.max)
    yield both("reduction", "min_inf_x5", [INF] * 5, torch.min, np.min)
    yield both("reduction", "max_neg_inf_x5", [-INF] * 5, torch.max, np.max)
    yield both("reduction", "min_subnormals", [3 * TINY, TINY, 2 * TINY], torch.min, np.min, mode="bits")
    yield both("reduction", "argmax_nan", [1.0, NAN, 3.0, NAN], torch.argmax, np.argmax)
    yield both("reduction", "argmax_ties", [1.0, 7.0, 3.0, 7.0], torch.argmax, np.argmax)
    yield both("reduction", "argmax_empty", [], torch.argmax, np.argmax)
    # Operators (reduce-multi-level's Reduce): products, argmin, logical and bitwise reductions.
    prod = (torch.prod, np.prod)
    yield both("operators", "prod_overflow", [1e30, 1e30, 1e30], *prod)
    yield both("operators", "prod_underflow_negative", [1e-30, 1e-30, -1e-30], *prod)
    yield both("operators", "prod_inf_times_zero", [INF, 2.0, 0.0], *prod)
    yield both("operators", "prod_nan", [2.0, NAN, 0.5], *prod)
    yield both("operators", "prod_neg_zero", [-0.0, 3.0], *prod)
    yield both("operators", "prod_empty", [], *prod)
    yield both(
        "operators",
        "prod_int32_wrap_as_int32",
        [2**31 - 1, 2],
        lambda x: torch.prod(x, dtype=torch.int32),
        lambda x: np.prod(x, dtype=np.int32),
        mode="typed",
        make=(i32, ni32),
    )
    yield both("operators", "prod_int32", [65536, 65536], *prod, mode="typed", make=(i32, ni32))
    yield both("operators", "argmin_ties", [3.0, 1.0, 2.0, 1.0], torch.argmin, np.argmin)
    yield both("operators", "argmin_nan", [1.0, -9.0, NAN], torch.argmin, np.argmin)
    yield both("operators", "argmin_empty", [], torch.argmin, np.argmin)
    yield both("operators", "all_nan", [1.0, NAN], torch.all, np.all)
    yield both("operators", "all_neg_zero", [1.0, -0.0], torch.all, np.all)
    yield both("operators", "any_zeros", [-0.0, 0.0], torch.any, np.any)
    yield both("operators", "all_empty", [], torch.all, np.all)
    yield both("operators", "any_empty", [], torch.any, np.any)
    yield (
        "operators",
        "bitwise_and_empty",
        lambda: "no-reduction",  # torch has no bitwise reduction
        lambda: show(np.bitwise_and.reduce(np.array([], dtype=np.int32)), "typed"),
    )
    yield (
        "operators",
        "bitwise_xor",
        lambda: "no-reduction",
        lambda: show(np.bitwise_xor.reduce(np.array([12, 10, -1], dtype=np.int32)), "typed"),
    )

    var0 = (lambda x: torch.var(x, correction=0), np.var)
    var1 = (lambda x: torch.var(x, correction=1), lambda x: np.var(x, ddof=1))
    yield both("numerics", "var_inf", [0.5, INF, 0.5], *var0)
    yield both("numerics", "var_nan", [0.5, NAN, 0.5], *var0)
    yield both("numerics", "mean_inf", [0.5, INF], torch.mean, np.mean)
    yield both("numerics", "mean_inf_and_neg_inf", [INF, -INF], torch.mean, np.mean)
    yield both("numerics", "var_one", [2.5], *var0)
    yield both("numerics", "sample_var_one", [2.5], *var1)
    yield both("numerics", "var_empty", [], *var0)
    yield both("numerics", "mean_1e38_x1000", [1e38] * 1000, torch.mean, np.mean)
    yield both("numerics", "var_1e38_x1000", [1e38] * 1000, *var0)
    yield both("numerics", "var_pm3e38_x1000", [-3e38, 3e38] * 500, *var0)
    yield both("numerics", "var_neg_zero_x2", [-0.0, -0.0], *var0)
    half_sum = (torch.sum, np.sum)
    yield both("numerics", "sum_f16_65504_x1000", [65504.0] * 1000, *half_sum, mode="typed", make=(f16, n16))
    yield both(
        "numerics",
        "sum_f16_65504_x1000_in_f32",
        [65504.0] * 1000,
        lambda x: torch.sum(x, dtype=torch.float32),
        lambda x: np.sum(x, dtype=np.float32),
        mode="typed",
        make=(f16, n16),
    )
    yield both("numerics", "sum_f16_subnormal_x1000", [2.0**-24] * 1000, *half_sum, mode="typed", make=(f16, n16))

    cumsum = (lambda x: torch.cumsum(x, 0), np.cumsum)
    yield both("scan", "cumsum_int32_wrap", [2**31 - 1, 1, 1], *cumsum, mode="typed", make=(i32, ni32))
    yield both(
        "scan",
        "cumsum_int32_wrap_as_int32",
        [2**31 - 1, 1, 1],
        lambda x: torch.cumsum(x, 0, dtype=torch.int32),
        lambda x: np.cumsum(x, dtype=np.int32),
        mode="typed",
        make=(i32, ni32),
    )
    yield both("scan", "cumsum_neg_zero_x2", [-0.0, -0.0], *cumsum)
    yield both("scan", "cumsum_nan", [1.0, NAN, 1.0], *cumsum)
    yield both("scan", "cumsum_inf", [1.0, INF, 1.0, -INF, 1.0], *cumsum)
    yield both("scan", "cumsum_empty", [], *cumsum)
    yield both("scan", "cumsum_subnormals", [TINY] * 4, *cumsum, mode="bits")

    zeros = [-0.0, 0.0, 1.0, -1.0]
    with_nan = [NAN, 1.0, -1.0]
    select = lambda keep: (lambda x: x[keep(x)], lambda x: x[keep(x)])  # noqa: E731
    yield both("compact", "greater_than_zero", zeros, *select(lambda x: x > 0.0))
    yield both("compact", "less_than_neg_zero", zeros, *select(lambda x: x < -0.0))
    yield both("compact", "not_equal_zero", zeros, *select(lambda x: x != 0.0))
    yield both("compact", "at_most_zero", zeros, *select(lambda x: x <= 0.0))
    yield both("compact", "greater_than_nan", with_nan, *select(lambda x: x > NAN))
    yield both("compact", "not_equal_nan", with_nan, *select(lambda x: x != NAN))
    yield both("compact", "not_nan", with_nan, *select(lambda x: x == x))
    yield both("compact", "greater_than_zero_with_nan", with_nan, *select(lambda x: x > 0.0))
    yield both("compact", "empty", [], *select(lambda x: x > 0.0))
    yield both("compact", "bits_kept", specials, *select(lambda x: x != 2.0), mode="bits", make=word_f32)
    yield both(
        "compact",
        "bits_kept_by_mask",
        specials,
        lambda x: torch.masked_select(x, torch.ones_like(x, dtype=torch.bool)),
        lambda x: x[np.ones(len(x), dtype=bool)],
        mode="bits",
        make=word_f32,
    )

    histc = lambda lower, upper: (  # noqa: E731
        lambda x: torch.histc(x, bins=4, min=lower, max=upper),
        lambda x: np.histogram(x, bins=4, range=(lower, upper))[0],
    )
    yield both("histogram", "upper_edge", [0.0, 0.25, 0.5, 1.0], *histc(0.0, 1.0), mode="counts")
    yield both("histogram", "below_upper_edge", [float(np.nextafter(np.float32(1), np.float32(0)))], *histc(0.0, 1.0), mode="counts")
    yield both("histogram", "nan", [0.5, NAN], *histc(0.0, 1.0), mode="counts")
    yield both("histogram", "infinities", [0.5, INF, -INF], *histc(0.0, 1.0), mode="counts")
    yield both("histogram", "signed_zeros", [-0.0, 0.0], *histc(0.0, 1.0), mode="counts")
    yield both("histogram", "subnormal", [TINY], *histc(0.0, 1.0), mode="counts")
    yield both("histogram", "empty", [], *histc(0.0, 1.0), mode="counts")
    wide = [-1.7e38, -5e37, -1.0, 0.0, 5e37, 8.4e37, 1.69e38]
    yield both("histogram", "range_wider_than_f32", wide, *histc(-3e38, 3e38), mode="counts")
    yield both("histogram", "widest_f32_range", wide, *histc(-1.7e38, 1.7e38), mode="counts")
    yield (
        "histogram",
        "bytes",
        lambda: show(torch.bincount(torch.tensor([0, 255, 255], dtype=torch.uint8, device=dev), minlength=256), "counts"),
        lambda: show(np.bincount(np.array([0, 255, 255], dtype=np.uint8), minlength=256), "counts"),
    )

    yield (
        "transpose",
        "bits_kept",
        lambda: show(word_f32[0](specials).reshape(2, 3).t().contiguous(), "bits"),
        lambda: show(word_f32[1](specials).reshape(2, 3).T.copy(), "bits"),
    )
    yield (
        "transpose",
        "empty",
        lambda: str(tuple(torch.zeros(0, 3, device=dev).t().contiguous().shape)).replace(" ", ""),
        lambda: str(np.zeros((0, 3), dtype=np.float32).T.copy().shape).replace(" ", ""),
    )

    # Layer norm and RMS norm of one row (weight 1, bias 0.25), torch's CUDA kernels beside the
    # textbook formula in numpy's f32.
    ln = lambda eps: (  # noqa: E731
        lambda x: torch.nn.functional.layer_norm(
            x.reshape(1, -1), (x.numel(),), torch.ones(x.numel(), device=dev), torch.full((x.numel(),), 0.25, device=dev), eps
        ),
        lambda x: (x - x.mean()) / np.sqrt(x.var() + np.float32(eps)) + np.float32(0.25),
    )
    rms = lambda eps: (  # noqa: E731
        lambda x: torch.nn.functional.rms_norm(x.reshape(1, -1), (x.numel(),), torch.ones(x.numel(), device=dev), eps),
        lambda x: x / np.sqrt((x * x).mean() + np.float32(eps)),
    )
    yield both("norms", "layer_norm_nan", [0.5, NAN, 1.5, 2.0], *ln(1e-5))
    yield both("norms", "rms_norm_nan", [0.5, NAN, 1.5, 2.0], *rms(1e-5))
    yield both("norms", "layer_norm_inf", [0.5, INF, 1.5, 2.0], *ln(1e-5))
    yield both("norms", "rms_norm_inf", [0.5, INF, -1.5, 2.0], *rms(1e-5))
    yield both("norms", "layer_norm_constant", [0.1] * 4, *ln(1e-5))
    yield both("norms", "layer_norm_constant_eps_0", [0.1] * 4, *ln(0.0))
    yield both("norms", "rms_norm_zeros_eps_0", [0.0] * 4, *rms(0.0))
    yield both("norms", "layer_norm_1e30", [1e30, -1e30, 2e30, -2e30], *ln(1e-5))
    yield both("norms", "rms_norm_1e30", [1e30, -1e30, 2e30, -2e30], *rms(1e-5))
    for rows, cols, case in ((0, 4, "layer_norm_0_rows"), (3, 0, "layer_norm_0_cols")):
        yield (
            "norms",
            case,
            lambda rows=rows, cols=cols: str(
                tuple(torch.nn.functional.layer_norm(torch.zeros(rows, cols, device=dev), (cols,)).shape)
            ).replace(" ", ""),
            lambda rows=rows, cols=cols: "(no numpy layer norm)",
        )

    # Batch-norm statistics: each channel's mean and variance, torch.var_mean(x, dim=(0, 2, 3)),
    # printed as [means..., variances...]. The values are one channel: N = len(values) samples of
    # 1 x 1, unless the case names its shape.
    def var_mean(correction):
        def torch_op(x):
            var, mean = torch.var_mean(x.reshape(-1, 1, 1, 1) if x.dim() == 1 else x, dim=(0, 2, 3),
                                       correction=correction)
            return torch.cat([mean, var])

        def numpy_op(x):
            x = x.reshape(-1, 1, 1, 1) if x.ndim == 1 else x
            return np.concatenate([x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3), ddof=correction)])

        return torch_op, numpy_op

    yield both("batch-stats", "var_mean_nan", [0.5, NAN, 1.5, 2.0], *var_mean(1))
    yield both("batch-stats", "var_mean_inf", [0.5, INF, 1.5, 2.0], *var_mean(1))
    yield both("batch-stats", "var_mean_inf_and_neg_inf", [INF, -INF, 1.0], *var_mean(1))
    yield both("batch-stats", "var_mean_one", [2.5], *var_mean(1))
    yield both("batch-stats", "var_mean_one_population", [2.5], *var_mean(0))
    yield both("batch-stats", "var_mean_constant", [0.1] * 1000, *var_mean(1))
    yield both("batch-stats", "var_mean_1e38_x1000", [1e38] * 1000, *var_mean(1))
    yield both("batch-stats", "var_mean_pm3e38_x1000", [-3e38, 3e38] * 500, *var_mean(1))
    for shape, case in (((0, 3, 4, 4), "var_mean_no_samples"), ((2, 0, 4, 4), "var_mean_no_channels")):
        yield (
            "batch-stats",
            case,
            lambda shape=shape: show(var_mean(1)[0](torch.zeros(shape, device=dev))),
            lambda shape=shape: show(var_mean(1)[1](np.zeros(shape, dtype=np.float32))),
        )


def main() -> int:
    allow_cpu = "--cpu" in sys.argv[1:]
    if torch.cuda.is_available():
        dev, where = "cuda", torch.cuda.get_device_name(0)
    elif allow_cpu:
        dev, where = "cpu", "CPU (no GPU: torch's CPU kernels, not its CUDA ones)"
    else:
        print("torch sees no CUDA GPU; run on the GPU machine (or pass --cpu for torch's CPU kernels)", file=sys.stderr)
        return 1
    print("# scripts/torch_semantics.py: torch %s on %s, numpy %s" % (torch.__version__, where, np.__version__))
    print("# <family> <case> torch=<value> numpy=<value>")
    only = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")]
    for family, case, torch_call, numpy_call in cases(dev):
        if only and family not in only:
            continue
        print("%s %s torch=%s numpy=%s" % (family, case, run(torch_call), run(numpy_call)))
    if dev == "cuda":
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
