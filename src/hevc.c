/* Portable C reference of the hevc family (ground truth of every other backend), the
 * standard's tables, and the scaling-list helpers of the public API.
 *
 * References: ITU-T H.265 (V4+) 7.4.5 (scaling factors), 8.6.2 (scaling and
 * transformation process), 8.6.3 (scaling of transform coefficients), 8.6.4.2
 * (transformation process: matrix, shifts, the 16-bit clip after the first stage),
 * the picture construction (Clip1(pred + res)); the forward path follows the HM reference
 * encoder (TComTrQuant: xTr, xQuant) as the standard defines no encoder. */
#include <stdlib.h>
#include <string.h>

#include "hevc_core.h"
#include "internal.h"

/* 8.6.4.2 transMatrix (the standard lists columns 0..15; columns 16..31
 * follow from the symmetry T[k][31 - n] = (-1)^k T[k][n]), stored as [k][n]: row k is
 * basis function k. The N-point matrix takes rows 0, 32/N, 2*32/N, ... and its first N
 * columns. */
/* clang-format off */
const int8_t vidk_hevc_t32[32][32] = {
    { 64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,
      64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64,  64}, /* 0 */
    { 90,  90,  88,  85,  82,  78,  73,  67,  61,  54,  46,  38,  31,  22,  13,   4,
      -4, -13, -22, -31, -38, -46, -54, -61, -67, -73, -78, -82, -85, -88, -90, -90}, /* 1 */
    { 90,  87,  80,  70,  57,  43,  25,   9,  -9, -25, -43, -57, -70, -80, -87, -90,
     -90, -87, -80, -70, -57, -43, -25,  -9,   9,  25,  43,  57,  70,  80,  87,  90}, /* 2 */
    { 90,  82,  67,  46,  22,  -4, -31, -54, -73, -85, -90, -88, -78, -61, -38, -13,
      13,  38,  61,  78,  88,  90,  85,  73,  54,  31,   4, -22, -46, -67, -82, -90}, /* 3 */
    { 89,  75,  50,  18, -18, -50, -75, -89, -89, -75, -50, -18,  18,  50,  75,  89,
      89,  75,  50,  18, -18, -50, -75, -89, -89, -75, -50, -18,  18,  50,  75,  89}, /* 4 */
    { 88,  67,  31, -13, -54, -82, -90, -78, -46,  -4,  38,  73,  90,  85,  61,  22,
     -22, -61, -85, -90, -73, -38,   4,  46,  78,  90,  82,  54,  13, -31, -67, -88}, /* 5 */
    { 87,  57,   9, -43, -80, -90, -70, -25,  25,  70,  90,  80,  43,  -9, -57, -87,
     -87, -57,  -9,  43,  80,  90,  70,  25, -25, -70, -90, -80, -43,   9,  57,  87}, /* 6 */
    { 85,  46, -13, -67, -90, -73, -22,  38,  82,  88,  54,  -4, -61, -90, -78, -31,
      31,  78,  90,  61,   4, -54, -88, -82, -38,  22,  73,  90,  67,  13, -46, -85}, /* 7 */
    { 83,  36, -36, -83, -83, -36,  36,  83,  83,  36, -36, -83, -83, -36,  36,  83,
      83,  36, -36, -83, -83, -36,  36,  83,  83,  36, -36, -83, -83, -36,  36,  83}, /* 8 */
    { 82,  22, -54, -90, -61,  13,  78,  85,  31, -46, -90, -67,   4,  73,  88,  38,
     -38, -88, -73,  -4,  67,  90,  46, -31, -85, -78, -13,  61,  90,  54, -22, -82}, /* 9 */
    { 80,   9, -70, -87, -25,  57,  90,  43, -43, -90, -57,  25,  87,  70,  -9, -80,
     -80,  -9,  70,  87,  25, -57, -90, -43,  43,  90,  57, -25, -87, -70,   9,  80}, /* 10 */
    { 78,  -4, -82, -73,  13,  85,  67, -22, -88, -61,  31,  90,  54, -38, -90, -46,
      46,  90,  38, -54, -90, -31,  61,  88,  22, -67, -85, -13,  73,  82,   4, -78}, /* 11 */
    { 75, -18, -89, -50,  50,  89,  18, -75, -75,  18,  89,  50, -50, -89, -18,  75,
      75, -18, -89, -50,  50,  89,  18, -75, -75,  18,  89,  50, -50, -89, -18,  75}, /* 12 */
    { 73, -31, -90, -22,  78,  67, -38, -90, -13,  82,  61, -46, -88,  -4,  85,  54,
     -54, -85,   4,  88,  46, -61, -82,  13,  90,  38, -67, -78,  22,  90,  31, -73}, /* 13 */
    { 70, -43, -87,   9,  90,  25, -80, -57,  57,  80, -25, -90,  -9,  87,  43, -70,
     -70,  43,  87,  -9, -90, -25,  80,  57, -57, -80,  25,  90,   9, -87, -43,  70}, /* 14 */
    { 67, -54, -78,  38,  85, -22, -90,   4,  90,  13, -88, -31,  82,  46, -73, -61,
      61,  73, -46, -82,  31,  88, -13, -90,  -4,  90,  22, -85, -38,  78,  54, -67}, /* 15 */
    { 64, -64, -64,  64,  64, -64, -64,  64,  64, -64, -64,  64,  64, -64, -64,  64,
      64, -64, -64,  64,  64, -64, -64,  64,  64, -64, -64,  64,  64, -64, -64,  64}, /* 16 */
    { 61, -73, -46,  82,  31, -88, -13,  90,  -4, -90,  22,  85, -38, -78,  54,  67,
     -67, -54,  78,  38, -85, -22,  90,   4, -90,  13,  88, -31, -82,  46,  73, -61}, /* 17 */
    { 57, -80, -25,  90,  -9, -87,  43,  70, -70, -43,  87,   9, -90,  25,  80, -57,
     -57,  80,  25, -90,   9,  87, -43, -70,  70,  43, -87,  -9,  90, -25, -80,  57}, /* 18 */
    { 54, -85,  -4,  88, -46, -61,  82,  13, -90,  38,  67, -78, -22,  90, -31, -73,
      73,  31, -90,  22,  78, -67, -38,  90, -13, -82,  61,  46, -88,   4,  85, -54}, /* 19 */
    { 50, -89,  18,  75, -75, -18,  89, -50, -50,  89, -18, -75,  75,  18, -89,  50,
      50, -89,  18,  75, -75, -18,  89, -50, -50,  89, -18, -75,  75,  18, -89,  50}, /* 20 */
    { 46, -90,  38,  54, -90,  31,  61, -88,  22,  67, -85,  13,  73, -82,   4,  78,
     -78,  -4,  82, -73, -13,  85, -67, -22,  88, -61, -31,  90, -54, -38,  90, -46}, /* 21 */
    { 43, -90,  57,  25, -87,  70,   9, -80,  80,  -9, -70,  87, -25, -57,  90, -43,
     -43,  90, -57, -25,  87, -70,  -9,  80, -80,   9,  70, -87,  25,  57, -90,  43}, /* 22 */
    { 38, -88,  73,  -4, -67,  90, -46, -31,  85, -78,  13,  61, -90,  54,  22, -82,
      82, -22, -54,  90, -61, -13,  78, -85,  31,  46, -90,  67,   4, -73,  88, -38}, /* 23 */
    { 36, -83,  83, -36, -36,  83, -83,  36,  36, -83,  83, -36, -36,  83, -83,  36,
      36, -83,  83, -36, -36,  83, -83,  36,  36, -83,  83, -36, -36,  83, -83,  36}, /* 24 */
    { 31, -78,  90, -61,   4,  54, -88,  82, -38, -22,  73, -90,  67, -13, -46,  85,
     -85,  46,  13, -67,  90, -73,  22,  38, -82,  88, -54,  -4,  61, -90,  78, -31}, /* 25 */
    { 25, -70,  90, -80,  43,   9, -57,  87, -87,  57,  -9, -43,  80, -90,  70, -25,
     -25,  70, -90,  80, -43,  -9,  57, -87,  87, -57,   9,  43, -80,  90, -70,  25}, /* 26 */
    { 22, -61,  85, -90,  73, -38,  -4,  46, -78,  90, -82,  54, -13, -31,  67, -88,
      88, -67,  31,  13, -54,  82, -90,  78, -46,   4,  38, -73,  90, -85,  61, -22}, /* 27 */
    { 18, -50,  75, -89,  89, -75,  50, -18, -18,  50, -75,  89, -89,  75, -50,  18,
      18, -50,  75, -89,  89, -75,  50, -18, -18,  50, -75,  89, -89,  75, -50,  18}, /* 28 */
    { 13, -38,  61, -78,  88, -90,  85, -73,  54, -31,   4,  22, -46,  67, -82,  90,
     -90,  82, -67,  46, -22,  -4,  31, -54,  73, -85,  90, -88,  78, -61,  38, -13}, /* 29 */
    {  9, -25,  43, -57,  70, -80,  87, -90,  90, -87,  80, -70,  57, -43,  25,  -9,
      -9,  25, -43,  57, -70,  80, -87,  90, -90,  87, -80,  70, -57,  43, -25,   9}, /* 30 */
    {  4, -13,  22, -31,  38, -46,  54, -61,  67, -73,  78, -82,  85, -88,  90, -90,
      90, -90,  88, -85,  82, -78,  73, -67,  61, -54,  46, -38,  31, -22,  13,  -4}, /* 31 */
};
/* clang-format on */

