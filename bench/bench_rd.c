/* `vidkern-bench rd`: rate-distortion of the coding loop's H.264 stream against x264 in the
 * same run. Real clips (looped back and forth up to the frame count) and 1080p / 2160p
 * mosaics of them, QPs 22..37, vidkern at several search ranges, x264 at several presets
 * with constant QP and tune psnr: bits, PSNR-Y / PSNR-YUV and frames/s of every point, then
 * the BD-rate (bdrate.h) of each vidkern range against each preset, per source and
 * averaged. x264 is optional (VIDK_BENCH_X264: pkg-config found libx264 at build time).
 * See docs/BENCH_RD.md. The report (tables, BD-rate, JSON / CSV / Markdown):
 * bench_rd_report.c; the types both files use: bench_rd.h. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_rd.h"
#include "bench_util.h"
#include "cli.h"
#include "gen.h"
#include "mosaic.h"
#include "picio.h"

#define CMD "rd"

#define MAX_SRC    24
#define MAX_FRAMES 1000

static const char *const default_presets = "ultrafast,superfast,veryfast,medium";

static void help(void) {
    printf(
        "usage: vidkern-bench rd [options]\n\n"
        "Rate-distortion of vidkern's H.264 stream against x264 (libx264, linked into\n"
        "vidkern-bench when pkg-config found it at build time), both run here on the same\n"
        "frames held in memory: for every source, QP, vidkern search range and x264\n"
        "preset, kbit per frame, PSNR-Y, PSNR-YUV and frames/s; then the BD-rate (PSNR-Y,\n"
        "pchip) of each vidkern range against each x264 preset, and the averages.\n\n"
        "options:\n"
        "  --source S         real: every clip of the folder plus mosaics of them at\n"
        "                     --sizes (default; generated video at --sizes when no clip\n"
        "                     is found), gen: generated video at --sizes, both\n"
        "  --video DIR        folder of the real clips (default $VIDK_VIDEO_DIR or\n"
        "                     ../shared/video)\n"
        "  --clips LIST       all (default), none, or parts of file names (akiyo,cars)\n"
        "  --sizes LIST       mosaic / generated sizes: 1080p, 2160p, 720p, cif or WxH\n"
        "                     (even); none: no mosaic (default 1080p,2160p)\n"
        "  --frames N         frames per source, 2..%d (default 60); shorter clips are\n"
        "                     played forwards then backwards up to N (said so)\n"
        "  --qps LIST         QPs (default 22,27,32,37; BD-rate needs 2 or more, 4 usual)\n"
        "  --ranges LIST      vidkern search ranges R (default 16,32)\n"
        "  --keyint N         intra period of both encoders (default 0: only the first\n"
        "                     frame is intra; x264 then gets keyint = the frame count)\n"
        "  --no-deblock       vidkern without its deblocking filter (VidkEncParams.deblock\n"
        "                     0; default: on, the codec's default)\n"
        "  --cavlc            vidkern's stream with CAVLC (VidkEncParams.cabac 0; default:\n"
        "                     CABAC, the encoder's default; --cabac says it again)\n"
        "  --i4x4             vidkern with Intra_4x4 in intra frames (VidkEncParams.intra4x4;\n"
        "                     default off)\n"
        "  --i8x8             vidkern with Intra_8x8 in intra frames (VidkEncParams.intra8x8;\n"
        "                     default off)\n"
        "  --bframes N        vidkern's B-frames between anchors (VidkEncParams.bframes;\n"
        "                     default 0)\n"
        "  --b-adapt N        with --bframes: 1 = adaptive placement (default), 0 = the\n"
        "                     fixed pattern (VidkEncParams.b_adapt)\n"
        "  --b-pyramid        with --bframes: reference B-frames (VidkEncParams.b_pyramid)\n"
        "  --slices N         vidkern's slices per picture (VidkEncParams.slices; default\n"
        "                     0: the encoder's auto, vidk_enc_slices: with CABAC one per 4\n"
        "                     macroblock rows at 720p and above, else 1)\n"
        "  --presets LIST     x264 presets (default %s)\n"
        "  --x264-threads N   x264 threads, 0 = x264's auto (1.5 x cores; default)\n"
        "  --x264-bframes N   B-frames of x264; default: each preset's own\n"
        "  --no-x264          vidkern only\n"
        "  --json FILE        JSON report\n"
        "  --md FILE          Markdown report (for docs/PERFORMANCE.md); --markdown alias\n"
        "  --plot-dir DIR     write DIR/rd.csv for `python3 bench/plot_rd.py DIR/rd.csv`\n"
        "                     (RD plot PNGs)\n"
        "  --backend B, --threads N, --cpumask M, --device N, --quiet   as for every\n"
        "                     command (vidkern's backend: default auto)\n\n"
        "Bits: vidkern's stream (VidkEncFrameInfo.stream_size, SPS/PPS included); a build\n"
        "whose loop writes no stream yet falls back to the loop's Exp-Golomb estimate and\n"
        "marks it \"(estimate: no stream)\". x264: the bytes of every NAL unit it outputs\n"
        "(start codes, SPS/PPS, slices) except SEI (x264's version string).\n"
        "x264 settings: the preset, tune psnr, constant QP (rc CQP, ip/pb factors 1: every\n"
        "frame at the QP), scenecut off, PSNR from x264 (analyse.b_psnr).\n",
        MAX_FRAMES, default_presets);
}

/* ---- frames in memory ---------------------------------------------------------------- */
/* All frames of a source in one buffer (tight 4:2:0 planes), so that one range is
 * page-locked on cuda and both encoders read the same bytes. */
