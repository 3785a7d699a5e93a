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

/* The H.264 decision, B frames and deblocking: the rest of this header. */
#include "enc_core_h264.h"
#include "enc_core_h264b.h"

#endif
