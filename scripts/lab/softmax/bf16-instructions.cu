// bf16 softmax rows (cuda/softmax.cu, steps 6 and 7) against variants that spend fewer
// instructions on each element, timed in one run with the device copy of the same bytes: what the
// chapter's bf16 kernels were changed to, and why (the chapter's kernel of each run is its first
// line; the chapter has since taken cvt, nanmax and packed, so the variants' BF16 rounds as cvt
// does). A bf16 element costs its unpack, its part of the max, its exp, its part of the sum, its
// scaling and its pack; the variants take away, one at a time:
//   cvt     the pack by one cvt.rn.bf16x2.f32 per pair of elements, where BF16::pack rounded each
//           element in six integer instructions (float_to_bf16) before the second run;
//   scaled  sfu_exp's multiply by 2^-64, an instruction an element: where the sum and the
//           numerators both take the exp scaled by 2^64, the scale cancels in e / sum;
//   nanmax  the max as max.NaN.f32 (NaN wins, one instruction: softmax.cu's MaxNaN), where
//           Max<float>::combine is a compare, a NaN test and a select;
//   packed  the row held in registers as the bf16 words loaded (two elements in 32 bits, half the
//           registers), unpacked when used, and exp taken twice (for the sum and for the write),
//           so that a thread can hold twice the elements (for rows of 2^16: fewer, fuller blocks).
// And as a bound only, __expf (ex2.approx.ftz of x log2 e: flushes results below 2^-126, so not
// torch's subnormals). Every variant is checked against the chapter's kernel first (within a bf16
// ulp); times are the median of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o bf16-instructions scripts/lab/softmax/bf16-instructions.cu
//   ./bf16-instructions
#include "../../../cuda/softmax.cu"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/tuning.cuh"

// The pack by one cvt.rn.bf16x2.f32 a pair: the chapter's BF16 since the second run (bf16.cuh's
// float2_to_bf16x2_cvt), so "cvt" is BF16 itself now.
typedef BF16 BF16Cvt;
// exp(x) times 2^64: sfu_exp without its last multiply.
struct BF16ScaledCvt : BF16Cvt {
    __device__ static float exp(float x)
    {
        float y;
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(fmaf(x, 1.44269504088896341f, 64.0f)));
        return y;
    }
};
struct BF16FastCvt : BF16Cvt {
    __device__ static float exp(float x) { return __expf(x); }
};

// A thread's share of a row (or of a cluster block's part of one), 16-byte vectors only: vector k
// of the thread is vector thread + k * GROUP of the row. Held as f32, or as the loaded words.
template <class E, int GROUP, int VALUES, bool PACKED>
struct Share {
    static constexpr int VECS = VALUES / 8;
    uint4 q[PACKED ? VECS : 1];
    float x[PACKED ? 1 : VALUES];
    unsigned int thread, len;

    __device__ bool held(int k) const { return (thread + k * GROUP) * 8 < len; }
    __device__ void load(const unsigned short* __restrict__ row)
    {
        const uint4* __restrict__ v = reinterpret_cast<const uint4*>(row);
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            if (held(k)) {
                if constexpr (PACKED) q[k] = v[thread + k * GROUP];
                else E::unpack(v[thread + k * GROUP], x + 8 * k);
            }
        }
    }
    __device__ float get(int k, int j) const
    {
        if constexpr (PACKED) {
            const unsigned int w = j / 2 == 0 ? q[k].x : j / 2 == 1 ? q[k].y : j / 2 == 2 ? q[k].z : q[k].w;
            return j % 2 == 0 ? __uint_as_float(w << 16) : __uint_as_float(w & 0xffff0000u);
        } else {
            return x[8 * k + j];
        }
    }
    template <class MaxOp>
    __device__ float max() const
    {
        float m = Max<float>::identity();
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            if (held(k)) {
#pragma unroll
                for (int j = 0; j < 8; j++) m = MaxOp::combine(m, get(k, j));
            }
        }
        return m;
    }
    // The sum of exp(x - shift); unpacked shares keep each exp in place of x.
    __device__ float sum_exp(float shift)
    {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            if (held(k)) {
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const float e = E::exp(get(k, j) - shift);
                    if constexpr (!PACKED) x[8 * k + j] = e;
                    s += e;
                }
            }
        }
        return s;
    }
    __device__ void store(unsigned short* __restrict__ row, float shift, float scale) const
    {
        uint4* __restrict__ v = reinterpret_cast<uint4*>(row);
#pragma unroll
        for (int k = 0; k < VECS; k++) {
            if (held(k)) {
                float y[8];
#pragma unroll
                for (int j = 0; j < 8; j++) y[j] = (PACKED ? E::exp(get(k, j) - shift) : get(k, j)) * scale;
                v[thread + k * GROUP] = E::pack(y);
            }
        }
    }
};

