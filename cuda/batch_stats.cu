// batch-stats: batch-norm statistics, every step in one file.
//
// Every kernel here computes, for each channel c of an NCHW tensor x (batch N, channels C, planes
// of H x W elements, W varying fastest), the mean and the variance of its N * H * W elements, as
// torch.var_mean(x, dim=(0, 2, 3), correction=k) does: a reduction across a strided axis. Channel c
// is the N planes x[n][c] (n = 0 .. N - 1), each H * W contiguous elements, one every C planes:
//
//   element (n, c, i) is at ((n * C + c) * H * W + i),   i = h * W + w
//
// The variance is m2 / (count - correction): correction 1 is torch.var_mean's default (the unbiased
// estimate), 0 the population variance BatchNorm normalises with. A channel of one element has an
// unbiased variance of 0 / 0, NaN, as in torch; an empty channel (N * H * W = 0) has a NaN mean and
// variance (the launcher writes those without a launch).
//
// Two element types, one code: f32, and bf16 (16-bit words holding bfloat16, read as bf16, computed
// in f32 inside); the statistics are always f32. Each step is a template on the element (`F32`,
// `BF16`) with two entry points, `batch_stats_<step>` and `batch_stats_<step>_bf16`. The
// accumulator is reduce-numerics' (moments.cuh): (count, mean, m2) and Chan's combination, which
// never goes negative, gives exactly 0 for constant data, and does not overflow where a sum of
// squares would (values of 1e38).
//
// Sizes: N, C and H * W each below 2^31, and N * ceil(H * W / piece) below 2^31 (the launcher
// checks); offsets are 64-bit, so the tensor may hold more than 2^32 elements.
//
// The steps, each differing from the one before by one technique:
//   1. batch_stats_naive      a thread per channel walks its planes: strided, and C threads in all
//   2. batch_stats_coalesced  a block per channel, consecutive lanes on consecutive elements
//   3. batch_stats_split      several blocks per channel, the last one to finish combines
//   4. batch_stats_vectors    step 3 with loads of up to 16 bytes where the planes allow
//   5. batch_stats_flat       step 4 with a block's share of a channel walked as one stream of
//                             vectors across its planes
#include "bf16.cuh"
#include "block_reduce.cuh"
#include "moments.cuh"

// The threads of a block of every kernel (the launcher uses this many), and its warps. Steps 3 and
// 4 ask for BLOCKS_PER_SM blocks on an SM at once (at most 64 registers a thread: a lane's 16
// values and its accumulators fit without spilling), and the launcher sizes their grids by it.
#define THREADS       256
#define WARPS         (THREADS / 32)
#define BLOCKS_PER_SM 4
// Step 1 folds a channel's values in runs of this many (see naive).
#define NAIVE_RUN     4096

// ANCHOR: elements
// The element types. `Word` is what memory holds; values are f32 in registers. `unpack` turns a
// 32-bit word of memory into its PER_WORD values; MAX_VEC elements make 16 bytes, and K_LONG
// elements 64 (what a lane takes of a piece of a long plane: see pieces below).
struct F32 {
    typedef float Word;
    enum { PER_WORD = 1, MAX_VEC = 4, K_LONG = 16 };
    __device__ static float load(const Word* p) { return *p; }
    __device__ static void unpack(unsigned int w, float* x) { x[0] = __uint_as_float(w); }
};

// bfloat16 is the top half of an f32: widening is a shift (bf16_to_float, in bf16.cuh).
struct BF16 {
    typedef unsigned short Word;
    enum { PER_WORD = 2, MAX_VEC = 8, K_LONG = 32 };
    __device__ static float load(const Word* p) { return bf16_to_float(*p); }
    __device__ static void unpack(unsigned int w, float* x)
    {
        x[0] = bf16_to_float(w & 0xffffu);
        x[1] = bf16_to_float(w >> 16);
    }
};
// ANCHOR_END: elements

// ANCHOR: stats
// What a channel's accumulator gives: its mean, and m2 / (count - correction). A channel with no
// elements has a NaN mean; where count - correction is not positive (one element, unbiased; or
// none) the variance is NaN, as torch's is (0 / 0).
__device__ __forceinline__ void write_stats(Moments m, unsigned int c, unsigned int correction,
                                            float* __restrict__ mean, float* __restrict__ var)
{
    const float nan = __int_as_float(0x7fc00000);
    const float dof = (float)m.count - (float)correction;
    mean[c] = m.count == 0 ? nan : m.mean;
    var[c] = dof > 0.0f ? m.m2 / dof : nan;
}
// ANCHOR_END: stats

