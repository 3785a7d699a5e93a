// CUDA backend infrastructure: device probe and selection, context open/close, streams,
// timing events, buffer slots. Kernels live in one .cu file per family.
#include "cuda_common.cuh"
#include "h264_cuda.h"
#include "hevc_cuda.h"

#include <stdlib.h>
#include <string.h>

int vidk_cuda_map_error(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return 0;
    case cudaErrorMemoryAllocation:
        return VIDK_ERR(ENOMEM);
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorInitializationError:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
        return VIDK_ERR_NODEV;
    default:
        return VIDK_ERR(EIO);
    }
}

int vidk_cuda_fail(const VidkContext *ctx, cudaError_t e, const char *expr, const char *file,
                   int line) {
    vidk_log(ctx, VIDK_LOG_ERROR, "%s:%d: %s: %s (%s)", file, line, expr, cudaGetErrorName(e),
             cudaGetErrorString(e));
    // API errors are also latched as the thread's last error; clear it (non-sticky
    // errors only) so that the next launch check does not report this one again.
    (void)cudaGetLastError();
    return vidk_cuda_map_error(e);
}

int vidk_cuda_count(void) {
    int n = 0;
    // No driver, no device, a stub libcuda: all mean "no device" here, silently (CI has
    // nvcc but no GPU, and the library must load and report 0).
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n > 0 ? n : 0;
}

int vidk_cuda_info(int ordinal, VidkDeviceInfo *info) {
    if (!info) return VIDK_ERR(EINVAL);
    memset(info, 0, sizeof(*info));
    if (ordinal < 0 || ordinal >= vidk_cuda_count()) return VIDK_ERR_NODEV;
    cudaDeviceProp prop;
    int clock = 0, drv = 0;
    cudaError_t e = cudaGetDeviceProperties(&prop, ordinal);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, ordinal);
    if (e == cudaSuccess) e = cudaDriverGetVersion(&drv);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return vidk_cuda_map_error(e);
    }
    // prop.name is 256 bytes, ours 128: truncate, always terminated.
    {
        size_t n = strnlen(prop.name, sizeof(prop.name));
        if (n > sizeof(info->name) - 1) n = sizeof(info->name) - 1;
        memcpy(info->name, prop.name, n);
        info->name[n] = '\0';
    }
    info->ordinal = ordinal;
    info->major = prop.major;
    info->minor = prop.minor;
    info->multiprocessors = prop.multiProcessorCount;
    info->global_mem = prop.totalGlobalMem;
    info->l2_bytes = prop.l2CacheSize > 0 ? (size_t)prop.l2CacheSize : 0;
    info->clock_khz = clock;
    info->driver_version = drv;
    info->runtime_version = CUDART_VERSION;
    return 0;
}

// Does nothing; cudaFuncGetAttributes on it tells whether the fatbin has code this
// device can run (built for sm_90 + compute_90 PTX: Hopper and later).
__global__ void vidk_probe_kernel(int *p) {
    if (p) *p = 0;
}

int vidk_cuda_enter(VidkContext *ctx) {
    int err = 0;
    CUDA_CHECK(cudaSetDevice(ctx->cuda->device));
cleanup:
    return err;
}

void vidk_cuda_close(VidkContext *ctx) {
    if (!ctx || !ctx->cuda) return;
    VidkCudaCtx *c = ctx->cuda;
    // Errors here are logged and otherwise ignored: close must release what it can.
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess)
        vidk_log(ctx, VIDK_LOG_WARNING, "cuda close: cudaSetDevice: %s", cudaGetErrorString(e));
    for (int i = 0; i < c->n_streams; i++)
        if (c->streams[i]) (void)cudaStreamSynchronize(c->streams[i]);
    vidk_cuda_h264_release(ctx); // its cached CUDA graph lives in a host slot
    vidk_cuda_hevc_release(ctx); // its host staging pool lives in a host slot
    for (int i = 0; i < VIDK_SLOT_COUNT; i++) {
        if (c->dev[i].ptr) (void)cudaFree(c->dev[i].ptr);
        if (c->host[i].ptr) (void)cudaFreeHost(c->host[i].ptr);
    }
    // Ranges the caller left registered: unpin them (the memory stays the caller's).
    for (int i = 0; i < c->n_reg; i++)
        (void)cudaHostUnregister(reinterpret_cast<void *>(c->reg[i].lo));
    c->n_reg = 0;
    if (c->ev_start) (void)cudaEventDestroy(c->ev_start);
    for (int s = 0; s < VIDK_CUDA_STAGE_COUNT; s++) {
        if (c->ev_begin[s]) (void)cudaEventDestroy(c->ev_begin[s]);
        if (c->ev_end[s]) (void)cudaEventDestroy(c->ev_end[s]);
    }
    for (int i = 0; i < c->n_streams; i++)
        if (c->streams[i]) (void)cudaStreamDestroy(c->streams[i]);
    (void)cudaGetLastError();
    free(c);
    ctx->cuda = NULL;
}

