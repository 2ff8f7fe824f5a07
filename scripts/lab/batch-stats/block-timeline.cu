// When the blocks of batch-norm statistics' step 5 (cuda/batch_stats.cu, batch_stats_flat) start,
// finish their walk and leave, against the blocks of the read roof (cuda/roofs.cu) over the same
// bytes: where the time beyond the roof goes, for the case that misses issue 29's target (bf16 at
// 256 x 64 x 56 x 56 on an H200, 83% of the read roof where the f32 tensor, twice the bytes, makes
// 91%); and what three ways of keeping more bytes in flight while a lane folds would give.
//
// Why. cheaper-finish.cu measured step 5 without its finish at 88.4% of the read roof on
// an H200, so even a free finish misses 90%. A cost that does not shrink with the bytes could be at
// the start (the blocks' first loads), at the end (a tail of blocks that finish late), between
// launches, or in the walk itself. Timestamps say which: thread 0 of every block reads the GPU's
// global timer (%globaltimer, in ns) when the block starts, after its walk (behind a block barrier:
// every warp has issued its last loads) and when it leaves, and notes its SM. Ten launches run back
// to back, as the timings run them; the program prints, for launches 3 to 8, the spread of each
// stamp from the launch's first start, the gap from the previous launch's last block, and the span.
//
// Kernels, each stamped, each timed by median_ms too (the tour's rule):
//   read roof                   read_roof<4>, eight blocks of 256 an SM, as read-roof.cuh launches it
//   step 5                      the chapter's walk (walk_flat) and finish (finish_channel)
//   no finish                   the walk, then each block stores its accumulator and leaves (a bound)
//   loads only                  the walk's loads, each value added once instead of folded (a bound:
//                               its results are wrong), with and without the finish
//   3 blocks an SM              step 5 compiled for three blocks an SM (up to 85 registers a
//                               thread), with slices to fill the GPU once with them
//   pipelined                   a lane's next turn loaded before it folds this one (walk_variant),
//                               at four and at three blocks an SM
//   prefetching 1, 2, 4         each lane first asks the L2 for its loads AHEAD turns on
//                               (walk_variant, prefetch.global.L2)
// The pipelined and prefetching walks fold the same values in the same order as step 5 and are
// checked for its bits (at three blocks an SM the slices differ, so within 1e-5 relative).
//
// Run on an H200 and an H100, 2026-11-28 (batch-stats-timeline.txt in both GPUs' folders under
// book/src/data/): every block starts within 0.3 us, and none straggles at the end. On the H200
// loads only make 90.9% of the read roof with the finish (89.8-90.3% in earlier runs) and 95.8%
// without, against step 5's 84.0% and 89.5% (walk_variant's own loop: 83.9% and 89.5%): the folds
// cost about 7 points, the finish about 5 (on the H100 about 4 each). Prefetching lost (62-75% on
// the H200); pipelining spills at four blocks an SM (49%) and at three is level with the
// unpipelined walk there (82.2% against 82.3%), both below step 5.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o block-timeline scripts/lab/batch-stats/block-timeline.cu
//   ./block-timeline
#include "../../../cuda/batch_stats.cu"
#include "../common/read-roof.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

