/* checkkern: the C reference kernels against independent transcriptions ("spec" family).
 *
 * Every other family checks each ISA level against the C version, so at the c level C is
 * compared with itself and can catch nothing. Here the C functions (the ground truth of
 * every backend) meet formulas written from the standards and docs/ENCODE.md, with their
 * constant tables typed here, not taken from src/:
 * - SAD of every block shape against a plain double loop;
 * - H.264 forward 4x4 (matrix form Cf X Cf^T) and 8x8 (the butterflies of docs/ENCODE.md
 *   §9) transforms, the quantiser formula with the dead zone 2^qbits / 3 or / 6, and the
 *   JM quantiser factors (MF) and normAdjust tables;
 * - HEVC forward DCT 4..32 (the transMatrix from its 33 distinct values, HM's two shifts)
 *   and DST 4x4, the quantiser formula with its rounding offset (171 / 512 in I slices, 85 /
 *   512 otherwise) and qbits, and the Q / levelScale tables: the rounding helpers that C,
 *   SIMD and CUDA share are checked here and nowhere else in checkkern. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "internal.h"

/* ---------------------------------------------------------------- SAD */

static void check_sad_spec(void) {
    if (!ck_begin("sad_spec", "c", NULL, NULL)) return;
    VidkSadDSP d;
    vidk_sad_dsp_init(&d, 0);
    static uint8_t a[64 * 80], b[64 * 80];
    for (int it = 0; it < 40; it++) {
        const int mode = it % 4; /* random, extremes, equal, small differences */
        for (int i = 0; i < 64 * 80; i++) {
            a[i] = (uint8_t)(mode == 1 ? (ck_rand() & 1) * 255 : ck_rand() & 255);
            b[i] = mode == 1   ? (uint8_t)(255 - a[i])
                   : mode == 2 ? a[i]
                   : mode == 3 ? (uint8_t)(a[i] ^ (ck_rand() & 3))
                               : (uint8_t)(ck_rand() & 255);
        }
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            const int w = vidk_block_width((VidkBlockSize)bs),
                      h = vidk_block_height((VidkBlockSize)bs);
            const ptrdiff_t sa = 64 + ck_rand_range(0, 8), sb = 64 + ck_rand_range(0, 8);
            unsigned want = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    const int dv = a[y * sa + x] - b[y * sb + x];
                    want += (unsigned)(dv < 0 ? -dv : dv);
                }
            const unsigned got = d.sad[bs](a, sa, b, sb);
            if (got != want) ck_fail("sad %dx%d: %u, expected %u", w, h, got, want);
        }
    }
    ck_end();
}

/* ---------------------------------------------------------------- H.264 */

/* JM quantiser factors (docs/ENCODE.md §9) and normAdjust (8-315, 8-318), by class. */
static const int mf4_spec[6][3] = {{13107, 5243, 8066}, {11916, 4660, 7490},
                                   {10082, 4194, 6554}, {9362, 3647, 5825},
                                   {8192, 3355, 5243},  {7282, 2893, 4559}};
static const int mf8_spec[6][6] = {
    {13107, 11428, 20972, 12222, 16777, 15481}, {11916, 10826, 19174, 11058, 14980, 14290},
    {10082, 8943, 15978, 9675, 12710, 11985},   {9362, 8228, 14913, 8931, 11984, 11259},
    {8192, 7346, 13159, 7740, 10486, 9777},     {7282, 6428, 11570, 6830, 9118, 8640}};
static const int norm4_spec[6][3] = {{10, 16, 13}, {11, 18, 14}, {13, 20, 16},
                                     {14, 23, 18}, {16, 25, 20}, {18, 29, 23}};
static const int norm8_spec[6][6] = {{20, 18, 32, 19, 25, 24}, {22, 19, 35, 21, 28, 26},
                                     {26, 23, 42, 24, 33, 31}, {28, 25, 45, 26, 35, 33},
                                     {32, 28, 51, 30, 40, 38}, {36, 32, 58, 34, 46, 43}};

static int class4_spec(int i, int j) {
    return (i % 2 == 0 && j % 2 == 0) ? 0 : (i % 2 == 1 && j % 2 == 1) ? 1 : 2;
}
static int class8_spec(int i, int j) {
    if (i % 4 == 0 && j % 4 == 0) return 0;
    if (i % 2 == 1 && j % 2 == 1) return 1;
    if (i % 4 == 2 && j % 4 == 2) return 2;
    if ((i % 4 == 0 && j % 2 == 1) || (i % 2 == 1 && j % 4 == 0)) return 3;
    if ((i % 4 == 0 && j % 4 == 2) || (i % 4 == 2 && j % 4 == 0)) return 4;
    return 5;
}

