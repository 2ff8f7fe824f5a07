// softmax: the softmax ladder, every step in one file.
//
// Every kernel here computes the softmax of each row of a row-major `rows x cols` matrix, as
// torch.softmax(x, dim=-1) does: y[i] = exp(x[i] - max) / sum_j exp(x[j] - max), the max and the
// sum taken over the row. Subtracting the max keeps every exponent at or below 0, so exp cannot
// overflow (logits of 1e4 are fine) and the largest term is 1.
//
// Two element types, one code: f32 rows, and bf16 rows (16-bit words holding bfloat16, read and
// written as bf16, computed in f32 inside). Each step is a template on the element (`F32`, `BF16`)
// and two entry points: `softmax_<step>` for f32, `softmax_<step>_bf16` for bf16.
//
// What the kernels do with special values is torch's: a NaN in a row makes the whole row NaN (the
// max is NaN); -inf entries (masked logits) come out 0; a row of only -inf is NaN everywhere
// (exp(-inf - -inf) is exp(NaN)); a row holding +inf is NaN everywhere (exp(inf - inf)).
//
// Offsets are 64-bit (`size_t`): a matrix may hold more than 2^32 elements; rows and cols are each
// below 2^31, which the launcher checks.
//
// The steps, each differing from the one before by one technique:
//   1. softmax_max, softmax_sum,     three passes, three kernels, a block per row each:
//      softmax_normalise             the max, the sum of exponentials, the normalising write
//   2. softmax_fused                 one kernel: the three passes inside one block per row
//   3. softmax_online                online softmax: the max and the sum in one sweep
//   4. softmax_warp_rows             a warp per row, 16-byte loads: short rows
//   5. softmax_split_partial,        several blocks per row and a second stage: long rows
//      softmax_split_normalise
//   6. softmax_on_chip_<G>x<V>       the row read once, held in registers by a warp or a block
//   7. softmax_cluster_<C>x<B>x<V>   a long row held by a cluster of C blocks (Hopper)
#include "bf16.cuh"
#include "block_reduce.cuh"

// The threads of a block of every kernel (the launcher uses this many).
#define THREADS 256

// ANCHOR: exp
// exp(x) for x <= 0 (and -inf, and NaN), which is all softmax ever exponentiates: x - max.
//
// Written out with fused multiply-adds rather than taken from expf, which compiles to the
// special-function unit's ex2.approx with steps in directed rounding: this form gives the same bits
// on every GPU and on the CPU simulator, within 2 ulp of exp, subnormal results included. It costs
// about 15 instructions an element, which a kernel moving 8 bytes per element can afford.
//
// x = j ln2 + r with j a whole number and |r| <= ln2 / 2 (ln2 in two parts, Cody and Waite, so
// j ln2 is exact), e^r by its Taylor series to r^7 (error below 2^-27 of the result), then 2^j by
// building the exponent's bits, in two factors so that results down to 2^-149 round only once.
__device__ __forceinline__ float softmax_exp(float x)
{
    x = x < -104.0f ? -104.0f : x;     // e^-104 rounds to 0; -inf lands here too, NaN does not
    const float shifter = 12582912.0f; // 1.5 * 2^23: adding it rounds to a whole number
    const float t = fmaf(x, 1.44269504f, shifter);
    const float j = t - shifter;                               // round(x / ln2)
    const int k = __float_as_int(t) - __float_as_int(shifter); // the same, as an integer
    float r = fmaf(j, -0.693145751953125f, x);                 // ln2's first 16 bits: exact
    r = fmaf(j, -1.42860677e-06f, r);                          // the rest of ln2
    float p = 1.98412698e-04f;                                 // 1 / 7!
    p = fmaf(p, r, 1.38888889e-03f);                           // 1 / 6!
    p = fmaf(p, r, 8.33333333e-03f);
    p = fmaf(p, r, 4.16666667e-02f);
    p = fmaf(p, r, 1.66666667e-01f);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    const float two_to_k_plus_64 = __int_as_float((k + 127 + 64) << 23); // k >= -150: a normal
    return (p * two_to_k_plus_64) * 5.42101086e-20f;                     // times 2^-64
}
// ANCHOR_END: exp

// ANCHOR: sfu_exp
// exp(x) for bf16 rows (x <= 0, -inf, NaN), by the special-function unit: 2^(x log2 e), three
// instructions where softmax_exp takes fifteen. ex2.approx.ftz is one instruction but flushes
// results below 2^-126 to zero (the form without .ftz adds a test and a rescale for them), so the
// exponent is shifted up by 64 first and the result scaled back by 2^-64 after: results down to
// 2^-149 come out of the multiply, rounded once, as softmax_exp's do. The exponent's rounding
// (x log2 e + 64, to 2^-18) and ex2's own error (2 ulp) leave the result within about 2^-18 of
// exp(x), far inside bf16's 8 bits: a bf16 output moves only where the exact value lies that close
// to a rounding midpoint, and then may differ from GPU to GPU and from the simulator's (2^x
// rounded from f64), which the tests' tolerance for bf16 allows. f32 rows keep softmax_exp's bits.
__device__ __forceinline__ float sfu_exp(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(fmaf(x, 1.44269504088896341f, 64.0f)));
    return y * 5.42101086e-20f; // 2^-64
}
// ANCHOR_END: sfu_exp

// ANCHOR: elements
// The element types. `Word` is what memory holds; values are f32 when computed with. A 16-byte
// vector (uint4) holds PER_VEC elements, PER_WORD to a 32-bit word; `element(q, j)` is the j-th as
// f32 (j a constant once loops unroll), `bits` an element's bits as loaded, and minus_infinity() a
// word of -inf. `exp` is the element's exp of x - max: softmax_exp for f32 rows, sfu_exp for bf16
// rows. KEEPS_EXP says whether an element's slot in a vector has room for its f32 exp (`keep`).
__device__ __forceinline__ unsigned int word_of(uint4 q, int i)
{
    return i == 0 ? q.x : i == 1 ? q.y : i == 2 ? q.z : q.w;
}

