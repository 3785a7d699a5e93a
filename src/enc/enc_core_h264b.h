/* The coding loop's H.264 B frames (docs/ENCODE.md §16) and deblocking filter (8.7). A part
 * of enc_core.h, which includes it at its end (include enc_core.h, not this file). */
#ifndef VIDK_ENC_CORE_H264B_H
#define VIDK_ENC_CORE_H264B_H

/* ------------------------------------------------------------------ H.264 B frames */

/* docs/ENCODE.md §16. A B macroblock is 16x16, 16x8 or 8x16, each partition from list 0, list
 * 1 or both (the average, 8.4.2.3.1), or direct (spatial, 8.4.2.1.2: B_Direct_16x16, B_Skip
 * without levels); its quadrants' lists in the decision word, its vectors in two planes. */

/* What the decision passes of a B frame read per macroblock (f->dist, ENC_H264_DIST_N
 * each): the 16x16 SATD at the refined list-0 vector (kept in part_mv as in P frames), at the
 * refined list-1 vector (f->l1->part_mv), of the average of the two predictions; and the
 * Intra_16x16 estimate at ENC_H264_DIST_INTRA. */
#define ENC_H264_BDIST_L0 0
#define ENC_H264_BDIST_L1 1
#define ENC_H264_BDIST_BI 2
/* Entries ENC_H264_BDIST_PART + 3 p + l: partition p of the 16x8 and 8x16 shapes (p 0, 1 the
 * 16x8 top and bottom, 2, 3 the 8x16 left and right: VIDK_ME_PART_16x8 + p, their refined
 * vectors in part_mv as in P frames), l 0 list 0, 1 list 1, 2 both (enc_h264_b_part_dist). */
#define ENC_H264_BDIST_PART 3

/* The implicit bi-prediction weights (weighted_bipred_idc 2, 8.4.3) of a B picture tb
 * POC units after its list-0 reference and td before its list-1 one counted from list 0's
 * (DistScaleFactor of 8.4.1.2.3): w0 = 64 - (DSF >> 2), w1 = DSF >> 2, or 32 and 32 when
 * td is 0 or DSF >> 2 leaves [-64, 128]. */
ENC_CFN void enc_h264_implicit_w(int tb, int td, int *w0, int *w1) {
    tb = tb < -128 ? -128 : tb > 127 ? 127 : tb;
    td = td < -128 ? -128 : td > 127 ? 127 : td;
    *w0 = *w1 = 32;
    if (!td) return;
    const int tx = (16384 + (td < 0 ? -td : td) / 2) / td;
    int dsf = (tb * tx + 32) >> 6;
    dsf = dsf < -1024 ? -1024 : dsf > 1023 ? 1023 : dsf;
    if ((dsf >> 2) < -64 || (dsf >> 2) > 128) return;
    *w0 = 64 - (dsf >> 2), *w1 = dsf >> 2;
}

/* A bi-predicted sample from the two lists' samples a, b (8.4.2.3.2, logWD 5, no offsets;
 * with 32 and 32 the default (a + b + 1) >> 1). */
