/* H.264 motion vector prediction (8.4.1.1 P_Skip, 8.4.1.3 median and directional), written
 * once for the stream writer (src/enc/h264_stream_core.h: the mvd it codes) and the coding
 * loop's decision (src/enc/enc_core.h: the mvd it costs), C11 and CUDA host + device code.
 *
 * Both work on a macroblock's neighbourhood (VidkH264MvNb): the 4x4 blocks around it that
 * 8.4.1.3.2 can reach (the left column, the row above, above-right, above-left) and the
 * macroblock's own vectors; each user fills it from its own arrays. The prediction of a
 * partition of one macroblock only reads that neighbourhood. */
#ifndef VIDK_H264_MVP_CORE_H
#define VIDK_H264_MVP_CORE_H

#include "vidk_core.h"
#include "vidkern/vidkern.h"

/* The slice holding macroblock row r (slice k starts at row k * mbh / slices), and its first
 * row. */
VIDK_CORE int vidk_h264s_slice_of_row(int mbh, int slices, int r) {
    if (slices <= 1) return 0; /* the common case without the divisions */
    int k = (int)(((int64_t)r * slices + slices) / mbh);
    while (k > 0 && (int64_t)k * mbh / slices > r)
        k--;
    return k;
}
VIDK_CORE int vidk_h264s_slice_row0(int mbh, int slices, int r) {
    if (slices <= 1) return 0; /* no 64-bit division (on the GPU a call of ~70 instructions) */
    return (int)((int64_t)vidk_h264s_slice_of_row(mbh, slices, r) * mbh / slices);
}

/* A neighbouring 4x4 block for vector prediction (8.4.1.3.2). */
typedef struct VidkH264sNb {
    int avail, ref; /* ref: 0, or -1 for intra / unavailable */
    VidkMv mv;
} VidkH264sNb;

/* The neighbourhood of one macroblock (positions in 4x4 units from its top-left block). */
typedef struct VidkH264MvNb {
    VidkH264sNb a[4]; /* (-1, y), y = 0..3: the left macroblock's right column */
    VidkH264sNb b[4]; /* (x, -1), x = 0..3: the upper macroblock's bottom row */
    VidkH264sNb c;    /* (4, -1): above-right */
    VidkH264sNb d;    /* (-1, -1): above-left */
    VidkMv in[16];    /* the macroblock's own vectors, raster */
    int8_t
        inoff[16]; /* 1: that block's partition does not use the list (B slices: refIdx -1) */
} VidkH264MvNb;

/* The lists 4x4 block (x, y) (0..3 each) of an inter macroblock of a B slice predicts from,
 * by its decision word w (bits 2 + 2q and 3 + 2q: quadrant q's, 1 list 0, 2 list 1, 3 both;
 * src/enc/enc_core.h ENC_MBI_*). */
#define VIDK_H264_BLISTS(w, x, y) ((int)((w) >> (2 + 2 * (((y) >> 1) * 2 + ((x) >> 1)))) & 3)

/* The 4x4 block at (x, y); inside the macroblock it is available when its partition
 * precedes partition `part` (order[] gives each 4x4 block's partition). */
VIDK_CORE VidkH264sNb vidk_h264_nb_at(const VidkH264MvNb *n, int x, int y, const int8_t *order,
                                      int part) {
    VidkH264sNb r = {0, -1, {0, 0}};
    if (x >= 0 && x < 4 && y >= 0 && y < 4) {
        if (order[4 * y + x] >= part) return r;
        r.avail = 1;
        if (n->inoff[4 * y + x]) return r;
        r.ref = 0, r.mv = n->in[4 * y + x];
        return r;
    }
    if (y >= 0) return x < 0 ? n->a[y] : r; /* right of the macroblock: not yet decoded */
    return x < 0 ? n->d : x < 4 ? n->b[x] : n->c;
}

