/* `vidkern-bench me`: full-search motion estimation benchmark. Reproduces the
 * evaluation of Monteiro et al. (CIF container/cars, search areas 16x16..128x128,
 * serial vs OpenMP vs GPU) and extends it to HD sizes, all H.264 partitions, and every
 * backend, with the complexity model t ~ (2R+1)^2 and the SAD-instruction ceiling.
 * See docs/ME.md ("Benchmark") for what every column means. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "cli.h"
#include "cuda/cuda_backend.h"
#include "cuda/me_cuda.h"
#include "gen.h"
#include "mosaic.h"
#include "picio.h"

#define CMD "me"

/* VABSDIFF4 on sm_90: ~16 T instructions/s = 64 T byte absolute differences/s
 * (DESIGN.md, measured on the GPU machines here). */
#define CEIL_BYTE_AD_PER_S 64e12

#define MAX_LIST    16
#define MAX_SOURCES 32

static void help(void) {
    printf("usage: vidkern-bench me [options]\n\n"
           "Times vidk_me_search per frame pair for every source x shapes x range x backend;\n"
           "for cuda also the sequence mode (rows cuda-seq: frames streamed, reference kept\n"
           "on the device, next frame uploaded during the search; time per frame).\n\n"
           "options:\n"
           "  --sizes LIST       cif, 720p, 1080p, 2160p or WxH (default cif,1080p); cif with\n"
           "                     real video = the container and cars clips\n"
           "  --ranges LIST      search ranges R (default 8,16,32,64; max %d); the paper's\n"
           "                     N x N search area is R = (N - 4) / 2\n"
           "  --shapes LIST      16x16, h264 (41 partitions), 4x4, all, or one block size\n"
           "                     (default 16x16,h264)\n"
           "  --backends LIST    c,simd,threads,cuda (default: all usable here)\n"
           "  --frames N         frame pairs per source (default 3)\n"
           "  --runs N           timed runs per configuration after warm-up (default 7)\n"
           "  --source S         real (clips; mosaic for HD), gen (generated), both\n"
           "                     (default real; generated when no clips are found)\n"
           "  --video DIR        folder of the real clips (default $VIDK_VIDEO_DIR or\n"
           "                     ../shared/video)\n"
           "  --max-seconds S    time budget per configuration and backend (default 1; 0 =\n"
           "                     none): slower backends are timed on a stripe of k macroblock\n"
           "                     rows and scaled, labelled \"(est. from k rows)\"\n"
           "  --csv FILE, --json FILE, --markdown FILE   also write the results there\n"
           "  --threads N, --cpumask M, --device N, --quiet   as for every command\n",
           VIDK_ME_MAX_RANGE);
}

/* ---- sources ------------------------------------------------------------------ */
typedef struct BSource {
    char label[64];     /* "container (real)", "mosaic (real)", "generated" */
    char size_name[16]; /* "cif", "1080p", "640x360" */
    char kind[8];       /* real | mosaic | gen */
    int w, h;
    int npics;
    VidkPicture pics[64];
} BSource;

static void source_free(BSource *s) {
    for (int i = 0; i < s->npics; i++)
        vidk_picture_free(&s->pics[i]);
    s->npics = 0;
}

static int load_clip(BSource *s, const char *path, const char *label, int nframes) {
    VioReader *r = NULL;
    char err[256];
    if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) return -1;
    const VioFormat *f = vio_reader_format(r);
    s->w = f->w, s->h = f->h;
    snprintf(s->label, sizeof(s->label), "%s (real)", label);
    snprintf(s->kind, sizeof(s->kind), "real");
    while (s->npics < nframes) {
        if (vio_picture_alloc(&s->pics[s->npics], f) < 0) break;
        if (vio_reader_read(r, &s->pics[s->npics]) != 1) {
            vidk_picture_free(&s->pics[s->npics]);
            break;
        }
        s->npics++;
    }
    const int bitdepth = f->bitdepth;
    vio_reader_close(&r); /* f is gone with r */
    if (s->npics < 2 || bitdepth != 8) {
        source_free(s);
        return -1;
    }
    return 0;
}

/* A made source: the mosaic of the real clips (m) or the generated video (m NULL). */
static int load_made(BSource *s, const Mosaic *m, int w, int h, int nframes) {
    s->w = w, s->h = h;
    snprintf(s->label, sizeof(s->label), m ? "mosaic (real)" : "generated");
    snprintf(s->kind, sizeof(s->kind), m ? "mosaic" : "gen");
    if (bench_make_pics(s->pics, nframes, m, w, h, VIDK_CHROMA_400) < 0) return -1;
    s->npics = nframes;
    return 0;
}

/* Copy rows [y0, y0 + h) of src's luma into a new 4:0:0 picture (a real sub-picture:
 * its edges are padded by replication like any picture's). */
static int crop_rows(const VidkPicture *src, int y0, int h, VidkPicture *dst) {
    int e = vidk_picture_alloc(dst, src->w, h, VIDK_CHROMA_400, src->bitdepth, src->pad);
    if (e < 0) return e;
    const size_t row = (size_t)src->w * (src->bitdepth > 8 ? 2 : 1);
    for (int y = 0; y < h; y++)
        memcpy((uint8_t *)dst->data[0] + (ptrdiff_t)y * dst->stride[0],
               (const uint8_t *)src->data[0] + (ptrdiff_t)(y0 + y) * src->stride[0], row);
    vidk_picture_pad_edges(dst);
    return 0;
}

/* ---- results ------------------------------------------------------------------- */
typedef struct BResult {
    int done;     /* measured (else err says why not) */
    double ms;    /* median per frame, scaled to the full picture */
    int est_rows; /* 0 = full picture; k = timed on k macroblock rows and scaled */
    int runs;
    double sad_px, zero; /* of the smallest shape, frame pair 0 */
    int stats_rows;      /* 0 = from the full picture, else from a k-row stripe */
    int has_cuda;
    VidkCudaTiming cuda; /* medians */
    int mismatch;        /* field differs from the first full-picture backend */
    const char *mismatch_with;
    /* cuda only, "sequence" mode: frames streamed, reference resident, next upload
     * overlapped (measure_seq); ms is then the throughput per frame. */
    int seq_done, seq_runs, seq_mismatch;
    double seq_ms;
    VidkCudaTiming seq_cuda; /* medians */
    char err[160];
} BResult;

typedef struct Bench {
    /* options */
    int nsizes, nranges, nmodes, nbackends;
    char sizes[MAX_LIST][16];
    int ranges[MAX_LIST];
    unsigned modes[MAX_LIST];
    char mode_names[MAX_LIST][16];
    VidkBackend backends[MAX_LIST];
    int frames, runs, quiet, device;
    double max_seconds;
    /* state */
    VidkContext *ctx[VIDK_BACKEND_COUNT];
    int nsrc;
    BSource *src[MAX_SOURCES];
    BResult *res; /* [src][mode][range][backend] */
    BenchNotes notes;
    BenchMeta mt;
} Bench;

