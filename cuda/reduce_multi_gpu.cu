// reduce-multi-gpu: the ring's fold, and the all-reduces that GPUs do with their own loads and
// stores over NVLink (the one-shot, the two-shot and the two-shot by writes).
//
// Steps 1 and 2 reduce each GPU's part with reduce-atomic's deterministic single-pass kernel
// (cuda/reduce_atomic.cu) and move one value per GPU. Step 3, the ring all-reduce, moves chunks
// between GPUs with peer-to-peer copies (the copy engines, no kernel) and needs a kernel only to
// fold a chunk it received into its own:
//
//   ring_combine_<op>_<type>(into, from, n):   into[i] = op(into[i], from[i])   for i < n
//
// with the reductions' operations from block_reduce.cuh (wrapping integer sums, NaN-wins min and
// max), so a ring all-reduce gives what reducing the whole input on one GPU gives, for integers
// exactly.
//
// What it leaves slow: nothing of its own. It reads two elements and writes one at memory speed,
// while the copies that feed it cross NVLink about ten times slower; the ring's cost is in the
// copies, in the steps they wait for each other, and in the host that issues them.
//
// Launch: 256 threads per block, any 1-D grid (the launcher fills the GPU once); n is 64-bit.
//
// Steps 4 to 6 are below the fold kernels.
#include "block_reduce.cuh"

// ANCHOR: combine
template <class Op>
__device__ __forceinline__ void combine_into(typename Op::Value* __restrict__ into,
                                             const typename Op::Value* __restrict__ from,
                                             unsigned long long n)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        // ANCHOR: solution fold: into[i] becomes the operation (Op::combine) of into[i] and from[i]
        into[i] = Op::combine(into[i], from[i]);
        // ANCHOR_END: solution
    }
}
// ANCHOR_END: combine

// The entry points, ring_combine_<op>_<type>: one per operation and element type.
extern "C" __global__ void ring_combine_sum_f32(float* into, const float* from,
                                                unsigned long long n)
{
    combine_into<Sum<float>>(into, from, n);
}

extern "C" __global__ void ring_combine_min_f32(float* into, const float* from,
                                                unsigned long long n)
{
    combine_into<Min<float>>(into, from, n);
}

extern "C" __global__ void ring_combine_max_f32(float* into, const float* from,
                                                unsigned long long n)
{
    combine_into<Max<float>>(into, from, n);
}

extern "C" __global__ void ring_combine_sum_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Sum<int>>(into, from, n);
}

extern "C" __global__ void ring_combine_min_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Min<int>>(into, from, n);
}

extern "C" __global__ void ring_combine_max_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Max<int>>(into, from, n);
}

extern "C" __global__ void ring_combine_sum_u32(unsigned int* into, const unsigned int* from,
                                                unsigned long long n)
{
    combine_into<Sum<unsigned int>>(into, from, n);
}

extern "C" __global__ void ring_combine_min_u32(unsigned int* into, const unsigned int* from,
                                                unsigned long long n)
{
    combine_into<Min<unsigned int>>(into, from, n);
}

extern "C" __global__ void ring_combine_max_u32(unsigned int* into, const unsigned int* from,
                                                unsigned long long n)
{
    combine_into<Max<unsigned int>>(into, from, n);
}

