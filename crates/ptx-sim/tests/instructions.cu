// 64-bit atomics and red: every thread adds to a counter, exchanges, and takes a ticket by CAS.
extern "C" __global__ void atomics64(unsigned long long* counter, unsigned long long* cas_target,
                                     unsigned int* exch32, unsigned long long* exch64,
                                     unsigned long long* old_values)
{
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    old_values[t] = atomicAdd(counter, (unsigned long long)t + 1);
    atomicAdd(counter + 1, 5ull);                // result unused: red.global.add.u64
    atomicAdd((unsigned int*)(counter + 2), 3u); // red.global.add.u32
    unsigned long long seen = *cas_target, assumed;
    do {
        assumed = seen;
        seen = atomicCAS(cas_target, assumed, assumed + (1ull << 33));
    } while (seen != assumed);
    atomicExch(exch32, t);
    atomicExch(exch64, (unsigned long long)t << 32);
}

// Scoped loads and stores and fences, as single-pass kernels use them.
extern "C" __global__ void scoped_memory(unsigned int* flags, unsigned int* out)
{
    unsigned int t = threadIdx.x;
    unsigned int v;
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(flags + t), "r"(t + 1) : "memory");
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    asm volatile("fence.sc.gpu;" ::: "memory");
    asm volatile("membar.gl;" ::: "memory");
    __threadfence();
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flags + 64 + t), "r"(2 * t)
                 : "memory");
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flags + t) : "memory");
    out[t] = v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flags + 64 + t) : "memory");
    out[64 + t] = v;
    out[128 + t] = ((volatile unsigned int*)flags)[t] * 3;
}

// Warp votes: ballot, activemask and match.any in a divergent branch.
extern "C" __global__ void votes(const int* keys, unsigned int* out)
{
    unsigned int t = threadIdx.x;
    out[t] = __ballot_sync(0xffffffffu, keys[t] > 0);
    if (t % 3 != 0) {
        out[32 + t] = __activemask();
        out[64 + t] = __match_any_sync(__activemask(), keys[t]);
    }
}

// Bit manipulation.
extern "C" __global__ void bits(const unsigned int* a, const unsigned int* b, unsigned int* out)
{
    unsigned int t = threadIdx.x, x = a[t], y = b[t];
    unsigned int* o = out + 12 * t;
    o[0] = __popc(x);
    o[1] = __clz(x);
    o[2] = __brev(x);
    o[3] = __byte_perm(x, y, 0x5140);
    o[4] = __funnelshift_l(x, y, t);
    o[5] = __funnelshift_r(x, y, t);
    unsigned int e, i;
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(e) : "r"(x), "r"(t % 32), "r"(5u));
    o[6] = e;
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(i) : "r"(y), "r"(x), "r"(t % 32), "r"(7u));
    o[7] = i;
    int s;
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(x), "r"(3u), "r"(9u));
    o[8] = (unsigned int)s;
    o[9] = __popcll(((unsigned long long)x << 32) | y);
    o[10] = __clzll((unsigned long long)y);
    o[11] = __ffs(x);
}

// Cache-hint loads, scalar and vector.
extern "C" __global__ void cache_hints(const float* in, const float4* in4, float* out)
{
    unsigned int t = threadIdx.x;
    float4 v = __ldg(in4 + t);
    float4 w = __ldcs(in4 + t);
    float4 u = __ldcg(in4 + t);
    out[t] = __ldcs(in + t) + __ldcg(in + t) * 2.0f + __ldg(in + t) * 4.0f + __ldca(in + t) * 8.0f;
    out[32 + t] = v.x + v.y + v.z + v.w + w.x + w.y + u.z + u.w;
    __stcs(out + 64 + t, v.x);
    __stcg(out + 96 + t, w.w);
    __stwb(out + 128 + t, u.y);
}

// 8- and 16-bit global and shared loads and stores.
extern "C" __global__ void narrow(const unsigned char* bytes, const short* shorts,
                                  unsigned char* out8, short* out16, int* wide)
{
    __shared__ unsigned char s8[64];
    __shared__ short s16[64];
    unsigned int t = threadIdx.x;
    s8[t] = bytes[t] + 1;
    s16[t] = shorts[t] - 1;
    __syncthreads();
    out8[t] = s8[63 - t];
    out16[t] = s16[63 - t];
    wide[t] = (signed char)bytes[t] + s16[t];
}

// Shared-memory atomics: a histogram (atom.shared.add.u32) and a wrapping counter
// (atom.shared.inc).
extern "C" __global__ void shared_atomics(const unsigned int* keys, unsigned int* histogram,
                                          unsigned int* tickets)
{
    __shared__ unsigned int bins[8];
    __shared__ unsigned int counter;
    unsigned int t = threadIdx.x;
    if (t < 8)
        bins[t] = 0;
    if (t == 0)
        counter = 0;
    __syncthreads();
    atomicAdd(&bins[keys[t] % 8], 1u);
    tickets[t] = atomicInc(&counter, 9u);
    __syncthreads();
    if (t < 8)
        histogram[t] = bins[t];
}

