// Peers of the compaction family, measured by the tour in the same run as the course's steps:
// NVIDIA CUB's DeviceSelect over the same f32 values, mask and threshold:
//
// - Flagged: keeps the values whose flag byte is nonzero (the counterpart of the single pass by a
//   mask);
// - If: keeps the values greater than a threshold (the counterpart of the single pass by a test).
//
// Each writes the kept values in order and their count (*kept). With a null `temp`, a call only
// writes the scratch CUB needs to *temp_bytes (CUB's two-phase convention); the tour allocates it
// once and times the second form.
#include <cub/device/device_select.cuh>

#include "peers.cuh"

PEER int cub_select_flagged_f32(const float* input, const unsigned char* flags, float* output,
                                unsigned* kept, long long n, void* temp,
                                unsigned long long* temp_bytes, void* stream)
{
    size_t bytes = *temp_bytes;
    cudaError_t status = cub::DeviceSelect::Flagged(temp, bytes, input, flags, output, kept, n,
                                                    (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}

struct GreaterThan {
    float threshold;
    __host__ __device__ bool operator()(float x) const { return x > threshold; }
};

PEER int cub_select_if_greater_f32(const float* input, float* output, unsigned* kept, long long n,
                                   float threshold, void* temp, unsigned long long* temp_bytes,
                                   void* stream)
{
    size_t bytes = *temp_bytes;
    cudaError_t status = cub::DeviceSelect::If(temp, bytes, input, output, kept, n,
                                               GreaterThan{threshold}, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}
