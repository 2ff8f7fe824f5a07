// reduce-shuffle: step 5 of the reduction ladder. The tree in shared memory is gone: warps reduce
// in registers with __shfl_down_sync, and shared memory holds one value per warp (see
// block_reduce.cuh). Loads keep reduce-unroll's fixed grid-stride shape.
//
// Launch: blockDim.x = 256, no dynamic shared memory, any gridDim.x (the launcher uses 8 blocks per
// SM). 64-bit loop indices; the launcher passes n < 2^32.
#include "block_reduce.cuh"

// ANCHOR: kernel
// reduce_shuffle: reduce_grid_stride's loads (4 bytes each; the compiler unrolls the signed-index
// loop four times), then block_reduce.
// What it leaves slow: 4-byte loads. A warp's load brings 128 bytes, so keeping the memory busy
// takes many load instructions in flight per SM; 16-byte loads bring four times as much per
// instruction.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_shuffle(const float* __restrict__ input, float* __restrict__ partial, unsigned int n)
{
    float sum = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        sum += input[i];
    }

    sum = block_reduce<Sum<float>>(sum);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum;
    }
}
// ANCHOR_END: kernel

// ANCHOR: vec4
// reduce_shuffle_vec4: the final step. Each thread reads 16 bytes per load and has four loads in
// flight per loop iteration (thread_reduce_vec4), then block_reduce. The loop is now limited by
// memory bandwidth alone.
template <class Op>
__device__ __forceinline__ void reduce_vec4(const float* __restrict__ input,
                                            float* __restrict__ partial, unsigned int n)
{
    float value = thread_reduce_vec4<Op>(input, n);
    value = block_reduce<Op>(value);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = value;
    }
}

extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_shuffle_vec4(const float* __restrict__ input, float* __restrict__ partial,
                        unsigned int n)
{
    reduce_vec4<Sum<float>>(input, partial, n);
}
// ANCHOR_END: vec4

// ANCHOR: extremes
// The same kernel shape for max and min: only the operation changes.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_max_vec4(const float* __restrict__ input, float* __restrict__ partial, unsigned int n)
{
    reduce_vec4<Max<float>>(input, partial, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_min_vec4(const float* __restrict__ input, float* __restrict__ partial, unsigned int n)
{
    reduce_vec4<Min<float>>(input, partial, n);
}
// ANCHOR_END: extremes

// ANCHOR: argmax
// argmax: the largest value and the index of its first occurrence. A candidate is a (value, index)
// pair; NaN beats every number (as in Max<float>), and between equal values (or two NaNs) the
// smaller index wins, so the result is the first maximum whatever order the threads combine in.
// Unused threads hold (-inf, 0xffffffff), which loses to every real element, even a -inf one.
struct Candidate {
    float value;
    unsigned int index;
};

__device__ __forceinline__ Candidate better(Candidate a, Candidate b)
{
    const bool a_nan = a.value != a.value;
    const bool b_nan = b.value != b.value;
    if (a_nan != b_nan) {
        return a_nan ? a : b;
    }
    if (!a_nan && a.value != b.value) {
        return a.value > b.value ? a : b;
    }
    return a.index <= b.index ? a : b;
}

__device__ __forceinline__ Candidate warp_argmax(Candidate c)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        Candidate other;
        other.value = __shfl_down_sync(0xffffffffu, c.value, offset);
        other.index = __shfl_down_sync(0xffffffffu, c.index, offset);
        c = better(c, other);
    }
    return c;
}

// Scalar grid-stride loads: each element needs its index, and the vectorised form gains little
// once the comparison work per element dominates.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_argmax(const float* __restrict__ input, float* __restrict__ partial_value,
                  unsigned int* __restrict__ partial_index, unsigned int n)
{
    __shared__ Candidate warp_results[32];
    const unsigned int lane = threadIdx.x % 32;
    const unsigned int warp = threadIdx.x / 32;

    Candidate best = {__int_as_float(0xff800000), 0xffffffffu};
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        best = better(best, Candidate{input[i], (unsigned int)i});
    }

    best = warp_argmax(best);
    if (lane == 0) {
        warp_results[warp] = best;
    }
    __syncthreads();
    if (warp == 0) {
        Candidate none = {__int_as_float(0xff800000), 0xffffffffu};
        best = warp_argmax(lane < blockDim.x / 32 ? warp_results[lane] : none);
        if (lane == 0) {
            partial_value[blockIdx.x] = best.value;
            partial_index[blockIdx.x] = best.index;
        }
    }
}
// ANCHOR_END: argmax
