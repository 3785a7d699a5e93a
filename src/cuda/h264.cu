// The H.264 transform family on the device: vidk_h264_batch_inverse,
// vidk_h264_frame_inverse and vidk_h264_batch_forward of a cuda context, with switches
// for every GPU optimisation (VidkH264CudaOpts); kernels in h264_kern.cuh, design and
// numbers in docs/H264_CUDA.md.
//
// Inverse data path (compact): the host validates the batch (the C path's checks, plus a
// map of covered 4x4 cells to find overlapping blocks), uploads the LevelScale tables and
// the DC groups, then per chunk of blocks packs records (metadata, mask, value offset,
// prediction samples) and levels into pinned slots, sends them with one copy per array,
// runs the kernel of the chunk's size class and brings back 8-bit samples (or int16
// residuals), which the host writes into the picture as soon as the chunk has landed.
// Chunks go round-robin over the streams; the host packs chunk k + 1 while the device
// copies and transforms chunk k.
//
// Frame inverse (opts.dense_vec, the default): no compaction; the dense frame goes up as it
// is in bands of macroblock rows over the streams, the fast dense kernel (vec_kernel) runs
// per band, the reconstruction comes back per band. Caller memory registered with
// vidk_host_register (vidk_cuda_host_pinned) is copied directly, here and in plane mode;
// the rest is staged through the pinned slots by the host pool.
//
// Every entry point exists twice: on the device, and emulated on the host (the same
// packing and chunking, the kernels' phase functions run by h264_emu.cuh, no CUDA call)
// for tests on machines without a GPU.
#include "h264_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_h264host {

constexpr int kSlots = SLOT_LAST - VIDK_SLOT_H264_FIRST + 1;

size_t align_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

// ---- options
// ----------------------------------------------------------------------------------

const char *const kStepNames[VIDK_H264_CUDA_STEPS] = {
    "dense", "compact",  "line",   "larger", "coalesced", "sparse",
    "fused", "pipeline", "graphs", "host",   "planes",
};

int check_opts(const VidkH264CudaOpts *o) {
    const int bools[] = {o->compact, o->line_per_thread, o->coalesced,
                         o->sparse,  o->fused,           o->pipeline,
                         o->host,    o->dense_vec,       o->staged};
    for (int v : bools)
        if (v != 0 && v != 1) return VIDK_ERR(EINVAL);
    if (o->threads < 32 || o->threads > kMaxThreads || o->threads % 32) return VIDK_ERR(EINVAL);
    if (o->work < 1 || o->work > 16) return VIDK_ERR(EINVAL);
    if (o->streams < 0 || o->streams > VIDK_CUDA_MAX_STREAMS) return VIDK_ERR(EINVAL);
    if (o->chunk < 0 || o->graphs < -1 || o->graphs > 1) return VIDK_ERR(EINVAL);
    if (o->host_threads < 0 || o->host_threads > kMaxHostThreads || o->plane < -1 ||
        o->plane > 1)
        return VIDK_ERR(EINVAL);
    return 0;
}

// ---- execution: the shared executor (exec.cuh), with the h264 family's parameters ----------

constexpr int kMaxEvents = 2 * kMaxChunks + 8; // chunks, common, planes up and down

static_assert(kTrackRes <= kOrderMaxRes, "tracked buffers");
const char *const kResNames[kTrackRes] = {
    "common",          "device plane 0", "device plane 1", "device plane 2",
    "staged plane 0",  "staged plane 1", "staged plane 2", "picture plane 0",
    "picture plane 1", "picture plane 2"};

const ExecFamily kFamily = {"h264", VIDK_SLOT_H264_FIRST, kSlots, kAlign, kTrackRes, kResNames};
static_assert(kSlots <= kExecMaxSlots, "H.264 slots");

void exec_init(Exec *x, VidkContext *ctx, bool emu) {
    vidk_cux::exec_init(x, ctx, emu, &kFamily, kMaxEvents);
}

int exec_streams(Exec *x, int want) {
    if (x->emu) {
        x->ns = want > 0 ? want : 4;
        return 0;
    }
    const int have = vidk_cuda_stream_count(x->ctx);
    exec_use_streams(x, want > 0 && want < have ? want : have);
    return 0;
}