static BResult *result(Bench *b, int s, int m, int r, int k) {
    return &b->res[((s * b->nmodes + m) * b->nranges + r) * b->nbackends + k];
}

static int smallest_shape(unsigned shapes) {
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        if (shapes & VIDK_ME_SHAPE(bs)) return bs;
    return VIDK_BLOCK_16x16;
}

static int fields_equal(const VidkMeField *a, const VidkMeField *b) {
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!a->res[bs] || !b->res[bs]) continue;
        const size_t n = (size_t)a->grid_w[bs] * a->grid_h[bs];
        for (size_t i = 0; i < n; i++) {
            const VidkMeResult *x = &a->res[bs][i], *y = &b->res[bs][i];
            if (x->mv.x != y->mv.x || x->mv.y != y->mv.y || x->cost != y->cost ||
                x->sad != y->sad)
                return 0;
        }
    }
    return 1;
}

static void field_stats(const VidkMeField *f, unsigned shapes, double *sad_px, double *zero) {
    const int bs = smallest_shape(shapes);
    const size_t n = (size_t)f->grid_w[bs] * f->grid_h[bs];
    double s = 0, z = 0;
    for (size_t i = 0; i < n; i++) {
        s += f->res[bs][i].sad;
        z += !f->res[bs][i].mv.x && !f->res[bs][i].mv.y;
    }
    *sad_px = s / ((double)n * vidk_block_width((VidkBlockSize)bs) *
                   vidk_block_height((VidkBlockSize)bs));
    *zero = z / (double)n;
}

/* A set of frame pairs at some number of macroblock rows (the full picture or a stripe). */
typedef struct Work {
    int rows; /* macroblock rows; == mb_h for the full picture */
    int npics;
    VidkPicture pics[64];
    const VidkPicture *use; /* pics of the source itself (full) or the stripe's */
    VidkMeField field;
} Work;

static void work_free(Work *w) {
    for (int i = 0; i < w->npics; i++)
        vidk_picture_free(&w->pics[i]);
    w->npics = 0;
    vidk_me_field_free(&w->field);
}

static int work_make(Work *w, const BSource *s, int rows, unsigned shapes) {
    memset(w, 0, sizeof(*w));
    const int mb_h = (s->h + 15) / 16;
    w->rows = rows;
    int h = s->h, e;
    if (rows >= mb_h) {
        w->use = s->pics;
    } else {
        /* The middle k macroblock rows: typical content, away from the borders. */
        h = rows * 16;
        int y0 = (mb_h - rows) / 2 * 16;
        if (y0 + h > s->h) y0 = s->h - h;
        for (; w->npics < s->npics; w->npics++)
            if ((e = crop_rows(&s->pics[w->npics], y0, h, &w->pics[w->npics])) < 0) {
                work_free(w);
                return e;
            }
        w->use = w->pics;
    }
    if ((e = vidk_me_field_alloc(&w->field, s->w, h, shapes)) < 0) work_free(w);
    return e;
}

/* One search of pair i (frame i + 1 against frame i); seconds or <0 error. */
static double run_pair(VidkContext *ctx, const BSource *s, Work *w, const VidkMeParams *mp,
                       int i, int *err) {
    const int np = s->npics - 1;
    const int k = i % np;
    const double t0 = cli_now();
    *err = vidk_me_search(ctx, &w->use[k + 1], &w->use[k], mp, &w->field);
    return cli_now() - t0;
}

/* Sequence mode (cuda): the source's frames streamed in a loop, each searched against the
 * one before it, with vidk_cuda_me_search_seq: the reference is the device copy of the
 * previous call's cur and the next frame is sent while the current one is searched, so
 * one frame crosses PCIe per call, hidden behind the search. Two warm-up calls, then
 * `runs` timed calls; ms = median time per call = time per frame at steady state
 * (throughput; a frame's own upload happened during the previous call). The field of
 * pair (1, 0) in steady state is checked against the reference field. */
static void measure_seq(Bench *b, VidkContext *ctx, const BSource *s, Work *w,
                        const VidkMeParams *mp, BResult *out, const VidkMeField *ref_field,
                        int ref_set) {
    const int n = s->npics;
    const unsigned both = VIDK_CUDA_ME_REF_IS_PREV_CUR | VIDK_CUDA_ME_CUR_IS_PREV_NEXT;
    const int runs = b->runs < 3 ? 3 : b->runs;
    double times[256];
    BenchDevTimes dv;
    int nt = 0, checked = 0;
    dv.n = 0;
    if (n < 2) return;
    for (int i = 0; i < runs + 2; i++) {
        const VidkPicture *cur = &w->use[(i + 1) % n], *ref = &w->use[i % n];
        const VidkPicture *next = &w->use[(i + 2) % n];
        const double t0 = cli_now();
        const int e = vidk_cuda_me_search_seq(ctx, cur, ref, next, mp, &w->field, i ? both : 0);
        const double t = cli_now() - t0;
        if (e < 0) {
            snprintf(out->err, sizeof(out->err), "sequence: %s", vidk_strerror(e));
            return;
        }
        if (i >= 2 && ref_set && !checked && i % n == 0) {
            checked = 1;
            out->seq_mismatch = !fields_equal(ref_field, &w->field);
        }
        VidkCudaTiming ct;
        if (i < 2 || vidk_cuda_last_timing(ctx, &ct) < 0) continue;
        times[nt++] = t;
        bench_dev_add(&dv, ct.kernel_ms, ct.h2d_ms, ct.d2h_ms, ct.total_ms);
        out->seq_cuda.h2d_bytes = ct.h2d_bytes, out->seq_cuda.d2h_bytes = ct.d2h_bytes;
    }
    if (!nt) return;
    out->seq_ms = 1e3 * bench_median(times, nt);
    bench_dev_medians(&dv, &out->seq_cuda.kernel_ms, &out->seq_cuda.h2d_ms,
                      &out->seq_cuda.d2h_ms, &out->seq_cuda.total_ms);
    out->seq_runs = nt;
    out->seq_done = 1;
}

