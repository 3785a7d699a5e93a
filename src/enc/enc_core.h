/* The coding loop's per-block arithmetic, shared by the CPU encoder (src/enc/encode.c, C11)
 * and the CUDA encoder (src/cuda/encode.cu, device code): one source, so every backend
 * makes the same decisions and reconstructs the same samples. docs/ENCODE.md is the
 * specification this file implements.
 *
 * Contents: the frame descriptor (EncFrame), per-unit statistics, the scalar transform
 * primitives ("core" versions of the dsp kernels, used on the device and by the CPU
 * core-path test: the families' cores, src/h264_core.h and src/hevc_core.h), prediction (motion
 * compensation, H.264 intra), the H.264 partition decision and the bit estimates; the
 * HEVC decision and intra prediction are in enc_core_hevc.h. The drivers that code one
 * macroblock / CTU are in enc_tmpl.h, instantiated per set of transform primitives. */
#ifndef VIDK_ENC_CORE_H
#define VIDK_ENC_CORE_H

#include <stdint.h>

#include "h264_core.h"
#include "h264_deblock_core.h"
#include "hevc_core.h"
#include "h264_cavlc_core.h"
#include "h264_mvp_core.h"
#include "me.h"
#include "me_core.h"
#include "sad_core.h"
#include "vidkern/vidkern.h"

/* ENC_CFN: a function of its arguments alone, also usable in the CUDA code's constant
 * expressions. */
#if defined(__CUDACC__)
#define ENC_FN  static __device__ inline
#define ENC_CFN static constexpr __host__ __device__ inline
#define ENC_TAB static __device__ const
/* Reconstructed samples of neighbours written by other thread blocks of the same kernel
 * (intra wavefront): read through L2, never a stale L1 line. */
#define ENC_LDREC(p) __ldcg(p)
#define ENC_ALIGN(n) __align__(n)
/* A loop whose trip count is constant once inlined, unrolled (its arrays then stay in
 * registers and its loads are issued together). */
#define ENC_UNROLL _Pragma("unroll")
#else
#define ENC_FN       static inline
#define ENC_CFN      static inline
#define ENC_TAB      static const
#define ENC_LDREC(p) (*(p))
#define ENC_ALIGN(n) _Alignas(n)
#define ENC_UNROLL
#endif

/* Lambda (SAD units) per QP: round(sqrt(0.85 * 2^((QP - 12) / 3))), the JM's motion
 * lambda for SAD costs. */
ENC_TAB uint8_t enc_lambda_tab[52] = {0,  0,  0,  0,  0,  0,  0,  1,  1,  1,  1,  1,  1,
                                      1,  1,  1,  1,  2,  2,  2,  2,  3,  3,  3,  4,  4,
                                      5,  5,  6,  7,  7,  8,  9,  10, 12, 13, 15, 17, 19,
                                      21, 23, 26, 30, 33, 37, 42, 47, 53, 59, 66, 74, 83};

/* ------------------------------------------------------------------ frame descriptor */

/* Statistics of one unit (H.264 macroblock / HEVC CTU); summed per frame. */
typedef struct EncUnitStat {
    uint32_t nnz[3];
    uint32_t bits_mode, bits_mv, bits_level;
    uint32_t parts[VIDK_ENC_PART_COUNT];
} EncUnitStat;

/* A frame's sums of the unit statistics. */
typedef struct EncSum {
    uint64_t nnz[3];
    uint64_t bits_mode, bits_mv, bits_level;
    uint64_t parts[VIDK_ENC_PART_COUNT];
} EncSum;

/* Everything a unit's coding reads and writes. Plane strides are in samples. */
typedef struct EncFrame {
    int codec, intra, qp, qpc, lambda;
    int W, H;   /* coded luma size (multiple of 16 / 32) */
    int uw, uh; /* units across / down: macroblocks (H.264) or CTUs (HEVC) */
    int mb_w;   /* 16x16 blocks across (energy map) */
    const uint8_t *src[3];
    int ss[3];
    const uint8_t *ref[3]; /* previous reconstruction (inter frames) */
    int rs[3];
    uint8_t *rec[3];
    int cs[3];
    const VidkMeResult *me[VIDK_BLOCK_COUNT]; /* inter frames: the motion field */
    int me_gw[VIDK_BLOCK_COUNT];
    int16_t *lev[3]; /* NULL: levels not kept */
    int ls_[3];
    VidkMv *mv4;          /* NULL: vectors not kept; W / 4 per row */
    uint32_t *energy;     /* NULL: energy not kept; mb_w per row */
    EncUnitStat *stat;    /* uw * uh */
    uint16_t *mbi;        /* H.264: decision word per macroblock (ENC_MBI_*); NULL: not kept */
    int slices;           /* H.264: slices of whole macroblock rows (>= 1); intra prediction
                             does not cross a slice's top edge */
    int no_sub8x8;        /* H.264: P_8x8 sub-macroblocks are 8x8 only (level >= 3.1) */
    const VidkMv *dmv;    /* H.264 P frames: the decisions of the last pass: a vector per 4x4 */
    const uint16_t *dmb;  /* block (W / 4 per row), a word per macroblock (ENC_MBI_*, no TX8) */
    const uint32_t *dist; /* H.264 P frames: ENC_H264_DIST_N per macroblock */
    VidkMv *part_mv;      /* H.264 P frames: each partition's vector refined to quarter
                             samples (enc_h264_part_dist): partition p of macroblock u at
                             p * uw * uh + u (enc_h264_pmv: a warp's macroblocks adjacent) */
    /* H.264 P frames: the reference's full-sample plane G and half-sample planes b, h, j
     * (vidk_h264_hpel3), qpn bytes apart, position (x, y) in [-3, W + 1] x [-3, H + 1] at
     * (y + 3) * qps + x + 3 (outside it the values repeat: enc_qpl_at) */
    const uint8_t *qpl;
    int qps;
    ptrdiff_t qpn;
    uint32_t *skipc; /* H.264 P frames: 2 per macroblock (enc_h264_decide) */
    /* H.264 tables (flat scaling): quantiser factors and LevelScale rows at qp % 6. */
    int32_t mf4y[16], mf8y[64], mf4c[16];
    int16_t ls4y[16], ls8y[64], ls4c[16];
    /* HEVC: [0] luma, [1] chroma; per log2 size 2..5 (index log2 - 2). */
    int32_t hq_scale[2], hq_qbits[2][4], hq_off[2][4];
    int32_t hd_scale[2], hd_shift[2][4];
    /* the host's refinement measure, vidk_satd_avg_wxh's value: the context's SIMD
     * (VidkSadDSP.satd_avg), or NULL for the core's own loop (the device, the core path); last,
     * so that the device code sees the fields before it where it did */
    unsigned (*satd_avg)(const uint8_t *src, ptrdiff_t ss, const uint8_t *a, const uint8_t *b,
                         ptrdiff_t rs, int w, int h);
    /* H.264: 1 = Intra_4x4 is a candidate of every intra macroblock (mbi and im4 then set);
     * its modes per 4x4 luma block, W / 4 per row (read where mbi says I_NxN) */
    int i4x4;
    uint8_t *im4;
    int i8x8; /* H.264: 1 = Intra_8x8 a candidate too (its modes in im4, 4 each) */
    /* H.264 B frames (docs/ENCODE.md §16): 1 = a B picture (ref, qpl, me and part_mv are
     * list 0's); l1: the same frame with list 1's reference in those fields; mv4b: the list-1
     * vectors (as mv4, which holds list 0's); dmvb: the decision passes' list-1 vectors (as
     * dmv); colmv / colmb: the co-located picture's (list 1's first) list-0 vectors and
     * decision words, colmb NULL when it is an intra picture */
    int bframe;
    const struct EncFrame *l1;
    VidkMv *mv4b;
    const VidkMv *dmvb;
    const VidkMv *colmv;
    const uint16_t *colmb;
    int bw0, bw1; /* B frames: the implicit bi-prediction weights (enc_h264_implicit_w) */
} EncFrame;

/* H.264 decision word of a macroblock (EncFrame.mbi), what the stream writer codes:
 * intra: ENC_MBI_INTRA | Intra16x16PredMode | intra_chroma_pred_mode << 2, or
 *        ENC_MBI_INTRA | ENC_MBI_NXN (| ENC_MBI_TX8: Intra_8x8) | intra_chroma_pred_mode << 2;
 * inter: partition (0 16x16, 1 16x8, 2 8x16, 3 P_8x8) | sub_mb_type of quadrant q << (2 + 2q)
 *        | ENC_MBI_TX8 when the luma residual uses the 8x8 transform. */
#define ENC_MBI_INTRA 0x8000u
#define ENC_MBI_TX8   0x0400u
/* intra: I_NxN (mb_type I_NxN) with Intra_4x4, or with ENC_MBI_TX8 Intra_8x8
 * (transform_size_8x8_flag), its modes in EncFrame.im4 (one per 4x4 block); bits 0..1 then 0 */
#define ENC_MBI_NXN 0x4000u

/* B slices (docs/ENCODE.md §16), inter macroblocks: partition (0 16x16, 1 16x8, 2 8x16) |
 * the lists quadrant q predicts from << (2 + 2q) (1 list 0, 2 list 1, 3 both; the same in the
 * quadrants of one partition: VIDK_H264_BLISTS reads them); ENC_MBI_DIRECT when it is
 * B_Direct_16x16 (coded as B_Skip when it has no non-zero level), its vectors (EncFrame.mv4,
 * mv4b) and lists the spatial direct ones. */
#define ENC_MBI_DIRECT 0x0800u

/* Is decision word w an I_NxN macroblock? */
#define ENC_MBI_IS_NXN(w)                                                                      \
    (((w) & (ENC_MBI_INTRA | ENC_MBI_NXN)) == (ENC_MBI_INTRA | ENC_MBI_NXN))

/* ------------------------------------------------------------------ small helpers */

/* Is macroblock row `row` the first row of one of the frame's slices? Slice k of n starts
 * at row k * rows / n (floor). */
ENC_FN int enc_h264_slice_start(int row, int rows, int n) {
    if (n <= 1) return row == 0;
    const int k = (row * n + rows - 1) / rows; /* the first slice starting at or after row */
    return k < n && k * rows / n == row;
}

ENC_FN int enc_clip(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}
ENC_FN uint8_t enc_pix(int v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Code lengths (ue(v), se(v)): src/me_core.h. The CAVLC length of an mvd (mv - pred; H.264:
 * quarter-sample units, as the stream codes it). */
ENC_FN unsigned enc_mvd_bits(VidkMv mv, VidkMv pred) {
    return vidk_se_bits(mv.x - pred.x) + vidk_se_bits(mv.y - pred.y);
}

/* The se(v) lengths of the non-zero levels, *nnz their count: enc_block_bits without the
 * count's ue(v) (the cuda backend's pairs of lanes sum their halves of an 8x8 block). */
ENC_FN unsigned enc_level_bits(const int16_t *lev, int n, int *nnz) {
    unsigned b = 0;
    int c = 0;
    for (int k = 0; k < n; k++)
        if (lev[k]) {
            c++;
            b += vidk_se_bits(lev[k]);
        }
    *nnz = c;
    return b;
}

/* Bits of one coded block: ue(count) + se() of every non-zero level. */
ENC_FN unsigned enc_block_bits(const int16_t *lev, int n, int *nnz) {
    const unsigned b = enc_level_bits(lev, n, nnz);
    return b + vidk_ue_bits((unsigned)*nnz);
}

/* H.264 zig-zag scans of frame macroblocks (8.5.6, 8.5.7): scan index -> raster index. */
ENC_TAB uint8_t enc_zz4[16] = VIDK_H264_ZZ4;
ENC_TAB uint8_t enc_zz8[64] = VIDK_H264_ZZ8;
/* Its inverse: raster index -> scan index (tests/test_enc_decide.c checks it). */
ENC_TAB uint8_t enc_izz8[64] = {0,  1,  5,  6,  14, 15, 27, 28, 2,  4,  7,  13, 16, 26, 29, 42,
                                3,  8,  12, 17, 25, 30, 41, 43, 9,  11, 18, 24, 31, 40, 44, 53,
                                10, 19, 23, 32, 39, 45, 52, 54, 20, 22, 33, 38, 46, 51, 55, 60,
                                21, 34, 37, 47, 50, 56, 59, 61, 35, 36, 48, 49, 57, 58, 62, 63};

/* The rounding offset of the inter luma quantiser (docs/ENCODE.md §9): for a macroblock that
 * moves (enc_h264_mb_moving) H.264's reference rounding, 1/6 of the step (vidk_h264_deadzone);
 * for a still one 1/32: there the residual is mostly the noise of the source, whose small
 * levels cost bits for little distortion, and the reference already holds the picture.
 * Measured on the real clips against 1/6, 1/8, 1/16, 1/32 and 1/64 for every macroblock and
 * against the split (docs/PERFORMANCE.md, sessions 6 and 43). */
ENC_FN int32_t enc_h264_inter_round(int qbits, int moving) {
    return (int32_t)(moving ? ((uint32_t)1 << qbits) / 6u : ((uint32_t)1 << qbits) >> 5);
}

/* Whether an inter macroblock moves: one of its 16 vectors (4x4 blocks, raster, row stride
 * n4) of list 0 (m0, when use & 1) or list 1 (m1, when use & 2) is not (0, 0). */
ENC_FN int enc_h264_mb_moving(const VidkMv *m0, const VidkMv *m1, int n4, int use) {
    int mv = 0;
    for (int k = 0; k < 16; k++) {
        const ptrdiff_t o = (ptrdiff_t)(k >> 2) * n4 + (k & 3);
        if (use & 1) mv |= m0[o].x | m0[o].y;
        if (use & 2) mv |= m1[o].x | m1[o].y;
    }
    return mv != 0;
}

/* enc_decimate_score's second step (below), from the non-zero levels as bits in scan order m
 * (bits below `first` clear) and whether a level is outside -1..1 (the cuda backend's pairs of
 * lanes OR their halves of an 8x8 block's m and big). */
ENC_FN int enc_decimate_m(uint64_t m, int big, int n, int first) {
    if (big) return 9;
    int score = 0;
    while (m) {
        const int k = vidk_hibit64(m);
        m &= ~((uint64_t)1 << k);
        const int run = k - 1 - (m ? vidk_hibit64(m) : first - 1); /* zeros below k */
        score += n == 8 ? (run < 4    ? 3
                           : run < 12 ? 2
                           : run < 24 ? 1
                                      : 0)
                        : (run < 1   ? 3
                           : run < 3 ? 2
                           : run < 6 ? 1
                                     : 0);
    }
    return score;
}

/* Decimation score of an inter block's levels (raster, n = 4 or 8; from scan position
 * `first`): 9 when a level is not -1, 0 or 1; else the sum over its +-1 levels of a weight
 * of the zeros run before each (in scan order, from the highest frequency down): 4x4
 * 3, 2, 2, 1, 1, 1 for runs 0..5 and 0 beyond; 8x8 3 for runs 0..3, 2 for 4..11, 1 for
 * 12..23, 0 beyond. A block that costs bits but carries little is zeroed (§9). */
ENC_FN int enc_decimate_score(const int16_t *lev, int n, int first) {
    const uint8_t *zz = n == 8 ? enc_zz8 : enc_zz4;
    /* the non-zero levels as bits in scan order (no branch per level: on the GPU the loads
     * go out together), then one step per non-zero level from the highest frequency down */
    uint64_t m = 0;
    int big = 0;
    for (int k = first; k < n * n; k++) {
        const int v = lev[zz[k]];
        m |= (uint64_t)(v != 0) << k;
        big |= v > 1 || v < -1;
    }
    return enc_decimate_m(m, big, n, first);
}

/* n (a multiple of 4) 16-bit values from s to d; on the GPU 8 bytes per store where both
 * are 8-byte aligned (a thread's row is one or two stores, not n). */
ENC_FN void enc_copy_row16(int16_t *d, const int16_t *s, int n) {
#if defined(__CUDA_ARCH__)
    if (!(((uintptr_t)d | (uintptr_t)s) & 7)) {
        for (int j = 0; j < n; j += 4)
            *(uint2 *)(void *)(d + j) = *(const uint2 *)(const void *)(s + j);
        return;
    }
#endif
    for (int j = 0; j < n; j++)
        d[j] = s[j];
}

/* Store an n x n block of levels (raster) at (x, y) of a level plane, if kept. */
ENC_FN void enc_store_levels(const EncFrame *f, int p, int x, int y, const int16_t *lev,
                             int n) {
    if (!f->lev[p]) return;
    int16_t *d = f->lev[p] + (ptrdiff_t)y * f->ls_[p] + x;
    for (int i = 0; i < n; i++)
        enc_copy_row16(d + (ptrdiff_t)i * f->ls_[p], lev + i * n, n);
}

/* Quantiser factors of blocks fed by a DC transform: AC (element 0 coded through the DC
 * transform: factor 0) and DC (every entry the (0, 0) factor), from a 4x4 row mf. */
ENC_FN void enc_dc_factors(const int32_t *mf, int32_t *mf_ac, int32_t *mf_dc) {
    for (int k = 0; k < 16; k++) {
        mf_ac[k] = k ? mf[k] : 0;
        mf_dc[k] = mf[0];
    }
}

ENC_FN uint32_t enc_sad(const uint8_t *a, int as, const uint8_t *b, int bs, int w, int h) {
    return vidk_sad_wxh(a, as, b, bs, w, h);
}

ENC_FN uint32_t enc_ssd(const uint8_t *a, int as, const uint8_t *b, int bs, int w, int h) {
    uint32_t s = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int d = a[y * as + x] - b[y * bs + x];
            s += (uint32_t)(d * d);
        }
    return s;
}