// Ranges the emulation treats as registered (vidk_cuda_h264_emu_register).
constexpr int kEmuRanges = 64;
struct EmuRange {
    uintptr_t lo, hi;
};
EmuRange g_emu_reg[kEmuRanges];
int g_emu_nreg = 0;

// Whether [p, p + n) is caller memory registered for direct asynchronous copies.
bool pinned(const Exec *x, const void *p, size_t n) {
    if (!x->emu) return vidk_cuda_host_pinned(x->ctx, p, n) != 0;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    if (!p || !n) return false;
    for (int i = 0; i < g_emu_nreg; i++)
        if (g_emu_reg[i].lo <= lo && lo + n <= g_emu_reg[i].hi) return true;
    return false;
}

// Whether plane p (pw x ph samples) of a picture can be copied directly (registered, rows
// in increasing addresses).
bool plane_pinned(const Exec *x, const VidkPicture *pic, int p, int pw, int ph) {
    const ptrdiff_t st = pic->stride[p];
    return st >= pw && pinned(x, pic->data[p], (size_t)(ph - 1) * (size_t)st + (size_t)pw);
}

// ---- kernel table ---------------------------------------------------------------------------

template <int N, bool L, bool C, bool S, bool F> InvKernel inv_entry() {
    return {reinterpret_cast<const void *>(inv_kernel<N, L, C, S, F>), emu_inv<N, L, C, S, F>,
            warp_smem_words<N, L, C, F>(), blocks_per_warp<N, L>()};
}

#define VK_INV4(N, L, C)                                                                       \
    inv_entry<N, L, C, false, false>(), inv_entry<N, L, C, false, true>(),                     \
        inv_entry<N, L, C, true, false>(), inv_entry<N, L, C, true, true>()
#define VK_INV16(N)                                                                            \
    VK_INV4(N, false, false), VK_INV4(N, false, true), VK_INV4(N, true, false),                \
        VK_INV4(N, true, true)

// Index: size * 16 + line * 8 + coalesced * 4 + sparse * 2 + fused.
const InvKernel *inv_table() {
    static const InvKernel t[32] = {VK_INV16(4), VK_INV16(8)};
    return t;
}

// Plane mode: line per thread, coalesced, samples in and out of the device planes.
template <int N, bool S> InvKernel inv_plane_entry() {
    return {reinterpret_cast<const void *>(inv_kernel<N, true, true, S, false, true>),
            emu_inv<N, true, true, S, false, true>, warp_smem_words<N, true, true, false>(),
            blocks_per_warp<N, true>()};
}

const InvKernel &inv_select(int size, const VidkH264CudaOpts &o, bool plane) {
    static const InvKernel tp[4] = {inv_plane_entry<4, false>(), inv_plane_entry<4, true>(),
                                    inv_plane_entry<8, false>(), inv_plane_entry<8, true>()};
    if (plane) return tp[size * 2 + o.sparse];
    return inv_table()[size * 16 + o.line_per_thread * 8 + o.coalesced * 4 + o.sparse * 2 +
                       o.fused];
}

Launch inv_geometry(const InvKernel &k, const VidkH264CudaOpts &o, uint32_t n) {
    Launch l;
    const uint32_t per_cta = (uint32_t)(o.threads / 32 * k.bpw) * (uint32_t)o.work;
    l.grid = n ? (n + per_cta - 1) / per_cta : 1;
    l.threads = o.threads;
    l.smem = (size_t)(o.threads / 32) * (size_t)k.warp_words * 4;
    return l;
}

int inv_launch(Exec *x, const InvKernel &k, const Launch &l, const InvArgs &a, int s) {
    if (x->emu) {
        k.emu(a, l.grid, l.threads);
        return 0;
    }
    void *args[] = {const_cast<InvArgs *>(&a)};
    return exec_launch(x, k.fn, l.grid, l.threads, l.smem, args, s);
}

// ---- geometry and validation (the checks of src/h264_batch.c)
// ----------------------------------

int n_planes(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? 1 : 3;
}

void plane_dims(int w, int h, VidkChroma c, int p, int *pw, int *ph) {
    *pw = p ? w / 2 : w;
    *ph = p ? (c == VIDK_CHROMA_422 ? h : h / 2) : h;
}

void mb_dims(VidkChroma c, int p, int *mw, int *mh) {
    *mw = p ? 8 : 16;
    *mh = p ? (c == VIDK_CHROMA_422 ? 16 : 8) : 16;
}

