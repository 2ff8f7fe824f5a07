// The single-pass scan's tile shapes, timed in one run beside CUB's DeviceScan and a device copy:
// how SINGLE_PASS_TILE (crates/scan/src/plan.rs) was chosen. Each variant is checked against a CPU
// scan of i32 (bit for bit) before it is timed; times are the median of 15 batches of CUDA-event
// timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o tile-shape scripts/lab/scan/tile-shape.cu && ./tile-shape
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../../../cuda/scan.cu"

#include "../common/tuning.cuh"

// A form of the single pass: predecessors per lane of the look-back, loads before the ticket.
template <int PER_LANE_, bool EARLY_LOADS_>
struct Form {
    static const int PER_LANE = PER_LANE_;
    static const bool EARLY_LOADS = EARLY_LOADS_;
};

template <class T, int THREADS, int ITEMS, bool INCLUSIVE, class F, int SLEEP>
__global__ void __launch_bounds__(THREADS)
    tile_variant(const T* in, T* out, unsigned long long* status, unsigned* counter, unsigned long long n,
                 unsigned epoch)
{
    const PlainTiles<T> io = {in, out, both_aligned(in, out)};
    single_pass<PlainTiles<T>, THREADS, ITEMS, INCLUSIVE, F, SLEEP>(io, TileStatus{status, epoch}, counter, n);
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

template <int THREADS, int ITEMS, int PER_LANE, bool EARLY, int SLEEP = 0>
static Launch tile_launch(int* regs, int* occupancy)
{
    typedef Form<PER_LANE, EARLY> F;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, tile_variant<float, THREADS, ITEMS, true, F, SLEEP>));
    *regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(occupancy, tile_variant<float, THREADS, ITEMS, true, F, SLEEP>,
                                                        THREADS, 0));
    return [](Buffers& b, unsigned long long n, bool f32) {
        const unsigned long long tiles = (n + THREADS * ITEMS - 1) / (THREADS * ITEMS);
        ++epoch;
        if (f32)
            tile_variant<float, THREADS, ITEMS, true, F, SLEEP>
                <<<(unsigned)tiles, THREADS>>>(b.f_in, b.f_out, b.status, b.counter, n, epoch);
        else
            tile_variant<int, THREADS, ITEMS, false, F, SLEEP>
                <<<(unsigned)tiles, THREADS>>>(b.i_in, b.i_out, b.status, b.counter, n, epoch);
    };
}

struct Variant {
    std::string name;
    Launch launch;
    int regs, occupancy;
};

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
    b.temp_bytes = 0;
    size_t t1 = 0, t2 = 0;
    cub::DeviceScan::InclusiveSum(nullptr, t1, b.f_in, b.f_out, (long long)max_n);
    cub::DeviceScan::ExclusiveSum(nullptr, t2, b.i_in, b.i_out, (long long)max_n);
    b.temp_bytes = std::max(t1, t2);
    CHECK(cudaMalloc(&b.temp, b.temp_bytes));

    std::vector<Variant> variants;
    auto add = [&](std::string name, Launch launch, int regs, int occ) { variants.push_back({name, launch, regs, occ}); };
    int r, o;
#define VARIANT(NAME, ...)                                  \
    {                                                       \
        auto l = tile_launch<__VA_ARGS__>(&r, &o);          \
        add(NAME, l, r, o);                                 \
    }
    VARIANT("128x24 classic", 128, 24, 1, false)
    VARIANT("128x24 classic s200", 128, 24, 1, false, 200)
    VARIANT("128x24 classic s500", 128, 24, 1, false, 500)
    VARIANT("128x24 classic s1000", 128, 24, 1, false, 1000)
    VARIANT("128x24 wide4", 128, 24, 4, false)
    VARIANT("128x24 wide4 early", 128, 24, 4, true)
    VARIANT("128x24 early (1/lane)", 128, 24, 1, true)
    VARIANT("96x24 classic", 96, 24, 1, false)
    VARIANT("128x20 classic", 128, 20, 1, false)
    VARIANT("128x32 classic", 128, 32, 1, false)
    VARIANT("160x24 classic", 160, 24, 1, false)
    VARIANT("256x16 classic", 256, 16, 1, false)

    // Check every variant on i32 (exact) at two awkward sizes.
    std::vector<int> got(max_n);
    for (auto& v : variants) {
        for (unsigned long long n : {(1ull << 24) + 77, 3ull * 4096 * 7 + 5, 5ull}) {
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

    std::printf("%-24s %4s %4s", "variant", "regs", "occ");
    const unsigned long long sizes[] = {1ull << 20, 1ull << 24, 1ull << 28};
    for (auto n : sizes) std::printf(" | 2^%-2d f32 %%copy   i32 %%copy ", __builtin_ctzll(n));
    std::printf("\n");
    std::vector<double> copy(3), cub_f(3), cub_i(3);
    for (int s = 0; s < 3; ++s) {
        const unsigned long long n = sizes[s];
        copy[s] = median_ms([&] { CHECK(cudaMemcpyAsync(b.f_out, b.f_in, n * 4, cudaMemcpyDeviceToDevice)); });
        cub_f[s] = median_ms([&] {
            size_t t = b.temp_bytes;
            cub::DeviceScan::InclusiveSum(b.temp, t, b.f_in, b.f_out, (long long)n);
        });
        cub_i[s] = median_ms([&] {
            size_t t = b.temp_bytes;
            cub::DeviceScan::ExclusiveSum(b.temp, t, b.i_in, b.i_out, (long long)n);
        });
    }
    auto row = [&](const char* name, int regs, int occ, std::function<double(int, bool)> ms) {
        std::printf("%-24s %4d %4d", name, regs, occ);
        for (int s = 0; s < 3; ++s) {
            double f = ms(s, true), i = ms(s, false);
            std::printf(" | %7.4f %5.1f %7.4f %5.1f", f, 100 * copy[s] / f, i, 100 * copy[s] / i);
        }
        std::printf("\n");
    };
    row("copy", 0, 0, [&](int s, bool) { return copy[s]; });
    row("cub", 0, 0, [&](int s, bool f) { return f ? cub_f[s] : cub_i[s]; });
    for (auto& v : variants) {
        row(v.name.c_str(), v.regs, v.occupancy, [&](int s, bool f) {
            return median_ms([&] { v.launch(b, sizes[s], f); });
        });
    }
    row("cub (again)", 0, 0, [&](int s, bool f) {
        const unsigned long long n = sizes[s];
        return median_ms([&] {
            size_t t = b.temp_bytes;
            if (f)
                cub::DeviceScan::InclusiveSum(b.temp, t, b.f_in, b.f_out, (long long)n);
            else
                cub::DeviceScan::ExclusiveSum(b.temp, t, b.i_in, b.i_out, (long long)n);
        });
    });
    CHECK(cudaDeviceSynchronize());
    return 0;
}
