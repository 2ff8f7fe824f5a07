// A persistent, pipelined single pass, tried beside the chapter's early-loads scan and CUB's
// DeviceScan in one run: each block keeps its next tiles on their way into shared memory (Hopper's
// bulk copy, one thread issuing a whole tile, completing on an mbarrier) while it looks back for the
// current one. Each variant is checked against a CPU scan of i32 (bit for bit) before it is timed;
// times are the median of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o persistent-pipeline scripts/lab/scan/persistent-pipeline.cu
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../../../cuda/scan.cu"

#include "../common/tuning.cuh"

__device__ __forceinline__ unsigned smem_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void barrier_init(unsigned long long* bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void barrier_arrive(unsigned long long* bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
}

__device__ __forceinline__ void barrier_arrive_expect(unsigned long long* bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void barrier_wait(unsigned long long* bar, unsigned parity)
{
    asm volatile("{\n"
                 " .reg .pred done;\n"
                 "WAIT_%=:\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 " @!done bra WAIT_%=;\n"
                 "}" ::"r"(smem_address(bar)),
                 "r"(parity)
                 : "memory");
}

template <bool EVICT_FIRST>
__device__ __forceinline__ void bulk_copy(void* to, const void* from, unsigned bytes, unsigned long long* bar)
{
    if (EVICT_FIRST) {
        asm volatile("{\n"
                     " .reg .b64 policy;\n"
                     " createpolicy.fractional.L2::evict_first.b64 policy, 1.0;\n"
                     " cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                     " [%0], [%1], %2, [%3], policy;\n"
                     "}" ::"r"(smem_address(to)),
                     "l"(from), "r"(bytes), "r"(smem_address(bar))
                     : "memory");
    } else {
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         smem_address(to)),
                     "l"(from), "r"(bytes), "r"(smem_address(bar))
                     : "memory");
    }
}

// Flags of a variant.
enum : int { LOOK_BACK = 1, STREAM_STORES = 2, EVICT_FIRST = 4 };