/* 8.6.4.2, trType = 1 (DST-VII), [k][n]. */
const int8_t vidk_hevc_dst4[4][4] = {
    {29, 55, 74, 84}, {74, 74, 0, -74}, {84, -29, -74, 55}, {55, -84, 74, -29}};

/* HM g_quantScales (2^20 / levelScale, rounded) and 8.6.3 levelScale[]. */
const int32_t vidk_hevc_qscale[6] = {26214, 23302, 20560, 18396, 16384, 14564};
const int32_t vidk_hevc_level_scale[6] = {40, 45, 51, 57, 64, 72};

int vidk_hevc_tb_side(VidkHevcTbSize size) {
    return (unsigned)size < VIDK_HEVC_TB_SIZES ? 4 << size : 0;
}

/* ------------------------------------------------------------------ transforms */

/* The matrix of a transform (row-major, 2^log2n square): the DST-VII, or rows 0, 32/N,
 * 2 * 32/N, ... of the standard's 32-point table. The arithmetic is src/hevc_core.h's. */
static void matrix_of(int8_t *m, int tx, int log2n) {
    const int n = 1 << log2n;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < n; j++)
            m[k * n + j] = tx == VIDK_HEVC_TX_DST4 ? vidk_hevc_dst4[k][j]
                                                   : vidk_hevc_t32[k << (5 - log2n)][j];
}

