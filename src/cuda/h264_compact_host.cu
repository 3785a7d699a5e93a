// H.264 on the device: the compact inverse with parallel host staging (opts.host), and
// the batch inverse entry (validation, overlapping batches on the host). Overview in h264.cu.
#include "h264_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_h264host {

// ---- compact inverse with parallel host staging (opts.host)
// --------------------------------------

// The host staging pool of a call: none (serial) for one thread; the threads backend's own
// pool when the (emulated) call runs on such a context with the same count; in emulation a
// pool of this call; else the cuda context's pool, made on first use and kept in the
// family's host slot (released by vidk_cuda_h264_release).
int host_pool(Exec *x, int want, VidkThreadPool **out) {
    *out = nullptr;
    int n = want;
    if (!n) n = x->ctx->s.n_threads > 0 ? x->ctx->s.n_threads : imin(vidk_cpu_count(), 8);
    if (n > kMaxHostThreads) n = kMaxHostThreads;
    if (n <= 1) return 0;
    if (x->ctx->pool && vidk_pool_threads(x->ctx->pool) == n) {
        *out = x->ctx->pool;
        return 0;
    }
    int err;
    if (x->emu) {
        if (!x->own_pool && (err = vidk_pool_create(&x->own_pool, n)) < 0) return err;
        *out = x->own_pool;
        return 0;
    }
    GraphState *gs = graph_state(x);
    if (!gs) return VIDK_ERR(ENOMEM);
    if (gs->pool && gs->pool_threads != n) vidk_pool_destroy(&gs->pool);
    if (!gs->pool) {
        if ((err = vidk_pool_create(&gs->pool, n)) < 0) return err;
        gs->pool_threads = n;
    }
    *out = gs->pool;
    return 0;
}

// Block position in the records (see h264_kern.cuh): x / 4, y / 4, plane.
inline uint32_t block_pos(const VidkH264BlockList *l, uint32_t i) {
    return (uint32_t)(l->x[i] / 4) | (uint32_t)(l->y[i] / 4) << kPosYShift |
           (uint32_t)l->plane[i] << kPosPlaneShift;
}

// Records and levels of blocks [i0, i1) of class c, sparse values from voff on (else at
// block i * N*N). Touches only its own blocks' bytes: jobs run in parallel.
template <int N, bool SPARSE, bool FUSED, bool PLANE>
void pack_range(const Class *c, const VidkH264BlockList *l, const VidkPicture *pic, uint32_t i0,
                uint32_t i1, uint32_t voff) {
    constexpr int NN = N * N;
    constexpr size_t RB = (size_t)rec_bytes < N, FUSED && !PLANE, PLANE > ();
    for (uint32_t i = i0; i < i1; i++) {
        const int16_t *lv = l->coef + (size_t)i * NN;
        const int p = l->plane[i];
        const bool dc = N == 4 && (l->flags[i] & VIDK_H264_BLK_DC);
        const uint32_t meta = l->qp[i] |
                              (uint32_t)list_index(p, l->flags[i] & VIDK_H264_BLK_INTRA)
                                  << kMetaListShift |
                              (dc ? kMetaDc : 0u);
        const uint32_t pos = block_pos(l, i);
        uint64_t mask = 0;
        uint32_t vo = 0;
        if (SPARSE) {
            if (N == 4) {
                mask = nz_mask16(lv);
            } else {
                for (int q = 0; q < 4; q++)
                    mask |= (uint64_t)nz_mask16(lv + 16 * q) << (16 * q);
            }
            vo = voff;
            voff += pack_values(c->h_val + voff, lv, mask);
        } else {
            memcpy(c->h_val + (size_t)i * NN, lv, (size_t)NN * 2);
        }
        uint32_t h[4];
        if (N == 4) {
            h[0] = meta | (uint32_t)mask << 16;
            h[1] = dc ? l->dc_index[i] : 0;
            h[2] = vo;
            h[3] = pos;
        } else {
            h[0] = meta;
            h[1] = vo;
            h[2] = (uint32_t)mask;
            h[3] = (uint32_t)(mask >> 32);
        }
        uint8_t *r = c->h_rec + (size_t)i * RB;
        memcpy(r, h, sizeof(h));
        if (PLANE && N == 8) {
            const uint32_t t[4] = {pos, 0, 0, 0};
            memcpy(r + kRecHeader, t, sizeof(t));
        }
        if (FUSED && !PLANE) {
            const ptrdiff_t stride = pic->stride[p];
            const uint8_t *src =
                static_cast<const uint8_t *>(pic->data[p]) + l->y[i] * stride + l->x[i];
            for (int y = 0; y < N; y++)
                memcpy(r + kRecHeader + y * N, src + y * stride, (size_t)N);
        }
    }
}

