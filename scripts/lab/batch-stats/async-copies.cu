// Batch-norm statistics (cuda/batch_stats.cu, step 5) with its loads made asynchronous copies into
// shared memory (cp.async, Ampere's LDGSTS), timed in one run with the read roof of the same bytes
// (cuda/roofs.cu).
//
// Why. A lane of step 5 loads its turn's four 16-byte vectors into registers, waits for them, and
// folds them; while it folds, it has nothing in flight, and the registers it would need for a
// second turn's loads are the ones its fold uses (64 a thread at four blocks an SM). The H100's
// third tuning run (batch-stats-tuning.txt) put the folds at about 1.2 us of bf16's 41.9 at 256 x
// 64 x 56 x 56, and the H200, whose memory needs about 45% more bytes in flight for the same 132
// SMs, falls further behind its read roof. A cp.async copies 16 bytes from global to shared memory
// without a register: each warp keeps S slots of a turn (32 lanes x 4 vectors, 2 KB) in shared
// memory, issues the copies of turn t + S - 1 before folding turn t, and so keeps up to S - 1
// turns in flight while it folds (commit_group after each turn's copies, wait_group S - 2 before
// reading the oldest). A lane reads back only the vectors it copied itself, so wait_group is all
// the synchronisation it needs.
//
// Variants (the chapter's walk order, finish and slices; 16-byte vectors only, which the issue's
// shapes have):
//   chapter (step 5)     batch_stats_flat as committed.
//   async S=2|3|4        the walk through S slots a warp (S x 16 KB of shared memory a block of 8
//                        warps; S = 4 at three blocks an SM, the others at four).
//   ..., no finish       the same, each block storing its accumulator and leaving: a bound, not
//                        checked.
// Every checked variant must give the chapter's bits (the same values folded in the same order),
// before and after its timing.
//
// Run once, on an H100 (2026-11-28; book/src/data/nvidia-h100-80gb-hbm3/batch-stats-async-tuning.txt):
// slower at every shape. bf16 at 256 x 64 x 56 x 56: 87.4% of the read roof for step 5, 77.1% with
// two slots, 73.1% with three, and 85.9% for three slots with no finish at all; f32: 93.8% against
// 84.8%. The copies themselves cost more than the folds they overlap: the chapter keeps its loads.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o async-copies scripts/lab/batch-stats/async-copies.cu
//   ./async-copies
#include "../../../cuda/batch_stats.cu"
#include "../common/read-roof.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/tuning.cuh"

__device__ __forceinline__ void copy_async_16(uint4* to, const void* from)
{
    const unsigned int shared = (unsigned int)__cvta_generic_to_shared(to);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(from) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_copies()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Step 5's walk (walk_flat_runs) through S slots of shared memory a warp: `slots` is this warp's
// S x L x 32 vectors, slot s's load k of lane l at (s L + k) 32 + l.
template <class E, int V, int K, bool ONE_CARRY, int S>
__device__ __forceinline__ Moments walk_async(const typename E::Word* __restrict__ in, unsigned int c,
                                              unsigned int channels, unsigned int plane, unsigned int first,
                                              unsigned int last, uint4* slots)
{
    typedef MomentsOf<float> Op;
    constexpr int L = K / V;
    const unsigned int per_plane = plane / V;
    const size_t jump = (size_t)(channels - 1) * plane;
    const typename E::Word* channel = in + (size_t)c * plane;
    const unsigned int lane = threadIdx.x % 32;
    constexpr unsigned int step = WARPS * 32 * L;
    const unsigned int step_planes = step / per_plane, step_rest = step - step_planes * per_plane;
    const unsigned int turn0 = first + threadIdx.x / 32 * (32 * L);
    const unsigned int start = turn0 + lane;
    unsigned int n = start / per_plane, r_first = start - n * per_plane;
    // The lane's loads of a turn inside the run: L, or fewer in the run's last turn.
    auto loads_of = [&](unsigned int turn) -> unsigned int {
        const unsigned int u = turn + lane;
        const unsigned int inside = u < last ? (last - u + 31) / 32 : 0;
        return inside < (unsigned int)L ? inside : L;
    };
    // Issues the copies of `turn` into slot `slot` (none past the run) and commits them as a group.
    auto issue = [&](unsigned int turn, int slot) {
        if (turn < last) {
            const unsigned int mine = loads_of(turn);
            unsigned int r = r_first;
            const typename E::Word* p = channel + (size_t)n * channels * plane + r * V;
            n += step_planes;
            r_first += step_rest;
            if (r_first >= per_plane) {
                r_first -= per_plane;
                n++;
            }
#pragma unroll
            for (int k = 0; k < L; k++) {
                if (k < (int)mine) {
                    copy_async_16(&slots[(slot * L + k) * 32 + lane], p);
                    next_load<V, ONE_CARRY>(p, r, per_plane, jump);
                }
            }
        }
        commit_copies();
    };
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        issue(turn0 + s * step, s);
    }
    Moments acc = Op::identity();
    int slot = 0;
    for (unsigned int turn = turn0; turn < last; turn += step) {
        wait_copies<S - 2>();
        const unsigned int mine = loads_of(turn);
        float x[K];
#pragma unroll
        for (int k = 0; k < L; k++) {
            if (k < (int)mine) {
                const uint4 v = slots[(slot * L + k) * 32 + lane];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    E::unpack(word(v, i), x + k * V + i * E::PER_WORD);
                }
            } else {
                const float copy = (K <= 16 || k * V < K / 2 || mine * V <= K / 2) ? x[0] : x[K / 2];
#pragma unroll
                for (int j = 0; j < V; j++) {
                    x[k * V + j] = copy;
                }
            }
        }
        // The slot read last turn is free: the next copies go there while this turn folds.
        issue(turn + (S - 1) * step, slot == 0 ? S - 1 : slot - 1);
        slot = slot == S - 1 ? 0 : slot + 1;
        if (mine == 0) {
            continue;
        }
        acc = Op::combine(acc, fold_values<K>(x, mine * V));
    }
    wait_copies<0>();
    return acc;
}

