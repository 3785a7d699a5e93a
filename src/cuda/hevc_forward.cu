// HEVC on the device: the chunk layout shared by both directions, the kernel-only
// signature, and vidk_hevc_batch_forward (staging, two-phase download, the download mode per
// size class). Overview in hevc.cu.
#include "hevc_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_hevchost {

// ---- chunk layout
// ---------------------------------------------------------------------------------

uint32_t tiles_of(uint32_t n, int s, bool forward) {
    const uint32_t t = (uint32_t)(forward ? kTileFwd[s] : kTileInv[s]);
    return (n + t - 1) / t;
}

// Chunk count: the requested one, more when a chunk would exceed kMaxChunkValues.
int chunk_count(const uint32_t cnt[4], int want) {
    uint64_t total = 0;
    for (int s = 0; s < 4; s++)
        total += (uint64_t)cnt[s] << (4 + 2 * s);
    uint64_t k = (total + kMaxChunkValues - 1) / kMaxChunkValues;
    if (k < (uint64_t)want) k = (uint64_t)want;
    return k > (uint64_t)kMaxChunksTotal ? -1 : (int)k;
}

// Chunk ranges: chunk j gets TBs [cnt * j / k, cnt * (j + 1) / k) of every class.
int layout_ranges(Layout *L, const uint32_t cnt[4], int k, bool forward) {
    L->k = k;
    L->c = static_cast<Chunk *>(calloc((size_t)k, sizeof(Chunk)));
    if (!L->c) return VIDK_ERR(ENOMEM);
    for (int j = 0; j < k; j++) {
        Chunk *c = &L->c[j];
        c->empty = true;
        uint32_t blk = 0;
        for (int s = 0; s < 4; s++) {
            const uint32_t lo = (uint32_t)((uint64_t)cnt[s] * (uint64_t)j / (uint64_t)k);
            const uint32_t hi = (uint32_t)((uint64_t)cnt[s] * (uint64_t)(j + 1) / (uint64_t)k);
            c->lo[s] = lo;
            c->n[s] = hi - lo;
            c->key_step[s] = 1;
            c->blk0[s] = blk;
            if (s) blk += tiles_of(c->n[s], s, forward);
            if (c->n[s]) c->empty = false;
        }
        c->blk0[4] = blk;
    }
    return 0;
}

// Offsets of every array, chunk after chunk, once the key steps are known (a class whose
// TBs share one key stores one). pb: bytes per output sample of the inverse with a
// picture (0: none; forward: 0). dense: forward, bit s = class s comes down dense. Per
// chunk: keys, data (residuals / levels), then forward: counter (the H2D ends here: it
// carries the zero), tile bases, counts; inverse: prediction samples.
void layout_offsets(Layout *L, bool forward, int pb, uint32_t dense) {
    size_t off = 0;
    uint64_t lev = 0;
    for (int j = 0; j < L->k; j++) {
        Chunk *c = &L->c[j];
        c->begin = off;
        for (int s = 0; s < 4; s++) {
            c->key_off[s] = off;
            off = align_up(off + (size_t)(c->key_step[s] ? c->n[s] : c->n[s] ? 1 : 0) * 2, 16);
        }
        off = align_up(off, kAlign);
        uint64_t v = 0;
        for (int s = 0; s < 4; s++) {
            c->data_off[s] = off;
            off = align_up(off + ((size_t)c->n[s] << (5 + 2 * s)), kAlign);
            v += (uint64_t)c->n[s] << (4 + 2 * s);
        }
        c->values = v;
        // level region: the dense classes, then the compacted ones' common region
        uint64_t d = 0;
        c->two_phase = false;
        for (int pass = 0; pass < 2; pass++) {
            if (pass) c->comp_off = d;
            for (int s = 0; s < 4; s++)
                if (((dense >> s) & 1u) == (pass ? 0u : 1u)) {
                    c->dense_off[s] = d;
                    d += (uint64_t)c->n[s] << (4 + 2 * s);
                    if (pass && c->n[s]) c->two_phase = true;
                }
        }
        c->comp_values = v - c->comp_off;
        if (forward) {
            c->counter_off = off;
            c->in_end = off + 16;
            off += kAlign;
            for (int s = 0; s < 4; s++) {
                c->tile_off[s] = off;
                off = align_up(off + (size_t)tiles_of(c->n[s], s, true) * 4, 16);
            }
            for (int s = 0; s < 4; s++) {
                c->nnz_off[s] = off;
                off = align_up(off + (size_t)c->n[s] * 2, 16);
            }
            c->meta_end = off;
            off = align_up(off, kAlign);
            c->lev_off = lev;
            lev += v;
        } else {
            for (int s = 0; s < 4; s++) {
                c->pix_off[s] = off;
                if (pb)
                    off = align_up(off + ((size_t)c->n[s] << (4 + 2 * s)) * (size_t)pb, kAlign);
            }
            c->in_end = off;
            c->out_begin = pb ? c->pix_off[0] : c->data_off[0];
            c->out_end = pb ? off : c->pix_off[0];
        }
    }
    L->io_bytes = off;
    L->lev_values = lev;
}

