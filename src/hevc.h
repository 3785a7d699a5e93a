/* The hevc kernel family: dispatch table (C first, then ISA overrides) and batch ops. */
#ifndef VIDK_HEVC_FAMILY_H
#define VIDK_HEVC_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

typedef struct VidkHevcDSP {
    int placeholder; /* replaced by the family's function pointers */
} VidkHevcDSP;

/* Fill with the C versions, then override by rising ISA within flags. */
void vidk_hevc_dsp_init(VidkHevcDSP *dsp, unsigned flags);

#endif
