// Device code of the H.264 transform family (included by src/cuda/h264.cu only).
//
// Arithmetic is the C reference's: the functions of src/h264_core.h, which src/h264.c
// calls too (the kernels call them on register arrays; a few are written in another form
// for speed where noted: the per-lane DC Hadamard, the vec path's dequantiser and clip):
// - inverse path: levels are int16, everything after is uint32 arithmetic that wraps
//   modulo 2^32, right shifts are arithmetic (vidk_sra) on the two's-complement value;
// - forward path: int32 transforms (exact for 8-bit residuals), quantiser with a 64-bit
//   product, levels clamped to +-32767.
// Every kernel is templated on the optimisation switches of VidkH264CudaOpts so that
// each combination is one straight-line instance (no run-time branches on the options).
//
// Each kernel body is split into phases at its synchronisation points (__syncwarp /
// __syncthreads), each phase a __host__ __device__ function of one thread's state: the
// kernels call the phases with the barriers in between, and h264_emu.cuh runs the same
// functions on the host (every lane of a warp through phase k before any enters k + 1)
// so that the index arithmetic is tested on machines without a GPU.
#ifndef VIDK_H264_KERN_CUH
#define VIDK_H264_KERN_CUH

#include <stdint.h>

#include "h264_core.h"

#define VK_HD __host__ __device__ __forceinline__

