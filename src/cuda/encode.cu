// The coding loop on the device (docs/ENCODE_CUDA.md). Every frame stays on the GPU: the
// source crosses PCIe once (host to device), and only what the caller asked for comes back
// (reconstruction, vectors, energy, levels) plus 120 bytes of statistics.
//
// Streams and events of one frame i (slot = i % kSlots: its source buffers,
// events, outputs and entropy coder; parity = i % 2: its reconstruction, the next frame's
// reference):
//   upload stream (vidk_enc_send): source planes -> d_src[slot] (straight from the caller's
//     memory when it is registered / pinned, else through a pinned staging buffer), then the
//     edge extension; event up_end[slot]. The CLI sends frames i + 1 and i + 2 before it
//     receives frame i, so their uploads overlap the frames in progress, off their path.
//   code stream (queued by the receive of frame i - 2, i - 1 or i: the caller sends frames
//     ahead, and each receive queues the frames sent after its own before it waits, so that
//     the GPU never waits for the host): wait for frame i - 2's statistics and downloads
//     (they read the reconstruction this frame overwrites) and up_end[slot]; the
//     motion search against the previous reconstruction (inter frames;
//     vidk_cuda_me_search_dev, results stay on the device); the unit kernels (H.264 inter:
//     the decision passes, then inter_kernel, warps per step, and the macroblocks made
//     intra; HEVC inter: one warp per CTU; intra frames: a wavefront, one block per unit row
//     (H.264: a luma and a chroma warp; HEVC: one warp), rows released by progress
//     counters); then frame i + 1's work.
//   statistics stream: after frame i's unit kernels, the statistics (SSE + unit sums into
//     15 counters) and their download, beside frame i + 1's search.
//   side stream (H.264 P frames): the intra estimate beside the search; the decision
//     passes wait for it.
//   output stream: after frame i's statistics (queued by frame i's receive) the downloads
//     the caller asked for, beside frame i + 1's coding, which uses the other parity's
//     reconstruction and another slot's levels, vectors, maps and sums.
//   entropy stream: with the H.264 stream asked for, after frame i's statistics, its entropy
//     coding (stream.cu: the slices' NAL units are written on the device and only their
//     bytes come down, on a fourth stream; the host puts the SPS / PPS of an IDR picture
//     before them). It runs beside frame i + 1's and i + 2's coding: what it reads (decision
//     words, vectors, levels) and what the host reads back (statistics, events, the coder's
//     buffers) are kept per slot.
// Events between the stages time them.
// The per-unit arithmetic is enc_core.h / enc_tmpl.h, the same source as the CPU backends.
#include "encode_cuda.cuh"
#include "me_cuda.h"

#include <stdlib.h>
#include <string.h>

#include "enc/enc.h"
#include "enc/h264_stream.h"
#include "enc/h264_stream_core.h"

// ---- the unit drivers with the core primitives, on the device ----
struct EncOps {
    int unused;
};
#define ENC_T(n) enc_cu_##n
#include "enc/enc_ops_core.h"
#include "enc/enc_tmpl.h"
#include "thread_pool.h"

using namespace vidk_encc;

#include "enc_kern.cuh"
#include "enc_kern_b.cuh"

// CUDA loads a kernel at its first launch (lazy loading, its default since 12.2), a fraction
// of a millisecond each: ~6 ms of the first frames at 1080p (H200, session 12: `vidkern
// encode` of 300 frames 2398 -> 2556 frames/s with CUDA_MODULE_LOADING=EAGER). The
// encoder loads its frames' kernels at open instead: its own, the search's (the variant its
// parameters select) and the stream coder's (vidk_cuda_stream_open). Also: the L1 / shared
// memory split of the kernels that prefer L1, and the inter kernel's build
// (EncCuda.inter_waves).
int vidk_encc::kernels_prepare(VidkContext *ctx, VidkEncoder *e, EncCuda *c) {
    int err = 0;
    EncFrame f;
    VidkMeParams mp;
    CUDA_CHECK(vidk_cuda_prefer_l1(dist_kernel));
    CUDA_CHECK(vidk_cuda_prefer_l1(decide_kernel));
    CUDA_CHECK(vidk_cuda_prefer_l1(inter_kernel<2>));
    CUDA_CHECK(vidk_cuda_prefer_l1(inter_kernel<3>));
    if (e->p.bframes) {
        CUDA_CHECK(vidk_cuda_prefer_l1(inter_kernel<2, true>));
        CUDA_CHECK(vidk_cuda_prefer_l1(inter_kernel<3, true>));
    }
    {
        // VIDK_INTER_KERNEL=2 or 3 forces that build (a test hook: ctest encode_cuda_waves)
        const char *force = getenv("VIDK_INTER_KERNEL");
        c->inter_waves =
            force && *force ? atoi(force) == 3 : (e->uw * e->uh + 31) / 32 > 2 * ctx->cuda->sms;
    }
    {
        int nb = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, dist_kernel, 128, 0));
        c->dist_grid = vidk_imax(nb, 1) * ctx->cuda->sms;
    }
    CUDA_CHECK(vidk_cuda_prefer_l1(intra_p_kernel));
    CUDA_CHECK(vidk_cuda_prefer_l1(h264_intra_kernel));
    CUDA_CHECK(vidk_cuda_load(pad_kernel, stats_kernel));
    if (e->p.codec == VIDK_CODEC_H264)
        CUDA_CHECK(vidk_cuda_load(h264_intra_kernel, intra_est_kernel, qpl_kernel, dist_kernel,
                                  decide_kernel, inter_kernel<2>, inter_kernel<3>,
                                  intra_list_kernel, intra_p_kernel));
    else
        CUDA_CHECK(vidk_cuda_load(hevc_intra_kernel, hevc_inter_kernel));
    if (e->p.bframes) { // H.264 (vidk_enc_open)
        CUDA_CHECK(vidk_cuda_load(b_dist_kernel, b_decide_kernel, b_direct_kernel,
                                  inter_kernel<2, true>, inter_kernel<3, true>, b_col_kernel));
        CUDA_CHECK(cudaFuncSetAttribute(b_direct_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)b_direct_smem(e->uw)));
    }
    vidk_enc_frame_setup(e, 0, &f);
    vidk_enc_me_params(e, &f, &mp);
    VIDK_TRY(vidk_cuda_me_preload(ctx, e->W, e->H, &mp));
