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
#include "cuda_common.cuh"
#include "exec.cuh"
#include "h264_cuda.h"
#include "h264_emu.cuh"
#include "h264_kern.cuh"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

using namespace vidk_h264cu;
using namespace vidk_cux;

namespace {

// Buffer slots (device slot i and host slot i are separate buffers).
enum {
    SLOT_COMMON = VIDK_SLOT_H264_FIRST, // LevelScale tables, DC groups
    SLOT_REC4,                          // 4x4 records
    SLOT_VAL4,                          // 4x4 levels
    SLOT_OUT4,                          // 4x4 samples / residuals
    SLOT_REC8,
    SLOT_VAL8,
    SLOT_OUT8,
    SLOT_DENSE_IN,                          // dense baseline: levels, macroblocks, picture
    SLOT_DENSE_OUT,                         // dense baseline: picture / residual planes
    SLOT_FWD_COMMON,                        // forward: quantiser factors, macroblocks
    SLOT_FWD_IN,                            // forward: source and prediction bands
    SLOT_FWD_OUT,                           // forward: level bands and counters
    SLOT_PLANE,                             // plane mode: the picture's planes
    SLOT_GRAPH = VIDK_SLOT_H264_FIRST + 23, // host only: the cached graph (GraphState)
    SLOT_LAST = SLOT_GRAPH
};
constexpr int kSlots = SLOT_LAST - VIDK_SLOT_H264_FIRST + 1;
constexpr int kMaxChunks = 64;        // per size class
constexpr uint32_t kChunkMin = 16384; // 4x4-equivalent blocks, automatic chunking
constexpr size_t kAlign = 256;
constexpr int kMaxHostThreads = 64;

size_t align_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

// ---- options
// ----------------------------------------------------------------------------------

const char *const kStepNames[VIDK_H264_CUDA_STEPS] = {
    "dense", "compact",  "line",   "larger", "coalesced", "sparse",
    "fused", "pipeline", "graphs", "host",   "planes",
};

// Options as a call runs them (ranges checked, automatic values resolved).
struct Plan {
    VidkH264CudaOpts o;
    int ns;     // streams
    bool graph; // through the cached graph
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

// Buffers the ordering check tracks (debug_order.cuh).
enum TrackRes {
    RES_COMMON,               // device LevelScale tables and DC groups
    RES_DEV = RES_COMMON + 1, // + p: device plane p (plane mode)
    RES_STAGE = RES_DEV + 3,  // + p: pinned staging of plane p
    RES_PIC = RES_STAGE + 3,  // + p: the caller's picture plane p
    kTrackRes = RES_PIC + 3
};
static_assert(kTrackRes <= kOrderMaxRes, "tracked buffers");
const char *const kResNames[kTrackRes] = {
    "common",          "device plane 0", "device plane 1", "device plane 2",
    "staged plane 0",  "staged plane 1", "staged plane 2", "picture plane 0",
    "picture plane 1", "picture plane 2"};
constexpr int kHost = kOrderHost; // the host thread's clock

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

typedef void (*InvEmuFn)(const InvArgs &, unsigned, int);
struct InvKernel {
    const void *fn;
    InvEmuFn emu;
    int warp_words;
    int bpw;
};

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

const InvKernel &inv_select(int size, const VidkH264CudaOpts &o, bool plane = false) {
    static const InvKernel tp[4] = {inv_plane_entry<4, false>(), inv_plane_entry<4, true>(),
                                    inv_plane_entry<8, false>(), inv_plane_entry<8, true>()};
    if (plane) return tp[size * 2 + o.sparse];
    return inv_table()[size * 16 + o.line_per_thread * 8 + o.coalesced * 4 + o.sparse * 2 +
                       o.fused];
}

struct Launch {
    unsigned grid;
    int threads;
    size_t smem;
};

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
int batch_valid(const VidkH264Batch *b, bool *overlap, VidkThreadPool *pool = nullptr) {
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

// ---- host side of the compact path
// ------------------------------------------------------------

// LevelScale tables of the six lists: ls4[l][m][16], ls8[l][m][64].
void level_scales(int16_t *ls4, int16_t *ls8, const VidkH264Scaling *s) {
    int16_t t4[6][16], t8[6][64];
    for (int l = 0; l < 6; l++) {
        vidk_h264_level_scale4(t4, s->m4[l]);
        vidk_h264_level_scale8(t8, s->m8[l]);
        memcpy(ls4 + l * 96, t4, sizeof(t4));
        memcpy(ls8 + l * 384, t8, sizeof(t8));
    }
}
constexpr size_t kLs4Bytes = 6 * 6 * 16 * 2, kLs8Bytes = 6 * 6 * 64 * 2;

// Bit k set where c[k] != 0, for 16 levels.
uint32_t nz_mask16(const int16_t *c) {
#if defined(__SSE2__)
    const __m128i z = _mm_setzero_si128();
    const __m128i a = _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(c)), z);
    const __m128i b =
        _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(c + 8)), z);
    return ~(uint32_t)_mm_movemask_epi8(_mm_packs_epi16(a, b)) & 0xffff;
