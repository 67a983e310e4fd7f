/* A plain C program written against NVIDIA's cuda.h, linked with libsoftcuda.so
 * instead of libcuda.so. It runs vector_add end to end and checks the driver's
 * contract on the way. Usage: driver_api <vector_add.ptx> */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int softcuda_live_count(const char *kind);

static int failures = 0;
#define CHECK(call)                                                             \
    do {                                                                        \
        CUresult r_ = (call);                                                   \
        if (r_ != CUDA_SUCCESS) {                                               \
            const char *n_ = "?";                                               \
            cuGetErrorName(r_, &n_);                                            \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call, n_); \
            exit(1);                                                            \
        }                                                                       \
    } while (0)
#define EXPECT(cond)                                                            \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                         \
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
    if (argc != 2) { fprintf(stderr, "usage: %s vector_add.ptx\n", argv[0]); return 2; }
    int version = 0, count = 0, major = 0, minor = 0;
    CHECK(cuDriverGetVersion(&version));
    EXPECT(version >= 12000);
    EXPECT(cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuInit(0));
    CHECK(cuDeviceGetCount(&count));
    EXPECT(count >= 1);
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    char name[128];
    CHECK(cuDeviceGetName(name, sizeof name, dev));
    size_t total = 0;
    CHECK(cuDeviceTotalMem(&total, dev));
    printf("%s: sm_%d%d, %zu MiB, driver %d\n", name, major, minor, total >> 20, version);

    CUcontext ctx;
    CHECK(cuCtxCreate(&ctx, 0, dev));
    CUmodule mod;
    char *ptx = read_file(argv[1]);
    char err_log[4096] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {err_log, (void *)(size_t)sizeof err_log};
    CHECK(cuModuleLoadDataEx(&mod, ptx, 2, opts, vals));
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, mod, "vector_add"));

    enum { N = 100000 };
    float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float)), *c = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) { a[i] = (float)i; b[i] = 2.0f * (float)i; }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, N * sizeof(float)));
    CHECK(cuMemAlloc(&db, N * sizeof(float)));
    CHECK(cuMemAlloc(&dc, N * sizeof(float)));
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent start, stop;
    CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CHECK(cuMemcpyHtoDAsync(da, a, N * sizeof(float), s));
    CHECK(cuMemcpyHtoDAsync(db, b, N * sizeof(float), s));
    unsigned int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CHECK(cuEventRecord(start, s));
    CHECK(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
    CHECK(cuEventRecord(stop, s));
    CHECK(cuMemcpyDtoHAsync(c, dc, N * sizeof(float), s));
    CHECK(cuStreamSynchronize(s));
    float ms = -1.0f;
    CHECK(cuEventElapsedTime(&ms, start, stop));
    EXPECT(ms >= 0.0f);
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += c[i] != a[i] + b[i];
    EXPECT(wrong == 0);
    printf("vector_add: %d elements, %d wrong, kernel %.3f ms\n", N, wrong, ms);

    const char *msg = NULL;
    CHECK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &msg));
    EXPECT(strcmp(msg, "invalid argument") == 0);
    EXPECT(cuMemFree(da + 4) == CUDA_ERROR_INVALID_VALUE);
    /* Graphs link and work; what softcuda does not implement links, and says so. */
    CUgraph graph;
    CHECK(cuGraphCreate(&graph, 0));
    EXPECT(softcuda_live_count("graphs") == 1);
    CHECK(cuGraphDestroy(graph));
    CUmemoryPool pool;
    CHECK(cuDeviceGetDefaultMemPool(&pool, 0));
    EXPECT(cuMulticastCreate(NULL, NULL) == CUDA_ERROR_NOT_SUPPORTED);

    CHECK(cuEventDestroy(start));
    CHECK(cuEventDestroy(stop));
    CHECK(cuStreamDestroy(s));
    CHECK(cuMemFree(da));
    CHECK(cuMemFree(db));
    CHECK(cuMemFree(dc));
    CHECK(cuModuleUnload(mod));
    CHECK(cuCtxDestroy(ctx));
    EXPECT(softcuda_live_count("contexts") == 0);
    EXPECT(softcuda_live_count("allocations") == 0);
    EXPECT(softcuda_live_count("streams") == 0);
    free(a); free(b); free(c); free(ptx);
    if (failures) { fprintf(stderr, "%d check(s) failed\n", failures); return 1; }
    printf("C program: all checks passed\n");
    return 0;
}
