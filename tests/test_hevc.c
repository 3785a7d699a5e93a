/* HEVC transforms: the public API against an independent, deliberately naive
 * implementation written here from the standard (H.265 8.6.2 - 8.6.4: transMatrix of
 * 8.6.4.2 rebuilt from its first column and the DCT-II symmetry, the DST matrix, the
 * dequantisation formula with the spec's variable names, 64-bit arithmetic, flooring
 * shifts) plus HM's forward quantiser; hand-computed values; properties (DC-only blocks,
 * forward + inverse at low qP); scaling-list helpers; a real-clip frame round trip;
 * every argument error of the public API; and, with --cli PATH, `vidkern xform --codec
 * hevc` end to end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "picio.h"
#include "test_util.h"
#include "vidkern/vidkern.h"

#ifndef VIDK_SHARED_VIDEO_DIR
#define VIDK_SHARED_VIDEO_DIR "../shared/video"
#endif

static uint32_t seed;
static int rnd(int lo, int hi) {
    return lo + (int)(test_rand(&seed) % (uint32_t)(hi - lo + 1));
}

/* ---- the standard, transcribed ------------------------------------------------------ */

/* 8.6.4.2: column 0 of transMatrix (rows m = 0..31): 64 and the integer approximations of
 * 64 * sqrt(2) * cos(m * pi / 64). Every other entry follows from the DCT-II structure:
 * transMatrix[m][n] = c((2n + 1) * m mod 128) with c(j) = col0[j] for j <= 32 (col0[32]
 * = 0), -c(64 - j) up to 64, -c(j - 64) up to 96, c(128 - j) above. */
static const int col0[33] = {64, 90, 90, 90, 89, 88, 87, 85, 83, 82, 80, 78, 75, 73, 70, 67, 64,
                             61, 57, 54, 50, 46, 43, 38, 36, 31, 25, 22, 18, 13, 9,  4,  0};
static int tm[32][32]; /* [m][n]: row m = basis function m */

static void build_matrix(void) {
    for (int m = 0; m < 32; m++)
        for (int n = 0; n < 32; n++) {
            const int j = ((2 * n + 1) * m) % 128;
            tm[m][n] = j <= 32   ? col0[j]
                       : j <= 64 ? -col0[64 - j]
                       : j <= 96 ? -col0[j - 64]
                                 : col0[128 - j];
        }
}

/* 8.6.4.2, trType = 1 */
static const int dst_matrix[4][4] = {
    {29, 55, 74, 84}, {74, 74, 0, -74}, {84, -29, -74, 55}, {55, -84, 74, -29}};

/* nTbS-point coefficient: transMatrix[m * 2^(5 - log2(nTbS))][n] (8.6.4.2). */
static int coef(int n_tbs, int dst, int m, int n) {
    return dst ? dst_matrix[m][n] : tm[m * (32 / n_tbs)][n];
}

static int64_t floor_shift(int64_t v, int s) {
    return v >= 0 ? v >> s : -((-v + ((int64_t)1 << s) - 1) >> s);
}
static int64_t clip3(int64_t lo, int64_t hi, int64_t v) {
    return v < lo ? lo : v > hi ? hi : v;
}

static const int level_scale[6] = {40, 45, 51, 57, 64, 72};                   /* 8.6.3 */
static const int quant_scale[6] = {26214, 23302, 20560, 18396, 16384, 14564}; /* HM */

typedef struct Par {
    int n, qp, bd, dst, ts, islice;
    const uint8_t *m; /* ScalingFactor or NULL */
} Par;

/* HM's encoder: clip to the residual domain, rows then columns (rounded shifts
 * log2N + bd - 9 and log2N + 6), or transform skip; quantiser with the I/P offset. */
static void ref_forward(const Par *p, const int16_t *res, int16_t *lev) {
    const int n = p->n,
              log2n = n == 4    ? 2
                      : n == 8  ? 3
                      : n == 16 ? 4
                                : 5,
              lim = (1 << p->bd) - 1;
    int64_t x[32][32], t[32][32], c[32][32];
    for (int y = 0; y < n; y++)
        for (int i = 0; i < n; i++)
            x[y][i] = clip3(-lim, lim, res[y * n + i]);
    if (p->ts) {
        for (int y = 0; y < n; y++)
            for (int i = 0; i < n; i++)
                c[y][i] = x[y][i] * ((int64_t)1 << (15 - p->bd - log2n));
    } else {
        const int s1 = log2n + p->bd - 9, s2 = log2n + 6;
        for (int y = 0; y < n; y++)
            for (int k = 0; k < n; k++) {
                int64_t s = 0;
                for (int i = 0; i < n; i++)
                    s += coef(n, p->dst, k, i) * x[y][i];
                t[y][k] = floor_shift(s + (1 << (s1 - 1)), s1);
            }
        for (int v = 0; v < n; v++)
            for (int u = 0; u < n; u++) {
                int64_t s = 0;
                for (int y = 0; y < n; y++)
                    s += coef(n, p->dst, v, y) * t[y][u];
                c[v][u] = floor_shift(s + (1 << (s2 - 1)), s2);
            }
    }
    const int qbits = 14 + p->qp / 6 + 15 - p->bd - log2n;
    const int64_t f = (int64_t)(p->islice ? 171 : 85) << (qbits - 9);
    for (int v = 0; v < n; v++)
        for (int u = 0; u < n; u++) {
            const int64_t q =
                p->m ? (quant_scale[p->qp % 6] * 16) / p->m[v * n + u] : quant_scale[p->qp % 6];
            const int64_t a = c[v][u] < 0 ? -c[v][u] : c[v][u];
            const int64_t l = (a * q + f) >> qbits;
            lev[v * n + u] = (int16_t)clip3(-32768, 32767, c[v][u] < 0 ? -l : l);
        }
}

