/* The coding loop's H.264 decision (docs/ENCODE.md §3, §4, §7): the candidates and their costs
 * (SATD, the transform measures, mvd bits), the intra estimates, the P frames' decision passes.
 * A part of enc_core.h, which includes it at its end (include enc_core.h, not this file). */
#ifndef VIDK_ENC_CORE_H264_H
#define VIDK_ENC_CORE_H264_H

/* ------------------------------------------------------------------ H.264 decision */

/* Mode bits: ue(mb_type) of P_L0_16x16, P_L0_L0_16x8, P_L0_L0_8x16, P_8x8; ue(sub_mb_type)
 * of 8x8, 8x4, 4x8, 4x4 (9.1, Tables 7-13 and 7-17). */
ENC_TAB uint8_t enc_h264_mb_bits[4] = {1, 3, 3, 5};
ENC_TAB uint8_t enc_h264_sub_bits[4] = {1, 3, 3, 5};

ENC_FN VidkMeResult enc_me_at(const EncFrame *f, int bs, int bx, int by) {
    return f->me[bs][(ptrdiff_t)by * f->me_gw[bs] + bx];
}

/* Partition p of a macroblock (VIDK_ME_PART_* numbering, raster order within its shape):
 * its shape, its block in that shape's grid of the frame and its size. */
typedef struct EncPart {
    int bs, bx, by, w, h;
} EncPart;

ENC_FN EncPart enc_h264_part(int mbx, int mby, int p) {
    EncPart r;
    if (p < VIDK_ME_PART_8x4) {
        r.bs = VIDK_BLOCK_4x4, r.w = 4, r.h = 4;
        r.bx = 4 * mbx + (p & 3), r.by = 4 * mby + (p >> 2);
    } else if (p < VIDK_ME_PART_4x8) {
        const int k = p - VIDK_ME_PART_8x4;
        r.bs = VIDK_BLOCK_8x4, r.w = 8, r.h = 4;
        r.bx = 2 * mbx + (k & 1), r.by = 4 * mby + (k >> 1);
    } else if (p < VIDK_ME_PART_8x8) {
        const int k = p - VIDK_ME_PART_4x8;
        r.bs = VIDK_BLOCK_4x8, r.w = 4, r.h = 8;
        r.bx = 4 * mbx + (k & 3), r.by = 2 * mby + (k >> 2);
    } else if (p < VIDK_ME_PART_16x8) {
        const int k = p - VIDK_ME_PART_8x8;
        r.bs = VIDK_BLOCK_8x8, r.w = 8, r.h = 8;
        r.bx = 2 * mbx + (k & 1), r.by = 2 * mby + (k >> 1);
    } else if (p < VIDK_ME_PART_8x16) {
        r.bs = VIDK_BLOCK_16x8, r.w = 16, r.h = 8;
        r.bx = mbx, r.by = 2 * mby + (p - VIDK_ME_PART_16x8);
    } else if (p < VIDK_ME_PART_16x16) {
        r.bs = VIDK_BLOCK_8x16, r.w = 8, r.h = 16;
        r.bx = 2 * mbx + (p - VIDK_ME_PART_8x16), r.by = mby;
    } else {
        r.bs = VIDK_BLOCK_16x16, r.w = 16, r.h = 16, r.bx = mbx, r.by = mby;
    }
    return r;
}

/* The 8-point Hadamard transform of d[0], d[st], .., d[7 st] in place (unnormalised): three
 * butterfly stages. */
ENC_FN void enc_had8_1d(int *d, int st) {
    for (int h = 1; h < 8; h <<= 1)
        for (int k = 0; k < 8; k++)
            if (!(k & h)) {
                const int u = d[st * k], v = d[st * (k + h)];
                d[st * k] = u + v, d[st * (k + h)] = u - v;
            }
}

/* The transform-size measures of one 8x8 quadrant of an inter macroblock's luma residual
 * (src against the prediction pr, strides ss / ps): *s4 = the sum of its four vidk_satd4,
 * *s8 = the sum of the magnitudes of its 8x8 Hadamard transform (unscaled). */
ENC_FN void enc_h264_tx_measure(const uint8_t *src, int ss, const uint8_t *pr, int ps,
                                uint32_t *s4, uint32_t *s8) {
    int d[64];
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 8; i++)
            d[8 * j + i] = src[j * ss + i] - pr[j * ps + i];
    uint32_t a = 0;
    for (int b = 0; b < 4; b++) {
        int t[16];
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                t[4 * j + i] = d[8 * (4 * (b >> 1) + j) + 4 * (b & 1) + i];
        a += vidk_satd4(t);
    }
    *s4 = a;
    for (int l = 0; l < 8; l++) /* rows, then columns */
        enc_had8_1d(d + 8 * l, 1);
    for (int l = 0; l < 8; l++)
        enc_had8_1d(d + l, 8);
    uint32_t e = 0;
    for (int k = 0; k < 64; k++)
        e += (uint32_t)vidk_iabs(d[k]);
    *s8 = e;
}