static int measure(Bench *b, VidkBackend be, const BSource *s, const VidkMeParams *mp,
                   BResult *out, VidkMeField *ref_field, int *ref_set, const char **ref_name) {
    VidkContext *ctx = b->ctx[be];
    const int mb_h = (s->h + 15) / 16;
    const double budget = b->max_seconds > 0 ? b->max_seconds : INFINITY;
    int min_rows = mb_h;
    if (be == VIDK_BACKEND_C || be == VIDK_BACKEND_SIMD) min_rows = 1;
    /* Threads split work by rows: keep every worker busy on a stripe. */
    if (be == VIDK_BACKEND_THREADS) min_rows = vidk_imin(mb_h, 2 * vidk_get_threads(ctx));
    Work w;
    int e;
    double used = 0, t_warm = 0;
    int rows = mb_h;
    int probe_kept = 0;
    memset(&w, 0, sizeof(w));
    if (isfinite(budget) && min_rows < mb_h) {
        if ((e = work_make(&w, s, min_rows, mp->shapes)) < 0) goto fail;
        const double t = run_pair(ctx, s, &w, mp, 0, &e);
        if (e < 0) goto fail;
        used = t;
        const double per_row = t / min_rows;
        if (per_row * mb_h * (b->runs + 1) <= budget - used) {
            rows = mb_h;
        } else {
            rows = (int)((budget - used) / ((b->runs + 1) * per_row));
            if (rows <= min_rows) rows = min_rows;
            if (rows >= mb_h) rows = mb_h;
        }
        if (rows == min_rows) {
            probe_kept = 1; /* the probe was this stripe's warm-up */
            t_warm = t;
        } else {
            work_free(&w);
        }
    }
    if (!probe_kept) {
        if ((e = work_make(&w, s, rows, mp->shapes)) < 0) goto fail;
        /* Warm-up: caches, page faults, device buffers (twice on the GPU: the first call
         * allocates). */
        for (int i = 0; i < (be == VIDK_BACKEND_CUDA ? 2 : 1); i++) {
            t_warm = run_pair(ctx, s, &w, mp, 0, &e);
            if (e < 0) goto fail;
            used += t_warm;
        }
    }
    /* Statistics and cross-check on pair 0 (the warm-up's result is in w.field). */
    field_stats(&w.field, mp->shapes, &out->sad_px, &out->zero);
    out->stats_rows = rows < mb_h ? rows : 0;
    if (rows == mb_h) {
        if (!*ref_set) {
            for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
                if (w.field.res[bs])
                    memcpy(ref_field->res[bs], w.field.res[bs],
                           sizeof(VidkMeResult) * w.field.grid_w[bs] * w.field.grid_h[bs]);
            *ref_set = 1;
            *ref_name = vidk_backend_name(be);
        } else if (!fields_equal(ref_field, &w.field)) {
            out->mismatch = 1;
            out->mismatch_with = *ref_name;
        }
    }
    int runs = b->runs;
    if (isfinite(budget) && t_warm > 0) {
        const double fit = floor((budget - used) / t_warm);
        runs = fit < 1 ? (probe_kept ? 0 : 1) : fit < runs ? (int)fit : runs;
    }
    double times[256];
    BenchDevTimes dv;
    dv.n = 0;
    if (!runs) { /* budget spent by the probe: the probe is the one sample */
        times[0] = t_warm;
        runs = 1;
    } else {
        for (int i = 0; i < runs; i++) {
            times[i] = run_pair(ctx, s, &w, mp, i, &e);
            if (e < 0) goto fail;
            VidkCudaTiming ct;
            if (be == VIDK_BACKEND_CUDA && vidk_cuda_last_timing(ctx, &ct) == 0) {
                bench_dev_add(&dv, ct.kernel_ms, ct.h2d_ms, ct.d2h_ms, ct.total_ms);
                out->cuda.h2d_bytes = ct.h2d_bytes, out->cuda.d2h_bytes = ct.d2h_bytes;
            }
        }
    }
    out->ms = 1e3 * bench_median(times, runs) * mb_h / rows;
    out->est_rows = rows < mb_h ? rows : 0;
    out->runs = runs;
    if (dv.n) {
        out->has_cuda = 1;
        bench_dev_medians(&dv, &out->cuda.kernel_ms, &out->cuda.h2d_ms, &out->cuda.d2h_ms,
                          &out->cuda.total_ms);
    }
    out->done = 1;
    if (be == VIDK_BACKEND_CUDA && rows == mb_h)
        measure_seq(b, ctx, s, &w, mp, out, ref_field, *ref_set);
    work_free(&w);
    return 0;
fail:
    snprintf(out->err, sizeof(out->err), "%s", vidk_strerror(e));
    work_free(&w);
    return e;
}

/* ---- derived numbers -------------------------------------------------------------- */
static double cand_axis(int r) {
    return 2.0 * r + 1;
}

/* Byte absolute differences per frame: every sample of the padded macroblock grid
 * against every candidate (the 4x4-SAD base; larger shapes are sums of those). */
static double byte_ads(const BSource *s, int r) {
    return (double)((s->w + 15) / 16 * 16) * ((s->h + 15) / 16 * 16) * cand_axis(r) *
           cand_axis(r);
}

static double blocks_of(const BSource *s, unsigned shapes) {
    int gw, gh;
    const int bs = smallest_shape(shapes);
    const int bw = vidk_block_width((VidkBlockSize)bs),
              bh = vidk_block_height((VidkBlockSize)bs);
    if (bw > 16) {
        gw = (s->w + bw - 1) / bw, gh = (s->h + bh - 1) / bh;
    } else {
        gw = (s->w + 15) / 16 * (16 / bw), gh = (s->h + 15) / 16 * (16 / bh);
    }
    return (double)gw * gh;
}

/* Speed-up of result x against backend `vs` of the same configuration; 0 if not run. */
static double speedup_of(Bench *b, int s, int m, int r, double ms, VidkBackend vs, int *est);
static double speedup(Bench *b, int s, int m, int r, int k, VidkBackend vs, int *est) {
    const BResult *x = result(b, s, m, r, k);
    if (b->backends[k] == vs || !x->done) return 0;
    const double v = speedup_of(b, s, m, r, x->ms, vs, est);
    if (v > 0) *est |= x->est_rows != 0;
    return v;
}

static void fmt_time(char *buf, size_t n, const BResult *x) {
    if (!x->done) {
        snprintf(buf, n, "failed: %.60s", x->err);
        return;
    }
    const double ms = x->ms;
    const char *f = ms >= 100 ? "%.1f" : ms >= 1 ? "%.3f" : "%.4f";
    int o = snprintf(buf, n, f, ms);
    if (x->est_rows && o > 0 && (size_t)o < n)
        snprintf(buf + o, n - (size_t)o, " (est. from %d rows)", x->est_rows);
}

static void fmt_speedup(char *buf, size_t n, double v, int est) {
    if (v <= 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n,
                 v >= 100    ? "%s%.0fx"
                 : v >= 0.95 ? "%s%.1fx"
                             : "%s%.2gx",
                 est ? "~" : "", v);
}

/* ---- device / command description ----------------------------------------------- */
/* Speed-up of a time `ms` of configuration (s, m, r) against backend `vs`; 0 if not run. */
static double speedup_of(Bench *b, int s, int m, int r, double ms, VidkBackend vs, int *est) {
    for (int j = 0; j < b->nbackends; j++) {
        if (b->backends[j] != vs) continue;
        const BResult *o = result(b, s, m, r, j);
        if (!o->done || ms <= 0) return 0;
        *est = o->est_rows != 0;
        return o->ms / ms;
    }
    return 0;
}

