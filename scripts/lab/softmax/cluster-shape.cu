// The cluster softmax (cuda/softmax.cu, step 7) against other cluster shapes and the steps it
// replaces for long rows (split rows; step 6's 512 x 64 block for rows of 2^15), timed in one run
// with the device copy of the same bytes: how softmax::cluster_shape was chosen. A variant is a
// cluster of CLUSTER blocks of BLOCK threads holding VALUES elements each, launched with the
// cluster's shape given at launch (cudaLaunchKernelEx), the compiler asked for registers that let
// MIN_BLOCKS blocks share an SM; the chapter's kernels (their shape compiled in) run with a plain
// launch. The fourth run adds persistent clusters that copy their next row's parts into shared
// memory by bulk copies while they finish the current one (prefetched); the fifth, clusters of 2
// (every SM takes them, where clusters of 4 and 8 run on 124 of 132: cluster-sms.cu); the
// sixth, clusters of 2 whose blocks hold half their part in shared memory (halves); the seventh,
// rows held in shared memory only, brought by bulk copies (in_shared); the eighth, the chapter's
// clusters prefetching into the L2 the row they will take a wave later (prefetching); the ninth,
// clusters of 4 blocks of 512 x 32; the tenth, a bound: f32 rows with bf16's cheaper exp.
// Every variant is checked against split rows first; times are the median of 15 batches of
// CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cluster-shape scripts/lab/softmax/cluster-shape.cu
//   ./cluster-shape          every variant
//   ./cluster-shape WORD     the variants whose name holds WORD, beside the first three
#include "../../../cuda/softmax.cu"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/softmax-pieces.cuh"
#include "../common/tuning.cuh"

// What cluster_rows does with a block's share: thread_max and thread_sum_exp (softmax-pieces.cuh),
// and the exchange of the blocks' (m, s) through `slots` (this block's pair, which the cluster's
// CLUSTER blocks read), merged in the ranks' order.
template <int CLUSTER>
__device__ __forceinline__ Online exchange(float* slots, float m, float s)
{
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
    return whole;
}

// Two exchanges, the first form of step 7: the cluster's max through one cluster barrier, then
// exp(x - max) and the cluster's sum through another.
template <class Op, int CLUSTER>
__device__ __forceinline__ float cluster_reduce(float* slot, float value)
{
    if (threadIdx.x == 0) *slot = value;
    cluster_arrive();
    cluster_wait();
    value = read_slot(slot, 0);
#pragma unroll
    for (int r = 1; r < CLUSTER; r++) value = Op::combine(value, read_slot(slot, r));
    return value;
}

template <class E, int CLUSTER, int BLOCK, int VALUES>
__device__ void cluster_rows_two_exchanges(const typename E::Word* __restrict__ in,
                                           typename E::Word* __restrict__ out, unsigned int rows, unsigned int cols)
{
    __shared__ float slots[2];
    unsigned int len;
    const size_t offset = cluster_part<CLUSTER>(cols, len);
    const typename E::Word* x_part = in + offset;
    typename E::Word* y_part = out + offset;
    RowShare<E, BLOCK, VALUES> share = {threadIdx.x, len,
                                        aligned16(x_part) && aligned16(y_part) && cols % E::PER_VEC == 0};
    share.load(x_part);
    const float block_m = group_reduce<MaxNaN, BLOCK>(thread_max<E, VALUES>(share));
    const float m = cluster_reduce<MaxNaN, CLUSTER>(&slots[0], block_m);
    const float block_s = group_reduce<Sum<float>, BLOCK>(thread_sum_exp<E, VALUES>(share, m));
    const float s = cluster_reduce<Sum<float>, CLUSTER>(&slots[1], block_s);
    cluster_arrive();
    share.store(y_part, m, 1.0f / s);
    cluster_wait();
}

// The fourth run's candidate: persistent clusters that copy the next row's part into shared
// memory while they sum, exchange and write this one. A cluster takes rows c, c + clusters, ...;
// thread 0 of each block starts the copy of its part of the next row with the TMA's 1-D bulk copy
// (cp.async.bulk, completion counted in bytes on an mbarrier) as soon as the block has moved the
// current part from shared memory into registers, so a block never waits at the exchange with
// nothing in flight. Parts must be whole 16-byte vectors (cols a multiple of CLUSTER x PER_VEC).
__device__ __forceinline__ unsigned int shared_address(const void* p)
{
    return (unsigned int)__cvta_generic_to_shared(p);
}
// One thread: an mbarrier whose phases each wait for COUNT arrivals (bulk_loads) and their bytes.
template <int COUNT>
__device__ __forceinline__ void init_arrivals(unsigned long long* arrived)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(arrived)), "n"(COUNT) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void bulk_load(void* to, const void* from, unsigned int bytes, unsigned long long* arrived)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(arrived)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(to)),
                 "l"(from), "r"(bytes), "r"(shared_address(arrived))
                 : "memory");
}
__device__ __forceinline__ void wait_phase(unsigned long long* arrived, unsigned int parity)
{
    unsigned int done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(shared_address(arrived)), "r"(parity)
                     : "memory");
    }
}


