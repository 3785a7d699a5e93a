/* The coding loop's HEVC arithmetic (docs/ENCODE.md): the CTU's partition decision and the
 * HEVC intra prediction, shared by the CPU encoder and the CUDA encoder like the rest of
 * enc_core.h (its macros and helpers), kept apart to keep each file readable. */
#ifndef VIDK_ENC_CORE_HEVC_H
#define VIDK_ENC_CORE_HEVC_H

#include "enc_core.h"

/* ------------------------------------------------------------------ HEVC decision */

typedef struct EncHevcDec {
    int cu32;    /* 1: one 32x32 CU */
    int cu16[4]; /* per 16x16 (z = raster): 0 2Nx2N, 1 2NxN, 2 Nx2N, 3 four 8x8 CUs */
    int cu8[16]; /* per 8x8 CU (index 4 * q + z): 0 2Nx2N, 1 2NxN, 2 Nx2N */
    int np;
    VidkMv pmv[32];
    VidkMv mv4[64]; /* per 4x4, raster in the CTU (8 per row) */
    unsigned bits_mode;
} EncHevcDec;

/* Fill the 4x4 vectors of a w x h area at (x4, y4) (4x4 units in the CTU) with the whole-sample
 * vector v, in quarter samples as every vector of the loop (x 4). */
ENC_FN void enc_fill4(VidkMv *mv4, int x4, int y4, int w4, int h4, VidkMv v) {
    const VidkMv q = {(int16_t)(4 * v.x), (int16_t)(4 * v.y)};
    for (int j = 0; j < h4; j++)
        for (int i = 0; i < w4; i++)
            mv4[(y4 + j) * 8 + x4 + i] = q;
}

