// H.264 on the device: the frame inverse by the fast dense kernel (opts.dense_vec) and the
// dense baseline. Overview in h264.cu.
#define VIDK_H264_OWNS_VEC_KERNEL
#include "h264_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_h264host {

// ---- frame inverse by the fast dense kernel (opts.dense_vec)
// ------------------------------------

// Row copies on the host (staging of whatever the caller did not register), over the pool:
// each segment is `rows` rows of `width` bytes, split into jobs of about 64 KB.
constexpr int kMaxSegs = 8;
struct CopySeg {
    uint8_t *dst;
    const uint8_t *src;
    size_t dp, sp, width;
    int rows, per; // rows, rows per job
};
struct CopyList {
    CopySeg seg[kMaxSegs];
    int n, first[kMaxSegs + 1]; // first job of each segment
};

void copy_add(CopyList *cl, void *dst, size_t dp, const void *src, size_t sp, size_t width,
              int rows) {
    if (!width || rows <= 0) return;
    CopySeg *g = &cl->seg[cl->n++];
    g->dst = static_cast<uint8_t *>(dst), g->src = static_cast<const uint8_t *>(src);
    g->dp = dp, g->sp = sp, g->width = width, g->rows = rows;
    g->per = (int)(65536 / width) + 1;
}

void copy_job(void *arg, int job, int) {
    const CopyList *cl = static_cast<const CopyList *>(arg);
    int k = 0;
    while (job >= cl->first[k + 1])
        k++;
    const CopySeg *g = &cl->seg[k];
    const int r0 = (job - cl->first[k]) * g->per, r1 = imin(r0 + g->per, g->rows);
    for (int r = r0; r < r1; r++)
        memcpy(g->dst + (size_t)r * g->dp, g->src + (size_t)r * g->sp, g->width);
}

void copy_run(CopyList *cl, VidkThreadPool *pool) {
    cl->first[0] = 0;
    for (int k = 0; k < cl->n; k++)
        cl->first[k + 1] =
            cl->first[k] + (cl->seg[k].rows + cl->seg[k].per - 1) / cl->seg[k].per;
    if (cl->first[cl->n]) vidk_pool_run(pool, cl->first[cl->n], copy_job, cl);
}

constexpr size_t kTab4 = 6 * 6 * 16 * 4, kTab8 = 6 * 6 * 64 * 4; // int32 LevelScale tables

