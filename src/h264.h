/* The h264 kernel family: dispatch table (C first, then ISA overrides) and batch ops. */
#ifndef VIDK_H264_FAMILY_H
#define VIDK_H264_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

typedef struct VidkH264DSP {
    int placeholder; /* replaced by the family's function pointers */
} VidkH264DSP;

/* Fill with the C versions, then override by rising ISA within flags. */
void vidk_h264_dsp_init(VidkH264DSP *dsp, unsigned flags);

#endif