template <class E, int CLUSTER, int BLOCK, int VALUES>
__device__ void cluster_rows_prefetched(const typename E::Word* __restrict__ in, typename E::Word* __restrict__ out,
                                        unsigned int rows, unsigned int cols)
{
    typedef RowShare<E, BLOCK, VALUES> Share;
    __shared__ alignas(128) uint4 next[BLOCK * Share::VECTORS];
    __shared__ float slots[2][2]; // (m, s) of even and odd turns
    __shared__ alignas(8) unsigned long long arrived;
    const unsigned int rank = blockIdx.x % CLUSTER, clusters = gridDim.x / CLUSTER;
    const unsigned int part = cols / CLUSTER, bytes = part * sizeof(typename E::Word);
    unsigned int row = blockIdx.x / CLUSTER;
    if (threadIdx.x == 0) {
        init_arrivals<1>(&arrived);
    }
    __syncthreads();
    if (threadIdx.x == 0 && row < rows) {
        bulk_load(next, in + (size_t)row * cols + (size_t)rank * part, bytes, &arrived);
    }
    for (unsigned int turn = 0; row < rows; turn++, row += clusters) {
        Share share = {threadIdx.x, part, true};
        wait_phase(&arrived, turn & 1);
        const unsigned int pad = E::minus_infinity();
#pragma unroll
        for (int k = 0; k < Share::VECTORS; k++) {
            share.q[k] = share.held(k * E::PER_VEC) ? next[threadIdx.x + k * BLOCK] : make_uint4(pad, pad, pad, pad);
        }
        __syncthreads(); // every thread has its part: the buffer is free for the next row's
        if (threadIdx.x == 0 && row + clusters < rows) {
            // The threads' reads of the buffer (generic proxy) ordered before the bulk copy's
            // writes (async proxy). A run without this fence found one row of 8x256x16 off by
            // 1.05e-5 relative, about what one element from another row would do.
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            bulk_load(next, in + (size_t)(row + clusters) * cols + (size_t)rank * part, bytes, &arrived);
        }
        const float m = group_reduce<MaxNaN, BLOCK>(thread_max<E, VALUES>(share));
        const float shift = m == MaxNaN::identity() ? 0.0f : m;
        const float s = group_reduce<Sum<float>, BLOCK>(thread_sum_exp<E, VALUES>(share, shift));
        const Online whole = exchange<CLUSTER>(slots[turn & 1], m, s);
        share.store(out + (size_t)row * cols + (size_t)rank * part, shift,
                    OnlineOp::rescale(m, whole.m) * inverse_sum(whole));
    }
    cluster_arrive(); // the others may still read this block's slots
    cluster_wait();
}

template <class E, int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
    prefetched(const typename E::Word* in, typename E::Word* out, unsigned rows, unsigned cols)
{
    cluster_rows_prefetched<E, CLUSTER, BLOCK, VALUES>(in, out, rows, cols);
}

// The sixth run's candidate: clusters of 2 (which every SM takes), two blocks of BLOCK threads an
// SM, each block's half row held half in registers (VALUES elements a thread, as loaded) and half
// in shared memory, copied there by cp.async 16 bytes at a time (no registers on the way). Rows of
// exactly 4 x BLOCK x VALUES elements, 16-byte aligned.
template <class E, int BLOCK, int VALUES>
__device__ void cluster_halves(const typename E::Word* __restrict__ in, typename E::Word* __restrict__ out,
                               unsigned int rows, unsigned int cols)
{
    typedef RowShare<E, BLOCK, VALUES> Share;
    enum { VECTORS = Share::VECTORS };
    extern __shared__ uint4 held[]; // BLOCK x VECTORS vectors: the second half of the block's part
    __shared__ float slots[2];
    unsigned int len;
    const size_t offset = cluster_part<2>(cols, len);
    const uint4* x = reinterpret_cast<const uint4*>(in + offset) + BLOCK * VECTORS;
    uint4* y = reinterpret_cast<uint4*>(out + offset) + BLOCK * VECTORS;
    const unsigned int t = threadIdx.x;
#pragma unroll
    for (int k = 0; k < VECTORS; k++) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(&held[t + k * BLOCK])),
                     "l"(x + t + k * BLOCK)
                     : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    Share share = {t, (unsigned int)(BLOCK * VALUES), true};
    share.load(in + offset);
    asm volatile("cp.async.wait_all;" ::: "memory"); // this thread's own copies: no barrier needed
    float m = thread_max<E, VALUES>(share);
#pragma unroll
    for (int k = 0; k < VECTORS; k++) {
        const uint4 q = held[t + k * BLOCK];
#pragma unroll
        for (int j = 0; j < E::PER_VEC; j++) m = MaxNaN::combine(m, E::element(q, j));
    }
    m = group_reduce<MaxNaN, BLOCK>(m);
    const float shift = m == MaxNaN::identity() ? 0.0f : m;
    float s = thread_sum_exp<E, VALUES>(share, shift);
#pragma unroll
    for (int k = 0; k < VECTORS; k++) {
        uint4 q = held[t + k * BLOCK];
#pragma unroll
        for (int j = 0; j < E::PER_VEC; j++) {
            const float e = E::exp(E::element(q, j) - shift);
            E::keep(q, j, e);
            s += e;
        }
        if (E::KEEPS_EXP) held[t + k * BLOCK] = q;
    }
    s = group_reduce<Sum<float>, BLOCK>(s);
    const Online whole = exchange<2>(slots, m, s);
    cluster_arrive();
    const float scale = OnlineOp::rescale(m, whole.m) * inverse_sum(whole);
    share.store(out + offset, shift, scale);
