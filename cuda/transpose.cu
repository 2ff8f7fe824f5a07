// transpose: the transpose ladder, every step in one file.
//
// Every kernel here transposes a row-major `rows x cols` matrix `in` into the row-major
// `cols x rows` matrix `out`: element (r, c) of the input, at in[r * cols + c], goes to
// out[c * rows + r]. A transpose only moves bits, so the kernels move 4-byte words: the same
// kernels serve f32, i32 and u32 (and a NaN's payload or a -0.0 arrives unchanged).
//
// The grid is two-dimensional: blockIdx.x walks the tiles across the input's columns, blockIdx.y
// the tiles down its rows (step 7 turns it: blockIdx.x down the rows, blockIdx.y across). Offsets
// are computed in 64 bits (`size_t`), so a matrix may hold more than 2^32 elements; each dimension
// is below 2^31, and the launcher checks both.
//
// The steps, each differing from the one before by one technique:
//   1. transpose_copy              the ceiling: a copy with the transposes' access pattern
//   2. transpose_naive             one element per thread, reads coalesced, writes strided
//   3. transpose_tiled             a 32 x 32 tile in shared memory: both sides coalesced
//   4. transpose_padded            the tile padded to 33 columns: no bank conflicts
//   5. transpose_four_per_thread   32 x 8 threads per 32 x 32 tile: four elements per thread
//   6. transpose_wide_tiles        64 x 64 tiles, 32 x 16 threads: eight elements per thread
//   7. transpose_column_order      step 6 with the grid turned: the blocks running at once go down
//                                  a column of tiles, so they write whole output rows
// and one extra, beside step 5:
//      transpose_swizzled          step 5 with a swizzled tile instead of a padded one

typedef unsigned int word;

// The side of a tile: one warp's worth of 4-byte words, 128 bytes, a full cache line.
#define TILE 32

// ANCHOR: copy
// Step 1, transpose_copy: not a transpose, the ceiling the transposes are measured against.
//
// What it does: each thread copies one element, in[r * cols + c] to out[r * cols + c], with the
// launch shape of the naive transpose: 32 x 32 threads per block, one block per 32 x 32 tile. A
// warp reads 32 consecutive words of one row (128 bytes, one cache line) and writes them back the
// same way: both sides coalesced. No transpose that reads and writes every element once can beat it
// by much with the same shape, which is why it is the ceiling and not the device copy roof.
//
// Launch: block (32, 32), grid (ceil(cols / 32), ceil(rows / 32)).
extern "C" __global__ void transpose_copy(const word* __restrict__ in, word* __restrict__ out,
                                          unsigned int rows, unsigned int cols)
{
    unsigned int c = blockIdx.x * TILE + threadIdx.x;
    unsigned int r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) {
        out[(size_t)r * cols + c] = in[(size_t)r * cols + c];
    }
}
// ANCHOR_END: copy

// ANCHOR: naive
// Step 2, transpose_naive: the copy, with the write address transposed.
//
// What it does: each thread moves one element, from in[r * cols + c] to out[c * rows + r].
//
// What changed from the copy: only the write address.
//
// What it leaves slow: the 32 lanes of a warp have consecutive c, so they read one 128-byte line
// but write 32 words `rows` words apart: 32 separate 32-byte sectors, each carrying 4 useful bytes
// of its 32. The writes are strided; the memory system moves about eight times the bytes written.
//
// Launch: block (32, 32), grid (ceil(cols / 32), ceil(rows / 32)).
extern "C" __global__ void transpose_naive(const word* __restrict__ in, word* __restrict__ out,
                                           unsigned int rows, unsigned int cols)
{
    unsigned int c = blockIdx.x * TILE + threadIdx.x;
    unsigned int r = blockIdx.y * TILE + threadIdx.y;
    // ANCHOR: solution move element (r, c) of the row-major rows x cols input to (c, r) of the row-major cols x rows output, where it is inside the matrix
    if (r < rows && c < cols) {
        out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
    }
    // ANCHOR_END: solution
}
// ANCHOR_END: naive

