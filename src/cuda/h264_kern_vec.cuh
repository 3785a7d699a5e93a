// Fast dense inverse kernel of the CUDA H.264 transform family (opts.dense_vec).
// Part of the device code of h264_kern.cuh (included at its end; not on its own).
#ifndef VIDK_H264_KERN_VEC_CUH
#define VIDK_H264_KERN_VEC_CUH

namespace vidk_h264cu {

// ---- fast dense kernel (opts.dense_vec)
// -------------------------------------------------------
//
// The dense coefficient frame as it is (no compaction), the whole picture in and out, all
// fused. A CUDA block takes a run of kVecRun consecutive macroblocks (raster order) and
// has four luma warps, then chroma warps (two for 4:2:0, four for 4:2:2, none for 4:0:0):
// - luma: each luma warp sorts the run by transform type (ballot of the 8x8 flag; 4x4
//   and Intra16x16 macroblocks first, then 8x8 ones) and takes 8 consecutive entries, 4
//   lanes per macroblock, so that a warp runs one code path (only the warp that holds
//   the boundary between the two types diverges). 4x4: lane = a strip of 4 rows x 16
//   samples (four 4x4 blocks): two 16-byte loads of levels and one 16-byte load of
//   prediction per row, one 16-byte store per row; the Intra16x16 luma DC transform
//   goes across the 4 lanes of the macroblock through shared memory. 8x8: lane = one
//   8x8 block: one 16-byte load of levels, an 8-byte load of prediction and an 8-byte
//   store per row.
// - chroma: lane = one 8x8 region of one chroma plane of one macroblock (4:2:0: the whole
//   plane of the macroblock, its 2x2 DC transform in the lane; 4:2:2: the top or bottom
//   half, the 4x2 DC transform across the two lanes of the macroblock through shared
//   memory): a 16-byte load of levels, an 8-byte load of prediction and store per row.
// Every lane loads all its levels and prediction first (up to 12 outstanding 16-byte
// loads), then dequantises, transforms, adds and clips in registers: no transposes.
// Arithmetic: LevelScale << max(qP/6 - 4 (8x8: 6), 0) from an int32 table, one multiply-
// add and one shift per level; +32 added to the DC element once before the transforms
// (the 4- and 8-point transforms pass element 0 unchanged to every output, exactly, in
// wrapping 32-bit arithmetic), so the final (x + 32) >> 6 is one shift; Clip1(pred + r)
// without the +-512 clamp (|r| < 2^26 after the shift, so the sum cannot wrap).
// Phases (h264_emu.cuh runs them lane by lane): 0 macroblock words of the run; ballots;
// 1 sort order into shared memory; __syncwarp; 2 loads, DC rows into shared memory;
// __syncwarp; 3 everything else.

struct VecArgs {
    const int16_t *coef[3]; // level planes (row stride cw[p] values)
    uint8_t *pic[3];        // prediction in, reconstruction out (row pitch cw[p] bytes)
    int cw[3];              // plane widths
    const uint32_t *mb;     // VidkH264MbInfo as u32, frame raster order
    int mb_w;
    uint32_t mb0, mb1;        // macroblocks [mb0, mb1) of this launch
    int chroma;               // 0 4:0:0, 1 4:2:0, 2 4:2:2
    const int32_t *ls4, *ls8; // LevelScale as int32: [list 0..5][qP % 6][16 / 64]
};

constexpr int kVecRun = 32;                // macroblocks per CUDA block
constexpr int kVecLumaWarps = kVecRun / 8; // 8 macroblocks per luma warp
constexpr int kVecWarpWords = 32 + 32 * 4; // sort order + 4 DC words per lane
constexpr int kVecMaxThreads = 32 * (kVecLumaWarps + 4);
VK_HD constexpr int vec_threads(int chroma) {
    return 32 * (kVecLumaWarps + (chroma == 0 ? 0 : chroma == 1 ? 2 : 4));
}

enum { kVecIdle = 0, kVecLuma4 = 1, kVecLuma8 = 2, kVecChroma = 3 };

struct VecLane {
    int role;
    int p, x, y;     // plane, top-left sample of the lane's region
    int sub;         // luma: strip (4x4) or block (8x8) 0..3; chroma: half (4:2:2)
    uint32_t m;      // the macroblock's word
    uint32_t word;   // phase 0: word of macroblock run + lane (luma warps)
    bool valid, is8; // phase 0
    uint32_t c[32];  // levels, 16 bits each: 4 rows x 16 (luma 4x4) or 8 rows x 8
    uint32_t pr[16]; // prediction, bytes: 4 rows x 16 or 8 rows x 8
};

VK_HD int lo16(uint32_t w) {
    return (int)(int16_t)(uint16_t)(w & 0xffff);
}
VK_HD int hi16(uint32_t w) {
    return (int)(int16_t)(uint16_t)(w >> 16);
}
// Level at column `col` of a row whose words start at w.
VK_HD int lev_at(const uint32_t *w, int col) {
    return col & 1 ? hi16(w[col >> 1]) : lo16(w[col >> 1]);
}

// Dequantisation of 8.5.12.1 / 8.5.13.1 for one qP' as d = vidk_sra(c * (ls << sl) + rnd, sh):
// qP/6 >= T (4; 8x8: 6): (c * ls) << (qP/6 - T), modulo 2^32; else (c * ls + 2^(sh - 1)) >> sh
// with sh = T - qP/6 (|c * ls| < 2^29: exact).
struct Deq {
    int sl, sh;
    uint32_t rnd;
};
template <int N> VK_HD Deq deq_params(int qp) {
    constexpr int T = N == 4 ? 4 : 6;
    const int per = qp / 6;
    Deq q;
    q.sl = per >= T ? per - T : 0;
    q.sh = per >= T ? 0 : T - per;
    q.rnd = q.sh ? 1u << (q.sh - 1) : 0u;
    return q;
}
VK_HD uint32_t deq1(int c, uint32_t ls, const Deq &q) {
    return vidk_sra((uint32_t)c * ls + q.rnd, q.sh);
}

// Clip1Y(pred + r) for r = (x + 32) >> 6 of a transform output (|r| < 2^26: no wrap).
VK_HD uint32_t vec_clip(uint32_t pred, uint32_t r) {
#ifdef __CUDA_ARCH__
    return (uint32_t)__viaddmin_s32_relu((int)pred, (int)r, 255);
#else
    const int v = (int)pred + (int)r;
    return (uint32_t)(v < 0 ? 0 : v > 255 ? 255 : v);
#endif
}

// Int32 LevelScale row(s): n values at t, shifted left by sl.
template <int n> VK_HD void load_ls(const int32_t *t, int sl, uint32_t *ls) {
    chk_align(t, 16);
    for (int i = 0; i < n / 4; i++) {
        const int4 v = ldg(reinterpret_cast<const int4 *>(t) + i);
        ls[4 * i] = (uint32_t)v.x << sl, ls[4 * i + 1] = (uint32_t)v.y << sl;
        ls[4 * i + 2] = (uint32_t)v.z << sl, ls[4 * i + 3] = (uint32_t)v.w << sl;
    }
}

// One 4x4 block: d (dequantised, element 0 already final) -> 4 rows of 4 samples added to
// the prediction bytes and clipped; row i's 4 bytes of prediction are the word pw[i * ps]
// and its output goes to out[i * ps].
VK_HD void vec_block4(uint32_t *d, const uint32_t *pw, uint32_t *out, int ps) {
    d[0] += 32; // the rounding of every output (see above)
    vidk_h264_itx_2d(4, d);
    for (int i = 0; i < 4; i++) {
        const uint32_t p = pw[i * ps];
        uint32_t o = 0;
        for (int k = 0; k < 4; k++)
            o |= vec_clip(p >> (8 * k) & 0xff, vidk_sra(d[4 * i + k], 6)) << (8 * k);
        out[i * ps] = o;
    }
}

// Phase 0 (luma warps): the word of macroblock (run start + lane).
VK_HD void vec_p0(const VecArgs &a, uint32_t cta, int warp, int lane, VecLane &s) {
    s.role = kVecIdle;
    s.valid = s.is8 = false;
    s.word = 0;
    if (warp >= kVecLumaWarps) return;
    const uint32_t mbi = a.mb0 + cta * kVecRun + (uint32_t)lane;
    s.valid = mbi < a.mb1;
    if (!s.valid) return;
    s.word = ldg(a.mb + mbi);
    s.is8 = (s.word >> 24) & VIDK_H264_MB_8x8;
}

// Phase 1 (luma warps): the sorted position of the lane's macroblock (4x4 types first, in
// raster order, then 8x8), written to the warp's order table. m8 / mv: ballots of is8 /
// valid.
VK_HD void vec_p1(int warp, int lane, const VecLane &s, uint32_t m8, uint32_t mv,
                  uint32_t *wsm) {
    if (warp >= kVecLumaWarps || !s.valid) return;
    const uint32_t lt = (1u << lane) - 1;
    const uint32_t m4 = mv & ~m8;
    const int slot = s.is8 ? popc64(m4) + popc64(m8 & lt) : popc64(m4 & lt);
    wsm[slot] = (uint32_t)lane;
}

// Phase 2: the lane's region, its loads; DC rows that other lanes need into shared memory.
VK_HD void vec_p2(const VecArgs &a, uint32_t cta, int warp, int lane, uint32_t mv, VecLane &s,
                  uint32_t *wsm) {
    const uint32_t base = a.mb0 + cta * kVecRun;
    uint32_t mbi;
    if (warp < kVecLumaWarps) {
        const int slot = warp * 8 + (lane >> 2);
        if (slot >= popc64(mv)) return;
        mbi = base + wsm[slot];
        s.m = ldg(a.mb + mbi);
        s.sub = lane & 3;
        s.p = 0;
        const int mx = (int)(mbi % (uint32_t)a.mb_w), my = (int)(mbi / (uint32_t)a.mb_w);
        const int cw = a.cw[0];
        if ((s.m >> 24) & VIDK_H264_MB_8x8) {
            s.role = kVecLuma8;
            s.x = 16 * mx + 8 * (s.sub & 1), s.y = 16 * my + 8 * (s.sub >> 1);
            for (int i = 0; i < 8; i++) {
                const uint4 *q =
                    reinterpret_cast<const uint4 *>(a.coef[0] + (size_t)(s.y + i) * cw + s.x);
                const uint2 *r =
                    reinterpret_cast<const uint2 *>(a.pic[0] + (size_t)(s.y + i) * cw + s.x);
                chk_align(q, 16), chk_align(r, 8);
                const uint4 v = ldg(q);
                const uint2 u = *r;
                s.c[4 * i] = v.x, s.c[4 * i + 1] = v.y, s.c[4 * i + 2] = v.z,
                        s.c[4 * i + 3] = v.w;
                s.pr[2 * i] = u.x, s.pr[2 * i + 1] = u.y;
            }
        } else {
            s.role = kVecLuma4;
            s.x = 16 * mx, s.y = 16 * my + 4 * s.sub;
            for (int i = 0; i < 4; i++) {
                const uint4 *q =
                    reinterpret_cast<const uint4 *>(a.coef[0] + (size_t)(s.y + i) * cw + s.x);
                const uint4 *r =
                    reinterpret_cast<const uint4 *>(a.pic[0] + (size_t)(s.y + i) * cw + s.x);
                chk_align(q, 16), chk_align(r, 16);
                const uint4 v0 = ldg(q), v1 = ldg(q + 1);
                const uint4 u = *r;
                s.c[8 * i] = v0.x, s.c[8 * i + 1] = v0.y, s.c[8 * i + 2] = v0.z,
                        s.c[8 * i + 3] = v0.w;
                s.c[8 * i + 4] = v1.x, s.c[8 * i + 5] = v1.y, s.c[8 * i + 6] = v1.z,
                            s.c[8 * i + 7] = v1.w;
                s.pr[4 * i] = u.x, s.pr[4 * i + 1] = u.y, s.pr[4 * i + 2] = u.z,
                         s.pr[4 * i + 3] = u.w;
            }
            if ((s.m >> 24) & VIDK_H264_MB_I16x16) {
                // Row sub of the luma DC matrix (element 0 of each 4x4 block of the strip),
                // times A from the right: g[j] = sum_b A[j][b] c[b].
                for (int j = 0; j < 4; j++) {
                    uint32_t g = 0;
                    for (int b = 0; b < 4; b++)
                        g += hsign(j, b, (uint32_t)lev_at(s.c, 4 * b));
                    wsm[32 + 4 * lane + j] = g;
                }
            }
        }
        return;
    }
    // Chroma.
    const int cwp = warp - kVecLumaWarps, c422 = a.chroma == 2;
    const int p = 1 + (c422 ? cwp >> 1 : cwp);
    const int mbl = c422 ? 16 * (cwp & 1) + (lane >> 1) : lane;
    mbi = base + (uint32_t)mbl;
    if (mbi >= a.mb1) return;
    s.role = kVecChroma;
    s.m = ldg(a.mb + mbi);
    s.p = p;
    s.sub = c422 ? lane & 1 : 0;
    const int mx = (int)(mbi % (uint32_t)a.mb_w), my = (int)(mbi / (uint32_t)a.mb_w);
    const int cw = pick3(a.cw, p);
    s.x = 8 * mx, s.y = (c422 ? 16 : 8) * my + 8 * s.sub;
    const int16_t *cp = pick3(a.coef, p);
    const uint8_t *pp = pick3(a.pic, p);
    for (int i = 0; i < 8; i++) {
        const uint4 *q = reinterpret_cast<const uint4 *>(cp + (size_t)(s.y + i) * cw + s.x);
        const uint2 *r = reinterpret_cast<const uint2 *>(pp + (size_t)(s.y + i) * cw + s.x);
        chk_align(q, 16), chk_align(r, 8);
        const uint4 v = ldg(q);
        const uint2 u = *r;
        s.c[4 * i] = v.x, s.c[4 * i + 1] = v.y, s.c[4 * i + 2] = v.z, s.c[4 * i + 3] = v.w;
        s.pr[2 * i] = u.x, s.pr[2 * i + 1] = u.y;
    }
    if (c422) {
        // Rows 2 sub, 2 sub + 1 of the 4x2 chroma DC matrix, times B from the right.
        for (int bi = 0; bi < 2; bi++)
            for (int j = 0; j < 2; j++) {
                uint32_t g = 0;
                for (int b = 0; b < 2; b++)
                    g += hsign2(j, b, (uint32_t)lev_at(s.c + 4 * (4 * bi), 4 * b));
                wsm[32 + 4 * lane + 2 * bi + j] = g;
            }
    }
}

// Phase 3, luma 4x4 strip.
VK_HD void vec_luma4(const VecArgs &a, const VecLane &s, int lane, const uint32_t *wsm) {
    const int qp = (int)(s.m & 0xff), flags = (int)(s.m >> 24);
    const int list = flags & VIDK_H264_MB_INTRA ? 0 : 3;
    const Deq q = deq_params<4>(qp);
    const int32_t *lsp = a.ls4 + (list * 6 + qp % 6) * 16;
    uint32_t ls[16];
    load_ls<16>(lsp, q.sl, ls);
    uint32_t dcv[4] = {0, 0, 0, 0};
    const bool dc = flags & VIDK_H264_MB_I16x16;
    if (dc) {
        const uint32_t *g = wsm + 32 + 4 * (lane & ~3); // g[4 a + j]: row a of the macroblock
        const uint32_t ls_dc = (uint32_t)ldg(lsp);      // LevelScale4x4(qP % 6, 0, 0)
        for (int j = 0; j < 4; j++) {
            uint32_t f = 0;
            for (int r = 0; r < 4; r++)
                f += hsign(s.sub, r, g[4 * r + j]);
            dcv[j] = vidk_h264_dc_scale(kDcLuma, f, ls_dc, qp);
        }
    }
    uint32_t out[16];
    for (int j = 0; j < 4; j++) {
        uint32_t d[16];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++)
                d[4 * i + k] = deq1(lev_at(s.c + 8 * i, 4 * j + k), ls[4 * i + k], q);
        if (dc) d[0] = dcv[j];
        vec_block4(d, s.pr + j, out + j, 4);
    }
    uint8_t *row = a.pic[0] + (size_t)s.y * a.cw[0] + s.x;
    for (int i = 0; i < 4; i++) {
        uint4 *o = reinterpret_cast<uint4 *>(row + (size_t)i * a.cw[0]);
        chk_align(o, 16);
        *o = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
    }
}