int vidk_cuda_open(VidkContext *ctx) {
    int err = 0;
    const int dev = ctx->s.cuda_device;
    const int n_dev = vidk_cuda_count();
    const int n_streams = ctx->s.cuda_streams;
    cudaDeviceProp prop;
    cudaFuncAttributes fa;
    cudaError_t e;
    VidkCudaCtx *c = NULL;

    if (ctx->cuda) return VIDK_ERR(EINVAL);
    if (n_streams < 1 || n_streams > VIDK_CUDA_MAX_STREAMS) return VIDK_ERR(EINVAL);
    if (dev < 0 || dev >= n_dev) {
        vidk_log(ctx, VIDK_LOG_ERROR, "CUDA device %d does not exist (%d device%s found)", dev,
                 n_dev, n_dev == 1 ? "" : "s");
        return VIDK_ERR_NODEV;
    }
    c = (VidkCudaCtx *)calloc(1, sizeof(*c));
    if (!c) return VIDK_ERR(ENOMEM);
    c->device = dev;
    ctx->cuda = c; // from here on, vidk_cuda_close() undoes a partial open

    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    c->major = prop.major;
    c->minor = prop.minor;
    c->sms = prop.multiProcessorCount;
    if (prop.major < 7) {
        vidk_log(ctx, VIDK_LOG_ERROR,
                 "CUDA device %d (%s) has compute capability %d.%d; vidkern needs 7.0 or "
                 "newer",
                 dev, prop.name, prop.major, prop.minor);
        err = VIDK_ERR_NODEV;
        goto cleanup;
    }
    CUDA_CHECK(cudaSetDevice(dev));
    // A device older than the architectures in the fatbin has no image to run.
    e = cudaFuncGetAttributes(&fa, vidk_probe_kernel);
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction ||
        e == cudaErrorUnsupportedPtxVersion) {
        (void)cudaGetLastError();
        vidk_log(ctx, VIDK_LOG_ERROR,
                 "CUDA device %d (%s, compute %d.%d) cannot run this build's code (%s); "
                 "rebuild with -DCMAKE_CUDA_ARCHITECTURES=%d%d",
                 dev, prop.name, prop.major, prop.minor, cudaGetErrorString(e), prop.major,
                 prop.minor);
        err = VIDK_ERR_NODEV;
        goto cleanup;
    }
    CUDA_CHECK(e);

    for (int i = 0; i < n_streams; i++) {
        CUDA_CHECK(cudaStreamCreateWithFlags(&c->streams[i], cudaStreamNonBlocking));
        c->n_streams = i + 1;
    }
    CUDA_CHECK(cudaEventCreate(&c->ev_start));
    for (int s = 0; s < VIDK_CUDA_STAGE_COUNT; s++) {
        CUDA_CHECK(cudaEventCreate(&c->ev_begin[s]));
        CUDA_CHECK(cudaEventCreate(&c->ev_end[s]));
    }
    vidk_log(ctx, VIDK_LOG_INFO, "CUDA device %d: %s, compute %d.%d, %d SMs, %d stream%s", dev,
             prop.name, prop.major, prop.minor, prop.multiProcessorCount, n_streams,
             n_streams == 1 ? "" : "s");
    return 0;
cleanup:
    vidk_cuda_close(ctx);
    return err;
}

/* ---- buffer slots ---------------------------------------------------------------- */

static int slot_args(const VidkContext *ctx, int slot, size_t bytes, void **ptr) {
    if (!ptr) return VIDK_ERR(EINVAL);
    *ptr = NULL;
    if (!ctx || slot < 0 || slot >= VIDK_SLOT_COUNT || bytes == 0) return VIDK_ERR(EINVAL);
    if (!ctx->cuda) return VIDK_ERR_NODEV;
    return 0;
}

// Before freeing a buffer that queued work may still use.
static int sync_streams(VidkContext *ctx) {
    int err = 0;
    for (int i = 0; i < ctx->cuda->n_streams; i++)
        CUDA_CHECK(cudaStreamSynchronize(ctx->cuda->streams[i]));
cleanup:
    return err;
}