typedef struct Frames {
    int w, h, n;
    size_t fsize;
    uint8_t *buf;
    int registered;
} Frames;

static int frames_alloc(Frames *f, int w, int h, int n) {
    f->w = w, f->h = h, f->n = n;
    f->fsize = (size_t)w * h + 2 * (size_t)(w / 2) * (h / 2);
    /* Whole pages: the buffer is page-locked as one range on cuda. */
    const size_t bytes = (f->fsize * (size_t)n + 4095) / 4096 * 4096;
    f->buf = aligned_alloc(4096, bytes);
    f->registered = 0;
    return f->buf ? 0 : -1;
}

static void frames_free(Frames *f, VidkContext *ctx) {
    if (f->registered) vidk_host_unregister(ctx, f->buf);
    free(f->buf);
    memset(f, 0, sizeof(*f));
}

/* A VidkPicture on frame i (not owning its memory). */
static VidkPicture frames_pic(const Frames *f, int i) {
    VidkPicture p;
    memset(&p, 0, sizeof(p));
    uint8_t *y = f->buf + f->fsize * (size_t)i;
    p.w = f->w, p.h = f->h, p.chroma = VIDK_CHROMA_420, p.bitdepth = 8;
    p.data[0] = y;
    p.data[1] = y + (size_t)f->w * f->h;
    p.data[2] = (uint8_t *)p.data[1] + (size_t)(f->w / 2) * (f->h / 2);
    p.stride[0] = f->w;
    p.stride[1] = p.stride[2] = f->w / 2;
    return p;
}

/* Copy a picture into frame i. */
static void frames_put(Frames *f, int i, const VidkPicture *src) {
    VidkPicture d = frames_pic(f, i);
    for (int p = 0; p < 3; p++) {
        const int w = p ? f->w / 2 : f->w, h = p ? f->h / 2 : f->h;
        for (int y = 0; y < h; y++)
            memcpy((uint8_t *)d.data[p] + (ptrdiff_t)y * d.stride[p],
                   (const uint8_t *)src->data[p] + (ptrdiff_t)y * src->stride[p], (size_t)w);
    }
}

/* Read up to `want` frames of clip `path` (8-bit 4:2:0, even size, 2 frames or more) and
 * fill f with `want` frames, looping. 1 = loaded, 0 = skipped (reason in why), -1 = error. */