struct F32 {
    typedef float Word;
    enum { PER_VEC = 4, PER_WORD = 1, KEEPS_EXP = 1 };
    __device__ static unsigned int minus_infinity() { return 0xff800000u; }
    __device__ static float exp(float x) { return softmax_exp(x); }
    __device__ static float load(const Word* p, size_t i) { return p[i]; }
    __device__ static unsigned int bits(const Word* p, size_t i) { return __float_as_uint(p[i]); }
    __device__ static void store(Word* p, size_t i, float y) { p[i] = y; }
    __device__ static float element(uint4 q, int j) { return __uint_as_float(word_of(q, j)); }
    __device__ static void keep(uint4& q, int j, float e)
    {
        const unsigned int w = __float_as_uint(e);
        q = make_uint4(j == 0 ? w : q.x, j == 1 ? w : q.y, j == 2 ? w : q.z, j == 3 ? w : q.w);
    }
    __device__ static void unpack(uint4 q, float* x)
    {
        x[0] = __uint_as_float(q.x), x[1] = __uint_as_float(q.y);
        x[2] = __uint_as_float(q.z), x[3] = __uint_as_float(q.w);
    }
    __device__ static uint4 pack(const float* y)
    {
        return make_uint4(__float_as_uint(y[0]), __float_as_uint(y[1]), __float_as_uint(y[2]),
                          __float_as_uint(y[3]));
    }
};

// bfloat16: widened by a shift or a mask (the top half of an f32), rounded to nearest even by one
// conversion instruction a pair (float2_to_bf16x2_cvt; float_to_bf16_cvt for one; bf16.cuh). Its
// 16 bits have no room for an f32 exp.
struct BF16 {
    typedef unsigned short Word;
    enum { PER_VEC = 8, PER_WORD = 2, KEEPS_EXP = 0 };
    __device__ static unsigned int minus_infinity() { return 0xff80ff80u; }
    __device__ static float exp(float x) { return sfu_exp(x); }
    __device__ static float load(const Word* p, size_t i) { return bf16_to_float(p[i]); }
    __device__ static unsigned int bits(const Word* p, size_t i) { return p[i]; }
    __device__ static void store(Word* p, size_t i, float y) { p[i] = (Word)float_to_bf16_cvt(y); }
    // Written as volatile asm so that each use widens again: left to itself, the compiler keeps
    // the widened f32 of every element from the max's sweep to the write, in the registers that
    // holding the row as bf16 saves (and spills the rest).
    __device__ static float element(uint4 q, int j)
    {
        const unsigned int w = word_of(q, j / 2);
        unsigned int widened;
        if (j % 2 == 0) {
            asm volatile("shl.b32 %0, %1, 16;" : "=r"(widened) : "r"(w));
        } else {
            asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(widened) : "r"(w));
        }
        return __uint_as_float(widened);
    }
    __device__ static void keep(uint4&, int, float) {}
    __device__ static void unpack(uint4 q, float* x)
    {
        const unsigned int w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            x[2 * i] = bf16_to_float(w[i] & 0xffffu), x[2 * i + 1] = bf16_to_float(w[i] >> 16);
        }
    }
    __device__ static uint4 pack(const float* y)
    {
        return make_uint4(float2_to_bf16x2_cvt(y[0], y[1]), float2_to_bf16x2_cvt(y[2], y[3]),
                          float2_to_bf16x2_cvt(y[4], y[5]), float2_to_bf16x2_cvt(y[6], y[7]));
    }
};
// ANCHOR_END: elements

// A value every thread of the block gets: thread 0's `value`. Two barriers: the first makes the
// write visible, the second keeps the slot from being overwritten by a next call before everyone
// has read it.
__device__ __forceinline__ float block_broadcast(float value)
{
    __shared__ float slot;
    if (threadIdx.x == 0) {
        slot = value;
    }
    __syncthreads();
    value = slot;
    __syncthreads();
    return value;
}

// ANCHOR: three_pass
// Step 1, three passes: softmax_max, softmax_sum, softmax_normalise.
//
// What it does: three kernels, one after the other, each with a block of THREADS threads per row
// walking the row with a block-stride loop (thread t takes elements t, t + THREADS, ...: a warp
// reads 32 consecutive elements, coalesced). The first writes each row's max, with reduce-shuffle's
// block reduction; the second reads it back and writes the sum of exp(x - max); the third reads
// both and writes y = exp(x - max) / sum.
//
// What it leaves slow: the row crosses DRAM three times on the way in (3 reads and 1 write of every
// element, where a softmax needs 1 and 1), and three launches wait for each other.
//
// Launch (each kernel): block THREADS, grid rows. The scratch: rows floats of max, rows of sums.
template <class E>
__device__ void pass_max(const typename E::Word* __restrict__ in, float* __restrict__ row_max,
                         unsigned int cols)
{
    const typename E::Word* x = in + (size_t)blockIdx.x * cols;
    float m = Max<float>::identity();
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        m = Max<float>::combine(m, E::load(x, i));
    }
    m = block_reduce<Max<float>>(m);
    if (threadIdx.x == 0) {
        row_max[blockIdx.x] = m;
    }
}

template <class E>
__device__ void pass_sum(const typename E::Word* __restrict__ in, const float* __restrict__ row_max,
                         float* __restrict__ row_sum, unsigned int cols)
{
    const typename E::Word* x = in + (size_t)blockIdx.x * cols;
    const float m = row_max[blockIdx.x];
    float s = 0.0f;
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        s += E::exp(E::load(x, i) - m);
    }
    s = block_reduce<Sum<float>>(s);
    if (threadIdx.x == 0) {
        row_sum[blockIdx.x] = s;
    }
}

template <class E>
__device__ void pass_normalise(const typename E::Word* __restrict__ in,
                               const float* __restrict__ row_max, const float* __restrict__ row_sum,
                               typename E::Word* __restrict__ out, unsigned int cols)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    const float m = row_max[blockIdx.x], inverse = 1.0f / row_sum[blockIdx.x];
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        E::store(out + offset, i, E::exp(E::load(in + offset, i) - m) * inverse);
    }
}
// ANCHOR_END: three_pass

