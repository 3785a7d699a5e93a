/* The H.264 CAVLC macroblock layer (7.3.5) with the standard's motion vector prediction
 * (8.4.1) and nC (9.2.1), written once for the host stream writer (src/enc/h264_stream.c)
 * and the CUDA entropy coder (src/cuda/stream.cu), C11 and CUDA host + device code.
 *
 * The frame is coded in passes that need no serial state inside a slice:
 *   1. vidk_h264s_count_mb: TotalCoeff of every 4x4 block into the maps (what nC reads);
 *   2. vidk_h264s_code_mb: each macroblock_layer() on its own (its neighbours' decisions,
 *      vectors and TotalCoeff are known), or P_Skip (nothing written);
 *   3. the slice: the coded macroblocks joined, each after its mb_skip_run.
 * The host writer does pass 3 serially. The device does it in parallel with the helpers at
 * the end of this file: each coded macroblock's mb_skip_run comes from an inclusive max-scan
 * of vidk_h264s_key (the last coded macroblock at or before each one), its bit length
 * (vidk_h264s_len) from that, its bit position from an exclusive sum of the lengths, and
 * vidk_h264s_pack ORs its bits into the packed slice data; the same functions run in the host
 * emulation (tests/test_h264_stream_core.c). */
#ifndef VIDK_H264_STREAM_CORE_H
#define VIDK_H264_STREAM_CORE_H

#include "enc_core.h"
#include "h264_cavlc_core.h"
#include "h264_mvp_core.h"

/* What the macroblock layer reads (and pass 1 writes). */
typedef struct VidkH264sCtx {
    int mbw, mbh; /* macroblocks across / down */
    int W;        /* coded width: the luma level plane's stride; W / 4 vectors per row */
    int slices;   /* slices of macroblock rows, 1..mbh (slice k starts at row k * mbh / n) */
    int intra;    /* 1: I slices (every macroblock intra), 0: P or B slices */
    int row0;     /* first macroblock row of the slice being coded */
    const uint16_t *mbi;   /* decision word per macroblock (enc_core.h ENC_MBI_*), raster */
    const VidkMv *mv4;     /* vector per 4x4 luma block, W / 4 per row */
    const int16_t *lev[3]; /* level planes, strides W and W / 2 */
    uint8_t *tcl;          /* TotalCoeff per luma 4x4 block, (mbw * 4) x (mbh * 4) */
    uint8_t *tcc[2];       /* per chroma 4x4 block of Cb / Cr, (mbw * 2) x (mbh * 2) */
    const uint8_t *im4;    /* Intra4x4PredMode per luma 4x4 block of the I_NxN macroblocks,
                              W / 4 per row (NULL: none) */
    int bslice;            /* 1: B slices (intra 0; the host writer only, never the device) */
    const VidkMv *mv4b;    /* B slices: the list-1 vector per 4x4 luma block (mv4: list 0) */
} VidkH264sCtx;

// clang-format off
/* coded_block_pattern -> codeNum of me(v) for inter macroblocks (Table 9-4, ChromaArrayType
 * 1), the inverse of the table's codeNum -> cbp column. */
#define VIDK_H264S_INTER_CBP {                                          \
    0,  2,  3,  7,  4,  8,  17, 13, 5,  18, 9,  14, 10, 15, 16, 11,     \
    1,  32, 33, 36, 34, 37, 44, 40, 35, 45, 38, 41, 39, 42, 43, 19,     \
    6,  24, 25, 20, 26, 21, 46, 28, 27, 47, 22, 29, 23, 30, 31, 12}
/* The same for Intra_4x4 / Intra_8x8 macroblocks (the table's other column). */
#define VIDK_H264S_INTRA_CBP {                                          \
    3,  29, 30, 17, 31, 18, 37, 8,  32, 38, 19, 9,  20, 10, 11, 2,      \
    16, 33, 34, 21, 35, 22, 39, 4,  36, 40, 23, 5,  24, 6,  7,  1,      \
    41, 42, 43, 25, 44, 26, 46, 12, 45, 47, 27, 13, 28, 14, 15, 0}
// clang-format on
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_zz8, [64], VIDK_H264_ZZ8)
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_inter_cbp, [48], VIDK_H264S_INTER_CBP)
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_intra_cbp, [48], VIDK_H264S_INTRA_CBP)

/* nC (9.2.1) of the block at (x, y) of a TotalCoeff map whose macroblocks are `per` blocks
 * wide (mbw * per blocks per row). */
VIDK_CORE int vidk_h264s_pred_nc(const VidkH264sCtx *c, const uint8_t *tc, int per, int x,
                                 int y) {
    const int stride = c->mbw * per;
    const int la = x > 0, ta = y > 0 && (y - 1) / per >= c->row0;
    const int na = la ? tc[y * stride + x - 1] : 0, nb = ta ? tc[(y - 1) * stride + x] : 0;
    return la && ta ? (na + nb + 1) >> 1 : la ? na : nb;
}

/* Is decision word w an Intra_16x16 macroblock (its DC apart, 15 AC levels a block)? */
#define VIDK_H264S_I16(w) (((w) & (ENC_MBI_INTRA | ENC_MBI_NXN)) == ENC_MBI_INTRA)

/* Position (4x4 units) of luma4x4BlkIdx k inside its macroblock (6.4.3). */
VIDK_CORE int vidk_h264s_blk_x(int k) {
    return (k & 1) | ((k >> 1) & 2);
}
VIDK_CORE int vidk_h264s_blk_y(int k) {
    return ((k >> 1) & 1) | ((k >> 2) & 2);
}

/* The pieces of a macroblock_layer() in coding order: 0 its header (mb_type up to
 * mb_qp_delta), 1 Intra16x16DCLevel, 2 + k the luma block luma4x4BlkIdx k, 18 + p the chroma
 * DC of Cb / Cr, 20 + 4 p + b the chroma AC block chroma4x4BlkIdx b of plane p. Each is
 * coded on its own (the device: one lane each, vidk_h264s_w_*), the host in a loop. */
enum {
    VIDK_H264S_P_DC = 1,
    VIDK_H264S_P_LUMA = 2,
    VIDK_H264S_P_CDC = 18,
    VIDK_H264S_P_CAC = 20,
    VIDK_H264S_PIECES = 28
};

/* VIDK_H264_ZZ4 as nibbles: the raster position of scan index i in bits 4 i .. 4 i + 3
 * (tests/test_h264_stream_core.c checks it against the table). */
