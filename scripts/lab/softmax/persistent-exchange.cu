// Persistent exchange: softmax's long rows split over blocks as step 7 splits them, with no thread
// block cluster, so that every SM takes blocks. Timed beside the chapter's kernel and the device
// copy of the same bytes.
//
// Why: step 7 (cuda/softmax.cu, cluster_rows) gives each row to a cluster of 8 blocks (4 for bf16),
// each block holding its part of the row in registers and trading its (max, sum) with the others
// through distributed shared memory. On an H200 that reaches 84.2 to 84.8% of the copy at
// 768 x 2^16 f32 (92.7% on an H100), and clusters of 4 or 8 blocks run on only 124 of the H200's
// 132 SMs (cluster-sms.cu, cluster-sms.txt). cluster-shape.cu tried clusters of 2,
// which every SM takes, and persistent clusters that prefetch their next row: both slower on the
// H200. Here the cluster goes away altogether and the exchange goes through L2 instead:
//
//   - A persistent grid: as many blocks of 256 threads as the GPU holds at once (blocks an SM from
//     cudaOccupancyMaxActiveBlocksPerMultiprocessor, times the SMs). A row is cut into
//     PARTS = cols / (256 x VALUES) parts, each the share of one block, held as step 7's block
//     holds it (RowShare, 16-byte loads; 32 f32 or 64 bf16 a thread, or half that). The work items
//     are w = row x PARTS + part, handed out in increasing order by an atomic counter (thread 0
//     draws, the block learns the ticket through shared memory).
//   - Per item, the block's max m and sum s of exp(x - m) exactly as cluster_rows computes them;
//     thread 0 then publishes (m, s) in a global slot for (row, part), and PARTS lanes of warp 0
//     each wait for one part's slot, after which every lane merges the PARTS pairs in part order
//     with OnlineOp::combine, from OnlineOp::identity(), as cluster_rows merges its ranks: every
//     block of the row gets the same (M, S) to the bit, and where the parts are the chapter's own
//     (f32 VALUES 32 at 2^16, bf16 VALUES 64 at 2^16) the output should be the chapter's, bit for
//     bit. The write is cluster_rows' own: y = e x rescale(m, M) x inverse_sum(M, S).
//   - Slots need no clearing: each of a slot's two 64-bit words holds the launch's epoch (a number
//     the host raises by one every launch, from 1; the buffer starts zeroed) in its top 32 bits
//     and m or s in its low 32, stored and loaded as one access (st.relaxed.gpu / ld.relaxed.gpu,
//     look_back.cuh's store_status and load_status). A reader waits until both words carry this
//     launch's epoch; a word is single-copy atomic, so a matching epoch comes with its own value
//     and nothing else needs ordering (no fence, no release/acquire pair: the value is the only
//     thing published).
//   - The counter sets itself back to 0: each block draws one ticket more than the items it works
//     (its last draw is its first ticket >= items), so a launch draws exactly items + grid tickets,
//     and the block that draws the last one, items + grid - 1, resets the counter for the next
//     launch in the stream (look_back.cuh's draw_tile, as the scans use it; inside the loop split
//     in two, the atomic after the merge and the test for the last ticket after the write, so
//     that thread 0 does not wait for the atomic's answer before the block's barrier). No draw
//     can follow the reset: the last ticket is the last draw. One counter serves every variant
//     and shape, since each launch leaves it at 0.
//
// Why it cannot deadlock, given at least PARTS blocks resident at once (the grid is exactly the
// blocks that fit; PARTS is at most 32):
//   1. A block waits in one place only: for the other parts of the row of its current item. From
//      drawing an item to publishing it, it needs nothing from any other block (the write of its
//      previous item, the loads, the reductions). So every drawn item gets published.
//   2. Hence a block waiting on row r gets through once every part of row r has been drawn.
//   3. Suppose the launch stalls. Let q be the counter's value, the lowest ticket not drawn (tickets
//      go out in increasing order). q < items: no block has drawn a ticket >= items, so none has
//      left. By 2, a block stuck waiting holds a part of a row with a part not drawn; rows before
//      q's row r have every part drawn and rows after it have none drawn (all their tickets are
//      above q), so every stuck block holds a drawn part of row r, a different one each: at most
//      PARTS - 1 of them, since q is one of row r's parts. With PARTS blocks resident, one of them
//      is not stuck; it comes round to its next draw and takes q. So no stall: the counter passes
//      every ticket, and every wait ends.
// This is why the next ticket is drawn only after the merge (its round trip then overlaps the
// write): a block that drew its next item before its own wait was over could hold the very part
// it waits for. (A plain launch of exactly as many blocks as fit puts all of them on an otherwise
// idle GPU; CUDA promises co-residency only for cooperative launches, but this needs PARTS <= 32.)
//
// Run once, on an H200 (2026-11-27; book/src/data/nvidia-h200/softmax-persistent-tuning.txt):
// every check passed (bit for bit where the parts are the chapter's), and every variant was slower
// than the chapter's clusters: f32 768 x 2^16 at 79.8% of the copy (81.5% sleeping between reads)
// against 83.7%, bf16 at 78.2% against 84.7%; only bf16 4096 x 2^14 gained (93.0% against the
// on-chip kernel's 90.6%), a shape the chapter already takes past 90%. Using all 132 SMs did not
// make up for an exchange through L2. The chapter keeps its clusters.
//
// What is timed: f32 768 x 2^16 and 4096 x 2^14 (PARTS 8 and 2 at 32 a thread), bf16 768 x 2^16
// and 4096 x 2^14 (PARTS 4 and 1 at 64 a thread); 32 f32 / 64 bf16 a thread against 16 / 32 (twice
// the parts and the items); the compiler asked for registers for 2, 3 and 4 blocks an SM
// (__launch_bounds__' minimum blocks); waiting lanes spinning flat out or sleeping between reads.
// Against: cudaMemcpyAsync device to device of the same bytes, and the chapter's kernel as
// cluster-shape.cu's "chapter (cluster_shape)" launches it (for rows of 2^14, which
// cluster_shape leaves to step 6, the on-chip kernel on_chip_group picks: 512 x 32). Times are
// tuning.cuh's median_ms.
// Checks: every variant's output against the chapter kernel's on the same input, f32 within 1e-6
// relative (WRONG past it), bf16 within 1 ulp (WRONG past it); the largest difference is printed,
// and whether the output is the chapter's to the bit. Each variant is checked after 5 launches in
// a row, then, after its timing loop, once more with a second input (a launch on it, one on the
// first, one on it again, no synchronisation between): a read of a stale slot, or a counter not
// set back, shows there as a WRONG (or as a launch that never ends: run it under `timeout`).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o persistent-exchange scripts/lab/softmax/persistent-exchange.cu
//   timeout 300 ./softmax-persistent-tuning
#include "../../../cuda/softmax.cu"
#include "../../../cuda/look_back.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/softmax-pieces.cuh"
#include "../common/tuning.cuh"

