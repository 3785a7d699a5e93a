/* x86 overrides of the hevc table, in rising ISA order; returns at the first missing
 * flag (the dav1d pattern). Compiled without ISA flags. Nothing below SSE4.1: the
 * quantiser needs pminuw / packusdw and the pixel paths pmovzx (SSE4.1), the 4x4
 * transforms phaddd / psignw (SSSE3). */
#include <pthread.h>

#include "hevc_pairs.h"
#include "internal.h"

VidkHevcPairs vidk_hevc_pairs;

static uint32_t pair(int a, int b) {
    return (uint32_t)(uint16_t)a | (uint32_t)(uint16_t)b << 16;
}

static void pairs_fill(void) {
    const int8_t(*T)[32] = vidk_hevc_t32;
    VidkHevcPairs *t = &vidk_hevc_pairs;
    uint32_t *const f2[3] = {t->f2_8, t->f2_16, t->f2_32};
    uint32_t *const io[3] = {t->io_8, t->io_16, t->io_32};
    for (int k = 0; k < 32; k++)
        for (int p = 0; p < 16; p++)
            t->pr[k * 16 + p] = pair(T[k][2 * p], T[k][2 * p + 1]);
    for (int l = 0; l < 3; l++) {
        const int n = 8 << l, st = 32 / n;
        for (int v = 0; v < n; v++)
            for (int p = 0; p < n / 2; p++)
                f2[l][v * (n / 2) + p] = pair(T[v * st][p], T[v * st][n - 1 - p]);
        for (int p = 0; p < n / 4; p++)
            for (int y = 0; y < n / 2; y++)
                io[l][p * (n / 2) + y] = pair(T[(4 * p + 1) * st][y], T[(4 * p + 3) * st][y]);
    }
    for (int k = 0; k < 4; k++) {
        t->f4[k] = pair(T[8 * k][0], T[8 * k][3]);
        t->f4[4 + k] = pair(T[8 * k][1], T[8 * k][2]);
    }
    for (int y = 0; y < 2; y++) {
        t->i4[y] = pair(T[0][y], T[16][y]);
        t->i4[2 + y] = pair(T[8][y], T[24][y]);
    }
}

void vidk_hevc_pairs_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pairs_fill);
}

void vidk_hevc_dsp_init_x86(VidkHevcDSP *dsp, unsigned flags) {
    if (!(flags & VIDK_CPU_SSE2) || !(flags & VIDK_CPU_SSSE3)) return;
    if (!(flags & VIDK_CPU_SSE41)) return;
    vidk_hevc_pairs_init();        /* the transforms' coefficient pairs */
    vidk_hevc_dsp_init_sse41(dsp); /* everything */
    if (!(flags & VIDK_CPU_AVX2)) return;
    vidk_hevc_dsp_init_avx2(dsp); /* transforms, quantisers, counters, 16/32 pixels */
    if (!(flags & VIDK_CPU_AVX512)) return;
    vidk_hevc_dsp_init_avx512(dsp); /* transforms */
}
