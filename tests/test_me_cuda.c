/* GPU test of the CUDA motion search (src/cuda/me.cu): vidk_me_search on the cuda backend
 * against the c backend (the serial reference), every field of every requested shape
 * bit-exact, on random, flat (tie-heavy), extreme, worst-case and real pictures; every
 * shape mask; R = 0, 1, small, 64, 128 and VIDK_ME_MAX_RANGE; odd and tall sizes (several
 * upload bands); lambda with predictor fields (small, large, extreme: both the 32-bit-key
 * kernels and the generic one); 10, 12 and 16 bits; negative strides; the
 * VIDK_CUDA_ME_REF_IS_PREV_CUR sequence API (the reference is then not uploaded: a
 * garbage ref picture must give the same field); sequence mode (vidk_cuda_me_search_seq:
 * frames streamed with the next one sent ahead, junk pictures for the resident planes,
 * identical to per-pair calls on a second context and to c; fallbacks when nothing is
 * resident; one plane over PCIe per frame); the round-1 kernels (VIDK_ME_KCFG=r1) on a
 * reduced set next to the default ones; stage timing and PCIe byte counts.
 * HD frames are compared against the threads backend (itself checked against c by
 * checkkern) to keep the run short. A last section prints kernel times of the benchmark
 * configurations (information only; bench_me measures).
 *
 * Mismatches print the case, shape, block, got and want (the first few per case), so one
 * run is enough to locate a bug. Exits 77 (ctest SKIP) without a CUDA device unless
 * VIDK_REQUIRE_GPU=1. VIDK_UNDER_SANITIZER=1 runs a reduced set (compute-sanitizer).
 * Clips come from VIDK_VIDEO_DIR or the configured shared video folder.
 * VIDK_ME_CUDA_DRYRUN=threads (or simd) checks the harness itself on a machine without a
 * GPU: that backend stands in for cuda and the cuda-only sections are left out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda_backend.h"
#include "cuda/me_cuda.h"
#include "picio.h"
#include "test_util.h"
#include "vidkern/vidkern.h"

#ifndef VIDK_TEST_VIDEO_DIR
#define VIDK_TEST_VIDEO_DIR ""
#endif

static uint32_t seed;
static int under_sanitizer, dry_run;
static int n_cases, n_bad_cases;
static VidkContext *g_gpu, *g_c, *g_thr, *g_pair;

static int rnd(int lo, int hi) {
    return lo + (int)(test_rand(&seed) % (uint32_t)(hi - lo + 1));
}

/* ---- pictures ------------------------------------------------------------------------ */

static VidkPicture new_pic(int w, int h, int bd) {
    VidkPicture p;
    if (vidk_picture_alloc(&p, w, h, VIDK_CHROMA_400, bd, rnd(0, 2) * 8) < 0) {
        fprintf(stderr, "picture alloc %dx%d failed\n", w, h);
        exit(1);
    }
    return p;
}

static int get_s(const VidkPicture *p, int x, int y) {
    const uint8_t *row = (const uint8_t *)p->data[0] + (ptrdiff_t)y * p->stride[0];
    return p->bitdepth == 8 ? row[x] : ((const uint16_t *)row)[x];
}

static void set_s(VidkPicture *p, int x, int y, int v) {
    uint8_t *row = (uint8_t *)p->data[0] + (ptrdiff_t)y * p->stride[0];
    if (p->bitdepth == 8)
        row[x] = (uint8_t)v;
    else
        ((uint16_t *)row)[x] = (uint16_t)v;
}

enum { PAT_RANDOM, PAT_EXTREME, PAT_FLAT, PAT_TWO, PAT_TEXTURE, PAT_MAX, PAT_ZERO, PAT_COUNT };
static const char *const pat_names[PAT_COUNT] = {"random",  "extreme", "flat", "two-level",
                                                 "texture", "max",     "zero"};

static void fill(VidkPicture *p, int pat) {
    const int mx = (1 << p->bitdepth) - 1;
    const int base = rnd(0, mx);
    for (int y = 0; y < p->h; y++)
        for (int x = 0; x < p->w; x++) {
            int v;
            switch (pat) {
            case PAT_RANDOM:
                v = rnd(0, mx);
                break;
            case PAT_EXTREME:
                v = rnd(0, 1) * mx;
                break;
            case PAT_FLAT:
                v = base;
                break;
            case PAT_TWO:
                v = base ^ rnd(0, 1);
                break;
            case PAT_TEXTURE:
                v = ((x * 5 + y * 3 + (x * y >> 4)) & 63) * mx / 63;
                break;
            case PAT_MAX:
                v = mx;
                break;
            default:
                v = 0;
                break;
            }
            set_s(p, x, y, v);
        }
}

/* dst = src displaced by (dx, dy) (edge clamped) plus noise: real motion. */
static void fill_moved(VidkPicture *dst, const VidkPicture *src, int dx, int dy, int noise) {
    const int mx = (1 << src->bitdepth) - 1;
    for (int y = 0; y < dst->h; y++)
        for (int x = 0; x < dst->w; x++) {
            const int sx = TCLIP(x + dx, 0, src->w - 1), sy = TCLIP(y + dy, 0, src->h - 1);
            set_s(dst, x, y, TCLIP(get_s(src, sx, sy) + rnd(-noise, noise), 0, mx));
        }
}

/* ---- one comparison ------------------------------------------------------------------ */

/* Compare two fields; print the first mismatches. Returns the number of mismatches. */
static long compare_fields(const char *what, const VidkMeField *got, const VidkMeField *want,
                           unsigned shapes) {
    long bad = 0;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(shapes & VIDK_ME_SHAPE(bs))) continue;
        const int gw = want->grid_w[bs], gh = want->grid_h[bs];
        for (int i = 0; i < gw * gh; i++) {
            const VidkMeResult *g = &got->res[bs][i], *w = &want->res[bs][i];
            if (g->mv.x == w->mv.x && g->mv.y == w->mv.y && g->cost == w->cost &&
                g->sad == w->sad)
                continue;
            if (bad < 8)
                fprintf(
                    stderr,
                    "  MISMATCH %s: shape %s block (%d,%d) of %dx%d: got mv (%d,%d) cost %u "
                    "sad %u, want mv (%d,%d) cost %u sad %u\n",
                    what, vidk_block_name((VidkBlockSize)bs), i % gw, i / gw, gw, gh, g->mv.x,
                    g->mv.y, g->cost, g->sad, w->mv.x, w->mv.y, w->cost, w->sad);
            bad++;
        }
    }
    return bad;
}

