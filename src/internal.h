/* Library-internal definitions shared by the core, the kernel families and the
 * backends. Not installed. */
#ifndef VIDK_INTERNAL_H
#define VIDK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* C linkage also when a CUDA (.cu, C++) file includes this. */
#ifdef __cplusplus
extern "C" {
#endif

#include "config.h"
#include "vidkern/vidkern.h"
#include "h264.h"
#include "hevc.h"
#include "me.h"
#include "sad.h"
#include "thread_pool.h"
#include "backend.h"

struct VidkCudaCtx; /* src/cuda/cuda_backend.h; opaque to the C side */

struct VidkContext {
    VidkSettings s;
    VidkBackend backend;  /* resolved, never AUTO; for vidk_get_backend() only */
    VidkOps ops;          /* the backend's table (backend.h), set once by vidk_open */
    unsigned cpu_flags;   /* detected & mask; 0 for the c backend */
    int n_threads;        /* width of ops.run: 1 unless threads */
    VidkThreadPool *pool; /* threads backend only (its ops.run) */
    VidkSadDSP sad;
    VidkMeDSP me;
    VidkH264DSP h264;
    VidkHevcDSP hevc;
    struct VidkCudaCtx *cuda; /* cuda backend only */
};

#if defined(__GNUC__)
#define VIDK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VIDK_PRINTF(a, b)
#endif

/* Send a message to the context's logger (no-op without one, or above log_level). */
void vidk_log(const VidkContext *ctx, VidkLogLevel level, const char *fmt, ...)
    VIDK_PRINTF(3, 4);

/* Aligned allocation; size 0 is invalid. Free with vidk_free_aligned(). */
void *vidk_malloc_aligned(size_t align, size_t size);
void vidk_free_aligned(void *p);

/* a*b (+c) with overflow checks for size computations; return 0 on overflow. */
int vidk_mul_size(size_t a, size_t b, size_t *out);

static inline int vidk_imin(int a, int b) {
    return a < b ? a : b;
}
static inline int vidk_imax(int a, int b) {
    return a > b ? a : b;
}
static inline int vidk_iclip(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* CPU flags detected once (cpu.c). */
unsigned vidk_cpu_detect(void);

#ifdef __cplusplus
}
#endif
#endif
