/**
 * @file hevc.h
 * @brief vidkern public API: HEVC transforms, quantisation and their inverses.
 *
 * Included by vidkern/vidkern.h; include that, not this file.
 *
 * Two levels of API:
 * - Block arrays (vidk_hevc_forward_blocks(), vidk_hevc_inverse_blocks()): n transform
 *   blocks (TBs) of one size with one QP: residual -> levels and levels -> residual.
 *   `vidkern xform --codec hevc` is a thin layer over these.
 * - Frames (VidkHevcBatch): the TBs of a whole frame grouped by size into contiguous
 *   lists (the grouping of Cobrnic et al. 2020, as a data structure a GPU consumes
 *   directly: no pointers inside records, 64-byte aligned int16 arrays). One call
 *   transforms and quantises every TB of a frame (vidk_hevc_batch_forward(), which also
 *   counts the non-zero levels of each TB and compacts the non-zero TBs), one call
 *   dequantises, inverse transforms and adds every TB to the prediction
 *   (vidk_hevc_batch_inverse(): the decoder's and the encoder's reconstruction).
 *
 * Arithmetic (identical on every backend; docs/HEVC.md has the derivations):
 * - Forward (HM's encoder arithmetic): residuals are first clipped to the domain
 *   [-(2^bitDepth - 1), 2^bitDepth - 1] (a no-op for residuals of in-range samples);
 *   rows are transformed first with the standard's integer matrix (DST-VII for intra
 *   luma 4x4), shift log2(N) + bitDepth - 9 with rounding, then columns, shift
 *   log2(N) + 6 with rounding, 32-bit exact, no clipping (every coefficient provably
 *   fits in 16 bits). Transform skip (4x4): coefficient = residual << (13 - bitDepth).
 *   Quantisation: level = sign(c) * ((|c| * Q + offset) >> qbits) clipped to
 *   [-32768, 32767], with Q = {26214, 23302, 20560, 18396, 16384, 14564}[qP % 6] (or
 *   (Q << 4) / m with a scaling matrix, HM's encoder), qbits = 14 + qP / 6 +
 *   (15 - bitDepth - log2(N)), offset = 171 << (qbits - 9) in I slices and
 *   85 << (qbits - 9) otherwise. No RDOQ, no sign hiding.
 * - Inverse (H.265 8.6.2 - 8.6.4, normative): d = Clip3(-32768, 32767,
 *   ((level * m * levelScale[qP % 6] << (qP / 6)) + (1 << (bdShift - 1))) >> bdShift),
 *   bdShift = bitDepth + log2(N) - 5, levelScale = {40, 45, 51, 57, 64, 72}, m = 16 or
 *   the scaling factor; columns first, (x + 64) >> 7 clipped to 16 bits (normative),
 *   then rows, (x + (1 << (19 - bitDepth))) >> (20 - bitDepth). Transform skip:
 *   r = ((d << 7) + (1 << (19 - bitDepth))) >> (20 - bitDepth). A residual written to
 *   an int16 array is clipped to [-32768, 32767] (only reachable with levels no encoder
 *   produces; the reconstruction Clip1(pred + r) is the same either way).
 *
 * Conventions: coefficient and residual blocks are raster order, c[y * N + x] (row y,
 * column x; the spec's d[x][y]). Every `qp` is the spec's qP = QP'Y or QP'C, i.e. QP plus
 * QpBdOffset = 6 * (bitDepth - 8): 0..51 for 8-bit video, up to 75 for 12-bit.
 *
 * @code
 *   VidkHevcBatch b;  vidk_hevc_batch_init(&b, 8);
 *   VidkHevcTb tb = {.x = 64, .y = 32, .plane = 0, .qp = 32,
 *                    .flags = VIDK_HEVC_TB_INTRA | VIDK_HEVC_TB_ISLICE};
 *   vidk_hevc_batch_add(&b, VIDK_HEVC_TB_8x8, &tb, residual64);  // ... every TB
 *   vidk_hevc_batch_forward(ctx, &b);        // levels, nnz, compacted levels
 *   vidk_hevc_batch_inverse(ctx, &b, &pic);  // pic: prediction -> reconstruction
 *   vidk_hevc_batch_free(&b);
 * @endcode
 */
#ifndef VIDKERN_HEVC_H
#define VIDKERN_HEVC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Lowest bit depth accepted. */
#define VIDK_HEVC_MIN_BITDEPTH 8
/** Highest bit depth accepted (Main 12). */
#define VIDK_HEVC_MAX_BITDEPTH 12
/** Highest qP accepted for a bit depth: 51 + QpBdOffset. */
#define VIDK_HEVC_MAX_QP(bitdepth) (51 + 6 * ((bitdepth)-8))