// FNV-1a over what defines the device data of a call (kernel_only checks it).
uint64_t layout_hash(const Layout *L) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) {
        for (int i = 0; i < 8; i++) {
            h ^= (v >> (8 * i)) & 255;
            h *= 1099511628211ull;
        }
    };
    mix((uint64_t)L->k);
    mix(L->io_bytes);
    for (int j = 0; j < L->k; j++)
        for (int s = 0; s < 4; s++) {
            mix(L->c[j].n[s]);
            mix(L->c[j].key_step[s]);
        }
    return h;
}

// ---- kernel-only signature
// ---------------------------------------------------------------------

int ko_slot(HevcExec *x, KoSig **sig) {
    return buf(x, SLOT_KO_SIG, true, sizeof(KoSig), sig);
}

// ---- forward
// ----------------------------------------------------------------------------------------

// Grid of a 4x4 kernel for n TBs: warps walk tiles of `tile` TBs, about tiles4 each.
unsigned grid4(const HevcExec *x, uint32_t n, int tile) {
    const uint32_t tiles = (n + (uint32_t)tile - 1) / (uint32_t)tile;
    const uint32_t warps = (tiles + (uint32_t)x->tiles4 - 1) / (uint32_t)x->tiles4;
    return (warps + kWarps - 1) / kWarps;
}

struct FwdRun {
    HevcExec *x;
    VidkHevcBatch *b;
    const VidkHevcCudaOpts *o;
    Layout L;
    uint8_t *h_io, *d_io;
    int16_t *h_lev, *d_lev;
    const int32_t *qs;
    const int16_t *ds;
    uint32_t cnt[4];
    uint32_t dense; // bit s: class s comes down dense (else compacted)
};

// Keys and residuals of TBs [a, a + n) of class s of chunk j into the pinned slot (keys only
// when the residuals go up directly).
void fwd_stage_range(FwdRun *r, int j, int s, uint32_t a, uint32_t n) {
    const Chunk *c = &r->L.c[j];
    const VidkHevcTbList *l = &r->b->list[s];
    uint16_t *keys = reinterpret_cast<uint16_t *>(r->h_io + c->key_off[s]);
    const VidkHevcTb *tb = l->tb + c->lo[s];
    if (c->key_step[s])
        for (uint32_t i = a; i < a + n; i++)
            keys[i] = pack_key(tb + i);
    else if (!a)
        keys[0] = pack_key(tb);
    if (!c->dir_in[s])
        memcpy(r->h_io + c->data_off[s] + ((size_t)a << (5 + 2 * s)),
               l->res + ((size_t)(c->lo[s] + a) << (4 + 2 * s)), (size_t)n << (5 + 2 * s));
}

