/* H.264 transforms: conformance of the C reference against an independent, deliberately
 * naive implementation written from the spec text (clauses 8.5.9 - 8.5.14, 64-bit
 * arithmetic, the spec's variable names), hand-computed values, identities (forward then
 * inverse, DC-only blocks), frame-level round trips on a real clip, the coefficient
 * file format, and every argument error of the public API. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "coeffile.h"
#include "test_util.h"
#include "vidkern/vidkern.h"

#ifndef VIDK_SHARED_VIDEO_DIR
#define VIDK_SHARED_VIDEO_DIR "../shared/video"
#endif

static uint32_t seed;

static int rnd(int lo, int hi) {
    return lo + (int)(test_rand(&seed) % (uint32_t)(hi - lo + 1));
}

/* ---- the spec, transcribed ---------------------------------------------------------- */

/* 8.5.9 normAdjust4x4 / normAdjust8x8, written out as in the standard's equations. */
static int norm_adjust4(int m, int i, int j) {
    static const int v[6][3] = {{10, 16, 13}, {11, 18, 14}, {13, 20, 16},
                                {14, 23, 18}, {16, 25, 20}, {18, 29, 23}};
    if (i % 2 == 0 && j % 2 == 0) return v[m][0];
    if (i % 2 == 1 && j % 2 == 1) return v[m][1];
    return v[m][2];
}

static int norm_adjust8(int m, int i, int j) {
    static const int v[6][6] = {{20, 18, 32, 19, 25, 24}, {22, 19, 35, 21, 28, 26},
                                {26, 23, 42, 24, 33, 31}, {28, 25, 45, 26, 35, 33},
                                {32, 28, 51, 30, 40, 38}, {36, 32, 58, 34, 46, 43}};
    if (i % 4 == 0 && j % 4 == 0) return v[m][0];
    if (i % 2 == 1 && j % 2 == 1) return v[m][1];
    if (i % 4 == 2 && j % 4 == 2) return v[m][2];
    if ((i % 4 == 0 && j % 2 == 1) || (i % 2 == 1 && j % 4 == 0)) return v[m][3];
    if ((i % 4 == 0 && j % 4 == 2) || (i % 4 == 2 && j % 4 == 0)) return v[m][4];
    return v[m][5];
}

static int64_t floor_shift(int64_t v, int n) {
    return v >= 0 ? v >> n : -((-v + (1 << n) - 1) >> n);
}

/* 8.5.12.1 + 8.5.12.2: c[i][j] -> r[i][j]. */
static void spec_inverse4(int64_t r[4][4], const int c[4][4], int qP, const uint8_t *ws) {
    int64_t d[4][4], e[4][4], f[4][4], g[4][4], h[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            const int64_t ls = (ws ? ws[i * 4 + j] : 16) * norm_adjust4(qP % 6, i, j);
            if (qP >= 24)
                d[i][j] = (c[i][j] * ls) * ((int64_t)1 << (qP / 6 - 4));
            else
                d[i][j] = floor_shift(c[i][j] * ls + ((int64_t)1 << (3 - qP / 6)), 4 - qP / 6);
        }
    for (int i = 0; i < 4; i++) {
        e[i][0] = d[i][0] + d[i][2];
        e[i][1] = d[i][0] - d[i][2];
        e[i][2] = floor_shift(d[i][1], 1) - d[i][3];
        e[i][3] = d[i][1] + floor_shift(d[i][3], 1);
        f[i][0] = e[i][0] + e[i][3];
        f[i][1] = e[i][1] + e[i][2];
        f[i][2] = e[i][1] - e[i][2];
        f[i][3] = e[i][0] - e[i][3];
    }
    for (int j = 0; j < 4; j++) {
        g[0][j] = f[0][j] + f[2][j];
        g[1][j] = f[0][j] - f[2][j];
        g[2][j] = floor_shift(f[1][j], 1) - f[3][j];
        g[3][j] = f[1][j] + floor_shift(f[3][j], 1);
        h[0][j] = g[0][j] + g[3][j];
        h[1][j] = g[1][j] + g[2][j];
        h[2][j] = g[1][j] - g[2][j];
        h[3][j] = g[0][j] - g[3][j];
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            r[i][j] = floor_shift(h[i][j] + 32, 6);
}

/* 8.5.13.1 + 8.5.13.2. */
static void spec_inverse8(int64_t r[8][8], const int c[8][8], int qP, const uint8_t *ws) {
    int64_t d[8][8], t[8][8], o[8][8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            const int64_t ls = (ws ? ws[i * 8 + j] : 16) * norm_adjust8(qP % 6, i, j);
            if (qP >= 36)
                d[i][j] = (c[i][j] * ls) * ((int64_t)1 << (qP / 6 - 6));
            else
                d[i][j] = floor_shift(c[i][j] * ls + ((int64_t)1 << (5 - qP / 6)), 6 - qP / 6);
        }
    /* one pass: rows of `in` (pass 0) or columns (pass 1) */
    for (int pass = 0; pass < 2; pass++) {
        for (int a = 0; a < 8; a++) {
            int64_t x[8], y[8];
            for (int k = 0; k < 8; k++)
                x[k] = pass ? t[k][a] : d[a][k];
            const int64_t e0 = x[0] + x[4];
            const int64_t e1 = -x[3] + x[5] - x[7] - floor_shift(x[7], 1);
            const int64_t e2 = x[0] - x[4];
            const int64_t e3 = x[1] + x[7] - x[3] - floor_shift(x[3], 1);
            const int64_t e4 = floor_shift(x[2], 1) - x[6];
            const int64_t e5 = -x[1] + x[7] + x[5] + floor_shift(x[5], 1);
            const int64_t e6 = x[2] + floor_shift(x[6], 1);
            const int64_t e7 = x[3] + x[5] + x[1] + floor_shift(x[1], 1);
            const int64_t f0 = e0 + e6, f1 = e1 + floor_shift(e7, 2), f2 = e2 + e4;
            const int64_t f3 = e3 + floor_shift(e5, 2), f4 = e2 - e4;
            const int64_t f5 = floor_shift(e3, 2) - e5, f6 = e0 - e6;
            const int64_t f7 = e7 - floor_shift(e1, 2);
            y[0] = f0 + f7;
            y[1] = f2 + f5;
            y[2] = f4 + f3;
            y[3] = f6 + f1;
            y[4] = f6 - f1;
            y[5] = f4 - f3;
            y[6] = f2 - f5;
            y[7] = f0 - f7;
            for (int k = 0; k < 8; k++) {
                if (pass)
                    o[k][a] = y[k];
                else
                    t[a][k] = y[k];
            }
        }
    }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            r[i][j] = floor_shift(o[i][j] + 32, 6);
}

/* 8.5.10 (luma DC) with matrix products, then the scaling of the same clause. */
static void spec_luma_dc(int64_t dcY[16], const int c[16], int qP, int w00) {
    static const int A[4][4] = {{1, 1, 1, 1}, {1, 1, -1, -1}, {1, -1, -1, 1}, {1, -1, 1, -1}};
    int64_t f[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int64_t s = 0;
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 4; l++)
                    s += A[i][k] * (int64_t)c[k * 4 + l] * A[l][j];
            f[i][j] = s;
        }
    const int64_t ls = (int64_t)w00 * norm_adjust4(qP % 6, 0, 0);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            dcY[i * 4 + j] =
                qP >= 36 ? (f[i][j] * ls) * ((int64_t)1 << (qP / 6 - 6))
                         : floor_shift(f[i][j] * ls + ((int64_t)1 << (5 - qP / 6)), 6 - qP / 6);
}

/* 8.5.11 (chroma DC); rows = 2 (4:2:0) or 4 (4:2:2). */
static void spec_chroma_dc(int64_t dcC[8], const int *c, int rows, int qP, int w00) {
    static const int A[4][4] = {{1, 1, 1, 1}, {1, 1, -1, -1}, {1, -1, -1, 1}, {1, -1, 1, -1}};
    static const int A2[2][2] = {{1, 1}, {1, -1}};
    int64_t f[4][2];
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < 2; j++) {
            int64_t s = 0;
            for (int k = 0; k < rows; k++)
                for (int l = 0; l < 2; l++)
                    s += (rows == 2 ? A2[i][k] : A[i][k]) * (int64_t)c[k * 2 + l] * A2[l][j];
            f[i][j] = s;
        }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < 2; j++) {
            int64_t v;
            if (rows == 2) {
                const int64_t ls = (int64_t)w00 * norm_adjust4(qP % 6, 0, 0);
                v = floor_shift((f[i][j] * ls) * ((int64_t)1 << (qP / 6)), 5);
            } else {
                const int qPdc = qP + 3;
                const int64_t ls = (int64_t)w00 * norm_adjust4(qPdc % 6, 0, 0);
                v = qPdc >= 36 ? (f[i][j] * ls) * ((int64_t)1 << (qPdc / 6 - 6))
                               : floor_shift(f[i][j] * ls + ((int64_t)1 << (5 - qPdc / 6)),
                                             6 - qPdc / 6);
            }
            dcC[i * 2 + j] = v;
        }
}

