// The cuBLAS float baseline of Cobrnic et al. 2020 (see hevc_cublas.h for the method).
//
// cuBLAS is loaded at run time (dlopen), not linked: vidkern-bench then starts on
// machines whose loader path lacks libcublas (the baseline is reported unavailable), and
// builds need no cuBLAS at all. The five entry points used are declared here with the
// C ABI of cublas_v2.h (handle = pointer, status / operation / math mode = int enums),
// checked against the header where it is installed.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hevc_cublas.h"

extern "C" {
#include "hevc.h" // the standard's matrices and quantiser scales (src/hevc.c)
}

/* ---- the cuBLAS entry points (cublas_v2.h ABI) ---- */
enum { BL_SUCCESS = 0, BL_ALLOC_FAILED = 3, BL_OP_N = 0, BL_OP_T = 1, BL_DEFAULT_MATH = 0 };
#if defined(__has_include)
#if __has_include(<cublas_v2.h>)
#include <cublas_v2.h>
static_assert((int)CUBLAS_STATUS_SUCCESS == BL_SUCCESS &&
                  (int)CUBLAS_STATUS_ALLOC_FAILED == BL_ALLOC_FAILED &&
                  (int)CUBLAS_OP_N == BL_OP_N && (int)CUBLAS_OP_T == BL_OP_T &&
                  (int)CUBLAS_DEFAULT_MATH == BL_DEFAULT_MATH &&
                  sizeof(cublasStatus_t) == sizeof(int) &&
                  sizeof(cublasOperation_t) == sizeof(int) &&
                  sizeof(cublasMath_t) == sizeof(int),
              "cuBLAS ABI constants");
#endif
#endif
typedef int (*bl_create_fn)(void **handle);
typedef int (*bl_destroy_fn)(void *handle);
typedef int (*bl_set_stream_fn)(void *handle, cudaStream_t s);
typedef int (*bl_set_math_fn)(void *handle, int mode);
typedef int (*bl_sgemm_sb_fn)(void *handle, int transa, int transb, int m, int n, int k,
                              const float *alpha, const float *a, int lda, long long stride_a,
                              const float *b, int ldb, long long stride_b, const float *beta,
                              float *c, int ldc, long long stride_c, int batch);

struct BlApi {
    void *lib;
    bl_create_fn create;
    bl_destroy_fn destroy;
    bl_set_stream_fn set_stream;
    bl_set_math_fn set_math;
    bl_sgemm_sb_fn sgemm_sb;
};

/* $VIDK_CUBLAS_LIB, else the loader's search for the usual names. */
static int bl_load(BlApi *a, char *err, size_t errlen);

#define MAX_GEMM_BATCH 65535 /* grid limit of batched GEMM kernels (z dimension) */
#define EW_THREADS     256

struct HcbRun {
    int size;       /* list */
    int dst;        /* 1: DST-VII matrix */
    uint32_t first; /* first TB of the list */
    uint32_t count;
};

struct HcbCtx {
    int device, sms;
    BlApi api;
    void *blas; /* cublasHandle_t */
    cudaStream_t stream;
    cudaEvent_t ev[4];
    float *d_mat;     /* DCT 4, 8, 16, 32 then DST 4, row-major */
    float *d_x, *d_t; /* samples: residuals -> levels; intermediate */
    VidkHevcTb *d_tb;
    float *h_x, *h_y; /* pinned */
    VidkHevcTb *h_tb;
    size_t cap_samples, cap_tbs;
    /* staged frame */
    int bitdepth;
    uint32_t count[VIDK_HEVC_TB_SIZES];
    size_t sample_off[VIDK_HEVC_TB_SIZES]; /* float offset of each list */
    size_t tb_off[VIDK_HEVC_TB_SIZES];
    size_t samples, tbs;
    HcbRun *runs;
    int nruns, cap_runs;
    int staged;
};

