/**
 * @file h264.h
 * @brief vidkern public API: H.264/AVC transforms, quantisation and their inverses.
 *
 * Included by vidkern/vidkern.h; include that, not this file.
 *
 * Two levels of API:
 * - Block arrays (vidk_h264_forward_blocks(), vidk_h264_inverse_blocks()): n blocks of
 *   one kind (4x4, 8x8, or a DC matrix) with one QP, residual <-> levels. The
 *   `vidkern xform --codec h264` command is a thin layer over these.
 * - Frames: a dense coefficient frame (VidkH264CoefFrame: per-plane int16 level planes
 *   plus per-macroblock QP and type) is compacted into a batch (VidkH264Batch): the
 *   non-zero transform blocks only, separated by size into contiguous lists (the
 *   zero-block compaction and size separation of Wang et al. 2013, as a data structure a
 *   GPU consumes directly). vidk_h264_batch_inverse() is the decoder's fused path
 *   (dequantise + inverse transform + add to the prediction, clipped, in place);
 *   vidk_h264_batch_forward() is the encoder's (residual, transform, quantise, from
 *   source and prediction pictures). A sparse packing (significance mask + values) of a
 *   batch and a byte count of each representation go further than the paper.
 *
 * Coefficient layout: every matrix is in raster order, c[y * N + x] (row y, column x),
 * i.e. after the inverse zig-zag / field scan of 8.5.6 / 8.5.7 (the entropy decoder's
 * job). In the spec's notation c_ij, i is the row and j the column.
 *
 * Arithmetic (identical on every backend, see docs/H264.md):
 * - Inverse path (dequantisation, DC transforms, inverse transforms): levels are int16;
 *   everything after is exact 32-bit two's-complement integer arithmetic that wraps
 *   modulo 2^32, with arithmetic (flooring) right shifts. For every input a conforming
 *   stream can carry no intermediate leaves the spec's ranges, so the result is the
 *   standard's; for other inputs the result is still defined and the same everywhere.
 * - Forward path: the residual is int16, the transforms are exact in 32 bits; the
 *   quantiser is level = sign(w) * min(32767, (|w| * MF + f) >> qbits) computed exactly
 *   (64-bit product), with the standard multiplication factors MF, qbits = 15 + qP/6
 *   (4x4), 16 + qP/6 (8x8, chroma DC) or 17 + qP/6 (luma DC), and the dead zone
 *   f = 2^qbits / 3 (intra) or / 6 (inter).
 *
 * QP convention: every `qp` here is the spec's qP' (QP'Y or QP'C), i.e. QP plus
 * QpBdOffset = 6 * (bitDepth - 8): 0..51 for 8-bit video, up to 87 for 14-bit.
 *
 * @code
 *   // decoder: coefficients of a frame -> reconstructed picture (pred, in place)
 *   VidkH264CoefFrame fr;  vidk_h264_coef_frame_alloc(&fr, 1920, 1088, VIDK_CHROMA_420, 8);
 *   // ... fill fr.mb[] (qp, flags) and fr.coef[plane][] from the entropy decoder ...
 *   VidkH264Batch b;  vidk_h264_batch_init(&b);
 *   vidk_h264_batch_build(ctx, &b, &fr);          // compacted, separated by size
 *   vidk_h264_batch_inverse(ctx, &b, &pic);        // pic holds the prediction
 *   vidk_h264_batch_free(&b);  vidk_h264_coef_frame_free(&fr);
 * @endcode
 */
#ifndef VIDKERN_H264_H
#define VIDKERN_H264_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Highest bit depth whose QP offset (qP' up to 51 + 6 * (14 - 8) = 87) is accepted. */
#define VIDK_H264_MAX_BITDEPTH 14
/** Highest qP' accepted for a bit depth: 51 + QpBdOffset. */
#define VIDK_H264_MAX_QP(bitdepth) (51 + 6 * ((bitdepth)-8))

/* ------------------------------------------------------------------------- */
/** @name Block arrays */

