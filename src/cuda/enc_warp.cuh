// Warp-cooperative HEVC units for the device coding loop (src/cuda/encode.cu): one warp codes
// one CTU. The arithmetic is the families' cores' (src/h264_core.h, src/hevc_core.h: the
// same 1-D stages, quantiser) and enc_core.h's (prediction samples), distributed over the
// lanes: residual, quantisation, dequantisation and reconstruction by sample, the 1-D
// transforms by row / column, prediction by sample. Integer sums (bits, non-zeros, SAD) are
// order-independent, so the result is the scalar path's bit for bit (test_encode --cuda
// compares with the c backend).
#ifndef VIDK_CUDA_ENC_WARP_CUH
#define VIDK_CUDA_ENC_WARP_CUH

#include "enc/enc.h"

namespace vidk_encw {

constexpr unsigned kFull = 0xffffffffu;

// Per-warp scratch in shared memory.
struct WarpScratch {
    int32_t tmp[1024];
    int16_t a[1024];
    int16_t b[1024];
    uint8_t line[132], fl[132];
    uint8_t pr[256];
    EncHevcDec dec;
};

// DCT matrices of sizes 4..32 (row-major), per block.
struct Mats {
    int8_t m[16 + 64 + 256 + 1024];
};
__device__ inline const int8_t *mat_of(const Mats &M, int log2n) {
    return M.m + (log2n == 2 ? 0 : log2n == 3 ? 16 : log2n == 4 ? 80 : 336);
}
__device__ inline void build_mats(Mats &M) {
    for (int i = threadIdx.x; i < 1360; i += blockDim.x) {
        const int log2n = i < 16 ? 2 : i < 80 ? 3 : i < 336 ? 4 : 5;
        const int base = log2n == 2 ? 0 : log2n == 3 ? 16 : log2n == 4 ? 80 : 336;
        const int n = 1 << log2n, k = (i - base) / n, j = (i - base) % n;
        M.m[i] = (int8_t)(k == 0 ? 64 : vidk_hevc_t32_at(k << (5 - log2n), j));
    }
}

__device__ inline unsigned wsum(unsigned v) {
    return __reduce_add_sync(kFull, v);
}

// One TB (enc_tmpl.h hevc_tb), the warp together. st: lane 0's statistics.
__device__ void w_tb(const EncFrame &f, int p, int x, int y, int log2n, EncUnitStat &st,
                     WarpScratch &s, const Mats &M, int lane) {
    const int n = 1 << log2n, len = n * n, c = p ? 1 : 0, ss = f.ss[p], cs = f.cs[p];
    const uint8_t *src = f.src[p] + (ptrdiff_t)y * ss + x;
    uint8_t *rec = f.rec[p] + (ptrdiff_t)y * cs + x;
    const int8_t *m = mat_of(M, log2n);
    for (int i = lane; i < len; i += 32)
        s.a[i] = (int16_t)(src[(i >> log2n) * ss + (i & (n - 1))] -
                           rec[(i >> log2n) * cs + (i & (n - 1))]);
    __syncwarp();
    if (lane < n) // rows
        vidk_hevc_fwd_row(m, log2n, 0, 8, s.a + lane * n, s.tmp + lane * n);
    __syncwarp();
    if (lane < n) // columns
        vidk_hevc_fwd_col(m, log2n, 0, s.tmp + lane, s.b + lane);
    __syncwarp();
    const int32_t scale = f.hq_scale[c], qbits = f.hq_qbits[c][log2n - 2],
                  off = f.hq_off[c][log2n - 2];
    unsigned nz = 0, bits = 0;
    for (int k = lane; k < len; k += 32) {
        const int16_t l = vidk_hevc_quant1(s.b[k], scale, qbits, off);
        s.a[k] = l;
        if (l) {
            nz++;
            bits += vidk_se_bits(l);
        }
        if (f.lev[p])
            f.lev[p][(ptrdiff_t)(y + (k >> log2n)) * f.ls_[p] + x + (k & (n - 1))] = l;
    }
    nz = wsum(nz);
    bits = wsum(bits);
    if (lane == 0) {
        st.bits_level += bits + vidk_ue_bits(nz);
        st.nnz[p] += nz;
    }
    __syncwarp();
    if (!nz) return; // uniform
    const int32_t dsc = f.hd_scale[c];
    const int dsh = f.hd_shift[c][log2n - 2];
    for (int k = lane; k < len; k += 32)
        s.b[k] = vidk_hevc_dequant1(s.a[k], dsc, dsh);
    __syncwarp();
    if (lane < n) // inverse: columns
        vidk_hevc_inv_col(m, log2n, 0, s.b + lane, s.tmp + lane);
    __syncwarp();
    if (lane < n) { // rows and reconstruction, from the row stage's output in registers
        int32_t out[32];
        vidk_hevc_inv1(m, log2n, 0, s.tmp + lane * n, 1, out, 1);
        for (int xx = 0; xx < n; xx++) {
            uint8_t *r = rec + lane * cs + xx;
            *r = enc_pix(*r + vidk_hevc_inv_round(out[xx], 8));
        }
    }
    __syncwarp();
}

// Luma TBs of 2^log2n over a w x w area and the chroma TBs of 2^log2c (enc_tmpl.h hevc_tbs).
__device__ void w_tbs(const EncFrame &f, int x, int y, int w, int log2n, int log2c,
                      EncUnitStat &st, WarpScratch &s, const Mats &M, int lane) {
    const int n = 1 << log2n, nc = 1 << log2c;
    for (int j = 0; j < w; j += n)
        for (int i = 0; i < w; i += n)
            w_tb(f, 0, x + i, y + j, log2n, st, s, M, lane);
    for (int p = 1; p < 3; p++)
        for (int j = 0; j < w / 2; j += nc)
            for (int i = 0; i < w / 2; i += nc)
                w_tb(f, p, x / 2 + i, y / 2 + j, log2c, st, s, M, lane);
}

__device__ uint32_t w_ssd16(const EncFrame &f, int x, int y, int lane) {
    unsigned v = 0;
    for (int i = lane; i < 256; i += 32) {
        const int d = f.src[0][(ptrdiff_t)(y + (i >> 4)) * f.ss[0] + x + (i & 15)] -
                      f.rec[0][(ptrdiff_t)(y + (i >> 4)) * f.cs[0] + x + (i & 15)];
        v += (unsigned)(d * d);
    }
    return wsum(v);
}

// Inter CTU (enc_tmpl.h hevc_p_ctu).
__device__ void w_hevc_p_ctu(const EncFrame &f, int cx, int cy, WarpScratch &s, const Mats &M,
                             int lane) {
    EncUnitStat st = enc_stat_zero();
    if (lane == 0) {
        enc_hevc_decide(&f, cx, cy, &s.dec);
        st.bits_mv =
            enc_mvd_chain(s.dec.pmv, s.dec.np, enc_left_mv(&f, VIDK_BLOCK_32x32, cx, cy));
        st.bits_mode = s.dec.bits_mode;
    }
    __syncwarp();
    const EncHevcDec &d = s.dec;
    const int x0 = cx * 32, y0 = cy * 32;
    for (int b = lane; b < 64; b += 32) { // motion compensation per 4x4 (enc_mc_area)
        const VidkMv mv = d.mv4[b];
        const int lx = x0 + 4 * (b & 7), ly = y0 + 4 * (b >> 3);
        enc_mc_luma(&f, lx, ly, 4, 4, mv, f.rec[0] + (ptrdiff_t)ly * f.cs[0] + lx, f.cs[0]);
        for (int p = 1; p < 3; p++)
            enc_mc_chroma(&f, p, lx >> 1, ly >> 1, 2, 2, mv,
                          f.rec[p] + (ptrdiff_t)(ly >> 1) * f.cs[p] + (lx >> 1), f.cs[p]);
        if (f.mv4) f.mv4[(ptrdiff_t)(cy * 8 + (b >> 3)) * (f.W / 4) + cx * 8 + (b & 7)] = mv;
    }
    __syncwarp();
    if (f.energy)
        for (int q = 0; q < 4; q++) {
            const int qx = x0 + (q & 1) * 16, qy = y0 + (q >> 1) * 16;
            const uint32_t e = w_ssd16(f, qx, qy, lane);
            if (lane == 0) f.energy[(qy / 16) * f.mb_w + qx / 16] = e;
        }
    if (d.cu32) {
        st.parts[VIDK_ENC_PART_32x32]++;
        w_tbs(f, x0, y0, 32, 5, 4, st, s, M, lane);
    } else {
        for (int q = 0; q < 4; q++) {
            const int qx = x0 + (q & 1) * 16, qy = y0 + (q >> 1) * 16, m = d.cu16[q];
            st.parts[VIDK_ENC_PART_16x16 + m]++;
            if (m == 0) {
                w_tbs(f, qx, qy, 16, 4, 3, st, s, M, lane);
            } else if (m < 3) {
                w_tbs(f, qx, qy, 16, 3, 2, st, s, M, lane);
            } else {
                for (int k = 0; k < 4; k++)
                    w_tbs(f, qx + (k & 1) * 8, qy + (k >> 1) * 8, 8, d.cu8[4 * q + k] ? 2 : 3,
                          2, st, s, M, lane);
            }
        }
    }
    if (lane == 0) f.stat[cy * f.uw + cx] = st;
}

// Intra prediction of the best of planar / DC / H / V (luma, by SAD) or of mode `force`
// (chroma: >= 0) into rec at plane (x, y), n x n (n <= 16); returns the mode. Every step by
// entry or sample over the lanes: the reference line (reads of other rows' reconstruction
// through L2: ENC_LDREC), its substitution (enc_hevc_ref_src from the availability ballots),
// the smoothed line of luma planar, the DC sum; the modes' SADs and the prediction.
__device__ int w_intra_pred(const EncFrame &f, int p, int x, int y, int n, int log2n, int xc,
                            int yc, int force, WarpScratch &s, int lane) {
    const int len = 4 * n + 1, luma = p == 0;
    uint32_t mask[3];
    int av[3];
#pragma unroll
    for (int j = 0; j < 3; j++) {
        const int i = lane + 32 * j;
        uint8_t v = 0;
        av[j] = i < len ? enc_hevc_ref_at(&f, p, x, y, n, xc, yc, i, &v) : 1;
        if (i < len) s.line[i] = v;
        mask[j] = __ballot_sync(kFull, i < len && av[j]);
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < 3; j++) { // unavailable entries read only available ones
        const int i = lane + 32 * j;
        if (!av[j]) {
            const int k = enc_hevc_ref_src(mask, len, i);
            s.line[i] = k < 0 ? 128 : s.line[k];
        }
    }
    __syncwarp();
    if (luma && enc_hevc_pred_smooth(n, 0, luma))
        for (int i = lane; i < len; i += 32)
            s.fl[i] = enc_hevc_line_at(s.line, n, 0, luma, i);
    // the DC value of the unsmoothed line (the modes other than planar read that one)
    const int dc =
        (n + (int)wsum(lane < n ? (unsigned)enc_hevc_dc_term(s.line, n, lane) : 0u)) >>
        (log2n + 1);
    __syncwarp();
    const uint8_t *src = f.src[p] + (ptrdiff_t)y * f.ss[p] + x;
    int best = force;
    if (force < 0) {
        uint32_t bsad = 0xffffffffu;
        for (int k = 0; k < 4; k++) {
            const int m = enc_hevc_modes[k];
            const uint8_t *l = enc_hevc_pred_smooth(n, m, luma) ? s.fl : s.line;
            unsigned sad = 0;
            for (int i = lane; i < n * n; i += 32) {
                const int xx = i & (n - 1), yy = i >> log2n;
                sad += (unsigned)vidk_iabs(src[yy * f.ss[p] + xx] -
                                           enc_hevc_pred_at(l, n, log2n, m, luma, dc, xx, yy));
            }
            sad = wsum(sad);
            if (sad < bsad) bsad = sad, best = m;
        }
    }
    const uint8_t *l = enc_hevc_pred_smooth(n, best, luma) ? s.fl : s.line;
    uint8_t *rec = f.rec[p] + (ptrdiff_t)y * f.cs[p] + x;
    for (int i = lane; i < n * n; i += 32) {
        const int xx = i & (n - 1), yy = i >> log2n;
        rec[yy * f.cs[p] + xx] = enc_hevc_pred_at(l, n, log2n, best, luma, dc, xx, yy);
    }
    __syncwarp();
    return best;
}

// Intra CTU (enc_tmpl.h hevc_i_ctu), three warps of a block: warp 0 the luma, warp 1 + p
// chroma plane p. The chroma of a 16x16 CU reads only its plane's samples and the luma's
// mode (the derived mode: intra_chroma_pred_mode 4), so the CUs are coded in five steps with
// a block barrier after each: in step q warp 0 transforms CU q - 1's luma and predicts CU q
// (its mode into shared memory) while the chroma warps code CU q - 1's planes, each plane in
// the CUs' order as the scalar path. The three meet in the statistics after the last step.
struct HevcIScratch {
    WarpScratch w[3];
    int bm[4];
    uint32_t cbits[2], cnz[2];
};
constexpr int kHevcIThreads = 96;
__device__ void w_hevc_i_ctu(const EncFrame &f, int cx, int cy, HevcIScratch &S, const Mats &M,
                             int t) {
    const int w = t >> 5, lane = t & 31;
    EncUnitStat st = enc_stat_zero();
    for (int q = 0; q <= 4; q++) {
        const int xp = cx * 32 + ((q - 1) & 1) * 16, yp = cy * 32 + ((q - 1) >> 1) * 16;
        if (w == 0) {
            if (q > 0) { // CU q - 1's luma transform
                w_tb(f, 0, xp, yp, 4, st, S.w[0], M, lane);
                st.parts[VIDK_ENC_PART_INTRA]++;
                st.bits_mode += 5;
            }
            if (q < 4) { // CU q's luma prediction and mode
                const int xc = cx * 32 + (q & 1) * 16, yc = cy * 32 + (q >> 1) * 16;
                const int bm = w_intra_pred(f, 0, xc, yc, 16, 4, xc, yc, -1, S.w[0], lane);
                if (lane == 0) S.bm[q] = bm;
                if (f.energy) {
                    const uint32_t e = w_ssd16(f, xc, yc, lane);
                    if (lane == 0) f.energy[(yc / 16) * f.mb_w + xc / 16] = e;
                }
                if (f.mv4)
                    for (int i = lane; i < 16; i += 32) {
                        VidkMv zero = {0, 0};
                        f.mv4[(ptrdiff_t)(yc / 4 + (i >> 2)) * (f.W / 4) + xc / 4 + (i & 3)] =
                            zero;
                    }
            }
        } else if (q > 0) { // CU q - 1's plane w
            w_intra_pred(f, w, xp / 2, yp / 2, 8, 3, xp, yp, S.bm[q - 1], S.w[w], lane);
            w_tb(f, w, xp / 2, yp / 2, 3, st, S.w[w], M, lane);
            if (q == 4 && lane == 0) S.cbits[w - 1] = st.bits_level, S.cnz[w - 1] = st.nnz[w];
        }
        __syncthreads();
    }
    if (t == 0) {
        st.bits_level += S.cbits[0] + S.cbits[1];
        st.nnz[1] = S.cnz[0], st.nnz[2] = S.cnz[1];
        f.stat[cy * f.uw + cx] = st;
    }
}

// ---- The intra estimate of an inter frame's macroblock (docs/ENCODE_CUDA.md) ----
//
// enc_h264_nxn_est on a half warp per macroblock (mask: the lanes that run it, the half's or
// the whole warp's), lane k (0..15 in the half) its 4x4 block k (raster). Each lane's SATDs
// against the nine modes (enc_h264_nxn_est_satd's values): the predictions from the values
// they are made of (the row of neighbours from the source, enc_h264_nbn_raw, for 8x8 blocks
// enc_h264_nbn_filt, then enc_h264_inxn_d) and the rules (enc_h264_inxn_rule, a table in
// shared memory), as the intra kernel's (w_h264_i4_try); Intra_4x4: a lane its block's values,
// Intra_8x8: the block's four lanes share them, each its quadrant's SATDs, summed over the
// four. Then the blocks in decoding order, the lanes of each taking its mode
// (enc_h264_nxn_est_mode) with the modes of the lanes left of and above its top-left one; the
// costs summed over the half. The packed estimate on every lane.
constexpr int kEstLanes = 128; // the threads of a block that runs the estimate, at most
struct __align__(16) IntraEstShared {
    uint8_t rule4[9 * 16], rule8[9 * 64];        // enc_h264_inxn_rule: mode-major, raster
    __align__(16) uint8_t d4[kEstLanes][40];     // a lane's 4x4 block's values (39)
    __align__(16) uint8_t e8[kEstLanes / 4][32]; // an 8x8 block's row of neighbours (25)
    __align__(16) uint8_t d8[kEstLanes / 4][80]; // and its values (75)
};

// The rule tables of Intra_4x4 (r4: 9 x 16) and Intra_8x8 (r8: 9 x 64), mode-major, by the
// block's nt threads (t: this one's index); a block barrier must follow.
__device__ inline void w_nxn_rule_fill(uint8_t *r4, uint8_t *r8, int t, int nt) {
    for (int j = t; j < 9 * 16 + 9 * 64; j += nt) {
        const int N = j < 9 * 16 ? 4 : 8, i = N == 4 ? j : j - 9 * 16, len = N * N;
        const int m = i / len, q = i % len;
        (N == 4 ? r4 : r8)[i] = (uint8_t)enc_h264_inxn_rule(N, m, q % N, q / N);
    }
}

__device__ uint32_t lane_nxn_est(const EncFrame &f, IntraEstShared &S, int mbx, int mby, int N,
                                 int k, unsigned mask) {
    const int t = (int)threadIdx.x, base = t & 16, ss = f.ss[0];
    const int x4 = k & 3, y4 = k >> 2, bx = N == 8 ? x4 >> 1 : x4, by = N == 8 ? y4 >> 1 : y4;
    int a, b, c;
    enc_h264_nbn_avail(&f, mbx, mby, N, bx, by, &a, &b, &c);
    const uint8_t *bp = f.src[0] + (ptrdiff_t)(16 * mby + N * by) * ss + 16 * mbx + N * bx;
    const uint8_t *rule;
    const uint8_t *d;
    int ro; // the lane's quadrant's first sample in the block's rules
    if (N == 4) {
        uint8_t *dv = S.d4[t];
        for (int i = 0; i < 13; i++)
            dv[i] = (uint8_t)enc_h264_nbn_raw(bp, ss, 4, a, b, c, i);
        for (int j = 13; j < 39; j++)
            dv[j] = (uint8_t)enc_h264_inxn_d(dv, 4, a, b, j);
        d = dv, rule = S.rule4, ro = 0;
    } else {
        const int r = (x4 & 1) | (y4 & 1) << 1, g = (t >> 4) * 4 + 2 * by + bx;
        uint8_t *e = S.e8[g], *dv = S.d8[g];
        for (int i = r; i < 25; i += 4)
            e[i] = (uint8_t)enc_h264_nbn_raw(bp, ss, 8, a, b, c, i);
        __syncwarp(mask);
        for (int i = r; i < 25; i += 4)
            dv[i] = (uint8_t)enc_h264_nbn_filt(e, a, b, i);
        __syncwarp(mask);
        for (int j = 25 + r; j < 75; j += 4)
            dv[j] = (uint8_t)enc_h264_inxn_d(dv, 8, a, b, j);
        __syncwarp(mask);
        d = dv, rule = S.rule8, ro = 32 * (y4 & 1) + 4 * (x4 & 1);
    }
    // the lane's 16 source samples
    const uint8_t *sp = f.src[0] + (ptrdiff_t)(16 * mby + 4 * y4) * ss + 16 * mbx + 4 * x4;
    uint32_t sw[4];
#pragma unroll
    for (int y = 0; y < 4; y++)
        sw[y] = *reinterpret_cast<const uint32_t *>(sp + (ptrdiff_t)y * ss);
    uint32_t s[9];
#pragma unroll
    for (int m = 0; m < 9; m++) {
        s[m] = 0xffffffffu;
        if (!enc_h264_inxn_avail(m, a, b)) continue;
        const uint8_t *ru = rule + N * N * m + ro;
        int dd[16];
#pragma unroll
        for (int i = 0; i < 16; i++)
            dd[i] = (int)((sw[i >> 2] >> (8 * (i & 3))) & 255) - d[ru[(i >> 2) * N + (i & 3)]];
        s[m] = vidk_satd4(dd);
    }
    if (N == 8)
#pragma unroll
        for (int m = 0; m < 9; m++) {
            uint32_t u = s[m] + __shfl_xor_sync(mask, s[m], 1);
            u += __shfl_xor_sync(mask, u, 4);
            s[m] = s[m] == 0xffffffffu ? s[m] : u;
        }
    int md = 2;
    uint32_t cs = 0;
    for (int j = 0; j < 256 / (N * N); j++) {
        int jx, jy;
        enc_h264_inxn_blk(N, j, &jx, &jy);
        const int q = 4 * (N / 4) * jy + (N / 4) * jx; // its top-left 4x4 block
        const int ma = __shfl_sync(mask, md, base + (q & 3 ? q - 1 : q));
        const int mb = __shfl_sync(mask, md, base + (q >> 2 ? q - 4 : q));
        if (bx == jx && by == jy) {
            const int pa = q & 3 ? ma : 2, pb = q >> 2 ? mb : 2;
            uint32_t bc;
            md = enc_h264_nxn_est_mode(&f, s, pa < pb ? pa : pb, &bc);
            if (k == q) cs += bc;
        }
    }
#pragma unroll
    for (int o = 1; o < 16; o <<= 1)
        cs += __shfl_xor_sync(mask, cs, o);
    return enc_h264_nxn_est_pack(&f, cs);
}

// enc_h264_intra_est_mb on a half warp per macroblock (lane k 0..15; S's rules filled):
// Intra_16x16's modes on lanes 0-3, the I_NxN estimates (lane_nxn_est) where the frame uses
// them; the lowest on every lane.
__device__ uint32_t lane_intra_est(const EncFrame &f, IntraEstShared &S, int mbx, int mby,
                                   int k, unsigned mask) {
    uint32_t v = k < 4 ? enc_h264_intra_est(&f, mbx, mby, k) : 0xffffffffu;
#pragma unroll
    for (int o = 1; o < 16; o <<= 1) {
        const uint32_t w = __shfl_xor_sync(mask, v, o);
        v = w < v ? w : v;
    }
    const uint32_t v4 = f.i4x4 ? lane_nxn_est(f, S, mbx, mby, 4, k, mask) : 0xffffffffu;
    const uint32_t v8 = f.i8x8 ? lane_nxn_est(f, S, mbx, mby, 8, k, mask) : 0xffffffffu;
    v = v4 < v ? v4 : v;
    return v8 < v ? v8 : v;
}

// ---- H.264 intra macroblock (enc_tmpl.h h264_i_mb), two warps ----------------------------
//
// Luma and chroma are coded by two warps of one block at once: the chroma mode is decided on
// the chroma SADs alone and the chroma reconstruction reads only chroma neighbours, so the
// two halves meet only in the statistics (H264Chroma.cx, after a block barrier). Every step
// of a half spread over its 32 lanes with the cores' 1-D pieces in the scalar path's order
// (so the same integers): the modes' SADs by sample; the residual by sample; the 4x4
// transforms by row, then by column (vidk_h264_ftx_2d's order); quantisation by
// coefficient; the DC transforms by row / column (vidk_h264_dc_hadamard's order);
// dequantisation by coefficient, the inverse transforms by row then column
// (vidk_h264_itx_2d's), the reconstruction by sample. Layouts: luma samples, lane = row
// lane >> 1 of the macroblock, columns 8 (lane & 1) .. + 7; luma blocks (raster b of 16),
// lane = half (rows or columns 2 (lane & 1), + 1; coefficients 8 (lane & 1) .. + 7) of
// block lane >> 1; chroma samples, lane = plane lane >> 4, row (lane & 15) >> 1, columns
// 4 (lane & 1) .. + 3; chroma blocks (cb = 4 plane + b), lane = row / column /
// coefficients 4 (lane & 3) .. + 3 of block lane >> 2.

// The luma warp's and the chroma warp's scratch, each 16-byte aligned, as every array in
// them: the compiler reads and writes shared memory in aligned 16-byte pieces, and such a
// piece must not cover another lane's or the other warp's data (racecheck reports the
// overlap as a hazard, although no wrong value is used).
struct __align__(16) H264Luma {
    EncNb nb;
    __align__(16) EncIpred lp[4];    // the modes' predictions
    __align__(16) int lok[4];        // available
    __align__(16) int32_t w[16][16]; // residual, coefficients, dequantised values
    __align__(16) int16_t lev[16][16];
    __align__(16) uint32_t dcf[16]; // DC: the forward, then the inverse transform
    __align__(16) int32_t dc[16];   // DC after scaling
    // With I_NxN, from the chroma warp (w_h264_i16_side): Intra_16x16's residual (raster),
    // mode and cost
    __align__(16) int16_t i16d[256];
    int bm;
    uint32_t i16c;
};
struct __align__(16) H264Chroma {
    EncNb cnb[2];
    __align__(16) EncIpred cp[2][4]; // the modes' predictions (Cb, Cr)
    __align__(16) int cok[2][4];     // available
    __align__(16) int32_t cw[8][16]; // blocks, as w
    __align__(16) int16_t clev[8][16];
    __align__(16) int32_t cdc[2][4];
    __align__(16) int16_t cdcl[2][4];
    __align__(16) unsigned cx[4]; // the chroma half's bits, Cb and Cr non-zeros, mode
};
// I_NxN (VidkEncParams.intra4x4 / intra8x8): a candidate warp's scratch.
constexpr int kNxnTs = 32; // the tile's row stride
struct NxnSums { // a candidate's sums: its cost, level bits, non-zeros, mode bits, energy
    uint32_t cost, energy;
    unsigned bits, mbits;
    int nnz;
};
struct __align__(16) H264Nxn {
    int wc;                                  // the window's column of this macroblock (0, 1)
    NxnSums sum;                             // the candidate's (lane 0 writes them)
    __align__(16) uint16_t wmbi[4];          // the window's words (2 x 2 macroblocks)
    __align__(16) uint8_t wim4[64];          // and modes (8 x 8 4x4 blocks)
    __align__(16) uint8_t src[256];          // the macroblock's source
    __align__(16) uint8_t tile[17 * kNxnTs]; // the reconstruction (nxn_at)
    // Intra_8x8: its block's row of neighbours before the filter (enc_h264_nbn_raw); the
    // values the predictions are made of (enc_h264_inxn_d: the row, after the filter for 8x8,
    // then the values derived from it), of Intra_4x4's two current blocks
    __align__(16) uint8_t e[32];
    __align__(16) uint8_t d[2][80];
    // the winner's residual, coefficients, dequantised values (Intra_4x4: 16 a half)
    __align__(16) int32_t w[64];
    __align__(16) int16_t lv[256]; // the candidate's levels
    // The prediction rules (enc_h264_inxn_rule; w_h264_nxn_rules at the kernel's start),
    // mode-major: Intra_4x4's 9 x 16 (raster), Intra_8x8's 9 x 64
    __align__(16) uint8_t rule[9 * 64];
    // The luma quantiser's and level scale's tables of the candidate's transform (Intra_4x4:
    // the first 16), from EncFrame once: a lane's own entry of a kernel parameter's array is
    // an indexed constant load, which the lanes' different addresses serialise.
    __align__(16) int32_t mf[64];
    __align__(16) int16_t ls[64];
};
struct H264Scratch {
    H264Luma l;
    H264Chroma c;
    H264Nxn n[2]; // I_NxN: Intra_4x4 (the luma warp), Intra_8x8 (warp 2)
};

// Levels k0 .. k0 + N - 1 of a 4x4 block whose element 0 goes through the DC transform
// (factor 0: level 0); returns how many are non-zero and adds their se() lengths to *bits.
template <int N>
__device__ inline unsigned w_quant_ac(const int32_t *w, int16_t *lev, int k0, const int32_t *mf,
                                      int qbits, int32_t dz, unsigned *bits) {
    unsigned n = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const int k = k0 + j;
        const int l = vidk_h264_quant1(w[k], k ? (uint32_t)mf[k] : 0u, qbits, (uint32_t)dz);
        lev[k] = (int16_t)l;
        if (l) n++, *bits += vidk_se_bits(l);
    }
    return n;
}

