/* H.264 coefficient workloads from video (see h264_workload.h for the encoder model). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cli.h"
#include "coeffile.h"
#include "h264_workload.h"
#include "picio.h"

static const char *const mode_names[H264W_MODE_COUNT] = {"intra", "qp22", "qp37"};
static const int mode_qps[H264W_MODE_COUNT] = {12, 22, 37};

const char *h264w_mode_name(int mode) {
    return mode >= 0 && mode < H264W_MODE_COUNT ? mode_names[mode] : "?";
}

int h264w_mode_from_name(const char *name) {
    for (int m = 0; m < H264W_MODE_COUNT; m++)
        if (!strcmp(name, mode_names[m])) return m;
    return -1;
}

int h264w_mode_qp(int mode) {
    return mode >= 0 && mode < H264W_MODE_COUNT ? mode_qps[mode] : 26;
}

void h264w_size_name(int w, int h, char *buf, size_t n) {
    if (w == 1920 && (h == 1088 || h == 1080))
        snprintf(buf, n, "1080p");
    else if (w == 3840 && h == 2160)
        snprintf(buf, n, "2160p");
    else if (w == 1280 && h == 720)
        snprintf(buf, n, "720p");
    else if (w == 352 && h == 288)
        snprintf(buf, n, "cif");
    else
        snprintf(buf, n, "%dx%d", w, h);
}

static int fail(char *err, size_t errlen, int code, const char *fmt, const char *arg) {
    if (errlen) snprintf(err, errlen, fmt, arg);
    return code;
}

/* ---- pictures ------------------------------------------------------------------- */

static int n_planes(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? 1 : 3;
}

static double psnr_luma(const VidkPicture *a, const VidkPicture *b) {
    double sse = 0;
    for (int y = 0; y < a->h; y++) {
        const uint8_t *p = (const uint8_t *)a->data[0] + (ptrdiff_t)y * a->stride[0];
        const uint8_t *q = (const uint8_t *)b->data[0] + (ptrdiff_t)y * b->stride[0];
        for (int x = 0; x < a->w; x++) {
            const int d = p[x] - q[x];
            sse += d * d;
        }
    }
    if (sse == 0) return 99.0;
    return 10 * log10(255.0 * 255.0 * a->w * a->h / sse);
}

/* ---- encoder model ------------------------------------------------------------------ */

/* Mean absolute deviation of a 16x16 luma block from its mean. */
static double activity(const uint8_t *s, ptrdiff_t ss) {
    int sum = 0, dev = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            sum += s[y * ss + x];
    const int mean = (sum + 128) >> 8;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            dev += abs(s[y * ss + x] - mean);
    return dev / 256.0;
}

/* Best of vertical, horizontal and DC prediction (H.264 modes 0, 1, 2) of the n x n block
 * at (x0, y0) from the source samples above and to the left of it. */
static void intra_block(const uint8_t *s, ptrdiff_t ss, uint8_t *p, ptrdiff_t ps, int x0,
                        int y0, int n) {
    const uint8_t *blk = s + (ptrdiff_t)y0 * ss + x0;
    uint8_t *out = p + (ptrdiff_t)y0 * ps + x0;
    const int top = y0 > 0, left = x0 > 0;
    int sum = 0, cnt = 0;
    if (top)
        for (int i = 0; i < n; i++)
            sum += blk[-ss + i];
    if (left)
        for (int i = 0; i < n; i++)
            sum += blk[i * ss - 1];
    cnt = (top + left) * n;
    const int dc = cnt ? (sum + cnt / 2) / cnt : 128;
    long sad[3] = {0, top ? 0 : -1, left ? 0 : -1}; /* DC, V, H; -1 = unavailable */
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            const int v = blk[y * ss + x];
            sad[0] += abs(v - dc);
            if (top) sad[1] += abs(v - blk[-ss + x]);
            if (left) sad[2] += abs(v - blk[y * ss - 1]);
        }
    int best = 0;
    for (int m = 1; m < 3; m++)
        if (sad[m] >= 0 && sad[m] < sad[best]) best = m;
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++)
            out[y * ps + x] = (uint8_t)(best == 0   ? dc
                                        : best == 1 ? blk[-ss + x]
                                                    : blk[y * ss - 1]);
}

