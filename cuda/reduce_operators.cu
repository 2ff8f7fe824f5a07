// reduce-multi-level's operators: the full reduction (reduce_multi_level.cu's passes) with every
// built-in operator of operators.cuh, for the element types where it means something. Each
// operator and type has two entry points, reduce_<op>_<type> (the first pass, over the input) and
// reduce_<op>_<type>_later (the later passes, over the first pass's values); the launcher is
// reduce-multi-level's `Reduce`.
//
// Launch: blockDim.x = 256, no dynamic shared memory, any gridDim.x; n is 64-bit.
#include "operators.cuh"

// sum
typedef Sum<float> Sum_f32;
OPERATOR_KERNELS(reduce_sum_f32, reduce_sum_f32_later, Sum_f32)
typedef Sum<double> Sum_f64;
OPERATOR_KERNELS(reduce_sum_f64, reduce_sum_f64_later, Sum_f64)
typedef Sum<int> Sum_i32;
OPERATOR_KERNELS(reduce_sum_i32, reduce_sum_i32_later, Sum_i32)
typedef Sum<unsigned int> Sum_u32;
OPERATOR_KERNELS(reduce_sum_u32, reduce_sum_u32_later, Sum_u32)
typedef Sum<unsigned long long> Sum_u64;
OPERATOR_KERNELS(reduce_sum_u64, reduce_sum_u64_later, Sum_u64)

// product
typedef Product<float> Product_f32;
OPERATOR_KERNELS(reduce_product_f32, reduce_product_f32_later, Product_f32)
typedef Product<double> Product_f64;
OPERATOR_KERNELS(reduce_product_f64, reduce_product_f64_later, Product_f64)
typedef Product<int> Product_i32;
OPERATOR_KERNELS(reduce_product_i32, reduce_product_i32_later, Product_i32)
typedef Product<unsigned int> Product_u32;
OPERATOR_KERNELS(reduce_product_u32, reduce_product_u32_later, Product_u32)
typedef Product<unsigned long long> Product_u64;
OPERATOR_KERNELS(reduce_product_u64, reduce_product_u64_later, Product_u64)

// min
typedef Min<float> Min_f32;
OPERATOR_KERNELS(reduce_min_f32, reduce_min_f32_later, Min_f32)
typedef Min<double> Min_f64;
OPERATOR_KERNELS(reduce_min_f64, reduce_min_f64_later, Min_f64)
typedef Min<int> Min_i32;
OPERATOR_KERNELS(reduce_min_i32, reduce_min_i32_later, Min_i32)
typedef Min<unsigned int> Min_u32;
OPERATOR_KERNELS(reduce_min_u32, reduce_min_u32_later, Min_u32)
typedef Min<unsigned long long> Min_u64;
OPERATOR_KERNELS(reduce_min_u64, reduce_min_u64_later, Min_u64)

// max
typedef Max<float> Max_f32;
OPERATOR_KERNELS(reduce_max_f32, reduce_max_f32_later, Max_f32)
typedef Max<double> Max_f64;
OPERATOR_KERNELS(reduce_max_f64, reduce_max_f64_later, Max_f64)
typedef Max<int> Max_i32;
OPERATOR_KERNELS(reduce_max_i32, reduce_max_i32_later, Max_i32)
typedef Max<unsigned int> Max_u32;
OPERATOR_KERNELS(reduce_max_u32, reduce_max_u32_later, Max_u32)
typedef Max<unsigned long long> Max_u64;
OPERATOR_KERNELS(reduce_max_u64, reduce_max_u64_later, Max_u64)

// argmin
typedef ArgMin<float> ArgMin_f32;
OPERATOR_KERNELS(reduce_argmin_f32, reduce_argmin_f32_later, ArgMin_f32)
typedef ArgMin<double> ArgMin_f64;
OPERATOR_KERNELS(reduce_argmin_f64, reduce_argmin_f64_later, ArgMin_f64)
typedef ArgMin<int> ArgMin_i32;
OPERATOR_KERNELS(reduce_argmin_i32, reduce_argmin_i32_later, ArgMin_i32)
typedef ArgMin<unsigned int> ArgMin_u32;
OPERATOR_KERNELS(reduce_argmin_u32, reduce_argmin_u32_later, ArgMin_u32)
typedef ArgMin<unsigned long long> ArgMin_u64;
OPERATOR_KERNELS(reduce_argmin_u64, reduce_argmin_u64_later, ArgMin_u64)