/* The transform size of an inter macroblock where the 8x8 one is allowed (docs/ENCODE.md
 * §4), from its quadrants' enc_h264_tx_measure sums: 8x8 when the SA8D, (s8 + 2) >> 2, is
 * below the SATD s4 (the two agree on white noise; the 8x8 transform wins smooth
 * residuals); the 4x4 on ties. */
ENC_FN int enc_h264_tx8_wins(uint32_t s4, uint32_t s8) {
    return (s8 + 2u) >> 2 < s4;
}

/* SATD of a w x h luma block at (x, y) against the reference moved by v (quarter samples,
 * enc_luma_q): vidk_satd4 per 4x4 block, w <= 16. A strip of four rows at a time: its
 * differences are gathered first (on the GPU: the strip's loads in flight together), then
 * its blocks' transforms. */
ENC_FN uint32_t enc_h264_satd_at(const EncFrame *f, int x, int y, int w, int h, VidkMv v) {
    uint32_t s = 0;
#ifndef __CUDA_ARCH__ /* the host: from the two sources' rows where no sample is clamped */
    EncQRows r;
    if (enc_qrows(f, x, y, w, h, v, &r)) {
        const uint8_t *src = f->src[0] + (ptrdiff_t)y * f->ss[0] + x;
        return f->satd_avg ? f->satd_avg(src, f->ss[0], r.a, r.b, r.sa, w, h)
                           : vidk_satd_avg_wxh(src, f->ss[0], r.a, r.b, r.sa, w, h);
    }
    uint8_t pr[256]; /* else the prediction first (enc_mc_luma) */
    enc_mc_luma(f, x, y, w, h, v, pr, 16);
    for (int by = 0; by < h; by += 4)
        for (int bx = 0; bx < w; bx += 4) {
            int d[16];
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++)
                    d[4 * j + i] = f->src[0][(ptrdiff_t)(y + by + j) * f->ss[0] + x + bx + i] -
                                   pr[(by + j) * 16 + bx + i];
            s += vidk_satd4(d);
        }
#else
    EncQRows qr;
    const int rows = enc_qrows(f, x, y, w, h, v, &qr);
    for (int by = 0; by < h; by += 4) {
        int d[4][16]; /* the strip's 4x4 blocks, left to right */
        ENC_UNROLL
        for (int j = 0; j < 4; j++) {
            const int yy = y + by + j;
            const uint8_t *c = f->src[0] + (ptrdiff_t)yy * f->ss[0] + x;
            ENC_UNROLL
            for (int i = 0; i < w; i++)
                d[i >> 2][4 * j + (i & 3)] =
                    c[i] - (rows ? enc_qrows_at(&qr, i, by + j) : enc_luma_q(f, x + i, yy, v));
        }
        ENC_UNROLL
        for (int b = 0; b < w / 4; b++)
            s += vidk_satd4(d[b]);
    }
#endif
    return s;
}

/* SATD of a 16x16 block against a prediction (stride 16), a strip of four rows at a time as
 * enc_h264_satd_at. */
ENC_FN uint32_t enc_satd16(const uint8_t *a, int as, const uint8_t *pr) {
    uint32_t s = 0;
    for (int by = 0; by < 16; by += 4) {
        int d[4][16];
        ENC_UNROLL
        for (int j = 0; j < 4; j++) {
            ENC_UNROLL
            for (int i = 0; i < 16; i++)
                d[i >> 2][4 * j + (i & 3)] = a[(by + j) * as + i] - pr[(by + j) * 16 + i];
        }
        ENC_UNROLL
        for (int b = 0; b < 4; b++)
            s += vidk_satd4(d[b]);
    }
    return s;
}

/* The bias (bits) of the Intra_16x16 candidate in P frames: its cost is estimated from the
 * source's neighbours, which predict better than the reconstruction the macroblock is then
 * coded from, and leaves out its residual, which Intra_16x16 codes with the intra rounding and
 * no decimation. Measured (docs/PERFORMANCE.md): 0 made akiyo's BD-rate +28%, 32 +3.7%, 48
 * gave the best mean of the real clips. */
#define ENC_H264_INTRA_P_BIAS 48u

/* The bias (bits) of an I_NxN candidate (Intra_4x4, Intra_8x8) against Intra_16x16: what its
 * cost leaves out (mb_type and coded_block_pattern apart, the blocks' levels with their DC
 * against one DC block). Measured (BD-rate PSNR-Y against x264 veryfast, the four small
 * clips, CAVLC, threads): 0 +18.22%, 12 +18.21%, 24 +18.29%, 48 +18.49%: flat; 24 kept. */
#define ENC_H264_NXN_BIAS 24u

/* The H.264 decision's rate term (docs/ENCODE.md §4): 1.5 lambda x bits, (3 lambda bits) >> 1
 * (SATD distortions weigh more than the SAD lambda assumes; measured, session 27: 1 lambda
 * +25.30%, 1.5 +24.39%, 2 +25.20% BD-rate against x264 veryfast on the four small clips). */