extern "C" __global__ void softmax_max(const float* in, float* row_max, unsigned int rows,
                                       unsigned int cols)
{
    pass_max<F32>(in, row_max, cols);
}
extern "C" __global__ void softmax_sum(const float* in, const float* row_max, float* row_sum,
                                       unsigned int rows, unsigned int cols)
{
    pass_sum<F32>(in, row_max, row_sum, cols);
}
extern "C" __global__ void softmax_normalise(const float* in, const float* row_max,
                                             const float* row_sum, float* out, unsigned int rows,
                                             unsigned int cols)
{
    pass_normalise<F32>(in, row_max, row_sum, out, cols);
}
extern "C" __global__ void softmax_max_bf16(const unsigned short* in, float* row_max,
                                            unsigned int rows, unsigned int cols)
{
    pass_max<BF16>(in, row_max, cols);
}
extern "C" __global__ void softmax_sum_bf16(const unsigned short* in, const float* row_max,
                                            float* row_sum, unsigned int rows, unsigned int cols)
{
    pass_sum<BF16>(in, row_max, row_sum, cols);
}
extern "C" __global__ void softmax_normalise_bf16(const unsigned short* in, const float* row_max,
                                                  const float* row_sum, unsigned short* out,
                                                  unsigned int rows, unsigned int cols)
{
    pass_normalise<BF16>(in, row_max, row_sum, out, cols);
}

// ANCHOR: fused
// Step 2, softmax_fused: the three passes in one kernel.
//
// What it does: one block per row, as in step 1, but one kernel: the block finds the row's max (a
// block reduction, then a broadcast through shared memory), sweeps the row again for the sum of
// exp(x - max), and a third time to write y.
//
// What changed from three passes: one launch instead of three, and nothing goes through global
// memory between the passes: the max and the sum stay on the chip.
//
// What it leaves slow: the row is still swept three times. A row of 2^14 f32 is 64 KiB, and the
// 2 x 132 blocks in flight on an H100 hold 17 MiB of rows: more than a row's second and third
// sweeps can count on finding in L2 while the other blocks stream theirs, so most of those sweeps
// come from DRAM again.
//
// Launch: block THREADS, grid rows.
template <class E>
__device__ void fused(const typename E::Word* __restrict__ in, typename E::Word* __restrict__ out,
                      unsigned int cols)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    const typename E::Word* x = in + offset;
    float m = Max<float>::identity();
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        m = Max<float>::combine(m, E::load(x, i));
    }
    m = block_broadcast(block_reduce<Max<float>>(m));
    // ANCHOR: solution the sum of exp(x - m) over the row: each thread its elements (i = threadIdx.x, threadIdx.x + blockDim.x, ...), then a block reduction (block_reduce<Sum<float> >) broadcast to every thread (block_broadcast)
    float s = 0.0f;
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        s += E::exp(E::load(x, i) - m);
    }
    s = block_broadcast(block_reduce<Sum<float>>(s));
    // ANCHOR_END: solution
    // ANCHOR: stub float s = 0.0f;
    const float inverse = 1.0f / s;
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        E::store(out + offset, i, E::exp(E::load(x, i) - m) * inverse);
    }
}
// ANCHOR_END: fused

extern "C" __global__ void softmax_fused(const float* in, float* out, unsigned int rows,
                                         unsigned int cols)
{
    fused<F32>(in, out, cols);
}
extern "C" __global__ void softmax_fused_bf16(const unsigned short* in, unsigned short* out,
                                              unsigned int rows, unsigned int cols)
{
    fused<BF16>(in, out, cols);
}

// ANCHOR: online
// The state of online softmax (Milakov and Gimelshein, 2018): the largest element seen so far, m,
// and the sum of exp(x - m) over the elements seen so far, s. When an element larger than m comes,
// the sum so far is rescaled to the new max: s * exp(m - x), plus exp(x - x) = 1 for the element.
struct Online {
    float m, s;
};

// One element into the running state.
__device__ __forceinline__ void online_add(Online& acc, float x)
{
    // ANCHOR: solution if x is larger than acc.m, rescale acc.s to x (times exp(acc.m - x)), add exp(0) = 1 and make x the max; else add exp(x - acc.m) (1 where x equals acc.m, which also covers -inf twice: exp(-inf - -inf) is NaN)
    if (x > acc.m) {
        acc.s = acc.s * softmax_exp(acc.m - x) + 1.0f;
        acc.m = x;
    } else {
        acc.s += x == acc.m ? 1.0f : softmax_exp(x - acc.m);
    }
    // ANCHOR_END: solution
}

// Two states into one (the block reductions' operation, block_reduce.cuh's form): the larger max,
// and each sum rescaled to it. A sum already at the max is not rescaled (exp(0) = 1, and it keeps
// two -inf maxima from making exp(-inf - -inf), a NaN). A NaN max wins, as in Max.
struct OnlineOp {
    typedef Online Value;
    __device__ static Online identity()
    {
        Online empty = {Max<float>::identity(), 0.0f};
        return empty;
    }
    __device__ static float rescale(float part_max, float m)
    {
        return part_max == m ? 1.0f : softmax_exp(part_max - m);
    }
    __device__ static Online combine(Online a, Online b)
    {
        const float m = Max<float>::combine(a.m, b.m);
        Online merged = {m, a.s * rescale(a.m, m) + b.s * rescale(b.m, m)};
        return merged;
    }
};

// The warp reductions move both fields.
__device__ __forceinline__ Online shuffle_down(Online value, int offset)
{
    Online moved = {__shfl_down_sync(0xffffffffu, value.m, offset),
                    __shfl_down_sync(0xffffffffu, value.s, offset)};
    return moved;
}

// What the normalising write multiplies exp(x - m) by: 1 / s. A row holding +inf has m = +inf, and
// its sum is NaN in the three passes (exp(inf - inf)); online, the +inf entries count 1 each, so
// the NaN is put back here: the same row gives the same answer in every step, as in torch.
__device__ __forceinline__ float inverse_sum(Online total)
{
    return total.m == Limits<float>::highest() ? __int_as_float(0x7fc00000) : 1.0f / total.s;
}
// ANCHOR_END: online

// The block's value of thread 0, for every thread, through shared memory: the first barrier makes
// the write visible, the second keeps the slot until everyone has read it.
__device__ __forceinline__ Online block_broadcast(Online value)
{
    __shared__ Online slot;
    if (threadIdx.x == 0) {
        slot = value;
    }
    __syncthreads();
    value = slot;
    __syncthreads();
    return value;
}

