/* Motion estimation API: defaults, Exp-Golomb lengths, fields, argument checks of
 * vidk_me_search, and an independent brute-force check of tiny pictures on every
 * available backend (the expected results are recomputed here from the definition in
 * me.h, not through the library, so the c reference itself is verified). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "vidkern/vidkern.h"

static uint32_t seed;
static int log_count;

static void count_log(void *cookie, VidkLogLevel level, const char *fmt, va_list ap) {
    (void)cookie, (void)level, (void)fmt, (void)ap;
    log_count++;
}

static VidkContext *open_backend(VidkBackend b, int threads) {
    if (!vidk_backend_available(b)) return NULL;
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = b;
    s.n_threads = threads;
    s.log_level = VIDK_LOG_DEBUG;
    s.logger.callback = count_log;
    VidkContext *ctx = NULL;
    if (vidk_open(&ctx, &s) < 0) return NULL;
    return ctx;
}

static void test_defaults_bits(void) {
    VidkMeParams p;
    memset(&p, 0x5a, sizeof(p));
    vidk_me_default_params(&p);
    CHECK(p.range == 16);
    CHECK(p.shapes == VIDK_ME_SHAPE(VIDK_BLOCK_16x16));
    CHECK(p.lambda == 0 && p.pred == NULL && p.flags == 0);
    CHECK(sizeof(VidkMeParams) == 3 * sizeof(int) + sizeof(void *) + 32 +
                                      (sizeof(void *) == 8 ? 4 : 0)); /* ABI unchanged */
    for (size_t i = 0; i < sizeof(p.reserved); i++)
        CHECK(p.reserved[i] == 0);

    /* se(v) lengths from the code table of H.264 9.1.1 (codeNum 0, 1, 2, 3..6, 7..14). */
    static const struct {
        int v;
        unsigned bits;
    } t[] = {
        {0, 1},    {1, 3},     {-1, 3},     {2, 5},        {-2, 5},       {3, 5},
        {-3, 5},   {4, 7},     {-4, 7},     {7, 7},        {-7, 7},       {8, 9},
        {-8, 9},   {15, 9},    {16, 11},    {-16, 11},     {256, 19},     {-256, 19},
        {255, 17}, {-255, 17}, {65535, 33}, {INT_MAX, 63}, {INT_MIN, 65},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        CHECK_EQ_U(vidk_me_mv_bits(t[i].v), t[i].bits);
}

static void test_field(void) {
    VidkMeField f;
    CHECK(vidk_me_field_alloc(NULL, 16, 16, VIDK_ME_SHAPES_ALL) == VIDK_ERR(EINVAL));
    CHECK(vidk_me_field_alloc(&f, 0, 16, VIDK_ME_SHAPES_ALL) == VIDK_ERR(EINVAL));
    CHECK(vidk_me_field_alloc(&f, 16, VIDK_MAX_PICTURE_SIDE + 1, 1) == VIDK_ERR(EINVAL));
    CHECK(vidk_me_field_alloc(&f, 16, 16, 0) == VIDK_ERR(EINVAL));
    CHECK(vidk_me_field_alloc(&f, 16, 16, 1u << VIDK_BLOCK_COUNT) == VIDK_ERR(EINVAL));

    CHECK(vidk_me_field_alloc(&f, 100, 33, VIDK_ME_SHAPES_ALL) == 0);
    CHECK(f.w == 100 && f.h == 33 && f.mb_w == 7 && f.mb_h == 3);
    CHECK(f.grid_w[VIDK_BLOCK_4x4] == 28 && f.grid_h[VIDK_BLOCK_4x4] == 12);
    CHECK(f.grid_w[VIDK_BLOCK_8x4] == 14 && f.grid_h[VIDK_BLOCK_8x4] == 12);
    CHECK(f.grid_w[VIDK_BLOCK_4x8] == 28 && f.grid_h[VIDK_BLOCK_4x8] == 6);
    CHECK(f.grid_w[VIDK_BLOCK_16x8] == 7 && f.grid_h[VIDK_BLOCK_16x8] == 6);
    CHECK(f.grid_w[VIDK_BLOCK_16x16] == 7 && f.grid_h[VIDK_BLOCK_16x16] == 3);
    CHECK(f.grid_w[VIDK_BLOCK_32x32] == 4 && f.grid_h[VIDK_BLOCK_32x32] == 2);
    CHECK(f.grid_w[VIDK_BLOCK_64x64] == 2 && f.grid_h[VIDK_BLOCK_64x64] == 1);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        CHECK(f.res[bs] != NULL);
    vidk_me_field_free(&f);
    CHECK(f.res[VIDK_BLOCK_4x4] == NULL && f.w == 0);
    vidk_me_field_free(&f); /* twice is fine */
    vidk_me_field_free(NULL);

    CHECK(vidk_me_field_alloc(&f, 17, 17, VIDK_ME_SHAPE(VIDK_BLOCK_8x8)) == 0);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        CHECK((f.res[bs] != NULL) == (bs == VIDK_BLOCK_8x8));
    CHECK(f.grid_w[VIDK_BLOCK_8x8] == 4 && f.grid_h[VIDK_BLOCK_8x8] == 4);
    vidk_me_field_free(&f);
}

