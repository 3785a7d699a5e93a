// Kernels of the CUDA HEVC transform family: the standard's matrices as compile-time
// functions, the tensor-core fragment tables, and the per-lane phase functions of every
// kernel. Phase functions are __host__ __device__: the device kernels (hevc_dev.cuh) call
// them between warp collectives (mma.sync, shuffles, barriers); the host emulation
// (hevc_emu.cuh) runs every lane through a phase before the next one and emulates the
// collectives, so the bits of the kernels are tested without a GPU.
//
// Arithmetic (docs/HEVC_CUDA.md proves every bound): 32-bit integers throughout; the
// CUDA-core transforms are partial butterflies (exact reassociations of the matrix
// products); the tensor-core transforms split each int16 operand x into a signed high
// byte and an unsigned low byte, x = 256 * hi + lo, multiply each plane by the int8
// matrix with s32 accumulation and recombine 256 * D_hi + D_lo in 32 bits - every
// product and partial sum is an exact integer. These are other forms of src/hevc_core.h's
// arithmetic (the C reference's and the coding loop's: matrices read from memory, 64-bit
// quantiser products), kept for speed (compile-time matrix immediates, 32-bit products
// where the bounds allow, packed pairs); test_hevc_cuda (also --emu) checks them bit-exact.
#ifndef VIDK_HEVC_KERN_CUH
#define VIDK_HEVC_KERN_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "hevc_core.h"

#define VHD __host__ __device__ __forceinline__
// Full unrolling in device code (every array index becomes a constant); nothing on the host.
#ifdef __CUDA_ARCH__
#define VK_UNROLL _Pragma("unroll")
#else
#define VK_UNROLL
#endif

