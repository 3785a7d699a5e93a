/* The H.264 deblocking filter (8.7) of frame macroblocks, 4:2:0, 8-bit samples, one
 * reference picture, filter offsets 0: the boundary strength of an edge segment and the
 * filtering of one line of samples across an edge, written once for every backend (the
 * coding loop's macroblock driver is src/enc/enc_core.h enc_h264_deblock_mb). The tables are
 * the standard's Tables 8-16 (alpha', beta') and 8-17 (tC0). */
#ifndef VIDK_H264_DEBLOCK_CORE_H
#define VIDK_H264_DEBLOCK_CORE_H

#include "vidk_core.h"

// clang-format off
/* Table 8-16, indexA / indexB 0..51 */
#define VIDK_H264_DBK_ALPHA {                                                 \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 5, 6, 7, 8, 9, 10,  \
    12, 13, 15, 17, 20, 22, 25, 28, 32, 36, 40, 45, 50, 56, 63, 71, 80, 90,   \
    101, 113, 127, 144, 162, 182, 203, 226, 255, 255}
#define VIDK_H264_DBK_BETA {                                                  \
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 3, 3, 3, 3, 4,   \
    4, 4, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14,     \
    15, 15, 16, 16, 17, 17, 18, 18}
/* Table 8-17: tC0 for bS = 1, 2, 3 */
#define VIDK_H264_DBK_TC0 {                                                   \
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0},         \
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0},         \
    {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 1},         \
    {0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 1, 1}, {0, 1, 1}, {1, 1, 1},         \
    {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 2}, {1, 1, 2}, {1, 1, 2},         \
    {1, 1, 2}, {1, 2, 3}, {1, 2, 3}, {2, 2, 3}, {2, 2, 4}, {2, 3, 4},         \
    {2, 3, 4}, {3, 3, 5}, {3, 4, 6}, {3, 4, 6}, {4, 5, 7}, {4, 5, 8},         \
    {4, 6, 9}, {5, 7, 10}, {6, 8, 11}, {6, 8, 13}, {7, 10, 14}, {8, 11, 16},  \
    {9, 12, 18}, {10, 13, 20}, {11, 15, 23}, {13, 17, 25}}
// clang-format on
VIDK_CORE_TABLE(uint8_t, vidk_h264_dbk_alpha, [52], VIDK_H264_DBK_ALPHA)
VIDK_CORE_TABLE(uint8_t, vidk_h264_dbk_beta, [52], VIDK_H264_DBK_BETA)
VIDK_CORE_TABLE(uint8_t, vidk_h264_dbk_tc0, [52][3], VIDK_H264_DBK_TC0)

/* The thresholds of an edge whose two sides have QP qp (luma QP, or QPc for chroma; with
 * one QP per picture qPav = qp, and the offsets are 0: indexA = indexB = qp). */
typedef struct VidkH264DbkQ {
    int alpha, beta;
    int tc0[3]; /* bS 1..3 */
} VidkH264DbkQ;

VIDK_CORE VidkH264DbkQ vidk_h264_dbk_q(int qp) {
    VidkH264DbkQ q;
    const int i = vidk_clip3(qp, 0, 51);
    q.alpha = VIDK_CORE_TAB(vidk_h264_dbk_alpha)[i];
    q.beta = VIDK_CORE_TAB(vidk_h264_dbk_beta)[i];
    for (int k = 0; k < 3; k++)
        q.tc0[k] = VIDK_CORE_TAB(vidk_h264_dbk_tc0)[i][k];
    return q;
}

/* bS of an edge segment (8.7.2.1, frame macroblocks, P_L0 with one reference): 4 on a
 * macroblock edge with an intra side, 3 on an inner edge of an intra macroblock, 2 when a
 * side's transform block (4x4, or 8x8 with transform_size_8x8_flag) has non-zero
 * coefficients, 1 when the sides' vectors differ by 4 or more quarter samples in a
 * component (dx, dy: the difference in quarter samples), else 0 (no filtering). */
VIDK_CORE int vidk_h264_dbk_bs(int mb_edge, int intra_p, int intra_q, int nz_p, int nz_q,
                               int dx, int dy) {
    if (intra_p || intra_q) return mb_edge ? 4 : 3;
    if (nz_p || nz_q) return 2;
    return dx >= 4 || dx <= -4 || dy >= 4 || dy <= -4;
}

