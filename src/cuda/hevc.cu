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
#include "cuda_common.cuh"
#include "exec.cuh"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mutex>

#include "cuda/hevc_cuda.h"
#include "hevc_dev.cuh"
#include "hevc_emu.cuh"

using namespace vidk_hevccu;
using namespace vidk_cux;

namespace {

enum {
    SLOT_FWD_IO = VIDK_SLOT_HEVC_FIRST, // keys, residuals, counters, tile bases, counts
    SLOT_FWD_LEV,                       // levels out (compacted or dense)
    SLOT_INV_IO,                        // keys, levels, prediction; output in place
    SLOT_TAB,                           // scaling-list tables (host: staging)
    SLOT_TAB_SIG,                       // host: the scaling factors the device table holds
    SLOT_KO_SIG,                        // host: layout of the last full call (kernel_only)
    SLOT_POOL,                          // host: the staging thread pool (PoolState)
    SLOT_FWD_HIST,                      // host: non-zero fractions of the last forward
    SLOT_END
};
static_assert(SLOT_END <= VIDK_SLOT_HEVC_FIRST + 24, "HEVC slots are 56..79");

constexpr size_t kAlign = 128;
constexpr uint64_t kMaxChunkValues = (uint64_t)1 << 27;
constexpr int kMaxChunksTotal = 4096;
constexpr uint64_t kMagicTab = 0x5648455643544142ull, kMagicKo = 0x564845564b4f4e4cull;
constexpr uint64_t kMagicPool = 0x5648455650304f4cull;
constexpr uint64_t kMagicHist = 0x5648455648495354ull;
constexpr int kMaxHostThreads = 64;

size_t align_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

// ---- execution: the shared executor (exec.cuh), with the HEVC family's parameters ---------

const ExecFamily kFamily = {
    "hevc", VIDK_SLOT_HEVC_FIRST, SLOT_END - VIDK_SLOT_HEVC_FIRST, kAlign, 0, nullptr};
static_assert(SLOT_END - VIDK_SLOT_HEVC_FIRST <= kExecMaxSlots, "HEVC slots");

// The executor and what the HEVC paths keep beside it.
struct HevcExec : Exec {
    EmuScratch *scratch;
    VidkThreadPool *pool;      // host staging pool of the call (nullptr: serial)
    uint32_t piece_min;        // smallest piece of host work in bytes (make_pieces)
    const VidkHevcCudaOpts *o; // the call's resolved options (direct copies, emulated pins)
    int tiles4;                // 4x4 kernels: tiles per warp
    VidkHevcCudaStats stats;   // bytes by route (opts.stats)
};

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

// One piece of a chunk's transfer: `bytes` at offset `off` of the device buffer, from / to
// `host` (a registered caller array: a direct copy) or, host == nullptr, the same offset of
// the pinned slot.
struct Seg {
    size_t off, bytes;
    void *host;
};

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

struct PoolState {
    uint64_t magic;
    VidkThreadPool *pool;
    int threads;
};

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

// Work of one chunk cut into pieces: TB ranges [a, a + n) of one size class, each a
// multiple of align[s] TBs (tile boundaries where the unpacking needs them) and large
// enough (~128 KB) to pay for its hand-off.
constexpr int kMaxPieces = 256;
struct Piece {
    int s;
    uint32_t a, n;
    uint32_t cnt, base; // non-zero TBs of the piece, and the count before it
    int err;
};
struct Pieces {
    int n;
    Piece p[kMaxPieces];
};

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

template <typename F> struct PieceJob {
    F *f;
    Pieces *P;
    static void run(void *arg, int job, int thread) {
        (void)thread;
        PieceJob *j = static_cast<PieceJob *>(arg);
        (*j->f)(&j->P->p[job]);
    }
};

// f(Piece *) on every piece, over the pool (each piece writes only its own outputs).
template <typename F> void run_pieces(HevcExec *x, Pieces *P, F f) {
    PieceJob<F> j = {&f, P};
    if (P->n == 1 || !x->pool)
        for (int i = 0; i < P->n; i++)
            f(&P->p[i]);
    else
        vidk_pool_run(x->pool, P->n, PieceJob<F>::run, &j);
}

// ---- kernel tables --------------------------------------------------------------------------

typedef void (*FwdEmu)(const FwdArgs &, unsigned, EmuScratch *);
typedef void (*InvEmu)(const InvArgs &, unsigned, EmuScratch *);
// A direction's kernels for one option set: the 8x8..32x32 kernel (fn) and the 4x4 kernel
// (fn4), with their emulations.
struct FwdK {
    const void *fn;
    FwdEmu emu;
    const void *fn4; // 4x4: block-level allocation (opts.alloc4 BLOCK)
    FwdEmu emu4;
    const void *fn4w; // 4x4: one atomicAdd per warp and tile (opts.alloc4 WARP)
    FwdEmu emu4w;
};
struct InvK {
    const void *fn;
    InvEmu emu;
    const void *fn4;
    InvEmu emu4;
};

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

template <typename A>
int launch(HevcExec *x, const void *fn, void (*emu)(const A &, unsigned, EmuScratch *),
           const A &a, unsigned grid, int s) {
    if (x->emu) {
        if (!x->scratch && !(x->scratch = emu_scratch_new())) return VIDK_ERR(ENOMEM);
        emu(a, grid, x->scratch);
        return 0;
    }
    void *args[] = {const_cast<A *>(&a)};
    return exec_launch(x, fn, grid, kThreads, 0, args, s);
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

int check_record(const VidkHevcTb *t, int size, int bd) {
    if (t->plane > 2 || t->reserved) return VIDK_ERR(EINVAL);
    return vidk_hevc_check_tb(size, t->qp, bd, t->flags);
}

// Everything but the records (src/hevc_batch.c: batch_begin and the forward's pointers).
int check_batch(const VidkHevcBatch *b, bool forward) {
    if (b->bitdepth < VIDK_HEVC_MIN_BITDEPTH || b->bitdepth > VIDK_HEVC_MAX_BITDEPTH)
        return VIDK_ERR(EINVAL);
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &b->list[s];
        if (l->count > l->capacity) return VIDK_ERR(EINVAL);
        if (l->count && (!l->tb || !l->res || !l->lev || !l->nnz)) return VIDK_ERR(EINVAL);
        if (forward && l->count && (!l->nz_index || (b->compact_levels && !l->nz_lev)))
            return VIDK_ERR(EINVAL);
    }
    if (b->scaling_lists) {
        const uint8_t *p = reinterpret_cast<const uint8_t *>(&b->scaling);
        for (size_t i = 0; i < sizeof(b->scaling); i++)
            if (!p[i]) return VIDK_ERR(EINVAL);
    }
    return 0;
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
        if (check_record(t, s, bd) < 0) return VIDK_ERR(EINVAL);
        last = k;
    }
    return 0;
}

