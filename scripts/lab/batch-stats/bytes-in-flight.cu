// Batch-norm statistics (cuda/batch_stats.cu, step 4) against wider pieces, timed in one run with a
// streaming read of the same bytes (cuda/roofs.cu's): how many bytes a lane should have in flight.
// Step 4 cuts a channel's planes into pieces of 32 x 16 elements, 16 values a lane: 64 bytes of
// f32 but only 32 of bf16, so a bf16 lane has half the bytes in flight between its folds. A
// "wide" variant takes pieces of 32 x 32, a lane's 32 values loaded at once and folded as two
// halves of 16 (moments_of<16> twice, then Chan's combination), at the same 64 registers. And the
// grid: one wave of C x slices blocks (the chapter's rule), or two. And (the third run) where the
// time beyond the read roof goes: the kernel without its finish, without its folds, without both;
// (the fourth and fifth runs) cheaper finishes, one warp's or a cluster's, and the pieces dealt to
// the warps in rotation; (the sixth and seventh) the slices' planes interleaved, and the next
// piece's loads issued before the fold of this one; (the eighth) a slice walked as one stream of
// vectors across its planes, and the pieces streamed through shared memory by bulk copies.
// Every variant is checked against the chapter's kernel (means and variances within 1e-5
// relative); times are the median of 15 batches of CUDA-event timings, as in the tour.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o bytes-in-flight scripts/lab/batch-stats/bytes-in-flight.cu
//   ./bytes-in-flight
#include "../../../cuda/batch_stats.cu"
#include "../common/read-roof.cuh"
#include "../../../cuda/bulk_copy.cuh"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../common/tuning.cuh"

// The same for bf16 pieces of 32 x K (K = 32 or 64), the lane's vectors kept as loaded (K / 2
// registers) and widened 16 values at a time, each 16 folded by moments_of<16> and combined.
template <int K>
__device__ __forceinline__ Moments lane_piece_packed(const unsigned short* __restrict__ piece, unsigned int len,
                                                     unsigned int lane)
{
    typedef MomentsOf<float> Op;
    Moments acc = Op::identity();
    if (len == 32 * K) {
        uint4 q[K / 8];
#pragma unroll
        for (int k = 0; k < K / 8; k++) {
            q[k] = *reinterpret_cast<const uint4*>(piece + load_at<8>(k, lane));
        }
#pragma unroll
        for (int h = 0; h < K / 16; h++) {
            float x[16];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                BF16::unpack(word(q[2 * h], i), x + 2 * i);
                BF16::unpack(word(q[2 * h + 1], i), x + 8 + 2 * i);
            }
            acc = Op::combine(acc, moments_of<16>(x, 16));
        }
        return acc;
    }
#pragma unroll
    for (int h = 0; h < K / 16; h++) {
        const unsigned int begin = h * 512, sub = len > begin ? min(len - begin, 512u) : 0u;
        acc = Op::combine(acc, lane_piece<BF16, 8, 16>(piece + begin, sub, lane));
    }
    return acc;
}

// A lane's accumulator of a piece of 32 x K elements: the chapter's lane_piece (K = 16, or "wide",
// K = 32: f32 values folded as two halves), or packed (bf16, K = 32 or 64).
template <class E, int K, bool PACKED>
__device__ __forceinline__ Moments piece_variant(const typename E::Word* __restrict__ piece, unsigned int len,
                                                 unsigned int lane)
{
    if constexpr (PACKED) return lane_piece_packed<K>(piece, len, lane);
    else return lane_piece<E, E::MAX_VEC, K>(piece, len, lane); // K = 32: two halves of 16, as the chapter's bf16
}