ENC_FN uint32_t enc_h264_lbits(const EncFrame *f, unsigned bits) {
    return 3u * (uint32_t)f->lambda * bits >> 1;
}

/* I_NxN (docs/ENCODE.md §7), the pieces the CPU backends (enc_tmpl.h h264_inxn_try) and the
 * device (src/cuda/enc_warp.cuh w_h264_inxn_block, the warp by sample and by block) share.
 * Block k in decoding order (luma4x4BlkIdx / luma8x8BlkIdx) of a macroblock: its place (bx, by)
 * in N units. */
ENC_FN void enc_h264_inxn_blk(int N, int k, int *bx, int *by) {
    *bx = N == 8 ? k & 1 : (k & 1) | ((k >> 1) & 2);
    *by = N == 8 ? k >> 1 : ((k >> 1) & 1) | ((k >> 2) & 2);
}

/* The mode bits of mode m against the predicted mode pm (prev_intra*_pred_mode_flag, and
 * rem_intra*_pred_mode when m is not pm). */
ENC_FN unsigned enc_h264_inxn_mbits(int m, int pm) {
    return m == pm ? 1u : 4u;
}

/* The SATD of 4x4 block b4 (raster) of src - pr (N x N, stride N). */
ENC_FN uint32_t enc_h264_inxn_satd(const uint8_t *src, int ss, const uint8_t *pr, int N,
                                   int b4) {
    const int ox = 4 * (b4 & 1), oy = 4 * (b4 >> 1);
    int d[16];
    for (int i = 0; i < 16; i++)
        d[i] =
            src[(oy + (i >> 2)) * ss + ox + (i & 3)] - pr[(oy + (i >> 2)) * N + ox + (i & 3)];
    return vidk_satd4(d);
}

/* The cost of available mode m for the N x N block at src (stride ss) with neighbours nb and
 * predicted mode pm: the SATD of its 4x4 blocks + lambda x (1 bit when m is pm, else 4); the
 * prediction into pr (stride N). */
ENC_FN uint32_t enc_h264_inxn_cost(const EncFrame *f, const EncNbN *nb, int m, int pm,
                                   const uint8_t *src, int ss, uint8_t *pr) {
    const int N = nb->n;
    enc_h264_predn(nb, m, pr);
    uint32_t c = enc_h264_lbits(f, enc_h264_inxn_mbits(m, pm));
    for (int b4 = 0; b4 < N * N / 16; b4++)
        c += enc_h264_inxn_satd(src, ss, pr, N, b4);
    return c;
}

/* Mode m of the N x N block at (x4, y4) (4x4 units) into f->im4 (an 8x8 block's into its four
 * entries). */
ENC_FN void enc_h264_im4_set(const EncFrame *f, int x4, int y4, int N, int m) {
    for (int j = 0; j < N / 4; j++)
        for (int i = 0; i < N / 4; i++)
            f->im4[(ptrdiff_t)(y4 + j) * (f->W / 4) + x4 + i] = (uint8_t)m;
}

/* The Intra_16x16 candidate of a P-frame macroblock (docs/ENCODE.md §4), estimated from the
 * source's neighbours, for mode m: SATD + lambda x (ue(6 + m): mb_type 6 + m in a P slice
 * without residual, + 1 for intra_chroma_pred_mode DC + ENC_H264_INTRA_P_BIAS), as
 * cost << 2 | m; 0xffffffff when the mode's neighbours are missing. The estimate is the
 * lowest of the four (the first on ties: the lowest packed value). */
ENC_FN uint32_t enc_h264_intra_est(const EncFrame *f, int mbx, int mby, int m) {
    EncNb nb;
    uint8_t pr[256];
    enc_h264_nb_of(f, f->src[0], f->ss[0], 0, 16 * mbx, 16 * mby, 16, &nb);
    if (!enc_h264_pred16(&nb, m, pr)) return 0xffffffffu;
    const uint8_t *src = f->src[0] + (ptrdiff_t)(16 * mby) * f->ss[0] + 16 * mbx;
    const uint32_t c =
        enc_satd16(src, f->ss[0], pr) +
        enc_h264_lbits(f, vidk_ue_bits(6u + (unsigned)m) + 1u + ENC_H264_INTRA_P_BIAS);
    return c << 2 | (uint32_t)m;
}

/* The I_NxN candidates (Intra_4x4, Intra_8x8) of an inter frame's macroblock, estimated as
 * the Intra_16x16 one (docs/ENCODE.md §4): each N x N block predicted from the source's
 * samples around it with the availability of the standard (enc_h264_nbn_avail), its mode the
 * first lowest SATD + lambda x mode bits, the predicted mode from the estimate's own earlier
 * blocks, 2 (DC) across the macroblock's edge (what an inter neighbour gives). The source
 * predicts a block's samples better than the reconstruction will, and more so the smaller
 * the block, so the summed cost is weighed by 5/4 before ENC_H264_INTRA_P_NXN_BIAS bits are
 * added (5/4 and 24 bits chosen on basketballpass with the threads backend against x264
 * veryfast, better than 1/1 with fixed and with adaptive B-frames; the effect at 1080p on
 * the GPU: docs/PERFORMANCE.md session 43). */
