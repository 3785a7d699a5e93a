/* The public face of the me family (parameters, fields, argument checks, vidk_me_search ->
 * ctx->ops.me.search) and the fast 8-bit CPU driver of the simd and threads backends.
 *
 * Fast driver: units of four macroblocks side by side ("quads", 64 samples wide) and 16,
 * 32 or 64 rows high; per quad row a padded reference window is built (so the kernels
 * never clamp), the search_quad DSP function searches every candidate, and the per-column
 * minima are reduced here with the full tie rule. 32x32 and 64x64 blocks are summed from
 * the 16x16 SADs that search_quad writes. The units run on ctx->ops.run; every unit
 * writes only its own results, so the output does not depend on the thread count.
 * Samples of 9..16 bits and saturated costs take the reference (me.c), the layer below:
 * nothing in me.c calls back into this file. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void vidk_me_default_params(VidkMeParams *p) {
    if (!p) return;
    memset(p, 0, sizeof(*p));
    p->range = 16;
    p->shapes = VIDK_ME_SHAPE(VIDK_BLOCK_16x16);
    p->lambda = 0;
    p->pred = NULL;
}

void vidk_me_field_free(VidkMeField *f) {
    if (!f) return;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        free(f->res[bs]);
    memset(f, 0, sizeof(*f));
}

int vidk_me_field_alloc(VidkMeField *f, int w, int h, unsigned shapes) {
    if (!f) return VIDK_ERR(EINVAL);
    memset(f, 0, sizeof(*f));
    if (w < 1 || h < 1 || w > VIDK_MAX_PICTURE_SIDE || h > VIDK_MAX_PICTURE_SIDE || !shapes ||
        (shapes & ~(unsigned)VIDK_ME_SHAPES_ALL))
        return VIDK_ERR(EINVAL);
    f->w = w, f->h = h;
    f->mb_w = (w + 15) / 16, f->mb_h = (h + 15) / 16;
    f->shapes = shapes;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        vidk_me_grid(w, h, (VidkBlockSize)bs, &f->grid_w[bs], &f->grid_h[bs]);
        if (!(shapes & VIDK_ME_SHAPE(bs))) continue;
        f->res[bs] =
            calloc((size_t)f->grid_w[bs] * (size_t)f->grid_h[bs], sizeof(VidkMeResult));
        if (!f->res[bs]) {
            vidk_me_field_free(f);
            return VIDK_ERR(ENOMEM);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ argument checks */

static int bad_picture(const VidkPicture *p) {
    if (p->w < 1 || p->h < 1 || p->w > VIDK_MAX_PICTURE_SIDE || p->h > VIDK_MAX_PICTURE_SIDE)
        return 1;
    if (p->bitdepth < 8 || p->bitdepth > 16 || !p->data[0]) return 1;
    const ptrdiff_t row = (ptrdiff_t)p->w * (p->bitdepth > 8 ? 2 : 1);
    const ptrdiff_t s = p->stride[0];
    return s < row && -s < row;
}