struct Planes {
    int w[3], h[3], pb;
};

int picture_planes(const VidkPicture *p, int bd, Planes *pl) {
    if (!p || p->bitdepth != bd || p->w < 1 || p->h < 1 || !p->data[0]) return VIDK_ERR(EINVAL);
    for (int i = 0; i < 3; i++) {
        pl->w[i] = pl->h[i] = 0;
        if (vidk_picture_plane_size(p, i, &pl->w[i], &pl->h[i]) < 0 || !p->data[i])
            pl->w[i] = pl->h[i] = 0;
    }
    pl->pb = bd > 8 ? 2 : 1;
    return 0;
}

int check_positions(const VidkHevcBatch *b, const Planes *pl) {
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &b->list[s];
        const int n = 4 << s;
        for (uint32_t i = 0; i < l->count; i++) {
            const VidkHevcTb *t = &l->tb[i];
            const int p = t->plane;
            if (p > 2 || (t->x & (n - 1)) || (t->y & (n - 1))) return VIDK_ERR(EINVAL);
            if (t->x + n > pl->w[p] || t->y + n > pl->h[p]) return VIDK_ERR(EINVAL);
        }
    }
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

// ---- chunk layout
// ---------------------------------------------------------------------------------

struct Chunk {
    uint32_t lo[4], n[4]; // TB range of each class (list indices, or non-zero list indices)
    uint32_t key_step[4];
    size_t key_off[4], data_off[4], pix_off[4];
    size_t counter_off, tile_off[4], nnz_off[4];
    size_t begin, in_end, meta_end, out_begin, out_end;
    // Forward levels: the chunk's region of the level buffers starts at lev_off (values);
    // dense classes first (class s at dense_off[s]), then the compacted region at comp_off
    // (comp_values: the compacted classes' capacity). two_phase: a compacted class has TBs
    // (the chunk's download needs its counter first).
    uint64_t lev_off, values, dense_off[4], comp_off, comp_values;
    bool two_phase;
    uint32_t blk0[5]; // blocks of the 8x8..32x32 kernel (4x4: its own kernel)
    bool empty;
    // Direct copies (registered caller arrays) per class: the input up (forward res,
    // inverse lev), the per-TB counts down (forward nnz), the output down (forward lev with
    // compact 0, inverse res without a picture).
    bool dir_in[4], dir_nnz[4], dir_out[4];
};

