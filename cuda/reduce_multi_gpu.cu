// reduce-multi-gpu: the one kernel the ring all-reduce needs of its own.
//
// Steps 1 and 2 reduce each GPU's part with reduce-atomic's deterministic single-pass kernel
// (cuda/reduce_atomic.cu) and move one value per GPU. Step 3, the ring all-reduce, moves chunks
// between GPUs with peer-to-peer copies (the copy engines, no kernel) and needs a kernel only to
// fold a chunk it received into its own:
//
//   ring_combine_<op>_<type>(into, from, n):   into[i] = op(into[i], from[i])   for i < n
//
// with the reductions' operations from block_reduce.cuh (wrapping integer sums, NaN-wins min and
// max), so a ring all-reduce gives what reducing the whole input on one GPU gives, for integers
// exactly.
//
// What it leaves slow: nothing of its own. It reads two elements and writes one at memory speed,
// while the copies that feed it cross NVLink about ten times slower; the ring's cost is in the
// copies, in the steps they wait for each other, and in the host that issues them.
//
// Launch: 256 threads per block, any 1-D grid (the launcher fills the GPU once); n is 64-bit.
#include "block_reduce.cuh"

// ANCHOR: combine
template <class Op>
__device__ __forceinline__ void combine_into(typename Op::Value* __restrict__ into,
                                             const typename Op::Value* __restrict__ from, unsigned long long n)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        // ANCHOR: solution fold: into[i] becomes the operation (Op::combine) of into[i] and from[i]
        into[i] = Op::combine(into[i], from[i]);
        // ANCHOR_END: solution
    }
}
// ANCHOR_END: combine

// The entry points, ring_combine_<op>_<type>: one per operation and element type.
extern "C" __global__ void ring_combine_sum_f32(float* into, const float* from, unsigned long long n)
{
    combine_into<Sum<float> >(into, from, n);
}

extern "C" __global__ void ring_combine_min_f32(float* into, const float* from, unsigned long long n)
{
    combine_into<Min<float> >(into, from, n);
}

extern "C" __global__ void ring_combine_max_f32(float* into, const float* from, unsigned long long n)
{
    combine_into<Max<float> >(into, from, n);
}

extern "C" __global__ void ring_combine_sum_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Sum<int> >(into, from, n);
}

extern "C" __global__ void ring_combine_min_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Min<int> >(into, from, n);
}

extern "C" __global__ void ring_combine_max_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Max<int> >(into, from, n);
}

extern "C" __global__ void ring_combine_sum_u32(unsigned int* into, const unsigned int* from, unsigned long long n)
{
    combine_into<Sum<unsigned int> >(into, from, n);
}

extern "C" __global__ void ring_combine_min_u32(unsigned int* into, const unsigned int* from, unsigned long long n)
{
    combine_into<Min<unsigned int> >(into, from, n);
}

extern "C" __global__ void ring_combine_max_u32(unsigned int* into, const unsigned int* from, unsigned long long n)
{
    combine_into<Max<unsigned int> >(into, from, n);
}