/* ------------------------------------------------------------------ HEVC transforms
 * src/hevc_core.h's, 8-bit, the DCT matrix built from its closed form. */

/* The closed-form matrix entry (tests/test_encode.c checks it against the standard's
 * table). */
#define ec_hevc_t32(k, n) vidk_hevc_t32_at(k, n)

ENC_FN void enc_hevc_fwd(int log2n, int16_t *coef, const int16_t *res, int32_t *tmp) {
    int8_t m[1024];
    vidk_hevc_matrix(m, log2n);
    vidk_hevc_fwd_2d(m, log2n, 0, 8, coef, res, tmp);
}

ENC_FN void enc_hevc_inv(int log2n, int16_t *res, const int16_t *coef, int32_t *tmp) {
    int8_t m[1024];
    vidk_hevc_matrix(m, log2n);
    vidk_hevc_inv_2d(m, log2n, 0, 8, res, coef, tmp);
}

/* ------------------------------------------------------------------ motion compensation */

/* Vectors are in quarter luma samples (docs/ENCODE.md §1); HEVC's are whole samples (x 4). */

/* The value of plane k (0 G, 1 b, 2 h, 3 j: vidk_h264_qpel_src's kinds) at integer position
 * (x, y): the plane's entry, the position clamped to the area where the values differ
 * (outside [-3, W + 1] every tap of the filters reads the edge sample, as at -3 and W + 1). */
ENC_FN int enc_qpl_at(const EncFrame *f, int k, int x, int y) {
    x = enc_clip(x, -3, f->W + 1), y = enc_clip(y, -3, f->H + 1);
    return f->qpl[(ptrdiff_t)k * f->qpn + (ptrdiff_t)(y + 3) * f->qps + x + 3];
}

/* vidk_h264_qpel_src's two codes of fraction t = 4 xFrac + yFrac, packed four bits each
 * (entry t in bits 4t..4t+3 of the A and the B constant: no table read on the device;
 * tests/test_enc_pred.c checks them against the table). */
ENC_CFN unsigned enc_qcode(int t, int which) {
    const uint64_t a = 0x6314331122108200ull, b = 0x9661933193212220ull;
    return (unsigned)((which ? b : a) >> (4 * t) & 15u);
}

/* One source value of code c at integer position (x, y). */
ENC_FN int enc_qsrc(const EncFrame *f, unsigned c, int x, int y) {
    return enc_qpl_at(f, (int)(c & 3u), x + (int)(c >> 2 & 1u), y + (int)(c >> 3));
}

/* The luma prediction sample of position (x, y) for the quarter-sample vector mv (8.4.2.2.1,
 * Table 8-12): a full sample read from the reference (edges clamped; HEVC, which has no
 * planes, reads only these), else the rounded average of two plane values. */
ENC_FN int enc_luma_q(const EncFrame *f, int x, int y, VidkMv mv) {
    const int xi = x + (mv.x >> 2), yi = y + (mv.y >> 2), t = (mv.x & 3) << 2 | (mv.y & 3);
    if (!t)
        return f->ref[0][(ptrdiff_t)enc_clip(yi, 0, f->H - 1) * f->rs[0] +
                         enc_clip(xi, 0, f->W - 1)];
    return (enc_qsrc(f, enc_qcode(t, 0), xi, yi) + enc_qsrc(f, enc_qcode(t, 1), xi, yi) + 1) >>
           1;
}

/* The planes' entries of position (x, y) (x in [-3, W + 1], y in [-3, H + 1]) into qpl
 * (EncFrame.qpl's layout, computed from f->ref[0]): G and vidk_h264_hpel3's b, h, j. */
ENC_FN void enc_h264_qpl_fill(const EncFrame *f, uint8_t *qpl, int x, int y) {
    uint8_t o[3];
    vidk_h264_hpel3(f->ref[0], f->rs[0], f->W, f->H, x, y, o);
    uint8_t *d = qpl + (ptrdiff_t)(y + 3) * f->qps + x + 3;
    d[0] = f->ref[0][(ptrdiff_t)enc_clip(y, 0, f->H - 1) * f->rs[0] + enc_clip(x, 0, f->W - 1)];
    d[f->qpn] = o[0], d[2 * f->qpn] = o[1], d[3 * f->qpn] = o[2];
}

/* A w x h block's prediction read without clamping: the two sources of the vector's fraction
 * as rows (A + B + 1) >> 1 (the reference itself for a whole-sample vector), when every
 * sample they read lies in the planes (or, whole samples, the picture). */
typedef struct EncQRows {
    const uint8_t *a, *b;
    int sa, sb;
} EncQRows;

ENC_FN int enc_qrows(const EncFrame *f, int x, int y, int w, int h, VidkMv mv, EncQRows *r) {
    const int xi = x + (mv.x >> 2), yi = y + (mv.y >> 2), t = (mv.x & 3) << 2 | (mv.y & 3);
    if (!t) {
        if (xi < 0 || yi < 0 || xi + w > f->W || yi + h > f->H) return 0;
        r->a = r->b = f->ref[0] + (ptrdiff_t)yi * f->rs[0] + xi;
        r->sa = r->sb = f->rs[0];
        return 1;
    }
    /* the codes reach one sample right / down: x + w - 1 + 1 <= W + 1 */
    if (xi < -3 || yi < -3 || xi + w > f->W + 1 || yi + h > f->H + 1) return 0;
    const unsigned ca = enc_qcode(t, 0), cb = enc_qcode(t, 1);
    r->a = f->qpl + (ptrdiff_t)(ca & 3u) * f->qpn +
           (ptrdiff_t)(yi + 3 + (int)(ca >> 3)) * f->qps + xi + 3 + (int)(ca >> 2 & 1u);
    r->b = f->qpl + (ptrdiff_t)(cb & 3u) * f->qpn +
           (ptrdiff_t)(yi + 3 + (int)(cb >> 3)) * f->qps + xi + 3 + (int)(cb >> 2 & 1u);
    r->sa = r->sb = f->qps;
    return 1;
}

ENC_FN int enc_qrows_at(const EncQRows *r, int i, int j) {
    return (r->a[(ptrdiff_t)j * r->sa + i] + r->b[(ptrdiff_t)j * r->sb + i] + 1) >> 1;
}

/* Luma block w x h at (x, y) of the reference moved by mv (quarter samples): by rows where
 * enc_qrows allows, else sample by sample (enc_luma_q); the same values. */
ENC_FN void enc_mc_luma(const EncFrame *f, int x, int y, int w, int h, VidkMv mv, uint8_t *dst,
                        int ds) {
    EncQRows r;
    if (enc_qrows(f, x, y, w, h, mv, &r)) {
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++)
                dst[j * ds + i] = (uint8_t)enc_qrows_at(&r, i, j);
        return;
    }
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++)
            dst[j * ds + i] = (uint8_t)enc_luma_q(f, x + i, y + j, mv);
}

/* Chroma block w x h at chroma (x, y) of plane p for the luma vector mv (quarter luma
 * samples = eighth chroma samples in 4:2:0): H.264 8.4.2.2.2 (bilinear, any fraction) or
 * HEVC 8.5.3.3.3.3 (4-tap; HEVC vectors are whole luma samples, so the fraction is 0 or
 * 4/8 = half: [-4 36 36 -4]). Reference positions clamped to the plane. */
ENC_FN void enc_mc_chroma(const EncFrame *f, int p, int x, int y, int w, int h, VidkMv mv,
                          uint8_t *dst, int ds) {
    const uint8_t *r = f->ref[p];
    const int rs = f->rs[p], cw = f->W >> 1, ch = f->H >> 1;
    const int fx = mv.x & 7, fy = mv.y & 7; /* eighth-sample fractions */
    const int ix = mv.x >> 3, iy = mv.y >> 3;
#define ENC_R(xx, yy)                                                                          \
    ((int)r[(ptrdiff_t)enc_clip(yy, 0, ch - 1) * rs + enc_clip(xx, 0, cw - 1)])
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            const int xa = x + i + ix, ya = y + j + iy;
            int v;
            if (!fx && !fy) { /* a whole sample: both filters give it back */
                v = ENC_R(xa, ya);
            } else if (f->codec == VIDK_CODEC_H264) {
                /* the samples a zero weight multiplies are not read */
                const int xf = fx, yf = fy;
                const int b = fx ? ENC_R(xa + 1, ya) : 0, c = fy ? ENC_R(xa, ya + 1) : 0;
                const int d = fx && fy ? ENC_R(xa + 1, ya + 1) : 0;
                v = ((8 - xf) * (8 - yf) * ENC_R(xa, ya) + xf * (8 - yf) * b +
                     (8 - xf) * yf * c + xf * yf * d + 32) >>
                    6;
            } else if (!fy) {
                v = (-4 * ENC_R(xa - 1, ya) + 36 * ENC_R(xa, ya) + 36 * ENC_R(xa + 1, ya) -
                     4 * ENC_R(xa + 2, ya) + 32) >>
                    6;
                v = enc_clip(v, 0, 255);
            } else if (!fx) {
                v = (-4 * ENC_R(xa, ya - 1) + 36 * ENC_R(xa, ya) + 36 * ENC_R(xa, ya + 1) -
                     4 * ENC_R(xa, ya + 2) + 32) >>
                    6;
                v = enc_clip(v, 0, 255);
            } else {
                int t[4];
                for (int k = 0; k < 4; k++) {
                    const int yk = ya - 1 + k;
                    t[k] = -4 * ENC_R(xa - 1, yk) + 36 * ENC_R(xa, yk) +
                           36 * ENC_R(xa + 1, yk) - 4 * ENC_R(xa + 2, yk);
                }
                v = (-4 * t[0] + 36 * t[1] + 36 * t[2] - 4 * t[3] + 2048) >> 12;
                v = enc_clip(v, 0, 255);
            }
            dst[j * ds + i] = (uint8_t)v;
        }
#undef ENC_R
}

/* Prediction of the luma block and its chroma for a vector per 4x4 luma block
 * (mv4: 4x4 units, row stride n4) over a bw x bh luma area at (x, y); written into rec, for
 * the planes whose bit (1 << p) is in `planes`. */
ENC_FN void enc_mc_area(const EncFrame *f, int x, int y, int bw, int bh, const VidkMv *mv4,
                        int n4, unsigned planes) {
    for (int j = 0; j < bh / 4; j++)
        for (int i = 0; i < bw / 4; i++) {
            const VidkMv mv = mv4[j * n4 + i];
            const int lx = x + 4 * i, ly = y + 4 * j;
            if (planes & 1)
                enc_mc_luma(f, lx, ly, 4, 4, mv, f->rec[0] + (ptrdiff_t)ly * f->cs[0] + lx,
                            f->cs[0]);
            for (int p = 1; p < 3; p++)
                if (planes & (1u << p))
                    enc_mc_chroma(f, p, lx >> 1, ly >> 1, 2, 2, mv,
                                  f->rec[p] + (ptrdiff_t)(ly >> 1) * f->cs[p] + (lx >> 1),
                                  f->cs[p]);
        }
}

/* ------------------------------------------------------------------ H.264 intra prediction */

/* Neighbours of a block at (x, y) of plane p: top[0..n-1], left[0..n-1], tl; availability. */
typedef struct EncNb {
    uint8_t top[16], left[16], tl;
    int has_top, has_left;
} EncNb;

/* The neighbours of an n x n block at (x, y) of plane p, read from picture r (stride s):
 * the reconstruction when coding, the source for the decision's estimate. */
ENC_FN void enc_h264_nb_of(const EncFrame *f, const uint8_t *r, int s, int p, int x, int y,
                           int n, EncNb *nb) {
    nb->has_top = y > 0 && !enc_h264_slice_start(y / (p ? 8 : 16), f->uh, f->slices);
    nb->has_left = x > 0;
    for (int i = 0; i < n; i++) {
        nb->top[i] = nb->has_top ? ENC_LDREC(r + (ptrdiff_t)(y - 1) * s + x + i) : 0;
        nb->left[i] = nb->has_left ? ENC_LDREC(r + (ptrdiff_t)(y + i) * s + x - 1) : 0;
    }
    nb->tl = nb->has_top && nb->has_left ? ENC_LDREC(r + (ptrdiff_t)(y - 1) * s + x - 1) : 0;
}

ENC_FN void enc_h264_nb(const EncFrame *f, int p, int x, int y, int n, EncNb *nb) {
    enc_h264_nb_of(f, f->rec[p], f->cs[p], p, x, y, n, nb);
}

/* An intra prediction (8.3.3 Intra_16x16, 8.3.4 chroma 4:2:0) reduced to what each sample
 * needs: kind 0 vertical, 1 horizontal, 2 DC (dc: the value of each 4x4 block of an 8x8
 * block, byte b of block b in row-major order, all four equal for Intra_16x16: a shift, not
 * an indexed array, per sample), 3 plane (a, b, c of 8.3.3.4 / 8.3.4.4,
 * h = n / 2). A sample is then enc_h264_ipred_at, which the device's warps compute in
 * parallel and enc_h264_ipred_fill loops over. */
typedef struct EncIpred {
    int kind, a, b, c, h;
    uint32_t dc;
} EncIpred;

ENC_FN void enc_h264_ipred_clear(EncIpred *P) {
    P->kind = P->a = P->b = P->c = P->h = 0;
    P->dc = 0;
}

ENC_FN void enc_h264_plane_prep(const EncNb *nb, int n, EncIpred *P) {
    const int h = n / 2, k = n == 16 ? 5 : 34;
    int hh = 0, vv = 0;
    for (int i = 0; i < h; i++) {
        hh += (i + 1) * (nb->top[h + i] - (h - 2 - i >= 0 ? nb->top[h - 2 - i] : nb->tl));
        vv += (i + 1) * (nb->left[h + i] - (h - 2 - i >= 0 ? nb->left[h - 2 - i] : nb->tl));
    }
    P->kind = 3, P->h = h;
    P->a = 16 * (nb->left[n - 1] + nb->top[n - 1]);
    P->b = (k * hh + 32) >> 6, P->c = (k * vv + 32) >> 6;
}

/* The kind of Intra_16x16 mode m and of chroma mode m (EncIpred.kind once prepared). */
ENC_FN int enc_h264_ipred16_kind(int m) {
    return m;
}
ENC_FN int enc_h264_ipredc_kind(int m) {
    return m == 0 ? 2 : m == 1 ? 1 : m == 2 ? 0 : 3;
}

/* Sample (x, y) of a block predicted by P (of kind `kind`, which a caller may know at
 * compile time) from the neighbours nb. */
ENC_FN uint8_t enc_h264_ipred_kat(const EncNb *nb, const EncIpred *P, int kind, int x, int y) {
    switch (kind) {
    case 0:
        return nb->top[x];
    case 1:
        return nb->left[y];
    case 2:
        return (uint8_t)(P->dc >> (8 * (((y >> 2) & 1) * 2 + ((x >> 2) & 1))));
    default:
        return enc_pix((P->a + P->b * (x - (P->h - 1)) + P->c * (y - (P->h - 1)) + 16) >> 5);
    }
}