/* 8.6.2 - 8.6.4 with the spec's names: TransCoeffLevel -> d (8.6.3) -> r (8.6.4.2). */
static void ref_inverse(const Par *p, const int16_t *lev, int16_t *res) {
    const int nTbS = p->n,
              log2 = nTbS == 4    ? 2
                     : nTbS == 8  ? 3
                     : nTbS == 16 ? 4
                                  : 5,
              qP = p->qp;
    const int bdShift = p->bd + log2 - 5;
    int64_t d[32][32], e[32][32], g[32][32], r[32][32]; /* [x][y] as in the spec */
    for (int x = 0; x < nTbS; x++)
        for (int y = 0; y < nTbS; y++) {
            const int64_t m = p->m ? p->m[y * nTbS + x] : 16;
            const int64_t v =
                lev[y * nTbS + x] * m * level_scale[qP % 6] * ((int64_t)1 << (qP / 6));
            d[x][y] =
                clip3(-32768, 32767, floor_shift(v + ((int64_t)1 << (bdShift - 1)), bdShift));
        }
    if (p->ts) {
        for (int x = 0; x < nTbS; x++)
            for (int y = 0; y < nTbS; y++)
                r[x][y] = d[x][y] * 128; /* tsShift = 7 */
    } else {
        for (int x = 0; x < nTbS; x++) /* each column */
            for (int y = 0; y < nTbS; y++) {
                int64_t s = 0;
                for (int j = 0; j < nTbS; j++)
                    s += coef(nTbS, p->dst, j, y) * d[x][j];
                e[x][y] = s;
                g[x][y] = clip3(-32768, 32767, floor_shift(e[x][y] + 64, 7));
            }
        for (int y = 0; y < nTbS; y++) /* each row */
            for (int x = 0; x < nTbS; x++) {
                int64_t s = 0;
                for (int j = 0; j < nTbS; j++)
                    s += coef(nTbS, p->dst, j, x) * g[j][y];
                r[x][y] = s;
            }
    }
    const int bdShift2 = 20 - p->bd;
    for (int x = 0; x < nTbS; x++)
        for (int y = 0; y < nTbS; y++)
            res[y * nTbS + x] = (int16_t)clip3(
                -32768, 32767, floor_shift(r[x][y] + (1 << (bdShift2 - 1)), bdShift2));
}

/* ---- helpers ------------------------------------------------------------------------- */

static VidkContext *open_backend(VidkBackend b, int threads) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = b;
    s.n_threads = threads;
    VidkContext *ctx = NULL;
    return vidk_open(&ctx, &s) < 0 ? NULL : ctx;
}

static VidkHevcTbSize size_of(int n) {
    return n == 4    ? VIDK_HEVC_TB_4x4
           : n == 8  ? VIDK_HEVC_TB_8x8
           : n == 16 ? VIDK_HEVC_TB_16x16
                     : VIDK_HEVC_TB_32x32;
}

static void params_of(const Par *p, VidkHevcBlockParams *bp) {
    vidk_hevc_default_block_params(bp);
    bp->size = size_of(p->n);
    bp->qp = p->qp;
    bp->bitdepth = p->bd;
    bp->flags = (p->islice ? VIDK_HEVC_TB_ISLICE | VIDK_HEVC_TB_INTRA : 0) |
                (p->dst ? VIDK_HEVC_TB_DST : 0) | (p->ts ? VIDK_HEVC_TB_TSKIP : 0);
    bp->scaling = p->m;
}

/* ---- conformance against the transcription --------------------------------------------- */

static void test_matrix(void) {
    build_matrix();
    /* spot values printed in 8.6.4.2 */
    static const int r4[4][4] = {
        {64, 64, 64, 64}, {83, 36, -36, -83}, {64, -64, -64, 64}, {36, -83, 83, -36}};
    for (int k = 0; k < 4; k++)
        for (int n = 0; n < 4; n++)
            CHECK_EQ_U(coef(4, 0, k, n) + 1000, r4[k][n] + 1000);
    static const int r8[8] = {89, 75, 50, 18, -18, -50, -75, -89};
    for (int n = 0; n < 8; n++)
        CHECK_EQ_U(coef(8, 0, 1, n) + 1000, r8[n] + 1000);
    static const int r16[8] = {90, 87, 80, 70, 57, 43, 25, 9};
    for (int n = 0; n < 8; n++)
        CHECK_EQ_U(coef(16, 0, 1, n) + 1000, r16[n] + 1000);
    static const int r32[16] = {90, 90, 88, 85, 82, 78, 73, 67, 61, 54, 46, 38, 31, 22, 13, 4};
    for (int n = 0; n < 16; n++)
        CHECK_EQ_U(coef(32, 0, 1, n) + 1000, r32[n] + 1000);
    /* near-orthogonality: rows have norm ~ 64^2 * N and are nearly orthogonal */
    for (int n = 4; n <= 32; n *= 2)
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                long dot = 0;
                for (int i = 0; i < n; i++)
                    dot += (long)coef(n, 0, a, i) * coef(n, 0, b, i);
                if (a == b)
                    CHECK(labs(dot - 4096L * n) <= 4096L * n / 100);
                else
                    CHECK(labs(dot) <= 4096L * n / 50);
            }
}