// Step 4 (planes a multiple of the vector), with pieces of 32 x K.
// Where step 4's time goes beyond the read roof (the third run): the same kernel with parts taken
// away, timed but not checked (their statistics are not the channel's).
//   NO_FINISH   each block writes its accumulator and leaves: no fence, no ticket, no last block;
//   LOADS_ONLY  a whole piece's values are loaded and added up, not folded (the pieces' tails, a
//               few elements each, still folded).
//   ACQ_REL     the finish with one atom.add.acq_rel.gpu for the ticket in place of a fence before
//               it and another after it (the partial is published by the release, the last block's
//               reads ordered by the acquire).
//   WARP_FINISH (the fourth run) the chapter's ticket, and the last block combines the partials in
//               its first warp only (slices <= 32): one warp reduction, no barrier, where the
//               chapter's finish runs a block reduction over 256 threads of which `slices` hold one;
//   CLUSTER     (the fourth run) a channel's slices launched as one thread block cluster (slices
//               <= 8): each block's thread 0 stores its accumulator into a slot of block 0's shared
//               memory (st.shared::cluster), the cluster waits at its barrier, and block 0's first
//               warp combines the slots in rank order: no global partials, fence or ticket.
//   ROTATE      (the fifth run) the pieces dealt to the warps in rounds of WARPS, warp w taking
//               piece (w + round) % WARPS of each round, where the chapter's warp w takes piece w
//               of every round: a plane of per_plane pieces, per_plane a divisor of WARPS (bf16
//               planes of 3136 are 4 pieces, f32 planes of 784 are 2), otherwise leaves every
//               plane's short last piece to the same warps (3 and 7, or 1, 3, 5 and 7).
//   INTERLEAVE  (the sixth run) slice s of a channel takes its planes s, s + slices, s + 2 slices, ...
//               where the chapter's takes a run of consecutive planes: at any moment the blocks of
//               the wave read a few consecutive images of the batch, a window that moves through
//               the tensor front to back as a streaming read's does, where the chapter's blocks read
//               from `slices` places far apart.
//   PREFETCH    (the seventh run) a warp issues the loads of its next piece before it folds the one
//               it holds (where the next is a whole piece): two pieces' bytes in flight a lane
//               while it folds, where the chapter's lane loads a piece, waits, folds, and only then
//               loads the next.
//   FLAT        (the eighth run) a slice's planes walked as one stream of 16-byte vectors, plane
//               after plane: a warp's load k takes vectors 32 k + lane of its chunk wherever they
//               fall, across a plane's end, so that no piece is a plane's short tail (bf16 planes of
//               3136 are three pieces of 1024 and one of 64, a quarter of a warp's turns with 8 of
//               its lanes loading); vector u of the slice is vector u % (plane / V) of its plane
//               u / (plane / V). Planes a multiple of the vector, the tensor 16-byte aligned.
//   STEPPED     (the tenth run, with FLAT) the same vectors, with one division a lane a piece
//               where FLAT divides at every load: the plane and the vector in it of the lane's
//               first load, then 32 vectors further for each next load, carried over the plane's
//               end by a subtraction.
enum { FULL = 0, NO_FINISH = 1, LOADS_ONLY = 2, ACQ_REL = 4, WARP_FINISH = 8, CLUSTER = 16, ROTATE = 32, INTERLEAVE = 64,
       PREFETCH = 128, FLAT = 256, STEPPED = 512 };

// A whole piece's accumulator from its K / V loaded 16-byte vectors (the lane's values in the
// chapter's order, so the same bits as lane_piece): f32 folded at once, bf16 as two halves of 16.
template <class E, int K>
__device__ __forceinline__ Moments fold_loaded(const uint4* q)
{
    constexpr int V = E::MAX_VEC;
    if constexpr (K > 16) {
        typedef MomentsOf<float> Op;
        Moments acc = Op::identity();
#pragma unroll
        for (int h = 0; h < K / 16; h++) {
            float x[16];
#pragma unroll
            for (int i = 0; i < 16 / V; i++) {
#pragma unroll
                for (int w = 0; w < 4; w++) E::unpack(word(q[h * (16 / V) + i], w), x + i * V + w * E::PER_WORD);
            }
            acc = Op::combine(acc, moments_of<16>(x, 16));
        }
        return acc;
    } else {
        float x[K];
#pragma unroll
        for (int k = 0; k < K / V; k++) {
#pragma unroll
            for (int w = 0; w < 4; w++) E::unpack(word(q[k], w), x + k * V + w * E::PER_WORD);
        }
        return moments_of<K>(x, K);
    }
}

// finish_channel with the last block's combination in one warp (slices <= 32): the chapter's
// finish_channel since the fourth run (this program's own copy of it then).
__device__ __forceinline__ void finish_warp(Moments acc, Moments* __restrict__ partial, unsigned int* __restrict__ ticket,
                                            unsigned int slices, unsigned int slice, unsigned int c,
                                            float* __restrict__ mean, float* __restrict__ var)
{
    finish_channel(acc, partial, ticket, slices, slice, c, 1, mean, var);
}

