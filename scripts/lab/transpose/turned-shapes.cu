// Can the turned grid (the transpose chapter's step 7) reach 1.03x cuBLAS on an H100? On the H200
// step 7 runs 1.04x cuBLAS's Sgeam at 16384^2; on the H100 it ran 1.01x (scripts/lab/transpose/copy-ceiling.cu),
// where 1.03x is about 98.6% of cudaMemcpy. This program times, in one run beside cuBLAS's Sgeam,
// cudaMemcpy and the chapter's steps 6 and 7, tiles in the turned order in other shapes:
//
//   TR x TC     the tile's rows and columns (of the input), 64 x 64 in the chapter; a TR x TC tile
//               reads TC * 4 bytes of each of TR input rows and writes TR * 4 bytes of TC output rows
//   t           threads per block
//   vN          the width of each global load and store: 1, 2 or 4 words (4, 8 or 16 bytes); the
//               shared tile is padded to TC + 1 words a row either way, a vector is spread over it
//   gG          blocks in groups of G tile columns: the blocks in flight cover G tile columns and
//               (resident blocks) / G tile rows, so each input row is read G * TC * 4 bytes at a
//               time (G = 1 is step 7's order, one column of tiles after another)
//
// plus tiles of one warp each, with no block barrier (warp_tiles), and a form with no shared memory at
// all (registers_4x4). Every variant is checked word for word
// against step 6's output first (WRONG and no time if not). Full tiles only: rows and columns must
// be multiples of 128 (the shapes are).
//
// Run on an H100, 2026-11-28 (book/src/data/nvidia-h100-80gb-hbm3/transpose-turned-tuning.txt): at
// 16384^2 step 7 made 1.012x and 1.014x geam in the two rounds, the best variant 1.020x (64 x 128
// tiles, 1024 threads, 8-byte accesses), 97.3% of cudaMemcpy: 8- or 16-byte accesses gain about half
// a percent, groups of 4 or 8 columns, other shapes at 512 threads and warp tiles (no block barrier)
// lose, and registers alone (16-byte pieces of 32 rows a warp store) run at a third of the speed.
// The 1.03x of issue 28 was not reached. On an H200 the same day (nvidia-h200/ beside it) step 7 made
// 1.040x and the 8- and 16-byte forms of its tile 1.043x to 1.044x. A later H100 run added wide and
// flat tiles (32 x 256 down to 8 x 512, each input row read 1 or 2 KiB at a time): all lost
// (0.959x to 0.998x geam).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o turned-shapes scripts/lab/transpose/turned-shapes.cu -lcublas
//   ./turned-shapes [rows cols]
#include "../../../cuda/transpose.cu"

#include <cublas_v2.h>

#include <functional>
#include <vector>

#include "../common/tuning.cuh"

template <int V> struct Vector;
template <> struct Vector<1> { typedef word type; };
template <> struct Vector<2> { typedef uint2 type; };
template <> struct Vector<4> { typedef uint4 type; };

template <int V> __device__ __forceinline__ word lane_of(const typename Vector<V>::type& v, int k)
{
    if constexpr (V == 1) {
        return v;
    } else {
        return reinterpret_cast<const word*>(&v)[k];
    }
}
// V words stored as one 4-, 8- or 16-byte store (written in PTX: built from words loaded from shared
// memory, the C++ store of a uint4 came out of nvcc 13.0 as four 4-byte stores).
template <int V> __device__ __forceinline__ void store_vector(word* at, const word* w)
{
    if constexpr (V == 1) {
        *at = w[0];
    } else if constexpr (V == 2) {
        asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(at), "r"(w[0]), "r"(w[1]) : "memory");
    } else {
        asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(at), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                     : "memory");
    }
}

