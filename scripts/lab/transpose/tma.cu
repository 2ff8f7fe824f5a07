// Can Hopper's Tensor Memory Accelerator (TMA) make the transpose faster than cuBLAS? The chapter's
// step 6 (wide tiles) runs level with cuBLAS's Sgeam, at about 95.5% of the device copy; this
// program tries tiles that come into shared memory by one `cp.async.bulk.tensor` (a 2-D box of a
// CUtensorMap, completing on an mbarrier), in three families:
//
//   load+thread   one tile per block: a TMA load, then the threads read the tile transposed out of
//                 shared memory and write the output rows themselves (16-byte stores)
//   load+tma      one tile per block: a TMA load, the threads transpose the tile into a second
//                 shared buffer, one thread writes it out with a TMA store
//   persist       persistent blocks (as many as fit on the GPU at once), each walking many tiles
//                 through STAGES shared buffers, so the TMA loads of the next tiles overlap the
//                 transpose and store of the current one; stores by threads (thr) or by TMA (tma)
//
// plus a TMA copy (load and store the same tile, no transpose: the roof of the TMA path), beside
// the device copy (cudaMemcpy, the roof), cuBLAS's Sgeam (C = A^T, beta 0, with B = C and with
// B = NULL) and the chapter's wide-tiles kernel, at 16384 x 16384 and 8192 x 8192 f32 (or at the
// one shape given as `rows cols`, multiples of 128). Every variant is checked against the expected
// transpose on the host, bit for bit and in full, before it is timed (WRONG and no time if not).
// Times are the median of three runs of tuning.cuh's median_ms (each the median of 15 batches of
// CUDA-event timings); `spread` is (slowest - fastest) / median of the three. Columns: registers
// per thread and blocks per SM (-: not our kernel; a persistent grid is that many blocks per SM),
// ms, GB/s (2 x bytes / time), the speed as a % of the device copy's (copy time / time), and
// cuBLAS's time (the faster geam) / the variant's (> 1: faster than cuBLAS; the goal is 1.03).
//
// Built and run from the repository's root (the build command is one line):
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o tma
//        scripts/lab/transpose/tma.cu -lcublas -lcuda
//   ./tma              (or ./tma 16384 8192)
//
// The kernels alone also compile with NVRTC (which defines __CUDACC_RTC__ and sees no host code):
// the RTC-only list of instantiations near the end of the device part makes it compile each one.
#ifndef __CUDACC_RTC__
#include <cublas_v2.h>
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../common/tuning.cuh"
#else
// NVRTC has no <cuda.h>; the device code only needs the tensor map's size and alignment.
struct alignas(64) CUtensorMap {
    unsigned long long opaque[16];
};
#endif

#include "../../../cuda/transpose.cu"

// ---------------------------------------------------------------------------------------------
// The instructions, as inline PTX (sm_90).

__device__ __forceinline__ unsigned smem_at(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// An mbarrier in shared memory expecting `count` arrivals per phase.
__device__ __forceinline__ void bar_init(unsigned long long* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_at(bar)), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the TMA unit (the async proxy).
__device__ __forceinline__ void bar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// The calling thread's arrival, announcing `bytes` more bytes that copies will count off.
__device__ __forceinline__ void bar_arrive_expect(unsigned long long* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_at(bar)), "r"(bytes)
                 : "memory");
}

// Whether the barrier's phase of parity `parity` has completed (phase n has parity n % 2); the
// instruction itself waits a while before it answers no.
__device__ __forceinline__ bool bar_try_wait(unsigned long long* bar, unsigned parity)
{
    unsigned landed;
    asm volatile("{\n"
                 " .reg .pred p;\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n"
                 "}"
                 : "=r"(landed)
                 : "r"(smem_at(bar)), "r"(parity)
                 : "memory");
    return landed != 0;
}

// Spins until the phase has completed. A load that never lands (a mistake in this experiment)
// traps after about 2^32 cycles (2 s or so) instead of hanging the run: the launch then fails.
__device__ __forceinline__ void bar_wait(unsigned long long* bar, unsigned parity)
{
    if (bar_try_wait(bar, parity)) {
        return;
    }
    const long long start = clock64();
    while (!bar_try_wait(bar, parity)) {
        if (clock64() - start > (1ll << 32)) {
            __trap();
        }
    }
}

// One thread: the TMA unit copies the box of `map` whose corner is element (x, y) (x the inner,
// contiguous coordinate) into shared memory at `to`, counting its bytes off `bar`.
__device__ __forceinline__ void tma_load(float* to, const CUtensorMap* map, int x, int y, unsigned long long* bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_at(to)),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(x), "r"(y), "r"(smem_at(bar))
                 : "memory");
}

// One thread: the TMA unit copies the box at `from` in shared memory to the box of `map` whose
// corner is (x, y), as part of this thread's current bulk group.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, int x, int y, const float* from)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(x), "r"(y), "r"(smem_at(from))
                 : "memory");
}