void fwd_stage(FwdRun *r, int j) {
    const Chunk *c = &r->L.c[j];
    static const uint32_t one[4] = {1, 1, 1, 1};
    uint32_t n[4];
    for (int s = 0; s < 4; s++) { // classes with work: residuals to copy or per-TB keys
        n[s] = c->dir_in[s] && !c->key_step[s] ? 0 : c->n[s];
        if (!n[s] && c->n[s]) fwd_stage_range(r, j, s, 0, 1); // the one key
    }
    Pieces P;
    make_pieces(&P, n, one, pool_threads(r->x), r->x->piece_min);
    run_pieces(r->x, &P, [r, j](Piece *q) { fwd_stage_range(r, j, q->s, q->a, q->n); });
    memset(r->h_io + c->counter_off, 0, 16);
}

// Which arrays of chunk j's classes the device copies directly (registered ranges).
void fwd_plan_direct(FwdRun *r, int j) {
    Chunk *c = &r->L.c[j];
    for (int s = 0; s < 4; s++) {
        VidkHevcTbList *l = &r->b->list[s];
        const size_t len = (size_t)16 << (2 * s), n = c->n[s], lo = c->lo[s];
        c->dir_in[s] = c->dir_nnz[s] = c->dir_out[s] = false;
        if (!n) continue;
        c->dir_in[s] = pinned(r->x, l->res + lo * len, n * len * 2);
        c->dir_nnz[s] = pinned(r->x, l->nnz + lo, n * 2);
        c->dir_out[s] = ((r->dense >> s) & 1u) && pinned(r->x, l->lev + lo * len, n * len * 2);
    }
}

// Upload segments of chunk j: keys, the four classes' residuals, the zeroed counter.
int fwd_up_segs(const FwdRun *r, int j, Seg g[6]) {
    const Chunk *c = &r->L.c[j];
    int n = 0;
    g[n++] = {c->begin, c->data_off[0] - c->begin, nullptr};
    for (int s = 0; s < 4; s++) {
        const size_t len = (size_t)16 << (2 * s);
        g[n++] = {c->data_off[s], (size_t)c->n[s] * len * 2,
                  c->dir_in[s] ? r->b->list[s].res + (size_t)c->lo[s] * len : nullptr};
    }
    g[n++] = {c->counter_off, 16, nullptr};
    return n;
}

// First-phase download segments of chunk j: counter and tile bases, per-TB counts.
int fwd_meta_segs(const FwdRun *r, int j, Seg g[5]) {
    const Chunk *c = &r->L.c[j];
    int n = 0;
    g[n++] = {c->counter_off, c->nnz_off[0] - c->counter_off, nullptr};
    for (int s = 0; s < 4; s++)
        g[n++] = {c->nnz_off[s], (size_t)c->n[s] * 2,
                  c->dir_nnz[s] ? r->b->list[s].nnz + c->lo[s] : nullptr};
    return n;
}

// Levels of chunk j's dense classes (in the first phase), offsets in the level buffers
// (the dense classes lie first, in class order: staged ones merge into one copy).
int fwd_dense_segs(const FwdRun *r, int j, Seg g[4]) {
    const Chunk *c = &r->L.c[j];
    int n = 0;
    for (int s = 0; s < 4; s++) {
        const size_t len = (size_t)16 << (2 * s);
        if (!((r->dense >> s) & 1u) || !c->n[s]) continue;
        g[n++] = {(size_t)(c->lev_off + c->dense_off[s]) * 2, (size_t)c->n[s] * len * 2,
                  c->dir_out[s] ? r->b->list[s].lev + (size_t)c->lo[s] * len : nullptr};
    }
    return n;
}

