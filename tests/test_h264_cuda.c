/* Test of the CUDA backend of the H.264 family (src/cuda/h264.cu): every entry point and
 * every combination of the optimisation switches (VidkH264CudaOpts) against the c
 * backend, bit for bit, on random, sparse, extreme (wrapping 32-bit arithmetic, clipping)
 * and real-video-derived coefficient frames, 1080p and odd sizes, 4:0:0 / 4:2:0 / 4:2:2,
 * bit depths 8..14 (qP' up to 87), flat and custom scaling matrices, odd picture strides;
 * the forward path (levels and non-zero count); the public batch API on a cuda context;
 * argument errors; stage timing. The first mismatches are printed with the block that
 * covers them.
 *
 * Modes:
 *   test_h264_cuda         on the GPU; exits 77 (ctest SKIP) without a device unless
 *                          VIDK_REQUIRE_GPU=1 (then a failure).
 *   test_h264_cuda --emu   the same checks through the host emulation of the kernels
 *                          (vidk_cuda_h264_emu_*): runs anywhere CUDA was built.
 * Environment: VIDK_VIDEO_DIR (real clips; when set, a folder without a readable clip
 * fails), VIDK_TEST_SEED (replay), VIDK_UNDER_SANITIZER=1 (compute-sanitizer: few
 * combinations, one 1080p frame, no clip larger than 416x240),
 * VIDK_TEST_VERBOSE=1. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "test_util.h"
#include "vidkern/vidkern.h"
#if VIDK_HAVE_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/h264_cuda.h"
#endif

#ifndef VIDK_TEST_VIDEO_DIR
#define VIDK_TEST_VIDEO_DIR ""
#endif

#if VIDK_HAVE_CUDA

static uint32_t seed;
static int emu, light, tiny, verbose; /* tiny: under compute-sanitizer, fewest calls */
static VidkContext *cctx, *gctx;
static long n_cmp, n_mismatch_reports;

static int rnd(int lo, int hi) {
    return lo + (int)(test_rand(&seed) % (uint32_t)(hi - lo + 1));
}

/* ---- the entry points under test ----------------------------------------------------------
 */

static int run_binv(const VidkH264Batch *b, VidkPicture *pic, const VidkH264CudaOpts *o) {
    return emu ? vidk_cuda_h264_emu_batch_inverse(gctx, b, pic, o)
               : vidk_cuda_h264_batch_inverse(gctx, b, pic, o);
}
static int run_finv(const VidkH264CoefFrame *fr, VidkPicture *pic, const VidkH264CudaOpts *o) {
    return emu ? vidk_cuda_h264_emu_frame_inverse(gctx, fr, pic, o)
               : vidk_cuda_h264_frame_inverse(gctx, fr, pic, o);
}
static int run_fwd(const VidkPicture *s, const VidkPicture *p, VidkH264CoefFrame *fr,
                   VidkH264Batch *b, const VidkH264CudaOpts *o) {
    return emu ? vidk_cuda_h264_emu_batch_forward(gctx, s, p, fr, b, o)
               : vidk_cuda_h264_batch_forward(gctx, s, p, fr, b, o);
}

static void opts_str(const VidkH264CudaOpts *o, char *s, size_t n) {
    if (!o) {
        snprintf(s, n, "defaults");
        return;
    }
    snprintf(
        s, n,
        "compact %d line %d threads %d work %d coalesced %d sparse %d fused %d pipeline %d "
        "streams %d chunk %d graphs %d host %d host_threads %d plane %d dense_vec %d staged %d",
        o->compact, o->line_per_thread, o->threads, o->work, o->coalesced, o->sparse, o->fused,
        o->pipeline, o->streams, o->chunk, o->graphs, o->host, o->host_threads, o->plane,
        o->dense_vec, o->staged);
}

/* ---- pictures: library-allocated, or caller-owned with odd strides
 * ---------------------------- */

typedef struct TPic {
    VidkPicture p;
    uint8_t *mem;
    size_t total; /* bytes of mem */
} TPic;

static int n_planes(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? 1 : 3;
}

static void tpic_new(TPic *t, int w, int h, VidkChroma chroma, int odd) {
    memset(t, 0, sizeof(*t));
    if (!odd) {
        if (vidk_picture_alloc(&t->p, w, h, chroma, 8, rnd(0, 1) * 16) < 0) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        return;
    }
    /* Strides of plane width + an odd number, planes starting at odd addresses. */
    size_t total = 0, off[3];
    ptrdiff_t stride[3];
    t->p.w = w, t->p.h = h, t->p.chroma = chroma, t->p.bitdepth = 8;
    for (int p = 0; p < n_planes(chroma); p++) {
        int pw, ph;
        vidk_picture_plane_size(&t->p, p, &pw, &ph);
        stride[p] = pw + 2 * rnd(0, 20) + 1;
        off[p] = total + 1;
        total += (size_t)stride[p] * ph + 2;
    }
    t->mem = malloc(total);
    t->total = total;
    if (!t->mem) exit(1);
    memset(t->mem, 0xEE, total);
    for (int p = 0; p < n_planes(chroma); p++) {
        t->p.data[p] = t->mem + off[p];
        t->p.stride[p] = stride[p];
    }
}

static void tpic_free(TPic *t) {
    if (t->mem)
        free(t->mem);
    else
        vidk_picture_free(&t->p);
    memset(t, 0, sizeof(*t));
}

static uint8_t *pel(const VidkPicture *p, int plane, int x, int y) {
    return (uint8_t *)p->data[plane] + (ptrdiff_t)y * p->stride[plane] + x;
}