// -------------------------------------------------------------------------------------------------
// Steps 4 to 6: one kernel per GPU and call, the GPUs reading and writing each other's memory.
//
// The ring issues 2(n - 1) steps of copies, waits and folds from the host: for a small buffer the
// host's issuing, not the transfer, is the time. Here every GPU runs one kernel per call, the same
// grid on every GPU, and the kernels reach the other GPUs' memory directly: with peer access on,
// a pointer into GPU j's memory works in GPU k's loads and stores, over NVLink.
//
//   one_shot_<op>_<type> (step 4): every GPU copies its buffer into its staging buffer, the GPUs
//     meet, and every GPU reads every GPU's staging buffer and folds them, in rank order, into its
//     own buffer. Each GPU reads n - 1 whole buffers from the others: fine for small buffers, where
//     the meeting is the cost; n - 1 times the data for large ones.
//   two_shot_<op>_<type> (step 5): the buffer is cut into n chunks, GPU k owning chunk k. The GPUs
//     meet (every buffer holds its input); GPU k reads chunk k of every GPU's buffer, folds it
//     (reduce-scatter) and writes the result into chunk k of every GPU's buffer (all-gather); they
//     meet again, so that no kernel ends before the others have written into its buffer. Only GPU
//     k touches chunk k, and each element is read before the same thread overwrites it, so the
//     buffers need no staging. Each GPU moves 2(n - 1)/n of the buffer over NVLink, as the ring.
//   two_shot_writes_<op>_<type> (step 6): the two-shot with every transfer a store. GPU k first
//     writes chunk j of its buffer into slot k of GPU j's inbox (a store crosses NVLink once; a
//     load sends a request and waits for its answer); they meet; GPU k folds chunk k from its own
//     buffer and its inbox, all in its own memory, and writes the result into every GPU's buffer;
//     they meet again.
//
// The meeting (meet, below): block b of each GPU waits for block b of every other GPU, never for
// another block, at flags in its own memory that the others write. A flag holds an epoch, a 64-bit
// number the host raises for every meeting (it never wraps), so a flag left from an earlier call
// is never mistaken for this one; a wait passes once a flag has reached the epoch (later meetings
// only raise it). Every GPU's accesses to element i are made by the same block b (the grid-stride
// loops below share one mapping), so once block b has met, every element it will touch is where
// it should be.
//
// Reuse between calls: the one-shot's staging buffer has two halves, used by alternate calls: a
// GPU can start its next call, and write its staging buffer, while a slower GPU still reads the
// previous call's half; it cannot start the call after that before every GPU has met it in the
// next one, by which time the slower GPU has finished with that half. The two-shots end with a
// meeting after every access of the call, so a GPU that starts its next call knows the others are
// done with its memory, and it with theirs (the inbox it read included).
//
// What it leaves slow: the one-shot reads n - 1 whole buffers; the two-shots keep the SMs busy
// with what the copy engines do for free, and past a few hundred MiB the ring's copies win.
//
// Launch (launch_together: one ordinary launch per GPU, queued in turn): the same grid on every
// GPU, every block resident at once (a block waits for the other GPUs' same block): 512 threads,
// at most two blocks per SM (launch bounds), flags for that many blocks. Kernels running beside
// these on other streams can take SMs and leave blocks waiting to start; the meetings then rely on
// each GPU starting its blocks in order of their index, which CUDA does in practice but does not
// promise. Parameters: this GPU's buffer, its table, n elements, and the call's epoch (2c + 1 for
// call c, whose meetings use 2c + 1 and 2c + 2; bit 1 picks the one-shot's staging half). The
// table, in each GPU's own memory, of 64-bit words: this GPU's rank (its place in the world, 0 to
// n - 1), the number of GPUs, the elements in half a staging buffer and in an inbox slot
// (multiples of 4), then every GPU's staging buffer, inbox, flags and buffer, in rank order.
#define PEER_KERNEL extern "C" __global__ void __launch_bounds__(512, 2)

// What one GPU's kernel knows of the others, read from its table.
template <class T> struct Peers {
    const unsigned long long* table;
    unsigned rank;
    unsigned gpus;
    unsigned long long half; // where this call's half of the staging buffers starts, in elements
    unsigned long long slot; // elements in one slot of an inbox

    __device__ Peers(const unsigned long long* table, unsigned long long epoch)
        : table(table + 4), rank((unsigned)table[0]), gpus((unsigned)table[1]),
          half(table[2] * ((epoch >> 1) & 1)), slot(table[3])
    {
    }
    __device__ T* staging(unsigned gpu) const { return (T*)table[gpu] + half; }
    __device__ T* inbox(unsigned gpu) const { return (T*)table[gpus + gpu]; }
    __device__ unsigned long long* flags(unsigned gpu) const
    {
        return (unsigned long long*)table[2 * gpus + gpu];
    }
    __device__ T* buffer(unsigned gpu) const { return (T*)table[3 * gpus + gpu]; }
};

