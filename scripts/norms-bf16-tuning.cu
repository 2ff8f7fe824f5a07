// bf16 layer and RMS norms (cuda/norms.cu, step 3) against a row held as the loaded words, timed in
// one run with the device copy of the same bytes. Before the first run, step 3's lane widened its
// 32 bf16 elements to f32 as they arrived: 32 registers of values, 64 a thread in all, four blocks
// of 256 an SM. A "packed" lane keeps the 16-byte vectors as loaded (16 registers) and widens an
// element each time it is used (a shift or a mask), so that more rows fit an SM at once: more bytes
// in flight while other rows reduce and write. The compiler is asked for 4, 5 or 6 blocks an SM.
// (The chapter now keeps its vectors as loaded, so "as the chapter" is the packed lane at four
// blocks; norms-bf16-tuning.txt says what the chapter was in each run.)
// Every variant is checked against the chapter's kernel (within a bf16 ulp); times are the median
// of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o norms-bf16-tuning scripts/norms-bf16-tuning.cu
//   ./norms-bf16-tuning
#include "../cuda/norms.cu"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tuning.cuh"

// A lane's ELEMENTS (LANE_ELEMENTS unless said) as the loaded 16-byte vectors; get(s) widens
// element s. With 64, a row of 4096 is two warps' (128 bytes a lane, as an f32 lane holds).
template <int ELEMENTS>
struct PackedOf {
    enum { N = ELEMENTS, VECTORS = ELEMENTS / BF16::PER_VEC };
    uint4 q[VECTORS];
    __device__ float get(int s) const { return BF16::element(q[s / BF16::PER_VEC], s % BF16::PER_VEC); }
};
typedef PackedOf<LANE_ELEMENTS> Packed;
typedef PackedOf<2 * LANE_ELEMENTS> Packed64;

// The same, widened by a volatile asm each time: the compiler may not keep a widened element in a
// register from one use to the next (without it, it does where the registers allow, and the packed
// form holds as many registers as step 3's).
struct PackedAsm : Packed {
    __device__ float get(int s) const
    {
        const uint4 q4 = q[s / BF16::PER_VEC];
        const int j = s % BF16::PER_VEC;
        const unsigned int w = word(q4, j / 2);
        unsigned int bits;
        if (j % 2 == 0) asm volatile("shl.b32 %0, %1, 16;" : "=r"(bits) : "r"(w));
        else asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(bits) : "r"(w));
        return __uint_as_float(bits);
    }
};

// by_length for bf16 rows that fit the registers (cols <= LANE_ELEMENTS x lanes), on either holding.
template <class N, class Slots, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    variant(const unsigned short* x, const unsigned short* w, const unsigned short* b, unsigned short* y,
            unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    const unsigned int shift = 5 + __ffs(warps) - 1, lanes = 1u << shift, lane = threadIdx.x & (lanes - 1);
    const size_t row = (size_t)blockIdx.x * (blockDim.x >> shift) + (threadIdx.x >> shift);
    const bool live = row < rows;
    const size_t offset = (live ? row : 0) * cols;
    const unsigned int len = live ? cols : 0;
    const bool whole = aligned16(x + offset) && aligned16(y + offset) && aligned16(w) && (!N::HAS_BIAS || aligned16(b));
    Slots v;
    const int count = load_vectors<BF16>(x + offset, len, lane, lanes, whole, v);
    typename N::Op::Value state = thread_state<N>(v, count);
    state = row_reduce<typename N::Op>(state, warps);
    write_vectors<BF16, N>(v, len, lane, lanes, whole, w, b, y + offset, N::affine(state, cols, eps));
}

struct Shape {
    unsigned rows, cols;
};
typedef const unsigned short* In;
typedef unsigned short* Out;
using Launch = std::function<void(In, In, In, Out, Shape)>;

struct Variant {
    std::string name;
    Launch launch;
    int regs = 0, blocks_per_sm = 0;
};

// Warps per row and the grid, for lanes of `per_lane` elements (the chapter's: LANE_ELEMENTS).
static unsigned warps_for(unsigned cols, unsigned per_lane = LANE_ELEMENTS)
{
    unsigned warps = 1;
    while (warps < 8 && cols > per_lane * 32 * warps) warps *= 2;
    return warps;
}
static unsigned grid_for(Shape s, unsigned per_lane = LANE_ELEMENTS)
{
    const unsigned per_block = THREADS / (32 * warps_for(s.cols, per_lane));
    return (s.rows + per_block - 1) / per_block;
}

template <class K>
static Variant described(std::string name, K kernel, Launch launch)
{
    Variant v{name, launch};
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, kernel));
    v.regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.blocks_per_sm, kernel, THREADS, 0));
    return v;
}

template <class N, class Slots, int MIN_BLOCKS>
static Variant make(std::string name)
{
    auto kernel = variant<N, Slots, MIN_BLOCKS>;
    return described(name, kernel, [kernel](In x, In w, In b, Out y, Shape s) {
        kernel<<<grid_for(s, Slots::N), THREADS>>>(x, w, b, y, s.rows, s.cols, 1e-5f, warps_for(s.cols, Slots::N));
        CHECK(cudaGetLastError());
    });
}

