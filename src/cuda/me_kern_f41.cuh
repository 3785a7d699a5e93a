// Motion search on the device: kernel f41 (the 41 H.264 partitions, + 32x32 and 64x64),
// configurations r1, r2 and r3. Included through me_kern.cuh (design notes there).
#ifndef VIDK_CUDA_ME_KERN_F41_CUH
#define VIDK_CUDA_ME_KERN_F41_CUH

#include "me_kern_common.cuh"

namespace vidk_me {

// ---------------------------------------------------------------------------------------
// Kernel f41: the H.264 partitions (+ 32x32, 64x64). Thread = (half h of macroblock mb,
// column col): lane = h + 2 * mb, mb = mx + 4 * my, one warp per column. A half is an
// 8x16 strip: 4x4 blocks (2h + j, i) for j = 0, 1 and i = 0..3.

struct Keys41 {
    unsigned k4[4][2], k84[4], k48[2][2], k88[2], k816, k168, k16, k32, k64;
};

// Keys of every partition of one candidate (row mvy) from its eight 4x4 SADs s[i][j]; c:
// the candidate's key constant (key_cst) of the macroblock's shapes (f41_chunk). FR (round
// 3, no lambda): c is also the constant of 32x32 and 64x64.
template <int FL, bool FR = false>
__device__ __forceinline__ void f41_keys(const unsigned (&s)[4][2], int mvy, const MeArgs &a,
                                         int h, unsigned c, unsigned bx32, int py32,
                                         unsigned bx64, int py64, Keys41 &o) {
    constexpr bool LAMBDA = (FL & F_LAMBDA) != 0;
    static_assert(!FR || !LAMBDA, "FR: no lambda");
    if (!(FL & F_NO4))
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                o.k4[i][j] = key_of(s[i][j], c, a.kmul);
    if (FL & (F_SUB | F_MID)) {
        unsigned e84[4], e88[2];
#pragma unroll
        for (int i = 0; i < 4; i++)
            e84[i] = s[i][0] + s[i][1];
#pragma unroll
        for (int q = 0; q < 2; q++)
            e88[q] = e84[2 * q] + e84[2 * q + 1];
        if (FL & F_SUB) {
#pragma unroll
            for (int i = 0; i < 4; i++)
                if (!(FL & F_NO4)) o.k84[i] = key_of(e84[i], c, a.kmul);
#pragma unroll
            for (int q = 0; q < 2; q++) {
#pragma unroll
                for (int j = 0; j < 2; j++)
                    if (!(FL & F_NO4))
                        o.k48[q][j] = key_of(s[2 * q][j] + s[2 * q + 1][j], c, a.kmul);
                o.k88[q] = key_of(e88[q], c, a.kmul);
            }
            o.k816 = key_of(e88[0] + e88[1], c, a.kmul);
        }
        if (FL & F_MID) {
            // 16x8 row h = my 8x8 of row h + the partner half's 8x8 of row h: each lane
            // sends the 8x8 of the row its partner keeps.
            const unsigned other = __shfl_xor_sync(0xffffffffu, h ? e88[0] : e88[1], 1);
            const unsigned e168 = (h ? e88[1] : e88[0]) + other;
            if (FL & F_SUB) o.k168 = key_of(e168, c, a.kmul);
            unsigned e = e168 + __shfl_xor_sync(0xffffffffu, e168, 1);
            o.k16 = key_of(e, c, a.kmul);
            if (FL & F_BIG) {
                // xor 2 / xor 8: the other macroblocks of the 32x32 quadrant;
                // xor 4 / xor 16: the other quadrants of the group.
                e += __shfl_xor_sync(0xffffffffu, e, 2);
                e += __shfl_xor_sync(0xffffffffu, e, 8);
                o.k32 = key_of(e, FR ? c : key_cst<LAMBDA>(mvy, a.lambda, bx32, py32), a.kmul);
                e += __shfl_xor_sync(0xffffffffu, e, 4);
                e += __shfl_xor_sync(0xffffffffu, e, 16);
                o.k64 = key_of(e, FR ? c : key_cst<LAMBDA>(mvy, a.lambda, bx64, py64), a.kmul);
            }
        }
    }
}

// The keys of Keys41 that the flags FL compute, each through OP(key).
#define F41_KEYS(OP)                                                                           \
    if (!(FL & F_NO4)) _Pragma("unroll") for (int i = 0; i < 4; i++) {                         \
            OP(k4[i][0]);                                                                      \
            OP(k4[i][1]);                                                                      \
        }                                                                                      \
    if (FL & F_SUB) {                                                                          \
        if (!(FL & F_NO4)) _Pragma("unroll") for (int i = 0; i < 4; i++) OP(k84[i]);           \
        _Pragma("unroll") for (int q = 0; q < 2; q++) {                                        \
            if (!(FL & F_NO4)) {                                                               \
                OP(k48[q][0]);                                                                 \
                OP(k48[q][1]);                                                                 \
            }                                                                                  \
            OP(k88[q]);                                                                        \
        }                                                                                      \
        OP(k816);                                                                              \
        OP(k168);                                                                              \
    }                                                                                          \
    if (FL & F_MID) OP(k16);                                                                   \
    if (FL & F_BIG) {                                                                          \
        OP(k32);                                                                               \
        OP(k64);                                                                               \
    }

// Running minimum of the keys over one (NC = 1) or two (NC = 2, one 3-input min)
// candidates.
template <int FL, int NC>
__device__ __forceinline__ void f41_merge(Keys41 &kk, const Keys41 &x, const Keys41 &y) {
#define VK_M(f) kk.f = NC == 2 ? vk_umin3(kk.f, x.f, y.f) : vk_umin(kk.f, x.f)
    F41_KEYS(VK_M)
#undef VK_M
}

// The key constants: FR (round 3, no lambda): the constant of candidate mvy0 + k is
// 0x4B000000 + rank, the bits of |2 mvy + 0.5| + (2^23 - 0.5) = 2^23 + rank(mvy) (exact in
// float: |2 mvy + 0.5| - 0.5 is 2 mvy for mvy >= 0 and -2 mvy - 1 below), two FADDs on the
// FMA pipe instead of a compare and a select on the ALU pipe. The common offset keeps the
// order: the largest SAD, 64x64 at 8 bits, gives 1044480 * 1024 + 0x4B000000 + 1023 <
// 2^32. f41_body removes it once per thread. Otherwise kc[k] + cb: the macroblock's table
// entry of row mvy0 + k (its rank and lambda x the bits of its vertical difference, f41_body)
// plus the thread's lambda x the bits of its horizontal one, which is key_cst (kc: 16-byte
// aligned when K is a multiple of 4).
template <int K, int FL, bool AL, bool FR, int WPT>
__device__ __forceinline__ void
f41_chunk(const unsigned *__restrict__ row, unsigned sel, const unsigned (&cur)[16][2],
          int mvy0, const unsigned *kc, unsigned cb, const MeArgs &a, int h, unsigned bx32,
          int py32, unsigned bx64, int py64, Keys41 &kk) {
    static_assert(K == 1 || K % 2 == 0, "chunk size");
    unsigned acc[K][4][2];
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[k][i][0] = acc[k][i][1] = 0;
#pragma unroll
    for (int rr = 0; rr < K + 15; rr++) {
        const unsigned *p = row + rr * WPT;
        // AL: sel is 0x3210 (no shift), the words are the samples themselves.
        const unsigned w0 = p[0], w1 = p[1], w2 = AL ? 0u : p[2];
        const unsigned r0 = AL ? w0 : __byte_perm(w0, w1, sel);
        const unsigned r1 = AL ? w1 : __byte_perm(w1, w2, sel);
        // Reference row rr meets current row rr - k of candidate mvy0 + k.
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int r = rr - k;
            if (r >= 0 && r < 16) {
                // F_NO4 needs no sum finer than 8x8: rows 0-7 into acc[k][0], 8-15 into
                // acc[k][2] (acc[k][1] and [3] stay 0), so f41_keys's 8x8 sums are the same
                // integers with 16 accumulators fewer per 8 candidates live.
                if (FL & F_NO4) {
                    const int g = (r >> 3) * 2;
                    acc[k][g][0] =
                        sad4_acc(cur[r][1], r1, sad4_acc(cur[r][0], r0, acc[k][g][0]));
                } else {
                    acc[k][r >> 2][0] = sad4_acc(cur[r][0], r0, acc[k][r >> 2][0]);
                    acc[k][r >> 2][1] = sad4_acc(cur[r][1], r1, acc[k][r >> 2][1]);
                }
            }
        }
    }
    unsigned c[K];
    if (FR) {
        const float x0 = (float)(2 * mvy0) + 0.5f;
#pragma unroll
        for (int k = 0; k < K; k++)
            c[k] = vk_fbits(fabsf(x0 + (float)(2 * k)) + 8388607.5f);
    } else if (K % 4 == 0) {
#pragma unroll
        for (int k = 0; k < K; k += 4) {
            const uint4 v = *reinterpret_cast<const uint4 *>(kc + k);
            c[k] = v.x + cb, c[(k + 1) % K] = v.y + cb, c[(k + 2) % K] = v.z + cb,
            c[(k + 3) % K] = v.w + cb;
        }
    } else {
#pragma unroll
        for (int k = 0; k < K; k++)
            c[k] = kc[k] + cb;
    }
    if (K == 1) {
        Keys41 x;
        f41_keys<FL, FR>(acc[0], mvy0, a, h, c[0], bx32, py32, bx64, py64, x);
        f41_merge<FL, 1>(kk, x, x);
    } else {
#pragma unroll
        for (int k = 0; k < K; k += 2) {
            Keys41 x, y;
            f41_keys<FL, FR>(acc[k], mvy0 + k, a, h, c[k], bx32, py32, bx64, py64, x);
            f41_keys<FL, FR>(acc[k + (K > 1)], mvy0 + k + 1, a, h, c[k + (K > 1)], bx32, py32,
                             bx64, py64, y);
            f41_merge<FL, 2>(kk, x, y);
        }
    }
}

