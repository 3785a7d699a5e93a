/* The H.264 transform and quantiser arithmetic, written once: the C reference
 * (src/h264.c), the coding loop (src/enc/enc_core.h, enc_tmpl.h, src/cuda/enc_warp.cuh) and
 * the CUDA kernels (src/cuda/h264_kern.cuh) call these functions; the x86 SIMD kernels
 * are implementations of the same operations, checked against the C reference by
 * tests/checkkern.
 *
 * Clause numbers refer to ITU-T H.264 (08/2021). Inverse-path values are uint32_t and wrap
 * modulo 2^32 (vidk_sra is the arithmetic shift of the two's-complement value); the
 * forward path is int32 (exact for 8-bit residuals). The 1-D transforms read all their
 * inputs before writing, so o == x (in place) is allowed. */
#ifndef VIDK_H264_CORE_H
#define VIDK_H264_CORE_H

#include "vidk_core.h"

/* ---- inverse path ---------------------------------------------------------------- */

/* 8.5.12.1 (t = 4, 4x4) / 8.5.13.1 (t = 6, 8x8) for one level, per = qP / 6:
 * (c * LevelScale) << (per - t) for per >= t, else (c * LevelScale + 2^(t - 1 - per)) >>
 * (t - per). |c * ls| < 2^31: the int product cannot overflow. */
VIDK_CORE uint32_t vidk_h264_dequant1(int c, int ls, int per, int t) {
    if (per >= t) return (uint32_t)(c * ls) << (per - t);
    const int sh = t - per;
    return (uint32_t)((c * ls + (1 << (sh - 1))) >> sh);
}

/* One 1-D inverse 4-point transform of 8.5.12.2 (stride s between the values). */
VIDK_CORE void vidk_h264_itx4_1d(uint32_t *o, const uint32_t *x, int s) {
    const uint32_t e0 = x[0] + x[2 * s];
    const uint32_t e1 = x[0] - x[2 * s];
    const uint32_t e2 = vidk_sra(x[s], 1) - x[3 * s];
    const uint32_t e3 = x[s] + vidk_sra(x[3 * s], 1);
    o[0] = e0 + e3;
    o[s] = e1 + e2;
    o[2 * s] = e1 - e2;
    o[3 * s] = e0 - e3;
}

/* One 1-D inverse 8-point transform of 8.5.13.2. */
VIDK_CORE void vidk_h264_itx8_1d(uint32_t *o, const uint32_t *x, int s) {
    const uint32_t d0 = x[0], d1 = x[s], d2 = x[2 * s], d3 = x[3 * s];
    const uint32_t d4 = x[4 * s], d5 = x[5 * s], d6 = x[6 * s], d7 = x[7 * s];
    const uint32_t e0 = d0 + d4;
    const uint32_t e1 = 0u - d3 + d5 - d7 - vidk_sra(d7, 1);
    const uint32_t e2 = d0 - d4;
    const uint32_t e3 = d1 + d7 - d3 - vidk_sra(d3, 1);
    const uint32_t e4 = vidk_sra(d2, 1) - d6;
    const uint32_t e5 = 0u - d1 + d7 + d5 + vidk_sra(d5, 1);
    const uint32_t e6 = d2 + vidk_sra(d6, 1);
    const uint32_t e7 = d3 + d5 + d1 + vidk_sra(d1, 1);
    const uint32_t f0 = e0 + e6, f1 = e1 + vidk_sra(e7, 2);
    const uint32_t f2 = e2 + e4, f3 = e3 + vidk_sra(e5, 2);
    const uint32_t f4 = e2 - e4, f5 = vidk_sra(e3, 2) - e5;
    const uint32_t f6 = e0 - e6, f7 = e7 - vidk_sra(e1, 2);
    o[0] = f0 + f7;
    o[s] = f2 + f5;
    o[2 * s] = f4 + f3;
    o[3 * s] = f6 + f1;
    o[4 * s] = f6 - f1;
    o[5 * s] = f4 - f3;
    o[6 * s] = f2 - f5;
    o[7 * s] = f0 - f7;
}

/* One row / column of the n-point inverse transform (n = 4 or 8), in place. */
VIDK_CORE void vidk_h264_itx_1d(int n, uint32_t *x, int s) {
    if (n == 4)
        vidk_h264_itx4_1d(x, x, s);
    else
        vidk_h264_itx8_1d(x, x, s);
}