/* Search on the GPU and on `refctx`, compare. flags: vidk_cuda_me_search_ex flags for the
 * GPU call (0: the public vidk_me_search). Returns 0 when identical. */
static int run_case_ex(const char *what, const VidkPicture *cur, const VidkPicture *ref,
                       const VidkPicture *gpu_ref, const VidkMeParams *p, VidkContext *refctx,
                       unsigned flags) {
    VidkMeField fg, fr;
    int err;
    long bad = 0;
    n_cases++;
    if ((err = vidk_me_field_alloc(&fg, cur->w, cur->h, p->shapes)) < 0 ||
        (err = vidk_me_field_alloc(&fr, cur->w, cur->h, p->shapes)) < 0) {
        fprintf(stderr, "field alloc: %s\n", vidk_strerror(err));
        exit(1);
    }
    /* The GPU field starts as garbage: every entry must be written. */
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        if (fg.res[bs])
            memset(fg.res[bs], 0xa5,
                   (size_t)fg.grid_w[bs] * (size_t)fg.grid_h[bs] * sizeof(VidkMeResult));
    err = flags ? vidk_cuda_me_search_ex(g_gpu, cur, gpu_ref, p, &fg, flags)
                : vidk_me_search(g_gpu, cur, gpu_ref, p, &fg);
    if (err < 0) {
        fprintf(stderr, "  FAIL %s: cuda search returned %d (%s)\n", what, err,
                vidk_strerror(err));
        bad = 1;
    } else if ((err = vidk_me_search(refctx, cur, ref, p, &fr)) < 0) {
        fprintf(stderr, "  FAIL %s: %s search returned %d (%s)\n", what,
                vidk_backend_name(vidk_get_backend(refctx)), err, vidk_strerror(err));
        bad = 1;
    } else {
        bad = compare_fields(what, &fg, &fr, p->shapes);
        if (bad) fprintf(stderr, "  FAIL %s: %ld mismatching block(s)\n", what, bad);
    }
    vidk_me_field_free(&fg);
    vidk_me_field_free(&fr);
    if (bad) {
        n_bad_cases++;
        test_failures++;
        if (test_failures > 40) {
            fprintf(stderr, "too many failures, stopping\n");
            exit(1);
        }
    }
    return bad != 0;
}

static int run_case(const char *what, const VidkPicture *cur, const VidkPicture *ref,
                    const VidkMeParams *p, VidkContext *refctx) {
    return run_case_ex(what, cur, ref, ref, p, refctx, 0);
}

static VidkMeParams params(int range, unsigned shapes, unsigned lambda, const VidkMv *pred) {
    VidkMeParams p;
    vidk_me_default_params(&p);
    p.range = range, p.shapes = shapes, p.lambda = lambda, p.pred = pred;
    return p;
}

static VidkMv *random_pred(int w, int h, int maxabs) {
    const int n = ((w + 15) / 16) * ((h + 15) / 16);
    VidkMv *v = malloc((size_t)n * sizeof(*v));
    if (!v) exit(1);
    for (int i = 0; i < n; i++) {
        v[i].x = (int16_t)rnd(-maxabs, maxabs);
        v[i].y = (int16_t)rnd(-maxabs, maxabs);
        if (maxabs >= 32767 && rnd(0, 3) == 0) v[i].x = v[i].y = INT16_MIN; /* extreme */
    }
    return v;
}

static const unsigned masks[] = {
    VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
    VIDK_ME_SHAPE(VIDK_BLOCK_4x4),
    VIDK_ME_SHAPES_H264,
    VIDK_ME_SHAPES_ALL,
    VIDK_ME_SHAPE(VIDK_BLOCK_32x32),
    VIDK_ME_SHAPE(VIDK_BLOCK_64x64),
    VIDK_ME_SHAPE(VIDK_BLOCK_16x16) | VIDK_ME_SHAPE(VIDK_BLOCK_32x32) |
        VIDK_ME_SHAPE(VIDK_BLOCK_64x64),
    VIDK_ME_SHAPE(VIDK_BLOCK_4x4) | VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
    VIDK_ME_SHAPE(VIDK_BLOCK_4x4) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64),
    VIDK_ME_SHAPE(VIDK_BLOCK_8x8) | VIDK_ME_SHAPE(VIDK_BLOCK_32x32),
    VIDK_ME_SHAPE(VIDK_BLOCK_8x4),
    VIDK_ME_SHAPE(VIDK_BLOCK_4x8),
    VIDK_ME_SHAPE(VIDK_BLOCK_8x8),
    VIDK_ME_SHAPE(VIDK_BLOCK_16x8),
    VIDK_ME_SHAPE(VIDK_BLOCK_8x16),
    /* the H.264 encoder's from level 3.1 (f41 without the thin shapes, F_NO4) */
    VIDK_ME_SHAPE(VIDK_BLOCK_8x8) | VIDK_ME_SHAPE(VIDK_BLOCK_16x8) |
        VIDK_ME_SHAPE(VIDK_BLOCK_8x16) | VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
};
#define NMASKS ((int)(sizeof(masks) / sizeof(masks[0])))

/* ---- sections ---------------------------------------------------------------------- */

/* Every shape mask alone, on one textured picture with real motion, R = 5. */
static void test_masks(void) {
    fprintf(stderr, "[masks] every shape, every listed mask\n");
    VidkPicture cur = new_pic(80, 72, 8), ref = new_pic(80, 72, 8);
    fill(&cur, PAT_TEXTURE);
    fill_moved(&ref, &cur, 3, -2, 3);
    char what[160];
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        const VidkMeParams p = params(5, VIDK_ME_SHAPE(bs), 0, NULL);
        snprintf(what, sizeof(what), "masks: %s alone", vidk_block_name((VidkBlockSize)bs));
        run_case(what, &cur, &ref, &p, g_c);
    }
    for (int m = 0; m < NMASKS; m++) {
        const VidkMeParams p = params(5, masks[m], 0, NULL);
        snprintf(what, sizeof(what), "masks: 0x%03x", masks[m]);
        run_case(what, &cur, &ref, &p, g_c);
    }
    vidk_picture_free(&cur);
    vidk_picture_free(&ref);
}