template <class T, int THREADS, int ITEMS, int STAGES, bool INCLUSIVE, int FLAGS>
__global__ void __launch_bounds__(THREADS)
    pipelined(const T* in, T* out, unsigned long long* status_words, unsigned* counter, unsigned long long n,
              unsigned epoch, unsigned tiles)
{
    typedef ScanSum<T> Op;
    typedef typename Vec4<T>::Type V;
    constexpr int WARPS = THREADS / 32;
    constexpr unsigned TILE = THREADS * ITEMS;
    __shared__ __align__(128) T stage[STAGES][TILE];
    __shared__ __align__(8) unsigned long long full[STAGES];
    __shared__ unsigned stage_tile[STAGES];
    __shared__ T warp_totals[WARPS];
    __shared__ T before_tile;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const bool vectors = both_aligned(in, out);
    const PlainTiles<T> io = {in, out, vectors};
    const TileStatus status{status_words, epoch};
    const unsigned last_draw = tiles + gridDim.x - 1;
    const bool producer = threadIdx.x == (WARPS > 1 ? 32 : 0);
    bool drawing = true; // the producer's: no ticket past the last tile drawn yet

    auto fill = [&](int s) {
        const unsigned t = draw_tile(counter, last_draw);
        stage_tile[s] = t;
        const unsigned long long start = (unsigned long long)t * TILE;
        if (t < tiles && vectors && start + TILE <= n) {
            barrier_arrive_expect(&full[s], TILE * sizeof(T));
            bulk_copy<(FLAGS & EVICT_FIRST) != 0>(stage[s], in + start, TILE * sizeof(T), &full[s]);
        } else {
            barrier_arrive(&full[s]);
        }
        drawing = t < tiles;
    };

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init(&full[s], 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (producer) {
        for (int s = 0; s < STAGES && drawing; ++s) {
            fill(s);
        }
    }
    for (unsigned i = 0;; ++i) {
        const int s = i % STAGES;
        barrier_wait(&full[s], (i / STAGES) & 1);
        const unsigned tile = stage_tile[s];
        if (tile >= tiles) {
            break;
        }
        const unsigned long long first = (unsigned long long)tile * TILE + warp * 32 * ITEMS;
        const bool whole = vectors && (unsigned long long)tile * TILE + TILE <= n;
        T x[ITEMS];
        if (whole) {
            const V* from = reinterpret_cast<const V*>(&stage[s][warp * 32 * ITEMS]);
#pragma unroll
            for (int j = 0; j < ITEMS / 4; ++j) {
                const V v = from[32 * j + lane];
                x[4 * j] = v.x;
                x[4 * j + 1] = v.y;
                x[4 * j + 2] = v.z;
                x[4 * j + 3] = v.w;
            }
        } else {
            io.template load<ITEMS>(first, n, x);
        }
        T lane_prefix[ITEMS / 4];
        const T warp_total = scan_rows<Op, ITEMS>(x, lane_prefix);
        if (lane == 0) {
            warp_totals[warp] = warp_total;
        }
        __syncthreads(); // stage s is in registers: it may be refilled
        if (producer && drawing) {
            fill(s);
        }
        T before_warp, aggregate;
        combine_warps<Op, WARPS>(warp_totals, before_warp, aggregate);
        if (warp == 0) {
            T exclusive = Op::identity();
            if (FLAGS & LOOK_BACK) {
                exclusive = tile_prefix<Op, 1, 0>(status, tile, aggregate);
            }
            if (threadIdx.x == 0) {
                before_tile = exclusive;
            }
        }
        __syncthreads();
        T y[ITEMS];
        finish_rows<PlainTiles<T>, ITEMS, INCLUSIVE>(Op::combine(before_tile, before_warp), lane_prefix, x, y);
        if (whole && (FLAGS & STREAM_STORES)) {
            V* to = reinterpret_cast<V*>(out + first);
#pragma unroll
            for (int j = 0; j < ITEMS / 4; ++j) {
                V v;
                v.x = y[4 * j];
                v.y = y[4 * j + 1];
                v.z = y[4 * j + 2];
                v.w = y[4 * j + 3];
                __stcs(to + 32 * j + lane, v);
            }
        } else {
            io.template store<ITEMS>(first, n, x, y);
        }
    }
}

// Not persistent: a block per tile as in the chapter, but the tile comes into shared memory by one
// bulk copy, so the tile can be larger than registers allow. The block sums the tile first and
// publishes its aggregate before any scanning, looks back, then scans the tile from shared memory in
// chunks of CHUNK items per thread.
template <class T, int THREADS, int ITEMS, int CHUNK, bool INCLUSIVE, bool GUESS>
__global__ void __launch_bounds__(THREADS)
    staged(const T* in, T* out, unsigned long long* status_words, unsigned* counter, unsigned long long n,
           unsigned epoch)
{
    typedef ScanSum<T> Op;
    typedef typename Vec4<T>::Type V;
    constexpr int WARPS = THREADS / 32;
    constexpr unsigned long long TILE = THREADS * ITEMS;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* data = reinterpret_cast<T*>(smem_raw);
    __shared__ __align__(8) unsigned long long full[2];
    __shared__ unsigned drawn;
    __shared__ T warp_totals[WARPS];
    __shared__ T before_tile;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const bool vectors = both_aligned(in, out);
    const PlainTiles<T> io = {in, out, vectors};
    const TileStatus status{status_words, epoch};
    if (threadIdx.x == 0) {
        barrier_init(&full[0], 1);
        barrier_init(&full[1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        if (GUESS && vectors && blockIdx.x * TILE + TILE <= n) {
            barrier_arrive_expect(&full[0], TILE * sizeof(T));
            bulk_copy<false>(data, in + blockIdx.x * TILE, TILE * sizeof(T), &full[0]);
        }
        const unsigned t = draw_tile(counter, gridDim.x - 1);
        drawn = t;
        const bool whole = vectors && t * TILE + TILE <= n;
        if (GUESS && vectors && blockIdx.x * TILE + TILE <= n) {
            if (t != blockIdx.x) {
                barrier_wait(&full[0], 0); // the guess landed: overwrite it
                if (whole) {
                    barrier_arrive_expect(&full[1], TILE * sizeof(T));
                    bulk_copy<false>(data, in + t * TILE, TILE * sizeof(T), &full[1]);
                } else {
                    barrier_arrive(&full[1]);
                }
            } else {
                barrier_arrive(&full[1]);
            }
        } else {
            if (whole) {
                barrier_arrive_expect(&full[1], TILE * sizeof(T));
                bulk_copy<false>(data, in + t * TILE, TILE * sizeof(T), &full[1]);
            } else {
                barrier_arrive(&full[1]);
            }
        }
    }
    __syncthreads();
    const unsigned tile = drawn;
    const bool whole = vectors && tile * TILE + TILE <= n;
    const unsigned long long warp_first = tile * TILE + (unsigned long long)warp * 32 * ITEMS;
    T* warp_data = data + warp * 32 * ITEMS;
    if (whole) {
        if (GUESS && tile == blockIdx.x) {
            barrier_wait(&full[0], 0);
        }
        barrier_wait(&full[1], 0);
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            const unsigned long long i = warp_first + 128 * (k / 4) + 4 * lane + k % 4;
            warp_data[128 * (k / 4) + 4 * lane + k % 4] = i < n ? in[i] : (T)0;
        }
        __syncwarp();
    }
    // The lane's sum, then the warp's.
    T sum = Op::identity();
#pragma unroll
    for (int j = 0; j < ITEMS / 4; ++j) {
        const V v = reinterpret_cast<const V*>(warp_data)[32 * j + lane];
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
        const T exclusive = tile_prefix<Op, 1, 0>(status, tile, aggregate);
        if (threadIdx.x == 0) {
            before_tile = exclusive;
        }
    }
    __syncthreads();
    T base = Op::combine(before_tile, before_warp);
#pragma unroll 1
    for (int c = 0; c < ITEMS / CHUNK; ++c) {
        T x[CHUNK];
#pragma unroll
        for (int j = 0; j < CHUNK / 4; ++j) {
            const V v = reinterpret_cast<const V*>(warp_data + c * 32 * CHUNK)[32 * j + lane];
            x[4 * j] = v.x;
            x[4 * j + 1] = v.y;
            x[4 * j + 2] = v.z;
            x[4 * j + 3] = v.w;
        }
        T lane_prefix[CHUNK / 4];
        const T chunk_total = scan_rows<Op, CHUNK>(x, lane_prefix);
        T y[CHUNK];
        finish_rows<PlainTiles<T>, CHUNK, INCLUSIVE>(base, lane_prefix, x, y);
        io.template store<CHUNK>(warp_first + c * 32 * CHUNK, n, x, y);
        base = Op::combine(base, chunk_total);
    }
}

template <class T, int THREADS, int ITEMS, bool INCLUSIVE>
__global__ void __launch_bounds__(THREADS)
    early_loads(const T* in, T* out, unsigned long long* status, unsigned* counter, unsigned long long n,
                unsigned epoch)
{
    const PlainTiles<T> io = {in, out, both_aligned(in, out)};
    single_pass<PlainTiles<T>, THREADS, ITEMS, INCLUSIVE, EarlyLoads>(io, TileStatus{status, epoch}, counter, n);
}

static int sms = 0;

struct Buffers {
    float* f_in;
    float* f_out;
    int* i_in;
    int* i_out;
    unsigned long long* status;
    unsigned* counter;
    void* temp;
    size_t temp_bytes;
    std::vector<int> host_i;
};

static unsigned epoch = 0;

using Launch = std::function<void(Buffers&, unsigned long long n, bool f32)>;

struct Variant {
    std::string name;
    Launch launch;
    int regs, occupancy;
};

template <int THREADS, int ITEMS, int STAGES, int FLAGS>
static Variant pipelined_variant(std::string name, int max_blocks_per_sm = 64)
{
    Variant v;
    v.name = name;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, pipelined<float, THREADS, ITEMS, STAGES, true, FLAGS>));
    v.regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.occupancy,
                                                        pipelined<float, THREADS, ITEMS, STAGES, true, FLAGS>,
                                                        THREADS, 0));
    const int per_sm = std::min(v.occupancy, max_blocks_per_sm);
    v.launch = [per_sm](Buffers& b, unsigned long long n, bool f32) {
        const unsigned long long tiles = (n + THREADS * ITEMS - 1) / (THREADS * ITEMS);
        const unsigned grid = (unsigned)std::min<unsigned long long>(tiles, (unsigned long long)sms * per_sm);
        ++epoch;
        if (f32)
            pipelined<float, THREADS, ITEMS, STAGES, true, FLAGS>
                <<<grid, THREADS>>>(b.f_in, b.f_out, b.status, b.counter, n, epoch, (unsigned)tiles);
        else
            pipelined<int, THREADS, ITEMS, STAGES, false, FLAGS>
                <<<grid, THREADS>>>(b.i_in, b.i_out, b.status, b.counter, n, epoch, (unsigned)tiles);
    };
    return v;
}

