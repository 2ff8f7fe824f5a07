// bf16 layer and RMS norms (cuda/norms.cu, step 3) against a row held as the loaded words, timed in
// one run with the device copy of the same bytes. Before the first run, step 3's lane widened its
// 32 bf16 elements to f32 as they arrived: 32 registers of values, 64 a thread in all, four blocks
// of 256 an SM. A "packed" lane keeps the 16-byte vectors as loaded (16 registers) and widens an
// element each time it is used (a shift or a mask), so that more rows fit an SM at once: more bytes
// in flight while other rows reduce and write. The compiler is asked for 4, 5 or 6 blocks an SM.
// (The chapter now keeps its vectors as loaded, so "as the chapter" is the packed lane at four
// blocks; norms-bf16-tuning.txt says what the chapter was in each run.)
// The fifth and sixth runs try fewer instructions an element (a packed max, a folded write, a
// paired rounding) and two rows a group of lanes; the eighth, fewer instructions in the merges, for
// f32 rows too (see below); the twelfth, a layer norm's statistics taken unscaled first, and
// streaming loads and stores, both now the chapter's (see full_lanes).
// Every variant is checked against the chapter's kernel (within a bf16 ulp, or 2^-20 for f32);
// times are the median of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o bf16-packed-lanes scripts/lab/norms/bf16-packed-lanes.cu
//   ./bf16-packed-lanes
#include "../../../cuda/norms.cu"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/tuning.cuh"

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
// The folded write of LayerWith<_, true> with the chapter's statistics (the warp's scale): for the
// eleventh run's full lanes.
struct LayerFolded : Layer {
    __device__ static Affine affine(Moments s, unsigned int cols, float eps)
    {
        return LayerWith<BY_ELEMENT, true>::affine(s, cols, eps);
    }
    __device__ static float apply(float x, Affine a, float w, float b)
    {
        return LayerWith<BY_ELEMENT, true>::apply(x, a, w, b);
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
    const LaneOfRow at = lane_of_row(rows, cols, warps);
    const unsigned int lanes = at.lanes, lane = at.lane, len = at.len;
    const size_t offset = at.offset;
    const bool whole = aligned16(x + offset) && aligned16(y + offset) && aligned16(w) && (!N::HAS_BIAS || aligned16(b));
    Slots v;
    const int count = load_vectors<BF16>(x + offset, len, lane, lanes, whole, v);
    typename N::Op::Value state = thread_state<N>(v, count);
    state = row_reduce<typename N::Op>(state, warps);
    write_vectors<W, N>(v, len, lane, lanes, whole, w, b, y + offset, N::affine(state, cols, eps));
}

// ANCHOR: eighth_run
// The eighth run, after the H200 (ncu there: the bf16 layer norm of rows of 4096 executes 34.5
// million warp instructions against the RMS norm's 24.9 million, issuing in 80% of the cycles, at
// 74% of a copy): fewer instructions in the merges. Read from the SASS of step 3, each level of
// row_reduce's butterfly costs a full warp about 35 instructions for a layer norm (four shuffles,
// eight selects that put the lower lane's state first, the tests of MomentsOp::combine and its
// short path), and the merges across a row's warps take the general path, with a division where
// the counts differ. In a warp of full lanes at the warp's scale (thread_state's usual case) every
// lane holds the same n and e, so only mean and m2 (an RMS norm: the sum) need to move, and two
// such states merge symmetrically,
//
//   mean = (mean_a + mean_b) / 2,   m2 = (m2_a + m2_b) + d^2 n / 2,   d = mean_b - mean_a,
//
// whose every operation is commutative (d flips its sign between the pair, d^2 does not), so both
// lanes of a pair get the same bits without ordering them: two shuffles and five instructions a
// level. Three switches, each measured:
//   uniform     the butterfly above, in warps of full lanes (other rows: the chapter's kernel);
//   one pass    a lane's statistics in one sweep of its registers: s1 = sum t and s2 = sum t^2 with
//               t = x g - p, p the lane's first element (scaled), then mean = p + s1 / n and
//               m2 = s2 - s1^2 / n. p is one of the lane's own values, so (p - mean)^2 <= m2 and
//               s2 = m2 + n (p - mean)^2 <= (n + 1) m2: the cancellation costs at most a factor
//               n + 1 = 33 on f32's rounding, where the chapter's two sweeps read the registers
//               twice; a constant lane gives s1 = s2 = 0 exactly;
//   tree        the row's warps merged in pairs (equal counts at every level: no division) where
//               the chapter merges them in warp order.
// (Since the eighth run the chapter's step 3 has these merges: full_warp_merge, and across_warps in
// pairs, in <norm>_by_length_full. The switches below rebuild the run's variants from the
// chapter's pieces; "uniform" alone merges the row's warps in warp order, as the chapter did.)
template <class N>
struct OnePass;
template <>
struct OnePass<Layer> {
    // The lane's state in one sweep (see above); n = Slots::N.
    template <class Slots>
    __device__ static Moments of(const Slots& v, int e)
    {
        const float g = pow2(-e), pivot = v.get(0) * g;
        float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int s = 0; s < Slots::N; s++) {
            const float t = fmaf(v.get(s), g, -pivot);
            s1 += t;
            s2 = fmaf(t, t, s2);
        }
        const float shift = s1 * (1.0f / Slots::N); // N a power of two: exact
        Moments m = {(unsigned int)Slots::N, e, pivot + shift, fmaxf(fmaf(-s1, shift, s2), 0.0f)};
        return m;
    }
};
template <>
struct OnePass<Rms> {
    template <class Slots>
    __device__ static Scaled of(const Slots& v, int e) { return squares_of(v, Slots::N, e); }
};

