/* The coding loop's unit drivers: code one H.264 macroblock or one HEVC CTU (inter or
 * intra) of an EncFrame. A template: the includer defines
 *   ENC_T(name)   the name of each instance's functions,
 *   EncOps        the type of the `ops` argument,
 *   EO_H264_SUB_FDCT(n, w, src, ss, pred, ps)      w = transform of src - pred (n = 4, 8)
 *   EO_H264_QUANT(n, lev, w, mf, qbits, f)         quantise n*n values; returns the non-zeros
 *   EO_H264_DEQ_IDCT_ADD(n, dst, ds, c, ls, qp, dc) reconstruct onto dst
 *   EO_H264_FDCT_DC(type, y, w) / EO_H264_IDCT_DC(type, dc, c, ls00, qp)   DC transforms
 *   EO_HEVC_FWD(log2n, coef, res, tmp) / EO_HEVC_INV(log2n, res, coef, tmp)
 *   EO_HEVC_QUANT(lev, coef, len, scale, qbits, off)   returns the non-zeros
 *   EO_HEVC_DEQUANT(coef, lev, len, scale, shift)
 * (src/enc/encode.c: the dsp kernels of the context, and the core primitives of enc_core.h;
 * src/cuda/encode.cu: the core primitives on the device). The specification is
 * docs/ENCODE.md. */

/* ---- H.264 ---------------------------------------------------------------------------- */

/* Chroma plane p (1, 2) of one macroblock, prediction already in rec: 4x4 transforms, the
 * 2x2 DC transform, reconstruction; in three steps (h264_cp_fwd, h264_cp_dc, h264_cp_rec),
 * the first and last over a range of its 4x4 blocks: the cuda backend runs them on pairs of
 * lanes, two blocks each (src/cuda/enc_kern.cuh inter_kernel).
 * Step 1, blocks b0 .. b0 + nb - 1 (raster): their transforms and AC quantiser into lev[b -
 * b0], their DC coefficients into wdc[b - b0]; returns their decimation score. */
ENC_FN int ENC_T(h264_cp_fwd)(const EncOps *ops, const EncFrame *f, int mbx, int mby, int intra,
                              int p, int b0, int nb, int16_t (*lev)[16], int32_t *wdc) {
    (void)ops;
    const int qbits = 15 + f->qpc / 6;
    const int32_t dz = vidk_h264_deadzone(qbits, intra);
    ENC_ALIGN(64) int32_t mf_ac[16];
    ENC_ALIGN(64) int32_t mf_dc[16];
    ENC_ALIGN(64) int32_t w[16];
    enc_dc_factors(f->mf4c, mf_ac, mf_dc);
    const int ss = f->ss[p], cs = f->cs[p];
    const uint8_t *src = f->src[p] + (ptrdiff_t)(mby * 8) * ss + mbx * 8;
    const uint8_t *rec = f->rec[p] + (ptrdiff_t)(mby * 8) * cs + mbx * 8;
    int score = 0;
    for (int i = 0; i < nb; i++) {
        const int b = b0 + i, bx = (b & 1) * 4, by = (b >> 1) * 4;
        EO_H264_SUB_FDCT(4, w, src + by * ss + bx, ss, rec + by * cs + bx, cs);
        (void)EO_H264_QUANT(4, lev[i], w, mf_ac, qbits, dz);
        wdc[i] = w[0];
        score += enc_decimate_score(lev[i], 4, 1);
    }
    return score;
}

/* Step 2: the plane's four DC coefficients wdc through the 2x2 transform and the quantiser
 * into their levels dcl[0..3] (dcl: 16 entries) and back into the values dc[0..3] the
 * blocks' reconstruction takes; returns the bits of the DC block, *nz its non-zero levels. */
ENC_FN unsigned ENC_T(h264_cp_dc)(const EncOps *ops, const EncFrame *f, int intra,
                                  const int32_t *wdc, int16_t *dcl, int32_t *dc, int *nz) {
    (void)ops;
    const int qp = f->qpc, qbdc = 16 + qp / 6;
    const int32_t dzdc = vidk_h264_deadzone(qbdc, intra);
    ENC_ALIGN(64) int32_t mf_ac[16];
    ENC_ALIGN(64) int32_t mf_dc[16];
    ENC_ALIGN(64) int32_t w[16];
    ENC_ALIGN(64) int32_t y[16];
    enc_dc_factors(f->mf4c, mf_ac, mf_dc);
    for (int k = 0; k < 16; k++)
        w[k] = k < 4 ? wdc[k] : 0;
    EO_H264_FDCT_DC(1, y, w);
    for (int k = 4; k < 16; k++)
        y[k] = 0;
    (void)EO_H264_QUANT(4, dcl, y, mf_dc, qbdc, dzdc);
    EO_H264_IDCT_DC(1, dc, dcl, f->ls4c[0], qp);
    return enc_block_bits(dcl, 4, nz);
}

/* Step 3, blocks b0 .. b0 + nb - 1: their AC levels zeroed when `zero` (an inter plane
 * whose score is below 7, §9), their DC levels from dcl, the levels stored, the
 * reconstruction onto the prediction with dc; returns the bits of their AC, adding their
 * non-zero AC levels to *nnz. */