// The threads of a block of every persistent variant.
#define BLOCK 256

// softmax-pieces.cuh's pieces of cluster_rows: this thread's max over its VALUES slots (here
// thread_max_permuted), and its sum of e = exp(x - shift) (thread_sum_exp, as it is there).
//
// One change in the max: bf16 elements are widened there by a byte permute (prmt) where
// BF16::element shifts or masks. The value is the same, to the bit; the instruction is not, and
// that matters inside the persistent loop: ptxas took the max's shl/and and the sum's shl/and for
// the same computation, kept all 64 widened elements in registers from the one sweep to the other,
// and spilled (64 to 100 bytes at 3 and 4 blocks an SM; all 128 registers at 2). The cluster
// kernel, with no loop, is not affected.
__device__ __forceinline__ float widen_by_permute(uint4 q, int j)
{
    const unsigned int w = word_of(q, j / 2);
    unsigned int widened; // bytes (0, 0, w.byte0, w.byte1) or (0, 0, w.byte2, w.byte3), low first
    if (j % 2 == 0) asm volatile("prmt.b32 %0, %1, 0, 0x1044;" : "=r"(widened) : "r"(w));
    else asm volatile("prmt.b32 %0, %1, 0, 0x3244;" : "=r"(widened) : "r"(w));
    return __uint_as_float(widened);
}
template <class E, int VALUES, class Share>
__device__ __forceinline__ float thread_max_permuted(const Share& share)
{
    float m = MaxNaN::identity();
#pragma unroll
    for (int j = 0; j < VALUES; j++)
        m = MaxNaN::combine(m, E::PER_WORD == 2 ? widen_by_permute(share.q[j / E::PER_VEC], j % E::PER_VEC)
                                                : share.get(j));
    return m;
}