// ANCHOR: tiled
// Step 3, transpose_tiled: a 32 x 32 tile through shared memory.
//
// What it does: a block reads its 32 x 32 tile of the input row by row into shared memory (each
// warp one row of 32 consecutive words), waits for the whole tile, then writes the tile's columns
// as rows of the output (each warp 32 consecutive words again). Both global accesses are now
// coalesced; the transposition happens in shared memory, where a column is as easy to reach as a
// row... nearly.
//
// What changed from naive: the tile in shared memory, a barrier, and a write loop that reads the
// tile by columns.
//
// What it leaves slow: shared memory has 32 banks of 4-byte words, word w in bank w % 32. A row of
// `word tile[32][32]` is 32 words, so a whole column lies in one bank: the warp that reads
// tile[x][y] for x = 0..31 asks one bank 32 times, and the hardware serves it in 32 turns
// (a 32-way bank conflict).
//
// Launch: block (32, 32), grid (ceil(cols / 32), ceil(rows / 32)).
extern "C" __global__ void transpose_tiled(const word* __restrict__ in, word* __restrict__ out,
                                           unsigned int rows, unsigned int cols)
{
    __shared__ word tile[TILE][TILE];

    unsigned int x = threadIdx.x, y = threadIdx.y;
    unsigned int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE; // the tile's corner in the input

    // Read: thread (x, y) takes input row r0 + y, column c0 + x.
    if (r0 + y < rows && c0 + x < cols) {
        tile[y][x] = in[(size_t)(r0 + y) * cols + c0 + x];
    }
    __syncthreads();
    // Write: thread (x, y) writes output row c0 + y (input column c0 + y), output column r0 + x
    // (input row r0 + x), taking the tile's column y.
    // ANCHOR: solution thread (x, y) writes output row c0 + y, column r0 + x, from the tile's column y (tile[x][y]), where it is inside the matrix
    if (c0 + y < cols && r0 + x < rows) {
        out[(size_t)(c0 + y) * rows + r0 + x] = tile[x][y];
    }
    // ANCHOR_END: solution
}
// ANCHOR_END: tiled

// ANCHOR: padded
// Step 4, transpose_padded: the tile padded to 33 columns.
//
// What it does: what transpose_tiled does.
//
// What changed from tiled: one word of padding per row of the tile. A row is now 33 words, so
// tile[x][y] is word 33x + y, in bank (x + y) % 32: the 32 lanes reading a column hit 32 different
// banks. Reading a row is unchanged (32 consecutive words, 32 banks). The padding costs 128 bytes
// of shared memory per block.
//
// What it leaves slow: each thread moves one element, so it has one 4-byte load in flight before
// the barrier, and a block of 1024 threads spends as much time starting and waiting as moving.
//
// Launch: block (32, 32), grid (ceil(cols / 32), ceil(rows / 32)).
extern "C" __global__ void transpose_padded(const word* __restrict__ in, word* __restrict__ out,
                                            unsigned int rows, unsigned int cols)
{
    __shared__ word tile[TILE][TILE + 1];

    unsigned int x = threadIdx.x, y = threadIdx.y;
    unsigned int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;

    if (r0 + y < rows && c0 + x < cols) {
        tile[y][x] = in[(size_t)(r0 + y) * cols + c0 + x];
    }
    __syncthreads();
    if (c0 + y < cols && r0 + x < rows) {
        out[(size_t)(c0 + y) * rows + r0 + x] = tile[x][y];
    }
}
// ANCHOR_END: padded

