// norms: layer norm and RMS norm of every row, every step in one file.
//
// Every kernel here normalises each row of a row-major `rows x cols` matrix x, as torch does over
// the last dimension, with w and b vectors of cols values shared by every row:
//
//   layer norm  y = (x - mean) / sqrt(var + eps) * w + b   F.layer_norm(x, (cols,), w, b, eps)
//   RMS norm    y = x / sqrt(mean(x^2) + eps) * w          F.rms_norm(x, (cols,), w, eps)
//
// mean, var (the biased variance: divided by cols) and mean(x^2) are taken over the row. A layer
// norm needs two statistics of the row, an RMS norm one: the sum of the squares.
//
// Two element types, one code: f32 rows, and bf16 rows (16-bit words, read and written as bf16,
// computed in f32 inside), whose w and b are bf16 too. Each step is a template on the element (F32,
// BF16) and on the norm (Layer, Rms); its entry points are `<norm>_<step>` for f32 and
// `<norm>_<step>_bf16` for bf16.
//
// What the kernels do with special values is torch's: a NaN in a row makes the whole row NaN; an
// infinity makes a layer norm's row NaN (x - mean is inf - inf) and an RMS norm's row 0 (x / inf),
// NaN where the infinity was; a constant row has variance 0 and comes out as b exactly (eps keeps
// the division finite), or NaN where eps is 0. Where torch overflows they do not: the statistics
// are taken on the row scaled by a power of two (see `scale`), so rows of 1e30, or near f32's
// largest value, normalise as they should (torch's f32 kernels square 1e30 into infinity: torch
// 2.11 on an H100 returns b, or zeros).
//
// Offsets are 64-bit (`size_t`): a matrix may hold more than 2^32 elements; rows and cols are each
// below 2^31, which the launcher checks.
//
// The steps, each differing from the one before by one technique:
//   1. <norm>_two_pass    a block per row; a sweep for the mean, a sweep for the variance of the
//                         deviations from it, a sweep to write: the row read three times (RMS
//                         norm: two, its one statistic, then the write)
//   2. <norm>_one_pass    a block per row; the row in registers, each thread's (count, mean, m2)
//                         combined with Chan's formula: the row read once
//   3. <norm>_by_length   a warp per row for short rows (a few for longer ones), 16-byte loads
#include "bf16.cuh"
#include "block_reduce.cuh"

// The threads of a block of every kernel (the launcher uses this many).
#define THREADS       256
// The elements a thread of step 2 keeps in registers: a block holds a row of THREADS * SLOTS.
// (32 would hold rows of 8192, but takes 112 registers a thread: two blocks of 256 per SM.)
#define SLOTS         16
// The elements a lane of step 3 keeps in registers: 8 16-byte vectors of f32, 4 of bf16.
#define LANE_ELEMENTS 32

// ANCHOR: elements
// The element types. `Word` is what memory holds; values are f32 when computed with. A 16-byte
// vector (uint4) holds PER_VEC elements; `element(q, j)` is the j-th as f32 (j a constant once
// loops unroll), and `gather` reads elements [first, first + PER_VEC) one load at a time into such
// a vector, zero words from `len` on (a row's tail, or a row that does not start on a 16-byte
// boundary), which are +0.0.
__device__ __forceinline__ unsigned int word(uint4 q, int k)
{
    return k == 0 ? q.x : k == 1 ? q.y : k == 2 ? q.z : q.w;
}

struct F32 {
    typedef float Word;
    enum { PER_VEC = 4 };
    __device__ static float load(const Word* p, size_t i) { return p[i]; }
    __device__ static void store(Word* p, size_t i, float y) { p[i] = y; }
    __device__ static float element(uint4 q, int j) { return __uint_as_float(word(q, j)); }
    __device__ static uint4 gather(const Word* p, unsigned int first, unsigned int len)
    {
        unsigned int w[PER_VEC];
#pragma unroll
        for (int j = 0; j < PER_VEC; j++) {
            w[j] = first + j < len ? __float_as_uint(p[first + j]) : 0u;
        }
        return make_uint4(w[0], w[1], w[2], w[3]);
    }
    __device__ static uint4 pack(const float* y)
    {
        return make_uint4(__float_as_uint(y[0]), __float_as_uint(y[1]), __float_as_uint(y[2]),
                          __float_as_uint(y[3]));
    }
};

// bfloat16: widened by a shift (bf16_to_float), rounded to nearest even by float_to_bf16_cvt, one
// conversion instruction from sm_80 on (cvt.rn.bf16.f32); both in bf16.cuh.
struct BF16 {
    typedef unsigned short Word;
    enum { PER_VEC = 8 };
    __device__ static float load(const Word* p, size_t i) { return bf16_to_float(p[i]); }
    __device__ static void store(Word* p, size_t i, float y) { p[i] = (Word)float_to_bf16_cvt(y); }
    __device__ static float element(uint4 q, int j)
    {
        return bf16_to_float((word(q, j / 2) >> (16 * (j % 2))) & 0xffffu);
    }
    __device__ static uint4 gather(const Word* p, unsigned int first, unsigned int len)
    {
        unsigned int w[PER_VEC];
#pragma unroll
        for (int j = 0; j < PER_VEC; j++) {
            w[j] = first + j < len ? p[first + j] : 0u;
        }
        return make_uint4(w[0] | (w[1] << 16), w[2] | (w[3] << 16), w[4] | (w[5] << 16),
                          w[6] | (w[7] << 16));
    }
    __device__ static uint4 pack(const float* y)
    {
        unsigned int w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            w[k] = float_to_bf16_cvt(y[2 * k]) | (float_to_bf16_cvt(y[2 * k + 1]) << 16);
        }
        return make_uint4(w[0], w[1], w[2], w[3]);
    }
};
// ANCHOR_END: elements

// ANCHOR: scale
// Statistics that cannot overflow. A square of 1e30 is past f32's largest value (3.4e38), and so is
// the deviation of 3e38 from -3e38: torch's f32 kernels return b (layer norm) or 0 (RMS norm)
// for such rows. Here every statistic is taken on the values scaled by 2^-e, e the
// scale of the largest magnitude: each scaled value is below 4, its square below 16, a sum of 2^31
// of them finite. A power of two scales exactly (unless the result is subnormal: values 2^126 times
// smaller than the largest, whose loss is far below f32's rounding of the statistics).
//
// 2^k for k in [-126, 127], built from its bits: a normal float, exact.
__device__ __forceinline__ float pow2(int k)
{
    return __int_as_float((k + 127) << 23);
}

// 2^k for k <= 0, and 0 below 2^-126: what a state scaled by 2^-a is multiplied by to be scaled by
// 2^-b, for b >= a.
__device__ __forceinline__ float pow2_down(int k)
{
    return k < -126 ? 0.0f : pow2(k);
}

