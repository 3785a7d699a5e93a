/* checkkern: the SAD family.
 *
 * Block level: sad and sad_x4 of every block size at every ISA level against the C
 * versions, on random data, on worst cases (0 against 255, alternating extremes: the
 * largest sums), with odd, zero, tiny and negative strides, unaligned pointers and blocks
 * that end (or start) at a page that faults when touched, so that reading one sample
 * outside the W x H block crashes; then on blocks of real clips.
 * Frame level: vidk_sad_frame on every backend against the c backend, and the c backend
 * against a naive computation written here, on odd sizes and far displacements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "checkkern.h"
#include "internal.h"

/* ------------------------------------------------------------------ buffers */

/* Memory between two inaccessible pages (when mprotect works): a read past either end
 * faults even without AddressSanitizer. */
typedef struct Arena {
    uint8_t *mem, *lo;
    size_t size, page;
    int guarded;
} Arena;

static int arena_init(Arena *a, size_t size) {
    memset(a, 0, sizeof(*a));
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) pg = 4096;
    a->page = (size_t)pg;
    a->size = (size + a->page - 1) / a->page * a->page;
    void *m = NULL;
    if (posix_memalign(&m, a->page, a->size + 2 * a->page)) return -1;
    a->mem = m;
    a->lo = a->mem + a->page;
    memset(a->lo, 0, a->size);
    a->guarded =
        !mprotect(a->mem, a->page, PROT_NONE) && !mprotect(a->lo + a->size, a->page, PROT_NONE);
    return 0;
}

static void arena_free(Arena *a) {
    if (!a->mem) return;
    /* the allocator may write into the block when freeing it */
    mprotect(a->mem, a->page, PROT_READ | PROT_WRITE);
    mprotect(a->lo + a->size, a->page, PROT_READ | PROT_WRITE);
    free(a->mem);
    memset(a, 0, sizeof(*a));
}

/* Lowest and highest byte offsets (from the block pointer) a W x H block reads. */
static void block_extent(int w, int h, ptrdiff_t stride, ptrdiff_t *lo, ptrdiff_t *hi) {
    const ptrdiff_t last = (ptrdiff_t)(h - 1) * stride;
    *lo = last < 0 ? last : 0;
    *hi = (last > 0 ? last : 0) + w - 1;
}

/* Place n blocks at offsets d[i] from a common origin inside the arena: at its very
 * start, its very end (touching a guard page), or anywhere, with a random 0..63 shift.
 * Returns 0 when they do not fit. */
static int place_blocks(const Arena *a, int w, int h, ptrdiff_t stride, const ptrdiff_t *d,
                        int n, const uint8_t **out) {
    ptrdiff_t lo, hi, mn = PTRDIFF_MAX, mx = PTRDIFF_MIN;
    block_extent(w, h, stride, &lo, &hi);
    for (int i = 0; i < n; i++) {
        if (d[i] + lo < mn) mn = d[i] + lo;
        if (d[i] + hi > mx) mx = d[i] + hi;
    }
    const ptrdiff_t total = mx - mn + 1, room = (ptrdiff_t)a->size - total;
    if (room < 0) return 0;
    ptrdiff_t start;
    switch (ck_rand_range(0, 3)) {
    case 0:
        start = 0;
        break;
    case 1:
        start = room;
        break;
    case 2:
        start = room < 63 ? room : ck_rand_range(0, 63);
        break;
    default:
        start = ck_rand_range(0, (int)room);
        break;
    }
    for (int i = 0; i < n; i++)
        out[i] = a->lo + (start - mn + d[i]);
    return 1;
}

enum Pattern { PAT_RANDOM, PAT_ZERO, PAT_MAX, PAT_CHECKER, PAT_CHECKER_INV, PAT_EXTREMES };

static void fill_block(const uint8_t *cp, ptrdiff_t stride, int w, int h, enum Pattern pat) {
    uint8_t *p = (uint8_t *)(uintptr_t)cp; /* the blocks lie in our own writable arenas */
    for (int y = 0; y < h; y++, p += stride) {
        for (int x = 0; x < w; x++) {
            switch (pat) {
            case PAT_RANDOM:
                p[x] = (uint8_t)ck_rand();
                break;
            case PAT_ZERO:
                p[x] = 0;
                break;
            case PAT_MAX:
                p[x] = 255;
                break;
            case PAT_CHECKER:
                p[x] = (x + y) & 1 ? 255 : 0;
                break;
            case PAT_CHECKER_INV:
                p[x] = (x + y) & 1 ? 0 : 255;
                break;
            case PAT_EXTREMES:
                p[x] = ck_rand() & 1 ? 255 : 0;
                break;
            }
        }
    }
}

