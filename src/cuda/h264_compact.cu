// H.264 on the device: the compact inverse (packing of records and levels, the cached
// graph, the chunked pipeline over the streams). Overview in h264.cu.
#include "h264_host.cuh"

#include <stdlib.h>
#include <string.h>

namespace vidk_h264host {

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

// The two size classes of a call (plane: plane-mode records, no per-block output).
void classes_init(Class cls[2], const VidkH264Batch *b, const VidkH264CudaOpts &o,
                  uint32_t target, bool whole, bool plane) {
    for (int s = 0; s < 2; s++) {
        Class *c = &cls[s];
        memset(c, 0, sizeof(*c));
        c->n = s ? 8 : 4;
        c->count = b->list[s].count;
        c->rec_bytes = plane ? (size_t)(s ? 2 * kRecHeader : kRecHeader)
                             : (size_t)kRecHeader + (o.fused ? (size_t)c->n * c->n : 0);
        c->out_bytes = plane ? 0 : (size_t)c->n * c->n * (o.fused ? 1 : 2);
        c->chunk = class_chunk(c, s, target, whole);
    }
}

// The common data: the level scales, then each DC group's meta word and levels.
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

// Writes back chunks *next.. (before upto) in order: those whose event has fired, or with
// wait every one after its event; over the host staging pool where given.
int unpack_landed(Exec *x, Class *cls, const VidkH264Batch *b, VidkPicture *pic, bool fused,
                  const Chunk *chunks, int *next, int upto, bool wait, VidkThreadPool *pool) {
    for (; *next < upto; ++*next) {
        const Chunk *u = &chunks[*next];
        const int q = wait ? event_sync(x, u->ev) : event_query(x, u->ev);
        if (q < 0) return q;
        if (!wait && !q) break;
        if (pool)
            unpack_chunk_host(&cls[u->cls], &b->list[u->cls], pic, fused, u, pool);
        else
            unpack_chunk(&cls[u->cls], &b->list[u->cls], pic, fused, u);
    }
    return 0;
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
    classes_init(cls, b, o, target, !o.pipeline || pl->graph, false);

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
    fill_common(h_common, b, off_dcm, off_dcc);

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
        if ((err = unpack_landed(x, cls, b, pic, o.fused, chunks, &next_unpack, i, false,
                                 nullptr)) < 0)
            goto cleanup;
    }
    if ((err = unpack_landed(x, cls, b, pic, o.fused, chunks, &next_unpack, nch, true,
                             nullptr)) < 0)
        goto cleanup;
    err = finish(x);
cleanup:
    free(chunks);
    return err;
}

} // namespace vidk_h264host
