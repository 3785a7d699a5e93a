/* Conformance of the prediction functions of src/enc/enc_core.h (the coding loop's per-block
 * arithmetic) against an independent transcription of the standards' formulas:
 *
 *   H.264   8.3.1.2  Intra_4x4 and 8.3.2.2 Intra_8x8 (the nine modes, the substitution of
 *                    p[N..2N-1, -1], 8x8's reference sample filter), with the neighbouring
 *                    blocks' availability (6.4.11.4, 6.4.11.2, 6.4.12; slices)
 *           8.3.3    Intra_16x16 (V, H, DC with its four availability cases, Plane)
 *           8.3.4    chroma intra, 4:2:0 (DC per 4x4 chroma block, H, V, Plane)
 *           6.4.x    macroblock neighbour availability (one slice, raster order)
 *           8.4.2.2  luma (full-sample) and chroma (8.4.2.2.2, eighth-sample bilinear)
 *                    sample interpolation, reference positions clamped to the picture
 *   H.265   6.4.1    z-scan availability (6.5.2 MinTbAddrZs with 32x32 CTBs, 4x4 min TBs)
 *           8.4.4.2.2 reference sample substitution, 8.4.4.2.3 filtering (strong smoothing
 *                    off, luma only in 4:2:0), 8.4.4.2.4 planar, 8.4.4.2.5 DC with the
 *                    luma edge filter, 8.4.4.2.6 angular (modes 10 and 26 with the luma
 *                    boundary filter for nTbS < 32)
 *           8.5.3.3.3.3 chroma sample interpolation (4-tap fC, shift1 = 0, shift2 = 6,
 *                    shift3 = 6) followed by 8.5.3.3.4.2 default weighted prediction
 *                    (uni-prediction: Clip3(0, 255, (predSamples + 32) >> 6))
 *
 * The reference code below is written from the standards' text, in the standards'
 * notation (p[x][y], predSamples[x][y], ...), and does not call any of enc_core.h's
 * helpers. Random neighbours (seeded; the seed is printed, VIDK_TEST_SEED replays),
 * extreme values (0 / 255, binary 0-or-255 noise) and every availability combination
 * that the positions of a picture produce are tried. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc/enc_core.h"
#include "enc/enc_core_hevc.h"
#include "test_util.h"
#include "test_h264_ref.h"

static uint32_t g_rs; /* random state */

static int rnd(int n) {
    return (int)(test_rand(&g_rs) % (uint32_t)n);
}

/* ------------------------------------------------------------------ the standards' operators
 */

static int Clip3(int lo, int hi, int v) {
    return v < lo ? lo : v > hi ? hi : v;
}
static int Clip1(int v) {
    return Clip3(0, 255, v);
} /* BitDepth 8 */
/* x >> y: arithmetic right shift of the two's complement value (5.7), i.e. floor(x / 2^y),
 * written without relying on C's implementation-defined shift of negative values. */
static int Shr(int x, int y) {
    if (x >= 0) return x >> y;
    return -(int)((((unsigned)(-x)) + (1u << y) - 1u) >> y);
}
/* x & (2^k - 1) for the two's complement value, i.e. x mod 2^k in 0..2^k - 1. */
static int Low(int x, int k) {
    const int m = 1 << k, r = x % m;
    return r < 0 ? r + m : r;
}
static int Log2i(int n) {
    int k = 0;
    while ((1 << k) < n)
        k++;
    return k;
}

/* Sample generators: 0 uniform, 1 all 0, 2 all 255, 3 binary 0/255 noise, 4 near the
 * extremes (0..3 / 252..255), 5 uniform again (more random cases). */
#define NPAT 6
static int sample(int pat) {
    switch (pat) {
    case 1:
        return 0;
    case 2:
        return 255;
    case 3:
        return rnd(2) ? 255 : 0;
    case 4:
        return rnd(2) ? 252 + rnd(4) : rnd(4);
    default:
        return rnd(256);
    }
}

static void fill_plane(uint8_t *p, int w, int h, int stride, int pat) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            p[y * stride + x] = (uint8_t)sample(pat);
}

static int report_left = 40; /* mismatch lines printed at most */

static void mismatch(const char *what, int a, int b, int c, int d, int got, int want) {
    if (report_left-- > 0)
        fprintf(stderr, "  %s [%d %d %d %d]: got %d, want %d\n", what, a, b, c, d, got, want);
}

/* ================================================================== H.264 intra (8.3.3, 8.3.4)
 */

/* Neighbours of one block in the standard's notation: p[x, -1] (x = 0..N-1), p[-1, y]
 * (y = 0..N-1), p[-1, -1], each with its availability (mbAddrB, mbAddrA, mbAddrD). */
typedef struct H264P {
    int N;
    int availB, availA, availD;
    int top[16], left[16], corner;
} H264P;

static int h264_p(const H264P *s, int x, int y) /* p[x, y], x == -1 or y == -1 */
{
    if (x == -1 && y == -1) return s->corner;
    if (y == -1) return s->top[x];
    return s->left[y];
}

/* 8.3.3: Intra_16x16 prediction of Intra16x16PredMode m into pred[y * 16 + x]; returns 0
 * when the mode may not be used ("shall be used only when ... marked as available"). */
static int ref_i16(const H264P *s, int m, int *pred) {
    if (m == 0) { /* 8.3.3.1 Intra_16x16_Vertical: p[x, -1], x = 0..15 available */
        if (!s->availB) return 0;
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++)
                pred[y * 16 + x] = h264_p(s, x, -1);
        return 1;
    }
    if (m == 1) { /* 8.3.3.2 Intra_16x16_Horizontal: p[-1, y], y = 0..15 available */
        if (!s->availA) return 0;
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++)
                pred[y * 16 + x] = h264_p(s, -1, y);
        return 1;
    }
    if (m == 2) { /* 8.3.3.3 Intra_16x16_DC */
        int v;
        if (s->availA && s->availB) {
            int sum = 0;
            for (int i = 0; i < 16; i++)
                sum += h264_p(s, i, -1) + h264_p(s, -1, i);
            v = (sum + 16) >> 5;
        } else if (!s->availB && s->availA) {
            int sum = 0;
            for (int i = 0; i < 16; i++)
                sum += h264_p(s, -1, i);
            v = (sum + 8) >> 4;
        } else if (!s->availA && s->availB) {
            int sum = 0;
            for (int i = 0; i < 16; i++)
                sum += h264_p(s, i, -1);
            v = (sum + 8) >> 4;
        } else {
            v = 1 << (8 - 1);
        }
        for (int k = 0; k < 256; k++)
            pred[k] = v;
        return 1;
    }
    /* 8.3.3.4 Intra_16x16_Plane: p[x, -1] (x = -1..15) and p[-1, y] (y = 0..15) available */
    if (!(s->availA && s->availB && s->availD)) return 0;
    int H = 0, V = 0;
    for (int xp = 0; xp <= 7; xp++)
        H += (xp + 1) * (h264_p(s, 8 + xp, -1) - h264_p(s, 6 - xp, -1));
    for (int yp = 0; yp <= 7; yp++)
        V += (yp + 1) * (h264_p(s, -1, 8 + yp) - h264_p(s, -1, 6 - yp));
    const int a = 16 * (h264_p(s, -1, 15) + h264_p(s, 15, -1));
    const int b = Shr(5 * H + 32, 6), c = Shr(5 * V + 32, 6);
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            pred[y * 16 + x] = Clip1(Shr(a + b * (x - 7) + c * (y - 7) + 16, 5));
    return 1;
}

/* 8.3.4, ChromaArrayType 1 (MbWidthC = MbHeightC = 8): intra_chroma_pred_mode m (0 DC,
 * 1 Horizontal, 2 Vertical, 3 Plane) into pred[y * 8 + x]; 0 when not allowed. */
