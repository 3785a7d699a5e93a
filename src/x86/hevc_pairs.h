/* Coefficient pairs of the HEVC DCT matrix (src/hevc.c: T = vidk_hevc_t32, 8.6.4.2) for the
 * pmaddwd code of hevc_tmpl.h: pair(a, b) = (uint16)a | (uint16)b << 16. Filled from the
 * matrix once, by the formulas in the comments, before the first kernel that reads them is
 * installed (vidk_hevc_dsp_init_x86); checkkern compares every such kernel with the C
 * reference. */
#ifndef VIDK_X86_HEVC_PAIRS_H
#define VIDK_X86_HEVC_PAIRS_H

#include <stdint.h>

typedef struct VidkHevcPairs {
    uint32_t pr[512]; /* pr[kk * 16 + p] = pair(T[kk][2p], T[kk][2p + 1]) */
    /* f2_N[v * N/2 + p] = pair(T[v * 32/N][p], T[v * 32/N][N - 1 - p]) */
    uint32_t f2_8[32], f2_16[128], f2_32[512];
    uint32_t f4[8]; /* f4[k] = pair(T[8k][0], T[8k][3]), f4[4 + k] = pair(T[8k][1], T[8k][2]) */
    uint32_t i4[4]; /* i4[y] = pair(T[0][y], T[16][y]), i4[2 + y] = pair(T[8][y], T[24][y]) */
    /* io_M[p * M/2 + y] = pair(T[(4p + 1) * 32/M][y], T[(4p + 3) * 32/M][y]) */
    uint32_t io_8[8], io_16[32], io_32[128];
} VidkHevcPairs;

extern VidkHevcPairs vidk_hevc_pairs;

/* Fills vidk_hevc_pairs (once; thread-safe). */
void vidk_hevc_pairs_init(void);

#endif