/* Small and odd sizes x ranges x patterns x masks (8-bit, lambda 0 and small). */
static void test_sizes_ranges(void) {
    fprintf(stderr, "[sizes x ranges] odd sizes, R = 0..33, all patterns\n");
    static const int sizes[][2] = {{16, 16},  {1, 1},   {1, 37},  {37, 1},  {17, 19},
                                   {15, 15},  {33, 47}, {64, 64}, {65, 65}, {100, 60},
                                   {129, 67}, {48, 33}, {8, 130}, {200, 24}};
    static const int ranges[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 33};
    const int nsz = (int)(sizeof(sizes) / sizeof(sizes[0]));
    const int nr = (int)(sizeof(ranges) / sizeof(ranges[0]));
    const int n = under_sanitizer ? 12 : 60;
    char what[200];
    for (int i = 0; i < n; i++) {
        const int w = sizes[i % nsz][0], h = sizes[i % nsz][1];
        const int R = ranges[(i * 7 + i / nsz) % nr];
        const int pat = i % PAT_COUNT;
        const unsigned shapes =
            i % 5 == 4 ? (unsigned)rnd(1, VIDK_ME_SHAPES_ALL) : masks[i % NMASKS];
        const unsigned lambda = i % 3 == 2 ? (unsigned)rnd(1, 20) : 0;
        VidkMv *pred = lambda && i % 2 ? random_pred(w, h, 12) : NULL;
        VidkPicture cur = new_pic(w, h, 8), ref = new_pic(w, h, 8);
        fill(&cur, pat);
        if (i % 2)
            fill_moved(&ref, &cur, rnd(-6, 6), rnd(-6, 6), pat == PAT_FLAT ? 0 : 2);
        else
            fill(&ref, (pat + i / PAT_COUNT) % PAT_COUNT);
        const VidkMeParams p = params(R, shapes, lambda, pred);
        snprintf(what, sizeof(what), "%dx%d R %d %s shapes 0x%03x lambda %u pred %d", w, h, R,
                 pat_names[pat], shapes, lambda, pred != NULL);
        run_case(what, &cur, &ref, &p, g_c);
        free(pred);
        vidk_picture_free(&cur);
        vidk_picture_free(&ref);
    }
}

/* Large ranges: 64 and 128 on small pictures, VIDK_ME_MAX_RANGE on tiny ones, 100 and 120
 * on 448x320. */
static void test_large_ranges(void) {
    fprintf(stderr, "[large ranges] R = 64, 100, 120, 128, %d\n", VIDK_ME_MAX_RANGE);
    char what[200];
    struct {
        int w, h, R;
        unsigned shapes;
        int bd;
    } cs[] = {
        {96, 80, 64, VIDK_ME_SHAPES_ALL, 8},
        {70, 50, 64, VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 8},
        {64, 48, 128, VIDK_ME_SHAPES_H264, 8},
        {40, 40, 128, VIDK_ME_SHAPE(VIDK_BLOCK_16x16) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64), 8},
        {24, 20, VIDK_ME_MAX_RANGE, VIDK_ME_SHAPES_ALL, 8},
        {16, 16, VIDK_ME_MAX_RANGE, VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 8},
        {16, 16, VIDK_ME_MAX_RANGE, VIDK_ME_SHAPES_ALL, 10},
        {200, 72, 64, VIDK_ME_SHAPE(VIDK_BLOCK_4x4), 8},
        {64, 48, 128, VIDK_ME_SHAPE(VIDK_BLOCK_4x4), 8},
        {24, 20, VIDK_ME_MAX_RANGE, VIDK_ME_SHAPE(VIDK_BLOCK_4x4), 8},
        /* enough groups for one row slice on a large GPU: the coding loop's shapes (wide
         * window, column passes) and the 41 partitions need the rows split to fit 48 kB */
        {448, 320, 100,
         VIDK_ME_SHAPE(VIDK_BLOCK_8x8) | VIDK_ME_SHAPE(VIDK_BLOCK_16x8) |
             VIDK_ME_SHAPE(VIDK_BLOCK_8x16) | VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
         8},
        {448, 320, 120, VIDK_ME_SHAPES_H264, 8},
    };
    const int n = (int)(sizeof(cs) / sizeof(cs[0]));
    for (int i = 0; i < n; i++) {
        if (under_sanitizer && i % 3) continue;
        VidkPicture cur = new_pic(cs[i].w, cs[i].h, cs[i].bd),
                    ref = new_pic(cs[i].w, cs[i].h, cs[i].bd);
        fill(&cur, i & 1 ? PAT_RANDOM : PAT_TEXTURE);
        fill_moved(&ref, &cur, rnd(-40, 40), rnd(-40, 40), 4);
        const VidkMeParams p = params(cs[i].R, cs[i].shapes, 0, NULL);
        snprintf(what, sizeof(what), "%dx%d %d-bit R %d shapes 0x%03x", cs[i].w, cs[i].h,
                 cs[i].bd, cs[i].R, cs[i].shapes);
        run_case(what, &cur, &ref, &p, g_c);
        vidk_picture_free(&cur);
        vidk_picture_free(&ref);
    }
}

/* Ties everywhere: flat and two-level pictures (every candidate may cost the same). */
static void test_ties(void) {
    fprintf(stderr, "[ties] flat and two-level pictures\n");
    char what[160];
    for (int i = 0; i < (under_sanitizer ? 3 : 10); i++) {
        const int w = rnd(16, 90), h = rnd(16, 70), R = rnd(0, 20);
        VidkPicture cur = new_pic(w, h, 8), ref = new_pic(w, h, 8);
        fill(&cur, i & 1 ? PAT_FLAT : PAT_TWO);
        fill(&ref, i & 2 ? PAT_FLAT : PAT_TWO);
        const unsigned lambda = i % 3 == 0 ? 0 : (unsigned)rnd(1, 10);
        VidkMv *pred = lambda ? random_pred(w, h, 20) : NULL;
        const VidkMeParams p =
            params(R, masks[i % NMASKS] | VIDK_ME_SHAPE(VIDK_BLOCK_4x4), lambda, pred);
        snprintf(what, sizeof(what), "ties %dx%d R %d shapes 0x%03x lambda %u", w, h, R,
                 p.shapes, lambda);
        run_case(what, &cur, &ref, &p, g_c);
        free(pred);
        vidk_picture_free(&cur);
        vidk_picture_free(&ref);
    }
}