static int ref_chroma(const H264P *s, int m, int *pred) {
    if (m == 0) { /* 8.3.4.1 - 8.3.4.3: per chroma4x4BlkIdx */
        for (int blk = 0; blk < 4; blk++) {
            const int xO = (blk % 2) * 4,
                      yO = (blk / 2) * 4; /* InverseRasterScan(blk, 4, 4, 8) */
            /* all p[x + xO, -1] (x = 0..3) available?  all p[-1, y + yO] (y = 0..3)? */
            const int allT = s->availB, allL = s->availA;
            int sT = 0, sL = 0, v;
            for (int i = 0; i < 4; i++) {
                if (allT) sT += h264_p(s, i + xO, -1);
                if (allL) sL += h264_p(s, -1, i + yO);
            }
            if ((xO == 0 && yO == 0) || (xO > 0 && yO > 0)) {
                if (allT && allL)
                    v = (sT + sL + 4) >> 3;
                else if (!allT && allL)
                    v = (sL + 2) >> 2;
                else if (!allL && allT)
                    v = (sT + 2) >> 2;
                else
                    v = 1 << (8 - 1);
            } else if (xO > 0 && yO == 0) {
                if (allT)
                    v = (sT + 2) >> 2;
                else if (allL)
                    v = (sL + 2) >> 2;
                else
                    v = 1 << (8 - 1);
            } else { /* xO == 0 && yO > 0 */
                if (allL)
                    v = (sL + 2) >> 2;
                else if (allT)
                    v = (sT + 2) >> 2;
                else
                    v = 1 << (8 - 1);
            }
            for (int y = 0; y < 4; y++)
                for (int x = 0; x < 4; x++)
                    pred[(yO + y) * 8 + xO + x] = v;
        }
        return 1;
    }
    if (m == 1) { /* 8.3.4.2 Horizontal */
        if (!s->availA) return 0;
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 8; x++)
                pred[y * 8 + x] = h264_p(s, -1, y);
        return 1;
    }
    if (m == 2) { /* 8.3.4.3 Vertical */
        if (!s->availB) return 0;
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 8; x++)
                pred[y * 8 + x] = h264_p(s, x, -1);
        return 1;
    }
    /* 8.3.4.4 Plane, ChromaArrayType = 1: xCF = yCF = 0, b and c use 34 */
    if (!(s->availA && s->availB && s->availD)) return 0;
    const int xCF = 0, yCF = 0, MbWidthC = 8, MbHeightC = 8;
    int H = 0, V = 0;
    for (int xp = 0; xp <= 3 + xCF; xp++)
        H += (xp + 1) * (h264_p(s, 4 + xCF + xp, -1) - h264_p(s, 2 + xCF - xp, -1));
    for (int yp = 0; yp <= 3 + yCF; yp++)
        V += (yp + 1) * (h264_p(s, -1, 4 + yCF + yp) - h264_p(s, -1, 2 + yCF - yp));
    const int a = 16 * (h264_p(s, -1, MbHeightC - 1) + h264_p(s, MbWidthC - 1, -1));
    const int b = Shr((34 - 29 * 0) * H + 32, 6); /* ChromaArrayType == 3: no */
    const int c = Shr((34 - 29 * 0) * V + 32, 6); /* ChromaArrayType != 1: no */
    for (int y = 0; y < MbHeightC; y++)
        for (int x = 0; x < MbWidthC; x++)
            pred[y * 8 + x] = Clip1(Shr(a + b * (x - 3 - xCF) + c * (y - 3 - yCF) + 16, 5));
    return 1;
}

/* Compare enc_h264_pred16 / enc_h264_predc with the reference for one neighbourhood. */
static void h264_compare(const char *what, const H264P *s, const EncNb *nb) {
    int want[256];
    uint8_t got[256];
    for (int m = 0; m < 4; m++) {
        /* luma */
        if (s->N == 16) {
            memset(got, 0xa5, sizeof(got));
            const int ok_ref = ref_i16(s, m, want);
            const int ok = enc_h264_pred16(nb, m, got);
            if (ok != ok_ref) {
                fprintf(stderr,
                        "%s: Intra16x16 mode %d availability %d, want %d (A %d B %d D %d)\n",
                        what, m, ok, ok_ref, s->availA, s->availB, s->availD);
                CHECK(ok == ok_ref);
                continue;
            }
            if (!ok) continue;
            int bad = 0;
            for (int k = 0; k < 256; k++)
                if (got[k] != want[k]) {
                    if (!bad) mismatch(what, 16, m, k % 16, k / 16, got[k], want[k]);
                    bad++;
                }
            if (bad)
                fprintf(stderr, "%s: Intra16x16 mode %d: %d samples differ (A %d B %d)\n", what,
                        m, bad, s->availA, s->availB);
            CHECK(!bad);
        } else {
            memset(got, 0xa5, sizeof(got));
            const int ok_ref = ref_chroma(s, m, want);
            const int ok = enc_h264_predc(nb, m, got);
            if (ok != ok_ref) {
                fprintf(stderr,
                        "%s: chroma mode %d availability %d, want %d (A %d B %d D %d)\n", what,
                        m, ok, ok_ref, s->availA, s->availB, s->availD);
                CHECK(ok == ok_ref);
                continue;
            }
            if (!ok) continue;
            int bad = 0;
            for (int k = 0; k < 64; k++)
                if (got[k] != want[k]) {
                    if (!bad) mismatch(what, 8, m, k % 8, k / 8, got[k], want[k]);
                    bad++;
                }
            if (bad)
                fprintf(stderr, "%s: chroma mode %d: %d samples differ (A %d B %d)\n", what, m,
                        bad, s->availA, s->availB);
            CHECK(!bad);
        }
    }
}

/* The prediction functions on their own: every availability combination, neighbours that
 * are unavailable filled with garbage (they must not matter). */
static void h264_direct(void) {
    for (int N = 8; N <= 16; N += 8)
        for (int pat = 0; pat < NPAT; pat++)
            for (int rep = 0; rep < 200; rep++)
                for (int av = 0; av < 4; av++) {
                    H264P s;
                    EncNb nb;
                    memset(&s, 0, sizeof(s));
                    memset(&nb, 0, sizeof(nb));
                    s.N = N;
                    s.availA = av & 1;
                    s.availB = av >> 1;
                    s.availD = s.availA && s.availB; /* one slice: D exists iff A and B do */
                    for (int i = 0; i < N; i++) {
                        s.top[i] = s.availB ? sample(pat) : rnd(256);
                        s.left[i] = s.availA ? sample(pat) : rnd(256);
                        nb.top[i] = (uint8_t)s.top[i];
                        nb.left[i] = (uint8_t)s.left[i];
                    }
                    s.corner = s.availD ? sample(pat) : rnd(256);
                    nb.tl = (uint8_t)s.corner;
                    nb.has_top = s.availB;
                    nb.has_left = s.availA;
                    h264_compare(N == 16 ? "h264 direct luma" : "h264 direct chroma", &s, &nb);
                }
}

/* Through enc_h264_nb on a reconstructed picture: availability from 6.4.x for one slice
 * of macroblocks in raster order (mbAddrA = CurrMbAddr - 1 unless CurrMbAddr %
 * PicWidthInMbs == 0; mbAddrB = CurrMbAddr - PicWidthInMbs; mbAddrD = mbAddrB - 1 unless
 * CurrMbAddr % PicWidthInMbs == 0; available when >= 0). */
static void h264_frame(void) {
    static const int dims[][2] = {{1, 1}, {3, 2}, {2, 3}, {4, 4}};
    for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
        for (int pat = 0; pat < NPAT; pat++) {
            const int mw = dims[di][0], mh = dims[di][1], W = mw * 16, H = mh * 16;
            EncFrame f;
            memset(&f, 0, sizeof(f));
            f.codec = VIDK_CODEC_H264;
            f.W = W, f.H = H, f.uw = mw, f.uh = mh;
            uint8_t *pl[3];
            for (int p = 0; p < 3; p++) {
                const int w = p ? W / 2 : W, h = p ? H / 2 : H, stride = w + 7;
                pl[p] = malloc((size_t)stride * h);
                fill_plane(pl[p], w, h, stride, pat);
                f.rec[p] = pl[p];
                f.cs[p] = stride;
            }
            for (int mby = 0; mby < mh; mby++)
                for (int mbx = 0; mbx < mw; mbx++) {
                    const int CurrMbAddr = mby * mw + mbx;
                    const int availA = CurrMbAddr % mw != 0;
                    const int availB = CurrMbAddr - mw >= 0;
                    const int availD = CurrMbAddr - mw - 1 >= 0 && CurrMbAddr % mw != 0;
                    for (int p = 0; p < 3; p++) {
                        const int N = p ? 8 : 16, xM = mbx * N, yM = mby * N, st = f.cs[p];
                        H264P s;
                        EncNb nb;
                        memset(&s, 0, sizeof(s));
                        s.N = N, s.availA = availA, s.availB = availB, s.availD = availD;
                        for (int i = 0; i < N; i++) {
                            if (availB) s.top[i] = pl[p][(yM - 1) * st + xM + i];
                            if (availA) s.left[i] = pl[p][(yM + i) * st + xM - 1];
                        }
                        if (availD) s.corner = pl[p][(yM - 1) * st + xM - 1];
                        enc_h264_nb(&f, p, xM, yM, N, &nb);
                        char what[96];
                        snprintf(what, sizeof(what),
                                 "h264 %dx%d MBs, MB (%d, %d) plane %d pat %d", mw, mh, mbx,
                                 mby, p, pat);
                        h264_compare(what, &s, &nb);
                    }
                }
            for (int p = 0; p < 3; p++)
                free(pl[p]);
        }
}

/* ====================================================== H.264 Intra_4x4, Intra_8x8
 * (8.3.1.2, 8.3.2.2) */

/* The neighbours of an N x N luma block (N = 4, 8) in the standard's notation: p[x, -1] for
 * x = -1..2N-1 and p[-1, y] for y = 0..N-1, each marked available or not (before the
 * substitution of p[N..2N-1, -1], which ref_inxn does). */
