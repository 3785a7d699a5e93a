/* The H.264 macroblock layer with CABAC (7.3.4, 7.3.5 with entropy_coding_mode_flag 1; the
 * binarisations of 9.3.2 and the context selection of 9.3.3.1) for the syntax the coding loop
 * produces: P_Skip, the four P partitionings with their sub-macroblock types, B_Skip,
 * B_Direct_16x16, B_L0 / B_L1 / B_Bi in one 16x16 or two 16x8 / 8x16 partitions, Intra_16x16
 * and I_NxN (Intra_4x4, Intra_8x8) in I, P and B slices, the 4x4 and 8x8 transforms,
 * mb_qp_delta 0, one reference per list. A slice is coded macroblock by macroblock in order
 * (each bin's context depends on what came before); the engine is src/h264_cabac_core.h.
 * Written once for the host writer (src/enc/h264_stream.c) and, later, the device.
 * docs/STREAM.md describes the stream. */
#ifndef VIDK_H264_STREAM_CABAC_H
#define VIDK_H264_STREAM_CABAC_H

#include "h264_cabac_core.h"
#include "h264_nal_core.h"
#include "h264_stream_core.h"

// clang-format off
/* Table 9-43: ctxIdxInc of significant_coeff_flag (frame macroblocks) and of
 * last_significant_coeff_flag for the 63 first positions of an 8x8 block's scan. */
#define VIDK_H264_CABAC_SIG8 {                                                      \
    0, 1, 2, 3, 4, 5, 5, 4, 4, 3, 3, 4, 4, 4, 5, 5, 4, 4, 4, 4, 3, 3, 6, 7, 7, 7, 8,  \
    9, 10, 9, 8, 7, 7, 6, 11, 12, 13, 11, 6, 7, 8, 9, 14, 10, 9, 8, 6, 11, 12, 13, 11, \
    6, 9, 14, 10, 9, 11, 12, 13, 11, 14, 10, 12}
#define VIDK_H264_CABAC_LAST8 {                                                     \
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,  \
    2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6,  \
    6, 6, 7, 7, 7, 7, 8, 8, 8}
// clang-format on
VIDK_CORE_TABLE(uint8_t, vidk_h264_cabac_sig8, [63], VIDK_H264_CABAC_SIG8)
VIDK_CORE_TABLE(uint8_t, vidk_h264_cabac_last8, [63], VIDK_H264_CABAC_LAST8)

/* Bins of one macroblock at most: 384 coefficients (Intra_16x16: DC 16 + 16 x 15 AC, inter:
 * 256 luma; chroma 2 x 4 DC + 8 x 15 AC) of at most 48 bins each (significance, last, the
 * level's UEG0 prefix 14 and suffix 31 for |level| <= 32768, the sign), 27 coded_block_flags,
 * 16 partitions' two mvd components of at most 44 (prefix 9, UEG3 suffix 34 for int16
 * vectors, sign), and 40 for the rest of the header: 19907. */
#define VIDK_CABAC_MB_MAX_BINS 19907

/* What a macroblock's neighbours read of it (written when it is coded). */
typedef struct VidkCabacMb {
    uint8_t skip, intra, nxn, tx8, cbp, cpred;
    uint8_t cbf_dc;     /* coded_block_flag: bit 0 the Intra16x16DCLevel, 1 + p chroma DC */
    uint8_t cbf_cac[2]; /* of the chroma AC blocks of Cb / Cr: bit 2 y + x */
    uint16_t cbf4;      /* of the luma 4x4 blocks (8x8 blocks: their four): bit 4 y + x */
} VidkCabacMb;

/* What the macroblocks of a picture leave for their neighbours. */
typedef struct VidkCabacPic {
    VidkCabacMb *mb; /* per macroblock, raster */
    uint8_t *amvd;   /* per luma 4x4 block, (mbw * 4) x (mbh * 4): |mvd| x, y (capped at 64) */
    uint8_t *amvd1;  /* the same for mvd_l1 (B slices; NULL where none are coded) */
} VidkCabacPic;

/* mvd (quarter samples) of one component (9.3.2.3 UEG3, signed, uCoff 9; 9.3.3.1.1.7):
 * base 40 (x) or 47 (y), sum the neighbours' |mvd|. */