// A slot word: the launch's epoch in the top 32 bits, a float's bits in the low 32.
__device__ __forceinline__ unsigned long long slot_word(unsigned epoch, float value)
{
    return ((unsigned long long)epoch << 32) | __float_as_uint(value);
}

// The exchange, called by the 32 lanes of warp 0 with the block's (m, s) of part `part` of a row
// whose slots start at `row_slots` (2 words a part). Thread 0 publishes; lane p < parts takes part
// p's pair (its own block's from registers, the others' from their slots once they carry `epoch`);
// then every lane merges the parts in order. Returns the row's (M, S) in every lane.
template <int SLEEP_NS>
__device__ __forceinline__ Online exchange_parts(unsigned long long* row_slots, unsigned part, unsigned parts,
                                                 unsigned epoch, float m, float s)
{
    const unsigned lane = threadIdx.x;
    if (lane == 0 && parts > 1) {
        store_status(row_slots + 2 * part, slot_word(epoch, m));
        store_status(row_slots + 2 * part + 1, slot_word(epoch, s));
    }
    Online mine = OnlineOp::identity();
    if (lane < parts) {
        if (lane == part) {
            mine.m = m;
            mine.s = s;
        } else {
            const unsigned long long* word = row_slots + 2 * lane;
            unsigned long long a = load_status(word), b = load_status(word + 1);
            while ((unsigned)(a >> 32) != epoch || (unsigned)(b >> 32) != epoch) {
                if (SLEEP_NS > 0) __nanosleep(SLEEP_NS);
                a = load_status(word);
                b = load_status(word + 1);
            }
            mine.m = __uint_as_float((unsigned)a);
            mine.s = __uint_as_float((unsigned)b);
        }
    }
    Online whole = OnlineOp::identity();
    for (unsigned p = 0; p < parts; p++) {
        const Online other = {__shfl_sync(FULL_MASK, mine.m, p), __shfl_sync(FULL_MASK, mine.s, p)};
        whole = OnlineOp::combine(whole, other);
    }
    return whole;
}

