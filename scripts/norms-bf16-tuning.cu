// bf16 layer and RMS norms (cuda/norms.cu, step 3) against a row held as the loaded words, timed in
// one run with the device copy of the same bytes. Before the first run, step 3's lane widened its
// 32 bf16 elements to f32 as they arrived: 32 registers of values, 64 a thread in all, four blocks
// of 256 an SM. A "packed" lane keeps the 16-byte vectors as loaded (16 registers) and widens an
// element each time it is used (a shift or a mask), so that more rows fit an SM at once: more bytes
// in flight while other rows reduce and write. The compiler is asked for 4, 5 or 6 blocks an SM.
// (The chapter now keeps its vectors as loaded, so "as the chapter" is the packed lane at four
// blocks; norms-bf16-tuning.txt says what the chapter was in each run.)
// The fifth and sixth runs try fewer instructions an element (a packed max, a folded write, a
// paired rounding) and two rows a group of lanes; see below.
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

// The fifth run: fewer instructions an element, the lanes as the chapter's (Vectors<BF16>, five
// blocks an SM).
//   pair pack    the write rounds two outputs with one cvt.rn.bf16x2.f32 (bf16.cuh's
//                float2_to_bf16x2_cvt), where BF16::pack rounds each with cvt.rn.bf16.f32 and
//                packs the pair with a shift and an or;
//   packed max   the largest magnitude of a lane's 32 elements taken on the loaded words: the sign
//                bits cleared and max.bf16x2 (sm_80 on; NaN ignored, as fmaxf does), two
//                instructions for two elements where widening each and fmaxf take four;
//   folded       the write as (x s + t) w + b, s = g factor and t = -center factor taken once a
//                row, where the chapter's (x g - center) factor w + b takes three instructions.
struct BF16Pair : BF16 {
    __device__ static uint4 pack(const float* y)
    {
        return make_uint4(float2_to_bf16x2_cvt(y[0], y[1]), float2_to_bf16x2_cvt(y[2], y[3]),
                          float2_to_bf16x2_cvt(y[4], y[5]), float2_to_bf16x2_cvt(y[6], y[7]));
    }
};

// How a lane's largest magnitude is taken: element by element (the chapter's), by max.bf16x2 on
// the words, or element by element with the upper element of each word read as the word itself
// (its bits below are the lower element's: the same exponent, which is all scale_of reads).
enum Largest { BY_ELEMENT = 0, PACKED = 1, UPPER_AS_WORD = 2 };

template <class Slots>
__device__ __forceinline__ float largest_of(const Slots& v, int count, int how)
{
    float largest = 0.0f;
    if (how == PACKED && count == Slots::N) {
        unsigned int m = 0u;
#pragma unroll
        for (int k = 0; k < Slots::VECTORS; k++) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const unsigned int magnitudes = word(v.q[k], i) & 0x7fff7fffu;
                asm("max.bf16x2 %0, %1, %2;" : "=r"(m) : "r"(m), "r"(magnitudes));
            }
        }
        return fmaxf(__uint_as_float(m << 16), __uint_as_float(m & 0xffff0000u));
    }
    if (how == UPPER_AS_WORD && count == Slots::N) {
#pragma unroll
        for (int k = 0; k < Slots::VECTORS; k++) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const unsigned int w = word(v.q[k], i);
                largest = fmaxf(largest, fabsf(__uint_as_float(w << 16)));
                largest = fmaxf(largest, fabsf(__uint_as_float(w)));
            }
        }
        return largest;
    }
    return largest_of(v, count); // the chapter's, element by element
}

// moments_of and squares_of (cuda/norms.cu) at the scale of this lane's largest magnitude, taken
// by largest_of above.
template <class Slots>
__device__ __forceinline__ Moments moments_with(const Slots& v, int count, int packed)
{
    return moments_of(v, count, scale_of(largest_of(v, count, packed)));
}
template <class Slots>
__device__ __forceinline__ Scaled squares_with(const Slots& v, int count, int packed)
{
    return squares_of(v, count, scale_of(largest_of(v, count, packed)));
}

// FOLDED (the sixth run): the write as (x s - c) w + b with s = g factor and c = center factor,
// taken once a row; a row of variance 0 gets s = 0 and c = -(0 factor), so that it still comes
// out as b exactly (NaN where eps is 0), as the chapter's (x g - center) factor w + b does. Not
// taken into the chapter: s overflows where the row's spread is below about 3e-39 (subnormal
// rows: g = 2^126, factor in the thousands) and loses bits where it is above about 1e38, which
// the chapter's tests of subnormal rows caught (-inf where 1.26 was due).
// (Since the seventh run the chapter's lanes take their warp's scale, `e`; these variants take each
// lane's own, as the chapter did before.)
template <int LARGEST, bool FOLDED = false>
struct LayerWith : Layer {
    template <class Slots>
    __device__ static Moments of(const Slots& v, int count, int) { return moments_with(v, count, LARGEST); }
    __device__ static Affine affine(Moments s, unsigned int cols, float eps)
    {
        const Affine a = Layer::affine(s, cols, eps);
        if (!FOLDED) return a;
        if (s.m2 == 0.0f) return Affine{0.0f, -(0.0f * a.factor), 0.0f};
        return Affine{a.g * a.factor, a.center * a.factor, 0.0f};
    }
    __device__ static float apply(float x, Affine a, float w, float b)
    {
        if (FOLDED) return fmaf(fmaf(x, a.g, -a.center), w, b);
        return Layer::apply(x, a, w, b);
    }
};
template <int LARGEST>
struct RmsWith : Rms {
    template <class Slots>
    __device__ static Scaled of(const Slots& v, int count, int) { return squares_with(v, count, LARGEST); }
};

