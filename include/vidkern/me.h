/**
 * @file me.h
 * @brief vidkern public API: full-search integer-pel motion estimation.
 *
 * Included by vidkern/vidkern.h; include that, not this file.
 *
 * For every block of the current picture, every candidate vector (mvx, mvy) with both
 * components in [-R, R] is evaluated against the reference picture; the vector with
 * the lowest cost wins. 4x4 SADs are the base: they are summed into the seven H.264
 * partition shapes of each 16x16 macroblock (16x16, 16x8, 8x16, 8x8, 8x4, 4x8, 4x4:
 * 41 partitions) and optionally 32x32 and 64x64 blocks, each with its own best vector.
 *
 * Contracts (identical on every backend):
 * - cost = SAD + lambda * (bits(mvx - px) + bits(mvy - py)), where bits() is the length
 *   of the signed Exp-Golomb code (vidk_me_mv_bits) and (px, py) the predictor.
 * - Reference samples outside the picture take the nearest edge sample.
 * - Current-picture samples beyond the right/bottom edge (partial blocks when a size is
 *   not a multiple of the block size) take the nearest edge sample too.
 * - Ties: lowest cost, then smallest |mvx| + |mvy|, then raster order of the candidate
 *   (mvy from -R to R, then mvx from -R to R).
 *
 * @code
 *   VidkMeParams p;  vidk_me_default_params(&p);
 *   p.range = 32;  p.shapes = VIDK_ME_SHAPES_H264;
 *   VidkMeField f;  vidk_me_field_alloc(&f, cur.w, cur.h, p.shapes);
 *   int err = vidk_me_search(ctx, &cur, &ref, &p, &f);
 *   VidkMeResult r = f.res[VIDK_BLOCK_16x16][mby * f.grid_w[VIDK_BLOCK_16x16] + mbx];
 *   vidk_me_field_free(&f);
 * @endcode
 */
#ifndef VIDKERN_ME_H
#define VIDKERN_ME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest accepted search range R. */
#define VIDK_ME_MAX_RANGE 256
/** Largest accepted lambda. */
#define VIDK_ME_MAX_LAMBDA 65535

/** Bit of a block size in VidkMeParams.shapes. */
#define VIDK_ME_SHAPE(bs) (1u << (bs))
/** The seven H.264 partition shapes (41 partitions per macroblock). */
#define VIDK_ME_SHAPES_H264                                                                    \
    (VIDK_ME_SHAPE(VIDK_BLOCK_4x4) | VIDK_ME_SHAPE(VIDK_BLOCK_8x4) |                           \
     VIDK_ME_SHAPE(VIDK_BLOCK_4x8) | VIDK_ME_SHAPE(VIDK_BLOCK_8x8) |                           \
     VIDK_ME_SHAPE(VIDK_BLOCK_16x8) | VIDK_ME_SHAPE(VIDK_BLOCK_8x16) |                         \
     VIDK_ME_SHAPE(VIDK_BLOCK_16x16))
/** Every shape, H.264 partitions plus 32x32 and 64x64. */
#define VIDK_ME_SHAPES_ALL                                                                     \
    (VIDK_ME_SHAPES_H264 | VIDK_ME_SHAPE(VIDK_BLOCK_32x32) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64))

/* Member alignment: C++11 and C11 keywords; GCC / Clang and MSVC forms for older C. */
#if defined(__cplusplus)
#define VIDK_ALIGNAS(n) alignas(n)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define VIDK_ALIGNAS(n) _Alignas(n)
#elif defined(__GNUC__)
#define VIDK_ALIGNAS(n) __attribute__((aligned(n)))
#elif defined(_MSC_VER)
#define VIDK_ALIGNAS(n) __declspec(align(n))
#else
#error "vidkern/me.h: no way to align VidkMv to 4 bytes with this compiler"
#endif

/** An integer-pel motion vector (reference position minus block position). 4-byte aligned:
 *  a vector is loaded and stored as one 32-bit word (the same size, 4 bytes). */
typedef struct VidkMv {
    VIDK_ALIGNAS(4) int16_t x;
    int16_t y;
} VidkMv;

