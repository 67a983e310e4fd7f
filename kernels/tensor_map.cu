// A kernel that receives a tensor map the way CUDA C++ passes one — a
// `const __grid_constant__ CUtensorMap`, 128 bytes aligned to 64 — and copies the
// descriptor's words out, indexing it at run time (so NVRTC reads the parameter
// through its address). It uses no TMA instruction. Rust signature:
// (u32, TensorMapIn, Out<u64>). Compiled to tensor_map.ptx by scripts/gen_ptx.py.

// CUtensorMap as cuda.h declares it (NVRTC has no cuda.h).
struct alignas(64) CUtensorMap {
    unsigned long long opaque[16];
};

template <typename T> struct Slice {
    T *ptr;
    unsigned long long len;
};

// out[k] = word k of the map for k < 16 (and below out.len); out[16] = tag.
extern "C" __global__ void copy_grid_constant_map(unsigned int tag,
                                                  const __grid_constant__ CUtensorMap map,
                                                  Slice<unsigned long long> out)
{
    unsigned long long k = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (k < 16 && k < out.len) {
        out.ptr[k] = map.opaque[k];
    } else if (k == 16 && k < out.len) {
        out.ptr[k] = tag;
    }
}
