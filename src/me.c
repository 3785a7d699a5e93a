/* Portable C of the me family, the layer under me_search.c: vector bits and grids, the
 * reference full search (vidk_me_search_ref: the c backend's table entry, ground truth for
 * every other backend; block by block on ctx->ops.run) and the C version of the
 * search_quad DSP function. */
#include <stdlib.h>

#include "internal.h"

/* me.h: a vector is one aligned 32-bit word (the layouts of the files and maps rely on 4
 * bytes). */
_Static_assert(sizeof(VidkMv) == 4 && _Alignof(VidkMv) == 4, "VidkMv");

unsigned vidk_me_mv_bits(int v) {
    /* se(v): codeNum 2v - 1 for v > 0, -2v otherwise; ue length 2 * floor(log2(codeNum
     * + 1)) + 1 (H.264 9.1). 64-bit so that every int is exact. */
    const uint64_t code = v > 0 ? 2 * (uint64_t)v - 1 : 2 * (uint64_t)(-(int64_t)v);
    unsigned lg = 0;
    for (uint64_t t = code + 1; t > 1; t >>= 1)
        lg++;
    return 2 * lg + 1;
}

void vidk_me_grid(int w, int h, VidkBlockSize bs, int *gw, int *gh) {
    const int mb_w = (w + 15) / 16, mb_h = (h + 15) / 16;
    if (bs == VIDK_BLOCK_32x32 || bs == VIDK_BLOCK_64x64) {
        const int s = vidk_block_width(bs);
        *gw = (w + s - 1) / s;
        *gh = (h + s - 1) / s;
    } else {
        *gw = mb_w * 16 / vidk_block_width(bs);
        *gh = mb_h * 16 / vidk_block_height(bs);
    }
}

/* Rectangle (x4, y4, w4, h4) of each of the 41 partitions in units of 4x4 blocks, in
 * the VIDK_ME_PART_* order: shapes 4x4 .. 16x16, raster order within each shape. */
typedef struct MePart {
    uint8_t bs, x4, y4, w4, h4;
} MePart;

#define P4(y)                                                                                  \
    {0, 0, y, 1, 1}, {0, 1, y, 1, 1}, {0, 2, y, 1, 1}, {                                       \
        0, 3, y, 1, 1                                                                          \
    }
static const MePart parts[VIDK_ME_NPART] = {
    P4(0),           P4(1),           P4(2),           P4(3),           /* 4x4 */
    {1, 0, 0, 2, 1}, {1, 2, 0, 2, 1}, {1, 0, 1, 2, 1}, {1, 2, 1, 2, 1}, /* 8x4 */
    {1, 0, 2, 2, 1}, {1, 2, 2, 2, 1}, {1, 0, 3, 2, 1}, {1, 2, 3, 2, 1},
    {2, 0, 0, 1, 2}, {2, 1, 0, 1, 2}, {2, 2, 0, 1, 2}, {2, 3, 0, 1, 2}, /* 4x8 */
    {2, 0, 2, 1, 2}, {2, 1, 2, 1, 2}, {2, 2, 2, 1, 2}, {2, 3, 2, 1, 2},
    {3, 0, 0, 2, 2}, {3, 2, 0, 2, 2}, {3, 0, 2, 2, 2}, {3, 2, 2, 2, 2}, /* 8x8 */
    {4, 0, 0, 4, 2}, {4, 0, 2, 4, 2},                                   /* 16x8 */
    {5, 0, 0, 2, 4}, {5, 2, 0, 2, 4},                                   /* 8x16 */
    {6, 0, 0, 4, 4},                                                    /* 16x16 */
};
#undef P4

/* SAD of each of the 41 partitions (VIDK_ME_PART_* order) from the 16 4x4 SADs (raster
 * order), built bottom-up as the SIMD versions do. */
static void sum_parts_tree(const unsigned s4[16], unsigned sp[VIDK_ME_NPART]) {
    unsigned *p84 = sp + VIDK_ME_PART_8x4, *p48 = sp + VIDK_ME_PART_4x8;
    unsigned *p88 = sp + VIDK_ME_PART_8x8;
    for (int i = 0; i < 16; i++)
        sp[VIDK_ME_PART_4x4 + i] = s4[i];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 2; x++)
            p84[y * 2 + x] = s4[y * 4 + 2 * x] + s4[y * 4 + 2 * x + 1];
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 4; x++)
            p48[y * 4 + x] = s4[y * 8 + x] + s4[y * 8 + 4 + x];
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 2; x++)
            p88[y * 2 + x] = p84[y * 4 + x] + p84[y * 4 + 2 + x];
    sp[VIDK_ME_PART_16x8] = p88[0] + p88[1];
    sp[VIDK_ME_PART_16x8 + 1] = p88[2] + p88[3];
    sp[VIDK_ME_PART_8x16] = p88[0] + p88[2];
    sp[VIDK_ME_PART_8x16 + 1] = p88[1] + p88[3];
    sp[VIDK_ME_PART_16x16] = p88[0] + p88[1] + p88[2] + p88[3];
}

/* ------------------------------------------------------------------ reference */