// The intra mode of a half (the first strictly smaller SAD among the available modes: bit m
// of ok), the lane's N samples (packed in words) against mode m's prediction at (x + k, y),
// summed over the warp; dflt when none is available. CHROMA: the chroma modes' kinds.
template <int N, bool CHROMA>
__device__ inline int w_best_mode(const uint32_t *sw, const EncNb &nb, const EncIpred *P,
                                  unsigned ok, int x, int y, int dflt) {
    uint32_t best = 0xffffffffu;
    int bm = dflt;
#pragma unroll
    for (int m = 0; m < 4; m++) {
        const int kind = CHROMA ? enc_h264_ipredc_kind(m) : enc_h264_ipred16_kind(m);
        unsigned a = 0;
#pragma unroll
        for (int k = 0; k < N; k++)
            a += (unsigned)abs((int)((sw[k >> 2] >> (8 * (k & 3))) & 255) -
                               enc_h264_ipred_kat(&nb, &P[m], kind, x + k, y));
        a = wsum(a);
        if ((ok >> m & 1) && a < best) best = a, bm = m;
    }
    return bm;
}

// The 1-D passes of a 4x4 block's separable transform f (f(x, s): the 4 values x[0], x[s],
// x[2s], x[3s] in place) by the 4 / R lanes that share it: R rows, then R columns each (part:
// the lane's place among them), the warp meeting after each pass.
template <int R, typename T, typename F>
__device__ inline void w_rows_cols(T *x, int part, F f) {
#pragma unroll
    for (int r = 0; r < R; r++)
        f(x + 4 * (R * part + r), 1);
    __syncwarp();
#pragma unroll
    for (int r = 0; r < R; r++)
        f(x + R * part + r, 4);
    __syncwarp();
}

