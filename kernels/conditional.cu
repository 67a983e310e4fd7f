// Kernels for conditional graph nodes (softcuda/tests/graph.rs). Compiled to
// conditional.ptx by scripts/gen_ptx.py. cudaGraphSetConditional is a device-runtime
// builtin: NVRTC emits a call to the extern function `cudaGraphSetConditional`, which
// a real driver resolves from cudadevrt (the module must be linked with it).
template <typename T> struct Slice {
    T *ptr;
    unsigned long long len;
};

// Decrements counter[0] (when it is not already 0) and sets the condition to
// counter[0] != 0: a WHILE node whose body is this kernel runs it counter[0] times.
extern "C" __global__ void countdown(cudaGraphConditionalHandle h, Slice<unsigned> counter)
{
    if (threadIdx.x == 0 && blockIdx.x == 0 && counter.len > 0) {
        unsigned v = counter.ptr[0];
        if (v != 0) {
            v -= 1;
            counter.ptr[0] = v;
        }
        cudaGraphSetConditional(h, v != 0);
    }
}

// Sets the condition to `value`.
extern "C" __global__ void set_condition(cudaGraphConditionalHandle h, unsigned value)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        cudaGraphSetConditional(h, value);
    }
}

// counter[0] += 1: a body that records how often it ran.
extern "C" __global__ void bump(Slice<unsigned> counter)
{
    if (threadIdx.x == 0 && blockIdx.x == 0 && counter.len > 0) {
        counter.ptr[0] += 1;
    }
}