// ANCHOR: naive
// Step 1, batch_stats_naive: a thread per channel.
//
// What it does: thread c walks channel c plane by plane, element by element, folding each value
// into a run's accumulator (Chan's combination with a one-element accumulator: Welford's update);
// every NAIVE_RUN values the run is merged into the channel's accumulator, again by Chan's
// combination, and a fresh run begins. At the end it writes the channel's mean and variance.
//
// Why runs: folded one at a time into a single f32 accumulator, the k-th value moves the mean by
// (x - mean) / k and adds about (x - mean)^2 to m2. Past a few million values both moves fall below
// half an ulp of what they are added to, and are lost: a channel of 2^25 values came out 5% low.
// A run never holds more than NAIVE_RUN values, and the merges move the mean by a run's share, so
// no value's contribution is rounded away. The walk, and so the lesson of the step (its access
// pattern), is the same.
//
// What it leaves slow: everything. The lanes of a warp are 32 channels, so one load instruction
// reads 32 addresses H * W elements apart: 32 sectors of 32 bytes for 128 useful bytes, where a
// coalesced load needs 4. And there are only C threads: 64 channels are 64 threads, two warps, on
// a GPU that runs 270,336 threads at once, each walking 100,352 elements in a row.
//
// Launch: block THREADS, grid ceil(C / THREADS).
template <class E>
__device__ void naive(const typename E::Word* __restrict__ in, float* __restrict__ mean,
                      float* __restrict__ var, unsigned int batch, unsigned int channels,
                      unsigned int plane, unsigned int correction)
{
    typedef MomentsOf<float> Op;
    const unsigned int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= channels) {
        return;
    }
    Moments acc = Op::identity();
    Moments run = Op::identity();
    for (unsigned int n = 0; n < batch; n++) {
        const typename E::Word* x = in + ((size_t)n * channels + c) * plane;
        for (unsigned int i = 0; i < plane; i++) {
            run = Op::combine(run, moments1(E::load(x + i)));
            if (run.count == NAIVE_RUN) {
                acc = Op::combine(acc, run);
                run = Op::identity();
            }
        }
    }
    write_stats(Op::combine(acc, run), c, correction, mean, var);
}
// ANCHOR_END: naive

extern "C" __global__ void batch_stats_naive(const float* in, float* mean, float* var,
                                             unsigned int batch, unsigned int channels,
                                             unsigned int plane, unsigned int correction)
{
    naive<F32>(in, mean, var, batch, channels, plane, correction);
}
extern "C" __global__ void batch_stats_naive_bf16(const unsigned short* in, float* mean, float* var,
                                                  unsigned int batch, unsigned int channels,
                                                  unsigned int plane, unsigned int correction)
{
    naive<BF16>(in, mean, var, batch, channels, plane, correction);
}

// ANCHOR: pieces
// The walk of steps 2 to 4. A channel's planes are cut into pieces of at most 32 K elements, K
// values per lane: for planes of more than 256 elements, K is the elements of 64 bytes (E::K_LONG:
// 16 f32, pieces of 512; 32 bf16, pieces of 1024), and K = 8 for shorter ones, so that a plane of
// 196 fills most of its piece. A plane of 3136 f32 is six pieces of 512 and one of 64 (bf16: three
// of 1024 and one of 64); a plane of 196 is one piece of 256. A warp takes a piece at a time: lane
// l reads elements l * V, (32 + l) * V, (64 + l) * V, ... of the piece, V at a time (V = 1 in
// steps 2 and 3), so the 32 lanes of one load read 32 V consecutive elements, and each lane has
// K / V loads in flight before it adds anything.
template <class E> __device__ __forceinline__ unsigned int piece_of(unsigned int plane)
{
    return plane > 256 ? 32 * E::K_LONG : 256;
}