// A 4x4 block's forward transform (rows, then columns) and AC quantisation by the 4 / R lanes
// that share it, R rows and R columns each (part: the lane's place among them); returns the
// block's non-zero count on its first lane (0 on the others) and adds the lane's levels'
// se() lengths, and on the first lane ue() of the count, to *bits.
template <int R>
__device__ inline unsigned w_fwd_quant(int32_t *w, int16_t *lev, int part, const int32_t *mf,
                                       int qbits, unsigned *bits) {
    __syncwarp();
    w_rows_cols<R>(w, part, [](int32_t *x, int s) { vidk_h264_ftx4_1d(x, x, s); });
    unsigned n =
        w_quant_ac<4 * R>(w, lev, 4 * R * part, mf, qbits, vidk_h264_deadzone(qbits, 1), bits);
#pragma unroll
    for (int o = 1; o < 4 / R; o <<= 1)
        n += __shfl_xor_sync(kFull, n, o);
    *bits += part ? 0u : vidk_ue_bits(n);
    return part ? 0u : n;
}

// Its dequantisation (element 0: dc, the DC transform's value) and inverse transform (rows,
// then columns) in place of the block's coefficients t, by the same lanes.
template <int R>
__device__ inline void w_deq_inv(uint32_t *t, const int16_t *lev, const int16_t *ls, int per,
                                 uint32_t dc, int part) {
#pragma unroll
    for (int j = 0; j < 4 * R; j++) {
        const int k = 4 * R * part + j;
        t[k] = k ? vidk_h264_dequant1(lev[k], ls[k], per, 4) : dc;
    }
    __syncwarp();
    w_rows_cols<R>(t, part, [](uint32_t *x, int s) { vidk_h264_itx4_1d(x, x, s); });
}