#else
    uint32_t m = 0;
    for (int k = 0; k < 16; k++)
        m |= (uint32_t)(c[k] != 0) << k;
    return m;
#endif
}

// The non-zero levels of c, in raster order, at v; returns the count.
inline uint32_t pack_values(int16_t *v, const int16_t *c, uint64_t m) {
    uint32_t n = 0;
    for (; m; m &= m - 1)
        v[n++] = c[__builtin_ctzll(m)];
    return n;
}

// One size class of a call.
struct Class {
    int n;                       // 4 or 8
    uint32_t count;              // blocks
    size_t rec_bytes, out_bytes; // per block
    uint8_t *h_rec, *d_rec;
    int16_t *h_val, *d_val;
    uint8_t *h_out, *d_out;
    uint32_t vals;  // values packed so far
    uint32_t chunk; // blocks per chunk
};

struct Chunk {
    int cls;
    uint32_t b0, b1;
    uint32_t v0, v1; // value range (sparse), or block range * N*N
    int stream;
    int ev;        // completion event
    bool sparse;   // host staging: this chunk's levels go up sparse
    uint8_t pmask; // host staging: planes its blocks touch (bit p)
};

// Records and levels of blocks [b0, b1) of class c; sets the chunk's value range. N,
// SPARSE and FUSED are constants so that the per-block copies become plain moves.
template <int N, bool SPARSE, bool FUSED>
void pack_blocks(Class *c, const VidkH264BlockList *l, const VidkPicture *pic, Chunk *ch) {
    constexpr int NN = N * N;
    constexpr size_t RB = (size_t)rec_bytes<N, FUSED>();
    ch->v0 = SPARSE ? c->vals : ch->b0 * (uint32_t)NN;
    for (uint32_t i = ch->b0; i < ch->b1; i++) {
        const int16_t *lv = l->coef + (size_t)i * NN;
        const int p = l->plane[i];
        const bool dc = N == 4 && (l->flags[i] & VIDK_H264_BLK_DC);
        uint32_t h[4];
        const uint32_t meta = l->qp[i] |
                              (uint32_t)list_index(p, l->flags[i] & VIDK_H264_BLK_INTRA)
                                  << kMetaListShift |
                              (dc ? kMetaDc : 0u);
        uint64_t mask = 0;
        uint32_t voff = 0;
        if (SPARSE) {
            if (N == 4) {
                mask = nz_mask16(lv);
            } else {
                for (int q = 0; q < 4; q++)
                    mask |= (uint64_t)nz_mask16(lv + 16 * q) << (16 * q);
            }
            voff = c->vals;
            c->vals += pack_values(c->h_val + voff, lv, mask);
        } else {
            memcpy(c->h_val + (size_t)i * NN, lv, (size_t)NN * 2);
        }
        if (N == 4) {
            h[0] = meta | (uint32_t)mask << 16;
            h[1] = dc ? l->dc_index[i] : 0;
            h[2] = voff;
            h[3] = 0;
        } else {
            h[0] = meta;
            h[1] = voff;
            h[2] = (uint32_t)mask;
            h[3] = (uint32_t)(mask >> 32);
        }
        uint8_t *r = c->h_rec + (size_t)i * RB;
        memcpy(r, h, sizeof(h));
        if (FUSED) {
            const ptrdiff_t stride = pic->stride[p];
            const uint8_t *src =
                static_cast<const uint8_t *>(pic->data[p]) + l->y[i] * stride + l->x[i];
            for (int y = 0; y < N; y++)
                memcpy(r + kRecHeader + y * N, src + y * stride, (size_t)N);
        }
    }
    ch->v1 = SPARSE ? c->vals : ch->b1 * (uint32_t)NN;
}

void pack_chunk(Class *c, const VidkH264BlockList *l, const VidkPicture *pic,
                const VidkH264CudaOpts &o, Chunk *ch) {
    typedef void (*Fn)(Class *, const VidkH264BlockList *, const VidkPicture *, Chunk *);
    static const Fn fn[2][2][2] = {
        {{pack_blocks<4, false, false>, pack_blocks<4, false, true>},
         {pack_blocks<4, true, false>, pack_blocks<4, true, true>}},
        {{pack_blocks<8, false, false>, pack_blocks<8, false, true>},
         {pack_blocks<8, true, false>, pack_blocks<8, true, true>}},
    };
    fn[c->n == 8][o.sparse][o.fused](c, l, pic, ch);
}