// ANCHOR: online_kernel
// Step 3, softmax_online: the max and the sum in one sweep.
//
// What it does: one block per row; each thread keeps an online state (m, s) over its elements, the
// block merges the states with a block reduction of OnlineOp, and a second sweep writes
// y = exp(x - m) / s.
//
// What changed from fused: the first two sweeps are one: 2 reads and 1 write of the row instead of
// 3 and 1. It costs a rescale (one more exp) each time an element beats its thread's max, which
// after the first few elements of a thread is rare.
//
// What it leaves slow: one block per row is the wrong size at both ends. A short row (512
// elements) leaves most of the block's 256 threads with one or two elements and pays two block
// reductions for them; a long row (2^16) gives the GPU only `rows` blocks (768 rows: less than one
// wave of 1,056 blocks of 256 on 132 SMs), each sweeping 256 KiB. And each thread loads 4 bytes at
// a time.
//
// Launch: block THREADS, grid rows.
template <class E>
__device__ void online(const typename E::Word* __restrict__ in, typename E::Word* __restrict__ out,
                       unsigned int cols)
{
    const size_t offset = (size_t)blockIdx.x * cols;
    const typename E::Word* x = in + offset;
    Online acc = OnlineOp::identity();
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        online_add(acc, E::load(x, i));
    }
    acc = block_broadcast(block_reduce<OnlineOp>(acc));
    const float inverse = inverse_sum(acc);
    for (unsigned int i = threadIdx.x; i < cols; i += blockDim.x) {
        E::store(out + offset, i, E::exp(E::load(x, i) - acc.m) * inverse);
    }
}
// ANCHOR_END: online_kernel

extern "C" __global__ void softmax_online(const float* in, float* out, unsigned int rows,
                                          unsigned int cols)
{
    online<F32>(in, out, cols);
}
extern "C" __global__ void softmax_online_bf16(const unsigned short* in, unsigned short* out,
                                               unsigned int rows, unsigned int cols)
{
    online<BF16>(in, out, cols);
}

// ANCHOR: spans
// A span of a row, x[0, len), shared by `threads` cooperating threads (a warp, or a block), with
// 16-byte loads (uint4: 4 f32 or 8 bf16) where the span starts on a 16-byte boundary, and the
// elements after the last whole vector one by one. A span that does not start on a boundary (a row
// of an odd length starts wherever the one before it ended) is read one element at a time, which
// is correct and slower. Four vectors per thread are in flight per iteration (the unrolled loop's
// loads do not depend on the state).
__device__ __forceinline__ bool aligned16(const void* p)
{
    return (reinterpret_cast<size_t>(p) & 15) == 0;
}

template <class E>
__device__ __forceinline__ Online online_span(const typename E::Word* __restrict__ x,
                                              unsigned int len, unsigned int thread,
                                              unsigned int threads)
{
    Online acc = OnlineOp::identity();
    unsigned int done = 0;
    if (aligned16(x)) {
        const uint4* __restrict__ v = reinterpret_cast<const uint4*>(x);
        const unsigned int vectors = len / E::PER_VEC;
#pragma unroll 4
        for (unsigned int k = thread; k < vectors; k += threads) {
            float f[E::PER_VEC];
            E::unpack(v[k], f);
#pragma unroll
            for (int j = 0; j < E::PER_VEC; j++) {
                online_add(acc, f[j]);
            }
        }
        done = vectors * E::PER_VEC;
    }
    for (unsigned int i = done + thread; i < len; i += threads) {
        online_add(acc, E::load(x, i));
    }
    return acc;
}

// Writes y = exp(x - m) * inverse over the span, 16 bytes at a time where both x and y start on a
// boundary.
template <class E>
__device__ __forceinline__ void
write_span(const typename E::Word* __restrict__ x, typename E::Word* __restrict__ y,
           unsigned int len, unsigned int thread, unsigned int threads, float m, float inverse)
{
    unsigned int done = 0;
    if (aligned16(x) && aligned16(y)) {
        const uint4* __restrict__ v = reinterpret_cast<const uint4*>(x);
        uint4* __restrict__ w = reinterpret_cast<uint4*>(y);
        const unsigned int vectors = len / E::PER_VEC;
#pragma unroll 4
        for (unsigned int k = thread; k < vectors; k += threads) {
            float f[E::PER_VEC];
            E::unpack(v[k], f);
#pragma unroll
            for (int j = 0; j < E::PER_VEC; j++) {
                f[j] = E::exp(f[j] - m) * inverse;
            }
            w[k] = E::pack(f);
        }
        done = vectors * E::PER_VEC;
    }
    for (unsigned int i = done + thread; i < len; i += threads) {
        E::store(y, i, E::exp(E::load(x, i) - m) * inverse);
    }
}
// ANCHOR_END: spans

// ANCHOR: warp_rows
// Step 4, softmax_warp_rows: a warp per row, 16-byte loads (short rows).
//
// What it does: each warp of the block takes a row (THREADS / 32 = 8 rows per block), keeps an
// online state per lane over its share of the row read 16 bytes at a time (online_span), and the
// lanes merge their states with shuffles alone: a butterfly (__shfl_xor_sync) leaves every lane
// with the row's (m, s), so there is no shared memory and no barrier. Then the lanes write the row.
//
// What changed from online: a warp instead of a block per row, so a row of 512 f32 keeps every lane
// busy with 16 elements and needs no __syncthreads at all; and 16-byte loads and stores.
//
// What it leaves slow: long rows. A row of 2^16 elements is 2,048 elements per lane, and 768 such
// rows are 768 warps: 96 blocks, on a GPU that holds 1,056 blocks of 256 threads at once.
//
// Launch: block THREADS, grid ceil(rows / (THREADS / 32)).
template <class E>
__device__ void warp_rows(const typename E::Word* __restrict__ in,
                          typename E::Word* __restrict__ out, unsigned int rows, unsigned int cols)
{
    const unsigned int lane = threadIdx.x % 32;
    const size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) {
        return; // the whole warp leaves: there is no barrier below
    }
    const size_t offset = row * cols;
    Online acc = online_span<E>(in + offset, cols, lane, 32);
    // ANCHOR: solution merge the 32 lanes' states so that every lane holds the row's: a butterfly, combining (OnlineOp::combine) each lane's state with the one of the lane offset apart (__shfl_xor_sync on both fields) for offsets 16, 8, 4, 2, 1
