// block_reduce.cuh: operations, warp and block reductions with shuffles, and vectorised grid-stride
// loads, shared by reduce-shuffle and the steps that finish on the device (reduce-multi-level,
// reduce-atomic).
//
// An operation is a struct with an input type `In`, a value type `Value` (what is accumulated:
// the same as `In`, or wider), and
//   lift(x)        an input element as a value,
//   identity()     the value that changes nothing,
//   combine(a, b)  two values into one.
// Operations:
//   Sum<In, Value>  0 and a + b. Integer sums wrap around modulo 2^32 (or 2^64 for 64-bit values),
//                   as unsigned arithmetic does in C; Sum<int, long long> and
//                   Sum<unsigned, unsigned long long> accumulate 32-bit inputs in 64 bits.
//   Max<T>, Min<T>  the lowest / highest value of T and the larger / smaller value. For float NaN
//                   wins: if either value is NaN the result is NaN, so a NaN anywhere in the input
//                   makes the result NaN (as numpy's max does; fmaxf would drop it instead).
#pragma once

// Additions that wrap around for integers (signed overflow is undefined in C++, unsigned is not).
__device__ __forceinline__ float wrapping_add(float a, float b)
{
    return a + b;
}
__device__ __forceinline__ int wrapping_add(int a, int b)
{
    return (int)((unsigned int)a + (unsigned int)b);
}
__device__ __forceinline__ unsigned int wrapping_add(unsigned int a, unsigned int b)
{
    return a + b;
}
__device__ __forceinline__ long long wrapping_add(long long a, long long b)
{
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ unsigned long long wrapping_add(unsigned long long a,
                                                           unsigned long long b)
{
    return a + b;
}
__device__ __forceinline__ double wrapping_add(double a, double b)
{
    return a + b;
}

template <class T> struct Limits;
template <> struct Limits<float> {
    __device__ static float lowest() { return __int_as_float(0xff800000); }  // -inf
    __device__ static float highest() { return __int_as_float(0x7f800000); } // +inf
};
template <> struct Limits<int> {
    __device__ static int lowest() { return -2147483647 - 1; }
    __device__ static int highest() { return 2147483647; }
};
template <> struct Limits<unsigned int> {
    __device__ static unsigned int lowest() { return 0u; }
    __device__ static unsigned int highest() { return 0xffffffffu; }
};
template <> struct Limits<double> {
    __device__ static double lowest() { return __longlong_as_double(0xfff0000000000000ll); } // -inf
    __device__ static double highest()
    {
        return __longlong_as_double(0x7ff0000000000000ll);
    } // +inf
};
template <> struct Limits<unsigned long long> {
    __device__ static unsigned long long lowest() { return 0ull; }
    __device__ static unsigned long long highest() { return ~0ull; }
};

template <class In, class Acc = In> struct Sum {
    typedef In Input;
    typedef Acc Value;
    __device__ static Acc lift(In x) { return (Acc)x; }
    __device__ static Acc identity() { return (Acc)0; }
    __device__ static Acc combine(Acc a, Acc b) { return wrapping_add(a, b); }
};

// NaN wins for float: `a != a` is true only for NaN; for integers it is always false.
template <class T> struct Max {
    typedef T Input;
    typedef T Value;
    __device__ static T lift(T x) { return x; }
    __device__ static T identity() { return Limits<T>::lowest(); }
    __device__ static T combine(T a, T b) { return (a > b || a != a) ? a : b; }
};

template <class T> struct Min {
    typedef T Input;
    typedef T Value;
    __device__ static T lift(T x) { return x; }
    __device__ static T identity() { return Limits<T>::highest(); }
    __device__ static T combine(T a, T b) { return (a < b || a != a) ? a : b; }
};

// ANCHOR: warp_reduce
// The value `offset` lanes up the warp, for every lane at once: __shfl_down_sync moves registers
// between the lanes named by the mask (all 32 here) and waits for them, so there is no shared
// memory and no race. (reduce-numerics adds overloads for its accumulators, one shuffle per field.)
template <class T> __device__ __forceinline__ T shuffle_down(T value, int offset)
{
    return __shfl_down_sync(0xffffffffu, value, offset);
}

// Reduces one value per lane to one value, held by lane 0. Each step combines the value `offset`
// lanes up: 16, 8, 4, 2, 1.
template <class Op>
__device__ __forceinline__ typename Op::Value warp_reduce(typename Op::Value value)
{
    // ANCHOR: solution(reduce-shuffle) combine each lane's value with the value offset lanes up (shuffle_down), for offsets 16, 8, 4, 2, 1, so lane 0 ends with the warp's result
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        value = Op::combine(value, shuffle_down(value, offset));
    }
    // ANCHOR_END: solution
    return value;
}
// ANCHOR_END: warp_reduce

