// scan: parallel prefix sums, step by step, from one block to a single pass over any size.
//
// Inclusive scan: out[i] = x[0] + ... + x[i].  Exclusive scan: out[i] = x[0] + ... + x[i-1], out[0]
// = 0. Every kernel exists for float, int and unsigned (suffixes _f32, _i32, _u32). Integer sums
// wrap around modulo 2^32; float sums round, so a parallel scan (which adds in another order than a
// loop) matches a sequential one within a tolerance, not bit for bit.
//
//   1. scan_hillis_steele      one block, inclusive: log2(n) steps, n log2(n) additions
//   2. scan_blelloch           one block, exclusive: up-sweep and down-sweep, 2n additions
//      scan_blelloch_padded    the same with padding that removes its shared-memory bank conflicts
//   3. scan_tiles, add_tile_prefixes         any size: scan-then-propagate (read 2x, write 2x)
//      reduce_tiles, scan_tiles_with_prefix  any size: reduce-then-scan (read twice, write once)
//   4. scan_single_pass        any size, one launch: decoupled look-back (look_back.cuh)
//      scan_early_loads        the same, a block's loads go out before its tile ticket is back
//      segmented_scan          the single pass over (value, head flag) pairs
//      scan_wide_look_back     tried, slower: the look-back reads several predecessors per lane
//   5. scan_bulk_copy          the tile comes into shared memory by one bulk copy (Hopper), so it
//                              can be twice as large: half the tiles, half the look-backs
#include "block_reduce.cuh"
#include "bulk_copy.cuh"
#include "look_back.cuh"

// ---------------------------------------------------------------------------------------------
// Step 1: Hillis-Steele, one block.
// ---------------------------------------------------------------------------------------------

// ANCHOR: hillis_steele
// scan_hillis_steele: an inclusive scan of n <= 1024 elements by one block, one element per
// thread. At step k every element adds the one 2^k places before it, so after log2(n) steps each
// holds the sum of everything up to it: log2(n) steps, but about n log2(n) additions where a loop
// does n. The steps read one buffer and write the other (double buffering), so no thread
// overwrites a value another thread has yet to read.
// What it leaves slow: n log2(n) work, one barrier per step, and one block: the rest of the GPU
// idles.
// Launch: one block of blockDim.x >= n threads (a multiple of 32, at most 1024).
template <class T>
__device__ __forceinline__ void hillis_steele(const T* __restrict__ input, T* __restrict__ output,
                                              unsigned n)
{
    __shared__ T buffer[2][1024];
    const unsigned i = threadIdx.x;
    buffer[0][i] = i < n ? input[i] : (T)0;
    __syncthreads();
    int in = 0;
    // ANCHOR: solution log2(blockDim.x) steps with offsets 1, 2, 4, ...: each thread adds the value offset places to its left (when there is one), reading one buffer and writing the other, then swapping them after a barrier
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        T x = buffer[in][i];
        if (i >= offset) {
            x = wrapping_add(buffer[in][i - offset], x);
        }
        buffer[1 - in][i] = x;
        in = 1 - in;
        __syncthreads();
    }
    // ANCHOR_END: solution
    if (i < n) {
        output[i] = buffer[in][i];
    }
}
// ANCHOR_END: hillis_steele

// ---------------------------------------------------------------------------------------------
// Step 2: Blelloch, one block, and the same with padding.
// ---------------------------------------------------------------------------------------------

// Where element i of a Blelloch tile lives in shared memory: at i itself, or (PADDED) with one
// empty word after every 32, so that addresses 32 apart fall in different banks.
template <bool PADDED> __device__ __forceinline__ unsigned slot(unsigned i)
{
    return PADDED ? i + (i >> 5) : i;
}

// ANCHOR: blelloch_sweeps
// The Blelloch scan of `tile` (m = 2 * blockDim.x values, a power of two) in place: exclusive.
// Up-sweep: a reduction tree; after it, the last slot holds the total, which is returned to every
// thread. Down-sweep: the root is cleared, and going down the tree each node passes its value to
// its left child and (its value + the left child's old value) to its right child. 2(m - 1)
// additions in 2 log2(m) steps.
template <class T, bool PADDED> __device__ __forceinline__ T blelloch_sweeps(T* tile)
{
    const unsigned m = 2 * blockDim.x;
    const unsigned t = threadIdx.x;
    unsigned offset = 1;
    for (unsigned active = m / 2; active > 0; active /= 2) { // up-sweep
        __syncthreads();
        if (t < active) {
            const unsigned left = offset * (2 * t + 1) - 1;
            const unsigned right = offset * (2 * t + 2) - 1;
            tile[slot<PADDED>(right)] =
                wrapping_add(tile[slot<PADDED>(left)], tile[slot<PADDED>(right)]);
        }
        offset *= 2;
    }
    __syncthreads();
    const T total = tile[slot<PADDED>(m - 1)];
    __syncthreads();
    if (t == 0) {
        tile[slot<PADDED>(m - 1)] = (T)0;
    }
    // ANCHOR: solution the down-sweep: going down the tree (active = 1, 2, 4, ... nodes, the offset halving), each node passes its value to its left child, and its value plus the left child's old value to its right child
    for (unsigned active = 1; active < m; active *= 2) { // down-sweep
        offset /= 2;
        __syncthreads();
        if (t < active) {
            const unsigned left = offset * (2 * t + 1) - 1;
            const unsigned right = offset * (2 * t + 2) - 1;
            const T from_left = tile[slot<PADDED>(left)];
            tile[slot<PADDED>(left)] = tile[slot<PADDED>(right)];
            tile[slot<PADDED>(right)] = wrapping_add(tile[slot<PADDED>(right)], from_left);
        }
    }
    // ANCHOR_END: solution
    __syncthreads();
    return total;
}
// ANCHOR_END: blelloch_sweeps