#define FWD_C(name, tx, log2n)                                                                 \
    static decl_hevc_fwd_fn(name) {                                                            \
        int8_t m[1 << (2 * log2n)];                                                            \
        int32_t t[1 << (2 * log2n)];                                                           \
        matrix_of(m, tx, log2n);                                                               \
        for (int b = 0; b < n_blocks; b++)                                                     \
            vidk_hevc_fwd_2d(m, log2n, tx == VIDK_HEVC_TX_DST4, bd,                            \
                             coef + (size_t)b * (1 << (2 * log2n)),                            \
                             res + (size_t)b * (1 << (2 * log2n)), t);                         \
    }                                                                                          \
    static decl_hevc_inv_fn(i##name) {                                                         \
        int8_t m[1 << (2 * log2n)];                                                            \
        int32_t t[1 << (2 * log2n)];                                                           \
        matrix_of(m, tx, log2n);                                                               \
        for (int b = 0; b < n_blocks; b++)                                                     \
            vidk_hevc_inv_2d(m, log2n, tx == VIDK_HEVC_TX_DST4, bd,                            \
                             res + (size_t)b * (1 << (2 * log2n)),                             \
                             coef + (size_t)b * (1 << (2 * log2n)), t);                        \
    }

FWD_C(dct4_c, VIDK_HEVC_TX_DCT4, 2)
FWD_C(dct8_c, VIDK_HEVC_TX_DCT8, 3)
FWD_C(dct16_c, VIDK_HEVC_TX_DCT16, 4)
FWD_C(dct32_c, VIDK_HEVC_TX_DCT32, 5)
FWD_C(dst4_c, VIDK_HEVC_TX_DST4, 2)

/* Transform skip (HM xTransformSkip; 8.6.4.2 with transform_skip_flag): the residual
 * scaled by the transform's gain, 2^(15 - BitDepth - log2N), and back by tsShift = 7
 * and bdShift. */
