/* A C program with a missing event between two streams, for softcuda's sanitizer
 * through libsoftcuda.so (SOFTCUDA_SANITIZE=all, no code change): vector_add writes
 * c on one non-blocking stream, and a copy on another reads c back with nothing
 * ordering the two (on a GPU the copy may read c before the kernel wrote it). With
 * "clean", an event recorded after the kernel and waited for before the copy: the
 * twin that must report nothing. Prints the first wrong element (or -1).
 * Usage: sanitize_streams <vector_add.ptx> [clean] */
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
    CUstream s1, s2;
    CUevent done;
    CUdeviceptr a, b, c;
    float *host;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&ctx, 0, dev));
    char *ptx = read_file(argv[1]);
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&f, mod, "vector_add"));
    CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    size_t bytes = N * sizeof(float);
    CHECK(cuMemAlloc(&a, bytes));
    CHECK(cuMemAlloc(&b, bytes));
    CHECK(cuMemAlloc(&c, bytes));
    CHECK(cuMemAllocHost((void **)&host, bytes));
    for (int i = 0; i < N; i++) host[i] = (float)i;
    CHECK(cuMemcpyHtoD(a, host, bytes));
    CHECK(cuMemcpyHtoD(b, host, bytes));
    unsigned int n = N;
    void *args[] = {&a, &b, &c, &n};
    CHECK(cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, s1, args, NULL));
    if (clean) {
        CHECK(cuEventRecord(done, s1));
        CHECK(cuStreamWaitEvent(s2, done, 0));
    }
    CHECK(cuMemcpyDtoHAsync(host, c, bytes, s2)); /* the bug: nothing orders it */
    CHECK(cuStreamSynchronize(s2));
    CHECK(cuCtxSynchronize());
    int wrong = -1;
    for (int i = 0; i < N && wrong < 0; i++)
        if (host[i] != 2.0f * (float)i) wrong = i;
    printf("first wrong: %d\n", wrong);
    cuMemFreeHost(host);
    cuCtxDestroy(ctx);
    free(ptx);
    return 0;
}
