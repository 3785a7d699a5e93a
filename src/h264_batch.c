/* H.264 frame level: dense coefficient frames, their compaction into size-separated block
 * lists (Wang et al. 2013, section 2.1, as a data structure), the fused decoder path
 * (dequantise + inverse transform + add, in place), the encoder path, the sparse packing,
 * and the byte counts. (The coefficient-frame file format is tools/coeffile.c.)
 *
 * The public batch functions validate, then call ctx->ops.h264 (backend.h). The *_cpu
 * drivers run the context's dsp table (C for c, SIMD otherwise) on ctx->ops.run (serial,
 * or the pool for threads; jobs write disjoint picture areas / level planes, so the
 * result does not depend on the thread count). cuda: src/cuda/h264.cu. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- geometry ----------------------------------------------------------------------- */

static int n_planes(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? 1 : 3;
}

/* Macroblock size of plane p in samples. */
static void mb_dims(VidkChroma c, int p, int *mw, int *mh) {
    *mw = p ? 8 : 16;
    *mh = p ? (c == VIDK_CHROMA_422 ? 16 : 8) : 16;
}

static void plane_dims(int w, int h, VidkChroma c, int p, int *pw, int *ph) {
    *pw = p ? w / 2 : w;
    *ph = p ? (c == VIDK_CHROMA_422 ? h : h / 2) : h;
}

static int geometry_ok(int w, int h, VidkChroma c, int bitdepth) {
    return w >= 16 && h >= 16 && w <= VIDK_MAX_PICTURE_SIDE && h <= VIDK_MAX_PICTURE_SIDE &&
           !(w % 16) && !(h % 16) &&
           (c == VIDK_CHROMA_400 || c == VIDK_CHROMA_420 || c == VIDK_CHROMA_422) &&
           bitdepth >= 8 && bitdepth <= VIDK_H264_MAX_BITDEPTH;
}

/* Scaling-list index of 7.4.2.1.1.1: intra Y, Cb, Cr = 0, 1, 2; inter = 3, 4, 5. */
static inline int list_index(int plane, int intra) {
    return (intra ? 0 : 3) + plane;
}

/* ---- coefficient frames --------------------------------------------------------------- */

void vidk_h264_scaling_flat(VidkH264Scaling *s) {
    if (s) memset(s, 16, sizeof(*s));
}

int vidk_h264_coef_frame_alloc(VidkH264CoefFrame *fr, int w, int h, VidkChroma chroma,
                               int bitdepth) {
    if (!fr) return VIDK_ERR(EINVAL);
    memset(fr, 0, sizeof(*fr));
    if (!geometry_ok(w, h, chroma, bitdepth)) return VIDK_ERR(EINVAL);
    const int mbs = (w / 16) * (h / 16);
    size_t total = ((size_t)mbs * sizeof(VidkH264MbInfo) + 63) & ~(size_t)63;
    size_t offs[3] = {0, 0, 0};
    int pw[3] = {0, 0, 0}, ph[3] = {0, 0, 0};
    for (int p = 0; p < n_planes(chroma); p++) {
        plane_dims(w, h, chroma, p, &pw[p], &ph[p]);
        offs[p] = total;
        total += ((size_t)pw[p] * (size_t)ph[p] * sizeof(int16_t) + 63) & ~(size_t)63;
    }
    uint8_t *mem = vidk_malloc_aligned(64, total);
    if (!mem) return VIDK_ERR(ENOMEM);
    memset(mem, 0, total);
    fr->w = w;
    fr->h = h;
    fr->chroma = chroma;
    fr->bitdepth = bitdepth;
    fr->mb_w = w / 16;
    fr->mb_h = h / 16;
    fr->mb = (VidkH264MbInfo *)mem;
    const int qp0 = 26 + 6 * (bitdepth - 8);
    for (int i = 0; i < mbs; i++) {
        fr->mb[i].qp[0] = (uint8_t)qp0;
        fr->mb[i].qp[1] = fr->mb[i].qp[2] = chroma == VIDK_CHROMA_400 ? 0 : (uint8_t)qp0;
    }
    for (int p = 0; p < n_planes(chroma); p++) {
        fr->coef[p] = (int16_t *)(mem + offs[p]);
        fr->plane_w[p] = pw[p];
        fr->plane_h[p] = ph[p];
    }
    vidk_h264_scaling_flat(&fr->scaling);
    fr->alloc = mem;
    return 0;
}

void vidk_h264_coef_frame_free(VidkH264CoefFrame *fr) {
    if (!fr) return;
    vidk_free_aligned(fr->alloc);
    memset(fr, 0, sizeof(*fr));
}

static int scaling_ok(const VidkH264Scaling *s) {
    for (int l = 0; l < 6; l++) {
        for (int k = 0; k < 16; k++)
            if (!s->m4[l][k]) return 0;
        for (int k = 0; k < 64; k++)
            if (!s->m8[l][k]) return 0;
    }
    return 1;
}

static int mb_ok(const VidkH264MbInfo *m, VidkChroma chroma, int bitdepth) {
    const int qmax = VIDK_H264_MAX_QP(bitdepth);
    if (m->flags & ~VIDK_H264_MB_FLAGS_ALL) return 0;
    if ((m->flags & VIDK_H264_MB_I16x16) &&
        (!(m->flags & VIDK_H264_MB_INTRA) || (m->flags & VIDK_H264_MB_8x8)))
        return 0;
    if (m->qp[0] > qmax) return 0;
    if (chroma == VIDK_CHROMA_400) return !m->qp[1] && !m->qp[2];
    return m->qp[1] <= qmax && m->qp[2] <= qmax;
}