static void set_qp(VidkH264MbInfo *mb, int qp, VidkChroma chroma) {
    const int qpc = chroma == VIDK_CHROMA_400 ? 0 : vidk_h264_chroma_qp(qp, 0, 8);
    mb->qp[0] = (uint8_t)qp;
    mb->qp[1] = mb->qp[2] = (uint8_t)qpc;
}

/* Intra frame: macroblock types by activity, open-loop prediction into pred. */
static void intra_frame(const VidkPicture *src, VidkH264CoefFrame *fr, VidkPicture *pred,
                        int qp) {
    const uint8_t *s = src->data[0];
    const ptrdiff_t ss = src->stride[0];
    for (int my = 0; my < fr->mb_h; my++)
        for (int mx = 0; mx < fr->mb_w; mx++) {
            VidkH264MbInfo *mb = &fr->mb[my * fr->mb_w + mx];
            const int x0 = 16 * mx, y0 = 16 * my;
            const double a = activity(s + (ptrdiff_t)y0 * ss + x0, ss);
            set_qp(mb, qp, fr->chroma);
            int n;
            if (a < H264W_ACT_I16) {
                mb->flags = VIDK_H264_MB_INTRA | VIDK_H264_MB_I16x16;
                n = 16;
            } else if (a < H264W_ACT_8x8) {
                mb->flags = VIDK_H264_MB_INTRA | VIDK_H264_MB_8x8;
                n = 8;
            } else {
                mb->flags = VIDK_H264_MB_INTRA;
                n = 4;
            }
            for (int by = 0; by < 16; by += n)
                for (int bx = 0; bx < 16; bx += n)
                    intra_block(s, ss, pred->data[0], pred->stride[0], x0 + bx, y0 + by, n);
            for (int p = 1; p < n_planes(fr->chroma); p++) {
                const int ch = fr->chroma == VIDK_CHROMA_422 ? 16 : 8;
                for (int by = 0; by < ch; by += 8)
                    intra_block(src->data[p], src->stride[p], pred->data[p], pred->stride[p],
                                8 * mx, ch * my + by, 8);
            }
        }
}

static double sad_lambda(int qp) {
    return sqrt(0.85 * pow(2.0, (qp - 12) / 3.0));
}

static void copy_block(uint8_t *d, ptrdiff_t ds, const uint8_t *s, ptrdiff_t sstr, int w,
                       int h) {
    for (int y = 0; y < h; y++)
        memcpy(d + (ptrdiff_t)y * ds, s + (ptrdiff_t)y * sstr, (size_t)w);
}

/* P frame: 16x16 or four 8x8 vectors per macroblock, integer-pel prediction from ref (the
 * previous reconstruction, padded by >= 32 luma samples). Returns the split count. */
static long inter_frame(const VidkPicture *src, const VidkPicture *ref, const VidkMeField *f,
                        VidkH264CoefFrame *fr, VidkPicture *pred, int qp) {
    const long penalty = lround(24 * sad_lambda(qp));
    const int gw8 = f->grid_w[VIDK_BLOCK_8x8];
    long splits = 0;
    for (int my = 0; my < fr->mb_h; my++)
        for (int mx = 0; mx < fr->mb_w; mx++) {
            VidkH264MbInfo *mb = &fr->mb[my * fr->mb_w + mx];
            const int x0 = 16 * mx, y0 = 16 * my;
            const double a =
                activity((const uint8_t *)src->data[0] + (ptrdiff_t)y0 * src->stride[0] + x0,
                         src->stride[0]);
            set_qp(mb, qp, fr->chroma);
            mb->flags = a < H264W_ACT_8x8 ? VIDK_H264_MB_8x8 : 0;
            const VidkMeResult *r16 =
                &f->res[VIDK_BLOCK_16x16][my * f->grid_w[VIDK_BLOCK_16x16] + mx];
            const VidkMeResult *r8[4];
            long sum8 = 0;
            for (int q = 0; q < 4; q++) {
                r8[q] = &f->res[VIDK_BLOCK_8x8][(2 * my + (q >> 1)) * gw8 + 2 * mx + (q & 1)];
                sum8 += r8[q]->sad;
            }
            const int split = sum8 + penalty < (long)r16->sad;
            splits += split;
            for (int q = 0; q < 4; q++) {
                const VidkMv mv = split ? r8[q]->mv : r16->mv;
                const int bx = x0 + 8 * (q & 1), by = y0 + 8 * (q >> 1);
                copy_block((uint8_t *)pred->data[0] + (ptrdiff_t)by * pred->stride[0] + bx,
                           pred->stride[0],
                           (const uint8_t *)ref->data[0] +
                               (ptrdiff_t)(by + mv.y) * ref->stride[0] + bx + mv.x,
                           ref->stride[0], 8, 8);
                /* Integer-pel chroma: the luma vector halved, rounded down (4:2:0). */
                for (int p = 1; p < n_planes(fr->chroma); p++) {
                    const int cx = bx / 2, cy = by / 2, cmx = mv.x >> 1, cmy = mv.y >> 1;
                    copy_block((uint8_t *)pred->data[p] + (ptrdiff_t)cy * pred->stride[p] + cx,
                               pred->stride[p],
                               (const uint8_t *)ref->data[p] +
                                   (ptrdiff_t)(cy + cmy) * ref->stride[p] + cx + cmx,
                               ref->stride[p], 4, 4);
                }
            }
        }
    return splits;
}