#define ENC_H264_INTRA_P_NXN_BIAS 24u

/* The SATDs s[m] of N x N block (bx, by) of the macroblock (its 4x4 blocks' summed) against
 * each mode m's prediction from the source; 0xffffffff where m's neighbours are missing. */
ENC_FN void enc_h264_nxn_est_satd(const EncFrame *f, int mbx, int mby, int N, int bx, int by,
                                  uint32_t s[9]) {
    const int ss = f->ss[0];
    int a, b, c;
    enc_h264_nbn_avail(f, mbx, mby, N, bx, by, &a, &b, &c);
    const uint8_t *src = f->src[0] + (ptrdiff_t)(16 * mby + N * by) * ss + 16 * mbx + N * bx;
    EncNbN nb;
    uint8_t pr[64];
    enc_h264_nbn_at(src, ss, N, a, b, c, &nb);
    for (int m = 0; m < 9; m++) {
        s[m] = 0xffffffffu;
        if (!enc_h264_inxn_ok(&nb, m)) continue;
        enc_h264_predn(&nb, m, pr);
        s[m] = 0;
        for (int b4 = 0; b4 < (N == 8 ? 4 : 1); b4++)
            s[m] += enc_h264_inxn_satd(src, ss, pr, N, b4);
    }
}

/* A block's mode in the estimate: the first lowest s[m] + lambda x mode bits against pm
 * among the available modes (DC always is); its cost into *cost. */
ENC_FN int enc_h264_nxn_est_mode(const EncFrame *f, const uint32_t s[9], int pm,
                                 uint32_t *cost) {
    uint32_t bc = 0xffffffffu;
    int bm = 2;
    for (int m = 0; m < 9; m++) {
        if (s[m] == 0xffffffffu) continue;
        const uint32_t c = s[m] + enc_h264_lbits(f, enc_h264_inxn_mbits(m, pm));
        if (c < bc) bc = c, bm = m;
    }
    *cost = bc;
    return bm;
}

/* The candidate's estimate from its blocks' summed costs, packed as enc_h264_intra_est's
 * (mode bits 2: the word's Intra_16x16 mode is chosen again when the macroblock is coded). */
ENC_FN uint32_t enc_h264_nxn_est_pack(const EncFrame *f, uint32_t c) {
    const uint32_t v = c + (c >> 2) + enc_h264_lbits(f, 5u + 1u + ENC_H264_INTRA_P_NXN_BIAS);
    return v << 2 | 2u;
}

/* The I_NxN estimate (N = 4, 8) of macroblock (mbx, mby), packed: its blocks in decoding
 * order (the device's lanes: src/cuda/enc_warp.cuh lane_nxn_est). */
ENC_FN uint32_t enc_h264_nxn_est(const EncFrame *f, int mbx, int mby, int N) {
    uint32_t c = 0;
    uint8_t md[16]; /* the blocks' modes, a 4x4 block each (raster) */
    for (int k = 0; k < 256 / (N * N); k++) {
        int bx, by;
        enc_h264_inxn_blk(N, k, &bx, &by);
        const int q = 4 * (N / 4) * by + (N / 4) * bx; /* its top-left 4x4 block */
        uint32_t s[9], bc;
        enc_h264_nxn_est_satd(f, mbx, mby, N, bx, by, s);
        const int ma = q & 3 ? md[q - 1] : 2, mb = q >> 2 ? md[q - 4] : 2;
        const int bm = enc_h264_nxn_est_mode(f, s, ma < mb ? ma : mb, &bc);
        c += bc;
        for (int j = 0; j < N / 4; j++)
            for (int i = 0; i < N / 4; i++)
                md[q + 4 * j + i] = (uint8_t)bm;
    }
    return enc_h264_nxn_est_pack(f, c);
}

/* The intra estimate of an inter frame's macroblock (f->dist's ENC_H264_DIST_INTRA): the
 * lowest of Intra_16x16's modes and, where the frame may use them, the I_NxN estimates. */
ENC_FN uint32_t enc_h264_intra_est_mb(const EncFrame *f, int mbx, int mby) {
    uint32_t v = 0xffffffffu;
    for (int m = 0; m < 4; m++) {
        const uint32_t e = enc_h264_intra_est(f, mbx, mby, m);
        if (e < v) v = e;
    }
    if (f->i4x4) {
        const uint32_t e = enc_h264_nxn_est(f, mbx, mby, 4);
        if (e < v) v = e;
    }
    if (f->i8x8) {
        const uint32_t e = enc_h264_nxn_est(f, mbx, mby, 8);
        if (e < v) v = e;
    }
    return v;
}

/* The quarter-sample refinement (docs/ENCODE.md §3): the cost of vector v for a block whose
 * SATD at v is sd: sd + 2 lambda x the CAVLC length of v's mvd against (0, 0). */