/** Transform block sizes (index = log2(N) - 2). */
typedef enum VidkHevcTbSize {
    VIDK_HEVC_TB_4x4 = 0,   /**< 4x4: DCT, DST-VII or transform skip */
    VIDK_HEVC_TB_8x8 = 1,   /**< 8x8 DCT */
    VIDK_HEVC_TB_16x16 = 2, /**< 16x16 DCT */
    VIDK_HEVC_TB_32x32 = 3, /**< 32x32 DCT */
    VIDK_HEVC_TB_SIZES = 4
} VidkHevcTbSize;

/** @return the side N of a TB size (4, 8, 16, 32), 0 for invalid values. */
VIDK_API int vidk_hevc_tb_side(VidkHevcTbSize size);

/** Per-TB flags (VidkHevcTb.flags, VidkHevcBlockParams.flags). */
enum VidkHevcTbFlags {
    /** CuPredMode is MODE_INTRA: selects the intra scaling matrix (matrixId = cIdx);
     *  without it the inter one (matrixId = 3 + cIdx). */
    VIDK_HEVC_TB_INTRA = 1 << 0,
    /** The TB belongs to an I slice: quantiser rounding offset 171/512 (HM); without it
     *  85/512 (P and B slices). Only the forward path reads it. */
    VIDK_HEVC_TB_ISLICE = 1 << 1,
    /** 4x4 only: DST-VII instead of the DCT (intra luma 4x4, 8.6.4.2 trType = 1). */
    VIDK_HEVC_TB_DST = 1 << 2,
    /** 4x4 only: transform skip (transform_skip_flag); excludes VIDK_HEVC_TB_DST. */
    VIDK_HEVC_TB_TSKIP = 1 << 3,
    VIDK_HEVC_TB_FLAGS_ALL = 15 /**< every defined bit; others must be zero */
};

/**
 * @brief Scaling factors m (H.265 7.4.5, ScalingFactor) of every size and matrixId.
 *
 * Raster order (m[y * N + x] = ScalingFactor[sizeId][matrixId][x][y]); values 1..255.
 * matrixId = cIdx for intra TBs, 3 + cIdx for inter TBs (32x32 uses all six too, as
 * with 4:4:4 chroma; HEVC version 1 streams code only 0 and 3 for 32x32).
 */
typedef struct VidkHevcScaling {
    uint8_t m4[6][16];    /**< 4x4 (also transform-skip blocks) */
    uint8_t m8[6][64];    /**< 8x8 */
    uint8_t m16[6][256];  /**< 16x16 */
    uint8_t m32[6][1024]; /**< 32x32 */
} VidkHevcScaling;

/** @brief Fill every matrix with 16 (flat: the same result as no scaling list). */
VIDK_API void vidk_hevc_scaling_flat(VidkHevcScaling *s);

/**
 * @brief Fill every matrix with the standard's default scaling lists (Table 7-5: flat
 * 4x4; Table 7-6: the intra and inter 8x8 lists, upsampled for 16x16 and 32x32 with a
 * DC value of 16).
 */
VIDK_API void vidk_hevc_scaling_default(VidkHevcScaling *s);

/**
 * @brief Set one matrix from a coded scaling list (H.265 7.4.5).
 *
 * @param s scaling factors to change.
 * @param size TB size (sizeId = size).
 * @param matrix_id 0..5 (see VidkHevcScaling).
 * @param list ScalingList[sizeId][matrixId][i] in coded (up-right diagonal) order:
 *        16 values for 4x4, 64 for the other sizes (an 8x8 list upsampled for 16x16 and
 *        32x32); each 1..255.
 * @param dc scaling_list_dc_coef_minus8 + 8 for 16x16 and 32x32 (1..255); ignored for
 *        4x4 and 8x8.
 * @return 0 or VIDK_ERR(EINVAL).
 */
VIDK_API int vidk_hevc_scaling_set(VidkHevcScaling *s, VidkHevcTbSize size, int matrix_id,
                                   const uint8_t *list, int dc);

/* ------------------------------------------------------------------------- */
/** @name Block arrays */

/** Parameters of the block-array API. Fill with vidk_hevc_default_block_params(). */
typedef struct VidkHevcBlockParams {
    VidkHevcTbSize size; /**< TB size; default 4x4 */
    int qp;              /**< qP (QP + QpBdOffset), 0..VIDK_HEVC_MAX_QP(bitdepth); default 26 */
    int bitdepth;        /**< VIDK_HEVC_MIN_BITDEPTH..VIDK_HEVC_MAX_BITDEPTH; default 8 */
    unsigned flags; /**< VidkHevcTbFlags; default VIDK_HEVC_TB_INTRA | VIDK_HEVC_TB_ISLICE */
    /** Scaling factors of this size (N * N values 1..255, raster), or NULL for flat
     *  (m = 16). Default NULL. */
    const uint8_t *scaling;
    uint8_t reserved[16]; /**< zero */
} VidkHevcBlockParams;