/** Kind of block of the block-array API. */
typedef enum VidkH264BlockType {
    VIDK_H264_BLOCK_4x4 = 0, /**< 4x4 residual block (8.5.12), 16 values */
    VIDK_H264_BLOCK_8x8 = 1, /**< 8x8 residual block (8.5.13), 64 values */
    /** Intra16x16 luma DC matrix (8.5.10), 16 values: 4x4, element (y, x) belongs to the
     *  4x4 block in row y, column x of the macroblock. */
    VIDK_H264_BLOCK_DC_LUMA = 2,
    /** 4:2:0 chroma DC matrix (8.5.11), 4 values: 2x2, raster. */
    VIDK_H264_BLOCK_DC_CHROMA = 3,
    /** 4:2:2 chroma DC matrix (8.5.11), 8 values: 4 rows of 2, raster. */
    VIDK_H264_BLOCK_DC_CHROMA422 = 4,
    VIDK_H264_BLOCK_TYPES
} VidkH264BlockType;

/** @return the number of values of one block of type t (16, 64, 16, 4, 8; 0 if invalid). */
VIDK_API int vidk_h264_block_values(VidkH264BlockType t);

/** Parameters of the block-array API. Fill with vidk_h264_default_block_params(). */
typedef struct VidkH264BlockParams {
    VidkH264BlockType type; /**< kind of block; default 4x4 */
    int qp;                 /**< qP' (QP + QpBdOffset), 0..VIDK_H264_MAX_QP(bitdepth) */
    int bitdepth;           /**< 8..VIDK_H264_MAX_BITDEPTH; default 8 (only bounds qp) */
    int intra;              /**< 1: intra dead zone (f = 1/3), 0: inter (1/6); default 1 */
    /** Scaling matrix (weightScale, raster, 16 values for 4x4 and the DC types, 64 for
     *  8x8; each 1..255), or NULL for Flat_4x4_16 / Flat_8x8_16. The DC types use only
     *  element 0 (the spec's LevelScale(qP % 6, 0, 0)). Default NULL. */
    const uint8_t *scaling;
    uint8_t reserved[16]; /**< zero */
} VidkH264BlockParams;

/** @brief Defaults: 4x4, qp 26, bit depth 8, intra, flat scaling. */
VIDK_API void vidk_h264_default_block_params(VidkH264BlockParams *p);

/**
 * @brief Encoder path on an array of blocks: forward transform and quantisation.
 *
 * 4x4 / 8x8: `in` holds residual blocks (source minus prediction); each is transformed
 * (the 4x4 core transform, or the 8x8 transform of the High profiles; rows first, then
 * columns) and quantised. DC types: `in` holds the DC matrix (the DC coefficients of
 * the forward-transformed 4x4 blocks); it is Hadamard-transformed (no rounding) and
 * quantised with qbits = 17 + qP/6 (luma) or 16 + qP/6 (chroma; 4:2:2 chroma uses
 * qP + 3, as its decoder does).
 *
 * @param ctx context (all backends identical; cuda runs this on the CPU).
 * @param p parameters.
 * @param in n blocks of vidk_h264_block_values(p->type) int16 values each.
 * @param out n blocks of levels (same layout); may not alias `in`.
 * @param n number of blocks (0 is allowed).
 * @param nnz if not NULL, receives the number of non-zero levels written.
 * @return 0; VIDK_ERR(EINVAL) for NULL arrays (with n > 0), a bad type, qp, bit depth,
 *         scaling value 0, or non-zero reserved bytes.
 */
VIDK_API int vidk_h264_forward_blocks(VidkContext *ctx, const VidkH264BlockParams *p,
                                      const int16_t *in, int16_t *out, size_t n, size_t *nnz);

/**
 * @brief Decoder path on an array of blocks: dequantisation and inverse transform.
 *
 * 4x4 / 8x8: levels -> residual (8.5.12 / 8.5.13 scaling then transform, (x + 32) >> 6);
 * every coefficient is scaled, including element 0. DC types: levels -> the dequantised
 * DC values (dcY of 8.5.10, dcC of 8.5.11) that become element 0 of each 4x4 block.
 *
 * @param out n blocks of int32 values (same layout as the input).
 * @return 0; VIDK_ERR(EINVAL) as for vidk_h264_forward_blocks().
 */
VIDK_API int vidk_h264_inverse_blocks(VidkContext *ctx, const VidkH264BlockParams *p,
                                      const int16_t *in, int32_t *out, size_t n);