/* Random strides, mostly >= W (odd ones too), sometimes 0 or smaller than W (rows
 * overlap: allowed by the contract), negative half of the time. */
static ptrdiff_t rand_stride(int w, int allow_overlap) {
    ptrdiff_t s;
    switch (ck_rand_range(0, 7)) {
    case 0:
        s = w;
        break;
    case 1:
        s = 64;
        break;
    case 2:
        s = w + ck_rand_range(1, 3);
        break;
    case 3:
        if (allow_overlap) {
            s = ck_rand_range(0, w);
            break;
        }
        /* fall through */
    default:
        s = ck_rand_range(w, w + 300);
        break;
    }
    return ck_rand() & 1 ? -s : s;
}

/* ------------------------------------------------------------------ block level */

typedef struct SadEnv {
    Arena src, ref;
    /* real pictures: pairs (cur, ref) of luma planes with a margin */
    VidkPicture pics[16][2];
    char pic_names[16][64];
    int n_pics;
} SadEnv;

#define PIC_PAD 80
#define N_SYNTH 240 /* synthetic cases per function and level */
#define N_REAL  48  /* real-clip blocks per clip, function and level */

static const char *const pat_names[] = {"random",  "zero",        "max",
                                        "checker", "checker-inv", "extremes"};

/* Source and reference pattern of synthetic case i; expect_max: the sum must be
 * W*H*255 when the blocks neither overlap nor have overlapping rows. */
static void case_patterns(int i, enum Pattern *ps, enum Pattern *pr, int *expect_max,
                          int *identical) {
    static const enum Pattern tab[][2] = {
        {PAT_RANDOM, PAT_RANDOM},       {PAT_ZERO, PAT_MAX},          {PAT_MAX, PAT_ZERO},
        {PAT_CHECKER, PAT_CHECKER_INV}, {PAT_EXTREMES, PAT_EXTREMES}, {PAT_RANDOM, PAT_MAX},
        {PAT_ZERO, PAT_RANDOM},         {PAT_RANDOM, PAT_RANDOM},
    };
    const int k = i % 9;
    *identical = k == 8; /* ref is the source itself: the sum must be 0 */
    const int t = k == 8 ? 0 : k;
    *ps = tab[t][0];
    *pr = tab[t][1];
    *expect_max = t >= 1 && t <= 3;
}

static void check_sad_fn(SadEnv *e, VidkBlockSize bs, vidk_sad_fn ref_fn, vidk_sad_fn fn) {
    const int w = vidk_block_width(bs), h = vidk_block_height(bs);
    for (int i = 0; i < N_SYNTH; i++) {
        enum Pattern ps, pr;
        int expect_max, identical;
        case_patterns(i, &ps, &pr, &expect_max, &identical);
        const ptrdiff_t ss = rand_stride(w, !expect_max);
        const ptrdiff_t rs = identical ? ss : rand_stride(w, !expect_max);
        const ptrdiff_t d0 = 0;
        const uint8_t *s, *r;
        if (!place_blocks(&e->src, w, h, ss, &d0, 1, &s) ||
            !place_blocks(&e->ref, w, h, rs, &d0, 1, &r)) {
            ck_fail("test bug: %dx%d blocks do not fit", w, h);
            return;
        }
        fill_block(s, ss, w, h, ps);
        if (identical)
            r = s;
        else
            fill_block(r, rs, w, h, pr);
        const unsigned want = ref_fn(s, ss, r, rs), got = fn(s, ss, r, rs);
        if (got != want)
            ck_fail("%s vs %s, strides %td %td, src+%u ref+%u: %u, expected %u", pat_names[ps],
                    identical ? "itself" : pat_names[pr], ss, rs, (unsigned)((uintptr_t)s & 63),
                    (unsigned)((uintptr_t)r & 63), got, want);
        /* Independent expectations (the C reference is checked too). */
        if (expect_max && want != (unsigned)(w * h * 255))
            ck_fail("%s vs %s: %u, expected the maximum %d", pat_names[ps], pat_names[pr], want,
                    w * h * 255);
        if (identical && got != 0) ck_fail("block against itself: %u, expected 0", got);
    }
    for (int p = 0; p < e->n_pics; p++) {
        const VidkPicture *cur = &e->pics[p][0], *ref = &e->pics[p][1];
        if (cur->w < w || cur->h < h) continue;
        for (int i = 0; i < N_REAL; i++) {
            const int x = ck_rand_range(0, cur->w - w), y = ck_rand_range(0, cur->h - h);
            const int rx =
                vidk_iclip(x + ck_rand_range(-64, 64), -PIC_PAD, cur->w + PIC_PAD - w);
            const int ry =
                vidk_iclip(y + ck_rand_range(-64, 64), -PIC_PAD, cur->h + PIC_PAD - h);
            ptrdiff_t ss = cur->stride[0], rs = ref->stride[0];
            const uint8_t *s = (const uint8_t *)cur->data[0] + y * ss + x;
            const uint8_t *r = (const uint8_t *)ref->data[0] + ry * rs + rx;
            /* a quarter of the blocks read upside down (negative strides) */
            if (ck_rand_range(0, 3) == 0) s += (h - 1) * ss, ss = -ss;
            if (ck_rand_range(0, 3) == 0) r += (h - 1) * rs, rs = -rs;
            const unsigned want = ref_fn(s, ss, r, rs), got = fn(s, ss, r, rs);
            if (got != want)
                ck_fail("%s: block (%d,%d) vs (%d,%d), strides %td %td: %u, expected %u",
                        e->pic_names[p], x, y, rx, ry, ss, rs, got, want);
        }
    }
}