/* The "cuda-seq" row (sequence mode) after a cuda row: human (md 0) or markdown (md 1). */
static void print_seq_row(FILE *f, Bench *b, int s, int m, int r, int k, int md) {
    const BResult *x = result(b, s, m, r, k);
    const BSource *src = b->src[s];
    const int R = b->ranges[r];
    if (b->backends[k] != VIDK_BACKEND_CUDA || !x->seq_done) return;
    char tbuf[64], sp[3][16], size[24];
    const VidkBackend vs[3] = {VIDK_BACKEND_C, VIDK_BACKEND_SIMD, VIDK_BACKEND_THREADS};
    for (int j = 0; j < 3; j++) {
        int est = 0;
        const double v = speedup_of(b, s, m, r, x->seq_ms, vs[j], &est);
        fmt_speedup(sp[j], sizeof(sp[j]), v, est);
    }
    const double ms = x->seq_ms, t = ms * 1e-3;
    snprintf(tbuf, sizeof(tbuf), ms >= 100 ? "%.1f" : ms >= 1 ? "%.3f" : "%.4f", ms);
    snprintf(size, sizeof(size), "%dx%d", src->w, src->h);
    const double ads = byte_ads(src, R) / t;
    const double mc = blocks_of(src, b->modes[m]) * cand_axis(R) * cand_axis(R) / t / 1e6;
    bench_row(f, md,
              "%-17s %-9s %-6s %4d %5.0f %-11s %-26s %9.1f %9.1f %7.1f %8s %8s %9s %7.3f%s\n",
              src->label, size, b->mode_names[m], R, cand_axis(R), "cuda-seq", tbuf, mc,
              ads / 1e9, 100 * ads / CEIL_BYTE_AD_PER_S, sp[0], sp[1], sp[2], x->sad_px,
              !x->seq_mismatch ? ""
              : md             ? " MISMATCH"
                               : "  MISMATCH");
}

/* ---- outputs ---------------------------------------------------------------------- */
/* The cells a table row and a Markdown row share: time, speed-ups over c / simd /
 * threads (with their estimate flags), byte ADs per second and the share of the
 * VABSDIFF4 ceiling (cuda only). */
typedef struct RowCells {
    char t[96], sc[16], ss[16], st[16], ceil[16];
    double t_s, ads;
} RowCells;

static void row_cells(RowCells *c, Bench *b, int s, int m, int r, int k) {
    const BSource *src = b->src[s];
    const BResult *x = result(b, s, m, r, k);
    fmt_time(c->t, sizeof(c->t), x);
    int e1 = 0, e2 = 0, e3 = 0;
    /* speed-ups first: the estimate flags are set by speedup() */
    const double v1 = speedup(b, s, m, r, k, VIDK_BACKEND_C, &e1);
    const double v2 = speedup(b, s, m, r, k, VIDK_BACKEND_SIMD, &e2);
    const double v3 = speedup(b, s, m, r, k, VIDK_BACKEND_THREADS, &e3);
    fmt_speedup(c->sc, sizeof(c->sc), v1, e1);
    fmt_speedup(c->ss, sizeof(c->ss), v2, e2);
    fmt_speedup(c->st, sizeof(c->st), v3, e3);
    c->t_s = x->ms * 1e-3;
    c->ads = x->done ? byte_ads(src, b->ranges[r]) / c->t_s : 0;
    if (b->backends[k] == VIDK_BACKEND_CUDA && x->done)
        snprintf(c->ceil, sizeof(c->ceil), "%.1f", 100 * c->ads / CEIL_BYTE_AD_PER_S);
    else
        snprintf(c->ceil, sizeof(c->ceil), "-");
}

/* The rows of the main table (each cuda row followed by its cuda-seq row). */
static void print_rows(FILE *f, Bench *b, int md) {
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int r = 0; r < b->nranges; r++)
                for (int k = 0; k < b->nbackends; k++) {
                    const BSource *src = b->src[s];
                    const BResult *x = result(b, s, m, r, k);
                    const int R = b->ranges[r];
                    char be[24], size[24];
                    RowCells c;
                    row_cells(&c, b, s, m, r, k);
                    snprintf(size, sizeof(size), "%dx%d", src->w, src->h);
                    bench_row(f, md,
                              "%-17s %-9s %-6s %4d %5.0f %-11s %-26s %9.1f %9.1f %7s %8s %8s "
                              "%9s %7.3f%s%s\n",
                              src->label, size, b->mode_names[m], R, cand_axis(R),
                              bench_backend_label(b->ctx, b->backends[k], be, sizeof(be)), c.t,
                              x->done ? blocks_of(src, b->modes[m]) * cand_axis(R) *
                                            cand_axis(R) / c.t_s / 1e6
                                      : 0,
                              c.ads / 1e9, c.ceil, c.sc, c.ss, c.st, x->sad_px,
                              x->stats_rows ? "*" : "",
                              !x->mismatch ? ""
                              : md         ? " MISMATCH"
                                           : "  MISMATCH");
                    print_seq_row(f, b, s, m, r, k, md);
                }
}

static void print_legend(FILE *f, int md) {
    fprintf(
        f,
        "%sms/frame: median over the runs after warm-up of one vidk_me_search call (one frame "
        "pair; for cuda including the host<->device copies: \"pair\" mode, both frames "
        "uploaded per call, the latency of one isolated pair).\n"
        "%scuda-seq: \"sequence\" mode, frames streamed (vidk_cuda_me_search_seq): the "
        "reference stays on the device as the previous call's frame and the next frame is "
        "uploaded while the current one is searched; ms/frame = median time per call at "
        "steady state = throughput per frame. vs X compares it with X's pair time.\n"
        "%s\"(est. from k rows)\": timed on a stripe of the k middle macroblock rows (a real "
        "sub-picture) and scaled by rows/k to the full picture: an estimate, not a full-frame "
        "measurement.\n"
        "%sarea: candidates per axis, 2R+1 (the paper's N x N search area for 4x4 blocks is "
        "N = 2R + 4). Mcand/s: blocks of the smallest shape x (2R+1)^2 / time. GbyteAD/s: "
        "(16-aligned width x height) x (2R+1)^2 byte absolute differences / time. ceil%%: "
        "that rate against the VABSDIFF4 ceiling of 64 T byte-ADs/s (cuda only).\n"
        "%svs X: time of backend X / this time, same configuration, same run; \"~\" marks "
        "ratios involving an estimate. SAD/px: mean SAD per pixel of the smallest shape, "
        "frame pair 0 (\"*\": from the stripe).\n",
        md ? "- " : "", md ? "- " : "", md ? "- " : "", md ? "- " : "", md ? "- " : "");
}

static void print_complexity(FILE *f, Bench *b, int md) {
    if (b->nranges < 2) return;
    if (md)
        fprintf(f,
                "\n## Complexity: time vs search area (O(n^2) model)\n\n"
                "| source | size | shapes | backend | R | t(R)/t(R0) | ((2R+1)/(2R0+1))^2 |\n"
                "|---|---|---|---|---:|---:|---:|\n");
    else
        fprintf(f,
                "\ncomplexity: t(R)/t(R0) against the O(n^2) prediction ((2R+1)/(2R0+1))^2\n"
                "%-17s %-9s %-6s %-11s %4s %12s %12s\n",
                "source", "size", "shapes", "backend", "R", "t(R)/t(R0)", "predicted");
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int k = 0; k < b->nbackends; k++) {
                const BResult *x0 = result(b, s, m, 0, k);
                if (!x0->done) continue;
                char be[24], size[24];
                bench_backend_label(b->ctx, b->backends[k], be, sizeof(be));
                snprintf(size, sizeof(size), "%dx%d", b->src[s]->w, b->src[s]->h);
                for (int r = 0; r < b->nranges; r++) {
                    const BResult *x = result(b, s, m, r, k);
                    if (!x->done) continue;
                    const double ratio = x->ms / x0->ms;
                    const double pred =
                        pow(cand_axis(b->ranges[r]) / cand_axis(b->ranges[0]), 2);
                    const int est = x->est_rows || x0->est_rows;
                    bench_row(f, md, "%-17s %-9s %-6s %-11s %4d %11s%.2f %12.2f\n",
                              b->src[s]->label, size, b->mode_names[m], be, b->ranges[r],
                              est ? "~" : "", ratio, pred);
                }
            }
}