// Write the chunk's results into the picture.
template <int N, bool FUSED>
void unpack_blocks(const Class *c, const VidkH264BlockList *l, VidkPicture *pic,
                   const Chunk *ch) {
    constexpr int NN = N * N;
    for (uint32_t i = ch->b0; i < ch->b1; i++) {
        const int p = l->plane[i];
        const ptrdiff_t stride = pic->stride[p];
        uint8_t *dst = static_cast<uint8_t *>(pic->data[p]) + l->y[i] * stride + l->x[i];
        if (FUSED) {
            const uint8_t *t = c->h_out + (size_t)i * NN;
            for (int y = 0; y < N; y++)
                memcpy(dst + y * stride, t + y * N, (size_t)N);
        } else {
            const int16_t *t = reinterpret_cast<const int16_t *>(c->h_out) + (size_t)i * NN;
            for (int y = 0; y < N; y++)
                for (int x = 0; x < N; x++) {
                    const int v = dst[y * stride + x] + t[y * N + x]; // |t| <= 512
                    dst[y * stride + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
        }
    }
}

void unpack_chunk(const Class *c, const VidkH264BlockList *l, VidkPicture *pic, bool fused,
                  const Chunk *ch) {
    if (c->n == 4)
        fused ? unpack_blocks<4, true>(c, l, pic, ch) : unpack_blocks<4, false>(c, l, pic, ch);
    else
        fused ? unpack_blocks<8, true>(c, l, pic, ch) : unpack_blocks<8, false>(c, l, pic, ch);
}

// The c backend's batch inverse with the context's block functions (used for batches
// whose blocks overlap: the result then depends on the order, which the device does not
// keep).
int host_batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic) {
    int16_t *ls4 = static_cast<int16_t *>(malloc(kLs4Bytes + kLs8Bytes));
    int32_t *dcv =
        static_cast<int32_t *>(malloc(((size_t)b->dc.count + 1) * 16 * sizeof(int32_t)));
    if (!ls4 || !dcv) {
        free(ls4);
        free(dcv);
        return VIDK_ERR(ENOMEM);
    }
    int16_t *ls8 = ls4 + kLs4Bytes / 2;
    level_scales(ls4, ls8, &b->scaling);
    const VidkH264DSP *dsp = &ctx->h264;
    for (uint32_t g = 0; g < b->dc.count; g++) {
        const int l = list_index(b->dc.plane[g], b->dc.flags[g] & VIDK_H264_BLK_INTRA);
        dsp->idct_dc[b->dc.type[g]](dcv + (size_t)g * 16, b->dc.coef + (size_t)g * 16,
                                    b->scaling.m4[l][0], b->dc.qp[g]);
    }
    for (int s = 0; s < VIDK_H264_TX_COUNT; s++) {
        const VidkH264BlockList *L = &b->list[s];
        const int nn = s ? 64 : 16;
        VIDK_ALIGN(16) int16_t c[64];
        for (uint32_t i = 0; i < L->count; i++) {
            const int p = L->plane[i], qp = L->qp[i];
            const int l = list_index(p, L->flags[i] & VIDK_H264_BLK_INTRA);
            const int16_t *ls = s ? ls8 + (l * 6 + qp % 6) * 64 : ls4 + (l * 6 + qp % 6) * 16;
            const int32_t *dc =
                (L->flags[i] & VIDK_H264_BLK_DC) ? dcv + L->dc_index[i] : nullptr;
            uint8_t *dst = static_cast<uint8_t *>(pic->data[p]) +
                           (ptrdiff_t)L->y[i] * pic->stride[p] + L->x[i];
            memcpy(c, L->coef + (size_t)i * nn, (size_t)nn * 2);
            dsp->dequant_idct_add[s](dst, pic->stride[p], c, ls, qp, dc);
        }
    }
    free(ls4);
    free(dcv);
    return 0;
}

// ---- the cached graph (single chunk per class)
// ----------------------------------------------------

constexpr uint64_t kGraphMagic = 0x7664686732363467ull; // "vdhg264g"

struct GraphState {
    uint64_t magic;
    int broken;           // a graph could not be made: automatic mode launches directly
    VidkThreadPool *pool; // the host staging pool (opts.host), kept across calls
    int pool_threads;
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaGraphNode_t n_common, n_rec[2], n_val[2], n_k[2], n_out[2];
    const void *fn[2];
    int threads[2];
};

void graph_destroy(GraphState *gs) {
    const int broken = gs->broken, pool_threads = gs->pool_threads;
    VidkThreadPool *pool = gs->pool;
    if (gs->e) (void)cudaGraphExecDestroy(gs->e);
    if (gs->g) (void)cudaGraphDestroy(gs->g);
    memset(gs, 0, sizeof(*gs));
    gs->magic = kGraphMagic;
    gs->broken = broken;
    gs->pool = pool, gs->pool_threads = pool_threads;
}

// The context's graph state (host slot), made on first use; NULL on allocation failure.
GraphState *graph_state(Exec *x) {
    GraphState *gs = nullptr;
    const bool fresh = !x->ctx->cuda->host[SLOT_GRAPH].ptr;
    if (buf(x, SLOT_GRAPH, true, sizeof(GraphState), &gs) < 0) return nullptr;
    if (fresh || gs->magic != kGraphMagic) {
        memset(gs, 0, sizeof(*gs));
        gs->magic = kGraphMagic;
    }
    return gs;
}

struct GraphCall {
    void *d_common;
    const void *h_common;
    size_t common_bytes;
    void *d_rec[2], *d_val[2], *h_out[2];
    const void *h_rec[2], *h_val[2], *d_out[2];
    size_t rec_bytes[2], val_bytes[2], out_bytes[2];
    const InvKernel *k[2];
    Launch l[2];
    InvArgs a[2];
};

cudaKernelNodeParams kernel_params(const GraphCall &c, int s, void **args) {
    cudaKernelNodeParams kp = {};
    args[0] = const_cast<InvArgs *>(&c.a[s]);
    kp.func = const_cast<void *>(c.k[s]->fn);
    kp.gridDim = dim3(c.l[s].grid);
    kp.blockDim = dim3((unsigned)c.l[s].threads);
    kp.sharedMemBytes = (unsigned)c.l[s].smem;
    kp.kernelParams = args;
    return kp;
}

// Every copy is at least 16 bytes (graph copies cannot be empty; the slots are >= 256).
size_t nonzero(size_t n) {
    return n < 16 ? 16 : n;
}

int graph_build(Exec *x, GraphState *gs, const GraphCall &c) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    void *args[2][1];
    graph_destroy(gs);
    CUDA_CHECK(cudaGraphCreate(&gs->g, 0));
    CUDA_CHECK(cudaGraphAddMemcpyNode1D(&gs->n_common, gs->g, nullptr, 0, c.d_common,
                                        c.h_common, nonzero(c.common_bytes),
                                        cudaMemcpyHostToDevice));
    for (int s = 0; s < 2; s++) {
        CUDA_CHECK(cudaGraphAddMemcpyNode1D(&gs->n_rec[s], gs->g, nullptr, 0, c.d_rec[s],
                                            c.h_rec[s], nonzero(c.rec_bytes[s]),
                                            cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaGraphAddMemcpyNode1D(&gs->n_val[s], gs->g, nullptr, 0, c.d_val[s],
                                            c.h_val[s], nonzero(c.val_bytes[s]),
                                            cudaMemcpyHostToDevice));
        const cudaGraphNode_t deps[3] = {gs->n_common, gs->n_rec[s], gs->n_val[s]};
        const cudaKernelNodeParams kp = kernel_params(c, s, args[s]);
        CUDA_CHECK(cudaGraphAddKernelNode(&gs->n_k[s], gs->g, deps, 3, &kp));
        CUDA_CHECK(cudaGraphAddMemcpyNode1D(&gs->n_out[s], gs->g, &gs->n_k[s], 1, c.h_out[s],
                                            c.d_out[s], nonzero(c.out_bytes[s]),
                                            cudaMemcpyDeviceToHost));
        gs->fn[s] = c.k[s]->fn;
        gs->threads[s] = c.l[s].threads;
    }
    CUDA_CHECK(cudaGraphInstantiate(&gs->e, gs->g, 0));
    return 0;
cleanup:
    graph_destroy(gs);
    return err;
}

// Point the instantiated graph at this call's buffers, sizes and arguments. A refusal is
// not an error (the caller rebuilds the graph): nothing is logged, the runtime's last
// error is cleared.
bool graph_update(GraphState *gs, const GraphCall &c) {
    void *args[2][1];
    cudaError_t e =
        cudaGraphExecMemcpyNodeSetParams1D(gs->e, gs->n_common, c.d_common, c.h_common,
                                           nonzero(c.common_bytes), cudaMemcpyHostToDevice);
    for (int s = 0; s < 2 && e == cudaSuccess; s++) {
        const cudaKernelNodeParams kp = kernel_params(c, s, args[s]);
        e = cudaGraphExecMemcpyNodeSetParams1D(gs->e, gs->n_rec[s], c.d_rec[s], c.h_rec[s],
                                               nonzero(c.rec_bytes[s]), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaGraphExecMemcpyNodeSetParams1D(gs->e, gs->n_val[s], c.d_val[s], c.h_val[s],
                                                   nonzero(c.val_bytes[s]),
                                                   cudaMemcpyHostToDevice);
        if (e == cudaSuccess) e = cudaGraphExecKernelNodeSetParams(gs->e, gs->n_k[s], &kp);
        if (e == cudaSuccess)
            e = cudaGraphExecMemcpyNodeSetParams1D(gs->e, gs->n_out[s], c.h_out[s], c.d_out[s],
                                                   nonzero(c.out_bytes[s]),
                                                   cudaMemcpyDeviceToHost);
    }
    if (e != cudaSuccess) (void)cudaGetLastError();
    return e == cudaSuccess;
}

// Launch the call's graph on stream 0. *made: whether the graph was made (else nothing
// was queued and the caller may launch directly instead).
int graph_run(Exec *x, GraphState *gs, const GraphCall &c, size_t h2d_bytes, size_t d2h_bytes,
              bool *made) {
    const VidkContext *ctx = x->ctx;
    int err = 0;
    bool same = false;
    *made = false;
    // Kernels with more than 48 KiB of dynamic shared memory opt in before their nodes
    // are made or changed.
    for (int s = 0; s < 2; s++)
        if (c.l[s].smem > 48 * 1024)
            CUDA_CHECK(cudaFuncSetAttribute(
                c.k[s]->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)c.l[s].smem));
    same = gs->e && gs->fn[0] == c.k[0]->fn && gs->fn[1] == c.k[1]->fn &&
           gs->threads[0] == c.l[0].threads && gs->threads[1] == c.l[1].threads;
    if (same && !graph_update(gs, c)) same = false; // rebuild from scratch below
    if (!same && (err = graph_build(x, gs, c)) < 0) return err;
    *made = true;
    // The graph's copies and kernels read as the kernel stage; the copies' bytes are
    // counted in empty H2D / D2H spans around it.
    if ((err = stage(x, VIDK_CUDA_STAGE_H2D, true, 0, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_H2D, false, 0, h2d_bytes)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_KERNEL, true, 0, 0)) < 0)
        return err;
    CUDA_CHECK(cudaGraphLaunch(gs->e, x->st[0]));
    if ((err = stage(x, VIDK_CUDA_STAGE_KERNEL, false, 0, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_D2H, true, 0, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_D2H, false, 0, d2h_bytes)) < 0)
        return err;
    return 0;
cleanup:
    return err;
}

