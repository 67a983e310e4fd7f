// c[i] = a[i] + b[i] for i < n, as existing CUDA code writes it: C++ linkage, so its
// symbol is the mangled `_Z9vectorAddPKfS0_Pfi` (see its `.entry` in the PTX), and a
// signed count. vector_add_mangled.ptx is written by hand after what NVRTC emits for
// vector_add.cu (no NVRTC here); regenerate it with scripts/gen_ptx.py where there is.
__global__ void vectorAdd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