ENC_FN uint8_t enc_h264_bi(const EncFrame *f, int a, int b) {
    const int v = (a * f->bw0 + b * f->bw1 + 32) >> 6;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The lists 4x4 block k (raster order in the macroblock) of a B macroblock with decision word
 * w predicts from: bit 0 list 0, bit 1 list 1 (intra: 0). */
ENC_CFN int enc_h264_b_use4(unsigned w, int k) {
    return (w & ENC_MBI_INTRA) ? 0 : VIDK_H264_BLISTS(w, k & 3, k >> 2);
}

/* The lists of each quadrant q of a B decision word at bits 2q, 2q + 1 (the `uq` argument of
 * the prediction functions below; a 16x16 partition's use u: u * 0x55). */
ENC_CFN int enc_h264_b_uq(unsigned w) {
    return (w & ENC_MBI_INTRA) ? 0 : (int)(w >> 2) & 0xff;
}

/* A B picture's vector of 4x4 block k (raster, w4 a row) as the pictures that take it as
 * their co-located one read it (mvCol, 8.4.1.2.1) and the caller's map shows it: list 0's,
 * list 1's where its partition (its macroblock's decision word in mbi, uw a row) predicts
 * from list 1 only. */
ENC_FN VidkMv enc_h264_b_mv_of(const uint16_t *mbi, int uw, int w4, const VidkMv *mv4,
                               const VidkMv *mv4b, int k) {
    const int x = k % w4, y = k / w4;
    return enc_h264_b_use4(mbi[(y / 4) * uw + x / 4], 4 * (y & 3) + (x & 3)) == 2 ? mv4b[k]
                                                                                  : mv4[k];
}

/* The luma prediction of the n x n block (n 4 or 8) at (x, y) into d (stride ds) from the
 * lists in `use` with vectors a (list 0) and b (list 1); both: their weighted average
 * (enc_h264_bi). The interpolation is per sample: any block size gives the same samples. */
ENC_FN void enc_h264_b_pred_blk(const EncFrame *f, int x, int y, int n, VidkMv a, VidkMv b,
                                int use, uint8_t *d, int ds) {
    uint8_t t[64];
    if (use & 1) enc_mc_luma(f, x, y, n, n, a, d, ds);
    if (use == 2) enc_mc_luma(f->l1, x, y, n, n, b, d, ds);
    if (use == 3) {
        enc_mc_luma(f->l1, x, y, n, n, b, t, n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                d[ds * j + i] = enc_h264_bi(f, d[ds * j + i], t[n * j + i]);
    }
}

/* The luma prediction of a 16x16 macroblock at (x0, y0) into pr (stride 16) with a vector
 * per 8x8 quadrant in each list (v0[q], v1[q]) from the lists of each quadrant in uq
 * (enc_h264_b_uq). */
ENC_FN void enc_h264_b_pred16(const EncFrame *f, int x0, int y0, const VidkMv *v0,
                              const VidkMv *v1, int uq, uint8_t *pr) {
    for (int q = 0; q < 4; q++)
        enc_h264_b_pred_blk(f, x0 + 8 * (q & 1), y0 + 8 * (q >> 1), 8, v0[q], v1[q],
                            uq >> (2 * q) & 3, pr + 16 * 8 * (q >> 1) + 8 * (q & 1), 16);
}

/* The SATD of 4x4 block k (raster order in the macroblock) of that prediction (its quadrant's
 * vectors and lists). */
ENC_FN uint32_t enc_h264_b_satd4(const EncFrame *f, int mbx, int mby, int k, const VidkMv *v0,
                                 const VidkMv *v1, int uq) {
    const int q = (k >> 3) * 2 + ((k & 3) >> 1), x = 16 * mbx + 4 * (k & 3),
              y = 16 * mby + 4 * (k >> 2);
    uint8_t p[16];
    int d[16];
    enc_h264_b_pred_blk(f, x, y, 4, v0[q], v1[q], uq >> (2 * q) & 3, p, 4);
    for (int i = 0; i < 16; i++)
        d[i] = f->src[0][(ptrdiff_t)(y + i / 4) * f->ss[0] + x + i % 4] - p[i];
    return vidk_satd4(d);
}

/* The SATD of the whole 16x16 prediction: its 4x4 blocks' (the device sums them over lanes). */
ENC_FN uint32_t enc_h264_b_satd(const EncFrame *f, int mbx, int mby, const VidkMv *v0,
                                const VidkMv *v1, int uq) {
    uint32_t s = 0;
    for (int k = 0; k < 16; k++)
        s += enc_h264_b_satd4(f, mbx, mby, k, v0, v1, uq);
    return s;
}

/* The chroma prediction of quadrant q (vectors a in list 0, b in list 1, lists use) of
 * macroblock (mbx, mby) in plane p (1, 2) into f->rec. */
ENC_FN void enc_h264_b_pred_cq(const EncFrame *f, int mbx, int mby, int p, int q, VidkMv a,
                               VidkMv b, int use) {
    uint8_t t[16];
    const int x = 8 * mbx + 4 * (q & 1), y = 8 * mby + 4 * (q >> 1);
    uint8_t *d = f->rec[p] + (ptrdiff_t)y * f->cs[p] + x;
    if (use & 1) enc_mc_chroma(f, p, x, y, 4, 4, a, d, f->cs[p]);
    if (use == 2) enc_mc_chroma(f->l1, p, x, y, 4, 4, b, d, f->cs[p]);
    if (use == 3) {
        enc_mc_chroma(f->l1, p, x, y, 4, 4, b, t, 4);
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                d[j * f->cs[p] + i] = enc_h264_bi(f, d[j * f->cs[p] + i], t[4 * j + i]);
    }
}

/* The whole prediction of a B macroblock (luma and chroma) into f->rec. */
ENC_FN void enc_h264_b_pred_mb(const EncFrame *f, int mbx, int mby, const VidkMv *v0,
                               const VidkMv *v1, int uq) {
    uint8_t pr[256];
    const int x0 = 16 * mbx, y0 = 16 * mby;
    enc_h264_b_pred16(f, x0, y0, v0, v1, uq, pr);
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 16; i++)
            f->rec[0][(ptrdiff_t)(y0 + j) * f->cs[0] + x0 + i] = pr[16 * j + i];
    for (int p = 1; p < 3; p++)
        for (int q = 0; q < 4; q++)
            enc_h264_b_pred_cq(f, mbx, mby, p, q, v0[q], v1[q], uq >> (2 * q) & 3);
}

/* The partition (0 or 1) of partition mode m (0 16x16, 1 16x8, 2 8x16) holding 4x4 block k
 * (raster order in the macroblock). */
ENC_CFN int enc_h264_part_of(int m, int k) {
    return m == 1 ? k >> 3 : m == 2 ? (k & 3) >> 1 : 0;
}

/* Partition p (ENC_H264_BDIST_PART's numbering) of a B macroblock: each list's searched vector
 * refined to quarter samples (enc_h264_refine, into part_mv and f->l1->part_mv), the SATD at
 * each and of their weighted average into f->dist. */
ENC_FN void enc_h264_b_part_dist(const EncFrame *f, int mbx, int mby, int p) {
    const int u = mby * f->uw + mbx, pp = VIDK_ME_PART_16x8 + p, m = 1 + (p >> 1);
    uint32_t *d =
        (uint32_t *)f->dist + ENC_H264_DIST_N * (ptrdiff_t)u + ENC_H264_BDIST_PART + 3 * p;
    const EncPart q = enc_h264_part(mbx, mby, pp);
    VidkMv *p0 = enc_h264_pmv(f, u, pp), *p1 = enc_h264_pmv(f->l1, u, pp);
    *p0 = enc_me_at(f, q.bs, q.bx, q.by).mv;
    *p1 = enc_me_at(f->l1, q.bs, q.bx, q.by).mv;
    d[0] = enc_h264_refine(f, q.bx * q.w, q.by * q.h, q.w, q.h, p0);
    d[1] = enc_h264_refine(f->l1, q.bx * q.w, q.by * q.h, q.w, q.h, p1);
    const VidkMv a[4] = {*p0, *p0, *p0, *p0}, b[4] = {*p1, *p1, *p1, *p1};
    uint32_t s = 0;
    for (int k = 0; k < 16; k++)
        if (enc_h264_part_of(m, k) == (p & 1))
            s += enc_h264_b_satd4(f, mbx, mby, k, a, b, 0xff);
    d[2] = s;
}

/* The decision passes' input of a B macroblock (f->dist: ENC_H264_BDIST_*, the intra
 * estimate). */
ENC_FN void enc_h264_b_dist(const EncFrame *f, int mbx, int mby) {
    const int u = mby * f->uw + mbx;
    uint32_t *d = (uint32_t *)f->dist + ENC_H264_DIST_N * (ptrdiff_t)u;
    VidkMv *p0 = enc_h264_pmv(f, u, VIDK_ME_PART_16x16);
    VidkMv *p1 = enc_h264_pmv(f->l1, u, VIDK_ME_PART_16x16);
    *p0 = enc_me_at(f, VIDK_BLOCK_16x16, mbx, mby).mv;
    *p1 = enc_me_at(f->l1, VIDK_BLOCK_16x16, mbx, mby).mv;
    d[ENC_H264_BDIST_L0] = enc_h264_refine(f, 16 * mbx, 16 * mby, 16, 16, p0);
    d[ENC_H264_BDIST_L1] = enc_h264_refine(f->l1, 16 * mbx, 16 * mby, 16, 16, p1);
    const VidkMv a[4] = {*p0, *p0, *p0, *p0}, b[4] = {*p1, *p1, *p1, *p1};
    d[ENC_H264_BDIST_BI] = enc_h264_b_satd(f, mbx, mby, a, b, 0xff);
    for (int p = 0; p < 4; p++)
        enc_h264_b_part_dist(f, mbx, mby, p);
    d[ENC_H264_DIST_INTRA] = enc_h264_intra_est_mb(f, mbx, mby);
}

/* colZeroFlag (8.4.1.2.2) of the quadrants q of macroblock (mbx, mby) as bits q: the
 * co-located picture (short-term) is inter there, its block (direct_8x8_inference_flag 1: the
 * macroblock's corner 4x4 block in the quadrant) predicts from its one reference (refIdxCol
 * 0) with a vector in [-1, 1]^2. */
ENC_FN int enc_h264_col_zero4(const EncFrame *f, int mbx, int mby) {
    if (!f->colmb || (f->colmb[mby * f->uw + mbx] & ENC_MBI_INTRA)) return 0;
    int cz = 0;
    for (int q = 0; q < 4; q++) {
        const int x = 4 * mbx + 3 * (q & 1), y = 4 * mby + 3 * (q >> 1);
        const VidkMv v = f->colmv[(ptrdiff_t)y * (f->W / 4) + x];
        cz |= (v.x >= -1 && v.x <= 1 && v.y >= -1 && v.y <= 1) << q;
    }
    return cz;
}

/* Spatial direct prediction (8.4.1.2.2) of a macroblock with colZeroFlags cz
 * (enc_h264_col_zero4) from its list-0 and list-1 neighbourhoods: returns its lists (bit 0
 * list 0, bit 1 list 1), its vectors per quadrant into v0[4], v1[4] ((0, 0) in an unused
 * list). */
VIDK_CORE int enc_h264_direct(int cz4, const VidkH264MvNb *n0, const VidkH264MvNb *n1,
                              VidkMv *v0, VidkMv *v1) {
    VidkMv p0 = {0, 0}, p1 = {0, 0};
    const int r0 = vidk_h264_direct_ref(n0, &p0), r1 = vidk_h264_direct_ref(n1, &p1);
    const VidkMv zero = {0, 0};
    const int dzero = r0 < 0 && r1 < 0; /* directZeroPredictionFlag: both lists, zero */
    for (int q = 0; q < 4; q++) {
        const int cz = !dzero && (cz4 >> q & 1);
        v0[q] = dzero || r0 < 0 || cz ? zero : p0;
        v1[q] = dzero || r1 < 0 || cz ? zero : p1;
    }
    return dzero ? 3 : (r0 == 0 ? 1 : 0) | (r1 == 0 ? 2 : 0);
}

/* The list-0 and list-1 neighbourhoods of macroblock (mbx, mby) from a pass's planes. */
ENC_FN void enc_h264_b_nb(const EncFrame *f, int mbx, int mby, const VidkMv *mv0,
                          const VidkMv *mv1, const uint16_t *mbi, VidkH264MvNb *n0,
                          VidkH264MvNb *n1) {
    const int row0 = enc_h264_row0(f, mby);
    vidk_h264_mvnb_fill(n0, mv0, f->W / 4, mbi, ENC_MBI_INTRA, 0, f->uw, f->uh, row0, mbx, mby);
    vidk_h264_mvnb_fill(n1, mv1, f->W / 4, mbi, ENC_MBI_INTRA, 1, f->uw, f->uh, row0, mbx, mby);
}

/* The mvd bits of a 16x16 partition with vector v against neighbourhood n. */
ENC_FN unsigned enc_h264_mvd16_bits(const VidkH264MvNb *n, VidkMv v) {
    const int8_t order[16] = {0};
    return enc_mvd_bits(v, vidk_h264_mvp(n, 0, 0, 4, 0, order, 0));
}

/* One macroblock's vectors (a per quadrant in list 0, b in list 1) and decision word w into
 * a pass's planes. */
ENC_FN void enc_h264_b_out(const EncFrame *f, int mbx, int mby, const VidkMv *a,
                           const VidkMv *b, unsigned w, VidkMv *mvo0, VidkMv *mvo1,
                           uint16_t *mbo) {
    mbo[mby * f->uw + mbx] = (uint16_t)w;
    for (int k = 0; k < 16; k++) {
        const ptrdiff_t o = (ptrdiff_t)(mby * 4 + k / 4) * (f->W / 4) + mbx * 4 + k % 4;
        const int q = (k >> 3) * 2 + ((k & 3) >> 1);
        mvo0[o] = a[q], mvo1[o] = b[q];
    }
}

/* The word of a 16x16 B macroblock predicting from the lists in use (1, 2, 3). */
ENC_CFN unsigned enc_h264_b_word(int use) {
    return (unsigned)use * 0x55u << 2;
}

/* The word of a B macroblock of partition mode m (0 16x16, 1 16x8, 2 8x16) whose partitions
 * predict from the lists u0 and u1 (1, 2, 3; 16x16: u0). */
ENC_CFN unsigned enc_h264_b_word2(int m, int u0, int u1) {
    unsigned w = (unsigned)m;
    for (int q = 0; q < 4; q++)
        w |= (unsigned)(enc_h264_part_of(m, (q >> 1) * 8 + (q & 1) * 2) ? u1 : u0)
             << (2 + 2 * q);
    return w;
}

/* Decision pass 0 of a B frame: each macroblock the lowest SATD of list 0, list 1 and both
 * (the first on ties), at the refined vectors. */
ENC_FN void enc_h264_b_seed(const EncFrame *f, int mbx, int mby, VidkMv *mvo0, VidkMv *mvo1,
                            uint16_t *mbo) {
    const int u = mby * f->uw + mbx;
    const uint32_t *d = f->dist + ENC_H264_DIST_N * (ptrdiff_t)u;
    const VidkMv zero = {0, 0}, p0 = *enc_h264_pmv(f, u, VIDK_ME_PART_16x16),
                 p1 = *enc_h264_pmv(f->l1, u, VIDK_ME_PART_16x16);
    int use = 1;
    uint32_t best = d[ENC_H264_BDIST_L0];
    if (d[ENC_H264_BDIST_L1] < best) best = d[ENC_H264_BDIST_L1], use = 2;
    if (d[ENC_H264_BDIST_BI] < best) use = 3;
    const VidkMv a[4] = {use & 1 ? p0 : zero, use & 1 ? p0 : zero, use & 1 ? p0 : zero,
                         use & 1 ? p0 : zero},
                 b[4] = {use & 2 ? p1 : zero, use & 2 ? p1 : zero, use & 2 ? p1 : zero,
                         use & 2 ? p1 : zero};
    enc_h264_b_out(f, mbx, mby, a, b, enc_h264_b_word(use), mvo0, mvo1, mbo);
}

/* The final form of a direct macroblock: its vectors derived again (8.4.1.2.2) from the
 * final decisions of its neighbours, as a decoder does, in raster order (the left, upper,
 * upper-right and upper-left macroblocks done before it; direct ones among them already in
 * their final form). The last pass costed direct with its own neighbours: where the vectors
 * now differ and the costed ones are one per list (no colZeroFlag split), the macroblock is
 * coded as B_L0 / B_L1 / B_Bi_16x16 with the costed vectors when that costs less (SATD +
 * lambda x the bits of mb_type and the mvds against the final neighbours) than direct with
 * the derived ones (SATD + lambda x 1); else direct with the derived ones. Other
 * macroblocks keep theirs. In two steps (the device computes the SATDs between them on a
 * warp's lanes): enc_h264_b_direct_prep returns 0 (keep), 1 (direct with the derived vectors
 * a, b and lists use) or 2 (that, or explicit with the costed vectors c0, c1 and lists was
 * whose rate is ebits: weigh their SATDs); enc_h264_b_direct_apply writes the outcome. */
typedef struct EncDirect {
    VidkMv a[4], b[4], c0[4], c1[4];
    int use, was;
    unsigned ebits;
} EncDirect;

/* enc_h264_b_direct_prep's work after the neighbourhoods (n0, n1: enc_h264_b_nb's) of a
 * direct macroblock with word w and colZeroFlags cz4 (enc_h264_col_zero4). */
ENC_FN int enc_h264_b_direct_from(int cz4, unsigned w, const VidkH264MvNb *n0,
                                  const VidkH264MvNb *n1, EncDirect *d) {
    /* (a direct macroblock's lists are the same in its four quadrants) */
    const int use = enc_h264_direct(cz4, n0, n1, d->a, d->b), was = enc_h264_b_use4(w, 0);
    int same = use == was, uniform = 1;
    for (int q = 0; q < 4; q++) {
        const VidkMv c0 = n0->in[(q >> 1) * 8 + (q & 1) * 2],
                     c1 = n1->in[(q >> 1) * 8 + (q & 1) * 2];
        same &= (!(use & 1) || (c0.x == d->a[q].x && c0.y == d->a[q].y)) &&
                (!(use & 2) || (c1.x == d->b[q].x && c1.y == d->b[q].y));
        uniform &= c0.x == n0->in[0].x && c0.y == n0->in[0].y && c1.x == n1->in[0].x &&
                   c1.y == n1->in[0].y;
        d->c0[q] = n0->in[0], d->c1[q] = n1->in[0];
    }
    d->use = use, d->was = was;
    if (same) return 0;
    d->ebits = enc_h264_mb_bits[was] + (was & 1 ? enc_h264_mvd16_bits(n0, n0->in[0]) : 0u) +
               (was & 2 ? enc_h264_mvd16_bits(n1, n1->in[0]) : 0u);
    return uniform ? 2 : 1;
}

ENC_FN int enc_h264_b_direct_prep(const EncFrame *f, int mbx, int mby, const VidkMv *mv0,
                                  const VidkMv *mv1, const uint16_t *mbi, EncDirect *d) {
    const unsigned w = mbi[mby * f->uw + mbx];
    if ((w & ENC_MBI_INTRA) || !(w & ENC_MBI_DIRECT)) return 0;
    VidkH264MvNb n0, n1;
    enc_h264_b_nb(f, mbx, mby, mv0, mv1, mbi, &n0, &n1);
    return enc_h264_b_direct_from(enc_h264_col_zero4(f, mbx, mby), w, &n0, &n1, d);
}

/* Is the outcome explicit (kind: enc_h264_b_direct_prep's; se, sd: with kind 2 the SATDs of
 * the explicit and the direct predictions; the costed vectors cheaper)? */
ENC_FN int enc_h264_b_direct_explicit(const EncFrame *f, const EncDirect *d, int kind,
                                      uint32_t se, uint32_t sd) {
    return kind == 2 &&
           se + enc_h264_lbits(f, d->ebits) < sd + enc_h264_lbits(f, enc_h264_mb_bits[0]);
}

/* The outcome into the planes (kind, se, sd: as enc_h264_b_direct_explicit's). */
ENC_FN void enc_h264_b_direct_apply(const EncFrame *f, int mbx, int mby, const EncDirect *d,
                                    int kind, uint32_t se, uint32_t sd, VidkMv *mv0,
                                    VidkMv *mv1, uint16_t *mbi) {
    if (enc_h264_b_direct_explicit(f, d, kind, se, sd)) {
        mbi[mby * f->uw + mbx] = (uint16_t)enc_h264_b_word(d->was);
        return;
    }
    enc_h264_b_out(f, mbx, mby, d->a, d->b, ENC_MBI_DIRECT | enc_h264_b_word(d->use), mv0, mv1,
                   mbi);
}

ENC_FN void enc_h264_b_direct_final(const EncFrame *f, int mbx, int mby, VidkMv *mv0,
                                    VidkMv *mv1, uint16_t *mbi) {
    EncDirect d;
    const int kind = enc_h264_b_direct_prep(f, mbx, mby, mv0, mv1, mbi, &d);
    if (!kind) return;
    uint32_t se = 0, sd = 0;
    if (kind == 2) {
        se = enc_h264_b_satd(f, mbx, mby, d.c0, d.c1, d.was * 0x55);
        sd = enc_h264_b_satd(f, mbx, mby, d.a, d.b, d.use * 0x55);
    }
    enc_h264_b_direct_apply(f, mbx, mby, &d, kind, se, sd, mv0, mv1, mbi);
}

/* The mb_type (Table 7-14) of an inter B macroblock of partition mode m (0 16x16, 1 16x8, 2
 * 8x16) whose partitions predict from the lists u0 and u1 (1 list 0, 2 list 1, 3 both; 16x16:
 * u0): 4 + 2 x (L0 L0, L1 L1, L0 L1, L1 L0, L0 Bi, L1 Bi, Bi L0, Bi L1, Bi Bi) + m - 1. */
ENC_CFN int enc_h264_b_mb_type(int m, int u0, int u1) {
    const int8_t pair[9] = {0, 2, 4, 3, 1, 5, 6, 7, 8}; /* [3 (u0 - 1) + u1 - 1] */
    return m == 0 ? u0 : 4 + 2 * pair[3 * (u0 - 1) + u1 - 1] + m - 1;
}

/* The mvds of one list's partitions of a B macroblock of partition mode m (0 16x16, 1 16x8,
 * 2 8x16) with vectors n->in against the predictors of 8.4.1.3 over neighbourhood n (the
 * blocks of n->inoff not using the list): those of the partitions p with bit p of sel set, in
 * the stream's order, into dx[], dy[] (quarter samples), their top-left 4x4 blocks into px[],
 * py[] and their indices into pk[]; returns their count. */
VIDK_CORE int enc_h264_b_mvds(const VidkH264MvNb *n, int m, int sel, int *dx, int *dy, int *px,
                              int *py, int *pk) {
    int8_t order[16]; /* the partition of each 4x4 block */
    for (int k = 0; k < 16; k++)
        order[k] = (int8_t)enc_h264_part_of(m, k);
    int c = 0;
    for (int k = 0; k < (m ? 2 : 1); k++) {
        if (!(sel >> k & 1)) continue;
        const int x = m == 2 ? 2 * k : 0, y = m == 1 ? 2 * k : 0;
        const VidkMv p =
            vidk_h264_mvp(n, x, y, m == 2 ? 2 : 4, m ? m == 1 ? 1 + k : 3 + k : 0, order, k);
        dx[c] = n->in[4 * y + x].x - p.x, dy[c] = n->in[4 * y + x].y - p.y;
        px[c] = x, py[c] = y, pk[c] = k, c++;
    }
    return c;
}

/* The mvd bits of one list's vectors of partition mode m (0 16x16, 1 16x8, 2 8x16) of
 * macroblock u (the refined vectors of its partitions, part_mv of fl: f or f->l1) against
 * neighbourhood n (a copy: its vectors are set here), the partitions with bit p of sel set
 * using the list. */
ENC_FN unsigned enc_h264_b_part_mvd(const EncFrame *fl, int u, VidkH264MvNb n, int m, int sel) {
    const int p0 = m ? VIDK_ME_PART_16x8 + 2 * (m - 1) : VIDK_ME_PART_16x16;
    const VidkMv a = *enc_h264_pmv(fl, u, p0), b = *enc_h264_pmv(fl, u, m ? p0 + 1 : p0);
    for (int k = 0; k < 16; k++) {
        const int p = enc_h264_part_of(m, k);
        n.in[k] = p ? b : a, n.inoff[k] = (int8_t) !(sel >> p & 1);
    }
    int dx[2], dy[2], px[2], py[2], pk[2];
    const int np = enc_h264_b_mvds(&n, m, sel, dx, dy, px, py, pk);
    unsigned bits = 0;
    for (int k = 0; k < np; k++)
        bits += vidk_se_bits(dx[k]) + vidk_se_bits(dy[k]);
    return bits;
}

/* Direct's cost in the B decision passes: its SATD less lambda x this many bits (not below 0;
 * a bonus, where the other candidates pay their mb_type's and mvds' bits: B_Skip and
 * B_Direct_16x16 cost a fraction of a bit with CABAC, and their vectors follow the
 * neighbours'; until session 44 SATD + lambda x 1; docs/PERFORMANCE.md "Session 44"). */
#define ENC_H264_DIRECT_BONUS 2

/* The decision pass's mvd-bits tasks (enc_h264_b_part_mvd): j 0, 1 the 16x16 partition's in
 * list j; j 2 .. 13 partition mode m = 1 + (j - 2) / 6, the partitions using the list sel = 1
 * + (j - 2) % 6 / 2 (bit p: partition p), list j & 1 (the device spreads them over lanes). */
#define ENC_H264_B_MVD_TASKS 14
ENC_FN unsigned enc_h264_b_mvd_task(const EncFrame *f, int u, const VidkH264MvNb *n0,
                                    const VidkH264MvNb *n1, int j) {
    const int m = j < 2 ? 0 : 1 + (j - 2) / 6, sel = j < 2 ? 3 : 1 + (j - 2) % 6 / 2, l = j & 1;
    return enc_h264_b_part_mvd(l ? f->l1 : f, u, l ? *n1 : *n0, m, sel);
}

/* The decision of enc_h264_b_decide_pass from its measures: the mvd bits of the tasks
 * (bits[ENC_H264_B_MVD_TASKS]), direct's lists, vectors and SATD (duse, dv0, dv1, sd). */
ENC_FN void enc_h264_b_decide_with(const EncFrame *f, int mbx, int mby, const unsigned *bits,
                                   int duse, const VidkMv *dv0, const VidkMv *dv1, uint32_t sd,
                                   VidkMv *mvo0, VidkMv *mvo1, uint16_t *mbo) {
    const int u = mby * f->uw + mbx;
    const uint32_t *d = f->dist + ENC_H264_DIST_N * (ptrdiff_t)u;
    const VidkMv zero = {0, 0};
    int bu0 = 1, bu1 = 1, mode = 0;
    uint32_t best = 0xffffffffu;
    for (int m = 0; m < 3; m++) {
        /* each list's mvd bits in this partition mode by the partitions using it (bit p of
         * sel: partition p; 16x16: 3) */
        unsigned b0[4] = {0, 0, 0, 0}, b1[4] = {0, 0, 0, 0};
        for (int sel = m ? 1 : 3; sel < 4; sel++) {
            const int j = m ? 2 + 6 * (m - 1) + 2 * (sel - 1) : 0;
            b0[sel] = bits[j], b1[sel] = bits[j + 1];
        }
        for (int c = 0; c < (m ? 9 : 3); c++) {
            /* the lists of the two partitions (16x16: the one) */
            const int u0 = 1 + (m ? c / 3 : c), u1 = m ? 1 + c % 3 : u0;
            const uint32_t s = m ? d[ENC_H264_BDIST_PART + 6 * (m - 1) + u0 - 1] +
                                       d[ENC_H264_BDIST_PART + 6 * (m - 1) + 3 + u1 - 1]
                                 : d[ENC_H264_BDIST_L0 + u0 - 1];
            const unsigned b = vidk_ue_bits((unsigned)enc_h264_b_mb_type(m, u0, u1)) +
                               b0[(u0 & 1) | (u1 & 1) << 1] + b1[(u0 >> 1) | (u1 & 2)];
            const uint32_t cost = s + enc_h264_lbits(f, b);
            if (cost < best) best = cost, bu0 = u0, bu1 = u1, mode = m;
        }
    }
    VidkMv a[4], b[4];
    const uint32_t bonus = enc_h264_lbits(f, ENC_H264_DIRECT_BONUS),
                   cd = sd > bonus ? sd - bonus : 0u;
    const uint32_t intra = d[ENC_H264_DIST_INTRA];
    unsigned w;
    if (intra >> 2 < best) {
        w = ENC_MBI_INTRA | (intra & 3u);
        for (int q = 0; q < 4; q++)
            a[q] = b[q] = zero;
    } else if (cd <= best) {
        w = ENC_MBI_DIRECT | enc_h264_b_word(duse);
        for (int q = 0; q < 4; q++)
            a[q] = dv0[q], b[q] = dv1[q];
    } else {
        w = enc_h264_b_word2(mode, bu0, bu1);
        for (int q = 0; q < 4; q++) {
            /* the partition of quadrant q (its top-left 4x4 block) and its lists */
            const int p = enc_h264_part_of(mode, (q >> 1) * 8 + (q & 1) * 2),
                      use = p ? bu1 : bu0;
            const int pp = mode ? VIDK_ME_PART_16x8 + 2 * (mode - 1) + p : VIDK_ME_PART_16x16;
            a[q] = use & 1 ? *enc_h264_pmv(f, u, pp) : zero;
            b[q] = use & 2 ? *enc_h264_pmv(f->l1, u, pp) : zero;
        }
    }
    enc_h264_b_out(f, mbx, mby, a, b, w, mvo0, mvo1, mbo);
}

/* Decision pass k >= 1 of a B frame against the neighbours of pass k - 1 (mvi0, mvi1, mbi):
 * the costs (SATD + lambda x the CAVLC bits of mb_type and mvds) of list 0, list 1 and both
 * in one 16x16 partition, then in two 16x8 and in two 8x16 partitions (each partition list 0,
 * list 1 or both: mb_types 4 .. 21); the first lowest of them; direct (its SATD less lambda x
 * ENC_H264_DIRECT_BONUS: coded as B_Skip when no level is left) replaces it when not dearer;
 * Intra_16x16 (the estimate) when cheaper than the lowest (as enc_h264_pick in P frames). */
ENC_FN void enc_h264_b_decide_pass(const EncFrame *f, int mbx, int mby, const VidkMv *mvi0,
                                   const VidkMv *mvi1, const uint16_t *mbi, VidkMv *mvo0,
                                   VidkMv *mvo1, uint16_t *mbo) {
    VidkH264MvNb n0, n1;
    enc_h264_b_nb(f, mbx, mby, mvi0, mvi1, mbi, &n0, &n1);
    unsigned bits[ENC_H264_B_MVD_TASKS];
    for (int j = 0; j < ENC_H264_B_MVD_TASKS; j++)
        bits[j] = enc_h264_b_mvd_task(f, mby * f->uw + mbx, &n0, &n1, j);
    VidkMv dv0[4], dv1[4];
    const int duse = enc_h264_direct(enc_h264_col_zero4(f, mbx, mby), &n0, &n1, dv0, dv1);
    enc_h264_b_decide_with(f, mbx, mby, bits, duse, dv0, dv1,
                           enc_h264_b_satd(f, mbx, mby, dv0, dv1, duse * 0x55), mvo0, mvo1,
                           mbo);
}

/* Zeroed unit statistics. */
ENC_FN EncUnitStat enc_stat_zero(void) {
    EncUnitStat z = {{0, 0, 0}, 0, 0, 0, {0, 0, 0, 0, 0, 0}};
    return z;
}

/* MVD bits of a unit's partitions in coding order: the first against pred (the first
 * vector of the left unit, (0, 0) at the left edge), each next one against the one before. */
ENC_FN unsigned enc_mvd_chain(const VidkMv *pmv, int np, VidkMv pred) {
    unsigned b = 0;
    for (int i = 0; i < np; i++) {
        b += enc_mvd_bits(pmv[i], pred);
        pred = pmv[i];
    }
    return b;
}

/* The MVD predictor of a unit's first partition: the best whole-unit vector of the motion
 * search (16x16 for an H.264 macroblock, 32x32 for an HEVC CTU) of the unit to the left,
 * (0, 0) at the left edge. Read from the field: no second decision per unit. */
ENC_FN VidkMv enc_left_mv(const EncFrame *f, int bs, int ux, int uy) {
    VidkMv v = {0, 0};
    if (ux > 0) v = enc_me_at(f, bs, ux - 1, uy).mv;
    return v;
}

/* ------------------------------------------------------------------ H.264 deblocking */

/* Does the transform block holding luma 4x4 block (bx, by) (in blocks) have non-zero
 * levels: its 8x8 block in a macroblock with the 8x8 transform, else the 4x4 block
 * (f->lev[0], as the stream codes them; intra macroblocks are not asked). */
ENC_FN int enc_h264_dbk_nz(const EncFrame *f, int bx, int by) {
    const unsigned w = f->mbi[(by >> 2) * f->uw + (bx >> 2)];
    const int n = (w & ENC_MBI_TX8) ? 8 : 4;
    const int x0 = n == 8 ? (bx & ~1) * 4 : bx * 4, y0 = n == 8 ? (by & ~1) * 4 : by * 4;
    const int16_t *l = f->lev[0] + (ptrdiff_t)y0 * f->ls_[0] + x0;
    int any = 0;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            any |= l[(ptrdiff_t)y * f->ls_[0] + x];
    return any != 0;
}

/* bS of entry i (0..31) of macroblock (mbx, mby): direction d = i >> 4 (0: the vertical
 * edges, 1: the horizontal ones), edge e = (i >> 2) & 3 (at 4e samples), segment i & 3 (4
 * samples along it): vidk_h264_dbk_bs from the macroblocks' words (f->mbi), the levels
 * (f->lev[0]) and the vectors (f->mv4, quarter samples); 0 on the picture's border and, with
 * the 8x8 transform, on the luma edges at 4 and 12. */
ENC_FN int enc_h264_dbk_bs_at(const EncFrame *f, int mbx, int mby, int i) {
    const int d = i >> 4, e = (i >> 2) & 3, k = i & 3, n4 = f->W / 4;
    const unsigned w = f->mbi[mby * f->uw + mbx];
    const int tx8 = (!(w & ENC_MBI_INTRA) || (w & ENC_MBI_NXN)) && (w & ENC_MBI_TX8);
    /* q: the block right of / below the edge, p: across it */
    const int qx = 4 * mbx + (d ? k : e), qy = 4 * mby + (d ? e : k);
    const int px = d ? qx : qx - 1, py = d ? qy - 1 : qy;
    if ((d ? qy : qx) == 0 || (tx8 && (e & 1))) return 0;
    const unsigned wp = f->mbi[(py >> 2) * f->uw + (px >> 2)];
    const int ip = !!(wp & ENC_MBI_INTRA), iq = !!(w & ENC_MBI_INTRA);
    const VidkMv mp = f->mv4[(ptrdiff_t)py * n4 + px], mq = f->mv4[(ptrdiff_t)qy * n4 + qx];
    int dx = mp.x - mq.x, dy = mp.y - mq.y;
    if (f->bframe) { /* B: other lists (other pictures) or a vector of a list 4 apart: 1 */
        const int up = enc_h264_b_use4(wp, 4 * (py & 3) + (px & 3)),
                  uq = enc_h264_b_use4(w, 4 * (qy & 3) + (qx & 3));
        const VidkMv bp = f->mv4b[(ptrdiff_t)py * n4 + px],
                     bq = f->mv4b[(ptrdiff_t)qy * n4 + qx];
        const int d0 = vidk_iabs(dx) >= 4 || vidk_iabs(dy) >= 4;
        const int d1 = vidk_iabs(bp.x - bq.x) >= 4 || vidk_iabs(bp.y - bq.y) >= 4;
        dx = up != uq || ((up & 1) && d0) || ((up & 2) && d1) ? 4 : 0, dy = 0;
    }
    return vidk_h264_dbk_bs(e == 0, ip, iq, !ip && enc_h264_dbk_nz(f, px, py),
                            !iq && enc_h264_dbk_nz(f, qx, qy), dx, dy);
}

/* Line i of edge e in direction d (as enc_h264_dbk_bs_at) of plane p of macroblock (mbx,
 * mby), filtered with the bS of its segment in bs[32] (chroma: the luma's at edge 2e, the
 * chroma edges lying at 0 and 4; i < 16 luma, i < 8 chroma). The line's 8 samples are read
 * into a local copy first (on the GPU through L2: other blocks wrote them), filtered there,
 * then stored back. */
ENC_FN void enc_h264_dbk_line_at(const EncFrame *f, int mbx, int mby, int p, int d, int e,
                                 int i, const int *bs) {
    const int b = p ? bs[16 * d + 8 * e + (i >> 1)] : bs[16 * d + 4 * e + (i >> 2)];
    if (!b) return;
    const int n = p ? 8 : 16, cs = f->cs[p];
    const ptrdiff_t s = d ? cs : 1;
    uint8_t *q0 =
        f->rec[p] + (ptrdiff_t)(n * mby + (d ? 4 * e : i)) * cs + n * mbx + (d ? i : 4 * e);
    uint8_t v[8];
    for (int k = 0; k < 8; k++)
        v[k] = ENC_LDREC(q0 + (k - 4) * s);
    const VidkH264DbkQ q = vidk_h264_dbk_q(p ? f->qpc : f->qp);
    vidk_h264_dbk_line(v + 4, 1, b, p != 0, &q);
    for (int k = 1; k < 7; k++) /* p2 .. q2: what the filters write */
        q0[(k - 4) * s] = v[k];
}

/* The deblocking filter (8.7) of macroblock (mbx, mby) of f->rec, after the macroblocks
 * before it in raster order (the picture's filter runs in that order: a macroblock's edges
 * read samples that its left, upper and upper-right neighbours' edges wrote): the luma's
 * vertical edges left to right, then its horizontal edges top to bottom, then each chroma
 * plane's likewise (the GPU's warp: src/cuda/enc_kern.cuh deblock_kernel). The picture's
 * border is not filtered; slice edges are (disable_deblocking_filter_idc 0). */
ENC_FN void enc_h264_deblock_mb(const EncFrame *f, int mbx, int mby) {
    int bs[32];
    for (int i = 0; i < 32; i++)
        bs[i] = enc_h264_dbk_bs_at(f, mbx, mby, i);
    for (int p = 0; p < 3; p++)
        for (int d = 0; d < 2; d++)
            for (int e = 0; e < (p ? 2 : 4); e++)
                for (int i = 0; i < (p ? 8 : 16); i++)
                    enc_h264_dbk_line_at(f, mbx, mby, p, d, e, i, bs);
}

#endif