ENC_FN uint8_t enc_h264_ipred_at(const EncNb *nb, const EncIpred *P, int x, int y) {
    return enc_h264_ipred_kat(nb, P, P->kind, x, y);
}

ENC_FN void enc_h264_ipred_fill(const EncNb *nb, const EncIpred *P, int n, uint8_t *dst) {
    /* one loop per kind (the kind known inside it: no switch per sample) */
#define ENC_IPRED_FILL(K)                                                                      \
    for (int y = 0; y < n; y++)                                                                \
        for (int x = 0; x < n; x++)                                                            \
            dst[y * n + x] = enc_h264_ipred_kat(nb, P, K, x, y);
    switch (P->kind) {
    case 0:
        ENC_IPRED_FILL(0) break;
    case 1:
        ENC_IPRED_FILL(1) break;
    case 2:
        ENC_IPRED_FILL(2) break;
    default:
        ENC_IPRED_FILL(3) break;
    }
#undef ENC_IPRED_FILL
}

/* Intra_16x16 luma prediction (8.3.3) of mode m (0 V, 1 H, 2 DC, 3 Plane); returns 0 if
 * the mode's neighbours are not available. */
ENC_FN int enc_h264_ipred16_prep(const EncNb *nb, int m, EncIpred *P) {
    enc_h264_ipred_clear(P);
    if ((m == 0 && !nb->has_top) || (m == 1 && !nb->has_left) ||
        (m == 3 && !(nb->has_top && nb->has_left)))
        return 0;
    if (m == 3) {
        enc_h264_plane_prep(nb, 16, P);
        return 1;
    }
    P->kind = enc_h264_ipred16_kind(m);
    if (m == 2) {
        int s = 0, v;
        for (int i = 0; i < 16; i++)
            s += (nb->has_top ? nb->top[i] : 0) + (nb->has_left ? nb->left[i] : 0);
        if (nb->has_top && nb->has_left)
            v = (s + 16) >> 5;
        else if (nb->has_top || nb->has_left)
            v = (s + 8) >> 4;
        else
            v = 128;
        P->dc = (uint32_t)v * 0x01010101u;
    }
    return 1;
}

ENC_FN int enc_h264_pred16(const EncNb *nb, int m, uint8_t *dst) {
    EncIpred P;
    if (!enc_h264_ipred16_prep(nb, m, &P)) return 0;
    enc_h264_ipred_fill(nb, &P, 16, dst);
    return 1;
}

/* Chroma intra prediction (8.3.4), 8x8, mode m (0 DC, 1 H, 2 V, 3 Plane). */
ENC_FN int enc_h264_ipredc_prep(const EncNb *nb, int m, EncIpred *P) {
    enc_h264_ipred_clear(P);
    if ((m == 1 && !nb->has_left) || (m == 2 && !nb->has_top) ||
        (m == 3 && !(nb->has_top && nb->has_left)))
        return 0;
    if (m == 3) {
        enc_h264_plane_prep(nb, 8, P);
        return 1;
    }
    P->kind = enc_h264_ipredc_kind(m);
    if (m == 0)
        for (int b = 0; b < 4; b++) {
            const int xo = (b & 1) * 4, yo = (b >> 1) * 4;
            int st = 0, sl = 0;
            for (int i = 0; i < 4; i++) {
                st += nb->top[xo + i];
                sl += nb->left[yo + i];
            }
            const int T = nb->has_top, L = nb->has_left;
            int v;
            if (xo == yo) /* (0, 0) and (4, 4) */
                v = T && L ? (st + sl + 4) >> 3 : L ? (sl + 2) >> 2 : T ? (st + 2) >> 2 : 128;
            else if (yo == 0) /* (4, 0): top first */
                v = T ? (st + 2) >> 2 : L ? (sl + 2) >> 2 : 128;
            else /* (0, 4): left first */
                v = L ? (sl + 2) >> 2 : T ? (st + 2) >> 2 : 128;
            P->dc |= (uint32_t)v << (8 * b);
        }
    return 1;
}

ENC_FN int enc_h264_predc(const EncNb *nb, int m, uint8_t *dst) {
    EncIpred P;
    if (!enc_h264_ipredc_prep(nb, m, &P)) return 0;
    enc_h264_ipred_fill(nb, &P, 8, dst);
    return 1;
}

/* ------------------------------------------------------------------ H.264 Intra_4x4 */

/* The neighbours of an N x N luma block (N = 4: 8.3.1.2; N = 8: 8.3.2.2, after its
 * reference filter) in one row: e[N - 1 - y] = p[-1, y] for y = -1..N-1 (e[N] = p[-1, -1])
 * and e[N + 1 + x] = p[x, -1] for x = 0..2N-1, where p[N..2N-1, -1] repeat p[N - 1, -1] when
 * the block above and to the right is not available; a, b: the left and upper samples are
 * available (the upper-left then is too: slices are whole macroblock rows). */
typedef struct EncNbN {
    uint8_t e[25];
    uint8_t n, a, b;
} EncNbN;

/* Is the block above and to the right of N x N block (bx, by) (N units) of macroblock mbx
 * available (6.4.11.4, 6.4.11.2)? For the top row from the macroblocks above and above-right
 * (top: the row above is in the slice), inside the macroblock where it comes earlier in the
 * blocks' order: for 4x4 blocks not the right column below the top row nor (1, 1), (1, 3);
 * for 8x8 blocks block 2 only. */
ENC_FN int enc_h264_tr_avail(const EncFrame *f, int mbx, int top, int N, int bx, int by) {
    const int last = 16 / N - 1;
    if (by == 0) return bx < last ? top : top && mbx + 1 < f->uw;
    return bx != last && (bx != 1 || !(by & 1)); /* (for 8x8 blocks bx is 0 here) */
}

/* Entry i (0 .. 3N) of the row e of an N x N block's neighbours, read from the samples
 * around r (its top-left sample; row stride s) before any filtering: p[-1, N - 1 - i] for
 * i < N, p[-1, -1] at N, p[i - N - 1, -1] after; a / b / c: the left / upper / upper-right
 * neighbours are available (p[-1, -1] exists exactly when both sides do: slices are whole
 * macroblock rows); the upper-right ones p[N - 1, -1] where c is not. */
ENC_FN int enc_h264_nbn_raw(const uint8_t *r, ptrdiff_t s, int N, int a, int b, int c, int i) {
    /* (one read at a selected offset: the GPU's lanes, an entry each, do not diverge) */
    const int j = i > 2 * N && !c ? 2 * N : i;
    const int ok = i < N ? a : i == N ? a && b : b;
    const ptrdiff_t o = i < N ? (ptrdiff_t)(N - 1 - i) * s - 1 : (ptrdiff_t)(j - N - 1) - s;
    return ok ? r[o] : 0;
}

/* Entry i of an 8x8 block's row after the reference sample filter (8.3.2.2.1), t: the row
 * before it: [1 2 1] along the row, the ends weighted 3:1 where it stops. */
ENC_FN int enc_h264_nbn_filt(const uint8_t *t, int a, int b, int i) {
    if (i > 8) {
        if (!b) return t[i];
        if (i == 9) return a ? (t[8] + 2 * t[9] + t[10] + 2) >> 2 : (3 * t[9] + t[10] + 2) >> 2;
        return i == 24 ? (t[23] + 3 * t[24] + 2) >> 2
                       : (t[i - 1] + 2 * t[i] + t[i + 1] + 2) >> 2;
    }
    if (i == 8) return a && b ? (t[9] + 2 * t[8] + t[7] + 2) >> 2 : t[8];
    if (!a) return t[i];
    if (i == 7) return b ? (t[8] + 2 * t[7] + t[6] + 2) >> 2 : (3 * t[7] + t[6] + 2) >> 2;
    return i ? (t[i + 1] + 2 * t[i] + t[i - 1] + 2) >> 2 : (t[1] + 3 * t[0] + 2) >> 2;
}

/* The neighbours of an N x N block from the samples around r (enc_h264_nbn_raw), for N = 8
 * through the reference sample filter (enc_h264_nbn_filt). */
ENC_FN void enc_h264_nbn_at(const uint8_t *r, ptrdiff_t s, int N, int a, int b, int c,
                            EncNbN *n) {
    uint8_t t[25];
    for (int i = 0; i <= 3 * N; i++)
        t[i] = (uint8_t)enc_h264_nbn_raw(r, s, N, a, b, c, i);
    for (int i = 0; i <= 3 * N; i++)
        n->e[i] = (uint8_t)(N == 8 ? enc_h264_nbn_filt(t, a, b, i) : t[i]);
    n->n = (uint8_t)N, n->a = (uint8_t)a, n->b = (uint8_t)b;
}

/* The availability of N x N block (bx, by)'s left, upper and upper-right neighbours (N units)
 * in macroblock mbx of a row whose row above is in the slice or not (top) into *a, *b, *c. */
ENC_FN void enc_h264_nbn_avail_top(const EncFrame *f, int mbx, int top, int N, int bx, int by,
                                   int *a, int *b, int *c) {
    *a = bx > 0 || mbx > 0, *b = by > 0 || top;
    *c = enc_h264_tr_avail(f, mbx, top, N, bx, by);
}

/* The same for macroblock (mbx, mby). */
ENC_FN void enc_h264_nbn_avail(const EncFrame *f, int mbx, int mby, int N, int bx, int by,
                               int *a, int *b, int *c) {
    const int top = mby > 0 && !enc_h264_slice_start(mby, f->uh, f->slices);
    enc_h264_nbn_avail_top(f, mbx, top, N, bx, by, a, b, c);
}

/* The neighbours of N x N block (bx, by) (N units) of macroblock (mbx, mby), read from the
 * reconstruction (the blocks before it in decoding order already in it). */
ENC_FN void enc_h264_nbn(const EncFrame *f, int mbx, int mby, int N, int bx, int by,
                         EncNbN *n) {
    const int s = f->cs[0], x = 16 * mbx + N * bx, y = 16 * mby + N * by;
    int a, b, c;
    enc_h264_nbn_avail(f, mbx, mby, N, bx, by, &a, &b, &c);
    enc_h264_nbn_at(f->rec[0] + (ptrdiff_t)y * s + x, s, N, a, b, c, n);
}

/* Can Intra4x4PredMode / Intra8x8PredMode m (0 V, 1 H, 2 DC, 3 diagonal down left,
 * 4 diagonal down right, 5 vertical right, 6 horizontal down, 7 vertical left, 8 horizontal
 * up) be used, a / b: the left / upper neighbours are available? */
ENC_FN int enc_h264_inxn_avail(int m, int a, int b) {
    return m == 2 ? 1 : m == 1 || m == 8 ? a : m == 0 || m == 3 || m == 7 ? b : a && b;
}
ENC_FN int enc_h264_inxn_ok(const EncNbN *n, int m) {
    return enc_h264_inxn_avail(m, n->a, n->b);
}

/* Every sample of an N x N prediction (8.3.1.2.1 .. 9, 8.3.2.2.2 .. 10) is one of 3L values
 * (L = 3N + 1) derived from the row e (p[i, -1] = e[N + 1 + i], p[-1, j] = e[N - 1 - j]):
 * j < L: e[j]; then the 2-tap filters enc_f2(e, k) (k < L - 1), the 3-tap filters
 * enc_f3(e, k) (k < L - 2), the two ends weighted 3:1, the DC. enc_h264_inxn_d forms value j,
 * enc_h264_inxn_rule says which one sample (x, y) of mode m is: each directional mode a 2- or
 * 3-tap filter along its direction from position k of the row. */
ENC_FN int enc_f2(const uint8_t *e, int k) {
    return (e[k] + e[k + 1] + 1) >> 1;
}
ENC_FN int enc_f3(const uint8_t *e, int k) {
    return (e[k] + 2 * e[k + 1] + e[k + 2] + 2) >> 2;
}
ENC_FN int enc_h264_inxn_d(const uint8_t *e, int N, int a, int b, int j) {
    const int L = 3 * N + 1;
    if (j < 3 * L - 1) {
        /* Every value but the DC as (w0 e[p] + w1 e[p + 1] + w2 e[p + 2] + 2) >> 2, weights
         * selected (one path for the GPU's lanes, a value each): e[j] 4 0 0; enc_f2 at k
         * 2 2 0 ((2u + 2v + 2) >> 2 = (u + v + 1) >> 1); enc_f3 at k 1 2 1; down left's last
         * 1 3 0 from L - 2; horizontal up's e[1] + 3 e[0]: 3 1 0 from 0. */
        const int f2 = j >= L, f3 = j >= 2 * L - 1, dl = j == 3 * L - 3, hu = j == 3 * L - 2;
        const int p = hu ? 0 : dl ? L - 2 : f3 ? j - 2 * L + 1 : f2 ? j - L : j;
        const int w0 = hu ? 3 : dl || f3 ? 1 : f2 ? 2 : 4;
        const int w1 = hu ? 1 : dl ? 3 : f2 ? 2 : 0, w2 = f3 && !dl && !hu ? 1 : 0;
        return (w0 * e[p] + w1 * e[w1 ? p + 1 : p] + w2 * e[w2 ? p + 2 : p] + 2) >> 2;
    }
    int st = 0, sl = 0; /* the DC */
    for (int i = 0; i < N; i++)
        st += e[N + 1 + i], sl += e[N - 1 - i];
    const int l = N == 8 ? 3 : 2; /* log2 N */
    return a && b ? (st + sl + N) >> (l + 1)
           : a    ? (sl + N / 2) >> l
           : b    ? (st + N / 2) >> l
                  : 128;
}
ENC_FN int enc_h264_inxn_rule(int N, int m, int x, int y) {
    const int L = 3 * N + 1, F2 = L, F3 = 2 * L - 1;
    switch (m) {
    case 0:
        return N + 1 + x;
    case 1:
        return N - 1 - y;
    case 2:
        return 3 * L - 1;
    case 3: /* down left: along x + y on the upper row, the last sample weighs p[2N-1, -1] 3x */
        return x + y == 2 * N - 2 ? 3 * L - 3 : F3 + N + 1 + x + y;
    case 4: /* down right: along x - y through the corner */
        return F3 + N - 1 + x - y;
    case 5: { /* vertical right: zVR = 2x - y */
        const int z = 2 * x - y, k = N + x - (y >> 1);
        return z >= 0 && !(z & 1) ? F2 + k
               : z > 0            ? F3 + k - 1
               : z == -1          ? F3 + N - 1
                                  : F3 + N - y + 2 * x;
    }
    case 6: { /* horizontal down: zHD = 2y - x, on the left column read upwards */
        const int z = 2 * y - x, k = N - 1 - y + (x >> 1);
        return z >= 0 && !(z & 1) ? F2 + k
               : z > 0            ? F3 + k
               : z == -1          ? F3 + N - 1
                                  : F3 + N - 2 + x - 2 * y;
    }
    case 7: /* vertical left */
        return (y & 1 ? F3 : F2) + N + 1 + x + (y >> 1);
    default: { /* horizontal up: zHU = x + 2y, on the left column read downwards */
        const int z = x + 2 * y, j = y + (x >> 1);
        return z > 2 * N - 3    ? 0
               : z == 2 * N - 3 ? 3 * L - 2
               : z & 1          ? F3 + N - 3 - j
                                : F2 + N - 2 - j;
    }
    }
}
ENC_FN uint8_t enc_h264_inxn_at_n(const EncNbN *n, int N, int m, int x, int y) { /* N = n->n */
    return (uint8_t)enc_h264_inxn_d(n->e, N, n->a, n->b, enc_h264_inxn_rule(N, m, x, y));
}

/* The same with N = n->n (the device calls the above with N a compile-time constant). */
ENC_FN uint8_t enc_h264_inxn_at(const EncNbN *n, int m, int x, int y) {
    return enc_h264_inxn_at_n(n, n->n, m, x, y);
}

/* The whole N x N prediction of mode m into dst (stride N). */
ENC_FN void enc_h264_predn(const EncNbN *n, int m, uint8_t *dst) {
    const int N = n->n;
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++)
            dst[N * y + x] = enc_h264_inxn_at(n, m, x, y);
}