namespace vidk_hevccu {

// ---- blocks, tiles, shared memory -------------------------------------------------------

constexpr int kThreads = 256; // every kernel, every size class
constexpr int kWarps = kThreads / 32;
// TBs per "tile" (forward: the unit of the compaction, one atomicAdd each):
//   4x4   its own kernels (fwd4_kernel, inv4_kernel: no shared memory, high occupancy);
//         a tile is one warp's share: forward two TBs per lane (64), inverse one (32);
//         warps walk the tiles with a grid stride
//   8x8   8 lanes per TB (4 TBs per warp), CUDA cores; one CUDA block per tile
//   16x16 two TBs per warp (tensor cores: one warp's MMAs; CUDA cores: 16 lanes each)
//   32x32 one TB per warp
// The 8x8..32x32 classes share one kernel per direction (blocks partitioned by class).
constexpr int kTileFwd[4] = {64, 32, 16, 8};
constexpr int kTileInv[4] = {32, 32, 16, 8};
// Smallest number of resident 256-thread blocks per SM the 4x4 kernels are compiled for
// (__launch_bounds__): forward 4 blocks = 32 warps, <= 64 registers (two TBs per lane: 64 B
// of loads in flight per lane, no spill; at 5 blocks / 48 registers it spills); inverse 6
// blocks = 48 warps, <= 40 registers (one TB per lane).
constexpr int kMinBlocksFwd4 = 4;
constexpr int kMinBlocksInv4 = 6;
// Shared memory of one warp (2304 B): CUDA-core stage-1 rows (N + 4 int16 per row, TB
// regions kRowRegion(N) apart), forward levels in the output layout (kLevRegion(N) apart),
// or the inverse's tensor-core staging of the levels. Region strides carry extra 32 B
// where that spreads the TBs of a warp over the banks.
constexpr int kWarpSmem = 2304;
constexpr int row_region(int n) {
    return n == 32 ? 0 : n * (n + 4) * 2 + 32;
}
constexpr int lev_region_bytes(int n) {
    return n == 32 ? 0 : n == 16 ? 544 : 144;
}
constexpr int kRegion16 = 672; // = row_region(16), also the inverse's 16x16 staging

// Key of a TB (host-packed): qP in bits 0-6, cIdx in 7-8, VidkHevcTbFlags in 9-12.
VHD int key_qp(uint32_t k) {
    return (int)(k & 127);
}
VHD int key_plane(uint32_t k) {
    return (int)((k >> 7) & 3);
}
VHD int key_flags(uint32_t k) {
    return (int)((k >> 9) & 15);
}
enum { F_INTRA = 1, F_ISLICE = 2, F_DST = 4, F_TSKIP = 8 };

// ---- the standard's matrices (8.6.4.2) ----------------------------------------------------

// |transMatrix| entries by angle index m: coefficient of row k, column n of the 32-point
// matrix is +-a[m], m = k (2n + 1) mod 128 folded into 0..32 by the cosine's symmetries
// (row 0 is 64). a[0] is that row-0 value; a[32] (never used) is 0.
constexpr int cos_mag(int m) {
    constexpr int a[33] = VIDK_HEVC_COS_MAG; // src/hevc_core.h's list
    return a[m];
}
constexpr int fold(int m) {
    return m <= 32   ? cos_mag(m)
           : m < 64  ? -cos_mag(64 - m)
           : m <= 96 ? -cos_mag(m - 64)
                     : cos_mag(128 - m);
}
// 32-point DCT matrix, row k (basis function), column n.
constexpr int t32(int k, int n) {
    return k == 0 ? 64 : fold((k * (2 * n + 1)) & 127);
}
// N-point matrix, N = 1 << log2n: rows 0, 32/N, 2 * 32/N, ... of the 32-point one.
constexpr int tn(int log2n, int k, int n) {
    return t32(k << (5 - log2n), n);
}
// DST-VII (trType 1).
constexpr int dst4(int k, int n) {
    constexpr int d[16] = {29, 55, 74, 84, 74, 74, 0, -74, 84, -29, -74, 55, 55, -84, 74, -29};
    return d[k * 4 + n];
}
// 4x4 matrix of a kind: 0 DCT, 1 DST, 2 transform skip as 128 * I. With the stage shifts
// of the transform, 128 * I gives exactly res << (13 - bitDepth) forward and
// ((d << 7) + 2^(19 - bd)) >> (20 - bd) inverse (docs/HEVC_CUDA.md), so one code path
// serves the three kinds without divergence.
constexpr int mat4(int kind, int k, int n) {
    return kind == 1 ? dst4(k, n) : kind == 2 ? (k == n ? 128 : 0) : tn(2, k, n);
}

VHD int kind4(int flags) {
    return (flags & F_DST) ? 1 : (flags & F_TSKIP) ? 2 : 0;
}

// Partial butterflies: out[k] = sum_j T_N[k][j] in[j] (forward, rows or columns) and
// out[y] = sum_k T_N[k][y] in[k] (inverse), recursive even/odd split down to N = 1.
// The coefficients are compile-time immediates after unrolling.
template <int N> struct Fwd1 {
    static VHD void run(const int32_t *in, int32_t *out) {
        int32_t e[N / 2], o[N / 2], ee[N / 2];
        VK_UNROLL
        for (int j = 0; j < N / 2; j++) {
            e[j] = in[j] + in[N - 1 - j];
            o[j] = in[j] - in[N - 1 - j];
        }
        Fwd1<N / 2>::run(e, ee);
        VK_UNROLL
        for (int m = 0; m < N / 2; m++) {
            int32_t s = 0;
            VK_UNROLL
            for (int j = 0; j < N / 2; j++)
                s += t32((2 * m + 1) * (32 / N), j) * o[j];
            out[2 * m] = ee[m];
            out[2 * m + 1] = s;
        }
    }
};
template <> struct Fwd1<1> {
    static VHD void run(const int32_t *in, int32_t *out) { out[0] = 64 * in[0]; }
};

template <int N> struct Inv1 {
    static VHD void run(const int32_t *in, int32_t *out) {
        int32_t ev[N / 2], ee[N / 2];
        VK_UNROLL
        for (int m = 0; m < N / 2; m++)
            ev[m] = in[2 * m];
        Inv1<N / 2>::run(ev, ee);
        VK_UNROLL
        for (int y = 0; y < N / 2; y++) {
            int32_t o = 0;
            VK_UNROLL
            for (int m = 0; m < N / 2; m++)
                o += t32((2 * m + 1) * (32 / N), y) * in[2 * m + 1];
            out[y] = ee[y] + o;
            out[N - 1 - y] = ee[y] - o;
        }
    }
};
template <> struct Inv1<1> {
    static VHD void run(const int32_t *in, int32_t *out) { out[0] = 64 * in[0]; }
};

// ---- tensor-core fragment tables ----------------------------------------------------------
// Fragment layouts of mma.sync m16n8k32 / m16n8k16 with 8-bit operands (PTX ISA, "Matrix
// fragments for mma.m16n8k32"); lane = 4 g + t:
//   A (16 x K, row): reg r holds A[g + 8 (r & 1)][4 t + i + 16 (r >> 1)], byte i = 0..3
//   B (K x 8, col):  reg r holds B[4 t + i + 16 r][g]
//   C/D (16 x 8):    reg c holds D[g + 8 (c >> 1)][2 t + (c & 1)]
// The reduction index K may be permuted as long as A and B agree; we use that twice:
//   load permutation (forward stage 1, 32x32): slot 4t+i <-> j = 8t+i, slot 16+4t+i <->
//     j = 8t+4+i, so that a lane's B fragment is 8 consecutive residuals of one row (one
//     16-byte load);
//   D-to-A permutation (stage 2, both directions): slot 4t+i <-> (2t, 2t+1, 8+2t, 9+2t)[i]
//     (+16 for slots 16..31), so that the stage-1 accumulators of a lane (columns 2t,
//     2t+1 of n-tiles nt, nt+1) are directly its stage-2 A fragment: no shuffle, no
//     shared memory between the stages.
constexpr int d2a_col(int t, int i, int h) {
    return 16 * h + (i < 2 ? 2 * t + i : 8 + 2 * t + i - 2);
}

struct FragTab {
    uint32_t f32s1a[2][4][32]; // forward 32: stage-1 A = T rows, load permutation
    uint32_t f32s2b[4][2][32]; // forward 32: stage-2 B = T^T, D-to-A permutation
    uint32_t f16s1a[2][32];    // forward 16: stage-1 A = T rows
    uint32_t f16s2b[2][32];    // forward 16: stage-2 B
    uint32_t i32s1a[2][4][32]; // inverse 32: stage-1 A = T^T
    uint32_t i32s2b[4][2][32]; // inverse 32: stage-2 B = T, D-to-A permutation
    uint32_t i16s1a[2][32];
    uint32_t i16s2b[2][32];
};

constexpr uint32_t pack_bytes(int b0, int b1, int b2, int b3) {
    return (uint32_t)(b0 & 255) | (uint32_t)(b1 & 255) << 8 | (uint32_t)(b2 & 255) << 16 |
           (uint32_t)(b3 & 255) << 24;
}

constexpr FragTab make_frag_tab() {
    FragTab f{};
    for (int l = 0; l < 32; l++) {
        const int g = l >> 2, t = l & 3;
        for (int mt = 0; mt < 2; mt++)
            for (int r = 0; r < 4; r++) {
                // forward: T[k][j], k = 16 mt + g + 8 (r & 1), j = 8 t + 4 (r >> 1) + i
                const int k = 16 * mt + g + 8 * (r & 1), j = 8 * t + 4 * (r >> 1);
                f.f32s1a[mt][r][l] =
                    pack_bytes(t32(k, j), t32(k, j + 1), t32(k, j + 2), t32(k, j + 3));
                // inverse: A[y][k] = T[k][y], y = 16 mt + g + 8 (r & 1), k = 4 t + i + 16 (r >>
                // 1)
                const int y = k, kk = 4 * t + 16 * (r >> 1);
                f.i32s1a[mt][r][l] =
                    pack_bytes(t32(kk, y), t32(kk + 1, y), t32(kk + 2, y), t32(kk + 3, y));
            }
        for (int nt = 0; nt < 4; nt++)
            for (int h = 0; h < 2; h++) {
                const int v = 8 * nt + g;
                f.f32s2b[nt][h][l] =
                    pack_bytes(t32(v, d2a_col(t, 0, h)), t32(v, d2a_col(t, 1, h)),
                               t32(v, d2a_col(t, 2, h)), t32(v, d2a_col(t, 3, h)));
                f.i32s2b[nt][h][l] =
                    pack_bytes(t32(d2a_col(t, 0, h), v), t32(d2a_col(t, 1, h), v),
                               t32(d2a_col(t, 2, h), v), t32(d2a_col(t, 3, h), v));
            }
        for (int r = 0; r < 2; r++) {
            const int k = g + 8 * r, j = 4 * t;
            f.f16s1a[r][l] =
                pack_bytes(tn(4, k, j), tn(4, k, j + 1), tn(4, k, j + 2), tn(4, k, j + 3));
            f.i16s1a[r][l] =
                pack_bytes(tn(4, j, k), tn(4, j + 1, k), tn(4, j + 2, k), tn(4, j + 3, k));
        }
        for (int nt = 0; nt < 2; nt++) {
            const int v = 8 * nt + g;
            f.f16s2b[nt][l] =
                pack_bytes(tn(4, v, d2a_col(t, 0, 0)), tn(4, v, d2a_col(t, 1, 0)),
                           tn(4, v, d2a_col(t, 2, 0)), tn(4, v, d2a_col(t, 3, 0)));
            f.i16s2b[nt][l] =
                pack_bytes(tn(4, d2a_col(t, 0, 0), v), tn(4, d2a_col(t, 1, 0), v),
                           tn(4, d2a_col(t, 2, 0), v), tn(4, d2a_col(t, 3, 0), v));
        }
    }
    return f;
}

// ---- small helpers --------------------------------------------------------------------------

VHD uint32_t prmt(uint32_t a, uint32_t b, uint32_t s) {
#ifdef __CUDA_ARCH__
    return __byte_perm(a, b, s);
#else
    const uint64_t v = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++)
        r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7))) & 255) << (8 * i);
    return r;