// A chunk's packing over the pool: pass 1 counts the non-zero levels of each job's blocks,
// the prefix sums give each job its value offset, pass 2 writes records and levels.
struct PackJob {
    Class *c;
    const VidkH264BlockList *l;
    const VidkPicture *pic;
    uint32_t b0, b1, per;
    uint32_t *cnt; // pass 1: non-zero levels per job; pass 2: first value of the job
    uint32_t *pm;  // pass 1: planes touched by the job's blocks (bit p)
    int pass;
    bool sparse, fused, plane;
    // write-back (unpack) jobs
    VidkPicture *out;
};

uint32_t count_nz(const VidkH264BlockList *l, int n, uint32_t i0, uint32_t i1) {
    uint32_t t = 0;
    const int q = n == 4 ? 1 : 4;
    for (uint32_t i = i0; i < i1; i++)
        for (int k = 0; k < q; k++)
            t += (uint32_t)__builtin_popcount(nz_mask16(l->coef + (size_t)i * n * n + 16 * k));
    return t;
}

void pack_job(void *arg, int job, int) {
    const PackJob *j = static_cast<const PackJob *>(arg);
    const uint32_t i0 = j->b0 + (uint32_t)job * j->per;
    const uint32_t i1 = j->b1 - i0 < j->per ? j->b1 : i0 + j->per;
    if (j->pass == 1) {
        j->cnt[job] = count_nz(j->l, j->c->n, i0, i1);
        uint32_t m = 0;
        for (uint32_t i = i0; i < i1; i++)
            m |= 1u << (j->l->plane[i] & 3);
        j->pm[job] = m;
        return;
    }
    typedef void (*Fn)(const Class *, const VidkH264BlockList *, const VidkPicture *, uint32_t,
                       uint32_t, uint32_t);
    static const Fn fn[2][2][3] = {
        {{pack_range<4, false, false, false>, pack_range<4, false, true, false>,
          pack_range<4, false, true, true>},
         {pack_range<4, true, false, false>, pack_range<4, true, true, false>,
          pack_range<4, true, true, true>}},
        {{pack_range<8, false, false, false>, pack_range<8, false, true, false>,
          pack_range<8, false, true, true>},
         {pack_range<8, true, false, false>, pack_range<8, true, true, false>,
          pack_range<8, true, true, true>}},
    };
    const int mode = j->plane ? 2 : j->fused ? 1 : 0;
    fn[j->c->n == 8][j->sparse][mode](j->c, j->l, j->pic, i0, i1, j->cnt[job]);
}

void unpack_job(void *arg, int job, int) {
    const PackJob *j = static_cast<const PackJob *>(arg);
    Chunk ch;
    memset(&ch, 0, sizeof(ch));
    ch.b0 = j->b0 + (uint32_t)job * j->per;
    ch.b1 = j->b1 - ch.b0 < j->per ? j->b1 : ch.b0 + j->per;
    unpack_chunk(j->c, j->l, j->out, j->fused, &ch);
}

// Blocks per job: enough jobs to balance the pool, each large enough to pay for its hand-off.
uint32_t per_job(uint32_t n, VidkThreadPool *pool, uint32_t min) {
    const uint32_t t = (uint32_t)vidk_pool_threads(pool);
    uint32_t per = (n + 4 * t - 1) / (4 * t);
    return per < min ? min : per;
}