static void fill(int16_t *v, int len, int lo, int hi, int mode) {
    for (int i = 0; i < len; i++)
        v[i] = (int16_t)(mode == 0   ? rnd(lo, hi)
                         : mode == 1 ? (rnd(0, 1) ? hi : lo)
                         : mode == 2 ? (i ? 0 : rnd(lo, hi))
                                     : rnd(lo, hi) / 16);
}

static void test_conformance(void) {
    VidkContext *ctx[3] = {open_backend(VIDK_BACKEND_C, 0), open_backend(VIDK_BACKEND_SIMD, 0),
                           open_backend(VIDK_BACKEND_THREADS, 3)};
    CHECK(ctx[0] && ctx[2]);
    static int16_t res[4 * 1024], lev[4 * 1024], want[4 * 1024], got[4 * 1024];
    static uint8_t m[1024];
    uint16_t nnz[4];
    for (int it = 0; it < 1500; it++) {
        Par p = {.n = 4 << rnd(0, 3), .bd = 8 + 2 * rnd(0, 2), .islice = rnd(0, 1)};
        p.qp = it % 7 == 0   ? 0
               : it % 7 == 1 ? 51 + 6 * (p.bd - 8)
                             : rnd(0, 51 + 6 * (p.bd - 8));
        if (p.n == 4) {
            const int k = rnd(0, 2);
            p.dst = k == 1;
            p.ts = k == 2;
        }
        const int len = p.n * p.n, lim = (1 << p.bd) - 1, nb = p.n == 32 ? 1 : rnd(1, 4);
        if (rnd(0, 3) == 0) {
            for (int i = 0; i < len; i++)
                m[i] = (uint8_t)rnd(1, 255);
            p.m = m;
        }
        VidkHevcBlockParams bp;
        params_of(&p, &bp);
        /* forward: residuals in and beyond the domain */
        for (int b = 0; b < nb; b++)
            fill(res + b * len, len, rnd(0, 5) ? -lim : -32768, rnd(0, 5) ? lim : 32767,
                 rnd(0, 3));
        for (int b = 0; b < nb; b++)
            ref_forward(&p, res + b * len, want + b * len);
        for (int c = 0; c < 3; c++) {
            if (!ctx[c]) continue;
            memset(got, 0x55, sizeof(got));
            CHECK_EQ_U(vidk_hevc_forward_blocks(ctx[c], &bp, res, got, (size_t)nb, nnz), 0);
            if (memcmp(want, got, (size_t)(nb * len) * 2)) {
                fprintf(stderr,
                        "forward %dx%d bd %d qp %d dst %d ts %d sl %d, backend %d differs\n",
                        p.n, p.n, p.bd, p.qp, p.dst, p.ts, p.m != NULL, c);
                CHECK(0);
            }
            for (int b = 0; b < nb; b++) {
                int z = 0;
                for (int i = 0; i < len; i++)
                    z += want[b * len + i] != 0;
                CHECK_EQ_U(nnz[b], z);
            }
        }
        /* inverse: any int16 level */
        for (int b = 0; b < nb; b++)
            fill(lev + b * len, len, -32768, 32767, rnd(0, 3));
        for (int b = 0; b < nb; b++)
            ref_inverse(&p, lev + b * len, want + b * len);
        for (int c = 0; c < 3; c++) {
            if (!ctx[c]) continue;
            CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx[c], &bp, lev, got, (size_t)nb), 0);
            if (memcmp(want, got, (size_t)(nb * len) * 2)) {
                fprintf(stderr,
                        "inverse %dx%d bd %d qp %d dst %d ts %d sl %d, backend %d differs\n",
                        p.n, p.n, p.bd, p.qp, p.dst, p.ts, p.m != NULL, c);
                CHECK(0);
            }
        }
    }
    for (int c = 0; c < 3; c++)
        vidk_close(&ctx[c]);
}

/* ---- hand values and properties ----------------------------------------------------- */