cleanup:
    return err;
}

// How many of the 16x16 results have vector (0, 0), into *count (zeroed before).
__global__ void zero_mv_kernel(const VidkMeResult *r, int gw, int mbw, int mbh,
                               unsigned *count) {
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x),
              y = (int)(blockIdx.y * blockDim.y + threadIdx.y);
    const bool z =
        x < mbw && y < mbh && !r[(size_t)y * gw + x].mv.x && !r[(size_t)y * gw + x].mv.y;
    const unsigned n = __popc(__ballot_sync(0xffffffffu, z));
    if ((threadIdx.x & 31) == 0 && n) atomicAdd(count, n);
}

// The send's copy of the planes that go through the staging buffer: job j, band j % kBands
// of plane j / kBands.
struct StageCopy {
    static constexpr int kBands = 16;
    const uint8_t *from[3];
    ptrdiff_t stride[3];
    uint8_t *to[3]; // nullptr: the plane is uploaded from the caller's pinned memory
    int w[3], h[3];
};
static void stage_copy(void *arg, int job, int thread) {
    (void)thread;
    const StageCopy &j = *static_cast<const StageCopy *>(arg);
    const int p = job / StageCopy::kBands, b = job % StageCopy::kBands;
    if (!j.to[p]) return;
    for (int y = j.h[p] * b / StageCopy::kBands; y < j.h[p] * (b + 1) / StageCopy::kBands; y++)
        memcpy(j.to[p] + (size_t)y * j.w[p], j.from[p] + y * j.stride[p], (size_t)j.w[p]);
}

extern "C" int vidk_cuda_enc_send(VidkEncoder *e, const VidkPicture *src) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    const int slot = (int)(e->sent % c->nsrc);
    size_t off = 0;
    StageCopy j;
    VIDK_TRY(vidk_cuda_enter(ctx));
    // The slot's previous frame (kSlots back) was received, so its upload and coding are done.
    CUDA_CHECK(cudaEventRecord(c->up_beg[slot], c->s_up));
    c->h2d[slot] = 0;
    for (int p = 0; p < 3; p++) {
        const int w = p ? e->w / 2 : e->w, h = p ? e->h / 2 : e->h;
        const uint8_t *s = static_cast<const uint8_t *>(src->data[p]);
        const size_t span = (size_t)src->stride[p] * (size_t)(h - 1) + (size_t)w;
        j.from[p] = s, j.stride[p] = src->stride[p], j.w[p] = w, j.h[p] = h;
        // With B-frames send copies the picture (docs/ENCODE.md "Picture lifetime": the
        // caller may reuse it once send returns), so never an upload from it that is still
        // in flight then: through the staging buffer.
        j.to[p] = e->p.bframes || !vidk_cuda_host_pinned(ctx, s, span) ? c->h_stage[slot] + off
                                                                       : nullptr;
        off += (size_t)w * h;
    }
    // the copies first (on the pool's threads for a large picture), then the uploads
    if (j.to[0] || j.to[1] || j.to[2])
        vidk_pool_run(c->up_pool, 3 * StageCopy::kBands, stage_copy, &j);
    for (int p = 0; p < 3; p++) {
        CUDA_CHECK(cudaMemcpy2DAsync(
            c->d_src[slot][p], (size_t)c->pitch[p], j.to[p] ? j.to[p] : j.from[p],
            j.to[p] ? (size_t)j.w[p] : (size_t)j.stride[p], (size_t)j.w[p], (size_t)j.h[p],
            cudaMemcpyHostToDevice, c->s_up));
        c->h2d[slot] += (unsigned long long)j.w[p] * j.h[p];
    }
    if (e->w != e->W || e->h != e->H) { // the edge extension, off the frames' path
        uint8_t *const *d = c->d_src[slot];
        const int y0 = e->w == e->W ? e->h : 0; // the rows below the source, or all
        const dim3 blk(32, 8),
            grid((unsigned)((e->W + 31) / 32), (unsigned)((e->H - y0 + 7) / 8));
        pad_kernel<<<grid, blk, 0, c->s_up>>>(d[0], d[1], d[2], c->pitch[0], c->pitch[1], e->w,
                                              e->h, e->W, e->H, y0);
        CUDA_CHECK_LAUNCH();
    }
    CUDA_CHECK(cudaEventRecord(c->up_end[slot], c->s_up));
    c->la_tag[slot] = -1;
    if (c->d_la_zero && e->sent > 0) {
        // B-frames' look-ahead (vidk_cuda_enc_still): this frame against the one before it,
        // whose source is still in its slot (the frames sent ahead are fewer than nsrc), on
        // the upload stream: off the frames' path, and before either source is overwritten
        VidkMeParams mp;
        const VidkMeResult *res[VIDK_BLOCK_COUNT];
        int gw[VIDK_BLOCK_COUNT];
        vidk_enc_la_params(e, &mp);
        VIDK_TRY(vidk_cuda_me_search_dev(ctx, e->W, e->H, c->d_src[slot][0],
                                         c->d_src[(e->sent - 1) % c->nsrc][0], &mp, 2, c->s_up,
                                         res, gw));
        CUDA_CHECK(cudaMemsetAsync(c->d_la_zero + slot, 0, sizeof(unsigned), c->s_up));
        const dim3 blk(32, 8),
            grid((unsigned)((e->mb_w + 31) / 32), (unsigned)((e->mb_h + 7) / 8));
        zero_mv_kernel<<<grid, blk, 0, c->s_up>>>(res[VIDK_BLOCK_16x16], gw[VIDK_BLOCK_16x16],
                                                  e->mb_w, e->mb_h, c->d_la_zero + slot);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpyAsync(c->h_la_zero + slot, c->d_la_zero + slot, sizeof(unsigned),
                                   cudaMemcpyDeviceToHost, c->s_up));
        CUDA_CHECK(cudaEventRecord(c->la_ev[slot], c->s_up));
        c->la_tag[slot] = e->sent;
    }