int dc_type_of(VidkChroma c, int p) {
    return !p ? kDcLuma : c == VIDK_CHROMA_422 ? kDcChroma422 : kDcChroma;
}

bool geometry_ok(int w, int h, VidkChroma c, int bitdepth) {
    return w >= 16 && h >= 16 && w <= VIDK_MAX_PICTURE_SIDE && h <= VIDK_MAX_PICTURE_SIDE &&
           !(w % 16) && !(h % 16) &&
           (c == VIDK_CHROMA_400 || c == VIDK_CHROMA_420 || c == VIDK_CHROMA_422) &&
           bitdepth >= 8 && bitdepth <= VIDK_H264_MAX_BITDEPTH;
}

bool scaling_ok(const VidkH264Scaling *s) {
    const uint8_t *p = reinterpret_cast<const uint8_t *>(s);
    for (size_t i = 0; i < sizeof(*s); i++)
        if (!p[i]) return false;
    return true;
}

bool picture_ok(const VidkPicture *pic, int w, int h, VidkChroma c) {
    if (!pic || pic->bitdepth != 8 || pic->w != w || pic->h != h || pic->chroma != c)
        return false;
    for (int p = 0; p < n_planes(c); p++)
        if (!pic->data[p]) return false;
    return true;
}

int list_index(int plane, bool intra) {
    return (intra ? 0 : 3) + plane;
}

// Checks of one run of blocks of a list (a job of batch_valid): bad set on an invalid
// block, overlap when a 4x4 cell is covered twice. The cell map is shared by the jobs: a
// cell's bit is set with an atomic OR, so that the second block to cover it (in whatever
// order the threads run) sees it set.
struct ValidJob {
    const VidkH264Batch *b;
    uint8_t *map;
    size_t first[4];
    int cw[3];
    int s;
    uint32_t per;
    int bad, overlap;
};

void valid_job(void *arg, int job, int) {
    ValidJob *j = static_cast<ValidJob *>(arg);
    const VidkH264Batch *b = j->b;
    const VidkH264BlockList *l = &b->list[j->s];
    const VidkH264DcList *d = &b->dc;
    const int n = j->s ? 8 : 4, np = n_planes(b->chroma), qmax = VIDK_H264_MAX_QP(b->bitdepth);
    const uint32_t i0 = (uint32_t)job * j->per,
                   i1 = l->count - i0 < j->per ? l->count : i0 + j->per;
    int pw[3] = {0, 0, 0}, ph[3] = {0, 0, 0};
    for (int p = 0; p < np; p++)
        plane_dims(b->w, b->h, b->chroma, p, &pw[p], &ph[p]);
    bool bad = false, ov = false;
    for (uint32_t i = i0; i < i1 && !bad; i++) {
        const int p = l->plane[i];
        if (p >= np || l->qp[i] > qmax ||
            (l->flags[i] & ~(VIDK_H264_BLK_INTRA | VIDK_H264_BLK_DC)) || l->x[i] % n ||
            l->y[i] % n || l->x[i] + n > pw[p] || l->y[i] + n > ph[p]) {
            bad = true;
            break;
        }
        if (l->flags[i] & VIDK_H264_BLK_DC) {
            const uint32_t g = l->dc_index[i] / 16, k = l->dc_index[i] % 16;
            if (j->s || g >= d->count) {
                bad = true;
                break;
            }
            const int t = d->type[g];
            if (k >= (uint32_t)(t == VIDK_H264_DC_LUMA     ? 16
                                : t == VIDK_H264_DC_CHROMA ? 4
                                                           : 8)) {
                bad = true;
                break;
            }
        }
        for (int yy = 0; yy < n / 4; yy++)
            for (int xx = 0; xx < n / 4; xx++) {
                const size_t c =
                    j->first[p] + (size_t)(l->y[i] / 4 + yy) * j->cw[p] + l->x[i] / 4 + xx;
                const uint8_t bit = (uint8_t)(1u << (c % 8));
                if (__atomic_fetch_or(&j->map[c / 8], bit, __ATOMIC_RELAXED) & bit) ov = true;
            }
    }
    if (bad) __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED);
    if (ov) __atomic_store_n(&j->overlap, 1, __ATOMIC_RELAXED);
}

