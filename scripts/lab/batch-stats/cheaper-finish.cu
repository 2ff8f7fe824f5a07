// Batch-norm statistics (cuda/batch_stats.cu, step 5) with other ends: where the time goes after a
// block's last load, timed in one run with the read roof of the same bytes (cuda/roofs.cu).
//
// Why. Step 5 ends as step 3 does (finish_channel): a block reduction, thread 0 stores the
// block's partial, fences, takes a ticket from the channel's counter, and the block that draws the
// last ticket fences again, loads the partials and combines them. On the H100 taking that finish
// out ("no finish", not a correct kernel) made bf16 at 256 x 64 x 56 x 56 2.8 us faster (85.1% ->
// 91.3% of the read roof; batch-stats-tuning.txt), and on the H200 about 1.7 us: the finish is a
// chain of round trips to the L2 (fence, atomic, fence, loads) that the last block of the grid
// makes after its last load, while the memory is still busy with the others' last loads.
//
// The variants (every one step 5's walk, its loads as in the chapter):
//   chapter        step 5 (batch_stats_flat), finish_channel.
//   no finish      each block stores its partial (elsewhere) and leaves: a bound, not checked.
//   posted         the partial posted as one 64-bit word (mean, m2) with a relaxed store, no fence;
//                  the ticket taken at the end without a fence; the block with the last ticket
//                  waits for each other slot to hold a posted word (it reads the word itself,
//                  so nothing else needs ordering), rebuilds each slice's count from the geometry,
//                  combines as the chapter does and puts the slots back to "empty".
//   early ticket   the same words, but thread 0 takes the block's ticket when the block starts,
//                  so the block that draws the last one knows from the start that it finishes,
//                  and no atomic is left on the chain after the last loads. Every block with an
//                  earlier ticket has started, so it will post without waiting for anything: the
//                  wait cannot deadlock, whatever the GPU holds at once (and on an in-order
//                  simulator the finisher is the channel's last block to run).
//   cluster pairs  a channel per cluster of two blocks of 1024 threads (one block an SM: 64
//                  clusters on 128 SMs for 64 channels), each walking half the channel; the two
//                  block totals are combined through distributed shared memory after a cluster
//                  barrier: no global partial, ticket or fence. Only where C <= 66 (one wave).
// "Empty" is m2 = -1.0f, a value no accumulator takes (m2 is >= 0 or NaN). The slots start empty
// (set once before the first launch) and the finisher empties them again. The combination order
// is the chapter's (partial i in lane i, a warp reduction; a block's for more than 32 slices), so
// the posted variants must give the chapter's bits, checked before and after their timing (the
// cluster pairs, whose order differs, within 1e-5 relative).
//
// Built twice (book/src/data/*/batch-stats-finish-tuning.txt): against cuda/batch_stats.cu as
// committed, and against a copy whose load_vector reads 16 bytes with the streaming hint, its load
// `const Vector v = *reinterpret_cast<const Vector*>(p);` made `__ldcs(...)` where Vector is uint4.
//
// Run on both GPUs, 2026-11-28, bf16 at 256 x 64 x 56 x 56, % of the read roof (round 1):
//                        H100 plain  streaming    H200 plain  streaming
//   chapter (step 5)        87.6       88.8          82.9       84.6 / 85.0
//   no finish (a bound)     92.1       93.8          88.4       90.5 / 90.8
//   posted                  88.2       89.2          83.3       85.2 / 85.3
//   early ticket            88.3       90.0          83.1       85.5 / 85.8
//   cluster pairs           89.0       90.3            -        -    / 86.2
// Every finish, the on-chip one too, costs 1.4 us or more over the bound (a guess at why: the
// slowest block's total must still reach the block that combines), about 5 points of a 25 us read
// on the H200: no finish measured brings bf16 there to 90%. On the H100 only the cluster pairs or
// the early ticket with streaming loads pass 90% (two changes, and the pairs only for C <= 66). The streaming hint gains 1 to 2 points where
// DRAM sets the time and costs 5 to 7% in the H200's L2 (f32 32 x 64 x 56 x 56: 0.0101 -> 0.0106 ms;
// bf16 256 x 128 x 28 x 28, 51 MB: 0.0176 -> 0.0188 ms). The chapter keeps step 5 as it is.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cheaper-finish scripts/lab/batch-stats/cheaper-finish.cu
//   ./cheaper-finish
#include "../../../cuda/batch_stats.cu"
#include "../common/read-roof.cuh"
#include "../../../cuda/look_back.cuh" // load_status / store_status: one 64-bit word, relaxed at GPU scope

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/tuning.cuh"