// Closes this thread's current bulk group (the stores issued since the last commit).
__device__ __forceinline__ void tma_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Waits until at most N of this thread's bulk groups still read their shared memory source.
template <int N>
__device__ __forceinline__ void tma_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until at most N of this thread's bulk groups are still unfinished (writes included).
template <int N>
__device__ __forceinline__ void tma_wait_all()
{
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// Orders this thread's ordinary writes to shared memory before later TMA reads of it.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// ---------------------------------------------------------------------------------------------
// Tiles in shared memory.
//
// A tile of TR x TC floats (both multiples of 32) is held as TC / 32 strips of TR rows of 32
// floats (128 bytes, one TMA box of {32, TR} each): strip s holds the tile's columns 32s..32s+31.
// A row is eight 16-byte chunks. With the 128-byte swizzle (SW) the TMA unit stores chunk k of a
// row r at chunk k ^ (r % 8) (XOR of address bits 7-9 into bits 4-6, hence 1024-byte aligned
// strips); without it, at chunk k. The transposed tile (for a TMA store) is held the same way:
// TR / 32 strips of TC rows of 32 floats, strip q holding the output columns of the input rows
// 32q..32q+31.
//
// Threads move 4 x 4 blocks: the rows 4a..4a+3 of the 32-row group q of the tile and its chunk b
// (columns 4b..4b+3) of strip s, with a and b in 0..7: four 16-byte shared loads, a transpose in
// registers, four 16-byte stores. Which lanes take which blocks decides the bank conflicts (a
// 16-byte access is served eight lanes at a time; eight lanes must touch eight different chunks).

// The float offset of chunk `chunk` of row `row` of a strip.
template <bool SW>
__device__ __forceinline__ int chunk_at(int row, int chunk)
{
    return row * 32 + 4 * (SW ? chunk ^ (row & 7) : chunk);
}

// The block (q, s, a, b) of `tile`, transposed: w[i] is column 4b + i of its four rows.
template <int TR, bool SW>
__device__ __forceinline__ void transposed_block(const float* tile, int q, int s, int a, int b, float4 (&w)[4])
{
    const float* strip = tile + s * TR * 32;
    float4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[j] = *reinterpret_cast<const float4*>(strip + chunk_at<SW>(32 * q + 4 * a + j, b));
    }
    w[0] = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
    w[1] = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
    w[2] = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
    w[3] = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
}

// The threads write the transposed tile (corner (r0, c0) of the input) to the output themselves.
//
// A warp task is half of a 32 x 32 piece (q, s): 32 blocks, a = 0..7 and four b's. Lane bits:
// bit 0 and bits 3-4 give a, bits 1-2 the low bits of b, the task's half the high bit. Each of the
// four 16-byte stores then writes four output rows (4b + i) of 128 bytes (eight a's): whole cache
// lines. Each eight lanes of a shared load hold two a's of opposite parity and four b's: with the
// swizzle, eight different chunks (without it, two lanes per chunk: a two-way conflict).
template <int TR, int TC, int THREADS, bool SW>
__device__ __forceinline__ void tile_to_global(const float* tile, float* __restrict__ out, int rows, int r0, int c0)
{
    constexpr int Q = TR / 32, TASKS = 2 * Q * (TC / 32), WARPS = THREADS / 32;
    static_assert(TR % 32 == 0 && TC % 32 == 0 && TASKS % WARPS == 0, "tile and threads do not divide");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int a = (lane & 1) | ((lane >> 3) << 1);
#pragma unroll
    for (int n = 0; n < TASKS / WARPS; ++n) {
        const int task = warp + n * WARPS;
        const int q = (task >> 1) % Q, s = (task >> 1) / Q;
        const int b = ((lane >> 1) & 3) | ((task & 1) << 2);
        float4 w[4];
        transposed_block<TR, SW>(tile, q, s, a, b, w);
        float* dst = out + (size_t)(c0 + 32 * s + 4 * b) * rows + r0 + 32 * q + 4 * a;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            *reinterpret_cast<float4*>(dst + (size_t)i * rows) = w[i];
        }
    }
}

// The threads write the transposed tile into `result` (layout above), for a TMA store.
//
// Here both sides are shared memory, and global coalescing no longer matters: a warp task's eight
// lanes of one phase take the diagonal blocks (a, b) = (t ^ d, t), t = 0..7, d fixed, which touch
// eight different chunks on the load (b ^ (4a + j) % 8) and on the store (a ^ (4b + i) % 8), and
// without the swizzle too (b, then a, differ across the eight lanes).
template <int TR, int TC, int THREADS, bool SW>
__device__ __forceinline__ void tile_to_shared(const float* tile, float* result)
{
    constexpr int Q = TR / 32, TASKS = 2 * Q * (TC / 32), WARPS = THREADS / 32;
    static_assert(TR % 32 == 0 && TC % 32 == 0 && TASKS % WARPS == 0, "tile and threads do not divide");
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int t = lane & 7;
#pragma unroll
    for (int n = 0; n < TASKS / WARPS; ++n) {
        const int task = warp + n * WARPS;
        const int q = (task >> 1) % Q, s = (task >> 1) / Q;
        const int a = t ^ ((lane >> 3) | ((task & 1) << 2)), b = t;
        float4 w[4];
        transposed_block<TR, SW>(tile, q, s, a, b, w);
        float* strip = result + q * TC * 32;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            *reinterpret_cast<float4*>(strip + chunk_at<SW>(32 * s + 4 * b + i, a)) = w[i];
        }
    }
}