template <int THREADS, int ITEMS, int CHUNK, bool GUESS = false>
static Variant staged_variant(std::string name)
{
    Variant v;
    v.name = name;
    const int smem = THREADS * ITEMS * 4;
    CHECK(cudaFuncSetAttribute(staged<float, THREADS, ITEMS, CHUNK, true, GUESS>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(staged<int, THREADS, ITEMS, CHUNK, false, GUESS>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, staged<float, THREADS, ITEMS, CHUNK, true, GUESS>));
    v.regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.occupancy, staged<float, THREADS, ITEMS, CHUNK, true, GUESS>,
                                                        THREADS, smem));
    v.launch = [smem](Buffers& b, unsigned long long n, bool f32) {
        const unsigned long long tiles = (n + THREADS * ITEMS - 1) / (THREADS * ITEMS);
        ++epoch;
        if (f32)
            staged<float, THREADS, ITEMS, CHUNK, true, GUESS>
                <<<(unsigned)tiles, THREADS, smem>>>(b.f_in, b.f_out, b.status, b.counter, n, epoch);
        else
            staged<int, THREADS, ITEMS, CHUNK, false, GUESS>
                <<<(unsigned)tiles, THREADS, smem>>>(b.i_in, b.i_out, b.status, b.counter, n, epoch);
    };
    return v;
}

