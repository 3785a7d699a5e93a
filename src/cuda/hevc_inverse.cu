// HEVC on the device: vidk_hevc_batch_inverse (staging without all-zero TBs, prediction up
// and reconstruction down, overlapping TBs added on the host). Overview in hevc.cu.
#include "hevc_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_hevchost {

// ---- inverse
// ----------------------------------------------------------------------------------------

struct InvRun {
    HevcExec *x;
    VidkHevcBatch *b;
    VidkPicture *pic;
    VidkHevcPlanes pl;
    int out; // OUT_*
    Layout L;
    uint32_t *idx[4]; // non-zero TBs of each list (indices, increasing); dense: all TBs
    uint32_t nzn[4];
    // Dense classes (no picture, the list's whole lev array registered): every TB goes up
    // straight from lev, zero TBs included (no host scan); idx is the identity.
    bool dense[4];
    uint8_t *h_io, *d_io;
    const int16_t *ds;
};

bool all_zero(const int16_t *v, size_t n) {
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint64_t w;
        memcpy(&w, v + i, 8);
        acc |= w;
    }
    return acc == 0;
}

// Non-zero TB lists (indices in increasing order), over the host pool: pieces write their
// non-zero indices at the start of their own range, then move them down in order.
int find_nonzero(InvRun *r) {
    size_t total = 0;
    uint32_t cnt[4];
    static const uint32_t one[4] = {1, 1, 1, 1};
    for (int s = 0; s < 4; s++) {
        cnt[s] = r->b->list[s].count;
        total += cnt[s];
    }
    uint32_t *all = static_cast<uint32_t *>(malloc((total ? total : 1) * sizeof(uint32_t)));
    if (!all) return VIDK_ERR(ENOMEM);
    r->idx[0] = all;
    size_t off = 0;
    for (int s = 0; s < 4; s++) {
        r->idx[s] = all + off;
        off += cnt[s];
        if (r->dense[s]) { // every TB, no scan
            for (uint32_t i = 0; i < cnt[s]; i++)
                r->idx[s][i] = i;
            cnt[s] = 0;
        }
    }
    Pieces P;
    make_pieces(&P, cnt, one, pool_threads(r->x), r->x->piece_min);
    run_pieces(r->x, &P, [r](Piece *q) {
        const VidkHevcTbList *l = &r->b->list[q->s];
        const size_t len = (size_t)16 << (2 * q->s);
        uint32_t *d = r->idx[q->s] + q->a, n = 0;
        for (uint32_t i = q->a; i < q->a + q->n; i++)
            if (!all_zero(l->lev + (size_t)i * len, len)) d[n++] = i;
        q->cnt = n;
    });
    uint32_t nzn[4];
    for (int s = 0; s < 4; s++)
        nzn[s] = r->dense[s] ? r->b->list[s].count : 0;
    for (int i = 0; i < P.n; i++) { // pieces are in increasing order per class
        const Piece *q = &P.p[i];
        if (nzn[q->s] != q->a)
            memmove(r->idx[q->s] + nzn[q->s], r->idx[q->s] + q->a, (size_t)q->cnt * 4);
        nzn[q->s] += q->cnt;
    }
    for (int s = 0; s < 4; s++)
        r->nzn[s] = nzn[s];
    return 0;
}

// Do two non-zero TBs cover a common sample? (4x4-cell map per plane.)
int find_overlap(const InvRun *r, bool *overlap) {
    *overlap = false;
    size_t first[4] = {0, 0, 0, 0};
    int cw[3];
    for (int p = 0; p < 3; p++) {
        cw[p] = (r->pl.w[p] + 3) / 4;
        first[p + 1] = first[p] + (size_t)cw[p] * (size_t)((r->pl.h[p] + 3) / 4);
    }
    uint8_t *map = static_cast<uint8_t *>(calloc(first[3] ? first[3] : 1, 1));
    if (!map) return VIDK_ERR(ENOMEM);
    for (int s = 0; s < 4 && !*overlap; s++) {
        const VidkHevcTbList *l = &r->b->list[s];
        const int c = 1 << s; // cells per side
        for (uint32_t q = 0; q < r->nzn[s] && !*overlap; q++) {
            const VidkHevcTb *t = &l->tb[r->idx[s][q]];
            uint8_t *m =
                map + first[t->plane] + (size_t)(t->y / 4) * (size_t)cw[t->plane] + t->x / 4;
            for (int y = 0; y < c && !*overlap; y++, m += cw[t->plane]) {
                for (int xx = 0; xx < c; xx++)
                    if (m[xx]) *overlap = true;
                memset(m, 1, (size_t)c);
            }
        }
    }
    free(map);
    return 0;
}

