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

/* Flag: ref has the samples of `cur` of the previous vidk_cuda_me_search* call on this
 * context (same size and bit depth; the caller guarantees it, nothing checks the
 * samples). The device copy of that cur is used and ref is not uploaded. ref must still
 * be a valid picture of cur's size: when the device copy is gone (a call of another size
 * in between, a failed call) ref is uploaded instead. */
#define VIDK_CUDA_ME_REF_IS_PREV_CUR 1u
/* Flag: cur has the samples of `next` of the previous vidk_cuda_me_search_seq call on
 * this context (same promise and fallback as above): cur was sent ahead, while the
 * previous frame was searched, and is not uploaded again. */
#define VIDK_CUDA_ME_CUR_IS_PREV_NEXT 2u

/* vidk_cuda_me_search with flags (0 or VIDK_CUDA_ME_REF_IS_PREV_CUR), for benchmarks and
 * encoders that search consecutive frames. Checks its arguments (VIDK_ERR(EINVAL)). */
int vidk_cuda_me_search_ex(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                           const VidkMeParams *p, VidkMeField *out, unsigned flags);

/* Sequence mode: search cur against ref like vidk_cuda_me_search_ex (flags: any of
 * VIDK_CUDA_ME_REF_IS_PREV_CUR, VIDK_CUDA_ME_CUR_IS_PREV_NEXT) and, when next is not
 * NULL (a picture of cur's size and bit depth), send next to the device while this
 * search runs, for the following call with VIDK_CUDA_ME_CUR_IS_PREV_NEXT. A stream of
 * frames f0, f1, ... then costs one upload per frame, hidden behind the search:
 *   seq(f1, f0, f2, 0), seq(f2, f1, f3, REF_IS_PREV_CUR | CUR_IS_PREV_NEXT), ...
 * Synchronous like the others: returns with out filled and every transfer finished.
 * Results are identical to vidk_cuda_me_search(cur, ref). Returns 0 or a negative error
 * (VIDK_ERR(EINVAL) for bad arguments or flags). */
int vidk_cuda_me_search_seq(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                            const VidkPicture *next, const VidkMeParams *p, VidkMeField *out,
                            unsigned flags);

/* Row pitch in samples of the 8-bit device planes vidk_cuda_me_search_dev reads. */
int vidk_cuda_me_pitch(int w);

/* Device-resident search for the coding loop (src/cuda/encode.cu): cur and ref are 8-bit
 * w x h luma planes in device memory with vidk_cuda_me_pitch(w) samples per row;
 * everything is queued on `stream` (a cudaStream_t): no transfer, no synchronisation.
 * On return res[bs] points to shape bs's results on the device (grid_w[bs] per row, the
 * layout of VidkMeField) for the shapes in p->shapes, NULL for the others; they stay valid
 * until the next motion search on ctx with the same `set` (0 or 1: two result buffers, so
 * that a B frame keeps the fields of both its lists; 2: keys and results of their own, for a
 * search on another stream beside them, the look-ahead's). p->pred must be NULL. Returns 0 or a
 * negative error (VIDK_ERR(EINVAL) for bad arguments). */
int vidk_cuda_me_search_dev(VidkContext *ctx, int w, int h, const uint8_t *cur,
                            const uint8_t *ref, const VidkMeParams *p, int set, void *stream,
                            const VidkMeResult **res, int *grid_w);

/* Loads the kernels vidk_cuda_me_search_dev(ctx, w, h, .., p, ..) launches, without
 * launching them (CUDA loads a kernel at its first launch): the coding loop asks at open.
 * Returns 0 or a negative error. */
int vidk_cuda_me_preload(VidkContext *ctx, int w, int h, const VidkMeParams *p);

#ifdef __cplusplus
}
#endif
#endif
