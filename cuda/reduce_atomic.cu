// reduce-atomic: the whole reduction in a single kernel launch, two ways.
//
// Both start like reduce-shuffle's final step (16-byte grid-stride loads, shuffle block reduction)
// with a grid that fills the GPU once, and differ in how the per-block values are combined:
//
// - reduce_atomic: thread 0 of each block combines its block's value into the result with one
//   atomic operation. Fast and simple, but for floats the order of the additions depends on which
//   block finishes first, so the last bits of a float sum can change from run to run.
// - reduce_last_block: each block writes its value to a partials array; the last block to finish
//   (found with an atomic ticket counter, after a memory fence) reduces the partials in a fixed
//   order. The result is bit-identical from run to run.
//
// What changed from reduce-multi-level: no second launch. The block values are combined in the
// same kernel, by an atomic or by the last block, instead of by a second pass.
//
// What it leaves slow: at large sizes nothing beyond the loads (both finishes reach the read
// roof); the deterministic finish's last block reads the partials alone, after every other block
// has finished, a few microseconds that weigh most on mid-sized inputs.
//
// Launch: blockDim.x = 256, no dynamic shared memory, gridDim.x at most 2^31 - 1 (the launcher uses
// 8 blocks per SM); n is 64-bit. reduce_atomic needs *result set to the operation's identity
// before the launch; reduce_last_block needs *ticket = 0 (it leaves it 0 again).
#include "block_reduce.cuh"
#include "last_block.cuh"

// ANCHOR: atomics
// How one block's value is combined into the result, per operation. Integer sums, minima and
// maxima have hardware atomics; 64-bit sums use the unsigned 64-bit atomic add (two's complement
// makes it right for signed values too); float min and max use a compare-and-swap loop on the bits,
// with the same NaN rule as Max<float> and Min<float>. Float sums use the hardware's atomicAdd,
// which flushes subnormal operands and results to zero, except for a block whose value is below
// 2^-102 (2^24 times the smallest normal float) or NaN: that block adds with the compare-and-swap
// loop, in a register, subnormals kept; a block whose value is zero adds nothing. So a sum of tiny
// values is exact, and where a block did take the atomicAdd the magnitudes add up to at least
// 2^-102, so a flushed value (below 2^-126) is within the sum's rounding bound. A compare-and-swap
// for every block would be exact too, but 1,056 blocks retrying on one word made the whole launch
// 2 to 60 times slower.
template <class Op> struct Atomic;
template <> struct Atomic<Sum<int>> {
    __device__ static void apply(int* r, int v) { atomicAdd(r, v); }
};
template <> struct Atomic<Sum<unsigned int>> {
    __device__ static void apply(unsigned int* r, unsigned int v) { atomicAdd(r, v); }
};
template <> struct Atomic<Sum<int, long long>> {
    __device__ static void apply(long long* r, long long v)
    {
        atomicAdd(reinterpret_cast<unsigned long long*>(r), (unsigned long long)v);
    }
};
template <> struct Atomic<Sum<unsigned int, unsigned long long>> {
    __device__ static void apply(unsigned long long* r, unsigned long long v) { atomicAdd(r, v); }
};
template <> struct Atomic<Max<int>> {
    __device__ static void apply(int* r, int v) { atomicMax(r, v); }
};
template <> struct Atomic<Min<int>> {
    __device__ static void apply(int* r, int v) { atomicMin(r, v); }
};
template <> struct Atomic<Max<unsigned int>> {
    __device__ static void apply(unsigned int* r, unsigned int v) { atomicMax(r, v); }
};
template <> struct Atomic<Min<unsigned int>> {
    __device__ static void apply(unsigned int* r, unsigned int v) { atomicMin(r, v); }
};

template <class Op> __device__ __forceinline__ void atomic_combine_float(float* r, float v)
{
    unsigned int* word = reinterpret_cast<unsigned int*>(r);
    unsigned int old = *word;
    for (;;) {
        const unsigned int wanted = __float_as_uint(Op::combine(__uint_as_float(old), v));
        if (wanted == old) {
            return;
        }
        const unsigned int seen = atomicCAS(word, old, wanted);
        if (seen == old) {
            return;
        }
        old = seen;
    }
}
template <> struct Atomic<Sum<float>> {
    __device__ static void apply(float* r, float v)
    {
        if (v == 0.0f) {
            return; // adding a zero changes nothing, and atomicAdd would flush a subnormal result
        }
        if (fabsf(v) >= 0x1p-102f) {
            atomicAdd(r, v);
        } else {
            atomic_combine_float<Sum<float>>(r, v);
        }
    }
};
template <> struct Atomic<Max<float>> {
    __device__ static void apply(float* r, float v) { atomic_combine_float<Max<float>>(r, v); }
};
template <> struct Atomic<Min<float>> {
    __device__ static void apply(float* r, float v) { atomic_combine_float<Min<float>>(r, v); }
};
// ANCHOR_END: atomics

// ANCHOR: atomic
template <class Op>
__device__ __forceinline__ void reduce_atomic(typename Op::Value block_value,
                                              typename Op::Value* result)
{
    block_value = block_reduce<Op>(block_value);
    if (threadIdx.x == 0) {
        // ANCHOR: solution combine the block's value into the result with one atomic operation (Atomic<Op>::apply)
        Atomic<Op>::apply(result, block_value);
        // ANCHOR_END: solution
    }
}
// ANCHOR_END: atomic