VIDK_CORE void vidk_cabac_mvd(VidkCabacBins *o, int base, int sum, int v) {
    const int a = v < 0 ? -v : v;
    vidk_cabac_bin(o, base + (sum < 3 ? 0 : sum > 32 ? 2 : 1), a != 0);
    if (!a) return;
    const int p = a < 9 ? a : 9;
    for (int i = 1; i < p; i++)
        vidk_cabac_bin(o, base + (i + 2 < 6 ? i + 2 : 6), 1);
    if (a < 9) {
        vidk_cabac_bin(o, base + (p + 2 < 6 ? p + 2 : 6), 0);
    } else {
        vidk_cabac_eg_bypass(o, a - 9, 3);
    }
    vidk_cabac_bin(o, VIDK_CABAC_BYPASS, v < 0);
}

/* residual_block_cabac() (7.3.5.3.3) of the levels c[0..n-1] in scan order, ctxBlockCat
 * cat (0 Intra16x16DC, 1 Intra16x16AC, 2 luma 4x4, 3 chroma DC, 4 chroma AC, 5 luma 8x8);
 * cbf_inc: the coded_block_flag's ctxIdxInc (9.3.3.1.1.9), -1 for an 8x8 block (not coded
 * in 4:2:0: the cbp's bit). Returns the coded_block_flag. */
VIDK_CORE int vidk_cabac_block(VidkCabacBins *o, int cat, const int16_t *c, int n,
                               int cbf_inc) {
    int last = -1;
    for (int i = 0; i < n; i++)
        if (c[i]) last = i;
    if (cbf_inc >= 0) {
        const int cbf_off = 4 * cat; /* Table 9-40: 0, 4, 8, 12, 16 */
        vidk_cabac_bin(o, 85 + cbf_off + cbf_inc, last >= 0);
    }
    if (last < 0) return 0;
    const int cat_off = cat == 0 ? 0 : cat == 1 ? 15 : cat == 2 ? 29 : cat == 3 ? 44 : 47;
    const int abs_base = cat == 5 ? 426 : 227 + (cat == 4 ? 39 : 10 * cat);
    for (int i = 0; i < n - 1; i++) {
        const int sig = c[i] != 0;
        const int s_ctx = cat == 5   ? 402 + VIDK_CORE_TAB(vidk_h264_cabac_sig8)[i]
                          : cat == 3 ? 105 + cat_off + (i < 2 ? i : 2)
                                     : 105 + cat_off + i;
        vidk_cabac_bin(o, s_ctx, sig);
        if (sig) {
            const int l_ctx = cat == 5   ? 417 + VIDK_CORE_TAB(vidk_h264_cabac_last8)[i]
                              : cat == 3 ? 166 + cat_off + (i < 2 ? i : 2)
                                         : 166 + cat_off + i;
            vidk_cabac_bin(o, l_ctx, i == last);
            if (i == last) break;
        }
    }
    int gt1 = 0, eq1 = 0;
    for (int i = last; i >= 0; i--) {
        if (!c[i]) continue;
        const int a = (c[i] < 0 ? -c[i] : c[i]) - 1; /* coeff_abs_level_minus1, UEG0, 14 */
        vidk_cabac_bin(o, abs_base + (gt1 ? 0 : 1 + eq1 < 4 ? 1 + eq1 : 4), a != 0);
        if (a) {
            const int lim = 4 - (cat == 3), inc = 5 + (gt1 < lim ? gt1 : lim);
            const int p = a < 14 ? a : 14;
            for (int k = 1; k < p; k++)
                vidk_cabac_bin(o, abs_base + inc, 1);
            if (a < 14) {
                vidk_cabac_bin(o, abs_base + inc, 0);
            } else {
                vidk_cabac_eg_bypass(o, a - 14, 0);
            }
            gt1++;
        } else {
            eq1++;
        }
        vidk_cabac_bin(o, VIDK_CABAC_BYPASS, c[i] < 0);
    }
    return 1;
}

/* condTermFlagN of coded_block_flag (9.3.3.1.1.9) from a neighbouring macroblock that is
 * not the current one: unavailable: 1 for an intra current macroblock, else 0; available:
 * the flag of its block (0 where the block is not coded: P_Skip, cbp bit 0, ...). */