#endif
}

VHD int s16lo(uint32_t w) {
    return (int)(int16_t)(uint16_t)(w & 0xffffu);
}
VHD int s16hi(uint32_t w) {
    return (int)(int16_t)(uint16_t)(w >> 16);
}
VHD uint32_t pack16(int a, int b) {
    return prmt((uint32_t)a, (uint32_t)b, 0x5410);
}
VHD int clip16(int v) {
    return v < -32768 ? -32768 : v > 32767 ? 32767 : v;
}
VHD int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

// Byte planes of four values in int16 range: lo = the unsigned low bytes, hi = the signed
// high bytes (x = 256 * hi + lo, two's complement).
VHD void split4(int a, int b, int c, int d, uint32_t &lo, uint32_t &hi) {
    const uint32_t p = pack16(a, b), q = pack16(c, d);
    lo = prmt(p, q, 0x6420);
    hi = prmt(p, q, 0x7531);
}

VHD int qscale_of(int rem) {
    return rem == 0   ? 26214
           : rem == 1 ? 23302
           : rem == 2 ? 20560
           : rem == 3 ? 18396
           : rem == 4 ? 16384
                      : 14564;
}
VHD int lscale_of(int rem) {
    return rem == 0 ? 40 : rem == 1 ? 45 : rem == 2 ? 51 : rem == 3 ? 57 : rem == 4 ? 64 : 72;
}

// Offset of the per-coefficient table of (size, matrixId, qP % 6): the layout of
// hevc_batch.c (36 tables per size, N * N entries each).
VHD uint32_t table_off(int size, int matrix_id, int rem) {
    const uint32_t base = size == 0   ? 0u
                          : size == 1 ? 36u * 16
                          : size == 2 ? 36u * 80
                                      : 36u * 336;
    return base + (uint32_t)(matrix_id * 6 + rem) * (16u << (2 * size));
}
constexpr uint32_t kTableEntries = 36u * (16 + 64 + 256 + 1024);

// Forward quantiser of one TB (HM xQuant without RDOQ): level = sign(c) * ((|c| * scale +
// off) >> qbits), clipped to int16.
struct Quant {
    int32_t scale, off;
    int qbits;
    const int32_t *qs; // per-coefficient scales (scaling list) or nullptr
};

