/* checkkern: motion estimation.
 *
 * DSP level: search_quad of every ISA level against the C version on random, worst-case
 * and real windows, every shape mask, lambda costs that saturate, odd strides.
 * Backend level: vidk_me_search on simd, threads (1, 2, 3, all threads) and cuda against
 * the c backend (the reference): random pictures, 0-vs-255 worst cases, flat pictures
 * (every candidate ties), constructed ties, frame edges and vectors far outside, R = 0,
 * R = VIDK_ME_MAX_RANGE, odd sizes, lambda with random predictors, 10-bit samples, every
 * shape, real clips. Every field (mv, cost, sad) of every block of every shape is
 * compared. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "internal.h"

/* ---------------------------------------------------------------- DSP level */

typedef struct QuadIn {
    int range, n, shapes, lambda;
    ptrdiff_t cs, ws;
    uint8_t *cur, *win; /* win: (2R + 16) rows of ws bytes */
    uint16_t *colc, *rowc;
    int with_sad16, init_random;
} QuadIn;

typedef struct QuadOut {
    uint16_t *cost, *row, *sad16;
} QuadOut;

static size_t best_len(const QuadIn *q) {
    return (size_t)VIDK_ME_NPART * q->n * 4;
}
static size_t sad_len(const QuadIn *q) {
    return (size_t)(2 * q->range + 1) * q->n * 4;
}

static int quad_out_alloc(QuadOut *o, const QuadIn *q) {
    o->cost = malloc(best_len(q) * 2);
    o->row = malloc(best_len(q) * 2);
    o->sad16 = malloc(sad_len(q) * 2);
    return o->cost && o->row && o->sad16 ? 0 : -1;
}

static void quad_out_free(QuadOut *o) {
    free(o->cost), free(o->row), free(o->sad16);
    memset(o, 0, sizeof(*o));
}

/* Random parameters and data; kind 0 random, 1 worst case (0 vs 255 blocks), 2 flat,
 * 3 smooth (small differences: many near-ties). */
static int quad_in_make(QuadIn *q, int range, int kind, int shapes) {
    memset(q, 0, sizeof(*q));
    q->range = range;
    q->n = ((2 * range + 1 + 7) & ~7) + 8 * ck_rand_range(0, 2);
    q->cs = 64 + ck_rand_range(0, 3) * 17;
    q->ws = q->n + 48 + VIDK_ME_WIN_OVERREAD + ck_rand_range(0, 40);
    const int r = ck_rand_range(0, 9);
    q->shapes = r < 3   ? (int)VIDK_ME_SHAPES_H264
                : r < 5 ? (int)VIDK_ME_SHAPE(VIDK_BLOCK_16x16)
                : r < 6 ? 0
                        : (int)(ck_rand() & VIDK_ME_SHAPES_H264);
    if (shapes >= 0) q->shapes = shapes;
    q->lambda = ck_rand_range(0, 2);
    q->with_sad16 = q->shapes == 0 || ck_rand_range(0, 1);
    q->init_random = ck_rand_range(0, 3) == 0;
    const size_t wrows = (size_t)(2 * range + 16);
    q->cur = malloc((size_t)q->cs * 16);
    q->win = malloc(wrows * (size_t)q->ws);
    q->colc = malloc((size_t)q->n * 4 * 2);
    q->rowc = malloc((size_t)(2 * range + 1) * 32 * 2);
    if (!q->cur || !q->win || !q->colc || !q->rowc) return -1;
    const int hi = ck_rand_range(0, 1) ? 255 : 0;
    for (size_t i = 0; i < (size_t)q->cs * 16; i++) {
        const int v = (int)(ck_rand() & 255);
        q->cur[i] = (uint8_t)(kind == 1 ? hi : kind == 2 ? 77 : kind == 3 ? 120 + (v & 3) : v);
    }
    for (size_t i = 0; i < wrows * (size_t)q->ws; i++) {
        const int v = (int)(ck_rand() & 255);
        q->win[i] = (uint8_t)(kind == 1   ? 255 - hi
                              : kind == 2 ? 77
                              : kind == 3 ? 120 + (v & 3)
                                          : v);
    }
    /* Costs of a predictor: a lambda 1 ramp, or large values that saturate. */
    const int big = q->lambda == 2 || kind == 1;
    for (int i = 0; i < q->n * 4; i++)
        q->colc[i] = (uint16_t)(big ? ck_rand_range(0, 65535) : ck_rand_range(0, 40));
    for (int i = 0; i <= 2 * range; i++) {
        const uint16_t v = (uint16_t)(big ? ck_rand_range(0, 65535) : ck_rand_range(0, 40));
        for (int k = 0; k < 4; k++)
            for (int t = 0; t < 8; t++)
                q->rowc[i * 32 + 8 * k + t] = v;
        if (ck_rand_range(0, 1)) /* blocks may have different predictors */
            for (int k = 1; k < 4; k++)
                for (int t = 0; t < 8; t++)
                    q->rowc[i * 32 + 8 * k + t] = (uint16_t)(v + k);
    }
    return 0;
}

