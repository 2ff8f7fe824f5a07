// The single-pass compaction with its tile brought into shared memory by one bulk copy (as the
// scan's step 5), other tiles and look-back delays (wide<>), and fewer instructions an element
// (lean<>), the tile loaded once the ticket is back (ticket_first<>, the ninth and tenth runs, now
// the chapter's), beside the chapter's single pass and CUB's DeviceSelect::If and ::Flagged, in one run. Every variant is checked against a CPU compaction (bit for bit) before it is timed; times are
// the median of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o bulk-copy scripts/lab/compact/bulk-copy.cu
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../../../cuda/bulk_copy.cuh"
#include "../../../cuda/compact.cu"

#include "../common/tuning.cuh"

template <int THREADS, int ITEMS, bool MASKED>
__global__ void __launch_bounds__(THREADS)
    chapter(const float* input, const unsigned char* mask, float threshold, float* output, unsigned long long capacity,
            unsigned* kept, unsigned long long* status, unsigned* counter, unsigned long long n, unsigned epoch)
{
    if (MASKED) {
        const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
        single_pass<THREADS, ITEMS, float>(select, output, capacity, kept, TileStatus{status, epoch}, counter, n);
    } else {
        const ByTest<float> select = {input, KEEP_GREATER, threshold, aligned(input, 16)};
        single_pass<THREADS, ITEMS, float>(select, output, capacity, kept, TileStatus{status, epoch}, counter, n);
    }
}

template <int THREADS, int ITEMS, bool MASKED, bool LOOK>
__global__ void __launch_bounds__(THREADS)
    bulk(const float* input, const unsigned char* mask, float threshold, float* output, unsigned long long capacity,
         unsigned* kept, unsigned long long* status_words, unsigned* counter, unsigned long long n, unsigned epoch)
{
    constexpr unsigned long long TILE = THREADS * ITEMS;
    typedef float4 V;
    __shared__ __align__(128) float tile_data[TILE]; // the tile, then its kept elements in order
    __shared__ __align__(16) unsigned char tile_mask[MASKED ? TILE : 16];
    __shared__ __align__(8) unsigned long long landed;
    __shared__ unsigned drawn;
    __shared__ unsigned warp_counts[THREADS / 32];
    __shared__ unsigned before_tile;
    const TileStatus status{status_words, epoch};
    const bool vectors = aligned(input, 16) && (!MASKED || aligned(mask, 16));
    const int lane = threadIdx.x & 31;
    const unsigned long long warp_offset = (threadIdx.x / 32) * 32 * ITEMS;
    if (threadIdx.x == 0) {
        drawn = draw_tile(counter, gridDim.x - 1);
        if (vectors && drawn * TILE + TILE <= n) {
            const unsigned a = shared_address(&landed);
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(a) : "memory");
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
            const unsigned bytes = TILE * 4 + (MASKED ? TILE : 0);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(bytes) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                             shared_address(tile_data)),
                         "l"(input + drawn * TILE), "r"((unsigned)(TILE * 4)), "r"(a)
                         : "memory");
            if (MASKED) {
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                                 shared_address(tile_mask)),
                             "l"(mask + drawn * TILE), "r"((unsigned)TILE), "r"(a)
                             : "memory");
            }
        }
    }
    __syncthreads();
    const unsigned tile = drawn;
    const bool copied = vectors && tile * TILE + TILE <= n;
    float x[ITEMS];
    bool keep[ITEMS];
    if (copied) {
        wait_bulk_copy(&landed);
#pragma unroll
        for (int j = 0; j < ITEMS / 4; ++j) {
            const V v = reinterpret_cast<const V*>(tile_data + warp_offset)[32 * j + lane];
            x[4 * j] = v.x;
            x[4 * j + 1] = v.y;
            x[4 * j + 2] = v.z;
            x[4 * j + 3] = v.w;
            if (MASKED) {
                const uchar4 m = reinterpret_cast<const uchar4*>(tile_mask + warp_offset)[32 * j + lane];
                keep[4 * j] = m.x != 0;
                keep[4 * j + 1] = m.y != 0;
                keep[4 * j + 2] = m.z != 0;
                keep[4 * j + 3] = m.w != 0;
            } else {
#pragma unroll
                for (int c = 0; c < 4; ++c) keep[4 * j + c] = x[4 * j + c] > threshold;
            }
        }
    } else if (MASKED) {
        const ByMask<float> select = {input, mask, false};
        load_tile<ITEMS>(select, tile * TILE + warp_offset, n, x, keep);
    } else {
        const ByTest<float> select = {input, KEEP_GREATER, threshold, false};
        load_tile<ITEMS>(select, tile * TILE + warp_offset, n, x, keep);
    }
    unsigned rank[ITEMS];
    const unsigned tile_count = rank_tile<THREADS, ITEMS>(keep, rank, warp_counts); // ends with a barrier
    if (threadIdx.x < 32) {
        unsigned earlier = 0;
        if (LOOK) earlier = tile_prefix<ScanSum<unsigned>, 1, 0>(status, tile, tile_count);
        if (threadIdx.x == 0) before_tile = earlier;
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (keep[k]) tile_data[rank[k]] = x[k];
    }
    __syncthreads();
    const unsigned long long start = before_tile;
    for (unsigned i = threadIdx.x; i < tile_count; i += THREADS) {
        if (start + i < capacity) output[start + i] = tile_data[i];
    }
    if (threadIdx.x == 0 && tile == gridDim.x - 1) *kept = (unsigned)start + tile_count;
}