static const size_t mat_off[5] = {0, 16, 16 + 64, 16 + 64 + 256, 16 + 64 + 256 + 1024};

__constant__ int c_qscale[6];

static void msg(char *err, size_t n, const char *fmt, ...) {
    if (!err || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

#define CU(expr)                                                                               \
    do {                                                                                       \
        const cudaError_t e_ = (expr);                                                         \
        if (e_ != cudaSuccess) {                                                               \
            msg(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #expr,                       \
                cudaGetErrorString(e_));                                                       \
            (void)cudaGetLastError();                                                          \
            ret = e_ == cudaErrorMemoryAllocation ? VIDK_ERR(ENOMEM)                           \
                  : (e_ == cudaErrorNoDevice || e_ == cudaErrorInsufficientDriver)             \
                      ? VIDK_ERR_NODEV                                                         \
                      : VIDK_ERR(EIO);                                                         \
            goto cleanup;                                                                      \
        }                                                                                      \
    } while (0)

#define BL(expr)                                                                               \
    do {                                                                                       \
        const int s_ = (expr);                                                                 \
        if (s_ != BL_SUCCESS) {                                                                \
            msg(err, errlen, "%s:%d: %s: cuBLAS status %d", __FILE__, __LINE__, #expr,         \
                (int)s_);                                                                      \
            ret = s_ == BL_ALLOC_FAILED ? VIDK_ERR(ENOMEM) : VIDK_ERR(EIO);                    \
            goto cleanup;                                                                      \
        }                                                                                      \
    } while (0)

/* ------------------------------------------------------------------ kernels */

/* The paper's rounding kernel: floor(x + 0.5). */
__global__ void round_kernel(float *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = floorf(x[i] + 0.5f);
}

/* Quantisation in float (HM's rule, without RDOQ): per-TB qP and slice type. */
__global__ void quant_kernel(float *y, const VidkHevcTb *tb, size_t n, int log2n, int bd) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const VidkHevcTb t = tb[i >> (2 * log2n)];
        const int qbits = 14 + t.qp / 6 + (15 - bd - log2n);
        const float offset = ldexpf((t.flags & VIDK_HEVC_TB_ISLICE) ? 171.f : 85.f, qbits - 9);
        const float c = y[i];
        const float l =
            floorf((fabsf(c) * (float)c_qscale[t.qp % 6] + offset) * ldexpf(1.f, -qbits));
        y[i] = fminf(fmaxf(c < 0.f ? -l : l, -32768.f), 32767.f);
    }
}

static int ew_grid(const HcbCtx *c, size_t n) {
    const size_t want = (n + EW_THREADS - 1) / EW_THREADS, cap = (size_t)c->sms * 32;
    return (int)(want < cap ? (want ? want : 1) : cap);
}

/* ------------------------------------------------------------------ cuBLAS loading */

static int bl_load(BlApi *a, char *err, size_t errlen) {
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                        "/usr/local/cuda/lib64/libcublas.so"};
    const char *env = getenv("VIDK_CUBLAS_LIB");
    memset(a, 0, sizeof(*a));
    if (env && *env) {
        a->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !a->lib; i++)
            a->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!a->lib) {
        msg(err, errlen, "cannot load cuBLAS (%s); set VIDK_CUBLAS_LIB=/path/to/libcublas.so",
            env && *env ? env : "libcublas.so.13 / .12 / .so");
        return VIDK_ERR(ENOENT);
    }
    a->create = (bl_create_fn)dlsym(a->lib, "cublasCreate_v2");
    a->destroy = (bl_destroy_fn)dlsym(a->lib, "cublasDestroy_v2");
    a->set_stream = (bl_set_stream_fn)dlsym(a->lib, "cublasSetStream_v2");
    a->set_math = (bl_set_math_fn)dlsym(a->lib, "cublasSetMathMode");
    a->sgemm_sb = (bl_sgemm_sb_fn)dlsym(a->lib, "cublasSgemmStridedBatched");
    if (!a->create || !a->destroy || !a->set_stream || !a->set_math || !a->sgemm_sb) {
        msg(err, errlen, "cuBLAS library without the expected entry points");
        dlclose(a->lib);
        memset(a, 0, sizeof(*a));
        return VIDK_ERR(ENOENT);
    }
    return 0;
}

