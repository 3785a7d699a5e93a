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
    int intra;    /* 1: I slices (every macroblock Intra_16x16), 0: P slices */
    int row0;     /* first macroblock row of the slice being coded */
    const uint16_t *mbi;   /* decision word per macroblock (enc_core.h ENC_MBI_*), raster */
    const VidkMv *mv4;     /* vector per 4x4 luma block, W / 4 per row */
    const int16_t *lev[3]; /* level planes, strides W and W / 2 */
    uint8_t *tcl;          /* TotalCoeff per luma 4x4 block, (mbw * 4) x (mbh * 4) */
    uint8_t *tcc[2];       /* per chroma 4x4 block of Cb / Cr, (mbw * 2) x (mbh * 2) */
} VidkH264sCtx;

/* 4x4 and 8x8 zig-zag scans (8.5.6, 8.5.7, frame macroblocks): scan index -> raster. */
// clang-format off
#define VIDK_H264S_ZZ4 {0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15}
#define VIDK_H264S_ZZ8 {                                                \
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,      \
    12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,     \
    35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,     \
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63}
/* coded_block_pattern -> codeNum of me(v) for inter macroblocks (Table 9-4, ChromaArrayType
 * 1), the inverse of the table's codeNum -> cbp column. */
#define VIDK_H264S_INTER_CBP {                                          \
    0,  2,  3,  7,  4,  8,  17, 13, 5,  18, 9,  14, 10, 15, 16, 11,     \
    1,  32, 33, 36, 34, 37, 44, 40, 35, 45, 38, 41, 39, 42, 43, 19,     \
    6,  24, 25, 20, 26, 21, 46, 28, 27, 47, 22, 29, 23, 30, 31, 12}
// clang-format on
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_zz4, [16], VIDK_H264S_ZZ4)
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_zz8, [64], VIDK_H264S_ZZ8)
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_inter_cbp, [48], VIDK_H264S_INTER_CBP)

/* nC (9.2.1) of the block at (x, y) of a TotalCoeff map whose macroblocks are `per` blocks
 * wide (mbw * per blocks per row). */
VIDK_CORE int vidk_h264s_pred_nc(const VidkH264sCtx *c, const uint8_t *tc, int per, int x,
                                 int y) {
    const int stride = c->mbw * per;
    const int la = x > 0, ta = y > 0 && (y - 1) / per >= c->row0;
    const int na = la ? tc[y * stride + x - 1] : 0, nb = ta ? tc[(y - 1) * stride + x] : 0;
    return la && ta ? (na + nb + 1) >> 1 : la ? na : nb;
}

/* Position (4x4 units) of luma4x4BlkIdx k inside its macroblock (6.4.3). */
VIDK_CORE int vidk_h264s_blk_x(int k) {
    return (k & 1) | ((k >> 1) & 2);
}
VIDK_CORE int vidk_h264s_blk_y(int k) {
    return ((k >> 1) & 1) | ((k >> 2) & 2);
}

/* The levels of one macroblock, in coding order. */
typedef struct VidkH264sRes {
    int16_t dc[16];        /* Intra16x16DCLevel, scan order */
    int16_t y[16][16];     /* luma blocks by luma4x4BlkIdx, scan order (AC: [1..15]) */
    int16_t cdc[2][4];     /* chroma DC, c[0][0], c[0][1], c[1][0], c[1][1] */
    int16_t cac[2][4][16]; /* chroma AC by chroma4x4BlkIdx, scan order ([1..15]) */
    int cbp_luma, cbp_chroma;
} VidkH264sRes;

VIDK_CORE void vidk_h264s_gather(const VidkH264sCtx *c, int mbx, int mby, int intra16, int tx8,
                                 VidkH264sRes *r) {
    const uint8_t *zz4 = VIDK_CAVLC_TAB(zz4), *zz8 = VIDK_CAVLC_TAB(zz8);
    const int16_t *ly = c->lev[0];
    const int W = c->W, x0 = mbx * 16, y0 = mby * 16;
    int any_ac = 0;
    r->cbp_luma = 0;
    for (int k = 0; k < 16; k++) {
        const int bx = x0 + 4 * vidk_h264s_blk_x(k), by = y0 + 4 * vidk_h264s_blk_y(k);
        if (tx8 && !intra16) { /* 8x8: the 64 levels interleaved over the quadrant's blocks */
            const int q = k >> 2, i4 = k & 3;
            const int qx = x0 + 8 * (q & 1), qy = y0 + 8 * (q >> 1);
            for (int i = 0; i < 16; i++) {
                const int rr = zz8[4 * i + i4];
                r->y[k][i] = ly[(ptrdiff_t)(qy + rr / 8) * W + qx + rr % 8];
            }
        } else {
            for (int i = 0; i < 16; i++) {
                const int rr = zz4[i];
                r->y[k][i] = ly[(ptrdiff_t)(by + rr / 4) * W + bx + rr % 4];
            }
        }
        if (intra16) {
            for (int i = 1; i < 16; i++)
                any_ac |= r->y[k][i] != 0;
        } else {
            for (int i = 0; i < 16; i++)
                if (r->y[k][i]) r->cbp_luma |= 1 << (k >> 2);
        }
    }
    if (intra16) {
        for (int i = 0; i < 16; i++) {
            /* DC c[i][j] of the 4x4 block in row i, column j sits at its element 0 */
            const int rr = zz4[i];
            r->dc[i] = ly[(ptrdiff_t)(y0 + 4 * (rr / 4)) * W + x0 + 4 * (rr % 4)];
        }
        r->cbp_luma = any_ac ? 15 : 0;
    }
    int dc_nz = 0, ac_nz = 0;
    for (int p = 0; p < 2; p++) {
        const int16_t *lc = c->lev[p + 1];
        const int Wc = W / 2, cx = mbx * 8, cy = mby * 8;
        for (int b = 0; b < 4; b++) {
            const int bx = cx + 4 * (b & 1), by = cy + 4 * (b >> 1);
            for (int i = 0; i < 16; i++) {
                const int rr = zz4[i];
                r->cac[p][b][i] = lc[(ptrdiff_t)(by + rr / 4) * Wc + bx + rr % 4];
                if (i) ac_nz |= r->cac[p][b][i] != 0;
            }
            r->cdc[p][b] = r->cac[p][b][0];
            dc_nz |= r->cdc[p][b] != 0;
        }
    }
    r->cbp_chroma = ac_nz ? 2 : dc_nz ? 1 : 0;
}