// Shared atomics in four patterns whose bank conflicts are counted by hand (per warp: all lanes
// on one word, one bank per lane, all lanes on bank 0, two lanes per word), and one global atomic
// per thread.
extern "C" __global__ void atomic_conflicts(unsigned int* words_out, unsigned int* global_counts)
{
    __shared__ unsigned int words[2048];
    const unsigned int t = threadIdx.x, lane = t % 32;
    for (unsigned int i = t; i < 2048; i += blockDim.x)
        words[i] = 0;
    __syncthreads();
    atomicAdd(&words[0], 1u);                // one word: 31 extra turns per warp
    atomicAdd(&words[32 + lane], 1u);        // lane copies, word 32 + lane in bank lane: none
    atomicAdd(&words[1024 + 32 * lane], 1u); // words 32 apart, all in bank 0: 31 extra turns
    atomicAdd(&words[128 + lane / 2], 1u);   // two lanes per word, 16 banks: 1 extra turn
    atomicAdd(&global_counts[t % 4], 1u);
    __syncthreads();
    for (unsigned int i = t; i < 2048; i += blockDim.x)
        atomicAdd(&words_out[i], words[i]);
}

// red.* (results never read): NVRTC emits atom for atomicAdd, so these are written as PTX.
extern "C" __global__ void reductions(unsigned int* counters, unsigned long long* wide)
{
    __shared__ unsigned int local;
    unsigned int t = threadIdx.x;
    if (t == 0)
        local = 0;
    __syncthreads();
    asm volatile("red.global.add.u32 [%0], %1;" ::"l"(counters), "r"(t) : "memory");
    asm volatile("red.relaxed.gpu.global.max.u32 [%0], %1;" ::"l"(counters + 1), "r"(t * 7)
                 : "memory");
    asm volatile("red.global.add.u64 [%0], %1;" ::"l"(wide), "l"((unsigned long long)t << 32)
                 : "memory");
    asm volatile(
        "red.shared.add.u32 [%0], %1;" ::"r"((unsigned int)__cvta_generic_to_shared(&local)),
        "r"(2u)
        : "memory");
    __syncthreads();
    if (t == 0)
        counters[2] = local;
}

// Half precision as cuda_fp16.h / cuda_bf16.h write it (NVRTC 13.5 output of __half2float,
// __float2half, __floats2half2_rn, __hadd2, __half22float2, __float2bfloat16, __bfloat162float):
// the headers' inline PTX, copied here because NVRTC needs the bundled headers extracted to find
// them.
extern "C" __global__ void halves(const unsigned short* h, const unsigned int* h2, const float* f,
                                  float* out, unsigned short* out16, unsigned int* out32)
{
    unsigned int t = threadIdx.x;
    float x, lo, hi;
    unsigned short r16;
    unsigned int r32, sum2;
    asm("{  cvt.f32.f16 %0, %1;}\n" : "=f"(x) : "h"(h[t]));
    out[t] = x;
    asm("{  cvt.rn.f16.f32 %0, %1;}\n" : "=h"(r16) : "f"(f[t]));
    out16[t] = r16;
    asm("{ cvt.f32.bf16 %0, %1;}\n" : "=f"(x) : "h"(h[t]));
    out[32 + t] = x;
    asm("{  cvt.rn.bf16.f32 %0, %1;}\n" : "=h"(r16) : "f"(f[t]));
    out16[32 + t] = r16;
    asm("{.reg .f16 low,high;\n  cvt.rn.f16.f32 low, %1;\n  cvt.rn.f16.f32 high, %2;\n  mov.b32 "
        "%0, {low,high};}\n"
        : "=r"(r32)
        : "f"(f[t]), "f"(-f[t]));
    out32[t] = r32;
    asm("{add.f16x2 %0,%1,%2;\n}\n" : "=r"(sum2) : "r"(h2[t]), "r"(h2[(t + 1) % 32]));
    out32[32 + t] = sum2;
    asm("{.reg .f16 low,high;\n  mov.b32 {low,high},%2;\n  cvt.f32.f16 %0, low;\n  cvt.f32.f16 %1, "
        "high;}\n"
        : "=f"(lo), "=f"(hi)
        : "r"(sum2));
    out[64 + t] = lo + hi;
    asm("{ fma.rn.f16x2 %0,%1,%2,%3;\n}\n"
        : "=r"(r32)
        : "r"(h2[t]), "r"(h2[(t + 3) % 32]), "r"(sum2));
    out32[64 + t] = r32;
    asm("{ mul.rn.bf16x2 %0,%1,%2;\n}\n" : "=r"(r32) : "r"(h2[t]), "r"(h2[(t + 5) % 32]));
    out32[96 + t] = r32;
    asm("{ add.rn.bf16 %0,%1,%2;\n}\n" : "=h"(r16) : "h"(h[t]), "h"(h[(t + 7) % 32]));
    out16[64 + t] = r16;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;"
        : "=r"(r32)
        : "f"(f[(t + 1) % 32]), "f"(f[t])); // bf16.cuh's pair
    out32[128 + t] = r32;
}