ENC_FN unsigned ENC_T(h264_cp_rec)(const EncOps *ops, const EncFrame *f, int mbx, int mby,
                                   int p, int b0, int nb, int zero, int16_t (*lev)[16],
                                   const int16_t *dcl, const int32_t *dc, int *nnz) {
    (void)ops;
    const int x0 = mbx * 8, y0 = mby * 8, cs = f->cs[p];
    uint8_t *rec = f->rec[p] + (ptrdiff_t)y0 * cs + x0;
    unsigned bits = 0;
    for (int i = 0; i < nb; i++) {
        const int b = b0 + i, bx = (b & 1) * 4, by = (b >> 1) * 4;
        if (zero)
            for (int k = 1; k < 16; k++)
                lev[i][k] = 0;
        int nz;
        bits += enc_block_bits(lev[i] + 1, 15, &nz);
        *nnz += nz;
        lev[i][0] = dcl[b];
        enc_store_levels(f, p, x0 + bx, y0 + by, lev[i], 4);
        EO_H264_DEQ_IDCT_ADD(4, rec + by * cs + bx, cs, lev[i], f->ls4c, f->qpc, &dc[b]);
    }
    return bits;
}

/* The whole plane, its steps in turn. */
ENC_FN void ENC_T(h264_chroma_plane)(const EncOps *ops, const EncFrame *f, int mbx, int mby,
                                     int intra, int p, EncUnitStat *st) {
    ENC_ALIGN(64) int16_t lev[4][16];
    ENC_ALIGN(64) int16_t dcl[16];
    int32_t wdc[4], dc[4];
    const int score = ENC_T(h264_cp_fwd)(ops, f, mbx, mby, intra, p, 0, 4, lev, wdc);
    int nz = 0;
    st->bits_level += ENC_T(h264_cp_dc)(ops, f, intra, wdc, dcl, dc, &nz);
    st->bits_level +=
        ENC_T(h264_cp_rec)(ops, f, mbx, mby, p, 0, 4, !intra && score < 7, lev, dcl, dc, &nz);
    st->nnz[p] += (uint32_t)nz;
}

/* Both chroma planes of one macroblock. */
ENC_FN void ENC_T(h264_chroma)(const EncOps *ops, const EncFrame *f, int mbx, int mby,
                               int intra, EncUnitStat *st) {
    for (int p = 1; p < 3; p++)
        ENC_T(h264_chroma_plane)(ops, f, mbx, mby, intra, p, st);
}

/* One quadrant (8x8, q raster) of an inter macroblock's luma residual for one transform
 * size, in two steps around the decimation, which needs every quadrant's score (the cuda
 * backend runs the quadrants in parallel threads: src/cuda/encode.cu inter_kernel).
 * src: the quadrant's source (stride ss); out: its prediction, then its reconstruction
 * (stride os); lev: its 64 levels (four 4x4 blocks in raster order, or one 8x8 block);
 * moving: enc_h264_mb_moving of the macroblock (the rounding, enc_h264_inter_round).
 * First: the transforms and the quantiser; returns the quadrant's decimation score. */
ENC_FN int ENC_T(h264_lq_quant)(const EncOps *ops, const EncFrame *f, const uint8_t *src,
                                int ss, int tx8, const uint8_t *out, int os, int16_t *lev,
                                int moving) {
    (void)ops;
    ENC_ALIGN(64) int32_t w[64];
    const int n = tx8 ? 8 : 4, nb = 8 / n, len = n * n, qbits = (tx8 ? 16 : 15) + f->qp / 6;
    const int32_t dz = enc_h264_inter_round(qbits, moving);
    int score = 0;
    for (int b = 0; b < nb * nb; b++) {
        const int bx = (b % nb) * n, by = (b / nb) * n;
        EO_H264_SUB_FDCT(n, w, src + by * ss + bx, ss, out + by * os + bx, os);
        (void)EO_H264_QUANT(n, lev + len * b, w, tx8 ? f->mf8y : f->mf4y, qbits, dz);
        score += enc_decimate_score(lev + len * b, n, 0);
    }
    return score;
}

/* Then: the levels zeroed when `zero` (docs/ENCODE.md §9: the quadrant scores below 4 or the
 * macroblock below 6), the reconstruction into out; returns the bit estimate of the levels
 * (§11) and adds their non-zero count to *nnz. */
ENC_FN unsigned ENC_T(h264_lq_rec)(const EncOps *ops, const EncFrame *f, int tx8, int zero,
                                   int16_t *lev, uint8_t *out, int os, int *nnz) {
    (void)ops;
    const int n = tx8 ? 8 : 4, nb = 8 / n, len = n * n;
    unsigned bits = 0;
    for (int b = 0; b < nb * nb; b++) {
        int16_t *l = lev + len * b;
        if (zero)
            for (int k = 0; k < len; k++)
                l[k] = 0;
        int nz;
        bits += enc_block_bits(l, len, &nz);
        *nnz += nz;
        if (nz)
            EO_H264_DEQ_IDCT_ADD(n, out + (b / nb) * n * os + (b % nb) * n, os, l,
                                 tx8 ? f->ls8y : f->ls4y, f->qp, (const int32_t *)0);
    }
    return bits;
}

/* The whole luma of one transform size: src against the prediction in out (16x16, stride
 * os), which becomes the reconstruction; lev: the quadrants' levels, 64 each. Returns the bit
 * estimate (h264_lq_rec). */
ENC_FN unsigned ENC_T(h264_luma_try)(const EncOps *ops, const EncFrame *f, const uint8_t *src,
                                     int ss, int tx8, int16_t *lev, uint8_t *out, int os,
                                     int *nnz, int moving) {
    int score[4], total = 0;
    unsigned bits = 0;
    for (int q = 0; q < 4; q++) {
        const int x = 8 * (q & 1), y = 8 * (q >> 1);
        score[q] = ENC_T(h264_lq_quant)(ops, f, src + y * ss + x, ss, tx8, out + y * os + x, os,
                                        lev + 64 * q, moving);
        total += score[q];
    }
    for (int q = 0; q < 4; q++)
        bits += ENC_T(h264_lq_rec)(ops, f, tx8, total < 6 || score[q] < 4, lev + 64 * q,
                                   out + 8 * (q >> 1) * os + 8 * (q & 1), os, nnz);
    return bits;
}