static int find_idx(const Bench *b, int kind, int v) {
    /* kind 0: range index of R = v; 1: backend index */
    if (kind == 0) {
        for (int i = 0; i < b->nranges; i++)
            if (b->ranges[i] == v) return i;
    } else {
        for (int i = 0; i < b->nbackends; i++)
            if ((int)b->backends[i] == v) return i;
    }
    return -1;
}

static int find_mode(const Bench *b, unsigned shapes) {
    for (int i = 0; i < b->nmodes; i++)
        if (b->modes[i] == shapes) return i;
    return -1;
}

/* The issue's targets, with the measured value where this run has it. */
static void print_targets(FILE *f, Bench *b, int md) {
    typedef struct {
        const char *what;
        unsigned shapes;
        int range;
        VidkBackend be, vs;
        double limit; /* ms (vs = 0) or minimum speed-up */
    } Target;
    const Target t[] = {
        {"cuda, all 41 partitions, R=64, <= 3 ms", VIDK_ME_SHAPES_H264, 64, VIDK_BACKEND_CUDA,
         0, 3},
        {"cuda, 16x16 only, R=64, <= 1 ms", VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 64,
         VIDK_BACKEND_CUDA, 0, 1},
        {"cuda, 4x4 only, R=64, < 1.17 ms (NVOFA)", VIDK_ME_SHAPE(VIDK_BLOCK_4x4), 64,
         VIDK_BACKEND_CUDA, 0, 1.17},
        {"cuda vs c, h264, R=64, >= 1000x", VIDK_ME_SHAPES_H264, 64, VIDK_BACKEND_CUDA,
         VIDK_BACKEND_C, 1000},
        {"cuda vs threads, h264, R=64, >= 30x", VIDK_ME_SHAPES_H264, 64, VIDK_BACKEND_CUDA,
         VIDK_BACKEND_THREADS, 30},
        {"simd, 16x16 only, R=16, <= 1.5 x 34-50 ms (x264 sad_x4, one Zen 3 core)",
         VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 16, VIDK_BACKEND_SIMD, 0, 75},
    };
    if (md)
        fprintf(f, "\n## Targets of issue 6 (1080p)\n\n| target | source | measured | met "
                   "|\n|---|---|---|---|\n");
    else
        fprintf(f, "\ntargets of issue 6 (1080p):\n");
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const int m = find_mode(b, t[i].shapes), r = find_idx(b, 0, t[i].range);
        const int k = find_idx(b, 1, t[i].be);
        int s = -1;
        for (int j = 0; j < b->nsrc && s < 0; j++)
            if (b->src[j]->w == 1920 && b->src[j]->h == 1080) s = j;
        char val[96] = "not run", met[16] = "-", srcl[64] = "-";
        if (m >= 0 && r >= 0 && k >= 0 && s >= 0 && result(b, s, m, r, k)->done) {
            const BResult *x = result(b, s, m, r, k);
            snprintf(srcl, sizeof(srcl), "%s", b->src[s]->label);
            /* cuda: the sequence mode (streamed frames) where measured, labelled so, with
             * the pair time beside it. */
            const int seq = t[i].be == VIDK_BACKEND_CUDA && x->seq_done;
            if (!t[i].vs) {
                if (seq) {
                    snprintf(val, sizeof(val), "%.3f ms sequence (pair %.3f)", x->seq_ms,
                             x->ms);
                    snprintf(met, sizeof(met), "%s", x->seq_ms <= t[i].limit ? "yes" : "no");
                } else {
                    fmt_time(val, sizeof(val), x);
                    snprintf(val + strlen(val), sizeof(val) - strlen(val), " ms");
                    snprintf(met, sizeof(met), "%s%s", x->est_rows ? "~" : "",
                             x->ms <= t[i].limit ? "yes" : "no");
                }
            } else {
                int est = 0;
                const double sp = seq ? speedup_of(b, s, m, r, x->seq_ms, t[i].vs, &est)
                                      : speedup(b, s, m, r, k, t[i].vs, &est);
                if (sp > 0) {
                    fmt_speedup(val, sizeof(val), sp, est);
                    if (seq) {
                        int e2 = 0;
                        snprintf(val + strlen(val), sizeof(val) - strlen(val),
                                 " sequence (pair %.1fx)",
                                 speedup(b, s, m, r, k, t[i].vs, &e2));
                    }
                    snprintf(met, sizeof(met), "%s%s", est ? "~" : "",
                             sp >= t[i].limit ? "yes" : "no");
                }
            }
        }
        bench_row(f, md, "  %-72s %-16s %-40s %s\n", t[i].what, srcl, val, met);
    }
}