#pragma unroll
    for (int lanes = 16; lanes > 0; lanes >>= 1) {
        Online other = {__shfl_xor_sync(0xffffffffu, acc.m, lanes),
                        __shfl_xor_sync(0xffffffffu, acc.s, lanes)};
        acc = OnlineOp::combine(acc, other);
    }
    // ANCHOR_END: solution
    write_span<E>(in + offset, out + offset, cols, lane, 32, acc.m, inverse_sum(acc));
}
// ANCHOR_END: warp_rows

extern "C" __global__ void softmax_warp_rows(const float* in, float* out, unsigned int rows,
                                             unsigned int cols)
{
    warp_rows<F32>(in, out, rows, cols);
}
extern "C" __global__ void softmax_warp_rows_bf16(const unsigned short* in, unsigned short* out,
                                                  unsigned int rows, unsigned int cols)
{
    warp_rows<BF16>(in, out, rows, cols);
}

// ANCHOR: split
// Step 5, softmax_split_partial and softmax_split_normalise: several blocks per row (long rows).
//
// What it does: each row is cut into `parts` chunks of `chunk` elements (a multiple of 8, so every
// chunk of a row that starts on a 16-byte boundary starts on one too), one block per chunk. The
// first kernel writes each chunk's online state (m, s) to `partial` (2 floats per chunk); the
// second kernel's block for the same chunk merges its row's `parts` states (a few floats, from L2),
// and writes its chunk: y = exp(x - m) / s. The chunk it reads again was read by the first kernel a
// moment before; with chunks of at most 64 KiB, part of it may still be in L2.
//
// What changed from warp rows: the work of a row is spread over blocks, so 768 rows of 2^16 make
// 768 x parts blocks and fill the GPU; a second stage (a second launch) merges the chunks' states,
// as reduce-multi-level's passes do.
//
// What it leaves slow: two reads of the row from DRAM where it does not stay in L2 (the ideal is
// one), and two launches.
//
// Launch (both kernels): block THREADS, grid rows * parts, block b taking chunk b % parts of row
// b / parts. The scratch: rows * parts * 2 floats.
template <class E>
__device__ void split_partial(const typename E::Word* __restrict__ in, float* __restrict__ partial,
                              unsigned int cols, unsigned int parts, unsigned int chunk)
{
    const size_t row = blockIdx.x / parts;
    const unsigned int begin = (blockIdx.x % parts) * chunk;
    const unsigned int len = cols - begin < chunk ? cols - begin : chunk;
    Online acc = online_span<E>(in + row * cols + begin, len, threadIdx.x, blockDim.x);
    acc = block_reduce<OnlineOp>(acc);
    if (threadIdx.x == 0) {
        partial[2 * (size_t)blockIdx.x] = acc.m;
        partial[2 * (size_t)blockIdx.x + 1] = acc.s;
    }
}

template <class E>
__device__ void split_normalise(const typename E::Word* __restrict__ in,
                                const float* __restrict__ partial,
                                typename E::Word* __restrict__ out, unsigned int cols,
                                unsigned int parts, unsigned int chunk)
{
    const size_t row = blockIdx.x / parts;
    const unsigned int begin = (blockIdx.x % parts) * chunk;
    const unsigned int len = cols - begin < chunk ? cols - begin : chunk;
    // ANCHOR: solution merge the row's parts states (partial[2 * (row * parts + p)] and the float after it, p = threadIdx.x, threadIdx.x + blockDim.x, ...) with OnlineOp::combine, then a block reduction of OnlineOp broadcast to every thread (block_broadcast)
    Online acc = OnlineOp::identity();
    for (unsigned int p = threadIdx.x; p < parts; p += blockDim.x) {
        const size_t at = 2 * (row * parts + p);
        Online part = {partial[at], partial[at + 1]};
        acc = OnlineOp::combine(acc, part);
    }
    acc = block_broadcast(block_reduce<OnlineOp>(acc));
    // ANCHOR_END: solution
    // ANCHOR: stub Online acc = OnlineOp::identity();
    const size_t offset = row * cols + begin;
    write_span<E>(in + offset, out + offset, len, threadIdx.x, blockDim.x, acc.m, inverse_sum(acc));
}
// ANCHOR_END: split

extern "C" __global__ void softmax_split_partial(const float* in, float* partial, unsigned int rows,
                                                 unsigned int cols, unsigned int parts,
                                                 unsigned int chunk)
{
    split_partial<F32>(in, partial, cols, parts, chunk);
}
extern "C" __global__ void softmax_split_normalise(const float* in, const float* partial,
                                                   float* out, unsigned int rows, unsigned int cols,
                                                   unsigned int parts, unsigned int chunk)
{
    split_normalise<F32>(in, partial, out, cols, parts, chunk);
}
extern "C" __global__ void softmax_split_partial_bf16(const unsigned short* in, float* partial,
                                                      unsigned int rows, unsigned int cols,
                                                      unsigned int parts, unsigned int chunk)
{
    split_partial<BF16>(in, partial, cols, parts, chunk);
}
extern "C" __global__ void softmax_split_normalise_bf16(const unsigned short* in,
                                                        const float* partial, unsigned short* out,
                                                        unsigned int rows, unsigned int cols,
                                                        unsigned int parts, unsigned int chunk)
{
    split_normalise<BF16>(in, partial, out, cols, parts, chunk);
}

// ANCHOR: group_reduce
// The group's result of `Op` over every thread's `value`, for every thread of the group: a
// butterfly over the group's lanes of each warp (all 32, or the 16 of a half-warp group), then,
// where a group has several warps, the warps' results through shared memory (slot w for warp w of
// the block). The barrier is the group's own (bar.sync with an id per group and the group's
// thread count), not the block's: the other groups of the block do not wait for this one. Every
// group of a block has GROUP threads, so every thread reaches the barriers or none does.
template <int GROUP> __device__ __forceinline__ void group_barrier()
{
    asm volatile("bar.sync %0, %1;" ::"r"(1 + threadIdx.x / GROUP), "n"(GROUP) : "memory");
}