static void check_sad_x4_fn(SadEnv *e, VidkBlockSize bs, vidk_sad_x4_fn ref_fn,
                            vidk_sad_x4_fn fn) {
    const int w = vidk_block_width(bs), h = vidk_block_height(bs);
    for (int i = 0; i < N_SYNTH; i++) {
        enum Pattern ps, pr;
        int expect_max, identical;
        case_patterns(i, &ps, &pr, &expect_max, &identical);
        const ptrdiff_t ss = rand_stride(w, !expect_max), rs = rand_stride(w, !expect_max);
        const ptrdiff_t d0 = 0;
        ptrdiff_t d[4];
        /* candidates far apart (disjoint), or neighbours in a search window */
        const int apart = expect_max || (ck_rand() & 1);
        for (int k = 0; k < 4; k++)
            d[k] = apart ? k * (ptrdiff_t)(e->ref.size / 4) + ck_rand_range(0, 63)
                         : ck_rand_range(-8, 8) + ck_rand_range(-8, 8) * rs;
        const uint8_t *s, *r[4];
        if (!place_blocks(&e->src, w, h, ss, &d0, 1, &s) ||
            !place_blocks(&e->ref, w, h, rs, d, 4, r)) {
            ck_fail("test bug: %dx%d blocks do not fit", w, h);
            return;
        }
        fill_block(s, ss, w, h, ps);
        for (int k = 0; k < 4; k++)
            fill_block(r[k], rs, w, h, pr);
        /* the scores go between sentinels: exactly four values are written */
        unsigned want[4], got[6] = {0xdeadbeef, 1, 2, 3, 4, 0xfeedface};
        ref_fn(s, ss, r[0], r[1], r[2], r[3], rs, want);
        fn(s, ss, r[0], r[1], r[2], r[3], rs, got + 1);
        if (memcmp(want, got + 1, sizeof(want)))
            ck_fail("%s vs %s (%s), strides %td %td, src+%u: {%u %u %u %u}, expected "
                    "{%u %u %u %u}",
                    pat_names[ps], pat_names[pr], apart ? "apart" : "neighbours", ss, rs,
                    (unsigned)((uintptr_t)s & 63), got[1], got[2], got[3], got[4], want[0],
                    want[1], want[2], want[3]);
        if (got[0] != 0xdeadbeef || got[5] != 0xfeedface) ck_fail("wrote outside scores[0..3]");
        for (int k = 0; k < 4 && expect_max; k++)
            if (want[k] != (unsigned)(w * h * 255))
                ck_fail("%s vs %s: score %d is %u, expected the maximum %d", pat_names[ps],
                        pat_names[pr], k, want[k], w * h * 255);
        if (identical) {
            /* every candidate is the source itself */
            fn(s, ss, s, s, s, s, ss, got + 1);
            if (got[1] | got[2] | got[3] | got[4])
                ck_fail("block against itself: {%u %u %u %u}, expected 0", got[1], got[2],
                        got[3], got[4]);
        }
    }
    for (int p = 0; p < e->n_pics; p++) {
        const VidkPicture *cur = &e->pics[p][0], *ref = &e->pics[p][1];
        if (cur->w < w || cur->h < h) continue;
        for (int i = 0; i < N_REAL; i++) {
            const int x = ck_rand_range(0, cur->w - w), y = ck_rand_range(0, cur->h - h);
            ptrdiff_t ss = cur->stride[0], rs = ref->stride[0];
            const uint8_t *s = (const uint8_t *)cur->data[0] + y * ss + x, *r[4];
            /* four candidates around a random centre, as a search would ask */
            const int cx = x + ck_rand_range(-48, 48), cy = y + ck_rand_range(-48, 48);
            const int neg = ck_rand_range(0, 3) == 0;
            for (int k = 0; k < 4; k++) {
                const int rx =
                    vidk_iclip(cx + ck_rand_range(-16, 16), -PIC_PAD, cur->w + PIC_PAD - w);
                const int ry =
                    vidk_iclip(cy + ck_rand_range(-16, 16), -PIC_PAD, cur->h + PIC_PAD - h);
                r[k] = (const uint8_t *)ref->data[0] + (ry + (neg ? h - 1 : 0)) * rs + rx;
            }
            if (neg) rs = -rs;
            if (ck_rand_range(0, 3) == 0) s += (h - 1) * ss, ss = -ss;
            unsigned want[4], got[4];
            ref_fn(s, ss, r[0], r[1], r[2], r[3], rs, want);
            fn(s, ss, r[0], r[1], r[2], r[3], rs, got);
            if (memcmp(want, got, sizeof(want)))
                ck_fail("%s: block (%d,%d), strides %td %td: {%u %u %u %u}, expected "
                        "{%u %u %u %u}",
                        e->pic_names[p], x, y, ss, rs, got[0], got[1], got[2], got[3], want[0],
                        want[1], want[2], want[3]);
        }
    }
}