/* Luma sample (x, y) with coordinates clamped into the picture: the standards'
 * reference padding, and the edge replication of partial current blocks. */
static inline uint16_t sample_clamped(const VidkPicture *p, int x, int y) {
    x = vidk_iclip(x, 0, p->w - 1);
    y = vidk_iclip(y, 0, p->h - 1);
    const uint8_t *row = (const uint8_t *)p->data[0] + (ptrdiff_t)y * p->stride[0];
    return p->bitdepth == 8 ? row[x] : ((const uint16_t *)row)[x];
}

typedef struct MeBest {
    uint32_t cost, sad, dist;
    int mx, my;
} MeBest;

/* Candidates arrive in raster order, so a strictly better (cost, |mvx| + |mvy|) pair
 * is the whole tie rule. */
static inline void keep_best(MeBest *b, uint32_t sad, uint32_t mvcost, int mx, int my) {
    const uint32_t cost = sad + mvcost;
    const uint32_t dist = (uint32_t)(abs(mx) + abs(my));
    if (cost < b->cost || (cost == b->cost && dist < b->dist))
        *b = (MeBest){cost, sad, dist, mx, my};
}

static inline VidkMeResult to_result(const MeBest *b) {
    return (VidkMeResult){{(int16_t)b->mx, (int16_t)b->my}, b->cost, b->sad};
}

size_t vidk_me_ref_scratch_size(int range, VidkBlockSize bs) {
    const size_t s = (size_t)vidk_block_width(bs), win = s + 2 * (size_t)range;
    return (s * s + win * win) * sizeof(uint16_t);
}

/* SAD of an S x S block: cur rows S apart, window rows ws apart. */
static inline uint32_t sad_block(const uint16_t *c, int cs, const uint16_t *w, ptrdiff_t ws,
                                 int bw, int bh) {
    uint32_t s = 0;
    for (int y = 0; y < bh; y++)
        for (int x = 0; x < bw; x++)
            s += (uint32_t)abs((int)c[y * cs + x] - (int)w[y * ws + x]);
    return s;
}

void vidk_me_ref_block(const VidkPicture *cur, const VidkPicture *ref, const VidkMeParams *p,
                       unsigned shapes, VidkBlockSize bs, int bx, int by, VidkMeField *out,
                       uint16_t *scratch) {
    const int S = vidk_block_width(bs); /* 16, 32 or 64 */
    const int x0 = bx * S, y0 = by * S, R = p->range, W = S + 2 * R;
    /* The current block and every reference sample any candidate can touch, with
     * clamped coordinates, widened to 16 bits (one code for every bit depth). */
    uint16_t *c = scratch, *win = scratch + S * S;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++)
            c[y * S + x] = sample_clamped(cur, x0 + x, y0 + y);
    for (int y = 0; y < W; y++)
        for (int x = 0; x < W; x++)
            win[(ptrdiff_t)y * W + x] = sample_clamped(ref, x0 - R + x, y0 - R + y);

    /* Predictor of the block's top-left macroblock (the cost is the SAD for lambda 0). */
    int px = 0, py = 0;
    if (p->lambda && p->pred) {
        const VidkMv pv = p->pred[(y0 / 16) * out->mb_w + x0 / 16];
        px = pv.x, py = pv.y;
    }
    MeBest best[VIDK_ME_NPART];
    for (int i = 0; i < VIDK_ME_NPART; i++)
        best[i] = (MeBest){UINT32_MAX, 0, 0, 0, 0};

    for (int my = -R; my <= R; my++) {
        for (int mx = -R; mx <= R; mx++) {
            const uint32_t mvcost = vidk_me_mv_cost(p->lambda, mx, my, px, py);
            const uint16_t *w = win + (ptrdiff_t)(my + R) * W + (mx + R);
            if (S > 16) {
                keep_best(&best[0], sad_block(c, S, w, W, S, S), mvcost, mx, my);
                continue;
            }
            /* 4x4 SADs, raster order, then every partition as the sum of its 4x4s. */
            unsigned s4[16] = {0}, sp[VIDK_ME_NPART];
            for (int y = 0; y < 16; y++)
                for (int x = 0; x < 16; x++)
                    s4[(y >> 2) * 4 + (x >> 2)] +=
                        (unsigned)abs((int)c[y * 16 + x] - (int)w[(ptrdiff_t)y * W + x]);
            sum_parts_tree(s4, sp);
            for (int i = 0; i < VIDK_ME_NPART; i++)
                if (shapes & VIDK_ME_SHAPE(parts[i].bs))
                    keep_best(&best[i], sp[i], mvcost, mx, my);
        }
    }

    if (S > 16) {
        out->res[bs][by * out->grid_w[bs] + bx] = to_result(&best[0]);
        return;
    }
    for (int i = 0; i < VIDK_ME_NPART; i++) {
        const VidkBlockSize pbs = (VidkBlockSize)parts[i].bs;
        if (!(shapes & VIDK_ME_SHAPE(pbs))) continue;
        const int gx = bx * (4 / parts[i].w4) + parts[i].x4 / parts[i].w4;
        const int gy = by * (4 / parts[i].h4) + parts[i].y4 / parts[i].h4;
        out->res[pbs][gy * out->grid_w[pbs] + gx] = to_result(&best[i]);
    }
}

