// operators.cuh: the full reduction with any associative operator, for reduce-multi-level's
// operators (cuda/reduce_operators.cu, one kernel pair per built-in operator and type) and for
// operators a user writes in CUDA C++ (compiled at run time into the same templates: see
// reduce-multi-level's `UserReduce`).
//
// An operator is an operation in the sense of block_reduce.cuh (Input, Value, lift, identity,
// combine), with two optional properties, found by the templates below:
//   lift(x, i)      instead of lift(x): the element's index too (argmin, argmax);
//   commutative     a static constant; false makes the kernels combine the elements strictly in
//                   their order (see first_pass). Absent means true.
// combine must be associative: the kernels group the elements differently for every grid (a plan
// is a pure function of n and the GPU, so one plan on one GPU always groups them the same way).
// identity() must change nothing: combine(identity(), x) == x == combine(x, identity()); padding
// lanes and empty shares hold it.
#pragma once
#include "block_reduce.cuh"

// ANCHOR: operators
// Products wrap around for integers (computed unsigned: signed overflow is undefined in C++), as
// numpy's and torch's do; float products overflow to inf, and NaN spreads, as IEEE arithmetic does.
__device__ __forceinline__ float wrapping_mul(float a, float b)
{
    return a * b;
}
__device__ __forceinline__ double wrapping_mul(double a, double b)
{
    return a * b;
}
__device__ __forceinline__ int wrapping_mul(int a, int b)
{
    return (int)((unsigned int)a * (unsigned int)b);
}
__device__ __forceinline__ unsigned int wrapping_mul(unsigned int a, unsigned int b)
{
    return a * b;
}
__device__ __forceinline__ unsigned long long wrapping_mul(unsigned long long a,
                                                           unsigned long long b)
{
    return a * b;
}

template <class T> struct Product {
    typedef T Input;
    typedef T Value;
    __device__ static T lift(T x) { return x; }
    __device__ static T identity() { return (T)1; }
    __device__ static T combine(T a, T b) { return wrapping_mul(a, b); }
};

// Logical and / or (numpy's all / any): an element is true when it is not zero (NaN is true, -0.0
// false, as bool(x) is in Python). Values are 0 or 1 in 32 bits (what a shuffle moves).
template <class In> struct All {
    typedef In Input;
    typedef unsigned int Value;
    __device__ static unsigned int lift(In x) { return x != (In)0; }
    __device__ static unsigned int identity() { return 1u; }
    __device__ static unsigned int combine(unsigned int a, unsigned int b) { return a & b; }
};

template <class In> struct Any {
    typedef In Input;
    typedef unsigned int Value;
    __device__ static unsigned int lift(In x) { return x != (In)0; }
    __device__ static unsigned int identity() { return 0u; }
    __device__ static unsigned int combine(unsigned int a, unsigned int b) { return a | b; }
};

// Bitwise and / or / xor of integers: identities all ones, 0 and 0.
template <class T> struct BitAnd {
    typedef T Input;
    typedef T Value;
    __device__ static T lift(T x) { return x; }
    __device__ static T identity() { return (T) ~(T)0; }
    __device__ static T combine(T a, T b) { return a & b; }
};

template <class T> struct BitOr {
    typedef T Input;
    typedef T Value;
    __device__ static T lift(T x) { return x; }
    __device__ static T identity() { return (T)0; }
    __device__ static T combine(T a, T b) { return a | b; }
};

template <class T> struct BitXor {
    typedef T Input;
    typedef T Value;
    __device__ static T lift(T x) { return x; }
    __device__ static T identity() { return (T)0; }
    __device__ static T combine(T a, T b) { return a ^ b; }
};

// argmin / argmax: a value and its index (64-bit: inputs may pass 2^32 elements). NaN beats every
// number (numpy's and torch's argmax and argmin return the first NaN); between equal values, or
// two NaNs, the smaller index wins, so the result is the first extreme whatever the grouping. The
// identity, (+inf or -inf, the largest index), loses to every element, even an infinite one.
template <class T> struct Arg {
    T value;
    unsigned long long index;
};

template <class T, bool Largest> struct ArgBest {
    typedef T Input;
    typedef Arg<T> Value;
    __device__ static Arg<T> lift(T x, unsigned long long i) { return Arg<T>{x, i}; }
    __device__ static Arg<T> identity()
    {
        return Arg<T>{Largest ? Limits<T>::lowest() : Limits<T>::highest(), ~0ull};
    }
    __device__ static Arg<T> combine(Arg<T> a, Arg<T> b)
    {
        const bool a_nan = a.value != a.value;
        const bool b_nan = b.value != b.value;
        if (a_nan != b_nan) {
            return a_nan ? a : b;
        }
        if (!a_nan && a.value != b.value) {
            return (Largest ? a.value > b.value : a.value < b.value) ? a : b;
        }
        return a.index <= b.index ? a : b;
    }
};

template <class T> struct ArgMax : ArgBest<T, true> {};
template <class T> struct ArgMin : ArgBest<T, false> {};

template <class T> __device__ __forceinline__ Arg<T> shuffle_down(Arg<T> a, int offset)
{
    return Arg<T>{shuffle_down(a.value, offset), shuffle_down(a.index, offset)};
}
// ANCHOR_END: operators

// Vectors of four for the element types block_reduce.cuh does not list: 4 bytes of u8, and 32
// bytes (two 16-byte loads) of the 8-byte types.
struct __align__(32) Double4 {
    double x, y, z, w;
};
struct __align__(32) U64x4 {
    unsigned long long x, y, z, w;
};
template <> struct Vec4<unsigned char> {
    typedef uchar4 Type;
};
template <> struct Vec4<double> {
    typedef Double4 Type;
};
template <> struct Vec4<unsigned long long> {
    typedef U64x4 Type;
};