cleanup:
    return err;
}

// The look-ahead's count of frame j, searched at its send.
extern "C" int vidk_cuda_enc_still(VidkEncoder *e, int64_t j, int *zero) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    const int slot = (int)(j % c->nsrc);
    if (!c->d_la_zero || c->la_tag[slot] != j) return VIDK_ERR(EINVAL);
    VIDK_TRY(vidk_cuda_enter(ctx));
    CUDA_CHECK(cudaEventSynchronize(c->la_ev[slot]));
    *zero = (int)c->h_la_zero[slot];
cleanup:
    return err;
}

// A B frame's decisions (src/enc/encode.c's steps for f.bframe): the half-sample planes of
// both references, the distances and the seed, the decision passes, the direct macroblocks'
// final form (a wavefront), then the list of the intra ones on the side stream (event EV_L),
// as in P frames. me1, gw1, ref1: list 1's field and reference (the frame with them: d_f1,
// f.l1); pics: vidk_enc_pics's.
static int launch_b(VidkEncoder *e, int64_t index, int slot, EncFrame &f,
                    const VidkMeResult *const *me1, const int *gw1, uint8_t *const *ref1,
                    const VidkEncPics &pics) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    const cudaStream_t s = c->s_code;
    const int n = e->uw * e->uh;
    cudaEvent_t *ev = c->ev[slot];
    f.skipc = c->d_skipc;
    f.part_mv = c->d_part_mv;
    f.dist = c->d_dist;
    vidk_enc_qpl_geometry(e->W, e->H, &f.qps, &f.qpn);
    f.qpl = c->d_qpl;
    f.mv4b = c->d_mv4b[slot];
    f.colmv = pics.colb ? c->d_colbmv : c->d_colmv;
    f.colmb = pics.colb ? c->d_colbmb : c->col_intra ? nullptr : c->d_colmb;
    // implicit weights: POC = 2 x the display index (docs/STREAM.md)
    enc_h264_implicit_w((int)(2 * (index - pics.i0)), (int)(2 * (pics.i1 - pics.i0)), &f.bw0,
                        &f.bw1);
    EncFrame f1 = f;
    memcpy(f1.me, me1, sizeof(f1.me));
    memcpy(f1.me_gw, gw1, sizeof(f1.me_gw));
    for (int p = 0; p < 3; p++)
        f1.ref[p] = ref1[p];
    f1.part_mv = c->d_part_mv1;
    f1.qpl = c->d_qpl1;
    *c->h_f1[slot] = f1; // the slot's last frame (kSlots back in coding order) was received
    CUDA_CHECK(cudaMemcpyAsync(c->d_f1[slot], c->h_f1[slot], sizeof(EncFrame),
                               cudaMemcpyHostToDevice, s));
    f.l1 = c->d_f1[slot];
    {
        const dim3 g((unsigned)(e->W + 5 + 127) / 128, (unsigned)(e->H + 5));
        qpl_kernel<<<g, 128, 0, s>>>(f, c->d_qpl);
        CUDA_CHECK_LAUNCH();
        qpl_kernel<<<g, 128, 0, s>>>(f1, c->d_qpl1);
        CUDA_CHECK_LAUNCH();
    }
    b_dist_kernel<<<dim3((unsigned)(((size_t)n * 16 + kBDistThreads - 1) / kBDistThreads),
                         kBDistTasks),
                    kBDistThreads, 0, s>>>(f, c->d_dmv[0], c->d_dmvb[0], c->d_dmb[0]);
    CUDA_CHECK_LAUNCH();
    for (int pass = 1; pass <= VIDK_ENC_DECIDE_PASSES; pass++) {
        const int o = pass & 1, i = o ^ 1;
        b_decide_kernel<<<(unsigned)(((size_t)n * 16 + kBDecideThreads - 1) / kBDecideThreads),
                          kBDecideThreads, 0, s>>>(f, c->d_dmv[i], c->d_dmvb[i], c->d_dmb[i],
                                                   c->d_dmv[o], c->d_dmvb[o], c->d_dmb[o]);
        CUDA_CHECK_LAUNCH();
    }
    {
        const int o = VIDK_ENC_DECIDE_PASSES & 1;
        // the words before the kernel (which of them are pending) into the other pass's
        // buffer, read only
        CUDA_CHECK(cudaMemcpyAsync(c->d_dmb[o ^ 1], c->d_dmb[o], (size_t)n * sizeof(uint16_t),
                                   cudaMemcpyDeviceToDevice, s));
        if (++c->mail_tag_b == 0) c->mail_tag_b = 1; // 0: the mailbox's words before any frame
        b_direct_kernel<<<(unsigned)e->uh, 32, b_direct_smem(e->uw), s>>>(
            f, c->d_dmv[o], c->d_dmvb[o], c->d_dmb[o], c->d_dmb[o ^ 1], c->d_mail_b,
            c->mail_tag_b);
        CUDA_CHECK_LAUNCH();
        f.dmv = c->d_dmv[o];
        f.dmvb = c->d_dmvb[o];
        f.dmb = c->d_dmb[o];
    }
    CUDA_CHECK(cudaEventRecord(ev[EV_D], s));
    CUDA_CHECK(cudaStreamWaitEvent(c->s_side, ev[EV_D], 0));
    intra_list_kernel<<<1, kListThreads, 0, c->s_side>>>(f.dmb, n, c->d_ilist, c->d_icnt);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemsetAsync(c->d_iflag, 0, (size_t)n * sizeof(int), c->s_side));
    CUDA_CHECK(cudaEventRecord(ev[EV_L], c->s_side));