int vidk_h264_coef_frame_validate(const VidkH264CoefFrame *fr) {
    if (!fr || !fr->mb || !geometry_ok(fr->w, fr->h, fr->chroma, fr->bitdepth))
        return VIDK_ERR(EINVAL);
    if (fr->mb_w != fr->w / 16 || fr->mb_h != fr->h / 16) return VIDK_ERR(EINVAL);
    for (int p = 0; p < 3; p++) {
        int pw = 0, ph = 0;
        if (p < n_planes(fr->chroma)) plane_dims(fr->w, fr->h, fr->chroma, p, &pw, &ph);
        if (p < n_planes(fr->chroma) && !fr->coef[p]) return VIDK_ERR(EINVAL);
        if (fr->plane_w[p] != pw || fr->plane_h[p] != ph) return VIDK_ERR(EINVAL);
    }
    if (!scaling_ok(&fr->scaling)) return VIDK_ERR(EINVAL);
    for (int i = 0; i < fr->mb_w * fr->mb_h; i++)
        if (!mb_ok(&fr->mb[i], fr->chroma, fr->bitdepth)) return VIDK_ERR(EINVAL);
    return 0;
}

/* ---- batches ----------------------------------------------------------------------------- */

void vidk_h264_batch_init(VidkH264Batch *b) {
    if (!b) return;
    memset(b, 0, sizeof(*b));
    vidk_h264_scaling_flat(&b->scaling);
}

/* The arrays of a list: x, y, plane, qp, then f5 and f6 (block lists: flags, dc_index; the
 * DC list: type, flags) of the element sizes below, then the 64-byte aligned levels. */
#define LIST_ARRAYS(l, f5, f6)                                                                 \
    (void **[7]) {                                                                             \
        (void **)&(l)->x, (void **)&(l)->y, (void **)&(l)->plane, (void **)&(l)->qp,           \
            (void **)&(l)->f5, (void **)&(l)->f6, (void **)&(l)->coef                          \
    }
static const size_t block_sizes[6] = {2, 2, 1, 1, 1, 4}, dc_sizes[6] = {2, 2, 1, 1, 1, 1};

static void free_arrays(void **const a[7]) {
    for (int i = 0; i < 6; i++)
        free(*a[i]);
    vidk_free_aligned(*a[6]);
}

void vidk_h264_batch_free(VidkH264Batch *b) {
    if (!b) return;
    for (int s = 0; s < VIDK_H264_TX_COUNT; s++)
        free_arrays(LIST_ARRAYS(&b->list[s], flags, dc_index));
    free_arrays(LIST_ARRAYS(&b->dc, type, flags));
    vidk_h264_batch_init(b);
}

/* Grow an array of `count` elements of `size` bytes to `cap` elements (contents kept). */
static int grow(void **p, size_t count, size_t cap, size_t size, int aligned) {
    size_t bytes;
    if (!vidk_mul_size(cap, size, &bytes)) return VIDK_ERR(EOVERFLOW);
    void *n = aligned ? vidk_malloc_aligned(64, bytes) : malloc(bytes);
    if (!n) return VIDK_ERR(ENOMEM);
    if (count) memcpy(n, *p, count * size);
    if (aligned)
        vidk_free_aligned(*p);
    else
        free(*p);
    *p = n;
    return 0;
}

/* Room for `need` entries in the arrays a of a list of `count` (nv levels each): the
 * capacity doubles from `first`. */
static int reserve(void **const a[7], const size_t size[6], uint32_t *capacity, uint32_t count,
                   uint32_t need, uint32_t first, int nv) {
    if (need <= *capacity) return 0;
    uint32_t cap = *capacity ? *capacity : first;
    while (cap < need)
        cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    int err;
    for (int i = 0; i < 6; i++)
        if ((err = grow(a[i], count, cap, size[i], 0)) < 0) return err;
    if ((err = grow(a[6], (size_t)count * nv, (size_t)cap * nv, 2, 1)) < 0) return err;
    *capacity = cap;
    return 0;
}

/* Copy an n x n block out of a level plane (row stride pw values). */
static inline void gather(int16_t *dst, const int16_t *src, int pw, int n) {
    for (int y = 0; y < n; y++)
        memcpy(dst + y * n, src + (size_t)y * pw, (size_t)n * 2);
}

static inline void scatter(int16_t *dst, int pw, const int16_t *src, int n) {
    for (int y = 0; y < n; y++)
        memcpy(dst + (size_t)y * pw, src + y * n, (size_t)n * 2);
}

/* The DC matrix shape of plane p: columns x rows of 4x4 blocks, and the group type. */
static void dc_shape(VidkChroma c, int p, int *cols, int *rows, int *type) {
    if (!p) {
        *cols = *rows = 4;
        *type = VIDK_H264_DC_LUMA;
    } else {
        *cols = 2;
        *rows = c == VIDK_CHROMA_422 ? 4 : 2;
        *type = c == VIDK_CHROMA_422 ? VIDK_H264_DC_CHROMA422 : VIDK_H264_DC_CHROMA;
    }
}

/* The DC levels of a macroblock's rows x cols 4x4 blocks (row stride pw), zero padded to 16;
 * nonzero when one is. */
static int dc_gather(int16_t lv[16], const int16_t *base, int pw, int cols, int rows) {
    int any = 0;
    memset(lv, 0, 16 * sizeof(*lv));
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            any |= lv[i * cols + j] = base[(size_t)(4 * i) * pw + 4 * j];
    return any;
}

static int push_block(VidkH264BlockList *l, int nv, int x, int y, int p, int qp, int flags,
                      uint32_t dc_index, const int16_t *src, int pw, int n, int drop_dc) {
    int err = reserve(LIST_ARRAYS(l, flags, dc_index), block_sizes, &l->capacity, l->count,
                      l->count + 1, 256, nv);
    if (err < 0) return err;
    const uint32_t i = l->count++;
    l->x[i] = (uint16_t)x;
    l->y[i] = (uint16_t)y;
    l->plane[i] = (uint8_t)p;
    l->qp[i] = (uint8_t)qp;
    l->flags[i] = (uint8_t)flags;
    l->dc_index[i] = dc_index;
    int16_t *c = l->coef + (size_t)i * nv;
    gather(c, src, pw, n);
    if (drop_dc) c[0] = 0;
    return 0;
}

