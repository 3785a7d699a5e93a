// vidk_hevc_batch_forward / vidk_hevc_batch_inverse on the device (docs/HEVC_CUDA.md).
//
// Data path of a call (both directions):
// - Validation on the host, exactly the checks of src/hevc_batch.c, before anything is
//   written; TB records become 2-byte keys (qP, cIdx, flags), or one key per chunk and
//   size when all are equal.
// - The batch is cut into chunks (a share of every size list each; the paper's frame
//   segments) spread round robin over the context's streams. Per chunk: host staging
//   into a pinned slot (overlapping the device work of the previous chunks unless
//   opts.overlap_host is 0), the H2D copies, the 4x4 kernel and the 8x8..32x32 kernel, D2H.
// - Direct copies: where a chunk's part of a batch array lies inside a range the caller
//   registered with vidk_host_register() (forward res, nnz, lev with compact 0; inverse
//   lev and res without a picture), the device copies it straight from / into the array
//   and only the small rest (keys, counters, tile bases) is staged. Copies are planned as
//   segments of the chunk's device layout (copy_segs): runs of staged segments merge into
//   one copy, each direct segment is a copy of its own.
// - Forward, per size class either compacted or dense (opts.compact; AUTO, the default,
//   decides per class from the non-zero fraction the previous forward call of the context
//   saw: dense above VIDK_HEVC_CUDA_DENSE_ABOVE_PCT). Compacted: the kernel packs the
//   levels of TBs with a non-zero level (one atomicAdd per CUDA block and round) and the
//   D2H is two-phase: first the chunk's counter, the per-tile bases and the per-TB counts
//   (fixed size), then exactly the compacted values (a host round trip per chunk). The
//   host walks the tiles in index order, so the output never depends on the order in
//   which blocks ran. Dense: every TB's levels come down in the first phase, straight
//   into a registered lev array where there is one; a chunk without a compacted class
//   has no second phase.
// - Inverse: the host skips TBs whose levels are all zero while staging (they cost
//   nothing and never cross PCIe); with a picture, each non-zero TB's prediction goes up
//   and its reconstruction comes down (in place); TBs that overlap (allowed, unusual)
//   switch the call to residuals added on the host in list order (the c backend's order).
// Everything also runs in a host emulation (opts through the *_emu_* entry points): the
// same code with memcpy for copies and hevc_emu.cuh for the kernels.
#include "hevc_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_hevchost {

static_assert(SLOT_END <= VIDK_SLOT_HEVC_FIRST + 24, "HEVC slots are 56..79");

constexpr uint64_t kMagicPool = 0x5648455650304f4cull;
constexpr int kMaxHostThreads = 64;

size_t align_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

// ---- execution: the shared executor (exec.cuh), with the HEVC family's parameters ---------

const ExecFamily kFamily = {
    "hevc", VIDK_SLOT_HEVC_FIRST, SLOT_END - VIDK_SLOT_HEVC_FIRST, kAlign, 0, nullptr};
static_assert(SLOT_END - VIDK_SLOT_HEVC_FIRST <= kExecMaxSlots, "HEVC slots");

void hevc_exec_init(HevcExec *x, VidkContext *ctx, bool emu) {
    memset(x, 0, sizeof(*x));
    exec_init(x, ctx, emu, &kFamily, 0);
}

// Streams idle, events destroyed, emulation memory freed; errors ignored (the result is
// already known).
void hevc_exec_end(HevcExec *x) {
    if (x->o && x->o->stats) *x->o->stats = x->stats;
    exec_end(x);
    free(x->scratch);
    x->pool = nullptr;
    x->scratch = nullptr;
}

// Can the device copy [p, p + bytes) directly (a range the caller registered; emulation:
// inside one of opts.emu_pinned)?
bool pinned(const HevcExec *x, const void *p, size_t bytes) {
    if (!x->o || !x->o->direct || !p || !bytes) return false;
    if (!x->emu) return vidk_cuda_host_pinned(x->ctx, p, bytes) != 0;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    for (int i = 0; i < x->o->emu_pinned_count; i++) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(x->o->emu_pinned[i].ptr);
        if (a <= lo && lo + bytes <= a + x->o->emu_pinned[i].bytes && lo + bytes >= lo)
            return true;
    }
    return false;
}