static decl_hevc_fwd_fn(ts4_c) {
    const int lim = (1 << bd) - 1;
    for (int i = 0; i < 16 * n_blocks; i++)
        coef[i] = (int16_t)(vidk_iclip(res[i], -lim, lim) * (1 << (13 - bd)));
}

static decl_hevc_inv_fn(its4_c) {
    const int bdshift = 20 - bd;
    for (int i = 0; i < 16 * n_blocks; i++)
        res[i] = vidk_hevc_clip16((coef[i] * 128 + (1 << (bdshift - 1))) >> bdshift);
}

/* ------------------------------------------------------------------ quantisation */

/* HM xQuant without RDOQ and sign hiding: vidk_hevc_quant1 (src/hevc_core.h). */
static decl_hevc_quant_fn(quant_c) {
    for (int b = 0; b < n_blocks; b++, lev += len, coef += len) {
        int cnt = 0;
        for (int k = 0; k < len; k++)
            cnt += (lev[k] = vidk_hevc_quant1(coef[k], scale, qbits, offset)) != 0;
        nnz[b] = (uint16_t)cnt;
    }
}

static decl_hevc_quant_sl_fn(quant_sl_c) {
    for (int b = 0; b < n_blocks; b++, lev += len, coef += len) {
        int cnt = 0;
        for (int k = 0; k < len; k++)
            cnt += (lev[k] = vidk_hevc_quant1(coef[k], qs[k], qbits, offset)) != 0;
        nnz[b] = (uint16_t)cnt;
    }
}

/* 8.6.3: vidk_hevc_dequant1 (src/hevc_core.h). */
static decl_hevc_dequant_fn(dequant_c) {
    for (size_t i = 0; i < n; i++)
        coef[i] = vidk_hevc_dequant1(lev[i], scale, shift);
}

static decl_hevc_dequant_sl_fn(dequant_sl_c) {
    for (int b = 0; b < n_blocks; b++, lev += len, coef += len)
        for (int k = 0; k < len; k++)
            coef[k] = vidk_hevc_dequant1(lev[k], ds[k], shift);
}

/* ------------------------------------------------------------------ pixels */

/* Picture construction: recSamples = Clip1(predSamples + resSamples). */
#define PIX_C(N)                                                                               \
    static decl_hevc_add8_fn(add8_##N##_c) {                                                   \
        for (int y = 0; y < N; y++, dst += stride, res += N)                                   \
            for (int x = 0; x < N; x++)                                                        \
                dst[x] = (uint8_t)vidk_iclip(dst[x] + res[x], 0, 255);                         \
    }                                                                                          \
    static decl_hevc_add16_fn(add16_##N##_c) {                                                 \
        const int mx = (1 << bd) - 1;                                                          \
        for (int y = 0; y < N; y++, res += N) {                                                \
            uint16_t *d = (uint16_t *)((uint8_t *)dst + y * stride);                           \
            for (int x = 0; x < N; x++)                                                        \
                d[x] = (uint16_t)vidk_iclip(d[x] + res[x], 0, mx);                             \
        }                                                                                      \
    }                                                                                          \
    static decl_hevc_sub8_fn(sub8_##N##_c) {                                                   \
        for (int y = 0; y < N; y++, src += src_stride, pred += pred_stride, res += N)          \
            for (int x = 0; x < N; x++)                                                        \
                res[x] = (int16_t)(src[x] - pred[x]);                                          \
    }                                                                                          \
    static decl_hevc_sub16_fn(sub16_##N##_c) {                                                 \
        for (int y = 0; y < N; y++, res += N) {                                                \
            const uint16_t *s = (const uint16_t *)((const uint8_t *)src + y * src_stride);     \
            const uint16_t *p = (const uint16_t *)((const uint8_t *)pred + y * pred_stride);   \
            for (int x = 0; x < N; x++)                                                        \
                res[x] = (int16_t)(s[x] - p[x]);                                               \
        }                                                                                      \
    }

PIX_C(4)
PIX_C(8)
PIX_C(16)
PIX_C(32)

static decl_hevc_nnz_fn(nnz_c) {
    for (int b = 0; b < n_blocks; b++, v += len) {
        int c = 0;
        for (int k = 0; k < len; k++)
            c += v[k] != 0;
        cnt[b] = (uint16_t)c;
    }
}