// The whole frame in bands of macroblock rows, band j on stream j % streams: its level,
// macroblock and prediction rows up (straight from registered caller memory, else through
// the pinned slot), the kernel on the band's macroblocks, its reconstruction rows down
// (straight into a registered picture, else to the pinned slot and row copies on the host
// while later bands run). Bands are independent: a macroblock's blocks and DC groups lie in
// its own rows.
int dense_vec_inverse(Exec *x, const VidkH264CoefFrame *fr, VidkPicture *pic, const Plan *pl,
                      VidkThreadPool *pool) {
    int err = 0;
    const VidkH264CudaOpts &o = pl->o;
    const int np = n_planes(fr->chroma), mb_w = fr->mb_w, mb_h = fr->mb_h;
    const int mh_c = fr->chroma == VIDK_CHROMA_422 ? 16 : 8;
    const size_t mbs = (size_t)mb_w * mb_h;
    size_t coef_off[3] = {0, 0, 0}, pic_off[3] = {0, 0, 0}, mb_off, total, off = 0;
    bool coef_d[3] = {false, false, false}, pic_d[3] = {false, false, false}, mb_d, any_staged,
         pic_staged = false;
    uint8_t *h_common = nullptr, *d_common = nullptr, *h_buf = nullptr, *d_buf = nullptr;
    int ev[kMaxChunks], nband, rows, next = 0, ev_common = -1;
    VecArgs a;
    unsigned threads;
    // Write back band jj's reconstruction rows of the planes that went through the slot.
    auto unpack = [&](int jj) {
        CopyList cl;
        cl.n = 0;
        for (int p = 0; p < np; p++) {
            if (pic_d[p]) continue;
            const int mh = p ? mh_c : 16, pw = fr->plane_w[p];
            const int y0 = jj * rows * mh, y1 = imin((jj + 1) * rows, mb_h) * mh;
            copy_add(&cl, static_cast<uint8_t *>(pic->data[p]) + (ptrdiff_t)y0 * pic->stride[p],
                     (size_t)pic->stride[p], h_buf + pic_off[p] + (size_t)y0 * pw, (size_t)pw,
                     (size_t)pw, y1 - y0);
        }
        copy_run(&cl, pool);
    };

    memset(&a, 0, sizeof(a));
    for (int p = 0; p < np; p++) {
        const int pw = fr->plane_w[p], ph = fr->plane_h[p];
        coef_off[p] = off;
        off = align_up(off + (size_t)pw * ph * 2, kAlign);
        coef_d[p] = !o.staged && pinned(x, fr->coef[p], (size_t)pw * ph * 2);
        pic_d[p] = !o.staged && plane_pinned(x, pic, p, pw, ph);
        pic_staged |= !pic_d[p];
    }
    mb_off = off;
    off = align_up(off + mbs * 4, kAlign);
    mb_d = !o.staged && pinned(x, fr->mb, mbs * 4);
    for (int p = 0; p < np; p++) {
        pic_off[p] = off;
        off = align_up(off + (size_t)fr->plane_w[p] * fr->plane_h[p], kAlign);
    }
    total = off;
    any_staged = !mb_d || pic_staged;
    for (int p = 0; p < np; p++)
        any_staged |= !coef_d[p];
    if ((err = buf(x, SLOT_COMMON, true, kTab4 + kTab8, &h_common)) < 0 ||
        (err = buf(x, SLOT_COMMON, false, kTab4 + kTab8, &d_common)) < 0 ||
        (err = buf(x, SLOT_DENSE_IN, false, total, &d_buf)) < 0 ||
        (any_staged && (err = buf(x, SLOT_DENSE_IN, true, total, &h_buf)) < 0))
        return err;
    {
        int16_t t4[6 * 6 * 16], t8[6 * 6 * 64];
        level_scales(t4, t8, &fr->scaling);
        int32_t *w = reinterpret_cast<int32_t *>(h_common);
        for (int i = 0; i < 6 * 6 * 16; i++)
            w[i] = t4[i];
        for (int i = 0; i < 6 * 6 * 64; i++)
            w[6 * 6 * 16 + i] = t8[i];
    }
    for (int p = 0; p < np; p++) {
        a.coef[p] = reinterpret_cast<const int16_t *>(d_buf + coef_off[p]);
        a.pic[p] = d_buf + pic_off[p];
        a.cw[p] = fr->plane_w[p];
    }
    a.mb = reinterpret_cast<const uint32_t *>(d_buf + mb_off);
    a.mb_w = mb_w;
    a.chroma = fr->chroma == VIDK_CHROMA_400 ? 0 : fr->chroma == VIDK_CHROMA_420 ? 1 : 2;
    a.ls4 = reinterpret_cast<const int32_t *>(d_common);
    a.ls8 = reinterpret_cast<const int32_t *>(d_common + kTab4);
    threads = (unsigned)vec_threads(a.chroma);

    // Bands: one per stream when every copy is direct (each band costs about 18 API calls),
    // two per stream when the host stages (its row copies overlap the earlier bands'
    // transfers); at most kMaxChunks.
    rows = o.chunk
               ? o.chunk
               : (mb_h + (any_staged ? 2 : 1) * pl->ns - 1) / ((any_staged ? 2 : 1) * pl->ns);
    if (!o.pipeline || rows > mb_h) rows = mb_h;
    if (rows < 1) rows = 1;
    if ((mb_h + rows - 1) / rows > kMaxChunks) rows = (mb_h + kMaxChunks - 1) / kMaxChunks;
    nband = (mb_h + rows - 1) / rows;

    if ((err = timing_start(x)) < 0 || (err = stage(x, VIDK_CUDA_STAGE_H2D, true, 0, 0)) < 0 ||
        (err = h2d(x, d_common, h_common, kTab4 + kTab8, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_H2D, false, 0, kTab4 + kTab8)) < 0 ||
        (ev_common = event_record(x, 0)) < 0)
        return ev_common < 0 && !err ? ev_common : err;
    for (int i = 1; i < pl->ns; i++)
        if ((err = event_wait(x, i, ev_common)) < 0) return err;
    for (int j = 0; j < nband; j++) {
        const int s = o.pipeline ? j % pl->ns : 0;
        const int my0 = j * rows, my1 = imin(my0 + rows, mb_h);
        const size_t mb0 = (size_t)my0 * mb_w, nmb = (size_t)(my1 - my0) * mb_w;
        size_t up = 0, down = 0;
        // Host staging of the band (the parts the caller did not register).
        CopyList cl;
        cl.n = 0;
        for (int p = 0; p < np; p++) {
            const int mh = p ? mh_c : 16, pw = fr->plane_w[p], y0 = my0 * mh,
                      nr = (my1 - my0) * mh;
            if (!coef_d[p])
                copy_add(&cl, h_buf + coef_off[p] + (size_t)y0 * pw * 2, (size_t)pw * 2,
                         fr->coef[p] + (size_t)y0 * pw, (size_t)pw * 2, (size_t)pw * 2, nr);
            if (!pic_d[p])
                copy_add(&cl, h_buf + pic_off[p] + (size_t)y0 * pw, (size_t)pw,
                         static_cast<const uint8_t *>(pic->data[p]) +
                             (ptrdiff_t)y0 * pic->stride[p],
                         (size_t)pic->stride[p], (size_t)pw, nr);
        }
        if (!mb_d) copy_add(&cl, h_buf + mb_off + mb0 * 4, 0, fr->mb + mb0, 0, nmb * 4, 1);
        copy_run(&cl, pool);
        if ((err = stage(x, VIDK_CUDA_STAGE_H2D, true, s, 0)) < 0) return err;
        for (int p = 0; p < np; p++) {
            const int mh = p ? mh_c : 16, pw = fr->plane_w[p], y0 = my0 * mh,
                      nr = (my1 - my0) * mh;
            const size_t cb = (size_t)nr * pw * 2, co = coef_off[p] + (size_t)y0 * pw * 2;
            const uint8_t *csrc =
                coef_d[p] ? reinterpret_cast<const uint8_t *>(fr->coef[p] + (size_t)y0 * pw)
                          : h_buf + co;
            if ((err = h2d(x, d_buf + co, csrc, cb, s)) < 0) return err;
            const size_t po = pic_off[p] + (size_t)y0 * pw;
            err = pic_d[p] ? h2d_2d(x, d_buf + po, (size_t)pw,
                                    static_cast<const uint8_t *>(pic->data[p]) +
                                        (ptrdiff_t)y0 * pic->stride[p],
                                    (size_t)pic->stride[p], (size_t)pw, (size_t)nr, s)
                           : h2d(x, d_buf + po, h_buf + po, (size_t)nr * pw, s);
            if (err < 0) return err;
            up += cb + (size_t)nr * pw;
        }
        if ((err = h2d(x, d_buf + mb_off + mb0 * 4,
                       mb_d ? reinterpret_cast<const uint8_t *>(fr->mb + mb0)
                            : h_buf + mb_off + mb0 * 4,
                       nmb * 4, s)) < 0 ||
            (err = stage(x, VIDK_CUDA_STAGE_H2D, false, s, up + nmb * 4)) < 0 ||
            (err = stage(x, VIDK_CUDA_STAGE_KERNEL, true, s, 0)) < 0)
            return err;
        a.mb0 = (uint32_t)mb0, a.mb1 = (uint32_t)(mb0 + nmb);
        const unsigned grid = (unsigned)((nmb + kVecRun - 1) / kVecRun);
        if (x->emu) {
            emu_vec(a, grid, (int)threads);
        } else {
            vec_kernel<<<grid, threads, 0, x->st[s]>>>(a);
            if ((err = exec_launched(x)) < 0) return err;
        }
        if ((err = stage(x, VIDK_CUDA_STAGE_KERNEL, false, s, 0)) < 0 ||
            (err = stage(x, VIDK_CUDA_STAGE_D2H, true, s, 0)) < 0)
            return err;
        for (int p = 0; p < np; p++) {
            const int mh = p ? mh_c : 16, pw = fr->plane_w[p], y0 = my0 * mh,
                      nr = (my1 - my0) * mh;
            const size_t po = pic_off[p] + (size_t)y0 * pw;
            err = pic_d[p] ? d2h_2d(x,
                                    static_cast<uint8_t *>(pic->data[p]) +
                                        (ptrdiff_t)y0 * pic->stride[p],
                                    (size_t)pic->stride[p], d_buf + po, (size_t)pw, (size_t)pw,
                                    (size_t)nr, s)
                           : d2h(x, h_buf + po, d_buf + po, (size_t)nr * pw, s);
            if (err < 0) return err;
            down += (size_t)nr * pw;
        }
        if ((err = stage(x, VIDK_CUDA_STAGE_D2H, false, s, down)) < 0) return err;
        if ((ev[j] = event_record(x, s)) < 0) return ev[j];
        // Write back the bands that have landed, in order, while later ones run.
        while (pic_staged && next < j) {
            const int q = event_query(x, ev[next]);
            if (q < 0) return q;
            if (!q) break;
            unpack(next++);
        }
    }
    for (; pic_staged && next < nband; next++) {
        if ((err = event_sync(x, ev[next])) < 0) return err;
        unpack(next);
    }
    return finish(x);
}