typedef struct H264PN {
    int N;
    int top[17], avt[17]; /* p[x, -1] at top[x + 1] */
    int left[8], avl[8];
} H264PN;

static int pn(const H264PN *s, int x, int y) {
    return y == -1 ? s->top[x + 1] : s->left[y];
}

/* 8.3.2.2.1: the reference sample filtering of Intra_8x8, in place (p'). */
static void ref_filter8(H264PN *s) {
    H264PN o = *s;
    const int top = o.avt[1], left = o.avl[0], corner = o.avt[0];
    if (top) { /* p[x, -1], x = 0..15 available */
        s->top[1] = corner ? (pn(&o, -1, -1) + 2 * pn(&o, 0, -1) + pn(&o, 1, -1) + 2) >> 2
                           : (3 * pn(&o, 0, -1) + pn(&o, 1, -1) + 2) >> 2;
        for (int x = 1; x <= 14; x++)
            s->top[x + 1] =
                (pn(&o, x - 1, -1) + 2 * pn(&o, x, -1) + pn(&o, x + 1, -1) + 2) >> 2;
        s->top[16] = (pn(&o, 14, -1) + 3 * pn(&o, 15, -1) + 2) >> 2;
    }
    if (corner) {
        if (!top || !left) {
            if (top)
                s->top[0] = (3 * pn(&o, -1, -1) + pn(&o, 0, -1) + 2) >> 2;
            else if (left)
                s->top[0] = (3 * pn(&o, -1, -1) + pn(&o, -1, 0) + 2) >> 2;
        } else {
            s->top[0] = (pn(&o, 0, -1) + 2 * pn(&o, -1, -1) + pn(&o, -1, 0) + 2) >> 2;
        }
    }
    if (left) { /* p[-1, y], y = 0..7 available */
        s->left[0] = corner ? (pn(&o, -1, -1) + 2 * pn(&o, -1, 0) + pn(&o, -1, 1) + 2) >> 2
                            : (3 * pn(&o, -1, 0) + pn(&o, -1, 1) + 2) >> 2;
        for (int y = 1; y <= 6; y++)
            s->left[y] = (pn(&o, -1, y - 1) + 2 * pn(&o, -1, y) + pn(&o, -1, y + 1) + 2) >> 2;
        s->left[7] = (pn(&o, -1, 6) + 3 * pn(&o, -1, 7) + 2) >> 2;
    }
}

/* 8.3.1.2 (N = 4) / 8.3.2.2 (N = 8): Intra4x4PredMode / Intra8x8PredMode m into
 * pred[y * N + x]; 0 when a sample the mode reads is not available. Written per the text for
 * N = 8 (whose formulas give the 4x4 ones at N = 4: zVR < -1 only at x = 0, zHD < -1 only at
 * y = 0, zHU's ends at 2N - 3). */
static int ref_inxn(const H264PN *in, int m, int *pred) {
    H264PN s = *in;
    const int N = s.N;
    int rest = 0; /* any of p[N..2N-1, -1] available */
    for (int x = N; x < 2 * N; x++)
        rest |= s.avt[x + 1];
    if (!rest && s.avt[N])
        for (int x = N; x < 2 * N; x++)
            s.top[x + 1] = s.top[N], s.avt[x + 1] = 1;
    int top = 1, top2 = 1, left = 1; /* p[0..N-1, -1], p[0..2N-1, -1], p[-1, 0..N-1] */
    for (int i = 0; i < 2 * N; i++)
        top2 &= s.avt[i + 1], top &= i < N ? s.avt[i + 1] : 1;
    for (int i = 0; i < N; i++)
        left &= s.avl[i];
    const int corner = s.avt[0];
    const int need_top = m == 0 || m == 4 || m == 5 || m == 6;
    const int need_left = m == 1 || m == 4 || m == 5 || m == 6 || m == 8;
    if ((need_top && !top) || ((m == 3 || m == 7) && !top2) || (need_left && !left) ||
        (m >= 4 && m <= 6 && !corner))
        return 0;
    if (N == 8) ref_filter8(&s);
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            int v = 0;
            switch (m) {
            case 0: /* Vertical */
                v = pn(&s, x, -1);
                break;
            case 1: /* Horizontal */
                v = pn(&s, -1, y);
                break;
            case 2: { /* DC */
                int st = 0, sl = 0;
                for (int i = 0; i < N; i++) {
                    st += top ? pn(&s, i, -1) : 0;
                    sl += left ? pn(&s, -1, i) : 0;
                }
                const int l = N == 8 ? 3 : 2;
                v = top && left ? (st + sl + N) >> (l + 1)
                    : left      ? (sl + (N >> 1)) >> l
                    : top       ? (st + (N >> 1)) >> l
                                : 128;
                break;
            }
            case 3: /* Diagonal_Down_Left */
                if (x == N - 1 && y == N - 1)
                    v = (pn(&s, 2 * N - 2, -1) + 3 * pn(&s, 2 * N - 1, -1) + 2) >> 2;
                else
                    v = (pn(&s, x + y, -1) + 2 * pn(&s, x + y + 1, -1) + pn(&s, x + y + 2, -1) +
                         2) >>
                        2;
                break;
            case 4: /* Diagonal_Down_Right */
                if (x > y)
                    v = (pn(&s, x - y - 2, -1) + 2 * pn(&s, x - y - 1, -1) + pn(&s, x - y, -1) +
                         2) >>
                        2;
                else if (x < y)
                    v = (pn(&s, -1, y - x - 2) + 2 * pn(&s, -1, y - x - 1) + pn(&s, -1, y - x) +
                         2) >>
                        2;
                else
                    v = (pn(&s, 0, -1) + 2 * pn(&s, -1, -1) + pn(&s, -1, 0) + 2) >> 2;
                break;
            case 5: { /* Vertical_Right */
                const int z = 2 * x - y;
                if (z >= 0 && z % 2 == 0)
                    v = (pn(&s, x - (y >> 1) - 1, -1) + pn(&s, x - (y >> 1), -1) + 1) >> 1;
                else if (z > 0)
                    v = (pn(&s, x - (y >> 1) - 2, -1) + 2 * pn(&s, x - (y >> 1) - 1, -1) +
                         pn(&s, x - (y >> 1), -1) + 2) >>
                        2;
                else if (z == -1)
                    v = (pn(&s, -1, 0) + 2 * pn(&s, -1, -1) + pn(&s, 0, -1) + 2) >> 2;
                else
                    v = (pn(&s, -1, y - 2 * x - 1) + 2 * pn(&s, -1, y - 2 * x - 2) +
                         pn(&s, -1, y - 2 * x - 3) + 2) >>
                        2;
                break;
            }
            case 6: { /* Horizontal_Down */
                const int z = 2 * y - x;
                if (z >= 0 && z % 2 == 0)
                    v = (pn(&s, -1, y - (x >> 1) - 1) + pn(&s, -1, y - (x >> 1)) + 1) >> 1;
                else if (z > 0)
                    v = (pn(&s, -1, y - (x >> 1) - 2) + 2 * pn(&s, -1, y - (x >> 1) - 1) +
                         pn(&s, -1, y - (x >> 1)) + 2) >>
                        2;
                else if (z == -1)
                    v = (pn(&s, -1, 0) + 2 * pn(&s, -1, -1) + pn(&s, 0, -1) + 2) >> 2;
                else
                    v = (pn(&s, x - 2 * y - 1, -1) + 2 * pn(&s, x - 2 * y - 2, -1) +
                         pn(&s, x - 2 * y - 3, -1) + 2) >>
                        2;
                break;
            }
            case 7: /* Vertical_Left */
                if (y % 2 == 0)
                    v = (pn(&s, x + (y >> 1), -1) + pn(&s, x + (y >> 1) + 1, -1) + 1) >> 1;
                else
                    v = (pn(&s, x + (y >> 1), -1) + 2 * pn(&s, x + (y >> 1) + 1, -1) +
                         pn(&s, x + (y >> 1) + 2, -1) + 2) >>
                        2;
                break;
            default: { /* Horizontal_Up */
                const int z = x + 2 * y;
                if (z < 2 * N - 3 && z % 2 == 0)
                    v = (pn(&s, -1, y + (x >> 1)) + pn(&s, -1, y + (x >> 1) + 1) + 1) >> 1;
                else if (z < 2 * N - 3)
                    v = (pn(&s, -1, y + (x >> 1)) + 2 * pn(&s, -1, y + (x >> 1) + 1) +
                         pn(&s, -1, y + (x >> 1) + 2) + 2) >>
                        2;
                else if (z == 2 * N - 3)
                    v = (pn(&s, -1, N - 2) + 3 * pn(&s, -1, N - 1) + 2) >> 2;
                else
                    v = pn(&s, -1, N - 1);
                break;
            }
            }
            pred[y * N + x] = v;
        }
    return 1;
}

/* The slice of macroblock row r: slice k of n holds rows k * rows / n .. (k + 1) * rows / n
 * - 1. */
