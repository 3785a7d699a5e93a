// Motion search on the device, the part every kernel shares: constants and key formats,
// the kernel arguments, the launch plan (make_plan), the device helpers (staging,
// reductions) and the register caps of the kernel configurations. Included through
// me_kern.cuh (design notes there); plain C++ plus the CUDA built-ins of me_emu.cuh.
#ifndef VIDK_CUDA_ME_KERN_COMMON_CUH
#define VIDK_CUDA_ME_KERN_COMMON_CUH

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "me_core.h"
#include "vidkern/vidkern.h"

#if defined(__CUDACC__)
#define VK_HD                __host__ __device__
#define VK_DYN_SMEM(T, name) extern __shared__ T name[]
#endif

namespace vidk_me {

// ---------------------------------------------------------------------------------------
// Shared constants and host/device helpers

constexpr int kGroup = 64;    // samples per side of a macroblock group (4x4 MBs)
constexpr int kRankBits = 10; // rank(mvy) <= 2 * VIDK_ME_MAX_RANGE = 512 < 1024
constexpr unsigned kKey32Max = (1u << (32 - kRankBits)) - 1; // largest cost of a 32-bit key
constexpr int kSlots = 661;            // partitions of a 64x64 group over the 9 shapes
constexpr int kThreadsMax = 256;       // threads per block of the fast kernels
constexpr int kLmax = 256;             // candidate rows per block (shared memory bound)
constexpr size_t kSmemMax = 48 * 1024; // dynamic shared memory of a block (no opt-in)
constexpr unsigned long long kKeyNone = ~0ull;
// Window pitch of the f41 kernels in words: ((C + 58) >> 2) + 5, odd, is 21 for every C
// make_plan gives them (at most 8), a compile-time stride for the loop's shared loads.
constexpr int kWP41 = 21;
// The same for the f41 kernels without the thin shapes (F_NO4, the coding loop's search),
// whose blocks walk NP passes of C columns over one window: C * NP <= kColsW columns.
constexpr int kWP41W = 37;
constexpr int kColsW = 73; // ((73 + 58) >> 2) + 5 = 37
// F_SHIFT (below): four copies of the window, copy s shifted by s bytes, pitch kWPS words,
// for C * NP <= kColsS columns. A thread reads words (sx >> 2) and + 1 of copy sx & 3,
// sx <= 58 + C NP: ((58 + C NP) >> 2) + 2 words a copy; copy 0 holds one more, from which
// the others are formed: ((35 + 58) >> 2) + 3 = 26 <= 27.
constexpr int kWPS = 27;
constexpr int kColsS = 35;
// Dynamic shared memory of an F_SHIFT block (opt-in above 48 kB: four blocks of 53.4 kB at
// 1080p R 16 fit an SM's 228 kB).
constexpr size_t kSmemShift = 56 * 1024;

static_assert(2 * VIDK_ME_MAX_RANGE < (1 << kRankBits), "rank field");
static_assert((2 * VIDK_ME_MAX_RANGE + 1) * (2 * VIDK_ME_MAX_RANGE + 1) <= (1 << 19),
              "raster field");

// Entries per macroblock of the f41 kernels' table of key constants: L rounded up to 8.
VK_HD inline int f41_kpitch(int L) {
    return (L + 7) & ~7;
}

// Dynamic shared memory of an f41 block of L candidate rows and window pitch wp (copies of
// the window: 4 with F_SHIFT): the 64x64 current samples, the key constants (16 x
// f41_kpitch(L)), the window, the reduction slots.
inline size_t f41_smem(int L, int wp, int copies = 1) {
    const size_t words =
        1024 + 16 * (size_t)f41_kpitch(L) + (size_t)copies * (size_t)(kGroup + L - 1) * wp;
    return (words + 1) / 2 * 8 + (size_t)kSlots * 8;
}

// Block sizes in VidkBlockSize order (4x4, 8x4, 4x8, 8x8, 16x8, 8x16, 16x16, 32x32, 64x64).
VK_HD constexpr int bs_w(int bs) {
    return bs == 0   ? 4
           : bs == 1 ? 8
           : bs == 2 ? 4
           : bs == 3 ? 8
           : bs == 4 ? 16
           : bs == 5 ? 8
           : bs == 6 ? 16
           : bs == 7 ? 32
                     : 64;
}
VK_HD constexpr int bs_h(int bs) {
    return bs == 0   ? 4
           : bs == 1 ? 4
           : bs == 2 ? 8
           : bs == 3 ? 8
           : bs == 4 ? 8
           : bs == 5 ? 16
           : bs == 6 ? 16
           : bs == 7 ? 32
                     : 64;
}
// First slot of each shape in a group's slot list (shape-major, raster inside the group).
VK_HD constexpr int slot_off(int bs) {
    return bs == 0   ? 0
           : bs == 1 ? 256
           : bs == 2 ? 384
           : bs == 3 ? 512
           : bs == 4 ? 576
           : bs == 5 ? 608
           : bs == 6 ? 640
           : bs == 7 ? 656
           : bs == 8 ? 660
                     : 661;
}

VK_HD inline int vk_abs(int v) {
    return v < 0 ? -v : v;
}
VK_HD inline int vk_imin(int a, int b) {
    return a < b ? a : b;
}
VK_HD inline int vk_imax(int a, int b) {
    return a > b ? a : b;
}
VK_HD inline int vk_clamp(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}
VK_HD inline unsigned vk_umin(unsigned a, unsigned b) {
    return a < b ? a : b;
}
// min(a, b, c): one VIMNMX3 on sm_90.
VK_HD inline unsigned vk_umin3(unsigned a, unsigned b, unsigned c) {
#if defined(__CUDA_ARCH__)
    return __vimin3_u32(a, b, c);
#else
    return vk_umin(a, vk_umin(b, c));
#endif
}

// Bits of a float (key ranks computed on the FMA pipe, f41 round 3).
VK_HD inline unsigned vk_fbits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    union {
        float f;
        unsigned u;
    } v;
    v.f = f;
    return v.u;
#endif
}
VK_HD inline unsigned long long vk_umin64(unsigned long long a, unsigned long long b) {
    return a < b ? a : b;
}