// Phase 3, luma 8x8 block.
VK_HD void vec_luma8(const VecArgs &a, const VecLane &s) {
    const int qp = (int)(s.m & 0xff), flags = (int)(s.m >> 24);
    const int list = flags & VIDK_H264_MB_INTRA ? 0 : 3;
    const Deq q = deq_params<8>(qp);
    const int32_t *lsp = a.ls8 + (list * 6 + qp % 6) * 64;
    uint32_t d[64];
    for (int i = 0; i < 8; i++) {
        uint32_t ls[8];
        load_ls<8>(lsp + 8 * i, q.sl, ls);
        for (int k = 0; k < 8; k++)
            d[8 * i + k] = deq1(lev_at(s.c + 4 * i, k), ls[k], q);
    }
    d[0] += 32; // the rounding of every output
    vidk_h264_itx_2d(8, d);
    uint8_t *row = a.pic[0] + (size_t)s.y * a.cw[0] + s.x;
    for (int i = 0; i < 8; i++) {
        uint32_t o[2] = {0, 0};
        for (int k = 0; k < 8; k++)
            o[k >> 2] |= vec_clip(s.pr[2 * i + (k >> 2)] >> (8 * (k & 3)) & 0xff,
                                  vidk_sra(d[8 * i + k], 6))
                         << (8 * (k & 3));
        uint2 *dst = reinterpret_cast<uint2 *>(row + (size_t)i * a.cw[0]);
        chk_align(dst, 8);
        *dst = make_uint2(o[0], o[1]);
    }
}

