// block_reduce.cuh: warp and block reductions with shuffles, shared by reduce-shuffle and the steps
// that finish on the device (reduce-multi-level, reduce-atomic).
//
// An operation is a struct with `identity()` and `combine(a, b)`:
//   SumOp: 0 and a + b.
//   MaxOp / MinOp: -inf / +inf and the larger / smaller value, where NaN wins: if either value
//   is NaN the result is NaN, so a NaN anywhere in the input makes the result NaN (as numpy's
//   max does; fmaxf would drop it instead).
#pragma once

struct SumOp {
    __device__ static float identity() { return 0.0f; }
    __device__ static float combine(float a, float b) { return a + b; }
};

struct MaxOp {
    __device__ static float identity() { return __int_as_float(0xff800000); }  // -inf
    __device__ static float combine(float a, float b) { return (a > b || a != a) ? a : b; }
};

struct MinOp {
    __device__ static float identity() { return __int_as_float(0x7f800000); }  // +inf
    __device__ static float combine(float a, float b) { return (a < b || a != a) ? a : b; }
};

// ANCHOR: warp_reduce
// Reduces one value per lane to one value, held by lane 0. Each step adds the value `offset`
// lanes up: 16, 8, 4, 2, 1. __shfl_down_sync moves registers between the lanes named by the mask
// (all 32 here) and waits for them, so there is no shared memory and no race.
template <class Op>
__device__ __forceinline__ float warp_reduce(float value)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        value = Op::combine(value, __shfl_down_sync(0xffffffffu, value, offset));
    }
    return value;
}
// ANCHOR_END: warp_reduce

// ANCHOR: block_reduce
// Reduces one value per thread to one value per block, valid in thread 0. blockDim.x must be a
// multiple of 32 (at most 1024). Each warp reduces its values with shuffles, lane 0 of each warp
// parks the result in one shared slot per warp, and warp 0 reduces those slots: one barrier in
// all. Calling it twice in one kernel needs a __syncthreads() in between (the slots are reused).
template <class Op>
__device__ __forceinline__ float block_reduce(float value)
{
    __shared__ float warp_results[32];
    const unsigned int lane = threadIdx.x % 32;
    const unsigned int warp = threadIdx.x / 32;

    value = warp_reduce<Op>(value);
    if (lane == 0) {
        warp_results[warp] = value;
    }
    __syncthreads();

    if (warp == 0) {
        value = (lane < blockDim.x / 32) ? warp_results[lane] : Op::identity();
        value = warp_reduce<Op>(value);
    }
    return value;
}
// ANCHOR_END: block_reduce

// ANCHOR: vec4_loads
// Combines this thread's share of input[0, n) in a grid-stride loop over 16-byte float4 loads, four
// of them in flight per iteration. The float4 loop needs 16-byte aligned addresses, so the first
// elements up to the first 16-byte boundary (the head, at most 3, for inputs that start inside a
// vector) and the last n % 4 after the vectors (the tail) are read one by one.
template <class Op>
__device__ __forceinline__ float combine4(float4 q)
{
    return Op::combine(Op::combine(q.x, q.y), Op::combine(q.z, q.w));
}

template <class Op>
__device__ __forceinline__ float thread_reduce_vec4(const float* __restrict__ input, size_t n)
{
    const size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t threads = (size_t)gridDim.x * blockDim.x;

    const size_t misaligned = (reinterpret_cast<unsigned long long>(input) / sizeof(float)) % 4;
    const size_t head = misaligned == 0 ? 0 : (4 - misaligned < n ? 4 - misaligned : n);
    const size_t vectors = (n - head) / 4;
    const float4* __restrict__ vec = reinterpret_cast<const float4*>(input + head);

    float acc = Op::identity();
    size_t v = thread;
    for (; v + 3 * threads < vectors; v += 4 * threads) {
        const float4 a = vec[v];
        const float4 b = vec[v + threads];
        const float4 c = vec[v + 2 * threads];
        const float4 d = vec[v + 3 * threads];
        acc = Op::combine(acc, Op::combine(Op::combine(combine4<Op>(a), combine4<Op>(b)),
                                           Op::combine(combine4<Op>(c), combine4<Op>(d))));
    }
    for (; v < vectors; v += threads) {
        acc = Op::combine(acc, combine4<Op>(vec[v]));
    }

    if (thread < head) {
        acc = Op::combine(acc, input[thread]);
    }
    const size_t tail = head + 4 * vectors + thread;
    if (tail < n) {
        acc = Op::combine(acc, input[tail]);
    }
    return acc;
}
// ANCHOR_END: vec4_loads