// ANCHOR: tiles
// Steps 5 to 7 (and the swizzled extra): one tile of SIDE x SIDE words per block of 32 x ROWS
// threads, each thread moving SIDE / ROWS rows of SIDE / 32 columns.
//
// What it does: the padded tile of step 4, moved by fewer threads. Thread (x, y) loads rows
// y, y + ROWS, y + 2 ROWS, ... of the tile at columns x, x + 32, ... into registers, every load
// issued before the first is used, so all of them are in flight at once; then it stores them in
// the tile, and after the barrier writes the output rows y, y + ROWS, ... the same way. Both global
// sides stay coalesced: each warp reads and writes whole 128-byte lines.
//
// The layout of the tile in shared memory: padded (SWIZZLE false) gives each row a 33rd word, as in
// step 4, so a column spreads over the 32 banks. Swizzled (SWIZZLE true) keeps SIDE words per row
// and stores column c of row r at column c ^ (r % 32): within any 32 consecutive rows a column
// lands on 32 different banks, and a row still covers every bank once. No spare words; one XOR per
// access.
//
// Offsets into the input and output are 64-bit; rows and columns are below 2^31 (the launcher
// checks), so the 32-bit tile arithmetic cannot wrap.
template <bool SWIZZLE>
__device__ __forceinline__ unsigned int tile_column(unsigned int r, unsigned int c)
{
    return SWIZZLE ? c ^ (r % 32) : c;
}

// Which tile a block moves: block (bx, by) takes the tile in tile column bx and tile row by, so the
// blocks that run at once (consecutive bx) lie side by side along the input's rows. DOWN (step 7)
// turns the grid: block (bx, by) takes tile row bx and tile column by, and the blocks that run at
// once lie one under the other, down a column of tiles.
template <unsigned int SIDE, unsigned int ROWS, bool SWIZZLE, bool DOWN = false>
__device__ __forceinline__ void transpose_tiles(const word* __restrict__ in, word* __restrict__ out,
                                                unsigned int rows, unsigned int cols)
{
    __shared__ word tile[SIDE][SWIZZLE ? SIDE : SIDE + 1];

    unsigned int x = threadIdx.x, y = threadIdx.y;
    unsigned int r0 = (DOWN ? blockIdx.x : blockIdx.y) * SIDE,
                 c0 = (DOWN ? blockIdx.y : blockIdx.x) * SIDE;

    // Read: every load first, into registers (elements outside the matrix read as 0 and are never
    // written out).
    word v[SIDE / ROWS][SIDE / 32];
#pragma unroll
    for (unsigned int i = 0; i < SIDE / ROWS; ++i) {
#pragma unroll
        for (unsigned int j = 0; j < SIDE / 32; ++j) {
            unsigned int r = r0 + y + i * ROWS, c = c0 + x + j * 32;
            v[i][j] = (r < rows && c < cols) ? in[(size_t)r * cols + c] : 0;
        }
    }
#pragma unroll
    for (unsigned int i = 0; i < SIDE / ROWS; ++i) {
#pragma unroll
        for (unsigned int j = 0; j < SIDE / 32; ++j) {
            unsigned int r = y + i * ROWS, c = x + j * 32;
            tile[r][tile_column<SWIZZLE>(r, c)] = v[i][j];
        }
    }
    __syncthreads();

    // Write: output row c0 + y + i ROWS is the tile's column y + i ROWS; its words are the tile's
    // rows x + j 32, one per lane: a column of the tile, which the layout spreads over the banks.
#pragma unroll
    for (unsigned int i = 0; i < SIDE / ROWS; ++i) {
#pragma unroll
        for (unsigned int j = 0; j < SIDE / 32; ++j) {
            unsigned int c = y + i * ROWS, r = x + j * 32;
            if (c0 + c < cols && r0 + r < rows) {
                out[(size_t)(c0 + c) * rows + r0 + r] = tile[r][tile_column<SWIZZLE>(r, c)];
            }
        }
    }
}
// ANCHOR_END: tiles