template <class E, int S, int MIN_BLOCKS, bool FINISH>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
async_variant(const typename E::Word* in, Moments* partial, unsigned int* ticket, float* mean, float* var,
              unsigned int batch, unsigned int channels, unsigned int plane, unsigned int slices,
              unsigned int correction)
{
    extern __shared__ uint4 stage[];
    constexpr int V = E::MAX_VEC, K = E::K_LONG, L = K / V;
    const unsigned int c = blockIdx.x / slices, slice = blockIdx.x % slices;
    const unsigned int units = batch * (plane / V);
    const unsigned int per_slice = (units + slices - 1) / slices;
    const unsigned int first = slice * per_slice < units ? slice * per_slice : units;
    const unsigned int last = units - first < per_slice ? units : first + per_slice;
    uint4* slots = stage + (threadIdx.x / 32) * (S * L * 32);
    Moments acc = plane / V >= 32 ? walk_async<E, V, K, true, S>(in, c, channels, plane, first, last, slots)
                                  : walk_async<E, V, K, false, S>(in, c, channels, plane, first, last, slots);
    if (slices == 1) {
        acc = block_reduce<MomentsOf<float> >(acc);
        if (threadIdx.x == 0) {
            write_stats(acc, c, correction, mean, var);
        }
        return;
    }
    if (!FINISH) {
        acc = block_reduce<MomentsOf<float> >(acc);
        if (threadIdx.x == 0) {
            partial[(size_t)c * slices + slice] = acc;
        }
        return;
    }
    finish_channel(acc, partial + (size_t)c * slices, ticket + c, slices, slice, c, correction, mean, var);
}