static void quad_in_free(QuadIn *q) {
    free(q->cur), free(q->win), free(q->colc), free(q->rowc);
    memset(q, 0, sizeof(*q));
}

static void quad_run(vidk_me_search_quad_fn fn, const QuadIn *q, QuadOut *o, uint32_t init) {
    /* Same starting contents for every implementation: cost 65535 (the contract) or
     * pseudo-random kept values from `init`; sad16 poisoned to see what is written. */
    uint32_t s = init | 1;
    for (size_t i = 0; i < best_len(q); i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        o->cost[i] = q->init_random ? (uint16_t)(s >> 16) : 65535;
        o->row[i] = (uint16_t)s;
    }
    memset(o->sad16, 0xa5, sad_len(q) * 2);
    if (!fn) return;
    fn(q->cur, q->cs, q->win + (ptrdiff_t)q->range * q->ws, q->ws, q->range, q->n,
       q->lambda ? q->colc : NULL, q->lambda ? q->rowc : NULL, o->cost, o->row,
       (ptrdiff_t)q->n * 4, (unsigned)q->shapes, q->with_sad16 ? o->sad16 : NULL);
}

static int quad_compare(const QuadIn *q, const QuadOut *a, const QuadOut *b) {
    for (size_t i = 0; i < best_len(q); i++)
        if (a->cost[i] != b->cost[i] || a->row[i] != b->row[i]) {
            const int part = (int)(i / ((size_t)q->n * 4)), idx = (int)(i % ((size_t)q->n * 4));
            ck_fail("R=%d n=%d shapes=0x%x lambda=%d: partition %d col %d block %d: cost %u "
                    "row %u, "
                    "C has cost %u row %u",
                    q->range, q->n, q->shapes, q->lambda, part, (idx / 32) * 8 + idx % 8,
                    (idx % 32) / 8, a->cost[i], a->row[i], b->cost[i], b->row[i]);
            return 1;
        }
    if (q->with_sad16)
        for (size_t i = 0; i < sad_len(q); i++)
            if (a->sad16[i] != b->sad16[i]) {
                ck_fail("R=%d n=%d shapes=0x%x: sad16[%zu] = %u, C has %u", q->range, q->n,
                        q->shapes, i, a->sad16[i], b->sad16[i]);
                return 1;
            }
    return 0;
}

/* A real window: current quad from frame 1, reference window from frame 0. */
static int quad_in_real(QuadIn *q, const VidkPicture *c, const VidkPicture *r, int range,
                        int shapes) {
    if (quad_in_make(q, range, 0, shapes)) return -1;
    const int x0 = ck_rand_range(0, c->w - 64), y0 = ck_rand_range(0, c->h - 16);
    for (int y = 0; y < 16; y++)
        memcpy(q->cur + y * q->cs, (const uint8_t *)c->data[0] + (y0 + y) * c->stride[0] + x0,
               64);
    for (int y = 0; y < 2 * range + 16; y++) {
        const int sy = vidk_iclip(y0 - range + y, 0, r->h - 1);
        const uint8_t *row = (const uint8_t *)r->data[0] + sy * r->stride[0];
        for (int x = 0; x < q->ws; x++)
            q->win[y * q->ws + x] = row[vidk_iclip(x0 - range + x, 0, r->w - 1)];
    }
    return 0;
}