// ---- I_NxN (enc_tmpl.h h264_inxn_try, h264_nxn_decide), the luma warp and warp 2 ----
//
// The candidates are coded in shared memory: the macroblock's source, and a tile of its
// reconstruction with the row above (x -1..23: the top-right neighbours) and the column to
// the left, read once; the winner's samples go to rec at the end. The predicted modes come
// from vidk_h264_inxn_pred_mode on a window of the decision words and modes (this
// macroblock, its left and upper neighbours), on every lane. Each block: its row of
// neighbours a lane per entry (enc_h264_nbn_raw on the tile; for 8x8 blocks then
// enc_h264_nbn_filt), which are the first of the values its predictions are made of, then the
// others a lane per value (enc_h264_inxn_d), then a lane per mode: its prediction sample by
// sample (enc_h264_inxn_rule: which value; the lane's rules read once from the table), its
// SATD (vidk_satd4 per 4x4 block), its cost; the lowest (cost, mode) wins (the scalar loop's
// first strictly smaller cost; cost << 4 | mode in 32 bits, __reduce_min_sync). Intra_4x4
// (the luma warp): a half warp per block, two blocks at once where the macroblock's 4x4
// wavefront allows (block (x, y) reads its left, upper, upper-left and, where they come
// earlier (enc_h264_tr_avail), upper-right neighbours: 10 steps instead of 16); each mode
// lane also transforms its candidate (vidk_h264_ftx_2d in registers, beside the SATD), the
// winner's lane stores the coefficients, then a lane per coefficient quantises and
// dequantises (vidk_h264_quant1, vidk_h264_dequant1; the non-zeros by ballot) and a lane per
// sample runs the whole inverse (vidk_h264_itx_2d) and keeps its own sample. Intra_8x8
// (warp 2): a lane per mode and half block, the winner coded by the warp: residual by sample,
// the transform by rows then columns, the quantiser and dequantisation by coefficient, the
// inverse by rows then columns, the reconstruction by sample. The quantiser's tables are
// copied to shared memory (w_h264_nxn_rules): an array of the kernel parameter indexed by
// lane is a constant load the lanes' different addresses serialise. h264_inxn_code's core
// functions in its order for every value, so the same integers.

// Sample (x, y) (x -1..23, y -1..15) of the tile (x 0 at a 4-byte boundary).
__device__ inline uint8_t *nxn_at(H264Nxn &s, int x, int y) {
    return s.tile + (y + 1) * kNxnTs + x + 4;
}

// The rule and quantiser tables of both candidate warps' scratch, by the block's nt threads
// (t: this one's index) at the kernel's start; a block barrier must follow.
__device__ inline void w_h264_nxn_rules(const EncFrame &f, H264Nxn *xn, int t, int nt) {
    w_nxn_rule_fill(xn[0].rule, xn[1].rule, t, nt);
    for (int j = t; j < 16 + 64; j += nt) {
        const int e = j < 16 ? 0 : 1, i = e ? j - 16 : j;
        xn[e].mf[i] = e ? f.mf8y[i] : f.mf4y[i];
        xn[e].ls[i] = e ? f.ls8y[i] : f.ls4y[i];
    }
}

// The Intra_4x4 blocks (decoding order) of the macroblock's wavefront steps: half 0's at
// step s (nibble s), half 1's at steps 2..7.
constexpr unsigned long long kI4Step0 = 0xFEBA763210ull, kI4Step1 = 0x00DC985400ull;