static int check_args(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                      const VidkMeParams *p, const VidkMeField *out) {
#define FAIL(...)                                                                              \
    do {                                                                                       \
        vidk_log(ctx, VIDK_LOG_ERROR, "me_search: " __VA_ARGS__);                              \
        return VIDK_ERR(EINVAL);                                                               \
    } while (0)
    if (!cur || !ref || !p || !out) FAIL("NULL picture, parameters or field");
    if (bad_picture(cur) || bad_picture(ref))
        FAIL("bad picture (size 1..%d, bit depth 8..16, luma data and stride)",
             VIDK_MAX_PICTURE_SIDE);
    if (cur->w != ref->w || cur->h != ref->h)
        FAIL("current %dx%d and reference %dx%d differ in size", cur->w, cur->h, ref->w,
             ref->h);
    if (cur->bitdepth != ref->bitdepth)
        FAIL("current (%d bits) and reference (%d bits) differ in bit depth", cur->bitdepth,
             ref->bitdepth);
    if (p->range < 0 || p->range > VIDK_ME_MAX_RANGE)
        FAIL("range %d outside 0..%d", p->range, VIDK_ME_MAX_RANGE);
    if (p->lambda > VIDK_ME_MAX_LAMBDA)
        FAIL("lambda %u above %d", p->lambda, VIDK_ME_MAX_LAMBDA);
    if (!p->shapes || (p->shapes & ~(unsigned)VIDK_ME_SHAPES_ALL))
        FAIL("shapes 0x%x: not 0, only bits of VIDK_ME_SHAPES_ALL", p->shapes);
    if (p->flags & ~(unsigned)VIDK_ME_REF_IS_PREV_CUR) FAIL("unknown flags 0x%x", p->flags);
    for (size_t i = 0; i < sizeof(p->reserved); i++)
        if (p->reserved[i]) FAIL("reserved bytes of the parameters are not zero");
    if (out->w != cur->w || out->h != cur->h || out->mb_w != (cur->w + 15) / 16 ||
        out->mb_h != (cur->h + 15) / 16)
        FAIL("field is for %dx%d, pictures are %dx%d", out->w, out->h, cur->w, cur->h);
    if ((p->shapes & out->shapes) != p->shapes)
        FAIL("field lacks requested shapes (has 0x%x, asked 0x%x)", out->shapes, p->shapes);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(p->shapes & VIDK_ME_SHAPE(bs))) continue;
        int gw, gh;
        vidk_me_grid(cur->w, cur->h, (VidkBlockSize)bs, &gw, &gh);
        if (!out->res[bs] || out->grid_w[bs] != gw || out->grid_h[bs] != gh)
            FAIL("field has no valid %s grid", vidk_block_name((VidkBlockSize)bs));
    }
    return 0;
#undef FAIL
}

int vidk_me_search(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                   const VidkMeParams *p, VidkMeField *out) {
    if (!ctx) return VIDK_ERR(EINVAL);
    int err = check_args(ctx, cur, ref, p, out);
    if (err < 0) return err;
    return ctx->ops.me.search(ctx, cur, ref, p, out);
}

/* ------------------------------------------------------------------ fast 8-bit driver */

typedef struct QuadScratch {
    uint8_t *cur;      /* 64 x 16, stride 64 */
    uint8_t *win;      /* (2R + 16) rows x ws */
    uint16_t *cost;    /* VIDK_ME_NPART x n4 */
    uint16_t *row;     /* VIDK_ME_NPART x n4 */
    uint16_t *colc;    /* n4 */
    uint16_t *rowc;    /* (2R + 1) x 32 */
    uint16_t *sad16;   /* S/16 planes of (2R + 1) x n4, when S > 16 */
    uint32_t *colbits; /* 2R + 1: lambda * bits of each mvx, for 32x32 and 64x64 */
    uint16_t *refscr;  /* reference scratch for the exact fallback */
    void *alloc;
} QuadScratch;

typedef struct QuadJob {
    const VidkContext *ctx;
    const VidkPicture *cur, *ref;
    const VidkMeParams *p;
    VidkMeField *out;
    int S;       /* unit height: 16, 32 or 64 */
    int units_x; /* quads across */
    int n, n4;   /* candidate columns (multiple of 8), n * 4 */
    ptrdiff_t ws;
    QuadScratch *scr; /* per thread */
} QuadJob;

static size_t align64(size_t v) {
    return (v + 63) & ~(size_t)63;
}