enum : int { NO_FINISH = 0, POSTED = 1, EARLY_TICKET = 2 };

#define EMPTY_WORD 0xbf80000000000000ull // m2 = -1.0f, mean = 0

__device__ __forceinline__ unsigned long long post_word(Moments m)
{
    return ((unsigned long long)__float_as_uint(m.m2) << 32) | __float_as_uint(m.mean);
}

// The vectors [first, last) of slice `slice` (split's arithmetic).
__device__ __forceinline__ void slice_bounds(unsigned int units, unsigned int slices, unsigned int slice,
                                             unsigned int& first, unsigned int& last)
{
    const unsigned int per_slice = (units + slices - 1) / slices;
    first = slice * per_slice < units ? slice * per_slice : units;
    last = units - first < per_slice ? units : first + per_slice;
}

// Slot i's accumulator, waiting until it is posted (the finisher's own from `mine`).
__device__ __forceinline__ Moments wait_for_slot(unsigned long long* slots, unsigned int i, unsigned int slice,
                                                 Moments mine, unsigned int units, unsigned int slices, unsigned int v)
{
    if (i == slice) {
        return mine;
    }
    unsigned long long word;
    do {
        word = load_status(&slots[i]);
    } while (word >> 32 == EMPTY_WORD >> 32);
    store_status(&slots[i], EMPTY_WORD);
    unsigned int first, last;
    slice_bounds(units, slices, i, first, last);
    if (first == last) {
        return MomentsOf<float>::identity();
    }
    return Moments{(unsigned long long)(last - first) * v, __uint_as_float((unsigned int)word),
                   __uint_as_float((unsigned int)(word >> 32))};
}

template <class E, int V, int MODE>
__device__ void finish_variant(const typename E::Word* __restrict__ in, unsigned long long* __restrict__ slots,
                               unsigned int* __restrict__ ticket, float* __restrict__ mean, float* __restrict__ var,
                               unsigned int batch, unsigned int channels, unsigned int plane, unsigned int slices,
                               unsigned int correction)
{
    typedef MomentsOf<float> Op;
    const unsigned int c = blockIdx.x / slices, slice = blockIdx.x % slices;
    const unsigned int units = batch * (plane / V);
    unsigned int drawn = 0;
    if (MODE == EARLY_TICKET && slices > 1 && threadIdx.x == 0) {
        drawn = atomicAdd(ticket + c, 1u);
    }
    unsigned int first, last;
    slice_bounds(units, slices, slice, first, last);
    Moments acc = walk_flat<E, V, E::K_LONG>(in, c, channels, plane, first, last);
    acc = block_reduce<Op>(acc);
    if (slices == 1) {
        if (threadIdx.x == 0) {
            write_stats(acc, c, correction, mean, var);
        }
        return;
    }
    slots += (size_t)c * slices;
    __shared__ bool finishes;
    if (threadIdx.x == 0) {
        if (MODE == NO_FINISH) {
            store_status(&slots[slice], post_word(acc));
            return;
        }
        if (MODE == POSTED) {
            store_status(&slots[slice], post_word(acc));
            drawn = atomicAdd(ticket + c, 1u);
            finishes = drawn == slices - 1;
        } else {
            finishes = drawn == slices - 1;
            if (!finishes) {
                store_status(&slots[slice], post_word(acc));
            }
        }
    }
    if (MODE == NO_FINISH) {
        return;
    }
    __syncthreads();
    if (!finishes) {
        return;
    }
    // The finisher. Thread 0 holds this block's accumulator; every other slot is waited for.
    Moments mine;
    mine.count = __shfl_sync(0xffffffffu, acc.count, 0);
    mine.mean = __shfl_sync(0xffffffffu, acc.mean, 0);
    mine.m2 = __shfl_sync(0xffffffffu, acc.m2, 0);
    if (MODE == POSTED) {
        // This block posted its own word too: take it back as the others are taken.
        if (threadIdx.x == 0) {
            store_status(&slots[slice], EMPTY_WORD);
        }
    }
    if (slices <= 32) {
        if (threadIdx.x < 32) {
            Moments total = threadIdx.x < slices
                                ? wait_for_slot(slots, threadIdx.x, slice, mine, units, slices, V)
                                : Op::identity();
            total = warp_reduce<Op>(total);
            if (threadIdx.x == 0) {
                write_stats(total, c, correction, mean, var);
                ticket[c] = 0;
            }
        }
        return;
    }
    __shared__ Moments own;
    if (threadIdx.x == 0) {
        own = acc;
    }
    __syncthreads();
    Moments total = Op::identity();
    for (unsigned int i = threadIdx.x; i < slices; i += blockDim.x) {
        total = Op::combine(total, wait_for_slot(slots, i, slice, own, units, slices, V));
    }
    total = block_reduce<Op>(total);
    if (threadIdx.x == 0) {
        write_stats(total, c, correction, mean, var);
        ticket[c] = 0;
    }
}