ENC_FN void enc_hevc_decide(const EncFrame *f, int cx, int cy, EncHevcDec *d) {
    const uint32_t lam = (uint32_t)f->lambda;
    /* Syntax bits: split flag 1; part_mode 2Nx2N 1, 2NxN / Nx2N 3. */
    uint32_t split = lam; /* the split flag of the CTU */
    uint32_t c16[4][4];
    int best16[4], best8[16];
    for (int q = 0; q < 4; q++) {
        const int mx = 2 * cx + (q & 1), my = 2 * cy + (q >> 1); /* 16x16 block */
        c16[q][0] = enc_me_at(f, VIDK_BLOCK_16x16, mx, my).cost + lam * 2;
        c16[q][1] = enc_me_at(f, VIDK_BLOCK_16x8, mx, 2 * my).cost +
                    enc_me_at(f, VIDK_BLOCK_16x8, mx, 2 * my + 1).cost + lam * 4;
        c16[q][2] = enc_me_at(f, VIDK_BLOCK_8x16, 2 * mx, my).cost +
                    enc_me_at(f, VIDK_BLOCK_8x16, 2 * mx + 1, my).cost + lam * 4;
        c16[q][3] = lam; /* split flag of the 16x16 CU */
        for (int z = 0; z < 4; z++) {
            const int qx = 2 * mx + (z & 1), qy = 2 * my + (z >> 1); /* 8x8 CU */
            uint32_t c[3];
            c[0] = enc_me_at(f, VIDK_BLOCK_8x8, qx, qy).cost + lam;
            c[1] = enc_me_at(f, VIDK_BLOCK_8x4, qx, 2 * qy).cost +
                   enc_me_at(f, VIDK_BLOCK_8x4, qx, 2 * qy + 1).cost + lam * 3;
            c[2] = enc_me_at(f, VIDK_BLOCK_4x8, 2 * qx, qy).cost +
                   enc_me_at(f, VIDK_BLOCK_4x8, 2 * qx + 1, qy).cost + lam * 3;
            int b = 0;
            for (int k = 1; k < 3; k++)
                if (c[k] < c[b]) b = k;
            best8[4 * q + z] = b;
            c16[q][3] += c[b];
        }
        int b = 0;
        for (int k = 1; k < 4; k++)
            if (c16[q][k] < c16[q][b]) b = k;
        best16[q] = b;
        split += c16[q][b];
    }
    const uint32_t c32 = enc_me_at(f, VIDK_BLOCK_32x32, cx, cy).cost + lam * 2;
    d->np = 0;
    d->cu32 = c32 <= split;
    if (d->cu32) {
        const VidkMv v = enc_me_at(f, VIDK_BLOCK_32x32, cx, cy).mv;
        d->bits_mode = 2;
        d->pmv[d->np++] = v;
        enc_fill4(d->mv4, 0, 0, 8, 8, v);
        for (int q = 0; q < 4; q++)
            d->cu16[q] = 0;
        for (int k = 0; k < 16; k++)
            d->cu8[k] = 0;
        return;
    }
    d->bits_mode = 1;
    for (int q = 0; q < 4; q++) {
        const int mx = 2 * cx + (q & 1), my = 2 * cy + (q >> 1);
        const int x4 = (q & 1) * 4, y4 = (q >> 1) * 4;
        const int m = best16[q];
        d->cu16[q] = m;
        if (m == 0) {
            const VidkMv v = enc_me_at(f, VIDK_BLOCK_16x16, mx, my).mv;
            d->bits_mode += 2;
            d->pmv[d->np++] = v;
            enc_fill4(d->mv4, x4, y4, 4, 4, v);
        } else if (m == 1) {
            d->bits_mode += 4;
            for (int h = 0; h < 2; h++) {
                const VidkMv v = enc_me_at(f, VIDK_BLOCK_16x8, mx, 2 * my + h).mv;
                d->pmv[d->np++] = v;
                enc_fill4(d->mv4, x4, y4 + 2 * h, 4, 2, v);
            }
        } else if (m == 2) {
            d->bits_mode += 4;
            for (int h = 0; h < 2; h++) {
                const VidkMv v = enc_me_at(f, VIDK_BLOCK_8x16, 2 * mx + h, my).mv;
                d->pmv[d->np++] = v;
                enc_fill4(d->mv4, x4 + 2 * h, y4, 2, 4, v);
            }
        } else {
            d->bits_mode += 1;
            for (int z = 0; z < 4; z++) {
                const int qx = 2 * mx + (z & 1), qy = 2 * my + (z >> 1);
                const int a4 = x4 + (z & 1) * 2, b4 = y4 + (z >> 1) * 2;
                const int s = best8[4 * q + z];
                d->cu8[4 * q + z] = s;
                if (s == 0) {
                    const VidkMv v = enc_me_at(f, VIDK_BLOCK_8x8, qx, qy).mv;
                    d->bits_mode += 1;
                    d->pmv[d->np++] = v;
                    enc_fill4(d->mv4, a4, b4, 2, 2, v);
                } else if (s == 1) {
                    d->bits_mode += 3;
                    for (int h = 0; h < 2; h++) {
                        const VidkMv v = enc_me_at(f, VIDK_BLOCK_8x4, qx, 2 * qy + h).mv;
                        d->pmv[d->np++] = v;
                        enc_fill4(d->mv4, a4, b4 + h, 2, 1, v);
                    }
                } else {
                    d->bits_mode += 3;
                    for (int h = 0; h < 2; h++) {
                        const VidkMv v = enc_me_at(f, VIDK_BLOCK_4x8, 2 * qx + h, qy).mv;
                        d->pmv[d->np++] = v;
                        enc_fill4(d->mv4, a4 + h, b4, 1, 2, v);
                    }
                }
            }
        }
        if (m != 3)
            for (int z = 0; z < 4; z++)
                d->cu8[4 * q + z] = 0;
    }
}

/* ------------------------------------------------------------------ HEVC intra prediction */

/* z-scan availability (6.4.1) of luma sample (xn, yn) for the CU at (xc, yc): 32x32 CTUs
 * in raster order, 16x16 CUs in z order inside (every intra CU is 16x16). */