VIDK_CORE int vidk_cabac_cbf_nb(const VidkCabacMb *n, int cur_intra, int flag) {
    return n ? flag : cur_intra;
}

/* coded_block_pattern (9.3.2.6, 9.3.3.1.1.4): the luma prefix (ctxIdx 73..76), the chroma
 * suffix (77..84), from the left and upper macroblocks A, B (NULL: not available). */
VIDK_CORE void vidk_cabac_cbp(VidkCabacBins *o, const VidkCabacMb *A, const VidkCabacMb *B,
                              int cbp) {
    const int ch = cbp >> 4;
    for (int b8 = 0; b8 < 4; b8++) {
        const int x8 = b8 & 1, y8 = b8 >> 1;
        const int ca =
            x8 ? !((cbp >> (b8 - 1)) & 1) : A && (A->skip || !((A->cbp >> (b8 + 1)) & 1));
        const int cb =
            y8 ? !((cbp >> (b8 - 2)) & 1) : B && (B->skip || !((B->cbp >> (b8 + 2)) & 1));
        vidk_cabac_bin(o, 73 + ca + 2 * cb, (cbp >> b8) & 1);
    }
    const int ca = A && !A->skip && (A->cbp >> 4) != 0;
    const int cb = B && !B->skip && (B->cbp >> 4) != 0;
    vidk_cabac_bin(o, 77 + ca + 2 * cb, ch != 0);
    if (ch) {
        const int ca2 = A && !A->skip && (A->cbp >> 4) == 2;
        const int cb2 = B && !B->skip && (B->cbp >> 4) == 2;
        vidk_cabac_bin(o, 77 + 4 + ca2 + 2 * cb2, ch == 2);
    }
}

/* An inter macroblock's partitions (vidk_h264_parts) and their mvd in quarter samples, from
 * its vectors and their prediction (8.4.1.3); skip: coded as P_Skip (a 16x16 partition with
 * no residual at the P_Skip vector). */
typedef struct VidkCabacParts {
    int mode, np, skip, sub[4], px[16], py[16], dx[16], dy[16];
    int8_t order[16];
} VidkCabacParts;

VIDK_CORE void vidk_cabac_parts(const VidkH264sCtx *c, int mbx, int mby, int cbp,
                                VidkCabacParts *P) {
    const unsigned w = c->mbi[mby * c->mbw + mbx];
    VidkH264MvNb nb;
    vidk_h264_mvnb_fill(&nb, c->mv4, c->W / 4, c->mbi, ENC_MBI_INTRA, -1, c->mbw, c->mbh,
                        c->row0, mbx, mby);
    P->mode = (int)(w & 3);
    for (int q = 0; q < 4; q++)
        P->sub[q] = P->mode == 3 ? (int)(w >> (2 + 2 * q)) & 3 : 0;
    P->skip = 0;
    if (P->mode == 0 && !cbp) {
        const VidkMv sm = vidk_h264_skip_mv(&nb);
        P->skip = sm.x == nb.in[0].x && sm.y == nb.in[0].y;
    }
    int pw[16], pd[16];
    P->np = vidk_h264_parts(P->mode, P->sub, P->px, P->py, pw, pd, P->order);
    for (int k = 0; k < P->np; k++) {
        const VidkMv p = vidk_h264_mvp(&nb, P->px[k], P->py[k], pw[k], pd[k], P->order, k);
        const VidkMv v = nb.in[4 * P->py[k] + P->px[k]];
        P->dx[k] = v.x - p.x, P->dy[k] = v.y - p.y; /* quarter samples */
    }
}

/* The |mvd| map entry of luma block (x, y) of macroblock (mbx, mby). */
VIDK_CORE uint8_t *vidk_cabac_amvd(const VidkCabacPic *cp, int mbw, int mbx, int mby, int x,
                                   int y) {
    return cp->amvd + (((size_t)mby * 4 + y) * (mbw * 4) + (size_t)mbx * 4 + x) * 2;
}

/* The same in list `list`'s map (B slices). */
VIDK_CORE uint8_t *vidk_cabac_amvd_l(const VidkCabacPic *cp, int list, int mbw, int mbx,
                                     int mby, int x, int y) {
    return (list ? cp->amvd1 : cp->amvd) +
           (((size_t)mby * 4 + y) * (mbw * 4) + (size_t)mbx * 4 + x) * 2;
}

