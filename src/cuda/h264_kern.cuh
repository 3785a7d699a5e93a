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

template <int N, bool FUSED, bool PLANE = false> VK_HD constexpr int rec_bytes()
{
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
    const int16_t *coef[3];  // level planes (row stride cw[p] values)
    int cw[3];               // plane widths
    uint32_t first[4];       // index of the first 4x4 cell of plane p; first[3] = total
    const uint32_t *mb;      // VidkH264MbInfo as u32: qp0 | qp1 << 8 | qp2 << 16 | flags << 24
    int mb_w;
    int c422;                // 4:2:2 chroma
    const int16_t *ls4, *ls8; // [6][6][16], [6][6][64]
    uint8_t *pic[3];         // fused: prediction in, reconstruction out (pitch cw[p])
    int16_t *res[3];         // not fused: residual planes (stride cw[p])
};

// Forward path, one band of macroblock rows (band-local pointers).
struct FwdArgs {
    const uint8_t *src[3], *pred[3]; // samples, row stride pw[p]
    int16_t *lev[3];                 // levels, row stride pw[p]
    int pw[3];
    const uint32_t *mb;              // the band's macroblocks (VidkH264MbInfo as u32)
    int mb_w;
    int chroma;                      // VidkChroma: 0 (4:0:0), 1 (4:2:0), 2 (4:2:2)
    const int32_t *mf4, *mf8;        // quantiser factors [6][6][16], [6][6][64]
    unsigned long long *nnz;         // the band's non-zero level count
};

// ---- host/device primitives -------------------------------------------------------------

template <typename T> VK_HD T ldg(const T *p)
{
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
}

VK_HD int popc64(uint64_t v)
{
#ifdef __CUDA_ARCH__
    return __popcll(v);
#else
    return __builtin_popcountll(v);
#endif
}

// Emulation only (a host variable): vector accesses that would be misaligned on the
// device (x86 does not fault); the emulated entry points report them as an error.
inline int g_emu_misaligned = 0;
VK_HD void chk_align(const void *p, unsigned a)
{
#ifndef __CUDA_ARCH__
    if ((uintptr_t)p & (a - 1)) g_emu_misaligned++;
#else
    (void)p, (void)a;
#endif
}

VK_HD int imin(int a, int b) { return a < b ? a : b; }

// Element p of a kernel-parameter array without a dynamic index (which would copy the
// parameters to local memory).
template <typename T> VK_HD T pick3(const T (&v)[3], int p) { return p == 0 ? v[0] : p == 1 ? v[1] : v[2]; }
VK_HD int imax(int a, int b) { return a > b ? a : b; }

// ---- arithmetic shared by every kernel --------------------------------------------------

VK_HD uint32_t sra(uint32_t v, int n) { return (uint32_t)((int32_t)v >> n); }

// 8.5.12.1 / 8.5.13.1 for one level: per >= 4 (6 for 8x8): (c * ls) << (per - 4), else
// (c * ls + 2^(3 - per)) >> (4 - per). |c * ls| < 2^29: the int product cannot overflow.
template <int N> VK_HD uint32_t dequant(int c, int ls, int qp)
{
    constexpr int T = N == 4 ? 4 : 6;
    const int per = qp / 6;
    if (per >= T) return (uint32_t)(c * ls) << (per - T);
    const int sh = T - per;
    return (uint32_t)((c * ls + (1 << (sh - 1))) >> sh);
}

// 8.5.12.2: one 1-D 4-point inverse transform in place.
VK_HD void itx4(uint32_t *x)
{
    const uint32_t e0 = x[0] + x[2], e1 = x[0] - x[2];
    const uint32_t e2 = sra(x[1], 1) - x[3], e3 = x[1] + sra(x[3], 1);
    x[0] = e0 + e3;
    x[1] = e1 + e2;
    x[2] = e1 - e2;
    x[3] = e0 - e3;
}

