// Batch-norm statistics laid out as the read roof reads: a "sweep" over the whole tensor, each
// thread pinned to one channel, against the chapter's step 5 (cuda/batch_stats.cu,
// batch_stats_flat) and the read roof (cuda/roofs.cu), timed in one run.
//
// Why. Step 5 gives each block a run of one channel's planes (C x slices blocks, one wave) and
// reaches about 83% of the read roof for bf16 at 256 x 64 x 56 x 56 on an H200 and 87% on an H100,
// where f32 reaches 91 to 92%. bytes-in-flight.cu showed that most of the gap is not the fold
// (with the fold taken out, "loads only", the H100 still made 87.7%) and that the finish is about
// 1.7 us on the H200. What is left is the access pattern itself: at any moment step 5's 512 blocks
// read from 512 places spread over the tensor, where the roof's grid-stride loop has the whole grid
// read one contiguous stretch, front to back.
//
// The sweep. Count the tensor in vectors of V elements (16 bytes where H x W allows: 8 bf16 or 4
// f32, else fewer, as batch_stats.cu's vector_width): P = H x W / V vectors a plane, S = C x P an
// image. The grid has T = M x S threads, M = the most whole images' worth of threads the GPU holds
// at once (at least 1, at most N), so thread t reads vectors t, t + T, t + 2T, ...: the roof's
// grid-stride loop, with a stride that is a whole number of images. Each of thread t's vectors is
// then vector s = t % S of an image (images m, m + M, m + 2M, ..., m = t / S), all in the same
// channel c = s / P: one accumulator a thread for the whole kernel. A thread issues U loads (U
// images) before it folds them (batch_stats.cu's fold_values), U = 4 or 8; a thread's last turn
// loads only the images left, the other slots copies that add nothing (walk_flat_runs' rule).
// bf16 at U = 8 (64 values) keeps its vectors as loaded and widens 16 values at a time, which fits
// 64 registers (widened all at once, the compiler spilled).
//
// Reduction. Thread t belongs to run k = t / P (the P threads of copy m = k / C of channel c = k %
// C). A warp's lanes may span several runs (P = 392 for bf16 56 x 56 is not a multiple of 32): a
// segmented shuffle reduction combines lane l with lane l + d only where l + d is in l's run, so
// the first lane of each run's stretch of the warp ends holding that stretch, combined in lane
// order. Lane 0 of every warp parks its value in shared memory; the first thread of each run in the
// block adds the parks of the following warps while they are still in its run: one partial per
// (block, run), written to a fixed slot. A run of P threads touches at most `span` blocks, so
// channel c's partials have M x span slots, c x M x span + m x span + j (j-th block of copy m's
// run), some unused. Each partial takes a ticket from its channel's counter; the one that draws
// the channel's last ticket (the count of the channel's (block, run) pairs, from the geometry)
// hands the channel to a warp of its block, whose lane i combines slots i, i + 32, ... (unused ones
// as the identity) before a warp reduction: the same order every launch, so the same bits, and
// the counter goes back to 0. (Where S < 256 a block may hold two runs of one channel: each gets
// its own partial and ticket; wherever S >= 256 that is one partial per (block, channel).)
//
// Variants: the ticket after a fence (as finish_channel), or by one atom.add.acq_rel.gpu; no finish
// (partials written, no ticket: a bound, not checked); U = 4 or 8; loads as the chapter's or
// streaming (__ldcs, as the roof's). Every finishing variant is checked against the chapter's
// kernel (relative 1e-5, both corrections) and again after its timing (the same bits, so the
// counters were left at 0). Before any launch the program emulates the geometry on the host
// (every vector read once, every slot filled once, ticket counts as expected);
// `batch-stats-sweep --host-check` runs only that, with the whole data path on small shapes.
//
// Assumes: T, the grid's threads, below 2^32; planes and tensor 16-byte aligned where V = 16 bytes.
//
// Run once, on an H200 (2026-11-27; book/src/data/nvidia-h200/batch-stats-sweep.txt): slower than
// step 5 at every shape but one (bf16 256 x 128 x 28 x 28, 80.8% of the read roof against 79.9%).
// bf16 256 x 64 x 56 x 56: 77.6% to 80.1% against step 5's 83.3%, and 84.8% to 85.2% with no
// finish at all: its finish (up to 15 partials a channel, where step 5 has 8) costs about 7
// points. The chapter keeps step 5.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o sweep-layout scripts/lab/batch-stats/sweep-layout.cu
//   ./sweep-layout
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

// ---------------------------------------------------------------------------------------------
// The geometry, shared by the kernels and the host's emulation.

#define NO_RUN 0xffffffffu

