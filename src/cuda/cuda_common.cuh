// Internals shared by the CUDA backend's .cu files (C++ side only; the C side sees
// src/cuda/cuda_backend.h). Include this first in every .cu file.
//
// Error handling pattern of every host function that talks to CUDA:
//
//   int f(VidkContext *ctx, ...)
//   {
//       int err = 0;
//       void *d = nullptr;              // every local declared before the first check:
//       ...                             // C++ forbids a goto across an initialisation
//       VIDK_TRY(vidk_cuda_enter(ctx)); // internal helpers return 0 or an error code
//       CUDA_CHECK(cudaMemcpyAsync(...));
//       kernel<<<grid, block, 0, stream>>>(...);
//       CUDA_CHECK_LAUNCH();
//   cleanup:
//       return err;
//   }
//
// CUDA_CHECK logs "file:line: expr: CUDA message" at VIDK_LOG_ERROR, stores the mapped
// code in `err` and jumps to `cleanup`; it needs `ctx` (the VidkContext) and `int err`
// in scope. The library never exits or prints on its own.
//
// A context is used by one host thread at a time (the public API's rule); nothing here
// locks.
#ifndef VIDK_CUDA_COMMON_CUH
#define VIDK_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/cuda_backend.h"
#include "internal.h"

/* The one debug switch of the CUDA code (docs/CUDA.md): 1 (the default) keeps the
 * executor's ordering check (debug_order.cuh) on, on the device and in the host emulation;
 * 0 compiles it out. Set with -DVIDK_CUDA_DEBUG=0 in CMAKE_CUDA_FLAGS. */
#ifndef VIDK_CUDA_DEBUG
#define VIDK_CUDA_DEBUG 1
#endif

/* Largest stream count a context may ask for (VidkSettings.cuda_streams is 1..16). */
#define VIDK_CUDA_MAX_STREAMS 16

/* Alignment of every slot buffer (cudaMalloc gives 256, cudaHostAlloc a page). */
#define VIDK_CUDA_ALIGN 256

/* Stages of a device call, timed with events (see VidkCudaTiming). */
enum VidkCudaStage {
    VIDK_CUDA_STAGE_H2D = 0,
    VIDK_CUDA_STAGE_KERNEL,
    VIDK_CUDA_STAGE_D2H,
    VIDK_CUDA_STAGE_COUNT
};

struct VidkCudaBuf {
    void *ptr;
    size_t bytes; /* capacity */
};

struct VidkCudaCtx {
    int device;
    int major, minor; /* compute capability */
    int sms;
    int n_streams;
    cudaStream_t streams[VIDK_CUDA_MAX_STREAMS];
    VidkCudaBuf dev[VIDK_SLOT_COUNT];
    VidkCudaBuf host[VIDK_SLOT_COUNT];

    /* Stage timing of the call in progress, and the last completed one. */
    cudaEvent_t ev_start;
    cudaEvent_t ev_begin[VIDK_CUDA_STAGE_COUNT], ev_end[VIDK_CUDA_STAGE_COUNT];
    unsigned begun, ended; /* bit per stage, this call */
    int timing_open;       /* vidk_cuda_timing_start was called, stop not yet */
    size_t h2d_bytes, d2h_bytes;
    int last_valid;
    VidkCudaTiming last;

    /* Host ranges page-locked by vidk_host_register() (lo, hi: [lo, hi)). */
    int n_reg;
    struct {
        uintptr_t lo, hi;
    } reg[VIDK_MAX_HOST_REGISTERED];
};

/* Map a CUDA error to a vidkern code: ENOMEM for allocation failures, NODEV when there
 * is no usable device (no driver, no device, no kernel image for it), EIO otherwise. */
int vidk_cuda_map_error(cudaError_t e);

/* Log a failed CUDA call (file:line, expression, CUDA name and message), clear the
 * runtime's non-sticky last error, and return vidk_cuda_map_error(e). */
int vidk_cuda_fail(const VidkContext *ctx, cudaError_t e, const char *expr, const char *file,
                   int line);

