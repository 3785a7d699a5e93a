/* `vidkern-bench me`: full-search motion estimation benchmark. Reproduces the
 * evaluation of Monteiro et al. (CIF container/cars, search areas 16x16..128x128,
 * serial vs OpenMP vs GPU) and extends it to HD sizes, all H.264 partitions, and every
 * backend, with the complexity model t ~ (2R+1)^2 and the SAD-instruction ceiling.
 * See docs/ME.md ("Benchmark") for what every column means. The tables and report
 * files of the results: bench_me_report.c; the types both files use: bench_me.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_me.h"
#include "bench_util.h"
#include "cli.h"
#include "cuda/cuda_backend.h"
#include "cuda/me_cuda.h"
#include "gen.h"
#include "mosaic.h"
#include "picio.h"

#define CMD "me"

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
BResult *bme_result(Bench *b, int s, int m, int r, int k) {
    return &b->res[((s * b->nmodes + m) * b->nranges + r) * b->nbackends + k];
}

int bme_smallest_shape(unsigned shapes) {
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
    const int bs = bme_smallest_shape(shapes);
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
                    BResult *x = bme_result(b, s, m, r, k);
                    const VidkBackend be = b->backends[k];
                    measure(b, be, b->src[s], &mp, x, &ref_field, &ref_set, &ref_name);
                    done_n++;
                    mismatches += x->mismatch;
                    failures += !x->done;
                    if (!c.quiet) {
                        char tbuf[96];
                        bme_fmt_time(tbuf, sizeof(tbuf), x);
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
    bme_print_rows(stdout, b, 0);
    printf("\n");
    bme_print_legend(stdout, 0);
    bme_print_complexity(stdout, b, 0);
    bme_print_targets(stdout, b, 0);
    ret = 0;
    if (bench_write_outputs(CMD, o.csv, o.json, o.md, bme_write_report, b) < 0) ret = 1;
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