int vidk_h264_batch_build(VidkContext *ctx, VidkH264Batch *b, const VidkH264CoefFrame *fr) {
    if (!b || vidk_h264_coef_frame_validate(fr) < 0) return VIDK_ERR(EINVAL);
    VidkH264DSP cdsp;
    const VidkH264DSP *dsp = &cdsp;
    if (ctx)
        dsp = &ctx->h264;
    else
        vidk_h264_dsp_init(&cdsp, 0);
    b->w = fr->w;
    b->h = fr->h;
    b->chroma = fr->chroma;
    b->bitdepth = fr->bitdepth;
    b->scaling = fr->scaling;
    b->list[0].count = b->list[1].count = b->dc.count = 0;
    int err = 0;
    for (int p = 0; p < n_planes(fr->chroma); p++) {
        int mw, mh, cols, rows, type;
        mb_dims(fr->chroma, p, &mw, &mh);
        dc_shape(fr->chroma, p, &cols, &rows, &type);
        const int pw = fr->plane_w[p];
        const ptrdiff_t stride = (ptrdiff_t)pw * 2;
        for (int my = 0; my < fr->mb_h; my++)
            for (int mx = 0; mx < fr->mb_w; mx++) {
                const VidkH264MbInfo *mb = &fr->mb[my * fr->mb_w + mx];
                const int qp = mb->qp[p], x0 = mx * mw, y0 = my * mh;
                const int intra = mb->flags & VIDK_H264_MB_INTRA;
                const int16_t *base = fr->coef[p] + (size_t)y0 * pw + x0;
                if (!p && (mb->flags & VIDK_H264_MB_8x8)) {
                    for (int k = 0; k < 4; k++) {
                        const int bx = (k & 1) * 8, by = (k >> 1) * 8;
                        const int16_t *c = base + (size_t)by * pw + bx;
                        if (!dsp->nnz[1](c, stride)) continue;
                        if ((err = push_block(&b->list[1], 64, x0 + bx, y0 + by, p, qp,
                                              intra ? VIDK_H264_BLK_INTRA : 0, 0, c, pw, 8,
                                              0)) < 0)
                            return err;
                    }
                    continue;
                }
                const int has_dc = p || (mb->flags & VIDK_H264_MB_I16x16);
                int group = -1;
                if (has_dc) {
                    int16_t lv[16];
                    if (dc_gather(lv, base, pw, cols, rows)) {
                        VidkH264DcList *d = &b->dc;
                        if ((err = reserve(LIST_ARRAYS(d, type, flags), dc_sizes, &d->capacity,
                                           d->count, d->count + 1, 64, 16)) < 0)
                            return err;
                        group = (int)d->count++;
                        d->x[group] = (uint16_t)x0;
                        d->y[group] = (uint16_t)y0;
                        d->plane[group] = (uint8_t)p;
                        d->qp[group] = (uint8_t)qp;
                        d->type[group] = (uint8_t)type;
                        d->flags[group] = intra ? VIDK_H264_BLK_INTRA : 0;
                        memcpy(d->coef + (size_t)group * 16, lv, sizeof(lv));
                    }
                }
                for (int i = 0; i < mh / 4; i++)
                    for (int j = 0; j < mw / 4; j++) {
                        const int16_t *c = base + (size_t)(4 * i) * pw + 4 * j;
                        int nz = dsp->nnz[0](c, stride);
                        if (has_dc) nz -= c[0] != 0; /* the DC slot is not this block's */
                        if (!nz && group < 0) continue;
                        int flags = intra ? VIDK_H264_BLK_INTRA : 0;
                        uint32_t dci = 0;
                        if (group >= 0) {
                            flags |= VIDK_H264_BLK_DC;
                            dci = (uint32_t)group * 16 + (uint32_t)(i * cols + j);
                        }
                        if ((err = push_block(&b->list[0], 16, x0 + 4 * j, y0 + 4 * i, p, qp,
                                              flags, dci, c, pw, 4, has_dc)) < 0)
                            return err;
                    }
            }
    }
    return 0;
}

/* Structural checks of a batch against itself (the inverse path must not read or write
 * out of bounds whatever the caller put in it). */
static int batch_ok(const VidkH264Batch *b) {
    if (!geometry_ok(b->w, b->h, b->chroma, b->bitdepth) || !scaling_ok(&b->scaling)) return 0;
    const int qmax = VIDK_H264_MAX_QP(b->bitdepth), np = n_planes(b->chroma);
    for (int s = 0; s < VIDK_H264_TX_COUNT; s++) {
        const VidkH264BlockList *l = &b->list[s];
        const int n = s ? 8 : 4;
        if (l->count > l->capacity) return 0;
        if (l->count &&
            (!l->x || !l->y || !l->plane || !l->qp || !l->flags || !l->dc_index || !l->coef))
            return 0;
        for (uint32_t i = 0; i < l->count; i++) {
            const int p = l->plane[i];
            if (p >= np || l->qp[i] > qmax) return 0;
            if (l->flags[i] & ~(VIDK_H264_BLK_INTRA | VIDK_H264_BLK_DC)) return 0;
            int pw, ph;
            plane_dims(b->w, b->h, b->chroma, p, &pw, &ph);
            if (l->x[i] % n || l->y[i] % n || l->x[i] + n > pw || l->y[i] + n > ph) return 0;
            if (l->flags[i] & VIDK_H264_BLK_DC) {
                const uint32_t g = l->dc_index[i] / 16, k = l->dc_index[i] % 16;
                if (s || g >= b->dc.count) return 0;
                const int t = b->dc.type[g];
                if (k >= (uint32_t)(t == VIDK_H264_DC_LUMA     ? 16
                                    : t == VIDK_H264_DC_CHROMA ? 4
                                                               : 8))
                    return 0;
            }
        }
    }
    const VidkH264DcList *d = &b->dc;
    if (d->count > d->capacity) return 0;
    if (d->count &&
        (!d->x || !d->y || !d->plane || !d->qp || !d->type || !d->flags || !d->coef))
        return 0;
    for (uint32_t g = 0; g < d->count; g++) {
        const int p = d->plane[g], t = d->type[g];
        if (p >= np || d->qp[g] > qmax || (d->flags[g] & ~VIDK_H264_BLK_INTRA)) return 0;
        int expect_type, cols, rows;
        dc_shape(b->chroma, p, &cols, &rows, &expect_type);
        if (t != expect_type) return 0;
        int mw, mh, pw, ph;
        mb_dims(b->chroma, p, &mw, &mh);
        plane_dims(b->w, b->h, b->chroma, p, &pw, &ph);
        if (d->x[g] % mw || d->y[g] % mh || d->x[g] + mw > pw || d->y[g] + mh > ph) return 0;
    }
    return 1;
}

