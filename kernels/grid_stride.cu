// Grid-stride loop: y[i] = x[i] * x[i] + 1 for every i < n, whatever the grid size.
extern "C" __global__ void square_plus_one(const float *x, float *y, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x) {
        y[i] = x[i] * x[i] + 1.0f;
    }
}