// The persistent kernel: a grid of resident blocks, each taking items (row, part) from `counter`
// until none is left. cols = parts x BLOCK x VALUES, the rows 16-byte aligned (the host checks), so
// item w's part starts at element w x BLOCK x VALUES and its slot is slots[2 w], slots[2 w + 1].
//
// Shared memory and barriers: the tickets go through `taken`, two of them, the block's item k in
// taken[k % 2]. Thread 0 writes taken[0] before the loop and, at the end of item k, the ticket of
// item k + 1 into taken[(k + 1) % 2]; everyone reads taken[k % 2] after barrier A of item k, and
// again after barrier C of item k (re-read, so that no register holds the item through the loads
// and the sums; the bf16 kernels at 64 a thread have none to spare). The write of taken[(k + 1) % 2]
// comes after C of item k, which every thread passes only after its last read of that word (in
// item k - 1); the reads of item k + 1 come after A of item k + 1, which thread 0 reaches only
// after its write. Lane 0 writes `merged` before C, everyone reads it after; its next write comes
// after the next A, which every thread reaches only after reading it. group_reduce's barriers
// (bar.sync 1 with all 256 threads) guard its own slots.
template <class E, int VALUES, int MIN_BLOCKS, int SLEEP_NS>
__global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
    persistent_rows(const typename E::Word* __restrict__ in, typename E::Word* __restrict__ out, unsigned rows,
                    unsigned cols, unsigned parts, unsigned long long* slots, unsigned* counter, unsigned epoch)
{
    enum { PART = BLOCK * VALUES };
    __shared__ unsigned taken[2];
    __shared__ Online merged;
    const unsigned items = rows * parts, last_draw = items + gridDim.x - 1;
    if (threadIdx.x == 0) taken[0] = draw_tile(counter, last_draw);
    for (unsigned turn = 0;; turn ^= 1) {
        __syncthreads(); // A
        const unsigned item = taken[turn];
        if (item >= items) break; // the whole block: taken[turn] is the same for all
        RowShare<E, BLOCK, VALUES> share = {threadIdx.x, (unsigned)PART, true};
        share.load(in + (size_t)item * PART);
        const float m = group_reduce<MaxNaN, BLOCK>(thread_max_permuted<E, VALUES>(share));
        const float shift = m == MaxNaN::identity() ? 0.0f : m; // a part of only -inf
        const float s = group_reduce<Sum<float>, BLOCK>(thread_sum_exp<E, VALUES>(share, shift));
        // Thread 0's ticket for the block's next item. Declared here, not across the loop, so that
        // it takes a register only from the draw to the end of the item (a value carried round the
        // loop would stay live through the loads and the sums).
        unsigned next = 0;
        if (threadIdx.x < 32) {
            const unsigned w = taken[turn], part = w % parts;
            const Online whole = exchange_parts<SLEEP_NS>(slots + 2 * (size_t)(w - part), part, parts, epoch, m, s);
            if (threadIdx.x == 0) {
                merged = whole;
                // The wait is over: drawing now cannot hold back a part this block waits for. The
                // draw is draw_tile's in two halves: the atomic here, its result looked at (the
                // reset) only after the write, so that its round trip overlaps the write rather
                // than holding the block at barrier C.
                next = atomicAdd(counter, 1u);
            }
        }
        __syncthreads(); // C
        const Online whole = merged;
        share.store(out + (size_t)taken[turn] * PART, shift, OnlineOp::rescale(m, whole.m) * inverse_sum(whole));
        if (threadIdx.x == 0) {
            if (next == last_draw) atomicExch(counter, 0u); // the launch's last draw: reset
            taken[turn ^ 1] = next;
        }
    }
}

// ---- the host ----

struct Shape {
    unsigned rows, cols;
    bool bf16;
};

// A way to take the softmax of a shape: launches on (in, out), or false where it does not apply.
using Run = std::function<bool(const void*, void*, Shape)>;

struct Variant {
    std::string name;
    Run f32, bf16;
    int occupancy[2] = {0, 0}; // blocks an SM of the f32 kernel and the bf16 one (0: several kernels)
    bool run(const void* in, void* out, Shape s) const { return s.bf16 ? bf16(in, out, s) : f32(in, out, s); }
};

static int sms = 0;
static unsigned long long* slots = nullptr; // the exchange's slots, 2 words a (row, part)
static size_t slot_words = 0;
static unsigned* counter = nullptr;         // the persistent kernels' ticket counter
static unsigned epoch = 0;                  // the last launch's epoch; the first launch takes 1

