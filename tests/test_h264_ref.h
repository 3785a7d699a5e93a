/* Independent transcriptions of standard formulas for the tests (never the library's code):
 * H.264 8.4.2.2.1, the luma sample at a quarter-sample vector. Used by test_enc_pred.c (against
 * the loop's prediction) and test_enc_decide.c (pictures moved by known quarter-sample
 * vectors). */
#ifndef VIDK_TEST_H264_REF_H
#define VIDK_TEST_H264_REF_H

#include <stdint.h>

#include "vidkern/vidkern.h"

static int ref_clip3(int lo, int hi, int v) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* x >> 2 as floor(x / 4) (5.7), without C's shift of a negative value (x & 3, the
 * fraction, is then x - 4 floor(x / 4)) */
static int ref_shr2(int x) {
    return x >= 0 ? x / 4 : -((-x + 3) / 4);
}

/* The 6-tap filter of H.264 8.4.2.2.1 (tap values E - 5F + 20G + 20H - 5I + J). */
static int ref_tap6(int e, int f, int g, int h, int i, int j) {
    return e - 5 * f + 20 * g + 20 * h - 5 * i + j;
}

static int ref_clip1(int v) {
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* H.264 8.4.2.2.1 written out for the sample at (xL, yL) + mvLX (quarter samples, the loop's
 * vectors; HEVC's are whole samples x 4: xFracL = 0, H.265 8.5.3.3.3.2 at full positions):
 * reference samples at clamped positions (8-228, 8-229); the intermediate values b1, h1 of
 * the filter at the rows / columns around, j1 from the vertical intermediates h1 of the six
 * columns (8-242; the implementation filters the b1 of six rows, 8-243: the two agree),
 * then Table 8-12's choice with 8-250 .. 8-261. */
static int ref_luma(const uint8_t *r, int stride, int W, int H, int xL, int yL, VidkMv mv) {
    const int xInt = xL + ref_shr2(mv.x), yInt = yL + ref_shr2(mv.y);
    const int xFrac = mv.x - 4 * ref_shr2(mv.x), yFrac = mv.y - 4 * ref_shr2(mv.y);
#define P(dx, dy)                                                                              \
    ((int)r[ref_clip3(0, H - 1, yInt + (dy)) * stride + ref_clip3(0, W - 1, xInt + (dx))])
#define B1(dy) ref_tap6(P(-2, dy), P(-1, dy), P(0, dy), P(1, dy), P(2, dy), P(3, dy))
#define H1(dx) ref_tap6(P(dx, -2), P(dx, -1), P(dx, 0), P(dx, 1), P(dx, 2), P(dx, 3))
    const int G = P(0, 0), Hs = P(1, 0), M = P(0, 1);
    const int b = ref_clip1((B1(0) + 16) >> 5), h = ref_clip1((H1(0) + 16) >> 5);
    const int s = ref_clip1((B1(1) + 16) >> 5), m = ref_clip1((H1(1) + 16) >> 5);
    const int j1 = ref_tap6(H1(-2), H1(-1), H1(0), H1(1), H1(2), H1(3));
    const int j = ref_clip1((j1 + 512) >> 10);
#undef P
#undef B1
#undef H1
    switch (xFrac * 4 + yFrac) {
    case 0:
        return G;
    case 1:
        return (G + h + 1) >> 1; /* d */
    case 2:
        return h;
    case 3:
        return (M + h + 1) >> 1; /* n */
    case 4:
        return (G + b + 1) >> 1; /* a */
    case 5:
        return (b + h + 1) >> 1; /* e */
    case 6:
        return (h + j + 1) >> 1; /* i */
    case 7:
        return (h + s + 1) >> 1; /* p */
    case 8:
        return b;
    case 9:
        return (b + j + 1) >> 1; /* f */
    case 10:
        return j;
    case 11:
        return (j + s + 1) >> 1; /* q */
    case 12:
        return (Hs + b + 1) >> 1; /* c */
    case 13:
        return (b + m + 1) >> 1; /* g */
    case 14:
        return (j + m + 1) >> 1; /* k */
    default:
        return (m + s + 1) >> 1; /* r */
    }
}

#endif