/**
 * @brief Chroma QP mapping (8.5.8 / Table 8-15): QP'C from QPY and the PPS offset.
 * @param qpy QPY, -QpBdOffsetC..51.
 * @param offset chroma_qp_index_offset (or second_chroma_qp_index_offset), -12..12.
 * @param bitdepth chroma bit depth, 8..VIDK_H264_MAX_BITDEPTH.
 * @return QP'C = QPC + QpBdOffsetC, or VIDK_ERR(EINVAL) for out-of-range arguments.
 */
VIDK_API int vidk_h264_chroma_qp(int qpy, int offset, int bitdepth);

/* ------------------------------------------------------------------------- */
/** @name Dense coefficient frames */

/** Macroblock flags (VidkH264MbInfo.flags). */
enum VidkH264MbFlags {
    VIDK_H264_MB_INTRA = 1 << 0, /**< intra macroblock: intra scaling lists, intra dead zone */
    VIDK_H264_MB_8x8 = 1 << 1,   /**< luma uses the 8x8 transform (transform_size_8x8_flag) */
    /** Intra16x16: the luma DC levels go through the luma DC transform (8.5.10). Requires
     *  VIDK_H264_MB_INTRA, excludes VIDK_H264_MB_8x8. */
    VIDK_H264_MB_I16x16 = 1 << 2,
    VIDK_H264_MB_FLAGS_ALL = 7 /**< every defined bit; others must be zero */
};

/** Per-macroblock side information of a coefficient frame. */
typedef struct VidkH264MbInfo {
    uint8_t qp[3]; /**< qP' of Y, Cb, Cr: QP + QpBdOffset, 0..VIDK_H264_MAX_QP(bitdepth) */
    uint8_t flags; /**< VidkH264MbFlags */
} VidkH264MbInfo;

/**
 * @brief Scaling matrices (weightScale4x4 / weightScale8x8, 7.4.2.1.1.1), raster order.
 *
 * Index: 0 intra Y, 1 intra Cb, 2 intra Cr, 3 inter Y, 4 inter Cb, 5 inter Cr (the
 * spec's list order); 8x8 uses m8[0] (intra Y) and m8[3] (inter Y). All 16 = flat.
 * Values 1..255.
 */
typedef struct VidkH264Scaling {
    uint8_t m4[6][16]; /**< 4x4 matrices (also the DC transforms: element 0) */
    uint8_t m8[6][64]; /**< 8x8 matrices (entries 1, 2, 4, 5 unused below 4:4:4) */
} VidkH264Scaling;

/** @brief Fill with the flat matrices (every value 16). */
VIDK_API void vidk_h264_scaling_flat(VidkH264Scaling *s);

/**
 * @brief The levels of one picture, dense: what an entropy decoder produces.
 *
 * coef[p] is an int16 plane of the picture plane's size (row stride: plane_w[p] values).
 * The transform block covering samples (x0..x0+N-1, y0..y0+N-1) stores its level
 * matrix in place: c[y][x] at coef[p][(y0 + y) * plane_w[p] + x0 + x]. Luma uses 8x8
 * blocks in macroblocks with VIDK_H264_MB_8x8, 4x4 blocks otherwise; chroma (4:2:0,
 * 4:2:2) uses 4x4 blocks.
 *
 * DC matrices are stored in the DC slots (element 0) of the blocks they feed: in an
 * Intra16x16 macroblock, luma DC level c[i][j] (8.5.10) is element 0 of the 4x4 block in
 * row i, column j of the macroblock; chroma DC level c[i][j] (8.5.11; 2x2 for 4:2:0, 4
 * rows x 2 for 4:2:2) is element 0 of the chroma 4x4 block in row i, column j. Chroma
 * 4:2:0 and 4:2:2 always uses the chroma DC transform.
 */
typedef struct VidkH264CoefFrame {
    int w, h;                /**< luma size in samples, multiples of 16 */
    VidkChroma chroma;       /**< VIDK_CHROMA_400, _420 or _422 (4:4:4 is not supported) */
    int bitdepth;            /**< 8..VIDK_H264_MAX_BITDEPTH: bounds the qP' values */
    int mb_w, mb_h;          /**< macroblocks across and down (w / 16, h / 16) */
    VidkH264MbInfo *mb;      /**< mb_w * mb_h entries, raster order */
    int16_t *coef[3];        /**< level planes Y, Cb, Cr (NULL for absent planes) */
    int plane_w[3];          /**< width of each plane (values per row of coef[p]) */
    int plane_h[3];          /**< height of each plane */
    VidkH264Scaling scaling; /**< scaling matrices (flat after alloc) */
    void *alloc;             /**< owning allocation */
} VidkH264CoefFrame;