struct Sweep {
    unsigned int batch;     // N
    unsigned int channels;  // C
    unsigned int per_plane; // P, vectors a plane
    unsigned int per_image; // S = C x P
    unsigned int copies;    // M
    unsigned int threads;   // T = M x S
    unsigned int span;      // the most blocks a run of P threads touches

    // The run of thread t (NO_RUN for the padding past T).
    __host__ __device__ unsigned int run_of(unsigned int t) const { return t < threads ? t / per_plane : NO_RUN; }
    // Whether thread t is the first of its run in its block.
    __host__ __device__ bool is_head(unsigned int t) const
    {
        return t < threads && (t % THREADS == 0 || t % per_plane == 0);
    }
    __host__ __device__ unsigned int first_block(unsigned int run) const { return run * per_plane / THREADS; }
    __host__ __device__ unsigned int blocks_of(unsigned int run) const
    {
        return ((run + 1) * per_plane - 1) / THREADS - first_block(run) + 1;
    }
    // Slots of a channel, and the slot of run `run`'s partial from `block`.
    __host__ __device__ unsigned int slots() const { return copies * span; }
    __host__ __device__ size_t slot(unsigned int run, unsigned int block) const
    {
        const unsigned int m = run / channels, c = run - m * channels;
        return (size_t)c * slots() + m * span + (block - first_block(run));
    }
    // The tickets channel c hands out in a launch: its (block, run) pairs.
    __host__ __device__ unsigned int expected(unsigned int c) const
    {
        unsigned int n = 0;
        for (unsigned int m = 0; m < copies; m++) {
            n += blocks_of(m * channels + c);
        }
        return n;
    }
};

static Sweep make_sweep(unsigned int batch, unsigned int channels, unsigned int per_plane, unsigned long long resident)
{
    Sweep g;
    g.batch = batch;
    g.channels = channels;
    g.per_plane = per_plane;
    const unsigned long long per_image = (unsigned long long)channels * per_plane;
    unsigned long long m = resident / per_image;
    m = std::max(1ull, std::min(m, (unsigned long long)batch));
    const unsigned long long threads = m * per_image;
    const unsigned long long blocks = (threads + THREADS - 1) / THREADS;
    if (blocks * THREADS > 0xffffffffull) {
        std::printf("a grid of %llu threads is past this program's 32-bit thread index\n", blocks * THREADS);
        std::exit(1);
    }
    g.per_image = (unsigned int)per_image;
    g.copies = (unsigned int)m;
    g.threads = (unsigned int)threads;
    g.span = (per_plane + THREADS - 2) / THREADS + 1;
    return g;
}

static unsigned int blocks_of_grid(const Sweep& g) { return (g.threads + THREADS - 1) / THREADS; }

// ---------------------------------------------------------------------------------------------
// The kernels.

enum { FENCES = 0, ACQ_REL = 1, NO_FINISH = 2, STREAM = 4 };

// V elements at p into x[0 .. V): load_vector, or the same bytes by a streaming load (ld.global.cs,
// the roof's __ldcs).
template <class E, int V, bool STREAMING>
__device__ __forceinline__ void load_values(const typename E::Word* __restrict__ p, float* x)
{
    constexpr int BYTES = V * (int)sizeof(typename E::Word);
    if constexpr (!STREAMING) {
        load_vector<E, V>(p, x);
    } else if constexpr (BYTES == 2) {
        x[0] = bf16_to_float(__ldcs(reinterpret_cast<const unsigned short*>(p)));
    } else {
        typedef typename Bytes<BYTES>::Type Vector;
        const Vector v = __ldcs(reinterpret_cast<const Vector*>(p));
#pragma unroll
        for (int i = 0; i < BYTES / 4; i++) {
            E::unpack(word(v, i), x + i * E::PER_WORD);
        }
    }
}

// The accumulator of the first m of K values (1 <= m <= K, K at most 32), as fold_values takes
// them; slots past m hold, in each group of 16, a copy of the group's first value where that one was
// loaded (see sweep_images).
template <int K>
__device__ __forceinline__ Moments fold_sweep(const float* x, unsigned int m)
{
    static_assert(K <= 32, "fold_sweep: at most 32 values; more are folded from the packed vectors");
    return fold_values<K>(x, m);
}

// U = 8 loads of 16-byte bf16 vectors (64 values) do not fit 64 registers as floats (the compiler
// spilled), so the vectors are kept as loaded (32 registers) and widened 16 values (two vectors) at
// a time, each 16 folded by moments_of<16>: a whole turn combined as fold_values would (pairs by
// combine_halves<16>, then the two halves by combine_halves<32>); a short turn's pairs one after the
// other, the last one's lone vector (if any) by moments_of<8>, pairs with nothing loaded left out.
template <class E>
__device__ __forceinline__ void widen(uint4 v, float* y)
{
#pragma unroll
    for (int w = 0; w < 4; w++) {
        E::unpack(word(v, w), y + w * E::PER_WORD);
    }
}