// Two rows a group (the fifth run): a group of lanes loads row r and row r + groups, then
// normalises the first while the second's loads are in flight. Twice the registers of values
// (32 a lane), so four blocks an SM.
template <class N, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    two_rows(const unsigned short* x, const unsigned short* w, const unsigned short* b, unsigned short* y,
             unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    const unsigned int shift = 5 + __ffs(warps) - 1, lanes = 1u << shift, lane = threadIdx.x & (lanes - 1);
    const size_t groups = (size_t)gridDim.x * (blockDim.x >> shift);
    const size_t first = (size_t)blockIdx.x * (blockDim.x >> shift) + (threadIdx.x >> shift), second = first + groups;
    Vectors<BF16> v0, v1;
    const bool live0 = first < rows, live1 = second < rows;
    const size_t off0 = (live0 ? first : 0) * cols, off1 = (live1 ? second : 0) * cols;
    const bool whole = aligned16(x) && aligned16(y) && cols % 8 == 0 && aligned16(w) && aligned16(b);
    const int count0 = load_vectors<BF16>(x + off0, live0 ? cols : 0, lane, lanes, whole, v0);
    const int count1 = load_vectors<BF16>(x + off1, live1 ? cols : 0, lane, lanes, whole, v1);
    const typename N::Op::Value s0 = row_reduce<typename N::Op>(thread_state<N>(v0, count0), warps);
    write_vectors<BF16, N>(v0, live0 ? cols : 0, lane, lanes, whole, w, b, y + off0, N::affine(s0, cols, eps));
    const typename N::Op::Value s1 = row_reduce<typename N::Op>(thread_state<N>(v1, count1), warps);
    write_vectors<BF16, N>(v1, live1 ? cols : 0, lane, lanes, whole, w, b, y + off1, N::affine(s1, cols, eps));
}

// by_length for bf16 rows that fit the registers (cols <= LANE_ELEMENTS x lanes), on either holding,
// written through W's pack.
template <class N, class Slots, int MIN_BLOCKS, class W = BF16>
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
    write_vectors<W, N>(v, len, lane, lanes, whole, w, b, y + offset, N::affine(state, cols, eps));
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

template <class N, class Slots, int MIN_BLOCKS, class W = BF16>
static Variant make(std::string name)
{
    auto kernel = variant<N, Slots, MIN_BLOCKS, W>;
    return described(name, kernel, [kernel](In x, In w, In b, Out y, Shape s) {
        kernel<<<grid_for(s, Slots::N), THREADS>>>(x, w, b, y, s.rows, s.cols, 1e-5f, warps_for(s.cols, Slots::N));
        CHECK(cudaGetLastError());
    });
}

template <class N, int MIN_BLOCKS>
static Variant make_two_rows(std::string name)
{
    auto kernel = two_rows<N, MIN_BLOCKS>;
    return described(name, kernel, [kernel](In x, In w, In b, Out y, Shape s) {
        const unsigned per_block = THREADS / (32 * warps_for(s.cols));
        const unsigned grid = ((s.rows + 1) / 2 + per_block - 1) / per_block;
        kernel<<<grid, THREADS>>>(x, w, b, y, s.rows, s.cols, 1e-5f, warps_for(s.cols));
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
    // (The fourth run's variants: make<Layer, Packed, 4>("packed, 4 blocks/SM asked"), PackedAsm,
    // Packed64 and so on.)
    typedef Vectors<BF16> Lane;
    // (The fifth run's: make<Layer, Lane, 5, BF16Pair>("pair pack"), make<LayerWith<PACKED>, Lane,
    // 5>("packed max") and their pairs; the sixth run's: make<LayerWith<BY_ELEMENT, true>, Lane,
    // 5>("folded"), make<LayerWith<UPPER_AS_WORD>, Lane, 5>("upper as word"),
    // make_two_rows<Layer, 4>("two rows a group, 4 blocks/SM") and their pairs.)
    // The seventh run: the chapter (its lanes at their warp's scale) against each lane at its own.
    families.push_back({"layer norm",
                        {chapter_layer(), make<LayerWith<BY_ELEMENT>, Lane, 5>("each lane its own scale"),
                         make<LayerWith<BY_ELEMENT, true>, Lane, 5>("own scale, folded")}});
    families.push_back({"rms norm", {chapter_rms(), make<RmsWith<BY_ELEMENT>, Lane, 5>("each lane its own scale")}});
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
                std::printf("  %-10s %-36s %3d regs %d/SM %8.4f ms %6.1f%% of copy%s\n", f.name, v.name.c_str(), v.regs,
                            v.blocks_per_sm, ms, 100.0 * copy / ms, wrong ? "  WRONG" : "");
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