// 8.5.13.2: one 1-D 8-point inverse transform in place.
VK_HD void itx8(uint32_t *x)
{
    const uint32_t d0 = x[0], d1 = x[1], d2 = x[2], d3 = x[3];
    const uint32_t d4 = x[4], d5 = x[5], d6 = x[6], d7 = x[7];
    const uint32_t e0 = d0 + d4;
    const uint32_t e1 = 0u - d3 + d5 - d7 - sra(d7, 1);
    const uint32_t e2 = d0 - d4;
    const uint32_t e3 = d1 + d7 - d3 - sra(d3, 1);
    const uint32_t e4 = sra(d2, 1) - d6;
    const uint32_t e5 = 0u - d1 + d7 + d5 + sra(d5, 1);
    const uint32_t e6 = d2 + sra(d6, 1);
    const uint32_t e7 = d3 + d5 + d1 + sra(d1, 1);
    const uint32_t f0 = e0 + e6, f1 = e1 + sra(e7, 2), f2 = e2 + e4, f3 = e3 + sra(e5, 2);
    const uint32_t f4 = e2 - e4, f5 = sra(e3, 2) - e5, f6 = e0 - e6, f7 = e7 - sra(e1, 2);
    x[0] = f0 + f7;
    x[1] = f2 + f5;
    x[2] = f4 + f3;
    x[3] = f6 + f1;
    x[4] = f6 - f1;
    x[5] = f4 - f3;
    x[6] = f2 - f5;
    x[7] = f0 - f7;
}

template <int N> VK_HD void itx(uint32_t *x)
{
    if (N == 4)
        itx4(x);
    else
        itx8(x);
}

// Clip1Y(pred + r) (8.5.14): r clamped first so that the sum cannot wrap (the clipped
// result is unchanged: |r| > 512 saturates either way).
VK_HD uint32_t add_clip(uint32_t pred, uint32_t r)
{
    const int v = imin(imax((int)r, -512), 512) + (int)pred;
    return (uint32_t)imin(imax(v, 0), 255);
}

// Residual as it is downloaded when the add is not fused: clamped to +-512, which keeps
// Clip1Y(pred + r) for every 8-bit pred. Returned as the 16-bit pattern.
VK_HD uint32_t res16(uint32_t r)
{
    return (uint32_t)(uint16_t)(int16_t)imin(imax((int)r, -512), 512);
}

// Signs of the DC transform matrices: A (4x4, symmetric) = {1 1 1 1}, {1 1 -1 -1},
// {1 -1 -1 1}, {1 -1 1 -1}: row i is negative where bit a of nibble i of 0xA6C0 is set;
// B (2x2) = {1 1}, {1 -1}.
VK_HD uint32_t hsign(int i, int a, uint32_t v) { return ((0xA6C0u >> (4 * i + a)) & 1) ? 0u - v : v; }
VK_HD uint32_t hsign2(int i, int a, uint32_t v) { return (i & a & 1) ? 0u - v : v; }

// Element k of the DC transform of 8.5.10 / 8.5.11.1 (the encoder's forward DC transform
// uses the same matrices): luma f = A c A (4x4), 4:2:0 chroma f = B c B (2x2), 4:2:2
// chroma f = A c B (4 rows x 2). Sums wrap modulo 2^32 like the C code's; the order of
// modular additions does not matter.
VK_HD uint32_t dc_hadamard(int type, const uint32_t *c, int k)
{
    uint32_t f = 0;
    if (type == kDcLuma) {
        const int i = k >> 2, j = k & 3;
        for (int a = 0; a < 4; a++) {
            uint32_t g = 0;
            for (int b = 0; b < 4; b++) g += hsign(j, b, c[4 * a + b]);
            f += hsign(i, a, g);
        }
    } else {
        // Constant loop bounds keep c in registers (no local-memory indexing).
        const int i = k >> 1, j = k & 1;
        for (int a = 0; a < 4; a++) {
            if (type == kDcChroma && a >= 2) break;
            uint32_t g = 0;
            for (int b = 0; b < 2; b++) g += hsign2(j, b, c[2 * a + b]);
            f += type == kDcChroma ? hsign2(i, a, g) : hsign(i, a, g);
        }
    }
    return f;
}

// 8.5.10 (luma, and 4:2:2 chroma with qP,DC = qP + 3): qP,DC >= 36: (f * ls) << (per - 6),
// else (f * ls + 2^(5 - per)) >> (6 - per). 8.5.11.2 (4:2:0): ((f * ls) << per) >> 5.
VK_HD uint32_t dc_scale(int type, uint32_t f, uint32_t ls, int qpdc)
{
    const int per = qpdc / 6;
    if (type == kDcChroma) return sra((f * ls) << per, 5);
    if (qpdc >= 36) return (f * ls) << (per - 6);
    return sra(f * ls + (1u << (5 - per)), 6 - per);
}