static int scratch_alloc(QuadScratch *s, const QuadJob *j) {
    const int R = j->p->range, nrows = 2 * R + 1;
    const size_t sz_cur = 64 * 16, sz_win = (size_t)(2 * R + 16) * (size_t)j->ws,
                 sz_best = (size_t)VIDK_ME_NPART * j->n4 * sizeof(uint16_t),
                 sz_colc = (size_t)j->n4 * sizeof(uint16_t),
                 sz_rowc = (size_t)nrows * 32 * sizeof(uint16_t),
                 sz_sad =
                     j->S > 16 ? (size_t)(j->S / 16) * nrows * j->n4 * sizeof(uint16_t) : 0,
                 sz_ref = vidk_me_ref_scratch_size(R, VIDK_BLOCK_16x16),
                 sz_bits = (size_t)nrows * sizeof(uint32_t);
    const size_t total = align64(sz_cur) + align64(sz_win) + 2 * align64(sz_best) +
                         align64(sz_colc) + align64(sz_rowc) + align64(sz_sad) +
                         align64(sz_ref) + align64(sz_bits);
    uint8_t *m = vidk_malloc_aligned(64, total);
    if (!m) return VIDK_ERR(ENOMEM);
    s->alloc = m;
    s->cur = m, m += align64(sz_cur);
    s->win = m, m += align64(sz_win);
    s->cost = (uint16_t *)m, m += align64(sz_best);
    s->row = (uint16_t *)m, m += align64(sz_best);
    s->colc = (uint16_t *)m, m += align64(sz_colc);
    s->rowc = (uint16_t *)m, m += align64(sz_rowc);
    s->sad16 = sz_sad ? (uint16_t *)m : NULL, m += align64(sz_sad);
    s->refscr = (uint16_t *)m, m += align64(sz_ref);
    s->colbits = (uint32_t *)m;
    return 0;
}

/* The reference window of the quad at (x0, y0): row r, column c hold the sample at
 * (x0 - R + c, y0 - R + r) with coordinates clamped into the picture. */
static void build_window(const QuadJob *j, QuadScratch *s, int x0, int y0) {
    const VidkPicture *ref = j->ref;
    const int R = j->p->range, w = ref->w;
    const int ws = (int)j->ws, xs = x0 - R;
    const int left = vidk_iclip(-xs, 0, ws);          /* columns left of the picture */
    const int mid_end = vidk_iclip(w - xs, left, ws); /* end of the columns inside */
    for (int r = 0; r < 2 * R + 16; r++) {
        uint8_t *d = s->win + (ptrdiff_t)r * ws;
        const int sy = vidk_iclip(y0 - R + r, 0, ref->h - 1);
        if (r > 0 && sy == vidk_iclip(y0 - R + r - 1, 0, ref->h - 1)) {
            memcpy(d, d - ws, (size_t)ws); /* a clamped row repeats the one above */
            continue;
        }
        const uint8_t *src = (const uint8_t *)ref->data[0] + (ptrdiff_t)sy * ref->stride[0];
        memset(d, src[0], (size_t)left);
        memcpy(d + left, src + xs + left, (size_t)(mid_end - left));
        memset(d + mid_end, src[w - 1], (size_t)(ws - mid_end));
    }
}

static void build_cur(const QuadJob *j, QuadScratch *s, int x0, int y0) {
    const VidkPicture *cur = j->cur;
    for (int y = 0; y < 16; y++) {
        const uint8_t *src = (const uint8_t *)cur->data[0] +
                             (ptrdiff_t)vidk_imin(y0 + y, cur->h - 1) * cur->stride[0];
        uint8_t *d = s->cur + y * 64;
        const int inside = vidk_iclip(cur->w - x0, 0, 64);
        memcpy(d, src + x0, (size_t)inside);
        memset(d + inside, src[cur->w - 1], (size_t)(64 - inside));
    }
}

static VidkMv pred_of(const QuadJob *j, int mbx, int mby) {
    if (!j->p->lambda || !j->p->pred || mbx >= j->out->mb_w || mby >= j->out->mb_h)
        return (VidkMv){0, 0};
    return j->p->pred[mby * j->out->mb_w + mbx];
}

static uint16_t sat16(uint32_t v) {
    return v > 65535 ? 65535 : (uint16_t)v;
}

/* Best candidate of partition q of each block of the quad from the per-column minima:
 * lowest cost, then smallest |mvx| + |mvy|, then raster order. Columns past 2R must hold
 * 65535. ok[k] = 0 when every column of block k is saturated (its true minimum may be
 * >= 65535: the caller recomputes exactly). */
