// reduce-atomic's operators: the full reduction in one launch (reduce_atomic.cu's last-block
// finish) with every built-in operator of operators.cuh, for the same element types as
// reduce_operators.cu. One entry point per operator and type, last_block_<op>_<type>; the
// launcher is reduce-atomic's `operators::Reduce`.
//
// reduce_atomic.cu's other finish, an atomic per block, does not generalise: the hardware has
// atomics for a few operators of a few types (and for floats adds in the order the blocks finish).
// The last-block finish needs only the operator: each block writes its value to the partials,
// and the last block to arrive combines them in a fixed order. The thread's share is read as in
// the multi-level form's first pass (thread_value: 16-byte grid-stride loads, or argmin's lighter
// loop).
//
// Launch: blockDim.x = 256, no dynamic shared memory, gridDim.x at most 2^31 - 1; n is 64-bit;
// *ticket = 0 before the launch (the last block leaves it 0 again).
#include "last_block.cuh"
#include "operators.cuh"

// An argmin's or argmax's (value, index) written by another block, each field read from L2.
template <class T> __device__ __forceinline__ Arg<T> load_from_l2(const Arg<T>* address)
{
    return Arg<T>{__ldcg(&address->value), __ldcg(&address->index)};
}

#define LAST_BLOCK_KERNEL(name, Op)                                                                \
    extern "C" __global__ void __launch_bounds__(256, 8) name(                                     \
        const Op::Input* __restrict__ input, Op::Value* __restrict__ partial,                      \
        unsigned int* __restrict__ ticket, Op::Value* __restrict__ result, unsigned long long n)   \
    {                                                                                              \
        reduce_last_block<Op>(thread_value<Op>(input, n), partial, ticket, result);                \
    }

// sum
LAST_BLOCK_KERNEL(last_block_sum_f32, Sum_f32)
LAST_BLOCK_KERNEL(last_block_sum_f64, Sum_f64)
LAST_BLOCK_KERNEL(last_block_sum_i32, Sum_i32)
LAST_BLOCK_KERNEL(last_block_sum_u32, Sum_u32)
LAST_BLOCK_KERNEL(last_block_sum_u64, Sum_u64)

// product
LAST_BLOCK_KERNEL(last_block_product_f32, Product_f32)
LAST_BLOCK_KERNEL(last_block_product_f64, Product_f64)
LAST_BLOCK_KERNEL(last_block_product_i32, Product_i32)
LAST_BLOCK_KERNEL(last_block_product_u32, Product_u32)
LAST_BLOCK_KERNEL(last_block_product_u64, Product_u64)

// min
LAST_BLOCK_KERNEL(last_block_min_f32, Min_f32)
LAST_BLOCK_KERNEL(last_block_min_f64, Min_f64)
LAST_BLOCK_KERNEL(last_block_min_i32, Min_i32)
LAST_BLOCK_KERNEL(last_block_min_u32, Min_u32)
LAST_BLOCK_KERNEL(last_block_min_u64, Min_u64)

// max
LAST_BLOCK_KERNEL(last_block_max_f32, Max_f32)
LAST_BLOCK_KERNEL(last_block_max_f64, Max_f64)
LAST_BLOCK_KERNEL(last_block_max_i32, Max_i32)
LAST_BLOCK_KERNEL(last_block_max_u32, Max_u32)
LAST_BLOCK_KERNEL(last_block_max_u64, Max_u64)

// argmin
LAST_BLOCK_KERNEL(last_block_argmin_f32, ArgMin_f32)
LAST_BLOCK_KERNEL(last_block_argmin_f64, ArgMin_f64)
LAST_BLOCK_KERNEL(last_block_argmin_i32, ArgMin_i32)
LAST_BLOCK_KERNEL(last_block_argmin_u32, ArgMin_u32)
LAST_BLOCK_KERNEL(last_block_argmin_u64, ArgMin_u64)

// argmax
LAST_BLOCK_KERNEL(last_block_argmax_f32, ArgMax_f32)
LAST_BLOCK_KERNEL(last_block_argmax_f64, ArgMax_f64)
LAST_BLOCK_KERNEL(last_block_argmax_i32, ArgMax_i32)
LAST_BLOCK_KERNEL(last_block_argmax_u32, ArgMax_u32)
LAST_BLOCK_KERNEL(last_block_argmax_u64, ArgMax_u64)

// all
LAST_BLOCK_KERNEL(last_block_all_u8, All_u8)
LAST_BLOCK_KERNEL(last_block_all_f32, All_f32)
LAST_BLOCK_KERNEL(last_block_all_f64, All_f64)
LAST_BLOCK_KERNEL(last_block_all_i32, All_i32)
LAST_BLOCK_KERNEL(last_block_all_u32, All_u32)

// any
LAST_BLOCK_KERNEL(last_block_any_u8, Any_u8)
LAST_BLOCK_KERNEL(last_block_any_f32, Any_f32)
LAST_BLOCK_KERNEL(last_block_any_f64, Any_f64)
LAST_BLOCK_KERNEL(last_block_any_i32, Any_i32)
LAST_BLOCK_KERNEL(last_block_any_u32, Any_u32)

// bit_and
LAST_BLOCK_KERNEL(last_block_bit_and_i32, BitAnd_i32)
LAST_BLOCK_KERNEL(last_block_bit_and_u32, BitAnd_u32)
LAST_BLOCK_KERNEL(last_block_bit_and_u64, BitAnd_u64)

// bit_or
LAST_BLOCK_KERNEL(last_block_bit_or_i32, BitOr_i32)
LAST_BLOCK_KERNEL(last_block_bit_or_u32, BitOr_u32)
LAST_BLOCK_KERNEL(last_block_bit_or_u64, BitOr_u64)

// bit_xor
LAST_BLOCK_KERNEL(last_block_bit_xor_i32, BitXor_i32)
LAST_BLOCK_KERNEL(last_block_bit_xor_u32, BitXor_u32)
LAST_BLOCK_KERNEL(last_block_bit_xor_u64, BitXor_u64)