// Step 6's form: a group of GROUP threads per row, blocks of max(GROUP, 256).
template <class E, int GROUP, int VALUES, bool PACKED, class MaxOp>
__global__ void __launch_bounds__(GROUP > 256 ? GROUP : 256)
    row_variant(const unsigned short* in, unsigned short* out, unsigned int rows, unsigned int cols)
{
    constexpr int BLOCK = GROUP > 256 ? GROUP : 256;
    const size_t row = (size_t)blockIdx.x * (BLOCK / GROUP) + threadIdx.x / GROUP;
    Share<E, GROUP, VALUES, PACKED> share;
    share.thread = threadIdx.x % GROUP;
    share.len = row < rows ? cols : 0;
    share.load(in + row * cols);
    const float m = group_reduce<MaxOp, GROUP>(share.template max<MaxOp>());
    const float s = group_reduce<Sum<float>, GROUP>(share.sum_exp(m));
    share.store(out + row * cols, m, 1.0f / s);
}

// Step 7's form: a cluster of CLUSTER blocks of BLOCK threads per row, one exchange.
template <class E, int CLUSTER, int BLOCK, int VALUES, bool PACKED, class MaxOp>
__global__ void __launch_bounds__(BLOCK, BLOCK >= 1024 ? 1 : BLOCK >= 512 ? 2 : 4)
    cluster_variant(const unsigned short* in, unsigned short* out, unsigned int rows, unsigned int cols)
{
    __shared__ float slots[2];
    unsigned int len;
    const size_t offset = cluster_part<CLUSTER>(cols, len);
    Share<E, BLOCK, VALUES, PACKED> share;
    share.thread = threadIdx.x;
    share.len = len;
    share.load(in + offset);
    const float m = group_reduce<MaxOp, BLOCK>(share.template max<MaxOp>());
    const float shift = m == Max<float>::identity() ? 0.0f : m;
    const float s = group_reduce<Sum<float>, BLOCK>(share.sum_exp(shift));
    if (threadIdx.x == 0) {
        slots[0] = m;
        slots[1] = s;
    }
    cluster_arrive();
    cluster_wait();
    Online whole = OnlineOp::identity();
#pragma unroll
    for (int r = 0; r < CLUSTER; r++) {
        const Online block = {read_slot(&slots[0], r), read_slot(&slots[1], r)};
        whole = OnlineOp::combine(whole, block);
    }
    cluster_arrive();
    share.store(out + offset, shift, OnlineOp::rescale(m, whole.m) * inverse_sum(whole));
    cluster_wait();
}

struct Shape {
    unsigned rows, cols;
};
typedef const unsigned short* In;
typedef unsigned short* Out;
using Launch = std::function<void(In, Out, Shape)>;

struct Variant {
    std::string name;
    Launch launch;
    int regs = 0, blocks_per_sm = 0;
};

template <class K>
static Variant described(std::string name, K kernel, int block, Launch launch)
{
    Variant v{name, launch};
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, kernel));
    v.regs = a.numRegs;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v.blocks_per_sm, kernel, block, 0));
    return v;
}

