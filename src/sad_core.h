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

#endif
