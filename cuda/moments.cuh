// moments.cuh: mean and variance in one pass, the accumulator of reduce-numerics' moments and of
// batch-stats: (count, mean, m2), its one-value and four-value forms, Chan's combination of two,
// and its shuffle and L2 load for the warp and block reductions (block_reduce.cuh,
// last_block.cuh).
#pragma once
#include "block_reduce.cuh"

// ANCHOR: moments
// Mean and variance in one pass. An accumulator holds (count, mean, m2), m2 being the sum of
// squared deviations from the mean; two of them combine exactly as Chan, Golub and LeVeque showed:
//
//   n = na + nb,  d = mean_b - mean_a,  mean = mean_a + d * nb / n,
//   m2 = m2_a + m2_b + d^2 * na * nb / n
//
// Every term of m2 is a square or a product of counts, so m2 never goes negative, and constant data
// gives d = 0 everywhere: a variance of exactly 0. Each thread folds its elements in four at a time
// (their own mean and m2 computed directly, then combined), so the division of the combination is
// paid once per four elements.
struct Moments {
    unsigned long long count;
    float mean;
    float m2;
};

// One value: its own mean, and m2 = x - x, which is 0, or NaN for an infinity or a NaN: the
// variance of data holding an infinity is NaN (inf - inf), as numpy's and torch's are.
__device__ __forceinline__ Moments moments1(float x)
{
    return Moments{1ull, x, x - x};
}

template <class In> struct MomentsOf {
    typedef In Input;
    __device__ static Moments lift(In x) { return moments1((float)x); }
    typedef Moments Value;
    __device__ static Moments identity() { return Moments{0ull, 0.0f, 0.0f}; }
    __device__ static Moments combine(Moments a, Moments b)
    {
        if (a.count == 0)
            return b;
        if (b.count == 0)
            return a;
        const unsigned long long count = a.count + b.count;
        // ANCHOR: solution(reduce-numerics) combine two accumulators with Chan's formula: the mean moves by d = mean_b - mean_a times nb / n, and m2 gains d^2 * na * nb / n
        const float share_b = (float)b.count / (float)count;
        const float d = b.mean - a.mean;
        // Where d overflows (means of opposite signs near f32's limit), the weighted mean does
        // not; an infinite mean stays infinite (NaN where both signs meet), as numpy's does.
        const float mean =
            isfinite(d) ? a.mean + d * share_b : a.mean * (1.0f - share_b) + b.mean * share_b;
        const float weight = (float)a.count * share_b;
        float spread = d * d * weight;
        if (isinf(spread) && isfinite(d)) {
            // d^2 overflowed on its own: (d sqrt(na nb / n))^2 overflows only where m2 does.
            const float t = d * sqrtf(weight);
            spread = t * t;
        }
        const float m2 = (a.m2 + b.m2) + spread;
        return Moments{count, mean, m2};
        // ANCHOR_END: solution
        // ANCHOR: stub return Moments{count, a.mean, a.m2};
    }
};

// Four values at once: their mean, and their squared deviations from it. Where the sum of finite
// values overflows (four values near f32's limit), the mean is taken from the quarters instead;
// the sum is used otherwise, since quartering would round subnormal values.
__device__ __forceinline__ Moments moments4(float a, float b, float c, float d)
{
    const float sum = (a + b) + (c + d);
    const float mean =
        isfinite(sum) ? sum * 0.25f : (a * 0.25f + b * 0.25f) + (c * 0.25f + d * 0.25f);
    const float da = a - mean, db = b - mean, dc = c - mean, dd = d - mean;
    return Moments{4ull, mean, (da * da + db * db) + (dc * dc + dd * dd)};
}

__device__ __forceinline__ Moments shuffle_down(Moments value, int offset)
{
    return Moments{shuffle_down(value.count, offset), shuffle_down(value.mean, offset),
                   shuffle_down(value.m2, offset)};
}

__device__ __forceinline__ Moments load_from_l2(const Moments* address)
{
    return Moments{__ldcg(&address->count), __ldcg(&address->mean), __ldcg(&address->m2)};
}
// ANCHOR_END: moments