ENC_FN uint32_t enc_h264_sub_cost(const EncFrame *f, uint32_t sd, VidkMv v) {
    return sd + 2u * (uint32_t)f->lambda * (vidk_se_bits(v.x) + vidk_se_bits(v.y));
}

/* The eight neighbours of a position (raster order around it) at distance `step`. */
ENC_FN VidkMv enc_sub_nb(VidkMv c, int k, int step) {
    const int i = k + (k >= 4); /* 0..8 without the centre */
    VidkMv v = {(int16_t)(c.x + step * (i % 3 - 1)), (int16_t)(c.y + step * (i / 3 - 1))};
    return v;
}

/* Partition at (x, y), w x h, with the search's whole-sample vector mv: refined to half, then
 * quarter samples, each step the first lowest enc_h264_sub_cost of the centre and its eight
 * neighbours (the centre first, then raster order). Returns the refined vector's SATD. */
ENC_FN uint32_t enc_h264_refine(const EncFrame *f, int x, int y, int w, int h, VidkMv *mv) {
    VidkMv c = {(int16_t)(4 * mv->x), (int16_t)(4 * mv->y)};
    uint32_t sd = enc_h264_satd_at(f, x, y, w, h, c), best = enc_h264_sub_cost(f, sd, c);
    for (int step = 2; step >= 1; step >>= 1) {
        const VidkMv o = c;
        for (int k = 0; k < 8; k++) {
            const VidkMv v = enc_sub_nb(o, k, step);
            const uint32_t s = enc_h264_satd_at(f, x, y, w, h, v);
            const uint32_t cost = enc_h264_sub_cost(f, s, v);
            if (cost < best) best = cost, sd = s, c = v;
        }
    }
    *mv = c;
    return sd;
}

/* The refined vector of partition p (VIDK_ME_PART_*) of macroblock u (EncFrame.part_mv). */
ENC_FN VidkMv *enc_h264_pmv(const EncFrame *f, int u, int p) {
    return f->part_mv + (ptrdiff_t)p * f->uw * f->uh + u;
}

/* What the decision passes read per macroblock (f->dist, ENC_H264_DIST_N each), computed
 * once per frame before them: entry p < 41, the SATD of partition p (VIDK_ME_PART_*) at its
 * refined vector (enc_h264_part_dist, which keeps the vector in f->part_mv; 0 for the sub-8x8
 * shapes when the frame does not use them); entry 41, the Intra_16x16 estimate
 * (the lowest enc_h264_intra_est). */
#define ENC_H264_DIST_INTRA 41
#define ENC_H264_DIST_N     42
ENC_FN uint32_t enc_h264_part_dist(const EncFrame *f, int mbx, int mby, int p) {
    VidkMv *pm = enc_h264_pmv(f, mby * f->uw + mbx, p);
    if (f->no_sub8x8 && p < VIDK_ME_PART_8x8) {
        /* never read (the decision skips these shapes, which the search did not run): a
         * vector of its own per partition, so that a decision reading them would split the
         * 8x8 quadrants (tests/test_enc_decide.c's level check, mutation level_no_sub8x8) */
        pm->x = (int16_t)p, pm->y = (int16_t)-p;
        return 0;
    }
    const EncPart q = enc_h264_part(mbx, mby, p);
    *pm = enc_me_at(f, q.bs, q.bx, q.by).mv;
    return enc_h264_refine(f, q.bx * q.w, q.by * q.h, q.w, q.h, pm);
}

/* The searched vector of 4x4 block (i, j) of macroblock (mbx, mby) under partition mode
 * `mode` (0 16x16, 1 16x8, 2 8x16, 3 P_8x8 with sub-macroblock type `sub` for the block's
 * quadrant: 0 8x8, 1 8x4, 2 4x8, 3 4x4), and the index of its partition (VIDK_ME_PART_*). */
ENC_CFN int enc_h264_cand_part(int mode, int sub, int i, int j) {
    if (mode == 0) return VIDK_ME_PART_16x16;
    if (mode == 1) return VIDK_ME_PART_16x8 + (j >> 1);
    if (mode == 2) return VIDK_ME_PART_8x16 + (i >> 1);
    if (sub == 0) return VIDK_ME_PART_8x8 + 2 * (j >> 1) + (i >> 1);
    if (sub == 1) return VIDK_ME_PART_8x4 + 2 * j + (i >> 1);
    if (sub == 2) return VIDK_ME_PART_4x8 + 4 * (j >> 1) + i;
    return VIDK_ME_PART_4x4 + 4 * j + i;
}

ENC_FN VidkMv enc_h264_cand_mv(const EncFrame *f, int mbx, int mby, int mode, int sub, int i,
                               int j) {
    return *enc_h264_pmv(f, mby * f->uw + mbx, enc_h264_cand_part(mode, sub, i, j));
}

