// Question: does the two-shot all-reduce (reduce-multi-gpu's step 5) cross NVLink faster with
// more vectors in flight per thread, or with another grid? The chapter's kernel, instantiated with
// 1, 2 or 4 vectors a thread folds per turn, on grids of 1/2, 1 and 2 blocks per SM, timed on 2
// and 4 GPUs at 8 to 128 MiB per GPU, f32 sums. Each line: gpus bytes vectors blocks ms per call
// (CUDA events on GPU 0 joined with every GPU, 20 calls after 3 warm-up calls). Its output beside
// it was measured when the meetings' flags were 32-bit words; they are 64-bit now.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o two-shot-grid scripts/lab/reduce-multi-gpu/two-shot-grid.cu && ./two-shot-grid
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../../cuda/reduce_multi_gpu.cu"

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        cudaError_t e = (call);                                                                       \
        if (e != cudaSuccess) {                                                                       \
            std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e));          \
            std::exit(1);                                                                             \
        }                                                                                             \
    } while (0)

template <int VECTORS>
__global__ void __launch_bounds__(512, 2)
    two_shot_sum(float* buffer, const unsigned long long* table, unsigned long long n, unsigned long long epoch)
{
    two_shot<Sum<float>, VECTORS>(buffer, table, n, epoch);
}

typedef void (*Kernel)(float*, const unsigned long long*, unsigned long long, unsigned long long);

int main()
{
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t most = 128ull << 20;
    std::vector<float*> buffers(count);
    std::vector<unsigned long long*> flags(count);
    std::vector<unsigned long long*> tables(count);
    std::vector<cudaStream_t> streams(count);
    for (int g = 0; g < count; ++g) {
        CHECK(cudaSetDevice(g));
        for (int p = 0; p < count; ++p) {
            if (p != g) {
                CHECK(cudaDeviceEnablePeerAccess(p, 0));
            }
        }
        CHECK(cudaMalloc(&buffers[g], most));
        CHECK(cudaMemset(buffers[g], 0, most));
        CHECK(cudaMalloc(&flags[g], 2 * sms * count * sizeof(unsigned long long)));
        CHECK(cudaMemset(flags[g], 0, 2 * sms * count * sizeof(unsigned long long)));
        CHECK(cudaMalloc(&tables[g], (4 + 4 * count) * sizeof(unsigned long long)));
        CHECK(cudaStreamCreate(&streams[g]));
    }
    unsigned long long calls = 0; // epochs keep rising across every variant: the flags are never reset
    Kernel kernels[3] = {two_shot_sum<1>, two_shot_sum<2>, two_shot_sum<4>};
    const int vectors[3] = {1, 2, 4};
    for (int gpus = count; gpus >= 2; gpus /= 2) {
        for (int g = 0; g < gpus; ++g) {
            std::vector<unsigned long long> table = {(unsigned long long)g, (unsigned long long)gpus, 0, 0};
            for (int k = 0; k < 2 * gpus; ++k) {
                table.push_back(0); // no staging buffers or inboxes
            }
            for (int k = 0; k < gpus; ++k) {
                table.push_back((unsigned long long)flags[k]);
            }
            for (int k = 0; k < gpus; ++k) {
                table.push_back((unsigned long long)buffers[k]);
            }
            CHECK(cudaSetDevice(g));
            CHECK(cudaMemcpy(tables[g], table.data(), table.size() * 8, cudaMemcpyHostToDevice));
        }
        for (size_t bytes = 8ull << 20; bytes <= most; bytes *= 2) {
            for (int k = 0; k < 3; ++k) {
                for (int blocks : {sms / 2, sms, 2 * sms}) {
                    auto queue = [&](int times) {
                        for (int c = 0; c < times; ++c, ++calls) {
                            for (int g = 0; g < gpus; ++g) {
                                CHECK(cudaSetDevice(g));
                                kernels[k]<<<blocks, 512, 0, streams[g]>>>(buffers[g], tables[g], bytes / 4,
                                                                          2 * calls + 1);
                            }
                        }
                    };
                    queue(3);
                    std::vector<cudaEvent_t> ends(gpus);
                    cudaEvent_t start;
                    CHECK(cudaSetDevice(0));
                    CHECK(cudaEventCreate(&start));
                    CHECK(cudaEventRecord(start, streams[0]));
                    for (int g = 1; g < gpus; ++g) {
                        CHECK(cudaSetDevice(g));
                        CHECK(cudaStreamWaitEvent(streams[g], start, 0));
                    }
                    queue(20);
                    for (int g = 0; g < gpus; ++g) {
                        CHECK(cudaSetDevice(g));
                        CHECK(cudaEventCreate(&ends[g]));
                        CHECK(cudaEventRecord(ends[g], streams[g]));
                        CHECK(cudaSetDevice(0));
                        CHECK(cudaStreamWaitEvent(streams[0], ends[g], 0));
                    }
                    cudaEvent_t end;
                    CHECK(cudaSetDevice(0));
                    CHECK(cudaEventCreate(&end));
                    CHECK(cudaEventRecord(end, streams[0]));
                    CHECK(cudaEventSynchronize(end));
                    float ms = 0;
                    CHECK(cudaEventElapsedTime(&ms, start, end));
                    std::printf("two-shot %d %zu %d %d %.5f\n", gpus, bytes, vectors[k], blocks, ms / 20);
                    std::fflush(stdout);
                }
            }
        }
    }
    return 0;
}