template <class E>
__device__ __forceinline__ Moments pair_of(const uint4* q)
{
    float y[16];
    widen<E>(q[0], y);
    widen<E>(q[1], y + 8);
    return moments_of<16>(y, 16);
}

template <class E, int V, int U>
__device__ __forceinline__ Moments fold_packed(const uint4* q, unsigned int loaded)
{
    static_assert(U == 8 && V == 8 && sizeof(typename E::Word) == 2, "fold_packed: 8 vectors of 8 bf16");
    typedef MomentsOf<float> Op;
    if (loaded == 8) {
        return combine_halves<32>(combine_halves<16>(pair_of<E>(q), pair_of<E>(q + 2)),
                                  combine_halves<16>(pair_of<E>(q + 4), pair_of<E>(q + 6)));
    }
    Moments acc = Op::identity();
#pragma unroll
    for (int k = 0; k < 8; k += 2) {
        if (k + 2 <= (int)loaded) {
            acc = Op::combine(acc, pair_of<E>(q + k));
        } else if (k + 1 == (int)loaded) {
            float y[8];
            widen<E>(q[k], y);
            acc = Op::combine(acc, moments_of<8>(y, 8));
        }
    }
    return acc;
}

template <int V, bool STREAMING, class Word>
__device__ __forceinline__ uint4 load_packed(const Word* __restrict__ p)
{
    if constexpr (STREAMING) {
        return __ldcs(reinterpret_cast<const uint4*>(p));
    } else {
        return *reinterpret_cast<const uint4*>(p);
    }
}

// A thread's accumulator of `images` vectors, `stride` elements apart from p on: U loads in
// flight, then their fold. The last turn (images % U loads) loads only what is there; each of its
// other slots holds a copy of the first value of its group of 16 if that was loaded (a copy adds 0
// to the fold: moments_of's rule, walk_flat_runs' copies), else of x[0] (such a group is not
// folded at all).
template <class E, int V, int U, bool STREAMING>
__device__ __forceinline__ Moments sweep_images(const typename E::Word* __restrict__ p, size_t stride,
                                                unsigned int images)
{
    typedef MomentsOf<float> Op;
    constexpr int K = U * V;
    Moments acc = Op::identity();
    unsigned int left = images;
    if constexpr (K > 32) {
        uint4 q[U];
        for (; left >= (unsigned int)U; left -= U) {
#pragma unroll
            for (int k = 0; k < U; k++) {
                q[k] = load_packed<V, STREAMING>(p + k * stride);
            }
            p += U * stride;
            acc = Op::combine(acc, fold_packed<E, V, U>(q, U));
        }
        if (left > 0) {
#pragma unroll
            for (int k = 0; k < U; k++) {
                q[k] = k < (int)left ? load_packed<V, STREAMING>(p + k * stride) : make_uint4(0, 0, 0, 0);
            }
            acc = Op::combine(acc, fold_packed<E, V, U>(q, left));
        }
    } else {
        for (; left >= (unsigned int)U; left -= U) {
            float x[K];
#pragma unroll
            for (int k = 0; k < U; k++) {
                load_values<E, V, STREAMING>(p + k * stride, x + k * V);
            }
            p += U * stride;
            acc = Op::combine(acc, fold_sweep<K>(x, K));
        }
        if (left > 0) {
            float x[K];
#pragma unroll
            for (int k = 0; k < U; k++) {
                if (k < (int)left) {
                    load_values<E, V, STREAMING>(p + k * stride, x + k * V);
                } else {
                    const int first = (k * V / 16) * 16; // the first slot of this slot's group of 16
                    const float copy = first < (int)(left * V) ? x[first] : x[0];
#pragma unroll
                    for (int j = 0; j < V; j++) {
                        x[k * V + j] = copy;
                    }
                }
            }
            acc = Op::combine(acc, fold_sweep<K>(x, left * V));
        }
    }
    return acc;
}

// Channel c's statistics from its M x span slots, by one warp (lane i takes slots i, i + 32, ...;
// a slot that no block fills is the identity), then the counter back to 0.
__device__ __forceinline__ void finish_swept_channel(const Sweep& g, unsigned int c, const Moments* __restrict__ partial,
                                                     unsigned int* __restrict__ ticket, unsigned int correction,
                                                     float* __restrict__ mean, float* __restrict__ var)
{
    typedef MomentsOf<float> Op;
    const unsigned int lane = threadIdx.x % 32;
    const Moments* mine = partial + (size_t)c * g.slots();
    Moments total = Op::identity();
    for (unsigned int i = lane; i < g.slots(); i += 32) {
        const unsigned int m = i / g.span, j = i - m * g.span;
        if (j < g.blocks_of(m * g.channels + c)) {
            total = Op::combine(total, load_from_l2(&mine[i]));
        }
    }
    total = warp_reduce<Op>(total);
    if (lane == 0) {
        write_stats(total, c, correction, mean, var);
        ticket[c] = 0;
    }
}