/* ---- helpers ---------------------------------------------------------------------------- */

static VidkContext *open_backend(VidkBackend b, int threads) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = b;
    s.n_threads = threads;
    VidkContext *ctx = NULL;
    return vidk_open(&ctx, &s) < 0 ? NULL : ctx;
}

static void params(VidkH264BlockParams *p, VidkH264BlockType t, int qp, int bd,
                   const uint8_t *scaling) {
    vidk_h264_default_block_params(p);
    p->type = t;
    p->qp = qp;
    p->bitdepth = bd;
    p->scaling = scaling;
}

/* ---- conformance against the transcription --------------------------------------------- */

static void test_inverse_vs_spec(VidkContext *c) {
    uint8_t ws4[16], ws8[64];
    int16_t in[64];
    int32_t out[64];
    for (int bd = 8; bd <= 14; bd += 2)
        for (int qP = 0; qP <= 51 + 6 * (bd - 8); qP++)
            for (int custom = 0; custom < 2; custom++)
                for (int rep = 0; rep < 6; rep++) {
                    for (int k = 0; k < 16; k++)
                        ws4[k] = (uint8_t)rnd(1, 255);
                    for (int k = 0; k < 64; k++)
                        ws8[k] = (uint8_t)rnd(1, 255);
                    /* Levels small enough that nothing leaves 32 bits at this qP. */
                    const int lim = qP >= 60 ? 1 : qP >= 40 ? 8 : 200;
                    VidkH264BlockParams p;
                    int cm[8][8], cm4[4][4];
                    int64_t r4[4][4], r8[8][8];
                    params(&p, VIDK_H264_BLOCK_4x4, qP, bd, custom ? ws4 : NULL);
                    for (int k = 0; k < 16; k++) {
                        in[k] = (int16_t)(rnd(0, 2) ? 0 : rnd(-lim, lim));
                        cm4[k / 4][k % 4] = in[k];
                    }
                    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
                    spec_inverse4(r4, (const int(*)[4])cm4, qP, p.scaling);
                    for (int k = 0; k < 16; k++)
                        CHECK(out[k] == r4[k / 4][k % 4]);
                    params(&p, VIDK_H264_BLOCK_8x8, qP, bd, custom ? ws8 : NULL);
                    for (int k = 0; k < 64; k++) {
                        in[k] = (int16_t)(rnd(0, 3) ? 0 : rnd(-lim, lim));
                        cm[k / 8][k % 8] = in[k];
                    }
                    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
                    spec_inverse8(r8, (const int(*)[8])cm, qP, p.scaling);
                    for (int k = 0; k < 64; k++)
                        CHECK(out[k] == r8[k / 8][k % 8]);

                    /* DC transforms. */
                    int dc[16];
                    int64_t ref[16];
                    params(&p, VIDK_H264_BLOCK_DC_LUMA, qP, bd, custom ? ws4 : NULL);
                    for (int k = 0; k < 16; k++)
                        in[k] = (int16_t)(dc[k] = rnd(-lim, lim));
                    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
                    spec_luma_dc(ref, dc, qP, custom ? ws4[0] : 16);
                    for (int k = 0; k < 16; k++)
                        CHECK(out[k] == ref[k]);
                    params(&p, VIDK_H264_BLOCK_DC_CHROMA, qP, bd, custom ? ws4 : NULL);
                    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
                    spec_chroma_dc(ref, dc, 2, qP, custom ? ws4[0] : 16);
                    for (int k = 0; k < 4; k++)
                        CHECK(out[k] == ref[k]);
                    params(&p, VIDK_H264_BLOCK_DC_CHROMA422, qP, bd, custom ? ws4 : NULL);
                    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
                    spec_chroma_dc(ref, dc, 4, qP, custom ? ws4[0] : 16);
                    for (int k = 0; k < 8; k++)
                        CHECK(out[k] == ref[k]);
                }
}

/* Values worked out by hand from the formulas (comments show the arithmetic). */
static void test_hand_values(VidkContext *c) {
    VidkH264BlockParams p;
    int16_t in[64] = {0};
    int32_t out[64];
    /* 4x4, c00 = 1, qP 28: LevelScale = 16 * 16 = 256, d00 = 256 << 0; every h = 256,
     * r = (256 + 32) >> 6 = 4. */
    params(&p, VIDK_H264_BLOCK_4x4, 28, 8, NULL);
    in[0] = 1;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int k = 0; k < 16; k++)
        CHECK_EQ_U(out[k], 4);
    /* 4x4, c01 = 1 (row 0, column 1), qP 28: d01 = 16 * 20 = 320; row 0: e = (0, 0, 160,
     * 320), f = (320, 160, -160, -320); each column is constant: r = (f + 32) >> 6 =
     * (5, 3, -2, -5) on every row. */
    memset(in, 0, sizeof(in));
    in[1] = 1;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int y = 0; y < 4; y++) {
        CHECK(out[4 * y + 0] == 5);
        CHECK(out[4 * y + 1] == 3);
        CHECK(out[4 * y + 2] == -2);
        CHECK(out[4 * y + 3] == -5);
    }
    /* 4x4, qP 0 (right-shift branch): c00 = 3, d00 = (3 * 160 + 8) >> 4 = 30, r = 1. */
    params(&p, VIDK_H264_BLOCK_4x4, 0, 8, NULL);
    memset(in, 0, sizeof(in));
    in[0] = 3;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int k = 0; k < 16; k++)
        CHECK(out[k] == 0); /* (30 + 32) >> 6 = 0 */
    in[0] = 7;              /* d00 = (7 * 160 + 8) >> 4 = 70, r = (70 + 32) >> 6 = 1 */
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int k = 0; k < 16; k++)
        CHECK(out[k] == 1);
    /* 8x8, c00 = 1, qP 36: LevelScale8x8 = 16 * 20 = 320, d00 = 320, all outputs
     * (320 + 32) >> 6 = 5. */
    params(&p, VIDK_H264_BLOCK_8x8, 36, 8, NULL);
    memset(in, 0, sizeof(in));
    in[0] = 1;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int k = 0; k < 64; k++)
        CHECK(out[k] == 5);
    /* Luma DC, c00 = 1, qP 36: f = all ones, dcY = (1 * 160) << 0 = 160. */
    params(&p, VIDK_H264_BLOCK_DC_LUMA, 36, 8, NULL);
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int k = 0; k < 16; k++)
        CHECK(out[k] == 160);
    /* Chroma DC 4:2:0, c00 = 4, qP 0: f = 4, dcC = ((4 * 160) << 0) >> 5 = 20. */
    params(&p, VIDK_H264_BLOCK_DC_CHROMA, 0, 8, NULL);
    in[0] = 4;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int k = 0; k < 4; k++)
        CHECK(out[k] == 20);
    /* Chroma DC 4:2:2, c00 = 1, qP 0: qP,DC = 3, LevelScale = 16 * 14 = 224, f = 1,
     * dcC = (224 + 32) >> 6 = 4. */
    params(&p, VIDK_H264_BLOCK_DC_CHROMA422, 0, 8, NULL);
    in[0] = 1;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    for (int k = 0; k < 8; k++)
        CHECK(out[k] == 4);
    /* Forward 4x4, residual all 7 at QP 28: W00 = 112, MF = 8192, qbits 19;
     * intra: (112 * 8192 + 174762) >> 19 = 2; inter: (917504 + 87381) >> 19 = 1. */
    params(&p, VIDK_H264_BLOCK_4x4, 28, 8, NULL);
    int16_t res[16], lev[16];
    size_t nnz = 99;
    for (int k = 0; k < 16; k++)
        res[k] = 7;
    CHECK(vidk_h264_forward_blocks(c, &p, res, lev, 1, &nnz) == 0);
    CHECK(lev[0] == 2 && nnz == 1);
    for (int k = 1; k < 16; k++)
        CHECK(lev[k] == 0);
    p.intra = 0;
    CHECK(vidk_h264_forward_blocks(c, &p, res, lev, 1, &nnz) == 0);
    CHECK(lev[0] == 1 && nnz == 1);
    /* Negative: residual all -7 gives -2 (intra), sign-magnitude rounding. */
    p.intra = 1;
    for (int k = 0; k < 16; k++)
        res[k] = -7;
    CHECK(vidk_h264_forward_blocks(c, &p, res, lev, 1, &nnz) == 0);
    CHECK(lev[0] == -2);
    /* Saturation: a DC of 16 * 32767 at QP 0 quantises far beyond 32767. */
    params(&p, VIDK_H264_BLOCK_4x4, 0, 8, NULL);
    for (int k = 0; k < 16; k++)
        res[k] = 32767;
    CHECK(vidk_h264_forward_blocks(c, &p, res, lev, 1, &nnz) == 0);
    CHECK(lev[0] == 32767);
    /* Chroma QP mapping (Table 8-15). */
    CHECK(vidk_h264_chroma_qp(29, 0, 8) == 29);
    CHECK(vidk_h264_chroma_qp(30, 0, 8) == 29);
    CHECK(vidk_h264_chroma_qp(34, 0, 8) == 32);
    CHECK(vidk_h264_chroma_qp(51, 0, 8) == 39);
    CHECK(vidk_h264_chroma_qp(45, 12, 8) == 39);
    CHECK(vidk_h264_chroma_qp(-12, 0, 10) == 0);
    CHECK(vidk_h264_chroma_qp(51, 0, 10) == 51);
    CHECK(vidk_h264_chroma_qp(-13, 0, 10) == VIDK_ERR(EINVAL));
    CHECK(vidk_h264_chroma_qp(52, 0, 8) == VIDK_ERR(EINVAL));
    CHECK(vidk_h264_chroma_qp(20, 13, 8) == VIDK_ERR(EINVAL));
    CHECK(vidk_h264_chroma_qp(20, 0, 15) == VIDK_ERR(EINVAL));
}

