/* Backend-independent helpers of the coding loop, the layer under both drivers (the CPU
 * one in src/enc/encode.c, the CUDA one in src/cuda/encode.cu): frame set-up, motion-search
 * parameters, statistics. Calls nothing of either driver. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>
#include <time.h>

#include <stdlib.h>

#include "enc.h"
#include "h264_stream.h"
#include "thread_pool.h"

void vidk_enc_b_mv_map(const VidkEncoder *e, int bframe, const uint16_t *mbi, const VidkMv *mv4,
                       const VidkMv *mv4b, VidkMv *out) {
    const int n4 = e->W / 4;
    for (int k = 0; k < n4 * (e->H / 4); k++)
        out[k] = bframe ? enc_h264_b_mv_of(mbi, e->uw, n4, mv4, mv4b, k) : mv4[k];
}

int vidk_enc_b_refs(const VidkEncoder *e, int64_t index, int64_t *i0, int64_t *i1) {
    const int after = e->bref >= 0 && index != e->bref;
    const int l0b = after && index > e->bref, l1b = after && index < e->bref;
    *i0 = l0b ? e->bref : e->anc[0];
    *i1 = l1b ? e->bref : e->anc[1];
    return l0b | l1b << 1 | (index == e->bref) << 2;
}

void vidk_enc_pics(const VidkEncoder *e, int64_t index, int type, int cur, VidkEncPics *p) {
    const int bf = type == VIDK_ENC_FRAME_B;
    p->i0 = p->i1 = 0;
    p->br = bf ? vidk_enc_b_refs(e, index, &p->i0, &p->i1) : 0;
    p->ref0 = p->br & 1 ? 3 : bf ? cur : cur ^ 1;
    p->ref1 = p->br & 2 ? 3 : cur ^ 1;
    p->rec = p->br & 4 ? 3 : bf ? 2 : cur;
    p->colb = (p->br & 2) != 0;
    p->kind = (VidkH264Pic)(type + (p->br >> 2));
}
_Static_assert(VIDK_ENC_FRAME_I == (int)VIDK_H264_PIC_I &&
                   VIDK_ENC_FRAME_P == (int)VIDK_H264_PIC_P &&
                   VIDK_ENC_FRAME_B == (int)VIDK_H264_PIC_B &&
                   VIDK_H264_PIC_B + 1 == (int)VIDK_H264_PIC_BREF,
               "VidkH264Pic follows the frame types");

int vidk_enc_lambda(int qp) {
    return enc_lambda_tab[vidk_iclip(qp, 0, VIDK_ENC_MAX_QP)];
}

double vidk_enc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int vidk_enc_is_intra(const VidkEncoder *e, int64_t index) {
    return index == 0 || (e->p.keyint > 0 && index % e->p.keyint == 0);
}

/* HEVC QpC for 4:2:0 (Table 8-10), no offsets. */
static int hevc_chroma_qp(int qp) {
    static const uint8_t tab[14] = {29, 30, 31, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37};
    return qp < 30 ? qp : qp > 43 ? qp - 6 : tab[qp - 30];
}

void vidk_enc_frame_setup(const VidkEncoder *e, int intra, EncFrame *f) {
    memset(f, 0, sizeof(*f));
    f->codec = e->p.codec;
    f->intra = intra;
    f->qp = e->p.qp;
    f->lambda = vidk_enc_lambda(e->p.qp);
    f->W = e->W, f->H = e->H;
    f->uw = e->uw, f->uh = e->uh;
    f->mb_w = e->mb_w;
    f->slices = vidk_imax(1, vidk_imin(e->p.slices, e->uh));
    f->no_sub8x8 = e->no_sub8x8;
    if (e->p.codec == VIDK_CODEC_H264) {
        static const uint8_t flat[64] = {16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
                                         16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16};
        int32_t mf4[6][16], mf8[6][64];
        int16_t ls4[6][16], ls8[6][64];
        f->qpc = vidk_h264_chroma_qp(f->qp, 0, 8);
        vidk_h264_quant_mf4(mf4, flat);
        vidk_h264_quant_mf8(mf8, flat);
        vidk_h264_level_scale4(ls4, flat);
        vidk_h264_level_scale8(ls8, flat);
        memcpy(f->mf4y, mf4[f->qp % 6], sizeof(f->mf4y));
        memcpy(f->mf8y, mf8[f->qp % 6], sizeof(f->mf8y));
        memcpy(f->mf4c, mf4[f->qpc % 6], sizeof(f->mf4c));
        memcpy(f->ls4y, ls4[f->qp % 6], sizeof(f->ls4y));
        memcpy(f->ls8y, ls8[f->qp % 6], sizeof(f->ls8y));
        memcpy(f->ls4c, ls4[f->qpc % 6], sizeof(f->ls4c));
    } else {
        f->qpc = hevc_chroma_qp(f->qp);
        for (int c = 0; c < 2; c++) {
            const int q = c ? f->qpc : f->qp;
            f->hq_scale[c] = vidk_hevc_qscale[q % 6];
            f->hd_scale[c] = 16 * vidk_hevc_level_scale[q % 6];
            for (int l = 2; l <= 5; l++) {
                f->hq_qbits[c][l - 2] = vidk_hevc_qbits(q, 8, l);
                f->hq_off[c][l - 2] = vidk_hevc_qoffset(f->hq_qbits[c][l - 2], intra);
                f->hd_shift[c][l - 2] = vidk_hevc_dqshift(q, 8, l);
            }
        }
    }
}

int vidk_enc_dpb(const VidkEncParams *p) {
    return !p->bframes ? 1 : p->bframes >= 2 && p->b_pyramid ? 4 : 2;
}

