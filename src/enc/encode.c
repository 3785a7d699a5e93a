/* The coding loop (vidkern's main job): public API (validation, then ctx->ops.enc) and the
 * CPU backends' driver (vidk_enc_cpu_*). The driver codes inter frames by unit rows and
 * intra frames by a wavefront of rows on ctx->ops.run (serial for c and simd, the pool
 * for threads) with the context's dsp kernels. cuda: src/cuda/encode.cu, reached only
 * through the table. Frame set-up and statistics: src/enc/enc_frame.c. docs/ENCODE.md is the
 * specification. */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "enc.h"
#include "h264_stream.h"

/* ---- the two instances of the unit drivers ---- */

typedef struct EncOps {
    const VidkH264DSP *h;
    const VidkHevcDSP *v;
} EncOps;

/* 1: the context's dsp kernels (C reference on the c backend, SIMD otherwise). */
#define ENC_T(n)                             enc_dsp_##n
#define EO_H264_SUB_FDCT(n, w, s, ss, p, ps) ops->h->sub_fdct[(n) == 8](w, s, ss, p, ps)
#define EO_H264_QUANT(n, lev, w, mf, qb, fo) ops->h->quant[(n) == 8](lev, w, mf, qb, fo)
#define EO_H264_DEQ_IDCT_ADD(n, d, ds, c, ls, qp, dc)                                          \
    ops->h->dequant_idct_add[(n) == 8](d, ds, c, ls, qp, dc)
#define EO_H264_FDCT_DC(t, y, w)            ops->h->fdct_dc[t](y, w)
#define EO_H264_IDCT_DC(t, dc, c, ls00, qp) ((void)(ls00), ops->h->idct_dc[t](dc, c, 16, qp))
#define EO_HEVC_FWD(l, coef, res, tmp)      ((void)(tmp), ops->v->fwd[(l)-2](coef, res, 1, 8))
#define EO_HEVC_INV(l, res, coef, tmp)      ((void)(tmp), ops->v->inv[(l)-2](res, coef, 1, 8))
#define EO_HEVC_QUANT(lev, coef, len, sc, qb, off)                                             \
    enc_dsp_hevc_quant(ops, lev, coef, len, sc, qb, off)
#define EO_HEVC_DEQUANT(coef, lev, len, sc, sh)                                                \
    ops->v->dequant(coef, lev, (size_t)(len), sc, sh)

static inline int enc_dsp_hevc_quant(const EncOps *ops, int16_t *lev, const int16_t *coef,
                                     int len, int32_t scale, int qbits, int32_t off) {
    uint16_t nnz = 0;
    ops->v->quant(lev, coef, 1, len, scale, qbits, off, &nnz);
    return nnz;
}

#include "enc_tmpl.h"

#undef ENC_T
#undef EO_H264_SUB_FDCT
#undef EO_H264_QUANT
#undef EO_H264_DEQ_IDCT_ADD
#undef EO_H264_FDCT_DC
#undef EO_H264_IDCT_DC
#undef EO_HEVC_FWD
#undef EO_HEVC_INV
#undef EO_HEVC_QUANT
#undef EO_HEVC_DEQUANT

/* 2: the core primitives of enc_core.h, as the device runs them. */
#define ENC_T(n) enc_core_##n
#include "enc_ops_core.h"
#include "enc_tmpl.h"

/* The unit coders, [codec][intra]: enc_dsp_* (the context's dsp tables) is what the CPU
 * backends run. enc_core_* (enc_core.h's primitives, the device's arithmetic) is a TEST
 * hook: vidk_enc_set_core_path() switches an encoder to it so that tests/test_encode.c
 * can check, on any machine, that the device's arithmetic gives the CPU's bits. */
typedef void (*EncUnitFn)(const EncOps *ops, const EncFrame *f, int x, int y);
static const EncUnitFn units_dsp[VIDK_CODEC_COUNT][2] = {
    {enc_dsp_h264_p_mb, enc_dsp_h264_i_mb}, {enc_dsp_hevc_p_ctu, enc_dsp_hevc_i_ctu}};
static const EncUnitFn units_core[VIDK_CODEC_COUNT][2] = {
    {enc_core_h264_p_mb, enc_core_h264_i_mb}, {enc_core_hevc_p_ctu, enc_core_hevc_i_ctu}};
/* H.264 B frames' inter macroblocks: [core path] */
static const EncUnitFn units_b[2] = {enc_dsp_h264_b_mb, enc_core_h264_b_mb};

/* ---- names, parameters ---- */

const char *vidk_codec_name(VidkCodec c) {
    return c == VIDK_CODEC_H264 ? "h264" : c == VIDK_CODEC_HEVC ? "hevc" : "?";
}

int vidk_codec_from_name(const char *name) {
    if (!name) return VIDK_ERR(EINVAL);
    if (!strcmp(name, "h264") || !strcmp(name, "avc") || !strcmp(name, "h.264"))
        return VIDK_CODEC_H264;
    if (!strcmp(name, "hevc") || !strcmp(name, "h265") || !strcmp(name, "h.265"))
        return VIDK_CODEC_HEVC;
    return VIDK_ERR(EINVAL);
}

void vidk_enc_default_params(VidkEncParams *p) {
    if (!p) return;
    memset(p, 0, sizeof(*p));
    p->codec = VIDK_CODEC_H264;
    p->qp = 30;
    p->range = 16;
    p->keyint = 0;
    p->outputs = VIDK_ENC_OUT_RECON;
    p->slices = 0;
    p->cabac = -1;
    p->fps_num = 25;
    p->fps_den = 1;
    p->deblock = -1;
    p->b_adapt = 1;
}