// One thread: the TMA loads of the tile with corner (r0, c0) (one box per strip), all counted off
// one barrier.
template <int TR, int TC>
__device__ __forceinline__ void load_tile(const CUtensorMap* map, float* tile, int r0, int c0, unsigned long long* bar)
{
    bar_arrive_expect(bar, TR * TC * 4);
#pragma unroll
    for (int s = 0; s < TC / 32; ++s) {
        tma_load(tile + s * TR * 32, map, c0 + 32 * s, r0, bar);
    }
}

// One thread: the TMA stores of a transposed tile (the input's corner (r0, c0)) to the output,
// whose map has boxes of {32, TC}: strip q goes to output rows c0.., columns r0 + 32q...
template <int TR, int TC>
__device__ __forceinline__ void store_tile(const CUtensorMap* map, const float* result, int r0, int c0)
{
#pragma unroll
    for (int q = 0; q < TR / 32; ++q) {
        tma_store(map, r0 + 32 * q, c0, result + q * TC * 32);
    }
}

// The corner (r0, c0) of tile t of a matrix `across` tiles wide and `down` tiles high: tiles in
// row-major order (along the input's rows first), or with DOWN in column-major order (down the
// input's columns first, so that the tiles in flight together write whole rows of the output).
template <int TR, int TC, bool DOWN>
__device__ __forceinline__ void tile_corner(int t, int across, int down, int& r0, int& c0)
{
    r0 = (DOWN ? t % down : t / across) * TR;
    c0 = (DOWN ? t / down : t % across) * TC;
}

// The dynamic shared memory, from its first 1024-byte boundary on (the launches ask for 1 KiB
// more than the tiles need).
__device__ __forceinline__ float* aligned_tiles(unsigned char* raw)
{
    return reinterpret_cast<float*>(raw + ((1024u - (smem_at(raw) & 1023u)) & 1023u));
}

// ---------------------------------------------------------------------------------------------
// The kernels. All take full tiles only (the host checks that the shape is a multiple of 128).
// `in_map` is the input's tensor map (dims {cols, rows}, boxes {32, TR}); `out_map` the output's
// (dims {rows, cols}, boxes {32, TC}; for the copy, the input's shape).

// (a) load+thread: one TR x TC tile per block, grid (cols / TC, rows / TR). Thread 0 starts the
// tile's TMA load; every thread waits for it on the barrier, then writes its blocks transposed.
template <int TR, int TC, int THREADS, bool SW>
__global__ void __launch_bounds__(THREADS)
    tma_load_thread_store(const __grid_constant__ CUtensorMap in_map, float* __restrict__ out, int rows)
{
    extern __shared__ unsigned char dynamic_smem[];
    __shared__ __align__(8) unsigned long long landed;
    float* tile = aligned_tiles(dynamic_smem);
    const int r0 = blockIdx.y * TR, c0 = blockIdx.x * TC;
    if (threadIdx.x == 0) {
        bar_init(&landed, 1);
        bar_init_fence();
        load_tile<TR, TC>(&in_map, tile, r0, c0, &landed);
    }
    __syncthreads();
    bar_wait(&landed, 0);
    tile_to_global<TR, TC, THREADS, SW>(tile, out, rows, r0, c0);
}

// (b) load+tma: one tile per block, grid (cols / TC, rows / TR). The TMA load as in (a); the
// threads transpose the tile into a second buffer, fence their writes for the async proxy, meet
// at the barrier; thread 0 stores the result with TMA and waits for the store before it exits.
template <int TR, int TC, int THREADS, bool SW>
__global__ void __launch_bounds__(THREADS)
    tma_load_tma_store(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map)
{
    extern __shared__ unsigned char dynamic_smem[];
    __shared__ __align__(8) unsigned long long landed;
    float* tile = aligned_tiles(dynamic_smem);
    float* result = tile + TR * TC;
    const int r0 = blockIdx.y * TR, c0 = blockIdx.x * TC;
    if (threadIdx.x == 0) {
        bar_init(&landed, 1);
        bar_init_fence();
        load_tile<TR, TC>(&in_map, tile, r0, c0, &landed);
    }
    __syncthreads();
    bar_wait(&landed, 0);
    tile_to_shared<TR, TC, THREADS, SW>(tile, result);
    fence_async_shared();
    __syncthreads();
    if (threadIdx.x == 0) {
        store_tile<TR, TC>(&out_map, result, r0, c0);
        tma_commit();
        tma_wait_all<0>();
    }
}