static int load_clip(Frames *f, const char *path, int want, int *read, int *fps_num,
                     int *fps_den, char *why, size_t whylen) {
    VioReader *r = NULL;
    VidkPicture pic;
    memset(&pic, 0, sizeof(pic));
    char err[256];
    if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) {
        snprintf(why, whylen, "%s", err);
        return 0;
    }
    const VioFormat *fm = vio_reader_format(r);
    int ret = 0;
    if (fm->chroma != VIDK_CHROMA_420 || fm->bitdepth != 8 || (fm->w & 1) || (fm->h & 1) ||
        fm->w < 16 || fm->h < 16) {
        snprintf(why, whylen, "not 8-bit 4:2:0 of an even size of 16x16 or more");
        goto done;
    }
    *fps_num = fm->fps_num, *fps_den = fm->fps_den;
    if (vio_picture_alloc(&pic, fm) < 0 || frames_alloc(f, fm->w, fm->h, want) < 0) {
        snprintf(why, whylen, "out of memory");
        ret = -1;
        goto done;
    }
    int n = 0, e = 0;
    while (n < want && (e = vio_reader_read(r, &pic)) == 1)
        frames_put(f, n++, &pic);
    if (n < want && e < 0) {
        snprintf(why, whylen, "%s", vio_reader_error(r));
        goto skip;
    }
    if (n < 2) {
        snprintf(why, whylen, "%d frame: no motion to code", n);
        goto skip;
    }
    for (int k = n; k < want; k++)
        memcpy(f->buf + f->fsize * (size_t)k,
               f->buf + f->fsize * (size_t)mosaic_ping_pong(k, n), f->fsize);
    *read = n;
    ret = 1;
    goto done;
skip:
    frames_free(f, NULL);
done:
    vidk_picture_free(&pic);
    vio_reader_close(&r);
    return ret;
}

/* Mosaic (m) or generated video (m NULL) at w x h. 0, or -1. */
static int load_rendered(Frames *f, const Mosaic *m, int w, int h, int n) {
    VidkGen *g = NULL;
    if (!m) {
        VidkGenParams gp;
        vidk_gen_default(&gp);
        gp.w = w, gp.h = h, gp.frames = n;
        if (vidk_gen_open(&g, &gp) < 0) return -1;
    }
    int e = frames_alloc(f, w, h, n);
    for (int i = 0; i < n && e >= 0; i++) {
        VidkPicture p = frames_pic(f, i);
        e = m ? mosaic_frame(m, i, &p) : vidk_gen_frame(g, i, &p);
    }
    vidk_gen_close(&g);
    if (e < 0) frames_free(f, NULL);
    return e < 0 ? -1 : 0;
}

/* ---- vidkern -------------------------------------------------------------------------- */
static void psnr_finish(RdPoint *pt, const double *sum, int n) {
    for (int p = 0; p < 3; p++)
        pt->psnr[p] = n ? sum[p] / n : 0;
    pt->psnr_yuv = (6 * pt->psnr[0] + pt->psnr[1] + pt->psnr[2]) / 8;
}

/* What vidkern_run sums over the frames. */
typedef struct RunAcc {
    const Frames *f;
    RdPoint *pt;
    double psnr[3], bits;
} RunAcc;

static VidkPicture run_pic(void *arg, int i) {
    return frames_pic(((const RunAcc *)arg)->f, i);
}

static void run_frame(void *arg, int i, const VidkEncFrameInfo *fi) {
    RunAcc *a = arg;
    (void)i;
    if (fi->stream) {
        a->bits += 8.0 * (double)fi->stream_size;
    } else {
        a->bits += (double)fi->bits;
        a->pt->estimate = 1;
    }
    for (int k = 0; k < 3; k++)
        a->psnr[k] += fi->psnr[k];
    a->pt->intra += fi->intra != 0;
    a->pt->bfr += fi->bframe != 0;
}

/* Code frames [0, n) with vidkern at (range, qp); timed = frames/s of the send / receive
 * calls (pipelined, VIDK_ENC_MAX_PENDING ahead). */