static size_t round_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

// Grow-only slot buffer: reuse when large enough, else free (after the queued work that
// may use it) and allocate the new size rounded up to VIDK_CUDA_ALIGN.
static int slot_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr, int host) {
    int err = slot_args(ctx, slot, bytes, ptr);
    VidkCudaBuf *b;
    size_t cap;
    if (err < 0) return err;
    b = host ? &ctx->cuda->host[slot] : &ctx->cuda->dev[slot];
    if (bytes <= b->bytes) {
        *ptr = b->ptr;
        return 0;
    }
    if (bytes > SIZE_MAX - VIDK_CUDA_ALIGN) return VIDK_ERR(ENOMEM);
    cap = round_up(bytes, VIDK_CUDA_ALIGN);
    if ((err = vidk_cuda_enter(ctx)) < 0) return err;
    if (b->ptr) {
        if ((err = sync_streams(ctx)) < 0) return err; // the old buffer stays valid
        void *old = b->ptr;
        // From here on the slot is empty, whatever happens (a failed free leaks).
        b->ptr = NULL;
        b->bytes = 0;
        if (host)
            CUDA_CHECK(cudaFreeHost(old));
        else
            CUDA_CHECK(cudaFree(old));
    }
    if (host)
        CUDA_CHECK(cudaHostAlloc(&b->ptr, cap, cudaHostAllocDefault));
    else
        CUDA_CHECK(cudaMalloc(&b->ptr, cap));
    // The first 16 bytes zeroed: a CUDA graph's copy node cannot be empty, so the H.264
    // compact path copies at least 16 bytes (h264_compact.cu nonzero()) of a buffer that may
    // hold fewer; those bytes are then defined (compute-sanitizer initcheck). The device
    // memset completes here: the library's streams do not wait for the default stream, and a
    // late memset would zero what they write first.
    if (host) {
        memset(b->ptr, 0, cap < 16 ? cap : 16);
    } else {
        CUDA_CHECK(cudaMemset(b->ptr, 0, cap < 16 ? cap : 16));
        CUDA_CHECK(cudaStreamSynchronize(0));
    }
    b->bytes = cap;
    *ptr = b->ptr;
cleanup:
    if (err < 0) b->ptr = NULL;
    return err;
}

int vidk_cuda_device_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr) {
    return slot_buffer(ctx, slot, bytes, ptr, 0);
}

int vidk_cuda_host_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr) {
    return slot_buffer(ctx, slot, bytes, ptr, 1);
}

int vidk_cuda_stream_count(const VidkContext *ctx) {
    return ctx && ctx->cuda ? ctx->cuda->n_streams : 0;
}

void *vidk_cuda_stream(const VidkContext *ctx, int i) {
    if (!ctx || !ctx->cuda || i < 0 || i >= ctx->cuda->n_streams) return NULL;
    return (void *)ctx->cuda->streams[i];
}

/* ---- stage timing ---------------------------------------------------------------- */

int vidk_cuda_timing_start(VidkContext *ctx, cudaStream_t s) {
    int err = 0;
    VidkCudaCtx *c = ctx->cuda;
    c->last_valid = 0;
    c->begun = c->ended = 0;
    c->h2d_bytes = c->d2h_bytes = 0;
    c->timing_open = 0;
    CUDA_CHECK(cudaEventRecord(c->ev_start, s));
    c->timing_open = 1;
cleanup:
    return err;
}

int vidk_cuda_stage_begin(VidkContext *ctx, VidkCudaStage st, cudaStream_t s) {
    int err = 0;
    VidkCudaCtx *c = ctx->cuda;
    if (!c->timing_open || (unsigned)st >= VIDK_CUDA_STAGE_COUNT) return VIDK_ERR(EINVAL);
    if (c->begun & (1u << st)) return 0;
    CUDA_CHECK(cudaEventRecord(c->ev_begin[st], s));
    c->begun |= 1u << st;
cleanup:
    return err;
}

int vidk_cuda_stage_end(VidkContext *ctx, VidkCudaStage st, cudaStream_t s, size_t bytes) {
    int err = 0;
    VidkCudaCtx *c = ctx->cuda;
    if (!c->timing_open || (unsigned)st >= VIDK_CUDA_STAGE_COUNT || !(c->begun & (1u << st)))
        return VIDK_ERR(EINVAL);
    CUDA_CHECK(cudaEventRecord(c->ev_end[st], s));
    c->ended |= 1u << st;
    if (st == VIDK_CUDA_STAGE_H2D) c->h2d_bytes += bytes;
    if (st == VIDK_CUDA_STAGE_D2H) c->d2h_bytes += bytes;
cleanup:
    return err;
}

