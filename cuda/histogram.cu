// histogram: counting values into bins, from global atomics to privatised, contention-free
// counting.
//
// Two inputs: bytes into 256 bins (one bin per byte value), and f32 values into `bins` even bins
// over [lower, upper). Every kernel adds its counts into `bins`, which the launcher zeroes first,
// and takes n < 2^32 (the launcher checks it), so no u32 count can overflow.
//
// Launch: blockDim.x = HIST_BLOCK (512) for every kernel; the grid comes from the launcher's plan
// (crates/histogram/src/plan.rs): the GPU filled once (4 blocks of 512 per SM), or fewer blocks
// when the input is small. Loop indices are 64-bit and signed, so the compiler can count
// iterations.
//
// Hopper runs the lanes of a warp independently: nothing here relies on lanes moving in step.
// Shared-memory counts are made by atomics; block-wide barriers separate zeroing, counting and
// merging.

#define HIST_BLOCK 512
#define HIST_WARPS (HIST_BLOCK / 32)
#define BYTE_BINS  256

// ANCHOR: global_atomics
// Step 1, histogram_global_atomics: every thread reads one byte per loop iteration and adds 1 to
// its bin in global memory. 2^30 bytes make 2^30 atomics on 256 words of L2: the atomic units that
// own those words serialise them, and on all-equal input all of them hit one word.
// What it leaves slow: contention. Every addition travels to L2 and waits its turn behind every
// other addition to the same bin.
extern "C" __global__ void __launch_bounds__(HIST_BLOCK)
    histogram_global_atomics(const unsigned char* __restrict__ input,
                             unsigned int* __restrict__ bins, unsigned int n)
{
    const long long stride = (long long)gridDim.x * HIST_BLOCK;
    for (long long i = (long long)blockIdx.x * HIST_BLOCK + threadIdx.x; i < n; i += stride) {
        // ANCHOR: solution count the byte: add 1 to its bin in global memory with an atomic
        atomicAdd(&bins[input[i]], 1u);
        // ANCHOR_END: solution
    }
}
// ANCHOR_END: global_atomics

// ---- Privatisation: each block counts into its own bins in shared memory ----

// ANCHOR: merge
// After a barrier, a block adds its shared counts into the global bins: one global atomic per
// non-empty bin and block, 256 per block at most instead of one per byte.
__device__ __forceinline__ void merge_one_copy(const unsigned int* counts,
                                               unsigned int* __restrict__ bins)
{
    // ANCHOR: solution each thread adds the block's count of bins threadIdx.x, threadIdx.x + HIST_BLOCK, ... into the global bins with one atomic, skipping empty bins
    for (unsigned int bin = threadIdx.x; bin < BYTE_BINS; bin += HIST_BLOCK) {
        const unsigned int count = counts[bin];
        if (count != 0) {
            atomicAdd(&bins[bin], count);
        }
    }
    // ANCHOR_END: solution
}
// ANCHOR_END: merge

__device__ __forceinline__ void zero_shared(unsigned int* counts, unsigned int words)
{
    for (unsigned int i = threadIdx.x; i < words; i += HIST_BLOCK) {
        counts[i] = 0;
    }
}

// ANCHOR: shared_atomics
// Step 2, histogram_shared_atomics: the same loop, but each block counts into its own 256 bins in
// shared memory (zeroed first) and adds them into the global bins once, at the end. A shared atomic
// is resolved in the SM, next to the thread, and the global bins see 256 atomics per block.
// What it leaves slow: one byte per load instruction (a warp moves 32 bytes per load), and
// contention inside the block: on all-equal input the 32 lanes of a warp add to one word, and the
// shared-memory unit performs those additions one after another.
extern "C" __global__ void __launch_bounds__(HIST_BLOCK)
    histogram_shared_atomics(const unsigned char* __restrict__ input,
                             unsigned int* __restrict__ bins, unsigned int n)
{
    __shared__ unsigned int counts[BYTE_BINS];
    zero_shared(counts, BYTE_BINS);
    __syncthreads();

    const long long stride = (long long)gridDim.x * HIST_BLOCK;
    for (long long i = (long long)blockIdx.x * HIST_BLOCK + threadIdx.x; i < n; i += stride) {
        atomicAdd(&counts[input[i]], 1u);
    }

    __syncthreads();
    merge_one_copy(counts, bins);
}
// ANCHOR_END: shared_atomics

