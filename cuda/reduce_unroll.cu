// reduce-unroll: step 4 of the reduction ladder. Loads as in reduce_grid_stride (a fixed grid, each
// thread adding many elements); what changes is the end of the tree.
//
// Launch: blockDim.x = 256 (BLOCK_SIZE), 1024 bytes of dynamic shared memory for the first two
// kernels (reduce_complete_unroll declares its own), any gridDim.x.

// ANCHOR: volatile_racy
// reduce_unroll_volatile_racy: the classic last-warp unroll. DEMONSTRATION ONLY: it is a data race
// on Volta and later GPUs, and no launcher uses it except the volatile_race example.
// Once 32 or fewer threads are active they all belong to warp 0, and the classic code dropped the
// barriers there, trusting the warp to execute in lockstep and `volatile` to force each read from
// shared memory. Since Volta, the lanes of a warp are scheduled independently: nothing orders lane
// 1's read of sdata[17] after lane 17's write to it. compute-sanitizer's racecheck reports these
// hazards, and the compiler is free to reorder the lanes' accesses.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_unroll_volatile_racy(const float* __restrict__ input, float* __restrict__ partial,
                                unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;

    float sum = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + tid; i < n; i += stride) {
        sum += input[i];
    }
    sdata[tid] = sum;
    __syncthreads();

    for (unsigned int stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }

    if (tid < 32) {
        volatile float* vsmem = sdata;
        vsmem[tid] += vsmem[tid + 32];
        vsmem[tid] += vsmem[tid + 16];
        vsmem[tid] += vsmem[tid + 8];
        vsmem[tid] += vsmem[tid + 4];
        vsmem[tid] += vsmem[tid + 2];
        vsmem[tid] += vsmem[tid + 1];
    }

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: volatile_racy

// ANCHOR: last_warp
// The last six rounds of the tree, done by warp 0 alone, with no block-wide barrier. Each round
// reads, then (after __syncwarp) writes, then (after __syncwarp) moves on: __syncwarp() both waits
// for the warp's lanes and orders their shared-memory accesses, so no lane reads a slot another
// lane is still writing. Correct on every architecture; the barriers it replaces were block-wide.
__device__ __forceinline__ void last_warp_reduce(float* sdata, unsigned int tid)
{
    // ANCHOR: solution add sdata[0..64) into sdata[0] with warp 0 alone: offsets 32, 16, ..., 1, each read then write separated by __syncwarp()
    float value = sdata[tid] + sdata[tid + 32];
    __syncwarp();
    sdata[tid] = value;
    __syncwarp();
    for (unsigned int offset = 16; offset > 0; offset >>= 1) {
        value += sdata[tid + offset];
        __syncwarp();
        sdata[tid] = value;
        __syncwarp();
    }
    // ANCHOR_END: solution
}
// ANCHOR_END: last_warp

// ANCHOR: kernel
// reduce_unroll_last_warp: the tree runs with block-wide barriers only while more than one warp is
// active (rounds at strides 128 and 64 for a 256-thread block), then warp 0 finishes alone with
// last_warp_reduce. Six of the eight __syncthreads() are gone.
// What it leaves slow: the tree loop still tests and branches on a run-time blockDim.x.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_unroll_last_warp(const float* __restrict__ input, float* __restrict__ partial,
                            unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;

    float sum = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + tid; i < n; i += stride) {
        sum += input[i];
    }
    sdata[tid] = sum;
    __syncthreads();

    for (unsigned int stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }

    if (tid < 32) {
        last_warp_reduce(sdata, tid);
    }

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: kernel

// ANCHOR: complete
// reduce_complete_unroll: the block size is a compile-time constant (the launcher compiles this
// file with -DBLOCK_SIZE=256), so the loop over strides has a known trip count and is unrolled
// completely: no loop counter, no stride arithmetic, and rounds that cannot apply to this block
// size vanish at compile time. The shared array is sized statically.
// What it leaves slow: the tree still goes through shared memory, with a barrier per round while
// several warps are active, and each thread issues one 4-byte load at a time.
#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif
static_assert(BLOCK_SIZE >= 64 && BLOCK_SIZE <= 1024 && (BLOCK_SIZE & (BLOCK_SIZE - 1)) == 0,
              "BLOCK_SIZE must be a power of two from 64 to 1024");

extern "C" __global__ void __launch_bounds__(BLOCK_SIZE, 2048 / BLOCK_SIZE)
    reduce_complete_unroll(const float* __restrict__ input, float* __restrict__ partial,
                           unsigned int n)
{
    __shared__ float sdata[BLOCK_SIZE];

    unsigned int tid = threadIdx.x;

    float sum = 0.0f;
    long long stride = (long long)gridDim.x * BLOCK_SIZE;
    for (long long i = (long long)blockIdx.x * BLOCK_SIZE + tid; i < n; i += stride) {
        sum += input[i];
    }
    sdata[tid] = sum;
    __syncthreads();

    // ANCHOR: solution the rounds at strides BLOCK_SIZE / 2 down to 64, unrolled by the compiler (the block size is a compile-time constant), a barrier after each
#pragma unroll
    for (unsigned int stride = BLOCK_SIZE / 2; stride > 32; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }
    // ANCHOR_END: solution

    if (tid < 32) {
        last_warp_reduce(sdata, tid);
    }

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: complete
