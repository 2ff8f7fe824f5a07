// Peers of reduce-multi-level's operators: CUB's DeviceReduce with the same operator, over f32
// and i32, measured by reduce-multi-level's `operators` bench beside the course's kernels.
//
// cub_reduce_<op>_<type>(input, result, n, temp, temp_bytes, stream): DeviceReduce::Reduce with
// the operator and its identity (sum, product, min, max, bitwise and/or/xor), TransformReduce with
// "is not zero" for all and any (a 32-bit 0 or 1, as the course's kernels keep), and
// DeviceReduce::ArgMin / ArgMax (the value and a 64-bit index). The result is written where
// `result` points (for argmin and argmax: the value, then the index at byte 8).
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <cuda/std/limits>

#include "peers.cuh"

namespace {

struct Multiply {
    template <class T> __host__ __device__ T operator()(T a, T b) const { return a * b; }
};
struct Minimum {
    template <class T> __host__ __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct Maximum {
    template <class T> __host__ __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};
struct Plus {
    template <class T> __host__ __device__ T operator()(T a, T b) const { return a + b; }
};
struct BitAnd {
    template <class T> __host__ __device__ T operator()(T a, T b) const { return a & b; }
};
struct BitOr {
    template <class T> __host__ __device__ T operator()(T a, T b) const { return a | b; }
};
struct BitXor {
    template <class T> __host__ __device__ T operator()(T a, T b) const { return a ^ b; }
};
struct NonZero {
    template <class T> __host__ __device__ unsigned int operator()(T x) const { return x != T(0); }
};

template <class T, class Op>
int reduce(const T* input, T* result, long long n, void* temp, unsigned long long* temp_bytes,
           void* stream, Op op, T init)
{
    size_t bytes = *temp_bytes;
    cudaError_t status =
        cub::DeviceReduce::Reduce(temp, bytes, input, result, n, op, init, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}

template <class T, class Op>
int logical(const T* input, unsigned int* result, long long n, void* temp,
            unsigned long long* temp_bytes, void* stream, Op op, unsigned int init)
{
    size_t bytes = *temp_bytes;
    cudaError_t status = cub::DeviceReduce::TransformReduce(temp, bytes, input, result, n, op,
                                                            NonZero(), init, (cudaStream_t)stream);
    *temp_bytes = bytes;
    return (int)status;
}

template <class T>
int arg(bool largest, const T* input, void* result, long long n, void* temp,
        unsigned long long* temp_bytes, void* stream)
{
    size_t bytes = *temp_bytes;
#if defined(CCCL_VERSION) && CCCL_VERSION >= 2008000
    T* value = (T*)result;
    long long* index = (long long*)((char*)result + 8);
    cudaError_t status =
        largest
            ? cub::DeviceReduce::ArgMax(temp, bytes, input, value, index, n, (cudaStream_t)stream)
            : cub::DeviceReduce::ArgMin(temp, bytes, input, value, index, n, (cudaStream_t)stream);
#else
    // Older CUB: a (32-bit index, value) pair.
    cub::KeyValuePair<int, T>* pair = (cub::KeyValuePair<int, T>*)result;
    cudaError_t status =
        largest ? cub::DeviceReduce::ArgMax(temp, bytes, input, pair, (int)n, (cudaStream_t)stream)
                : cub::DeviceReduce::ArgMin(temp, bytes, input, pair, (int)n, (cudaStream_t)stream);
#endif
    *temp_bytes = bytes;
    return (int)status;
}

} // namespace

#define PEER_VALUE(name, T, op, init)                                                              \
    PEER int name(const T* input, T* result, long long n, void* temp,                              \
                  unsigned long long* temp_bytes, void* stream)                                    \
    {                                                                                              \
        return reduce<T>(input, result, n, temp, temp_bytes, stream, op, init);                    \
    }
#define PEER_LOGICAL(name, T, op, init)                                                            \
    PEER int name(const T* input, unsigned int* result, long long n, void* temp,                   \
                  unsigned long long* temp_bytes, void* stream)                                    \
    {                                                                                              \
        return logical<T>(input, result, n, temp, temp_bytes, stream, op, init);                   \
    }
#define PEER_ARG(name, T, largest)                                                                 \
    PEER int name(const T* input, void* result, long long n, void* temp,                           \
                  unsigned long long* temp_bytes, void* stream)                                    \
    {                                                                                              \
        return arg<T>(largest, input, result, n, temp, temp_bytes, stream);                        \
    }

PEER_VALUE(cub_reduce_sum_f32, float, Plus(), 0.0f)
PEER_VALUE(cub_reduce_product_f32, float, Multiply(), 1.0f)
PEER_VALUE(cub_reduce_min_f32, float, Minimum(), cuda::std::numeric_limits<float>::infinity())
PEER_VALUE(cub_reduce_max_f32, float, Maximum(), -cuda::std::numeric_limits<float>::infinity())
PEER_ARG(cub_reduce_argmin_f32, float, false)
PEER_ARG(cub_reduce_argmax_f32, float, true)
PEER_LOGICAL(cub_reduce_all_f32, float, BitAnd(), 1u)
PEER_LOGICAL(cub_reduce_any_f32, float, BitOr(), 0u)

PEER_VALUE(cub_reduce_sum_i32, int, Plus(), 0)
PEER_VALUE(cub_reduce_product_i32, int, Multiply(), 1)
PEER_VALUE(cub_reduce_min_i32, int, Minimum(), cuda::std::numeric_limits<int>::max())
PEER_VALUE(cub_reduce_max_i32, int, Maximum(), cuda::std::numeric_limits<int>::min())
PEER_ARG(cub_reduce_argmin_i32, int, false)
PEER_ARG(cub_reduce_argmax_i32, int, true)
PEER_LOGICAL(cub_reduce_all_i32, int, BitAnd(), 1u)
PEER_LOGICAL(cub_reduce_any_i32, int, BitOr(), 0u)
PEER_VALUE(cub_reduce_bit_and_i32, int, BitAnd(), -1)
PEER_VALUE(cub_reduce_bit_or_i32, int, BitOr(), 0)
PEER_VALUE(cub_reduce_bit_xor_i32, int, BitXor(), 0)