template <class E, int V, int U, int MODE>
__global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    sweep(const typename E::Word* __restrict__ in, Moments* __restrict__ partial, unsigned int* __restrict__ ticket,
          float* __restrict__ mean, float* __restrict__ var, Sweep g, unsigned int correction)
{
    typedef MomentsOf<float> Op;
    __shared__ Moments warp_first[WARPS];     // each warp's lane 0 value after the segmented reduction
    __shared__ unsigned int finishing[THREADS]; // channels this block finishes (at most a run a thread)
    __shared__ unsigned int finishing_count;
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned int t = blockIdx.x * THREADS + threadIdx.x;
    const unsigned int run = g.run_of(t);
    if (threadIdx.x == 0) {
        finishing_count = 0;
    }

    // The thread's vectors: t, t + T, t + 2T, ... below N x S, all of channel run % C.
    Moments acc = Op::identity();
    if (t < g.threads) {
        const unsigned int m = t / g.per_image;
        const unsigned int images = (g.batch - m + g.copies - 1) / g.copies;
        acc = sweep_images<E, V, U, (MODE & STREAM) != 0>(in + (size_t)t * V, (size_t)g.threads * V, images);
    }

    // Segmented reduction in the warp: lane l takes lane l + d's value only if it is of l's run.
    // Every lane shuffles (full mask), the padding too (its run is NO_RUN, its value the identity).
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const Moments other = shuffle_down(acc, d);
        const unsigned int other_run = __shfl_down_sync(0xffffffffu, run, d);
        if (lane + d < 32 && other_run == run) {
            acc = Op::combine(acc, other);
        }
    }
    if (lane == 0) {
        warp_first[warp] = acc;
    }
    __syncthreads();

    // The first thread of each run in the block: the run's partial from this block, in lane order.
    if (g.is_head(t)) {
        const unsigned int block_first = blockIdx.x * THREADS, run_end = (run + 1) * g.per_plane;
        Moments total = acc;
        for (unsigned int w = warp + 1; w < WARPS && block_first + w * 32 < run_end; w++) {
            total = Op::combine(total, warp_first[w]);
        }
        const unsigned int c = run % g.channels;
        partial[g.slot(run, blockIdx.x)] = total;
        if constexpr ((MODE & NO_FINISH) == 0) {
            unsigned int arrived;
            if constexpr ((MODE & ACQ_REL) != 0) {
                asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(arrived) : "l"(ticket + c) : "memory");
            } else {
                __threadfence();
                arrived = atomicAdd(ticket + c, 1);
            }
            if (arrived == g.expected(c) - 1) {
                if constexpr ((MODE & ACQ_REL) == 0) {
                    __threadfence(); // order the warp's reads after every other partial's fence
                }
                finishing[atomicAdd(&finishing_count, 1u)] = c;
            }
        }
    }
    if constexpr ((MODE & NO_FINISH) != 0) {
        return;
    }
    __syncthreads();
    for (unsigned int i = warp; i < finishing_count; i += WARPS) {
        finish_swept_channel(g, finishing[i], partial, ticket, correction, mean, var);
    }
}

// ---------------------------------------------------------------------------------------------
// The host's emulation: the kernel's index math and reduction order on a small scale, with values
// in double (each vector one value), and in the order of a random permutation of the blocks.

struct HostMoments {
    double count, mean, m2;
};
static HostMoments host_combine(HostMoments a, HostMoments b)
{
    if (a.count == 0) return b;
    if (b.count == 0) return a;
    const double n = a.count + b.count, d = b.mean - a.mean;
    return HostMoments{n, a.mean + d * b.count / n, a.m2 + b.m2 + d * d * a.count * b.count / n};
}