// One TR x TC tile per block of T threads, V words per global access, blocks in groups of G tile
// columns taken down the tile rows (a 1-D grid of (rows / TR) * (cols / TC) blocks).
template <int TR, int TC, int T, int V, int G>
__global__ void __launch_bounds__(T) turned(const word* __restrict__ in, word* __restrict__ out, unsigned rows, unsigned cols)
{
    typedef typename Vector<V>::type vec;
    constexpr int READ_PER_ROW = TC / V, READ_ROWS = T / READ_PER_ROW, READ_PASSES = TR / READ_ROWS;
    constexpr int WRITE_PER_ROW = TR / V, WRITE_ROWS = T / WRITE_PER_ROW, WRITE_PASSES = TC / WRITE_ROWS;
    static_assert(T % READ_PER_ROW == 0 && TR % READ_ROWS == 0, "read shape");
    static_assert(T % WRITE_PER_ROW == 0 && TC % WRITE_ROWS == 0, "write shape");
    __shared__ word tile[TR][TC + 1];

    const unsigned tile_rows = rows / TR, b = blockIdx.x;
    const unsigned group = b / (tile_rows * G), k = b % (tile_rows * G);
    const unsigned r0 = (k / G) * TR, c0 = (group * G + k % G) * TC;
    const unsigned t = threadIdx.x;

    vec v[READ_PASSES];
    {
        const unsigned rr = t / READ_PER_ROW, cc = (t % READ_PER_ROW) * V;
#pragma unroll
        for (int p = 0; p < READ_PASSES; p++) {
            v[p] = *reinterpret_cast<const vec*>(in + (size_t)(r0 + rr + p * READ_ROWS) * cols + c0 + cc);
        }
#pragma unroll
        for (int p = 0; p < READ_PASSES; p++) {
#pragma unroll
            for (int e = 0; e < V; e++) tile[rr + p * READ_ROWS][cc + e] = lane_of<V>(v[p], e);
        }
    }
    __syncthreads();
    const unsigned oc = t / WRITE_PER_ROW, er = (t % WRITE_PER_ROW) * V;
#pragma unroll
    for (int p = 0; p < WRITE_PASSES; p++) {
        word w[V];
#pragma unroll
        for (int e = 0; e < V; e++) w[e] = tile[er + e][oc + p * WRITE_ROWS];
        store_vector<V>(out + (size_t)(c0 + oc + p * WRITE_ROWS) * rows + r0 + er, w);
    }
}

// No shared memory: each of 32 x 8 threads loads K 4 x 4 blocks of words (four 16-byte loads each, one
// from each of four input rows, all 4K loads issued first), transposes them in registers and stores
// 16-byte vectors, one to each of four output rows a block. A block covers 32 K input rows x 128
// columns; each output row gets 128 K bytes from the block's 8 warps, 16 bytes each, merged in the
// L2. Blocks go down the tile rows (turned).
template <int K>
__global__ void __launch_bounds__(256) registers_4x4(const word* __restrict__ in, word* __restrict__ out, unsigned rows,
                                                     unsigned cols)
{
    const unsigned tile_rows = rows / (32 * K), block = blockIdx.x;
    const unsigned r0 = (block % tile_rows) * 32 * K + threadIdx.y * 4, c0 = (block / tile_rows) * 128 + threadIdx.x * 4;
    const size_t next = cols / 4;
    uint4 v[K][4];
#pragma unroll
    for (int k = 0; k < K; k++) {
        const uint4* from = reinterpret_cast<const uint4*>(in + (size_t)(r0 + 32 * k) * cols + c0);
#pragma unroll
        for (int i = 0; i < 4; i++) v[k][i] = from[i * next];
    }
#pragma unroll
    for (int k = 0; k < K; k++) {
        word* to = out + (size_t)c0 * rows + r0 + 32 * k;
        const word first[4] = {v[k][0].x, v[k][1].x, v[k][2].x, v[k][3].x};
        const word second[4] = {v[k][0].y, v[k][1].y, v[k][2].y, v[k][3].y};
        const word third[4] = {v[k][0].z, v[k][1].z, v[k][2].z, v[k][3].z};
        const word fourth[4] = {v[k][0].w, v[k][1].w, v[k][2].w, v[k][3].w};
        store_vector<4>(to, first);
        store_vector<4>(to + rows, second);
        store_vector<4>(to + 2 * (size_t)rows, third);
        store_vector<4>(to + 3 * (size_t)rows, fourth);
    }
}