/* Bench inputs: a 64-stride source (as an encoder's current-block buffer) and a
 * reference window with a frame-like stride, all in L1. The stride is an odd multiple of
 * 64: a power of two would put every row in the same few cache sets. */
/* satd_avg's value written here from its definition (sad.h): each 4x4 block's difference
 * D against the rounded average, H D H^T with H the 4x4 Hadamard matrix by its entries,
 * (sum of |coefficients| + 1) / 2 per block. */
static unsigned naive_satd_avg(const uint8_t *s, ptrdiff_t ss, const uint8_t *a,
                               const uint8_t *b, ptrdiff_t rs, int w, int h) {
    static const int H[4][4] = {{1, 1, 1, 1}, {1, 1, -1, -1}, {1, -1, -1, 1}, {1, -1, 1, -1}};
    unsigned total = 0;
    for (int by = 0; by < h; by += 4)
        for (int bx = 0; bx < w; bx += 4) {
            int D[4][4];
            for (int y = 0; y < 4; y++)
                for (int x = 0; x < 4; x++) {
                    const ptrdiff_t o = (by + y) * rs + bx + x;
                    D[y][x] = s[(by + y) * ss + bx + x] - (a[o] + b[o] + 1) / 2;
                }
            unsigned sum = 0;
            for (int u = 0; u < 4; u++)
                for (int v = 0; v < 4; v++) {
                    int c = 0;
                    for (int y = 0; y < 4; y++)
                        for (int x = 0; x < 4; x++)
                            c += H[u][y] * D[y][x] * H[v][x];
                    sum += (unsigned)abs(c);
                }
            total += (sum + 1) / 2;
        }
    return total;
}

/* satd_avg of every size the refinement asks (w, h in {4, 8, 16}) against the C version and
 * the definition: synthetic blocks (the SAD patterns; the two references apart, neighbours,
 * or the same block), odd and negative strides, blocks at the arenas' guarded ends; real
 * clips' blocks against two nearby positions. */