// Pack chunk ch; chooses dense or sparse levels, whichever moves fewer bytes (sparse when at
// most 60 % of the levels are non-zero: its popcount and serial reads cost the kernel a
// little more).
void pack_chunk_host(Class *c, const VidkH264BlockList *l, const VidkPicture *pic, bool fused,
                     bool plane, Chunk *ch, VidkThreadPool *pool, uint32_t *cnt, uint32_t *pm) {
    const uint32_t n = ch->b1 - ch->b0, nn = (uint32_t)(c->n * c->n);
    PackJob j;
    memset(&j, 0, sizeof(j));
    j.c = c, j.l = l, j.pic = pic, j.b0 = ch->b0, j.b1 = ch->b1, j.cnt = cnt, j.pm = pm;
    j.fused = fused, j.plane = plane;
    j.per = per_job(n, pool, c->n == 4 ? 1024 : 256);
    const int nj = (int)((n + j.per - 1) / j.per);
    j.pass = 1;
    vidk_pool_run(pool, nj, pack_job, &j);
    uint64_t nz = 0;
    const uint32_t v0 = ch->b0 * nn; // the chunk's own region: sparse values never exceed it
    ch->pmask = 0;
    for (int k = 0; k < nj; k++)
        ch->pmask |= (uint8_t)pm[k];
    for (int k = 0; k < nj; k++) {
        const uint32_t t = cnt[k];
        cnt[k] = v0 + (uint32_t)nz;
        nz += t;
    }
    ch->sparse = nz * 10 <= (uint64_t)n * nn * 6;
    j.sparse = ch->sparse;
    j.pass = 2;
    vidk_pool_run(pool, nj, pack_job, &j);
    ch->v0 = v0;
    ch->v1 = ch->sparse ? v0 + (uint32_t)nz : ch->b1 * nn;
}

void unpack_chunk_host(Class *c, const VidkH264BlockList *l, VidkPicture *pic, bool fused,
                       const Chunk *ch, VidkThreadPool *pool) {
    PackJob j;
    memset(&j, 0, sizeof(j));
    j.c = c, j.l = l, j.out = pic, j.b0 = ch->b0, j.b1 = ch->b1, j.fused = fused;
    j.per = per_job(ch->b1 - ch->b0, pool, c->n == 4 ? 1024 : 256);
    vidk_pool_run(pool, (int)((ch->b1 - ch->b0 + j.per - 1) / j.per), unpack_job, &j);
}

// Plane mode: the picture's planes to the staging buffer (down 0) or back (down 1), bands of
// 16 rows per job.
struct PlaneJob {
    VidkPicture *pic;
    uint8_t *buf;
    size_t off[3];
    int pw[3], ph[3], jobs[4]; // jobs[p]: first job of plane p
    bool down;
    uint32_t skip; // planes (bit p) left alone: copied directly, or not this pass
};
constexpr int kPlaneRows = 16;

void plane_job(void *arg, int job, int) {
    const PlaneJob *j = static_cast<const PlaneJob *>(arg);
    const int p = job >= j->jobs[2] ? 2 : job >= j->jobs[1] ? 1 : 0;
    if (j->skip >> p & 1) return;
    const int y0 = (job - j->jobs[p]) * kPlaneRows, y1 = imin(y0 + kPlaneRows, j->ph[p]);
    for (int y = y0; y < y1; y++) {
        uint8_t *pic_row =
            static_cast<uint8_t *>(j->pic->data[p]) + (ptrdiff_t)y * j->pic->stride[p];
        uint8_t *buf_row = j->buf + j->off[p] + (size_t)y * j->pw[p];
        if (j->down)
            memcpy(pic_row, buf_row, (size_t)j->pw[p]);
        else
            memcpy(buf_row, pic_row, (size_t)j->pw[p]);
    }
}