/**
 * @brief Allocate a coefficient frame: levels zero, every macroblock inter with qP' 26
 * (plus QpBdOffset) on all planes, flat scaling.
 * @param fr frame to fill (previous contents ignored, not freed).
 * @param w, h luma size: multiples of 16, 16..VIDK_MAX_PICTURE_SIDE.
 * @param chroma VIDK_CHROMA_400, _420 or _422.
 * @param bitdepth 8..VIDK_H264_MAX_BITDEPTH.
 * @return 0; VIDK_ERR(EINVAL); VIDK_ERR(ENOMEM).
 */
VIDK_API int vidk_h264_coef_frame_alloc(VidkH264CoefFrame *fr, int w, int h, VidkChroma chroma,
                                        int bitdepth);

/** @brief Free a frame from vidk_h264_coef_frame_alloc() and zero it. NULL is a no-op. */
VIDK_API void vidk_h264_coef_frame_free(VidkH264CoefFrame *fr);

/**
 * @brief Check a frame's side information: sizes, qP' ranges, flag combinations,
 * scaling values (1..255).
 * @return 0 or VIDK_ERR(EINVAL).
 */
VIDK_API int vidk_h264_coef_frame_validate(const VidkH264CoefFrame *fr);

/* ------------------------------------------------------------------------- */
/** @name Compacted batches */

/** Block-list flags (VidkH264BlockList.flags). */
enum VidkH264BlockFlags {
    VIDK_H264_BLK_INTRA = 1 << 0, /**< use the intra scaling matrix of the plane */
    /** Element 0 comes from a DC transform: coef[0] is ignored and
     *  dc_index[i] = 16 * g + k names value k of DC group g (raster position of the
     *  block in its DC matrix). */
    VIDK_H264_BLK_DC = 1 << 1,
};

/** Size classes of a batch. */
enum VidkH264SizeClass {
    VIDK_H264_TX_4x4 = 0, /**< 4x4 transform blocks (16 levels each) */
    VIDK_H264_TX_8x8 = 1, /**< 8x8 transform blocks (64 levels each) */
    VIDK_H264_TX_COUNT = 2
};

/**
 * @brief One size class of a batch: parallel arrays, entry i is one transform block.
 *
 * Every array has `capacity` entries, `count` used; coef is 64-byte aligned and holds
 * count * 16 (4x4) or count * 64 (8x8) levels, block i at coef + i * N * N (raster).
 * No CUDA types: a GPU backend uploads these arrays as they are.
 */
typedef struct VidkH264BlockList {
    uint32_t count;     /**< blocks in the list */
    uint32_t capacity;  /**< allocated entries */
    uint16_t *x, *y;    /**< top-left sample of the block in its plane */
    uint8_t *plane;     /**< 0 Y, 1 Cb, 2 Cr */
    uint8_t *qp;        /**< qP' */
    uint8_t *flags;     /**< VidkH264BlockFlags */
    uint32_t *dc_index; /**< see VIDK_H264_BLK_DC (0 for other blocks) */
    int16_t *coef;      /**< levels, N*N per block, 64-byte aligned */
} VidkH264BlockList;

/** DC group types (VidkH264DcList.type). */
enum VidkH264DcType {
    VIDK_H264_DC_LUMA = 0,      /**< Intra16x16 luma DC, 4x4, 16 blocks */
    VIDK_H264_DC_CHROMA = 1,    /**< 4:2:0 chroma DC, 2x2, 4 blocks */
    VIDK_H264_DC_CHROMA422 = 2, /**< 4:2:2 chroma DC, 4 rows x 2, 8 blocks */
};

/**
 * @brief The DC matrices of a batch (one group per macroblock and plane that has a
 * non-zero DC level). Group g's levels are coef[16 * g ...] (raster, 16 / 4 / 8 used,
 * the rest zero); its dequantised outputs feed the blocks whose dc_index is 16 * g + k.
 */