static void check_satd_avg_fn(SadEnv *e, int w, int h, vidk_satd_avg_fn ref_fn,
                              vidk_satd_avg_fn fn) {
    for (int i = 0; i < N_SYNTH; i++) {
        enum Pattern ps, pr;
        int expect_max, identical;
        case_patterns(i, &ps, &pr, &expect_max, &identical);
        const ptrdiff_t ss = rand_stride(w, 1), rs = rand_stride(w, 1);
        const ptrdiff_t d0 = 0;
        ptrdiff_t d[2] = {0, 0};
        const int mode = ck_rand_range(0, 2); /* 0: the same block, 1: neighbours, 2: apart */
        d[1] = mode == 0   ? 0
               : mode == 1 ? ck_rand_range(-2, 2) + ck_rand_range(-2, 2) * rs
                           : (ptrdiff_t)(e->ref.size / 2) + ck_rand_range(0, 63);
        const uint8_t *s, *r[2];
        if (!place_blocks(&e->src, w, h, ss, &d0, 1, &s) ||
            !place_blocks(&e->ref, w, h, rs, d, 2, r)) {
            ck_fail("test bug: %dx%d blocks do not fit", w, h);
            return;
        }
        fill_block(s, ss, w, h, ps);
        fill_block(r[0], rs, w, h, pr);
        if (mode == 2) fill_block(r[1], rs, w, h, (enum Pattern)ck_rand_range(0, 5));
        const unsigned want = ref_fn(s, ss, r[0], r[1], rs, w, h);
        const unsigned got = fn(s, ss, r[0], r[1], rs, w, h);
        if (got != want)
            ck_fail("%dx%d %s vs %s (references %s), strides %td %td: %u, expected %u", w, h,
                    pat_names[ps], pat_names[pr],
                    mode == 0   ? "same"
                    : mode == 1 ? "near"
                                : "apart",
                    ss, rs, got, want);
        if (i < 24 && want != naive_satd_avg(s, ss, r[0], r[1], rs, w, h))
            ck_fail("%dx%d: the C version %u, the definition %u", w, h, want,
                    naive_satd_avg(s, ss, r[0], r[1], rs, w, h));
    }
    for (int p = 0; p < e->n_pics; p++) {
        const VidkPicture *cur = &e->pics[p][0], *ref = &e->pics[p][1];
        if (cur->w < w + 2 || cur->h < h + 2) continue;
        for (int i = 0; i < N_REAL; i++) {
            const int x = ck_rand_range(0, cur->w - w), y = ck_rand_range(0, cur->h - h);
            const int rx = vidk_iclip(x + ck_rand_range(-16, 16), 0, cur->w - w - 1);
            const int ry = vidk_iclip(y + ck_rand_range(-16, 16), 0, cur->h - h - 1);
            const ptrdiff_t ss = cur->stride[0], rs = ref->stride[0];
            const uint8_t *s = (const uint8_t *)cur->data[0] + y * ss + x;
            const uint8_t *r0 = (const uint8_t *)ref->data[0] + ry * rs + rx;
            const uint8_t *r1 = r0 + (ck_rand() & 1) + (ck_rand() & 1) * rs;
            const unsigned want = ref_fn(s, ss, r0, r1, rs, w, h);
            const unsigned got = fn(s, ss, r0, r1, rs, w, h);
            if (got != want)
                ck_fail("%s: %dx%d block (%d,%d) vs (%d,%d): %u, expected %u", e->pic_names[p],
                        w, h, x, y, rx, ry, got, want);
        }
    }
}

static uint8_t bench_src[64 * 64];
static uint8_t bench_ref[80 * 1088];
#define BENCH_RS 1088

static void check_blocks(SadEnv *e) {
    for (size_t i = 0; i < sizeof(bench_src); i++)
        bench_src[i] = (uint8_t)ck_rand();
    for (size_t i = 0; i < sizeof(bench_ref); i++)
        bench_ref[i] = (uint8_t)ck_rand();
    const uint8_t *bs_ = bench_src, *br = bench_ref + 8 * BENCH_RS + 8;
    unsigned sink[4];
    volatile unsigned vsink = 0;

    VidkSadDSP c, prev;
    vidk_sad_dsp_init(&c, 0);
    memset(&prev, 0, sizeof(prev));
    for (int l = 0; l < ck_level_count(); l++) {
        const CkLevel *lv = ck_level(l);
        VidkSadDSP d;
        vidk_sad_dsp_init(&d, lv->flags);
        for (int b = 0; b < VIDK_BLOCK_COUNT; b++) {
            const VidkBlockSize bs = (VidkBlockSize)b;
            char name[64];
            snprintf(name, sizeof(name), "sad_%s", vidk_block_name(bs));
            if (ck_begin(name, lv->name, (const void *)d.sad[bs],
                         l ? (const void *)prev.sad[bs] : NULL)) {
                check_sad_fn(e, bs, c.sad[bs], d.sad[bs]);
                CK_BENCH(vsink += d.sad[bs](bs_, 64, br, BENCH_RS));
                ck_end();
            }
            snprintf(name, sizeof(name), "sad_x4_%s", vidk_block_name(bs));
            if (ck_begin(name, lv->name, (const void *)d.sad_x4[bs],
                         l ? (const void *)prev.sad_x4[bs] : NULL)) {
                check_sad_x4_fn(e, bs, c.sad_x4[bs], d.sad_x4[bs]);
                /* the four diamond neighbours of a position */
                CK_BENCH(d.sad_x4[bs](bs_, 64, br - 1, br + 1, br - BENCH_RS, br + BENCH_RS,
                                      BENCH_RS, sink));
                ck_end();
            }
        }
        static const int sz[] = {4, 8, 16};
        for (int k = 0; k < 9; k++) {
            const int w = sz[k % 3], h = sz[k / 3];
            char name[64];
            snprintf(name, sizeof(name), "satd_avg_%dx%d", w, h);
            if (ck_begin(name, lv->name, (const void *)d.satd_avg,
                         l ? (const void *)prev.satd_avg : NULL)) {
                check_satd_avg_fn(e, w, h, c.satd_avg, d.satd_avg);
                CK_BENCH(vsink += d.satd_avg(bs_, 64, br, br + 1, BENCH_RS, w, h));
                ck_end();
            }
        }
        prev = d;
    }
    (void)vsink;
}

