// Forward path of the CUDA H.264 transform family: transform, quantiser, DC levels.
// Part of the device code of h264_kern.cuh (included at its end; not on its own).
#ifndef VIDK_H264_KERN_FWD_CUH
#define VIDK_H264_KERN_FWD_CUH

namespace vidk_h264cu {

// ---- forward path ---------------------------------------------------------------------------

// Threads per macroblock of the forward kernel: 64 luma lines (16 4x4 blocks x 4 rows,
// or 4 8x8 blocks x 8 rows on the first 32), then 16 (4:2:0) or 32 (4:2:2) per chroma
// plane: one CUDA block per macroblock.
VK_HD constexpr int fwd_threads(int chroma) {
    return chroma == 0 ? 64 : chroma == 1 ? 96 : 128;
}
constexpr int kFwdWarpWords = 4 * 8 * 9; // the larger of 8 padded 4x4 and 4 padded 8x8 blocks

// One thread's line of the forward kernel: plane, block, row / column r, parameters.
struct FwdLine {
    int n;        // 4 or 8; 0: idle thread
    int p, x, yb; // plane, block position (band-local)
    int r;
    int qp, list;
    bool intra, has_dc;
    int dck; // index of the block in its DC matrix
    int32_t v[8];
};

VK_HD FwdLine fwd_line_setup(const FwdArgs &a, int mbi, int t) {
    FwdLine s = {};
    const int mx = mbi % a.mb_w, my = mbi / a.mb_w;
    const uint32_t m = ldg(a.mb + mbi);
    const int flags = (int)(m >> 24);
    s.intra = flags & VIDK_H264_MB_INTRA;
    if (t < 64) {
        s.p = 0;
        s.qp = (int)(m & 0xff);
        s.list = s.intra ? 0 : 3;
        if (flags & VIDK_H264_MB_8x8) {
            if (t >= 32) return s; // n = 0
            const int k = t >> 3;
            s.n = 8, s.x = mx * 16 + (k & 1) * 8, s.yb = my * 16 + (k >> 1) * 8, s.r = t & 7;
        } else {
            const int k = t >> 2;
            s.n = 4, s.x = mx * 16 + (k & 3) * 4, s.yb = my * 16 + (k >> 2) * 4, s.r = t & 3;
            s.has_dc = flags & VIDK_H264_MB_I16x16;
            s.dck = k;
        }
    } else {
        const int cl = a.chroma == 2 ? 32 : 16, u = t - 64, k = (u % cl) >> 2;
        s.p = 1 + u / cl;
        s.qp = (int)(m >> (8 * s.p)) & 0xff;
        s.list = (s.intra ? 0 : 3) + s.p;
        s.n = 4, s.x = mx * 8 + (k & 1) * 4,
        s.yb = my * (a.chroma == 2 ? 16 : 8) + (k >> 1) * 4;
        s.r = u & 3;
        s.has_dc = true;
        s.dck = k;
    }
    return s;
}

// Phase 1: residual row r, row transform (rows first, as the C reference), store
// transposed. blk_sm: the block's N * (N + 1) words.
template <int N> VK_HD void fwd_p1(const FwdArgs &a, FwdLine &s, uint32_t *blk_sm) {
    const int pw = pick3(a.pw, s.p);
    uint32_t sv[N], pv[N];
    load_row8<N>(pick3(a.src, s.p) + (size_t)(s.yb + s.r) * pw + s.x, sv, true);
    load_row8<N>(pick3(a.pred, s.p) + (size_t)(s.yb + s.r) * pw + s.x, pv, true);
    for (int k = 0; k < N; k++)
        s.v[k] = (int32_t)sv[k] - (int32_t)pv[k];
    vidk_h264_ftx_1d(N, s.v, 1);
    for (int k = 0; k < N; k++)
        blk_sm[k * (N + 1) + s.r] = (uint32_t)s.v[k];
}

// Phase 2: load column r.
template <int N> VK_HD void fwd_p2(FwdLine &s, const uint32_t *blk_sm) {
    for (int k = 0; k < N; k++)
        s.v[k] = (int32_t)blk_sm[s.r * (N + 1) + k];
}

// Phase 3: column transform, quantisation, levels of column r; the DC coefficient of a
// DC block goes to dcw (the C code quantises it with factor 0, then overwrites it with the
// DC level). Returns the non-zero count.
template <int N> VK_HD unsigned fwd_p3(const FwdArgs &a, FwdLine &s, int32_t *dcw) {
    vidk_h264_ftx_1d(N, s.v, 1); // v[k] = w(row k, column r)
    const int32_t *mf = (N == 4 ? a.mf4 : a.mf8) + (s.list * 6 + s.qp % 6) * N * N;
    const int qbits = (N == 4 ? 15 : 16) + s.qp / 6;
    const uint32_t f = (uint32_t)vidk_h264_deadzone(qbits, s.intra);
    const int pw = pick3(a.pw, s.p);
    unsigned nz = 0;
    for (int k = 0; k < N; k++) {
        if (s.has_dc && k == 0 && s.r == 0) {
            dcw[s.p * 16 + s.dck] = s.v[0];
            continue;
        }
        const int l = vidk_h264_quant1(s.v[k], (uint32_t)ldg(mf + k * N + s.r), qbits, f);
        nz += l != 0;
        pick3(a.lev, s.p)[(size_t)(s.yb + k) * pw + s.x + s.r] = (int16_t)l;
    }
    return nz;
}

// Phase 4 (after __syncthreads): the DC transform and quantiser of quant_dc in
// src/h264_batch.c, one thread per DC level: luma on threads 0..15 (Intra16x16), chroma
// on the first 4 / 8 threads of each chroma plane. Returns the non-zero count.
VK_HD unsigned fwd_dc(const FwdArgs &a, int mbi, int t, const int32_t *dcw) {
    const int mx = mbi % a.mb_w, my = mbi / a.mb_w;
    const uint32_t m = ldg(a.mb + mbi);
    const int flags = (int)(m >> 24);
    const bool intra = flags & VIDK_H264_MB_INTRA;
    int p = -1, k = 0;
    if (t < 16 && (flags & VIDK_H264_MB_I16x16) && !(flags & VIDK_H264_MB_8x8)) {
        p = 0, k = t;
    } else if (t >= 64) {
        const int cl = a.chroma == 2 ? 32 : 16, u = t - 64;
        if (u % cl < (a.chroma == 2 ? 8 : 4)) p = 1 + u / cl, k = u % cl;
    }
    if (p < 0) return 0;
    const int type = !p ? kDcLuma : a.chroma == 2 ? kDcChroma422 : kDcChroma;
    const int qp = (int)(m >> (8 * p)) & 0xff, list = (intra ? 0 : 3) + p;
    const int qpdc = type == kDcChroma422 ? qp + 3 : qp;
    const int qbits = (type == kDcLuma ? 17 : 16) + qpdc / 6;
    // MF(qP,DC % 6, 0, 0) of the list: element 0 of its 4x4 factors.
    const uint32_t mf00 = (uint32_t)ldg(a.mf4 + (list * 6 + qpdc % 6) * 16);
    uint32_t c[16];
    for (int i = 0; i < 16; i++)
        c[i] = (uint32_t)dcw[p * 16 + i];
    const int l = vidk_h264_quant1((int32_t)dc_hadamard(type, c, k), mf00, qbits,
                                   (uint32_t)vidk_h264_deadzone(qbits, intra));
    const int cols = p ? 2 : 4;
    const int x = p ? mx * 8 : mx * 16, y = p ? my * (a.chroma == 2 ? 16 : 8) : my * 16;
    pick3(a.lev, p)[(size_t)(y + 4 * (k / cols)) * pick3(a.pw, p) + x + 4 * (k % cols)] =
        (int16_t)l;
    return l != 0;
}

// Defined only in the file that launches it (h264_forward.cu): a non-template kernel may have
// one definition in the library.
#ifdef VIDK_H264_OWNS_FWD_KERNEL
__global__ void __launch_bounds__(128) fwd_kernel(const FwdArgs a) {
    __shared__ uint32_t sm[4][kFwdWarpWords];
    __shared__ int32_t dcw[3 * 16];
    const int t = (int)threadIdx.x, lane = t & 31, mbi = (int)blockIdx.x;
    FwdLine s = fwd_line_setup(a, mbi, t);
    unsigned nz = 0;
    // Lines of a block are consecutive lanes; a warp is all 4x4, all 8x8 or all idle.
    uint32_t *blk_sm = sm[t >> 5] + (s.n == 8 ? (lane >> 3) * 72 : (lane >> 2) * 20);
    if (s.n == 8) {
        fwd_p1<8>(a, s, blk_sm);
        __syncwarp();
        fwd_p2<8>(s, blk_sm);
        nz += fwd_p3<8>(a, s, dcw);
    } else if (s.n == 4) {
        fwd_p1<4>(a, s, blk_sm);
        __syncwarp();
        fwd_p2<4>(s, blk_sm);
        nz += fwd_p3<4>(a, s, dcw);
    }
    __syncthreads();
    nz += fwd_dc(a, mbi, t, dcw);
    nz = __reduce_add_sync(0xffffffffu, nz);
    if (lane == 0 && nz) atomicAdd(a.nnz, (unsigned long long)nz);
}
#endif

} // namespace vidk_h264cu

#endif