// batch_ok of src/h264_batch.c, plus: *overlap set when two blocks cover a common sample.
// The block checks run over pool (NULL: in the caller). Returns 1 (valid), 0 (invalid) or
// VIDK_ERR(ENOMEM).
int batch_valid(const VidkH264Batch *b, bool *overlap, VidkThreadPool *pool) {
    *overlap = false;
    if (!geometry_ok(b->w, b->h, b->chroma, b->bitdepth) || !scaling_ok(&b->scaling)) return 0;
    const int qmax = VIDK_H264_MAX_QP(b->bitdepth), np = n_planes(b->chroma);
    const VidkH264DcList *d = &b->dc;
    if (d->count > d->capacity) return 0;
    if (d->count &&
        (!d->x || !d->y || !d->plane || !d->qp || !d->type || !d->flags || !d->coef))
        return 0;
    for (uint32_t g = 0; g < d->count; g++) {
        const int p = d->plane[g];
        if (p >= np || d->qp[g] > qmax || (d->flags[g] & ~VIDK_H264_BLK_INTRA)) return 0;
        if (d->type[g] != dc_type_of(b->chroma, p)) return 0;
        int mw, mh, pw, ph;
        mb_dims(b->chroma, p, &mw, &mh);
        plane_dims(b->w, b->h, b->chroma, p, &pw, &ph);
        if (d->x[g] % mw || d->y[g] % mh || d->x[g] + mw > pw || d->y[g] + mh > ph) return 0;
    }
    for (int s = 0; s < VIDK_H264_TX_COUNT; s++) {
        const VidkH264BlockList *l = &b->list[s];
        if (l->count > l->capacity || (l->count && (!l->x || !l->y || !l->plane || !l->qp ||
                                                    !l->flags || !l->dc_index || !l->coef)))
            return 0;
    }
    // Map of covered 4x4 cells, one bit each, planes one after the other.
    ValidJob j;
    memset(&j, 0, sizeof(j));
    j.b = b;
    for (int p = 0; p < np; p++) {
        int pw, ph;
        plane_dims(b->w, b->h, b->chroma, p, &pw, &ph);
        j.cw[p] = pw / 4;
        j.first[p + 1] = j.first[p] + (size_t)(pw / 4) * (ph / 4);
    }
    j.map = static_cast<uint8_t *>(calloc(j.first[np] / 8 + 1, 1));
    if (!j.map) return VIDK_ERR(ENOMEM);
    const uint32_t threads = (uint32_t)vidk_pool_threads(pool);
    for (int s = 0; s < VIDK_H264_TX_COUNT && !j.bad; s++) {
        const uint32_t count = b->list[s].count;
        if (!count) continue;
        j.s = s;
        j.per = (count + threads * 4 - 1) / (threads * 4);
        if (j.per < 4096) j.per = 4096;
        vidk_pool_run(pool, (int)((count + j.per - 1) / j.per), valid_job, &j);
    }
    free(j.map);
    *overlap = j.overlap != 0;
    return j.bad ? 0 : 1;
}

} // namespace vidk_h264host

using namespace vidk_h264host;

// ---- C entry points
// ------------------------------------------------------------------------------------

extern "C" void vidk_cuda_h264_default_opts(VidkH264CudaOpts *o) {
    if (!o) return;
    vidk_cuda_h264_step_opts(o, VIDK_H264_CUDA_PLANES);
    o->graphs = -1;   // where a call fits one chunk, launches dominate: replay the graph
    o->plane = -1;    // planes where most of the picture is coded
    o->dense_vec = 1; // frame inverse: the dense frame as it is, no compaction on the host
}

extern "C" int vidk_cuda_h264_step_opts(VidkH264CudaOpts *o, int step) {
    if (!o || step < 0 || step >= VIDK_H264_CUDA_STEPS) return VIDK_ERR(EINVAL);
    memset(o, 0, sizeof(*o));
    o->threads = 96; // the paper's work-group size (one 4:2:0 macroblock of lines)
    o->work = 1;
    o->compact = step >= VIDK_H264_CUDA_COMPACT;
    o->line_per_thread = step >= VIDK_H264_CUDA_LINE;
    if (step >= VIDK_H264_CUDA_LARGER) o->threads = 256, o->work = 2;
    o->coalesced = step >= VIDK_H264_CUDA_COALESCED;
    o->sparse = step >= VIDK_H264_CUDA_SPARSE;
    o->fused = step >= VIDK_H264_CUDA_FUSED;
    o->pipeline = step >= VIDK_H264_CUDA_PIPELINE;
    o->graphs = step >= VIDK_H264_CUDA_GRAPHS;
    // Parallel host staging makes packing cheap enough to pipeline large calls again:
    // graphs go back to automatic (single-chunk calls only).
    if (step >= VIDK_H264_CUDA_HOST) o->host = 1, o->graphs = -1;
    o->plane = step >= VIDK_H264_CUDA_PLANES;
    return 0;
}

