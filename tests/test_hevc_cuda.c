/* GPU test of the CUDA HEVC transform family (src/cuda/hevc.cu): the cuda backend against
 * the c backend through the public batch API (vidk_hevc_batch_forward / _inverse on a cuda
 * context) and the internal entry points with explicit options, bit-exact on every output:
 * forward levels, per-TB non-zero counts, nz_count / nz_index / nz_lev, the return value;
 * inverse residuals (no picture) and reconstructed pictures.
 *
 * Inputs: random full-range residuals, extreme ones (every value at +-(2^bd - 1), values
 * outside that domain that must be clipped, DCT basis patterns), sparse and small ones
 * (all-zero TBs, TBs with one non-zero level), real-video residuals (frame minus previous
 * frame, minus a shifted frame; env VIDK_VIDEO_DIR or the configured shared folder);
 * inverse levels over the whole int16 range (every 16-bit clip: dequantisation, the
 * normative clip after stage 1, the residual clip), levels from the forward path; bit
 * depths 8, 10, 12 with qP 0..max; flat, default and random scaling lists; 4x4 DCT, DST
 * and transform skip; TB counts that are not tile multiples, single TBs, empty lists;
 * pictures in 4:0:0, 4:2:0 and 4:4:4 with mixed TB trees, prediction samples at 0, max and
 * (16-bit) above the maximum; overlapping TBs (the host-add fallback); DCI 4K frames of
 * all-32x32 and all-4x4 TBs (plus all-8x8, all-16x16); every combination of the internal
 * hooks (tensor cores on/off, 1..8 streams, chunk counts, dense/compacted download, host
 * staging overlap, fused/host reconstruction) gives identical bits; kernel-only runs;
 * stage timing and PCIe byte counts (empty TBs do not cross PCIe back); argument errors.
 *
 * Mismatches print the case, size, TB index, record, position, got and want (the first
 * few per case). Exits 77 (ctest SKIP) without a CUDA device unless VIDK_REQUIRE_GPU=1.
 * `--emu` runs the same checks (smaller sizes, fewer combinations) through the host
 * emulation of the kernels (vidk_cuda_hevc_emu_*), which needs no GPU (ctest
 * hevc_cuda_emu). VIDK_UNDER_SANITIZER=1 leaves out the largest frames. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "cuda/cuda_backend.h"
#include "picio.h"
#include "test_util.h"
#include "vidkern/vidkern.h"
#if VIDK_HAVE_CUDA
#include "cuda/hevc_cuda.h"
#endif

#ifndef VIDK_TEST_VIDEO_DIR
#define VIDK_TEST_VIDEO_DIR ""
#endif

#if VIDK_HAVE_CUDA

static uint32_t seed;
static int g_emu, under_sanitizer;
/* g_host: the context the emulation runs on - a simd context, so the host-side steps
 * (e.g. the SIMD add of residual mode) are the ones a cuda context runs. */
static VidkContext *g_c, *g_gpu, *g_host;
static VidkContext *open_backend(VidkBackend be, int streams);
static long n_cases, n_bad_cases;

static double test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int rnd(int lo, int hi) {
    return lo + (int)(test_rand(&seed) % (uint32_t)(hi - lo + 1));
}

/* ---- batches ------------------------------------------------------------------------- */

enum { P_RANDOM, P_EXTREME, P_OUTSIDE, P_BASIS, P_SPARSE, P_SMALL, P_ZERO, P_COUNT };
static const char *const pat_name[P_COUNT] = {"random", "extreme", "outside", "basis",
                                              "sparse", "small",   "zero"};

static int tb_len(int s) {
    return 16 << (2 * s);
}

/* A residual block of pattern pat (bit depth bd). */
static void fill_res(int16_t *r, int s, int bd, int pat) {
    const int n = 4 << s, len = n * n, mx = (1 << bd) - 1;
    switch (pat) {
    case P_RANDOM:
        for (int i = 0; i < len; i++)
            r[i] = (int16_t)rnd(-mx, mx);
        break;
    case P_EXTREME:
        for (int i = 0; i < len; i++)
            r[i] = (int16_t)(rnd(0, 1) ? mx : -mx);
        break;
    case P_OUTSIDE: /* outside the domain: clipped to +-mx first */
        for (int i = 0; i < len; i++) {
            const int k = rnd(0, 3);
            r[i] = (int16_t)(k == 0 ? 32767 : k == 1 ? -32768 : rnd(-32768, 32767));
        }
        break;
    case P_BASIS: { /* sign of a basis function pair at full amplitude: maximal coefficients */
        const int ku = rnd(0, n - 1), kv = rnd(0, n - 1), step = 32 / n;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                const int a = vidk_hevc_t32[kv * step][y] * vidk_hevc_t32[ku * step][x];
                r[y * n + x] = (int16_t)(a >= 0 ? mx : -mx);
            }
        break;
    }
    case P_SPARSE:
        memset(r, 0, (size_t)len * 2);
        if (rnd(0, 2) == 0)
            for (int k = rnd(1, 3); k > 0; k--)
                r[rnd(0, len - 1)] = (int16_t)rnd(-mx, mx);
        break;
    case P_SMALL:
        for (int i = 0; i < len; i++)
            r[i] = (int16_t)rnd(-3, 3);
        break;
    default:
        memset(r, 0, (size_t)len * 2);
    }
}

/* Levels for the inverse: full int16 range, extremes, sparse, small. */
enum { L_FULL, L_EXTREME, L_SPARSE, L_SMALL, L_ONE, L_COUNT };
static const char *const lpat_name[L_COUNT] = {"full", "extreme", "sparse", "small", "one"};

static void fill_lev(int16_t *l, int s, int pat) {
    const int len = tb_len(s);
    switch (pat) {
    case L_FULL:
        for (int i = 0; i < len; i++)
            l[i] = (int16_t)rnd(-32768, 32767);
        break;
    case L_EXTREME: {
        const int k = rnd(0, 2);
        for (int i = 0; i < len; i++)
            l[i] = (int16_t)(k == 0 ? 32767 : k == 1 ? -32768 : (rnd(0, 1) ? 32767 : -32768));
        break;
    }
    case L_SPARSE:
        memset(l, 0, (size_t)len * 2);
        if (rnd(0, 2) == 0)
            for (int k = rnd(1, 2); k > 0; k--)
                l[rnd(0, len - 1)] = (int16_t)rnd(-300, 300);
        break;
    case L_SMALL:
        for (int i = 0; i < len; i++)
            l[i] = (int16_t)(rnd(0, 3) ? 0 : rnd(-2, 2));
        break;
    default:
        memset(l, 0, (size_t)len * 2);
        l[rnd(0, len - 1)] = (int16_t)rnd(-32768, 32767);
    }
}

/* qp modes: random 0..max, fixed value. */
static VidkHevcTb make_tb(int s, int bd, int qp, int plane) {
    VidkHevcTb t;
    memset(&t, 0, sizeof(t));
    t.plane = (uint8_t)(plane >= 0 ? plane : rnd(0, 2));
    t.qp = (uint8_t)(qp >= 0 ? qp : rnd(0, VIDK_HEVC_MAX_QP(bd)));
    unsigned f = (unsigned)rnd(0, 3); /* INTRA, ISLICE */
    if (s == 0) {
        const int k = rnd(0, 2);
        if (k == 1) f |= VIDK_HEVC_TB_DST;
        if (k == 2) f |= VIDK_HEVC_TB_TSKIP;
    }
    t.flags = (uint8_t)f;
    return t;
}

static void batch_reserve_all(VidkHevcBatch *b, const uint32_t cnt[4]) {
    for (int s = 0; s < 4; s++)
        if (vidk_hevc_batch_reserve(b, (VidkHevcTbSize)s, cnt[s] ? cnt[s] : 1) < 0) {
            fprintf(stderr, "batch reserve failed\n");
            exit(1);
        }
}

/* Random batch: counts per size, residuals of pattern pat (-1: a random pattern per TB),
 * qp -1 = random per TB, uniform: every TB of a size has the same record. */
static void make_batch(VidkHevcBatch *b, int bd, const uint32_t cnt[4], int pat, int qp,
                       int uniform) {
    vidk_hevc_batch_init(b, bd);
    batch_reserve_all(b, cnt);
    for (int s = 0; s < 4; s++) {
        VidkHevcTbList *l = &b->list[s];
        const VidkHevcTb u = make_tb(s, bd, qp, -1);
        for (uint32_t i = 0; i < cnt[s]; i++) {
            l->tb[i] = uniform ? u : make_tb(s, bd, qp, -1);
            l->tb[i].x = (uint16_t)((i % 64) << (2 + s));
            l->tb[i].y = (uint16_t)((i / 64 % 64) << (2 + s));
            fill_res(l->res + (size_t)i * tb_len(s), s, bd,
                     pat >= 0 ? pat : rnd(0, P_COUNT - 1));
        }
        l->count = cnt[s];
    }
}

static void batch_clone(VidkHevcBatch *d, const VidkHevcBatch *src) {
    uint32_t cnt[4];
    for (int s = 0; s < 4; s++)
        cnt[s] = src->list[s].count;
    vidk_hevc_batch_init(d, src->bitdepth);
    d->scaling_lists = src->scaling_lists;
    d->compact_levels = src->compact_levels;
    d->scaling = src->scaling;
    batch_reserve_all(d, cnt);
    for (int s = 0; s < 4; s++) {
        const size_t n = cnt[s], len = (size_t)tb_len(s);
        VidkHevcTbList *l = &d->list[s];
        const VidkHevcTbList *o = &src->list[s];
        if (n) {
            memcpy(l->tb, o->tb, n * sizeof(VidkHevcTb));
            memcpy(l->res, o->res, n * len * 2);
            memcpy(l->lev, o->lev, n * len * 2);
        }
        l->count = (uint32_t)n;
        /* poison the outputs: a value the device path forgets to write shows */
        memset(l->nnz, 0xA7, n * 2);
        memset(l->nz_index, 0xA7, n * 4);
        memset(l->nz_lev, 0xA7, n * len * 2);
        l->nz_count = 0xA7A7A7A7u;
    }
}

static void scaling_random(VidkHevcScaling *sc) {
    uint8_t *p = (uint8_t *)sc;
    for (size_t i = 0; i < sizeof(*sc); i++)
        p[i] = (uint8_t)(rnd(0, 3) ? rnd(1, 255) : rnd(1, 3));
}

/* 0: flat, 1: default lists, 2: random factors (including m = 1: the largest scales). */
static void set_scaling(VidkHevcBatch *b, int mode) {
    b->scaling_lists = mode != 0;
    if (mode == 1) vidk_hevc_scaling_default(&b->scaling);
    if (mode == 2) scaling_random(&b->scaling);
}

/* ---- device calls -------------------------------------------------------------------------
 */

static int dev_forward(VidkHevcBatch *b, const VidkHevcCudaOpts *o) {
    if (g_emu) return vidk_cuda_hevc_emu_forward(g_host, b, o);
    if (!o) return vidk_hevc_batch_forward(g_gpu, b);
    return vidk_cuda_hevc_forward(g_gpu, b, o);
}

static int dev_inverse(VidkHevcBatch *b, VidkPicture *pic, const VidkHevcCudaOpts *o) {
    if (g_emu) return vidk_cuda_hevc_emu_inverse(g_host, b, pic, o);
    if (!o) return vidk_hevc_batch_inverse(g_gpu, b, pic);
    return vidk_cuda_hevc_inverse(g_gpu, b, pic, o);
}

static void opts_str(char *buf, size_t n, const VidkHevcCudaOpts *o) {
    if (!o) {
        snprintf(buf, n, "public API / defaults");
        return;
    }
    snprintf(
        buf, n,
        "tensor %d streams %d chunks %d compact %d fused %d overlap_host %d host_threads %d "
        "direct %d tiles4 %d alloc4 %d pinned ranges %d",
        o->tensor, o->streams, o->chunks, o->compact, o->fused, o->overlap_host,
        o->host_threads, o->direct, o->tiles4, o->alloc4, o->emu_pinned_count);
}