// ---- Coarsening: 16-byte loads, 32 bytes per thread per loop iteration ----

// ANCHOR: split
// A byte input need not start on a 16-byte boundary (a view at an odd offset). It is cut into a
// head (the bytes before the first boundary), whole 16-byte vectors, and a tail (what is left
// after the last vector); head and tail are at most 15 bytes each, counted one at a time by the
// first threads of the grid.
struct Split {
    unsigned int head;
    long long vectors;
    unsigned int tail;
};

__device__ __forceinline__ Split split_bytes(const unsigned char* input, unsigned int n)
{
    const unsigned int misaligned = (unsigned int)((unsigned long long)input & 15);
    Split s;
    s.head = min(n, (16u - misaligned) & 15u);
    s.vectors = (long long)((n - s.head) / 16);
    s.tail = n - s.head - (unsigned int)(s.vectors * 16);
    return s;
}

// Counts every byte of the input with copy.add(bin, count): the head and tail one byte at a time,
// the vectors two per thread and loop iteration (both loads issued before either is counted, so
// each thread keeps 32 bytes in flight).
template <class Copy>
__device__ __forceinline__ void count_bytes(const unsigned char* __restrict__ input, unsigned int n,
                                            Copy& copy)
{
    const Split s = split_bytes(input, n);
    const unsigned long long thread = (unsigned long long)blockIdx.x * HIST_BLOCK + threadIdx.x;
    if (thread < s.head) {
        copy.add(input[thread], 1u);
    }
    if (thread < s.tail) {
        copy.add(input[s.head + s.vectors * 16 + thread], 1u);
    }

    const uint4* __restrict__ vectors = reinterpret_cast<const uint4*>(input + s.head);
    const long long stride = 2LL * gridDim.x * HIST_BLOCK;
    long long i = 2LL * blockIdx.x * HIST_BLOCK + threadIdx.x;
    for (; i + HIST_BLOCK < s.vectors; i += stride) {
        const uint4 a = vectors[i];
        const uint4 b = vectors[i + HIST_BLOCK];
        copy.vector(a);
        copy.vector(b);
    }
    if (i < s.vectors) {
        copy.vector(vectors[i]);
    }
}
// ANCHOR_END: split

// ANCHOR: bytes_of_vector
// The 16 bytes of a vector, each added on its own.
template <class Copy> __device__ __forceinline__ void add_each_byte(Copy& copy, uint4 v)
{
    const unsigned int words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            copy.add((words[w] >> (8 * b)) & 0xffu, 1u);
        }
    }
}
// ANCHOR_END: bytes_of_vector

// ANCHOR: one_copy
// Step 3's counts: one copy of the 256 bins per block, shared by its 16 warps.
struct OneCopy {
    enum : unsigned int { WORDS = BYTE_BINS };
    unsigned int* counts;

    __device__ explicit OneCopy(unsigned int* shared) : counts(shared) {}
    __device__ void add(unsigned int bin, unsigned int count) { atomicAdd(&counts[bin], count); }
    __device__ void vector(uint4 v) { add_each_byte(*this, v); }
    __device__ static void merge(const unsigned int* shared, unsigned int* __restrict__ bins)
    {
        merge_one_copy(shared, bins);
    }
};
// ANCHOR_END: one_copy

