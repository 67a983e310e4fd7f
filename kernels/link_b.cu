// The second half of a linked program (tests/link.rs): the device function and the
// variable kernels/link_a.cu declares extern. Compiled with -rdc by
// scripts/gen_ptx.py (a non-inline __device__ function is kept and exported).
extern "C" __device__ float scale_factor = 3.0f;

extern "C" __device__ float scaled(float x)
{
    return x * scale_factor + 1.0f;
}