/* The distortion of quadrant q (raster) under sub-macroblock type s: its partitions' dist. */
ENC_FN uint32_t enc_h264_sub_dist(const uint32_t *dist, int q, int s) {
    const int qi = q & 1, qj = q >> 1;
    if (s == 0) return dist[VIDK_ME_PART_8x8 + q];
    if (s == 1)
        return dist[VIDK_ME_PART_8x4 + 4 * qj + qi] + dist[VIDK_ME_PART_8x4 + 4 * qj + 2 + qi];
    if (s == 2)
        return dist[VIDK_ME_PART_4x8 + 4 * qj + 2 * qi] +
               dist[VIDK_ME_PART_4x8 + 4 * qj + 2 * qi + 1];
    uint32_t c = 0;
    for (int k = 0; k < 4; k++)
        c += dist[VIDK_ME_PART_4x4 + 4 * (2 * qj + (k >> 1)) + 2 * qi + (k & 1)];
    return c;
}

/* CAVLC bits of the mvds of the partitions of (mode, sub) with the vectors in n->in against
 * the standard's predictors (8.4.1.3). */
ENC_FN unsigned enc_h264_mvd_bits(const VidkH264MvNb *n, int mode, const int *sub) {
    int px[16], py[16], pw[16], pd[16];
    int8_t order[16];
    const int np = vidk_h264_parts(mode, sub, px, py, pw, pd, order);
    unsigned b = 0;
    for (int k = 0; k < np; k++)
        b += enc_mvd_bits(n->in[4 * py[k] + px[k]],
                          vidk_h264_mvp(n, px[k], py[k], pw[k], pd[k], order, k));
    return b;
}

/* The same for the partitions of P_8x8 quadrant q alone, under sub-macroblock type s: the
 * quadrant's terms of enc_h264_mvd_bits(n, 3, sub) with sub[q] = s, whatever the other
 * quadrants' types (the earlier quadrants precede it in decoding order, the later ones
 * follow it), without laying out the whole macroblock (vidk_h264_parts) per candidate. */
ENC_FN unsigned enc_h264_mvd_bits_quad(const VidkH264MvNb *n, int q, int s) {
    const int qx = 2 * (q & 1), qy = 2 * (q >> 1), np = s == 0 ? 1 : s == 3 ? 4 : 2;
    int8_t order[16]; /* the quadrant's own partitions by index; -1 before it, 16 after */
    for (int b = 0; b < 16; b++) {
        const int x = b & 3, y = b >> 2, bq = (y >> 1) * 2 + (x >> 1);
        const int k = s == 0 ? 0 : s == 1 ? (y & 1) : s == 2 ? (x & 1) : 2 * (y & 1) + (x & 1);
        order[b] = (int8_t)(bq < q ? -1 : bq > q ? 16 : k);
    }
    unsigned bits = 0;
    for (int k = 0; k < np; k++) {
        const int x = qx + (s >= 2 ? (k & 1) : 0), y = qy + (s == 1 ? k : s == 3 ? k >> 1 : 0);
        bits +=
            enc_mvd_bits(n->in[4 * y + x], vidk_h264_mvp(n, x, y, s < 2 ? 2 : 1, 0, order, k));
    }
    return bits;
}

/* The decision's candidates (enc_h264_decide), each costed against the neighbourhood n with
 * its vectors left in n->in: SATD of its partitions at the search's best vectors (f->dist) +
 * lambda x the CAVLC bits of its mb_type, sub_mb_types and mvds against the standard's
 * predictors. */

/* Partition mode m (0 16x16, 1 16x8, 2 8x16). */
ENC_FN uint32_t enc_h264_cost_mode(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                   int m) {
    const uint32_t *dist = f->dist + ENC_H264_DIST_N * (ptrdiff_t)(mby * f->uw + mbx);
    const int zero4[4] = {0, 0, 0, 0};
    /* the first and the last partition's vectors (the same one for 16x16), each read once */
    const VidkMv a = enc_h264_cand_mv(f, mbx, mby, m, 0, 0, 0),
                 b = m ? enc_h264_cand_mv(f, mbx, mby, m, 0, 3, 3) : a;
    for (int k = 0; k < 16; k++)
        n->in[k] = (m == 1 ? k >> 3 : m == 2 ? (k & 3) >> 1 : 0) ? b : a;
    const uint32_t c = m == 0   ? dist[VIDK_ME_PART_16x16]
                       : m == 1 ? dist[VIDK_ME_PART_16x8] + dist[VIDK_ME_PART_16x8 + 1]
                                : dist[VIDK_ME_PART_8x16] + dist[VIDK_ME_PART_8x16 + 1];
    return c + enc_h264_lbits(f, enc_h264_mb_bits[m] + enc_h264_mvd_bits(n, m, zero4));
}

/* P_8x8: quadrant q's vectors under sub-macroblock type s into n->in (its 4x4 blocks k in
 * raster order; each partition's vector read once: 8x8 one, 8x4 the top and bottom, 4x8 the
 * left and right, 4x4 four). */