// ANCHOR: meet
// Block b of this GPU meets block b of every other GPU. Thread p (p < gpus, p != rank) tells GPU p
// that this block has arrived, by writing the epoch into flag [b][rank] in GPU p's memory with a
// release store at system scope (the block's earlier writes, to any GPU, are visible to whoever
// sees the flag), then waits until flag [b][p] in this GPU's memory, written by GPU p's block b,
// has reached the epoch (an acquire load: what GPU p wrote before its flag is visible after it).
// A wait of more than 2^37 clock cycles (about a minute) means another GPU never launched its
// kernel: the kernel traps, and the host sees an error rather than a GPU that spins forever.
template <class T>
__device__ __forceinline__ void meet(const Peers<T>& world, unsigned long long epoch)
{
    __syncthreads(); // every thread's writes of this block come before its arrival
    const unsigned peer = threadIdx.x;
    if (peer < world.gpus && peer != world.rank) {
        unsigned long long* theirs = world.flags(peer) + blockIdx.x * world.gpus + world.rank;
        asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(theirs), "l"(epoch) : "memory");
        const unsigned long long* mine = world.flags(world.rank) + blockIdx.x * world.gpus + peer;
        const long long started = clock64();
        for (;;) {
            unsigned long long seen;
            asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(seen) : "l"(mine) : "memory");
            if (seen >= epoch) {
                break;
            }
            if (clock64() - started > (1ll << 37)) {
                __trap();
            }
        }
    }
    __syncthreads(); // the block goes on once every peer's block b has arrived
}
// ANCHOR_END: meet

// Element q of every GPU's array `from(gpu)` (a pointer to elements of T), as V: a 16-byte vector,
// or one element for the last n % 4. Folded by `combine` in rank order, so that every GPU gets
// the same bits. The loads are
// issued in groups of eight before any is folded, so that they cross NVLink together rather than
// one after another.
template <class V, class From, class Combine>
__device__ __forceinline__ V fold_ranks(unsigned gpus, unsigned long long q, From from,
                                        Combine combine)
{
    V acc = ((const V*)from(0u))[q];
    for (unsigned base = 1; base < gpus; base += 8) {
        V loaded[8];
#pragma unroll
        for (unsigned j = 0; j < 8; ++j) {
            if (base + j < gpus) {
                loaded[j] = ((const V*)from(base + j))[q];
            }
        }
#pragma unroll
        for (unsigned j = 0; j < 8; ++j) {
            if (base + j < gpus) {
                acc = combine(acc, loaded[j]);
            }
        }
    }
    return acc;
}

// The operation on 16-byte vectors, lane by lane, and on single elements.
template <class Op> struct Lanes {
    typedef typename Op::Value T;
    typedef typename Vec4<T>::Type V;
    __device__ V operator()(V a, V b) const
    {
        a.x = Op::combine(a.x, b.x);
        a.y = Op::combine(a.y, b.y);
        a.z = Op::combine(a.z, b.z);
        a.w = Op::combine(a.w, b.w);
        return a;
    }
    __device__ T operator()(T a, T b) const { return Op::combine(a, b); }
};