// The finish of a channel whose `slices` blocks are one cluster (slices <= 8), block r of it
// holding slice r.
__device__ __forceinline__ void finish_cluster(Moments acc, unsigned int slices, unsigned int c,
                                               float* __restrict__ mean, float* __restrict__ var)
{
    typedef MomentsOf<float> Op;
    __shared__ Moments slots[8];
    acc = block_reduce<Op>(acc);
    unsigned int rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) {
        const unsigned int here = (unsigned int)__cvta_generic_to_shared(&slots[rank]);
        unsigned int there;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(there) : "r"(here));
        asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(there), "l"(acc.count) : "memory");
        asm volatile("st.shared::cluster.v2.f32 [%0+8], {%1, %2};" ::"r"(there), "f"(acc.mean), "f"(acc.m2) : "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    if (rank == 0 && threadIdx.x < 32) {
        Moments total = threadIdx.x < slices ? slots[threadIdx.x] : Op::identity();
        total = warp_reduce<Op>(total);
        if (threadIdx.x == 0) write_stats(total, c, 1, mean, var);
    }
}

// finish_channel (cuda/batch_stats.cu) with the ticket taken by one acq_rel atomic, no fences.
__device__ __forceinline__ void finish_acq_rel(Moments acc, Moments* __restrict__ partial,
                                               unsigned int* __restrict__ ticket, unsigned int slices,
                                               unsigned int slice, unsigned int c, float* __restrict__ mean,
                                               float* __restrict__ var)
{
    typedef MomentsOf<float> Op;
    __shared__ bool is_last;
    acc = block_reduce<Op>(acc);
    if (threadIdx.x == 0) {
        partial[slice] = acc;
        unsigned int arrived;
        asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(arrived) : "l"(ticket) : "memory");
        is_last = arrived == slices - 1;
    }
    __syncthreads();
    if (is_last) {
        Moments total = Op::identity();
        for (unsigned int i = threadIdx.x; i < slices; i += blockDim.x) {
            total = Op::combine(total, load_from_l2(&partial[i]));
        }
        total = block_reduce<Op>(total);
        if (threadIdx.x == 0) {
            write_stats(total, c, 1, mean, var);
            *ticket = 0;
        }
    }
}

template <class E, int K>
__device__ __forceinline__ Moments loads_only(const typename E::Word* __restrict__ piece, unsigned int len,
                                              unsigned int lane)
{
    constexpr int V = E::MAX_VEC;
    if (len != 32 * K) return lane_piece<E, V, K>(piece, len, lane);
    float x[K];
#pragma unroll
    for (int k = 0; k < K / V; k++) load_vector<E, V>(piece + load_at<V>(k, lane), x + k * V);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < K; i++) sum += x[i];
    return Moments{(unsigned long long)K, sum, 0.0f};
}

