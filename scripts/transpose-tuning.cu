// The first exploration behind the transpose chapter's step 6 ("What else was tried"): every
// candidate at four shapes (tiles of 32 and 64, padded or swizzled, 16-byte vectors, blocks in
// grouped order), with the device copy and cuBLAS geam, one run on an H100, whose output is
// book/src/data/nvidia-h100-80gb-hbm3/transpose-tuning.txt. Not part of the crate or its tests; kept
// so the chapter's table can be reproduced. Its own timing (the median of 15 batches of about 2 ms),
// as it was run, not tuning.cuh's:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o transpose-tuning scripts/transpose-tuning.cu -lcublas && ./transpose-tuning
//
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ void tile_of(int grouped, int tiles_x, int tiles_y, int& tx_t, int& ty_t) {
    if (grouped <= 0) { tx_t = blockIdx.x; ty_t = blockIdx.y; return; }
    int b = blockIdx.x;
    int per_group = grouped * tiles_x;
    int g = b / per_group;
    int first = g * grouped;
    int h = min(tiles_y - first, grouped);
    int local = b - g * per_group;
    ty_t = first + local % h;
    tx_t = local / h;
}

__global__ void copy_1(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
    if (r < rows && c < cols) out[(size_t)r * cols + c] = in[(size_t)r * cols + c];
}
__global__ void naive_1(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
    if (r < rows && c < cols) out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
}
template <int PAD>
__global__ void tiled_1(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[32][32 + PAD];
    int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32, x = threadIdx.x, y = threadIdx.y;
    if (r0 + y < rows && c0 + x < cols) tile[y][x] = in[(size_t)(r0 + y) * cols + c0 + x];
    __syncthreads();
    if (c0 + y < cols && r0 + x < rows) out[(size_t)(c0 + y) * rows + r0 + x] = tile[x][y];
}
// 32x8 threads, copy with 4 per thread
__global__ void copy_4(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
#pragma unroll
    for (int i = threadIdx.y; i < 32; i += 8)
        if (r0 + i < rows && c < cols) out[(size_t)(r0 + i) * cols + c] = in[(size_t)(r0 + i) * cols + c];
}
// 32x8 threads, TRxTC tile
template <int TR, int TC, int PAD>
__global__ void tiles(const float* in, float* out, int rows, int cols, int grouped) {
    __shared__ float tile[TR][TC + PAD];
    int tiles_x = (cols + TC - 1) / TC, tiles_y = (rows + TR - 1) / TR, bx, by;
    tile_of(grouped, tiles_x, tiles_y, bx, by);
    int r0 = by * TR, c0 = bx * TC, x = threadIdx.x, y = threadIdx.y;
    if (r0 + TR <= rows && c0 + TC <= cols) {
        const float* src = in + (size_t)(r0 + y) * cols + c0 + x;
#pragma unroll
        for (int i = 0; i < TR; i += 8)
#pragma unroll
            for (int j = 0; j < TC; j += 32) tile[y + i][x + j] = src[(size_t)i * cols + j];
        __syncthreads();
        float* dst = out + (size_t)(c0 + y) * rows + r0 + x;
#pragma unroll
        for (int i = 0; i < TC; i += 8)
#pragma unroll
            for (int j = 0; j < TR; j += 32) dst[(size_t)i * rows + j] = tile[x + j][y + i];
    } else {
#pragma unroll
        for (int i = 0; i < TR; i += 8)
#pragma unroll
            for (int j = 0; j < TC; j += 32)
                if (r0 + y + i < rows && c0 + x + j < cols) tile[y + i][x + j] = in[(size_t)(r0 + y + i) * cols + c0 + x + j];
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TC; i += 8)
#pragma unroll
            for (int j = 0; j < TR; j += 32)
                if (c0 + y + i < cols && r0 + x + j < rows) out[(size_t)(c0 + y + i) * rows + r0 + x + j] = tile[x + j][y + i];
    }
}
// swizzled 32x32, 32x8 threads, no padding
__global__ void swz32(const float* in, float* out, int rows, int cols, int grouped) {
    __shared__ float tile[32][32];
    int tiles_x = (cols + 31) / 32, tiles_y = (rows + 31) / 32, bx, by;
    tile_of(grouped, tiles_x, tiles_y, bx, by);
    int r0 = by * 32, c0 = bx * 32, x = threadIdx.x, y = threadIdx.y;
    const float* src = in + (size_t)(r0 + y) * cols + c0 + x;
#pragma unroll
    for (int i = 0; i < 32; i += 8) tile[y + i][x ^ (y + i)] = src[(size_t)i * cols];
    __syncthreads();
    float* dst = out + (size_t)(c0 + y) * rows + r0 + x;
#pragma unroll
    for (int i = 0; i < 32; i += 8) dst[(size_t)i * rows] = tile[x][(y + i) ^ x];
}
// 64x64 float4, swizzled, 256 threads; full tiles and multiples of 4 only (exploration)
__global__ void __launch_bounds__(256) vec4_64(const float* in, float* out, int rows, int cols, int grouped) {
    __shared__ float4 tile[64][16];
    int tiles_x = cols / 64, tiles_y = rows / 64, bx, by;
    tile_of(grouped, tiles_x, tiles_y, bx, by);
    int r0 = by * 64, c0 = bx * 64, tid = threadIdx.x;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    float4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        int idx = k * 256 + tid, r = idx >> 4, q = idx & 15;
        v[k] = in4[((size_t)(r0 + r) * cols + c0) / 4 + q];
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        int idx = k * 256 + tid, r = idx >> 4, q = idx & 15;
        tile[r][q ^ ((r >> 2) & 15)] = v[k];
    }
    __syncthreads();
    const float* t = reinterpret_cast<const float*>(tile);
    float4* out4 = reinterpret_cast<float4*>(out);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        int idx = k * 256 + tid;
        int r4 = (idx & 7) | (((idx >> 5) & 1) << 3);
        int c = ((idx >> 3) & 3) | ((idx >> 6) << 2);
        float e[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int r = 4 * r4 + j;
            e[j] = t[r * 64 + ((((c >> 2) ^ ((r >> 2) & 15)) << 2) | (c & 3))];
        }
        out4[((size_t)(c0 + c) * rows + r0) / 4 + r4] = make_float4(e[0], e[1], e[2], e[3]);
    }
}
__global__ void copy_vec4(const float4* in, float4* out, size_t n4) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) out[i] = in[i];
}

