// 256-bin byte histogram: per-block bins in shared memory (shared atomics), then
// one global atomicAdd per non-empty bin.
extern "C" __global__ void histogram(const unsigned char *data, unsigned int n, unsigned int *bins)
{
    __shared__ unsigned int local[256];
    for (unsigned int b = threadIdx.x; b < 256; b += blockDim.x) {
        local[b] = 0;
    }
    __syncthreads();
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    for (unsigned int b = threadIdx.x; b < 256; b += blockDim.x) {
        if (local[b] != 0) {
            atomicAdd(&bins[b], local[b]);
        }
    }
}