VHD Quant make_quant(uint32_t key, int log2n, int bd, const int32_t *qs_tab) {
    Quant q;
    const int qp = key_qp(key), flags = key_flags(key), per = qp / 6, rem = qp - 6 * per;
    q.qbits = 14 + per + 15 - bd - log2n;
    q.off = ((flags & F_ISLICE) ? 171 : 85) << (q.qbits - 9);
    q.scale = qscale_of(rem);
    q.qs = qs_tab ? qs_tab +
                        table_off(log2n - 2, key_plane(key) + ((flags & F_INTRA) ? 0 : 3), rem)
                  : nullptr;
    return q;
}

// |c| <= 32767 (docs): flat, |c| * 26214 + off < 2^31 in 32 bits; scaling lists use
// scales up to 16 * 26214: 64-bit product.
template <bool SL> VHD int quant1(int c, int32_t scale, int qbits, int32_t off) {
    const uint32_t a = (uint32_t)(c < 0 ? -c : c);
    uint32_t m;
    if (SL) {
        const uint64_t p = ((uint64_t)a * (uint32_t)scale + (uint32_t)off) >> qbits;
        m = p > 32768u ? 32768u : (uint32_t)p;
    } else {
        m = (a * (uint32_t)scale + (uint32_t)off) >> qbits;
    }
    return c < 0 ? -(int)(m < 32768u ? m : 32768u) : (int)(m < 32767u ? m : 32767u);
}

// Dequantiser of one TB (8.6.3): Clip3(-32768, 32767, shift > 0 ? (l * s + 2^(shift-1)) >>
// shift : (l * s) << -shift), s = m * levelScale <= 255 * 72 (|l * s| < 2^30).
struct Dequant {
    int scale, shift;
    const int16_t *ds;
};

VHD Dequant make_dequant(uint32_t key, int log2n, int bd, const int16_t *ds_tab) {
    Dequant d;
    const int qp = key_qp(key), flags = key_flags(key), per = qp / 6, rem = qp - 6 * per;
    d.scale = 16 * lscale_of(rem);
    d.shift = bd + log2n - 5 - per;
    d.ds = ds_tab ? ds_tab +
                        table_off(log2n - 2, key_plane(key) + ((flags & F_INTRA) ? 0 : 3), rem)
                  : nullptr;
    return d;
}

VHD int dequant1(int l, int scale, int shift) {
    const int x = l * scale;
    if (shift > 0) return clip16((x + (1 << (shift - 1))) >> shift);
    const int64_t y = (int64_t)x * ((int64_t)1 << -shift);
    return y < -32768 ? -32768 : y > 32767 ? 32767 : (int)y;
}

template <bool SL> VHD int dq_at(const Dequant &d, int l, int idx) {
    return dequant1(l, SL ? (int)d.ds[idx] : d.scale, d.shift);
}
template <bool SL> VHD int q_at(const Quant &q, int c, int idx) {
    return quant1<SL>(c, SL ? q.qs[idx] : q.scale, q.qbits, q.off);
}

// ---- kernel arguments -----------------------------------------------------------------------

// What a 4x4 TB's key decides, computed once per TB, or once per call for a class whose TBs
// share one key: the matrix rows (DCT, DST or transform skip) and the quantiser. For flat
// quantisation (no scaling list) the sign is folded into the rounding offset:
//   sign(c) ((|c| Q + off) >> qbits) = (c Q + (c < 0 ? 2^qbits - 1 - off : off)) >> qbits
// (arithmetic shift; for c < 0 the right side is ceil(-(|c| Q + off) / 2^qbits)), and no
// clip is needed: for 4x4, qbits = 27 + qP / 6 - bitDepth is 15..27, |c| <= 32760 and
// Q <= 26214, so |c Q| < 2^30 and |level| <= 26209 (docs/HEVC_CUDA.md).
struct Fwd4P {
    uint32_t m[4];
    Quant q;
    int32_t nd; // flat: off - (2^qbits - 1 - off), subtracted for c < 0
    int32_t mq; // flat: 2^(32 - qbits) (the final shift as a multiply-high)
};

// Bit-depth constants of the 4x4 forward: the residual clip bounds as int16 pairs, the
// stage-1 rounding term (biased, fwd4_core) and multiplier.
struct Fwd4C {
    uint32_t lo2, hi2;
    int r1;
    uint32_t m1;
};

struct FwdArgs {
    const uint16_t *keys[4];
    uint32_t key_step[4]; // 1, or 0 when every TB of the class has the same key
    const int16_t *res[4];
    uint32_t n[4];
    uint32_t blk0[5]; // first block of each class; blk0[4] = grid
    uint32_t *tile_base[4];
    uint16_t *nnz[4];
    uint32_t *counter; // values allocated in levc (compacted classes)
    int16_t *lev;      // output region of the chunk: dense class s at lev + dense_off[s]
    int16_t *levc;     // compacted region of the chunk (after the dense classes)
    uint64_t dense_off[4];
    const int32_t *qs; // scaling-list quantiser scales or nullptr
    int bd;
    uint32_t compact; // bit s: class s compacted (counter, tile bases), else dense
    Fwd4C c4;         // 4x4: fwd4_consts(bd)
    Fwd4P p4; // 4x4 with key_step[0] == 0: fwd4_prep of the class's key (host-computed, so
              // the kernel reads it from the parameter space instead of registers)
};

struct InvArgs {
    const uint16_t *keys[4];
    uint32_t key_step[4];
    int16_t *lev[4]; // levels; residual output (in place) without a picture
    void *pix[4];    // prediction in, reconstruction out (in place); u8 or u16
    uint32_t n[4];
    uint32_t blk0[5];
    const int16_t *ds; // scaling-list dequantiser scales or nullptr
    int bd;
};

// Output kinds of the inverse kernels.
enum { OUT_RES = 0, OUT_U8 = 1, OUT_U16 = 2 };