/* ---- comparisons ----------------------------------------------------------------------------
 */

static void print_tb(const VidkHevcTb *t) {
    fprintf(stderr, "      record: x %d y %d plane %d qp %d flags 0x%x\n", t->x, t->y, t->plane,
            t->qp, t->flags);
}

/* Compare a forward result with the reference; returns the mismatch count. */
static long cmp_forward(const char *name, const VidkHevcCudaOpts *o, const VidkHevcBatch *got,
                        int rg, const VidkHevcBatch *want, int rw) {
    long bad = 0;
    char os[160];
    opts_str(os, sizeof(os), o);
    n_cases++;
    if (rg != rw) {
        fprintf(stderr, "  %s [%s, bd %d]: returned %d, c backend %d\n", name, os,
                want->bitdepth, rg, rw);
        bad++;
    }
    for (int s = 0; s < 4 && rw >= 0 && rg >= 0; s++) {
        const VidkHevcTbList *g = &got->list[s], *w = &want->list[s];
        const int n = 4 << s, len = n * n;
        if (g->nz_count != w->nz_count) {
            if (bad++ < 4)
                fprintf(stderr, "  %s [%s, bd %d] %dx%d: nz_count %u, want %u\n", name, os,
                        want->bitdepth, n, n, g->nz_count, w->nz_count);
        }
        for (uint32_t i = 0; i < w->count; i++) {
            if (g->nnz[i] != w->nnz[i] && bad++ < 4) {
                fprintf(stderr, "  %s [%s, bd %d] %dx%d TB %u: nnz %u, want %u\n", name, os,
                        want->bitdepth, n, n, i, g->nnz[i], w->nnz[i]);
                print_tb(&w->tb[i]);
            }
            const int16_t *gl = g->lev + (size_t)i * len, *wl = w->lev + (size_t)i * len;
            for (int k = 0; k < len; k++)
                if (gl[k] != wl[k]) {
                    if (bad++ < 4) {
                        fprintf(stderr,
                                "  %s [%s, bd %d] %dx%d TB %u level (row %d, col %d): %d, want "
                                "%d\n",
                                name, os, want->bitdepth, n, n, i, k / n, k % n, gl[k], wl[k]);
                        print_tb(&w->tb[i]);
                        fprintf(stderr, "      residual row %d:", k / n);
                        for (int x = 0; x < n && x < 16; x++)
                            fprintf(stderr, " %d",
                                    w->res[(size_t)i * len + (size_t)(k / n * n + x)]);
                        fprintf(stderr, "\n");
                    }
                    break;
                }
        }
        const uint32_t nz = w->nz_count < g->nz_count ? w->nz_count : g->nz_count;
        for (uint32_t j = 0; j < nz; j++) {
            if (g->nz_index[j] != w->nz_index[j]) {
                if (bad++ < 4)
                    fprintf(stderr, "  %s %dx%d: nz_index[%u] = %u, want %u\n", name, n, n, j,
                            g->nz_index[j], w->nz_index[j]);
                break;
            }
            if (!want->compact_levels) {
                /* nz_lev is not an output: it must be left alone (the poison) */
                if (g->nz_lev && (uint16_t)g->nz_lev[(size_t)j * len] != 0xA7A7u && bad++ < 4)
                    fprintf(stderr, "  %s %dx%d: nz_lev written with compact_levels 0\n", name,
                            n, n);
                continue;
            }
            if (memcmp(g->nz_lev + (size_t)j * len, w->nz_lev + (size_t)j * len,
                       (size_t)len * 2)) {
                if (bad++ < 4)
                    fprintf(stderr, "  %s %dx%d: nz_lev of entry %u differs\n", name, n, n, j);
                break;
            }
        }
    }
    if (bad) {
        n_bad_cases++;
        fprintf(stderr, "  FAIL %s [%s]: %ld mismatch(es)\n", name, os, bad);
        test_failures++;
    }
    return bad;
}

/* Reference result of b (c backend) in *ref; returns its return value. */
static int ref_forward(VidkHevcBatch *ref, const VidkHevcBatch *b) {
    batch_clone(ref, b);
    return vidk_hevc_batch_forward(g_c, ref);
}

static void fwd_check(const char *name, const VidkHevcBatch *b, const VidkHevcBatch *ref,
                      int rw, const VidkHevcCudaOpts *o) {
    VidkHevcBatch dev;
    if (rw < 0) { /* every batch here is valid: a failing reference means a broken test */
        fprintf(stderr, "  %s: the c backend failed (%d)\n", name, rw);
        test_failures++;
    }
    batch_clone(&dev, b);
    const int rg = dev_forward(&dev, o);
    cmp_forward(name, o, &dev, rg, ref, rw);
    vidk_hevc_batch_free(&dev);
}

static void fwd_case(const char *name, const VidkHevcBatch *b, const VidkHevcCudaOpts *o) {
    VidkHevcBatch ref;
    const int rw = ref_forward(&ref, b);
    fwd_check(name, b, &ref, rw, o);
    vidk_hevc_batch_free(&ref);
}

/* ---- pictures ------------------------------------------------------------------------------
 */

static int pic_get(const VidkPicture *p, int pl, int x, int y) {
    const uint8_t *row = (const uint8_t *)p->data[pl] + (ptrdiff_t)y * p->stride[pl];
    return p->bitdepth == 8 ? row[x] : ((const uint16_t *)(const void *)row)[x];
}

static void pic_set(VidkPicture *p, int pl, int x, int y, int v) {
    uint8_t *row = (uint8_t *)p->data[pl] + (ptrdiff_t)y * p->stride[pl];
    if (p->bitdepth == 8)
        row[x] = (uint8_t)v;
    else
        ((uint16_t *)(void *)row)[x] = (uint16_t)v;
}

static int n_planes(const VidkPicture *p) {
    return p->chroma == VIDK_CHROMA_400 ? 1 : 3;
}

/* Prediction: random, extremes, or (16-bit) values above the maximum sometimes. */
static void fill_pic(VidkPicture *p, int mode) {
    const int mx = (1 << p->bitdepth) - 1;
    for (int pl = 0; pl < n_planes(p); pl++) {
        int w, h;
        vidk_picture_plane_size(p, pl, &w, &h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int v = mode == 0 ? rnd(0, mx) : mode == 1 ? (rnd(0, 1) ? mx : 0) : rnd(0, mx);
                if (mode == 2 && p->bitdepth > 8 && rnd(0, 7) == 0) v = rnd(mx, 65535);
                pic_set(p, pl, x, y, v);
            }
    }
}

static void pic_copy(VidkPicture *d, const VidkPicture *s) {
    if (vidk_picture_alloc(d, s->w, s->h, s->chroma, s->bitdepth, s->pad) < 0) {
        fprintf(stderr, "picture alloc failed\n");
        exit(1);
    }
    for (int pl = 0; pl < n_planes(s); pl++) {
        int w, h;
        vidk_picture_plane_size(s, pl, &w, &h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                pic_set(d, pl, x, y, pic_get(s, pl, x, y));
    }
}

/* A quadtree of TBs over every plane (no overlap): sizes 4..32, records per TB. */
static void add_tree(VidkHevcBatch *b, int pl, int x, int y, int log2n, int w, int h, int qp) {
    if (x >= w || y >= h) return;
    const int n = 1 << log2n;
    if (log2n > 5 || (log2n > 2 && (x + n > w || y + n > h || rnd(0, 2) == 0))) {
        const int m = n / 2;
        add_tree(b, pl, x, y, log2n - 1, w, h, qp);
        add_tree(b, pl, x + m, y, log2n - 1, w, h, qp);
        add_tree(b, pl, x, y + m, log2n - 1, w, h, qp);
        add_tree(b, pl, x + m, y + m, log2n - 1, w, h, qp);
        return;
    }
    if (x + n > w || y + n > h) return;
    const int s = log2n - 2;
    VidkHevcTb t = make_tb(s, b->bitdepth, qp, pl);
    t.x = (uint16_t)x;
    t.y = (uint16_t)y;
    if (pl && (t.flags & VIDK_HEVC_TB_DST)) t.flags &= (uint8_t)~VIDK_HEVC_TB_DST;
    if (vidk_hevc_batch_add(b, (VidkHevcTbSize)s, &t, NULL) < 0) {
        fprintf(stderr, "batch add failed\n");
        exit(1);
    }
}

static void make_tree_batch(VidkHevcBatch *b, const VidkPicture *p, int qp) {
    vidk_hevc_batch_init(b, p->bitdepth);
    for (int pl = 0; pl < n_planes(p); pl++) {
        int w, h;
        vidk_picture_plane_size(p, pl, &w, &h);
        for (int y = 0; y < h; y += 64)
            for (int x = 0; x < w; x += 64)
                add_tree(b, pl, x, y, 6, w, h, qp);
    }
}

static long cmp_pics(const char *name, const char *os, const VidkPicture *g,
                     const VidkPicture *w) {
    long bad = 0;
    for (int pl = 0; pl < n_planes(w); pl++) {
        int pw, ph;
        vidk_picture_plane_size(w, pl, &pw, &ph);
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                const int a = pic_get(g, pl, x, y), c = pic_get(w, pl, x, y);
                if (a != c && bad++ < 4)
                    fprintf(stderr, "  %s [%s, bd %d] plane %d (%d, %d): %d, want %d\n", name,
                            os, w->bitdepth, pl, x, y, a, c);
            }
    }
    return bad;
}

/* Inverse of b into pic (or residuals when pic is NULL): device vs c. */
static void inv_check(const char *name, const VidkHevcBatch *b, const VidkPicture *pic,
                      const VidkHevcCudaOpts *o, const VidkHevcBatch *ref,
                      const VidkPicture *refpic, int rw) {
    VidkHevcBatch dev;
    VidkPicture dp;
    char os[160];
    long bad = 0;
    opts_str(os, sizeof(os), o);
    n_cases++;
    if (rw < 0) {
        fprintf(stderr, "  %s: the c backend failed (%d)\n", name, rw);
        test_failures++;
    }
    batch_clone(&dev, b);
    for (int s = 0; s < 4; s++)
        memset(dev.list[s].res, 0x5A, (size_t)dev.list[s].count * (size_t)tb_len(s) * 2);
    if (pic) pic_copy(&dp, pic);
    const int rg = dev_inverse(&dev, pic ? &dp : NULL, o);
    if (rg != rw) {
        fprintf(stderr, "  %s [%s]: returned %d, c backend %d\n", name, os, rg, rw);
        bad++;
    } else if (rw >= 0) {
        if (pic) {
            bad += cmp_pics(name, os, &dp, refpic);
        } else {
            for (int s = 0; s < 4; s++) {
                const int n = 4 << s, len = n * n;
                for (uint32_t i = 0; i < ref->list[s].count; i++) {
                    const int16_t *gr = dev.list[s].res + (size_t)i * len,
                                  *wr = ref->list[s].res + (size_t)i * len;
                    for (int k = 0; k < len; k++)
                        if (gr[k] != wr[k]) {
                            if (bad++ < 4) {
                                fprintf(stderr,
                                        "  %s [%s, bd %d] %dx%d TB %u residual (row %d, col "
                                        "%d): %d, want %d\n",
                                        name, os, b->bitdepth, n, n, i, k / n, k % n, gr[k],
                                        wr[k]);
                                print_tb(&b->list[s].tb[i]);
                            }
                            break;
                        }
                }
            }
        }
    }
    if (bad) {
        n_bad_cases++;
        test_failures++;
        fprintf(stderr, "  FAIL %s [%s]: %ld mismatch(es)\n", name, os, bad);
    }
    if (pic) vidk_picture_free(&dp);
    vidk_hevc_batch_free(&dev);
}