// Length of the signed Exp-Golomb code of v (H.264 9.1.1: se(v) maps v > 0 to 2v - 1 and
// v <= 0 to -2v; ue(k) takes 2 * floor(log2(k + 1)) + 1 bits). Same as vidk_me_mv_bits.
VK_HD inline unsigned mv_bits(int v) {
    return vidk_se_bits(v); // src/me_core.h
}

// Tie order of candidate rows inside one column: 0, -1, 1, -2, 2, ...
VK_HD inline unsigned mvy_rank(int mvy) {
    return mvy < 0 ? (unsigned)(-2 * mvy - 1) : (unsigned)(2 * mvy);
}
VK_HD inline int rank_mvy(unsigned r) {
    return (r & 1u) ? -(int)((r + 1u) >> 1) : (int)(r >> 1);
}

// The global key: cost, then |mvx| + |mvy|, then raster order ((mvy + R) * N + mvx + R).
VK_HD inline unsigned long long make_key(unsigned cost, int mvx, int mvy, int R, int N) {
    const unsigned l1 = (unsigned)(vk_abs(mvx) + vk_abs(mvy));
    const unsigned raster = (unsigned)((mvy + R) * N + (mvx + R));
    return (unsigned long long)cost << 32 | (unsigned long long)l1 << 19 | raster;
}

// A thread's 32-bit key (cost << 10 | rank) widened with the thread's mvx.
VK_HD inline unsigned long long widen_key(unsigned k, int mvx, int R, int N) {
    if (k == 0xffffffffu) return kKeyNone;
    return make_key(k >> kRankBits, mvx, rank_mvy(k & ((1u << kRankBits) - 1u)), R, N);
}

// ---------------------------------------------------------------------------------------
// Arguments (passed by value) and the launch plan

enum Path { PATH_GENERIC = 0, PATH_F16 = 1, PATH_F41 = 2 };

// Template flags of the fast kernels.
enum {
    F_SUB = 1,    // f41: the shapes between 4x4 and 16x16 (8x4, 4x8, 8x8, 16x8, 8x16)
    F_MID = 2,    // f41: 16x16 sums (16x16 key; needed for 32x32 / 64x64)
    F_BIG = 4,    // 32x32 and 64x64
    F_LAMBDA = 8, // lambda > 0: mv cost per candidate
    F_NO4 = 16,   // f41 with F_SUB: no shape 4 samples wide or high (4x4, 8x4, 4x8): the
                  // partitions of H.264 from level 3.1 on (16x16, 16x8, 8x16, 8x8); not with
                  // F_BIG
    F_SHIFT = 32, // f41 with F_NO4: the window staged as four copies shifted by 0..3 bytes
                  // (kWPS), so that every thread reads aligned words (no byte permutes)
};

