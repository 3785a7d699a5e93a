/**
 * @file gen.h
 * @brief Deterministic synthetic test video with real, known motion.
 *
 * A generated clip shows a textured background that pans (integer and sub-sample
 * steps of several samples per frame, the direction changing every 12..36 frames),
 * 4..8 textured objects that move independently (up to about 20 samples per frame,
 * some bouncing off the borders, some leaving the picture and coming back on the
 * other side), mild noise and a slow global brightness change. Textures are sums of
 * value-noise octaves (cells of 2..128 samples) over sharp-edged rectangles, discs and
 * stripe patches (edges softened by one sample, as a camera's optics would), so blocks
 * have camera-like statistics (8x8 block deviation, smoothness) and full-search motion
 * estimation finds the true motion. Chroma textures are correlated with luma (shared
 * edges, a share of the luma detail).
 *
 * Only integer arithmetic is used: the same parameters and seed give the same bytes on
 * every machine and compiler. Frames are rendered independently (any order; a generator
 * is read-only after vidk_gen_open(), so several threads may render frames of one
 * generator at once). Rendering does not depend on VidkGenParams.frames: a 10-frame
 * clip is the prefix of the 100-frame clip with the same other parameters. Luma does
 * not depend on the chroma format, and every bit depth rounds the same 12-bit image.
 *
 * @code
 *   VidkGenParams p;
 *   vidk_gen_default(&p);
 *   p.w = 1920; p.h = 1080;
 *   VidkGen *g = NULL;
 *   VidkPicture pic;
 *   if (vidk_gen_open(&g, &p) < 0 ||
 *       vidk_picture_alloc(&pic, p.w, p.h, p.chroma, p.bitdepth, 64) < 0) ...;
 *   for (int t = 0; t < p.frames; t++) vidk_gen_frame(g, t, &pic);
 *   vidk_picture_free(&pic);
 *   vidk_gen_close(&g);
 * @endcode
 */
#ifndef VIDK_TOOLS_GEN_H
#define VIDK_TOOLS_GEN_H

#include <stdint.h>

#include "vidkern/vidkern.h"

/** Parameters of a generated clip. Fill with vidk_gen_default() first. */
typedef struct VidkGenParams {
    int w, h;          /**< luma size, 1..VIDK_MAX_PICTURE_SIDE (16x16 and up is typical) */
    int frames;        /**< number of frames (>= 1); informative, see the file comment */
    int bitdepth;      /**< 8 or 10 (9..12 also work); all bits carry information */
    uint32_t seed;     /**< same seed + params = same bytes on every machine */
    VidkChroma chroma; /**< 4:2:0 default; 4:0:0, 4:2:2, 4:4:4 supported */
} VidkGenParams;

/** @brief Defaults: 352x288, 30 frames, 8 bit, seed 1, 4:2:0. */
void vidk_gen_default(VidkGenParams *p);

/** Opaque generator (textures and motion paths of one parameter set). */
typedef struct VidkGen VidkGen;

/**
 * @brief Create a generator: builds the textures (periodic tiles of 256..2048 samples a
 *        side; roughly 0.1 s of one core for the 2048 tile used above 1024x1024).
 * @param[out] g receives the generator; NULL on failure.
 * @param p parameters.
 * @return 0; VIDK_ERR(EINVAL) for NULL or out-of-range parameters; VIDK_ERR(ENOMEM).
 */
int vidk_gen_open(VidkGen **g, const VidkGenParams *p);

/**
 * @brief Render frame `frame` into pic and pad its margin (edge replication).
 *
 * @param g generator.
 * @param frame 0-based frame index, >= 0 (any order; may exceed params.frames).
 * @param pic picture of the parameters' size, chroma format and bit depth (e.g. from
 *        vio_picture_alloc() or vidk_picture_alloc()), any padding.
 * @return 0; VIDK_ERR(EINVAL) for a mismatched picture or a negative frame;
 *         VIDK_ERR(ENOMEM).
 */
int vidk_gen_frame(VidkGen *g, int frame, VidkPicture *pic);

/** @brief Destroy a generator; *g is set to NULL. NULL or *g NULL is a no-op. */
void vidk_gen_close(VidkGen **g);

/**
 * @brief Ground truth of the background motion.
 *
 * Luma sample (x, y) of frame `frame` shows (outside the objects) the background
 * texture at (x + *x16 / 16, y + *y16 / 16). So for a background block of frame t
 * predicted from reference frame r, the true motion vector (reference displacement, as
 * in vidk_sad_frame()) is ((pan(t) - pan(r)) / 16) in luma samples; it is integer
 * when both differences are multiples of 16.
 *
 * @param g generator.
 * @param frame frame index >= 0.
 * @param[out] x16, y16 background offset in 1/16 luma samples (not wrapped).
 * @return 0 or VIDK_ERR(EINVAL).
 */
int vidk_gen_pan(const VidkGen *g, int frame, int64_t *x16, int64_t *y16);

/** Position of one moving object in one frame (luma samples). */
typedef struct VidkGenObject {
    int x, y;     /**< top-left of the bounding box (may be outside the picture) */
    int w, h;     /**< bounding box size; the shape lies inside it */
    int mvx, mvy; /**< true motion vector from this frame to the previous one:
                       position(frame - 1) - position(frame); 0 for frame 0. Object
                       samples of this frame equal the previous frame's samples at this
                       displacement (unless the object wrapped around the picture). */
} VidkGenObject;

/**
 * @brief Where the objects are in frame `frame` (front-most last).
 * @param g generator.
 * @param frame frame index >= 0.
 * @param[out] obj array of `max` entries (may be NULL when max is 0).
 * @param max capacity of obj.
 * @return the number of objects of the clip (which may exceed max: only the first max
 *         are written), or VIDK_ERR(EINVAL).
 */
int vidk_gen_objects(const VidkGen *g, int frame, VidkGenObject *obj, int max);

#endif
