// What cluster_rows (cuda/softmax.cu) does with a block's share, in pieces the softmax lab
// programs reuse (scripts/lab/softmax/cluster-shape.cu and persistent-exchange.cu): this thread's
// max over its VALUES slots, and this thread's sum of e = exp(x - shift) (e kept in place of x
// where the slot has room). Include after cuda/softmax.cu.
#pragma once

template <class E, int VALUES, class Share>
__device__ __forceinline__ float thread_max(const Share& share)
{
    float m = MaxNaN::identity();
#pragma unroll
    for (int j = 0; j < VALUES; j++) m = MaxNaN::combine(m, share.get(j));
    return m;
}
template <class E, int VALUES, class Share>
__device__ __forceinline__ float thread_sum_exp(Share& share, float shift)
{
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < VALUES; j++) {
        const float e = E::exp(share.get(j) - shift);
        share.keep(j, e);
        s += e;
    }
    return s;
}
