/* C-linkage interface of the CUDA backend. No CUDA type appears here: the C side sees
 * only opaque pointers and error codes. The library reaches the backend only through its
 * table, vidk_ops_cuda (src/cuda/cuda_ops.cu, backend.h); a build without CUDA has no
 * table and none of these functions. Tests and benchmarks may call them directly.
 *
 * Each kernel family has its own C-linkage header next to this one (me_cuda.h,
 * h264_cuda.h, hevc_cuda.h) declaring its launchers and host glue. */
#ifndef VIDK_CUDA_BACKEND_H
#define VIDK_CUDA_BACKEND_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

int vidk_cuda_count(void);
int vidk_cuda_info(int ordinal, VidkDeviceInfo *info);

/* Create/destroy ctx->cuda: select the device, create streams and events. */
int vidk_cuda_open(VidkContext *ctx);
void vidk_cuda_close(VidkContext *ctx);

/* Buffers owned by the context, allocated on first use and reused: a request for
 * `bytes` returns the slot's buffer, reallocated only when it must grow. Device
 * buffers come from cudaMalloc, host buffers are pinned (cudaHostAlloc). Each family
 * uses only its own slots. Pointers are at least 256-byte aligned; growing waits for the
 * context's streams, frees the old buffer and does not keep its contents. Returns 0;
 * VIDK_ERR(EINVAL) for a slot outside [0, VIDK_SLOT_COUNT), bytes 0 or ptr NULL;
 * VIDK_ERR(ENOMEM) (logged; the slot is then empty); VIDK_ERR_NODEV without CUDA state.
 * All buffers are freed by vidk_cuda_close(). */
enum VidkCudaSlot {
    VIDK_SLOT_SAD_CUR = 0,
    VIDK_SLOT_SAD_REF,
    VIDK_SLOT_SAD_OUT,
    VIDK_SLOT_ME_FIRST = 8,    /* 8..31: motion estimation */
    VIDK_SLOT_H264_FIRST = 32, /* 32..55: H.264 transforms */
    VIDK_SLOT_HEVC_FIRST = 56, /* 56..79: HEVC transforms */
    VIDK_SLOT_ENC_FIRST = 80,  /* 80..111: the coding loop */
    VIDK_SLOT_COUNT = 112
};
int vidk_cuda_device_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr);
int vidk_cuda_host_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr);

/* The context's streams (cudaStream_t as void *), 0 <= i < vidk_cuda_stream_count(). */
int vidk_cuda_stream_count(const VidkContext *ctx);
void *vidk_cuda_stream(const VidkContext *ctx, int i);

/* Device time of the last completed device call of a context, per stage, from CUDA
 * events (always recorded: seven cudaEventRecord per call, a small host cost).
 * A stage spans from its first begin to its last end in that call, so in multi-stream
 * pipelines stages overlap and h2d + kernel + d2h can exceed total. total_ms spans from
 * the call's first device operation to the end of its last stage. Host-side work
 * (staging copies into pinned buffers, argument checks) is not included: benchmarks
 * measure end-to-end time with a host clock. Stages a call did not run read 0. */
typedef struct VidkCudaTiming {
    double h2d_ms, kernel_ms, d2h_ms, total_ms;
    size_t h2d_bytes, d2h_bytes;
} VidkCudaTiming;

/* Fill *t with the timing of the last call that completed without error.
 * Returns 0; VIDK_ERR(EINVAL) for NULL arguments; VIDK_ERR_NODEV when ctx has no CUDA
 * state (other backends, builds without CUDA); VIDK_ERR(EAGAIN) when no timed call has
 * completed yet (or the last one failed). */
int vidk_cuda_last_timing(const VidkContext *ctx, VidkCudaTiming *t);

/* Page-lock [ptr, ptr + bytes) for the context's device (cudaHostRegister, portable and
 * mapped) and remember the range; unregister by its start. Called by the public
 * vidk_host_register() / vidk_host_unregister() for cuda contexts only. */
int vidk_cuda_host_register(VidkContext *ctx, void *ptr, size_t bytes);
int vidk_cuda_host_unregister(VidkContext *ctx, void *ptr);

/* 1 when [ptr, ptr + bytes) lies inside one range registered on this context (the
 * device may copy it directly, asynchronously), else 0 (also for bytes 0, NULL, or a
 * context without CUDA state). */
int vidk_cuda_host_pinned(const VidkContext *ctx, const void *ptr, size_t bytes);

/* Whole-frame SAD map (vidk_sad_frame) on the device; arguments already validated. */
int vidk_cuda_sad_frame(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        int mvx, int mvy, VidkBlockSize bs, uint32_t *sads);

/* The coding loop on the device (src/cuda/encode.cu): the enc entries of the table. */
int vidk_cuda_enc_open(VidkEncoder *e);
int vidk_cuda_enc_send(VidkEncoder *e, const VidkPicture *src);
int vidk_cuda_enc_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                          VidkEncFrameInfo *info);
void vidk_cuda_enc_close(VidkEncoder *e);
int vidk_cuda_enc_still(VidkEncoder *e, int64_t j, int *zero);

#ifdef __cplusplus
}
#endif
#endif
