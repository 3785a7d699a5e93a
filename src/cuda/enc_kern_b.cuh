// H.264 B frames on the device (docs/ENCODE.md §16, docs/ENCODE_CUDA.md "B frames"): the
// steps of the CPU driver (src/enc/encode.c), each a kernel over enc_core.h's functions, the
// same source as the CPU backends. f.l1 points to a device copy of the frame with list 1's
// reference (EncCuda.d_f1).
#ifndef VIDK_CUDA_ENC_KERN_B_CUH
#define VIDK_CUDA_ENC_KERN_B_CUH

namespace {

constexpr int kBThreads = 64;

// The distances of both lists, bi-prediction and the intra estimate (enc_h264_b_dist), then
// decision pass 0 (enc_h264_b_seed reads only the macroblock's own distances and vectors): a
// thread per macroblock.
__global__ void __launch_bounds__(kBThreads)
    b_dist_kernel(const EncFrame f, VidkMv *mvo0, VidkMv *mvo1, uint16_t *mbo) {
    const int u = (int)(blockIdx.x * kBThreads + threadIdx.x);
    if (u >= f.uw * f.uh) return;
    enc_h264_b_dist(&f, u % f.uw, u / f.uw);
    enc_h264_b_seed(&f, u % f.uw, u / f.uw, mvo0, mvo1, mbo);
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
// warp per macroblock row, lane 0 working, macroblock x once the row above has done x + 2
// (the left, upper-left, upper and upper-right neighbours are final), progress counters as
// in the intra wavefront (every row's block resident at once; the acquire orders the reads
// of the row above's writes after its release).
__global__ void __launch_bounds__(32)
    b_direct_kernel(const EncFrame f, VidkMv *mv0, VidkMv *mv1, uint16_t *mbi, int *progress) {
    const int r = blockIdx.x, t = threadIdx.x;
    for (int x = 0; x < f.uw; x++) {
        wave_wait(progress, r, min(x + 2, f.uw), t);
        if (t == 0) enc_h264_b_direct_final(&f, x, r, mv0, mv1, mbi);
        wave_release(progress, r, x, t);
    }
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