// Geometry only (values = false): every vector read by exactly one thread of its channel, every
// used slot written once and no other, ticket counts as expected. With values, also the
// statistics of random data against a direct two-pass, relative 1e-9. Returns false on any error.
static bool emulate(const Sweep& g, bool values, std::mt19937& rng)
{
    const unsigned int blocks = blocks_of_grid(g);
    const size_t vectors = (size_t)g.batch * g.per_image;
    auto fail = [&](const char* what) {
        std::printf("  emulation FAILED (N %u, C %u, P %u, M %u, T %u): %s\n", g.batch, g.channels, g.per_plane,
                    g.copies, g.threads, what);
        return false;
    };
    if (g.copies < 1 || g.copies > g.batch || (size_t)g.copies * g.per_image != g.threads) return fail("M or T");
    std::vector<unsigned char> reads(vectors, 0);
    std::vector<double> x;
    std::uniform_real_distribution<double> uniform(-3.0, 5.0);
    if (values) {
        x.resize(vectors);
        for (auto& v : x) v = uniform(rng);
    }
    std::vector<HostMoments> acc((size_t)blocks * THREADS, HostMoments{0, 0, 0});
    for (unsigned int t = 0; t < g.threads; t++) {
        const unsigned int m = t / g.per_image, run = g.run_of(t);
        const unsigned int images = (g.batch - m + g.copies - 1) / g.copies;
        unsigned int seen = 0;
        for (size_t v = t; v < vectors; v += g.threads, seen++) {
            if (reads[v]++ != 0) return fail("a vector read twice");
            if ((v % g.per_image) / g.per_plane != run % g.channels) return fail("a vector of another channel");
            if (values) acc[t] = host_combine(acc[t], HostMoments{1, x[v], 0});
        }
        if (seen != images || run / g.channels != m) return fail("a thread's images or copy");
    }
    for (size_t v = 0; v < vectors; v++)
        if (reads[v] != 1) return fail("a vector not read");

    std::vector<unsigned int> order(blocks), tickets(g.channels, 0), finished(g.channels, 0);
    for (unsigned int b = 0; b < blocks; b++) order[b] = b;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int> written((size_t)g.channels * g.slots(), 0);
    std::vector<HostMoments> partial((size_t)g.channels * g.slots(), HostMoments{0, 0, 0});
    std::vector<double> mean(g.channels, NAN), m2(g.channels, NAN), count(g.channels, 0);
    for (unsigned int b : order) {
        HostMoments* a = &acc[(size_t)b * THREADS];
        unsigned int run[THREADS];
        for (unsigned int i = 0; i < THREADS; i++) run[i] = g.run_of(b * THREADS + i);
        // The segmented shuffles, every lane reading the values of before the step.
        for (unsigned int w = 0; w < WARPS; w++) {
            for (unsigned int d = 1; d < 32; d <<= 1) {
                HostMoments before[32];
                for (unsigned int l = 0; l < 32; l++) before[l] = a[w * 32 + l];
                for (unsigned int l = 0; l < 32; l++)
                    if (l + d < 32 && run[w * 32 + l + d] == run[w * 32 + l])
                        a[w * 32 + l] = host_combine(before[l], before[l + d]);
            }
        }
        std::vector<unsigned int> finishing;
        for (unsigned int i = 0; i < THREADS; i++) {
            const unsigned int t = b * THREADS + i;
            const bool head = t < g.threads && (i == 0 || run[i - 1] != run[i]);
            if (head != g.is_head(t)) return fail("is_head");
            if (!head) continue;
            if (b < g.first_block(run[i]) || b - g.first_block(run[i]) >= g.blocks_of(run[i]) ||
                g.blocks_of(run[i]) > g.span)
                return fail("a block outside its run's blocks");
            HostMoments total = a[i];
            const unsigned int run_end = (run[i] + 1) * g.per_plane;
            for (unsigned int w = i / 32 + 1; w < WARPS && b * THREADS + w * 32 < run_end; w++) {
                if (run[w * 32] != run[i]) return fail("a warp chained from another run");
                total = host_combine(total, a[w * 32]);
            }
            const size_t s = g.slot(run[i], b);
            if (written[s]++ != 0) return fail("a slot written twice");
            partial[s] = total;
            const unsigned int c = run[i] % g.channels;
            if (tickets[c]++ == g.expected(c) - 1) finishing.push_back(c);
        }
        for (unsigned int c : finishing) {
            if (finished[c]++ != 0) return fail("a channel finished twice");
            HostMoments lanes[32];
            for (unsigned int l = 0; l < 32; l++) {
                lanes[l] = HostMoments{0, 0, 0};
                for (unsigned int i = l; i < g.slots(); i += 32) {
                    const unsigned int m = i / g.span, j = i - m * g.span;
                    if (j < g.blocks_of(m * g.channels + c)) {
                        if (written[(size_t)c * g.slots() + i] != 1) return fail("a slot read before written");
                        lanes[l] = host_combine(lanes[l], partial[(size_t)c * g.slots() + i]);
                    }
                }
            }
            for (unsigned int d = 16; d > 0; d >>= 1) { // warp_reduce: lanes past 31 read their own
                HostMoments before[32];
                for (unsigned int l = 0; l < 32; l++) before[l] = lanes[l];
                for (unsigned int l = 0; l < 32; l++) lanes[l] = host_combine(before[l], before[l + d < 32 ? l + d : l]);
            }
            mean[c] = lanes[0].mean;
            m2[c] = lanes[0].m2;
            count[c] = lanes[0].count;
            tickets[c] = 0;
        }
    }
    for (unsigned int c = 0; c < g.channels; c++) {
        if (finished[c] != 1 || tickets[c] != 0) return fail("a channel not finished, or its counter not 0");
        for (unsigned int i = 0; i < g.slots(); i++) {
            const unsigned int m = i / g.span, j = i - m * g.span;
            const int want = j < g.blocks_of(m * g.channels + c) ? 1 : 0;
            if (written[(size_t)c * g.slots() + i] != want) return fail("a slot's writes");
        }
    }
    if (values) {
        for (unsigned int c = 0; c < g.channels; c++) {
            double sum = 0, n = 0, squares = 0;
            for (unsigned int k = 0; k < g.batch; k++)
                for (unsigned int r = 0; r < g.per_plane; r++) sum += x[(size_t)k * g.per_image + c * g.per_plane + r], n++;
            const double mu = sum / n;
            for (unsigned int k = 0; k < g.batch; k++)
                for (unsigned int r = 0; r < g.per_plane; r++) {
                    const double d = x[(size_t)k * g.per_image + c * g.per_plane + r] - mu;
                    squares += d * d;
                }
            if (count[c] != n || std::fabs(mean[c] - mu) > 1e-9 * (1 + std::fabs(mu)) ||
                std::fabs(m2[c] - squares) > 1e-9 * squares)
                return fail("the statistics");
        }
    }
    return true;
}