/* ------------------------------------------------------------------ context */

extern "C" int hcb_open(HcbCtx **out, int device, char *err, size_t errlen) {
    int ret = 0, n = 0;
    float mat[16 + 64 + 256 + 1024 + 16];
    HcbCtx *c = (HcbCtx *)calloc(1, sizeof(HcbCtx));
    *out = NULL;
    if (!c) {
        msg(err, errlen, "out of memory");
        return VIDK_ERR(ENOMEM);
    }
    c->device = device;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n <= device || device < 0) {
        (void)cudaGetLastError();
        msg(err, errlen, "no CUDA device %d", device);
        free(c);
        return VIDK_ERR_NODEV;
    }
    CU(cudaSetDevice(device));
    CU(cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, device));
    CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    for (int i = 0; i < 4; i++)
        CU(cudaEventCreate(&c->ev[i]));
    if ((ret = bl_load(&c->api, err, errlen)) < 0) goto cleanup;
    BL(c->api.create(&c->blas));
    BL(c->api.set_stream(c->blas, c->stream));
    /* Plain FP32 (no TF32 tensor ops): the paper avoided reduced precision. */
    BL(c->api.set_math(c->blas, BL_DEFAULT_MATH));
    for (int s = 0; s < 4; s++) {
        const int nn = 4 << s;
        for (int k = 0; k < nn; k++)
            for (int j = 0; j < nn; j++)
                mat[mat_off[s] + (size_t)k * nn + j] = (float)vidk_hevc_t32[k << (3 - s)][j];
    }
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 4; j++)
            mat[mat_off[4] + (size_t)k * 4 + j] = (float)vidk_hevc_dst4[k][j];
    CU(cudaMalloc((void **)&c->d_mat, sizeof(mat)));
    CU(cudaMemcpy(c->d_mat, mat, sizeof(mat), cudaMemcpyHostToDevice));
    CU(cudaMemcpyToSymbol(c_qscale, vidk_hevc_qscale, sizeof(int) * 6));
    *out = c;
    return 0;
cleanup:
    hcb_close(&c);
    return ret;
}

static void free_frame_buffers(HcbCtx *c) {
    cudaFree(c->d_x);
    cudaFree(c->d_t);
    cudaFree(c->d_tb);
    cudaFreeHost(c->h_x);
    cudaFreeHost(c->h_y);
    cudaFreeHost(c->h_tb);
    c->d_x = c->d_t = NULL;
    c->d_tb = NULL;
    c->h_x = c->h_y = NULL;
    c->h_tb = NULL;
    c->cap_samples = c->cap_tbs = 0;
}

extern "C" void hcb_close(HcbCtx **pc) {
    if (!pc || !*pc) return;
    HcbCtx *c = *pc;
    cudaSetDevice(c->device);
    if (c->stream) cudaStreamSynchronize(c->stream);
    free_frame_buffers(c);
    cudaFree(c->d_mat);
    if (c->blas) c->api.destroy(c->blas);
    if (c->api.lib) dlclose(c->api.lib);
    for (int i = 0; i < 4; i++)
        if (c->ev[i]) cudaEventDestroy(c->ev[i]);
    if (c->stream) cudaStreamDestroy(c->stream);
    (void)cudaGetLastError();
    free(c->runs);
    free(c);
    *pc = NULL;
}