void vidk_enc_me_params(const VidkEncoder *e, const EncFrame *f, VidkMeParams *mp) {
    vidk_me_default_params(mp);
    mp->range = e->p.range;
    mp->shapes = e->shapes;
    mp->lambda = (unsigned)f->lambda;
}

void vidk_enc_fill_info(const VidkEncoder *e, int64_t index, int intra, const EncSum *sum,
                        const uint64_t sse[3], VidkEncFrameInfo *info) {
    memset(info, 0, sizeof(*info));
    info->index = index;
    info->intra = intra;
    info->bframe = e->code_type == VIDK_ENC_FRAME_B;
    info->qp = e->p.qp;
    for (int p = 0; p < 3; p++) {
        const double n = p ? (double)(e->w / 2) * (double)(e->h / 2) : (double)e->w * e->h;
        info->sse[p] = sse[p];
        info->psnr[p] = sse[p] ? 10.0 * log10(255.0 * 255.0 * n / (double)sse[p]) : 100.0;
        info->nnz[p] = sum->nnz[p];
    }
    info->bits_mode = sum->bits_mode;
    info->bits_mv = sum->bits_mv;
    info->bits_level = sum->bits_level;
    info->bits = info->bits_mode + info->bits_mv + info->bits_level;
    for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
        info->parts[k] = (uint32_t)sum->parts[k];
}

int vidk_enc_picture_ok(const VidkEncoder *e, const VidkPicture *pic) {
    return pic && pic->w == e->w && pic->h == e->h && pic->chroma == VIDK_CHROMA_420 &&
           pic->bitdepth == 8 && pic->data[0] && pic->data[1] && pic->data[2] &&
           pic->stride[0] >= e->w && pic->stride[1] >= e->w / 2 && pic->stride[2] >= e->w / 2;
}

/* ---- the stream output ---- */

int vidk_enc_stream_open(VidkEncoder *e) {
    const int stream = !!(e->p.outputs & VIDK_ENC_OUT_STREAM);
    /* the deblocking filter reads the same maps, Intra_4x4's decision its neighbours' modes */
    if (!stream && !e->p.deblock && !e->p.intra4x4 && !e->p.intra8x8 && !e->p.bframes) return 0;
    const size_t n = (size_t)e->W * e->H;
    if (stream)
        e->stream =
            vidk_h264_stream_new(e->w, e->h, e->W, e->H, e->p.qp, e->p.slices ? e->p.slices : 1,
                                 e->p.fps_num, e->p.fps_den, e->p.range, e->p.deblock);
    if (e->stream && e->p.cabac && vidk_h264_stream_set_cabac(e->stream, 1) < 0)
        return VIDK_ERR(ENOMEM);
    if (e->stream && e->p.bframes &&
        vidk_h264_stream_set_bframes(e->stream, 1 + e->p.b_pyramid) < 0)
        return VIDK_ERR(ENOMEM);
    if (e->p.bframes && !(e->st_mv4b = calloc(n / 16, sizeof(*e->st_mv4b))))
        return VIDK_ERR(ENOMEM);
    e->st_mbi = calloc((size_t)e->uw * e->uh, sizeof(*e->st_mbi));
    e->st_mv4 = calloc(n / 16, sizeof(*e->st_mv4));
    e->st_im4 = calloc(n / 16, 1);
    e->st_lev[0] = calloc(n, sizeof(int16_t));
    e->st_lev[1] = calloc(n / 4, sizeof(int16_t));
    e->st_lev[2] = calloc(n / 4, sizeof(int16_t));
    if ((stream && !e->stream) || !e->st_mbi || !e->st_mv4 || !e->st_im4 || !e->st_lev[0] ||
        !e->st_lev[1] || !e->st_lev[2])
        return VIDK_ERR(ENOMEM);
    return 0;
}

void vidk_enc_stream_close(VidkEncoder *e) {
    vidk_h264_stream_free(e->stream);
    e->stream = NULL;
    vidk_pool_destroy(&e->st_pool);
    free(e->st_mbi);
    free(e->st_mv4);
    free(e->st_mv4b);
    free(e->st_im4);
    for (int p = 0; p < 3; p++)
        free(e->st_lev[p]);
    e->st_mbi = NULL, e->st_mv4 = NULL, e->st_mv4b = NULL, e->st_im4 = NULL;
    e->st_lev[0] = e->st_lev[1] = e->st_lev[2] = NULL;
}

int vidk_enc_write_stream(VidkEncoder *e, int64_t index, int intra, const VidkMv *mv4,
                          const VidkMv *mv4b, int16_t *const lev[3], VidkEncFrameInfo *info) {
    info->stream = NULL;
    info->stream_size = 0;
    if (!e->stream) return 0;
    const double t0 = vidk_enc_now_ms();
    const VidkH264StreamFrame sf = {.index = index,
                                    .intra = intra,
                                    .mbi = e->st_mbi,
                                    .mv4 = mv4,
                                    .lev = {lev[0], lev[1], lev[2]},
                                    .im4 = e->st_im4,
                                    .bslice = mv4b != NULL,
                                    .mv4b = mv4b,
                                    .bref = mv4b && index == e->bref};
    const int err = vidk_h264_stream_frame(e->stream, e->ctx, e->st_pool, &sf, &info->stream,
                                           &info->stream_size);
    info->stage_ms[VIDK_ENC_STAGE_STREAM] = vidk_enc_now_ms() - t0;
    return err;
}

void vidk_enc_qpl_geometry(int W, int H, int *qps, ptrdiff_t *qpn) {
    *qps = (W + 5 + 63) & ~63;
    *qpn = (ptrdiff_t)*qps * (H + 5);
}