cleanup:
    return err;
}

// Queue frame `index`'s work: on the code stream from its upload to its statistics and their
// download; on the entropy stream, after them, its entropy coding (coded on the device: with
// its stream's size). Everything that does not depend on the caller's output buffers, so
// that vidk_cuda_enc_receive can queue frames i + 1 and i + 2 right after frame i's
// downloads, before it waits for them: the GPU then codes them while it entropy-codes frame i
// and while the caller writes frame i and reads the next picture. The maps are computed
// whenever the parameters ask for them (or the stream needs them).
// With B-frames (`type` VIDK_ENC_FRAME_*) the next two frames in coding order, when they can
// be planned (else the frame by its own receive; `prev`: the frames before it not written
// yet); its filter on s_dbk, which the frames after it wait for where they read its picture
// (ev_ref); the anchors' reconstructions alternate by VidkEncoder.cur, list 0 of a B frame is
// the older anchor, list 1 the newer one (src/enc/encode.c, the same choice).
static int launch_frame(VidkEncoder *e, int64_t index, int64_t seq, int type,
                        const Pending *prev, Launched *L) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    const bool bm = e->p.bframes != 0;
    const int slot = (int)(seq % kSlots), sslot = (int)(index % c->nsrc);
    const int par = bm ? e->cur : (int)(index % 2);
    const int intra = type == VIDK_ENC_FRAME_I, bf = type == VIDK_ENC_FRAME_B;
    const cudaStream_t s = c->s_code;
    // the filter's stream: with B-frames its own, after the coding (the frames after this
    // one wait for it where they read this picture: ev_ref)
    const cudaStream_t sd = bm ? c->s_dbk : s;
    uint8_t *const *src = c->d_src[sslot];
    VidkEncPics pics;
    vidk_enc_pics(e, index, type, par, &pics);
    uint8_t *const *ref = c->d_rec[pics.ref0], *const *ref1 = c->d_rec[pics.ref1];
    // a B frame that is not a reference: every other one into d_rec[4] (EncCuda.d_rec)
    int ri = pics.rec;
    if (ri == 2 && c->d_rec[4][0]) {
        if (c->brec_alt) ri = 4;
        c->brec_alt = !c->brec_alt;
    }
    const bool is_ref = ri != 2 && ri != 4;
    uint8_t *const *rec = c->d_rec[ri];
    cudaEvent_t *ev = c->ev[slot];
    EncFrame &f = L->f;
    const VidkMeResult *me1[VIDK_BLOCK_COUNT]; // B: list 1's field
    int gw1[VIDK_BLOCK_COUNT];
    const unsigned outp = e->p.outputs;
    L->index = index;
    L->rec = ri;
    L->d2h = SUM_COUNT * sizeof(unsigned long long);
    L->gpu_st = e->stream && c->st[slot] && vidk_h264_stream_slices(e->stream) == c->st_slices;
    // the writer and the filter read them; with B-frames the co-located picture's too
    const bool maps = e->stream || e->p.deblock || bm;
    VIDK_TRY(vidk_cuda_enter(ctx));
    vidk_enc_frame_setup(e, intra, &f);
    for (int p = 0; p < 3; p++) {
        f.src[p] = src[p];
        f.ss[p] = c->pitch[p];
        f.ref[p] = ref[p];
        f.rs[p] = c->pitch[p];
        f.rec[p] = rec[p];
        f.cs[p] = c->pitch[p];
        f.lev[p] = (outp & VIDK_ENC_OUT_LEVELS) || maps ? c->d_lev[slot][p] : nullptr;
        f.ls_[p] = p ? e->W / 2 : e->W;
    }
    f.mv4 = (outp & VIDK_ENC_OUT_MVS) || maps ? c->d_mv[slot] : nullptr;
    f.im4 = c->d_im4[slot]; // (allocated for I_NxN only)
    f.i4x4 = f.im4 && e->p.intra4x4;
    f.i8x8 = f.im4 && e->p.intra8x8;
    f.mbi = maps || f.im4 ? c->d_mbi[slot] : nullptr;
    f.energy = (outp & VIDK_ENC_OUT_ENERGY) ? c->d_energy[slot] : nullptr;
    f.stat = c->d_stat[slot];
    f.bframe = bf;

    // Frame index - 2 (this parity's previous frame) has its statistics and its downloads
    // (its receive has queued them: this call comes from it or later) done before this one
    // overwrites its reconstruction; the events still hold its records (frame index + 1,
    // which reuses them, is queued after this one).
    // With B-frames, frame seq - 2 where it wrote the same reconstruction (the frames before
    // it were received: this call comes from its receive or later; frame seq - 1 never writes
    // the same one: the anchors' alternate, so do the B frames' that are not references), and
    // the last reference picture's filter (s_dbk, ev_ref): a B frame that is not a reference
    // is filtered, measured and downloaded while the next frames are coded.
    if (seq >= 2 && (!bm || c->last_rec[1] == ri)) {
        CUDA_CHECK(cudaStreamWaitEvent(s, c->ev[(seq - 2) % kSlots][EV_T4], 0));
        CUDA_CHECK(cudaStreamWaitEvent(s, c->ev[(seq - 2) % kSlots][EV_T5], 0));
    }
    if (bm) {
        if (c->last_rec[0] == ri) { // (cannot happen: the alternation above)
            err = VIDK_ERR(EINVAL);
            goto cleanup;
        }
        CUDA_CHECK(cudaStreamWaitEvent(s, c->ev_ref, 0));
        c->last_rec[1] = c->last_rec[0], c->last_rec[0] = ri;
    }
    CUDA_CHECK(cudaStreamWaitEvent(s, c->up_end[sslot], 0)); // the upload and edge extension
    CUDA_CHECK(cudaEventRecord(ev[EV_T1], s));
    if (!intra && !bf && e->p.codec == VIDK_CODEC_H264) {
        // The intra estimate reads only the (padded) source: on its own stream, beside
        // the search, whose last wave leaves SMs free. d_dist is free: the previous frame's
        // decision passes precede this frame's EV_T1 on the code stream.
        CUDA_CHECK(cudaStreamWaitEvent(c->s_side, ev[EV_T1], 0));
        intra_est_kernel<<<(unsigned)((e->uw * e->uh * 16 + kIntraEstThreads - 1) /
                                      kIntraEstThreads),
                           kIntraEstThreads, 0, c->s_side>>>(f, c->d_dist);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaEventRecord(ev[EV_I], c->s_side));
    }
    if (!intra) {
        VidkMeParams mp;
        vidk_enc_me_params(e, &f, &mp);
        if (bf) mp.shapes = VIDK_ENC_B_SHAPES;
        VIDK_TRY(
            vidk_cuda_me_search_dev(ctx, e->W, e->H, src[0], ref[0], &mp, 0, s, f.me, f.me_gw));
        if (bf) {
            VIDK_TRY(
                vidk_cuda_me_search_dev(ctx, e->W, e->H, src[0], ref1[0], &mp, 1, s, me1, gw1));
        }
    }
    CUDA_CHECK(cudaEventRecord(ev[EV_T2], s));
    if (intra) {
        CUDA_CHECK(cudaMemsetAsync(c->d_progress, 0, (size_t)e->uh * sizeof(int), s));
        if (e->p.codec == VIDK_CODEC_HEVC)
            hevc_intra_kernel<<<(unsigned)e->uh, vidk_encw::kHevcIThreads, 0, s>>>(
                f, c->d_progress);
        else
            h264_intra_kernel<<<(unsigned)e->uh, h264_i_threads(f), 0, s>>>(f, c->d_progress);
        CUDA_CHECK_LAUNCH();
    } else {
        // H.264: the decision kernels, then inter_kernel (32 macroblocks per block, a warp
        // per step), then the macroblocks made intra.
        const int n = e->uw * e->uh;
        if (bf) {
            VIDK_TRY(launch_b(e, index, slot, f, me1, gw1, ref1, pics));
        } else if (e->p.codec == VIDK_CODEC_H264) {
            f.skipc = c->d_skipc;
            f.part_mv = c->d_part_mv;
            vidk_enc_qpl_geometry(e->W, e->H, &f.qps, &f.qpn);
            f.qpl = c->d_qpl;
            qpl_kernel<<<dim3((unsigned)(e->W + 5 + 127) / 128, (unsigned)(e->H + 5)), 128, 0,
                         s>>>(f, c->d_qpl);
            CUDA_CHECK_LAUNCH();
            // The intra estimate (beside the search, long done) waited for before the
            // distances, so that the kernels from here to inter_kernel follow each other
            // directly: each launched as a programmatic dependent of the one before.
            CUDA_CHECK(cudaStreamWaitEvent(s, ev[EV_I], 0));
            dist_kernel<<<(unsigned)vidk_imin((int)(((size_t)n * kDistShapes * 16 + 127) / 128),
                                              c->dist_grid),
                          128, 0, s>>>(f, c->d_dist, c->d_dmv[0], c->d_dmb[0]);
            CUDA_CHECK_LAUNCH();
            f.dist = c->d_dist;
            for (int pass = 1; pass <= VIDK_ENC_DECIDE_PASSES; pass++) {
                const int o = pass & 1, i = o ^ 1;
                CUDA_CHECK(vidk_cuda_launch_pdl(
                    decide_kernel, (unsigned)((n + 31) / 32), 32 * kDecideWarps, s, f,
                    (const VidkMv *)c->d_dmv[i], (const uint16_t *)c->d_dmb[i], c->d_dmv[o],
                    c->d_dmb[o]));
            }
            f.dmv = c->d_dmv[VIDK_ENC_DECIDE_PASSES & 1];
            f.dmb = c->d_dmb[VIDK_ENC_DECIDE_PASSES & 1];
            // The list of the macroblocks made intra from the decisions alone: on the side
            // stream, beside inter_kernel (off the frame's chain of kernels).
            CUDA_CHECK(cudaEventRecord(ev[EV_D], s));
            CUDA_CHECK(cudaStreamWaitEvent(c->s_side, ev[EV_D], 0));
            intra_list_kernel<<<1, kListThreads, 0, c->s_side>>>(f.dmb, n, c->d_ilist,
                                                                 c->d_icnt);
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cudaMemsetAsync(c->d_iflag, 0, (size_t)n * sizeof(int), c->s_side));
            CUDA_CHECK(cudaEventRecord(ev[EV_L], c->s_side));
        }
        if (e->p.codec == VIDK_CODEC_HEVC)
            hevc_inter_kernel<<<(unsigned)((n + 1) / 2), 64, 0, s>>>(f);
        else if (bf)
            CUDA_CHECK(vidk_cuda_launch_pdl(c->inter_waves ? inter_kernel<3, true>
                                                           : inter_kernel<2, true>,
                                            (unsigned)((n + 31) / 32), 32 * kInterWarps, s, f));
        else
            CUDA_CHECK(vidk_cuda_launch_pdl(c->inter_waves ? inter_kernel<3> : inter_kernel<2>,
                                            (unsigned)((n + 31) / 32), 32 * kInterWarps, s, f));
        CUDA_CHECK_LAUNCH();
        if (e->p.codec == VIDK_CODEC_H264) {
            CUDA_CHECK(cudaStreamWaitEvent(s, ev[EV_L], 0)); // the list, the flags zeroed
            intra_p_kernel<<<(unsigned)vidk_imin(n, kIntraPBlocks), h264_i_threads(f), 0, s>>>(
                f, c->d_ilist, c->d_icnt, c->d_iflag);
            CUDA_CHECK_LAUNCH();
        }
    }
    if (bm) { // the filter on sd after the coding
        CUDA_CHECK(cudaEventRecord(ev[EV_C], s));
        CUDA_CHECK(cudaStreamWaitEvent(sd, ev[EV_C], 0));
    }
    if (e->p.deblock) { // H.264 (vidk_enc_open): the whole frame coded, then filtered
        deblock_bs_kernel<<<(unsigned)((e->uw * e->uh * 32 + kDbkBsThreads - 1) /
                                       kDbkBsThreads),
                            kDbkBsThreads, 0, sd>>>(f, c->d_dbs);
        CUDA_CHECK_LAUNCH();
        if (++c->mail_tag == 0) c->mail_tag = 1; // 0: the mailbox's words before any frame
        deblock_kernel<<<(unsigned)(e->uh + kDbkRows - 1) / kDbkRows, kDbkThreads, 0, sd>>>(
            f, c->d_dbs, c->d_mail, c->mail_tag);
        CUDA_CHECK_LAUNCH();
    }
    if (bm && is_ref) CUDA_CHECK(cudaEventRecord(c->ev_ref, sd));
    if (bm && !bf) { // an anchor: the co-located picture of the B frames after it
        const size_t n4 = (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv);
        CUDA_CHECK(cudaMemcpyAsync(c->d_colmv, f.mv4, n4, cudaMemcpyDeviceToDevice, s));
        CUDA_CHECK(cudaMemcpyAsync(c->d_colmb, f.mbi, (size_t)e->uw * e->uh * sizeof(uint16_t),
                                   cudaMemcpyDeviceToDevice, s));
        c->col_intra = intra;
    }
    if (pics.br & 4) { // the run's reference B frame: the co-located picture of the others
        const int n4 = (e->W / 4) * (e->H / 4);
        b_col_kernel<<<(unsigned)((n4 + 255) / 256), 256, 0, s>>>(f, c->d_colbmv);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpyAsync(c->d_colbmb, f.mbi, (size_t)e->uw * e->uh * sizeof(uint16_t),
                                   cudaMemcpyDeviceToDevice, s));
    }
    CUDA_CHECK(cudaEventRecord(ev[EV_T3], sd));
    // The statistics on their own stream: the next frame's search, which needs only the
    // reconstruction, starts before them and before this frame's entropy coding, which
    // waits for them (its blocks would otherwise fill the SMs the search waits for).
    CUDA_CHECK(cudaStreamWaitEvent(c->s_stat, ev[EV_T3], 0));
    CUDA_CHECK(
        cudaMemsetAsync(c->d_sum[slot], 0, SUM_COUNT * sizeof(unsigned long long), c->s_stat));
    {
        const int row_blocks = (2 * e->h + kStatRows - 1) / kStatRows,
                  unit_blocks = (e->uw * e->uh + kStatThreads - 1) / kStatThreads;
        stats_kernel<<<(unsigned)(row_blocks + unit_blocks), kStatThreads, 0, c->s_stat>>>(
            f, src[0], src[1], src[2], e->w, e->h, row_blocks, c->d_sum[slot]);
        CUDA_CHECK_LAUNCH();
    }
    CUDA_CHECK(cudaEventRecord(ev[EV_T4], c->s_stat));
    // Their download behind them (EV_SUM), where nothing of the other frames queues: the
    // output stream takes each frame's downloads in its receive, in order, and frame i + 2
    // waits for frame i's (EV_T5).
    CUDA_CHECK(cudaMemcpyAsync(c->h_sum[slot], c->d_sum[slot],
                               SUM_COUNT * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                               c->s_stat));
    CUDA_CHECK(cudaEventRecord(ev[EV_SUM], c->s_stat));
    if (L->gpu_st) {
        // The entropy coding (stream.cu) on its own stream, after the statistics; its size
        // goes down with it, its NAL units after the receiver's synchronisation. The frames
        // from e->done on may not have been written yet (queued ahead): the header state
        // then comes from their types. With B-frames the frames before it are written.
        const int16_t *const lev[3] = {c->d_lev[slot][0], c->d_lev[slot][1], c->d_lev[slot][2]};
        VidkH264SliceHdr hdr;
        uint32_t pending_intra = 0;
        for (int64_t k = e->done; k < index && !bm; k++)
            pending_intra |= (uint32_t)(vidk_enc_is_intra(e, k) != 0) << (k - e->done);
        const VidkH264Pic kind = pics.kind;
        if (bm)
            vidk_h264_stream_slice_hdr_after(e->stream, prev ? prev->n : 0,
                                             prev ? prev->index : nullptr,
                                             prev ? prev->kind : nullptr, index, kind, &hdr);
        else
            vidk_h264_stream_slice_hdr_ahead(e->stream, e->done, pending_intra, index, intra,
                                             &hdr);
        CUDA_CHECK(cudaStreamWaitEvent(c->s_ent[slot], ev[EV_T4], 0));
        VIDK_TRY(vidk_cuda_stream_code(ctx, c->st[slot], &hdr, c->d_mbi[slot], c->d_im4[slot],
                                       c->d_mv[slot], bf ? c->d_mv4b[slot] : nullptr, lev,
                                       c->s_ent[slot]));
        L->d2h += vidk_cuda_stream_res_bytes(c->st[slot]);
        CUDA_CHECK(cudaEventRecord(ev[EV_S], c->s_ent[slot]));
    }
