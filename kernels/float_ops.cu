// Float conversions and math, eight outputs per input; the test recomputes each
// on the CPU (exactly where the operation is correctly rounded, with a tolerance
// for the approximate functions).
extern "C" __global__ void float_ops(const float *x, const double *d, float *out, int *iout, double *dout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float v = x[i];
    double w = d[i];
    float *o = out + 8 * i;
    int *io = iout + 8 * i;
    double *dd = dout + 4 * i;
    o[0] = sqrtf(fabsf(v));
    o[1] = v / (v + 3.5f);
    o[2] = fminf(v, 1.5f) + fmaxf(v, -2.0f);
    o[3] = __expf(v * 0.01f);
    o[4] = sinf(v);
    o[5] = logf(fabsf(v) + 1.0f);
    o[6] = (float)w;
    o[7] = rsqrtf(fabsf(v) + 1.0f);
    io[0] = (int)v;
    io[1] = __float2int_rn(v);
    io[2] = (int)floorf(v);
    io[3] = (int)ceilf(v);
    io[4] = (int)(unsigned int)fabsf(v);
    io[5] = v < 0.5f;
    io[6] = isnan(v / v) ? 1 : 0;
    io[7] = (int)(long long)(w * 1e3);
    dd[0] = sqrt(fabs(w));
    dd[1] = w / 7.0;
    dd[2] = (double)v * w;
    dd[3] = (double)(i - 7) + (double)(unsigned int)i;
}