/* Lambda and predictors: small (32-bit-key kernels), large and extreme (generic kernel),
 * worst-case SADs (max vs zero) where the cost bound decides the kernel. */
static void test_lambda(void) {
    fprintf(stderr, "[lambda] predictors and cost bounds\n");
    static const unsigned lambdas[] = {1, 4, 37, 300, 1000, 4000, VIDK_ME_MAX_LAMBDA};
    static const int pmax[] = {0, 12, 300, 32767};
    char what[200];
    const int n = under_sanitizer ? 6 : 28;
    for (int i = 0; i < n; i++) {
        const int w = rnd(20, 100), h = rnd(20, 80), R = rnd(1, 24);
        const unsigned lambda = lambdas[i % 7];
        const int pm = pmax[(i / 7) % 4];
        VidkMv *pred = pm ? random_pred(w, h, pm) : NULL;
        const int worst = i % 4 == 3;
        VidkPicture cur = new_pic(w, h, 8), ref = new_pic(w, h, 8);
        fill(&cur, worst ? PAT_MAX : PAT_TEXTURE);
        if (worst)
            fill(&ref, PAT_ZERO);
        else
            fill_moved(&ref, &cur, rnd(-8, 8), rnd(-8, 8), 6);
        const unsigned shapes = i % 2 ? VIDK_ME_SHAPES_ALL : masks[i % NMASKS];
        const VidkMeParams p = params(R, shapes, lambda, pred);
        snprintf(what, sizeof(what), "lambda %u pred max %d %dx%d R %d shapes 0x%03x%s", lambda,
                 pm, w, h, R, shapes, worst ? " worst-case" : "");
        run_case(what, &cur, &ref, &p, g_c);
        free(pred);
        vidk_picture_free(&cur);
        vidk_picture_free(&ref);
    }
}

/* 10, 12 and 16 bits (generic kernel). */
static void test_high_bitdepth(void) {
    fprintf(stderr, "[bit depth] 10, 12, 16 bits\n");
    static const int bds[] = {10, 12, 16, 9};
    char what[200];
    for (int i = 0; i < (under_sanitizer ? 3 : 12); i++) {
        const int bd = bds[i % 4], w = rnd(8, 70), h = rnd(8, 60), R = rnd(0, 12);
        VidkPicture cur = new_pic(w, h, bd), ref = new_pic(w, h, bd);
        const int pat = i % 3 == 0 ? PAT_EXTREME : i % 3 == 1 ? PAT_RANDOM : PAT_TEXTURE;
        fill(&cur, pat);
        if (i & 1)
            fill_moved(&ref, &cur, rnd(-5, 5), rnd(-5, 5), 3);
        else
            fill(&ref, pat == PAT_EXTREME ? PAT_EXTREME : PAT_RANDOM);
        const unsigned lambda = i % 4 == 3 ? (unsigned)rnd(1, 500) : 0;
        VidkMv *pred = lambda ? random_pred(w, h, 30) : NULL;
        const unsigned shapes = i % 2 ? VIDK_ME_SHAPES_ALL : masks[i % NMASKS];
        const VidkMeParams p = params(R, shapes, lambda, pred);
        snprintf(what, sizeof(what), "%d-bit %dx%d R %d shapes 0x%03x lambda %u", bd, w, h, R,
                 shapes, lambda);
        run_case(what, &cur, &ref, &p, g_c);
        free(pred);
        vidk_picture_free(&cur);
        vidk_picture_free(&ref);
    }
}

/* Tall pictures: several upload/search/download bands; and a negative-stride view. */
static void test_bands_strides(void) {
    fprintf(stderr, "[bands, strides] tall pictures, negative stride\n");
    char what[160];
    {
        VidkPicture cur = new_pic(40, 720, 8), ref = new_pic(40, 720, 8);
        fill(&cur, PAT_TEXTURE);
        fill_moved(&ref, &cur, 2, 7, 3);
        VidkMeParams p = params(under_sanitizer ? 6 : 24, VIDK_ME_SHAPES_ALL, 0, NULL);
        snprintf(what, sizeof(what), "40x720 R %d all shapes (bands)", p.range);
        run_case(what, &cur, &ref, &p, g_c);
        p = params(under_sanitizer ? 4 : 40, VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 0, NULL);
        snprintf(what, sizeof(what), "40x720 R %d 16x16 (bands)", p.range);
        run_case(what, &cur, &ref, &p, g_c);
        /* The same pictures seen bottom-up through negative strides. */
        VidkPicture vc = cur, vr = ref;
        vc.data[0] = (uint8_t *)cur.data[0] + (ptrdiff_t)(cur.h - 1) * cur.stride[0];
        vc.stride[0] = -cur.stride[0];
        vr.data[0] = (uint8_t *)ref.data[0] + (ptrdiff_t)(ref.h - 1) * ref.stride[0];
        vr.stride[0] = -ref.stride[0];
        vc.alloc = vr.alloc = NULL;
        p = params(9, VIDK_ME_SHAPES_H264, 3, NULL);
        run_case("40x720 negative strides R 9 H.264 lambda 3", &vc, &vr, &p, g_c);
        vidk_picture_free(&cur);
        vidk_picture_free(&ref);
    }
}