/* The levels of quadrant q (h264_lq_quant's layout) into the level planes. */
ENC_FN void ENC_T(h264_lq_store)(const EncFrame *f, int x0, int y0, int tx8, int q,
                                 const int16_t *lev) {
    const int xq = x0 + 8 * (q & 1), yq = y0 + 8 * (q >> 1);
    if (tx8)
        enc_store_levels(f, 0, xq, yq, lev, 8);
    else
        for (int b = 0; b < 4; b++)
            enc_store_levels(f, 0, xq + 4 * (b & 1), yq + 4 * (b >> 1), lev + 16 * b, 4);
}

/* Luma residual of an inter macroblock, coded in place over its prediction in rec. Where
 * the partition allows the 8x8 transform, the size is chosen from the residual's SATD and
 * SA8D (enc_h264_tx8_wins); else the 4x4 transform. Returns 1 for the 8x8 transform. (The
 * cuda backend measures the quadrants in parallel threads: src/cuda/encode.cu
 * inter_kernel.) */
ENC_FN int ENC_T(h264_luma_inter)(const EncOps *ops, const EncFrame *f, int x0, int y0,
                                  int tx8_ok, int moving, EncUnitStat *st) {
    const int ss = f->ss[0], cs = f->cs[0];
    const uint8_t *src = f->src[0] + (ptrdiff_t)y0 * ss + x0;
    uint8_t *rec = f->rec[0] + (ptrdiff_t)y0 * cs + x0;
    int t = 0;
    if (tx8_ok) {
        uint32_t s4 = 0, s8 = 0;
        for (int q = 0; q < 4; q++) {
            const int y = 8 * (q >> 1), x = 8 * (q & 1);
            uint32_t a, b;
            enc_h264_tx_measure(src + y * ss + x, ss, rec + y * cs + x, cs, &a, &b);
            s4 += a, s8 += b;
        }
        t = enc_h264_tx8_wins(s4, s8);
    }
    ENC_ALIGN(64) int16_t lev[256];
    int nz = 0;
    st->bits_level += ENC_T(h264_luma_try)(ops, f, src, ss, t, lev, rec, cs, &nz, moving);
    st->nnz[0] += (uint32_t)nz;
    for (int q = 0; q < 4; q++)
        ENC_T(h264_lq_store)(f, x0, y0, t, q, lev + 64 * q);
    return t;
}

/* The header part of an inter macroblock's coding: its decision word's partition mode,
 * sub-macroblock types and whether the 8x8 transform is allowed; its vectors into nb->in;
 * the mode / mvd bits and the partition count into st. */
ENC_FN int ENC_T(h264_p_head)(const EncFrame *f, int mbx, int mby, unsigned w, VidkH264MvNb *nb,
                              EncUnitStat *st) {
    const int mode = (int)(w & 3);
    int sub[4];
    for (int q = 0; q < 4; q++)
        sub[q] = mode == 3 ? (int)(w >> (2 + 2 * q)) & 3 : 0;
    /* the final decisions: the mvd bits the stream codes */
    vidk_h264_mvnb_fill(nb, f->dmv, f->W / 4, f->dmb, ENC_MBI_INTRA, -1, f->uw, f->uh,
                        enc_h264_row0(f, mby), mbx, mby);
    st->bits_mv = enc_h264_mvd_bits(nb, mode, sub);
    const int tx8_ok = mode != 3 || !(w & 0x3fcu);
    st->bits_mode = enc_h264_mb_bits[mode] + (tx8_ok ? 1u : 0u);
    if (mode == 3)
        for (int q = 0; q < 4; q++)
            st->bits_mode += enc_h264_sub_bits[sub[q]];
    st->parts[VIDK_ENC_PART_16x16 + mode]++;
    return tx8_ok;
}

/* After the prediction: the energy map (SSD of the luma prediction) and the vector map
 * (mv: the macroblock's 16 vectors, row stride n4). */
ENC_FN void ENC_T(h264_p_maps)(const EncFrame *f, int mbx, int mby, const VidkMv *mv, int n4) {
    const int x0 = mbx * 16, y0 = mby * 16;
    if (f->energy)
        f->energy[mby * f->mb_w + mbx] =
            enc_ssd(f->src[0] + (ptrdiff_t)y0 * f->ss[0] + x0, f->ss[0],
                    f->rec[0] + (ptrdiff_t)y0 * f->cs[0] + x0, f->cs[0], 16, 16);
    if (f->mv4)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                f->mv4[(ptrdiff_t)(mby * 4 + j) * (f->W / 4) + mbx * 4 + i] = mv[j * n4 + i];
}

/* Inter macroblock (P frame); one the decision made intra is left to h264_i_mb, which
 * codes it once its neighbours are reconstructed. */
