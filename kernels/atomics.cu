// Every atomic operation on global memory, from all threads of several blocks:
// slots[0..] are updated with atomicAdd/Sub/Max/Min/Exch/CAS/And/Or/Xor/Inc/Dec on
// int, unsigned, 64-bit, float and double, plus a CAS loop (float multiply).
extern "C" __global__ void atomics(int *ip, unsigned int *up, unsigned long long *lp, float *fp, double *dp)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(ip, t);
    atomicSub(ip + 1, 2);
    atomicMax(ip + 2, t % 1000 - 300);
    atomicMin(ip + 3, 500 - t);
    atomicExch(ip + 4, 42);
    atomicCAS(ip + 5, 0, t + 1);
    atomicAnd(up, ~(1u << (t & 31)) | 0x80000000u);
    atomicOr(up + 1, 1u << (t % 31));
    atomicXor(up + 2, 1u << (t & 7));
    atomicInc(up + 3, 9u);
    atomicDec(up + 4, 9u);
    atomicAdd(lp, 1ull << 33);
    atomicMax(lp + 1, (unsigned long long)t * 1000000007ull);
    atomicAdd(fp, 0.5f);
    atomicAdd(dp, 0.25);
    unsigned int *cell = (unsigned int *)(fp + 1);
    unsigned int old = *cell, assumed;
    do {
        assumed = old;
        old = atomicCAS(cell, assumed, __float_as_uint(__uint_as_float(assumed) * 1.0001f));
    } while (assumed != old);
}