void vidk_hevc_dsp_init(VidkHevcDSP *dsp, unsigned flags) {
    dsp->fwd[VIDK_HEVC_TX_DCT4] = dct4_c;
    dsp->fwd[VIDK_HEVC_TX_DCT8] = dct8_c;
    dsp->fwd[VIDK_HEVC_TX_DCT16] = dct16_c;
    dsp->fwd[VIDK_HEVC_TX_DCT32] = dct32_c;
    dsp->fwd[VIDK_HEVC_TX_DST4] = dst4_c;
    dsp->fwd[VIDK_HEVC_TX_TS4] = ts4_c;
    dsp->inv[VIDK_HEVC_TX_DCT4] = idct4_c;
    dsp->inv[VIDK_HEVC_TX_DCT8] = idct8_c;
    dsp->inv[VIDK_HEVC_TX_DCT16] = idct16_c;
    dsp->inv[VIDK_HEVC_TX_DCT32] = idct32_c;
    dsp->inv[VIDK_HEVC_TX_DST4] = idst4_c;
    dsp->inv[VIDK_HEVC_TX_TS4] = its4_c;
    dsp->quant = quant_c;
    dsp->quant_sl = quant_sl_c;
    dsp->dequant = dequant_c;
    dsp->dequant_sl = dequant_sl_c;
#define ASSIGN(i, N)                                                                           \
    dsp->add8[i] = add8_##N##_c;                                                               \
    dsp->add16[i] = add16_##N##_c;                                                             \
    dsp->sub8[i] = sub8_##N##_c;                                                               \
    dsp->sub16[i] = sub16_##N##_c;
    ASSIGN(0, 4)
    ASSIGN(1, 8)
    ASSIGN(2, 16)
    ASSIGN(3, 32)
#undef ASSIGN
    dsp->nnz = nnz_c;
#if VIDK_HAVE_SIMD
    vidk_hevc_dsp_init_x86(dsp, flags);
#else
    (void)flags;
#endif
}

/* ------------------------------------------------------------------ parameters */

void vidk_hevc_quant_scales(int32_t *qs, const uint8_t *m, int len, int qp) {
    /* HM processScalingListEnc: (g_quantScales << LOG2_SCALING_LIST_NEUTRAL_VALUE) / m;
     * m = 16 gives the flat scale, so qbits is unchanged. */
    const int32_t q16 = vidk_hevc_qscale[qp % 6] << 4;
    for (int k = 0; k < len; k++)
        qs[k] = q16 / m[k];
}

void vidk_hevc_dequant_scales(int16_t *ds, const uint8_t *m, int len, int qp) {
    const int ls = vidk_hevc_level_scale[qp % 6];
    for (int k = 0; k < len; k++)
        ds[k] = (int16_t)(m[k] * ls);
}

int vidk_hevc_check_tb(int size, int qp, int bd, unsigned flags) {
    if ((unsigned)size >= VIDK_HEVC_TB_SIZES) return VIDK_ERR(EINVAL);
    if (bd < VIDK_HEVC_MIN_BITDEPTH || bd > VIDK_HEVC_MAX_BITDEPTH) return VIDK_ERR(EINVAL);
    if (qp < 0 || qp > VIDK_HEVC_MAX_QP(bd)) return VIDK_ERR(EINVAL);
    if (flags & ~(unsigned)VIDK_HEVC_TB_FLAGS_ALL) return VIDK_ERR(EINVAL);
    const unsigned kind = flags & (VIDK_HEVC_TB_DST | VIDK_HEVC_TB_TSKIP);
    if (kind && (size != VIDK_HEVC_TB_4x4 || kind == (VIDK_HEVC_TB_DST | VIDK_HEVC_TB_TSKIP)))
        return VIDK_ERR(EINVAL);
    return 0;
}

static uint8_t *matrix_rw(VidkHevcScaling *s, int size, int matrix_id) {
    switch (size) {
    case 0:
        return s->m4[matrix_id];
    case 1:
        return s->m8[matrix_id];
    case 2:
        return s->m16[matrix_id];
    default:
        return s->m32[matrix_id];
    }
}

