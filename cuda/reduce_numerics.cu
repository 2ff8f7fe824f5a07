// reduce-numerics: the reduction family's last chapter. What a sum is worth, not only how fast it
// runs: half-precision inputs accumulated in f32, a compensated sum, and mean and variance in one
// pass. Every kernel is reduce-atomic's deterministic single pass (a grid that fills the GPU once,
// 16-byte grid-stride loads, a block reduction, the last block finishing in a fixed order), with a
// different value accumulated.
//
// What changed from reduce-atomic: only the value each thread accumulates (a widened half, a sum
// and its error, a (count, mean, m2) state) and how two of them combine.
//
// What it leaves slow: the moments of halves, where eight values a 16-byte load and a combination
// with a division every four of them are more arithmetic per byte than a fast memory leaves time
// for; the compensated sum's extra additions the memory hides.
//
// Launch: blockDim.x = 256, no dynamic shared memory, gridDim.x at most 2^31 - 1 (the launcher uses
// 8 blocks per SM); n is 64-bit; *ticket = 0 before the launch (the last block leaves it 0).
#include "block_reduce.cuh"
#include "last_block.cuh"
#include "moments.cuh"

// ANCHOR: halves
// Half-precision inputs, accumulated in f32. A 16-byte load brings 8 halves: the same bytes per
// load as reduce-shuffle's float4, twice the elements, so at the same bandwidth the sum of n halves
// takes half the time of n floats. Each half converts to f32 exactly (f32 holds every f16 and bf16
// value), and the sum is f32's, so its error is f32's too: halving the bytes costs no accuracy
// beyond the rounding of the values to 16 bits, which happened before the kernel ran.
//
// The inputs are 16-bit words (`unsigned short`): IEEE half (f16: 5 exponent bits, 10 fraction
// bits) or bfloat16 (bf16: f32's 8 exponent bits, 7 fraction bits). The conversions are written out
// rather than taken from cuda_fp16.h, which NVRTC finds only beside a CUDA toolkit.
struct F16 {
    __device__ static float to_float(unsigned short bits)
    {
        float value;
        asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
        return value;
    }
};
struct BF16 {
    // bf16 is the top half of an f32: widening is a shift.
    __device__ static float to_float(unsigned short bits)
    {
        return __uint_as_float((unsigned int)bits << 16);
    }
};

// The f32 values of the two halves of a 32-bit word (the first element in the low half).
template <class Half> __device__ __forceinline__ float2 pair_to_float(unsigned int word)
{
    return make_float2(Half::to_float((unsigned short)(word & 0xffffu)),
                       Half::to_float((unsigned short)(word >> 16)));
}

// The f32 sum of 8 halves packed in a uint4.
template <class Half> __device__ __forceinline__ float sum8(uint4 v)
{
    const float2 a = pair_to_float<Half>(v.x), b = pair_to_float<Half>(v.y);
    const float2 c = pair_to_float<Half>(v.z), d = pair_to_float<Half>(v.w);
    return ((a.x + a.y) + (b.x + b.y)) + ((c.x + c.y) + (d.x + d.y));
}

// This thread's f32 sum of its share of input[0, n): 16-byte loads of 8 halves, two in flight per
// iteration, with the elements before the first 16-byte boundary (the head) and after the last
// whole vector (the tail) read one by one, as in reduce-shuffle.
template <class Half>
__device__ __forceinline__ float thread_sum_halves(const unsigned short* __restrict__ input,
                                                   unsigned long long n)
{
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long misaligned = (reinterpret_cast<unsigned long long>(input) / 2) % 8;
    const unsigned long long head = misaligned == 0 ? 0 : (8 - misaligned < n ? 8 - misaligned : n);
    const unsigned long long vectors = (n - head) / 8;
    const uint4* __restrict__ vec = reinterpret_cast<const uint4*>(input + head);

    float sum = 0.0f;
    unsigned long long v = thread;
    for (; v + threads < vectors; v += 2 * threads) {
        const uint4 a = vec[v];
        const uint4 b = vec[v + threads];
        sum += sum8<Half>(a) + sum8<Half>(b);
    }
    for (; v < vectors; v += threads) {
        sum += sum8<Half>(vec[v]);
    }
    if (thread < head) {
        sum += Half::to_float(input[thread]);
    }
    for (unsigned long long i = head + 8 * vectors + thread; i < n; i += threads) {
        sum += Half::to_float(input[i]);
    }
    return sum;
}