// The row's warps' states (lane 0 of each parks its own), merged in warp order, as the chapter did
// before the eighth run.
template <class Op>
__device__ __forceinline__ typename Op::Value across_warps_in_order(typename Op::Value s, unsigned int warps)
{
    if (warps > 1) {
        const typename Op::Value* p = park_warp_states(s, warps);
        s = p[0];
        for (unsigned int k = 1; k < warps; k++) {
            s = Op::combine(s, p[k]);
        }
        __syncthreads();
    }
    return s;
}

// Step 3 for rows that fill every lane and start on 16-byte boundaries (cols = 32 lanes x
// LANE_ELEMENTS x warps: every shape here), with the switches above, for element E at the chapter's
// blocks an SM (MIN_BLOCKS: BF16_BLOCKS_PER_SM for bf16, none asked for f32). A launcher would send
// other rows to the chapter's kernel: with both paths in one kernel, ptxas spilled (58 to 174
// bytes). A lane past the last row reads nothing and merges zeros, which it never writes.
// (The eleventh run adds LARGEST, how a lane's largest magnitude is taken (largest_of above: bf16
// only for PACKED), and Slots, the lane's holding: Vectors<E>, or PackedAsm, which widens an
// element afresh at each use.)
template <class E, class N, bool ONE_PASS, bool TREE, int MIN_BLOCKS, int LARGEST = BY_ELEMENT,
          class Slots = Vectors<E> >
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    uniform(const typename E::Word* x, const typename E::Word* w, const typename E::Word* b, typename E::Word* y,
            unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    const LaneOfRow at = lane_of_row(rows, cols, warps);
    const unsigned int lanes = at.lanes, lane = at.lane, len = at.len;
    const size_t offset = at.offset;
    Slots v;
    load_vectors<E>(x + offset, len, lane, lanes, true, v);
    const int e = scale_of(warp_largest(largest_of(v, Slots::N, LARGEST)));
    typename N::Op::Value state;
    if constexpr (ONE_PASS) {
        state = full_warp_merge(OnePass<N>::of(v, e));
    } else {
        state = full_warp_merge(N::of(v, Slots::N, e));
    }
    state = TREE ? across_warps<typename N::Op>(state, warps) : across_warps_in_order<typename N::Op>(state, warps);
    write_vectors<E, N>(v, len, lane, lanes, true, w, b, y + offset, N::affine(state, cols, eps));
}
// ANCHOR_END: eighth_run