// The copies of segments g[0..n) (increasing offsets) on stream s: consecutive slot
// segments merge into one copy (alignment gaps included), a direct segment is a copy of
// its own. *moved += the bytes copied.
int copy_segs(HevcExec *x, bool up, uint8_t *d, uint8_t *h, const Seg *g, int n, int s,
              size_t *moved) {
    size_t lo = 0, hi = 0;
    bool run = false;
    int err;
    auto flush = [&]() -> int {
        if (!run) return 0;
        run = false;
        *moved += hi - lo;
        *(up ? &x->stats.staged_h2d : &x->stats.staged_d2h) += hi - lo;
        return up ? h2d(x, d + lo, h + lo, hi - lo, s) : d2h(x, h + lo, d + lo, hi - lo, s);
    };
    for (int i = 0; i < n; i++) {
        if (!g[i].bytes) continue;
        if (g[i].host) {
            if ((err = flush()) < 0) return err;
            *moved += g[i].bytes;
            *(up ? &x->stats.direct_h2d : &x->stats.direct_d2h) += g[i].bytes;
            err = up ? h2d(x, d + g[i].off, g[i].host, g[i].bytes, s)
                     : d2h(x, g[i].host, d + g[i].off, g[i].bytes, s);
            if (err < 0) return err;
            continue;
        }
        if (!run) lo = g[i].off;
        run = true;
        hi = g[i].off + g[i].bytes;
    }
    return flush();
}

// ---- host staging pool -------------------------------------------------------------------

// x->pool for `want` threads (0: the context's n_threads, else min(CPUs, 8)); 1: none.
// A threads context lends its own pool when the count matches; the emulation makes one for
// the call; a cuda context keeps one in SLOT_POOL (freed by vidk_cuda_hevc_release).
int host_pool(HevcExec *x, int want) {
    x->pool = nullptr;
    // Automatic: pieces of >= 128 KB (hand-off cost); an explicit count (tests, benchmarks)
    // cuts every chunk into 2 pieces per thread however small.
    x->piece_min = want ? 0 : 128u << 10;
    int n = want;
    if (!n) {
        n = x->ctx->s.n_threads;
        if (n <= 0) n = vidk_cpu_count() < 8 ? vidk_cpu_count() : 8;
    }
    if (n > kMaxHostThreads) n = kMaxHostThreads;
    if (n <= 1) return 0;
    if (x->ctx->pool && vidk_pool_threads(x->ctx->pool) == n) {
        x->pool = x->ctx->pool;
        return 0;
    }
    int err;
    if (x->emu) {
        if ((err = vidk_pool_create(&x->own_pool, n)) < 0) return err;
        x->pool = x->own_pool;
        return 0;
    }
    const bool fresh = !x->ctx->cuda->host[SLOT_POOL].ptr;
    PoolState *ps = nullptr;
    if ((err = vidk_cuda_host_slot(x->ctx, SLOT_POOL, align_up(sizeof(PoolState), kAlign),
                                   &ps)) < 0)
        return err;
    if (fresh || ps->magic != kMagicPool) {
        memset(ps, 0, sizeof(*ps));
        ps->magic = kMagicPool;
    }
    if (ps->pool && ps->threads != n) vidk_pool_destroy(&ps->pool);
    if (!ps->pool) {
        if ((err = vidk_pool_create(&ps->pool, n)) < 0) return err;
        ps->threads = n;
    }
    x->pool = ps->pool;
    return 0;
}

void make_pieces(Pieces *P, const uint32_t n[4], const uint32_t align[4], int threads,
                 uint32_t min_bytes) {
    P->n = 0;
    for (int s = 0; s < 4; s++) {
        if (!n[s]) continue;
        const uint32_t tb_bytes = 32u << (2 * s);
        uint32_t per = (n[s] + (uint32_t)threads * 2 - 1) / ((uint32_t)threads * 2);
        if (!per) per = 1;
        const uint32_t min_tbs = min_bytes / tb_bytes;
        if (per < min_tbs) per = min_tbs;
        const uint32_t max_pieces = kMaxPieces / 4;
        if ((n[s] + per - 1) / per > max_pieces) per = (n[s] + max_pieces - 1) / max_pieces;
        per = (per + align[s] - 1) / align[s] * align[s];
        for (uint32_t a = 0; a < n[s]; a += per) {
            Piece *q = &P->p[P->n++];
            memset(q, 0, sizeof(*q));
            q->s = s;
            q->a = a;
            q->n = n[s] - a < per ? n[s] - a : per;
        }
    }
}