/** @brief Defaults: 4x4 DCT, qP 26, bit depth 8, intra TB of an I slice, flat. */
VIDK_API void vidk_hevc_default_block_params(VidkHevcBlockParams *p);

/**
 * @brief Encoder path on an array of blocks: forward transform and quantisation.
 *
 * @param ctx context (c, simd and threads identical; cuda runs this on the CPU).
 * @param p parameters.
 * @param res n residual blocks of N * N int16 values each (raster, contiguous; no
 *        alignment required). Values outside [-(2^bitDepth - 1), 2^bitDepth - 1] are
 *        clipped to that range first.
 * @param lev receives n blocks of levels (same layout); may equal res (in place), must
 *        not otherwise overlap it.
 * @param n number of blocks (0 is allowed).
 * @param nnz if not NULL, receives n counts: the non-zero levels of each block.
 * @return 0; VIDK_ERR(EINVAL) for NULL arrays (with n > 0), a bad size, qp, bit depth,
 *         flags (DST or transform skip on a size other than 4x4, both together, unknown
 *         bits), a scaling value 0, or non-zero reserved bytes.
 */
VIDK_API int vidk_hevc_forward_blocks(VidkContext *ctx, const VidkHevcBlockParams *p,
                                      const int16_t *res, int16_t *lev, size_t n,
                                      uint16_t *nnz);

/**
 * @brief Decoder path on an array of blocks: dequantisation and inverse transform.
 *
 * @param lev n blocks of levels (any int16 value).
 * @param res receives n residual blocks (clipped to 16 bits, see the file comment); may
 *        equal lev, must not otherwise overlap it.
 * @return 0; VIDK_ERR(EINVAL) as for vidk_hevc_forward_blocks().
 */
VIDK_API int vidk_hevc_inverse_blocks(VidkContext *ctx, const VidkHevcBlockParams *p,
                                      const int16_t *lev, int16_t *res, size_t n);

/* ------------------------------------------------------------------------- */
/** @name Frame batches */

/**
 * @brief One transform block of a batch: 8 bytes, no pointers (a GPU copies the array
 * as it is).
 */
typedef struct VidkHevcTb {
    uint16_t x, y;    /**< top-left sample in its plane; multiples of the TB side N */
    uint8_t plane;    /**< cIdx: 0 Y, 1 Cb, 2 Cr */
    uint8_t qp;       /**< qP: QP + QpBdOffset, 0..VIDK_HEVC_MAX_QP(bitdepth) */
    uint8_t flags;    /**< VidkHevcTbFlags (DST and TSKIP only in the 4x4 list) */
    uint8_t reserved; /**< zero */
} VidkHevcTb;

/**
 * @brief The TBs of one size: parallel arrays, entry i is one TB.
 *
 * The arrays have room for `capacity` TBs; `count` are used. res, lev and nz_lev are
 * 64-byte aligned and hold N * N int16 values per TB (raster), TB i at + i * N * N.
 * The compacted output lists the TBs with at least one non-zero level, in increasing
 * index order: nz_index[j] is the TB's index, its levels are at nz_lev + j * N * N.
 * Fill tb[] and res[] (directly after vidk_hevc_batch_reserve(), or with
 * vidk_hevc_batch_add()); the library writes lev, nnz and the compacted output.
 */
typedef struct VidkHevcTbList {
    uint32_t count;     /**< TBs in the list */
    uint32_t capacity;  /**< allocated entries */
    VidkHevcTb *tb;     /**< TB records */
    int16_t *res;       /**< residuals (forward input; inverse output without a picture) */
    int16_t *lev;       /**< levels (forward output, inverse input) */
    uint16_t *nnz;      /**< non-zero levels per TB (forward output) */
    uint32_t nz_count;  /**< TBs with nnz > 0 (forward output) */
    uint32_t *nz_index; /**< nz_count indices into tb[] (forward output) */
    int16_t *nz_lev;    /**< nz_count * N * N levels of those TBs (forward output) */
} VidkHevcTbList;

