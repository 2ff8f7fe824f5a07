// The on-chip softmax (cuda/softmax.cu, step 6) against variants of its group shape, timed in one
// run with the device copy of the same bytes: how the rule of softmax::on_chip_group was chosen.
// Each variant holds the row in registers as step 6 does; they differ in threads per row (GROUP,
// from 8 lanes to 1024 threads), elements per thread (VALUES), threads per block (BLOCK), the
// barrier between the warps of a group (the block's, or a named barrier of the group's warps
// only), and, as a bound only, exp by the special-function unit (__expf, not bit-reproducible on
// the simulator, so never a step). Every variant is checked against step 6's kernel first; times
// are the median of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o group-shape scripts/lab/softmax/group-shape.cu && ./group-shape
#include "../../../cuda/softmax.cu"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/tuning.cuh"

// The group's result of Op, for GROUP threads: a butterfly over min(GROUP, 32) lanes, then the
// warps' results through shared memory, behind the block's barrier or the group's named one.
template <class Op, int GROUP, bool NAMED>
__device__ __forceinline__ float reduce_in_group(float value)
{
    __shared__ float slots[32];
#pragma unroll
    for (int lanes = (GROUP < 32 ? GROUP : 32) / 2; lanes > 0; lanes >>= 1) {
        value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, lanes));
    }
    if (GROUP > 32) {
        const unsigned warp = threadIdx.x / 32, first = warp / (GROUP / 32) * (GROUP / 32);
        const unsigned barrier = 1 + threadIdx.x / GROUP;
        if (threadIdx.x % 32 == 0) slots[warp] = value;
        if (NAMED) asm volatile("bar.sync %0, %1;" ::"r"(barrier), "r"(GROUP) : "memory");
        else __syncthreads();
        value = slots[first];
        for (unsigned w = 1; w < GROUP / 32; w++) value = Op::combine(value, slots[first + w]);
        if (NAMED) asm volatile("bar.sync %0, %1;" ::"r"(barrier), "r"(GROUP) : "memory");
        else __syncthreads();
    }
    return value;
}

template <class E, int GROUP, int VALUES, int BLOCK, bool NAMED, bool FAST_EXP>
__global__ void __launch_bounds__(BLOCK) variant(const typename E::Word* in, typename E::Word* out, unsigned rows,
                                                 unsigned cols)
{
    constexpr int VECS = VALUES / E::PER_VEC;
    const unsigned thread = threadIdx.x % GROUP;
    const size_t row = (size_t)blockIdx.x * (BLOCK / GROUP) + threadIdx.x / GROUP;
    const unsigned len = row < rows ? cols : 0;
    const uint4* x_row = reinterpret_cast<const uint4*>(in + row * cols);
    uint4* y_row = reinterpret_cast<uint4*>(out + row * cols);
    float x[VALUES];
#pragma unroll
    for (int k = 0; k < VECS; k++) {
        const unsigned v = thread + k * GROUP;
        if (v * E::PER_VEC < len) E::unpack(x_row[v], x + k * E::PER_VEC);
    }
    float m = Max<float>::identity();
#pragma unroll
    for (int k = 0; k < VECS; k++) {
        if ((thread + k * GROUP) * E::PER_VEC < len) {
#pragma unroll
            for (int j = 0; j < E::PER_VEC; j++) m = Max<float>::combine(m, x[k * E::PER_VEC + j]);
        }
    }
    m = reduce_in_group<Max<float>, GROUP, NAMED>(m);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < VECS; k++) {
        if ((thread + k * GROUP) * E::PER_VEC < len) {
#pragma unroll
            for (int j = 0; j < E::PER_VEC; j++) {
                float& e = x[k * E::PER_VEC + j];
                e = FAST_EXP ? __expf(e - m) : softmax_exp(e - m);
                s += e;
            }
        }
    }
    s = reduce_in_group<Sum<float>, GROUP, NAMED>(s);
    const float inverse = 1.0f / s;
#pragma unroll
    for (int k = 0; k < VECS; k++) {
        const unsigned v = thread + k * GROUP;
        if (v * E::PER_VEC < len) {
            float y[E::PER_VEC];
#pragma unroll
            for (int j = 0; j < E::PER_VEC; j++) y[j] = x[k * E::PER_VEC + j] * inverse;
            y_row[v] = E::pack(y);
        }
    }
}

struct Variant {
    std::string name;
    std::function<void(const void*, void*, unsigned, unsigned)> launch;
};

template <class E, int GROUP, int VALUES, int BLOCK, bool NAMED = false, bool FAST_EXP = false>
static Variant make(std::string name)
{
    return {name, [](const void* in, void* out, unsigned rows, unsigned cols) {
                const unsigned grid = (rows + BLOCK / GROUP - 1) / (BLOCK / GROUP);
                variant<E, GROUP, VALUES, BLOCK, NAMED, FAST_EXP><<<grid, BLOCK>>>(
                    (const typename E::Word*)in, (typename E::Word*)out, rows, cols);
            }};
}

