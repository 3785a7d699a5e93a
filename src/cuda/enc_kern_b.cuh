// H.264 B frames on the device (docs/ENCODE.md §16, docs/ENCODE_CUDA.md "B frames"): the
// steps of the CPU driver (src/enc/encode.c), each a kernel over enc_core.h's functions, the
// same source as the CPU backends. f.l1 points to a device copy of the frame with list 1's
// reference (EncCuda.d_f1).
#ifndef VIDK_CUDA_ENC_KERN_B_CUH
#define VIDK_CUDA_ENC_KERN_B_CUH

namespace {

constexpr int kBThreads = 64, kBDistThreads = 128;

// enc_h264_b_dist on a half warp per macroblock, a lane per 4x4 block: both lists' 16x16
// vectors refined (lane_refine, as dist_kernel's 16x16 partition), the bi-prediction's SATD
// (enc_h264_b_satd4 summed), the intra estimate (modes on lanes 0-3, their lowest); then lane
// 0 writes them and decision pass 0 (enc_h264_b_seed reads only the macroblock's own).
__global__ void __launch_bounds__(kBDistThreads)
    b_dist_kernel(const EncFrame f, VidkMv *mvo0, VidkMv *mvo1, uint16_t *mbo) {
    const int t = (int)(blockIdx.x * kBDistThreads + threadIdx.x), u = t >> 4, k = t & 15;
    if (u >= f.uw * f.uh) return; // the whole half warp
    const unsigned half = 0xffffu << (threadIdx.x & 16);
    const int mbx = u % f.uw, mby = u / f.uw, bx = 16 * mbx + 4 * (k & 3),
              by = 16 * mby + 4 * (k >> 2);
    const EncFrame &g = *f.l1;
    uint32_t s0, s1;
    const VidkMv c0 =
        lane_refine(f, bx, by, enc_me_at(&f, VIDK_BLOCK_16x16, mbx, mby).mv, half, 15, &s0);
    const VidkMv c1 =
        lane_refine(g, bx, by, enc_me_at(&g, VIDK_BLOCK_16x16, mbx, mby).mv, half, 15, &s1);
    const VidkMv a[4] = {c0, c0, c0, c0}, b[4] = {c1, c1, c1, c1};
    uint32_t sb = enc_h264_b_satd4(&f, mbx, mby, k, a, b, 3);
    uint32_t iv = k < 4 ? enc_h264_intra_est(&f, mbx, mby, k) : 0xffffffffu;
#pragma unroll
    for (int o = 1; o < 16; o <<= 1) {
        sb += __shfl_xor_sync(half, sb, o);
        iv = min(iv, __shfl_xor_sync(half, iv, o));
    }
    if (k) return;
    uint32_t *d = const_cast<uint32_t *>(f.dist) + ENC_H264_DIST_N * (ptrdiff_t)u;
    d[ENC_H264_BDIST_L0] = s0, d[ENC_H264_BDIST_L1] = s1, d[ENC_H264_BDIST_BI] = sb;
    d[ENC_H264_DIST_INTRA] = iv;
    *enc_h264_pmv(&f, u, VIDK_ME_PART_16x16) = c0;
    *enc_h264_pmv(&g, u, VIDK_ME_PART_16x16) = c1;
    enc_h264_b_seed(&f, mbx, mby, mvo0, mvo1, mbo);
}

// Decision pass >= 1 against the previous pass's planes: a thread per macroblock.
__global__ void __launch_bounds__(kBThreads)
    b_decide_kernel(const EncFrame f, const VidkMv *mvi0, const VidkMv *mvi1,
                    const uint16_t *mbi, VidkMv *mvo0, VidkMv *mvo1, uint16_t *mbo) {
    const int u = (int)(blockIdx.x * kBThreads + threadIdx.x);
    if (u >= f.uw * f.uh) return;
    enc_h264_b_decide_pass(&f, u % f.uw, u / f.uw, mvi0, mvi1, mbi, mvo0, mvo1, mbo);
}

// The direct macroblocks' final form (enc_h264_b_direct_final) in raster order's result: a
// warp per macroblock row, every row's block resident at once. Only direct macroblocks change,
// so only they are visited, and one waits for the row above only where a direct macroblock
// there (upper-left, upper, upper-right) may still change: until that row's progress counter
// passes x + 1 (its lane 0's release after each visited macroblock, before each wait and at the
// row's end; lane 0's acquire orders the reads of the row above's writes after its release,
// the warp barrier the other lanes' after it). A word read without the direct bit is final:
// the bit is only ever cleared (enc_h264_b_direct_apply's explicit outcome, which keeps the
// vectors). A direct macroblock's two neighbourhoods (enc_h264_b_nb) are loaded an entry a
// lane (lanes 0-25, both lists: the loads in flight together) into shared memory, then every
// lane derives the vectors (enc_h264_b_direct_from, the same result on each); where the
// explicit and the direct predictions are to be weighed, lanes 0-15 compute the explicit
// one's 4x4 SATDs, lanes 16-31 the direct one's, each half summing them; lane 0 writes the
// outcome.
__device__ inline bool b_direct_pending(unsigned w) {
    return !(w & ENC_MBI_INTRA) && (w & ENC_MBI_DIRECT);
}
__global__ void __launch_bounds__(32)
    b_direct_kernel(const EncFrame f, VidkMv *mv0, VidkMv *mv1, uint16_t *mbi, int *progress) {
    __shared__ VidkH264MvNb s_n[2];
    const int r = blockIdx.x, t = threadIdx.x, row0 = enc_h264_row0(&f, r);
    const volatile uint16_t *up = mbi + (ptrdiff_t)(r - 1) * f.uw;
    for (int x = 0; x < f.uw; x++) {
        const unsigned w = mbi[r * f.uw + x]; // this row's words: only this warp writes them
        if (!b_direct_pending(w)) continue;
        bool wait = false;
        for (int dx = -1; r > 0 && dx <= 1; dx++)
            wait |= x + dx >= 0 && x + dx < f.uw && b_direct_pending(up[x + dx]);
        if (wait) { // the same on every lane (a stale word only waits needlessly)
            wave_release(progress, r, x - 1, t);
            wave_wait(progress, r, min(x + 2, f.uw), t);
        }
        __syncwarp();
        EncDirect d;
        if (t < VIDK_H264_MVNB_ENTRIES) {
            vidk_h264_mvnb_entry(&s_n[0], t, mv0, f.W / 4, mbi, ENC_MBI_INTRA | ENC_MBI_NOL0,
                                 f.uw, f.uh, row0, x, r);
            vidk_h264_mvnb_entry(&s_n[1], t, mv1, f.W / 4, mbi, ENC_MBI_INTRA | ENC_MBI_NOL1,
                                 f.uw, f.uh, row0, x, r);
        }
        __syncwarp();
        const int kind = enc_h264_b_direct_from(&f, x, r, w, &s_n[0], &s_n[1], &d);
        uint32_t se = 0, sd = 0;
        if (kind == 2) { // the same on every lane
            uint32_t s = t < 16 ? enc_h264_b_satd4(&f, x, r, t & 15, d.c0, d.c1, d.was)
                                : enc_h264_b_satd4(&f, x, r, t & 15, d.a, d.b, d.use);
#pragma unroll
            for (int o = 1; o < 16; o <<= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            se = __shfl_sync(0xffffffffu, s, 0), sd = __shfl_sync(0xffffffffu, s, 16);
        }
        __syncwarp(); // every lane has read the planes and the words before lane 0 writes
        if (t == 0 && kind) enc_h264_b_direct_apply(&f, x, r, &d, kind, se, sd, mv0, mv1, mbi);
        wave_release(progress, r, x, t);
    }
    wave_release(progress, r, f.uw - 1, t);
}

// b_pyramid: the reference B frame's vectors as the co-located picture of the others
// (enc_h264_b_mv_of), a thread per 4x4 block.
__global__ void __launch_bounds__(256) b_col_kernel(const EncFrame f, VidkMv *colmv) {
    const int k = (int)(blockIdx.x * 256 + threadIdx.x), w4 = f.W / 4;
    if (k < w4 * (f.H / 4)) colmv[k] = enc_h264_b_mv_of(f.mbi, f.uw, w4, f.mv4, f.mv4b, k);
}

// The inter macroblocks (enc_tmpl.h h264_b_mb; the intra ones are intra_p_kernel's): a thread
// per macroblock.
__global__ void __launch_bounds__(kBThreads) b_mb_kernel(const EncFrame f) {
    const int u = (int)(blockIdx.x * kBThreads + threadIdx.x);
    if (u >= f.uw * f.uh) return;
    const EncOps ops = {0};
    enc_cu_h264_b_mb(&ops, &f, u % f.uw, u / f.uw);
}

} // namespace

#endif
