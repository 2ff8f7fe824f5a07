// On how many SMs do thread block clusters of 1 to 16 blocks run? Each block of 256 threads
// records the SM it runs on (%smid) and stays 20 us; the program counts the distinct SMs over the
// whole launch (it does not check which blocks overlapped in time). Dynamic shared memory holds 4,
// 2 or 1 blocks on an SM. Printed beside cudaOccupancyMaxActiveClusters for the same launch.
// (softmax's step 7 runs clusters of 4 and 8 blocks of 256, four an SM:
// book/src/softmax/softmax.md, *On the H200*.)
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cluster-sms scripts/lab/softmax/cluster-sms.cu
//   ./cluster-sms
#include <set>

#include "../common/tuning.cuh"

__global__ void __launch_bounds__(256) stay(unsigned* smid)
{
    extern __shared__ char unused[];
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < 20000);
    if (threadIdx.x == 0) {
        smid[blockIdx.x] = id;
        unused[0] = 1;
    }
}

static void probe(int cluster, int blocks_per_sm)
{
    const int grid = 768 * 8, smem = (220 / blocks_per_sm) * 1024;
    CHECK(cudaFuncSetAttribute(stay, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(stay, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    ClusterLaunch launch(grid, 256, cluster, smem);
    int clusters = 0;
    CHECK(cudaOccupancyMaxActiveClusters(&clusters, stay, &launch.config));
    unsigned* smid;
    CHECK(cudaMalloc(&smid, grid * sizeof(unsigned)));
    CHECK(cudaLaunchKernelEx(&launch.config, stay, smid));
    CHECK(cudaDeviceSynchronize());
    std::vector<unsigned> host(grid);
    CHECK(cudaMemcpy(host.data(), smid, grid * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(smid));
    const std::set<unsigned> used(host.begin(), host.end());
    std::printf("cluster %2d, %d blocks/SM: max active clusters %3d (%3d blocks), SMs used %zu\n", cluster,
                blocks_per_sm, clusters, clusters * cluster, used.size());
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s %d SMs\n", prop.name, prop.multiProcessorCount);
    for (int blocks_per_sm : {4, 2, 1}) {
        for (int cluster : {1, 2, 4, 8, 16}) {
            probe(cluster, blocks_per_sm);
        }
    }
    return 0;
}
