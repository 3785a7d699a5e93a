/* The HEVC transform and quantiser arithmetic, written once: the C reference (src/hevc.c),
 * the coding loop (src/enc/enc_core.h, enc_tmpl.h, src/cuda/enc_warp.cuh) call these
 * functions. References: ITU-T H.265 8.6.2 - 8.6.4.2; the forward path is the HM
 * reference encoder's (TComTrQuant xTr, xQuant without RDOQ).
 *
 * Transforms: exact 32-bit integer sums (docs/HEVC_CUDA.md bounds them); the DCT of every
 * size by partial butterflies (the even-odd decomposition of HM: n^2 / 3 multiplications,
 * an exact reassociation of the matrix product), the DST-VII by its matrix rows.
 * Matrices are passed row-major (m[k * n + j]: row k = basis function k). */
#ifndef VIDK_HEVC_CORE_H
#define VIDK_HEVC_CORE_H

#include "vidk_core.h"

/* |transMatrix| by angle index j = 0..32: 64 cos(pi j / 64) as the standard rounds it
 * (row 0 is 64). One list, a host and a device copy of it (a __host__ __device__ function
 * reads the one of the side it runs on). */
#define VIDK_HEVC_COS_MAG                                                                      \
    {                                                                                          \
        64, 90, 90, 90, 89, 88, 87, 85, 83, 82, 80, 78, 75, 73, 70, 67, 64, 61, 57, 54, 50,    \
            46, 43, 38, 36, 31, 25, 22, 18, 13, 9, 4, 0                                        \
    }
static const uint8_t vidk_hevc_cos_mag_h[33] = VIDK_HEVC_COS_MAG;
#if defined(__CUDACC__)
static __device__ const uint8_t vidk_hevc_cos_mag_d[33] = VIDK_HEVC_COS_MAG;
#endif

/* Entry (k, n) of the 32-point DCT matrix of 8.6.4.2, k = row (frequency), n = column:
 * +-cos_mag(j) with j = k (2n + 1) mod 128 folded by the cosine's symmetries. */
VIDK_CORE int vidk_hevc_t32_at(int k, int n) {
#if defined(__CUDA_ARCH__)
    const uint8_t *a = vidk_hevc_cos_mag_d;
#else
    const uint8_t *a = vidk_hevc_cos_mag_h;
#endif
    const int j = (k * (2 * n + 1)) & 127;
    if (k == 0) return 64;
    if (j <= 32) return a[j];
    if (j <= 64) return -a[64 - j];
    if (j <= 96) return -a[j - 64];
    return a[128 - j];
}

/* The N-point DCT matrix (log2n 2..5: rows 0, 32/N, 2 * 32/N, ... of the 32-point one),
 * row-major N x N, into m. */
VIDK_CORE void vidk_hevc_matrix(int8_t *m, int log2n) {
    const int n = 1 << log2n;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < n; j++)
            m[k * n + j] = (int8_t)vidk_hevc_t32_at(k << (5 - log2n), j);
}

/* Clip3(-32768, 32767, v): coeffMin / coeffMax of 8-bit..16-bit video (8.6.2 - 8.6.4). */
VIDK_CORE int16_t vidk_hevc_clip16(int64_t v) {
    return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);
}

/* y = T x for the n-point DCT (m: its matrix), by partial butterflies. */
VIDK_CORE void vidk_hevc_dct1(const int8_t *m, int log2n, const int32_t *x, int xs, int32_t *y,
                              int ys) {
    const int n = 1 << log2n;
    int32_t e[32], o[16];
    for (int k = 0; k < n; k++)
        e[k] = x[k * xs];
    for (int lv = log2n; lv >= 2; lv--) {
        const int sz = 1 << lv, half = sz / 2, st = log2n - lv;
        for (int k = 0; k < half; k++) {
            o[k] = e[k] - e[sz - 1 - k];
            e[k] = e[k] + e[sz - 1 - k];
        }
        for (int i = 0; i < half; i++) {
            const int8_t *row = m + (size_t)(((2 * i + 1) << st) * n);
            int32_t acc = 0;
            for (int k = 0; k < half; k++)
                acc += row[k] * o[k];
            y[((2 * i + 1) << st) * ys] = acc;
        }
    }
    y[0] = 64 * (e[0] + e[1]);
    y[(n / 2) * ys] = 64 * (e[0] - e[1]);
}