int vidk_enc_preset(VidkEncParams *p, const char *name) {
    static const struct {
        const char *name;
        int cabac, i4x4, i8x8, bframes, b_pyramid;
    } presets[] = {{"ultrafast", 0, 0, 0, 0, 0},
                   {"superfast", -1, 0, 0, 0, 0},
                   {"veryfast", -1, 1, 1, 3, 1}};
    if (!p || !name) return VIDK_ERR(EINVAL);
    for (size_t k = 0; k < sizeof(presets) / sizeof(presets[0]); k++) {
        if (strcmp(name, presets[k].name)) continue;
        const int avc = p->codec == VIDK_CODEC_H264;
        p->cabac = avc ? presets[k].cabac : -1;
        p->intra4x4 = avc && presets[k].i4x4;
        p->intra8x8 = avc && presets[k].i8x8;
        p->bframes = avc ? presets[k].bframes : 0;
        p->b_adapt = 1;
        p->b_pyramid = avc && presets[k].b_pyramid;
        return 0;
    }
    return VIDK_ERR(EINVAL);
}

int vidk_enc_slices(const VidkEncParams *p, int w, int h) {
    if (!p || w < 1 || h < 1 || p->slices < 0) return 1;
    const int rows = (int)(((int64_t)h + 15) / 16);
    const int cabac = p->codec == VIDK_CODEC_H264 && p->cabac != 0;
    if (p->slices) return p->slices < rows ? p->slices : rows;
    return cabac && rows >= 45 ? rows / 4 : 1;
}

void vidk_enc_set_core_path(VidkEncoder *e, int on) {
    if (e) e->core_path = !!on;
}

/* ---- open / close ---- */

void vidk_enc_cpu_close(VidkEncoder *e) {
    vidk_picture_free(&e->src);
    vidk_picture_free(&e->rec[0]);
    vidk_picture_free(&e->rec[1]);
    vidk_me_field_free(&e->field);
    free(e->stat);
    for (int k = 0; k < 2; k++) {
        free(e->dmv[k]);
        free(e->dmb[k]);
    }
    free(e->dist);
    free(e->skipc);
    free(e->part_mv);
    free(e->qpl);
    free(e->ilevel);
    free(e->ilist);
    vidk_picture_free(&e->brec);
    vidk_picture_free(&e->brec_ref);
    free(e->colb_mv);
    free(e->colb_mb);
    vidk_me_field_free(&e->field1);
    for (int k = 0; k < 2; k++)
        free(e->dmvb[k]);
    free(e->part_mv1);
    free(e->col_mv);
    free(e->col_mb);
    free(e->qpl1);
}

int vidk_enc_cpu_open(VidkEncoder *e) {
    e->stat = calloc((size_t)e->uw * (size_t)e->uh, sizeof(*e->stat));
    if (!e->stat) return VIDK_ERR(ENOMEM);
    for (int k = 0; k < 2; k++) {
        e->dmv[k] = calloc((size_t)(e->W / 4) * (size_t)(e->H / 4), sizeof(*e->dmv[k]));
        e->dmb[k] = calloc((size_t)e->uw * (size_t)e->uh, sizeof(*e->dmb[k]));
        if (!e->dmv[k] || !e->dmb[k]) return VIDK_ERR(ENOMEM);
    }
    e->dist = calloc((size_t)e->uw * (size_t)e->uh * ENC_H264_DIST_N, sizeof(*e->dist));
    e->skipc = calloc((size_t)e->uw * (size_t)e->uh * 2, sizeof(*e->skipc));
    e->ilevel = calloc((size_t)e->uw * (size_t)e->uh, sizeof(int));
    e->ilist = calloc((size_t)e->uw * (size_t)e->uh, sizeof(int));
    e->part_mv = calloc((size_t)e->uw * (size_t)e->uh * VIDK_ME_NPART, sizeof(*e->part_mv));
    if (!e->dist || !e->skipc || !e->part_mv || !e->ilevel || !e->ilist)
        return VIDK_ERR(ENOMEM);
    if (e->p.codec == VIDK_CODEC_H264) {
        int qps;
        ptrdiff_t qpn;
        vidk_enc_qpl_geometry(e->W, e->H, &qps, &qpn);
        e->qpl = malloc((size_t)qpn * 4);
        if (!e->qpl) return VIDK_ERR(ENOMEM);
    }
    int err = vidk_picture_alloc(&e->src, e->W, e->H, VIDK_CHROMA_420, 8, 0);
    if (!err) err = vidk_picture_alloc(&e->rec[0], e->W, e->H, VIDK_CHROMA_420, 8, 0);
    if (!err) err = vidk_picture_alloc(&e->rec[1], e->W, e->H, VIDK_CHROMA_420, 8, 0);
    if (!err) err = vidk_me_field_alloc(&e->field, e->W, e->H, e->shapes);
    if (!err && e->p.bframes) { /* B frames (H.264: vidk_enc_open) */
        const size_t n4 = (size_t)(e->W / 4) * (size_t)(e->H / 4);
        int qps;
        ptrdiff_t qpn;
        vidk_enc_qpl_geometry(e->W, e->H, &qps, &qpn);
        for (int k = 0; k < 2; k++)
            if (!(e->dmvb[k] = calloc(n4, sizeof(*e->dmvb[k])))) return VIDK_ERR(ENOMEM);
        e->part_mv1 = calloc((size_t)e->uw * (size_t)e->uh * VIDK_ME_NPART, sizeof(VidkMv));
        e->col_mv = calloc(n4, sizeof(*e->col_mv));
        e->col_mb = calloc((size_t)e->uw * (size_t)e->uh, sizeof(*e->col_mb));
        e->qpl1 = malloc((size_t)qpn * 4);
        if (!e->part_mv1 || !e->col_mv || !e->col_mb || !e->qpl1) return VIDK_ERR(ENOMEM);
        err = vidk_picture_alloc(&e->brec, e->W, e->H, VIDK_CHROMA_420, 8, 0);
        if (!err && e->p.b_pyramid) {
            err = vidk_picture_alloc(&e->brec_ref, e->W, e->H, VIDK_CHROMA_420, 8, 0);
            e->colb_mv = calloc(n4, sizeof(*e->colb_mv));
            e->colb_mb = calloc((size_t)e->uw * (size_t)e->uh, sizeof(*e->colb_mb));
            if (!err && (!e->colb_mv || !e->colb_mb)) err = VIDK_ERR(ENOMEM);
        }
        if (!err) err = vidk_me_field_alloc(&e->field1, e->W, e->H, VIDK_ENC_B_SHAPES);
    }
    return err;
}

