// bf16.cuh: bfloat16 in the kernels of softmax, norms and batch-stats. A bf16 value is its 16-bit
// word (unsigned short in memory), widened to f32 to compute and rounded back to be written.
//
// bfloat16 is the top half of an f32: widening is a shift; narrowing rounds to nearest even (a NaN
// stays a NaN). Written out rather than taken from cuda_bf16.h, which NVRTC finds only beside a
// CUDA toolkit. The host rounds as float_to_bf16 does (f32_to_bf16 in gpu_harness::bf16).
#pragma once

__device__ __forceinline__ float bf16_to_float(unsigned int bits)
{
    return __uint_as_float(bits << 16);
}

// The nearest bf16 to y in six integer instructions, on every GPU.
__device__ __forceinline__ unsigned int float_to_bf16(float y)
{
    const unsigned int b = __float_as_uint(y);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return (b >> 16) | 0x40u; // NaN: keep the sign and the top of the payload, made quiet
    }
    return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

// The same rounding in one conversion instruction from sm_80 on (cvt.rn.bf16.f32: a NaN becomes
// the canonical 0x7fff); before, float_to_bf16's six integer instructions.
__device__ __forceinline__ unsigned int float_to_bf16_cvt(float y)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(y));
    return h;
#else
    return float_to_bf16(y);
#endif
}

// Two f32 rounded to bf16 and packed in one 32-bit word, lo in the low half: one conversion
// instruction for the pair from sm_80 on (cvt.rn.bf16x2.f32, NaN as the canonical 0x7fff), before,
// float_to_bf16 twice.
__device__ __forceinline__ unsigned int float2_to_bf16x2_cvt(float lo, float hi)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned int pair;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pair) : "f"(hi), "f"(lo));
    return pair;
#else
    return float_to_bf16(lo) | (float_to_bf16(hi) << 16);
#endif
}