// The window pitch of the f41 kernel with flags fl (make_plan and the kernels).
VK_HD constexpr int f41_wp(int fl) {
    return (fl & F_SHIFT) ? kWPS : (fl & F_NO4) ? kWP41W : kWP41;
}
// Copies of the window of the f41 kernel with flags fl.
VK_HD constexpr int f41_copies(int fl) {
    return (fl & F_SHIFT) ? 4 : 1;
}
// Dynamic shared memory a fast kernel's block may take (me.cu asks for the opt-in).
inline size_t smem_limit(int flags) {
    return (flags & F_SHIFT) ? kSmemShift : kSmemMax;
}
// The shapes the f16 kernel with flags fl computes.
VK_HD constexpr unsigned f16_mask(int fl) {
    return VIDK_ME_SHAPE(VIDK_BLOCK_16x16) |
           ((fl & F_BIG) ? VIDK_ME_SHAPE(VIDK_BLOCK_32x32) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64)
                         : 0u);
}

struct MeArgs {
    const uint8_t *cur, *ref;      // 8-bit planes (fast kernels)
    const uint16_t *cur16, *ref16; // 16-bit planes (generic kernel, bitdepth > 8)
    int pitch;                     // samples between rows of both planes
    int w, h;
    int R, N; // range, 2R + 1
    unsigned lambda;
    unsigned kmul;      // 1 << kRankBits (see key_of)
    const VidkMv *pred; // mb_w * mb_h or NULL (0, 0)
    int mb_w, mb_h;
    int GW, GH;                    // macroblock groups across / down
    int gy0, gyn;                  // band: group rows gy0 .. gy0 + gyn - 1
    int C, ncb;                    // candidate columns per pass, column blocks
    int NP;                        // passes of C columns per block (f41 with F_NO4; else 1)
    int L, nsl;                    // candidate rows per block, row slices
    int WP, WW;                    // window pitch, words staged per row (<= WP)
    unsigned long long *keys;      // key arrays of every shape (extended grid)
    int key_off[VIDK_BLOCK_COUNT]; // first key of each shape
    int key_ew[VIDK_BLOCK_COUNT];  // extended grid width of each shape (GW * 64 / bw)
    // generic kernel only
    int g_bs, g_gw, g_gh, g_slice; // shape, its real grid, candidates per warp
};

struct FinArgs {
    const unsigned long long *keys;
    VidkMeResult *res;
    int R, N;
    unsigned lambda;
    const VidkMv *pred;
    int mb_w;
    int nshape;
    int bs[VIDK_BLOCK_COUNT];
    int key_off[VIDK_BLOCK_COUNT], key_ew[VIDK_BLOCK_COUNT];
    int gw[VIDK_BLOCK_COUNT], res_off[VIDK_BLOCK_COUNT];
    int row0[VIDK_BLOCK_COUNT], rows[VIDK_BLOCK_COUNT];
};

struct MePlan {
    int w, h, bitdepth, R, N, mb_w, mb_h, GW, GH;
    unsigned shapes, lambda;
    int lam;         // lambda > 0 (the predictor matters)
    int path, flags; // Path, F_* template flags of the fast kernel
    int C, ncb, NP, L, nsl, WP, WW, threads;
    size_t smem; // dynamic shared memory of a fast kernel block
    int pitch;   // device plane pitch in samples
    size_t plane_bytes;
    int key_off[VIDK_BLOCK_COUNT], key_ew[VIDK_BLOCK_COUNT];
    size_t nkeys;
    int gw[VIDK_BLOCK_COUNT], gh[VIDK_BLOCK_COUNT], res_off[VIDK_BLOCK_COUNT];
    size_t nres;
    int nbands;
    int band_g0[8], band_gn[8];
};

// Grid of a shape for the field (me.h): H.264 shapes cover the macroblock grid, 32x32
// and 64x64 cover ceil(w / 32) x ceil(h / 32) and ceil(w / 64) x ceil(h / 64).
inline void field_grid(int w, int h, int bs, int *gw, int *gh) {
    const int mb_w = (w + 15) / 16, mb_h = (h + 15) / 16;
    if (bs <= VIDK_BLOCK_16x16) {
        *gw = mb_w * 16 / bs_w(bs);
        *gh = mb_h * 16 / bs_h(bs);
    } else {
        *gw = (w + bs_w(bs) - 1) / bs_w(bs);
        *gh = (h + bs_h(bs) - 1) / bs_h(bs);
    }
}