int vidk_h264_batch_scatter(const VidkH264Batch *b, VidkH264CoefFrame *fr) {
    if (!b || !fr || vidk_h264_coef_frame_validate(fr) < 0 || !batch_ok(b))
        return VIDK_ERR(EINVAL);
    if (fr->w != b->w || fr->h != b->h || fr->chroma != b->chroma) return VIDK_ERR(EINVAL);
    for (int p = 0; p < n_planes(fr->chroma); p++)
        memset(fr->coef[p], 0, (size_t)fr->plane_w[p] * (size_t)fr->plane_h[p] * 2);
    for (int s = 0; s < VIDK_H264_TX_COUNT; s++) {
        const VidkH264BlockList *l = &b->list[s];
        const int n = s ? 8 : 4;
        for (uint32_t i = 0; i < l->count; i++) {
            const int p = l->plane[i];
            int16_t *dst = fr->coef[p] + (size_t)l->y[i] * fr->plane_w[p] + l->x[i];
            scatter(dst, fr->plane_w[p], l->coef + (size_t)i * n * n, n);
            if (l->flags[i] & VIDK_H264_BLK_DC) dst[0] = 0; /* filled from the DC list */
        }
    }
    const VidkH264DcList *d = &b->dc;
    for (uint32_t g = 0; g < d->count; g++) {
        const int p = d->plane[g];
        int cols, rows, type;
        dc_shape(b->chroma, p, &cols, &rows, &type);
        int16_t *base = fr->coef[p] + (size_t)d->y[g] * fr->plane_w[p] + d->x[g];
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++)
                base[(size_t)(4 * i) * fr->plane_w[p] + 4 * j] =
                    d->coef[(size_t)g * 16 + i * cols + j];
    }
    return 0;
}

/* ---- decoder path ---------------------------------------------------------------------- */

/* LevelScale tables of the six lists (4x4) and of the six 8x8 matrices. */
typedef struct Scales {
    VIDK_ALIGN(16) int16_t ls4[6][6][16];
    VIDK_ALIGN(16) int16_t ls8[6][6][64];
} Scales;

static Scales *scales_new(const VidkH264Scaling *s) {
    Scales *t = vidk_malloc_aligned(64, sizeof(*t));
    if (!t) return NULL;
    for (int l = 0; l < 6; l++) {
        vidk_h264_level_scale4(t->ls4[l], s->m4[l]);
        vidk_h264_level_scale8(t->ls8[l], s->m8[l]);
    }
    return t;
}

static int picture_ok(const VidkPicture *pic, int w, int h, VidkChroma chroma) {
    if (!pic || pic->bitdepth != 8 || pic->w != w || pic->h != h || pic->chroma != chroma)
        return 0;
    for (int p = 0; p < n_planes(chroma); p++)
        if (!pic->data[p]) return 0;
    return 1;
}

typedef struct InvJob {
    const VidkH264DSP *dsp;
    const VidkH264Batch *b;
    const Scales *sc;
    int32_t *dcv;
    uint8_t *data[3];
    ptrdiff_t stride[3];
    uint32_t per_job;
    int which; /* 0: 4x4 list, 1: 8x8 list, 2: DC groups */
} InvJob;

static void inv_job(void *arg, int job, int thread) {
    (void)thread;
    const InvJob *j = arg;
    const VidkH264Batch *b = j->b;
    if (j->which == 2) {
        const VidkH264DcList *d = &b->dc;
        const uint32_t g0 = (uint32_t)job * j->per_job;
        const uint32_t g1 = g0 + j->per_job < d->count ? g0 + j->per_job : d->count;
        for (uint32_t g = g0; g < g1; g++) {
            const int l = list_index(d->plane[g], d->flags[g] & VIDK_H264_BLK_INTRA);
            j->dsp->idct_dc[d->type[g]](j->dcv + (size_t)g * 16, d->coef + (size_t)g * 16,
                                        b->scaling.m4[l][0], d->qp[g]);
        }
        return;
    }
    const int s = j->which, nv = s ? 64 : 16;
    const VidkH264BlockList *L = &b->list[s];
    const uint32_t i0 = (uint32_t)job * j->per_job;
    const uint32_t i1 = i0 + j->per_job < L->count ? i0 + j->per_job : L->count;
    const vidk_h264_dequant_idct_add_fn fn = j->dsp->dequant_idct_add[s];
    for (uint32_t i = i0; i < i1; i++) {
        const int p = L->plane[i], qp = L->qp[i];
        const int l = list_index(p, L->flags[i] & VIDK_H264_BLK_INTRA);
        const int16_t *ls = s ? j->sc->ls8[l][qp % 6] : j->sc->ls4[l][qp % 6];
        const int32_t *dc = (L->flags[i] & VIDK_H264_BLK_DC) ? j->dcv + L->dc_index[i] : NULL;
        uint8_t *dst = j->data[p] + (ptrdiff_t)L->y[i] * j->stride[p] + L->x[i];
        fn(dst, j->stride[p], L->coef + (size_t)i * nv, ls, qp, dc);
    }
}