/* Forward transforms against their matrix definitions. The 4x4 core transform has no
 * rounding: W = Cf X Cf^T exactly. The 8x8 butterflies round with floor shifts; on
 * residuals that are multiples of 64 every shift is exact, so they equal M X M^T / 64. */
static void test_forward_vs_matrix(VidkContext *c) {
    static const int Cf[4][4] = {{1, 1, 1, 1}, {2, 1, -1, -2}, {1, -1, -1, 1}, {1, -2, 2, -1}};
    static const int M[8][8] = {{8, 8, 8, 8, 8, 8, 8, 8},     {12, 10, 6, 3, -3, -6, -10, -12},
                                {8, 4, -4, -8, -8, -4, 4, 8}, {10, -3, -12, -6, 6, 12, 3, -10},
                                {8, -8, -8, 8, 8, -8, -8, 8}, {6, -12, 3, 10, -10, -3, 12, -6},
                                {4, -8, 8, -4, -4, 8, -8, 4}, {3, -6, 10, -12, 12, -10, 6, -3}};
    VidkH264BlockParams p;
    int16_t res[64], lev[64];
    for (int rep = 0; rep < 2000; rep++) {
        const int qp = rnd(0, 51);
        /* Every level must be the quantiser formula applied to the matrix product. */
        params(&p, VIDK_H264_BLOCK_4x4, qp, 8, NULL);
        int64_t W[4][4];
        for (int k = 0; k < 16; k++)
            res[k] = (int16_t)rnd(-255, 255);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                int64_t s = 0;
                for (int k = 0; k < 4; k++)
                    for (int l = 0; l < 4; l++)
                        s += Cf[i][k] * (int64_t)res[k * 4 + l] * Cf[j][l];
                W[i][j] = s;
            }
        size_t nnz;
        CHECK(vidk_h264_forward_blocks(c, &p, res, lev, 1, &nnz) == 0);
        static const int mf4[6][3] = {{13107, 5243, 8066}, {11916, 4660, 7490},
                                      {10082, 4194, 6554}, {9362, 3647, 5825},
                                      {8192, 3355, 5243},  {7282, 2893, 4559}};
        size_t nz = 0;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                const int cls = (i % 2 == 0 && j % 2 == 0) ? 0 : (i % 2 && j % 2) ? 1 : 2;
                const int qbits = 15 + qp / 6;
                const int64_t a = W[i][j] < 0 ? -W[i][j] : W[i][j];
                int64_t l = (a * mf4[qp % 6][cls] + ((int64_t)1 << qbits) / 3) >> qbits;
                if (W[i][j] < 0) l = -l;
                CHECK(lev[i * 4 + j] == l);
                nz += l != 0;
            }
        CHECK(nnz == nz);
        /* 8x8 at QP 0 .. 5 against M X M^T / 64 on multiples of 64. */
        params(&p, VIDK_H264_BLOCK_8x8, 0, 8, NULL);
        for (int k = 0; k < 64; k++)
            res[k] = (int16_t)(64 * rnd(-60, 60));
        CHECK(vidk_h264_forward_blocks(c, &p, res, lev, 1, NULL) == 0);
        static const int mf8_0[6] = {13107, 11428, 20972, 12222, 16777, 15481};
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++) {
                int64_t s = 0;
                for (int k = 0; k < 8; k++)
                    for (int l = 0; l < 8; l++)
                        s += M[i][k] * (int64_t)res[k * 8 + l] * M[j][l];
                CHECK(s % 64 == 0);
                s /= 64;
                int cls;
                if (i % 4 == 0 && j % 4 == 0)
                    cls = 0;
                else if (i % 2 == 1 && j % 2 == 1)
                    cls = 1;
                else if (i % 4 == 2 && j % 4 == 2)
                    cls = 2;
                else if ((i % 4 == 0 && j % 2 == 1) || (i % 2 == 1 && j % 4 == 0))
                    cls = 3;
                else if ((i % 4 == 0 && j % 4 == 2) || (i % 4 == 2 && j % 4 == 0))
                    cls = 4;
                else
                    cls = 5;
                const int64_t a = s < 0 ? -s : s;
                int64_t l = (a * mf8_0[cls] + ((int64_t)1 << 16) / 3) >> 16;
                if (l > 32767) l = 32767;
                CHECK(lev[i * 8 + j] == (s < 0 ? -l : l));
            }
    }
}

/* Forward then inverse reproduces the residual: the error of each coefficient is below
 * one quantiser step (Qstep = 0.625 * 2^(QP/6) at QP % 6 == 0, up to 1.125x between),
 * and the inverse transform spreads it with gain <= 1 per sample in the mean. We
 * check the RMS error against Qstep and the peak against a loose bound. */
static void test_round_trip(VidkContext *c) {
    VidkH264BlockParams p;
    enum { N = 400 };
    int16_t *res = malloc(N * 64 * 2), *lev = malloc(N * 64 * 2);
    int32_t *back = malloc(N * 64 * 4);
    for (int sz = 0; sz < 2; sz++)
        for (int qp = 0; qp <= 10; qp++)
            for (int intra = 0; intra < 2; intra++) {
                const int nv = sz ? 64 : 16;
                params(&p, sz ? VIDK_H264_BLOCK_8x8 : VIDK_H264_BLOCK_4x4, qp, 8, NULL);
                p.intra = intra;
                for (int k = 0; k < N * nv; k++)
                    res[k] = (int16_t)rnd(-255, 255);
                CHECK(vidk_h264_forward_blocks(c, &p, res, lev, N, NULL) == 0);
                CHECK(vidk_h264_inverse_blocks(c, &p, lev, back, N) == 0);
                double se = 0;
                int peak = 0;
                for (int k = 0; k < N * nv; k++) {
                    const int e = back[k] - res[k];
                    se += (double)e * e;
                    peak = abs(e) > peak ? abs(e) : peak;
                }
                const double qstep = 0.625 * (double)(1 << (qp / 6)) * (1.0 + 0.125 * (qp % 6));
                const double rms = sqrt(se / (N * nv));
                if (!(rms <= 0.6 * qstep + 0.5) || peak > (int)(4 * qstep) + 2) {
                    fprintf(stderr, "round trip %dx%d qp %d intra %d: rms %.3f peak %d\n",
                            sz ? 8 : 4, sz ? 8 : 4, qp, intra, rms, peak);
                    CHECK(0);
                }
            }
    free(res);
    free(lev);
    free(back);
}

/* A block whose only non-zero level is c00 gives a flat residual, at every qP. */
static void test_dc_only_flat(VidkContext *c) {
    VidkH264BlockParams p;
    int16_t in[64];
    int32_t out[64];
    for (int sz = 0; sz < 2; sz++)
        for (int qp = 0; qp <= 87; qp++) {
            params(&p, sz ? VIDK_H264_BLOCK_8x8 : VIDK_H264_BLOCK_4x4, qp, 14, NULL);
            memset(in, 0, sizeof(in));
            in[0] = (int16_t)rnd(-40, 40);
            CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
            for (int k = 1; k < (sz ? 64 : 16); k++)
                CHECK(out[k] == out[0]);
        }
}