static Variant chapter_layer()
{
    return described("chapter", layer_norm_by_length_bf16, [](In x, In w, In b, Out y, Shape s) {
        layer_norm_by_length_bf16<<<grid_for(s), THREADS>>>(x, w, b, y, s.rows, s.cols, 1e-5f, warps_for(s.cols));
        CHECK(cudaGetLastError());
    });
}
static Variant chapter_rms()
{
    return described("chapter", rms_norm_by_length_bf16, [](In x, In w, In, Out y, Shape s) {
        rms_norm_by_length_bf16<<<grid_for(s), THREADS>>>(x, w, y, s.rows, s.cols, 1e-5f, warps_for(s.cols));
        CHECK(cudaGetLastError());
    });
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const size_t n = 1ull << 26; // both shapes hold 2^25 or 2^26 elements
    std::vector<unsigned short> host(n), weights(8192);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.25f, 1.5f);
    for (auto& x : host) x = host_to_bf16(normal(rng));
    for (auto& x : weights) x = host_to_bf16(1.0f + 0.1f * normal(rng));
    unsigned short *x, *w, *b, *y, *expected;
    CHECK(cudaMalloc(&x, n * 2));
    CHECK(cudaMalloc(&y, n * 2));
    CHECK(cudaMalloc(&expected, n * 2));
    CHECK(cudaMalloc(&w, 8192 * 2));
    CHECK(cudaMalloc(&b, 8192 * 2));
    CHECK(cudaMemcpy(x, host.data(), n * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(w, weights.data(), 8192 * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, weights.data() + 17, 4096 * 2, cudaMemcpyHostToDevice));

    struct Family {
        const char* name;
        std::vector<Variant> variants; // the chapter's first
    };
    std::vector<Family> families;
    families.push_back({"layer norm",
                        {chapter_layer(), make<Layer, Vectors<BF16>, 4>("as the chapter (harness check)"),
                         make<Layer, Packed, 4>("packed, 4 blocks/SM asked"),
                         make<Layer, Packed, 5>("packed, 5 blocks/SM asked"),
                         make<Layer, Packed, 6>("packed, 6 blocks/SM asked"),
                         make<Layer, PackedAsm, 5>("packed asm, 5 blocks/SM asked"),
                         make<Layer, PackedAsm, 6>("packed asm, 6 blocks/SM asked"),
                         make<Layer, Packed64, 3>("packed 64 a lane, 3 blocks/SM asked"),
                         make<Layer, Packed64, 4>("packed 64 a lane, 4 blocks/SM asked"),
                         make<Layer, Packed64, 5>("packed 64 a lane, 5 blocks/SM asked")}});
    families.push_back({"rms norm",
                        {chapter_rms(), make<Rms, Packed, 4>("packed, 4 blocks/SM asked"),
                         make<Rms, Packed, 5>("packed, 5 blocks/SM asked"),
                         make<Rms, Packed, 6>("packed, 6 blocks/SM asked"),
                         make<Rms, PackedAsm, 5>("packed asm, 5 blocks/SM asked"),
                         make<Rms, PackedAsm, 6>("packed asm, 6 blocks/SM asked"),
                         make<Rms, Packed64, 4>("packed 64 a lane, 4 blocks/SM asked")}});
    const Shape shapes[] = {{8192, 4096}, {65536, 1024}, {16384, 4096}};

    std::vector<unsigned short> got(n), want(n);
    for (const Shape& s : shapes) {
        const size_t m = (size_t)s.rows * s.cols;
        const double copy = median_ms([&] { CHECK(cudaMemcpyAsync(y, x, m * 2, cudaMemcpyDeviceToDevice)); });
        std::printf("bf16 %u x %u: copy %.4f ms\n", s.rows, s.cols, copy);
        for (Family& f : families) {
            CHECK(cudaMemset(expected, 0xff, m * 2));
            f.variants[0].launch(x, w, b, expected, s);
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(want.data(), expected, m * 2, cudaMemcpyDeviceToHost));
            for (Variant& v : f.variants) {
                CHECK(cudaMemset(y, 0xff, m * 2));
                v.launch(x, w, b, y, s);
                CHECK(cudaDeviceSynchronize());
                CHECK(cudaMemcpy(got.data(), y, m * 2, cudaMemcpyDeviceToHost));
                size_t wrong = 0;
                for (size_t i = 0; i < m; ++i) {
                    const float g = host_bf16_value(got[i]), e = host_bf16_value(want[i]);
                    if (!(std::fabs(g - e) <= std::fabs(e) * (1.0f / 128) + 1e-6f)) wrong++;
                }
                const double ms = median_ms([&] { v.launch(x, w, b, y, s); });
                std::printf("  %-10s %-34s %3d regs %d/SM %8.4f ms %6.1f%% of copy%s\n", f.name, v.name.c_str(), v.regs,
                            v.blocks_per_sm, ms, 100.0 * copy / ms, wrong ? "  WRONG" : "");
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