/* 8.5.12.2 / 8.5.13.2 on an n x n block in place: each (horizontal) row first, then each
 * column; the result before the final rounding. */
VIDK_CORE void vidk_h264_itx_2d(int n, uint32_t *x) {
    for (int i = 0; i < n; i++)
        vidk_h264_itx_1d(n, x + i * n, 1);
    for (int j = 0; j < n; j++)
        vidk_h264_itx_1d(n, x + j, n);
}

/* r = (h + 32) >> 6, the last step of 8.5.12.2 / 8.5.13.2. */
VIDK_CORE uint32_t vidk_h264_round6(uint32_t h) {
    return vidk_sra(h + 32, 6);
}

/* Clip1Y(pred + r) (8.5.14) for 8-bit samples without forming pred + r in 32 bits: r is
 * clamped to +-512 first, which cannot change the clipped result. */
VIDK_CORE int vidk_h264_add_clip(int pred, uint32_t r) {
    const int v = vidk_clip3((int32_t)r, -512, 512) + pred;
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* The n x n block dequantised (8.5.12.1 / 8.5.13.1) into t, element 0 replaced by *dc if
 * dc is set (8.5.12: Intra16x16 and chroma blocks take c_00 from the DC transform). */
VIDK_CORE void vidk_h264_dequant(int n, uint32_t *t, const int16_t *c, const int16_t *ls,
                                 int qp, const int32_t *dc) {
    const int per = qp / 6, lim = n == 4 ? 4 : 6;
    for (int k = 0; k < n * n; k++)
        t[k] = vidk_h264_dequant1(c[k], ls[k], per, lim);
    if (dc) t[0] = (uint32_t)*dc;
}

/* dst = Clip1(dst + ((inverse transform of t) + 32) >> 6); t (dequantised) is scratch. */
VIDK_CORE void vidk_h264_idct_add(int n, uint8_t *dst, ptrdiff_t ds, uint32_t *t) {
    vidk_h264_itx_2d(n, t);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            dst[y * ds + x] =
                (uint8_t)vidk_h264_add_clip(dst[y * ds + x], vidk_h264_round6(t[y * n + x]));
}

/* dst = Clip1(dst + inverse transform of dequant(c)), element 0 replaced by *dc if set. */
VIDK_CORE void vidk_h264_deq_idct_add(int n, uint8_t *dst, ptrdiff_t ds, const int16_t *c,
                                      const int16_t *ls, int qp, const int32_t *dc) {
    uint32_t t[64];
    vidk_h264_dequant(n, t, c, ls, qp, dc);
    vidk_h264_idct_add(n, dst, ds, t);
}

/* ---- DC transforms (8.5.10, 8.5.11; the encoder's forward DC transforms are the same
 * matrices): luma f = A c A (4x4), 4:2:0 chroma f = B c B (2x2), 4:2:2 chroma f = A c B
 * (4 rows x 2), with A = {1 1 1 1; 1 1 -1 -1; 1 -1 -1 1; 1 -1 1 -1}, B = {1 1; 1 -1}.
 * Modulo 2^32 (every forward sum is exact). */

VIDK_CORE void vidk_h264_had4_1d(uint32_t *o, const uint32_t *x, int s) {
    const uint32_t s01 = x[0] + x[s], d01 = x[0] - x[s];
    const uint32_t s23 = x[2 * s] + x[3 * s], d23 = x[2 * s] - x[3 * s];
    o[0] = s01 + s23;
    o[s] = s01 - s23;
    o[2 * s] = d01 - d23;
    o[3 * s] = d01 + d23;
}

/* type: 0 luma (16 values), 1 4:2:0 chroma (4), 2 4:2:2 chroma (8, 4 rows x 2); in place. */
VIDK_CORE void vidk_h264_dc_hadamard(int type, uint32_t *f) {
    if (type == 0) {
        for (int j = 0; j < 4; j++)
            vidk_h264_had4_1d(f + j, f + j, 4);
        for (int i = 0; i < 4; i++)
            vidk_h264_had4_1d(f + 4 * i, f + 4 * i, 1);
        return;
    }
    if (type == 2)
        for (int j = 0; j < 2; j++)
            vidk_h264_had4_1d(f + j, f + j, 2);
    const int rows = type == 2 ? 4 : 2;
    for (int i = 0; i < rows; i++) {
        const uint32_t a = f[2 * i], b = f[2 * i + 1];
        f[2 * i] = a + b;
        f[2 * i + 1] = a - b;
    }
    if (type == 1) {
        const uint32_t a0 = f[0], a1 = f[1];
        f[0] = a0 + f[2];
        f[1] = a1 + f[3];
        f[2] = a0 - f[2];
        f[3] = a1 - f[3];
    }
}

/* DC scaling of one value, ls = LevelScale4x4(qP,DC % 6, 0, 0): 8.5.11.2 (4:2:0 chroma,
 * type 1): ((f * ls) << (qP / 6)) >> 5; 8.5.10 (luma, and 4:2:2 chroma with qP,DC =
 * qP + 3): qP,DC >= 36: (f * ls) << (qP,DC / 6 - 6), else (f * ls + 2^(5 - qP,DC / 6)) >>
 * (6 - qP,DC / 6). */
VIDK_CORE uint32_t vidk_h264_dc_scale(int type, uint32_t f, uint32_t ls, int qpdc) {
    const int per = qpdc / 6;
    if (type == 1) return vidk_sra((f * ls) << per, 5);
    if (qpdc >= 36) return (f * ls) << (per - 6);
    return vidk_sra(f * ls + (1u << (5 - per)), 6 - per);
}

/* Inverse DC transform and scaling of a DC group: dc = scaled f. */
VIDK_CORE void vidk_h264_idct_dc(int type, int32_t *dc, const int16_t *c, uint32_t ls,
                                 int qpdc) {
    const int n = type == 0 ? 16 : type == 1 ? 4 : 8;
    uint32_t f[16];
    for (int k = 0; k < n; k++)
        f[k] = (uint32_t)c[k];
    vidk_h264_dc_hadamard(type, f);
    for (int k = 0; k < n; k++)
        dc[k] = (int32_t)vidk_h264_dc_scale(type, f[k], ls, qpdc);
}

/* Forward DC transform (no scaling): y = the same matrices applied to w. */
VIDK_CORE void vidk_h264_fdct_dc(int type, int32_t *y, const int32_t *w) {
    const int n = type == 0 ? 16 : type == 1 ? 4 : 8;
    uint32_t f[16];
    for (int k = 0; k < n; k++)
        f[k] = (uint32_t)w[k];
    vidk_h264_dc_hadamard(type, f);
    for (int k = 0; k < n; k++)
        y[k] = (int32_t)f[k];
}

/* ---- forward path (encoder; not normative: the JM / Malvar et al. design) ---------- */

/* 4-point core transform: rows of [1 1 1 1; 2 1 -1 -2; 1 -1 -1 1; 1 -2 2 -1]. */
VIDK_CORE void vidk_h264_ftx4_1d(int32_t *o, const int32_t *x, int s) {
    const int32_t s03 = x[0] + x[3 * s], d03 = x[0] - x[3 * s];
    const int32_t s12 = x[s] + x[2 * s], d12 = x[s] - x[2 * s];
    o[0] = s03 + s12;
    o[s] = 2 * d03 + d12;
    o[2 * s] = s03 - s12;
    o[3 * s] = d03 - 2 * d12;
}

/* 8-point transform: the matrix rows (8 8 8 8 8 8 8 8), (12 10 6 3 -3 -6 -10 -12),
 * (8 4 -4 -8 ...), (10 -3 -12 -6 ...), (8 -8 -8 8 ...), (6 -12 3 10 ...),
 * (4 -8 8 -4 ...), (3 -6 10 -12 ...) divided by 8, in butterflies with floor shifts. */
VIDK_CORE void vidk_h264_ftx8_1d(int32_t *o, const int32_t *x, int s) {
    const int32_t s07 = x[0] + x[7 * s], d07 = x[0] - x[7 * s];
    const int32_t s16 = x[s] + x[6 * s], d16 = x[s] - x[6 * s];
    const int32_t s25 = x[2 * s] + x[5 * s], d25 = x[2 * s] - x[5 * s];
    const int32_t s34 = x[3 * s] + x[4 * s], d34 = x[3 * s] - x[4 * s];
    const int32_t a0 = s07 + s34, a1 = s16 + s25, a2 = s07 - s34, a3 = s16 - s25;
    const int32_t b4 = d16 + d25 + (d07 + (d07 >> 1));
    const int32_t b5 = d07 - d34 - (d25 + (d25 >> 1));
    const int32_t b6 = d07 + d34 - (d16 + (d16 >> 1));
    const int32_t b7 = d16 - d25 + (d34 + (d34 >> 1));
    o[0] = a0 + a1;
    o[s] = b4 + (b7 >> 2);
    o[2 * s] = a2 + (a3 >> 1);
    o[3 * s] = b5 + (b6 >> 2);
    o[4 * s] = a0 - a1;
    o[5 * s] = b6 - (b5 >> 2);
    o[6 * s] = (a2 >> 1) - a3;
    o[7 * s] = (b4 >> 2) - b7;
}

VIDK_CORE void vidk_h264_ftx_1d(int n, int32_t *x, int s) {
    if (n == 4)
        vidk_h264_ftx4_1d(x, x, s);
    else
        vidk_h264_ftx8_1d(x, x, s);
}

/* The n x n forward transform in place: rows first, then columns. */
VIDK_CORE void vidk_h264_ftx_2d(int n, int32_t *x) {
    for (int i = 0; i < n; i++)
        vidk_h264_ftx_1d(n, x + i * n, 1);
    for (int j = 0; j < n; j++)
        vidk_h264_ftx_1d(n, x + j, n);
}

/* w = forward transform of (src - pred), n = 4 or 8. On the GPU, where both rows are
 * 4-byte aligned (the coding loop's blocks), their samples are read four at a time. */
VIDK_CORE void vidk_h264_sub_fdct(int n, int32_t *w, const uint8_t *src, ptrdiff_t ss,
                                  const uint8_t *pred, ptrdiff_t ps) {
#if defined(__CUDA_ARCH__)
    if (!(((uintptr_t)src | (uintptr_t)pred | (uintptr_t)ss | (uintptr_t)ps) & 3)) {
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x += 4) {
                const uint32_t a = *(const uint32_t *)(const void *)(src + y * ss + x);
                const uint32_t b = *(const uint32_t *)(const void *)(pred + y * ps + x);
                for (int i = 0; i < 4; i++)
                    w[y * n + x + i] =
                        (int32_t)(a >> 8 * i & 255u) - (int32_t)(b >> 8 * i & 255u);
            }
        vidk_h264_ftx_2d(n, w);
        return;
    }
#endif
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            w[y * n + x] = src[y * ss + x] - pred[y * ps + x];
    vidk_h264_ftx_2d(n, w);
}