// ---- dense baseline
// -------------------------------------------------------------------------------

int dense_inverse(Exec *x, const VidkH264CoefFrame *fr, VidkPicture *pic,
                  const VidkH264CudaOpts &o) {
    int err = 0;
    const int np = n_planes(fr->chroma);
    const size_t mbs = (size_t)fr->mb_w * fr->mb_h;
    size_t coef_off[3] = {0, 0, 0}, pic_off[3] = {0, 0, 0}, mb_off, pic_base, in_bytes,
           out_bytes = 0, off = 0;
    uint8_t *h_common = nullptr, *d_common = nullptr, *h_in = nullptr, *d_in = nullptr,
            *h_out = nullptr, *d_out = nullptr;
    DenseArgs a;
    uint32_t cells = 0;
    unsigned grid;
    const int threads = o.threads;
    memset(&a, 0, sizeof(a));
    for (int p = 0; p < np; p++) {
        coef_off[p] = off;
        off = align_up(off + (size_t)fr->plane_w[p] * fr->plane_h[p] * 2, 64);
    }
    mb_off = off;
    off = align_up(off + mbs * 4, 64);
    pic_base = off;
    for (int p = 0; p < np; p++) {
        pic_off[p] = off - pic_base;
        off = align_up(off + (size_t)fr->plane_w[p] * fr->plane_h[p], 64);
    }
    in_bytes = o.fused ? off : pic_base;
    // Fused: the picture comes back from its place in the input buffer; otherwise the
    // residual planes (the layout of the level planes).
    out_bytes = o.fused ? off - pic_base : mb_off;
    if ((err = buf(x, SLOT_COMMON, true, kLs4Bytes + kLs8Bytes, &h_common)) < 0 ||
        (err = buf(x, SLOT_COMMON, false, kLs4Bytes + kLs8Bytes, &d_common)) < 0 ||
        (err = buf(x, SLOT_DENSE_IN, true, in_bytes, &h_in)) < 0 ||
        (err = buf(x, SLOT_DENSE_IN, false, in_bytes, &d_in)) < 0 ||
        (err = buf(x, SLOT_DENSE_OUT, true, out_bytes, &h_out)) < 0 ||
        (!o.fused && (err = buf(x, SLOT_DENSE_OUT, false, out_bytes, &d_out)) < 0))
        return err;
    level_scales(reinterpret_cast<int16_t *>(h_common),
                 reinterpret_cast<int16_t *>(h_common + kLs4Bytes), &fr->scaling);
    for (int p = 0; p < np; p++) {
        const int pw = fr->plane_w[p], ph = fr->plane_h[p];
        memcpy(h_in + coef_off[p], fr->coef[p], (size_t)pw * ph * 2);
        if (o.fused)
            for (int y = 0; y < ph; y++)
                memcpy(h_in + pic_base + pic_off[p] + (size_t)y * pw,
                       static_cast<const uint8_t *>(pic->data[p]) +
                           (ptrdiff_t)y * pic->stride[p],
                       (size_t)pw);
        a.coef[p] = reinterpret_cast<const int16_t *>(d_in + coef_off[p]);
        a.cw[p] = pw;
        a.first[p] = cells;
        cells += (uint32_t)(pw / 4) * (uint32_t)(ph / 4);
        if (o.fused)
            a.pic[p] = d_in + pic_base + pic_off[p];
        else
            a.res[p] = reinterpret_cast<int16_t *>(d_out + coef_off[p]);
    }
    for (int p = np; p < 3; p++)
        a.first[p] = cells;
    a.first[3] = cells;
    memcpy(h_in + mb_off, fr->mb, mbs * 4);
    a.mb = reinterpret_cast<const uint32_t *>(d_in + mb_off);
    a.mb_w = fr->mb_w;
    a.c422 = fr->chroma == VIDK_CHROMA_422;
    a.ls4 = reinterpret_cast<const int16_t *>(d_common);
    a.ls8 = reinterpret_cast<const int16_t *>(d_common + kLs4Bytes);
    grid = (cells + (uint32_t)threads - 1) / (uint32_t)threads;

    if ((err = timing_start(x)) < 0 || (err = stage(x, VIDK_CUDA_STAGE_H2D, true, 0, 0)) < 0 ||
        (err = h2d(x, d_common, h_common, kLs4Bytes + kLs8Bytes, 0)) < 0 ||
        (err = h2d(x, d_in, h_in, in_bytes, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_H2D, false, 0, kLs4Bytes + kLs8Bytes + in_bytes)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_KERNEL, true, 0, 0)) < 0)
        return err;
    if (x->emu) {
        if (o.fused)
            emu_dense<true>(a, grid, threads);
        else
            emu_dense<false>(a, grid, threads);
    } else {
        if (o.fused)
            dense_kernel<true><<<grid, threads, 0, x->st[0]>>>(a);
        else
            dense_kernel<false><<<grid, threads, 0, x->st[0]>>>(a);
        if ((err = exec_launched(x)) < 0) return err;
    }
    if ((err = stage(x, VIDK_CUDA_STAGE_KERNEL, false, 0, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_D2H, true, 0, 0)) < 0 ||
        (err = d2h(x, h_out, o.fused ? d_in + pic_base : d_out, out_bytes, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_D2H, false, 0, out_bytes)) < 0 || (err = finish(x)) < 0)
        return err;
    for (int p = 0; p < np; p++) {
        const int pw = fr->plane_w[p], ph = fr->plane_h[p];
        for (int y = 0; y < ph; y++) {
            uint8_t *dst = static_cast<uint8_t *>(pic->data[p]) + (ptrdiff_t)y * pic->stride[p];
            if (o.fused) {
                memcpy(dst, h_out + pic_off[p] + (size_t)y * pw, (size_t)pw);
            } else {
                const int16_t *r =
                    reinterpret_cast<const int16_t *>(h_out + coef_off[p]) + (size_t)y * pw;
                for (int xx = 0; xx < pw; xx++) {
                    const int v = dst[xx] + r[xx];
                    dst[xx] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
            }
        }
    }
    return 0;
}

int frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr, VidkPicture *pic,
                  const VidkH264CudaOpts *opts, bool emu) {
    Exec x;
    Plan pl;
    int err;
    if (!ctx || (!emu && !ctx->cuda)) return ctx ? VIDK_ERR_NODEV : VIDK_ERR(EINVAL);
    if (vidk_h264_coef_frame_validate(fr) < 0 || !picture_ok(pic, fr->w, fr->h, fr->chroma)) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 frame_inverse: invalid frame or picture");
        return VIDK_ERR(EINVAL);
    }
    exec_init(&x, ctx, emu);
    if ((err = resolve(&x, opts, &pl)) < 0) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 frame_inverse: invalid options");
        return err;
    }
    if (pl.o.compact && pl.o.dense_vec) {
        // The fast dense kernel on the frame as it is.
        VidkThreadPool *pool = nullptr;
        if (!emu && (err = vidk_cuda_enter(ctx)) < 0) return err;
        err = pl.o.host ? host_pool(&x, pl.o.host_threads, &pool) : 0;
        if (err >= 0) err = dense_vec_inverse(&x, fr, pic, &pl, pool);
        exec_end(&x);
        return err;
    }
    if (pl.o.compact) {
        // Compaction on the host (the batch builder's SIMD zero tests), then the batch path.
        VidkH264Batch b;
        vidk_h264_batch_init(&b);
        err = vidk_h264_batch_build(ctx, &b, fr);
        if (err >= 0) err = batch_inverse(ctx, &b, pic, &pl.o, emu);
        vidk_h264_batch_free(&b);
        return err;
    }
    if (!emu && (err = vidk_cuda_enter(ctx)) < 0) return err;
    err = dense_inverse(&x, fr, pic, pl.o);
    exec_end(&x);
    return err;
}

} // namespace vidk_h264host
