/* C-linkage interface of the CUDA backend. No CUDA type appears here: the C side sees
 * only opaque pointers and error codes. Without CUDA in the build (src/cuda_stub.c)
 * every entry reports VIDK_ERR_NODEV and the device count is 0.
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
 * uses only its own slots. */
enum VidkCudaSlot {
    VIDK_SLOT_SAD_CUR = 0,
    VIDK_SLOT_SAD_REF,
    VIDK_SLOT_SAD_OUT,
    VIDK_SLOT_ME_FIRST = 8,   /* 8..31: motion estimation */
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

/* Whole-frame SAD map (vidk_sad_frame) on the device; arguments already validated. */
int vidk_cuda_sad_frame(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        int mvx, int mvy, VidkBlockSize bs, uint32_t *sads);

#ifdef __cplusplus
}
#endif
#endif
