// Motion search on the device: the generic kernel (any bit depth, any lambda) and the
// finalize kernel (keys -> VidkMeResult). Included through me_kern.cuh.
#ifndef VIDK_CUDA_ME_KERN_GEN_CUH
#define VIDK_CUDA_ME_KERN_GEN_CUH

#include "me_kern_common.cuh"

namespace vidk_me {

// ---------------------------------------------------------------------------------------
// Generic kernel: any bit depth, any lambda, one shape per launch. Warp = one block of
// the shape's grid (8 per thread block); lane = candidates lane, lane + 32, ... of the
// warp's slice (blockIdx.y) of the raster candidate list; 64-bit keys, shuffle minimum,
// one global atomicMin per warp.

template <typename T> __global__ void __launch_bounds__(256) generic_kernel(const MeArgs a) {
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int b = (int)blockIdx.x * 8 + warp;
    if (b >= a.g_gw * a.g_gh) return; // whole warp: no shuffle partner is missing
    const T *cur = sizeof(T) == 1 ? reinterpret_cast<const T *>(a.cur)
                                  : reinterpret_cast<const T *>(a.cur16);
    const T *ref = sizeof(T) == 1 ? reinterpret_cast<const T *>(a.ref)
                                  : reinterpret_cast<const T *>(a.ref16);
    const int bw = bs_w(a.g_bs), bh = bs_h(a.g_bs);
    const int bxi = b % a.g_gw, byi = b / a.g_gw;
    const int x0 = bxi * bw, y0 = byi * bh;
    int px = 0, py = 0;
    if (a.lambda) pred_of(a, x0 / 16, y0 / 16, &px, &py);
    const int ncand = a.N * a.N;
    const int c0 = (int)blockIdx.y * a.g_slice, c1 = vk_imin(c0 + a.g_slice, ncand);
    unsigned long long best = kKeyNone;
    for (int ci = c0 + lane; ci < c1; ci += 32) {
        const int mvy = ci / a.N - a.R, mvx = ci % a.N - a.R;
        unsigned sad = 0;
        for (int y = 0; y < bh; y++) {
            const T *crow = cur + (size_t)vk_imin(y0 + y, a.h - 1) * a.pitch;
            const T *rrow = ref + (size_t)vk_clamp(y0 + y + mvy, 0, a.h - 1) * a.pitch;
            for (int x = 0; x < bw; x++) {
                const int cv = __ldg(crow + vk_imin(x0 + x, a.w - 1));
                const int rv = __ldg(rrow + vk_clamp(x0 + x + mvx, 0, a.w - 1));
                sad += (unsigned)vk_abs(cv - rv);
            }
        }
        const unsigned cost = sad + a.lambda * (mv_bits(mvx - px) + mv_bits(mvy - py));
        best = vk_umin64(best, make_key(cost, mvx, mvy, a.R, a.N));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        best = vk_umin64(best, __shfl_xor_sync(0xffffffffu, best, o));
    if (lane == 0 && best != kKeyNone)
        atomicMin(&a.keys[(size_t)a.key_off[a.g_bs] + (size_t)byi * a.key_ew[a.g_bs] + bxi],
                  best);
}

// ---------------------------------------------------------------------------------------
// Finalize: keys of the band's rows -> VidkMeResult. blockIdx.y = shape index.

__global__ void __launch_bounds__(256) finalize_kernel(const FinArgs f) {
    const int si = (int)blockIdx.y;
    const int bs = f.bs[si];
    const int n = f.rows[si] * f.gw[si];
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    const int x = i % f.gw[si], y = f.row0[si] + i / f.gw[si];
    const unsigned long long k = f.keys[(size_t)f.key_off[si] + (size_t)y * f.key_ew[si] + x];
    VidkMeResult r;
    if (k == kKeyNone) { // never happens: every block sees every candidate
        r.mv.x = r.mv.y = INT16_MIN;
        r.cost = r.sad = 0xffffffffu;
    } else {
        const unsigned cost = (unsigned)(k >> 32), raster = (unsigned)(k & 0x7ffffu);
        const int mvy = (int)(raster / (unsigned)f.N) - f.R,
                  mvx = (int)(raster % (unsigned)f.N) - f.R;
        int px = 0, py = 0;
        if (f.lambda && f.pred) {
            const VidkMv v = f.pred[(y * bs_h(bs) / 16) * f.mb_w + x * bs_w(bs) / 16];
            px = v.x, py = v.y;
        }
        r.mv.x = (int16_t)mvx;
        r.mv.y = (int16_t)mvy;
        r.cost = cost;
        r.sad = cost - f.lambda * (mv_bits(mvx - px) + mv_bits(mvy - py));
    }
    f.res[(size_t)f.res_off[si] + (size_t)y * f.gw[si] + x] = r;
}

} // namespace vidk_me

#endif