template <class Op, int GROUP> __device__ __forceinline__ float group_reduce(float value)
{
    __shared__ float slots[32];
#pragma unroll
    for (int lanes = (GROUP < 32 ? GROUP : 32) / 2; lanes > 0; lanes >>= 1) {
        value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, lanes));
    }
    if (GROUP > 32) {
        constexpr int WARPS = GROUP > 32 ? GROUP / 32 : 1;
        const unsigned int warp = threadIdx.x / 32, first = warp / WARPS * WARPS;
        if (threadIdx.x % 32 == 0) {
            slots[warp] = value;
        }
        group_barrier<GROUP>();
        value = slots[first];
#pragma unroll
        for (int w = 1; w < WARPS; w++) {
            value = Op::combine(value, slots[first + w]);
        }
        group_barrier<GROUP>();
    }
    return value;
}
// ANCHOR_END: group_reduce

// ANCHOR: max_nan
// The larger of two floats, NaN if either is one, as Max<float> (block_reduce.cuh) but in one
// instruction from sm_80 on (max.NaN.f32) where Max<float>::combine is a compare, a NaN test and a
// select: steps 6 and 7 take it once an element. (max.NaN takes +0 as the larger of -0 and +0;
// either is the same shift for softmax.)
struct MaxNaN {
    __device__ static float identity() { return Limits<float>::lowest(); } // -inf
    __device__ static float combine(float a, float b)
    {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        float larger;
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(larger) : "f"(a), "f"(b));
        return larger;
#else
        return Max<float>::combine(a, b);
#endif
    }
};
// ANCHOR_END: max_nan

// ANCHOR: row_share
// A thread's share of a row that a group of GROUP threads holds in registers, VALUES elements a
// thread, kept as loaded: q[k] is the thread's k-th 16-byte vector, and slot j of the share is
// element j % PER_VEC of q[j / PER_VEC], widened to f32 where it is used (get). For f32 that is the
// register itself; bf16 slots are two to a 32-bit word, so a thread holds 64 bf16 elements in the
// registers of 32 f32 ones.
// The row comes 16 bytes at a time where it allows (thread t takes vectors t, t + GROUP,
// t + 2 GROUP, ...: consecutive threads, consecutive vectors), else one element at a time
// (elements t, t + GROUP, ...): slot j holds element at(j) of the row, for the j with held(j). All
// of a thread's loads are issued before any is used, so they are all in flight at once.
// The slots past the row hold -inf: the max passes over it, and its exp is 0 (-inf - m is -inf for
// any m but -inf, and a row all of -inf is NaN whatever the slots hold), so the sweeps over the
// registers take every slot and test none; only the loads and the stores ask held().
// An f32 slot keeps its exp(x - max) in place of x (keep); a bf16 slot has no room for it, so the
// write takes exp again, from the slot (sfu_exp: three instructions).
template <class E, int GROUP, int VALUES> struct RowShare {
    enum { VECTORS = VALUES / E::PER_VEC };
    unsigned int thread; // in the group
    unsigned int len;    // the row's elements (0: a group with no row)
    bool vectors;        // the row and its output 16-byte aligned, len a multiple of E::PER_VEC
    uint4 q[VECTORS];

    __device__ unsigned int at(int j) const
    {
        return vectors ? (thread + (j / E::PER_VEC) * GROUP) * E::PER_VEC + j % E::PER_VEC
                       : thread + j * GROUP;
    }
    __device__ bool held(int j) const
    {
        return vectors ? (thread + (j / E::PER_VEC) * GROUP) * E::PER_VEC < len
                       : thread + j * GROUP < len;
    }
    __device__ float get(int j) const { return E::element(q[j / E::PER_VEC], j % E::PER_VEC); }
    __device__ void keep(int j, float e) { E::keep(q[j / E::PER_VEC], j % E::PER_VEC, e); }
    __device__ void load(const typename E::Word* __restrict__ x_row)
    {
        const unsigned int pad = E::minus_infinity();
        if (vectors) {
            const uint4* __restrict__ v = reinterpret_cast<const uint4*>(x_row);
#pragma unroll
            for (int k = 0; k < VECTORS; k++) {
                q[k] =
                    held(k * E::PER_VEC) ? v[thread + k * GROUP] : make_uint4(pad, pad, pad, pad);
            }
        } else {
            // Element j's bits go to word (j % PER_VEC) / PER_WORD of q[k], at bit 32 / PER_WORD
            // times j % PER_WORD.
            const unsigned int bits = 32 / E::PER_WORD, mask = 0xffffffffu >> (32 - bits);
#pragma unroll
            for (int k = 0; k < VECTORS; k++) {
                unsigned int w[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    w[i] = 0;
#pragma unroll
                    for (int h = 0; h < E::PER_WORD; h++) {
                        const int j = k * E::PER_VEC + i * E::PER_WORD + h;
                        w[i] |= (held(j) ? E::bits(x_row, at(j)) : pad & mask) << (bits * h);
                    }
                }
                q[k] = make_uint4(w[0], w[1], w[2], w[3]);
            }
        }
    }
    // Slot j's exp(x - shift): kept (f32), or taken again (bf16).
    __device__ float exp_of(int j, float shift) const
    {
        return E::KEEPS_EXP ? get(j) : E::exp(get(j) - shift);
    }
    // y = exp(x - shift) * scale for each held element.
    __device__ void store(typename E::Word* __restrict__ y_row, float shift, float scale) const
    {
        if (vectors) {
            uint4* __restrict__ w = reinterpret_cast<uint4*>(y_row);
#pragma unroll
            for (int k = 0; k < VECTORS; k++) {
                if (held(k * E::PER_VEC)) {
                    float y[E::PER_VEC];
#pragma unroll
                    for (int j = 0; j < E::PER_VEC; j++) {
                        y[j] = exp_of(k * E::PER_VEC + j, shift) * scale;
                    }
                    w[thread + k * GROUP] = E::pack(y);
                }
            }
        } else {
#pragma unroll
            for (int j = 0; j < VALUES; j++) {
                if (held(j)) {
                    E::store(y_row, at(j), exp_of(j, shift) * scale);
                }
            }
        }
    }
};
// ANCHOR_END: row_share

