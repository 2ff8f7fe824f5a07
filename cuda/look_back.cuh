// look_back.cuh: the machinery of a single-pass scan with decoupled look-back (Merrill and Garland,
// "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016), shared by the scan kernels
// and by stream compaction:
//
//   - scan operations (ScanSum<T>) and their values as 32-bit words;
//   - warp-wide scans and in-order reductions with shuffles;
//   - tile tickets drawn from an atomic counter, so tile k is only ever processed by a block that
//     started after the blocks holding tiles 0 .. k-1 (blocks need not start in blockIdx order);
//   - tile status words: a tile's 32-bit value and its flag packed in one 64-bit word, written and
//     read as one access, so a reader can never see a flag without its value;
//   - the look-back itself: one warp reads 32 predecessors at a time, nearest first, and combines
//     their values up to the nearest one that holds an inclusive prefix;
//   - tile_prefix: what a tile's warp 0 does with it (publish the aggregate, look back, publish the
//     inclusive prefix).
//
// An operation `Op` is a struct with
//   typedef Value                  what is scanned (a 4-byte number, or a number and a flag)
//   identity()                     the value that changes nothing
//   combine(earlier, later)        two values in order (need not be commutative)
//   bits(v), mark(v), unpack(b, m) the value as a 32-bit word and one spare bit, and back
#pragma once
#include "block_reduce.cuh"

#define FULL_MASK 0xffffffffu

// ---- 4-byte values as 32-bit words, and shuffles of them ----
__device__ __forceinline__ unsigned to_bits(float x)
{
    return __float_as_uint(x);
}
__device__ __forceinline__ unsigned to_bits(int x)
{
    return (unsigned)x;
}
__device__ __forceinline__ unsigned to_bits(unsigned x)
{
    return x;
}

template <class T> __device__ __forceinline__ T from_bits(unsigned bits);
template <> __device__ __forceinline__ float from_bits<float>(unsigned bits)
{
    return __uint_as_float(bits);
}
template <> __device__ __forceinline__ int from_bits<int>(unsigned bits)
{
    return (int)bits;
}
template <> __device__ __forceinline__ unsigned from_bits<unsigned>(unsigned bits)
{
    return bits;
}

#define SCAN_SHUFFLES(T)                                                                           \
    __device__ __forceinline__ T shfl_up(T v, int delta)                                           \
    {                                                                                              \
        return __shfl_up_sync(FULL_MASK, v, delta);                                                \
    }                                                                                              \
    __device__ __forceinline__ T shfl_down(T v, int delta)                                         \
    {                                                                                              \
        return __shfl_down_sync(FULL_MASK, v, delta);                                              \
    }                                                                                              \
    __device__ __forceinline__ T shfl_idx(T v, int lane)                                           \
    {                                                                                              \
        return __shfl_sync(FULL_MASK, v, lane);                                                    \
    }
SCAN_SHUFFLES(float)
SCAN_SHUFFLES(int)
SCAN_SHUFFLES(unsigned)

// ANCHOR: scan_sum
// The sum: integers wrap around modulo 2^32 (as unsigned arithmetic does), floats round.
template <class T> struct ScanSum {
    typedef T Value;
    __device__ static T identity() { return (T)0; }
    __device__ static T combine(T earlier, T later) { return wrapping_add(earlier, later); }
    __device__ static unsigned bits(T v) { return to_bits(v); }
    __device__ static bool mark(T) { return false; }
    __device__ static T unpack(unsigned bits, bool) { return from_bits<T>(bits); }
};
// ANCHOR_END: scan_sum

// ANCHOR: warp_scan
// Inclusive scan across the 32 lanes of a warp: after step k each lane holds the combination of
// the 2^k lanes ending at it. log2(32) = 5 shuffles, each moving registers between lanes.
template <class Op>
__device__ __forceinline__ typename Op::Value warp_inclusive_scan(typename Op::Value v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        typename Op::Value earlier = shfl_up(v, offset);
        if (lane >= offset) {
            v = Op::combine(earlier, v);
        }
    }
    return v;
}
// ANCHOR_END: warp_scan

// Combines the 32 lanes' values in reverse lane order (lane 31 first, lane 0 last: the look-back
// holds the nearest predecessor in lane 0), and gives the result to every lane.
template <class Op>
__device__ __forceinline__ typename Op::Value warp_reduce_reversed(typename Op::Value v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        typename Op::Value earlier = shfl_down(v, offset);
        if (lane + offset < 32) {
            v = Op::combine(earlier, v);
        }
    }
    return shfl_idx(v, 0);
}

// ---- tile tickets ----