// The twelfth run: the chapter's step 3 for rows that fill every lane, before and after this run's
// two changes, each alone (full_lanes below):
//   unscaled   the bf16 layer norm's statistics unscaled first, scaled only where the row fails
//              their test (cuda/norms.cu, unscaled_full_lanes): one sweep of the registers before
//              the merges where the scaled path takes three (the largest magnitude and the warp's
//              maxima, the mean, the squares);
//   stream     the row's loads and the output's stores marked as streaming (ld.global.cs and
//              st.global.cs, __ldcs and __stcs).
// The run began with its own kernel (`folded`, below): the unscaled statistics, the write folded
// to (x f - mean f) w + b, two instructions an element, and the failing rows in a function of
// their own; then with its loads and stores marked; then with switches, to find what the chapter,
// which the CPU simulator runs, can take: it runs neither calls nor bar.red (__syncthreads_or).
// The chapter took the unscaled statistics and the marks, not the fold, which needs |mean| <=
// 2^10 x the spread for bf16 outputs (f32 outputs came out 2e-4 off for rows of 1e4 + N(0, 1)) and
// a verdict of its own.
template <class E, class N, bool STREAM, bool UNSCALED, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    full_lanes(const typename E::Word* x, const typename E::Word* w, const typename E::Word* b, typename E::Word* y,
               unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    if constexpr (UNSCALED && N::HAS_BIAS) {
        unscaled_full_lanes<E, STREAM>(x, w, b, y, rows, cols, eps, warps);
    } else {
        by_length<E, N, FULL_LANES, STREAM>(x, w, b, y, rows, cols, eps, warps);
    }
}

// The folded write's verdict: unscaled_passes, and |mean| <= 2^10 x the spread (the fold rounds
// mean f, an error of about |mean| / spread x 2^-24 on outputs of about 1, which a bf16 output's
// rounding, 2^-9, hides).
__device__ __forceinline__ bool folded_passes(Moments s, unsigned int cols)
{
    return unscaled_passes(s, cols) && s.mean * s.mean <= 1048576.0f * (s.m2 / (float)cols);
}

// A failing row's scaled path, on the row loaded again, in a function of its own: inlined, ptxas
// spilled the passing rows' path (164 bytes at 48 registers); here only failing rows pay.
template <class E>
__device__ __noinline__ void scaled_again(const typename E::Word* x, const typename E::Word* w,
                                          const typename E::Word* b, typename E::Word* y, unsigned int len,
                                          unsigned int lane, unsigned int lanes, unsigned int cols, float eps,
                                          unsigned int warps)
{
    Vectors<E> v;
    load_vectors<E>(x, len, lane, lanes, true, v);
    const Moments state = across_warps<MomentsOp>(full_warp_merge(full_lane_state<Layer>(v)), warps);
    write_vectors<E, Layer>(v, len, lane, lanes, true, w, b, y, Layer::affine(state, cols, eps));
}