static int add_run(HcbCtx *c, int size, int dst, uint32_t first, uint32_t count) {
    if (c->nruns == c->cap_runs) {
        const int cap = c->cap_runs ? 2 * c->cap_runs : 16;
        HcbRun *r = (HcbRun *)realloc(c->runs, (size_t)cap * sizeof(HcbRun));
        if (!r) return VIDK_ERR(ENOMEM);
        c->runs = r, c->cap_runs = cap;
    }
    c->runs[c->nruns].size = size;
    c->runs[c->nruns].dst = dst;
    c->runs[c->nruns].first = first;
    c->runs[c->nruns].count = count;
    c->nruns++;
    return 0;
}

extern "C" int hcb_prepare(HcbCtx *c, const VidkHevcBatch *b, char *err, size_t errlen) {
    int ret = 0;
    size_t samples = 0, tbs = 0;
    if (!c || !b || b->bitdepth < VIDK_HEVC_MIN_BITDEPTH ||
        b->bitdepth > VIDK_HEVC_MAX_BITDEPTH) {
        msg(err, errlen, "bad batch");
        return VIDK_ERR(EINVAL);
    }
    if (b->scaling_lists) {
        msg(err, errlen, "scaling lists are not supported by the baseline");
        return VIDK_ERR(ENOTSUP);
    }
    c->staged = 0;
    c->nruns = 0;
    c->bitdepth = b->bitdepth;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &b->list[s];
        c->count[s] = l->count;
        c->sample_off[s] = samples;
        c->tb_off[s] = tbs;
        samples += (size_t)l->count << (4 + 2 * s);
        tbs += l->count;
        /* runs of one transform kind */
        uint32_t i = 0;
        while (i < l->count) {
            const unsigned f = l->tb[i].flags;
            if (f & VIDK_HEVC_TB_TSKIP) {
                msg(err, errlen, "transform skip TBs are not supported by the baseline");
                return VIDK_ERR(ENOTSUP);
            }
            const int dst = s == 0 && (f & VIDK_HEVC_TB_DST);
            uint32_t k = i + 1;
            while (k < l->count && (s == 0 && (l->tb[k].flags & VIDK_HEVC_TB_DST)) == dst &&
                   !(l->tb[k].flags & VIDK_HEVC_TB_TSKIP))
                k++;
            if (add_run(c, s, dst, i, k - i) < 0) {
                msg(err, errlen, "out of memory");
                return VIDK_ERR(ENOMEM);
            }
            i = k;
        }
    }
    CU(cudaSetDevice(c->device));
    if (samples > c->cap_samples || tbs > c->cap_tbs) {
        CU(cudaStreamSynchronize(c->stream));
        free_frame_buffers(c);
        const size_t ns = samples ? samples : 1, nt = tbs ? tbs : 1;
        CU(cudaMalloc((void **)&c->d_x, ns * sizeof(float)));
        CU(cudaMalloc((void **)&c->d_t, ns * sizeof(float)));
        CU(cudaMalloc((void **)&c->d_tb, nt * sizeof(VidkHevcTb)));
        CU(cudaHostAlloc((void **)&c->h_x, ns * sizeof(float), cudaHostAllocDefault));
        CU(cudaHostAlloc((void **)&c->h_y, ns * sizeof(float), cudaHostAllocDefault));
        CU(cudaHostAlloc((void **)&c->h_tb, nt * sizeof(VidkHevcTb), cudaHostAllocDefault));
        c->cap_samples = ns, c->cap_tbs = nt;
    }
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &b->list[s];
        const size_t n = (size_t)l->count << (4 + 2 * s);
        float *x = c->h_x + c->sample_off[s];
        for (size_t i = 0; i < n; i++)
            x[i] = (float)l->res[i];
        if (l->count) memcpy(c->h_tb + c->tb_off[s], l->tb, l->count * sizeof(VidkHevcTb));
    }
    c->samples = samples, c->tbs = tbs;
    c->staged = 1;
    return 0;
cleanup:
    return ret;
}