// The Intra_4x4 candidate (h264_inxn_try, N = 4) by the luma warp into the tile, the window,
// s.lv and s.sum.
__device__ void w_h264_i4_try(const EncFrame &f, int mbx, int mby, H264Nxn &s, int lane) {
    const int h = lane >> 4, m = lane & 15; // the half's block; the lane's mode (< 9), sample
    uint32_t ru[4] = {0, 0, 0, 0};          // its mode's 16 rules
    if (m < 9)
#pragma unroll
        for (int q = 0; q < 4; q++)
            ru[q] = reinterpret_cast<const uint32_t *>(s.rule)[4 * m + q];
    const int top = mby > 0 && !enc_h264_slice_start(mby, f.uh, f.slices);
    const int qbits = 15 + f.qp / 6, per = f.qp / 6;
    const uint32_t dz = (uint32_t)vidk_h264_deadzone(qbits, 1);
    const int32_t mf = s.mf[m];
    const int ls = s.ls[m];
    const int sy = m >> 2, sx = m & 3; // the lane's sample / coefficient (raster)
    NxnSums r = {0, 0, 0, 0, 0};
    uint8_t *dv = s.d[h];
    int32_t *w = s.w + 16 * h; // the half's residual, coefficients, dequantised values
    for (int st = 0; st < 10; st++) {
        const bool on = h == 0 || (st >= 2 && st < 8);
        const int k = (int)(((h ? kI4Step1 : kI4Step0) >> (4 * st)) & 15);
        int bx, by, a, b, c;
        enc_h264_inxn_blk(4, k, &bx, &by);
        enc_h264_nbn_avail_top(&f, mbx, top, 4, bx, by, &a, &b, &c);
        // The block's row of neighbours a lane an entry (the first 13 of the values its
        // predictions are made of, enc_h264_inxn_d), then the others from them; its predicted
        // mode on every lane of the half.
        if (on && m < 13)
            dv[m] = (uint8_t)enc_h264_nbn_raw(nxn_at(s, 4 * bx, 4 * by), kNxnTs, 4, a, b, c, m);
        const int pm =
            on ? vidk_h264_inxn_pred_mode(s.wmbi, s.wim4, 2, 4 * s.wc + bx, 4 + by, top) : 2;
        __syncwarp();
        if (on)
            for (int j = 13 + m; j < 39; j += 16)
                dv[j] = (uint8_t)enc_h264_inxn_d(dv, 4, a, b, j);
        __syncwarp();
        // Every mode's cost a lane (SATD + lambda x mode bits < 2^28: the key is 32 bits),
        // the lowest (cost, mode) of each half.
        const uint8_t *sp = s.src + 4 * by * 16 + 4 * bx;
        unsigned key = ~0u, en = 0;
        int32_t cf[16]; // the lane's candidate: its residual, then coefficients
        if (on && m < 9 && enc_h264_inxn_avail(m, a, b)) {
            int d[16];
#pragma unroll
            for (int y = 0; y < 4; y++) {
                const uint32_t sv = *reinterpret_cast<const uint32_t *>(sp + 16 * y);
#pragma unroll
                for (int x = 0; x < 4; x++) {
                    const int i = 4 * y + x;
                    d[i] = (int)((sv >> (8 * x)) & 255) - dv[(ru[y] >> (8 * x)) & 255];
                    cf[i] = d[i], en += (unsigned)(d[i] * d[i]);
                }
            }
            key = (vidk_satd4(d) + enc_h264_lbits(&f, enc_h264_inxn_mbits(m, pm))) << 4 |
                  (unsigned)m;
            vidk_h264_ftx_2d(4, cf);
        }
        const unsigned k0 = __reduce_min_sync(kFull, h ? ~0u : key);
        const unsigned k1 = __reduce_min_sync(kFull, h ? key : ~0u);
        key = h ? k1 : k0;
        const int bm = (int)(key & 15);
        // The winner coded (h264_inxn_code): its coefficients from its lane, the quantiser and
        // the dequantisation a coefficient a lane, the inverse and the reconstruction a sample
        // a lane (each lane the whole inverse, its own sample kept).
        int pv = 0, l = 0;
        if (on && m == bm) {
            uint4 *o = reinterpret_cast<uint4 *>(w);
#pragma unroll
            for (int q = 0; q < 4; q++)
                o[q] = make_uint4((uint32_t)cf[4 * q], (uint32_t)cf[4 * q + 1],
                                  (uint32_t)cf[4 * q + 2], (uint32_t)cf[4 * q + 3]);
            s.wim4[(4 + by) * 8 + 4 * s.wc + bx] = (uint8_t)bm;
            r.energy += en, r.cost += key >> 4, r.mbits += enc_h264_inxn_mbits(bm, pm);
        }
        if (on) pv = dv[s.rule[16 * bm + m]];
        __syncwarp();
        if (on) {
            l = vidk_h264_quant1(w[m], (uint32_t)mf, qbits, dz);
            s.lv[16 * k + m] = (int16_t)l;
            if (l) r.bits += vidk_se_bits(l);
            w[m] = (int32_t)vidk_h264_dequant1(l, ls, per, 4);
        }
        const unsigned nzm = (__ballot_sync(kFull, l != 0) >> (16 * h)) & 0xffffu;
        if (on && m == 0) {
            const unsigned n = (unsigned)__popc(nzm);
            r.bits += vidk_ue_bits(n), r.nnz += (int)n;
        }
        __syncwarp();
        if (on) {
            int v = pv;
            if (nzm) {
                uint32_t t[16];
                const uint4 *i4 = reinterpret_cast<const uint4 *>(w);
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    const uint4 u = i4[q];
                    t[4 * q] = u.x, t[4 * q + 1] = u.y, t[4 * q + 2] = u.z, t[4 * q + 3] = u.w;
                }
                vidk_h264_itx_2d(4, t);
                uint32_t o = t[0];
#pragma unroll
                for (int i = 1; i < 16; i++)
                    o = m == i ? t[i] : o;
                v = vidk_h264_add_clip(pv, vidk_h264_round6(o));
            }
            *nxn_at(s, 4 * bx + sx, 4 * by + sy) = (uint8_t)v;
        }
        __syncwarp(); // the blocks' reconstruction and modes before the next step's reads
    }
    r.cost = wsum(r.cost), r.mbits = wsum(r.mbits), r.bits = wsum(r.bits);
    r.energy = wsum(r.energy), r.nnz = (int)wsum((unsigned)r.nnz);
    if (lane == 0) s.sum = r;
}