// The chapter's single pass (cuda/compact.cu: single_pass) with PER_LANE predecessors per lane of
// the look-back warp (32 * PER_LANE tiles per round trip to L2), a sleep of SLEEP_NS between the
// look-back's polls, and registers for MIN_BLOCKS blocks per SM. With RUNTIME_TEST the test comes
// from the kernel's `test` parameter, as in the chapter's entry points, so the compiler cannot
// specialise the kernel to x > t.
template <int THREADS, int ITEMS, int PER_LANE, bool MASKED, int SLEEP_NS = 0, int MIN_BLOCKS = 1,
          bool RUNTIME_TEST = false, int FIRST_SLEEP_NS = 0>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    wide(const float* input, const unsigned char* mask, float threshold, float* output, unsigned long long capacity,
         unsigned* kept, unsigned long long* status_words, unsigned* counter, unsigned long long n, unsigned epoch,
         int test)
{
    constexpr unsigned long long TILE = THREADS * ITEMS;
    __shared__ unsigned drawn;
    __shared__ unsigned warp_counts[THREADS / 32];
    __shared__ unsigned before_tile;
    __shared__ float staged[TILE];
    const TileStatus status{status_words, epoch};
    const unsigned long long warp_offset = (threadIdx.x / 32) * 32 * ITEMS;
    const ByMask<float> by_mask = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    const ByTest<float> by_test = {input, RUNTIME_TEST ? test : KEEP_GREATER, threshold, aligned(input, 16)};
    if (threadIdx.x == 0) {
        drawn = draw_tile(counter, gridDim.x - 1);
    }
    float x[ITEMS];
    bool keep[ITEMS];
    if (MASKED) load_tile<ITEMS>(by_mask, blockIdx.x * TILE + warp_offset, n, x, keep);
    else load_tile<ITEMS>(by_test, blockIdx.x * TILE + warp_offset, n, x, keep);
    __syncthreads();
    const unsigned tile = drawn;
    if (tile != blockIdx.x) {
        if (MASKED) load_tile<ITEMS>(by_mask, tile * TILE + warp_offset, n, x, keep);
        else load_tile<ITEMS>(by_test, tile * TILE + warp_offset, n, x, keep);
    }
    unsigned rank[ITEMS];
    const unsigned tile_count = rank_tile<THREADS, ITEMS>(keep, rank, warp_counts);
    if (threadIdx.x < 32) {
        // CUB's order (fixed_delay_constructor_t): publish the count, pause once, then look back.
        const unsigned earlier =
            tile_prefix<ScanSum<unsigned>, PER_LANE, SLEEP_NS>(status, tile, tile_count, FIRST_SLEEP_NS);
        if (threadIdx.x == 0) before_tile = earlier;
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (keep[k]) staged[rank[k]] = x[k];
    }
    __syncthreads();
    const unsigned long long start = before_tile;
    for (unsigned i = threadIdx.x; i < tile_count; i += THREADS) {
        if (start + i < capacity) output[start + i] = staged[i];
    }
    if (threadIdx.x == 0 && tile == gridDim.x - 1) *kept = (unsigned)start + tile_count;
}