// The number of bytes of V elements, as a type a load can move at once, and its 32-bit words.
template <int BYTES> struct Bytes;
template <> struct Bytes<16> {
    typedef uint4 Type;
};
template <> struct Bytes<8> {
    typedef uint2 Type;
};
template <> struct Bytes<4> {
    typedef unsigned int Type;
};
__device__ __forceinline__ unsigned int word(uint4 v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
__device__ __forceinline__ unsigned int word(uint2 v, int i)
{
    return i == 0 ? v.x : v.y;
}
__device__ __forceinline__ unsigned int word(unsigned int v, int)
{
    return v;
}

// V elements at p into x[0 .. V): one load (of up to 16 bytes; p must be aligned to its size).
template <class E, int V>
__device__ __forceinline__ void load_vector(const typename E::Word* __restrict__ p, float* x)
{
    if constexpr (V * sizeof(typename E::Word) == 2) {
        x[0] = E::load(p); // one bf16
    } else {
        // ANCHOR: solution one load of V * sizeof(typename E::Word) bytes at p (typename Bytes<...>::Type), unpacked word by word into x[0 .. V) with E::unpack (E::PER_WORD values per 32-bit word)
        typedef typename Bytes<V * sizeof(typename E::Word)>::Type Vector;
        const Vector v = *reinterpret_cast<const Vector*>(p);
#pragma unroll
        for (int i = 0; i < (int)(sizeof(Vector) / 4); i++) {
            E::unpack(word(v, i), x + i * E::PER_WORD);
        }
        // ANCHOR_END: solution
        // ANCHOR: stub for (int i = 0; i < V; i++) x[i] = 0.0f;
    }
}

// s[0] becomes the sum of s[0 .. 2 W), added as a tree: s[i] += s[i + W], then the same for W / 2,
// down to 1 (every index a constant, so the values stay in registers).
template <int W> __device__ __forceinline__ void add_halves(float* s)
{
#pragma unroll
    for (int i = 0; i < W; i++) {
        s[i] += s[i + W];
    }
    if constexpr (W > 1) {
        add_halves<W / 2>(s);
    }
}

// The accumulator of the first m of K values in registers (1 <= m <= K), x[m .. K) holding copies
// of x[0]. It works on the differences d from the first value: the mean is x[0] plus the mean of
// the d, and m2 is the sum of their squares less the mean's share, sum d^2 - (sum d)^2 / m. The
// copies' d are exactly 0, so they add nothing to either sum and no value needs a mask; constant
// data gives x[0] exactly and a variance of exactly 0. The squares go in four chains as they come,
// the d then add as a tree; one division for up to K values. The subtraction magnifies the two
// sums' roundings by up to about m + 1 (x[0] is one of the values, so |x[0] - mean|^2 <= m2): where
// x[0] is an outlier, m2 can be off by tens of its roundings (about a hundred for 16 values in
// the worst case found), where the two-pass form kept about thirty; such data has a spread
// (batch_stats::tolerance's X D) many times its variance, and the tests' bound grows with it.
// Where a sum or a square overflows, or a value is not finite, the two-pass form with masks: the
// mean of x / m where the sum of the d overflowed (values near f32's limit, of both signs), then
// the squares of x - mean, infinities and NaN as IEEE arithmetic gives them.
template <int K> __device__ __forceinline__ Moments moments_of(const float* x, unsigned int m)
{
    const float pivot = x[0], count = (float)m;
    float s[K], q[4];
#pragma unroll
    for (int i = 0; i < K; i++) {
        s[i] = x[i] - pivot;
        q[i % 4] = i < 4 ? s[i] * s[i] : fmaf(s[i], s[i], q[i % 4]);
    }
    const float squares = (q[0] + q[1]) + (q[2] + q[3]);
    add_halves<K / 2>(s);
    const float shift = s[0] / count;
    float mean = pivot + shift;
    float m2 = fmaxf(fmaf(-s[0], shift, squares), 0.0f);
    if (!isfinite(squares)) {
        if (!isfinite(s[0])) {
#pragma unroll
            for (int i = 0; i < K; i++) {
                s[i] = i < (int)m ? x[i] / count : 0.0f;
            }
            add_halves<K / 2>(s);
            mean = s[0];
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = 0.0f;
#pragma unroll
            for (int j = i; j < K; j += 4) {
                const float d = j < (int)m ? x[j] - mean : 0.0f;
                q[i] = fmaf(d, d, q[i]);
            }
        }
        m2 = (q[0] + q[1]) + (q[2] + q[3]);
    }
    return Moments{m, mean, m2};
}

// Where this lane's k-th load of a piece starts, in elements from the piece's start.
template <int V> __device__ __forceinline__ unsigned int load_at(int k, unsigned int lane)
{
    // ANCHOR: solution the element of the piece where this lane's k-th load starts: lanes next to each other read vectors next to each other (32 lanes x V elements per load, then the next 32 V)
    return (k * 32 + lane) * V;
    // ANCHOR_END: solution
    // ANCHOR: stub return k * V;
}

// Chan's combination (MomentsOf<float>::combine) of two accumulators of C values each: the share
// nb / n is 1/2 and the weight na nb / n is C / 2, constants, so it takes no division and no
// conversion of the counts, and gives the same bits as combine.
template <int C> __device__ __forceinline__ Moments combine_halves(Moments a, Moments b)
{
    const float d = b.mean - a.mean, weight = 0.5f * C;
    const float mean = isfinite(d) ? a.mean + d * 0.5f : a.mean * 0.5f + b.mean * 0.5f;
    float spread = d * d * weight;
    if (isinf(spread) && isfinite(d)) {
        const float t = d * sqrtf(weight);
        spread = t * t;
    }
    return Moments{2ull * C, mean, (a.m2 + b.m2) + spread};
}

// The accumulator of a lane's K values in registers, the first m loaded (1 <= m <= K) and the
// others copies (for K > 16, folded as two halves of K / 2 as lane_piece folds them: the second
// half's copies are of its own first value, or the half is empty).
template <int K> __device__ __forceinline__ Moments fold_values(const float* x, unsigned int m)
{
    if constexpr (K > 16) {
        if (m <= K / 2) {
            return moments_of<K / 2>(x, m);
        }
        if (m == K) {
            return combine_halves<K / 2>(moments_of<K / 2>(x, K / 2),
                                         moments_of<K / 2>(x + K / 2, K / 2));
        }
        return MomentsOf<float>::combine(moments_of<K / 2>(x, K / 2),
                                         moments_of<K / 2>(x + K / 2, m - K / 2));
    }
    return moments_of<K>(x, m);
}

// This lane's accumulator of a piece of `len` elements at `piece` (len a multiple of V). A whole
// piece (most pieces of a large plane) needs no bounds: every lane holds K values. In a
// shorter one (a plane's last, or a whole plane of 196) only this lane's first loads are inside,
// and the slots after them hold copies of its first value (their differences from it are 0).
template <class E, int V, int K>
__device__ __forceinline__ Moments lane_piece(const typename E::Word* __restrict__ piece,
                                              unsigned int len, unsigned int lane)
{
    float x[K];
    if constexpr (K > 16) {
        // A piece of 32 x 32 (bf16) is two of 32 x 16: elements [0, 512) of it are laid out among
        // the lanes as a piece of 512 is, and so are [512, 1024). Folded as two halves of 16
        // values (moments_of<32> would need 32 more registers), loaded together where it is whole.
        typedef MomentsOf<float> Op;
        if (len == 32 * K) {
#pragma unroll
            for (int k = 0; k < K / V; k++) {
                load_vector<E, V>(piece + load_at<V>(k, lane), x + k * V);
            }
            return fold_values<K>(x, K);
        }
        const unsigned int first = len < 16 * K ? len : 16 * K;
        return Op::combine(lane_piece<E, V, K / 2>(piece, first, lane),
                           lane_piece<E, V, K / 2>(piece + 16 * K, len - first, lane));
    }
    if (len == 32 * K) {
#pragma unroll
        for (int k = 0; k < K / V; k++) {
            load_vector<E, V>(piece + load_at<V>(k, lane), x + k * V);
        }
        return moments_of<K>(x, K);
    }
    // The loads inside the piece are this lane's first ones: k * 32 + lane < len / V.
    const unsigned int vectors = len / V;
    const unsigned int loads = vectors > lane ? (vectors - lane + 31) / 32 : 0;
    const unsigned int mine = loads < K / V ? loads : K / V;
    if (mine == 0) {
        return MomentsOf<float>::identity();
    }
    load_vector<E, V>(piece + load_at<V>(0, lane), x);
#pragma unroll
    for (int k = 1; k < K / V; k++) {
        if (k < (int)mine) {
            load_vector<E, V>(piece + load_at<V>(k, lane), x + k * V);
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) {
                x[k * V + j] = x[0];
            }
        }
    }
    return moments_of<K>(x, mine * V);
}