// ANCHOR: warp_reduce_in_order
// For operators that are not commutative: a warp reduction that keeps the lanes' order. Offsets
// grow (1, 2, 4, 8, 16), so lane 0 first combines lanes (0, 1), then (0-1, 2-3), and so on: at
// every level the left operand holds the lower lanes. (warp_reduce's shrinking offsets combine lane
// 0 with lane 16 first, which only a commutative operator allows.)
template <class Op>
__device__ __forceinline__ typename Op::Value warp_reduce_in_order(typename Op::Value value)
{
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        value = Op::combine(value, shuffle_down(value, offset));
    }
    return value;
}
// ANCHOR_END: warp_reduce_in_order

// ANCHOR: block_reduce
// Reduces one value per thread to one value per block, valid in thread 0. blockDim.x must be a
// multiple of 32 (at most 1024). Each warp reduces its values with shuffles, lane 0 of each warp
// parks the result in one shared slot per warp, and warp 0 reduces those slots: one barrier in
// all. Calling it twice in one kernel needs a __syncthreads() in between (the slots are reused).
// With InOrder, both warp reductions keep the lanes' order (warp_reduce_in_order), and so the
// block's value combines thread 0's, thread 1's, ... in that order: for operators that are not
// commutative (operators.cuh).
template <class Op, bool InOrder = false>
__device__ __forceinline__ typename Op::Value block_reduce(typename Op::Value value)
{
    typedef typename Op::Value Value;
    __shared__ Value warp_results[32];
    const unsigned int lane = threadIdx.x % 32;
    const unsigned int warp = threadIdx.x / 32;

    value = InOrder ? warp_reduce_in_order<Op>(value) : warp_reduce<Op>(value);
    if (lane == 0) {
        warp_results[warp] = value;
    }
    __syncthreads();

    if (warp == 0) {
        value = (lane < blockDim.x / 32) ? warp_results[lane] : Op::identity();
        value = InOrder ? warp_reduce_in_order<Op>(value) : warp_reduce<Op>(value);
    }
    return value;
}
// ANCHOR_END: block_reduce

// The 16-byte vector type of each 4-byte element type.
template <class T> struct Vec4;
template <> struct Vec4<float> {
    typedef float4 Type;
};
template <> struct Vec4<int> {
    typedef int4 Type;
};
template <> struct Vec4<unsigned int> {
    typedef uint4 Type;
};

// An operation whose lift also takes the element's index (argmin and argmax, in operators.cuh):
// Indexed<Op>::value is true when Op::lift(x, i) exists. lift_at calls whichever form Op has, so
// the loads below serve both; for the others the index is never computed.
template <class Op, class = void> struct Indexed {
    enum { value = false };
};
template <class Op> struct Indexed<Op, decltype(void(Op::lift(typename Op::Input(), 0ull)))> {
    enum { value = true };
};

template <class Op>
__device__ __forceinline__ typename Op::Value lift_at(typename Op::Input x, unsigned long long i)
{
    if constexpr (Indexed<Op>::value) {
        return Op::lift(x, i);
    } else {
        return Op::lift(x);
    }
}

// ANCHOR: vec4_loads
// Combines the share of input[0, n) that belongs to `thread` of `threads` cooperating threads, in a
// strided loop over 16-byte vector loads, four of them in flight per iteration. Vector loads need
// 16-byte aligned addresses, so the elements before the first 16-byte boundary (the head, at most
// 3, for inputs that start inside a vector) and the last n % 4 after the vectors (the tail) are
// read one by one. `first` is the index of q.x (for operations that use indices, see lift_at).
template <class Op, class V>
__device__ __forceinline__ typename Op::Value combine4(V q, unsigned long long first)
{
    return Op::combine(Op::combine(lift_at<Op>(q.x, first), lift_at<Op>(q.y, first + 1)),
                       Op::combine(lift_at<Op>(q.z, first + 2), lift_at<Op>(q.w, first + 3)));
}