/* ---- frames ------------------------------------------------------------------------------ */

/* Read frame `index` of an 8-bit 4:2:0 Y4M file into a picture of size w x h (the clip is
 * cropped or edge-extended to it). Returns 0 on success. */
static int read_y4m(const char *path, int index, VidkPicture *pic) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char line[256];
    int w = 0, h = 0, ok = fgets(line, sizeof(line), f) && !strncmp(line, "YUV4MPEG2 ", 10);
    for (char *t = ok ? strtok(line, " \n") : NULL; t; t = strtok(NULL, " \n")) {
        if (t[0] == 'W') w = atoi(t + 1);
        if (t[0] == 'H') h = atoi(t + 1);
        if (t[0] == 'C' && strncmp(t, "C420", 4)) ok = 0;
    }
    const size_t fsize = (size_t)w * h * 3 / 2;
    uint8_t *buf = ok && w > 0 && h > 0 ? malloc(fsize) : NULL;
    for (int i = 0; buf && i <= index; i++) {
        if (!fgets(line, sizeof(line), f) || strncmp(line, "FRAME", 5) ||
            fread(buf, 1, fsize, f) != fsize) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    if (!buf) return -1;
    for (int p = 0; p < 3; p++) {
        int pw, ph;
        vidk_picture_plane_size(pic, p, &pw, &ph);
        const int sw = p ? w / 2 : w, sh = p ? h / 2 : h;
        const uint8_t *src = buf + (p ? (size_t)w * h + (size_t)(p - 1) * sw * sh : 0);
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                /* 4:2:2 pictures take each chroma row twice */
                const int sy = pic->chroma == VIDK_CHROMA_422 && p ? y / 2 : y;
                ((uint8_t *)pic->data[p])[y * pic->stride[p] + x] =
                    src[TCLIP(sy, 0, sh - 1) * sw + TCLIP(x, 0, sw - 1)];
            }
    }
    free(buf);
    return 0;
}

static void synth_picture(VidkPicture *pic, int phase) {
    const int np = pic->chroma == VIDK_CHROMA_400 ? 1 : 3;
    for (int p = 0; p < np; p++) {
        int pw, ph;
        vidk_picture_plane_size(pic, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++)
                ((uint8_t *)pic->data[p])[y * pic->stride[p] + x] = (uint8_t)TCLIP(
                    128 + ((x * 3 + y * 5 + phase) % 97) - 48 + rnd(-6, 6), 0, 255);
    }
}