/* serial: run in list order on the caller's thread (overlapping blocks). */
static void run_chunks(VidkContext *ctx, int serial, InvJob *j, uint32_t count,
                       uint32_t chunk) {
    if (!count) return;
    const int threads = serial ? 1 : ctx->n_threads;
    /* Enough jobs to balance, each large enough to amortise the hand-off. */
    uint32_t per = (count + (uint32_t)threads * 4 - 1) / ((uint32_t)threads * 4);
    if (per < chunk) per = chunk;
    j->per_job = per;
    (serial ? vidk_run_serial : ctx->ops.run)(ctx, (int)((count + per - 1) / per), inv_job, j);
}

/* Do two blocks of the batch cover a common sample? vidk_h264_batch_build never makes
 * such a batch, but a hand-made one may; its blocks are then applied in list order (4x4
 * list first), as the serial backends do, instead of racing. 1: overlap, 0: none,
 * negative: out of memory. */
static int blocks_overlap(const VidkH264Batch *b) {
    int overlap = 0;
    for (int p = 0; p < n_planes(b->chroma) && !overlap; p++) {
        int pw, ph;
        plane_dims(b->w, b->h, b->chroma, p, &pw, &ph);
        const int cw = pw / 4;
        uint8_t *cells = calloc((size_t)cw * (size_t)(ph / 4), 1);
        if (!cells) return VIDK_ERR(ENOMEM);
        for (int s = 0; s < VIDK_H264_TX_COUNT && !overlap; s++) {
            const VidkH264BlockList *l = &b->list[s];
            const int n = s ? 2 : 1; /* cells per side */
            for (uint32_t i = 0; i < l->count && !overlap; i++) {
                if (l->plane[i] != p) continue;
                const int cx = l->x[i] / 4, cy = l->y[i] / 4;
                for (int y = 0; y < n; y++)
                    for (int x = 0; x < n; x++)
                        overlap |= cells[(size_t)(cy + y) * cw + cx + x]++;
            }
        }
        free(cells);
    }
    return overlap;
}

int vidk_h264_batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic) {
    if (!ctx || !b || !batch_ok(b) || !picture_ok(pic, b->w, b->h, b->chroma)) {
        if (ctx) vidk_log(ctx, VIDK_LOG_ERROR, "h264 batch_inverse: invalid batch or picture");
        return VIDK_ERR(EINVAL);
    }
    return ctx->ops.h264.batch_inverse(ctx, b, pic);
}

int vidk_h264_batch_inverse_cpu(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic) {
    Scales *sc = scales_new(&b->scaling);
    int32_t *dcv = NULL;
    if (!sc) return VIDK_ERR(ENOMEM);
    if (b->dc.count) {
        size_t bytes;
        if (!vidk_mul_size(b->dc.count, 16 * sizeof(int32_t), &bytes) ||
            !(dcv = vidk_malloc_aligned(64, bytes))) {
            vidk_free_aligned(sc);
            return VIDK_ERR(ENOMEM);
        }
    }
    InvJob j = {.dsp = &ctx->h264, .b = b, .sc = sc, .dcv = dcv};
    for (int p = 0; p < n_planes(b->chroma); p++) {
        j.data[p] = pic->data[p];
        j.stride[p] = pic->stride[p];
    }
    const int ov = ctx->n_threads > 1 ? blocks_overlap(b) : 0;
    if (ov < 0) {
        vidk_free_aligned(dcv);
        vidk_free_aligned(sc);
        return ov;
    }
    j.which = 2;
    run_chunks(ctx, 0, &j, b->dc.count, 256);
    j.which = 0;
    run_chunks(ctx, ov, &j, b->list[0].count, 1024);
    j.which = 1;
    run_chunks(ctx, ov, &j, b->list[1].count, 256);
    vidk_free_aligned(dcv);
    vidk_free_aligned(sc);
    return 0;
}

/* Dense path: one job per macroblock row, zero blocks skipped by the nnz test. */
typedef struct DenseJob {
    const VidkH264DSP *dsp;
    const VidkH264CoefFrame *fr;
    const Scales *sc;
    uint8_t *data[3];
    ptrdiff_t stride[3];
} DenseJob;

static void dense_row(void *arg, int my, int thread) {
    (void)thread;
    const DenseJob *j = arg;
    const VidkH264CoefFrame *fr = j->fr;
    const VidkH264DSP *dsp = j->dsp;
    VIDK_ALIGN(16) int16_t c[64];
    VIDK_ALIGN(16) int16_t lv[16];
    VIDK_ALIGN(16) int32_t dcv[16];
    for (int p = 0; p < n_planes(fr->chroma); p++) {
        int mw, mh, cols, rows, type;
        mb_dims(fr->chroma, p, &mw, &mh);
        dc_shape(fr->chroma, p, &cols, &rows, &type);
        const int pw = fr->plane_w[p];
        const ptrdiff_t cstride = (ptrdiff_t)pw * 2;
        for (int mx = 0; mx < fr->mb_w; mx++) {
            const VidkH264MbInfo *mb = &fr->mb[my * fr->mb_w + mx];
            const int qp = mb->qp[p], x0 = mx * mw, y0 = my * mh;
            const int l = list_index(p, mb->flags & VIDK_H264_MB_INTRA);
            const int16_t *base = fr->coef[p] + (size_t)y0 * pw + x0;
            uint8_t *pix = j->data[p] + (ptrdiff_t)y0 * j->stride[p] + x0;
            if (!p && (mb->flags & VIDK_H264_MB_8x8)) {
                for (int k = 0; k < 4; k++) {
                    const int bx = (k & 1) * 8, by = (k >> 1) * 8;
                    const int16_t *src = base + (size_t)by * pw + bx;
                    if (!dsp->nnz[1](src, cstride)) continue;
                    gather(c, src, pw, 8);
                    dsp->dequant_idct_add[1](pix + (ptrdiff_t)by * j->stride[p] + bx,
                                             j->stride[p], c, j->sc->ls8[l][qp % 6], qp, NULL);
                }
                continue;
            }
            const int has_dc = p || (mb->flags & VIDK_H264_MB_I16x16);
            const int any = has_dc && dc_gather(lv, base, pw, cols, rows);
            if (any) dsp->idct_dc[type](dcv, lv, fr->scaling.m4[l][0], qp);
            for (int i = 0; i < mh / 4; i++)
                for (int jj = 0; jj < mw / 4; jj++) {
                    const int16_t *src = base + (size_t)(4 * i) * pw + 4 * jj;
                    int nz = dsp->nnz[0](src, cstride);
                    if (has_dc) nz -= src[0] != 0;
                    if (!nz && !any) continue;
                    gather(c, src, pw, 4);
                    if (has_dc) c[0] = 0;
                    dsp->dequant_idct_add[0](pix + (ptrdiff_t)(4 * i) * j->stride[p] + 4 * jj,
                                             j->stride[p], c, j->sc->ls4[l][qp % 6], qp,
                                             any ? &dcv[i * cols + jj] : NULL);
                }
        }
    }
}