// Fewer instructions an element (the eighth run). ncu (compact-ncu.txt) has the chapter's single
// pass issuing about 1.6 times CUB's instructions for the same elements. Two cuts:
//   HOIST  the output loop bounded once by the capacity, where the chapter compares every element's
//          place with it;
//   PACKED the warp's ranks from one scan of packed counts: lane l's kept elements in each of its
//          four rows (0 to 4, a byte each, ITEMS = 16) packed in one word, an inclusive scan of the
//          words over the warp by shuffles (no byte passes 128: no carries), where rank_in_warp
//          takes four ballots and eight population counts a row.
template <int ITEMS>
__device__ __forceinline__ unsigned rank_in_warp_packed(const bool (&keep)[ITEMS], unsigned (&rank)[ITEMS])
{
    static_assert(ITEMS == 16, "four rows of four: one byte a row");
    const unsigned lane = threadIdx.x & 31;
    unsigned mine = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const unsigned row = (unsigned)keep[4 * j] + keep[4 * j + 1] + keep[4 * j + 2] + keep[4 * j + 3];
        mine |= row << (8 * j);
    }
    unsigned scan = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned up = __shfl_up_sync(FULL_MASK, scan, d);
        if (lane >= (unsigned)d) scan += up;
    }
    const unsigned total = __shfl_sync(FULL_MASK, scan, 31);
    const unsigned before_lane = scan - mine; // byte j: row j's kept elements in the lanes below
    unsigned before_row = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        unsigned running = before_row + ((before_lane >> (8 * j)) & 0xffu);
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            rank[4 * j + c] = running;
            running += keep[4 * j + c] ? 1u : 0u;
        }
        before_row += (total >> (8 * j)) & 0xffu;
    }
    return before_row;
}

template <int THREADS, int ITEMS, bool PACKED>
__device__ __forceinline__ unsigned rank_tile_lean(const bool (&keep)[ITEMS], unsigned (&rank)[ITEMS],
                                                   unsigned* warp_counts)
{
    if constexpr (!PACKED) {
        return rank_tile<THREADS, ITEMS>(keep, rank, warp_counts);
    } else {
        const unsigned warp_count = rank_in_warp_packed<ITEMS>(keep, rank);
        if ((threadIdx.x & 31) == 0) warp_counts[threadIdx.x / 32] = warp_count;
        __syncthreads();
        unsigned before_warp, tile_count;
        sum_warps<THREADS / 32>(warp_counts, before_warp, tile_count);
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) rank[k] += before_warp;
        return tile_count;
    }
}