static void copy_picture(VidkPicture *dst, const VidkPicture *src) {
    const int np = src->chroma == VIDK_CHROMA_400 ? 1 : 3;
    for (int p = 0; p < np; p++) {
        int pw, ph;
        vidk_picture_plane_size(src, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            memcpy((uint8_t *)dst->data[p] + y * dst->stride[p],
                   (const uint8_t *)src->data[p] + y * src->stride[p], (size_t)pw);
    }
}

static int same_picture(const VidkPicture *a, const VidkPicture *b) {
    const int np = a->chroma == VIDK_CHROMA_400 ? 1 : 3;
    for (int p = 0; p < np; p++) {
        int pw, ph;
        vidk_picture_plane_size(a, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            if (memcmp((const uint8_t *)a->data[p] + y * a->stride[p],
                       (const uint8_t *)b->data[p] + y * b->stride[p], (size_t)pw))
                return 0;
    }
    return 1;
}

static double psnr_luma(const VidkPicture *a, const VidkPicture *b) {
    double se = 0;
    for (int y = 0; y < a->h; y++)
        for (int x = 0; x < a->w; x++) {
            const int d = ((const uint8_t *)a->data[0])[y * a->stride[0] + x] -
                          ((const uint8_t *)b->data[0])[y * b->stride[0] + x];
            se += d * d;
        }
    return se == 0 ? 99.0 : 10.0 * log10(255.0 * 255.0 * a->w * a->h / se);
}

static int same_levels(const VidkH264CoefFrame *a, const VidkH264CoefFrame *b) {
    const int np = a->chroma == VIDK_CHROMA_400 ? 1 : 3;
    for (int p = 0; p < np; p++)
        if (memcmp(a->coef[p], b->coef[p], (size_t)a->plane_w[p] * a->plane_h[p] * 2)) return 0;
    return !memcmp(a->mb, b->mb, (size_t)a->mb_w * a->mb_h * sizeof(*a->mb)) &&
           !memcmp(&a->scaling, &b->scaling, sizeof(a->scaling));
}

/* Encode a frame (random macroblock types and QPs), decode it on every CPU backend both
 * ways, and check quality, identities, the sparse packing and the file format. */
static void test_frame(VidkContext *const *ctxs, int nctx, VidkChroma chroma, int custom) {
    int w = 416, h = 240;
    VidkPicture src, pred, rec, rec2;
    char path[512];
    /* High motion: frame 8 predicts frame 11 badly, so the residual is rich. */
    snprintf(path, sizeof(path), "%s/basketballpass_416x240_50fps_100f.y4m",
             VIDK_SHARED_VIDEO_DIR);
    CHECK(vidk_picture_alloc(&src, w, h, chroma, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&pred, w, h, chroma, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&rec, w, h, chroma, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&rec2, w, h, chroma, 8, 0) == 0);
    const int real =
        chroma != VIDK_CHROMA_400 && !read_y4m(path, 11, &src) && !read_y4m(path, 8, &pred);
    if (!real) {
        /* 4:0:0 always takes the synthetic picture (the clip has chroma); a missing clip
         * is a skipped part, not a quiet swap to the synthetic picture's lower floor. */
        if (chroma != VIDK_CHROMA_400)
            test_video_missing("real clip missing: frame test ran on the synthetic picture");
        synth_picture(&src, 0);
        synth_picture(&pred, 7);
    }
    VidkH264CoefFrame fr, fr2, back;
    CHECK(vidk_h264_coef_frame_alloc(&fr, w, h, chroma, 8) == 0);
    CHECK(vidk_h264_coef_frame_alloc(&fr2, w, h, chroma, 8) == 0);
    CHECK(vidk_h264_coef_frame_alloc(&back, w, h, chroma, 8) == 0);
    if (custom)
        for (int l = 0; l < 6; l++) {
            for (int k = 0; k < 16; k++)
                fr.scaling.m4[l][k] = (uint8_t)rnd(6, 40);
            for (int k = 0; k < 64; k++)
                fr.scaling.m8[l][k] = (uint8_t)rnd(6, 40);
        }
    for (int i = 0; i < fr.mb_w * fr.mb_h; i++) {
        VidkH264MbInfo *m = &fr.mb[i];
        const int qp = rnd(16, 30);
        m->flags = (uint8_t)rnd(0, 1) * VIDK_H264_MB_INTRA;
        if (rnd(0, 2) == 0)
            m->flags |= VIDK_H264_MB_8x8;
        else if ((m->flags & VIDK_H264_MB_INTRA) && rnd(0, 1))
            m->flags |= VIDK_H264_MB_I16x16;
        m->qp[0] = (uint8_t)qp;
        if (chroma != VIDK_CHROMA_400)
            m->qp[1] = m->qp[2] = (uint8_t)vidk_h264_chroma_qp(qp, 2, 8);
    }
    fr2.scaling = fr.scaling;
    memcpy(fr2.mb, fr.mb, (size_t)fr.mb_w * fr.mb_h * sizeof(*fr.mb));
    /* Intra macroblocks get a flat prediction (a crude DC predictor): large residuals. */
    for (int my = 0; my < fr.mb_h; my++)
        for (int mx = 0; mx < fr.mb_w; mx++) {
            if (!(fr.mb[my * fr.mb_w + mx].flags & VIDK_H264_MB_INTRA)) continue;
            for (int p = 0; p < (chroma == VIDK_CHROMA_400 ? 1 : 3); p++) {
                const int mw = p ? 8 : 16, mh = p ? (chroma == VIDK_CHROMA_422 ? 16 : 8) : 16;
                for (int y = 0; y < mh; y++)
                    memset((uint8_t *)pred.data[p] + (my * mh + y) * pred.stride[p] + mx * mw,
                           128, (size_t)mw);
            }
        }

    VidkH264Batch b, b2;
    vidk_h264_batch_init(&b);
    vidk_h264_batch_init(&b2);
    const int nnz = vidk_h264_batch_forward(ctxs[0], &src, &pred, &fr, &b);
    CHECK(nnz > 0);
    copy_picture(&rec, &pred);
    CHECK(vidk_h264_batch_inverse(ctxs[0], &b, &rec) == 0);
    const double q = psnr_luma(&rec, &src);
    /* QP 16..30: ~40 dB on the clip; the synthetic picture carries +-6 of white noise. */
    if (getenv("VIDK_TEST_VERBOSE"))
        fprintf(stderr, "frame %s chroma %d custom %d: PSNR %.2f dB, %d levels\n",
                real ? "real" : "synthetic", chroma, custom, q, nnz);
    if (q < (real ? (custom ? 34.0 : 37.0) : 30.0)) {
        fprintf(stderr, "frame %s chroma %d custom %d: PSNR %.2f dB\n",
                real ? "real" : "synthetic", chroma, custom, q);
        CHECK(0);
    }
    /* The dense path gives the same picture. */
    copy_picture(&rec2, &pred);
    CHECK(vidk_h264_frame_inverse(ctxs[0], &fr, &rec2) == 0);
    CHECK(same_picture(&rec, &rec2));
    /* Every other backend: same levels, same batch, same picture. */
    for (int k = 1; k < nctx; k++) {
        CHECK(vidk_h264_batch_forward(ctxs[k], &src, &pred, &fr2, &b2) == nnz);
        CHECK(same_levels(&fr, &fr2));
        CHECK(b2.list[0].count == b.list[0].count && b2.list[1].count == b.list[1].count &&
              b2.dc.count == b.dc.count);
        copy_picture(&rec2, &pred);
        CHECK(vidk_h264_batch_inverse(ctxs[k], &b2, &rec2) == 0);
        CHECK(same_picture(&rec, &rec2));
        copy_picture(&rec2, &pred);
        CHECK(vidk_h264_frame_inverse(ctxs[k], &fr2, &rec2) == 0);
        CHECK(same_picture(&rec, &rec2));
    }
    /* Scatter is the inverse of build for the levels. */
    back.scaling = fr.scaling;
    memcpy(back.mb, fr.mb, (size_t)fr.mb_w * fr.mb_h * sizeof(*fr.mb));
    CHECK(vidk_h264_batch_scatter(&b, &back) == 0);
    CHECK(same_levels(&fr, &back));
    /* Sparse round trip and byte counts. */
    VidkH264Sparse sp;
    memset(&sp, 0, sizeof(sp));
    CHECK(vidk_h264_sparse_pack(&sp, &b) == 0);
    VidkH264Bytes by;
    CHECK(vidk_h264_bytes(&fr, &b, &by) == 0);
    CHECK(sp.n_values == by.nonzero && (int)by.nonzero == nnz);
    CHECK(by.blocks[0] == b.list[0].count && by.blocks[1] == b.list[1].count);
    const size_t nb = by.blocks[0] + by.blocks[1];
    CHECK(by.compacted == nb * 11 + by.dc_groups * 7 + by.blocks[0] * 32 + by.blocks[1] * 128 +
                              by.dc_groups * 32);
    CHECK(by.sparse == nb * 11 + by.dc_groups * 7 + by.blocks[0] * 6 + by.blocks[1] * 12 +
                           by.dc_groups * 6 + by.nonzero * 2);
    size_t dense = (size_t)fr.mb_w * fr.mb_h * 4;
    for (int p = 0; p < (chroma == VIDK_CHROMA_400 ? 1 : 3); p++)
        dense += (size_t)fr.plane_w[p] * fr.plane_h[p] * 2;
    CHECK(by.dense == dense);
    if (real) CHECK(by.sparse < by.compacted && by.compacted < by.dense);
    for (int s = 0; s < 2; s++)
        CHECK(by.blocks[s] <= by.blocks_total[s]);
    memset(b.list[0].coef, 0x55, (size_t)b.list[0].count * 32);
    CHECK(vidk_h264_sparse_unpack(&sp, &b) == 0);
    CHECK(vidk_h264_batch_scatter(&b, &back) == 0);
    CHECK(same_levels(&fr, &back));
    if (sp.count[0]) {
        sp.mask4[0] ^= 0x8000; /* inconsistent with the offsets */
        CHECK(vidk_h264_sparse_unpack(&sp, &b) == VIDK_ERR(EINVAL));
    }
    vidk_h264_sparse_free(&sp);

    /* File round trip: two records, then end of file. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK(coeffile_write(f, &fr) == 0);
        CHECK(coeffile_write(f, &fr) == 0);
        const long len = ftell(f);
        rewind(f);
        VidkH264CoefFrame rd;
        memset(&rd, 0, sizeof(rd));
        CHECK(coeffile_read(f, &rd) == 1);
        CHECK(same_levels(&fr, &rd));
        CHECK(coeffile_read(f, &rd) == 1);
        CHECK(same_levels(&fr, &rd));
        CHECK(coeffile_read(f, &rd) == 0);
        /* Corruptions: every one must be rejected. */
        uint8_t *bytes = malloc((size_t)len);
        rewind(f);
        CHECK(fread(bytes, 1, (size_t)len, f) == (size_t)len);
        const long rec_len = len / 2;
        const long spots[] = {0,  9,  12, 16, 17, 18,           21,
                              24, 28, 40, 64, 70, rec_len - 10, rec_len - 1};
        for (size_t s = 0; s < sizeof(spots) / sizeof(spots[0]); s++) {
            FILE *g = tmpfile();
            bytes[spots[s]] ^= 0x21;
            fwrite(bytes, 1, (size_t)rec_len, g);
            bytes[spots[s]] ^= 0x21;
            rewind(g);
            const int r = coeffile_read(g, &rd);
            if (r != VIDK_ERR(EINVAL)) {
                fprintf(stderr, "corrupt byte %ld: read returned %d\n", spots[s], r);
                CHECK(0);
            }
            CHECK(rd.alloc == NULL);
            fclose(g);
        }
        for (long cut = 1; cut < rec_len; cut += rec_len / 7 + 1) { /* truncated records */
            FILE *g = tmpfile();
            fwrite(bytes, 1, (size_t)cut, g);
            rewind(g);
            CHECK(coeffile_read(g, &rd) == VIDK_ERR(EINVAL));
            fclose(g);
        }
        free(bytes);
        vidk_h264_coef_frame_free(&rd);
        fclose(f);
    }
    vidk_h264_batch_free(&b);
    vidk_h264_batch_free(&b2);
    vidk_h264_coef_frame_free(&fr);
    vidk_h264_coef_frame_free(&fr2);
    vidk_h264_coef_frame_free(&back);
    vidk_picture_free(&src);
    vidk_picture_free(&pred);
    vidk_picture_free(&rec);
    vidk_picture_free(&rec2);
}

/* A hand-made batch whose blocks overlap: applied in list order on every backend. */
static void test_overlap(VidkContext *const *ctxs, int nctx) {
    VidkH264CoefFrame fr;
    VidkH264Batch b;
    VidkPicture ref, pic;
    CHECK(vidk_h264_coef_frame_alloc(&fr, 64, 64, VIDK_CHROMA_420, 8) == 0);
    for (int i = 0; i < 16; i++)
        fr.coef[0][i * 4 * 64 + (i % 4) * 4] = 1; /* 16 blocks */
    vidk_h264_batch_init(&b);
    CHECK(vidk_h264_batch_build(ctxs[0], &b, &fr) == 0);
    CHECK(b.list[0].count == 16);
    CHECK(vidk_picture_alloc(&ref, 64, 64, VIDK_CHROMA_420, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&pic, 64, 64, VIDK_CHROMA_420, 8, 0) == 0);
    /* Point the lists at our own arrays: 6000 4x4 and 700 8x8 blocks on few positions. */
    const VidkH264Batch saved = b;
    static uint16_t xs[2][6000], ys[2][6000];
    static uint8_t pl[2][6000], qs[2][6000], fl[2][6000];
    static uint32_t dci[2][6000];
    static int16_t co4[6000 * 16] __attribute__((aligned(64))),
        co8[700 * 64] __attribute__((aligned(64)));
    for (int s = 0; s < 2; s++) {
        const uint32_t n = s ? 700 : 6000, nv = s ? 64 : 16;
        VidkH264BlockList *l = &b.list[s];
        l->x = xs[s], l->y = ys[s], l->plane = pl[s], l->qp = qs[s], l->flags = fl[s];
        l->dc_index = dci[s], l->coef = s ? co8 : co4;
        l->count = l->capacity = n;
        for (uint32_t i = 0; i < n; i++) {
            const int g = s ? 8 : 4;
            l->x[i] = (uint16_t)(g * rnd(0, 64 / g - 1)),
            l->y[i] = (uint16_t)(g * rnd(0, 64 / g - 1));
            l->plane[i] = 0, l->qp[i] = (uint8_t)rnd(0, 51), l->flags[i] = (uint8_t)rnd(0, 1);
            l->dc_index[i] = 0;
            for (uint32_t k = 0; k < nv; k++)
                l->coef[i * nv + k] = (int16_t)(rnd(0, 3) ? 0 : rnd(-30, 30));
        }
    }
    b.dc.count = 0;
    synth_picture(&ref, 3);
    copy_picture(&pic, &ref);
    CHECK(vidk_h264_batch_inverse(ctxs[0], &b, &ref) == 0);
    for (int k = 1; k < nctx; k++) {
        VidkPicture out;
        CHECK(vidk_picture_alloc(&out, 64, 64, VIDK_CHROMA_420, 8, 0) == 0);
        copy_picture(&out, &pic);
        CHECK(vidk_h264_batch_inverse(ctxs[k], &b, &out) == 0);
        CHECK(same_picture(&out, &ref));
        vidk_picture_free(&out);
    }
    b = saved;
    vidk_h264_batch_free(&b);
    vidk_h264_coef_frame_free(&fr);
    vidk_picture_free(&ref);
    vidk_picture_free(&pic);
}

/* 8.5.14: the sum is clipped to the sample range. */
static void test_clipping(VidkContext *c) {
    VidkPicture pic;
    VidkH264CoefFrame fr;
    VidkH264Batch b;
    CHECK(vidk_picture_alloc(&pic, 16, 16, VIDK_CHROMA_400, 8, 0) == 0);
    CHECK(vidk_h264_coef_frame_alloc(&fr, 16, 16, VIDK_CHROMA_400, 8) == 0);
    vidk_h264_batch_init(&b);
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            ((uint8_t *)pic.data[0])[y * pic.stride[0] + x] = x < 8 ? 250 : 5;
    fr.mb[0].qp[0] = 28;
    fr.coef[0][0] = 10;     /* block (0, 0): +40 on 250 -> 255 */
    fr.coef[0][4] = -10;    /* block (4, 0): -40 on 250 -> 210 */
    fr.coef[0][8] = -10;    /* block (8, 0): -40 on 5 -> 0 */
    fr.coef[0][12] = 32767; /* block (12, 0): huge, still defined: 255 */
    CHECK(vidk_h264_batch_build(c, &b, &fr) == 0);
    CHECK(b.list[0].count == 4);
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == 0);
    const uint8_t *p0 = pic.data[0];
    CHECK(p0[0] == 255 && p0[3 * pic.stride[0] + 3] == 255);
    CHECK(p0[4] == 210 && p0[8] == 0 && p0[12] == 255 && p0[4 * pic.stride[0]] == 250);
    vidk_h264_batch_free(&b);
    vidk_h264_coef_frame_free(&fr);
    vidk_picture_free(&pic);
}