// ---- vector memory
// ----------------------------------------------------------------------------

VHD void ld16(const void *p, uint32_t w[4]) {
    const uint4 v = *static_cast<const uint4 *>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
}
VHD void st16(void *p, const uint32_t w[4]) {
    uint4 v;
    v.x = w[0], v.y = w[1], v.z = w[2], v.w = w[3];
    *static_cast<uint4 *>(p) = v;
}
VHD void ld8(const void *p, uint32_t w[2]) {
    const uint2 v = *static_cast<const uint2 *>(p);
    w[0] = v.x, w[1] = v.y;
}
VHD void st8(void *p, const uint32_t w[2]) {
    uint2 v;
    v.x = w[0], v.y = w[1];
    *static_cast<uint2 *>(p) = v;
}

// ---- forward, 4x4: one thread per TB --------------------------------------------------------

// 16-bit SIMD clip of packed residual pairs to [-lim, lim] (lim <= 4095).
// The same with the bounds given as int16 pairs (lo2 = -lim, hi2 = lim in both halves).
VHD uint32_t clip2p(uint32_t w, uint32_t lo2, uint32_t hi2) {
#ifdef __CUDA_ARCH__
    return __vmins2(__vmaxs2(w, lo2), hi2);
#else
    return pack16(clampi(s16lo(w), s16lo(lo2), s16lo(hi2)),
                  clampi(s16hi(w), s16hi(lo2), s16hi(hi2)));
#endif
}

VHD uint32_t clip2(uint32_t w, int lim) {
#ifdef __CUDA_ARCH__
    const uint32_t hi = (uint32_t)lim * 0x10001u, lo = (uint32_t)(-lim) & 0xffffu;
    return __vmins2(__vmaxs2(w, lo | lo << 16), hi);
#else
    return pack16(clampi(s16lo(w), -lim, lim), clampi(s16hi(w), -lim, lim));
#endif
}

// High 32 bits of the 64-bit product (IMAD.HI: the multiply pipe, not the integer ALU):
// mulhi_s(a, 2^(32 - k)) = a >> k (arithmetic, 1 <= k <= 31 with 2^(32-k) < 2^31), umulhi
// likewise for unsigned values.
VHD int mulhi_s(int a, int b) {
#ifdef __CUDA_ARCH__
    return __mulhi(a, b);
#else
    return (int)(((int64_t)a * b) >> 32);
#endif
}
VHD uint32_t umulhi(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return (uint32_t)(((uint64_t)a * b) >> 32);
#endif
}

// Two-way int16 x int8 dot products (PTX dp2a.lo / dp2a.hi, signed): c + a.h0 * b.b0 +
// a.h1 * b.b1 (lo) or c + a.h0 * b.b2 + a.h1 * b.b3 (hi).
VHD int dp2a_lo(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
    return __dp2a_lo((int)a, (int)b, c);
#else
    // modulo 2^32 like the hardware (the 4x4 forward biases its accumulator by 2^31)
    return (int)((uint32_t)c + (uint32_t)(s16lo(a) * (int)(int8_t)(b & 255)) +
                 (uint32_t)(s16hi(a) * (int)(int8_t)((b >> 8) & 255)));
#endif
}
VHD int dp2a_hi(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
    return __dp2a_hi((int)a, (int)b, c);
#else
    return (int)((uint32_t)c + (uint32_t)(s16lo(a) * (int)(int8_t)((b >> 16) & 255)) +
                 (uint32_t)(s16hi(a) * (int)(int8_t)(b >> 24)));
#endif
}

// Forward 4x4 matrix rows as int8 bytes. Transform skip is -128 * I here (128 does not fit
// int8): both stages negate, and since 128 x is a multiple of 2^shift in each stage the
// rounding terms vanish, so the result is exactly res << (13 - bd) (docs/HEVC_CUDA.md).
constexpr uint32_t fwd4_row(int kind, int k) {
    return pack_bytes(kind == 2 ? (k == 0 ? -128 : 0) : mat4(kind, k, 0),
                      kind == 2 ? (k == 1 ? -128 : 0) : mat4(kind, k, 1),
                      kind == 2 ? (k == 2 ? -128 : 0) : mat4(kind, k, 2),
                      kind == 2 ? (k == 3 ? -128 : 0) : mat4(kind, k, 3));
}

// Row K of the kind's matrix: three immediates and two selects.
template <int K> VHD uint32_t fwd4_row_sel(int kind) {
    constexpr uint32_t r0 = fwd4_row(0, K), r1 = fwd4_row(1, K), r2 = fwd4_row(2, K);
    return kind == 1 ? r1 : kind == 2 ? r2 : r0;
}

VHD Fwd4P fwd4_prep(uint32_t key, int bd, const int32_t *qs_tab) {
    Fwd4P p;
    const int kind = kind4(key_flags(key));
    p.m[0] = fwd4_row_sel<0>(kind);
    p.m[1] = fwd4_row_sel<1>(kind);
    p.m[2] = fwd4_row_sel<2>(kind);
    p.m[3] = fwd4_row_sel<3>(kind);
    p.q = make_quant(key, 2, bd, qs_tab);
    p.nd = (int32_t)(2u * (uint32_t)p.q.off + 1u - (1u << p.q.qbits));
    p.mq = (int32_t)(1u << (32 - p.q.qbits));
    return p;
}

