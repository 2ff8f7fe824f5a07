// last_block.cuh: the deterministic finish of a single-pass reduction (reduce-atomic's last-block
// step, also used by reduce-numerics). Each block writes its value to a partials array and takes a
// ticket from an atomic counter after a memory fence; the block that draws the last ticket reduces
// the partials in a fixed order, so the same input gives the same bits every run.
//
// Needs block_reduce.cuh; *ticket must be 0 before the launch (the last block leaves it 0 again).
#pragma once
#include "block_reduce.cuh"

// A value another block wrote, read from L2, where the other blocks' writes landed, never from a
// stale L1 line. (reduce-numerics adds overloads for its accumulators, one load per field.)
template <class T> __device__ __forceinline__ T load_from_l2(const T* address)
{
    return __ldcg(address);
}

// ANCHOR: last_block
template <class Op>
__device__ __forceinline__ void
reduce_last_block(typename Op::Value block_value, typename Op::Value* __restrict__ partial,
                  unsigned int* __restrict__ ticket, typename Op::Value* __restrict__ result)
{
    __shared__ bool is_last_block;

    block_value = block_reduce<Op>(block_value);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = block_value;
        // Make this block's partial visible to every other block before taking a ticket: the block
        // that draws the last ticket must see all partials.
        // ANCHOR: solution(reduce-atomic) publish the partial (__threadfence), take a ticket from the counter (atomicAdd), and set is_last_block in the block that draws the last one, which then fences again before reading
        __threadfence();
        const unsigned int arrived = atomicAdd(ticket, 1);
        is_last_block = (arrived == gridDim.x - 1);
        if (is_last_block) {
            __threadfence(); // order the reads below after every other block's fence
        }
        // ANCHOR_END: solution
        // ANCHOR: stub is_last_block = false;
    }
    __syncthreads();

    if (is_last_block) {
        // Fixed order: thread t combines partials t, t + 256, t + 512, ..., then the block reduces.
        typename Op::Value value = Op::identity();
        for (unsigned int i = threadIdx.x; i < gridDim.x; i += blockDim.x) {
            value = Op::combine(value, load_from_l2(&partial[i]));
        }
        value = block_reduce<Op>(value);
        if (threadIdx.x == 0) {
            *result = value;
            *ticket = 0; // ready for the next launch
        }
    }
}
// ANCHOR_END: last_block
