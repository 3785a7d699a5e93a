/* x86 overrides of the hevc table, in rising ISA order; returns at the first missing
 * flag (the dav1d pattern). Compiled without ISA flags. Nothing below SSE4.1: the
 * quantiser needs pminuw / packusdw and the pixel paths pmovzx (SSE4.1), the 4x4
 * transforms phaddd / psignw (SSSE3). */
#include "internal.h"

void vidk_hevc_dsp_init_x86(VidkHevcDSP *dsp, unsigned flags) {
    if (!(flags & VIDK_CPU_SSE2) || !(flags & VIDK_CPU_SSSE3)) return;
    if (!(flags & VIDK_CPU_SSE41)) return;
    vidk_hevc_dsp_init_sse41(dsp); /* everything */
    if (!(flags & VIDK_CPU_AVX2)) return;
    vidk_hevc_dsp_init_avx2(dsp); /* transforms, quantisers, counters, 16/32 pixels */
    if (!(flags & VIDK_CPU_AVX512)) return;
    vidk_hevc_dsp_init_avx512(dsp); /* transforms */
}