/* ---- argument errors --------------------------------------------------------------------- */

static void test_errors(VidkContext *c) {
    const int E = VIDK_ERR(EINVAL);
    VidkH264BlockParams p;
    int16_t in[64] = {0}, lev[64];
    int32_t out[64];
    uint8_t zero_w[64];
    memset(zero_w, 16, sizeof(zero_w));
    params(&p, VIDK_H264_BLOCK_4x4, 26, 8, NULL);
    CHECK(vidk_h264_forward_blocks(NULL, &p, in, lev, 1, NULL) == E);
    CHECK(vidk_h264_forward_blocks(c, NULL, in, lev, 1, NULL) == E);
    CHECK(vidk_h264_forward_blocks(c, &p, NULL, lev, 1, NULL) == E);
    CHECK(vidk_h264_forward_blocks(c, &p, in, NULL, 1, NULL) == E);
    CHECK(vidk_h264_forward_blocks(c, &p, NULL, NULL, 0, NULL) == 0);
    CHECK(vidk_h264_inverse_blocks(NULL, &p, in, out, 1) == E);
    CHECK(vidk_h264_inverse_blocks(c, &p, NULL, out, 1) == E);
    CHECK(vidk_h264_inverse_blocks(c, &p, in, NULL, 1) == E);
    CHECK(vidk_h264_inverse_blocks(c, &p, NULL, NULL, 0) == 0);
    const VidkH264BlockParams good = p;
    p.type = (VidkH264BlockType)5;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == E);
    p = good, p.qp = -1;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == E);
    p = good, p.qp = 52;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == E);
    p = good, p.qp = 52, p.bitdepth = 9;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == 0);
    p = good, p.qp = 88, p.bitdepth = 14;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == E);
    p = good, p.bitdepth = 7;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == E);
    p = good, p.bitdepth = 15;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == E);
    p = good, p.intra = 2;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == E);
    p = good, p.reserved[7] = 1;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == E);
    p = good, zero_w[9] = 0, p.scaling = zero_w;
    CHECK(vidk_h264_forward_blocks(c, &p, in, lev, 1, NULL) == E);
    zero_w[9] = 16, zero_w[40] = 0, p.type = VIDK_H264_BLOCK_8x8;
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == E);
    p.type = VIDK_H264_BLOCK_4x4; /* element 40 is not used by a 4x4 matrix */
    CHECK(vidk_h264_inverse_blocks(c, &p, in, out, 1) == 0);
    CHECK(vidk_h264_block_values((VidkH264BlockType)9) == 0);
    CHECK(vidk_h264_block_values(VIDK_H264_BLOCK_DC_CHROMA422) == 8);

    /* Frames. */
    VidkH264CoefFrame fr;
    CHECK(vidk_h264_coef_frame_alloc(NULL, 16, 16, VIDK_CHROMA_420, 8) == E);
    CHECK(vidk_h264_coef_frame_alloc(&fr, 24, 16, VIDK_CHROMA_420, 8) == E);
    CHECK(vidk_h264_coef_frame_alloc(&fr, 16, 0, VIDK_CHROMA_420, 8) == E);
    CHECK(vidk_h264_coef_frame_alloc(&fr, 16, 16, VIDK_CHROMA_444, 8) == E);
    CHECK(vidk_h264_coef_frame_alloc(&fr, 16, 16, VIDK_CHROMA_420, 15) == E);
    CHECK(vidk_h264_coef_frame_alloc(&fr, 16384 + 16, 16, VIDK_CHROMA_420, 8) == E);
    CHECK(vidk_h264_coef_frame_validate(NULL) == E);
    vidk_h264_coef_frame_free(NULL);
    CHECK(vidk_h264_coef_frame_alloc(&fr, 32, 32, VIDK_CHROMA_420, 8) == 0);
    CHECK(vidk_h264_coef_frame_validate(&fr) == 0);
    fr.mb[1].flags = VIDK_H264_MB_I16x16; /* I16x16 needs INTRA */
    CHECK(vidk_h264_coef_frame_validate(&fr) == E);
    fr.mb[1].flags = VIDK_H264_MB_I16x16 | VIDK_H264_MB_INTRA | VIDK_H264_MB_8x8;
    CHECK(vidk_h264_coef_frame_validate(&fr) == E);
    fr.mb[1].flags = 8;
    CHECK(vidk_h264_coef_frame_validate(&fr) == E);
    fr.mb[1].flags = VIDK_H264_MB_I16x16 | VIDK_H264_MB_INTRA;
    CHECK(vidk_h264_coef_frame_validate(&fr) == 0);
    fr.mb[2].qp[2] = 52;
    CHECK(vidk_h264_coef_frame_validate(&fr) == E);
    fr.mb[2].qp[2] = 51;
    fr.scaling.m8[5][63] = 0;
    CHECK(vidk_h264_coef_frame_validate(&fr) == E);
    fr.scaling.m8[5][63] = 1;
    CHECK(vidk_h264_coef_frame_validate(&fr) == 0);

    VidkH264Batch b;
    vidk_h264_batch_init(&b);
    CHECK(vidk_h264_batch_build(c, NULL, &fr) == E);
    CHECK(vidk_h264_batch_build(c, &b, NULL) == E);
    fr.coef[0][0] = 5;
    fr.coef[1][0] = 3;
    CHECK(vidk_h264_batch_build(c, &b, &fr) == 0);
    VidkPicture pic;
    CHECK(vidk_picture_alloc(&pic, 32, 32, VIDK_CHROMA_420, 8, 0) == 0);
    CHECK(vidk_h264_batch_inverse(NULL, &b, &pic) == E);
    CHECK(vidk_h264_batch_inverse(c, NULL, &pic) == E);
    CHECK(vidk_h264_batch_inverse(c, &b, NULL) == E);
    CHECK(vidk_h264_frame_inverse(c, NULL, &pic) == E);
    CHECK(vidk_h264_frame_inverse(c, &fr, NULL) == E);
    CHECK(vidk_h264_batch_forward(c, &pic, &pic, NULL, NULL) == E);
    CHECK(vidk_h264_batch_forward(c, NULL, &pic, &fr, NULL) == E);
    CHECK(vidk_h264_batch_forward(c, &pic, NULL, &fr, NULL) == E);
    VidkPicture other;
    CHECK(vidk_picture_alloc(&other, 32, 48, VIDK_CHROMA_420, 8, 0) == 0);
    CHECK(vidk_h264_batch_inverse(c, &b, &other) == E);
    CHECK(vidk_h264_batch_forward(c, &other, &pic, &fr, NULL) == E);
    vidk_picture_free(&other);
    CHECK(vidk_picture_alloc(&other, 32, 32, VIDK_CHROMA_422, 8, 0) == 0);
    CHECK(vidk_h264_batch_inverse(c, &b, &other) == E);
    vidk_picture_free(&other);
    CHECK(vidk_picture_alloc(&other, 32, 32, VIDK_CHROMA_420, 10, 0) == 0);
    CHECK(vidk_h264_batch_inverse(c, &b, &other) == E);
    CHECK(vidk_h264_frame_inverse(c, &fr, &other) == E);
    vidk_picture_free(&other);
    /* Malformed batches are refused before anything is touched. */
    CHECK(b.list[0].count >= 2 && b.dc.count == 1);
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == 0);
    const uint16_t x0 = b.list[0].x[0];
    b.list[0].x[0] = 30; /* not 4-aligned */
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.list[0].x[0] = 32; /* outside */
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.list[0].x[0] = x0;
    const uint32_t last = b.list[0].count - 1;
    CHECK(b.list[0].flags[last] & VIDK_H264_BLK_DC);
    b.list[0].dc_index[last] += 4; /* 4:2:0 chroma groups have 4 values */
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.list[0].dc_index[last] -= 4;
    b.list[0].plane[0] = 3;
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.list[0].plane[0] = 0;
    b.list[0].qp[0] = 52;
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.list[0].qp[0] = 26;
    b.list[0].flags[0] = 0x80;
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.list[0].flags[0] = 0;
    b.dc.type[0] = VIDK_H264_DC_LUMA; /* a chroma group must be a chroma type */
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.dc.type[0] = VIDK_H264_DC_CHROMA;
    b.list[0].count = b.list[0].capacity + 1;
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == E);
    b.list[0].count = last + 1;
    CHECK(vidk_h264_batch_inverse(c, &b, &pic) == 0);
    CHECK(vidk_h264_batch_scatter(NULL, &fr) == E);
    CHECK(vidk_h264_batch_scatter(&b, NULL) == E);
    VidkH264Bytes by;
    CHECK(vidk_h264_bytes(NULL, &b, &by) == E);
    CHECK(vidk_h264_bytes(&fr, NULL, &by) == E);
    CHECK(vidk_h264_bytes(&fr, &b, NULL) == E);
    VidkH264Sparse sp;
    memset(&sp, 0, sizeof(sp));
    CHECK(vidk_h264_sparse_pack(NULL, &b) == E);
    CHECK(vidk_h264_sparse_pack(&sp, NULL) == E);
    CHECK(vidk_h264_sparse_unpack(&sp, &b) == E); /* counts differ (empty packing) */
    CHECK(vidk_h264_sparse_pack(&sp, &b) == 0);
    CHECK(vidk_h264_sparse_unpack(NULL, &b) == E);
    CHECK(vidk_h264_sparse_unpack(&sp, NULL) == E);
    vidk_h264_sparse_free(&sp);
    vidk_h264_sparse_free(NULL);
    CHECK(coeffile_write(NULL, &fr) == E);
    CHECK(coeffile_read(NULL, &fr) == E);
    FILE *f = tmpfile();
    CHECK(coeffile_write(f, NULL) == E);
    CHECK(coeffile_read(f, NULL) == E);
    fclose(f);
    /* cuda (where a device exists): the same argument errors as c, and the same picture
     * for the valid batch. */
    VidkContext *cu = open_backend(VIDK_BACKEND_CUDA, 0);
    if (cu) {
        CHECK(vidk_h264_batch_inverse(cu, NULL, &pic) == E);
        CHECK(vidk_h264_batch_inverse(cu, &b, NULL) == E);
        CHECK(vidk_h264_frame_inverse(cu, NULL, &pic) == E);
        CHECK(vidk_h264_batch_forward(cu, &pic, &pic, NULL, NULL) == E);
        VidkPicture pc, pg;
        CHECK(vidk_picture_alloc(&pc, 32, 32, VIDK_CHROMA_420, 8, 0) == 0);
        CHECK(vidk_picture_alloc(&pg, 32, 32, VIDK_CHROMA_420, 8, 0) == 0);
        synth_picture(&pc, 3);
        copy_picture(&pg, &pc);
        CHECK(vidk_h264_batch_inverse(c, &b, &pc) == 0);
        CHECK(vidk_h264_batch_inverse(cu, &b, &pg) == 0);
        CHECK(same_picture(&pc, &pg));
        vidk_picture_free(&pc);
        vidk_picture_free(&pg);
        vidk_close(&cu);
    }
    vidk_h264_batch_free(&b);
    vidk_h264_batch_free(NULL);
    vidk_picture_free(&pic);
    vidk_h264_coef_frame_free(&fr);
}

