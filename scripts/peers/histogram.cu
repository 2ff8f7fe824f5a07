// Peers of the histogram family, measured by the tour in the same run as the course's steps:
// NVIDIA CUB's DeviceHistogram::HistogramEven, the library a histogram is judged against,
//
// - on bytes: 256 bins, levels 0, 1, ..., 256 (bin b counts the byte value b);
// - on f32: `bins` even bins over [lower, upper) (bins + 1 levels).
//
// CUB zeroes the counts itself. Sample counts are passed to CUB as int (the tour's inputs are 2^30
// bytes and 2^28 floats); a larger n is refused with cudaErrorInvalidValue.
#include <climits>

#include <cub/device/device_histogram.cuh>

#include "peers.cuh"

PEER int cub_histogram_even_u8(const unsigned char* samples, unsigned int* counts, long long n,
                               void* temp, unsigned long long* temp_bytes, void* stream)
{
    if (n < 0 || n > INT_MAX) {
        return (int)cudaErrorInvalidValue;
    }
    size_t bytes = *temp_bytes;
    cudaError_t status = cub::DeviceHistogram::HistogramEven(temp, bytes, samples, counts, 257, 0,
                                                             256, (int)n, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}

PEER int cub_histogram_even_f32(const float* samples, unsigned int* counts, long long n, int bins,
                                float lower, float upper, void* temp,
                                unsigned long long* temp_bytes, void* stream)
{
    if (n < 0 || n > INT_MAX) {
        return (int)cudaErrorInvalidValue;
    }
    size_t bytes = *temp_bytes;
    cudaError_t status = cub::DeviceHistogram::HistogramEven(
        temp, bytes, samples, counts, bins + 1, lower, upper, (int)n, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}