// The accumulator of pieces [first, last) of channel c, the warps of the block taking every
// WARPS-th piece. Piece p is piece q = p % per_plane of plane n = p / per_plane of the channel.
template <class E, int V, int K>
__device__ __forceinline__ Moments walk_pieces(const typename E::Word* __restrict__ in,
                                               unsigned int c, unsigned int channels,
                                               unsigned int plane, unsigned int first,
                                               unsigned int last)
{
    typedef MomentsOf<float> Op;
    const unsigned int per_plane = (plane + 32 * K - 1) / (32 * K);
    const unsigned int lane = threadIdx.x % 32;
    Moments acc = Op::identity();
    for (unsigned int p = first + threadIdx.x / 32; p < last; p += WARPS) {
        const unsigned int n = per_plane == 1 ? p : p / per_plane;
        const unsigned int begin = (p - n * per_plane) * (32 * K);
        const unsigned int len = plane - begin < 32 * K ? plane - begin : 32 * K;
        acc = Op::combine(
            acc, lane_piece<E, V, K>(in + ((size_t)n * channels + c) * plane + begin, len, lane));
    }
    return acc;
}

// The same, with the plane's K.
template <class E, int V>
__device__ __forceinline__ Moments walk(const typename E::Word* __restrict__ in, unsigned int c,
                                        unsigned int channels, unsigned int plane,
                                        unsigned int first, unsigned int last)
{
    if (piece_of<E>(plane) > 256) {
        return walk_pieces<E, V, E::K_LONG>(in, c, channels, plane, first, last);
    }
    return walk_pieces<E, V, 8>(in, c, channels, plane, first, last);
}
// ANCHOR_END: pieces