ENC_FN int enc_hevc_avail(const EncFrame *f, int xc, int yc, int xn, int yn) {
    if (xn < 0 || yn < 0 || xn >= f->W || yn >= f->H) return 0;
    const int cn = (yn >> 5) * f->uw + (xn >> 5), cc = (yc >> 5) * f->uw + (xc >> 5);
    if (cn != cc) return cn < cc;
    const int zn = ((yn >> 4) & 1) * 2 + ((xn >> 4) & 1),
              zc = ((yc >> 4) & 1) * 2 + ((xc >> 4) & 1);
    return zn < zc;
}

/* Reference line of an n x n block at (x, y) of plane p (8.4.4.2.2 substitution):
 * line[0] = p[-1][2n-1] ... line[2n-1] = p[-1][0], line[2n] = p[-1][-1],
 * line[2n+1+i] = p[i][-1]. (xc, yc): the luma position of the CU. */
/* Entry i of that line: the sample into *v (0 when unavailable); returns its availability. */
ENC_FN int enc_hevc_ref_at(const EncFrame *f, int p, int x, int y, int n, int xc, int yc, int i,
                           uint8_t *v) {
    const int sh = p ? 1 : 0;
    int xn, yn;
    if (i < 2 * n) {
        xn = x - 1;
        yn = y + 2 * n - 1 - i;
    } else if (i == 2 * n) {
        xn = x - 1;
        yn = y - 1;
    } else {
        xn = x + i - 2 * n - 1;
        yn = y - 1;
    }
    const int a = enc_hevc_avail(f, xc, yc, xn * (1 << sh), yn * (1 << sh));
    *v = a ? ENC_LDREC(f->rec[p] + (ptrdiff_t)yn * f->cs[p] + xn) : 0;
    return a;
}

/* The substitution of 8.4.4.2.2 as a source index: the entry of a gathered line of len
 * entries whose sample entry i takes, from the availability bits (bit i % 32 of
 * mask[i / 32], none at or past len): i when available, else the last available entry
 * before i, else the first available one; -1 when none is (every entry is then 128). The
 * scalar rule (an unavailable entry copies the one before it, the first the first available
 * one) gives the same samples; a warp computes every entry at once. */
ENC_FN int enc_hevc_ref_src(const uint32_t *mask, int len, int i) {
    const int w = i >> 5, b = i & 31;
    if (mask[w] >> b & 1u) return i;
    uint32_t m = b ? mask[w] & ((1u << b) - 1u) : 0u; /* entries below i in its word */
    for (int k = w;;) {
        if (m) return 32 * k + vidk_hibit32(m);
        if (--k < 0) break;
        m = mask[k];
    }
    for (int k = 0; k < (len + 31) >> 5; k++)
        if (mask[k]) return 32 * k + vidk_lobit32(mask[k]);
    return -1;
}

/* The substitution over a gathered line of len (<= 129) entries (av: availability). */
ENC_FN void enc_hevc_ref_fill(uint8_t *line, const uint8_t *av, int len) {
    uint32_t mask[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < len; i++)
        mask[i >> 5] |= (uint32_t)(av[i] != 0) << (i & 31);
    for (int i = 0; i < len; i++)
        if (!av[i]) { /* available entries never change: any order gives the same line */
            const int k = enc_hevc_ref_src(mask, len, i);
            line[i] = k < 0 ? 128 : line[k];
        }
}

ENC_FN void enc_hevc_refs(const EncFrame *f, int p, int x, int y, int n, int xc, int yc,
                          uint8_t *line) {
    uint8_t av[129];
    const int len = 4 * n + 1;
    for (int i = 0; i < len; i++)
        av[i] = (uint8_t)enc_hevc_ref_at(f, p, x, y, n, xc, yc, i, &line[i]);
    enc_hevc_ref_fill(line, av, len);
}