static void test_properties(void) {
    VidkContext *ctx = open_backend(VIDK_BACKEND_C, 0);
    CHECK(ctx != NULL);
    if (!ctx) return;
    VidkHevcBlockParams p;
    int16_t res[1024], lev[1024], back[1024];
    uint16_t nnz;
    /* By hand: a flat 255 4x4 block (8-bit): stage 1 (64*4*255 + 1) >> 1 = 32640, stage 2
     * (64*4*32640 + 128) >> 8 = 32640; qP 4: qbits 19, (32640 * 16384 + (171 << 10)) >> 19
     * = 1020. Back: (1020*16*64 + 16) >> 5 = 32640, (64*32640 + 64) >> 7 = 16320,
     * (64*16320 + 2048) >> 12 = 255. */
    vidk_hevc_default_block_params(&p);
    p.qp = 4;
    for (int i = 0; i < 16; i++)
        res[i] = 255;
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, res, lev, 1, &nnz), 0);
    CHECK_EQ_U(lev[0], 1020);
    CHECK_EQ_U(nnz, 1);
    for (int i = 1; i < 16; i++)
        CHECK_EQ_U(lev[i], 0);
    CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx, &p, lev, back, 1), 0);
    for (int i = 0; i < 16; i++)
        CHECK_EQ_U(back[i], 255);
    /* P slice offset: 32640 * 16384 = 534773760; + (85 << 10) -> still 1020 */
    p.flags = 0;
    vidk_hevc_forward_blocks(ctx, &p, res, lev, 1, &nnz);
    CHECK_EQ_U(lev[0], 1020);
    /* an offset that matters: c = 96 (flat 96/128... ) tested in the conformance loop */

    for (int n = 4; n <= 32; n *= 2)
        for (int bd = 8; bd <= 12; bd += 2) {
            const int len = n * n, lim = (1 << bd) - 1;
            vidk_hevc_default_block_params(&p);
            p.size = size_of(n);
            p.bitdepth = bd;
            /* DC-only input: a constant residual gives DC levels only */
            const int v = rnd(-lim, lim);
            for (int i = 0; i < len; i++)
                res[i] = (int16_t)v;
            p.qp = rnd(0, 30);
            CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, res, lev, 1, &nnz), 0);
            for (int i = 1; i < len; i++)
                CHECK_EQ_U(lev[i], 0);
            CHECK(nnz <= 1);
            /* DC-only levels give a flat residual */
            memset(lev, 0, sizeof(lev));
            lev[0] = (int16_t)rnd(-2000, 2000);
            CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx, &p, lev, back, 1), 0);
            for (int i = 1; i < len; i++)
                CHECK_EQ_U(back[i], back[0]);
            /* forward + inverse at qP 0 (QP = -QpBdOffset; the quantiser step is below
             * the residual's unit) reproduces the residual up to the integer matrix's
             * non-orthogonality (about 1%: with white noise of full amplitude A the error
             * grows to about A * N / 1600 at 32x32, measured with the transcription above) */
            p.qp = 0;
            int worst = 0;
            double sum = 0;
            for (int k = 0; k < 20; k++) {
                for (int i = 0; i < len; i++)
                    res[i] = (int16_t)rnd(-lim, lim);
                vidk_hevc_forward_blocks(ctx, &p, res, lev, 1, NULL);
                vidk_hevc_inverse_blocks(ctx, &p, lev, back, 1);
                for (int i = 0; i < len; i++) {
                    const int d = abs(back[i] - res[i]);
                    worst = d > worst ? d : worst;
                    sum += d;
                }
            }
            const double mean = sum / (20.0 * len);
            if (worst > 1 + lim * n / 512 || mean > 0.2 + lim * n / 4096.0)
                fprintf(stderr, "round trip %dx%d bd %d: worst %d mean %.3f\n", n, n, bd, worst,
                        mean);
            CHECK(worst <= 1 + lim * n / 512);
            CHECK(mean <= 0.2 + lim * n / 4096.0);
            if (bd == 8 && n == 4) CHECK(worst <= 1);
            /* zero in, zero out */
            memset(res, 0, sizeof(res));
            vidk_hevc_forward_blocks(ctx, &p, res, lev, 1, &nnz);
            CHECK_EQ_U(nnz, 0);
            vidk_hevc_inverse_blocks(ctx, &p, lev, back, 1);
            for (int i = 0; i < len; i++)
                CHECK_EQ_U(back[i], 0);
        }
    /* DST and transform skip round trips at the lowest qP: transform skip within 1 (each
     * sample its own level), the DST within 2 (a level's rounding error, up to 2/3 of the
     * qP 0 step with the intra offset 171/512, spreads over a row and a column of the
     * inverse: seed 3507073702 has -255 back as -257) */
    for (int k = 0; k < 2; k++) {
        vidk_hevc_default_block_params(&p);
        p.qp = 0;
        p.flags |= k ? VIDK_HEVC_TB_TSKIP : VIDK_HEVC_TB_DST;
        for (int i = 0; i < 16; i++)
            res[i] = (int16_t)rnd(-255, 255);
        vidk_hevc_forward_blocks(ctx, &p, res, lev, 1, NULL);
        vidk_hevc_inverse_blocks(ctx, &p, lev, back, 1);
        for (int i = 0; i < 16; i++)
            CHECK(abs(back[i] - res[i]) <= (k ? 1 : 2));
    }
    vidk_close(&ctx);
}

