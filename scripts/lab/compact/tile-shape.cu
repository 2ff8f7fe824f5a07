// The single-pass compaction's tile shape and write pattern, timed in one run beside CUB's
// DeviceSelect::Flagged and a device copy: how COMPACT_TILE (crates/compact/src/plan.rs) and the
// staged writes were chosen. Every variant is checked against a CPU compaction (bit for bit) before
// it is timed; times are the median of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o tile-shape scripts/lab/compact/tile-shape.cu && ./tile-shape
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../../../cuda/compact.cu"

#include "../common/tuning.cuh"

// The single pass of cuda/compact.cu with two switches: kept elements staged in shared memory and
// written as one run (STAGED), or written from registers to their places; loads before the ticket
// (EARLY) or after it.
template <int THREADS, int ITEMS, bool STAGED, bool EARLY>
__global__ void __launch_bounds__(THREADS)
    variant(const float* input, const unsigned char* mask, float* output, unsigned long long capacity, unsigned* kept,
            unsigned long long* status_words, unsigned* counter, unsigned long long n, unsigned epoch)
{
    const ByMask<float> select = {input, mask, aligned(input, 16) && aligned(mask, 4)};
    const TileStatus status = {status_words, epoch};
    constexpr unsigned long long TILE = THREADS * ITEMS;
    __shared__ unsigned drawn;
    __shared__ unsigned warp_counts[THREADS / 32];
    __shared__ unsigned before_tile;
    __shared__ float staged[STAGED ? TILE : 1];
    const unsigned long long warp_offset = (threadIdx.x / 32) * 32 * ITEMS;
    if (threadIdx.x == 0) {
        drawn = draw_tile(counter, gridDim.x - 1);
    }
    float x[ITEMS];
    bool keep[ITEMS];
    if (EARLY) {
        load_tile<ITEMS>(select, blockIdx.x * TILE + warp_offset, n, x, keep);
    }
    __syncthreads();
    const unsigned tile = drawn;
    if (!EARLY || tile != blockIdx.x) {
        load_tile<ITEMS>(select, tile * TILE + warp_offset, n, x, keep);
    }
    unsigned rank[ITEMS];
    const unsigned tile_count = rank_tile<THREADS, ITEMS>(keep, rank, warp_counts);
    if (threadIdx.x < 32) {
        const unsigned earlier = tile_prefix<ScanSum<unsigned>, 1, 0>(status, tile, tile_count);
        if (threadIdx.x == 0) {
            before_tile = earlier;
        }
    }
    if (STAGED) {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (keep[k]) {
                staged[rank[k]] = x[k];
            }
        }
    }
    __syncthreads();
    const unsigned long long start = before_tile;
    if (STAGED) {
        for (unsigned i = threadIdx.x; i < tile_count; i += THREADS) {
            if (start + i < capacity) {
                output[start + i] = staged[i];
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            if (keep[k] && start + rank[k] < capacity) {
                output[start + rank[k]] = x[k];
            }
        }
    }
    if (threadIdx.x == 0 && tile == gridDim.x - 1) {
        *kept = (unsigned)start + tile_count;
    }
}

struct Buffers {
    float* in;
    unsigned char* mask;
    float* out;
    unsigned* kept;
    unsigned long long* status;
    unsigned* counter;
};

static unsigned epoch = 0;
using Launch = std::function<void(Buffers&, unsigned long long n)>;

template <int THREADS, int ITEMS, bool STAGED, bool EARLY>
static Launch launch_of(int* regs, int* occupancy)
{
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, variant<THREADS, ITEMS, STAGED, EARLY>));
    *regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(occupancy, variant<THREADS, ITEMS, STAGED, EARLY>, THREADS, 0));
    return [](Buffers& b, unsigned long long n) {
        const unsigned long long tiles = (n + THREADS * ITEMS - 1) / (THREADS * ITEMS);
        ++epoch;
        variant<THREADS, ITEMS, STAGED, EARLY>
            <<<(unsigned)tiles, THREADS>>>(b.in, b.mask, b.out, n, b.kept, b.status, b.counter, n, epoch);
    };
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const unsigned long long n = 1ull << 28;
    Buffers b;
    CHECK(cudaMalloc(&b.in, n * 4));
    CHECK(cudaMalloc(&b.mask, n));
    CHECK(cudaMalloc(&b.out, n * 4));
    CHECK(cudaMalloc(&b.kept, 4));
    CHECK(cudaMalloc(&b.status, (n / 256 + 1024) * 8));
    CHECK(cudaMemset(b.status, 0, (n / 256 + 1024) * 8));
    CHECK(cudaMalloc(&b.counter, 4));
    CHECK(cudaMemset(b.counter, 0, 4));
    std::vector<float> values(n);
    std::vector<unsigned char> mask(n);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : values) x = u(rng);
    CHECK(cudaMemcpy(b.in, values.data(), n * 4, cudaMemcpyHostToDevice));
    void* temp = nullptr;
    size_t temp_bytes = 0;
    cub::DeviceSelect::Flagged(temp, temp_bytes, b.in, b.mask, b.out, b.kept, (long long)n);
    CHECK(cudaMalloc(&temp, temp_bytes));

    struct Variant {
        std::string name;
        Launch launch;
        int regs, occupancy;
    };
    std::vector<Variant> variants;
    int r, o;