// Forward transform and quantisation of one 4x4 TB. w: the 16 residuals as loaded (8 words
// of int16 pairs, row-major); lev: the levels packed in pairs (row v, columns u, u+1);
// returns the non-zero count. Products on dp2a (2 MACs per instruction, the packed residual
// pairs used as they are). The 4x4 class is the memory-bound, instruction-heavy one, so the
// per-coefficient work is spread over both integer pipes: shifts by a power of two become
// multiply-highs (IMAD.HI, the multiply pipe) where that is exact, the sign-dependent
// rounding offset an IMAD by the sign bit.
// Rows: t = (y + 2^(s1-1)) >> s1, s1 = log2N + bd - 9 = bd - 7 (1..5); |t| < 2^15 and only
// its low 16 bits are used (packed for stage 2). With the accumulator biased by 2^31
// (modulo 2^32), umulhi(y + 2^31, 2^(32 - s1)) = (y >> s1) + 2^(31 - s1), whose low 16 bits
// are t's (2^(31 - s1) is a multiple of 2^16).
VHD Fwd4C fwd4_consts(int bd) {
    Fwd4C c;
    const uint32_t lim = (1u << bd) - 1u;
    c.hi2 = lim * 0x10001u;
    c.lo2 = ((0u - lim) & 0xffffu) * 0x10001u;
    c.r1 = (int)((1u << (bd - 8)) + 0x80000000u);
    c.m1 = 1u << (39 - bd);
    return c;
}

// Flat quantisation of the coefficient c = y >> 8 (y: the stage-2 sum with its rounding
// term): c Q + (c < 0 ? 2^qbits - 1 - off : off), then >> qbits; c < 0 iff y < 0, and
// mulhi_s(y, 1) is -1 then, else 0. vidk_cuda_hevc_self_check() compares it with quant1 for
// every int16 c, qP, bit depth and slice type.
VHD int fwd4_quant_flat(int y, const Fwd4P &p) {
    const int a = (y >> 8) * p.q.scale + p.q.off + mulhi_s(y, 1) * p.nd;
    return mulhi_s(a, p.mq);
}

template <bool SL>
VHD int fwd4_core(const uint32_t w[8], const Fwd4P &p, const Fwd4C &k, uint32_t lev[8]) {
    uint32_t x[8];
    VK_UNROLL
    for (int i = 0; i < 8; i++)
        x[i] = clip2p(w[i], k.lo2, k.hi2);
    const int r1 = k.r1;
    const uint32_t m1 = k.m1;
    uint32_t t[16];
    VK_UNROLL
    for (int y = 0; y < 4; y++)
        VK_UNROLL
    for (int k = 0; k < 4; k++)
        t[4 * y + k] =
            umulhi((uint32_t)dp2a_lo(x[2 * y], p.m[k], dp2a_hi(x[2 * y + 1], p.m[k], r1)), m1);
    uint32_t tp[8]; // (t[0][u], t[1][u]) and (t[2][u], t[3][u]) per column u
    VK_UNROLL
    for (int u = 0; u < 4; u++) {
        tp[2 * u] = prmt(t[u], t[4 + u], 0x5410);
        tp[2 * u + 1] = prmt(t[8 + u], t[12 + u], 0x5410);
    }
    int cnt = 0;
    VK_UNROLL
    for (int v = 0; v < 4; v++) {
        int l[4];
        VK_UNROLL
        for (int u = 0; u < 4; u++) {
            // columns: c = (y + 128) >> 8 (shift log2N + 6), the rounding in the accumulator
            const int y = dp2a_lo(tp[2 * u], p.m[v], dp2a_hi(tp[2 * u + 1], p.m[v], 128));
            if (SL)
                l[u] = q_at<true>(p.q, y >> 8, 4 * v + u);
            else
                l[u] = fwd4_quant_flat(y, p);
        }
        lev[2 * v] = pack16(l[0], l[1]);
        lev[2 * v + 1] = pack16(l[2], l[3]);
    }
    // Non-zero count on the packed pairs: a half h is non-zero iff h & 0x7fff is, except
    // h = -32768 (scaling lists only; flat: |level| < 2^15, see above), counted apart;
    // adding 0x7fff to each masked half sets its bit 15 exactly then, without a carry into
    // the other half. Bits 15 and 31 of the 8 words, summed in 16-bit halves.
    uint32_t acc = 0;
    VK_UNROLL
    for (int i = 0; i < 8; i++)
        acc += umulhi(((lev[i] & 0x7fff7fffu) + 0x7fff7fffu) & 0x80008000u, 1u << 17);
    cnt = (int)((acc & 0xffffu) + (acc >> 16));
    if (SL) {
        VK_UNROLL
        for (int i = 0; i < 8; i++)
            cnt += ((lev[i] & 0xffffu) == 0x8000u) + ((lev[i] >> 16) == 0x8000u);
    }
    return cnt;
}

// ---- forward on the CUDA cores, 8x8 .. 32x32: N lanes per TB -------------------------------
// 32 / N TBs per warp, TB j on lanes N j .. N j + N - 1. Phase 1: lane r transforms row r
// and stores it (int16) in its TB's row region, S = N + 4 int16 per row (8-byte stores).
// Phase 2: lane u transforms column u and keeps the N levels. Phase 3 writes them in the
// output layout.

template <int N> VHD uint8_t *cc_region(uint8_t *wsm, int lane) {
    return wsm + (lane / N) * row_region(N);
}
template <int N> constexpr int log2_of() {
    return N == 32 ? 5 : N == 16 ? 4 : N == 8 ? 3 : 2;
}