static void test_scaling(void) {
    VidkHevcScaling s;
    vidk_hevc_scaling_flat(&s);
    CHECK(s.m4[0][0] == 16 && s.m32[5][1023] == 16);
    /* 6.5.3 up-right diagonal: coded index 1 is (x 0, y 1), 2 is (1, 0) */
    uint8_t list[64];
    for (int i = 0; i < 64; i++)
        list[i] = (uint8_t)(i + 1);
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_4x4, 2, list, 0), 0);
    CHECK_EQ_U(s.m4[2][0], 1);
    CHECK_EQ_U(s.m4[2][4], 2);
    CHECK_EQ_U(s.m4[2][1], 3);
    CHECK_EQ_U(s.m4[2][15], 16);
    CHECK_EQ_U(s.m4[1][4], 16); /* other matrices untouched */
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_16x16, 3, list, 77), 0);
    CHECK_EQ_U(s.m16[3][0], 77);            /* DC */
    CHECK_EQ_U(s.m16[3][1], 1);             /* (1, 0) replicates list[0] */
    CHECK_EQ_U(s.m16[3][2 * 16 + 0], 2);    /* (0, 2) <- 8x8 (0, 1) = list[1] */
    CHECK_EQ_U(s.m16[3][0 * 16 + 3], 3);    /* (3, 0) <- 8x8 (1, 0) = list[2] */
    CHECK_EQ_U(s.m16[3][15 * 16 + 15], 64); /* last */
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_32x32, 0, list, 5), 0);
    CHECK_EQ_U(s.m32[0][0], 5);
    CHECK_EQ_U(s.m32[0][3], 1);
    CHECK_EQ_U(s.m32[0][31 * 32 + 28], 64);
    vidk_hevc_scaling_default(&s);
    CHECK_EQ_U(s.m8[0][63], 115); /* Table 7-6 intra, last */
    CHECK_EQ_U(s.m8[3][63], 91);  /* inter */
    CHECK_EQ_U(s.m8[0][7], 24);   /* (7, 0) */
    CHECK_EQ_U(s.m32[0][0], 16);  /* DC */
    CHECK_EQ_U(s.m32[1][1023], 115);
    CHECK_EQ_U(s.m4[4][9], 16);
    /* errors */
    CHECK_EQ_U(vidk_hevc_scaling_set(NULL, VIDK_HEVC_TB_4x4, 0, list, 0), VIDK_ERR(EINVAL));
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_4x4, 0, NULL, 0), VIDK_ERR(EINVAL));
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, (VidkHevcTbSize)4, 0, list, 0), VIDK_ERR(EINVAL));
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_8x8, 6, list, 0), VIDK_ERR(EINVAL));
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_16x16, 0, list, 0), VIDK_ERR(EINVAL));
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_16x16, 0, list, 256), VIDK_ERR(EINVAL));
    list[40] = 0;
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_8x8, 0, list, 0), VIDK_ERR(EINVAL));
    CHECK_EQ_U(vidk_hevc_scaling_set(&s, VIDK_HEVC_TB_4x4, 0, list, 0), 0); /* only 16 read */
    CHECK_EQ_U(vidk_hevc_tb_side(VIDK_HEVC_TB_32x32), 32);
    CHECK_EQ_U(vidk_hevc_tb_side((VidkHevcTbSize)4), 0);
}

/* ---- argument errors ---------------------------------------------------------------- */

static void test_errors(void) {
    VidkContext *ctx = open_backend(VIDK_BACKEND_C, 0);
    CHECK(ctx != NULL);
    if (!ctx) return;
    VidkHevcBlockParams p;
    int16_t a[1024] = {0}, b[1024];
    uint16_t z;
    const int E = VIDK_ERR(EINVAL);
#define BAD(stmt)                                                                              \
    do {                                                                                       \
        vidk_hevc_default_block_params(&p);                                                    \
        stmt;                                                                                  \
        CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, a, b, 1, &z), E);                         \
        CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx, &p, a, b, 1), E);                             \
    } while (0)
    BAD(p.size = (VidkHevcTbSize)4);
    BAD(p.size = (VidkHevcTbSize)-1);
    BAD(p.qp = -1);
    BAD(p.qp = 52);
    BAD((p.bitdepth = 10, p.qp = 64));
    BAD(p.bitdepth = 7);
    BAD(p.bitdepth = 13);
    BAD((p.size = VIDK_HEVC_TB_8x8, p.flags = VIDK_HEVC_TB_DST));
    BAD((p.size = VIDK_HEVC_TB_32x32, p.flags = VIDK_HEVC_TB_TSKIP));
    BAD(p.flags = VIDK_HEVC_TB_DST | VIDK_HEVC_TB_TSKIP);
    BAD(p.flags = 16);
    BAD(p.reserved[15] = 1);
    static uint8_t m[16];
    memset(m, 16, sizeof(m));
    m[9] = 0;
    BAD(p.scaling = m);