ENC_FN void ENC_T(h264_p_mb)(const EncOps *ops, const EncFrame *f, int mbx, int mby) {
    const unsigned w = f->dmb[mby * f->uw + mbx];
    if (w & ENC_MBI_INTRA) return;
    EncUnitStat *st = &f->stat[mby * f->uw + mbx];
    *st = enc_stat_zero();
    VidkH264MvNb nb;
    const int tx8_ok = ENC_T(h264_p_head)(f, mbx, mby, w, &nb, st);
    const int x0 = mbx * 16, y0 = mby * 16;
    enc_mc_area(f, x0, y0, 16, 16, nb.in, 4, 7);
    ENC_T(h264_p_maps)(f, mbx, mby, nb.in, 4);
    const int tx8 = ENC_T(h264_luma_inter)(ops, f, x0, y0, tx8_ok,
                                           enc_h264_mb_moving(nb.in, nb.in, 4, 1), st);
    if (f->mbi) f->mbi[mby * f->uw + mbx] = (uint16_t)(w | (tx8 ? ENC_MBI_TX8 : 0u));
    ENC_T(h264_chroma)(ops, f, mbx, mby, 0, st);
}

/* The header part of an inter macroblock of a B frame (word w): the mode / mvd bits the
 * stream codes (against the final decisions) and the partition count into st. */
ENC_FN void ENC_T(h264_b_head)(const EncFrame *f, int mbx, int mby, unsigned w,
                               EncUnitStat *st) {
    const int mode = (w & ENC_MBI_DIRECT) ? 0 : (int)(w & 3); /* 0 16x16, 1 16x8, 2 8x16 */
    if (w & ENC_MBI_DIRECT) {
        st->bits_mode = enc_h264_mb_bits[0];
    } else {
        VidkH264MvNb n[2];
        enc_h264_b_nb(f, mbx, mby, f->dmv, f->dmvb, f->dmb, &n[0], &n[1]);
        const int u0 = enc_h264_b_use4(w, 0), u1 = enc_h264_b_use4(w, 15); /* the partitions' */
        st->bits_mode = vidk_ue_bits((unsigned)enc_h264_b_mb_type(mode, u0, u1));
        for (int l = 0; l < 2; l++) {
            int dx[2], dy[2], px[2], py[2], pk[2];
            const int np = enc_h264_b_mvds(&n[l], mode, (u0 >> l & 1) | (u1 >> l & 1) << 1, dx,
                                           dy, px, py, pk);
            for (int k = 0; k < np; k++)
                st->bits_mv += vidk_se_bits(dx[k]) + vidk_se_bits(dy[k]);
        }
    }
    st->bits_mode += 1u; /* transform_size_8x8_flag */
    st->parts[VIDK_ENC_PART_16x16 + mode]++;
}

/* After the prediction: h264_p_maps with the list-0 vectors m0, and the list-1 vectors m1
 * (row stride n4 both) into f->mv4b. */
ENC_FN void ENC_T(h264_b_maps)(const EncFrame *f, int mbx, int mby, const VidkMv *m0,
                               const VidkMv *m1, int n4) {
    ENC_T(h264_p_maps)(f, mbx, mby, m0, n4);
    if (f->mv4b)
        for (int k = 0; k < 16; k++)
            f->mv4b[(ptrdiff_t)(mby * 4 + k / 4) * (f->W / 4) + mbx * 4 + k % 4] =
                m1[(k >> 2) * n4 + (k & 3)];
}

/* Inter macroblock of a B frame (docs/ENCODE.md §16), from the last decision pass's word
 * and vectors (f->dmb, dmv, dmvb); intra ones as in P frames (h264_i_mb, after). */
ENC_FN void ENC_T(h264_b_mb)(const EncOps *ops, const EncFrame *f, int mbx, int mby) {
    const unsigned w = f->dmb[mby * f->uw + mbx];
    if (w & ENC_MBI_INTRA) return;
    EncUnitStat *st = &f->stat[mby * f->uw + mbx];
    *st = enc_stat_zero();
    const int uq = enc_h264_b_uq(w), n4 = f->W / 4;
    VidkMv v0[4], v1[4], m0[16], m1[16];
    for (int k = 0; k < 16; k++) {
        const ptrdiff_t o = (ptrdiff_t)(mby * 4 + k / 4) * n4 + mbx * 4 + k % 4;
        m0[k] = f->dmv[o], m1[k] = f->dmvb[o];
    }
    for (int q = 0; q < 4; q++)
        v0[q] = m0[(q >> 1) * 8 + (q & 1) * 2], v1[q] = m1[(q >> 1) * 8 + (q & 1) * 2];
    ENC_T(h264_b_head)(f, mbx, mby, w, st);
    const int x0 = mbx * 16, y0 = mby * 16;
    enc_h264_b_pred_mb(f, mbx, mby, v0, v1, uq);
    ENC_T(h264_b_maps)(f, mbx, mby, m0, m1, 4);
    const int tx8 =
        ENC_T(h264_luma_inter)(ops, f, x0, y0, 1, enc_h264_mb_moving(m0, m1, 4, 3), st);
    if (f->mbi) f->mbi[mby * f->uw + mbx] = (uint16_t)(w | (tx8 ? ENC_MBI_TX8 : 0u));
    ENC_T(h264_chroma)(ops, f, mbx, mby, 0, st);
}

/* One N x N block of an I_NxN candidate (h264_inxn_try), its prediction bp (stride N)
 * chosen: into rec, its SSD against src added to *energy, the residual transformed,
 * quantised with the intra rounding into l (N * N), its bits and non-zeros added to *bits and
 * *nnz, reconstructed. */
