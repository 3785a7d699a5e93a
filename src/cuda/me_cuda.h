/* C-linkage entry of the CUDA motion search (src/cuda/me.cu). */
#ifndef VIDK_ME_CUDA_H
#define VIDK_ME_CUDA_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* vidk_me_search on the device; arguments already validated by the caller. */
int vidk_cuda_me_search(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        const VidkMeParams *p, VidkMeField *out);

#ifdef __cplusplus
}
#endif
#endif