/* B-frames, every backend: the look-ahead's pictures and field (still_of; its search runs on
 * the context's backend from these host pictures). The sources' copies (bsrc) are made at
 * their first send. */
static int lookahead_open(VidkEncoder *e) {
    int err = 0;
    for (int k = 0; k < VIDK_ENC_MAX_PENDING; k++)
        e->la_idx[k] = -1;
    if (!e->p.bframes || !e->p.b_adapt || e->ctx->ops.enc.still) return 0;
    for (int k = 0; k < 2 && !err; k++)
        err = vidk_picture_alloc(&e->la[k], e->W, e->H, VIDK_CHROMA_420, 8, 0);
    if (!err)
        err = vidk_me_field_alloc(&e->la_field, e->W, e->H, VIDK_ME_SHAPE(VIDK_BLOCK_16x16));
    return err;
}

void vidk_enc_close(VidkEncoder **pe) {
    if (!pe || !*pe) return;
    VidkEncoder *e = *pe;
    e->ctx->ops.enc.close(e);
    vidk_enc_stream_close(e);
    for (int k = 0; k < VIDK_ENC_MAX_PENDING; k++)
        vidk_picture_free(&e->bsrc[k]);
    vidk_picture_free(&e->la[0]);
    vidk_picture_free(&e->la[1]);
    vidk_me_field_free(&e->la_field);
    free(e);
    *pe = NULL;
}

int vidk_enc_open(VidkContext *ctx, VidkEncoder **out, const VidkEncParams *p, int w, int h) {
    if (!out) return VIDK_ERR(EINVAL);
    *out = NULL;
    if (!ctx || !p) return VIDK_ERR(EINVAL);
    if ((unsigned)p->codec >= VIDK_CODEC_COUNT || p->qp < 0 || p->qp > VIDK_ENC_MAX_QP ||
        p->range < 0 || p->range > VIDK_ME_MAX_RANGE || p->keyint < 0 ||
        (p->outputs & ~(unsigned)(VIDK_ENC_OUT_ALL | VIDK_ENC_OUT_STREAM))) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: invalid parameters");
        return VIDK_ERR(EINVAL);
    }
    for (size_t i = 0; i < sizeof(p->reserved); i++)
        if (p->reserved[i]) return VIDK_ERR(EINVAL);
    if (p->slices < 0 || p->fps_num < 0 || p->fps_den < 0 || (!p->fps_num != !p->fps_den)) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: invalid slices or frame rate");
        return VIDK_ERR(EINVAL);
    }
    if ((p->outputs & VIDK_ENC_OUT_STREAM) && p->codec != VIDK_CODEC_H264) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: the stream output exists for H.264 only");
        return VIDK_ERR(EINVAL);
    }
    if (p->deblock < -1 || p->deblock > 1) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: deblock is -1 (the codec's default), 0 or 1");
        return VIDK_ERR(EINVAL);
    }
    if (p->cabac < -1 || p->cabac > 1) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: cabac is -1 (the codec's default), 0 or 1");
        return VIDK_ERR(EINVAL);
    }
    if (p->cabac == 1 && p->codec != VIDK_CODEC_H264) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: CABAC exists for H.264 only");
        return VIDK_ERR(ENOSYS);
    }
    if ((p->intra4x4 != 0 && p->intra4x4 != 1) || (p->intra8x8 != 0 && p->intra8x8 != 1)) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: intra4x4 and intra8x8 are 0 or 1");
        return VIDK_ERR(EINVAL);
    }
    if (p->bframes < 0 || p->bframes > VIDK_ENC_MAX_BFRAMES) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: bframes is 0..%d", VIDK_ENC_MAX_BFRAMES);
        return VIDK_ERR(EINVAL);
    }
    if (p->b_adapt != 0 && p->b_adapt != 1) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: b_adapt is 0 or 1");
        return VIDK_ERR(EINVAL);
    }
    if (p->b_pyramid != 0 && p->b_pyramid != 1) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: b_pyramid is 0 or 1");
        return VIDK_ERR(EINVAL);
    }
    if (p->bframes && p->codec != VIDK_CODEC_H264) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: B-frames exist for H.264 only");
        return VIDK_ERR(ENOSYS);
    }
    if ((p->intra4x4 || p->intra8x8) && p->codec != VIDK_CODEC_H264) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: Intra_4x4 and Intra_8x8 exist for H.264 only");
        return VIDK_ERR(ENOSYS);
    }
    if (p->deblock == 1 && p->codec != VIDK_CODEC_H264) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: the deblocking filter exists for H.264 only");
        return VIDK_ERR(ENOSYS);
    }
    if (w < 16 || h < 16 || (w & 1) || (h & 1) || w > VIDK_MAX_PICTURE_SIDE ||
        h > VIDK_MAX_PICTURE_SIDE) {
        vidk_log(ctx, VIDK_LOG_ERROR, "encode: picture size %dx%d (even, 16..%d)", w, h,
                 VIDK_MAX_PICTURE_SIDE);
        return VIDK_ERR(EINVAL);
    }
    VidkEncoder *e = calloc(1, sizeof(*e));
    if (!e) return VIDK_ERR(ENOMEM);
    e->ctx = ctx;
    e->p = *p;
    if (e->p.bframes < 2) e->p.b_pyramid = 0; /* no run of two B frames */
    if (e->p.deblock < 0) e->p.deblock = p->codec == VIDK_CODEC_H264; /* the codec's default */
    if (e->p.cabac < 0) e->p.cabac = p->codec == VIDK_CODEC_H264;
    e->p.slices = vidk_enc_slices(p, w, h);
    e->w = w, e->h = h;
    e->usz = p->codec == VIDK_CODEC_H264 ? 16 : 32;
    e->W = (w + e->usz - 1) / e->usz * e->usz;
    e->H = (h + e->usz - 1) / e->usz * e->usz;
    e->uw = e->W / e->usz, e->uh = e->H / e->usz;
    e->mb_w = e->W / 16, e->mb_h = e->H / 16;
    e->shapes = VIDK_ME_SHAPES_H264;
    /* From H.264 level 3.1 on, two consecutive macroblocks may carry at most 16 vectors
     * (Table A-1 MaxMvsPer2Mb): no sub-8x8 partitions then (4 vectors per macroblock at
     * most), and no search for their shapes. The level is the stream's, whether or not the
     * stream is written. */
    e->no_sub8x8 = p->codec == VIDK_CODEC_H264 &&
                   vidk_h264_stream_level_refs(e->mb_w, e->mb_h, p->fps_num, p->fps_den,
                                               p->range, vidk_enc_dpb(p)) >= 31;
    e->max_pending = 3 + p->bframes;
    e->anchor = -1, e->bref = -1;
    if (e->no_sub8x8)
        e->shapes &= ~(VIDK_ME_SHAPE(VIDK_BLOCK_4x4) | VIDK_ME_SHAPE(VIDK_BLOCK_8x4) |
                       VIDK_ME_SHAPE(VIDK_BLOCK_4x8));
    if (p->codec == VIDK_CODEC_HEVC)
        e->shapes = (VIDK_ME_SHAPES_H264 & ~VIDK_ME_SHAPE(VIDK_BLOCK_4x4)) |
                    VIDK_ME_SHAPE(VIDK_BLOCK_32x32);
    int err = ctx->ops.enc.open(e);
    if (err >= 0) err = vidk_enc_stream_open(e);
    if (err >= 0) err = lookahead_open(e);
    if (err < 0) {
        vidk_enc_close(&e);
        return err;
    }
    *out = e;
    return 0;
}