/* predIntra4x4PredMode (8.3.1.1) of the 4x4 luma block at (x4, y4) (4x4 units of the
 * picture), and predIntra8x8PredMode (8.3.2.1) of the 8x8 block whose first 4x4 block that is
 * (an Intra_8x8 block's mode fills its four entries of im4, so this reads 8.3.2.1's blocks
 * n = 1 (A) and n = 2 (B) of an Intra_4x4 neighbour too): Min of the left and upper blocks'
 * modes, where a block of a macroblock that is not I_NxN counts 2, and 2 when either is not
 * available (top: the macroblock row above is in the same slice). mbi: the decision words
 * (mbw per row), im4: the modes (4 mbw per row). */
VIDK_CORE int vidk_h264_inxn_pred_mode(const uint16_t *mbi, const uint8_t *im4, int mbw, int x4,
                                       int y4, int top) {
    const int s = 4 * mbw;
    if (x4 == 0 || ((y4 & 3) == 0 && !top)) return 2;
    const int ma = (x4 & 3) || ENC_MBI_IS_NXN(mbi[(y4 >> 2) * mbw + (x4 >> 2) - 1])
                       ? im4[y4 * s + x4 - 1]
                       : 2;
    const int mb = (y4 & 3) || ENC_MBI_IS_NXN(mbi[((y4 >> 2) - 1) * mbw + (x4 >> 2)])
                       ? im4[(y4 - 1) * s + x4]
                       : 2;
    return ma < mb ? ma : mb;
}

/* ------------------------------------------------------------------ H.264 decision */

/* Mode bits: ue(mb_type) of P_L0_16x16, P_L0_L0_16x8, P_L0_L0_8x16, P_8x8; ue(sub_mb_type)
 * of 8x8, 8x4, 4x8, 4x4 (9.1, Tables 7-13 and 7-17). */
ENC_TAB uint8_t enc_h264_mb_bits[4] = {1, 3, 3, 5};
ENC_TAB uint8_t enc_h264_sub_bits[4] = {1, 3, 3, 5};

ENC_FN VidkMeResult enc_me_at(const EncFrame *f, int bs, int bx, int by) {
    return f->me[bs][(ptrdiff_t)by * f->me_gw[bs] + bx];
}

/* Partition p of a macroblock (VIDK_ME_PART_* numbering, raster order within its shape):
 * its shape, its block in that shape's grid of the frame and its size. */
typedef struct EncPart {
    int bs, bx, by, w, h;
} EncPart;

ENC_FN EncPart enc_h264_part(int mbx, int mby, int p) {
    EncPart r;
    if (p < VIDK_ME_PART_8x4) {
        r.bs = VIDK_BLOCK_4x4, r.w = 4, r.h = 4;
        r.bx = 4 * mbx + (p & 3), r.by = 4 * mby + (p >> 2);
    } else if (p < VIDK_ME_PART_4x8) {
        const int k = p - VIDK_ME_PART_8x4;
        r.bs = VIDK_BLOCK_8x4, r.w = 8, r.h = 4;
        r.bx = 2 * mbx + (k & 1), r.by = 4 * mby + (k >> 1);
    } else if (p < VIDK_ME_PART_8x8) {
        const int k = p - VIDK_ME_PART_4x8;
        r.bs = VIDK_BLOCK_4x8, r.w = 4, r.h = 8;
        r.bx = 4 * mbx + (k & 3), r.by = 2 * mby + (k >> 2);
    } else if (p < VIDK_ME_PART_16x8) {
        const int k = p - VIDK_ME_PART_8x8;
        r.bs = VIDK_BLOCK_8x8, r.w = 8, r.h = 8;
        r.bx = 2 * mbx + (k & 1), r.by = 2 * mby + (k >> 1);
    } else if (p < VIDK_ME_PART_8x16) {
        r.bs = VIDK_BLOCK_16x8, r.w = 16, r.h = 8;
        r.bx = mbx, r.by = 2 * mby + (p - VIDK_ME_PART_16x8);
    } else if (p < VIDK_ME_PART_16x16) {
        r.bs = VIDK_BLOCK_8x16, r.w = 8, r.h = 16;
        r.bx = 2 * mbx + (p - VIDK_ME_PART_8x16), r.by = mby;
    } else {
        r.bs = VIDK_BLOCK_16x16, r.w = 16, r.h = 16, r.bx = mbx, r.by = mby;
    }
    return r;
}

/* The 8-point Hadamard transform of d[0], d[st], .., d[7 st] in place (unnormalised): three
 * butterfly stages. */
ENC_FN void enc_had8_1d(int *d, int st) {
    for (int h = 1; h < 8; h <<= 1)
        for (int k = 0; k < 8; k++)
            if (!(k & h)) {
                const int u = d[st * k], v = d[st * (k + h)];
                d[st * k] = u + v, d[st * (k + h)] = u - v;
            }
}

/* The transform-size measures of one 8x8 quadrant of an inter macroblock's luma residual
 * (src against the prediction pr, strides ss / ps): *s4 = the sum of its four vidk_satd4,
 * *s8 = the sum of the magnitudes of its 8x8 Hadamard transform (unscaled). */
ENC_FN void enc_h264_tx_measure(const uint8_t *src, int ss, const uint8_t *pr, int ps,
                                uint32_t *s4, uint32_t *s8) {
    int d[64];
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 8; i++)
            d[8 * j + i] = src[j * ss + i] - pr[j * ps + i];
    uint32_t a = 0;
    for (int b = 0; b < 4; b++) {
        int t[16];
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                t[4 * j + i] = d[8 * (4 * (b >> 1) + j) + 4 * (b & 1) + i];
        a += vidk_satd4(t);
    }
    *s4 = a;
    for (int l = 0; l < 8; l++) /* rows, then columns */
        enc_had8_1d(d + 8 * l, 1);
    for (int l = 0; l < 8; l++)
        enc_had8_1d(d + l, 8);
    uint32_t e = 0;
    for (int k = 0; k < 64; k++)
        e += (uint32_t)vidk_iabs(d[k]);
    *s8 = e;
}

/* The transform size of an inter macroblock where the 8x8 one is allowed (docs/ENCODE.md
 * §4), from its quadrants' enc_h264_tx_measure sums: 8x8 when the SA8D, (s8 + 2) >> 2, is
 * below the SATD s4 (the two agree on white noise; the 8x8 transform wins smooth
 * residuals); the 4x4 on ties. */
ENC_FN int enc_h264_tx8_wins(uint32_t s4, uint32_t s8) {
    return (s8 + 2u) >> 2 < s4;
}

/* SATD of a w x h luma block at (x, y) against the reference moved by v (quarter samples,
 * enc_luma_q): vidk_satd4 per 4x4 block, w <= 16. A strip of four rows at a time: its
 * differences are gathered first (on the GPU: the strip's loads in flight together), then
 * its blocks' transforms. */
ENC_FN uint32_t enc_h264_satd_at(const EncFrame *f, int x, int y, int w, int h, VidkMv v) {
    uint32_t s = 0;
#ifndef __CUDA_ARCH__ /* the host: from the two sources' rows where no sample is clamped */
    EncQRows r;
    if (enc_qrows(f, x, y, w, h, v, &r)) {
        const uint8_t *src = f->src[0] + (ptrdiff_t)y * f->ss[0] + x;
        return f->satd_avg ? f->satd_avg(src, f->ss[0], r.a, r.b, r.sa, w, h)
                           : vidk_satd_avg_wxh(src, f->ss[0], r.a, r.b, r.sa, w, h);
    }
    uint8_t pr[256]; /* else the prediction first (enc_mc_luma) */
    enc_mc_luma(f, x, y, w, h, v, pr, 16);
    for (int by = 0; by < h; by += 4)
        for (int bx = 0; bx < w; bx += 4) {
            int d[16];
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++)
                    d[4 * j + i] = f->src[0][(ptrdiff_t)(y + by + j) * f->ss[0] + x + bx + i] -
                                   pr[(by + j) * 16 + bx + i];
            s += vidk_satd4(d);
        }
#else
    EncQRows qr;
    const int rows = enc_qrows(f, x, y, w, h, v, &qr);
    for (int by = 0; by < h; by += 4) {
        int d[4][16]; /* the strip's 4x4 blocks, left to right */
        ENC_UNROLL
        for (int j = 0; j < 4; j++) {
            const int yy = y + by + j;
            const uint8_t *c = f->src[0] + (ptrdiff_t)yy * f->ss[0] + x;
            ENC_UNROLL
            for (int i = 0; i < w; i++)
                d[i >> 2][4 * j + (i & 3)] =
                    c[i] - (rows ? enc_qrows_at(&qr, i, by + j) : enc_luma_q(f, x + i, yy, v));
        }
        ENC_UNROLL
        for (int b = 0; b < w / 4; b++)
            s += vidk_satd4(d[b]);
    }
#endif
    return s;
}

/* SATD of a 16x16 block against a prediction (stride 16), a strip of four rows at a time as
 * enc_h264_satd_at. */
ENC_FN uint32_t enc_satd16(const uint8_t *a, int as, const uint8_t *pr) {
    uint32_t s = 0;
    for (int by = 0; by < 16; by += 4) {
        int d[4][16];
        ENC_UNROLL
        for (int j = 0; j < 4; j++) {
            ENC_UNROLL
            for (int i = 0; i < 16; i++)
                d[i >> 2][4 * j + (i & 3)] = a[(by + j) * as + i] - pr[(by + j) * 16 + i];
        }
        ENC_UNROLL
        for (int b = 0; b < 4; b++)
            s += vidk_satd4(d[b]);
    }
    return s;
}

/* The bias (bits) of the Intra_16x16 candidate in P frames: its cost is estimated from the
 * source's neighbours, which predict better than the reconstruction the macroblock is then
 * coded from, and leaves out its residual, which Intra_16x16 codes with the intra rounding and
 * no decimation. Measured (docs/PERFORMANCE.md): 0 made akiyo's BD-rate +28%, 32 +3.7%, 48
 * gave the best mean of the real clips. */
#define ENC_H264_INTRA_P_BIAS 48u

/* The bias (bits) of an I_NxN candidate (Intra_4x4, Intra_8x8) against Intra_16x16: what its
 * cost leaves out (mb_type and coded_block_pattern apart, the blocks' levels with their DC
 * against one DC block). Measured (BD-rate PSNR-Y against x264 veryfast, the four small
 * clips, CAVLC, threads): 0 +18.22%, 12 +18.21%, 24 +18.29%, 48 +18.49%: flat; 24 kept. */
#define ENC_H264_NXN_BIAS 24u

/* The H.264 decision's rate term (docs/ENCODE.md §4): 1.5 lambda x bits, (3 lambda bits) >> 1
 * (SATD distortions weigh more than the SAD lambda assumes; measured, session 27: 1 lambda
 * +25.30%, 1.5 +24.39%, 2 +25.20% BD-rate against x264 veryfast on the four small clips). */
ENC_FN uint32_t enc_h264_lbits(const EncFrame *f, unsigned bits) {
    return 3u * (uint32_t)f->lambda * bits >> 1;
}

/* I_NxN (docs/ENCODE.md §7), the pieces the CPU backends (enc_tmpl.h h264_inxn_try) and the
 * device (src/cuda/enc_warp.cuh w_h264_inxn_block, the warp by sample and by block) share.
 * Block k in decoding order (luma4x4BlkIdx / luma8x8BlkIdx) of a macroblock: its place (bx, by)
 * in N units. */
ENC_FN void enc_h264_inxn_blk(int N, int k, int *bx, int *by) {
    *bx = N == 8 ? k & 1 : (k & 1) | ((k >> 1) & 2);
    *by = N == 8 ? k >> 1 : ((k >> 1) & 1) | ((k >> 2) & 2);
}

/* The mode bits of mode m against the predicted mode pm (prev_intra*_pred_mode_flag, and
 * rem_intra*_pred_mode when m is not pm). */
ENC_FN unsigned enc_h264_inxn_mbits(int m, int pm) {
    return m == pm ? 1u : 4u;
}

/* The SATD of 4x4 block b4 (raster) of src - pr (N x N, stride N). */
ENC_FN uint32_t enc_h264_inxn_satd(const uint8_t *src, int ss, const uint8_t *pr, int N,
                                   int b4) {
    const int ox = 4 * (b4 & 1), oy = 4 * (b4 >> 1);
    int d[16];
    for (int i = 0; i < 16; i++)
        d[i] =
            src[(oy + (i >> 2)) * ss + ox + (i & 3)] - pr[(oy + (i >> 2)) * N + ox + (i & 3)];
    return vidk_satd4(d);
}

/* The cost of available mode m for the N x N block at src (stride ss) with neighbours nb and
 * predicted mode pm: the SATD of its 4x4 blocks + lambda x (1 bit when m is pm, else 4); the
 * prediction into pr (stride N). */
ENC_FN uint32_t enc_h264_inxn_cost(const EncFrame *f, const EncNbN *nb, int m, int pm,
                                   const uint8_t *src, int ss, uint8_t *pr) {
    const int N = nb->n;
    enc_h264_predn(nb, m, pr);
    uint32_t c = enc_h264_lbits(f, enc_h264_inxn_mbits(m, pm));
    for (int b4 = 0; b4 < N * N / 16; b4++)
        c += enc_h264_inxn_satd(src, ss, pr, N, b4);
    return c;
}

/* Mode m of the N x N block at (x4, y4) (4x4 units) into f->im4 (an 8x8 block's into its four
 * entries). */
ENC_FN void enc_h264_im4_set(const EncFrame *f, int x4, int y4, int N, int m) {
    for (int j = 0; j < N / 4; j++)
        for (int i = 0; i < N / 4; i++)
            f->im4[(ptrdiff_t)(y4 + j) * (f->W / 4) + x4 + i] = (uint8_t)m;
}

/* The Intra_16x16 candidate of a P-frame macroblock (docs/ENCODE.md §4), estimated from the
 * source's neighbours, for mode m: SATD + lambda x (ue(6 + m): mb_type 6 + m in a P slice
 * without residual, + 1 for intra_chroma_pred_mode DC + ENC_H264_INTRA_P_BIAS), as
 * cost << 2 | m; 0xffffffff when the mode's neighbours are missing. The estimate is the
 * lowest of the four (the first on ties: the lowest packed value). */
ENC_FN uint32_t enc_h264_intra_est(const EncFrame *f, int mbx, int mby, int m) {
    EncNb nb;
    uint8_t pr[256];
    enc_h264_nb_of(f, f->src[0], f->ss[0], 0, 16 * mbx, 16 * mby, 16, &nb);
    if (!enc_h264_pred16(&nb, m, pr)) return 0xffffffffu;
    const uint8_t *src = f->src[0] + (ptrdiff_t)(16 * mby) * f->ss[0] + 16 * mbx;
    const uint32_t c =
        enc_satd16(src, f->ss[0], pr) +
        enc_h264_lbits(f, vidk_ue_bits(6u + (unsigned)m) + 1u + ENC_H264_INTRA_P_BIAS);
    return c << 2 | (uint32_t)m;
}

/* The I_NxN candidates (Intra_4x4, Intra_8x8) of an inter frame's macroblock, estimated as
 * the Intra_16x16 one (docs/ENCODE.md §4): each N x N block predicted from the source's
 * samples around it with the availability of the standard (enc_h264_nbn_avail), its mode the
 * first lowest SATD + lambda x mode bits, the predicted mode from the estimate's own earlier
 * blocks, 2 (DC) across the macroblock's edge (what an inter neighbour gives). The source
 * predicts a block's samples better than the reconstruction will, and more so the smaller
 * the block, so the summed cost is weighed by 5/4 before ENC_H264_INTRA_P_NXN_BIAS bits are
 * added (5/4 and 24 bits chosen on basketballpass with the threads backend against x264
 * veryfast, better than 1/1 with fixed and with adaptive B-frames; the effect at 1080p on
 * the GPU: docs/PERFORMANCE.md session 43). */
#define ENC_H264_INTRA_P_NXN_BIAS 24u

/* The SATDs s[m] of N x N block (bx, by) of the macroblock (its 4x4 blocks' summed) against
 * each mode m's prediction from the source; 0xffffffff where m's neighbours are missing. */