ENC_FN void ENC_T(h264_inxn_code)(const EncOps *ops, const EncFrame *f, int N,
                                  const uint8_t *src, uint8_t *rec, const uint8_t *bp,
                                  int16_t *l, unsigned *bits, int *nnz, uint32_t *energy) {
    (void)ops;
    const int ss = f->ss[0], cs = f->cs[0], len = N * N;
    const int qbits = (N == 8 ? 16 : 15) + f->qp / 6;
    for (int i = 0; i < len; i++)
        rec[(i / N) * cs + (i % N)] = bp[i];
    *energy += enc_ssd(src, ss, bp, N, N, N);
    ENC_ALIGN(64) int32_t w[64];
    EO_H264_SUB_FDCT(N, w, src, ss, rec, cs);
    (void)EO_H264_QUANT(N, l, w, N == 8 ? f->mf8y : f->mf4y, qbits,
                        vidk_h264_deadzone(qbits, 1));
    int nz;
    *bits += enc_block_bits(l, len, &nz);
    *nnz += nz;
    if (nz)
        EO_H264_DEQ_IDCT_ADD(N, rec, cs, l, N == 8 ? f->ls8y : f->ls4y, f->qp,
                             (const int32_t *)0);
}

/* The Intra_4x4 (N = 4) or Intra_8x8 (N = 8) candidate of an intra macroblock
 * (docs/ENCODE.md §7), coded into rec: each N x N block in decoding order (luma4x4BlkIdx /
 * luma8x8BlkIdx) predicted from the reconstruction of the blocks before it, its mode the
 * lowest SATD (of its 4x4 blocks) + lambda x (1 bit when it is the predicted mode, else 4;
 * the first on ties), then transformed, quantised with the intra rounding and reconstructed.
 * Returns the summed costs; lev: the blocks' levels (N * N each, raster inside the block, in
 * decoding order), the modes into f->im4 (an 8x8 block's into its four entries), *bits /
 * *nnz / *mbits / *energy the level bits, non-zero levels, mode bits and the prediction's
 * SSD. */
ENC_FN uint32_t ENC_T(h264_inxn_try)(const EncOps *ops, const EncFrame *f, int mbx, int mby,
                                     int N, int16_t *lev, unsigned *bits, int *nnz,
                                     unsigned *mbits, uint32_t *energy) {
    const int ss = f->ss[0], cs = f->cs[0], len = N * N, nblk = 256 / len;
    const int top = mby > 0 && !enc_h264_slice_start(mby, f->uh, f->slices);
    uint32_t cost = 0;
    for (int k = 0; k < nblk; k++) {
        int bx, by;
        enc_h264_inxn_blk(N, k, &bx, &by);
        const int x4 = 4 * mbx + bx * N / 4, y4 = 4 * mby + by * N / 4;
        const uint8_t *src = f->src[0] + (ptrdiff_t)(4 * y4) * ss + 4 * x4;
        uint8_t *rec = f->rec[0] + (ptrdiff_t)(4 * y4) * cs + 4 * x4;
        EncNbN nb;
        enc_h264_nbn(f, mbx, mby, N, bx, by, &nb);
        const int pm = vidk_h264_inxn_pred_mode(f->mbi, f->im4, f->uw, x4, y4, top);
        uint32_t bc = 0xffffffffu;
        int bm = 2;
        uint8_t pr[64], bp[64] = {0}; /* (DC is always a candidate) */
        for (int m = 0; m < 9; m++) {
            if (!enc_h264_inxn_ok(&nb, m)) continue;
            const uint32_t c = enc_h264_inxn_cost(f, &nb, m, pm, src, ss, pr);
            if (c < bc) {
                bc = c, bm = m;
                for (int i = 0; i < len; i++)
                    bp[i] = pr[i];
            }
        }
        cost += bc;
        *mbits += enc_h264_inxn_mbits(bm, pm);
        enc_h264_im4_set(f, x4, y4, N, bm);
        ENC_T(h264_inxn_code)(ops, f, N, src, rec, bp, lev + len * k, bits, nnz, energy);
    }
    return cost;
}

/* The levels of an I_NxN macroblock's blocks (lev: N * N each, in decoding order) out. */
ENC_FN void ENC_T(h264_nxn_store)(const EncFrame *f, int mbx, int mby, int N,
                                  const int16_t *lev) {
    for (int k = 0; k < 256 / (N * N); k++) {
        int bx, by;
        enc_h264_inxn_blk(N, k, &bx, &by);
        enc_store_levels(f, 0, 16 * mbx + N * bx, 16 * mby + N * by, lev + N * N * k, N);
    }
}

/* Intra_16x16's mode (8.3.3) of macroblock (mbx, mby): the lowest SAD against the source,
 * modes 0..3 where their neighbours exist, the first on ties; its prediction into best. */
ENC_FN int ENC_T(h264_i16_choose)(const EncFrame *f, int mbx, int mby, uint8_t *best) {
    const int x0 = mbx * 16, y0 = mby * 16, ss = f->ss[0];
    const uint8_t *src = f->src[0] + (ptrdiff_t)y0 * ss + x0;
    EncNb nb;
    uint8_t pr[256];
    uint32_t bsad = 0xffffffffu;
    int bm = 2;
    enc_h264_nb(f, 0, x0, y0, 16, &nb);
    for (int m = 0; m < 4; m++) {
        if (!enc_h264_pred16(&nb, m, pr)) continue;
        const uint32_t s = enc_sad(src, ss, pr, 16, 16, 16);
        if (s < bsad) {
            bsad = s, bm = m;
            for (int k = 0; k < 256; k++)
                best[k] = pr[k];
        }
    }
    return bm;
}