/* The sequence API: ref = the previous call's cur, not uploaded. */
static void test_sequence(void) {
    fprintf(stderr, "[sequence] VIDK_CUDA_ME_REF_IS_PREV_CUR\n");
    const int w = 100, h = 76;
    VidkPicture f[4], junk = new_pic(w, h, 8);
    fill(&junk, PAT_RANDOM);
    for (int i = 0; i < 4; i++) {
        f[i] = new_pic(w, h, 8);
        if (i == 0)
            fill(&f[i], PAT_TEXTURE);
        else
            fill_moved(&f[i], &f[i - 1], rnd(-4, 4), rnd(-4, 4), 3);
    }
    const VidkMeParams p = params(12, VIDK_ME_SHAPES_ALL, 0, NULL);
    char what[120];
    /* Frame 1 against 0 uploads both; 2 and 3 reuse the device copy of the previous cur,
     * passed a junk ref to prove it is not read. */
    run_case("sequence frame 1 (uploads both)", &f[1], &f[0], &p, g_c);
    for (int i = 2; i < 4; i++) {
        snprintf(what, sizeof(what), "sequence frame %d (ref = previous cur, junk ref passed)",
                 i);
        run_case_ex(what, &f[i], &f[i - 1], &junk, &p, g_c, VIDK_CUDA_ME_REF_IS_PREV_CUR);
    }
    /* Timing and byte counts of the last call: only cur crossed PCIe. */
    VidkCudaTiming t;
    int err = vidk_cuda_last_timing(g_gpu, &t);
    CHECK(err == 0);
    const size_t plane = (size_t)((w + 63) / 64 * 64) * (size_t)h;
    VidkMeField fld;
    int gw, gh;
    size_t nres = 0;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        vidk_me_grid(w, h, (VidkBlockSize)bs, &gw, &gh);
        nres += (size_t)gw * (size_t)gh;
    }
    if (!err) {
        fprintf(stderr,
                "  timing (ref kept): h2d %.3f ms %zu B, kernel %.3f ms, d2h %.3f ms %zu B\n",
                t.h2d_ms, t.h2d_bytes, t.kernel_ms, t.d2h_ms, t.d2h_bytes);
        CHECK_EQ_U(t.h2d_bytes, plane);
        CHECK_EQ_U(t.d2h_bytes, nres * sizeof(VidkMeResult));
        CHECK(t.kernel_ms > 0);
    }
    /* Without the flag both planes are uploaded. */
    CHECK(vidk_me_field_alloc(&fld, w, h, p.shapes) == 0);
    CHECK(vidk_me_search(g_gpu, &f[3], &f[2], &p, &fld) == 0);
    err = vidk_cuda_last_timing(g_gpu, &t);
    CHECK(err == 0);
    if (!err) CHECK_EQ_U(t.h2d_bytes, 2 * plane);
    /* Bad flags and a field of the wrong size are refused. */
    CHECK(vidk_cuda_me_search_ex(g_gpu, &f[3], &f[2], &p, &fld, 2u) == VIDK_ERR(EINVAL));
    vidk_me_field_free(&fld);
    CHECK(vidk_me_field_alloc(&fld, w + 16, h, p.shapes) == 0);
    CHECK(vidk_cuda_me_search_ex(g_gpu, &f[3], &f[2], &p, &fld, 0) == VIDK_ERR(EINVAL));
    vidk_me_field_free(&fld);
    for (int i = 0; i < 4; i++)
        vidk_picture_free(&f[i]);
    vidk_picture_free(&junk);
}

/* Sequence mode (vidk_cuda_me_search_seq): frames streamed with the next frame sent
 * during the search and both planes resident. Every field must equal a per-pair call
 * (vidk_me_search on cuda, both pictures uploaded) and the c backend; junk pictures are
 * passed for the resident planes to prove they are not read. Also: the fallbacks (flags
 * without a resident copy, a call of another size in between) and the PCIe byte counts
 * (one plane per frame). */
static VidkContext *open_backend(VidkBackend b);
static int seq_call(const char *what, const VidkPicture *cur, const VidkPicture *ref,
                    const VidkPicture *gcur, const VidkPicture *gref, const VidkPicture *next,
                    const VidkMeParams *p, unsigned flags) {
    VidkMeField fs, fp, fc;
    long bad = 0;
    int err;
    n_cases++;
    if (vidk_me_field_alloc(&fs, cur->w, cur->h, p->shapes) < 0 ||
        vidk_me_field_alloc(&fp, cur->w, cur->h, p->shapes) < 0 ||
        vidk_me_field_alloc(&fc, cur->w, cur->h, p->shapes) < 0)
        exit(1);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        if (fs.res[bs])
            memset(fs.res[bs], 0xa5,
                   (size_t)fs.grid_w[bs] * (size_t)fs.grid_h[bs] * sizeof(VidkMeResult));
    err = vidk_cuda_me_search_seq(g_gpu, gcur, gref, next, p, &fs, flags);
    if (err < 0) {
        fprintf(stderr, "  FAIL %s: sequence call returned %d (%s)\n", what, err,
                vidk_strerror(err));
        bad = 1;
    } else if ((err = vidk_me_search(g_c, cur, ref, p, &fc)) < 0) {
        fprintf(stderr, "  FAIL %s: c search returned %d\n", what, err);
        bad = 1;
    } else {
        bad = compare_fields(what, &fs, &fc, p->shapes);
        if (bad) fprintf(stderr, "  FAIL %s: %ld block(s) differ from c\n", what, bad);
        /* The per-pair call on a second device context (the sequence context's resident
         * planes stay untouched). */
        if (!bad && g_pair) {
            if ((err = vidk_me_search(g_pair, cur, ref, p, &fp)) < 0) {
                fprintf(stderr, "  FAIL %s: per-pair cuda call returned %d\n", what, err);
                bad = 1;
            } else if ((bad = compare_fields(what, &fs, &fp, p->shapes)) != 0) {
                fprintf(stderr, "  FAIL %s: %ld block(s) differ from the per-pair call\n", what,
                        bad);
            }
        }
    }
    vidk_me_field_free(&fs);
    vidk_me_field_free(&fp);
    vidk_me_field_free(&fc);
    if (bad) {
        n_bad_cases++;
        test_failures++;
    }
    return bad != 0;
}

