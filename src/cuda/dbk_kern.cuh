// The H.264 deblocking filter on the device: deblock_kernel (the bS come from
// deblock_bs_kernel, enc_kern.cuh). Included by enc_kern.cuh for the library, and on the
// host by tests/test_dbk_emu.cpp through the SIMT emulator (src/cuda/simt_emu.h), which
// runs its logic without a GPU. Needs EncFrame (enc/enc_core.h), h264_deblock_core.h and
// kDbkMail (encode_cuda.cuh) from the includer.
#ifndef VIDK_CUDA_DBK_KERN_CUH
#define VIDK_CUDA_DBK_KERN_CUH

#include "h264_deblock_core.h"

namespace {

// deblock_kernel: one block of two warps per macroblock row, the row's macroblocks left to
// right, each filtered in shared memory: the luma warp on a tile of rows -4..15 x columns
// -4..15 around the macroblock, the chroma warp on a Cb and a Cr tile of rows -4..7 x
// columns -4..7 (the planes do not meet; the warps never wait for each other). The columns
// left of the macroblock are carried over from the one before; lanes 0-15 filter a line
// each (luma: line i; chroma: Cb lines 0-7, Cr 8-15) with vidk_h264_dbk_line, the line's
// edges one after the other in registers (dbk_tile_run: a row for the vertical edges, then
// a column for the horizontal ones), a warp barrier between the directions. The result is
// enc_core.h enc_h264_deblock_mb's in raster order, because
// - a macroblock's vertical edges read and write only its own rows (and its left
//   neighbour's last columns): they follow the macroblock before it, nothing of the row
//   above;
// - its horizontal edges read the rows above it (luma 4, chroma 2), final once the upper
//   macroblock's right neighbour has filtered its vertical edges (they write the upper one's
//   last three columns): then the row above posts them in a mailbox, each 32-bit word beside
//   the frame's tag in one 64-bit word (relaxed stores and loads, single-copy atomic: a word
//   that carries this frame's tag is the final one, no fence and no flag), and this row
//   polls for them, fetched one macroblock ahead;
// - the rows that the row below filters (luma 13-15, chroma 7) are stored by the row below
//   only; the others of a macroblock after its horizontal edges (columns 0-11) and after the
//   next one's vertical edges (columns 12-15).
// Samples are read through L2 (__ldcg); every 32-bit word of the picture is written by one
// warp.
constexpr int kDbkLW = 5, kDbkCW = 3; // the tiles' pitches in words: 20 and 12 samples
// (kDbkMail, the mailbox words a macroblock: encode_cuda.cuh)
struct DbkTiles {
    uint32_t w[kDbkLW * 20 + 2 * kDbkCW * 12]; // luma 20 rows, then Cb, Cr 12 rows each
};
constexpr int kDbkRows = 1; // macroblock rows a block
using DbkShared = DbkTiles; // a block's shared memory
// Word tw (0: columns -4..-1, 1: 0..3, ...) of tile row tr (0: row -4) of plane p, in the
// tile and in the picture (macroblock x of row r).
__device__ inline uint32_t *dbk_tw(DbkTiles &T, int p, int tr, int tw) {
    return T.w + (p ? kDbkLW * 20 + (p - 1) * kDbkCW * 12 + tr * kDbkCW : tr * kDbkLW) + tw;
}
__device__ inline uint32_t *dbk_gw(const EncFrame &f, int p, int r, int x, int tr, int tw) {
    const int n = p ? 8 : 16;
    return reinterpret_cast<uint32_t *>(f.rec[p] + (ptrdiff_t)(n * r + tr - 4) * f.cs[p] +
                                        n * x + 4 * tw - 4);
}
#if VIDK_SIMT_EMU // blocks run one after another there: plain loads and stores
inline unsigned long long dbk_mail_ld(const unsigned long long *p) {
    return *(const volatile unsigned long long *)p;
}
inline void dbk_mail_st(unsigned long long *p, unsigned long long v) {
    *(volatile unsigned long long *)p = v;
}
#else
__device__ inline unsigned long long dbk_mail_ld(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline void dbk_mail_st(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
#endif
// A line's run of edges in a tile, in registers: the line's samples v[k] (k = 0: column or
// row -4 of the macroblock) at t[k] (kRow: a row of the tile, word-aligned) or t[k tp] (a
// column), its edges at k = 4, 8, ... filtered in order with vidk_h264_dbk_line (bS be[e],
// 0: not filtered; none: the line is not read); luma reads k = 0..19 and writes 1..18, chroma
// reads 2..9 and writes 3..8 (a row: the words that hold them).
template <bool kChroma, bool kRow>
__device__ inline void dbk_tile_run(uint8_t *t, const unsigned *be, const VidkH264DbkQ &dq) {
    constexpr int kEdges = kChroma ? 2 : 4, kN = kChroma ? 12 : 20;
    constexpr int r0 = kChroma ? 2 : 0, r1 = kChroma ? 10 : 20; // read
    constexpr int w0 = kChroma ? 3 : 1, w1 = kChroma ? 9 : 19;  // written
    constexpr int s = kN;                                       // a column's step
    unsigned any = 0;
#pragma unroll
    for (int e = 0; e < kEdges; e++)
        any |= be[e];
    if (!any) return;
    uint8_t v[kN];
    if (kRow) {
#pragma unroll
        for (int w = r0 / 4; w < (r1 + 3) / 4; w++) {
            const uint32_t word = reinterpret_cast<const uint32_t *>(t)[w];
#pragma unroll
            for (int k = 0; k < 4; k++)
                v[4 * w + k] = (uint8_t)(word >> 8 * k);
        }
    } else {
#pragma unroll
        for (int k = r0; k < r1; k++)
            v[k] = t[k * s];
    }
#pragma unroll
    for (int e = 0; e < kEdges; e++)
        if (be[e]) vidk_h264_dbk_line(v + 4 + 4 * e, 1, (int)be[e], kChroma, &dq);
    if (kRow) { // whole words (every one written was read whole)
#pragma unroll
        for (int w = w0 / 4; w < (w1 + 3) / 4; w++)
            reinterpret_cast<uint32_t *>(t)[w] =
                (uint32_t)v[4 * w] | (uint32_t)v[4 * w + 1] << 8 |
                (uint32_t)v[4 * w + 2] << 16 | (uint32_t)v[4 * w + 3] << 24;
    } else {
#pragma unroll
        for (int k = w0; k < w1; k++)
            t[k * s] = v[k];
    }
}
// A filtering warp: kChroma 0 the luma, 1 both chroma planes.
template <bool kChroma>
__device__ void dbk_filter_warp(const EncFrame &f, const uint8_t *bs, unsigned long long *mail,
                                unsigned tag, DbkTiles &T, int r, int lane) {
    constexpr int kWords = kChroma ? 1 : 2; // own / stored words a lane
    constexpr int kEdges = kChroma ? 2 : 4, tp = 4 * (kChroma ? kDbkCW : kDbkLW);
    constexpr int tc = kChroma ? 2 : 4;               // the tile word of the last four columns
    constexpr int n = kChroma ? 8 : 16;               // lines of a plane
    constexpr int kMail = kChroma ? 8 : 16;           // mailbox words
    constexpr int m0 = kChroma ? 16 : 0;              // the first in a macroblock's mailbox
    const int uw = f.uw, last = r == f.uh - 1;        // the last row stores its rows 13-15 / 7
    const int own = last ? n : n - (kChroma ? 1 : 3); // rows 0..own-1 stored by this row
    const bool act = lane < 16;                       // lanes with a line
    const int p = kChroma ? 1 + ((lane >> 3) & 1) : 0, i = kChroma ? lane & 7 : lane & 15;
    const VidkH264DbkQ dq = vidk_h264_dbk_q(kChroma ? f.qpc : f.qp);
    uint8_t *const tile = reinterpret_cast<uint8_t *>(dbk_tw(T, p, 0, 0));
    // the macroblock's own samples (j = lane + 32 k; luma: row j / 4 word j % 4; chroma:
    // plane j / 16, row (j % 16) / 2, word j % 2) and what its horizontal edges leave final
    // (words 1..tc - 1 of rows 0..own - 1 of each plane, then words 1..tc of the rows above
    // that the edges write: luma -3..-1, chroma -1; the rows above only below row 0)
    int op[kWords], orow[kWords], ow[kWords], sp[kWords], srow[kWords], sw[kWords];
    for (int k = 0; k < kWords; k++) {
        const int j = lane + 32 * k;
        op[k] = kChroma ? 1 + (j >> 4) : 0;
        orow[k] = 4 + (kChroma ? (j & 15) >> 1 : j >> 2);
        ow[k] = 1 + (kChroma ? j & 1 : j & 3);
        const int per = own * (tc - 1);                            // own words of a plane
        const int planes = kChroma ? 2 : 1, ab = kChroma ? 2 : 12; // above: words a plane
        sp[k] = -1;
        if (j < planes * per) {
            const int q = j / per, jj = j % per;
            sp[k] = q + kChroma, srow[k] = 4 + jj / (tc - 1), sw[k] = 1 + jj % (tc - 1);
        } else if (r > 0 && j < planes * (per + ab)) {
            const int jj = j - planes * per, q = jj / ab, a = jj % ab;
            sp[k] = q + kChroma, srow[k] = 4 - ab / tc + a / tc, sw[k] = 1 + a % tc;
        }
    }
    // the mailbox word this lane takes (lanes < kMail): luma rows 12..15 words 1-4 (lane:
    // row 12 + lane / 4, word 1 + lane % 4); chroma rows 6..7 words 1-2 of Cb, then Cr (lane:
    // plane 1 + lane / 4, row 6 + (lane / 2) % 2, word 1 + lane % 2), as tile rows of the
    // macroblock below (rr, -4..-1 / -2..-1) and of this one (rr + n)
    const bool mact = lane < kMail;
    const int mp = kChroma ? 1 + ((lane >> 2) & 1) : 0;
    const int mrr = kChroma ? 2 + ((lane >> 1) & 1) : (lane >> 2) & 3;
    const int mw = 1 + (kChroma ? lane & 1 : lane & 3);
    uint32_t saved = 0; // the word of the mailbox taken before the next macroblock's edges
    uint32_t pf[kWords];
    for (int k = 0; k < kWords; k++)
        pf[k] = __ldcg(dbk_gw(f, op[k], r, 0, orow[k], ow[k]));
    unsigned pb = bs[(size_t)r * uw * 32 + lane];
    const unsigned long long *above =
        mail + ((size_t)(r > 0 ? r - 1 : 0) * uw) * kDbkMail + m0 + lane;
    unsigned long long *mine = mail + ((size_t)r * uw) * kDbkMail + m0 + lane;
    // the rows above of the macroblock, in flight from the end of the one before (stale when
    // the row above has not posted them yet: polled again before the horizontal edges)
    unsigned long long mv = r > 0 && mact ? dbk_mail_ld(above) : 0;
    for (int x = 0; x < uw; x++) {
        // the last four columns of the macroblock before become the tile's first four
        const uint32_t cw = act ? *dbk_tw(T, p, 4 + i, tc) : 0;
        __syncwarp();
        if (act) *dbk_tw(T, p, 4 + i, 0) = cw;
        for (int k = 0; k < kWords; k++)
            *dbk_tw(T, op[k], orow[k], ow[k]) = pf[k];
        const unsigned b = pb; // bS entry `lane` of this macroblock
        if (x + 1 < uw) {      // the next macroblock's samples and bS, in flight meanwhile
            for (int k = 0; k < kWords; k++)
                pf[k] = __ldcg(dbk_gw(f, op[k], r, x + 1, orow[k], ow[k]));
            pb = bs[((size_t)r * uw + x + 1) * 32 + lane];
        }
        __syncwarp();
        unsigned bv[kEdges], bh[kEdges]; // bS of this lane's line at each edge
        for (int e = 0; e < kEdges; e++) {
            const int j = kChroma ? 8 * e + (i >> 1) : 4 * e + (i >> 2);
            bv[e] = __shfl_sync(0xffffffffu, b, j);
            bh[e] = __shfl_sync(0xffffffffu, b, 16 + j);
        }
        if (act) dbk_tile_run<kChroma, true>(tile + (4 + i) * tp, bv, dq); // vertical edges
        __syncwarp();
        if (x > 0) { // the macroblock before is final: its last columns, and its mail
            if (act && i < own) *dbk_gw(f, p, r, x, 4 + i, 0) = *dbk_tw(T, p, 4 + i, 0);
            if (!last && mact)
                dbk_mail_st(mine + (size_t)(x - 1) * kDbkMail,
                            (unsigned long long)tag << 32 |
                                (mw == tc ? *dbk_tw(T, mp, mrr + n, 0) : saved));
        }
        if (r > 0) { // the rows above, once posted
            if (mact) {
                while ((unsigned)(mv >> 32) != tag)
                    mv = dbk_mail_ld(above + (size_t)x * kDbkMail);
                *dbk_tw(T, mp, mrr, mw) = (uint32_t)mv;
                if (x + 1 < uw) mv = dbk_mail_ld(above + (size_t)(x + 1) * kDbkMail);
            }
            __syncwarp();
        }
        if (act) dbk_tile_run<kChroma, false>(tile + 4 + i, bh, dq); // horizontal edges
        __syncwarp();
        for (int k = 0; k < kWords; k++)
            if (sp[k] >= 0)
                *dbk_gw(f, sp[k], r, x, srow[k], sw[k]) = *dbk_tw(T, sp[k], srow[k], sw[k]);
        if (mact) saved = *dbk_tw(T, mp, mrr + n, mw);
        if (x == uw - 1) { // the row's last macroblock: its last columns and mail too
            if (act && i < own) *dbk_gw(f, p, r, x, 4 + i, tc) = *dbk_tw(T, p, 4 + i, tc);
            if (!last && mact)
                dbk_mail_st(mine + (size_t)x * kDbkMail, (unsigned long long)tag << 32 | saved);
        }
    }
}
constexpr int kDbkThreads = 64; // the luma warp, the chroma warp
__global__ void __launch_bounds__(kDbkThreads)
    deblock_kernel(const EncFrame f, const uint8_t *bs, unsigned long long *mail,
                   unsigned tag) {
    __shared__ DbkTiles T;
    const int r = blockIdx.x, lane = threadIdx.x & 31;
    if (threadIdx.x < 32)
        dbk_filter_warp<false>(f, bs, mail, tag, T, r, lane);
    else
        dbk_filter_warp<true>(f, bs, mail, tag, T, r, lane);
}

} // namespace

#endif