/* ------------------------------------------------------------------ reference driver */

#define SHAPES_MB ((unsigned)VIDK_ME_SHAPES_H264)

typedef struct RefJob {
    const VidkPicture *cur, *ref;
    const VidkMeParams *p;
    VidkMeField *out;
    int rows_mb, rows_32; /* job ranges: MB rows, then 32x32 rows, then 64x64 rows */
    uint16_t **scratch;   /* per thread */
} RefJob;

static void ref_row(void *arg, int job, int thread) {
    const RefJob *j = arg;
    VidkBlockSize bs = VIDK_BLOCK_16x16;
    unsigned shapes = j->p->shapes & SHAPES_MB;
    if (job >= j->rows_mb + j->rows_32) {
        bs = VIDK_BLOCK_64x64, shapes = VIDK_ME_SHAPE(bs), job -= j->rows_mb + j->rows_32;
    } else if (job >= j->rows_mb) {
        bs = VIDK_BLOCK_32x32, shapes = VIDK_ME_SHAPE(bs), job -= j->rows_mb;
    }
    for (int bx = 0; bx < j->out->grid_w[bs]; bx++)
        vidk_me_ref_block(j->cur, j->ref, j->p, shapes, bs, bx, job, j->out,
                          j->scratch[thread]);
}

int vidk_me_search_ref(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                       const VidkMeParams *p, VidkMeField *out) {
    const int nt = ctx->n_threads;
    const VidkBlockSize big = p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_64x64)   ? VIDK_BLOCK_64x64
                              : p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_32x32) ? VIDK_BLOCK_32x32
                                                                            : VIDK_BLOCK_16x16;
    const size_t sz = vidk_me_ref_scratch_size(p->range, big);
    uint16_t **scratch = calloc((size_t)nt, sizeof(*scratch));
    int err = scratch ? 0 : VIDK_ERR(ENOMEM);
    for (int t = 0; !err && t < nt; t++)
        if (!(scratch[t] = vidk_malloc_aligned(64, sz))) err = VIDK_ERR(ENOMEM);
    if (!err) {
        RefJob j = {cur, ref, p, out, 0, 0, scratch};
        int rows_64 = 0;
        if (p->shapes & SHAPES_MB) j.rows_mb = out->mb_h;
        if (p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_32x32))
            j.rows_32 = out->grid_h[VIDK_BLOCK_32x32];
        if (p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_64x64))
            rows_64 = out->grid_h[VIDK_BLOCK_64x64];
        ctx->ops.run(ctx, j.rows_mb + j.rows_32 + rows_64, ref_row, &j);
    } else {
        vidk_log(ctx, VIDK_LOG_ERROR, "me_search: out of memory for %d x %zu bytes", nt, sz);
    }
    for (int t = 0; scratch && t < nt; t++)
        vidk_free_aligned(scratch[t]);
    free(scratch);
    return err;
}

/* ------------------------------------------------------------------ DSP: C version */

static decl_me_search_quad_fn(search_quad_c) {
    const MePart *pt = parts;
    const int nrows = 2 * range + 1;
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < nrows; i++) {
            const int my = vidk_me_row_my(i);
            for (int k = 0; k < 4; k++) {
                const int idx = vidk_me_qidx(j, k);
                const uint8_t *c = cur + 16 * k;
                const uint8_t *r = ref + my * ref_stride + 16 * k + j;
                unsigned s4[16] = {0}, sp[VIDK_ME_NPART];
                for (int y = 0; y < 16; y++)
                    for (int x = 0; x < 16; x++)
                        s4[(y >> 2) * 4 + (x >> 2)] +=
                            (unsigned)abs(c[y * cur_stride + x] - r[y * ref_stride + x]);
                sum_parts_tree(s4, sp);
                unsigned mvc = 0;
                if (colc) {
                    mvc = colc[idx] + rowc[(my + range) * 32 + 8 * k];
                    if (mvc > 65535) mvc = 65535;
                }
                for (int q = 0; q < VIDK_ME_NPART; q++) {
                    if (!(shapes & VIDK_ME_SHAPE(pt[q].bs))) continue;
                    unsigned cost = sp[q] + mvc;
                    if (cost > 65535) cost = 65535;
                    if (cost < best_cost[q * best_stride + idx]) {
                        best_cost[q * best_stride + idx] = (uint16_t)cost;
                        best_row[q * best_stride + idx] = (uint16_t)(my + range);
                    }
                }
                if (sad16) sad16[(ptrdiff_t)(my + range) * n * 4 + idx] = (uint16_t)sp[40];
            }
        }
    }
}

void vidk_me_dsp_init(VidkMeDSP *dsp, unsigned flags) {
    dsp->search_quad = search_quad_c;
#if VIDK_HAVE_SIMD
    vidk_me_dsp_init_x86(dsp, flags);
#else
    (void)flags;
#endif
}
