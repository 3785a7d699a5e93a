// Host emulation of the kernels of h264_kern.cuh: the same phase functions, every lane of
// a warp through phase k before any lane enters phase k + 1 (what __syncwarp and
// __syncthreads guarantee), CUDA blocks and warps one after the other. Used by the
// emulated entry points (vidk_cuda_h264_emu_*) so that packing, chunking, index
// arithmetic and the kernels' bits are tested without a GPU. Host-only.
#ifndef VIDK_H264_EMU_CUH
#define VIDK_H264_EMU_CUH

#include <stdlib.h>
#include <string.h>

#include "emu.cuh"
#include "h264_kern.cuh"

namespace vidk_h264cu {

template <int N, bool LINE, bool COAL, bool SPARSE, bool FUSED, bool PLANE = false>
void emu_inv(const InvArgs &a, unsigned grid, int threads) {
    constexpr int WS = warp_smem_words<N, LINE, COAL, FUSED>();
    const int nwarps = threads / 32;
    uint32_t sm[WS > 0 ? WS : 1];
    LineState<N> ls[32];
    for (unsigned x = 0; x < grid; x++)
        for (int w = 0; w < nwarps; w++) // no block-level barrier: warps are independent
            for (int g = 0; g < a.work; g++) {
                const uint32_t wf = warp_first_block<N, LINE>(a, x, nwarps, w, g);
                if (wf >= a.b1) break;
                // Poison the shared memory: a phase reading a word nobody wrote shows.
                vidk_cux::emu_poison(sm, sizeof(sm), vidk_cux::kPoisonShared);
                if (LINE) {
                    for (int l = 0; l < 32; l++) {
                        ls[l].b = wf + (uint32_t)(l / N);
                        ls[l].r = l % N;
                        ls[l].act = ls[l].b < a.b1;
                    }
                    for (int l = 0; l < 32; l++)
                        line_p1<N, SPARSE, FUSED, PLANE>(a, ls[l], sm + (l / N) * N * (N + 1));
                    for (int l = 0; l < 32; l++)
                        line_p2<N>(ls[l], sm + (l / N) * N * (N + 1));
                    for (int l = 0; l < 32; l++)
                        line_p3<N, COAL, FUSED>(a, ls[l], sm + (l / N) * N * (N + 1));
                    if (COAL)
                        for (int l = 0; l < 32; l++)
                            line_p4<N, FUSED, PLANE>(a, ls[l], sm + (l / N) * N * (N + 1));
                } else {
                    for (int l = 0; l < 32; l++)
                        block_p1<N, COAL, SPARSE, FUSED>(a, wf, l, sm);
                    if (COAL)
                        for (int l = 0; l < 32; l++)
                            block_p2<N, FUSED>(a, wf, l, sm);
                }
            }
}

template <bool FUSED> void emu_dense(const DenseArgs &a, unsigned grid, int threads) {
    for (uint32_t t = 0; t < (uint32_t)grid * (uint32_t)threads; t++)
        dense_cell<FUSED>(a, t);
}

// The fast dense kernel: per CUDA block and warp, every lane through a phase before the
// next (the ballots are ORs over the lanes).
inline void emu_vec(const VecArgs &a, unsigned grid, int threads) {
    uint32_t sm[kVecWarpWords];
    VecLane s[32];
    for (unsigned x = 0; x < grid; x++)
        for (int w = 0; w < threads / 32; w++) {
            vidk_cux::emu_poison(sm, sizeof(sm), vidk_cux::kPoisonShared);
            uint32_t m8 = 0, mv = 0;
            for (int l = 0; l < 32; l++) {
                // poison: state a phase did not set shows
                vidk_cux::emu_poison(&s[l], sizeof(s[l]), vidk_cux::kPoisonState);
                vec_p0(a, x, w, l, s[l]);
                m8 |= (uint32_t)s[l].is8 << l;
                mv |= (uint32_t)s[l].valid << l;
            }
            for (int l = 0; l < 32; l++)
                vec_p1(w, l, s[l], m8, mv, sm);
            for (int l = 0; l < 32; l++)
                vec_p2(a, x, w, l, mv, s[l], sm);
            for (int l = 0; l < 32; l++)
                vec_p3(a, l, s[l], sm);
        }
}

// Returns the non-zero count the kernel adds to *a.nnz.
inline void emu_fwd(const FwdArgs &a, unsigned grid, int threads) {
    uint32_t sm[4][kFwdWarpWords];
    int32_t dcw[3 * 16];
    FwdLine s[128];
    for (unsigned mbi = 0; mbi < grid; mbi++) {
        unsigned long long nz = 0;
        vidk_cux::emu_poison(sm, sizeof(sm), vidk_cux::kPoisonShared);
        vidk_cux::emu_poison(dcw, sizeof(dcw), vidk_cux::kPoisonState);
        uint32_t *blk[128];
        for (int t = 0; t < threads; t++) {
            s[t] = fwd_line_setup(a, (int)mbi, t);
            const int lane = t & 31;
            blk[t] = sm[t >> 5] + (s[t].n == 8 ? (lane >> 3) * 72 : (lane >> 2) * 20);
        }
        for (int t = 0; t < threads; t++) {
            if (s[t].n == 8) fwd_p1<8>(a, s[t], blk[t]);
            if (s[t].n == 4) fwd_p1<4>(a, s[t], blk[t]);
        }
        for (int t = 0; t < threads; t++) {
            if (s[t].n == 8) fwd_p2<8>(s[t], blk[t]);
            if (s[t].n == 4) fwd_p2<4>(s[t], blk[t]);
        }
        for (int t = 0; t < threads; t++) {
            if (s[t].n == 8) nz += fwd_p3<8>(a, s[t], dcw);
            if (s[t].n == 4) nz += fwd_p3<4>(a, s[t], dcw);
        }
        for (int t = 0; t < threads; t++)
            nz += fwd_dc(a, (int)mbi, t, dcw);
        *a.nnz += nz;
    }
}

} // namespace vidk_h264cu

#endif