static void pic_copy(VidkPicture *dst, const VidkPicture *src) {
    for (int p = 0; p < n_planes(src->chroma); p++) {
        int pw, ph;
        vidk_picture_plane_size(src, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            memcpy(pel(dst, p, 0, y), pel(src, p, 0, y), (size_t)pw);
    }
}

static void pic_random(VidkPicture *pic, int smooth) {
    const int off = rnd(0, 255);
    for (int p = 0; p < n_planes(pic->chroma); p++) {
        int pw, ph;
        vidk_picture_plane_size(pic, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++)
                *pel(pic, p, x, y) =
                    (uint8_t)(smooth ? TCLIP(((x * 7 + y * 3 + off) % 200) + rnd(-8, 8), 0, 255)
                                     : rnd(0, 255));
    }
}

/* ---- comparison with detail
 * --------------------------------------------------------------------- */

/* The block of b covering sample (x, y) of plane p, printed. */
static void describe_block(const VidkH264Batch *b, int p, int x, int y) {
    if (!b) return;
    for (int s = 0; s < VIDK_H264_TX_COUNT; s++) {
        const VidkH264BlockList *l = &b->list[s];
        const int n = s ? 8 : 4;
        for (uint32_t i = 0; i < l->count; i++) {
            if (l->plane[i] != p || x < l->x[i] || x >= l->x[i] + n || y < l->y[i] ||
                y >= l->y[i] + n)
                continue;
            fprintf(
                stderr,
                "    block: %dx%d list index %u at (%d,%d) qp %d flags %d dc_index %u levels:",
                n, n, i, l->x[i], l->y[i], l->qp[i], l->flags[i], l->dc_index[i]);
            for (int k = 0; k < n * n; k++)
                fprintf(stderr, " %d", l->coef[(size_t)i * n * n + k]);
            fprintf(stderr, "\n");
            if (l->flags[i] & VIDK_H264_BLK_DC) {
                const uint32_t g = l->dc_index[i] / 16;
                fprintf(stderr, "    DC group %u type %d qp %d flags %d levels:", g,
                        b->dc.type[g], b->dc.qp[g], b->dc.flags[g]);
                for (int k = 0; k < 16; k++)
                    fprintf(stderr, " %d", b->dc.coef[(size_t)g * 16 + k]);
                fprintf(stderr, "\n");
            }
            return;
        }
    }
    fprintf(stderr, "    no block of the batch covers this sample\n");
}

static int same_pics(const VidkPicture *ref, const VidkPicture *got, const VidkH264Batch *b,
                     const char *what, const VidkH264CudaOpts *o) {
    int bad = 0;
    n_cmp++;
    for (int p = 0; p < n_planes(ref->chroma); p++) {
        int pw, ph;
        vidk_picture_plane_size(ref, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                const int e = *pel(ref, p, x, y), g = *pel(got, p, x, y);
                if (e == g) continue;
                if (!bad && n_mismatch_reports++ < 8) {
                    char s[256];
                    opts_str(o, s, sizeof(s));
                    fprintf(stderr, "MISMATCH %s [%s]\n", what, s);
                }
                if (bad < 4 && n_mismatch_reports <= 8) {
                    fprintf(stderr, "  plane %d (%d,%d): expected %d, got %d\n", p, x, y, e, g);
                    describe_block(b, p, x, y);
                }
                bad++;
            }
    }
    if (bad) {
        fprintf(stderr, "  %s: %d samples differ\n", what, bad);
        CHECK(0);
    }
    return !bad;
}

static int same_levels(const VidkH264CoefFrame *ref, const VidkH264CoefFrame *got,
                       const char *what, const VidkH264CudaOpts *o) {
    int bad = 0;
    n_cmp++;
    for (int p = 0; p < n_planes(ref->chroma); p++)
        for (int y = 0; y < ref->plane_h[p]; y++)
            for (int x = 0; x < ref->plane_w[p]; x++) {
                const int e = ref->coef[p][(size_t)y * ref->plane_w[p] + x];
                const int g = got->coef[p][(size_t)y * got->plane_w[p] + x];
                if (e == g) continue;
                if (!bad && n_mismatch_reports++ < 8) {
                    char s[256];
                    opts_str(o, s, sizeof(s));
                    fprintf(stderr, "MISMATCH %s [%s]\n", what, s);
                }
                if (bad < 4 && n_mismatch_reports <= 8) {
                    const int mw = p ? 8 : 16,
                              mh = p ? (ref->chroma == VIDK_CHROMA_422 ? 16 : 8) : 16;
                    const VidkH264MbInfo *m = &ref->mb[(y / mh) * ref->mb_w + x / mw];
                    fprintf(stderr,
                            "  plane %d level (%d,%d): expected %d, got %d (mb qp %d/%d/%d "
                            "flags %d)\n",
                            p, x, y, e, g, m->qp[0], m->qp[1], m->qp[2], m->flags);
                }
                bad++;
            }
    if (bad) {
        fprintf(stderr, "  %s: %d levels differ\n", what, bad);
        CHECK(0);
    }
    return !bad;
}

/* ---- coefficient frames
 * --------------------------------------------------------------------------- */

enum { L_SPARSE, L_DENSE, L_EXTREME, L_DCONLY, L_MIXED, L_MODES };
static const char *const mode_names[L_MODES] = {"sparse", "dense", "extreme", "dc-only",
                                                "mixed"};

static int16_t extreme_level(void) {
    static const int16_t v[] = {-32768, 32767, -32767, 32766, -1, 1, 0};
    return rnd(0, 3) ? v[rnd(0, 6)] : (int16_t)rnd(-32768, 32767);
}

static void random_mbs(VidkH264CoefFrame *fr, int qp_lo, int qp_hi) {
    const int qmax = VIDK_H264_MAX_QP(fr->bitdepth);
    for (int i = 0; i < fr->mb_w * fr->mb_h; i++) {
        VidkH264MbInfo *m = &fr->mb[i];
        m->flags = (uint8_t)(rnd(0, 1) * VIDK_H264_MB_INTRA);
        if (rnd(0, 2) == 0)
            m->flags |= VIDK_H264_MB_8x8;
        else if ((m->flags & VIDK_H264_MB_INTRA) && rnd(0, 1))
            m->flags |= VIDK_H264_MB_I16x16;
        for (int p = 0; p < 3; p++)
            m->qp[p] = (uint8_t)(p && fr->chroma == VIDK_CHROMA_400
                                     ? 0
                                     : TCLIP(rnd(qp_lo, qp_hi), 0, qmax));
    }
}

static void random_scaling(VidkH264Scaling *s, int custom) {
    vidk_h264_scaling_flat(s);
    if (!custom) return;
    for (int l = 0; l < 6; l++) {
        for (int k = 0; k < 16; k++)
            s->m4[l][k] = (uint8_t)(rnd(0, 7) ? rnd(4, 64) : rnd(0, 1) ? 1 : 255);
        for (int k = 0; k < 64; k++)
            s->m8[l][k] = (uint8_t)(rnd(0, 7) ? rnd(4, 64) : rnd(0, 1) ? 1 : 255);
    }
}

static void fill_levels(VidkH264CoefFrame *fr, int mode) {
    for (int p = 0; p < n_planes(fr->chroma); p++) {
        const int pw = fr->plane_w[p], ph = fr->plane_h[p];
        int16_t *c = fr->coef[p];
        memset(c, 0, (size_t)pw * ph * 2);
        for (int cy = 0; cy < ph / 4; cy++)
            for (int cx = 0; cx < pw / 4; cx++) {
                int m = mode;
                if (mode == L_MIXED) m = rnd(0, L_DCONLY);
                int16_t *t = c + (size_t)cy * 4 * pw + cx * 4;
                switch (m) {
                case L_SPARSE:
                    if (rnd(0, 99) < 80) break;
                    for (int k = rnd(1, 4); k > 0; k--)
                        t[(size_t)rnd(0, 3) * pw + rnd(0, 3)] =
                            (int16_t)(rnd(0, 9) ? rnd(-6, 6) : rnd(-3000, 3000));
                    break;
                case L_DENSE:
                    for (int y = 0; y < 4; y++)
                        for (int x = 0; x < 4; x++)
                            t[(size_t)y * pw + x] = (int16_t)rnd(-40, 40);
                    break;
                case L_EXTREME:
                    for (int y = 0; y < 4; y++)
                        for (int x = 0; x < 4; x++)
                            t[(size_t)y * pw + x] = extreme_level();
                    break;
                case L_DCONLY:
                    if (rnd(0, 1)) t[0] = (int16_t)rnd(-200, 200);
                    break;
                }
            }
    }
}

static void frame_new(VidkH264CoefFrame *fr, int w, int h, VidkChroma c, int bd) {
    if (vidk_h264_coef_frame_alloc(fr, w, h, c, bd) < 0) {
        fprintf(stderr, "out of memory (frame %dx%d)\n", w, h);
        exit(1);
    }
}

static void frame_copy_side(VidkH264CoefFrame *dst, const VidkH264CoefFrame *src) {
    memcpy(dst->mb, src->mb, (size_t)src->mb_w * src->mb_h * sizeof(*src->mb));
    dst->scaling = src->scaling;
}

/* ---- option combinations
 * ------------------------------------------------------------------------------ */

static const int thread_choices[] = {32, 64, 96, 128, 256, 512};
static const int work_choices[] = {1, 2, 3, 4, 16};

/* Combination i of the compact switches (line, coalesced, sparse, fused, pipeline, graphs),
 * the numeric ones drawn at random. */
static int compact_combos(void) {
    return 64;
}
static void compact_combo(VidkH264CudaOpts *o, int i) {
    vidk_cuda_h264_step_opts(o, VIDK_H264_CUDA_COMPACT);
    o->line_per_thread = i & 1;
    o->coalesced = i >> 1 & 1;
    o->sparse = i >> 2 & 1;
    o->fused = i >> 3 & 1;
    o->pipeline = i >> 4 & 1;
    o->graphs = i >> 5 & 1 ? (rnd(0, 1) ? 1 : -1) : 0;
    o->threads = thread_choices[rnd(0, 5)];
    o->work = work_choices[rnd(0, 4)];
    o->streams = rnd(0, 4);
    o->chunk = rnd(0, 2) ? 0 : rnd(0, 1) ? rnd(1, 300) : rnd(1000, 20000);
    /* The parallel host staging (half of the combinations), its pool size and plane mode
     * (which needs line, coalesced and fused; ignored otherwise). */
    o->host = rnd(0, 1);
    o->host_threads = rnd(0, 1) ? 0 : rnd(1, 5);
    o->plane = rnd(-1, 1);
}

/* ---- registered caller memory (vidk_host_register)
 * ------------------------------------------------------ */

/* Bytes of plane p of a picture as the library addresses them. */
static size_t plane_span(const VidkPicture *pic, int p) {
    int pw, ph;
    vidk_picture_plane_size(pic, p, &pw, &ph);
    return (size_t)(ph - 1) * (size_t)pic->stride[p] + (size_t)pw;
}

/* Register (on 1) or unregister (on 0) a picture on the cuda context. On the GPU the whole
 * allocation; in the emulation the planes of `mask` (bit p) only, so that a call mixes
 * direct and staged planes. Returns 0 or the error. */
static int reg_pic(TPic *t, int on, unsigned mask) {
    if (emu) {
        int e = 0;
        for (int p = 0; p < n_planes(t->p.chroma); p++)
            if (mask >> p & 1) {
                const int r =
                    vidk_cuda_h264_emu_register(t->p.data[p], on ? plane_span(&t->p, p) : 0);
                if (r < 0) e = r;
            }
        return e;
    }
    if (t->mem)
        return on ? vidk_host_register(gctx, t->mem, t->total)
                  : vidk_host_unregister(gctx, t->mem);
    return on ? vidk_picture_register(gctx, &t->p) : vidk_picture_unregister(gctx, &t->p);
}

/* The same for a coefficient frame (its macroblocks and level planes, one allocation). In
 * the emulation mask bit 0 = macroblocks, bit 1 + p = level plane p. */
static int reg_frame(const VidkH264CoefFrame *fr, int on, unsigned mask) {
    const int np = n_planes(fr->chroma);
    if (emu) {
        int e = 0;
        for (int k = 0; k <= np; k++)
            if (mask >> k & 1) {
                const void *ptr = k ? (const void *)fr->coef[k - 1] : (const void *)fr->mb;
                const size_t bytes = k ? (size_t)fr->plane_w[k - 1] * fr->plane_h[k - 1] * 2
                                       : (size_t)fr->mb_w * fr->mb_h * sizeof(*fr->mb);
                const int r = vidk_cuda_h264_emu_register(ptr, on ? bytes : 0);
                if (r < 0) e = r;
            }
        return e;
    }
    const uint8_t *end =
        (const uint8_t *)(fr->coef[np - 1] + (size_t)fr->plane_w[np - 1] * fr->plane_h[np - 1]);
    return on ? vidk_host_register(gctx, fr->alloc, (size_t)(end - (const uint8_t *)fr->alloc))
              : vidk_host_unregister(gctx, fr->alloc);
}

/* The fast dense frame path (dense_vec) and batch plane mode with caller memory registered:
 * round i % 4: neither, the picture, the coefficient frame, both (the emulation: random
 * subsets of planes); later rounds also with random bands, streams, host pools and
 * staged 1 (registered memory staged anyway). Every result equal to ref. */
static void check_direct(const char *name, const VidkH264CoefFrame *fr, const VidkH264Batch *b,
                         const VidkPicture *pred, const VidkPicture *ref, TPic *got, int n) {
    char what[700];
    for (int i = 0; i < n; i++) {
        const int reg = i & 3;
        const unsigned pmask = emu && i >= 4 ? (unsigned)rnd(1, 7) : 7u,
                       fmask = emu && i >= 4 ? (unsigned)rnd(1, 15) : 15u;
        VidkH264CudaOpts o;
        vidk_cuda_h264_default_opts(&o);
        if (i >= 4) {
            o.pipeline = rnd(0, 1);
            o.streams = rnd(0, 4);
            o.chunk = rnd(0, 2) ? 0 : rnd(1, 5);
            o.host = rnd(0, 1);
            o.host_threads = rnd(0, 1) ? 0 : rnd(1, 5);
            o.staged = rnd(0, 3) == 0;
        }
        if ((reg & 1) && reg_pic(got, 1, pmask) < 0) {
            fprintf(stderr, "%s: cannot register the picture\n", name);
            CHECK(0);
            return;
        }
        if ((reg & 2) && reg_frame(fr, 1, fmask) < 0) {
            fprintf(stderr, "%s: cannot register the frame\n", name);
            CHECK(0);
            if (reg & 1) reg_pic(got, 0, pmask);
            return;
        }
        pic_copy(&got->p, pred);
        snprintf(what, sizeof(what), "%s dense_vec registered %s%s (%d)", name,
                 reg & 1 ? "picture " : "", reg & 2 ? "frame" : "", i);
        int r = run_finv(fr, &got->p, &o);
        CHECK(r == 0);
        if (!r) same_pics(ref, &got->p, b, what, &o);
        if (!emu && !r) {
            VidkCudaTiming t;
            CHECK(vidk_cuda_last_timing(gctx, &t) == 0 && t.h2d_bytes > 0 && t.d2h_bytes > 0);
        }
        /* Batch plane mode (forced) on the same picture. */
        o.plane = 1;
        pic_copy(&got->p, pred);
        snprintf(what, sizeof(what), "%s batch planes registered %s%s (%d)", name,
                 reg & 1 ? "picture " : "", reg & 2 ? "frame" : "", i);
        r = run_binv(b, &got->p, &o);
        CHECK(r == 0);
        if (!r) same_pics(ref, &got->p, b, what, &o);
        if (!emu && i == 3) { /* the public API with both registered */
            pic_copy(&got->p, pred);
            snprintf(what, sizeof(what), "%s public frame_inverse registered", name);
            CHECK(vidk_h264_frame_inverse(gctx, fr, &got->p) == 0);
            same_pics(ref, &got->p, b, what, NULL);
            pic_copy(&got->p, pred);
            snprintf(what, sizeof(what), "%s public batch_inverse registered", name);
            CHECK(vidk_h264_batch_inverse(gctx, b, &got->p) == 0);
            same_pics(ref, &got->p, b, what, NULL);
        }
        if (reg & 1) CHECK(reg_pic(got, 0, pmask) == 0);
        if (reg & 2) CHECK(reg_frame(fr, 0, fmask) == 0);
    }
}

/* ---- inverse checks
 * --------------------------------------------------------------------------------- */

/* fr + pred: every entry point and combination against the c backend. */
static void check_inverse(const char *name, const VidkH264CoefFrame *fr,
                          const VidkPicture *pred, int many) {
    VidkH264Batch b;
    TPic ref, got;
    char what[600];
    vidk_h264_batch_init(&b);
    CHECK(vidk_h264_batch_build(cctx, &b, fr) == 0);
    tpic_new(&ref, fr->w, fr->h, fr->chroma, 0);
    tpic_new(&got, fr->w, fr->h, fr->chroma, rnd(0, 1));
    pic_copy(&ref.p, pred);
    CHECK(vidk_h264_batch_inverse(cctx, &b, &ref.p) == 0);
    if (verbose)
        fprintf(stderr, "%s: %ux4x4 %ux8x8 %u DC groups\n", name, b.list[0].count,
                b.list[1].count, b.dc.count);

    /* Defaults (what the public API runs), every step of the table, then combinations. */
    pic_copy(&got.p, pred);
    snprintf(what, sizeof(what), "%s batch defaults", name);
    CHECK(run_binv(&b, &got.p, NULL) == 0);
    same_pics(&ref.p, &got.p, &b, what, NULL);
    pic_copy(&got.p, pred);
    snprintf(what, sizeof(what), "%s frame defaults", name);
    CHECK(run_finv(fr, &got.p, NULL) == 0);
    same_pics(&ref.p, &got.p, &b, what, NULL);
    for (int step = 0; step < VIDK_H264_CUDA_STEPS; step++) {
        VidkH264CudaOpts o;
        vidk_cuda_h264_step_opts(&o, step);
        pic_copy(&got.p, pred);
        snprintf(what, sizeof(what), "%s frame step %s", name, vidk_cuda_h264_step_name(step));
        CHECK(run_finv(fr, &got.p, &o) == 0);
        same_pics(&ref.p, &got.p, &b, what, &o);
        if (!step) {
            for (int f = 0; f < 2;
                 f++) { /* the dense baseline, both write-backs, odd threads */
                o.fused = f;
                o.threads = thread_choices[rnd(0, 5)];
                pic_copy(&got.p, pred);
                snprintf(what, sizeof(what), "%s frame dense fused %d", name, f);
                CHECK(run_finv(fr, &got.p, &o) == 0);
                same_pics(&ref.p, &got.p, &b, what, &o);
            }
            continue;
        }
        pic_copy(&got.p, pred);
        snprintf(what, sizeof(what), "%s batch step %s", name, vidk_cuda_h264_step_name(step));
        CHECK(run_binv(&b, &got.p, &o) == 0);
        same_pics(&ref.p, &got.p, &b, what, &o);
    }
    const int n = many && !tiny ? compact_combos() : tiny ? 4 : 12;
    for (int i = 0; i < n; i++) {
        VidkH264CudaOpts o;
        compact_combo(&o, many ? i : rnd(0, compact_combos() - 1));
        pic_copy(&got.p, pred);
        snprintf(what, sizeof(what), "%s batch combination %d", name, i);
        const int r = run_binv(&b, &got.p, &o);
        CHECK(r == 0);
        if (!r) same_pics(&ref.p, &got.p, &b, what, &o);
    }
    /* The fast dense kernel (dense_vec) with its own switches, registered memory, plane mode.
     */
    for (int i = 0; i < (tiny ? 2 : many ? 8 : 3); i++) {
        VidkH264CudaOpts o;
        vidk_cuda_h264_default_opts(&o);
        o.pipeline = rnd(0, 1);
        o.streams = rnd(0, 4);
        o.chunk = rnd(0, 1) ? 0 : rnd(0, 1) ? rnd(1, 3) : rnd(4, 80);
        o.host = rnd(0, 1);
        o.host_threads = rnd(0, 1) ? 0 : rnd(1, 5);
        o.staged = rnd(0, 1);
        pic_copy(&got.p, pred);
        snprintf(what, sizeof(what), "%s frame dense_vec combination %d", name, i);
        const int r = run_finv(fr, &got.p, &o);
        CHECK(r == 0);
        if (!r) same_pics(&ref.p, &got.p, &b, what, &o);
    }
    check_direct(name, fr, &b, pred, &ref.p, &got, tiny ? 4 : many ? 12 : 6);
    /* The public API on the cuda context. */
    if (!emu) {
        pic_copy(&got.p, pred);
        snprintf(what, sizeof(what), "%s public batch_inverse", name);
        CHECK(vidk_h264_batch_inverse(gctx, &b, &got.p) == 0);
        same_pics(&ref.p, &got.p, &b, what, NULL);
        VidkCudaTiming t;
        CHECK(vidk_cuda_last_timing(gctx, &t) == 0);
        /* A batch without blocks (a sparse random frame can have none) moves nothing. */
        const int moved = t.h2d_bytes > 0 && t.d2h_bytes > 0;
        const int blocks = b.list[0].count + b.list[1].count + b.dc.count > 0;
        if ((blocks && !moved) || t.total_ms < 0)
            fprintf(stderr, "%s: timing h2d %zu d2h %zu total %.3f ms, %u + %u blocks, %u DC\n",
                    what, (size_t)t.h2d_bytes, (size_t)t.d2h_bytes, t.total_ms, b.list[0].count,
                    b.list[1].count, b.dc.count);
        CHECK((moved || !blocks) && t.total_ms >= 0);
        pic_copy(&got.p, pred);
        snprintf(what, sizeof(what), "%s public frame_inverse", name);
        CHECK(vidk_h264_frame_inverse(gctx, fr, &got.p) == 0);
        same_pics(&ref.p, &got.p, &b, what, NULL);
    }
    tpic_free(&ref);
    tpic_free(&got);
    vidk_h264_batch_free(&b);
}

/* ---- forward checks
 * ---------------------------------------------------------------------------------- */

static void check_forward(const char *name, const VidkPicture *src, const VidkPicture *pred,
                          const VidkH264CoefFrame *side, int many) {
    VidkH264CoefFrame ref, got;
    VidkH264Batch bref, bgot;
    char what[600];
    frame_new(&ref, side->w, side->h, side->chroma, side->bitdepth);
    frame_new(&got, side->w, side->h, side->chroma, side->bitdepth);
    frame_copy_side(&ref, side);
    frame_copy_side(&got, side);
    vidk_h264_batch_init(&bref);
    vidk_h264_batch_init(&bgot);
    const int nnz = vidk_h264_batch_forward(cctx, src, pred, &ref, &bref);
    CHECK(nnz >= 0);
    const int n = many ? 10 : 3;
    for (int i = -1; i < n + (emu ? 0 : 1); i++) {
        VidkH264CudaOpts o;
        vidk_cuda_h264_default_opts(&o);
        if (i >= 0) {
            o.pipeline = i & 1;
            o.streams = rnd(0, 4);
            o.chunk = rnd(0, 1) ? 0 : rnd(1, 5);
        }
        for (int p = 0; p < n_planes(got.chroma); p++) /* poison: every level must be written */
            for (size_t k = 0; k < (size_t)got.plane_w[p] * got.plane_h[p]; k++)
                got.coef[p][k] = 0x5A5A;
        int r;
        if (i == n) { /* the public API */
            snprintf(what, sizeof(what), "%s public batch_forward", name);
            r = vidk_h264_batch_forward(gctx, src, pred, &got, &bgot);
        } else {
            snprintf(what, sizeof(what), "%s forward %d", name, i);
            r = run_fwd(src, pred, &got, i & 2 ? &bgot : NULL, i < 0 ? NULL : &o);
        }
        if (r != nnz) {
            fprintf(stderr, "%s: non-zero count %d, expected %d\n", what, r, nnz);
            CHECK(0);
        }
        same_levels(&ref, &got, what, i < 0 ? NULL : &o);
        if (i & 2 || i == n)
            CHECK(bgot.list[0].count == bref.list[0].count &&
                  bgot.list[1].count == bref.list[1].count && bgot.dc.count == bref.dc.count);
    }
    vidk_h264_batch_free(&bref);
    vidk_h264_batch_free(&bgot);
    vidk_h264_coef_frame_free(&ref);
    vidk_h264_coef_frame_free(&got);
}

/* ---- random and extreme frames
 * ------------------------------------------------------------------------ */

static void test_random_frames(void) {
    static const struct {
        int w, h;
        VidkChroma c;
        int bd;
    } cases[] = {
        {16, 16, VIDK_CHROMA_420, 8},   {32, 16, VIDK_CHROMA_400, 8},
        {48, 80, VIDK_CHROMA_422, 8},   {208, 144, VIDK_CHROMA_420, 8},
        {64, 48, VIDK_CHROMA_420, 10},  {80, 32, VIDK_CHROMA_422, 14},
        {112, 64, VIDK_CHROMA_400, 12}, {1920, 1088, VIDK_CHROMA_420, 8},
        {352, 288, VIDK_CHROMA_422, 9}, {16, 1088, VIDK_CHROMA_420, 8},
        {1936, 16, VIDK_CHROMA_422, 8},
    };
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        const int big = cases[ci].w * cases[ci].h >= 1920 * 1088;
        if (tiny && cases[ci].w * cases[ci].h > 352 * 288 && ci != 7)
            continue; /* one 1080p frame */
        for (int mode = 0; mode < L_MODES; mode++) {
            if (big && light && mode != L_MIXED) continue;
            VidkH264CoefFrame fr;
            TPic pred, src;
            char name[128];
            const int custom = rnd(0, 1), bd = cases[ci].bd, off = 6 * (bd - 8);
            frame_new(&fr, cases[ci].w, cases[ci].h, cases[ci].c, bd);
            random_scaling(&fr.scaling, custom);
            /* All qP' for the extreme frames; a realistic range otherwise. */
            if (mode == L_EXTREME)
                random_mbs(&fr, 0, VIDK_H264_MAX_QP(bd));
            else
                random_mbs(&fr, rnd(0, 1) ? 0 : 10 + off,
                           rnd(0, 1) ? 40 + off : VIDK_H264_MAX_QP(bd));
            fill_levels(&fr, mode);
            tpic_new(&pred, fr.w, fr.h, fr.chroma, rnd(0, 1));
            pic_random(&pred.p, mode != L_EXTREME && rnd(0, 1));
            snprintf(name, sizeof(name), "random %dx%d chroma %d bd %d %s%s", fr.w, fr.h,
                     fr.chroma, bd, mode_names[mode], custom ? " custom" : "");
            check_inverse(name, &fr, &pred.p, !big || mode == L_MIXED);
            if (mode == L_DENSE || mode == L_MIXED) { /* forward from random pictures */
                tpic_new(&src, fr.w, fr.h, fr.chroma, rnd(0, 1));
                pic_random(&src.p, rnd(0, 1));
                check_forward(name, &src.p, &pred.p, &fr, !big);
                tpic_free(&src);
            }
            tpic_free(&pred);
            vidk_h264_coef_frame_free(&fr);
        }
    }
}