cleanup:
    return err;
}

extern "C" int vidk_cuda_enc_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                                     VidkEncFrameInfo *info) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    // the next frame in coding order (without B-frames e->done, the display order)
    const int64_t index = e->code_index;
    const bool bm = e->p.bframes != 0;
    const int64_t seq = e->done; // the coding order (without B-frames the display order)
    const int type = e->code_type, slot = (int)(seq % kSlots);
    const int intra = type == VIDK_ENC_FRAME_I, bf = type == VIDK_ENC_FRAME_B;
    const int par = bm ? e->cur : (int)(index % 2), sslot = (int)(index % c->nsrc);
    VidkEncPics pics;
    vidk_enc_pics(e, index, type, par, &pics);
    cudaEvent_t *ev = c->ev[slot];
    Launched &L = c->pre[slot];
    struct Out {
        void *dst;
        size_t dpitch;
        const void *dev;
        size_t spitch, width, rows;
    } outs[12];
    int nout = 0;
    VidkMv *h_mv;      // where the downloads land: the caller's maps, else the stream's
    int16_t *h_lev[3]; // buffers
    VIDK_TRY(vidk_cuda_enter(ctx));
    if (L.index != index) { // not queued by the previous call
        L.index = -1;
        VIDK_TRY(launch_frame(e, index, seq, type, nullptr, &L));
    } else if (c->pre_err[slot]) {
        err = c->pre_err[slot];
        goto cleanup;
    }
    {
        const bool gpu_st = L.gpu_st;
        uint8_t *const *rec = c->d_rec[L.rec];
        unsigned long long d2h = L.d2h;
        L.index = -1;
        // with B-frames the vectors (and words, list 1's) go to the encoder's buffers, the
        // caller's map made from them (vidk_enc_b_mv_map)
        h_mv = maps && maps->mv && !bm ? maps->mv : e->st_mv4;
        const bool want_mv = (maps && maps->mv) || (e->stream && !gpu_st);
        for (int p = 0; p < 3; p++)
            h_lev[p] = maps && maps->levels[p] ? maps->levels[p] : e->st_lev[p];
        {
            // Downloads: straight into pinned caller memory, else through h_out. With the
            // stream coded on the device, only what the caller asked for. After the frame's
            // statistics and their download.
            CUDA_CHECK(cudaStreamWaitEvent(c->s_out, ev[EV_SUM], 0));
            size_t off = 0;
            auto add = [&](void *dst, size_t dpitch, const void *dev, size_t spitch,
                           size_t width, size_t rows) {
                outs[nout++] = {dst, dpitch, dev, spitch, width, rows};
            };
            if (recon)
                for (int p = 0; p < 3; p++)
                    add(recon->data[p], (size_t)recon->stride[p], rec[p], (size_t)c->pitch[p],
                        (size_t)(p ? e->w / 2 : e->w), (size_t)(p ? e->h / 2 : e->h));
            if (want_mv) {
                const size_t n = (size_t)(e->W / 4) * sizeof(VidkMv);
                add(h_mv, n, c->d_mv[slot], n, n, (size_t)(e->H / 4));
                if (bf) add(e->st_mv4b, n, c->d_mv4b[slot], n, n, (size_t)(e->H / 4));
            }
            if ((e->stream && !gpu_st) || (bm && want_mv)) {
                // the host's writer reads them (not the filter); the B-frames' map
                const size_t n = (size_t)e->uw * sizeof(uint16_t);
                add(e->st_mbi, n, c->d_mbi[slot], n, n, (size_t)e->uh);
            }
            if (e->stream && !gpu_st) {
                if (c->d_im4[slot])
                    add(e->st_im4, (size_t)e->W / 4, c->d_im4[slot], (size_t)e->W / 4,
                        (size_t)e->W / 4, (size_t)e->H / 4);
            }
            if (maps && maps->energy) {
                const size_t n = (size_t)e->mb_w * sizeof(uint32_t);
                add(maps->energy, n, c->d_energy[slot], n, n, (size_t)e->mb_h);
            }
            for (int p = 0; p < 3; p++)
                if ((maps && maps->levels[p]) || (e->stream && !gpu_st)) {
                    const size_t n = (size_t)(p ? e->W / 2 : e->W) * sizeof(int16_t);
                    add(h_lev[p], n, c->d_lev[slot][p], n, n, (size_t)(p ? e->H / 2 : e->H));
                }
            for (int k = 0; k < nout; k++) {
                Out &o = outs[k];
                const size_t span = o.dpitch * (o.rows - 1) + o.width;
                void *to = o.dst;
                size_t to_pitch = o.dpitch;
                if (!vidk_cuda_host_pinned(ctx, o.dst, span)) {
                    to = c->h_out + off, to_pitch = o.width;
                    off += o.width * o.rows;
                } else {
                    o.dst = nullptr; // nothing to copy afterwards
                }
                CUDA_CHECK(cudaMemcpy2DAsync(to, to_pitch, o.dev, o.spitch, o.width, o.rows,
                                             cudaMemcpyDeviceToHost, c->s_out));
                d2h += o.width * o.rows;
            }
        }
        CUDA_CHECK(cudaEventRecord(ev[EV_T5], c->s_out));
        // Queue the frames sent after this one (i + 1, i + 2; an error is its receive's), then
        // wait for frame i's downloads: the code stream has the next frames' work before the
        // host waits for this one's statistics and stream. They use other slots' buffers, and
        // frame i + 2 overwrites this parity's reconstruction only after these downloads.
        for (int64_t j = index + 1; !bm && j < index + e->q_count && j <= index + 2; j++) {
            const int sj = (int)(j % kSlots);
            if (c->pre[sj].index == j) continue;
            c->pre_err[sj] = launch_frame(
                e, j, j, vidk_enc_is_intra(e, j) ? VIDK_ENC_FRAME_I : VIDK_ENC_FRAME_P, nullptr,
                &c->pre[sj]);
            if (c->pre_err[sj]) break;
        }
        // With B-frames the next two frames in coding order when they can be planned (a B
        // frame of the run of an anchor coded, or the next anchor when the frames its
        // look-ahead needs were sent): queued before this frame's entropy coding is waited
        // for, their headers as after this frame's (and the first one's). Two: the host's
        // part of a frame (the CABAC engine, the next picture's copy) is longer than a P
        // frame's coding (session 46's CUPTI trace, H200 machine).
        if (bm && !c->no_ahead) {
            VidkEncoder nx, nx2;
            Pending pv = {1, {index, -1}, {pics.kind, pics.kind}};
            const int sj = (int)((seq + 1) % kSlots), sk = (int)((seq + 2) % kSlots);
            if (vidk_enc_peek_next(e, &nx)) {
                if (c->pre[sj].index != nx.code_index)
                    c->pre_err[sj] = launch_frame(&nx, nx.code_index, seq + 1, nx.code_type,
                                                  &pv, &c->pre[sj]);
                if (!c->pre_err[sj] && c->pre[sj].index == nx.code_index &&
                    vidk_enc_peek_next(&nx, &nx2) && c->pre[sk].index != nx2.code_index) {
                    VidkEncPics p1;
                    vidk_enc_pics(&nx, nx.code_index, nx.code_type, nx.cur, &p1);
                    pv.n = 2, pv.index[1] = nx.code_index, pv.kind[1] = p1.kind;
                    c->pre_err[sk] = launch_frame(&nx2, nx2.code_index, seq + 2, nx2.code_type,
                                                  &pv, &c->pre[sk]);
                }
            }
        }
        CUDA_CHECK(cudaEventSynchronize(ev[EV_T5]));
        {
            size_t off = 0;
            for (int k = 0; k < nout; k++) {
                const Out &o = outs[k];
                if (!o.dst) continue;
                for (size_t y = 0; y < o.rows; y++)
                    memcpy(static_cast<uint8_t *>(o.dst) + y * o.dpitch,
                           c->h_out + off + y * o.width, o.width);
                off += o.width * o.rows;
            }
        }
        {
            EncSum sum;
            uint64_t sse[3];
            for (int p = 0; p < 3; p++) {
                sum.nnz[p] = c->h_sum[slot][SUM_NNZ + p];
                sse[p] = c->h_sum[slot][SUM_SSE + p];
            }
            sum.bits_mode = c->h_sum[slot][SUM_BITS + 0];
            sum.bits_mv = c->h_sum[slot][SUM_BITS + 1];
            sum.bits_level = c->h_sum[slot][SUM_BITS + 2];
            for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
                sum.parts[k] = c->h_sum[slot][SUM_PARTS + k];
            vidk_enc_fill_info(e, index, intra, &sum, sse, info);
        }
        info->stage_ms[VIDK_ENC_STAGE_UPLOAD] =
            vidk_cux::event_elapsed(c->up_beg[sslot], c->up_end[sslot]);
        info->stage_ms[VIDK_ENC_STAGE_ME] = vidk_cux::event_elapsed(ev[EV_T1], ev[EV_T2]);
        info->stage_ms[VIDK_ENC_STAGE_CODE] = vidk_cux::event_elapsed(ev[EV_T2], ev[EV_T3]);
        info->stage_ms[VIDK_ENC_STAGE_STATS] = vidk_cux::event_elapsed(ev[EV_T3], ev[EV_T4]);
        info->stage_ms[VIDK_ENC_STAGE_DOWNLOAD] = vidk_cux::event_elapsed(ev[EV_T4], ev[EV_T5]);
        info->h2d_bytes = c->h2d[sslot];
        if (bm && maps && maps->mv)
            vidk_enc_b_mv_map(e, bf, e->st_mbi, e->st_mv4, e->st_mv4b, maps->mv);
        info->d2h_bytes = d2h;
        if (gpu_st) {
            const double t0 = vidk_enc_now_ms();
            const uint8_t *nals = nullptr;
            size_t nb = 0;
            const VidkH264Pic kind = pics.kind;
            CUDA_CHECK(cudaEventSynchronize(ev[EV_S])); // its size is here
            if (vidk_cuda_stream_host_engine(c->st[slot])) {
                // CABAC: the bins come down, each slice's engine on a host core
                const uint16_t *bins = nullptr;
                const uint32_t *boff = nullptr;
                VIDK_TRY(
                    vidk_cuda_stream_fetch_bins(ctx, c->st[slot], c->s_dl, &bins, &boff, &nb));
                if (err == 0)
                    VIDK_TRY(vidk_h264_stream_frame_bins(e->stream, ctx, e->st_pool, index,
                                                         kind, bins, boff, &info->stream,
                                                         &info->stream_size));
            } else {
                VIDK_TRY(vidk_cuda_stream_fetch(ctx, c->st[slot], c->s_dl, &nals, &nb));
                if (err == 0) // the SPS / PPS of an IDR picture before the slices on the host
                    VIDK_TRY(vidk_h264_stream_frame_nals(e->stream, index, kind, nals, nb,
                                                         &info->stream, &info->stream_size));
            }
            if (err == 0) {
                info->d2h_bytes += nb;
            } else { // a macroblock did not fit its slot: the host writer codes this frame
                unsigned long long got = 0;
                err = 0;
                vidk_log(ctx, VIDK_LOG_DEBUG, "encode: frame %lld: stream coded on the host",
                         (long long)index);
                VIDK_TRY(download_decisions(ctx, e, slot, bf, c->s_dl, &got));
                info->d2h_bytes += got;
                VIDK_TRY(vidk_enc_write_stream(e, index, intra, e->st_mv4,
                                               bf ? e->st_mv4b : nullptr, e->st_lev, info));
            }
            info->stage_ms[VIDK_ENC_STAGE_STREAM] =
                vidk_cux::event_elapsed(ev[EV_T4], ev[EV_S]) + (vidk_enc_now_ms() - t0);
        } else {
            if (e->stream)
                vidk_log(ctx, VIDK_LOG_DEBUG, "encode: frame %lld: stream coded on the host",
                         (long long)index);
            VIDK_TRY(vidk_enc_write_stream(e, index, intra, h_mv, bf ? e->st_mv4b : nullptr,
                                           h_lev, info));
        }
    }
cleanup:
    if (err < 0) sync_streams(c);
    return err;
}
