/* The zero-cost driver for the binding benchmarks (scripts/bench.sh builds it with
 * gcc): softcuda (libsoftcuda.so, linked as a dependency, so every other symbol and
 * cuGetProcAddress_v2 answer is softcuda's) with the calls the benchmarks time
 * answering CUDA_SUCCESS at once: launch, event record and query, stream
 * synchronize, and the four host<->device copies. It does no work: with it, a
 * benchmark's time is the binding's, not the driver's. Not a driver for anything else.
 *
 * Exported twice over: by name (cudarc dlsym()s `libcuda.so`), and through
 * cuGetProcAddress_v2 (oxicuda-driver resolves its whole table through it). */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long cuuint64_t;
typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t, int *);

#define ZERO(name, ...) CUresult name(__VA_ARGS__) { return 0; }
ZERO(cuLaunchKernel, void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
     unsigned by, unsigned bz, unsigned shared, void *stream, void **params, void **extra)
ZERO(cuEventRecord, void *event, void *stream)
ZERO(cuEventQuery, void *event)
ZERO(cuStreamSynchronize, void *stream)
ZERO(cuMemcpyHtoD_v2, unsigned long long dst, const void *src, size_t n)
ZERO(cuMemcpyDtoH_v2, void *dst, unsigned long long src, size_t n)
ZERO(cuMemcpyHtoDAsync_v2, unsigned long long dst, const void *src, size_t n, void *s)
ZERO(cuMemcpyDtoHAsync_v2, void *dst, unsigned long long src, size_t n, void *s)

static const struct { const char *name; void *fn; } ZEROS[] = {
    {"cuLaunchKernel", (void *)cuLaunchKernel},
    {"cuEventRecord", (void *)cuEventRecord},
    {"cuEventQuery", (void *)cuEventQuery},
    {"cuStreamSynchronize", (void *)cuStreamSynchronize},
    {"cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2},
    {"cuMemcpyDtoH", (void *)cuMemcpyDtoH_v2},
    {"cuMemcpyHtoDAsync", (void *)cuMemcpyHtoDAsync_v2},
    {"cuMemcpyDtoHAsync", (void *)cuMemcpyDtoHAsync_v2},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             int *status) {
    for (size_t i = 0; i < sizeof ZEROS / sizeof ZEROS[0]; i++) {
        if (symbol && strcmp(symbol, ZEROS[i].name) == 0) {
            *pfn = ZEROS[i].fn;
            if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
            return 0;
        }
    }
    /* softcuda's, from the dependency this library was linked with. */
    static get_proc_t real;
    if (!real) {
        void *lib = dlopen(SOFTCUDA_PATH, RTLD_NOW | RTLD_NOLOAD);
        real = lib ? (get_proc_t)dlsym(lib, "cuGetProcAddress_v2") : NULL;
        if (!real) return 999; /* CUDA_ERROR_UNKNOWN */
    }
    return real(symbol, pfn, version, flags, status);
}
