// compact: stream compaction. Keep the elements whose mask byte is nonzero (or that pass a test,
// such as x > threshold), in their original order, and count them: `a[mask]` in array libraries.
//
// Where an element goes is a scan: its place in the output is the number of kept elements before
// it, the exclusive scan of the keep flags. The steps differ in how they get that scan:
//
//   1. flags-scan-scatter: write a 0/1 flag per element, scan the flags (the scan crate), scatter.
//   2. count-scan-scatter: count each tile's kept elements, scan those counts, then recompute the
//      flags inside each tile and scatter: no flag ever goes to global memory.
//   3. single-pass: one launch. Each block flags its tile, ranks the kept elements in registers,
//      finds how many earlier tiles kept by decoupled look-back (look_back.cuh), stages its kept
//      elements in shared memory and writes them out as one contiguous, coalesced run.
//
// Every kernel writes at most `capacity` elements (the output's length) and stores the number of
// kept elements in `*kept`, whatever the capacity; the launcher compares the two. n < 2^32 (the
// launcher checks it), so counts and positions are 32-bit; element indices are 64-bit.
#include "look_back.cuh"

// The tile the launcher compiles steps 2 and 3 with (COMPACT_TILE in crates/compact/src/plan.rs,
// passed as -D defines): these defaults are the same shape, so compiling this file alone compiles
// the kernels that run.
#ifndef COMPACT_THREADS
#define COMPACT_THREADS 512
#endif
#ifndef COMPACT_ITEMS
#define COMPACT_ITEMS 16
#endif
#define FLAG_THREADS          256
// The blocks of the single pass an SM holds at once (its entry points' __launch_bounds__): three
// of 512 threads, at most 40 registers a thread (registers go to a warp 256 at a time).
#define COMPACT_BLOCKS_PER_SM 3

// ---------------------------------------------------------------------------------------------
// What is kept
// ---------------------------------------------------------------------------------------------

// ANCHOR: tests
// The tests an element can be kept by (the launcher's `Predicate`). Comparisons follow IEEE 754:
// NaN is neither greater nor less than anything, and not equal to anything, itself included.
enum : int { KEEP_GREATER = 0, KEEP_LESS = 1, KEEP_NOT_EQUAL = 2, KEEP_NOT_NAN = 3 };

template <class T> __device__ __forceinline__ bool passes(int test, T threshold, T x)
{
    switch (test) {
    case KEEP_GREATER:
        return x > threshold;
    case KEEP_LESS:
        return x < threshold;
    case KEEP_NOT_EQUAL:
        return x != threshold;
    default:
        return x == x; // not NaN (every integer)
    }
}
// ANCHOR_END: tests

// The two ways to say what is kept, with the same interface: `keeps(i, x)` for one element, and
// `load` for a warp's part of a tile (below). A mask is one byte per element, nonzero to keep.
template <class T> struct ByMask {
    const T* input;
    const unsigned char* mask;
    bool vectors; // input 16-byte and mask 4-byte aligned: rows load as vectors

    __device__ __forceinline__ bool keeps(unsigned long long i, T) const { return mask[i] != 0; }
    __device__ __forceinline__ void keeps4(unsigned long long first, const T (&)[4],
                                           bool (&keep)[4]) const
    {
        const uchar4 m = *reinterpret_cast<const uchar4*>(mask + first);
        keep[0] = m.x != 0;
        keep[1] = m.y != 0;
        keep[2] = m.z != 0;
        keep[3] = m.w != 0;
    }
};

template <class T> struct ByTest {
    const T* input;
    int test;
    T threshold;
    bool vectors; // input 16-byte aligned

    __device__ __forceinline__ bool keeps(unsigned long long, T x) const
    {
        return passes(test, threshold, x);
    }
    __device__ __forceinline__ void keeps4(unsigned long long, const T (&x)[4],
                                           bool (&keep)[4]) const
    {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            keep[c] = passes(test, threshold, x[c]);
        }
    }
};

// ---------------------------------------------------------------------------------------------
// Step 1: flags, an exclusive scan of the flags, a scatter
// ---------------------------------------------------------------------------------------------