/* cublasSgemmStridedBatched over `count` blocks in calls of at most MAX_GEMM_BATCH. */
static int gemm_chunks(HcbCtx *c, int stage, int n, const float *mat, float alpha,
                       const float *in, float *out, uint32_t count, int *launches) {
    const float zero = 0.f;
    const long long stride = (long long)n * n;
    for (uint32_t i = 0; i < count; i += MAX_GEMM_BATCH) {
        const int nb = (int)(count - i < MAX_GEMM_BATCH ? count - i : MAX_GEMM_BATCH);
        const float *src = in + (size_t)i * (size_t)stride;
        float *dst = out + (size_t)i * (size_t)stride;
        int s;
        /* cuBLAS is column-major: the row-major block X reads as X^T. Stage 1 computes
         * D X^T = (X D^T)^T, stored column-major = X D^T row-major; stage 2 computes
         * T^T D^T = (D T)^T, i.e. D T row-major. */
        if (stage == 1)
            s = c->api.sgemm_sb(c->blas, BL_OP_T, BL_OP_N, n, n, n, &alpha, mat, n, 0, src, n,
                                stride, &zero, dst, n, stride, nb);
        else
            s = c->api.sgemm_sb(c->blas, BL_OP_N, BL_OP_N, n, n, n, &alpha, src, n, stride, mat,
                                n, 0, &zero, dst, n, stride, nb);
        if (s != BL_SUCCESS) return s;
        (*launches)++;
    }
    return BL_SUCCESS;
}

extern "C" int hcb_run(HcbCtx *c, HcbTiming *t, char *err, size_t errlen) {
    int ret = 0, launches = 0;
    float ms[3];
    if (!c || !t || !c->staged) {
        msg(err, errlen, "nothing staged");
        return VIDK_ERR(EINVAL);
    }
    memset(t, 0, sizeof(*t));
    CU(cudaSetDevice(c->device));
    CU(cudaEventRecord(c->ev[0], c->stream));
    CU(cudaMemcpyAsync(c->d_x, c->h_x, c->samples * sizeof(float), cudaMemcpyHostToDevice,
                       c->stream));
    CU(cudaMemcpyAsync(c->d_tb, c->h_tb, c->tbs * sizeof(VidkHevcTb), cudaMemcpyHostToDevice,
                       c->stream));
    CU(cudaEventRecord(c->ev[1], c->stream));
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        if (!c->count[s]) continue;
        const int log2n = s + 2, n = 4 << s;
        const size_t len = (size_t)1 << (2 * log2n), nval = (size_t)c->count[s] * len;
        const float a1 = ldexpf(1.f, -(log2n + c->bitdepth - 9)),
                    a2 = ldexpf(1.f, -(log2n + 6));
        float *x = c->d_x + c->sample_off[s], *tmp = c->d_t + c->sample_off[s];
        for (int pass = 1; pass <= 2; pass++) { // stage 1: x -> tmp, stage 2: tmp -> x
            float *in = pass == 1 ? x : tmp, *out = pass == 1 ? tmp : x;
            for (int r = 0; r < c->nruns; r++) {
                const HcbRun *run = &c->runs[r];
                if (run->size != s) continue;
                const float *m = c->d_mat + mat_off[run->dst ? 4 : s];
                const size_t o = (size_t)run->first * len;
                BL(gemm_chunks(c, pass, n, m, pass == 1 ? a1 : a2, in + o, out + o, run->count,
                               &launches));
            }
            round_kernel<<<ew_grid(c, nval), EW_THREADS, 0, c->stream>>>(out, nval);
            CU(cudaGetLastError());
        }
        quant_kernel<<<ew_grid(c, nval), EW_THREADS, 0, c->stream>>>(x, c->d_tb + c->tb_off[s],
                                                                     nval, log2n, c->bitdepth);
        CU(cudaGetLastError());
        launches += 3;
    }
    CU(cudaEventRecord(c->ev[2], c->stream));
    CU(cudaMemcpyAsync(c->h_y, c->d_x, c->samples * sizeof(float), cudaMemcpyDeviceToHost,
                       c->stream));
    CU(cudaEventRecord(c->ev[3], c->stream));
    CU(cudaStreamSynchronize(c->stream));
    for (int i = 0; i < 3; i++)
        CU(cudaEventElapsedTime(&ms[i], c->ev[i], c->ev[i + 1]));
    t->h2d_ms = ms[0], t->kernel_ms = ms[1], t->d2h_ms = ms[2];
    t->overall_ms = (double)ms[0] + ms[1] + ms[2];
    t->h2d_bytes = c->samples * sizeof(float) + c->tbs * sizeof(VidkHevcTb);
    t->d2h_bytes = c->samples * sizeof(float);
    /* GEMM 1 and 2 read and write 4 B each, the rounding kernels read and write, and
     * quantisation reads and writes: 5 x 8 B per sample, plus the records. */
    t->kernel_bytes = 40.0 * (double)c->samples + (double)(c->tbs * sizeof(VidkHevcTb));
    t->launches = launches;
    return 0;