// ANCHOR: coalesced
// Step 2, batch_stats_coalesced: a block per channel, coalesced.
//
// What it does: block c takes channel c; its warps take the channel's pieces in turn (walk_pieces),
// each lane keeping an accumulator, and a block reduction (block_reduce.cuh, with moments.cuh's
// shuffle and combination) gives thread 0 the channel's.
//
// What changed from naive: the lanes of a load read 32 consecutive elements of one plane, 4 sectors
// per request instead of 32, and a lane folds K values at once (one division instead of K).
//
// What it leaves slow: C blocks. 64 channels are 64 blocks on 132 SMs: half the SMs have nothing
// to do, and the others hold one block of 256 threads where they could hold four. Each block walks
// its whole channel (100,352 or 802,816 elements) alone.
//
// Launch: block THREADS, grid C.
template <class E>
__device__ void coalesced(const typename E::Word* __restrict__ in, float* __restrict__ mean,
                          float* __restrict__ var, unsigned int batch, unsigned int channels,
                          unsigned int plane, unsigned int correction)
{
    const unsigned int c = blockIdx.x;
    const unsigned int pieces = batch * ((plane + piece_of<E>(plane) - 1) / piece_of<E>(plane));
    Moments acc = walk<E, 1>(in, c, channels, plane, 0, pieces);
    acc = block_reduce<MomentsOf<float>>(acc);
    if (threadIdx.x == 0) {
        write_stats(acc, c, correction, mean, var);
    }
}
// ANCHOR_END: coalesced

extern "C" __global__ void batch_stats_coalesced(const float* in, float* mean, float* var,
                                                 unsigned int batch, unsigned int channels,
                                                 unsigned int plane, unsigned int correction)
{
    coalesced<F32>(in, mean, var, batch, channels, plane, correction);
}
extern "C" __global__ void batch_stats_coalesced_bf16(const unsigned short* in, float* mean,
                                                      float* var, unsigned int batch,
                                                      unsigned int channels, unsigned int plane,
                                                      unsigned int correction)
{
    coalesced<BF16>(in, mean, var, batch, channels, plane, correction);
}

// ANCHOR: finish
// The end of a block of steps 3 to 5: the block's accumulator (a block reduction) goes to its
// slot among its channel's `slices` partials, and the block takes a ticket from the channel's
// counter; the block that draws the channel's last ticket combines the partials in a fixed order,
// writes the statistics and puts the counter back to 0 for the next launch. reduce-atomic's
// last-block finish, one counter per channel: the same input gives the same bits every run, and
// one launch does it all. The combination is a warp's where there are 32 partials or fewer (lane
// i takes partial i, then a warp reduction), as there are for 17 channels or more on 132 SMs (528
// blocks / 17 = 31 slices): no barrier, where a block reduction over THREADS threads would
// wait at one with `slices` of them holding a partial (about a point faster on an H100:
// scripts/lab/batch-stats/README.md). More partials (a few channels) take the block: thread t
// combines partials t, t + THREADS, ..., then a block reduction.
__device__ __forceinline__ void finish_channel(Moments acc, Moments* __restrict__ partial,
                                               unsigned int* __restrict__ ticket,
                                               unsigned int slices, unsigned int slice,
                                               unsigned int c, unsigned int correction,
                                               float* __restrict__ mean, float* __restrict__ var)
{
    typedef MomentsOf<float> Op;
    __shared__ bool is_last;
    acc = block_reduce<Op>(acc);
    if (threadIdx.x == 0) {
        // ANCHOR: solution publish the block's partial (partial[slice], then __threadfence), take a ticket from the channel's counter (atomicAdd), and set is_last in the block that draws the channel's last one, which fences again before reading the partials
        partial[slice] = acc;
        __threadfence();
        const unsigned int arrived = atomicAdd(ticket, 1);
        is_last = arrived == slices - 1;
        if (is_last) {
            __threadfence(); // order the reads below after every other block's fence
        }
        // ANCHOR_END: solution
        // ANCHOR: stub is_last = false;
    }
    __syncthreads();
    if (is_last && slices <= 32) {
        if (threadIdx.x < 32) {
            Moments total =
                threadIdx.x < slices ? load_from_l2(&partial[threadIdx.x]) : Op::identity();
            total = warp_reduce<Op>(total);
            if (threadIdx.x == 0) {
                write_stats(total, c, correction, mean, var);
                *ticket = 0;
            }
        }
    } else if (is_last) {
        Moments total = Op::identity();
        for (unsigned int i = threadIdx.x; i < slices; i += blockDim.x) {
            total = Op::combine(total, load_from_l2(&partial[i]));
        }
        total = block_reduce<Op>(total);
        if (threadIdx.x == 0) {
            write_stats(total, c, correction, mean, var);
            *ticket = 0;
        }
    }
}
// ANCHOR_END: finish