void vidk_enc_geometry(const VidkEncoder *e, VidkEncGeometry *g) {
    if (!e || !g) return;
    g->w = e->w, g->h = e->h;
    g->coded_w = e->W, g->coded_h = e->H;
    g->mv_w = e->W / 4, g->mv_h = e->H / 4;
    g->mb_w = e->mb_w, g->mb_h = e->mb_h;
    g->max_pending = e->max_pending;
}

/* ---- send / receive ---- */

/* The visible w x h area of picture s into d (the source's size). */
static void copy_visible(const VidkEncoder *e, VidkPicture *d, const VidkPicture *s) {
    for (int p = 0; p < 3; p++) {
        const int sh = p ? 1 : 0;
        for (int y = 0; y < e->h >> sh; y++)
            memcpy((uint8_t *)d->data[p] + (ptrdiff_t)y * d->stride[p],
                   (const uint8_t *)s->data[p] + (ptrdiff_t)y * s->stride[p],
                   (size_t)(e->w >> sh));
    }
}

/* B-frames: the source copied into the encoder's picture of its slot. */
static int copy_source(VidkEncoder *e, int slot, const VidkPicture *src) {
    VidkPicture *d = &e->bsrc[slot];
    if (!d->data[0]) {
        const int err = vidk_picture_alloc(d, e->w, e->h, VIDK_CHROMA_420, 8, 0);
        if (err < 0) return err;
    }
    copy_visible(e, d, src);
    return 0;
}

int vidk_enc_send(VidkEncoder *e, const VidkPicture *src) {
    if (!e) return VIDK_ERR(EINVAL);
    if (!src) { /* the end of the input */
        e->flushed = 1;
        return 0;
    }
    if (e->flushed) {
        vidk_log(e->ctx, VIDK_LOG_ERROR, "encode: a picture after the end of the input");
        return VIDK_ERR(EINVAL);
    }
    if (!vidk_enc_picture_ok(e, src)) {
        vidk_log(e->ctx, VIDK_LOG_ERROR, "encode: the picture is not %dx%d 8-bit 4:2:0", e->w,
                 e->h);
        return VIDK_ERR(EINVAL);
    }
    if (e->q_count >= e->max_pending) return VIDK_ERR(EAGAIN);
    const int slot = (int)(e->sent % VIDK_ENC_MAX_PENDING);
    if (e->p.bframes && !e->ctx->ops.enc.still) { /* cuda keeps its own (on the device) */
        const int err = copy_source(e, slot, src);
        if (err < 0) return err;
        src = &e->bsrc[slot];
    }
    e->queue[slot] = src;
    e->t_send[slot] = vidk_enc_now_ms();
    const int err = e->ctx->ops.enc.send(e, src);
    if (err < 0) return err;
    e->q_count++;
    e->sent++;
    return 0;
}

/* Copy a source picture into a coded-size picture, extending the edges. */
static void load_into(const VidkEncoder *e, VidkPicture *dst, const VidkPicture *s) {
    for (int p = 0; p < 3; p++) {
        const int sh = p ? 1 : 0, w = e->w >> sh, h = e->h >> sh, W = e->W >> sh,
                  H = e->H >> sh;
        uint8_t *d = dst->data[p];
        const ptrdiff_t ds = dst->stride[p];
        for (int y = 0; y < H; y++) {
            const uint8_t *r =
                (const uint8_t *)s->data[p] + (ptrdiff_t)vidk_imin(y, h - 1) * s->stride[p];
            uint8_t *o = d + (ptrdiff_t)y * ds;
            memcpy(o, r, (size_t)w);
            memset(o + w, r[w - 1], (size_t)(W - w));
        }
    }
}

static void load_source(VidkEncoder *e, const VidkPicture *s) {
    load_into(e, &e->src, s);
}

typedef struct CodeJob {
    const EncFrame *f;
    EncOps ops;
    EncUnitFn code; /* units_dsp or units_core, for the frame's codec and type */
    VidkEncoder *e;
} CodeJob;

static void code_unit(const CodeJob *j, int x, int y) {
    j->code(&j->ops, j->f, x, y);
}