static void test_seq_stream(void) {
    fprintf(stderr, "[sequence stream] vidk_cuda_me_search_seq, next frame sent ahead\n");
    static const struct {
        int w, h, R;
        unsigned shapes;
        unsigned lambda;
    } cfg[] = {
        {100, 76, 12, VIDK_ME_SHAPES_ALL, 0},
        {67, 41, 7, VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 3},
        {208, 300, 9, VIDK_ME_SHAPES_H264, 0}, /* several bands */
        {320, 200, 20, VIDK_ME_SHAPE(VIDK_BLOCK_4x4), 0},
        {96, 64, 6, VIDK_ME_SHAPE(VIDK_BLOCK_16x16) | VIDK_ME_SHAPE(VIDK_BLOCK_64x64), 0},
    };
    const unsigned both = VIDK_CUDA_ME_REF_IS_PREV_CUR | VIDK_CUDA_ME_CUR_IS_PREV_NEXT;
    char what[200];
    g_pair = open_backend(VIDK_BACKEND_CUDA);
    if (!g_pair) fprintf(stderr, "  (no second cuda context: compared with c only)\n");
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        if (under_sanitizer && c > 1) break;
        const int w = cfg[c].w, h = cfg[c].h, nf = 6;
        VidkPicture f[6], junk = new_pic(w, h, 8);
        fill(&junk, PAT_RANDOM);
        for (int i = 0; i < nf; i++) {
            f[i] = new_pic(w, h, 8);
            if (i == 0)
                fill(&f[i], PAT_TEXTURE);
            else
                fill_moved(&f[i], &f[i - 1], rnd(-5, 5), rnd(-5, 5), 3);
        }
        VidkMv *pred = cfg[c].lambda ? random_pred(w, h, 6) : NULL;
        const VidkMeParams p = params(cfg[c].R, cfg[c].shapes, cfg[c].lambda, pred);
        /* Frame 1: both uploaded, frame 2 sent ahead. Then steady state with junk. */
        snprintf(what, sizeof(what), "seq %dx%d R %d shapes 0x%03x frame 1 (uploads, sends 2)",
                 w, h, p.range, p.shapes);
        seq_call(what, &f[1], &f[0], &f[1], &f[0], &f[2], &p, 0);
        for (int i = 2; i < nf; i++) {
            snprintf(what, sizeof(what),
                     "seq %dx%d R %d shapes 0x%03x frame %d (resident, junk)", w, h, p.range,
                     p.shapes, i);
            seq_call(what, &f[i], &f[i - 1], &junk, &junk, i + 1 < nf ? &f[i + 1] : NULL, &p,
                     both);
            VidkCudaTiming t;
            if (vidk_cuda_last_timing(g_gpu, &t) == 0 && i + 1 < nf) {
                const size_t plane = (size_t)((w + 63) / 64 * 64) * (size_t)h;
                const size_t pb =
                    pred ? (size_t)((w + 15) / 16) * ((h + 15) / 16) * sizeof(VidkMv) : 0;
                CHECK_EQ_U(t.h2d_bytes, plane + pb); /* only the next frame crosses PCIe */
            }
        }
        /* Frame 5 had no next: a CUR_IS_PREV_NEXT call now has no resident cur and must
         * upload the one it is given; its ref (frame 5) is still resident. */
        snprintf(what, sizeof(what), "seq %dx%d: cur flag without a sent frame (fallback)", w,
                 h);
        seq_call(what, &f[0], &f[5], &f[0], &junk, &f[1], &p, both);
        snprintf(what, sizeof(what), "seq %dx%d: after the fallback, sent frame used", w, h);
        seq_call(what, &f[1], &f[0], &junk, &junk, NULL, &p, both);
        free(pred);
        for (int i = 0; i < nf; i++)
            vidk_picture_free(&f[i]);
        vidk_picture_free(&junk);
    }
    /* A call of another size in between drops the resident copies: flags then fall back
     * to the pictures passed (here the real ones). */
    {
        VidkPicture a = new_pic(90, 60, 8), b = new_pic(90, 60, 8), c2 = new_pic(90, 60, 8);
        VidkPicture o1 = new_pic(130, 70, 8), o2 = new_pic(130, 70, 8);
        fill(&a, PAT_TEXTURE), fill_moved(&b, &a, 2, 1, 2), fill_moved(&c2, &b, -3, 2, 2);
        fill(&o1, PAT_RANDOM), fill(&o2, PAT_RANDOM);
        const VidkMeParams p = params(8, VIDK_ME_SHAPES_H264, 0, NULL);
        seq_call("seq size change: first", &b, &a, &b, &a, &c2, &p, 0);
        seq_call("seq size change: other size", &o2, &o1, &o2, &o1, NULL, &p, both);
        seq_call("seq size change: flags after it (fallback)", &c2, &b, &c2, &b, NULL, &p,
                 both);
        VidkMeField fld;
        CHECK(vidk_me_field_alloc(&fld, 90, 60, p.shapes) == 0);
        CHECK(vidk_cuda_me_search_seq(g_gpu, &c2, &b, &o1, &p, &fld, 0) == VIDK_ERR(EINVAL));
        CHECK(vidk_cuda_me_search_seq(g_gpu, &c2, &b, NULL, &p, &fld, 4u) == VIDK_ERR(EINVAL));
        vidk_me_field_free(&fld);
        vidk_picture_free(&a), vidk_picture_free(&b), vidk_picture_free(&c2);
        vidk_picture_free(&o1), vidk_picture_free(&o2);
    }
    vidk_close(&g_pair);
}

/* The default is the round-3 f41 kernels (every other section runs them); the first- and
 * second-round kernels stay selectable (VIDK_ME_KCFG=r1, r2) for A/B measurements: a
 * reduced run of the sections on each (r2 also ties, large ranges, the sequence stream and
 * the real clips), then back to the default. */
static void test_masks(void);
static void test_sizes_ranges(void);
static void test_lambda(void);
static int test_real(void);
static void test_kernel_configs(void) {
    fprintf(stderr, "[kernel config r1] VIDK_ME_KCFG=r1\n");
    setenv("VIDK_ME_KCFG", "r1", 1);
    test_masks();
    if (!under_sanitizer) {
        test_sizes_ranges();
        test_lambda();
    }
    fprintf(stderr, "[kernel config r2] VIDK_ME_KCFG=r2\n");
    setenv("VIDK_ME_KCFG", "r2", 1);
    test_masks();
    test_ties();
    if (!under_sanitizer) {
        test_sizes_ranges();
        test_lambda();
        test_large_ranges();
        test_seq_stream();
        (void)test_real();
    }
    unsetenv("VIDK_ME_KCFG");
}

/* ---- real clips ------------------------------------------------------------------- */

/* Frames `first` and `first + gap` of a clip (luma) into out[0] and out[1]; gap 0 reads
 * one frame. Returns the number of frames stored (0 when the clip is missing). */