#define VIDK_H264S_ZZ4_NIB 0xFEB7ADC963258410ull

/* Four levels of a level plane at once (8 bytes, aligned: the blocks start at multiples of
 * 4 levels and the strides are whole macroblocks); lane i of the word (bits 16 i ..) is
 * level p[i] (little-endian hosts and devices). */
VIDK_CORE uint64_t vidk_h264s_ld4(const int16_t *p) {
#if defined(__CUDA_ARCH__)
    return *(const uint64_t *)(const void *)p;
#else
    uint64_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 16 | (uint16_t)p[i];
    return v;
#endif
}

/* The 16 levels of the 4x4 block at p (rows `stride` apart) in scan order: its four rows
 * loaded whole (vidk_h264s_ld4), then each level taken from its row by its zig-zag position
 * (constants once the loop is unrolled: no per-level loads). */
VIDK_CORE void vidk_h264s_zz4_ld(const int16_t *p, ptrdiff_t stride, int16_t *v) {
    uint64_t r[4];
    for (int y = 0; y < 4; y++)
        r[y] = vidk_h264s_ld4(p + y * stride);
    for (int i = 0; i < 16; i++) {
        const int at = (int)(VIDK_H264S_ZZ4_NIB >> (4 * i) & 15);
        v[i] = (int16_t)(uint16_t)(r[at >> 2] >> (16 * (at & 3)));
    }
}

/* The 16 levels of piece j >= 1 in scan order (chroma DC: c[0][0], c[0][1], c[1][0],
 * c[1][1], then 12 zeros). Returns its flags: bit 0 any level non-zero, bit 1 any of levels
 * 1..15 non-zero. */
VIDK_CORE int vidk_h264s_piece_lev(const VidkH264sCtx *c, int mbx, int mby, int intra16,
                                   int tx8, int j, int16_t *lev) {
    const uint8_t *zz8 = VIDK_CAVLC_TAB(zz8);
    const int W = c->W, x0 = mbx * 16, y0 = mby * 16;
    const int16_t *ly = c->lev[0];
    int16_t v[16]; /* loaded here, then stored: the loads need not wait for the stores */
    if (j == VIDK_H264S_P_DC) {
        for (int i = 0; i < 16; i++) {
            /* DC c[i][j] of the 4x4 block in row i, column j sits at its element 0 */
            const int rr = (int)(VIDK_H264S_ZZ4_NIB >> (4 * i) & 15);
            v[i] = ly[(ptrdiff_t)(y0 + 4 * (rr / 4)) * W + x0 + 4 * (rr % 4)];
        }
    } else if (j < VIDK_H264S_P_CDC) {
        const int k = j - VIDK_H264S_P_LUMA;
        const int bx = x0 + 4 * vidk_h264s_blk_x(k), by = y0 + 4 * vidk_h264s_blk_y(k);
        if (tx8 && !intra16) { /* 8x8: the 64 levels interleaved over the quadrant's blocks */
            const int q = k >> 2, i4 = k & 3;
            const int qx = x0 + 8 * (q & 1), qy = y0 + 8 * (q >> 1);
            for (int i = 0; i < 16; i++) {
                const int rr = zz8[4 * i + i4];
                v[i] = ly[(ptrdiff_t)(qy + rr / 8) * W + qx + rr % 8];
            }
        } else {
            vidk_h264s_zz4_ld(ly + (ptrdiff_t)by * W + bx, W, v);
        }
    } else if (j < VIDK_H264S_P_CAC) {
        const int16_t *lc = c->lev[1 + j - VIDK_H264S_P_CDC];
        const int Wc = W / 2, cx = mbx * 8, cy = mby * 8;
        for (int i = 0; i < 16; i++)
            v[i] = i >= 4 ? 0 : lc[(ptrdiff_t)(cy + 4 * (i >> 1)) * Wc + cx + 4 * (i & 1)];
    } else {
        const int p = (j - VIDK_H264S_P_CAC) >> 2, b = (j - VIDK_H264S_P_CAC) & 3;
        const int Wc = W / 2;
        vidk_h264s_zz4_ld(c->lev[p + 1] + (ptrdiff_t)(mby * 8 + 4 * (b >> 1)) * Wc + mbx * 8 +
                              4 * (b & 1),
                          Wc, v);
    }
    int any = 0, ac = 0;
    for (int i = 0; i < 16; i++)
        lev[i] = v[i], any |= v[i] != 0, ac |= i && v[i] != 0;
    return any | ac << 1;
}

/* The TotalCoeff map entry of piece j of macroblock (mbx, mby): a luma block
 * (VIDK_H264S_P_LUMA ..) or a chroma AC block (VIDK_H264S_P_CAC ..) only. */
VIDK_CORE uint8_t *vidk_h264s_tc_at(const VidkH264sCtx *c, int mbx, int mby, int j) {
    if (j < VIDK_H264S_P_CDC) {
        const int k = j - VIDK_H264S_P_LUMA;
        return c->tcl + (mby * 4 + vidk_h264s_blk_y(k)) * (c->mbw * 4) + mbx * 4 +
               vidk_h264s_blk_x(k);
    }
    const int p = (j - VIDK_H264S_P_CAC) >> 2, k = (j - VIDK_H264S_P_CAC) & 3;
    return c->tcc[p] + (mby * 2 + (k >> 1)) * (c->mbw * 2) + mbx * 2 + (k & 1);
}

/* vidk_h264s_piece_lev after pass 1: a luma or chroma AC block whose TotalCoeff (the maps)
 * is 0 holds only zeros, but for its element 0 where that is a DC coded apart (Intra_16x16,
 * chroma), which is read alone: the same levels and flags with one load or none (most blocks
 * of an inter frame are empty). */
