// Measures NVIDIA CUB's DeviceReduce::Sum on f32 at 2^20, 2^24 and 2^28 elements, with the same
// method as this workspace's benches: random inputs in [-1, 1), a warm-up call, then the median of
// 15 batches timed with CUDA events, each batch long enough to last about a millisecond; effective
// bandwidth = (4 n + 4) bytes / time; the device-to-device copy of the same input as the roof.
//
// Build and run on a machine with the CUDA toolkit (CUB ships with it):
//   nvcc -O3 -arch=sm_90 -o cub_reduce_reference scripts/cub_reduce_reference.cu && ./cub_reduce_reference
// It prints one line per size, for the book's summary of how the ladder compares with the library.
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t status_ = (call);                                                            \
        if (status_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status_)); \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

// Median device time of one call of `work`, in milliseconds.
template <class Work>
static double median_ms(Work work)
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
    const int repeats = std::min(1000, std::max(1, (int)(1.0 / std::max(once, 1e-4f))));
    std::vector<double> samples;
    for (int s = 0; s < 15; ++s) {
        CHECK(cudaEventRecord(start));
        for (int r = 0; r < repeats; ++r) {
            work();
        }
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        samples.push_back(ms / repeats);
    }
    std::sort(samples.begin(), samples.end());
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    return samples[samples.size() / 2];
}

int main()
{
    cudaDeviceProp props;
    CHECK(cudaGetDeviceProperties(&props, 0));
    std::printf("CUB %d.%d.%d DeviceReduce::Sum<float> on %s\n", CUB_MAJOR_VERSION, CUB_MINOR_VERSION,
                CUB_SUBMINOR_VERSION, props.name);
    std::printf("%-6s %11s %9s %11s %10s %11s\n", "n", "time (ms)", "GB/s", "copy GB/s", "% of copy", "rel. error");
    std::mt19937 rng(12345);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (int log2n : {20, 24, 28}) {
        const size_t n = size_t(1) << log2n;
        std::vector<float> host(n);
        for (float& x : host) {
            x = uniform(rng);
        }
        float *input = nullptr, *output = nullptr, *copy = nullptr;
        CHECK(cudaMalloc(&input, n * sizeof(float)));
        CHECK(cudaMalloc(&copy, n * sizeof(float)));
        CHECK(cudaMalloc(&output, sizeof(float)));
        CHECK(cudaMemcpy(input, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        size_t temp_bytes = 0;
        CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, input, output, (int)n));
        void* temp = nullptr;
        CHECK(cudaMalloc(&temp, temp_bytes));

        const double reduce_ms = median_ms([&] { CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, input, output, (int)n)); });
        const double copy_ms =
            median_ms([&] { CHECK(cudaMemcpyAsync(copy, input, n * sizeof(float), cudaMemcpyDeviceToDevice)); });

        float result = 0;
        CHECK(cudaMemcpy(&result, output, sizeof(float), cudaMemcpyDeviceToHost));
        double exact = 0;
        for (float x : host) {
            exact += x;
        }
        const double reduce_gbs = (4.0 * n + 4) / (reduce_ms * 1e-3) / 1e9;
        const double copy_gbs = 8.0 * n / (copy_ms * 1e-3) / 1e9;
        std::printf("2^%-4d %11.4f %9.0f %11.0f %9.1f%% %11.2e\n", log2n, reduce_ms, reduce_gbs, copy_gbs,
                    100.0 * reduce_gbs / copy_gbs, std::abs(result - exact) / std::max(1.0, std::abs(exact)));
        CHECK(cudaFree(temp));
        CHECK(cudaFree(output));
        CHECK(cudaFree(copy));
        CHECK(cudaFree(input));
    }
    return 0;
}
