// oxicuda.cuh: the kernel side of oxicuda-driver's typed launch (`oxicuda_driver::launch`).
//
// Include it in CUDA C++ kernels launched from Rust with `Function::launch`:
//
//     #include "oxicuda.cuh"   // nvcc -I <this folder>, or NVRTC's -I option
//
// How each Rust parameter kind reaches the kernel:
//
//   Rust kind             CUDA C++ parameter        size, alignment
//   In<T>                 oxicuda::Slice<const T>   16, 8  (device memory the kernel reads)
//   Out<T>                oxicuda::Slice<T>         16, 8  (device memory it writes, may read)
//   a DeviceCopy value    T, by value               T's    (numbers, #[repr(C)] structs
//                                                            of the same layout)
//   TensorMapIn<L>/Out<L> const __grid_constant__ CUtensorMap
//                                                   128, 64
//
// A slice is the device address *and* the number of elements behind it, both filled
// by the launcher from the buffer or view passed: safe Rust code cannot pick a length
// the memory does not have. A kernel that stays below `len` for every slice it is
// given keeps the contract its Rust declaration (`Module::function`) states for every
// argument tuple the signature accepts; a kernel that takes its bounds from a free
// number (`n`) cannot. Index with 64-bit integers: `len` may exceed 2^32.
//
// The plain pointer kinds, for kernels written for other bindings (where the crate's
// version has them; the `launch` docs list the kinds): `Ptr<T>` arrives as a
// `const T *` and `PtrMut<T>` as a `T *` (8 bytes each, no length), and `Len<I>` as
// the plain integer `I` that carries their element count, a separate parameter.
//
// Keep the names unmangled: declare each kernel `extern "C"`, and look it up from Rust
// by that name.
#pragma once

namespace oxicuda {

// The layout of In<T> (`Slice<const T>`) and Out<T> (`Slice<T>`): 16 bytes, aligned
// to 8; `ptr` at offset 0, `len` (elements, not bytes) at offset 8.
template <typename T> struct Slice {
    T *ptr;
    unsigned long long len;

    // Whether element `i` is inside the slice.
    __device__ bool contains(unsigned long long i) const { return i < len; }
    __device__ T &operator[](unsigned long long i) const { return ptr[i]; }
};

// The thread's index in a 1-D grid, 64 bits wide.
__device__ inline unsigned long long global_index()
{
    return blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
}

} // namespace oxicuda

// Example (kernels/slices.cu has it with the struct spelled out):
//
//     #include "oxicuda.cuh"
//     using oxicuda::Slice;
//
//     // Rust: module.function::<(In<f32>, In<f32>, Out<f32>)>("vector_add")
//     extern "C" __global__ void vector_add(Slice<const float> a, Slice<const float> b,
//                                           Slice<float> c)
//     {
//         unsigned long long i = oxicuda::global_index();
//         if (c.contains(i) && a.contains(i) && b.contains(i)) c[i] = a[i] + b[i];
//     }
