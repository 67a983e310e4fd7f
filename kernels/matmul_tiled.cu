// C (m x n) = A (m x k) * B (k x n), row-major, with 16x16 shared-memory tiles; any
// sizes (partial tiles are padded with zeros).
#define T 16

extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C, int m, int n, int k)
{
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int row = blockIdx.y * T + threadIdx.y;
    int col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (k + T - 1) / T; ++t) {
        int ac = t * T + threadIdx.x;
        int br = t * T + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < m && ac < k) ? A[row * k + ac] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (br < k && col < n) ? B[br * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < T; ++j) {
            acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        C[row * n + col] = acc;
    }
}