// ---- compact inverse
// ------------------------------------------------------------------------------

// 4x4-equivalent blocks per chunk: opts.chunk, or enough for two chunks per stream (at least
// kChunkMin), rounded up to a multiple of 1024.
uint32_t chunk_target(const VidkH264CudaOpts &o, uint32_t units, int ns) {
    uint32_t target = o.chunk ? (uint32_t)o.chunk : kChunkMin;
    if (!o.chunk && units / (2u * (uint32_t)ns) > target) target = units / (2u * (uint32_t)ns);
    return (target + 1023) / 1024 * 1024;
}

// Blocks per chunk of class s (whole: one chunk), at most kMaxChunks chunks.
uint32_t class_chunk(const Class *c, int s, uint32_t target, bool whole) {
    uint32_t ch = s ? (target / 4 + 255) / 256 * 256 : target;
    if (whole) ch = c->count;
    if (c->count && (c->count + ch - 1) / ch > (uint32_t)kMaxChunks)
        ch = (c->count + kMaxChunks - 1) / kMaxChunks;
    return ch ? ch : 1;
}

// The common slot (level scales, then ndc DC metas and coefficient groups), host and device.
int common_buffers(Exec *x, uint32_t ndc, size_t *off_dcm, size_t *off_dcc,
                   size_t *common_bytes, uint8_t **h_common, uint8_t **d_common) {
    int err;
    *off_dcm = align_up(kLs4Bytes + kLs8Bytes, 16);
    *off_dcc = align_up(*off_dcm + (size_t)ndc * 4, 16);
    *common_bytes = *off_dcc + (size_t)ndc * 32;
    if ((err = buf(x, SLOT_COMMON, true, *common_bytes, h_common)) < 0 ||
        (err = buf(x, SLOT_COMMON, false, *common_bytes, d_common)) < 0)
        return err;
    return 0;
}