// ANCHOR: blelloch
// scan_blelloch: an exclusive scan of n <= 2048 elements by one block, two elements per thread
// (element t and element t + blockDim.x, so global loads stay coalesced): O(n) work in O(log n)
// steps. Without padding, the tree's strides (2, 4, ..., 1024 words) put the threads of a warp on
// the same few banks: up to 16-way shared-memory bank conflicts in the deep levels.
// What it leaves slow: the bank conflicts (next kernel), a barrier per level, and one block.
// Launch: one block of m / 2 threads, m the power of two at or above n (at least 64).
template <class T, bool PADDED>
__device__ __forceinline__ void blelloch(const T* __restrict__ input, T* __restrict__ output,
                                         unsigned n)
{
    __shared__ T tile[2048 + (PADDED ? 2048 / 32 : 0)];
    const unsigned a = threadIdx.x;
    const unsigned b = threadIdx.x + blockDim.x;
    tile[slot<PADDED>(a)] = a < n ? input[a] : (T)0;
    tile[slot<PADDED>(b)] = b < n ? input[b] : (T)0;
    blelloch_sweeps<T, PADDED>(tile);
    if (a < n) {
        output[a] = tile[slot<PADDED>(a)];
    }
    if (b < n) {
        output[b] = tile[slot<PADDED>(b)];
    }
}
// ANCHOR_END: blelloch

// ---------------------------------------------------------------------------------------------
// Step 3: any size, in several passes over tiles of 2048 elements (blocks of 1024 threads, each
// scanned with the padded Blelloch scan). Indices are 64-bit: tiles * 2048 can pass 2^32.
// ---------------------------------------------------------------------------------------------

#define MULTI_PASS_THREADS 1024
#define MULTI_PASS_TILE    2048

// ANCHOR: scan_tile
// Scans this block's tile of `input` (inclusive), adding `carry` to every element; returns the
// tile's total (without the carry) to every thread.
template <class T>
__device__ __forceinline__ T scan_tile(const T* input, T* output, unsigned long long n, T carry)
{
    __shared__ T tile[MULTI_PASS_TILE + MULTI_PASS_TILE / 32];
    const unsigned long long first = (unsigned long long)blockIdx.x * MULTI_PASS_TILE;
    const unsigned a = threadIdx.x;
    const unsigned b = threadIdx.x + MULTI_PASS_THREADS;
    const T xa = first + a < n ? input[first + a] : (T)0;
    const T xb = first + b < n ? input[first + b] : (T)0;
    tile[slot<true>(a)] = xa;
    tile[slot<true>(b)] = xb;
    const T total = blelloch_sweeps<T, true>(tile);
    // exclusive + own element = inclusive
    if (first + a < n) {
        output[first + a] = wrapping_add(carry, wrapping_add(tile[slot<true>(a)], xa));
    }
    if (first + b < n) {
        output[first + b] = wrapping_add(carry, wrapping_add(tile[slot<true>(b)], xb));
    }
    return total;
}
// ANCHOR_END: scan_tile

// ANCHOR: scan_then_propagate
// scan_tiles: pass 1 of scan-then-propagate. Each block scans its own tile (as if it were the whole
// input) and writes the tile's total to tile_sums. The launcher then scans tile_sums (the same way,
// recursively, until one tile is left) and runs add_tile_prefixes, which adds to every element of
// tile b the sum of tiles 0 .. b-1. The input is read once and the output written once by
// scan_tiles, then read and written again by add_tile_prefixes: 4n accesses where 2n would do.
// Launch: ceil(n / 2048) blocks of 1024 threads.
template <class T>
__device__ __forceinline__ void scan_tiles(const T* input, T* output, T* __restrict__ tile_sums,
                                           unsigned long long n)
{
    const T total = scan_tile(input, output, n, (T)0);
    if (threadIdx.x == 0) {
        tile_sums[blockIdx.x] = total;
    }
}

// add_tile_prefixes: pass 2. `scanned_sums` is the inclusive scan of the tile sums, so tile b adds
// scanned_sums[b - 1]. Launch: like scan_tiles.
template <class T>
__device__ __forceinline__ void add_tile_prefixes(T* data, const T* __restrict__ scanned_sums,
                                                  unsigned long long n)
{
    if (blockIdx.x == 0) {
        return;
    }
    const T carry = scanned_sums[blockIdx.x - 1];
    const unsigned long long first = (unsigned long long)blockIdx.x * MULTI_PASS_TILE;
    for (unsigned i = threadIdx.x; i < MULTI_PASS_TILE; i += MULTI_PASS_THREADS) {
        if (first + i < n) {
            data[first + i] = wrapping_add(carry, data[first + i]);
        }
    }
}
// ANCHOR_END: scan_then_propagate