struct Shape { int rows, cols; const char* name; };

static float median_ms(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

template <typename F>
float time_it(F f) {
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    f(); CK(cudaDeviceSynchronize());
    cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b);
    float once; cudaEventElapsedTime(&once, a, b);
    int reps = std::max(1, std::min(1000, (int)(2.0f / std::max(once, 1e-4f))));
    std::vector<float> t;
    for (int s = 0; s < 15; ++s) {
        cudaEventRecord(a); for (int i = 0; i < reps; ++i) f(); cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms / reps);
    }
    CK(cudaGetLastError());
    return median_ms(t);
}

int main() {
    Shape shapes[] = {{16384, 16384, "16384x16384"}, {8192, 8192, "8192x8192"}, {1 << 20, 256, "2^20x256"}, {65536, 1024, "65536x1024"}};
    cublasHandle_t h; cublasCreate(&h);
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
    printf("%s\n", p.name);
    for (auto s : shapes) {
        size_t n = (size_t)s.rows * s.cols, bytes = n * 4;
        float *in, *out; CK(cudaMalloc(&in, bytes)); CK(cudaMalloc(&out, bytes));
        std::vector<float> host(n), back(n);
        for (size_t i = 0; i < n; ++i) host[i] = (float)(i * 2654435761u % 1000003);
        CK(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
        double moved = 2.0 * bytes;
        auto report = [&](const char* name, float ms, bool transposed) {
            const char* ok = "";
            if (transposed >= 0) {
                CK(cudaMemcpy(back.data(), out, bytes, cudaMemcpyDeviceToHost));
                bool good = true;
                for (size_t r = 0; r < (size_t)s.rows && good; r += 13)
                    for (size_t c = 0; c < (size_t)s.cols; c += 7) {
                        float want = host[r * s.cols + c];
                        float got = transposed ? back[c * s.rows + r] : back[r * s.cols + c];
                        if (want != got) { good = false; break; }
                    }
                ok = good ? "" : "  WRONG";
            }
            printf("%-12s %-28s %8.4f ms %7.0f GB/s%s\n", s.name, name, ms, moved / ms / 1e6, ok);
        };
        CK(cudaMemset(out, 0xff, bytes));
        report("memcpy", time_it([&] { cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice); }), false);
        report("copy_vec4", time_it([&] { copy_vec4<<<sms * 8, 256>>>((const float4*)in, (float4*)out, n / 4); }), false);
        dim3 g32((s.cols + 31) / 32, (s.rows + 31) / 32);
        report("copy_1 32x32", time_it([&] { copy_1<<<g32, dim3(32, 32)>>>(in, out, s.rows, s.cols); }), false);
        report("copy_4 32x8", time_it([&] { copy_4<<<g32, dim3(32, 8)>>>(in, out, s.rows, s.cols); }), false);
        report("naive 32x32", time_it([&] { naive_1<<<g32, dim3(32, 32)>>>(in, out, s.rows, s.cols); }), true);
        report("tiled 32x32", time_it([&] { tiled_1<0><<<g32, dim3(32, 32)>>>(in, out, s.rows, s.cols); }), true);
        report("padded 32x32", time_it([&] { tiled_1<1><<<g32, dim3(32, 32)>>>(in, out, s.rows, s.cols); }), true);
        report("t32 nopad 32x8", time_it([&] { tiles<32, 32, 0><<<g32, dim3(32, 8)>>>(in, out, s.rows, s.cols, 0); }), true);
        report("t32 pad 32x8", time_it([&] { tiles<32, 32, 1><<<g32, dim3(32, 8)>>>(in, out, s.rows, s.cols, 0); }), true);
        report("swz32 32x8", time_it([&] { swz32<<<g32, dim3(32, 8)>>>(in, out, s.rows, s.cols, 0); }), true);
        dim3 g64((s.cols + 63) / 64, (s.rows + 63) / 64);
        report("t64x64 pad", time_it([&] { tiles<64, 64, 1><<<g64, dim3(32, 8)>>>(in, out, s.rows, s.cols, 0); }), true);
        dim3 g6432((s.cols + 31) / 32, (s.rows + 63) / 64);
        report("t64x32 pad", time_it([&] { tiles<64, 32, 1><<<g6432, dim3(32, 8)>>>(in, out, s.rows, s.cols, 0); }), true);
        dim3 g3264((s.cols + 63) / 64, (s.rows + 31) / 32);
        report("t32x64 pad", time_it([&] { tiles<32, 64, 1><<<g3264, dim3(32, 8)>>>(in, out, s.rows, s.cols, 0); }), true);
        report("vec4_64", time_it([&] { vec4_64<<<g64, 256>>>(in, out, s.rows, s.cols, 0); }), true);
        for (int G : {4, 8, 16, 32, 64}) {
            char name[64];
            snprintf(name, 64, "t32 pad grouped %d", G);
            report(name, time_it([&] { tiles<32, 32, 1><<<g32.x * g32.y, dim3(32, 8)>>>(in, out, s.rows, s.cols, G); }), true);
            snprintf(name, 64, "t64x64 pad grouped %d", G);
            report(name, time_it([&] { tiles<64, 64, 1><<<g64.x * g64.y, dim3(32, 8)>>>(in, out, s.rows, s.cols, G); }), true);
            snprintf(name, 64, "vec4_64 grouped %d", G);
            report(name, time_it([&] { vec4_64<<<g64.x * g64.y, 256>>>(in, out, s.rows, s.cols, G); }), true);
        }
        float alpha = 1, beta = 0;
        auto geam = [&](const float* B) {
            cublasStatus_t st = cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, s.rows, s.cols, &alpha, in, s.cols, &beta, B, s.rows, out, s.rows);
            if (st != CUBLAS_STATUS_SUCCESS) { printf("geam status %d\n", (int)st); }
        };
        report("cublas geam B=C", time_it([&] { geam(out); }), true);
        report("cublas geam B=NULL", time_it([&] { geam(nullptr); }), true);
        cudaFree(in); cudaFree(out);
    }
    return 0;
}