static void fill_random(VidkPicture *p, uint32_t *s) {
    const int maxv = (1 << p->bitdepth) - 1;
    for (int y = 0; y < p->h; y++) {
        uint8_t *row = (uint8_t *)p->data[0] + y * p->stride[0];
        for (int x = 0; x < p->w; x++) {
            const int v = (int)(test_rand(s) % (unsigned)(maxv + 1));
            if (p->bitdepth == 8)
                row[x] = (uint8_t)v;
            else
                ((uint16_t *)row)[x] = (uint16_t)v;
        }
    }
}

static void test_args(VidkContext *ctx) {
    VidkPicture cur, ref, r10, small;
    CHECK(vidk_picture_alloc(&cur, 40, 24, VIDK_CHROMA_400, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&ref, 40, 24, VIDK_CHROMA_400, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&r10, 40, 24, VIDK_CHROMA_400, 10, 0) == 0);
    CHECK(vidk_picture_alloc(&small, 40, 23, VIDK_CHROMA_400, 8, 0) == 0);
    VidkMeField f, f2;
    CHECK(vidk_me_field_alloc(&f, 40, 24, VIDK_ME_SHAPES_H264) == 0);
    CHECK(vidk_me_field_alloc(&f2, 40, 23, VIDK_ME_SHAPES_ALL) == 0);
    VidkMeParams p;
    vidk_me_default_params(&p);
    p.range = 4;

    CHECK(vidk_me_search(ctx, &cur, &ref, &p, &f) == 0);
    const int einval = VIDK_ERR(EINVAL);
    CHECK(vidk_me_search(NULL, &cur, &ref, &p, &f) == einval);
    log_count = 0;
    CHECK(vidk_me_search(ctx, NULL, &ref, &p, &f) == einval);
    CHECK(log_count > 0); /* the reason is logged */
    CHECK(vidk_me_search(ctx, &cur, NULL, &p, &f) == einval);
    CHECK(vidk_me_search(ctx, &cur, &ref, NULL, &f) == einval);
    CHECK(vidk_me_search(ctx, &cur, &ref, &p, NULL) == einval);
    CHECK(vidk_me_search(ctx, &cur, &small, &p, &f) == einval);   /* size */
    CHECK(vidk_me_search(ctx, &cur, &r10, &p, &f) == einval);     /* bit depth */
    CHECK(vidk_me_search(ctx, &small, &small, &p, &f) == einval); /* field size */
    VidkPicture bad = cur;
    bad.data[0] = NULL;
    CHECK(vidk_me_search(ctx, &bad, &ref, &p, &f) == einval);
    bad = cur;
    bad.stride[0] = 39;
    CHECK(vidk_me_search(ctx, &bad, &ref, &p, &f) == einval);
    bad = cur;
    bad.bitdepth = 17;
    CHECK(vidk_me_search(ctx, &bad, &ref, &p, &f) == einval);

    VidkMeParams q = p;
    q.range = -1;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);
    q.range = VIDK_ME_MAX_RANGE + 1;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);
    q = p;
    q.lambda = VIDK_ME_MAX_LAMBDA + 1;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);
    q = p;
    q.shapes = 0;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);
    q.shapes = 1u << VIDK_BLOCK_COUNT;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);
    q.shapes = VIDK_ME_SHAPE(VIDK_BLOCK_32x32); /* not in the field */
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);
    q = p;
    q.reserved[sizeof(q.reserved) - 1] = 1;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);
    q = p;
    q.flags = VIDK_ME_REF_IS_PREV_CUR << 1; /* unknown flag */
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == einval);

    VidkMeField g = f; /* corrupted fields */
    g.res[VIDK_BLOCK_16x16] = NULL;
    CHECK(vidk_me_search(ctx, &cur, &ref, &p, &g) == einval);
    g = f;
    g.grid_w[VIDK_BLOCK_16x16]++;
    CHECK(vidk_me_search(ctx, &cur, &ref, &p, &g) == einval);
    g = f;
    g.mb_h++;
    CHECK(vidk_me_search(ctx, &cur, &ref, &p, &g) == einval);

    /* Limits that are valid. */
    q = p;
    q.range = 0;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == 0);
    q.lambda = VIDK_ME_MAX_LAMBDA;
    CHECK(vidk_me_search(ctx, &cur, &ref, &q, &f) == 0);
    q = p;
    q.shapes = VIDK_ME_SHAPES_ALL;
    CHECK(vidk_me_search(ctx, &small, &small, &q, &f2) == 0);

    vidk_me_field_free(&f);
    vidk_me_field_free(&f2);
    vidk_picture_free(&cur);
    vidk_picture_free(&ref);
    vidk_picture_free(&r10);
    vidk_picture_free(&small);
}