#pragma unroll
    for (int k = 0; k < VECTORS; k++) {
        const uint4 q = held[t + k * BLOCK];
        float v[E::PER_VEC];
#pragma unroll
        for (int j = 0; j < E::PER_VEC; j++) {
            v[j] = (E::KEEPS_EXP ? E::element(q, j) : E::exp(E::element(q, j) - shift)) * scale;
        }
        y[t + k * BLOCK] = E::pack(v);
    }
    cluster_wait();
}

template <class E, int BLOCK, int VALUES>
__global__ void __launch_bounds__(BLOCK, 2)
    halves(const typename E::Word* in, typename E::Word* out, unsigned rows, unsigned cols)
{
    cluster_halves<E, BLOCK, VALUES>(in, out, rows, cols);
}


// The seventh run's candidate: rows held in shared memory instead of registers. Each block of a
// cluster of CLUSTER holds its part of one row in dynamic shared memory, brought there by PIECES
// 1-D bulk copies (cp.async.bulk) that thread 0 starts at once, so a block needs few registers and
// an SM holds as many blocks as its shared memory has parts for (six parts of 32 KiB, where the
// registers hold four blocks of 256 x 32 f32): more rows on the chip at once, more of them with
// bytes in flight while others wait at their exchange. The threads then read the part from shared
// memory three times (the max; e = exp(x - max), kept in place for f32, and its sum; the write),
// vector t, t + BLOCK, ... for thread t. Parts must be whole 16-byte vectors (cols a multiple of
// CLUSTER x PER_VEC x PIECES) and the row 16-byte aligned.
template <class E, int CLUSTER, int BLOCK, int PIECES>
__device__ void cluster_rows_in_shared(const typename E::Word* __restrict__ in, typename E::Word* __restrict__ out,
                                       unsigned int rows, unsigned int cols)
{
    extern __shared__ uint4 held[]; // this block's part, as loaded
    __shared__ float slots[2];
    __shared__ alignas(8) unsigned long long arrived;
    const unsigned int rank = blockIdx.x % CLUSTER;
    const unsigned int part = cols / CLUSTER, vectors = part / E::PER_VEC;
    const size_t offset = (size_t)(blockIdx.x / CLUSTER) * cols + (size_t)rank * part;
    if (threadIdx.x == 0) {
        const unsigned int piece = part * sizeof(typename E::Word) / PIECES;
        init_arrivals<PIECES>(&arrived);
        const char* from = reinterpret_cast<const char*>(in + offset);
#pragma unroll
        for (int p = 0; p < PIECES; p++) {
            bulk_load(reinterpret_cast<char*>(held) + p * piece, from + (size_t)p * piece, piece, &arrived);
        }
    }
    __syncthreads(); // the barrier is set up before anyone waits on it
    wait_phase(&arrived, 0);
    float m = MaxNaN::identity();
#pragma unroll 4
    for (unsigned int v = threadIdx.x; v < vectors; v += BLOCK) {
        const uint4 q = held[v];
#pragma unroll
        for (int j = 0; j < E::PER_VEC; j++) m = MaxNaN::combine(m, E::element(q, j));
    }
    m = group_reduce<MaxNaN, BLOCK>(m);
    const float shift = m == MaxNaN::identity() ? 0.0f : m;
    float s = 0.0f;
#pragma unroll 4
    for (unsigned int v = threadIdx.x; v < vectors; v += BLOCK) {
        uint4 q = held[v];
#pragma unroll
        for (int j = 0; j < E::PER_VEC; j++) {
            const float e = E::exp(E::element(q, j) - shift);
            E::keep(q, j, e);
            s += e;
        }
        if (E::KEEPS_EXP) held[v] = q;
    }
    s = group_reduce<Sum<float>, BLOCK>(s);
    const Online whole = exchange<CLUSTER>(slots, m, s);
    cluster_arrive(); // this block is done reading the others' slots
    const float scale = OnlineOp::rescale(m, whole.m) * inverse_sum(whole);
    uint4* y = reinterpret_cast<uint4*>(out + offset);
#pragma unroll 4
    for (unsigned int v = threadIdx.x; v < vectors; v += BLOCK) {
        const uint4 q = held[v];
        float f[E::PER_VEC];
#pragma unroll
        for (int j = 0; j < E::PER_VEC; j++) {
            f[j] = (E::KEEPS_EXP ? E::element(q, j) : E::exp(E::element(q, j) - shift)) * scale;
        }
        y[v] = E::pack(f);
    }
    cluster_wait();
}

template <class E, int CLUSTER, int BLOCK, int PIECES, int MIN_BLOCKS>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
    in_shared(const typename E::Word* in, typename E::Word* out, unsigned rows, unsigned cols)
{
    cluster_rows_in_shared<E, CLUSTER, BLOCK, PIECES>(in, out, rows, cols);
}