ENC_FN void enc_h264_nxn_est_satd(const EncFrame *f, int mbx, int mby, int N, int bx, int by,
                                  uint32_t s[9]) {
    const int ss = f->ss[0];
    int a, b, c;
    enc_h264_nbn_avail(f, mbx, mby, N, bx, by, &a, &b, &c);
    const uint8_t *src = f->src[0] + (ptrdiff_t)(16 * mby + N * by) * ss + 16 * mbx + N * bx;
    EncNbN nb;
    uint8_t pr[64];
    enc_h264_nbn_at(src, ss, N, a, b, c, &nb);
    for (int m = 0; m < 9; m++) {
        s[m] = 0xffffffffu;
        if (!enc_h264_inxn_ok(&nb, m)) continue;
        enc_h264_predn(&nb, m, pr);
        s[m] = 0;
        for (int b4 = 0; b4 < (N == 8 ? 4 : 1); b4++)
            s[m] += enc_h264_inxn_satd(src, ss, pr, N, b4);
    }
}

/* A block's mode in the estimate: the first lowest s[m] + lambda x mode bits against pm
 * among the available modes (DC always is); its cost into *cost. */
ENC_FN int enc_h264_nxn_est_mode(const EncFrame *f, const uint32_t s[9], int pm,
                                 uint32_t *cost) {
    uint32_t bc = 0xffffffffu;
    int bm = 2;
    for (int m = 0; m < 9; m++) {
        if (s[m] == 0xffffffffu) continue;
        const uint32_t c = s[m] + enc_h264_lbits(f, enc_h264_inxn_mbits(m, pm));
        if (c < bc) bc = c, bm = m;
    }
    *cost = bc;
    return bm;
}

/* The candidate's estimate from its blocks' summed costs, packed as enc_h264_intra_est's
 * (mode bits 2: the word's Intra_16x16 mode is chosen again when the macroblock is coded). */
ENC_FN uint32_t enc_h264_nxn_est_pack(const EncFrame *f, uint32_t c) {
    const uint32_t v = c + (c >> 2) + enc_h264_lbits(f, 5u + 1u + ENC_H264_INTRA_P_NXN_BIAS);
    return v << 2 | 2u;
}

/* The I_NxN estimate (N = 4, 8) of macroblock (mbx, mby), packed: its blocks in decoding
 * order (the device's lanes: src/cuda/enc_warp.cuh lane_nxn_est). */
ENC_FN uint32_t enc_h264_nxn_est(const EncFrame *f, int mbx, int mby, int N) {
    uint32_t c = 0;
    uint8_t md[16]; /* the blocks' modes, a 4x4 block each (raster) */
    for (int k = 0; k < 256 / (N * N); k++) {
        int bx, by;
        enc_h264_inxn_blk(N, k, &bx, &by);
        const int q = 4 * (N / 4) * by + (N / 4) * bx; /* its top-left 4x4 block */
        uint32_t s[9], bc;
        enc_h264_nxn_est_satd(f, mbx, mby, N, bx, by, s);
        const int ma = q & 3 ? md[q - 1] : 2, mb = q >> 2 ? md[q - 4] : 2;
        const int bm = enc_h264_nxn_est_mode(f, s, ma < mb ? ma : mb, &bc);
        c += bc;
        for (int j = 0; j < N / 4; j++)
            for (int i = 0; i < N / 4; i++)
                md[q + 4 * j + i] = (uint8_t)bm;
    }
    return enc_h264_nxn_est_pack(f, c);
}

/* The intra estimate of an inter frame's macroblock (f->dist's ENC_H264_DIST_INTRA): the
 * lowest of Intra_16x16's modes and, where the frame may use them, the I_NxN estimates. */
ENC_FN uint32_t enc_h264_intra_est_mb(const EncFrame *f, int mbx, int mby) {
    uint32_t v = 0xffffffffu;
    for (int m = 0; m < 4; m++) {
        const uint32_t e = enc_h264_intra_est(f, mbx, mby, m);
        if (e < v) v = e;
    }
    if (f->i4x4) {
        const uint32_t e = enc_h264_nxn_est(f, mbx, mby, 4);
        if (e < v) v = e;
    }
    if (f->i8x8) {
        const uint32_t e = enc_h264_nxn_est(f, mbx, mby, 8);
        if (e < v) v = e;
    }
    return v;
}

/* The quarter-sample refinement (docs/ENCODE.md §3): the cost of vector v for a block whose
 * SATD at v is sd: sd + 2 lambda x the CAVLC length of v's mvd against (0, 0). */
ENC_FN uint32_t enc_h264_sub_cost(const EncFrame *f, uint32_t sd, VidkMv v) {
    return sd + 2u * (uint32_t)f->lambda * (vidk_se_bits(v.x) + vidk_se_bits(v.y));
}

/* The eight neighbours of a position (raster order around it) at distance `step`. */
ENC_FN VidkMv enc_sub_nb(VidkMv c, int k, int step) {
    const int i = k + (k >= 4); /* 0..8 without the centre */
    VidkMv v = {(int16_t)(c.x + step * (i % 3 - 1)), (int16_t)(c.y + step * (i / 3 - 1))};
    return v;
}

/* Partition at (x, y), w x h, with the search's whole-sample vector mv: refined to half, then
 * quarter samples, each step the first lowest enc_h264_sub_cost of the centre and its eight
 * neighbours (the centre first, then raster order). Returns the refined vector's SATD. */
ENC_FN uint32_t enc_h264_refine(const EncFrame *f, int x, int y, int w, int h, VidkMv *mv) {
    VidkMv c = {(int16_t)(4 * mv->x), (int16_t)(4 * mv->y)};
    uint32_t sd = enc_h264_satd_at(f, x, y, w, h, c), best = enc_h264_sub_cost(f, sd, c);
    for (int step = 2; step >= 1; step >>= 1) {
        const VidkMv o = c;
        for (int k = 0; k < 8; k++) {
            const VidkMv v = enc_sub_nb(o, k, step);
            const uint32_t s = enc_h264_satd_at(f, x, y, w, h, v);
            const uint32_t cost = enc_h264_sub_cost(f, s, v);
            if (cost < best) best = cost, sd = s, c = v;
        }
    }
    *mv = c;
    return sd;
}

/* The refined vector of partition p (VIDK_ME_PART_*) of macroblock u (EncFrame.part_mv). */
ENC_FN VidkMv *enc_h264_pmv(const EncFrame *f, int u, int p) {
    return f->part_mv + (ptrdiff_t)p * f->uw * f->uh + u;
}

/* What the decision passes read per macroblock (f->dist, ENC_H264_DIST_N each), computed
 * once per frame before them: entry p < 41, the SATD of partition p (VIDK_ME_PART_*) at its
 * refined vector (enc_h264_part_dist, which keeps the vector in f->part_mv; 0 for the sub-8x8
 * shapes when the frame does not use them); entry 41, the Intra_16x16 estimate
 * (the lowest enc_h264_intra_est). */
#define ENC_H264_DIST_INTRA 41
#define ENC_H264_DIST_N     42
ENC_FN uint32_t enc_h264_part_dist(const EncFrame *f, int mbx, int mby, int p) {
    VidkMv *pm = enc_h264_pmv(f, mby * f->uw + mbx, p);
    if (f->no_sub8x8 && p < VIDK_ME_PART_8x8) {
        /* never read (the decision skips these shapes, which the search did not run): a
         * vector of its own per partition, so that a decision reading them would split the
         * 8x8 quadrants (tests/test_enc_decide.c's level check, mutation level_no_sub8x8) */
        pm->x = (int16_t)p, pm->y = (int16_t)-p;
        return 0;
    }
    const EncPart q = enc_h264_part(mbx, mby, p);
    *pm = enc_me_at(f, q.bs, q.bx, q.by).mv;
    return enc_h264_refine(f, q.bx * q.w, q.by * q.h, q.w, q.h, pm);
}

/* The searched vector of 4x4 block (i, j) of macroblock (mbx, mby) under partition mode
 * `mode` (0 16x16, 1 16x8, 2 8x16, 3 P_8x8 with sub-macroblock type `sub` for the block's
 * quadrant: 0 8x8, 1 8x4, 2 4x8, 3 4x4), and the index of its partition (VIDK_ME_PART_*). */
ENC_CFN int enc_h264_cand_part(int mode, int sub, int i, int j) {
    if (mode == 0) return VIDK_ME_PART_16x16;
    if (mode == 1) return VIDK_ME_PART_16x8 + (j >> 1);
    if (mode == 2) return VIDK_ME_PART_8x16 + (i >> 1);
    if (sub == 0) return VIDK_ME_PART_8x8 + 2 * (j >> 1) + (i >> 1);
    if (sub == 1) return VIDK_ME_PART_8x4 + 2 * j + (i >> 1);
    if (sub == 2) return VIDK_ME_PART_4x8 + 4 * (j >> 1) + i;
    return VIDK_ME_PART_4x4 + 4 * j + i;
}

ENC_FN VidkMv enc_h264_cand_mv(const EncFrame *f, int mbx, int mby, int mode, int sub, int i,
                               int j) {
    return *enc_h264_pmv(f, mby * f->uw + mbx, enc_h264_cand_part(mode, sub, i, j));
}

/* The distortion of quadrant q (raster) under sub-macroblock type s: its partitions' dist. */
ENC_FN uint32_t enc_h264_sub_dist(const uint32_t *dist, int q, int s) {
    const int qi = q & 1, qj = q >> 1;
    if (s == 0) return dist[VIDK_ME_PART_8x8 + q];
    if (s == 1)
        return dist[VIDK_ME_PART_8x4 + 4 * qj + qi] + dist[VIDK_ME_PART_8x4 + 4 * qj + 2 + qi];
    if (s == 2)
        return dist[VIDK_ME_PART_4x8 + 4 * qj + 2 * qi] +
               dist[VIDK_ME_PART_4x8 + 4 * qj + 2 * qi + 1];
    uint32_t c = 0;
    for (int k = 0; k < 4; k++)
        c += dist[VIDK_ME_PART_4x4 + 4 * (2 * qj + (k >> 1)) + 2 * qi + (k & 1)];
    return c;
}

/* CAVLC bits of the mvds of the partitions of (mode, sub) with the vectors in n->in against
 * the standard's predictors (8.4.1.3). */
ENC_FN unsigned enc_h264_mvd_bits(const VidkH264MvNb *n, int mode, const int *sub) {
    int px[16], py[16], pw[16], pd[16];
    int8_t order[16];
    const int np = vidk_h264_parts(mode, sub, px, py, pw, pd, order);
    unsigned b = 0;
    for (int k = 0; k < np; k++)
        b += enc_mvd_bits(n->in[4 * py[k] + px[k]],
                          vidk_h264_mvp(n, px[k], py[k], pw[k], pd[k], order, k));
    return b;
}

/* The same for the partitions of P_8x8 quadrant q alone, under sub-macroblock type s: the
 * quadrant's terms of enc_h264_mvd_bits(n, 3, sub) with sub[q] = s, whatever the other
 * quadrants' types (the earlier quadrants precede it in decoding order, the later ones
 * follow it), without laying out the whole macroblock (vidk_h264_parts) per candidate. */
ENC_FN unsigned enc_h264_mvd_bits_quad(const VidkH264MvNb *n, int q, int s) {
    const int qx = 2 * (q & 1), qy = 2 * (q >> 1), np = s == 0 ? 1 : s == 3 ? 4 : 2;
    int8_t order[16]; /* the quadrant's own partitions by index; -1 before it, 16 after */
    for (int b = 0; b < 16; b++) {
        const int x = b & 3, y = b >> 2, bq = (y >> 1) * 2 + (x >> 1);
        const int k = s == 0 ? 0 : s == 1 ? (y & 1) : s == 2 ? (x & 1) : 2 * (y & 1) + (x & 1);
        order[b] = (int8_t)(bq < q ? -1 : bq > q ? 16 : k);
    }
    unsigned bits = 0;
    for (int k = 0; k < np; k++) {
        const int x = qx + (s >= 2 ? (k & 1) : 0), y = qy + (s == 1 ? k : s == 3 ? k >> 1 : 0);
        bits +=
            enc_mvd_bits(n->in[4 * y + x], vidk_h264_mvp(n, x, y, s < 2 ? 2 : 1, 0, order, k));
    }
    return bits;
}

/* The decision's candidates (enc_h264_decide), each costed against the neighbourhood n with
 * its vectors left in n->in: SATD of its partitions at the search's best vectors (f->dist) +
 * lambda x the CAVLC bits of its mb_type, sub_mb_types and mvds against the standard's
 * predictors. */

/* Partition mode m (0 16x16, 1 16x8, 2 8x16). */
ENC_FN uint32_t enc_h264_cost_mode(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                   int m) {
    const uint32_t *dist = f->dist + ENC_H264_DIST_N * (ptrdiff_t)(mby * f->uw + mbx);
    const int zero4[4] = {0, 0, 0, 0};
    /* the first and the last partition's vectors (the same one for 16x16), each read once */
    const VidkMv a = enc_h264_cand_mv(f, mbx, mby, m, 0, 0, 0),
                 b = m ? enc_h264_cand_mv(f, mbx, mby, m, 0, 3, 3) : a;
    for (int k = 0; k < 16; k++)
        n->in[k] = (m == 1 ? k >> 3 : m == 2 ? (k & 3) >> 1 : 0) ? b : a;
    const uint32_t c = m == 0   ? dist[VIDK_ME_PART_16x16]
                       : m == 1 ? dist[VIDK_ME_PART_16x8] + dist[VIDK_ME_PART_16x8 + 1]
                                : dist[VIDK_ME_PART_8x16] + dist[VIDK_ME_PART_8x16 + 1];
    return c + enc_h264_lbits(f, enc_h264_mb_bits[m] + enc_h264_mvd_bits(n, m, zero4));
}

/* P_8x8: quadrant q's vectors under sub-macroblock type s into n->in (its 4x4 blocks k in
 * raster order; each partition's vector read once: 8x8 one, 8x4 the top and bottom, 4x8 the
 * left and right, 4x4 four). */
ENC_FN void enc_h264_set_quad(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n, int q,
                              int s) {
    const int i = 2 * (q & 1), j = 2 * (q >> 1);
    const VidkMv v0 = enc_h264_cand_mv(f, mbx, mby, 3, s, i, j);
    const VidkMv v1 = s & 2 ? enc_h264_cand_mv(f, mbx, mby, 3, s, i + 1, j) : v0;
    const VidkMv v2 = s & 1 ? enc_h264_cand_mv(f, mbx, mby, 3, s, i, j + 1) : v0;
    const VidkMv v3 = s == 3   ? enc_h264_cand_mv(f, mbx, mby, 3, s, i + 1, j + 1)
                      : s == 1 ? v2
                               : v1;
    n->in[4 * j + i] = v0, n->in[4 * j + i + 1] = v1;
    n->in[4 * j + 4 + i] = v2, n->in[4 * j + 4 + i + 1] = v3;
}

/* P_8x8: quadrant q under sub-macroblock type sub[q] (the earlier quadrants' types and
 * vectors in sub and n->in). */
ENC_FN uint32_t enc_h264_cost_quad(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                   const int *sub, int q) {
    const uint32_t *dist = f->dist + ENC_H264_DIST_N * (ptrdiff_t)(mby * f->uw + mbx);
    enc_h264_set_quad(f, mbx, mby, n, q, sub[q]);
    return enc_h264_sub_dist(dist, q, sub[q]) +
           enc_h264_lbits(f, enc_h264_sub_bits[sub[q]] + enc_h264_mvd_bits_quad(n, q, sub[q]));
}

/* The P_Skip candidate's SATD (16x16 at the P_Skip vector sv) is kept in f->skipc from one
 * decision pass to the next while sv stays: the kept value into *satd when it is sv's. */
ENC_FN uint32_t enc_h264_skip_key(VidkMv sv) {
    return (uint32_t)(uint16_t)sv.x | (uint32_t)(uint16_t)sv.y << 16;
}
ENC_FN int enc_h264_skip_kept(const EncFrame *f, int mbx, int mby, VidkMv sv, uint32_t *satd) {
    const uint32_t *sc = f->skipc + 2 * (ptrdiff_t)(mby * f->uw + mbx);
    if (sc[0] != enc_h264_skip_key(sv)) return 0;
    *satd = sc[1]; /* written with the key (none is kept after the seed) */
    return 1;
}
ENC_FN void enc_h264_skip_keep(const EncFrame *f, int mbx, int mby, VidkMv sv, uint32_t satd) {
    uint32_t *sc = f->skipc + 2 * (ptrdiff_t)(mby * f->uw + mbx);
    sc[0] = enc_h264_skip_key(sv), sc[1] = satd;
}