/** Parameters of vidk_me_search(); fill with vidk_me_default_params() first. */
typedef struct VidkMeParams {
    int range;       /**< R: both MV components in [-R, R]; 0..VIDK_ME_MAX_RANGE */
    unsigned shapes; /**< mask of VIDK_ME_SHAPE(bs) to compute; not 0 */
    unsigned lambda; /**< 0 = pure SAD; 0..VIDK_ME_MAX_LAMBDA */
    /** Predictor per 16x16 macroblock (mb_w * mb_h entries, raster order) or NULL for
     *  (0, 0). Every partition of a macroblock uses its macroblock's predictor; a 32x32
     *  or 64x64 block uses the predictor of its top-left macroblock. Only read when
     *  lambda > 0. */
    const VidkMv *pred;
    /** 0 or VIDK_ME_REF_IS_PREV_CUR: hints a backend may use to move less data; results
     *  are identical with or without them. */
    unsigned flags;
    uint8_t reserved[28]; /**< zero */
} VidkMeParams;

/** VidkMeParams.flags: `ref` has the samples of `cur` of the previous vidk_me_search() call
 *  on this context (the next frame of a sequence: search f1 against f0, then f2 against
 *  f1 with this flag, ...). The caller promises it; nothing checks the samples. The cuda
 *  backend then searches against its device copy of that picture instead of uploading
 *  ref (and uploads ref when the copy is gone, e.g. after a call of another size); the
 *  CPU backends ignore it. ref must still be a valid picture of cur's size. */
#define VIDK_ME_REF_IS_PREV_CUR 1u

/** Best candidate of one block. */
typedef struct VidkMeResult {
    VidkMv mv;     /**< best vector */
    uint32_t cost; /**< its cost (SAD + lambda * bits) */
    uint32_t sad;  /**< its SAD */
} VidkMeResult;

/**
 * @brief Motion field: per requested shape, one result per block in raster order.
 *
 * For the H.264 shapes the grid covers mb_w*16 x mb_h*16 samples (grid_w[bs] =
 * mb_w * 16 / width of bs); for 32x32 and 64x64 it covers ceil(w/32) x ceil(h/32) and
 * ceil(w/64) x ceil(h/64) blocks. res[bs] is NULL for shapes not in `shapes`.
 */
typedef struct VidkMeField {
    int w, h;                            /**< picture size the field is for */
    int mb_w, mb_h;                      /**< 16x16 macroblocks across and down */
    unsigned shapes;                     /**< shapes allocated */
    int grid_w[VIDK_BLOCK_COUNT];        /**< blocks across, per shape */
    int grid_h[VIDK_BLOCK_COUNT];        /**< blocks down, per shape */
    VidkMeResult *res[VIDK_BLOCK_COUNT]; /**< results per shape, or NULL */
} VidkMeField;

/** @brief Defaults: R = 16, shapes = 16x16 only, lambda = 0, no predictor. */
VIDK_API void vidk_me_default_params(VidkMeParams *p);

/**
 * @brief Allocate a motion field for a w x h picture and the given shapes.
 * @return 0; VIDK_ERR(EINVAL) for bad sizes (1..VIDK_MAX_PICTURE_SIDE) or shapes;
 *         VIDK_ERR(ENOMEM).
 */
VIDK_API int vidk_me_field_alloc(VidkMeField *f, int w, int h, unsigned shapes);

/** @brief Free a field from vidk_me_field_alloc() and zero it. NULL is a no-op. */
VIDK_API void vidk_me_field_free(VidkMeField *f);

/** @return the signed Exp-Golomb code length of v in bits (1 for 0, 3 for +-1, ...). */
VIDK_API unsigned vidk_me_mv_bits(int v);

/**
 * @brief Full search of every block of `cur` in `ref` (luma planes).
 *
 * @param ctx context; the result is identical on every backend.
 * @param cur, ref pictures of equal size and bit depth (8..16 bits).
 * @param p parameters.
 * @param out field from vidk_me_field_alloc() for cur's size with at least p->shapes.
 * @return 0; VIDK_ERR(EINVAL) for mismatched pictures, R or lambda out of range, a
 *         field of the wrong size or shapes, unknown p->flags; VIDK_ERR(ENOMEM);
 *         VIDK_ERR(EIO) for a
 *         device error (logged).
 */
VIDK_API int vidk_me_search(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                            const VidkMeParams *p, VidkMeField *out);

#ifdef __cplusplus
}
#endif
#endif