// ANCHOR: flags_scan_scatter
// compact_write_flags: flags[i] = 1 if element i is kept, else 0 (n words written, 4n bytes).
// The launcher then scans `flags` in place (exclusive, the scan crate): flags[i] becomes the number
// of kept elements before i, element i's place in the output.
// compact_scatter_flagged: every kept element goes to its place; the thread of the last element
// also stores how many were kept (its place, plus one if it is kept itself).
// What it leaves slow: the flags. They are written once, read and written by the scan, and read
// again by the scatter: 16 bytes of traffic per element for a scan the hardware could do in
// registers, on top of the 9 that compaction itself needs (input, mask, a kept element written).
// Launch: any grid of FLAG_THREADS-thread blocks (grid-stride loops).
template <class Select>
__device__ __forceinline__ void write_flags(const Select& select, unsigned* __restrict__ flags,
                                            long long n)
{
    const long long stride = (long long)gridDim.x * FLAG_THREADS;
    for (long long i = (long long)blockIdx.x * FLAG_THREADS + threadIdx.x; i < n; i += stride) {
        flags[i] = select.keeps(i, select.input[i]) ? 1u : 0u;
    }
}

template <class T, class Select>
__device__ __forceinline__ void
scatter_flagged(const Select& select, const unsigned* __restrict__ places, T* __restrict__ output,
                unsigned long long capacity, unsigned* __restrict__ kept, long long n)
{
    const long long stride = (long long)gridDim.x * FLAG_THREADS;
    for (long long i = (long long)blockIdx.x * FLAG_THREADS + threadIdx.x; i < n; i += stride) {
        const T x = select.input[i];
        const bool keep = select.keeps(i, x);
        // ANCHOR: solution(compact) a kept element goes to output[places[i]] (only where that is below `capacity`); the thread of the last element (i == n - 1) stores the number kept in *kept: its place, plus one if it is kept
        const unsigned place = places[i];
        if (keep && place < capacity) {
            output[place] = x;
        }
        if (i == n - 1) {
            *kept = place + (keep ? 1u : 0u);
        }
        // ANCHOR_END: solution
        // ANCHOR: stub (void)keep;
    }
}
// ANCHOR_END: flags_scan_scatter

// ---------------------------------------------------------------------------------------------
// A tile, ranked in registers (steps 2 and 3)
// ---------------------------------------------------------------------------------------------
//
// A tile is COMPACT_THREADS * COMPACT_ITEMS elements. As in the scan, warp w owns the 32 * ITEMS
// elements from w * 32 * ITEMS, as ITEMS / 4 rows of 128: in row j, lane l holds the 4 elements
// from 128 j + 4 l, loaded as one 16-byte vector (and their mask bytes as one 4-byte word).

// ANCHOR: load_tile
// Loads the warp's elements from `first` and says which are kept; elements past n are not kept.
template <int ITEMS, class T, class Select>
__device__ __forceinline__ void load_tile(const Select& select, unsigned long long first,
                                          unsigned long long n, T (&x)[ITEMS], bool (&keep)[ITEMS])
{
    typedef typename Vec4<T>::Type V;
    const unsigned lane = threadIdx.x & 31;
    if (select.vectors && first + 32 * ITEMS <= n) {
        const V* from = reinterpret_cast<const V*>(select.input + first);
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            const V v = from[32 * j + lane];
            const T row[4] = {v.x, v.y, v.z, v.w};
            bool k[4];
            select.keeps4(first + 128 * j + 4 * lane, row, k);
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                x[4 * j + c] = row[c];
                keep[4 * j + c] = k[c];
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const unsigned long long i = first + 128 * (k / 4) + 4 * lane + k % 4;
            x[k] = i < n ? select.input[i] : (T)0;
            keep[k] = i < n && select.keeps(i, x[k]);
        }
    }
}
// ANCHOR_END: load_tile