// Largest cost a candidate can reach (any shape the fast kernel computes): the 32-bit
// thread key holds costs up to kKey32Max.
inline unsigned long long max_cost_bound(int bitdepth, unsigned shapes, unsigned lambda, int R,
                                         int maxabs_pred) {
    const unsigned long long maxs = (1ull << bitdepth) - 1;
    const int side = (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_64x64))   ? 64
                     : (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_32x32)) ? 32
                                                                  : 16;
    // mv - pred spans at most R + maxabs in magnitude; the code of -M is the longest.
    const unsigned long long bits = mv_bits(-(R + maxabs_pred));
    return maxs * 16ull * 16ull * (side / 16) * (side / 16) + lambda * 2ull * bits;
}

// Candidate columns per block: C in [lo, hi] (step `step`) with the least padding in
// ceil(N / C) * C; ties to the larger C.
inline int pick_cols(int N, int lo, int hi, int step) {
    if (N <= lo) return (N + step - 1) / step * step;
    int best = hi, waste = 1 << 30;
    for (int c = hi; c >= lo; c -= step) {
        const int wst = (N + c - 1) / c * c - N;
        if (wst < waste) waste = wst, best = c;
    }
    return best;
}

// Fill the plan. sms: multiprocessors (for the row-slice split). Returns 0 or -EINVAL.
inline int make_plan(MePlan *pl, int w, int h, int bitdepth, const VidkMeParams *p,
                     int maxabs_pred, int sms) {
    *pl = MePlan();
    if (w < 1 || h < 1 || bitdepth < 8 || bitdepth > 16 || p->range < 0 ||
        p->range > VIDK_ME_MAX_RANGE || !p->shapes || (p->shapes >> VIDK_BLOCK_COUNT))
        return VIDK_ERR(EINVAL);
    pl->w = w, pl->h = h, pl->bitdepth = bitdepth;
    pl->R = p->range, pl->N = 2 * p->range + 1;
    pl->shapes = p->shapes, pl->lambda = p->lambda;
    pl->lam = p->lambda > 0;
    pl->mb_w = (w + 15) / 16, pl->mb_h = (h + 15) / 16;
    pl->GW = (pl->mb_w + 3) / 4, pl->GH = (pl->mb_h + 3) / 4;

    const unsigned big = VIDK_ME_SHAPE(VIDK_BLOCK_32x32) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64);
    const unsigned sub = VIDK_ME_SHAPE(VIDK_BLOCK_8x4) | VIDK_ME_SHAPE(VIDK_BLOCK_4x8) |
                         VIDK_ME_SHAPE(VIDK_BLOCK_8x8) | VIDK_ME_SHAPE(VIDK_BLOCK_16x8) |
                         VIDK_ME_SHAPE(VIDK_BLOCK_8x16);
    const unsigned s4 = VIDK_ME_SHAPE(VIDK_BLOCK_4x4), s16 = VIDK_ME_SHAPE(VIDK_BLOCK_16x16);
    const int fast = bitdepth == 8 && max_cost_bound(bitdepth, p->shapes, p->lambda, p->range,
                                                     pl->lam ? maxabs_pred : 0) <= kKey32Max;
    int flags = pl->lam ? F_LAMBDA : 0;
    if (p->shapes & big) flags |= F_BIG;
    if (!fast) {
        pl->path = PATH_GENERIC;
    } else if (!(p->shapes & (sub | s4))) {
        pl->path = PATH_F16;
    } else {
        pl->path = PATH_F41;
        if (p->shapes & sub) flags |= F_SUB | F_MID;
        if (p->shapes & (s16 | big)) flags |= F_MID;
        // Only 8x8 and larger (and not 32x32 / 64x64): the per-candidate minima of the 4x4,
        // 8x4 and 4x8 keys (20 of a thread's 21) are left out.
        const unsigned thin =
            s4 | VIDK_ME_SHAPE(VIDK_BLOCK_8x4) | VIDK_ME_SHAPE(VIDK_BLOCK_4x8);
        if ((flags & F_SUB) && !(flags & F_BIG) && !(p->shapes & thin)) flags |= F_NO4;
    }
    pl->flags = flags;

    // Device planes: rows padded to 64 bytes (aligned 32-bit loads anywhere in a row).
    const int bps = bitdepth > 8 ? 2 : 1;
    pl->pitch = ((w * bps + 63) / 64 * 64) / bps;
    pl->plane_bytes = (size_t)pl->pitch * (size_t)h * (size_t)bps;

    // Keys: every shape over the extended grid (whole groups), so the kernels never test
    // whether a partition exists; the finalize step reads only the real grid.
    size_t k = 0;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        pl->key_off[bs] = (int)k;
        pl->key_ew[bs] = pl->GW * kGroup / bs_w(bs);
        k += (size_t)pl->key_ew[bs] * (size_t)(pl->GH * kGroup / bs_h(bs));
    }
    pl->nkeys = k;
    size_t r = 0;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        field_grid(w, h, bs, &pl->gw[bs], &pl->gh[bs]);
        pl->res_off[bs] = (int)r;
        if (p->shapes & VIDK_ME_SHAPE(bs)) r += (size_t)pl->gw[bs] * (size_t)pl->gh[bs];
    }
    pl->nres = r;

    // Bands of group rows: the upload of later rows, the search of earlier bands and the
    // download of their results overlap.
    pl->nbands = vk_clamp(pl->GH / 3, 1, 6);
    if (pl->path == PATH_GENERIC) pl->nbands = 1;
    for (int b = 0, g = 0; b < pl->nbands; b++) {
        const int g1 = (int)((long)pl->GH * (b + 1) / pl->nbands);
        pl->band_g0[b] = g, pl->band_gn[b] = g1 - g;
        g = g1;
    }

    if (pl->path == PATH_GENERIC) {
        pl->threads = 256;
        return 0;
    }
    const int N = pl->N;
    if (pl->path == PATH_F16) {
        pl->C = pick_cols(N, 8, 16, 2); // 16 threads per column: C even fills warps
        pl->threads = 16 * pl->C;
    } else {
        pl->C = pick_cols(N, 4, 8, 1); // one warp per column
        pl->threads = 32 * pl->C;
    }
    pl->ncb = (N + pl->C - 1) / pl->C;
    // Row slices: at least N / kLmax; more when there are too few blocks to fill the GPU.
    const int kbig = pl->path == PATH_F16 ? 16 : 4;
    const long base = (long)pl->GW * pl->GH * pl->ncb;
    // f41: as many rows as the default 48 kB of shared memory hold (kSmemMax, f41_smem):
    // 228 with the pitch kWP41, 140 with the wide window of F_NO4 (kWP41W).
    const int wp41 = f41_wp(flags);
    int lmax = kLmax;
    while (pl->path == PATH_F41 && f41_smem(lmax, wp41) > kSmemMax)
        lmax -= 4;
    int nsl = (N + lmax - 1) / lmax;
    const long want = 8L * (sms > 0 ? sms : 1);
    if (base * nsl < want) {
        const int more = (int)((want + base - 1) / base);
        nsl = vk_imax(nsl, vk_imin(more, (N + kbig - 1) / kbig));
    }
    int L = (N + nsl - 1) / nsl;
    if (L > kbig) L = (L + kbig - 1) / kbig * kbig;
    if (L > lmax) L = lmax;
    pl->L = L;
    pl->nsl = (N + L - 1) / L;
    pl->NP = 1;
    if (pl->path == PATH_F41 && (pl->flags & F_NO4)) {
        // Passes (the coding loop's search): a block walks NP passes of C columns over one
        // staged window, so that staging, key constants and the block's reduction are paid
        // once for C * NP columns. NP and the column blocks from a model of the SMs' time:
        // blocks per SM x (NP x L + 54 rows of fixed cost: staging, reduction) over the
        // share of ~24 warps per SM a block's residency gives (72 registers: 28 warps).
        const int nc = (N + pl->C - 1) / pl->C, npmax = kColsW / pl->C;
        const long per = (long)pl->GW * pl->GH * pl->nsl;
        const long nsm = sms > 0 ? sms : 1, res = vk_imax(1, 28 / pl->C);
        double best = 0;
        for (int ncb = (nc + npmax - 1) / npmax; ncb <= nc; ncb++) {
            const int np = (nc + ncb - 1) / ncb;
            const long bpsm = (per * ((nc + np - 1) / np) + nsm - 1) / nsm;
            const double eff = vk_imin(24, (int)vk_imin(bpsm, res) * pl->C) / 24.0;
            const double t = (double)bpsm * (np * L + 54) / eff;
            if (ncb == (nc + npmax - 1) / npmax || t < best) best = t, pl->NP = np;
        }
        pl->ncb = (nc + pl->NP - 1) / pl->NP;
    }
    const int cols = pl->C * pl->NP;
    const int ww = ((cols + 58) >> 2) + 5; // words a window row needs (see the kernels)
    pl->WP = pl->WW = ww | 1;
    size_t words = 1024 + (size_t)(kGroup + L - 1) * (size_t)pl->WP;
    if (pl->path == PATH_F41) { // + the key constants of the 16 macroblocks (f41_body)
        if (pl->WP > wp41) return VIDK_ERR(EINVAL); // cannot happen: C <= 8, C * NP <= kColsW
        // The shifted copies where the columns and the four copies' rows fit (1080p R 16:
        // 35 columns, 96 rows, 53.4 kB): no byte permute and a load less per row.
        if ((pl->flags & F_NO4) && cols <= kColsS && f41_smem(L, kWPS, 4) <= kSmemShift)
            pl->flags |= F_SHIFT;
        pl->WP = f41_wp(pl->flags);
        if (pl->flags & F_SHIFT)
            pl->WW = ((cols + 58) >> 2) + 3; // the copies' words, one more for forming them
        else if (pl->flags & F_NO4)
            pl->WW = ww; // the words the passes read (the pitch is wider)
        pl->smem = f41_smem(L, pl->WP, f41_copies(pl->flags));
        return 0;
    }
    pl->smem = (words + 1) / 2 * 8 + (size_t)kSlots * 8;
    return 0;
}

