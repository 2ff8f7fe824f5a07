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
    // Whether x, met after best in the input, takes its place (thread_reduce_arg's loop): x is
    // better, or the first NaN. An equal value does not, so the earlier index stays.
    __device__ static bool replaces(T x, T best)
    {
        return best == best && (x != x || (Largest ? x > best : x < best));
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

// ANCHOR: arg_loads
// argmin's and argmax's share of a thread: the loads of thread_reduce_vec4 with a lighter loop. A
// thread meets its vectors in increasing index order (a, b, c, d of an iteration, then the next
// iteration's) and the four elements of a vector in order, so a strict comparison (replaces) keeps
// the first of equal values without looking at indices. The loop holds the best value and where it
// was among the thread's vector elements, a 32-bit count (element j of the thread's k-th vector is
// 4k + j; below 2^32 for any input under 2^39 elements, a grid having 256 threads at least), and
// the 64-bit index is built once, after the loop. (Combining (value, 64-bit index) pairs in the
// loop, as thread_reduce_vec4 would, needs more than the 32 registers a thread has at 8 blocks of
// 256 per SM: the pairs spilled to memory, and argmin ran well below the read roof.)
// The best starts as the identity's value at count 0: if no element replaces it, every element
// of the thread equals it (nothing is worse than the identity), so the first one, count 0, is the
// answer. The head and tail elements (see range_reduce_vec4) join by the full combine.
template <class Op>
__device__ __forceinline__ void keep(typename Op::Input x, unsigned int count,
                                     typename Op::Input& best, unsigned int& best_count)
{
    if (Op::replaces(x, best)) {
        best = x;
        best_count = count;
    }
}

template <class Op, class V>
__device__ __forceinline__ void keep4(V q, unsigned int count, typename Op::Input& best,
                                      unsigned int& best_count)
{
    keep<Op>(q.x, count, best, best_count);
    keep<Op>(q.y, count + 1, best, best_count);
    keep<Op>(q.z, count + 2, best, best_count);
    keep<Op>(q.w, count + 3, best, best_count);
}

template <class Op>
__device__ __forceinline__ typename Op::Value
thread_reduce_arg(const typename Op::Input* __restrict__ input, unsigned long long n)
{
    typedef typename Op::Input In;
    typedef typename Vec4<In>::Type V;
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long misaligned =
        (reinterpret_cast<unsigned long long>(input) / sizeof(In)) % 4;
    const unsigned long long head = misaligned == 0 ? 0 : (4 - misaligned < n ? 4 - misaligned : n);
    const unsigned long long vectors = (n - head) / 4;
    const V* __restrict__ vec = reinterpret_cast<const V*>(input + head);

    In best = Op::identity().value;
    unsigned int best_count = 0, count = 0;
    unsigned long long v = thread;
    for (; v + 3 * threads < vectors; v += 4 * threads, count += 16) {
        const V a = vec[v];
        const V b = vec[v + threads];
        const V c = vec[v + 2 * threads];
        const V d = vec[v + 3 * threads];
        keep4<Op>(a, count, best, best_count);
        keep4<Op>(b, count + 4, best, best_count);
        keep4<Op>(c, count + 8, best, best_count);
        keep4<Op>(d, count + 12, best, best_count);
    }
    for (; v < vectors; v += threads, count += 4) {
        keep4<Op>(vec[v], count, best, best_count);
    }

    typename Op::Value acc = Op::identity();
    if (thread < vectors) {
        const unsigned long long k = best_count / 4;
        acc = Op::lift(best, head + 4 * (thread + k * threads) + best_count % 4);
    }
    if (thread < head) {
        acc = Op::combine(acc, Op::lift(input[thread], thread));
    }
    const unsigned long long tail = head + 4 * vectors + thread;
    if (tail < n) {
        acc = Op::combine(acc, Op::lift(input[tail], tail));
    }
    return acc;
}
// ANCHOR_END: arg_loads

// Replaces<Op>::value: whether Op has replaces (argmin, argmax), so takes thread_reduce_arg.
template <class Op, class = void> struct Replaces {
    enum { value = false };
};
template <class Op>
struct Replaces<Op, decltype(void(Op::replaces(typename Op::Input(), typename Op::Input())))> {
    enum { value = true };
};

// ANCHOR: passes
// A thread's value from its share of the input, for an operator that is commutative:
// reduce-multi-level's 16-byte grid-stride loads (thread_reduce_vec4), or their lighter loop for
// argmin and argmax.
template <class Op>
__device__ __forceinline__ typename Op::Value
thread_value(const typename Op::Input* __restrict__ input, unsigned long long n)
{
    if constexpr (Replaces<Op>::value) {
        return thread_reduce_arg<Op>(input, n);
    } else {
        return thread_reduce_vec4<Op>(input, n);
    }
}

// The first pass: one value per block from the input. A commutative operator takes the
// grid-stride loads above, then block_reduce; one that is not takes the in-order form above, where
// block b's value combines a contiguous run of the input, so the blocks' values in order are the
// input's.
template <class Op>
__device__ __forceinline__ void first_pass(const typename Op::Input* __restrict__ input,
                                           typename Op::Value* __restrict__ output,
                                           unsigned long long n)
{
    typename Op::Value value;
    if constexpr (Commutative<Op>::value) {
        value = block_reduce<Op>(thread_value<Op>(input, n));
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

// The built-in operators of the entry files (reduce_operators.cu, reduce_atomic_operators.cu), one
// name per operator and type.

// sum
typedef Sum<float> Sum_f32;
typedef Sum<double> Sum_f64;
typedef Sum<int> Sum_i32;
typedef Sum<unsigned int> Sum_u32;
typedef Sum<unsigned long long> Sum_u64;

// product
typedef Product<float> Product_f32;
typedef Product<double> Product_f64;
typedef Product<int> Product_i32;
typedef Product<unsigned int> Product_u32;
typedef Product<unsigned long long> Product_u64;

// min
typedef Min<float> Min_f32;
typedef Min<double> Min_f64;
typedef Min<int> Min_i32;
typedef Min<unsigned int> Min_u32;
typedef Min<unsigned long long> Min_u64;

// max
typedef Max<float> Max_f32;
typedef Max<double> Max_f64;
typedef Max<int> Max_i32;
typedef Max<unsigned int> Max_u32;
typedef Max<unsigned long long> Max_u64;

// argmin
typedef ArgMin<float> ArgMin_f32;
typedef ArgMin<double> ArgMin_f64;
typedef ArgMin<int> ArgMin_i32;
typedef ArgMin<unsigned int> ArgMin_u32;
typedef ArgMin<unsigned long long> ArgMin_u64;

// argmax
typedef ArgMax<float> ArgMax_f32;
typedef ArgMax<double> ArgMax_f64;
typedef ArgMax<int> ArgMax_i32;
typedef ArgMax<unsigned int> ArgMax_u32;
typedef ArgMax<unsigned long long> ArgMax_u64;

// all
typedef All<unsigned char> All_u8;
typedef All<float> All_f32;
typedef All<double> All_f64;
typedef All<int> All_i32;
typedef All<unsigned int> All_u32;

// any
typedef Any<unsigned char> Any_u8;
typedef Any<float> Any_f32;
typedef Any<double> Any_f64;
typedef Any<int> Any_i32;
typedef Any<unsigned int> Any_u32;

// bit_and
typedef BitAnd<int> BitAnd_i32;
typedef BitAnd<unsigned int> BitAnd_u32;
typedef BitAnd<unsigned long long> BitAnd_u64;

// bit_or
typedef BitOr<int> BitOr_i32;
typedef BitOr<unsigned int> BitOr_u32;
typedef BitOr<unsigned long long> BitOr_u64;

// bit_xor
typedef BitXor<int> BitXor_i32;
typedef BitXor<unsigned int> BitXor_u32;
typedef BitXor<unsigned long long> BitXor_u64;

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
