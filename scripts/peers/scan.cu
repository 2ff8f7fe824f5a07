// Peers of the scan family, measured by the tour in the same run as the course's steps: NVIDIA
// CUB's DeviceScan, the library a scan is judged against, over the same random inputs:
//
// - InclusiveSum of f32 (the counterpart of the course's f32 inclusive single pass);
// - ExclusiveSum of i32 (the counterpart of its i32 exclusive single pass).
//
// With a null `temp`, each call only writes the scratch CUB needs to *temp_bytes (CUB's own
// two-phase convention); the tour allocates it once and times the second form.
#include <cub/device/device_scan.cuh>

#include "peers.cuh"

PEER int cub_inclusive_sum_f32(const float* input, float* output, long long n, void* temp,
                               unsigned long long* temp_bytes, void* stream)
{
    size_t bytes = *temp_bytes;
    cudaError_t status =
        cub::DeviceScan::InclusiveSum(temp, bytes, input, output, n, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}

PEER int cub_exclusive_sum_i32(const int* input, int* output, long long n, void* temp,
                               unsigned long long* temp_bytes, void* stream)
{
    size_t bytes = *temp_bytes;
    cudaError_t status =
        cub::DeviceScan::ExclusiveSum(temp, bytes, input, output, n, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}