VIDK_CORE int vidk_h264s_piece_lev_tc(const VidkH264sCtx *c, int mbx, int mby, int intra16,
                                      int tx8, int j, int16_t *lev) {
    const int16_t *p0 = 0; /* element 0 of an empty block with a DC apart */
    int n = -1;            /* its TotalCoeff, -1: not a block with one */
    if (j >= VIDK_H264S_P_LUMA && j < VIDK_H264S_P_CDC) {
        const int k = j - VIDK_H264S_P_LUMA, bx = vidk_h264s_blk_x(k), by = vidk_h264s_blk_y(k);
        n = *vidk_h264s_tc_at(c, mbx, mby, j);
        if (intra16) p0 = c->lev[0] + (ptrdiff_t)(mby * 16 + 4 * by) * c->W + mbx * 16 + 4 * bx;
    } else if (j >= VIDK_H264S_P_CAC) {
        const int p = (j - VIDK_H264S_P_CAC) >> 2, k = (j - VIDK_H264S_P_CAC) & 3;
        n = *vidk_h264s_tc_at(c, mbx, mby, j);
        p0 = c->lev[p + 1] + (ptrdiff_t)(mby * 8 + 4 * (k >> 1)) * (c->W / 2) + mbx * 8 +
             4 * (k & 1);
    }
    if (n != 0) return vidk_h264s_piece_lev(c, mbx, mby, intra16, tx8, j, lev);
    const int16_t dc = p0 ? *p0 : (int16_t)0;
    for (int i = 0; i < 16; i++)
        lev[i] = i ? (int16_t)0 : dc;
    return dc != 0;
}

/* coded_block_pattern (luma in bits 0..3, chroma in 4..5) from the pieces' flags as masks:
 * bit j of `any` / `ac` is bit 0 / 1 of piece j's flags (vidk_h264s_piece_lev). */
VIDK_CORE int vidk_h264s_cbp_m(uint32_t any, uint32_t ac, int intra16) {
    const uint32_t l = (intra16 ? ac : any) >> VIDK_H264S_P_LUMA & 0xffffu;
    const int luma = intra16 ? (l ? 15 : 0)
                             : (l & 0xfu ? 1 : 0) | (l & 0xf0u ? 2 : 0) | (l & 0xf00u ? 4 : 0) |
                                   (l & 0xf000u ? 8 : 0);
    const int cac = (ac >> VIDK_H264S_P_CAC & 0xffu) != 0,
              cdc = (any >> VIDK_H264S_P_CDC & 3u) != 0;
    return luma | (cac ? 2 : cdc ? 1 : 0) << 4;
}

/* The same from the flags fl[j] of the pieces j < VIDK_H264S_PIECES. */
VIDK_CORE int vidk_h264s_cbp(const uint8_t *fl, int intra16) {
    uint32_t any = 0, ac = 0;
    for (int j = 0; j < VIDK_H264S_PIECES; j++)
        any |= (uint32_t)(fl[j] & 1) << j, ac |= (uint32_t)(fl[j] >> 1 & 1) << j;
    return vidk_h264s_cbp_m(any, ac, intra16);
}

/* The top bit of each 16-bit lane of v where the lane is non-zero; every other bit 0. */
VIDK_CORE uint64_t vidk_h264s_nz4(uint64_t v) {
    const uint64_t lo = 0x7fff7fff7fff7fffull;
    return (((v & lo) + lo) | v) & ~lo;
}

VIDK_CORE int vidk_h264s_popc64(uint64_t v) {
#if defined(__CUDA_ARCH__)
    return __popcll((unsigned long long)v);
#else
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
#endif
}

/* The levels of an 8x8 block that CAVLC's interleaved 4x4 block i4 holds, as bits 8 r + c:
 * the positions zz8[4 i + i4], i = 0..15 (7.3.5.3, 8.5.7; from VIDK_H264_ZZ8, which
 * tests/test_h264_stream_core.c checks them against). */
VIDK_CORE uint64_t vidk_h264s_zz8_piece(int i4) {
    return i4 == 0   ? 0x0620814868061281ull
           : i4 == 1 ? 0x1885042081584806ull
           : i4 == 2 ? 0x60121a810420a118ull
                     : 0x8148601612810460ull;
}

/* Non-zero levels of the 4x4 block at p (rows `stride` apart), its element 0 left out when
 * `first` (the DC that Intra_16x16 and chroma code apart). */
VIDK_CORE int vidk_h264s_nz16(const int16_t *p, ptrdiff_t stride, int first) {
    int n = 0;
    for (int r = 0; r < 4; r++)
        n += vidk_h264s_popc64(vidk_h264s_nz4(vidk_h264s_ld4(p + r * stride)) &
                               (r == 0 && first ? ~(uint64_t)0x8000 : ~(uint64_t)0));
    return n;
}

/* TotalCoeff of piece j (a luma or chroma AC block) into its map (what nC reads, 9.2.1):
 * the non-zero levels it codes (AC only for Intra_16x16 and chroma), counted on the level
 * planes four at a time (their scan order does not change the count; an 8x8 block's piece
 * takes its positions from vidk_h264s_zz8_piece). Blocks the cbp leaves out hold only
 * zeros, and P_Skip macroblocks have none, so they count 0. */
VIDK_CORE void vidk_h264s_piece_count(const VidkH264sCtx *c, int mbx, int mby, int intra16,
                                      int tx8, int j) {
    const int W = c->W, x0 = mbx * 16, y0 = mby * 16;
    if (j >= VIDK_H264S_P_LUMA && j < VIDK_H264S_P_CDC) {
        const int k = j - VIDK_H264S_P_LUMA;
        int n;
        if (tx8 && !intra16) {
            const int q = k >> 2;
            const int16_t *p =
                c->lev[0] + (ptrdiff_t)(y0 + 8 * (q >> 1)) * W + x0 + 8 * (q & 1);
            uint64_t m = 0; /* the 8x8 block's non-zero levels as bits 8 r + c */
            for (int r = 0; r < 8; r++)
                for (int h = 0; h < 2; h++) {
                    const uint64_t f =
                        vidk_h264s_nz4(vidk_h264s_ld4(p + (ptrdiff_t)r * W + 4 * h));
                    m |= ((f >> 15 & 1) | (f >> 30 & 2) | (f >> 45 & 4) | (f >> 60 & 8))
                         << (8 * r + 4 * h);
                }
            n = vidk_h264s_popc64(m & vidk_h264s_zz8_piece(k & 3));
        } else {
            n = vidk_h264s_nz16(c->lev[0] + (ptrdiff_t)(y0 + 4 * vidk_h264s_blk_y(k)) * W + x0 +
                                    4 * vidk_h264s_blk_x(k),
                                W, intra16);
        }
        *vidk_h264s_tc_at(c, mbx, mby, j) = (uint8_t)n;
    } else if (j >= VIDK_H264S_P_CAC) {
        const int p = (j - VIDK_H264S_P_CAC) >> 2, k = (j - VIDK_H264S_P_CAC) & 3, Wc = W / 2;
        const int n = vidk_h264s_nz16(c->lev[p + 1] + (ptrdiff_t)(mby * 8 + 4 * (k >> 1)) * Wc +
                                          mbx * 8 + 4 * (k & 1),
                                      Wc, 1);
        *vidk_h264s_tc_at(c, mbx, mby, j) = (uint8_t)n;
    }
}