/* The C version against the definition, written differently: for every partition,
 * block and column, the best row is the minimum of (cost, |mvy|, mvy) over all rows,
 * and it replaces the starting value only when its cost is lower. */
static int quad_definition(const QuadIn *q, const QuadOut *start, const QuadOut *got) {
    static const int pw[7] = {4, 8, 4, 8, 16, 8, 16}, ph[7] = {4, 4, 8, 8, 8, 16, 16};
    const int R = q->range, n4 = q->n * 4;
    const uint8_t *ref = q->win + (ptrdiff_t)R * q->ws;
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < q->n; j++) {
            const int idx = vidk_me_qidx(j, k);
            int part = 0;
            for (int bs = 0; bs < 7; bs++)
                for (int oy = 0; oy < 16; oy += ph[bs])
                    for (int ox = 0; ox < 16; ox += pw[bs], part++) {
                        const size_t at = (size_t)part * n4 + idx;
                        unsigned bc = 0;
                        int bmy = 0, found = 0;
                        for (int my = -R; my <= R; my++) {
                            unsigned sad = 0;
                            for (int y = 0; y < ph[bs]; y++)
                                for (int x = 0; x < pw[bs]; x++)
                                    sad += (unsigned)abs(
                                        q->cur[(oy + y) * q->cs + 16 * k + ox + x] -
                                        ref[(my + oy + y) * q->ws + 16 * k + j + ox + x]);
                            unsigned mvc = 0;
                            if (q->lambda) {
                                mvc = q->colc[idx] + q->rowc[(my + R) * 32 + 8 * k];
                                if (mvc > 65535) mvc = 65535;
                            }
                            const unsigned cost = sad + mvc > 65535 ? 65535 : sad + mvc;
                            if (!found || cost < bc || (cost == bc && abs(my) < abs(bmy)))
                                bc = cost, bmy = my, found = 1;
                            if (bs == 6 && q->with_sad16 &&
                                got->sad16[(size_t)(my + R) * n4 + idx] != sad) {
                                ck_fail(
                                    "definition: sad16 R=%d col %d block %d my %d: %u, want %u",
                                    R, j, k, my, got->sad16[(size_t)(my + R) * n4 + idx], sad);
                                return 1;
                            }
                        }
                        unsigned ec = start->cost[at], er = start->row[at];
                        if ((q->shapes & VIDK_ME_SHAPE(bs)) && bc < ec)
                            ec = bc, er = (unsigned)(bmy + R);
                        if (got->cost[at] != ec || got->row[at] != er) {
                            ck_fail(
                                "definition: R=%d shapes=0x%x partition %d col %d block %d: "
                                "cost %u row %u, want %u %u",
                                R, q->shapes, part, j, k, got->cost[at], got->row[at], ec, er);
                            return 1;
                        }
                    }
        }
    return 0;
}

static void bench_quad(vidk_me_search_quad_fn fn, unsigned shapes) {
    QuadIn q;
    QuadOut a = {0};
    if (!quad_in_make(&q, 16, 0, -1) && !quad_out_alloc(&a, &q)) {
        /* One quad (4 macroblocks), R = 16: 33 x 40 candidates each. */
        CK_BENCH(fn(q.cur, q.cs, q.win + 16 * q.ws, q.ws, 16, 40, NULL, NULL, a.cost, a.row,
                    q.n * 4, shapes, NULL));
    }
    quad_out_free(&a);
    quad_in_free(&q);
}