template <class E, int GROUP, int VALUES, bool PACKED, class MaxOp>
static Variant row(std::string name)
{
    constexpr int BLOCK = GROUP > 256 ? GROUP : 256;
    auto kernel = row_variant<E, GROUP, VALUES, PACKED, MaxOp>;
    return described(name, kernel, BLOCK, [kernel](In in, Out out, Shape s) {
        const unsigned per_block = BLOCK / GROUP;
        kernel<<<(s.rows + per_block - 1) / per_block, BLOCK>>>(in, out, s.rows, s.cols);
        CHECK(cudaGetLastError());
    });
}

template <class E, int CLUSTER, int BLOCK, int VALUES, bool PACKED, class MaxOp>
static Variant cluster(std::string name)
{
    auto kernel = cluster_variant<E, CLUSTER, BLOCK, VALUES, PACKED, MaxOp>;
    return described(name, kernel, BLOCK, [kernel](In in, Out out, Shape s) {
        launch_on_clusters(kernel, s.rows * CLUSTER, BLOCK, CLUSTER, in, out, s.rows, s.cols);
    });
}

// The chapter's kernel for a shape (softmax::on_chip_group, softmax::cluster_shape).
template <class K>
static Variant chapter(K kernel, unsigned grid_per_row_or_rows_per_block, int block, bool clustered)
{
    return described("chapter", kernel, block, [=](In in, Out out, Shape s) {
        const unsigned grid = clustered ? s.rows * grid_per_row_or_rows_per_block
                                        : (s.rows + grid_per_row_or_rows_per_block - 1) / grid_per_row_or_rows_per_block;
        kernel<<<grid, block>>>(in, out, s.rows, s.cols);
        CHECK(cudaGetLastError());
    });
}

