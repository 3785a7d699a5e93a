/* x86 overrides of the me table, in rising ISA order; returns at the first missing flag
 * (the dav1d pattern). Compiled without ISA flags. SSE2 and SSSE3 have no sliding SAD
 * (mpsadbw is SSE4.1), so those levels keep the C version. */
#include "internal.h"

void vidk_me_dsp_init_x86(VidkMeDSP *dsp, unsigned flags) {
    if (!(flags & VIDK_CPU_SSE2) || !(flags & VIDK_CPU_SSSE3)) return;
    if (!(flags & VIDK_CPU_SSE41)) return;
    dsp->search_quad = vidk_me_search_quad_sse41;
    if (!(flags & VIDK_CPU_AVX2)) return;
    dsp->search_quad = vidk_me_search_quad_avx2;
    if (!(flags & VIDK_CPU_AVX512)) return;
    dsp->search_quad = vidk_me_search_quad_avx512;
}
