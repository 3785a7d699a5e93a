/* Motion search, shared by every x86 ISA file: from the 16 4x4 SADs s4[] of one candidate
 * row (16-bit lanes, one candidate column per lane group), the other H.264 partitions by
 * addition, the optional 16x16 SAD store, and the running-minimum update of every asked
 * partition. Expects in scope: VEC, ADD16, ADDS16, STOREU (the ISA's vector type and its
 * 16-bit add, saturating add and unaligned store) and the search loop's locals s4, sad16,
 * my, range, n, o, shapes, bc, br, bs, colc, mvc, rowv and its upd(). */
#ifndef VIDK_X86_ME_PARTS_H
#define VIDK_X86_ME_PARTS_H

#define ME_UPD(part, v) upd(bc + (part)*bs, br + (part)*bs, colc ? ADDS16(v, mvc) : (v), rowv)

#define ME_PARTS_UPDATE()                                                                      \
    do {                                                                                       \
        VEC p84[8], p48[8], p88[4], p168[2], p816[2];                                          \
        for (int y = 0; y < 4; y++)                                                            \
            for (int x = 0; x < 2; x++)                                                        \
                p84[y * 2 + x] = ADD16(s4[y * 4 + 2 * x], s4[y * 4 + 2 * x + 1]);              \
        for (int y = 0; y < 2; y++)                                                            \
            for (int x = 0; x < 4; x++)                                                        \
                p48[y * 4 + x] = ADD16(s4[y * 8 + x], s4[y * 8 + 4 + x]);                      \
        for (int y = 0; y < 2; y++)                                                            \
            for (int x = 0; x < 2; x++)                                                        \
                p88[y * 2 + x] = ADD16(p84[y * 4 + x], p84[y * 4 + 2 + x]);                    \
        p168[0] = ADD16(p88[0], p88[1]);                                                       \
        p168[1] = ADD16(p88[2], p88[3]);                                                       \
        p816[0] = ADD16(p88[0], p88[2]);                                                       \
        p816[1] = ADD16(p88[1], p88[3]);                                                       \
        const VEC s16 = ADD16(p168[0], p168[1]);                                               \
        if (sad16) STOREU(sad16 + (ptrdiff_t)(my + range) * n * 4 + o, s16);                   \
        if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_4x4))                                            \
            for (int q = 0; q < 16; q++)                                                       \
                ME_UPD(VIDK_ME_PART_4x4 + q, s4[q]);                                           \
        if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_8x4))                                            \
            for (int q = 0; q < 8; q++)                                                        \
                ME_UPD(VIDK_ME_PART_8x4 + q, p84[q]);                                          \
        if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_4x8))                                            \
            for (int q = 0; q < 8; q++)                                                        \
                ME_UPD(VIDK_ME_PART_4x8 + q, p48[q]);                                          \
        if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_8x8))                                            \
            for (int q = 0; q < 4; q++)                                                        \
                ME_UPD(VIDK_ME_PART_8x8 + q, p88[q]);                                          \
        if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_16x8))                                           \
            for (int q = 0; q < 2; q++)                                                        \
                ME_UPD(VIDK_ME_PART_16x8 + q, p168[q]);                                        \
        if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_8x16))                                           \
            for (int q = 0; q < 2; q++)                                                        \
                ME_UPD(VIDK_ME_PART_8x16 + q, p816[q]);                                        \
        if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_16x16)) ME_UPD(VIDK_ME_PART_16x16, s16);         \
    } while (0)

#endif
