/* Context life cycle, settings, versions, error strings, backend selection. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

const char *vidk_version(void) {
    return VIDK_VERSION_STRING;
}

unsigned vidk_version_number(void) {
    return (VIDK_VERSION_MAJOR << 16) | (VIDK_VERSION_MINOR << 8) | VIDK_VERSION_PATCH;
}

const char *vidk_strerror(int err) {
    switch (err) {
    case 0:
        return "success";
    case VIDK_ERR(EINVAL):
        return "invalid argument";
    case VIDK_ERR(ENOMEM):
        return "out of memory";
    case VIDK_ERR(ENODEV):
        return "backend or device not available";
    case VIDK_ERR(EIO):
        return "device or I/O error";
    case VIDK_ERR(ERANGE):
        return "value out of range";
    case VIDK_ERR(ENOSYS):
        return "not implemented for this backend";
    case VIDK_ERR(EOVERFLOW):
        return "size overflow";
    case VIDK_ERR(EEXIST):
        return "already registered";
    case VIDK_ERR(ENOENT):
        return "not registered";
    case VIDK_ERR(ENOSPC):
        return "no room left";
    default:
        return err < 0 ? "unknown error" : "not an error code";
    }
}

static const char *const backend_names[VIDK_BACKEND_COUNT] = {"auto", "c", "simd", "threads",
                                                              "cuda"};

const char *vidk_backend_name(VidkBackend b) {
    return (unsigned)b < VIDK_BACKEND_COUNT ? backend_names[b] : "?";
}

int vidk_backend_from_name(const char *name) {
    if (!name) return VIDK_ERR(EINVAL);
    for (int i = 0; i < VIDK_BACKEND_COUNT; i++)
        if (!strcmp(name, backend_names[i])) return i;
    return VIDK_ERR(EINVAL);
}

/* ---- the backend tables (backend.h) ---- */

static void run_pool(VidkContext *ctx, int n_jobs, VidkJobFn fn, void *arg) {
    vidk_pool_run(ctx->pool, n_jobs, fn, arg);
}

static int threads_open(VidkContext *ctx) {
    ctx->n_threads = ctx->s.n_threads ? ctx->s.n_threads : vidk_cpu_count();
    return vidk_pool_create(&ctx->pool, ctx->n_threads);
}

static void threads_close(VidkContext *ctx) {
    vidk_pool_destroy(&ctx->pool);
}

#define CPU_OPS(runner, me_search)                                                             \
    .run = runner, .sad = {vidk_sad_frame_cpu}, .me = {me_search},                             \
    .h264 = {vidk_h264_batch_inverse_cpu, vidk_h264_frame_inverse_cpu,                         \
             vidk_h264_batch_forward_cpu},                                                     \
    .hevc = {vidk_hevc_batch_forward_cpu, vidk_hevc_batch_inverse_cpu},                        \
    .enc = {.open = vidk_enc_cpu_open,                                                         \
            .send = vidk_enc_cpu_send,                                                         \
            .receive = vidk_enc_cpu_receive,                                                   \
            .close = vidk_enc_cpu_close} /* .still: the CPU backends search in encode.c */

static const VidkOps ops_c = {CPU_OPS(vidk_run_serial, vidk_me_search_ref)};
static const VidkOps ops_simd = {CPU_OPS(vidk_run_serial, vidk_me_search_fast)};
static const VidkOps ops_threads = {CPU_OPS(run_pool, vidk_me_search_fast),
                                    .dev = {.open = threads_open, .close = threads_close}};

/* The only place that knows whether the build has CUDA: no table, no cuda backend. */
#if VIDK_HAVE_CUDA
#define OPS_CUDA (&vidk_ops_cuda) /* src/cuda/cuda_ops.cu */
#else
#define OPS_CUDA NULL
/* The library never calls the CUDA backend's own C API (the headers in src/cuda) but through
 * its table; these answers keep the tests and benchmarks linking that call it without an
 * `#if VIDK_HAVE_CUDA` of their own (no device: NODEV, nothing pinned, no stream). */