// ANCHOR: rank_in_warp
// Ranks the warp's kept elements: rank[k] is the number of kept elements before element k in the
// warp's part of the tile; returns how many the warp keeps. No scan of flags is needed: a ballot
// gives the 32 lanes' flags of one column of a row as one word, and a population count of the
// lanes below this one says how many of them are kept. Four ballots per row, one per column.
template <int ITEMS>
__device__ __forceinline__ unsigned rank_in_warp(const bool (&keep)[ITEMS], unsigned (&rank)[ITEMS])
{
    const unsigned lane = threadIdx.x & 31;
    const unsigned lanes_below = (1u << lane) - 1u;
    unsigned before_row = 0; // kept in the warp's earlier rows
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        unsigned ballot[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            ballot[c] = __ballot_sync(FULL_MASK, keep[4 * j + c]);
        }
        // ANCHOR: solution(compact) the kept elements of row j before this lane's 4 (a population count of each column's ballot, masked to the lanes below), then the lane's own elements one by one (rank[4 j + c] counts the lane's kept elements before column c); before_row grows by the row's total (the four ballots' population counts)
        unsigned running = before_row;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            running += __popc(ballot[c] & lanes_below);
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            rank[4 * j + c] = running;
            running += keep[4 * j + c] ? 1u : 0u;
        }
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            before_row += __popc(ballot[c]);
        }
        // ANCHOR_END: solution
        // ANCHOR: stub rank[4 * j] = rank[4 * j + 1] = rank[4 * j + 2] = rank[4 * j + 3] = before_row; (void)ballot;
    }
    return before_row;
}
// ANCHOR_END: rank_in_warp

// What the warps before this one keep, and the whole tile's count, from the warps' counts.
template <int WARPS>
__device__ __forceinline__ void sum_warps(const unsigned* counts, unsigned& before_warp,
                                          unsigned& tile_count)
{
    const int warp = threadIdx.x / 32;
    tile_count = 0;
    before_warp = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        if (w == warp) {
            before_warp = tile_count;
        }
        tile_count += counts[w];
    }
}

// Loads and ranks the block's tile: after it, rank[k] is element k's place among the tile's kept
// elements, and the return value is how many the tile keeps. Ends with a barrier.
template <int THREADS, int ITEMS>
__device__ __forceinline__ unsigned rank_tile(const bool (&keep)[ITEMS], unsigned (&rank)[ITEMS],
                                              unsigned* warp_counts)
{
    const unsigned warp_count = rank_in_warp<ITEMS>(keep, rank);
    if ((threadIdx.x & 31) == 0) {
        warp_counts[threadIdx.x / 32] = warp_count;
    }
    __syncthreads();
    unsigned before_warp, tile_count;
    sum_warps<THREADS / 32>(warp_counts, before_warp, tile_count);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        rank[k] += before_warp;
    }
    return tile_count;
}

// ---------------------------------------------------------------------------------------------
// Step 2: count per tile, scan the counts, scatter; the flags stay in registers
// ---------------------------------------------------------------------------------------------

// ANCHOR: count_scan_scatter
// compact_count_tiles: block b counts the kept elements of tile b into tile_counts[b]. The launcher
// then scans the counts in place (inclusive, the scan crate): one word per 8192 elements.
// compact_scatter_tiles: block b loads tile b again, ranks its kept elements in registers, and
// writes each to its place: the kept elements of the tiles before it (tile_ends[b - 1]) plus its
// rank in the tile. The last tile's block stores the total.
// What it leaves slow: two passes over the selection (by a mask, the counting pass reads only the
// mask: the compiler drops the value loads nothing uses; by a test, it reads the values), and
// scattered writes: each lane writes its own kept elements, so a warp's stores land in many
// partly written sectors.
// Launch: one block of COMPACT_THREADS threads per tile, for both.
template <int THREADS, int ITEMS, class T, class Select>
__device__ __forceinline__ void
count_tiles(const Select& select, unsigned* __restrict__ tile_counts, unsigned long long n)
{
    __shared__ unsigned warp_counts[THREADS / 32];
    const unsigned long long first =
        (unsigned long long)blockIdx.x * THREADS * ITEMS + (threadIdx.x / 32) * 32 * ITEMS;
    T x[ITEMS];
    bool keep[ITEMS];
    unsigned rank[ITEMS];
    load_tile<ITEMS>(select, first, n, x, keep);
    const unsigned tile_count = rank_tile<THREADS, ITEMS>(keep, rank, warp_counts);
    if (threadIdx.x == 0) {
        tile_counts[blockIdx.x] = tile_count;
    }
}