/* ------------------------------------------------------------------ frame level */

/* Straight from the definition in vidkern.h: blocks in raster order, samples outside
 * the picture (cur's partial blocks, displaced ref) take the nearest edge sample. */
static void naive_sad_frame(const VidkPicture *cur, const VidkPicture *ref, int mvx, int mvy,
                            VidkBlockSize bs, uint32_t *out) {
    const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
    const int nbx = (cur->w + bw - 1) / bw, nby = (cur->h + bh - 1) / bh;
    const uint8_t *c = cur->data[0], *r = ref->data[0];
    for (int by = 0; by < nby; by++)
        for (int bx = 0; bx < nbx; bx++) {
            uint32_t sum = 0;
            for (int y = by * bh; y < (by + 1) * bh; y++)
                for (int x = bx * bw; x < (bx + 1) * bw; x++) {
                    const int cy = vidk_iclip(y, 0, cur->h - 1),
                              cx = vidk_iclip(x, 0, cur->w - 1);
                    const int ry = vidk_iclip(y + mvy, 0, ref->h - 1);
                    const int rx = vidk_iclip(x + mvx, 0, ref->w - 1);
                    const int dd = c[cy * cur->stride[0] + cx] - r[ry * ref->stride[0] + rx];
                    sum += (uint32_t)(dd < 0 ? -dd : dd);
                }
            out[by * nbx + bx] = sum;
        }
}

typedef struct FrameCase {
    VidkPicture cur, ref;
    char name[80];
    int real;
} FrameCase;

static int rand_picture(FrameCase *fc, int w, int h) {
    memset(fc, 0, sizeof(*fc));
    const int pad = ck_rand_range(0, 1) * 16; /* margins must not matter */
    if (vidk_picture_alloc(&fc->cur, w, h, VIDK_CHROMA_400, 8, pad) < 0 ||
        vidk_picture_alloc(&fc->ref, w, h, VIDK_CHROMA_400, 8, pad) < 0) {
        vidk_picture_free(&fc->cur);
        return -1;
    }
    /* Mostly random; some pictures correlated (ref = cur + noise) or extreme. */
    const int kind = ck_rand_range(0, 3);
    for (int y = 0; y < h; y++) {
        uint8_t *c = (uint8_t *)fc->cur.data[0] + y * fc->cur.stride[0];
        uint8_t *r = (uint8_t *)fc->ref.data[0] + y * fc->ref.stride[0];
        for (int x = 0; x < w; x++) {
            switch (kind) {
            case 0:
            case 1:
                c[x] = (uint8_t)ck_rand();
                r[x] = (uint8_t)ck_rand();
                break;
            case 2:
                c[x] = (uint8_t)ck_rand();
                r[x] = (uint8_t)vidk_iclip(c[x] + ck_rand_range(-4, 4), 0, 255);
                break;
            default:
                c[x] = ck_rand() & 1 ? 255 : 0;
                r[x] = (uint8_t)(255 - c[x]);
                break;
            }
        }
    }
    snprintf(fc->name, sizeof(fc->name), "random %dx%d", w, h);
    return 0;
}

static void frame_mvs(const FrameCase *fc, int *mv, int n) {
    const int w = fc->cur.w, h = fc->cur.h;
    const int fixed[][2] = {{0, 0},  {4096, 4096},    {-4096, -4096},
                            {w, -h}, {-w + 1, h - 1}, {4096, -4096}};
    for (int i = 0; i < n; i++) {
        if (i < 2) { /* one small, one medium displacement */
            const int r = i ? 64 : 8;
            mv[2 * i] = ck_rand_range(-r, r);
            mv[2 * i + 1] = ck_rand_range(-r, r);
        } else if (i - 2 < (int)(sizeof(fixed) / sizeof(fixed[0]))) {
            mv[2 * i] = fixed[i - 2][0];
            mv[2 * i + 1] = fixed[i - 2][1];
        } else {
            mv[2 * i] = ck_rand_range(-4096, 4096);
            mv[2 * i + 1] = ck_rand_range(-4096, 4096);
        }
    }
}

/* One backend's SAD maps against the c backend's (ctx NULL: the c backend against the
 * naive computation). */