// "unscaled, folded, stream": the unscaled statistics (one sweep about the lane's first element,
// merged as the chapter's), the block's verdict by __syncthreads_or, and a passing row written as
// (x f - mean f) w + b, f = 1 / sqrt(var + eps), loads and stores streaming. Layer norm, full lanes.
// (Switches, to find what the chapter can take of it: FOLD, the folded write, else (x - mean) f w +
// b; CALL, the failing rows' path in a function of its own (scaled_again), else inline on the row
// loaded again; OR_BARRIER, the block's verdict by __syncthreads_or, else by a flag in shared memory
// as the chapter's unscaled_full_lanes takes it; MARKS, which accesses are marked streaming: 1 the
// loads, 2 the stores, 3 both.)
template <class E, int MIN_BLOCKS, bool FOLD = true, bool CALL = true, bool OR_BARRIER = true, int MARKS = 3>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    folded(const typename E::Word* x, const typename E::Word* w, const typename E::Word* b, typename E::Word* y,
           unsigned int rows, unsigned int cols, float eps, unsigned int warps)
{
    const LaneOfRow at = lane_of_row(rows, cols, warps);
    const unsigned int lanes = at.lanes, lane = at.lane, len = at.len;
    const size_t offset = at.offset;
    Vectors<E> v;
    load_vectors<E, (MARKS & 1) != 0>(x + offset, len, lane, lanes, true, v);
    Moments state = full_warp_merge(unscaled_lane_moments(v));
    auto passing = [&](Moments m) { return FOLD ? folded_passes(m, cols) : unscaled_passes(m, cols); };
    bool fails = len != 0 && !passing(state);
    if (warps > 1) {
        __shared__ int block_fails;
        if (!OR_BARRIER && threadIdx.x == 0) block_fails = 0;
        const Moments* p = park_warp_states(state, warps);
        state = merge_equal(p[0], p[1]);
        if (warps >= 4) state = merge_equal(state, merge_equal(p[2], p[3]));
        if (warps == 8) state = merge_equal(state, merge_equal(merge_equal(p[4], p[5]), merge_equal(p[6], p[7])));
        if (OR_BARRIER) {
            fails = __syncthreads_or(len != 0 && !passing(state));
        } else {
            if (len != 0 && !passing(state)) block_fails = 1;
            __syncthreads();
            fails = block_fails != 0;
        }
    }
    if (fails) {
        if (CALL) {
            scaled_again<E>(x + offset, w, b, y + offset, len, lane, lanes, cols, eps, warps);
        } else {
            load_vectors<E, false>(x + offset, len, lane, lanes, true, v);
            state = across_warps<MomentsOp>(full_warp_merge(full_lane_state<Layer>(v)), warps);
            write_vectors<E, Layer>(v, len, lane, lanes, true, w, b, y + offset, Layer::affine(state, cols, eps));
        }
        return;
    }
    if (len == 0) return;
    const float factor = inverse_deviation(state.m2 / (float)cols, 0, eps);
    const float scaled_mean = FOLD ? state.mean * factor : state.mean;
#pragma unroll
    for (int k = 0; k < Vectors<E>::VECTORS; k++) {
        const unsigned int vector = k * lanes + lane;
        const uint4 wq = reinterpret_cast<const uint4*>(w)[vector], bq = reinterpret_cast<const uint4*>(b)[vector];
        float out[E::PER_VEC];
#pragma unroll
        for (int j = 0; j < E::PER_VEC; j++) {
            const float xj = v.get(k * E::PER_VEC + j);
            out[j] = FOLD ? fmaf(fmaf(xj, factor, -scaled_mean), E::element(wq, j), E::element(bq, j))
                          : fmaf((xj - scaled_mean) * factor, E::element(wq, j), E::element(bq, j));
        }
        if (MARKS & 2) {
            __stcs(reinterpret_cast<uint4*>(y + offset) + vector, E::pack(out));
        } else {
            reinterpret_cast<uint4*>(y + offset)[vector] = E::pack(out);
        }
    }
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

// The eighth run's kernels for element E (bf16 at the chapter's BF16_BLOCKS_PER_SM; f32, whose
// chapter kernels ask for none, at none; BLOCKS, where given, instead), launched through Launch,
// whose pointers then hold E's words.
template <class E, class N, bool ONE_PASS, bool TREE, int BLOCKS = 0, int LARGEST = BY_ELEMENT,
          class Slots = Vectors<E> >
static Variant make_uniform(std::string name)
{
    typedef typename E::Word Word;
    auto kernel = uniform<E, N, ONE_PASS, TREE, BLOCKS != 0 ? BLOCKS : sizeof(Word) == 2 ? BF16_BLOCKS_PER_SM : 1,
                          LARGEST, Slots>;
    return described(name, kernel, [kernel](In x, In w, In b, Out y, Shape s) {
        kernel<<<grid_for(s), THREADS>>>((const Word*)x, (const Word*)w, (const Word*)b, (Word*)y, s.rows, s.cols,
                                         1e-5f, warps_for(s.cols));
        CHECK(cudaGetLastError());
    });
}

// The twelfth run's kernels for element E (bf16 at the chapter's BF16_BLOCKS_PER_SM, f32 at
// none), launched through Launch.
template <class E, class K>
static Variant make_full(std::string name, K kernel)
{
    typedef typename E::Word Word;
    return described(name, kernel, [kernel](In x, In w, In b, Out y, Shape s) {
        kernel<<<grid_for(s), THREADS>>>((const Word*)x, (const Word*)w, (const Word*)b, (Word*)y, s.rows, s.cols,
                                         1e-5f, warps_for(s.cols));
        CHECK(cudaGetLastError());
    });
}
template <class E, class N, bool STREAM, bool UNSCALED>
static Variant make_full(std::string name)
{
    return make_full<E>(name, full_lanes<E, N, STREAM, UNSCALED,
                                         sizeof(typename E::Word) == 2 ? BF16_BLOCKS_PER_SM : 1>);
}

// Step 3's own kernels (layer_norm_by_length[_full][_bf16], rms_norm_by_length[_full][_bf16]),
// `Word` the element's word.
template <class Word>
static Variant chapter_layer(void (*kernel)(const Word*, const Word*, const Word*, Word*, unsigned int, unsigned int,
                                            float, unsigned int),
                             std::string name = "chapter")
{
    return described(name, kernel, [kernel](In x, In w, In b, Out y, Shape s) {
        kernel<<<grid_for(s), THREADS>>>((const Word*)x, (const Word*)w, (const Word*)b, (Word*)y, s.rows, s.cols,
                                         1e-5f, warps_for(s.cols));
        CHECK(cudaGetLastError());
    });
}
template <class Word>
static Variant chapter_rms(void (*kernel)(const Word*, const Word*, Word*, unsigned int, unsigned int, float,
                                          unsigned int),
                           std::string name = "chapter")
{
    return described(name, kernel, [kernel](In x, In w, In, Out y, Shape s) {
        kernel<<<grid_for(s), THREADS>>>((const Word*)x, (const Word*)w, (Word*)y, s.rows, s.cols, 1e-5f,
                                         warps_for(s.cols));
        CHECK(cudaGetLastError());
    });
}

struct Family {
    const char* name;
    std::vector<Variant> variants; // the chapter's first
};

// Element i of a buffer of bf16 (word 2) or f32 (word 4) words, as f32.
static float element_value(const std::vector<unsigned char>& bytes, size_t i, size_t word)
{
    if (word == 2) {
        unsigned short h;
        std::memcpy(&h, &bytes[i * 2], 2);
        return host_bf16_value(h);
    }
    float f;
    std::memcpy(&f, &bytes[i * 4], 4);
    return f;
}

// What against_first found for one variant: how many elements differ from the family's first
// variant's output, the first of them, and both outputs' values there.
struct Compared {
    size_t wrong, first;
    float got, want;
};

// Every variant of `f` on shape s, from a poisoned output, against the family's first variant's
// output (within a bf16 ulp, or 2^-20 for f32; a NaN matching a NaN where nan_equal), then
// after(variant, what was found).
template <class After>
static void against_first(Family& f, Shape s, size_t word, const unsigned short* x, const unsigned short* w,
                          const unsigned short* b, unsigned short* y, unsigned short* expected, bool nan_equal,
                          After after)
{
    const size_t m = (size_t)s.rows * s.cols;
    std::vector<unsigned char> got(m * word), want(m * word);
    const float ulp = word == 2 ? 1.0f / 128 : 1.0f / (1 << 20);
    CHECK(cudaMemset(expected, 0xff, m * word));
    f.variants[0].launch(x, w, b, expected, s);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(want.data(), expected, m * word, cudaMemcpyDeviceToHost));
    for (Variant& v : f.variants) {
        CHECK(cudaMemset(y, 0xff, m * word));
        v.launch(x, w, b, y, s);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(got.data(), y, m * word, cudaMemcpyDeviceToHost));
        Compared c = {0, m, 0.0f, 0.0f};
        for (size_t i = 0; i < m; ++i) {
            const float g = element_value(got, i, word), e = element_value(want, i, word);
            const bool same =
                nan_equal && std::isnan(e) ? std::isnan(g) : std::fabs(g - e) <= std::fabs(e) * ulp + 1e-6f;
            if (!same && c.wrong++ == 0) c = {1, i, g, e};
        }
        after(v, c);
    }
}