// Step 6 as the crate launches it (softmax::on_chip_group's rule).
template <bool BF16>
static Variant crate_step()
{
    return {"step 6 (crate rule)", [](const void* in, void* out, unsigned rows, unsigned cols) {
                unsigned group = 16;
                while (group < 512 && group * 32 < cols) group *= 2;
                unsigned values = 8;
                while (values * group < cols) values *= 2;
                const unsigned block = group > 256 ? group : 256, grid = (rows + block / group - 1) / (block / group);
                // The crate's kernels, by shape (softmax_on_chip_<group>x<values>).
                auto pick = [&](auto f16x8, auto f16x16, auto f16x32, auto f32x32, auto f64x32, auto f128x32,
                                auto f256x32, auto f512x32, auto f512x64) {
                    return group == 16   ? (values == 8 ? f16x8 : values == 16 ? f16x16 : f16x32)
                           : group == 32 ? f32x32
                           : group == 64 ? f64x32
                           : group == 128 ? f128x32
                           : group == 256 ? f256x32
                           : values == 32 ? f512x32
                                          : f512x64;
                };
                if (BF16) {
                    auto k = pick(softmax_on_chip_16x8_bf16, softmax_on_chip_16x16_bf16, softmax_on_chip_16x32_bf16,
                                  softmax_on_chip_32x32_bf16, softmax_on_chip_64x32_bf16, softmax_on_chip_128x32_bf16,
                                  softmax_on_chip_256x32_bf16, softmax_on_chip_512x32_bf16, softmax_on_chip_512x64_bf16);
                    k<<<grid, block>>>((const unsigned short*)in, (unsigned short*)out, rows, cols);
                } else {
                    auto k = pick(softmax_on_chip_16x8, softmax_on_chip_16x16, softmax_on_chip_16x32, softmax_on_chip_32x32,
                                  softmax_on_chip_64x32, softmax_on_chip_128x32, softmax_on_chip_256x32,
                                  softmax_on_chip_512x32, softmax_on_chip_512x64);
                    k<<<grid, block>>>((const float*)in, (float*)out, rows, cols);
                }
            }};
}

static void run(const char* title, bool bf16, unsigned rows, unsigned cols, std::vector<Variant> variants)
{
    const size_t n = (size_t)rows * cols, word = bf16 ? 2 : 4, bytes = n * word;
    std::vector<unsigned char> host(bytes);
    std::mt19937 rng(29);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) {
        const float x = u(rng);
        if (bf16) {
            unsigned b;
            std::memcpy(&b, &x, 4);
            const unsigned short h = (unsigned short)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
            std::memcpy(&host[2 * i], &h, 2);
        } else {
            std::memcpy(&host[4 * i], &x, 4);
        }
    }
    void *in, *out, *want;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));
    CHECK(cudaMalloc(&want, bytes));
    CHECK(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
    const Variant reference = bf16 ? crate_step<true>() : crate_step<false>();
    reference.launch(in, want, rows, cols);
    CHECK(cudaDeviceSynchronize());
    std::vector<unsigned char> expected(bytes), got(bytes);
    CHECK(cudaMemcpy(expected.data(), want, bytes, cudaMemcpyDeviceToHost));
    const double copy = median_ms([&] { cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice); });
    std::printf("%s %s, %u x %u: copy %.4f ms\n", title, bf16 ? "bf16" : "f32", rows, cols, copy);
    variants.insert(variants.begin(), reference);
    for (auto& v : variants) {
        CHECK(cudaMemset(out, 0xff, bytes));
        v.launch(in, out, rows, cols);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            float a, b;
            if (bf16) {
                unsigned short ha, hb;
                std::memcpy(&ha, &got[2 * i], 2);
                std::memcpy(&hb, &expected[2 * i], 2);
                unsigned ua = (unsigned)ha << 16, ub = (unsigned)hb << 16;
                std::memcpy(&a, &ua, 4);
                std::memcpy(&b, &ub, 4);
            } else {
                std::memcpy(&a, &got[4 * i], 4);
                std::memcpy(&b, &expected[4 * i], 4);
            }
            const double d = std::fabs((double)a - b) / std::fabs((double)b);
            worst = d > worst || d != d ? d : worst;
        }
        const bool wrong = !(worst <= (bf16 ? 1.6e-2 : 1e-4));
        const double ms = median_ms([&] { v.launch(in, out, rows, cols); });
        std::printf("  %-40s %8.4f ms %6.1f%% of copy%s\n", v.name.c_str(), ms, 100.0 * copy / ms,
                    wrong ? "  WRONG" : "");
    }
    cudaFree(in);
    cudaFree(out);
    cudaFree(want);
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    run("rows of 2^11", false, 32768, 2048,
        {make<F32, 32, 64, 256>("warp, 64 a lane, blocks of 256"), make<F32, 32, 64, 128>("warp, 64 a lane, blocks of 128"),
         make<F32, 64, 32, 256, true>("64, 32 each, named barrier"),
         make<F32, 128, 16, 256, true>("128, 16 each, named barrier"),
         make<F32, 64, 32, 256, true, true>("64, 32 each, named, __expf (bound)")});
    run("rows of 2^14", false, 4096, 16384,
        {make<F32, 256, 64, 256>("256, 64 each"), make<F32, 1024, 16, 1024>("1024, 16 each"),
         make<F32, 512, 32, 512, true>("512, 32 each, named barrier"),
         make<F32, 512, 32, 512, false, true>("512, 32 each, __expf (bound)")});
    run("rows of 2^14", true, 4096, 16384,
        {make<BF16, 256, 64, 256>("256, 64 each"), make<BF16, 1024, 16, 1024>("1024, 16 each"),
         make<BF16, 512, 32, 512, false, true>("512, 32 each, __expf (bound)")});
    run("rows of 512", true, 131072, 512,
        {make<BF16, 16, 32, 256>("16 lanes, 32 each"), make<BF16, 8, 64, 256>("8 lanes, 64 each"),
         make<BF16, 32, 16, 256, false, true>("warp, 16 each, __expf (bound)")});
    run("rows of 2^11", true, 32768, 2048,
        {make<BF16, 32, 64, 256>("warp, 64 a lane"), make<BF16, 64, 32, 256, true>("64, 32 each, named barrier")});
    run("rows of 512", false, 131072, 512, {make<F32, 16, 32, 256>("16 lanes, 32 each")});
    return 0;
}