static void compare_frame(VidkContext *ctx, VidkContext *cref, const FrameCase *fc, int mvx,
                          int mvy, VidkBlockSize bs, uint32_t *want, uint32_t *got,
                          const char *what) {
    const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
    const int nbx = (fc->cur.w + bw - 1) / bw, n = nbx * ((fc->cur.h + bh - 1) / bh);
    int err;
    if (ctx) {
        if ((err = vidk_sad_frame(cref, &fc->cur, &fc->ref, mvx, mvy, bs, want)) < 0) {
            ck_fail("c backend: %s", vidk_strerror(err));
            return;
        }
    } else {
        naive_sad_frame(&fc->cur, &fc->ref, mvx, mvy, bs, want);
    }
    memset(got, 0xa5, (size_t)n * sizeof(*got));
    if ((err = vidk_sad_frame(ctx ? ctx : cref, &fc->cur, &fc->ref, mvx, mvy, bs, got)) < 0) {
        ck_fail("%s%s, %s, mv (%d,%d): error %s", what, fc->name, vidk_block_name(bs), mvx, mvy,
                vidk_strerror(err));
        return;
    }
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            ck_fail("%s%s, %s, mv (%d,%d): block (%d,%d) is %u, expected %u", what, fc->name,
                    vidk_block_name(bs), mvx, mvy, i % nbx, i / nbx, got[i], want[i]);
            return;
        }
}

