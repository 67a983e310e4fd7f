// Integer and bit operations, one output row of 16 values per input pair
// (a[i], b[i]); the test recomputes each on the CPU.
extern "C" __global__ void int_ops(const int *a, const int *b, int *out, long long *out64, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int x = a[i];
    int y = b[i];
    unsigned int ux = (unsigned int)x;
    unsigned int uy = (unsigned int)y;
    int *o = out + 16 * i;
    o[0] = y != 0 ? x / y : -1;
    o[1] = y != 0 ? x % y : -1;
    o[2] = uy != 0 ? (int)(ux / uy) : -1;
    o[3] = uy != 0 ? (int)(ux % uy) : -1;
    o[4] = min(x, y) ^ max(x, y);
    o[5] = (int)min(ux, uy) + (int)max(ux, uy);
    o[6] = __popc(ux) + 100 * __clz(x);
    o[7] = (int)__brev(ux);
    o[8] = x >> (y & 31);
    o[9] = (int)(ux >> (uy & 31)) ^ (x << (y & 15));
    o[10] = __mulhi(x, y);
    o[11] = (int)__umulhi(ux, uy);
    o[12] = abs(x) - (~y);
    o[13] = (int)((ux >> 3) & 0x1f) | (int)(((ux >> 7) & 0xff) << 8);
    o[14] = __ffs(x) + 64 * __popcll((unsigned long long)x * 0x9e3779b97f4a7c15ull);
    o[15] = (int)__byte_perm(ux, uy, 0x5140);
    long long wx = (long long)x * (long long)y;
    out64[2 * i] = wx + ((long long)x << 32);
    out64[2 * i + 1] = y != 0 ? ((long long)x * 1000003LL) / (long long)y : 0;
}