template <class E, int K, bool PACKED, int MIN_BLOCKS, int MODE = FULL>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    variant(const typename E::Word* in, Moments* partial, unsigned int* ticket, float* mean, float* var,
            unsigned int batch, unsigned int channels, unsigned int plane, unsigned int slices)
{
    typedef MomentsOf<float> Op;
    const unsigned int c = blockIdx.x / slices, slice = blockIdx.x % slices;
    const unsigned int per_plane = (plane + 32 * K - 1) / (32 * K);
    const unsigned int pieces = batch * per_plane;
    const unsigned int per_slice = (pieces + slices - 1) / slices;
    const unsigned int interleaved_planes = batch > slice ? (batch - slice + slices - 1) / slices : 0;
    const unsigned int first = (MODE & INTERLEAVE) != 0 ? 0 : slice * per_slice < pieces ? slice * per_slice : pieces;
    const unsigned int last = (MODE & INTERLEAVE) != 0    ? interleaved_planes * per_plane
                              : pieces - first < per_slice ? pieces
                                                           : first + per_slice;
    const unsigned int lane = threadIdx.x % 32;
    Moments acc = Op::identity();
    const unsigned int warp = threadIdx.x / 32;
    if constexpr ((MODE & PREFETCH) != 0) {
        constexpr int V = E::MAX_VEC, L = K / V;
        auto piece_at = [&](unsigned int p, unsigned int& len) {
            const unsigned int n = per_plane == 1 ? p : p / per_plane;
            const unsigned int begin = (p - n * per_plane) * (32 * K);
            len = plane - begin < 32 * K ? plane - begin : 32 * K;
            return in + ((size_t)n * channels + c) * plane + begin;
        };
        uint4 next[L];
        bool have_next = false;
        unsigned int p = first + warp;
        if (p < last) {
            unsigned int len;
            const typename E::Word* at = piece_at(p, len);
            if (len == 32 * K) {
#pragma unroll
                for (int k = 0; k < L; k++) next[k] = *reinterpret_cast<const uint4*>(at + load_at<V>(k, lane));
                have_next = true;
            }
        }
        for (; p < last; p += WARPS) {
            uint4 cur[L];
            const bool have = have_next;
#pragma unroll
            for (int k = 0; k < L; k++) cur[k] = next[k];
            unsigned int len;
            const typename E::Word* at = piece_at(p, len);
            have_next = false;
            if (p + WARPS < last) {
                unsigned int next_len;
                const typename E::Word* next_at = piece_at(p + WARPS, next_len);
                if (next_len == 32 * K) {
#pragma unroll
                    for (int k = 0; k < L; k++) next[k] = *reinterpret_cast<const uint4*>(next_at + load_at<V>(k, lane));
                    have_next = true;
                }
            }
            acc = Op::combine(acc, have ? fold_loaded<E, K>(cur) : lane_piece<E, V, K>(at, len, lane));
        }
    }
    if constexpr ((MODE & FLAT) != 0) {
        constexpr int V = E::MAX_VEC, L = K / V;
        const unsigned int per_slice_planes = (batch + slices - 1) / slices;
        const unsigned int n0 = min(slice * per_slice_planes, batch), n1 = min(n0 + per_slice_planes, batch);
        const unsigned int per_plane_vectors = plane / V, total = (n1 - n0) * per_plane_vectors;
        const typename E::Word* base_c = in + ((size_t)n0 * channels + c) * plane;
        const size_t plane_stride = (size_t)channels * plane;
        for (unsigned int q = warp; q * 32 * L < total; q += WARPS) {
            float x[K];
            if ((q + 1) * 32 * L <= total) {
                if constexpr ((MODE & STEPPED) != 0) {
                    const unsigned int u = q * L * 32 + lane;
                    unsigned int pn = u / per_plane_vectors, r = u - pn * per_plane_vectors;
#pragma unroll
                    for (int k = 0; k < L; k++) {
                        load_vector<E, V>(base_c + pn * plane_stride + r * V, x + k * V);
                        for (r += 32; r >= per_plane_vectors; r -= per_plane_vectors) pn++;
                    }
                } else {
#pragma unroll
                    for (int k = 0; k < L; k++) {
                        const unsigned int u = (q * L + k) * 32 + lane, pn = u / per_plane_vectors;
                        load_vector<E, V>(base_c + pn * plane_stride + (u - pn * per_plane_vectors) * V, x + k * V);
                    }
                }
                if constexpr (K > 16) {
                    Moments m = moments_of<16>(x, 16);
#pragma unroll
                    for (int h = 16; h < K; h += 16) m = Op::combine(m, moments_of<16>(x + h, 16));
                    acc = Op::combine(acc, m);
                } else {
                    acc = Op::combine(acc, moments_of<K>(x, K));
                }
            } else {
                for (int k = 0; k < L; k++) {
                    const unsigned int u = (q * L + k) * 32 + lane;
                    if (u < total) {
                        const unsigned int pn = u / per_plane_vectors;
                        load_vector<E, V>(base_c + pn * plane_stride + (u - pn * per_plane_vectors) * V, x);
                        for (int j = 0; j < V; j++) acc = Op::combine(acc, moments1(x[j]));
                    }
                }
            }
        }
    }
    for (unsigned int round = 0, base = first; base < last && (MODE & (PREFETCH | FLAT)) == 0; round++, base += WARPS) {
        const unsigned int p = base + ((MODE & ROTATE) != 0 ? (warp + round) % WARPS : warp);
        if (p >= last) break;
        const unsigned int j = per_plane == 1 ? p : p / per_plane;
        const unsigned int n = (MODE & INTERLEAVE) != 0 ? slice + j * slices : j;
        const unsigned int begin = (p - j * per_plane) * (32 * K);
        const unsigned int len = plane - begin < 32 * K ? plane - begin : 32 * K;
        const typename E::Word* at = in + ((size_t)n * channels + c) * plane + begin;
        if constexpr ((MODE & LOADS_ONLY) != 0) {
            const Moments m = loads_only<E, K>(at, len, lane);
            acc.count += m.count;
            acc.mean += m.mean;
        } else {
            acc = Op::combine(acc, piece_variant<E, K, PACKED>(at, len, lane));
        }
    }
    if constexpr ((MODE & NO_FINISH) != 0) {
        acc = block_reduce<Op>(acc);
        if (threadIdx.x == 0) partial[blockIdx.x] = acc;
    } else if constexpr ((MODE & CLUSTER) != 0) {
        finish_cluster(acc, slices, c, mean, var);
    } else if constexpr ((MODE & WARP_FINISH) != 0) {
        finish_warp(acc, partial + (size_t)c * slices, ticket + c, slices, slice, c, mean, var);
    } else if constexpr ((MODE & ACQ_REL) != 0) {
        finish_acq_rel(acc, partial + (size_t)c * slices, ticket + c, slices, slice, c, mean, var);
    } else {
        finish_channel(acc, partial + (size_t)c * slices, ticket + c, slices, slice, c, 1, mean, var);
    }
}