VIDK_CORE int vidk_h264_dbk_abs(int v) {
    return v < 0 ? -v : v;
}
VIDK_CORE uint8_t vidk_h264_dbk_clip1(int v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* tC0 of bS 1..3 (selected, not indexed: on the GPU an indexed array would live in local
 * memory). */
VIDK_CORE int vidk_h264_dbk_tc0_of(const VidkH264DbkQ *q, int bs) {
    return bs == 1 ? q->tc0[0] : bs == 2 ? q->tc0[1] : q->tc0[2];
}

/* One line of samples across an edge, filtered in place (8.7.2.3, 8.7.2.4): q_i at x[i s],
 * p_i at x[-(i + 1) s] (i = 0..3; luma reads p3..q3, chroma p1..q1), bS 1..4, chroma: the
 * chroma edge filter (chromaEdgeFlag 1, 4:2:0). Every value is read before one is written. */
VIDK_CORE void vidk_h264_dbk_line(uint8_t *x, ptrdiff_t s, int bs, int chroma,
                                  const VidkH264DbkQ *q) {
    const int p0 = x[-s], p1 = x[-2 * s], q0 = x[0], q1 = x[s];
    const int a = q->alpha, b = q->beta;
    if (!(vidk_h264_dbk_abs(p0 - q0) < a && vidk_h264_dbk_abs(p1 - p0) < b &&
          vidk_h264_dbk_abs(q1 - q0) < b))
        return; /* filterSamplesFlag 0 */
    if (chroma) {
        if (bs < 4) {
            const int tc = vidk_h264_dbk_tc0_of(q, bs) + 1;
            const int d = vidk_clip3((((q0 - p0) * 4) + (p1 - q1) + 4) >> 3, -tc, tc);
            x[-s] = vidk_h264_dbk_clip1(p0 + d);
            x[0] = vidk_h264_dbk_clip1(q0 - d);
        } else {
            x[-s] = (uint8_t)((2 * p1 + p0 + q1 + 2) >> 2);
            x[0] = (uint8_t)((2 * q1 + q0 + p1 + 2) >> 2);
        }
        return;
    }
    const int p2 = x[-3 * s], q2 = x[2 * s], p3 = x[-4 * s], q3 = x[3 * s];
    const int ap = vidk_h264_dbk_abs(p2 - p0) < b, aq = vidk_h264_dbk_abs(q2 - q0) < b;
    if (bs < 4) {
        const int tc0 = vidk_h264_dbk_tc0_of(q, bs), tc = tc0 + ap + aq;
        const int d = vidk_clip3((((q0 - p0) * 4) + (p1 - q1) + 4) >> 3, -tc, tc);
        const int m = (p0 + q0 + 1) >> 1;
        if (ap) x[-2 * s] = (uint8_t)(p1 + vidk_clip3((p2 + m - 2 * p1) >> 1, -tc0, tc0));
        if (aq) x[s] = (uint8_t)(q1 + vidk_clip3((q2 + m - 2 * q1) >> 1, -tc0, tc0));
        x[-s] = vidk_h264_dbk_clip1(p0 + d);
        x[0] = vidk_h264_dbk_clip1(q0 - d);
        return;
    }
    const int strong = vidk_h264_dbk_abs(p0 - q0) < (a >> 2) + 2;
    if (ap && strong) {
        x[-s] = (uint8_t)((p2 + 2 * p1 + 2 * p0 + 2 * q0 + q1 + 4) >> 3);
        x[-2 * s] = (uint8_t)((p2 + p1 + p0 + q0 + 2) >> 2);
        x[-3 * s] = (uint8_t)((2 * p3 + 3 * p2 + p1 + p0 + q0 + 4) >> 3);
    } else {
        x[-s] = (uint8_t)((2 * p1 + p0 + q1 + 2) >> 2);
    }
    if (aq && strong) {
        x[0] = (uint8_t)((p1 + 2 * p0 + 2 * q0 + 2 * q1 + q2 + 4) >> 3);
        x[s] = (uint8_t)((p0 + q0 + q1 + q2 + 2) >> 2);
        x[2 * s] = (uint8_t)((2 * q3 + 3 * q2 + q1 + q0 + p0 + 4) >> 3);
    } else {
        x[0] = (uint8_t)((2 * q1 + q0 + p1 + 2) >> 2);
    }
}

#endif