static int slice_of_row(int r, int rows, int n) {
    int k = 0;
    for (int q = 0; q < n; q++)
        if (q * rows / n <= r) k = q;
    return k;
}

/* Block idx (luma4x4BlkIdx / luma8x8BlkIdx) of N x N blocks of macroblock (mbx, mby) of an
 * mw x mh picture pl (stride st) in ns slices of whole rows: its position in the macroblock
 * (6.4.3 / 6.4.5) into *xO, *yO, its neighbours into s: availability from 6.4.12 (the
 * neighbouring location's macroblock: A, B, C = CurrMbAddr - PicWidthInMbs + 1, D; not in the
 * slice or not yet decoded: not available; inside the current macroblock a block later in
 * decoding order: not available; xN > 15 with yN >= 0: not available). */
static void ref_nbn(const uint8_t *pl, int st, int mw, int mh, int ns, int mbx, int mby, int N,
                    int idx, H264PN *s, int *xO, int *yO) {
    *xO = N == 4 ? 8 * ((idx / 4) % 2) + 4 * ((idx % 4) % 2) : 8 * (idx % 2);
    *yO = N == 4 ? 8 * ((idx / 4) / 2) + 4 * ((idx % 4) / 2) : 8 * (idx / 2);
    memset(s, 0, sizeof(*s));
    s->N = N;
    for (int k = 0; k < 3 * N + 1; k++) {
        /* k <= 2N: p[k - 1, -1]; else p[-1, k - 2N - 1] */
        const int up = k <= 2 * N;
        const int xN = *xO + (up ? k - 1 : -1);
        const int yN = *yO + (up ? -1 : k - 2 * N - 1);
        int mx = mbx, my = mby, av;
        if (xN > 15 && yN >= 0) {
            av = 0;
        } else if (xN >= 0 && xN <= 15 && yN >= 0) {
            const int idxN =
                N == 4 ? 8 * (yN / 8) + 4 * (xN / 8) + 2 * ((yN % 8) / 4) + ((xN % 8) / 4)
                       : 2 * (yN / 8) + (xN / 8);
            av = idxN < idx;
        } else {
            mx += xN < 0 ? -1 : xN > 15 ? 1 : 0;
            my += yN < 0 ? -1 : 0;
            av = mx >= 0 && mx < mw && my >= 0 &&
                 slice_of_row(my, mh, ns) == slice_of_row(mby, mh, ns);
        }
        const int v = av ? pl[(16 * my + (yN & 15)) * st + 16 * mx + (xN & 15)] : 0;
        if (up)
            s->top[k] = v, s->avt[k] = av;
        else
            s->left[k - 2 * N - 1] = v, s->avl[k - 2 * N - 1] = av;
    }
}

static const int inxn_dims[][3] = {{1, 1, 1}, {3, 2, 1}, {2, 3, 2}, {4, 4, 3}, {5, 3, 3}};
#define INXN_NDIMS ((int)(sizeof(inxn_dims) / sizeof(inxn_dims[0])))

/* Through enc_h264_nbn on a picture of random samples, every 4x4 and 8x8 block of every
 * macroblock, with 1..3 slices of whole rows (neighbours: ref_nbn), each mode against
 * ref_inxn. */
static void inxn_frame(void) {
    for (int N = 4; N <= 8; N += 4)
        for (int di = 0; di < INXN_NDIMS; di++)
            for (int pat = 0; pat < NPAT; pat++) {
                const int mw = inxn_dims[di][0], mh = inxn_dims[di][1], ns = inxn_dims[di][2];
                const int W = mw * 16, H = mh * 16, st = W + 5;
                EncFrame f;
                memset(&f, 0, sizeof(f));
                f.codec = VIDK_CODEC_H264;
                f.W = W, f.H = H, f.uw = mw, f.uh = mh, f.slices = ns;
                uint8_t *pl = malloc((size_t)st * H);
                fill_plane(pl, W, H, st, pat);
                f.rec[0] = pl, f.cs[0] = st;
                for (int mby = 0; mby < mh; mby++)
                    for (int mbx = 0; mbx < mw; mbx++)
                        for (int idx = 0; idx < (N == 4 ? 16 : 4); idx++) {
                            H264PN s;
                            int xO, yO;
                            ref_nbn(pl, st, mw, mh, ns, mbx, mby, N, idx, &s, &xO, &yO);
                            EncNbN nb;
                            enc_h264_nbn(&f, mbx, mby, N, xO / N, yO / N, &nb);
                            for (int m = 0; m < 9; m++) {
                                int want[64];
                                uint8_t got[64];
                                const int ok = ref_inxn(&s, m, want);
                                if (ok != enc_h264_inxn_ok(&nb, m)) {
                                    mismatch("h264 NxN mode allowed (N, idx, mode, mbx)", N,
                                             idx, m, mbx, enc_h264_inxn_ok(&nb, m), ok);
                                    test_failures++;
                                    continue;
                                }
                                if (!ok) continue;
                                enc_h264_predn(&nb, m, got);
                                for (int k = 0; k < N * N; k++)
                                    if (got[k] != want[k]) {
                                        mismatch("h264 NxN pred (N, mbx, mby, idx * 16 + mode)",
                                                 N, mbx, mby, idx * 16 + m, got[k], want[k]);
                                        test_failures++;
                                        break;
                                    }
                            }
                        }
                free(pl);
            }
}

/* The SATD of a 4x4 difference d[y][x] (docs/ENCODE.md §4): the Hadamard transform H d H
 * (H's rows 1 1 1 1, 1 1 -1 -1, 1 -1 -1 1, 1 -1 1 -1), (sum of |coefficients| + 1) / 2. */
static unsigned ref_satd(int d[4][4]) {
    static const int Hm[4][4] = {{1, 1, 1, 1}, {1, 1, -1, -1}, {1, -1, -1, 1}, {1, -1, 1, -1}};
    unsigned sum = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int c = 0;
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++)
                    c += Hm[i][a] * d[a][b] * Hm[j][b];
            sum += (unsigned)(c < 0 ? -c : c);
        }
    return (sum + 1) / 2;
}

/* The I_NxN estimate of an inter frame's macroblock (docs/ENCODE.md §4) written from the
 * text: the blocks in decoding order, each predicted from the source around it (ref_nbn,
 * ref_inxn), its cost the lowest over the allowed modes (the first) of the SATDs of its 4x4
 * blocks + (3 lambda b) >> 1 with b = 1 for the predicted mode (the lower of the left and
 * upper blocks' modes in the macroblock, 2 across its edge), else 4; the sum c as
 * floor(5 c / 4) + (3 lambda (5 + 1 + ENC_H264_INTRA_P_NXN_BIAS)) >> 1, packed << 2 | 2;
 * against enc_h264_nxn_est on random pictures, slices and lambdas. */
static void inxn_est_frame(void) {
    static const int lambdas[] = {0, 1, 5, 23};
    for (int N = 4; N <= 8; N += 4)
        for (int di = 0; di < INXN_NDIMS; di++)
            for (int pat = 0; pat < NPAT; pat++) {
                const int mw = inxn_dims[di][0], mh = inxn_dims[di][1], ns = inxn_dims[di][2];
                const int W = mw * 16, H = mh * 16, st = W + 3;
                const int lam = lambdas[(di + pat) % 4];
                EncFrame f;
                memset(&f, 0, sizeof(f));
                f.codec = VIDK_CODEC_H264;
                f.W = W, f.H = H, f.uw = mw, f.uh = mh, f.slices = ns, f.lambda = lam;
                uint8_t *pl = malloc((size_t)st * H);
                fill_plane(pl, W, H, st, pat);
                f.src[0] = pl, f.ss[0] = st;
                for (int mby = 0; mby < mh; mby++)
                    for (int mbx = 0; mbx < mw; mbx++) {
                        int mode[4][4]; /* the blocks' modes, per 4x4 block [y][x] */
                        unsigned sum = 0;
                        for (int idx = 0; idx < (N == 4 ? 16 : 4); idx++) {
                            H264PN s;
                            int xO, yO;
                            ref_nbn(pl, st, mw, mh, ns, mbx, mby, N, idx, &s, &xO, &yO);
                            const int ma = xO ? mode[yO / 4][xO / 4 - 1] : 2;
                            const int mb = yO ? mode[yO / 4 - 1][xO / 4] : 2;
                            const int pm = ma < mb ? ma : mb;
                            unsigned best = 0xffffffffu;
                            int bm = -1;
                            for (int m = 0; m < 9; m++) {
                                int pred[64];
                                if (!ref_inxn(&s, m, pred)) continue;
                                unsigned c = (3u * (unsigned)lam * (m == pm ? 1u : 4u)) >> 1;
                                for (int by = 0; by < N; by += 4)
                                    for (int bx = 0; bx < N; bx += 4) {
                                        int d[4][4];
                                        for (int y = 0; y < 4; y++)
                                            for (int x = 0; x < 4; x++)
                                                d[y][x] = pl[(16 * mby + yO + by + y) * st +
                                                             16 * mbx + xO + bx + x] -
                                                          pred[(by + y) * N + bx + x];
                                        c += ref_satd(d);
                                    }
                                if (c < best) best = c, bm = m;
                            }
                            for (int y = 0; y < N / 4; y++)
                                for (int x = 0; x < N / 4; x++)
                                    mode[yO / 4 + y][xO / 4 + x] = bm;
                            sum += best;
                        }
                        const unsigned want =
                            (sum * 5 / 4 +
                             ((3u * (unsigned)lam * (6u + ENC_H264_INTRA_P_NXN_BIAS)) >> 1))
                                << 2 |
                            2u;
                        const unsigned got = enc_h264_nxn_est(&f, mbx, mby, N);
                        if (got != want) {
                            mismatch("h264 NxN estimate (N, mbx, mby, pattern)", N, mbx, mby,
                                     pat, (int)got, (int)want);
                            test_failures++;
                        }
                    }
                free(pl);
            }
}