// No block barrier: each warp of a block of W warps transposes its own R x 32 tile through its own
// part of shared memory (a warp barrier, __syncwarp, between the loads and the stores), so no warp
// waits for another. Lane l loads column l of the tile's R rows (R loads of 128 bytes a warp, all
// issued first), then writes output row c0 + i (i < 32) at r0 + l, r0 + 32 + l, ... Warps go down
// the tile rows (turned): warp g takes tile row g % (rows / R) of tile column g / (rows / R).
template <int R, int W>
__global__ void __launch_bounds__(32 * W) warp_tiles(const word* __restrict__ in, word* __restrict__ out, unsigned rows,
                                                      unsigned cols)
{
    __shared__ word tiles[W][R][33];
    const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32, g = blockIdx.x * W + w;
    const unsigned tile_rows = rows / R, r0 = (g % tile_rows) * R, c0 = (g / tile_rows) * 32;
    word v[R];
#pragma unroll
    for (int i = 0; i < R; i++) v[i] = in[(size_t)(r0 + i) * cols + c0 + lane];
#pragma unroll
    for (int i = 0; i < R; i++) tiles[w][i][lane] = v[i];
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 32; i++) {
#pragma unroll
        for (int j = 0; j < R / 32; j++) out[(size_t)(c0 + i) * rows + r0 + 32 * j + lane] = tiles[w][32 * j + lane][i];
    }
}

struct Variant {
    const char* name;
    std::function<void(const word*, word*, unsigned, unsigned)> launch;
};

template <int TR, int TC, int T, int V, int G> Variant variant(const char* name)
{
    return {name, [](const word* in, word* out, unsigned rows, unsigned cols) {
                turned<TR, TC, T, V, G><<<(rows / TR) * (cols / TC), T>>>(in, out, rows, cols);
            }};
}

template <int K> Variant registers(const char* name)
{
    return {name, [](const word* in, word* out, unsigned rows, unsigned cols) {
                registers_4x4<K><<<(rows / (32 * K)) * (cols / 128), dim3(32, 8)>>>(in, out, rows, cols);
            }};
}

template <int R, int W> Variant warps(const char* name)
{
    return {name, [](const word* in, word* out, unsigned rows, unsigned cols) {
                warp_tiles<R, W><<<(rows / R) * (cols / 32) / W, 32 * W>>>(in, out, rows, cols);
            }};
}