template <class Op>
__device__ __forceinline__ typename Op::Value
range_reduce_vec4(const typename Op::Input* __restrict__ input, unsigned long long n,
                  unsigned long long thread, unsigned long long threads)
{
    typedef typename Op::Input In;
    typedef typename Vec4<In>::Type V;
    const unsigned long long misaligned =
        (reinterpret_cast<unsigned long long>(input) / sizeof(In)) % 4;
    const unsigned long long head = misaligned == 0 ? 0 : (4 - misaligned < n ? 4 - misaligned : n);
    const unsigned long long vectors = (n - head) / 4;
    const V* __restrict__ vec = reinterpret_cast<const V*>(input + head);

    typename Op::Value acc = Op::identity();
    unsigned long long v = thread;
    for (; v + 3 * threads < vectors; v += 4 * threads) {
        const V a = vec[v];
        const V b = vec[v + threads];
        const V c = vec[v + 2 * threads];
        const V d = vec[v + 3 * threads];
        const unsigned long long i = head + 4 * v, step = 4 * threads;
        acc = Op::combine(
            acc,
            Op::combine(Op::combine(combine4<Op>(a, i), combine4<Op>(b, i + step)),
                        Op::combine(combine4<Op>(c, i + 2 * step), combine4<Op>(d, i + 3 * step))));
    }
    for (; v < vectors; v += threads) {
        acc = Op::combine(acc, combine4<Op>(vec[v], head + 4 * v));
    }

    if (thread < head) {
        acc = Op::combine(acc, lift_at<Op>(input[thread], thread));
    }
    const unsigned long long tail = head + 4 * vectors + thread;
    if (tail < n) {
        acc = Op::combine(acc, lift_at<Op>(input[tail], tail));
    }
    return acc;
}

// The grid-stride form: every thread of the grid takes its share of the whole input.
template <class Op>
__device__ __forceinline__ typename Op::Value
thread_reduce_vec4(const typename Op::Input* __restrict__ input, unsigned long long n)
{
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    return range_reduce_vec4<Op>(input, n, thread, threads);
}
// ANCHOR_END: vec4_loads

// ANCHOR: dot_loads
// This thread's share of the dot product sum(a[i] * b[i]). When a and b start at the same offset
// within 16 bytes, both are read as float4 (two loads in flight per iteration, each from its own
// array); otherwise every element is read alone, which is correct for any pair of views but slower.
__device__ __forceinline__ float thread_dot(const float* __restrict__ a,
                                            const float* __restrict__ b, unsigned long long n)
{
    const unsigned long long thread = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long threads = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long a_misaligned =
        (reinterpret_cast<unsigned long long>(a) / sizeof(float)) % 4;
    const unsigned long long b_misaligned =
        (reinterpret_cast<unsigned long long>(b) / sizeof(float)) % 4;

    float acc = 0.0f;
    unsigned long long scalar_from = 0;
    if (a_misaligned == b_misaligned) {
        const unsigned long long head =
            a_misaligned == 0 ? 0 : (4 - a_misaligned < n ? 4 - a_misaligned : n);
        const unsigned long long vectors = (n - head) / 4;
        const float4* __restrict__ va = reinterpret_cast<const float4*>(a + head);
        const float4* __restrict__ vb = reinterpret_cast<const float4*>(b + head);
        unsigned long long v = thread;
        for (; v + threads < vectors; v += 2 * threads) {
            const float4 x0 = va[v], y0 = vb[v];
            const float4 x1 = va[v + threads], y1 = vb[v + threads];
            acc += (x0.x * y0.x + x0.y * y0.y) + (x0.z * y0.z + x0.w * y0.w);
            acc += (x1.x * y1.x + x1.y * y1.y) + (x1.z * y1.z + x1.w * y1.w);
        }
        for (; v < vectors; v += threads) {
            const float4 x = va[v], y = vb[v];
            acc += (x.x * y.x + x.y * y.y) + (x.z * y.z + x.w * y.w);
        }
        if (thread < head) {
            acc += a[thread] * b[thread];
        }
        scalar_from = head + 4 * vectors;
    }
    for (unsigned long long i = scalar_from + thread; i < n; i += threads) {
        acc += a[i] * b[i];
    }
    return acc;
}
// ANCHOR_END: dot_loads