/* ================================================================== HEVC intra */

/* 6.5.2 (6-10): MinTbAddrZs for CtbLog2SizeY = 5, MinTbLog2SizeY = 2, one tile (CtbAddrRsToTs
 * is the identity). */
#define CTB_LOG2   5
#define MINTB_LOG2 2
typedef struct HevcPic {
    int W, H; /* pic_width / pic_height_in_luma_samples */
    int *zs;  /* [(y >> 2) * (W >> 2) + (x >> 2)] */
} HevcPic;

static void hevc_pic_init(HevcPic *g, int W, int H) {
    g->W = W, g->H = H;
    const int PicWidthInCtbsY = (W + (1 << CTB_LOG2) - 1) >> CTB_LOG2;
    const int wm = W >> MINTB_LOG2, hm = H >> MINTB_LOG2;
    g->zs = malloc(sizeof(int) * (size_t)wm * (size_t)hm);
    for (int y = 0; y < hm; y++)
        for (int x = 0; x < wm; x++) {
            const int tbX = (x << MINTB_LOG2) >> CTB_LOG2, tbY = (y << MINTB_LOG2) >> CTB_LOG2;
            const int ctbAddrRs = PicWidthInCtbsY * tbY + tbX;
            int v = ctbAddrRs << ((CTB_LOG2 - MINTB_LOG2) * 2);
            int pp = 0;
            for (int i = 0; i < CTB_LOG2 - MINTB_LOG2; i++) {
                const int m = 1 << i;
                pp += (m & x ? m * m : 0) + (m & y ? 2 * m * m : 0);
            }
            g->zs[y * wm + x] = v + pp;
        }
}

/* 6.4.1: availability of (xNbY, yNbY) for the block at (xCurr, yCurr) (one slice, one tile). */
static int hevc_available(const HevcPic *g, int xCurr, int yCurr, int xNbY, int yNbY) {
    if (xNbY < 0 || yNbY < 0 || xNbY >= g->W || yNbY >= g->H) return 0;
    const int wm = g->W >> MINTB_LOG2;
    const int zn = g->zs[(yNbY >> MINTB_LOG2) * wm + (xNbY >> MINTB_LOG2)];
    const int zc = g->zs[(yCurr >> MINTB_LOG2) * wm + (xCurr >> MINTB_LOG2)];
    return !(zn > zc);
}

/* The reference samples p[x][y], x = -1, y = -1..2*nTbS-1 and x = 0..2*nTbS-1, y = -1:
 * stored at P[x + 1][y + 1]. */
#define PMAX 65
typedef struct HevcP {
    int n;
    int v[PMAX][PMAX];
} HevcP;
#define PX(s, x, y) ((s)->v[(x) + 1][(y) + 1])

/* 8.4.4.2.2 for the transform block at (xTbCmp, yTbCmp) of component cIdx (4:2:0):
 * marking from 6.4.1 with (xCurr, yCurr) = (xTbY, yTbY), then the substitution. */
static void ref_hevc_refs(const HevcPic *g, const uint8_t *plane, int stride, int cIdx,
                          int xTbCmp, int yTbCmp, int nTbS, HevcP *out) {
    int avail[PMAX][PMAX];
    /* SubWidthC = SubHeightC = 2 */
    const int xTbY = cIdx ? xTbCmp * 2 : xTbCmp, yTbY = cIdx ? yTbCmp * 2 : yTbCmp;
    int any = 0;
    out->n = nTbS;
    for (int k = -1; k < 4 * nTbS; k++) { /* enumerate the 4 * nTbS + 1 positions */
        int x, y;
        if (k < 2 * nTbS) {
            x = -1, y = k; /* y = -1 .. 2 nTbS - 1 */
        } else {
            x = k - 2 * nTbS, y = -1; /* x = 0 .. 2 nTbS - 1 */
        }
        const int xNbCmp = xTbCmp + x, yNbCmp = yTbCmp + y;
        const int xNbY = cIdx ? xNbCmp * 2 : xNbCmp, yNbY = cIdx ? yNbCmp * 2 : yNbCmp;
        const int a = hevc_available(g, xTbY, yTbY, xNbY, yNbY);
        avail[x + 1][y + 1] = a;
        PX(out, x, y) = a ? plane[yNbCmp * stride + xNbCmp] : -1000;
        any |= a;
    }
    if (!any) {
        for (int y = -1; y < 2 * nTbS; y++)
            PX(out, -1, y) = 1 << (8 - 1);
        for (int x = 0; x < 2 * nTbS; x++)
            PX(out, x, -1) = 1 << (8 - 1);
        return;
    }
    /* 1. p[-1][nTbS*2-1] not available: search from (-1, 2nTbS-1) up to (-1, -1), then from
     *    (0, -1) to (2nTbS-1, -1); the first available sample is assigned. */
    if (!avail[0][2 * nTbS]) {
        int found = 0, val = 0;
        for (int y = 2 * nTbS - 1; y >= -1 && !found; y--)
            if (avail[0][y + 1]) found = 1, val = PX(out, -1, y);
        for (int x = 0; x < 2 * nTbS && !found; x++)
            if (avail[x + 1][0]) found = 1, val = PX(out, x, -1);
        PX(out, -1, 2 * nTbS - 1) = val;
    }
    /* 2. x = -1, y = nTbS*2-2 .. -1: p[x][y] = p[x][y + 1] when not available. */
    for (int y = 2 * nTbS - 2; y >= -1; y--)
        if (!avail[0][y + 1]) PX(out, -1, y) = PX(out, -1, y + 1);
    /* 3. x = 0 .. nTbS*2-1, y = -1: p[x][y] = p[x - 1][y] when not available. */
    for (int x = 0; x < 2 * nTbS; x++)
        if (!avail[x + 1][0]) PX(out, x, -1) = PX(out, x - 1, -1);
}

/* 8.4.4.2.6 Table 8-5 (intraPredAngle) and Table 8-6 (invAngle). */
static int intra_pred_angle(int mode) {
    static const int t[35] = {0,  0,  32,  26,  21,  17,  13,  9,   5,   2,   0,   -2,
                              -5, -9, -13, -17, -21, -26, -32, -26, -21, -17, -13, -9,
                              -5, -2, 0,   2,   5,   9,   13,  17,  21,  26,  32};
    return t[mode];
}
static int inv_angle(int mode) {
    static const int t[15] = {-4096, -1638, -910, -630, -482, -390,  -315, -256,
                              -315,  -390,  -482, -630, -910, -1638, -4096}; /* modes 11..25 */
    return mode >= 11 && mode <= 25 ? t[mode - 11] : 0;
}

/* 8.4.4.2.1 steps 3-4 for ChromaArrayType 1 (strong_intra_smoothing_enabled_flag = 0):
 * filtering (8.4.4.2.3, luma only), then the prediction of predModeIntra into
 * pred[y * nTbS + x] (written predSamples[x][y] in the standard). */