/* Pass 1: TotalCoeff of every 4x4 block of a macroblock into the maps. */
VIDK_CORE void vidk_h264s_count_mb(const VidkH264sCtx *c, int mbx, int mby) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int intra16 = VIDK_H264S_I16(w), tx8 = !!(w & ENC_MBI_TX8);
    for (int j = VIDK_H264S_P_LUMA; j < VIDK_H264S_PIECES; j++) {
        if (j == VIDK_H264S_P_CDC) j = VIDK_H264S_P_CAC;
        vidk_h264s_piece_count(c, mbx, mby, intra16, tx8, j);
    }
}

/* Piece j >= 1 (residual(), 7.3.5.3, with CAVLC) when the cbp codes it. The kinds of piece
 * only choose the block's coefficients and its nC map, then share one call of the coder
 * (on the device the lanes of a macroblock, one piece each, run it together). */
VIDK_CORE void vidk_h264s_piece_code(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby,
                                     int intra16, int cbp, int j, const int16_t *lev) {
    int n = 0, first = 0, per = 4, x = 0, y = 0; /* n: coefficients coded (0: none) */
    const uint8_t *tc = 0;                       /* the TotalCoeff map of nC (0: chroma DC) */
    if (j == VIDK_H264S_P_DC) {
        if (intra16) n = 16, tc = c->tcl, x = mbx * 4, y = mby * 4;
    } else if (j < VIDK_H264S_P_CDC) {
        const int k = j - VIDK_H264S_P_LUMA;
        if (cbp & (1 << (k >> 2)))
            n = 16 - intra16, first = intra16, tc = c->tcl, x = mbx * 4 + vidk_h264s_blk_x(k),
            y = mby * 4 + vidk_h264s_blk_y(k);
    } else if (j < VIDK_H264S_P_CAC) {
        if (cbp >> 4) n = 4;
    } else if (cbp >> 4 == 2) {
        const int p = (j - VIDK_H264S_P_CAC) >> 2, k = (j - VIDK_H264S_P_CAC) & 3;
        n = 15, first = 1, tc = c->tcc[p], per = 2, x = mbx * 2 + (k & 1),
        y = mby * 2 + (k >> 1);
    }
    if (n)
        (void)vidk_cavlc_block(b, lev + first, n,
                               tc ? vidk_h264s_pred_nc(c, tc, per, x, y) : -1);
}

VIDK_CORE void vidk_h264s_put_mvd(VidkBits *b, VidkMv mv, VidkMv p) {
    vidk_put_se(b, mv.x - p.x); /* quarter-sample units, as the vectors */
    vidk_put_se(b, mv.y - p.y);
}

/* Piece 0, the header, of an inter macroblock with its neighbourhood nb
 * (vidk_h264_mvnb_fill); returns 1 (writing nothing) when it is coded as P_Skip: a 16x16
 * partition with no residual whose vector is the P_Skip vector. */
VIDK_CORE int vidk_h264s_p_head(const VidkH264sCtx *c, VidkBits *b, const VidkH264MvNb *n,
                                int mbx, int mby, int cbp) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int mode = (int)(w & 3), tx8 = !!(w & ENC_MBI_TX8);
    int sub[4];
    for (int q = 0; q < 4; q++)
        sub[q] = mode == 3 ? (int)(w >> (2 + 2 * q)) & 3 : 0;
    if (mode == 0 && !cbp) {
        const VidkMv sm = vidk_h264_skip_mv(n);
        if (sm.x == n->in[0].x && sm.y == n->in[0].y) return 1;
    }
    vidk_put_ue(b, (uint32_t)mode); /* mb_type: P_L0_16x16, P_L0_L0_16x8, P_L0_L0_8x16, P_8x8 */
    if (mode == 3)
        for (int q = 0; q < 4; q++)
            vidk_put_ue(b, (uint32_t)sub[q]); /* sub_mb_type: 8x8, 8x4, 4x8, 4x4 */
    int px[16], py[16], pw[16], pd[16];
    int8_t order[16];
    const int np = vidk_h264_parts(mode, sub, px, py, pw, pd, order);
    for (int k = 0; k < np; k++) {
        const VidkMv p = vidk_h264_mvp(n, px[k], py[k], pw[k], pd[k], order, k);
        vidk_h264s_put_mvd(b, n->in[4 * py[k] + px[k]], p);
    }
    vidk_put_ue(b, VIDK_CAVLC_TAB(inter_cbp)[cbp]); /* coded_block_pattern, me(v) */
    const int tx8_allowed = mode != 3 || (!sub[0] && !sub[1] && !sub[2] && !sub[3]);
    if ((cbp & 15) && tx8_allowed) vidk_put_bits(b, 1, (uint32_t)tx8);
    if (cbp) vidk_put_se(b, 0); /* mb_qp_delta */
    return 0;
}

/* The kind of an inter macroblock of a B slice from its decision word: its mb_type (Table
 * 7-14) 0 B_Direct_16x16 (B_Skip when it has no residual), 1 B_L0_16x16, 2 B_L1_16x16, 3
 * B_Bi_16x16, 4 .. 21 two 16x8 / 8x16 partitions (enc_h264_b_mb_type). */
VIDK_CORE int vidk_h264s_b_type(unsigned w) {
    /* the first partition holds 4x4 block 0, the second block 15 */
    return (w & ENC_MBI_DIRECT) ? 0
                                : enc_h264_b_mb_type((int)(w & 3), enc_h264_b_use4(w, 0),
                                                     enc_h264_b_use4(w, 15));
}

/* mvd_l0 (list 0) or mvd_l1 (list 1) of the partitions of B macroblock (mbx, mby) (not
 * direct) that use the list, into dx[], dy[] in the stream's order: their vectors (mv4 /
 * mv4b) less the predictions of 8.4.1.3 over the list's neighbourhood, where a neighbour that
 * is intra or does not use the list has refIdx -1; the partitions' top-left 4x4 blocks into
 * px[], py[] (in blocks), their indices into pk[]; returns their count (enc_h264_b_mvds). */
