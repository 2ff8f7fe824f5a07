// reduce-multi-level: the whole reduction on the device, by launching the block reduction again on
// its own partial results until one value remains.
//
// Every pass is the same kernel shape as reduce-shuffle's final step (16-byte grid-stride loads,
// shuffle block reduction, one value per block), instantiated per operation and element type.
// The launcher plans the passes: the first fills the GPU once (8 blocks of 256 threads per SM) and
// leaves one value per block; a second, single-block pass reduces those to the result. Only the
// final value is ever read by the host.
//
// What changed from reduce-shuffle: the block values are reduced on the device, by the same kernel
// launched again, instead of being copied to the host and added there.
//
// What it leaves slow: the second launch, a few microseconds at any size, most of the time on
// small inputs; reduce-atomic finishes in the first launch instead.
//
// Launch: blockDim.x = 256, no dynamic shared memory, any gridDim.x; n is 64-bit, so inputs of more
// than 2^32 elements work.
#include "block_reduce.cuh"

// ANCHOR: pass
template <class Op>
__device__ __forceinline__ void reduce_pass(const typename Op::Input* __restrict__ input,
                                            typename Op::Value* __restrict__ output,
                                            unsigned long long n)
{
    typename Op::Value value = thread_reduce_vec4<Op>(input, n);
    value = block_reduce<Op>(value);
    if (threadIdx.x == 0) {
        output[blockIdx.x] = value;
    }
}
// ANCHOR_END: pass

// The entry points: one per (operation, input type), multi_level_<op>_<type>. The wide sums add
// 32-bit integers in 64 bits (for the mean).
typedef Sum<int, long long> WideSumI32;
typedef Sum<unsigned int, unsigned long long> WideSumU32;

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_sum_f32(const float* __restrict__ input, float* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Sum<float>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_min_f32(const float* __restrict__ input, float* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Min<float>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_max_f32(const float* __restrict__ input, float* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Max<float>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_sum_i32(const int* __restrict__ input, int* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Sum<int>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_min_i32(const int* __restrict__ input, int* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Min<int>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_max_i32(const int* __restrict__ input, int* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Max<int>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_sum_u32(const unsigned int* __restrict__ input, unsigned int* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Sum<unsigned int>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_min_u32(const unsigned int* __restrict__ input, unsigned int* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Min<unsigned int>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_max_u32(const unsigned int* __restrict__ input, unsigned int* __restrict__ output,
                        unsigned long long n)
{
    reduce_pass<Max<unsigned int>>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_wide_sum_i32(const int* __restrict__ input, long long* __restrict__ output,
                             unsigned long long n)
{
    reduce_pass<WideSumI32>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_wide_sum_u32(const unsigned int* __restrict__ input,
                             unsigned long long* __restrict__ output, unsigned long long n)
{
    reduce_pass<WideSumU32>(input, output, n);
}

// Later passes over 64-bit partial sums: scalar loads (there are only a few thousand of them).
template <class T>
__device__ __forceinline__ void wide_pass(const T* __restrict__ input, T* __restrict__ output,
                                          unsigned long long n)
{
    T value = 0;
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += threads) {
        value = wrapping_add(value, input[i]);
    }
    value = block_reduce<Sum<T>>(value);
    if (threadIdx.x == 0) {
        output[blockIdx.x] = value;
    }
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_sum_i64(const long long* __restrict__ input, long long* __restrict__ output,
                        unsigned long long n)
{
    wide_pass<long long>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_sum_u64(const unsigned long long* __restrict__ input,
                        unsigned long long* __restrict__ output, unsigned long long n)
{
    wide_pass<unsigned long long>(input, output, n);
}

// ANCHOR: dot
// The dot product's first pass: products summed per block. Later passes are multi_level_sum_f32.
extern "C" __global__ void __launch_bounds__(256, 8)
    multi_level_dot_f32(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ output, unsigned long long n)
{
    float value = block_reduce<Sum<float>>(thread_dot(a, b, n));
    if (threadIdx.x == 0) {
        output[blockIdx.x] = value;
    }
}
// ANCHOR_END: dot

// ANCHOR: rows
// Batched reduction of a row-major (rows, cols) matrix to one sum per row, in two shapes.
//
// Many short rows (cols <= 2048): one warp per row, 8 rows per 256-thread block. Each lane reads
// its share of the row with 16-byte loads and the warp reduces with shuffles: no shared memory, no
// barrier, and thousands of rows in flight at once.
extern "C" __global__ void __launch_bounds__(256)
    reduce_short_rows_sum_f32(const float* __restrict__ input, float* __restrict__ output,
                              unsigned long long rows, unsigned long long cols)
{
    const unsigned int lane = threadIdx.x % 32;
    const unsigned long long row =
        (unsigned long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) {
        return; // the whole warp leaves together: all its lanes share the row
    }
    float value = range_reduce_vec4<Sum<float>>(input + row * cols, cols, lane, 32);
    value = warp_reduce<Sum<float>>(value);
    if (lane == 0) {
        output[row] = value;
    }
}

// Longer rows: block b sums chunk b % chunks of row b / chunks. Each row is cut into `chunks`
// pieces of `width` columns (a multiple of 4, so every chunk starts on the row's own 16-byte
// alignment). With chunks = 1 this is one block per row; with chunks > 1 the launcher reduces the
// (rows, chunks) partial sums again with this kernel and chunks = 1 (few long rows: the reshape
// (rows * chunks, cols / chunks)). The grid is rows * chunks blocks, so rows * chunks < 2^31.
extern "C" __global__ void __launch_bounds__(256, 8)
    reduce_rows_sum_f32(const float* __restrict__ input, float* __restrict__ output,
                        unsigned long long rows, unsigned long long cols, unsigned long long chunks)
{
    const unsigned long long row = blockIdx.x / chunks;
    const unsigned long long chunk = blockIdx.x % chunks;
    const unsigned long long width = ((cols + chunks - 1) / chunks + 3) / 4 * 4;
    const unsigned long long begin = chunk * width < cols ? chunk * width : cols;
    const unsigned long long end = begin + width < cols ? begin + width : cols;

    float value = 0.0f;
    if (row < rows) {
        value = range_reduce_vec4<Sum<float>>(input + row * cols + begin, end - begin, threadIdx.x,
                                              blockDim.x);
    }
    value = block_reduce<Sum<float>>(value);
    if (threadIdx.x == 0) {
        output[blockIdx.x] = value;
    }
}
// ANCHOR_END: rows
