// reduce-naive: step 1 of the reduction ladder.
//
// What it does: each block loads one element per thread into shared memory, then adds the block's
// values as a tree of interleaved pairs. At stride s, every thread whose index is a multiple of
// 2*s adds the value s places to its right; after log2(blockDim.x) rounds sdata[0] holds the
// block's sum, which thread 0 writes to partial[blockIdx.x]. The host adds the partials.
//
// What it leaves slow: the test `tid % (2 * stride) == 0` picks threads scattered over every warp.
// At stride 1 half the lanes of each warp are idle, at stride 2 three quarters, and so on, yet
// every warp that has one active lane still issues the whole step (warp divergence). The modulo
// is a slow integer operation, and half the threads do nothing after their load.
// reduce-interleaved keeps the active threads contiguous instead.
//
// Launch: blockDim.x a power of two, blockDim.x * sizeof(float) bytes of dynamic shared memory,
// gridDim.x = ceil(n / blockDim.x). 32-bit indexing: the launcher rejects n >= 2^32.

// ANCHOR: kernel
extern "C" __global__ void reduce_naive(const float* __restrict__ input,
                                        float* __restrict__ partial, unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

    // Each thread loads one element; threads past the end load the identity of +.
    sdata[tid] = (i < n) ? input[i] : 0.0f;
    __syncthreads();

    // ANCHOR: tree
    // ANCHOR: solution add the block's values into sdata[0]: rounds of interleaved pairs (stride 1, 2, 4, ...), chosen by tid % (2 * stride), with a barrier after each round
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) {
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
