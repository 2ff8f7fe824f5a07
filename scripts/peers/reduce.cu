// Peers of the reduction family, measured by the tour in the same run as the course's steps:
//
// - NVIDIA CUB's DeviceReduce::Sum over f32 (the library a reduction is judged against);
// - the kernels of seed 004, the document the ladder was created from, as it gives them (block of
//   256 threads; grid-stride kernels on SMs x 8 blocks). They are the seed's code, transcribed for
//   measurement only, with their `int` indices: they are not the course's kernels, and are correct
//   only for n < 2^31 - (grid size). The warp-unroll kernels rely on implicit warp synchrony
//   (`volatile`), a data race since Volta (see the reduce-unroll chapter); they are measured as
//   written.
//
// Each seed kernel writes one partial per block; seed004_<kernel>_partials(n) says how many, and
// the tour adds them on the host, as it does for the course's host-finished steps.
#include <cub/device/device_reduce.cuh>

#include "peers.cuh"

PEER int cub_reduce_sum_f32(const float* input, float* result, long long n, void* temp,
                            unsigned long long* temp_bytes, void* stream)
{
    size_t bytes = *temp_bytes;
    cudaError_t status =
        cub::DeviceReduce::Sum(temp, bytes, input, result, n, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}

// ---- seed 004's kernels, as the seed writes them ----

__global__ void seed_reduce_naive(float* g_data, float* g_result, int n)
{
    extern __shared__ float sdata[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_data[i] : 0;
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        g_result[blockIdx.x] = sdata[0];
    }
}

__global__ void seed_reduce_interleaved(float* g_data, float* g_result, int n)
{
    extern __shared__ float sdata[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_data[i] : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        g_result[blockIdx.x] = sdata[0];
    }
}

__global__ void seed_reduce_first_add(float* g_data, float* g_result, int n)
{
    extern __shared__ float sdata[];
    int tid = threadIdx.x;
    int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float sum = 0;
    if (i < n)
        sum += g_data[i];
    if (i + blockDim.x < n)
        sum += g_data[i + blockDim.x];
    sdata[tid] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        g_result[blockIdx.x] = sdata[0];
    }
}

__global__ void seed_reduce_grid_stride(float* g_data, float* g_result, int n)
{
    extern __shared__ float sdata[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int gridSize = blockDim.x * gridDim.x;
    float sum = 0;
    while (i < n) {
        sum += g_data[i];
        i += gridSize;
    }
    sdata[tid] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        g_result[blockIdx.x] = sdata[0];
    }
}

__device__ void seed_warp_reduce(volatile float* sdata, int tid)
{
    sdata[tid] += sdata[tid + 32];
    sdata[tid] += sdata[tid + 16];
    sdata[tid] += sdata[tid + 8];
    sdata[tid] += sdata[tid + 4];
    sdata[tid] += sdata[tid + 2];
    sdata[tid] += sdata[tid + 1];
}

__global__ void seed_reduce_warp_unroll(float* g_data, float* g_result, int n)
{
    extern __shared__ float sdata[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    sdata[tid] = 0;
    if (i < n)
        sdata[tid] += g_data[i];
    if (i + blockDim.x < n)
        sdata[tid] += g_data[i + blockDim.x];
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (tid < stride) {
            sdata[tid] += sdata[tid + stride];
        }
        __syncthreads();
    }
    if (tid < 32) {
        seed_warp_reduce(sdata, tid);
    }
    if (tid == 0) {
        g_result[blockIdx.x] = sdata[0];
    }
}