// ANCHOR: split
// Step 3, batch_stats_split: several blocks per channel, and the last one combines.
//
// What it does: each channel's pieces are cut into `slices` runs of consecutive pieces, one block
// per run (block b takes run b % slices of channel b / slices), with as many slices as fill the GPU
// once (the launcher: C x slices blocks, at most BLOCKS_PER_SM per SM). Each block walks its run as
// step 2 walks a channel, and finish_channel combines the channel's runs.
//
// What changed from coalesced: the work of a channel is spread over blocks, so 64 channels of
// 100,352 elements make 512 blocks of 12,544 elements, and every SM streams; the second stage
// costs C x slices accumulators of 16 bytes and one atomic per block, in the same launch. Where
// the channels alone fill the GPU (512 of them), slices is 1 and the step is step 2.
//
// What it leaves slow: each lane loads one element at a time, 16 load instructions for 16 f32
// values (32 for 32 bf16).
// Where DRAM is the limit (planes of 3136 that the L2 does not hold) that costs nothing: the load
// units keep up with the memory. It shows where instructions, not bytes, set the time: short
// planes in the L2 (14 x 14), where each piece's loads, their bounds, its fold and its
// combination are spread over 196 values.
//
// Launch: block THREADS, grid C * slices. partial: C * slices accumulators; ticket: C counters, 0
// before the first launch (each launch leaves them 0); neither is touched where slices is 1.
// (FLAT is step 5's: a block's run is of its channel's vectors, walked by walk_flat.)
template <class E, int V, int K>
__device__ __forceinline__ Moments walk_flat(const typename E::Word* __restrict__ in,
                                             unsigned int c, unsigned int channels,
                                             unsigned int plane, unsigned int first,
                                             unsigned int last);

template <class E, int V, bool FLAT = false>
__device__ void split(const typename E::Word* __restrict__ in, Moments* __restrict__ partial,
                      unsigned int* __restrict__ ticket, float* __restrict__ mean,
                      float* __restrict__ var, unsigned int batch, unsigned int channels,
                      unsigned int plane, unsigned int slices, unsigned int correction)
{
    const unsigned int c = blockIdx.x / slices, slice = blockIdx.x % slices;
    const unsigned int per_plane =
        FLAT ? plane / V : (plane + piece_of<E>(plane) - 1) / piece_of<E>(plane);
    const unsigned int units = batch * per_plane; // the channel's pieces, or its vectors (FLAT)
    const unsigned int per_slice = (units + slices - 1) / slices;
    const unsigned int first = slice * per_slice < units ? slice * per_slice : units;
    const unsigned int last = units - first < per_slice ? units : first + per_slice;
    Moments acc;
    if constexpr (FLAT) {
        acc = walk_flat<E, V, E::K_LONG>(in, c, channels, plane, first, last);
    } else {
        acc = walk<E, V>(in, c, channels, plane, first, last);
    }
    if (slices == 1) {
        // The channel's only block (the channels alone fill the GPU): step 2's end.
        acc = block_reduce<MomentsOf<float>>(acc);
        if (threadIdx.x == 0) {
            write_stats(acc, c, correction, mean, var);
        }
        return;
    }
    finish_channel(acc, partial + (size_t)c * slices, ticket + c, slices, slice, c, correction,
                   mean, var);
}
// ANCHOR_END: split

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    batch_stats_split(const float* in, Moments* partial, unsigned int* ticket, float* mean,
                      float* var, unsigned int batch, unsigned int channels, unsigned int plane,
                      unsigned int slices, unsigned int correction)
{
    split<F32, 1>(in, partial, ticket, mean, var, batch, channels, plane, slices, correction);
}
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    batch_stats_split_bf16(const unsigned short* in, Moments* partial, unsigned int* ticket,
                           float* mean, float* var, unsigned int batch, unsigned int channels,
                           unsigned int plane, unsigned int slices, unsigned int correction)
{
    split<BF16, 1>(in, partial, ticket, mean, var, batch, channels, plane, slices, correction);
}

// ANCHOR: vectors
// Step 4, batch_stats_vectors: step 3 with loads of up to 16 bytes.
//
// What it does: step 3, with each lane loading V elements at once: 16 bytes (4 f32, 8 bf16) where
// every plane starts on a 16-byte boundary, i.e. where the tensor does and H * W is a multiple of
// V; otherwise the widest V that divides H * W and the tensor's alignment (8, 4 or 2 bytes), down
// to single elements for odd H * W (195, 197). The whole grid takes the same V, so no plane has
// edges to read one by one: a piece starts at a multiple of 32 K and holds a multiple of V
// elements.
//
// What changed from split: a lane's K values come in K / V loads instead of K: four loads of 16
// bytes for both types on long planes (K = 16 f32 or 32 bf16); the walk, the slices and the
// finish are step 3's.
//
// What it leaves slow: odd planes (H * W = 195) fall back to step 3's single loads; a plane of
// 14 x 14 = 196 fills 196 of its piece's 256 elements, and its lanes' last loads are partly past
// its end (lanes 0 to 16 load two vectors of 4, the others one); and every piece pays for a fold
// and a combination whatever its length. Where DRAM is the limit, it gains nothing over step 3:
// what is left there is a plane's short last piece, the folds and the finish (step 5 takes the
// first away; its header gives the other two as measured).
//
// Launch: step 3's.
template <class E>
__device__ __forceinline__ unsigned int vector_width(const typename E::Word* in, unsigned int plane)
{
    unsigned int v = E::MAX_VEC;
    while (v > 1 &&
           (plane % v != 0 || reinterpret_cast<size_t>(in) % (v * sizeof(typename E::Word)) != 0)) {
        v /= 2;
    }
    return v;
}