// The Intra_8x8 candidate (h264_inxn_try, N = 8) by warp 2 into the tile, the window, s.lv
// and s.sum.
__device__ void w_h264_i8_try(const EncFrame &f, int mbx, int mby, H264Nxn &s, int lane) {
    const int h = lane >> 4, m = lane & 15; // the lane's half block (rows 4h..) and mode
    uint32_t ru[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (m < 9)
#pragma unroll
        for (int q = 0; q < 8; q++)
            ru[q] = reinterpret_cast<const uint32_t *>(s.rule)[16 * m + 8 * h + q];
    const int top = mby > 0 && !enc_h264_slice_start(mby, f.uh, f.slices);
    const int qbits = 16 + f.qp / 6, per = f.qp / 6;
    const uint32_t dz = (uint32_t)vidk_h264_deadzone(qbits, 1);
    NxnSums r = {0, 0, 0, 0, 0};
    uint32_t *t = reinterpret_cast<uint32_t *>(s.w);
    for (int k = 0; k < 4; k++) {
        const int bx = k & 1, by = k >> 1;
        int a, b, c;
        enc_h264_nbn_avail_top(&f, mbx, top, 8, bx, by, &a, &b, &c);
        const uint8_t *src = s.src + 8 * by * 16 + 8 * bx;
        uint8_t *rec = nxn_at(s, 8 * bx, 8 * by);
        // The block's row of neighbours, filtered (the first 25 of the values its predictions
        // are made of), the others from them; its predicted mode on every lane.
        if (lane < 25) s.e[lane] = (uint8_t)enc_h264_nbn_raw(rec, kNxnTs, 8, a, b, c, lane);
        const int pm =
            vidk_h264_inxn_pred_mode(s.wmbi, s.wim4, 2, 4 * s.wc + 2 * bx, 4 + 2 * by, top);
        __syncwarp();
        if (lane < 25) s.d[0][lane] = (uint8_t)enc_h264_nbn_filt(s.e, a, b, lane);
        __syncwarp();
        for (int j = 25 + lane; j < 75; j += 32)
            s.d[0][j] = (uint8_t)enc_h264_inxn_d(s.d[0], 8, a, b, j);
        __syncwarp();
        // Every mode's cost by a pair of lanes (SATD + lambda x mode bits < 2^28: the key is
        // 32 bits), the lowest (cost, mode) of the warp.
        const bool cand = m < 9 && enc_h264_inxn_avail(m, a, b);
        uint32_t sat = 0;
        if (cand) { // the lane's half: two 4x4 blocks
            int d[2][16];
#pragma unroll
            for (int y = 0; y < 4; y++) {
                const uint2 sv = *reinterpret_cast<const uint2 *>(src + (4 * h + y) * 16);
#pragma unroll
                for (int q = 0; q < 2; q++)
#pragma unroll
                    for (int x = 0; x < 4; x++) {
                        const int i = 8 * y + 4 * q + x;
                        d[q][4 * y + x] = (int)(((q ? sv.y : sv.x) >> (8 * x)) & 255) -
                                          s.d[0][(ru[i >> 2] >> (8 * (i & 3))) & 255];
                    }
            }
            sat = vidk_satd4(d[0]) + vidk_satd4(d[1]);
        }
        sat += __shfl_xor_sync(kFull, sat, 16);
        unsigned key = ~0u;
        if (cand)
            key = (sat + enc_h264_lbits(&f, enc_h264_inxn_mbits(m, pm))) << 4 | (unsigned)m;
        key = __reduce_min_sync(kFull, key);
        const int bm = (int)(key & 15);
        r.cost += key >> 4;
        r.mbits += enc_h264_inxn_mbits(bm, pm);
        if (lane < 4) { // the mode into the window's entries of the block
            const int x4 = 4 * s.wc + 2 * bx + (lane & 1), y4 = 4 + 2 * by + (lane >> 1);
            s.wim4[y4 * 8 + x4] = (uint8_t)bm;
        }
        // The winner coded: its prediction and residual a sample a lane, the transform's rows
        // then columns on 8 lanes, the quantiser and the dequantisation a coefficient a lane,
        // the inverse's rows then columns, the reconstruction.
        int pv[2];
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const int j = lane + 32 * q, x = j & 7, y = j >> 3;
            pv[q] = s.d[0][s.rule[64 * bm + j]];
            const int dd = src[y * 16 + x] - pv[q];
            s.w[j] = dd;
            r.energy += (uint32_t)(dd * dd);
        }
        __syncwarp();
        if (lane < 8) vidk_h264_ftx_1d(8, s.w + lane * 8, 1);
        __syncwarp();
        if (lane < 8) vidk_h264_ftx_1d(8, s.w + lane, 8);
        __syncwarp();
        int16_t *lev = s.lv + 64 * k;
        int l[2];
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const int j = lane + 32 * q;
            l[q] = vidk_h264_quant1(s.w[j], (uint32_t)s.mf[j], qbits, dz);
            lev[j] = (int16_t)l[q];
            if (l[q]) r.bits += vidk_se_bits(l[q]);
            t[j] = vidk_h264_dequant1(l[q], s.ls[j], per, 6);
        }
        const unsigned nz = (unsigned)(__popc(__ballot_sync(kFull, l[0] != 0)) +
                                       __popc(__ballot_sync(kFull, l[1] != 0)));
        if (lane == 0) r.bits += vidk_ue_bits(nz);
        r.nnz += (int)nz;
        __syncwarp();
        if (nz) {
            if (lane < 8) vidk_h264_itx_1d(8, t + lane * 8, 1);
            __syncwarp();
            if (lane < 8) vidk_h264_itx_1d(8, t + lane, 8);
            __syncwarp();
        }
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const int j = lane + 32 * q;
            rec[(j >> 3) * kNxnTs + (j & 7)] =
                (uint8_t)(nz ? vidk_h264_add_clip(pv[q], vidk_h264_round6(t[j])) : pv[q]);
        }
        __syncwarp(); // the block's reconstruction before the next block's neighbours
    }
    r.bits = wsum(r.bits), r.energy = wsum(r.energy);
    if (lane == 0) s.sum = r;
}

// A candidate warp's start: the macroblock's source, the tile's row above and column to the
// left (where they exist: the top-right ones where the macroblock above and to the right
// does), the window (this macroblock at column wc of two, row 1).
__device__ void w_h264_nxn_load(const EncFrame &f, int mbx, int mby, H264Nxn &s, int lane) {
    const int cs = f.cs[0], ss = f.ss[0], ly = lane >> 1, lx = (lane & 1) * 8, s4 = f.W / 4;
    const int top = mby > 0 && !enc_h264_slice_start(mby, f.uh, f.slices), L = mbx > 0;
    const uint8_t *rec = f.rec[0] + (ptrdiff_t)(16 * mby) * cs + 16 * mbx;
    *reinterpret_cast<uint2 *>(s.src + ly * 16 + lx) = *reinterpret_cast<const uint2 *>(
        f.src[0] + (ptrdiff_t)(16 * mby + ly) * ss + 16 * mbx + lx);
    if (lane < 25) {
        const int x = lane - 1;
        const bool ok = top && (x < 0 ? L : x < 16 || mbx + 1 < f.uw);
        *nxn_at(s, x, -1) = ok ? ENC_LDREC(rec - cs + x) : 0;
    }
    if (lane < 16) *nxn_at(s, -1, lane) = L ? ENC_LDREC(rec + (ptrdiff_t)lane * cs - 1) : 0;
    if (lane == 0) {
        s.wc = L;
        s.wmbi[0] = s.wmbi[1] = s.wmbi[2] = s.wmbi[3] = 0;
        if (top) s.wmbi[L] = ENC_LDREC(f.mbi + (mby - 1) * f.uw + mbx);
        if (L) s.wmbi[2] = ENC_LDREC(f.mbi + mby * f.uw + mbx - 1);
    }
    if (lane < 4 && top) // the row of modes above
        s.wim4[3 * 8 + 4 * L + lane] =
            ENC_LDREC(f.im4 + (ptrdiff_t)(4 * mby - 1) * s4 + 4 * mbx + lane);
    if (lane >= 4 && lane < 8 && L) // the column to the left
        s.wim4[lane * 8 + 3] =
            ENC_LDREC(f.im4 + (ptrdiff_t)(4 * mby + lane - 4) * s4 + 4 * mbx - 1);
    __syncwarp();
}

// Intra_16x16's cost in h264_nxn_decide: the SATD of its prediction (pl: the lane's 8
// samples in the luma sample layout, sw: the source's) against the source (enc_satd16's 4x4
// SATDs, one per lane) + lambda x ue(1 + bm).
__device__ uint32_t w_h264_i16_cost(const EncFrame &f, H264Luma &s, const uint32_t *sw,
                                    const uint8_t *pl, int bm, int lane) {
    const int ly = lane >> 1, lx = (lane & 1) * 8;
#pragma unroll
    for (int k = 0; k < 8; k++)
        s.i16d[ly * 16 + lx + k] =
            (int16_t)((int)((sw[k >> 2] >> (8 * (k & 3))) & 255) - pl[k]);
    __syncwarp();
    uint32_t sd = 0;
    if (lane < 16) {
        const int bx = (lane & 3) * 4, by = (lane >> 2) * 4;
        int d[16];
#pragma unroll
        for (int i = 0; i < 16; i++)
            d[i] = s.i16d[(by + (i >> 2)) * 16 + bx + (i & 3)];
        sd = vidk_satd4(d);
    }
    return wsum(sd) + enc_h264_lbits(&f, vidk_ue_bits(1u + (unsigned)bm));
}

// Intra_16x16's mode (h264_i_mb: the first strictly smaller SAD among the available modes):
// the neighbours and the modes' predictions into s; the lane's 8 source samples (row
// lane >> 1, columns 8 (lane & 1) ..) into sw, their chosen prediction into pl.
__device__ int w_h264_i16_mode(const EncFrame &f, int mbx, int mby, H264Luma &s, int lane,
                               uint32_t *sw, uint8_t *pl) {
    const int x0 = mbx * 16, y0 = mby * 16, ss = f.ss[0], cs = f.cs[0];
    // Neighbours (enc_h264_nb), one sample per lane: top / left by lanes 0-15 / 16-31.
    {
        const int T = mby > 0 && !enc_h264_slice_start(mby, f.uh, f.slices), L = mbx > 0;
        const uint8_t *r0 = f.rec[0];
        if (lane < 16)
            s.nb.top[lane] = T ? ENC_LDREC(r0 + (ptrdiff_t)(y0 - 1) * cs + x0 + lane) : 0;
        else
            s.nb.left[lane - 16] =
                L ? ENC_LDREC(r0 + (ptrdiff_t)(y0 + lane - 16) * cs + x0 - 1) : 0;
        if (lane == 0) {
            s.nb.has_top = T, s.nb.has_left = L;
            s.nb.tl = T && L ? ENC_LDREC(r0 + (ptrdiff_t)(y0 - 1) * cs + x0 - 1) : 0;
        }
    }
    __syncwarp();
    if (lane < 4) s.lok[lane] = enc_h264_ipred16_prep(&s.nb, lane, &s.lp[lane]);
    __syncwarp();
    // Every mode's SAD, summed over the warp (integers: the scalar path's SADs).
    const int ly = lane >> 1, lx = (lane & 1) * 8;
    const uint2 sv =
        *reinterpret_cast<const uint2 *>(f.src[0] + (ptrdiff_t)(y0 + ly) * ss + x0 + lx);
    sw[0] = sv.x, sw[1] = sv.y;
    const int bm = w_best_mode<8, false>(sw, s.nb, s.lp,
                                         (s.lok[0] != 0) | (s.lok[1] != 0) << 1 |
                                             (s.lok[2] != 0) << 2 | (s.lok[3] != 0) << 3,
                                         lx, ly, 2);
#pragma unroll
    for (int k = 0; k < 8; k++)
        pl[k] = enc_h264_ipred_at(&s.nb, &s.lp[bm], lx + k, ly);
    return bm;
}