// ANCHOR: reduce_then_scan
// reduce_tiles: pass 1 of reduce-then-scan. Each block only sums its tile (block_reduce from the
// reduction chapters) and writes the sum: the input is read, and nothing of size n is written.
// The launcher scans the sums, then scan_tiles_with_prefix reads the input again and writes each
// tile's scan with the sum of the tiles before it added: 3n accesses instead of 4n.
// What it leaves slow (both forms): the second pass over memory (4n or 3n accesses where 2n would
// do) and a launch per pass; step 4 makes one pass in one launch.
// Launch: ceil(n / 2048) blocks of 1024 threads.
template <class T>
__device__ __forceinline__ void reduce_tiles(const T* __restrict__ input, T* __restrict__ tile_sums,
                                             unsigned long long n)
{
    const unsigned long long first = (unsigned long long)blockIdx.x * MULTI_PASS_TILE;
    const unsigned long long a = first + threadIdx.x;
    const unsigned long long b = a + MULTI_PASS_THREADS;
    T sum = wrapping_add(a < n ? input[a] : (T)0, b < n ? input[b] : (T)0);
    sum = block_reduce<Sum<T>>(sum);
    if (threadIdx.x == 0) {
        tile_sums[blockIdx.x] = sum;
    }
}

// scan_tiles_with_prefix: pass 2. `scanned_sums` is the inclusive scan of the tile sums.
template <class T>
__device__ __forceinline__ void scan_tiles_with_prefix(const T* input, T* output,
                                                       const T* __restrict__ scanned_sums,
                                                       unsigned long long n)
{
    scan_tile(input, output, n, blockIdx.x > 0 ? scanned_sums[blockIdx.x - 1] : (T)0);
}
// ANCHOR_END: reduce_then_scan

// ---------------------------------------------------------------------------------------------
// Step 4: one pass. A block's tile is THREADS * ITEMS elements; warp w of the block owns the
// 32 * ITEMS elements starting at tile start + w * 32 * ITEMS, as ITEMS / 4 rows of 128: in row j,
// lane l holds the 4 elements from 128 j + 4 l, read and written as one 16-byte vector, so each
// row is one coalesced 512-byte access per warp.
// ---------------------------------------------------------------------------------------------

// The tile the launcher compiles the single pass with (SINGLE_PASS_TILE in crates/scan/src/plan.rs,
// passed as -D defines): these defaults are the same shape, so compiling this file alone compiles
// the kernels that run.
#ifndef SCAN_THREADS
#define SCAN_THREADS 128
#endif
#ifndef SCAN_ITEMS
#define SCAN_ITEMS 24
#endif
#ifndef LOOK_BACK_PER_LANE
#define LOOK_BACK_PER_LANE 4
#endif

// Plain values: the input and output of a scan of T.
template <class T> struct PlainTiles {
    typedef ScanSum<T> Op;
    typedef T Value; // what is scanned
    typedef T Out;   // what is written
    const T* input;
    T* output;
    bool vectors; // both 16-byte aligned

    // ANCHOR: load_tile
    // Loads the warp's ITEMS elements per lane from `first`: as 16-byte vectors when the warp's
    // elements are all there and aligned, else one by one (elements past n read as 0).
    template <int ITEMS>
    __device__ __forceinline__ void load(unsigned long long first, unsigned long long n,
                                         T (&x)[ITEMS]) const
    {
        typedef typename Vec4<T>::Type V;
        const unsigned lane = threadIdx.x & 31;
        if (vectors && first + 32 * ITEMS <= n) {
            const V* from = reinterpret_cast<const V*>(input + first);
#pragma unroll
            for (int j = 0; j < ITEMS / 4; ++j) {
                const V v = from[32 * j + lane];
                x[4 * j] = v.x;
                x[4 * j + 1] = v.y;
                x[4 * j + 2] = v.z;
                x[4 * j + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const unsigned long long i = first + 128 * (k / 4) + 4 * lane + k % 4;
                x[k] = i < n ? input[i] : (T)0;
            }
        }
    }
    // ANCHOR_END: load_tile

    template <int ITEMS>
    __device__ __forceinline__ void store(unsigned long long first, unsigned long long n,
                                          const T (&x)[ITEMS], const T (&y)[ITEMS]) const
    {
        typedef typename Vec4<T>::Type V;
        const unsigned lane = threadIdx.x & 31;
        if (vectors && first + 32 * ITEMS <= n) {
            V* to = reinterpret_cast<V*>(output + first);
#pragma unroll
            for (int j = 0; j < ITEMS / 4; ++j) {
                V v;
                v.x = y[4 * j];
                v.y = y[4 * j + 1];
                v.z = y[4 * j + 2];
                v.w = y[4 * j + 3];
                to[32 * j + lane] = v;
            }
        } else {
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                const unsigned long long i = first + 128 * (k / 4) + 4 * lane + k % 4;
                if (i < n) {
                    output[i] = y[k];
                }
            }
        }
    }

    // What an exclusive scan writes for an element: the prefix before it.
    __device__ __forceinline__ static T exclusive(T before, T) { return before; }
    __device__ __forceinline__ static T inclusive(T through) { return through; }
};

