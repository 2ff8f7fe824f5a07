// bulk_copy.cuh: Hopper's bulk copy of a contiguous block of global memory into shared memory,
// issued by one thread and completing on an mbarrier (a barrier object in shared memory that
// counts arrivals and the bytes of the copies it waits for).
//
//   start_bulk_copy(to, from, bytes, &barrier)   one thread: sets the barrier up, starts the copy
//   wait_bulk_copy(&barrier)                     any thread: waits until the bytes have landed
//
// The copy engine moves the bytes while every thread of the block is free to do other work (or
// to wait): no registers hold the data on its way, so a block can have a whole tile of 24 KiB in
// flight with 128 threads. `to`, `from` and `bytes` must be multiples of 16. A barrier serves one
// copy per block here (phase 0); reusing it would mean waiting on the next phase's parity.
//
// BULK_COPY is 1 where the instructions exist (compute capability 9.0 and later); elsewhere the
// functions compile to nothing, and kernels must not call them (they fall back to ordinary loads).
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define BULK_COPY 1
#else
#define BULK_COPY 0
#endif

__device__ __forceinline__ unsigned shared_address(const void* p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// ANCHOR: bulk_copy
// One thread: the barrier expects one arrival (this thread's) and `bytes` bytes; the copy
// engine reads [from, from + bytes) and writes it at `to`, counting the bytes off as they land.
__device__ __forceinline__ void start_bulk_copy(void* to, const void* from, unsigned bytes,
                                                unsigned long long* barrier)
{
#if BULK_COPY
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(barrier))
                 : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile(
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)),
        "r"(bytes)
        : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(shared_address(to)),
        "l"(from), "r"(bytes), "r"(shared_address(barrier))
        : "memory");
#endif
}

// Spins until the barrier's first phase has completed: the arrival and every byte are in.
__device__ __forceinline__ void wait_bulk_copy(unsigned long long* barrier)
{
#if BULK_COPY
    asm volatile("{\n"
                 " .reg .pred landed;\n"
                 "WAIT_%=:\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 landed, [%0], 0;\n"
                 " @!landed bra WAIT_%=;\n"
                 "}" ::"r"(shared_address(barrier))
                 : "memory");
#endif
}
// ANCHOR_END: bulk_copy