template <int N> VHD void fwdcc_rows(const int16_t *src, int lane, int bd, uint8_t *wsm) {
    constexpr int S = N + 4, L = log2_of<N>();
    const int r = lane & (N - 1), lim = (1 << bd) - 1, s1 = L + bd - 9, r1 = 1 << (s1 - 1);
    int32_t x[N], o[N];
    VK_UNROLL
    for (int i = 0; i < N / 8; i++) {
        uint32_t w[4];
        ld16(src + r * N + 8 * i, w);
        VK_UNROLL
        for (int k = 0; k < 4; k++) {
            const uint32_t c = clip2(w[k], lim);
            x[8 * i + 2 * k] = s16lo(c);
            x[8 * i + 2 * k + 1] = s16hi(c);
        }
    }
    Fwd1<N>::run(x, o);
    uint8_t *row = cc_region<N>(wsm, lane) + r * S * 2;
    VK_UNROLL
    for (int i = 0; i < N / 4; i++) {
        uint32_t w[2];
        w[0] = pack16((o[4 * i] + r1) >> s1, (o[4 * i + 1] + r1) >> s1);
        w[1] = pack16((o[4 * i + 2] + r1) >> s1, (o[4 * i + 3] + r1) >> s1);
        st8(row + 8 * i, w);
    }
}

// Column u of the TB: levels (packed pairs along v) and the non-zero count.
template <int N, bool SL>
VHD int fwdcc_cols(int lane, uint32_t key, int bd, const int32_t *qs_tab, const uint8_t *wsm,
                   uint32_t lev[N / 2]) {
    constexpr int S = N + 4, L = log2_of<N>();
    const int u = lane & (N - 1);
    const uint8_t *reg = cc_region<N>(const_cast<uint8_t *>(wsm), lane);
    int32_t c[N], o[N];
    VK_UNROLL
    for (int y = 0; y < N; y++)
        c[y] = *reinterpret_cast<const int16_t *>(reg + (y * S + u) * 2);
    Fwd1<N>::run(c, o);
    const Quant q = make_quant(key, L, bd, qs_tab);
    const int r2 = 1 << (L + 5);
    int cnt = 0;
    VK_UNROLL
    for (int v = 0; v < N; v += 2) {
        const int l0 = q_at<SL>(q, (o[v] + r2) >> (L + 6), v * N + u);
        const int l1 = q_at<SL>(q, (o[v + 1] + r2) >> (L + 6), (v + 1) * N + u);
        cnt += (l0 != 0) + (l1 != 0);
        lev[v / 2] = pack16(l0, l1);
    }
    return cnt;
}

// Output layout of the forward levels in shared memory: TB j at j * lev_region_bytes(N),
// rows of N int16; 16x16 and 32x32 rows XOR-swizzle their 16-byte chunks so that the
// tensor-core fragment stores and the 16-byte reads are both conflict-free
// (docs/HEVC_CUDA.md).
template <int N> VHD int lev_off(int v, int u) {
    if (N == 32) return v * 64 + ((((u >> 3) ^ ((v >> 1) & 3))) << 4) + (u & 7) * 2;
    if (N == 16) return v * 32 + ((((u >> 3) ^ ((v >> 2) & 1))) << 4) + (u & 7) * 2;
    return v * 16 + u * 2;
}
template <int N> VHD int chunk_off(int r, int c) {
    if (N == 32) return r * 64 + ((c ^ ((r >> 1) & 3)) << 4);
    if (N == 16) return r * 32 + ((c ^ ((r >> 2) & 1)) << 4);
    return r * 16;
}
template <int N> VHD uint8_t *lev_region(uint8_t *wsm, int j) {
    return wsm + j * lev_region_bytes(N);
}

template <int N> VHD void fwdcc_put(int lane, const uint32_t lev[N / 2], uint8_t *wsm) {
    const int u = lane & (N - 1);
    uint8_t *reg = lev_region<N>(wsm, lane / N);
    VK_UNROLL
    for (int v = 0; v < N; v += 2) {
        *reinterpret_cast<int16_t *>(reg + lev_off<N>(v, u)) = (int16_t)s16lo(lev[v / 2]);
        *reinterpret_cast<int16_t *>(reg + lev_off<N>(v + 1, u)) = (int16_t)s16hi(lev[v / 2]);
    }
}

// The lane's share of its own TB's levels (TB lane / N) from the output layout to dst:
// N / 8 chunks of 16 bytes, consecutive lanes of a TB on consecutive chunks.
template <int N> VHD void lev_store_own(int lane, const uint8_t *wsm, int16_t *dst) {
    const uint8_t *reg = lev_region<N>(const_cast<uint8_t *>(wsm), lane / N);
    const int q = lane & (N - 1);
    VK_UNROLL
    for (int i = 0; i < N / 8; i++) {
        const int c = i * N + q, r = c / (N / 8), cc = c % (N / 8);
        uint32_t w[4];
        ld16(reg + chunk_off<N>(r, cc), w);
        st16(dst + r * N + cc * 8, w);
    }
}

// ---- forward, tensor cores -----------------------------------------------------------------

struct TcF32 {
    uint32_t bh[4][2], bl[4][2]; // stage-1 B: residual rows 8 nt + g, byte planes
    int32_t acc[2][4][4];        // [mt][nt][c]
    uint32_t ah[2][4], al[2][4]; // stage-2 A, byte planes
};

struct TcF16 {                   // two TBs
    uint32_t bh[2][2], bl[2][2]; // [tb][nt]
    int32_t acc[2][2][4];        // [tb][nt][c]
    uint32_t ah[2][2], al[2][2]; // [tb][reg]
};