#include "cuda/cuda_backend.h"
#include "cuda/me_cuda.h"
int vidk_cuda_device_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr) {
    return (void)ctx, (void)slot, (void)bytes, (void)ptr, VIDK_ERR_NODEV;
}
int vidk_cuda_host_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr) {
    return (void)ctx, (void)slot, (void)bytes, (void)ptr, VIDK_ERR_NODEV;
}
int vidk_cuda_host_pinned(const VidkContext *ctx, const void *ptr, size_t bytes) {
    return (void)ctx, (void)ptr, (void)bytes, 0;
}
int vidk_cuda_stream_count(const VidkContext *ctx) {
    return (void)ctx, 0;
}
void *vidk_cuda_stream(const VidkContext *ctx, int i) {
    return (void)ctx, (void)i, NULL;
}
int vidk_cuda_last_timing(const VidkContext *ctx, VidkCudaTiming *t) {
    return ctx && t ? VIDK_ERR_NODEV : VIDK_ERR(EINVAL);
}
int vidk_cuda_sad_frame(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        int mvx, int mvy, VidkBlockSize bs, uint32_t *sads) {
    return (void)ctx, (void)cur, (void)ref, (void)mvx, (void)mvy, (void)bs, (void)sads,
           VIDK_ERR_NODEV;
}
int vidk_cuda_me_search_ex(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                           const VidkMeParams *p, VidkMeField *out, unsigned flags) {
    return vidk_cuda_me_search_seq(ctx, cur, ref, NULL, p, out, flags);
}
int vidk_cuda_me_search_seq(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                            const VidkPicture *next, const VidkMeParams *p, VidkMeField *out,
                            unsigned flags) {
    return (void)ctx, (void)cur, (void)ref, (void)next, (void)p, (void)out, (void)flags,
           VIDK_ERR_NODEV;
}
#endif

static const VidkOps *backend_ops(VidkBackend b) {
    switch (b) {
    case VIDK_BACKEND_C:
        return &ops_c;
    /* simd exists in every build: without SIMD code (other CPUs, VIDK_ENABLE_SIMD=OFF)
     * its dispatch tables simply keep the C functions, as on an x86 CPU without SSE2. */
    case VIDK_BACKEND_SIMD:
        return &ops_simd;
    case VIDK_BACKEND_THREADS:
        return &ops_threads;
    case VIDK_BACKEND_CUDA:
        return OPS_CUDA;
    default:
        return NULL;
    }
}

int vidk_cuda_device_count(void) {
    const VidkOps *o = backend_ops(VIDK_BACKEND_CUDA);
    return o ? o->dev.count() : 0;
}

int vidk_cuda_device_info(int ordinal, VidkDeviceInfo *info) {
    const VidkOps *o = backend_ops(VIDK_BACKEND_CUDA);
    if (!info) return VIDK_ERR(EINVAL);
    return o ? o->dev.info(ordinal, info) : VIDK_ERR_NODEV;
}

int vidk_backend_available(VidkBackend b) {
    const VidkOps *o = backend_ops(b); /* a backend with devices needs one */
    return b == VIDK_BACKEND_AUTO || (o && (!o->dev.count || o->dev.count() > 0));
}

void vidk_default_settings(VidkSettings *s) {
    memset(s, 0, sizeof(*s));
    s->backend = VIDK_BACKEND_AUTO;
    s->n_threads = 0;
    s->cpu_mask = ~0u;
    s->cuda_device = 0;
    s->cuda_streams = 4;
    s->log_level = VIDK_LOG_WARNING;
}

static int check_settings(const VidkSettings *s) {
    if ((unsigned)s->backend >= VIDK_BACKEND_COUNT) return 0;
    if (s->n_threads < 0 || s->n_threads > 1024) return 0;
    if (s->cuda_device < 0 || s->cuda_streams < 1 || s->cuda_streams > 16) return 0;
    if ((unsigned)s->log_level > VIDK_LOG_DEBUG) return 0;
    for (size_t i = 0; i < sizeof(s->reserved); i++)
        if (s->reserved[i]) return 0;
    return 1;
}