// (c) persist: a grid of (blocks per SM) x SMs blocks; block k takes tiles k, k + gridDim.x, ...
// in row-major tile order (the order of (a)'s grid), or column-major with DOWN. STAGES input
// buffers, each with its barrier: thread 0 starts the loads of the first STAGES tiles, and after
// the tile of a buffer has been read by every thread (the __syncthreads of each tile) starts the
// load of the tile STAGES ahead into it, so STAGES - 1 loads stay in flight while a tile is
// transposed. Stores by the threads (as (a)) or, with TMA_STORE, by TMA from two result buffers
// used in turn: before each tile's __syncthreads thread 0 waits until the previous tile's store
// has read its buffer, so the buffer the threads write next is free.
template <int TR, int TC, int STAGES, int THREADS, bool SW, bool TMA_STORE, bool DOWN>
__global__ void __launch_bounds__(THREADS)
    tma_persistent(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map,
                   float* __restrict__ out, int rows, int cols)
{
    constexpr int TILE_FLOATS = TR * TC;
    extern __shared__ unsigned char dynamic_smem[];
    __shared__ __align__(8) unsigned long long landed[STAGES];
    float* stages = aligned_tiles(dynamic_smem);
    float* results = stages + STAGES * TILE_FLOATS; // two transposed tiles, with TMA_STORE
    const int across = cols / TC, down = rows / TR, tiles = across * down;
    const int first = blockIdx.x, step = gridDim.x;
    const int mine = first < tiles ? (tiles - 1 - first) / step + 1 : 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(&landed[s], 1);
        }
        bar_init_fence();
        for (int k = 0; k < STAGES && k < mine; ++k) {
            int r0, c0;
            tile_corner<TR, TC, DOWN>(first + k * step, across, down, r0, c0);
            load_tile<TR, TC>(&in_map, stages + k * TILE_FLOATS, r0, c0, &landed[k]);
        }
    }
    __syncthreads();
    for (int k = 0; k < mine; ++k) {
        const int stage = k % STAGES;
        int r0, c0;
        tile_corner<TR, TC, DOWN>(first + k * step, across, down, r0, c0);
        float* tile = stages + stage * TILE_FLOATS;
        bar_wait(&landed[stage], (k / STAGES) & 1);
        if constexpr (TMA_STORE) {
            float* result = results + (k & 1) * TILE_FLOATS;
            tile_to_shared<TR, TC, THREADS, SW>(tile, result);
            fence_async_shared();
            if (threadIdx.x == 0) {
                tma_wait_read<0>(); // the store of tile k - 1 has read the other result buffer
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                store_tile<TR, TC>(&out_map, result, r0, c0);
                tma_commit();
            }
        } else {
            tile_to_global<TR, TC, THREADS, SW>(tile, out, rows, r0, c0);
            __syncthreads();
        }
        if (threadIdx.x == 0 && k + STAGES < mine) {
            int next_r0, next_c0;
            tile_corner<TR, TC, DOWN>(first + (k + STAGES) * step, across, down, next_r0, next_c0);
            load_tile<TR, TC>(&in_map, tile, next_r0, next_c0, &landed[stage]);
        }
    }
    if constexpr (TMA_STORE) {
        if (threadIdx.x == 0) {
            tma_wait_all<0>();
        }
    }
}

// The TMA copy (no transpose, the roof of the TMA path): persistent blocks of one warp, in which
// thread 0 alone walks its tiles through STAGES buffers: wait for a tile's load, store the buffer
// to the same place of the output with TMA, and once the previous tile's store has read its
// buffer, start the load of the tile STAGES after that one into it.
template <int TR, int TC, int STAGES>
__global__ void __launch_bounds__(32)
    tma_copy(const __grid_constant__ CUtensorMap in_map, const __grid_constant__ CUtensorMap out_map, int rows,
             int cols)
{
    constexpr int TILE_FLOATS = TR * TC;
    extern __shared__ unsigned char dynamic_smem[];
    __shared__ __align__(8) unsigned long long landed[STAGES];
    if (threadIdx.x != 0) {
        return;
    }
    float* stages = aligned_tiles(dynamic_smem);
    const int across = cols / TC, down = rows / TR, tiles = across * down;
    const int first = blockIdx.x, step = gridDim.x;
    const int mine = first < tiles ? (tiles - 1 - first) / step + 1 : 0;
    for (int s = 0; s < STAGES; ++s) {
        bar_init(&landed[s], 1);
    }
    bar_init_fence();
    for (int k = 0; k < STAGES && k < mine; ++k) {
        int r0, c0;
        tile_corner<TR, TC, false>(first + k * step, across, down, r0, c0);
        load_tile<TR, TC>(&in_map, stages + k * TILE_FLOATS, r0, c0, &landed[k]);
    }
    for (int k = 0; k < mine; ++k) {
        const int stage = k % STAGES;
        int r0, c0;
        tile_corner<TR, TC, false>(first + k * step, across, down, r0, c0);
        float* tile = stages + stage * TILE_FLOATS;
        bar_wait(&landed[stage], (k / STAGES) & 1);
        fence_async_shared();
#pragma unroll
        for (int s = 0; s < TC / 32; ++s) {
            tma_store(&out_map, c0 + 32 * s, r0, tile + s * TR * 32);
        }
        tma_commit();
        if (k >= 1 && k - 1 + STAGES < mine) {
            tma_wait_read<1>(); // the store of tile k - 1 has read its buffer: reload it
            const int before = (k - 1) % STAGES;
            int next_r0, next_c0;
            tile_corner<TR, TC, false>(first + (k - 1 + STAGES) * step, across, down, next_r0, next_c0);
            load_tile<TR, TC>(&in_map, stages + before * TILE_FLOATS, next_r0, next_c0, &landed[before]);
        }
    }
    tma_wait_all<0>();
}