int vidk_cuda_timing_stop(VidkContext *ctx) {
    int err = 0;
    VidkCudaCtx *c = ctx->cuda;
    VidkCudaTiming t;
    double *stage_ms[VIDK_CUDA_STAGE_COUNT] = {&t.h2d_ms, &t.kernel_ms, &t.d2h_ms};
    float ms;
    if (!c->timing_open) return VIDK_ERR(EINVAL);
    c->timing_open = 0;
    memset(&t, 0, sizeof(t));
    for (int s = 0; s < VIDK_CUDA_STAGE_COUNT; s++) {
        if (!(c->ended & (1u << s))) continue;
        // Blocks until the end event has completed (the caller normally synced).
        CUDA_CHECK(cudaEventSynchronize(c->ev_end[s]));
        CUDA_CHECK(cudaEventElapsedTime(&ms, c->ev_begin[s], c->ev_end[s]));
        *stage_ms[s] = ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, c->ev_start, c->ev_end[s]));
        if (ms > t.total_ms) t.total_ms = ms;
    }
    t.h2d_bytes = c->h2d_bytes;
    t.d2h_bytes = c->d2h_bytes;
    c->last = t;
    c->last_valid = 1;
cleanup:
    return err;
}

int vidk_cuda_last_timing(const VidkContext *ctx, VidkCudaTiming *t) {
    if (!ctx || !t) return VIDK_ERR(EINVAL);
    memset(t, 0, sizeof(*t));
    if (!ctx->cuda) return VIDK_ERR_NODEV;
    if (!ctx->cuda->last_valid) return VIDK_ERR(EAGAIN);
    *t = ctx->cuda->last;
    return 0;
}

// ---- page-locked caller memory -------------------------------------------------------------

int vidk_cuda_host_register(VidkContext *ctx, void *ptr, size_t bytes) {
    int err = 0;
    VidkCudaCtx *c = ctx->cuda;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
    if (!ptr || !bytes || lo + bytes < lo) return VIDK_ERR(EINVAL);
    for (int i = 0; i < c->n_reg; i++)
        if (lo < c->reg[i].hi && c->reg[i].lo < lo + bytes) {
            vidk_log(ctx, VIDK_LOG_ERROR,
                     "vidk_host_register: range overlaps one registered before");
            return VIDK_ERR(EEXIST);
        }
    if (c->n_reg >= VIDK_MAX_HOST_REGISTERED) {
        vidk_log(ctx, VIDK_LOG_ERROR, "vidk_host_register: more than %d ranges",
                 VIDK_MAX_HOST_REGISTERED);
        return VIDK_ERR(ENOSPC);
    }
    VIDK_TRY(vidk_cuda_enter(ctx));
    CUDA_CHECK(cudaHostRegister(ptr, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
    c->reg[c->n_reg].lo = lo;
    c->reg[c->n_reg].hi = lo + bytes;
    c->n_reg++;
cleanup:
    return err;
}

int vidk_cuda_host_unregister(VidkContext *ctx, void *ptr) {
    int err = 0, i;
    VidkCudaCtx *c = ctx->cuda;
    for (i = 0; i < c->n_reg; i++)
        if (c->reg[i].lo == reinterpret_cast<uintptr_t>(ptr)) break;
    if (!ptr || i == c->n_reg) return VIDK_ERR(ENOENT);
    VIDK_TRY(vidk_cuda_enter(ctx));
    // Work in flight may still read or write the range.
    for (int s = 0; s < c->n_streams; s++)
        CUDA_CHECK(cudaStreamSynchronize(c->streams[s]));
    c->reg[i] = c->reg[--c->n_reg];
    CUDA_CHECK(cudaHostUnregister(ptr));
cleanup:
    return err;
}

int vidk_cuda_host_pinned(const VidkContext *ctx, const void *ptr, size_t bytes) {
    if (!ctx || !ctx->cuda || !ptr || !bytes) return 0;
    const VidkCudaCtx *c = ctx->cuda;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
    if (lo + bytes < lo) return 0;
    for (int i = 0; i < c->n_reg; i++)
        if (c->reg[i].lo <= lo && lo + bytes <= c->reg[i].hi) return 1;
    return 0;
}
