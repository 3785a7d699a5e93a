// Host side of the HEVC family on the device, shared by its files: hevc.cu (the executor's
// family parameters, host staging pool, kernel tables, options, validation, scaling-list
// tables, C entry points), hevc_forward.cu (chunk layout, kernel-only signature, forward)
// and hevc_inverse.cu (inverse). Kernels in hevc_dev.cuh, their host emulation in
// hevc_emu.cuh, the executor in exec.cuh.
#ifndef VIDK_HEVC_HOST_CUH
#define VIDK_HEVC_HOST_CUH

#include "cuda_common.cuh"
#include "exec.cuh"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mutex>

#include "cuda/hevc_cuda.h"
#include "hevc_dev.cuh"
#include "hevc_emu.cuh"

namespace vidk_hevchost {

using namespace vidk_hevccu;
using namespace vidk_cux;
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

constexpr size_t kAlign = 128;

constexpr uint64_t kMaxChunkValues = (uint64_t)1 << 27;

constexpr int kMaxChunksTotal = 4096;

constexpr uint64_t kMagicTab = 0x5648455643544142ull, kMagicKo = 0x564845564b4f4e4cull;

constexpr uint64_t kMagicHist = 0x5648455648495354ull;
size_t align_up(size_t v, size_t a);

// The executor and what the HEVC paths keep beside it.
struct HevcExec : Exec {
    EmuScratch *scratch;
    VidkThreadPool *pool;      // host staging pool of the call (nullptr: serial)
    uint32_t piece_min;        // smallest piece of host work in bytes (make_pieces)
    const VidkHevcCudaOpts *o; // the call's resolved options (direct copies, emulated pins)
    int tiles4;                // 4x4 kernels: tiles per warp
    VidkHevcCudaStats stats;   // bytes by route (opts.stats)
};
void hevc_exec_init(HevcExec *x, VidkContext *ctx, bool emu);
void hevc_exec_end(HevcExec *x);
bool pinned(const HevcExec *x, const void *p, size_t bytes);

// One piece of a chunk's transfer: `bytes` at offset `off` of the device buffer, from / to
// `host` (a registered caller array: a direct copy) or, host == nullptr, the same offset of
// the pinned slot.
struct Seg {
    size_t off, bytes;
    void *host;
};
int copy_segs(HevcExec *x, bool up, uint8_t *d, uint8_t *h, const Seg *g, int n, int s,
              size_t *moved);

struct PoolState {
    uint64_t magic;
    VidkThreadPool *pool;
    int threads;
};
int host_pool(HevcExec *x, int want);

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
                 uint32_t min_bytes);
int pool_threads(const HevcExec *x);

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
const FwdK &fwd_select(bool tc, bool sl);
const InvK &inv_select(bool tc, bool sl, int out);

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
void exec_opts(HevcExec *x, const VidkHevcCudaOpts *o);
int resolve_opts(const VidkContext *ctx, const VidkHevcCudaOpts *in, bool emu,
                 VidkHevcCudaOpts *o);
uint16_t pack_key(const VidkHevcTb *t);
int scan_records(const VidkHevcTbList *l, int s, int bd, const uint32_t *idx, uint32_t lo,
                 uint32_t n, bool *uniform);

int check_positions(const VidkHevcBatch *b, const VidkHevcPlanes *pl);
int scaling_tables(HevcExec *x, const VidkHevcBatch *b, const int32_t **qs, const int16_t **ds);

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
int chunk_count(const uint32_t cnt[4], int want);
int layout_ranges(Layout *L, const uint32_t cnt[4], int k, bool forward);
void layout_offsets(Layout *L, bool forward, int pb, uint32_t dense);

struct KoSig {
    uint64_t magic, layout;
    // compact: forward, the resolved dense-class mask (bit s: class s dense)
    int forward, ns, bd, tc, sl, compact, out, pad; // no padding: compared with memcmp
    const void *io, *lev, *tab;
};
int ko_slot(HevcExec *x, KoSig **sig);
unsigned grid4(const HevcExec *x, uint32_t n, int tile);

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
void sig_fill(KoSig *sig, const Layout *L, bool forward, const VidkHevcCudaOpts *o,
              const VidkHevcBatch *b, int out, const void *io, const void *lev,
              const void *tab);
bool sig_match(const KoSig *sig, const KoSig *now);
int run_forward(VidkContext *ctx, VidkHevcBatch *b, const VidkHevcCudaOpts *opts, bool emu);
int run_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic,
                const VidkHevcCudaOpts *opts, bool emu);
double now_ms();
double median(double *v, int n);

} // namespace vidk_hevchost

#endif