static int read_frames(const char *dir, const char *name, int first, int gap,
                       VidkPicture *out) {
    char path[1024], err[256];
    VioReader *r = NULL;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) return 0;
    int got = 0;
    const int want = gap ? 2 : 1;
    VidkPicture tmp;
    if (vio_picture_alloc(&tmp, vio_reader_format(r)) < 0) {
        vio_reader_close(&r);
        return 0;
    }
    for (int i = 0; got < want && i <= first + gap; i++) {
        if (vio_reader_read(r, &tmp) != 1) break;
        if (i != first && i != first + gap) continue;
        if (vio_picture_alloc(&out[got], vio_reader_format(r)) < 0) break;
        for (int y = 0; y < tmp.h; y++)
            memcpy((uint8_t *)out[got].data[0] + (ptrdiff_t)y * out[got].stride[0],
                   (const uint8_t *)tmp.data[0] + (ptrdiff_t)y * tmp.stride[0], (size_t)tmp.w);
        got++;
    }
    vidk_picture_free(&tmp);
    vio_reader_close(&r);
    return got;
}

static int test_real(void) {
    const char *env = getenv("VIDK_VIDEO_DIR");
    const char *dir = env && *env ? env : VIDK_TEST_VIDEO_DIR;
    fprintf(stderr, "[real clips] %s\n", *dir ? dir : "(none configured)");
    if (!*dir) {
        test_video_missing("no clip folder configured: real-clip part not run");
        return 0;
    }
    static const struct {
        const char *file;
        int first, gap, R;
        unsigned shapes;
    } clips[] = {
        {"basketballpass_416x240_50fps_100f.y4m", 10, 1, 32, VIDK_ME_SHAPES_ALL},
        {"basketballpass_416x240_50fps_100f.y4m", 60, 2, 16, VIDK_ME_SHAPES_H264},
        {"cars_320x240_30fps_30f.y4m", 5, 1, 24, VIDK_ME_SHAPES_ALL},
        {"container_352x288_30fps_15f.y4m", 3, 4, 16,
         VIDK_ME_SHAPE(VIDK_BLOCK_16x16) | VIDK_ME_SHAPE(VIDK_BLOCK_4x4)},
        {"akiyo_176x144_30fps_30f.y4m", 0, 5, 64, VIDK_ME_SHAPES_ALL},
        {"basketballpass_416x240_50fps_100f.y4m", 30, 1, 64, VIDK_ME_SHAPE(VIDK_BLOCK_4x4)},
    };
    int used = 0;
    char what[200];
    for (size_t i = 0; i < sizeof(clips) / sizeof(clips[0]); i++) {
        if (under_sanitizer && i) break;
        VidkPicture fr[2];
        const int n = read_frames(dir, clips[i].file, clips[i].first, clips[i].gap, fr);
        if (n < 2) {
            for (int k = 0; k < n; k++)
                vidk_picture_free(&fr[k]);
            if (n == 0) continue;
            fprintf(stderr, "  %s: too few frames\n", clips[i].file);
            test_failures++;
            continue;
        }
        /* Search frame first + gap against frame first. */
        VidkPicture *cur = &fr[1], *ref = &fr[0];
        for (int lam = 0; lam < 2; lam++) {
            VidkMv *pred = lam ? random_pred(cur->w, cur->h, 8) : NULL;
            const VidkMeParams p =
                params(under_sanitizer ? 8 : clips[i].R, clips[i].shapes, lam ? 6 : 0, pred);
            snprintf(what, sizeof(what), "%s frames %d->%d R %d shapes 0x%03x lambda %u",
                     clips[i].file, clips[i].first + clips[i].gap, clips[i].first, p.range,
                     p.shapes, p.lambda);
            run_case(what, cur, ref, &p, g_c);
            free(pred);
        }
        used++;
        for (int k = 0; k < n; k++)
            vidk_picture_free(&fr[k]);
    }
    /* HD single frames against a displaced, noisy copy (threads backend as reference). */
    static const char *const hd[] = {"kristenandsara_1280x720_60fps_1f.y4m",
                                     "darkscene_1920x1080_24fps_1f.y4m"};
    for (int i = 0; i < 2 && !under_sanitizer && g_thr; i++) {
        VidkPicture fr;
        if (read_frames(dir, hd[i], 0, 0, &fr) != 1) continue;
        VidkPicture moved;
        if (vidk_picture_alloc(&moved, fr.w, fr.h, VIDK_CHROMA_400, 8, 0) < 0) exit(1);
        fill_moved(&moved, &fr, 9, -6, 2);
        VidkMeParams p = params(16, VIDK_ME_SHAPES_ALL, 0, NULL);
        snprintf(what, sizeof(what), "%s vs displaced copy R 16 all shapes (vs threads)",
                 hd[i]);
        run_case(what, &fr, &moved, &p, g_thr);
        p = params(64, VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 0, NULL);
        snprintf(what, sizeof(what), "%s vs displaced copy R 64 16x16 (vs threads)", hd[i]);
        run_case(what, &fr, &moved, &p, g_thr);
        p = params(64, VIDK_ME_SHAPE(VIDK_BLOCK_4x4), 0, NULL);
        snprintf(what, sizeof(what), "%s vs displaced copy R 64 4x4 (vs threads)", hd[i]);
        run_case(what, &fr, &moved, &p, g_thr);
        if (i == 1) {
            p = params(64, VIDK_ME_SHAPES_H264, 4, NULL);
            snprintf(what, sizeof(what), "%s R 64 H.264 lambda 4 (vs threads)", hd[i]);
            run_case(what, &fr, &moved, &p, g_thr);
        }
        vidk_picture_free(&moved);
        vidk_picture_free(&fr);
        used++;
    }
    if (env && *env && !used) {
        fprintf(stderr, "  VIDK_VIDEO_DIR=%s has no readable clip\n", env);
        test_failures++;
    } else if (!used) {
        test_video_missing("no readable clip: real-clip part not run");
    }
    return used;
}

/* Same call twice: identical fields (no state leaks between calls). */
static void test_repeat(void) {
    fprintf(stderr, "[repeat] determinism\n");
    VidkPicture cur = new_pic(150, 90, 8), ref = new_pic(150, 90, 8);
    fill(&cur, PAT_TEXTURE);
    fill_moved(&ref, &cur, -3, 5, 5);
    const VidkMeParams p = params(20, VIDK_ME_SHAPES_ALL, 2, NULL);
    VidkMeField a, b;
    CHECK(vidk_me_field_alloc(&a, 150, 90, p.shapes) == 0);
    CHECK(vidk_me_field_alloc(&b, 150, 90, p.shapes) == 0);
    CHECK(vidk_me_search(g_gpu, &cur, &ref, &p, &a) == 0);
    CHECK(vidk_me_search(g_gpu, &cur, &ref, &p, &b) == 0);
    if (compare_fields("repeat", &a, &b, p.shapes)) test_failures++;
    vidk_me_field_free(&a);
    vidk_me_field_free(&b);
    vidk_picture_free(&cur);
    vidk_picture_free(&ref);
}