// The eighth run's candidate: the chapter's cluster_rows, each thread first asking the L2 for its
// part of the row `ahead` rows on (prefetch.global.L2, the 16-byte vectors it will load there: no
// register or shared memory held), so that the cluster that takes that row, about one wave of
// clusters later when `ahead` is the number the GPU holds at once, finds it in the L2. Whole
// 16-byte vectors only (the chapter's vector path).
template <class E, int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
    prefetching(const typename E::Word* in, typename E::Word* out, unsigned rows, unsigned cols, unsigned ahead)
{
    if (blockIdx.x / CLUSTER + ahead < rows) {
        unsigned int len;
        const size_t offset = cluster_part<CLUSTER>(cols, len) + (size_t)ahead * cols;
        const uint4* x = reinterpret_cast<const uint4*>(in + offset);
#pragma unroll
        for (int k = 0; k < VALUES / E::PER_VEC; k++) {
            const unsigned int v = threadIdx.x + k * BLOCK;
            if (v < len / E::PER_VEC) asm volatile("prefetch.global.L2 [%0];" ::"l"(x + v));
        }
    }
    cluster_rows<E, CLUSTER, BLOCK, VALUES>(in, out, rows, cols);
}

template <class E, int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS, bool TWO_EXCHANGES = false>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
    variant(const typename E::Word* in, typename E::Word* out, unsigned rows, unsigned cols)
{
    if (TWO_EXCHANGES) cluster_rows_two_exchanges<E, CLUSTER, BLOCK, VALUES>(in, out, rows, cols);
    else cluster_rows<E, CLUSTER, BLOCK, VALUES>(in, out, rows, cols);
}

struct Shape {
    unsigned rows, cols;
};

// A way to take the softmax of a shape: launches on (in, out), or false where it does not apply.
using Run = std::function<bool(const void*, void*, Shape)>;

struct Variant {
    std::string name;
    Run f32, bf16;
    int regs = 0, blocks_per_sm = 0;
    // The registers a thread of `kernel` takes and its blocks of `block` threads an SM holds.
    template <class Kernel>
    void occupancy_of(Kernel kernel, int block, size_t smem = 0)
    {
        cudaFuncAttributes a;
        CHECK(cudaFuncGetAttributes(&a, kernel));
        regs = a.numRegs;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, block, smem));
    }
};

template <class E, int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS, bool TWO_EXCHANGES>
static Run cluster_run()
{
    return [](const void* in, void* out, Shape s) {
        // Shapes the cluster holds, down to a quarter full.
        if (s.cols > (unsigned)(CLUSTER * BLOCK * VALUES) || 4 * s.cols <= (unsigned)(CLUSTER * BLOCK * VALUES))
            return false;
        launch_on_clusters(variant<E, CLUSTER, BLOCK, VALUES, MIN_BLOCKS, TWO_EXCHANGES>, s.rows * CLUSTER, BLOCK,
                           CLUSTER, (const typename E::Word*)in, (typename E::Word*)out, s.rows, s.cols);
        return true;
    };
}

// A bound, not a kernel: f32 rows with bf16's exp (sfu_exp: three instructions where f32's
// softmax_exp takes about fifteen, and less accurate), to see what f32's exp costs in time.
struct F32SfuExp : F32 {
    __device__ static float exp(float x) { return sfu_exp(x); }
};

template <int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS>
static Variant sfu_exp_variant(std::string name)
{
    Variant v{name, cluster_run<F32SfuExp, CLUSTER, BLOCK, VALUES, MIN_BLOCKS, false>(), {}};
    v.bf16 = [](const void*, void*, Shape) { return false; };
    v.occupancy_of(variant<F32SfuExp, CLUSTER, BLOCK, VALUES, MIN_BLOCKS, false>, BLOCK);
    return v;
}

template <int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS, bool TWO_EXCHANGES = false>
static Variant cluster_variant(std::string name)
{
    Variant v{name, cluster_run<F32, CLUSTER, BLOCK, VALUES, MIN_BLOCKS, TWO_EXCHANGES>(),
              cluster_run<BF16, CLUSTER, BLOCK, VALUES, MIN_BLOCKS, TWO_EXCHANGES>()};
    v.occupancy_of(variant<F32, CLUSTER, BLOCK, VALUES, MIN_BLOCKS, TWO_EXCHANGES>, BLOCK);
    return v;
}

// Persistent clusters, as many as the GPU holds at once (cudaOccupancyMaxActiveClusters), at most
// one a row; VALUES elements a thread for f32 rows, VALUES_BF16 for bf16 (0: not timed).
template <class E, int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS>
static Run prefetched_run()
{
    return [](const void* in, void* out, Shape s) {
        const unsigned most = CLUSTER * BLOCK * VALUES;
        if (VALUES == 0 || s.cols > most || 2 * s.cols <= most || s.cols % (CLUSTER * E::PER_VEC) != 0) return false;
        auto kernel = prefetched<E, CLUSTER, BLOCK, VALUES == 0 ? E::PER_VEC : VALUES, MIN_BLOCKS>;
        static int clusters = 0;
        if (clusters == 0) {
            ClusterLaunch launch(CLUSTER * 1024, BLOCK, CLUSTER);
            CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config));
            std::printf("(%d clusters of %dx%d at once)\n", clusters, CLUSTER, BLOCK);
        }
        launch_on_clusters(kernel, std::min<unsigned>(s.rows, clusters) * CLUSTER, BLOCK, CLUSTER,
                           (const typename E::Word*)in, (typename E::Word*)out, s.rows, s.cols);
        return true;
    };
}

