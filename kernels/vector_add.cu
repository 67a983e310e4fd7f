// c[i] = a[i] + b[i] for i < n. Compiled to vector_add.ptx by scripts/gen_ptx.py.
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, unsigned int n)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