/* Inter: one job per unit row. */
static void row_job(void *arg, int row, int thread) {
    (void)thread;
    const CodeJob *j = arg;
    for (int x = 0; x < j->f->uw; x++)
        code_unit(j, x, row);
}

/* H.264 P frames: decision pass `pass` of one macroblock row (-2: a row of the reference's
 * half-sample planes, -1: the refined vectors and distortions, 0: the seed). */
typedef struct DecideJob {
    const EncFrame *f;
    VidkEncoder *e;
    int pass;
} DecideJob;

static void decide_job(void *arg, int row, int thread) {
    (void)thread;
    const DecideJob *j = arg;
    VidkEncoder *e = j->e;
    const int o = j->pass & 1, i = o ^ 1;
    const EncFrame *f = j->f;
    if (j->pass < -1) { /* the half-sample planes: row - 3 of them */
        for (int x = -3; x <= f->W + 1; x++) {
            enc_h264_qpl_fill(f, e->qpl, x, row - 3);
            if (f->bframe) enc_h264_qpl_fill(f->l1, e->qpl1, x, row - 3);
        }
        return;
    }
    if (f->bframe) { /* B frames (docs/ENCODE.md §16) */
        for (int x = 0; x < f->uw; x++)
            if (j->pass < 0)
                enc_h264_b_dist(f, x, row);
            else if (j->pass)
                enc_h264_b_decide_pass(f, x, row, e->dmv[i], e->dmvb[i], e->dmb[i], e->dmv[o],
                                       e->dmvb[o], e->dmb[o]);
            else
                enc_h264_b_seed(f, x, row, e->dmv[o], e->dmvb[o], e->dmb[o]);
        return;
    }
    for (int x = 0; x < j->f->uw; x++)
        if (j->pass < 0) {
            uint32_t *d = e->dist + ENC_H264_DIST_N * (row * j->f->uw + x);
            for (int p = 0; p < VIDK_ME_NPART; p++)
                d[p] = enc_h264_part_dist(j->f, x, row, p);
            d[ENC_H264_DIST_INTRA] = enc_h264_intra_est_mb(j->f, x, row);
        } else if (j->pass)
            enc_h264_decide_pass(j->f, x, row, e->dmv[i], e->dmb[i], e->dmv[o], e->dmb[o]);
        else
            enc_h264_seed(j->f, x, row, e->dmv[o], e->dmb[o]);
}

/* H.264 P frames: the macroblocks the decision made intra, after the inter ones, each once
 * its intra neighbours (left, top-left, top: what Intra_16x16 and chroma prediction read;
 * with Intra_4x4 / Intra_8x8 the top-right one too) are coded: in levels (0: no intra
 * neighbour; else one more than the highest of theirs), each level on ops.run. */
typedef struct IntraJob {
    const CodeJob *j;
    const int *list; /* macroblock indices of the level */
} IntraJob;

static void intra_job(void *arg, int k, int thread) {
    (void)thread;
    const IntraJob *ij = arg;
    const int u = ij->list[k], uw = ij->j->f->uw;
    ij->j->code(&ij->j->ops, ij->j->f, u % uw, u / uw);
}

static void code_intra_in_p(VidkEncoder *e, const CodeJob *j) {
    const EncFrame *f = j->f;
    const int n = e->uw * e->uh;
    int *lv = e->ilevel, *list = e->ilist, count = 0, top = -1;
    for (int u = 0; u < n; u++) {
        lv[u] = -1;
        if (!(f->dmb[u] & ENC_MBI_INTRA)) continue;
        const int x = u % e->uw, y = u / e->uw;
        int l = 0;
        if (x > 0 && lv[u - 1] >= 0) l = vidk_imax(l, lv[u - 1] + 1);
        if (y > 0 && lv[u - e->uw] >= 0) l = vidk_imax(l, lv[u - e->uw] + 1);
        if (x > 0 && y > 0 && lv[u - e->uw - 1] >= 0) l = vidk_imax(l, lv[u - e->uw - 1] + 1);
        if ((f->i4x4 || f->i8x8) && x + 1 < e->uw && y > 0 && lv[u - e->uw + 1] >= 0)
            l = vidk_imax(l, lv[u - e->uw + 1] + 1);
        lv[u] = l;
        top = vidk_imax(top, l);
        count++;
    }
    if (!count) return;
    CodeJob cj = *j;
    cj.code = (e->core_path ? units_core : units_dsp)[VIDK_CODEC_H264][1];
    for (int l = 0; l <= top; l++) {
        int m = 0;
        for (int u = 0; u < n; u++)
            if (lv[u] == l) list[m++] = u;
        IntraJob ij = {&cj, list};
        e->ctx->ops.run(e->ctx, m, intra_job, &ij);
    }
}

/* B frames: a direct macroblock's final vectors (enc_h264_b_direct_final), in the
 * last decision pass's planes. */
static void direct_unit(const CodeJob *j, int x, int y) {
    VidkEncoder *e = j->e;
    const int o = VIDK_ENC_DECIDE_PASSES & 1;
    enc_h264_b_direct_final(j->f, x, y, e->dmv[o], e->dmvb[o], e->dmb[o]);
}

static void deblock_unit(const CodeJob *j, int x, int y) {
    enc_h264_deblock_mb(j->f, x, y);
}

/* A wavefront over the frame's units: job y does row y left to right, unit x once row y - 1
 * has done x + 2 of them (the left, upper-left, upper and upper-right units: what intra
 * prediction reads and what the deblocking filter's edges wrote; raster order's result).
 * The pool hands rows out in order, so a row waits only for rows already running; the
 * serial runner does them one after the other and never waits. */
typedef struct WaveJob {
    const CodeJob *j;
    void (*fn)(const CodeJob *, int, int);
    atomic_int *done; /* per row: units done (release after each, acquire before waiting) */
} WaveJob;