typedef struct VidkH264DcList {
    uint32_t count;    /**< groups */
    uint32_t capacity; /**< allocated entries */
    uint16_t *x, *y;   /**< top-left sample of the macroblock in the plane */
    uint8_t *plane;    /**< 0 Y, 1 Cb, 2 Cr */
    uint8_t *qp;       /**< qP' */
    uint8_t *type;     /**< VidkH264DcType */
    uint8_t *flags;    /**< VIDK_H264_BLK_INTRA or 0 */
    int16_t *coef;     /**< 16 levels per group, 64-byte aligned */
} VidkH264DcList;

/**
 * @brief A frame's non-zero transform blocks, compacted and separated by size.
 *
 * Blocks are ordered by plane, then macroblock raster order, then block raster order
 * inside the macroblock. Zero blocks are absent; a block of a DC group is present when
 * it has a non-zero AC level or its group is present.
 */
typedef struct VidkH264Batch {
    int w, h;                                   /**< luma size */
    VidkChroma chroma;                          /**< chroma format */
    int bitdepth;                               /**< bounds qP' */
    VidkH264BlockList list[VIDK_H264_TX_COUNT]; /**< 4x4 and 8x8 blocks */
    VidkH264DcList dc;                          /**< DC groups */
    VidkH264Scaling scaling;                    /**< scaling matrices */
} VidkH264Batch;

/** @brief Make an empty batch (no allocation). */
VIDK_API void vidk_h264_batch_init(VidkH264Batch *b);
/** @brief Free a batch's arrays and make it empty. NULL is a no-op. */
VIDK_API void vidk_h264_batch_free(VidkH264Batch *b);

/**
 * @brief Compact a dense coefficient frame into a batch (zero blocks dropped,
 * separated by size). The batch's arrays grow as needed and are reused.
 * @param ctx context (its SIMD level speeds up the zero tests); NULL = portable C.
 * @return 0; VIDK_ERR(EINVAL) for NULL or an invalid frame; VIDK_ERR(ENOMEM).
 */
VIDK_API int vidk_h264_batch_build(VidkContext *ctx, VidkH264Batch *b,
                                   const VidkH264CoefFrame *fr);

/**
 * @brief Scatter a batch back into a dense frame (the inverse of vidk_h264_batch_build()
 * for the levels): every level plane of `fr` is cleared, then the batch's blocks and DC
 * levels are written. fr must have the batch's geometry; its mb[] is not changed.
 * @return 0; VIDK_ERR(EINVAL).
 */
VIDK_API int vidk_h264_batch_scatter(const VidkH264Batch *b, VidkH264CoefFrame *fr);

/**
 * @brief Decoder path for a whole frame: dequantise, inverse transform and add to the
 * prediction, in place, clipped to 0..255 (8.5.14).
 *
 * The DC groups are transformed and dequantised first (8.5.10, 8.5.11), then every block
 * of both lists is processed (8.5.12, 8.5.13). Blocks that cover common samples (never
 * made by vidk_h264_batch_build) are applied in list order, 4x4 list first, on every
 * backend.
 *
 * @param ctx context; c, simd, threads and cuda give identical pictures.
 * @param b batch (from vidk_h264_batch_build() or vidk_h264_batch_forward()).
 * @param pic 8-bit picture of the batch's size and chroma format, holding the prediction.
 * @return 0; VIDK_ERR(EINVAL) for mismatched or malformed input (blocks outside the
 *         picture, bad qP', flags or dc_index); VIDK_ERR(ENOMEM); VIDK_ERR(EIO) for a
 *         device error on cuda (logged).
 */
VIDK_API int vidk_h264_batch_inverse(VidkContext *ctx, const VidkH264Batch *b,
                                     VidkPicture *pic);

/**
 * @brief Decoder path straight from the dense frame (the paper's baseline layout): every
 * block is tested for zero (SIMD on the simd/threads backends) and skipped when zero.
 * Same output as vidk_h264_batch_build() followed by vidk_h264_batch_inverse().
 * @return as vidk_h264_batch_inverse().
 */
VIDK_API int vidk_h264_frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr,
                                     VidkPicture *pic);