__device__ __forceinline__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned int sm_id()
{
    unsigned int id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// Stamps of one block: start, walked, left (ns) and its SM.
struct Stamps {
    unsigned long long start, walked, left, sm;
};

// The experiments' walk: walk_flat_runs<BF16, 8, 32, true> (planes of at least 32 vectors) with
// one of three changes to its whole turns (a run's short last turn is the chapter's):
//   AHEAD > 0   each lane first asks the L2 for its loads of the turn AHEAD turns on
//               (prefetch.global.L2, no register held): AHEAD more turns' bytes in flight a warp
//   !FOLD       each value only added once, not folded: a bound, its results wrong
//   PIPELINED   a lane's loads of its next whole turn (4 x 16 bytes, kept as loaded) issued before
//               it folds this one, so a warp has a turn in flight while it folds
// With FOLD, the same values folded in the same order as step 5: its bits.
template <int AHEAD, bool FOLD, bool PIPELINED>
__device__ __forceinline__ Moments walk_variant(const unsigned short* __restrict__ in, unsigned int c,
                                                unsigned int channels, unsigned int plane, unsigned int first,
                                                unsigned int last)
{
    typedef BF16 E;
    typedef MomentsOf<float> Op;
    constexpr int V = 8, K = E::K_LONG, L = K / V;
    const unsigned int per_plane = plane / V;
    const size_t jump = (size_t)(channels - 1) * plane;
    const unsigned short* channel = in + (size_t)c * plane;
    const unsigned int lane = threadIdx.x % 32;
    constexpr unsigned int step = WARPS * 32 * L;
    const unsigned int step_planes = step / per_plane, step_rest = step - step_planes * per_plane;
    const unsigned int first_turn = first + threadIdx.x / 32 * (32 * L);
    // A lane's first load of a turn, as (plane n, vector r): `at` holds the next turn's, `ahead` the
    // turn AHEAD on's; moving on one turn is `step_planes` planes and `step_rest` vectors.
    struct Place {
        unsigned int n, r;
    };
    const unsigned int start = first_turn + lane;
    Place at = {start / per_plane, start % per_plane}, ahead = at;
    auto move_on = [&](Place& q) {
        q.n += step_planes;
        q.r += step_rest;
        if (q.r >= per_plane) {
            q.r -= per_plane;
            q.n++;
        }
    };
    auto address = [&](const Place& q) { return channel + (size_t)q.n * channels * plane + q.r * V; };
    // The next turn's loads as loaded (raw), moving `at` on.
    auto load_turn = [&](uint4* raw) {
        const unsigned short* p = address(at);
        unsigned int r = at.r;
        move_on(at);
#pragma unroll
        for (int k = 0; k < L; k++) {
            raw[k] = *reinterpret_cast<const uint4*>(p);
            next_load<V, true>(p, r, per_plane, jump);
        }
    };
    auto prefetch_turn = [&](unsigned int turn) {
        if (turn + 32 * L <= last) {
            const unsigned short* q = address(ahead);
            unsigned int r = ahead.r;
#pragma unroll
            for (int k = 0; k < L; k++) {
                asm volatile("prefetch.global.L2 [%0];" ::"l"(q));
                next_load<V, true>(q, r, per_plane, jump);
            }
        }
        move_on(ahead);
    };
    // A whole turn's values folded into acc (step 5's fold_values, two halves widened in turn).
    auto fold_turn = [&](Moments acc, const uint4* raw) {
        if constexpr (!FOLD) {
            // Loads only: each value added once, so that every load is made.
#pragma unroll
            for (int k = 0; k < L; k++) {
                float x[V];
#pragma unroll
                for (int i = 0; i < 4; i++) E::unpack(word(raw[k], i), x + i * E::PER_WORD);
#pragma unroll
                for (int j = 0; j < V; j++) acc.mean += x[j];
            }
            return acc;
        } else {
            Moments half[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float x[K / 2];
#pragma unroll
                for (int k = 0; k < L / 2; k++) {
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        E::unpack(word(raw[h * L / 2 + k], i), x + k * V + i * E::PER_WORD);
                    }
                }
                half[h] = moments_of<K / 2>(x, K / 2);
            }
            return Op::combine(acc, combine_halves<K / 2>(half[0], half[1]));
        }
    };
    if constexpr (AHEAD > 0) {
        for (int a = 0; a < AHEAD; a++) prefetch_turn(first_turn + a * step);
    }
    Moments acc = Op::identity();
    uint4 raw[L]; // PIPELINED: the turn's loads, made the turn before
    if (PIPELINED && first_turn + 32 * L <= last) load_turn(raw);
    for (unsigned int turn = first_turn; turn < last; turn += step) {
        if constexpr (AHEAD > 0) prefetch_turn(turn + AHEAD * step);
        if (turn + 32 * L <= last) {
            if (PIPELINED) {
                uint4 next[L];
                const bool next_whole = turn + step + 32 * L <= last;
                if (next_whole) load_turn(next);
                acc = fold_turn(acc, raw);
#pragma unroll
                for (int k = 0; k < L; k++) raw[k] = next[k];
            } else {
                load_turn(raw);
                acc = fold_turn(acc, raw);
            }
            continue;
        }
        // The run's last turn, short: step 5's code (walk_flat_runs).
        const unsigned short* p = address(at);
        unsigned int r = at.r;
        move_on(at);
        const unsigned int u = turn + lane;
        const unsigned int inside = u < last ? (last - u + 31) / 32 : 0;
        const unsigned int mine = inside < (unsigned int)L ? inside : L;
        if (mine == 0) {
            continue;
        }
        float x[K];
#pragma unroll
        for (int k = 0; k < L; k++) {
            if (k < (int)mine) {
                load_vector<E, V>(p, x + k * V);
                next_load<V, true>(p, r, per_plane, jump);
            } else {
                const float copy = (k * V < K / 2 || mine * V <= K / 2) ? x[0] : x[K / 2];
#pragma unroll
                for (int j = 0; j < V; j++) x[k * V + j] = copy;
            }
        }
        acc = Op::combine(acc, fold_values<K>(x, mine * V));
    }
    return acc;
}