struct Layout {
    int k;
    Chunk *c;
    size_t io_bytes;
    uint64_t lev_values;
};

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

struct KoSig {
    uint64_t magic, layout;
    // compact: forward, the resolved dense-class mask (bit s: class s dense)
    int forward, ns, bd, tc, sl, compact, out, pad; // no padding: compared with memcmp
    const void *io, *lev, *tab;
};

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

// The kernels of chunk c on stream s between the KERNEL stage marks: the 4x4 kernel, then
// the 8x8..32x32 one (forward and inverse alike).
template <typename K, typename A>
int chunk_kernels(HevcExec *x, const K &kf, const A &a, const Chunk *c, int s, int tile4) {
    int err;
    if ((err = stage(x, VIDK_CUDA_STAGE_KERNEL, true, s, 0)) < 0) return err;
    if (c->n[0] && (err = launch(x, kf.fn4, kf.emu4, a, grid4(x, c->n[0], tile4), s)) < 0)
        return err;
    if (c->blk0[4] && (err = launch(x, kf.fn, kf.emu, a, c->blk0[4], s)) < 0) return err;
    return stage(x, VIDK_CUDA_STAGE_KERNEL, false, s, 0);
}

// The input segments of chunk c up (at most 6: keys, four classes, the rest), then its
// kernels, on stream s.
template <typename K, typename A>
int chunk_up_launch(HevcExec *x, const K &kf, const A &a, const Chunk *c, uint8_t *d_io,
                    uint8_t *h_io, const Seg *g, int ng, int s, int tile4) {
    size_t moved = 0;
    int err;
    if ((err = stage(x, VIDK_CUDA_STAGE_H2D, true, s, 0)) < 0 ||
        (err = copy_segs(x, true, d_io, h_io, g, ng, s, &moved)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_H2D, false, s, moved)) < 0)
        return err;
    return chunk_kernels(x, kf, a, c, s, tile4);
}

// Kernel-only timing: the kernels of every non-empty chunk on inputs already on the device.
template <typename R, typename K, typename A>
int kernel_only_run(HevcExec *x, const R *r, int k, const K &kf, A (*args)(const R *, int),
                    int tile4) {
    int err;
    if ((err = timing_start(x)) < 0) return err;
    for (int j = 0; j < k; j++) {
        const int s = j % x->ns;
        if (r->L.c[j].empty) continue;
        if ((err = chunk_kernels(x, kf, args(r, j), &r->L.c[j], s, tile4)) < 0) return err;
    }
    return finish(x);
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
    if ((err = check_batch(b, true)) < 0) return err;
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

// ---- inverse
// ----------------------------------------------------------------------------------------

struct InvRun {
    HevcExec *x;
    VidkHevcBatch *b;
    VidkPicture *pic;
    Planes pl;
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
    if ((err = check_batch(b, false)) < 0) return err;
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
        if ((err = picture_planes(pic, b->bitdepth, &r.pl)) < 0) return err;
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

} // namespace

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