static void check_search_quad(const char *func, int shapes, const VidkPicture *real) {
    VidkMeDSP ref_dsp;
    vidk_me_dsp_init(&ref_dsp, 0);
    const unsigned bench_shapes = shapes < 0 ? VIDK_ME_SHAPES_H264 : (unsigned)shapes;
    const int n_tests = shapes < 0 ? 64 : 16;
    static const int ranges[] = {0, 1, 2, 3, 5, 8, 12, 16};

    /* The C level: against the definition on small R, and its benchmark. */
    if (ck_begin(func, "c", (const void *)ref_dsp.search_quad, NULL)) {
        for (int t = 0; t < 12; t++) {
            QuadIn q;
            QuadOut a = {0}, st = {0};
            if (quad_in_make(&q, t % 4,
                             t < 8    ? 0
                             : t < 10 ? 1
                                      : 3,
                             shapes) ||
                quad_out_alloc(&a, &q) || quad_out_alloc(&st, &q)) {
                ck_fail("out of memory");
            } else {
                const uint32_t init = ck_rand();
                quad_run(ref_dsp.search_quad, &q, &a, init);
                quad_run(NULL, &q, &st, init); /* starting contents only */
                quad_definition(&q, &st, &a);
            }
            quad_out_free(&a), quad_out_free(&st);
            quad_in_free(&q);
        }
        bench_quad(ref_dsp.search_quad, bench_shapes);
        ck_end();
    }

    const void *prev = (const void *)ref_dsp.search_quad;
    for (int l = 1; l < ck_level_count(); l++) {
        const CkLevel *lv = ck_level(l);
        VidkMeDSP dsp;
        vidk_me_dsp_init(&dsp, lv->flags);
        const void *fn = (const void *)dsp.search_quad;
        if (ck_begin(func, lv->name, fn, prev)) {
            for (int t = 0; t < n_tests; t++) {
                QuadIn q;
                QuadOut a = {0}, b = {0};
                const int kind = t < n_tests * 5 / 8   ? 0
                                 : t < n_tests * 6 / 8 ? 1
                                 : t < n_tests * 7 / 8 ? 2
                                                       : 3;
                const int range = ranges[t % 8];
                int err = real && t % 4 == 3
                              ? quad_in_real(&q, &real[1], &real[0], range, shapes)
                              : quad_in_make(&q, range, kind, shapes);
                if (!err) err = quad_out_alloc(&a, &q) || quad_out_alloc(&b, &q);
                if (err) {
                    ck_fail("out of memory");
                } else {
                    const uint32_t init = ck_rand();
                    quad_run(dsp.search_quad, &q, &a, init);
                    quad_run(ref_dsp.search_quad, &q, &b, init);
                    quad_compare(&q, &a, &b);
                }
                quad_out_free(&a), quad_out_free(&b);
                quad_in_free(&q);
            }
            bench_quad(dsp.search_quad, bench_shapes);
            ck_end();
        }
        prev = fn;
    }
}

static void check_dsp(void) {
    VidkPicture real[2] = {{0}};
    const char *clip = "basketballpass_416x240_50fps_100f.y4m";
    const int have_real =
        !ck_load_y4m(clip, 0, 0, &real[0]) && !ck_load_y4m(clip, 1, 0, &real[1]);
    check_search_quad("me_search_quad", -1, have_real ? real : NULL);
    check_search_quad("me_search_quad_16x16", VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
                      have_real ? real : NULL);
    vidk_picture_free(&real[0]);
    vidk_picture_free(&real[1]);
}

/* ---------------------------------------------------------------- backend level */

typedef struct MeCase {
    char name[64];
    VidkPicture cur, ref;
    VidkMeParams p;
    VidkMv *pred;
    VidkMeField expect; /* from the c backend */
} MeCase;

#define MAX_CASES 48
static MeCase cases[MAX_CASES];
static int n_cases;

static void set_sample(VidkPicture *p, int x, int y, int v) {
    uint8_t *row = (uint8_t *)p->data[0] + y * p->stride[0];
    if (p->bitdepth == 8)
        row[x] = (uint8_t)v;
    else
        ((uint16_t *)row)[x] = (uint16_t)v;
}

static int get_sample(const VidkPicture *p, int x, int y) {
    const uint8_t *row = (const uint8_t *)p->data[0] + y * p->stride[0];
    return p->bitdepth == 8 ? row[x] : ((const uint16_t *)row)[x];
}

enum { K_RANDOM, K_WORST, K_FLAT, K_TIES, K_SHIFT, K_SMOOTH };

