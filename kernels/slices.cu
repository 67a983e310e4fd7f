// Kernels for the safe layer (`oxicuda_driver::launch`): every buffer parameter is a
// Slice — the device address and the number of elements behind it, both filled by
// the launcher from the view passed — so each kernel stays inside the memory it was
// given for every argument tuple its Rust signature accepts. Compiled to slices.ptx
// by scripts/gen_ptx.py.
template <typename T> struct Slice {
    T *ptr;
    unsigned long long len;
};

__device__ unsigned long long global_index()
{
    return blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
}

// Rust: (In<f32>, In<f32>, Out<f32>). c[i] = a[i] + b[i] for every i all three hold.
extern "C" __global__ void vector_add(Slice<const float> a, Slice<const float> b, Slice<float> c)
{
    unsigned long long i = global_index();
    if (i < c.len && i < a.len && i < b.len) {
        c.ptr[i] = a.ptr[i] + b.ptr[i];
    }
}

// Rust: (f32, In<f32>, Out<f32>). y[i] = a * x[i] + y[i].
extern "C" __global__ void saxpy(float a, Slice<const float> x, Slice<float> y)
{
    unsigned long long i = global_index();
    if (i < y.len && i < x.len) {
        y.ptr[i] = a * x.ptr[i] + y.ptr[i];
    }
}

// A struct passed by value. Rust: (Affine, In<f32>, Out<f32>).
struct Affine {
    float scale;
    float offset;
};

extern "C" __global__ void affine(Affine p, Slice<const float> x, Slice<float> y)
{
    unsigned long long i = global_index();
    if (i < y.len && i < x.len) {
        y.ptr[i] = p.scale * x.ptr[i] + p.offset;
    }
}

// A 2-D kernel whose row width is a free value. Rust: (Out<u32>, u32).
// m[row * width + col] = row * 1000 + col, for the elements the slice holds: a width
// that does not match the buffer's cannot make it write past the slice.
extern "C" __global__ void rows(Slice<unsigned> m, unsigned width)
{
    unsigned long long col = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long row = blockIdx.y * (unsigned long long)blockDim.y + threadIdx.y;
    if (col >= width) {
        return;
    }
    unsigned long long i = row * width + col;
    if (i < m.len) {
        m.ptr[i] = (unsigned)(row * 1000 + col);
    }
}