/* 16x16 at the P_Skip vector, whose SATD is satd. */
ENC_FN uint32_t enc_h264_cost_skip(const EncFrame *f, VidkH264MvNb *n, uint32_t satd) {
    const VidkMv sv = vidk_h264_skip_mv(n);
    const int zero4[4] = {0, 0, 0, 0};
    for (int k = 0; k < 16; k++)
        n->in[k] = sv;
    return satd + enc_h264_lbits(f, enc_h264_mb_bits[0] + enc_h264_mvd_bits(n, 0, zero4));
}

/* The decision's candidates: k = 0, 1, 2 the partition modes, 3 P_8x8 (which picks each
 * quadrant's sub-macroblock type in turn, the first lowest, the later quadrants' predictors
 * seeing the earlier choices), 4 P_Skip (skip_satd: its SATD). Each is costed against the
 * neighbourhood n alone (whatever n->in holds before) and leaves its vectors in n->in;
 * *word: its decision word (ENC_MBI_*, no TX8). */
#define ENC_H264_CANDS 5
ENC_FN uint32_t enc_h264_cand(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n, int k,
                              uint32_t skip_satd, unsigned *word) {
    if (k < 3) {
        *word = (unsigned)k;
        return enc_h264_cost_mode(f, mbx, mby, n, k);
    }
    if (k == 4) {
        *word = 0;
        return enc_h264_cost_skip(f, n, skip_satd);
    }
    int sub[4] = {0, 0, 0, 0};
    uint32_t c = enc_h264_lbits(f, enc_h264_mb_bits[3]);
    for (int q = 0; q < 4; q++) {
        uint32_t bq = 0xffffffffu;
        int bs = 0;
        for (int s = 0; s < (f->no_sub8x8 ? 1 : 4); s++) {
            sub[q] = s;
            const uint32_t cq = enc_h264_cost_quad(f, mbx, mby, n, sub, q);
            if (cq < bq) bq = cq, bs = s;
        }
        sub[q] = bs;
        enc_h264_set_quad(f, mbx, mby, n, q, bs);
        c += bq;
    }
    *word = 3u | (unsigned)(sub[0] << 2 | sub[1] << 4 | sub[2] << 6 | sub[3] << 8);
    return c;
}

/* The partition decision of an inter macroblock (docs/ENCODE.md §4) from its candidates'
 * costs c[] (enc_h264_cand): the first lowest of the modes and P_8x8; then P_Skip replaces
 * it when not dearer (with no residual it is coded as P_Skip); then Intra_16x16 (`intra`,
 * f->dist's estimate: cost << 2 | mode) when cheaper than the first. Returns the winner's
 * k, or ENC_H264_CANDS for Intra_16x16 (its vectors zero). */
ENC_FN int enc_h264_pick(const uint32_t *c, uint32_t intra) {
    uint32_t best = c[0];
    int w = 0;
    for (int k = 1; k < 4; k++)
        if (c[k] < best) best = c[k], w = k;
    if (c[4] <= best) w = 4;
    return intra >> 2 < best ? ENC_H264_CANDS : w;
}

/* The decision word of the winner w of enc_h264_pick (word[k]: enc_h264_cand's words). */
ENC_FN unsigned enc_h264_word(int w, const unsigned *word, uint32_t intra) {
    return w == ENC_H264_CANDS ? ENC_MBI_INTRA | (intra & 3u) : word[w];
}

/* The decision against the neighbourhood n (the neighbours' vectors of the previous
 * decision pass): every candidate, then the pick. Leaves the vectors in n->in; returns the
 * decision word. */
ENC_FN unsigned enc_h264_decide(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                uint32_t skip_satd) {
    const uint32_t intra =
        f->dist[ENC_H264_DIST_N * (ptrdiff_t)(mby * f->uw + mbx) + ENC_H264_DIST_INTRA];
    VidkMv v[ENC_H264_CANDS][16];
    uint32_t c[ENC_H264_CANDS];
    unsigned word[ENC_H264_CANDS];
    for (int k = 0; k < ENC_H264_CANDS; k++) {
        c[k] = enc_h264_cand(f, mbx, mby, n, k, skip_satd, &word[k]);
        for (int b = 0; b < 16; b++)
            v[k][b] = n->in[b];
    }
    const int w = enc_h264_pick(c, intra);
    for (int b = 0; b < 16; b++)
        if (w == ENC_H264_CANDS)
            n->in[b].x = n->in[b].y = 0;
        else
            n->in[b] = v[w][b];
    return enc_h264_word(w, word, intra);
}

/* The first row of the slice holding macroblock row mby. */
ENC_FN int enc_h264_row0(const EncFrame *f, int mby) {
    return f->slices > 1 ? vidk_h264s_slice_row0(f->uh, f->slices, mby) : 0;
}

/* Decision pass 0 (docs/ENCODE.md §4): every macroblock 16x16 with its refined vector. */
ENC_FN void enc_h264_seed(const EncFrame *f, int mbx, int mby, VidkMv *mvo, uint16_t *mbo) {
    const VidkMv v = enc_h264_cand_mv(f, mbx, mby, 0, 0, 0, 0);
    for (int k = 0; k < 16; k++)
        mvo[(ptrdiff_t)(mby * 4 + k / 4) * (f->W / 4) + mbx * 4 + k % 4] = v;
    mbo[mby * f->uw + mbx] = 0;
    f->skipc[2 * (ptrdiff_t)(mby * f->uw + mbx)] = 0x80008000u; /* no vector: none kept */
}

/* Decision pass k >= 1: the decision of macroblock (mbx, mby) with the neighbours of pass
 * k - 1 (mvi, mbi) into (mvo, mbo), in two steps: the neighbourhood (and from it the P_Skip
 * vector, whose SATD the caller takes from f->skipc or computes), then the decision. */
ENC_FN void enc_h264_decide_nb(const EncFrame *f, int mbx, int mby, const VidkMv *mvi,
                               const uint16_t *mbi, VidkH264MvNb *n) {
    vidk_h264_mvnb_fill(n, mvi, f->W / 4, mbi, ENC_MBI_INTRA, -1, f->uw, f->uh,
                        enc_h264_row0(f, mby), mbx, mby);
}
ENC_FN void enc_h264_decide_out(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                uint32_t skip_satd, VidkMv *mvo, uint16_t *mbo) {
    mbo[mby * f->uw + mbx] = (uint16_t)enc_h264_decide(f, mbx, mby, n, skip_satd);
    for (int k = 0; k < 16; k++)
        mvo[(ptrdiff_t)(mby * 4 + k / 4) * (f->W / 4) + mbx * 4 + k % 4] = n->in[k];
}
ENC_FN void enc_h264_decide_pass(const EncFrame *f, int mbx, int mby, const VidkMv *mvi,
                                 const uint16_t *mbi, VidkMv *mvo, uint16_t *mbo) {
    VidkH264MvNb n;
    enc_h264_decide_nb(f, mbx, mby, mvi, mbi, &n);
    const VidkMv sv = vidk_h264_skip_mv(&n);
    uint32_t satd;
    if (!enc_h264_skip_kept(f, mbx, mby, sv, &satd)) {
        satd = enc_h264_satd_at(f, 16 * mbx, 16 * mby, 16, 16, sv);
        enc_h264_skip_keep(f, mbx, mby, sv, satd);
    }
    enc_h264_decide_out(f, mbx, mby, &n, satd, mvo, mbo);
}

/* ------------------------------------------------------------------ H.264 B frames */

/* docs/ENCODE.md §16. A B macroblock is 16x16, 16x8 or 8x16, each partition from list 0, list
 * 1 or both (the average, 8.4.2.3.1), or direct (spatial, 8.4.2.1.2: B_Direct_16x16, B_Skip
 * without levels); its quadrants' lists in the decision word, its vectors in two planes. */

/* What the decision passes of a B frame read per macroblock (f->dist, ENC_H264_DIST_N
 * each): the 16x16 SATD at the refined list-0 vector (kept in part_mv as in P frames), at the
 * refined list-1 vector (f->l1->part_mv), of the average of the two predictions; and the
 * Intra_16x16 estimate at ENC_H264_DIST_INTRA. */
#define ENC_H264_BDIST_L0 0
#define ENC_H264_BDIST_L1 1
#define ENC_H264_BDIST_BI 2
/* Entries ENC_H264_BDIST_PART + 3 p + l: partition p of the 16x8 and 8x16 shapes (p 0, 1 the
 * 16x8 top and bottom, 2, 3 the 8x16 left and right: VIDK_ME_PART_16x8 + p, their refined
 * vectors in part_mv as in P frames), l 0 list 0, 1 list 1, 2 both (enc_h264_b_part_dist). */
#define ENC_H264_BDIST_PART 3

/* The implicit bi-prediction weights (weighted_bipred_idc 2, 8.4.3) of a B picture tb
 * POC units after its list-0 reference and td before its list-1 one counted from list 0's
 * (DistScaleFactor of 8.4.1.2.3): w0 = 64 - (DSF >> 2), w1 = DSF >> 2, or 32 and 32 when
 * td is 0 or DSF >> 2 leaves [-64, 128]. */
ENC_CFN void enc_h264_implicit_w(int tb, int td, int *w0, int *w1) {
    tb = tb < -128 ? -128 : tb > 127 ? 127 : tb;
    td = td < -128 ? -128 : td > 127 ? 127 : td;
    *w0 = *w1 = 32;
    if (!td) return;
    const int tx = (16384 + (td < 0 ? -td : td) / 2) / td;
    int dsf = (tb * tx + 32) >> 6;
    dsf = dsf < -1024 ? -1024 : dsf > 1023 ? 1023 : dsf;
    if ((dsf >> 2) < -64 || (dsf >> 2) > 128) return;
    *w0 = 64 - (dsf >> 2), *w1 = dsf >> 2;
}

/* A bi-predicted sample from the two lists' samples a, b (8.4.2.3.2, logWD 5, no offsets;
 * with 32 and 32 the default (a + b + 1) >> 1). */