/* Every qP' of the deepest bit depth with extreme levels, one macroblock type at a time. */
static void test_all_qps(void) {
    for (int kind = 0; kind < 4; kind++)
        for (int bd = 8; bd <= 14; bd += 6) {
            VidkH264CoefFrame fr;
            TPic pred;
            char name[96];
            const int qmax = VIDK_H264_MAX_QP(bd);
            frame_new(&fr, 16 * (qmax + 1), 16, kind == 3 ? VIDK_CHROMA_422 : VIDK_CHROMA_420,
                      bd);
            random_scaling(&fr.scaling, kind & 1);
            for (int i = 0; i < fr.mb_w; i++) {
                static const uint8_t fl[4] = {0, VIDK_H264_MB_INTRA | VIDK_H264_MB_8x8,
                                              VIDK_H264_MB_INTRA | VIDK_H264_MB_I16x16,
                                              VIDK_H264_MB_INTRA};
                fr.mb[i].flags = fl[kind];
                fr.mb[i].qp[0] = fr.mb[i].qp[1] = fr.mb[i].qp[2] = (uint8_t)i;
            }
            fill_levels(&fr, kind & 2 ? L_EXTREME : L_MIXED);
            tpic_new(&pred, fr.w, fr.h, fr.chroma, 0);
            pic_random(&pred.p, 0);
            snprintf(name, sizeof(name), "all qP' kind %d bd %d", kind, bd);
            check_inverse(name, &fr, &pred.p, 0);
            tpic_free(&pred);
            vidk_h264_coef_frame_free(&fr);
        }
}