// Hopper's bulk copy and mbarriers (cuda/bulk_copy.cuh), and one barrier of two arrivals walked
// through its phases by one thread: waits[k] is whether the phase asked about has completed.
#include "bulk_copy.cuh"

__device__ unsigned barrier_done(unsigned long long* barrier, unsigned parity)
{
    unsigned done;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n "
                 "selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(shared_address(barrier)), "r"(parity)
                 : "memory");
    return done;
}

__device__ void barrier_arrive(unsigned long long* barrier, unsigned bytes)
{
    if (bytes) {
        asm volatile(
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)),
            "r"(bytes)
            : "memory");
    } else {
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(barrier))
                     : "memory");
    }
}

extern "C" __global__ void bulk_copy_and_mbarrier(const unsigned* in, unsigned* out,
                                                  unsigned* waits)
{
    __shared__ __align__(16) unsigned tile[64];
    __shared__ __align__(8) unsigned long long landed;
    __shared__ __align__(8) unsigned long long two;
    if (threadIdx.x == 0) {
        start_bulk_copy(tile, in + 4, 64 * sizeof(unsigned), &landed);
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 2;" ::"r"(shared_address(&two))
                     : "memory");
        waits[0] = barrier_done(&two, 0); // no arrival yet
        barrier_arrive(&two, 0);
        waits[1] = barrier_done(&two, 0); // one of two
        barrier_arrive(&two, 0);
        waits[2] = barrier_done(&two, 0); // phase 0 complete
        waits[3] = barrier_done(&two, 1); // phase 1 just started
        barrier_arrive(&two, 32);
        barrier_arrive(&two, 0);
        waits[4] = barrier_done(&two, 1); // both arrived, 32 bytes still expected
    }
    __syncthreads();
    wait_bulk_copy(&landed);
    out[threadIdx.x] = tile[threadIdx.x] * 2u;
}

// A bulk copy of 20 bytes: the simulator refuses it (sizes are multiples of 16).
extern "C" __global__ void bulk_copy_of_20_bytes(const unsigned* in, unsigned* out)
{
    __shared__ __align__(16) unsigned tile[8];
    __shared__ __align__(8) unsigned long long landed;
    start_bulk_copy(tile, in, 20, &landed);
    wait_bulk_copy(&landed);
    out[0] = tile[0];
}

// Named barriers (bar.sync id, count): a block of 4 warps as two groups of 2, each passing values
// between its warps through shared memory behind its own barrier (id 1 + group, 64 threads). Group
// 0 goes through its barrier 3 times, group 1 once: neither waits for the other. Then every warp
// meets at the block's barrier (bar.sync 0).
__device__ void group_sync(unsigned id)
{
    asm volatile("bar.sync %0, 64;" ::"r"(id) : "memory");
}

extern "C" __global__ void named_barriers(unsigned* out, unsigned* rounds)
{
    __shared__ unsigned slot[128];
    const unsigned group = threadIdx.x / 64, mate = threadIdx.x ^ 32; // the other warp's lane
    unsigned value = threadIdx.x;
    const unsigned passes = group == 0 ? 3 : 1;
    for (unsigned k = 0; k < passes; k++) {
        slot[threadIdx.x] = value;
        group_sync(1 + group);
        value += slot[mate];
        group_sync(1 + group);
    }
    __syncthreads();
    out[threadIdx.x] = value;
    if (threadIdx.x == 0)
        rounds[0] = passes;
}

// A named barrier of 64 threads that only one warp reaches: a deadlock.
extern "C" __global__ void named_barrier_never_filled(unsigned* out)
{
    if (threadIdx.x < 32) {
        asm volatile("bar.sync 1, 64;" ::: "memory");
    }
    out[threadIdx.x] = 1;
}

// ex2.approx (2^x; with and without .ftz) and nanosleep, a pause the simulator skips.
extern "C" __global__ void exp2_and_pause(const float* in, float* out, float* out_ftz)
{
    const float x = in[threadIdx.x];
    float y, y_ftz;
    asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y_ftz) : "f"(x));
    __nanosleep(100 + threadIdx.x);
    out[threadIdx.x] = y;
    out_ftz[threadIdx.x] = y_ftz;
}