#ifdef __CUDACC_RTC__
// For NVRTC: the instantiations the host code launches, so that a device-only compile covers them.
#define LTS(TR, TC, TH, SW)                                                                        \
    template __global__ void tma_load_thread_store<TR, TC, TH, SW>(const __grid_constant__ CUtensorMap, \
                                                                   float*, int);
#define LTT(TR, TC, TH, SW)                                                                        \
    template __global__ void tma_load_tma_store<TR, TC, TH, SW>(const __grid_constant__ CUtensorMap, \
                                                                const __grid_constant__ CUtensorMap);
#define PER(TR, TC, ST, TH, SW, TS, DOWN)                                                          \
    template __global__ void tma_persistent<TR, TC, ST, TH, SW, TS, DOWN>(                          \
        const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, float*, int, int);
LTS(32, 32, 64, true)
LTS(64, 32, 128, true)
LTS(64, 64, 256, true)
LTS(64, 64, 256, false)
LTS(64, 64, 128, true)
LTS(128, 64, 256, true)
LTS(64, 128, 256, true)
LTT(32, 32, 64, true)
LTT(64, 64, 256, true)
LTT(64, 64, 128, true)
LTT(64, 64, 256, false)
PER(64, 64, 2, 256, true, false, false)
PER(64, 64, 3, 256, true, false, false)
PER(64, 64, 4, 256, true, false, false)
PER(64, 32, 4, 128, true, false, false)
PER(128, 64, 2, 256, true, false, false)
PER(128, 64, 3, 256, true, false, false)
PER(64, 128, 2, 256, true, false, false)
PER(64, 64, 2, 256, true, true, false)
PER(64, 64, 3, 256, true, true, false)
PER(64, 64, 4, 256, true, true, false)
PER(64, 32, 4, 128, true, true, false)
PER(128, 64, 2, 256, true, true, false)
PER(64, 64, 3, 256, true, false, true)
PER(64, 64, 3, 256, true, true, true)
template __global__ void tma_copy<64, 64, 4>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap,
                                              int, int);
#endif

// ---------------------------------------------------------------------------------------------
// The host side.
#ifndef __CUDACC_RTC__

static int sms = 0;

// The matrix being transposed: `in` is rows x cols, `out` cols x rows, both row-major.
struct Matrix {
    float* in;
    float* out;
    int rows, cols;
};

// A row of the table: `prepare` builds the launch for one matrix (tensor maps, grid) once.
struct Variant {
    std::string name;
    bool transposed = true; // false: the output is a copy of the input
    int regs = -1, blocks_per_sm = -1;
    std::function<std::function<void()>(const Matrix&)> prepare;
};

// A tensor map over a row-major `outer x inner` f32 matrix at `base`, with boxes of 32 floats
// (128 bytes) by `box_outer` rows, swizzled by 128 bytes or not. Clears `ok` if the driver
// refuses it (and says why).
static CUtensorMap tensor_map(float* base, int inner, int outer, int box_outer, bool swizzle, bool& ok)
{
    CUtensorMap map;
    std::memset(&map, 0, sizeof map);
    const cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
    const cuuint64_t strides[1] = {(cuuint64_t)inner * sizeof(float)}; // bytes, for dims 1..rank-1
    const cuuint32_t box[2] = {32, (cuuint32_t)box_outer};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box,
                                              element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                              swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        std::printf("cuTensorMapEncodeTiled(%d x %d, box 32 x %d, swizzle %d) failed: CUresult %d\n", outer, inner,
                    box_outer, (int)swizzle, (int)r);
        ok = false;
    }
    return map;
}

// Allows the kernel its dynamic shared memory, and records its registers and blocks per SM (0,
// and the variant is skipped, if the runtime refuses).
template <typename Kernel>
static void describe(Variant& v, Kernel* kernel, int threads, size_t smem)
{
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    cudaFuncAttributes attr;
    if (e == cudaSuccess) {
        e = cudaFuncGetAttributes(&attr, kernel);
    }
    if (e == cudaSuccess) {
        v.regs = attr.numRegs;
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.blocks_per_sm, kernel, threads, smem);
    }
    if (e != cudaSuccess) {
        std::printf("%s: %s with %zu bytes of shared memory\n", v.name.c_str(), cudaGetErrorString(e), smem);
        (void)cudaGetLastError(); // not left for the next launch's check
        v.blocks_per_sm = 0;
    }
}

