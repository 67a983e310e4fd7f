// CUDA math library functions (libdevice code in the PTX: range reductions, table
// lookups, bit manipulation of floats), 8 f32 and 8 f64 results per input.
extern "C" __global__ void math_f32(const float *x, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float v = x[i];
    float *o = out + 8 * i;
    o[0] = expf(v);
    o[1] = logf(fabsf(v) + 1e-3f);
    o[2] = powf(fabsf(v), 1.7f);
    o[3] = tanhf(v);
    o[4] = cosf(v);
    o[5] = atan2f(v, 0.3f);
    o[6] = erff(v);
    o[7] = cbrtf(v);
}

extern "C" __global__ void math_f64(const double *x, double *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    double v = x[i];
    double *o = out + 8 * i;
    o[0] = exp(v);
    o[1] = log(fabs(v) + 1e-3);
    o[2] = pow(fabs(v), 1.7);
    o[3] = tanh(v);
    o[4] = sin(v);
    o[5] = cos(v);
    o[6] = atan2(v, 0.3);
    o[7] = fmod(v, 0.7);
}