// ANCHOR: scan_rows
// The warp's part of the tile scan, in registers. Each lane sums its 4 elements of every row; a
// warp scan (5 shuffles) of those sums gives each lane the sum of the row before its 4 elements;
// the rows' totals, added up in order, give each row what comes before it in the warp's part.
// Returns the warp's total; lane_prefix[j] is what comes before the lane's 4 elements of row j
// within the warp's part. The ITEMS / 4 warp scans are independent: their shuffles overlap.
template <class Op, int ITEMS>
__device__ __forceinline__ typename Op::Value
scan_rows(const typename Op::Value (&x)[ITEMS], typename Op::Value (&lane_prefix)[ITEMS / 4])
{
    typedef typename Op::Value Value;
    const int lane = threadIdx.x & 31;
    Value inclusive[ITEMS / 4];
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        const Value sum = Op::combine(
            Op::combine(Op::combine(x[4 * j], x[4 * j + 1]), x[4 * j + 2]), x[4 * j + 3]);
        inclusive[j] = warp_inclusive_scan<Op>(sum);
    }
    Value carry = Op::identity();
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        const Value before = shfl_up(inclusive[j], 1);
        lane_prefix[j] = lane == 0 ? carry : Op::combine(carry, before);
        carry = Op::combine(carry, shfl_idx(inclusive[j], 31));
    }
    return carry;
}
// ANCHOR_END: scan_rows

// The outputs of the lane's elements, given what comes before the warp's part (`base`).
template <class IO, int ITEMS, bool INCLUSIVE>
__device__ __forceinline__ void
finish_rows(typename IO::Op::Value base, const typename IO::Op::Value (&lane_prefix)[ITEMS / 4],
            const typename IO::Value (&x)[ITEMS], typename IO::Out (&y)[ITEMS])
{
    typedef typename IO::Op Op;
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        typename Op::Value running = Op::combine(base, lane_prefix[j]);
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const typename Op::Value through = Op::combine(running, x[4 * j + c]);
            y[4 * j + c] =
                INCLUSIVE ? IO::inclusive(through) : IO::exclusive(running, x[4 * j + c]);
            running = through;
        }
    }
}

// The warps' totals in order: what comes before warp `warp`, and the tile's aggregate.
template <class Op, int WARPS>
__device__ __forceinline__ void combine_warps(const typename Op::Value* totals,
                                              typename Op::Value& before_warp,
                                              typename Op::Value& aggregate)
{
    const int warp = threadIdx.x / 32;
    aggregate = Op::identity();
    before_warp = aggregate;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        if (w == warp) {
            before_warp = aggregate;
        }
        aggregate = Op::combine(aggregate, totals[w]);
    }
}

// How a single pass looks back and starts: the predecessors each lane of the look-back warp reads
// per round trip, and whether the tile's loads go out before its ticket arrives.
struct Classic {
    static const int PER_LANE = 1;
    static const bool EARLY_LOADS = false;
};
struct EarlyLoads {
    static const int PER_LANE = 1;
    static const bool EARLY_LOADS = true;
};
struct WideLookBack {
    static const int PER_LANE = LOOK_BACK_PER_LANE;
    static const bool EARLY_LOADS = false;
};

// ANCHOR: single_pass
// scan_single_pass: the whole scan in one launch, a block per tile. Each block draws its tile
// number from an atomic counter, loads its tile (16-byte vectors, ITEMS per thread), scans it in
// registers (scan_rows), combines its warps' totals through shared memory, and finds everything
// before the tile by decoupled look-back (tile_prefix, pausing before its first read on grids of
// 512 tiles or more: look_back_pause_ns). Then each element is written once: the input is read
// once and the output written once, 2n accesses in all.
// What it leaves slow: a block's loads wait for its ticket, a round trip to L2 at the start of
// every block.
//
// scan_early_loads: the block does not wait for its ticket to start loading: it loads tile
// blockIdx.x while the ticket is on its way, and loads again only if the ticket names another
// tile; when the guess is wrong the result is still right. The guess was made thinking blocks
// reach the counter in blockIdx order; they do not: ncu on an H100 at 2^24 counted 96% of the
// blocks loading a second tile (book/src/data/nvidia-h100-80gb-hbm3/early-loads-ncu.txt).
//
// scan_wide_look_back (tried, slower): the look-back warp reads LOOK_BACK_PER_LANE predecessors
// per lane per round trip instead of one, for fewer round trips on long walks.
//
// Launch: ceil(n / (THREADS * ITEMS)) blocks of THREADS threads; `counter` 0 before the first
// launch; `status` one word per tile; `epoch` different from the previous launch's (1 .. 2^29 - 1).
// SLEEP_NS: a __nanosleep between look-back polls, tried by scripts/lab/scan/tile-shape.cu (no
// measurable change); 0, no sleep, in every kernel here.
template <class IO, int THREADS, int ITEMS, bool INCLUSIVE, class Form, int SLEEP_NS = 0>
__device__ __forceinline__ void single_pass(const IO& io, TileStatus status, unsigned* counter,
                                            unsigned long long n)
{
    typedef typename IO::Op Op;
    typedef typename Op::Value Value;
    constexpr int WARPS = THREADS / 32;
    constexpr unsigned long long TILE = THREADS * ITEMS;
    __shared__ unsigned drawn;
    __shared__ Value warp_totals[WARPS];
    __shared__ Value before_tile;
    const int warp = threadIdx.x / 32;
    const unsigned long long warp_offset = (unsigned long long)warp * 32 * ITEMS;

    if (threadIdx.x == 0) {
        drawn = draw_tile(counter, gridDim.x - 1);
    }
    typename IO::Value x[ITEMS];
    if (Form::EARLY_LOADS) {
        io.template load<ITEMS>(blockIdx.x * TILE + warp_offset, n, x);
    }
    __syncthreads();
    const unsigned tile = drawn;
    if (!Form::EARLY_LOADS || tile != blockIdx.x) {
        io.template load<ITEMS>(tile * TILE + warp_offset, n, x);
    }

    Value lane_prefix[ITEMS / 4];
    const Value warp_total = scan_rows<Op, ITEMS>(x, lane_prefix);
    if ((threadIdx.x & 31) == 0) {
        warp_totals[warp] = warp_total;
    }
    __syncthreads();
    Value before_warp, aggregate;
    combine_warps<Op, WARPS>(warp_totals, before_warp, aggregate);
    if (warp == 0) {
        const Value exclusive = tile_prefix<Op, Form::PER_LANE, SLEEP_NS>(status, tile, aggregate,
                                                                          look_back_pause_ns());
        if (threadIdx.x == 0) {
            before_tile = exclusive;
        }
    }
    __syncthreads();
    typename IO::Out y[ITEMS];
    finish_rows<IO, ITEMS, INCLUSIVE>(Op::combine(before_tile, before_warp), lane_prefix, x, y);
    io.template store<ITEMS>(tile * TILE + warp_offset, n, x, y);
}
// ANCHOR_END: single_pass