// The eighth run: each warp streams its pieces through STAGES slots of shared memory by bulk
// copies (cp.async.bulk, as the scan's step 5 takes its tile; bulk_copy.cuh), a slot's mbarrier
// reused from piece to piece by its phase: STAGES pieces in flight a warp with no register holding
// them, where the chapter's lane holds one piece's 64 bytes in registers. The fold reads the
// piece from shared memory as lane_piece reads it from global memory. Planes a multiple of 16
// bytes, the tensor 16-byte aligned.
template <class E, int K, int STAGES, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    bulk_variant(const typename E::Word* in, Moments* partial, unsigned int* ticket, float* mean, float* var,
                 unsigned int batch, unsigned int channels, unsigned int plane, unsigned int slices)
{
    typedef MomentsOf<float> Op;
    typedef typename E::Word Word;
    constexpr int PIECE = 32 * K;
    extern __shared__ __align__(16) unsigned char dynamic[];
    __shared__ __align__(8) unsigned long long landed[WARPS][STAGES];
    const unsigned int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    Word* slots = reinterpret_cast<Word*>(dynamic) + (size_t)warp * STAGES * PIECE;
    const unsigned int c = blockIdx.x / slices, slice = blockIdx.x % slices;
    const unsigned int per_plane = (plane + PIECE - 1) / PIECE;
    const unsigned int pieces = batch * per_plane;
    const unsigned int per_slice = (pieces + slices - 1) / slices;
    const unsigned int first = slice * per_slice < pieces ? slice * per_slice : pieces;
    const unsigned int last = pieces - first < per_slice ? pieces : first + per_slice;
    auto piece_at = [&](unsigned int p, unsigned int& len) {
        const unsigned int n = per_plane == 1 ? p : p / per_plane;
        const unsigned int begin = (p - n * per_plane) * PIECE;
        len = plane - begin < (unsigned)PIECE ? plane - begin : PIECE;
        return in + ((size_t)n * channels + c) * plane + begin;
    };
    auto issue = [&](unsigned int p, int s) {
        unsigned int len;
        const Word* from = piece_at(p, len);
        const unsigned int bytes = len * sizeof(Word);
        const unsigned int bar = shared_address(&landed[warp][s]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         shared_address(slots + s * PIECE)),
                     "l"(from), "r"(bytes), "r"(bar)
                     : "memory");
    };
    if (lane == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&landed[warp][s])) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncwarp();
    unsigned int next = first + warp;
    if (lane == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; s++) {
            if (next + s * WARPS < last) issue(next + s * WARPS, s);
        }
    }
    next += STAGES * WARPS;
    Moments acc = Op::identity();
    unsigned int i = 0;
    for (unsigned int p = first + warp; p < last; p += WARPS, i++) {
        const int s = i % STAGES;
        const unsigned int parity = (i / STAGES) & 1;
        asm volatile("{\n"
                     " .reg .pred done;\n"
                     "WAIT_%=:\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                     " @!done bra WAIT_%=;\n"
                     "}" ::"r"(shared_address(&landed[warp][s])),
                     "r"(parity)
                     : "memory");
        unsigned int len;
        piece_at(p, len);
        acc = Op::combine(acc, lane_piece<E, E::MAX_VEC, K>(slots + s * PIECE, len, lane));
        __syncwarp();
        if (lane == 0 && next < last) issue(next, s);
        next += WARPS;
    }
    finish_warp(acc, partial + (size_t)c * slices, ticket + c, slices, slice, c, mean, var);
}