/* mb_type of a B slice (9.3.2.5, Table 9-37; ctxIdxOffset 27): t 0 .. 21 (vidk_h264s_b_type),
 * 23 the prefix of an intra macroblock (its I-slice mb_type follows with ctxIdxOffset 32);
 * bin 0's ctxIdxInc inc (9.3.3.1.1.3), the later bins' ctxIdx by Table 9-39 (bin 1: 27 + 3,
 * bin 2: 27 + 5 after b1 = 0, else 27 + 4, the rest 27 + 5). After 1 1 the table's strings
 * are 4 bits (t - 3 for t 3 .. 10; 13 intra, 14 for 11, 15 for 22) or, for t 12 .. 21, the
 * 5 bits of t + 4. */
VIDK_CORE void vidk_cabac_b_type(VidkCabacBins *o, int inc, int t) {
    vidk_cabac_bin(o, 27 + inc, t != 0);
    if (!t) return; /* 0 */
    vidk_cabac_bin(o, 30, t >= 3);
    if (t < 3) { /* 1 0 0, 1 0 1 */
        vidk_cabac_bin(o, 32, t == 2);
        return;
    }
    const int n = t >= 12 && t <= 21 ? 5 : 4;
    const int bits = n == 5 ? t + 4 : t <= 10 ? t - 3 : t == 11 ? 14 : t == 22 ? 15 : 13;
    vidk_cabac_bin(o, 31, bits >> (n - 1) & 1);
    for (int k = n - 2; k >= 0; k--)
        vidk_cabac_bin(o, 32, bits >> k & 1);
}

/* Pass 1, each macroblock on its own: what it leaves for its neighbours' contexts
 * (cp->mb[i], its blocks' |mvd|): P_Skip, the cbp, the transform size as coded, the chroma
 * prediction mode and every block's coded_block_flag, from its decision, vectors and levels. */