// argmax
typedef ArgMax<float> ArgMax_f32;
OPERATOR_KERNELS(reduce_argmax_f32, reduce_argmax_f32_later, ArgMax_f32)
typedef ArgMax<double> ArgMax_f64;
OPERATOR_KERNELS(reduce_argmax_f64, reduce_argmax_f64_later, ArgMax_f64)
typedef ArgMax<int> ArgMax_i32;
OPERATOR_KERNELS(reduce_argmax_i32, reduce_argmax_i32_later, ArgMax_i32)
typedef ArgMax<unsigned int> ArgMax_u32;
OPERATOR_KERNELS(reduce_argmax_u32, reduce_argmax_u32_later, ArgMax_u32)
typedef ArgMax<unsigned long long> ArgMax_u64;
OPERATOR_KERNELS(reduce_argmax_u64, reduce_argmax_u64_later, ArgMax_u64)

// all
typedef All<unsigned char> All_u8;
OPERATOR_KERNELS(reduce_all_u8, reduce_all_u8_later, All_u8)
typedef All<float> All_f32;
OPERATOR_KERNELS(reduce_all_f32, reduce_all_f32_later, All_f32)
typedef All<double> All_f64;
OPERATOR_KERNELS(reduce_all_f64, reduce_all_f64_later, All_f64)
typedef All<int> All_i32;
OPERATOR_KERNELS(reduce_all_i32, reduce_all_i32_later, All_i32)
typedef All<unsigned int> All_u32;
OPERATOR_KERNELS(reduce_all_u32, reduce_all_u32_later, All_u32)

// any
typedef Any<unsigned char> Any_u8;
OPERATOR_KERNELS(reduce_any_u8, reduce_any_u8_later, Any_u8)
typedef Any<float> Any_f32;
OPERATOR_KERNELS(reduce_any_f32, reduce_any_f32_later, Any_f32)
typedef Any<double> Any_f64;
OPERATOR_KERNELS(reduce_any_f64, reduce_any_f64_later, Any_f64)
typedef Any<int> Any_i32;
OPERATOR_KERNELS(reduce_any_i32, reduce_any_i32_later, Any_i32)
typedef Any<unsigned int> Any_u32;
OPERATOR_KERNELS(reduce_any_u32, reduce_any_u32_later, Any_u32)

// bit_and
typedef BitAnd<int> BitAnd_i32;
OPERATOR_KERNELS(reduce_bit_and_i32, reduce_bit_and_i32_later, BitAnd_i32)
typedef BitAnd<unsigned int> BitAnd_u32;
OPERATOR_KERNELS(reduce_bit_and_u32, reduce_bit_and_u32_later, BitAnd_u32)
typedef BitAnd<unsigned long long> BitAnd_u64;
OPERATOR_KERNELS(reduce_bit_and_u64, reduce_bit_and_u64_later, BitAnd_u64)

// bit_or
typedef BitOr<int> BitOr_i32;
OPERATOR_KERNELS(reduce_bit_or_i32, reduce_bit_or_i32_later, BitOr_i32)
typedef BitOr<unsigned int> BitOr_u32;
OPERATOR_KERNELS(reduce_bit_or_u32, reduce_bit_or_u32_later, BitOr_u32)
typedef BitOr<unsigned long long> BitOr_u64;
OPERATOR_KERNELS(reduce_bit_or_u64, reduce_bit_or_u64_later, BitOr_u64)

// bit_xor
typedef BitXor<int> BitXor_i32;
OPERATOR_KERNELS(reduce_bit_xor_i32, reduce_bit_xor_i32_later, BitXor_i32)
typedef BitXor<unsigned int> BitXor_u32;
OPERATOR_KERNELS(reduce_bit_xor_u32, reduce_bit_xor_u32_later, BitXor_u32)
typedef BitXor<unsigned long long> BitXor_u64;
OPERATOR_KERNELS(reduce_bit_xor_u64, reduce_bit_xor_u64_later, BitXor_u64)