/* ---- information: kernel times of the benchmark configurations ------------------- */

static void perf_probe(void) {
    static const struct {
        const char *name;
        int R;
        unsigned shapes;
    } cfg[] = {
        {"16x16 R=64", 64, VIDK_ME_SHAPE(VIDK_BLOCK_16x16)},
        {"4x4 R=64", 64, VIDK_ME_SHAPE(VIDK_BLOCK_4x4)},
        {"41 partitions R=64", 64, VIDK_ME_SHAPES_H264},
        {"all shapes R=64", 64, VIDK_ME_SHAPES_ALL},
        {"16x16 R=16", 16, VIDK_ME_SHAPE(VIDK_BLOCK_16x16)},
    };
    VidkPicture cur = new_pic(1920, 1080, 8), ref = new_pic(1920, 1080, 8);
    fill(&cur, PAT_RANDOM);
    fill_moved(&ref, &cur, 5, 3, 4);
    fprintf(stderr, "[perf probe] 1920x1080, device timing, median of 7 (information only)\n");
    for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
        const VidkMeParams p = params(cfg[c].R, cfg[c].shapes, 0, NULL);
        VidkMeField fld;
        double k[7], tot[7], wall[7];
        VidkCudaTiming t;
        memset(&t, 0, sizeof(t));
        if (vidk_me_field_alloc(&fld, cur.w, cur.h, p.shapes) < 0) return;
        int ok = vidk_me_search(g_gpu, &cur, &ref, &p, &fld) == 0; /* warm-up */
        for (int i = 0; i < 7 && ok; i++) {
            struct timespec t0, t1;
            timespec_get(&t0, TIME_UTC);
            ok = vidk_me_search(g_gpu, &cur, &ref, &p, &fld) == 0;
            timespec_get(&t1, TIME_UTC);
            ok = ok && vidk_cuda_last_timing(g_gpu, &t) == 0;
            k[i] = t.kernel_ms, tot[i] = t.total_ms;
            wall[i] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                      (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
            for (int j = i; j > 0 && wall[j] < wall[j - 1]; j--) {
                const double x = wall[j];
                wall[j] = wall[j - 1];
                wall[j - 1] = x;
            }
            for (int j = i; j > 0 && k[j] < k[j - 1]; j--) {
                const double x = k[j];
                k[j] = k[j - 1];
                k[j - 1] = x;
            }
            for (int j = i; j > 0 && tot[j] < tot[j - 1]; j--) {
                const double x = tot[j];
                tot[j] = tot[j - 1];
                tot[j - 1] = x;
            }
        }
        if (ok) {
            const double ads = 1920.0 * 1088.0 * (2.0 * cfg[c].R + 1) * (2.0 * cfg[c].R + 1);
            fprintf(stderr,
                    "  %-20s kernel %.3f ms (search + finalize), device total %.3f ms, call "
                    "(host wall) %.3f ms, h2d %zu B, d2h %zu B; %.1f T byte-AD/s = %.0f%% of "
                    "64 T/s\n",
                    cfg[c].name, k[3], tot[3], wall[3], t.h2d_bytes, t.d2h_bytes,
                    ads / (k[3] * 1e-3) / 1e12, 100.0 * ads / (k[3] * 1e-3) / 64e12);
        } else {
            fprintf(stderr, "  %s: search failed\n", cfg[c].name);
            test_failures++;
        }
        vidk_me_field_free(&fld);
    }
    vidk_picture_free(&cur);
    vidk_picture_free(&ref);
}

static VidkContext *open_backend(VidkBackend b) {
    VidkSettings s;
    VidkContext *ctx = NULL;
    vidk_default_settings(&s);
    s.backend = b;
    return vidk_open(&ctx, &s) == 0 ? ctx : NULL;
}

int main(void) {
    const char *req = getenv("VIDK_REQUIRE_GPU");
    const char *san = getenv("VIDK_UNDER_SANITIZER");
    const char *dry = getenv("VIDK_ME_CUDA_DRYRUN");
    under_sanitizer = san && *san && *san != '0';
    dry_run = dry && *dry;
    if (vidk_cuda_device_count() == 0 && !dry_run) {
        if (req && *req == '1') {
            fprintf(stderr, "test_me_cuda: no CUDA device but VIDK_REQUIRE_GPU=1\n");
            return 1;
        }
        fprintf(stderr, "test_me_cuda: no CUDA device, skipped\n");
        return 77;
    }
    seed = test_seed();
    if (dry_run) {
        const int b = vidk_backend_from_name(dry);
        g_gpu = b > 0 ? open_backend((VidkBackend)b) : NULL;
        fprintf(stderr, "test_me_cuda: DRY RUN, backend '%s' stands in for cuda\n", dry);
    } else {
        g_gpu = open_backend(VIDK_BACKEND_CUDA);
    }
    g_c = open_backend(VIDK_BACKEND_C);
    g_thr = open_backend(VIDK_BACKEND_THREADS);
    if (!g_gpu || !g_c) {
        fprintf(stderr, "test_me_cuda: cannot open the cuda or c backend\n");
        return 1;
    }
    test_masks();
    test_sizes_ranges();
    test_ties();
    test_lambda();
    test_high_bitdepth();
    test_large_ranges();
    test_bands_strides();
    if (!dry_run) test_sequence();
    if (!dry_run) test_seq_stream();
    if (!dry_run) test_kernel_configs();
    test_repeat();
    test_real();
    fprintf(stderr, "%d case(s) compared, %d failed\n", n_cases, n_bad_cases);
    if (!under_sanitizer && !dry_run && !getenv("VIDK_ME_CUDA_NO_PERF")) perf_probe();
    vidk_close(&g_thr);
    vidk_close(&g_c);
    vidk_close(&g_gpu);
    return test_finish("test_me_cuda");
}