/* Documented errors: every backend rejects the same bad arguments. */
static void check_frame_errors(VidkContext *ctx, const FrameCase *fc, uint32_t *out) {
    VidkPicture other;
    if (vidk_picture_alloc(&other, fc->cur.w + 1, fc->cur.h, VIDK_CHROMA_400, 8, 0) < 0) return;
    const struct {
        int got;
        const char *what;
    } t[] = {
        {vidk_sad_frame(ctx, &fc->cur, &fc->ref, 4097, 0, VIDK_BLOCK_8x8, out), "mvx 4097"},
        {vidk_sad_frame(ctx, &fc->cur, &fc->ref, 0, -4097, VIDK_BLOCK_8x8, out), "mvy -4097"},
        {vidk_sad_frame(ctx, &fc->cur, &fc->ref, 0, 0, VIDK_BLOCK_COUNT, out), "block size"},
        {vidk_sad_frame(ctx, &fc->cur, &other, 0, 0, VIDK_BLOCK_8x8, out), "size mismatch"},
        {vidk_sad_frame(ctx, &fc->cur, &fc->ref, 0, 0, VIDK_BLOCK_8x8, NULL), "NULL output"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (t[i].got != VIDK_ERR(EINVAL))
            ck_fail("%s: returned %d, expected VIDK_ERR(EINVAL)", t[i].what, t[i].got);
    vidk_picture_free(&other);
}

#define N_RAND_FRAMES 10

static void check_frames(SadEnv *e) {
    VidkContext *cref = ck_open(VIDK_BACKEND_C, 0);
    if (!cref) {
        ck_fail("cannot open the c backend");
        return;
    }
    /* Cases: fixed odd sizes, random sizes, then the real clips. */
    static const int sizes[][2] = {{1, 1}, {3, 5}, {4, 4}, {17, 9}, {63, 65}, {100, 37}};
    const int n_fixed = (int)(sizeof(sizes) / sizeof(sizes[0]));
    FrameCase *fcs = calloc(N_RAND_FRAMES + 16, sizeof(*fcs));
    int n_fc = 0;
    size_t max_blocks = 1;
    for (int i = 0; fcs && i < N_RAND_FRAMES; i++) {
        const int w = i < n_fixed ? sizes[i][0] : ck_rand_range(1, 200);
        const int h = i < n_fixed ? sizes[i][1] : ck_rand_range(1, 150);
        if (!rand_picture(&fcs[n_fc], w, h)) n_fc++;
    }
    for (int p = 0; fcs && p < e->n_pics && n_fc < N_RAND_FRAMES + 16; p++, n_fc++) {
        fcs[n_fc].cur = e->pics[p][0];
        fcs[n_fc].ref = e->pics[p][1];
        fcs[n_fc].real = 1;
        snprintf(fcs[n_fc].name, sizeof(fcs[n_fc].name), "%s", e->pic_names[p]);
    }
    for (int i = 0; i < n_fc; i++) {
        const size_t nb = (size_t)((fcs[i].cur.w + 3) / 4) * (size_t)((fcs[i].cur.h + 3) / 4);
        if (nb > max_blocks) max_blocks = nb;
    }
    uint32_t *want = malloc(max_blocks * sizeof(*want)),
             *got = malloc(max_blocks * sizeof(*got));
    if (!fcs || !want || !got) {
        ck_fail("out of memory");
        goto out;
    }

    /* The largest picture is the benchmark: 16x16 blocks, a small displacement. */
    int big = 0;
    for (int i = 1; i < n_fc; i++)
        if ((size_t)fcs[i].cur.w * (size_t)fcs[i].cur.h >
            (size_t)fcs[big].cur.w * (size_t)fcs[big].cur.h)
            big = i;

    static const struct {
        VidkBackend b;
        const char *name;
    } backends[] = {{VIDK_BACKEND_C, "c"},
                    {VIDK_BACKEND_SIMD, "simd"},
                    {VIDK_BACKEND_THREADS, "threads"},
                    {VIDK_BACKEND_CUDA, "cuda"}};
    for (size_t bi = 0; bi < sizeof(backends) / sizeof(backends[0]); bi++) {
        const VidkBackend b = backends[bi].b;
        if (!ck_backend_enabled(b) || !vidk_backend_available(b)) continue;
        if (b == VIDK_BACKEND_CUDA && vidk_cuda_device_count() <= 0) continue;
        if (!ck_begin("sad_frame", backends[bi].name, NULL, NULL)) continue;
        /* threads: 1, 2 and 3 workers (more threads than rows happens too) */
        const int n_variants = b == VIDK_BACKEND_THREADS ? 3 : 1;
        for (int v = 0; v < n_variants; v++) {
            VidkContext *ctx = b == VIDK_BACKEND_C ? NULL : ck_open(b, v + 1);
            if (b != VIDK_BACKEND_C && !ctx) {
                ck_fail("cannot open backend %s", backends[bi].name);
                continue;
            }
            char what[32] = "";
            if (b == VIDK_BACKEND_THREADS) snprintf(what, sizeof(what), "%d threads: ", v + 1);
            for (int i = 0; i < n_fc; i++) {
                const FrameCase *fc = &fcs[i];
                /* the naive reference is slow on HD frames: fewer displacements there */
                const int n_mv = fc->real ? (ctx ? 4 : 2) : 10;
                int mv[20];
                frame_mvs(fc, mv, n_mv);
                for (int bsi = 0; bsi < VIDK_BLOCK_COUNT; bsi++)
                    for (int m = 0; m < n_mv; m++)
                        compare_frame(ctx, cref, fc, mv[2 * m], mv[2 * m + 1],
                                      (VidkBlockSize)bsi, want, got, what);
            }
            check_frame_errors(ctx ? ctx : cref, &fcs[0], got);
            vidk_close(&ctx);
        }
        if (ck_bench_enabled() && n_fc) {
            VidkContext *ctx = b == VIDK_BACKEND_C ? NULL : ck_open(b, 0);
            VidkContext *bc = ctx ? ctx : cref;
            const FrameCase *fc = &fcs[big];
            CK_BENCH(vidk_sad_frame(bc, &fc->cur, &fc->ref, 3, -2, VIDK_BLOCK_16x16, got));
            vidk_close(&ctx);
        }
        ck_end();
    }
out:
    for (int i = 0; fcs && i < n_fc; i++)
        if (!fcs[i].real) {
            vidk_picture_free(&fcs[i].cur);
            vidk_picture_free(&fcs[i].ref);
        }
    free(fcs);
    free(want);
    free(got);
    vidk_close(&cref);
}

/* ------------------------------------------------------------------ entry */

/* Two consecutive frames of every clip (a single-frame clip against itself shifted by
 * the displacements), luma only matters. */
static void load_clips(SadEnv *e) {
    for (int i = 0; ck_video_clip(i) && e->n_pics < 16; i++) {
        const char *name = ck_video_clip(i);
        VidkPicture *pp = e->pics[e->n_pics];
        if (ck_load_y4m(name, 1, PIC_PAD, &pp[0]) < 0) {
            if (ck_load_y4m(name, 0, PIC_PAD, &pp[0]) < 0) {
                ck_fail("cannot read clip %s", name);
                continue;
            }
        }
        if (ck_load_y4m(name, 0, PIC_PAD, &pp[1]) < 0) {
            vidk_picture_free(&pp[0]);
            ck_fail("cannot read clip %s", name);
            continue;
        }
        snprintf(e->pic_names[e->n_pics], sizeof(e->pic_names[0]), "%s", name);
        e->n_pics++;
    }
}

void ck_family_sad(void) {
    SadEnv *e = calloc(1, sizeof(*e));
    if (!e || arena_init(&e->src, 32 * 1024) || arena_init(&e->ref, 128 * 1024)) {
        ck_fail("out of memory");
        if (e) arena_free(&e->src);
        free(e);
        return;
    }
    load_clips(e);
    check_blocks(e);
    check_frames(e);
    for (int p = 0; p < e->n_pics; p++) {
        vidk_picture_free(&e->pics[p][0]);
        vidk_picture_free(&e->pics[p][1]);
    }
    arena_free(&e->src);
    arena_free(&e->ref);
    free(e);
}