ENC_FN void enc_h264_set_quad(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n, int q,
                              int s) {
    const int i = 2 * (q & 1), j = 2 * (q >> 1);
    const VidkMv v0 = enc_h264_cand_mv(f, mbx, mby, 3, s, i, j);
    const VidkMv v1 = s & 2 ? enc_h264_cand_mv(f, mbx, mby, 3, s, i + 1, j) : v0;
    const VidkMv v2 = s & 1 ? enc_h264_cand_mv(f, mbx, mby, 3, s, i, j + 1) : v0;
    const VidkMv v3 = s == 3   ? enc_h264_cand_mv(f, mbx, mby, 3, s, i + 1, j + 1)
                      : s == 1 ? v2
                               : v1;
    n->in[4 * j + i] = v0, n->in[4 * j + i + 1] = v1;
    n->in[4 * j + 4 + i] = v2, n->in[4 * j + 4 + i + 1] = v3;
}

/* P_8x8: quadrant q under sub-macroblock type sub[q] (the earlier quadrants' types and
 * vectors in sub and n->in). */
ENC_FN uint32_t enc_h264_cost_quad(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                   const int *sub, int q) {
    const uint32_t *dist = f->dist + ENC_H264_DIST_N * (ptrdiff_t)(mby * f->uw + mbx);
    enc_h264_set_quad(f, mbx, mby, n, q, sub[q]);
    return enc_h264_sub_dist(dist, q, sub[q]) +
           enc_h264_lbits(f, enc_h264_sub_bits[sub[q]] + enc_h264_mvd_bits_quad(n, q, sub[q]));
}

/* The P_Skip candidate's SATD (16x16 at the P_Skip vector sv) is kept in f->skipc from one
 * decision pass to the next while sv stays: the kept value into *satd when it is sv's. */
ENC_FN uint32_t enc_h264_skip_key(VidkMv sv) {
    return (uint32_t)(uint16_t)sv.x | (uint32_t)(uint16_t)sv.y << 16;
}
ENC_FN int enc_h264_skip_kept(const EncFrame *f, int mbx, int mby, VidkMv sv, uint32_t *satd) {
    const uint32_t *sc = f->skipc + 2 * (ptrdiff_t)(mby * f->uw + mbx);
    if (sc[0] != enc_h264_skip_key(sv)) return 0;
    *satd = sc[1]; /* written with the key (none is kept after the seed) */
    return 1;
}
ENC_FN void enc_h264_skip_keep(const EncFrame *f, int mbx, int mby, VidkMv sv, uint32_t satd) {
    uint32_t *sc = f->skipc + 2 * (ptrdiff_t)(mby * f->uw + mbx);
    sc[0] = enc_h264_skip_key(sv), sc[1] = satd;
}

/* 16x16 at the P_Skip vector, whose SATD is satd. */
ENC_FN uint32_t enc_h264_cost_skip(const EncFrame *f, VidkH264MvNb *n, uint32_t satd) {
    const VidkMv sv = vidk_h264_skip_mv(n);
    const int zero4[4] = {0, 0, 0, 0};
    for (int k = 0; k < 16; k++)
        n->in[k] = sv;
    return satd + enc_h264_lbits(f, enc_h264_mb_bits[0] + enc_h264_mvd_bits(n, 0, zero4));
}

/* The decision's candidates: k = 0, 1, 2 the partition modes, 3 P_8x8 (which picks each
 * quadrant's sub-macroblock type in turn, the first lowest, the later quadrants' predictors
 * seeing the earlier choices), 4 P_Skip (skip_satd: its SATD). Each is costed against the
 * neighbourhood n alone (whatever n->in holds before) and leaves its vectors in n->in;
 * *word: its decision word (ENC_MBI_*, no TX8). */
#define ENC_H264_CANDS 5
ENC_FN uint32_t enc_h264_cand(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n, int k,
                              uint32_t skip_satd, unsigned *word) {
    if (k < 3) {
        *word = (unsigned)k;
        return enc_h264_cost_mode(f, mbx, mby, n, k);
    }
    if (k == 4) {
        *word = 0;
        return enc_h264_cost_skip(f, n, skip_satd);
    }
    int sub[4] = {0, 0, 0, 0};
    uint32_t c = enc_h264_lbits(f, enc_h264_mb_bits[3]);
    for (int q = 0; q < 4; q++) {
        uint32_t bq = 0xffffffffu;
        int bs = 0;
        for (int s = 0; s < (f->no_sub8x8 ? 1 : 4); s++) {
            sub[q] = s;
            const uint32_t cq = enc_h264_cost_quad(f, mbx, mby, n, sub, q);
            if (cq < bq) bq = cq, bs = s;
        }
        sub[q] = bs;
        enc_h264_set_quad(f, mbx, mby, n, q, bs);
        c += bq;
    }
    *word = 3u | (unsigned)(sub[0] << 2 | sub[1] << 4 | sub[2] << 6 | sub[3] << 8);
    return c;
}

/* The partition decision of an inter macroblock (docs/ENCODE.md §4) from its candidates'
 * costs c[] (enc_h264_cand): the first lowest of the modes and P_8x8; then P_Skip replaces
 * it when not dearer (with no residual it is coded as P_Skip); then Intra_16x16 (`intra`,
 * f->dist's estimate: cost << 2 | mode) when cheaper than the first. Returns the winner's
 * k, or ENC_H264_CANDS for Intra_16x16 (its vectors zero). */