// The entry points: a pair per (operation, input type), atomic_<op>_<type> and
// last_block_<op>_<type>. The wide sums add 32-bit integers in 64 bits (for the mean).
typedef Sum<int, long long> WideSumI32;
typedef Sum<unsigned int, unsigned long long> WideSumU32;

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_sum_f32(const float* __restrict__ input, float* result, unsigned long long n)
{
    reduce_atomic<Sum<float>>(thread_reduce_vec4<Sum<float>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_sum_f32(const float* __restrict__ input, float* __restrict__ partial,
                       unsigned int* __restrict__ ticket, float* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Sum<float>>(thread_reduce_vec4<Sum<float>>(input, n), partial, ticket,
                                  result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_min_f32(const float* __restrict__ input, float* result, unsigned long long n)
{
    reduce_atomic<Min<float>>(thread_reduce_vec4<Min<float>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_min_f32(const float* __restrict__ input, float* __restrict__ partial,
                       unsigned int* __restrict__ ticket, float* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Min<float>>(thread_reduce_vec4<Min<float>>(input, n), partial, ticket,
                                  result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_max_f32(const float* __restrict__ input, float* result, unsigned long long n)
{
    reduce_atomic<Max<float>>(thread_reduce_vec4<Max<float>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_max_f32(const float* __restrict__ input, float* __restrict__ partial,
                       unsigned int* __restrict__ ticket, float* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Max<float>>(thread_reduce_vec4<Max<float>>(input, n), partial, ticket,
                                  result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_sum_i32(const int* __restrict__ input, int* result, unsigned long long n)
{
    reduce_atomic<Sum<int>>(thread_reduce_vec4<Sum<int>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_sum_i32(const int* __restrict__ input, int* __restrict__ partial,
                       unsigned int* __restrict__ ticket, int* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Sum<int>>(thread_reduce_vec4<Sum<int>>(input, n), partial, ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_min_i32(const int* __restrict__ input, int* result, unsigned long long n)
{
    reduce_atomic<Min<int>>(thread_reduce_vec4<Min<int>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_min_i32(const int* __restrict__ input, int* __restrict__ partial,
                       unsigned int* __restrict__ ticket, int* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Min<int>>(thread_reduce_vec4<Min<int>>(input, n), partial, ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_max_i32(const int* __restrict__ input, int* result, unsigned long long n)
{
    reduce_atomic<Max<int>>(thread_reduce_vec4<Max<int>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_max_i32(const int* __restrict__ input, int* __restrict__ partial,
                       unsigned int* __restrict__ ticket, int* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Max<int>>(thread_reduce_vec4<Max<int>>(input, n), partial, ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_sum_u32(const unsigned int* __restrict__ input, unsigned int* result,
                   unsigned long long n)
{
    reduce_atomic<Sum<unsigned int>>(thread_reduce_vec4<Sum<unsigned int>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_sum_u32(const unsigned int* __restrict__ input, unsigned int* __restrict__ partial,
                       unsigned int* __restrict__ ticket, unsigned int* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Sum<unsigned int>>(thread_reduce_vec4<Sum<unsigned int>>(input, n), partial,
                                         ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_min_u32(const unsigned int* __restrict__ input, unsigned int* result,
                   unsigned long long n)
{
    reduce_atomic<Min<unsigned int>>(thread_reduce_vec4<Min<unsigned int>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_min_u32(const unsigned int* __restrict__ input, unsigned int* __restrict__ partial,
                       unsigned int* __restrict__ ticket, unsigned int* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Min<unsigned int>>(thread_reduce_vec4<Min<unsigned int>>(input, n), partial,
                                         ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_max_u32(const unsigned int* __restrict__ input, unsigned int* result,
                   unsigned long long n)
{
    reduce_atomic<Max<unsigned int>>(thread_reduce_vec4<Max<unsigned int>>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_max_u32(const unsigned int* __restrict__ input, unsigned int* __restrict__ partial,
                       unsigned int* __restrict__ ticket, unsigned int* __restrict__ result,
                       unsigned long long n)
{
    reduce_last_block<Max<unsigned int>>(thread_reduce_vec4<Max<unsigned int>>(input, n), partial,
                                         ticket, result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_wide_sum_i32(const int* __restrict__ input, long long* result, unsigned long long n)
{
    reduce_atomic<WideSumI32>(thread_reduce_vec4<WideSumI32>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_wide_sum_i32(const int* __restrict__ input, long long* __restrict__ partial,
                            unsigned int* __restrict__ ticket, long long* __restrict__ result,
                            unsigned long long n)
{
    reduce_last_block<WideSumI32>(thread_reduce_vec4<WideSumI32>(input, n), partial, ticket,
                                  result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_wide_sum_u32(const unsigned int* __restrict__ input, unsigned long long* result,
                        unsigned long long n)
{
    reduce_atomic<WideSumU32>(thread_reduce_vec4<WideSumU32>(input, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_wide_sum_u32(const unsigned int* __restrict__ input,
                            unsigned long long* __restrict__ partial,
                            unsigned int* __restrict__ ticket,
                            unsigned long long* __restrict__ result, unsigned long long n)
{
    reduce_last_block<WideSumU32>(thread_reduce_vec4<WideSumU32>(input, n), partial, ticket,
                                  result);
}

// ANCHOR: dot
// Dot product of two f32 vectors, both ways.
extern "C" __global__ void __launch_bounds__(256, 8)
    atomic_dot_f32(const float* __restrict__ a, const float* __restrict__ b, float* result,
                   unsigned long long n)
{
    reduce_atomic<Sum<float>>(thread_dot(a, b, n), result);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    last_block_dot_f32(const float* __restrict__ a, const float* __restrict__ b,
                       float* __restrict__ partial, unsigned int* __restrict__ ticket,
                       float* __restrict__ result, unsigned long long n)
{
    reduce_last_block<Sum<float>>(thread_dot(a, b, n), partial, ticket, result);
}
// ANCHOR_END: dot