static void write_markdown(FILE *f, Bench *b) {
    bench_print_header(f, &b->mt, "me", "me", "", 1);
    bench_notes_print(f, &b->notes, "- Note: ");
    print_legend(f, 1);
    fprintf(
        f, "\n## Time per frame\n\n"
           "| source | size | shapes | R | area | backend | ms/frame | Mcand/s | G byte-AD/s | "
           "%% of ceiling | vs c | vs simd | vs threads | SAD/px |\n"
           "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int any_cuda = 0;
    print_rows(f, b, 1);
    for (int i = 0; i < b->nsrc * b->nmodes * b->nranges * b->nbackends; i++)
        any_cuda |= b->res[i].has_cuda;
    if (any_cuda) {
        fprintf(
            f, "\n## CUDA stages (medians, device events)\n\n"
               "| source | size | shapes | R | kernel ms | H2D ms | D2H ms | device total ms | "
               "H2D MB | D2H MB | end-to-end ms | ceiling ms (byte-ADs / 64 T/s) |\n"
               "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int s = 0; s < b->nsrc; s++)
            for (int m = 0; m < b->nmodes; m++)
                for (int r = 0; r < b->nranges; r++)
                    for (int k = 0; k < b->nbackends; k++) {
                        const BResult *x = result(b, s, m, r, k);
                        /* the pair row, then the sequence row where measured */
                        for (int q = 0; x->has_cuda && q <= x->seq_done; q++) {
                            const VidkCudaTiming *ct = q ? &x->seq_cuda : &x->cuda;
                            fprintf(
                                f,
                                "| %s | %dx%d | %s%s | %d | %.4f | %.4f | %.4f | %.4f | "
                                "%.2f | %.2f | %.4f | %.4f |\n",
                                b->src[s]->label, b->src[s]->w, b->src[s]->h, b->mode_names[m],
                                q ? " (sequence)" : "", b->ranges[r], ct->kernel_ms, ct->h2d_ms,
                                ct->d2h_ms, ct->total_ms, ct->h2d_bytes / 1e6,
                                ct->d2h_bytes / 1e6, q ? x->seq_ms : x->ms,
                                1e3 * byte_ads(b->src[s], b->ranges[r]) / CEIL_BYTE_AD_PER_S);
                        }
                    }
    }
    print_complexity(f, b, 1);
    print_targets(f, b, 1);
}

static void write_csv(FILE *f, Bench *b) {
    fprintf(f,
            "source,kind,width,height,shapes,range,area,backend,threads,ms_per_frame,"
            "estimated_rows,total_rows,runs,candidates_per_s,byte_ads_per_frame,byte_ads_per_s,"
            "vabsdiff4_ops_per_frame,ceiling_ratio,speedup_vs_c,speedup_vs_simd,"
            "speedup_vs_threads,speedup_estimated,mean_sad_per_pixel,zero_mv_share,stats_rows,"
            "mismatch,cuda_kernel_ms,cuda_h2d_ms,cuda_d2h_ms,cuda_total_ms,cuda_h2d_bytes,"
            "cuda_d2h_bytes,cuda_seq_ms_per_frame,cuda_seq_kernel_ms,cuda_seq_h2d_bytes,"
            "cuda_seq_ceiling_ratio,cuda_seq_speedup_vs_threads,cuda_seq_mismatch,error\n");
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int r = 0; r < b->nranges; r++)
                for (int k = 0; k < b->nbackends; k++) {
                    const BSource *src = b->src[s];
                    const BResult *x = result(b, s, m, r, k);
                    const int R = b->ranges[r];
                    const VidkBackend be = b->backends[k];
                    const double t = x->ms * 1e-3;
                    int e1 = 0, e2 = 0, e3 = 0;
                    const double s1 = speedup(b, s, m, r, k, VIDK_BACKEND_C, &e1);
                    const double s2 = speedup(b, s, m, r, k, VIDK_BACKEND_SIMD, &e2);
                    const double s3 = speedup(b, s, m, r, k, VIDK_BACKEND_THREADS, &e3);
                    const double ads = byte_ads(src, R);
                    fprintf(f, "%s,%s,%d,%d,%s,%d,%.0f,%s,%d,", src->label, src->kind, src->w,
                            src->h, b->mode_names[m], R, cand_axis(R), vidk_backend_name(be),
                            b->ctx[be] ? vidk_get_threads(b->ctx[be]) : 0);
                    if (x->done)
                        fprintf(f, "%.6f,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,", x->ms,
                                x->est_rows, (src->h + 15) / 16, x->runs,
                                blocks_of(src, b->modes[m]) * cand_axis(R) * cand_axis(R) / t,
                                ads, ads / t, ads / 4,
                                be == VIDK_BACKEND_CUDA ? ads / t / CEIL_BYTE_AD_PER_S : 0);
                    else
                        fprintf(f, ",,%d,,,%.6g,,%.6g,,", (src->h + 15) / 16, ads, ads / 4);
                    fprintf(f, "%.6g,%.6g,%.6g,%d,%.4f,%.4f,%d,%d,", s1, s2, s3, e1 || e2 || e3,
                            x->sad_px, x->zero, x->stats_rows, x->mismatch);
                    if (x->has_cuda)
                        fprintf(f, "%.5f,%.5f,%.5f,%.5f,%zu,%zu,", x->cuda.kernel_ms,
                                x->cuda.h2d_ms, x->cuda.d2h_ms, x->cuda.total_ms,
                                x->cuda.h2d_bytes, x->cuda.d2h_bytes);
                    else
                        fprintf(f, ",,,,,,");
                    if (x->seq_done) {
                        int est = 0;
                        fprintf(f, "%.6f,%.5f,%zu,%.6g,%.6g,%d,", x->seq_ms,
                                x->seq_cuda.kernel_ms, x->seq_cuda.h2d_bytes,
                                ads / (x->seq_ms * 1e-3) / CEIL_BYTE_AD_PER_S,
                                speedup_of(b, s, m, r, x->seq_ms, VIDK_BACKEND_THREADS, &est),
                                x->seq_mismatch);
                    } else {
                        fprintf(f, ",,,,,,");
                    }
                    fprintf(f, "%s\n", x->done ? "" : x->err);
                }
}

static void write_json(FILE *f, Bench *b) {
    const BenchMeta *mt = &b->mt;
    VidkContext *thr = b->ctx[VIDK_BACKEND_THREADS];
    fprintf(
        f,
        "{\n  \"benchmark\": \"me\",\n  \"vidkern_version\": \"%s\",\n  \"commit\": %s,\n  "
        "\"date\": \"%s\",\n  \"command\": %s,\n  \"device\": {\"cpu\": %s, \"cores\": %d, "
        "\"threads\": %d, \"gpu\": %s},\n  \"ceiling_byte_ads_per_s\": %.3g,\n  \"notes\": [",
        vidk_version(), bench_jq(VIDK_GIT_COMMIT), mt->date, bench_jq(mt->command),
        bench_jq(mt->cpu), mt->cores, thr ? vidk_get_threads(thr) : 0, bench_jq(mt->gpu),
        CEIL_BYTE_AD_PER_S);
    bench_notes_json(f, &b->notes);
    fprintf(f, "],\n  \"results\": [");
    int first = 1;
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int r = 0; r < b->nranges; r++)
                for (int k = 0; k < b->nbackends; k++) {
                    const BSource *src = b->src[s];
                    const BResult *x = result(b, s, m, r, k);
                    const int R = b->ranges[r];
                    const VidkBackend be = b->backends[k];
                    const double ads = byte_ads(src, R);
                    fprintf(f, "%s\n    {\"source\": %s", first ? "" : ",",
                            bench_jq(src->label));
                    first = 0;
                    fprintf(
                        f,
                        ", \"kind\": \"%s\", \"width\": %d, \"height\": %d, \"shapes\": "
                        "\"%s\", "
                        "\"range\": %d, \"area\": %.0f, \"backend\": \"%s\", \"threads\": %d, "
                        "\"byte_ads_per_frame\": %.6g, \"vabsdiff4_ops_per_frame\": %.6g",
                        src->kind, src->w, src->h, b->mode_names[m], R, cand_axis(R),
                        vidk_backend_name(be), b->ctx[be] ? vidk_get_threads(b->ctx[be]) : 0,
                        ads, ads / 4);
                    if (!x->done) {
                        fprintf(f, ", \"error\": %s", bench_jq(x->err));
                        fputc('}', f);
                        continue;
                    }
                    const double t = x->ms * 1e-3;
                    fprintf(
                        f,
                        ", \"ms_per_frame\": %.6f, \"estimated_rows\": %d, \"total_rows\": %d, "
                        "\"runs\": %d, \"candidates_per_s\": %.6g, \"byte_ads_per_s\": %.6g",
                        x->ms, x->est_rows, (src->h + 15) / 16, x->runs,
                        blocks_of(src, b->modes[m]) * cand_axis(R) * cand_axis(R) / t, ads / t);
                    if (be == VIDK_BACKEND_CUDA)
                        fprintf(f, ", \"ceiling_ratio\": %.6g", ads / t / CEIL_BYTE_AD_PER_S);
                    const VidkBackend vs[3] = {VIDK_BACKEND_C, VIDK_BACKEND_SIMD,
                                               VIDK_BACKEND_THREADS};
                    for (int j = 0; j < 3; j++) {
                        int est = 0;
                        const double sp = speedup(b, s, m, r, k, vs[j], &est);
                        if (sp > 0)
                            fprintf(
                                f, ", \"speedup_vs_%s\": %.6g, \"speedup_vs_%s_estimated\": %s",
                                vidk_backend_name(vs[j]), sp, vidk_backend_name(vs[j]),
                                est ? "true" : "false");
                    }
                    fprintf(f,
                            ", \"mean_sad_per_pixel\": %.5f, \"zero_mv_share\": %.5f, "
                            "\"stats_rows\": %d, \"mismatch\": %s",
                            x->sad_px, x->zero, x->stats_rows, x->mismatch ? "true" : "false");
                    if (x->has_cuda)
                        fprintf(f,
                                ", \"cuda\": {\"kernel_ms\": %.5f, \"h2d_ms\": %.5f, "
                                "\"d2h_ms\": %.5f, "
                                "\"total_ms\": %.5f, \"h2d_bytes\": %zu, \"d2h_bytes\": %zu}",
                                x->cuda.kernel_ms, x->cuda.h2d_ms, x->cuda.d2h_ms,
                                x->cuda.total_ms, x->cuda.h2d_bytes, x->cuda.d2h_bytes);
                    if (x->seq_done)
                        fprintf(
                            f,
                            ", \"cuda_sequence\": {\"ms_per_frame\": %.6f, \"runs\": %d, "
                            "\"ceiling_ratio\": %.6g, \"kernel_ms\": %.5f, \"h2d_ms\": %.5f, "
                            "\"d2h_ms\": %.5f, \"total_ms\": %.5f, \"h2d_bytes\": %zu, "
                            "\"d2h_bytes\": %zu, \"mismatch\": %s}",
                            x->seq_ms, x->seq_runs,
                            ads / (x->seq_ms * 1e-3) / CEIL_BYTE_AD_PER_S,
                            x->seq_cuda.kernel_ms, x->seq_cuda.h2d_ms, x->seq_cuda.d2h_ms,
                            x->seq_cuda.total_ms, x->seq_cuda.h2d_bytes, x->seq_cuda.d2h_bytes,
                            x->seq_mismatch ? "true" : "false");
                    fputc('}', f);
                }
    fprintf(f, "\n  ],\n  \"complexity\": [");
    first = 1;
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int k = 0; k < b->nbackends; k++) {
                const BResult *x0 = result(b, s, m, 0, k);
                if (!x0->done || b->nranges < 2) continue;
                fprintf(f, "%s\n    {\"source\": %s", first ? "" : ",",
                        bench_jq(b->src[s]->label));
                first = 0;
                fprintf(
                    f,
                    ", \"width\": %d, \"height\": %d, \"shapes\": \"%s\", \"backend\": \"%s\", "
                    "\"r0\": %d, \"points\": [",
                    b->src[s]->w, b->src[s]->h, b->mode_names[m],
                    vidk_backend_name(b->backends[k]), b->ranges[0]);
                int fp = 1;
                for (int r = 0; r < b->nranges; r++) {
                    const BResult *x = result(b, s, m, r, k);
                    if (!x->done) continue;
                    fprintf(f,
                            "%s{\"range\": %d, \"ratio\": %.5g, \"predicted\": %.5g, "
                            "\"estimated\": %s}",
                            fp ? "" : ", ", b->ranges[r], x->ms / x0->ms,
                            pow(cand_axis(b->ranges[r]) / cand_axis(b->ranges[0]), 2),
                            x->est_rows || x0->est_rows ? "true" : "false");
                    fp = 0;
                }
                fprintf(f, "]}");
            }
    fprintf(f, "\n  ]\n}\n");
}

