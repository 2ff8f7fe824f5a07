// Shared by the tuning programs (scripts/*-tuning.cu): a CUDA error check, and the median time of
// a piece of GPU work as the tour takes it: CUDA events around batches of repeats (enough for about
// a second), the median of 15 batches.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(call)                                                                                 \
    do {                                                                                            \
        cudaError_t e = (call);                                                                     \
        if (e != cudaSuccess) {                                                                     \
            std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));                 \
            std::exit(1);                                                                           \
        }                                                                                           \
    } while (0)

static double median_ms(const std::function<void()>& work)
{
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    work();
    CHECK(cudaEventRecord(start));
    work();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float once = 0;
    CHECK(cudaEventElapsedTime(&once, start, stop));
    int repeats = std::min(1000, std::max(1, (int)(1.0 / std::max(once, 1e-4f)) + 1));
    std::vector<double> times;
    for (int s = 0; s < 15; ++s) {
        CHECK(cudaEventRecord(start));
        for (int r = 0; r < repeats; ++r) work();
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(ms / repeats);
    }
    CHECK(cudaGetLastError());
    std::sort(times.begin(), times.end());
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return times[times.size() / 2];
}
