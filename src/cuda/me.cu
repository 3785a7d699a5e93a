// vidk_me_search on the device: uploads, launches, downloads. The kernels and the launch
// plan are in me_kern.cuh; docs/ME_CUDA.md explains the design and its numbers.
//
// Data path of one call (all asynchronous until the results are copied out):
//   stream 0 (upload): per band of 64-row macroblock groups, the caller's rows are copied
//     on the host into pinned slots laid out with the device pitch and sent with one
//     cudaMemcpyAsync per plane; an event marks each band's rows as present. With
//     VIDK_CUDA_ME_REF_IS_PREV_CUR the reference is the previous call's current plane,
//     copied device to device (no PCIe).
//   streams 1 and 3 (search, bands alternate so that one band's last wave overlaps the
//     next band's first): key reset, then per band: wait for its rows, the search
//     kernel, the finalize kernel (keys -> VidkMeResult).
//   stream 2 (download): per band, after its finalize, its result rows to a pinned slot.
//   host: per band, as soon as its download has landed, the rows into the caller's field.
// So the host staging copy of band b + 1, the upload of later rows, the search of band b
// and the download of band b - 1 overlap. With fewer streams the same work is issued
// on the ones there are (in-order streams keep it correct).
#include "cuda_common.cuh"
#include "me_cuda.h"
#include "me_kern.cuh"

#include <string.h>

using namespace vidk_me;

namespace {

// Buffer slots of this family (device and host slots are separate pools).
enum {
    SLOT_CUR = VIDK_SLOT_ME_FIRST + 0, // device plane / pinned staging of cur
    SLOT_REF = VIDK_SLOT_ME_FIRST + 1, // device plane / pinned staging of ref
    SLOT_KEYS = VIDK_SLOT_ME_FIRST + 2, // device keys (every shape, extended grid)
    SLOT_RES = VIDK_SLOT_ME_FIRST + 3,  // device / pinned results
    SLOT_PRED = VIDK_SLOT_ME_FIRST + 4, // device / pinned predictors
};

constexpr int kMaxBands = 8;
constexpr size_t kSmemDefault = 48 * 1024; // without the opt-in attribute

int check_args(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
               const VidkMeParams *p, const VidkMeField *out)
{
    if (!ctx || !ctx->cuda || !cur || !ref || !p || !out) return VIDK_ERR(EINVAL);
    if (cur->w != ref->w || cur->h != ref->h || cur->bitdepth != ref->bitdepth || cur->w < 1 ||
        cur->h < 1 || cur->bitdepth < 8 || cur->bitdepth > 16 || !cur->data[0] || !ref->data[0])
        return VIDK_ERR(EINVAL);
    if (p->range < 0 || p->range > VIDK_ME_MAX_RANGE || p->lambda > VIDK_ME_MAX_LAMBDA ||
        !p->shapes || (p->shapes >> VIDK_BLOCK_COUNT))
        return VIDK_ERR(EINVAL);
    if (out->w != cur->w || out->h != cur->h || (out->shapes & p->shapes) != p->shapes)
        return VIDK_ERR(EINVAL);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(p->shapes & VIDK_ME_SHAPE(bs))) continue;
        int gw, gh;
        field_grid(cur->w, cur->h, bs, &gw, &gh);
        if (!out->res[bs] || out->grid_w[bs] != gw || out->grid_h[bs] != gh) return VIDK_ERR(EINVAL);
    }
    return 0;
}

// Host rows [y0, y1) of plane 0 of pic into the pinned staging (device pitch).
void stage_rows(const VidkPicture *pic, const MePlan *pl, uint8_t *stage, int y0, int y1)
{
    const size_t bps = pl->bitdepth > 8 ? 2 : 1;
    const size_t pitch_b = (size_t)pl->pitch * bps, row_b = (size_t)pl->w * bps;
    for (int y = y0; y < y1; y++)
        memcpy(stage + (size_t)y * pitch_b,
               static_cast<const uint8_t *>(pic->data[0]) + (ptrdiff_t)y * pic->stride[0], row_b);
}