#undef BAD
    vidk_hevc_default_block_params(&p);
    CHECK_EQ_U(vidk_hevc_forward_blocks(NULL, &p, a, b, 1, &z), E);
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, NULL, a, b, 1, &z), E);
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, NULL, b, 1, &z), E);
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, a, NULL, 1, &z), E);
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, a, b, 1, NULL), 0);
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, NULL, NULL, 0, NULL), 0);
    CHECK_EQ_U(vidk_hevc_inverse_blocks(NULL, &p, a, b, 1), E);
    CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx, NULL, a, b, 1), E);
    CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx, &p, NULL, b, 1), E);
    CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx, &p, a, NULL, 1), E);
    CHECK_EQ_U(vidk_hevc_inverse_blocks(ctx, &p, NULL, NULL, 0), 0);
    p.bitdepth = 10;
    p.qp = 63; /* valid at 10 bits */
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, a, b, 1, &z), 0);
    CHECK_EQ_U(vidk_hevc_forward_blocks(ctx, &p, a, a, 1, &z), 0); /* in place */

    /* batches */
    VidkHevcBatch bt;
    vidk_hevc_batch_init(&bt, 8);
    const VidkHevcTb tb = {.x = 8, .y = 4, .plane = 0, .qp = 30};
    CHECK_EQ_U(vidk_hevc_batch_reserve(NULL, VIDK_HEVC_TB_4x4, 4), E);
    CHECK_EQ_U(vidk_hevc_batch_reserve(&bt, (VidkHevcTbSize)4, 4), E);
    CHECK_EQ_U(vidk_hevc_batch_reserve(&bt, VIDK_HEVC_TB_4x4, (1u << 26) + 1), E);
    CHECK_EQ_U(vidk_hevc_batch_add(NULL, VIDK_HEVC_TB_4x4, &tb, NULL), E);
    CHECK_EQ_U(vidk_hevc_batch_add(&bt, VIDK_HEVC_TB_4x4, NULL, NULL), E);
    CHECK_EQ_U(vidk_hevc_batch_add(&bt, (VidkHevcTbSize)5, &tb, NULL), E);
    CHECK_EQ_U(vidk_hevc_batch_add(&bt, VIDK_HEVC_TB_4x4, &tb, a), 0);
    CHECK_EQ_U(vidk_hevc_batch_add(&bt, VIDK_HEVC_TB_4x4, &tb, NULL), 1);
    CHECK_EQ_U(bt.list[0].count, 2);
    CHECK_EQ_U(vidk_hevc_batch_reserve(&bt, VIDK_HEVC_TB_4x4, 1000), 0); /* keeps entries */
    CHECK_EQ_U(bt.list[0].count, 2);
    CHECK(bt.list[0].tb[1].x == 8 && bt.list[0].capacity >= 1000);
    CHECK(((uintptr_t)bt.list[0].res & 63) == 0 && ((uintptr_t)bt.list[0].lev & 63) == 0);
    CHECK_EQ_U(vidk_hevc_batch_forward(NULL, &bt), E);
    CHECK_EQ_U(vidk_hevc_batch_forward(ctx, NULL), E);
    CHECK_EQ_U(vidk_hevc_batch_forward(ctx, &bt), 0); /* zero residuals: no non-zero TB */
    CHECK_EQ_U(bt.list[0].nz_count, 0);
    VidkPicture pic, pic2;
    CHECK_EQ_U(vidk_picture_alloc(&pic, 16, 8, VIDK_CHROMA_420, 8, 0), 0);
    CHECK_EQ_U(vidk_picture_alloc(&pic2, 16, 8, VIDK_CHROMA_420, 10, 0), 0);
    CHECK_EQ_U(vidk_hevc_batch_inverse(NULL, &bt, &pic), E);
    CHECK_EQ_U(vidk_hevc_batch_inverse(ctx, NULL, &pic), E);
    CHECK_EQ_U(vidk_hevc_batch_inverse(ctx, &bt, &pic), 0);
    CHECK_EQ_U(vidk_hevc_batch_inverse(ctx, &bt, &pic2), E); /* bit depth */
    CHECK_EQ_U(vidk_hevc_batch_residual(ctx, &bt, &pic, &pic2), E);
    CHECK_EQ_U(vidk_hevc_batch_residual(ctx, &bt, &pic, NULL), E);
    CHECK_EQ_U(vidk_hevc_batch_residual(ctx, &bt, &pic, &pic), 0);
    bt.list[0].tb[1].x = 14; /* outside (16 wide) */
    CHECK_EQ_U(vidk_hevc_batch_inverse(ctx, &bt, &pic), E);
    CHECK_EQ_U(vidk_hevc_batch_residual(ctx, &bt, &pic, &pic), E);
    bt.list[0].tb[1].x = 6; /* not a multiple of 4 */
    CHECK_EQ_U(vidk_hevc_batch_inverse(ctx, &bt, &pic), E);
    bt.list[0].tb[1].x = 4;
    bt.list[0].tb[1].plane = 1; /* chroma plane 8x4: (4, 4) is outside */
    CHECK_EQ_U(vidk_hevc_batch_inverse(ctx, &bt, &pic), E);
    bt.list[0].tb[1].y = 0;
    CHECK_EQ_U(vidk_hevc_batch_inverse(ctx, &bt, &pic), 0);
    bt.list[0].tb[1].flags = VIDK_HEVC_TB_DST | VIDK_HEVC_TB_TSKIP;
    CHECK_EQ_U(vidk_hevc_batch_forward(ctx, &bt), E);
    bt.list[0].tb[1].flags = 0;
    bt.list[0].tb[1].qp = 52;
    CHECK_EQ_U(vidk_hevc_batch_forward(ctx, &bt), E);
    bt.bitdepth = 10;
    CHECK_EQ_U(vidk_hevc_batch_forward(ctx, &bt), 0); /* qP 52 is valid at 10 bits */
    bt.bitdepth = 8;
    bt.list[0].tb[1].qp = 30;
    bt.list[0].count = bt.list[0].capacity + 1;
    CHECK_EQ_U(vidk_hevc_batch_forward(ctx, &bt), E);
    bt.list[0].count = 2;
    vidk_hevc_batch_clear(&bt);
    CHECK_EQ_U(bt.list[0].count, 0);
    vidk_hevc_batch_free(&bt);
    vidk_hevc_batch_free(&bt); /* twice is fine */
    vidk_hevc_batch_free(NULL);
    vidk_picture_free(&pic);
    vidk_picture_free(&pic2);
    vidk_close(&ctx);
}

/* ---- a real clip: frame round trip through the batch API ----------------------------- */

static int read_frame(const char *path, int index, VidkPicture *pic) {
    VioReader *r = NULL;
    char err[256];
    if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) return -1;
    int rc = vio_picture_alloc(pic, vio_reader_format(r));
    for (int i = 0; rc >= 0 && i <= index; i++)
        if (vio_reader_read(r, pic) != 1) rc = -1;
    vio_reader_close(&r);
    if (rc < 0) vidk_picture_free(pic);
    return rc < 0 ? -1 : 0;
}