// Rows of the current and reference planes that band b needs (the kernels of band b
// read rows [0, cur_rows) and [0, ref_rows) at most; clamped rows included).
inline void band_rows(const MePlan *pl, int b, int *cur_rows, int *ref_rows) {
    const int y1 = (pl->band_g0[b] + pl->band_gn[b]) * kGroup; // exclusive
    *cur_rows = vk_imin(pl->h, y1);
    *ref_rows = vk_clamp(y1 + pl->R, 1, pl->h);
    if (pl->path == PATH_GENERIC) *cur_rows = *ref_rows = pl->h;
}

// Row range of shape bs's real grid inside band b.
inline void band_block_rows(const MePlan *pl, int b, int bs, int *r0, int *n) {
    const int per = kGroup / bs_h(bs);
    const int a = pl->band_g0[b] * per;
    const int e = vk_imin((pl->band_g0[b] + pl->band_gn[b]) * per, pl->gh[bs]);
    *r0 = a;
    *n = e > a ? e - a : 0;
}

inline MeArgs base_args(const MePlan *pl) {
    MeArgs a = MeArgs();
    a.pitch = pl->pitch;
    a.w = pl->w, a.h = pl->h, a.R = pl->R, a.N = pl->N, a.lambda = pl->lambda;
    a.kmul = 1u << kRankBits;
    a.mb_w = pl->mb_w, a.mb_h = pl->mb_h, a.GW = pl->GW, a.GH = pl->GH;
    a.C = pl->C, a.ncb = pl->ncb, a.NP = pl->NP, a.L = pl->L, a.nsl = pl->nsl;
    a.WP = pl->WP, a.WW = pl->WW;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        a.key_off[bs] = pl->key_off[bs];
        a.key_ew[bs] = pl->key_ew[bs];
    }
    return a;
}