template <unsigned int blockSize>
__global__ void seed_reduce_complete_unroll(float* g_data, float* g_result, int n)
{
    extern __shared__ float sdata[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockSize * 2 + threadIdx.x;
    sdata[tid] = 0;
    if (i < n)
        sdata[tid] += g_data[i];
    if (i + blockSize < n)
        sdata[tid] += g_data[i + blockSize];
    __syncthreads();
    if (blockSize >= 512) {
        if (tid < 256)
            sdata[tid] += sdata[tid + 256];
        __syncthreads();
    }
    if (blockSize >= 256) {
        if (tid < 128)
            sdata[tid] += sdata[tid + 128];
        __syncthreads();
    }
    if (blockSize >= 128) {
        if (tid < 64)
            sdata[tid] += sdata[tid + 64];
        __syncthreads();
    }
    if (tid < 32) {
        volatile float* smem = sdata;
        if (blockSize >= 64)
            smem[tid] += smem[tid + 32];
        if (blockSize >= 32)
            smem[tid] += smem[tid + 16];
        if (blockSize >= 16)
            smem[tid] += smem[tid + 8];
        if (blockSize >= 8)
            smem[tid] += smem[tid + 4];
        if (blockSize >= 4)
            smem[tid] += smem[tid + 2];
        if (blockSize >= 2)
            smem[tid] += smem[tid + 1];
    }
    if (tid == 0) {
        g_result[blockIdx.x] = sdata[0];
    }
}

__device__ float seed_warp_reduce_sum(float val)
{
    for (int offset = 16; offset > 0; offset /= 2) {
        val += __shfl_down_sync(0xffffffff, val, offset);
    }
    return val;
}

__global__ void seed_reduce_shuffle(float* g_data, float* g_result, int n)
{
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int gridSize = blockDim.x * gridDim.x;
    float sum = 0;
    while (i < n) {
        sum += g_data[i];
        i += gridSize;
    }
    sum = seed_warp_reduce_sum(sum);
    __shared__ float warpSums[32];
    int lane = tid % 32;
    int wid = tid / 32;
    if (lane == 0) {
        warpSums[wid] = sum;
    }
    __syncthreads();
    if (wid == 0) {
        sum = (tid < blockDim.x / 32) ? warpSums[lane] : 0;
        sum = seed_warp_reduce_sum(sum);
        if (tid == 0) {
            g_result[blockIdx.x] = sum;
        }
    }
}

// ---- how the seed launches them: 256 threads, one or two elements per thread, or SMs x 8 blocks
// ----

static long long one_per_thread(long long n)
{
    return (n + 255) / 256;
}
static long long two_per_thread(long long n)
{
    return (n + 511) / 512;
}
static long long fill_the_gpu(long long)
{
    return 8LL * peer_multiprocessors();
}

#define SEED_PEER(NAME, KERNEL, BLOCKS, SHARED)                                                    \
    PEER long long seed004_##NAME##_partials(long long n)                                          \
    {                                                                                              \
        return n > 0 ? BLOCKS(n) : 0;                                                              \
    }                                                                                              \
    PEER int seed004_##NAME(const float* input, float* partials, long long n, void* stream)        \
    {                                                                                              \
        if (n <= 0 || n >= (1LL << 31))                                                            \
            return (int)cudaErrorInvalidValue;                                                     \
        KERNEL<<<(unsigned int)BLOCKS(n), 256, SHARED, (cudaStream_t)stream>>>((float*)input,      \
                                                                               partials, (int)n);  \
        return (int)cudaGetLastError();                                                            \
    }

SEED_PEER(naive, seed_reduce_naive, one_per_thread, 256 * sizeof(float))
SEED_PEER(interleaved, seed_reduce_interleaved, one_per_thread, 256 * sizeof(float))
SEED_PEER(first_add, seed_reduce_first_add, two_per_thread, 256 * sizeof(float))
SEED_PEER(grid_stride, seed_reduce_grid_stride, fill_the_gpu, 256 * sizeof(float))
SEED_PEER(warp_unroll, seed_reduce_warp_unroll, two_per_thread, 256 * sizeof(float))
SEED_PEER(complete_unroll, seed_reduce_complete_unroll<256>, two_per_thread, 256 * sizeof(float))
SEED_PEER(shuffle, seed_reduce_shuffle, fill_the_gpu, 0)