// The grid-stride loop every kernel here uses: vector q (of n / 4) belongs to thread
// q % (grid threads), so a block touches the same vectors in every phase and on every GPU.
struct GridStride {
    unsigned long long first, stride;
    __device__ GridStride()
        : first((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x),
          stride((unsigned long long)gridDim.x * blockDim.x)
    {
    }
    // The first vector at or after `begin` that belongs to this thread.
    __device__ unsigned long long from(unsigned long long begin) const
    {
        return begin + (first + stride - begin % stride) % stride;
    }
};

// ANCHOR: one_shot
template <class Op>
__device__ void one_shot(typename Op::Value* buffer, const unsigned long long* table,
                         unsigned long long n, unsigned long long epoch)
{
    typedef typename Op::Value T;
    typedef typename Vec4<T>::Type V;
    const Peers<T> world(table, epoch);
    const GridStride grid;
    const unsigned long long tail = n / 4 * 4 + grid.first; // the last n % 4 elements, one a thread
    // Publish: this GPU's input into its staging buffer, which the others read.
    T* mine = world.staging(world.rank);
    for (unsigned long long q = grid.first; q < n / 4; q += grid.stride) {
        ((V*)mine)[q] = ((const V*)buffer)[q];
    }
    if (tail < n) {
        mine[tail] = buffer[tail];
    }
    meet(world, epoch);
    // Fold every GPU's staging buffer into this GPU's buffer.
    auto staged = [&](unsigned gpu) { return (const T*)world.staging(gpu); };
    for (unsigned long long q = grid.first; q < n / 4; q += grid.stride) {
        ((V*)buffer)[q] = fold_ranks<V>(world.gpus, q, staged, Lanes<Op>());
    }
    if (tail < n) {
        buffer[tail] = fold_ranks<T>(world.gpus, tail, staged, Lanes<Op>());
    }
}
// ANCHOR_END: one_shot

// Chunk k of the buffer's n / 4 vectors is [k * (n / 4) / gpus, (k + 1) * (n / 4) / gpus); the
// last n % 4 elements belong to the last GPU's chunk.
__device__ __forceinline__ unsigned long long chunk_start(unsigned long long n, unsigned k,
                                                          unsigned gpus)
{
    return n / 4 * k / gpus;
}

// ANCHOR: two_shot
// VECTORS: vectors a thread folds per turn of its loop (their loads all in flight at once).
template <class Op, int VECTORS = 1>
__device__ void two_shot(typename Op::Value* buffer, const unsigned long long* table,
                         unsigned long long n, unsigned long long epoch)
{
    typedef typename Op::Value T;
    typedef typename Vec4<T>::Type V;
    (void)buffer; // reached through the table, with the other GPUs' buffers
    const Peers<T> world(table, epoch);
    const GridStride grid;
    const unsigned long long begin = chunk_start(n, world.rank, world.gpus);
    const unsigned long long end = chunk_start(n, world.rank + 1, world.gpus);
    const unsigned long long tail = n / 4 * 4 + grid.first;
    auto buffers = [&](unsigned gpu) { return (const T*)world.buffer(gpu); };
    meet(world, epoch); // every GPU's buffer holds its input
    // Reduce-scatter and all-gather at once: this GPU's chunk, read from every GPU's buffer,
    // folded, and written back into every GPU's buffer.
    for (unsigned long long q = grid.from(begin); q < end; q += VECTORS * grid.stride) {
        V folded[VECTORS];
#pragma unroll
        for (int v = 0; v < VECTORS; ++v) {
            if (q + v * grid.stride < end) {
                folded[v] = fold_ranks<V>(world.gpus, q + v * grid.stride, buffers, Lanes<Op>());
            }
        }
#pragma unroll
        for (int v = 0; v < VECTORS; ++v) {
            for (unsigned gpu = 0; gpu < world.gpus && q + v * grid.stride < end; ++gpu) {
                ((V*)world.buffer(gpu))[q + v * grid.stride] = folded[v];
            }
        }
    }
    if (world.rank == world.gpus - 1 && tail < n) {
        const T folded = fold_ranks<T>(world.gpus, tail, buffers, Lanes<Op>());
        for (unsigned gpu = 0; gpu < world.gpus; ++gpu) {
            world.buffer(gpu)[tail] = folded;
        }
    }
    meet(world, epoch + 1); // every GPU has written its chunk into this GPU's buffer
}
// ANCHOR_END: two_shot

// ANCHOR: two_shot_writes
// Slot j of GPU k's inbox holds GPU j's copy of chunk k: element i of the buffer (in chunk k) at
// i - 4 * chunk_start(k) of the slot.
template <class Op>
__device__ void two_shot_writes(typename Op::Value* buffer, const unsigned long long* table,
                                unsigned long long n, unsigned long long epoch)
{
    typedef typename Op::Value T;
    typedef typename Vec4<T>::Type V;
    const Peers<T> world(table, epoch);
    const GridStride grid;
    const unsigned long long tail = n / 4 * 4 + grid.first;
    const unsigned last = world.gpus - 1;
    // Where GPU `from`'s copy of chunk k lies in GPU k's inbox, indexed like the buffer.
    auto slot = [&](unsigned k, unsigned from) {
        return world.inbox(k) + from * world.slot - chunk_start(n, k, world.gpus) * 4;
    };
    // Scatter by stores: chunk k of this GPU's buffer into its slot in GPU k's inbox.
    for (unsigned k = 0; k < world.gpus; ++k) {
        const unsigned long long end = k == world.rank ? 0 : chunk_start(n, k + 1, world.gpus);
        for (unsigned long long q = grid.from(chunk_start(n, k, world.gpus)); q < end;
             q += grid.stride) {
            ((V*)slot(k, world.rank))[q] = ((const V*)buffer)[q];
        }
    }
    if (tail < n && world.rank != last) {
        slot(last, world.rank)[tail] = buffer[tail];
    }
    meet(world, epoch); // every GPU's copy of this GPU's chunk is in its inbox
    // Fold this GPU's chunk from its buffer and its inbox, all in its own memory, then write the
    // result into every GPU's buffer.
    auto copies = [&](unsigned gpu) {
        return gpu == world.rank ? (const T*)buffer : slot(world.rank, gpu);
    };
    const unsigned long long begin = chunk_start(n, world.rank, world.gpus);
    const unsigned long long end = chunk_start(n, world.rank + 1, world.gpus);
    for (unsigned long long q = grid.from(begin); q < end; q += grid.stride) {
        const V folded = fold_ranks<V>(world.gpus, q, copies, Lanes<Op>());
        for (unsigned gpu = 0; gpu < world.gpus; ++gpu) {
            ((V*)world.buffer(gpu))[q] = folded;
        }
    }
    if (tail < n && world.rank == last) {
        const T folded = fold_ranks<T>(world.gpus, tail, copies, Lanes<Op>());
        for (unsigned gpu = 0; gpu < world.gpus; ++gpu) {
            world.buffer(gpu)[tail] = folded;
        }
    }
    meet(world, epoch + 1); // every GPU has written its chunk into this GPU's buffer
}
// ANCHOR_END: two_shot_writes

// The entry points, <kind>_<op>_<type>: one_shot, two_shot and two_shot_writes.
PEER_KERNEL one_shot_sum_f32(float* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    one_shot<Sum<float>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_min_f32(float* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    one_shot<Min<float>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_max_f32(float* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    one_shot<Max<float>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_sum_i32(int* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    one_shot<Sum<int>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_min_i32(int* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    one_shot<Min<int>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_max_i32(int* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    one_shot<Max<int>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_sum_u32(unsigned int* buffer, const unsigned long long* table,
                             unsigned long long n, unsigned long long epoch)
{
    one_shot<Sum<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_min_u32(unsigned int* buffer, const unsigned long long* table,
                             unsigned long long n, unsigned long long epoch)
{
    one_shot<Min<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL one_shot_max_u32(unsigned int* buffer, const unsigned long long* table,
                             unsigned long long n, unsigned long long epoch)
{
    one_shot<Max<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_sum_f32(float* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    two_shot<Sum<float>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_min_f32(float* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    two_shot<Min<float>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_max_f32(float* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    two_shot<Max<float>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_sum_i32(int* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    two_shot<Sum<int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_min_i32(int* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    two_shot<Min<int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_max_i32(int* buffer, const unsigned long long* table, unsigned long long n,
                             unsigned long long epoch)
{
    two_shot<Max<int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_sum_u32(unsigned int* buffer, const unsigned long long* table,
                             unsigned long long n, unsigned long long epoch)
{
    two_shot<Sum<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_min_u32(unsigned int* buffer, const unsigned long long* table,
                             unsigned long long n, unsigned long long epoch)
{
    two_shot<Min<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_max_u32(unsigned int* buffer, const unsigned long long* table,
                             unsigned long long n, unsigned long long epoch)
{
    two_shot<Max<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_sum_f32(float* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Sum<float>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_min_f32(float* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Min<float>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_max_f32(float* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Max<float>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_sum_i32(int* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Sum<int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_min_i32(int* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Min<int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_max_i32(int* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Max<int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_sum_u32(unsigned int* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Sum<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_min_u32(unsigned int* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Min<unsigned int>>(buffer, table, n, epoch);
}

PEER_KERNEL two_shot_writes_max_u32(unsigned int* buffer, const unsigned long long* table,
                                    unsigned long long n, unsigned long long epoch)
{
    two_shot_writes<Max<unsigned int>>(buffer, table, n, epoch);
}