// ANCHOR: four_per_thread
// Step 5, transpose_four_per_thread: 32 x 8 threads per 32 x 32 tile, four elements each.
//
// What changed from padded: the block is 32 x 8 threads, so each thread moves four elements of the
// tile, and it issues its four loads before it stores any of them.
//
// What it leaves slow: a block holds one 4 KiB tile; each SM keeps eight such blocks, and the
// loads one block has in flight while the others wait at their barrier or write are not always
// enough to keep HBM busy (the chapter measures how far it stays from the copy roof).
//
// Launch: block (32, 8), grid (ceil(cols / 32), ceil(rows / 32)).
extern "C" __global__ void __launch_bounds__(256)
    transpose_four_per_thread(const word* __restrict__ in, word* __restrict__ out,
                              unsigned int rows, unsigned int cols)
{
    transpose_tiles<32, 8, false>(in, out, rows, cols);
}
// ANCHOR_END: four_per_thread

// ANCHOR: swizzled
// Extra beside step 5, transpose_swizzled: step 5 with the tile swizzled instead of padded.
//
// What changed from four_per_thread: the tile has no spare word; column c of row r is stored at
// c ^ (r % 32). Same speed, no wasted shared memory; the XOR is the price.
//
// Launch: block (32, 8), grid (ceil(cols / 32), ceil(rows / 32)).
extern "C" __global__ void __launch_bounds__(256)
    transpose_swizzled(const word* __restrict__ in, word* __restrict__ out, unsigned int rows,
                       unsigned int cols)
{
    transpose_tiles<32, 8, true>(in, out, rows, cols);
}
// ANCHOR_END: swizzled

// ANCHOR: wide_tiles
// Step 6, transpose_wide_tiles: 64 x 64 tiles, 32 x 16 threads, eight elements per thread.
//
// What changed from four_per_thread: two numbers. A tile is 64 x 64 words (16.25 KiB padded), a
// block 32 x 16 threads, so each thread has eight loads in flight instead of four, and each
// warp's writes cover two 128-byte lines of every output row the tile touches instead of one.
//
// What it leaves slow: the order of its writes. It runs as fast as cuBLAS's geam, a few percent
// under the device copy; the blocks running at once read whole input rows but scatter their
// writes over the output (step 7).
//
// Launch: block (32, 16), grid (ceil(cols / 64), ceil(rows / 64)).
extern "C" __global__ void __launch_bounds__(512)
    transpose_wide_tiles(const word* __restrict__ in, word* __restrict__ out, unsigned int rows,
                         unsigned int cols)
{
    transpose_tiles<64, 16, false>(in, out, rows, cols);
}
// ANCHOR_END: wide_tiles

// ANCHOR: column_order
// Step 7, transpose_column_order: step 6 with the grid turned.
//
// What changed from wide_tiles: which tile a block takes (transpose_tiles' DOWN). In practice the
// GPU starts blocks in the order of their index, x fastest (CUDA does not promise it), so the few
// hundred blocks running at once are close to consecutive in x. In step 6 they are tiles side by
// side: together they read a band of whole input rows, and each writes its 64 output rows 256 bytes
// at a time, spread over the whole output. Here they are tiles one under the other: they read 256
// bytes of each of many input rows, and together write a band of whole output rows. Same bytes,
// same tiles; the writes come out in order and the reads are scattered, where step 6 had it the
// other way round; measured, this order is the faster one (the chapter's "Step 7"; why, only a
// guess).
//
// What it leaves slow: the scattered side. A copy reads and writes in order, and a transpose
// cannot do both.
//
// Launch: block (32, 16), grid (ceil(rows / 64), ceil(cols / 64)).
extern "C" __global__ void __launch_bounds__(512)
    transpose_column_order(const word* __restrict__ in, word* __restrict__ out, unsigned int rows,
                           unsigned int cols)
{
    transpose_tiles<64, 16, false, true>(in, out, rows, cols);
}
// ANCHOR_END: column_order