// ANCHOR: privatised
// The shape of steps 3 to 5: zero the block's copies, count, then merge them into the global bins.
// Only the Copy (how the block's counts are laid out) changes from step to step.
template <class Copy>
__device__ __forceinline__ void privatised(const unsigned char* __restrict__ input,
                                           unsigned int* __restrict__ bins, unsigned int n)
{
    __shared__ unsigned int counts[Copy::WORDS];
    zero_shared(counts, Copy::WORDS);
    __syncthreads();

    Copy copy(counts);
    count_bytes(input, n, copy);

    __syncthreads();
    Copy::merge(counts, bins);
}
// ANCHOR_END: privatised

// ANCHOR: vector_loads
// Step 3, histogram_vector_loads: step 2's single copy, but each thread reads 16 bytes per load and
// keeps two loads in flight: 16 times the bytes per load instruction.
// What it leaves slow: on all-equal input every atomic of a warp hits one word, 32 additions in a
// row; on uniform input lanes land on random banks, several in the same one.
extern "C" __global__ void __launch_bounds__(HIST_BLOCK, 4)
    histogram_vector_loads(const unsigned char* __restrict__ input, unsigned int* __restrict__ bins,
                           unsigned int n)
{
    privatised<OneCopy>(input, bins, n);
}
// ANCHOR_END: vector_loads

// ANCHOR: per_warp
// Step 4a, histogram_per_warp: one copy of the 256 bins per warp. Warps no longer add into each
// other's words; the merge sums 16 copies per bin.
// What it leaves slow: the contention that matters is inside a warp (its 32 lanes share one copy),
// and that is unchanged: all-equal input still makes 32 additions to one word per atomic.
struct PerWarpCopy {
    enum : unsigned int { WORDS = BYTE_BINS * HIST_WARPS };
    unsigned int* counts;

    __device__ explicit PerWarpCopy(unsigned int* shared)
        : counts(shared + (threadIdx.x / 32) * BYTE_BINS)
    {
    }
    __device__ void add(unsigned int bin, unsigned int count) { atomicAdd(&counts[bin], count); }
    __device__ void vector(uint4 v) { add_each_byte(*this, v); }
    __device__ static void merge(const unsigned int* shared, unsigned int* __restrict__ bins)
    {
        for (unsigned int bin = threadIdx.x; bin < BYTE_BINS; bin += HIST_BLOCK) {
            unsigned int count = 0;
#pragma unroll
            for (unsigned int warp = 0; warp < HIST_WARPS; ++warp) {
                count += shared[warp * BYTE_BINS + bin];
            }
            if (count != 0) {
                atomicAdd(&bins[bin], count);
            }
        }
    }
};

extern "C" __global__ void __launch_bounds__(HIST_BLOCK, 4)
    histogram_per_warp(const unsigned char* __restrict__ input, unsigned int* __restrict__ bins,
                       unsigned int n)
{
    privatised<PerWarpCopy>(input, bins, n);
}
// ANCHOR_END: per_warp

// ANCHOR: lane_copies
// Step 4b, histogram_lane_copies: 32 copies of the bins, one per lane of a warp, interleaved so
// that bin b of lane l is word b * 32 + l. Word w sits in bank w % 32, so lane l only ever touches
// bank l: the 32 atomics of a warp go to 32 different banks and 32 different words whatever the
// bytes are. No two lanes of a warp ever wait for each other, on uniform or all-equal input alike.
// The copies take 32 KiB per block (4 blocks of 512 threads fill an SM with 132 KiB). The merge
// reads bin b's 32 words starting at lane b % 32, so the 32 threads of a warp read 32 banks at
// once.
// What it leaves slow: one atomic per byte, even when a thread's 16 bytes are all the same.
struct LaneCopies {
    enum : unsigned int { WORDS = BYTE_BINS * 32 };
    unsigned int* counts;