/* Reference inverse: a clone of b (residuals) and a copy of pic (reconstruction). */
static int ref_inverse(VidkHevcBatch *ref, VidkPicture *refpic, const VidkHevcBatch *b,
                       const VidkPicture *pic) {
    batch_clone(ref, b);
    if (pic) pic_copy(refpic, pic);
    return vidk_hevc_batch_inverse(g_c, ref, pic ? refpic : NULL);
}

/* ---- tests ----------------------------------------------------------------------------------
 */

static void test_tables(void) {
    fprintf(stderr, "[tables]\n");
    CHECK(vidk_cuda_hevc_self_check(g_c) == 0);
}

static VidkHevcCudaOpts opts(int tensor, int streams, int chunks) {
    VidkHevcCudaOpts o;
    vidk_cuda_hevc_default_opts(&o);
    o.tensor = tensor;
    o.streams = streams;
    o.chunks = chunks;
    return o;
}

/* Every pattern x bit depth x scaling mode, mixed sizes, tensor cores on and off. */
static void test_forward_patterns(void) {
    fprintf(stderr, "[forward patterns]\n");
    const uint32_t big[4] = {700, 260, 70, 21}, small[4] = {150, 40, 13, 5};
    for (int bd = 8; bd <= 12; bd += 2)
        for (int pat = 0; pat < P_COUNT; pat++)
            for (int sl = 0; sl < 3; sl++) {
                if (g_emu && sl == 1 && pat != P_RANDOM) continue;
                VidkHevcBatch b;
                char name[96];
                make_batch(&b, bd, g_emu ? small : big, pat, -1, 0);
                set_scaling(&b, sl);
                snprintf(name, sizeof(name), "forward %s sl%d", pat_name[pat], sl);
                VidkHevcBatch ref;
                const int rw = ref_forward(&ref, &b);
                fwd_check(name, &b, &ref, rw, NULL);
                VidkHevcCudaOpts o = opts(0, 0, 0);
                fwd_check(name, &b, &ref, rw, &o);
                vidk_hevc_batch_free(&ref);
                vidk_hevc_batch_free(&b);
            }
}

/* qP 0 and max at every bit depth with extreme and basis residuals (the level clip), and
 * uniform records (one key per chunk and size). */
static void test_forward_edges(void) {
    fprintf(stderr, "[forward edges]\n");
    const uint32_t cnt[4] = {257, 65, 17, 9};
    for (int bd = 8; bd <= 12; bd++)
        for (int q = 0; q < 2; q++)
            for (int pat = P_EXTREME; pat <= P_BASIS; pat++)
                for (int uni = 0; uni < 2; uni++) {
                    if (g_emu && (bd == 9 || bd == 11)) continue;
                    VidkHevcBatch b;
                    char name[96];
                    make_batch(&b, bd, cnt, pat, q ? VIDK_HEVC_MAX_QP(bd) : 0, uni);
                    set_scaling(&b, rnd(0, 2) ? 0 : 2);
                    snprintf(name, sizeof(name), "forward qp %s %s%s", q ? "max" : "0",
                             pat_name[pat], uni ? " uniform" : "");
                    VidkHevcCudaOpts o0 = opts(0, 0, 0), o1 = opts(1, 0, 0);
                    VidkHevcBatch ref;
                    const int rw = ref_forward(&ref, &b);
                    fwd_check(name, &b, &ref, rw, &o0);
                    fwd_check(name, &b, &ref, rw, &o1);
                    vidk_hevc_batch_free(&ref);
                    vidk_hevc_batch_free(&b);
                }
    /* Shapes: empty, one TB, one size only, counts around the tile sizes. */
    static const uint32_t shapes[][4] = {
        {0, 0, 0, 0},   {1, 0, 0, 0},   {0, 1, 0, 0},   {0, 0, 1, 0},  {0, 0, 0, 1},
        {255, 0, 0, 0}, {256, 0, 0, 0}, {257, 0, 0, 0}, {0, 0, 15, 7}, {0, 0, 16, 8},
        {0, 0, 17, 9},  {0, 513, 0, 0}, {3, 1, 33, 17}, {1, 1, 1, 1},  {512, 256, 32, 16}};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
        for (int chunks = 1; chunks <= 5; chunks += 4) {
            VidkHevcBatch b;
            char name[96];
            make_batch(&b, rnd(8, 12), shapes[i], -1, -1, 0);
            snprintf(name, sizeof(name), "forward shape %u/%u/%u/%u", shapes[i][0],
                     shapes[i][1], shapes[i][2], shapes[i][3]);
            for (int t = 0; t < 2; t++) {
                VidkHevcCudaOpts o = opts(t, chunks > 1 ? 2 : 1, chunks);
                fwd_case(name, &b, &o);
            }
            vidk_hevc_batch_free(&b);
        }
}

/* Every combination of the hooks on one mixed batch gives the same bits. */
static void test_forward_options(void) {
    fprintf(stderr, "[forward options]\n");
    const uint32_t cnt[4] = {1100, 300, 90, 30}, ecnt[4] = {300, 80, 24, 9};
    const int maxs = g_emu                               ? 8
                     : vidk_cuda_stream_count(g_gpu) < 8 ? vidk_cuda_stream_count(g_gpu)
                                                         : 8;
    for (int bd = 8; bd <= 12; bd += 4) {
        VidkHevcBatch b, ref;
        make_batch(&b, bd, g_emu ? ecnt : cnt, -1, -1, 0);
        set_scaling(&b, bd == 12 ? 2 : 0);
        const int rw = ref_forward(&ref, &b);
        {
            /* compact_levels 0: nz_lev is not written (may be NULL) */
            VidkHevcBatch b0, ref0;
            batch_clone(&b0, &b);
            b0.compact_levels = 0;
            const int rw0 = ref_forward(&ref0, &b0);
            for (int t = 0; t < 2; t++) {
                VidkHevcCudaOpts o = opts(t, 2, 3);
                fwd_check("forward compact_levels 0", &b0, &ref0, rw0, &o);
            }
            vidk_hevc_batch_free(&ref0);
            vidk_hevc_batch_free(&b0);
        }
        for (int t = 0; t < 2; t++)
            for (int ns = 1; ns <= maxs; ns += (g_emu ? 3 : 1))
                for (int ci = 0; ci < 3; ci++)
                    for (int compact = 0; compact < 3; compact++) /* dense, compact, auto */
                        for (int ovl = 0; ovl < 2; ovl++) {
                            if (g_emu && ci == 1 && (compact || ovl)) continue;
                            VidkHevcCudaOpts o = opts(t, ns,
                                                      ci == 0   ? 0
                                                      : ci == 1 ? ns + 1
                                                                : VIDK_HEVC_CUDA_MAX_CHUNKS);
                            o.compact = compact;
                            o.overlap_host = ovl;
                            o.alloc4 = (ns + ci + compact + ovl) % 2;
                            /* host staging: automatic, serial, several small pieces */
                            o.host_threads = (ns + ci + ovl) % 3 == 0   ? 0
                                             : (ns + ci + ovl) % 3 == 1 ? 1
                                                                        : 3 + compact;
                            fwd_check("forward options", &b, &ref, rw, &o);
                        }
        vidk_hevc_batch_free(&ref);
        vidk_hevc_batch_free(&b);
    }
}

/* Levels of every pattern, without a picture (residuals). */
static void test_inverse_residuals(void) {
    fprintf(stderr, "[inverse residuals]\n");
    const uint32_t cnt[4] = {600, 200, 60, 20}, ecnt[4] = {150, 40, 13, 5};
    for (int bd = 8; bd <= 12; bd += 2)
        for (int lp = 0; lp < L_COUNT; lp++)
            for (int sl = 0; sl < 3; sl++) {
                if (g_emu && sl == 1 && lp) continue;
                VidkHevcBatch b;
                char name[96];
                make_batch(&b, bd, g_emu ? ecnt : cnt, P_ZERO, -1, 0);
                set_scaling(&b, sl);
                for (int s = 0; s < 4; s++)
                    for (uint32_t i = 0; i < b.list[s].count; i++)
                        fill_lev(b.list[s].lev + (size_t)i * tb_len(s), s, lp);
                snprintf(name, sizeof(name), "inverse %s sl%d", lpat_name[lp], sl);
                VidkHevcBatch ref;
                VidkPicture rp;
                const int rw = ref_inverse(&ref, &rp, &b, NULL);
                VidkHevcCudaOpts o = opts(0, 0, 0);
                inv_check(name, &b, NULL, NULL, &ref, NULL, rw);
                inv_check(name, &b, NULL, &o, &ref, NULL, rw);
                vidk_hevc_batch_free(&ref);
                vidk_hevc_batch_free(&b);
            }
}

/* Reconstruction into pictures: chroma formats, bit depths, TB trees, fused and host add,
 * overlapping TBs. */
static void test_inverse_pictures(void) {
    fprintf(stderr, "[inverse pictures]\n");
    static const VidkChroma chroma[3] = {VIDK_CHROMA_420, VIDK_CHROMA_444, VIDK_CHROMA_400};
    for (int bd = 8; bd <= 12; bd += 2)
        for (int ci = 0; ci < 3; ci++)
            for (int mode = 0; mode < 3; mode++) {
                VidkPicture pred, rp;
                VidkHevcBatch b, ref;
                char name[96];
                const int w = g_emu ? 72 : 200, h = g_emu ? 40 : 136;
                if (vidk_picture_alloc(&pred, w, h, chroma[ci], bd, rnd(0, 1) * 16) < 0)
                    exit(1);
                fill_pic(&pred, mode);
                make_tree_batch(&b, &pred, -1);
                set_scaling(&b, rnd(0, 2));
                const int lp = rnd(0, L_COUNT - 1);
                for (int s = 0; s < 4; s++)
                    for (uint32_t i = 0; i < b.list[s].count; i++)
                        fill_lev(b.list[s].lev + (size_t)i * tb_len(s), s,
                                 rnd(0, 1) ? lp : L_SMALL);
                snprintf(name, sizeof(name), "inverse picture %s mode %d",
                         vio_chroma_name(chroma[ci]), mode);
                const int rw = ref_inverse(&ref, &rp, &b, &pred);
                for (int t = 0; t < 2; t++)
                    for (int fused = 0; fused < 2; fused++) {
                        VidkHevcCudaOpts o = opts(t, 0, rnd(1, 5));
                        o.fused = fused;
                        inv_check(name, &b, &pred, &o, &ref, &rp, rw);
                    }
                inv_check(name, &b, &pred, NULL, &ref, &rp, rw);
                vidk_hevc_batch_free(&ref);
                vidk_picture_free(&rp);
                /* Overlap: duplicate some TBs (same position, other levels): serial order. */
                for (int s = 0; s < 4; s++) {
                    const uint32_t n = b.list[s].count;
                    for (uint32_t i = 0; i < n && i < 6; i++) {
                        VidkHevcTb t = b.list[s].tb[rnd(0, (int)n - 1)];
                        const int k = vidk_hevc_batch_add(&b, (VidkHevcTbSize)s, &t, NULL);
                        if (k >= 0) fill_lev(b.list[s].lev + (size_t)k * tb_len(s), s, L_FULL);
                    }
                }
                if (b.list[0].count && b.list[2].count) { /* a 4x4 inside a 16x16 */
                    VidkHevcTb t = b.list[2].tb[0];
                    t.flags &= (uint8_t) ~(VIDK_HEVC_TB_DST | VIDK_HEVC_TB_TSKIP);
                    t.x = (uint16_t)(t.x + 4);
                    t.y = (uint16_t)(t.y + 8);
                    const int k = vidk_hevc_batch_add(&b, VIDK_HEVC_TB_4x4, &t, NULL);
                    if (k >= 0) fill_lev(b.list[0].lev + (size_t)k * 16, 0, L_FULL);
                }
                snprintf(name, sizeof(name), "inverse overlap %s mode %d",
                         vio_chroma_name(chroma[ci]), mode);
                const int rw2 = ref_inverse(&ref, &rp, &b, &pred);
                for (int t = 0; t < 2; t++) {
                    VidkHevcCudaOpts o = opts(t, 0, rnd(1, 3));
                    inv_check(name, &b, &pred, &o, &ref, &rp, rw2);
                }
                vidk_hevc_batch_free(&ref);
                vidk_picture_free(&rp);
                vidk_hevc_batch_free(&b);
                vidk_picture_free(&pred);
            }
}