// A kernel's registers, local memory (spills), static shared memory and blocks an SM.
template <class Kernel>
static int describe(const std::string& name, Kernel kernel, int block)
{
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, kernel));
    int occupancy = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, kernel, block, 0));
    std::printf("%-44s regs %3d  local %4zu B  shared %5zu B  %d blocks/SM of %d\n", name.c_str(), a.numRegs,
                a.localSizeBytes, a.sharedSizeBytes, occupancy, block);
    return occupancy;
}

template <class E, int VALUES, int MIN_BLOCKS, int SLEEP_NS>
static int blocks_per_sm()
{
    static const int occupancy = [] {
        int b = 0;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, persistent_rows<E, VALUES, MIN_BLOCKS, SLEEP_NS>,
                                                            BLOCK, 0));
        return b;
    }();
    return occupancy;
}

template <class E, int VALUES, int MIN_BLOCKS, int SLEEP_NS>
static bool persistent_launch(const void* in, void* out, Shape s)
{
    const unsigned part = BLOCK * VALUES;
    if (s.cols % part != 0) return false;
    const unsigned parts = s.cols / part;
    const unsigned grid = blocks_per_sm<E, VALUES, MIN_BLOCKS, SLEEP_NS>() * sms;
    // At most a warp of parts (the exchange's lanes), at least as many resident blocks as parts
    // (the deadlock argument), and slots for every item.
    if (parts > 32 || grid < parts || 2 * (size_t)s.rows * parts > slot_words) return false;
    if ((size_t)s.rows * parts + grid >= (1ull << 32)) return false;
    typedef typename E::Word Word;
    persistent_rows<E, VALUES, MIN_BLOCKS, SLEEP_NS>
        <<<grid, BLOCK>>>((const Word*)in, (Word*)out, s.rows, s.cols, parts, slots, counter, ++epoch);
    CHECK(cudaGetLastError());
    return true;
}

// VALUES f32 and VALUES_BF16 bf16 elements a thread, MIN_BLOCKS blocks an SM asked of the compiler,
// SLEEP_NS between reads of a slot not yet published.
template <int VALUES, int VALUES_BF16, int MIN_BLOCKS, int SLEEP_NS>
static Variant persistent_variant(const std::string& name)
{
    Variant v{name, persistent_launch<F32, VALUES, MIN_BLOCKS, SLEEP_NS>,
              persistent_launch<BF16, VALUES_BF16, MIN_BLOCKS, SLEEP_NS>};
    v.occupancy[0] = describe(name + " f32", persistent_rows<F32, VALUES, MIN_BLOCKS, SLEEP_NS>, BLOCK);
    v.occupancy[1] = describe(name + " bf16", persistent_rows<BF16, VALUES_BF16, MIN_BLOCKS, SLEEP_NS>, BLOCK);
    return v;
}