// Phase 3, chroma: one 8x8 region (four 4x4 blocks with DC).
VK_HD void vec_chroma(const VecArgs &a, const VecLane &s, int lane, const uint32_t *wsm) {
    const int p = s.p, c422 = a.chroma == 2;
    const int qp = (int)(s.m >> (8 * p)) & 0xff, flags = (int)(s.m >> 24);
    const int list = (flags & VIDK_H264_MB_INTRA ? 0 : 3) + p;
    const Deq q = deq_params<4>(qp);
    uint32_t ls[16];
    load_ls<16>(a.ls4 + (list * 6 + qp % 6) * 16, q.sl, ls);
    // DC: f = B c B (4:2:0, 2x2, in the lane) or A c B (4:2:2, 4x2, rows 2 sub + bi here).
    const int type = c422 ? kDcChroma422 : kDcChroma;
    const int qpdc = c422 ? qp + 3 : qp;
    const uint32_t ls_dc = (uint32_t)ldg(a.ls4 + (list * 6 + qpdc % 6) * 16);
    uint32_t dcv[4];
    if (c422) {
        const uint32_t *g = wsm + 32 + 4 * (lane & ~1); // g[2 a + j], rows a = 0..3
        for (int bi = 0; bi < 2; bi++)
            for (int j = 0; j < 2; j++) {
                uint32_t f = 0;
                for (int r = 0; r < 4; r++)
                    f += hsign(2 * s.sub + bi, r, g[2 * r + j]);
                dcv[2 * bi + j] = vidk_h264_dc_scale(type, f, ls_dc, qpdc);
            }
    } else {
        uint32_t g[2][2];
        for (int r = 0; r < 2; r++)
            for (int j = 0; j < 2; j++) {
                g[r][j] = 0;
                for (int b = 0; b < 2; b++)
                    g[r][j] += hsign2(j, b, (uint32_t)lev_at(s.c + 4 * (4 * r), 4 * b));
            }
        for (int bi = 0; bi < 2; bi++)
            for (int j = 0; j < 2; j++)
                dcv[2 * bi + j] = vidk_h264_dc_scale(
                    type, hsign2(bi, 0, g[0][j]) + hsign2(bi, 1, g[1][j]), ls_dc, qpdc);
    }
    uint32_t out[16]; // 8 rows x 2 words
    for (int bi = 0; bi < 2; bi++)
        for (int bj = 0; bj < 2; bj++) {
            uint32_t d[16];
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < 4; k++)
                    d[4 * i + k] =
                        deq1(lev_at(s.c + 4 * (4 * bi + i), 4 * bj + k), ls[4 * i + k], q);
            d[0] = dcv[2 * bi + bj];
            vec_block4(d, s.pr + 8 * bi + bj, out + 8 * bi + bj, 2);
        }
    const int cw = pick3(a.cw, p);
    uint8_t *row = pick3(a.pic, p) + (size_t)s.y * cw + s.x;
    for (int i = 0; i < 8; i++) {
        uint2 *dst = reinterpret_cast<uint2 *>(row + (size_t)i * cw);
        chk_align(dst, 8);
        *dst = make_uint2(out[2 * i], out[2 * i + 1]);
    }
}

