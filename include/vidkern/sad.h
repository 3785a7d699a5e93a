/**
 * @file sad.h
 * @brief vidkern public API: the SAD family (sum of absolute differences).
 *
 * Included by vidkern/vidkern.h; include that, not this file.
 */
#ifndef VIDKERN_SAD_H
#define VIDKERN_SAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @name Frame SAD map */

/**
 * @brief SAD of every block of `cur` against `ref` displaced by one vector (mvx, mvy).
 *
 * The luma planes (8-bit) are covered by blocks of size `bs` in raster order; a
 * partial block at the right or bottom edge reads `cur` with edge replication, as
 * codecs pad sizes to a block multiple. Reference samples outside the picture take
 * the nearest edge sample. Result i = by * ceil(w / bw) + bx.
 *
 * @param ctx context (any backend; all give identical results).
 * @param cur, ref 8-bit pictures of equal luma size.
 * @param mvx, mvy displacement of the reference block, each in [-4096, 4096].
 * @param bs block size.
 * @param sads output array of ceil(w/bw) * ceil(h/bh) values.
 * @return 0; VIDK_ERR(EINVAL) for bad arguments or mismatched pictures;
 *         VIDK_ERR(ENOMEM); VIDK_ERR(EIO) for a device error (logged).
 */
VIDK_API int vidk_sad_frame(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                            int mvx, int mvy, VidkBlockSize bs, uint32_t *sads);

#ifdef __cplusplus
}
#endif
#endif