/* Intra_4x4 and Intra_8x8 (f->i4x4, f->i8x8) against Intra_16x16 of mode bm predicting best:
 * SATD + lambda x (the mode bits, + ENC_H264_NXN_BIAS for I_NxN); each I_NxN candidate coded
 * into rec in turn, the cheaper one kept (rec, modes). Returns 0 (Intra_16x16: rec then holds
 * garbage the caller's coding overwrites) or N, the I_NxN's levels then stored, its level
 * bits, non-zero count and energy in st / f->energy, its mode bits in *mbits. */
ENC_FN int ENC_T(h264_nxn_decide)(const EncOps *ops, const EncFrame *f, int mbx, int mby,
                                  const uint8_t *best, int bm, EncUnitStat *st,
                                  unsigned *mbits) {
    const int x0 = mbx * 16, y0 = mby * 16, ss = f->ss[0], cs = f->cs[0];
    const uint8_t *src = f->src[0] + (ptrdiff_t)y0 * ss + x0;
    uint8_t *rec = f->rec[0] + (ptrdiff_t)y0 * cs + x0;
    int nxn = 0;
    ENC_ALIGN(64) int16_t lv[2][256];
    uint8_t keep[256] = {0}, km[16] = {0};
    unsigned bl[2] = {0, 0}, mb[2] = {0, 0};
    int nz[2] = {0, 0};
    uint32_t en[2] = {0, 0};
    uint32_t best_c =
        enc_satd16(src, ss, best) + enc_h264_lbits(f, vidk_ue_bits(1u + (unsigned)bm));
    uint8_t *im = f->im4 + (ptrdiff_t)(4 * mby) * (f->W / 4) + 4 * mbx;
    for (int t = 0; t < 2; t++) {
        const int N = t ? 8 : 4;
        if (!(t ? f->i8x8 : f->i4x4)) continue;
        const uint32_t c =
            ENC_T(h264_inxn_try)(ops, f, mbx, mby, N, lv[t], &bl[t], &nz[t], &mb[t], &en[t]) +
            enc_h264_lbits(f, ENC_H264_NXN_BIAS);
        if (c < best_c) {
            best_c = c, nxn = N;
            for (int i = 0; i < 256; i++) /* kept in case the next candidate loses */
                keep[i] = rec[(i >> 4) * cs + (i & 15)];
            for (int i = 0; i < 16; i++)
                km[i] = im[(i >> 2) * (f->W / 4) + (i & 3)];
        } else if (nxn) { /* the earlier candidate back */
            for (int i = 0; i < 256; i++)
                rec[(i >> 4) * cs + (i & 15)] = keep[i];
            for (int i = 0; i < 16; i++)
                im[(i >> 2) * (f->W / 4) + (i & 3)] = km[i];
        }
    }
    if (nxn) {
        const int t = nxn == 8;
        *mbits = mb[t];
        st->bits_level += bl[t];
        st->nnz[0] += (uint32_t)nz[t];
        if (f->energy) f->energy[mby * f->mb_w + mbx] = en[t];
        ENC_T(h264_nxn_store)(f, mbx, mby, nxn, lv[t]);
    }
    return nxn;
}

/* Intra macroblock (I frame, or a P-frame macroblock the decision made intra): Intra_16x16,
 * or with f->i4x4 / f->i8x8 Intra_4x4 / Intra_8x8 where its cost is lower (in a P frame its
 * top-right neighbour is coded before it then: src/enc/encode.c code_intra_in_p), + chroma
 * intra from reconstructed neighbours. */
