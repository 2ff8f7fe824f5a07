// reduce-multi-gpu: the ring's fold, and the all-reduces that GPUs do with their own loads and
// stores over NVLink (one-shot and two-shot).
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
// Steps 4 and 5 are below the fold kernels.
#include "block_reduce.cuh"

// ANCHOR: combine
template <class Op>
__device__ __forceinline__ void combine_into(typename Op::Value* __restrict__ into,
                                             const typename Op::Value* __restrict__ from, unsigned long long n)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        // ANCHOR: solution fold: into[i] becomes the operation (Op::combine) of into[i] and from[i]
        into[i] = Op::combine(into[i], from[i]);
        // ANCHOR_END: solution
    }
}
// ANCHOR_END: combine

// The entry points, ring_combine_<op>_<type>: one per operation and element type.
extern "C" __global__ void ring_combine_sum_f32(float* into, const float* from, unsigned long long n)
{
    combine_into<Sum<float> >(into, from, n);
}

extern "C" __global__ void ring_combine_min_f32(float* into, const float* from, unsigned long long n)
{
    combine_into<Min<float> >(into, from, n);
}

extern "C" __global__ void ring_combine_max_f32(float* into, const float* from, unsigned long long n)
{
    combine_into<Max<float> >(into, from, n);
}

extern "C" __global__ void ring_combine_sum_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Sum<int> >(into, from, n);
}

extern "C" __global__ void ring_combine_min_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Min<int> >(into, from, n);
}

extern "C" __global__ void ring_combine_max_i32(int* into, const int* from, unsigned long long n)
{
    combine_into<Max<int> >(into, from, n);
}

extern "C" __global__ void ring_combine_sum_u32(unsigned int* into, const unsigned int* from, unsigned long long n)
{
    combine_into<Sum<unsigned int> >(into, from, n);
}

extern "C" __global__ void ring_combine_min_u32(unsigned int* into, const unsigned int* from, unsigned long long n)
{
    combine_into<Min<unsigned int> >(into, from, n);
}

extern "C" __global__ void ring_combine_max_u32(unsigned int* into, const unsigned int* from, unsigned long long n)
{
    combine_into<Max<unsigned int> >(into, from, n);
}


// -------------------------------------------------------------------------------------------------
// Steps 4 and 5: one kernel per GPU and call, the GPUs reading and writing each other's memory.
//
// The ring issues 2(n - 1) steps of copies, waits and folds from the host: for a small buffer the
// host's issuing, not the transfer, is the time. Here every GPU runs one kernel per call, the same
// grid on every GPU, and the kernels reach the other GPUs' memory directly: with peer access on,
// a pointer into GPU j's memory works in GPU k's loads and stores, over NVLink.
//
//   one_shot_<op>_<type>: every GPU copies its buffer into its staging buffer, the GPUs meet, and
//     every GPU reads every GPU's staging buffer and folds them, in rank order, into its own
//     buffer. Each GPU reads (n - 1) buffers from the others: fine for small buffers, where the
//     meeting is the cost; n times the data for large ones.
//   two_shot_<op>_<type>: the buffer is cut into n chunks, one per GPU. Every GPU copies its buffer
//     into its staging buffer; they meet; GPU k folds chunk k of every GPU's staging buffer
//     (reduce-scatter) and writes the result into chunk k of every GPU's buffer (all-gather); they
//     meet again, so that no GPU's kernel ends before the others have written into its buffer.
//     Each GPU reads and writes (n - 1)/n of the buffer over NVLink, as the ring does.
//
// The meeting (meet, below): block b of each GPU waits for block b of every other GPU, never for
// another block, at flags in its own memory that the others write. A flag holds an epoch, which
// the host raises by one for every meeting, so a flag left from an earlier call is never mistaken
// for this one; a wait passes once a flag has reached the epoch (later meetings only raise it).
// Every GPU's copy and fold of element i is done by the same block b (the grid-stride loops below
// share one mapping), so when block b has met, every element it will read is in place.
//
// The staging buffer has two halves, used by alternate calls (parity): a GPU can start its next
// call, and write its staging buffer, while a slower GPU still reads the previous call's; it
// cannot start the call after that before every GPU has met it in the next one, by which time the
// slower GPU has finished with that half.
//
// What it leaves slow: the one-shot reads n - 1 whole buffers over NVLink, so it loses to the
// two-shot past a few MiB; the two-shot's loads and stores compete with each other on the links
// and cannot use the copy engines, which the ring keeps for the largest buffers.
//
// Launch (launch_together): the same grid on every GPU, at most as many blocks as the GPU holds at
// once (a block waits for the other GPUs' same block, so every block must be running), with flags
// for that many blocks; any block size that is a multiple of 32 and at least the number of GPUs.
// Parameters: this GPU's buffer, its table, n elements, and the call's epoch (odd: 2c + 1 for call
// c, whose meetings use 2c + 1 and 2c + 2). The table, in each GPU's own memory, of 64-bit words:
// this GPU's rank, the number of GPUs, the elements in half a staging buffer (a multiple of 4),
// then every GPU's staging buffer, every GPU's flags and every GPU's buffer, in rank order.