const uint8_t *vidk_hevc_scaling_matrix(const VidkHevcScaling *s, int size, int matrix_id) {
    return matrix_rw((VidkHevcScaling *)(uintptr_t)s, size, matrix_id);
}

/* ------------------------------------------------------------------ scaling lists */

void vidk_hevc_scaling_flat(VidkHevcScaling *s) {
    if (s) memset(s, 16, sizeof(*s));
}

/* 6.5.3 up-right diagonal scan of a blk x blk array: pos[i] = y * blk + x. */
static void diag_scan(uint8_t *pos, int blk) {
    int i = 0, x = 0, y = 0;
    for (;;) {
        while (y >= 0) {
            if (x < blk && y < blk) pos[i++] = (uint8_t)(y * blk + x);
            y--;
            x++;
        }
        y = x;
        x = 0;
        if (i >= blk * blk) break;
    }
}

/* 7.4.5: ScalingFactor from a list in coded order (raster output). */
static void scaling_expand(uint8_t *m, int size, const uint8_t *list, int dc) {
    uint8_t pos[64];
    if (size == 0) {
        diag_scan(pos, 4);
        for (int i = 0; i < 16; i++)
            m[pos[i]] = list[i];
        return;
    }
    diag_scan(pos, 8);
    const int n = 4 << size, r = n / 8; /* replication factor: 1, 2 or 4 */
    for (int i = 0; i < 64; i++) {
        const int x = pos[i] % 8, y = pos[i] / 8;
        for (int j = 0; j < r; j++)
            for (int k = 0; k < r; k++)
                m[(y * r + j) * n + x * r + k] = list[i];
    }
    if (size >= 2) m[0] = (uint8_t)dc; /* scaling_list_dc_coef_minus8 + 8 */
}

int vidk_hevc_scaling_set(VidkHevcScaling *s, VidkHevcTbSize size, int matrix_id,
                          const uint8_t *list, int dc) {
    if (!s || !list || (unsigned)size >= VIDK_HEVC_TB_SIZES || matrix_id < 0 || matrix_id > 5)
        return VIDK_ERR(EINVAL);
    const int nl = size == VIDK_HEVC_TB_4x4 ? 16 : 64;
    for (int i = 0; i < nl; i++)
        if (!list[i]) return VIDK_ERR(EINVAL);
    if (size >= VIDK_HEVC_TB_16x16 && (dc < 1 || dc > 255)) return VIDK_ERR(EINVAL);
    scaling_expand(matrix_rw(s, size, matrix_id), size, list, dc);
    return 0;
}

void vidk_hevc_scaling_default(VidkHevcScaling *s) {
    /* Table 7-6 in raster order (the 8x8 lists placed by the diagonal scan). */
    static const uint8_t intra8[64] = {
        16, 16, 16, 16, 17, 18, 21, 24, 16, 16, 16, 16, 17, 19, 22, 25, 16, 16, 17, 18, 20, 22,
        25, 29, 16, 16, 18, 21, 24, 27, 31, 36, 17, 17, 20, 24, 30, 35, 41, 47, 18, 19, 22, 27,
        35, 44, 54, 65, 21, 22, 25, 31, 41, 54, 70, 88, 24, 25, 29, 36, 47, 65, 88, 115};
    static const uint8_t inter8[64] = {
        16, 16, 16, 16, 17, 18, 20, 24, 16, 16, 16, 17, 18, 20, 24, 25, 16, 16, 17, 18, 20, 24,
        25, 28, 16, 17, 18, 20, 24, 25, 28, 33, 17, 18, 20, 24, 25, 28, 33, 41, 18, 20, 24, 25,
        28, 33, 41, 54, 20, 24, 25, 28, 33, 41, 54, 71, 24, 25, 28, 33, 41, 54, 71, 91};
    if (!s) return;
    uint8_t pos[64], list[64];
    diag_scan(pos, 8);
    memset(s->m4, 16, sizeof(s->m4)); /* Table 7-5: flat */
    for (int id = 0; id < 6; id++) {
        const uint8_t *r = id < 3 ? intra8 : inter8;
        for (int i = 0; i < 64; i++)
            list[i] = r[pos[i]];
        for (int size = 1; size < VIDK_HEVC_TB_SIZES; size++)
            scaling_expand(matrix_rw(s, size, id), size, list, 16);
    }
}