static void test_real_frame(void) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/container_352x288_30fps_15f.y4m", VIDK_SHARED_VIDEO_DIR);
    VidkPicture src, pred, rec[2];
    if (access(path, R_OK) || read_frame(path, 5, &src) < 0) {
        test_video_missing("real clip absent: frame round trip not run");
        return;
    }
    if (read_frame(path, 4, &pred) < 0) {
        vidk_picture_free(&src);
        return;
    }
    VidkContext *ctx[2] = {open_backend(VIDK_BACKEND_C, 0),
                           open_backend(VIDK_BACKEND_THREADS, 2)};
    for (int c = 0; c < 2; c++) {
        VidkHevcBatch b;
        vidk_hevc_batch_init(&b, 8);
        /* 16x16 luma, 8x8 chroma, a few 32x32 and 4x4; inter TBs of a P slice at QP 12 */
        for (int p = 0; p < 3; p++) {
            int w, h;
            vidk_picture_plane_size(&src, p, &w, &h);
            const int n = p ? 8 : 16;
            for (int y = 0; y < h; y += n)
                for (int x = 0; x < w; x += n) {
                    const VidkHevcTb t = {
                        .x = (uint16_t)x, .y = (uint16_t)y, .plane = (uint8_t)p, .qp = 12};
                    CHECK(vidk_hevc_batch_add(&b, p ? VIDK_HEVC_TB_8x8 : VIDK_HEVC_TB_16x16, &t,
                                              NULL) >= 0);
                }
        }
        CHECK_EQ_U(vidk_picture_alloc(&rec[c], src.w, src.h, src.chroma, 8, 0), 0);
        for (int p = 0; p < 3; p++) {
            int w, h;
            vidk_picture_plane_size(&src, p, &w, &h);
            for (int y = 0; y < h; y++)
                memcpy((uint8_t *)rec[c].data[p] + y * rec[c].stride[p],
                       (uint8_t *)pred.data[p] + y * pred.stride[p], (size_t)w);
        }
        CHECK_EQ_U(vidk_hevc_batch_residual(ctx[c], &b, &src, &pred), 0);
        const int nz = vidk_hevc_batch_forward(ctx[c], &b);
        CHECK(nz > 0);
        CHECK_EQ_U(vidk_hevc_batch_inverse(ctx[c], &b, &rec[c]), 0);
        /* QP 12 (step 4): close to the source, much closer than the prediction */
        double e_rec = 0, e_pred = 0;
        for (int y = 0; y < src.h; y++)
            for (int x = 0; x < src.w; x++) {
                const int s = ((uint8_t *)src.data[0])[y * src.stride[0] + x];
                const int r = ((uint8_t *)rec[c].data[0])[y * rec[c].stride[0] + x];
                const int q = ((uint8_t *)pred.data[0])[y * pred.stride[0] + x];
                e_rec += (s - r) * (s - r);
                e_pred += (s - q) * (s - q);
            }
        e_rec /= (double)src.w * src.h;
        e_pred /= (double)src.w * src.h;
        fprintf(stderr,
                "real frame: mse prediction %.2f, reconstruction %.2f (%d non-zero TBs)\n",
                e_pred, e_rec, nz);
        CHECK(e_rec < 4.0 && e_rec < e_pred);
        /* the compacted output: every TB with a non-zero level, in order; without
         * compact_levels the index only (nz_lev untouched) */
        for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++) {
            const VidkHevcTbList *l = &b.list[z];
            const size_t len = (size_t)16 << (2 * z);
            uint32_t k = 0;
            for (uint32_t i = 0; i < l->count; i++)
                if (l->nnz[i]) {
                    CHECK(k < l->nz_count && l->nz_index[k] == i);
                    CHECK(k < l->nz_count &&
                          !memcmp(l->nz_lev + k * len, l->lev + i * len, len * 2));
                    k++;
                }
            CHECK_EQ_U(k, l->nz_count);
            if (l->count) memset(l->nz_lev, 0x33, l->capacity * len * 2);
        }
        b.compact_levels = 0;
        CHECK_EQ_U(vidk_hevc_batch_forward(ctx[c], &b), nz);
        for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++)
            for (size_t i = 0;
                 b.list[z].count && i < b.list[z].capacity * ((size_t)16 << (2 * z)); i++)
                if (b.list[z].nz_lev[i] != 0x3333) {
                    CHECK(0);
                    break;
                }
        vidk_hevc_batch_free(&b);
    }
    int x_differs = 0;
    for (int p = 0; p < 3; p++) {
        int w, h;
        vidk_picture_plane_size(&src, p, &w, &h);
        for (int y = 0; y < h; y++)
            x_differs |=
                memcmp((uint8_t *)rec[0].data[p] + y * rec[0].stride[p],
                       (uint8_t *)rec[1].data[p] + y * rec[1].stride[p], (size_t)w) != 0;
    }
    CHECK(!x_differs);
    for (int c = 0; c < 2; c++) {
        vidk_picture_free(&rec[c]);
        vidk_close(&ctx[c]);
    }
    vidk_picture_free(&src);
    vidk_picture_free(&pred);
}

/* ---- `vidkern xform --codec hevc` ------------------------------------------------------ */

static int run(const char *cmd) {
    return WEXITSTATUS(system(cmd));
}