template <class E, bool FLAT = false>
__device__ void vectors(const typename E::Word* __restrict__ in, Moments* __restrict__ partial,
                        unsigned int* __restrict__ ticket, float* __restrict__ mean,
                        float* __restrict__ var, unsigned int batch, unsigned int channels,
                        unsigned int plane, unsigned int slices, unsigned int correction)
{
    const unsigned int v = vector_width<E>(in, plane);
    if (E::MAX_VEC >= 8 && v == 8) {
        split<E, E::MAX_VEC >= 8 ? 8 : 1, FLAT>(in, partial, ticket, mean, var, batch, channels,
                                                plane, slices, correction);
    } else if (v == 4) {
        split<E, 4, FLAT>(in, partial, ticket, mean, var, batch, channels, plane, slices,
                          correction);
    } else if (v == 2) {
        split<E, 2, FLAT>(in, partial, ticket, mean, var, batch, channels, plane, slices,
                          correction);
    } else {
        split<E, 1, FLAT>(in, partial, ticket, mean, var, batch, channels, plane, slices,
                          correction);
    }
}
// ANCHOR_END: vectors

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    batch_stats_vectors(const float* in, Moments* partial, unsigned int* ticket, float* mean,
                        float* var, unsigned int batch, unsigned int channels, unsigned int plane,
                        unsigned int slices, unsigned int correction)
{
    vectors<F32>(in, partial, ticket, mean, var, batch, channels, plane, slices, correction);
}
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    batch_stats_vectors_bf16(const unsigned short* in, Moments* partial, unsigned int* ticket,
                             float* mean, float* var, unsigned int batch, unsigned int channels,
                             unsigned int plane, unsigned int slices, unsigned int correction)
{
    vectors<BF16>(in, partial, ticket, mean, var, batch, channels, plane, slices, correction);
}

// ANCHOR: flat
// Step 5, batch_stats_flat: a block's share of its channel as one stream of vectors.
//
// What it does: step 4's loads (V elements, as vector_width allows) and finish, with as many slices
// a channel as step 3 sizes from pieces, here from turns; but a block's share of its channel is a
// run of the channel's vectors instead of its pieces. The channel's N planes of H x W / V vectors
// are counted plane after plane; block s of the channel takes vectors [s per, (s + 1) per) of them
// (per = ceil(N x H x W / V / slices)), and its warps take turns of 32 L vectors (L = K / V loads a
// lane, K = E::K_LONG values: 16 f32 or 32 bf16), warp w's turns starting at vectors w, w + WARPS,
// ... times 32 L of the run. Lane l's load k of a turn is the turn's vector 32 k + l, in whichever
// plane it falls: the lane finds the plane and the vector in it of its first load with one
// division, before its first turn (each next turn starts a fixed number of planes and vectors on,
// divided out once), and steps a pointer 32 vectors further for each next load, carrying over a
// plane's end by a test and a jump over the other channels' planes (a loop for planes of fewer than
// 32 vectors). A run's last turn may be short: a lane makes only its loads inside the run, and its
// other slots hold copies of a loaded value, which add nothing to the fold (lane_piece's rule).
//
// What changed from vectors: no turn is a plane's short last piece. A bf16 plane of 3136 was three
// pieces of 1024 and one of 64, so a quarter of a warp's turns loaded 64 elements with 8 of its
// lanes, and a plane of 196 f32 filled 196 of its piece's 256; now every turn but a run's last
// loads 32 K values, and each is folded at once.
//
// What it leaves slow: what step 4 left where DRAM is the limit: the folds' instructions and the
// finish (every block's ticket, then the last block's work). bf16's tensor, half of f32's bytes,
// falls furthest short: at 256 x 64 x 56 x 56 by about 13% of the read roof on an H100 and 17% on
// an H200, f32 by 7 to 9%. On the H200 the folds cost about 7 points of the read roof and the
// finish about 5; no block starts late and none straggles (scripts/lab/batch-stats/README.md).
//
// The kernels are step 4's `vectors` and step 3's `split` with FLAT: the run counted in vectors
// (batch x H x W / V), and walk_flat for walk.
//
// Launch: step 3's (slices from its turns, batch_stats::Nchw::turns), for a channel of at most 2^31
// - 1 elements (the launcher checks: vectors are counted in 32 bits).
//
// One lane's next load, 32 vectors further: past a plane's end, the same offset into the next plane
// of the channel (`jump` elements on from the end: the other channels' planes). With ONE_CARRY
// (planes of at least 32 vectors) at most one end is passed, a test and no loop.
template <int V, bool ONE_CARRY, class Word>
__device__ __forceinline__ void next_load(const Word*& p, unsigned int& r, unsigned int per_plane,
                                          size_t jump)
{
    p += 32 * V;
    r += 32;
    if (ONE_CARRY) {
        if (r >= per_plane) {
            r -= per_plane;
            p += jump;
        }
    } else {
        for (; r >= per_plane; r -= per_plane) {
            p += jump;
        }
    }
}