int pool_threads(const HevcExec *x) {
    return x->pool ? vidk_pool_threads(x->pool) : 1;
}

// ---- kernel tables --------------------------------------------------------------------------

template <bool TC, bool SL> FwdK fwd_entry() {
    return {reinterpret_cast<const void *>(fwd_kernel<TC, SL>),     emu_fwd<TC, SL>,
            reinterpret_cast<const void *>(fwd4_kernel<SL, true>),  emu_fwd4<SL, true>,
            reinterpret_cast<const void *>(fwd4_kernel<SL, false>), emu_fwd4<SL, false>};
}
template <bool TC, bool SL, int OUT> InvK inv_entry() {
    return {reinterpret_cast<const void *>(inv_kernel<TC, SL, OUT>), emu_inv<TC, SL, OUT>,
            reinterpret_cast<const void *>(inv4_kernel<SL, OUT>), emu_inv4<SL, OUT>};
}

const FwdK &fwd_select(bool tc, bool sl) {
    static const FwdK t[4] = {fwd_entry<false, false>(), fwd_entry<false, true>(),
                              fwd_entry<true, false>(), fwd_entry<true, true>()};
    return t[tc * 2 + sl];
}

#define VK_INV3(TC, SL)                                                                        \
    inv_entry<TC, SL, OUT_RES>(), inv_entry<TC, SL, OUT_U8>(), inv_entry<TC, SL, OUT_U16>()
const InvK &inv_select(bool tc, bool sl, int out) {
    static const InvK t[12] = {VK_INV3(false, false), VK_INV3(false, true),
                               VK_INV3(true, false), VK_INV3(true, true)};
    return t[(tc * 2 + sl) * 3 + out];
}

// ---- options
// ----------------------------------------------------------------------------------

bool bit01(int v) {
    return v == 0 || v == 1;
}

void exec_opts(HevcExec *x, const VidkHevcCudaOpts *o) {
    x->o = o;
    x->tiles4 = o->tiles4 ? o->tiles4 : 1;
}

int resolve_opts(const VidkContext *ctx, const VidkHevcCudaOpts *in, bool emu,
                 VidkHevcCudaOpts *o) {
    if (in)
        *o = *in;
    else
        vidk_cuda_hevc_default_opts(o);
    if (o->stats) memset(o->stats, 0, sizeof(*o->stats));
    for (size_t i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++)
        if (o->reserved[i]) return VIDK_ERR(EINVAL);
    if (!bit01(o->tensor) || !bit01(o->fused) || !bit01(o->overlap_host) ||
        !bit01(o->kernel_only) || !bit01(o->direct))
        return VIDK_ERR(EINVAL);
    if (o->compact != VIDK_HEVC_CUDA_DENSE && o->compact != VIDK_HEVC_CUDA_COMPACT &&
        o->compact != VIDK_HEVC_CUDA_AUTO)
        return VIDK_ERR(EINVAL);
    if (o->alloc4 != VIDK_HEVC_CUDA_ALLOC4_BLOCK && o->alloc4 != VIDK_HEVC_CUDA_ALLOC4_WARP)
        return VIDK_ERR(EINVAL);
    if (o->tiles4 < 0 || o->tiles4 > 64) return VIDK_ERR(EINVAL);
    if (o->emu_pinned_count < 0 || (o->emu_pinned_count && !o->emu_pinned))
        return VIDK_ERR(EINVAL);
    if (emu && o->kernel_only) return VIDK_ERR(EINVAL);
    if (o->host_threads < 0 || o->host_threads > kMaxHostThreads) return VIDK_ERR(EINVAL);
    const int have = emu ? VIDK_CUDA_MAX_STREAMS : vidk_cuda_stream_count(ctx);
    if (o->streams < 0 || o->streams > have) return VIDK_ERR(EINVAL);
    if (!o->streams) o->streams = emu ? 4 : have;
    if (o->chunks < 0 || o->chunks > VIDK_HEVC_CUDA_MAX_CHUNKS) return VIDK_ERR(EINVAL);
    if (!o->chunks) o->chunks = o->streams;
    return 0;
}

// ---- validation (the checks of src/hevc_batch.c)
// ---------------------------------------------

uint16_t pack_key(const VidkHevcTb *t) {
    return (uint16_t)(t->qp | t->plane << 7 | t->flags << 9);
}