/* 4x4 and 8x8 zig-zag scans (8.5.6, 8.5.7, frame macroblocks): scan index -> raster index.
 * The tables of the coding loop (enc_core.h) and of the stream writer (h264_stream_core.h). */
// clang-format off
#define VIDK_H264_ZZ4 {0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15}
#define VIDK_H264_ZZ8 {                                                 \
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,      \
    12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,     \
    35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,     \
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63}
// clang-format on

/* Dead-zone offset of the quantiser: 2^qbits / 3 (intra) or / 6 (inter). */
VIDK_CORE int32_t vidk_h264_deadzone(int qbits, int intra) {
    return (int32_t)(((uint32_t)1 << qbits) / (intra ? 3u : 6u));
}

/* level = sign(w) * min(32767, (|w| * mf + f) >> qbits), exact (64-bit product). */
VIDK_CORE int vidk_h264_quant1(int32_t w, uint32_t mf, int qbits, uint32_t f) {
    const uint32_t a = w < 0 ? 0u - (uint32_t)w : (uint32_t)w;
    uint64_t l = ((uint64_t)a * mf + f) >> qbits;
    if (l > 32767) l = 32767;
    return w < 0 ? -(int)l : (int)l;
}

/* len levels; returns the non-zero count. */
VIDK_CORE int vidk_h264_quant(int len, int16_t *lev, const int32_t *w, const int32_t *mf,
                              int qbits, int32_t f) {
    int nz = 0;
    for (int k = 0; k < len; k++) {
        const int l = vidk_h264_quant1(w[k], (uint32_t)mf[k], qbits, (uint32_t)f);
        lev[k] = (int16_t)l;
        nz += l != 0;
    }
    return nz;
}