// One TB row of samples (4..64 bytes): constant-size copies the compiler inlines.
inline void copy_row(uint8_t *d, const uint8_t *s, int bytes) {
    switch (bytes) {
    case 4:
        memcpy(d, s, 4);
        break;
    case 8:
        memcpy(d, s, 8);
        break;
    case 16:
        memcpy(d, s, 16);
        break;
    case 32:
        memcpy(d, s, 32);
        break;
    default:
        memcpy(d, s, 64);
    }
}

// Keys, levels and (fused) prediction samples of TBs [a, a + m) of class s of chunk j.
void inv_stage_range(InvRun *r, int j, int s, uint32_t a, uint32_t m) {
    const Chunk *c = &r->L.c[j];
    const int pb = r->pl.pb;
    {
        const VidkHevcTbList *l = &r->b->list[s];
        const int n = 4 << s;
        const size_t len = (size_t)n * n;
        uint16_t *keys = reinterpret_cast<uint16_t *>(r->h_io + c->key_off[s]);
        int16_t *lev = reinterpret_cast<int16_t *>(r->h_io + c->data_off[s]);
        uint8_t *pix = r->h_io + c->pix_off[s];
        const uint32_t *idx = r->idx[s] + c->lo[s];
        if (!a) keys[0] = pack_key(&l->tb[idx[0]]);
        if (c->dir_in[s]) { // levels go up straight from the list: keys only
            if (c->key_step[s])
                for (uint32_t i = a; i < a + m; i++)
                    keys[i] = pack_key(&l->tb[idx[i]]);
            return;
        }
        for (uint32_t i = a; i < a + m; i++) {
            const VidkHevcTb *t = &l->tb[idx[i]];
            if (c->key_step[s]) keys[i] = pack_key(t);
            memcpy(lev + i * len, l->lev + (size_t)idx[i] * len, len * 2);
            if (r->out != OUT_RES) {
                const ptrdiff_t st = r->pic->stride[t->plane];
                const uint8_t *row = static_cast<const uint8_t *>(r->pic->data[t->plane]) +
                                     (ptrdiff_t)t->y * st + (ptrdiff_t)t->x * pb;
                uint8_t *d = pix + i * len * (size_t)pb;
                for (int y = 0; y < n; y++, row += st, d += (size_t)n * pb)
                    copy_row(d, row, n * pb);
            }
        }
    }
}

void inv_stage(InvRun *r, int j) {
    static const uint32_t one[4] = {1, 1, 1, 1};
    const Chunk *c = &r->L.c[j];
    uint32_t n[4];
    for (int s = 0; s < 4; s++) { // classes with work: levels to gather or per-TB keys
        n[s] = c->dir_in[s] && !c->key_step[s] ? 0 : c->n[s];
        if (!n[s] && c->n[s]) inv_stage_range(r, j, s, 0, 1); // the one key
    }
    Pieces P;
    make_pieces(&P, n, one, pool_threads(r->x), r->x->piece_min);
    run_pieces(r->x, &P, [r, j](Piece *q) { inv_stage_range(r, j, q->s, q->a, q->n); });
}

// Direct copies of chunk j: levels up for dense classes, residuals down into registered
// res arrays (residual output without a picture).
void inv_plan_direct(InvRun *r, int j) {
    Chunk *c = &r->L.c[j];
    for (int s = 0; s < 4; s++) {
        const size_t len = (size_t)16 << (2 * s), n = c->n[s], lo = c->lo[s];
        c->dir_in[s] = c->dir_nnz[s] = c->dir_out[s] = false;
        if (!n || !r->dense[s]) continue;
        c->dir_in[s] = true;
        c->dir_out[s] = !r->pic && pinned(r->x, r->b->list[s].res + lo * len, n * len * 2);
    }
}