template <int THREADS, int ITEMS>
static Variant early_variant(std::string name)
{
    Variant v;
    v.name = name;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, early_loads<float, THREADS, ITEMS, true>));
    v.regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.occupancy, early_loads<float, THREADS, ITEMS, true>,
                                                        THREADS, 0));
    v.launch = [](Buffers& b, unsigned long long n, bool f32) {
        const unsigned long long tiles = (n + THREADS * ITEMS - 1) / (THREADS * ITEMS);
        ++epoch;
        if (f32)
            early_loads<float, THREADS, ITEMS, true>
                <<<(unsigned)tiles, THREADS>>>(b.f_in, b.f_out, b.status, b.counter, n, epoch);
        else
            early_loads<int, THREADS, ITEMS, false>
                <<<(unsigned)tiles, THREADS>>>(b.i_in, b.i_out, b.status, b.counter, n, epoch);
    };
    return v;
}

// The chapter's step 5 (bulk_copy_pass) with a pause of PAUSE_NS before the look-back's first read
// (the pause CUB's DeviceSelect::If makes, and the compaction chapter's single pass now makes).
template <class T, bool INCLUSIVE, int PAUSE_NS>
__global__ void __launch_bounds__(SCAN_THREADS)
    bulk_paused(const T* input, T* output, unsigned long long* status, unsigned* counter, unsigned long long n,
                unsigned epoch)
{
    bulk_copy_pass<T, SCAN_THREADS, SCAN_BULK_ITEMS, SCAN_ITEMS, INCLUSIVE>(input, output, TileStatus{status, epoch},
                                                                            counter, n, PAUSE_NS);
}

template <int PAUSE_NS>
static Variant bulk_variant(std::string name)
{
    Variant v;
    v.name = name;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, bulk_paused<float, true, PAUSE_NS>));
    v.regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.occupancy, bulk_paused<float, true, PAUSE_NS>,
                                                        SCAN_THREADS, 0));
    v.launch = [](Buffers& b, unsigned long long n, bool f32) {
        const unsigned long long tiles = (n + SCAN_THREADS * SCAN_BULK_ITEMS - 1) / (SCAN_THREADS * SCAN_BULK_ITEMS);
        ++epoch;
        if (f32)
            bulk_paused<float, true, PAUSE_NS>
                <<<(unsigned)tiles, SCAN_THREADS>>>(b.f_in, b.f_out, b.status, b.counter, n, epoch);
        else
            bulk_paused<int, false, PAUSE_NS>
                <<<(unsigned)tiles, SCAN_THREADS>>>(b.i_in, b.i_out, b.status, b.counter, n, epoch);
    };
    return v;
}