// Removes the float-rank offset of f41_chunk<FR> from a thread's keys (a key still at its
// initial value stays there).
template <int FL> __device__ __forceinline__ void f41_unoffset(Keys41 &kk) {
#define VK_U(f) kk.f = kk.f != 0xffffffffu ? kk.f - 0x4B000000u : kk.f
    F41_KEYS(VK_U)
#undef VK_U
}

// The candidate rows of a thread in chunks of 8, then 4, then 1.
template <int FL, bool AL, bool FR, int WPT>
__device__ __forceinline__ void
f41_rows(const unsigned *__restrict__ base, const MeArgs &a, const BlockPos &bp, unsigned sel,
         const unsigned (&cur)[16][2], const unsigned *kc, unsigned cb, int h, unsigned bx32,
         int py32, unsigned bx64, int py64, Keys41 &kk) {
    // Chunks of 8 candidates: 23 reference rows (69 LDS, 2 wavefronts each: the lanes of
    // macroblock rows 0/2 and 1/3 hit the same banks) per 256 VABSDIFF4. With K = 4 the
    // shared-memory pipe was as busy as the ALU pipe; ptxas keeps K = 8 within 128
    // registers by retiring finished 4x4 sums early.
    constexpr int KB = 8;
    int y = bp.cy0;
    for (; y + KB <= bp.cy1; y += KB)
        f41_chunk<KB, FL, AL, FR, WPT>(base + (y - bp.cy0) * WPT, sel, cur, y,
                                       kc + (y - bp.cy0), cb, a, h, bx32, py32, bx64, py64, kk);
    for (; KB > 4 && y + 4 <= bp.cy1; y += 4)
        f41_chunk<4, FL, AL, FR, WPT>(base + (y - bp.cy0) * WPT, sel, cur, y, kc + (y - bp.cy0),
                                      cb, a, h, bx32, py32, bx64, py64, kk);
    for (; y < bp.cy1; y++)
        f41_chunk<1, FL, AL, FR, WPT>(base + (y - bp.cy0) * WPT, sel, cur, y, kc + (y - bp.cy0),
                                      cb, a, h, bx32, py32, bx64, py64, kk);
}

