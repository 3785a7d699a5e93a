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
    uint8_t line[132], fl[132], av[132];
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
// (chroma: >= 0) into rec at plane (x, y), n x n; returns the mode. Lane 0 gathers the
// reference line (reads of other rows' reconstruction go through L2: ENC_LDREC).
__device__ int w_intra_pred(const EncFrame &f, int p, int x, int y, int n, int log2n, int xc,
                            int yc, int force, WarpScratch &s, int lane) {
    // The reference line: one entry per lane (their loads overlap), then lane 0 substitutes.
    for (int i = lane; i < 4 * n + 1; i += 32)
        s.av[i] = (uint8_t)enc_hevc_ref_at(&f, p, x, y, n, xc, yc, i, &s.line[i]);
    __syncwarp();
    if (lane == 0) enc_hevc_ref_fill(s.line, s.av, 4 * n + 1);
    __syncwarp();
    const uint8_t *src = f.src[p] + (ptrdiff_t)y * f.ss[p] + x;
    int best = force;
    if (force < 0) {
        uint32_t bsad = 0xffffffffu;
        for (int k = 0; k < 4; k++) {
            const int m = enc_hevc_modes[k];
            int dc = 0;
            if (lane == 0) dc = enc_hevc_pred_prep(s.line, n, log2n, m, p == 0, s.fl);
            dc = __shfl_sync(kFull, dc, 0);
            __syncwarp();
            unsigned sad = 0;
            for (int i = lane; i < n * n; i += 32) {
                const int xx = i & (n - 1), yy = i >> log2n;
                sad +=
                    (unsigned)enc_abs(src[yy * f.ss[p] + xx] -
                                      enc_hevc_pred_at(s.fl, n, log2n, m, p == 0, dc, xx, yy));
            }
            sad = wsum(sad);
            if (sad < bsad) bsad = sad, best = m;
            __syncwarp();
        }
    }
    int dc = 0;
    if (lane == 0) dc = enc_hevc_pred_prep(s.line, n, log2n, best, p == 0, s.fl);
    dc = __shfl_sync(kFull, dc, 0);
    __syncwarp();
    uint8_t *rec = f.rec[p] + (ptrdiff_t)y * f.cs[p] + x;
    for (int i = lane; i < n * n; i += 32) {
        const int xx = i & (n - 1), yy = i >> log2n;
        rec[yy * f.cs[p] + xx] = enc_hevc_pred_at(s.fl, n, log2n, best, p == 0, dc, xx, yy);
    }
    __syncwarp();
    return best;
}

// Intra CTU (enc_tmpl.h hevc_i_ctu).
__device__ void w_hevc_i_ctu(const EncFrame &f, int cx, int cy, WarpScratch &s, const Mats &M,
                             int lane) {
    EncUnitStat st = enc_stat_zero();
    for (int q = 0; q < 4; q++) {
        const int xc = cx * 32 + (q & 1) * 16, yc = cy * 32 + (q >> 1) * 16;
        const int bm = w_intra_pred(f, 0, xc, yc, 16, 4, xc, yc, -1, s, lane);
        if (f.energy) {
            const uint32_t e = w_ssd16(f, xc, yc, lane);
            if (lane == 0) f.energy[(yc / 16) * f.mb_w + xc / 16] = e;
        }
        if (f.mv4)
            for (int i = lane; i < 16; i += 32) {
                VidkMv zero = {0, 0};
                f.mv4[(ptrdiff_t)(yc / 4 + (i >> 2)) * (f.W / 4) + xc / 4 + (i & 3)] = zero;
            }
        w_tb(f, 0, xc, yc, 4, st, s, M, lane);
        for (int p = 1; p < 3; p++) {
            w_intra_pred(f, p, xc / 2, yc / 2, 8, 3, xc, yc, bm, s, lane);
            w_tb(f, p, xc / 2, yc / 2, 3, st, s, M, lane);
        }
        st.parts[VIDK_ENC_PART_INTRA]++;
        st.bits_mode += 5;
    }
    if (lane == 0) f.stat[cy * f.uw + cx] = st;
}