/* ---- motion --------------------------------------------------------------------------- */

void h264w_motion_free(H264wMotion *mo) {
    if (!mo) return;
    for (int i = 0; i < mo->n; i++)
        vidk_me_field_free(&mo->field[i]);
    free(mo->field);
    memset(mo, 0, sizeof(*mo));
}

int h264w_motion(VidkContext *ctx, const VidkPicture *src, int nsrc, H264wMotion *mo, char *err,
                 size_t errlen) {
    memset(mo, 0, sizeof(*mo));
    if (nsrc < 2) return 0;
    mo->field = calloc((size_t)nsrc - 1, sizeof(*mo->field));
    if (!mo->field) return fail(err, errlen, VIDK_ERR(ENOMEM), "%s", "out of memory");
    VidkMeParams mp;
    vidk_me_default_params(&mp);
    mp.range = H264W_RANGE;
    mp.shapes = VIDK_ME_SHAPE(VIDK_BLOCK_16x16) | VIDK_ME_SHAPE(VIDK_BLOCK_8x8);
    const double t0 = cli_now();
    for (int k = 0; k + 1 < nsrc; k++) {
        int e = vidk_me_field_alloc(&mo->field[k], src[k].w, src[k].h, mp.shapes);
        if (e >= 0) {
            mo->n = k + 1;
            e = vidk_me_search(ctx, &src[k + 1], &src[k], &mp, &mo->field[k]);
        }
        if (e < 0) {
            h264w_motion_free(mo);
            return fail(err, errlen, e, "motion search: %s", vidk_strerror(e));
        }
    }
    mo->seconds = cli_now() - t0;
    return 0;
}

/* ---- workloads -------------------------------------------------------------------------- */

void h264w_free(H264Workload *wl) {
    if (!wl) return;
    for (int i = 0; i < wl->nframes; i++) {
        if (wl->fr) vidk_h264_coef_frame_free(&wl->fr[i]);
        if (wl->batch) vidk_h264_batch_free(&wl->batch[i]);
        if (wl->pred) vidk_picture_free(&wl->pred[i]);
    }
    free(wl->fr);
    free(wl->batch);
    free(wl->pred);
    memset(wl, 0, sizeof(*wl));
}

static int wl_alloc(H264Workload *wl, int n) {
    wl->fr = calloc((size_t)n, sizeof(*wl->fr));
    wl->batch = calloc((size_t)n, sizeof(*wl->batch));
    wl->pred = calloc((size_t)n, sizeof(*wl->pred));
    if (!wl->fr || !wl->batch || !wl->pred) return VIDK_ERR(ENOMEM);
    for (int i = 0; i < n; i++)
        vidk_h264_batch_init(&wl->batch[i]);
    wl->nframes = n;
    return 0;
}

int h264w_count(H264Workload *wl) {
    H264wStats *st = &wl->stats;
    const long split = st->mb_split;
    const double psnr = st->psnr_y, prep = st->prep_s;
    memset(st, 0, sizeof(*st));
    st->mb_split = split, st->psnr_y = psnr, st->prep_s = prep;
    for (int i = 0; i < wl->nframes; i++) {
        VidkH264Bytes by;
        const int e = vidk_h264_bytes(&wl->fr[i], &wl->batch[i], &by);
        if (e < 0) return e;
        for (int c = 0; c < 2; c++) {
            st->blocks[c] += by.blocks[c];
            st->blocks_total[c] += by.blocks_total[c];
        }
        st->dc_groups += by.dc_groups;
        st->nonzero += by.nonzero;
        st->bytes_dense += by.dense;
        st->bytes_compacted += by.compacted;
        st->bytes_sparse += by.sparse;
        const VidkH264CoefFrame *fr = &wl->fr[i];
        for (int m = 0; m < fr->mb_w * fr->mb_h; m++) {
            const int fl = fr->mb[m].flags;
            st->mb_total++;
            st->mb_intra += !!(fl & VIDK_H264_MB_INTRA);
            st->mb_i16 += !!(fl & VIDK_H264_MB_I16x16);
            st->mb_8x8 += !!(fl & VIDK_H264_MB_8x8);
        }
    }
    return 0;
}