FwdArgs fwd_args(const FwdRun *r, int j) {
    const Chunk *c = &r->L.c[j];
    FwdArgs a;
    memset(&a, 0, sizeof(a));
    for (int s = 0; s < 4; s++) {
        a.keys[s] = reinterpret_cast<const uint16_t *>(r->d_io + c->key_off[s]);
        a.key_step[s] = c->key_step[s];
        a.res[s] = reinterpret_cast<const int16_t *>(r->d_io + c->data_off[s]);
        a.n[s] = c->n[s];
        a.tile_base[s] = reinterpret_cast<uint32_t *>(r->d_io + c->tile_off[s]);
        a.nnz[s] = reinterpret_cast<uint16_t *>(r->d_io + c->nnz_off[s]);
        a.dense_off[s] = c->dense_off[s];
    }
    for (int s = 0; s < 5; s++)
        a.blk0[s] = c->blk0[s];
    a.counter = reinterpret_cast<uint32_t *>(r->d_io + c->counter_off);
    a.lev = r->d_lev + c->lev_off;
    a.levc = r->d_lev + c->lev_off + c->comp_off;
    a.qs = r->qs;
    a.bd = r->b->bitdepth;
    a.compact = ~r->dense & 15u;
    a.c4 = fwd4_consts(a.bd);
    if (c->n[0] && !c->key_step[0]) // the class's one key, from the (checked) records
        a.p4 = fwd4_prep(pack_key(r->b->list[0].tb + c->lo[0]), a.bd, r->qs);
    return a;
}

// Per-TB counts of class s of chunk j as downloaded: in the slot, or already in the list.
const uint16_t *fwd_counts(const FwdRun *r, const Chunk *c, int s) {
    return c->dir_nnz[s] ? r->b->list[s].nnz + c->lo[s]
                         : reinterpret_cast<const uint16_t *>(r->h_io + c->nnz_off[s]);
}

// TBs [a, a + n) of class s of chunk j (a: a tile boundary) into the batch; nz: the
// list's non-zero count before TB a. The device output is checked for consistency (a tile
// base or count outside the chunk's output means a device fault: VIDK_ERR(EIO)).
int fwd_unpack_range(FwdRun *r, int j, int s, uint32_t a, uint32_t n, uint32_t nz,
                     uint64_t avail) {
    const Chunk *c = &r->L.c[j];
    const bool cmp = !((r->dense >> s) & 1u);
    const int16_t *levels = r->h_lev + c->lev_off + (cmp ? c->comp_off : c->dense_off[s]);
    VidkHevcTbList *l = &r->b->list[s];
    const size_t len = (size_t)16 << (2 * s);
    const uint16_t *nnz = fwd_counts(r, c, s);
    const uint32_t *tb = reinterpret_cast<const uint32_t *>(r->h_io + c->tile_off[s]);
    uint64_t pos = 0;
    for (uint32_t i = a; i < a + n; i++) {
        const uint32_t gi = c->lo[s] + i;
        const uint16_t cn = nnz[i];
        if (cn > len) return VIDK_ERR(EIO);
        if (!c->dir_nnz[s]) l->nnz[gi] = cn;
        int16_t *dst = l->lev + (size_t)gi * len;
        if (cmp) {
            if (i % (uint32_t)kTileFwd[s] == 0) pos = tb[i / (uint32_t)kTileFwd[s]];
            if (!cn) {
                memset(dst, 0, len * 2);
                continue;
            }
            if (pos + len > avail) return VIDK_ERR(EIO);
            memcpy(dst, levels + pos, len * 2);
            pos += len;
        } else {
            if (!c->dir_out[s]) memcpy(dst, levels + (size_t)i * len, len * 2);
            if (!cn) continue;
        }
        l->nz_index[nz] = gi;
        if (r->b->compact_levels) memcpy(l->nz_lev + (size_t)nz * len, dst, len * 2);
        nz++;
    }
    return 0;
}