// ANCHOR: ticket
// Draws the next tile number from `counter`. A launch draws exactly `last_draw + 1` numbers (each
// block knows how many it draws); the block that draws the last one sets the counter back to 0,
// ready for the next launch on the stream. Blocks start in any order on a GPU, but a block only
// draws after it started, so the blocks holding earlier tiles are running or done: the look-back
// waits only on blocks that make progress.
__device__ __forceinline__ unsigned draw_tile(unsigned* counter, unsigned last_draw)
{
    const unsigned tile = atomicAdd(counter, 1u);
    if (tile == last_draw) {
        atomicExch(counter, 0u);
    }
    return tile;
}
// ANCHOR_END: ticket

// ---- tile status words ----

// ANCHOR: status
// A tile's status, one 64-bit word per tile:
//   bits 63..32  the value (ScanSum: the tile's sum, or the sum of every element up to its end)
//   bits 31..3   the launch's epoch (1 .. 2^29 - 1), so words left by an earlier launch read as
//                empty and the array needs no clearing between launches
//   bit  2       a spare bit the operation may use (a segmented scan: "a segment starts here")
//   bits 1..0    the flag: empty, aggregate (this tile's own value) or prefix (everything up to it)
// The word is stored and loaded as one 64-bit access, relaxed at GPU scope: it carries everything a
// reader needs, so nothing else has to be ordered around it, and a reader sees either the whole old
// word or the whole new one.
enum : unsigned { TILE_EMPTY = 0u, TILE_AGGREGATE = 1u, TILE_PREFIX = 2u };
#define EPOCH_MASK 0x1fffffffu

struct TileStatus {
    unsigned long long* words;
    unsigned epoch;
};

__device__ __forceinline__ unsigned long long load_status(const unsigned long long* word)
{
    unsigned long long value;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(word) : "memory");
    return value;
}

__device__ __forceinline__ void store_status(unsigned long long* word, unsigned long long value)
{
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
}

template <class Op>
__device__ __forceinline__ void publish(TileStatus status, unsigned tile, unsigned flag,
                                        typename Op::Value v)
{
    const unsigned long long word = ((unsigned long long)Op::bits(v) << 32) |
                                    ((status.epoch & EPOCH_MASK) << 3) |
                                    ((unsigned)Op::mark(v) << 2) | flag;
    store_status(status.words + tile, word);
}

// The flag of a status word, TILE_EMPTY if another launch wrote it.
__device__ __forceinline__ unsigned status_flag(unsigned long long word, unsigned epoch)
{
    return (((unsigned)word >> 3) & EPOCH_MASK) == (epoch & EPOCH_MASK) ? (unsigned)word & 3u
                                                                        : TILE_EMPTY;
}
// ANCHOR_END: status

// The lowest lane of a ballot, 32 for none (a population count: the bits up to the lowest set one).
__device__ __forceinline__ int lowest_lane(unsigned lanes)
{
    return lanes ? __popc(lanes ^ (lanes - 1)) - 1 : 32;
}

// ANCHOR: look_back
// The exclusive prefix of `tile` (tile > 0): the combination of every earlier tile's value. Called
// by all 32 lanes of one warp; returns the prefix in every lane.
//
// The warp reads 32 * PER_LANE predecessors per round trip to L2: lane i reads the PER_LANE tiles
// from `window - i * PER_LANE` down, so lane 0 holds the nearest ones. It waits until every tile
// from the nearest up to the nearest one holding a prefix has published something, combines their
// values in order, and stops there; if none holds a prefix, it combines all of them and moves on
// to the next 32 * PER_LANE. Tile 0 always publishes a prefix, so the walk ends. With PER_LANE = 1
// this is the usual look-back, and the one the scans use; reading several tiles per lane cuts the
// round trips of a long walk, but measured slower (scan_wide_look_back, see the scan chapter).
// pause_ns: a pause before the first read (the caller has just published its aggregate), so that
// the predecessors have published too by the time the warp reads (look_back_pause_ns, below);
// SLEEP_NS: a pause between reads that found a predecessor still empty.
template <class Op, int PER_LANE, int SLEEP_NS>
__device__ typename Op::Value look_back(TileStatus status, unsigned tile, unsigned pause_ns = 0)
{
    typedef typename Op::Value Value;
    const int lane = threadIdx.x & 31;
    if (pause_ns > 0) {
        __nanosleep(pause_ns);
    }
    Value prefix = Op::identity(); // the tiles between the current window and `tile`
    int window = (int)tile - 1;
    while (true) {
        Value v[PER_LANE];
        int first_prefix;           // this lane's nearest tile with a prefix (PER_LANE: none)
        unsigned lanes_with_prefix; // the lanes that hold one
        while (true) {
            unsigned flag[PER_LANE];
#pragma unroll
            for (int j = 0; j < PER_LANE; ++j) {
                const int predecessor = window - lane * PER_LANE - j;
                flag[j] = TILE_PREFIX; // before tile 0 there is nothing: the identity, as a prefix
                v[j] = Op::identity();
                if (predecessor >= 0) {
                    const unsigned long long word = load_status(status.words + predecessor);
                    flag[j] = status_flag(word, status.epoch);
                    v[j] = Op::unpack((unsigned)(word >> 32), (word >> 2) & 1u);
                }
            }
            first_prefix = PER_LANE;
#pragma unroll
            for (int j = PER_LANE - 1; j >= 0; --j) {
                if (flag[j] == TILE_PREFIX) {
                    first_prefix = j;
                }
            }
            bool empty = false, empty_before_prefix = false;
#pragma unroll
            for (int j = 0; j < PER_LANE; ++j) {
                empty = empty || flag[j] == TILE_EMPTY;
                empty_before_prefix =
                    empty_before_prefix || (flag[j] == TILE_EMPTY && j < first_prefix);
            }
            lanes_with_prefix = __ballot_sync(FULL_MASK, first_prefix < PER_LANE);
            const int nearest = lowest_lane(lanes_with_prefix);
            // Waiting on: an empty tile nearer than the nearest prefix.
            const bool waiting =
                (lane < nearest && empty) || (lane == nearest && empty_before_prefix);
            if (!__any_sync(FULL_MASK, waiting)) {
                break;
            }
            if (SLEEP_NS > 0) {
                __nanosleep(SLEEP_NS);
            }
        }
        const int nearest = lowest_lane(lanes_with_prefix);
        const int counted = lane < nearest ? PER_LANE : lane == nearest ? first_prefix + 1 : 0;
        Value mine = Op::identity(); // this lane's counted tiles, earliest first
#pragma unroll
        for (int j = PER_LANE - 1; j >= 0; --j) {
            if (j < counted) {
                mine = Op::combine(mine, v[j]);
            }
        }
        prefix = Op::combine(warp_reduce_reversed<Op>(mine), prefix);
        if (lanes_with_prefix != 0) {
            return prefix;
        }
        window -= 32 * PER_LANE;
    }
}
// ANCHOR_END: look_back