// Records, values and (out) outputs of class s, host and device.
int class_buffers(Exec *x, Class *c, int s, bool out) {
    int err;
    const size_t n = c->count, nn = (size_t)c->n * c->n;
    const int slot = s ? SLOT_REC8 : SLOT_REC4;
    if ((err = buf(x, slot, true, n * c->rec_bytes, &c->h_rec)) < 0 ||
        (err = buf(x, slot, false, n * c->rec_bytes, &c->d_rec)) < 0 ||
        (err = buf(x, slot + 1, true, n * nn * 2, &c->h_val)) < 0 ||
        (err = buf(x, slot + 1, false, n * nn * 2, &c->d_val)) < 0 ||
        (out && (err = buf(x, slot + 2, true, n * c->out_bytes, &c->h_out)) < 0) ||
        (out && (err = buf(x, slot + 2, false, n * c->out_bytes, &c->d_out)) < 0))
        return err;
    return 0;
}

// Splits both classes into chunks, streams round robin (one stream: all on 0); returns the
// count.
int make_chunks(Chunk *chunks, const Class *cls, bool one_stream, int ns) {
    int nch = 0;
    for (int s = 0; s < 2; s++)
        for (uint32_t b0 = 0; b0 < cls[s].count; b0 += cls[s].chunk) {
            Chunk *ch = &chunks[nch];
            ch->cls = s;
            ch->b0 = b0;
            ch->b1 = b0 + (cls[s].count - b0 < cls[s].chunk ? cls[s].count - b0 : cls[s].chunk);
            ch->stream = one_stream ? 0 : nch % ns;
            ch->ev = -1;
            nch++;
        }
    return nch;
}