template <int TR, int TC, int THREADS, bool SW>
static Variant load_thread(const std::string& name)
{
    Variant v;
    v.name = name;
    const size_t smem = (size_t)TR * TC * 4 + 1024;
    describe(v, tma_load_thread_store<TR, TC, THREADS, SW>, THREADS, smem);
    v.prepare = [smem](const Matrix& m) -> std::function<void()> {
        bool ok = true;
        const CUtensorMap in_map = tensor_map(m.in, m.cols, m.rows, TR, SW, ok);
        if (!ok) {
            return {};
        }
        const dim3 grid(m.cols / TC, m.rows / TR);
        float* out = m.out;
        const int rows = m.rows;
        return [=] { tma_load_thread_store<TR, TC, THREADS, SW><<<grid, THREADS, smem>>>(in_map, out, rows); };
    };
    return v;
}

template <int TR, int TC, int THREADS, bool SW>
static Variant load_tma(const std::string& name)
{
    Variant v;
    v.name = name;
    const size_t smem = (size_t)2 * TR * TC * 4 + 1024;
    describe(v, tma_load_tma_store<TR, TC, THREADS, SW>, THREADS, smem);
    v.prepare = [smem](const Matrix& m) -> std::function<void()> {
        bool ok = true;
        const CUtensorMap in_map = tensor_map(m.in, m.cols, m.rows, TR, SW, ok);
        const CUtensorMap out_map = tensor_map(m.out, m.rows, m.cols, TC, SW, ok);
        if (!ok) {
            return {};
        }
        const dim3 grid(m.cols / TC, m.rows / TR);
        return [=] { tma_load_tma_store<TR, TC, THREADS, SW><<<grid, THREADS, smem>>>(in_map, out_map); };
    };
    return v;
}

template <int TR, int TC, int STAGES, int THREADS, bool SW, bool TMA_STORE, bool DOWN = false>
static Variant persistent(const std::string& name)
{
    Variant v;
    v.name = name;
    const size_t smem = (size_t)(STAGES + (TMA_STORE ? 2 : 0)) * TR * TC * 4 + 1024;
    describe(v, tma_persistent<TR, TC, STAGES, THREADS, SW, TMA_STORE, DOWN>, THREADS, smem);
    const int per_sm = v.blocks_per_sm;
    v.prepare = [smem, per_sm](const Matrix& m) -> std::function<void()> {
        bool ok = true;
        const CUtensorMap in_map = tensor_map(m.in, m.cols, m.rows, TR, SW, ok);
        const CUtensorMap out_map = tensor_map(m.out, m.rows, m.cols, TC, SW, ok);
        if (!ok) {
            return {};
        }
        const int tiles = (m.rows / TR) * (m.cols / TC);
        const int blocks = std::max(1, std::min(tiles, per_sm * sms));
        float* out = m.out;
        const int rows = m.rows, cols = m.cols;
        return [=] {
            tma_persistent<TR, TC, STAGES, THREADS, SW, TMA_STORE, DOWN>
                <<<blocks, THREADS, smem>>>(in_map, out_map, out, rows, cols);
        };
    };
    return v;
}

template <int TR, int TC, int STAGES>
static Variant copy_variant(const std::string& name)
{
    Variant v;
    v.name = name;
    v.transposed = false;
    const size_t smem = (size_t)STAGES * TR * TC * 4 + 1024;
    describe(v, tma_copy<TR, TC, STAGES>, 32, smem);
    const int per_sm = v.blocks_per_sm;
    v.prepare = [smem, per_sm](const Matrix& m) -> std::function<void()> {
        bool ok = true;
        const CUtensorMap in_map = tensor_map(m.in, m.cols, m.rows, TR, true, ok);
        const CUtensorMap out_map = tensor_map(m.out, m.cols, m.rows, TR, true, ok);
        if (!ok) {
            return {};
        }
        const int tiles = (m.rows / TR) * (m.cols / TC);
        const int blocks = std::max(1, std::min(tiles, per_sm * sms));
        const int rows = m.rows, cols = m.cols;
        return [=] { tma_copy<TR, TC, STAGES><<<blocks, 32, smem>>>(in_map, out_map, rows, cols); };
    };
    return v;
}

static Variant geam_variant(const std::string& name, cublasHandle_t handle, bool b_is_c)
{
    Variant v;
    v.name = name;
    v.prepare = [handle, b_is_c](const Matrix& m) -> std::function<void()> {
        const float* in = m.in;
        float* out = m.out;
        const int rows = m.rows, cols = m.cols;
        return [=] {
            const float one = 1.0f, zero = 0.0f;
            // Column-major, C (rows x cols, ldc rows) = A^T, A the input seen as cols x rows.
            const cublasStatus_t st = cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, cols, &one, in, cols, &zero,
                                                  b_is_c ? out : nullptr, rows, out, rows);
            if (st != CUBLAS_STATUS_SUCCESS) {
                std::printf("cublasSgeam failed: status %d (its check will fail)\n", (int)st);
            }
        };
    };
    return v;
}

