/* search_quad with AVX-512BW vdbpsadbw: all four 16x16 blocks of a quad in one zmm (one
 * per 128-bit lane), 32 sliding 4-sample SADs per instruction.
 *
 * vdbpsadbw(a, b, imm): each 128-bit lane of b is first dword-shuffled by imm; then each
 * 64-bit group gives 4 SADs: a's low dword against shuffled bytes 0-3 and 1-4, a's high
 * dword against bytes 2-5 and 3-6. With a = the block's 4 current samples in every dword
 * and the shuffle (0, 1, 1, 2), a lane yields the SADs at byte offsets 0..7 of b's lane:
 * 8 consecutive candidate columns. Shuffle (1, 2, 2, 3) gives offsets 4..11, so two
 * loads per row (at +0 and +8) serve the four 4-sample columns of a block. The 16-bit
 * results are in quad layout order without any permute. */
#include <immintrin.h>

#include "internal.h"
#include "x86/me_parts.h"

/* The vector type and lane operations ME_PARTS_UPDATE() uses. */
#define VEC          __m512i
#define ADD16        _mm512_add_epi16
#define ADDS16       _mm512_adds_epu16
#define STOREU(p, v) _mm512_storeu_si512((void *)(p), v)

#if defined(__GNUC__)
#define VIDK_PRAGMA(x) _Pragma(#x)
#define VIDK_UNROLL(n) VIDK_PRAGMA(GCC unroll n)
#else
#define VIDK_UNROLL(n)
#endif

/* One load per vdbpsadbw, so that it folds into the instruction's memory operand. */
#define DBSAD(c, p, sh) _mm512_dbsad_epu8(c, _mm512_loadu_si512(p), sh)

#define SH0 0x94 /* dwords (0, 1, 1, 2): offsets 0..7 */
#define SH4 0xE9 /* dwords (1, 2, 2, 3): offsets 4..11 */

static inline void upd(uint16_t *bc, uint16_t *br, __m512i cost, __m512i rowv) {
    const __mmask32 m = _mm512_cmplt_epu16_mask(cost, _mm512_loadu_si512(bc));
    _mm512_mask_storeu_epi16(bc, m, cost);
    _mm512_mask_storeu_epi16(br, m, rowv);
}

decl_me_search_quad_fn(vidk_me_search_quad_avx512) {
    /* cv[y][bx]: lane k = block k's samples (4 bx .. 4 bx + 3, row y), in all 4 dwords. */
    __m512i cv[16][4];
    for (int y = 0; y < 16; y++) {
        const __m512i row = _mm512_loadu_si512(cur + y * cur_stride);
        cv[y][0] = _mm512_shuffle_epi32(row, (_MM_PERM_ENUM)0x00);
        cv[y][1] = _mm512_shuffle_epi32(row, (_MM_PERM_ENUM)0x55);
        cv[y][2] = _mm512_shuffle_epi32(row, (_MM_PERM_ENUM)0xAA);
        cv[y][3] = _mm512_shuffle_epi32(row, (_MM_PERM_ENUM)0xFF);
    }
    const int nrows = 2 * range + 1;
    const int only16 = !(shapes & ~(unsigned)VIDK_ME_SHAPE(VIDK_BLOCK_16x16));
    const ptrdiff_t bs = best_stride;
    const __m512i zero = _mm512_setzero_si512();

    for (int c = 0; c < n / 8; c++) {
        const int o = c * 32;
        const uint8_t *rc = ref + 8 * c;
        uint16_t *bc = best_cost + o, *br = best_row + o;
        const __m512i colv = colc ? _mm512_loadu_si512(colc + o) : zero;
        if (only16) {
            /* The two kept vectors stay in registers over all rows. */
            uint16_t *bc16 = bc + VIDK_ME_PART_16x16 * bs, *br16 = br + VIDK_ME_PART_16x16 * bs;
            __m512i kc = shapes ? _mm512_loadu_si512(bc16) : zero;
            __m512i kr = shapes ? _mm512_loadu_si512(br16) : zero;
            for (int i = 0; i < nrows; i++) {
                const int my = vidk_me_row_my(i);
                const uint8_t *r = rc + my * ref_stride;
                __m512i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
                for (int y = 0; y < 16; y++) {
                    const uint8_t *ry = r + y * ref_stride;
                    a0 = _mm512_add_epi16(a0, DBSAD(cv[y][0], ry, SH0));
                    a1 = _mm512_add_epi16(a1, DBSAD(cv[y][1], ry, SH4));
                    a2 = _mm512_add_epi16(a2, DBSAD(cv[y][2], ry + 8, SH0));
                    a3 = _mm512_add_epi16(a3, DBSAD(cv[y][3], ry + 8, SH4));
                }
                const __m512i s16 =
                    _mm512_add_epi16(_mm512_add_epi16(a0, a1), _mm512_add_epi16(a2, a3));
                if (sad16)
                    _mm512_storeu_si512(sad16 + (ptrdiff_t)(my + range) * n * 4 + o, s16);
                if (!shapes) continue;
                __m512i cost = s16;
                if (colc)
                    cost = _mm512_adds_epu16(
                        s16,
                        _mm512_adds_epu16(colv, _mm512_loadu_si512(rowc + (my + range) * 32)));
                const __mmask32 m = _mm512_cmplt_epu16_mask(cost, kc);
                kc = _mm512_mask_mov_epi16(kc, m, cost);
                kr = _mm512_mask_mov_epi16(kr, m, _mm512_set1_epi16((short)(my + range)));
            }
            if (shapes) {
                _mm512_storeu_si512(bc16, kc);
                _mm512_storeu_si512(br16, kr);
            }
            continue;
        }
        for (int i = 0; i < nrows; i++) {
            const int my = vidk_me_row_my(i);
            const uint8_t *r = rc + my * ref_stride;
            const __m512i rowv = _mm512_set1_epi16((short)(my + range));
            const __m512i mvc =
                colc ? _mm512_adds_epu16(colv, _mm512_loadu_si512(rowc + (my + range) * 32))
                     : zero;
            /* Fully unrolled so that the 16 sums stay in registers. */
            __m512i s4[16];
            VIDK_UNROLL(4)
            for (int by = 0; by < 4; by++) {
                __m512i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
                VIDK_UNROLL(4)
                for (int y = 4 * by; y < 4 * by + 4; y++) {
                    const uint8_t *ry = r + y * ref_stride;
                    a0 = _mm512_add_epi16(a0, DBSAD(cv[y][0], ry, SH0));
                    a1 = _mm512_add_epi16(a1, DBSAD(cv[y][1], ry, SH4));
                    a2 = _mm512_add_epi16(a2, DBSAD(cv[y][2], ry + 8, SH0));
                    a3 = _mm512_add_epi16(a3, DBSAD(cv[y][3], ry + 8, SH4));
                }
                s4[4 * by + 0] = a0, s4[4 * by + 1] = a1, s4[4 * by + 2] = a2,
                            s4[4 * by + 3] = a3;
            }
            ME_PARTS_UPDATE();
        }
    }
}