    __device__ explicit LaneCopies(unsigned int* shared) : counts(shared + threadIdx.x % 32) {}
    // Bin b of this lane's copy is 128 bytes (32 words) after bin b - 1: a byte offset of b << 7.
    __device__ void add(unsigned int bin, unsigned int count)
    {
        // ANCHOR: solution add count to bin `bin` of this lane's copy: word bin * 32 of the lane's interleaved copy (a byte offset of bin << 7)
        atomicAdd(reinterpret_cast<unsigned int*>(reinterpret_cast<char*>(counts) + (bin << 7)),
                  count);
        // ANCHOR_END: solution
        // ANCHOR: stub atomicAdd(counts + bin, count);
    }
    __device__ void vector(uint4 v) { add_each_byte(*this, v); }
    __device__ static void merge(const unsigned int* shared, unsigned int* __restrict__ bins)
    {
        for (unsigned int bin = threadIdx.x; bin < BYTE_BINS; bin += HIST_BLOCK) {
            unsigned int count = 0;
#pragma unroll 8
            for (unsigned int j = 0; j < 32; ++j) {
                count += shared[bin * 32 + ((j + bin) & 31)];
            }
            if (count != 0) {
                atomicAdd(&bins[bin], count);
            }
        }
    }
};

extern "C" __global__ void __launch_bounds__(HIST_BLOCK, 4)
    histogram_lane_copies(const unsigned char* __restrict__ input, unsigned int* __restrict__ bins,
                          unsigned int n)
{
    privatised<LaneCopies>(input, bins, n);
}
// ANCHOR_END: lane_copies

// ANCHOR: runs
// Step 4c, histogram_runs: step 4b's lane copies, and a run of 16 equal bytes (a whole vector) is
// added once, with one atomic of 16, instead of 16 atomics of 1. Runs are common in images (flat
// regions) and are the whole of all-equal input; on uniform bytes a vector is almost never one run,
// and the test costs a few instructions per 16 bytes.
struct RunCopies : LaneCopies {
    __device__ explicit RunCopies(unsigned int* shared) : LaneCopies(shared) {}
    __device__ void vector(uint4 v)
    {
        const unsigned int first = v.x & 0xffu;
        const unsigned int repeated = first * 0x01010101u;
        if (v.x == repeated && v.y == repeated && v.z == repeated && v.w == repeated) {
            add(first, 16u);
        } else {
            add_each_byte(*this, v);
        }
    }
};

extern "C" __global__ void __launch_bounds__(HIST_BLOCK, 4)
    histogram_runs(const unsigned char* __restrict__ input, unsigned int* __restrict__ bins,
                   unsigned int n)
{
    privatised<RunCopies>(input, bins, n);
}
// ANCHOR_END: runs

// ANCHOR: addresses
// Step 4d, histogram_addresses: step 4c, with the address of each atomic computed the short way.
// The compiler turns `counts + lane + bin * 32` into ((bin * 32) | lane) * 4 + base, four integer
// instructions per byte besides the atomic (shift, mask, or, multiply-add). Here each thread
// computes its lane's base address once, and each byte costs an extract and one multiply-add,
// bin * 128 + lane_address, written in PTX so that the compiler keeps it in that form.
// What it leaves: nothing measurable at 1 GiB, where the lane copies already run at the read roof;
// it leaves the SM more issue slots to spare (an H200 SM must count about 19 bytes per clock).
__device__ __forceinline__ void shared_add_at(unsigned int lane_address, unsigned int bin,
                                              unsigned int count)
{
    unsigned int address;
    asm("mad.lo.u32 %0, %1, 128, %2;" : "=r"(address) : "r"(bin), "r"(lane_address));
    asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(address), "r"(count) : "memory");
}

struct AddressedRuns : RunCopies {
    unsigned int lane_address;
    __device__ explicit AddressedRuns(unsigned int* shared)
        : RunCopies(shared),
          lane_address((unsigned int)__cvta_generic_to_shared(shared + threadIdx.x % 32))
    {
    }
    __device__ void add(unsigned int bin, unsigned int count)
    {
        shared_add_at(lane_address, bin, count);
    }
    __device__ void vector(uint4 v)
    {
        const unsigned int first = v.x & 0xffu;
        const unsigned int repeated = first * 0x01010101u;
        if (v.x == repeated && v.y == repeated && v.z == repeated && v.w == repeated) {
            add(first, 16u);
        } else {
            add_each_byte(*this, v);
        }
    }
};