// ANCHOR: pause
// The pause before a look-back's first read, in ns (__nanosleep's: about that long): 1150 on grids
// of 512 tiles or more, else 0. A tile that reads at once finds its nearest predecessors still
// loading their own tiles and reads again and again, hundreds of warps at a time, crowding the L2
// lines its predecessors are about to publish to; after a pause, one read usually finds a prefix.
// On a small grid the chain of prefixes is most of the launch, and a pause only lengthens it. The
// numbers are CUB's for DeviceSelect::If on sm_90 (fixed_delay_constructor_t<76, 1150>, applied
// from 500 tiles), not ours: on an H100, grids of 128 and 171 tiles lose with the pause and grids
// of thousands gain; between, nothing was measured (scripts/lab/compact/README.md and
// scripts/lab/scan/README.md).
#define LOOK_BACK_PAUSE_NS        1150u
#define LOOK_BACK_PAUSE_MIN_TILES 512u
__device__ __forceinline__ unsigned look_back_pause_ns()
{
    return gridDim.x >= LOOK_BACK_PAUSE_MIN_TILES ? LOOK_BACK_PAUSE_NS : 0u;
}
// ANCHOR_END: pause

// ANCHOR: tile_prefix
// Everything before `tile`, found by warp 0 while the block's other warps wait: the tile publishes
// its aggregate at once (tile 0: its prefix, there is nothing before it), looks back (pausing
// pause_ns before the first read: look_back_pause_ns), then publishes its inclusive prefix for the
// tiles after it.
template <class Op, int PER_LANE, int SLEEP_NS>
__device__ __forceinline__ typename Op::Value
tile_prefix(TileStatus status, unsigned tile, typename Op::Value aggregate, unsigned pause_ns = 0)
{
    const int lane = threadIdx.x & 31;
    if (tile == 0) {
        if (lane == 0) {
            publish<Op>(status, 0, TILE_PREFIX, aggregate);
        }
        return Op::identity();
    }
    // ANCHOR: solution(scan) lane 0 publishes the tile's aggregate (publish, TILE_AGGREGATE); the warp looks back over the predecessors (look_back<Op, PER_LANE, SLEEP_NS>, pausing pause_ns first) for the exclusive prefix; lane 0 publishes the inclusive prefix (TILE_PREFIX) for the tiles after it; return the exclusive prefix
    if (lane == 0) {
        publish<Op>(status, tile, TILE_AGGREGATE, aggregate);
    }
    const typename Op::Value exclusive = look_back<Op, PER_LANE, SLEEP_NS>(status, tile, pause_ns);
    if (lane == 0) {
        publish<Op>(status, tile, TILE_PREFIX, Op::combine(exclusive, aggregate));
    }
    return exclusive;
    // ANCHOR_END: solution
    // ANCHOR: stub return Op::identity();
}
// ANCHOR_END: tile_prefix