ENC_FN int enc_h264_pick(const uint32_t *c, uint32_t intra) {
    uint32_t best = c[0];
    int w = 0;
    for (int k = 1; k < 4; k++)
        if (c[k] < best) best = c[k], w = k;
    if (c[4] <= best) w = 4;
    return intra >> 2 < best ? ENC_H264_CANDS : w;
}

/* The decision word of the winner w of enc_h264_pick (word[k]: enc_h264_cand's words). */
ENC_FN unsigned enc_h264_word(int w, const unsigned *word, uint32_t intra) {
    return w == ENC_H264_CANDS ? ENC_MBI_INTRA | (intra & 3u) : word[w];
}

/* The decision against the neighbourhood n (the neighbours' vectors of the previous
 * decision pass): every candidate, then the pick. Leaves the vectors in n->in; returns the
 * decision word. */
ENC_FN unsigned enc_h264_decide(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                uint32_t skip_satd) {
    const uint32_t intra =
        f->dist[ENC_H264_DIST_N * (ptrdiff_t)(mby * f->uw + mbx) + ENC_H264_DIST_INTRA];
    VidkMv v[ENC_H264_CANDS][16];
    uint32_t c[ENC_H264_CANDS];
    unsigned word[ENC_H264_CANDS];
    for (int k = 0; k < ENC_H264_CANDS; k++) {
        c[k] = enc_h264_cand(f, mbx, mby, n, k, skip_satd, &word[k]);
        for (int b = 0; b < 16; b++)
            v[k][b] = n->in[b];
    }
    const int w = enc_h264_pick(c, intra);
    for (int b = 0; b < 16; b++)
        if (w == ENC_H264_CANDS)
            n->in[b].x = n->in[b].y = 0;
        else
            n->in[b] = v[w][b];
    return enc_h264_word(w, word, intra);
}

/* The first row of the slice holding macroblock row mby. */
ENC_FN int enc_h264_row0(const EncFrame *f, int mby) {
    return f->slices > 1 ? vidk_h264s_slice_row0(f->uh, f->slices, mby) : 0;
}

/* Decision pass 0 (docs/ENCODE.md §4): every macroblock 16x16 with its refined vector. */
ENC_FN void enc_h264_seed(const EncFrame *f, int mbx, int mby, VidkMv *mvo, uint16_t *mbo) {
    const VidkMv v = enc_h264_cand_mv(f, mbx, mby, 0, 0, 0, 0);
    for (int k = 0; k < 16; k++)
        mvo[(ptrdiff_t)(mby * 4 + k / 4) * (f->W / 4) + mbx * 4 + k % 4] = v;
    mbo[mby * f->uw + mbx] = 0;
    f->skipc[2 * (ptrdiff_t)(mby * f->uw + mbx)] = 0x80008000u; /* no vector: none kept */
}

/* Decision pass k >= 1: the decision of macroblock (mbx, mby) with the neighbours of pass
 * k - 1 (mvi, mbi) into (mvo, mbo), in two steps: the neighbourhood (and from it the P_Skip
 * vector, whose SATD the caller takes from f->skipc or computes), then the decision. */
ENC_FN void enc_h264_decide_nb(const EncFrame *f, int mbx, int mby, const VidkMv *mvi,
                               const uint16_t *mbi, VidkH264MvNb *n) {
    vidk_h264_mvnb_fill(n, mvi, f->W / 4, mbi, ENC_MBI_INTRA, -1, f->uw, f->uh,
                        enc_h264_row0(f, mby), mbx, mby);
}
ENC_FN void enc_h264_decide_out(const EncFrame *f, int mbx, int mby, VidkH264MvNb *n,
                                uint32_t skip_satd, VidkMv *mvo, uint16_t *mbo) {
    mbo[mby * f->uw + mbx] = (uint16_t)enc_h264_decide(f, mbx, mby, n, skip_satd);
    for (int k = 0; k < 16; k++)
        mvo[(ptrdiff_t)(mby * 4 + k / 4) * (f->W / 4) + mbx * 4 + k % 4] = n->in[k];
}
ENC_FN void enc_h264_decide_pass(const EncFrame *f, int mbx, int mby, const VidkMv *mvi,
                                 const uint16_t *mbi, VidkMv *mvo, uint16_t *mbo) {
    VidkH264MvNb n;
    enc_h264_decide_nb(f, mbx, mby, mvi, mbi, &n);
    const VidkMv sv = vidk_h264_skip_mv(&n);
    uint32_t satd;
    if (!enc_h264_skip_kept(f, mbx, mby, sv, &satd)) {
        satd = enc_h264_satd_at(f, 16 * mbx, 16 * mby, 16, 16, sv);
        enc_h264_skip_keep(f, mbx, mby, sv, satd);
    }
    enc_h264_decide_out(f, mbx, mby, &n, satd, mvo, mbo);
}

#endif