// Upload segments of chunk j: keys, the four classes' levels, the prediction samples.
int inv_up_segs(const InvRun *r, int j, Seg g[6]) {
    const Chunk *c = &r->L.c[j];
    int n = 0;
    g[n++] = {c->begin, c->data_off[0] - c->begin, nullptr};
    for (int s = 0; s < 4; s++) {
        const size_t len = (size_t)16 << (2 * s);
        g[n++] = {c->data_off[s], (size_t)c->n[s] * len * 2,
                  c->dir_in[s] ? r->b->list[s].lev + (size_t)c->lo[s] * len : nullptr};
    }
    g[n++] = {c->pix_off[0], c->in_end - c->pix_off[0], nullptr};
    return n;
}

// Download segments of chunk j: residuals per class, or the reconstructed samples.
int inv_down_segs(const InvRun *r, int j, Seg g[4]) {
    const Chunk *c = &r->L.c[j];
    if (r->out != OUT_RES) {
        g[0] = {c->out_begin, c->out_end - c->out_begin, nullptr};
        return 1;
    }
    for (int s = 0; s < 4; s++) {
        const size_t len = (size_t)16 << (2 * s);
        g[s] = {c->data_off[s], (size_t)c->n[s] * len * 2,
                c->dir_out[s] ? r->b->list[s].res + (size_t)c->lo[s] * len : nullptr};
    }
    return 4;
}

InvArgs inv_args(const InvRun *r, int j) {
    const Chunk *c = &r->L.c[j];
    InvArgs a;
    memset(&a, 0, sizeof(a));
    for (int s = 0; s < 4; s++) {
        a.keys[s] = reinterpret_cast<const uint16_t *>(r->d_io + c->key_off[s]);
        a.key_step[s] = c->key_step[s];
        a.lev[s] = reinterpret_cast<int16_t *>(r->d_io + c->data_off[s]);
        a.pix[s] = r->d_io + c->pix_off[s];
        a.n[s] = c->n[s];
    }
    for (int s = 0; s < 5; s++)
        a.blk0[s] = c->blk0[s];
    a.ds = r->ds;
    a.bd = r->b->bitdepth;
    return a;
}

// Results of TBs [a, a + m) of class s of chunk j: reconstructed samples into the
// picture (fused: the TBs do not overlap), or residuals into the list (without a
// picture). With a picture in residual mode the adds come later, in list order
// (inv_add_host).
void inv_unpack_range(InvRun *r, int j, int s, uint32_t a, uint32_t m) {
    const Chunk *c = &r->L.c[j];
    const int pb = r->pl.pb;
    {
        const VidkHevcTbList *l = &r->b->list[s];
        const int n = 4 << s;
        const size_t len = (size_t)n * n;
        const uint32_t *idx = r->idx[s] + c->lo[s];
        if (r->out == OUT_RES) {
            if (r->pic || c->dir_out[s]) return;
            const int16_t *res = reinterpret_cast<const int16_t *>(r->h_io + c->data_off[s]);
            if (r->dense[s]) { // identity: one run
                memcpy(l->res + (size_t)idx[a] * len, res + a * len, (size_t)m * len * 2);
                return;
            }
            for (uint32_t i = a; i < a + m; i++)
                memcpy(l->res + (size_t)idx[i] * len, res + i * len, len * 2);
            return;
        }
        const uint8_t *pix = r->h_io + c->pix_off[s];
        for (uint32_t i = a; i < a + m; i++) {
            const VidkHevcTb *t = &l->tb[idx[i]];
            const ptrdiff_t st = r->pic->stride[t->plane];
            uint8_t *row = static_cast<uint8_t *>(r->pic->data[t->plane]) +
                           (ptrdiff_t)t->y * st + (ptrdiff_t)t->x * pb;
            const uint8_t *src = pix + i * len * (size_t)pb;
            for (int y = 0; y < n; y++, row += st, src += (size_t)n * pb)
                copy_row(row, src, n * pb);
        }
    }
}