/* x = T^T c for the n-point DCT (the inverse's sums), even-odd from the 2-point core up. */
VIDK_CORE void vidk_hevc_idct1(const int8_t *m, int log2n, const int32_t *c, int cs, int32_t *x,
                               int xs) {
    const int n = 1 << log2n;
    int32_t e[32], o[16];
    e[0] = 64 * (c[0] + c[(n / 2) * cs]);
    e[1] = 64 * (c[0] - c[(n / 2) * cs]);
    for (int lv = 2; lv <= log2n; lv++) {
        const int sz = 1 << lv, half = sz / 2, st = log2n - lv;
        for (int j = 0; j < half; j++) {
            int32_t acc = 0;
            for (int i = 0; i < half; i++)
                acc += m[(size_t)(((2 * i + 1) << st) * n) + j] * c[((2 * i + 1) << st) * cs];
            o[j] = acc;
        }
        for (int j = half - 1; j >= 0; j--) {
            const int32_t ev = e[j];
            e[j] = ev + o[j];
            e[sz - 1 - j] = ev - o[j];
        }
    }
    for (int k = 0; k < n; k++)
        x[k * xs] = e[k];
}

/* The 4-point DST-VII (trType 1) by its matrix rows: forward y = D x, inverse x = D^T c. */
VIDK_CORE void vidk_hevc_dst1(const int8_t *d, const int32_t *x, int xs, int32_t *y, int ys) {
    for (int k = 0; k < 4; k++) {
        int32_t s = 0;
        for (int j = 0; j < 4; j++)
            s += d[4 * k + j] * x[j * xs];
        y[k * ys] = s;
    }
}
VIDK_CORE void vidk_hevc_idst1(const int8_t *d, const int32_t *c, int cs, int32_t *x, int xs) {
    for (int j = 0; j < 4; j++) {
        int32_t s = 0;
        for (int k = 0; k < 4; k++)
            s += d[4 * k + j] * c[k * cs];
        x[j * xs] = s;
    }
}

/* One forward / inverse 1-D transform: DST-VII when dst, else the DCT of 2^log2n. */
VIDK_CORE void vidk_hevc_fwd1(const int8_t *m, int log2n, int dst, const int32_t *x, int xs,
                              int32_t *y, int ys) {
    if (dst)
        vidk_hevc_dst1(m, x, xs, y, ys);
    else
        vidk_hevc_dct1(m, log2n, x, xs, y, ys);
}
VIDK_CORE void vidk_hevc_inv1(const int8_t *m, int log2n, int dst, const int32_t *c, int cs,
                              int32_t *x, int xs) {
    if (dst)
        vidk_hevc_idst1(m, c, cs, x, xs);
    else
        vidk_hevc_idct1(m, log2n, c, cs, x, xs);
}

/* HM xTr: the residual clipped to +-(2^bd - 1) is transformed along rows first, then
 * along columns; stage shifts log2n + bd - 9 and log2n + 6 with rounding, 32-bit
 * intermediates, no clipping. Stage 1 on one row (res row -> tmp row), stage 2 on one
 * column (tmp column u -> coefficient column u, both with stride n). */
VIDK_CORE void vidk_hevc_fwd_row(const int8_t *m, int log2n, int dst, int bd,
                                 const int16_t *res, int32_t *tmp) {
    const int n = 1 << log2n, lim = (1 << bd) - 1, s1 = log2n + bd - 9;
    int32_t in[32], out[32];
    for (int j = 0; j < n; j++)
        in[j] = vidk_clip3(res[j], -lim, lim);
    vidk_hevc_fwd1(m, log2n, dst, in, 1, out, 1);
    for (int k = 0; k < n; k++)
        tmp[k] = (out[k] + (1 << (s1 - 1))) >> s1;
}
VIDK_CORE void vidk_hevc_fwd_col(const int8_t *m, int log2n, int dst, const int32_t *tmp,
                                 int16_t *coef) {
    const int n = 1 << log2n, s2 = log2n + 6;
    int32_t out[32];
    vidk_hevc_fwd1(m, log2n, dst, tmp, n, out, 1);
    for (int v = 0; v < n; v++)
        coef[v * n] = (int16_t)((out[v] + (1 << (s2 - 1))) >> s2);
}