__device__ __forceinline__ bool both_aligned(const void* a, const void* b)
{
    return (((unsigned long long)a | (unsigned long long)b) & 15) == 0;
}

// ---------------------------------------------------------------------------------------------
// Step 5: the tile in shared memory, by one bulk copy.
// ---------------------------------------------------------------------------------------------

// Elements per thread of the bulk-copy tile (BULK_COPY_TILE in crates/scan/src/plan.rs): twice
// SCAN_ITEMS, scanned from shared memory SCAN_ITEMS at a time.
#ifndef SCAN_BULK_ITEMS
#define SCAN_BULK_ITEMS 48
#endif

// ANCHOR: bulk_copy_pass
// scan_bulk_copy: the single pass with the tile in shared memory. Step 4's tiles are as large as
// registers allow (24 elements a thread); the look-back's chain of published prefixes moves about
// 32 tiles per round trip to L2, so with small tiles the chain, not memory, sets the pace (a
// version with the look-back taken out runs at 99% of the copy roof). Here thread 0 draws the
// ticket and starts one bulk copy of the whole tile (bulk_copy.cuh), no register holding the data
// on its way, so the tile can be twice as large: half the tiles, half the links in the chain.
// The block sums the tile from shared memory and publishes its aggregate before scanning
// anything, looks back, then scans the tile from shared memory SCAN_ITEMS elements a thread at a
// time and writes it. The input is still read once and the output written once.
// What it leaves slow: the look-back chain still sets the pace at twice the step's tile; larger
// tiles again cost occupancy (shared memory per block) and measured slower.
// Without the bulk copy (before compute capability 9.0, an unaligned buffer, the last partial
// tile) the threads copy the tile into shared memory with ordinary loads.
// Launch: ceil(n / (THREADS * BULK_ITEMS)) blocks of THREADS threads, tile state as step 4.
// pause_ns: the look-back's pause before its first read (look_back_pause_ns in the kernels).
template <class T, int THREADS, int BULK_ITEMS, int ITEMS, bool INCLUSIVE>
__device__ __forceinline__ void bulk_copy_pass(const T* input, T* output, TileStatus status,
                                               unsigned* counter, unsigned long long n,
                                               unsigned pause_ns)
{
    typedef ScanSum<T> Op;
    typedef typename Vec4<T>::Type V;
    constexpr int WARPS = THREADS / 32;
    constexpr unsigned long long TILE = THREADS * BULK_ITEMS;
    __shared__ __align__(128) T tile_data[TILE];
    __shared__ __align__(8) unsigned long long landed; // the bulk copy's barrier
    __shared__ unsigned drawn;
    __shared__ T warp_totals[WARPS];
    __shared__ T before_tile;
    const PlainTiles<T> io = {input, output, both_aligned(input, output)};
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;

    if (threadIdx.x == 0) {
        drawn = draw_tile(counter, gridDim.x - 1);
        if (BULK_COPY && io.vectors && drawn * TILE + TILE <= n) {
            start_bulk_copy(tile_data, input + drawn * TILE, TILE * sizeof(T), &landed);
        }
    }
    __syncthreads();
    const unsigned tile = drawn;
    const bool copied = BULK_COPY && io.vectors && tile * TILE + TILE <= n;
    // The warp's part of the tile: 32 * BULK_ITEMS elements, rows of 128 as in step 4.
    T* part = tile_data + warp * 32 * BULK_ITEMS;
    const unsigned long long part_first = tile * TILE + (unsigned long long)warp * 32 * BULK_ITEMS;
    if (copied) {
        wait_bulk_copy(&landed);
    } else {
#pragma unroll 1
        for (int c = 0; c < BULK_ITEMS / ITEMS; ++c) {
            T x[ITEMS];
            io.template load<ITEMS>(part_first + c * 32 * ITEMS, n, x);
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                part[c * 32 * ITEMS + 128 * (k / 4) + 4 * lane + k % 4] = x[k];
            }
        }
        __syncwarp();
    }

    // The tile's sum first: each lane's, then the warp's, then the block's (combine_warps).
    T sum = Op::identity();