static void ref_hevc_pred(const HevcP *in, int mode, int cIdx, int *pred) {
    const int nTbS = in->n;
    HevcP pf = *in; /* the samples the prediction uses */
    const HevcP *p = in;
    if (cIdx == 0) {
        int filterFlag;
        if (mode == 1 /* INTRA_DC */ || nTbS == 4) {
            filterFlag = 0;
        } else {
            const int d26 = abs(mode - 26), d10 = abs(mode - 10);
            const int minDistVerHor = d26 < d10 ? d26 : d10;
            const int thres = nTbS == 8 ? 7 : nTbS == 16 ? 1 : 0; /* intraHorVerDistThres */
            filterFlag = minDistVerHor > thres;
        }
        if (filterFlag) { /* biIntFlag = 0 */
            PX(&pf, -1, 2 * nTbS - 1) = PX(in, -1, 2 * nTbS - 1);
            PX(&pf, 2 * nTbS - 1, -1) = PX(in, 2 * nTbS - 1, -1);
            for (int y = 2 * nTbS - 2; y >= 0; y--)
                PX(&pf, -1, y) =
                    (PX(in, -1, y + 1) + 2 * PX(in, -1, y) + PX(in, -1, y - 1) + 2) >> 2;
            PX(&pf, -1, -1) = (PX(in, -1, 0) + 2 * PX(in, -1, -1) + PX(in, 0, -1) + 2) >> 2;
            for (int x = 0; x <= 2 * nTbS - 2; x++)
                PX(&pf, x, -1) =
                    (PX(in, x - 1, -1) + 2 * PX(in, x, -1) + PX(in, x + 1, -1) + 2) >> 2;
            p = &pf;
        }
    }
    const int k = Log2i(nTbS);
#define PRED(x, y) pred[(y)*nTbS + (x)]
    if (mode == 0) { /* 8.4.4.2.4 INTRA_PLANAR */
        for (int y = 0; y < nTbS; y++)
            for (int x = 0; x < nTbS; x++)
                PRED(x, y) =
                    ((nTbS - 1 - x) * PX(p, -1, y) + (x + 1) * PX(p, nTbS, -1) +
                     (nTbS - 1 - y) * PX(p, x, -1) + (y + 1) * PX(p, -1, nTbS) + nTbS) >>
                    (k + 1);
        return;
    }
    if (mode == 1) { /* 8.4.4.2.5 INTRA_DC */
        int sum = 0;
        for (int i = 0; i < nTbS; i++)
            sum += PX(p, i, -1) + PX(p, -1, i);
        const int dcVal = (sum + nTbS) >> (k + 1);
        for (int y = 0; y < nTbS; y++)
            for (int x = 0; x < nTbS; x++)
                PRED(x, y) = dcVal;
        if (cIdx == 0 && nTbS < 32) {
            PRED(0, 0) = (PX(p, -1, 0) + 2 * dcVal + PX(p, 0, -1) + 2) >> 2;
            for (int x = 1; x < nTbS; x++)
                PRED(x, 0) = (PX(p, x, -1) + 3 * dcVal + 2) >> 2;
            for (int y = 1; y < nTbS; y++)
                PRED(0, y) = (PX(p, -1, y) + 3 * dcVal + 2) >> 2;
        }
        return;
    }
    /* 8.4.4.2.6 INTRA_ANGULAR2..34 */
    const int ang = intra_pred_angle(mode), inv = inv_angle(mode);
    int refbuf[3 * PMAX];
    int *ref = refbuf + PMAX; /* ref[-nTbS .. 2 nTbS] */
    if (mode >= 18) {
        for (int x = 0; x <= nTbS; x++)
            ref[x] = PX(p, -1 + x, -1);
        if (ang < 0) {
            if (Shr(nTbS * ang, 5) < -1)
                for (int x = Shr(nTbS * ang, 5); x <= -1; x++)
                    ref[x] = PX(p, -1, -1 + Shr(x * inv + 128, 8));
        } else {
            for (int x = nTbS + 1; x <= 2 * nTbS; x++)
                ref[x] = PX(p, -1 + x, -1);
        }
        for (int y = 0; y < nTbS; y++) {
            const int iIdx = Shr((y + 1) * ang, 5), iFact = Low((y + 1) * ang, 5);
            for (int x = 0; x < nTbS; x++)
                PRED(x, y) =
                    iFact
                        ? ((32 - iFact) * ref[x + iIdx + 1] + iFact * ref[x + iIdx + 2] + 16) >>
                              5
                        : ref[x + iIdx + 1];
        }
        if (mode == 26 && cIdx == 0 && nTbS < 32)
            for (int y = 0; y < nTbS; y++)
                PRED(0, y) = Clip1(PX(p, 0, -1) + Shr(PX(p, -1, y) - PX(p, -1, -1), 1));
    } else {
        for (int x = 0; x <= nTbS; x++)
            ref[x] = PX(p, -1, -1 + x);
        if (ang < 0) {
            if (Shr(nTbS * ang, 5) < -1)
                for (int x = Shr(nTbS * ang, 5); x <= -1; x++)
                    ref[x] = PX(p, -1 + Shr(x * inv + 128, 8), -1);
        } else {
            for (int x = nTbS + 1; x <= 2 * nTbS; x++)
                ref[x] = PX(p, -1, -1 + x);
        }
        for (int x = 0; x < nTbS; x++) {
            const int iIdx = Shr((x + 1) * ang, 5), iFact = Low((x + 1) * ang, 5);
            for (int y = 0; y < nTbS; y++)
                PRED(x, y) =
                    iFact
                        ? ((32 - iFact) * ref[y + iIdx + 1] + iFact * ref[y + iIdx + 2] + 16) >>
                              5
                        : ref[y + iIdx + 1];
        }
        if (mode == 10 && cIdx == 0 && nTbS < 32)
            for (int x = 0; x < nTbS; x++)
                PRED(x, 0) = Clip1(PX(p, -1, 0) + Shr(PX(p, x, -1) - PX(p, -1, -1), 1));
    }
#undef PRED
}

/* enc_core.h's reference line: line[i] = p[-1][2n-1-i] (i < 2n), line[2n] = p[-1][-1],
 * line[2n+1+i] = p[i][-1]. */
static void to_line(const HevcP *p, uint8_t *line) {
    const int n = p->n;
    for (int i = 0; i < 2 * n; i++) {
        line[i] = (uint8_t)PX(p, -1, 2 * n - 1 - i);
        line[2 * n + 1 + i] = (uint8_t)PX(p, i, -1);
    }
    line[2 * n] = (uint8_t)PX(p, -1, -1);
}

static const int hevc_modes[4] = {0, 1, 10, 26};

static void hevc_compare_pred(const char *what, const HevcP *p, int cIdx) {
    const int n = p->n;
    uint8_t line[4 * 16 + 1], got[16 * 16];
    int want[16 * 16];
    to_line(p, line);
    for (int mi = 0; mi < 4; mi++) {
        const int m = hevc_modes[mi];
        memset(got, 0xa5, sizeof(got));
        enc_hevc_pred(line, n, Log2i(n), m, cIdx == 0, got);
        ref_hevc_pred(p, m, cIdx, want);
        int bad = 0;
        for (int k = 0; k < n * n; k++)
            if (got[k] != want[k]) {
                if (!bad) mismatch(what, n, m, k % n, k / n, got[k], want[k]);
                bad++;
            }
        if (bad)
            fprintf(stderr, "%s: nTbS %d cIdx %d mode %d: %d samples differ\n", what, n, cIdx,
                    m, bad);
        CHECK(!bad);
    }
}

/* The prediction on its own: random / extreme reference samples, nTbS 4, 8, 16, luma and
 * chroma. (enc_hevc_pred's buffers hold 4 * 16 + 1 samples: nTbS 32 is not supported,
 * nor used by the loop.) */
static void hevc_direct(void) {
    for (int n = 4; n <= 16; n *= 2)
        for (int cIdx = 0; cIdx < 2; cIdx++)
            for (int pat = 0; pat < NPAT; pat++)
                for (int rep = 0; rep < 150; rep++) {
                    HevcP p;
                    p.n = n;
                    for (int y = -1; y < 2 * n; y++)
                        PX(&p, -1, y) = sample(pat);
                    for (int x = 0; x < 2 * n; x++)
                        PX(&p, x, -1) = sample(pat);
                    /* Now and then a step between the top row and the left column, to
                     * saturate the boundary filters. */
                    if (rep % 3 == 1) {
                        const int lo = rnd(2) ? 0 : 255;
                        for (int y = -1; y < 2 * n; y++)
                            PX(&p, -1, y) = lo;
                        PX(&p, -1, -1) = rnd(2) ? lo : 255 - lo;
                    }
                    hevc_compare_pred(cIdx ? "hevc direct chroma" : "hevc direct luma", &p,
                                      cIdx);
                }
}

/* Through enc_hevc_refs on reconstructed pictures: every 16x16 CU of every CTU (the loop's
 * intra CUs), luma nTbS 16 and both chroma planes nTbS 8. */
