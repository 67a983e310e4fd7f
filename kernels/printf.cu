// Device printf: each thread prints a line; printf's return value (the number of
// arguments) is stored so the test can check the call happened.
extern "C" __global__ void hello(int *ret, float x)
{
    ret[threadIdx.x] = printf("thread %d of %d: x = %.2f, %s\n", threadIdx.x, blockDim.x, x,
                              threadIdx.x % 2 ? "odd" : "even");
}
