/* A C program with an off-by-one bug, for softcuda's sanitizer through
 * libsoftcuda.so (SOFTCUDA_SANITIZE=memcheck, no code change): vector_add over
 * buffers of N - 1 floats with n = N reads and writes one element past each end.
 * With "clean", n = N - 1: the twin that must report nothing. Prints the result of
 * the launch and its synchronisation.
 * Usage: sanitize_oob <vector_add.ptx> [clean] */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256
#define CHECK(call)                                                             \
    do {                                                                        \
        CUresult r_ = (call);                                                   \
        if (r_ != CUDA_SUCCESS) {                                               \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, r_); \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    if (fread(buf, 1, n, f) != (size_t)n) { perror("read"); exit(1); }
    buf[n] = 0;
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s vector_add.ptx [clean]\n", argv[0]); return 2; }
    int clean = argc > 2 && strcmp(argv[2], "clean") == 0;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUdeviceptr a, b, c;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&ctx, 0, dev));
    char *ptx = read_file(argv[1]);
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&f, mod, "vector_add"));
    size_t bytes = (N - 1) * sizeof(float);
    CHECK(cuMemAlloc(&a, bytes));
    CHECK(cuMemAlloc(&b, bytes));
    CHECK(cuMemAlloc(&c, bytes));
    CHECK(cuMemsetD32(a, 0, N - 1));
    CHECK(cuMemsetD32(b, 0, N - 1));
    unsigned int n = clean ? N - 1 : N; /* the bug: N */
    void *args[] = {&a, &b, &c, &n};
    /* The fault comes back from the launch (softcuda runs the legacy stream's work
     * at once) or from the synchronisation (a GPU): the first error of the two. */
    CUresult r = cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, NULL, args, NULL);
    if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
    printf("result: %d\n", (int)r);
    cuCtxDestroy(ctx); /* frees a, b, c: the context is gone either way */
    free(ptx);
    return 0;
}
