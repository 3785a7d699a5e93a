// Device kernels of the CUDA HEVC transform family: per direction one kernel for the
// 8x8..32x32 TBs of a chunk (CUDA blocks partitioned by size class, uniform per block),
// templated on the tensor-core switch, scaling lists and (inverse) the output kind, and
// one for the 4x4 TBs (no shared memory, higher occupancy: the memory-bound class). The
// arithmetic is in the phase functions of hevc_kern.cuh; this file adds the warp and block
// collectives: mma.sync, warp reductions, the forward's block-level compaction.
#ifndef VIDK_HEVC_DEV_CUH
#define VIDK_HEVC_DEV_CUH

#include "hevc_kern.cuh"

namespace vidk_hevccu {

// Fragment tables, built at compile time; each warp reads its lanes' registers once
// (coalesced: [reg][lane]).
__device__ const FragTab g_frag = make_frag_tab();

// ---- integer MMA: D = A * B + C, s32 accumulation (exact: docs/HEVC_CUDA.md) -------------

template <bool AU, bool BU>
__device__ __forceinline__ void mma32(int32_t d[4], const uint32_t a[4], const uint32_t b[2],
                                      const int32_t c[4]) {
    if (!AU && !BU)
        asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%10,%11,%12,%13};"
            : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]),
              "r"(c[1]), "r"(c[2]), "r"(c[3]));
    else if (AU)
        asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%10,%11,%12,%13};"
            : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]),
              "r"(c[1]), "r"(c[2]), "r"(c[3]));
    else
        asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%10,%11,%12,%13};"
            : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]),
              "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