// Compares the output with the input, transposed or copied, bit for bit, in 64 x 64 blocks (so
// that neither side is walked with a large stride). Returns false and says where at the first
// difference.
static bool matches(const std::vector<unsigned>& host, const std::vector<unsigned>& back, int rows, int cols,
                    bool transposed, std::string& where)
{
    for (int rb = 0; rb < rows; rb += 64) {
        for (int cb = 0; cb < cols; cb += 64) {
            for (int r = rb; r < std::min(rows, rb + 64); ++r) {
                for (int c = cb; c < std::min(cols, cb + 64); ++c) {
                    const unsigned want = host[(size_t)r * cols + c];
                    const unsigned got = transposed ? back[(size_t)c * rows + r] : back[(size_t)r * cols + c];
                    if (got != want) {
                        char text[160];
                        std::snprintf(text, sizeof text, "input (%d, %d): got 0x%08x, want 0x%08x", r, c, got, want);
                        where = text;
                        return false;
                    }
                }
            }
        }
    }
    return true;
}

int main(int argc, char** argv)
{
    std::vector<std::pair<int, int>> shapes = {{16384, 16384}, {8192, 8192}};
    if (argc == 3) {
        shapes = {{std::atoi(argv[1]), std::atoi(argv[2])}};
    } else if (argc != 1) {
        std::printf("usage: %s [rows cols]\n", argv[0]);
        return 1;
    }
    for (const auto& shape : shapes) {
        if (shape.first <= 0 || shape.second <= 0 || shape.first % 128 != 0 || shape.second % 128 != 0) {
            std::printf("rows and cols must be positive multiples of 128 (got %d x %d)\n", shape.first, shape.second);
            return 1;
        }
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    std::printf("%s, %d SMs, compute capability %d.%d\n", prop.name, sms, prop.major, prop.minor);
    if (prop.major < 9) {
        std::printf("TMA needs compute capability 9.0 or later\n");
        return 1;
    }
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
        std::printf("cublasCreate failed\n");
        return 1;
    }

    // The first three rows are the references of the others' ratios: keep them first.
    std::vector<Variant> variants;
    {
        Variant copy;
        copy.name = "memcpy (device copy)";
        copy.transposed = false;
        copy.prepare = [](const Matrix& m) -> std::function<void()> {
            const float* in = m.in;
            float* out = m.out;
            const size_t bytes = (size_t)m.rows * m.cols * sizeof(float);
            return [=] { CHECK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); };
        };
        variants.push_back(copy);
    }
    variants.push_back(geam_variant("cublas geam B=C", handle, true));
    variants.push_back(geam_variant("cublas geam B=NULL", handle, false));
    {
        Variant wide;
        wide.name = "wide-tiles (chapter step 6)";
        cudaFuncAttributes attr;
        CHECK(cudaFuncGetAttributes(&attr, transpose_wide_tiles));
        wide.regs = attr.numRegs;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&wide.blocks_per_sm, transpose_wide_tiles, 512, 0));
        wide.prepare = [](const Matrix& m) -> std::function<void()> {
            const word* in = reinterpret_cast<const word*>(m.in);
            word* out = reinterpret_cast<word*>(m.out);
            const unsigned rows = m.rows, cols = m.cols;
            const dim3 grid((cols + 63) / 64, (rows + 63) / 64), block(32, 16);
            return [=] { transpose_wide_tiles<<<grid, block>>>(in, out, rows, cols); };
        };
        variants.push_back(wide);
    }
    variants.push_back(copy_variant<64, 64, 4>("tma copy 64x64 s4 (TMA roof)"));
    variants.push_back(load_thread<32, 32, 64, true>("load+thread 32x32 swz 64t"));
    variants.push_back(load_thread<64, 32, 128, true>("load+thread 64x32 swz 128t"));
    variants.push_back(load_thread<64, 64, 256, true>("load+thread 64x64 swz 256t"));
    variants.push_back(load_thread<64, 64, 256, false>("load+thread 64x64 plain 256t"));
    variants.push_back(load_thread<64, 64, 128, true>("load+thread 64x64 swz 128t"));
    variants.push_back(load_thread<128, 64, 256, true>("load+thread 128x64 swz 256t"));
    variants.push_back(load_thread<64, 128, 256, true>("load+thread 64x128 swz 256t"));
    variants.push_back(load_tma<32, 32, 64, true>("load+tma 32x32 swz 64t"));
    variants.push_back(load_tma<64, 64, 256, true>("load+tma 64x64 swz 256t"));
    variants.push_back(load_tma<64, 64, 128, true>("load+tma 64x64 swz 128t"));
    variants.push_back(load_tma<64, 64, 256, false>("load+tma 64x64 plain 256t"));
    variants.push_back(persistent<64, 64, 2, 256, true, false>("persist thr 64x64 s2 256t"));
    variants.push_back(persistent<64, 64, 3, 256, true, false>("persist thr 64x64 s3 256t"));
    variants.push_back(persistent<64, 64, 4, 256, true, false>("persist thr 64x64 s4 256t"));
    variants.push_back(persistent<64, 32, 4, 128, true, false>("persist thr 64x32 s4 128t"));
    variants.push_back(persistent<128, 64, 2, 256, true, false>("persist thr 128x64 s2 256t"));
    variants.push_back(persistent<128, 64, 3, 256, true, false>("persist thr 128x64 s3 256t"));
    variants.push_back(persistent<64, 128, 2, 256, true, false>("persist thr 64x128 s2 256t"));
    variants.push_back(persistent<64, 64, 2, 256, true, true>("persist tma 64x64 s2 256t"));
    variants.push_back(persistent<64, 64, 3, 256, true, true>("persist tma 64x64 s3 256t"));
    variants.push_back(persistent<64, 64, 4, 256, true, true>("persist tma 64x64 s4 256t"));
    variants.push_back(persistent<64, 32, 4, 128, true, true>("persist tma 64x32 s4 128t"));
    variants.push_back(persistent<128, 64, 2, 256, true, true>("persist tma 128x64 s2 256t"));
    variants.push_back(persistent<64, 64, 3, 256, true, false, true>("persist thr 64x64 s3 256t down"));
    variants.push_back(persistent<64, 64, 3, 256, true, true, true>("persist tma 64x64 s3 256t down"));
    variants.push_back(geam_variant("cublas geam B=C (again)", handle, true));

    size_t most = 0;
    for (const auto& shape : shapes) {
        most = std::max(most, (size_t)shape.first * shape.second);
    }
    float *in = nullptr, *out = nullptr;
    CHECK(cudaMalloc(&in, most * sizeof(float)));
    CHECK(cudaMalloc(&out, most * sizeof(float)));
    std::vector<unsigned> host(most), back(most);

    std::printf("%-11s %-30s %4s %3s %9s %8s %7s %6s %7s\n", "shape", "variant", "regs", "occ", "ms", "GB/s",
                "%copy", "spread", "geam/this");
    std::fflush(stdout);
    for (const auto& shape : shapes) {
        const int rows = shape.first, cols = shape.second;
        const size_t n = (size_t)rows * cols, bytes = n * sizeof(float);
        // Distinct positive normal floats (1.0 and up), scrambled: 0x3f800000 + (i * odd) % 2^28.
        for (size_t i = 0; i < n; ++i) {
            host[i] = 0x3f800000u + (unsigned)((i * 2654435761ull) & 0x0fffffffull);
        }
        CHECK(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
        const Matrix m = {in, out, rows, cols};
        char shape_name[32];
        std::snprintf(shape_name, sizeof shape_name, "%dx%d", rows, cols);

        std::vector<double> ms(variants.size(), -1.0), spread(variants.size(), 0.0);
        // One row of the table (a variant that failed its check has no time, and its row was said).
        auto print = [&](size_t k) {
            const Variant& v = variants[k];
            if (ms[k] < 0) {
                return;
            }
            char regs[16] = "-", occ[16] = "-";
            if (v.regs >= 0) {
                std::snprintf(regs, sizeof regs, "%d", v.regs);
                std::snprintf(occ, sizeof occ, "%d", v.blocks_per_sm);
            }
            const double copy = ms[0] > 0 ? 100.0 * ms[0] / ms[k] : 0.0;
            const double geam = std::min(ms[1] > 0 ? ms[1] : 1e30, ms[2] > 0 ? ms[2] : 1e30);
            std::printf("%-11s %-30s %4s %3s %9.4f %8.0f %6.1f%% %5.1f%% %6.3fx\n", shape_name, v.name.c_str(), regs,
                        occ, ms[k], 2.0 * bytes / ms[k] / 1e6, copy, 100.0 * spread[k],
                        geam < 1e30 ? geam / ms[k] : 0.0);
            std::fflush(stdout);
        };
        for (size_t k = 0; k < variants.size(); ++k) {
            const Variant& v = variants[k];
            if (v.blocks_per_sm == 0) {
                std::printf("%-11s %-30s does not fit on an SM: skipped\n", shape_name, v.name.c_str());
                std::fflush(stdout);
            } else if (const std::function<void()> launch = v.prepare(m)) {
                CHECK(cudaMemset(out, 0xff, bytes));
                launch();
                cudaError_t e = cudaGetLastError();
                if (e == cudaSuccess) {
                    e = cudaDeviceSynchronize();
                }
                if (e != cudaSuccess) {
                    std::printf("%-11s %-30s FAILED: %s\n", shape_name, v.name.c_str(), cudaGetErrorString(e));
                    std::fflush(stdout);
                    CHECK(cudaDeviceSynchronize()); // an error that loses the context ends the run here
                } else {
                    CHECK(cudaMemcpy(back.data(), out, bytes, cudaMemcpyDeviceToHost));
                    std::string where;
                    if (matches(host, back, rows, cols, v.transposed, where)) {
                        double runs[3];
                        for (double& run : runs) {
                            run = median_ms(launch);
                        }
                        std::sort(runs, runs + 3);
                        ms[k] = runs[1];
                        spread[k] = (runs[2] - runs[0]) / runs[1];
                    } else {
                        std::printf("%-11s %-30s WRONG at %s\n", shape_name, v.name.c_str(), where.c_str());
                        std::fflush(stdout);
                    }
                }
            } else {
                std::printf("%-11s %-30s no tensor map: skipped\n", shape_name, v.name.c_str());
                std::fflush(stdout);
            }
            // The references (copy and both geams) are printed once all three are measured.
            if (k == 2) {
                print(0);
                print(1);
                print(2);
            } else if (k > 2) {
                print(k);
            }
        }
    }
    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    cublasDestroy(handle);
    return 0;
}
#endif