/* Pictures of one case. K_WORST: 0 against the maximum; K_FLAT: one value everywhere;
 * K_TIES: periodic content found at several vectors equally far from zero motion;
 * K_SHIFT: the reference moved by a random vector (edges clamp) plus a little noise;
 * K_SMOOTH: small differences, many near-ties. */
static void fill_case(MeCase *c, int kind) {
    const int w = c->cur.w, h = c->cur.h, maxv = (1 << c->cur.bitdepth) - 1;
    const int sx = ck_rand_range(-6, 6), sy = ck_rand_range(-6, 6);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int r = (int)(ck_rand() % (unsigned)(maxv + 1));
            int vr = r, vc = (int)(ck_rand() % (unsigned)(maxv + 1));
            switch (kind) {
            case K_WORST:
                vc = ((x / 4 + y / 4) & 1) ? maxv : 0, vr = maxv - vc;
                break;
            case K_FLAT:
                vc = vr = maxv / 2;
                break;
            case K_TIES: /* period 6: cur matches at (+-3, +-3), raster picks (-3, -3) */
                vr = ((x % 6) + 6 * (y % 6)) * maxv / 35;
                vc = (((x + 3) % 6) + 6 * ((y + 3) % 6)) * maxv / 35;
                break;
            case K_SMOOTH:
                vr = (x + 2 * y) % 7 + maxv / 3, vc = (x + 2 * y + 3) % 7 + maxv / 3;
                break;
            default:
                break;
            }
            set_sample(&c->ref, x, y, vr);
            if (kind != K_SHIFT) set_sample(&c->cur, x, y, vc);
        }
    if (kind == K_SHIFT)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int v = get_sample(&c->ref, vidk_iclip(x + sx, 0, w - 1),
                                   vidk_iclip(y + sy, 0, h - 1));
                if (!(ck_rand() & 7)) v = vidk_iclip(v + ck_rand_range(-3, 3), 0, maxv);
                set_sample(&c->cur, x, y, v);
            }
}

static unsigned random_shapes(void) {
    const int r = ck_rand_range(0, 5);
    if (r == 0) return VIDK_ME_SHAPES_ALL;
    if (r == 1) return VIDK_ME_SHAPES_H264;
    if (r == 2) return VIDK_ME_SHAPE(VIDK_BLOCK_16x16);
    unsigned s = 0;
    while (!s)
        s = ck_rand() & VIDK_ME_SHAPES_ALL;
    return s;
}

static MeCase *add_case(const char *name, int w, int h, int bitdepth, int range,
                        unsigned shapes, unsigned lambda, int with_pred) {
    if (n_cases == MAX_CASES) return NULL;
    MeCase *c = &cases[n_cases];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s %dx%d %db R=%d shapes=0x%x lambda=%u%s", name, w, h,
             bitdepth, range, shapes, lambda, with_pred ? " pred" : "");
    if (vidk_picture_alloc(&c->cur, w, h, VIDK_CHROMA_400, bitdepth, ck_rand_range(0, 2) * 8) ||
        vidk_picture_alloc(&c->ref, w, h, VIDK_CHROMA_400, bitdepth, 0)) {
        ck_fail("out of memory");
        vidk_picture_free(&c->cur);
        return NULL;
    }
    vidk_me_default_params(&c->p);
    c->p.range = range, c->p.shapes = shapes, c->p.lambda = lambda;
    n_cases++;
    if (with_pred) {
        const int n = ((w + 15) / 16) * ((h + 15) / 16);
        c->pred = malloc(sizeof(VidkMv) * (size_t)n);
        if (!c->pred) {
            ck_fail("out of memory");
            return NULL; /* freed with the other cases */
        }
        for (int i = 0; i < n; i++)
            c->pred[i] =
                (VidkMv){(int16_t)ck_rand_range(-40, 40), (int16_t)ck_rand_range(-40, 40)};
        c->p.pred = c->pred;
    }
    return c;
}

static void free_cases(void) {
    for (int i = 0; i < n_cases; i++) {
        vidk_picture_free(&cases[i].cur);
        vidk_picture_free(&cases[i].ref);
        vidk_me_field_free(&cases[i].expect);
        free(cases[i].pred);
    }
    n_cases = 0;
}

