// Shared by the peer sources: every peer function returns a cudaError_t as an int (0 for success)
// and runs on the caller's stream, passed last as a plain pointer (a cudaStream_t).
#pragma once
#include <cuda_runtime.h>

#define PEER extern "C" __attribute__((visibility("default")))

// The number of SMs of the current device (asked once).
static int peer_multiprocessors()
{
    static int count = 0;
    if (count == 0) {
        int device = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    }
    return count;
}