static void reduce_columns(const QuadJob *j, const QuadScratch *s, int q, const VidkMv pred[4],
                           VidkMeResult res[4], int ok[4]) {
    const int R = j->p->range;
    const uint16_t *bc = s->cost + (ptrdiff_t)q * j->n4, *br = s->row + (ptrdiff_t)q * j->n4;
    /* Lowest cost per block first (a branch-free pass the compiler vectorises), then only
     * the columns at that cost go through the tie rule. */
    uint16_t m[32];
    for (int l = 0; l < 32; l++)
        m[l] = 65535;
    for (int ch = 0; ch < j->n / 8; ch++)
        for (int l = 0; l < 32; l++)
            m[l] = bc[ch * 32 + l] < m[l] ? bc[ch * 32 + l] : m[l];
    uint16_t mk[32]; /* each block's lowest cost, in all 8 lanes of the block */
    unsigned bdist[4];
    int bmx[4] = {0}, bmy[4] = {0};
    for (int k = 0; k < 4; k++) {
        unsigned v = 65535;
        for (int t = 0; t < 8; t++)
            v = m[k * 8 + t] < v ? m[k * 8 + t] : v;
        for (int t = 0; t < 8; t++)
            mk[k * 8 + t] = (uint16_t)v;
        ok[k] = v < 65535;
        bdist[k] = UINT32_MAX;
    }
    for (int ch = 0; ch < j->n / 8; ch++) {
        for (int k = 0; k < 4; k++) {
            if (!ok[k]) continue;
            /* Any of the block's 8 lanes at its lowest cost? Four 16-bit lanes per 64-bit
             * word: x ^ pattern has a zero lane exactly when one matches (the classic
             * has-zero test is exact for "any"). */
            const uint16_t *lane = bc + ch * 32 + k * 8;
            const uint64_t pat = 0x0001000100010001ull * mk[k * 8];
            uint64_t w0, w1;
            memcpy(&w0, lane, 8);
            memcpy(&w1, lane + 4, 8);
            w0 ^= pat, w1 ^= pat;
            const uint64_t lo = 0x0001000100010001ull, hi = 0x8000800080008000ull;
            if (!(((w0 - lo) & ~w0 & hi) | ((w1 - lo) & ~w1 & hi))) continue;
            for (int t = 0; t < 8; t++) {
                if (lane[t] != mk[k * 8]) continue;
                const int mx = ch * 8 + t - R, my = br[ch * 32 + k * 8 + t] - R;
                const unsigned dist = (unsigned)(abs(mx) + abs(my));
                /* Columns rise in mx, so equal (dist, my) keeps the earlier column. */
                if (dist < bdist[k] || (dist == bdist[k] && my < bmy[k]))
                    bdist[k] = dist, bmx[k] = mx, bmy[k] = my;
            }
        }
    }
    for (int k = 0; k < 4; k++) {
        if (!ok[k]) continue;
        const uint32_t mvc =
            vidk_me_mv_cost(j->p->lambda, bmx[k], bmy[k], pred[k].x, pred[k].y);
        res[k] = (VidkMeResult){{(int16_t)bmx[k], (int16_t)bmy[k]}, mk[k * 8], mk[k * 8] - mvc};
    }
}

/* 32x32 or 64x64 block from the 16x16 SAD planes: qr0/k0 first quad row / block, m
 * macroblocks across and down. Exact 32-bit costs, candidates in raster order. */
static VidkMeResult search_big(const QuadJob *j, const QuadScratch *s, int qr0, int k0, int m,
                               VidkMv pred) {
    const int R = j->p->range, nrows = 2 * R + 1;
    const unsigned lambda = j->p->lambda;
    const size_t plane = (size_t)nrows * j->n4;
    uint32_t *colbits = s->colbits;
    for (int c = 0; c < nrows; c++)
        colbits[c] = lambda ? lambda * vidk_me_mv_bits(c - R - pred.x) : 0;
    uint32_t bcost = UINT32_MAX, bsad = 0, bdist = 0;
    int bmx = 0, bmy = 0;
    for (int my = -R; my <= R; my++) {
        const uint32_t rc = lambda ? lambda * vidk_me_mv_bits(my - pred.y) : 0;
        for (int ch = 0; ch * 8 < nrows; ch++) {
            /* Eight columns at a time: the quad layout keeps them contiguous per block. */
            uint32_t sad[8] = {0};
            for (int qr = qr0; qr < qr0 + m; qr++) {
                const uint16_t *pl = s->sad16 + qr * plane + (size_t)(my + R) * j->n4 + ch * 32;
                for (int k = k0; k < k0 + m; k++)
                    for (int t = 0; t < 8; t++)
                        sad[t] += pl[k * 8 + t];
            }
            for (int t = 0; t < 8 && ch * 8 + t < nrows; t++) {
                const int c = ch * 8 + t, mx = c - R;
                const uint32_t cost = sad[t] + rc + colbits[c];
                if (cost > bcost) continue;
                const uint32_t dist = (uint32_t)(abs(mx) + abs(my));
                if (cost < bcost || dist < bdist)
                    bcost = cost, bsad = sad[t], bdist = dist, bmx = mx, bmy = my;
            }
        }
    }
    return (VidkMeResult){{(int16_t)bmx, (int16_t)bmy}, bcost, bsad};
}