extern "C" __global__ void __launch_bounds__(HIST_BLOCK, 4)
    histogram_addresses(const unsigned char* __restrict__ input, unsigned int* __restrict__ bins,
                        unsigned int n)
{
    privatised<AddressedRuns>(input, bins, n);
}
// ANCHOR_END: addresses

// ANCHOR: packed
// Step 4e (an extra), histogram_packed: the lane copies with 16-bit counters, two bins per word
// (bins 2k and 2k + 1 of lane l share word k * 32 + l, low and high half): 16 KiB per block
// instead of 32. A 16-bit counter holds 65535, so the block flushes its counters into the global
// bins, and zeroes them, every `flush_rounds` rounds of the loop (the launcher computes it: a round
// adds at most 16 warps x 32 bytes = 512 to one counter). The loop runs whole rounds for the whole
// block, so that every thread reaches the barriers of a flush.
// What it costs: more instructions per byte (the half to add to), and a flush now and then.
struct PackedCopies {
    enum : unsigned int { WORDS = BYTE_BINS / 2 * 32 };
    unsigned int* counts;

    __device__ explicit PackedCopies(unsigned int* shared) : counts(shared + threadIdx.x % 32) {}
    __device__ void add(unsigned int bin, unsigned int count)
    {
        atomicAdd(&counts[(bin >> 1) * 32], count << ((bin & 1) * 16));
    }
    __device__ void vector(uint4 v) { add_each_byte(*this, v); }
};

