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

#include <mutex>
#include <stdlib.h>
#include <string.h>

using namespace vidk_me;

namespace {

// Buffer slots of this family (device and host slots are separate pools). The three
// device planes rotate between the roles cur, ref and next (sequence mode, below); the
// host slots of the same numbers are their pinned staging buffers.
enum {
    SLOT_PLANE0 = VIDK_SLOT_ME_FIRST + 0, // device plane 0 / pinned staging of cur
    SLOT_PLANE1 = VIDK_SLOT_ME_FIRST + 1, // device plane 1 / pinned staging of ref
    SLOT_KEYS = VIDK_SLOT_ME_FIRST + 2,   // device keys (every shape, extended grid)
    SLOT_RES = VIDK_SLOT_ME_FIRST + 3,    // device / pinned results
    SLOT_PRED = VIDK_SLOT_ME_FIRST + 4,   // device / pinned predictors
    SLOT_PLANE2 = VIDK_SLOT_ME_FIRST + 5, // device plane 2 / pinned staging of next
    SLOT_STATE = VIDK_SLOT_ME_FIRST + 6,  // host: SeqState
    SLOT_RES1 = VIDK_SLOT_ME_FIRST + 7,   // device results of vidk_cuda_me_search_dev's set 1
    // vidk_cuda_me_search_dev's keys and set 0's results: apart from the host API's, which a
    // caller may use on the same context while an encoder's searches are in flight
    SLOT_DEV_KEYS = VIDK_SLOT_ME_FIRST + 8,
    SLOT_DEV_RES0 = VIDK_SLOT_ME_FIRST + 9,
    // set 2's keys and results (the coding loop's look-ahead, on another stream)
    SLOT_LA_KEYS = VIDK_SLOT_ME_FIRST + 10,
    SLOT_LA_RES = VIDK_SLOT_ME_FIRST + 11,
};
constexpr int kPlaneSlot[3] = {SLOT_PLANE0, SLOT_PLANE1, SLOT_PLANE2};

// What the device planes hold between calls of one context. Kept in a host slot (the
// context has no field for it); valid only with the magic, and a role only while its
// plane's buffer is the same allocation (a slot that grew lost its samples).
struct SeqState {
    unsigned long long magic;
    int prev_cur, next; // plane index holding the last call's cur / its prefetched next, or -1
    int w, h, bitdepth, pitch;
    void *ptr[3];
    size_t cap[3];
};
constexpr unsigned long long kSeqMagic = 0x7669646b6d657131ull; // "vidkmeq1"

constexpr int kMaxBands = 8;

int check_args(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
               const VidkMeParams *p, const VidkMeField *out) {
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
        if (!out->res[bs] || out->grid_w[bs] != gw || out->grid_h[bs] != gh)
            return VIDK_ERR(EINVAL);
    }
    return 0;
}

// Host rows [y0, y1) of plane 0 of pic into the pinned staging (device pitch).
void stage_rows(const VidkPicture *pic, const MePlan *pl, uint8_t *stage, int y0, int y1) {
    const size_t bps = pl->bitdepth > 8 ? 2 : 1;
    const size_t pitch_b = (size_t)pl->pitch * bps, row_b = (size_t)pl->w * bps;
    for (int y = y0; y < y1; y++)
        memcpy(stage + (size_t)y * pitch_b,
               static_cast<const uint8_t *>(pic->data[0]) + (ptrdiff_t)y * pic->stride[0],
               row_b);
}

// Kernel configuration of a call (for A/B measurements on the device): VIDK_ME_KCFG=r1
// selects the first-round kernels (0), r2 the round-2 kernels (1); anything else, or
// unset, the default round-3 f41 kernels (2: 4x4-only aligned columns without PRMT; key
// ranks on the FMA pipe without lambda; f16 and the f41 partition kernels with lambda as
// r2). Measured on an H200 (982cf32, 1080p R=64, sequence mode): 4x4 r2 1.200 ms, r3
// 1.121 ms; 41 partitions 2.003 / 1.984 ms; 16x16 0.862 ms both.
int kernel_config() {
    const char *e = getenv("VIDK_ME_KCFG");
    if (e && (!strcmp(e, "r1") || !strcmp(e, "1"))) return 0;
    if (e && (!strcmp(e, "r2") || !strcmp(e, "2"))) return 1;
    return 2;
}