/* First partition index of each H.264 shape (VIDK_ME_PART_*), and the end. */
static const int first_part[VIDK_BLOCK_16x16 + 2] = {0, 16, 24, 32, 36, 38, 40, 41};

static void quad_unit(void *arg, int job, int thread) {
    const QuadJob *j = arg;
    QuadScratch *s = &j->scr[thread];
    const VidkMeParams *p = j->p;
    VidkMeField *out = j->out;
    const int R = p->range, nrows = 2 * R + 1, n4 = j->n4;
    const int ux = job % j->units_x, uy = job / j->units_x;
    const unsigned mbshapes = p->shapes & (unsigned)VIDK_ME_SHAPES_H264;
    const size_t plane = (size_t)nrows * n4;

    for (int qr = 0; qr < j->S / 16; qr++) {
        const int mby = uy * (j->S / 16) + qr, x0 = ux * 64, y0 = mby * 16;
        /* A macroblock row below the picture is searched only when a 32x32 or 64x64
         * block (whose samples there are edge replicas) covers it. */
        const int needed = mby < out->mb_h ||
                           (p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_32x32) &&
                            mby / 2 < out->grid_h[VIDK_BLOCK_32x32]) ||
                           (p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_64x64) &&
                            mby / 4 < out->grid_h[VIDK_BLOCK_64x64]);
        if (!needed) continue;
        build_cur(j, s, x0, y0);
        build_window(j, s, x0, y0);
        VidkMv pred[4];
        for (int k = 0; k < 4; k++)
            pred[k] = pred_of(j, ux * 4 + k, mby);
        const uint16_t *colc = NULL, *rowc = NULL;
        if (p->lambda) {
            for (int c = 0; c < j->n; c++)
                for (int k = 0; k < 4; k++)
                    s->colc[vidk_me_qidx(c, k)] =
                        sat16(p->lambda * vidk_me_mv_bits(c - R - pred[k].x));
            for (int i = 0; i < nrows; i++)
                for (int k = 0; k < 4; k++) {
                    const uint16_t v = sat16(p->lambda * vidk_me_mv_bits(i - R - pred[k].y));
                    for (int t = 0; t < 8; t++)
                        s->rowc[i * 32 + 8 * k + t] = v;
                }
            colc = s->colc, rowc = s->rowc;
        }
        const int real = mby < out->mb_h;
        const unsigned sh = real ? mbshapes : 0;
        if (sh)
            for (size_t i = 0; i < (size_t)VIDK_ME_NPART * n4; i++)
                s->cost[i] = 65535;
        j->ctx->me.search_quad(s->cur, 64, s->win + (ptrdiff_t)R * j->ws, j->ws, R, j->n, colc,
                               rowc, s->cost, s->row, n4, sh,
                               j->S > 16 ? s->sad16 + qr * plane : NULL);
        if (!sh) continue;
        /* Columns past 2R were searched too (n is a multiple of 8): take them out. */
        for (int q = 0; q < VIDK_ME_NPART; q++)
            for (int c = nrows; c < j->n; c++)
                for (int k = 0; k < 4; k++)
                    s->cost[(ptrdiff_t)q * n4 + vidk_me_qidx(c, k)] = 65535;
        VidkMeResult res[VIDK_ME_NPART][4];
        int ok[VIDK_ME_NPART][4] = {{0}}, exact[4] = {1, 1, 1, 1};
        for (int bs = VIDK_BLOCK_4x4; bs <= VIDK_BLOCK_16x16; bs++) {
            if (!(sh & VIDK_ME_SHAPE(bs))) continue;
            for (int q = first_part[bs]; q < first_part[bs + 1]; q++) {
                reduce_columns(j, s, q, pred, res[q], ok[q]);
                for (int k = 0; k < 4; k++)
                    exact[k] &= ok[q][k];
            }
        }
        for (int k = 0; k < 4; k++) {
            const int mbx = ux * 4 + k;
            if (mbx >= out->mb_w) break;
            if (!exact[k]) { /* saturated 16-bit costs: the reference decides */
                vidk_me_ref_block(j->cur, j->ref, p, sh, VIDK_BLOCK_16x16, mbx, mby, out,
                                  s->refscr);
                continue;
            }
            for (int bs = VIDK_BLOCK_4x4; bs <= VIDK_BLOCK_16x16; bs++) {
                if (!(sh & VIDK_ME_SHAPE(bs))) continue;
                const int pw = 16 / vidk_block_width((VidkBlockSize)bs);
                const int ph = 16 / vidk_block_height((VidkBlockSize)bs);
                for (int i = 0; i < pw * ph; i++) {
                    const int gx = mbx * pw + i % pw, gy = mby * ph + i / pw;
                    out->res[bs][gy * out->grid_w[bs] + gx] = res[first_part[bs] + i][k];
                }
            }
        }
    }
    if (j->S == 16) return;
    for (int bs = VIDK_BLOCK_32x32; bs <= VIDK_BLOCK_64x64; bs++) {
        if (!(p->shapes & VIDK_ME_SHAPE(bs))) continue;
        const int m = bs == VIDK_BLOCK_32x32 ? 2 : 4; /* macroblocks across and down */
        for (int by = 0; by < j->S / (16 * m); by++)
            for (int bx = 0; bx < 4 / m; bx++) {
                const int gx = ux * (4 / m) + bx, gy = uy * (j->S / (16 * m)) + by;
                if (gx >= out->grid_w[bs] || gy >= out->grid_h[bs]) continue;
                const VidkMv pr = pred_of(j, gx * m, gy * m);
                out->res[bs][gy * out->grid_w[bs] + gx] =
                    search_big(j, s, by * m, bx * m, m, pr);
            }
    }
}