// Step 5 (split<E, V, true>'s body, for V = 8 bf16 vectors: planes of 56 x 56), stamped, walking
// with walk_variant<AHEAD, FOLD, PIPELINED> (none of the three: the chapter's walk_flat, or with
// VARIANT_WALK walk_variant's own loop, to compare its other forms with like for like). FINISH:
// finish_channel as the chapter; otherwise the block's accumulator is stored and the block leaves.
template <bool FINISH, int AHEAD = 0, bool FOLD = true, bool PIPELINED = false, int MIN_BLOCKS = BLOCKS_PER_SM,
          bool VARIANT_WALK = false>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    timed_flat(const unsigned short* in, Moments* partial, unsigned int* ticket, float* mean, float* var,
               unsigned int batch, unsigned int channels, unsigned int plane, unsigned int slices, Stamps* stamps)
{
    typedef BF16 E;
    constexpr int V = 8;
    if (threadIdx.x == 0) stamps[blockIdx.x].start = global_ns();
    const unsigned int c = blockIdx.x / slices, slice = blockIdx.x % slices;
    const unsigned int units = batch * (plane / V);
    const unsigned int per_slice = (units + slices - 1) / slices;
    const unsigned int first = slice * per_slice < units ? slice * per_slice : units;
    const unsigned int last = units - first < per_slice ? units : first + per_slice;
    Moments acc = AHEAD == 0 && FOLD && !PIPELINED && !VARIANT_WALK
                      ? walk_flat<E, V, E::K_LONG>(in, c, channels, plane, first, last)
                      : walk_variant<AHEAD, FOLD, PIPELINED>(in, c, channels, plane, first, last);
    __syncthreads();
    if (threadIdx.x == 0) stamps[blockIdx.x].walked = global_ns();
    if (FINISH) {
        finish_channel(acc, partial + (size_t)c * slices, ticket + c, slices, slice, c, 0, mean, var);
    } else {
        acc = block_reduce<MomentsOf<float> >(acc);
        if (threadIdx.x == 0) partial[blockIdx.x] = acc;
    }
    if (threadIdx.x == 0) {
        stamps[blockIdx.x].left = global_ns();
        stamps[blockIdx.x].sm = sm_id();
    }
}

__global__ void timed_roof(const float4* __restrict__ input, float* __restrict__ sink, long long count, float never,
                           Stamps* stamps)
{
    if (threadIdx.x == 0) stamps[blockIdx.x].start = global_ns();
    read_roof<4>(input, sink, count, never);
    __syncthreads();
    if (threadIdx.x == 0) {
        stamps[blockIdx.x].walked = stamps[blockIdx.x].left = global_ns();
        stamps[blockIdx.x].sm = sm_id();
    }
}

static double pct(std::vector<double> v, double p)
{
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, (size_t)(p / 100.0 * (v.size() - 1) + 0.5))];
}