#pragma unroll
    for (int j = 0; j < BULK_ITEMS / 4; ++j) {
        const V v = reinterpret_cast<const V*>(part)[32 * j + lane];
        sum = Op::combine(sum, Op::combine(Op::combine(v.x, v.y), Op::combine(v.z, v.w)));
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum = Op::combine(sum, __shfl_xor_sync(FULL_MASK, sum, offset));
    }
    if (lane == 0) {
        warp_totals[warp] = sum;
    }
    __syncthreads();
    T before_warp, aggregate;
    combine_warps<Op, WARPS>(warp_totals, before_warp, aggregate);
    if (warp == 0) {
        const T exclusive = tile_prefix<Op, 1, 0>(status, tile, aggregate, pause_ns);
        if (threadIdx.x == 0) {
            before_tile = exclusive;
        }
    }
    __syncthreads();

    // Then the scan, ITEMS elements a thread at a time, each chunk continuing the last.
    T base = Op::combine(before_tile, before_warp);
#pragma unroll 1
    for (int c = 0; c < BULK_ITEMS / ITEMS; ++c) {
        T x[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            const V v = reinterpret_cast<const V*>(part + c * 32 * ITEMS)[32 * j + lane];
            x[4 * j] = v.x;
            x[4 * j + 1] = v.y;
            x[4 * j + 2] = v.z;
            x[4 * j + 3] = v.w;
        }
        T lane_prefix[ITEMS / 4];
        const T chunk_total = scan_rows<Op, ITEMS>(x, lane_prefix);
        T y[ITEMS];
        finish_rows<PlainTiles<T>, ITEMS, INCLUSIVE>(base, lane_prefix, x, y);
        io.template store<ITEMS>(part_first + c * 32 * ITEMS, n, x, y);
        base = Op::combine(base, chunk_total);
    }
}
// ANCHOR_END: bulk_copy_pass

// ---------------------------------------------------------------------------------------------
// Segmented scan: a scan that starts again at every element whose head flag is set. It is the
// scan of (value, head) pairs with the operation
//   (a, fa) then (b, fb) = (fb ? b : a + b, fa | fb),
// which is associative (not commutative), so the single pass runs it unchanged: the head bit
// travels in the status word's spare bit.
// ---------------------------------------------------------------------------------------------

// ANCHOR: segmented
template <class T> struct Headed {
    T value;
    unsigned head;
};

template <class T> __device__ __forceinline__ Headed<T> shfl_up(Headed<T> v, int delta)
{
    return Headed<T>{shfl_up(v.value, delta), shfl_up(v.head, delta)};
}
template <class T> __device__ __forceinline__ Headed<T> shfl_down(Headed<T> v, int delta)
{
    return Headed<T>{shfl_down(v.value, delta), shfl_down(v.head, delta)};
}
template <class T> __device__ __forceinline__ Headed<T> shfl_idx(Headed<T> v, int lane)
{
    return Headed<T>{shfl_idx(v.value, lane), shfl_idx(v.head, lane)};
}

template <class T> struct SegmentedSum {
    typedef Headed<T> Value;
    __device__ static Value identity() { return Value{(T)0, 0u}; }
    __device__ static Value combine(Value earlier, Value later)
    {
        return Value{later.head ? later.value : wrapping_add(earlier.value, later.value),
                     earlier.head | later.head};
    }
    __device__ static unsigned bits(Value v) { return to_bits(v.value); }
    __device__ static bool mark(Value v) { return v.head != 0; }
    __device__ static Value unpack(unsigned bits, bool mark)
    {
        return Value{from_bits<T>(bits), mark ? 1u : 0u};
    }
};

// Values and head flags (one byte each, nonzero: a segment starts here), read one by one.
template <class T> struct SegmentedTiles {
    typedef SegmentedSum<T> Op;
    typedef Headed<T> Value;
    typedef T Out;
    const T* input;
    const unsigned char* heads;
    T* output;

    template <int ITEMS>
    __device__ __forceinline__ void load(unsigned long long first, unsigned long long n,
                                         Value (&x)[ITEMS]) const
    {
        const unsigned lane = threadIdx.x & 31;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const unsigned long long i = first + 128 * (k / 4) + 4 * lane + k % 4;
            x[k] = i < n ? Value{input[i], heads[i] != 0 ? 1u : 0u} : Op::identity();
        }
    }

    template <int ITEMS>
    __device__ __forceinline__ void store(unsigned long long first, unsigned long long n,
                                          const Value (&)[ITEMS], const T (&y)[ITEMS]) const
    {
        const unsigned lane = threadIdx.x & 31;
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const unsigned long long i = first + 128 * (k / 4) + 4 * lane + k % 4;
            if (i < n) {
                output[i] = y[k];
            }
        }
    }

    // A segment's first element has nothing before it in its segment.
    __device__ __forceinline__ static T exclusive(Value before, Value x)
    {
        return x.head ? (T)0 : before.value;
    }
    __device__ __forceinline__ static T inclusive(Value through) { return through.value; }
};
// ANCHOR_END: segmented

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