int resolve(Exec *x, const VidkH264CudaOpts *opts, Plan *pl) {
    int err;
    if (opts)
        pl->o = *opts;
    else
        vidk_cuda_h264_default_opts(&pl->o);
    if ((err = check_opts(&pl->o)) < 0) return err;
    if ((err = exec_streams(x, pl->o.pipeline ? pl->o.streams : 1)) < 0) return err;
    pl->ns = x->ns;
    pl->graph = false;
    return 0;
}

// Kernel arguments for blocks [b0, b1) of size class s, shared by the graph and the chunked
// launches of both staging paths.
InvArgs inv_args(const Class *c, int s, const uint8_t *d_common, size_t off_dcm, size_t off_dcc,
                 uint32_t b0, uint32_t b1, int work) {
    InvArgs a;
    memset(&a, 0, sizeof(a));
    a.rec = c->d_rec, a.val = c->d_val, a.out = c->d_out;
    a.ls = reinterpret_cast<const int16_t *>(d_common + (s ? kLs4Bytes : 0));
    a.dc_meta = reinterpret_cast<const uint32_t *>(d_common + off_dcm);
    a.dc_coef = reinterpret_cast<const int16_t *>(d_common + off_dcc);
    a.b0 = b0, a.b1 = b1, a.work = work;
    return a;
}

// Slot s of a graph call: the whole class in one launch, nv values going up (o selects the
// kernel).
void graph_class(GraphCall &gc, int s, const Class *c, const VidkH264CudaOpts &o, uint32_t nv,
                 const uint8_t *d_common, size_t off_dcm, size_t off_dcc, size_t *h2d_total,
                 size_t *d2h_total) {
    gc.d_rec[s] = c->d_rec, gc.h_rec[s] = c->h_rec, gc.rec_bytes[s] = c->count * c->rec_bytes;
    gc.d_val[s] = c->d_val, gc.h_val[s] = c->h_val, gc.val_bytes[s] = (size_t)nv * 2;
    gc.h_out[s] = c->h_out, gc.d_out[s] = c->d_out, gc.out_bytes[s] = c->count * c->out_bytes;
    gc.k[s] = &inv_select(s, o);
    gc.l[s] = inv_geometry(*gc.k[s], o, c->count);
    gc.a[s] = inv_args(c, s, d_common, off_dcm, off_dcc, 0, c->count, o.work);
    *h2d_total += gc.rec_bytes[s] + gc.val_bytes[s];
    *d2h_total += gc.out_bytes[s];
}

// Runs a graph call whose class copies (h2d_total, d2h_total bytes) graph_class counted. In
// automatic mode (graphs == -1) a graph that cannot be made marks the state broken and leaves
// *done false and the totals zero, for direct launches; else *done is true and the result is
// that of the graph and the final synchronisation.
int graph_call(Exec *x, GraphState *gs, const GraphCall &gc, int graphs, size_t *h2d_total,
               size_t *d2h_total, bool *done) {
    bool made = false;
    *h2d_total += gc.common_bytes;
    int err = graph_run(x, gs, gc, *h2d_total, *d2h_total, &made);
    *done = false;
    if (err < 0 && !made && graphs == -1) {
        // Automatic mode: no graph on this device / driver; launch directly from now on.
        vidk_log(x->ctx, VIDK_LOG_WARNING,
                 "cuda h264: CUDA graph unavailable, launching directly");
        gs->broken = 1;
        *h2d_total = *d2h_total = 0;
        return 0;
    }
    *done = true;
    if (err < 0) return err;
    return finish(x);
}

// A chunk's records and values up (rb, vb bytes), then its kernel, on the chunk's stream.
int chunk_launch(Exec *x, const Class *c, const Chunk *ch, const InvKernel &k, const Launch &l,
                 const InvArgs &a, size_t rb, size_t vb) {
    int err;
    if ((err = stage(x, VIDK_CUDA_STAGE_H2D, true, ch->stream, 0)) < 0 ||
        (err = h2d(x, c->d_rec + (size_t)ch->b0 * c->rec_bytes,
                   c->h_rec + (size_t)ch->b0 * c->rec_bytes, rb, ch->stream)) < 0 ||
        (err = h2d(x, c->d_val + ch->v0, c->h_val + ch->v0, vb, ch->stream)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_H2D, false, ch->stream, rb + vb)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_KERNEL, true, ch->stream, 0)) < 0 ||
        (err = inv_launch(x, k, l, a, ch->stream)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_KERNEL, false, ch->stream, 0)) < 0)
        return err;
    return 0;
}

// A chunk's output (ob bytes) down, on the chunk's stream.
int chunk_download(Exec *x, const Class *c, const Chunk *ch, size_t ob) {
    int err;
    if ((err = stage(x, VIDK_CUDA_STAGE_D2H, true, ch->stream, 0)) < 0 ||
        (err = d2h(x, c->h_out + (size_t)ch->b0 * c->out_bytes,
                   c->d_out + (size_t)ch->b0 * c->out_bytes, ob, ch->stream)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_D2H, false, ch->stream, ob)) < 0)
        return err;
    return 0;
}