// With I_NxN, the chroma warp after its own work: Intra_16x16's mode and cost into s (the
// luma warp reads them after the block barrier nxn_meet).
__device__ void w_h264_i16_side(const EncFrame &f, int mbx, int mby, H264Luma &s, int lane) {
    uint32_t sw[2];
    uint8_t pl[8];
    const int bm = w_h264_i16_mode(f, mbx, mby, s, lane, sw, pl);
    const uint32_t c = w_h264_i16_cost(f, s, sw, pl, bm, lane);
    if (lane == 0) s.bm = bm, s.i16c = c;
}

// The winning candidate N out of its warp's scratch s: samples, modes, levels
// (h264_nxn_store), energy.
__device__ void w_h264_nxn_out(const EncFrame &f, int mbx, int mby, int N, H264Nxn &s,
                               int lane) {
    const int cs = f.cs[0], ly = lane >> 1, lx = (lane & 1) * 8, s4 = f.W / 4;
    uint8_t *rec = f.rec[0] + (ptrdiff_t)(16 * mby) * cs + 16 * mbx;
    for (int k = 0; k < 8; k++)
        rec[ly * cs + lx + k] = *nxn_at(s, lx + k, ly);
    if (lane < 16)
        f.im4[(ptrdiff_t)(4 * mby + (lane >> 2)) * s4 + 4 * mbx + (lane & 3)] =
            s.wim4[(4 + (lane >> 2)) * 8 + 4 * s.wc + (lane & 3)];
    if (f.lev[0]) {
        const int len = N * N, l2 = N == 8 ? 3 : 2;
        for (int j = lane; j < 256; j += 32) {
            int bx, by;
            enc_h264_inxn_blk(N, j >> (2 * l2), &bx, &by);
            const int i = j & (len - 1);
            f.lev[0][(ptrdiff_t)(16 * mby + N * by + (i >> l2)) * f.ls_[0] + 16 * mbx + N * bx +
                     (i & (N - 1))] = s.lv[j];
        }
    }
    if (lane == 0 && f.energy) f.energy[mby * f.mb_w + mbx] = s.sum.energy;
}

// The luma warp meets the Intra_8x8 warp (2) of an I_NxN block: a block barrier, which each
// of the three warps reaches once (the chroma warp after its work), a warp-uniform branch
// each (sm_70 on).
__device__ inline void nxn_meet() {
    __syncthreads();
}

// The luma half (warp 0): Intra_16x16 decision (with I_NxN: the chroma warp's, read after
// the meeting), residual, transforms, reconstruction, the energy and the vectors; returns the
// lane's share of the bits (*nz: of the non-zeros).
__device__ unsigned w_h264_i_luma(const EncFrame &f, int mbx, int mby, H264Luma &s, H264Nxn *xn,
                                  int lane, int *bm_out, unsigned *nz, int *nxn_out,
                                  unsigned *mbits) {
    const int x0 = mbx * 16, y0 = mby * 16, qp = f.qp, cs = f.cs[0];
    uint8_t *rec = f.rec[0] + (ptrdiff_t)y0 * cs + x0;
    const int ly = lane >> 1, lx = (lane & 1) * 8;
    if (f.mv4 && lane < 16) {
        const VidkMv zero = {0, 0};
        f.mv4[(ptrdiff_t)(mby * 4 + (lane >> 2)) * (f.W / 4) + mbx * 4 + (lane & 3)] = zero;
    }
    uint32_t sw[2];
    uint8_t pl[8]; // the chosen prediction (kept in registers for the reconstruction)
    int bm;
    *nxn_out = 0;
    if (f.i4x4 || f.i8x8) { // h264_nxn_decide: I_NxN where it costs less, then coded
        H264Nxn &x4 = xn[0];
        w_h264_nxn_load(f, mbx, mby, x4, lane);
        if (f.i4x4) w_h264_i4_try(f, mbx, mby, x4, lane);
        nxn_meet(); // warp 2's Intra_8x8, the chroma warp's Intra_16x16
        bm = s.bm;
        uint32_t best = s.i16c;
        int nxn = 0;
        const uint32_t bias = enc_h264_lbits(&f, ENC_H264_NXN_BIAS);
        if (f.i4x4 && x4.sum.cost + bias < best) best = x4.sum.cost + bias, nxn = 4;
        if (f.i8x8 && xn[1].sum.cost + bias < best) nxn = 8;
        *nxn_out = nxn;
        *bm_out = bm;
        if (nxn) { // (the totals on lane 0: the caller sums the lanes')
            H264Nxn &w = xn[nxn == 8];
            w_h264_nxn_out(f, mbx, mby, nxn, w, lane);
            *mbits = w.sum.mbits;
            *nz = lane ? 0u : (unsigned)w.sum.nnz;
            return lane ? 0u : w.sum.bits;
        }
        const uint2 sv = *reinterpret_cast<const uint2 *>(
            f.src[0] + (ptrdiff_t)(y0 + ly) * f.ss[0] + x0 + lx);
        sw[0] = sv.x, sw[1] = sv.y;
#pragma unroll
        for (int k = 0; k < 8; k++)
            pl[k] = enc_h264_ipred_at(&s.nb, &s.lp[bm], lx + k, ly);
    } else {
        bm = w_h264_i16_mode(f, mbx, mby, s, lane, sw, pl);
        *bm_out = bm;
    }
    // The residual into the blocks, the prediction's SSD the energy.
    {
        unsigned e = 0;
        const int b = (ly >> 2) * 4 + (lx >> 2), r = (ly & 3) * 4;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const int d = (int)((sw[k >> 2] >> (8 * (k & 3))) & 255) - (int)pl[k];
            e += (unsigned)(d * d);
            s.w[b + (k >> 2)][r + (k & 3)] = d;
        }
        if (f.energy) {
            e = wsum(e);
            if (lane == 0) f.energy[mby * f.mb_w + mbx] = e;
        }
    }
    const int lb = lane >> 1, lh = lane & 1;
    // Forward 4x4 transforms and AC quantisation (element 0 goes through the DC transform:
    // factor 0, level 0), the blocks' bits (enc_block_bits of elements 1..15: se() of each
    // level, ue() of the count).
    unsigned bits = 0;
    unsigned nzl = w_fwd_quant<2>(s.w[lb], s.lev[lb], lh, f.mf4y, 15 + qp / 6, &bits);
    // The DC transform (vidk_h264_fdct_dc): columns then rows on lanes 0-3; quantisation on
    // lanes 0-15.
    if (lane < 16) s.dcf[lane] = (uint32_t)s.w[lane][0];
    __syncwarp();
    if (lane < 4) vidk_h264_had4_1d(s.dcf + lane, s.dcf + lane, 4);
    __syncwarp();
    if (lane < 4) vidk_h264_had4_1d(s.dcf + 4 * lane, s.dcf + 4 * lane, 1);
    __syncwarp();
    {
        const int qbdc = 17 + qp / 6;
        unsigned n = 0;
        if (lane < 16) {
            const int l = vidk_h264_quant1((int32_t)s.dcf[lane], (uint32_t)f.mf4y[0], qbdc,
                                           (uint32_t)vidk_h264_deadzone(qbdc, 1));
            s.lev[lane][0] = (int16_t)l;
            if (l) n = 1, bits += vidk_se_bits(l);
        }
        n = wsum(n);
        bits += lane == 0 ? vidk_ue_bits(n) : 0u;
        nzl += lane == 0 ? n : 0u;
    }
    __syncwarp();
    // Its inverse (vidk_h264_idct_dc): columns then rows on lanes 0-3, scaling on 0-15.
    if (lane < 16) s.dcf[lane] = (uint32_t)s.lev[lane][0];
    __syncwarp();
    if (lane < 4) vidk_h264_had4_1d(s.dcf + lane, s.dcf + lane, 4);
    __syncwarp();
    if (lane < 4) vidk_h264_had4_1d(s.dcf + 4 * lane, s.dcf + 4 * lane, 1);
    __syncwarp();
    if (lane < 16)
        s.dc[lane] = (int32_t)vidk_h264_dc_scale(0, s.dcf[lane], (uint32_t)f.ls4y[0], qp);
    __syncwarp();
    // Levels out (the block rows of each lane), dequantisation (element 0: the DC's value).
    {
        if (f.lev[0]) {
            const int bx = x0 + (lb & 3) * 4, by = y0 + (lb >> 2) * 4 + 2 * lh;
            for (int r = 0; r < 2; r++)
                for (int k = 0; k < 4; k++)
                    f.lev[0][(ptrdiff_t)(by + r) * f.ls_[0] + bx + k] =
                        s.lev[lb][(2 * lh + r) * 4 + k];
        }
        w_deq_inv<2>(reinterpret_cast<uint32_t *>(s.w[lb]), s.lev[lb], f.ls4y, qp / 6,
                     (uint32_t)s.dc[lb], lh);
    }
    // Reconstruction (vidk_h264_idct_add's last step) in the sample layout.
    {
        const int b = (ly >> 2) * 4 + (lx >> 2), r = (ly & 3) * 4;
        unsigned lo = 0, hi = 0;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const unsigned v = (unsigned)vidk_h264_add_clip(
                pl[k], vidk_h264_round6((uint32_t)s.w[b + (k >> 2)][r + (k & 3)]));
            if (k < 4)
                lo |= v << (8 * k);
            else
                hi |= v << (8 * (k - 4));
        }
        *reinterpret_cast<uint2 *>(rec + ly * cs + lx) = make_uint2(lo, hi);
    }
    *nz = nzl;
    return bits;
}