/* ---- the command line: `vidkern xform --codec h264` against the library ------------------ */

static int run_cli(const char *exe, const char *args, const char *in, const char *out) {
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "\"%s\" xform --codec h264 %s < \"%s\" > \"%s\" 2> h264_cli_err.txt", exe, args,
             in, out);
    const int st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_le16(const char *path, const int16_t *v, size_t n, size_t extra_bytes) {
    FILE *f = fopen(path, "wb");
    for (size_t k = 0; f && k < n; k++) {
        fputc((uint16_t)v[k] & 0xff, f);
        fputc((uint16_t)v[k] >> 8, f);
    }
    for (size_t k = 0; f && k < extra_bytes; k++)
        fputc(0x11, f);
    if (f) fclose(f);
}

static long read_le16(const char *path, int16_t *v, size_t max) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = 0;
    int a, b;
    while ((size_t)n < max && (a = fgetc(f)) != EOF && (b = fgetc(f)) != EOF)
        v[n++] = (int16_t)(uint16_t)(a | b << 8);
    const int extra = fgetc(f) != EOF;
    fclose(f);
    return extra ? -2 : n;
}

static void test_cli(const char *exe, VidkContext *c) {
    enum { N = 300 };
    static int16_t in[N * 64], got[N * 64 + 1], lev[N * 64];
    static int32_t res[N * 64];
    const struct {
        const char *args;
        VidkH264BlockType type;
        int qp, bd, intra, inverse;
    } cases[] = {
        {"--size 4 --qp 20", VIDK_H264_BLOCK_4x4, 20, 8, 1, 0},
        {"--size 8 --qp 33 --inter", VIDK_H264_BLOCK_8x8, 33, 8, 0, 0},
        {"--qp 0 --inverse", VIDK_H264_BLOCK_4x4, 0, 8, 1, 1},
        {"--size 8 --qp 51 --inverse", VIDK_H264_BLOCK_8x8, 51, 8, 1, 1},
        {"--qp -12 --bitdepth 10 --size 8", VIDK_H264_BLOCK_8x8, 0, 10, 1, 0},
        {"--qp 51 --bitdepth 14 --inverse", VIDK_H264_BLOCK_4x4, 87, 14, 1, 1},
        {"--dc luma --qp 30", VIDK_H264_BLOCK_DC_LUMA, 30, 8, 1, 0},
        {"--dc chroma --qp 30 --inverse", VIDK_H264_BLOCK_DC_CHROMA, 30, 8, 1, 1},
        {"--dc chroma422 --qp 40 --inverse --backend c", VIDK_H264_BLOCK_DC_CHROMA422, 40, 8, 1,
         1},
        {"--dc chroma422 --qp 12 --inter --backend threads --threads 2",
         VIDK_H264_BLOCK_DC_CHROMA422, 12, 8, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        VidkH264BlockParams p;
        params(&p, cases[i].type, cases[i].qp, cases[i].bd, NULL);
        p.intra = cases[i].intra;
        const size_t nv = (size_t)vidk_h264_block_values(p.type);
        for (size_t k = 0; k < N * nv; k++)
            in[k] = (int16_t)(cases[i].inverse
                                  ? (rnd(0, 3) ? rnd(-9, 9) : (int)(int16_t)test_rand(&seed))
                                  : rnd(-255, 255));
        write_le16("h264_cli_in.bin", in, N * nv, 0);
        const int st = run_cli(exe, cases[i].args, "h264_cli_in.bin", "h264_cli_out.bin");
        const long n = read_le16("h264_cli_out.bin", got, N * nv + 1);
        if (st != 0 || n != (long)(N * nv)) {
            fprintf(stderr, "cli '%s': status %d, %ld values\n", cases[i].args, st, n);
            CHECK(0);
            continue;
        }
        if (cases[i].inverse) {
            CHECK(vidk_h264_inverse_blocks(c, &p, in, res, N) == 0);
            for (size_t k = 0; k < N * nv; k++)
                CHECK(got[k] == TCLIP(res[k], -32768, 32767));
        } else {
            CHECK(vidk_h264_forward_blocks(c, &p, in, lev, N, NULL) == 0);
            CHECK(!memcmp(got, lev, N * nv * 2));
        }
    }
    /* Empty input: nothing out, success. */
    write_le16("h264_cli_in.bin", in, 0, 0);
    CHECK(run_cli(exe, "--qp 10", "h264_cli_in.bin", "h264_cli_out.bin") == 0);
    CHECK(read_le16("h264_cli_out.bin", got, 1) == 0);
    /* Errors: each exits with 1. */
    write_le16("h264_cli_in.bin", in, 16, 3); /* a block and 3 stray bytes */
    CHECK(run_cli(exe, "--qp 10", "h264_cli_in.bin", "h264_cli_out.bin") == 1);
    write_le16("h264_cli_in.bin", in, 16, 0);
    const char *bad[] = {"",
                         "--qp 52",
                         "--qp -1",
                         "--qp 10 --size 5",
                         "--qp 10 --size",
                         "--qp x",
                         "--qp 10 --dc foo",
                         "--qp 10 --dc luma --size 8",
                         "--qp 10 --bitdepth 15",
                         "--qp -37 --bitdepth 14",
                         "--qp 10 --frobnicate",
                         "--qp 10 --backend nope"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const int st = run_cli(exe, bad[i], "h264_cli_in.bin", "h264_cli_out.bin");
        if (st != 1) {
            fprintf(stderr, "cli '%s': status %d, expected 1\n", bad[i], st);
            CHECK(0);
        }
    }
    /* --help: usage on stdout, status 0. */
    CHECK(run_cli(exe, "--help", "h264_cli_in.bin", "h264_cli_out.bin") == 0);
    FILE *f = fopen("h264_cli_out.bin", "rb");
    char line[128] = {0};
    CHECK(f && fgets(line, sizeof(line), f) &&
          strstr(line, "usage: vidkern xform --codec h264"));
    if (f) fclose(f);
    remove("h264_cli_in.bin");
    remove("h264_cli_out.bin");
    remove("h264_cli_err.txt");
}

/* `test_h264 --bytes`: bytes per frame as dense / compacted / sparse data for real clips
 * re-encoded here at a uniform QP, 4:2:0: "inter" predicts each frame by the previous one
 * (co-located, 4x4 transform); "intra" uses a flat 128 prediction with Intra16x16
 * macroblocks (a worst case for intra prediction). For docs/H264.md; not run by ctest. */
static int report_bytes(VidkContext *c) {
    static const char *const clips[][2] = {
        {"cars_320x240_30fps_30f.y4m", "320 240"},
        {"container_352x288_30fps_15f.y4m", "352 288"},
        {"basketballpass_416x240_50fps_100f.y4m", "416 240"}};
    printf("| clip | mode | QP | 4x4 blocks nz/all | dense B | compacted B | sparse B | "
           "dense/sparse |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < sizeof(clips) / sizeof(clips[0]); i++) {
        int w, h;
        sscanf(clips[i][1], "%d %d", &w, &h);
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", VIDK_SHARED_VIDEO_DIR, clips[i][0]);
        VidkPicture src, pred;
        vidk_picture_alloc(&src, w, h, VIDK_CHROMA_420, 8, 0);
        vidk_picture_alloc(&pred, w, h, VIDK_CHROMA_420, 8, 0);
        if (read_y4m(path, 1, &src) || read_y4m(path, 0, &pred)) {
            fprintf(stderr, "%s: not found\n", path);
            vidk_picture_free(&src);
            vidk_picture_free(&pred);
            continue;
        }
        for (int m = 0; m < 4 * 2; m++) {
            const int qp = 22 + 6 * (m % 4), intra = m / 4;
            if (intra && m % 4 == 0) { /* flat prediction from now on */
                for (int p = 0; p < 3; p++) {
                    int pw, ph;
                    vidk_picture_plane_size(&pred, p, &pw, &ph);
                    for (int y = 0; y < ph; y++)
                        memset((uint8_t *)pred.data[p] + y * pred.stride[p], 128, (size_t)pw);
                }
            }
            VidkH264CoefFrame fr;
            VidkH264Batch b;
            VidkH264Bytes by;
            vidk_h264_coef_frame_alloc(&fr, w, h, VIDK_CHROMA_420, 8);
            for (int k = 0; k < fr.mb_w * fr.mb_h; k++) {
                fr.mb[k].qp[0] = (uint8_t)qp;
                fr.mb[k].qp[1] = fr.mb[k].qp[2] = (uint8_t)vidk_h264_chroma_qp(qp, 0, 8);
                fr.mb[k].flags = intra ? VIDK_H264_MB_INTRA | VIDK_H264_MB_I16x16 : 0;
            }
            vidk_h264_batch_init(&b);
            vidk_h264_batch_forward(c, &src, &pred, &fr, &b);
            vidk_h264_bytes(&fr, &b, &by);
            printf("| %s | %s | %d | %zu/%zu | %zu | %zu | %zu | %.1f |\n", clips[i][0],
                   intra ? "intra" : "inter", qp, by.blocks[0], by.blocks_total[0], by.dense,
                   by.compacted, by.sparse, (double)by.dense / (double)by.sparse);
            vidk_h264_batch_free(&b);
            vidk_h264_coef_frame_free(&fr);
        }
        vidk_picture_free(&src);
        vidk_picture_free(&pred);
    }
    return 0;
}

int main(int argc, char **argv) {
    seed = test_seed();
    VidkContext *ctxs[4];
    int n = 0;
    /* cuda joins the frame-level comparisons where a device exists. */
    const VidkBackend order[] = {VIDK_BACKEND_C, VIDK_BACKEND_SIMD, VIDK_BACKEND_THREADS,
                                 VIDK_BACKEND_CUDA};
    for (size_t i = 0; i < 4; i++)
        if ((ctxs[n] = open_backend(order[i], order[i] == VIDK_BACKEND_THREADS ? 3 : 0))) n++;
    CHECK(n >= 2 && vidk_get_backend(ctxs[0]) == VIDK_BACKEND_C);
    if (!n) return test_finish("h264");
    if (argc == 2 && !strcmp(argv[1], "--bytes")) {
        const int r = report_bytes(ctxs[n - 1]);
        for (int k = 0; k < n; k++)
            vidk_close(&ctxs[k]);
        return r;
    }
    if (argc == 3 && !strcmp(argv[1], "--cli")) {
        test_cli(argv[2], ctxs[0]);
        for (int k = 0; k < n; k++)
            vidk_close(&ctxs[k]);
        return test_finish("h264 cli");
    }
    VidkContext *c = ctxs[0];
    test_hand_values(c);
    test_inverse_vs_spec(c);
    test_forward_vs_matrix(c);
    test_round_trip(c);
    test_dc_only_flat(c);
    test_clipping(c);
    for (int k = 1; k < n; k++) {
        test_hand_values(ctxs[k]); /* the public block API on every backend */
        test_clipping(ctxs[k]);
    }
    test_frame(ctxs, n, VIDK_CHROMA_420, 0);
    test_frame(ctxs, n, VIDK_CHROMA_420, 1);
    test_frame(ctxs, n, VIDK_CHROMA_422, 0);
    test_frame(ctxs, n, VIDK_CHROMA_400, 1);
    test_overlap(ctxs, n);
    test_errors(c);
    for (int k = 0; k < n; k++)
        vidk_close(&ctxs[k]);
    return test_finish("h264");
}
