// Host emulation of the kernels of hevc_dev.cuh: the same phase functions (hevc_kern.cuh),
// every lane of a warp through phase k before any lane enters phase k + 1 (what
// __syncwarp, __syncthreads and mma.sync guarantee), warps and CUDA blocks one after the
// other. The collectives are emulated: mma.sync from the PTX fragment layouts, warp
// reductions, ballots and the forward's block compaction (the atomic becomes a plain add,
// so the emulated output order is the block order; the host unpacking does not depend on
// it). Shared memory is poisoned before every block. Host-only.
#ifndef VIDK_HEVC_EMU_CUH
#define VIDK_HEVC_EMU_CUH

#include <stdlib.h>
#include <string.h>

#include "emu.cuh"
#include "hevc_kern.cuh"

namespace vidk_hevccu {

static const FragTab kFragHost = make_frag_tab();

// D = A * B + C for one m16n8kK MMA with 8-bit operands; per-lane register arrays.
// C and D may be the same registers.
inline void emu_mma(int K, bool au, bool bu, const uint32_t *const A[32],
                    const uint32_t *const B[32], int32_t *const CD[32]) {
    int a[16][32], b[32][8];
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    const int nra = K == 32 ? 4 : 2, nrb = K == 32 ? 2 : 1;
    for (int l = 0; l < 32; l++) {
        const int g = l >> 2, t = l & 3;
        for (int r = 0; r < nra; r++)
            for (int i = 0; i < 4; i++) {
                const uint32_t byte = (A[l][r] >> (8 * i)) & 255;
                a[g + 8 * (r & 1)][4 * t + i + 16 * (r >> 1)] =
                    au ? (int)byte : (int)(int8_t)byte;
            }
        for (int r = 0; r < nrb; r++)
            for (int i = 0; i < 4; i++) {
                const uint32_t byte = (B[l][r] >> (8 * i)) & 255;
                b[4 * t + i + 16 * r][g] = bu ? (int)byte : (int)(int8_t)byte;
            }
    }
    int32_t d[32][4];
    for (int l = 0; l < 32; l++) {
        const int g = l >> 2, t = l & 3;
        for (int c = 0; c < 4; c++) {
            const int m = g + 8 * (c >> 1), n = 2 * t + (c & 1);
            int64_t s = CD[l][c];
            for (int k = 0; k < K; k++)
                s += a[m][k] * b[k][n];
            d[l][c] = (int32_t)s;
        }
    }
    for (int l = 0; l < 32; l++)
        for (int c = 0; c < 4; c++)
            CD[l][c] = d[l][c];
}

// The byte-split pair of mma32_split / mma16_split (hevc_dev.cuh).
inline void emu_split(int K, bool hi_a, const uint32_t *const ah[32],
                      const uint32_t *const al[32], const uint32_t *const bh[32],
                      const uint32_t *const bl[32], int32_t *const acc[32]) {
    for (int l = 0; l < 32; l++)
        for (int c = 0; c < 4; c++)
            acc[l][c] = 0;
    emu_mma(K, false, false, ah, bh, acc);
    for (int l = 0; l < 32; l++)
        for (int c = 0; c < 4; c++)
            acc[l][c] *= 256;
    if (hi_a)
        emu_mma(K, true, false, al, bh, acc);
    else
        emu_mma(K, false, true, ah, bl, acc);
}

// Per-lane fragment tables of a warp.
struct EmuFrag32 {
    uint32_t a1[32][2][4], b2[32][4][2];
};
inline void emu_frag32(EmuFrag32 &f, bool inv) {
    for (int l = 0; l < 32; l++) {
        for (int mt = 0; mt < 2; mt++)
            for (int r = 0; r < 4; r++)
                f.a1[l][mt][r] = inv ? kFragHost.i32s1a[mt][r][l] : kFragHost.f32s1a[mt][r][l];
        for (int nt = 0; nt < 4; nt++)
            for (int h = 0; h < 2; h++)
                f.b2[l][nt][h] = inv ? kFragHost.i32s2b[nt][h][l] : kFragHost.f32s2b[nt][h][l];
    }
}
struct EmuFrag16 {
    uint32_t a1[32][2], b2[32][2];
};
inline void emu_frag16(EmuFrag16 &f, bool inv) {
    for (int l = 0; l < 32; l++)
        for (int r = 0; r < 2; r++) {
            f.a1[l][r] = inv ? kFragHost.i16s1a[r][l] : kFragHost.f16s1a[r][l];
            f.b2[l][r] = inv ? kFragHost.i16s2b[r][l] : kFragHost.f16s2b[r][l];
        }
}

// tc32_stage1 / tc32_stage2 over the 32 lanes' states (S: TcF32 or TcI32).
template <class S> void emu_tc32_stage1(S *s, const EmuFrag32 &f) {
    const uint32_t *A[32], *Bh[32], *Bl[32];
    int32_t *D[32];
    for (int mt = 0; mt < 2; mt++)
        for (int nt = 0; nt < 4; nt++) {
            for (int l = 0; l < 32; l++) {
                A[l] = f.a1[l][mt];
                Bh[l] = s[l].bh[nt];
                Bl[l] = s[l].bl[nt];
                D[l] = s[l].acc[mt][nt];
            }
            emu_split(32, false, A, nullptr, Bh, Bl, D);
        }
}
template <class S> void emu_tc32_stage2(S *s, const EmuFrag32 &f) {
    const uint32_t *Ah[32], *Al[32], *B[32];
    int32_t *D[32];
    for (int mt = 0; mt < 2; mt++)
        for (int nt = 0; nt < 4; nt++) {
            for (int l = 0; l < 32; l++) {
                Ah[l] = s[l].ah[mt];
                Al[l] = s[l].al[mt];
                B[l] = f.b2[l][nt];
                D[l] = s[l].acc[mt][nt];
            }
            emu_split(32, true, Ah, Al, B, nullptr, D);
        }
}
// TB j of the 16x16 states (S: TcF16 or TcI16).
template <class S> void emu_tc16_stage1(S *s, int j, const EmuFrag16 &f) {
    const uint32_t *A[32], *Bh[32], *Bl[32];
    int32_t *D[32];
    for (int nt = 0; nt < 2; nt++) {
        for (int l = 0; l < 32; l++) {
            A[l] = f.a1[l];
            Bh[l] = &s[l].bh[j][nt];
            Bl[l] = &s[l].bl[j][nt];
            D[l] = s[l].acc[j][nt];
        }
        emu_split(16, false, A, nullptr, Bh, Bl, D);
    }
}
template <class S> void emu_tc16_stage2(S *s, int j, const EmuFrag16 &f) {
    const uint32_t *Ah[32], *Al[32], *B[32];
    int32_t *D[32];
    for (int nt = 0; nt < 2; nt++) {
        for (int l = 0; l < 32; l++) {
            Ah[l] = s[l].ah[j];
            Al[l] = s[l].al[j];
            B[l] = &f.b2[l][nt];
            D[l] = s[l].acc[j][nt];
        }
        emu_split(16, true, Ah, Al, B, nullptr, D);
    }
}

// block_compact over the block's flags (thread order).
inline uint32_t emu_compact(const bool *f, uint32_t len, uint32_t *counter, uint32_t *tile_base,
                            uint32_t *rank) {
    uint32_t total = 0;
    for (int t = 0; t < kThreads; t++) {
        rank[t] = total;
        total += f[t];
    }
    const uint32_t base = total ? *counter : 0u;
    *counter += total * len;
    *tile_base = base;
    return base;
}

struct EmuScratch {
    uint8_t smem[kWarps * kWarpSmem];
    TcF32 f32[32];
    TcF16 f16[32];
    TcI32 i32[32];
    TcI16 i16[32];
    uint32_t lev4[kWarps][2][32][8]; // 4x4 forward: one block round
    int cnt4[kWarps][2][32];
    bool act[kThreads], flag[kThreads];
    uint32_t idx[kThreads], tot[kThreads], rank[kThreads];
    EmuFrag32 fr32f, fr32i;
    EmuFrag16 fr16f, fr16i;
};

inline EmuScratch *emu_scratch_new() {
    EmuScratch *e = static_cast<EmuScratch *>(malloc(sizeof(EmuScratch)));
    if (!e) return nullptr;
    emu_frag32(e->fr32f, false);
    emu_frag32(e->fr32i, true);
    emu_frag16(e->fr16f, false);
    emu_frag16(e->fr16i, true);
    return e;
}

// fwd4_kernel with `grid` blocks: every block's rounds, in a round the 8 warps' tiles
// (lanes one after the other), then the allocation - BLK: the block's scan and one add for
// the round; !BLK: one add per warp and tile - and the stores.
template <bool SL, bool BLK> void emu_fwd4(const FwdArgs &a, unsigned grid, EmuScratch *e) {
    const uint32_t n = a.n[0], tiles = (n + kTileFwd[0] - 1) / kTileFwd[0];
    const bool uni = a.key_step[0] == 0, cmp = a.compact & 1u;
    // Blocks in reverse order: the compacted output is then not in tile order, as it may
    // be on the device (the host must follow the tile bases).
    for (uint32_t bb = 0; bb < grid; bb++)
        for (uint32_t r = grid - 1 - bb; r * kWarps < tiles; r += grid) {
            bool act[kWarps][2][32];
            uint32_t tot[kWarps];
            for (uint32_t w = 0; w < (uint32_t)kWarps; w++) {
                const uint32_t t = r * kWarps + w;
                tot[w] = 0;
                for (int h = 0; h < 2; h++)
                    for (int l = 0; l < 32; l++) {
                        const uint32_t i = t * kTileFwd[0] + (uint32_t)(32 * h + l);
                        act[w][h][l] = i < n;
                        e->cnt4[w][h][l] = 0;
                        if (!act[w][h][l]) continue;
                        uint32_t in[8];
                        ld16(a.res[0] + (size_t)i * 16, in);
                        ld16(a.res[0] + (size_t)i * 16 + 8, in + 4);
                        e->cnt4[w][h][l] =
                            fwd4_core<SL>(in, uni ? a.p4 : fwd4_prep(a.keys[0][i], a.bd, a.qs),
                                          a.c4, e->lev4[w][h][l]);
                        a.nnz[0][i] = (uint16_t)e->cnt4[w][h][l];
                        tot[w] += e->cnt4[w][h][l] != 0;
                    }
            }
            uint32_t base[kWarps] = {0};
            if (cmp) {
                if (BLK) {
                    uint32_t all = 0;
                    for (int w = 0; w < kWarps; w++)
                        all += tot[w];
                    uint32_t p = all ? *a.counter : 0u;
                    *a.counter += all * 16u;
                    for (int w = 0; w < kWarps; w++) {
                        base[w] = p;
                        p += tot[w] * 16u;
                    }
                } else {
                    for (int w = 0; w < kWarps; w++) {
                        base[w] = tot[w] ? *a.counter : 0u;
                        *a.counter += tot[w] * 16u;
                    }
                }
                for (uint32_t w = 0; w < (uint32_t)kWarps; w++)
                    if (r * kWarps + w < tiles) a.tile_base[0][r * kWarps + w] = base[w];
            }
            for (uint32_t w = 0; w < (uint32_t)kWarps; w++) {
                const uint32_t t = r * kWarps + w;
                uint32_t rank = 0;
                for (int h = 0; h < 2; h++)
                    for (int l = 0; l < 32; l++) {
                        const uint32_t i = t * kTileFwd[0] + (uint32_t)(32 * h + l);
                        int16_t *d = nullptr;
                        if (cmp) {
                            if (act[w][h][l] && e->cnt4[w][h][l])
                                d = a.levc + base[w] + (size_t)rank++ * 16;
                        } else if (act[w][h][l]) {
                            d = a.lev + a.dense_off[0] + (size_t)i * 16;
                        }
                        if (d) {
                            st16(d, e->lev4[w][h][l]);
                            st16(d + 8, e->lev4[w][h][l] + 4);
                        }
                    }
            }
        }
}

// fwd_finish for one block: e->idx / act[0] / tot hold every thread's own TB.
template <int N> void emu_finish(const FwdArgs &a, uint32_t tile, EmuScratch *e) {
    constexpr int C = log2_of<N>() - 2;
    constexpr uint32_t len = N * N;
    for (int t = 0; t < kThreads; t++) {
        const bool leader = (t & (N - 1)) == 0;
        if (e->act[t] && leader) a.nnz[C][e->idx[t]] = (uint16_t)e->tot[t];
        e->flag[t] = leader && e->act[t] && e->tot[t];
    }
    uint32_t base = 0;
    const bool cmp = (a.compact >> C) & 1u;
    if (cmp) base = emu_compact(e->flag, len, a.counter, a.tile_base[C] + tile, e->rank);
    for (int t = 0; t < kThreads; t++) {
        int16_t *dst = nullptr;
        if (cmp) {
            if (e->act[t] && e->tot[t])
                dst = a.levc + base + (size_t)e->rank[t & ~(N - 1)] * len;
        } else if (e->act[t]) {
            dst = a.lev + a.dense_off[C] + (size_t)e->idx[t] * len;
        }
        if (dst) lev_store_own<N>(t & 31, e->smem + (t >> 5) * kWarpSmem, dst);
    }
}

template <int N, bool SL> void emu_fwdcc(const FwdArgs &a, uint32_t tile, EmuScratch *e) {
    constexpr int C = log2_of<N>() - 2;
    uint32_t lv[32][N / 2];
    for (int w = 0; w < kWarps; w++) {
        uint8_t *wsm = e->smem + w * kWarpSmem;
        int cnt[32];
        uint32_t key[32];
        for (int l = 0; l < 32; l++) {
            const int t = w * 32 + l;
            e->idx[t] = (tile * kWarps + (uint32_t)w) * (32 / N) + (uint32_t)(l / N);
            e->act[t] = e->idx[t] < a.n[C];
            key[l] = e->act[t] ? a.keys[C][e->idx[t] * a.key_step[C]] : 0u;
            cnt[l] = 0;
        }
        for (int l = 0; l < 32; l++)
            if (e->act[w * 32 + l])
                fwdcc_rows<N>(a.res[C] + (size_t)e->idx[w * 32 + l] * N * N, l, a.bd, wsm);
        for (int l = 0; l < 32; l++)
            if (e->act[w * 32 + l])
                cnt[l] = fwdcc_cols<N, SL>(l, key[l], a.bd, a.qs, wsm, lv[l]);
        for (int l = 0; l < 32; l++)
            if (e->act[w * 32 + l]) fwdcc_put<N>(l, lv[l], wsm);
        for (int l = 0; l < 32; l++) {
            uint32_t sum = 0;
            for (int k = l & ~(N - 1); k < (l & ~(N - 1)) + N; k++)
                sum += (uint32_t)cnt[k];
            e->tot[w * 32 + l] = sum;
        }
    }
    emu_finish<N>(a, tile, e);
}

template <bool SL> void emu_fwdtc32(const FwdArgs &a, uint32_t tile, EmuScratch *e) {
    for (int w = 0; w < kWarps; w++) {
        uint8_t *wsm = e->smem + w * kWarpSmem;
        const uint32_t i = tile * kWarps + (uint32_t)w;
        const bool act = i < a.n[3];
        uint32_t tot = 0;
        if (act) {
            const uint32_t key = a.keys[3][i * a.key_step[3]];
            const int16_t *src = a.res[3] + (size_t)i * 1024;
            for (int l = 0; l < 32; l++)
                tcf32_load(e->f32[l], l, src, a.bd, true);
            emu_tc32_stage1(e->f32, e->fr32f);
            for (int l = 0; l < 32; l++)
                tc32_mid(e->f32[l].acc, e->f32[l].ah, e->f32[l].al, a.bd - 4, false);
            emu_tc32_stage2(e->f32, e->fr32f);
            for (int l = 0; l < 32; l++)
                tot += (uint32_t)tcf32_quant<SL>(e->f32[l], l, key, a.bd, a.qs, wsm);
        }
        for (int l = 0; l < 32; l++) {
            e->idx[w * 32 + l] = i;
            e->act[w * 32 + l] = act;
            e->tot[w * 32 + l] = tot;
        }
    }
    emu_finish<32>(a, tile, e);
}

template <bool SL> void emu_fwdtc16(const FwdArgs &a, uint32_t tile, EmuScratch *e) {
    for (int w = 0; w < kWarps; w++) {
        uint8_t *wsm = e->smem + w * kWarpSmem;
        const uint32_t i0 = (tile * kWarps + (uint32_t)w) * 2;
        const bool act0 = i0 < a.n[2], act1 = i0 + 1 < a.n[2];
        uint32_t tot[2] = {0, 0};
        if (act0) {
            uint32_t key[2];
            key[0] = a.keys[2][i0 * a.key_step[2]];
            key[1] = act1 ? a.keys[2][(i0 + 1) * a.key_step[2]] : 0u;
            const int16_t *src0 = a.res[2] + (size_t)i0 * 256;
            for (int l = 0; l < 32; l++)
                tcf16_load(e->f16[l], l, src0, src0 + 256, a.bd, true, act1);
            for (int j = 0; j < 2; j++) {
                emu_tc16_stage1(e->f16, j, e->fr16f);
                for (int l = 0; l < 32; l++)
                    tc16_mid(e->f16[l].acc[j], e->f16[l].ah[j], e->f16[l].al[j], a.bd - 5,
                             false);
                emu_tc16_stage2(e->f16, j, e->fr16f);
            }
            for (int l = 0; l < 32; l++) {
                int c[2];
                tcf16_quant<SL>(e->f16[l], l, key, a.bd, a.qs, wsm, c);
                tot[0] += (uint32_t)c[0];
                tot[1] += (uint32_t)c[1];
            }
        }
        for (int l = 0; l < 32; l++) {
            const int hi = l >= 16;
            e->idx[w * 32 + l] = i0 + (uint32_t)hi;
            e->act[w * 32 + l] = hi ? act1 : act0;
            e->tot[w * 32 + l] = tot[hi];
        }
    }
    emu_finish<16>(a, tile, e);
}

template <bool TC, bool SL> void emu_fwd(const FwdArgs &a, unsigned grid, EmuScratch *e) {
    for (uint32_t b = 0; b < grid; b++) {
        const int cls = b < a.blk0[2] ? 1 : b < a.blk0[3] ? 2 : 3;
        const uint32_t tile = b - a.blk0[cls];
        vidk_cux::emu_poison(e->smem, sizeof(e->smem), vidk_cux::kPoisonShared);
        if (cls == 1)
            emu_fwdcc<8, SL>(a, tile, e);
        else if (cls == 2 && TC)
            emu_fwdtc16<SL>(a, tile, e);
        else if (cls == 2)
            emu_fwdcc<16, SL>(a, tile, e);
        else if (TC)
            emu_fwdtc32<SL>(a, tile, e);
        else
            emu_fwdcc<32, SL>(a, tile, e);
    }
}

template <int N, bool SL, int OUT>
void emu_invcc(const InvArgs &a, uint32_t tile, EmuScratch *e) {
    constexpr int C = log2_of<N>() - 2;
    for (int w = 0; w < kWarps; w++) {
        uint8_t *wsm = e->smem + w * kWarpSmem;
        for (int phase = 0; phase < 2; phase++)
            for (int l = 0; l < 32; l++) {
                const uint32_t i = (tile * kWarps + (uint32_t)w) * (32 / N) + (uint32_t)(l / N);
                if (i >= a.n[C]) continue;
                int16_t *lev = a.lev[C] + (size_t)i * N * N;
                void *pix =
                    static_cast<uint8_t *>(a.pix[C]) + (size_t)i * N * N * pix_bytes<OUT>();
                if (!phase)
                    invcc_cols<N, SL>(lev, l, a.keys[C][i * a.key_step[C]], a.bd, a.ds, wsm);
                else
                    invcc_rows<N, OUT>(lev, pix, l, a.bd, wsm);
            }
    }
}

// The tensor-core classes of one block.
template <bool SL, int OUT>
void emu_invtc(const InvArgs &a, int cls, uint32_t tile, EmuScratch *e) {
    constexpr int PB = pix_bytes<OUT>();
    for (int w = 0; w < kWarps; w++) {
        uint8_t *wsm = e->smem + w * kWarpSmem;
        if (cls == 3) {
            const uint32_t i = tile * kWarps + (uint32_t)w;
            if (i >= a.n[3]) continue;
            const uint32_t key = a.keys[3][i * a.key_step[3]];
            int16_t *lev = a.lev[3] + (size_t)i * 1024;
            void *pix = static_cast<uint8_t *>(a.pix[3]) + (size_t)i * 1024 * PB;
            for (int l = 0; l < 32; l++)
                tci32_stage(lev, l, wsm);
            for (int l = 0; l < 32; l++)
                tci32_gather<SL>(e->i32[l], l, key, a.bd, a.ds, wsm);
            emu_tc32_stage1(e->i32, e->fr32i);
            for (int l = 0; l < 32; l++)
                tc32_mid(e->i32[l].acc, e->i32[l].ah, e->i32[l].al, 7, true);
            emu_tc32_stage2(e->i32, e->fr32i);
            for (int l = 0; l < 32; l++)
                tci32_out<OUT>(e->i32[l], l, lev, pix, a.bd);
            continue;
        }
        const uint32_t i0 = (tile * kWarps + (uint32_t)w) * 2;
        if (i0 >= a.n[2]) continue;
        const bool act1 = i0 + 1 < a.n[2];
        uint32_t key[2];
        key[0] = a.keys[2][i0 * a.key_step[2]];
        key[1] = act1 ? a.keys[2][(i0 + 1) * a.key_step[2]] : 0u;
        int16_t *lev0 = a.lev[2] + (size_t)i0 * 256;
        uint8_t *pix0 = static_cast<uint8_t *>(a.pix[2]) + (size_t)i0 * 256 * PB;
        for (int l = 0; l < 32; l++) {
            tci16_stage(lev0, 0, l, wsm, true);
            tci16_stage(lev0 + 256, 1, l, wsm, act1);
        }
        for (int l = 0; l < 32; l++)
            tci16_gather<SL>(e->i16[l], l, key, a.bd, a.ds, wsm);
        for (int j = 0; j < 2; j++) {
            emu_tc16_stage1(e->i16, j, e->fr16i);
            for (int l = 0; l < 32; l++)
                tc16_mid(e->i16[l].acc[j], e->i16[l].ah[j], e->i16[l].al[j], 7, true);
            emu_tc16_stage2(e->i16, j, e->fr16i);
        }
        for (int l = 0; l < 32; l++) {
            tci16_out<OUT>(e->i16[l], l, 0, lev0, pix0, a.bd);
            if (act1) tci16_out<OUT>(e->i16[l], l, 1, lev0 + 256, pix0 + 256 * PB, a.bd);
        }
    }
}

// inv4_kernel with `grid` blocks: every thread's grid-stride walk over the TBs.
template <bool SL, int OUT> void emu_inv4(const InvArgs &a, unsigned grid, EmuScratch *e) {
    (void)e;
    constexpr int PB = pix_bytes<OUT>();
    const uint32_t n = a.n[0], stride = grid * kThreads;
    for (uint32_t b = 0; b < grid; b++)
        for (uint32_t t = 0; t < (uint32_t)kThreads; t++)
            for (uint32_t i = b * kThreads + t; i < n; i += stride)
                inv4_tb<SL, OUT>(a.lev[0] + (size_t)i * 16,
                                 static_cast<uint8_t *>(a.pix[0]) + (size_t)i * 16 * PB,
                                 a.keys[0][i * a.key_step[0]], a.bd, a.ds);
}

template <bool TC, bool SL, int OUT>
void emu_inv(const InvArgs &a, unsigned grid, EmuScratch *e) {
    for (uint32_t b = 0; b < grid; b++) {
        const int cls = b < a.blk0[2] ? 1 : b < a.blk0[3] ? 2 : 3;
        const uint32_t tile = b - a.blk0[cls];
        vidk_cux::emu_poison(e->smem, sizeof(e->smem), vidk_cux::kPoisonShared);
        if (cls == 1) {
            emu_invcc<8, SL, OUT>(a, tile, e);
        } else if (TC) {
            emu_invtc<SL, OUT>(a, cls, tile, e);
        } else if (cls == 2) {
            emu_invcc<16, SL, OUT>(a, tile, e);
        } else {
            emu_invcc<32, SL, OUT>(a, tile, e);
        }
    }
}

} // namespace vidk_hevccu

#endif