// ---------------------------------------------------------------------------------------
// Device helpers

// Sum of |a_i - b_i| over the 4 bytes, plus c: one VABSDIFF4.U8.ACC on sm_90.
__device__ __forceinline__ unsigned sad4_acc(unsigned a, unsigned b, unsigned c) {
#if defined(__CUDA_ARCH__)
    unsigned d;
    asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
#else
    for (int i = 0; i < 32; i += 8) {
        const int x = (int)((a >> i) & 255u), y = (int)((b >> i) & 255u);
        c += (unsigned)(x > y ? x - y : y - x);
    }
    return c;
#endif
}

// Four samples x..x+3 of a row with x clamped into [0, w - 1], sample x in the low byte.
__device__ __forceinline__ unsigned gather4(const uint8_t *row, int x, int w) {
    if (x >= 0 && x + 3 < w) return __ldg(reinterpret_cast<const unsigned *>(row + x));
    unsigned v = 0;
    for (int i = 0; i < 4; i++)
        v |= (unsigned)__ldg(row + vk_clamp(x + i, 0, w - 1)) << (8 * i);
    return v;
}

// Predictor of macroblock (mbx, mby), (0, 0) outside the field or without a field.
__device__ __forceinline__ void pred_of(const MeArgs &a, int mbx, int mby, int *px, int *py) {
    *px = 0, *py = 0;
    if (a.pred && mbx < a.mb_w && mby < a.mb_h) {
        const VidkMv v = a.pred[mby * a.mb_w + mbx];
        *px = v.x, *py = v.y;
    }
}

// Constant part of a thread key for row mvy: (mv cost << 10) | rank(mvy); the key of a
// SAD s is then s * 1024 + cst (the host guarantees no overflow).
template <bool LAMBDA>
__device__ __forceinline__ unsigned key_cst(int mvy, unsigned lambda, unsigned bx, int py) {
    unsigned c = mvy_rank(mvy);
    if (LAMBDA) c += (lambda * (bx + mv_bits(mvy - py))) << kRankBits;
    return c;
}

