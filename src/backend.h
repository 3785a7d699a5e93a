/* Backend dispatch: one table of frame-level operations per backend.
 *
 * How a call flows:
 *   public API (vidk_sad_frame, vidk_me_search, vidk_h264_batch_inverse, vidk_enc_receive,
 *   ...) -> argument validation, once, in the family's file -> ctx->ops.<family>.<op>(...)
 *   -> the backend's implementation: the CPU drivers (*_cpu, vidk_me_search_ref/_fast,
 *   src/enc/encode.c) or the CUDA launchers (src/cuda/cuda_ops.cu).
 * vidk_open (src/lib.c) resolves the backend and copies its table into ctx->ops once;
 * nothing else in src/ asks which backend a context has.
 *
 * Tables: c, simd and threads share the CPU drivers; they differ in the block-level dsp
 * tables the drivers call (ctx->h264 etc., chosen by CPU flags: C only for c) and in the
 * job runner `run` (serial for c and simd, the context's pool for threads; ctx->n_threads
 * is the runner's width, 1 unless threads). CPU-only operations (hevc residual and block
 * arrays, h264 block arrays) have no table entry: they run everywhere on ctx->ops.run.
 * cuda is the table of src/cuda/cuda_ops.cu; lib.c holds the only `#if VIDK_HAVE_CUDA`:
 * without it there is no cuda table and the cuda backend reports VIDK_ERR_NODEV.
 *
 * Adding a backend: a VidkBackend value and name (include/vidkern/vidkern.h, lib.c), a
 * VidkOps filled in full (entries marked optional may be NULL), and its case in lib.c's
 * table selection. Implementations receive validated arguments and must give the c
 * backend's bits. */
#ifndef VIDK_BACKEND_H
#define VIDK_BACKEND_H

#include "vidkern/vidkern.h"
#include "thread_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VidkOps {
    /* Runs jobs 0..n_jobs-1 of fn, in any order; returns when all are done. */
    void (*run)(VidkContext *ctx, int n_jobs, VidkJobFn fn, void *arg);
    struct {
        int (*frame)(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref, int mvx,
                     int mvy, VidkBlockSize bs, uint32_t *sads);
    } sad;
    struct {
        int (*search)(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                      const VidkMeParams *p, VidkMeField *out);
    } me;
    struct {
        int (*batch_inverse)(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic);
        int (*frame_inverse)(VidkContext *ctx, const VidkH264CoefFrame *fr, VidkPicture *pic);
        int (*batch_forward)(VidkContext *ctx, const VidkPicture *src, const VidkPicture *pred,
                             VidkH264CoefFrame *fr, VidkH264Batch *b);
    } h264;
    struct {
        int (*forward)(VidkContext *ctx, VidkHevcBatch *b);
        int (*inverse)(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic);
    } hevc;
    /* The coding loop, per encoder (src/enc/enc.h); close releases what open made, also after
     * a failed open. receive codes the oldest queued picture. */
    struct {
        int (*open)(VidkEncoder *e);
        int (*send)(VidkEncoder *e, const VidkPicture *src);
        int (*receive)(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                       VidkEncFrameInfo *info);
        void (*close)(VidkEncoder *e);
        /* Optional (B-frames' adaptive placement, docs/ENCODE.md §16): *zero = how many of
         * frame j's 16x16 blocks have vector (0, 0) against frame j - 1 (vidk_enc_la_params),
         * for a frame j >= 1 sent and not yet received. A backend that has it keeps the
         * sources itself (vidk_enc_send makes no copy); NULL: src/enc/encode.c searches the
         * copies with vidk_me_search. */
        int (*still)(VidkEncoder *e, int64_t j, int *zero);
    } enc;
    /* Devices and context state; every entry optional (NULL: no device, nothing to open,
     * registration is a no-op). close must accept a context whose open failed. */
    struct {
        int (*count)(void);
        int (*info)(int ordinal, VidkDeviceInfo *info);
        int (*open)(VidkContext *ctx);
        void (*close)(VidkContext *ctx);
        int (*host_register)(VidkContext *ctx, void *ptr, size_t bytes);
        int (*host_unregister)(VidkContext *ctx, void *ptr);
    } dev;
} VidkOps;

/* The cuda table (src/cuda/cuda_ops.cu), only in builds with CUDA. */
extern const VidkOps vidk_ops_cuda;

static inline void vidk_run_serial(VidkContext *ctx, int n_jobs, VidkJobFn fn, void *arg) {
    (void)ctx;
    for (int j = 0; j < n_jobs; j++)
        fn(arg, j, 0);
}

/* CPU implementations (arguments validated by the public function). */
int vidk_sad_frame_cpu(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                       int mvx, int mvy, VidkBlockSize bs, uint32_t *sads);
/* me.c: the reference, block by block (any bit depth); me_search.c: the fast 8-bit driver
 * over the search_quad dsp function (other bit depths: the reference). */
int vidk_me_search_ref(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                       const VidkMeParams *p, VidkMeField *out);
int vidk_me_search_fast(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        const VidkMeParams *p, VidkMeField *out);
int vidk_h264_batch_inverse_cpu(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic);
int vidk_h264_frame_inverse_cpu(VidkContext *ctx, const VidkH264CoefFrame *fr,
                                VidkPicture *pic);
int vidk_h264_batch_forward_cpu(VidkContext *ctx, const VidkPicture *src,
                                const VidkPicture *pred, VidkH264CoefFrame *fr,
                                VidkH264Batch *b);
int vidk_hevc_batch_forward_cpu(VidkContext *ctx, VidkHevcBatch *b);
int vidk_hevc_batch_inverse_cpu(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic);
int vidk_enc_cpu_open(VidkEncoder *e);
int vidk_enc_cpu_send(VidkEncoder *e, const VidkPicture *src);
int vidk_enc_cpu_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                         VidkEncFrameInfo *info);
void vidk_enc_cpu_close(VidkEncoder *e);

#ifdef __cplusplus
}
#endif
#endif