/* Regression (H200, commit 80f7a89): 16-bit predictions above 32767 in residual mode (the
 * host adds int16 residuals to uint16 samples with the context's SIMD add16, which read
 * them as signed: 0 instead of the maximum). Every sample's prediction is >= 32768 or at
 * the extremes, levels over the whole int16 range; fused 0 and the overlap path. */
static void test_inverse_high_pred(void) {
    fprintf(stderr, "[inverse high predictions]\n");
    for (int bd = 9; bd <= 12; bd++) {
        VidkPicture pred, rp;
        VidkHevcBatch b, ref;
        if (vidk_picture_alloc(&pred, 64, 32, VIDK_CHROMA_444, bd, 0) < 0) exit(1);
        for (int pl = 0; pl < 3; pl++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 64; x++) {
                    const int r = rnd(0, 3);
                    const int v = r == 0   ? 65535
                                  : r == 1 ? rnd(32768, 65535)
                                  : r == 2 ? 0
                                           : (1 << bd) - 1;
                    pic_set(&pred, pl, x, y, v);
                }
        make_tree_batch(&b, &pred, -1);
        set_scaling(&b, 2);
        for (int s = 0; s < 4; s++)
            for (uint32_t i = 0; i < b.list[s].count; i++)
                fill_lev(b.list[s].lev + (size_t)i * tb_len(s), s,
                         rnd(0, 1) ? L_FULL : L_EXTREME);
        const int rw = ref_inverse(&ref, &rp, &b, &pred);
        for (int fused = 0; fused < 2; fused++) {
            VidkHevcCudaOpts o = opts(rnd(0, 1), 0, rnd(1, 3));
            o.fused = fused;
            o.host_threads = 3;
            inv_check("inverse high predictions", &b, &pred, &o, &ref, &rp, rw);
        }
        inv_check("inverse high predictions", &b, &pred, NULL, &ref, &rp, rw);
        vidk_hevc_batch_free(&ref);
        vidk_picture_free(&rp);
        vidk_hevc_batch_free(&b);
        vidk_picture_free(&pred);
    }
}

/* Every hook combination of the inverse on one picture. */
static void test_inverse_options(void) {
    fprintf(stderr, "[inverse options]\n");
    const int maxs = g_emu                               ? 8
                     : vidk_cuda_stream_count(g_gpu) < 8 ? vidk_cuda_stream_count(g_gpu)
                                                         : 8;
    for (int bd = 8; bd <= 10; bd += 2) {
        VidkPicture pred, rp;
        VidkHevcBatch b, ref;
        if (vidk_picture_alloc(&pred, g_emu ? 64 : 320, g_emu ? 48 : 192, VIDK_CHROMA_420, bd,
                               0) < 0)
            exit(1);
        fill_pic(&pred, 0);
        make_tree_batch(&b, &pred, -1);
        for (int s = 0; s < 4; s++)
            for (uint32_t i = 0; i < b.list[s].count; i++)
                fill_lev(b.list[s].lev + (size_t)i * tb_len(s), s, rnd(0, L_COUNT - 1));
        const int rw = ref_inverse(&ref, &rp, &b, &pred);
        VidkHevcBatch refr;
        VidkPicture dummy;
        const int rwr = ref_inverse(&refr, &dummy, &b, NULL);
        for (int t = 0; t < 2; t++)
            for (int ns = 1; ns <= maxs; ns += (g_emu ? 3 : 1))
                for (int ci = 0; ci < 3; ci++)
                    for (int fused = 0; fused < 2; fused++)
                        for (int ovl = 0; ovl < 2; ovl++) {
                            if (g_emu && ci == 1 && ovl) continue;
                            VidkHevcCudaOpts o = opts(t, ns,
                                                      ci == 0   ? 0
                                                      : ci == 1 ? ns + 2
                                                                : VIDK_HEVC_CUDA_MAX_CHUNKS);
                            o.fused = fused;
                            o.overlap_host = ovl;
                            o.host_threads = (ns + ci + ovl) % 3 == 0   ? 0
                                             : (ns + ci + ovl) % 3 == 1 ? 1
                                                                        : 3 + fused;
                            inv_check("inverse options", &b, &pred, &o, &ref, &rp, rw);
                            if (fused)
                                inv_check("inverse options (residuals)", &b, NULL, &o, &refr,
                                          NULL, rwr);
                        }
        vidk_hevc_batch_free(&refr);
        vidk_hevc_batch_free(&ref);
        vidk_picture_free(&rp);
        vidk_hevc_batch_free(&b);
        vidk_picture_free(&pred);
    }
}

/* ---- registered (page-locked) batch arrays: direct copies ---------------------------------
 * On the device the arrays are page-locked with vidk_host_register (whole pages: the ranges
 * are rounded out to pages and merged, so no page is registered twice); the emulation gets
 * the exact ranges through opts.emu_pinned. Either way the library copies a chunk's part of
 * an array directly when it lies inside one registered range. */

#define MAX_PINS 64
typedef struct Pins {
    int n; /* requested ranges */
    VidkHevcCudaRange r[MAX_PINS];
    int nreg; /* device: registered merged ranges */
    void *reg[MAX_PINS];
    int failed; /* device: a registration the driver refused */
} Pins;

static void pins_add(Pins *p, const void *ptr, size_t bytes) {
    if (!ptr || !bytes || p->n >= MAX_PINS) return;
    p->r[p->n].ptr = ptr;
    p->r[p->n].bytes = bytes;
    p->n++;
}

/* Device: register the requested ranges (rounded out to pages and merged by the library). */
static void pins_apply(Pins *p) {
    if (g_emu || !p->n) return;
    VidkHostRange in[MAX_PINS], m[MAX_PINS];
    for (int i = 0; i < p->n; i++) {
        in[i].ptr = (void *)p->r[i].ptr;
        in[i].bytes = p->r[i].bytes;
    }
    int nm = 0;
    const int e = vidk_host_register_set(g_gpu, in, p->n, m, &nm);
    p->nreg = 0;
    for (int i = 0; i < nm; i++)
        p->reg[p->nreg++] = m[i].ptr;
    if (e < 0) {
        fprintf(stderr, "  note: vidk_host_register_set failed (%d): the rest staged\n", e);
        p->failed = 1;
    }
}

static void pins_release(Pins *p) {
    for (int i = 0; i < p->nreg; i++)
        CHECK(vidk_host_unregister(g_gpu, p->reg[i]) == 0);
    memset(p, 0, sizeof(*p));
}

/* Options for a call on pinned arrays: the emulation gets the ranges. */
static void pins_opts(const Pins *p, VidkHevcCudaOpts *o) {
    if (!g_emu) return;
    o->emu_pinned = p->n ? p->r : NULL;
    o->emu_pinned_count = p->n;
}

/* Registration modes of a batch's arrays. */
enum { PIN_NONE, PIN_ALL, PIN_PART, PIN_ALL_NODIRECT, PIN_COUNT };
static const char *const pin_name[PIN_COUNT] = {"none", "all", "part", "all, direct 0"};

static void pins_of(Pins *p, const VidkHevcBatch *b, int mode) {
    memset(p, 0, sizeof(*p));
    for (int s = 0; s < 4; s++) {
        const VidkHevcTbList *l = &b->list[s];
        const size_t cap = l->capacity, len = (size_t)tb_len(s);
        if (!cap) continue;
        if (mode == PIN_ALL || mode == PIN_ALL_NODIRECT) {
            pins_add(p, l->res, cap * len * 2);
            pins_add(p, l->lev, cap * len * 2);
            pins_add(p, l->nnz, cap * 2);
        } else if (mode == PIN_PART) {
            /* first half of the 4x4 residuals, the 8x8 counts, all 16x16 residuals and
             * levels, the second half of the 32x32 levels */
            if (s == 0) pins_add(p, l->res, cap / 2 * len * 2);
            if (s == 1) pins_add(p, l->nnz, cap * 2);
            if (s == 2) {
                pins_add(p, l->res, cap * len * 2);
                pins_add(p, l->lev, cap * len * 2);
            }
            if (s == 3) pins_add(p, l->lev + cap / 2 * len, (cap - cap / 2) * len * 2);
        }
    }
    pins_apply(p);
}

static size_t list_bytes(const VidkHevcBatch *b, int s) {
    return (size_t)b->list[s].count * (size_t)tb_len(s) * 2;
}

/* Forward on a clone of b whose arrays are registered by `mode`; compared with ref. */
static void reg_fwd(const char *name, const VidkHevcBatch *b, const VidkHevcBatch *ref, int rw,
                    int mode, VidkHevcCudaOpts o) {
    VidkHevcBatch dev;
    Pins p;
    VidkHevcCudaStats st;
    char nm[160];
    batch_clone(&dev, b);
    pins_of(&p, &dev, mode);
    pins_opts(&p, &o);
    o.direct = mode != PIN_ALL_NODIRECT;
    o.stats = &st;
    snprintf(nm, sizeof(nm), "%s (pinned %s)", name, pin_name[mode]);
    const int rg = dev_forward(&dev, &o);
    cmp_forward(nm, &o, &dev, rg, ref, rw);
    if (rg >= 0 && !p.failed) {
        size_t res = 0;
        for (int s = 0; s < 4; s++)
            res += list_bytes(b, s);
        if (mode == PIN_NONE || mode == PIN_ALL_NODIRECT)
            CHECK(st.direct_h2d == 0 && st.direct_d2h == 0);
        size_t dense = 0;
        unsigned present = 0;
        for (int s = 0; s < 4; s++) {
            if (b->list[s].count) present |= 1u << s;
            if ((st.dense_classes >> s) & 1u) dense += list_bytes(b, s);
        }
        CHECK((st.dense_classes | st.compact_classes) == present);
        CHECK((st.dense_classes & st.compact_classes) == 0);
        if (o.compact == VIDK_HEVC_CUDA_DENSE) CHECK(st.dense_classes == present);
        if (o.compact == VIDK_HEVC_CUDA_COMPACT) CHECK(st.compact_classes == present);
        if (!st.compact_classes) CHECK(st.round_trips == 0);
        if (st.compact_classes) CHECK(st.round_trips >= 1);
        if (mode == PIN_ALL) CHECK(st.direct_h2d == res && st.staged_h2d < res / 4 + 4096);
        /* dense classes come down straight into the registered lev arrays */
        if (mode == PIN_ALL) CHECK(st.direct_d2h >= dense);
        if (mode == PIN_ALL && !st.compact_classes) CHECK(st.staged_d2h < res / 16 + 65536);
        if (mode == PIN_PART && g_emu) CHECK(st.direct_h2d > 0 && st.direct_d2h > 0);
    }
    pins_release(&p);
    vidk_hevc_batch_free(&dev);
}

/* Inverse without a picture on a clone of b registered by `mode` (lev_all: every level array
 * registered whole, so the dense upload applies). */