int vidk_h264_frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr, VidkPicture *pic) {
    if (!ctx || vidk_h264_coef_frame_validate(fr) < 0 ||
        !picture_ok(pic, fr ? fr->w : 0, fr ? fr->h : 0, fr ? fr->chroma : VIDK_CHROMA_400))
        return VIDK_ERR(EINVAL);
    return ctx->ops.h264.frame_inverse(ctx, fr, pic);
}

int vidk_h264_frame_inverse_cpu(VidkContext *ctx, const VidkH264CoefFrame *fr,
                                VidkPicture *pic) {
    Scales *sc = scales_new(&fr->scaling);
    if (!sc) return VIDK_ERR(ENOMEM);
    DenseJob j = {.dsp = &ctx->h264, .fr = fr, .sc = sc};
    for (int p = 0; p < n_planes(fr->chroma); p++) {
        j.data[p] = pic->data[p];
        j.stride[p] = pic->stride[p];
    }
    ctx->ops.run(ctx, fr->mb_h, dense_row, &j);
    vidk_free_aligned(sc);
    return 0;
}

/* ---- encoder path ---------------------------------------------------------------------- */

typedef struct Factors {
    VIDK_ALIGN(16) int32_t mf4[6][6][16];
    VIDK_ALIGN(16) int32_t mf8[6][6][64];
} Factors;

typedef struct FwdJob {
    const VidkH264DSP *dsp;
    VidkH264CoefFrame *fr;
    const Factors *fa;
    const uint8_t *src[3], *pred[3];
    ptrdiff_t ss[3], ps[3];
    uint64_t *nnz; /* per macroblock row */
} FwdJob;

/* Quantise the DC matrix (16 / 4 / 8 values) with the (0, 0) factor of list l. */
static int quant_dc(const VidkH264DSP *dsp, int16_t *lv, const int32_t *wdc, int type,
                    const VidkH264Scaling *s, int l, int qp, int intra) {
    VIDK_ALIGN(16) int32_t y[16], mf[16];
    dsp->fdct_dc[type](y, wdc);
    const int n = type == VIDK_H264_DC_LUMA ? 16 : type == VIDK_H264_DC_CHROMA ? 4 : 8;
    for (int k = n; k < 16; k++)
        y[k] = 0;
    const int qpdc = type == VIDK_H264_DC_CHROMA422 ? qp + 3 : qp;
    const int w00 = s->m4[l][0];
    const int32_t mf00 = (vidk_h264_mf4[qpdc % 6][0] * 16 + w00 / 2) / w00;
    for (int k = 0; k < 16; k++)
        mf[k] = mf00;
    const int qbits = (type == VIDK_H264_DC_LUMA ? 17 : 16) + qpdc / 6;
    return dsp->quant[0](lv, y, mf, qbits, vidk_h264_deadzone(qbits, intra));
}

