// H.264 on the device: the batch forward (residual, forward transform, quantisation and
// the non-zero counts, in bands over the streams). Overview in h264.cu.
#define VIDK_H264_OWNS_FWD_KERNEL
#include "h264_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_h264host {

// ---- forward
// ----------------------------------------------------------------------------------------

int batch_forward(VidkContext *ctx, const VidkPicture *src, const VidkPicture *pred,
                  VidkH264CoefFrame *fr, VidkH264Batch *b, const VidkH264CudaOpts *opts,
                  bool emu) {
    Exec x;
    Plan pl;
    int err = 0;
    int np, rows, nband = 0, next_unpack = 0, ev_common = -1;
    size_t mbs, in_stride = 0, out_stride = 0, band_in[3], band_out[3], common_bytes;
    uint8_t *h_common = nullptr, *d_common = nullptr, *h_in = nullptr, *d_in = nullptr,
            *h_out = nullptr, *d_out = nullptr;
    unsigned long long total = 0;
    int ev[kMaxChunks];
    int mh_c;
    constexpr size_t kMf4 = 6 * 6 * 16 * 4, kMf8 = 6 * 6 * 64 * 4;
    // Band jj's levels into the frame; returns its non-zero count.
    auto unpack_band = [&](int jj) -> unsigned long long {
        const int y0 = jj * rows, nr = fr->mb_h - y0 < rows ? fr->mb_h - y0 : rows;
        const uint8_t *ho = h_out + (size_t)jj * out_stride;
        unsigned long long cnt;
        memcpy(&cnt, ho, 8);
        for (int p = 0; p < np; p++) {
            const int mh = p ? mh_c : 16;
            memcpy(fr->coef[p] + (size_t)y0 * mh * fr->plane_w[p], ho + band_out[p],
                   (size_t)nr * mh * fr->plane_w[p] * 2);
        }
        return cnt;
    };

    if (!ctx || (!emu && !ctx->cuda)) return ctx ? VIDK_ERR_NODEV : VIDK_ERR(EINVAL);
    if (vidk_h264_coef_frame_validate(fr) < 0 || !picture_ok(src, fr->w, fr->h, fr->chroma) ||
        !picture_ok(pred, fr->w, fr->h, fr->chroma)) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 batch_forward: invalid frame or pictures");
        return VIDK_ERR(EINVAL);
    }
    exec_init(&x, ctx, emu);
    if ((err = resolve(&x, opts, &pl)) < 0) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 batch_forward: invalid options");
        return err;
    }
    if (!emu && (err = vidk_cuda_enter(ctx)) < 0) return err;
    np = n_planes(fr->chroma);
    mbs = (size_t)fr->mb_w * fr->mb_h;
    mh_c = fr->chroma == VIDK_CHROMA_422 ? 16 : 8;
    // Bands of macroblock rows: every stream gets about two.
    rows = pl.o.chunk ? pl.o.chunk : (fr->mb_h + 2 * pl.ns - 1) / (2 * pl.ns);
    if (!pl.o.pipeline || rows > fr->mb_h) rows = fr->mb_h;
    if (rows < 1) rows = 1;
    if ((fr->mb_h + rows - 1) / rows > kMaxChunks)
        rows = (fr->mb_h + kMaxChunks - 1) / kMaxChunks;
    nband = (fr->mb_h + rows - 1) / rows;
    for (int p = 0; p < np; p++) {
        const size_t plane_rows = (size_t)rows * (p ? mh_c : 16);
        band_in[p] = in_stride;
        in_stride += align_up(plane_rows * fr->plane_w[p], 64);
    }
    in_stride *= 2;  // source, then prediction
    out_stride = 64; // the band's counter
    for (int p = 0; p < np; p++) {
        band_out[p] = out_stride;
        out_stride += align_up((size_t)rows * (p ? mh_c : 16) * fr->plane_w[p] * 2, 64);
    }
    common_bytes = kMf4 + kMf8 + mbs * 4;
    if ((err = buf(&x, SLOT_FWD_COMMON, true, common_bytes, &h_common)) < 0 ||
        (err = buf(&x, SLOT_FWD_COMMON, false, common_bytes, &d_common)) < 0 ||
        (err = buf(&x, SLOT_FWD_IN, true, in_stride * nband, &h_in)) < 0 ||
        (err = buf(&x, SLOT_FWD_IN, false, in_stride * nband, &d_in)) < 0 ||
        (err = buf(&x, SLOT_FWD_OUT, true, out_stride * nband, &h_out)) < 0 ||
        (err = buf(&x, SLOT_FWD_OUT, false, out_stride * nband, &d_out)) < 0)
        goto cleanup;
    for (int l = 0; l < 6; l++) {
        int32_t m4[6][16], m8[6][64];
        vidk_h264_quant_mf4(m4, fr->scaling.m4[l]);
        vidk_h264_quant_mf8(m8, fr->scaling.m8[l]);
        memcpy(h_common + (size_t)l * sizeof(m4), m4, sizeof(m4));
        memcpy(h_common + kMf4 + (size_t)l * sizeof(m8), m8, sizeof(m8));
    }
    memcpy(h_common + kMf4 + kMf8, fr->mb, mbs * 4);

    if ((err = timing_start(&x)) < 0 ||
        (err = stage(&x, VIDK_CUDA_STAGE_H2D, true, 0, 0)) < 0 ||
        (err = h2d(&x, d_common, h_common, common_bytes, 0)) < 0 ||
        (err = stage(&x, VIDK_CUDA_STAGE_H2D, false, 0, common_bytes)) < 0)
        goto cleanup;
    if ((ev_common = event_record(&x, 0)) < 0) {
        err = ev_common;
        goto cleanup;
    }
    for (int i = 1; i < pl.ns; i++)
        if ((err = event_wait(&x, i, ev_common)) < 0) goto cleanup;
    for (int j = 0; j < nband; j++) {
        const int s = pl.o.pipeline ? j % pl.ns : 0;
        const int my0 = j * rows, nr = fr->mb_h - my0 < rows ? fr->mb_h - my0 : rows;
        uint8_t *hi = h_in + (size_t)j * in_stride, *di = d_in + (size_t)j * in_stride;
        uint8_t *dout = d_out + (size_t)j * out_stride;
        size_t used_in = 0, used_out = 0;
        FwdArgs a;
        memset(&a, 0, sizeof(a));
        for (int p = 0; p < np; p++) {
            const int pw = fr->plane_w[p], mh = p ? mh_c : 16;
            const int y0 = my0 * mh, ny = nr * mh;
            for (int k = 0; k < 2; k++) {
                const VidkPicture *pic = k ? pred : src;
                uint8_t *dst = hi + (k ? in_stride / 2 : 0) + band_in[p];
                for (int y = 0; y < ny; y++)
                    memcpy(dst + (size_t)y * pw,
                           static_cast<const uint8_t *>(pic->data[p]) +
                               (ptrdiff_t)(y0 + y) * pic->stride[p],
                           (size_t)pw);
            }
            a.src[p] = di + band_in[p];
            a.pred[p] = di + in_stride / 2 + band_in[p];
            a.lev[p] = reinterpret_cast<int16_t *>(dout + band_out[p]);
            a.pw[p] = pw;
            used_out = band_out[p] + (size_t)ny * pw * 2;
        }
        used_in = in_stride; // both halves (the tail of a short band is not read)
        // The band's counter and levels are zeroed before the kernel (dmemset below): the
        // download copies the planes' alignment gaps and levels the kernel leaves unwritten
        // too (compute-sanitizer initcheck reported them; they are zeros now).
        a.mb =
            reinterpret_cast<const uint32_t *>(d_common + kMf4 + kMf8) + (size_t)my0 * fr->mb_w;
        a.mb_w = fr->mb_w;
        a.chroma = fr->chroma == VIDK_CHROMA_400 ? 0 : fr->chroma == VIDK_CHROMA_420 ? 1 : 2;
        a.mf4 = reinterpret_cast<const int32_t *>(d_common);
        a.mf8 = reinterpret_cast<const int32_t *>(d_common + kMf4);
        a.nnz = reinterpret_cast<unsigned long long *>(dout);
        const unsigned grid = (unsigned)(nr * fr->mb_w);
        const int threads = fwd_threads(a.chroma);
        if ((err = stage(&x, VIDK_CUDA_STAGE_H2D, true, s, 0)) < 0 ||
            (err = h2d(&x, di, hi, used_in, s)) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_H2D, false, s, used_in)) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_KERNEL, true, s, 0)) < 0 ||
            (err = dmemset(&x, dout, used_out, s)) < 0)
            goto cleanup;
        if (x.emu) {
            emu_fwd(a, grid, threads);
        } else {
            fwd_kernel<<<grid, threads, 0, x.st[s]>>>(a);
            if ((err = exec_launched(&x)) < 0) goto cleanup;
        }
        if ((err = stage(&x, VIDK_CUDA_STAGE_KERNEL, false, s, 0)) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_D2H, true, s, 0)) < 0 ||
            (err = d2h(&x, h_out + (size_t)j * out_stride, dout, used_out, s)) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_D2H, false, s, used_out)) < 0)
            goto cleanup;
        if ((ev[j] = event_record(&x, s)) < 0) {
            err = ev[j];
            goto cleanup;
        }
        // Levels of the bands that have landed into the frame, in order.
        while (next_unpack < j) {
            const int q = event_query(&x, ev[next_unpack]);
            if (q < 0) {
                err = q;
                goto cleanup;
            }
            if (!q) break;
            total += unpack_band(next_unpack++);
        }
    }
    for (; next_unpack < nband; next_unpack++) {
        if ((err = event_sync(&x, ev[next_unpack])) < 0) goto cleanup;
        total += unpack_band(next_unpack);
    }
    if ((err = finish(&x)) < 0) goto cleanup;
    exec_end(&x);
    if (b && (err = vidk_h264_batch_build(ctx, b, fr)) < 0) return err;
    return total > INT32_MAX ? INT32_MAX : (int)total;
cleanup:
    exec_end(&x);
    return err;
}

} // namespace vidk_h264host