// ANCHOR: on_chip
// Step 6, softmax_on_chip_<GROUP>x<VALUES>: the row read from DRAM once, held in registers.
//
// What it does: a group of GROUP threads takes a row (half a warp for rows of up to 16 x VALUES
// elements, more lanes for longer ones, up to 512 threads; the launcher picks the group, and
// VALUES, the elements each thread holds: 8 to 64). Each thread first loads its whole share of
// the row into registers, 16 bytes at a time where the row is aligned (thread t takes vectors t,
// t + GROUP, t + 2 GROUP, ...: consecutive threads, consecutive vectors), so all of a group's loads
// are in flight at once. Then three sweeps over registers, none over memory: the row's max (each
// thread's, then the group's), e = exp(x - max) summed (kept in place of x for f32; a bf16 slot
// takes its exp again at the write), the group's sum the same way, and the write of e / sum.
// (RowShare, above, is the thread's share of the row: which elements it holds, their loads and
// their stores.)
//
// What changed from the steps before: DRAM sees the row once on the way in and once on the way
// out; every step before read it at least twice (the online sweep and the write). And the max is
// known before any exp, so each f32 element costs one exp (a bf16 one two, by the special-function
// unit), where the online sweep pays the rescales and the write a second exp.
//
// What it leaves slow: a row longer than 512 x 64 elements does not fit the registers of a block
// (at 512 threads a block, each thread gets 128 registers: 64 f32 elements and the rest of the
// kernel; 64 bf16 take half of what 64 f32 do); the launcher takes such rows through step 5's
// split rows, which read them twice.
//
// Launch: block max(GROUP, THREADS), grid ceil(rows / (block / GROUP)); GROUP a power of two from
// 16 to 512, with GROUP x VALUES >= cols.
template <class E, int GROUP, int VALUES>
__device__ void on_chip(const typename E::Word* __restrict__ in, typename E::Word* __restrict__ out,
                        unsigned int rows, unsigned int cols)
{
    const size_t row = (size_t)blockIdx.x * (blockDim.x / GROUP) + threadIdx.x / GROUP;
    // A block of several groups may have groups past the last row: they take part in the barriers
    // of group_reduce with nothing to hold, and write nothing.
    const unsigned int len = row < rows ? cols : 0;
    const typename E::Word* x_row = in + row * cols;
    typename E::Word* y_row = out + row * cols;
    RowShare<E, GROUP, VALUES> share = {
        threadIdx.x % GROUP, len, aligned16(x_row) && aligned16(y_row) && cols % E::PER_VEC == 0};
    share.load(x_row);

    // ANCHOR: solution the row's max m: each thread's over all its slots (share.get(j); MaxNaN::combine, which keeps a NaN; the slots past the row hold -inf), then the group's (group_reduce<MaxNaN, GROUP>); then each e = E::exp(x - m), kept in its slot (share.keep) and summed, and the group's sum s (group_reduce<Sum<float>, GROUP>)
    float m = MaxNaN::identity();
#pragma unroll
    for (int j = 0; j < VALUES; j++) {
        m = MaxNaN::combine(m, share.get(j));
    }
    m = group_reduce<MaxNaN, GROUP>(m);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < VALUES; j++) {
        const float e = E::exp(share.get(j) - m);
        share.keep(j, e);
        s += e;
    }
    s = group_reduce<Sum<float>, GROUP>(s);
    // ANCHOR_END: solution
    // ANCHOR: stub float m = 0.0f, s = 1.0f;
    share.store(y_row, m, 1.0f / s);
}
// ANCHOR_END: on_chip

// The entry points: softmax_on_chip_<GROUP>x<VALUES>, the shapes softmax::on_chip_group picks (the
// group and the elements are compile-time: the shifts, the offsets of the loads and the reductions'
// loops are constants). Blocks of max(GROUP, 256) threads; at 512, up to 128 registers a thread.
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_16x8(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 16, 8>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_16x16(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 16, 16>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_16x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 16, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_32x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 32, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_64x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 64, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_128x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 128, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_256x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 256, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(512)
    softmax_on_chip_512x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 512, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(512)
    softmax_on_chip_512x64(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    on_chip<F32, 512, 64>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_16x8_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                              unsigned int cols)
{
    on_chip<BF16, 16, 8>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_16x16_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                               unsigned int cols)
{
    on_chip<BF16, 16, 16>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_16x32_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                               unsigned int cols)
{
    on_chip<BF16, 16, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_32x32_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                               unsigned int cols)
{
    on_chip<BF16, 32, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_64x32_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                               unsigned int cols)
{
    on_chip<BF16, 64, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_128x32_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                                unsigned int cols)
{
    on_chip<BF16, 128, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256)
    softmax_on_chip_256x32_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                                unsigned int cols)
{
    on_chip<BF16, 256, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(512)
    softmax_on_chip_512x32_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                                unsigned int cols)
{
    on_chip<BF16, 512, 32>(in, out, rows, cols);
}
extern "C" __global__ void __launch_bounds__(512)
    softmax_on_chip_512x64_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                                unsigned int cols)
{
    on_chip<BF16, 512, 64>(in, out, rows, cols);
}