static void fwd_row(void *arg, int my, int thread) {
    (void)thread;
    const FwdJob *j = arg;
    VidkH264CoefFrame *fr = j->fr;
    const VidkH264DSP *dsp = j->dsp;
    VIDK_ALIGN(16) int32_t w[16][16];
    VIDK_ALIGN(16) int32_t w8[64], wdc[16], mf_ac[16];
    VIDK_ALIGN(16) int16_t lev[64], dcl[16];
    uint64_t nz = 0;
    for (int p = 0; p < n_planes(fr->chroma); p++) {
        int mw, mh, cols, rows, type;
        mb_dims(fr->chroma, p, &mw, &mh);
        dc_shape(fr->chroma, p, &cols, &rows, &type);
        const int pw = fr->plane_w[p];
        for (int mx = 0; mx < fr->mb_w; mx++) {
            const VidkH264MbInfo *mb = &fr->mb[my * fr->mb_w + mx];
            const int qp = mb->qp[p], x0 = mx * mw, y0 = my * mh, m = qp % 6;
            const int intra = !!(mb->flags & VIDK_H264_MB_INTRA);
            const int l = list_index(p, intra);
            int16_t *out = fr->coef[p] + (size_t)y0 * pw + x0;
            const uint8_t *s0 = j->src[p] + (ptrdiff_t)y0 * j->ss[p] + x0;
            const uint8_t *p0 = j->pred[p] + (ptrdiff_t)y0 * j->ps[p] + x0;
            if (!p && (mb->flags & VIDK_H264_MB_8x8)) {
                const int qbits = 16 + qp / 6;
                const int32_t f = vidk_h264_deadzone(qbits, intra);
                for (int k = 0; k < 4; k++) {
                    const int bx = (k & 1) * 8, by = (k >> 1) * 8;
                    dsp->sub_fdct[1](w8, s0 + (ptrdiff_t)by * j->ss[p] + bx, j->ss[p],
                                     p0 + (ptrdiff_t)by * j->ps[p] + bx, j->ps[p]);
                    nz += (uint64_t)dsp->quant[1](lev, w8, j->fa->mf8[l][m], qbits, f);
                    scatter(out + (size_t)by * pw + bx, pw, lev, 8);
                }
                continue;
            }
            const int has_dc = p || (mb->flags & VIDK_H264_MB_I16x16);
            const int qbits = 15 + qp / 6;
            const int32_t f = vidk_h264_deadzone(qbits, intra);
            const int32_t *mf = j->fa->mf4[l][m];
            if (has_dc) {
                memcpy(mf_ac, mf, sizeof(mf_ac));
                mf_ac[0] = 0; /* element 0 is coded through the DC transform */
                mf = mf_ac;
            }
            const int nb = (mw / 4) * (mh / 4);
            for (int bi = 0; bi < nb; bi++) {
                const int i = bi / (mw / 4), jj = bi % (mw / 4);
                dsp->sub_fdct[0](w[bi], s0 + (ptrdiff_t)(4 * i) * j->ss[p] + 4 * jj, j->ss[p],
                                 p0 + (ptrdiff_t)(4 * i) * j->ps[p] + 4 * jj, j->ps[p]);
                nz += (uint64_t)dsp->quant[0](lev, w[bi], mf, qbits, f);
                scatter(out + (size_t)(4 * i) * pw + 4 * jj, pw, lev, 4);
            }
            if (has_dc) {
                memset(wdc, 0, sizeof(wdc));
                for (int i = 0; i < rows; i++)
                    for (int jj = 0; jj < cols; jj++)
                        wdc[i * cols + jj] = w[i * (mw / 4) + jj][0];
                nz += (uint64_t)quant_dc(dsp, dcl, wdc, type, &fr->scaling, l, qp, intra);
                for (int i = 0; i < rows; i++)
                    for (int jj = 0; jj < cols; jj++)
                        out[(size_t)(4 * i) * pw + 4 * jj] = dcl[i * cols + jj];
            }
        }
    }
    j->nnz[my] = nz;
}

int vidk_h264_batch_forward(VidkContext *ctx, const VidkPicture *src, const VidkPicture *pred,
                            VidkH264CoefFrame *fr, VidkH264Batch *b) {
    if (!ctx || vidk_h264_coef_frame_validate(fr) < 0 ||
        !picture_ok(src, fr->w, fr->h, fr->chroma) ||
        !picture_ok(pred, fr->w, fr->h, fr->chroma))
        return VIDK_ERR(EINVAL);
    return ctx->ops.h264.batch_forward(ctx, src, pred, fr, b);
}

int vidk_h264_batch_forward_cpu(VidkContext *ctx, const VidkPicture *src,
                                const VidkPicture *pred, VidkH264CoefFrame *fr,
                                VidkH264Batch *b) {
    Factors *fa = vidk_malloc_aligned(64, sizeof(*fa));
    uint64_t *nnz = calloc((size_t)fr->mb_h, sizeof(*nnz));
    if (!fa || !nnz) {
        vidk_free_aligned(fa);
        free(nnz);
        return VIDK_ERR(ENOMEM);
    }
    for (int l = 0; l < 6; l++) {
        vidk_h264_quant_mf4(fa->mf4[l], fr->scaling.m4[l]);
        vidk_h264_quant_mf8(fa->mf8[l], fr->scaling.m8[l]);
    }
    FwdJob j = {.dsp = &ctx->h264, .fr = fr, .fa = fa, .nnz = nnz};
    for (int p = 0; p < n_planes(fr->chroma); p++) {
        j.src[p] = src->data[p];
        j.ss[p] = src->stride[p];
        j.pred[p] = pred->data[p];
        j.ps[p] = pred->stride[p];
    }
    ctx->ops.run(ctx, fr->mb_h, fwd_row, &j);
    uint64_t total = 0;
    for (int i = 0; i < fr->mb_h; i++)
        total += nnz[i];
    vidk_free_aligned(fa);
    free(nnz);
    if (b) {
        int err = vidk_h264_batch_build(ctx, b, fr);
        if (err < 0) return err;
    }
    return total > INT32_MAX ? INT32_MAX : (int)total;
}

/* ---- sparse packing and sizes ----------------------------------------------------------- */

void vidk_h264_sparse_free(VidkH264Sparse *sp) {
    if (!sp) return;
    free(sp->mask4);
    free(sp->mask8);
    free(sp->mask_dc);
    for (int c = 0; c < 3; c++)
        free(sp->offset[c]);
    vidk_free_aligned(sp->values);
    memset(sp, 0, sizeof(*sp));
}

static uint32_t class_count(const VidkH264Batch *b, int c) {
    return c < 2 ? b->list[c].count : b->dc.count;
}

static const int16_t *class_coef(const VidkH264Batch *b, int c) {
    return c < 2 ? b->list[c].coef : b->dc.coef;
}

/* Non-zero levels of the three classes (EINVAL: a class without its levels). */
static int count_nonzero(const VidkH264Batch *b, uint64_t *total) {
    *total = 0;
    for (int c = 0; c < 3; c++) {
        const uint32_t n = class_count(b, c);
        const int16_t *coef = class_coef(b, c);
        if (n && !coef) return VIDK_ERR(EINVAL);
        for (size_t k = 0; k < (size_t)n * (c == 1 ? 64 : 16); k++)
            *total += coef[k] != 0;
    }
    return 0;
}