// The r2 kernels fit more blocks per SM (f41 4x4-only: 5 x 26.8 kB), more than the
// 132 kB shared-memory configuration the driver picked for r1: ask for the largest
// shared-memory carveout (the staging reads hit L2, 95 %, not L1); r1 asks only for the
// F_SHIFT kernels, which need the opt-in above 48 kB.
// Once per kernel and device: the request cost more host time than a launch (~60 us a frame
// in the encoder under a CUPTI trace, session 13).
template <typename K> cudaError_t prefer_shared(K kern) {
    static std::mutex mu;
    static const void *done_fn[64]; // kernel, device
    static int done_dev[64], n_done;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const void *fn = reinterpret_cast<const void *>(kern);
    std::lock_guard<std::mutex> lock(mu);
    for (int k = 0; k < n_done; k++)
        if (done_fn[k] == fn && done_dev[k] == dev) return cudaSuccess;
    e = cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                             (int)cudaSharedmemCarveoutMaxShared);
    // and the opt-in beyond 48 kB of dynamic shared memory (F_SHIFT blocks, smem_limit)
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)kSmemShift);
    if (e == cudaSuccess && n_done < 64) done_fn[n_done] = fn, done_dev[n_done++] = dev;
    return e;
}

// In launch_fast / launch_search: launch kern, or with probe only load it (vidk_cuda_load;
// the encoder asks at open for the kernels its frames launch).
#define ME_GO(kern)                                                                            \
    (probe ? vidk_cuda_load(kern) : (kern<<<nb, pl->threads, pl->smem, s>>>(a), cudaSuccess))

template <int FL>
cudaError_t launch_fast(const MePlan *pl, const MeArgs &a, unsigned nb, cudaStream_t s, int cfg,
                        bool probe) {
    cudaError_t e = cudaSuccess;
    if (pl->path == PATH_F16) {
        if (cfg && (e = prefer_shared(f16_kernel_r2<FL>)) == cudaSuccess)
            e = ME_GO(f16_kernel_r2<FL>);
        else if (!cfg)
            e = ME_GO(f16_kernel<FL>);
    } else {
        if (cfg == 2 && (e = prefer_shared(f41_kernel_r3<FL>)) == cudaSuccess)
            e = ME_GO(f41_kernel_r3<FL>);
        else if (cfg == 1 && (e = prefer_shared(f41_kernel_r2<FL>)) == cudaSuccess)
            e = ME_GO(f41_kernel_r2<FL>);
        else if (!cfg)
            e = ME_GO(f41_kernel<FL>);
    }
    return e;
}