// Small shapes (and the program's shapes' geometries) on the host only: no CUDA call.
static int host_check()
{
    std::mt19937 rng(11);
    int failures = 0, cases = 0;
    // The program's shapes at 132 SMs and 2 to 8 blocks an SM, V as the kernels take it.
    const unsigned int shapes[][4] = {{256, 64, 56, 56}, {512, 64, 56, 56}, {32, 64, 56, 56}, {256, 128, 28, 28},
                                      {64, 512, 14, 14}};
    for (const auto& s : shapes)
        for (unsigned int v : {8u, 4u})
            for (unsigned int b : {2u, 4u, 8u}) {
                const unsigned int plane = s[2] * s[3];
                if (plane % v) continue;
                cases++;
                failures += !emulate(make_sweep(s[0], s[1], plane / v, 132ull * b * THREADS), false, rng);
            }
    // Random small shapes, values and all: P below and above 32 and 256, S below 256 (runs of one
    // channel twice in a block), M = 1 on several waves, M = N.
    std::uniform_int_distribution<unsigned int> n_of(1, 12), c_of(1, 40), p_of(1, 700), r_of(64, 6000);
    for (int i = 0; i < 400; i++) {
        const unsigned int n = n_of(rng), c = c_of(rng), p = i % 4 == 0 ? 1 + p_of(rng) % 40 : p_of(rng);
        cases++;
        failures += !emulate(make_sweep(n, c, p, r_of(rng)), true, rng);
    }
    std::printf("host check: %d cases, %d failed\n", cases, failures);
    return failures == 0 ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// The host.

template <class E>
using SweepKernel = void (*)(const typename E::Word*, Moments*, unsigned int*, float*, float*, Sweep, unsigned int);

// The instance for a vector of v elements.
template <class E, int U, int MODE>
static SweepKernel<E> pick(unsigned int v)
{
    if constexpr (E::MAX_VEC >= 8) {
        if (v == 8) return sweep<E, 8, U, MODE>;
    }
    if (v == 4) return sweep<E, 4, U, MODE>;
    if (v == 2) return sweep<E, 2, U, MODE>;
    return sweep<E, 1, U, MODE>;
}

template <class E>
static unsigned int host_vector_width(const void* in, unsigned int plane)
{
    unsigned int v = E::MAX_VEC;
    while (v > 1 && (plane % v != 0 || reinterpret_cast<size_t>(in) % (v * sizeof(typename E::Word)) != 0)) v /= 2;
    return v;
}

struct Shape {
    unsigned n, c, h, w;
};

struct Buffers {
    Moments *chapter_partial, *sweep_partial;
    unsigned int *chapter_ticket, *sweep_ticket;
    float *mean, *var, *sink;
    size_t sweep_slots; // Moments the sweep's partial holds
};

// Means and variances of a launch, the outputs poisoned (NaN) before it.
static void run_once(const std::function<void(unsigned int)>& launch, unsigned int correction, unsigned int channels,
                     const Buffers& b, std::vector<float>& mean, std::vector<float>& var)
{
    CHECK(cudaMemset(b.mean, 0xff, channels * 4));
    CHECK(cudaMemset(b.var, 0xff, channels * 4));
    launch(correction);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    mean.resize(channels);
    var.resize(channels);
    CHECK(cudaMemcpy(mean.data(), b.mean, channels * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(var.data(), b.var, channels * 4, cudaMemcpyDeviceToHost));
}

// The largest relative difference of got from want; mismatches counted against the tuning
// program's bound (|d| <= 1e-5 |want| + 1e-6 for means, 1e-5 want for variances; NaN is a mismatch).
static double compare(const std::vector<float>& got, const std::vector<float>& want, bool is_mean, int& wrong)
{
    double worst = 0;
    for (size_t c = 0; c < want.size(); c++) {
        const double d = std::fabs((double)got[c] - want[c]);
        const double bound = is_mean ? 1e-5 * std::fabs(want[c]) + 1e-6 : 1e-5 * want[c];
        if (!(d <= bound)) wrong++;
        const double rel = d / std::max(std::fabs((double)want[c]), 1e-30);
        worst = std::isnan(d) ? (double)INFINITY : std::max(worst, rel);
    }
    return worst;
}

template <class E>
static void run_shape(const cudaDeviceProp& prop, const Shape& s, const typename E::Word* x, const Buffers& b,
                      bool bf16)
{
    const unsigned int plane = s.h * s.w, N = s.n, C = s.c;
    const size_t bytes = (size_t)N * C * plane * sizeof(typename E::Word);

    const ReadRoof read = read_roof(x, bytes, b.sink);
    const double roof = read.ms(), read4 = read.unroll4, read8 = read.unroll8;
    const unsigned int v = host_vector_width<E>(x, plane);
    std::printf("%s %ux%ux%ux%u (%.0f MB): read roof %.4f ms (unroll 4 %.4f, 8 %.4f); V = %u, P = %u, S = %u\n",
                bf16 ? "bf16" : "f32", N, C, s.h, s.w, bytes / 1e6, roof, read4, read8, v, plane / v, C * (plane / v));

    // The chapter's step 5, launched as crates/batch-stats launches it: slices = clamp(SMs x
    // BLOCKS_PER_SM / C, 1, turns), turns = ceil(N x H x W / (32 lanes x 64 bytes)).
    const unsigned long long turns = ((unsigned long long)N * plane + (bf16 ? 1023 : 511)) / (bf16 ? 1024 : 512);
    const unsigned int slices =
        (unsigned int)std::max(1ull, std::min((unsigned long long)prop.multiProcessorCount * BLOCKS_PER_SM / C, turns));
    std::vector<float> want_mean[2], want_var[2];
    {
        const auto launch = [&](unsigned int correction) {
            if constexpr (sizeof(typename E::Word) == 2) {
                batch_stats_flat_bf16<<<C * slices, THREADS>>>(x, b.chapter_partial, b.chapter_ticket, b.mean, b.var, N,
                                                               C, plane, slices, correction);
            } else {
                batch_stats_flat<<<C * slices, THREADS>>>(x, b.chapter_partial, b.chapter_ticket, b.mean, b.var, N, C,
                                                          plane, slices, correction);
            }
        };
        for (unsigned int k = 0; k < 2; k++) run_once(launch, k, C, b, want_mean[k], want_var[k]);
        cudaFuncAttributes a;
        CHECK(cudaFuncGetAttributes(&a, bf16 ? (const void*)batch_stats_flat_bf16 : (const void*)batch_stats_flat));
        const double ms = median_ms([&] { launch(1); });
        std::printf("  %-26s %u slices, V %u, 4 blocks/SM  (%5u blocks) %8.4f ms %6.1f%% of the read roof"
                    "  regs %3d, local %zu B\n",
                    "chapter (step 5, flat)", slices, v, C * slices, ms, 100.0 * roof / ms, a.numRegs,
                    (size_t)a.localSizeBytes);
    }

    struct Variant {
        const char* name;
        unsigned int u;
        int mode;
        SweepKernel<E> kernel;
    };
    const Variant variants[] = {
        {"sweep U=4", 4, FENCES, pick<E, 4, FENCES>(v)},
        {"sweep U=4, acq_rel", 4, ACQ_REL, pick<E, 4, ACQ_REL>(v)},
        {"sweep U=4, no finish", 4, NO_FINISH, pick<E, 4, NO_FINISH>(v)},
        {"sweep U=4, ldcs", 4, STREAM, pick<E, 4, STREAM>(v)},
        {"sweep U=8", 8, FENCES, pick<E, 8, FENCES>(v)},
        {"sweep U=8, acq_rel", 8, ACQ_REL, pick<E, 8, ACQ_REL>(v)},
        {"sweep U=8, no finish", 8, NO_FINISH, pick<E, 8, NO_FINISH>(v)},
        {"sweep U=8, ldcs", 8, STREAM, pick<E, 8, STREAM>(v)},
    };
    for (const Variant& k : variants) {
        int per_sm = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.kernel, THREADS, 0));
        const Sweep g = make_sweep(N, C, plane / v, (unsigned long long)prop.multiProcessorCount * per_sm * THREADS);
        const unsigned int blocks = blocks_of_grid(g);
        std::mt19937 rng(3);
        if (!emulate(g, false, rng)) {
            std::printf("  %-26s skipped: the host's emulation of its geometry failed\n", k.name);
            continue;
        }
        CHECK(cudaMemset(b.sweep_ticket, 0, C * 4)); // each variant starts from counters at 0
        if ((size_t)C * g.slots() > b.sweep_slots) {
            std::printf("  %-26s skipped: %zu partials, past the buffer's %zu\n", k.name, (size_t)C * g.slots(),
                        b.sweep_slots);
            continue;
        }
        const auto launch = [&](unsigned int correction) {
            k.kernel<<<blocks, THREADS>>>(x, b.sweep_partial, b.sweep_ticket, b.mean, b.var, g, correction);
        };
        const bool checked = (k.mode & NO_FINISH) == 0;
        int wrong = 0;
        double worst_mean = 0, worst_var = 0;
        std::vector<float> mean, var, first_mean, first_var;
        for (unsigned int corr = 0; corr < 2; corr++) {
            run_once(launch, corr, C, b, mean, var);
            if (checked) {
                worst_mean = std::max(worst_mean, compare(mean, want_mean[corr], true, wrong));
                worst_var = std::max(worst_var, compare(var, want_var[corr], false, wrong));
            }
        }
        first_mean = mean;
        first_var = var;
        const double ms = median_ms([&] { launch(1); });
        bool same_after = true;
        if (checked) {
            // Again after the timing's launches: the same bits (deterministic, counters back at 0).
            run_once(launch, 1, C, b, mean, var);
            same_after = std::memcmp(mean.data(), first_mean.data(), C * 4) == 0 &&
                         std::memcmp(var.data(), first_var.data(), C * 4) == 0;
        }
        cudaFuncAttributes a;
        CHECK(cudaFuncGetAttributes(&a, k.kernel));
        char config[96];
        std::snprintf(config, sizeof config, "M %u, V %u, %d blocks/SM", g.copies, v, per_sm);
        std::printf("  %-26s %-24s (%5u blocks) %8.4f ms %6.1f%% of the read roof  regs %3d, local %zu B", k.name,
                    config, blocks, ms, 100.0 * roof / ms, a.numRegs, (size_t)a.localSizeBytes);
        if (checked) {
            std::printf("  max rel err mean %.1e var %.1e%s%s", worst_mean, worst_var, wrong ? "  WRONG" : "",
                        same_after ? "" : "  WRONG after timing (bits differ)");
        } else {
            std::printf("  (not checked)");
        }
        std::printf("\n");
        std::fflush(stdout);
    }
}