uint32_t record_word(const VidkHevcTb *t) {
    uint32_t k;
    memcpy(&k, &t->plane, 4); // plane, qp, flags, reserved
    return k;
}

// Records [lo, lo + n) of list s: validity (check_key of src/hevc_batch.c), and whether
// they all have the same key. idx: indices into the list, or nullptr for lo + i.
int scan_records(const VidkHevcTbList *l, int s, int bd, const uint32_t *idx, uint32_t lo,
                 uint32_t n, bool *uniform) {
    uint32_t last = UINT32_MAX, first = 0;
    *uniform = true;
    for (uint32_t i = 0; i < n; i++) {
        const VidkHevcTb *t = &l->tb[idx ? idx[lo + i] : lo + i];
        const uint32_t k = record_word(t);
        if (!i) first = k;
        if (k != first) *uniform = false;
        if (k == last) continue;
        if (vidk_hevc_check_record(t, s, bd) < 0) return VIDK_ERR(EINVAL);
        last = k;
    }
    return 0;
}

int check_positions(const VidkHevcBatch *b, const VidkHevcPlanes *pl) {
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        for (uint32_t i = 0; i < b->list[s].count; i++)
            if (vidk_hevc_check_position(&b->list[s].tb[i], 4 << s, pl) < 0)
                return VIDK_ERR(EINVAL);
    return 0;
}

// ---- scaling-list tables
// ------------------------------------------------------------------------

struct TabSig {
    uint64_t magic;
    const void *dev;
    VidkHevcScaling sc;
};

// Device tables for b->scaling (qs: int32, then ds: int16); uploaded only when they changed
// (synchronously, before the timed part of the call).
int scaling_tables(HevcExec *x, const VidkHevcBatch *b, const int32_t **qs,
                   const int16_t **ds) {
    *qs = nullptr;
    *ds = nullptr;
    if (!b->scaling_lists) return 0;
    const size_t bytes = (size_t)kTableEntries * 6;
    uint8_t *h = nullptr, *d = nullptr;
    TabSig *sig = nullptr;
    int err;
    if ((err = buf(x, SLOT_TAB, true, bytes, &h)) < 0 ||
        (err = buf(x, SLOT_TAB, false, bytes, &d)) < 0 ||
        (err = buf(x, SLOT_TAB_SIG, true, sizeof(TabSig), &sig)) < 0)
        return err;
    *qs = reinterpret_cast<const int32_t *>(d);
    *ds = reinterpret_cast<const int16_t *>(d + (size_t)kTableEntries * 4);
    if (!x->emu && sig->magic == kMagicTab && sig->dev == d &&
        !memcmp(&sig->sc, &b->scaling, sizeof(b->scaling)))
        return 0;
    sig->magic = 0;
    int32_t *hq = reinterpret_cast<int32_t *>(h);
    int16_t *hd = reinterpret_cast<int16_t *>(h + (size_t)kTableEntries * 4);
    for (int size = 0; size < VIDK_HEVC_TB_SIZES; size++)
        for (int id = 0; id < 6; id++) {
            const int len = 16 << (2 * size);
            const uint8_t *m = vidk_hevc_scaling_matrix(&b->scaling, size, id);
            for (int rem = 0; rem < 6; rem++) {
                vidk_hevc_quant_scales(hq + table_off(size, id, rem), m, len, rem);
                vidk_hevc_dequant_scales(hd + table_off(size, id, rem), m, len, rem);
            }
        }
    if ((err = h2d(x, d, h, bytes, 0)) < 0) return err;
    if (!x->emu && (err = exec_sync(x, 0)) < 0) return err;
    sig->magic = kMagicTab;
    sig->dev = d;
    sig->sc = b->scaling;
    return 0;
}

} // namespace vidk_hevchost

using namespace vidk_hevchost;

extern "C" void vidk_cuda_hevc_default_opts(VidkHevcCudaOpts *o) {
    if (!o) return;
    memset(o, 0, sizeof(*o));
    o->tensor = 1;
    o->compact = VIDK_HEVC_CUDA_AUTO;
    o->fused = 1;
    o->overlap_host = 1;
    o->direct = 1;
}

extern "C" int vidk_cuda_hevc_forward(VidkContext *ctx, VidkHevcBatch *b,
                                      const VidkHevcCudaOpts *opts) {
    return run_forward(ctx, b, opts, false);
}