cleanup:
    return ret;
}

extern "C" int hcb_levels(const HcbCtx *c, int16_t *const lev[VIDK_HEVC_TB_SIZES]) {
    if (!c || !c->staged) return VIDK_ERR(EINVAL);
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        if (!c->count[s]) continue;
        if (!lev[s]) return VIDK_ERR(EINVAL);
        const size_t n = (size_t)c->count[s] << (4 + 2 * s);
        const float *y = c->h_y + c->sample_off[s];
        for (size_t i = 0; i < n; i++)
            lev[s][i] = (int16_t)lrintf(y[i]);
    }
    return 0;
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

extern "C" int hcb_bandwidth(HcbCtx *c, double *d2d, double *h2d, double *d2h, char *err,
                             size_t errlen) {
    int ret = 0;
    const size_t dev_bytes = (size_t)256 << 20, host_bytes = (size_t)64 << 20;
    void *a = NULL, *b = NULL, *h = NULL;
    float t[3][7];
    const int reps = 7;
    if (!c) return VIDK_ERR(EINVAL);
    CU(cudaSetDevice(c->device));
    CU(cudaMalloc(&a, dev_bytes));
    CU(cudaMalloc(&b, dev_bytes));
    CU(cudaHostAlloc(&h, host_bytes, cudaHostAllocDefault));
    CU(cudaMemsetAsync(a, 1, dev_bytes, c->stream));
    memset(h, 1, host_bytes);
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        for (int k = 0; k < 3; k++) {
            CU(cudaEventRecord(c->ev[0], c->stream));
            if (k == 0)
                CU(cudaMemcpyAsync(b, a, dev_bytes, cudaMemcpyDeviceToDevice, c->stream));
            else if (k == 1)
                CU(cudaMemcpyAsync(a, h, host_bytes, cudaMemcpyHostToDevice, c->stream));
            else
                CU(cudaMemcpyAsync(h, a, host_bytes, cudaMemcpyDeviceToHost, c->stream));
            CU(cudaEventRecord(c->ev[1], c->stream));
            CU(cudaEventSynchronize(c->ev[1]));
            if (r >= 0) CU(cudaEventElapsedTime(&t[k][r], c->ev[0], c->ev[1]));
        }
    }
    for (int k = 0; k < 3; k++)
        qsort(t[k], reps, sizeof(float), cmp_float);
    *d2d = 2.0 * (double)dev_bytes / (t[0][reps / 2] * 1e-3);
    *h2d = (double)host_bytes / (t[1][reps / 2] * 1e-3);
    *d2h = (double)host_bytes / (t[2][reps / 2] * 1e-3);
cleanup:
    cudaFree(a);
    cudaFree(b);
    cudaFreeHost(h);
    return ret;
}