static void vidkern_run(const Rd *b, const Frames *f, const RdSource *s, int range, int qp,
                        int n, RdPoint *pt) {
    VidkEncParams p;
    vidk_enc_default_params(&p);
    p.codec = VIDK_CODEC_H264;
    p.qp = qp, p.range = range, p.keyint = b->keyint, p.deblock = b->deblock;
    p.cabac = b->cabac;
    p.intra4x4 = b->i4x4;
    p.intra8x8 = b->i8x8;
    p.bframes = b->bframes, p.b_adapt = b->b_adapt, p.b_pyramid = b->b_pyramid;
    if (b->slices) p.slices = b->slices;
    p.outputs = VIDK_ENC_OUT_STREAM;
    p.fps_num = s->fps_num, p.fps_den = s->fps_den;
    VidkEncoder *e = NULL;
    int ret = vidk_enc_open(b->ctx, &e, &p, f->w, f->h);
    if (ret < 0) {
        snprintf(pt->err, sizeof(pt->err), "open: %s", vidk_strerror(ret));
        return;
    }
    RunAcc a = {f, pt, {0, 0, 0}, 0};
    const double t0 = cli_now();
    if ((ret = bench_code_frames(e, n, run_pic, NULL, NULL, run_frame, &a, pt->err,
                                 sizeof(pt->err))) < 0)
        goto done;
    const double t = cli_now() - t0;
    pt->fps = t > 0 ? n / t : 0;
    pt->kbits = a.bits / n / 1e3;
    psnr_finish(pt, a.psnr, n);
    pt->done = 1;
done:
    vidk_enc_close(&e);
}

/* ---- x264 ------------------------------------------------------------------------------ */
#if VIDK_BENCH_X264
/* x264 computes PSNRs only at log level INFO or above; its INFO lines (the summary at
 * close) are dropped here, warnings and errors are said. */
static void x264_log(void *arg, int level, const char *fmt, va_list ap) {
    (void)arg;
    if (level > X264_LOG_WARNING) return;
    fprintf(stderr, "vidkern-bench rd: x264: ");
    vfprintf(stderr, fmt, ap);
}

static void x264_account(RdPoint *pt, const x264_picture_t *out, const x264_nal_t *nal,
                         int nnal, double *bytes, double *psnr, int *nout) {
    for (int j = 0; j < nnal; j++) {
        if (nal[j].i_type == NAL_SEI)
            pt->sei_bytes += nal[j].i_payload;
        else
            *bytes += nal[j].i_payload;
    }
    for (int k = 0; k < 3; k++)
        psnr[k] += out->prop.f_psnr[k];
    pt->intra += IS_X264_TYPE_I(out->i_type);
    pt->bfr += IS_X264_TYPE_B(out->i_type);
    (*nout)++;
}