VIDK_CORE int vidk_h264s_b_mvd(const VidkH264sCtx *c, int mbx, int mby, int list, int *dx,
                               int *dy, int *px, int *py, int *pk) {
    VidkH264MvNb nb;
    vidk_h264_mvnb_fill(&nb, list ? c->mv4b : c->mv4, c->W / 4, c->mbi, ENC_MBI_INTRA, list,
                        c->mbw, c->mbh, c->row0, mbx, mby);
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int sel = (enc_h264_b_use4(w, 0) >> list & 1) | (enc_h264_b_use4(w, 15) >> list & 1)
                                                              << 1;
    return enc_h264_b_mvds(&nb, (int)(w & 3), sel, dx, dy, px, py, pk);
}

/* Piece 0 of an inter macroblock of a B slice (one reference per list); returns 1 (writing
 * nothing) when it is coded as B_Skip: B_Direct_16x16 with no residual. */
VIDK_CORE int vidk_h264s_b_head(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby, int cbp) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int t = vidk_h264s_b_type(w), tx8 = !!(w & ENC_MBI_TX8);
    if (t == 0 && !cbp) return 1;
    vidk_put_ue(b, (uint32_t)t); /* mb_type; no ref_idx (one active reference a list) */
    for (int list = 0; list < 2; list++)
        if (t) { /* mvd_l0s, then mvd_l1s */
            int dx[2], dy[2], px[2], py[2], pk[2];
            const int np = vidk_h264s_b_mvd(c, mbx, mby, list, dx, dy, px, py, pk);
            for (int k = 0; k < np; k++) {
                vidk_put_se(b, dx[k]);
                vidk_put_se(b, dy[k]);
            }
        }
    vidk_put_ue(b, VIDK_CAVLC_TAB(inter_cbp)[cbp]); /* coded_block_pattern, me(v) */
    /* transform_size_8x8_flag: B_Direct_16x16 too (direct_8x8_inference_flag 1) */
    if (cbp & 15) vidk_put_bits(b, 1, (uint32_t)tx8);
    if (cbp) vidk_put_se(b, 0); /* mb_qp_delta */
    return 0;
}

/* Piece 0 of an Intra_16x16 macroblock (in an I slice, or in a P / B slice: mb_type offset by
 * 5 / 23, Tables 7-13, 7-14). */
VIDK_CORE void vidk_h264s_i_head(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby,
                                 int cbp) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    /* mb_type (Table 7-11): 1 + pred mode + 4 cbp chroma + 12 (cbp luma 15) */
    vidk_put_ue(b, (c->intra    ? 1u
                    : c->bslice ? 24u
                                : 6u) +
                       (w & 3) + 4 * (unsigned)(cbp >> 4) + (cbp & 15 ? 12u : 0u));
    vidk_put_ue(b, (w >> 2) & 3); /* intra_chroma_pred_mode */
    vidk_put_se(b, 0);            /* mb_qp_delta */
}

/* Intra4x4PredMode of luma4x4BlkIdx k of an I_NxN macroblock and its prediction (8.3.1.1;
 * for Intra_8x8 k = 4 luma8x8BlkIdx: 8.3.2.1 reads the 4x4 blocks left of and above the 8x8
 * block's first one, an Intra_4x4 neighbour's blocks n = 1 (A) and 2 (B), an Intra_8x8 one's
 * mode kept in each of its 4x4 entries): prev_intra*_pred_mode_flag is mode == pred, else
 * rem_intra*_pred_mode is the mode with pred left out. */
VIDK_CORE void vidk_h264s_i4_modes(const VidkH264sCtx *c, int mbx, int mby, int k, int *mode,
                                   int *pred) {
    const int x4 = 4 * mbx + vidk_h264s_blk_x(k), y4 = 4 * mby + vidk_h264s_blk_y(k);
    *mode = c->im4[(ptrdiff_t)y4 * (c->W / 4) + x4];
    *pred = vidk_h264_inxn_pred_mode(c->mbi, c->im4, c->mbw, x4, y4, mby > c->row0);
}

/* Piece 0 of an I_NxN macroblock, Intra_4x4 or Intra_8x8 (mb_type 0 in an I slice, 5 in a
 * P slice, 23 in a B slice): the 16 or 4 modes (an 8x8 block's from its first 4x4 block). */
VIDK_CORE void vidk_h264s_nxn_head(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby,
                                   int cbp) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int tx8 = !!(w & ENC_MBI_TX8);
    vidk_put_ue(b, c->intra ? 0u : c->bslice ? 23u : 5u); /* mb_type I_NxN */
    vidk_put_bits(b, 1, (uint32_t)tx8); /* transform_size_8x8_flag: Intra_8x8 */
    for (int k = 0; k < 16; k += tx8 ? 4 : 1) {
        int m, pm;
        vidk_h264s_i4_modes(c, mbx, mby, k, &m, &pm);
        vidk_put_bits(b, 1, m == pm); /* prev_intra4x4 / 8x8_pred_mode_flag */
        if (m != pm) vidk_put_bits(b, 3, (uint32_t)(m < pm ? m : m - 1));
    }
    vidk_put_ue(b, (w >> 2) & 3);                   /* intra_chroma_pred_mode */
    vidk_put_ue(b, VIDK_CAVLC_TAB(intra_cbp)[cbp]); /* coded_block_pattern, me(v) */
    if (cbp) vidk_put_se(b, 0);                     /* mb_qp_delta */
}

/* Piece 0 of any kind (nb: an inter macroblock's neighbourhood in a P slice; a B slice's
 * macroblock fills its two lists' itself); returns 1 for P_Skip / B_Skip. */
VIDK_CORE int vidk_h264s_head(const VidkH264sCtx *c, VidkBits *b, const VidkH264MvNb *nb,
                              int mbx, int mby, int cbp) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    if (w & ENC_MBI_INTRA) {
        if (w & ENC_MBI_NXN)
            vidk_h264s_nxn_head(c, b, mbx, mby, cbp);
        else
            vidk_h264s_i_head(c, b, mbx, mby, cbp);
        return 0;
    }
    if (c->bslice) return vidk_h264s_b_head(c, b, mbx, mby, cbp);
    return vidk_h264s_p_head(c, b, nb, mbx, mby, cbp);
}

/* The levels of every piece j >= 1 of a macroblock (lev[j], vidk_h264s_piece_lev, or its
 * _tc form after pass 1 when tc), their flags (fl[j]) and its coded_block_pattern. */
