// reduce-multi-level's operators: the full reduction (reduce_multi_level.cu's passes) with every
// built-in operator of operators.cuh, for the element types where it means something. Each
// operator and type has two entry points, reduce_<op>_<type> (the first pass, over the input) and
// reduce_<op>_<type>_later (the later passes, over the first pass's values); the launcher is
// reduce-multi-level's `Reduce`.
//
// Launch: blockDim.x = 256, no dynamic shared memory, any gridDim.x; n is 64-bit.
#include "operators.cuh"

// sum
OPERATOR_KERNELS(reduce_sum_f32, reduce_sum_f32_later, Sum_f32)
OPERATOR_KERNELS(reduce_sum_f64, reduce_sum_f64_later, Sum_f64)
OPERATOR_KERNELS(reduce_sum_i32, reduce_sum_i32_later, Sum_i32)
OPERATOR_KERNELS(reduce_sum_u32, reduce_sum_u32_later, Sum_u32)
OPERATOR_KERNELS(reduce_sum_u64, reduce_sum_u64_later, Sum_u64)

// product
OPERATOR_KERNELS(reduce_product_f32, reduce_product_f32_later, Product_f32)
OPERATOR_KERNELS(reduce_product_f64, reduce_product_f64_later, Product_f64)
OPERATOR_KERNELS(reduce_product_i32, reduce_product_i32_later, Product_i32)
OPERATOR_KERNELS(reduce_product_u32, reduce_product_u32_later, Product_u32)
OPERATOR_KERNELS(reduce_product_u64, reduce_product_u64_later, Product_u64)

// min
OPERATOR_KERNELS(reduce_min_f32, reduce_min_f32_later, Min_f32)
OPERATOR_KERNELS(reduce_min_f64, reduce_min_f64_later, Min_f64)
OPERATOR_KERNELS(reduce_min_i32, reduce_min_i32_later, Min_i32)
OPERATOR_KERNELS(reduce_min_u32, reduce_min_u32_later, Min_u32)
OPERATOR_KERNELS(reduce_min_u64, reduce_min_u64_later, Min_u64)

// max
OPERATOR_KERNELS(reduce_max_f32, reduce_max_f32_later, Max_f32)
OPERATOR_KERNELS(reduce_max_f64, reduce_max_f64_later, Max_f64)
OPERATOR_KERNELS(reduce_max_i32, reduce_max_i32_later, Max_i32)
OPERATOR_KERNELS(reduce_max_u32, reduce_max_u32_later, Max_u32)
OPERATOR_KERNELS(reduce_max_u64, reduce_max_u64_later, Max_u64)

// argmin
OPERATOR_KERNELS(reduce_argmin_f32, reduce_argmin_f32_later, ArgMin_f32)
OPERATOR_KERNELS(reduce_argmin_f64, reduce_argmin_f64_later, ArgMin_f64)
OPERATOR_KERNELS(reduce_argmin_i32, reduce_argmin_i32_later, ArgMin_i32)
OPERATOR_KERNELS(reduce_argmin_u32, reduce_argmin_u32_later, ArgMin_u32)
OPERATOR_KERNELS(reduce_argmin_u64, reduce_argmin_u64_later, ArgMin_u64)

// argmax
OPERATOR_KERNELS(reduce_argmax_f32, reduce_argmax_f32_later, ArgMax_f32)
OPERATOR_KERNELS(reduce_argmax_f64, reduce_argmax_f64_later, ArgMax_f64)
OPERATOR_KERNELS(reduce_argmax_i32, reduce_argmax_i32_later, ArgMax_i32)
OPERATOR_KERNELS(reduce_argmax_u32, reduce_argmax_u32_later, ArgMax_u32)
OPERATOR_KERNELS(reduce_argmax_u64, reduce_argmax_u64_later, ArgMax_u64)

// all
OPERATOR_KERNELS(reduce_all_u8, reduce_all_u8_later, All_u8)
OPERATOR_KERNELS(reduce_all_f32, reduce_all_f32_later, All_f32)
OPERATOR_KERNELS(reduce_all_f64, reduce_all_f64_later, All_f64)
OPERATOR_KERNELS(reduce_all_i32, reduce_all_i32_later, All_i32)
OPERATOR_KERNELS(reduce_all_u32, reduce_all_u32_later, All_u32)

// any
OPERATOR_KERNELS(reduce_any_u8, reduce_any_u8_later, Any_u8)
OPERATOR_KERNELS(reduce_any_f32, reduce_any_f32_later, Any_f32)
OPERATOR_KERNELS(reduce_any_f64, reduce_any_f64_later, Any_f64)
OPERATOR_KERNELS(reduce_any_i32, reduce_any_i32_later, Any_i32)
OPERATOR_KERNELS(reduce_any_u32, reduce_any_u32_later, Any_u32)

// bit_and
OPERATOR_KERNELS(reduce_bit_and_i32, reduce_bit_and_i32_later, BitAnd_i32)
OPERATOR_KERNELS(reduce_bit_and_u32, reduce_bit_and_u32_later, BitAnd_u32)
OPERATOR_KERNELS(reduce_bit_and_u64, reduce_bit_and_u64_later, BitAnd_u64)

// bit_or
OPERATOR_KERNELS(reduce_bit_or_i32, reduce_bit_or_i32_later, BitOr_i32)
OPERATOR_KERNELS(reduce_bit_or_u32, reduce_bit_or_u32_later, BitOr_u32)
OPERATOR_KERNELS(reduce_bit_or_u64, reduce_bit_or_u64_later, BitOr_u64)

// bit_xor
OPERATOR_KERNELS(reduce_bit_xor_i32, reduce_bit_xor_i32_later, BitXor_i32)
OPERATOR_KERNELS(reduce_bit_xor_u32, reduce_bit_xor_u32_later, BitXor_u32)
OPERATOR_KERNELS(reduce_bit_xor_u64, reduce_bit_xor_u64_later, BitXor_u64)