int vidk_open(VidkContext **out, const VidkSettings *s) {
    if (!out) return VIDK_ERR(EINVAL);
    *out = NULL;
    if (!s || !check_settings(s)) return VIDK_ERR(EINVAL);
    VidkContext *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) return VIDK_ERR(ENOMEM);
    ctx->s = *s;
    int err = 0;

    VidkBackend b = s->backend;
    if (b == VIDK_BACKEND_AUTO) {
        b = VIDK_BACKEND_THREADS;
        if (vidk_cuda_device_count() > s->cuda_device) {
            b = VIDK_BACKEND_CUDA;
        } else {
            vidk_log(ctx, VIDK_LOG_INFO, "no usable CUDA device: using the threads backend");
        }
    }
    if (!vidk_backend_available(b)) {
        vidk_log(ctx, VIDK_LOG_ERROR, "backend '%s' is not available on this machine",
                 vidk_backend_name(b));
        err = VIDK_ERR_NODEV;
        goto fail;
    }
    ctx->backend = b;
    ctx->ops = *backend_ops(b);
    /* The c backend is the reference: no SIMD at all. */
    ctx->cpu_flags = b == VIDK_BACKEND_C ? 0 : (vidk_cpu_detect() & s->cpu_mask);
    vidk_sad_dsp_init(&ctx->sad, ctx->cpu_flags);
    vidk_me_dsp_init(&ctx->me, ctx->cpu_flags);
    vidk_h264_dsp_init(&ctx->h264, ctx->cpu_flags);
    vidk_hevc_dsp_init(&ctx->hevc, ctx->cpu_flags);
    ctx->n_threads = 1;
    if (ctx->ops.dev.open && (err = ctx->ops.dev.open(ctx)) < 0) goto fail;
    *out = ctx;
    return 0;
fail:
    vidk_close(&ctx);
    return err;
}

void vidk_close(VidkContext **pctx) {
    if (!pctx || !*pctx) return;
    VidkContext *ctx = *pctx;
    if (ctx->ops.dev.close) ctx->ops.dev.close(ctx);
    free(ctx);
    *pctx = NULL;
}

VidkBackend vidk_get_backend(const VidkContext *ctx) {
    return ctx->backend;
}
unsigned vidk_get_cpu_flags(const VidkContext *ctx) {
    return ctx->cpu_flags;
}
int vidk_get_threads(const VidkContext *ctx) {
    return ctx->n_threads;
}

int vidk_host_register(VidkContext *ctx, void *ptr, size_t bytes) {
    if (!ctx || !ptr || !bytes) return VIDK_ERR(EINVAL);
    return ctx->ops.dev.host_register ? ctx->ops.dev.host_register(ctx, ptr, bytes) : 0;
}

int vidk_host_unregister(VidkContext *ctx, void *ptr) {
    if (!ctx || !ptr) return VIDK_ERR(EINVAL);
    return ctx->ops.dev.host_unregister ? ctx->ops.dev.host_unregister(ctx, ptr) : 0;
}

static int cmp_range(const void *a, const void *b) {
    const uintptr_t x = (uintptr_t)((const VidkHostRange *)a)->ptr,
                    y = (uintptr_t)((const VidkHostRange *)b)->ptr;
    return x < y ? -1 : x > y;
}

int vidk_host_register_set(VidkContext *ctx, const VidkHostRange *in, int n, VidkHostRange *out,
                           int *n_out) {
    if (!ctx || (!in && n) || !out || !n_out || n < 0) return VIDK_ERR(EINVAL);
    *n_out = 0;
    long ps = sysconf(_SC_PAGESIZE);
    const uintptr_t pg = ps > 0 ? (uintptr_t)ps : 4096;
    VidkHostRange *m = malloc((size_t)(n ? n : 1) * sizeof(*m));
    if (!m) return VIDK_ERR(ENOMEM);
    int nm = 0;
    for (int i = 0; i < n; i++) {
        if (!in[i].ptr || !in[i].bytes) continue;
        const uintptr_t a = (uintptr_t)in[i].ptr, e = a + in[i].bytes;
        if (e < a || e > UINTPTR_MAX - pg) {
            free(m);
            return VIDK_ERR(EINVAL);
        }
        m[nm].ptr = (void *)(a / pg * pg);
        m[nm].bytes = (e + pg - 1) / pg * pg - a / pg * pg;
        nm++;
    }
    qsort(m, (size_t)nm, sizeof(*m), cmp_range);
    int k = 0;
    for (int i = 1; i < nm; i++) {
        const uintptr_t end = (uintptr_t)m[k].ptr + m[k].bytes;
        if ((uintptr_t)m[i].ptr <= end) {
            const uintptr_t e2 = (uintptr_t)m[i].ptr + m[i].bytes;
            if (e2 > end) m[k].bytes = e2 - (uintptr_t)m[k].ptr;
        } else {
            m[++k] = m[i];
        }
    }
    nm = nm ? k + 1 : 0;
    int err = 0;
    for (int i = 0; i < nm; i++) {
        if ((err = vidk_host_register(ctx, m[i].ptr, m[i].bytes)) < 0) break;
        out[(*n_out)++] = m[i];
    }
    free(m);
    return err;
}
