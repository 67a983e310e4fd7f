// y[i] = a * x[i] + y[i] in double precision, for i < n.
extern "C" __global__ void daxpy(double a, const double *x, double *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