/* Pass 1: TotalCoeff of every 4x4 block of a macroblock into the maps (what nC reads,
 * 9.2.1): the non-zero levels a block codes (AC only for Intra_16x16 and chroma; 0 for
 * blocks the cbp leaves out, which hold only zeros, and for P_Skip macroblocks, which have
 * none). */
VIDK_CORE void vidk_h264s_count_mb(const VidkH264sCtx *c, int mbx, int mby) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int intra16 = !!(w & ENC_MBI_INTRA), ls = c->mbw * 4, cs = c->mbw * 2;
    VidkH264sRes r;
    vidk_h264s_gather(c, mbx, mby, intra16, !!(w & ENC_MBI_TX8), &r);
    for (int k = 0; k < 16; k++) {
        int n = 0;
        for (int i = intra16; i < 16; i++)
            n += r.y[k][i] != 0;
        c->tcl[(mby * 4 + vidk_h264s_blk_y(k)) * ls + mbx * 4 + vidk_h264s_blk_x(k)] =
            (uint8_t)n;
    }
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < 4; k++) {
            int n = 0;
            for (int i = 1; i < 16; i++)
                n += r.cac[p][k][i] != 0;
            c->tcc[p][(mby * 2 + (k >> 1)) * cs + mbx * 2 + (k & 1)] = (uint8_t)n;
        }
}

/* residual() (7.3.5.3) with CAVLC. */
VIDK_CORE void vidk_h264s_residual(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby,
                                   int intra16, const VidkH264sRes *r) {
    if (intra16)
        (void)vidk_cavlc_block(b, r->dc, 16,
                               vidk_h264s_pred_nc(c, c->tcl, 4, mbx * 4, mby * 4));
    for (int k = 0; k < 16; k++) {
        if (!(r->cbp_luma & (1 << (k >> 2)))) continue;
        const int nc = vidk_h264s_pred_nc(c, c->tcl, 4, mbx * 4 + vidk_h264s_blk_x(k),
                                          mby * 4 + vidk_h264s_blk_y(k));
        if (intra16)
            (void)vidk_cavlc_block(b, r->y[k] + 1, 15, nc);
        else
            (void)vidk_cavlc_block(b, r->y[k], 16, nc);
    }
    if (r->cbp_chroma)
        for (int p = 0; p < 2; p++)
            (void)vidk_cavlc_block(b, r->cdc[p], 4, -1);
    if (r->cbp_chroma == 2)
        for (int p = 0; p < 2; p++)
            for (int k = 0; k < 4; k++)
                (void)vidk_cavlc_block(
                    b, r->cac[p][k] + 1, 15,
                    vidk_h264s_pred_nc(c, c->tcc[p], 2, mbx * 2 + (k & 1), mby * 2 + (k >> 1)));
}

VIDK_CORE void vidk_h264s_put_mvd(VidkBits *b, VidkMv mv, VidkMv p) {
    vidk_put_se(b, 4 * (mv.x - p.x)); /* quarter-sample units */
    vidk_put_se(b, 4 * (mv.y - p.y));
}

/* An inter macroblock's macroblock_layer(); returns 1 (writing nothing) when it is coded as
 * P_Skip: a 16x16 partition with no residual whose vector is the P_Skip vector. */
