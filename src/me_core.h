/* Exp-Golomb code lengths (H.264 9.1, 9.1.1), written once: the bits of a motion-vector
 * difference in the motion search's vector cost (src/cuda/me_kern.cuh) and the coding
 * loop's bit estimates (src/enc/enc_core.h). */
#ifndef VIDK_ME_CORE_H
#define VIDK_ME_CORE_H

#include "vidk_core.h"

/* ue(v) length of codeNum k: 2 * floor(log2(k + 1)) + 1 (k + 1 >= 1). */
VIDK_CORE unsigned vidk_ue_bits(unsigned k) {
    return 2u * (unsigned)vidk_hibit32(k + 1u) + 1u;
}

/* se(v) length: codeNum 2v - 1 for v > 0, -2v otherwise. */
VIDK_CORE unsigned vidk_se_bits(int v) {
    return vidk_ue_bits(v > 0 ? 2u * (unsigned)v - 1u : 2u * (unsigned)(-v));
}

#endif