template <int FL> void launch_fast(const MePlan *pl, const MeArgs &a, unsigned nb, cudaStream_t s)
{
    if (pl->path == PATH_F16)
        f16_kernel<FL><<<nb, pl->threads, pl->smem, s>>>(a);
    else
        f41_kernel<FL><<<nb, pl->threads, pl->smem, s>>>(a);
}

// The instantiations make_plan can ask for (see its flag rules).
int launch_search(const MePlan *pl, const MeArgs &a, unsigned nb, cudaStream_t s)
{
    switch (pl->flags) {
    case 0: launch_fast<0>(pl, a, nb, s); break;
    case F_LAMBDA: launch_fast<F_LAMBDA>(pl, a, nb, s); break;
    case F_BIG: // f16 only
    case F_BIG | F_LAMBDA:
        if (pl->path != PATH_F16) return VIDK_ERR(EINVAL);
        if (pl->flags & F_LAMBDA)
            f16_kernel<F_BIG | F_LAMBDA><<<nb, pl->threads, pl->smem, s>>>(a);
        else
            f16_kernel<F_BIG><<<nb, pl->threads, pl->smem, s>>>(a);
        break;
#define F41_CASE(fl)                                                                      \
    case fl:                                                                              \
        if (pl->path != PATH_F41) return VIDK_ERR(EINVAL);                                \
        f41_kernel<fl><<<nb, pl->threads, pl->smem, s>>>(a);                              \
        break;
        F41_CASE(F_MID)
        F41_CASE(F_MID | F_BIG)
        F41_CASE(F_SUB | F_MID)
        F41_CASE(F_SUB | F_MID | F_BIG)
        F41_CASE(F_MID | F_LAMBDA)
        F41_CASE(F_MID | F_BIG | F_LAMBDA)
        F41_CASE(F_SUB | F_MID | F_LAMBDA)
        F41_CASE(F_SUB | F_MID | F_BIG | F_LAMBDA)
#undef F41_CASE
    default: return VIDK_ERR(EINVAL);
    }
    return 0;
}

} // namespace