// The instantiations make_plan can ask for (see its flag rules). Returns cudaSuccess, the
// error of the carveout request, or cudaErrorInvalidValue for a flag set without a kernel.
cudaError_t launch_search(const MePlan *pl, const MeArgs &a, unsigned nb, cudaStream_t s,
                          int cfg, bool probe) {
    const int f16 = pl->path == PATH_F16;
    cudaError_t e = cudaSuccess;
    switch (pl->flags) {
    case 0:
        return launch_fast<0>(pl, a, nb, s, cfg, probe);
    case F_LAMBDA:
        return launch_fast<F_LAMBDA>(pl, a, nb, s, cfg, probe);
#define F16_CASE(fl)                                                                           \
    case fl:                                                                                   \
        if (!f16) return cudaErrorInvalidValue;                                                \
        if (cfg && (e = prefer_shared(f16_kernel_r2<fl>)) == cudaSuccess)                      \
            e = ME_GO(f16_kernel_r2<fl>);                                                      \
        else if (!cfg)                                                                         \
            e = ME_GO(f16_kernel<fl>);                                                         \
        break;
        F16_CASE(F_BIG)
        F16_CASE(F_BIG | F_LAMBDA)
#undef F16_CASE
#define F41_CASE(fl)                                                                           \
    case fl:                                                                                   \
        if (f16) return cudaErrorInvalidValue;                                                 \
        if (cfg && (e = prefer_shared(f41_kernel_r2<fl>)) == cudaSuccess)                      \
            e = ME_GO(f41_kernel_r2<fl>);                                                      \
        else if (!cfg &&                                                                       \
                 (!((fl)&F_SHIFT) || (e = prefer_shared(f41_kernel<fl>)) == cudaSuccess))      \
            e = ME_GO(f41_kernel<fl>);                                                         \
        break;
// Without lambda, r3 has its own partition kernels (float key ranks, ME_CUDA.md 5d).
#define F41_CASE3(fl)                                                                          \
    case fl:                                                                                   \
        if (f16) return cudaErrorInvalidValue;                                                 \
        if (cfg == 2 && (e = prefer_shared(f41_kernel_r3<fl>)) == cudaSuccess)                 \
            e = ME_GO(f41_kernel_r3<fl>);                                                      \
        else if (cfg == 1 && (e = prefer_shared(f41_kernel_r2<fl>)) == cudaSuccess)            \
            e = ME_GO(f41_kernel_r2<fl>);                                                      \
        else if (!cfg &&                                                                       \
                 (!((fl)&F_SHIFT) || (e = prefer_shared(f41_kernel<fl>)) == cudaSuccess))      \
            e = ME_GO(f41_kernel<fl>);                                                         \
        break;
        F41_CASE3(F_MID)
        F41_CASE3(F_MID | F_BIG)
        F41_CASE3(F_SUB | F_MID)
        F41_CASE3(F_SUB | F_MID | F_BIG)
        F41_CASE3(F_SUB | F_MID | F_NO4)
        F41_CASE3(F_SUB | F_MID | F_NO4 | F_SHIFT)
#undef F41_CASE3
        F41_CASE(F_MID | F_LAMBDA)
        F41_CASE(F_MID | F_BIG | F_LAMBDA)
        F41_CASE(F_SUB | F_MID | F_LAMBDA)
        F41_CASE(F_SUB | F_MID | F_BIG | F_LAMBDA)
        F41_CASE(F_SUB | F_MID | F_NO4 | F_LAMBDA)
        F41_CASE(F_SUB | F_MID | F_NO4 | F_LAMBDA | F_SHIFT)
#undef F41_CASE
    default:
        return cudaErrorInvalidValue;
    }
    return e;
}

// The keys set to "none" before a search: only the span of the shapes the kernel writes and
// finalize reads (the coding loop's four shapes are 0.6 of the 2.7 MB of every shape at
// 1080p); the keys outside it are not touched.
cudaError_t reset_keys(const MePlan *pl, unsigned long long *d_keys, cudaStream_t s) {
    const unsigned m = pl->shapes | (pl->path == PATH_F41   ? f41_mask(pl->flags)
                                     : pl->path == PATH_F16 ? f16_mask(pl->flags)
                                                            : 0u);
    int lo = 0, hi = VIDK_BLOCK_COUNT - 1;
    while (!(m & VIDK_ME_SHAPE(lo)))
        lo++;
    while (!(m & VIDK_ME_SHAPE(hi)))
        hi--;
    const size_t end = hi + 1 < VIDK_BLOCK_COUNT ? (size_t)pl->key_off[hi + 1] : pl->nkeys;
    return cudaMemsetAsync(d_keys + pl->key_off[lo], 0xff,
                           (end - (size_t)pl->key_off[lo]) * sizeof(*d_keys), s);
}

// Band b of the plan on stream s: the search kernel(s), then the finalize kernel that turns
// the band's keys into results (f's per-shape rows are set for the band). Returns the first
// CUDA error (launch errors included).
cudaError_t issue_band(const MePlan *pl, MeArgs &a, FinArgs &f, int b, cudaStream_t s, int cfg,
                       size_t bps) {
    cudaError_t e;
    a.gy0 = pl->band_g0[b], a.gyn = pl->band_gn[b];
    if (pl->path == PATH_GENERIC) {
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(pl->shapes & VIDK_ME_SHAPE(bs))) continue;
            MeArgs g = a;
            g.g_bs = bs, g.g_gw = pl->gw[bs], g.g_gh = pl->gh[bs];
            g.g_slice = bs >= VIDK_BLOCK_32x32 ? 256 : 1024;
            const dim3 grid((unsigned)((pl->gw[bs] * pl->gh[bs] + 7) / 8),
                            (unsigned)((pl->N * pl->N + g.g_slice - 1) / g.g_slice));
            if (bps == 1)
                generic_kernel<uint8_t><<<grid, 256, 0, s>>>(g);
            else
                generic_kernel<uint16_t><<<grid, 256, 0, s>>>(g);
            if ((e = cudaGetLastError()) != cudaSuccess) return e;
        }
    } else {
        const unsigned nb = (unsigned)((long)pl->GW * a.gyn * pl->ncb * pl->nsl);
        if ((e = launch_search(pl, a, nb, s, cfg, false)) != cudaSuccess)
            return e; // path, flags of pl
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    f.nshape = 0;
    int maxn = 0;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(pl->shapes & VIDK_ME_SHAPE(bs))) continue;
        const int si = f.nshape++;
        f.bs[si] = bs, f.key_off[si] = pl->key_off[bs], f.key_ew[si] = pl->key_ew[bs];
        f.gw[si] = pl->gw[bs], f.res_off[si] = pl->res_off[bs];
        band_block_rows(pl, b, bs, &f.row0[si], &f.rows[si]);
        maxn = vk_imax(maxn, f.rows[si] * f.gw[si]);
    }
    if (maxn > 0) {
        finalize_kernel<<<dim3((unsigned)((maxn + 255) / 256), (unsigned)f.nshape), 256, 0,
                          s>>>(f);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    return cudaSuccess;
}

