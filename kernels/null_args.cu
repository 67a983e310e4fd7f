// Kernels that do nothing with 4 and 16 arguments, and with 4 pointers and a count: the launch benchmarks
// (benches/vs_cudarc.rs, benches/callgrind.rs) measure the binding's cost of passing them.
extern "C" __global__ void null4(unsigned a, unsigned b, unsigned c, unsigned d) {}
extern "C" __global__ void null16(unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                  unsigned a4, unsigned a5, unsigned a6, unsigned a7,
                                  unsigned a8, unsigned a9, unsigned a10, unsigned a11,
                                  unsigned a12, unsigned a13, unsigned a14, unsigned a15) {}
extern "C" __global__ void null_ptr4(const unsigned *a, const unsigned *b, unsigned *c,
                                     unsigned *d, unsigned n) {}