// ---- H.264 intra macroblock (enc_tmpl.h h264_i_mb), one warp ----------------------------

struct H264Scratch {
    EncNb nb, cnb[2];
    uint8_t prm[256];   // the chosen luma prediction
    uint8_t cpm[2][64]; // the chosen chroma prediction
    int32_t w[16][16];
    int16_t lev[16][16];
    int32_t wdc[16], dc[16];
    int16_t dcl[16];
    int32_t cw[2][4][16];
    int16_t clev[2][4][16];
    int32_t cdc[2][4];
    int16_t cdcl[2][16];
};

__device__ void w_h264_i_mb(const EncFrame &f, int mbx, int mby, H264Scratch &s, int lane) {
    EncUnitStat st = enc_stat_zero();
    const int x0 = mbx * 16, y0 = mby * 16, qp = f.qp, ss = f.ss[0], cs = f.cs[0];
    const uint8_t *src = f.src[0] + (ptrdiff_t)y0 * ss + x0;
    uint8_t *rec = f.rec[0] + (ptrdiff_t)y0 * cs + x0;
    // Neighbours (enc_h264_nb), one sample per lane: luma top / left by lanes 0-15 / 16-31,
    // then chroma top / left of Cb and Cr by lanes 0-7 / 8-15 / 16-23 / 24-31.
    {
        const int T = mby > 0 && !enc_h264_slice_start(mby, f.uh, f.slices), L = mbx > 0;
        const uint8_t *r0 = f.rec[0];
        if (lane < 16)
            s.nb.top[lane] = T ? ENC_LDREC(r0 + (ptrdiff_t)(y0 - 1) * cs + x0 + lane) : 0;
        else
            s.nb.left[lane - 16] =
                L ? ENC_LDREC(r0 + (ptrdiff_t)(y0 + lane - 16) * cs + x0 - 1) : 0;
        const int p = 1 + (lane >> 4), k = lane & 7, cx = mbx * 8, cy = mby * 8;
        const uint8_t *rc = f.rec[p];
        EncNb &cn = s.cnb[p - 1];
        if (!(lane & 8))
            cn.top[k] = T ? ENC_LDREC(rc + (ptrdiff_t)(cy - 1) * f.cs[p] + cx + k) : 0;
        else
            cn.left[k] = L ? ENC_LDREC(rc + (ptrdiff_t)(cy + k) * f.cs[p] + cx - 1) : 0;
        if (lane < 3) {
            EncNb &nb = lane == 0 ? s.nb : s.cnb[lane - 1];
            const int px = lane ? cx : x0, py = lane ? cy : y0;
            nb.has_top = T, nb.has_left = L;
            nb.tl =
                T && L ? ENC_LDREC(f.rec[lane] + (ptrdiff_t)(py - 1) * f.cs[lane] + px - 1) : 0;
        }
    }
    __syncwarp();
    // Mode m's prediction by lane m (luma) and lane 4 + m (chroma, both planes), each in
    // the lane's own memory; the winners copy theirs to shared memory below.
    int ok = 0;
    uint32_t sad = 0xffffffffu;
    uint8_t pm[256];
    if (lane < 4) {
        ok = enc_h264_pred16(&s.nb, lane, pm);
        if (ok) sad = enc_sad(src, ss, pm, 16, 16, 16);
    } else if (lane < 8) {
        const int m = lane - 4;
        ok = enc_h264_predc(&s.cnb[0], m, pm) && enc_h264_predc(&s.cnb[1], m, pm + 64);
        if (ok)
            sad = enc_sad(f.src[1] + (ptrdiff_t)(mby * 8) * f.ss[1] + mbx * 8, f.ss[1], pm, 8,
                          8, 8) +
                  enc_sad(f.src[2] + (ptrdiff_t)(mby * 8) * f.ss[2] + mbx * 8, f.ss[2], pm + 64,
                          8, 8, 8);
    }
    int bm = 2, cm = 0;
    uint32_t bsad = 0xffffffffu, csad = 0xffffffffu;
    for (int m = 0; m < 4; m++) { // the scalar order: first strictly smaller wins
        const int okl = __shfl_sync(kFull, ok, m), okc = __shfl_sync(kFull, ok, 4 + m);
        const uint32_t sl = __shfl_sync(kFull, sad, m), sc = __shfl_sync(kFull, sad, 4 + m);
        if (okl && sl < bsad) bsad = sl, bm = m;
        if (okc && sc < csad) csad = sc, cm = m;
    }
    if (lane == bm)
        for (int i = 0; i < 256; i++)
            s.prm[i] = pm[i];
    if (lane == 4 + cm)
        for (int i = 0; i < 128; i++)
            s.cpm[i >> 6][i & 63] = pm[i];
    __syncwarp();
    for (int i = lane; i < 256; i += 32)
        rec[(i >> 4) * cs + (i & 15)] = s.prm[i];
    for (int i = lane; i < 128; i += 32) {
        const int p = 1 + (i >> 6), k = i & 63;
        f.rec[p][(ptrdiff_t)(mby * 8 + (k >> 3)) * f.cs[p] + mbx * 8 + (k & 7)] =
            s.cpm[p - 1][k];
    }
    if (f.mv4)
        for (int i = lane; i < 16; i += 32) {
            VidkMv zero = {0, 0};
            f.mv4[(ptrdiff_t)(mby * 4 + (i >> 2)) * (f.W / 4) + mbx * 4 + (i & 3)] = zero;
        }
    __syncwarp();
    if (f.energy) {
        const uint32_t e = w_ssd16(f, x0, y0, lane);
        if (lane == 0) f.energy[mby * f.mb_w + mbx] = e;
    }
    unsigned bits = 0, nz0 = 0, nzc[2] = {0, 0};
    int nz;
    // Luma: AC of block `lane` (lanes 0..15); chroma: block lane & 3 of plane (lane >> 2) - 3
    // (lanes 16..23).
    {
        const int qbits = 15 + qp / 6;
        const int32_t dz = vidk_h264_deadzone(qbits, 1);
        int32_t mf[16];
        if (lane < 16) {
            for (int k = 0; k < 16; k++)
                mf[k] = k ? f.mf4y[k] : 0;
            const int bx = (lane & 3) * 4, by = (lane >> 2) * 4;
            vidk_h264_sub_fdct(4, s.w[lane], src + by * ss + bx, ss, rec + by * cs + bx, cs);
            (void)vidk_h264_quant(16, s.lev[lane], s.w[lane], mf, qbits, dz);
            s.wdc[lane] = s.w[lane][0];
            bits += enc_block_bits(s.lev[lane] + 1, 15, &nz);
            nz0 += (unsigned)nz;
        } else if (lane < 24) {
            const int qc = f.qpc, qb = 15 + qc / 6, p = (lane - 16) >> 2, b = lane & 3;
            for (int k = 0; k < 16; k++)
                mf[k] = k ? f.mf4c[k] : 0;
            const int bx = (b & 1) * 4, by = (b >> 1) * 4;
            const uint8_t *cs_ =
                f.src[p + 1] + (ptrdiff_t)(mby * 8 + by) * f.ss[p + 1] + mbx * 8 + bx;
            const uint8_t *cr =
                f.rec[p + 1] + (ptrdiff_t)(mby * 8 + by) * f.cs[p + 1] + mbx * 8 + bx;
            vidk_h264_sub_fdct(4, s.cw[p][b], cs_, f.ss[p + 1], cr, f.cs[p + 1]);
            (void)vidk_h264_quant(16, s.clev[p][b], s.cw[p][b], mf, qb,
                                  vidk_h264_deadzone(qb, 1));
            bits += enc_block_bits(s.clev[p][b] + 1, 15, &nz);
            nzc[p] += (unsigned)nz;
        }
    }
    __syncwarp();
    // DC transforms: lane 0 luma, lanes 1 and 2 chroma.
    if (lane == 0) {
        const int qbdc = 17 + qp / 6;
        int32_t mf[16], y[16];
        for (int k = 0; k < 16; k++)
            mf[k] = f.mf4y[0];
        vidk_h264_fdct_dc(0, y, s.wdc);
        (void)vidk_h264_quant(16, s.dcl, y, mf, qbdc, vidk_h264_deadzone(qbdc, 1));
        vidk_h264_idct_dc(0, s.dc, s.dcl, (uint32_t)f.ls4y[0], qp);
        bits += enc_block_bits(s.dcl, 16, &nz);
        nz0 += (unsigned)nz;
    } else if (lane < 3) {
        const int p = lane - 1, qc = f.qpc, qbdc = 16 + qc / 6;
        int32_t mf[16], y[16], wdc[16];
        for (int k = 0; k < 16; k++) {
            mf[k] = f.mf4c[0];
            wdc[k] = k < 4 ? s.cw[p][k][0] : 0;
        }
        vidk_h264_fdct_dc(1, y, wdc);
        for (int k = 4; k < 16; k++)
            y[k] = 0;
        (void)vidk_h264_quant(16, s.cdcl[p], y, mf, qbdc, vidk_h264_deadzone(qbdc, 1));
        vidk_h264_idct_dc(1, s.cdc[p], s.cdcl[p], (uint32_t)f.ls4c[0], qc);
        bits += enc_block_bits(s.cdcl[p], 4, &nz);
        nzc[p] += (unsigned)nz;
    }
    __syncwarp();
    // Reconstruction of every 4x4 block, levels out.
    if (lane < 16) {
        const int bx = (lane & 3) * 4, by = (lane >> 2) * 4;
        s.lev[lane][0] = s.dcl[lane];
        enc_store_levels(&f, 0, x0 + bx, y0 + by, s.lev[lane], 4);
        vidk_h264_deq_idct_add(4, rec + by * cs + bx, cs, s.lev[lane], f.ls4y, qp, &s.dc[lane]);
    } else if (lane < 24) {
        const int p = (lane - 16) >> 2, b = lane & 3, bx = (b & 1) * 4, by = (b >> 1) * 4;
        s.clev[p][b][0] = s.cdcl[p][b];
        enc_store_levels(&f, p + 1, mbx * 8 + bx, mby * 8 + by, s.clev[p][b], 4);
        vidk_h264_deq_idct_add(
            4, f.rec[p + 1] + (ptrdiff_t)(mby * 8 + by) * f.cs[p + 1] + mbx * 8 + bx,
            f.cs[p + 1], s.clev[p][b], f.ls4c, f.qpc, &s.cdc[p][b]);
    }
    bits = wsum(bits);
    nz0 = wsum(nz0);
    nzc[0] = wsum(nzc[0]);
    nzc[1] = wsum(nzc[1]);
    if (lane == 0) {
        st.bits_level = bits;
        st.nnz[0] = nz0, st.nnz[1] = nzc[0], st.nnz[2] = nzc[1];
        st.bits_mode = 1 + vidk_ue_bits((unsigned)bm) + vidk_ue_bits((unsigned)cm);
        st.parts[VIDK_ENC_PART_INTRA] = 1;
        f.stat[mby * f.uw + mbx] = st;
        if (f.mbi) f.mbi[mby * f.uw + mbx] = (uint16_t)(ENC_MBI_INTRA | bm | cm << 2);
    }
    __syncwarp();
}

} // namespace vidk_encw

#endif