VIDK_CORE int vidk_h264s_mb_levels(const VidkH264sCtx *c, int mbx, int mby, int intra16,
                                   int tx8, int tc, int16_t lev[VIDK_H264S_PIECES][16],
                                   uint8_t *fl) {
    fl[0] = 0;
    for (int j = 1; j < VIDK_H264S_PIECES; j++)
        fl[j] = (uint8_t)(tc ? vidk_h264s_piece_lev_tc(c, mbx, mby, intra16, tx8, j, lev[j])
                             : vidk_h264s_piece_lev(c, mbx, mby, intra16, tx8, j, lev[j]));
    return vidk_h264s_cbp(fl, intra16);
}

/* Pass 2: macroblock (mbx, mby)'s macroblock_layer() into b (c->row0: its slice's first
 * row), piece by piece; returns 1 (writing nothing) when it is coded as P_Skip or B_Skip. */
VIDK_CORE int vidk_h264s_code_mb(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int intra16 = VIDK_H264S_I16(w), tx8 = !!(w & ENC_MBI_TX8);
    int16_t lev[VIDK_H264S_PIECES][16];
    uint8_t fl[VIDK_H264S_PIECES];
    const int cbp = vidk_h264s_mb_levels(c, mbx, mby, intra16, tx8, 1, lev, fl);
    VidkH264MvNb nb;
    if (!(w & ENC_MBI_INTRA) && !c->bslice)
        vidk_h264_mvnb_fill(&nb, c->mv4, c->W / 4, c->mbi, ENC_MBI_INTRA, -1, c->mbw, c->mbh,
                            c->row0, mbx, mby);
    if (vidk_h264s_head(c, b, &nb, mbx, mby, cbp)) return 1;
    for (int j = 1; j < VIDK_H264S_PIECES; j++)
        vidk_h264s_piece_code(c, b, mbx, mby, intra16, cbp, j, lev[j]);
    return 0;
}

/* ---- pass 3 in parallel (the device path and its host emulation) ---- */

/* Upper bound of one macroblock_layer() in bits, for any decision word, any int16 vectors
 * and any int16 levels: a residual block is at most 16 (coeff_token) + 16 x 36 (a level:
 * prefix <= 19, a one, suffix <= 16, as |level| <= 32768) + 9 (total_zeros) + 15 x 11
 * (run_before: at most TotalCoeff - 1 codes of at most 11 bits) = 766 bits; a macroblock
 * has at most 27 blocks (Intra_16x16: DC, 16 AC, 2 chroma DC, 8 chroma AC); its header at
 * most 5 + 4 x 5 (mb_type, sub_mb_type) + 32 x 37 (mvd: se(v) of 4 x a difference of two
 * int16) + 11 (coded_block_pattern) + 2 = 1222 bits: 27 x 766 + 1222 = 21904 bits.
 * tests/test_h264_stream_core.c codes extreme macroblocks and checks them against it. */
#define VIDK_H264S_MB_MAX_BITS 21904
/* The slot of one macroblock on the device: the bound rounded up to 32-bit words. */
#define VIDK_H264S_SLOT_BYTES ((VIDK_H264S_MB_MAX_BITS + 31) / 32 * 4)

/* The scan key of macroblock i after pass 2: i when it is coded, i - 1 when it is skipped
 * and the first of its slice (the slice's mb_skip_run counts from there), else -1. The
 * inclusive max-scan of the keys, last[i], is the last coded macroblock at or before i in
 * i's slice (or the slice's first macroblock - 1 when there is none). */
VIDK_CORE int32_t vidk_h264s_key(int i, int skip, int slice_first) {
    return !skip ? i : i == slice_first ? i - 1 : -1;
}

/* Length of ue(k) (9.1): 2 floor(log2(k + 1)) + 1. */
VIDK_CORE int vidk_h264s_ue_len(uint32_t k) {
    const uint64_t v = (uint64_t)k + 1;
    int m = 0;
    while ((v >> (m + 1)) != 0)
        m++;
    return 2 * m + 1;
}

/* Macroblock i's place in its slice: the slice index, its first and last macroblock. */
typedef struct VidkH264sPlace {
    int k, first, last;
} VidkH264sPlace;

VIDK_CORE VidkH264sPlace vidk_h264s_place(const VidkH264sCtx *c, int i) {
    const int k = vidk_h264s_slice_of_row(c->mbh, c->slices, i / c->mbw);
    VidkH264sPlace p;
    p.k = k;
    if (c->slices <= 1) { /* vidk_h264s_slice_row0: no 64-bit division */
        p.first = 0, p.last = c->mbw * c->mbh - 1;
        return p;
    }
    p.first = (int)((int64_t)k * c->mbh / c->slices) * c->mbw;
    p.last = (int)((int64_t)(k + 1) * c->mbh / c->slices) * c->mbw - 1;
    return p;
}

/* mb_skip_run before coded macroblock i (P slices): the skipped ones since the previous
 * coded one of its slice. */
VIDK_CORE uint32_t vidk_h264s_run(int i, int first, const int32_t *last) {
    return (uint32_t)(i == first ? 0 : i - 1 - last[i - 1]);
}

/* Bits macroblock i adds to its slice's data: its mb_skip_run (P slices) and its
 * macroblock_layer() when it is coded, and the slice's final mb_skip_run when it is the
 * slice's last macroblock and skipped ones end the slice. */
VIDK_CORE uint64_t vidk_h264s_len(const VidkH264sCtx *c, int i, const int32_t *last,
                                  const uint8_t *skip, const uint32_t *bits) {
    const VidkH264sPlace p = vidk_h264s_place(c, i);
    uint64_t t = 0;
    if (!skip[i]) {
        t = bits[i];
        if (!c->intra) t += (uint64_t)vidk_h264s_ue_len(vidk_h264s_run(i, p.first, last));
    }
    if (i == p.last && !c->intra && last[i] != i)
        t += (uint64_t)vidk_h264s_ue_len((uint32_t)(i - last[i]));
    return t;
}

/* Byte order of the packed words: the first bit is the most significant bit of the word's
 * first byte in memory (little-endian hosts and devices). */
VIDK_CORE uint32_t vidk_h264s_bswap(uint32_t v) {
    return v >> 24 | (v >> 8 & 0xff00u) | (v << 8 & 0xff0000u) | v << 24;
}