template <int CLUSTER, int BLOCK, int VALUES, int VALUES_BF16, int MIN_BLOCKS>
static Variant prefetched_variant(std::string name)
{
    Variant v{name, prefetched_run<F32, CLUSTER, BLOCK, VALUES, MIN_BLOCKS>(),
              prefetched_run<BF16, CLUSTER, BLOCK, VALUES_BF16, MIN_BLOCKS>()};
    v.occupancy_of(prefetched<F32, CLUSTER, BLOCK, VALUES == 0 ? 4 : VALUES, MIN_BLOCKS>, BLOCK);
    return v;
}

// The dynamic shared memory of halves<E, BLOCK, VALUES> (the second half of a block's part), asked
// for once (past the default 48 KiB).
template <class E, int BLOCK, int VALUES>
static int halves_shared_bytes()
{
    static const int smem = [] {
        const int bytes = BLOCK * (VALUES / E::PER_VEC) * 16;
        CHECK(cudaFuncSetAttribute(halves<E, BLOCK, VALUES>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
        return bytes;
    }();
    return smem;
}

template <class E, int BLOCK, int VALUES>
static Run halves_run()
{
    return [](const void* in, void* out, Shape s) {
        if (VALUES == 0 || s.cols != 4u * BLOCK * VALUES) return false;
        constexpr int values = VALUES == 0 ? E::PER_VEC : VALUES;
        auto kernel = halves<E, BLOCK, values>;
        const int smem = halves_shared_bytes<E, BLOCK, values>();
        ClusterLaunch launch(s.rows * 2, BLOCK, 2, smem);
        CHECK(cudaLaunchKernelEx(&launch.config, kernel, (const typename E::Word*)in, (typename E::Word*)out, s.rows,
                                 s.cols));
        return true;
    };
}

template <int BLOCK, int VALUES, int VALUES_BF16>
static Variant halves_variant(std::string name)
{
    Variant v{name, halves_run<F32, BLOCK, VALUES>(), halves_run<BF16, BLOCK, VALUES_BF16>()};
    constexpr int values = VALUES == 0 ? 4 : VALUES;
    v.occupancy_of(halves<F32, BLOCK, values>, BLOCK, halves_shared_bytes<F32, BLOCK, values>());
    return v;
}

// Rows in shared memory (in_shared, above): a part of cols / CLUSTER elements a block, at most 200
// KiB, dynamic shared memory asked for up to that once per kernel. Where the cluster is larger than
// 8 (the portable most), the kernel is allowed non-portable sizes.
template <class E, int CLUSTER, int BLOCK, int PIECES, int MIN_BLOCKS>
static bool in_shared_ready()
{
    static const bool ready = [] {
        auto kernel = in_shared<E, CLUSTER, BLOCK, PIECES, MIN_BLOCKS>;
        CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
        CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   (int)cudaSharedmemCarveoutMaxShared));
        if (CLUSTER > 8) CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        return true;
    }();
    return ready;
}

template <class E, int CLUSTER, int BLOCK, int PIECES, int MIN_BLOCKS>
static Run in_shared_run()
{
    return [](const void* in, void* out, Shape s) {
        const size_t bytes = (size_t)s.cols / CLUSTER * sizeof(typename E::Word);
        if (s.cols % (CLUSTER * E::PER_VEC * PIECES) != 0 || bytes > 200 * 1024 || bytes < 8 * 1024) return false;
        in_shared_ready<E, CLUSTER, BLOCK, PIECES, MIN_BLOCKS>();
        ClusterLaunch launch(s.rows * CLUSTER, BLOCK, CLUSTER, bytes);
        CHECK(cudaLaunchKernelEx(&launch.config, in_shared<E, CLUSTER, BLOCK, PIECES, MIN_BLOCKS>,
                                 (const typename E::Word*)in, (typename E::Word*)out, s.rows, s.cols));
        return true;
    };
}

// Occupancy shown for f32 rows of 2^16 (a part of 2^16 / CLUSTER elements a block).
template <int CLUSTER, int BLOCK, int PIECES, int MIN_BLOCKS>
static Variant in_shared_variant(std::string name)
{
    Variant v{name, in_shared_run<F32, CLUSTER, BLOCK, PIECES, MIN_BLOCKS>(),
              in_shared_run<BF16, CLUSTER, BLOCK, PIECES, MIN_BLOCKS>()};
    in_shared_ready<F32, CLUSTER, BLOCK, PIECES, MIN_BLOCKS>();
    v.occupancy_of(in_shared<F32, CLUSTER, BLOCK, PIECES, MIN_BLOCKS>, BLOCK, (65536 / CLUSTER) * 4);
    return v;
}

// The prefetching clusters (above), `ahead` rows on: AHEAD_PER_8 eighths of the clusters the GPU
// holds at once (cudaOccupancyMaxActiveClusters). Rows of whole 16-byte vectors only.
template <class E, int CLUSTER, int BLOCK, int VALUES, int MIN_BLOCKS, int AHEAD_PER_8>
static Run prefetching_run()
{
    return [](const void* in, void* out, Shape s) {
        if (VALUES == 0 || s.cols > (unsigned)(CLUSTER * BLOCK * VALUES) ||
            4 * s.cols <= (unsigned)(CLUSTER * BLOCK * VALUES) || s.cols % (CLUSTER * 8) != 0)
            return false;
        constexpr int values = VALUES == 0 ? E::PER_VEC : VALUES;
        auto kernel = prefetching<E, CLUSTER, BLOCK, values, MIN_BLOCKS>;
        static unsigned ahead = 0;
        if (ahead == 0) {
            int clusters = 0;
            ClusterLaunch launch(CLUSTER * 1024, BLOCK, CLUSTER);
            CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config));
            ahead = std::max(1, clusters * AHEAD_PER_8 / 8);
            std::printf("(%d clusters of %dx%d at once: %u rows ahead)\n", clusters, CLUSTER, BLOCK, ahead);
        }
        launch_on_clusters(kernel, s.rows * CLUSTER, BLOCK, CLUSTER, (const typename E::Word*)in,
                           (typename E::Word*)out, s.rows, s.cols, ahead);
        return true;
    };
}