static void make_cases(void) {
    static const int sizes[][2] = {{16, 16}, {24, 40}, {33, 17}, {100, 60}, {17, 9}, {1, 1}};
    MeCase *c;
    /* Random content, every size, random shapes and R. */
    for (int i = 0; i < 6; i++)
        if ((c = add_case("random", sizes[i][0], sizes[i][1], 8, ck_rand_range(0, 9),
                          random_shapes(), 0, 0)))
            fill_case(c, K_RANDOM);
    /* Each shape alone once, and all of them. */
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        if ((c = add_case("shape", 40, 36, 8, 3, VIDK_ME_SHAPE(bs), 0, 0)))
            fill_case(c, K_SHIFT);
    if ((c = add_case("all shapes", 72, 70, 8, 4, VIDK_ME_SHAPES_ALL, 0, 0)))
        fill_case(c, K_SHIFT);
    /* Worst cases (0 vs max): 16x16 SADs near 65280; with lambda the 16-bit costs of the
     * fast path saturate and the exact fallback decides. */
    if ((c = add_case("worst", 48, 32, 8, 5, VIDK_ME_SHAPES_ALL, 0, 0))) fill_case(c, K_WORST);
    if ((c = add_case("worst", 48, 32, 8, 5, VIDK_ME_SHAPES_H264, 300, 1)))
        fill_case(c, K_WORST);
    if ((c = add_case("worst", 32, 32, 8, 4, VIDK_ME_SHAPES_ALL, VIDK_ME_MAX_LAMBDA, 1)))
        fill_case(c, K_WORST);
    /* Ties: flat (every candidate equal), repeated content, smooth near-ties. */
    if ((c = add_case("flat", 40, 24, 8, 6, VIDK_ME_SHAPES_ALL, 0, 0))) fill_case(c, K_FLAT);
    if ((c = add_case("flat", 40, 24, 8, 6, VIDK_ME_SHAPES_H264, 2, 1))) fill_case(c, K_FLAT);
    if ((c = add_case("ties", 64, 48, 8, 7, VIDK_ME_SHAPES_ALL, 0, 0))) fill_case(c, K_TIES);
    if ((c = add_case("ties", 64, 48, 8, 7, VIDK_ME_SHAPES_H264, 1, 1))) fill_case(c, K_TIES);
    if ((c = add_case("smooth", 48, 48, 8, 5, VIDK_ME_SHAPES_ALL, 0, 0)))
        fill_case(c, K_SMOOTH);
    /* Motion, lambda with predictors. */
    for (int i = 0; i < 3; i++)
        if ((c = add_case("shift", ck_rand_range(20, 90), ck_rand_range(20, 70), 8,
                          ck_rand_range(6, 10), random_shapes(), (unsigned)ck_rand_range(1, 12),
                          1)))
            fill_case(c, K_SHIFT);
    /* R = 0; R far beyond the picture (vectors point far outside); the largest R. */
    if ((c = add_case("R0", 50, 30, 8, 0, VIDK_ME_SHAPES_ALL, 0, 0))) fill_case(c, K_RANDOM);
    if ((c = add_case("R0", 50, 30, 8, 0, VIDK_ME_SHAPES_H264, 5, 1))) fill_case(c, K_SHIFT);
    if ((c = add_case("far", 20, 20, 8, 40, VIDK_ME_SHAPES_ALL, 0, 0))) fill_case(c, K_SHIFT);
    if ((c = add_case("Rmax", 16, 16, 8, VIDK_ME_MAX_RANGE, VIDK_ME_SHAPES_H264, 0, 0)))
        fill_case(c, K_SHIFT);
    /* 10-bit and 16-bit samples (the reference on the CPU backends). */
    if ((c = add_case("10bit", 33, 20, 10, 4, VIDK_ME_SHAPES_ALL, 0, 0)))
        fill_case(c, K_RANDOM);
    if ((c = add_case("10bit", 40, 24, 10, 5, VIDK_ME_SHAPES_H264, 3, 1)))
        fill_case(c, K_SHIFT);
    if ((c = add_case("16bit", 20, 17, 16, 2, VIDK_ME_SHAPES_ALL, 0, 0))) fill_case(c, K_WORST);

    /* Real clips: consecutive frames. */
    static const struct {
        const char *file;
        int frame, range;
        unsigned shapes;
    } clips[] = {
        {"basketballpass_416x240_50fps_100f.y4m", 10, 16, VIDK_ME_SHAPES_H264},
        {"basketballpass_416x240_50fps_100f.y4m", 40, 24, VIDK_ME_SHAPE(VIDK_BLOCK_16x16)},
        {"cars_320x240_30fps_30f.y4m", 5, 32, VIDK_ME_SHAPES_ALL},
    };
    for (size_t i = 0; i < sizeof(clips) / sizeof(clips[0]); i++) {
        VidkPicture a, b;
        if (ck_load_y4m(clips[i].file, clips[i].frame, 0, &a)) continue;
        if (ck_load_y4m(clips[i].file, clips[i].frame + 1, 0, &b)) {
            vidk_picture_free(&a);
            continue;
        }
        if (n_cases < MAX_CASES) {
            c = &cases[n_cases++];
            memset(c, 0, sizeof(*c));
            snprintf(c->name, sizeof(c->name), "%.20s f%d R=%d shapes=0x%x", clips[i].file,
                     clips[i].frame, clips[i].range, clips[i].shapes);
            c->cur = b, c->ref = a;
            vidk_me_default_params(&c->p);
            c->p.range = clips[i].range, c->p.shapes = clips[i].shapes;
        } else {
            vidk_picture_free(&a), vidk_picture_free(&b);
        }
    }
}

