/* Portable C reference of the hevc family. */
#include "internal.h"

void vidk_hevc_dsp_init(VidkHevcDSP *dsp, unsigned flags)
{
    (void)flags;
    dsp->placeholder = 0;
}
