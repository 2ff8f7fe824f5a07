// Shared by the lab programs (scripts/lab/<technique>/*.cu): a CUDA error check, the median time
// of a piece of GPU work as the tour takes it (CUDA events around batches of repeats, enough for
// about a second, the median of 15 batches), bf16 on the host, and a launch on thread block
// clusters.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// The nearest bf16 to x (ties to even), and a bf16's value, on the host.
static unsigned short host_to_bf16(float x)
{
    unsigned bits;
    std::memcpy(&bits, &x, 4);
    return (unsigned short)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}
static float host_bf16_value(unsigned short w)
{
    unsigned bits = (unsigned)w << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// A launch of `grid` blocks of `block` threads (and `smem` bytes of dynamic shared memory) on
// clusters of `cluster` blocks, the cluster's shape given at launch (cudaLaunchKernelEx) rather
// than compiled in. Used in place: `config` points at the member `attribute`.
struct ClusterLaunch {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute[1];
    ClusterLaunch(unsigned grid, unsigned block, unsigned cluster, size_t smem = 0)
    {
        config.gridDim = dim3(grid);
        config.blockDim = dim3(block);
        config.dynamicSmemBytes = smem;
        attribute[0].id = cudaLaunchAttributeClusterDimension;
        attribute[0].val.clusterDim.x = cluster;
        attribute[0].val.clusterDim.y = 1;
        attribute[0].val.clusterDim.z = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
    }
    ClusterLaunch(const ClusterLaunch&) = delete;
};

// kernel<<<grid, block>>>(args...) on clusters of `cluster` blocks.
template <class... Params, class... Args>
static void launch_on_clusters(void (*kernel)(Params...), unsigned grid, unsigned block, unsigned cluster,
                               Args... args)
{
    ClusterLaunch launch(grid, block, cluster);
    CHECK(cudaLaunchKernelEx(&launch.config, kernel, args...));
}