/* The 8-point forward butterflies of docs/ENCODE.md §9 on x[0..7] (stride s). */
static void f8_spec(int32_t *o, const int32_t *x, int s) {
#define X(k) x[(k)*s]
    const int32_t a0 = X(0) + X(7) + X(3) + X(4), a1 = X(1) + X(6) + X(2) + X(5);
    const int32_t a2 = X(0) + X(7) - X(3) - X(4), a3 = X(1) + X(6) - X(2) - X(5);
    const int32_t d07 = X(0) - X(7), d16 = X(1) - X(6), d25 = X(2) - X(5), d34 = X(3) - X(4);
#undef X
    const int32_t b4 = d16 + d25 + d07 + (d07 >> 1), b5 = d07 - d34 - d25 - (d25 >> 1);
    const int32_t b6 = d07 + d34 - d16 - (d16 >> 1), b7 = d16 - d25 + d34 + (d34 >> 1);
    const int32_t y[8] = {a0 + a1, b4 + (b7 >> 2), a2 + (a3 >> 1), b5 + (b6 >> 2),
                          a0 - a1, b6 - (b5 >> 2), (a2 >> 1) - a3, (b4 >> 2) - b7};
    for (int k = 0; k < 8; k++)
        o[k * s] = y[k];
}

static void check_h264_spec(void) {
    VidkH264DSP d;
    vidk_h264_dsp_init(&d, 0);
    static const int cf[4][4] = {{1, 1, 1, 1}, {2, 1, -1, -2}, {1, -1, -1, 1}, {1, -2, 2, -1}};
    if (ck_begin("h264_fdct_spec", "c", NULL, NULL)) {
        static int16_t res[64];
        int32_t w[64], t[64], want[64];
        for (int it = 0; it < 2000; it++) {
            const int amp = it % 3 == 0 ? 255 : it % 3 == 1 ? 16 : 1;
            for (int k = 0; k < 64; k++)
                res[k] = (int16_t)(it % 7 == 0 ? ((ck_rand() & 1) ? 255 : -255)
                                               : ck_rand_range(-amp, amp));
            /* 4x4: Cf X Cf^T */
            d.fdct[0](w, res);
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) {
                    int32_t s = 0;
                    for (int m = 0; m < 4; m++)
                        for (int n = 0; n < 4; n++)
                            s += cf[i][m] * res[m * 4 + n] * cf[j][n];
                    want[i * 4 + j] = s;
                }
            for (int k = 0; k < 16; k++)
                if (w[k] != want[k]) {
                    ck_fail("4x4 coefficient %d: %d, expected %d", k, w[k], want[k]);
                    break;
                }
            /* 8x8: rows, then columns */
            d.fdct[1](w, res);
            for (int k = 0; k < 64; k++)
                t[k] = res[k];
            for (int i = 0; i < 8; i++)
                f8_spec(t + 8 * i, t + 8 * i, 1);
            for (int j = 0; j < 8; j++)
                f8_spec(want + j, t + j, 8);
            for (int k = 0; k < 64; k++)
                if (w[k] != want[k]) {
                    ck_fail("8x8 coefficient %d: %d, expected %d", k, w[k], want[k]);
                    break;
                }
        }
        ck_end();
    }
    if (ck_begin("h264_quant_spec", "c", NULL, NULL)) {
        static const uint8_t flat[64] = {16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16};
        int32_t mf4[6][16], mf8[6][64];
        int16_t ls4[6][16], ls8[6][64];
        vidk_h264_quant_mf4(mf4, flat);
        vidk_h264_quant_mf8(mf8, flat);
        vidk_h264_level_scale4(ls4, flat);
        vidk_h264_level_scale8(ls8, flat);
        for (int m = 0; m < 6; m++) {
            for (int k = 0; k < 16; k++) {
                const int c = class4_spec(k / 4, k % 4);
                if (mf4[m][k] != mf4_spec[m][c])
                    ck_fail("MF 4x4 qP%%6 %d position %d: %d, expected %d", m, k, mf4[m][k],
                            mf4_spec[m][c]);
                if (ls4[m][k] != 16 * norm4_spec[m][c])
                    ck_fail("LevelScale4x4 m %d position %d: %d, expected %d", m, k, ls4[m][k],
                            16 * norm4_spec[m][c]);
            }
            for (int k = 0; k < 64; k++) {
                const int c = class8_spec(k / 8, k % 8);
                if (mf8[m][k] != mf8_spec[m][c])
                    ck_fail("MF 8x8 qP%%6 %d position %d: %d, expected %d", m, k, mf8[m][k],
                            mf8_spec[m][c]);
                if (ls8[m][k] != 16 * norm8_spec[m][c])
                    ck_fail("LevelScale8x8 m %d position %d: %d, expected %d", m, k, ls8[m][k],
                            16 * norm8_spec[m][c]);
            }
        }
        int32_t w[64];
        int16_t lev[64];
        for (int qb = 15; qb <= 31; qb++)
            for (int intra = 0; intra < 2; intra++) {
                const int64_t f = ((int64_t)1 << qb) / (intra ? 3 : 6);
                if (vidk_h264_deadzone(qb, intra) != f)
                    ck_fail("dead zone qbits %d %s: %d, expected %lld", qb,
                            intra ? "intra" : "inter", vidk_h264_deadzone(qb, intra),
                            (long long)f);
                for (int it = 0; it < 20; it++) {
                    const int sz = it & 1, n = sz ? 64 : 16, m = ck_rand_range(0, 5);
                    const int32_t *mf = sz ? mf8[m] : mf4[m];
                    for (int k = 0; k < n; k++)
                        w[k] = ck_rand_range(-(1 << 16), 1 << 16) >> ck_rand_range(0, 14);
                    const int nz = d.quant[sz](lev, w, mf, qb, (int32_t)f);
                    int want_nz = 0;
                    for (int k = 0; k < n; k++) {
                        const int64_t a = w[k] < 0 ? -(int64_t)w[k] : w[k];
                        int64_t l = (a * mf[k] + f) >> qb;
                        if (l > 32767) l = 32767;
                        if (w[k] < 0) l = -l;
                        want_nz += l != 0;
                        if (lev[k] != l) {
                            ck_fail("quant %s qbits %d: level %d of %d: %d, expected %lld",
                                    sz ? "8x8" : "4x4", qb, k, w[k], lev[k], (long long)l);
                            break;
                        }
                    }
                    if (nz != want_nz) ck_fail("quant: %d non-zero, expected %d", nz, want_nz);
                }
            }
        ck_end();
    }
}