typedef BF16ScaledCvt SC;

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const size_t n = 1ull << 26; // every shape below holds 2^26 elements
    std::vector<unsigned short> host(n);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-8.0f, 8.0f);
    for (auto& w : host) w = host_to_bf16(u(rng));
    unsigned short *in, *out, *expected;
    CHECK(cudaMalloc(&in, n * 2));
    CHECK(cudaMalloc(&out, n * 2));
    CHECK(cudaMalloc(&expected, n * 2));
    CHECK(cudaMemcpy(in, host.data(), n * 2, cudaMemcpyHostToDevice));

    struct Case {
        Shape shape;
        std::vector<Variant> variants; // the chapter's first
    };
    std::vector<Case> cases;
    cases.push_back({{4096, 1u << 14},
                     {chapter(softmax_on_chip_512x32_bf16, 1, 512, false),
                      row<BF16, 512, 32, false, Max<float> >("as the chapter (harness check)"),
                      row<BF16Cvt, 512, 32, false, Max<float> >("cvt"),
                      row<SC, 512, 32, false, Max<float> >("cvt scaled"),
                      row<SC, 512, 32, false, MaxNaN>("cvt scaled nanmax"),
                      row<SC, 512, 32, true, MaxNaN>("cvt scaled nanmax packed"),
                      row<SC, 256, 64, true, MaxNaN>("256x64 cvt scaled nanmax packed"),
                      row<SC, 256, 64, false, MaxNaN>("256x64 cvt scaled nanmax"),
                      row<BF16FastCvt, 512, 32, false, MaxNaN>("__expf cvt nanmax (bound)")}});
    cases.push_back({{768, 1u << 16},
                     {chapter(softmax_cluster_4x256x64_bf16, 4, 256, true),
                      cluster<BF16, 8, 256, 32, false, Max<float> >("as the chapter (harness check)"),
                      cluster<SC, 8, 256, 32, false, Max<float> >("cvt scaled"),
                      cluster<SC, 8, 256, 32, false, MaxNaN>("cvt scaled nanmax"),
                      cluster<SC, 8, 256, 32, true, MaxNaN>("cvt scaled nanmax packed"),
                      cluster<SC, 4, 256, 64, true, MaxNaN>("4x256x64 packed"),
                      cluster<SC, 4, 256, 64, false, MaxNaN>("4x256x64 unpacked"),
                      cluster<SC, 4, 512, 32, true, MaxNaN>("4x512x32 packed"),
                      cluster<SC, 2, 512, 64, true, MaxNaN>("2x512x64 packed"),
                      cluster<SC, 2, 1024, 32, true, MaxNaN>("2x1024x32 packed"),
                      row<SC, 512, 128, true, MaxNaN>("one block 512x128 packed"),
                      row<SC, 1024, 64, true, MaxNaN>("one block 1024x64 packed"),
                      cluster<BF16FastCvt, 8, 256, 32, false, MaxNaN>("__expf cvt nanmax (bound)")}});
    cases.push_back({{2048, 1u << 15},
                     {chapter(softmax_on_chip_512x64_bf16, 1, 512, false),
                      cluster<SC, 4, 256, 32, false, MaxNaN>("cvt scaled nanmax"),
                      cluster<SC, 4, 256, 32, true, MaxNaN>("cvt scaled nanmax packed"),
                      cluster<SC, 2, 256, 64, true, MaxNaN>("2x256x64 packed"),
                      row<SC, 512, 64, true, MaxNaN>("one block 512x64 packed")}});
    cases.push_back({{32768, 1u << 11},
                     {chapter(softmax_on_chip_64x32_bf16, 4, 256, false),
                      row<SC, 64, 32, false, Max<float> >("cvt scaled"),
                      row<SC, 64, 32, false, MaxNaN>("cvt scaled nanmax"),
                      row<SC, 64, 32, true, MaxNaN>("cvt scaled nanmax packed")}});
    cases.push_back({{131072, 512},
                     {chapter(softmax_on_chip_16x32_bf16, 16, 256, false),
                      row<SC, 16, 32, false, Max<float> >("cvt scaled"),
                      row<SC, 16, 32, false, MaxNaN>("cvt scaled nanmax"),
                      row<SC, 16, 32, true, MaxNaN>("cvt scaled nanmax packed")}});

    std::vector<unsigned short> got(n), want(n);
    for (Case& c : cases) {
        const Shape s = c.shape;
        const size_t m = (size_t)s.rows * s.cols;
        const double copy = median_ms([&] { CHECK(cudaMemcpyAsync(out, in, m * 2, cudaMemcpyDeviceToDevice)); });
        std::printf("rows of %u bf16, %u x %u: copy %.4f ms\n", s.cols, s.rows, s.cols, copy);
        CHECK(cudaMemset(expected, 0xff, m * 2));
        c.variants[0].launch(in, expected, s);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(want.data(), expected, m * 2, cudaMemcpyDeviceToHost));
        for (Variant& v : c.variants) {
            CHECK(cudaMemset(out, 0xff, m * 2));
            v.launch(in, out, s);
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(got.data(), out, m * 2, cudaMemcpyDeviceToHost));
            size_t wrong = 0, first = 0;
            for (size_t i = 0; i < m; ++i) {
                const float g = host_bf16_value(got[i]), w = host_bf16_value(want[i]);
                if (!(std::fabs(g - w) <= w * (1.0f / 128) + 1e-30f)) {
                    if (wrong++ == 0) first = i;
                }
            }
            const double ms = median_ms([&] { v.launch(in, out, s); });
            std::printf("  %-36s %3d regs %d/SM %8.4f ms %6.1f%% of copy", v.name.c_str(), v.regs, v.blocks_per_sm, ms,
                        100.0 * copy / ms);
            if (wrong) {
                std::printf("  WRONG: %zu elements, first %zu: %g, chapter %g", wrong, first, host_bf16_value(got[first]),
                            host_bf16_value(want[first]));
            }
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    return 0;
}