// The dequantised DC value k of group g (element 0 of the block with dc_index 16 g + k).
VK_HD uint32_t dc_value(const uint32_t *__restrict__ dc_meta, const int16_t *__restrict__ dc_coef,
                        uint32_t dcidx)
{
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
    return dc_scale(type, dc_hadamard(type, c, (int)(dcidx & 15)), meta & 0xffff,
                    (int)(meta >> 16) & 0xff);
}

// N int16 (8 or 16 bytes, aligned) -> N ints.
template <int N> VK_HD void load_row16(const int16_t *p, int *v)
{
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
template <int N> VK_HD void store_row16(int16_t *p, const uint32_t *v)
{
    chk_align(p, 2 * N);
    if (N == 4) {
        *reinterpret_cast<uint2 *>(p) = make_uint2(v[0] | v[1] << 16, v[2] | v[3] << 16);
    } else {
        *reinterpret_cast<uint4 *>(p) =
            make_uint4(v[0] | v[1] << 16, v[2] | v[3] << 16, v[4] | v[5] << 16, v[6] | v[7] << 16);
    }
}
template <int N> VK_HD void store_row8(uint8_t *p, const uint32_t *v)
{
    chk_align(p, N);
    const uint32_t lo = v[0] | v[1] << 8 | v[2] << 16 | v[3] << 24;
    if (N == 4)
        *reinterpret_cast<uint32_t *>(p) = lo;
    else
        *reinterpret_cast<uint2 *>(p) = make_uint2(lo, v[4] | v[5] << 8 | v[6] << 16 | v[7] << 24);
}
// N bytes of a row (aligned) -> N values; ro: read-only data (the texture path).
template <int N> VK_HD void load_row8(const uint8_t *p, uint32_t *v, bool ro)
{
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
    for (int i = 0; i < N; i++) v[i] = ((i < 4 ? w0 : w1) >> (8 * (i & 3))) & 0xff;
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
VK_HD Header load_header(const uint8_t *__restrict__ rec, uint32_t b)
{
    constexpr size_t RB = (size_t)rec_bytes<N, FUSED, PLANE>();
    chk_align(rec + (size_t)b * RB, 16);
    const uint4 h = ldg(reinterpret_cast<const uint4 *>(rec + (size_t)b * RB));
    Header r;
    r.pos = h.w;
    if (N == 8 && PLANE) r.pos = ldg(reinterpret_cast<const uint32_t *>(rec + (size_t)b * RB + kRecHeader));
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
                           int *c)
{
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
VK_HD void dequant_row(const InvArgs &a, const Header &h, int r, const int *c, uint32_t *d)
{
    int ls[N];
    load_row16<N>(a.ls + ((h.list * 6 + h.qp % 6) * N + r) * N, ls);
    for (int k = 0; k < N; k++) d[k] = dequant<N>(c[k], ls[k], h.qp);
    // 8.5.12: blocks of Intra16x16 luma and of chroma take c_00 from the DC transform.
    if (N == 4 && h.dc && r == 0) d[0] = dc_value(a.dc_meta, a.dc_coef, h.dcidx);
}

// Words of shared memory per warp.
template <int N, bool LINE, bool COAL, bool FUSED> VK_HD constexpr int warp_smem_words()
{
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
VK_HD void line_p1(const InvArgs &a, LineState<N> &s, uint32_t *blk_sm)
{
    if (s.act) {
        int c[N];
        s.h = load_header<N, FUSED, PLANE>(a.rec, s.b);
        load_levels_row<N, SPARSE>(a.val, s.b, s.h, s.r, c);
        dequant_row<N>(a, s.h, s.r, c, s.d);
    } else {
        for (int k = 0; k < N; k++) s.d[k] = 0;
    }
    itx<N>(s.d); // row r (8.5.12.2: each row first)
    for (int k = 0; k < N; k++) blk_sm[k * (N + 1) + s.r] = s.d[k];
}

template <int N> VK_HD void line_p2(LineState<N> &s, const uint32_t *blk_sm)
{
    for (int k = 0; k < N; k++) s.d[k] = blk_sm[s.r * (N + 1) + k];
}

template <int N, bool FUSED, bool PLANE = false>
VK_HD void line_out_row(const InvArgs &a, const LineState<N> &s, uint32_t *d)
{
    if (PLANE) {
        // Row r of the block in the device-resident plane: prediction in, samples out
        // (blocks of a call are disjoint, so no other thread touches these bytes).
        const int p = (int)(s.h.pos >> kPosPlaneShift) & 3;
        const int x = (int)(s.h.pos & kPosMask) * 4, y = (int)(s.h.pos >> kPosYShift & kPosMask) * 4;
        uint8_t *row = pick3(a.pl, p) + (size_t)(y + s.r) * (size_t)pick3(a.pitch, p) + x;
        uint32_t p8[N];
        load_row8<N>(row, p8, false);
        for (int k = 0; k < N; k++) d[k] = add_clip(p8[k], d[k]);
        store_row8<N>(row, d);
    } else if (FUSED) {
        uint32_t p[N];
        load_row8<N>(a.rec + (size_t)s.b * rec_bytes<N, FUSED>() + kRecHeader + s.r * N, p, true);
        for (int k = 0; k < N; k++) d[k] = add_clip(p[k], d[k]);
        store_row8<N>(static_cast<uint8_t *>(a.out) + (size_t)s.b * (N * N) + s.r * N, d);
    } else {
        for (int k = 0; k < N; k++) d[k] = res16(d[k]);
        store_row16<N>(static_cast<int16_t *>(a.out) + (size_t)s.b * (N * N) + s.r * N, d);
    }
}

template <int N, bool COAL, bool FUSED>
VK_HD void line_p3(const InvArgs &a, LineState<N> &s, uint32_t *blk_sm)
{
    itx<N>(s.d); // column r: d[k] = (row k, column r)
    for (int k = 0; k < N; k++) s.d[k] = sra(s.d[k] + 32, 6);
    if (COAL) {
        for (int k = 0; k < N; k++) blk_sm[k * (N + 1) + s.r] = s.d[k];
        return;
    }
    // The paper's uncoalesced write-back: lane r stores column r, stride N.
    if (!s.act) return;
    const uint8_t *pred = a.rec + (size_t)s.b * rec_bytes<N, FUSED>() + kRecHeader;
    for (int k = 0; k < N; k++) {
        const size_t o = (size_t)s.b * (N * N) + k * N + s.r;
        if (FUSED)
            static_cast<uint8_t *>(a.out)[o] = (uint8_t)add_clip(ldg(pred + k * N + s.r), s.d[k]);
        else
            static_cast<int16_t *>(a.out)[o] = (int16_t)res16(s.d[k]);
    }
}

template <int N, bool FUSED, bool PLANE = false>
VK_HD void line_p4(const InvArgs &a, LineState<N> &s, const uint32_t *blk_sm)
{
    uint32_t d[N];
    for (int k = 0; k < N; k++) d[k] = blk_sm[s.r * (N + 1) + k];
    if (s.act) line_out_row<N, FUSED, PLANE>(a, s, d);
}

// Rows then columns of a whole block in registers, then (x + 32) >> 6.
template <int N> VK_HD void itx_block(uint32_t *d)
{
    for (int i = 0; i < N; i++) itx<N>(d + i * N);
    for (int j = 0; j < N; j++) {
        uint32_t t[N];
        for (int k = 0; k < N; k++) t[k] = d[k * N + j];
        itx<N>(t);
        for (int k = 0; k < N; k++) d[k * N + j] = sra(t[k] + 32, 6);
    }
}

// Block per thread: lane handles block warp_first + lane entirely in registers.
//   1 everything; not coalesced: the thread stores its block (16-byte vectors, stride one
//     block); coalesced: stages it in the warp's shared memory (padded stride W + 1)
//   2 (coalesced) consecutive lanes store consecutive words of the warp's output
template <int N, bool COAL, bool SPARSE, bool FUSED>
VK_HD void block_p1(const InvArgs &a, uint32_t warp_first, int lane, uint32_t *warp_sm)
{
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
            for (int k = 0; k < N; k++) v[k] = add_clip(p[k], v[k]);
            for (int k = 0; k < N; k += 4)
                o[(i * N + k) / 4] = v[k] | v[k + 1] << 8 | v[k + 2] << 16 | v[k + 3] << 24;
        } else {
            for (int k = 0; k < N; k += 2) o[(i * N + k) / 2] = res16(v[k]) | res16(v[k + 1]) << 16;
        }
    }
    if (COAL) {
        for (int k = 0; k < W; k++) warp_sm[lane * (W + 1) + k] = o[k];
    } else {
        uint4 *dst = reinterpret_cast<uint4 *>(static_cast<uint8_t *>(a.out) + (size_t)b * W * 4);
        chk_align(dst, 16);
        for (int k = 0; k < W / 4; k++) dst[k] = make_uint4(o[4 * k], o[4 * k + 1], o[4 * k + 2], o[4 * k + 3]);
    }
}

template <int N, bool FUSED>
VK_HD void block_p2(const InvArgs &a, uint32_t warp_first, int lane, const uint32_t *warp_sm)
{
    constexpr int W = N * N * (FUSED ? 1 : 2) / 4;
    const uint32_t left = a.b1 - warp_first, nvalid = left < 32u ? left : 32u;
    uint32_t *dst = reinterpret_cast<uint32_t *>(static_cast<uint8_t *>(a.out) + (size_t)warp_first * W * 4);
    chk_align(dst, 4);
    for (uint32_t i = (uint32_t)lane; i < nvalid * W; i += 32) dst[i] = warp_sm[(i / W) * (W + 1) + i % W];
}

// Blocks per warp and round.
template <int N, bool LINE> VK_HD constexpr int blocks_per_warp() { return LINE ? 32 / N : 32; }

// First block of warp `warp` in round g of CUDA block x: CUDA block x handles blocks
// [b0 + x * work * R, + work * R), R = warps * blocks per warp, one contiguous run per
// warp and round.
template <int N, bool LINE>
VK_HD uint32_t warp_first_block(const InvArgs &a, uint32_t x, int nwarps, int warp, int g)
{
    const uint32_t per_round = (uint32_t)nwarps * blocks_per_warp<N, LINE>();
    return a.b0 + x * (uint32_t)a.work * per_round + (uint32_t)g * per_round +
           (uint32_t)(warp * blocks_per_warp<N, LINE>());
}

// PLANE (plane mode) only with LINE, COAL and FUSED false (its records carry no samples).
template <int N, bool LINE, bool COAL, bool SPARSE, bool FUSED, bool PLANE = false>
__global__ void __launch_bounds__(kMaxThreads) inv_kernel(const InvArgs a)
{
    extern __shared__ uint32_t smem[];
    constexpr int WS = warp_smem_words<N, LINE, COAL, FUSED>();
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    uint32_t *warp_sm = smem + warp * WS;
    for (int g = 0; g < a.work; g++) {
        const uint32_t wf = warp_first_block<N, LINE>(a, blockIdx.x, (int)(blockDim.x >> 5), warp, g);
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

// ---- dense baseline ---------------------------------------------------------------------------

// One thread per 4x4 cell of every plane; in 8x8 macroblocks the top-left cell's thread
// does the 8x8 block and the other three return (the baseline's divergence).
template <int N, bool FUSED>
VK_HD void dense_block(const DenseArgs &a, int p, int x, int y, int qp, int list, bool has_dc,
                       uint32_t dcv)
{
    const int cw = pick3(a.cw, p);
    const int16_t *ls = (N == 4 ? a.ls4 : a.ls8) + (list * 6 + qp % 6) * N * N;
    uint32_t d[N * N];
    for (int i = 0; i < N; i++) {
        int c[N], l[N];
        load_row16<N>(pick3(a.coef, p) + (size_t)(y + i) * cw + x, c);
        load_row16<N>(ls + i * N, l);
        for (int k = 0; k < N; k++) d[i * N + k] = dequant<N>(c[k], l[k], qp);
    }
    if (has_dc) d[0] = dcv;
    itx_block<N>(d);
    for (int i = 0; i < N; i++) {
        uint32_t *v = d + i * N;
        if (FUSED) {
            uint8_t *row = pick3(a.pic, p) + (size_t)(y + i) * cw + x;
            uint32_t pr[N];
            load_row8<N>(row, pr, false);
            for (int k = 0; k < N; k++) v[k] = add_clip(pr[k], v[k]);
            store_row8<N>(row, v);
        } else {
            for (int k = 0; k < N; k++) v[k] = res16(v[k]);
            store_row16<N>(pick3(a.res, p) + (size_t)(y + i) * cw + x, v);
        }
    }
}

template <bool FUSED> VK_HD void dense_cell(const DenseArgs &a, uint32_t t)
{
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
        for (int i = 0; i < 16; i++) c[i] = 0;
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++)
                c[i * cols + j] = (uint32_t)(int32_t)ldg(pick3(a.coef, p) + (size_t)(y0 + 4 * i) * cw + x0 + 4 * j);
        const int qpdc = type == kDcChroma422 ? qp + 3 : qp;
        const int k = ((y - y0) / 4) * cols + (x - x0) / 4;
        // LevelScale4x4(qP,DC % 6, 0, 0) = weightScale(0, 0) * normAdjust: element 0 of ls4.
        const uint32_t ls = (uint32_t)ldg(a.ls4 + (list * 6 + qpdc % 6) * 16);
        dcv = dc_scale(type, dc_hadamard(type, c, k), ls, qpdc);
    }
    dense_block<4, FUSED>(a, p, x, y, qp, list, has_dc, dcv);
}

template <bool FUSED> __global__ void __launch_bounds__(kMaxThreads) dense_kernel(const DenseArgs a)
{
    dense_cell<FUSED>(a, blockIdx.x * blockDim.x + threadIdx.x);
}

// ---- forward path ---------------------------------------------------------------------------

// One row or column of the forward core transforms, int32, as ftx4_1d / ftx8_1d.
VK_HD void ftx4(int32_t *x)
{
    const int32_t s03 = x[0] + x[3], d03 = x[0] - x[3];
    const int32_t s12 = x[1] + x[2], d12 = x[1] - x[2];
    x[0] = s03 + s12;
    x[1] = 2 * d03 + d12;
    x[2] = s03 - s12;
    x[3] = d03 - 2 * d12;
}

VK_HD void ftx8(int32_t *x)
{
    const int32_t s07 = x[0] + x[7], d07 = x[0] - x[7];
    const int32_t s16 = x[1] + x[6], d16 = x[1] - x[6];
    const int32_t s25 = x[2] + x[5], d25 = x[2] - x[5];
    const int32_t s34 = x[3] + x[4], d34 = x[3] - x[4];
    const int32_t a0 = s07 + s34, a1 = s16 + s25, a2 = s07 - s34, a3 = s16 - s25;
    const int32_t b4 = d16 + d25 + (d07 + (d07 >> 1));
    const int32_t b5 = d07 - d34 - (d25 + (d25 >> 1));
    const int32_t b6 = d07 + d34 - (d16 + (d16 >> 1));
    const int32_t b7 = d16 - d25 + (d34 + (d34 >> 1));
    x[0] = a0 + a1;
    x[1] = b4 + (b7 >> 2);
    x[2] = a2 + (a3 >> 1);
    x[3] = b5 + (b6 >> 2);
    x[4] = a0 - a1;
    x[5] = b6 - (b5 >> 2);
    x[6] = (a2 >> 1) - a3;
    x[7] = (b4 >> 2) - b7;
}

template <int N> VK_HD void ftx(int32_t *x)
{
    if (N == 4)
        ftx4(x);
    else
        ftx8(x);
}

// level = sign(w) * min(32767, (|w| * mf + f) >> qbits), exact (64-bit product).
VK_HD int quant1(int32_t w, uint32_t mf, int qbits, uint32_t f)
{
    const uint32_t a = w < 0 ? 0u - (uint32_t)w : (uint32_t)w;
    unsigned long long l = ((unsigned long long)a * mf + f) >> qbits;
    if (l > 32767) l = 32767;
    return w < 0 ? -(int)l : (int)l;
}

VK_HD uint32_t deadzone(int qbits, bool intra) { return (1u << qbits) / (intra ? 3u : 6u); }

// Threads per macroblock of the forward kernel: 64 luma lines (16 4x4 blocks x 4 rows,
// or 4 8x8 blocks x 8 rows on the first 32), then 16 (4:2:0) or 32 (4:2:2) per chroma
// plane: one CUDA block per macroblock.
VK_HD constexpr int fwd_threads(int chroma) { return chroma == 0 ? 64 : chroma == 1 ? 96 : 128; }
constexpr int kFwdWarpWords = 4 * 8 * 9; // the larger of 8 padded 4x4 and 4 padded 8x8 blocks

// One thread's line of the forward kernel: plane, block, row / column r, parameters.
struct FwdLine {
    int n;        // 4 or 8; 0: idle thread
    int p, x, yb; // plane, block position (band-local)
    int r;
    int qp, list;
    bool intra, has_dc;
    int dck;      // index of the block in its DC matrix
    int32_t v[8];
};

VK_HD FwdLine fwd_line_setup(const FwdArgs &a, int mbi, int t)
{
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
        s.n = 4, s.x = mx * 8 + (k & 1) * 4, s.yb = my * (a.chroma == 2 ? 16 : 8) + (k >> 1) * 4;
        s.r = u & 3;
        s.has_dc = true;
        s.dck = k;
    }
    return s;
}

// Phase 1: residual row r, row transform (rows first, as the C reference), store
// transposed. blk_sm: the block's N * (N + 1) words.
template <int N> VK_HD void fwd_p1(const FwdArgs &a, FwdLine &s, uint32_t *blk_sm)
{
    const int pw = pick3(a.pw, s.p);
    uint32_t sv[N], pv[N];
    load_row8<N>(pick3(a.src, s.p) + (size_t)(s.yb + s.r) * pw + s.x, sv, true);
    load_row8<N>(pick3(a.pred, s.p) + (size_t)(s.yb + s.r) * pw + s.x, pv, true);
    for (int k = 0; k < N; k++) s.v[k] = (int32_t)sv[k] - (int32_t)pv[k];
    ftx<N>(s.v);
    for (int k = 0; k < N; k++) blk_sm[k * (N + 1) + s.r] = (uint32_t)s.v[k];
}

// Phase 2: load column r.
template <int N> VK_HD void fwd_p2(FwdLine &s, const uint32_t *blk_sm)
{
    for (int k = 0; k < N; k++) s.v[k] = (int32_t)blk_sm[s.r * (N + 1) + k];
}

// Phase 3: column transform, quantisation, levels of column r; the DC coefficient of a
// DC block goes to dcw (the C code quantises it with factor 0, then overwrites it with the
// DC level). Returns the non-zero count.
template <int N> VK_HD unsigned fwd_p3(const FwdArgs &a, FwdLine &s, int32_t *dcw)
{
    ftx<N>(s.v); // v[k] = w(row k, column r)
    const int32_t *mf = (N == 4 ? a.mf4 : a.mf8) + (s.list * 6 + s.qp % 6) * N * N;
    const int qbits = (N == 4 ? 15 : 16) + s.qp / 6;
    const uint32_t f = deadzone(qbits, s.intra);
    const int pw = pick3(a.pw, s.p);
    unsigned nz = 0;
    for (int k = 0; k < N; k++) {
        if (s.has_dc && k == 0 && s.r == 0) {
            dcw[s.p * 16 + s.dck] = s.v[0];
            continue;
        }
        const int l = quant1(s.v[k], (uint32_t)ldg(mf + k * N + s.r), qbits, f);
        nz += l != 0;
        pick3(a.lev, s.p)[(size_t)(s.yb + k) * pw + s.x + s.r] = (int16_t)l;
    }
    return nz;
}

// Phase 4 (after __syncthreads): the DC transform and quantiser of quant_dc in
// src/h264_batch.c, one thread per DC level: luma on threads 0..15 (Intra16x16), chroma
// on the first 4 / 8 threads of each chroma plane. Returns the non-zero count.
VK_HD unsigned fwd_dc(const FwdArgs &a, int mbi, int t, const int32_t *dcw)
{
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
    for (int i = 0; i < 16; i++) c[i] = (uint32_t)dcw[p * 16 + i];
    const int l = quant1((int32_t)dc_hadamard(type, c, k), mf00, qbits, deadzone(qbits, intra));
    const int cols = p ? 2 : 4;
    const int x = p ? mx * 8 : mx * 16, y = p ? my * (a.chroma == 2 ? 16 : 8) : my * 16;
    pick3(a.lev, p)[(size_t)(y + 4 * (k / cols)) * pick3(a.pw, p) + x + 4 * (k % cols)] = (int16_t)l;
    return l != 0;
}

__global__ void __launch_bounds__(128) fwd_kernel(const FwdArgs a)
{
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
