// Module-scope variables: a __constant__ table with an initializer and __device__
// counters. eval_poly: y[i] = c0 + c1 x + c2 x^2 + c3 x^3 from the constant table,
// and counts the evaluated points in `evaluated` (one atomicAdd per thread).
__constant__ float coeffs[4] = {1.0f, -2.0f, 0.5f, 0.25f};
__device__ unsigned int evaluated;
__device__ int offsets[3] = {10, 20, 30};

extern "C" __global__ void eval_poly(const float *x, float *y, int *shifted, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = coeffs[0] + v * (coeffs[1] + v * (coeffs[2] + v * coeffs[3]));
        shifted[i] = i + offsets[i % 3];
        atomicAdd(&evaluated, 1u);
    }
}