/* Swap elements i and j (size bytes each) of an array. */
static void swap_elems(void *a, size_t size, uint32_t i, uint32_t j) {
    uint8_t t[64], *p = a;
    memcpy(t, p + i * size, size);
    memcpy(p + i * size, p + j * size, size);
    memcpy(p + j * size, t, size);
}

/* Hand-made batches: DC blocks whose level 0 is not zero (ignored), DC indices in any
 * order, blocks in any order, overlapping blocks (computed on the host), empty classes. */
static void test_hand_batches(void) {
    VidkH264CoefFrame fr;
    TPic pred, ref, got;
    VidkH264Batch b;
    frame_new(&fr, 64, 32, VIDK_CHROMA_420, 8);
    random_mbs(&fr, 0, 51);
    fill_levels(&fr, L_MIXED);
    tpic_new(&pred, 64, 32, VIDK_CHROMA_420, 1);
    tpic_new(&ref, 64, 32, VIDK_CHROMA_420, 0);
    tpic_new(&got, 64, 32, VIDK_CHROMA_420, 0);
    pic_random(&pred.p, 0);
    vidk_h264_batch_init(&b);
    CHECK(vidk_h264_batch_build(cctx, &b, &fr) == 0);
    for (int variant = 0; variant < 4; variant++) {
        VidkH264BlockList *l = &b.list[0];
        if (variant == 0) /* level 0 of DC blocks set: must be ignored */
            for (uint32_t i = 0; i < l->count; i++)
                if (l->flags[i] & VIDK_H264_BLK_DC)
                    l->coef[(size_t)i * 16] = (int16_t)rnd(-30000, 30000);
        if (variant == 1 && l->count > 1) /* reversed order */
            for (uint32_t i = 0, j = l->count - 1; i < j; i++, j--) {
                swap_elems(l->x, 2, i, j);
                swap_elems(l->y, 2, i, j);
                swap_elems(l->plane, 1, i, j);
                swap_elems(l->qp, 1, i, j);
                swap_elems(l->flags, 1, i, j);
                swap_elems(l->dc_index, 4, i, j);
                swap_elems(l->coef, 32, i, j);
            }
        if (variant == 2 && l->count > 2) { /* overlap: block 1 moved onto block 0 */
            l->x[1] = l->x[0], l->y[1] = l->y[0], l->plane[1] = l->plane[0];
            l->flags[1] &= (uint8_t)~VIDK_H264_BLK_DC;
        }
        if (variant == 3) b.list[1].count = 0; /* no 8x8 blocks */
        pic_copy(&ref.p, &pred.p);
        CHECK(vidk_h264_batch_inverse(cctx, &b, &ref.p) == 0);
        for (int i = 0; i < 16; i++) {
            VidkH264CudaOpts o;
            char what[64];
            compact_combo(&o, rnd(0, compact_combos() - 1));
            pic_copy(&got.p, &pred.p);
            snprintf(what, sizeof(what), "hand batch variant %d", variant);
            CHECK(run_binv(&b, &got.p, &o) == 0);
            same_pics(&ref.p, &got.p, &b, what, &o);
        }
    }
    /* An empty batch changes nothing. */
    b.list[0].count = b.list[1].count = b.dc.count = 0;
    pic_copy(&got.p, &pred.p);
    CHECK(run_binv(&b, &got.p, NULL) == 0);
    same_pics(&pred.p, &got.p, &b, "empty batch", NULL);
    vidk_h264_batch_free(&b);
    tpic_free(&pred);
    tpic_free(&ref);
    tpic_free(&got);
    vidk_h264_coef_frame_free(&fr);
}

