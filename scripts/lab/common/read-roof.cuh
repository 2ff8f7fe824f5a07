// The read roof of the batch-statistics lab programs (scripts/lab/batch-stats/): the faster of
// cuda/roofs.cu's two streaming reads (four or eight 16-byte loads in flight a thread) over the
// same bytes, each on eight blocks of 256 an SM and timed by tuning.cuh's median_ms. Included in
// place of roofs.cu.
#pragma once
#include "../../../cuda/roofs.cu"

#include <algorithm>
#include <cmath>

#include "tuning.cuh"

struct ReadRoof {
    double unroll4, unroll8; // ms
    double ms() const { return std::min(unroll4, unroll8); }
};

// The read roof of `bytes` (a multiple of 16) at `x`, the reads' sums going to `sink` (one float).
static ReadRoof read_roof(const void* x, size_t bytes, float* sink)
{
    int device = 0, sms = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const unsigned grid = (unsigned)sms * 8;
    const long long vectors = (long long)(bytes / 16);
    ReadRoof roof;
    roof.unroll4 = median_ms([&] { read_roof_unroll4<<<grid, 256>>>((const float4*)x, sink, vectors, NAN); });
    roof.unroll8 = median_ms([&] { read_roof_unroll8<<<grid, 256>>>((const float4*)x, sink, vectors, NAN); });
    return roof;
}