static void wave_job(void *arg, int y, int thread) {
    (void)thread;
    const WaveJob *w = arg;
    const int uw = w->j->f->uw;
    for (int x = 0; x < uw; x++) {
        if (y > 0)
            for (int spins = 1; atomic_load_explicit(&w->done[y - 1], memory_order_acquire) <
                                vidk_imin(x + 2, uw);
                 spins++)
                if (!(spins & 63)) sched_yield();
        w->fn(w->j, x, y);
        atomic_store_explicit(&w->done[y], x + 1, memory_order_release);
    }
}

static int run_wavefront(VidkContext *ctx, const VidkEncoder *e, const CodeJob *j,
                         void (*fn)(const CodeJob *, int, int)) {
    atomic_int *done = malloc((size_t)e->uh * sizeof(*done));
    if (!done) return VIDK_ERR(ENOMEM);
    for (int y = 0; y < e->uh; y++)
        atomic_init(&done[y], 0);
    WaveJob w = {j, fn, done};
    ctx->ops.run(ctx, e->uh, wave_job, &w);
    free(done);
    return 0;
}

typedef struct SseJob {
    const VidkEncoder *e;
    const VidkPicture *rec;
    uint64_t *rows; /* per luma row pair: Y, U, V */
} SseJob;

static void sse_job(void *arg, int r, int thread) {
    (void)thread;
    const SseJob *j = arg;
    const VidkEncoder *e = j->e;
    const VidkPicture *a = &e->src, *b = j->rec;
    for (int p = 0; p < 3; p++) {
        const int sh = p ? 1 : 0, w = e->w >> sh;
        uint64_t s = 0;
        for (int y = p ? r : 2 * r; y < (p ? r + 1 : 2 * r + 2); y++) {
            const uint8_t *pa = (const uint8_t *)a->data[p] + (ptrdiff_t)y * a->stride[p];
            const uint8_t *pb = (const uint8_t *)b->data[p] + (ptrdiff_t)y * b->stride[p];
            for (int x = 0; x < w; x++) {
                const int d = pa[x] - pb[x];
                s += (uint64_t)(d * d);
            }
        }
        j->rows[3 * r + p] = s;
    }
}

int vidk_enc_cpu_send(VidkEncoder *e, const VidkPicture *src) {
    (void)e, (void)src; /* the picture is read when its frame is coded */
    return 0;
}

