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

/* Flag of vidk_cuda_me_search_ex: ref has the samples of `cur` of the previous
 * vidk_cuda_me_search* call on this context (same size and bit depth; the caller
 * guarantees it, nothing checks the samples). The device copy of that cur is used and
 * ref is not uploaded: a frame sequence crosses PCIe once per frame. ref must still be a
 * valid picture of cur's size. */
#define VIDK_CUDA_ME_REF_IS_PREV_CUR 1u

/* vidk_cuda_me_search with flags (0 or VIDK_CUDA_ME_REF_IS_PREV_CUR), for benchmarks and
 * encoders that search consecutive frames. Checks its arguments (VIDK_ERR(EINVAL)). */
int vidk_cuda_me_search_ex(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                           const VidkMeParams *p, VidkMeField *out, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