VK_HD void vec_p3(const VecArgs &a, int lane, const VecLane &s, const uint32_t *wsm) {
    if (s.role == kVecLuma4)
        vec_luma4(a, s, lane, wsm);
    else if (s.role == kVecLuma8)
        vec_luma8(a, s);
    else if (s.role == kVecChroma)
        vec_chroma(a, s, lane, wsm);
}

// Defined only in the file that launches it (h264_frame.cu): a non-template kernel may have
// one definition in the library.
#ifdef VIDK_H264_OWNS_VEC_KERNEL
__global__ void __launch_bounds__(kVecMaxThreads, 2) vec_kernel(const VecArgs a) {
    __shared__ uint32_t sm[kVecMaxThreads / 32][kVecWarpWords];
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    uint32_t *wsm = sm[warp];
    VecLane s;
    vec_p0(a, blockIdx.x, warp, lane, s);
    const uint32_t m8 = __ballot_sync(0xffffffffu, s.is8),
                   mv = __ballot_sync(0xffffffffu, s.valid);
    vec_p1(warp, lane, s, m8, mv, wsm);
    __syncwarp();
    vec_p2(a, blockIdx.x, warp, lane, mv, s, wsm);
    __syncwarp();
    vec_p3(a, lane, s, wsm);
}
#endif

} // namespace vidk_h264cu

#endif
