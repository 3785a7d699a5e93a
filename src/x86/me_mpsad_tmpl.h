/* search_quad body on (v)mpsadbw, shared by me_sse41.c (one block per 128-bit vector)
 * and me_avx2.c (two blocks per 256-bit vector). The includer defines:
 *   FUNC                 the function name
 *   VEC, BPV             vector type, blocks per vector (1 or 2)
 *   LOADU(p), STOREU(p, v), SET1_16(x)
 *   ADD16, ADDS16, MIN16, MAX16, CMPEQ16, BLENDV8
 *   MPSAD(a, b, sel, off) sliding SADs: per 128-bit lane, 8 SADs of dword `sel` of b
 *                         against a at byte offsets off*4 + 0..7.
 *
 * One mpsadbw lane gives the 4-sample row SAD of one 4x4 block for 8 consecutive
 * candidate columns; four rows summed give the 4x4 SADs, which are added up into the
 * 41 partitions in 16 bits (a 16x16 SAD of 8-bit samples is at most 65280). Each 128-bit
 * lane holds one block, so a vector's 16-bit lanes match the quad layout directly. */

#include "x86/me_parts.h"
#if defined(__GNUC__)
#define VIDK_PRAGMA(x) _Pragma(#x)
#define VIDK_UNROLL(n) VIDK_PRAGMA(GCC unroll n)
#else
#define VIDK_UNROLL(n)
#endif

static inline void upd(uint16_t *bc, uint16_t *br, VEC cost, VEC rowv) {
    /* Unsigned "cost < kept" without an unsigned compare: cost >= kept exactly when
     * max(cost, kept) == cost. */
    const VEC b = LOADU(bc);
    const VEC ge = CMPEQ16(MAX16(cost, b), cost);
    STOREU(bc, MIN16(cost, b));
    STOREU(br, BLENDV8(rowv, LOADU(br), ge));
}

decl_me_search_quad_fn(FUNC) {
    const int nrows = 2 * range + 1;
    const int only16 = !(shapes & ~(unsigned)VIDK_ME_SHAPE(VIDK_BLOCK_16x16));
    const ptrdiff_t bs = best_stride;
    for (int c = 0; c < n / 8; c++) {
        for (int g = 0; g < 4 / BPV; g++) {
            const int o = c * 32 + 8 * BPV * g; /* quad-layout index of this vector */
            const uint8_t *cg = cur + 16 * BPV * g;
            const uint8_t *rg = ref + 8 * c + 16 * BPV * g;
            uint16_t *bc = best_cost + o, *br = best_row + o;
            const VEC colv = colc ? LOADU(colc + o) : SET1_16(0);
            for (int i = 0; i < nrows; i++) {
                const int my = vidk_me_row_my(i);
                const uint8_t *r = rg + my * ref_stride;
                const VEC rowv = SET1_16((short)(my + range));
                const VEC mvc =
                    colc ? ADDS16(colv, LOADU(rowc + (my + range) * 32 + 8 * BPV * g))
                         : SET1_16(0);
                if (only16) {
                    VEC a0 = SET1_16(0), a1 = a0, a2 = a0, a3 = a0;
                    for (int y = 0; y < 16; y++) {
                        const VEC l0 = LOADU(r + y * ref_stride),
                                  l8 = LOADU(r + y * ref_stride + 8);
                        const VEC cb = LOADU(cg + y * cur_stride);
                        a0 = ADD16(a0, MPSAD(l0, cb, 0, 0));
                        a1 = ADD16(a1, MPSAD(l0, cb, 1, 1));
                        a2 = ADD16(a2, MPSAD(l8, cb, 2, 0));
                        a3 = ADD16(a3, MPSAD(l8, cb, 3, 1));
                    }
                    const VEC s16 = ADD16(ADD16(a0, a1), ADD16(a2, a3));
                    if (sad16) STOREU(sad16 + (ptrdiff_t)(my + range) * n * 4 + o, s16);
                    if (shapes)
                        upd(bc + VIDK_ME_PART_16x16 * bs, br + VIDK_ME_PART_16x16 * bs,
                            ADDS16(s16, mvc), rowv);
                    continue;
                }
                /* Fully unrolled so that the sums stay in registers. */
                VEC s4[16];
                VIDK_UNROLL(4)
                for (int by = 0; by < 4; by++) {
                    VEC a0 = SET1_16(0), a1 = a0, a2 = a0, a3 = a0;
                    VIDK_UNROLL(4)
                    for (int y = 4 * by; y < 4 * by + 4; y++) {
                        const VEC l0 = LOADU(r + y * ref_stride),
                                  l8 = LOADU(r + y * ref_stride + 8);
                        const VEC cb = LOADU(cg + y * cur_stride);
                        a0 = ADD16(a0, MPSAD(l0, cb, 0, 0));
                        a1 = ADD16(a1, MPSAD(l0, cb, 1, 1));
                        a2 = ADD16(a2, MPSAD(l8, cb, 2, 0));
                        a3 = ADD16(a3, MPSAD(l8, cb, 3, 1));
                    }
                    s4[4 * by + 0] = a0, s4[4 * by + 1] = a1, s4[4 * by + 2] = a2,
                                s4[4 * by + 3] = a3;
                }
                ME_PARTS_UPDATE();
            }
        }
    }
}