// Thread block clusters exist from compute capability 9.0 (Hopper): before it, step 7's kernels are
// not compiled, and the launcher runs step 6's in their place.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// ANCHOR: cluster
// Step 7, softmax_cluster_<CLUSTER>x<BLOCK>x<VALUES>: a row too long for one block, held on chip
// by a cluster of blocks.
//
// What it does: a thread block cluster (Hopper: CLUSTER blocks launched together on the SMs of one
// GPC, each able to read the others' shared memory) takes a row. Block r of the cluster holds part
// r of the row in registers, BLOCK threads of VALUES elements, as step 6's group holds a whole
// row (32 f32 or 64 bf16 a thread), and sums its part as online softmax's state: its max m and
// the sum s of e = exp(x - m) (kept in place of x for f32, taken again at the write for bf16).
// Then one exchange: thread 0 of every block puts the block's (m, s)
// in a slot of its shared memory, the cluster waits at its barrier (barrier.cluster: every thread
// of every block has arrived, and the slots written before are visible), and every thread reads
// the CLUSTER slots, its own block's and the others', through the cluster's shared window (mapa
// gives the address of the same slot in block r; ld.shared::cluster reads it) and merges them
// with online softmax's rule into the row's max M and sum S, in the ranks' order, so every block
// holds the same M and S to the bit. The write is y = e * exp(m - M) / S, one factor per block.
//
// What changed from on-chip: rows longer than one block holds (step 6 sends them through split
// rows, which reads them twice from DRAM) are read once: the blocks of a row exchange their
// partial results, two floats each, through distributed shared memory instead of DRAM and a second
// launch. One exchange, not one for the max and one for the sum: a cluster barrier is a round trip
// between SMs, and the blocks wait at it with nothing to load (measured at 768 x 2^16 on blocks of
// 256: 92% of the copy roof with one, 87% with two; scripts/lab/softmax/cluster-shape.cu).
//
// What it leaves slow: the block waits at the exchange with nothing of its own in flight (and once
// more before it leaves, behind its stores: its slots must outlive the others' reads of them);
// blocks of 256 threads (four per SM, where the registers allow two of 512) let other blocks'
// loads fill the wait.
// And clusters of at most 8 blocks (the portable size): rows of more than 8 x 512 x 32 f32 (or
// x 64 bf16) still go through split rows.
//
// Launch: block BLOCK, grid rows x CLUSTER (the cluster's shape is compiled into the kernel with
// __cluster_dims__, so a plain launch makes clusters), CLUSTER x BLOCK x VALUES >= cols.
__device__ __forceinline__ void cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait()
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The value of `slot` (a variable in this block's shared memory) in block `rank` of the cluster.
__device__ __forceinline__ float read_slot(const float* slot, unsigned int rank)
{
    const unsigned int here = (unsigned int)__cvta_generic_to_shared(slot);
    unsigned int there;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(there) : "r"(here), "r"(rank));
    float value;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(value) : "r"(there) : "memory");
    return value;
}

// Where this block's part of its row starts in the matrix (block b holds part b % CLUSTER of row
// b / CLUSTER), and in `len` how many elements it has. A part is `part` elements from r x part, a
// multiple of 8, so that every part of a 16-byte aligned row is aligned too (the last part may be
// shorter, or empty).
template <int CLUSTER>
__device__ __forceinline__ size_t cluster_part(unsigned int cols, unsigned int& len)
{
    const unsigned int rank = blockIdx.x % CLUSTER;
    const size_t row = blockIdx.x / CLUSTER;
    const unsigned int part = (cols / CLUSTER + (cols % CLUSTER != 0) + 7) / 8 * 8;
    const unsigned int begin = min(rank * part, cols);
    len = min(part, cols - begin);
    return row * cols + begin;
}

template <class E, int CLUSTER, int BLOCK, int VALUES>
__device__ void cluster_rows(const typename E::Word* __restrict__ in,
                             typename E::Word* __restrict__ out, unsigned int rows,
                             unsigned int cols)
{
    __shared__ float slots[2]; // the block's (m, s), for the cluster to read
    unsigned int len;
    const size_t offset = cluster_part<CLUSTER>(cols, len);
    const typename E::Word* x_part = in + offset;
    typename E::Word* y_part = out + offset;
    RowShare<E, BLOCK, VALUES> share = {
        threadIdx.x, len, aligned16(x_part) && aligned16(y_part) && cols % E::PER_VEC == 0};
    share.load(x_part);

    // ANCHOR: solution the block's state: its max m (each thread's over all its slots, share.get(j) with MaxNaN::combine, then group_reduce<MaxNaN, BLOCK>), each e = E::exp(x - shift) kept in its slot (share.keep; shift is m, or 0 where m is -inf: a part of only -inf) and their sum s (group_reduce<Sum<float>, BLOCK>); thread 0 writes (m, s) to slots, the cluster waits (cluster_arrive, cluster_wait), and every thread merges the CLUSTER blocks' slots (read_slot, rank 0 first) with OnlineOp::combine into `whole`
    float m = MaxNaN::identity();
#pragma unroll
    for (int j = 0; j < VALUES; j++) {
        m = MaxNaN::combine(m, share.get(j));
    }
    m = group_reduce<MaxNaN, BLOCK>(m);
    const float shift = m == MaxNaN::identity() ? 0.0f : m; // exp(-inf - -inf) would be NaN
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < VALUES; j++) {
        const float e = E::exp(share.get(j) - shift);
        share.keep(j, e);
        s += e;
    }
    s = group_reduce<Sum<float>, BLOCK>(s);
    if (threadIdx.x == 0) {
        slots[0] = m;
        slots[1] = s;
    }
    cluster_arrive();
    cluster_wait();
    Online whole = OnlineOp::identity();
#pragma unroll
    for (int r = 0; r < CLUSTER; r++) {
        const Online block = {read_slot(&slots[0], r), read_slot(&slots[1], r)};
        whole = OnlineOp::combine(whole, block);
    }
    // ANCHOR_END: solution
    // ANCHOR: stub float m = 0.0f, shift = 0.0f; Online whole = {0.0f, 1.0f};
    cluster_arrive(); // this block is done reading the others' slots ...
    share.store(y_part, shift, OnlineOp::rescale(m, whole.m) * inverse_sum(whole));
    cluster_wait(); // ... and, once every block has said so, may leave
}
// ANCHOR_END: cluster

// The entry points: softmax_cluster_<CLUSTER>x<BLOCK>x<VALUES>, the shapes softmax::cluster_shape
// picks: blocks of 256 threads (four per SM) for rows a cluster of 8 of them holds, then 512; 32
// elements a thread for f32 rows, 64 for bf16 rows (held two to a register).
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(256, 4)
    softmax_cluster_4x256x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    cluster_rows<F32, 4, 256, 32>(in, out, rows, cols);
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(256, 4)
    softmax_cluster_8x256x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    cluster_rows<F32, 8, 256, 32>(in, out, rows, cols);
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(512, 2)
    softmax_cluster_8x512x32(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    cluster_rows<F32, 8, 512, 32>(in, out, rows, cols);
}
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(256, 4)
    softmax_cluster_4x256x64_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                                  unsigned int cols)
{
    cluster_rows<BF16, 4, 256, 64>(in, out, rows, cols);
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(256, 4)
    softmax_cluster_8x256x64_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                                  unsigned int cols)
{
    cluster_rows<BF16, 8, 256, 64>(in, out, rows, cols);
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(512, 2)
    softmax_cluster_8x512x64_bf16(const unsigned short* in, unsigned short* out, unsigned int rows,
                                  unsigned int cols)
{
    cluster_rows<BF16, 8, 512, 64>(in, out, rows, cols);
}
#endif