/* ---- plane mode on sparse batches
 * ----------------------------------------------------------------------- */

/* Keep in b only the blocks of the lists in `lists` (bit s) whose plane is in `planes`
 * (bit p), at most `max` per list (0: all). DC groups stay (unreferenced ones are legal). */
static void filter_batch(VidkH264Batch *b, unsigned lists, unsigned planes, uint32_t max) {
    for (int s = 0; s < VIDK_H264_TX_COUNT; s++) {
        VidkH264BlockList *l = &b->list[s];
        const size_t nn = s ? 64 : 16;
        uint32_t k = 0;
        for (uint32_t i = 0; i < l->count && (lists >> s & 1); i++) {
            if (!(planes >> l->plane[i] & 1) || (max && k >= max)) continue;
            l->x[k] = l->x[i], l->y[k] = l->y[i], l->plane[k] = l->plane[i],
            l->qp[k] = l->qp[i];
            l->flags[k] = l->flags[i], l->dc_index[k] = l->dc_index[i];
            memmove(l->coef + k * nn, l->coef + (size_t)i * nn, nn * 2);
            k++;
        }
        l->count = k;
    }
}

/* Plane mode forced on qp37-like sparse batches where some planes or a whole size class
 * have no block: only the 8x8 list (luma only: the chroma planes untouched), only the 4x4
 * list, both; planes filtered away; a handful of blocks; several streams and chunk sizes,
 * staged and registered pictures. On the device a missing cross-stream dependency lets a
 * plane's download overtake its upload or a chunk's kernel (the bug behind "cuda planes
 * (8x8) on 1080p qp37 differs"): every checked call follows a call on another picture
 * through the same plane slots, so stale device planes show. The emulation runs streams
 * in order and cannot show it that way; there the library's ordering check (happens-before
 * of the queued copies, kernels and events, in src/cuda/h264.cu) fails such a call. */
