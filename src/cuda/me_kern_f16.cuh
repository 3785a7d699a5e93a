// Motion search on the device: kernel f16 (16x16, + 32x32 and 64x64), configurations
// r1 and r2. Included through me_kern.cuh (design notes there).
#ifndef VIDK_CUDA_ME_KERN_F16_CUH
#define VIDK_CUDA_ME_KERN_F16_CUH

#include "me_kern_common.cuh"

namespace vidk_me {

// ---------------------------------------------------------------------------------------
// Kernel f16: 16x16 (+ 32x32, 64x64). Thread = (macroblock mb of the group, column col);
// lane = mb + 16 * (col & 1), mb = mx + 4 * my.

template <int K, int FL>
__device__ __forceinline__ void
f16_chunk(const unsigned *__restrict__ row, int wp, unsigned sel, const unsigned (&cur)[16][4],
          int mvy0, const MeArgs &a, unsigned bx, int py, unsigned bx32, int py32,
          unsigned bx64, int py64, unsigned &k16, unsigned &k32, unsigned &k64) {
    constexpr bool LAMBDA = (FL & F_LAMBDA) != 0;
    unsigned acc[K];
#pragma unroll
    for (int k = 0; k < K; k++)
        acc[k] = 0;
#pragma unroll
    for (int rr = 0; rr < K + 15; rr++) {
        const unsigned *p = row + rr * wp;
        unsigned wd[5], rw[4];
#pragma unroll
        for (int j = 0; j < 5; j++)
            wd[j] = p[j];
#pragma unroll
        for (int j = 0; j < 4; j++)
            rw[j] = __byte_perm(wd[j], wd[j + 1], sel);
            // Reference row rr meets current row rr - k of candidate mvy0 + k.
#pragma unroll
        for (int k = 0; k < K; k++) {
            const int r = rr - k;
            if (r >= 0 && r < 16) {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[k] = sad4_acc(cur[r][j], rw[j], acc[k]);
            }
        }
    }
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int mvy = mvy0 + k;
        k16 = vk_umin(k16, key_of(acc[k], key_cst<LAMBDA>(mvy, a.lambda, bx, py), a.kmul));
        if (FL & F_BIG) {
            // Lanes xor 1 / xor 4 are the other macroblocks of the 32x32 quadrant,
            // xor 2 / xor 8 the other quadrants of the 64x64 group.
            unsigned s = acc[k] + __shfl_xor_sync(0xffffffffu, acc[k], 1);
            s += __shfl_xor_sync(0xffffffffu, s, 4);
            k32 = vk_umin(k32, key_of(s, key_cst<LAMBDA>(mvy, a.lambda, bx32, py32), a.kmul));
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            s += __shfl_xor_sync(0xffffffffu, s, 8);
            k64 = vk_umin(k64, key_of(s, key_cst<LAMBDA>(mvy, a.lambda, bx64, py64), a.kmul));
        }
    }
}

// Body of the f16 kernels (V: kernel configuration, see the kernels below).
template <int FL, int V> __device__ __forceinline__ void f16_body(const MeArgs &a) {
    VK_DYN_SMEM(unsigned long long, smem64);
    unsigned *scur = reinterpret_cast<unsigned *>(smem64);
    unsigned *swin = scur + 1024;
    const BlockPos bp = block_pos(a);
    const int wh = kGroup + (bp.cy1 - bp.cy0) - 1;
    unsigned long long *red =
        reinterpret_cast<unsigned long long *>(swin + ((kGroup + a.L - 1) * a.WP + 1) / 2 * 2);
    const int wx0 = (bp.gx * kGroup + bp.cx0) & ~3; // floor to a multiple of 4
    stage<V>(a, bp, scur, swin, wx0, wh);
    constexpr unsigned mask = f16_mask(FL);
    red_init<mask>(red);
    __syncthreads();

    const int t = (int)threadIdx.x, mb = t & 15, col = t >> 4;
    const int mx = mb & 3, my = mb >> 2;
    // Padding columns past R repeat column R: same keys, harmless to the minimum.
    const int mvx = vk_imin(bp.cx0 + col, a.R);
    unsigned cur[16][4];
#pragma unroll
    for (int r = 0; r < 16; r++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            cur[r][j] = scur[(my * 16 + r) * 16 + mx * 4 + j];

    const int mbx = bp.gx * 4 + mx, mby = bp.gy * 4 + my;
    int px, py, px32, py32, px64, py64;
    pred_of(a, mbx, mby, &px, &py);
    pred_of(a, mbx & ~1, mby & ~1, &px32, &py32);
    pred_of(a, mbx & ~3, mby & ~3, &px64, &py64);
    const unsigned bx = mv_bits(mvx - px), bx32 = mv_bits(mvx - px32),
                   bx64 = mv_bits(mvx - px64);

    const int sx = bp.gx * kGroup + mx * 16 + mvx - wx0;
    const unsigned sel = 0x3210u + 0x1111u * (unsigned)(sx & 3);
    const unsigned *base = swin + (my * 16) * a.WP + (sx >> 2);
    unsigned k16 = 0xffffffffu, k32 = 0xffffffffu, k64 = 0xffffffffu;
    int y = bp.cy0;
    for (; y + 16 <= bp.cy1; y += 16)
        f16_chunk<16, FL>(base + (y - bp.cy0) * a.WP, a.WP, sel, cur, y, a, bx, py, bx32, py32,
                          bx64, py64, k16, k32, k64);
    for (; y + 4 <= bp.cy1; y += 4)
        f16_chunk<4, FL>(base + (y - bp.cy0) * a.WP, a.WP, sel, cur, y, a, bx, py, bx32, py32,
                         bx64, py64, k16, k32, k64);
    for (; y < bp.cy1; y++)
        f16_chunk<1, FL>(base + (y - bp.cy0) * a.WP, a.WP, sel, cur, y, a, bx, py, bx32, py32,
                         bx64, py64, k16, k32, k64);

    red_min(red, slot_off(VIDK_BLOCK_16x16) + my * 4 + mx, k16, mvx, a);
    if (FL & F_BIG) {
        if ((mb & 5) == 0)
            red_min(red, slot_off(VIDK_BLOCK_32x32) + (my >> 1) * 2 + (mx >> 1), k32, mvx, a);
        if (mb == 0) red_min(red, slot_off(VIDK_BLOCK_64x64), k64, mvx, a);
    }
    __syncthreads();
    red_flush<mask>(red, a, bp.gx, bp.gy);
}

template <int FL>
__global__ void __launch_bounds__(kThreadsMax, (FL & F_BIG) && (FL & F_LAMBDA) ? 1 : 2)
    f16_kernel(const MeArgs a) {
    f16_body<FL, 0>(a);
}

template <int FL> __global__ void __maxnreg__(f16_regs(FL)) f16_kernel_r2(const MeArgs a) {
    f16_body<FL, 1>(a);
}

} // namespace vidk_me

#endif
