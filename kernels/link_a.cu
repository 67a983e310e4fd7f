// The first half of a linked program (tests/link.rs): kernels calling a device
// function and reading a variable that kernels/link_b.cu defines. Compiled with
// relocatable device code (-rdc) by scripts/gen_ptx.py, so the references stay
// `.extern` in link_a.ptx and are resolved only when the two are linked (cuLink*).
template <typename T> struct Slice {
    T *ptr;
    unsigned long long len;
};

extern "C" __device__ float scaled(float x);
extern "C" __device__ float scale_factor;

// Rust: (In<f32>, Out<f32>). y[i] = scaled(x[i]) for every i both hold.
extern "C" __global__ void scale(Slice<const float> x, Slice<float> y)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < y.len && i < x.len) {
        y.ptr[i] = scaled(x.ptr[i]);
    }
}

// Rust: (Out<f32>,). y[0] = scale_factor, read from the other unit's variable.
extern "C" __global__ void read_factor(Slice<float> y)
{
    if (threadIdx.x == 0 && blockIdx.x == 0 && y.len > 0) {
        y.ptr[0] = scale_factor;
    }
}
