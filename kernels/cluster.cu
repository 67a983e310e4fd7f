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