extern "C" __global__ void __launch_bounds__(256, 8)
    numerics_sum_f16(const unsigned short* __restrict__ input, float* __restrict__ partial,
                     unsigned int* __restrict__ ticket, float* __restrict__ result,
                     unsigned long long n)
{
    reduce_last_block<Sum<float>>(thread_sum_halves<F16>(input, n), partial, ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    numerics_sum_bf16(const unsigned short* __restrict__ input, float* __restrict__ partial,
                      unsigned int* __restrict__ ticket, float* __restrict__ result,
                      unsigned long long n)
{
    reduce_last_block<Sum<float>>(thread_sum_halves<BF16>(input, n), partial, ticket, result);
}
// ANCHOR_END: halves

// ANCHOR: compensated
// A compensated sum (Neumaier's form of Kahan's): beside the running sum s, each accumulator keeps
// c, the rounding error of every addition so far, recovered exactly by `two_sum`. The result is
// s + c, as if the sum had been carried in about twice f32's precision. Two accumulators combine
// the same way, so warps, blocks and the last block keep the compensation all the way. The
// compiler keeps the operations as written (no fast-math; additions are not contracted into FMAs).
struct Compensated {
    float sum;
    float error;
};

// a + b = s + e exactly, with s = fl(a + b) (Knuth's TwoSum: six additions, no branch).
__device__ __forceinline__ float two_sum(float a, float b, float* error)
{
    // ANCHOR: solution the rounded sum s = a + b, and in *error the exact a + b - s, from additions and subtractions alone (TwoSum: the part of b that s kept, the part of a, and what each lost)
    const float s = a + b;
    const float b_virtual = s - a;
    const float a_virtual = s - b_virtual;
    *error = (a - a_virtual) + (b - b_virtual);
    return s;
    // ANCHOR_END: solution
    // ANCHOR: stub *error = 0.0f;
    // ANCHOR: stub return a + b;
}

struct CompensatedSum {
    typedef float Input;
    typedef Compensated Value;
    __device__ static Compensated lift(float x) { return Compensated{x, 0.0f}; }
    __device__ static Compensated identity() { return Compensated{0.0f, 0.0f}; }
    __device__ static Compensated combine(Compensated a, Compensated b)
    {
        float rounding;
        const float sum = two_sum(a.sum, b.sum, &rounding);
        // Past an infinity there is no rounding error to carry (TwoSum would make it NaN).
        return Compensated{sum, isinf(sum) ? 0.0f : (a.error + b.error) + rounding};
    }
};

__device__ __forceinline__ Compensated shuffle_down(Compensated value, int offset)
{
    return Compensated{shuffle_down(value.sum, offset), shuffle_down(value.error, offset)};
}

__device__ __forceinline__ Compensated load_from_l2(const Compensated* address)
{
    return Compensated{__ldcg(&address->sum), __ldcg(&address->error)};
}

extern "C" __global__ void __launch_bounds__(256, 8)
    numerics_sum_f32_compensated(const float* __restrict__ input, Compensated* __restrict__ partial,
                                 unsigned int* __restrict__ ticket,
                                 Compensated* __restrict__ result, unsigned long long n)
{
    reduce_last_block<CompensatedSum>(thread_reduce_vec4<CompensatedSum>(input, n), partial, ticket,
                                      result);
}
// ANCHOR_END: compensated

// ANCHOR: moments_kernels
// Mean and variance in one pass: the accumulator (count, mean, m2), its one-value and four-value
// forms and Chan's combination are in moments.cuh (batch-stats uses them too).

// This thread's moments of its share of an f32 input: 16-byte loads, head and tail one by one.
__device__ __forceinline__ Moments thread_moments(const float* __restrict__ input,
                                                  unsigned long long n)
{
    typedef MomentsOf<float> Op;
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long misaligned =
        (reinterpret_cast<unsigned long long>(input) / sizeof(float)) % 4;
    const unsigned long long head = misaligned == 0 ? 0 : (4 - misaligned < n ? 4 - misaligned : n);
    const unsigned long long vectors = (n - head) / 4;
    const float4* __restrict__ vec = reinterpret_cast<const float4*>(input + head);

    Moments acc = Op::identity();
    unsigned long long v = thread;
    for (; v + threads < vectors; v += 2 * threads) {
        const float4 a = vec[v];
        const float4 b = vec[v + threads];
        acc = Op::combine(acc,
                          Op::combine(moments4(a.x, a.y, a.z, a.w), moments4(b.x, b.y, b.z, b.w)));
    }
    for (; v < vectors; v += threads) {
        const float4 a = vec[v];
        acc = Op::combine(acc, moments4(a.x, a.y, a.z, a.w));
    }
    if (thread < head) {
        acc = Op::combine(acc, moments1(input[thread]));
    }
    const unsigned long long tail = head + 4 * vectors + thread;
    if (tail < n) {
        acc = Op::combine(acc, moments1(input[tail]));
    }
    return acc;
}

// The same for halves: 16-byte loads of 8 halves, each 8 folded in as two groups of four.
template <class Half>
__device__ __forceinline__ Moments thread_moments_halves(const unsigned short* __restrict__ input,
                                                         unsigned long long n)
{
    typedef MomentsOf<float> Op;
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long misaligned = (reinterpret_cast<unsigned long long>(input) / 2) % 8;
    const unsigned long long head = misaligned == 0 ? 0 : (8 - misaligned < n ? 8 - misaligned : n);
    const unsigned long long vectors = (n - head) / 8;
    const uint4* __restrict__ vec = reinterpret_cast<const uint4*>(input + head);

    Moments acc = Op::identity();
    for (unsigned long long v = thread; v < vectors; v += threads) {
        const uint4 q = vec[v];
        const float2 a = pair_to_float<Half>(q.x), b = pair_to_float<Half>(q.y);
        const float2 c = pair_to_float<Half>(q.z), d = pair_to_float<Half>(q.w);
        acc = Op::combine(acc,
                          Op::combine(moments4(a.x, a.y, b.x, b.y), moments4(c.x, c.y, d.x, d.y)));
    }
    if (thread < head) {
        acc = Op::combine(acc, moments1(Half::to_float(input[thread])));
    }
    for (unsigned long long i = head + 8 * vectors + thread; i < n; i += threads) {
        acc = Op::combine(acc, moments1(Half::to_float(input[i])));
    }
    return acc;
}

extern "C" __global__ void __launch_bounds__(256, 8)
    numerics_moments_f32(const float* __restrict__ input, Moments* __restrict__ partial,
                         unsigned int* __restrict__ ticket, Moments* __restrict__ result,
                         unsigned long long n)
{
    reduce_last_block<MomentsOf<float>>(thread_moments(input, n), partial, ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    numerics_moments_f16(const unsigned short* __restrict__ input, Moments* __restrict__ partial,
                         unsigned int* __restrict__ ticket, Moments* __restrict__ result,
                         unsigned long long n)
{
    reduce_last_block<MomentsOf<float>>(thread_moments_halves<F16>(input, n), partial, ticket,
                                        result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    numerics_moments_bf16(const unsigned short* __restrict__ input, Moments* __restrict__ partial,
                          unsigned int* __restrict__ ticket, Moments* __restrict__ result,
                          unsigned long long n)
{
    reduce_last_block<MomentsOf<float>>(thread_moments_halves<BF16>(input, n), partial, ticket,
                                        result);
}
// ANCHOR_END: moments_kernels