// The chapter's kernel for the shapes timed here, launched as cluster-shape.cu's "chapter
// (cluster_shape)" launches it (a plain launch, the cluster compiled in), and, for rows of 2^14
// (which cluster_shape leaves to step 6), the on-chip kernel on_chip_group picks (512 x 32).
static Variant chapter_variant()
{
    Variant v{"chapter (cluster_shape)", {}, {}};
    v.f32 = [](const void* in, void* out, Shape s) {
        if (s.cols == 16384) softmax_on_chip_512x32<<<s.rows, 512>>>((const float*)in, (float*)out, s.rows, s.cols);
        else if (s.cols <= 16384 || s.cols > 131072) return false;
        else if (s.cols <= 32768)
            softmax_cluster_4x256x32<<<s.rows * 4, 256>>>((const float*)in, (float*)out, s.rows, s.cols);
        else if (s.cols <= 65536)
            softmax_cluster_8x256x32<<<s.rows * 8, 256>>>((const float*)in, (float*)out, s.rows, s.cols);
        else softmax_cluster_8x512x32<<<s.rows * 8, 512>>>((const float*)in, (float*)out, s.rows, s.cols);
        CHECK(cudaGetLastError());
        return true;
    };
    v.bf16 = [](const void* in, void* out, Shape s) {
        typedef const unsigned short* In;
        typedef unsigned short* Out;
        if (s.cols == 16384) softmax_on_chip_512x32_bf16<<<s.rows, 512>>>((In)in, (Out)out, s.rows, s.cols);
        else if (s.cols <= 16384 || s.cols > 131072) return false;
        else if (s.cols <= 32768) softmax_on_chip_512x64_bf16<<<s.rows, 512>>>((In)in, (Out)out, s.rows, s.cols);
        else if (s.cols <= 65536) softmax_cluster_4x256x64_bf16<<<s.rows * 4, 256>>>((In)in, (Out)out, s.rows, s.cols);
        else softmax_cluster_8x256x64_bf16<<<s.rows * 8, 256>>>((In)in, (Out)out, s.rows, s.cols);
        CHECK(cudaGetLastError());
        return true;
    };
    describe("chapter softmax_cluster_8x256x32", softmax_cluster_8x256x32, 256);
    describe("chapter softmax_cluster_4x256x64_bf16", softmax_cluster_4x256x64_bf16, 256);
    describe("chapter softmax_on_chip_512x32", softmax_on_chip_512x32, 512);
    describe("chapter softmax_on_chip_512x32_bf16", softmax_on_chip_512x32_bf16, 512);
    return v;
}

// How far `got` is from `want` (m elements): f32, the largest |got - want| / |want|; bf16, the
// largest distance in ulps (bit patterns of positive numbers; a NaN or a sign apart counts as
// 65536). `bitwise`: the two are the same bytes.
struct Compared {
    double worst = 0;
    size_t at = 0;
    bool bitwise = false;
};
static Compared compare(const void* got, const void* want, size_t m, bool bf16)
{
    Compared c;
    c.bitwise = std::memcmp(got, want, m * (bf16 ? 2 : 4)) == 0;
    if (c.bitwise) return c;
    for (size_t i = 0; i < m; ++i) {
        double d;
        if (bf16) {
            const unsigned g = ((const unsigned short*)got)[i], w = ((const unsigned short*)want)[i];
            const bool nan = (g & 0x7fff) > 0x7f80 || (w & 0x7fff) > 0x7f80;
            d = nan || (g >> 15) != (w >> 15) ? 65536.0 : std::fabs((double)g - (double)w);
        } else {
            const float g = ((const float*)got)[i], w = ((const float*)want)[i];
            d = std::fabs((double)g - (double)w) / std::fabs((double)w);
            if (!(d == d) || (g != g) != (w != w)) d = INFINITY;
            if (g == w) d = 0; // equal zeros (0 / 0) and equal infinities
        }
        if (!(d <= c.worst)) {
            c.worst = d;
            c.at = i;
        }
    }
    return c;
}