extern "C" int vidk_cuda_me_search_ex(VidkContext *ctx, const VidkPicture *cur,
                                      const VidkPicture *ref, const VidkMeParams *p,
                                      VidkMeField *out, unsigned flags)
{
    int err = check_args(ctx, cur, ref, p, out);
    MePlan pl;
    MeArgs a;
    FinArgs f;
    uint8_t *d_cur = nullptr, *d_ref = nullptr, *h_cur = nullptr, *h_ref = nullptr;
    unsigned long long *d_keys = nullptr;
    VidkMeResult *d_res = nullptr, *h_res = nullptr;
    VidkMv *d_pred = nullptr, *h_pred = nullptr;
    cudaEvent_t ev_up[kMaxBands] = {}, ev_fin[kMaxBands] = {}, ev_dn[kMaxBands] = {};
    cudaEvent_t ev_keys = nullptr;
    cudaStream_t s_up = nullptr, s_kk[2] = {nullptr, nullptr}, s_dn = nullptr;
    const int use_pred = p && p->lambda && p->pred;
    const int reuse_ref = (flags & VIDK_CUDA_ME_REF_IS_PREV_CUR) != 0;
    int maxabs = 0, issued = 0, ns;
    cudaStream_t s_k = nullptr;
    int cur_done = 0, ref_done = 0;
    size_t h2d = 0, d2h = 0, bps;
    if (err < 0) {
        if (ctx) vidk_log(ctx, VIDK_LOG_ERROR, "cuda me_search: invalid arguments");
        return err;
    }
    if (flags & ~(unsigned)VIDK_CUDA_ME_REF_IS_PREV_CUR) return VIDK_ERR(EINVAL);
    if (use_pred) {
        const int n = ((cur->w + 15) / 16) * ((cur->h + 15) / 16);
        for (int i = 0; i < n; i++)
            maxabs = vk_imax(maxabs, vk_imax(vk_abs(p->pred[i].x), vk_abs(p->pred[i].y)));
    }
    VIDK_TRY(make_plan(&pl, cur->w, cur->h, cur->bitdepth, p, maxabs, ctx->cuda->sms));
    if (pl.path != PATH_GENERIC && pl.smem > kSmemDefault) return VIDK_ERR(EINVAL); // see make_plan
    bps = pl.bitdepth > 8 ? 2 : 1;
    VIDK_TRY(vidk_cuda_enter(ctx));
    ns = ctx->cuda->n_streams;
    // 4 streams (the default): upload 0, search 1 and 3, download 2. Fewer: shared, in
    // an order that cannot deadlock (download after search on the same stream).
    s_up = vidk_cuda_stream_at(ctx, 0);
    s_kk[0] = vidk_cuda_stream_at(ctx, 1 % ns);
    s_kk[1] = vidk_cuda_stream_at(ctx, ns >= 4 ? 3 : 1 % ns);
    s_dn = vidk_cuda_stream_at(ctx, ns >= 3 ? 2 : 1 % ns);

    // Every buffer first: growing one waits for the streams and frees the old one.
    VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_CUR, pl.plane_bytes, &d_cur));
    VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_REF, pl.plane_bytes, &d_ref));
    VIDK_TRY(vidk_cuda_host_slot(ctx, SLOT_CUR, pl.plane_bytes, &h_cur));
    if (!reuse_ref) VIDK_TRY(vidk_cuda_host_slot(ctx, SLOT_REF, pl.plane_bytes, &h_ref));
    VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_KEYS, pl.nkeys * sizeof(*d_keys), &d_keys));
    VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_RES, pl.nres * sizeof(*d_res), &d_res));
    VIDK_TRY(vidk_cuda_host_slot(ctx, SLOT_RES, pl.nres * sizeof(*h_res), &h_res));
    if (use_pred) {
        const size_t pb = (size_t)pl.mb_w * (size_t)pl.mb_h * sizeof(VidkMv);
        VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_PRED, pb, &d_pred));
        VIDK_TRY(vidk_cuda_host_slot(ctx, SLOT_PRED, pb, &h_pred));
    }
    CUDA_CHECK(cudaEventCreateWithFlags(&ev_keys, cudaEventDisableTiming));
    for (int b = 0; b < pl.nbands; b++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&ev_up[b], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&ev_fin[b], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&ev_dn[b], cudaEventDisableTiming));
    }

    a = base_args(&pl);
    a.cur = d_cur, a.ref = d_ref;
    a.cur16 = reinterpret_cast<const uint16_t *>(d_cur);
    a.ref16 = reinterpret_cast<const uint16_t *>(d_ref);
    a.pred = d_pred;
    a.keys = d_keys;
    f = FinArgs();
    f.keys = d_keys, f.res = d_res, f.R = pl.R, f.N = pl.N, f.lambda = pl.lambda;
    f.pred = d_pred, f.mb_w = pl.mb_w;

    issued = 1;
    VIDK_TRY(vidk_cuda_timing_start(ctx, s_up));
    VIDK_TRY(vidk_cuda_stage_begin(ctx, VIDK_CUDA_STAGE_H2D, s_up));
    if (reuse_ref) { // the kept copy of the previous cur, before the new cur overwrites it
        CUDA_CHECK(cudaMemcpyAsync(d_ref, d_cur, pl.plane_bytes, cudaMemcpyDeviceToDevice, s_up));
        ref_done = pl.h;
    }
    if (use_pred) {
        const size_t pb = (size_t)pl.mb_w * (size_t)pl.mb_h * sizeof(VidkMv);
        memcpy(h_pred, p->pred, pb);
        CUDA_CHECK(cudaMemcpyAsync(d_pred, h_pred, pb, cudaMemcpyHostToDevice, s_up));
        h2d += pb;
    }
    VIDK_TRY(vidk_cuda_stage_begin(ctx, VIDK_CUDA_STAGE_KERNEL, s_kk[0]));
    CUDA_CHECK(cudaMemsetAsync(d_keys, 0xff, pl.nkeys * sizeof(*d_keys), s_kk[0]));
    CUDA_CHECK(cudaEventRecord(ev_keys, s_kk[0]));
    CUDA_CHECK(cudaStreamWaitEvent(s_kk[1], ev_keys, 0));

    for (int b = 0; b < pl.nbands; b++) {
        int cr, rr;
        const size_t pitch_b = (size_t)pl.pitch * bps;
        band_rows(&pl, b, &cr, &rr);
        // Upload the rows this band needs beyond those already sent.
        if (cr > cur_done) {
            stage_rows(cur, &pl, h_cur, cur_done, cr);
            CUDA_CHECK(cudaMemcpyAsync(d_cur + cur_done * pitch_b, h_cur + cur_done * pitch_b,
                                       (size_t)(cr - cur_done) * pitch_b, cudaMemcpyHostToDevice,
                                       s_up));
            h2d += (size_t)(cr - cur_done) * pitch_b;
            cur_done = cr;
        }
        if (rr > ref_done) {
            stage_rows(ref, &pl, h_ref, ref_done, rr);
            CUDA_CHECK(cudaMemcpyAsync(d_ref + ref_done * pitch_b, h_ref + ref_done * pitch_b,
                                       (size_t)(rr - ref_done) * pitch_b, cudaMemcpyHostToDevice,
                                       s_up));
            h2d += (size_t)(rr - ref_done) * pitch_b;
            ref_done = rr;
        }
        VIDK_TRY(vidk_cuda_stage_end(ctx, VIDK_CUDA_STAGE_H2D, s_up, h2d));
        h2d = 0;
        CUDA_CHECK(cudaEventRecord(ev_up[b], s_up));

        // Search and finalize the band.
        s_k = s_kk[b & 1];
        CUDA_CHECK(cudaStreamWaitEvent(s_k, ev_up[b], 0));
        a.gy0 = pl.band_g0[b], a.gyn = pl.band_gn[b];
        if (pl.path == PATH_GENERIC) {
            for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
                if (!(pl.shapes & VIDK_ME_SHAPE(bs))) continue;
                MeArgs g = a;
                g.g_bs = bs, g.g_gw = pl.gw[bs], g.g_gh = pl.gh[bs];
                g.g_slice = bs >= VIDK_BLOCK_32x32 ? 256 : 1024;
                const dim3 grid((unsigned)((pl.gw[bs] * pl.gh[bs] + 7) / 8),
                                (unsigned)((pl.N * pl.N + g.g_slice - 1) / g.g_slice));
                if (bps == 1)
                    generic_kernel<uint8_t><<<grid, 256, 0, s_k>>>(g);
                else
                    generic_kernel<uint16_t><<<grid, 256, 0, s_k>>>(g);
                CUDA_CHECK_LAUNCH();
            }
        } else {
            const unsigned nb = (unsigned)((long)pl.GW * a.gyn * pl.ncb * pl.nsl);
            if ((err = launch_search(&pl, a, nb, s_k)) < 0) {
                vidk_log(ctx, VIDK_LOG_ERROR, "cuda me_search: no kernel for path %d flags %d",
                         pl.path, pl.flags);
                goto cleanup;
            }
            CUDA_CHECK_LAUNCH();
        }
        f.nshape = 0;
        int maxn = 0;
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(pl.shapes & VIDK_ME_SHAPE(bs))) continue;
            const int si = f.nshape++;
            f.bs[si] = bs, f.key_off[si] = pl.key_off[bs], f.key_ew[si] = pl.key_ew[bs];
            f.gw[si] = pl.gw[bs], f.res_off[si] = pl.res_off[bs];
            band_block_rows(&pl, b, bs, &f.row0[si], &f.rows[si]);
            maxn = vk_imax(maxn, f.rows[si] * f.gw[si]);
        }
        if (maxn > 0) {
            finalize_kernel<<<dim3((unsigned)((maxn + 255) / 256), (unsigned)f.nshape), 256, 0,
                              s_k>>>(f);
            CUDA_CHECK_LAUNCH();
        }
        CUDA_CHECK(cudaEventRecord(ev_fin[b], s_k));

        // Download the band's results.
        CUDA_CHECK(cudaStreamWaitEvent(s_dn, ev_fin[b], 0));
        VIDK_TRY(vidk_cuda_stage_begin(ctx, VIDK_CUDA_STAGE_D2H, s_dn));
        for (int si = 0; si < f.nshape; si++) {
            const size_t o = (size_t)f.res_off[si] + (size_t)f.row0[si] * (size_t)f.gw[si];
            const size_t n = (size_t)f.rows[si] * (size_t)f.gw[si] * sizeof(VidkMeResult);
            if (!n) continue;
            CUDA_CHECK(cudaMemcpyAsync(h_res + o, d_res + o, n, cudaMemcpyDeviceToHost, s_dn));
            d2h += n;
        }
        VIDK_TRY(vidk_cuda_stage_end(ctx, VIDK_CUDA_STAGE_D2H, s_dn, d2h));
        d2h = 0;
        CUDA_CHECK(cudaEventRecord(ev_dn[b], s_dn));
    }

    // The search stage ends when both search streams are done.
    for (int b = 0; b < pl.nbands; b++)
        if (s_kk[b & 1] != s_kk[0]) CUDA_CHECK(cudaStreamWaitEvent(s_kk[0], ev_fin[b], 0));
    VIDK_TRY(vidk_cuda_stage_end(ctx, VIDK_CUDA_STAGE_KERNEL, s_kk[0], 0));

    // Results into the caller's field, band by band as they land.
    for (int b = 0; b < pl.nbands; b++) {
        CUDA_CHECK(cudaEventSynchronize(ev_dn[b]));
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(pl.shapes & VIDK_ME_SHAPE(bs))) continue;
            int r0, n;
            band_block_rows(&pl, b, bs, &r0, &n);
            const size_t o = (size_t)r0 * (size_t)pl.gw[bs];
            memcpy(out->res[bs] + o, h_res + pl.res_off[bs] + o,
                   (size_t)n * (size_t)pl.gw[bs] * sizeof(VidkMeResult));
        }
    }
    CUDA_CHECK(cudaStreamSynchronize(s_up));
    CUDA_CHECK(cudaStreamSynchronize(s_kk[0]));
    CUDA_CHECK(cudaStreamSynchronize(s_kk[1]));
    CUDA_CHECK(cudaStreamSynchronize(s_dn));
    issued = 0;
    VIDK_TRY(vidk_cuda_timing_stop(ctx));

cleanup:
    if (issued) { // an error with work in flight: let it drain before buffers are reused
        (void)cudaStreamSynchronize(s_up);
        (void)cudaStreamSynchronize(s_kk[0]);
        (void)cudaStreamSynchronize(s_kk[1]);
        (void)cudaStreamSynchronize(s_dn);
        (void)cudaGetLastError();
    }
    if (ev_keys) (void)cudaEventDestroy(ev_keys);
    for (int b = 0; b < kMaxBands; b++) {
        if (ev_up[b]) (void)cudaEventDestroy(ev_up[b]);
        if (ev_fin[b]) (void)cudaEventDestroy(ev_fin[b]);
        if (ev_dn[b]) (void)cudaEventDestroy(ev_dn[b]);
    }
    return err;
}

extern "C" int vidk_cuda_me_search(VidkContext *ctx, const VidkPicture *cur,
                                   const VidkPicture *ref, const VidkMeParams *p,
                                   VidkMeField *out)
{
    return vidk_cuda_me_search_ex(ctx, cur, ref, p, out, 0);
}