// The stamps of launches 3 to 8 of ten, in us from each launch's first start.
static void report(const char* name, const std::vector<Stamps>& all, unsigned grid, int sms)
{
    std::printf("%s (%u blocks)\n", name, grid);
    std::printf("  launch  gap_from_prev  start p50/p100   walked p0/p50/p90/p100        left p0/p50/p90/p100   "
                "span   SM last-left min/median\n");
    for (int l = 3; l < 9; l++) {
        const Stamps* s = &all[(size_t)l * grid];
        const Stamps* prev = &all[(size_t)(l - 1) * grid];
        unsigned long long t0 = ~0ull, prev_end = 0;
        for (unsigned b = 0; b < grid; b++) t0 = std::min(t0, s[b].start);
        for (unsigned b = 0; b < grid; b++) prev_end = std::max(prev_end, prev[b].left);
        std::vector<double> start, walked, left;
        std::vector<double> sm_last(sms, 0.0);
        for (unsigned b = 0; b < grid; b++) {
            start.push_back((s[b].start - t0) * 1e-3);
            walked.push_back((s[b].walked - t0) * 1e-3);
            left.push_back((s[b].left - t0) * 1e-3);
            if (s[b].sm < (unsigned)sms) sm_last[s[b].sm] = std::max(sm_last[s[b].sm], (s[b].left - t0) * 1e-3);
        }
        std::vector<double> used;
        for (double x : sm_last)
            if (x > 0) used.push_back(x);
        std::printf("  %6d  %10.2f us  %6.2f %6.2f   %6.2f %6.2f %6.2f %6.2f   %6.2f %6.2f %6.2f %6.2f  %6.2f  %6.2f %6.2f\n",
                    l, ((double)t0 - (double)prev_end) * 1e-3, pct(start, 50), pct(start, 100), pct(walked, 0),
                    pct(walked, 50), pct(walked, 90), pct(walked, 100), pct(left, 0), pct(left, 50), pct(left, 90),
                    pct(left, 100), pct(left, 100), pct(used, 0), pct(used, 50));
    }
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    std::printf("%s, %d SMs\n", prop.name, sms);
    const unsigned batch = 256, channels = 64, plane = 56 * 56;
    const size_t n = (size_t)batch * channels * plane, bytes = n * 2;
    std::vector<unsigned short> host(n);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (auto& x : host) {
        const float f = u(rng);
        unsigned w;
        std::memcpy(&w, &f, 4);
        x = (unsigned short)(w >> 16);
    }
    unsigned short* in;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
    const unsigned slices = (unsigned)sms * BLOCKS_PER_SM / channels, grid = channels * slices;
    Moments* partial;
    unsigned int* ticket;
    float *mean, *var, *sink;
    CHECK(cudaMalloc(&partial, grid * sizeof(Moments)));
    CHECK(cudaMalloc(&ticket, channels * 4));
    CHECK(cudaMemset(ticket, 0, channels * 4));
    CHECK(cudaMalloc(&mean, channels * 4));
    CHECK(cudaMalloc(&var, channels * 4));
    CHECK(cudaMalloc(&sink, 4));
    const unsigned roof_grid = (unsigned)sms * 8;
    Stamps* stamps;
    CHECK(cudaMalloc(&stamps, (size_t)10 * roof_grid * sizeof(Stamps) + (size_t)10 * grid * sizeof(Stamps)));
    std::printf("bf16 %ux%ux56x56 (%.1f MB), %u slices, %u blocks; read roof %u blocks of 256\n", batch, channels,
                bytes * 1e-6, slices, grid, roof_grid);

    // Untimed-by-stamps times first, as the tour takes them.
    const double roof = read_roof(in, bytes, sink).ms();
    const double chapter = median_ms([&] {
        batch_stats_flat_bf16<<<grid, THREADS>>>(in, partial, ticket, mean, var, batch, channels, plane, slices, 0);
    });
    std::printf("median_ms: read roof %.4f ms, chapter step 5 %.4f ms (%.1f%% of the roof)\n", roof, chapter,
                100.0 * roof / chapter);

    // Each stamped kernel: ten launches back to back (after three to warm up), each stamping its own
    // blocks; then the same kernel timed by median_ms.
    std::vector<Stamps> host_stamps;
    auto run = [&](const char* name, unsigned blocks, const void* kernel, auto launch) {
        for (int l = 0; l < 3; l++) launch(stamps);
        for (int l = 0; l < 10; l++) launch(stamps + (size_t)l * blocks);
        CHECK(cudaDeviceSynchronize());
        host_stamps.resize((size_t)10 * blocks);
        CHECK(cudaMemcpy(host_stamps.data(), stamps, host_stamps.size() * sizeof(Stamps), cudaMemcpyDeviceToHost));
        const double ms = median_ms([&] { launch(stamps); });
        cudaFuncAttributes a;
        CHECK(cudaFuncGetAttributes(&a, kernel));
        std::printf("\n%s, stamped, median_ms %.4f ms (%.1f%% of the read roof); %d registers, %zu B local\n", name,
                    ms, 100.0 * roof / ms, a.numRegs, a.localSizeBytes);
        report(name, host_stamps, blocks, sms);
    };
    const long long vectors = (long long)(bytes / 16);
    run("read roof (read_roof<4>)", roof_grid, (const void*)timed_roof, [&](Stamps* st) {
        timed_roof<<<roof_grid, 256>>>((const float4*)in, sink, vectors, NAN, st);
    });
    // A stamped form of step 5 on `blocks` blocks of `sl` slices a channel.
    auto run_flat = [&](const char* name, auto kernel, unsigned blocks, unsigned sl) {
        run(name, blocks, (const void*)kernel, [&](Stamps* st) {
            kernel<<<blocks, THREADS>>>(in, partial, ticket, mean, var, batch, channels, plane, sl, st);
        });
    };
    // Step 5's means and variances, which every form that folds is checked against after its run.
    std::vector<float> want(2 * channels), got(2 * channels);
    batch_stats_flat_bf16<<<grid, THREADS>>>(in, partial, ticket, mean, var, batch, channels, plane, slices, 0);
    CHECK(cudaMemcpy(want.data(), mean, channels * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(want.data() + channels, var, channels * 4, cudaMemcpyDeviceToHost));
    auto check = [&](const char* name) {
        CHECK(cudaMemcpy(got.data(), mean, channels * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(got.data() + channels, var, channels * 4, cudaMemcpyDeviceToHost));
        double worst = 0.0;
        for (size_t i = 0; i < got.size(); i++) {
            worst = std::max(worst, (double)std::fabs(got[i] - want[i]) / std::fabs(want[i]));
        }
        if (std::memcmp(got.data(), want.data(), got.size() * 4) == 0) {
            std::printf("%s: the same bits as step 5\n", name);
        } else {
            // Another partition of the channels (other slices) rounds otherwise.
            std::printf("%s: at most %.2e relative from step 5's means and variances%s\n", name, worst,
                        worst <= 1e-5 ? "" : " (WRONG)");
        }
    };
    run_flat("step 5 (walk and finish_channel)", timed_flat<true>, grid, slices);
    run_flat("step 5's walk, no finish", timed_flat<false>, grid, slices);
    run_flat("step 5 as the experiments walk (walk_variant)", timed_flat<true, 0, true, false, BLOCKS_PER_SM, true>, grid,
             slices);
    check("walk_variant");
    run_flat("walk_variant, no finish", timed_flat<false, 0, true, false, BLOCKS_PER_SM, true>, grid, slices);
    // The walk with its loads only (each value added once, no fold): bounds, not checked.
    run_flat("step 5's loads only, finish_channel", timed_flat<true, 0, false>, grid, slices);
    run_flat("step 5's loads only, no finish", timed_flat<false, 0, false>, grid, slices);
    // Three blocks an SM (85 registers a thread), so as many slices as fill the GPU once with them.
    const unsigned slices3 = (unsigned)sms * 3 / channels, grid3 = channels * slices3;
    run_flat("step 5, 3 blocks an SM", timed_flat<true, 0, true, false, 3>, grid3, slices3);
    check("3 blocks an SM");
    run_flat("step 5, pipelined, 3 blocks an SM", timed_flat<true, 0, true, true, 3>, grid3, slices3);
    check("pipelined, 3 blocks an SM");
    run_flat("step 5, pipelined", timed_flat<true, 0, true, true>, grid, slices);
    check("pipelined");
    run_flat("step 5, pipelined, no finish", timed_flat<false, 0, true, true>, grid, slices);
    run_flat("step 5, prefetching 1 turn ahead", timed_flat<true, 1>, grid, slices);
    check("prefetching 1 turn ahead");
    run_flat("step 5, prefetching 2 turns ahead", timed_flat<true, 2>, grid, slices);
    check("prefetching 2 turns ahead");
    run_flat("step 5, prefetching 4 turns ahead", timed_flat<true, 4>, grid, slices);
    check("prefetching 4 turns ahead");
    CHECK(cudaGetLastError());
    return 0;
}