static bool report(const char* what, const Variant& v, Shape s, const Compared& c, const void* got, const void* want)
{
    const bool wrong = s.bf16 ? !(c.worst <= 1.0) : !(c.worst <= 1e-6);
    std::printf("  %-5s %-36s %s %4ux%-6u ", wrong ? "WRONG" : "ok", v.name.c_str(), s.bf16 ? "bf16" : "f32 ", s.rows,
                s.cols);
    if (c.bitwise) {
        std::printf("%s: bitwise equal to the chapter's\n", what);
    } else if (s.bf16) {
        std::printf("%s: at most %g ulp (at %zu: %g, chapter %g)\n", what, c.worst, c.at,
                    host_bf16_value(((const unsigned short*)got)[c.at]),
                    host_bf16_value(((const unsigned short*)want)[c.at]));
    } else {
        std::printf("%s: at most %.3g relative (at %zu: %.9g, chapter %.9g)\n", what, c.worst, c.at,
                    ((const float*)got)[c.at], ((const float*)want)[c.at]);
    }
    std::fflush(stdout);
    return !wrong;
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    sms = prop.multiProcessorCount;
    std::printf("%s, %d SMs\n", prop.name, sms);
    const size_t n = 1ull << 26; // the largest shape below holds 2^26 elements
    // Two inputs, both uniform on [-1, 1), from two seeds: A, and B with other maxima and sums in
    // every part (a part's (m, s) from A read in place of B's moves a row by far more than 1e-6).
    // Not a wider range for B: where a variant's parts are not the chapter's, x - m rounds
    // differently (m the part's max, not the row's), which is about 2^-20 of the result at
    // |x - m| near 16. Modelled on the host (softmax_exp and the reductions' order, without the
    // compiler's fused multiply-adds): 1.4e-6 relative on [-8, 8), about 6e-7 on [-1, 1) over
    // every row of both f32 shapes, against the 1e-6 the checks allow.
    std::vector<float> host_a(n), host_b(n);
    {
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::mt19937 rng(11);
        for (auto& x : host_a) x = u(rng);
        std::mt19937 rng_b(12);
        for (auto& x : host_b) x = u(rng_b);
    }
    std::vector<unsigned short> host_a16(n), host_b16(n);
    for (size_t i = 0; i < n; ++i) host_a16[i] = host_to_bf16(host_a[i]), host_b16[i] = host_to_bf16(host_b[i]);
    void *in_a, *in_b, *out, *in_a16, *in_b16, *out16;
    CHECK(cudaMalloc(&in_a, n * 4));
    CHECK(cudaMalloc(&in_b, n * 4));
    CHECK(cudaMalloc(&out, n * 4));
    CHECK(cudaMalloc(&in_a16, n * 2));
    CHECK(cudaMalloc(&in_b16, n * 2));
    CHECK(cudaMalloc(&out16, n * 2));
    CHECK(cudaMemcpy(in_a, host_a.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_b, host_b.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_a16, host_a16.data(), n * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_b16, host_b16.data(), n * 2, cudaMemcpyHostToDevice));
    slot_words = 2 * 4096 * 32; // 4,096 rows of up to 32 parts
    CHECK(cudaMalloc(&slots, slot_words * 8));
    CHECK(cudaMemset(slots, 0, slot_words * 8)); // epoch 0: no launch's
    CHECK(cudaMalloc(&counter, 4));
    CHECK(cudaMemset(counter, 0, 4));

    std::printf("\nkernels (cudaFuncGetAttributes; local = spills)\n");
    std::vector<Variant> variants;
    variants.push_back(chapter_variant());
    // 32 f32 / 64 bf16 a thread: the chapter's parts. Waiting lanes read their slot flat out.
    variants.push_back(persistent_variant<32, 64, 4, 0>("persistent 32|64 4/SM"));
    variants.push_back(persistent_variant<32, 64, 3, 0>("persistent 32|64 3/SM"));
    variants.push_back(persistent_variant<32, 64, 2, 0>("persistent 32|64 2/SM"));
    // The same with a pause between reads of a slot not yet published.
    variants.push_back(persistent_variant<32, 64, 4, 128>("persistent 32|64 4/SM sleep 128"));
    // 16 f32 / 32 bf16 a thread: twice the parts a row, twice the items.
    variants.push_back(persistent_variant<16, 32, 4, 0>("persistent 16|32 4/SM"));
    variants.push_back(persistent_variant<16, 32, 3, 0>("persistent 16|32 3/SM"));
    variants.push_back(persistent_variant<16, 32, 2, 0>("persistent 16|32 2/SM"));
    std::printf("(\"A|B\": A f32 or B bf16 elements a thread; N/SM: __launch_bounds__(256, N); the grid is\n"
                " blocks/SM x %d SMs)\n",
                sms);

    const Shape shapes[] = {
        {768, 1u << 16, false}, {4096, 1u << 14, false}, {768, 1u << 16, true}, {4096, 1u << 14, true}};
    const size_t shape_count = sizeof(shapes) / sizeof(shapes[0]);
    std::vector<double> copy_ms(shape_count);
    std::vector<std::vector<double> > ms(variants.size(), std::vector<double>(shape_count, -1.0));
    std::vector<unsigned char> want_a(n * 4), want_b(n * 4), got(n * 4);
    bool all_ok = true;
    for (size_t k = 0; k < shape_count; ++k) {
        const Shape s = shapes[k];
        const size_t m = (size_t)s.rows * s.cols, bytes = m * (s.bf16 ? 2 : 4);
        const void* a = s.bf16 ? in_a16 : in_a;
        const void* b = s.bf16 ? in_b16 : in_b;
        void* y = s.bf16 ? out16 : out;
        std::printf("\n%s %u x %u: checks against the chapter's kernel\n", s.bf16 ? "bf16" : "f32", s.rows, s.cols);
        // The references: the chapter's kernel on A and on B.
        if (!variants[0].run(a, y, s)) {
            std::printf("  the chapter has no kernel for this shape\n");
            continue;
        }
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(want_a.data(), y, bytes, cudaMemcpyDeviceToHost));
        variants[0].run(b, y, s);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(want_b.data(), y, bytes, cudaMemcpyDeviceToHost));
        copy_ms[k] = median_ms([&] { CHECK(cudaMemcpyAsync(y, a, bytes, cudaMemcpyDeviceToDevice)); });
        for (size_t v = 0; v < variants.size(); ++v) {
            const Variant& var = variants[v];
            // Five launches in a row, then the output.
            CHECK(cudaMemset(y, 0xff, bytes));
            bool applies = true;
            for (int r = 0; r < 5 && applies; ++r) applies = var.run(a, y, s);
            if (!applies) continue;
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(got.data(), y, bytes, cudaMemcpyDeviceToHost));
            all_ok &= report("5 launches", var, s, compare(got.data(), want_a.data(), m, s.bf16), got.data(),
                             want_a.data());
            ms[v][k] = median_ms([&] { var.run(a, y, s); });
            // After the timing loop: B, A, B with no synchronisation between, then the output (B's).
            CHECK(cudaMemset(y, 0xff, bytes));
            var.run(b, y, s);
            var.run(a, y, s);
            var.run(b, y, s);
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(got.data(), y, bytes, cudaMemcpyDeviceToHost));
            all_ok &= report("after timing, B A B", var, s, compare(got.data(), want_b.data(), m, s.bf16),
                             got.data(), want_b.data());
        }
    }

    std::printf("\nms (%% of the copy of the same bytes); occ: blocks an SM, f32 kernel/bf16 kernel\n%-36s %5s",
                "variant", "occ");
    for (const Shape& s : shapes)
        std::printf(" | %s %4ux2^%-2d  ", s.bf16 ? "bf16" : "f32 ", s.rows, (int)std::log2((double)s.cols));
    std::printf("\n%-36s %5s", "copy (cudaMemcpy)", "");
    for (size_t k = 0; k < shape_count; ++k) std::printf(" | %7.4f         ", copy_ms[k]);
    std::printf("\n");
    for (size_t v = 0; v < variants.size(); ++v) {
        const int* occ = variants[v].occupancy;
        if (occ[0] > 0) std::printf("%-36s %2d/%-2d", variants[v].name.c_str(), occ[0], occ[1]);
        else std::printf("%-36s %5s", variants[v].name.c_str(), "");
        for (size_t k = 0; k < shape_count; ++k) {
            if (ms[v][k] < 0) std::printf(" | %16s", "-");
            else std::printf(" | %7.4f %5.1f%%  ", ms[v][k], 100.0 * copy_ms[k] / ms[v][k]);
        }
        std::printf("\n");
    }
    std::printf("%s\n", all_ok ? "every check passed" : "SOME CHECK WRONG (see above)");
    return all_ok ? 0 : 1;
}