template <int CLUSTER, int BLOCK, int VALUES, int VALUES_BF16, int MIN_BLOCKS, int AHEAD_PER_8>
static Variant prefetching_variant(std::string name)
{
    Variant v{name, prefetching_run<F32, CLUSTER, BLOCK, VALUES, MIN_BLOCKS, AHEAD_PER_8>(),
              prefetching_run<BF16, CLUSTER, BLOCK, VALUES_BF16, MIN_BLOCKS, AHEAD_PER_8>()};
    v.occupancy_of(prefetching<F32, CLUSTER, BLOCK, VALUES == 0 ? 4 : VALUES, MIN_BLOCKS>, BLOCK);
    return v;
}

// The chapter's kernels with their cluster compiled in (__cluster_dims__): a plain launch, the
// shape softmax::cluster_shape picks.
static Variant chapter_variant()
{
    Variant v{"chapter (cluster_shape)", {}, {}};
    v.f32 = [](const void* in, void* out, Shape s) {
        if (s.cols <= 16384 || s.cols > 131072) return false;
        if (s.cols <= 32768) softmax_cluster_4x256x32<<<s.rows * 4, 256>>>((const float*)in, (float*)out, s.rows, s.cols);
        else if (s.cols <= 65536)
            softmax_cluster_8x256x32<<<s.rows * 8, 256>>>((const float*)in, (float*)out, s.rows, s.cols);
        else softmax_cluster_8x512x32<<<s.rows * 8, 512>>>((const float*)in, (float*)out, s.rows, s.cols);
        CHECK(cudaGetLastError());
        return true;
    };
    v.bf16 = [](const void* in, void* out, Shape s) {
        typedef const unsigned short* In;
        typedef unsigned short* Out;
        if (s.cols <= 16384 || s.cols > 131072) return false;
        // bf16 rows hold 64 elements a thread (softmax::cluster_values): rows of up to 32,768 on
        // step 6's one block of 512 x 64, then 4 or 8 blocks of 256 x 64, then 8 of 512 x 64.
        if (s.cols <= 32768) softmax_on_chip_512x64_bf16<<<s.rows, 512>>>((In)in, (Out)out, s.rows, s.cols);
        else if (s.cols <= 65536) softmax_cluster_4x256x64_bf16<<<s.rows * 4, 256>>>((In)in, (Out)out, s.rows, s.cols);
        else if (s.cols <= 131072) softmax_cluster_8x256x64_bf16<<<s.rows * 8, 256>>>((In)in, (Out)out, s.rows, s.cols);
        else softmax_cluster_8x512x64_bf16<<<s.rows * 8, 512>>>((In)in, (Out)out, s.rows, s.cols);
        CHECK(cudaGetLastError());
        return true;
    };
    v.occupancy_of(softmax_cluster_8x256x32, 256);
    return v;
}

// Split rows as the launcher plans them on 132 SMs (softmax::split): 2 waves of 256-thread blocks.
static float* partial = nullptr;
static void split_plan(Shape s, unsigned& parts, unsigned& chunk)
{
    const unsigned wanted = 2 * 132 * 8, most = std::max(1u, (s.cols + 8191) / 8192);
    parts = std::min(std::max(1u, (wanted + s.rows - 1) / s.rows), most);
    chunk = ((s.cols + parts - 1) / parts + 7) / 8 * 8;
    parts = (s.cols + chunk - 1) / chunk;
}

static Variant split_variant()
{
    Variant v{"split rows (step 5)", {}, {}};
    v.f32 = [](const void* in, void* out, Shape s) {
        unsigned parts, chunk;
        split_plan(s, parts, chunk);
        softmax_split_partial<<<s.rows * parts, 256>>>((const float*)in, partial, s.rows, s.cols, parts, chunk);
        softmax_split_normalise<<<s.rows * parts, 256>>>((const float*)in, partial, (float*)out, s.rows, s.cols, parts,
                                                         chunk);
        return true;
    };
    v.bf16 = [](const void* in, void* out, Shape s) {
        unsigned parts, chunk;
        split_plan(s, parts, chunk);
        softmax_split_partial_bf16<<<s.rows * parts, 256>>>((const unsigned short*)in, partial, s.rows, s.cols, parts,
                                                            chunk);
        softmax_split_normalise_bf16<<<s.rows * parts, 256>>>((const unsigned short*)in, partial,
                                                              (unsigned short*)out, s.rows, s.cols, parts, chunk);
        return true;
    };
    return v;
}

static Variant block_512x64_variant()
{
    Variant v{"one block 512x64 (step 6)", {}, {}};
    v.f32 = [](const void* in, void* out, Shape s) {
        if (s.cols > 32768) return false;
        softmax_on_chip_512x64<<<s.rows, 512>>>((const float*)in, (float*)out, s.rows, s.cols);
        return true;
    };
    v.bf16 = [](const void* in, void* out, Shape s) {
        if (s.cols > 32768) return false;
        softmax_on_chip_512x64_bf16<<<s.rows, 512>>>((const unsigned short*)in, (unsigned short*)out, s.rows, s.cols);
        return true;
    };
    v.occupancy_of(softmax_on_chip_512x64, 512);
    return v;
}