ENC_FN uint8_t enc_h264_bi(const EncFrame *f, int a, int b) {
    const int v = (a * f->bw0 + b * f->bw1 + 32) >> 6;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The lists 4x4 block k (raster order in the macroblock) of a B macroblock with decision word
 * w predicts from: bit 0 list 0, bit 1 list 1 (intra: 0). */
ENC_CFN int enc_h264_b_use4(unsigned w, int k) {
    return (w & ENC_MBI_INTRA) ? 0 : VIDK_H264_BLISTS(w, k & 3, k >> 2);
}

/* The lists of each quadrant q of a B decision word at bits 2q, 2q + 1 (the `uq` argument of
 * the prediction functions below; a 16x16 partition's use u: u * 0x55). */
ENC_CFN int enc_h264_b_uq(unsigned w) {
    return (w & ENC_MBI_INTRA) ? 0 : (int)(w >> 2) & 0xff;
}

/* A B picture's vector of 4x4 block k (raster, w4 a row) as the pictures that take it as
 * their co-located one read it (mvCol, 8.4.1.2.1) and the caller's map shows it: list 0's,
 * list 1's where its partition (its macroblock's decision word in mbi, uw a row) predicts
 * from list 1 only. */
ENC_FN VidkMv enc_h264_b_mv_of(const uint16_t *mbi, int uw, int w4, const VidkMv *mv4,
                               const VidkMv *mv4b, int k) {
    const int x = k % w4, y = k / w4;
    return enc_h264_b_use4(mbi[(y / 4) * uw + x / 4], 4 * (y & 3) + (x & 3)) == 2 ? mv4b[k]
                                                                                  : mv4[k];
}

/* The luma prediction of the n x n block (n 4 or 8) at (x, y) into d (stride ds) from the
 * lists in `use` with vectors a (list 0) and b (list 1); both: their weighted average
 * (enc_h264_bi). The interpolation is per sample: any block size gives the same samples. */
ENC_FN void enc_h264_b_pred_blk(const EncFrame *f, int x, int y, int n, VidkMv a, VidkMv b,
                                int use, uint8_t *d, int ds) {
    uint8_t t[64];
    if (use & 1) enc_mc_luma(f, x, y, n, n, a, d, ds);
    if (use == 2) enc_mc_luma(f->l1, x, y, n, n, b, d, ds);
    if (use == 3) {
        enc_mc_luma(f->l1, x, y, n, n, b, t, n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                d[ds * j + i] = enc_h264_bi(f, d[ds * j + i], t[n * j + i]);
    }
}

/* The luma prediction of a 16x16 macroblock at (x0, y0) into pr (stride 16) with a vector
 * per 8x8 quadrant in each list (v0[q], v1[q]) from the lists of each quadrant in uq
 * (enc_h264_b_uq). */
ENC_FN void enc_h264_b_pred16(const EncFrame *f, int x0, int y0, const VidkMv *v0,
                              const VidkMv *v1, int uq, uint8_t *pr) {
    for (int q = 0; q < 4; q++)
        enc_h264_b_pred_blk(f, x0 + 8 * (q & 1), y0 + 8 * (q >> 1), 8, v0[q], v1[q],
                            uq >> (2 * q) & 3, pr + 16 * 8 * (q >> 1) + 8 * (q & 1), 16);
}

/* The SATD of 4x4 block k (raster order in the macroblock) of that prediction (its quadrant's
 * vectors and lists). */
ENC_FN uint32_t enc_h264_b_satd4(const EncFrame *f, int mbx, int mby, int k, const VidkMv *v0,
                                 const VidkMv *v1, int uq) {
    const int q = (k >> 3) * 2 + ((k & 3) >> 1), x = 16 * mbx + 4 * (k & 3),
              y = 16 * mby + 4 * (k >> 2);
    uint8_t p[16];
    int d[16];
    enc_h264_b_pred_blk(f, x, y, 4, v0[q], v1[q], uq >> (2 * q) & 3, p, 4);
    for (int i = 0; i < 16; i++)
        d[i] = f->src[0][(ptrdiff_t)(y + i / 4) * f->ss[0] + x + i % 4] - p[i];
    return vidk_satd4(d);
}

/* The SATD of the whole 16x16 prediction: its 4x4 blocks' (the device sums them over lanes). */
ENC_FN uint32_t enc_h264_b_satd(const EncFrame *f, int mbx, int mby, const VidkMv *v0,
                                const VidkMv *v1, int uq) {
    uint32_t s = 0;
    for (int k = 0; k < 16; k++)
        s += enc_h264_b_satd4(f, mbx, mby, k, v0, v1, uq);
    return s;
}

/* The chroma prediction of quadrant q (vectors a in list 0, b in list 1, lists use) of
 * macroblock (mbx, mby) in plane p (1, 2) into f->rec. */
ENC_FN void enc_h264_b_pred_cq(const EncFrame *f, int mbx, int mby, int p, int q, VidkMv a,
                               VidkMv b, int use) {
    uint8_t t[16];
    const int x = 8 * mbx + 4 * (q & 1), y = 8 * mby + 4 * (q >> 1);
    uint8_t *d = f->rec[p] + (ptrdiff_t)y * f->cs[p] + x;
    if (use & 1) enc_mc_chroma(f, p, x, y, 4, 4, a, d, f->cs[p]);
    if (use == 2) enc_mc_chroma(f->l1, p, x, y, 4, 4, b, d, f->cs[p]);
    if (use == 3) {
        enc_mc_chroma(f->l1, p, x, y, 4, 4, b, t, 4);
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                d[j * f->cs[p] + i] = enc_h264_bi(f, d[j * f->cs[p] + i], t[4 * j + i]);
    }
}

/* The whole prediction of a B macroblock (luma and chroma) into f->rec. */
ENC_FN void enc_h264_b_pred_mb(const EncFrame *f, int mbx, int mby, const VidkMv *v0,
                               const VidkMv *v1, int uq) {
    uint8_t pr[256];
    const int x0 = 16 * mbx, y0 = 16 * mby;
    enc_h264_b_pred16(f, x0, y0, v0, v1, uq, pr);
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++)
            f->rec[0][(ptrdiff_t)(y0 + j) * f->cs[0] + x0 + i] = pr[16 * j + i];
    for (int p = 1; p < 3; p++)
        for (int q = 0; q < 4; q++)
            enc_h264_b_pred_cq(f, mbx, mby, p, q, v0[q], v1[q], uq >> (2 * q) & 3);
}

/* The partition (0 or 1) of partition mode m (0 16x16, 1 16x8, 2 8x16) holding 4x4 block k
 * (raster order in the macroblock). */
ENC_CFN int enc_h264_part_of(int m, int k) {
    return m == 1 ? k >> 3 : m == 2 ? (k & 3) >> 1 : 0;
}

/* Partition p (ENC_H264_BDIST_PART's numbering) of a B macroblock: each list's searched vector
 * refined to quarter samples (enc_h264_refine, into part_mv and f->l1->part_mv), the SATD at
 * each and of their weighted average into f->dist. */
ENC_FN void enc_h264_b_part_dist(const EncFrame *f, int mbx, int mby, int p) {
    const int u = mby * f->uw + mbx, pp = VIDK_ME_PART_16x8 + p, m = 1 + (p >> 1);
    uint32_t *d =
        (uint32_t *)f->dist + ENC_H264_DIST_N * (ptrdiff_t)u + ENC_H264_BDIST_PART + 3 * p;
    const EncPart q = enc_h264_part(mbx, mby, pp);
    VidkMv *p0 = enc_h264_pmv(f, u, pp), *p1 = enc_h264_pmv(f->l1, u, pp);
    *p0 = enc_me_at(f, q.bs, q.bx, q.by).mv;
    *p1 = enc_me_at(f->l1, q.bs, q.bx, q.by).mv;
    d[0] = enc_h264_refine(f, q.bx * q.w, q.by * q.h, q.w, q.h, p0);
    d[1] = enc_h264_refine(f->l1, q.bx * q.w, q.by * q.h, q.w, q.h, p1);
    const VidkMv a[4] = {*p0, *p0, *p0, *p0}, b[4] = {*p1, *p1, *p1, *p1};
    uint32_t s = 0;
    for (int k = 0; k < 16; k++)
        if (enc_h264_part_of(m, k) == (p & 1))
            s += enc_h264_b_satd4(f, mbx, mby, k, a, b, 0xff);
    d[2] = s;
}

/* The decision passes' input of a B macroblock (f->dist: ENC_H264_BDIST_*, the intra
 * estimate). */
ENC_FN void enc_h264_b_dist(const EncFrame *f, int mbx, int mby) {
    const int u = mby * f->uw + mbx;
    uint32_t *d = (uint32_t *)f->dist + ENC_H264_DIST_N * (ptrdiff_t)u;
    VidkMv *p0 = enc_h264_pmv(f, u, VIDK_ME_PART_16x16);
    VidkMv *p1 = enc_h264_pmv(f->l1, u, VIDK_ME_PART_16x16);
    *p0 = enc_me_at(f, VIDK_BLOCK_16x16, mbx, mby).mv;
    *p1 = enc_me_at(f->l1, VIDK_BLOCK_16x16, mbx, mby).mv;
    d[ENC_H264_BDIST_L0] = enc_h264_refine(f, 16 * mbx, 16 * mby, 16, 16, p0);
    d[ENC_H264_BDIST_L1] = enc_h264_refine(f->l1, 16 * mbx, 16 * mby, 16, 16, p1);
    const VidkMv a[4] = {*p0, *p0, *p0, *p0}, b[4] = {*p1, *p1, *p1, *p1};
    d[ENC_H264_BDIST_BI] = enc_h264_b_satd(f, mbx, mby, a, b, 0xff);
    for (int p = 0; p < 4; p++)
        enc_h264_b_part_dist(f, mbx, mby, p);
    d[ENC_H264_DIST_INTRA] = enc_h264_intra_est_mb(f, mbx, mby);
}

/* colZeroFlag (8.4.1.2.2) of the quadrants q of macroblock (mbx, mby) as bits q: the
 * co-located picture (short-term) is inter there, its block (direct_8x8_inference_flag 1: the
 * macroblock's corner 4x4 block in the quadrant) predicts from its one reference (refIdxCol
 * 0) with a vector in [-1, 1]^2. */
ENC_FN int enc_h264_col_zero4(const EncFrame *f, int mbx, int mby) {
    if (!f->colmb || (f->colmb[mby * f->uw + mbx] & ENC_MBI_INTRA)) return 0;
    int cz = 0;
    for (int q = 0; q < 4; q++) {
        const int x = 4 * mbx + 3 * (q & 1), y = 4 * mby + 3 * (q >> 1);
        const VidkMv v = f->colmv[(ptrdiff_t)y * (f->W / 4) + x];
        cz |= (v.x >= -1 && v.x <= 1 && v.y >= -1 && v.y <= 1) << q;
    }
    return cz;
}

/* Spatial direct prediction (8.4.1.2.2) of a macroblock with colZeroFlags cz
 * (enc_h264_col_zero4) from its list-0 and list-1 neighbourhoods: returns its lists (bit 0
 * list 0, bit 1 list 1), its vectors per quadrant into v0[4], v1[4] ((0, 0) in an unused
 * list). */
VIDK_CORE int enc_h264_direct(int cz4, const VidkH264MvNb *n0, const VidkH264MvNb *n1,
                              VidkMv *v0, VidkMv *v1) {
    VidkMv p0 = {0, 0}, p1 = {0, 0};
    const int r0 = vidk_h264_direct_ref(n0, &p0), r1 = vidk_h264_direct_ref(n1, &p1);
    const VidkMv zero = {0, 0};
    const int dzero = r0 < 0 && r1 < 0; /* directZeroPredictionFlag: both lists, zero */
    for (int q = 0; q < 4; q++) {
        const int cz = !dzero && (cz4 >> q & 1);
        v0[q] = dzero || r0 < 0 || cz ? zero : p0;
        v1[q] = dzero || r1 < 0 || cz ? zero : p1;
    }
    return dzero ? 3 : (r0 == 0 ? 1 : 0) | (r1 == 0 ? 2 : 0);
}

/* The list-0 and list-1 neighbourhoods of macroblock (mbx, mby) from a pass's planes. */
ENC_FN void enc_h264_b_nb(const EncFrame *f, int mbx, int mby, const VidkMv *mv0,
                          const VidkMv *mv1, const uint16_t *mbi, VidkH264MvNb *n0,
                          VidkH264MvNb *n1) {
    const int row0 = enc_h264_row0(f, mby);
    vidk_h264_mvnb_fill(n0, mv0, f->W / 4, mbi, ENC_MBI_INTRA, 0, f->uw, f->uh, row0, mbx, mby);
    vidk_h264_mvnb_fill(n1, mv1, f->W / 4, mbi, ENC_MBI_INTRA, 1, f->uw, f->uh, row0, mbx, mby);
}

/* The mvd bits of a 16x16 partition with vector v against neighbourhood n. */
ENC_FN unsigned enc_h264_mvd16_bits(const VidkH264MvNb *n, VidkMv v) {
    const int8_t order[16] = {0};
    return enc_mvd_bits(v, vidk_h264_mvp(n, 0, 0, 4, 0, order, 0));
}

/* One macroblock's vectors (a per quadrant in list 0, b in list 1) and decision word w into
 * a pass's planes. */
ENC_FN void enc_h264_b_out(const EncFrame *f, int mbx, int mby, const VidkMv *a,
                           const VidkMv *b, unsigned w, VidkMv *mvo0, VidkMv *mvo1,
                           uint16_t *mbo) {
    mbo[mby * f->uw + mbx] = (uint16_t)w;
    for (int k = 0; k < 16; k++) {
        const ptrdiff_t o = (ptrdiff_t)(mby * 4 + k / 4) * (f->W / 4) + mbx * 4 + k % 4;
        const int q = (k >> 3) * 2 + ((k & 3) >> 1);
        mvo0[o] = a[q], mvo1[o] = b[q];
    }
}

/* The word of a 16x16 B macroblock predicting from the lists in use (1, 2, 3). */
ENC_CFN unsigned enc_h264_b_word(int use) {
    return (unsigned)use * 0x55u << 2;
}

/* The word of a B macroblock of partition mode m (0 16x16, 1 16x8, 2 8x16) whose partitions
 * predict from the lists u0 and u1 (1, 2, 3; 16x16: u0). */
ENC_CFN unsigned enc_h264_b_word2(int m, int u0, int u1) {
    unsigned w = (unsigned)m;
    for (int q = 0; q < 4; q++)
        w |= (unsigned)(enc_h264_part_of(m, (q >> 1) * 8 + (q & 1) * 2) ? u1 : u0)
             << (2 + 2 * q);
    return w;
}

/* Decision pass 0 of a B frame: each macroblock the lowest SATD of list 0, list 1 and both
 * (the first on ties), at the refined vectors. */
ENC_FN void enc_h264_b_seed(const EncFrame *f, int mbx, int mby, VidkMv *mvo0, VidkMv *mvo1,
                            uint16_t *mbo) {
    const int u = mby * f->uw + mbx;
    const uint32_t *d = f->dist + ENC_H264_DIST_N * (ptrdiff_t)u;
    const VidkMv zero = {0, 0}, p0 = *enc_h264_pmv(f, u, VIDK_ME_PART_16x16),
                 p1 = *enc_h264_pmv(f->l1, u, VIDK_ME_PART_16x16);
    int use = 1;
    uint32_t best = d[ENC_H264_BDIST_L0];
    if (d[ENC_H264_BDIST_L1] < best) best = d[ENC_H264_BDIST_L1], use = 2;
    if (d[ENC_H264_BDIST_BI] < best) use = 3;
    const VidkMv a[4] = {use & 1 ? p0 : zero, use & 1 ? p0 : zero, use & 1 ? p0 : zero,
                         use & 1 ? p0 : zero},
                 b[4] = {use & 2 ? p1 : zero, use & 2 ? p1 : zero, use & 2 ? p1 : zero,
                         use & 2 ? p1 : zero};
    enc_h264_b_out(f, mbx, mby, a, b, enc_h264_b_word(use), mvo0, mvo1, mbo);
}

/* The final form of a direct macroblock: its vectors derived again (8.4.1.2.2) from the
 * final decisions of its neighbours, as a decoder does, in raster order (the left, upper,
 * upper-right and upper-left macroblocks done before it; direct ones among them already in
 * their final form). The last pass costed direct with its own neighbours: where the vectors
 * now differ and the costed ones are one per list (no colZeroFlag split), the macroblock is
 * coded as B_L0 / B_L1 / B_Bi_16x16 with the costed vectors when that costs less (SATD +
 * lambda x the bits of mb_type and the mvds against the final neighbours) than direct with
 * the derived ones (SATD + lambda x 1); else direct with the derived ones. Other
 * macroblocks keep theirs. In two steps (the device computes the SATDs between them on a
 * warp's lanes): enc_h264_b_direct_prep returns 0 (keep), 1 (direct with the derived vectors
 * a, b and lists use) or 2 (that, or explicit with the costed vectors c0, c1 and lists was
 * whose rate is ebits: weigh their SATDs); enc_h264_b_direct_apply writes the outcome. */
typedef struct EncDirect {
    VidkMv a[4], b[4], c0[4], c1[4];
    int use, was;
    unsigned ebits;
} EncDirect;

/* enc_h264_b_direct_prep's work after the neighbourhoods (n0, n1: enc_h264_b_nb's) of a
 * direct macroblock with word w and colZeroFlags cz4 (enc_h264_col_zero4). */
ENC_FN int enc_h264_b_direct_from(int cz4, unsigned w, const VidkH264MvNb *n0,
                                  const VidkH264MvNb *n1, EncDirect *d) {
    /* (a direct macroblock's lists are the same in its four quadrants) */
    const int use = enc_h264_direct(cz4, n0, n1, d->a, d->b), was = enc_h264_b_use4(w, 0);
    int same = use == was, uniform = 1;
    for (int q = 0; q < 4; q++) {
        const VidkMv c0 = n0->in[(q >> 1) * 8 + (q & 1) * 2],
                     c1 = n1->in[(q >> 1) * 8 + (q & 1) * 2];
        same &= (!(use & 1) || (c0.x == d->a[q].x && c0.y == d->a[q].y)) &&
                (!(use & 2) || (c1.x == d->b[q].x && c1.y == d->b[q].y));
        uniform &= c0.x == n0->in[0].x && c0.y == n0->in[0].y && c1.x == n1->in[0].x &&
                   c1.y == n1->in[0].y;
        d->c0[q] = n0->in[0], d->c1[q] = n1->in[0];
    }
    d->use = use, d->was = was;
    if (same) return 0;
    d->ebits = enc_h264_mb_bits[was] + (was & 1 ? enc_h264_mvd16_bits(n0, n0->in[0]) : 0u) +
               (was & 2 ? enc_h264_mvd16_bits(n1, n1->in[0]) : 0u);
    return uniform ? 2 : 1;
}

ENC_FN int enc_h264_b_direct_prep(const EncFrame *f, int mbx, int mby, const VidkMv *mv0,
                                  const VidkMv *mv1, const uint16_t *mbi, EncDirect *d) {
    const unsigned w = mbi[mby * f->uw + mbx];
    if ((w & ENC_MBI_INTRA) || !(w & ENC_MBI_DIRECT)) return 0;
    VidkH264MvNb n0, n1;
    enc_h264_b_nb(f, mbx, mby, mv0, mv1, mbi, &n0, &n1);
    return enc_h264_b_direct_from(enc_h264_col_zero4(f, mbx, mby), w, &n0, &n1, d);
}

/* Is the outcome explicit (kind: enc_h264_b_direct_prep's; se, sd: with kind 2 the SATDs of
 * the explicit and the direct predictions; the costed vectors cheaper)? */
ENC_FN int enc_h264_b_direct_explicit(const EncFrame *f, const EncDirect *d, int kind,
                                      uint32_t se, uint32_t sd) {
    return kind == 2 &&
           se + enc_h264_lbits(f, d->ebits) < sd + enc_h264_lbits(f, enc_h264_mb_bits[0]);
}

/* The outcome into the planes (kind, se, sd: as enc_h264_b_direct_explicit's). */
ENC_FN void enc_h264_b_direct_apply(const EncFrame *f, int mbx, int mby, const EncDirect *d,
                                    int kind, uint32_t se, uint32_t sd, VidkMv *mv0,
                                    VidkMv *mv1, uint16_t *mbi) {
    if (enc_h264_b_direct_explicit(f, d, kind, se, sd)) {
        mbi[mby * f->uw + mbx] = (uint16_t)enc_h264_b_word(d->was);
        return;
    }
    enc_h264_b_out(f, mbx, mby, d->a, d->b, ENC_MBI_DIRECT | enc_h264_b_word(d->use), mv0, mv1,
                   mbi);
}

ENC_FN void enc_h264_b_direct_final(const EncFrame *f, int mbx, int mby, VidkMv *mv0,
                                    VidkMv *mv1, uint16_t *mbi) {
    EncDirect d;
    const int kind = enc_h264_b_direct_prep(f, mbx, mby, mv0, mv1, mbi, &d);
    if (!kind) return;
    uint32_t se = 0, sd = 0;
    if (kind == 2) {
        se = enc_h264_b_satd(f, mbx, mby, d.c0, d.c1, d.was * 0x55);
        sd = enc_h264_b_satd(f, mbx, mby, d.a, d.b, d.use * 0x55);
    }
    enc_h264_b_direct_apply(f, mbx, mby, &d, kind, se, sd, mv0, mv1, mbi);
}

/* The mb_type (Table 7-14) of an inter B macroblock of partition mode m (0 16x16, 1 16x8, 2
 * 8x16) whose partitions predict from the lists u0 and u1 (1 list 0, 2 list 1, 3 both; 16x16:
 * u0): 4 + 2 x (L0 L0, L1 L1, L0 L1, L1 L0, L0 Bi, L1 Bi, Bi L0, Bi L1, Bi Bi) + m - 1. */
ENC_CFN int enc_h264_b_mb_type(int m, int u0, int u1) {
    const int8_t pair[9] = {0, 2, 4, 3, 1, 5, 6, 7, 8}; /* [3 (u0 - 1) + u1 - 1] */
    return m == 0 ? u0 : 4 + 2 * pair[3 * (u0 - 1) + u1 - 1] + m - 1;
}

/* The mvds of one list's partitions of a B macroblock of partition mode m (0 16x16, 1 16x8,
 * 2 8x16) with vectors n->in against the predictors of 8.4.1.3 over neighbourhood n (the
 * blocks of n->inoff not using the list): those of the partitions p with bit p of sel set, in
 * the stream's order, into dx[], dy[] (quarter samples), their top-left 4x4 blocks into px[],
 * py[] and their indices into pk[]; returns their count. */
VIDK_CORE int enc_h264_b_mvds(const VidkH264MvNb *n, int m, int sel, int *dx, int *dy, int *px,
                              int *py, int *pk) {
    int8_t order[16]; /* the partition of each 4x4 block */
    for (int k = 0; k < 16; k++)
        order[k] = (int8_t)enc_h264_part_of(m, k);
    int c = 0;
    for (int k = 0; k < (m ? 2 : 1); k++) {
        if (!(sel >> k & 1)) continue;
        const int x = m == 2 ? 2 * k : 0, y = m == 1 ? 2 * k : 0;
        const VidkMv p =
            vidk_h264_mvp(n, x, y, m == 2 ? 2 : 4, m ? m == 1 ? 1 + k : 3 + k : 0, order, k);
        dx[c] = n->in[4 * y + x].x - p.x, dy[c] = n->in[4 * y + x].y - p.y;
        px[c] = x, py[c] = y, pk[c] = k, c++;
    }
    return c;
}

/* The mvd bits of one list's vectors of partition mode m (0 16x16, 1 16x8, 2 8x16) of
 * macroblock u (the refined vectors of its partitions, part_mv of fl: f or f->l1) against
 * neighbourhood n (a copy: its vectors are set here), the partitions with bit p of sel set
 * using the list. */
ENC_FN unsigned enc_h264_b_part_mvd(const EncFrame *fl, int u, VidkH264MvNb n, int m, int sel) {
    const int p0 = m ? VIDK_ME_PART_16x8 + 2 * (m - 1) : VIDK_ME_PART_16x16;
    const VidkMv a = *enc_h264_pmv(fl, u, p0), b = *enc_h264_pmv(fl, u, m ? p0 + 1 : p0);
    for (int k = 0; k < 16; k++) {
        const int p = enc_h264_part_of(m, k);
        n.in[k] = p ? b : a, n.inoff[k] = (int8_t) !(sel >> p & 1);
    }
    int dx[2], dy[2], px[2], py[2], pk[2];
    const int np = enc_h264_b_mvds(&n, m, sel, dx, dy, px, py, pk);
    unsigned bits = 0;
    for (int k = 0; k < np; k++)
        bits += vidk_se_bits(dx[k]) + vidk_se_bits(dy[k]);
    return bits;
}

/* Direct's cost in the B decision passes: its SATD less lambda x this many bits (not below 0;
 * a bonus, where the other candidates pay their mb_type's and mvds' bits: B_Skip and
 * B_Direct_16x16 cost a fraction of a bit with CABAC, and their vectors follow the
 * neighbours'; until session 44 SATD + lambda x 1; docs/PERFORMANCE.md "Session 44"). */
#define ENC_H264_DIRECT_BONUS 2

/* The decision pass's mvd-bits tasks (enc_h264_b_part_mvd): j 0, 1 the 16x16 partition's in
 * list j; j 2 .. 13 partition mode m = 1 + (j - 2) / 6, the partitions using the list sel = 1
 * + (j - 2) % 6 / 2 (bit p: partition p), list j & 1 (the device spreads them over lanes). */
#define ENC_H264_B_MVD_TASKS 14
ENC_FN unsigned enc_h264_b_mvd_task(const EncFrame *f, int u, const VidkH264MvNb *n0,
                                    const VidkH264MvNb *n1, int j) {
    const int m = j < 2 ? 0 : 1 + (j - 2) / 6, sel = j < 2 ? 3 : 1 + (j - 2) % 6 / 2, l = j & 1;
    return enc_h264_b_part_mvd(l ? f->l1 : f, u, l ? *n1 : *n0, m, sel);
}

/* The decision of enc_h264_b_decide_pass from its measures: the mvd bits of the tasks
 * (bits[ENC_H264_B_MVD_TASKS]), direct's lists, vectors and SATD (duse, dv0, dv1, sd). */
ENC_FN void enc_h264_b_decide_with(const EncFrame *f, int mbx, int mby, const unsigned *bits,
                                   int duse, const VidkMv *dv0, const VidkMv *dv1, uint32_t sd,
                                   VidkMv *mvo0, VidkMv *mvo1, uint16_t *mbo) {
    const int u = mby * f->uw + mbx;
    const uint32_t *d = f->dist + ENC_H264_DIST_N * (ptrdiff_t)u;
    const VidkMv zero = {0, 0};
    int bu0 = 1, bu1 = 1, mode = 0;
    uint32_t best = 0xffffffffu;
    for (int m = 0; m < 3; m++) {
        /* each list's mvd bits in this partition mode by the partitions using it (bit p of
         * sel: partition p; 16x16: 3) */
        unsigned b0[4] = {0, 0, 0, 0}, b1[4] = {0, 0, 0, 0};
        for (int sel = m ? 1 : 3; sel < 4; sel++) {
            const int j = m ? 2 + 6 * (m - 1) + 2 * (sel - 1) : 0;
            b0[sel] = bits[j], b1[sel] = bits[j + 1];
        }
        for (int c = 0; c < (m ? 9 : 3); c++) {
            /* the lists of the two partitions (16x16: the one) */
            const int u0 = 1 + (m ? c / 3 : c), u1 = m ? 1 + c % 3 : u0;
            const uint32_t s = m ? d[ENC_H264_BDIST_PART + 6 * (m - 1) + u0 - 1] +
                                       d[ENC_H264_BDIST_PART + 6 * (m - 1) + 3 + u1 - 1]
                                 : d[ENC_H264_BDIST_L0 + u0 - 1];
            const unsigned b = vidk_ue_bits((unsigned)enc_h264_b_mb_type(m, u0, u1)) +
                               b0[(u0 & 1) | (u1 & 1) << 1] + b1[(u0 >> 1) | (u1 & 2)];
            const uint32_t cost = s + enc_h264_lbits(f, b);
            if (cost < best) best = cost, bu0 = u0, bu1 = u1, mode = m;
        }
    }
    VidkMv a[4], b[4];
    const uint32_t bonus = enc_h264_lbits(f, ENC_H264_DIRECT_BONUS),
                   cd = sd > bonus ? sd - bonus : 0u;
    const uint32_t intra = d[ENC_H264_DIST_INTRA];
    unsigned w;
    if (intra >> 2 < best) {
        w = ENC_MBI_INTRA | (intra & 3u);
        for (int q = 0; q < 4; q++)
            a[q] = b[q] = zero;
    } else if (cd <= best) {
        w = ENC_MBI_DIRECT | enc_h264_b_word(duse);
        for (int q = 0; q < 4; q++)
            a[q] = dv0[q], b[q] = dv1[q];
    } else {
        w = enc_h264_b_word2(mode, bu0, bu1);
        for (int q = 0; q < 4; q++) {
            /* the partition of quadrant q (its top-left 4x4 block) and its lists */
            const int p = enc_h264_part_of(mode, (q >> 1) * 8 + (q & 1) * 2),
                      use = p ? bu1 : bu0;
            const int pp = mode ? VIDK_ME_PART_16x8 + 2 * (mode - 1) + p : VIDK_ME_PART_16x16;
            a[q] = use & 1 ? *enc_h264_pmv(f, u, pp) : zero;
            b[q] = use & 2 ? *enc_h264_pmv(f->l1, u, pp) : zero;
        }
    }
    enc_h264_b_out(f, mbx, mby, a, b, w, mvo0, mvo1, mbo);
}

/* Decision pass k >= 1 of a B frame against the neighbours of pass k - 1 (mvi0, mvi1, mbi):
 * the costs (SATD + lambda x the CAVLC bits of mb_type and mvds) of list 0, list 1 and both
 * in one 16x16 partition, then in two 16x8 and in two 8x16 partitions (each partition list 0,
 * list 1 or both: mb_types 4 .. 21); the first lowest of them; direct (its SATD less lambda x
 * ENC_H264_DIRECT_BONUS: coded as B_Skip when no level is left) replaces it when not dearer;
 * Intra_16x16 (the estimate) when cheaper than the lowest (as enc_h264_pick in P frames). */
ENC_FN void enc_h264_b_decide_pass(const EncFrame *f, int mbx, int mby, const VidkMv *mvi0,
                                   const VidkMv *mvi1, const uint16_t *mbi, VidkMv *mvo0,
                                   VidkMv *mvo1, uint16_t *mbo) {
    VidkH264MvNb n0, n1;
    enc_h264_b_nb(f, mbx, mby, mvi0, mvi1, mbi, &n0, &n1);
    unsigned bits[ENC_H264_B_MVD_TASKS];
    for (int j = 0; j < ENC_H264_B_MVD_TASKS; j++)
        bits[j] = enc_h264_b_mvd_task(f, mby * f->uw + mbx, &n0, &n1, j);
    VidkMv dv0[4], dv1[4];
    const int duse = enc_h264_direct(enc_h264_col_zero4(f, mbx, mby), &n0, &n1, dv0, dv1);
    enc_h264_b_decide_with(f, mbx, mby, bits, duse, dv0, dv1,
                           enc_h264_b_satd(f, mbx, mby, dv0, dv1, duse * 0x55), mvo0, mvo1,
                           mbo);
}

/* Zeroed unit statistics. */
ENC_FN EncUnitStat enc_stat_zero(void) {
    EncUnitStat z = {{0, 0, 0}, 0, 0, 0, {0, 0, 0, 0, 0, 0}};
    return z;
}

/* MVD bits of a unit's partitions in coding order: the first against pred (the first
 * vector of the left unit, (0, 0) at the left edge), each next one against the one before. */
ENC_FN unsigned enc_mvd_chain(const VidkMv *pmv, int np, VidkMv pred) {
    unsigned b = 0;
    for (int i = 0; i < np; i++) {
        b += enc_mvd_bits(pmv[i], pred);
        pred = pmv[i];
    }
    return b;
}

/* The MVD predictor of a unit's first partition: the best whole-unit vector of the motion
 * search (16x16 for an H.264 macroblock, 32x32 for an HEVC CTU) of the unit to the left,
 * (0, 0) at the left edge. Read from the field: no second decision per unit. */
ENC_FN VidkMv enc_left_mv(const EncFrame *f, int bs, int ux, int uy) {
    VidkMv v = {0, 0};
    if (ux > 0) v = enc_me_at(f, bs, ux - 1, uy).mv;
    return v;
}

/* ------------------------------------------------------------------ H.264 deblocking */

/* Does the transform block holding luma 4x4 block (bx, by) (in blocks) have non-zero
 * levels: its 8x8 block in a macroblock with the 8x8 transform, else the 4x4 block
 * (f->lev[0], as the stream codes them; intra macroblocks are not asked). */
ENC_FN int enc_h264_dbk_nz(const EncFrame *f, int bx, int by) {
    const unsigned w = f->mbi[(by >> 2) * f->uw + (bx >> 2)];
    const int n = (w & ENC_MBI_TX8) ? 8 : 4;
    const int x0 = n == 8 ? (bx & ~1) * 4 : bx * 4, y0 = n == 8 ? (by & ~1) * 4 : by * 4;
    const int16_t *l = f->lev[0] + (ptrdiff_t)y0 * f->ls_[0] + x0;
    int any = 0;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            any |= l[(ptrdiff_t)y * f->ls_[0] + x];
    return any != 0;
}

/* bS of entry i (0..31) of macroblock (mbx, mby): direction d = i >> 4 (0: the vertical
 * edges, 1: the horizontal ones), edge e = (i >> 2) & 3 (at 4e samples), segment i & 3 (4
 * samples along it): vidk_h264_dbk_bs from the macroblocks' words (f->mbi), the levels
 * (f->lev[0]) and the vectors (f->mv4, quarter samples); 0 on the picture's border and, with
 * the 8x8 transform, on the luma edges at 4 and 12. */
ENC_FN int enc_h264_dbk_bs_at(const EncFrame *f, int mbx, int mby, int i) {
    const int d = i >> 4, e = (i >> 2) & 3, k = i & 3, n4 = f->W / 4;
    const unsigned w = f->mbi[mby * f->uw + mbx];
    const int tx8 = (!(w & ENC_MBI_INTRA) || (w & ENC_MBI_NXN)) && (w & ENC_MBI_TX8);
    /* q: the block right of / below the edge, p: across it */
    const int qx = 4 * mbx + (d ? k : e), qy = 4 * mby + (d ? e : k);
    const int px = d ? qx : qx - 1, py = d ? qy - 1 : qy;
    if ((d ? qy : qx) == 0 || (tx8 && (e & 1))) return 0;
    const unsigned wp = f->mbi[(py >> 2) * f->uw + (px >> 2)];
    const int ip = !!(wp & ENC_MBI_INTRA), iq = !!(w & ENC_MBI_INTRA);
    const VidkMv mp = f->mv4[(ptrdiff_t)py * n4 + px], mq = f->mv4[(ptrdiff_t)qy * n4 + qx];
    int dx = mp.x - mq.x, dy = mp.y - mq.y;
    if (f->bframe) { /* B: other lists (other pictures) or a vector of a list 4 apart: 1 */
        const int up = enc_h264_b_use4(wp, 4 * (py & 3) + (px & 3)),
                  uq = enc_h264_b_use4(w, 4 * (qy & 3) + (qx & 3));
        const VidkMv bp = f->mv4b[(ptrdiff_t)py * n4 + px],
                     bq = f->mv4b[(ptrdiff_t)qy * n4 + qx];
        const int d0 = vidk_iabs(dx) >= 4 || vidk_iabs(dy) >= 4;
        const int d1 = vidk_iabs(bp.x - bq.x) >= 4 || vidk_iabs(bp.y - bq.y) >= 4;
        dx = up != uq || ((up & 1) && d0) || ((up & 2) && d1) ? 4 : 0, dy = 0;
    }
    return vidk_h264_dbk_bs(e == 0, ip, iq, !ip && enc_h264_dbk_nz(f, px, py),
                            !iq && enc_h264_dbk_nz(f, qx, qy), dx, dy);
}

/* Line i of edge e in direction d (as enc_h264_dbk_bs_at) of plane p of macroblock (mbx,
 * mby), filtered with the bS of its segment in bs[32] (chroma: the luma's at edge 2e, the
 * chroma edges lying at 0 and 4; i < 16 luma, i < 8 chroma). The line's 8 samples are read
 * into a local copy first (on the GPU through L2: other blocks wrote them), filtered there,
 * then stored back. */
ENC_FN void enc_h264_dbk_line_at(const EncFrame *f, int mbx, int mby, int p, int d, int e,
                                 int i, const int *bs) {
    const int b = p ? bs[16 * d + 8 * e + (i >> 1)] : bs[16 * d + 4 * e + (i >> 2)];
    if (!b) return;
    const int n = p ? 8 : 16, cs = f->cs[p];
    const ptrdiff_t s = d ? cs : 1;
    uint8_t *q0 =
        f->rec[p] + (ptrdiff_t)(n * mby + (d ? 4 * e : i)) * cs + n * mbx + (d ? i : 4 * e);
    uint8_t v[8];
    for (int k = 0; k < 8; k++)
        v[k] = ENC_LDREC(q0 + (k - 4) * s);
    const VidkH264DbkQ q = vidk_h264_dbk_q(p ? f->qpc : f->qp);
    vidk_h264_dbk_line(v + 4, 1, b, p != 0, &q);
    for (int k = 1; k < 7; k++) /* p2 .. q2: what the filters write */
        q0[(k - 4) * s] = v[k];
}

/* The deblocking filter (8.7) of macroblock (mbx, mby) of f->rec, after the macroblocks
 * before it in raster order (the picture's filter runs in that order: a macroblock's edges
 * read samples that its left, upper and upper-right neighbours' edges wrote): the luma's
 * vertical edges left to right, then its horizontal edges top to bottom, then each chroma
 * plane's likewise (the GPU's warp: src/cuda/enc_kern.cuh deblock_kernel). The picture's
 * border is not filtered; slice edges are (disable_deblocking_filter_idc 0). */
ENC_FN void enc_h264_deblock_mb(const EncFrame *f, int mbx, int mby) {
    int bs[32];
    for (int i = 0; i < 32; i++)
        bs[i] = enc_h264_dbk_bs_at(f, mbx, mby, i);
    for (int p = 0; p < 3; p++)
        for (int d = 0; d < 2; d++)
            for (int e = 0; e < (p ? 2 : 4); e++)
                for (int i = 0; i < (p ? 8 : 16); i++)
                    enc_h264_dbk_line_at(f, mbx, mby, p, d, e, i, bs);
}

#endif