template <bool AU, bool BU>
__device__ __forceinline__ void mma16(int32_t d[4], const uint32_t a[2], uint32_t b,
                                      const int32_t c[4]) {
    if (!AU && !BU)
        asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
            "{%7,%8,%9,%10};"
            : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    else if (AU)
        asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
            "{%7,%8,%9,%10};"
            : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.u8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
            "{%7,%8,%9,%10};"
            : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

// acc = 256 * (A_hi-plane product) + (lo-plane product): the byte-split recombination.
// `hi_a`: the planes are in A (stage 2), else in B (stage 1).
template <bool HI_A>
__device__ __forceinline__ void mma32_split(int32_t acc[4], const uint32_t *ah,
                                            const uint32_t *al, const uint32_t *bh,
                                            const uint32_t *bl) {
    const int32_t z[4] = {0, 0, 0, 0};
    if (HI_A) {
        mma32<false, false>(acc, ah, bh, z);
        for (int c = 0; c < 4; c++)
            acc[c] *= 256;
        mma32<true, false>(acc, al, bh, acc);
    } else {
        mma32<false, false>(acc, ah, bh, z);
        for (int c = 0; c < 4; c++)
            acc[c] *= 256;
        mma32<false, true>(acc, ah, bl, acc);
    }
}
template <bool HI_A>
__device__ __forceinline__ void mma16_split(int32_t acc[4], const uint32_t *ah,
                                            const uint32_t *al, uint32_t bh, uint32_t bl) {
    const int32_t z[4] = {0, 0, 0, 0};
    if (HI_A) {
        mma16<false, false>(acc, ah, bh, z);
        for (int c = 0; c < 4; c++)
            acc[c] *= 256;
        mma16<true, false>(acc, al, bh, acc);
    } else {
        mma16<false, false>(acc, ah, bh, z);
        for (int c = 0; c < 4; c++)
            acc[c] *= 256;
        mma16<false, true>(acc, ah, bl, acc);
    }
}

// Stage 1 of a 32x32 TB: acc[mt][nt] = A1[mt] * planes of B[nt]; stage 2: acc[mt][nt] =
// planes of A2[mt] * B2[nt].
__device__ __forceinline__ void tc32_stage1(int32_t acc[2][4][4], const uint32_t a1[2][4],
                                            const uint32_t bh[4][2], const uint32_t bl[4][2]) {
    VK_UNROLL
    for (int mt = 0; mt < 2; mt++)
        VK_UNROLL
    for (int nt = 0; nt < 4; nt++)
        mma32_split<false>(acc[mt][nt], a1[mt], nullptr, bh[nt], bl[nt]);
}
__device__ __forceinline__ void tc32_stage2(int32_t acc[2][4][4], const uint32_t ah[2][4],
                                            const uint32_t al[2][4], const uint32_t b2[4][2]) {
    VK_UNROLL
    for (int mt = 0; mt < 2; mt++)
        VK_UNROLL
    for (int nt = 0; nt < 4; nt++)
        mma32_split<true>(acc[mt][nt], ah[mt], al[mt], b2[nt], nullptr);
}
__device__ __forceinline__ void tc16_stage1(int32_t acc[2][4], const uint32_t a1[2],
                                            const uint32_t bh[2], const uint32_t bl[2]) {
    VK_UNROLL
    for (int nt = 0; nt < 2; nt++)
        mma16_split<false>(acc[nt], a1, nullptr, bh[nt], bl[nt]);
}
__device__ __forceinline__ void tc16_stage2(int32_t acc[2][4], const uint32_t ah[2],
                                            const uint32_t al[2], const uint32_t b2[2]) {
    VK_UNROLL
    for (int nt = 0; nt < 2; nt++)
        mma16_split<true>(acc[nt], ah, al, b2[nt], 0);
}

// ---- warp and block collectives
// --------------------------------------------------------------

// Sum of v over the N lanes of a TB group (xor butterflies stay inside the group).
template <int N> __device__ __forceinline__ uint32_t group_sum(uint32_t v) {
    VK_UNROLL
    for (int off = N / 2; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Block-level compaction (forward, 8x8..32x32). Every thread of the block calls it with a
// flag "I lead a TB with non-zero levels"; TB order is thread order. One atomicAdd per
// block allocates total * len values of the chunk's output; returns the tile's base and
// the flag's rank.
struct BlockShared {
    uint32_t warp_tot[kWarps];
    uint32_t base;
};

__device__ __forceinline__ uint32_t block_compact(bool f, uint32_t len, uint32_t *counter,
                                                  uint32_t *tile_base, BlockShared &sh,
                                                  uint32_t &rank) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned b = __ballot_sync(0xffffffffu, f);
    if (lane == 0) sh.warp_tot[warp] = (uint32_t)__popc(b);
    __syncthreads();
    uint32_t before = 0, tot = 0;
    VK_UNROLL
    for (int w = 0; w < kWarps; w++) {
        const uint32_t v = sh.warp_tot[w];
        before += w < warp ? v : 0;
        tot += v;
    }
    rank = before + (uint32_t)__popc(b & ((1u << lane) - 1u));
    if (threadIdx.x == 0) {
        const uint32_t base = tot ? atomicAdd(counter, tot * len) : 0u;
        sh.base = base;
        *tile_base = base;
    }
    __syncthreads();
    return sh.base;
}

// ---- forward kernel
// ---------------------------------------------------------------------------

// 4x4 forward: its own kernel (fwd4_kernel). A warp takes tile t = TBs 64 t .. 64 t + 63,
// lane l TBs 64 t + l and 64 t + 32 + l (each load instruction of the warp covers 1 KB of
// consecutive residuals; both TBs' loads are issued before either transform), and walks
// the tiles with a grid stride: warp w of block b takes tiles (b + k gridDim) kWarps + w,
// k = 0, 1, ... (one "round" of the block per k). UNI: every TB of the class has the same
// key (key_step 0): matrix rows and quantiser come set up from the host (FwdArgs.p4, read
// from the parameter space).
// Compaction (class bit 0 of a.compact; TB order inside a tile is the index order, each
// tile's base goes to tile_base so the host never depends on the allocation order):
//   BLK (default, opts.alloc4 = VIDK_HEVC_CUDA_ALLOC4_BLOCK): per block round, the warps'
//     non-zero counts (one ballot per TB half) go to shared memory, one barrier, every warp
//     sums the counts before its own (its offset) and of the whole block; thread 0 makes one
//     atomicAdd for the block's 512 TBs, a second barrier broadcasts the base. 8x fewer
//     same-address atomics on the chunk's counter (1080 per DCI 4K frame instead of 8640).
//     The rounds are block-uniform (warps past the last tile take part without TBs).
//   !BLK (opts.alloc4 = VIDK_HEVC_CUDA_ALLOC4_WARP, the kernel of H200 run 1): one
//     atomicAdd per warp and tile (lane 0), the base broadcast by a shuffle; no barrier.
struct Fwd4Shared {
    __align__(16) uint32_t tot[kWarps]; // non-zero TBs of each warp's tile this round
    uint32_t base;                      // the block's base this round
};

template <bool SL, bool UNI, bool BLK>
__device__ __forceinline__ void fwd4_loop(const FwdArgs &a, Fwd4Shared &sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t n = a.n[0], tiles = (n + kTileFwd[0] - 1) / kTileFwd[0];
    const bool cmp = a.compact & 1u;
    const unsigned lt = (1u << lane) - 1u;
    for (uint32_t r = blockIdx.x; BLK ? r * kWarps < tiles : r * kWarps + warp < tiles;
         r += gridDim.x) {
        const uint32_t t = r * kWarps + (uint32_t)warp;
        const uint32_t i0 = t * kTileFwd[0] + lane, i1 = i0 + 32;
        const bool act0 = i0 < n, act1 = i1 < n; // false for a warp past the last tile
        uint32_t w0[8], w1[8], l0[8], l1[8];
        if (act0) {
            ld16(a.res[0] + (size_t)i0 * 16, w0);
            ld16(a.res[0] + (size_t)i0 * 16 + 8, w0 + 4);
        }
        if (act1) {
            ld16(a.res[0] + (size_t)i1 * 16, w1);
            ld16(a.res[0] + (size_t)i1 * 16 + 8, w1 + 4);
        }
        int c0 = 0, c1 = 0;
        if (act0)
            c0 = fwd4_core<SL>(w0, UNI ? a.p4 : fwd4_prep(a.keys[0][i0], a.bd, a.qs), a.c4, l0);
        if (act1)
            c1 = fwd4_core<SL>(w1, UNI ? a.p4 : fwd4_prep(a.keys[0][i1], a.bd, a.qs), a.c4, l1);
        if (act0) a.nnz[0][i0] = (uint16_t)c0;
        if (act1) a.nnz[0][i1] = (uint16_t)c1;
        // destinations: s0 / s1 store, p0 / p1 where
        bool s0, s1;
        int16_t *p0, *p1;
        if (cmp) {
            s0 = act0 && c0;
            s1 = act1 && c1;
            const unsigned b0 = __ballot_sync(0xffffffffu, s0),
                           b1 = __ballot_sync(0xffffffffu, s1);
            const uint32_t n0 = (uint32_t)__popc(b0), tot = n0 + (uint32_t)__popc(b1);
            uint32_t base = 0; // values, in the chunk's compacted region (< 2^27)
            if (BLK) {
                if (lane == 0) sh.tot[warp] = tot;
                __syncthreads();
                uint32_t before = 0, all = 0;
                VK_UNROLL
                for (int w = 0; w < kWarps; w++) {
                    const uint32_t v = sh.tot[w];
                    before += w < warp ? v : 0u;
                    all += v;
                }
                if (threadIdx.x == 0) sh.base = all ? atomicAdd(a.counter, all * 16u) : 0u;
                __syncthreads();
                base = sh.base + before * 16u;
                if (lane == 0 && t < tiles) a.tile_base[0][t] = base;
            } else {
                if (lane == 0) {
                    base = tot ? atomicAdd(a.counter, tot * 16u) : 0u;
                    a.tile_base[0][t] = base;
                }
                base = __shfl_sync(0xffffffffu, base, 0);
            }
            p0 = a.levc + base + (uint32_t)__popc(b0 & lt) * 16u;
            p1 = a.levc + base + (n0 + (uint32_t)__popc(b1 & lt)) * 16u;
        } else {
            s0 = act0;
            s1 = act1;
            p0 = a.lev + (uint32_t)a.dense_off[0] + i0 * 16u;
            p1 = a.lev + (uint32_t)a.dense_off[0] + i1 * 16u;
        }
        if (s0) {
            st16(p0, l0);
            st16(p0 + 8, l0 + 4);
        }
        if (s1) {
            st16(p1, l1);
            st16(p1 + 8, l1 + 4);
        }
    }
}

template <bool SL, bool BLK>
__global__ void __launch_bounds__(kThreads, kMinBlocksFwd4) fwd4_kernel(const FwdArgs a) {
    __shared__ Fwd4Shared sh;
    if (a.key_step[0] == 0)
        fwd4_loop<SL, true, BLK>(a, sh);
    else
        fwd4_loop<SL, false, BLK>(a, sh);
}

// Common end of the N x N classes: the levels are in the output layout, tot = the lane's
// own TB's non-zero count (TB i, lanes of group lane / N). Counts, compaction, store.
template <int N>
__device__ __forceinline__ void fwd_finish(const FwdArgs &a, uint32_t tile, BlockShared &sh,
                                           const uint8_t *wsm, uint32_t i, bool act,
                                           uint32_t tot) {
    constexpr int C = log2_of<N>() - 2;
    constexpr uint32_t len = N * N;
    const int lane = threadIdx.x & 31;
    const bool leader = (lane & (N - 1)) == 0;
    if (act && leader) a.nnz[C][i] = (uint16_t)tot;
    __syncwarp();
    int16_t *dst = nullptr;
    if ((a.compact >> C) & 1u) { // block-uniform: blocks are partitioned by class
        uint32_t rank;
        const uint32_t base = block_compact(leader && act && tot, len, a.counter,
                                            a.tile_base[C] + tile, sh, rank);
        rank = __shfl_sync(0xffffffffu, rank, lane & ~(N - 1));
        if (act && tot) dst = a.levc + base + (size_t)rank * len;
    } else if (act) {
        dst = a.lev + a.dense_off[C] + (size_t)i * len;
    }
    if (dst) lev_store_own<N>(lane, wsm, dst);
}

// CUDA cores, 32 / N TBs per warp (8x8, 16x16 and, with N = 32, 32x32).
template <int N, bool SL>
__device__ __forceinline__ void fwd_cc(const FwdArgs &a, uint32_t tile, BlockShared &sh,
                                       uint8_t *wsm) {
    constexpr int C = log2_of<N>() - 2;
    const int lane = threadIdx.x & 31;
    const uint32_t i = (tile * kWarps + (threadIdx.x >> 5)) * (32 / N) + (uint32_t)(lane / N);
    const bool act = i < a.n[C];
    const uint32_t key = act ? a.keys[C][i * a.key_step[C]] : 0u;
    uint32_t lv[N / 2];
    int cnt = 0;
    if (act) fwdcc_rows<N>(a.res[C] + (size_t)i * N * N, lane, a.bd, wsm);
    __syncwarp();
    if (act) cnt = fwdcc_cols<N, SL>(lane, key, a.bd, a.qs, wsm, lv);
    __syncwarp();
    if (act) fwdcc_put<N>(lane, lv, wsm);
    fwd_finish<N>(a, tile, sh, wsm, i, act, group_sum<N>((uint32_t)cnt));
}

// Tensor cores, 32x32: one TB per warp.
template <bool SL>
__device__ __forceinline__ void fwd_tc32(const FwdArgs &a, uint32_t tile, BlockShared &sh,
                                         uint8_t *wsm) {
    const int lane = threadIdx.x & 31;
    const uint32_t i = tile * kWarps + (threadIdx.x >> 5);
    const bool act = i < a.n[3];
    int cnt = 0;
    if (act) { // warp-uniform
        const uint32_t key = a.keys[3][i * a.key_step[3]];
        TcF32 s;
        uint32_t a1[2][4], b2[4][2];
        VK_UNROLL
        for (int mt = 0; mt < 2; mt++)
            VK_UNROLL
        for (int r = 0; r < 4; r++)
            a1[mt][r] = g_frag.f32s1a[mt][r][lane];
        VK_UNROLL
        for (int nt = 0; nt < 4; nt++)
            VK_UNROLL
        for (int h = 0; h < 2; h++)
            b2[nt][h] = g_frag.f32s2b[nt][h][lane];
        tcf32_load(s, lane, a.res[3] + (size_t)i * 1024, a.bd, true);
        tc32_stage1(s.acc, a1, s.bh, s.bl);
        tc32_mid(s.acc, s.ah, s.al, a.bd - 4, false); // shift log2N + bd - 9
        tc32_stage2(s.acc, s.ah, s.al, b2);
        cnt = tcf32_quant<SL>(s, lane, key, a.bd, a.qs, wsm);
    }
    fwd_finish<32>(a, tile, sh, wsm, i, act, __reduce_add_sync(0xffffffffu, (uint32_t)cnt));
}

// Tensor cores, 16x16: two TBs per warp, both in every lane's fragments.
template <bool SL>
__device__ __forceinline__ void fwd_tc16(const FwdArgs &a, uint32_t tile, BlockShared &sh,
                                         uint8_t *wsm) {
    const int lane = threadIdx.x & 31;
    const uint32_t i0 = (tile * kWarps + (threadIdx.x >> 5)) * 2;
    const bool act0 = i0 < a.n[2], act1 = i0 + 1 < a.n[2];
    int cnt[2] = {0, 0};
    if (act0) { // warp-uniform
        uint32_t key[2];
        key[0] = a.keys[2][i0 * a.key_step[2]];
        key[1] = act1 ? a.keys[2][(i0 + 1) * a.key_step[2]] : 0u;
        TcF16 s;
        uint32_t a1[2], b2[2];
        VK_UNROLL
        for (int r = 0; r < 2; r++)
            a1[r] = g_frag.f16s1a[r][lane];
        VK_UNROLL
        for (int nt = 0; nt < 2; nt++)
            b2[nt] = g_frag.f16s2b[nt][lane];
        const int16_t *src0 = a.res[2] + (size_t)i0 * 256;
        tcf16_load(s, lane, src0, src0 + 256, a.bd, true, act1);
        VK_UNROLL
        for (int j = 0; j < 2; j++) {
            tc16_stage1(s.acc[j], a1, s.bh[j], s.bl[j]);
            tc16_mid(s.acc[j], s.ah[j], s.al[j], a.bd - 5, false);
            tc16_stage2(s.acc[j], s.ah[j], s.al[j], b2);
        }
        tcf16_quant<SL>(s, lane, key, a.bd, a.qs, wsm, cnt);
    }
    const uint32_t t0 = __reduce_add_sync(0xffffffffu, (uint32_t)cnt[0]);
    const uint32_t t1 = __reduce_add_sync(0xffffffffu, (uint32_t)cnt[1]);
    const bool hi = lane >= 16;
    fwd_finish<16>(a, tile, sh, wsm, i0 + hi, hi ? act1 : act0, hi ? t1 : t0);
}

template <bool TC, bool SL>
__global__ void __launch_bounds__(kThreads, 3) fwd_kernel(const FwdArgs a) {
    __shared__ __align__(16) uint8_t smem[kWarps * kWarpSmem];
    __shared__ BlockShared sh;
    const uint32_t b = blockIdx.x; // classes 1..3 (4x4: fwd4_kernel)
    const int cls = b < a.blk0[2] ? 1 : b < a.blk0[3] ? 2 : 3;
    const uint32_t tile = b - a.blk0[cls];
    uint8_t *wsm = smem + (threadIdx.x >> 5) * kWarpSmem;
    if (cls == 1) return fwd_cc<8, SL>(a, tile, sh, wsm);
    if (cls == 2) {
        if (TC) return fwd_tc16<SL>(a, tile, sh, wsm);
        return fwd_cc<16, SL>(a, tile, sh, wsm);
    }
    if (TC) return fwd_tc32<SL>(a, tile, sh, wsm);
    fwd_cc<32, SL>(a, tile, sh, wsm);
}

// ---- inverse kernel
// -----------------------------------------------------------------------------

// 4x4 inverse: its own kernel, one thread per TB, a grid stride over the TBs.
template <bool SL, int OUT>
__global__ void __launch_bounds__(kThreads, kMinBlocksInv4) inv4_kernel(const InvArgs a) {
    const uint32_t n = a.n[0], stride = gridDim.x * kThreads;
    for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += stride)
        inv4_tb<SL, OUT>(a.lev[0] + (size_t)i * 16,
                         static_cast<uint8_t *>(a.pix[0]) + (size_t)i * 16 * pix_bytes<OUT>(),
                         a.keys[0][i * a.key_step[0]], a.bd, a.ds);
}

template <int N, bool SL, int OUT>
__device__ __forceinline__ void inv_cc(const InvArgs &a, uint32_t tile, uint8_t *wsm) {
    constexpr int C = log2_of<N>() - 2;
    const int lane = threadIdx.x & 31;
    const uint32_t i = (tile * kWarps + (threadIdx.x >> 5)) * (32 / N) + (uint32_t)(lane / N);
    const bool act = i < a.n[C];
    int16_t *lev = a.lev[C] + (size_t)i * N * N;
    void *pix = static_cast<uint8_t *>(a.pix[C]) + (size_t)i * N * N * pix_bytes<OUT>();
    if (act) invcc_cols<N, SL>(lev, lane, a.keys[C][i * a.key_step[C]], a.bd, a.ds, wsm);
    __syncwarp();
    if (act) invcc_rows<N, OUT>(lev, pix, lane, a.bd, wsm);
}

template <bool SL, int OUT>
__device__ __forceinline__ void inv_tc32(const InvArgs &a, uint32_t tile, uint8_t *wsm) {
    const int lane = threadIdx.x & 31;
    const uint32_t i = tile * kWarps + (threadIdx.x >> 5);
    if (i >= a.n[3]) return; // warp-uniform
    const uint32_t key = a.keys[3][i * a.key_step[3]];
    int16_t *lev = a.lev[3] + (size_t)i * 1024;
    void *pix = static_cast<uint8_t *>(a.pix[3]) + (size_t)i * 1024 * pix_bytes<OUT>();
    TcI32 s;
    uint32_t a1[2][4], b2[4][2];
    VK_UNROLL
    for (int mt = 0; mt < 2; mt++)
        VK_UNROLL
    for (int r = 0; r < 4; r++)
        a1[mt][r] = g_frag.i32s1a[mt][r][lane];
    VK_UNROLL
    for (int nt = 0; nt < 4; nt++)
        VK_UNROLL
    for (int h = 0; h < 2; h++)
        b2[nt][h] = g_frag.i32s2b[nt][h][lane];
    tci32_stage(lev, lane, wsm);
    __syncwarp();
    tci32_gather<SL>(s, lane, key, a.bd, a.ds, wsm);
    tc32_stage1(s.acc, a1, s.bh, s.bl);
    tc32_mid(s.acc, s.ah, s.al, 7, true);
    tc32_stage2(s.acc, s.ah, s.al, b2);
    tci32_out<OUT>(s, lane, lev, pix, a.bd);
}

template <bool SL, int OUT>
__device__ __forceinline__ void inv_tc16(const InvArgs &a, uint32_t tile, uint8_t *wsm) {
    const int lane = threadIdx.x & 31;
    const uint32_t i0 = (tile * kWarps + (threadIdx.x >> 5)) * 2;
    if (i0 >= a.n[2]) return; // warp-uniform
    const bool act1 = i0 + 1 < a.n[2];
    uint32_t key[2];
    key[0] = a.keys[2][i0 * a.key_step[2]];
    key[1] = act1 ? a.keys[2][(i0 + 1) * a.key_step[2]] : 0u;
    int16_t *lev0 = a.lev[2] + (size_t)i0 * 256;
    uint8_t *pix0 = static_cast<uint8_t *>(a.pix[2]) + (size_t)i0 * 256 * pix_bytes<OUT>();
    TcI16 s;
    uint32_t a1[2], b2[2];
    VK_UNROLL
    for (int r = 0; r < 2; r++)
        a1[r] = g_frag.i16s1a[r][lane];
    VK_UNROLL
    for (int nt = 0; nt < 2; nt++)
        b2[nt] = g_frag.i16s2b[nt][lane];
    tci16_stage(lev0, 0, lane, wsm, true);
    tci16_stage(lev0 + 256, 1, lane, wsm, act1);
    __syncwarp();
    tci16_gather<SL>(s, lane, key, a.bd, a.ds, wsm);
    VK_UNROLL
    for (int j = 0; j < 2; j++) {
        tc16_stage1(s.acc[j], a1, s.bh[j], s.bl[j]);
        tc16_mid(s.acc[j], s.ah[j], s.al[j], 7, true);
        tc16_stage2(s.acc[j], s.ah[j], s.al[j], b2);
    }
    tci16_out<OUT>(s, lane, 0, lev0, pix0, a.bd);
    if (act1) tci16_out<OUT>(s, lane, 1, lev0 + 256, pix0 + 256 * pix_bytes<OUT>(), a.bd);
}

template <bool TC, bool SL, int OUT>
__global__ void __launch_bounds__(kThreads, 3) inv_kernel(const InvArgs a) {
    __shared__ __align__(16) uint8_t smem[kWarps * kWarpSmem];
    const uint32_t b = blockIdx.x; // classes 1..3 (4x4: inv4_kernel)
    const int cls = b < a.blk0[2] ? 1 : b < a.blk0[3] ? 2 : 3;
    const uint32_t tile = b - a.blk0[cls];
    uint8_t *wsm = smem + (threadIdx.x >> 5) * kWarpSmem;
    if (cls == 1) return inv_cc<8, SL, OUT>(a, tile, wsm);
    if (cls == 2) {
        if (TC) return inv_tc16<SL, OUT>(a, tile, wsm);
        return inv_cc<16, SL, OUT>(a, tile, wsm);
    }
    if (TC) return inv_tc32<SL, OUT>(a, tile, wsm);
    inv_cc<32, SL, OUT>(a, tile, wsm);
}

} // namespace vidk_hevccu

#endif