// The shapes the f41 kernel with flags FL computes.
constexpr unsigned f41_mask(int FL) {
    return (!(FL & F_NO4) ? VIDK_ME_SHAPE(VIDK_BLOCK_4x4) : 0u) |
           ((FL & F_SUB) && !(FL & F_NO4)
                ? VIDK_ME_SHAPE(VIDK_BLOCK_8x4) | VIDK_ME_SHAPE(VIDK_BLOCK_4x8)
                : 0u) |
           ((FL & F_SUB) ? VIDK_ME_SHAPE(VIDK_BLOCK_8x8) | VIDK_ME_SHAPE(VIDK_BLOCK_8x16) |
                               VIDK_ME_SHAPE(VIDK_BLOCK_16x8)
                         : 0u) |
           ((FL & F_MID) ? VIDK_ME_SHAPE(VIDK_BLOCK_16x16) : 0u) |
           ((FL & F_BIG) ? VIDK_ME_SHAPE(VIDK_BLOCK_32x32) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64)
                         : 0u);
}

// Body of the f41 kernels (V: kernel configuration, see the kernels below).
template <int FL, int V> __device__ __forceinline__ void f41_body(const MeArgs &a) {
    constexpr int WPT = f41_wp(FL); // window pitch (kWP41W for the passes of F_NO4)
    constexpr bool LAMBDA = (FL & F_LAMBDA) != 0;
    constexpr bool FR = V == 2 && !LAMBDA;
    VK_DYN_SMEM(unsigned long long, smem64);
    // shared: the 64x64 current samples, the key constants (16 x kp), the window (pitch
    // WPT), the reduction slots
    unsigned *scur = reinterpret_cast<unsigned *>(smem64);
    const int kp = f41_kpitch(a.L);
    unsigned *skc = scur + 1024;
    unsigned *swin = skc + 16 * kp;
    const BlockPos bp = block_pos(a);
    const int nr = bp.cy1 - bp.cy0, wh = kGroup + nr - 1;
    // F_SHIFT: copy s of the window (s = 1..3: shifted by s bytes) at swin + s * cs.
    const int cs = (kGroup + a.L - 1) * WPT;
    unsigned long long *red =
        reinterpret_cast<unsigned long long *>(swin + (f41_copies(FL) * cs + 1) / 2 * 2);
    const int wx0 = (bp.gx * kGroup + bp.cx0) & ~3;
    stage<V>(a, bp, scur, swin, wx0, wh);
    if (FL & F_SHIFT) {
        // Copies 1-3 from copy 0 (a.WW words a row; the copies read one word less): word c
        // of copy s holds samples wx0 + 4 c + s .. + 3. A warp a row, a lane a word (no
        // divisions: with them the copies cost as much as the permutes they save).
        __syncthreads();
        const int nw = a.WW - 1, lane = (int)threadIdx.x & 31, nwarp = (int)blockDim.x >> 5;
        for (int r = (int)threadIdx.x >> 5; r < wh; r += nwarp)
            for (int c = lane; c < nw; c += 32) {
                unsigned *w = swin + r * WPT + c;
                const unsigned w0 = w[0], w1 = w[1];
                w[cs] = __byte_perm(w0, w1, 0x4321u);
                w[2 * cs] = __byte_perm(w0, w1, 0x5432u);
                w[3 * cs] = __byte_perm(w0, w1, 0x6543u);
            }
    }
    red_init<f41_mask(FL)>(red);
    // Key constants of macroblock m's candidate rows: key_cst without the horizontal part,
    // computed once per block instead of per thread and candidate.
    if (!FR)
        for (int i = (int)threadIdx.x; i < 16 * nr; i += (int)blockDim.x) {
            const int m = i / nr, r = i - m * nr;
            int qx, qy;
            pred_of(a, bp.gx * 4 + (m & 3), bp.gy * 4 + (m >> 2), &qx, &qy);
            skc[m * kp + r] = key_cst<LAMBDA>(bp.cy0 + r, a.lambda, 0u, qy);
        }
    __syncthreads();

    const int t = (int)threadIdx.x, lane = t & 31, col = t >> 5;
    const int h = lane & 1, mb = lane >> 1, mx = mb & 3, my = mb >> 2;
    unsigned cur[16][2];
#pragma unroll
    for (int r = 0; r < 16; r++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            cur[r][j] = scur[(my * 16 + r) * 16 + mx * 4 + h * 2 + j];

    const int mbx = bp.gx * 4 + mx, mby = bp.gy * 4 + my;
    int px, py, px32, py32, px64, py64;
    pred_of(a, mbx, mby, &px, &py);
    pred_of(a, mbx & ~1, mby & ~1, &px32, &py32);
    pred_of(a, mbx & ~3, mby & ~3, &px64, &py64);
    (void)py;
    const unsigned *kc = skc + mb * kp;
    // Partition coordinates inside the group, in units of each shape.
    const int x4 = mx * 4 + h * 2, y4 = my * 4;
    // Pass p: the block's columns p * C .. p * C + C - 1, one a warp (F_NO4: a.NP passes
    // over the window staged once; otherwise one). A thread's running minima hold one
    // column (the key's rank orders mvy only): they go to the block's slots after each pass.
    // A column past R (the block's last columns when C * NP does not divide N) ends the
    // warp's passes (warp-uniform; until session 21 it searched column R again: 5% of the
    // instructions at R 16).
    for (int pass = 0; pass < a.NP; pass++) {
        const int mvx = bp.cx0 + pass * a.C + col;
        if (mvx > a.R) break;
        const unsigned bx = mv_bits(mvx - px), bx32 = mv_bits(mvx - px32),
                       bx64 = mv_bits(mvx - px64);
        // the thread's part of key_cst (lambda x the bits of the horizontal difference)
        const unsigned cb = LAMBDA ? (a.lambda * bx) << kRankBits : 0u;
        const int sx = bp.gx * kGroup + mx * 16 + h * 8 + mvx - wx0;
        const unsigned sel = 0x3210u + 0x1111u * (unsigned)(sx & 3);
        const unsigned *base =
            swin + ((FL & F_SHIFT) ? (sx & 3) * cs : 0) + (my * 16) * WPT + (sx >> 2);
        Keys41 kk;
#pragma unroll
        for (int i = 0; i < 4; i++)
            kk.k4[i][0] = kk.k4[i][1] = kk.k84[i] = 0xffffffffu;
        kk.k48[0][0] = kk.k48[0][1] = kk.k48[1][0] = kk.k48[1][1] = 0xffffffffu;
        kk.k88[0] = kk.k88[1] = kk.k816 = kk.k168 = kk.k16 = kk.k32 = kk.k64 = 0xffffffffu;
        // Round 3 (V = 2), 4x4-only variants: a column whose window offset is word-aligned
        // (sx & 3 == 0: one warp in four; sx & 3 is uniform across the warp) takes a loop
        // without PRMT and without the third LDS per reference row (warp-uniform branch).
        // The variants with partition sums spill with the second loop copy: they keep one.
        // F_SHIFT: every warp reads its copy's aligned words.
        if ((FL & F_SHIFT) || (V == 2 && (FL & ~F_LAMBDA) == 0 && (sx & 3) == 0))
            f41_rows<FL, true, FR, WPT>(base, a, bp, sel, cur, kc, cb, h, bx32, py32, bx64,
                                        py64, kk);
        else
            f41_rows<FL, false, FR, WPT>(base, a, bp, sel, cur, kc, cb, h, bx32, py32, bx64,
                                         py64, kk);
        if (FR) f41_unoffset<FL>(kk); // the float-rank offset (see f41_chunk)

        if (!(FL & F_NO4)) {
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 2; j++)
                    red_min(red, slot_off(VIDK_BLOCK_4x4) + (y4 + i) * 16 + x4 + j, kk.k4[i][j],
                            mvx, a);
        }
        if (FL & F_SUB) {
            if (!(FL & F_NO4)) {
#pragma unroll
                for (int i = 0; i < 4; i++)
                    red_min(red, slot_off(VIDK_BLOCK_8x4) + (y4 + i) * 8 + mx * 2 + h,
                            kk.k84[i], mvx, a);
#pragma unroll
                for (int q = 0; q < 2; q++)
#pragma unroll
                    for (int j = 0; j < 2; j++)
                        red_min(red, slot_off(VIDK_BLOCK_4x8) + (my * 2 + q) * 16 + x4 + j,
                                kk.k48[q][j], mvx, a);
            }
#pragma unroll
            for (int q = 0; q < 2; q++)
                red_min(red, slot_off(VIDK_BLOCK_8x8) + (my * 2 + q) * 8 + mx * 2 + h,
                        kk.k88[q], mvx, a);
            red_min(red, slot_off(VIDK_BLOCK_8x16) + my * 8 + mx * 2 + h, kk.k816, mvx, a);
            red_min(red, slot_off(VIDK_BLOCK_16x8) + (my * 2 + h) * 4 + mx, kk.k168, mvx, a);
        }
        if (FL & F_MID) {
            if (h == 0) red_min(red, slot_off(VIDK_BLOCK_16x16) + my * 4 + mx, kk.k16, mvx, a);
        }
        if (FL & F_BIG) {
            if ((lane & 0xb) == 0) // h = 0, mx even, my even: the quadrant's first lane
                red_min(red, slot_off(VIDK_BLOCK_32x32) + (my >> 1) * 2 + (mx >> 1), kk.k32,
                        mvx, a);
            if (lane == 0) red_min(red, slot_off(VIDK_BLOCK_64x64), kk.k64, mvx, a);
        }
    }
    __syncthreads();
    red_flush<f41_mask(FL)>(red, a, bp.gx, bp.gy);
}

template <int FL> __global__ void __launch_bounds__(kThreadsMax, 2) f41_kernel(const MeArgs a) {
    f41_body<FL, 0>(a);
}

template <int FL> __global__ void __maxnreg__(f41_regs(FL)) f41_kernel_r2(const MeArgs a) {
    f41_body<FL, 1>(a);
}

// Round 3 (VIDK_ME_KCFG=r3): r2 plus the aligned-column loop of f41_body (V = 2); same
// register caps as r2.
template <int FL> __global__ void __maxnreg__(f41_regs(FL)) f41_kernel_r3(const MeArgs a) {
    f41_body<FL, 2>(a);
}

} // namespace vidk_me

#endif