// Kernel arguments of a search over device planes cur / ref (8- or 16-bit) with keys and
// results in the given buffers, and predictors pred (or nullptr).
void plan_args(const MePlan *pl, const uint8_t *cur, const uint8_t *ref, const VidkMv *pred,
               unsigned long long *keys, VidkMeResult *res, MeArgs *a, FinArgs *f) {
    *a = base_args(pl);
    a->cur = cur, a->ref = ref;
    a->cur16 = reinterpret_cast<const uint16_t *>(cur);
    a->ref16 = reinterpret_cast<const uint16_t *>(ref);
    a->pred = pred;
    a->keys = keys;
    *f = FinArgs();
    f->keys = keys, f->res = res, f->R = pl->R, f->N = pl->N, f->lambda = pl->lambda;
    f->pred = pred, f->mb_w = pl->mb_w;
}

} // namespace

extern "C" int vidk_cuda_me_search_seq(VidkContext *ctx, const VidkPicture *cur,
                                       const VidkPicture *ref, const VidkPicture *next,
                                       const VidkMeParams *p, VidkMeField *out,
                                       unsigned flags) {
    int err = check_args(ctx, cur, ref, p, out);
    MePlan pl;
    MeArgs a;
    FinArgs f;
    uint8_t *d_plane[3] = {nullptr, nullptr, nullptr},
            *h_plane[3] = {nullptr, nullptr, nullptr};
    uint8_t *d_cur = nullptr, *d_ref = nullptr, *h_cur = nullptr, *h_ref = nullptr;
    unsigned long long *d_keys = nullptr;
    VidkMeResult *d_res = nullptr, *h_res = nullptr;
    VidkMv *d_pred = nullptr, *h_pred = nullptr;
    SeqState *st = nullptr;
    cudaEvent_t ev_up[kMaxBands] = {}, ev_fin[kMaxBands] = {}, ev_dn[kMaxBands] = {};
    cudaEvent_t ev_keys = nullptr;
    cudaStream_t s_up = nullptr, s_kk[2] = {nullptr, nullptr}, s_dn = nullptr;
    const int use_pred = p && p->lambda && p->pred;
    int maxabs = 0, issued = 0, ns, cfg = kernel_config();
    int pc = -1, pr = -1, pn = -1, cur_res = 0, ref_res = 0;
    cudaStream_t s_k = nullptr;
    int cur_done = 0, ref_done = 0;
    size_t h2d = 0, d2h = 0, bps;
    if (err < 0) {
        if (ctx) vidk_log(ctx, VIDK_LOG_ERROR, "cuda me_search: invalid arguments");
        return err;
    }
    if (flags & ~(unsigned)(VIDK_CUDA_ME_REF_IS_PREV_CUR | VIDK_CUDA_ME_CUR_IS_PREV_NEXT))
        return VIDK_ERR(EINVAL);
    if (next && (next->w != cur->w || next->h != cur->h || next->bitdepth != cur->bitdepth ||
                 !next->data[0])) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda me_search: next picture differs from cur");
        return VIDK_ERR(EINVAL);
    }
    if (use_pred) {
        const int n = ((cur->w + 15) / 16) * ((cur->h + 15) / 16);
        for (int i = 0; i < n; i++)
            maxabs = vk_imax(maxabs, vk_imax(vk_abs(p->pred[i].x), vk_abs(p->pred[i].y)));
    }
    VIDK_TRY(make_plan(&pl, cur->w, cur->h, cur->bitdepth, p, maxabs, ctx->cuda->sms));
    if (pl.path != PATH_GENERIC && pl.smem > smem_limit(pl.flags))
        return VIDK_ERR(EINVAL); // see make_plan
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
    VIDK_TRY(vidk_cuda_host_slot(ctx, SLOT_STATE, sizeof(SeqState), &st));
    if (st->magic != kSeqMagic) {
        memset(st, 0, sizeof(*st));
        st->magic = kSeqMagic;
        st->prev_cur = st->next = -1;
    }
    for (int i = 0; i < 3; i++) {
        if (i == 2 && !next && !(flags & VIDK_CUDA_ME_CUR_IS_PREV_NEXT) &&
            !(st->prev_cur == 2 || st->next == 2))
            continue; // plane 2 only once a sequence uses it
        VIDK_TRY(vidk_cuda_dev_slot(ctx, kPlaneSlot[i], pl.plane_bytes, &d_plane[i]));
    }
    // Roles survive only on the same allocation, geometry and bit depth.
    {
        const int same = st->w == pl.w && st->h == pl.h && st->bitdepth == pl.bitdepth &&
                         st->pitch == pl.pitch;
        for (int i = 0; i < 3; i++) {
            const VidkCudaBuf &b = ctx->cuda->dev[kPlaneSlot[i]];
            const int kept = same && d_plane[i] && st->ptr[i] == b.ptr && st->cap[i] == b.bytes;
            if (!kept && st->prev_cur == i) st->prev_cur = -1;
            if (!kept && st->next == i) st->next = -1;
        }
    }
    if ((flags & VIDK_CUDA_ME_CUR_IS_PREV_NEXT) && st->next >= 0) pc = st->next, cur_res = 1;
    if ((flags & VIDK_CUDA_ME_REF_IS_PREV_CUR) && st->prev_cur >= 0 && st->prev_cur != pc)
        pr = st->prev_cur, ref_res = 1;
    // Free planes for what must be uploaded: never one that holds a resident role.
    for (int i = 0; i < 3 && pc < 0; i++)
        if (i != pr && (i < 2 || d_plane[i])) pc = i;
    for (int i = 0; i < 3 && pr < 0; i++)
        if (i != pc && (i < 2 || d_plane[i])) pr = i;
    if (next) {
        pn = 3 - pc - pr;
        if (!d_plane[pn])
            VIDK_TRY(vidk_cuda_dev_slot(ctx, kPlaneSlot[pn], pl.plane_bytes, &d_plane[pn]));
        VIDK_TRY(vidk_cuda_host_slot(ctx, kPlaneSlot[pn], pl.plane_bytes, &h_plane[pn]));
    }
    // From here on the planes' contents change: no role is valid until the call succeeds.
    st->prev_cur = st->next = -1;
    d_cur = d_plane[pc], d_ref = d_plane[pr];
    if (!cur_res) VIDK_TRY(vidk_cuda_host_slot(ctx, kPlaneSlot[pc], pl.plane_bytes, &h_cur));
    if (!ref_res) VIDK_TRY(vidk_cuda_host_slot(ctx, kPlaneSlot[pr], pl.plane_bytes, &h_ref));
    if (cur_res) cur_done = pl.h;
    if (ref_res) ref_done = pl.h;
    VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_KEYS, pl.nkeys * sizeof(*d_keys), &d_keys));
    VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_RES, pl.nres * sizeof(*d_res), &d_res));
    VIDK_TRY(vidk_cuda_host_slot(ctx, SLOT_RES, pl.nres * sizeof(*h_res), &h_res));
    if (use_pred) {
        const size_t pb = (size_t)pl.mb_w * (size_t)pl.mb_h * sizeof(VidkMv);
        VIDK_TRY(vidk_cuda_dev_slot(ctx, SLOT_PRED, pb, &d_pred));
        VIDK_TRY(vidk_cuda_host_slot(ctx, SLOT_PRED, pb, &h_pred));
    }
    // A grown slot freed an old buffer: re-read the plane pointers (growth is done now).
    for (int i = 0; i < 3; i++)
        if (d_plane[i]) d_plane[i] = static_cast<uint8_t *>(ctx->cuda->dev[kPlaneSlot[i]].ptr);
    d_cur = d_plane[pc], d_ref = d_plane[pr];
    CUDA_CHECK(cudaEventCreateWithFlags(&ev_keys, cudaEventDisableTiming));
    for (int b = 0; b < pl.nbands; b++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&ev_up[b], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&ev_fin[b], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&ev_dn[b], cudaEventDisableTiming));
    }

    plan_args(&pl, d_cur, d_ref, d_pred, d_keys, d_res, &a, &f);

    issued = 1;
    VIDK_TRY(vidk_cuda_timing_start(ctx, s_up));
    VIDK_TRY(vidk_cuda_stage_begin(ctx, VIDK_CUDA_STAGE_H2D, s_up));
    if (use_pred) {
        const size_t pb = (size_t)pl.mb_w * (size_t)pl.mb_h * sizeof(VidkMv);
        memcpy(h_pred, p->pred, pb);
        CUDA_CHECK(cudaMemcpyAsync(d_pred, h_pred, pb, cudaMemcpyHostToDevice, s_up));
        h2d += pb;
    }
    VIDK_TRY(vidk_cuda_stage_begin(ctx, VIDK_CUDA_STAGE_KERNEL, s_kk[0]));
    CUDA_CHECK(reset_keys(&pl, d_keys, s_kk[0]));
    CUDA_CHECK(cudaEventRecord(ev_keys, s_kk[0]));
    CUDA_CHECK(cudaStreamWaitEvent(s_kk[1], ev_keys, 0));

    for (int b = 0; b < pl.nbands; b++) {
        int cr, rr;
        const size_t pitch_b = (size_t)pl.pitch * bps;
        band_rows(&pl, b, &cr, &rr);
        // Upload the rows this band needs beyond those already sent (none when both
        // planes are resident: the band's event then only orders the predictors).
        if (cr > cur_done) {
            stage_rows(cur, &pl, h_cur, cur_done, cr);
            CUDA_CHECK(cudaMemcpyAsync(d_cur + cur_done * pitch_b, h_cur + cur_done * pitch_b,
                                       (size_t)(cr - cur_done) * pitch_b,
                                       cudaMemcpyHostToDevice, s_up));
            h2d += (size_t)(cr - cur_done) * pitch_b;
            cur_done = cr;
        }
        if (rr > ref_done) {
            stage_rows(ref, &pl, h_ref, ref_done, rr);
            CUDA_CHECK(cudaMemcpyAsync(d_ref + ref_done * pitch_b, h_ref + ref_done * pitch_b,
                                       (size_t)(rr - ref_done) * pitch_b,
                                       cudaMemcpyHostToDevice, s_up));
            h2d += (size_t)(rr - ref_done) * pitch_b;
            ref_done = rr;
        }
        VIDK_TRY(vidk_cuda_stage_end(ctx, VIDK_CUDA_STAGE_H2D, s_up, h2d));
        h2d = 0;
        CUDA_CHECK(cudaEventRecord(ev_up[b], s_up));

        // Search and finalize the band.
        s_k = s_kk[b & 1];
        CUDA_CHECK(cudaStreamWaitEvent(s_k, ev_up[b], 0));
        CUDA_CHECK(issue_band(&pl, a, f, b, s_k, cfg, bps));
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

    // Sequence mode: send the next frame while this one is searched (the host staging
    // copy and the PCIe transfer both overlap the kernels already queued). Plane pn
    // holds neither this call's cur nor its ref, and the previous call's transfers have
    // all completed (every call synchronises its streams), so its staging is free.
    if (next) {
        const size_t bytes = (size_t)pl.pitch * bps * (size_t)pl.h;
        VIDK_TRY(vidk_cuda_stage_begin(ctx, VIDK_CUDA_STAGE_H2D, s_up));
        stage_rows(next, &pl, h_plane[pn], 0, pl.h);
        CUDA_CHECK(
            cudaMemcpyAsync(d_plane[pn], h_plane[pn], bytes, cudaMemcpyHostToDevice, s_up));
        VIDK_TRY(vidk_cuda_stage_end(ctx, VIDK_CUDA_STAGE_H2D, s_up, bytes));
    }

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
    // Roles for the next call (only now: a failed call leaves none).
    st->w = pl.w, st->h = pl.h, st->bitdepth = pl.bitdepth, st->pitch = pl.pitch;
    for (int i = 0; i < 3; i++) {
        st->ptr[i] = ctx->cuda->dev[kPlaneSlot[i]].ptr;
        st->cap[i] = ctx->cuda->dev[kPlaneSlot[i]].bytes;
    }
    st->prev_cur = pc;
    st->next = pn;

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

extern "C" int vidk_cuda_me_search_ex(VidkContext *ctx, const VidkPicture *cur,
                                      const VidkPicture *ref, const VidkMeParams *p,
                                      VidkMeField *out, unsigned flags) {
    if (flags & ~(unsigned)VIDK_CUDA_ME_REF_IS_PREV_CUR) return VIDK_ERR(EINVAL);
    return vidk_cuda_me_search_seq(ctx, cur, ref, nullptr, p, out, flags);
}

extern "C" int vidk_cuda_me_search(VidkContext *ctx, const VidkPicture *cur,
                                   const VidkPicture *ref, const VidkMeParams *p,
                                   VidkMeField *out) {
    return vidk_cuda_me_search_seq(ctx, cur, ref, nullptr, p, out, 0);
}

extern "C" int vidk_cuda_me_pitch(int w) {
    return (w + 63) / 64 * 64;
}

extern "C" int vidk_cuda_me_preload(VidkContext *ctx, int w, int h, const VidkMeParams *p) {
    int err = 0;
    MePlan pl;
    if (!ctx || !ctx->cuda || !p || p->pred) return VIDK_ERR(EINVAL);
    VIDK_TRY(make_plan(&pl, w, h, 8, p, 0, ctx->cuda->sms));
    VIDK_TRY(vidk_cuda_enter(ctx));
    if (pl.path == PATH_GENERIC) {
        CUDA_CHECK(vidk_cuda_load(generic_kernel<uint8_t>));
    } else {
        const MeArgs a = base_args(&pl);
        CUDA_CHECK(launch_search(&pl, a, 0, nullptr, kernel_config(), true));
    }
    CUDA_CHECK(vidk_cuda_load(finalize_kernel));
cleanup:
    return err;
}

extern "C" int vidk_cuda_me_search_dev(VidkContext *ctx, int w, int h, const uint8_t *cur,
                                       const uint8_t *ref, const VidkMeParams *p, int set,
                                       void *stream, const VidkMeResult **res, int *grid_w) {
    int err = 0;
    MePlan pl;
    MeArgs a;
    FinArgs f;
    unsigned long long *d_keys = nullptr;
    VidkMeResult *d_res = nullptr;
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (!ctx || !ctx->cuda || !cur || !ref || !p || p->pred || !res || !grid_w || set < 0 ||
        set > 2)
        return VIDK_ERR(EINVAL);
    VIDK_TRY(make_plan(&pl, w, h, 8, p, 0, ctx->cuda->sms));
    if (pl.path != PATH_GENERIC && pl.smem > smem_limit(pl.flags)) return VIDK_ERR(EINVAL);
    if (pl.pitch != vidk_cuda_me_pitch(w)) return VIDK_ERR(EINVAL);
    // One band: the planes are resident, so there is no upload to overlap, and one grid over
    // the whole frame has one tail instead of one per band (the keys are the same).
    pl.nbands = 1, pl.band_g0[0] = 0, pl.band_gn[0] = pl.GH;
    VIDK_TRY(vidk_cuda_enter(ctx));
    VIDK_TRY(vidk_cuda_dev_slot(ctx, set == 2 ? SLOT_LA_KEYS : SLOT_DEV_KEYS,
                                pl.nkeys * sizeof(*d_keys), &d_keys));
    VIDK_TRY(vidk_cuda_dev_slot(ctx,
                                set == 2   ? SLOT_LA_RES
                                : set == 1 ? SLOT_RES1
                                           : SLOT_DEV_RES0,
                                pl.nres * sizeof(*d_res), &d_res));
    plan_args(&pl, cur, ref, nullptr, d_keys, d_res, &a, &f);
    CUDA_CHECK(reset_keys(&pl, d_keys, s));
    for (int b = 0; b < pl.nbands; b++)
        CUDA_CHECK(issue_band(&pl, a, f, b, s, kernel_config(), 1));
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        const int on = !!(pl.shapes & VIDK_ME_SHAPE(bs));
        res[bs] = on ? d_res + pl.res_off[bs] : nullptr;
        grid_w[bs] = pl.gw[bs];
    }
cleanup:
    return err;
}