/* ---------------------------------------------------------------- brute force */

static int px_at(const VidkPicture *p, int x, int y) {
    x = TCLIP(x, 0, p->w - 1);
    y = TCLIP(y, 0, p->h - 1);
    const uint8_t *row = (const uint8_t *)p->data[0] + y * p->stride[0];
    return p->bitdepth == 8 ? row[x] : ((const uint16_t *)row)[x];
}

static unsigned eg_bits(int v) {
    /* Independent of the library: count the bits of codeNum + 1, then 2 * that - 1. */
    const long long code = v > 0 ? 2LL * v - 1 : -2LL * v;
    unsigned n = 0;
    for (long long t = code + 1; t; t >>= 1)
        n++;
    return 2 * n - 1;
}

/* Is candidate a better than b under the tie rule? */
static int better(long long ca, int ax, int ay, long long cb, int bx, int by) {
    if (ca != cb) return ca < cb;
    const int da = abs(ax) + abs(ay), db = abs(bx) + abs(by);
    if (da != db) return da < db;
    if (ay != by) return ay < by;
    return ax < bx;
}

static void brute_force(const VidkPicture *cur, const VidkPicture *ref, const VidkMeParams *p,
                        VidkBlockSize bs, int gx, int gy, VidkMeResult *res) {
    const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
    const int x0 = gx * bw, y0 = gy * bh, mb_w = (cur->w + 15) / 16;
    int prx = 0, pry = 0;
    if (p->lambda && p->pred) {
        const VidkMv v = p->pred[(y0 / 16) * mb_w + x0 / 16];
        prx = v.x, pry = v.y;
    }
    long long best = -1;
    int bx = 0, by = 0;
    long long bsad = 0;
    /* Deliberately in reverse raster order: the tie rule, not the visiting order, must
     * decide. */
    for (int my = p->range; my >= -p->range; my--)
        for (int mx = p->range; mx >= -p->range; mx--) {
            long long sad = 0;
            for (int y = 0; y < bh; y++)
                for (int x = 0; x < bw; x++)
                    sad +=
                        abs(px_at(cur, x0 + x, y0 + y) - px_at(ref, x0 + x + mx, y0 + y + my));
            const long long cost =
                sad + (long long)p->lambda * (eg_bits(mx - prx) + eg_bits(my - pry));
            if (best < 0 || better(cost, mx, my, best, bx, by))
                best = cost, bx = mx, by = my, bsad = sad;
        }
    res->mv.x = (int16_t)bx;
    res->mv.y = (int16_t)by;
    res->cost = (uint32_t)best;
    res->sad = (uint32_t)bsad;
}