static int run_case(VidkContext *ctx, const MeCase *c, VidkMeField *f) {
    int err = vidk_me_field_alloc(f, c->cur.w, c->cur.h, c->p.shapes);
    if (!err) err = vidk_me_search(ctx, &c->cur, &c->ref, &c->p, f);
    return err;
}

static int compare_case(const MeCase *c, const VidkMeField *f) {
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(c->p.shapes & VIDK_ME_SHAPE(bs))) continue;
        const int n = f->grid_w[bs] * f->grid_h[bs];
        for (int i = 0; i < n; i++) {
            const VidkMeResult a = f->res[bs][i], e = c->expect.res[bs][i];
            if (a.mv.x != e.mv.x || a.mv.y != e.mv.y || a.cost != e.cost || a.sad != e.sad) {
                ck_fail("%s: %s block (%d,%d): mv (%d,%d) cost %u sad %u, c has (%d,%d) %u %u",
                        c->name, vidk_block_name((VidkBlockSize)bs), i % f->grid_w[bs],
                        i / f->grid_w[bs], a.mv.x, a.mv.y, a.cost, a.sad, e.mv.x, e.mv.y,
                        e.cost, e.sad);
                return 1;
            }
        }
    }
    return 0;
}

static void check_backend(VidkBackend b, int threads, const char *level) {
    VidkContext *ctx = ck_open(b, threads);
    if (!ctx) return;
    if (ck_begin("me_search", level, NULL, NULL)) {
        for (int i = 0; i < n_cases; i++) {
            const MeCase *c = &cases[i];
            if (!c->expect.shapes) continue; /* the c backend failed (reported) */
            VidkMeField f;
            const int err = run_case(ctx, c, &f);
            if (err)
                ck_fail("%s: vidk_me_search failed: %s", c->name, vidk_strerror(err));
            else
                compare_case(c, &f);
            vidk_me_field_free(&f);
        }
        ck_end();
    }
    vidk_close(&ctx);
}

