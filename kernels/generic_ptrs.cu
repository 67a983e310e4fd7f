// Generic addressing: __noinline__ functions take plain pointers, called with
// pointers to shared, local and global memory (so the PTX uses cvta and generic
// ld/st/atom). out[i] = sum of the block's 64 inputs (read three ways) plus a
// per-thread local-array sum.
__device__ __noinline__ int sum_n(const int *p, int n)
{
    int s = 0;
    for (int i = 0; i < n; ++i) {
        s += p[i];
    }
    return s;
}

__device__ __noinline__ void add_to(int *p, int v)
{
    atomicAdd(p, v);
}

extern "C" __global__ void generic_ptrs(const int *in, int *out)
{
    __shared__ int sh[64];
    __shared__ int total;
    int loc[8];
    int t = threadIdx.x;
    const int *block_in = in + blockIdx.x * 64;
    if (t == 0) {
        total = 0;
    }
    sh[t] = block_in[t];
    for (int k = 0; k < 8; ++k) {
        loc[k] = sh[t] * k;
    }
    __syncthreads();
    add_to(&total, sh[t]);
    __syncthreads();
    out[blockIdx.x * 64 + t] = sum_n(sh, 64) + total + sum_n(block_in, 64) + sum_n(loc, 8 - (t & 3));
}
