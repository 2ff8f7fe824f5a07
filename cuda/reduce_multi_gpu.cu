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

#define RING_COMBINE(op_name, Op, T, suffix)                                                                  \
    extern "C" __global__ void ring_combine_##op_name##_##suffix(T* into, const T* from, unsigned long long n) \
    {                                                                                                         \
        combine_into<Op>(into, from, n);                                                                      \
    }

RING_COMBINE(sum, Sum<float>, float, f32)
RING_COMBINE(min, Min<float>, float, f32)
RING_COMBINE(max, Max<float>, float, f32)
RING_COMBINE(sum, Sum<int>, int, i32)
RING_COMBINE(min, Min<int>, int, i32)
RING_COMBINE(max, Max<int>, int, i32)
RING_COMBINE(sum, Sum<unsigned int>, unsigned int, u32)
RING_COMBINE(min, Min<unsigned int>, unsigned int, u32)
RING_COMBINE(max, Max<unsigned int>, unsigned int, u32)