void inv_unpack(InvRun *r, int j) {
    static const uint32_t one[4] = {1, 1, 1, 1};
    if (r->out == OUT_RES && r->pic) return;
    Pieces P;
    make_pieces(&P, r->L.c[j].n, one, pool_threads(r->x), r->x->piece_min);
    run_pieces(r->x, &P, [r, j](Piece *q) { inv_unpack_range(r, j, q->s, q->a, q->n); });
}

// Residual mode with a picture: every non-zero TB added in list order, index order.
void inv_add_host(InvRun *r) {
    const VidkHevcDSP *dsp = &r->x->ctx->hevc;
    const int bd = r->b->bitdepth;
    for (int s = 0; s < 4; s++) {
        const VidkHevcTbList *l = &r->b->list[s];
        const size_t len = (size_t)16 << (2 * s);
        for (int j = 0; j < r->L.k; j++) {
            const Chunk *c = &r->L.c[j];
            const int16_t *res = reinterpret_cast<const int16_t *>(r->h_io + c->data_off[s]);
            for (uint32_t i = 0; i < c->n[s]; i++) {
                const VidkHevcTb *t = &l->tb[r->idx[s][c->lo[s] + i]];
                const ptrdiff_t st = r->pic->stride[t->plane];
                uint8_t *row =
                    static_cast<uint8_t *>(r->pic->data[t->plane]) + (ptrdiff_t)t->y * st;
                if (bd == 8)
                    dsp->add8[s](row + t->x, st, res + i * len);
                else
                    dsp->add16[s](reinterpret_cast<uint16_t *>(row) + t->x, st, res + i * len,
                                  bd);
            }
        }
    }
}

