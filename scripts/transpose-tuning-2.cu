// The second exploration behind the transpose chapter's step 6: tile shapes, threads per block and
// cache hints at 16384 x 16384 and 8192 x 8192, three rounds each, with cuBLAS geam (one run on an
// H200, whose output is book/src/data/nvidia-h200/transpose-tuning-2.txt). Not part of the crate or
// its tests; kept so the chapter's table can be reproduced. Its own timing (the median of 21 batches
// of about 2 ms), as it was run, not tuning.cuh's:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o transpose-tuning-2 scripts/transpose-tuning-2.cu -lcublas
//   ./transpose-tuning-2 && ./transpose-tuning-2 x 8192 8192
//
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
#include <string>
#include <functional>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

template <int H> __device__ __forceinline__ float ld(const float* p) {
    if (H == 1) return __ldcs(p);
    if (H == 2) return __ldg(p);
    return *p;
}
template <int H> __device__ __forceinline__ void st(float* p, float v) {
    if (H == 1) __stcs(p, v);
    else if (H == 3) __stcg(p, v);
    else *p = v;
}

// 32 x BY threads, TR x TC tile, full tiles only (exploration shapes are multiples of the tiles)
template <int TR, int TC, int BY, int H>
__global__ void __launch_bounds__(32 * BY) tiles(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TR][TC + 1];
    int r0 = blockIdx.y * TR, c0 = blockIdx.x * TC, x = threadIdx.x, y = threadIdx.y;
    const float* src = in + (size_t)(r0 + y) * cols + c0 + x;
#pragma unroll
    for (int i = 0; i < TR; i += BY)
#pragma unroll
        for (int j = 0; j < TC; j += 32) tile[y + i][x + j] = ld<H>(src + (size_t)i * cols + j);
    __syncthreads();
    float* dst = out + (size_t)(c0 + y) * rows + r0 + x;
#pragma unroll
    for (int i = 0; i < TC; i += BY)
#pragma unroll
        for (int j = 0; j < TR; j += 32) st<H>(dst + (size_t)i * rows + j, tile[x + j][y + i]);
}

// two tiles per block, one after the other (the block strides over tile columns)
template <int TR, int TC, int BY>
__global__ void __launch_bounds__(32 * BY) tiles2(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TR][TC + 1];
    int x = threadIdx.x, y = threadIdx.y;
    for (int t = 0; t < 2; ++t) {
        int r0 = blockIdx.y * TR, c0 = (blockIdx.x * 2 + t) * TC;
        const float* src = in + (size_t)(r0 + y) * cols + c0 + x;
        float v[TR / BY][TC / 32];
#pragma unroll
        for (int i = 0; i < TR / BY; ++i)
#pragma unroll
            for (int j = 0; j < TC / 32; ++j) v[i][j] = src[(size_t)i * BY * cols + j * 32];
        if (t) __syncthreads();
#pragma unroll
        for (int i = 0; i < TR / BY; ++i)
#pragma unroll
            for (int j = 0; j < TC / 32; ++j) tile[y + i * BY][x + j * 32] = v[i][j];
        __syncthreads();
        float* dst = out + (size_t)(c0 + y) * rows + r0 + x;
#pragma unroll
        for (int i = 0; i < TC; i += BY)
#pragma unroll
            for (int j = 0; j < TR; j += 32) dst[(size_t)i * rows + j] = tile[x + j][y + i];
    }
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

float time_it(const std::function<void()>& f) {
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    f(); CK(cudaDeviceSynchronize());
    cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b);
    float once; cudaEventElapsedTime(&once, a, b);
    int reps = std::max(1, std::min(1000, (int)(2.0f / std::max(once, 1e-4f))));
    std::vector<float> t;
    for (int s = 0; s < 21; ++s) {
        cudaEventRecord(a); for (int i = 0; i < reps; ++i) f(); cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms / reps);
    }
    CK(cudaGetLastError());
    return median(t);
}

