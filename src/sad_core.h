/* The SAD of a block, written once: the C reference kernels (src/sad.c) and the coding loop
 * (src/enc/enc_core.h, enc_tmpl.h, src/cuda/enc_warp.cuh) call it. The x86 SIMD kernels and
 * the CUDA motion search (packed byte differences) are other forms of the same sum,
 * checked against the C reference by tests/checkkern and tests/test_me_cuda.c. */
#ifndef VIDK_SAD_CORE_H
#define VIDK_SAD_CORE_H

#include "vidk_core.h"

/* Sum of |a - b| over a w x h block of 8-bit samples (strides in samples). */
VIDK_CORE uint32_t vidk_sad_wxh(const uint8_t *a, ptrdiff_t as, const uint8_t *b, ptrdiff_t bs,
                                int w, int h) {
    uint32_t s = 0;
    for (int y = 0; y < h; y++, a += as, b += bs)
        for (int x = 0; x < w; x++) {
            const int d = a[x] - b[x];
            s += (uint32_t)(d < 0 ? -d : d);
        }
    return s;
}

VIDK_CORE int vidk_iabs(int v) {
    return v < 0 ? -v : v;
}

/* SATD of a 4x4 difference block d (raster): (sum of |coefficients| of its unnormalised 4x4
 * Hadamard transform + 1) >> 1, rows first, then columns. */
VIDK_CORE uint32_t vidk_satd4(const int *d) {
    int t[16];
    for (int j = 0; j < 4; j++) { /* rows */
        const int *r = d + 4 * j;
        const int a0 = r[0] + r[3], a1 = r[1] + r[2], a2 = r[1] - r[2], a3 = r[0] - r[3];
        t[4 * j] = a0 + a1, t[4 * j + 1] = a3 + a2;
        t[4 * j + 2] = a0 - a1, t[4 * j + 3] = a3 - a2;
    }
    uint32_t sum = 0;
    for (int i = 0; i < 4; i++) { /* columns */
        const int a0 = t[i] + t[12 + i], a1 = t[4 + i] + t[8 + i];
        const int a2 = t[4 + i] - t[8 + i], a3 = t[i] - t[12 + i];
        sum += (uint32_t)(vidk_iabs(a0 + a1) + vidk_iabs(a3 + a2) + vidk_iabs(a0 - a1) +
                          vidk_iabs(a3 - a2));
    }
    return (sum + 1) >> 1;
}

/* Sum of vidk_satd4 over the 4x4 blocks of a w x h block (w, h multiples of 4) of src
 * against the rounded average (a + b + 1) >> 1 of two references of stride rs (a == b: the
 * reference itself): an H.264 quarter-sample prediction from its two sources. */
VIDK_CORE uint32_t vidk_satd_avg_wxh(const uint8_t *src, ptrdiff_t ss, const uint8_t *a,
                                     const uint8_t *b, ptrdiff_t rs, int w, int h) {
    uint32_t s = 0;
    for (int by = 0; by < h; by += 4)
        for (int bx = 0; bx < w; bx += 4) {
            int d[16];
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    const ptrdiff_t o = (by + j) * rs + bx + i;
                    d[4 * j + i] = src[(by + j) * ss + bx + i] - ((a[o] + b[o] + 1) >> 1);
                }
            s += vidk_satd4(d);
        }
    return s;
}

#endif