/** @brief A frame's TBs grouped by size, with the parameters they share. */
typedef struct VidkHevcBatch {
    int bitdepth;      /**< VIDK_HEVC_MIN_BITDEPTH..VIDK_HEVC_MAX_BITDEPTH, all planes */
    int scaling_lists; /**< 0: flat (m = 16, scaling_list_enabled_flag = 0); 1: use `scaling` */
    /** 1 (after init): vidk_hevc_batch_forward() copies the levels of the non-zero TBs
     *  into nz_lev; 0: it fills only nz_count and nz_index (saves a copy of the levels
     *  when the caller reads them through the index). */
    int compact_levels;
    VidkHevcScaling scaling;                 /**< scaling factors (flat after init) */
    VidkHevcTbList list[VIDK_HEVC_TB_SIZES]; /**< indexed by VidkHevcTbSize */
    void *priv;                              /**< library workspace; do not touch */
} VidkHevcBatch;

/**
 * @brief Make an empty batch (no allocation): bit depth `bitdepth` (clamped to the
 * accepted range), flat scaling, compact_levels 1, every list empty.
 */
VIDK_API void vidk_hevc_batch_init(VidkHevcBatch *b, int bitdepth);

/** @brief Free a batch's arrays and make it empty (bit depth and scaling kept). NULL is a
 * no-op. */
VIDK_API void vidk_hevc_batch_free(VidkHevcBatch *b);

/** @brief Set every list's count to 0, keeping the allocations. */
VIDK_API void vidk_hevc_batch_clear(VidkHevcBatch *b);

/**
 * @brief Make room for `capacity` TBs in list `size` (the existing entries are kept).
 * @return 0; VIDK_ERR(EINVAL) for a bad size or capacity above 2^26; VIDK_ERR(ENOMEM).
 */
VIDK_API int vidk_hevc_batch_reserve(VidkHevcBatch *b, VidkHevcTbSize size, uint32_t capacity);

/**
 * @brief Append one TB to list `size`, growing it as needed.
 * @param tb the record (copied; not validated here).
 * @param res its N * N residuals, or NULL for zeros.
 * @return the TB's index (>= 0); VIDK_ERR(EINVAL); VIDK_ERR(ENOMEM).
 */
VIDK_API int vidk_hevc_batch_add(VidkHevcBatch *b, VidkHevcTbSize size, const VidkHevcTb *tb,
                                 const int16_t *res);

/**
 * @brief Residuals of every TB from two pictures: res = src - pred at the TB's position.
 * @param src, pred pictures of equal size, chroma format and bit depth (the batch's).
 * @return 0; VIDK_ERR(EINVAL) for mismatched pictures or a TB outside its plane, not
 *         aligned to its size, or with a plane the pictures lack.
 */
VIDK_API int vidk_hevc_batch_residual(VidkContext *ctx, VidkHevcBatch *b,
                                      const VidkPicture *src, const VidkPicture *pred);

/**
 * @brief Encoder path for a whole frame: every TB's residual is transformed and
 * quantised into lev; nnz counts its non-zero levels; the TBs with any non-zero level
 * are listed in nz_index and (with compact_levels) their levels copied to nz_lev
 * (all-zero TBs can be skipped downstream).
 *
 * @param ctx context: c, simd, threads and cuda give identical output.
 * @param b batch; x and y of the records are not read.
 * @return the number of non-zero TBs over all lists (saturated at INT32_MAX);
 *         VIDK_ERR(EINVAL) for a bad record (qp, plane, flags, reserved), bit depth or
 *         scaling value (lev may be partly written); VIDK_ERR(ENOMEM);
 *         VIDK_ERR(EIO) for a device error on cuda (logged).
 */
VIDK_API int vidk_hevc_batch_forward(VidkContext *ctx, VidkHevcBatch *b);

/**
 * @brief Decoder / reconstruction path for a whole frame: every TB's levels are
 * dequantised, inverse transformed and added to the prediction in `pic`, clipped to
 * 0..2^bitDepth - 1 (picture construction, Clip1). TBs whose levels are all zero are skipped
 * (their residual is zero). The lists are applied in size order (4x4 first), each in index
 * order; overlapping TBs (allowed, unusual) therefore give the same picture on every
 * backend.
 *
 * @param pic the prediction, overwritten by the reconstruction: bit depth equal to the
 *        batch's (8-bit samples for 8, 16-bit for 9..12), every TB inside its plane. With
 *        pic NULL the residuals are written to each list's res array instead.
 * @return 0; VIDK_ERR(EINVAL) for a bad record, a TB outside its plane or not aligned
 *         to its size (pic is then unchanged), or mismatched bit depth;
 *         VIDK_ERR(ENOMEM); VIDK_ERR(EIO) for a device error on cuda (logged).
 */
VIDK_API int vidk_hevc_batch_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic);

#ifdef __cplusplus
}
#endif
#endif