// The scale of a magnitude m >= 0: the e in [-126, 126] with m 2^-e below 1 (below 4 for m of
// 2^126 and more, and 2^-e a normal float). A NaN or an infinity gets 126 and stays what it is.
__device__ __forceinline__ int scale_of(float magnitude)
{
    const int biased = (int)((__float_as_uint(magnitude) >> 23) & 0xffu);
    return min(max(biased - 126, -126), 126);
}

// What a scaled deviation (x 2^-e - center) is multiplied by to be normalised: 2^e / sqrt(v + eps),
// given v_s = v 2^-2e (v the row's variance, or mean square), without overflow:
//   - usually 1 / sqrt(v_s + eps 2^-2e), in the scaled units;
//   - for a row of tiny values (e below -72 for torch's eps) eps 2^-2e overflows, and eps
//     dominates v: the same 2^e / sqrt(v + eps), computed unscaled;
//   - a constant row has v_s = 0; for a huge one eps 2^-2e is 0 too, and the deviations are all
//     exactly 0: any finite factor gives y = b. With eps = 0 the factor is 1 / 0 = inf, and
//     0 * inf is NaN, as in torch.
// A NaN variance gives NaN; an infinite one (an RMS norm over an infinity) gives 0.
__device__ __forceinline__ float inverse_deviation(float v_scaled, int e, float eps)
{
    const float g = pow2(-e);
    const float eps_scaled = (eps * g) * g;
    if (isinf(eps_scaled)) {
        const float up = pow2(e);
        return up / sqrtf((v_scaled * up) * up + eps);
    }
    const float t = v_scaled + eps_scaled;
    return (t == 0.0f && eps > 0.0f) ? 0.0f : 1.0f / sqrtf(t);
}

// How every step writes: y = (x g - center) factor w + b, g = 2^-e the row's scale, center its
// scaled mean (0 for an RMS norm).
struct Affine {
    float g, center, factor;
};
// ANCHOR_END: scale

// ANCHOR: sums
// A sum kept in the units of 2^e (`Scaled`): the running e is the scale of the largest magnitude
// seen so far, and when a larger one comes the sum is rescaled to it (a multiplication by a power
// of two, like online softmax's rescale by exp). Two such sums combine by rescaling the one of the
// smaller scale. Two kinds:
//   ShiftedSum  the sum of (x - pivot): the deviations from a value of the row (its first), whose
//               mean plus the pivot is the row's mean; a constant row sums to exactly 0, so its
//               mean is exactly its value (the mean of n copies of 0.1f by plain addition is not);
//   Squares     the sum of x^2, the one statistic of an RMS norm.
struct Scaled {
    int e;
    float sum;
};

struct ShiftedSum {
    typedef Scaled Value;
    __device__ static Scaled identity()
    {
        Scaled empty = {-126, 0.0f};
        return empty;
    }
    __device__ static Scaled combine(Scaled a, Scaled b)
    {
        const int e = max(a.e, b.e);
        Scaled sum = {e, a.sum * pow2_down(a.e - e) + b.sum * pow2_down(b.e - e)};
        return sum;
    }
};

struct Squares {
    typedef Scaled Value;
    __device__ static Scaled identity() { return ShiftedSum::identity(); }
    __device__ static Scaled combine(Scaled a, Scaled b)
    {
        const int e = max(a.e, b.e);
        const float fa = pow2_down(a.e - e), fb = pow2_down(b.e - e);
        Scaled sum = {e, (a.sum * fa) * fa + (b.sum * fb) * fb};
        return sum;
    }
};

// One element into a running sum: rescale first where x is larger than all before it.
__device__ __forceinline__ void rescale_to(Scaled& acc, float x, int power)
{
    const int e = scale_of(fabsf(x));
    if (e > acc.e) {
        const float f = pow2_down(acc.e - e);
        acc.sum = power == 1 ? acc.sum * f : (acc.sum * f) * f;
        acc.e = e;
    }
}
__device__ __forceinline__ void add_shifted(Scaled& acc, float x, float pivot)
{
    rescale_to(acc, x, 1);
    const float g = pow2(-acc.e);
    acc.sum += fmaf(x, g, -(pivot * g)); // x g is exact: one rounding
}
__device__ __forceinline__ void add_square(Scaled& acc, float x)
{
    rescale_to(acc, x, 2);
    const float t = x * pow2(-acc.e);
    acc.sum = fmaf(t, t, acc.sum);
}
// ANCHOR_END: sums

// The warp reductions (block_reduce.cuh's, and row_reduce below) move every field.
__device__ __forceinline__ Scaled shuffle_down(Scaled value, int offset)
{
    Scaled moved = {__shfl_down_sync(0xffffffffu, value.e, offset),
                    __shfl_down_sync(0xffffffffu, value.sum, offset)};
    return moved;
}
__device__ __forceinline__ Scaled shuffle_xor(Scaled value, int lanes)
{
    Scaled moved = {__shfl_xor_sync(0xffffffffu, value.e, lanes),
                    __shfl_xor_sync(0xffffffffu, value.sum, lanes)};
    return moved;
}

// A value every thread of the block gets: thread 0's `value`. Two barriers: the first makes the
// write visible, the second keeps the slot from being overwritten by a next call before everyone
// has read it.
template <class T> __device__ __forceinline__ T block_broadcast(T value)
{
    __shared__ T slot;
    if (threadIdx.x == 0) {
        slot = value;
    }
    __syncthreads();
    value = slot;
    __syncthreads();
    return value;
}

// What a layer norm and an RMS norm write, given the row's Affine (b is not read for an RMS norm).
struct LayerWrite {
    enum { HAS_BIAS = 1 };
    __device__ static float apply(float x, Affine a, float w, float b)
    {
        return fmaf(fmaf(x, a.g, -a.center) * a.factor, w, b);
    }
};
struct RmsWrite {
    enum { HAS_BIAS = 0 };
    __device__ static float apply(float x, Affine a, float w, float b)
    {
        return ((x * a.g) * a.factor) * w;
    }
};

// ANCHOR: two_pass
// Step 1, two passes: layer_norm_two_pass and rms_norm_two_pass.
//
// What it does: a block of THREADS threads per row, each walking the row with a block-stride loop
// (thread t takes elements t, t + THREADS, ...: a warp reads 32 consecutive elements, coalesced).
// A layer norm sweeps the row three times: the mean (each thread's shifted sum, then a block
// reduction broadcast to every thread), the variance as the mean of the squared deviations from
// that mean (a second block reduction), then the write. An RMS norm sweeps it twice: the sum of
// the squares, then the write.
//
// What it leaves slow: a row of 4096 f32 crosses the memory bus three times on the way in (twice
// for an RMS norm) where one read and one write are all a norm needs: whether the second and third
// sweeps come from L2 depends on how much of the matrix the blocks in flight hold.
//
// Launch: block THREADS, grid rows.
template <class E>
__device__ void layer_two_pass(const typename E::Word* __restrict__ x,
                               const typename E::Word* __restrict__ w,
                               const typename E::Word* __restrict__ b,
                               typename E::Word* __restrict__ y, unsigned int cols, float eps)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    const typename E::Word* row = x + offset;
    // Sweep 1: the mean, as the first element plus the mean deviation from it.
    const float pivot = E::load(row, 0);
    Scaled shifted = {scale_of(fabsf(pivot)), 0.0f};
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        add_shifted(shifted, E::load(row, i), pivot);
    }
    shifted = block_broadcast(block_reduce<ShiftedSum>(shifted));
    const float g = pow2(-shifted.e);
    const float mean = fmaf(pivot, g, shifted.sum / (float)cols);
    // Sweep 2: the variance, from the deviations from the mean, in the same scale.
    float m2 = 0.0f;
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        const float d = fmaf(E::load(row, i), g, -mean);
        m2 = fmaf(d, d, m2);
    }
    m2 = block_broadcast(block_reduce<Sum<float>>(m2));
    const Affine a = {g, mean, inverse_deviation(m2 / (float)cols, shifted.e, eps)};
    // Sweep 3: the write.
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        E::store(y + offset, i,
                 LayerWrite::apply(E::load(row, i), a, E::load(w, i), E::load(b, i)));
    }
}