// wide<> with the chapter's pause, its runtime test, and the two cuts (by a test only).
template <int THREADS, int ITEMS, bool HOIST, bool PACKED, int MIN_BLOCKS = 3>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    lean(const float* input, float threshold, float* output, unsigned long long capacity, unsigned* kept,
         unsigned long long* status_words, unsigned* counter, unsigned long long n, unsigned epoch, int test)
{
    constexpr unsigned long long TILE = THREADS * ITEMS;
    __shared__ unsigned drawn;
    __shared__ unsigned warp_counts[THREADS / 32];
    __shared__ unsigned before_tile;
    __shared__ float staged[TILE];
    const TileStatus status{status_words, epoch};
    const unsigned long long warp_offset = (threadIdx.x / 32) * 32 * ITEMS;
    const ByTest<float> by_test = {input, test, threshold, aligned(input, 16)};
    if (threadIdx.x == 0) drawn = draw_tile(counter, gridDim.x - 1);
    float x[ITEMS];
    bool keep[ITEMS];
    load_tile<ITEMS>(by_test, blockIdx.x * TILE + warp_offset, n, x, keep);
    __syncthreads();
    const unsigned tile = drawn;
    if (tile != blockIdx.x) load_tile<ITEMS>(by_test, tile * TILE + warp_offset, n, x, keep);
    unsigned rank[ITEMS];
    const unsigned tile_count = rank_tile_lean<THREADS, ITEMS, PACKED>(keep, rank, warp_counts);
    if (threadIdx.x < 32) {
        const unsigned earlier = tile_prefix<ScanSum<unsigned>, 1, 0>(status, tile, tile_count, look_back_pause_ns());
        if (threadIdx.x == 0) before_tile = earlier;
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (keep[k]) staged[rank[k]] = x[k];
    }
    __syncthreads();
    const unsigned long long start = before_tile;
    if (HOIST) {
        const unsigned room = capacity > start ? (unsigned)min(capacity - start, (unsigned long long)tile_count) : 0u;
        float* run = output + start;
        for (unsigned i = threadIdx.x; i < room; i += THREADS) run[i] = staged[i];
    } else {
        for (unsigned i = threadIdx.x; i < tile_count; i += THREADS) {
            if (start + i < capacity) output[start + i] = staged[i];
        }
    }
    if (threadIdx.x == 0 && tile == gridDim.x - 1) *kept = (unsigned)start + tile_count;
}

// The ninth run: the chapter's single pass with its tile loaded only once the ticket is back
// ("ticket first"). The chapter then loaded tile blockIdx.x while the ticket was on its way and
// again when the ticket named another tile; ncu's per-instruction counts on an H100 (2^24, half
// kept by a test) had 27,136 of the 32,768 warps of the launch through the second load: 83% of the
// blocks loading twice, the first load's bytes read for nothing and the second's latency in full.
template <int THREADS, int ITEMS, bool MASKED, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    ticket_first(const float* input, const unsigned char* mask, float threshold, float* output,
                 unsigned long long capacity, unsigned* kept, unsigned long long* status_words, unsigned* counter,
                 unsigned long long n, unsigned epoch)
{
    // The chapter's single_pass loads after its ticket since these runs (it was this kernel's own
    // copy of it then, the early load left out); what is left here is the tile and the blocks an SM.
    if (MASKED) {
        const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
        single_pass<THREADS, ITEMS, float>(select, output, capacity, kept, TileStatus{status_words, epoch}, counter, n);
    } else {
        const ByTest<float> select = {input, KEEP_GREATER, threshold, aligned(input, 16)};
        single_pass<THREADS, ITEMS, float>(select, output, capacity, kept, TileStatus{status_words, epoch}, counter, n);
    }
}

// Buffers and launches.
// CUB's test: x > t.
struct Above {
    float t;
    __host__ __device__ bool operator()(float x) const { return x > t; }
};

struct Buffers {
    float* in;
    unsigned char* mask;
    float* out;
    unsigned* kept;
    unsigned long long* status;
    unsigned* counter;
};

static unsigned epoch = 0;
// (buffers, n, masked, threshold)
using Launch = std::function<void(Buffers&, unsigned long long, bool, float)>;

struct Variant {
    std::string name;
    Launch launch;
    int regs, occupancy;
};