ENC_FN void ENC_T(h264_i_mb)(const EncOps *ops, const EncFrame *f, int mbx, int mby) {
    EncUnitStat *st = &f->stat[mby * f->uw + mbx];
    *st = enc_stat_zero();
    const int x0 = mbx * 16, y0 = mby * 16, qp = f->qp, ss = f->ss[0], cs = f->cs[0];
    const uint8_t *src = f->src[0] + (ptrdiff_t)y0 * ss + x0;
    uint8_t *rec = f->rec[0] + (ptrdiff_t)y0 * cs + x0;
    uint8_t best[256];
    const int bm = ENC_T(h264_i16_choose)(f, mbx, mby, best);
    unsigned mbits4 = 0; /* I_NxN: its mode bits */
    const int nxn = f->i4x4 || f->i8x8
                        ? ENC_T(h264_nxn_decide)(ops, f, mbx, mby, best, bm, st, &mbits4)
                        : 0;
    if (!nxn) {
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++)
                rec[y * cs + x] = best[y * 16 + x];
        if (f->energy) f->energy[mby * f->mb_w + mbx] = enc_ssd(src, ss, best, 16, 16, 16);
    }
    if (f->mv4)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++) {
                VidkMv zero = {0, 0};
                f->mv4[(ptrdiff_t)(mby * 4 + j) * (f->W / 4) + mbx * 4 + i] = zero;
            }

    /* Luma: 16 4x4 AC blocks + the 4x4 DC transform. */
    if (!nxn) {
        const int qbits = 15 + qp / 6, qbdc = 17 + qp / 6;
        const int32_t dz = vidk_h264_deadzone(qbits, 1), dzdc = vidk_h264_deadzone(qbdc, 1);
        ENC_ALIGN(64) int32_t mf_ac[16];
        ENC_ALIGN(64) int32_t mf_dc[16];
        ENC_ALIGN(64) int32_t w[16][16];
        ENC_ALIGN(64) int32_t wdc[16];
        ENC_ALIGN(64) int32_t y[16];
        ENC_ALIGN(64) int16_t lev[16][16];
        ENC_ALIGN(64) int16_t dcl[16];
        int32_t dc[16];
        int nz;
        enc_dc_factors(f->mf4y, mf_ac, mf_dc);
        for (int b = 0; b < 16; b++) {
            const int bx = (b & 3) * 4, by = (b >> 2) * 4;
            EO_H264_SUB_FDCT(4, w[b], src + by * ss + bx, ss, rec + by * cs + bx, cs);
            (void)EO_H264_QUANT(4, lev[b], w[b], mf_ac, qbits, dz);
            wdc[b] = w[b][0];
        }
        EO_H264_FDCT_DC(0, y, wdc);
        (void)EO_H264_QUANT(4, dcl, y, mf_dc, qbdc, dzdc);
        EO_H264_IDCT_DC(0, dc, dcl, f->ls4y[0], qp);
        st->bits_level += enc_block_bits(dcl, 16, &nz);
        st->nnz[0] += (uint32_t)nz;
        for (int b = 0; b < 16; b++) {
            const int bx = (b & 3) * 4, by = (b >> 2) * 4;
            st->bits_level += enc_block_bits(lev[b] + 1, 15, &nz);
            st->nnz[0] += (uint32_t)nz;
            lev[b][0] = dcl[b];
            enc_store_levels(f, 0, x0 + bx, y0 + by, lev[b], 4);
            EO_H264_DEQ_IDCT_ADD(4, rec + by * cs + bx, cs, lev[b], f->ls4y, qp, &dc[b]);
        }
    }

    /* Chroma: one mode for both planes, by the summed SAD. */
    {
        EncNb cn[2];
        uint8_t cp[2][64], cb[2][64];
        uint32_t csad = 0xffffffffu;
        int cm = 0;
        for (int p = 1; p < 3; p++)
            enc_h264_nb(f, p, mbx * 8, mby * 8, 8, &cn[p - 1]);
        for (int m = 0; m < 4; m++) {
            uint32_t s = 0;
            int ok = 1;
            for (int p = 1; p < 3 && ok; p++) {
                ok = enc_h264_predc(&cn[p - 1], m, cp[p - 1]);
                if (ok)
                    s += enc_sad(f->src[p] + (ptrdiff_t)(mby * 8) * f->ss[p] + mbx * 8,
                                 f->ss[p], cp[p - 1], 8, 8, 8);
            }
            if (ok && s < csad) {
                csad = s, cm = m;
                for (int k = 0; k < 64; k++) {
                    cb[0][k] = cp[0][k];
                    cb[1][k] = cp[1][k];
                }
            }
        }
        for (int p = 1; p < 3; p++) {
            uint8_t *r = f->rec[p] + (ptrdiff_t)(mby * 8) * f->cs[p] + mbx * 8;
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++)
                    r[y * f->cs[p] + x] = cb[p - 1][y * 8 + x];
        }
        /* I_NxN: mb_type, transform_size_8x8_flag, the modes; Intra_16x16: mb_type */
        st->bits_mode =
            (nxn ? 2 + mbits4 : 1 + vidk_ue_bits((unsigned)bm)) + vidk_ue_bits((unsigned)cm);
        const unsigned kind = nxn == 8   ? ENC_MBI_NXN | ENC_MBI_TX8
                              : nxn == 4 ? ENC_MBI_NXN
                                         : (unsigned)bm;
        if (f->mbi) f->mbi[mby * f->uw + mbx] = (uint16_t)(ENC_MBI_INTRA | kind | cm << 2);
    }
    st->parts[VIDK_ENC_PART_INTRA]++;
    ENC_T(h264_chroma)(ops, f, mbx, mby, 1, st);
}

/* ---- HEVC ----------------------------------------------------------------------------- */

/* One transform block of plane p at (x, y) (plane samples), prediction in rec: residual,
 * DCT, quantisation, dequantisation, inverse DCT, reconstruction. */
ENC_FN void ENC_T(hevc_tb)(const EncOps *ops, const EncFrame *f, int p, int x, int y, int log2n,
                           EncUnitStat *st) {
    (void)ops;
    const int n = 1 << log2n, len = n * n, c = p ? 1 : 0, ss = f->ss[p], cs = f->cs[p];
    const uint8_t *src = f->src[p] + (ptrdiff_t)y * ss + x;
    uint8_t *rec = f->rec[p] + (ptrdiff_t)y * cs + x;
    ENC_ALIGN(64) int16_t a[1024];
    ENC_ALIGN(64) int16_t b[1024];
    ENC_ALIGN(64) int32_t tmp[1024];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            a[j * n + i] = (int16_t)(src[j * ss + i] - rec[j * cs + i]);
    EO_HEVC_FWD(log2n, b, a, tmp);
    const int nzq = EO_HEVC_QUANT(a, b, len, f->hq_scale[c], f->hq_qbits[c][log2n - 2],
                                  f->hq_off[c][log2n - 2]);
    int nz;
    st->bits_level += enc_block_bits(a, len, &nz);
    st->nnz[p] += (uint32_t)nz;
    enc_store_levels(f, p, x, y, a, n);
    if (!nzq) return;
    EO_HEVC_DEQUANT(b, a, len, f->hd_scale[c], f->hd_shift[c][log2n - 2]);
    EO_HEVC_INV(log2n, a, b, tmp);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            rec[j * cs + i] = enc_pix(rec[j * cs + i] + a[j * n + i]);
}

/* Luma TBs of a w x w area at (x, y) split into TBs of 2^log2n, and the chroma TBs of
 * 2^log2c over the matching chroma area. */