/* Frame-level numbers (indicative): CIF, R = 16, 16x16 only and all 41 partitions. */
static void bench_frames(void) {
    VidkPicture a, b;
    int real = !ck_load_y4m("container_352x288_30fps_15f.y4m", 0, 0, &a) &&
               !ck_load_y4m("container_352x288_30fps_15f.y4m", 1, 0, &b);
    if (!real) {
        vidk_picture_free(&a);
        if (vidk_picture_alloc(&a, 352, 288, VIDK_CHROMA_400, 8, 0) ||
            vidk_picture_alloc(&b, 352, 288, VIDK_CHROMA_400, 8, 0))
            return;
        for (int y = 0; y < 288; y++)
            for (int x = 0; x < 352; x++) {
                set_sample(&a, x, y, (int)(ck_rand() & 255));
                set_sample(&b, x, y, (int)(ck_rand() & 255));
            }
    }
    static const struct {
        const char *func;
        unsigned shapes;
    } fr[] = {
        {"me_frame_cif_r16_16x16", VIDK_ME_SHAPE(VIDK_BLOCK_16x16)},
        {"me_frame_cif_r16_h264", VIDK_ME_SHAPES_H264},
    };
    static const struct {
        VidkBackend b;
        int threads;
        const char *level;
    } bk[] = {
        {VIDK_BACKEND_C, 0, "c"},
        {VIDK_BACKEND_SIMD, 0, "simd"},
        {VIDK_BACKEND_THREADS, 0, "threads"},
        {VIDK_BACKEND_CUDA, 0, "cuda"},
    };
    for (size_t i = 0; i < sizeof(fr) / sizeof(fr[0]); i++) {
        VidkMeParams p;
        vidk_me_default_params(&p);
        p.range = 16, p.shapes = fr[i].shapes;
        VidkMeField e;
        if (vidk_me_field_alloc(&e, 352, 288, p.shapes)) continue;
        int have_e = 0;
        for (size_t k = 0; k < sizeof(bk) / sizeof(bk[0]); k++) {
            VidkContext *ctx = ck_open(bk[k].b, bk[k].threads);
            if (!ctx) continue;
            if (ck_begin(fr[i].func, bk[k].level, NULL, NULL)) {
                VidkMeField f;
                int err = vidk_me_field_alloc(&f, 352, 288, p.shapes);
                if (!err) err = vidk_me_search(ctx, &b, &a, &p, &f);
                if (err) {
                    ck_fail("vidk_me_search: %s", vidk_strerror(err));
                } else if (!have_e) {
                    /* the c level runs first: its field is the expectation */
                    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
                        if (e.res[bs])
                            memcpy(e.res[bs], f.res[bs],
                                   sizeof(VidkMeResult) * (size_t)e.grid_w[bs] * e.grid_h[bs]);
                    have_e = 1;
                } else {
                    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
                        if (e.res[bs] &&
                            memcmp(e.res[bs], f.res[bs],
                                   sizeof(VidkMeResult) * (size_t)e.grid_w[bs] * e.grid_h[bs]))
                            ck_fail("%s field differs from the c backend",
                                    vidk_block_name((VidkBlockSize)bs));
                }
                CK_BENCH(vidk_me_search(ctx, &b, &a, &p, &f));
                vidk_me_field_free(&f);
                ck_end();
            }
            vidk_close(&ctx);
        }
        vidk_me_field_free(&e);
    }
    vidk_picture_free(&a);
    vidk_picture_free(&b);
}

void ck_family_me(void) {
    check_dsp();

    make_cases();
    VidkContext *c = ck_open(VIDK_BACKEND_C, 0);
    if (!c) {
        ck_fail("cannot open the c backend");
        free_cases();
        return;
    }
    for (int i = 0; i < n_cases; i++) {
        const int err = run_case(c, &cases[i], &cases[i].expect);
        if (err) {
            ck_fail("%s: c backend failed: %s", cases[i].name, vidk_strerror(err));
            vidk_me_field_free(&cases[i].expect);
        }
    }
    vidk_close(&c);
    check_backend(VIDK_BACKEND_SIMD, 0, "simd");
    check_backend(VIDK_BACKEND_THREADS, 1, "threads1");
    check_backend(VIDK_BACKEND_THREADS, 2, "threads2");
    check_backend(VIDK_BACKEND_THREADS, 3, "threads3");
    check_backend(VIDK_BACKEND_THREADS, 0, "threads");
    check_backend(VIDK_BACKEND_CUDA, 0, "cuda");
    free_cases();

    bench_frames();
}
