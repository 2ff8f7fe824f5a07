// roofs.cu: the read roof, the fastest streaming read of a buffer this workspace knows, measured in
// the same run as the steps that only read (reductions, histograms). Not a lesson: a yardstick.
//
// Each thread of a grid that fills the GPU once reads 16-byte vectors in a grid-stride loop, with
// UNROLL independent loads issued before the first one is used, so every SM keeps many bytes in
// flight. The loaded values are added into a register, and the register is stored only if it holds
// a value no real input produces (the caller passes `never`, a NaN bit pattern, and a sum of
// finite floats compares unequal to NaN), so the compiler must perform every load.
//
// Launch: any grid and block; count = number of float4 in the buffer (the buffer is 16-byte
// aligned). The loop index is signed 64-bit, so the compiler may assume it never wraps and unroll
// freely.

template <int UNROLL>
__device__ __forceinline__ void read_roof(const float4* __restrict__ input,
                                          float* __restrict__ sink, long long count, float never)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (; i + (UNROLL - 1) * stride < count; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            v[u] = __ldcs(&input[i + u * stride]);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            sum += (v[u].x + v[u].y) + (v[u].z + v[u].w);
        }
    }
    for (; i < count; i += stride) {
        const float4 v = __ldcs(&input[i]);
        sum += (v.x + v.y) + (v.z + v.w);
    }
    if (sum == never) {
        sink[0] = sum;
    }
}

extern "C" __global__ void read_roof_unroll4(const float4* __restrict__ input,
                                             float* __restrict__ sink, long long count, float never)
{
    read_roof<4>(input, sink, count, never);
}

extern "C" __global__ void read_roof_unroll8(const float4* __restrict__ input,
                                             float* __restrict__ sink, long long count, float never)
{
    read_roof<8>(input, sink, count, never);
}