#define VARIANT(NAME, ...)                               \
    {                                                    \
        auto l = launch_of<__VA_ARGS__>(&r, &o);         \
        variants.push_back({NAME, l, r, o});             \
    }
    VARIANT("256x16 staged early", 256, 16, true, true)
    VARIANT("256x16 direct early", 256, 16, false, true)
    VARIANT("256x16 staged late", 256, 16, true, false)
    VARIANT("128x24 staged early", 128, 24, true, true)
    VARIANT("256x24 staged early", 256, 24, true, true)
    VARIANT("256x32 staged early", 256, 32, true, true)
    VARIANT("384x16 staged early", 384, 16, true, true)
    VARIANT("384x24 staged early", 384, 24, true, true)
    VARIANT("512x12 staged early", 512, 12, true, true)
    VARIANT("512x16 staged early", 512, 16, true, true)
    VARIANT("512x16 direct early", 512, 16, false, true)
    VARIANT("512x16 staged late", 512, 16, true, false)
    VARIANT("640x16 staged early", 640, 16, true, true)
    VARIANT("768x12 staged early", 768, 12, true, true)
    VARIANT("1024x8 staged early", 1024, 8, true, true)

    std::printf("%-22s %4s %4s", "variant", "regs", "occ");
    const int shares[] = {50, 5, 95};
    for (int p : shares) std::printf(" | %2d%%: ms   %%copy  cub/ours", p);
    std::printf("\n");
    std::vector<double> copy(3), cub(3);
    std::vector<std::vector<double>> times(variants.size(), std::vector<double>(3));
    std::vector<float> got(n);
    for (int s = 0; s < 3; ++s) {
        std::bernoulli_distribution keep(shares[s] / 100.0);
        for (auto& m : mask) m = keep(rng) ? 1 : 0;
        CHECK(cudaMemcpy(b.mask, mask.data(), n, cudaMemcpyHostToDevice));
        std::vector<float> want;
        for (unsigned long long i = 0; i < n; ++i)
            if (mask[i]) want.push_back(values[i]);
        copy[s] = median_ms([&] { CHECK(cudaMemcpyAsync(b.out, b.in, n * 4, cudaMemcpyDeviceToDevice)); });
        cub[s] = median_ms([&] {
            size_t t = temp_bytes;
            cub::DeviceSelect::Flagged(temp, t, b.in, b.mask, b.out, b.kept, (long long)n);
        });
        for (size_t v = 0; v < variants.size(); ++v) {
            CHECK(cudaMemset(b.out, 0xff, n * 4));
            variants[v].launch(b, n);
            unsigned count = 0;
            CHECK(cudaMemcpy(&count, b.kept, 4, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(got.data(), b.out, want.size() * 4, cudaMemcpyDeviceToHost));
            if (count != want.size() || !std::equal(want.begin(), want.end(), got.begin()))
                std::printf("WRONG %s at %d%%\n", variants[v].name.c_str(), shares[s]);
            times[v][s] = median_ms([&] { variants[v].launch(b, n); });
        }
    }
    // bytes: input and mask read, kept written; the copy roof moves 8n
    auto row = [&](const char* name, int regs, int occ, std::function<double(int)> ms) {
        std::printf("%-22s %4d %4d", name, regs, occ);
        for (int s = 0; s < 3; ++s) {
            const double bytes = 5.0 * n + 4.0 * n * shares[s] / 100.0;
            std::printf(" | %8.4f %5.1f %6.3f", ms(s), 100 * (bytes / ms(s)) / (8.0 * n / copy[s]), cub[s] / ms(s));
        }
        std::printf("\n");
    };
    row("cub flagged", 0, 0, [&](int s) { return cub[s]; });
    for (size_t v = 0; v < variants.size(); ++v)
        row(variants[v].name.c_str(), variants[v].regs, variants[v].occupancy, [&](int s) { return times[v][s]; });
    return 0;
}