/* ---------------------------------------------------------------- HEVC */

/* transMatrix (8.6.4.2) from its distinct values (docs/ENCODE.md §10). */
static int hevc_t32_spec(int k, int m) {
    static const int c[33] = {64, 90, 90, 90, 89, 88, 87, 85, 83, 82, 80,
                              78, 75, 73, 70, 67, 64, 61, 57, 54, 50, 46,
                              43, 38, 36, 31, 25, 22, 18, 13, 9,  4,  0};
    if (k == 0) return 64;
    const int j = (k * (2 * m + 1)) % 128;
    return j <= 32 ? c[j] : j <= 64 ? -c[64 - j] : j <= 96 ? -c[j - 64] : c[128 - j];
}

static void check_hevc_spec(void) {
    VidkHevcDSP d;
    vidk_hevc_dsp_init(&d, 0);
    static const int dst[4][4] = {
        {29, 55, 74, 84}, {74, 74, 0, -74}, {84, -29, -74, 55}, {55, -84, 74, -29}};
    if (ck_begin("hevc_fwd_spec", "c", NULL, NULL)) {
        static int16_t res[1024], coef[1024];
        static int64_t t[1024];
        for (int kind = 0; kind < 5; kind++) { /* DCT 4, 8, 16, 32, DST 4 */
            const int l2 = kind == 4 ? 2 : kind + 2, n = 1 << l2;
            for (int it = 0; it < (kind == 3 ? 30 : 200); it++) {
                const int bd = 8 + 2 * (it % 3), mx = (1 << bd) - 1;
                for (int k = 0; k < n * n; k++)
                    res[k] = (int16_t)(it % 5 == 0 ? ((ck_rand() & 1) ? mx : -mx)
                                                   : ck_rand_range(-mx, mx));
                d.fwd[kind](coef, res, 1, bd);
                const int s1 = l2 + bd - 9, s2 = l2 + 6;
                for (int y = 0; y < n; y++)
                    for (int k = 0; k < n; k++) {
                        int64_t s = 0;
                        for (int m = 0; m < n; m++)
                            s += (int64_t)(kind == 4 ? dst[k][m]
                                                     : hevc_t32_spec(k * 32 / n, m)) *
                                 res[y * n + m];
                        t[y * n + k] = (s + ((int64_t)1 << (s1 - 1))) >> s1;
                    }
                for (int v = 0; v < n; v++)
                    for (int u = 0; u < n; u++) {
                        int64_t s = 0;
                        for (int y = 0; y < n; y++)
                            s += (int64_t)(kind == 4 ? dst[v][y]
                                                     : hevc_t32_spec(v * 32 / n, y)) *
                                 t[y * n + u];
                        s = (s + ((int64_t)1 << (s2 - 1))) >> s2;
                        s = s < -32768 ? -32768 : s > 32767 ? 32767 : s;
                        if (coef[v * n + u] != s) {
                            ck_fail("%s %d bd %d: coefficient (%d, %d): %d, expected %lld",
                                    kind == 4 ? "DST" : "DCT", n, bd, u, v, coef[v * n + u],
                                    (long long)s);
                            v = n;
                            break;
                        }
                    }
            }
        }
        ck_end();
    }
    if (ck_begin("hevc_quant_spec", "c", NULL, NULL)) {
        static const int q_spec[6] = {26214, 23302, 20560, 18396, 16384, 14564};
        static const int ls_spec[6] = {40, 45, 51, 57, 64, 72};
        for (int m = 0; m < 6; m++) {
            if (vidk_hevc_qscale[m] != q_spec[m])
                ck_fail("Q[%d]: %d, expected %d", m, vidk_hevc_qscale[m], q_spec[m]);
            if (vidk_hevc_level_scale[m] != ls_spec[m])
                ck_fail("levelScale[%d]: %d, expected %d", m, vidk_hevc_level_scale[m],
                        ls_spec[m]);
        }
        static int16_t coef[1024], lev[1024];
        uint16_t nnz[2];
        for (int bd = 8; bd <= 12; bd += 2)
            for (int qp = 0; qp <= 51 + 6 * (bd - 8); qp++)
                for (int l2 = 2; l2 <= 5; l2++)
                    for (int islice = 0; islice < 2; islice++) {
                        /* HM: QUANT_SHIFT 14 + qP / 6 + transform shift (15 - bd - log2N);
                         * offset 171 / 512 (I) or 85 / 512 (P) of 2^qbits. */
                        const int qb = 14 + qp / 6 + (15 - bd - l2);
                        const int64_t off = ((int64_t)(islice ? 171 : 85) << qb) >> 9;
                        if (vidk_hevc_qbits(qp, bd, l2) != qb)
                            ck_fail("qbits qP %d bd %d log2N %d: %d, expected %d", qp, bd, l2,
                                    vidk_hevc_qbits(qp, bd, l2), qb);
                        if (vidk_hevc_qoffset(qb, islice) != off)
                            ck_fail("rounding offset qbits %d %s slice: %d, expected %lld", qb,
                                    islice ? "I" : "P", vidk_hevc_qoffset(qb, islice),
                                    (long long)off);
                        const int len = 1 << (2 * l2);
                        for (int k = 0; k < len; k++)
                            coef[k] =
                                (int16_t)(ck_rand_range(-32768, 32767) >> ck_rand_range(0, 15));
                        d.quant(lev, coef, 1, len, q_spec[qp % 6], qb, (int32_t)off, nnz);
                        int want_nz = 0;
                        for (int k = 0; k < len; k++) {
                            const int64_t a = coef[k] < 0 ? -(int64_t)coef[k] : coef[k];
                            int64_t l = (a * q_spec[qp % 6] + off) >> qb;
                            if (coef[k] < 0) l = -l;
                            l = l < -32768 ? -32768 : l > 32767 ? 32767 : l;
                            want_nz += l != 0;
                            if (lev[k] != l) {
                                ck_fail("quant qP %d bd %d log2N %d: level %d of %d: %d, "
                                        "expected %lld",
                                        qp, bd, l2, k, coef[k], lev[k], (long long)l);
                                break;
                            }
                        }
                        if (nnz[0] != want_nz)
                            ck_fail("quant: %u non-zero, expected %d", nnz[0], want_nz);
                    }
        ck_end();
    }
}

void ck_family_spec(void) {
    check_sad_spec();
    check_h264_spec();
    check_hevc_spec();
}