static void write_report(FILE *f, int what, void *arg) {
    Bench *b = arg;
    if (what == BENCH_CSV)
        write_csv(f, b);
    else if (what == BENCH_JSON)
        write_json(f, b);
    else
        write_markdown(f, b);
}

/* ---- option parsing ---------------------------------------------------------------- */
/* Find a clip of the folder whose name starts with prefix. */
static int find_clip(const char *dir, const char *prefix, char *path, size_t n) {
    static const char *const known[] = {"container_352x288_30fps_15f.y4m",
                                        "cars_320x240_30fps_30f.y4m"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (!strncmp(known[i], prefix, strlen(prefix))) {
            snprintf(path, n, "%s/%s", dir, known[i]);
            FILE *f = fopen(path, "rb");
            if (f) {
                fclose(f);
                return 0;
            }
        }
    return -1;
}

int vidk_bench_me(int argc, char **argv) {
    Bench *b = calloc(1, sizeof(*b));
    if (!b) return cli_error(CMD, "out of memory");
    CliCommon c; /* set by bench_parse_args */
    const char *sizes = "cif,1080p", *ranges = "8,16,32,64", *shapes = "16x16,h264";
    BenchOpts o = {.source = "real", .frames = 3, .runs = 7, .max_seconds = 1};
    o.frames_lo = 1, o.frames_hi = 60, o.runs_hi = 255;
    int ret = 1;
    Mosaic *mosaic = NULL;
    VidkMeField ref_field;
    memset(&ref_field, 0, sizeof(ref_field));
    bench_notes_init(&b->notes, 8, 256);
    const BenchArg args[] = {{"--sizes", .str = &sizes},
                             {"--ranges", .str = &ranges},
                             {"--shapes", .str = &shapes},
                             {NULL}};
    const int pr = bench_parse_args(&o, &c, CMD, argc, argv, args, help);
    if (pr) { /* --help shown (exit 0), or an error */
        ret = pr < 0;
        goto done;
    }
    const char *source = o.source;
    b->frames = (int)o.frames, b->runs = (int)o.runs, b->max_seconds = o.max_seconds;
    b->quiet = c.quiet, b->device = c.device;
    if (bench_choice(CMD, "--source", source, "real|gen|both") < 0) goto done;
    char list[MAX_LIST][16];
    int n;
    if ((b->nsizes =
             bench_parse_sizes(CMD, sizes, 0, b->sizes[0], sizeof(b->sizes[0]), MAX_LIST)) < 0)
        goto done;
    if (bench_parse_ints(CMD, "--ranges", ranges, 0, VIDK_ME_MAX_RANGE, b->ranges,
                         &b->nranges) < 0)
        goto done;
    if ((n = bench_split_list(CMD, "--shapes", shapes, list[0], sizeof(list[0]), MAX_LIST)) < 0)
        goto done;
    for (int i = 0; i < n; i++) {
        unsigned m = 0;
        if (!strcmp(list[i], "h264"))
            m = VIDK_ME_SHAPES_H264;
        else if (!strcmp(list[i], "all"))
            m = VIDK_ME_SHAPES_ALL;
        else
            for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
                if (!strcmp(list[i], vidk_block_name((VidkBlockSize)bs))) m = VIDK_ME_SHAPE(bs);
        if (!m) {
            cli_error(CMD, "--shapes: unknown '%s' (16x16, h264, 4x4, all, a block size)",
                      list[i]);
            goto done;
        }
        b->modes[b->nmodes] = m;
        snprintf(b->mode_names[b->nmodes++], 16, "%.15s", list[i]);
    }
    if (bench_parse_backends(CMD, o.backends, b->backends, &b->nbackends) < 0) goto done;
    /* Contexts: a backend that cannot be opened here is skipped and said so. */
    if (bench_open_backends(&c, CMD, 1, b->backends, &b->nbackends, b->ctx, &b->notes) < 0)
        goto done;
    /* Sources. */
    const char *dir = o.video ? o.video : mosaic_default_video_dir();
    const int want_real = strcmp(source, "gen") != 0, want_gen = strcmp(source, "real") != 0;
    int have_clips = 0;
    if (want_real) {
        have_clips = bench_open_mosaic(&mosaic, dir, CMD, c.quiet) == 0;
        if (!have_clips)
            bench_note(&b->notes, "no real clips found (%s): generated video only",
                       dir ? dir : "no folder");
    }
    const int npics = b->frames + 1;
    int mosaic_noted = 0;
    for (int i = 0; i < b->nsizes; i++) {
        int w, h;
        bench_size_of(b->sizes[i], 0, &w, &h);
        const int cif = !strcmp(b->sizes[i], "cif");
        int added_real = 0;
        if (want_real && have_clips && cif) {
            static const char *const clips[] = {"container", "cars"};
            for (int j = 0; j < 2 && b->nsrc < MAX_SOURCES; j++) {
                char path[4200];
                if (find_clip(dir, clips[j], path, sizeof(path)) < 0) continue;
                BSource *s = calloc(1, sizeof(*s));
                if (!s) goto oom;
                if (load_clip(s, path, clips[j], npics) < 0) {
                    free(s);
                    continue;
                }
                snprintf(s->size_name, sizeof(s->size_name), "%s", b->sizes[i]);
                b->src[b->nsrc++] = s;
                added_real = 1;
            }
        }
        /* the mosaic where no clip has this size, the generated video where asked */
        for (int gen = 0; gen < 2 && b->nsrc < MAX_SOURCES; gen++) {
            if (gen ? !want_gen && have_clips : !want_real || !have_clips || added_real)
                continue;
            BSource *s = calloc(1, sizeof(*s));
            if (!s || load_made(s, gen ? NULL : mosaic, w, h, npics) < 0) {
                free(s);
                goto oom;
            }
            snprintf(s->size_name, sizeof(s->size_name), "%s", b->sizes[i]);
            b->src[b->nsrc++] = s;
            if (!gen && !mosaic_noted++)
                bench_note(&b->notes, "real video at other sizes: %s", mosaic_describe(mosaic));
        }
    }
    b->res = calloc((size_t)b->nsrc * b->nmodes * b->nranges * b->nbackends, sizeof(BResult));
    if (!b->res) goto oom;

    bench_meta_fill(&b->mt, "vidkern-bench me", argc, argv,
                    b->ctx[VIDK_BACKEND_CUDA] ? b->device : -1);
    bench_say_start(CMD, &b->mt, c.quiet);
    const int total = b->nsrc * b->nmodes * b->nranges * b->nbackends;
    int done_n = 0, mismatches = 0, failures = 0;
    const double t_start = cli_now();
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int r = 0; r < b->nranges; r++) {
                VidkMeParams mp;
                vidk_me_default_params(&mp);
                mp.range = b->ranges[r];
                mp.shapes = b->modes[m];
                vidk_me_field_free(&ref_field);
                int e = vidk_me_field_alloc(&ref_field, b->src[s]->w, b->src[s]->h, mp.shapes);
                if (e < 0) goto oom;
                int ref_set = 0;
                const char *ref_name = NULL;
                for (int k = 0; k < b->nbackends; k++) {
                    BResult *x = result(b, s, m, r, k);
                    const VidkBackend be = b->backends[k];
                    measure(b, be, b->src[s], &mp, x, &ref_field, &ref_set, &ref_name);
                    done_n++;
                    mismatches += x->mismatch;
                    failures += !x->done;
                    if (!c.quiet) {
                        char tbuf[96];
                        fmt_time(tbuf, sizeof(tbuf), x);
                        fprintf(stderr, "[%d/%d %.0fs] %s %dx%d %s R=%d %s: %s ms/frame%s\n",
                                done_n, total, cli_now() - t_start, b->src[s]->label,
                                b->src[s]->w, b->src[s]->h, b->mode_names[m], b->ranges[r],
                                vidk_backend_name(be), tbuf, x->mismatch ? "  MISMATCH" : "");
                    }
                    if (x->mismatch)
                        fprintf(
                            stderr,
                            "vidkern-bench me: %s field differs from %s (%s %dx%d %s R=%d)\n",
                            vidk_backend_name(be), x->mismatch_with, b->src[s]->label,
                            b->src[s]->w, b->src[s]->h, b->mode_names[m], b->ranges[r]);
                }
            }
    bench_print_header(stdout, &b->mt, "me", "me", "", 0);
    bench_notes_print(stdout, &b->notes, "note: ");
    printf("\n%-17s %-9s %-6s %4s %5s %-11s %-26s %9s %9s %7s %8s %8s %9s %7s\n", "source",
           "size", "shapes", "R", "area", "backend", "ms/frame", "Mcand/s", "GbyteAD/s",
           "ceil%", "vs c", "vs simd", "vs thr", "SAD/px");
    print_rows(stdout, b, 0);
    printf("\n");
    print_legend(stdout, 0);
    print_complexity(stdout, b, 0);
    print_targets(stdout, b, 0);
    ret = 0;
    if (bench_write_outputs(CMD, o.csv, o.json, o.md, write_report, b) < 0) ret = 1;
    if (bench_verdict(CMD, mismatches,
                      "configuration(s) gave fields that differ between backends", failures))
        ret = 1;
    goto done;
oom:
    cli_error(CMD, "out of memory (or a source could not be prepared)");
done:
    vidk_me_field_free(&ref_field);
    mosaic_close(&mosaic);
    for (int i = 0; i < b->nsrc; i++) {
        source_free(b->src[i]);
        free(b->src[i]);
    }
    for (int i = 0; i < VIDK_BACKEND_COUNT; i++)
        vidk_close(&b->ctx[i]);
    free(b->res);
    free(b);
    return ret;
}
