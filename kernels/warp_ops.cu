// Warp collectives other than the reduction: shuffles (up, xor, idx with a width),
// votes and ballots, __syncthreads_count, and an inclusive warp scan.
extern "C" __global__ void warp_ops(const int *in, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = i < n ? in[i] : 0;
    int scan = v;
    for (int d = 1; d < 32; d *= 2) {
        int t = __shfl_up_sync(0xffffffffu, scan, d);
        if (lane >= d) {
            scan += t;
        }
    }
    int x = __shfl_xor_sync(0xffffffffu, v, 5);
    int seg = __shfl_sync(0xffffffffu, v, 3, 8);
    unsigned int ballot = __ballot_sync(0xffffffffu, v > 0);
    int all = __all_sync(0xffffffffu, v > -1000);
    int any = __any_sync(0xffffffffu, v == 7);
    int count = __syncthreads_count(v & 1);
    if (i < n) {
        int *o = out + 8 * i;
        o[0] = scan;
        o[1] = x;
        o[2] = seg;
        o[3] = (int)ballot;
        o[4] = all;
        o[5] = any;
        o[6] = count;
        o[7] = (int)__activemask();
    }
}