static void x264_run(Rd *b, int pi, const Frames *f, const RdSource *s, int qp, int n,
                     RdPoint *pt) {
    x264_param_t par;
    if (x264_param_default_preset(&par, b->presets[pi], "psnr") < 0) {
        snprintf(pt->err, sizeof(pt->err), "unknown preset '%s'", b->presets[pi]);
        return;
    }
    par.i_log_level = X264_LOG_INFO;
    par.pf_log = x264_log;
    par.i_width = f->w, par.i_height = f->h;
    par.i_csp = X264_CSP_I420;
    par.i_fps_num = (uint32_t)s->fps_num, par.i_fps_den = (uint32_t)s->fps_den;
    par.i_threads = b->x264_threads ? b->x264_threads : X264_THREADS_AUTO;
    /* Intra frames where vidkern has them: keyint, or only the first frame. */
    par.i_keyint_max = b->keyint ? b->keyint : n;
    par.i_keyint_min = 1;
    par.i_scenecut_threshold = 0;
    if (b->x264_bframes >= 0) par.i_bframe = b->x264_bframes;
    par.rc.i_rc_method = X264_RC_CQP;
    par.rc.i_qp_constant = qp;
    par.rc.f_ip_factor = 1; /* every frame type at the QP, as vidkern */
    par.rc.f_pb_factor = 1;
    par.analyse.b_psnr = 1;
    par.analyse.b_ssim = 0;
    par.b_annexb = 1;
    par.b_repeat_headers = 1; /* SPS / PPS before every IDR, as vidkern */
    x264_t *enc = x264_encoder_open(&par);
    if (!enc) {
        snprintf(pt->err, sizeof(pt->err), "x264_encoder_open failed");
        return;
    }
    x264_param_t used;
    x264_encoder_parameters(enc, &used);
    b->x264_threads_used[pi] = used.i_threads;
    b->x264_bframes_used[pi] = used.i_bframe;
    const int me = used.analyse.i_me_method;
    snprintf(
        b->x264_tools[pi], sizeof(b->x264_tools[pi]),
        "cabac %d, deblock %d, ref %d, bframes %d, subme %d, me %s, 8x8dct %d, trellis %d, "
        "weightp %d, lookahead %d, aq %d, mbtree %d, psy %d",
        used.b_cabac, used.b_deblocking_filter, used.i_frame_reference, used.i_bframe,
        used.analyse.i_subpel_refine,
        me >= 0 && me <= X264_ME_TESA ? x264_motion_est_names[me] : "?",
        used.analyse.b_transform_8x8, used.analyse.i_trellis, used.analyse.i_weighted_pred,
        used.rc.i_lookahead, used.rc.i_aq_mode, used.rc.b_mb_tree, used.analyse.b_psy);
    x264_picture_t in, out;
    x264_picture_init(&in);
    in.img.i_csp = X264_CSP_I420;
    in.img.i_plane = 3;
    x264_nal_t *nal;
    int nnal, nout = 0;
    double bytes = 0, psnr[3] = {0, 0, 0};
    const double t0 = cli_now();
    for (int i = 0; i < n; i++) {
        const VidkPicture p = frames_pic(f, i);
        for (int k = 0; k < 3; k++) {
            in.img.plane[k] = p.data[k];
            in.img.i_stride[k] = (int)p.stride[k];
        }
        in.i_pts = i;
        in.i_type = X264_TYPE_AUTO;
        const int r = x264_encoder_encode(enc, &nal, &nnal, &in, &out);
        if (r < 0) {
            snprintf(pt->err, sizeof(pt->err), "frame %d: x264_encoder_encode failed", i);
            goto done;
        }
        if (r > 0) x264_account(pt, &out, nal, nnal, &bytes, psnr, &nout);
    }
    while (x264_encoder_delayed_frames(enc)) {
        const int r = x264_encoder_encode(enc, &nal, &nnal, NULL, &out);
        if (r < 0) {
            snprintf(pt->err, sizeof(pt->err), "flush: x264_encoder_encode failed");
            goto done;
        }
        if (r > 0) x264_account(pt, &out, nal, nnal, &bytes, psnr, &nout);
    }
    const double t = cli_now() - t0;
    if (nout != n) {
        snprintf(pt->err, sizeof(pt->err), "x264 returned %d frames of %d", nout, n);
        goto done;
    }
    pt->fps = t > 0 ? n / t : 0;
    pt->kbits = 8 * bytes / n / 1e3;
    psnr_finish(pt, psnr, n);
    pt->done = 1;
done:
    x264_encoder_close(enc);
}
#endif

/* ---- running --------------------------------------------------------------------------- */
static void run_source(Rd *b, RdSource *s, Frames *f, int quiet, int *failures) {
    VidkContext *ctx = b->ctx;
    if (vidk_get_backend(ctx) == VIDK_BACKEND_CUDA)
        f->registered = vidk_host_register(ctx, f->buf, f->fsize * (size_t)f->n) == 0;
    /* Warm-up (not timed): device buffers, kernels, caches. */
    {
        RdPoint w;
        memset(&w, 0, sizeof(w));
        vidkern_run(b, f, s, b->ranges[0], b->qps[0], f->n < 2 ? f->n : 2, &w);
    }
    for (int q = 0; q < b->nqps; q++) {
        for (int r = 0; r < b->nranges; r++) {
            RdPoint *x = &s->vk[r][q];
            vidkern_run(b, f, s, b->ranges[r], b->qps[q], f->n, x);
            *failures += !x->done;
            if (!x->done)
                cli_error(CMD, "%s vidkern R%d QP %d: %s", s->name, b->ranges[r], b->qps[q],
                          x->err);
            else if (!quiet)
                fprintf(stderr,
                        "  %s QP %d vidkern R%d: %.3f kbit/frame%s, PSNR-Y %.3f, %.1f "
                        "frames/s\n",
                        s->name, b->qps[q], b->ranges[r], x->kbits,
                        x->estimate ? " (estimate: no stream)" : "", x->psnr[0], x->fps);
        }
#if VIDK_BENCH_X264
        for (int p = 0; b->use_x264 && p < b->npresets; p++) {
            RdPoint *x = &s->x[p][q];
            x264_run(b, p, f, s, b->qps[q], f->n, x);
            *failures += !x->done;
            if (!x->done)
                cli_error(CMD, "%s x264 %s QP %d: %s", s->name, b->presets[p], b->qps[q],
                          x->err);
            else if (!quiet)
                fprintf(stderr,
                        "  %s QP %d x264 %s: %.3f kbit/frame, PSNR-Y %.3f, %.1f "
                        "frames/s\n",
                        s->name, b->qps[q], b->presets[p], x->kbits, x->psnr[0], x->fps);
        }
#endif
    }
    brd_compute_bd(b, s);
}