// Every family at every shape: the copy of the same bytes, then each variant checked against the
// family's first (within a bf16 ulp, or 2^-20 for f32) and timed. `word` is 2 (bf16) or 4 (f32).
static void measure(const char* type, size_t word, const unsigned short* x, const unsigned short* w,
                    const unsigned short* b, unsigned short* y, unsigned short* expected, std::vector<Family>& families,
                    const std::vector<Shape>& shapes)
{
    for (const Shape& s : shapes) {
        const size_t m = (size_t)s.rows * s.cols;
        const double copy = median_ms([&] { CHECK(cudaMemcpyAsync(y, x, m * word, cudaMemcpyDeviceToDevice)); });
        std::printf("%s %u x %u: copy %.4f ms\n", type, s.rows, s.cols, copy);
        for (Family& f : families) {
            against_first(f, s, word, x, w, b, y, expected, false, [&](Variant& v, const Compared& c) {
                const double ms = median_ms([&] { v.launch(x, w, b, y, s); });
                std::printf("  %-10s %-36s %3d regs %d/SM %8.4f ms %6.1f%% of copy%s\n", f.name, v.name.c_str(), v.regs,
                            v.blocks_per_sm, ms, 100.0 * copy / ms, c.wrong ? "  WRONG" : "");
                std::fflush(stdout);
            });
        }
    }
}