// A variant: its launch, and the registers and blocks an SM of its kernel by a test.
template <class K>
static Variant described(std::string name, K by_test, int threads, Launch launch)
{
    Variant v{name, launch, 0, 0};
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, by_test));
    v.regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.occupancy, by_test, threads, 0));
    return v;
}

// The tiles of n elements, TILE a tile: the grid of every single pass here.
static unsigned tiles_of(unsigned long long n, unsigned long long tile) { return (unsigned)((n + tile - 1) / tile); }

// The kernels with chapter<>'s parameters (chapter<>, bulk<>, ticket_first<>): MASKED's by a mask,
// TEST's by x > threshold.
typedef void (*Kernel)(const float*, const unsigned char*, float, float*, unsigned long long, unsigned*,
                       unsigned long long*, unsigned*, unsigned long long, unsigned);
template <int THREADS, int ITEMS, Kernel MASKED, Kernel TEST>
static Variant paired_variant(std::string name)
{
    return described(name, TEST, THREADS, [](Buffers& b, unsigned long long n, bool masked, float threshold) {
        ++epoch;
        (masked ? MASKED : TEST)<<<tiles_of(n, THREADS * ITEMS), THREADS>>>(b.in, b.mask, threshold, b.out, n, b.kept,
                                                                            b.status, b.counter, n, epoch);
    });
}

template <int THREADS, int ITEMS>
static Variant chapter_variant(std::string name)
{
    return paired_variant<THREADS, ITEMS, chapter<THREADS, ITEMS, true>, chapter<THREADS, ITEMS, false>>(name);
}

template <int THREADS, int ITEMS, bool LOOK = true>
static Variant bulk_variant(std::string name)
{
    return paired_variant<THREADS, ITEMS, bulk<THREADS, ITEMS, true, LOOK>, bulk<THREADS, ITEMS, false, LOOK>>(name);
}

template <int THREADS, int ITEMS, int PER_LANE, int SLEEP_NS = 0, int MIN_BLOCKS = 1, bool RUNTIME_TEST = false,
          int FIRST_SLEEP_NS = 0>
static Variant wide_variant(std::string name)
{
    auto by_test = wide<THREADS, ITEMS, PER_LANE, false, SLEEP_NS, MIN_BLOCKS, RUNTIME_TEST, FIRST_SLEEP_NS>;
    return described(name, by_test, THREADS, [](Buffers& b, unsigned long long n, bool masked, float threshold) {
        ++epoch;
        auto kernel = masked ? wide<THREADS, ITEMS, PER_LANE, true, SLEEP_NS, MIN_BLOCKS, RUNTIME_TEST, FIRST_SLEEP_NS>
                             : wide<THREADS, ITEMS, PER_LANE, false, SLEEP_NS, MIN_BLOCKS, RUNTIME_TEST, FIRST_SLEEP_NS>;
        kernel<<<tiles_of(n, THREADS * ITEMS), THREADS>>>(b.in, b.mask, threshold, b.out, n, b.kept, b.status, b.counter,
                                                          n, epoch, KEEP_GREATER);
    });
}

// lean<> by a test; by a mask, the chapter's entry point (the cuts are for the test's form).
template <int THREADS, int ITEMS, bool HOIST, bool PACKED>
static Variant lean_variant(std::string name)
{
    auto kernel = lean<THREADS, ITEMS, HOIST, PACKED>;
    return described(name, kernel, THREADS, [](Buffers& b, unsigned long long n, bool masked, float threshold) {
        ++epoch;
        if (masked)
            compact_single_pass_masked_f32<<<tiles_of(n, COMPACT_THREADS * COMPACT_ITEMS), COMPACT_THREADS>>>(
                b.in, b.mask, b.out, n, b.kept, b.status, b.counter, n, epoch);
        else
            lean<THREADS, ITEMS, HOIST, PACKED><<<tiles_of(n, THREADS * ITEMS), THREADS>>>(
                b.in, threshold, b.out, n, b.kept, b.status, b.counter, n, epoch, KEEP_GREATER);
    });
}