template <class E, int MODE>
__global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
variant(const typename E::Word* in, unsigned long long* slots, unsigned int* ticket, float* mean, float* var,
        unsigned int batch, unsigned int channels, unsigned int plane, unsigned int slices, unsigned int correction)
{
    const unsigned int v = vector_width<E>(in, plane);
    if (E::MAX_VEC >= 8 && v == 8) {
        finish_variant<E, E::MAX_VEC >= 8 ? 8 : 1, MODE>(in, slots, ticket, mean, var, batch, channels, plane, slices,
                                                         correction);
    } else if (v == 4) {
        finish_variant<E, 4, MODE>(in, slots, ticket, mean, var, batch, channels, plane, slices, correction);
    } else if (v == 2) {
        finish_variant<E, 2, MODE>(in, slots, ticket, mean, var, batch, channels, plane, slices, correction);
    } else {
        finish_variant<E, 1, MODE>(in, slots, ticket, mean, var, batch, channels, plane, slices, correction);
    }
}

// ---- A channel per cluster of two blocks of 1024 threads (one block an SM, 64 clusters on 128
// SMs for 64 channels): step 5's walk (walk_flat_runs, for blocks of 32 warps) over each block's
// half of the channel, then the two block totals combined through distributed shared memory after
// a cluster barrier: no global partial, ticket or fence.
__device__ __forceinline__ void pair_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void pair_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
template <class T>
__device__ __forceinline__ unsigned int remote(const T* slot, unsigned int rank)
{
    const unsigned int here = (unsigned int)__cvta_generic_to_shared(slot);
    unsigned int there;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(there) : "r"(here), "r"(rank));
    return there;
}

template <class E, int V>
__device__ void pair_channel(const typename E::Word* __restrict__ in, float* __restrict__ mean,
                             float* __restrict__ var, unsigned int batch, unsigned int channels, unsigned int plane,
                             unsigned int correction)
{
    typedef MomentsOf<float> Op;
    const unsigned int c = blockIdx.x / 2, rank = blockIdx.x % 2;
    const unsigned int units = batch * (plane / V);
    unsigned int first, last;
    slice_bounds(units, 2, rank, first, last);
    Moments acc = plane / V >= 32 ? walk_flat_runs<E, V, E::K_LONG, true, 32>(in, c, channels, plane, first, last)
                                  : walk_flat_runs<E, V, E::K_LONG, false, 32>(in, c, channels, plane, first, last);
    acc = block_reduce<Op>(acc);
    __shared__ unsigned long long slot_count;
    __shared__ float slot_mean, slot_m2;
    if (threadIdx.x == 0) {
        slot_count = acc.count;
        slot_mean = acc.mean;
        slot_m2 = acc.m2;
    }
    pair_arrive();
    pair_wait();
    if (rank == 0 && threadIdx.x == 0) {
        Moments other;
        asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(other.count) : "r"(remote(&slot_count, 1)) : "memory");
        asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(other.mean) : "r"(remote(&slot_mean, 1)) : "memory");
        asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(other.m2) : "r"(remote(&slot_m2, 1)) : "memory");
        write_stats(Op::combine(acc, other), c, correction, mean, var);
    }
    pair_arrive(); // block 1 stays until block 0 has read its slots
    pair_wait();
}

