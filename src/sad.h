/* SAD primitives: the base of motion estimation.
 *
 * Contract (every implementation, every ISA):
 * - src and ref are 8-bit samples; strides in bytes, any value (also negative or odd);
 *   no alignment is required of any pointer or stride.
 * - sad returns the sum of |src - ref| over a W x H block (at most 64*64*255, fits).
 * - sad_x4 writes scores[i] = sad(src, ref[i]) for four candidate positions that share
 *   one ref_stride (typically neighbours in the search window).
 * - Only the W x H samples of each block are read.
 * - satd_avg (below) follows the same rules.
 */
#ifndef VIDK_SAD_H
#define VIDK_SAD_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

#define decl_sad_fn(name)                                                                      \
    unsigned name(const uint8_t *src, ptrdiff_t src_stride, const uint8_t *ref,                \
                  ptrdiff_t ref_stride)
typedef decl_sad_fn((*vidk_sad_fn));

#define decl_sad_x4_fn(name)                                                                   \
    void name(const uint8_t *src, ptrdiff_t src_stride, const uint8_t *ref0,                   \
              const uint8_t *ref1, const uint8_t *ref2, const uint8_t *ref3,                   \
              ptrdiff_t ref_stride, unsigned scores[4])
typedef decl_sad_x4_fn((*vidk_sad_x4_fn));

/* satd_avg: vidk_satd_avg_wxh (sad_core.h), the SATD of a w x h block (w, h in {4, 8, 16})
 * of src against the rounded average of a and b (stride rs; a == b allowed): the H.264
 * quarter-sample refinement's measure. Only the w x h samples of each are read. */
#define decl_satd_avg_fn(name)                                                                 \
    unsigned name(const uint8_t *src, ptrdiff_t ss, const uint8_t *a, const uint8_t *b,        \
                  ptrdiff_t rs, int w, int h)
typedef decl_satd_avg_fn((*vidk_satd_avg_fn));

typedef struct VidkSadDSP {
    vidk_sad_fn sad[VIDK_BLOCK_COUNT];
    vidk_sad_x4_fn sad_x4[VIDK_BLOCK_COUNT];
    vidk_satd_avg_fn satd_avg;
} VidkSadDSP;

/* Fill with the C versions, then override by rising ISA within `flags`. */
void vidk_sad_dsp_init(VidkSadDSP *dsp, unsigned flags);
/* x86 part (src/x86/sad_init.c); returns early at the first missing flag. */
void vidk_sad_dsp_init_x86(VidkSadDSP *dsp, unsigned flags);

#endif