static void write_le(const char *path, const int16_t *v, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    for (size_t i = 0; i < n; i++) {
        fputc(v[i] & 255, f);
        fputc(((uint16_t)v[i] >> 8) & 255, f);
    }
    fclose(f);
}

static size_t read_le(const char *path, int16_t *v, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n = 0;
    int lo, hi;
    if (!f) return 0;
    while (n < cap && (lo = fgetc(f)) != EOF && (hi = fgetc(f)) != EOF)
        v[n++] = (int16_t)(uint16_t)(lo | hi << 8);
    fclose(f);
    return n;
}

static void test_cli(const char *exe, const char *dir) {
    char in[1024], out[1024], cmd[4096];
    snprintf(in, sizeof(in), "%s/hevc_cli_in.bin", dir);
    snprintf(out, sizeof(out), "%s/hevc_cli_out.bin", dir);
    VidkContext *ctx = open_backend(VIDK_BACKEND_C, 0);
    static int16_t v[5 * 1024], want[5 * 1024], got[5 * 1024];
    static const char *const flags[] = {"", " --dst", " --transform-skip"};
    for (int k = 0; k < 12; k++) {
        const int n = 4 << (k % 4), kind = n == 4 ? k / 4 % 3 : 0, bd = 8 + 2 * (k % 3),
                  inv = k % 2;
        const int qp = rnd(0, 51 + 6 * (bd - 8)), nb = 5, len = n * n, inter = k % 5 == 0;
        for (int i = 0; i < nb * len; i++)
            v[i] = (int16_t)(inv ? rnd(-300, 300) : rnd(-(1 << bd) + 1, (1 << bd) - 1));
        write_le(in, v, (size_t)(nb * len));
        snprintf(
            cmd, sizeof(cmd),
            "%s xform --codec hevc --size %d --qp %d --bitdepth %d%s%s%s --backend c < %s > %s",
            exe, n, qp, bd, flags[kind], inv ? " --inverse" : "",
            inter ? " --inter" : " --intra", in, out);
        CHECK_EQ_U(run(cmd), 0);
        VidkHevcBlockParams p;
        vidk_hevc_default_block_params(&p);
        p.size = size_of(n);
        p.qp = qp;
        p.bitdepth = bd;
        p.flags = (inter ? 0 : VIDK_HEVC_TB_INTRA | VIDK_HEVC_TB_ISLICE) |
                  (kind == 1 ? VIDK_HEVC_TB_DST : 0) | (kind == 2 ? VIDK_HEVC_TB_TSKIP : 0);
        if (inv)
            vidk_hevc_inverse_blocks(ctx, &p, v, want, (size_t)nb);
        else
            vidk_hevc_forward_blocks(ctx, &p, v, want, (size_t)nb, NULL);
        CHECK_EQ_U(read_le(out, got, sizeof(got) / 2), (size_t)(nb * len));
        CHECK(!memcmp(want, got, (size_t)(nb * len) * 2));
    }
    /* errors: partial block, sizes, qP range, --dst with 8x8, both 4x4 kinds, missing qp */
    static const char *const bad[] = {"--size 4 --qp 3 < %s.part",
                                      "--size 5 --qp 3 < /dev/null",
                                      "--size 4 --qp 52 < /dev/null",
                                      "--size 4 --qp -1 < /dev/null",
                                      "--size 4 --qp 70 --bitdepth 10 < /dev/null",
                                      "--size 8 --dst --qp 3 < /dev/null",
                                      "--size 16 --transform-skip --qp 3 < /dev/null",
                                      "--size 4 --dst --transform-skip --qp 3 < /dev/null",
                                      "--size 4 < /dev/null",
                                      "--qp 3 < /dev/null",
                                      "--size 4 --qp 3 --bitdepth 13 < /dev/null",
                                      "--size 4 --qp 3 --intra --inter < /dev/null",
                                      "--size 4 --qp 3 --bogus < /dev/null"};
    FILE *f = NULL;
    snprintf(cmd, sizeof(cmd), "%s.part", in);
    if ((f = fopen(cmd, "wb"))) {
        for (int i = 0; i < 33; i++)
            fputc(i, f); /* one block and one byte */
        fclose(f);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char args[512];
        snprintf(args, sizeof(args), bad[i], in);
        snprintf(cmd, sizeof(cmd), "%s xform --codec hevc %s > %s 2>/dev/null", exe, args, out);
        if (run(cmd) == 0) fprintf(stderr, "accepted: %s\n", args);
        CHECK(run(cmd) != 0);
    }
    snprintf(cmd, sizeof(cmd),
             "%s xform --codec hevc --size 4 --qp 60 --bitdepth 10 < /dev/null > %s", exe, out);
    CHECK_EQ_U(run(cmd), 0); /* qP 60 is valid at 10 bits */
    snprintf(cmd, sizeof(cmd), "%s xform --codec hevc --help > %s", exe, out);
    CHECK_EQ_U(run(cmd), 0);
    remove(in);
    remove(out);
    snprintf(cmd, sizeof(cmd), "%s.part", in);
    remove(cmd);
    vidk_close(&ctx);
}

int main(int argc, char **argv) {
    seed = test_seed();
    if (argc == 4 && !strcmp(argv[1], "--cli")) {
        build_matrix();
        test_cli(argv[2], argv[3]);
        return test_finish("test_hevc --cli");
    }
    test_matrix();
    test_conformance();
    test_properties();
    test_scaling();
    test_errors();
    test_real_frame();
    return test_finish("test_hevc");
}