// Adds every 16-bit counter of the block into the global bins, then zeroes them. Thread t < 256
// sums bin t over the 32 lane copies (starting at lane t % 32: no bank conflicts).
__device__ __forceinline__ void flush_packed(unsigned int* counts, unsigned int* __restrict__ bins)
{
    __syncthreads();
    for (unsigned int bin = threadIdx.x; bin < BYTE_BINS; bin += HIST_BLOCK) {
        const unsigned int half = (bin & 1) * 16;
        unsigned int count = 0;
#pragma unroll 8
        for (unsigned int j = 0; j < 32; ++j) {
            count += (counts[(bin >> 1) * 32 + ((j + bin) & 31)] >> half) & 0xffffu;
        }
        if (count != 0) {
            atomicAdd(&bins[bin], count);
        }
    }
    __syncthreads();
    zero_shared(counts, PackedCopies::WORDS);
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(HIST_BLOCK, 4)
    histogram_packed(const unsigned char* __restrict__ input, unsigned int* __restrict__ bins,
                     unsigned int n, unsigned int flush_rounds)
{
    __shared__ unsigned int counts[PackedCopies::WORDS];
    zero_shared(counts, PackedCopies::WORDS);
    __syncthreads();

    PackedCopies copy(counts);
    const Split s = split_bytes(input, n);
    const unsigned long long thread = (unsigned long long)blockIdx.x * HIST_BLOCK + threadIdx.x;
    if (thread < s.head) {
        copy.add(input[thread], 1u);
    }
    if (thread < s.tail) {
        copy.add(input[s.head + s.vectors * 16 + thread], 1u);
    }

    const uint4* __restrict__ vectors = reinterpret_cast<const uint4*>(input + s.head);
    const long long stride = 2LL * gridDim.x * HIST_BLOCK;
    unsigned int rounds = 0;
    for (long long round = 2LL * blockIdx.x * HIST_BLOCK; round < s.vectors; round += stride) {
        const long long i = round + threadIdx.x;
        if (i + HIST_BLOCK < s.vectors) {
            const uint4 a = vectors[i];
            const uint4 b = vectors[i + HIST_BLOCK];
            copy.vector(a);
            copy.vector(b);
        } else if (i < s.vectors) {
            copy.vector(vectors[i]);
        }
        if (++rounds == flush_rounds) {
            flush_packed(counts, bins);
            rounds = 0;
        }
    }
    flush_packed(counts, bins);
}
// ANCHOR_END: packed

// ---- Even bins over f32 ----

// ANCHOR: even_bin
// The bin of x among `bins` even bins over [lower, upper), or `bins` when x is not counted: below
// lower, at or above upper, NaN (every comparison with NaN is false) and the infinities. The
// subtraction and the product are rounded separately (no fused multiply-add, so the CPU reference
// computes the same bits), and the bin is clamped to bins - 1: rounding can carry a value just
// below upper to (x - lower) * scale == bins.
__device__ __forceinline__ unsigned int even_bin(float x, float lower, float upper, float scale,
                                                 unsigned int bins)
{
    if (!(x >= lower && x < upper)) {
        return bins;
    }
    const unsigned int bin = __float2uint_rz(__fmul_rn(__fsub_rn(x, lower), scale));
    return min(bin, bins - 1);
}
// ANCHOR_END: even_bin

// ANCHOR: even_f32
// histogram_even_f32: the lane-copies kernel for f32 values. `replicas` copies of the `bins` bins
// (a power of two, at most 32; bin b of copy r is word b * replicas + r) in dynamic shared memory,
// lane l counting into copy l % replicas. With 32 copies each lane has its own bank, as in step 4b;
// with fewer (many bins, or the one-copy extra) lanes share copies again. float4 loads, two in
// flight per thread; a head of up to 3 values before the first 16-byte boundary and a tail of up
// to 3 after the last vector, one value at a time.
extern "C" __global__ void __launch_bounds__(HIST_BLOCK, 4)
    histogram_even_f32(const float* __restrict__ input, unsigned int* __restrict__ bins_out,
                       unsigned int n, unsigned int bins, float lower, float upper, float scale,
                       unsigned int replicas)
{
    extern __shared__ unsigned int shared_counts[];
    zero_shared(shared_counts, bins * replicas);
    __syncthreads();

    unsigned int* counts = shared_counts + (threadIdx.x % 32) % replicas;
    auto add = [&](float x) {
        const unsigned int bin = even_bin(x, lower, upper, scale, bins);
        if (bin < bins) {
            atomicAdd(&counts[bin * replicas], 1u);
        }
    };

    const unsigned int misaligned = (unsigned int)(((unsigned long long)input & 15) / 4);
    const unsigned int head = min(n, (4u - misaligned) & 3u);
    const long long vector_count = (long long)((n - head) / 4);
    const unsigned int tail = n - head - (unsigned int)(vector_count * 4);
    const unsigned long long thread = (unsigned long long)blockIdx.x * HIST_BLOCK + threadIdx.x;
    if (thread < head) {
        add(input[thread]);
    }
    if (thread < tail) {
        add(input[head + vector_count * 4 + thread]);
    }

    const float4* __restrict__ vectors = reinterpret_cast<const float4*>(input + head);
    const long long stride = 2LL * gridDim.x * HIST_BLOCK;
    long long i = 2LL * blockIdx.x * HIST_BLOCK + threadIdx.x;
    for (; i + HIST_BLOCK < vector_count; i += stride) {
        const float4 a = vectors[i];
        const float4 b = vectors[i + HIST_BLOCK];
        add(a.x);
        add(a.y);
        add(a.z);
        add(a.w);
        add(b.x);
        add(b.y);
        add(b.z);
        add(b.w);
    }
    if (i < vector_count) {
        const float4 a = vectors[i];
        add(a.x);
        add(a.y);
        add(a.z);
        add(a.w);
    }

    __syncthreads();
    for (unsigned int bin = threadIdx.x; bin < bins; bin += HIST_BLOCK) {
        unsigned int count = 0;
        for (unsigned int r = 0; r < replicas; ++r) {
            count += shared_counts[bin * replicas + ((r + bin) & (replicas - 1))];
        }
        if (count != 0) {
            atomicAdd(&bins_out[bin], count);
        }
    }
}
// ANCHOR_END: even_f32