/* HEVC intra prediction of mode m (0 planar, 1 DC, 10 H, 26 V) of an n x n block from its
 * reference line, in two steps: enc_hevc_pred_prep() gives the line the mode reads (luma
 * planar, n >= 8 here: the [1 2 1] smoothing of 8.4.4.2.3; otherwise a copy) and the DC
 * value; enc_hevc_pred_at() one sample, with the luma DC / H / V boundary filters (n < 32). */
/* Does mode m read the smoothed line (luma planar, n >= 8: the [1 2 1] filter of
 * 8.4.4.2.3)? */
ENC_FN int enc_hevc_pred_smooth(int n, int m, int luma) {
    return luma && m == 0 && n >= 8;
}

/* Entry i of the line mode m reads. */
ENC_FN uint8_t enc_hevc_line_at(const uint8_t *line0, int n, int m, int luma, int i) {
    if (!enc_hevc_pred_smooth(n, m, luma) || i == 0 || i == 4 * n) return line0[i];
    return (uint8_t)((line0[i - 1] + 2 * line0[i] + line0[i + 1] + 2) >> 2);
}

/* Term i (< n) of the DC sum of line l: p[i][-1] + p[-1][i]. */
ENC_FN int enc_hevc_dc_term(const uint8_t *l, int n, int i) {
    return l[2 * n + 1 + i] + l[2 * n - 1 - i];
}

ENC_FN int enc_hevc_pred_prep(const uint8_t *line0, int n, int log2n, int m, int luma,
                              uint8_t *l) {
    for (int i = 0; i < 4 * n + 1; i++)
        l[i] = enc_hevc_line_at(line0, n, m, luma, i);
    int s = n;
    for (int i = 0; i < n; i++)
        s += enc_hevc_dc_term(l, n, i);
    return s >> (log2n + 1);
}

ENC_FN uint8_t enc_hevc_pred_at(const uint8_t *l, int n, int log2n, int m, int luma, int dc,
                                int x, int y) {
#define ENC_TOP(i)  ((int)l[2 * n + 1 + (i)]) /* p[i][-1], i >= -1 */
#define ENC_LEFT(j) ((int)l[2 * n - 1 - (j)]) /* p[-1][j], j >= -1 */
    const int edge = luma && n < 32;
    int v;
    if (m == 0) {
        v = ((n - 1 - x) * ENC_LEFT(y) + (x + 1) * ENC_TOP(n) + (n - 1 - y) * ENC_TOP(x) +
             (y + 1) * ENC_LEFT(n) + n) >>
            (log2n + 1);
    } else if (m == 1) {
        v = dc;
        if (edge && x == 0 && y == 0)
            v = (ENC_LEFT(0) + 2 * dc + ENC_TOP(0) + 2) >> 2;
        else if (edge && y == 0)
            v = (ENC_TOP(x) + 3 * dc + 2) >> 2;
        else if (edge && x == 0)
            v = (ENC_LEFT(y) + 3 * dc + 2) >> 2;
    } else if (m == 10) {
        v = edge && y == 0 ? enc_pix(ENC_LEFT(0) + ((ENC_TOP(x) - ENC_TOP(-1)) >> 1))
                           : ENC_LEFT(y);
    } else {
        v = edge && x == 0 ? enc_pix(ENC_TOP(0) + ((ENC_LEFT(y) - ENC_LEFT(-1)) >> 1))
                           : ENC_TOP(x);
    }
    return (uint8_t)v;
#undef ENC_TOP
#undef ENC_LEFT
}

ENC_FN void enc_hevc_pred(const uint8_t *line0, int n, int log2n, int m, int luma,
                          uint8_t *dst) {
    uint8_t l[129];
    const int dc = enc_hevc_pred_prep(line0, n, log2n, m, luma, l);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            dst[y * n + x] = enc_hevc_pred_at(l, n, log2n, m, luma, dc, x, y);
}

ENC_TAB uint8_t enc_hevc_modes[4] = {0, 1, 10, 26};

#endif