namespace vidk_h264cu {

// ---- packed upload format ---------------------------------------------------------------
// One record per block of a size class, block b at rec + b * rec_bytes<N, FUSED>():
//   4x4: u32[0] = meta | mask << 16, u32[1] = dc_index, u32[2] = value offset, u32[3] = pos
//   8x8: u32[0] = meta,              u32[1] = value offset, u32[2..3] = 64-bit mask
//   fused: then the block's prediction samples, N*N bytes, raster.
//   plane mode (PLANE): no samples; 8x8 records are 32 bytes, u32[4] = pos.
// pos = x / 4 (bits 0-11) | y / 4 (bits 12-23) | plane (bits 24-25): where the block sits
// in the device-resident picture planes of plane mode (written by the host staging of
// opts.host; 0 in the records of the single-threaded staging).
// meta = qP' (bits 0-6) | scaling list 0..5 (bits 7-9) | element 0 from a DC group (bit 10).
// Levels: dense (sparse 0): N*N int16 per block at val + b * N*N; sparse: the non-zero
// levels of block b in raster order at val + offset (the significance mask says where).
// Outputs: N*N bytes (fused) or N*N int16 residuals per block at out + b * N*N.
constexpr uint32_t kMetaQpMask = 0x7f;
constexpr int kMetaListShift = 7;
constexpr uint32_t kMetaDc = 1u << 10;
constexpr int kRecHeader = 16;
constexpr int kMaxThreads = 512; // threads per CUDA block of the inverse kernels

template <int N, bool FUSED, bool PLANE = false> VK_HD constexpr int rec_bytes() {
    return PLANE ? (N == 4 ? kRecHeader : 2 * kRecHeader) : kRecHeader + (FUSED ? N * N : 0);
}
constexpr uint32_t kPosMask = 0xfff;
constexpr int kPosYShift = 12, kPosPlaneShift = 24;

// A DC group (VidkH264DcList entry): meta = LevelScale4x4(qP,DC % 6, 0, 0) (bits 0-15) |
// qP,DC (bits 16-23; qP + 3 for 4:2:2 chroma) | VidkH264DcType (bits 24-25); 16 levels.
constexpr int kDcLuma = 0, kDcChroma = 1, kDcChroma422 = 2;

struct InvArgs {
    const uint8_t *rec;      // records of the size class
    const int16_t *val;      // levels (dense or sparse)
    void *out;               // reconstructed samples or residuals
    const int16_t *ls;       // LevelScale of the class: [list 0..5][qP % 6][N*N]
    const uint32_t *dc_meta; // DC groups
    const int16_t *dc_coef;  // 16 levels per group
    uint32_t b0, b1;         // blocks [b0, b1) of this launch
    int work;                // rounds per thread
    uint8_t *pl[3];          // plane mode: prediction in, reconstruction out
    int pitch[3];            // plane mode: row pitch of pl[p] in bytes
};

// Dense baseline: the coefficient frame as it is.
struct DenseArgs {
    const int16_t *coef[3]; // level planes (row stride cw[p] values)
    int cw[3];              // plane widths
    uint32_t first[4];      // index of the first 4x4 cell of plane p; first[3] = total
    const uint32_t *mb;     // VidkH264MbInfo as u32: qp0 | qp1 << 8 | qp2 << 16 | flags << 24
    int mb_w;
    int c422;                 // 4:2:2 chroma
    const int16_t *ls4, *ls8; // [6][6][16], [6][6][64]
    uint8_t *pic[3];          // fused: prediction in, reconstruction out (pitch cw[p])
    int16_t *res[3];          // not fused: residual planes (stride cw[p])
};

// Forward path, one band of macroblock rows (band-local pointers).
struct FwdArgs {
    const uint8_t *src[3], *pred[3]; // samples, row stride pw[p]
    int16_t *lev[3];                 // levels, row stride pw[p]
    int pw[3];
    const uint32_t *mb; // the band's macroblocks (VidkH264MbInfo as u32)
    int mb_w;
    int chroma;               // VidkChroma: 0 (4:0:0), 1 (4:2:0), 2 (4:2:2)
    const int32_t *mf4, *mf8; // quantiser factors [6][6][16], [6][6][64]
    unsigned long long *nnz;  // the band's non-zero level count
};

// ---- host/device primitives -------------------------------------------------------------

template <typename T> VK_HD T ldg(const T *p) {
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
}

VK_HD int popc64(uint64_t v) {
#ifdef __CUDA_ARCH__
    return __popcll(v);
#else
    return __builtin_popcountll(v);
#endif
}

// Emulation only (a host variable): vector accesses that would be misaligned on the
// device (x86 does not fault); the emulated entry points report them as an error.
inline int g_emu_misaligned = 0;
VK_HD void chk_align(const void *p, unsigned a) {
#ifndef __CUDA_ARCH__
    if ((uintptr_t)p & (a - 1)) g_emu_misaligned++;
#else
    (void)p, (void)a;
#endif
}

VK_HD int imin(int a, int b) {
    return a < b ? a : b;
}

// Element p of a kernel-parameter array without a dynamic index (which would copy the
// parameters to local memory).
template <typename T> VK_HD T pick3(const T (&v)[3], int p) {
    return p == 0 ? v[0] : p == 1 ? v[1] : v[2];
}

// ---- arithmetic shared by every kernel --------------------------------------------------

// The arithmetic (transforms, dequantisation, quantiser, DC scaling, clipping) is
// src/h264_core.h's, force-inlined: called on register arrays with constant indices.

// 8.5.12.1 / 8.5.13.1 for one level of an N x N block.
template <int N> VK_HD uint32_t dequant(int c, int ls, int qp) {
    return vidk_h264_dequant1(c, ls, qp / 6, N == 4 ? 4 : 6);
}

// Clip1Y(pred + r) (8.5.14): r clamped first so that the sum cannot wrap (the clipped
// result is unchanged: |r| > 512 saturates either way).
VK_HD uint32_t add_clip(uint32_t pred, uint32_t r) {
    return (uint32_t)vidk_h264_add_clip((int)pred, r);
}

// Residual as it is downloaded when the add is not fused: clamped to +-512, which keeps
// Clip1Y(pred + r) for every 8-bit pred. Returned as the 16-bit pattern.
VK_HD uint32_t res16(uint32_t r) {
    return (uint32_t)(uint16_t)(int16_t)vidk_clip3((int)r, -512, 512);
}

// Signs of the DC transform matrices: A (4x4, symmetric) = {1 1 1 1}, {1 1 -1 -1},
// {1 -1 -1 1}, {1 -1 1 -1}: row i is negative where bit a of nibble i of 0xA6C0 is set;
// B (2x2) = {1 1}, {1 -1}.
VK_HD uint32_t hsign(int i, int a, uint32_t v) {
    return ((0xA6C0u >> (4 * i + a)) & 1) ? 0u - v : v;
}
VK_HD uint32_t hsign2(int i, int a, uint32_t v) {
    return (i & a & 1) ? 0u - v : v;
}

// Element k of the DC transform of 8.5.10 / 8.5.11.1 (the encoder's forward DC transform
// uses the same matrices): luma f = A c A (4x4), 4:2:0 chroma f = B c B (2x2), 4:2:2
// chroma f = A c B (4 rows x 2). Sums wrap modulo 2^32 like the C code's; the order of
// modular additions does not matter.
VK_HD uint32_t dc_hadamard(int type, const uint32_t *c, int k) {
    uint32_t f = 0;
    if (type == kDcLuma) {
        const int i = k >> 2, j = k & 3;
        for (int a = 0; a < 4; a++) {
            uint32_t g = 0;
            for (int b = 0; b < 4; b++)
                g += hsign(j, b, c[4 * a + b]);
            f += hsign(i, a, g);
        }
    } else {
        // Constant loop bounds keep c in registers (no local-memory indexing).
        const int i = k >> 1, j = k & 1;
        for (int a = 0; a < 4; a++) {
            if (type == kDcChroma && a >= 2) break;
            uint32_t g = 0;
            for (int b = 0; b < 2; b++)
                g += hsign2(j, b, c[2 * a + b]);
            f += type == kDcChroma ? hsign2(i, a, g) : hsign(i, a, g);
        }
    }
    return f;
}

// The dequantised DC value k of group g (element 0 of the block with dc_index 16 g + k).
VK_HD uint32_t dc_value(const uint32_t *__restrict__ dc_meta,
                        const int16_t *__restrict__ dc_coef, uint32_t dcidx) {
    const uint32_t g = dcidx >> 4;
    const uint32_t meta = ldg(dc_meta + g);
    const uint4 *p = reinterpret_cast<const uint4 *>(dc_coef + (size_t)g * 16);
    chk_align(p, 16);
    const uint4 lo = ldg(p), hi = ldg(p + 1);
    const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    uint32_t c[16];
    for (int i = 0; i < 8; i++) {
        c[2 * i] = (uint32_t)(int32_t)(int16_t)(w[i] & 0xffff);
        c[2 * i + 1] = (uint32_t)(int32_t)(int16_t)(w[i] >> 16);
    }
    const int type = (int)(meta >> 24) & 3;
    return vidk_h264_dc_scale(type, dc_hadamard(type, c, (int)(dcidx & 15)), meta & 0xffff,
                              (int)(meta >> 16) & 0xff);
}

// N int16 (8 or 16 bytes, aligned) -> N ints.
template <int N> VK_HD void load_row16(const int16_t *p, int *v) {
    chk_align(p, 2 * N);
    if (N == 4) {
        const uint2 w = ldg(reinterpret_cast<const uint2 *>(p));
        v[0] = (int16_t)(w.x & 0xffff), v[1] = (int16_t)(w.x >> 16);
        v[2] = (int16_t)(w.y & 0xffff), v[3] = (int16_t)(w.y >> 16);
    } else {
        const uint4 w = ldg(reinterpret_cast<const uint4 *>(p));
        const uint32_t a[4] = {w.x, w.y, w.z, w.w};
        for (int i = 0; i < 4; i++) {
            v[2 * i] = (int16_t)(a[i] & 0xffff);
            v[2 * i + 1] = (int16_t)(a[i] >> 16);
        }
    }
}

// Store N 16-bit values (low halves of v) / N bytes (low bytes of v), aligned.
template <int N> VK_HD void store_row16(int16_t *p, const uint32_t *v) {
    chk_align(p, 2 * N);
    if (N == 4) {
        *reinterpret_cast<uint2 *>(p) = make_uint2(v[0] | v[1] << 16, v[2] | v[3] << 16);
    } else {
        *reinterpret_cast<uint4 *>(p) = make_uint4(v[0] | v[1] << 16, v[2] | v[3] << 16,
                                                   v[4] | v[5] << 16, v[6] | v[7] << 16);
    }
}
template <int N> VK_HD void store_row8(uint8_t *p, const uint32_t *v) {
    chk_align(p, N);
    const uint32_t lo = v[0] | v[1] << 8 | v[2] << 16 | v[3] << 24;
    if (N == 4)
        *reinterpret_cast<uint32_t *>(p) = lo;
    else
        *reinterpret_cast<uint2 *>(p) =
            make_uint2(lo, v[4] | v[5] << 8 | v[6] << 16 | v[7] << 24);
}
// N bytes of a row (aligned) -> N values; ro: read-only data (the texture path).
template <int N> VK_HD void load_row8(const uint8_t *p, uint32_t *v, bool ro) {
    chk_align(p, N);
    uint32_t w0, w1 = 0;
    if (N == 4) {
        const uint32_t *q = reinterpret_cast<const uint32_t *>(p);
        w0 = ro ? ldg(q) : *q;
    } else {
        const uint2 *q = reinterpret_cast<const uint2 *>(p);
        const uint2 w = ro ? ldg(q) : *q;
        w0 = w.x, w1 = w.y;
    }
    for (int i = 0; i < N; i++)
        v[i] = ((i < 4 ? w0 : w1) >> (8 * (i & 3))) & 0xff;
}

// ---- compact inverse kernels ----------------------------------------------------------------

// Header of block b's record.
struct Header {
    int qp, list;
    bool dc;
    uint32_t dcidx, voff;
    uint64_t mask;
    uint32_t pos;
};

template <int N, bool FUSED, bool PLANE = false>
VK_HD Header load_header(const uint8_t *__restrict__ rec, uint32_t b) {
    constexpr size_t RB = (size_t)rec_bytes<N, FUSED, PLANE>();
    chk_align(rec + (size_t)b * RB, 16);
    const uint4 h = ldg(reinterpret_cast<const uint4 *>(rec + (size_t)b * RB));
    Header r;
    r.pos = h.w;
    if (N == 8 && PLANE)
        r.pos = ldg(reinterpret_cast<const uint32_t *>(rec + (size_t)b * RB + kRecHeader));
    r.qp = (int)(h.x & kMetaQpMask);
    r.list = (int)(h.x >> kMetaListShift) & 7;
    r.dc = N == 4 && (h.x & kMetaDc);
    if (N == 4) {
        r.mask = h.x >> 16;
        r.dcidx = h.y;
        r.voff = h.z;
    } else {
        r.mask = (uint64_t)h.z | (uint64_t)h.w << 32;
        r.dcidx = 0;
        r.voff = h.y;
    }
    return r;
}

// Levels of row r of block b.
template <int N, bool SPARSE>
VK_HD void load_levels_row(const int16_t *__restrict__ val, uint32_t b, const Header &h, int r,
                           int *c) {
    if (!SPARSE) {
        load_row16<N>(val + (size_t)b * (N * N) + r * N, c);
        return;
    }
    uint32_t off = h.voff + (uint32_t)popc64(h.mask & ((1ull << (N * r)) - 1));
    const uint32_t bits = (uint32_t)(h.mask >> (N * r)) & ((1u << N) - 1);
    for (int k = 0; k < N; k++) {
        c[k] = 0;
        if (bits >> k & 1) c[k] = ldg(val + off++);
    }
}

// Dequantised row r (element 0 of row 0 replaced by the DC value for DC blocks).
template <int N>
VK_HD void dequant_row(const InvArgs &a, const Header &h, int r, const int *c, uint32_t *d) {
    int ls[N];
    load_row16<N>(a.ls + ((h.list * 6 + h.qp % 6) * N + r) * N, ls);
    for (int k = 0; k < N; k++)
        d[k] = dequant<N>(c[k], ls[k], h.qp);
    // 8.5.12: blocks of Intra16x16 luma and of chroma take c_00 from the DC transform.
    if (N == 4 && h.dc && r == 0) d[0] = dc_value(a.dc_meta, a.dc_coef, h.dcidx);
}

// Words of shared memory per warp.
template <int N, bool LINE, bool COAL, bool FUSED> VK_HD constexpr int warp_smem_words() {
    return LINE ? (32 / N) * N * (N + 1) : COAL ? 32 * (N * N * (FUSED ? 1 : 2) / 4 + 1) : 0;
}

// Line per thread: lane handles row r of block b (N consecutive lanes per block), then
// column r after a transpose through the warp's shared memory with the padded stride
// N + 1 (conflict-free both ways). Phases, separated by __syncwarp (no implicit
// warp-synchronous execution since Volta):
//   1 levels, dequantisation, row transform; store transposed
//   2 load column r
//   3 column transform, rounding; coalesced: store back as rows; else: write column r
//   4 (coalesced) load row r, write it as one aligned vector
// blk_sm: the block's N * (N + 1) words.
template <int N> struct LineState {
    uint32_t d[N];
    Header h;
    uint32_t b;
    int r;
    bool act;
};

template <int N, bool SPARSE, bool FUSED, bool PLANE = false>
VK_HD void line_p1(const InvArgs &a, LineState<N> &s, uint32_t *blk_sm) {
    if (s.act) {
        int c[N];
        s.h = load_header<N, FUSED, PLANE>(a.rec, s.b);
        load_levels_row<N, SPARSE>(a.val, s.b, s.h, s.r, c);
        dequant_row<N>(a, s.h, s.r, c, s.d);
    } else {
        for (int k = 0; k < N; k++)
            s.d[k] = 0;
    }
    vidk_h264_itx_1d(N, s.d, 1); // row r (8.5.12.2: each row first)
    for (int k = 0; k < N; k++)
        blk_sm[k * (N + 1) + s.r] = s.d[k];
}

template <int N> VK_HD void line_p2(LineState<N> &s, const uint32_t *blk_sm) {
    for (int k = 0; k < N; k++)
        s.d[k] = blk_sm[s.r * (N + 1) + k];
}

template <int N, bool FUSED, bool PLANE = false>
VK_HD void line_out_row(const InvArgs &a, const LineState<N> &s, uint32_t *d) {
    if (PLANE) {
        // Row r of the block in the device-resident plane: prediction in, samples out
        // (blocks of a call are disjoint, so no other thread touches these bytes).
        const int p = (int)(s.h.pos >> kPosPlaneShift) & 3;
        const int x = (int)(s.h.pos & kPosMask) * 4,
                  y = (int)(s.h.pos >> kPosYShift & kPosMask) * 4;
        uint8_t *row = pick3(a.pl, p) + (size_t)(y + s.r) * (size_t)pick3(a.pitch, p) + x;
        uint32_t p8[N];
        load_row8<N>(row, p8, false);
        for (int k = 0; k < N; k++)
            d[k] = add_clip(p8[k], d[k]);
        store_row8<N>(row, d);
    } else if (FUSED) {
        uint32_t p[N];
        load_row8<N>(a.rec + (size_t)s.b * rec_bytes<N, FUSED>() + kRecHeader + s.r * N, p,
                     true);
        for (int k = 0; k < N; k++)
            d[k] = add_clip(p[k], d[k]);
        store_row8<N>(static_cast<uint8_t *>(a.out) + (size_t)s.b * (N * N) + s.r * N, d);
    } else {
        for (int k = 0; k < N; k++)
            d[k] = res16(d[k]);
        store_row16<N>(static_cast<int16_t *>(a.out) + (size_t)s.b * (N * N) + s.r * N, d);
    }
}

template <int N, bool COAL, bool FUSED>
VK_HD void line_p3(const InvArgs &a, LineState<N> &s, uint32_t *blk_sm) {
    vidk_h264_itx_1d(N, s.d, 1); // column r: d[k] = (row k, column r)
    for (int k = 0; k < N; k++)
        s.d[k] = vidk_h264_round6(s.d[k]);
    if (COAL) {
        for (int k = 0; k < N; k++)
            blk_sm[k * (N + 1) + s.r] = s.d[k];
        return;
    }
    // The paper's uncoalesced write-back: lane r stores column r, stride N.
    if (!s.act) return;
    const uint8_t *pred = a.rec + (size_t)s.b * rec_bytes<N, FUSED>() + kRecHeader;
    for (int k = 0; k < N; k++) {
        const size_t o = (size_t)s.b * (N * N) + k * N + s.r;
        if (FUSED)
            static_cast<uint8_t *>(a.out)[o] =
                (uint8_t)add_clip(ldg(pred + k * N + s.r), s.d[k]);
        else
            static_cast<int16_t *>(a.out)[o] = (int16_t)res16(s.d[k]);
    }
}

template <int N, bool FUSED, bool PLANE = false>
VK_HD void line_p4(const InvArgs &a, LineState<N> &s, const uint32_t *blk_sm) {
    uint32_t d[N];
    for (int k = 0; k < N; k++)
        d[k] = blk_sm[s.r * (N + 1) + k];
    if (s.act) line_out_row<N, FUSED, PLANE>(a, s, d);
}

// Rows then columns of a whole block in registers, then (x + 32) >> 6.
template <int N> VK_HD void itx_block(uint32_t *d) {
    vidk_h264_itx_2d(N, d);
    for (int k = 0; k < N * N; k++)
        d[k] = vidk_h264_round6(d[k]);
}

// Block per thread: lane handles block warp_first + lane entirely in registers.
//   1 everything; not coalesced: the thread stores its block (16-byte vectors, stride one
//     block); coalesced: stages it in the warp's shared memory (padded stride W + 1)
//   2 (coalesced) consecutive lanes store consecutive words of the warp's output
template <int N, bool COAL, bool SPARSE, bool FUSED>
VK_HD void block_p1(const InvArgs &a, uint32_t warp_first, int lane, uint32_t *warp_sm) {
    constexpr int W = N * N * (FUSED ? 1 : 2) / 4; // output words per block
    const uint32_t b = warp_first + (uint32_t)lane;
    if (b >= a.b1) return;
    uint32_t d[N * N];
    uint32_t o[W];
    const Header h = load_header<N, FUSED>(a.rec, b);
    uint32_t off = h.voff;
    for (int i = 0; i < N; i++) {
        int c[N];
        if (SPARSE) {
            for (int k = 0; k < N; k++) {
                c[k] = 0;
                if (h.mask >> (i * N + k) & 1) c[k] = ldg(a.val + off++);
            }
        } else {
            load_row16<N>(a.val + (size_t)b * (N * N) + i * N, c);
        }
        dequant_row<N>(a, h, i, c, d + i * N);
    }
    itx_block<N>(d);
    const uint8_t *pred = a.rec + (size_t)b * rec_bytes<N, FUSED>() + kRecHeader;
    for (int i = 0; i < N; i++) {
        uint32_t *v = d + i * N;
        if (FUSED) {
            uint32_t p[N];
            load_row8<N>(pred + i * N, p, true);
            for (int k = 0; k < N; k++)
                v[k] = add_clip(p[k], v[k]);
            for (int k = 0; k < N; k += 4)
                o[(i * N + k) / 4] = v[k] | v[k + 1] << 8 | v[k + 2] << 16 | v[k + 3] << 24;
        } else {
            for (int k = 0; k < N; k += 2)
                o[(i * N + k) / 2] = res16(v[k]) | res16(v[k + 1]) << 16;
        }
    }
    if (COAL) {
        for (int k = 0; k < W; k++)
            warp_sm[lane * (W + 1) + k] = o[k];
    } else {
        uint4 *dst =
            reinterpret_cast<uint4 *>(static_cast<uint8_t *>(a.out) + (size_t)b * W * 4);
        chk_align(dst, 16);
        for (int k = 0; k < W / 4; k++)
            dst[k] = make_uint4(o[4 * k], o[4 * k + 1], o[4 * k + 2], o[4 * k + 3]);
    }
}

template <int N, bool FUSED>
VK_HD void block_p2(const InvArgs &a, uint32_t warp_first, int lane, const uint32_t *warp_sm) {
    constexpr int W = N * N * (FUSED ? 1 : 2) / 4;
    const uint32_t left = a.b1 - warp_first, nvalid = left < 32u ? left : 32u;
    uint32_t *dst = reinterpret_cast<uint32_t *>(static_cast<uint8_t *>(a.out) +
                                                 (size_t)warp_first * W * 4);
    chk_align(dst, 4);
    for (uint32_t i = (uint32_t)lane; i < nvalid * W; i += 32)
        dst[i] = warp_sm[(i / W) * (W + 1) + i % W];
}

// Blocks per warp and round.
template <int N, bool LINE> VK_HD constexpr int blocks_per_warp() {
    return LINE ? 32 / N : 32;
}

// First block of warp `warp` in round g of CUDA block x: CUDA block x handles blocks
// [b0 + x * work * R, + work * R), R = warps * blocks per warp, one contiguous run per
// warp and round.
template <int N, bool LINE>
VK_HD uint32_t warp_first_block(const InvArgs &a, uint32_t x, int nwarps, int warp, int g) {
    const uint32_t per_round = (uint32_t)nwarps * blocks_per_warp<N, LINE>();
    return a.b0 + x * (uint32_t)a.work * per_round + (uint32_t)g * per_round +
           (uint32_t)(warp * blocks_per_warp<N, LINE>());
}

// PLANE (plane mode) only with LINE, COAL and FUSED false (its records carry no samples).
template <int N, bool LINE, bool COAL, bool SPARSE, bool FUSED, bool PLANE = false>
__global__ void __launch_bounds__(kMaxThreads) inv_kernel(const InvArgs a) {
    extern __shared__ uint32_t smem[];
    constexpr int WS = warp_smem_words<N, LINE, COAL, FUSED>();
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    uint32_t *warp_sm = smem + warp * WS;
    for (int g = 0; g < a.work; g++) {
        const uint32_t wf =
            warp_first_block<N, LINE>(a, blockIdx.x, (int)(blockDim.x >> 5), warp, g);
        if (wf >= a.b1) break; // warp-uniform
        if (LINE) {
            LineState<N> s;
            s.b = wf + (uint32_t)(lane / N);
            s.r = lane % N;
            s.act = s.b < a.b1;
            uint32_t *blk_sm = warp_sm + (lane / N) * N * (N + 1);
            line_p1<N, SPARSE, FUSED, PLANE>(a, s, blk_sm);
            __syncwarp();
            line_p2<N>(s, blk_sm);
            __syncwarp();
            line_p3<N, COAL, FUSED>(a, s, blk_sm);
            if (COAL) {
                __syncwarp();
                line_p4<N, FUSED, PLANE>(a, s, blk_sm);
            }
            __syncwarp(); // the next round rewrites the shared memory
        } else {
            block_p1<N, COAL, SPARSE, FUSED>(a, wf, lane, warp_sm);
            if (COAL) {
                __syncwarp();
                block_p2<N, FUSED>(a, wf, lane, warp_sm);
                __syncwarp();
            }
        }
    }
}

// ---- dense baseline
// ---------------------------------------------------------------------------

// One thread per 4x4 cell of every plane; in 8x8 macroblocks the top-left cell's thread
// does the 8x8 block and the other three return (the baseline's divergence).
template <int N, bool FUSED>
VK_HD void dense_block(const DenseArgs &a, int p, int x, int y, int qp, int list, bool has_dc,
                       uint32_t dcv) {
    const int cw = pick3(a.cw, p);
    const int16_t *ls = (N == 4 ? a.ls4 : a.ls8) + (list * 6 + qp % 6) * N * N;
    uint32_t d[N * N];
    for (int i = 0; i < N; i++) {
        int c[N], l[N];
        load_row16<N>(pick3(a.coef, p) + (size_t)(y + i) * cw + x, c);
        load_row16<N>(ls + i * N, l);
        for (int k = 0; k < N; k++)
            d[i * N + k] = dequant<N>(c[k], l[k], qp);
    }
    if (has_dc) d[0] = dcv;
    itx_block<N>(d);
    for (int i = 0; i < N; i++) {
        uint32_t *v = d + i * N;
        if (FUSED) {
            uint8_t *row = pick3(a.pic, p) + (size_t)(y + i) * cw + x;
            uint32_t pr[N];
            load_row8<N>(row, pr, false);
            for (int k = 0; k < N; k++)
                v[k] = add_clip(pr[k], v[k]);
            store_row8<N>(row, v);
        } else {
            for (int k = 0; k < N; k++)
                v[k] = res16(v[k]);
            store_row16<N>(pick3(a.res, p) + (size_t)(y + i) * cw + x, v);
        }
    }
}

template <bool FUSED> VK_HD void dense_cell(const DenseArgs &a, uint32_t t) {
    if (t >= a.first[3]) return;
    const int p = t >= a.first[2] ? 2 : t >= a.first[1] ? 1 : 0;
    const uint32_t u = t - (p == 0 ? 0u : p == 1 ? a.first[1] : a.first[2]);
    const int cw = pick3(a.cw, p), ncx = cw / 4;
    const int cx = (int)(u % (uint32_t)ncx), cy = (int)(u / (uint32_t)ncx);
    const int x = 4 * cx, y = 4 * cy;
    const int mw = p ? 8 : 16, mh = p ? (a.c422 ? 16 : 8) : 16;
    const int mx = x / mw, my = y / mh;
    const uint32_t m = ldg(a.mb + (size_t)my * a.mb_w + mx);
    const int qp = (int)(m >> (8 * p)) & 0xff, flags = (int)(m >> 24);
    const int list = (flags & VIDK_H264_MB_INTRA ? 0 : 3) + p;
    if (!p && (flags & VIDK_H264_MB_8x8)) {
        if ((cx | cy) & 1) return;
        dense_block<8, FUSED>(a, p, x, y, qp, list, false, 0);
        return;
    }
    const bool has_dc = p || (flags & VIDK_H264_MB_I16x16);
    uint32_t dcv = 0;
    if (has_dc) {
        // The macroblock's DC matrix sits in the DC slots of its blocks.
        const int x0 = mx * mw, y0 = my * mh;
        const int cols = p ? 2 : 4, rows = p && !a.c422 ? 2 : 4;
        const int type = !p ? kDcLuma : a.c422 ? kDcChroma422 : kDcChroma;
        uint32_t c[16];
        for (int i = 0; i < 16; i++)
            c[i] = 0;
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++)
                c[i * cols + j] = (uint32_t)(int32_t)ldg(
                    pick3(a.coef, p) + (size_t)(y0 + 4 * i) * cw + x0 + 4 * j);
        const int qpdc = type == kDcChroma422 ? qp + 3 : qp;
        const int k = ((y - y0) / 4) * cols + (x - x0) / 4;
        // LevelScale4x4(qP,DC % 6, 0, 0) = weightScale(0, 0) * normAdjust: element 0 of ls4.
        const uint32_t ls = (uint32_t)ldg(a.ls4 + (list * 6 + qpdc % 6) * 16);
        dcv = vidk_h264_dc_scale(type, dc_hadamard(type, c, k), ls, qpdc);
    }
    dense_block<4, FUSED>(a, p, x, y, qp, list, has_dc, dcv);
}

template <bool FUSED>
__global__ void __launch_bounds__(kMaxThreads) dense_kernel(const DenseArgs a) {
    dense_cell<FUSED>(a, blockIdx.x * blockDim.x + threadIdx.x);
}

} // namespace vidk_h264cu

// The rest of the family, by topic.
#include "h264_kern_vec.cuh" // fast dense inverse kernel
#include "h264_kern_fwd.cuh" // forward path

#endif