static void reg_inv(const char *name, const VidkHevcBatch *b, const VidkHevcBatch *ref, int rw,
                    int mode, VidkHevcCudaOpts o) {
    VidkHevcBatch dev;
    Pins p;
    VidkHevcCudaStats st;
    char nm[160], os[200];
    long bad = 0;
    batch_clone(&dev, b);
    for (int s = 0; s < 4; s++)
        memset(dev.list[s].res, 0x5A, list_bytes(&dev, s));
    pins_of(&p, &dev, mode);
    pins_opts(&p, &o);
    o.direct = mode != PIN_ALL_NODIRECT;
    o.stats = &st;
    snprintf(nm, sizeof(nm), "%s (pinned %s)", name, pin_name[mode]);
    opts_str(os, sizeof(os), &o);
    n_cases++;
    const int rg = dev_inverse(&dev, NULL, &o);
    if (rg != rw) {
        fprintf(stderr, "  %s [%s]: returned %d, c backend %d\n", nm, os, rg, rw);
        bad++;
    }
    for (int s = 0; s < 4 && rg >= 0; s++)
        if (list_bytes(b, s) && memcmp(dev.list[s].res, ref->list[s].res, list_bytes(b, s))) {
            const int len = tb_len(s);
            for (uint32_t i = 0; i < b->list[s].count; i++)
                if (memcmp(dev.list[s].res + (size_t)i * len,
                           ref->list[s].res + (size_t)i * len, (size_t)len * 2) &&
                    bad++ < 4) {
                    fprintf(stderr, "  %s [%s] %dx%d TB %u: residuals differ\n", nm, os, 4 << s,
                            4 << s, i);
                    print_tb(&b->list[s].tb[i]);
                }
        }
    if (rg >= 0 && !p.failed) {
        size_t lev = 0;
        for (int s = 0; s < 4; s++)
            lev += list_bytes(b, s);
        if (mode == PIN_NONE || mode == PIN_ALL_NODIRECT)
            CHECK(st.direct_h2d == 0 && st.direct_d2h == 0);
        if (mode == PIN_ALL) CHECK(st.direct_h2d == lev && st.direct_d2h == lev);
        if (mode == PIN_PART && g_emu) CHECK(st.direct_h2d == list_bytes(b, 2));
    }
    if (bad) {
        n_bad_cases++;
        test_failures++;
        fprintf(stderr, "  FAIL %s [%s]: %ld mismatch(es)\n", nm, os, bad);
    }
    pins_release(&p);
    vidk_hevc_batch_free(&dev);
}

/* Registered, partly registered and unregistered arrays x streams x chunks x compact x
 * overlap: the same bits as c, and the direct routes taken where they apply. */
static void test_registered(void) {
    fprintf(stderr, "[registered arrays]\n");
    const uint32_t cnt[4] = {1300, 300, 90, 30}, ecnt[4] = {300, 70, 24, 9};
    const int maxs = g_emu                               ? 8
                     : vidk_cuda_stream_count(g_gpu) < 8 ? vidk_cuda_stream_count(g_gpu)
                                                         : 8;
    for (int uni = 0; uni < 2; uni++) {
        VidkHevcBatch b, ref, refi;
        VidkPicture dummy;
        const int bd = uni ? 8 : 10;
        make_batch(&b, bd, g_emu ? ecnt : cnt, -1, uni ? 30 : -1, uni);
        if (!uni) set_scaling(&b, 2);
        const int rw = ref_forward(&ref, &b);
        for (int mode = 0; mode < PIN_COUNT; mode++)
            for (int ns = 1; ns <= maxs; ns += (g_emu ? 3 : 1))
                for (int ci = 0; ci < 3; ci++)
                    for (int v = 0; v < 4; v++) {
                        if (g_emu && ci == 1 && v) continue;
                        if (mode != PIN_ALL && mode != PIN_PART && (ns & 1) == 0) continue;
                        VidkHevcCudaOpts o = opts(uni, ns,
                                                  ci == 0   ? 0
                                                  : ci == 1 ? ns + 1
                                                            : VIDK_HEVC_CUDA_MAX_CHUNKS);
                        /* dense, or compacted / auto (the history of this batch: dense
                         * where more than 70 % of a class's TBs are non-zero) */
                        o.compact = !(v & 1)             ? VIDK_HEVC_CUDA_DENSE
                                    : (ns + ci) % 2 == 0 ? VIDK_HEVC_CUDA_COMPACT
                                                         : VIDK_HEVC_CUDA_AUTO;
                        o.overlap_host = v >> 1;
                        o.host_threads = (ns + ci) % 3 == 0 ? 0 : (ns + ci) % 3 == 1 ? 1 : 3;
                        o.tiles4 = (ns + v) % 3 == 2 ? 3 : 0;
                        o.alloc4 = (ns + ci + v) % 2;
                        reg_fwd(uni ? "forward uniform" : "forward mixed keys", &b, &ref, rw,
                                mode, o);
                    }
        /* inverse of the forward's levels (sparse: many all-zero TBs) and of full levels */
        for (int lv = 0; lv < 2; lv++) {
            for (int s = 0; s < 4; s++)
                if (list_bytes(&b, s)) {
                    if (!lv)
                        memcpy(b.list[s].lev, ref.list[s].lev, list_bytes(&b, s));
                    else
                        for (uint32_t i = 0; i < b.list[s].count; i++)
                            fill_lev(b.list[s].lev + (size_t)i * tb_len(s), s, L_FULL);
                }
            const int rwi = ref_inverse(&refi, &dummy, &b, NULL);
            for (int mode = 0; mode < PIN_COUNT; mode++)
                for (int ns = 1; ns <= maxs; ns += (g_emu ? 3 : 2))
                    for (int ci = 0; ci < 3; ci++)
                        for (int ovl = 0; ovl < 2; ovl++) {
                            VidkHevcCudaOpts o = opts(1 - uni, ns,
                                                      ci == 0   ? 0
                                                      : ci == 1 ? ns + 2
                                                                : VIDK_HEVC_CUDA_MAX_CHUNKS);
                            o.overlap_host = ovl;
                            o.host_threads = (ns + ci + ovl) % 3 == 0 ? 0 : (ns + ci) % 2 + 1;
                            o.tiles4 = ci == 2 ? 2 : 0;
                            reg_inv(lv ? "inverse full levels" : "inverse forward levels", &b,
                                    &refi, rwi, mode, o);
                        }
            vidk_hevc_batch_free(&refi);
        }
        /* with a picture: registered arrays, prediction staged (no dense upload) */
        {
            VidkPicture pred, rp;
            VidkHevcBatch pb, pref, dev;
            Pins p;
            if (vidk_picture_alloc(&pred, g_emu ? 64 : 256, g_emu ? 48 : 160, VIDK_CHROMA_420,
                                   bd, 0) < 0)
                exit(1);
            fill_pic(&pred, 0);
            make_tree_batch(&pb, &pred, -1);
            for (int s = 0; s < 4; s++)
                for (uint32_t i = 0; i < pb.list[s].count; i++)
                    fill_lev(pb.list[s].lev + (size_t)i * tb_len(s), s, rnd(0, L_COUNT - 1));
            const int rwp = ref_inverse(&pref, &rp, &pb, &pred);
            batch_clone(&dev, &pb);
            pins_of(&p, &dev, PIN_ALL);
            for (int fused = 0; fused < 2; fused++) {
                VidkHevcCudaOpts o = opts(1, 2, 3);
                VidkPicture dp;
                VidkHevcCudaStats st;
                o.fused = fused;
                o.stats = &st;
                pins_opts(&p, &o);
                pic_copy(&dp, &pred);
                n_cases++;
                const int rg = dev_inverse(&dev, &dp, &o);
                if (rg != rwp || cmp_pics("inverse picture (pinned all)", "", &dp, &rp)) {
                    fprintf(stderr, "  FAIL inverse picture (pinned all) fused %d: %d vs %d\n",
                            fused, rg, rwp);
                    n_bad_cases++;
                    test_failures++;
                }
                CHECK(st.direct_h2d == 0); /* levels gathered with the prediction */
                vidk_picture_free(&dp);
            }
            pins_release(&p);
            vidk_hevc_batch_free(&dev);
            vidk_hevc_batch_free(&pref);
            vidk_hevc_batch_free(&pb);
            vidk_picture_free(&rp);
            vidk_picture_free(&pred);
        }
        vidk_hevc_batch_free(&ref);
        vidk_hevc_batch_free(&b);
    }
    /* kernel-only after a call on registered arrays (device) */
    if (!g_emu) {
        VidkHevcBatch b, ref, dev;
        Pins p;
        make_batch(&b, 8, cnt, P_RANDOM, 32, 1);
        const int rw = ref_forward(&ref, &b);
        batch_clone(&dev, &b);
        pins_of(&p, &dev, PIN_ALL);
        VidkHevcCudaOpts o = opts(1, 2, 2), k;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &o) == rw);
        k = o;
        k.kernel_only = 1;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &k) == 0);
        cmp_forward("forward (pinned all) before kernel-only", &o, &dev, rw, &ref, rw);
        for (int s = 0; s < 4; s++)
            memcpy(dev.list[s].lev, ref.list[s].lev, list_bytes(&dev, s));
        CHECK(vidk_cuda_hevc_inverse(g_gpu, &dev, NULL, &o) == 0);
        CHECK(vidk_cuda_hevc_inverse(g_gpu, &dev, NULL, &k) == 0);
        pins_release(&p);
        vidk_hevc_batch_free(&dev);
        vidk_hevc_batch_free(&ref);
        vidk_hevc_batch_free(&b);
    }
}

/* ---- download modes (opts.compact) and the 4x4 allocation (opts.alloc4) -------------------
 * Dense and compacted downloads per size class, forced or AUTO: AUTO takes a class dense
 * when the context's previous forward call with TBs of that class found more than
 * VIDK_HEVC_CUDA_DENSE_ABOVE_PCT % of them non-zero. Same bits in every mode; the modes
 * and round trips the call reports are the documented ones. */

static unsigned present_mask(const VidkHevcBatch *b) {
    unsigned m = 0;
    for (int s = 0; s < 4; s++)
        if (b->list[s].count) m |= 1u << s;
    return m;
}

/* The AUTO rule on the c backend's counts (classes with TBs). */
static unsigned rule_dense(const VidkHevcBatch *ref) {
    unsigned m = 0;
    for (int s = 0; s < 4; s++) {
        const VidkHevcTbList *l = &ref->list[s];
        if (l->count &&
            (uint64_t)l->nz_count * 100u > (uint64_t)l->count * VIDK_HEVC_CUDA_DENSE_ABOVE_PCT)
            m |= 1u << s;
    }
    return m;
}

/* Chunks of a call with k chunks that have TBs of a class in `mask` (two-phase chunks when
 * mask is the compacted classes). */
static int chunks_with(const VidkHevcBatch *b, int k, unsigned mask) {
    int n = 0;
    for (int j = 0; j < k; j++) {
        int has = 0;
        for (int s = 0; s < 4; s++) {
            const uint64_t c = b->list[s].count;
            if (((mask >> s) & 1u) &&
                c * (uint64_t)(j + 1) / (uint64_t)k > c * (uint64_t)j / (uint64_t)k)
                has = 1;
        }
        n += has;
    }
    return n;
}

static int ctx_forward(VidkContext *ctx, VidkHevcBatch *b, const VidkHevcCudaOpts *o) {
    return g_emu ? vidk_cuda_hevc_emu_forward(ctx, b, o) : vidk_cuda_hevc_forward(ctx, b, o);
}

/* One forward call of b on ctx, compared with ref; the modes it reported in *st. */
static void mode_call(VidkContext *ctx, const char *name, const VidkHevcBatch *b,
                      const VidkHevcBatch *ref, int rw, VidkHevcCudaOpts o, int pin,
                      VidkHevcCudaStats *st) {
    VidkHevcBatch dev;
    Pins p;
    batch_clone(&dev, b);
    memset(&p, 0, sizeof(p));
    if (ctx == g_gpu || g_emu) pins_of(&p, &dev, pin); /* registered on g_gpu only */
    pins_opts(&p, &o);
    o.stats = st;
    const int rg = ctx_forward(ctx, &dev, &o);
    cmp_forward(name, &o, &dev, rg, ref, rw);
    if (rg >= 0 && pin == PIN_ALL && !p.failed) {
        size_t dense = 0;
        for (int s = 0; s < 4; s++)
            if ((st->dense_classes >> s) & 1u) dense += list_bytes(b, s);
        CHECK(st->direct_d2h >= dense);
    }
    pins_release(&p);
    vidk_hevc_batch_free(&dev);
}