static int compare_field(const char *what, const VidkPicture *cur, const VidkPicture *ref,
                         const VidkMeParams *p, const VidkMeField *f) {
    int bad = 0;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(p->shapes & VIDK_ME_SHAPE(bs))) continue;
        for (int gy = 0; gy < f->grid_h[bs]; gy++)
            for (int gx = 0; gx < f->grid_w[bs]; gx++) {
                VidkMeResult e, g = f->res[bs][gy * f->grid_w[bs] + gx];
                brute_force(cur, ref, p, (VidkBlockSize)bs, gx, gy, &e);
                if (memcmp(&e, &g, sizeof(e))) {
                    if (bad++ < 4)
                        fprintf(
                            stderr,
                            "%s: %s block (%d,%d) R=%d lambda=%u: got (%d,%d) cost %u sad %u, "
                            "expected (%d,%d) cost %u sad %u\n",
                            what, vidk_block_name((VidkBlockSize)bs), gx, gy, p->range,
                            p->lambda, g.mv.x, g.mv.y, g.cost, g.sad, e.mv.x, e.mv.y, e.cost,
                            e.sad);
                }
            }
    }
    CHECK(bad == 0);
    return bad;
}

typedef struct Case {
    int w, h, bitdepth, range;
    unsigned lambda;
    /* 0 random, 1 flat (all ties), 2 shifted copy + noise, 3 max contrast, 4 inverted
     * checkerboards (ties at equal |mvx| + |mvy| and different mvy) */
    int kind;
} Case;

static void make_pictures(const Case *c, VidkPicture *cur, VidkPicture *ref, uint32_t *s) {
    fill_random(cur, s);
    fill_random(ref, s);
    const int maxv = (1 << c->bitdepth) - 1;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            int vc = px_at(cur, x, y), vr = px_at(ref, x, y);
            if (c->kind == 1) vc = vr = maxv / 3;
            if (c->kind == 2) vc = px_at(ref, x - 2, y + 1); /* true motion (-2, +1) */
            if (c->kind == 3) vc = ((x ^ y) & 4) ? maxv : 0, vr = ((x + y) & 2) ? 0 : maxv;
            if (c->kind == 4)
                vr = ((x + y) & 1) ? maxv : 0, vc = maxv - vr; /* odd mvx + mvy match */
            uint8_t *rc = (uint8_t *)cur->data[0] + y * cur->stride[0];
            uint8_t *rr = (uint8_t *)ref->data[0] + y * ref->stride[0];
            if (c->bitdepth == 8)
                rc[x] = (uint8_t)vc, rr[x] = (uint8_t)vr;
            else
                ((uint16_t *)rc)[x] = (uint16_t)vc, ((uint16_t *)rr)[x] = (uint16_t)vr;
        }
}