struct Shape {
    unsigned n, c, h, w;
};

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const Shape shapes[] = {{256, 64, 56, 56}, {512, 64, 56, 56}, {256, 128, 28, 28}, {32, 64, 56, 56}};
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
    unsigned int* ticket;
    CHECK(cudaMalloc(&in, most * 4));
    CHECK(cudaMalloc(&in_bf16, most * 2));
    CHECK(cudaMalloc(&mean, 4096 * 4));
    CHECK(cudaMalloc(&var, 4096 * 4));
    CHECK(cudaMalloc(&sink, 1 << 20));
    CHECK(cudaMalloc(&partial, 1 << 20));
    CHECK(cudaMalloc(&ticket, 4096 * 4));
    CHECK(cudaMemset(ticket, 0, 4096 * 4));
    CHECK(cudaMemcpy(in, host.data(), most * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(in_bf16, host_bf16.data(), most * 2, cudaMemcpyHostToDevice));

    for (int bf16 = 0; bf16 < 2; ++bf16) {
        for (const Shape& s : shapes) {
            const unsigned plane = s.h * s.w;
            const size_t bytes = (size_t)s.n * s.c * plane * (bf16 ? 2 : 4);
            const void* x = bf16 ? (const void*)in_bf16 : (const void*)in;
            const double roof = read_roof(x, bytes, sink).ms();
            std::printf("%s %ux%ux%ux%u (%.0f MB): read roof %.4f ms\n", bf16 ? "bf16" : "f32", s.n, s.c, s.h, s.w,
                        bytes / 1e6, roof);
            std::vector<float> want_mean, want_var;
            struct Config {
                const char* name;
                unsigned k, min_blocks, waves;
                std::function<void(unsigned)> launch; // given slices
            };
            const unsigned N = s.n, C = s.c;
#define LAUNCH_MODE(E, K, PACKED, MIN, MODE)                                                                       \
    [&, N, C, plane](unsigned slices) {                                                                            \
        variant<E, K, PACKED, MIN, MODE><<<C * slices, THREADS>>>((const E::Word*)x, partial, ticket, mean, var, N, C,  \
                                                                   plane, slices);                                 \
    }
#define LAUNCH(E, K, PACKED, MIN) LAUNCH_MODE(E, K, PACKED, MIN, FULL)
#define LAUNCH_BULK(E, K, STAGES, MIN)                                                                             \
    [&, N, C, plane](unsigned slices) {                                                                            \
        const int bytes = WARPS * STAGES * 32 * K * (int)sizeof(E::Word);                                         \
        CHECK(cudaFuncSetAttribute(bulk_variant<E, K, STAGES, MIN>, cudaFuncAttributeMaxDynamicSharedMemorySize,   \
                                   bytes));                                                                        \
        bulk_variant<E, K, STAGES, MIN><<<C * slices, THREADS, bytes>>>((const E::Word*)x, partial, ticket, mean,  \
                                                                        var, N, C, plane, slices);                 \
    }
            std::vector<Config> configs = {
                {"chapter", 16, BLOCKS_PER_SM, 1,
                 [&, N, C, plane](unsigned slices) {
                     if (bf16)
                         batch_stats_vectors_bf16<<<C * slices, THREADS>>>(in_bf16, partial, ticket, mean, var, N, C,
                                                                            plane, slices, 1);
                     else
                         batch_stats_vectors<<<C * slices, THREADS>>>(in, partial, ticket, mean, var, N, C, plane,
                                                                       slices, 1);
                 }},
                {"chapter", 16, BLOCKS_PER_SM, 2, {}},
            };
            configs[1].launch = configs[0].launch;
            // The fourth run: the chapter's pieces (16 f32, 32 bf16 a lane) with other finishes.
            // (The third run's: LAUNCH_MODE(BF16, 32, false, 4, LOADS_ONLY | NO_FINISH) and so on;
            // the second run's pieces and holdings: LAUNCH(BF16, 32, true, 5).)
#define LAUNCH_CLUSTER(E, K)                                                                                     \
    [&, N, C, plane](unsigned slices) {                                                                            \
        launch_on_clusters(variant<E, K, false, 4, CLUSTER>, C * slices, THREADS, slices, (const E::Word*)x, partial, \
                           ticket, mean, var, N, C, plane, slices);                                                \
    }
            // The eighth run: a slice's planes as one stream of vectors; the pieces through shared
            // memory by bulk copies, 2 or 3 in flight a warp. (The seventh run's: PREFETCH |
            // WARP_FINISH at 4 and 3 blocks an SM; the sixth's: INTERLEAVE; the fifth's: ROTATE;
            // the fourth's: NO_FINISH, WARP_FINISH and LAUNCH_CLUSTER.) The ninth, after the H200
            // ran the chapter's bf16 statistics at 72.3% and the flat stream at 79.2% of the read
            // roof, waiting on loads (ncu: 2.29 of 7.30 warps eligible): the flat stream with
            // twice the bytes a lane loads before it folds (pieces of 2 x 32 x K), at 4 and 3
            // blocks an SM. (Both lost; their configs: LAUNCH_MODE(E, 2 * K, false, 4 or 3, FLAT |
            // WARP_FINISH), beside the bulk copies' LAUNCH_BULK(E, K, 2 or 3, 4).) The tenth: the
            // flat stream with one division a lane a piece (STEPPED).
#define VARIANTS(E, K)                                                                                           \
    configs.push_back({"program's own", K, 4, 1, LAUNCH_MODE(E, K, false, 4, WARP_FINISH)});                      \
    configs.push_back({"flat", K, 4, 1, LAUNCH_MODE(E, K, false, 4, FLAT | WARP_FINISH)});                        \
    configs.push_back({"flat, stepped", K, 4, 1, LAUNCH_MODE(E, K, false, 4, FLAT | STEPPED | WARP_FINISH)});     \
    configs.push_back({"flat, no finish", K, 4, 1, LAUNCH_MODE(E, K, false, 4, FLAT | NO_FINISH)});               \
    configs.push_back({"flat, stepped, no fin.", K, 4, 1, LAUNCH_MODE(E, K, false, 4, FLAT | STEPPED | NO_FINISH)});
            if (bf16) {
                VARIANTS(BF16, 32)
            } else {
                VARIANTS(F32, 16)
            }
            for (size_t config = 0; config < configs.size(); ++config) {
                const Config& k = configs[config];
                const unsigned resident = prop.multiProcessorCount * k.min_blocks * k.waves;
                const unsigned pieces = s.n * ((plane + 32 * k.k - 1) / (32 * k.k));
                const unsigned slices = std::max(1u, std::min(resident / s.c, pieces));
                const std::function<void()> launch = [&k, slices] { k.launch(slices); };
                CHECK(cudaMemset(mean, 0xff, s.c * 4));
                CHECK(cudaMemset(var, 0xff, s.c * 4));
                launch();
                CHECK(cudaDeviceSynchronize());
                std::vector<float> got_mean(s.c), got_var(s.c);
                CHECK(cudaMemcpy(got_mean.data(), mean, s.c * 4, cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(got_var.data(), var, s.c * 4, cudaMemcpyDeviceToHost));
                if (config == 0) {
                    want_mean = got_mean;
                    want_var = got_var;
                }
                int wrong = 0;
                const bool diagnostic = std::strstr(k.name, "no fin") || std::strstr(k.name, "loads");
                for (unsigned c = 0; c < s.c && !diagnostic; ++c) {
                    if (!(std::fabs(got_mean[c] - want_mean[c]) <= 1e-5f * std::fabs(want_mean[c]) + 1e-6f) ||
                        !(std::fabs(got_var[c] - want_var[c]) <= 1e-5f * want_var[c]))
                        wrong++;
                }
                const double ms = median_ms(launch);
                std::printf("  %-21s pieces of %4u, %u blocks/SM, %u wave%s (%4u blocks) %8.4f ms %6.1f%% of the read roof%s\n",
                            k.name, 32 * k.k, k.min_blocks, k.waves, k.waves > 1 ? "s" : " ", s.c * slices, ms,
                            100.0 * roof / ms, wrong ? "  WRONG" : "");
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