// Copy chunk j's results into the batch, over the host pool: each piece counts its non-zero
// TBs (the per-TB counts), a prefix sum gives every piece its first nz_index slot, then the
// pieces unpack in parallel (same bytes as in order).
int fwd_unpack(FwdRun *r, int j, uint32_t nzc[4]) {
    const Chunk *c = &r->L.c[j];
    // values in the compacted region (0 without a compacted class: the counter's zero)
    const uint64_t avail = *reinterpret_cast<const uint32_t *>(r->h_io + c->counter_off);
    if (avail > c->comp_values) return VIDK_ERR(EIO);
    uint32_t align[4];
    for (int s = 0; s < 4; s++)
        align[s] = (uint32_t)kTileFwd[s];
    Pieces P;
    make_pieces(&P, c->n, align, pool_threads(r->x), r->x->piece_min);
    run_pieces(r->x, &P, [r, c](Piece *q) {
        const uint16_t *nnz = fwd_counts(r, c, q->s);
        uint32_t k = 0;
        for (uint32_t i = q->a; i < q->a + q->n; i++)
            k += nnz[i] != 0;
        q->cnt = k;
    });
    for (int i = 0; i < P.n; i++) {
        Piece *q = &P.p[i];
        q->base = nzc[q->s];
        nzc[q->s] += q->cnt;
    }
    run_pieces(r->x, &P, [r, j, avail](Piece *q) {
        q->err = fwd_unpack_range(r, j, q->s, q->a, q->n, q->base, avail);
    });
    for (int i = 0; i < P.n; i++)
        if (P.p[i].err < 0) return P.p[i].err;
    return 0;
}

void sig_fill(KoSig *sig, const Layout *L, bool forward, const VidkHevcCudaOpts *o,
              const VidkHevcBatch *b, int out, const void *io, const void *lev,
              const void *tab) {
    sig->layout = layout_hash(L);
    sig->forward = forward;
    sig->ns = o->streams;
    sig->bd = b->bitdepth;
    sig->tc = o->tensor;
    sig->sl = b->scaling_lists;
    sig->compact = 0; // forward: the dense mask, set by the caller
    sig->out = out;
    sig->io = io;
    sig->lev = lev;
    sig->tab = tab;
}

// The device data of the previous full call matches this call's layout and options.
bool sig_match(const KoSig *sig, const KoSig *now) {
    return sig->magic == kMagicKo &&
           !memcmp(&sig->layout, &now->layout, sizeof(*sig) - sizeof(sig->magic));
}

// D2H of chunk j's compacted levels (the second phase: its counter has arrived).
int fwd_fetch_levels(FwdRun *r, int j, int *ev) {
    HevcExec *x = r->x;
    const Chunk *c = &r->L.c[j];
    const uint32_t n = *reinterpret_cast<const uint32_t *>(r->h_io + c->counter_off);
    const size_t bytes = (size_t)(n < c->comp_values ? n : c->comp_values) * 2;
    const uint64_t off = c->lev_off + c->comp_off;
    const int s = j % x->ns;
    int err;
    x->stats.staged_d2h += bytes;
    x->stats.round_trips++;
    if ((err = stage(x, VIDK_CUDA_STAGE_D2H, true, s, 0)) < 0 ||
        (err = d2h(x, r->h_lev + off, r->d_lev + off, bytes, s)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_D2H, false, s, bytes)) < 0)
        return err;
    return *ev = event_record(x, s);
}

// ---- download mode per size class (opts.compact AUTO) -------------------------------------

// Non-zero fractions the context's last forward calls saw: per class, the TBs and non-zero
// TBs of the last successful full call that had TBs of that class.
struct FwdHist {
    uint64_t magic;
    uint32_t n[4], nz[4];
};

// Contexts of the emulation have no CUDA state (no host slots): their histories live here,
// keyed by the context, a few replaced round robin. (A context allocated where a closed one
// was inherits its history: only the download mode can differ, never a result.)
struct EmuHist {
    const VidkContext *ctx;
    FwdHist h;
};
constexpr int kEmuHist = 16;
EmuHist g_emu_hist[kEmuHist];
int g_emu_hist_next;
std::mutex g_emu_hist_mu;

