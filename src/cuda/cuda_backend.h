/* C-linkage interface of the CUDA backend. No CUDA type appears here: the C side sees
 * only opaque pointers and error codes. Without CUDA in the build (src/cuda_stub.c)
 * every entry reports VIDK_ERR_NODEV and the device count is 0. */
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

/* Whole-frame SAD map (vidk_sad_frame) on the device; arguments already validated. */
int vidk_cuda_sad_frame(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        int mvx, int mvy, VidkBlockSize bs, uint32_t *sads);

#ifdef __cplusplus
}
#endif
#endif