// Every kernel for float, int and unsigned: <name>_f32, <name>_i32, <name>_u32.

// Step 1 and step 2: one block.
extern "C" __global__ void __launch_bounds__(1024)
    scan_hillis_steele_f32(const float* __restrict__ input, float* __restrict__ output, unsigned n)
{
    hillis_steele<float>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_hillis_steele_i32(const int* __restrict__ input, int* __restrict__ output, unsigned n)
{
    hillis_steele<int>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_hillis_steele_u32(const unsigned* __restrict__ input, unsigned* __restrict__ output,
                           unsigned n)
{
    hillis_steele<unsigned>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_blelloch_f32(const float* __restrict__ input, float* __restrict__ output, unsigned n)
{
    blelloch<float, false>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_blelloch_i32(const int* __restrict__ input, int* __restrict__ output, unsigned n)
{
    blelloch<int, false>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_blelloch_u32(const unsigned* __restrict__ input, unsigned* __restrict__ output, unsigned n)
{
    blelloch<unsigned, false>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_blelloch_padded_f32(const float* __restrict__ input, float* __restrict__ output,
                             unsigned n)
{
    blelloch<float, true>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_blelloch_padded_i32(const int* __restrict__ input, int* __restrict__ output, unsigned n)
{
    blelloch<int, true>(input, output, n);
}

extern "C" __global__ void __launch_bounds__(1024)
    scan_blelloch_padded_u32(const unsigned* __restrict__ input, unsigned* __restrict__ output,
                             unsigned n)
{
    blelloch<unsigned, true>(input, output, n);
}

// Step 3: scan-then-propagate (scan_tiles, add_tile_prefixes) and reduce-then-scan (reduce_tiles,
// scan_tiles_with_prefix); both scan the tile sums with scan_tiles.
extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    scan_tiles_f32(const float* input, float* output, float* tile_sums, unsigned long long n)
{
    scan_tiles<float>(input, output, tile_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    scan_tiles_i32(const int* input, int* output, int* tile_sums, unsigned long long n)
{
    scan_tiles<int>(input, output, tile_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    scan_tiles_u32(const unsigned* input, unsigned* output, unsigned* tile_sums,
                   unsigned long long n)
{
    scan_tiles<unsigned>(input, output, tile_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    add_tile_prefixes_f32(float* data, const float* scanned_sums, unsigned long long n)
{
    add_tile_prefixes<float>(data, scanned_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    add_tile_prefixes_i32(int* data, const int* scanned_sums, unsigned long long n)
{
    add_tile_prefixes<int>(data, scanned_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    add_tile_prefixes_u32(unsigned* data, const unsigned* scanned_sums, unsigned long long n)
{
    add_tile_prefixes<unsigned>(data, scanned_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    reduce_tiles_f32(const float* input, float* tile_sums, unsigned long long n)
{
    reduce_tiles<float>(input, tile_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    reduce_tiles_i32(const int* input, int* tile_sums, unsigned long long n)
{
    reduce_tiles<int>(input, tile_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    reduce_tiles_u32(const unsigned* input, unsigned* tile_sums, unsigned long long n)
{
    reduce_tiles<unsigned>(input, tile_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    scan_tiles_with_prefix_f32(const float* input, float* output, const float* scanned_sums,
                               unsigned long long n)
{
    scan_tiles_with_prefix<float>(input, output, scanned_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    scan_tiles_with_prefix_i32(const int* input, int* output, const int* scanned_sums,
                               unsigned long long n)
{
    scan_tiles_with_prefix<int>(input, output, scanned_sums, n);
}

extern "C" __global__ void __launch_bounds__(MULTI_PASS_THREADS)
    scan_tiles_with_prefix_u32(const unsigned* input, unsigned* output,
                               const unsigned* scanned_sums, unsigned long long n)
{
    scan_tiles_with_prefix<unsigned>(input, output, scanned_sums, n);
}

// Step 4: one pass, inclusive and exclusive: scan_single_pass (Classic), scan_early_loads
// (EarlyLoads), scan_wide_look_back (WideLookBack, tried) and segmented_scan (the classic form over
// (value, head) pairs: its tile loaded after its ticket, as early loads' guess is nearly always
// wrong and the classic form measured faster). The input and output may be the same buffer (an
// in-place scan): no __restrict__ on them.
template <class T, class Form, bool INCLUSIVE>
__device__ __forceinline__ void scan_plain(const T* input, T* output, unsigned long long* status,
                                           unsigned* counter, unsigned long long n, unsigned epoch)
{
    const PlainTiles<T> io = {input, output, both_aligned(input, output)};
    single_pass<PlainTiles<T>, SCAN_THREADS, SCAN_ITEMS, INCLUSIVE, Form>(
        io, TileStatus{status, epoch}, counter, n);
}

template <class T, bool INCLUSIVE>
__device__ __forceinline__ void
scan_segmented(const T* input, const unsigned char* heads, T* output, unsigned long long* status,
               unsigned* counter, unsigned long long n, unsigned epoch)
{
    const SegmentedTiles<T> io = {input, heads, output};
    single_pass<SegmentedTiles<T>, SCAN_THREADS, SCAN_ITEMS, INCLUSIVE, Classic>(
        io, TileStatus{status, epoch}, counter, n);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_single_pass_inclusive_f32(const float* input, float* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<float, Classic, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_single_pass_inclusive_i32(const int* input, int* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<int, Classic, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_single_pass_inclusive_u32(const unsigned* input, unsigned* output,
                                   unsigned long long* status, unsigned* counter,
                                   unsigned long long n, unsigned epoch)
{
    scan_plain<unsigned, Classic, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_single_pass_exclusive_f32(const float* input, float* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<float, Classic, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_single_pass_exclusive_i32(const int* input, int* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<int, Classic, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_single_pass_exclusive_u32(const unsigned* input, unsigned* output,
                                   unsigned long long* status, unsigned* counter,
                                   unsigned long long n, unsigned epoch)
{
    scan_plain<unsigned, Classic, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_early_loads_inclusive_f32(const float* input, float* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<float, EarlyLoads, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_early_loads_inclusive_i32(const int* input, int* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<int, EarlyLoads, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_early_loads_inclusive_u32(const unsigned* input, unsigned* output,
                                   unsigned long long* status, unsigned* counter,
                                   unsigned long long n, unsigned epoch)
{
    scan_plain<unsigned, EarlyLoads, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_early_loads_exclusive_f32(const float* input, float* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<float, EarlyLoads, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_early_loads_exclusive_i32(const int* input, int* output, unsigned long long* status,
                                   unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<int, EarlyLoads, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_early_loads_exclusive_u32(const unsigned* input, unsigned* output,
                                   unsigned long long* status, unsigned* counter,
                                   unsigned long long n, unsigned epoch)
{
    scan_plain<unsigned, EarlyLoads, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_wide_look_back_inclusive_f32(const float* input, float* output, unsigned long long* status,
                                      unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<float, WideLookBack, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_wide_look_back_inclusive_i32(const int* input, int* output, unsigned long long* status,
                                      unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<int, WideLookBack, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_wide_look_back_inclusive_u32(const unsigned* input, unsigned* output,
                                      unsigned long long* status, unsigned* counter,
                                      unsigned long long n, unsigned epoch)
{
    scan_plain<unsigned, WideLookBack, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_wide_look_back_exclusive_f32(const float* input, float* output, unsigned long long* status,
                                      unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<float, WideLookBack, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_wide_look_back_exclusive_i32(const int* input, int* output, unsigned long long* status,
                                      unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_plain<int, WideLookBack, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_wide_look_back_exclusive_u32(const unsigned* input, unsigned* output,
                                      unsigned long long* status, unsigned* counter,
                                      unsigned long long n, unsigned epoch)
{
    scan_plain<unsigned, WideLookBack, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    segmented_scan_inclusive_f32(const float* input, const unsigned char* heads, float* output,
                                 unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_segmented<float, true>(input, heads, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    segmented_scan_inclusive_i32(const int* input, const unsigned char* heads, int* output,
                                 unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_segmented<int, true>(input, heads, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    segmented_scan_inclusive_u32(const unsigned* input, const unsigned char* heads,
                                 unsigned* output, unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_segmented<unsigned, true>(input, heads, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    segmented_scan_exclusive_f32(const float* input, const unsigned char* heads, float* output,
                                 unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_segmented<float, false>(input, heads, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    segmented_scan_exclusive_i32(const int* input, const unsigned char* heads, int* output,
                                 unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_segmented<int, false>(input, heads, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    segmented_scan_exclusive_u32(const unsigned* input, const unsigned char* heads,
                                 unsigned* output, unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_segmented<unsigned, false>(input, heads, output, status, counter, n, epoch);
}

// Step 5: the tile in shared memory by one bulk copy, inclusive and exclusive.
template <class T, bool INCLUSIVE>
__device__ __forceinline__ void scan_bulk(const T* input, T* output, unsigned long long* status,
                                          unsigned* counter, unsigned long long n, unsigned epoch)
{
    bulk_copy_pass<T, SCAN_THREADS, SCAN_BULK_ITEMS, SCAN_ITEMS, INCLUSIVE>(
        input, output, TileStatus{status, epoch}, counter, n, look_back_pause_ns());
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_bulk_copy_inclusive_f32(const float* input, float* output, unsigned long long* status,
                                 unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_bulk<float, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_bulk_copy_inclusive_i32(const int* input, int* output, unsigned long long* status,
                                 unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_bulk<int, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_bulk_copy_inclusive_u32(const unsigned* input, unsigned* output,
                                 unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_bulk<unsigned, true>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_bulk_copy_exclusive_f32(const float* input, float* output, unsigned long long* status,
                                 unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_bulk<float, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_bulk_copy_exclusive_i32(const int* input, int* output, unsigned long long* status,
                                 unsigned* counter, unsigned long long n, unsigned epoch)
{
    scan_bulk<int, false>(input, output, status, counter, n, epoch);
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
    scan_bulk_copy_exclusive_u32(const unsigned* input, unsigned* output,
                                 unsigned long long* status, unsigned* counter,
                                 unsigned long long n, unsigned epoch)
{
    scan_bulk<unsigned, false>(input, output, status, counter, n, epoch);
}