int vidk_enc_cpu_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                         VidkEncFrameInfo *info) {
    VidkContext *ctx = e->ctx;
    const int64_t index = e->code_index;
    const VidkPicture *src = e->queue[index % VIDK_ENC_MAX_PENDING];
    const int intra = e->code_type == VIDK_ENC_FRAME_I, bf = e->code_type == VIDK_ENC_FRAME_B;
    double t[VIDK_ENC_STAGE_COUNT + 1];
    t[0] = vidk_enc_now_ms();
    load_source(e, src);
    t[1] = vidk_enc_now_ms();
    /* P: the last anchor; B: list 0 the anchor before it, list 1 the last one, but for the
     * run's reference B frame (b_pyramid, coded first) on the side where it is */
    VidkEncPics pics;
    vidk_enc_pics(e, index, e->code_type, e->cur, &pics);
    VidkPicture *const slots[4] = {&e->rec[0], &e->rec[1], &e->brec, &e->brec_ref};
    const VidkPicture *ref = slots[pics.ref0], *ref1 = slots[pics.ref1];
    VidkPicture *rec = slots[pics.rec];
    EncFrame f, f1;
    vidk_enc_frame_setup(e, intra, &f);
    f.bframe = bf;
    if (!intra) {
        VidkMeParams mp;
        vidk_enc_me_params(e, &f, &mp);
        if (bf) mp.shapes = VIDK_ENC_B_SHAPES;
        int err = vidk_me_search(ctx, &e->src, ref, &mp, &e->field);
        if (err >= 0 && bf) err = vidk_me_search(ctx, &e->src, ref1, &mp, &e->field1);
        if (err < 0) return err;
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            f.me[bs] = e->field.res[bs];
            f.me_gw[bs] = e->field.grid_w[bs];
        }
    }
    t[2] = vidk_enc_now_ms();
    for (int p = 0; p < 3; p++) {
        f.src[p] = e->src.data[p];
        f.ss[p] = (int)e->src.stride[p];
        f.ref[p] = ref->data[p];
        f.rs[p] = (int)ref->stride[p];
        f.rec[p] = rec->data[p];
        f.cs[p] = (int)rec->stride[p];
        f.lev[p] = maps && maps->levels[p] ? maps->levels[p] : e->st_lev[p];
        f.ls_[p] = p ? e->W / 2 : e->W;
    }
    f.mv4 = maps && maps->mv && !e->p.bframes ? maps->mv : e->st_mv4;
    f.mbi = e->st_mbi;
    f.im4 = e->st_im4;
    f.i4x4 = e->p.intra4x4 && f.codec == VIDK_CODEC_H264;
    f.i8x8 = e->p.intra8x8 && f.codec == VIDK_CODEC_H264;
    f.energy = maps ? maps->energy : NULL;
    f.stat = e->stat;
    if (bf) { /* list 1: the same frame with the last anchor as its reference */
        f.mv4b = e->st_mv4b;
        f.colmv = pics.colb ? e->colb_mv : e->col_mv;
        f.colmb = pics.colb ? e->colb_mb : e->col_intra ? NULL : e->col_mb;
        f1 = f;
        for (int p = 0; p < 3; p++) {
            f1.ref[p] = ref1->data[p];
            f1.rs[p] = (int)ref1->stride[p];
        }
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            f1.me[bs] = e->field1.res[bs];
            f1.me_gw[bs] = e->field1.grid_w[bs];
        }
        f1.part_mv = e->part_mv1;
        f.l1 = &f1;
        /* implicit weights: POC = 2 x the display index (docs/STREAM.md) */
        enc_h264_implicit_w((int)(2 * (index - pics.i0)), (int)(2 * (pics.i1 - pics.i0)),
                            &f.bw0, &f.bw1);
        f1.bw0 = f.bw0, f1.bw1 = f.bw1;
    }
    CodeJob j = {.f = &f,
                 .ops = {&ctx->h264, &ctx->hevc},
                 .code = bf ? units_b[e->core_path]
                            : (e->core_path ? units_core : units_dsp)[f.codec][f.intra],
                 .e = e};
    if (intra) {
        const int err = run_wavefront(ctx, e, &j, code_unit);
        if (err < 0) return err;
    } else {
        if (f.codec == VIDK_CODEC_H264) {
            DecideJob dj = {.f = &f, .e = e};
            f.dist = e->dist;
            f.skipc = e->skipc;
            f.part_mv = e->part_mv;
            vidk_enc_qpl_geometry(e->W, e->H, &f.qps, &f.qpn);
            f.qpl = e->qpl;
            f.satd_avg = e->core_path ? NULL : ctx->sad.satd_avg;
            if (bf) {
                f1.qps = f.qps, f1.qpn = f.qpn, f1.qpl = e->qpl1, f1.satd_avg = f.satd_avg;
                f1.dist = f.dist, f1.skipc = f.skipc;
            }
            for (dj.pass = -2; dj.pass <= VIDK_ENC_DECIDE_PASSES; dj.pass++)
                ctx->ops.run(ctx, dj.pass < -1 ? e->H + 5 : e->uh, decide_job, &dj);
            f.dmv = e->dmv[VIDK_ENC_DECIDE_PASSES & 1];
            f.dmb = e->dmb[VIDK_ENC_DECIDE_PASSES & 1];
            if (bf) f.dmvb = e->dmvb[VIDK_ENC_DECIDE_PASSES & 1];
        }
        if (bf) { /* direct vectors as a decoder derives them, in raster order */
            const int err = run_wavefront(ctx, e, &j, direct_unit);
            if (err < 0) return err;
        }
        ctx->ops.run(ctx, e->uh, row_job, &j);
        if (f.codec == VIDK_CODEC_H264) code_intra_in_p(e, &j);
    }
    if (e->p.deblock) { /* H.264 (vidk_enc_open) */
        const int err = run_wavefront(ctx, e, &j, deblock_unit);
        if (err < 0) return err;
    }
    t[3] = vidk_enc_now_ms();
    /* Statistics: SSE over the visible area, unit sums. */
    uint64_t sse[3] = {0, 0, 0};
    {
        const int rows = e->h / 2;
        uint64_t *buf = malloc((size_t)rows * 3 * sizeof(*buf));
        if (!buf) return VIDK_ERR(ENOMEM);
        SseJob sj = {.e = e, .rec = rec, .rows = buf};
        ctx->ops.run(ctx, rows, sse_job, &sj);
        for (int r = 0; r < rows; r++)
            for (int p = 0; p < 3; p++)
                sse[p] += buf[3 * r + p];
        free(buf);
    }
    EncSum sum;
    memset(&sum, 0, sizeof(sum));
    for (int u = 0; u < e->uw * e->uh; u++) {
        const EncUnitStat *s = &e->stat[u];
        for (int p = 0; p < 3; p++)
            sum.nnz[p] += s->nnz[p];
        sum.bits_mode += s->bits_mode;
        sum.bits_mv += s->bits_mv;
        sum.bits_level += s->bits_level;
        for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
            sum.parts[k] += s->parts[k];
    }
    t[4] = vidk_enc_now_ms();
    if (recon) copy_visible(e, recon, rec);
    t[5] = vidk_enc_now_ms();
    vidk_enc_fill_info(e, index, intra, &sum, sse, info);
    for (int s = 0; s < VIDK_ENC_STAGE_DOWNLOAD + 1; s++)
        info->stage_ms[s] = t[s + 1] - t[s];
    if (e->p.bframes && maps && maps->mv)
        vidk_enc_b_mv_map(e, bf, f.mbi, f.mv4, f.mv4b, maps->mv);
    {
        int16_t *const lev[3] = {f.lev[0], f.lev[1], f.lev[2]};
        const int err =
            vidk_enc_write_stream(e, index, intra, f.mv4, bf ? f.mv4b : NULL, lev, info);
        if (err < 0) return err;
    }
    if (pics.br & 4) { /* the run's reference B frame: the co-located picture of the others */
        vidk_enc_b_mv_map(e, 1, f.mbi, f.mv4, f.mv4b, e->colb_mv);
        memcpy(e->colb_mb, f.mbi, (size_t)e->uw * (size_t)e->uh * sizeof(uint16_t));
    }
    if (e->p.bframes && !bf) { /* an anchor: the co-located picture of the next B frames */
        memcpy(e->col_mv, f.mv4, (size_t)(e->W / 4) * (size_t)(e->H / 4) * sizeof(VidkMv));
        memcpy(e->col_mb, f.mbi, (size_t)e->uw * (size_t)e->uh * sizeof(uint16_t));
        e->col_intra = intra;
    }
    return 0;
}

/* The still share of frame j (> 0, j - 1 and j queued; docs/ENCODE.md §16): the permille of
 * its 16x16 blocks whose vector against source frame j - 1 is (0, 0) (the frame's motion
 * search, range R, lambda of the QP). */
/* B frames only between frames at least this still (900 before session 44) */
#define ENC_B_STILL 500
void vidk_enc_la_params(const VidkEncoder *e, VidkMeParams *mp) {
    vidk_me_default_params(mp);
    mp->range = e->p.range;
    mp->shapes = VIDK_ME_SHAPE(VIDK_BLOCK_16x16);
    mp->lambda = (unsigned)vidk_enc_lambda(e->p.qp);
}