static void test_plane_sparse(void) {
    static const struct {
        int w, h;
        VidkChroma c;
    } sizes[] = {
        {64, 48, VIDK_CHROMA_420}, {48, 80, VIDK_CHROMA_422}, {1920, 1088, VIDK_CHROMA_420}};
    static const unsigned plane_sets[] = {7, 1, 5, 6, 4, 3};
    static const int streams[] = {2, 3, 4, 0, 1};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        const int big = sizes[si].w * sizes[si].h >= 1920 * 1088;
        VidkH264CoefFrame fr;
        VidkH264Batch full, b;
        TPic pred, other, ref, got;
        char what[700];
        frame_new(&fr, sizes[si].w, sizes[si].h, sizes[si].c, 8);
        random_scaling(&fr.scaling, 0);
        random_mbs(&fr, 34, 40); /* qp37-like: few, small levels */
        for (int i = 0; i < fr.mb_w * fr.mb_h; i++)
            if (rnd(0, 1))
                fr.mb[i].flags |= VIDK_H264_MB_8x8,
                    fr.mb[i].flags &= (uint8_t)~VIDK_H264_MB_I16x16;
        fill_levels(&fr, L_SPARSE);
        tpic_new(&pred, fr.w, fr.h, fr.chroma, rnd(0, 1));
        tpic_new(&other, fr.w, fr.h, fr.chroma, 0);
        tpic_new(&ref, fr.w, fr.h, fr.chroma, 0);
        tpic_new(&got, fr.w, fr.h, fr.chroma, rnd(0, 1));
        pic_random(&pred.p, 1);
        vidk_h264_batch_init(&full);
        vidk_h264_batch_init(&b);
        CHECK(vidk_h264_batch_build(cctx, &full, &fr) == 0);
        CHECK(full.list[0].count > 0 && full.list[1].count > 0);
        const int n_sets = big ? (tiny ? 2 : 3) : (tiny ? 3 : 6);
        int call = 0;
        for (unsigned lists = 1; lists <= 3; lists++)
            for (int ps = 0; ps < n_sets; ps++)
                for (int mx = 0; mx < (big ? 1 : 3); mx++) {
                    const uint32_t max = mx == 0 ? 0 : mx == 1 ? 1 : 3;
                    vidk_h264_batch_free(&b);
                    vidk_h264_batch_init(&b);
                    CHECK(vidk_h264_batch_build(cctx, &b, &fr) == 0);
                    filter_batch(&b, lists, plane_sets[ps], max);
                    pic_copy(&ref.p, &pred.p);
                    CHECK(vidk_h264_batch_inverse(cctx, &b, &ref.p) == 0);
                    for (int k = 0; k < (tiny ? 1 : big ? 3 : 4); k++, call++) {
                        VidkH264CudaOpts o;
                        vidk_cuda_h264_step_opts(&o, VIDK_H264_CUDA_PLANES);
                        o.plane = 1;
                        o.pipeline = rnd(0, 7) != 0;
                        o.streams = streams[call % 5];
                        o.chunk = k == 0 ? 0 : rnd(0, 1) ? rnd(1, 64) : rnd(256, 4096);
                        o.threads = thread_choices[rnd(0, 5)];
                        o.host_threads = rnd(0, 1) ? 0 : rnd(1, 5);
                        o.staged = rnd(0, 3) == 0;
                        /* The plane slots hold another picture's reconstruction first. */
                        pic_random(&other.p, 0);
                        CHECK(run_binv(&full, &other.p, &o) == 0);
                        const int reg = call % 3 == 2;
                        const unsigned pmask = emu ? (unsigned)rnd(1, 7) : 7u;
                        if (reg && reg_pic(&got, 1, pmask) < 0) {
                            CHECK(0);
                            continue;
                        }
                        pic_copy(&got.p, &pred.p);
                        snprintf(what, sizeof(what),
                                 "plane mode %dx%d chroma %d lists %u planes %u max %u (%ux4x4 "
                                 "%ux8x8)%s call %d",
                                 fr.w, fr.h, fr.chroma, lists, plane_sets[ps], max,
                                 b.list[0].count, b.list[1].count, reg ? " registered" : "",
                                 call);
                        const int r = run_binv(&b, &got.p, &o);
                        if (r) {
                            char os[256];
                            opts_str(&o, os, sizeof(os));
                            fprintf(stderr, "%s: error %d [%s]\n", what, r, os);
                        }
                        CHECK(r == 0);
                        if (!r) same_pics(&ref.p, &got.p, &b, what, &o);
                        if (reg) CHECK(reg_pic(&got, 0, pmask) == 0);
                    }
                }
        vidk_h264_batch_free(&b);
        vidk_h264_batch_free(&full);
        tpic_free(&pred);
        tpic_free(&other);
        tpic_free(&ref);
        tpic_free(&got);
        vidk_h264_coef_frame_free(&fr);
    }
}

/* ---- errors
 * ---------------------------------------------------------------------------------------------
 */