int vidk_h264_sparse_pack(VidkH264Sparse *sp, const VidkH264Batch *b) {
    if (!sp || !b) return VIDK_ERR(EINVAL);
    vidk_h264_sparse_free(sp);
    uint64_t total;
    if (count_nonzero(b, &total) < 0) return VIDK_ERR(EINVAL);
    if (total > UINT32_MAX - 64) return VIDK_ERR(EOVERFLOW);
    sp->mask4 = malloc(((size_t)b->list[0].count + 1) * sizeof(uint16_t));
    sp->mask8 = malloc(((size_t)b->list[1].count + 1) * sizeof(uint64_t));
    sp->mask_dc = malloc(((size_t)b->dc.count + 1) * sizeof(uint16_t));
    for (int c = 0; c < 3; c++)
        sp->offset[c] = malloc(((size_t)class_count(b, c) + 1) * 4);
    sp->values = vidk_malloc_aligned(64, ((size_t)total + 32) * sizeof(int16_t));
    if (!sp->mask4 || !sp->mask8 || !sp->mask_dc || !sp->offset[0] || !sp->offset[1] ||
        !sp->offset[2] || !sp->values) {
        vidk_h264_sparse_free(sp);
        return VIDK_ERR(ENOMEM);
    }
    uint32_t v = 0;
    for (int c = 0; c < 3; c++) {
        const uint32_t n = class_count(b, c);
        const int nv = c == 1 ? 64 : 16;
        const int16_t *coef = class_coef(b, c);
        sp->count[c] = n;
        for (uint32_t i = 0; i < n; i++) {
            const int16_t *blk = coef + (size_t)i * nv;
            uint64_t mask = 0;
            sp->offset[c][i] = v;
            for (int k = 0; k < nv; k++)
                if (blk[k]) {
                    mask |= (uint64_t)1 << k;
                    sp->values[v++] = blk[k];
                }
            if (c == 0)
                sp->mask4[i] = (uint16_t)mask;
            else if (c == 1)
                sp->mask8[i] = mask;
            else
                sp->mask_dc[i] = (uint16_t)mask;
        }
        sp->offset[c][n] = v;
    }
    sp->n_values = v;
    return 0;
}

static int popcount64(uint64_t m) {
    int n = 0;
    for (; m; m &= m - 1)
        n++;
    return n;
}

int vidk_h264_sparse_unpack(const VidkH264Sparse *sp, VidkH264Batch *b) {
    if (!sp || !b) return VIDK_ERR(EINVAL);
    for (int c = 0; c < 3; c++)
        if (sp->count[c] != class_count(b, c) || !sp->offset[c]) return VIDK_ERR(EINVAL);
    if ((sp->count[0] && !sp->mask4) || (sp->count[1] && !sp->mask8) ||
        (sp->count[2] && !sp->mask_dc) || (sp->n_values && !sp->values))
        return VIDK_ERR(EINVAL);
    /* Check every mask against its offsets before writing anything. */
    uint32_t expect = 0;
    for (int c = 0; c < 3; c++)
        for (uint32_t i = 0; i <= sp->count[c]; i++) {
            if (sp->offset[c][i] != expect) return VIDK_ERR(EINVAL);
            if (i == sp->count[c]) break;
            const uint64_t m = c == 0 ? sp->mask4[i] : c == 1 ? sp->mask8[i] : sp->mask_dc[i];
            expect += (uint32_t)popcount64(m);
            if (expect > sp->n_values) return VIDK_ERR(EINVAL);
        }
    if (expect != sp->n_values) return VIDK_ERR(EINVAL);
    for (int c = 0; c < 3; c++) {
        const int nv = c == 1 ? 64 : 16;
        int16_t *coef = c < 2 ? b->list[c].coef : b->dc.coef;
        for (uint32_t i = 0; i < sp->count[c]; i++) {
            const uint64_t m = c == 0 ? sp->mask4[i] : c == 1 ? sp->mask8[i] : sp->mask_dc[i];
            const int16_t *v = sp->values + sp->offset[c][i];
            int16_t *blk = coef + (size_t)i * nv;
            for (int k = 0; k < nv; k++)
                blk[k] = (m >> k & 1) ? *v++ : 0;
        }
    }
    return 0;
}

int vidk_h264_bytes(const VidkH264CoefFrame *fr, const VidkH264Batch *b, VidkH264Bytes *out) {
    if (!out || !b || vidk_h264_coef_frame_validate(fr) < 0) return VIDK_ERR(EINVAL);
    if (b->w != fr->w || b->h != fr->h || b->chroma != fr->chroma) return VIDK_ERR(EINVAL);
    memset(out, 0, sizeof(*out));
    const size_t mbs = (size_t)fr->mb_w * fr->mb_h;
    out->dense = mbs * sizeof(VidkH264MbInfo);
    for (int p = 0; p < n_planes(fr->chroma); p++)
        out->dense += (size_t)fr->plane_w[p] * fr->plane_h[p] * 2;
    /* All blocks of the dense frame per size class (4x4 includes chroma). */
    size_t n8 = 0;
    for (size_t i = 0; i < mbs; i++)
        n8 += (fr->mb[i].flags & VIDK_H264_MB_8x8) ? 4 : 0;
    out->blocks_total[1] = n8;
    out->blocks_total[0] = mbs * 16 - n8 * 4;
    if (fr->chroma != VIDK_CHROMA_400)
        out->blocks_total[0] += mbs * (fr->chroma == VIDK_CHROMA_422 ? 16 : 8);
    uint64_t nz;
    if (count_nonzero(b, &nz) < 0) return VIDK_ERR(EINVAL);
    out->blocks[0] = b->list[0].count;
    out->blocks[1] = b->list[1].count;
    out->dc_groups = b->dc.count;
    out->nonzero = nz;
    const size_t meta_blk = 11, meta_dc = 7;
    const size_t meta = (out->blocks[0] + out->blocks[1]) * meta_blk + out->dc_groups * meta_dc;
    out->compacted = meta + out->blocks[0] * 32 + out->blocks[1] * 128 + out->dc_groups * 32;
    out->sparse = meta + out->blocks[0] * (2 + 4) + out->blocks[1] * (8 + 4) +
                  out->dc_groups * (2 + 4) + nz * 2;
    return 0;
}
