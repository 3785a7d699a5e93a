/* Portable C reference of the me family. */
#include "internal.h"

void vidk_me_dsp_init(VidkMeDSP *dsp, unsigned flags)
{
    (void)flags;
    dsp->placeholder = 0;
}