VIDK_CORE void vidk_cabac_mb_info(const VidkH264sCtx *c, const VidkCabacPic *cp, int mbx,
                                  int mby) {
    const int mbw = c->mbw, i = mby * mbw + mbx;
    const unsigned w = c->mbi[i];
    const int intra = !!(w & ENC_MBI_INTRA), i16 = VIDK_H264S_I16(w);
    const int tx8 = !i16 && (w & ENC_MBI_TX8); /* inter, or I_NxN with Intra_8x8 */
    int16_t lev[VIDK_H264S_PIECES][16];
    uint8_t fl[VIDK_H264S_PIECES];
    const int cbp = vidk_h264s_mb_levels(c, mbx, mby, i16, tx8, 0, lev, fl), ch = cbp >> 4;
    VidkCabacMb m;
    m.skip = 0, m.intra = (uint8_t)intra, m.nxn = (uint8_t)(intra && !i16), m.tx8 = 0;
    m.cbp = (uint8_t)cbp, m.cpred = 0;
    m.cbf_dc = 0, m.cbf_cac[0] = m.cbf_cac[1] = 0, m.cbf4 = 0;
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            uint8_t *a = vidk_cabac_amvd(cp, mbw, mbx, mby, x, y);
            a[0] = a[1] = 0;
            if (c->bslice) { /* skipped, direct, intra or not using list 1: 0 */
                a = vidk_cabac_amvd_l(cp, 1, mbw, mbx, mby, x, y);
                a[0] = a[1] = 0;
            }
        }
    if (!intra && c->bslice) { /* 16x16, 16x8, 8x16 or direct, one reference per list */
        const int t = vidk_h264s_b_type(w), pm = (int)(w & 3);
        if (t == 0 && !cbp) { /* B_Skip */
            m.skip = 1;
            cp->mb[i] = m;
            return;
        }
        for (int list = 0; list < 2; list++) {
            /* B_Direct_16x16 and a partition not using the list: no mvd (0) */
            if (!t) continue;
            int dx[2], dy[2], px[2], py[2], pk[2];
            const int np = vidk_h264s_b_mvd(c, mbx, mby, list, dx, dy, px, py, pk);
            for (int j = 0; j < np; j++)
                for (int b = 0; b < 16; b++) {
                    if (enc_h264_part_of(pm, b) != pk[j]) continue;
                    const int ax = dx[j] < 0 ? -dx[j] : dx[j], ay = dy[j] < 0 ? -dy[j] : dy[j];
                    uint8_t *a = vidk_cabac_amvd_l(cp, list, mbw, mbx, mby, b & 3, b >> 2);
                    a[0] = (uint8_t)(ax < 64 ? ax : 64), a[1] = (uint8_t)(ay < 64 ? ay : 64);
                }
        }
        m.tx8 = (uint8_t)(tx8 && (cbp & 15)); /* direct too: direct_8x8_inference_flag 1 */
    } else if (!intra) {
        VidkCabacParts P;
        vidk_cabac_parts(c, mbx, mby, cbp, &P);
        if (P.skip) {
            m.skip = 1;
            cp->mb[i] = m;
            return;
        }
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++) {
                const int k = P.order[4 * y + x];
                const int ax = P.dx[k] < 0 ? -P.dx[k] : P.dx[k];
                const int ay = P.dy[k] < 0 ? -P.dy[k] : P.dy[k];
                uint8_t *a = vidk_cabac_amvd(cp, mbw, mbx, mby, x, y);
                a[0] = (uint8_t)(ax < 64 ? ax : 64), a[1] = (uint8_t)(ay < 64 ? ay : 64);
            }
        const int tx8_allowed =
            P.mode != 3 || (!P.sub[0] && !P.sub[1] && !P.sub[2] && !P.sub[3]);
        m.tx8 = (uint8_t)(tx8 && tx8_allowed && (cbp & 15));
    } else {
        m.cpred = (uint8_t)((w >> 2) & 3);
        m.tx8 = (uint8_t)tx8; /* I_NxN: transform_size_8x8_flag coded whatever the cbp */
        m.cbf_dc = (uint8_t)(i16 && (fl[VIDK_H264S_P_DC] & 1)); /* I_NxN: no DC block */
    }
    for (int k = 0; k < 16; k++) { /* the luma blocks' coded_block_flag */
        const int bx = vidk_h264s_blk_x(k), by = vidk_h264s_blk_y(k);
        const int on = (cbp >> (k >> 2)) & 1;
        const int f = !on   ? 0
                      : tx8 ? 1
                      : i16 ? (fl[VIDK_H264S_P_LUMA + k] >> 1) & 1
                            : fl[VIDK_H264S_P_LUMA + k] & 1;
        m.cbf4 |= (uint16_t)(f << (4 * by + bx));
    }
    for (int p = 0; p < 2; p++) {
        if (ch) m.cbf_dc |= (uint8_t)((fl[VIDK_H264S_P_CDC + p] & 1) << (1 + p));
        for (int b = 0; ch == 2 && b < 4; b++)
            m.cbf_cac[p] |= (uint8_t)(((fl[VIDK_H264S_P_CAC + 4 * p + b] >> 1) & 1) << b);
    }
    cp->mb[i] = m;
}

/* Pass 2: the bins of one macroblock of a slice (c->row0: its first row) appended to o (at
 * most VIDK_CABAC_MB_MAX_BINS), once pass 1 has run on it and on its left and upper
 * neighbours; last: the slice's last macroblock (end_of_slice_flag). */