template <int THREADS, int ITEMS, class T, class Select>
__device__ __forceinline__ void
scatter_tiles(const Select& select, const unsigned* __restrict__ tile_ends, T* __restrict__ output,
              unsigned long long capacity, unsigned* __restrict__ kept, unsigned long long n)
{
    __shared__ unsigned warp_counts[THREADS / 32];
    const unsigned long long first =
        (unsigned long long)blockIdx.x * THREADS * ITEMS + (threadIdx.x / 32) * 32 * ITEMS;
    T x[ITEMS];
    bool keep[ITEMS];
    unsigned rank[ITEMS];
    load_tile<ITEMS>(select, first, n, x, keep);
    rank_tile<THREADS, ITEMS>(keep, rank, warp_counts);
    const unsigned before_tile = blockIdx.x == 0 ? 0u : tile_ends[blockIdx.x - 1];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const unsigned long long place = (unsigned long long)before_tile + rank[k];
        if (keep[k] && place < capacity) {
            output[place] = x[k];
        }
    }
    if (threadIdx.x == 0 && blockIdx.x == gridDim.x - 1) {
        *kept = tile_ends[blockIdx.x];
    }
}
// ANCHOR_END: count_scan_scatter

// ---------------------------------------------------------------------------------------------
// Step 3: one pass
// ---------------------------------------------------------------------------------------------

// ANCHOR: single_pass
// compact_single_pass: the whole compaction in one launch, a block per tile, reading the input
// once. The block draws its tile number (tiles are numbered in the order blocks start, so the
// look-back only waits on running blocks), loads it once the number is back, ranks the kept
// elements in registers, and warp 0 finds how many the earlier tiles keep by decoupled look-back
// over the tiles' published counts (tile_prefix with ScanSum of unsigned, pausing before its first
// read: look_back_pause_ns). Then the kept elements are staged in shared memory in order, and the
// block writes them out as one contiguous run: consecutive threads write consecutive words, so
// every store is coalesced, whichever elements were kept. The last tile's block stores the total.
// The tile is loaded after the ticket: loading tile blockIdx.x while the ticket is on its way (the
// scan's early loads) is a guess that loses here, as tickets go in the order the blocks' atomics
// reach the L2, not in blockIdx order, and most blocks then load a second tile. Without the guess
// ptxas takes more registers, two blocks an SM, which loses the gain: the entry points ask for
// COMPACT_BLOCKS_PER_SM (measured: scripts/lab/compact/README.md).
// What it leaves slow: the look-back. A tile's place waits for its predecessors' published counts,
// a chain of round trips to L2 that the loads do not hide: the same tiles with no look-back (wrong
// on purpose) run faster than CUB (scripts/lab/compact/README.md).
// Launch: ceil(n / (COMPACT_THREADS * COMPACT_ITEMS)) blocks of COMPACT_THREADS threads; `counter`
// 0 before the first launch; `status` one word per tile; `epoch` not the previous launch's.
template <int THREADS, int ITEMS, class T, class Select>
__device__ __forceinline__ void
single_pass(const Select& select, T* __restrict__ output, unsigned long long capacity,
            unsigned* __restrict__ kept, TileStatus status, unsigned* counter, unsigned long long n)
{
    constexpr unsigned long long TILE = THREADS * ITEMS;
    __shared__ unsigned drawn;
    __shared__ unsigned warp_counts[THREADS / 32];
    __shared__ unsigned before_tile;
    __shared__ T staged[TILE];
    const unsigned long long warp_offset = (threadIdx.x / 32) * 32 * ITEMS;

    if (threadIdx.x == 0) {
        drawn = draw_tile(counter, gridDim.x - 1);
    }
    __syncthreads();
    const unsigned tile = drawn;
    T x[ITEMS];
    bool keep[ITEMS];
    load_tile<ITEMS>(select, tile * TILE + warp_offset, n, x, keep);

    unsigned rank[ITEMS];
    const unsigned tile_count = rank_tile<THREADS, ITEMS>(keep, rank, warp_counts);
    if (threadIdx.x < 32) {
        const unsigned earlier =
            tile_prefix<ScanSum<unsigned>, 1, 0>(status, tile, tile_count, look_back_pause_ns());
        if (threadIdx.x == 0) {
            before_tile = earlier;
        }
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (keep[k]) {
            staged[rank[k]] = x[k];
        }
    }
    __syncthreads();
    const unsigned long long start = before_tile;
    for (unsigned i = threadIdx.x; i < tile_count; i += THREADS) {
        if (start + i < capacity) {
            output[start + i] = staged[i];
        }
    }
    if (threadIdx.x == 0 && tile == gridDim.x - 1) {
        *kept = (unsigned)start + tile_count;
    }
}
// ANCHOR_END: single_pass

