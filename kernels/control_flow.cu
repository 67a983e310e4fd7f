// Control flow: a recursive __device__ function (a real call stack in the PTX) and
// a dense switch.
__device__ int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

extern "C" __global__ void recursion(int *out)
{
    out[threadIdx.x] = fib(threadIdx.x % 16);
}

extern "C" __global__ void switchy(const int *in, int *out)
{
    int v = in[threadIdx.x];
    int r;
    switch (v & 15) {
    case 0: r = 5; break;
    case 1: r = v * 3; break;
    case 2: r = v ^ 7; break;
    case 3: r = -v; break;
    case 4: r = v << 2; break;
    case 5: r = v >> 1; break;
    case 6: r = 99; break;
    case 7: r = v % 5; break;
    case 8: r = 1; break;
    case 9: r = 2; break;
    case 10: r = 3; break;
    default: r = 4;
    }
    out[threadIdx.x] = r;
}