static int still_of(VidkEncoder *e, int64_t j, int *still) {
    const int slot = (int)(j % VIDK_ENC_MAX_PENDING);
    if (e->la_idx[slot] != j) {
        const int n = e->mb_w * e->mb_h;
        int zero = 0;
        if (e->ctx->ops.enc.still) { /* the backend searched it when j was sent */
            const int err = e->ctx->ops.enc.still(e, j, &zero);
            if (err < 0) return err;
        } else {
            load_into(e, &e->la[0], e->queue[(j - 1) % VIDK_ENC_MAX_PENDING]);
            load_into(e, &e->la[1], e->queue[slot]);
            VidkMeParams mp;
            vidk_enc_la_params(e, &mp);
            const int err = vidk_me_search(e->ctx, &e->la[1], &e->la[0], &mp, &e->la_field);
            if (err < 0) return err;
            const VidkMeResult *r = e->la_field.res[VIDK_BLOCK_16x16];
            for (int k = 0; k < n; k++)
                zero += !r[k].mv.x && !r[k].mv.y;
        }
        e->la_idx[slot] = j, e->la_still[slot] = (int)(1000LL * zero / n);
    }
    *still = e->la_still[slot];
    return 0;
}

/* The coding order (docs/ENCODE.md §16): the next frame to code, *type VIDK_ENC_FRAME_*;
 * VIDK_ERR(EAGAIN) when it needs frames not sent yet. Without B-frames the display order.
 * With them, after the frames below b_next: the B frames before an anchor already coded
 * (b_pyramid: the reference one, bref, first);
 * else an intra frame; else the anchor bframes frames ahead (or the frame before the next
 * intra frame, or the last frame once the input has ended; with b_adapt the last still
 * frame before one that moves), then the frames before it. */
static int plan_next(VidkEncoder *e, int64_t *index, int *type) {
    const int64_t i = e->b_next;
    if (e->anchor >= 0) { /* the run's reference B frame first (b_pyramid), then the others */
        *index = e->bref >= 0 && !e->bref_coded ? e->bref : i, *type = VIDK_ENC_FRAME_B;
        return 0;
    }
    if (i >= e->sent) return VIDK_ERR(EAGAIN);
    if (vidk_enc_is_intra(e, i)) {
        *index = i, *type = VIDK_ENC_FRAME_I;
        return 0;
    }
    int64_t a = i + e->p.bframes;
    for (int64_t k = i + 1; k <= a; k++)
        if (vidk_enc_is_intra(e, k)) {
            a = k - 1;
            break;
        }
    if (a >= e->sent) {
        if (!e->flushed) return VIDK_ERR(EAGAIN);
        a = e->sent - 1;
    }
    /* adaptive: B frames only where the scene is still, the anchor the last still frame */
    for (int64_t k = i; e->p.b_adapt && k <= a && a > i; k++) {
        int still;
        const int err = still_of(e, k, &still);
        if (err < 0) return err;
        if (still < ENC_B_STILL) a = k > i ? k - 1 : i;
    }
    *index = a, *type = VIDK_ENC_FRAME_P;
    return 0;
}

static void plan_done(VidkEncoder *e, int64_t index, int type) {
    if (type != VIDK_ENC_FRAME_B && index != e->b_next) {
        e->anchor = index; /* the B frames before it next; with two or more, b_pyramid's */
        e->bref = e->p.b_pyramid && index - e->b_next >= 2
                      ? e->b_next + (index - e->b_next - 1) / 2
                      : -1;
        e->bref_coded = 0;
        return;
    }
    if (type == VIDK_ENC_FRAME_B && index == e->bref && !e->bref_coded)
        e->bref_coded = 1;
    else
        e->b_next++;
    if (e->b_next == e->bref && e->bref_coded) e->b_next++;
    if (e->b_next == e->anchor) e->b_next++, e->anchor = -1, e->bref = -1;
}

/* After an anchor (an I or P frame): the next anchor's reconstruction is the other
 * (VidkEncoder.cur), this one the last anchor. */
static void anchor_done(VidkEncoder *e, int64_t index, int type) {
    if (type == VIDK_ENC_FRAME_B) return;
    e->cur ^= 1;
    e->anc[0] = e->anc[1], e->anc[1] = index;
}

int vidk_enc_peek_next(VidkEncoder *e, VidkEncoder *nx) {
    *nx = *e;
    anchor_done(nx, e->code_index, e->code_type);
    plan_done(nx, e->code_index, e->code_type);
    nx->q_count--, nx->done++;
    if (!nx->q_count) return 0;
    int type;
    const int err = plan_next(nx, &nx->code_index, &type);
    /* the look-ahead's still shares stay (an error recurs at the frame's own receive) */
    memcpy(e->la_idx, nx->la_idx, sizeof(e->la_idx));
    memcpy(e->la_still, nx->la_still, sizeof(e->la_still));
    if (err < 0) return 0; /* EAGAIN: it needs frames not sent yet */
    nx->code_type = type;
    return 1;
}

int vidk_enc_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                     VidkEncFrameInfo *info) {
    if (!e || !info) return VIDK_ERR(EINVAL);
    if (!e->q_count) return VIDK_ERR(EAGAIN);
    if (recon && (!(e->p.outputs & VIDK_ENC_OUT_RECON) || !vidk_enc_picture_ok(e, recon)))
        return VIDK_ERR(EINVAL);
    if (maps && ((maps->mv && !(e->p.outputs & VIDK_ENC_OUT_MVS)) ||
                 (maps->energy && !(e->p.outputs & VIDK_ENC_OUT_ENERGY)) ||
                 ((maps->levels[0] || maps->levels[1] || maps->levels[2]) &&
                  !(e->p.outputs & VIDK_ENC_OUT_LEVELS))))
        return VIDK_ERR(EINVAL);
    int type;
    int err = plan_next(e, &e->code_index, &type);
    if (err < 0) return err;
    e->code_type = type;
    const double t0 = e->t_send[e->code_index % VIDK_ENC_MAX_PENDING];
    err = e->ctx->ops.enc.receive(e, recon, maps, info);
    if (err >= 0) anchor_done(e, e->code_index, type);
    plan_done(e, e->code_index, type);
    e->q_count--;
    if (err < 0) return err;
    e->done++;
    info->total_ms = vidk_enc_now_ms() - t0;
    return 0;
}
