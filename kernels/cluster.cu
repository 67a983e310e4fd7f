// Thread-block clusters (sm_90): each block writes what the cluster special
// registers say, and the blocks of a cluster synchronise with the cluster barrier
// (cg::this_cluster().sync(): barrier.cluster.arrive + wait). Buffer parameters are
// Slices, as in slices.cu. Compiled to cluster.ptx (compute_90) by scripts/gen_ptx.py.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <typename T> struct Slice {
    T *ptr;
    unsigned long long len;
};

// Rust: (Out<u32>, Out<u32>). For block b (linear in the grid), out[8 * b ..] =
// cluster id x, clusters in x, rank in the cluster, blocks in the cluster, block
// index in the cluster (x), cluster width (x), whether the cluster is explicit, and
// how many blocks of its cluster had arrived[cluster id] before the cluster barrier
// (all of them, if the barrier works).
extern "C" __global__ void cluster_info(Slice<unsigned int> out, Slice<unsigned int> arrived)
{
    cg::cluster_group cluster = cg::this_cluster();
    unsigned int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned int cid = 0, ncid = 0, crank = 0, csize = 0, cctax = 0, cnctax = 0, expl = 0;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(ncid));
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(crank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(csize));
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(cctax));
    asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(cnctax));
    asm volatile("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }"
                 : "=r"(expl));
    if (threadIdx.x == 0 && cid < arrived.len) {
        atomicAdd(&arrived.ptr[cid], 1u);
    }
    cluster.sync();
    if (threadIdx.x == 0 && 8ull * b + 7 < out.len) {
        out.ptr[b * 8 + 0] = cid;
        out.ptr[b * 8 + 1] = ncid;
        out.ptr[b * 8 + 2] = crank;
        out.ptr[b * 8 + 3] = csize;
        out.ptr[b * 8 + 4] = cctax;
        out.ptr[b * 8 + 5] = cnctax;
        out.ptr[b * 8 + 6] = expl;
        out.ptr[b * 8 + 7] = cid < arrived.len ? atomicAdd(&arrived.ptr[cid], 0u) : 0u;
    }
}

// Rust: (Out<u32>,). Compiled with a cluster shape of 2 blocks (__cluster_dims__,
// PTX .reqnctapercluster): every launch runs in pairs, even a plain cuLaunchKernel.
// out[b] = 100 * the block's rank in its cluster + the blocks in its cluster.
extern "C" __global__ void __cluster_dims__(2, 1, 1) fixed_pairs(Slice<unsigned int> out)
{
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if (threadIdx.x == 0 && blockIdx.x < out.len) {
        out.ptr[blockIdx.x] = 100 * cluster.block_rank() + cluster.num_blocks();
    }
}

// Rust: (Out<u32>,). Distributed shared memory (cluster.map_shared_rank: mapa),
// block size 64, a 1-D grid and clusters of C blocks in x. Each block fills its
// shared array with 1000 * rank + thread index and adds 1 to rank 0's shared
// counter; after the cluster barrier every thread reads its neighbour's (rank + 1)
// value at its index: out[64 * b + t] = 1000 * ((rank + 1) % C) + t; and rank 0
// writes its counter (C) to out[64 * gridDim.x + cluster id].
extern "C" __global__ void neighbour_shared(Slice<unsigned int> out)
{
    __shared__ unsigned int vals[64];
    __shared__ unsigned int counter;
    cg::cluster_group cluster = cg::this_cluster();
    unsigned int rank = cluster.block_rank();
    unsigned int t = threadIdx.x;
    if (t == 0) {
        counter = 0;
    }
    if (t < 64) {
        vals[t] = 1000 * rank + t;
    }
    cluster.sync();
    if (t == 0) {
        atomicAdd(cluster.map_shared_rank(&counter, 0), 1u);
    }
    unsigned int next = (rank + 1) % cluster.num_blocks();
    unsigned int *theirs = cluster.map_shared_rank(vals, next);
    unsigned int v = t < 64 ? theirs[t] : 0;
    cluster.sync();
    unsigned int b = blockIdx.x;
    if (t < 64 && 64ull * b + t < out.len) {
        out.ptr[64 * b + t] = v;
    }
    unsigned int slot = 64 * gridDim.x + b / cluster.num_blocks();
    if (t == 0 && rank == 0 && slot < out.len) {
        out.ptr[slot] = counter;
    }
}