static int clip_wanted(const char *name, char list[][64], int n) {
    if (n == 1 && !strcmp(list[0], "all")) return 1;
    if (n == 1 && !strcmp(list[0], "none")) return 0;
    for (int i = 0; i < n; i++)
        if (strstr(name, list[i])) return 1;
    return 0;
}

/* Called by vidkern_bench.c (declared there too: bench_util.h lists the older ones). */
int vidk_bench_rd(int argc, char **argv);

int vidk_bench_rd(int argc, char **argv) {
    Rd *b = calloc(1, sizeof(*b));
    if (!b) return cli_error(CMD, "out of memory");
    CliCommon c; /* set by bench_parse_args */
    const char *sizes = "1080p,2160p", *qps = "22,27,32,37", *ranges = "16,32";
    const char *presets = default_presets, *clips = "all", *plot_dir = NULL;
    BenchOpts o = {.source = "real", .frames = 60, .frames_lo = 2, .frames_hi = MAX_FRAMES};
    o.no = BENCH_NO_CSV | BENCH_NO_RUNS | BENCH_NO_MAX_SECONDS;
    long keyint = 0, xthreads = 0, xbframes = -1, slices = 0, bframes = 0, b_adapt = 1;
    int ret = 1, no_x264 = 0, failures = 0, no_deblock = 0, cabac = 0, cavlc = 0, i4x4 = 0,
        i8x8 = 0, bpyr = 0;
    Mosaic *mosaic = NULL;
    char *names[MAX_SRC];
    int nnames = 0;
    Frames fr;
    memset(&fr, 0, sizeof(fr));
    char csv_path[4096];
    bench_notes_init(&b->notes, BENCH_MAX_NOTES, 400);
    const BenchArg args[] = {
        {"--no-x264", .flag = &no_x264},
        {"--no-deblock", .flag = &no_deblock},
        {"--cabac", .flag = &cabac},
        {"--cavlc", .flag = &cavlc},
        {"--i4x4", .flag = &i4x4},
        {"--i8x8", .flag = &i8x8},
        {"--b-pyramid", .flag = &bpyr},
        {"--sizes", .str = &sizes},
        {"--qps|--qp", .str = &qps},
        {"--ranges", .str = &ranges},
        {"--presets", .str = &presets},
        {"--clips", .str = &clips},
        {"--md", .str = &o.md},
        {"--plot-dir", .str = &plot_dir},
        {"--keyint", .num = &keyint, .lo = 0, .hi = 1000000},
        {"--slices", .num = &slices, .lo = 0, .hi = 1000000},
        {"--bframes", .num = &bframes, .lo = 0, .hi = VIDK_ENC_MAX_BFRAMES},
        {"--b-adapt", .num = &b_adapt, .lo = 0, .hi = 1},
        {"--x264-threads", .num = &xthreads, .lo = 0, .hi = 1024},
        {"--x264-bframes", .num = &xbframes, .lo = 0, .hi = 16},
        {NULL}};
    const int pr = bench_parse_args(&o, &c, CMD, argc, argv, args, help);
    if (pr) { /* --help shown (exit 0), or an error */
        ret = pr < 0;
        goto done;
    }
    const int source = bench_choice(CMD, "--source", o.source, "real|gen|both");
    if (source < 0) goto done;
    b->keyint = (int)keyint, b->frames = (int)o.frames, b->deblock = !no_deblock;
    if (cabac && cavlc) {
        cli_error(CMD, "--cabac and --cavlc exclude each other");
        goto done;
    }
    b->cabac = !cavlc, b->i4x4 = i4x4, b->i8x8 = i8x8, b->slices = (int)slices;
    b->bframes = (int)bframes, b->b_adapt = (int)b_adapt, b->b_pyramid = bpyr;
    b->x264_threads = (int)xthreads, b->x264_bframes = (int)xbframes;
    if (bench_parse_ints(CMD, "--qps", qps, 0, VIDK_ENC_MAX_QP, b->qps, &b->nqps) < 0 ||
        bench_parse_ints(CMD, "--ranges", ranges, 0, VIDK_ME_MAX_RANGE, b->ranges,
                         &b->nranges) < 0)
        goto done;
    for (int i = 0; i < b->nqps; i++)
        for (int j = 0; j < i; j++)
            if (b->qps[i] == b->qps[j]) {
                cli_error(CMD, "--qps: QP %d twice", b->qps[i]);
                goto done;
            }
    if ((b->npresets = bench_split_list(CMD, "--presets", presets, b->presets[0],
                                        sizeof(b->presets[0]), MAX_PRESETS)) < 0)
        goto done;
    char sizelist[MAX_LIST][16];
    int nsizes =
        bench_split_list(CMD, "--sizes", sizes, sizelist[0], sizeof(sizelist[0]), MAX_LIST);
    if (nsizes < 0) goto done;
    if (nsizes == 1 && !strcmp(sizelist[0], "none")) nsizes = 0;
    for (int i = 0; i < nsizes; i++) {
        int w, h;
        if (bench_size_of(sizelist[i], 1, &w, &h) < 0) {
            cli_error(CMD, "--sizes: '%s' is not cif, 720p, 1080p, 2160p or WxH (even)",
                      sizelist[i]);
            goto done;
        }
    }
    char cliplist[MAX_LIST][64];
    const int nclips =
        bench_split_list(CMD, "--clips", clips, cliplist[0], sizeof(cliplist[0]), MAX_LIST);
    if (nclips < 0) goto done;
#if VIDK_BENCH_X264
    b->use_x264 = !no_x264;
    for (int p = 0; b->use_x264 && p < b->npresets; p++) {
        int k = 0;
        while (x264_preset_names[k] && strcmp(x264_preset_names[k], b->presets[p]))
            k++;
        if (!x264_preset_names[k]) {
            cli_error(CMD, "--presets: '%s' is not an x264 preset (ultrafast .. placebo)",
                      b->presets[p]);
            goto done;
        }
    }
#else
    (void)no_x264;
    b->use_x264 = 0;
    bench_note(&b->notes, "x264 absent: vidkern-bench was built without libx264 (pkg-config "
                          "x264 not found at configure time): vidkern rows only, no BD-rate");
    if (!c.quiet)
        fprintf(stderr, "vidkern-bench rd: x264 absent (built without libx264): vidkern "
                        "rows only\n");
#endif
    if (!(b->ctx = cli_open(&c, CMD))) goto done;
    if (vidk_get_backend(b->ctx) == VIDK_BACKEND_THREADS)
        snprintf(b->backend, sizeof(b->backend), "threads(%d)", vidk_get_threads(b->ctx));
    else
        snprintf(b->backend, sizeof(b->backend), "%s",
                 vidk_backend_name(vidk_get_backend(b->ctx)));
    if (plot_dir) {
        if (bench_make_dir(plot_dir) < 0) {
            cli_error(CMD, "--plot-dir: cannot create folder '%s'", plot_dir);
            goto done;
        }
        snprintf(csv_path, sizeof(csv_path), "%s/rd.csv", plot_dir);
    }
    if (!(b->src = calloc(MAX_SRC, sizeof(RdSource)))) goto oom;

    /* Sources: the clips, then mosaics of them; generated video when asked or when no
     * clip is found. */
    const char *dir = o.video ? o.video : mosaic_default_video_dir();
    int want_real = source != 1, want_gen = source != 0, have_clips = 0;
    if (want_real) {
        nnames = mosaic_list_dir(dir, ".y4m", names, MAX_SRC);
        have_clips = bench_open_mosaic(&mosaic, dir, CMD, c.quiet) == 0;
        if (!have_clips) {
            bench_note(&b->notes,
                       "no real clips found (%s): generated video at --sizes instead",
                       dir ? dir : "no folder; set --video DIR or VIDK_VIDEO_DIR");
            want_gen = 1;
        }
    }
    bench_meta_fill(&b->mt, "vidkern-bench rd", argc, argv,
                    vidk_get_backend(b->ctx) == VIDK_BACKEND_CUDA ? c.device : -1);
    bench_say_start(CMD, &b->mt, c.quiet);
    for (int i = 0; have_clips && i < nnames && b->nsrc < MAX_SRC; i++) {
        if (!clip_wanted(names[i], cliplist, nclips)) continue;
        char path[4096], why[300] = "";
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        RdSource *s = &b->src[b->nsrc];
        memset(s, 0, sizeof(*s));
        const int k = load_clip(&fr, path, b->frames, &s->read, &s->fps_num, &s->fps_den, why,
                                sizeof(why));
        if (k < 0) goto oom;
        if (!k) {
            bench_note(&b->notes, "clip %s skipped: %s", names[i], why);
            if (!c.quiet) fprintf(stderr, "vidkern-bench rd: %s skipped: %s\n", names[i], why);
            continue;
        }
        snprintf(s->name, sizeof(s->name), "%s", names[i]);
        snprintf(s->kind, sizeof(s->kind), "clip");
        s->w = fr.w, s->h = fr.h, s->frames = fr.n;
        if (s->fps_num <= 0 || s->fps_den <= 0) s->fps_num = 25, s->fps_den = 1;
        if (s->read < s->frames)
            bench_note(&b->notes, "%s has %d frames: played forwards then backwards up to %d",
                       names[i], s->read, s->frames);
        if (!c.quiet)
            fprintf(stderr, "vidkern-bench rd: %s, %dx%d, %d frames\n", s->name, s->w, s->h,
                    s->frames);
        b->nsrc++;
        run_source(b, s, &fr, c.quiet, &failures);
        frames_free(&fr, b->ctx);
    }
    for (int kind = 0; kind < 2; kind++) {
        if (kind == 0 && !have_clips) continue;
        if (kind == 1 && !want_gen) continue;
        if (kind == 0 && nsizes) bench_note(&b->notes, "mosaics: %s", mosaic_describe(mosaic));
        for (int i = 0; i < nsizes && b->nsrc < MAX_SRC; i++) {
            int w, h;
            bench_size_of(sizelist[i], 1, &w, &h);
            RdSource *s = &b->src[b->nsrc];
            memset(s, 0, sizeof(*s));
            if (load_rendered(&fr, kind == 0 ? mosaic : NULL, w, h, b->frames) < 0) {
                cli_error(CMD, "cannot prepare %d frames of %dx%d: out of memory?", b->frames,
                          w, h);
                goto done;
            }
            snprintf(s->name, sizeof(s->name), "%s %dx%d", kind == 0 ? "mosaic" : "generated",
                     w, h);
            snprintf(s->kind, sizeof(s->kind), kind == 0 ? "mosaic" : "gen");
            s->w = w, s->h = h, s->frames = s->read = b->frames;
            s->fps_num = 25, s->fps_den = 1;
            if (!c.quiet)
                fprintf(stderr, "vidkern-bench rd: %s, %d frames\n", s->name, s->frames);
            b->nsrc++;
            run_source(b, s, &fr, c.quiet, &failures);
            frames_free(&fr, b->ctx);
        }
    }
    if (!b->nsrc) {
        cli_error(CMD, "no source to code (see --clips, --sizes, --source)");
        goto done;
    }
    if (brd_any_estimated(b))
        bench_note(&b->notes, "estimate: no stream: this build's coding loop writes no H.264 "
                              "stream yet; vidkern's bits are the loop's Exp-Golomb estimate");
    brd_print_report(stdout, b, 0);
    ret = 0;
    if (bench_write_outputs(CMD, plot_dir ? csv_path : NULL, o.json, o.md, brd_write_report,
                            b) < 0)
        ret = 1;
    if (bench_verdict(CMD, 0, "", failures)) ret = 1;
    goto done;
oom:
    cli_error(CMD, "out of memory");
done:
    frames_free(&fr, b->ctx);
    mosaic_close(&mosaic);
    for (int i = 0; i < nnames; i++)
        free(names[i]);
    vidk_close(&b->ctx);
    free(b->src);
    free(b);
    return ret;
}