static void hevc_frame(void) {
    static const int dims[][2] = {{32, 32}, {64, 32}, {32, 64}, {96, 64}, {64, 96}};
    for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
        for (int pat = 0; pat < NPAT; pat++) {
            const int W = dims[di][0], H = dims[di][1];
            HevcPic g;
            hevc_pic_init(&g, W, H);
            EncFrame f;
            memset(&f, 0, sizeof(f));
            f.codec = VIDK_CODEC_HEVC;
            f.W = W, f.H = H, f.uw = W / 32, f.uh = H / 32;
            uint8_t *pl[3];
            for (int p = 0; p < 3; p++) {
                const int w = p ? W / 2 : W, h = p ? H / 2 : H, stride = w + 5;
                pl[p] = malloc((size_t)stride * h);
                fill_plane(pl[p], w, h, stride, pat);
                f.rec[p] = pl[p];
                f.cs[p] = stride;
            }
            for (int cy = 0; cy < H / 32; cy++)
                for (int cx = 0; cx < W / 32; cx++)
                    for (int q = 0; q < 4; q++) {
                        const int xc = cx * 32 + (q & 1) * 16, yc = cy * 32 + (q >> 1) * 16;
                        for (int p = 0; p < 3; p++) {
                            const int n = p ? 8 : 16, xt = p ? xc / 2 : xc,
                                      yt = p ? yc / 2 : yc;
                            HevcP ref;
                            uint8_t line[65], want[65];
                            ref_hevc_refs(&g, pl[p], f.cs[p], p ? 1 : 0, xt, yt, n, &ref);
                            to_line(&ref, want);
                            memset(line, 0xa5, sizeof(line));
                            enc_hevc_refs(&f, p, xt, yt, n, xc, yc, line);
                            char what[112];
                            snprintf(what, sizeof(what),
                                     "hevc %dx%d CU (%d, %d) plane %d pat %d", W, H, xc, yc, p,
                                     pat);
                            int bad = 0;
                            for (int i = 0; i < 4 * n + 1; i++)
                                if (line[i] != want[i]) {
                                    if (!bad) mismatch(what, n, i, xc, yc, line[i], want[i]);
                                    bad++;
                                }
                            if (bad)
                                fprintf(stderr, "%s: %d reference samples differ (8.4.4.2.2)\n",
                                        what, bad);
                            CHECK(!bad);
                            hevc_compare_pred(what, &ref, p ? 1 : 0);
                        }
                    }
            for (int p = 0; p < 3; p++)
                free(pl[p]);
            free(g.zs);
        }
}

/* Known availability patterns (a check of the reference itself against the picture
 * geometry): in a 2x2-CTU picture the top-right 16x16 CU of CTU 0 has no below-left, the
 * bottom-right CU no above-right, CTU 1's top-left CU has a below-left (CTU 0's bottom-
 * right CU), CTU 2's top-right CU has an above-right (CTU 1). */
static void hevc_avail_known(void) {
    HevcPic g;
    hevc_pic_init(&g, 64, 64);
    CHECK(!hevc_available(&g, 16, 0, 15, 16));  /* CU 1: below-left in CU 2 */
    CHECK(hevc_available(&g, 16, 0, 15, 15));   /* CU 1: left in CU 0 */
    CHECK(hevc_available(&g, 0, 16, 16, 15));   /* CU 2: above-right in CU 1 */
    CHECK(!hevc_available(&g, 16, 16, 32, 15)); /* CU 3: above-right in CTU 1 */
    CHECK(hevc_available(&g, 32, 0, 31, 16));   /* CTU 1 CU 0: below-left in CTU 0 */
    CHECK(hevc_available(&g, 16, 32, 32, 31));  /* CTU 2 CU 1: above-right in CTU 1 */
    CHECK(!hevc_available(&g, 32, 16, 31, 32)); /* CTU 1 CU 2: below-left in CTU 2 */
    CHECK(!hevc_available(&g, 0, 0, -1, 0) && !hevc_available(&g, 48, 0, 64, -1));
    free(g.zs);
}

/* ================================================================== motion compensation */

/* H.264 8.4.2.2.2, ChromaArrayType 1, frame macroblocks: mvCLX = mvLX (8.4.1.4) in units
 * of 1/8 chroma sample; (xC, yC) is the chroma sample position in the picture. */
static int ref_h264_chroma(const uint8_t *r, int stride, int wC, int hC, int xC, int yC,
                           VidkMv mv) {
    const int mvCx = mv.x, mvCy = mv.y;
    const int xIntC = xC + Shr(mvCx, 3), yIntC = yC + Shr(mvCy, 3);
    const int xFracC = Low(mvCx, 3), yFracC = Low(mvCy, 3);
    const int xA = Clip3(0, wC - 1, xIntC), xB = Clip3(0, wC - 1, xIntC + 1);
    const int yA = Clip3(0, hC - 1, yIntC), yC1 = Clip3(0, hC - 1, yIntC + 1);
    const int A = r[yA * stride + xA], B = r[yA * stride + xB];
    const int C = r[yC1 * stride + xA], D = r[yC1 * stride + xB];
    return ((8 - xFracC) * (8 - yFracC) * A + xFracC * (8 - yFracC) * B +
            (8 - xFracC) * yFracC * C + xFracC * yFracC * D + 32) >>
           6;
}

/* H.265 Table 8-13: fC[xFracC][i]. */
static const int fC[8][4] = {{0, 64, 0, 0},    {-2, 58, 10, -2}, {-4, 54, 16, -2},
                             {-6, 46, 28, -4}, {-4, 36, 36, -4}, {-4, 28, 46, -6},
                             {-2, 16, 54, -4}, {-2, 10, 58, -2}};

/* H.265 8.5.3.3.3.3 (BitDepthC 8: shift1 = 0, shift2 = 6, shift3 = 6), mvCLX = mvLX for
 * 4:2:0 in 1/8 chroma sample units; then 8.5.3.3.4.2 default weighted sample prediction,
 * uni-prediction: Clip3(0, 255, (predSamplesL0 + offset1) >> shift1), shift1 = 14 - 8,
 * offset1 = 1 << (shift1 - 1). */
static int ref_hevc_chroma(const uint8_t *r, int stride, int wC, int hC, int xC, int yC,
                           VidkMv mv) {
    const int shift1 = 8 - 8, shift2 = 6, shift3 = 14 - 8;
    const int mvCx = mv.x, mvCy = mv.y;
    const int xIntC = xC + Shr(mvCx, 3), yIntC = yC + Shr(mvCy, 3);
    const int xFracC = Low(mvCx, 3), yFracC = Low(mvCy, 3);
#define REFC(xx, yy) ((int)r[Clip3(0, hC - 1, (yy)) * stride + Clip3(0, wC - 1, (xx))])
    int predSample;
    if (xFracC == 0 && yFracC == 0) {
        predSample = REFC(xIntC, yIntC) << shift3;
    } else if (yFracC == 0) {
        int s = 0;
        for (int i = 0; i < 4; i++)
            s += fC[xFracC][i] * REFC(xIntC + i - 1, yIntC);
        predSample = Shr(s, shift1);
    } else if (xFracC == 0) {
        int s = 0;
        for (int i = 0; i < 4; i++)
            s += fC[yFracC][i] * REFC(xIntC, yIntC + i - 1);
        predSample = Shr(s, shift1);
    } else {
        int temp[4];
        for (int n = 0; n < 4; n++) {
            int s = 0;
            for (int i = 0; i < 4; i++)
                s += fC[xFracC][i] * REFC(xIntC + i - 1, yIntC + n - 1);
            temp[n] = Shr(s, shift1);
        }
        int s = 0;
        for (int i = 0; i < 4; i++)
            s += fC[yFracC][i] * temp[i];
        predSample = Shr(s, shift2);
    }
#undef REFC
    const int wshift = 14 - 8, offset1 = 1 << (wshift - 1);
    return Clip3(0, 255, Shr(predSample + offset1, wshift));
}

/* A vector in quarter samples: any fraction for H.264, whole samples (x 4) for HEVC. */
static VidkMv rand_mv(int W, int codec) {
    VidkMv v;
    const int lim = rnd(4) == 0 ? W + 8 : 9; /* mostly near, sometimes far outside */
    v.x = (int16_t)(4 * (rnd(2 * lim + 1) - lim) + (codec ? 0 : rnd(4)));
    v.y = (int16_t)(4 * (rnd(2 * lim + 1) - lim) + (codec ? 0 : rnd(4)));
    return v;
}

/* The half-sample planes of f's luma reference (EncFrame.qpl), filled by the loop's
 * enc_h264_qpl_fill; ref_luma checks what is read from them. */
static uint8_t *qpl_make(EncFrame *f) {
    f->qps = f->W + 5, f->qpn = (ptrdiff_t)f->qps * (f->H + 5);
    uint8_t *q = malloc((size_t)f->qpn * 4);
    if (!q) return NULL;
    for (int y = -3; y <= f->H + 1; y++)
        for (int x = -3; x <= f->W + 1; x++)
            enc_h264_qpl_fill(f, q, x, y);
    f->qpl = q;
    return q;
}