// The chroma half (warp 1): the chroma mode, residual, transforms, reconstruction; lane 0
// leaves the bits, the non-zeros of Cb and Cr and the mode in s.cx.
__device__ void w_h264_i_chroma(const EncFrame &f, int mbx, int mby, H264Chroma &s, int lane) {
    const int qc = f.qpc;
    // Neighbours: top / left of Cb and Cr by lanes 0-7 / 8-15 / 16-23 / 24-31.
    {
        const int T = mby > 0 && !enc_h264_slice_start(mby, f.uh, f.slices), L = mbx > 0;
        const int p = 1 + (lane >> 4), k = lane & 7, cx = mbx * 8, cy = mby * 8;
        const uint8_t *rc = f.rec[p];
        EncNb &cn = s.cnb[p - 1];
        if (!(lane & 8))
            cn.top[k] = T ? ENC_LDREC(rc + (ptrdiff_t)(cy - 1) * f.cs[p] + cx + k) : 0;
        else
            cn.left[k] = L ? ENC_LDREC(rc + (ptrdiff_t)(cy + k) * f.cs[p] + cx - 1) : 0;
        if (lane == 0 || lane == 16) {
            cn.has_top = T, cn.has_left = L;
            cn.tl = T && L ? ENC_LDREC(rc + (ptrdiff_t)(cy - 1) * f.cs[p] + cx - 1) : 0;
        }
    }
    __syncwarp();
    if (lane < 8) {
        const int p = lane >> 2, m = lane & 3;
        s.cok[p][m] = enc_h264_ipredc_prep(&s.cnb[p], m, &s.cp[p][m]);
    }
    __syncwarp();
    const int cp = lane >> 4, cy = (lane & 15) >> 1, cx = (lane & 1) * 4;
    const unsigned sc = *reinterpret_cast<const unsigned *>(
        f.src[1 + cp] + (ptrdiff_t)(mby * 8 + cy) * f.ss[1 + cp] + mbx * 8 + cx);
    const int cm = w_best_mode<4, true>(
        &sc, s.cnb[cp], s.cp[cp],
        (s.cok[0][0] && s.cok[1][0]) | (s.cok[0][1] && s.cok[1][1]) << 1 |
            (s.cok[0][2] && s.cok[1][2]) << 2 | (s.cok[0][3] && s.cok[1][3]) << 3,
        cx, cy, 0); // both planes: the scalar path's sum
    uint8_t pc[4];
    {
        const int c = 4 * cp + (cy >> 2) * 2 + (cx >> 2);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            pc[k] = enc_h264_ipred_at(&s.cnb[cp], &s.cp[cp][cm], cx + k, cy);
            s.cw[c][(cy & 3) * 4 + k] = (int)((sc >> (8 * k)) & 255) - (int)pc[k];
        }
    }
    const int cb = lane >> 2, cq = lane & 3;
    unsigned bits = 0;
    unsigned nzc = w_fwd_quant<1>(s.cw[cb], s.clev[cb], cq, f.mf4c, 15 + qc / 6, &bits);
    __syncwarp();
    // The 2x2 DC transforms whole on lanes 0 (Cb) and 16 (Cr), quantisation and inverse.
    if (lane == 0 || lane == 16) {
        const int p = lane >> 4, qbc = 16 + qc / 6;
        int32_t wdc[4], y[4];
        unsigned n = 0;
        for (int k = 0; k < 4; k++)
            wdc[k] = s.cw[4 * p + k][0];
        vidk_h264_fdct_dc(1, y, wdc);
        for (int k = 0; k < 4; k++) {
            const int l = vidk_h264_quant1(y[k], (uint32_t)f.mf4c[0], qbc,
                                           (uint32_t)vidk_h264_deadzone(qbc, 1));
            s.cdcl[p][k] = (int16_t)l;
            if (l) n++, bits += vidk_se_bits(l);
        }
        bits += vidk_ue_bits(n);
        nzc += n;
        vidk_h264_idct_dc(1, s.cdc[p], s.cdcl[p], (uint32_t)f.ls4c[0], qc);
    }
    __syncwarp();
    if (lane < 8) s.clev[lane][0] = s.cdcl[lane >> 2][lane & 3];
    __syncwarp();
    {
        const int p = cb >> 2, b = cb & 3;
        if (f.lev[1 + p])
            for (int k = 0; k < 4; k++)
                f.lev[1 + p][(ptrdiff_t)(mby * 8 + (b >> 1) * 4 + cq) * f.ls_[1 + p] + mbx * 8 +
                             (b & 1) * 4 + k] = s.clev[cb][cq * 4 + k];
        w_deq_inv<1>(reinterpret_cast<uint32_t *>(s.cw[cb]), s.clev[cb], f.ls4c, qc / 6,
                     (uint32_t)s.cdc[p][b], cq);
    }
    {
        const int c = 4 * cp + (cy >> 2) * 2 + (cx >> 2);
        unsigned cv = 0;
#pragma unroll
        for (int k = 0; k < 4; k++)
            cv |= (unsigned)vidk_h264_add_clip(
                      pc[k], vidk_h264_round6((uint32_t)s.cw[c][(cy & 3) * 4 + k]))
                  << (8 * k);
        *reinterpret_cast<unsigned *>(f.rec[1 + cp] + (ptrdiff_t)(mby * 8 + cy) * f.cs[1 + cp] +
                                      mbx * 8 + cx) = cv;
    }
    // Cb's non-zeros on lanes 0-15, Cr's on 16-31
    bits = wsum(bits);
    const unsigned nz1 = wsum(lane < 16 ? nzc : 0u), nz2 = wsum(lane < 16 ? 0u : nzc);
    if (lane == 0) s.cx[0] = bits, s.cx[1] = nz1, s.cx[2] = nz2, s.cx[3] = (unsigned)cm;
}

// One macroblock by the block's two warps (t = threadIdx.x, 64 threads); every thread of
// the block calls it (it contains block barriers).
__device__ void w_h264_i_mb(const EncFrame &f, int mbx, int mby, H264Scratch &s, int t) {
    const int lane = t & 31;
    int bm = 0, nxn = 0;
    unsigned bits = 0, nzl = 0, mbits = 0;
    if (t < 32) {
        bits = w_h264_i_luma(f, mbx, mby, s.l, s.n, lane, &bm, &nzl, &nxn, &mbits);
    } else if (t < 64) {
        w_h264_i_chroma(f, mbx, mby, s.c, lane);
        if (f.i4x4 || f.i8x8) {
            w_h264_i16_side(f, mbx, mby, s.l, lane);
            nxn_meet();
        }
    } else { // I_NxN (a block of three warps): the Intra_8x8 candidate beside Intra_4x4
        if (f.i8x8) {
            w_h264_nxn_load(f, mbx, mby, s.n[1], lane);
            w_h264_i8_try(f, mbx, mby, s.n[1], lane);
        }
        nxn_meet();
    }
    __syncthreads(); // the chroma half's statistics are in s.c.cx
    if (t < 32) {
        bits = wsum(bits);
        nzl = wsum(nzl);
        if (lane == 0) {
            EncUnitStat st = enc_stat_zero();
            st.bits_level = bits + s.c.cx[0];
            st.nnz[0] = nzl, st.nnz[1] = s.c.cx[1], st.nnz[2] = s.c.cx[2];
            const unsigned cm = s.c.cx[3];
            // I_NxN: mb_type, transform_size_8x8_flag, the modes; Intra_16x16: mb_type
            st.bits_mode =
                (nxn ? 2 + mbits : 1 + vidk_ue_bits((unsigned)bm)) + vidk_ue_bits(cm);
            st.parts[VIDK_ENC_PART_INTRA] = 1;
            f.stat[mby * f.uw + mbx] = st;
            const unsigned kind = nxn == 8   ? ENC_MBI_NXN | ENC_MBI_TX8
                                  : nxn == 4 ? ENC_MBI_NXN
                                             : (unsigned)bm;
            if (f.mbi) f.mbi[mby * f.uw + mbx] = (uint16_t)(ENC_MBI_INTRA | kind | cm << 2);
        }
    }
    __syncthreads(); // s.c.cx and the scratch are reused by the next macroblock
}

} // namespace vidk_encw

#endif