/* tmp: n * n. */
VIDK_CORE void vidk_hevc_fwd_2d(const int8_t *m, int log2n, int dst, int bd, int16_t *coef,
                                const int16_t *res, int32_t *tmp) {
    const int n = 1 << log2n;
    for (int y = 0; y < n; y++)
        vidk_hevc_fwd_row(m, log2n, dst, bd, res + y * n, tmp + y * n);
    for (int u = 0; u < n; u++)
        vidk_hevc_fwd_col(m, log2n, dst, tmp + u, coef + u);
}

/* 8.6.4.2: 1. each column is transformed, 2. g = Clip3(coeffMin, coeffMax, (e + 64) >> 7),
 * 3. each row of g is transformed, then 8.6.2: r = (r + 2^(bdShift - 1)) >> bdShift,
 * bdShift = 20 - BitDepth, clipped to 16 bits. Stage 1 on column x (coefficients -> tmp,
 * both with stride n), stage 2 on row y (tmp row -> residual row). */
VIDK_CORE void vidk_hevc_inv_col(const int8_t *m, int log2n, int dst, const int16_t *coef,
                                 int32_t *tmp) {
    const int n = 1 << log2n;
    int32_t in[32], out[32];
    for (int k = 0; k < n; k++)
        in[k] = coef[k * n];
    vidk_hevc_inv1(m, log2n, dst, in, 1, out, 1);
    for (int y = 0; y < n; y++)
        tmp[y * n] = vidk_hevc_clip16(((int64_t)out[y] + 64) >> 7);
}
/* The inverse's last rounding (8.6.2): one output of the row stage to a residual. */
VIDK_CORE int16_t vidk_hevc_inv_round(int32_t v, int bd) {
    const int bdshift = 20 - bd;
    return vidk_hevc_clip16(((int64_t)v + (1 << (bdshift - 1))) >> bdshift);
}
VIDK_CORE void vidk_hevc_inv_row(const int8_t *m, int log2n, int dst, int bd,
                                 const int32_t *tmp, int16_t *res) {
    const int n = 1 << log2n;
    int32_t out[32];
    vidk_hevc_inv1(m, log2n, dst, tmp, 1, out, 1);
    for (int x = 0; x < n; x++)
        res[x] = vidk_hevc_inv_round(out[x], bd);
}

/* tmp: n * n. */
VIDK_CORE void vidk_hevc_inv_2d(const int8_t *m, int log2n, int dst, int bd, int16_t *res,
                                const int16_t *coef, int32_t *tmp) {
    const int n = 1 << log2n;
    for (int x = 0; x < n; x++)
        vidk_hevc_inv_col(m, log2n, dst, coef + x, tmp + x);
    for (int y = 0; y < n; y++)
        vidk_hevc_inv_row(m, log2n, dst, bd, tmp + y * n, res + y * n);
}

/* HM xQuant without RDOQ and sign hiding: 64-bit product, magnitude rounded by the offset,
 * sign restored, then Clip3(-32768, 32767). */
VIDK_CORE int16_t vidk_hevc_quant1(int c, int64_t scale, int qbits, int32_t off) {
    const int64_t mag = ((c < 0 ? -(int64_t)c : c) * scale + off) >> qbits;
    return vidk_hevc_clip16(c < 0 ? -mag : mag);
}

/* 8.6.3: Clip3(coeffMin, coeffMax, ((TransCoeffLevel * m * levelScale[qP % 6] << (qP / 6))
 * + (1 << (bdShift - 1))) >> bdShift). With shift = bdShift - qP / 6 this is exactly
 * (x + (1 << (shift - 1))) >> shift for shift > 0 and x << -shift otherwise. */
VIDK_CORE int16_t vidk_hevc_dequant1(int l, int32_t scale, int shift) {
    const int64_t x = (int64_t)l * scale;
    return vidk_hevc_clip16(shift > 0 ? (x + ((int64_t)1 << (shift - 1))) >> shift
                                      : x * ((int64_t)1 << -shift));
}

/* len coefficients; returns the non-zero levels. */
VIDK_CORE int vidk_hevc_quant(int16_t *lev, const int16_t *coef, int len, int32_t scale,
                              int qbits, int32_t off) {
    int nz = 0;
    for (int k = 0; k < len; k++) {
        lev[k] = vidk_hevc_quant1(coef[k], scale, qbits, off);
        nz += lev[k] != 0;
    }
    return nz;
}

VIDK_CORE void vidk_hevc_dequant(int16_t *coef, const int16_t *lev, int len, int32_t scale,
                                 int shift) {
    for (int k = 0; k < len; k++)
        coef[k] = vidk_hevc_dequant1(lev[k], scale, shift);
}

#endif