#if defined(__CUDA_ARCH__)
#define VIDK_H264S_OR32(p, v) (void)atomicOr((p), (v))
#else
#define VIDK_H264S_OR32(p, v) (void)(*(p) |= (v))
#endif

/* OR the n (1..32) bits v (< 2^n) at bit pos of the packed words (zeroed beforehand; two
 * macroblocks may share a word, so the device ORs atomically). */
VIDK_CORE void vidk_h264s_or_bits(uint32_t *words, uint64_t pos, uint32_t v, int n) {
    const size_t w = (size_t)(pos >> 5);
    const int sh = (int)(pos & 31);
    const uint64_t x = (uint64_t)v << (64 - n - sh);
    const uint32_t hi = (uint32_t)(x >> 32), lo = (uint32_t)x;
    if (hi) VIDK_H264S_OR32(&words[w], vidk_h264s_bswap(hi));
    if (lo) VIDK_H264S_OR32(&words[w + 1], vidk_h264s_bswap(lo));
}

/* ue(k) at bit pos; returns the position after it. */
VIDK_CORE uint64_t vidk_h264s_or_ue(uint32_t *words, uint64_t pos, uint32_t k) {
    const int len = vidk_h264s_ue_len(k), m = len / 2; /* m zeros, then k + 1 in m + 1 bits */
    vidk_h264s_or_bits(words, pos + (uint64_t)m, k + 1, m + 1);
    return pos + (uint64_t)len;
}

/* OR the n bits at src (most significant first, readable 3 bytes past) at bit pos of the
 * words (vidk_h264s_or_bits). */
