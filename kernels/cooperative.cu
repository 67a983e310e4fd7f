// Cooperative-groups kernels, written against the CUDA 12.9 headers: a grid-wide
// reduction that synchronises the whole grid with cg::this_grid().sync() (it needs
// a cooperative launch: the driver's grid workspace, read through %envreg1/2), and a
// tile of 64 threads (two warps: cg::block_tile_memory and the driver-reserved
// shared memory, %reserved_smem_offset_1). Buffer parameters are Slices, as in
// slices.cu. Compiled to cooperative.ptx by scripts/gen_ptx.py.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

template <typename T> struct Slice {
    T *ptr;
    unsigned long long len;
};

// Rust: (In<u32>, Out<u32>, Out<u64>, Out<u32>). Block size 256.
// Sums in into out[0]: each block writes its partial sum + 1 to partial[blockIdx.x],
// the grid synchronises, every block counts the partial sums it sees written (and
// adds 1 to seen[0] if it saw all of them), and block 0 adds them up.
extern "C" __global__ void grid_reduce(Slice<const unsigned int> in, Slice<unsigned int> partial,
                                       Slice<unsigned long long> out, Slice<unsigned int> seen)
{
    if (partial.len < gridDim.x || out.len < 1 || seen.len < 1 || blockDim.x != 256) {
        return; // the same for every thread of the grid
    }
    cg::grid_group grid = cg::this_grid();
    __shared__ unsigned int s[256];
    unsigned int tid = threadIdx.x;
    unsigned int sum = 0;
    for (unsigned long long i = grid.thread_rank(); i < in.len; i += grid.size()) {
        sum += in.ptr[i];
    }
    s[tid] = sum;
    __syncthreads();
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            s[tid] += s[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial.ptr[blockIdx.x] = s[0] + 1; // never 0, so "written" can be seen
    }
    grid.sync();
    if (tid == 0) {
        unsigned int written = 0;
        for (unsigned int b = 0; b < gridDim.x; ++b) {
            written += partial.ptr[b] != 0;
        }
        if (written == gridDim.x) {
            atomicAdd(seen.ptr, 1u);
        }
    }
    if (blockIdx.x == 0 && tid == 0) {
        unsigned long long total = 0;
        for (unsigned int b = 0; b < gridDim.x; ++b) {
            total += partial.ptr[b] - 1;
        }
        out.ptr[0] = total;
    }
}

// Rust: (Out<u32>,). out[blockIdx.x] = whether this_grid().is_valid() (true only
// in a cooperative launch).
extern "C" __global__ void grid_valid(Slice<unsigned int> out)
{
    if (threadIdx.x == 0 && blockIdx.x < out.len) {
        out.ptr[blockIdx.x] = cg::this_grid().is_valid() ? 1u : 0u;
    }
}

// Rust: (In<u32>, Out<u32>, Out<u32>). Block size 128: two tiles of 64 threads.
// sums[tile] = the sum of the tile's values (cg::reduce); for every thread,
// ranks[4 * i ..] = its rank in the tile, the tile's rank in the block, the tile's
// size, and the tile's first value (tile.shfl).
extern "C" __global__ void tile64(Slice<const unsigned int> in, Slice<unsigned int> sums,
                                  Slice<unsigned int> ranks)
{
    __shared__ cg::block_tile_memory<128> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    cg::thread_block_tile<64> tile = cg::tiled_partition<64>(block);
    unsigned int gid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int v = gid < in.len ? in.ptr[gid] : 0;
    unsigned int total = cg::reduce(tile, v, cg::plus<unsigned int>());
    tile.sync();
    unsigned int first = tile.shfl(v, 0);
    if (4ull * gid + 3 < ranks.len) {
        ranks.ptr[gid * 4 + 0] = tile.thread_rank();
        ranks.ptr[gid * 4 + 1] = tile.meta_group_rank();
        ranks.ptr[gid * 4 + 2] = tile.num_threads();
        ranks.ptr[gid * 4 + 3] = first;
    }
    unsigned int t = blockIdx.x * tile.meta_group_size() + tile.meta_group_rank();
    if (tile.thread_rank() == 0 && t < sums.len) {
        sums.ptr[t] = total;
    }
}