VIDK_CORE int vidk_h264s_p_mb(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    const int mode = (int)(w & 3), tx8 = !!(w & ENC_MBI_TX8);
    int sub[4];
    for (int q = 0; q < 4; q++)
        sub[q] = mode == 3 ? (int)(w >> (2 + 2 * q)) & 3 : 0;
    VidkH264sRes r;
    vidk_h264s_gather(c, mbx, mby, 0, tx8, &r);
    const int cbp = r.cbp_luma | r.cbp_chroma << 4;
    VidkH264MvNb nb;
    vidk_h264_mvnb_fill(&nb, c->mv4, c->W / 4, c->mbi, ENC_MBI_INTRA, c->mbw, c->mbh, c->row0,
                        mbx, mby);
    if (mode == 0 && !cbp) {
        const VidkMv sm = vidk_h264_skip_mv(&nb);
        if (sm.x == nb.in[0].x && sm.y == nb.in[0].y) return 1;
    }
    vidk_put_ue(b, (uint32_t)mode); /* mb_type: P_L0_16x16, P_L0_L0_16x8, P_L0_L0_8x16, P_8x8 */
    if (mode == 3)
        for (int q = 0; q < 4; q++)
            vidk_put_ue(b, (uint32_t)sub[q]); /* sub_mb_type: 8x8, 8x4, 4x8, 4x4 */
    int px[16], py[16], pw[16], pd[16];
    int8_t order[16];
    const int np = vidk_h264_parts(mode, sub, px, py, pw, pd, order);
    for (int k = 0; k < np; k++) {
        const VidkMv p = vidk_h264_mvp(&nb, px[k], py[k], pw[k], pd[k], order, k);
        vidk_h264s_put_mvd(b, nb.in[4 * py[k] + px[k]], p);
    }
    vidk_put_ue(b, VIDK_CAVLC_TAB(inter_cbp)[cbp]); /* coded_block_pattern, me(v) */
    const int tx8_allowed = mode != 3 || (!sub[0] && !sub[1] && !sub[2] && !sub[3]);
    if (r.cbp_luma && tx8_allowed) vidk_put_bits(b, 1, (uint32_t)tx8);
    if (cbp) {
        vidk_put_se(b, 0); /* mb_qp_delta */
        vidk_h264s_residual(c, b, mbx, mby, 0, &r);
    }
    return 0;
}

/* An Intra_16x16 macroblock (in an I slice, or in a P slice: mb_type offset by 5,
 * Table 7-13). */
VIDK_CORE void vidk_h264s_i_mb(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    VidkH264sRes r;
    vidk_h264s_gather(c, mbx, mby, 1, 0, &r);
    /* mb_type (Table 7-11): 1 + pred mode + 4 cbp chroma + 12 (cbp luma 15) */
    vidk_put_ue(b, (c->intra ? 1u : 6u) + (w & 3) + 4 * (unsigned)r.cbp_chroma +
                       (r.cbp_luma ? 12u : 0u));
    vidk_put_ue(b, (w >> 2) & 3); /* intra_chroma_pred_mode */
    vidk_put_se(b, 0);            /* mb_qp_delta */
    vidk_h264s_residual(c, b, mbx, mby, 1, &r);
}

/* Pass 2: macroblock (mbx, mby)'s macroblock_layer() into b (c->row0: its slice's first
 * row); returns 1 (writing nothing) when it is coded as P_Skip. */
VIDK_CORE int vidk_h264s_code_mb(const VidkH264sCtx *c, VidkBits *b, int mbx, int mby) {
    if (c->mbi[mby * c->mbw + mbx] & ENC_MBI_INTRA) {
        vidk_h264s_i_mb(c, b, mbx, mby);
        return 0;
    }
    return vidk_h264s_p_mb(c, b, mbx, mby);
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

/* Pass 1 for macroblock i (raster; one device thread). */
VIDK_CORE void vidk_h264s_count(const VidkH264sCtx *c, int i) {
    vidk_h264s_count_mb(c, i % c->mbw, i / c->mbw);
}

/* The scan key of macroblock i after pass 2: i when it is coded, i - 1 when it is skipped
 * and the first of its slice (the slice's mb_skip_run counts from there), else -1. The
 * inclusive max-scan of the keys, last[i], is the last coded macroblock at or before i in
 * i's slice (or the slice's first macroblock - 1 when there is none). */
VIDK_CORE int32_t vidk_h264s_key(int i, int skip, int slice_first) {
    return !skip ? i : i == slice_first ? i - 1 : -1;
}

/* Pass 2 for macroblock i (one device thread): its macroblock_layer() into its slot
 * (slot_bytes from slots), its bit count, P_Skip flag and scan key into bits[i], skip[i],
 * key[i]. Returns 1 when the slot was too small (its bits are then incomplete, but never
 * more than 8 slot_bytes). */
VIDK_CORE int vidk_h264s_code_slot(const VidkH264sCtx *f, int i, uint8_t *slots,
                                   size_t slot_bytes, uint32_t *bits, uint8_t *skip,
                                   int32_t *key) {
    VidkH264sCtx c = *f;
    const int mbx = i % f->mbw, mby = i / f->mbw;
    c.row0 = vidk_h264s_slice_row0(f->mbh, f->slices, mby);
    VidkBits b;
    vidk_bits_init(&b, slots + (size_t)i * slot_bytes, slot_bytes);
    const int sk = vidk_h264s_code_mb(&c, &b, mbx, mby);
    bits[i] = (uint32_t)b.pos;
    skip[i] = (uint8_t)sk;
    key[i] = vidk_h264s_key(i, sk, c.row0 * f->mbw);
    return b.overflow;
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
