// reduce-first-add: step 3 of the reduction ladder. Two kernels, in the order the book shows them.
//
// reduce-interleaved leaves half its threads idle after the load: the first tree round uses only
// blockDim.x / 2 of them. These kernels give every thread real work before the tree starts.
// The tree itself is reduce-interleaved's, unchanged.

// ANCHOR: first_add
// reduce_first_add: each thread loads two elements, blockDim.x apart, and adds them while loading.
// A block now covers 2 * blockDim.x elements, so half as many blocks run, and no thread is idle
// when the tree starts.
// What it leaves slow: still one short-lived block per 512 elements; each block pays its launch,
// its barriers and its tree for very little loading, so the loads come in bursts.
// Launch: blockDim.x a power of two, blockDim.x * 4 bytes of dynamic shared memory,
// gridDim.x = ceil(n / (2 * blockDim.x)). 32-bit indexing: n < 2^32.
extern "C" __global__ void reduce_first_add(const float* __restrict__ input,
                                            float* __restrict__ partial, unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;

    float sum = (i < n) ? input[i] : 0.0f;
    // ANCHOR: solution add the block's second element, blockDim.x further on, when it is in range
    if (i + blockDim.x < n) {
        sum += input[i + blockDim.x];
    }
    // ANCHOR_END: solution
    sdata[tid] = sum;
    __syncthreads();

    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: first_add

// ANCHOR: kernel
// reduce_grid_stride: a fixed grid, sized by the launcher to fill the GPU once (8 blocks of 256
// threads per SM), loops over the input in strides of the whole grid, each thread adding many
// elements into a register before the tree. The tree and its barriers now run once per
// thread-block for the whole input, and the partials shrink to a few per SM.
//
// The loop index is a signed 64-bit integer. Signed overflow is undefined in C++, so the compiler
// may assume `i += stride` never wraps: it computes how many iterations each thread makes and
// unrolls the loop four times, issuing four independent loads before it needs the first. With an
// unsigned index (reduce_grid_stride_unsigned_index, below) the compiler must allow for
// wrap-around, cannot count the iterations, and keeps one 4-byte load in flight per thread. 64
// bits, so no index wraps for any n < 2^32.
// What it leaves slow: the tree itself (8 rounds, 8 barriers, most warps idle in the last rounds)
// is now the largest fixed cost per block.
// Launch: blockDim.x = 256, 1024 bytes of dynamic shared memory, any gridDim.x; n < 2^32.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_grid_stride(const float* __restrict__ input, float* __restrict__ partial, unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;

    // ANCHOR: loop
    float sum = 0.0f;
    // ANCHOR: solution add every element i = first, first + stride, ... below n into sum, where first is the thread's global index and stride the whole grid's threads; a signed 64-bit index, so the compiler unrolls
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + tid; i < n; i += stride) {
        sum += input[i];
    }
    // ANCHOR_END: solution
    // ANCHOR_END: loop
    sdata[tid] = sum;
    __syncthreads();

    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: kernel

// ANCHOR: unsigned_index
// reduce_grid_stride_unsigned_index: reduce_grid_stride with an unsigned 64-bit loop index, the
// form this step had before: equally correct, but unsigned arithmetic wraps by definition, so the
// compiler cannot rule out `i += stride` wrapping past n and cannot count the iterations. It keeps
// the loop as written, one load then one add, one 4-byte load in flight per thread. Not a step of
// the ladder: the chapter measures it to show what the index type costs.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_grid_stride_unsigned_index(const float* __restrict__ input, float* __restrict__ partial,
                                      unsigned int n)
{
    extern __shared__ float sdata[];

    unsigned int tid = threadIdx.x;

    // ANCHOR: unsigned_loop
    float sum = 0.0f;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + tid; i < n; i += stride) {
        sum += input[i];
    }
    // ANCHOR_END: unsigned_loop
    sdata[tid] = sum;
    __syncthreads();

    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }

    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}
// ANCHOR_END: unsigned_index