VIDK_CORE int vidk_h264s_median3(int a, int b, int c) {
    return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

/* Vector predictor (8.4.1.3) of the partition at (x, y), w wide (4x4 units); dir: 1 16x8
 * upper, 2 16x8 lower, 3 8x16 left, 4 8x16 right, 0 otherwise. */
VIDK_CORE VidkMv vidk_h264_mvp(const VidkH264MvNb *n, int x, int y, int w, int dir,
                               const int8_t *order, int part) {
    VidkH264sNb a = vidk_h264_nb_at(n, x - 1, y, order, part);
    VidkH264sNb b = vidk_h264_nb_at(n, x, y - 1, order, part);
    VidkH264sNb cc = vidk_h264_nb_at(n, x + w, y - 1, order, part);
    if (!cc.avail) cc = vidk_h264_nb_at(n, x - 1, y - 1, order, part);
    if (dir == 1 && b.ref == 0) return b.mv;
    if ((dir == 2 || dir == 3) && a.ref == 0) return a.mv;
    if (dir == 4 && cc.ref == 0) return cc.mv;
    if (!b.avail && !cc.avail && a.avail) b = a, cc = a;
    const int m = (a.ref == 0) + (b.ref == 0) + (cc.ref == 0);
    if (m == 1) return a.ref == 0 ? a.mv : b.ref == 0 ? b.mv : cc.mv;
    VidkMv r = {(int16_t)vidk_h264s_median3(a.mv.x, b.mv.x, cc.mv.x),
                (int16_t)vidk_h264s_median3(a.mv.y, b.mv.y, cc.mv.y)};
    return r;
}

/* The P_Skip vector (8.4.1.1). */
VIDK_CORE VidkMv vidk_h264_skip_mv(const VidkH264MvNb *n) {
    const int8_t order[16] = {0}; /* not read: every neighbour lies outside the macroblock */
    const VidkH264sNb a = n->a[0], b = n->b[0];
    const VidkMv zero = {0, 0};
    if (!a.avail || !b.avail || (a.ref == 0 && !a.mv.x && !a.mv.y) ||
        (b.ref == 0 && !b.mv.x && !b.mv.y))
        return zero;
    return vidk_h264_mvp(n, 0, 0, 4, 0, order, 0);
}

/* Spatial direct prediction (8.4.1.2.2), one list: the reference index of the list
 * (MinPositive over the neighbours A, B and C, or D where C is unavailable, of a 16x16
 * partition: with one reference per list 0 when any of them uses the list, else -1) and,
 * when it is 0, the predictor of a 16x16 partition (8.4.1.3) into *mvp. */
VIDK_CORE int vidk_h264_direct_ref(const VidkH264MvNb *n, VidkMv *mvp) {
    const VidkH264sNb c = n->c.avail ? n->c : n->d;
    const int ref = n->a[0].ref == 0 || n->b[0].ref == 0 || c.ref == 0 ? 0 : -1;
    const int8_t order[16] = {0}; /* not read: every neighbour lies outside the macroblock */
    const VidkMv zero = {0, 0};
    *mvp = ref == 0 ? vidk_h264_mvp(n, 0, 0, 4, 0, order, 0) : zero;
    return ref;
}

/* The partitions of an inter macroblock in decoding order (mode: 0 16x16, 1 16x8, 2 8x16,
 * 3 P_8x8 with sub[q]: 0 8x8, 1 8x4, 2 4x8, 3 4x4): position (px, py), width pw (4x4 units)
 * and the direction dir of vidk_h264_mvp; order[] gets each 4x4 block's partition. Returns
 * the number of partitions. */
VIDK_CORE int vidk_h264_parts(int mode, const int *sub, int *px, int *py, int *pw, int *pd,
                              int8_t *order) {
    int np = 0;
    if (mode == 0) {
        px[0] = 0, py[0] = 0, pw[0] = 4, pd[0] = 0, np = 1;
    } else if (mode == 1) {
        for (int k = 0; k < 2; k++)
            px[k] = 0, py[k] = 2 * k, pw[k] = 4, pd[k] = 1 + k;
        np = 2;
    } else if (mode == 2) {
        for (int k = 0; k < 2; k++)
            px[k] = 2 * k, py[k] = 0, pw[k] = 2, pd[k] = 3 + k;
        np = 2;
    } else {
        for (int q = 0; q < 4; q++) {
            const int qx = 2 * (q & 1), qy = 2 * (q >> 1);
            const int n = sub[q] == 0 ? 1 : sub[q] == 3 ? 4 : 2;
            for (int k = 0; k < n; k++) {
                px[np] = qx + (sub[q] == 2 || sub[q] == 3 ? (k & 1) : 0);
                py[np] = qy + (sub[q] == 1 ? k : sub[q] == 3 ? k >> 1 : 0);
                pw[np] = sub[q] == 0 || sub[q] == 1 ? 2 : 1;
                pd[np] = 0;
                np++;
            }
        }
    }
    /* the partition covering each 4x4 block (x, y): in P_8x8, the partitions of the
     * quadrants before its own, then its place in the quadrant (straight-line code: on the
     * GPU no loop over variable bounds) */
    int base[4] = {0, 0, 0, 0};
    for (int q = 1; q < 4 && mode == 3; q++)
        base[q] = base[q - 1] + (sub[q - 1] == 0 ? 1 : sub[q - 1] == 3 ? 4 : 2);
    for (int b = 0; b < 16; b++) {
        const int x = b & 3, y = b >> 2, q = (y >> 1) * 2 + (x >> 1),
                  s = mode == 3 ? sub[q] : 0;
        const int kq = s == 0 ? 0 : s == 1 ? (y & 1) : s == 2 ? (x & 1) : 2 * (y & 1) + (x & 1);
        order[b] = (int8_t)(mode == 0   ? 0
                            : mode == 1 ? y >> 1
                            : mode == 2 ? x >> 1
                                        : base[q] + kq);
    }
    return np;
}

/* Fill the neighbourhood of macroblock (mbx, mby) from a frame's arrays: mv4 (one vector
 * per 4x4 block, s4 per row) and mbi (per macroblock, raster, mbw per row: intra when
 * intra_bit is set); macroblocks outside the frame or above row0 (the slice's first row) are
 * unavailable. list: -1 in P slices; in B slices 0 or 1, the list of mv4: a block whose
 * quadrant does not use it (VIDK_H264_BLISTS) has refIdx -1. The own vectors (in[]) are copied
 * from mv4 too, inoff[] from the own word (in B slices). Entry k < 26 alone: 0..3
 * a[k], 4..7 b[k - 4], 8 c, 9 d, 10..25 in[k - 10] (a warp fills them on parallel lanes). */
#define VIDK_H264_MVNB_ENTRIES 26

/* The 4x4 block of entry k < 10 relative to the macroblock's top-left one: x -1..4, y -1..3
 * (the macroblock it lies in: the left one for x < 0, the upper ones for y < 0, the
 * upper-right one for x > 3). */
VIDK_CORE void vidk_h264_mvnb_pos(int k, int *x, int *y) {
    *x = k < 4 ? -1 : k < 8 ? k - 4 : k == 8 ? 4 : -1;
    *y = k < 4 ? k : -1;
}

/* Entry k < 10 from its macroblock's availability and, when available, decision word w and
 * its block's vector *mv (read only when the block is inter and uses the list; intra_bit and
 * list: as vidk_h264_mvnb_fill's). */
VIDK_CORE void vidk_h264_mvnb_put(VidkH264MvNb *n, int k, int avail, unsigned w,
                                  const VidkMv *mv, uint16_t intra_bit, int list) {
    int x, y;
    vidk_h264_mvnb_pos(k, &x, &y);
    VidkH264sNb r = {0, -1, {0, 0}};
    if (avail) {
        r.avail = 1;
        if (!(w & intra_bit) && (list < 0 || (VIDK_H264_BLISTS(w, x & 3, y & 3) >> list & 1))) {
            r.ref = 0;
            r.mv = *mv;
        }
    }
    if (k < 4)
        n->a[k] = r;
    else if (k < 8)
        n->b[k - 4] = r;
    else if (k == 8)
        n->c = r;
    else
        n->d = r;
}

/* Own block k (raster) with vector mv, of a macroblock with word w (read only when list >= 0:
 * inoff from its lists). */
VIDK_CORE void vidk_h264_mvnb_own(VidkH264MvNb *n, int k, unsigned w, VidkMv mv,
                                  uint16_t intra_bit, int list) {
    n->in[k] = mv;
    n->inoff[k] = (int8_t)(list >= 0 && ((w & intra_bit) ||
                                         !(VIDK_H264_BLISTS(w, k & 3, k >> 2) >> list & 1)));
}

VIDK_CORE void vidk_h264_mvnb_entry(VidkH264MvNb *n, int k, const VidkMv *mv4, ptrdiff_t s4,
                                    const uint16_t *mbi, uint16_t intra_bit, int list, int mbw,
                                    int mbh, int row0, int mbx, int mby) {
    if (k >= 10) {
        k -= 10;
        vidk_h264_mvnb_own(n, k, list >= 0 ? mbi[mby * mbw + mbx] : 0u,
                           mv4[(ptrdiff_t)(mby * 4 + k / 4) * s4 + mbx * 4 + k % 4], intra_bit,
                           list);
        return;
    }
    int x, y;
    vidk_h264_mvnb_pos(k, &x, &y);
    const int nx = mbx + (x < 0 ? -1 : x >= 4 ? 1 : 0), ny = mby + (y < 0 ? -1 : 0);
    const int avail = nx >= 0 && nx < mbw && ny >= row0 && ny < mbh;
    vidk_h264_mvnb_put(n, k, avail, avail ? mbi[ny * mbw + nx] : 0u,
                       avail ? mv4 + (ptrdiff_t)(mby * 4 + y) * s4 + mbx * 4 + x : mv4,
                       intra_bit, list);
}
VIDK_CORE void vidk_h264_mvnb_fill(VidkH264MvNb *n, const VidkMv *mv4, ptrdiff_t s4,
                                   const uint16_t *mbi, uint16_t intra_bit, int list, int mbw,
                                   int mbh, int row0, int mbx, int mby) {
    for (int k = 0; k < VIDK_H264_MVNB_ENTRIES; k++)
        vidk_h264_mvnb_entry(n, k, mv4, s4, mbi, intra_bit, list, mbw, mbh, row0, mbx, mby);
}

#endif