int run_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic,
                const VidkHevcCudaOpts *opts, bool emu) {
    HevcExec x;
    VidkHevcCudaOpts o;
    InvRun r;
    int err = 0, k = 0, *ev = nullptr;
    KoSig *sig = nullptr, now;
    const int32_t *qs = nullptr;

    if (!ctx || !b) return VIDK_ERR(EINVAL);
    if (!emu && !ctx->cuda) return VIDK_ERR_NODEV;
    if ((err = resolve_opts(ctx, opts, emu, &o)) < 0) return err;
    if ((err = vidk_hevc_batch_check(b, 0)) < 0) return err;
    for (int s = 0; s < 4; s++) {
        bool uniform;
        if ((err = scan_records(&b->list[s], s, b->bitdepth, nullptr, 0, b->list[s].count,
                                &uniform)) < 0)
            return err;
    }
    memset(&r, 0, sizeof(r));
    memset(&now, 0, sizeof(now));
    r.pl.pb = 2;
    if (pic) {
        if ((err = vidk_hevc_picture_planes(pic, b->bitdepth, &r.pl)) < 0) return err;
        if ((err = check_positions(b, &r.pl)) < 0) return err;
    }
    hevc_exec_init(&x, ctx, emu);
    exec_opts(&x, &o);
    r.x = &x;
    r.b = b;
    r.pic = pic;
    exec_use_streams(&x, o.streams);
    for (int s = 0; s < 4; s++) {
        const VidkHevcTbList *l = &b->list[s];
        r.dense[s] = !pic && pinned(&x, l->lev, ((size_t)l->count << (4 + 2 * s)) * 2);
    }
    if ((err = host_pool(&x, o.host_threads)) < 0) goto out;
    if ((err = find_nonzero(&r)) < 0) goto out;
    r.out = OUT_RES;
    if (pic && o.fused) {
        bool overlap;
        if ((err = find_overlap(&r, &overlap)) < 0) goto out;
        if (!overlap) r.out = b->bitdepth == 8 ? OUT_U8 : OUT_U16;
    }
    if ((k = chunk_count(r.nzn, o.chunks)) < 0) {
        err = VIDK_ERR(EINVAL);
        goto out;
    }
    if ((err = layout_ranges(&r.L, r.nzn, k, false)) < 0) goto out;
    for (int j = 0; j < k; j++)
        for (int s = 0; s < 4; s++) {
            Chunk *c = &r.L.c[j];
            bool uniform;
            (void)scan_records(&b->list[s], s, b->bitdepth, r.idx[s], c->lo[s], c->n[s],
                               &uniform); // valid: checked
            c->key_step[s] = uniform ? 0 : 1;
        }
    layout_offsets(&r.L, false, r.out == OUT_RES ? 0 : r.pl.pb, 0);
    for (int j = 0; j < k; j++)
        inv_plan_direct(&r, j);
    if (!emu && (err = vidk_cuda_enter(ctx)) < 0) goto out;
    if ((err = events_alloc(&x, k)) < 0) goto out;
    if (!(ev = static_cast<int *>(malloc((size_t)k * sizeof(int))))) {
        err = VIDK_ERR(ENOMEM);
        goto out;
    }
    for (int j = 0; j < k; j++)
        ev[j] = -1;
    if ((err = buf(&x, SLOT_INV_IO, true, r.L.io_bytes, &r.h_io)) < 0 ||
        (err = buf(&x, SLOT_INV_IO, false, r.L.io_bytes, &r.d_io)) < 0)
        goto out;
    if ((err = scaling_tables(&x, b, &qs, &r.ds)) < 0) goto out;
    if (!emu && (err = ko_slot(&x, &sig)) < 0) goto out;
    sig_fill(&now, &r.L, false, &o, b, r.out, r.d_io, nullptr, r.ds);

    if (o.kernel_only) {
        const InvK &kf = inv_select(o.tensor, b->scaling_lists, r.out);
        if (!sig_match(sig, &now)) {
            err = VIDK_ERR(EINVAL);
            goto out;
        }
        err = kernel_only_run(&x, &r, k, kf, inv_args, kTileInv[0]);
        goto out;
    }
    if (sig) sig->magic = 0;

    if (!o.overlap_host)
        for (int j = 0; j < k; j++)
            if (!r.L.c[j].empty) inv_stage(&r, j);
    if ((err = timing_start(&x)) < 0) goto out;
    for (int j = 0; j < k; j++) {
        const Chunk *c = &r.L.c[j];
        const int s = j % x.ns;
        if (c->empty) continue;
        if (o.overlap_host) inv_stage(&r, j);
        const InvArgs a = inv_args(&r, j);
        const InvK &kf = inv_select(o.tensor, b->scaling_lists, r.out);
        Seg g[6];
        size_t moved = 0;
        int ng = inv_up_segs(&r, j, g);
        if ((err = chunk_up_launch(&x, kf, a, c, r.d_io, r.h_io, g, ng, s, kTileInv[0])) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_D2H, true, s, 0)) < 0)
            goto out;
        ng = inv_down_segs(&r, j, g);
        if ((err = copy_segs(&x, false, r.d_io, r.h_io, g, ng, s, &moved)) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_D2H, false, s, moved)) < 0 ||
            (err = event_record(&x, s)) < 0)
            goto out;
        ev[j] = err;
    }
    for (int j = 0; j < k; j++) {
        if (r.L.c[j].empty) continue;
        if ((err = event_sync(&x, ev[j])) < 0) goto out;
        inv_unpack(&r, j);
    }
    if ((err = finish(&x)) < 0) goto out;
    if (r.out == OUT_RES && pic) inv_add_host(&r);
    if (!pic) {
        // All-zero TBs have zero residuals (the c backend transforms them too).
        for (int s = 0; s < 4; s++) {
            VidkHevcTbList *l = &b->list[s];
            const size_t len = (size_t)16 << (2 * s);
            uint32_t q = 0;
            if (r.dense[s]) continue; // every TB was computed
            for (uint32_t i = 0; i < l->count; i++) {
                if (q < r.nzn[s] && r.idx[s][q] == i) {
                    q++;
                    continue;
                }
                memset(l->res + (size_t)i * len, 0, len * 2);
            }
        }
    }
    if (sig) {
        *sig = now;
        sig->magic = kMagicKo;
    }
    err = 0;
out:
    hevc_exec_end(&x);
    free(r.L.c);
    free(r.idx[0]);
    free(ev);
    return err;
}

double now_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int cmp_double(const void *a, const void *b) {
    const double x = *static_cast<const double *>(a), y = *static_cast<const double *>(b);
    return x < y ? -1 : x > y;
}

double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace vidk_hevchost