int compact_inverse_host(Exec *x, const VidkH264Batch *b, VidkPicture *pic, Plan *pl,
                         VidkThreadPool *pool) {
    int err = 0;
    VidkH264CudaOpts &o = pl->o;
    Class cls[2];
    Chunk *chunks = nullptr;
    uint32_t *cnt = nullptr;
    int nch = 0, next_unpack = 0, ev_common = -1, ev_up[3] = {-1, -1, -1},
        ev_dn[3] = {-1, -1, -1};
    int writers[3][VIDK_CUDA_MAX_STREAMS]; // plane mode: last event writing device plane p, per
                                           // stream
    uint32_t direct =
        0; // plane mode: planes (bit p) copied straight from / to the registered picture
    bool all_direct;
    uint8_t *h_common = nullptr, *d_common = nullptr, *h_plane = nullptr, *d_plane = nullptr;
    size_t off_dcm, off_dcc, common_bytes, h2d_total = 0, d2h_total = 0, plane_bytes = 0,
                                           samples = 0;
    const uint32_t ndc = b->dc.count;
    const int np = n_planes(b->chroma);
    uint32_t units, target, maxjobs = 1;
    GraphState *gs = nullptr;
    bool packed_all, plane;
    PlaneJob pj;

    memset(&pj, 0, sizeof(pj));
    pj.pic = pic;
    for (int p = 0; p < np; p++) {
        plane_dims(b->w, b->h, b->chroma, p, &pj.pw[p], &pj.ph[p]);
        pj.off[p] = plane_bytes;
        plane_bytes = align_up(plane_bytes + (size_t)pj.pw[p] * pj.ph[p], 64);
        samples += (size_t)pj.pw[p] * pj.ph[p];
        pj.jobs[p + 1] = pj.jobs[p] + (pj.ph[p] + kPlaneRows - 1) / kPlaneRows;
    }
    for (int p = np; p < 3; p++)
        pj.jobs[p + 1] = pj.jobs[p];
    units = b->list[0].count + 4 * b->list[1].count;
    // Planes when the coded blocks cover at least half of the picture: then the whole
    // picture both ways costs at most twice the per-block bytes, in row copies.
    plane = o.fused && o.line_per_thread && o.coalesced &&
            (o.plane == 1 || (o.plane == -1 && (uint64_t)units * 16 * 2 >= (uint64_t)samples));
    target = chunk_target(o, units, pl->ns);
    pl->graph = !x->emu && !plane && (o.graphs == 1 || (o.graphs == -1 && units <= target));
    if (pl->graph && !(gs = graph_state(x))) return VIDK_ERR(ENOMEM);
    if (pl->graph && o.graphs == -1 && gs->broken) pl->graph = false;
    classes_init(cls, b, o, target, !o.pipeline || pl->graph, plane);
    for (int s = 0; s < 2; s++)
        if ((cls[s].chunk + 255) / 256 + 1 > maxjobs) maxjobs = (cls[s].chunk + 255) / 256 + 1;

    for (int p = 0; p < np && plane; p++)
        if (!o.staged && plane_pinned(x, pic, p, pj.pw[p], pj.ph[p])) direct |= 1u << p;
    if ((err = common_buffers(x, ndc, &off_dcm, &off_dcc, &common_bytes, &h_common,
                              &d_common)) < 0)
        return err;
    all_direct = direct == (1u << np) - 1;
    if (plane && !all_direct && (err = buf(x, SLOT_PLANE, true, plane_bytes, &h_plane)) < 0)
        return err;
    if (plane && (err = buf(x, SLOT_PLANE, false, plane_bytes, &d_plane)) < 0) return err;
    for (int s = 0; s < 2; s++)
        if ((err = class_buffers(x, &cls[s], s, !plane)) < 0) return err;
    chunks = static_cast<Chunk *>(calloc(2 * kMaxChunks, sizeof(Chunk)));
    cnt = static_cast<uint32_t *>(
        calloc(2 * (size_t)maxjobs, sizeof(uint32_t))); // counts, then plane masks
    if (!chunks || !cnt) {
        err = VIDK_ERR(ENOMEM);
        goto cleanup;
    }
    nch = make_chunks(chunks, cls, pl->graph || !o.pipeline, pl->ns);
    fill_common(h_common, b, off_dcm, off_dcc);
    if (plane && !all_direct) { // planes not registered: row copies into pinned memory
        pj.buf = h_plane;
        pj.down = false;
        pj.skip = direct;
        vidk_pool_run(pool, pj.jobs[3], plane_job, &pj);
        for (int p = 0; p < np; p++)
            if (!(direct >> p & 1) && ((err = track(x, kHost, RES_PIC + p, ACC_READ)) < 0 ||
                                       (err = track(x, kHost, RES_STAGE + p, ACC_WRITE)) < 0))
                goto cleanup;
    }

    if ((err = timing_start(x)) < 0) goto cleanup;
    packed_all = pl->graph || !o.pipeline;
    if (packed_all)
        for (int i = 0; i < nch; i++)
            pack_chunk_host(&cls[chunks[i].cls], &b->list[chunks[i].cls], pic, o.fused, plane,
                            &chunks[i], pool, cnt, cnt + maxjobs);
    if (pl->graph) {
        GraphCall gc;
        memset(&gc, 0, sizeof(gc));
        gc.d_common = d_common, gc.h_common = h_common, gc.common_bytes = common_bytes;
        for (int s = 0; s < 2; s++) {
            const Class *c = &cls[s];
            VidkH264CudaOpts oc = o;
            uint32_t nv = 0;
            oc.sparse = 0;
            for (int i = 0; i < nch; i++) // one chunk per class here
                if (chunks[i].cls == s)
                    oc.sparse = chunks[i].sparse, nv = chunks[i].v1 - chunks[i].v0;
            graph_class(gc, s, c, oc, nv, d_common, off_dcm, off_dcc, &h2d_total, &d2h_total);
        }
        bool done;
        err = graph_call(x, gs, gc, o.graphs, &h2d_total, &d2h_total, &done);
        if (done) {
            if (err < 0) goto cleanup;
            for (int i = 0; i < nch; i++)
                unpack_chunk_host(&cls[chunks[i].cls], &b->list[chunks[i].cls], pic, o.fused,
                                  &chunks[i], pool);
            goto cleanup;
        }
    }
    if ((err = stage(x, VIDK_CUDA_STAGE_H2D, true, 0, 0)) < 0 ||
        (err = track(x, 0, RES_COMMON, ACC_WRITE)) < 0 ||
        (err = h2d(x, d_common, h_common, common_bytes, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_H2D, false, 0, common_bytes)) < 0 ||
        (ev_common = event_record(x, 0)) < 0) {
        err = ev_common < 0 && !err ? ev_common : err;
        goto cleanup;
    }
    h2d_total += common_bytes;
    for (int i = 1; i < pl->ns; i++)
        if ((err = event_wait(x, i, ev_common)) < 0) goto cleanup;
    // Plane mode. The ordering, by construction (the ordering check of debug_order.cuh verifies
    // it on every call, emulated or not; the emulation alone runs streams one after the other):
    //  (1) The host fills staged plane p before it queues the upload of p, which reads it.
    //  (2) Every plane goes up on stream 0 (event ev_up[p]), after the common data.
    //  (3) A chunk reads the prediction of the planes its blocks touch (pmask, from the same
    //      blocks) and writes their reconstruction in place: on stream 0 it follows (2) in
    //      stream order, on another stream it waits ev_up[p] for each such plane first.
    //      Chunks write disjoint blocks (an overlapping batch never gets here), so chunks
    //      need no order among themselves.
    //  (4) `writers` lists, per plane and stream, the event after the last queued operation
    //      that writes device plane p on that stream: the upload (stream 0) and every chunk
    //      touching p, noted as each is queued (every writer is queued before the first
    //      download). The download of p on stream sp waits for the entry of every other
    //      stream, so it follows every writer of p: the upload too, also when no chunk touches
    //      p (no block of the plane, or none of the only size class that runs: 8x8 lists are
    //      luma only). Waiting for the upload also orders the download's write of the
    //      staged plane / the registered picture after the upload read it.
    //  (5) The host writes staged plane p into the picture after event_sync(ev_dn[p]);
    //      downloads of other planes write other bytes.
    //  (6) finish() synchronises every stream before the call returns (slots are reused).
    for (int p = 0; p < 3; p++)
        for (int s = 0; s < VIDK_CUDA_MAX_STREAMS; s++)
            writers[p][s] = -1;
    for (int p = 0; p < np && plane; p++) {
        const size_t pb = (size_t)pj.pw[p] * pj.ph[p];
        if ((err = stage(x, VIDK_CUDA_STAGE_H2D, true, 0, 0)) < 0 ||
            (err = track(x, 0, (direct >> p & 1 ? RES_PIC : RES_STAGE) + p, ACC_READ)) < 0 ||
            (err = track(x, 0, RES_DEV + p, ACC_WRITE)) < 0 ||
            (err = direct >> p & 1
                       ? h2d_2d(x, d_plane + pj.off[p], (size_t)pj.pw[p], pic->data[p],
                                (size_t)pic->stride[p], (size_t)pj.pw[p], (size_t)pj.ph[p], 0)
                       : h2d(x, d_plane + pj.off[p], h_plane + pj.off[p], pb, 0)) < 0 ||
            (err = stage(x, VIDK_CUDA_STAGE_H2D, false, 0, pb)) < 0 ||
            (ev_up[p] = event_record(x, 0)) < 0) {
            err = ev_up[p] < 0 && !err ? ev_up[p] : err;
            goto cleanup;
        }
        writers[p][0] = ev_up[p];
        h2d_total += pb;
    }
    for (int i = 0; i < nch; i++) {
        Chunk *ch = &chunks[i];
        Class *c = &cls[ch->cls];
        if (!packed_all)
            pack_chunk_host(c, &b->list[ch->cls], pic, o.fused, plane, ch, pool, cnt,
                            cnt + maxjobs);
        for (int p = 0; p < np && plane && ch->stream; p++)
            if ((ch->pmask >> p & 1) && (err = event_wait(x, ch->stream, ev_up[p])) < 0)
                goto cleanup;
        if ((err = track(x, ch->stream, RES_COMMON, ACC_READ)) < 0) goto cleanup;
        if (x->emu && plane) { // the emulation also checks the plane mask the ordering rests on
            uint32_t m = 0;
            for (uint32_t k = ch->b0; k < ch->b1; k++)
                m |= 1u << b->list[ch->cls].plane[k];
            if (m != ch->pmask) {
                vidk_log(x->ctx, VIDK_LOG_ERROR,
                         "cuda h264: chunk %d plane mask %#x, its blocks touch %#x", i,
                         (unsigned)ch->pmask, (unsigned)m);
                err = VIDK_ERR(EIO);
                goto cleanup;
            }
        }
        for (int p = 0; p < np && plane; p++)
            if ((ch->pmask >> p & 1) &&
                (err = track(x, ch->stream, RES_DEV + p, ACC_BLOCKS)) < 0)
                goto cleanup;
        VidkH264CudaOpts oc = o;
        oc.sparse = ch->sparse;
        const InvKernel &k = inv_select(ch->cls, oc, plane);
        const Launch l = inv_geometry(k, oc, ch->b1 - ch->b0);
        const size_t vb = (size_t)(ch->v1 - ch->v0) * 2;
        const size_t rb = (size_t)(ch->b1 - ch->b0) * c->rec_bytes;
        const size_t ob = (size_t)(ch->b1 - ch->b0) * c->out_bytes;
        InvArgs a = inv_args(c, ch->cls, d_common, off_dcm, off_dcc, ch->b0, ch->b1, o.work);
        for (int p = 0; p < np && plane; p++)
            a.pl[p] = d_plane + pj.off[p], a.pitch[p] = pj.pw[p];
        if ((err = chunk_launch(x, c, ch, k, l, a, rb, vb)) < 0 ||
            (!plane && (err = chunk_download(x, c, ch, ob)) < 0))
            goto cleanup;
        if ((ch->ev = event_record(x, ch->stream)) < 0) {
            err = ch->ev;
            goto cleanup;
        }
        for (int p = 0; p < np && plane; p++)
            if (ch->pmask >> p & 1) writers[p][ch->stream] = ch->ev;
        h2d_total += rb + vb;
        d2h_total += ob;
        // Write back the chunks that have landed, in order, while later ones run.
        if (!plane && (err = unpack_landed(x, cls, b, pic, o.fused, chunks, &next_unpack, i,
                                           false, pool)) < 0)
            goto cleanup;
    }
    if (plane) {
        // Plane p comes back on stream p % streams once every writer of it has run (4); the
        // host writes the staged planes back while later planes are in flight (5).
        for (int p = 0; p < np; p++) {
            const int sp = p % pl->ns;
            const size_t pb = (size_t)pj.pw[p] * pj.ph[p];
            for (int s = 0; s < pl->ns; s++)
                if (s != sp && writers[p][s] >= 0 &&
                    (err = event_wait(x, sp, writers[p][s])) < 0)
                    goto cleanup;
            if ((err = stage(x, VIDK_CUDA_STAGE_D2H, true, sp, 0)) < 0 ||
                (err = track(x, sp, RES_DEV + p, ACC_READ)) < 0 ||
                (err = track(x, sp, (direct >> p & 1 ? RES_PIC : RES_STAGE) + p, ACC_WRITE)) <
                    0 ||
                (err =
                     direct >> p & 1
                         ? d2h_2d(x, pic->data[p], (size_t)pic->stride[p], d_plane + pj.off[p],
                                  (size_t)pj.pw[p], (size_t)pj.pw[p], (size_t)pj.ph[p], sp)
                         : d2h(x, h_plane + pj.off[p], d_plane + pj.off[p], pb, sp)) < 0 ||
                (err = stage(x, VIDK_CUDA_STAGE_D2H, false, sp, pb)) < 0 ||
                (ev_dn[p] = event_record(x, sp)) < 0) {
                err = ev_dn[p] < 0 && !err ? ev_dn[p] : err;
                goto cleanup;
            }
            d2h_total += pb;
        }
        pj.down = true;
        for (int p = 0; p < np; p++) {
            if ((err = event_sync(x, ev_dn[p])) < 0) goto cleanup;
            if (direct >> p & 1) continue;
            if ((err = track(x, kHost, RES_STAGE + p, ACC_READ)) < 0 ||
                (err = track(x, kHost, RES_PIC + p, ACC_WRITE)) < 0)
                goto cleanup;
            pj.skip = ~(1u << p);
            vidk_pool_run(pool, pj.jobs[p + 1], plane_job,
                          &pj); // jobs of planes 0..p (others skip)
        }
    } else if ((err = unpack_landed(x, cls, b, pic, o.fused, chunks, &next_unpack, nch, true,
                                    pool)) < 0) {
        goto cleanup;
    }
    err = finish(x);
cleanup:
    free(chunks);
    free(cnt);
    return err;
}

int batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic,
                  const VidkH264CudaOpts *opts, bool emu) {
    Exec x;
    Plan pl;
    bool overlap = false;
    int err, valid;
    VidkThreadPool *pool = nullptr;
    if (!ctx || (!emu && !ctx->cuda)) return ctx ? VIDK_ERR_NODEV : VIDK_ERR(EINVAL);
    if (!b || !picture_ok(pic, b->w, b->h, b->chroma)) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 batch_inverse: invalid batch or picture");
        return VIDK_ERR(EINVAL);
    }
    exec_init(&x, ctx, emu);
    if ((err = resolve(&x, opts, &pl)) < 0) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 batch_inverse: invalid options");
        return err;
    }
    pl.o.compact = 1; // a batch is compacted by construction
    if (!emu && (err = vidk_cuda_enter(ctx)) < 0) return err;
    // The validation runs over the staging pool too (it reads every block once).
    if (pl.o.host && (err = host_pool(&x, pl.o.host_threads, &pool)) < 0) goto out;
    if ((valid = batch_valid(b, &overlap, pool)) <= 0) {
        err = valid < 0 ? valid : VIDK_ERR(EINVAL);
        if (!valid)
            vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 batch_inverse: invalid batch or picture");
        goto out;
    }
    if (overlap) {
        vidk_log(ctx, VIDK_LOG_DEBUG,
                 "cuda h264 batch_inverse: overlapping blocks, computed on the host");
        err = host_batch_inverse(ctx, b, pic);
        // No device work; the call's timing reads zero (the last timing is the last call's).
        if (err >= 0 && !emu && (err = timing_start(&x)) >= 0) err = finish(&x);
        goto out;
    }
    err = pl.o.host ? compact_inverse_host(&x, b, pic, &pl, pool)
                    : compact_inverse(&x, b, pic, &pl);
out:
    exec_end(&x);
    return err;
}

} // namespace vidk_h264host