static void test_brute(VidkContext **ctxs, const char **names, int n_ctx) {
    static const Case cases[] = {
        {21, 13, 8, 3, 0, 0}, {21, 13, 8, 3, 4, 0},     {16, 16, 8, 5, 0, 1},
        {16, 16, 8, 5, 3, 1}, {33, 17, 8, 4, 0, 2},     {33, 17, 8, 4, 2, 2},
        {9, 30, 8, 20, 0, 0}, {24, 20, 10, 3, 0, 0},    {24, 20, 10, 3, 5, 2},
        {20, 18, 8, 2, 0, 3}, {20, 18, 8, 2, 600, 3},   {1, 1, 8, 2, 1, 0},
        {70, 20, 8, 2, 1, 0}, {18, 70, 16, 1, 7, 0},    {48, 48, 8, 3, 0, 4},
        {48, 48, 8, 3, 1, 4}, {32, 32, 8, 4, 65535, 3}, {32, 32, 8, 4, 40000, 3},
    };
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        const Case *c = &cases[ci];
        VidkPicture cur, ref;
        CHECK(vidk_picture_alloc(&cur, c->w, c->h, VIDK_CHROMA_400, c->bitdepth, 0) == 0);
        CHECK(vidk_picture_alloc(&ref, c->w, c->h, VIDK_CHROMA_400, c->bitdepth, 0) == 0);
        make_pictures(c, &cur, &ref, &seed);
        VidkMeParams p;
        vidk_me_default_params(&p);
        p.range = c->range;
        p.lambda = c->lambda;
        p.shapes = VIDK_ME_SHAPES_ALL;
        const int mb_w = (c->w + 15) / 16, mb_h = (c->h + 15) / 16;
        VidkMv *pred = malloc(sizeof(VidkMv) * (size_t)(mb_w * mb_h));
        for (int i = 0; i < mb_w * mb_h; i++)
            pred[i] = (VidkMv){(int16_t)((int)(test_rand(&seed) % 21) - 10),
                               (int16_t)((int)(test_rand(&seed) % 21) - 10)};
        if (c->lambda && ci % 2) p.pred = pred;
        for (int i = 0; i < n_ctx; i++) {
            VidkMeField f;
            CHECK(vidk_me_field_alloc(&f, c->w, c->h, p.shapes) == 0);
            const int err = vidk_me_search(ctxs[i], &cur, &ref, &p, &f);
            if (err) fprintf(stderr, "%s: vidk_me_search: %s\n", names[i], vidk_strerror(err));
            CHECK(err == 0);
            char what[96];
            snprintf(what, sizeof(what), "%s case %zu (%dx%d %d-bit)", names[i], ci, c->w, c->h,
                     c->bitdepth);
            if (!err) compare_field(what, &cur, &ref, &p, &f);
            vidk_me_field_free(&f);
        }
        free(pred);
        vidk_picture_free(&cur);
        vidk_picture_free(&ref);
    }
}

/* Constructed ties: period-2 column stripes, so every candidate with the right mvx
 * parity matches exactly; |mvx| + |mvy|, then raster order must pick the vector. The
 * macroblock checked is (1, 1) of 48x48, away from the edges for R = 3. */
static void test_constructed_tie(VidkContext **ctxs, const char **names, int n_ctx) {
    VidkPicture cur, ref;
    CHECK(vidk_picture_alloc(&cur, 48, 48, VIDK_CHROMA_400, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&ref, 48, 48, VIDK_CHROMA_400, 8, 0) == 0);
    VidkMeParams p;
    vidk_me_default_params(&p);
    p.range = 3;
    p.shapes = VIDK_ME_SHAPES_H264;
    for (int phase = 0; phase < 2; phase++) {
        for (int y = 0; y < 48; y++)
            for (int x = 0; x < 48; x++) {
                ((uint8_t *)ref.data[0])[y * ref.stride[0] + x] = (uint8_t)((x & 1) ? 200 : 10);
                ((uint8_t *)cur.data[0])[y * cur.stride[0] + x] =
                    (uint8_t)(((x + phase) & 1) ? 200 : 10);
            }
        /* phase 0: (0, 0) matches; phase 1: every odd mvx matches, (-1, 0) and (1, 0)
         * are the nearest, and raster order picks (-1, 0). */
        const int want_x = phase ? -1 : 0;
        for (int i = 0; i < n_ctx; i++) {
            VidkMeField f;
            CHECK(vidk_me_field_alloc(&f, 48, 48, p.shapes) == 0);
            const int err = vidk_me_search(ctxs[i], &cur, &ref, &p, &f);
            CHECK(err == 0);
            if (!err) {
                const VidkMeResult r = f.res[VIDK_BLOCK_16x16][1 * 3 + 1];
                if (!(r.mv.x == want_x && r.mv.y == 0 && r.sad == 0))
                    fprintf(stderr, "%s: tie phase %d gave (%d,%d) sad %u\n", names[i], phase,
                            r.mv.x, r.mv.y, r.sad);
                CHECK(r.mv.x == want_x && r.mv.y == 0 && r.sad == 0);
                compare_field(names[i], &cur, &ref, &p, &f);
            }
            vidk_me_field_free(&f);
        }
    }
    vidk_picture_free(&cur);
    vidk_picture_free(&ref);
}