extern "C" const char *vidk_cuda_h264_step_name(int step) {
    return step >= 0 && step < VIDK_H264_CUDA_STEPS ? kStepNames[step] : "?";
}

extern "C" int vidk_cuda_h264_batch_inverse(VidkContext *ctx, const VidkH264Batch *b,
                                            VidkPicture *pic, const VidkH264CudaOpts *opts) {
    return batch_inverse(ctx, b, pic, opts, false);
}

extern "C" int vidk_cuda_h264_frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr,
                                            VidkPicture *pic, const VidkH264CudaOpts *opts) {
    return frame_inverse(ctx, fr, pic, opts, false);
}

extern "C" int vidk_cuda_h264_batch_forward(VidkContext *ctx, const VidkPicture *src,
                                            const VidkPicture *pred, VidkH264CoefFrame *fr,
                                            VidkH264Batch *b, const VidkH264CudaOpts *opts) {
    return batch_forward(ctx, src, pred, fr, b, opts, false);
}

// An emulated call whose kernels made a vector access the device would fault on fails
// with VIDK_ERR(EFAULT).
static int emu_result(VidkContext *ctx, int r) {
    if (g_emu_misaligned) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda h264 emulation: %d misaligned vector accesses",
                 g_emu_misaligned);
        g_emu_misaligned = 0;
        return VIDK_ERR(EFAULT);
    }
    return r;
}

extern "C" int vidk_cuda_h264_emu_batch_inverse(VidkContext *ctx, const VidkH264Batch *b,
                                                VidkPicture *pic,
                                                const VidkH264CudaOpts *opts) {
    g_emu_misaligned = 0;
    return emu_result(ctx, batch_inverse(ctx, b, pic, opts, true));
}

extern "C" int vidk_cuda_h264_emu_frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr,
                                                VidkPicture *pic,
                                                const VidkH264CudaOpts *opts) {
    g_emu_misaligned = 0;
    return emu_result(ctx, frame_inverse(ctx, fr, pic, opts, true));
}

extern "C" int vidk_cuda_h264_emu_batch_forward(VidkContext *ctx, const VidkPicture *src,
                                                const VidkPicture *pred, VidkH264CoefFrame *fr,
                                                VidkH264Batch *b,
                                                const VidkH264CudaOpts *opts) {
    g_emu_misaligned = 0;
    return emu_result(ctx, batch_forward(ctx, src, pred, fr, b, opts, true));
}

extern "C" int vidk_cuda_h264_emu_register(const void *ptr, size_t bytes) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
    if (!ptr) {
        g_emu_nreg = 0;
        return 0;
    }
    if (!bytes) {
        for (int i = 0; i < g_emu_nreg; i++)
            if (g_emu_reg[i].lo == lo) {
                g_emu_reg[i] = g_emu_reg[--g_emu_nreg];
                return 0;
            }
        return VIDK_ERR(ENOENT);
    }
    if (g_emu_nreg >= kEmuRanges) return VIDK_ERR(ENOSPC);
    g_emu_reg[g_emu_nreg].lo = lo;
    g_emu_reg[g_emu_nreg].hi = lo + bytes;
    g_emu_nreg++;
    return 0;
}

extern "C" void vidk_cuda_h264_release(VidkContext *ctx) {
    if (!ctx || !ctx->cuda) return;
    VidkCudaBuf *slot = &ctx->cuda->host[SLOT_GRAPH];
    if (!slot->ptr || slot->bytes < sizeof(GraphState)) return;
    GraphState *gs = static_cast<GraphState *>(slot->ptr);
    if (gs->magic != kGraphMagic) return;
    graph_destroy(gs);
    vidk_pool_destroy(&gs->pool);
    gs->pool_threads = 0;
}