int main(int argc, char** argv)
{
    const unsigned rows = argc > 2 ? (unsigned)std::atoi(argv[1]) : 16384;
    const unsigned cols = argc > 2 ? (unsigned)std::atoi(argv[2]) : 16384;
    if (rows % 128 || cols % 128) {
        std::printf("rows and columns must be multiples of 128\n");
        return 1;
    }
    const size_t n = (size_t)rows * cols;
    word *in, *out;
    CHECK(cudaMalloc(&in, n * 4));
    CHECK(cudaMalloc(&out, n * 4));
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
    const float one = 1.0f, zero = 0.0f;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const dim3 block(32, 16);
    auto step6 = [&] { transpose_wide_tiles<<<dim3(cols / 64, rows / 64), block>>>(in, out, rows, cols); };
    auto step7 = [&] { transpose_column_order<<<dim3(rows / 64, cols / 64), block>>>(in, out, rows, cols); };
    auto geam = [&] {
        cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, cols, &one, (const float*)in, cols, &zero, (float*)out, rows,
                    (float*)out, rows);
    };
    auto memcpy_ = [&] { CHECK(cudaMemcpy(out, in, n * 4, cudaMemcpyDeviceToDevice)); };

    const Variant variants[] = {
        variant<64, 64, 512, 1, 1>("64x64 512t v1 g1 (step 7's shape)"),
        variant<64, 64, 512, 1, 2>("64x64 512t v1 g2"),
        variant<64, 64, 512, 1, 4>("64x64 512t v1 g4"),
        variant<64, 64, 512, 1, 8>("64x64 512t v1 g8"),
        variant<64, 64, 512, 2, 1>("64x64 512t v2 g1"),
        variant<64, 64, 512, 4, 1>("64x64 512t v4 g1"),
        variant<64, 64, 256, 4, 1>("64x64 256t v4 g1"),
        variant<64, 64, 256, 1, 1>("64x64 256t v1 g1"),
        variant<64, 64, 1024, 1, 1>("64x64 1024t v1 g1"),
        variant<64, 128, 512, 1, 1>("64x128 512t v1 g1"),
        variant<128, 64, 512, 1, 1>("128x64 512t v1 g1"),
        variant<64, 128, 1024, 1, 1>("64x128 1024t v1 g1"),
        variant<128, 64, 1024, 1, 1>("128x64 1024t v1 g1"),
        variant<64, 128, 512, 4, 1>("64x128 512t v4 g1"),
        variant<128, 64, 512, 4, 1>("128x64 512t v4 g1"),
        variant<32, 128, 512, 1, 1>("32x128 512t v1 g1"),
        variant<64, 64, 512, 4, 4>("64x64 512t v4 g4"),
        variant<64, 64, 512, 2, 2>("64x64 512t v2 g2"),
        variant<64, 128, 1024, 2, 1>("64x128 1024t v2 g1"),
        variant<128, 64, 1024, 2, 1>("128x64 1024t v2 g1"),
        // Wide and flat tiles (a later run): each input row read 1 or 2 KiB at a time, each output
        // row written 128, 64 or 32 bytes a tile, the blocks in flight completing its lines in the L2.
        variant<32, 256, 1024, 1, 1>("32x256 1024t v1 g1"),
        variant<32, 256, 1024, 2, 1>("32x256 1024t v2 g1"),
        variant<32, 256, 1024, 4, 1>("32x256 1024t v4 g1"),
        variant<32, 256, 512, 2, 1>("32x256 512t v2 g1"),
        variant<16, 256, 512, 1, 1>("16x256 512t v1 g1"),
        variant<16, 512, 1024, 1, 1>("16x512 1024t v1 g1"),
        variant<16, 512, 1024, 2, 1>("16x512 1024t v2 g1"),
        variant<16, 512, 512, 4, 1>("16x512 512t v4 g1"),
        variant<8, 512, 512, 1, 1>("8x512 512t v1 g1"),
        warps<32, 4>("warp tiles 32x32, 4 warps"),
        warps<32, 8>("warp tiles 32x32, 8 warps"),
        warps<64, 4>("warp tiles 64x32, 4 warps"),
        warps<64, 2>("warp tiles 64x32, 2 warps"),
        registers<1>("registers 4x4, 32x128 a block"),
        registers<2>("registers 2 x 4x4, 64x128 a block"),
        registers<4>("registers 4 x 4x4, 128x128 a block"),
    };

    // Each variant must write what step 6 writes (inputs: a mix of each word's index).
    std::vector<word> host(n), want(n), got(n);
    for (size_t i = 0; i < n; i++) host[i] = (word)i ^ (word)(i >> 20);
    CHECK(cudaMemcpy(in, host.data(), n * 4, cudaMemcpyHostToDevice));
    step6();
    CHECK(cudaMemcpy(want.data(), out, n * 4, cudaMemcpyDeviceToHost));
    std::vector<bool> right;
    for (const Variant& v : variants) {
        CHECK(cudaMemset(out, 0xff, n * 4));
        v.launch(in, out, rows, cols);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got.data(), out, n * 4, cudaMemcpyDeviceToHost));
        right.push_back(got == want);
    }

    const double gb = 2.0 * n * 4 / 1e6;
    std::printf("%s, %u x %u f32 (ms, GB/s, %% of cudaMemcpy, geam / this)\n", prop.name, rows, cols);
    for (int round = 0; round < 2; round++) {
        const double g = median_ms(geam), m = median_ms(memcpy_);
        auto line = [&](const char* name, double ms) {
            std::printf("  %-36s %.4f ms  %5.0f GB/s  %5.1f%%  %.3fx\n", name, ms, gb / ms, 100 * m / ms, g / ms);
        };
        line("cudaMemcpy", m);
        line("cuBLAS geam", g);
        line("step 6 (wide tiles)", median_ms(step6));
        line("step 7 (column order)", median_ms(step7));
        for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
            if (!right[i]) {
                std::printf("  %-36s WRONG\n", variants[i].name);
                continue;
            }
            line(variants[i].name, median_ms([&] { variants[i].launch(in, out, rows, cols); }));
        }
        line("step 7 again", median_ms(step7));
        line("cuBLAS geam again", median_ms(geam));
    }
    return 0;
}
