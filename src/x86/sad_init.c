/* x86 overrides of the SAD table, in rising ISA order; returns at the first missing
 * flag (the dav1d pattern). Compiled without ISA flags: each per-ISA file assigns its
 * own (static) functions and is only called when the CPU has that ISA. */
#include "internal.h"

void vidk_sad_dsp_init_sse2(VidkSadDSP *dsp);
void vidk_sad_dsp_init_avx2(VidkSadDSP *dsp);
void vidk_sad_dsp_init_avx512(VidkSadDSP *dsp);

void vidk_sad_dsp_init_x86(VidkSadDSP *dsp, unsigned flags) {
    if (!(flags & VIDK_CPU_SSE2)) return;
    vidk_sad_dsp_init_sse2(dsp); /* every size */

    /* SSSE3 and SSE4.1 add nothing to psadbw. */
    if (!(flags & VIDK_CPU_SSSE3)) return;
    if (!(flags & VIDK_CPU_SSE41)) return;

    if (!(flags & VIDK_CPU_AVX2)) return;
    vidk_sad_dsp_init_avx2(dsp); /* 16-, 32-, 64-wide */

    if (!(flags & VIDK_CPU_AVX512)) return;
    vidk_sad_dsp_init_avx512(dsp); /* 32-, 64-wide */
}