extern "C" int vidk_cuda_hevc_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic,
                                      const VidkHevcCudaOpts *opts) {
    return run_inverse(ctx, b, pic, opts, false);
}

extern "C" int vidk_cuda_hevc_emu_forward(VidkContext *ctx, VidkHevcBatch *b,
                                          const VidkHevcCudaOpts *opts) {
    return run_forward(ctx, b, opts, true);
}

extern "C" int vidk_cuda_hevc_emu_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic,
                                          const VidkHevcCudaOpts *opts) {
    return run_inverse(ctx, b, pic, opts, true);
}

extern "C" int vidk_cuda_hevc_sweep_streams(VidkContext *ctx, VidkHevcBatch *b,
                                            const VidkHevcCudaOpts *base, int max_streams,
                                            int reps, VidkHevcCudaSweep *out) {
    if (!ctx || !b || !out || reps < 1 || reps > 1000 || max_streams < 1 || max_streams > 8)
        return VIDK_ERR(EINVAL);
    if (!ctx->cuda) return VIDK_ERR_NODEV;
    if (max_streams > vidk_cuda_stream_count(ctx)) return VIDK_ERR(EINVAL);
    VidkHevcCudaOpts o;
    if (base)
        o = *base;
    else
        vidk_cuda_hevc_default_opts(&o);
    o.kernel_only = 0;
    double *v = static_cast<double *>(malloc(sizeof(double) * 6 * (size_t)reps));
    if (!v) return VIDK_ERR(ENOMEM);
    int err = 0;
    for (int ns = 1; ns <= max_streams && err >= 0; ns++) {
        o.streams = ns;
        o.chunks = ns;
        VidkHevcCudaSweep *p = &out[ns - 1];
        memset(p, 0, sizeof(*p));
        p->streams = ns;
        if ((err = vidk_cuda_hevc_forward(ctx, b, &o)) < 0) break; // warm-up
        for (int i = 0; i < reps && err >= 0; i++) {
            VidkCudaTiming t;
            const double t0 = now_ms();
            if ((err = vidk_cuda_hevc_forward(ctx, b, &o)) < 0) break;
            v[i] = now_ms() - t0;
            if ((err = vidk_cuda_last_timing(ctx, &t)) < 0) break;
            v[reps + i] = t.total_ms;
            v[2 * reps + i] = t.h2d_ms;
            v[3 * reps + i] = t.kernel_ms;
            v[4 * reps + i] = t.d2h_ms;
            p->h2d_bytes = t.h2d_bytes;
            p->d2h_bytes = t.d2h_bytes;
        }
        if (err < 0) break;
        p->wall_ms = median(v, reps);
        p->total_ms = median(v + reps, reps);
        p->h2d_ms = median(v + 2 * reps, reps);
        p->kernel_ms = median(v + 3 * reps, reps);
        p->d2h_ms = median(v + 4 * reps, reps);
    }
    free(v);
    return err < 0 ? err : 0;
}

extern "C" void vidk_cuda_hevc_release(VidkContext *ctx) {
    if (!ctx || !ctx->cuda) return;
    VidkCudaBuf *slot = &ctx->cuda->host[SLOT_POOL];
    if (!slot->ptr || slot->bytes < sizeof(PoolState)) return;
    PoolState *ps = static_cast<PoolState *>(slot->ptr);
    if (ps->magic != kMagicPool) return;
    vidk_pool_destroy(&ps->pool);
    ps->threads = 0;
}