// mul is 1 << kRankBits, passed in a register (MeArgs.kmul) so that ptxas emits IMAD (FMA
// pipe) rather than LEA (ALU pipe, shared with VABSDIFF4, PRMT and VIMNMX).
__device__ __forceinline__ unsigned key_of(unsigned sad, unsigned cst, unsigned mul) {
    return sad * mul + cst;
}

// Block decomposition of the fast kernels: blockIdx.x -> group (gx, gy), column block,
// row slice. Consecutive blocks walk the groups of a band row (neighbouring windows).
struct BlockPos {
    int gx, gy, cx0, cy0, cy1;
};
__device__ __forceinline__ BlockPos block_pos(const MeArgs &a) {
    BlockPos p;
    int t = (int)blockIdx.x;
    p.gx = t % a.GW;
    t /= a.GW;
    p.gy = a.gy0 + t % a.gyn;
    t /= a.gyn;
    const int cb = t % a.ncb, sl = t / a.ncb;
    p.cx0 = -a.R + cb * a.C * a.NP;
    p.cy0 = -a.R + sl * a.L;
    p.cy1 = vk_imin(p.cy0 + a.L, a.R + 1);
    return p;
}

// One aligned word from global to shared memory without passing through a register
// (cp.async, sm_80 on): a thread issues all its staging copies and waits once
// (stage_wait), where a load then a store per word waited for each load in turn (~14
// serial L2 round trips a block at 1080p R 16, the f41 kernel's long-scoreboard stalls).
__device__ __forceinline__ void stage_word(unsigned *dst, const uint8_t *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(
                     (unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src)
                 : "memory");
#else
    *dst = __ldg(reinterpret_cast<const unsigned *>(src));
#endif
}
__device__ __forceinline__ void stage_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Stage the 64x64 current samples of the group (16 words a row) and the reference window
// (rows WY0.., words from sample WX0, a multiple of 4) with clamped coordinates.
// V = 0 (round 1): a division and a clamped gather per word. V = 1: row and column
// advance incrementally (one division per thread), and a window that lies inside the
// picture horizontally (most blocks) is read with plain aligned words; only the row is
// clamped; those words go straight to shared memory (stage_word). Same words in shared
// memory either way.
template <int V>
__device__ __forceinline__ void stage(const MeArgs &a, const BlockPos &bp, unsigned *scur,
                                      unsigned *swin, int wx0, int wh) {
    const int nt = (int)blockDim.x, tid = (int)threadIdx.x;
    const int ww = a.WW; // staged words per row
    const int wy0 = bp.gy * kGroup + bp.cy0;
    if (V == 0) {
        for (int i = tid; i < 64 * 16; i += nt) {
            const int r = i >> 4, c = i & 15;
            const int y = vk_imin(bp.gy * kGroup + r, a.h - 1);
            scur[i] = gather4(a.cur + (size_t)y * a.pitch, bp.gx * kGroup + 4 * c, a.w);
        }
        for (int i = tid; i < wh * ww; i += nt) {
            const int r = i / ww, c = i - r * ww;
            const int y = vk_clamp(wy0 + r, 0, a.h - 1);
            swin[r * a.WP + c] = gather4(a.ref + (size_t)y * a.pitch, wx0 + 4 * c, a.w);
        }
        return;
    }
    const int cx = bp.gx * kGroup;
    const bool cin = cx + kGroup <= a.w; // block-uniform
    for (int i = tid; i < 64 * 16; i += nt) {
        const int r = i >> 4, c = i & 15;
        const uint8_t *row = a.cur + (size_t)vk_imin(bp.gy * kGroup + r, a.h - 1) * a.pitch;
        if (cin)
            stage_word(&scur[i], row + cx + 4 * c);
        else
            scur[i] = gather4(row, cx + 4 * c, a.w);
    }
    const bool win = wx0 >= 0 && wx0 + 4 * ww <= a.w; // block-uniform
    const int dr = nt / ww, dc = nt - dr * ww;
    int r = tid / ww, c = tid - r * ww;
    while (r < wh) {
        const uint8_t *row = a.ref + (size_t)vk_clamp(wy0 + r, 0, a.h - 1) * a.pitch;
        if (win)
            stage_word(&swin[r * a.WP + c], row + wx0 + 4 * c);
        else
            swin[r * a.WP + c] = gather4(row, wx0 + 4 * c, a.w);
        r += dr, c += dc;
        if (c >= ww) c -= ww, r++;
    }
    stage_wait(); // the caller's __syncthreads then publishes the words to the block
}