/* ---- luma sample interpolation (8.4.2.2.1) ----------------------------------------- */

/* The 6-tap filter (1, -5, 20, 20, -5, 1) of 8.4.2.2.1 over six consecutive samples. */
VIDK_CORE int vidk_h264_tap6(int a, int b, int c, int d, int e, int f) {
    return a - 5 * b + 20 * c + 20 * d - 5 * e + f;
}

VIDK_CORE int vidk_h264_clip255(int v) {
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* The half-sample values at integer position (x, y) of a w x h luma picture r (stride s),
 * whose samples outside it are those of the nearest edge (8.4.2.2.1, the clipped xZL / yZL
 * of 8-228 and 8-229): o[0] = b (x + 1/2, y), o[1] = h (x, y + 1/2), o[2] = j (x + 1/2,
 * y + 1/2), each Clip1 of the rounded filter sum (j from the unrounded intermediate b1
 * values of rows y - 2 .. y + 3, 8-243). */
VIDK_CORE void vidk_h264_hpel3(const uint8_t *r, ptrdiff_t s, int w, int h, int x, int y,
                               uint8_t *o) {
    int cx[6], cy[6];
    for (int k = 0; k < 6; k++) {
        const int xx = x - 2 + k, yy = y - 2 + k;
        cx[k] = xx < 0 ? 0 : xx >= w ? w - 1 : xx;
        cy[k] = yy < 0 ? 0 : yy >= h ? h - 1 : yy;
    }
    int b1[6]; /* the horizontal sums of rows y - 2 .. y + 3 */
    for (int k = 0; k < 6; k++) {
        const uint8_t *row = r + (ptrdiff_t)cy[k] * s;
        b1[k] = vidk_h264_tap6(row[cx[0]], row[cx[1]], row[cx[2]], row[cx[3]], row[cx[4]],
                               row[cx[5]]);
    }
    const int c = cx[2];
    const int h1 = vidk_h264_tap6(r[(ptrdiff_t)cy[0] * s + c], r[(ptrdiff_t)cy[1] * s + c],
                                  r[(ptrdiff_t)cy[2] * s + c], r[(ptrdiff_t)cy[3] * s + c],
                                  r[(ptrdiff_t)cy[4] * s + c], r[(ptrdiff_t)cy[5] * s + c]);
    const int j1 = vidk_h264_tap6(b1[0], b1[1], b1[2], b1[3], b1[4], b1[5]);
    o[0] = (uint8_t)vidk_h264_clip255((b1[2] + 16) >> 5);
    o[1] = (uint8_t)vidk_h264_clip255((h1 + 16) >> 5);
    o[2] = (uint8_t)vidk_h264_clip255((j1 + 512) >> 10);
}

/* Table 8-12 with 8-250 .. 8-261: the luma sample at quarter-sample fraction (xFrac, yFrac)
 * from integer position (x, y) is (A + B + 1) >> 1 of two full- or half-sample values (A ==
 * B where the fraction is a full or half one). Entry 4 xFrac + yFrac holds A and B as
 * codes: bits 0-1 the kind (0 G full sample, 1 b, 2 h, 3 j as vidk_h264_hpel3), bit 2 one
 * sample right (x + 1), bit 3 one sample down (y + 1): H = G right, M = G down, s = b down,
 * m = h right. */
/* clang-format off */
#define VIDK_H264_QPEL_SRC {                                                                   \
    {0, 0}, {0, 2}, {2, 2}, {8, 2}, /* 0 0 G, 0 1 d, 0 2 h, 0 3 n */                           \
    {0, 1}, {1, 2}, {2, 3}, {2, 9}, /* 1 0 a, 1 1 e, 1 2 i, 1 3 p */                           \
    {1, 1}, {1, 3}, {3, 3}, {3, 9}, /* 2 0 b, 2 1 f, 2 2 j, 2 3 q */                           \
    {4, 1}, {1, 6}, {3, 6}, {6, 9}, /* 3 0 c, 3 1 g, 3 2 k, 3 3 r */                           \
}
/* clang-format on */
VIDK_CORE_TABLE(uint8_t, vidk_h264_qpel_src, [16][2], VIDK_H264_QPEL_SRC)

#endif