static void test_errors(void) {
    VidkH264CoefFrame fr;
    TPic pic, src, small;
    VidkH264Batch b;
    VidkH264CudaOpts o;
    frame_new(&fr, 32, 32, VIDK_CHROMA_420, 8);
    random_mbs(&fr, 0, 51);
    fill_levels(&fr, L_DENSE);
    tpic_new(&pic, 32, 32, VIDK_CHROMA_420, 0);
    tpic_new(&src, 32, 32, VIDK_CHROMA_420, 0);
    tpic_new(&small, 16, 32, VIDK_CHROMA_420, 0);
    vidk_h264_batch_init(&b);
    CHECK(vidk_h264_batch_build(cctx, &b, &fr) == 0);
    CHECK(b.list[0].count > 0);

    /* Options out of range. */
    const int bad_field = 20;
    for (int k = 0; k < bad_field; k++) {
        vidk_cuda_h264_default_opts(&o);
        switch (k) {
        case 0:
            o.threads = 33;
            break;
        case 1:
            o.threads = 1024;
            break;
        case 2:
            o.work = 0;
            break;
        case 3:
            o.work = 17;
            break;
        case 4:
            o.graphs = 2;
            break;
        case 5:
            o.compact = 2;
            break;
        case 6:
            o.sparse = -1;
            break;
        case 7:
            o.streams = -1;
            break;
        case 8:
            o.chunk = -5;
            break;
        case 9:
            o.fused = 3;
            break;
        case 10:
            o.streams = 17;
            break;
        case 11:
            o.host = 2;
            break;
        case 12:
            o.host_threads = -1;
            break;
        case 13:
            o.host_threads = 65;
            break;
        case 14:
            o.plane = -2;
            break;
        case 15:
            o.plane = 2;
            break;
        case 16:
            o.dense_vec = 2;
            break;
        case 17:
            o.dense_vec = -1;
            break;
        case 18:
            o.staged = 2;
            break;
        case 19:
            o.staged = -1;
            break;
        }
        CHECK(run_binv(&b, &pic.p, &o) == VIDK_ERR(EINVAL));
        CHECK(run_finv(&fr, &pic.p, &o) == VIDK_ERR(EINVAL));
        CHECK(run_fwd(&src.p, &pic.p, &fr, NULL, &o) == VIDK_ERR(EINVAL));
    }
    CHECK(vidk_cuda_h264_step_opts(&o, -1) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_h264_step_opts(&o, VIDK_H264_CUDA_STEPS) == VIDK_ERR(EINVAL));
    CHECK(!strcmp(vidk_cuda_h264_step_name(99), "?"));

    /* Arguments. */
    CHECK(run_binv(NULL, &pic.p, NULL) == VIDK_ERR(EINVAL));
    CHECK(run_binv(&b, NULL, NULL) == VIDK_ERR(EINVAL));
    CHECK(run_binv(&b, &small.p, NULL) == VIDK_ERR(EINVAL));
    CHECK(run_finv(NULL, &pic.p, NULL) == VIDK_ERR(EINVAL));
    CHECK(run_finv(&fr, &small.p, NULL) == VIDK_ERR(EINVAL));
    CHECK(run_fwd(&src.p, &small.p, &fr, NULL, NULL) == VIDK_ERR(EINVAL));
    CHECK(run_fwd(NULL, &pic.p, &fr, NULL, NULL) == VIDK_ERR(EINVAL));
    {
        const uint16_t x = b.list[0].x[0];
        b.list[0].x[0] = 30; /* not a multiple of 4 / outside */
        CHECK(run_binv(&b, &pic.p, NULL) == VIDK_ERR(EINVAL));
        b.list[0].x[0] = 32;
        CHECK(run_binv(&b, &pic.p, NULL) == VIDK_ERR(EINVAL));
        b.list[0].x[0] = x;
        const uint8_t qp = b.list[0].qp[0];
        b.list[0].qp[0] = 52;
        CHECK(run_binv(&b, &pic.p, NULL) == VIDK_ERR(EINVAL));
        b.list[0].qp[0] = qp;
        const uint8_t fl = b.list[0].flags[0];
        const uint32_t di = b.list[0].dc_index[0];
        b.list[0].flags[0] |= VIDK_H264_BLK_DC;
        b.list[0].dc_index[0] = 16 * b.dc.count; /* no such group */
        CHECK(run_binv(&b, &pic.p, NULL) == VIDK_ERR(EINVAL));
        b.list[0].flags[0] = 0x80;
        CHECK(run_binv(&b, &pic.p, NULL) == VIDK_ERR(EINVAL));
        b.list[0].flags[0] = fl;
        b.list[0].dc_index[0] = di;
        b.list[0].count = b.list[0].capacity + 1;
        CHECK(run_binv(&b, &pic.p, NULL) == VIDK_ERR(EINVAL));
        b.list[0].count = 0;
        CHECK(run_binv(&b, &pic.p, NULL) == 0);
    }
    fr.mb[0].qp[0] = 99;
    CHECK(run_finv(&fr, &pic.p, NULL) == VIDK_ERR(EINVAL));
    CHECK(run_fwd(&src.p, &pic.p, &fr, NULL, NULL) == VIDK_ERR(EINVAL));
    if (!emu) { /* the device entry points on a context without CUDA state */
        CHECK(vidk_cuda_h264_batch_inverse(cctx, &b, &pic.p, NULL) == VIDK_ERR_NODEV);
        CHECK(vidk_cuda_h264_frame_inverse(cctx, &fr, &pic.p, NULL) == VIDK_ERR_NODEV);
        CHECK(vidk_cuda_h264_batch_forward(cctx, &src.p, &pic.p, &fr, NULL, NULL) ==
              VIDK_ERR_NODEV);
    }
    vidk_cuda_h264_release(cctx); /* no CUDA state: a no-op */
    vidk_h264_batch_free(&b);
    tpic_free(&pic);
    tpic_free(&src);
    tpic_free(&small);
    vidk_h264_coef_frame_free(&fr);
}

/* ---- real video
 * ------------------------------------------------------------------------------------------ */

/* Frame `index` of an 8-bit 4:2:0 Y4M file into pic (cropped / edge-extended to its size;
 * 4:2:2 pictures take each chroma row twice, 4:0:0 only luma). 0 on success. */
static int read_y4m(const char *path, int index, VidkPicture *pic, int *cw, int *chh) {
    FILE *f = fopen(path, "rb");
    char line[512];
    int w = 0, h = 0, ok;
    if (!f) return -1;
    ok = fgets(line, sizeof(line), f) && !strncmp(line, "YUV4MPEG2 ", 10);
    for (char *t = ok ? strtok(line + 10, " \n") : NULL; t; t = strtok(NULL, " \n")) {
        if (t[0] == 'W') w = atoi(t + 1);
        if (t[0] == 'H') h = atoi(t + 1);
        if (t[0] == 'C' && strncmp(t, "C420", 4)) ok = 0;
    }
    if (cw) *cw = w;
    if (chh) *chh = h;
    const size_t fsize = (size_t)w * h + 2 * (size_t)((w + 1) / 2) * ((h + 1) / 2);
    uint8_t *buf = ok && w > 0 && h > 0 && w <= 8192 && h <= 8192 ? malloc(fsize) : NULL;
    for (int i = 0; buf && i <= index; i++)
        if (!fgets(line, sizeof(line), f) || strncmp(line, "FRAME", 5) ||
            fread(buf, 1, fsize, f) != fsize) {
            free(buf);
            buf = NULL;
        }
    fclose(f);
    if (!buf) return -1;
    if (!pic) {
        free(buf);
        return 0;
    }
    for (int p = 0; p < n_planes(pic->chroma); p++) {
        int pw, ph;
        vidk_picture_plane_size(pic, p, &pw, &ph);
        const int sw = p ? (w + 1) / 2 : w, sh = p ? (h + 1) / 2 : h;
        const uint8_t *s = buf + (p ? (size_t)w * h + (size_t)(p - 1) * sw * sh : 0);
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                const int sy = pic->chroma == VIDK_CHROMA_422 && p ? y / 2 : y;
                *pel(pic, p, x, y) = s[(size_t)TCLIP(sy, 0, sh - 1) * sw + TCLIP(x, 0, sw - 1)];
            }
    }
    free(buf);
    return 0;
}