int compact_inverse(Exec *x, const VidkH264Batch *b, VidkPicture *pic, Plan *pl) {
    int err = 0;
    VidkH264CudaOpts &o = pl->o;
    Class cls[2];
    Chunk *chunks = nullptr;
    int nch = 0, next_unpack = 0, ev_common = -1;
    uint8_t *h_common = nullptr, *d_common = nullptr;
    size_t off_dcm, off_dcc, common_bytes, h2d_total = 0, d2h_total = 0;
    const uint32_t ndc = b->dc.count;
    uint32_t units, target;
    GraphState *gs = nullptr;
    bool packed_all;

    // Chunking: 4x4-equivalent blocks per chunk, at most kMaxChunks per class.
    units = b->list[0].count + 4 * b->list[1].count;
    target = chunk_target(o, units, pl->ns);
    pl->graph = !x->emu && (o.graphs == 1 || (o.graphs == -1 && units <= target));
    if (pl->graph && !(gs = graph_state(x))) return VIDK_ERR(ENOMEM);
    if (pl->graph && o.graphs == -1 && gs->broken) pl->graph = false;
    for (int s = 0; s < 2; s++) {
        Class *c = &cls[s];
        memset(c, 0, sizeof(*c));
        c->n = s ? 8 : 4;
        c->count = b->list[s].count;
        c->rec_bytes = (size_t)kRecHeader + (o.fused ? (size_t)c->n * c->n : 0);
        c->out_bytes = (size_t)c->n * c->n * (o.fused ? 1 : 2);
        c->chunk = class_chunk(c, s, target, !o.pipeline || pl->graph);
    }

    // Buffers first: growing one waits for the streams and frees the old one.
    if ((err = common_buffers(x, ndc, &off_dcm, &off_dcc, &common_bytes, &h_common,
                              &d_common)) < 0)
        return err;
    for (int s = 0; s < 2; s++)
        if ((err = class_buffers(x, &cls[s], s, true)) < 0) return err;
    chunks = static_cast<Chunk *>(calloc(2 * kMaxChunks, sizeof(Chunk)));
    if (!chunks) return VIDK_ERR(ENOMEM);
    nch = make_chunks(chunks, cls, pl->graph || !o.pipeline, pl->ns);

    // Tables and DC groups.
    level_scales(reinterpret_cast<int16_t *>(h_common),
                 reinterpret_cast<int16_t *>(h_common + kLs4Bytes), &b->scaling);
    for (uint32_t g = 0; g < ndc; g++) {
        const int type = b->dc.type[g];
        const int l = list_index(b->dc.plane[g], b->dc.flags[g] & VIDK_H264_BLK_INTRA);
        const int qpdc = b->dc.qp[g] + (type == kDcChroma422 ? 3 : 0);
        const uint32_t ls = (uint32_t)b->scaling.m4[l][0] * vidk_h264_norm4[qpdc % 6][0];
        const uint32_t meta = ls | (uint32_t)qpdc << 16 | (uint32_t)type << 24;
        memcpy(h_common + off_dcm + (size_t)g * 4, &meta, 4);
        memcpy(h_common + off_dcc + (size_t)g * 32, b->dc.coef + (size_t)g * 16, 32);
    }

    if ((err = timing_start(x)) < 0) goto cleanup;
    packed_all = pl->graph || !o.pipeline;
    if (packed_all) {
        // Everything packed first, then one upload, one kernel per class, one download
        // (or the graph doing the same).
        for (int i = 0; i < nch; i++)
            pack_chunk(&cls[chunks[i].cls], &b->list[chunks[i].cls], pic, o, &chunks[i]);
        if (pl->graph) {
            GraphCall gc;
            memset(&gc, 0, sizeof(gc));
            gc.d_common = d_common, gc.h_common = h_common, gc.common_bytes = common_bytes;
            for (int s = 0; s < 2; s++) {
                const Class *c = &cls[s];
                const size_t nn = (size_t)c->n * c->n;
                const uint32_t nv = o.sparse ? c->vals : c->count * (uint32_t)nn;
                graph_class(gc, s, c, o, nv, d_common, off_dcm, off_dcc, &h2d_total,
                            &d2h_total);
            }
            bool done;
            err = graph_call(x, gs, gc, o.graphs, &h2d_total, &d2h_total, &done);
            if (done) {
                if (err < 0) goto cleanup;
                for (int i = 0; i < nch; i++)
                    unpack_chunk(&cls[chunks[i].cls], &b->list[chunks[i].cls], pic, o.fused,
                                 &chunks[i]);
                goto cleanup;
            }
        }
    }
    if ((err = stage(x, VIDK_CUDA_STAGE_H2D, true, 0, 0)) < 0 ||
        (err = h2d(x, d_common, h_common, common_bytes, 0)) < 0 ||
        (err = stage(x, VIDK_CUDA_STAGE_H2D, false, 0, common_bytes)) < 0 ||
        (ev_common = event_record(x, 0)) < 0) {
        err = ev_common < 0 && !err ? ev_common : err;
        goto cleanup;
    }
    h2d_total += common_bytes;
    for (int i = 1; i < pl->ns; i++)
        if ((err = event_wait(x, i, ev_common)) < 0) goto cleanup;
    for (int i = 0; i < nch; i++) {
        Chunk *ch = &chunks[i];
        Class *c = &cls[ch->cls];
        if (!packed_all)
            pack_chunk(c, &b->list[ch->cls], pic, o, ch); // before its sizes are read
        const InvKernel &k = inv_select(ch->cls, o);
        const Launch l = inv_geometry(k, o, ch->b1 - ch->b0);
        const size_t vb = (size_t)(ch->v1 - ch->v0) * 2;
        const size_t rb = (size_t)(ch->b1 - ch->b0) * c->rec_bytes;
        const size_t ob = (size_t)(ch->b1 - ch->b0) * c->out_bytes;
        InvArgs a = inv_args(c, ch->cls, d_common, off_dcm, off_dcc, ch->b0, ch->b1, o.work);
        if ((err = chunk_launch(x, c, ch, k, l, a, rb, vb)) < 0 ||
            (err = chunk_download(x, c, ch, ob)) < 0)
            goto cleanup;
        if ((ch->ev = event_record(x, ch->stream)) < 0) {
            err = ch->ev;
            goto cleanup;
        }
        h2d_total += rb + vb;
        d2h_total += ob;
        // Write back the chunks that have landed, in order, while later ones run.
        while (next_unpack < i) {
            const int q = event_query(x, chunks[next_unpack].ev);
            if (q < 0) {
                err = q;
                goto cleanup;
            }
            if (!q) break;
            const Chunk *u = &chunks[next_unpack++];
            unpack_chunk(&cls[u->cls], &b->list[u->cls], pic, o.fused, u);
        }
    }
    for (; next_unpack < nch; next_unpack++) {
        const Chunk *u = &chunks[next_unpack];
        if ((err = event_sync(x, u->ev)) < 0) goto cleanup;
        unpack_chunk(&cls[u->cls], &b->list[u->cls], pic, o.fused, u);
    }
    err = finish(x);
cleanup:
    free(chunks);
    return err;
}

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

