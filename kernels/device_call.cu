// Calls to __noinline__ device functions (a .func and call in the PTX): a Horner
// polynomial with a local array indexed at run time, and a function returning a
// 64-bit value.
__device__ __noinline__ float horner(float x, int degree, const float *coeffs)
{
    float c[8];
    for (int k = 0; k < 8; ++k) {
        c[k] = coeffs[k];
    }
    float acc = 0.0f;
    for (int k = degree; k >= 0; --k) {
        acc = acc * x + c[k & 7];
    }
    return acc;
}

__device__ __noinline__ long long mix(long long a, int b)
{
    return a * 3 + b;
}

extern "C" __global__ void poly(const float *x, const float *coeffs, float *y, long long *z, int degree, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = horner(x[i], degree, coeffs);
        z[i] = mix((long long)i << 33, i);
    }
}