VIDK_CORE void vidk_cabac_mb(const VidkH264sCtx *c, const VidkCabacPic *cp, VidkCabacBins *o,
                             int mbx, int mby, int last) {
    const int mbw = c->mbw, i = mby * mbw + mbx;
    const unsigned w = c->mbi[i];
    const VidkCabacMb m = cp->mb[i];
    const int intra = m.intra, i16 = intra && !m.nxn, tx8 = !i16 && (w & ENC_MBI_TX8);
    const VidkCabacMb *A = mbx > 0 ? &cp->mb[i - 1] : 0;
    const VidkCabacMb *B = mby > c->row0 ? &cp->mb[i - mbw] : 0;
    if (!c->intra) /* mb_skip_flag (P slices: ctxIdx 11..13, B slices: 24..26) */
        vidk_cabac_bin(o, (c->bslice ? 24 : 11) + (A && !A->skip) + (B && !B->skip), m.skip);
    if (m.skip) {
        vidk_cabac_bin(o, VIDK_CABAC_TERM, last); /* end_of_slice_flag */
        return;
    }
    int16_t lev[VIDK_H264S_PIECES][16];
    uint8_t fl[VIDK_H264S_PIECES];
    const int cbp = vidk_h264s_mb_levels(c, mbx, mby, i16, tx8, 0, lev, fl), ch = cbp >> 4;
    /* B slices, mb_type's bin 0: condTermFlagN 0 where N is unavailable, B_Skip or
     * B_Direct_16x16 (9.3.3.1.1.3) */
    const unsigned wa = c->bslice && A ? c->mbi[i - 1] : 0u,
                   wb = c->bslice && B ? c->mbi[i - mbw] : 0u;
    const int b_inc = c->bslice ? (A && ((wa & ENC_MBI_INTRA) || !(wa & ENC_MBI_DIRECT))) +
                                      (B && ((wb & ENC_MBI_INTRA) || !(wb & ENC_MBI_DIRECT)))
                                : 0;
    if (!intra && c->bslice) {
        const int t = vidk_h264s_b_type(w);
        vidk_cabac_b_type(o, b_inc, t);
        for (int list = 0; list < 2; list++) {
            if (!t) continue;
            /* mvd_l0s, then mvd_l1s (of the partitions using the list); the neighbours' |mvd|
             * of the same list (6.4.11.7: the blocks left of and above the partition's first),
             * 0 where skipped, direct, intra or not using the list */
            int dx[2], dy[2], px[2], py[2], pk[2];
            const int np = vidk_h264s_b_mvd(c, mbx, mby, list, dx, dy, px, py, pk);
            for (int k = 0; k < np; k++) {
                const int x = px[k], y = py[k];
                const uint8_t *la = x   ? vidk_cabac_amvd_l(cp, list, mbw, mbx, mby, x - 1, y)
                                    : A ? vidk_cabac_amvd_l(cp, list, mbw, mbx - 1, mby, 3, y)
                                        : 0;
                const uint8_t *lb = y   ? vidk_cabac_amvd_l(cp, list, mbw, mbx, mby, x, y - 1)
                                    : B ? vidk_cabac_amvd_l(cp, list, mbw, mbx, mby - 1, x, 3)
                                        : 0;
                vidk_cabac_mvd(o, 40, (la ? la[0] : 0) + (lb ? lb[0] : 0), dx[k]);
                vidk_cabac_mvd(o, 47, (la ? la[1] : 0) + (lb ? lb[1] : 0), dy[k]);
            }
        }
        vidk_cabac_cbp(o, A, B, cbp);
        if (cbp & 15) /* transform_size_8x8_flag (B_Direct_16x16 too) */
            vidk_cabac_bin(o, 399 + (A && A->tx8) + (B && B->tx8), tx8);
    } else if (!intra) {
        VidkCabacParts P;
        vidk_cabac_parts(c, mbx, mby, cbp, &P);
        const int mode = P.mode;
        /* mb_type (Table 9-37, ctxIdx 14..17) */
        vidk_cabac_bin(o, 14, 0);
        vidk_cabac_bin(o, 15, mode == 1 || mode == 2);
        vidk_cabac_bin(o, mode == 1 || mode == 2 ? 17 : 16, mode == 1 || mode == 3);
        if (mode == 3) /* sub_mb_type (Table 9-38, ctxIdx 21..23) */
            for (int q = 0; q < 4; q++) {
                vidk_cabac_bin(o, 21, P.sub[q] == 0);
                if (P.sub[q]) {
                    vidk_cabac_bin(o, 22, P.sub[q] != 1);
                    if (P.sub[q] != 1) vidk_cabac_bin(o, 23, P.sub[q] == 2);
                }
            }
        for (int k = 0; k < P.np; k++) { /* mvd_l0, with the neighbours' |mvd| (6.4.11.7) */
            const int x = P.px[k], y = P.py[k];
            const uint8_t *la = x   ? vidk_cabac_amvd(cp, mbw, mbx, mby, x - 1, y)
                                : A ? vidk_cabac_amvd(cp, mbw, mbx - 1, mby, 3, y)
                                    : 0;
            const uint8_t *lb = y   ? vidk_cabac_amvd(cp, mbw, mbx, mby, x, y - 1)
                                : B ? vidk_cabac_amvd(cp, mbw, mbx, mby - 1, x, 3)
                                    : 0;
            vidk_cabac_mvd(o, 40, (la ? la[0] : 0) + (lb ? lb[0] : 0), P.dx[k]);
            vidk_cabac_mvd(o, 47, (la ? la[1] : 0) + (lb ? lb[1] : 0), P.dy[k]);
        }
        vidk_cabac_cbp(o, A, B, cbp);
        const int tx8_allowed = mode != 3 || (!P.sub[0] && !P.sub[1] && !P.sub[2] && !P.sub[3]);
        if ((cbp & 15) && tx8_allowed) /* transform_size_8x8_flag (ctxIdx 399..401) */
            vidk_cabac_bin(o, 399 + (A && A->tx8) + (B && B->tx8), tx8);
    } else {
        /* P slice: the prefix 1, B slice: the prefix of 23 (Table 9-37), then the suffix */
        if (c->bslice)
            vidk_cabac_b_type(o, b_inc, 23);
        else if (!c->intra)
            vidk_cabac_bin(o, 14, 1);
        const int base = c->intra ? 3 : c->bslice ? 32 : 17, pred = (int)(w & 3);
        /* mb_type (Table 9-36), its first bin: I_NxN or not (9.3.3.1.1.3 in I slices:
         * condTermFlagN 0 where N is missing or I_NxN) */
        vidk_cabac_bin(o, c->intra ? 3 + (A && !A->nxn) + (B && !B->nxn) : base, i16);
        if (i16) { /* not I_PCM, luma, chroma, the prediction mode */
            vidk_cabac_bin(o, VIDK_CABAC_TERM, 0);
            vidk_cabac_bin(o, base + (c->intra ? 3 : 1), (cbp & 15) != 0);
            vidk_cabac_bin(o, base + (c->intra ? 4 : 2), ch != 0);
            if (ch) vidk_cabac_bin(o, base + (c->intra ? 5 : 2), ch == 2);
            vidk_cabac_bin(o, base + (c->intra ? 6 : 3), pred >> 1);
            vidk_cabac_bin(o, base + (c->intra ? 7 : 3), pred & 1);
        } else { /* transform_size_8x8_flag, then the 16 Intra4x4PredModes or 4
                    Intra8x8PredModes (ctxIdx 68, 69: the flag, else the 3 bits of
                    rem_intra*_pred_mode, lowest first) */
            vidk_cabac_bin(o, 399 + (A && A->tx8) + (B && B->tx8), tx8);
            for (int k = 0; k < 16; k += tx8 ? 4 : 1) {
                int md, pm;
                vidk_h264s_i4_modes(c, mbx, mby, k, &md, &pm);
                vidk_cabac_bin(o, 68, md == pm);
                if (md != pm)
                    for (int t = 0, r = md < pm ? md : md - 1; t < 3; t++)
                        vidk_cabac_bin(o, 69, (r >> t) & 1);
            }
        }
        /* intra_chroma_pred_mode (TU, cMax 3; ctxIdx 64..67) */
        const int cp_mode = m.cpred;
        const int ca = A && A->intra && A->cpred != 0, cb = B && B->intra && B->cpred != 0;
        vidk_cabac_bin(o, 64 + ca + cb, cp_mode != 0);
        for (int k = 1; k <= cp_mode && k < 3; k++)
            vidk_cabac_bin(o, 64 + 3, k < cp_mode);
        if (!i16) vidk_cabac_cbp(o, A, B, cbp);
    }
    if (cbp || i16) vidk_cabac_bin(o, 60, 0); /* mb_qp_delta 0 (its previous one is 0) */
    /* residual (7.3.5.3): coded_block_flag from the neighbouring blocks (pass 1's flags) */
    if (i16) { /* Intra16x16DCLevel: its neighbours' DC blocks (Intra_16x16 only) */
        const int ca = vidk_cabac_cbf_nb(A, 1, A && A->intra && (A->cbf_dc & 1));
        const int cb = vidk_cabac_cbf_nb(B, 1, B && B->intra && (B->cbf_dc & 1));
        vidk_cabac_block(o, 0, lev[VIDK_H264S_P_DC], 16, ca + 2 * cb);
    }
    if (tx8) {
        const uint8_t *zz8 = VIDK_CAVLC_TAB(zz8);
        for (int q = 0; q < 4; q++) {
            if (!((cbp >> q) & 1)) continue;
            int16_t v[64];
            const int16_t *ly = c->lev[0] + (ptrdiff_t)(mby * 16 + 8 * (q >> 1)) * c->W +
                                mbx * 16 + 8 * (q & 1);
            for (int k = 0; k < 64; k++)
                v[k] = ly[(ptrdiff_t)(zz8[k] / 8) * c->W + zz8[k] % 8];
            vidk_cabac_block(o, 5, v, 64, -1);
        }
    } else {
        for (int k = 0; k < 16; k++) {
            if (!((cbp >> (k >> 2)) & 1)) continue;
            const int bx = vidk_h264s_blk_x(k), by = vidk_h264s_blk_y(k);
            const int fa =
                bx ? (m.cbf4 >> (4 * by + bx - 1)) & 1
                   : vidk_cabac_cbf_nb(A, intra, A && ((A->cbf4 >> (4 * by + 3)) & 1));
            const int fb = by ? (m.cbf4 >> (4 * (by - 1) + bx)) & 1
                              : vidk_cabac_cbf_nb(B, intra, B && ((B->cbf4 >> (12 + bx)) & 1));
            const int16_t *l = lev[VIDK_H264S_P_LUMA + k];
            if (i16)
                vidk_cabac_block(o, 1, l + 1, 15, fa + 2 * fb);
            else
                vidk_cabac_block(o, 2, l, 16, fa + 2 * fb);
        }
    }
    if (ch)
        for (int p = 0; p < 2; p++) {
            const int ca = vidk_cabac_cbf_nb(A, intra, A && ((A->cbf_dc >> (1 + p)) & 1));
            const int cb = vidk_cabac_cbf_nb(B, intra, B && ((B->cbf_dc >> (1 + p)) & 1));
            vidk_cabac_block(o, 3, lev[VIDK_H264S_P_CDC + p], 4, ca + 2 * cb);
        }
    if (ch == 2)
        for (int p = 0; p < 2; p++)
            for (int b = 0; b < 4; b++) {
                const int bx = b & 1, by = b >> 1;
                const int fa = bx ? (m.cbf_cac[p] >> (2 * by)) & 1
                                  : vidk_cabac_cbf_nb(
                                        A, intra, A && ((A->cbf_cac[p] >> (2 * by + 1)) & 1));
                const int fb =
                    by ? (m.cbf_cac[p] >> bx) & 1
                       : vidk_cabac_cbf_nb(B, intra, B && ((B->cbf_cac[p] >> (2 + bx)) & 1));
                vidk_cabac_block(o, 4, lev[VIDK_H264S_P_CAC + 4 * p + b] + 1, 15, fa + 2 * fb);
            }
    vidk_cabac_bin(o, VIDK_CABAC_TERM, last); /* end_of_slice_flag */
}