template <class E>
__device__ void rms_two_pass(const typename E::Word* __restrict__ x,
                             const typename E::Word* __restrict__ w,
                             typename E::Word* __restrict__ y, unsigned int cols, float eps)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    const typename E::Word* row = x + offset;
    Scaled squares = Squares::identity();
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        add_square(squares, E::load(row, i));
    }
    squares = block_broadcast(block_reduce<Squares>(squares));
    const Affine a = {pow2(-squares.e), 0.0f,
                      inverse_deviation(squares.sum / (float)cols, squares.e, eps)};
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        E::store(y + offset, i, RmsWrite::apply(E::load(row, i), a, E::load(w, i), 0.0f));
    }
}
// ANCHOR_END: two_pass

extern "C" __global__ void __launch_bounds__(THREADS)
    layer_norm_two_pass(const float* x, const float* w, const float* b, float* y, unsigned int rows,
                        unsigned int cols, float eps)
{
    layer_two_pass<F32>(x, w, b, y, cols, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    layer_norm_two_pass_bf16(const unsigned short* x, const unsigned short* w,
                             const unsigned short* b, unsigned short* y, unsigned int rows,
                             unsigned int cols, float eps)
{
    layer_two_pass<BF16>(x, w, b, y, cols, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_norm_two_pass(const float* x, const float* w, float* y, unsigned int rows,
                      unsigned int cols, float eps)
{
    rms_two_pass<F32>(x, w, y, cols, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_norm_two_pass_bf16(const unsigned short* x, const unsigned short* w, unsigned short* y,
                           unsigned int rows, unsigned int cols, float eps)
{
    rms_two_pass<BF16>(x, w, y, cols, eps);
}

// ANCHOR: moments
// Mean and variance in one pass (reduce-numerics' moments, in the units of 2^e): a state holds
// the count n, the scale e, the mean and m2, the sum of squared deviations from the mean, both
// scaled by 2^-e (m2 by 2^-2e). Two states combine as Chan, Golub and LeVeque showed, once both are
// in the larger scale:
//
//   n = na + nb,  d = mean_b - mean_a,  mean = mean_a + d nb / n,  m2 = m2_a + m2_b + d^2 na nb / n
//
// Every term of m2 is a square or a product of counts, so m2 never goes negative, and states of
// equal means (a constant row) combine with d = 0: a mean of exactly the row's value, a variance of
// exactly 0. The scaled means are below 4 in magnitude, so d cannot overflow either.
struct Moments {
    unsigned int n;
    int e;
    float mean;
    float m2;
};

struct MomentsOp {
    typedef Moments Value;
    __device__ static Moments identity()
    {
        Moments empty = {0u, -126, 0.0f, 0.0f};
        return empty;
    }
    __device__ static Moments combine(Moments a, Moments b)
    {
        if (a.n == 0) {
            return b;
        }
        if (b.n == 0) {
            return a;
        }
        if (a.e == b.e && a.n == b.n) {
            // The butterfly's usual case (thread_state gives a warp's lanes one scale): the general
            // formula below with fa = fb = 1 and share_b = 1/2, the same bits without the
            // rescaling and the tests around it.
            const float d = b.mean - a.mean;
            Moments merged = {a.n + b.n, a.e, fmaf(d, 0.5f, a.mean),
                              fmaf(d * d, (float)a.n * 0.5f, a.m2 + b.m2)};
            return merged;
        }
        // ANCHOR: solution combine two states with Chan's formula, after bringing both to the larger scale e = max(a.e, b.e) (a mean times pow2_down(a.e - e), an m2 times it twice): the mean moves by d = mean_b - mean_a times nb / n, and m2 gains d^2 na nb / n
        const int e = max(a.e, b.e);
        const float fa = pow2_down(a.e - e), fb = pow2_down(b.e - e);
        const float mean_a = a.mean * fa, mean_b = b.mean * fb;
        const unsigned int n = a.n + b.n;
        const float share_b =
            a.n == b.n ? 0.5f : (float)b.n / (float)n; // equal halves: no division
        const float d = mean_b - mean_a;
        const float m2 = fmaf(d * d, (float)a.n * share_b, fmaf(a.m2 * fa, fa, (b.m2 * fb) * fb));
        Moments merged = {n, e, fmaf(d, share_b, mean_a), m2};
        return merged;
        // ANCHOR_END: solution
        // ANCHOR: stub return a;
    }
};

__device__ __forceinline__ Moments shuffle_xor(Moments value, int lanes)
{
    Moments moved = {__shfl_xor_sync(0xffffffffu, value.n, lanes),
                     __shfl_xor_sync(0xffffffffu, value.e, lanes),
                     __shfl_xor_sync(0xffffffffu, value.mean, lanes),
                     __shfl_xor_sync(0xffffffffu, value.m2, lanes)};
    return moved;
}

// The largest magnitude of a thread's elements held in registers: `v.get(s)` for the first
// `count` slots (a slot past the row is never read); NaN is passed over, as fmaxf does.
template <class Slots> __device__ __forceinline__ float largest_of(const Slots& v, int count)
{
    float largest = 0.0f;
#pragma unroll
    for (int s = 0; s < Slots::N; s++) {
        if (s >= count) {
            break;
        }
        largest = fmaxf(largest, fabsf(v.get(s)));
    }
    return largest;
}

// The largest of the 32 lanes' `largest`, in every lane: a butterfly of shuffles, which every lane
// of the warp must reach.
__device__ __forceinline__ float warp_largest(float largest)
{
#pragma unroll
    for (int lanes = 16; lanes > 0; lanes >>= 1) {
        largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, lanes));
    }
    return largest;
}

// The statistics of the same registers in the units of 2^e (e at least the scale of their largest
// magnitude): the mean as the first element plus the mean deviation from it, then m2 from a second
// pass over the same registers: two passes that cost no memory, and no division per element.
template <class Slots>
__device__ __forceinline__ Moments moments_of(const Slots& v, int count, int e)
{
    if (count == 0) {
        return MomentsOp::identity();
    }
    const float g = pow2(-e), pivot = v.get(0) * g;
    float shifted = 0.0f;
#pragma unroll
    for (int s = 0; s < Slots::N; s++) {
        if (s >= count) {
            break;
        }
        shifted += fmaf(v.get(s), g, -pivot); // v g is exact: one rounding
    }
    const float mean = pivot + shifted / (float)count;
    float m2 = 0.0f;
#pragma unroll
    for (int s = 0; s < Slots::N; s++) {
        if (s >= count) {
            break;
        }
        const float d = fmaf(v.get(s), g, -mean);
        m2 = fmaf(d, d, m2);
    }
    Moments m = {(unsigned int)count, e, mean, m2};
    return m;
}

// The sum of the squares of the same registers, in the units of 2^e.
template <class Slots>
__device__ __forceinline__ Scaled squares_of(const Slots& v, int count, int e)
{
    const float g = pow2(-e);
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < Slots::N; s++) {
        if (s >= count) {
            break;
        }
        const float t = v.get(s) * g;
        sum = fmaf(t, t, sum);
    }
    Scaled squares = {e, sum};
    return squares;
}
// ANCHOR_END: moments

// ANCHOR: norms
// The two norms as the register steps use them: the state (Op), a thread's state of its registers
// (`of`), the row's Affine from the row's state, and the write.
struct Layer : LayerWrite {
    typedef MomentsOp Op;
    template <class Slots> __device__ static Moments of(const Slots& v, int count, int e)
    {
        return moments_of(v, count, e);
    }
    __device__ static Affine affine(Moments s, unsigned int cols, float eps)
    {
        Affine a = {pow2(-s.e), s.mean, inverse_deviation(s.m2 / (float)cols, s.e, eps)};
        return a;
    }
};
struct Rms : RmsWrite {
    typedef Squares Op;
    template <class Slots> __device__ static Scaled of(const Slots& v, int count, int e)
    {
        return squares_of(v, count, e);
    }
    __device__ static Affine affine(Scaled s, unsigned int cols, float eps)
    {
        Affine a = {pow2(-s.e), 0.0f, inverse_deviation(s.sum / (float)cols, s.e, eps)};
        return a;
    }
};

// The state of a lane whose every slot is the row's, at its warp's scale (every lane of the warp
// must call it).
template <class N, class Slots>
__device__ __forceinline__ typename N::Op::Value full_lane_state(const Slots& v)
{
    return N::of(v, Slots::N, scale_of(warp_largest(largest_of(v, Slots::N))));
}

// The state of a thread's first `count` slots (N::of), with the count written as a constant where
// every slot is the row's, so that the compiler drops the checks of `s < count`. Every lane of a
// warp takes the same scale, the warp's largest magnitude's: the lanes' states are then in the same
// units, and where they hold as many elements each (a warp of full lanes) row_reduce's butterfly
// combines them the short way (MomentsOp::combine: no rescaling, no division). With each lane at
// its own scale, every level of the butterfly rescaled both states, and the bf16 layer norm of rows
// of 4096 was bound by its instructions (ncu on an H100: 1138 a warp's quarter row against 748 for
// an RMS norm, the issue slots 80% busy); with the warp's scale it executes 7% fewer. Every lane of
// the warp must call it; the branch is the warp's as a whole (__all_sync), so its shuffles are too.
template <class N, class Slots>
__device__ __forceinline__ typename N::Op::Value thread_state(const Slots& v, int count)
{
    if (__all_sync(0xffffffffu, count == Slots::N)) {
        return full_lane_state<N>(v);
    }
    return N::of(v, count, scale_of(warp_largest(largest_of(v, count))));
}

// Lane 0 of each warp parks its warp's state `s` in shared memory; once every warp of the block has
// (a barrier), returns where the states of this warp's row begin (`warps` of them, a power of 2).
template <class Value>
__device__ __forceinline__ const Value* park_warp_states(Value s, unsigned int warps)
{
    __shared__ Value parts[THREADS / 32];
    const unsigned int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) {
        parts[warp] = s;
    }
    __syncthreads();
    return parts + (warp & ~(warps - 1));
}

// The statistics of a row held by `warps` consecutive warps (1, 2, 4 or 8) of the block, from
// each warp's state (the same in all its lanes), in every lane of them: every lane combines the
// row's parked states in pairs, then pairs of pairs. Where the row fills its warps, the two states
// of a pair hold as many elements, and MomentsOp::combine takes them without a division. Two
// barriers, which a warp per row (warps = 1) skips, as the whole block does.
template <class Op>
__device__ __forceinline__ typename Op::Value across_warps(typename Op::Value s, unsigned int warps)
{
    if (warps == 1) {
        return s;
    }
    const typename Op::Value* p = park_warp_states(s, warps);
    s = Op::combine(p[0], p[1]);
    if (warps >= 4) {
        s = Op::combine(s, Op::combine(p[2], p[3]));
    }
    if (warps == 8) {
        s = Op::combine(s, Op::combine(Op::combine(p[4], p[5]), Op::combine(p[6], p[7])));
    }
    __syncthreads(); // no warp parks again before every lane has read (were there a second call)
    return s;
}

// The same from each lane's state: within a warp, a butterfly of shuffles: at each distance the
// two lanes combine the same two states in the same order (the lower lane's first), so every lane
// ends with the same bits; then across_warps.
template <class Op>
__device__ __forceinline__ typename Op::Value row_reduce(typename Op::Value s, unsigned int warps)
{
    typedef typename Op::Value Value;
    const unsigned int lane = threadIdx.x % 32;
#pragma unroll
    for (int lanes = 16; lanes > 0; lanes >>= 1) {
        const Value other = shuffle_xor(s, lanes);
        const bool upper = (lane & lanes) != 0;
        s = Op::combine(upper ? other : s, upper ? s : other);
    }
    return across_warps<Op>(s, warps);
}
// ANCHOR_END: norms

// ANCHOR: one_pass
// Step 2, one pass: layer_norm_one_pass and rms_norm_one_pass.
//
// What it does: a block per row, as in step 1, but the row is read once. Each thread loads its
// elements of the row (slot s holds element s * THREADS + t, the same coalesced pattern) into
// SLOTS registers, takes their statistics from the registers (moments_of), and the block combines
// the threads' states with row_reduce: shuffles within each warp, shared memory across the eight.
// Then each thread writes its elements from the same registers.
//
// What changed from two passes: one read of the row instead of three (two for an RMS norm): the
// statistics need no second sweep, because Chan's formula combines partial means and variances
// exactly; and one reduction of a state instead of two of numbers. A row longer than the block's
// registers hold (THREADS * SLOTS = 4096 elements) is taken a chunk at a time, its states combined,
// and read again to be written.
//
// What it leaves slow: one block per row is the wrong size for short rows: a row of 1024 gives
// each of 256 threads four elements, four 4-byte loads in flight, and block-wide barriers and a
// combine of eight warps' states for them. And every load moves 4 bytes (2 for bf16).
//
// Launch: block THREADS, grid rows.
struct Strided {
    enum { N = SLOTS };
    float v[SLOTS];
    __device__ float get(int s) const { return v[s]; }
};

// Elements [0, len) of a chunk into the thread's slots; returns how many are the thread's.
template <class E>
__device__ __forceinline__ int load_strided(const typename E::Word* __restrict__ x,
                                            unsigned int len, Strided& v)
{
    int count = 0;
#pragma unroll
    for (int s = 0; s < SLOTS; s++) {
        const unsigned int i = s * blockDim.x + threadIdx.x;
        if (i >= len) {
            break;
        }
        v.v[s] = E::load(x, i);
        count++;
    }
    return count;
}

template <class E, class N>
__device__ __forceinline__ void
write_strided(const Strided& v, int count, const typename E::Word* __restrict__ w,
              const typename E::Word* __restrict__ b, typename E::Word* __restrict__ y, Affine a)
{
#pragma unroll
    for (int s = 0; s < SLOTS; s++) {
        if (s >= count) {
            break;
        }
        const unsigned int i = s * blockDim.x + threadIdx.x;
        E::store(y, i, N::apply(v.v[s], a, E::load(w, i), N::HAS_BIAS ? E::load(b, i) : 0.0f));
    }
}

template <class E, class N>
__device__ void one_pass(const typename E::Word* __restrict__ x,
                         const typename E::Word* __restrict__ w,
                         const typename E::Word* __restrict__ b, typename E::Word* __restrict__ y,
                         unsigned int cols, float eps)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    const unsigned int capacity = SLOTS * blockDim.x;
    Strided v;
    int count = 0;
    // ANCHOR: solution the row's Affine `a`, reading the row once: for each chunk of `capacity` elements (one, unless the row is longer), load the thread's slots (load_strided, which returns the count) and combine their state (thread_state<N>) into a running state (N::Op), then combine the block's states (row_reduce, over blockDim.x / 32 warps) and finish (N::affine)
    typename N::Op::Value state = N::Op::identity();
    for (unsigned int c = 0; c < cols; c += capacity) {
        count = load_strided<E>(x + offset + c, min(capacity, cols - c), v);
        state = N::Op::combine(state, thread_state<N>(v, count));
    }
    state = row_reduce<typename N::Op>(state, blockDim.x / 32);
    const Affine a = N::affine(state, cols, eps);
    // ANCHOR_END: solution
    // ANCHOR: stub const Affine a = {0.0f, 0.0f, 0.0f};
    if (cols <= capacity) {
        write_strided<E, N>(v, count, w, b, y + offset, a); // from the registers
        return;
    }
    for (unsigned int c = 0; c < cols; c += capacity) {
        count = load_strided<E>(x + offset + c, min(capacity, cols - c), v);
        write_strided<E, N>(v, count, w + c, N::HAS_BIAS ? b + c : b, y + offset + c, a);
    }
}
// ANCHOR_END: one_pass

extern "C" __global__ void __launch_bounds__(THREADS)
    layer_norm_one_pass(const float* x, const float* w, const float* b, float* y, unsigned int rows,
                        unsigned int cols, float eps)
{
    one_pass<F32, Layer>(x, w, b, y, cols, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    layer_norm_one_pass_bf16(const unsigned short* x, const unsigned short* w,
                             const unsigned short* b, unsigned short* y, unsigned int rows,
                             unsigned int cols, float eps)
{
    one_pass<BF16, Layer>(x, w, b, y, cols, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_norm_one_pass(const float* x, const float* w, float* y, unsigned int rows,
                      unsigned int cols, float eps)
{
    one_pass<F32, Rms>(x, w, 0, y, cols, eps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_norm_one_pass_bf16(const unsigned short* x, const unsigned short* w, unsigned short* y,
                           unsigned int rows, unsigned int cols, float eps)
{
    one_pass<BF16, Rms>(x, w, 0, y, cols, eps);
}

// ANCHOR: by_length
// Step 3, by length: layer_norm_by_length and rms_norm_by_length.
//
// What it does: a row belongs to `warps` consecutive warps of the block, as few as hold it in their
// registers: the launcher picks 1, 2, 4 or 8 (norms::warps_per_row), so a row of 1024 is a warp's
// (8 rows per block) and a row of 4096 four warps' (2 rows per block). Each lane keeps
// LANE_ELEMENTS of the row in 16-byte vectors (8 of f32, 4 of bf16): vector k of lane l is the
// row's vector k * lanes + l, so a warp's load instruction reads 512 consecutive bytes. The
// statistics and the write are step 2's, from the registers.
//
// What changed from one pass: the group that takes a row is sized by the row's length: a warp per
// short row needs no shared memory and no barrier (row_reduce skips them), and keeps eight 16-byte
// loads per lane in flight (four for bf16) where step 2 had four 4-byte ones; the loads and stores
// move 16 bytes. A lane issues all its loads before it uses any (load_vectors), and keeps them as
// loaded: an element is widened to f32 where it is used (Vectors::get), so a bf16 lane holds its
// 32 elements in 16 registers, and five blocks of bf16 rows share an SM where four would hold
// them widened.
// A row that does not start on a 16-byte boundary (odd lengths), and the tail of a row, are read
// one element at a time.
// Rows that fill every lane (cols = warps x 32 x LANE_ELEMENTS: 1024, 2048, 4096 or 8192, the
// widths of most models) in tensors that start on 16-byte boundaries have a kernel of their own:
// there every lane of a warp holds as many elements at the same scale, so a warp's merges move
// and combine only what differs between two lanes' states (full_warp_merge), the row's warps
// merge in pairs with no division, and no load or store checks its alignment. The bf16 layer
// norm's takes its statistics unscaled first (unscaled_full_lanes, below).
// The row's 16-byte loads and the output's 16-byte stores are marked as streaming (__ldcs and
// __stcs: ld.global.cs, st.global.cs, evict first), except a long row's first read of a chunk,
// which it reads again. Measured, not derived: on an H200 both marks together gain about four
// points of the copy where either alone lost a little (scripts/lab/norms/README.md). A guess at
// why: w and b, which every row reads again, stay in the L1 when the rows' bytes do not.
//
// What it leaves slow: rows longer than eight warps' registers (8192 elements) are read twice, a
// chunk at a time, by one block per row; and the weights and bias are read again for every row
// (from L1 or L2: w and b are a few KiB, shared by every row).
//
// Launch: block THREADS, grid ceil(rows / (THREADS / (32 warps))), warps 1, 2, 4 or 8; the kernel
// by the row's fit (norms::Step::plan): <norm>_by_length_full, <norm>_by_length or
// <norm>_by_length_chunks.
template <class E> struct Vectors {
    enum { N = LANE_ELEMENTS, VECTORS = LANE_ELEMENTS / E::PER_VEC };
    uint4 q[VECTORS]; // as loaded: element s is element s % PER_VEC of vector s / PER_VEC
    __device__ float get(int s) const { return E::element(q[s / E::PER_VEC], s % E::PER_VEC); }
};

__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<size_t>(p) & 15) == 0;
}

// Elements [0, len) of a chunk into this lane's vectors (`lanes` lanes share the chunk); returns
// how many slots are the lane's. `whole` says the chunk, the output, w and b all start on a
// 16-byte boundary. The vectors are kept as loaded, and an element is widened where it is used
// (Vectors::get): for f32 that is the register itself; for bf16 a shift or a mask each time, which
// holds a lane's 32 elements in 16 registers instead of 32, so that more rows share an SM.
// (`v` is a Vectors<E> here; scripts/lab/norms/bf16-packed-lanes.cu passes other holdings of its
// `q`.) With STREAM (every read but the first of a row read twice, and but unscaled_full_lanes'
// second read of a failing row, which is rare), the 16-byte loads are marked as streaming
// (ld.global.cs, __ldcs): evict first, from the L1 and the L2.
template <class E, bool STREAM = true, class Slots>
__device__ __forceinline__ int load_vectors(const typename E::Word* __restrict__ x,
                                            unsigned int len, unsigned int lane, unsigned int lanes,
                                            bool whole, Slots& v)
{
    uint4* q = v.q;
    int count = 0;
#pragma unroll
    for (int k = 0; k < Slots::VECTORS; k++) {
        const unsigned int vector = k * lanes + lane, first = vector * E::PER_VEC;
        // ANCHOR: solution vector k of the lane, elements [first, first + E::PER_VEC) of x, into q[k]: one 16-byte load (a uint4, the vector-th of the chunk; __ldcs where STREAM) where whole is true and the vector lies inside len, else E::gather(x, first, len)
        if (whole && first + E::PER_VEC <= len) {
            q[k] = STREAM ? __ldcs(reinterpret_cast<const uint4*>(x) + vector)
                          : reinterpret_cast<const uint4*>(x)[vector];
        } else {
            q[k] = E::gather(x, first, len);
        }
        // ANCHOR_END: solution
        // ANCHOR: stub q[k] = E::gather(x, first, 0);
        count += first < len ? min(len - first, (unsigned int)E::PER_VEC) : 0;
    }
    return count;
}

// The write of a chunk from a lane's elements: `v` holds them (v.get(s), Slots::N of them; a
// Vectors<E> here, other holdings in scripts/lab/norms/bf16-packed-lanes.cu). With STREAM, the
// 16-byte stores are marked as streaming (st.global.cs, __stcs): nothing reads y again. With FULL
// (the caller knows it), every vector of the lane is inside len and whole: no test, no other path.
template <class E, class N, bool STREAM = true, bool FULL = false, class Slots>
__device__ __forceinline__ void
write_vectors(const Slots& v, unsigned int len, unsigned int lane, unsigned int lanes, bool whole,
              const typename E::Word* __restrict__ w, const typename E::Word* __restrict__ b,
              typename E::Word* __restrict__ y, Affine a)
{
#pragma unroll
    for (int k = 0; k < Slots::N / E::PER_VEC; k++) {
        const unsigned int vector = k * lanes + lane, first = vector * E::PER_VEC;
        if (!FULL && first >= len) {
            continue;
        }
        if (FULL || (whole && first + E::PER_VEC <= len)) {
            const uint4 wq = reinterpret_cast<const uint4*>(w)[vector];
            const uint4 bq = N::HAS_BIAS ? reinterpret_cast<const uint4*>(b)[vector]
                                         : make_uint4(0u, 0u, 0u, 0u);
            float out[E::PER_VEC];
#pragma unroll
            for (int j = 0; j < E::PER_VEC; j++) {
                out[j] =
                    N::apply(v.get(k * E::PER_VEC + j), a, E::element(wq, j), E::element(bq, j));
            }
            if (STREAM) {
                __stcs(reinterpret_cast<uint4*>(y) + vector, E::pack(out));
            } else {
                reinterpret_cast<uint4*>(y)[vector] = E::pack(out);
            }
        } else {
#pragma unroll
            for (int j = 0; j < E::PER_VEC; j++) {
                if (first + j < len) {
                    const float bias = N::HAS_BIAS ? E::load(b, first + j) : 0.0f;
                    E::store(y, first + j,
                             N::apply(v.get(k * E::PER_VEC + j), a, E::load(w, first + j), bias));
                }
            }
        }
    }
}

// A warp's merge where every lane holds LANE_ELEMENTS of the row at the warp's scale: two lanes'
// states then differ only in mean and m2, and merge as
//
//   mean = (mean_a + mean_b) / 2,   m2 = (m2_a + m2_b) + d^2 n / 2,   d = mean_b - mean_a,
//
// in which every operation is commutative (d changes its sign between the two lanes, d^2 does
// not): both lanes get the same bits without ordering the pair (n is each state's count). Two
// shuffles and six arithmetic instructions a level, where row_reduce's butterfly, which must allow
// any two states, takes about 35 for a full warp (ncu on an H200 had the bf16 layer norm of rows
// of 4096 bound by its instructions). An RMS norm's sums at one scale simply add.
__device__ __forceinline__ Moments full_warp_merge(Moments s)
{
#pragma unroll
    for (int lanes = 16; lanes > 0; lanes >>= 1) {
        const float mean = __shfl_xor_sync(0xffffffffu, s.mean, lanes);
        const float m2 = __shfl_xor_sync(0xffffffffu, s.m2, lanes);
        const float d = mean - s.mean;
        s.m2 = fmaf(d * d, (float)s.n * 0.5f, s.m2 + m2);
        s.mean = (s.mean + mean) * 0.5f;
        s.n *= 2;
    }
    return s;
}
__device__ __forceinline__ Scaled full_warp_merge(Scaled s)
{
#pragma unroll
    for (int lanes = 16; lanes > 0; lanes >>= 1) {
        s.sum += __shfl_xor_sync(0xffffffffu, s.sum, lanes);
    }
    return s;
}

// Which rows a kernel of step 3 takes: rows that fill every lane of their warps, other rows the
// lanes hold, and rows longer than the lanes hold (a chunk at a time).
enum RowFit { FULL_LANES, IN_REGISTERS, IN_CHUNKS };

// A lane's place in step 3: `lanes` lanes a row (`warps` warps of 32: 1, 2, 4 or 8, so shifts and
// masks, not divisions), this lane's index among them, whether its row exists (the last block's
// spare warps take no row, but still meet the row's barriers where warps > 1), and the row's
// offset and length (0 past the last row).
struct LaneOfRow {
    unsigned int lanes, lane, len;
    bool live;
    size_t offset;
};
__device__ __forceinline__ LaneOfRow lane_of_row(unsigned int rows, unsigned int cols,
                                                 unsigned int warps)
{
    const unsigned int shift = 5 + __ffs(warps) - 1, lanes = 1u << shift;
    const size_t row = (size_t)blockIdx.x * (blockDim.x >> shift) + (threadIdx.x >> shift);
    const bool live = row < rows;
    LaneOfRow at = {lanes, threadIdx.x & (lanes - 1), live ? cols : 0, live,
                    (live ? row : 0) * cols};
    return at;
}

// STREAM is the chapter's (true): scripts/lab/norms/bf16-packed-lanes.cu turns it off to measure
// without it.
template <class E, class N, RowFit FIT, bool STREAM = true>
__device__ void by_length(const typename E::Word* __restrict__ x,
                          const typename E::Word* __restrict__ w,
                          const typename E::Word* __restrict__ b, typename E::Word* __restrict__ y,
                          unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    const LaneOfRow at = lane_of_row(rows, cols, warps);
    const unsigned int lanes = at.lanes, lane = at.lane;
    const bool live = at.live;
    const size_t offset = at.offset;
    Vectors<E> v;
    if constexpr (FIT != IN_CHUNKS) {
        // The row fits the lanes' registers (the launcher sees to it): read once, written from
        // the registers. Full rows come only where x, y, w and b start on 16-byte boundaries (the
        // launcher sees to that too), so that their kernel need not check: then every row does.
        const bool whole = FIT == FULL_LANES || (aligned16(x + offset) && aligned16(y + offset) &&
                                                 aligned16(w) && (!N::HAS_BIAS || aligned16(b)));
        const unsigned int len = live ? cols : 0;
        const int count = load_vectors<E, STREAM>(x + offset, len, lane, lanes, whole, v);
        typename N::Op::Value state;
        if constexpr (FIT == FULL_LANES) {
            // Every lane holds LANE_ELEMENTS of the row (a spare warp's lanes hold zeros).
            state = across_warps<typename N::Op>(full_warp_merge(full_lane_state<N>(v)), warps);
        } else {
            state = row_reduce<typename N::Op>(thread_state<N>(v, count), warps);
        }
        write_vectors<E, N, STREAM>(v, len, lane, lanes, whole, w, b, y + offset,
                                    N::affine(state, cols, eps));
    } else {
        // A longer row, a chunk of `capacity` elements at a time: its statistics, then its write.
        const unsigned int capacity = LANE_ELEMENTS * lanes;
        typename N::Op::Value state = N::Op::identity();
        for (unsigned int c = 0; c < cols; c += capacity) {
            const unsigned int len = live ? min(capacity, cols - c) : 0;
            const bool whole = aligned16(x + offset + c) && aligned16(y + offset + c) &&
                               aligned16(w + c) && (!N::HAS_BIAS || aligned16(b + c));
            const int count = load_vectors<E, false>(x + offset + c, len, lane, lanes, whole,
                                                     v); // read again below
            state = N::Op::combine(state, thread_state<N>(v, count));
        }
        state = row_reduce<typename N::Op>(state, warps);
        const Affine a = N::affine(state, cols, eps);
        for (unsigned int c = 0; c < cols; c += capacity) {
            const unsigned int len = live ? min(capacity, cols - c) : 0;
            const typename E::Word* bias = N::HAS_BIAS ? b + c : b;
            const bool whole = aligned16(x + offset + c) && aligned16(y + offset + c) &&
                               aligned16(w + c) && (!N::HAS_BIAS || aligned16(bias));
            load_vectors<E, STREAM>(x + offset + c, len, lane, lanes, whole, v);
            write_vectors<E, N, STREAM>(v, len, lane, lanes, whole, w + c, bias, y + offset + c, a);
        }
    }
}
// ANCHOR_END: by_length

// ANCHOR: unscaled_full_lanes
// The bf16 layer norm of rows that fill every lane: by_length's full lanes with the statistics
// taken unscaled first. The scale (step 2's) costs a sweep of the registers for the largest
// magnitude and a warp's butterfly of maxima before anything else can start, for the few rows
// whose squares would overflow or fall among the subnormals; ncu had the general kernel's bf16
// layer norm bound by its instructions on an H200, and the full-lanes kernel, which was not, still
// short of the copy (norms-ncu.txt). Here a lane takes its statistics at e = 0 in one
// sweep about its first element p: s1 = sum t and s2 = sum t^2, t = x - p, then mean = p + s1 / n
// and m2 = s2 - s1 s1 / n. As p is one of the lane's values, s2 <= (n + 1) m2: the subtraction
// costs at most a factor of 33 on f32's rounding (an outlier as a lane's first value), and a
// constant lane gives s1 = s2 = 0 exactly. The lanes merge as full_warp_merge does, the row's
// warps in pairs (merge_equal). A row that passes (unscaled_passes) is written at once, by a write
// that tests nothing (FULL), as (x - mean) f w + b; one that does not (an infinity or a NaN,
// squares past f32's largest value, a constant row, tiny values) is read again and taken by
// by_length's scaled path, so that what the kernel does with special values is step 2's. The
// verdict is the warp's where a row has one warp, and the block's where it has several
// (across_warps' barriers are the block's): a flag in shared memory, set after the parking
// barrier and read after the next. At 48 registers ptxas -v (nvcc 13.0, sm_90) reports 168 bytes
// of spill stores, which the SASS shows in the failing rows' path, not in the passing rows'.
// (Written inside by_length's full lanes, with one write for both paths, or with the unscaled
// sweep in a function of its own, about the same instructions measured slower on an H200:
// scripts/lab/norms/README.md.)
//
// MomentsOp::combine's path for equal counts at one scale, without the others' code: the merge of
// unscaled_full_lanes (below), whose warps' states all hold as many elements at e = 0.
__device__ __forceinline__ Moments merge_equal(Moments a, Moments b)
{
    const float d = b.mean - a.mean;
    Moments merged = {a.n + b.n, a.e, fmaf(d, 0.5f, a.mean),
                      fmaf(d * d, (float)a.n * 0.5f, a.m2 + b.m2)};
    return merged;
}

// Whether statistics taken unscaled can stand (unscaled_full_lanes): a finite mean, and an m2
// finite and at least cols x 2^-100 (a variance of 2^-100: deviations of that size have squares
// 2^26 above the smallest normal float).
__device__ __forceinline__ bool unscaled_passes(Moments s, unsigned int cols)
{
    return isfinite(s.mean) && s.m2 <= 3.0e38f && s.m2 >= (float)cols * 7.8886091e-31f; // 2^-100
}

// A lane's statistics at e = 0 in one sweep of its registers about its first element.
template <class Slots> __device__ __forceinline__ Moments unscaled_lane_moments(const Slots& v)
{
    const float p = v.get(0);
    float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
    for (int s = 0; s < Slots::N; s++) {
        const float t = v.get(s) - p;
        s1 += t;
        s2 = fmaf(t, t, s2);
    }
    const float shift = s1 * (1.0f / Slots::N); // N a power of two: exact
    Moments m = {(unsigned int)Slots::N, 0, p + shift, fmaxf(fmaf(-s1, shift, s2), 0.0f)};
    return m;
}

// A passing row's write: (x - mean) f w + b (LayerWrite's with g = 1).
struct UnscaledWrite {
    enum { HAS_BIAS = 1 };
    __device__ static float apply(float x, Affine a, float w, float b)
    {
        return fmaf((x - a.center) * a.factor, w, b);
    }
};

template <class E, bool STREAM = true>
__device__ void unscaled_full_lanes(const typename E::Word* x, const typename E::Word* w,
                                    const typename E::Word* b, typename E::Word* y,
                                    unsigned int rows, unsigned int cols, float eps,
                                    unsigned int warps)
{
    const LaneOfRow at = lane_of_row(rows, cols, warps);
    const unsigned int lanes = at.lanes, lane = at.lane, len = at.len;
    const bool live = at.live;
    const size_t offset = at.offset;
    Vectors<E> v;
    load_vectors<E, STREAM>(x + offset, len, lane, lanes, true, v);
    Moments m = full_warp_merge(unscaled_lane_moments(v));
    // The row's warps merged in pairs; the verdict: the warp's, or the block's (warps > 1).
    bool fails = live && !unscaled_passes(m, cols);
    if (warps > 1) {
        __shared__ int block_fails;
        if (threadIdx.x == 0) {
            block_fails = 0; // before park_warp_states' barrier; set after it, read after the next
        }
        const Moments* parked = park_warp_states(m, warps);
        m = merge_equal(parked[0], parked[1]);
        if (warps >= 4) {
            m = merge_equal(m, merge_equal(parked[2], parked[3]));
        }
        if (warps == 8) {
            m = merge_equal(m, merge_equal(merge_equal(parked[4], parked[5]),
                                           merge_equal(parked[6], parked[7])));
        }
        if (live && !unscaled_passes(m, cols)) {
            block_fails = 1;
        }
        __syncthreads(); // every parked state read, every verdict written
        fails = block_fails != 0;
    }
    if (fails) {
        load_vectors<E, false>(x + offset, len, lane, lanes, true, v);
        m = across_warps<MomentsOp>(full_warp_merge(full_lane_state<Layer>(v)), warps);
        write_vectors<E, Layer, STREAM>(v, len, lane, lanes, true, w, b, y + offset,
                                        Layer::affine(m, cols, eps));
        return;
    }
    if (!live) {
        return;
    }
    const Affine a = {1.0f, m.mean, inverse_deviation(m.m2 / (float)cols, 0, eps)};
    write_vectors<E, UnscaledWrite, STREAM, true>(v, cols, lane, lanes, true, w, b, y + offset, a);
}
// ANCHOR_END: unscaled_full_lanes

// The bf16 kernels ask for BF16_BLOCKS_PER_SM blocks of THREADS on an SM at once (at most 51
// registers a thread; ptxas gives 48). A bf16 lane holds 64 bytes of its row where an f32 lane
// holds 128, so more rows are needed to keep as many bytes in flight; held as loaded (16 registers
// for 32 elements), five blocks fit. Left to itself, ptxas (NVRTC 13.5, sm_90) gave the layer
// norm's 80 registers, three blocks per SM; at four, with the elements widened to f32 as they
// came, 64 registers: 87.7% of the copy at 8192 x 4096 where five blocks of the packed lanes make
// 90.7% (scripts/lab/norms/bf16-packed-lanes.cu; norms-bf16-tuning.txt).
#define BF16_BLOCKS_PER_SM 5

// The entry points: <norm>_by_length_full for rows that fill every lane, <norm>_by_length for other
// rows the lanes' registers hold (up to 8 warps x 32 lanes x LANE_ELEMENTS = 8192 elements),
// <norm>_by_length_chunks for longer ones. Three kernels, not one with every path: the chunks'
// loop would take registers from the register-resident path (ptxas spilled the bf16 layer norm's
// at five blocks an SM), and so would the general merges beside the full lanes' (58 to 174 bytes,
// scripts/lab/norms/bf16-packed-lanes.cu).
extern "C" __global__ void __launch_bounds__(THREADS)
    layer_norm_by_length_full(const float* x, const float* w, const float* b, float* y,
                              unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    by_length<F32, Layer, FULL_LANES>(x, w, b, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS, BF16_BLOCKS_PER_SM)
    layer_norm_by_length_full_bf16(const unsigned short* x, const unsigned short* w,
                                   const unsigned short* b, unsigned short* y, unsigned int rows,
                                   unsigned int cols, float eps, unsigned int warps)
{
    unscaled_full_lanes<BF16>(x, w, b, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_norm_by_length_full(const float* x, const float* w, float* y, unsigned int rows,
                            unsigned int cols, float eps, unsigned int warps)
{
    by_length<F32, Rms, FULL_LANES>(x, w, 0, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS, BF16_BLOCKS_PER_SM)
    rms_norm_by_length_full_bf16(const unsigned short* x, const unsigned short* w,
                                 unsigned short* y, unsigned int rows, unsigned int cols, float eps,
                                 unsigned int warps)
{
    by_length<BF16, Rms, FULL_LANES>(x, w, 0, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    layer_norm_by_length(const float* x, const float* w, const float* b, float* y,
                         unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    by_length<F32, Layer, IN_REGISTERS>(x, w, b, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS, BF16_BLOCKS_PER_SM)
    layer_norm_by_length_bf16(const unsigned short* x, const unsigned short* w,
                              const unsigned short* b, unsigned short* y, unsigned int rows,
                              unsigned int cols, float eps, unsigned int warps)
{
    by_length<BF16, Layer, IN_REGISTERS>(x, w, b, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_norm_by_length(const float* x, const float* w, float* y, unsigned int rows,
                       unsigned int cols, float eps, unsigned int warps)
{
    by_length<F32, Rms, IN_REGISTERS>(x, w, 0, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS, BF16_BLOCKS_PER_SM)
    rms_norm_by_length_bf16(const unsigned short* x, const unsigned short* w, unsigned short* y,
                            unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    by_length<BF16, Rms, IN_REGISTERS>(x, w, 0, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    layer_norm_by_length_chunks(const float* x, const float* w, const float* b, float* y,
                                unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    by_length<F32, Layer, IN_CHUNKS>(x, w, b, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS, BF16_BLOCKS_PER_SM)
    layer_norm_by_length_chunks_bf16(const unsigned short* x, const unsigned short* w,
                                     const unsigned short* b, unsigned short* y, unsigned int rows,
                                     unsigned int cols, float eps, unsigned int warps)
{
    by_length<BF16, Layer, IN_CHUNKS>(x, w, b, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS)
    rms_norm_by_length_chunks(const float* x, const float* w, float* y, unsigned int rows,
                              unsigned int cols, float eps, unsigned int warps)
{
    by_length<F32, Rms, IN_CHUNKS>(x, w, 0, y, rows, cols, eps, warps);
}
extern "C" __global__ void __launch_bounds__(THREADS, BF16_BLOCKS_PER_SM)
    rms_norm_by_length_chunks_bf16(const unsigned short* x, const unsigned short* w,
                                   unsigned short* y, unsigned int rows, unsigned int cols,
                                   float eps, unsigned int warps)
{
    by_length<BF16, Rms, IN_CHUNKS>(x, w, 0, y, rows, cols, eps, warps);
}
