/* The me kernel family: full-search motion estimation.
 *
 * Two layers:
 * - The reference (me.c): the plain serial full search by definition, any bit depth,
 *   one block at a time. The c backend is exactly this; everything else is checked
 *   against it.
 * - The fast 8-bit path: a DSP function (search_quad) that searches four horizontally
 *   adjacent 16x16 macroblocks over every candidate of a padded reference window,
 *   keeping per candidate column the best cost of each of the 41 H.264 partitions. The
 *   driver (me_search.c) builds the windows, reduces the columns and handles 32x32 and
 *   64x64 blocks from the 16x16 SADs.
 *
 * search_quad contract (every implementation, every ISA):
 * - cur: 16 rows of 64 samples (blocks k = 0..3 side by side), cur_stride bytes apart.
 * - ref: window sample of block 0, candidate column 0, candidate row my = 0. Block k,
 *   column j (0 <= j < n), row my (-R <= my <= R) is at ref + my * ref_stride + 16 * k + j.
 *   Rows -R .. R + 15 are readable for n + VIDK_ME_WIN_OVERREAD bytes from ref. Column j
 *   stands for mvx = j - R; columns j >= 2R + 1 are computed and ignored by the caller.
 * - n: candidate columns, a positive multiple of 8.
 * - Rows are visited in tie order my = 0, -1, 1, -2, 2, ... (vidk_me_row_my()); per
 *   column and partition a candidate replaces the kept one only when its cost is lower.
 *   Within one column that order is the tie rule (smaller |mvy|, then raster order).
 * - Costs are 16-bit and saturate: cost = min(SAD + mvc, 65535), where mvc =
 *   min(colc[idx] + rowc[(my + R) * 32 + 8 * k], 65535) with idx = vidk_me_qidx(j, k);
 *   colc and rowc are NULL for lambda 0 (mvc = 0). A kept cost of 65535 may be
 *   saturated: the caller then recomputes that block exactly.
 * - best_cost / best_row: partition p (VIDK_ME_PART_*) at + p * best_stride elements,
 *   n * 4 entries in the quad layout (vidk_me_qidx). The caller starts every cost at
 *   65535 (the saturation value, so "nothing kept yet" needs no extra state). Only
 *   partitions whose shape bit is in `shapes` are touched; best_row receives my + R.
 * - sad16: NULL, or (2R + 1) rows of n * 4 uint16 (row my + R, quad layout): the 16x16
 *   SAD of every candidate of every block (8-bit: at most 65280), for 32x32 and 64x64.
 */
#ifndef VIDK_ME_FAMILY_H
#define VIDK_ME_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

/* The 41 partitions of a macroblock: first index and count per H.264 shape, raster
 * order within the shape's grid in the macroblock. */
enum {
    VIDK_ME_PART_4x4 = 0,   /* 16 */
    VIDK_ME_PART_8x4 = 16,  /* 8: 2 across, 4 down */
    VIDK_ME_PART_4x8 = 24,  /* 8: 4 across, 2 down */
    VIDK_ME_PART_8x8 = 32,  /* 4 */
    VIDK_ME_PART_16x8 = 36, /* 2 */
    VIDK_ME_PART_8x16 = 38, /* 2 */
    VIDK_ME_PART_16x16 = 40,
    VIDK_ME_NPART = 41
};

/* Bytes a search_quad implementation may read beyond column n of a window row. */
#define VIDK_ME_WIN_OVERREAD 128

/* Index of candidate column j of block k (0..3) in the quad layout. */
static inline int vidk_me_qidx(int j, int k) {
    return (j >> 3) * 32 + k * 8 + (j & 7);
}

/* Candidate row visited i-th (0 <= i <= 2R): 0, -1, 1, -2, 2, ... */
static inline int vidk_me_row_my(int i) {
    return i & 1 ? -((i + 1) >> 1) : i >> 1;
}

#define decl_me_search_quad_fn(name)                                                           \
    void name(const uint8_t *cur, ptrdiff_t cur_stride, const uint8_t *ref,                    \
              ptrdiff_t ref_stride, int range, int n, const uint16_t *colc,                    \
              const uint16_t *rowc, uint16_t *best_cost, uint16_t *best_row,                   \
              ptrdiff_t best_stride, unsigned shapes, uint16_t *sad16)
typedef decl_me_search_quad_fn((*vidk_me_search_quad_fn));

typedef struct VidkMeDSP {
    vidk_me_search_quad_fn search_quad;
} VidkMeDSP;

/* Fill with the C versions, then override by rising ISA within flags. */
void vidk_me_dsp_init(VidkMeDSP *dsp, unsigned flags);

/* x86 versions (src/x86/me_<isa>.c): mpsadbw (SSE4.1, AVX2) and vdbpsadbw (AVX-512BW). */
decl_me_search_quad_fn(vidk_me_search_quad_sse41);
decl_me_search_quad_fn(vidk_me_search_quad_avx2);
decl_me_search_quad_fn(vidk_me_search_quad_avx512);
/* x86 part (src/x86/me_init.c); returns early at the first missing flag. */
void vidk_me_dsp_init_x86(VidkMeDSP *dsp, unsigned flags);

/* Grid of a shape for a w x h picture (see VidkMeField). */
void vidk_me_grid(int w, int h, VidkBlockSize bs, int *gw, int *gh);

/* Cost of vector (mx, my) against predictor (px, py). */
static inline uint32_t vidk_me_mv_cost(unsigned lambda, int mx, int my, int px, int py) {
    return lambda ? lambda * (vidk_me_mv_bits(mx - px) + vidk_me_mv_bits(my - py)) : 0;
}

/*
 * Reference full search (C, by definition, any bit depth 8..16) of one block:
 * bs = VIDK_BLOCK_16x16 searches macroblock (bx, by) and writes every H.264 shape in
 * `shapes` (its 41 partitions at most); bs = 32x32 or 64x64 searches that block of its
 * grid. scratch: vidk_me_ref_scratch_size(range, bs) bytes. Arguments are validated by
 * the caller.
 */
size_t vidk_me_ref_scratch_size(int range, VidkBlockSize bs);
void vidk_me_ref_block(const VidkPicture *cur, const VidkPicture *ref, const VidkMeParams *p,
                       unsigned shapes, VidkBlockSize bs, int bx, int by, VidkMeField *out,
                       uint16_t *scratch);

#endif