template <class E>
__global__ void __launch_bounds__(1024, 1)
pair_kernel(const typename E::Word* in, float* mean, float* var, unsigned int batch, unsigned int channels,
            unsigned int plane, unsigned int correction)
{
    const unsigned int v = vector_width<E>(in, plane);
    if (E::MAX_VEC >= 8 && v == 8) {
        pair_channel<E, E::MAX_VEC >= 8 ? 8 : 1>(in, mean, var, batch, channels, plane, correction);
    } else if (v == 4) {
        pair_channel<E, 4>(in, mean, var, batch, channels, plane, correction);
    } else {
        pair_channel<E, 1>(in, mean, var, batch, channels, plane, correction);
    }
}

__global__ void fill_empty(unsigned long long* slots, unsigned int count)
{
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        slots[i] = EMPTY_WORD;
    }
}

struct Shape {
    unsigned n, c, h, w;
};

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const Shape shapes[] = {{256, 64, 56, 56}, {512, 64, 56, 56}, {256, 128, 28, 28}, {32, 64, 56, 56},
                            {64, 512, 14, 14}, {64, 4, 30, 30},   {9, 3, 7, 5}};
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
    Moments* partial;
    unsigned long long* slots;
    unsigned int* ticket;
    const unsigned slot_count = 1 << 16;
    CHECK(cudaMalloc(&in, most * 4));
    CHECK(cudaMalloc(&in_bf16, most * 2));
    CHECK(cudaMalloc(&mean, 4096 * 4));
    CHECK(cudaMalloc(&var, 4096 * 4));
    CHECK(cudaMalloc(&sink, 1 << 20));
    CHECK(cudaMalloc(&partial, 1 << 20));
    CHECK(cudaMalloc(&slots, slot_count * 8));
    CHECK(cudaMalloc(&ticket, 4096 * 4));
    CHECK(cudaMemset(ticket, 0, 4096 * 4));
    fill_empty<<<64, 256>>>(slots, slot_count);
    CHECK(cudaMemcpy(in, host.data(), most * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_bf16, host_bf16.data(), most * 2, cudaMemcpyHostToDevice));
    const unsigned resident = prop.multiProcessorCount * BLOCKS_PER_SM;

    for (int round = 0; round < 2; ++round) {
        std::printf("round %d\n", round + 1);
        for (int bf16 = 0; bf16 < 2; ++bf16) {
            for (const Shape& s : shapes) {
                const unsigned plane = s.h * s.w;
                const size_t bytes = (size_t)s.n * s.c * plane * (bf16 ? 2 : 4);
                const void* x = bf16 ? (const void*)in_bf16 : (const void*)in;
                const double roof = read_roof(x, bytes, sink).ms();
                // Step 5's slices (batch_stats::Nchw::turns): as many a channel as fill the GPU once,
                // at most the channel's turns of 32 x K values.
                const unsigned k = bf16 ? 32 : 16;
                const unsigned long long turns = ((unsigned long long)s.n * plane + 32 * k - 1) / (32 * k);
                const unsigned slices = (unsigned)std::max(1ull, std::min((unsigned long long)(resident / s.c), turns));
                std::printf("%s %ux%ux%ux%u (%.1f MB), %u slices: read roof %.4f ms\n", bf16 ? "bf16" : "f32", s.n,
                            s.c, s.h, s.w, bytes / 1e6, slices, roof);
                const unsigned N = s.n, C = s.c;
                struct Config {
                    const char* name;
                    std::function<void()> launch;
                    bool checked;
                };
#define VARIANT(E, MODE)                                                                                       \
    [&, N, C, plane, slices] {                                                                                     \
        variant<E, MODE><<<C * slices, THREADS>>>((const E::Word*)x, slots, ticket, mean, var, N, C, plane, slices, 1); \
    }
#define CONFIGS(E, FLAT)                                                                                       \
    configs = {{"chapter (step 5)",                                                                                \
                [&, N, C, plane, slices] {                                                                         \
                    FLAT<<<C * slices, THREADS>>>((const E::Word*)x, partial, ticket, mean, var, N, C, plane, slices, 1); \
                },                                                                                                 \
                true},                                                                                             \
               {"no finish",                                                                                       \
                [&, N, C, plane, slices] {                                                                         \
                    variant<E, NO_FINISH><<<C * slices, THREADS>>>((const E::Word*)x, (unsigned long long*)partial,  \
                                                                   ticket, mean, var, N, C, plane, slices, 1);     \
                },                                                                                                 \
                false},                                                                                            \
               {"posted", VARIANT(E, POSTED), true},                                                               \
               {"early ticket", VARIANT(E, EARLY_TICKET), true},                                                   \
               {"cluster pairs 1024", [&, N, C, plane] {                                                             \
                    launch_on_clusters(pair_kernel<E>, C * 2, 1024, 2, (const E::Word*)x, mean, var, N, C, plane, 1u); \
                }, true}};                                                                                         \
                if (C > 66) configs.pop_back();
                std::vector<Config> configs;
                if (bf16) {
                    CONFIGS(BF16, batch_stats_flat_bf16)
                } else {
                    CONFIGS(F32, batch_stats_flat)
                }
                std::vector<float> want_mean, want_var;
                for (size_t i = 0; i < configs.size(); ++i) {
                    const Config& k = configs[i];
                    auto run_and_compare = [&](const char* when) {
                        CHECK(cudaMemset(mean, 0xff, s.c * 4));
                        CHECK(cudaMemset(var, 0xff, s.c * 4));
                        k.launch();
                        CHECK(cudaDeviceSynchronize());
                        std::vector<float> got_mean(s.c), got_var(s.c);
                        CHECK(cudaMemcpy(got_mean.data(), mean, s.c * 4, cudaMemcpyDeviceToHost));
                        CHECK(cudaMemcpy(got_var.data(), var, s.c * 4, cudaMemcpyDeviceToHost));
                        if (i == 0 && want_mean.empty()) {
                            want_mean = got_mean;
                            want_var = got_var;
                        }
                        if (!k.checked) return std::string();
                        bool same = std::memcmp(got_mean.data(), want_mean.data(), s.c * 4) == 0 &&
                                    std::memcmp(got_var.data(), want_var.data(), s.c * 4) == 0;
                        if (std::strstr(k.name, "cluster")) {
                            same = true;
                            for (unsigned c = 0; c < s.c; ++c) {
                                if (!(std::fabs(got_mean[c] - want_mean[c]) <= 1e-5f * std::fabs(want_mean[c]) + 1e-6f) ||
                                    !(std::fabs(got_var[c] - want_var[c]) <= 1e-5f * want_var[c]))
                                    same = false;
                            }
                        }
                        return same ? std::string() : std::string("  NOT THE CHAPTER'S BITS ") + when;
                    };
                    std::string verdict = run_and_compare("before timing");
                    const double ms = median_ms(k.launch);
                    verdict += run_and_compare("after timing");
                    std::printf("  %-18s %5u blocks %9.4f ms %6.1f%% of the read roof%s%s\n", k.name, s.c * slices, ms,
                                100.0 * roof / ms, k.checked ? "" : "  (not checked)", verdict.c_str());
                    std::fflush(stdout);
                }
            }
        }
    }
    return 0;
}
