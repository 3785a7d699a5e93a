// Device code of the H.264 transform family (included by src/cuda/h264.cu only).
//
// Arithmetic is the C reference's (src/h264.c), operation for operation:
// - inverse path: levels are int16, everything after is uint32 arithmetic that wraps
//   modulo 2^32, right shifts are arithmetic (sra) on the two's-complement value;
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
VK_HD int imax(int a, int b) {
    return a > b ? a : b;
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

} // namespace vidk_h264cu

#endif