int main(int argc, char** argv) {
    bool geam_only = argc > 1 && !strcmp(argv[1], "geam");
    int rows = 16384, cols = 16384;
    if (argc > 2) { rows = atoi(argv[2]); cols = atoi(argv[3]); }
    size_t n = (size_t)rows * cols, bytes = n * 4;
    cublasHandle_t h; cublasCreate(&h);
    float *in, *out; CK(cudaMalloc(&in, bytes)); CK(cudaMalloc(&out, bytes));
    std::vector<float> host(n), back(n);
    for (size_t i = 0; i < n; ++i) host[i] = (float)(i * 2654435761u % 1000003);
    CK(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
    float alpha = 1, beta = 0;
    auto geam = [&](const float* B) {
        cublasStatus_t st = cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, cols, &alpha, in, cols, &beta, B, rows, out, rows);
        if (st != CUBLAS_STATUS_SUCCESS) printf("geam status %d\n", (int)st);
    };
    if (geam_only) { geam(out); geam(out); CK(cudaDeviceSynchronize()); return 0; }

    struct V { std::string name; std::function<void()> f; bool transposed; };
    std::vector<V> vs;
    auto grid = [&](int tr, int tc) { return dim3(cols / tc, rows / tr); };
    vs.push_back({"memcpy", [&] { cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice); }, false});
    vs.push_back({"geam B=C", [&] { geam(out); }, true});
    vs.push_back({"geam B=NULL", [&] { geam(nullptr); }, true});
#define T(TR, TC, BY, H) vs.push_back({"t" #TR "x" #TC " 32x" #BY " h" #H, [&] { tiles<TR, TC, BY, H><<<grid(TR, TC), dim3(32, BY)>>>(in, out, rows, cols); }, true})
    T(32, 32, 8, 0); T(32, 32, 4, 0); T(32, 32, 16, 0);
    T(64, 64, 8, 0); T(64, 64, 4, 0); T(64, 64, 16, 0); T(64, 64, 32, 0);
    T(64, 64, 8, 1); T(64, 64, 8, 2); T(64, 64, 8, 3);
    T(32, 32, 8, 1);
    T(128, 64, 8, 0); T(64, 128, 8, 0); T(128, 64, 16, 0); T(64, 128, 16, 0);
    T(64, 32, 8, 0); T(32, 64, 8, 0);
    vs.push_back({"t64x64 32x8 two tiles", [&] { tiles2<64, 64, 8><<<dim3(cols / 128, rows / 64), dim3(32, 8)>>>(in, out, rows, cols); }, true});
    vs.push_back({"t32x32 32x8 two tiles", [&] { tiles2<32, 32, 8><<<dim3(cols / 64, rows / 32), dim3(32, 8)>>>(in, out, rows, cols); }, true});
    std::vector<std::vector<float>> times(vs.size());
    for (int round = 0; round < 3; ++round) {
        for (size_t k = 0; k < vs.size(); ++k) {
            times[k].push_back(time_it(vs[k].f));
            if (round == 0) {
                CK(cudaMemcpy(back.data(), out, bytes, cudaMemcpyDeviceToHost));
                bool good = true;
                for (size_t r = 0; r < (size_t)rows && good; r += 13)
                    for (size_t c = 0; c < (size_t)cols; c += 7) {
                        float want = host[r * cols + c];
                        float got = vs[k].transposed ? back[c * rows + r] : back[r * cols + c];
                        if (want != got) { good = false; break; }
                    }
                if (!good) printf("%s WRONG\n", vs[k].name.c_str());
                CK(cudaMemset(out, 0xff, bytes));
            }
        }
    }
    for (size_t k = 0; k < vs.size(); ++k) {
        printf("%dx%d %-26s", rows, cols, vs[k].name.c_str());
        for (float ms : times[k]) printf(" %8.4f ms %6.0f GB/s", ms, 2.0 * bytes / ms / 1e6);
        printf("\n");
    }
    return 0;
}