int main()
{
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, sms);
    const unsigned long long max_n = 1ull << 28;
    Buffers b;
    CHECK(cudaMalloc(&b.f_in, max_n * 4));
    CHECK(cudaMalloc(&b.f_out, max_n * 4));
    CHECK(cudaMalloc(&b.i_in, max_n * 4));
    CHECK(cudaMalloc(&b.i_out, max_n * 4));
    CHECK(cudaMalloc(&b.status, (max_n / 256 + 1024) * 8));
    CHECK(cudaMemset(b.status, 0, (max_n / 256 + 1024) * 8));
    CHECK(cudaMalloc(&b.counter, 4));
    CHECK(cudaMemset(b.counter, 0, 4));
    {
        std::mt19937 rng(5);
        std::vector<float> f(max_n);
        b.host_i.resize(max_n);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (auto& x : f) x = u(rng);
        for (auto& x : b.host_i) x = (int)rng();
        CHECK(cudaMemcpy(b.f_in, f.data(), max_n * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(b.i_in, b.host_i.data(), max_n * 4, cudaMemcpyHostToDevice));
    }
    size_t t1 = 0, t2 = 0;
    cub::DeviceScan::InclusiveSum(nullptr, t1, b.f_in, b.f_out, (long long)max_n);
    cub::DeviceScan::ExclusiveSum(nullptr, t2, b.i_in, b.i_out, (long long)max_n);
    b.temp_bytes = std::max(t1, t2);
    CHECK(cudaMalloc(&b.temp, b.temp_bytes));

    std::vector<Variant> variants;
    // The second run: step 5 (the bulk copy) with the look-back's first read delayed. (The first
    // run timed the staged and pipelined variants above: scan-bulk-tuning.txt in the book data.)
    variants.push_back(early_variant<128, 24>("early 128x24 (step 4)"));
    variants.push_back(bulk_variant<0>("bulk 128x48, no pause"));
    variants.push_back(bulk_variant<500>("bulk, pause 500 ns"));
    variants.push_back(bulk_variant<1150>("bulk, pause 1150 ns"));
    variants.push_back(bulk_variant<2000>("bulk, pause 2000 ns"));

    // Check every variant on i32 (exact) at awkward sizes (the look-back-free ones are wrong on
    // purpose: they only bound what the look-back costs).
    std::vector<int> got(max_n);
    for (auto& v : variants) {
        for (unsigned long long n : {(1ull << 24) + 77, 3ull * 4096 * 7 + 5, 5ull, (1ull << 26)}) {
            CHECK(cudaMemset(b.i_out, 0xff, n * 4));
            v.launch(b, n, false);
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(got.data(), b.i_out, n * 4, cudaMemcpyDeviceToHost));
            unsigned sum = 0;
            for (unsigned long long i = 0; i < n; ++i) {
                if ((unsigned)got[i] != sum) {
                    std::printf("WRONG %s n=%llu at %llu\n", v.name.c_str(), n, i);
                    break;
                }
                sum += (unsigned)b.host_i[i];
            }
        }
    }

    std::printf("%-28s %4s %4s", "variant", "regs", "occ");
    const unsigned long long sizes[] = {1ull << 20, 1ull << 24, 1ull << 28};
    for (auto n : sizes) std::printf(" | 2^%-2d f32 %%copy   i32 %%copy ", __builtin_ctzll(n));
    std::printf("\n");
    std::vector<double> copy(3), cub_f(3), cub_i(3);
    auto cub_ms = [&](int s, bool f) {
        const unsigned long long n = sizes[s];
        return median_ms([&] {
            size_t t = b.temp_bytes;
            if (f)
                cub::DeviceScan::InclusiveSum(b.temp, t, b.f_in, b.f_out, (long long)n);
            else
                cub::DeviceScan::ExclusiveSum(b.temp, t, b.i_in, b.i_out, (long long)n);
        });
    };
    for (int s = 0; s < 3; ++s) {
        const unsigned long long n = sizes[s];
        copy[s] = median_ms([&] { CHECK(cudaMemcpyAsync(b.f_out, b.f_in, n * 4, cudaMemcpyDeviceToDevice)); });
        cub_f[s] = cub_ms(s, true);
        cub_i[s] = cub_ms(s, false);
    }
    auto row = [&](const char* name, int regs, int occ, std::function<double(int, bool)> ms) {
        std::printf("%-28s %4d %4d", name, regs, occ);
        for (int s = 0; s < 3; ++s) {
            double f = ms(s, true), i = ms(s, false);
            std::printf(" | %7.4f %5.1f %7.4f %5.1f", f, 100 * copy[s] / f, i, 100 * copy[s] / i);
        }
        std::printf("\n");
        std::fflush(stdout);
    };
    row("copy", 0, 0, [&](int s, bool) { return copy[s]; });
    row("cub", 0, 0, [&](int s, bool f) { return f ? cub_f[s] : cub_i[s]; });
    for (auto& v : variants) {
        row(v.name.c_str(), v.regs, v.occupancy, [&](int s, bool f) { return median_ms([&] { v.launch(b, sizes[s], f); }); });
    }
    row("cub (again)", 0, 0, cub_ms);
    CHECK(cudaDeviceSynchronize());
    return 0;
}