// (BLOCK_WARPS: the warps of the block, WARPS in every kernel here; a lab program,
// scripts/lab/batch-stats/cheaper-finish.cu, walks with blocks of another size.)
template <class E, int V, int K, bool ONE_CARRY, int BLOCK_WARPS = WARPS>
__device__ __forceinline__ Moments walk_flat_runs(const typename E::Word* __restrict__ in,
                                                  unsigned int c, unsigned int channels,
                                                  unsigned int plane, unsigned int first,
                                                  unsigned int last)
{
    typedef MomentsOf<float> Op;
    constexpr int L = K / V;
    const unsigned int per_plane = plane / V;           // vectors a plane
    const size_t jump = (size_t)(channels - 1) * plane; // from a plane's end to the next's start
    const typename E::Word* channel = in + (size_t)c * plane; // its first plane
    const unsigned int lane = threadIdx.x % 32;
    // This lane's first vector of its warp's first turn is vector r of plane n; each next turn is
    // `step` vectors on, `step_planes` planes and `step_rest` vectors (the divisions done once).
    constexpr unsigned int step = BLOCK_WARPS * 32 * L;
    const unsigned int step_planes = step / per_plane, step_rest = step - step_planes * per_plane;
    const unsigned int start = first + threadIdx.x / 32 * (32 * L) + lane;
    unsigned int n = start / per_plane, r_first = start - n * per_plane;
    Moments acc = Op::identity();
    for (unsigned int turn = first + threadIdx.x / 32 * (32 * L); turn < last; turn += step) {
        const unsigned int u = turn + lane; // this lane's first vector
        unsigned int r = r_first;
        const typename E::Word* p = channel + (size_t)n * channels * plane + r * V;
        n += step_planes;
        r_first += step_rest;
        if (r_first >= per_plane) {
            r_first -= per_plane;
            n++;
        }
        float x[K];
        if (turn + 32 * L <= last) {
            // A whole turn (all but a run's last): every lane makes its L loads, then folds.
#pragma unroll
            for (int k = 0; k < L; k++) {
                load_vector<E, V>(p, x + k * V);
                next_load<V, ONE_CARRY>(p, r, per_plane, jump);
            }
            acc = Op::combine(acc, fold_values<K>(x, K));
            continue;
        }
        // The run's last turn: a lane makes only its loads inside the run.
        const unsigned int inside = u < last ? (last - u + 31) / 32 : 0;
        const unsigned int mine = inside < (unsigned int)L ? inside : L;
        if (mine == 0) {
            continue;
        }
#pragma unroll
        for (int k = 0; k < L; k++) {
            if (k < (int)mine) {
                load_vector<E, V>(p, x + k * V);
                next_load<V, ONE_CARRY>(p, r, per_plane, jump);
            } else {
                // A copy of the first value of this slot's half (see fold_values).
                const float copy =
                    (K <= 16 || k * V < K / 2 || mine * V <= K / 2) ? x[0] : x[K / 2];
#pragma unroll
                for (int j = 0; j < V; j++) {
                    x[k * V + j] = copy;
                }
            }
        }
        acc = Op::combine(acc, fold_values<K>(x, mine * V));
    }
    return acc;
}

template <class E, int V, int K>
__device__ __forceinline__ Moments walk_flat(const typename E::Word* __restrict__ in,
                                             unsigned int c, unsigned int channels,
                                             unsigned int plane, unsigned int first,
                                             unsigned int last)
{
    if (plane / V >= 32) {
        return walk_flat_runs<E, V, K, true>(in, c, channels, plane, first, last);
    }
    return walk_flat_runs<E, V, K, false>(in, c, channels, plane, first, last);
}

// ANCHOR_END: flat

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    batch_stats_flat(const float* in, Moments* partial, unsigned int* ticket, float* mean,
                     float* var, unsigned int batch, unsigned int channels, unsigned int plane,
                     unsigned int slices, unsigned int correction)
{
    vectors<F32, true>(in, partial, ticket, mean, var, batch, channels, plane, slices, correction);
}
extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
    batch_stats_flat_bf16(const unsigned short* in, Moments* partial, unsigned int* ticket,
                          float* mean, float* var, unsigned int batch, unsigned int channels,
                          unsigned int plane, unsigned int slices, unsigned int correction)
{
    vectors<BF16, true>(in, partial, ticket, mean, var, batch, channels, plane, slices, correction);
}