struct Shape {
    unsigned n, c, h, w;
};

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const Shape shapes[] = {{256, 64, 56, 56}, {512, 64, 56, 56}, {256, 128, 28, 28},
                            {32, 64, 56, 56},  {64, 512, 14, 14}, {64, 4, 30, 32}};
    size_t most = 0;
    for (const Shape& s : shapes) most = std::max(most, (size_t)s.n * s.c * s.h * s.w);
    std::vector<float> host(most);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.5f, 2.0f);
    for (auto& x : host) x = normal(rng);
    std::vector<unsigned short> host_bf16(most);
    for (size_t i = 0; i < most; ++i) host_bf16[i] = host_to_bf16(host[i]);
    float *in, *mean, *var, *sink;
    unsigned short* in_bf16;
    Moments *partial, *scratch;
    unsigned int* ticket;
    CHECK(cudaMalloc(&in, most * 4));
    CHECK(cudaMalloc(&in_bf16, most * 2));
    CHECK(cudaMalloc(&mean, 4096 * 4));
    CHECK(cudaMalloc(&var, 4096 * 4));
    CHECK(cudaMalloc(&sink, 1 << 20));
    CHECK(cudaMalloc(&partial, 1 << 20));
    CHECK(cudaMalloc(&scratch, 1 << 20));
    CHECK(cudaMalloc(&ticket, 4096 * 4));
    CHECK(cudaMemset(ticket, 0, 4096 * 4));
    CHECK(cudaMemcpy(in, host.data(), most * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_bf16, host_bf16.data(), most * 2, cudaMemcpyHostToDevice));

    for (int round = 0; round < 2; ++round) {
        std::printf("round %d\n", round + 1);
        for (int bf16 = 0; bf16 < 2; ++bf16) {
            for (const Shape& s : shapes) {
                const unsigned plane = s.h * s.w;
                const size_t bytes = (size_t)s.n * s.c * plane * (bf16 ? 2 : 4);
                const void* x = bf16 ? (const void*)in_bf16 : (const void*)in;
                const double roof = read_roof(x, bytes, sink).ms();
                std::printf("%s %ux%ux%ux%u (%.1f MB): read roof %.4f ms\n", bf16 ? "bf16" : "f32", s.n, s.c, s.h,
                            s.w, bytes / 1e6, roof);
                const unsigned N = s.n, C = s.c;
                const unsigned k = bf16 ? 32 : 16;
                const unsigned long long turns = ((unsigned long long)s.n * plane + 32 * k - 1) / (32 * k);
                auto slices_at = [&](unsigned per_sm) {
                    const unsigned resident = prop.multiProcessorCount * per_sm;
                    return (unsigned)std::max(1ull, std::min((unsigned long long)(resident / s.c), turns));
                };
                struct Config {
                    std::string name;
                    unsigned per_sm;
                    std::function<void(unsigned)> launch;
                    bool checked;
                };
                std::vector<Config> configs;
#define ASYNC(E, S, MIN, FINISH)                                                                                  \
    [&, N, C, plane](unsigned slices) {                                                                           \
        const int smem = S * 16 * 1024;                                                                           \
        CHECK(cudaFuncSetAttribute(async_variant<E, S, MIN, FINISH>, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                   smem));                                                                        \
        async_variant<E, S, MIN, FINISH><<<C * slices, THREADS, smem>>>((const E::Word*)x,                          \
                                                                       FINISH ? partial : scratch, ticket, mean,  \
                                                                       var, N, C, plane, slices, 1);              \
    }
#define CONFIGS(E, FLAT)                                                                                          \
    configs = {{"chapter (step 5)", 4,                                                                            \
                [&, N, C, plane](unsigned slices) {                                                               \
                    FLAT<<<C * slices, THREADS>>>((const E::Word*)x, partial, ticket, mean, var, N, C, plane,     \
                                                  slices, 1);                                                     \
                },                                                                                                \
                true},                                                                                            \
               {"async S=2", 4, ASYNC(E, 2, 4, true), true},                                                      \
               {"async S=3", 4, ASYNC(E, 3, 4, true), true},                                                      \
               {"async S=4, 3/SM", 3, ASYNC(E, 4, 3, true), true},                                                \
               {"async S=3, no finish", 4, ASYNC(E, 3, 4, false), false},                                         \
               {"async S=4, 3/SM, no fin.", 3, ASYNC(E, 4, 3, false), false}};
                if (bf16) {
                    CONFIGS(BF16, batch_stats_flat_bf16)
                } else {
                    CONFIGS(F32, batch_stats_flat)
                }
                if (plane % (bf16 ? 8 : 4) != 0) {
                    configs.resize(1); // planes not of whole 16-byte vectors: the chapter only
                }
                std::vector<float> want_mean, want_var;
                for (size_t i = 0; i < configs.size(); ++i) {
                    const Config& k = configs[i];
                    const unsigned slices = slices_at(k.per_sm);
                    const std::function<void()> launch = [&k, slices] { k.launch(slices); };
                    auto run_and_compare = [&](const char* when) {
                        CHECK(cudaMemset(mean, 0xff, s.c * 4));
                        CHECK(cudaMemset(var, 0xff, s.c * 4));
                        launch();
                        CHECK(cudaDeviceSynchronize());
                        std::vector<float> got_mean(s.c), got_var(s.c);
                        CHECK(cudaMemcpy(got_mean.data(), mean, s.c * 4, cudaMemcpyDeviceToHost));
                        CHECK(cudaMemcpy(got_var.data(), var, s.c * 4, cudaMemcpyDeviceToHost));
                        if (i == 0 && want_mean.empty()) {
                            want_mean = got_mean;
                            want_var = got_var;
                        }
                        if (!k.checked) return std::string();
                        if (k.per_sm != 4) {
                            // Other slices: the same values in another order, so within 1e-5.
                            for (unsigned c = 0; c < s.c; ++c) {
                                if (!(std::fabs(got_mean[c] - want_mean[c]) <= 1e-5f * std::fabs(want_mean[c]) + 1e-6f) ||
                                    !(std::fabs(got_var[c] - want_var[c]) <= 1e-5f * want_var[c]))
                                    return std::string("  WRONG ") + when;
                            }
                            return std::string();
                        }
                        const bool same = std::memcmp(got_mean.data(), want_mean.data(), s.c * 4) == 0 &&
                                          std::memcmp(got_var.data(), want_var.data(), s.c * 4) == 0;
                        return same ? std::string() : std::string("  NOT THE CHAPTER'S BITS ") + when;
                    };
                    std::string verdict = run_and_compare("before timing");
                    const double ms = median_ms(launch);
                    verdict += run_and_compare("after timing");
                    std::printf("  %-26s %5u blocks %9.4f ms %6.1f%% of the read roof%s%s\n", k.name.c_str(),
                                s.c * slices, ms, 100.0 * roof / ms, k.checked ? "" : "  (not checked)",
                                verdict.c_str());
                    std::fflush(stdout);
                }
            }
        }
    }
    return 0;
}