#define CUDA_CHECK(expr)                                                                       \
    do {                                                                                       \
        const cudaError_t vidk_e_ = (expr);                                                    \
        if (vidk_e_ != cudaSuccess) {                                                          \
            err = vidk_cuda_fail(ctx, vidk_e_, #expr, __FILE__, __LINE__);                     \
            goto cleanup;                                                                      \
        }                                                                                      \
    } while (0)

/* After every <<<>>>: launch-configuration errors are reported by cudaGetLastError. */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

/* For internal helpers that return 0 or a negative vidkern code (already logged). */
#define VIDK_TRY(expr)                                                                         \
    do {                                                                                       \
        if ((err = (expr)) < 0) goto cleanup;                                                  \
    } while (0)

/* Make the context's device current on the calling thread (the runtime's current device
 * is per thread; a context may move between threads). Call at every entry point. */
int vidk_cuda_enter(VidkContext *ctx);

/* Stream i of the context, 0 <= i < n_streams. */
static inline cudaStream_t vidk_cuda_stream_at(const VidkContext *ctx, int i) {
    return ctx->cuda->streams[i];
}

/* Typed slot buffers (see vidk_cuda_device_buffer / vidk_cuda_host_buffer). */
template <typename T>
static inline int vidk_cuda_dev_slot(VidkContext *ctx, int slot, size_t bytes, T **p) {
    void *v = nullptr;
    const int err = vidk_cuda_device_buffer(ctx, slot, bytes, &v);
    *p = static_cast<T *>(v);
    return err;
}
template <typename T>
static inline int vidk_cuda_host_slot(VidkContext *ctx, int slot, size_t bytes, T **p) {
    void *v = nullptr;
    const int err = vidk_cuda_host_buffer(ctx, slot, bytes, &v);
    *p = static_cast<T *>(v);
    return err;
}

// The coding kernels keep their working arrays in local memory (encode.cu inter_kernel
// 1.2 kB a thread, decide_kernel 0.5 kB; stream.cu's lanes their pieces) and use little
// shared memory (at most 15 kB a block, two blocks an SM): they ask for most of the SM's
// memory as L1: 8% of the largest shared carveout (228 kB on sm_90), which the driver rounds
// up to the 32 kB configuration (224 kB of L1). Measured on an H100 (docs/PERFORMANCE.md,
// session 15): the whole-file encode 2692 -> 2730 frames/s against 25% (the 64 kB
// configuration); 0% (the smallest configuration that fits) ran 2327. Without a preference
// a kernel may run in the configuration the previous one left, the search's largest shared
// carveout (me.cu prefer_shared) with the smallest L1.
template <typename K> static inline cudaError_t vidk_cuda_prefer_l1(K kern) {
    return cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, 8);
}

// Loads kernels without launching them (their attributes; CUDA 12.2 on loads a kernel at
// its first use, a fraction of a millisecond each): the first error, or cudaSuccess.
template <typename... K> static inline cudaError_t vidk_cuda_load(K... kerns) {
    cudaFuncAttributes at;
    cudaError_t e = cudaSuccess;
    ((e = e == cudaSuccess ? cudaFuncGetAttributes(&at, kerns) : e), ...);
    return e;
}

// Programmatic dependent launch (sm_90; docs/ENCODE_CUDA.md): a kernel launched with
// vidk_cuda_launch_pdl may have its blocks made resident while the stream's previous kernel
// still runs, once every block of that one has called vidk_pdl_launch() (or ended); it must
// call vidk_pdl_wait() before it reads or writes any memory that the previous kernels use,
// which returns once they have completed and their writes are visible. Both are no-ops for a
// kernel launched the usual way.
__device__ __forceinline__ void vidk_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void vidk_pdl_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
template <typename... P, typename... A>
static inline cudaError_t vidk_cuda_launch_pdl(void (*kern)(P...), unsigned grid,
                                               unsigned threads, cudaStream_t s, A... args) {
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid), cfg.blockDim = dim3(threads), cfg.dynamicSmemBytes = 0;
    cfg.stream = s, cfg.attrs = at, cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kern, args...);
}

/* Blocks of `threads` covering n items (n > 0). */
static inline unsigned vidk_cuda_grid(size_t n, unsigned threads) {
    return (unsigned)((n + threads - 1) / threads);
}

/* ---- stage timing (CUDA events; always on, see VidkCudaTiming) -----------------
 * A call does:
 *   VIDK_TRY(vidk_cuda_timing_start(ctx, s));            // before its first device op
 *   VIDK_TRY(vidk_cuda_stage_begin(ctx, VIDK_CUDA_STAGE_H2D, s));
 *   ... copies ...
 *   VIDK_TRY(vidk_cuda_stage_end(ctx, VIDK_CUDA_STAGE_H2D, s, bytes));
 *   ... same for KERNEL and D2H, on any of the context's streams ...
 *   ... synchronise every stream used ...
 *   VIDK_TRY(vidk_cuda_timing_stop(ctx));                // reads the events
 * A stage's begin is recorded at its first vidk_cuda_stage_begin of the call and its
 * end at its last vidk_cuda_stage_end, so chunked pipelines record one span per stage
 * (issue the chunks in order). The start event goes on stream s: the streams are idle
 * at the start of a call because every call synchronises before returning. A call that
 * fails leaves no valid timing (vidk_cuda_last_timing then says EAGAIN). Every device
 * call of every family does this, so that the last timing describes the last call. */
int vidk_cuda_timing_start(VidkContext *ctx, cudaStream_t s);
int vidk_cuda_stage_begin(VidkContext *ctx, VidkCudaStage st, cudaStream_t s);
int vidk_cuda_stage_end(VidkContext *ctx, VidkCudaStage st, cudaStream_t s, size_t bytes);
int vidk_cuda_timing_stop(VidkContext *ctx);

#endif
