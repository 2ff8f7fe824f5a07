// reduce-interleaved: step 2 of the reduction ladder. Two kernels, in the order the book shows
// them.
//
// Both keep reduce-naive's shape (one element per thread, a tree in shared memory, one partial per
// block) and change only how the tree picks its active threads.
//
// Launch: blockDim.x a power of two, blockDim.x * sizeof(float) bytes of dynamic shared memory,
// gridDim.x = ceil(n / blockDim.x). 32-bit indexing: the launcher rejects n >= 2^32.

// ANCHOR: strided_index
// reduce_strided_index: the divergent modulo is replaced by a strided index. At stride s, threads
// 0, 1, 2, ... add the pair starting at 2*s*tid, so the active threads are the first ones of the
// block and whole warps go idle together: no more divergence inside warps that still work.
// What it leaves slow: shared-memory bank conflicts. Thread tid touches sdata[2*s*tid]; at s = 1
// two threads of a warp hit each of 16 banks (2-way conflict), at s = 2 four (4-way), and so on, so
// each access is split into several shared-memory wavefronts.
extern "C" __global__ void reduce_strided_index(const float* __restrict__ input,
                                                float* __restrict__ partial, unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

    sdata[tid] = (i < n) ? input[i] : 0.0f;
    __syncthreads();

    // ANCHOR: solution the same tree as reduce_naive, but thread tid adds the pair that starts at 2 * stride * tid, so the working threads are the first ones of the block
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        unsigned int index = 2 * stride * tid;
        if (index < blockDim.x) {
            sdata[index] += sdata[index + stride];
        }
        __syncthreads();
    }
    // ANCHOR_END: solution

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: strided_index

// ANCHOR: kernel
// reduce_interleaved: sequential addressing. The stride starts at half the block and halves each
// round; thread tid adds sdata[tid + stride] to sdata[tid]. The active threads are contiguous
// (whole warps retire together, no divergence inside a working warp) and a warp reads 32
// consecutive words (no bank conflicts).
// What it leaves slow: half the threads only load and then idle through the whole tree, and every
// round still costs a block-wide barrier, even when a single warp is working.
extern "C" __global__ void reduce_interleaved(const float* __restrict__ input,
                                              float* __restrict__ partial, unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

    sdata[tid] = (i < n) ? input[i] : 0.0f;
    __syncthreads();

    // ANCHOR: tree
    // ANCHOR: solution sequential addressing: the stride starts at half the block and halves each round; thread tid < stride adds sdata[tid + stride] to sdata[tid]
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }
    // ANCHOR_END: solution
    // ANCHOR_END: tree

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: kernel