/* The start of a slice's RBSP with CABAC, behind its NAL header: slice_header()
 * (first_mb_in_slice from the header), cabac_alignment_one_bits, then the engine started on
 * b with the contexts st, which the caller initialised for the slice (9.3.1.1:
 * vidk_cabac_init_contexts with h->intra and SliceQP = the PPS's QP + h->slice_qp_delta). */
VIDK_CORE void vidk_cabac_slice_open(VidkBits *b, const VidkH264SliceHdr *h, uint8_t *st,
                                     VidkCabac *e) {
    vidk_h264_slice_header(b, h);
    while (b->pos & 7)
        vidk_put_bits(b, 1, 1); /* cabac_alignment_one_bit */
    vidk_cabac_start(e, b, st);
}

/* The end of a slice's RBSP with CABAC once its last end_of_slice_flag is coded (whose flush
 * wrote the rbsp_stop_one_bit): the alignment, then cabac_zero_words where the slice's bins
 * would otherwise exceed its share of 7.4.2.10's bound (32 / 3 a byte + 96 a macroblock;
 * nmb: its macroblocks). */
VIDK_CORE void vidk_cabac_slice_close(VidkBits *b, const VidkCabac *e, uint64_t nmb) {
    while (b->pos & 7)
        vidk_put_bits(b, 1, 0); /* rbsp_alignment_zero_bit */
    for (uint64_t bytes = b->pos / 8; 3 * e->bins > 32 * bytes + 3 * 96 * nmb; bytes += 2)
        vidk_put_bits(b, 16, 0); /* cabac_zero_word */
}

#endif