VIDK_CORE void vidk_h264_nal_or_bitstr(uint32_t *words, uint64_t pos, const uint8_t *src,
                                       uint32_t n) {
    for (uint32_t j = 0; j < n; j += 32) {
        const int k = n - j > 32 ? 32 : (int)(n - j);
        const uint8_t *q = src + j / 8;
        const uint32_t v =
            (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | (uint32_t)q[3];
        vidk_h264s_or_bits(words, pos, v >> (32 - k), k);
        pos += (uint64_t)k;
    }
}

/* Passes 1 and 2 by pieces: one device warp per macroblock, lane l coding piece l (lanes 28
 * to 31 idle), in steps separated by __syncwarp; on the host (vidk_h264s_count,
 * vidk_h264s_code_slot: the device's host emulation) every lane through a step before the
 * next. A piece has at most 766 bits, the header 1222 (VIDK_H264S_MB_MAX_BITS), and
 * vidk_h264_nal_or_bitstr reads 3 bytes past its bits. */
#define VIDK_H264S_LANE_BYTES 160
typedef struct VidkH264sLane { /* a lane's own (device: local memory) */
    int16_t lev[16];
    uint8_t buf[VIDK_H264S_LANE_BYTES];
} VidkH264sLane;

typedef struct VidkH264sWarp { /* what the lanes of a macroblock share (shared memory) */
    uint8_t fl[32];            /* each piece's flags (vidk_h264s_piece_lev) */
    uint32_t len[32];          /* each piece's bits */
    uint8_t ovf[32];           /* a piece overflowed its lane's buffer */
    int skip;                  /* P_Skip */
    int row0;                  /* the first row of the macroblock's slice */
    VidkH264MvNb nb;           /* an inter macroblock's neighbourhood (for the header) */
} VidkH264sWarp;

/* Pass 1, lane l of macroblock i: the TotalCoeff of its luma or chroma AC block. */
VIDK_CORE void vidk_h264s_w_count(const VidkH264sCtx *c, int i, int l) {
    if (l < VIDK_H264S_P_LUMA || l >= VIDK_H264S_PIECES ||
        (l >= VIDK_H264S_P_CDC && l < VIDK_H264S_P_CAC))
        return;
    const unsigned w = c->mbi[i];
    vidk_h264s_piece_count(c, i % c->mbw, i / c->mbw, VIDK_H264S_I16(w), !!(w & ENC_MBI_TX8),
                           l);
}

/* Pass 1 for macroblock i, its lanes in turn. */
VIDK_CORE void vidk_h264s_count(const VidkH264sCtx *c, int i) {
    for (int l = 0; l < 32; l++)
        vidk_h264s_w_count(c, i, l);
}

/* Pass 2, step 1, lane l of macroblock i: its piece's levels and flags; for an inter
 * macroblock of a P slice, entry l of its neighbourhood too (the lanes' loads in flight
 * together, not lane 0's chain in step 2; a B slice's header fills its lists' itself). */
VIDK_CORE void vidk_h264s_w_gather(const VidkH264sCtx *c, int i, int l, VidkH264sWarp *s,
                                   VidkH264sLane *L) {
    const unsigned w = c->mbi[i];
    const int mbx = i % c->mbw, mby = i / c->mbw, intra16 = VIDK_H264S_I16(w);
    s->fl[l] = l >= 1 && l < VIDK_H264S_PIECES
                   ? (uint8_t)vidk_h264s_piece_lev_tc(c, mbx, mby, intra16, !!(w & ENC_MBI_TX8),
                                                      l, L->lev)
                   : 0;
    const int row0 = vidk_h264s_slice_row0(c->mbh, c->slices, mby);
    if (l == 0) s->row0 = row0; /* for step 2 */
    if (!(w & ENC_MBI_INTRA) && !c->bslice && l < VIDK_H264_MVNB_ENTRIES)
        vidk_h264_mvnb_entry(&s->nb, l, c->mv4, c->W / 4, c->mbi, ENC_MBI_INTRA, -1, c->mbw,
                             c->mbh, row0, mbx, mby);
}

/* Step 2: its piece coded into its buffer, the length into s (lane 0: the header and the
 * P_Skip flag); cbp: the macroblock's, from step 1's flags (vidk_h264s_cbp, or the masks of
 * the lanes' flags on the device). */
VIDK_CORE void vidk_h264s_w_code(const VidkH264sCtx *f, int i, int l, VidkH264sWarp *s,
                                 VidkH264sLane *L, int cbp) {
    VidkH264sCtx c = *f;
    const int mbx = i % f->mbw, mby = i / f->mbw, intra16 = VIDK_H264S_I16(f->mbi[i]);
    c.row0 = s->row0;
    VidkBits b;
    vidk_bits_init(&b, L->buf, VIDK_H264S_LANE_BYTES - 3);
    if (l == 0)
        s->skip = vidk_h264s_head(&c, &b, &s->nb, mbx, mby, cbp);
    else if (l < VIDK_H264S_PIECES)
        vidk_h264s_piece_code(&c, &b, mbx, mby, intra16, cbp, l, L->lev);
    s->len[l] = (uint32_t)b.pos;
    s->ovf[l] = (uint8_t)b.overflow;
}

/* Where lane l's bits go: its offset in the macroblock's bits (the pieces before it), the
 * macroblock's total (0 when it does not fit a slot of slot_bytes: ovf), computed once per
 * lane after step 2: vidk_h264s_put_of from the lengths (the host), or by warp scans on the
 * device (stream.cu: the same integers). */
typedef struct VidkH264sPut {
    uint32_t off, total;
    int ovf;
} VidkH264sPut;

/* The place of lane l from the lengths and overflow flags of its macroblock's pieces. */
VIDK_CORE VidkH264sPut vidk_h264s_put_of(const uint32_t *len, const uint8_t *ovf, int l,
                                         size_t slot_bytes) {
    VidkH264sPut p = {0, 0, 0};
    uint64_t t = 0, off = 0;
    for (int k = 0; k < 32; k++)
        off += k < l ? len[k] : 0u, t += len[k], p.ovf |= ovf[k];
    p.ovf |= t > 8 * (uint64_t)slot_bytes;
    p.off = (uint32_t)off, p.total = p.ovf ? 0u : (uint32_t)t;
    return p;
}

/* Step 3: the slot's words its bits will cover zeroed (lane l: every 32nd). */
VIDK_CORE void vidk_h264s_w_zero(int i, int l, VidkH264sPut p, uint8_t *slots,
                                 size_t slot_bytes) {
    uint32_t *words = (uint32_t *)(void *)(slots + (size_t)i * slot_bytes);
    const uint32_t nw = (p.total + 31) / 32;
    for (uint32_t k = (uint32_t)l; k < nw; k += 32)
        words[k] = 0;
}

/* Step 4: its piece's bits ORed in at their place in the slot; lane 0 stores the
 * macroblock's bit count, P_Skip flag and scan key (vidk_h264s_key). Returns 1 when the
 * bits did not fit the slot (nothing is written then, and bits[i] is 0). */
VIDK_CORE int vidk_h264s_w_put(const VidkH264sCtx *c, int i, int l, VidkH264sPut p,
                               const VidkH264sWarp *s, const VidkH264sLane *L, uint8_t *slots,
                               size_t slot_bytes, uint32_t *bits, uint8_t *skip, int32_t *key) {
    if (!p.ovf && s->len[l])
        vidk_h264_nal_or_bitstr((uint32_t *)(void *)(slots + (size_t)i * slot_bytes), p.off,
                                L->buf, s->len[l]);
    if (l == 0) {
        bits[i] = p.total;
        skip[i] = (uint8_t)s->skip;
        key[i] = vidk_h264s_key(i, s->skip,
                                vidk_h264s_slice_row0(c->mbh, c->slices, i / c->mbw) * c->mbw);
    }
    return p.ovf;
}

/* Pass 2 for macroblock i, its lanes through each step in turn: its macroblock_layer() into
 * its slot (slot_bytes from slots), its bit count, P_Skip flag and scan key into bits[i],
 * skip[i], key[i]. Returns 1 when the slot was too small. */
VIDK_CORE int vidk_h264s_code_slot(const VidkH264sCtx *c, int i, uint8_t *slots,
                                   size_t slot_bytes, uint32_t *bits, uint8_t *skip,
                                   int32_t *key) {
    VidkH264sWarp s;
    VidkH264sLane L[32];
    int ovf = 0;
    s.skip = 0;
    for (int l = 0; l < 32; l++)
        vidk_h264s_w_gather(c, i, l, &s, &L[l]);
    const int cbp = vidk_h264s_cbp(s.fl, VIDK_H264S_I16(c->mbi[i]));
    for (int l = 0; l < 32; l++)
        vidk_h264s_w_code(c, i, l, &s, &L[l], cbp);
    for (int l = 0; l < 32; l++)
        vidk_h264s_w_zero(i, l, vidk_h264s_put_of(s.len, s.ovf, l, slot_bytes), slots,
                          slot_bytes);
    for (int l = 0; l < 32; l++)
        ovf |= vidk_h264s_w_put(c, i, l, vidk_h264s_put_of(s.len, s.ovf, l, slot_bytes), &s,
                                &L[l], slots, slot_bytes, bits, skip, key);
    return ovf;
}

/* Write macroblock i's bits (vidk_h264s_len of them) at bit off[i] of the packed words: its
 * mb_skip_run, its macroblock_layer() from its slot (slot_bytes, a multiple of 4, apart),
 * the slice's final mb_skip_run. The first macroblock of slice k stores the slice's start in
 * slice_off[k], the frame's last one the end in slice_off[slices] (off[] has n + 1 entries,
 * the exclusive sum of the lengths). */
VIDK_CORE void vidk_h264s_pack(const VidkH264sCtx *c, int i, const int32_t *last,
                               const uint8_t *skip, const uint32_t *bits, const uint8_t *slots,
                               size_t slot_bytes, const uint64_t *off, uint32_t *words,
                               uint64_t *slice_off) {
    const VidkH264sPlace p = vidk_h264s_place(c, i);
    const int n_mb = c->mbw * c->mbh;
    uint64_t pos = off[i];
    if (i == p.first) slice_off[p.k] = pos;
    if (i == n_mb - 1) slice_off[c->slices] = off[n_mb];
    if (!skip[i]) {
        if (!c->intra) pos = vidk_h264s_or_ue(words, pos, vidk_h264s_run(i, p.first, last));
        const uint8_t *src = slots + (size_t)i * slot_bytes;
        const uint32_t n = bits[i];
        for (uint32_t j = 0; j < n; j += 32) {
            const int k = n - j > 32 ? 32 : (int)(n - j);
            const uint8_t *q = src + j / 8;
            const uint32_t v = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
                               (uint32_t)q[2] << 8 | (uint32_t)q[3];
            vidk_h264s_or_bits(words, pos, v >> (32 - k), k);
            pos += (uint64_t)k;
        }
    }
    if (i == p.last && !c->intra && last[i] != i)
        pos = vidk_h264s_or_ue(words, pos, (uint32_t)(i - last[i]));
    (void)pos;
}

#endif
