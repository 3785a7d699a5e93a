/* The me kernel family: dispatch table (C first, then ISA overrides) and batch ops. */
#ifndef VIDK_ME_FAMILY_H
#define VIDK_ME_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

typedef struct VidkMeDSP {
    int placeholder; /* replaced by the family's function pointers */
} VidkMeDSP;

/* Fill with the C versions, then override by rising ISA within flags. */
void vidk_me_dsp_init(VidkMeDSP *dsp, unsigned flags);

#endif