int h264w_build(VidkContext *ctx, const VidkPicture *src, int nsrc, const H264wMotion *mo,
                int mode, H264Workload *wl, char *err, size_t errlen) {
    memset(wl, 0, sizeof(*wl));
    if (nsrc < 2 || mode < 0 || mode >= H264W_MODE_COUNT)
        return fail(err, errlen, VIDK_ERR(EINVAL), "%s", "bad workload arguments");
    const int w = src[0].w, h = src[0].h, qp = h264w_mode_qp(mode);
    const int inter = mode != H264W_INTRA;
    if (w % 16 || h % 16 || src[0].bitdepth != 8 || src[0].chroma != VIDK_CHROMA_420 ||
        (inter && (!mo || mo->n < nsrc - 1)))
        return fail(err, errlen, VIDK_ERR(EINVAL), "%s",
                    "sources must be 8-bit 4:2:0 with sides multiple of 16 (and motion)");
    const double t0 = cli_now();
    VidkPicture rec[2];
    VidkH264CoefFrame ifr;
    VidkH264Batch ib;
    memset(rec, 0, sizeof(rec));
    memset(&ifr, 0, sizeof(ifr));
    vidk_h264_batch_init(&ib);
    int e = wl_alloc(wl, nsrc - 1);
    if (e < 0) goto oom;
    wl->w = w, wl->h = h;
    h264w_size_name(w, h, wl->size_name, sizeof(wl->size_name));
    snprintf(wl->mode_name, sizeof(wl->mode_name), "%s", h264w_mode_name(mode));
    wl->stats.mb_split = inter ? 0 : -1;
    if ((e = vidk_picture_alloc(&rec[0], w, h, VIDK_CHROMA_420, 8, 64)) < 0 ||
        (e = vidk_picture_alloc(&rec[1], w, h, VIDK_CHROMA_420, 8, 64)) < 0)
        goto oom;
    int cur = 0; /* rec[cur]: reconstruction of the previous frame (inter) */
    if (inter) {
        /* The sequence's first frame: intra at the mode's QP, reference of frame 1. */
        VidkPicture *ip = &rec[1];
        if ((e = vidk_h264_coef_frame_alloc(&ifr, w, h, VIDK_CHROMA_420, 8)) < 0) goto oom;
        intra_frame(&src[0], &ifr, ip, qp);
        bench_copy_pic(&rec[0], ip);
        if ((e = vidk_h264_batch_forward(ctx, &src[0], ip, &ifr, &ib)) < 0 ||
            (e = vidk_h264_batch_inverse(ctx, &ib, &rec[0])) < 0)
            goto fail_e;
        vidk_picture_pad_edges(&rec[0]);
    }
    double psnr = 0;
    for (int i = 0; i < wl->nframes; i++) {
        const VidkPicture *s = &src[i + 1];
        VidkPicture *pr = &wl->pred[i];
        VidkPicture *out = &rec[cur ^ 1];
        if ((e = vidk_h264_coef_frame_alloc(&wl->fr[i], w, h, VIDK_CHROMA_420, 8)) < 0 ||
            (e = vidk_picture_alloc(pr, w, h, VIDK_CHROMA_420, 8, 0)) < 0)
            goto oom;
        if (inter)
            wl->stats.mb_split += inter_frame(s, &rec[cur], &mo->field[i], &wl->fr[i], pr, qp);
        else
            intra_frame(s, &wl->fr[i], pr, qp);
        if ((e = vidk_h264_batch_forward(ctx, s, pr, &wl->fr[i], &wl->batch[i])) < 0)
            goto fail_e;
        bench_copy_pic(out, pr);
        if ((e = vidk_h264_batch_inverse(ctx, &wl->batch[i], out)) < 0) goto fail_e;
        vidk_picture_pad_edges(out);
        psnr += psnr_luma(out, s);
        cur ^= 1;
    }
    wl->stats.psnr_y = psnr / wl->nframes;
    if ((e = h264w_count(wl)) < 0) goto fail_e;
    wl->stats.prep_s = cli_now() - t0;
    vidk_picture_free(&rec[0]);
    vidk_picture_free(&rec[1]);
    vidk_h264_coef_frame_free(&ifr);
    vidk_h264_batch_free(&ib);
    return 0;
oom:
    if (e == 0 || e == VIDK_ERR(ENOMEM)) e = VIDK_ERR(ENOMEM);
fail_e:
    fail(err, errlen, e, "making the workload: %s", vidk_strerror(e));
    vidk_picture_free(&rec[0]);
    vidk_picture_free(&rec[1]);
    vidk_h264_coef_frame_free(&ifr);
    vidk_h264_batch_free(&ib);
    h264w_free(wl);
    return e;
}