// ---------------------------------------------------------------------------------------------
// Entry points: for each element type, by a mask (`_masked`) and by a test (`_if`)
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ bool aligned(const void* p, unsigned bytes)
{
    return ((unsigned long long)p & (bytes - 1)) == 0;
}

// Every kernel for float, int and unsigned (<name>_<by>_f32, _i32, _u32), by a mask (_masked) and
// by a test (_if). Input and mask rows load as 16-byte vectors where both are aligned for them.

// Step 1: flags, a scan of the flags (the scan crate), a scatter.
extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_write_flags_masked_f32(const float* input, const unsigned char* mask, unsigned* flags,
                                   long long n)
{
    const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    write_flags(select, flags, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_write_flags_masked_i32(const int* input, const unsigned char* mask, unsigned* flags,
                                   long long n)
{
    const ByMask<int> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    write_flags(select, flags, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_write_flags_masked_u32(const unsigned* input, const unsigned char* mask,
                                   unsigned* flags, long long n)
{
    const ByMask<unsigned> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    write_flags(select, flags, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_write_flags_if_f32(const float* input, int test, float threshold, unsigned* flags,
                               long long n)
{
    const ByTest<float> select = {input, test, threshold, aligned(input, 16)};
    write_flags(select, flags, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_write_flags_if_i32(const int* input, int test, int threshold, unsigned* flags,
                               long long n)
{
    const ByTest<int> select = {input, test, threshold, aligned(input, 16)};
    write_flags(select, flags, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_write_flags_if_u32(const unsigned* input, int test, unsigned threshold, unsigned* flags,
                               long long n)
{
    const ByTest<unsigned> select = {input, test, threshold, aligned(input, 16)};
    write_flags(select, flags, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_scatter_flagged_masked_f32(const float* input, const unsigned char* mask,
                                       const unsigned* places, float* output,
                                       unsigned long long capacity, unsigned* kept, long long n)
{
    const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    scatter_flagged<float>(select, places, output, capacity, kept, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_scatter_flagged_masked_i32(const int* input, const unsigned char* mask,
                                       const unsigned* places, int* output,
                                       unsigned long long capacity, unsigned* kept, long long n)
{
    const ByMask<int> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    scatter_flagged<int>(select, places, output, capacity, kept, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_scatter_flagged_masked_u32(const unsigned* input, const unsigned char* mask,
                                       const unsigned* places, unsigned* output,
                                       unsigned long long capacity, unsigned* kept, long long n)
{
    const ByMask<unsigned> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    scatter_flagged<unsigned>(select, places, output, capacity, kept, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_scatter_flagged_if_f32(const float* input, int test, float threshold,
                                   const unsigned* places, float* output,
                                   unsigned long long capacity, unsigned* kept, long long n)
{
    const ByTest<float> select = {input, test, threshold, aligned(input, 16)};
    scatter_flagged<float>(select, places, output, capacity, kept, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_scatter_flagged_if_i32(const int* input, int test, int threshold,
                                   const unsigned* places, int* output, unsigned long long capacity,
                                   unsigned* kept, long long n)
{
    const ByTest<int> select = {input, test, threshold, aligned(input, 16)};
    scatter_flagged<int>(select, places, output, capacity, kept, n);
}

extern "C" __global__ void __launch_bounds__(FLAG_THREADS)
    compact_scatter_flagged_if_u32(const unsigned* input, int test, unsigned threshold,
                                   const unsigned* places, unsigned* output,
                                   unsigned long long capacity, unsigned* kept, long long n)
{
    const ByTest<unsigned> select = {input, test, threshold, aligned(input, 16)};
    scatter_flagged<unsigned>(select, places, output, capacity, kept, n);
}

// Step 2: tile counts, a scan of the counts (the scan crate), a scatter per tile.
extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_count_tiles_masked_f32(const float* input, const unsigned char* mask,
                                   unsigned* tile_counts, unsigned long long n)
{
    const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    count_tiles<COMPACT_THREADS, COMPACT_ITEMS, float>(select, tile_counts, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_count_tiles_masked_i32(const int* input, const unsigned char* mask,
                                   unsigned* tile_counts, unsigned long long n)
{
    const ByMask<int> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    count_tiles<COMPACT_THREADS, COMPACT_ITEMS, int>(select, tile_counts, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_count_tiles_masked_u32(const unsigned* input, const unsigned char* mask,
                                   unsigned* tile_counts, unsigned long long n)
{
    const ByMask<unsigned> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    count_tiles<COMPACT_THREADS, COMPACT_ITEMS, unsigned>(select, tile_counts, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_count_tiles_if_f32(const float* input, int test, float threshold, unsigned* tile_counts,
                               unsigned long long n)
{
    const ByTest<float> select = {input, test, threshold, aligned(input, 16)};
    count_tiles<COMPACT_THREADS, COMPACT_ITEMS, float>(select, tile_counts, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_count_tiles_if_i32(const int* input, int test, int threshold, unsigned* tile_counts,
                               unsigned long long n)
{
    const ByTest<int> select = {input, test, threshold, aligned(input, 16)};
    count_tiles<COMPACT_THREADS, COMPACT_ITEMS, int>(select, tile_counts, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_count_tiles_if_u32(const unsigned* input, int test, unsigned threshold,
                               unsigned* tile_counts, unsigned long long n)
{
    const ByTest<unsigned> select = {input, test, threshold, aligned(input, 16)};
    count_tiles<COMPACT_THREADS, COMPACT_ITEMS, unsigned>(select, tile_counts, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_scatter_tiles_masked_f32(const float* input, const unsigned char* mask,
                                     const unsigned* tile_ends, float* output,
                                     unsigned long long capacity, unsigned* kept,
                                     unsigned long long n)
{
    const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    scatter_tiles<COMPACT_THREADS, COMPACT_ITEMS, float>(select, tile_ends, output, capacity, kept,
                                                         n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_scatter_tiles_masked_i32(const int* input, const unsigned char* mask,
                                     const unsigned* tile_ends, int* output,
                                     unsigned long long capacity, unsigned* kept,
                                     unsigned long long n)
{
    const ByMask<int> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    scatter_tiles<COMPACT_THREADS, COMPACT_ITEMS, int>(select, tile_ends, output, capacity, kept,
                                                       n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_scatter_tiles_masked_u32(const unsigned* input, const unsigned char* mask,
                                     const unsigned* tile_ends, unsigned* output,
                                     unsigned long long capacity, unsigned* kept,
                                     unsigned long long n)
{
    const ByMask<unsigned> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    scatter_tiles<COMPACT_THREADS, COMPACT_ITEMS, unsigned>(select, tile_ends, output, capacity,
                                                            kept, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_scatter_tiles_if_f32(const float* input, int test, float threshold,
                                 const unsigned* tile_ends, float* output,
                                 unsigned long long capacity, unsigned* kept, unsigned long long n)
{
    const ByTest<float> select = {input, test, threshold, aligned(input, 16)};
    scatter_tiles<COMPACT_THREADS, COMPACT_ITEMS, float>(select, tile_ends, output, capacity, kept,
                                                         n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_scatter_tiles_if_i32(const int* input, int test, int threshold,
                                 const unsigned* tile_ends, int* output,
                                 unsigned long long capacity, unsigned* kept, unsigned long long n)
{
    const ByTest<int> select = {input, test, threshold, aligned(input, 16)};
    scatter_tiles<COMPACT_THREADS, COMPACT_ITEMS, int>(select, tile_ends, output, capacity, kept,
                                                       n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS)
    compact_scatter_tiles_if_u32(const unsigned* input, int test, unsigned threshold,
                                 const unsigned* tile_ends, unsigned* output,
                                 unsigned long long capacity, unsigned* kept, unsigned long long n)
{
    const ByTest<unsigned> select = {input, test, threshold, aligned(input, 16)};
    scatter_tiles<COMPACT_THREADS, COMPACT_ITEMS, unsigned>(select, tile_ends, output, capacity,
                                                            kept, n);
}

// Step 3: one pass.
extern "C" __global__ void __launch_bounds__(COMPACT_THREADS, COMPACT_BLOCKS_PER_SM)
    compact_single_pass_masked_f32(const float* input, const unsigned char* mask, float* output,
                                   unsigned long long capacity, unsigned* kept,
                                   unsigned long long* status, unsigned* counter,
                                   unsigned long long n, unsigned epoch)
{
    const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    single_pass<COMPACT_THREADS, COMPACT_ITEMS, float>(select, output, capacity, kept,
                                                       TileStatus{status, epoch}, counter, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS, COMPACT_BLOCKS_PER_SM)
    compact_single_pass_masked_i32(const int* input, const unsigned char* mask, int* output,
                                   unsigned long long capacity, unsigned* kept,
                                   unsigned long long* status, unsigned* counter,
                                   unsigned long long n, unsigned epoch)
{
    const ByMask<int> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    single_pass<COMPACT_THREADS, COMPACT_ITEMS, int>(select, output, capacity, kept,
                                                     TileStatus{status, epoch}, counter, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS, COMPACT_BLOCKS_PER_SM)
    compact_single_pass_masked_u32(const unsigned* input, const unsigned char* mask,
                                   unsigned* output, unsigned long long capacity, unsigned* kept,
                                   unsigned long long* status, unsigned* counter,
                                   unsigned long long n, unsigned epoch)
{
    const ByMask<unsigned> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    single_pass<COMPACT_THREADS, COMPACT_ITEMS, unsigned>(select, output, capacity, kept,
                                                          TileStatus{status, epoch}, counter, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS, COMPACT_BLOCKS_PER_SM)
    compact_single_pass_if_f32(const float* input, int test, float threshold, float* output,
                               unsigned long long capacity, unsigned* kept,
                               unsigned long long* status, unsigned* counter, unsigned long long n,
                               unsigned epoch)
{
    const ByTest<float> select = {input, test, threshold, aligned(input, 16)};
    single_pass<COMPACT_THREADS, COMPACT_ITEMS, float>(select, output, capacity, kept,
                                                       TileStatus{status, epoch}, counter, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS, COMPACT_BLOCKS_PER_SM)
    compact_single_pass_if_i32(const int* input, int test, int threshold, int* output,
                               unsigned long long capacity, unsigned* kept,
                               unsigned long long* status, unsigned* counter, unsigned long long n,
                               unsigned epoch)
{
    const ByTest<int> select = {input, test, threshold, aligned(input, 16)};
    single_pass<COMPACT_THREADS, COMPACT_ITEMS, int>(select, output, capacity, kept,
                                                     TileStatus{status, epoch}, counter, n);
}

extern "C" __global__ void __launch_bounds__(COMPACT_THREADS, COMPACT_BLOCKS_PER_SM)
    compact_single_pass_if_u32(const unsigned* input, int test, unsigned threshold,
                               unsigned* output, unsigned long long capacity, unsigned* kept,
                               unsigned long long* status, unsigned* counter, unsigned long long n,
                               unsigned epoch)
{
    const ByTest<unsigned> select = {input, test, threshold, aligned(input, 16)};
    single_pass<COMPACT_THREADS, COMPACT_ITEMS, unsigned>(select, output, capacity, kept,
                                                          TileStatus{status, epoch}, counter, n);
}