// Commutative<Op>::value: Op::commutative where Op says, else true.
template <class Op, class = void> struct Commutative {
    enum { value = true };
};
template <class Op> struct Commutative<Op, decltype(void(Op::commutative))> {
    enum { value = Op::commutative };
};

// ANCHOR: in_order
// For operators that are not commutative (block_reduce.cuh's warp_reduce_in_order and
// block_reduce<Op, true> keep the lanes' order). Each warp of the grid takes one contiguous span of
// input[0, n) (a multiple of 32 elements long, spans in the order of the warps); lane l reads
// element base + l of each 32 (coalesced 4-byte or 8-byte loads), the warp combines those 32 in
// order, and lane 0 appends them to the span's value. Valid in lane 0 of each warp (the other lanes
// return the identity).
template <class Op>
__device__ __forceinline__ typename Op::Value
range_reduce_in_order(const typename Op::Input* __restrict__ input, unsigned long long n)
{
    const unsigned long long warps = (unsigned long long)gridDim.x * blockDim.x / 32;
    const unsigned long long warp =
        ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned int lane = threadIdx.x % 32;
    const unsigned long long span = ((n + warps - 1) / warps + 31) / 32 * 32;
    const unsigned long long begin = warp * span < n ? warp * span : n;
    const unsigned long long end = begin + span < n ? begin + span : n;

    typename Op::Value acc = Op::identity();
    for (unsigned long long base = begin; base < end; base += 32) {
        const unsigned long long i = base + lane;
        typename Op::Value value = i < end ? lift_at<Op>(input[i], i) : Op::identity();
        acc = Op::combine(acc, warp_reduce_in_order<Op>(value));
    }
    return lane == 0 ? acc : Op::identity();
}
// ANCHOR_END: in_order

// ANCHOR: passes
// The first pass: one value per block from the input. A commutative operator takes
// reduce-multi-level's pass (16-byte grid-stride loads, then block_reduce); one that is not takes
// the in-order form above, where block b's value combines a contiguous run of the input, so the
// blocks' values in order are the input's.
template <class Op>
__device__ __forceinline__ void first_pass(const typename Op::Input* __restrict__ input,
                                           typename Op::Value* __restrict__ output,
                                           unsigned long long n)
{
    typename Op::Value value;
    if constexpr (Commutative<Op>::value) {
        value = block_reduce<Op>(thread_reduce_vec4<Op>(input, n));
    } else {
        value = block_reduce<Op, true>(range_reduce_in_order<Op>(input, n));
    }
    if (threadIdx.x == 0) {
        output[blockIdx.x] = value;
    }
}

// The operator over values already lifted: what the later passes combine.
template <class Op> struct OnValues {
    typedef typename Op::Value Input;
    typedef typename Op::Value Value;
    __device__ static Value lift(Value x) { return x; }
    __device__ static Value identity() { return Op::identity(); }
    __device__ static Value combine(Value a, Value b) { return Op::combine(a, b); }
};

// Later passes: the previous pass's values (a few thousand at most), in order, for any operator.
template <class Op>
__device__ __forceinline__ void later_pass(const typename Op::Value* __restrict__ input,
                                           typename Op::Value* __restrict__ output,
                                           unsigned long long n)
{
    typedef OnValues<Op> Values;
    const typename Op::Value value =
        block_reduce<Values, true>(range_reduce_in_order<Values>(input, n));
    if (threadIdx.x == 0) {
        output[blockIdx.x] = value;
    }
}

// The two entry points of an operator: `first` over the input, `later` over values. Both names
// are written out where this is used, so a kernel's name is found by searching for it.
#define OPERATOR_KERNELS(first, later, Op)                                                         \
    extern "C" __global__ void __launch_bounds__(256, 8) first(                                    \
        const Op::Input* __restrict__ input, Op::Value* __restrict__ output, unsigned long long n) \
    {                                                                                              \
        first_pass<Op>(input, output, n);                                                          \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256, 8) later(                                    \
        const Op::Value* __restrict__ input, Op::Value* __restrict__ output, unsigned long long n) \
    {                                                                                              \
        later_pass<Op>(input, output, n);                                                          \
    }
// ANCHOR_END: passes

// ANCHOR: user
// A user's operator F: a struct with `Input` and `Value` types, `identity()`, `operator()(a, b)`,
// and optionally `lift(x)` (without it an element is converted to a Value) and
// `static constexpr bool commutative = false`. UserOp makes it an operation of the templates above.
template <class F, class = void> struct HasLift {
    enum { value = false };
};
template <class F> struct HasLift<F, decltype(void(F().lift(typename F::Input())))> {
    enum { value = true };
};

template <class F> struct UserOp {
    typedef typename F::Input Input;
    typedef typename F::Value Value;
    enum { commutative = Commutative<F>::value };
    __device__ static Value lift(Input x)
    {
        if constexpr (HasLift<F>::value) {
            return F().lift(x);
        } else {
            return Value(x);
        }
    }
    __device__ static Value identity() { return F().identity(); }
    __device__ static Value combine(Value a, Value b) { return F()(a, b); }
};

// A user's Value moves between lanes word by word (it must be a whole number of 32-bit words).
template <class T> __device__ __forceinline__ T shuffle_words(T value, int offset)
{
    static_assert(sizeof(T) % 4 == 0, "an operator's Value must be a whole number of 4-byte words");
    unsigned int words[sizeof(T) / 4];
    memcpy(words, &value, sizeof(T));
#pragma unroll
    for (unsigned int k = 0; k < sizeof(T) / 4; k++) {
        words[k] = __shfl_down_sync(0xffffffffu, words[k], offset);
    }
    memcpy(&value, words, sizeof(T));
    return value;
}
// ANCHOR_END: user
