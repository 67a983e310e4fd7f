// Block-level tree reduction in shared memory: partial[blockIdx.x] = sum of the
// block's slice of in[0..n). Needs blockDim.x == 256 (a power of two).
#define BLOCK 256

extern "C" __global__ void reduce_sum(const float *in, float *partial, unsigned int n)
{
    __shared__ float s[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            s[tid] += s[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = s[0];
    }
}