static void test_download_modes(void) {
    fprintf(stderr, "[download modes]\n");
    /* a context of its own: its first call has no history (AUTO: all compacted) */
    VidkContext *fresh = open_backend(g_emu ? VIDK_BACKEND_SIMD : VIDK_BACKEND_CUDA, 4);
    if (!fresh) {
        CHECK(!"open a context");
        return;
    }
    const uint32_t cnt[4] = {2000, 500, 120, 40}, ecnt[4] = {300, 70, 24, 9};
    VidkHevcBatch b, ref, z, zref;
    VidkHevcCudaStats st;
    make_batch(&b, 8, g_emu ? ecnt : cnt, P_RANDOM, 30, 0);
    /* 4x4: three TBs in four all-zero (<= 25 % non-zero), 16x16 sparse: compacted;
     * 8x8 and 32x32 random: (almost) all non-zero, dense */
    for (uint32_t i = 0; i < b.list[0].count; i++)
        if (i % 4) memset(b.list[0].res + (size_t)i * 16, 0, 32);
    for (uint32_t i = 0; i < b.list[2].count; i++)
        fill_res(b.list[2].res + (size_t)i * 256, 2, 8, P_SPARSE);
    const int rw = ref_forward(&ref, &b);
    const unsigned all = present_mask(&b), want = rule_dense(&ref);
    CHECK(want == 0xAu); /* the batch is made so */
    {
        VidkHevcCudaOpts o = opts(1, 2, 3);
        mode_call(fresh, "forward auto, first call", &b, &ref, rw, o, PIN_NONE, &st);
        CHECK(st.dense_classes == 0 && st.compact_classes == all);
        CHECK(st.round_trips == 3);
        mode_call(fresh, "forward auto, second call", &b, &ref, rw, o, PIN_NONE, &st);
        CHECK_EQ_U(st.dense_classes, want);
        CHECK_EQ_U(st.compact_classes, all & ~want);
        CHECK_EQ_U(st.round_trips, chunks_with(&b, 3, all & ~want));
    }
    /* forced and automatic modes x 4x4 allocation x chunks x registered arrays, on the
     * context of the other tests (its history: whatever ran before, then this batch) */
    for (int mode = 0; mode < 3; mode++)
        for (int al = 0; al < 2; al++)
            for (int k = 1; k <= 5; k += 2)
                for (int pin = PIN_NONE; pin <= PIN_ALL; pin++) {
                    VidkContext *ctx = g_emu ? g_host : g_gpu;
                    VidkHevcCudaOpts o = opts(1, k > 1 ? 2 : 1, k);
                    char nm[96];
                    o.compact = mode;
                    o.alloc4 = al;
                    o.host_threads = (k + pin) % 2 ? 0 : 2;
                    snprintf(nm, sizeof(nm), "forward download mode %d", mode);
                    /* AUTO needs this batch in the history first */
                    if (mode == VIDK_HEVC_CUDA_AUTO)
                        mode_call(ctx, nm, &b, &ref, rw, opts(0, 1, 1), PIN_NONE, &st);
                    mode_call(ctx, nm, &b, &ref, rw, o, pin, &st);
                    const unsigned d = mode == VIDK_HEVC_CUDA_DENSE     ? all
                                       : mode == VIDK_HEVC_CUDA_COMPACT ? 0u
                                                                        : want;
                    CHECK_EQ_U(st.dense_classes, d);
                    CHECK_EQ_U(st.compact_classes, all & ~d);
                    CHECK_EQ_U(st.round_trips, chunks_with(&b, k, all & ~d));
                }
    /* the history is per class: all-zero 32x32 TBs alone turn 32x32 compacted, 8x8 stays */
    {
        const uint32_t zc[4] = {0, 0, 0, 12};
        make_batch(&z, 8, zc, P_ZERO, 30, 0);
        const int rz = ref_forward(&zref, &z);
        VidkHevcCudaOpts o = opts(1, 2, 2);
        mode_call(fresh, "forward auto, zero 32x32", &z, &zref, rz, o, PIN_NONE, &st);
        CHECK_EQ_U(st.dense_classes, 8u); /* the previous call: 32x32 all non-zero */
        CHECK_EQ_U(st.round_trips, 0);
        mode_call(fresh, "forward auto, after zero 32x32", &b, &ref, rw, o, PIN_NONE, &st);
        CHECK_EQ_U(st.dense_classes, want & ~8u);
        vidk_hevc_batch_free(&zref);
        vidk_hevc_batch_free(&z);
    }
    /* the threshold: 70 non-zero TBs in 100 stay compacted, 71 go dense */
    for (int nz = 70; nz <= 71; nz++) {
        const uint32_t tc[4] = {100, 0, 0, 0};
        VidkHevcBatch t, tref;
        make_batch(&t, 8, tc, P_ZERO, 0, 0);
        for (int i = 0; i < nz; i++)
            for (int k = 0; k < 16; k++)
                t.list[0].res[i * 16 + k] = 255;
        const int rt = ref_forward(&tref, &t);
        CHECK_EQ_U(tref.list[0].nz_count, (unsigned)nz);
        VidkHevcCudaOpts o = opts(0, 1, 1);
        mode_call(fresh, "forward threshold", &t, &tref, rt, o, PIN_NONE, &st);
        mode_call(fresh, "forward threshold", &t, &tref, rt, o, PIN_NONE, &st);
        CHECK_EQ_U(st.dense_classes, nz > VIDK_HEVC_CUDA_DENSE_ABOVE_PCT ? 1u : 0u);
        vidk_hevc_batch_free(&tref);
        vidk_hevc_batch_free(&t);
    }
    vidk_hevc_batch_free(&ref);
    vidk_hevc_batch_free(&b);
    vidk_close(&fresh);
}

/* Forward then inverse of the forward's levels (realistic sparse levels), pictures. */
static void test_roundtrip(const VidkPicture *src, const VidkPicture *pred, const char *what,
                           int qp) {
    VidkHevcBatch b, ref;
    VidkPicture rp;
    char name[160];
    make_tree_batch(&b, src, qp);
    set_scaling(&b, rnd(0, 3) == 0 ? 1 : 0);
    if (vidk_hevc_batch_residual(g_c, &b, src, pred) < 0) {
        fprintf(stderr, "residual failed\n");
        test_failures++;
        vidk_hevc_batch_free(&b);
        return;
    }
    snprintf(name, sizeof(name), "forward %s qp %d", what, qp);
    const int rw = ref_forward(&ref, &b);
    fwd_check(name, &b, &ref, rw, NULL);
    VidkHevcCudaOpts o = opts(0, 0, 3);
    fwd_check(name, &b, &ref, rw, &o);
    /* inverse of the reference levels into the prediction */
    for (int s = 0; s < 4; s++)
        if (b.list[s].count)
            memcpy(b.list[s].lev, ref.list[s].lev,
                   (size_t)b.list[s].count * (size_t)tb_len(s) * 2);
    vidk_hevc_batch_free(&ref);
    snprintf(name, sizeof(name), "inverse %s qp %d", what, qp);
    const int rwi = ref_inverse(&ref, &rp, &b, pred);
    inv_check(name, &b, pred, NULL, &ref, &rp, rwi);
    inv_check(name, &b, pred, &o, &ref, &rp, rwi);
    vidk_hevc_batch_free(&ref);
    vidk_picture_free(&rp);
    vidk_hevc_batch_free(&b);
}

static int load_frames(const char *path, int first, int gap, VidkPicture out[2]) {
    VioReader *r = NULL;
    char err[256];
    if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) return 0;
    int got = 0;
    VidkPicture tmp;
    if (vio_picture_alloc(&tmp, vio_reader_format(r)) < 0) {
        vio_reader_close(&r);
        return 0;
    }
    for (int i = 0; got < 2 && i <= first + gap; i++) {
        if (vio_reader_read(r, &tmp) != 1) break;
        if (i != first && i != first + gap) continue;
        pic_copy(&out[got], &tmp);
        got++;
    }
    vidk_picture_free(&tmp);
    vio_reader_close(&r);
    if (got == 1 && gap == 0) {
        pic_copy(&out[1], &out[0]);
        got = 2;
    }
    return got == 2;
}

/* Prediction from a shifted copy (intra-like residuals of a single frame). */
static void shift_pic(VidkPicture *p, int dx, int dy) {
    VidkPicture c;
    pic_copy(&c, p);
    for (int pl = 0; pl < n_planes(p); pl++) {
        int w, h;
        vidk_picture_plane_size(p, pl, &w, &h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const int sx = x + dx < 0 ? 0 : x + dx >= w ? w - 1 : x + dx;
                const int sy = y + dy < 0 ? 0 : y + dy >= h ? h - 1 : y + dy;
                pic_set(p, pl, x, y, pic_get(&c, pl, sx, sy));
            }
    }
    vidk_picture_free(&c);
}

static void test_real(void) {
    const char *env = getenv("VIDK_VIDEO_DIR");
    const char *dir = env && *env ? env : VIDK_TEST_VIDEO_DIR;
    fprintf(stderr, "[real clips] %s\n", *dir ? dir : "(none configured)");
    if (!*dir) {
        test_video_missing("no clip folder configured: real-clip part not run");
        return;
    }
    static const struct {
        const char *file;
        int first, gap, emu;
    } clips[] = {
        {"akiyo_176x144_30fps_30f.y4m", 3, 1, 1},
        {"basketballpass_416x240_50fps_100f.y4m", 20, 1, 0},
        {"cars_320x240_30fps_30f.y4m", 5, 2, 0},
        {"container_352x288_30fps_15f.y4m", 2, 3, 0},
        {"kristenandsara_1280x720_60fps_1f.y4m", 0, 0, 0},
        {"darkscene_1920x1080_24fps_1f.y4m", 0, 0, 0},
    };
    int used = 0;
    for (size_t i = 0; i < sizeof(clips) / sizeof(clips[0]); i++) {
        if (g_emu && !clips[i].emu) continue;
        char path[1024];
        VidkPicture f[2];
        snprintf(path, sizeof(path), "%s/%s", dir, clips[i].file);
        if (!load_frames(path, clips[i].first, clips[i].gap, f)) continue;
        fprintf(stderr, "  %s\n", clips[i].file);
        used++;
        if (!clips[i].gap) shift_pic(&f[1], 1, 2);
        static const int qps[3] = {22, 32, 42};
        for (int q = 0; q < 3; q++)
            test_roundtrip(&f[1], &f[0], clips[i].file, qps[q]);
        /* the same content at 10 bits (samples << 2) */
        VidkPicture g[2];
        for (int k = 0; k < 2; k++) {
            if (vidk_picture_alloc(&g[k], f[k].w, f[k].h, f[k].chroma, 10, 0) < 0) exit(1);
            for (int pl = 0; pl < n_planes(&f[k]); pl++) {
                int w, h;
                vidk_picture_plane_size(&f[k], pl, &w, &h);
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++)
                        pic_set(&g[k], pl, x, y, pic_get(&f[k], pl, x, y) << 2);
            }
        }
        test_roundtrip(&g[1], &g[0], clips[i].file, 37);
        for (int k = 0; k < 2; k++) {
            vidk_picture_free(&f[k]);
            vidk_picture_free(&g[k]);
        }
    }
    if (env && *env && !used) {
        fprintf(stderr, "  VIDK_VIDEO_DIR=%s has no readable clip\n", env);
        test_failures++;
    } else if (!used) {
        test_video_missing("no readable clip: real-clip part not run");
    }
}

/* DCI 4K luma frames of one TB size (the paper's distributions): forward and inverse,
 * tensor cores on and off; kernel and stage times printed (information only). */
