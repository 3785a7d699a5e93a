/* x86 overrides of the h264 table, in rising ISA order; returns at the first missing
 * flag (the dav1d pattern). Compiled without ISA flags: it only assigns pointers.
 * SSSE3 and SSE4.1 add nothing here (the SSE2 versions need no byte shuffles or 32-bit
 * multiplies); AVX2 takes over the 8x8 transforms and quantisation, AVX-512 the 4x4
 * inverse + add paths, quantisation and dequantisation. */
#include "internal.h"

void vidk_h264_dsp_init_x86(VidkH264DSP *dsp, unsigned flags) {
    if (!(flags & VIDK_CPU_SSE2)) return;
    vidk_h264_dsp_init_sse2(dsp);
    if (!(flags & VIDK_CPU_SSSE3) || !(flags & VIDK_CPU_SSE41) || !(flags & VIDK_CPU_AVX2))
        return;
    vidk_h264_dsp_init_avx2(dsp);
    if (!(flags & VIDK_CPU_AVX512)) return;
    vidk_h264_dsp_init_avx512(dsp);
}