/* VIDK_ME_REF_IS_PREV_CUR: a hint; a sequence searched with it gives the fields of the
 * plain calls (on the cuda backend the reference then comes from the device). */
static void test_prev_cur(VidkContext **ctxs, const char **names, int n_ctx) {
    uint32_t s = seed ^ 0x5eed;
    VidkPicture fr[3];
    for (int i = 0; i < 3; i++) {
        CHECK(vidk_picture_alloc(&fr[i], 72, 40, VIDK_CHROMA_400, 8, 0) == 0);
        fill_random(&fr[i], &s);
    }
    VidkMeParams p;
    vidk_me_default_params(&p);
    p.range = 5;
    p.shapes = VIDK_ME_SHAPES_H264;
    p.lambda = 4;
    VidkMeField want, got;
    CHECK(vidk_me_field_alloc(&want, 72, 40, p.shapes) == 0);
    CHECK(vidk_me_field_alloc(&got, 72, 40, p.shapes) == 0);
    for (int c = 0; c < n_ctx; c++) {
        for (int k = 1; k < 3; k++) {
            p.flags = 0;
            CHECK(vidk_me_search(ctxs[c], &fr[k], &fr[k - 1], &p, &want) == 0);
        }
        for (int k = 1; k < 3; k++) { /* f1 vs f0, then f2 vs f1 = the previous cur */
            p.flags = k > 1 ? VIDK_ME_REF_IS_PREV_CUR : 0;
            CHECK(vidk_me_search(ctxs[c], &fr[k], &fr[k - 1], &p, &got) == 0);
        }
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(p.shapes & VIDK_ME_SHAPE(bs))) continue;
            const size_t n = (size_t)want.grid_w[bs] * (size_t)want.grid_h[bs];
            if (memcmp(want.res[bs], got.res[bs], n * sizeof(VidkMeResult))) {
                fprintf(stderr, "test_me: %s: REF_IS_PREV_CUR changed the %s field\n", names[c],
                        vidk_block_name((VidkBlockSize)bs));
                CHECK(0);
            }
        }
    }
    vidk_me_field_free(&want);
    vidk_me_field_free(&got);
    for (int i = 0; i < 3; i++)
        vidk_picture_free(&fr[i]);
}

int main(void) {
    seed = test_seed();
    test_defaults_bits();
    test_field();

    VidkContext *ctxs[8];
    const char *names[8];
    int n = 0;
    const struct {
        VidkBackend b;
        int threads;
        const char *name;
    } bk[] = {
        {VIDK_BACKEND_C, 0, "c"},
        {VIDK_BACKEND_SIMD, 0, "simd"},
        {VIDK_BACKEND_THREADS, 3, "threads"},
        {VIDK_BACKEND_CUDA, 0, "cuda"},
    };
    for (size_t i = 0; i < sizeof(bk) / sizeof(bk[0]); i++) {
        VidkContext *ctx = open_backend(bk[i].b, bk[i].threads);
        if (!ctx) continue;
        ctxs[n] = ctx;
        names[n++] = bk[i].name;
    }
    CHECK(n >= 2);
    for (int i = 0; i < n; i++)
        test_args(ctxs[i]);
    test_brute(ctxs, names, n);
    test_constructed_tie(ctxs, names, n);
    test_prev_cur(ctxs, names, n);
    for (int i = 0; i < n; i++)
        vidk_close(&ctxs[i]);
    return test_finish("test_me");
}