// Merge a thread's key for slot s into the block's reduction array.
__device__ __forceinline__ void red_min(unsigned long long *red, int s, unsigned k, int mvx,
                                        const MeArgs &a) {
    const unsigned long long g = widen_key(k, mvx, a.R, a.N);
    if (g != kKeyNone) atomicMin(&red[s], g);
}

// The first and the last shape of a mask of shapes (not 0), and the slots from the first
// slot of the one to the end of the other: the only slots a kernel computing those shapes
// initialises and flushes.
VK_HD constexpr int mask_first(unsigned mask, int bs = 0) {
    return (mask >> bs & 1u) ? bs : mask_first(mask, bs + 1);
}
VK_HD constexpr int mask_last(unsigned mask, int bs = VIDK_BLOCK_COUNT - 1) {
    return (mask >> bs & 1u) ? bs : mask_last(mask, bs - 1);
}

// The block's reduction slots of the shapes in MASK set to "none".
template <unsigned MASK> __device__ __forceinline__ void red_init(unsigned long long *red) {
    constexpr int lo = slot_off(mask_first(MASK)), hi = slot_off(mask_last(MASK) + 1);
    for (int s = lo + (int)threadIdx.x; s < hi; s += (int)blockDim.x)
        red[s] = kKeyNone;
}

// Block reduction array -> global keys (slots of the shapes in MASK only).
template <unsigned MASK>
__device__ __forceinline__ void red_flush(const unsigned long long *red, const MeArgs &a,
                                          int gx, int gy) {
    constexpr int b0 = mask_first(MASK), lo = slot_off(b0), hi = slot_off(mask_last(MASK) + 1);
    for (int s = lo + (int)threadIdx.x; s < hi; s += (int)blockDim.x) {
        int bs = b0;
        while (s >= slot_off(bs + 1))
            bs++;
        if (!(MASK & (1u << bs))) continue;
        const unsigned long long v = red[s];
        if (v == kKeyNone) continue;
        const int per_x = kGroup / bs_w(bs), per_y = kGroup / bs_h(bs);
        const int i = s - slot_off(bs), lx = i % per_x, ly = i / per_x;
        const size_t gi = (size_t)a.key_off[bs] +
                          (size_t)(gy * per_y + ly) * (size_t)a.key_ew[bs] +
                          (size_t)(gx * per_x + lx);
        atomicMin(&a.keys[gi], v);
    }
}

// Kernel configurations (MeArgs-independent, chosen per call by the host, me.cu):
// - r1 (V = 0): the first round. Two blocks of 256 per SM cap registers at 128; the
//   variant with 32x32 / 64x64 and lambda (three predictors per thread) needs a few more
//   and takes one block's bound. At 160 threads that is 3 blocks = 15 warps per SM.
// - r2 (V = 1): register caps chosen so that more warps fit (measured r1: latency-bound,
//   ALU pipe 63 % busy at 15 warps), each checked for zero spills with ptxas -v (CUDA
//   13.0, docs/ME_CUDA.md): f16 without 32x32/64x64 at 96 registers (4 blocks of 160 =
//   20 warps; ptxas moves the loop counters to the uniform datapath, the loop keeps its
//   1024 VABSDIFF4 / 155 LDS / 124 PRMT), f41 4x4-only at 80 (5 blocks = 25 warps), f41
//   with 16x16 sums but no sub-shapes (and not both 32x32/64x64 and lambda) at 96; the
//   others keep 128 (they spill below).
//   Plus the cheaper staging of stage<1>.
constexpr int f16_regs(int fl) {
    return (fl & F_BIG) ? ((fl & F_LAMBDA) ? 192 : 128) : 96;
}
//   f41 with sub-shapes but none 4 samples wide or high (F_NO4: the coding loop from level
//   3.1) at 72: 4 blocks of 224 = 28 warps per SM instead of 2 blocks at the 108 it takes
//   uncapped; 16 bytes spill, yet faster than 80 (3 blocks, no spill): 125.5 -> 119.1 us a
//   1080p R 16 frame on an H200, 155.6 uncapped (PERFORMANCE.md, session 9). With 8x8
//   accumulators (session 10) no spill at 72: 111.4 us; 56 (5 blocks, 88 bytes spilled):
//   112.8 us.
constexpr int f41_regs(int fl) {
    return (fl & F_SUB) && (fl & F_NO4) && !(fl & F_BIG)       ? 72
           : (fl & F_SUB) || ((fl & F_BIG) && (fl & F_LAMBDA)) ? 128
           : (fl & F_MID)                                      ? 96
                                                               : 80;
}
} // namespace vidk_me

#endif