ENC_FN void ENC_T(hevc_tbs)(const EncOps *ops, const EncFrame *f, int x, int y, int w,
                            int log2n, int log2c, EncUnitStat *st) {
    const int n = 1 << log2n, nc = 1 << log2c;
    for (int j = 0; j < w; j += n)
        for (int i = 0; i < w; i += n)
            ENC_T(hevc_tb)(ops, f, 0, x + i, y + j, log2n, st);
    for (int p = 1; p < 3; p++)
        for (int j = 0; j < w / 2; j += nc)
            for (int i = 0; i < w / 2; i += nc)
                ENC_T(hevc_tb)(ops, f, p, x / 2 + i, y / 2 + j, log2c, st);
}

/* Inter CTU (P frame). */
ENC_FN void ENC_T(hevc_p_ctu)(const EncOps *ops, const EncFrame *f, int cx, int cy) {
    EncUnitStat *st = &f->stat[cy * f->uw + cx];
    *st = enc_stat_zero();
    EncHevcDec d;
    enc_hevc_decide(f, cx, cy, &d);
    st->bits_mv = enc_mvd_chain(d.pmv, d.np, enc_left_mv(f, VIDK_BLOCK_32x32, cx, cy));
    st->bits_mode = d.bits_mode;
    const int x0 = cx * 32, y0 = cy * 32;
    enc_mc_area(f, x0, y0, 32, 32, d.mv4, 8, 7);
    for (int q = 0; q < 4; q++) {
        const int qx = x0 + (q & 1) * 16, qy = y0 + (q >> 1) * 16;
        if (f->energy)
            f->energy[(qy / 16) * f->mb_w + qx / 16] =
                enc_ssd(f->src[0] + (ptrdiff_t)qy * f->ss[0] + qx, f->ss[0],
                        f->rec[0] + (ptrdiff_t)qy * f->cs[0] + qx, f->cs[0], 16, 16);
    }
    if (f->mv4)
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < 8; i++)
                f->mv4[(ptrdiff_t)(cy * 8 + j) * (f->W / 4) + cx * 8 + i] = d.mv4[8 * j + i];
    if (d.cu32) {
        st->parts[VIDK_ENC_PART_32x32]++;
        ENC_T(hevc_tbs)(ops, f, x0, y0, 32, 5, 4, st);
        return;
    }
    for (int q = 0; q < 4; q++) {
        const int qx = x0 + (q & 1) * 16, qy = y0 + (q >> 1) * 16, m = d.cu16[q];
        st->parts[VIDK_ENC_PART_16x16 + m]++;
        if (m == 0) {
            ENC_T(hevc_tbs)(ops, f, qx, qy, 16, 4, 3, st);
        } else if (m < 3) {
            ENC_T(hevc_tbs)(ops, f, qx, qy, 16, 3, 2, st);
        } else {
            for (int k = 0; k < 4; k++) {
                const int ax = qx + (k & 1) * 8, ay = qy + (k >> 1) * 8;
                ENC_T(hevc_tbs)(ops, f, ax, ay, 8, d.cu8[4 * q + k] ? 2 : 3, 2, st);
            }
        }
    }
}

/* Intra CTU (I frame): four 16x16 CUs in z order, each predicted from reconstructed
 * neighbours with the best of planar / DC / H / V (luma SAD); chroma uses the same mode. */
ENC_FN void ENC_T(hevc_i_ctu)(const EncOps *ops, const EncFrame *f, int cx, int cy) {
    EncUnitStat *st = &f->stat[cy * f->uw + cx];
    *st = enc_stat_zero();
    uint8_t line[129], pr[256], best[256];
    for (int q = 0; q < 4; q++) {
        const int xc = cx * 32 + (q & 1) * 16, yc = cy * 32 + (q >> 1) * 16;
        const uint8_t *src = f->src[0] + (ptrdiff_t)yc * f->ss[0] + xc;
        uint8_t *rec = f->rec[0] + (ptrdiff_t)yc * f->cs[0] + xc;
        uint32_t bsad = 0xffffffffu;
        int bm = 0;
        enc_hevc_refs(f, 0, xc, yc, 16, xc, yc, line);
        for (int k = 0; k < 4; k++) {
            enc_hevc_pred(line, 16, 4, enc_hevc_modes[k], 1, pr);
            const uint32_t s = enc_sad(src, f->ss[0], pr, 16, 16, 16);
            if (s < bsad) {
                bsad = s, bm = enc_hevc_modes[k];
                for (int i = 0; i < 256; i++)
                    best[i] = pr[i];
            }
        }
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++)
                rec[y * f->cs[0] + x] = best[y * 16 + x];
        if (f->energy)
            f->energy[(yc / 16) * f->mb_w + xc / 16] = enc_ssd(src, f->ss[0], best, 16, 16, 16);
        if (f->mv4)
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    VidkMv zero = {0, 0};
                    f->mv4[(ptrdiff_t)(yc / 4 + j) * (f->W / 4) + xc / 4 + i] = zero;
                }
        ENC_T(hevc_tb)(ops, f, 0, xc, yc, 4, st);
        for (int p = 1; p < 3; p++) {
            uint8_t *r = f->rec[p] + (ptrdiff_t)(yc / 2) * f->cs[p] + xc / 2;
            enc_hevc_refs(f, p, xc / 2, yc / 2, 8, xc, yc, line);
            enc_hevc_pred(line, 8, 3, bm, 0, pr);
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++)
                    r[y * f->cs[p] + x] = pr[y * 8 + x];
            ENC_T(hevc_tb)(ops, f, p, xc / 2, yc / 2, 3, st);
        }
        st->parts[VIDK_ENC_PART_INTRA]++;
        st->bits_mode += 5;
    }
}
