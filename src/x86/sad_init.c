/* x86 overrides of the SAD table, in rising ISA order; returns at the first missing
 * flag (the dav1d pattern). Compiled without ISA flags. */
#include "internal.h"

void vidk_sad_dsp_init_x86(VidkSadDSP *dsp, unsigned flags)
{
    (void)dsp;
    if (!(flags & VIDK_CPU_SSE2)) return;
    /* SSE2, AVX2 and AVX-512 versions are assigned here. */
}