// The twelfth run's check of the rows the optimistic path must hand to the scaled one, or must
// get right itself: 64 rows of `cols`, each of a kind (plain, constant, an infinity, a NaN,
// magnitudes of 1e30 and 3e38, 1e-30 and subnormals, a mean of 1e4 with a spread of 1, one
// outlier), every variant of each family against its first, NaN where NaN.
static void check_special(const char* type, size_t word, unsigned cols, unsigned short* x, const unsigned short* w,
                          const unsigned short* b, unsigned short* y, unsigned short* expected,
                          std::vector<Family>& families)
{
    const unsigned rows = 64;
    const size_t m = (size_t)rows * cols;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(m);
    for (unsigned r = 0; r < rows; r++) {
        const int kind = r % 16;
        for (unsigned c = 0; c < cols; c++) {
            float z = normal(rng), value = z;
            if (kind == 1) value = 0.1f;
            if (kind == 2) value = c == 77 ? INFINITY : z;
            if (kind == 3) value = c == 1000 ? NAN : z;
            if (kind == 4) value = 1e30f * z;
            if (kind == 5) value = 3e38f * std::tanh(z);
            if (kind == 6) value = 1e-30f * z;
            if (kind == 7) value = 1e-41f * z;
            if (kind == 8) value = 1e4f + z;
            if (kind == 9) value = c == 5 ? 1e6f : z;
            if (kind == 10) value = c == 0 ? -INFINITY : z;
            if (kind == 11) value = 1e19f * z;
            if (kind == 12) value = 2e-19f * z;
            v[r * (size_t)cols + c] = value;
        }
    }
    std::vector<unsigned char> bytes(m * word);
    for (size_t i = 0; i < m; i++) {
        if (word == 2) {
            const unsigned short h = host_to_bf16(v[i]);
            std::memcpy(&bytes[i * 2], &h, 2);
        } else {
            std::memcpy(&bytes[i * 4], &v[i], 4);
        }
    }
    CHECK(cudaMemcpy(x, bytes.data(), m * word, cudaMemcpyHostToDevice));
    const Shape s = {rows, cols};
    for (Family& f : families) {
        against_first(f, s, word, x, w, b, y, expected, true, [&](Variant& v, const Compared& c) {
            std::printf("  special %s %u x %u %-10s %-30s %s", type, rows, cols, f.name, v.name.c_str(),
                        c.wrong ? "WRONG" : "same as the first");
            if (c.wrong) {
                std::printf(" (%zu elements; first: row %zu (kind %zu) col %zu: %g against %g)", c.wrong,
                            c.first / cols, c.first / cols % 16, c.first % cols, c.got, c.want);
            }
            std::printf("\n");
        });
    }
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const size_t n = 1ull << 26; // every shape holds 2^25 or 2^26 elements
    std::vector<unsigned short> host(n), weights(8192);
    std::vector<float> host_f32(n), weights_f32(8192);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.25f, 1.5f);
    for (size_t i = 0; i < n; i++) {
        host_f32[i] = normal(rng);
        host[i] = host_to_bf16(host_f32[i]);
    }
    for (size_t i = 0; i < 8192; i++) {
        weights_f32[i] = 1.0f + 0.1f * normal(rng);
        weights[i] = host_to_bf16(weights_f32[i]);
    }
    // Device buffers of f32's size; the bf16 runs use their first half.
    unsigned short *x, *w, *b, *y, *expected;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    CHECK(cudaMalloc(&expected, n * 4));
    CHECK(cudaMalloc(&w, 8192 * 4));
    CHECK(cudaMalloc(&b, 8192 * 4));
    CHECK(cudaMemcpy(x, host.data(), n * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(w, weights.data(), 8192 * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, weights.data() + 17, 4096 * 2, cudaMemcpyHostToDevice));

    std::vector<Family> families;
    // (The fourth run's variants: make<Layer, Packed, 4>("packed, 4 blocks/SM asked"), PackedAsm,
    // Packed64 and so on; Lane below is Vectors<BF16>.)
    // (The fifth run's: make<Layer, Lane, 5, BF16Pair>("pair pack"), make<LayerWith<PACKED>, Lane,
    // 5>("packed max") and their pairs; the sixth run's: make<LayerWith<BY_ELEMENT, true>, Lane,
    // 5>("folded"), make<LayerWith<UPPER_AS_WORD>, Lane, 5>("upper as word"),
    // make_two_rows<Layer, 4>("two rows a group, 4 blocks/SM") and their pairs.)
    // (The seventh run's: make<LayerWith<BY_ELEMENT>, Lane, 5>("each lane its own scale"),
    // make<LayerWith<BY_ELEMENT, true>, Lane, 5>("own scale, folded") and the RMS norm's.)
    // (The eighth run's: the chapter's by_length against make_uniform's four switches, for the RMS
    // norm "uniform" and "uniform, tree".)
    // (The ninth run's: the chapter's two kernels for these rows, chapter_layer(
    // layer_norm_by_length_bf16, "chapter, any row") first, then the full lanes, "uniform, tree"
    // (the chapter's full-lanes kernel rebuilt: a check of the harness) and "uniform, one pass,
    // tree"; the RMS norm's likewise.) (The tenth's, for f32: the layer norm's full lanes at four
    // blocks an SM, make_uniform<F32, Layer, false, true, 4>, 64 registers, where the chapter's take
    // 74: three.) (The eleventh's, bf16: make_uniform<BF16, Layer, false, true, 0, PACKED> ("packed
    // max": the largest magnitude taken on the loaded words), with PackedAsm (each element widened
    // afresh at each use), with 4 blocks an SM, and with LayerFolded (the folded write).) The
    // twelfth, here: the chapter's full lanes before and after this run's changes, each alone (see
    // full_lanes), and the folded write; every variant is checked against the family's first, on
    // the special rows of check_special too.
    families.push_back({"layer norm",
                        {chapter_layer(layer_norm_by_length_full_bf16, "chapter, full lanes"),
                         make_full<BF16, Layer, false, false>("before: scaled, no stream"),
                         make_full<BF16, Layer, true, false>("scaled, stream"),
                         make_full<BF16, Layer, false, true>("unscaled, no stream"),
                         make_full<BF16>("unscaled, stream, 4/SM", full_lanes<BF16, Layer, true, true, 4>),
                         make_full<BF16>("unscaled, stream, 6/SM", full_lanes<BF16, Layer, true, true, 6>),
                         make_full<BF16>("unscaled, folded, stream", folded<BF16, BF16_BLOCKS_PER_SM>),
                         make_full<BF16>("  the same, inline", folded<BF16, BF16_BLOCKS_PER_SM, true, false>),
                         make_full<BF16>("  the same, inline, flag",
                                         folded<BF16, BF16_BLOCKS_PER_SM, true, false, false>),
                         make_full<BF16>("  not folded", folded<BF16, BF16_BLOCKS_PER_SM, false>),
                         make_full<BF16>("  not folded, inline, flag",
                                         folded<BF16, BF16_BLOCKS_PER_SM, false, false, false>),
                         make_full<BF16>("  not folded, inline, flag, loads marked",
                                         folded<BF16, BF16_BLOCKS_PER_SM, false, false, false, 1>),
                         make_full<BF16>("  not folded, inline, flag, stores marked",
                                         folded<BF16, BF16_BLOCKS_PER_SM, false, false, false, 2>),
                         make_full<BF16>("  not folded, inline, flag, none marked",
                                         folded<BF16, BF16_BLOCKS_PER_SM, false, false, false, 0>)}});
    families.push_back({"rms norm",
                        {chapter_rms(rms_norm_by_length_full_bf16, "chapter, full lanes"),
                         make_full<BF16, Rms, false, false>("before: no stream")}});
    for (unsigned cols : {1024u, 4096u}) check_special("bf16", 2, cols, x, w, b, y, expected, families);
    CHECK(cudaMemcpy(x, host.data(), n * 2, cudaMemcpyHostToDevice));
    measure("bf16", 2, x, w, b, y, expected, families, {{8192, 4096}, {65536, 1024}, {16384, 4096}});

    CHECK(cudaMemcpy(x, host_f32.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(w, weights_f32.data(), 8192 * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, weights_f32.data() + 17, 4096 * 4, cudaMemcpyHostToDevice));
    std::vector<Family> f32 = {{"layer norm",
                                {chapter_layer(layer_norm_by_length_full, "chapter, full lanes"),
                                 make_full<F32, Layer, false, false>("before: scaled, no stream"),
                                 make_full<F32, Layer, true, false>("scaled, stream"),
                                 make_full<F32, Layer, false, true>("unscaled, no stream")}},
                               {"rms norm",
                                {chapter_rms(rms_norm_by_length_full, "chapter, full lanes"),
                                 make_full<F32, Rms, false, false>("before: no stream")}}};
    for (unsigned cols : {1024u, 4096u}) check_special("f32", 4, cols, x, w, b, y, expected, f32);
    CHECK(cudaMemcpy(x, host_f32.data(), n * 4, cudaMemcpyHostToDevice));
    measure("f32", 4, x, w, b, y, expected, f32, {{8192, 4096}, {65536, 1024}});
    return 0;
}