/* ---- files ------------------------------------------------------------------------------ */

int h264w_save(const H264Workload *wl, const char *dir, char *err, size_t errlen) {
    char path[4096], tmp[4200], msg[512];
    snprintf(path, sizeof(path), "%s/%s_%s.vkcf", dir, wl->size_name, wl->mode_name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return fail(err, errlen, VIDK_ERR(errno ? errno : EIO), "%s: cannot create", tmp);
    int e = 0;
    for (int i = 0; i < wl->nframes && e >= 0; i++)
        e = coeffile_write(f, &wl->fr[i]);
    const int bad = ferror(f);
    if (fclose(f) || bad || e < 0 || rename(tmp, path)) {
        remove(tmp);
        return fail(err, errlen, VIDK_ERR(EIO), "%s: write error", path);
    }
    snprintf(path, sizeof(path), "%s/%s_%s.pred.y4m", dir, wl->size_name, wl->mode_name);
    VioFormat fmt;
    vio_format_default(&fmt);
    fmt.w = wl->w, fmt.h = wl->h, fmt.chroma = wl->pred[0].chroma, fmt.bitdepth = 8;
    VioWriter *wr = NULL;
    if ((e = vio_writer_open(&wr, path, &fmt, 0, msg, sizeof(msg))) < 0)
        return fail(err, errlen, e, "%s", msg);
    for (int i = 0; i < wl->nframes && e >= 0; i++)
        if ((e = vio_writer_write(wr, &wl->pred[i])) < 0)
            snprintf(msg, sizeof(msg), "%s", vio_writer_error(wr));
    if (e < 0) {
        vio_writer_close(&wr);
        remove(path);
        return fail(err, errlen, e, "%s", msg);
    }
    if ((e = vio_writer_close_msg(&wr, msg, sizeof(msg))) < 0) {
        remove(path);
        return fail(err, errlen, e, "%s", msg);
    }
    return 0;
}

/* The predictions of a loaded workload from <stem>.pred.y4m; 0 when they match, 1 when the
 * file is absent or does not fit (message in why), <0 for out of memory. */
static int load_preds(H264Workload *wl, const char *ypath, char *why, size_t n) {
    VioReader *r = NULL;
    char msg[512];
    const char *yb = strrchr(ypath, '/');
    yb = yb ? yb + 1 : ypath;
    if (vio_reader_open(&r, ypath, NULL, msg, sizeof(msg)) < 0) {
        snprintf(why, n, "no prediction file %.200s", yb);
        return 1;
    }
    const VioFormat *f = vio_reader_format(r);
    int ret = 0;
    if (f->w != wl->w || f->h != wl->h || f->bitdepth != 8 || f->chroma != wl->fr[0].chroma) {
        snprintf(why, n, "%.200s does not match the coefficient frames", yb);
        ret = 1;
    }
    for (int i = 0; i < wl->nframes && !ret; i++) {
        const int e = vio_reader_read(r, &wl->pred[i]);
        if (e != 1) {
            snprintf(why, n, "%.200s: %.200s", yb,
                     e == 0 ? "too few frames" : vio_reader_error(r));
            ret = 1;
        }
    }
    vio_reader_close(&r);
    return ret;
}

int h264w_load(VidkContext *ctx, const char *path, int max_frames, H264Workload *wl, char *err,
               size_t errlen) {
    memset(wl, 0, sizeof(*wl));
    const double t0 = cli_now();
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, VIDK_ERR(errno ? errno : EIO), "%s: cannot open", path);
    VidkH264CoefFrame *frs = NULL;
    int cap = 0, n = 0, e = 0;
    const char *why = NULL;
    for (;;) {
        if (max_frames > 0 && n >= max_frames) break;
        if (n == cap) {
            const int nc = cap ? 2 * cap : 8;
            VidkH264CoefFrame *nf = realloc(frs, (size_t)nc * sizeof(*nf));
            if (!nf) {
                e = VIDK_ERR(ENOMEM);
                break;
            }
            memset(nf + cap, 0, (size_t)(nc - cap) * sizeof(*nf));
            frs = nf, cap = nc;
        }
        /* The reader frees and zeroes the frame on failure; at the end it is untouched. */
        e = coeffile_read(f, &frs[n]);
        if (e <= 0) break;
        n++;
        e = 0;
        if (frs[n - 1].w != frs[0].w || frs[n - 1].h != frs[0].h ||
            frs[n - 1].chroma != frs[0].chroma) {
            e = VIDK_ERR(EINVAL);
            why = "frames of different geometry";
            break;
        }
    }
    fclose(f);
    if (e >= 0 && !n) e = VIDK_ERR(EINVAL), why = "no coefficient frame in the file";
    if (e >= 0) e = wl_alloc(wl, n);
    if (e < 0) {
        for (int i = 0; i < cap; i++)
            vidk_h264_coef_frame_free(&frs[i]);
        free(frs);
        h264w_free(wl);
        char msg[600];
        snprintf(msg, sizeof(msg), "%.400s: %s", path, why ? why : vidk_strerror(e));
        return fail(err, errlen, e, "%s", msg);
    }
    memcpy(wl->fr, frs, (size_t)n * sizeof(*frs));
    free(frs); /* entries past n are zeroed (see above) */
    wl->w = wl->fr[0].w, wl->h = wl->fr[0].h;
    wl->stats.mb_split = -1;
    /* Names from the file's stem. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char stem[256], ypath[4200];
    snprintf(stem, sizeof(stem), "%s", base);
    const size_t sl = strlen(stem), pl = strlen(path);
    const int ext = pl > 5 && !strcmp(path + pl - 5, ".vkcf");
    if (sl > 5 && !strcmp(stem + sl - 5, ".vkcf")) stem[sl - 5] = 0;
    snprintf(ypath, sizeof(ypath), "%.*s.pred.y4m", (int)(ext ? pl - 5 : pl), path);
    h264w_size_name(wl->w, wl->h, wl->size_name, sizeof(wl->size_name));
    const size_t zl = strlen(wl->size_name);
    if (!strncmp(stem, wl->size_name, zl) && stem[zl] == '_' && stem[zl + 1])
        snprintf(wl->mode_name, sizeof(wl->mode_name), "%.47s", stem + zl + 1);
    else
        snprintf(wl->mode_name, sizeof(wl->mode_name), "%.47s", stem);
    for (int i = 0; i < n; i++)
        if ((e = vidk_picture_alloc(&wl->pred[i], wl->w, wl->h, wl->fr[i].chroma, 8, 0)) < 0 ||
            (e = vidk_h264_batch_build(ctx, &wl->batch[i], &wl->fr[i])) < 0) {
            h264w_free(wl);
            return fail(err, errlen, e, "building the batches: %s", vidk_strerror(e));
        }
    char why2[600];
    e = load_preds(wl, ypath, why2, sizeof(why2));
    if (e < 0) {
        h264w_free(wl);
        return fail(err, errlen, e, "%s", "out of memory");
    }
    if (e) {
        for (int i = 0; i < n; i++)
            for (int p = 0; p < n_planes(wl->pred[i].chroma); p++) {
                int pw, ph;
                vidk_picture_plane_size(&wl->pred[i], p, &pw, &ph);
                for (int y = 0; y < ph; y++)
                    memset((uint8_t *)wl->pred[i].data[p] +
                               (ptrdiff_t)y * wl->pred[i].stride[p],
                           128, (size_t)pw);
            }
        snprintf(wl->source, sizeof(wl->source), "%.80s, flat 128 prediction (%.120s)", base,
                 why2);
    } else {
        snprintf(wl->source, sizeof(wl->source), "%.200s with its predictions", base);
    }
    if ((e = h264w_count(wl)) < 0) {
        h264w_free(wl);
        return fail(err, errlen, e, "%s", "counting");
    }
    wl->stats.prep_s = cli_now() - t0;
    return 0;
}