int vidk_me_search_fast(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        const VidkMeParams *p, VidkMeField *out) {
    if (cur->bitdepth != 8) return vidk_me_search_ref(ctx, cur, ref, p, out);
    const int nt = ctx->n_threads;
    QuadJob j = {.ctx = ctx, .cur = cur, .ref = ref, .p = p, .out = out};
    j.S = p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_64x64)   ? 64
          : p->shapes & VIDK_ME_SHAPE(VIDK_BLOCK_32x32) ? 32
                                                        : 16;
    j.units_x = (out->mb_w + 3) / 4;
    const int units_y = (cur->h + j.S - 1) / j.S;
    j.n = (2 * p->range + 1 + 7) & ~7;
    j.n4 = 4 * j.n;
    j.ws = (ptrdiff_t)align64((size_t)j.n + 48 + VIDK_ME_WIN_OVERREAD);
    j.scr = calloc((size_t)nt, sizeof(*j.scr));
    int err = j.scr ? 0 : VIDK_ERR(ENOMEM);
    for (int t = 0; !err && t < nt; t++)
        err = scratch_alloc(&j.scr[t], &j);
    if (!err)
        ctx->ops.run(ctx, j.units_x * units_y, quad_unit, &j);
    else
        vidk_log(ctx, VIDK_LOG_ERROR, "me_search: out of memory for the search windows");
    for (int t = 0; j.scr && t < nt; t++)
        vidk_free_aligned(j.scr[t].alloc);
    free(j.scr);
    return err;
}