static void mc_blocks(void) {
    static const int dims[][2] = {{32, 32}, {64, 48}, {96, 64}};
    for (int codec = 0; codec < 2; codec++)
        for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
            for (int pat = 0; pat < NPAT; pat++) {
                const int W = dims[di][0], H = dims[di][1];
                EncFrame f;
                memset(&f, 0, sizeof(f));
                f.codec = codec ? VIDK_CODEC_HEVC : VIDK_CODEC_H264;
                f.W = W, f.H = H;
                uint8_t *pl[3];
                for (int p = 0; p < 3; p++) {
                    const int w = p ? W / 2 : W, h = p ? H / 2 : H, stride = w + 3;
                    pl[p] = malloc((size_t)stride * h);
                    fill_plane(pl[p], w, h, stride, pat);
                    f.ref[p] = pl[p];
                    f.rs[p] = stride;
                }
                uint8_t *qp = qpl_make(&f);
                CHECK(qp != NULL);
                for (int rep = 0; rep < 300 && qp; rep++) {
                    /* a luma block at a multiple of 4, its chroma at half; sizes 4..16 */
                    const int bw = 4 << rnd(3), bh = 4 << rnd(3);
                    const int x = 4 * rnd((W - bw) / 4 + 1), y = 4 * rnd((H - bh) / 4 + 1);
                    VidkMv mv = rand_mv(W, codec);
                    if (rep < 16 && !codec) { /* all sixteen quarter-sample phases */
                        mv.x = (int16_t)((mv.x & ~3) + (rep & 3));
                        mv.y = (int16_t)((mv.y & ~3) + (rep >> 2));
                    }
                    uint8_t got[16 * 16];
                    char what[96];
                    snprintf(what, sizeof(what), "%s MC %dx%d at (%d, %d) mv (%d, %d) pat %d",
                             codec ? "hevc" : "h264", bw, bh, x, y, mv.x, mv.y, pat);
                    int bad = 0;
                    enc_mc_luma(&f, x, y, bw, bh, mv, got, 16);
                    for (int j = 0; j < bh; j++)
                        for (int i = 0; i < bw; i++) {
                            const int want = ref_luma(pl[0], f.rs[0], W, H, x + i, y + j, mv);
                            if (got[j * 16 + i] != want) {
                                if (!bad) mismatch(what, 0, 0, i, j, got[j * 16 + i], want);
                                bad++;
                            }
                        }
                    for (int p = 1; p < 3; p++) {
                        enc_mc_chroma(&f, p, x / 2, y / 2, bw / 2, bh / 2, mv, got, 16);
                        for (int j = 0; j < bh / 2; j++)
                            for (int i = 0; i < bw / 2; i++) {
                                const int want =
                                    codec ? ref_hevc_chroma(pl[p], f.rs[p], W / 2, H / 2,
                                                            x / 2 + i, y / 2 + j, mv)
                                          : ref_h264_chroma(pl[p], f.rs[p], W / 2, H / 2,
                                                            x / 2 + i, y / 2 + j, mv);
                                if (got[j * 16 + i] != want) {
                                    if (!bad) mismatch(what, p, 0, i, j, got[j * 16 + i], want);
                                    bad++;
                                }
                            }
                    }
                    if (bad) fprintf(stderr, "%s: %d samples differ\n", what, bad);
                    CHECK(!bad);
                }
                free(qp);
                for (int p = 0; p < 3; p++)
                    free(pl[p]);
            }
}

/* enc_mc_area: a vector per 4x4 luma block over a 32x32 area; every luma sample and every
 * chroma sample (whose co-located luma sample (2x, 2y) lies in one 4x4 partition) is
 * predicted with its partition's vector. */
static void mc_area(void) {
    for (int codec = 0; codec < 2; codec++)
        for (int pat = 0; pat < NPAT; pat++)
            for (int rep = 0; rep < 20; rep++) {
                const int W = 64, H = 64;
                EncFrame f;
                memset(&f, 0, sizeof(f));
                f.codec = codec ? VIDK_CODEC_HEVC : VIDK_CODEC_H264;
                f.W = W, f.H = H;
                uint8_t *rp[3], *cp[3];
                for (int p = 0; p < 3; p++) {
                    const int w = p ? W / 2 : W, h = p ? H / 2 : H;
                    rp[p] = malloc((size_t)w * h);
                    cp[p] = calloc((size_t)w * h, 1);
                    fill_plane(rp[p], w, h, w, pat);
                    f.ref[p] = rp[p], f.rs[p] = w;
                    f.rec[p] = cp[p], f.cs[p] = w;
                }
                uint8_t *qp = qpl_make(&f);
                CHECK(qp != NULL);
                if (!qp) return;
                VidkMv mv4[64];
                for (int k = 0; k < 64; k++)
                    mv4[k] = rand_mv(W, codec);
                const int x0 = 32 * rnd(2), y0 = 32 * rnd(2);
                enc_mc_area(&f, x0, y0, 32, 32, mv4, 8, 7);
                int bad = 0;
                for (int p = 0; p < 3; p++) {
                    const int sh = p ? 1 : 0, w = W >> sh;
                    for (int j = 0; j < 32 >> sh; j++)
                        for (int i = 0; i < 32 >> sh; i++) {
                            const int xl = (i << sh),
                                      yl = (j << sh); /* luma offset in the area */
                            const VidkMv mv = mv4[(yl / 4) * 8 + xl / 4];
                            const int xs = (x0 >> sh) + i, ys = (y0 >> sh) + j;
                            const int want =
                                !p      ? ref_luma(rp[0], w, W, H, xs, ys, mv)
                                : codec ? ref_hevc_chroma(rp[p], w, W / 2, H / 2, xs, ys, mv)
                                        : ref_h264_chroma(rp[p], w, W / 2, H / 2, xs, ys, mv);
                            if (cp[p][ys * w + xs] != want) {
                                if (!bad)
                                    mismatch(codec ? "hevc mc_area" : "h264 mc_area", p, rep, i,
                                             j, cp[p][ys * w + xs], want);
                                bad++;
                            }
                        }
                }
                CHECK(!bad);
                free(qp);
                for (int p = 0; p < 3; p++) {
                    free(rp[p]);
                    free(cp[p]);
                }
            }
}

/* Worked values (by hand from the formulas) that pin the reference code itself. */
static void known_values(void) {
    /* HEVC chroma, both fractions 1/2, a single 255 at the centre of a 0 plane: temp rows
     * {0, 36*255, 36*255, 0} or 0; 36*36*255 >> 6 = 5163, (5163 + 32) >> 6 = 81. */
    uint8_t r[8 * 8];
    memset(r, 0, sizeof(r));
    r[3 * 8 + 3] = 255;
    VidkMv h = {4, 4}; /* half a chroma sample each way (eighth samples) */
    CHECK(ref_hevc_chroma(r, 8, 8, 8, 2, 2, h) == 81);
    /* negative taps: 255 neighbours of a 0 sample, 1-D: -4 * 255 * 2 < 0 -> clipped to 0 */
    memset(r, 255, sizeof(r));
    r[3 * 8 + 3] = 0;
    r[3 * 8 + 4] = 0;
    VidkMv hx = {4, 0};
    CHECK(ref_hevc_chroma(r, 8, 8, 8, 3, 3, hx) == 0);
    /* H.264 bilinear at (1/2, 1/2) of {255, 0; 0, 0}: (16 * 255 + 32) >> 6 = 64 */
    memset(r, 0, sizeof(r));
    r[0] = 255;
    CHECK(ref_h264_chroma(r, 8, 8, 8, 0, 0, h) == 64);
    /* H.264 luma, every row 0 0 0 255 0 0 0 0: the half sample right of x = 0 has the 255 as
     * its last tap, b = (255 + 16) >> 5 = 8; right of x = 1 as its fifth, -5 * 255 -> 0;
     * right of x = 2 as its fourth, (20 * 255 + 16) >> 5 = 159; a = (G + b + 1) >> 1 = 4 at
     * x = 0; j = b where the rows are equal ((32 * 255 + 512) >> 10 = 8); c at x = 2 = (255 +
     * 159 + 1) >> 1 = 207; a vertical quarter of a column of equal samples is that sample. */
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            r[y * 8 + x] = x == 3 ? 255 : 0;
    const VidkMv q20 = {2, 0}, q10 = {1, 0}, q22 = {2, 2}, q30 = {3, 0}, q01 = {0, 1};
    CHECK(ref_luma(r, 8, 8, 8, 0, 4, q20) == 8 && ref_luma(r, 8, 8, 8, 1, 4, q20) == 0);
    CHECK(ref_luma(r, 8, 8, 8, 2, 4, q20) == 159 && ref_luma(r, 8, 8, 8, 0, 4, q10) == 4);
    CHECK(ref_luma(r, 8, 8, 8, 0, 4, q22) == 8 && ref_luma(r, 8, 8, 8, 2, 4, q30) == 207);
    CHECK(ref_luma(r, 8, 8, 8, 3, 0, q01) == 255 && ref_luma(r, 8, 8, 8, 0, 7, q01) == 0);
    /* the packed source codes of the loop against the table of Table 8-12 */
    for (int t = 0; t < 16; t++)
        for (int k = 0; k < 2; k++)
            CHECK(enc_qcode(t, k) == vidk_h264_qpel_src_h[t][k]);
    /* Shr / Low on negative values */
    CHECK(Shr(-1, 1) == -1 && Shr(-2, 1) == -1 && Shr(-3, 1) == -2 && Low(-1, 3) == 7 &&
          Low(-8, 3) == 0);
}

int main(void) {
    g_rs = test_seed();
    known_values();
    hevc_avail_known();
    h264_direct();
    h264_frame();
    inxn_frame();
    inxn_est_frame();
    hevc_direct();
    hevc_frame();
    mc_blocks();
    mc_area();
    return test_finish("test_enc_pred");
}