template <int THREADS, int ITEMS, int MIN_BLOCKS = 1>
static Variant ticket_first_variant(std::string name)
{
    return paired_variant<THREADS, ITEMS, ticket_first<THREADS, ITEMS, true, MIN_BLOCKS>,
                          ticket_first<THREADS, ITEMS, false, MIN_BLOCKS>>(name);
}

// The chapter's entry points themselves (compact_single_pass_if_f32 and _masked_f32): the test a
// parameter, the tile of cuda/compact.cu, compiled by nvcc (the tour's NVRTC may give them other
// registers).
static Variant entry_point_variant(std::string name)
{
    return described(name, compact_single_pass_if_f32, COMPACT_THREADS,
                     [](Buffers& b, unsigned long long n, bool masked, float threshold) {
                         const unsigned tiles = tiles_of(n, COMPACT_THREADS * COMPACT_ITEMS);
                         ++epoch;
                         if (masked)
                             compact_single_pass_masked_f32<<<tiles, COMPACT_THREADS>>>(
                                 b.in, b.mask, b.out, n, b.kept, b.status, b.counter, n, epoch);
                         else
                             compact_single_pass_if_f32<<<tiles, COMPACT_THREADS>>>(
                                 b.in, KEEP_GREATER, threshold, b.out, n, b.kept, b.status, b.counter, n, epoch);
                     });
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const unsigned long long max_n = 1ull << 28;
    Buffers b;
    CHECK(cudaMalloc(&b.in, max_n * 4));
    CHECK(cudaMalloc(&b.mask, max_n));
    CHECK(cudaMalloc(&b.out, max_n * 4));
    CHECK(cudaMalloc(&b.kept, 4));
    CHECK(cudaMalloc(&b.status, (max_n / 256 + 1024) * 8));
    CHECK(cudaMemset(b.status, 0, (max_n / 256 + 1024) * 8));
    CHECK(cudaMalloc(&b.counter, 4));
    CHECK(cudaMemset(b.counter, 0, 4));
    std::vector<float> values(max_n);
    std::vector<unsigned char> mask(max_n);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : values) x = u(rng);
    for (unsigned long long i = 0; i < max_n; ++i) mask[i] = values[i] > 0.0f ? (unsigned char)(1 + (i & 7)) : 0;
    CHECK(cudaMemcpy(b.in, values.data(), max_n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b.mask, mask.data(), max_n, cudaMemcpyHostToDevice));
    void* temp = nullptr;
    size_t t1 = 0, t2 = 0;
    cub::DeviceSelect::Flagged(temp, t1, b.in, b.mask, b.out, b.kept, (long long)max_n);
    cub::DeviceSelect::If(temp, t2, b.in, b.out, b.kept, (long long)max_n, Above{0.0f});
    size_t temp_bytes = std::max(t1, t2);
    CHECK(cudaMalloc(&temp, temp_bytes));

    std::vector<Variant> variants;
    // The seventh run: tile shapes with the pause (the sixth run found CUB's delays, 1150 ns after
    // publishing the count and 76 ns between polls, worth 0.1 ms at 2^28, the 76 ns nothing), the
    // chapter's kernels now pausing 1150 ns on grids of 512 tiles or more (look_back_pause_ns).
    // The eighth run: the two cuts of lean<>, each alone and together, on the chapter's 512 x 16.
    // (The seventh run's tile shapes: wide_variant<512, 20, 1, 0, 3, true, 1150> and so on.)
    // The ninth run: the tile loaded once the ticket is back, beside the chapter's early loads.
    // (The eighth run's: lean_variant<512, 16, HOIST, PACKED> with and without each cut.)
    // The eleventh run: the chapter's entry points alone (loading after the ticket now), with 2^24
    // by a test at 5% and 95% kept beside the tour's cases.
    variants.push_back(entry_point_variant("entry points (nvcc)"));
    // (The ninth and tenth runs' variants: ticket_first_variant<512, 16> and <512, 16, 3>, <512, 12>
    // and <512, 12, 4>, <384, 16, 4>, <256, 16, 6>, <256, 12, 8>.)

    // Check: by a test at three thresholds, and by the mask, at awkward sizes.
    std::vector<float> got(max_n);
    for (auto& v : variants) {
        for (unsigned long long n : {(1ull << 24) + 77, 3ull * 8192 * 7 + 5, 5ull}) {
            for (int form = 0; form < 4; ++form) {
                const bool masked = form == 3;
                const float threshold = form == 0 ? 0.0f : form == 1 ? 0.9f : -0.9f;
                CHECK(cudaMemset(b.out, 0xff, n * 4));
                v.launch(b, n, masked, threshold);
                CHECK(cudaDeviceSynchronize());
                unsigned count = 0;
                CHECK(cudaMemcpy(&count, b.kept, 4, cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(got.data(), b.out, n * 4, cudaMemcpyDeviceToHost));
                unsigned long long j = 0;
                bool ok = true;
                for (unsigned long long i = 0; i < n && ok; ++i) {
                    const bool keep = masked ? mask[i] != 0 : values[i] > threshold;
                    if (keep) {
                        ok = got[j] == values[i];
                        ++j;
                    }
                }
                if (!ok || count != j)
                    std::printf("WRONG %s n=%llu form %d (count %u, expected %llu)\n", v.name.c_str(), n, form, count, j);
            }
        }
    }

    // Columns: 2^28 by test at 50%, 5%, 95%; by mask 50%; 2^24 test 50%; 2^20 test 50%.
    struct Column {
        const char* name;
        unsigned long long n;
        bool masked;
        float threshold;
    };
    const Column columns[] = {{"2^28 if50", 1ull << 28, false, 0.0f},  {"2^28 if5", 1ull << 28, false, 0.9f},
                              {"2^28 if95", 1ull << 28, false, -0.9f}, {"2^28 mask50", 1ull << 28, true, 0.0f},
                              {"2^24 if50", 1ull << 24, false, 0.0f},  {"2^24 mask50", 1ull << 24, true, 0.0f},
                              {"2^20 if50", 1ull << 20, false, 0.0f},  {"2^24 if5", 1ull << 24, false, 0.9f},
                              {"2^24 if95", 1ull << 24, false, -0.9f}};
    std::printf("%-26s %4s %4s", "variant (ms; x = cub/ours)", "regs", "occ");
    for (auto& c : columns) std::printf(" | %-16s", c.name);
    std::printf("\n");
    std::vector<double> cub_ms;
    for (auto& c : columns) {
        cub_ms.push_back(median_ms([&] {
            size_t t = temp_bytes;
            if (c.masked)
                cub::DeviceSelect::Flagged(temp, t, b.in, b.mask, b.out, b.kept, (long long)c.n);
            else
                cub::DeviceSelect::If(temp, t, b.in, b.out, b.kept, (long long)c.n, Above{c.threshold});
        }));
    }
    std::printf("%-26s %4d %4d", "cub", 0, 0);
    for (auto ms : cub_ms) std::printf(" | %7.4f        ", ms);
    std::printf("\n");
    for (auto& v : variants) {
        std::printf("%-26s %4d %4d", v.name.c_str(), v.regs, v.occupancy);
        for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); ++i) {
            const auto& c = columns[i];
            const double ms = median_ms([&] { v.launch(b, c.n, c.masked, c.threshold); });
            std::printf(" | %7.4f %5.3fx ", ms, cub_ms[i] / ms);
        }
        std::printf("\n");
        std::fflush(stdout);
    }
    CHECK(cudaDeviceSynchronize());
    return 0;
}