/**
 * @brief Encoder path for a whole frame: residual = src - pred, forward transform and
 * quantisation of every block, per macroblock as its flags say (4x4, 8x8, Intra16x16
 * luma DC; chroma DC for 4:2:0 / 4:2:2), dead zone by VIDK_H264_MB_INTRA.
 *
 * @param src, pred 8-bit pictures of fr's size and chroma format.
 * @param fr in: mb[] and scaling; out: every level plane.
 * @param b if not NULL, receives the compacted batch of the result.
 * @return the number of non-zero levels (>= 0, saturated at INT32_MAX);
 *         VIDK_ERR(EINVAL); VIDK_ERR(ENOMEM); VIDK_ERR(EIO) for a device error on cuda.
 */
VIDK_API int vidk_h264_batch_forward(VidkContext *ctx, const VidkPicture *src,
                                     const VidkPicture *pred, VidkH264CoefFrame *fr,
                                     VidkH264Batch *b);

/* ------------------------------------------------------------------------- */
/** @name Sparse packing and sizes */

/**
 * @brief A batch's levels packed sparsely: per block a significance mask (bit k = level
 * k, raster, is non-zero) and its non-zero levels in raster order.
 *
 * Class 0 = 4x4 list (mask4), 1 = 8x8 list (mask8), 2 = DC groups (mask4, 16 bits).
 * Block i of class c has its values at values[offset[c][i] .. offset[c][i + 1]).
 * The metadata (positions, qp, flags) stays in the batch.
 */
typedef struct VidkH264Sparse {
    uint32_t count[3];   /**< blocks per class */
    uint16_t *mask4;     /**< count[0] masks of the 4x4 list */
    uint64_t *mask8;     /**< count[1] masks of the 8x8 list */
    uint16_t *mask_dc;   /**< count[2] masks of the DC groups */
    uint32_t *offset[3]; /**< count[c] + 1 value offsets per class */
    int16_t *values;     /**< n_values non-zero levels, class 0 first, 64-byte aligned */
    uint32_t n_values;   /**< total non-zero levels */
} VidkH264Sparse;

/**
 * @brief Pack a batch's levels sparsely. sp must be zeroed or from an earlier call
 * (its arrays are reallocated).
 * @return 0; VIDK_ERR(EINVAL); VIDK_ERR(ENOMEM).
 */
VIDK_API int vidk_h264_sparse_pack(VidkH264Sparse *sp, const VidkH264Batch *b);

/**
 * @brief Unpack sparse levels into a batch whose metadata matches (same counts): the
 * coef arrays are rewritten.
 * @return 0; VIDK_ERR(EINVAL) for mismatched counts or inconsistent masks / offsets.
 */
VIDK_API int vidk_h264_sparse_unpack(const VidkH264Sparse *sp, VidkH264Batch *b);

/** @brief Free a sparse packing and zero it. NULL is a no-op. */
VIDK_API void vidk_h264_sparse_free(VidkH264Sparse *sp);

/** Bytes of one frame in each representation (what a GPU upload would move). */
typedef struct VidkH264Bytes {
    /** Dense: every level plane (int16) plus 4 bytes of VidkH264MbInfo per macroblock. */
    size_t dense;
    /** Compacted: per block its levels (32 or 128 bytes) plus 11 bytes of metadata (x,
     *  y, plane, qp, flags, dc_index); per DC group 32 bytes of levels plus 7 of
     *  metadata (x, y, plane, qp, type, flags). */
    size_t compacted;
    /** Sparse: the compacted metadata, plus per block its mask (2 or 8 bytes; 2 per DC
     *  group) and value offset (4 bytes), plus 2 bytes per non-zero level. */
    size_t sparse;
    size_t blocks[VIDK_H264_TX_COUNT];       /**< non-zero blocks per size class */
    size_t blocks_total[VIDK_H264_TX_COUNT]; /**< all blocks per size class (dense) */
    size_t dc_groups;                        /**< DC groups in the batch */
    size_t nonzero;                          /**< non-zero levels */
} VidkH264Bytes;

/**
 * @brief Count the bytes of a frame as dense, compacted and sparse data.
 * @param fr the dense frame.
 * @param b its batch (from vidk_h264_batch_build(ctx, b, fr)).
 * @return 0; VIDK_ERR(EINVAL) for NULL or mismatched geometry.
 */
VIDK_API int vidk_h264_bytes(const VidkH264CoefFrame *fr, const VidkH264Batch *b,
                             VidkH264Bytes *out);

#ifdef __cplusplus
}
#endif
#endif