/* A clip: frame 1 predicted from frame 0 (inter macroblocks) or from a flat 128 (intra),
 * encoded by the c backend at a few quality levels, then every path on those levels. */
static void test_clip(const char *dir, const char *file) {
    char path[4096];
    int w0, h0;
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    if (read_y4m(path, 0, NULL, &w0, &h0) < 0) {
        fprintf(stderr, "real video: cannot read %s\n", path);
        CHECK(0);
        return;
    }
    const int w = (w0 + 15) / 16 * 16, h = (h0 + 15) / 16 * 16;
    const int two = read_y4m(path, 1, NULL, NULL, NULL) == 0;
    if (tiny && w * h > 416 * 240) return;
    static const VidkChroma chromas[] = {VIDK_CHROMA_420, VIDK_CHROMA_422, VIDK_CHROMA_400};
    for (int ci = 0; ci < (light ? 1 : 3); ci++) {
        for (int q = tiny; q < 2; q++) {
            TPic src, pred;
            VidkH264CoefFrame fr;
            char name[256];
            const VidkChroma c = chromas[ci];
            tpic_new(&src, w, h, c, 0);
            tpic_new(&pred, w, h, c, 1);
            CHECK(read_y4m(path, two ? 1 : 0, &src.p, NULL, NULL) == 0);
            CHECK(read_y4m(path, 0, &pred.p, NULL, NULL) == 0);
            frame_new(&fr, w, h, c, 8);
            random_scaling(&fr.scaling, q);
            random_mbs(&fr, q ? 30 : 12,
                       q ? 42 : 24); /* dense (high quality) and sparse levels */
            if (!two) /* a single frame: everything intra against a flat prediction */
                for (int i = 0; i < fr.mb_w * fr.mb_h; i++)
                    fr.mb[i].flags |= VIDK_H264_MB_INTRA;
            for (int my = 0; my < fr.mb_h; my++)
                for (int mx = 0; mx < fr.mb_w; mx++) {
                    if (!(fr.mb[my * fr.mb_w + mx].flags & VIDK_H264_MB_INTRA)) continue;
                    for (int p = 0; p < n_planes(c); p++) {
                        const int mw = p ? 8 : 16,
                                  mh = p ? (c == VIDK_CHROMA_422 ? 16 : 8) : 16;
                        for (int y = 0; y < mh; y++)
                            memset(pel(&pred.p, p, mx * mw, my * mh + y), 128, (size_t)mw);
                    }
                }
            const int nnz = vidk_h264_batch_forward(cctx, &src.p, &pred.p, &fr, NULL);
            CHECK(nnz >= 0);
            snprintf(name, sizeof(name), "%s %dx%d chroma %d qp %s (%d levels)", file, w, h, c,
                     q ? "30-42" : "12-24", nnz);
            if (verbose) fprintf(stderr, "real video: %s\n", name);
            check_inverse(name, &fr, &pred.p, !light || w * h < 1920 * 1088);
            check_forward(name, &src.p, &pred.p, &fr, 0);
            vidk_h264_coef_frame_free(&fr);
            tpic_free(&src);
            tpic_free(&pred);
        }
    }
}

static int test_real(void) {
    const char *env = getenv("VIDK_VIDEO_DIR");
    const char *dir = env && *env ? env : VIDK_TEST_VIDEO_DIR;
    DIR *d = *dir ? opendir(dir) : NULL;
    int clips = 0;
    if (!d) {
        fprintf(stderr, "real video: none (no folder '%s'; set VIDK_VIDEO_DIR)\n", dir);
        CHECK(!(env && *env)); /* a folder named explicitly must exist */
        test_video_missing("real clips missing: real-video part not run");
        return 0;
    }
    for (struct dirent *e; (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".y4m")) continue;
        test_clip(dir, e->d_name);
        clips++;
    }
    closedir(d);
    CHECK(!(env && *env) || clips > 0);
    return clips;
}

/* Many calls on one context: slots reused and grown, graphs updated and rebuilt. */
static void test_sequence(void) {
    static const int sizes[][2] = {{64, 48},   {1280, 720}, {64, 48},
                                   {352, 288}, {16, 16},    {1280, 720}};
    for (int i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
        if (tiny && sizes[i][0] > 352) continue;
        VidkH264CoefFrame fr;
        TPic pred;
        char name[64];
        frame_new(&fr, sizes[i][0], sizes[i][1], VIDK_CHROMA_420, 8);
        random_mbs(&fr, 20, 40);
        fill_levels(&fr, L_MIXED);
        tpic_new(&pred, fr.w, fr.h, fr.chroma, 0);
        pic_random(&pred.p, 1);
        snprintf(name, sizeof(name), "sequence %d (%dx%d)", i, fr.w, fr.h);
        check_inverse(name, &fr, &pred.p, 0);
        tpic_free(&pred);
        vidk_h264_coef_frame_free(&fr);
    }
}

static int open_ctx(VidkContext **ctx, VidkBackend b) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = b;
    return vidk_open(ctx, &s);
}

#endif /* VIDK_HAVE_CUDA */

int main(int argc, char **argv) {
    const char *req = getenv("VIDK_REQUIRE_GPU");
    const int require = req && *req && strcmp(req, "0");
#if !VIDK_HAVE_CUDA
    (void)argc, (void)argv;
    fprintf(stderr, "test_h264_cuda: built without CUDA: skipped\n");
    return require ? 1 : 77;
#else
    const char *san = getenv("VIDK_UNDER_SANITIZER");
    emu = argc > 1 && !strcmp(argv[1], "--emu");
    tiny = san && *san && strcmp(san, "0");
    light = tiny || emu;
    verbose = getenv("VIDK_TEST_VERBOSE") != NULL;
    if (!emu && vidk_cuda_device_count() == 0) {
        if (require) {
            fprintf(stderr, "test_h264_cuda: no CUDA device, but VIDK_REQUIRE_GPU is set\n");
            return 1;
        }
        fprintf(stderr, "test_h264_cuda: no CUDA device: skipped\n");
        return 77;
    }
    seed = test_seed();
    CHECK(open_ctx(&cctx, VIDK_BACKEND_C) == 0);
    CHECK(open_ctx(&gctx, emu ? VIDK_BACKEND_SIMD : VIDK_BACKEND_CUDA) == 0 ||
          (emu && open_ctx(&gctx, VIDK_BACKEND_C) == 0));
    if (!cctx || !gctx) return test_finish("test_h264_cuda");
    test_errors();
    test_hand_batches();
    test_plane_sparse();
    test_all_qps();
    test_random_frames();
    test_sequence();
    const int clips = test_real();
    vidk_close(&gctx);
    vidk_close(&cctx);
    fprintf(stderr, "test_h264_cuda%s: %ld comparisons, %d real clip(s)\n",
            emu ? " (emulated)" : "", n_cmp, clips);
    return test_finish(emu ? "test_h264_cuda --emu" : "test_h264_cuda");
#endif
}