extern "C" int vidk_cuda_hevc_self_check(const VidkContext *ctx) {
    // The 4x4 forward's flat quantiser against quant1: every int16 coefficient c (stage-2
    // sums y = 256 c and 256 c + 255, both ends of c = y >> 8), qP, bit depth, slice type.
    for (int bd = VIDK_HEVC_MIN_BITDEPTH; bd <= VIDK_HEVC_MAX_BITDEPTH; bd++)
        for (int qp = 0; qp <= VIDK_HEVC_MAX_QP(bd); qp++)
            for (int is = 0; is < 2; is++) {
                const uint32_t key = (uint32_t)qp | (uint32_t)(is ? F_ISLICE : 0) << 9;
                const Fwd4P p = fwd4_prep(key, bd, nullptr);
                for (int c = -32768; c <= 32767; c++)
                    for (int e = 0; e < 2; e++) {
                        const int want = quant1<false>(c, p.q.scale, p.q.qbits, p.q.off);
                        const int got = fwd4_quant_flat(c * 256 + (e ? 255 : 0), p);
                        if (got != want) {
                            vidk_log(
                                ctx, VIDK_LOG_ERROR,
                                "hevc cuda: 4x4 quantiser, bd %d qP %d I %d c %d: %d, want "
                                "%d",
                                bd, qp, is, c, got, want);
                            return VIDK_ERR(EIO);
                        }
                    }
            }
    // The 4x4 inverse's flat dequantiser against dequant1.
    for (int bd = VIDK_HEVC_MIN_BITDEPTH; bd <= VIDK_HEVC_MAX_BITDEPTH; bd++)
        for (int qp = 0; qp <= VIDK_HEVC_MAX_QP(bd); qp++) {
            const Dequant dq = make_dequant((uint32_t)qp, 2, bd, nullptr);
            const Deq4 q = deq4_flat(dq);
            for (int l = -32768; l <= 32767; l++)
                if (deq4(l, q) != dequant1(l, dq.scale, dq.shift)) {
                    vidk_log(ctx, VIDK_LOG_ERROR,
                             "hevc cuda: 4x4 dequantiser, bd %d qP %d level %d: %d, want %d",
                             bd, qp, l, deq4(l, q), dequant1(l, dq.scale, dq.shift));
                    return VIDK_ERR(EIO);
                }
        }
    // Matrices.
    for (int k = 0; k < 32; k++)
        for (int n = 0; n < 32; n++)
            if (t32(k, n) != vidk_hevc_t32[k][n]) {
                vidk_log(ctx, VIDK_LOG_ERROR, "hevc cuda: T32[%d][%d] = %d, standard %d", k, n,
                         t32(k, n), vidk_hevc_t32[k][n]);
                return VIDK_ERR(EIO);
            }
    for (int k = 0; k < 4; k++)
        for (int n = 0; n < 4; n++)
            if (dst4(k, n) != vidk_hevc_dst4[k][n]) {
                vidk_log(ctx, VIDK_LOG_ERROR, "hevc cuda: DST[%d][%d] mismatch", k, n);
                return VIDK_ERR(EIO);
            }
    // Fragment tables, rebuilt from the standard's table by the documented layouts.
    const FragTab &f = kFragHost;
    auto T = [](int log2n, int k, int n) { return (int)vidk_hevc_t32[k << (5 - log2n)][n]; };
    auto byte = [](uint32_t w, int i) { return (int)(int8_t)(uint8_t)(w >> (8 * i)); };
    for (int l = 0; l < 32; l++) {
        const int g = l >> 2, t = l & 3;
        for (int i = 0; i < 4; i++) {
            const int d2a[2] = {i < 2 ? 2 * t + i : 8 + 2 * t + i - 2,
                                16 + (i < 2 ? 2 * t + i : 8 + 2 * t + i - 2)};
            for (int mt = 0; mt < 2; mt++)
                for (int r = 0; r < 4; r++) {
                    const int row = 16 * mt + g + 8 * (r & 1);
                    if (byte(f.f32s1a[mt][r][l], i) != T(5, row, 8 * t + 4 * (r >> 1) + i) ||
                        byte(f.i32s1a[mt][r][l], i) != T(5, 4 * t + i + 16 * (r >> 1), row))
                        goto bad;
                }
            for (int nt = 0; nt < 4; nt++)
                for (int h = 0; h < 2; h++)
                    if (byte(f.f32s2b[nt][h][l], i) != T(5, 8 * nt + g, d2a[h]) ||
                        byte(f.i32s2b[nt][h][l], i) != T(5, d2a[h], 8 * nt + g))
                        goto bad;
            for (int r = 0; r < 2; r++)
                if (byte(f.f16s1a[r][l], i) != T(4, g + 8 * r, 4 * t + i) ||
                    byte(f.i16s1a[r][l], i) != T(4, 4 * t + i, g + 8 * r) ||
                    byte(f.f16s2b[r][l], i) != T(4, 8 * r + g, d2a[0]) ||
                    byte(f.i16s2b[r][l], i) != T(4, d2a[0], 8 * r + g))
                    goto bad;
        }
    }
    return 0;
bad:
    vidk_log(ctx, VIDK_LOG_ERROR, "hevc cuda: fragment table mismatch");
    return VIDK_ERR(EIO);
}
