/* Portable C reference of the h264 family. */
#include "internal.h"

void vidk_h264_dsp_init(VidkH264DSP *dsp, unsigned flags)
{
    (void)flags;
    dsp->placeholder = 0;
}