static void test_dci4k(void) {
    if (g_emu || under_sanitizer) return;
    fprintf(stderr, "[DCI 4K frames]\n");
    for (int s = 3; s >= 0; s--) {
        uint32_t cnt[4] = {0, 0, 0, 0};
        cnt[s] = (uint32_t)(4096 * 2160 / tb_len(s));
        VidkHevcBatch b, ref;
        char name[96];
        make_batch(&b, 8, cnt, P_RANDOM, 32, 0);
        snprintf(name, sizeof(name), "DCI 4K all-%dx%d forward", 4 << s, 4 << s);
        const int rw = ref_forward(&ref, &b);
        for (int t = 0; t < 2; t++) {
            VidkHevcCudaOpts o = opts(t, 0, 0);
            VidkCudaTiming tm;
            fwd_check(name, &b, &ref, rw, &o);
            /* stage timing without host overlap: device time only */
            o.overlap_host = 0;
            o.streams = o.chunks = 1;
            VidkHevcBatch dev;
            VidkHevcCudaStats st;
            batch_clone(&dev, &b);
            o.stats = &st;
            if (vidk_cuda_hevc_forward(g_gpu, &dev, &o) >= 0 &&
                vidk_cuda_last_timing(g_gpu, &tm) == 0)
                fprintf(stderr,
                        "  %s tensor %d, 1 stream, download auto -> %s: h2d %.3f ms kernel "
                        "%.3f ms d2h %.3f ms total %.3f ms (%zu B up, %zu B down)\n",
                        name, t, st.dense_classes ? "dense" : "compact", tm.h2d_ms,
                        tm.kernel_ms, tm.d2h_ms, tm.total_ms, tm.h2d_bytes, tm.d2h_bytes);
            o.stats = NULL;
            o.kernel_only = 1;
            if (vidk_cuda_hevc_forward(g_gpu, &dev, &o) == 0 &&
                vidk_cuda_last_timing(g_gpu, &tm) == 0)
                fprintf(stderr, "  %s tensor %d: kernel only %.3f ms\n", name, t, tm.kernel_ms);
            else
                CHECK(!"kernel_only after a full call");
            /* 4x4, compacted: the kernel's allocation (block / warp atomics) x tiles per
             * warp, and the dense kernel (no allocation) for reference; medians of 9
             * kernel-only runs on the data of one full call with 1 stream */
            for (int m = 0; s == 0 && t == 1 && m < 2; m++) {
                o.kernel_only = 0;
                o.compact = m ? VIDK_HEVC_CUDA_DENSE : VIDK_HEVC_CUDA_COMPACT;
                o.tiles4 = 0;
                o.alloc4 = 0;
                CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &o) == rw);
                o.kernel_only = 1;
                for (int al = 0; al < 2 - m; al++)
                    for (int tw = 1; tw <= 8; tw *= 2) {
                        double v[9];
                        int nv = 0;
                        o.tiles4 = tw;
                        o.alloc4 = al;
                        for (int i = 0; i < 9; i++)
                            if (vidk_cuda_hevc_forward(g_gpu, &dev, &o) == 0 &&
                                vidk_cuda_last_timing(g_gpu, &tm) == 0)
                                v[nv++] = tm.kernel_ms;
                        for (int i = 1; i < nv; i++) /* insertion sort */
                            for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
                                const double x = v[j];
                                v[j] = v[j - 1], v[j - 1] = x;
                            }
                        if (nv)
                            fprintf(stderr,
                                    "  %s 1 stream, %s, tiles4 %d: kernel only %.4f ms "
                                    "(median)\n",
                                    name,
                                    m    ? "dense"
                                    : al ? "compact, alloc4 block"
                                         : "compact, alloc4 warp",
                                    tw, v[nv / 2]);
                        else
                            CHECK(!"4x4 kernel-only runs");
                    }
            }
            vidk_hevc_batch_free(&dev);
        }
        /* registered batch arrays (the "pinned" path): results, routes, device span */
        {
            VidkHevcBatch dev;
            Pins p;
            VidkHevcCudaStats st;
            VidkCudaTiming tm;
            batch_clone(&dev, &b);
            pins_of(&p, &dev, PIN_ALL);
            /* download auto (the default: the previous calls of this frame saw its
             * non-zero fraction), forced compacted, forced dense; 3 calls each */
            static const char *const mname[3] = {"dense", "compact", "auto"};
            for (int mi = 0; mi < 3; mi++) {
                const int mode = mi == 0   ? VIDK_HEVC_CUDA_AUTO
                                 : mi == 1 ? VIDK_HEVC_CUDA_COMPACT
                                           : VIDK_HEVC_CUDA_DENSE;
                VidkHevcCudaOpts o = opts(1, 0, 0);
                o.compact = mode;
                o.stats = &st;
                for (int rep = 0; rep < 3; rep++) {
                    const double t0 = test_now_ms();
                    const int rg = vidk_cuda_hevc_forward(g_gpu, &dev, &o);
                    const double e2e = test_now_ms() - t0;
                    if (!rep) {
                        char nm[128];
                        snprintf(nm, sizeof(nm), "%s (pinned all)", name);
                        cmp_forward(nm, &o, &dev, rg, &ref, rw);
                    }
                    if (rg >= 0 && vidk_cuda_last_timing(g_gpu, &tm) == 0)
                        fprintf(stderr,
                                "  %s pinned, download %s -> %s (round trips %d): device span "
                                "%.3f ms (h2d %.3f, kernel %.3f, d2h %.3f), end to end %.3f "
                                "ms; direct %zu B up / %zu B down, staged %zu / %zu\n",
                                name, mname[mode],
                                st.dense_classes && st.compact_classes ? "mixed"
                                : st.dense_classes                     ? "dense"
                                                                       : "compact",
                                st.round_trips, tm.total_ms, tm.h2d_ms, tm.kernel_ms, tm.d2h_ms,
                                e2e, st.direct_h2d, st.direct_d2h, st.staged_h2d,
                                st.staged_d2h);
                }
            }
            pins_release(&p);
            vidk_hevc_batch_free(&dev);
        }
        /* inverse of the reference levels, residual output */
        memcpy(b.list[s].lev, ref.list[s].lev, (size_t)cnt[s] * (size_t)tb_len(s) * 2);
        vidk_hevc_batch_free(&ref);
        VidkPicture rp;
        snprintf(name, sizeof(name), "DCI 4K all-%dx%d inverse", 4 << s, 4 << s);
        const int rwi = ref_inverse(&ref, &rp, &b, NULL);
        for (int t = 0; t < 2; t++) {
            VidkHevcCudaOpts o = opts(t, 0, 0);
            inv_check(name, &b, NULL, &o, &ref, NULL, rwi);
        }
        {
            VidkHevcCudaOpts o = opts(1, 0, 0);
            reg_inv(name, &b, &ref, rwi, PIN_ALL, o);
            VidkHevcBatch dev;
            Pins p;
            VidkCudaTiming tm;
            batch_clone(&dev, &b);
            pins_of(&p, &dev, PIN_ALL);
            const double t0 = test_now_ms();
            if (vidk_cuda_hevc_inverse(g_gpu, &dev, NULL, &o) == 0 &&
                vidk_cuda_last_timing(g_gpu, &tm) == 0)
                fprintf(stderr,
                        "  %s pinned: device span %.3f ms (kernel %.3f), end to end %.3f ms\n",
                        name, tm.total_ms, tm.kernel_ms, test_now_ms() - t0);
            pins_release(&p);
            vidk_hevc_batch_free(&dev);
        }
        vidk_hevc_batch_free(&ref);
        vidk_hevc_batch_free(&b);
    }
    /* Stream sweep (the paper's Fig. 3), all-32x32. */
    {
        uint32_t cnt[4] = {0, 0, 0, 8640};
        VidkHevcBatch b;
        VidkHevcCudaSweep sw[8];
        make_batch(&b, 8, cnt, P_RANDOM, 32, 0);
        const int ns = vidk_cuda_stream_count(g_gpu) < 8 ? vidk_cuda_stream_count(g_gpu) : 8;
        VidkHevcCudaOpts o = opts(1, 0, 0);
        o.overlap_host = 0;
        if (vidk_cuda_hevc_sweep_streams(g_gpu, &b, &o, ns, 5, sw) == 0)
            for (int i = 0; i < ns; i++)
                fprintf(stderr,
                        "  sweep all-32x32: %d stream(s): wall %.3f ms, device %.3f ms\n",
                        sw[i].streams, sw[i].wall_ms, sw[i].total_ms);
        else
            CHECK(!"stream sweep");
        vidk_hevc_batch_free(&b);
    }
}

/* Stage timing and bytes: empty TBs do not cross PCIe back. */
static void test_timing(void) {
    if (g_emu) return;
    fprintf(stderr, "[timing and bytes]\n");
    const uint32_t cnt[4] = {4096, 1024, 256, 64};
    VidkHevcBatch b;
    VidkCudaTiming t;
    make_batch(&b, 8, cnt, P_ZERO, 30, 0);
    VidkHevcCudaOpts o = opts(1, 1, 1);
    o.compact = VIDK_HEVC_CUDA_COMPACT;
    CHECK(vidk_cuda_hevc_forward(g_gpu, &b, &o) == 0);
    CHECK(vidk_cuda_last_timing(g_gpu, &t) == 0);
    size_t values = 0, tbs = 0;
    for (int s = 0; s < 4; s++) {
        values += (size_t)cnt[s] * (size_t)tb_len(s);
        tbs += cnt[s];
    }
    CHECK(t.h2d_bytes >= values * 2);
    CHECK(t.d2h_bytes <= tbs * 2 + 4096); /* counts and tile bases only */
    CHECK(t.total_ms > 0 && t.kernel_ms > 0);
    /* AUTO after all-zero TBs: compacted again */
    o.compact = VIDK_HEVC_CUDA_AUTO;
    CHECK(vidk_cuda_hevc_forward(g_gpu, &b, &o) == 0);
    CHECK(vidk_cuda_last_timing(g_gpu, &t) == 0);
    CHECK(t.d2h_bytes <= tbs * 2 + 4096);
    o.compact = VIDK_HEVC_CUDA_DENSE;
    CHECK(vidk_cuda_hevc_forward(g_gpu, &b, &o) == 0);
    CHECK(vidk_cuda_last_timing(g_gpu, &t) == 0);
    CHECK(t.d2h_bytes >= values * 2);
    /* AUTO after all-non-zero TBs: dense, one phase */
    {
        VidkHevcBatch f;
        VidkHevcCudaStats st;
        make_batch(&f, 8, cnt, P_EXTREME, 30, 0);
        o.compact = VIDK_HEVC_CUDA_COMPACT;
        o.stats = &st;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &f, &o) > 0);
        CHECK(st.round_trips == 1 && st.compact_classes == 15u);
        o.compact = VIDK_HEVC_CUDA_AUTO;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &f, &o) > 0);
        CHECK(vidk_cuda_last_timing(g_gpu, &t) == 0);
        CHECK(st.round_trips == 0 && st.dense_classes == 15u);
        CHECK(t.d2h_bytes >= values * 2);
        o.stats = NULL;
        vidk_hevc_batch_free(&f);
    }
    /* inverse of all-zero levels: nothing to do, nothing moves */
    for (int s = 0; s < 4; s++)
        memset(b.list[s].lev, 0, (size_t)cnt[s] * (size_t)tb_len(s) * 2);
    CHECK(vidk_cuda_hevc_inverse(g_gpu, &b, NULL, &o) == 0);
    CHECK(vidk_cuda_last_timing(g_gpu, &t) == 0);
    CHECK(t.h2d_bytes == 0 && t.d2h_bytes == 0);
    vidk_hevc_batch_free(&b);
}