// Residual row y = 8 nt + g, columns 8t..8t+7 (one 16-byte load), clipped and split.
VHD void tcf32_load(TcF32 &s, int lane, const int16_t *src, int bd, bool act) {
    const int g = lane >> 2, t = lane & 3, lim = (1 << bd) - 1;
    VK_UNROLL
    for (int nt = 0; nt < 4; nt++) {
        uint32_t w[4] = {0, 0, 0, 0};
        if (act) ld16(src + (8 * nt + g) * 32 + 8 * t, w);
        int x[8];
        VK_UNROLL
        for (int k = 0; k < 4; k++) {
            x[2 * k] = clampi(s16lo(w[k]), -lim, lim);
            x[2 * k + 1] = clampi(s16hi(w[k]), -lim, lim);
        }
        split4(x[0], x[1], x[2], x[3], s.bl[nt][0], s.bh[nt][0]);
        split4(x[4], x[5], x[6], x[7], s.bl[nt][1], s.bh[nt][1]);
    }
}

VHD void tcf16_load(TcF16 &s, int lane, const int16_t *src0, const int16_t *src1, int bd,
                    bool act0, bool act1) {
    const int g = lane >> 2, t = lane & 3, lim = (1 << bd) - 1;
    VK_UNROLL
    for (int j = 0; j < 2; j++)
        VK_UNROLL
    for (int nt = 0; nt < 2; nt++) {
        uint32_t w[2] = {0, 0};
        if (j ? act1 : act0) ld8((j ? src1 : src0) + (8 * nt + g) * 16 + 4 * t, w);
        split4(clampi(s16lo(w[0]), -lim, lim), clampi(s16hi(w[0]), -lim, lim),
               clampi(s16lo(w[1]), -lim, lim), clampi(s16hi(w[1]), -lim, lim), s.bl[j][nt],
               s.bh[j][nt]);
    }
}

// Stage-1 accumulators -> rounded int16 values -> stage-2 A fragments (D-to-A permutation).
// `clip`: the inverse's normative 16-bit clip; the forward's values provably fit.
VHD int mid_round(int32_t a, int sh, bool inv) {
    const int v = (a + (1 << (sh - 1))) >> sh;
    return inv ? clip16(v) : v;
}

VHD void tc32_mid(int32_t acc[2][4][4], uint32_t ah[2][4], uint32_t al[2][4], int sh,
                  bool inv) {
    VK_UNROLL
    for (int mt = 0; mt < 2; mt++)
        VK_UNROLL
    for (int r = 0; r < 4; r++) {
        const int nt = 2 * (r >> 1), c = 2 * (r & 1);
        split4(mid_round(acc[mt][nt][c], sh, inv), mid_round(acc[mt][nt][c + 1], sh, inv),
               mid_round(acc[mt][nt + 1][c], sh, inv),
               mid_round(acc[mt][nt + 1][c + 1], sh, inv), al[mt][r], ah[mt][r]);
    }
}

VHD void tc16_mid(int32_t acc[2][4], uint32_t ah[2], uint32_t al[2], int sh, bool inv) {
    VK_UNROLL
    for (int r = 0; r < 2; r++) {
        const int c = 2 * r;
        split4(mid_round(acc[0][c], sh, inv), mid_round(acc[0][c + 1], sh, inv),
               mid_round(acc[1][c], sh, inv), mid_round(acc[1][c + 1], sh, inv), al[r], ah[r]);
    }
}

// Stage-2 accumulators D[u][v] (C^T) -> levels in the output layout; non-zero count.
template <bool SL>
VHD int tcf32_quant(const TcF32 &s, int lane, uint32_t key, int bd, const int32_t *qs_tab,
                    uint8_t *wsm) {
    const int g = lane >> 2, t = lane & 3;
    const Quant q = make_quant(key, 5, bd, qs_tab);
    int cnt = 0;
    VK_UNROLL
    for (int mt = 0; mt < 2; mt++)
        VK_UNROLL
    for (int nt = 0; nt < 4; nt++)
        VK_UNROLL
    for (int c = 0; c < 4; c++) {
        const int u = 16 * mt + g + 8 * (c >> 1), v = 8 * nt + 2 * t + (c & 1);
        const int l = q_at<SL>(q, (s.acc[mt][nt][c] + 1024) >> 11, v * 32 + u);
        cnt += l != 0;
        *reinterpret_cast<int16_t *>(wsm + lev_off<32>(v, u)) = (int16_t)l;
    }
    return cnt;
}

template <bool SL>
VHD void tcf16_quant(const TcF16 &s, int lane, const uint32_t key[2], int bd,
                     const int32_t *qs_tab, uint8_t *wsm, int cnt[2]) {
    const int g = lane >> 2, t = lane & 3;
    VK_UNROLL
    for (int j = 0; j < 2; j++) {
        const Quant q = make_quant(key[j], 4, bd, qs_tab);
        uint8_t *reg = lev_region<16>(wsm, j);
        int n = 0;
        VK_UNROLL
        for (int nt = 0; nt < 2; nt++)
            VK_UNROLL
        for (int c = 0; c < 4; c++) {
            const int u = g + 8 * (c >> 1), v = 8 * nt + 2 * t + (c & 1);
            const int l = q_at<SL>(q, (s.acc[j][nt][c] + 512) >> 10, v * 16 + u);
            n += l != 0;
            *reinterpret_cast<int16_t *>(reg + lev_off<16>(v, u)) = (int16_t)l;
        }
        cnt[j] = n;
    }
}

} // namespace vidk_hevccu

// The rest of the family, by topic.
#include "hevc_kern_inv.cuh"

#endif