// `softmax-cluster-tuning WORD` times only the variants whose name holds WORD, beside split rows
// (the check's reference), step 6's block and the chapter's kernels.
int main(int argc, char** argv)
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const size_t n = 1ull << 26; // every shape below holds 2^26 elements
    std::vector<float> host(n);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : host) x = u(rng);
    std::vector<unsigned short> host_bf16(n);
    for (size_t i = 0; i < n; ++i) host_bf16[i] = host_to_bf16(host[i]);
    float *in, *out, *expected;
    unsigned short *in_bf16, *out_bf16, *expected_bf16;
    CHECK(cudaMalloc(&in, n * 4));
    CHECK(cudaMalloc(&out, n * 4));
    CHECK(cudaMalloc(&expected, n * 4));
    CHECK(cudaMalloc(&in_bf16, n * 2));
    CHECK(cudaMalloc(&out_bf16, n * 2));
    CHECK(cudaMalloc(&expected_bf16, n * 2));
    CHECK(cudaMalloc(&partial, 2 * 4 * 1024 * 1024));
    CHECK(cudaMemcpy(in, host.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_bf16, host_bf16.data(), n * 2, cudaMemcpyHostToDevice));

    std::vector<Variant> variants;
    variants.push_back(split_variant());
    variants.push_back(block_512x64_variant());
    variants.push_back(chapter_variant());
    // The first run timed clusters of 2, 4 and 8 blocks of 512 x 32 at 1 block/SM, 2x512x64, 4x and
    // 8x256x32 at 2 and 3 blocks/SM, 4x and 8x512x16, 4x and 8x1024x16, 2x1024x32 and 8x128x64,
    // every one with two exchanges (the max, then the sum); the second run the shapes below with
    // one exchange and with two. (Their outputs: softmax-cluster-tuning.txt.) This, the third run,
    // times the chapter's kernels beside the best of them.
    variants.push_back(cluster_variant<2, 512, 32, 2>("2x512x32 2/SM one exchange"));
    variants.push_back(cluster_variant<4, 256, 32, 4>("4x256x32 4/SM one exchange"));
    variants.push_back(cluster_variant<8, 256, 32, 4>("8x256x32 4/SM one exchange"));
    variants.push_back(cluster_variant<8, 256, 32, 4, true>("8x256x32 4/SM two exchanges"));
    variants.push_back(cluster_variant<8, 512, 32, 2>("8x512x32 2/SM one exchange"));
    // The fourth run: persistent clusters that copy the next row's part into shared memory while
    // they finish this one (prefetched, above).
    variants.push_back(prefetched_variant<8, 256, 32, 32, 4>("8x256x32 prefetched 4/SM"));
    variants.push_back(prefetched_variant<4, 256, 0, 64, 4>("4x256x64 prefetched 4/SM"));
    variants.push_back(prefetched_variant<8, 256, 16, 32, 4>("8x256x16 prefetched 4/SM"));
    variants.push_back(prefetched_variant<4, 256, 32, 32, 4>("4x256x32 prefetched 4/SM"));
    variants.push_back(prefetched_variant<8, 128, 64, 64, 4>("8x128x64 prefetched 4/SM"));
    // The fifth run: clusters of 2, which (scripts/lab/softmax/cluster-sms.cu) every SM of an H200 takes,
    // where clusters of 4 and 8 run on 124 of its 132.
    variants.push_back(cluster_variant<2, 1024, 32, 1>("2x1024x32 1/SM one exchange"));
    variants.push_back(cluster_variant<2, 512, 64, 1>("2x512x64 1/SM one exchange"));
    variants.push_back(cluster_variant<2, 512, 64, 2>("2x512x64 2/SM one exchange"));
    // The sixth run: clusters of 2 at two blocks an SM, each block's half row half in registers and
    // half in shared memory (halves, above).
    variants.push_back(halves_variant<512, 32, 32>("2x512x(32+32) halves 2/SM"));
    variants.push_back(halves_variant<256, 32, 64>("2x256x(v+v) halves"));
    // The seventh run: rows held in shared memory, brought by bulk copies (in_shared, above).
    variants.push_back(in_shared_variant<8, 128, 1, 6>("8x128 in shared, 1 copy"));
    variants.push_back(in_shared_variant<8, 256, 1, 6>("8x256 in shared, 1 copy"));
    variants.push_back(in_shared_variant<8, 256, 4, 6>("8x256 in shared, 4 copies"));
    variants.push_back(in_shared_variant<4, 256, 1, 3>("4x256 in shared, 1 copy"));
    variants.push_back(in_shared_variant<4, 512, 4, 3>("4x512 in shared, 4 copies"));
    variants.push_back(in_shared_variant<16, 128, 1, 12>("16x128 in shared, 1 copy"));
    variants.push_back(in_shared_variant<2, 512, 4, 1>("2x512 in shared, 4 copies"));
    // The eighth run: the chapter's clusters prefetching their part of a row some rows on into the
    // L2 (prefetching, above).
    variants.push_back(prefetching_variant<8, 256, 32, 64, 4, 8>("8x256 L2 prefetch, 1 wave on"));
    variants.push_back(prefetching_variant<8, 256, 32, 64, 4, 4>("8x256 L2 prefetch, 1/2 wave"));
    variants.push_back(prefetching_variant<8, 256, 32, 64, 4, 16>("8x256 L2 prefetch, 2 waves"));
    variants.push_back(prefetching_variant<4, 256, 32, 64, 4, 8>("4x256 L2 prefetch, 1 wave on"));
    // The ninth run: clusters of 4 blocks of 512 x 32 at two blocks an SM (64 KiB of a row a block,
    // as step 6's one block holds a row of 2^14 f32).
    variants.push_back(cluster_variant<4, 512, 32, 2>("4x512x32 2/SM one exchange"));
    // The tenth run: the chapter's 8 x 256 x 32 for f32 with bf16's cheaper exp: a bound (its
    // results are checked with the others and may miss f32's tolerance).
    variants.push_back(sfu_exp_variant<8, 256, 32, 4>("8x256x32 sfu exp (bound)"));

    if (argc > 1) {
        std::vector<Variant> chosen(variants.begin(), variants.begin() + 3);
        for (size_t i = 3; i < variants.size(); ++i) {
            if (variants[i].name.find(argv[1]) != std::string::npos) chosen.push_back(variants[i]);
        }
        variants = chosen;
    }

    const Shape shapes[] = {{768, 1u << 16}, {1536, 1u << 15}, {384, 1u << 17}, {3072, 1u << 14}};
    // Check every variant against split rows, f32 within 1e-5 relative, bf16 within one bf16 ulp.
    std::vector<float> got(n), want(n);
    std::vector<unsigned short> got_bf16(n), want_bf16(n);
    for (const Shape& s : shapes) {
        const size_t m = (size_t)s.rows * s.cols;
        variants[0].f32(in, expected, s);
        variants[0].bf16(in_bf16, expected_bf16, s);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(want.data(), expected, m * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(want_bf16.data(), expected_bf16, m * 2, cudaMemcpyDeviceToHost));
        for (auto& v : variants) {
            CHECK(cudaMemset(out, 0xff, m * 4));
            CHECK(cudaMemset(out_bf16, 0xff, m * 2));
            if (v.f32(in, out, s)) {
                CHECK(cudaDeviceSynchronize());
                CHECK(cudaMemcpy(got.data(), out, m * 4, cudaMemcpyDeviceToHost));
                for (size_t i = 0; i < m; ++i) {
                    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * want[i])) {
                        std::printf("WRONG %s f32 %ux%u at %zu: %g, expected %g\n", v.name.c_str(), s.rows, s.cols, i,
                                    got[i], want[i]);
                        break;
                    }
                }
            }
            if (v.bf16(in_bf16, out_bf16, s)) {
                CHECK(cudaDeviceSynchronize());
                CHECK(cudaMemcpy(got_bf16.data(), out_bf16, m * 2, cudaMemcpyDeviceToHost));
                for (size_t i = 0; i < m; ++i) {
                    const float g = host_bf16_value(got_bf16[i]), w = host_bf16_value(want_bf16[i]);
                    if (!(std::fabs(g - w) <= w * (1.0f / 128))) {
                        std::printf("WRONG %s bf16 %ux%u at %zu: %g, expected %g\n", v.name.c_str(), s.rows, s.cols,
                                    i, g, w);
                        break;
                    }
                }
            }
        }
    }

    std::printf("ms (%% of the copy of the same bytes)\n%-28s %4s %3s", "variant", "regs", "occ");
    for (const Shape& s : shapes) std::printf(" | f32 %4ux2^%-2d    bf16", s.rows, (int)std::log2((double)s.cols));
    std::printf("\n%-28s %4s %3s", "copy (cudaMemcpy)", "", "");
    std::vector<double> copy_f32, copy_bf16;
    for (const Shape& s : shapes) {
        const size_t m = (size_t)s.rows * s.cols;
        copy_f32.push_back(median_ms([&] { CHECK(cudaMemcpyAsync(out, in, m * 4, cudaMemcpyDeviceToDevice)); }));
        copy_bf16.push_back(
            median_ms([&] { CHECK(cudaMemcpyAsync(out_bf16, in_bf16, m * 2, cudaMemcpyDeviceToDevice)); }));
        std::printf(" | %7.4f        %7.4f       ", copy_f32.back(), copy_bf16.back());
    }
    std::printf("\n");
    for (auto& v : variants) {
        std::printf("%-28s %4d %3d", v.name.c_str(), v.regs, v.blocks_per_sm);
        for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i) {
            const Shape& s = shapes[i];
            if (v.f32(in, out, s)) {
                const double ms = median_ms([&] { v.f32(in, out, s); });
                std::printf(" | %7.4f %5.1f%%", ms, 100.0 * copy_f32[i] / ms);
            } else {
                std::printf(" | %15s", "-");
            }
            if (v.bf16(in_bf16, out_bf16, s)) {
                const double ms = median_ms([&] { v.bf16(in_bf16, out_bf16, s); });
                std::printf(" %7.4f %5.1f%%", ms, 100.0 * copy_bf16[i] / ms);
            } else {
                std::printf(" %14s", "-");
            }
        }
        std::printf("\n");
        std::fflush(stdout);
    }
    return 0;
}
