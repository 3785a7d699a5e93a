// The device coding loop's buffers, streams and events: allocated at open, released at close
// (docs/ENCODE_CUDA.md; the frames' work: encode.cu).
#include "encode_cuda.cuh"

#include <stdlib.h>
#include <string.h>

#include "enc/h264_stream.h"
#include "me_cuda.h"
#include "thread_pool.h"

using namespace vidk_encc;

namespace vidk_encc {

// The frame's decisions, vectors (bf: a B frame's list-1 ones too) and levels into the host
// writer's buffers (e->st_*), for a frame the device could not code (a macroblock larger than
// its slot); synchronous.
int download_decisions(VidkContext *ctx, VidkEncoder *e, int slot, int bf, cudaStream_t s,
                       unsigned long long *bytes) {
    int err = 0;
    const EncCuda *c = state(e);
    const size_t nmbi = (size_t)e->uw * e->uh * sizeof(uint16_t),
                 nmv = (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv);
    *bytes = 0;
    CUDA_CHECK(cudaMemcpyAsync(e->st_mbi, c->d_mbi[slot], nmbi, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(e->st_mv4, c->d_mv[slot], nmv, cudaMemcpyDeviceToHost, s));
    *bytes += nmbi + nmv;
    if (bf) {
        CUDA_CHECK(
            cudaMemcpyAsync(e->st_mv4b, c->d_mv4b[slot], nmv, cudaMemcpyDeviceToHost, s));
        *bytes += nmv;
    }
    if (c->d_im4[slot]) {
        const size_t n = (size_t)(e->W / 4) * (e->H / 4);
        CUDA_CHECK(cudaMemcpyAsync(e->st_im4, c->d_im4[slot], n, cudaMemcpyDeviceToHost, s));
        *bytes += n;
    }
    for (int p = 0; p < 3; p++) {
        const size_t n = (size_t)e->W * e->H / (p ? 4 : 1) * sizeof(int16_t);
        CUDA_CHECK(
            cudaMemcpyAsync(e->st_lev[p], c->d_lev[slot][p], n, cudaMemcpyDeviceToHost, s));
        *bytes += n;
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
cleanup:
    return err;
}

void sync_streams(const EncCuda *c) {
    const cudaStream_t all[] = {c->s_up,   c->s_code, c->s_dl, c->s_out,
                                c->s_side, c->s_stat, c->s_dbk};
    for (cudaStream_t s : all)
        if (s) (void)cudaStreamSynchronize(s);
    for (int k = 0; k < kSlots; k++)
        if (c->s_ent[k]) (void)cudaStreamSynchronize(c->s_ent[k]);
    (void)cudaGetLastError();
}

} // namespace vidk_encc

namespace {

void destroy(EncCuda *c) {
    if (!c) return;
    for (int s = 0; s < VIDK_ENC_MAX_PENDING; s++)
        for (int p = 0; p < 3; p++)
            cudaFree(c->d_src[s][p]);
    for (int k = 0; k < 5; k++)
        for (int p = 0; p < 3; p++)
            cudaFree(c->d_rec[k][p]);
    for (int k = 0; k < 2; k++)
        cudaFree(c->d_dmvb[k]);
    cudaFree(c->d_part_mv1);
    cudaFree(c->d_colmv);
    cudaFree(c->d_qpl1);
    cudaFree(c->d_colmb);
    cudaFree(c->d_colbmv);
    cudaFree(c->d_colbmb);
    for (int k = 0; k < kSlots; k++) {
        cudaFree(c->d_mv4b[k]);
        cudaFree(c->d_f1[k]);
        cudaFreeHost(c->h_f1[k]);
    }
    for (int k = 0; k < 2; k++) {
        cudaFree(c->d_dmv[k]);
        cudaFree(c->d_dmb[k]);
    }
    for (int k = 0; k < kSlots; k++) {
        cudaFree(c->d_stat[k]);
        for (int p = 0; p < 3; p++)
            cudaFree(c->d_lev[k][p]);
        cudaFree(c->d_mv[k]);
        cudaFree(c->d_mbi[k]);
        cudaFree(c->d_im4[k]);
        cudaFreeHost(c->h_sum[k]);
        cudaFree(c->d_energy[k]);
        cudaFree(c->d_sum[k]);
        vidk_cuda_stream_close(&c->st[k]);
        for (int j = 0; j < EV_COUNT; j++)
            vidk_cux::event_destroy(&c->ev[k][j]);
    }
    cudaFree(c->d_dist);
    cudaFree(c->d_skipc);
    cudaFree(c->d_part_mv);
    cudaFree(c->d_qpl);
    cudaFree(c->d_ilist);
    cudaFree(c->d_iflag);
    cudaFree(c->d_icnt);
    cudaFree(c->d_progress);
    cudaFree(c->d_dbs);
    cudaFree(c->d_mail);
    cudaFree(c->d_mail_b);
    vidk_cux::event_destroy(&c->ev_ref);
    cudaFreeHost(c->h_out);
    vidk_pool_destroy(&c->up_pool);
    cudaFree(c->d_la_zero);
    cudaFreeHost(c->h_la_zero);
    for (int s = 0; s < VIDK_ENC_MAX_PENDING; s++) {
        vidk_cux::event_destroy(&c->la_ev[s]);
        cudaFreeHost(c->h_stage[s]);
        vidk_cux::event_destroy(&c->up_beg[s]);
        vidk_cux::event_destroy(&c->up_end[s]);
    }
    vidk_cux::stream_destroy(&c->s_up);
    vidk_cux::stream_destroy(&c->s_code);
    for (int k = 0; k < kSlots; k++)
        vidk_cux::stream_destroy(&c->s_ent[k]);
    vidk_cux::stream_destroy(&c->s_dl);
    vidk_cux::stream_destroy(&c->s_out);
    vidk_cux::stream_destroy(&c->s_side);
    vidk_cux::stream_destroy(&c->s_stat);
    vidk_cux::stream_destroy(&c->s_dbk);
    (void)cudaGetLastError();
    free(c);
}

} // namespace

extern "C" int vidk_cuda_enc_open(VidkEncoder *e) {
    VidkContext *ctx = e->ctx;
    int err = 0;
    EncCuda *c = static_cast<EncCuda *>(calloc(1, sizeof(EncCuda)));
    if (!c) return VIDK_ERR(ENOMEM);
    e->cuda = c;
    const bool bm = e->p.bframes != 0; // B-frames (H.264: vidk_enc_open)
    // a mailbox (deblock_kernel's; b_direct_kernel's)
    const size_t mail_bytes = (size_t)e->uw * e->uh * kDbkMail * sizeof(unsigned long long);
    c->nsrc = bm ? VIDK_ENC_MAX_PENDING : kSlots;
    for (int k = 0; k < kSlots; k++)
        c->pre[k].index = -1;
    {
        const char *ahead = getenv("VIDK_ENC_AHEAD");
        c->no_ahead = ahead && !strcmp(ahead, "0");
    }
    VIDK_TRY(vidk_cuda_enter(ctx));
    c->pitch[0] = vidk_cuda_me_pitch(e->W);
    c->pitch[1] = c->pitch[2] = (e->W / 2 + 63) / 64 * 64;
    for (int p = 0; p < 3; p++) {
        c->plane_bytes[p] = (size_t)c->pitch[p] * (size_t)(p ? e->H / 2 : e->H);
        for (int s = 0; s < c->nsrc; s++)
            CUDA_CHECK(cudaMalloc(&c->d_src[s][p], c->plane_bytes[p]));
        for (int k = 0; k < (!bm ? 2 : e->p.b_pyramid ? 4 : 3); k++)
            CUDA_CHECK(cudaMalloc(&c->d_rec[k][p], c->plane_bytes[p]));
        if (bm) CUDA_CHECK(cudaMalloc(&c->d_rec[4][p], c->plane_bytes[p]));
    }
    for (int k = 0; k < kSlots; k++)
        CUDA_CHECK(cudaMalloc(&c->d_stat[k], (size_t)e->uw * e->uh * sizeof(EncUnitStat)));
    if (e->p.codec == VIDK_CODEC_H264) {
        CUDA_CHECK(
            cudaMalloc(&c->d_dist, (size_t)e->uw * e->uh * ENC_H264_DIST_N * sizeof(uint32_t)));
        CUDA_CHECK(cudaMalloc(&c->d_skipc, (size_t)e->uw * e->uh * 2 * sizeof(uint32_t)));
        CUDA_CHECK(
            cudaMalloc(&c->d_part_mv, (size_t)e->uw * e->uh * VIDK_ME_NPART * sizeof(VidkMv)));
        int qps;
        ptrdiff_t qpn;
        vidk_enc_qpl_geometry(e->W, e->H, &qps, &qpn);
        CUDA_CHECK(cudaMalloc(&c->d_qpl, (size_t)qpn * 4));
        CUDA_CHECK(cudaMalloc(&c->d_ilist, (size_t)e->uw * e->uh * sizeof(int)));
        CUDA_CHECK(cudaMalloc(&c->d_iflag, (size_t)e->uw * e->uh * sizeof(int)));
        CUDA_CHECK(cudaMalloc(&c->d_icnt, 2 * sizeof(int)));
        for (int k = 0; k < 2; k++) {
            CUDA_CHECK(
                cudaMalloc(&c->d_dmv[k], (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv)));
            CUDA_CHECK(cudaMalloc(&c->d_dmb[k], (size_t)e->uw * e->uh * sizeof(uint16_t)));
        }
        if (bm) {
            const size_t n4 = (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv);
            for (int k = 0; k < 2; k++)
                CUDA_CHECK(cudaMalloc(&c->d_dmvb[k], n4));
            CUDA_CHECK(cudaMalloc(&c->d_part_mv1,
                                  (size_t)e->uw * e->uh * VIDK_ME_NPART * sizeof(VidkMv)));
            for (int k = 0; k < kSlots; k++) {
                CUDA_CHECK(cudaMalloc(&c->d_mv4b[k], n4));
                CUDA_CHECK(cudaMalloc(&c->d_f1[k], sizeof(EncFrame)));
                CUDA_CHECK(cudaMallocHost(&c->h_f1[k], sizeof(EncFrame)));
            }
            CUDA_CHECK(cudaMalloc(&c->d_colmv, n4));
            CUDA_CHECK(cudaMalloc(&c->d_qpl1, (size_t)qpn * 4));
            CUDA_CHECK(cudaMalloc(&c->d_colmb, (size_t)e->uw * e->uh * sizeof(uint16_t)));
            if (e->p.b_pyramid) {
                CUDA_CHECK(cudaMalloc(&c->d_colbmv, n4));
                CUDA_CHECK(cudaMalloc(&c->d_colbmb, (size_t)e->uw * e->uh * sizeof(uint16_t)));
            }
            if (e->p.b_adapt) {
                CUDA_CHECK(cudaMalloc(&c->d_la_zero, (size_t)c->nsrc * sizeof(unsigned)));
                CUDA_CHECK(cudaMallocHost(&c->h_la_zero, (size_t)c->nsrc * sizeof(unsigned)));
            }
        }
    }
    CUDA_CHECK(cudaMalloc(&c->d_progress, (size_t)e->uh * sizeof(int)));
    if (e->p.deblock) CUDA_CHECK(cudaMalloc(&c->d_dbs, (size_t)e->uw * e->uh * 32));
    if (e->p.deblock) CUDA_CHECK(cudaMalloc(&c->d_mail, mail_bytes));
    if (bm) CUDA_CHECK(cudaMalloc(&c->d_mail_b, mail_bytes));
    for (int k = 0; k < kSlots; k++) {
        CUDA_CHECK(cudaMalloc(&c->d_sum[k], SUM_COUNT * sizeof(unsigned long long)));
        CUDA_CHECK(cudaMallocHost(&c->h_sum[k], SUM_COUNT * sizeof(unsigned long long)));
    }
    {
        const size_t src_bytes = (size_t)e->w * e->h * 3 / 2;
        for (int s = 0; s < c->nsrc; s++)
            CUDA_CHECK(cudaMallocHost(&c->h_stage[s], src_bytes));
        // a 1080p picture copied by one core took ~0.8 ms of the host's loop (H200
        // machine, session 46): the send's copy on up to 8
        if (src_bytes >= kStageSplit) {
            err = vidk_pool_create(&c->up_pool, vidk_imin(vidk_cpu_count(), 8));
            if (err < 0) goto cleanup;
        }
        size_t out = 0;
        if (e->p.outputs & VIDK_ENC_OUT_RECON) out += src_bytes;
        // The stream is coded on the device from the decisions, vectors and levels, or on the
        // host (VIDK_STREAM_HOST=1), which then downloads them (st_host).
        const bool st = (e->p.outputs & VIDK_ENC_OUT_STREAM) != 0;
        const bool dbk = e->p.deblock != 0; // the filter reads the words, vectors, levels
        const char *env_host = getenv("VIDK_STREAM_HOST");
        const bool st_host = st && env_host && !strcmp(env_host, "1");
        // I_NxN: the predicted modes read the neighbours' words and modes
        const bool nxn = e->p.codec == VIDK_CODEC_H264 && (e->p.intra4x4 || e->p.intra8x8);
        if (st || dbk || nxn || bm) // B-frames: the co-located words, the stream's
            for (int k = 0; k < kSlots; k++)
                CUDA_CHECK(cudaMalloc(&c->d_mbi[k], (size_t)e->uw * e->uh * sizeof(uint16_t)));
        if (nxn)
            for (int k = 0; k < kSlots; k++)
                CUDA_CHECK(cudaMalloc(&c->d_im4[k], (size_t)(e->W / 4) * (e->H / 4)));
        if (st) { // the host codes the frames the device cannot: on all its cores
            err = vidk_pool_create(&e->st_pool, vidk_imin(vidk_cpu_count(), 64));
            if (err < 0) goto cleanup;
            if (st_host || bm) out += (size_t)e->uw * e->uh * sizeof(uint16_t);
        }
        if (st && !st_host) {
            // Slot size: CAVLC: VIDK_H264S_SLOT_BYTES holds any macroblock; CABAC: the
            // bins of VIDK_CABAC_SLOT_BINS; VIDK_STREAM_SLOT_BYTES (a test hook) makes it
            // smaller, to exercise the host fallback.
            const char *env_slot = getenv("VIDK_STREAM_SLOT_BYTES");
            c->st_slot = e->p.cabac ? 2 * VIDK_CABAC_SLOT_BINS : VIDK_H264S_SLOT_BYTES;
            if (env_slot && atol(env_slot) > 0)
                c->st_slot = ((size_t)atol(env_slot) + 3) / 4 * 4;
            c->st_slices = vidk_imax(1, vidk_imin(e->p.slices ? e->p.slices : 1, e->uh));
        }
        if ((e->p.outputs & VIDK_ENC_OUT_MVS) || st || dbk || bm) {
            for (int k = 0; k < kSlots; k++)
                CUDA_CHECK(
                    cudaMalloc(&c->d_mv[k], (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv)));
            // B-frames: the stream's are written on the host, the map made there from the
            // words and both lists' vectors
            if ((e->p.outputs & VIDK_ENC_OUT_MVS) || st_host || (st && bm))
                out += (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv);
            if (bm && ((e->p.outputs & VIDK_ENC_OUT_MVS) || st)) {
                out += (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv);  // list 1's
                if (!st) out += (size_t)e->uw * e->uh * sizeof(uint16_t); // the words
            }
        }
        if (e->p.outputs & VIDK_ENC_OUT_ENERGY) {
            for (int k = 0; k < kSlots; k++)
                CUDA_CHECK(
                    cudaMalloc(&c->d_energy[k], (size_t)e->mb_w * e->mb_h * sizeof(uint32_t)));
            out += (size_t)e->mb_w * e->mb_h * sizeof(uint32_t);
        }
        if ((e->p.outputs & VIDK_ENC_OUT_LEVELS) || st || dbk) {
            for (int p = 0; p < 3; p++) {
                const size_t n = (size_t)e->W * e->H / (p ? 4 : 1) * sizeof(int16_t);
                for (int k = 0; k < kSlots; k++)
                    CUDA_CHECK(cudaMalloc(&c->d_lev[k][p], n));
                if ((e->p.outputs & VIDK_ENC_OUT_LEVELS) || st_host || (st && bm)) out += n;
            }
        }
        if (nxn && (st_host || (st && bm))) out += (size_t)(e->W / 4) * (e->H / 4);
        c->out_bytes = out;
        if (out) CUDA_CHECK(cudaMallocHost(&c->h_out, out));
    }
    // Streams and events of the encoder (exec.cu); they live until close.
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_up));
    // The frames' chain (search, decision, coding, the intra estimate the decision waits
    // for, the statistics the entropy coding waits for) at the device's highest priority:
    // the entropy coding and the uploads fill the SMs it leaves, not the other way round.
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_code, true));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_side, true));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_stat, true));
    if (bm) {
        VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_dbk, true));
        VIDK_TRY(vidk_cux::event_create(ctx, &c->ev_ref, false));
    }
    c->last_rec[0] = c->last_rec[1] = -1;
    for (int k = 0; k < kSlots; k++)
        VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_ent[k]));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_dl));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_out));
    for (int s = 0; s < c->nsrc; s++) {
        VIDK_TRY(vidk_cux::event_create(ctx, &c->up_beg[s], true));
        VIDK_TRY(vidk_cux::event_create(ctx, &c->up_end[s], true));
        c->la_tag[s] = -1;
        if (c->d_la_zero) VIDK_TRY(vidk_cux::event_create(ctx, &c->la_ev[s], false));
    }
    for (int k = 0; k < kSlots; k++) {
        for (int j = 0; j < EV_COUNT; j++)
            VIDK_TRY(vidk_cux::event_create(ctx, &c->ev[k][j], j < EV_I));
        if (c->st_slot)
            VIDK_TRY(vidk_cuda_stream_open(ctx, &c->st[k], e->uw, e->uh, c->st_slices,
                                           c->st_slot, e->p.cabac, e->p.qp, c->s_code));
    }
    VIDK_TRY(kernels_prepare(ctx, e, c));
    // The first reference is never read before it is written; zero it anyway.
    for (int p = 0; p < 3; p++)
        for (int s = 0; s < (bm ? 3 : 2); s++)
            CUDA_CHECK(cudaMemsetAsync(c->d_rec[s][p], 0, c->plane_bytes[p], c->s_code));
    for (unsigned long long *m : {c->d_mail, c->d_mail_b}) // the tags of no frame
        if (m) CUDA_CHECK(cudaMemsetAsync(m, 0, mail_bytes, c->s_code));
    CUDA_CHECK(cudaStreamSynchronize(c->s_code));
    return 0;
cleanup:
    destroy(c);
    e->cuda = nullptr;
    return err;
}

extern "C" void vidk_cuda_enc_close(VidkEncoder *e) {
    EncCuda *c = state(e);
    if (!c) return;
    if (vidk_cuda_enter(e->ctx) == 0) sync_streams(c);
    destroy(c);
    e->cuda = nullptr;
}