static void test_kernel_only(void) {
    if (g_emu) {
        VidkHevcBatch b;
        const uint32_t cnt[4] = {5, 0, 0, 0};
        make_batch(&b, 8, cnt, P_RANDOM, -1, 0);
        VidkHevcCudaOpts o = opts(1, 0, 0);
        o.kernel_only = 1;
        CHECK(vidk_cuda_hevc_emu_forward(g_c, &b, &o) == VIDK_ERR(EINVAL));
        vidk_hevc_batch_free(&b);
        return;
    }
    fprintf(stderr, "[kernel only]\n");
    const uint32_t cnt[4] = {300, 100, 30, 10};
    VidkHevcBatch b, ref;
    make_batch(&b, 10, cnt, P_RANDOM, -1, 0);
    const int rw = ref_forward(&ref, &b);
    VidkHevcCudaOpts o = opts(1, 2, 3), k = o;
    k.kernel_only = 1;
    VidkHevcBatch dev;
    batch_clone(&dev, &b);
    CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &o) == rw);
    CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &k) == 0);
    VidkCudaTiming t;
    CHECK(vidk_cuda_last_timing(g_gpu, &t) == 0 && t.kernel_ms > 0 && t.h2d_bytes == 0 &&
          t.d2h_bytes == 0);
    k.alloc4 = VIDK_HEVC_CUDA_ALLOC4_BLOCK; /* the 4x4 allocation does not change the layout */
    CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &k) == 0);
    k.alloc4 = VIDK_HEVC_CUDA_ALLOC4_WARP;
    k.streams = 1;
    CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &k) == VIDK_ERR(EINVAL)); /* other layout */
    k.streams = o.streams;
    /* download modes: kernel-only with AUTO repeats the full call's modes; a forced mode
     * that differs from them is another layout */
    {
        VidkHevcCudaOpts d = o;
        d.compact = VIDK_HEVC_CUDA_DENSE;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &d) == rw);
        d.kernel_only = 1;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &d) == 0);
        d.compact = VIDK_HEVC_CUDA_AUTO;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &d) == 0);
        d.compact = VIDK_HEVC_CUDA_COMPACT;
        CHECK(vidk_cuda_hevc_forward(g_gpu, &dev, &d) == VIDK_ERR(EINVAL));
    }
    vidk_hevc_batch_free(&dev);
    fwd_check("forward after kernel-only", &b, &ref, rw, &o);
    vidk_hevc_batch_free(&ref);
    /* inverse */
    for (int s = 0; s < 4; s++)
        for (uint32_t i = 0; i < cnt[s]; i++)
            fill_lev(b.list[s].lev + (size_t)i * tb_len(s), s, L_FULL);
    CHECK(vidk_cuda_hevc_inverse(g_gpu, &b, NULL, &o) == 0);
    k.streams = 1;
    CHECK(vidk_cuda_hevc_inverse(g_gpu, &b, NULL, &k) == VIDK_ERR(EINVAL)); /* streams differ */
    k.streams = 2;
    CHECK(vidk_cuda_hevc_inverse(g_gpu, &b, NULL, &k) == 0);
    VidkPicture rp;
    const int rwi = ref_inverse(&ref, &rp, &b, NULL);
    inv_check("inverse after kernel-only", &b, NULL, &o, &ref, NULL, rwi);
    vidk_hevc_batch_free(&ref);
    vidk_hevc_batch_free(&b);
}

/* Argument errors: the c backend's codes, nothing written. */
static void test_errors(void) {
    fprintf(stderr, "[errors]\n");
    const uint32_t cnt[4] = {40, 10, 4, 2};
    VidkHevcBatch b;
    make_batch(&b, 8, cnt, P_RANDOM, -1, 0);
    VidkHevcCudaOpts o = opts(1, 0, 0);
    int (*fwd)(VidkContext *, VidkHevcBatch *, const VidkHevcCudaOpts *) =
        g_emu ? vidk_cuda_hevc_emu_forward : vidk_cuda_hevc_forward;
    VidkContext *ctx = g_emu ? g_c : g_gpu;
    o.reserved[3] = 1;
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o = opts(2, 0, 0);
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o = opts(1, 17, 0);
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o = opts(1, 0, VIDK_HEVC_CUDA_MAX_CHUNKS + 1);
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o = opts(1, 0, -1);
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o = opts(1, 0, 0);
    o.host_threads = -1;
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o.host_threads = 65;
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o = opts(1, 0, 0);
    o.compact = 3;
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o.compact = -1;
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o = opts(1, 0, 0);
    o.alloc4 = 2;
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    o.alloc4 = -1;
    CHECK(fwd(ctx, &b, &o) == VIDK_ERR(EINVAL));
    CHECK(fwd(ctx, NULL, NULL) == VIDK_ERR(EINVAL));
    if (!g_emu) {
        VidkContext *c = g_c;
        CHECK(vidk_cuda_hevc_forward(c, &b, NULL) == VIDK_ERR_NODEV); /* no CUDA state */
    }
    /* bad records: EINVAL like the c backend, outputs untouched */
    static const int kinds[] = {0, 1, 2, 3, 4, 5};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        VidkHevcBatch d;
        batch_clone(&d, &b);
        const int s = kinds[k] < 3 ? 0 : 3;
        VidkHevcTb *t = &d.list[s].tb[d.list[s].count - 1];
        switch (kinds[k]) {
        case 0:
            t->qp = (uint8_t)(VIDK_HEVC_MAX_QP(8) + 1);
            break;
        case 1:
            t->flags = VIDK_HEVC_TB_DST | VIDK_HEVC_TB_TSKIP;
            break;
        case 2:
            t->flags = 16;
            break;
        case 3:
            t->flags = VIDK_HEVC_TB_DST;
            break;
        case 4:
            t->plane = 3;
            break;
        default:
            t->reserved = 1;
        }
        VidkHevcBatch r;
        batch_clone(&r, &d);
        const int rw = vidk_hevc_batch_forward(g_c, &r);
        const int rg = g_emu ? vidk_cuda_hevc_emu_forward(g_c, &d, NULL)
                             : vidk_hevc_batch_forward(g_gpu, &d);
        CHECK(rw == VIDK_ERR(EINVAL));
        CHECK(rg == rw);
        CHECK(d.list[0].nnz[0] == 0xA7A7 && d.list[0].nz_count == 0xA7A7A7A7u);
        const int ri = g_emu ? vidk_cuda_hevc_emu_inverse(g_c, &d, NULL, NULL)
                             : vidk_hevc_batch_inverse(g_gpu, &d, NULL);
        CHECK(ri == vidk_hevc_batch_inverse(g_c, &r, NULL));
        vidk_hevc_batch_free(&r);
        vidk_hevc_batch_free(&d);
    }
    /* scaling factor 0 */
    {
        VidkHevcBatch d;
        batch_clone(&d, &b);
        set_scaling(&d, 1);
        d.scaling.m32[5][1023] = 0;
        CHECK(dev_forward(&d, NULL) == VIDK_ERR(EINVAL));
        CHECK(dev_inverse(&d, NULL, NULL) == VIDK_ERR(EINVAL));
        vidk_hevc_batch_free(&d);
    }
    /* bit depth, count above capacity, NULL arrays */
    {
        VidkHevcBatch d;
        batch_clone(&d, &b);
        d.bitdepth = 13;
        CHECK(dev_forward(&d, NULL) == VIDK_ERR(EINVAL));
        d.bitdepth = 8;
        d.list[1].count = d.list[1].capacity + 1;
        CHECK(dev_forward(&d, NULL) == VIDK_ERR(EINVAL));
        d.list[1].count = 10;
        int16_t *keep = d.list[1].nz_lev;
        d.list[1].nz_lev = NULL;
        CHECK(dev_forward(&d, NULL) == VIDK_ERR(EINVAL));
        CHECK(dev_inverse(&d, NULL, NULL) == 0); /* the inverse does not need nz arrays */
        d.compact_levels = 0; /* then nz_lev is not needed by the forward either */
        CHECK(dev_forward(&d, NULL) >= 0);
        d.list[1].nz_lev = keep;
        vidk_hevc_batch_free(&d);
    }
    /* pictures: wrong bit depth, TB outside or misaligned: EINVAL, picture unchanged */
    {
        VidkPicture p, q;
        VidkHevcBatch d;
        if (vidk_picture_alloc(&p, 64, 32, VIDK_CHROMA_420, 8, 0) < 0) exit(1);
        fill_pic(&p, 0);
        make_tree_batch(&d, &p, -1);
        for (int s = 0; s < 4; s++)
            for (uint32_t i = 0; i < d.list[s].count; i++)
                fill_lev(d.list[s].lev + (size_t)i * tb_len(s), s, L_FULL);
        pic_copy(&q, &p);
        d.bitdepth = 10;
        CHECK(dev_inverse(&d, &q, NULL) == VIDK_ERR(EINVAL));
        d.bitdepth = 8;
        VidkHevcTb t = make_tb(0, 8, 30, 0);
        t.x = 62; /* misaligned */
        vidk_hevc_batch_add(&d, VIDK_HEVC_TB_4x4, &t, NULL);
        CHECK(dev_inverse(&d, &q, NULL) == VIDK_ERR(EINVAL));
        d.list[0].tb[d.list[0].count - 1].x = 64; /* outside */
        CHECK(dev_inverse(&d, &q, NULL) == VIDK_ERR(EINVAL));
        CHECK(cmp_pics("unchanged after errors", "", &q, &p) == 0);
        vidk_picture_free(&q);
        vidk_picture_free(&p);
        vidk_hevc_batch_free(&d);
    }
    vidk_hevc_batch_free(&b);
}

static VidkContext *open_backend(VidkBackend be, int streams) {
    VidkSettings s;
    VidkContext *ctx = NULL;
    vidk_default_settings(&s);
    s.backend = be;
    s.cuda_streams = streams;
    return vidk_open(&ctx, &s) == 0 ? ctx : NULL;
}

int main(int argc, char **argv) {
    const char *req = getenv("VIDK_REQUIRE_GPU");
    const char *san = getenv("VIDK_UNDER_SANITIZER");
    under_sanitizer = san && *san && *san != '0';
    g_emu = argc > 1 && !strcmp(argv[1], "--emu");
    if (!g_emu && vidk_cuda_device_count() == 0) {
        if (req && *req == '1') {
            fprintf(stderr, "test_hevc_cuda: no CUDA device but VIDK_REQUIRE_GPU=1\n");
            return 1;
        }
        fprintf(stderr,
                "test_hevc_cuda: no CUDA device, skipped (the host emulation: --emu)\n");
        return 77;
    }
    seed = test_seed();
    g_c = open_backend(VIDK_BACKEND_C, 4);
    if (!g_emu) g_gpu = open_backend(VIDK_BACKEND_CUDA, 8);
    if (g_emu) g_host = open_backend(VIDK_BACKEND_SIMD, 4);
    if (!g_c || (!g_emu && !g_gpu) || (g_emu && !g_host)) {
        fprintf(stderr, "test_hevc_cuda: cannot open the c or cuda backend\n");
        return 1;
    }
    fprintf(stderr, "test_hevc_cuda: %s\n", g_emu ? "host emulation of the kernels" : "device");
    test_tables();
    test_errors();
    test_forward_patterns();
    test_forward_edges();
    test_forward_options();
    test_inverse_residuals();
    test_inverse_pictures();
    test_inverse_high_pred();
    test_inverse_options();
    test_registered();
    test_download_modes();
    test_real();
    test_kernel_only();
    test_timing();
    test_dci4k();
    fprintf(stderr, "test_hevc_cuda: %ld cases compared, %ld failed\n", n_cases, n_bad_cases);
    vidk_close(&g_gpu);
    vidk_close(&g_host);
    vidk_close(&g_c);
    return test_finish("test_hevc_cuda");
}

#else /* !VIDK_HAVE_CUDA */

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "test_hevc_cuda: built without CUDA, skipped\n");
    return 77;
}

#endif
