// Dynamic shared memory: each block reverses its slice of `data` in place through
// an extern __shared__ buffer of blockDim.x ints (size set at launch).
extern "C" __global__ void reverse_block(int *data, int n)
{
    extern __shared__ int buf[];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    int len = min((int)blockDim.x, n - base);
    if (t < len) {
        buf[t] = data[base + t];
    }
    __syncthreads();
    if (t < len) {
        data[base + t] = buf[len - 1 - t];
    }
}