// What one GPU's kernel knows of the others, read from its table.
template <class T>
struct Peers {
    const unsigned long long* table;
    unsigned rank;
    unsigned gpus;
    unsigned long long half; // which half of the staging buffers this call uses, in elements

    __device__ Peers(const unsigned long long* table, unsigned epoch)
        : table(table + 3), rank((unsigned)table[0]), gpus((unsigned)table[1]),
          half(table[2] * ((epoch >> 1) & 1))
    {
    }
    __device__ T* staging(unsigned gpu) const { return (T*)table[gpu] + half; }
    __device__ unsigned* flags(unsigned gpu) const { return (unsigned*)table[gpus + gpu]; }
    __device__ T* buffer(unsigned gpu) const { return (T*)table[2 * gpus + gpu]; }
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
__device__ __forceinline__ void meet(const Peers<T>& world, unsigned epoch)
{
    __syncthreads(); // every thread's writes of this block come before its arrival
    const unsigned peer = threadIdx.x;
    if (peer < world.gpus && peer != world.rank) {
        unsigned* theirs = world.flags(peer) + blockIdx.x * world.gpus + world.rank;
        asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(theirs), "r"(epoch) : "memory");
        const unsigned* mine = world.flags(world.rank) + blockIdx.x * world.gpus + peer;
        const long long started = clock64();
        for (;;) {
            unsigned seen;
            asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(seen) : "l"(mine) : "memory");
            if ((int)(seen - epoch) >= 0) {
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

// Elementwise fold of two 16-byte vectors.
template <class Op, class V>
__device__ __forceinline__ V combine_lanes(V a, V b)
{
    a.x = Op::combine(a.x, b.x);
    a.y = Op::combine(a.y, b.y);
    a.z = Op::combine(a.z, b.z);
    a.w = Op::combine(a.w, b.w);
    return a;
}

// Every GPU's staging[i..], folded in rank order (so every GPU gets the same bits).
template <class Op, class V>
__device__ __forceinline__ V fold_peers(const Peers<typename Op::Value>& world, unsigned long long q)
{
    V acc = ((const V*)world.staging(0))[q];
    for (unsigned gpu = 1; gpu < world.gpus; ++gpu) {
        acc = combine_lanes<Op>(acc, ((const V*)world.staging(gpu))[q]);
    }
    return acc;
}

// Every GPU's staging[i], one element (for the last n % 4).
template <class Op>
__device__ __forceinline__ typename Op::Value fold_peers_at(const Peers<typename Op::Value>& world,
                                                            unsigned long long i)
{
    typename Op::Value acc = world.staging(0)[i];
    for (unsigned gpu = 1; gpu < world.gpus; ++gpu) {
        acc = Op::combine(acc, world.staging(gpu)[i]);
    }
    return acc;
}

// Copies this GPU's buffer into its staging buffer: 16-byte vectors, then the last n % 4 elements,
// element i by the thread that will fold it.
template <class T>
__device__ __forceinline__ void publish(const Peers<T>& world, const T* buffer, unsigned long long n)
{
    typedef typename Vec4<T>::Type V;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    T* mine = world.staging(world.rank);
    for (unsigned long long q = first; q < n / 4; q += stride) {
        ((V*)mine)[q] = ((const V*)buffer)[q];
    }
    if (first < n % 4) {
        mine[n / 4 * 4 + first] = buffer[n / 4 * 4 + first];
    }
}

// ANCHOR: one_shot
template <class Op>
__device__ void one_shot(typename Op::Value* buffer, const unsigned long long* table, unsigned long long n,
                         unsigned epoch)
{
    const Peers<typename Op::Value> world(table, epoch);
    typedef typename Op::Value T;
    typedef typename Vec4<T>::Type V;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    publish(world, buffer, n);
    meet(world, epoch);
    for (unsigned long long q = first; q < n / 4; q += stride) {
        ((V*)buffer)[q] = fold_peers<Op, V>(world, q);
    }
    if (first < n % 4) {
        const unsigned long long i = n / 4 * 4 + first;
        buffer[i] = fold_peers_at<Op>(world, i);
    }
}
// ANCHOR_END: one_shot

// ANCHOR: two_shot
// Chunk k of the buffer's 16-byte vectors is [k * quads / gpus, (k + 1) * quads / gpus); the last
// n % 4 elements belong to the last GPU's chunk.
template <class Op>
__device__ void two_shot(typename Op::Value* buffer, const unsigned long long* table, unsigned long long n,
                         unsigned epoch)
{
    const Peers<typename Op::Value> world(table, epoch);
    typedef typename Op::Value T;
    typedef typename Vec4<T>::Type V;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long quads = n / 4;
    const unsigned long long begin = quads * world.rank / world.gpus;
    const unsigned long long end = quads * (world.rank + 1) / world.gpus;
    publish(world, buffer, n);
    meet(world, epoch);
    // Reduce-scatter and all-gather: this GPU's chunk, folded from every staging buffer, written
    // into every GPU's buffer. The loop starts at the first q >= begin that this thread copied.
    for (unsigned long long q = begin + (first + stride - begin % stride) % stride; q < end; q += stride) {
        const V folded = fold_peers<Op, V>(world, q);
        for (unsigned gpu = 0; gpu < world.gpus; ++gpu) {
            ((V*)world.buffer(gpu))[q] = folded;
        }
    }
    if (world.rank == world.gpus - 1 && first < n % 4) {
        const unsigned long long i = quads * 4 + first;
        const T acc = fold_peers_at<Op>(world, i);
        for (unsigned gpu = 0; gpu < world.gpus; ++gpu) {
            world.buffer(gpu)[i] = acc;
        }
    }
    meet(world, epoch + 1);
}
// ANCHOR_END: two_shot

// The entry points, one_shot_<op>_<type> and two_shot_<op>_<type>.
extern "C" __global__ void one_shot_sum_f32(float* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Sum<float> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_min_f32(float* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Min<float> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_max_f32(float* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Max<float> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_sum_i32(int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Sum<int> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_min_i32(int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Min<int> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_max_i32(int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Max<int> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_sum_u32(unsigned int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Sum<unsigned int> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_min_u32(unsigned int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Min<unsigned int> >(buffer, table, n, epoch);
}

extern "C" __global__ void one_shot_max_u32(unsigned int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    one_shot<Max<unsigned int> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_sum_f32(float* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Sum<float> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_min_f32(float* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Min<float> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_max_f32(float* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Max<float> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_sum_i32(int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Sum<int> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_min_i32(int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Min<int> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_max_i32(int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Max<int> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_sum_u32(unsigned int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Sum<unsigned int> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_min_u32(unsigned int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Min<unsigned int> >(buffer, table, n, epoch);
}

extern "C" __global__ void two_shot_max_u32(unsigned int* buffer, const unsigned long long* table,
                                           unsigned long long n, unsigned epoch)
{
    two_shot<Max<unsigned int> >(buffer, table, n, epoch);
}
