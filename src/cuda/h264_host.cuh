// Host side of the H.264 family on the device, shared by its files: h264.cu (options, the
// executor's family parameters, kernel table, validation, C entry points),
// h264_compact.cu (compact inverse and the cached graph), h264_compact_host.cu (compact
// inverse with parallel host staging, batch inverse), h264_frame.cu (frame inverse: fast
// dense kernel and dense baseline) and h264_forward.cu (batch forward). Kernels in
// h264_kern.cuh, their host emulation in h264_emu.cuh, the executor in exec.cuh.
#ifndef VIDK_H264_HOST_CUH
#define VIDK_H264_HOST_CUH

#include "cuda_common.cuh"
#include "exec.cuh"
#include "h264_cuda.h"

// h264_kern.cuh defines the two non-template kernels (vec_kernel, fwd_kernel) only in the
// file that launches them (VIDK_H264_OWNS_VEC_KERNEL / _FWD_KERNEL set before this header).
#include "h264_emu.cuh"
#include "h264_kern.cuh"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vidk_h264host {

using namespace vidk_h264cu;
using namespace vidk_cux;
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

constexpr int kMaxChunks = 64; // per size class

constexpr uint32_t kChunkMin = 16384; // 4x4-equivalent blocks, automatic chunking

constexpr size_t kAlign = 256;

constexpr int kMaxHostThreads = 64;
size_t align_up(size_t n, size_t a);

// Options as a call runs them (ranges checked, automatic values resolved).
struct Plan {
    VidkH264CudaOpts o;
    int ns;     // streams
    bool graph; // through the cached graph
};
int check_opts(const VidkH264CudaOpts *o);

// Buffers the ordering check tracks (debug_order.cuh).
enum TrackRes {
    RES_COMMON,               // device LevelScale tables and DC groups
    RES_DEV = RES_COMMON + 1, // + p: device plane p (plane mode)
    RES_STAGE = RES_DEV + 3,  // + p: pinned staging of plane p
    RES_PIC = RES_STAGE + 3,  // + p: the caller's picture plane p
    kTrackRes = RES_PIC + 3
};

constexpr int kHost = kOrderHost; // the host thread's clock
void exec_init(Exec *x, VidkContext *ctx, bool emu);
int exec_streams(Exec *x, int want);
bool pinned(const Exec *x, const void *p, size_t n);
bool plane_pinned(const Exec *x, const VidkPicture *pic, int p, int pw, int ph);

typedef void (*InvEmuFn)(const InvArgs &, unsigned, int);

struct InvKernel {
    const void *fn;
    InvEmuFn emu;
    int warp_words;
    int bpw;
};
const InvKernel &inv_select(int size, const VidkH264CudaOpts &o, bool plane = false);

struct Launch {
    unsigned grid;
    int threads;
    size_t smem;
};
Launch inv_geometry(const InvKernel &k, const VidkH264CudaOpts &o, uint32_t n);
int inv_launch(Exec *x, const InvKernel &k, const Launch &l, const InvArgs &a, int s);
int n_planes(VidkChroma c);
void plane_dims(int w, int h, VidkChroma c, int p, int *pw, int *ph);
bool picture_ok(const VidkPicture *pic, int w, int h, VidkChroma c);
int list_index(int plane, bool intra);
int batch_valid(const VidkH264Batch *b, bool *overlap, VidkThreadPool *pool = nullptr);
void level_scales(int16_t *ls4, int16_t *ls8, const VidkH264Scaling *s);

constexpr size_t kLs4Bytes = 6 * 6 * 16 * 2, kLs8Bytes = 6 * 6 * 64 * 2;
uint32_t nz_mask16(const int16_t *c);

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
void unpack_chunk(const Class *c, const VidkH264BlockList *l, VidkPicture *pic, bool fused,
                  const Chunk *ch);
int host_batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic);

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
void graph_destroy(GraphState *gs);
GraphState *graph_state(Exec *x);

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
uint32_t chunk_target(const VidkH264CudaOpts &o, uint32_t units, int ns);
uint32_t class_chunk(const Class *c, int s, uint32_t target, bool whole);
int common_buffers(Exec *x, uint32_t ndc, size_t *off_dcm, size_t *off_dcc,
                   size_t *common_bytes, uint8_t **h_common, uint8_t **d_common);
int class_buffers(Exec *x, Class *c, int s, bool out);
int make_chunks(Chunk *chunks, const Class *cls, bool one_stream, int ns);
int resolve(Exec *x, const VidkH264CudaOpts *opts, Plan *pl);
InvArgs inv_args(const Class *c, int s, const uint8_t *d_common, size_t off_dcm, size_t off_dcc,
                 uint32_t b0, uint32_t b1, int work);
void graph_class(GraphCall &gc, int s, const Class *c, const VidkH264CudaOpts &o, uint32_t nv,
                 const uint8_t *d_common, size_t off_dcm, size_t off_dcc, size_t *h2d_total,
                 size_t *d2h_total);
int graph_call(Exec *x, GraphState *gs, const GraphCall &gc, int graphs, size_t *h2d_total,
               size_t *d2h_total, bool *done);
int chunk_launch(Exec *x, const Class *c, const Chunk *ch, const InvKernel &k, const Launch &l,
                 const InvArgs &a, size_t rb, size_t vb);
int chunk_download(Exec *x, const Class *c, const Chunk *ch, size_t ob);
int compact_inverse(Exec *x, const VidkH264Batch *b, VidkPicture *pic, Plan *pl);
void classes_init(Class cls[2], const VidkH264Batch *b, const VidkH264CudaOpts &o,
                  uint32_t target, bool whole, bool plane);
void fill_common(uint8_t *h_common, const VidkH264Batch *b, size_t off_dcm, size_t off_dcc);
void unpack_chunk_host(Class *c, const VidkH264BlockList *l, VidkPicture *pic, bool fused,
                       const Chunk *ch, VidkThreadPool *pool);
int unpack_landed(Exec *x, Class *cls, const VidkH264Batch *b, VidkPicture *pic, bool fused,
                  const Chunk *chunks, int *next, int upto, bool wait, VidkThreadPool *pool);
int host_pool(Exec *x, int want, VidkThreadPool **out);
int batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic,
                  const VidkH264CudaOpts *opts, bool emu);
int frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr, VidkPicture *pic,
                  const VidkH264CudaOpts *opts, bool emu);
int batch_forward(VidkContext *ctx, const VidkPicture *src, const VidkPicture *pred,
                  VidkH264CoefFrame *fr, VidkH264Batch *b, const VidkH264CudaOpts *opts,
                  bool emu);

} // namespace vidk_h264host

#endif