void fill_common(uint8_t *h_common, const VidkH264Batch *b, size_t off_dcm, size_t off_dcc) {
    level_scales(reinterpret_cast<int16_t *>(h_common),
                 reinterpret_cast<int16_t *>(h_common + kLs4Bytes), &b->scaling);
    for (uint32_t g = 0; g < b->dc.count; g++) {
        const int type = b->dc.type[g];
        const int l = list_index(b->dc.plane[g], b->dc.flags[g] & VIDK_H264_BLK_INTRA);
        const int qpdc = b->dc.qp[g] + (type == kDcChroma422 ? 3 : 0);
        const uint32_t ls = (uint32_t)b->scaling.m4[l][0] * vidk_h264_norm4[qpdc % 6][0];
        const uint32_t meta = ls | (uint32_t)qpdc << 16 | (uint32_t)type << 24;
        memcpy(h_common + off_dcm + (size_t)g * 4, &meta, 4);
        memcpy(h_common + off_dcc + (size_t)g * 32, b->dc.coef + (size_t)g * 16, 32);
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
    for (int s = 0; s < 2; s++) {
        Class *c = &cls[s];
        memset(c, 0, sizeof(*c));
        c->n = s ? 8 : 4;
        c->count = b->list[s].count;
        c->rec_bytes = plane ? (size_t)(s ? 2 * kRecHeader : kRecHeader)
                             : (size_t)kRecHeader + (o.fused ? (size_t)c->n * c->n : 0);
        c->out_bytes = plane ? 0 : (size_t)c->n * c->n * (o.fused ? 1 : 2);
        c->chunk = class_chunk(c, s, target, !o.pipeline || pl->graph);
        const uint32_t jobs = (c->chunk + 255) / 256 + 1;
        if (jobs > maxjobs) maxjobs = jobs;
    }

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
    // Plane mode. The ordering, by construction (the Order check verifies it on every call,
    // emulated or not; the emulation alone runs streams one after the other):
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
        while (!plane && next_unpack < i) {
            const int q = event_query(x, chunks[next_unpack].ev);
            if (q < 0) {
                err = q;
                goto cleanup;
            }
            if (!q) break;
            const Chunk *u = &chunks[next_unpack++];
            unpack_chunk_host(&cls[u->cls], &b->list[u->cls], pic, o.fused, u, pool);
        }
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
    } else {
        for (; next_unpack < nch; next_unpack++) {
            const Chunk *u = &chunks[next_unpack];
            if ((err = event_sync(x, u->ev)) < 0) goto cleanup;
            unpack_chunk_host(&cls[u->cls], &b->list[u->cls], pic, o.fused, u, pool);
        }
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
            (err = dmemset(&x, dout, 64, s)) < 0)
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

} // namespace

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