int main(int argc, char** argv)
{
    if (argc > 1 && std::strcmp(argv[1], "--host-check") == 0) {
        return host_check();
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const Shape shapes[] = {{256, 64, 56, 56}, {512, 64, 56, 56}, {32, 64, 56, 56}, {256, 128, 28, 28}, {64, 512, 14, 14}};
    size_t most = 0;
    for (const Shape& s : shapes) most = std::max(most, (size_t)s.n * s.c * s.h * s.w);
    std::vector<float> host(most);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.5f, 2.0f);
    for (auto& v : host) v = normal(rng);
    std::vector<unsigned short> host_bf16(most);
    for (size_t i = 0; i < most; ++i) host_bf16[i] = host_to_bf16(host[i]);

    float* in;
    unsigned short* in_bf16;
    Buffers b;
    b.sweep_slots = 1 << 20;
    CHECK(cudaMalloc(&in, most * 4));
    CHECK(cudaMalloc(&in_bf16, most * 2));
    CHECK(cudaMalloc(&b.mean, 4096 * 4));
    CHECK(cudaMalloc(&b.var, 4096 * 4));
    CHECK(cudaMalloc(&b.sink, 1 << 20));
    CHECK(cudaMalloc(&b.chapter_partial, 1 << 20));
    CHECK(cudaMalloc(&b.sweep_partial, b.sweep_slots * sizeof(Moments)));
    CHECK(cudaMalloc(&b.chapter_ticket, 4096 * 4));
    CHECK(cudaMalloc(&b.sweep_ticket, 4096 * 4));
    CHECK(cudaMemset(b.chapter_ticket, 0, 4096 * 4));
    CHECK(cudaMemset(b.sweep_ticket, 0, 4096 * 4));
    CHECK(cudaMemcpy(in, host.data(), most * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_bf16, host_bf16.data(), most * 2, cudaMemcpyHostToDevice));

    for (int bf16 = 1; bf16 >= 0; --bf16) {
        for (const Shape& s : shapes) {
            if (bf16) run_shape<BF16>(prop, s, in_bf16, b, true);
            else run_shape<F32>(prop, s, in, b, false);
        }
    }
    return 0;
}