int hist_load(HevcExec *x, FwdHist *h) {
    memset(h, 0, sizeof(*h));
    if (x->emu) {
        std::lock_guard<std::mutex> lock(g_emu_hist_mu);
        for (int i = 0; i < kEmuHist; i++)
            if (g_emu_hist[i].ctx == x->ctx) *h = g_emu_hist[i].h;
        return 0;
    }
    FwdHist *p = nullptr;
    const int err = buf(x, SLOT_FWD_HIST, true, sizeof(FwdHist), &p);
    if (err < 0) return err;
    if (p->magic == kMagicHist) *h = *p;
    return 0;
}

// After a successful full call: the classes that had TBs record their fractions.
int hist_store(HevcExec *x, const uint32_t cnt[4], const uint32_t nzc[4]) {
    FwdHist h;
    int err;
    if ((err = hist_load(x, &h)) < 0) return err;
    h.magic = kMagicHist;
    for (int s = 0; s < 4; s++)
        if (cnt[s]) {
            h.n[s] = cnt[s];
            h.nz[s] = nzc[s];
        }
    if (x->emu) {
        std::lock_guard<std::mutex> lock(g_emu_hist_mu);
        int slot = -1;
        for (int i = 0; i < kEmuHist && slot < 0; i++)
            if (g_emu_hist[i].ctx == x->ctx) slot = i;
        if (slot < 0) {
            slot = g_emu_hist_next;
            g_emu_hist_next = (g_emu_hist_next + 1) % kEmuHist;
        }
        g_emu_hist[slot].ctx = x->ctx;
        g_emu_hist[slot].h = h;
        return 0;
    }
    FwdHist *p = nullptr;
    if ((err = buf(x, SLOT_FWD_HIST, true, sizeof(FwdHist), &p)) < 0) return err;
    *p = h;
    return 0;
}

// The AUTO rule: class s comes down dense when the last call that had TBs of class s found
// more than VIDK_HEVC_CUDA_DENSE_ABOVE_PCT percent of them non-zero (compaction would then
// save at most 30% of the class's levels and costs each chunk a host round trip before its
// second D2H); compacted otherwise, and on the first call of a context.
uint32_t auto_dense(const FwdHist &h) {
    uint32_t m = 0;
    if (h.magic != kMagicHist) return 0;
    for (int s = 0; s < 4; s++)
        if (h.n[s] &&
            (uint64_t)h.nz[s] * 100u > (uint64_t)h.n[s] * VIDK_HEVC_CUDA_DENSE_ABOVE_PCT)
            m |= 1u << s;
    return m;
}

// The forward kernels of the options (tensor cores, scaling lists, 4x4 allocation).
FwdK fwd_kernels(const VidkHevcCudaOpts &o, bool sl) {
    FwdK k = fwd_select(o.tensor, sl);
    if (o.alloc4 == VIDK_HEVC_CUDA_ALLOC4_WARP) {
        k.fn4 = k.fn4w;
        k.emu4 = k.emu4w;
    }
    return k;
}

int run_forward(VidkContext *ctx, VidkHevcBatch *b, const VidkHevcCudaOpts *opts, bool emu) {
    HevcExec x;
    VidkHevcCudaOpts o;
    FwdRun r;
    int err = 0, k = 0, *ev_meta = nullptr, *ev_lev = nullptr;
    uint32_t nzc[4] = {0, 0, 0, 0};
    KoSig *sig = nullptr, now;
    uint64_t total = 0;

    if (!ctx || !b) return VIDK_ERR(EINVAL);
    if (!emu && !ctx->cuda) return VIDK_ERR_NODEV;
    if ((err = resolve_opts(ctx, opts, emu, &o)) < 0) return err;
    if ((err = vidk_hevc_batch_check(b, 1)) < 0) return err;
    hevc_exec_init(&x, ctx, emu);
    exec_opts(&x, &o);
    memset(&r, 0, sizeof(r));
    memset(&now, 0, sizeof(now));
    r.x = &x;
    r.b = b;
    r.o = &o;
    for (int s = 0; s < 4; s++)
        r.cnt[s] = b->list[s].count;
    exec_use_streams(&x, o.streams);

    if ((k = chunk_count(r.cnt, o.chunks)) < 0) return VIDK_ERR(EINVAL);
    if ((err = host_pool(&x, o.host_threads)) < 0) goto out;
    if ((err = layout_ranges(&r.L, r.cnt, k, true)) < 0) goto out;
    for (int j = 0; j < k; j++)
        for (int s = 0; s < 4; s++) {
            Chunk *c = &r.L.c[j];
            bool uniform;
            if ((err = scan_records(&b->list[s], s, b->bitdepth, nullptr, c->lo[s], c->n[s],
                                    &uniform)) < 0)
                goto out;
            c->key_step[s] = uniform ? 0 : 1;
        }
    if (!emu && (err = vidk_cuda_enter(ctx)) < 0) goto out;
    if (!emu && (err = ko_slot(&x, &sig)) < 0) goto out;
    // Download mode per class: forced, the previous full call's (kernel-only: same layout),
    // or by the context's history (AUTO).
    if (o.compact == VIDK_HEVC_CUDA_DENSE) {
        r.dense = 15u;
    } else if (o.compact == VIDK_HEVC_CUDA_COMPACT) {
        r.dense = 0;
    } else if (o.kernel_only) {
        r.dense = sig && sig->magic == kMagicKo && sig->forward ? (uint32_t)sig->compact : 0u;
    } else {
        FwdHist h; // no history (or no slot for it): compacted
        r.dense = hist_load(&x, &h) < 0 ? 0u : auto_dense(h);
    }
    for (int s = 0; s < 4; s++)
        if (r.cnt[s]) {
            if ((r.dense >> s) & 1u)
                x.stats.dense_classes |= 1u << s;
            else
                x.stats.compact_classes |= 1u << s;
        }
    layout_offsets(&r.L, true, 0, r.dense);
    for (int j = 0; j < k; j++)
        fwd_plan_direct(&r, j);
    if ((err = events_alloc(&x, 2 * k)) < 0) goto out;
    ev_meta = static_cast<int *>(malloc((size_t)k * sizeof(int)));
    ev_lev = static_cast<int *>(malloc((size_t)k * sizeof(int)));
    if (!ev_meta || !ev_lev) {
        err = VIDK_ERR(ENOMEM);
        goto out;
    }
    for (int j = 0; j < k; j++)
        ev_meta[j] = ev_lev[j] = -1;
    if ((err = buf(&x, SLOT_FWD_IO, true, r.L.io_bytes, &r.h_io)) < 0 ||
        (err = buf(&x, SLOT_FWD_IO, false, r.L.io_bytes, &r.d_io)) < 0 ||
        (err = buf(&x, SLOT_FWD_LEV, true, (size_t)r.L.lev_values * 2, &r.h_lev)) < 0 ||
        (err = buf(&x, SLOT_FWD_LEV, false, (size_t)r.L.lev_values * 2, &r.d_lev)) < 0)
        goto out;
    if ((err = scaling_tables(&x, b, &r.qs, &r.ds)) < 0) goto out;
    sig_fill(&now, &r.L, true, &o, b, 0, r.d_io, r.d_lev, r.qs);
    now.compact = (int)r.dense;

    if (o.kernel_only) {
        const FwdK kf = fwd_kernels(o, b->scaling_lists);
        if (!sig_match(sig, &now)) {
            err = VIDK_ERR(EINVAL);
            goto out;
        }
        // The device still holds the inputs of that call: reset the counters (untimed),
        // then time the kernels alone.
        for (int j = 0; j < k; j++)
            if (!r.L.c[j].empty &&
                (err = dmemset(&x, r.d_io + r.L.c[j].counter_off, 16, j % x.ns)) < 0)
                goto out;
        err = kernel_only_run(&x, &r, k, kf, fwd_args, kTileFwd[0]);
        goto out;
    }
    if (sig) sig->magic = 0;

    if (!o.overlap_host)
        for (int j = 0; j < k; j++)
            if (!r.L.c[j].empty) fwd_stage(&r, j);
    if ((err = timing_start(&x)) < 0) goto out;
    for (int j = 0; j < k; j++) {
        const Chunk *c = &r.L.c[j];
        const int s = j % x.ns;
        if (c->empty) continue;
        if (o.overlap_host) fwd_stage(&r, j);
        const FwdArgs a = fwd_args(&r, j);
        const FwdK kf = fwd_kernels(o, b->scaling_lists);
        Seg g[6];
        size_t moved = 0;
        int ng = fwd_up_segs(&r, j, g);
        if ((err = chunk_up_launch(&x, kf, a, c, r.d_io, r.h_io, g, ng, s, kTileFwd[0])) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_D2H, true, s, 0)) < 0)
            goto out;
        // First phase: counter, tile bases, counts, and the dense classes' levels (their
        // size is known).
        ng = fwd_meta_segs(&r, j, g);
        if ((err = copy_segs(&x, false, r.d_io, r.h_io, g, ng, s, &moved)) < 0) goto out;
        ng = fwd_dense_segs(&r, j, g);
        if ((err = copy_segs(&x, false, reinterpret_cast<uint8_t *>(r.d_lev),
                             reinterpret_cast<uint8_t *>(r.h_lev), g, ng, s, &moved)) < 0 ||
            (err = stage(&x, VIDK_CUDA_STAGE_D2H, false, s, moved)) < 0 ||
            (err = event_record(&x, s)) < 0)
            goto out;
        if (!c->two_phase) { // no compacted class with TBs: done in one phase
            ev_lev[j] = err;
            continue;
        }
        ev_meta[j] = err;
        // Second phase for the earlier chunks whose counters have arrived, in chunk order.
        for (int q = 0; q <= j; q++) {
            if (ev_lev[q] >= 0 || ev_meta[q] < 0) continue;
            const int ready = event_query(&x, ev_meta[q]);
            if (ready < 0) {
                err = ready;
                goto out;
            }
            if (!ready) break;
            if ((err = fwd_fetch_levels(&r, q, &ev_lev[q])) < 0) goto out;
        }
    }
    for (int j = 0; j < k; j++) {
        if (r.L.c[j].empty || ev_lev[j] >= 0) continue;
        if ((err = event_sync(&x, ev_meta[j])) < 0 ||
            (err = fwd_fetch_levels(&r, j, &ev_lev[j])) < 0)
            goto out;
    }
    // Unpack in chunk order while the later copies run.
    for (int j = 0; j < k; j++) {
        if (r.L.c[j].empty) continue;
        if ((err = event_sync(&x, ev_lev[j])) < 0) goto out;
        if ((err = fwd_unpack(&r, j, nzc)) < 0) {
            vidk_log(ctx, VIDK_LOG_ERROR,
                     "cuda hevc forward: inconsistent device output in chunk %d", j);
            goto out;
        }
    }
    if ((err = finish(&x)) < 0) goto out;
    for (int s = 0; s < 4; s++) {
        b->list[s].nz_count = nzc[s];
        total += nzc[s];
    }
    (void)hist_store(&x, r.cnt, nzc); // a failure costs only the next call's best mode
    if (sig) {
        *sig = now;
        sig->magic = kMagicKo;
    }
    err = total > INT32_MAX ? INT32_MAX : (int)total;
out:
    hevc_exec_end(&x);
    free(r.L.c);
    free(ev_meta);
    free(ev_lev);
    return err;
}

} // namespace vidk_hevchost
