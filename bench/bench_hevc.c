/* `vidkern-bench hevc`: HEVC transform + quantisation benchmark. Reproduces the
 * evaluation of Cobrnic et al. 2020 (Table 1: CPU, GPU overall and kernel, cuBLAS overall
 * and kernel for DCI 4K frames of all-4x4 and all-32x32 TBs; Figure 3: the CUDA stream
 * sweep) on today's hardware with real residuals, and extends it to realistic mixed TB
 * distributions with chroma, the inverse path, every backend, the tensor-core switch,
 * bytes moved against the HBM and PCIe ceilings, and the targets. Every backend
 * is cross-checked against the c backend (exit 1 on a mismatch); the float cuBLAS
 * baseline's mismatches are counted, not fatal. docs/BENCH_HEVC.md explains every
 * column; the reports (tables, CSV, JSON, Markdown) are in bench_hevc_report.c. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_hevc.h"
#include "bench_util.h"
#include "cli.h"
#include "cuda/cuda_backend.h"
#include "hevc_workload.h"
#include "mosaic.h"

#define CMD "hevc"

#define MAX_NOTES   16
#define MAX_SAMPLES 1024

/* Ceilings (DESIGN.md: measured on the GPU machines here). */
#define PCIE_BPS     55e9
#define HBM_H100_BPS 3.0e12
#define HBM_H200_BPS 4.3e12

static void help(void) {
    printf(
        "usage: vidkern-bench hevc [options]\n\n"
        "Times HEVC forward transform + quantisation (fwd) and dequantisation + inverse\n"
        "transform (inv) of whole residual frames (vidk_hevc_batch_forward / _inverse) on\n"
        "every backend, the paper's float cuBLAS baseline, and the CUDA stream sweep.\n\n"
        "options:\n"
        "  --workloads LIST   SIZE-DIST items (default "
        "4k-4x4,4k-32x32,1080p-mixed,2160p-mixed);\n"
        "                     SIZE: 4k (DCI 4096x2160), 2160p, 1080p, 720p, cif or WxH;\n"
        "                     DIST: 4x4, 8x8, 16x16, 32x32 (luma only) or mixed (4:2:0)\n"
        "  --backends LIST    c,simd,threads,cuda,cublas (default: all usable here)\n"
        "  --direction LIST   fwd,inv (default both)\n"
        "  --streams LIST     CUDA stream sweep: A-B or a list, 1..%d, or none (default 1-8)\n"
        "  --tc LIST          CUDA tensor-core path: on,off (default both, where the build\n"
        "                     has the switch)\n"
        "  --pinned on|off    also time cuda on batch arrays registered with\n"
        "                     vidk_host_register (variant \"pinned\": direct copies, no host\n"
        "                     staging); default on (off with --cuda-emu)\n"
        "  --download M       forward download of the levels in the cuda configurations\n"
        "                     other than default: auto (per size class from the previous\n"
        "                     call's non-zero fraction; the library default), compact or\n"
        "                     dense\n"
        "  --alloc4 A         4x4 forward kernel's allocation of compacted levels in those\n"
        "                     configurations: block (default) or warp (one atomic per warp\n"
        "                     and 64 TBs, the earlier kernel)\n"
        "  --frames N         residual frames per workload, I P P ... (default 2)\n"
        "  --runs N           timed runs per configuration after warm-up (default 15)\n"
        "  --qp N             luma QP, 0..51 (default 32; chroma: Table 8-10)\n"
        "  --source S         real (mosaic of the clips) or gen (generated); default real,\n"
        "                     generated when no clips are found\n"
        "  --video DIR        folder of the real clips (default $VIDK_VIDEO_DIR or\n"
        "                     ../shared/video)\n"
        "  --max-seconds S    time budget per configuration (default 1; 0 = none); the\n"
        "                     cross-check of every frame always runs\n"
        "  --csv FILE, --json FILE, --markdown FILE   also write the results there\n"
        "  --cuda-emu         (tests) run the cuda configurations through the CUDA backend's\n"
        "                     host emulation: outputs checked, times meaningless\n"
        "  --threads N, --cpumask M, --device N, --quiet   as for every command\n",
        MAX_STREAMS);
}

/* ------------------------------------------------------------------ results */

static Result *new_result(Bench *b) {
    if (b->nres == b->capres) {
        const int c = b->capres ? 2 * b->capres : 64;
        Result *r = realloc(b->res, (size_t)c * sizeof(*r));
        if (!r) return NULL;
        b->res = r, b->capres = c;
    }
    Result *r = &b->res[b->nres++];
    memset(r, 0, sizeof(*r));
    r->tc = -1;
    return r;
}

/* ------------------------------------------------------------------ references */

/* c's output of every frame: levels + non-zero counts (forward), residuals (inverse). */
typedef struct Ref {
    int16_t *lev[VIDK_HEVC_TB_SIZES];
    uint16_t *nnz[VIDK_HEVC_TB_SIZES];
    int16_t *res[VIDK_HEVC_TB_SIZES];
} Ref;

static size_t list_values(const VidkHevcTbList *l, int s) {
    return (size_t)l->count << (4 + 2 * s);
}

static void ref_free(Ref *r, int n) {
    for (int f = 0; r && f < n; f++)
        for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
            free(r[f].lev[s]);
            free(r[f].nnz[s]);
            free(r[f].res[s]);
        }
    free(r);
}

/* Compare n TBs of len values; accumulate mismatching values and TBs. */
static void compare16(const int16_t *a, const int16_t *ref, size_t ntb, size_t len, Result *r) {
    for (size_t t = 0; t < ntb; t++) {
        const int16_t *x = a + t * len, *y = ref + t * len;
        if (!memcmp(x, y, len * sizeof(int16_t))) continue;
        r->mism_tbs++;
        for (size_t i = 0; i < len; i++)
            if (x[i] != y[i]) {
                r->mism_coefs++;
                const int d = abs(x[i] - y[i]);
                if (d > r->max_diff) r->max_diff = d;
            }
    }
}

/* Forward outputs of a library backend against c: levels, counts, compaction. */
static void check_fwd(const VidkHevcBatch *b, const Ref *ref, Result *r) {
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &b->list[s];
        const size_t len = (size_t)16 << (2 * s);
        if (!l->count) continue;
        compare16(l->lev, ref->lev[s], l->count, len, r);
        uint32_t nz = 0, bad = 0;
        for (uint32_t i = 0; i < l->count; i++) {
            if (l->nnz[i] != ref->nnz[s][i]) bad++;
            if (!ref->nnz[s][i]) continue;
            /* the j-th non-zero TB of c must be the j-th compacted one */
            if (nz >= l->nz_count || l->nz_index[nz] != i ||
                memcmp(l->nz_lev + (size_t)nz * len, ref->lev[s] + (size_t)i * len,
                       len * sizeof(int16_t)))
                bad++;
            nz++;
        }
        if (l->nz_count != nz) bad++;
        if (bad) r->mism_tbs += bad, r->mismatch = 1;
    }
    if (r->mism_coefs) r->mismatch = 1;
}

static void check_inv(const VidkHevcBatch *b, const Ref *ref, Result *r) {
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &b->list[s];
        if (l->count) compare16(l->res, ref->res[s], l->count, (size_t)16 << (2 * s), r);
    }
    if (r->mism_coefs || r->mism_tbs) r->mismatch = 1;
}

/* Test hook: VIDK_BENCH_HEVC_INJECT=<impl> corrupts that implementation's output of frame
 * 0 before the cross-check, so tests can see the mismatch path fail. */
static void maybe_inject(const Bench *b, int impl, VidkHevcBatch *bt, int dir, int frame) {
    if (!b->inject || frame || strcmp(b->inject, im_names[impl])) return;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        if (bt->list[s].count) {
            int16_t *v = dir == DIR_FWD ? bt->list[s].lev : bt->list[s].res;
            v[0] ^= 1;
            return;
        }
}

/* ------------------------------------------------------------------ one run */

typedef struct Sample {
    double ms;
    int has_dev;
    VidkCudaTiming ct;
    int launches;
    double kernel_bytes;
    int has_direct;
    size_t direct_h2d, direct_d2h;
    unsigned dense_classes, compact_classes;
    int round_trips;
} Sample;

/* Modelled minimum device-memory traffic of the library's kernels for one frame. */
static double lib_kernel_bytes(const VidkHevcBatch *bt, int dir) {
    double bytes = 0;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &bt->list[s];
        const double v = (double)list_values(l, s);
        /* residuals in + levels out (or back), 8-byte records; forward also writes the
         * counts (2 B per TB) */
        bytes += 4 * v + 8.0 * l->count + (dir == DIR_FWD ? 2.0 * l->count : 0);
    }
    return bytes;
}

static VidkContext *cuda_ctx_for(Bench *b, int var);

/* One forward or inverse pass of implementation `impl` over frame bt. */
static int run_once(Bench *b, const Result *cfg, HwFrame *fr, int frame, Sample *sm,
                    int kernel_only, char *err, size_t errlen) {
    memset(sm, 0, sizeof(*sm));
    VidkHevcBatch *bt = &fr->batch;
    (void)frame; /* the cuBLAS baseline's staged frame */
    int e = 0;
    double t0;
    if (cfg->impl == IM_CUBLAS) {
#if VIDK_BENCH_CUBLAS
        if (b->hcb_frame != frame) {
            if ((e = hcb_prepare(b->hcb, bt, err, errlen)) < 0) return e;
            b->hcb_frame = frame;
        }
        HcbTiming t;
        t0 = cli_now();
        e = hcb_run(b->hcb, &t, err, errlen);
        sm->ms = 1e3 * (cli_now() - t0);
        if (e < 0) return e;
        sm->has_dev = 1;
        sm->ct.total_ms = t.overall_ms, sm->ct.h2d_ms = t.h2d_ms;
        sm->ct.kernel_ms = t.kernel_ms, sm->ct.d2h_ms = t.d2h_ms;
        sm->ct.h2d_bytes = t.h2d_bytes, sm->ct.d2h_bytes = t.d2h_bytes;
        sm->kernel_bytes = t.kernel_bytes;
        sm->launches = t.launches;
        return 0;
#else
        snprintf(err, errlen, "not built");
        return VIDK_ERR(ENOSYS);
#endif
    }
    VidkContext *ctx = cfg->impl == IM_CUDA ? cuda_ctx_for(b, cfg->var) : b->ctx[cfg->impl];
    if (!ctx) {
        snprintf(err, errlen, "no context");
        return VIDK_ERR(ENODEV);
    }
    if (cfg->impl == IM_CUDA &&
        (cfg->var != VAR_DEFAULT || b->public_fallback || b->cuda_emu || kernel_only)) {
#if BENCH_HEVC_HOOKS
        VidkHevcCudaOpts o;
        VidkHevcCudaStats st;
        vidk_cuda_hevc_default_opts(&o);
        if (cfg->var != VAR_DEFAULT && cfg->var != VAR_PINNED) o.overlap_host = 0;
        if (cfg->var == VAR_TC_OFF || cfg->var == VAR_TC_ON) o.tensor = cfg->var == VAR_TC_ON;
        if (cfg->var == VAR_SWEEP) o.streams = cfg->streams;
        o.compact = b->download;
        o.alloc4 = b->alloc4;
        if (cfg->var == VAR_PINNED && b->cuda_emu && b->npin) {
            o.emu_pinned = b->pin;
            o.emu_pinned_count = b->npin;
        }
        o.kernel_only = kernel_only;
        o.stats = &st;
        t0 = cli_now();
        if (b->cuda_emu) /* outputs only: the emulation has no device times */
            e = cfg->dir == DIR_FWD ? vidk_cuda_hevc_emu_forward(ctx, bt, &o)
                                    : vidk_cuda_hevc_emu_inverse(ctx, bt, NULL, &o);
        else
            e = cfg->dir == DIR_FWD ? vidk_cuda_hevc_forward(ctx, bt, &o)
                                    : vidk_cuda_hevc_inverse(ctx, bt, NULL, &o);
        sm->ms = 1e3 * (cli_now() - t0);
        sm->has_direct = 1;
        sm->direct_h2d = st.direct_h2d, sm->direct_d2h = st.direct_d2h;
        sm->dense_classes = st.dense_classes, sm->compact_classes = st.compact_classes;
        sm->round_trips = st.round_trips;
#else
        (void)kernel_only;
        e = VIDK_ERR(ENOSYS);
#endif
    } else {
        t0 = cli_now();
        e = cfg->dir == DIR_FWD ? vidk_hevc_batch_forward(ctx, bt)
                                : vidk_hevc_batch_inverse(ctx, bt, NULL);
        sm->ms = 1e3 * (cli_now() - t0);
#if BENCH_HEVC_HOOKS
        if (e == VIDK_ERR(ENOSYS) && cfg->impl == IM_CUDA) { /* public API not wired yet */
            b->public_fallback = 1;
            bench_note(&b->notes,
                       "the public HEVC batch API returned ENOSYS on cuda: the default "
                       "configuration calls vidk_cuda_hevc_forward/inverse(opts NULL) instead");
            return run_once(b, cfg, fr, frame, sm, 0, err, errlen);
        }
#endif
    }
    if (e < 0) {
        snprintf(err, errlen, "%s",
                 e == VIDK_ERR(ENOSYS) ? "not implemented on this backend yet (ENOSYS)"
                                       : vidk_strerror(e));
        return e;
    }
    if (cfg->impl == IM_CUDA && !b->cuda_emu && vidk_cuda_last_timing(ctx, &sm->ct) == 0)
        sm->has_dev = 1;
    sm->kernel_bytes = lib_kernel_bytes(bt, cfg->dir);
    return 0;
}

/* ------------------------------------------------------------------ contexts */

static void log_cb(void *cookie, VidkLogLevel level, const char *fmt, va_list ap) {
    (void)cookie;
    (void)level;
    fprintf(stderr, "vidkern-bench " CMD ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static VidkContext *open_ctx(const Bench *b, VidkBackend be, int streams) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = be;
    s.n_threads = b->threads;
    s.cpu_mask = b->cpumask;
    s.cuda_device = b->device;
    if (streams > 0) s.cuda_streams = streams;
    s.logger.callback = log_cb;
    VidkContext *ctx = NULL;
    if (!vidk_backend_available(be) || vidk_open(&ctx, &s) < 0) return NULL;
    return ctx;
}

/* The cuda context of a configuration: the default settings, or MAX_STREAMS streams for
 * the sweep (a configuration's stream count is an option of the call). */
static VidkContext *cuda_ctx_for(Bench *b, int var) {
    if (b->cuda_emu) return b->ctx[IM_C]; /* the emulation runs on any context */
    if (var != VAR_SWEEP) return b->ctx[IM_CUDA];
    if (!b->sweep_ctx) b->sweep_ctx = open_ctx(b, VIDK_BACKEND_CUDA, MAX_STREAMS);
    return b->sweep_ctx;
}

/* ------------------------------------------------------------------ measuring */

/* Levels of the cuBLAS baseline's last run against c (counted, never fatal). */
static int check_cublas(Bench *b, HwFrame *fr, const Ref *ref, int frame, Result *r) {
#if VIDK_BENCH_CUBLAS
    int16_t *lev[VIDK_HEVC_TB_SIZES] = {NULL, NULL, NULL, NULL};
    int e = 0;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const size_t nv = list_values(&fr->batch.list[s], s);
        if (nv && !(lev[s] = malloc(nv * sizeof(int16_t)))) {
            snprintf(r->err, sizeof(r->err), "out of memory");
            e = VIDK_ERR(ENOMEM);
            goto out;
        }
    }
    hcb_levels(b->hcb, lev);
    VidkHevcBatch tmp = fr->batch; /* the baseline's levels in the batch's layout */
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        tmp.list[s].lev = lev[s];
    maybe_inject(b, IM_CUBLAS, &tmp, DIR_FWD, frame);
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        if (tmp.list[s].count)
            compare16(lev[s], ref->lev[s], tmp.list[s].count, (size_t)16 << (2 * s), r);
out:
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        free(lev[s]);
    return e;
#else
    (void)b, (void)fr, (void)ref, (void)frame, (void)r;
    return 0;
#endif
}

/* ------------------------------------------------------------------ pinned arrays */

/* The "pinned" configuration: every frame's res, lev and nnz arrays (their whole capacity:
 * the batches are final, nothing reallocates them) are registered with vidk_host_register
 * on the cuda context, as an application that reuses its batch frame after frame would
 * do once. The ranges are rounded out to pages and merged (cudaHostRegister pins whole
 * pages; no page may be registered twice). The emulation gets the exact ranges instead.
 * Returns 0, or -1 with a note (the run then goes on with what was registered: results
 * never depend on registration). */
static int pin_workload(Bench *b, HwWorkload *w) {
    b->npin = b->npin_reg = 0;
    for (int f = 0; f < w->nframes; f++)
        for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
            const VidkHevcTbList *l = &w->frames[f].batch.list[s];
            const size_t cap = l->capacity, len = (size_t)16 << (2 * s);
            const void *arr[3] = {l->res, l->lev, l->nnz};
            const size_t bytes[3] = {cap * len * 2, cap * len * 2, cap * 2};
            if (!cap) continue;
            for (int a = 0; a < 3; a++) {
                if (b->npin >= MAX_PINS) {
                    bench_note(&b->notes, "pinned: more than %d arrays, the rest staged",
                               MAX_PINS);
                    return -1;
                }
                b->pin[b->npin].ptr = arr[a];
                b->pin[b->npin].bytes = bytes[a];
                b->npin++;
            }
        }
    if (b->cuda_emu) return 0;
    VidkHostRange in[MAX_PINS], m[MAX_PINS];
    for (int i = 0; i < b->npin; i++) {
        in[i].ptr = (void *)b->pin[i].ptr;
        in[i].bytes = b->pin[i].bytes;
    }
    int nm = 0;
    const int e = vidk_host_register_set(b->ctx[IM_CUDA], in, b->npin, m, &nm);
    for (int i = 0; i < nm; i++)
        b->pin_reg[b->npin_reg++] = m[i].ptr;
    if (e < 0) {
        bench_note(&b->notes, "pinned: vidk_host_register_set failed (%s): the rest staged",
                   vidk_strerror(e));
        return -1;
    }
    return 0;
}

static void unpin_workload(Bench *b) {
    for (int i = 0; i < b->npin_reg; i++)
        (void)vidk_host_unregister(b->ctx[IM_CUDA], b->pin_reg[i]);
    b->npin = b->npin_reg = 0;
}

/* Warm-up, a checked pass over every frame, then timed runs within the budget; for the
 * cuda configurations with kernel-only support, kernel-only runs on the data of the last
 * full call. */
static void measure_runs(Bench *b, HwWorkload *w, const Ref *ref, Result *r, int warm);

static void measure(Bench *b, HwWorkload *w, const Ref *ref, Result *r, int warm) {
    if (r->impl != IM_CUDA || r->var != VAR_PINNED) {
        measure_runs(b, w, ref, r, warm);
        return;
    }
    (void)pin_workload(b, w);
    measure_runs(b, w, ref, r, warm);
    unpin_workload(b);
}

static void measure_runs(Bench *b, HwWorkload *w, const Ref *ref, Result *r, int warm) {
    Sample sm;
    static double t[MAX_SAMPLES], dk[MAX_SAMPLES];
    static BenchDevTimes dv;
    int n = 0;
    dv.n = 0;
    const double budget = b->max_seconds > 0 ? b->max_seconds : INFINITY;
    const double t_start = cli_now();
    memset(&sm, 0, sizeof(sm));
    for (int i = 0; i < warm; i++)
        if (run_once(b, r, &w->frames[0], 0, &sm, 0, r->err, sizeof(r->err)) < 0) return;
    const int per_frame = (b->runs + w->nframes - 1) / w->nframes;
    int last = 0;
    for (int f = 0; f < w->nframes; f++) {
        HwFrame *fr = &w->frames[f];
        for (int k = 0; k < per_frame || k == 0; k++) {
            if (k > 0 && (n >= b->runs || cli_now() - t_start + sm.ms * 1e-3 > budget)) break;
            if (run_once(b, r, fr, f, &sm, 0, r->err, sizeof(r->err)) < 0) return;
            last = f;
            if (k == 0) { /* cross-check: the first run of each frame */
                if (r->impl == IM_CUBLAS) {
                    if (check_cublas(b, fr, &ref[f], f, r) < 0) return;
                } else if (r->impl != IM_C) {
                    maybe_inject(b, r->impl, &fr->batch, r->dir, f);
                    if (r->dir == DIR_FWD)
                        check_fwd(&fr->batch, &ref[f], r);
                    else
                        check_inv(&fr->batch, &ref[f], r);
                }
                r->checked++;
            }
            if (n < MAX_SAMPLES) {
                t[n++] = sm.ms;
                if (sm.has_dev) {
                    bench_dev_add(&dv, sm.ct.kernel_ms, sm.ct.h2d_ms, sm.ct.d2h_ms,
                                  sm.ct.total_ms);
                    r->h2d_bytes = sm.ct.h2d_bytes, r->d2h_bytes = sm.ct.d2h_bytes;
                }
                r->kernel_bytes = sm.kernel_bytes; /* of the last frame */
                r->launches = sm.launches;
                if (sm.has_direct) {
                    r->has_direct = 1;
                    r->direct_h2d = sm.direct_h2d, r->direct_d2h = sm.direct_d2h;
                    r->dense_classes = sm.dense_classes;
                    r->compact_classes = sm.compact_classes;
                    r->round_trips = sm.round_trips;
                }
            }
        }
    }
    r->runs = n;
    r->ms = bench_median(t, n);
    r->ms_min = t[0]; /* sorted by bench_median() */
    if (dv.n) {
        r->has_dev = 1;
        bench_dev_medians(&dv, &r->kernel, &r->h2d, &r->d2h, &r->dev_total);
    }
    r->done = 1;
    if (r->impl == IM_CUDA && b->have_kernel_only && r->var != VAR_DEFAULT &&
        r->var != VAR_SWEEP) {
        /* the device still holds the data of the last full call (frame `last`) */
        const double k_start = cli_now();
        int nk = 0;
        for (int i = 0; i < b->runs + 1 && nk < MAX_SAMPLES; i++) {
            if (i > 1 && cli_now() - k_start > budget) break;
            char err[200];
            if (run_once(b, r, &w->frames[last], last, &sm, 1, err, sizeof(err)) < 0 ||
                !sm.has_dev) {
                bench_note(&b->notes, "kernel-only run failed (%s %s): %s", b->spec[r->wl].name,
                           dir_names[r->dir], err);
                return;
            }
            if (i > 0) dk[nk++] = sm.ct.kernel_ms; /* i = 0: warm-up */
        }
        if (nk) {
            r->has_kernel_only = 1;
            r->kernel_only = bench_median(dk, nk);
        }
    }
}

/* The c reference of every frame in one direction (also c's warm-up). */
static int make_refs(Bench *b, HwWorkload *w, Ref *ref, int dir, char *err, size_t errlen) {
    VidkContext *c = b->ctx[IM_C];
    for (int f = 0; f < w->nframes; f++) {
        VidkHevcBatch *bt = &w->frames[f].batch;
        int e;
        if (dir == DIR_FWD) {
            if ((e = vidk_hevc_batch_forward(c, bt)) < 0) {
                snprintf(err, errlen, "c forward: %s", vidk_strerror(e));
                return e;
            }
        } else {
            for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) /* c's levels as input */
                if (bt->list[s].count)
                    memcpy(bt->list[s].lev, ref[f].lev[s],
                           list_values(&bt->list[s], s) * sizeof(int16_t));
            if ((e = vidk_hevc_batch_inverse(c, bt, NULL)) < 0) {
                snprintf(err, errlen, "c inverse: %s", vidk_strerror(e));
                return e;
            }
        }
        for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
            const VidkHevcTbList *l = &bt->list[s];
            const size_t nv = list_values(l, s);
            if (!nv) continue;
            int16_t **dst = dir == DIR_FWD ? &ref[f].lev[s] : &ref[f].res[s];
            if (!(*dst = malloc(nv * sizeof(int16_t)))) goto oom;
            memcpy(*dst, dir == DIR_FWD ? l->lev : l->res, nv * sizeof(int16_t));
            if (dir == DIR_FWD) {
                if (!(ref[f].nnz[s] = malloc(l->count * sizeof(uint16_t)))) goto oom;
                memcpy(ref[f].nnz[s], l->nnz, l->count * sizeof(uint16_t));
            }
        }
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return VIDK_ERR(ENOMEM);
}

const char *bhevc_variant(const Result *r, char *buf, size_t n) {
    static const char *const names[] = {"default", "device", "tc=off", "tc=on"};
    if (r->var == VAR_SWEEP)
        snprintf(buf, n, "streams=%d", r->streams);
    else if (r->var == VAR_PINNED)
        snprintf(buf, n, "pinned");
    else
        snprintf(buf, n, "%s", names[r->var]);
    return buf;
}

static void progress(const Bench *b, const Result *r, double t_start) {
    if (b->quiet) return;
    char v[32] = "";
    if (r->impl == IM_CUDA) bhevc_variant(r, v + 1, sizeof(v) - 1), v[0] = ' ';
    if (r->done)
        fprintf(stderr, "[%.0fs] %s %s %s%s: %.4f ms/frame (%d runs)%s\n", cli_now() - t_start,
                b->spec[r->wl].name, dir_names[r->dir], im_names[r->impl], v, r->ms, r->runs,
                r->mismatch     ? "  MISMATCH"
                : r->mism_coefs ? "  (float mismatches counted)"
                                : "");
    else
        fprintf(stderr, "[%.0fs] %s %s %s%s: %s\n", cli_now() - t_start, b->spec[r->wl].name,
                dir_names[r->dir], im_names[r->impl], v, r->err);
}

/* Configurations of one workload and direction, in output order. */
static void run_direction(Bench *b, int wi, HwWorkload *w, Ref *ref, int dir, double t_start) {
    for (int im = 0; im < IM_COUNT; im++) {
        if (!b->im_on[im]) continue;
        if (im == IM_CUBLAS && dir != DIR_FWD) continue; /* the paper's baseline is forward */
        int vars[5 + MAX_STREAMS], sts[5 + MAX_STREAMS] = {0}, nv = 0;
        vars[nv++] = VAR_DEFAULT;
        if (im == IM_CUDA && b->have_tc_switch) {
            vars[nv++] = VAR_DEVICE;
            if (b->pinned_on) vars[nv++] = VAR_PINNED;
            if (b->tc_on[0]) vars[nv++] = VAR_TC_OFF;
            if (b->tc_on[1]) vars[nv++] = VAR_TC_ON;
            for (int k = 0; k < b->nstreams; k++) {
                sts[nv] = b->streams[k];
                vars[nv++] = VAR_SWEEP;
            }
        }
        for (int v = 0; v < nv; v++) {
            Result *r = new_result(b);
            if (!r) return;
            r->wl = wi, r->dir = dir, r->impl = im;
            r->var = vars[v];
            r->tc = vars[v] == VAR_TC_ON ? 1 : vars[v] == VAR_TC_OFF ? 0 : -1;
            r->streams = sts[v];
            r->sweep = vars[v] == VAR_SWEEP;
#if VIDK_BENCH_CUBLAS
            if (im == IM_CUBLAS) b->hcb_frame = -1;
#endif
            /* c's reference pass was its warm-up; the GPU's first call allocates */
            const int warm = im == IM_C ? 0 : im == IM_CUDA || im == IM_CUBLAS ? 2 : 1;
            measure(b, w, ref, r, warm);
            progress(b, r, t_start);
        }
    }
}

static void workload_stats(WlInfo *in, const HwWorkload *w) {
    in->frames = w->nframes;
    in->build_s = w->build_s;
    snprintf(in->source, sizeof(in->source), "%s", w->source);
    double nz[VIDK_HEVC_TB_SIZES] = {0}, tbs[VIDK_HEVC_TB_SIZES] = {0};
    double area[VIDK_HEVC_TB_SIZES] = {0}, samples = 0, mabs = 0;
    for (int f = 0; f < w->nframes; f++) {
        const HwFrame *fr = &w->frames[f];
        in->intra_frames += fr->intra;
        samples += (double)fr->samples;
        mabs += fr->mean_abs * (double)fr->samples;
        for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
            tbs[s] += fr->tbs[s];
            area[s] += (double)fr->area[s];
            nz[s] += fr->batch.list[s].nz_count;
        }
    }
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        in->tbs[s] = tbs[s] / w->nframes;
        in->area[s] = samples > 0 ? area[s] / samples : 0;
        in->nz[s] = tbs[s] > 0 ? nz[s] / tbs[s] : 0;
    }
    in->samples = samples / w->nframes;
    in->mean_abs = samples > 0 ? mabs / samples : 0;
}

static int run_workload(Bench *b, int wi, double t_start) {
    WlInfo *in = &b->info[wi];
    in->spec = b->spec[wi];
    HwParams p;
    memset(&p, 0, sizeof(p));
    p.source = b->source;
    p.mosaic = b->mosaic;
    p.frames = b->frames;
    p.qp = b->qp;
    p.me_range = 16;
    p.ctx = b->prep;
    in->kind = b->source == HW_SOURCE_REAL ? "real" : "gen";
    HwWorkload w;
    if (hw_build(&w, &b->spec[wi], &p, in->err, sizeof(in->err)) < 0) {
        cli_error(CMD, "%s: %s", b->spec[wi].name, in->err);
        return -1;
    }
    if (!b->quiet)
        fprintf(stderr, "[%.0fs] %s: %d frames of %s ready (%.1f s)\n", cli_now() - t_start,
                b->spec[wi].name, w.nframes, w.source, w.build_s);
    Ref *ref = calloc((size_t)w.nframes, sizeof(Ref));
    int ret = 0;
    if (!ref) {
        snprintf(in->err, sizeof(in->err), "out of memory");
        ret = -1;
        goto out;
    }
    /* Forward references always (they are the inverse path's input). */
    if (make_refs(b, &w, ref, DIR_FWD, in->err, sizeof(in->err)) < 0) {
        ret = -1;
        goto out;
    }
    in->built = 1;
    workload_stats(in, &w);
    if (b->dir_on[DIR_FWD]) run_direction(b, wi, &w, ref, DIR_FWD, t_start);
    if (b->dir_on[DIR_INV]) {
        if (make_refs(b, &w, ref, DIR_INV, in->err, sizeof(in->err)) < 0) {
            ret = -1;
            goto out;
        }
        run_direction(b, wi, &w, ref, DIR_INV, t_start);
    }
out:
    if (ret < 0) cli_error(CMD, "%s: %s", b->spec[wi].name, in->err);
    ref_free(ref, w.nframes);
    hw_free(&w);
    return ret;
}

/* ------------------------------------------------------------------ options */

static int parse_streams(Bench *b, const char *v) {
    b->nstreams = 0;
    if (!strcmp(v, "none") || !strcmp(v, "0")) return 0;
    char list[MAX_STREAMS][40];
    const int n = bench_split_list(CMD, "--streams", v, list[0], sizeof(list[0]), MAX_STREAMS);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        char *end;
        long a = strtol(list[i], &end, 10), c = a;
        if (end != list[i] && *end == '-') {
            const char *s2 = end + 1;
            c = strtol(s2, &end, 10);
            if (end == s2) a = -1;
        }
        if (end == list[i] || *end || a < 1 || c < a || c > MAX_STREAMS) {
            cli_error(CMD, "--streams: '%s' is not N or A-B within 1..%d", list[i],
                      MAX_STREAMS);
            return -1;
        }
        for (long k = a; k <= c; k++) {
            int dup = 0;
            for (int j = 0; j < b->nstreams; j++)
                dup |= b->streams[j] == k;
            if (!dup && b->nstreams < MAX_STREAMS) b->streams[b->nstreams++] = (int)k;
        }
    }
    return 0;
}

static void set_ceilings(Bench *b) {
    b->pcie_bps = PCIE_BPS;
    b->hbm_bps = 0;
    if (strstr(b->mt.gpu, "H200")) {
        b->hbm_bps = HBM_H200_BPS;
        snprintf(b->hbm_from, sizeof(b->hbm_from), "H200, DESIGN.md");
    } else if (strstr(b->mt.gpu, "H100")) {
        b->hbm_bps = HBM_H100_BPS;
        snprintf(b->hbm_from, sizeof(b->hbm_from), "H100, DESIGN.md");
    }
    if (b->hbm_bps <= 0 && b->have_meas && b->meas_d2d > 0) {
        b->hbm_bps = b->meas_d2d;
        snprintf(b->hbm_from, sizeof(b->hbm_from), "device-to-device copy measured this run");
    }
    if (b->hbm_bps <= 0) {
        b->hbm_bps = HBM_H100_BPS;
        snprintf(b->hbm_from, sizeof(b->hbm_from), "H100 value, no device here");
    }
}

int vidk_bench_hevc(int argc, char **argv) {
    Bench *b = calloc(1, sizeof(*b));
    if (!b) return cli_error(CMD, "out of memory");
    CliCommon c; /* set by bench_parse_args */
    const char *workloads = "4k-4x4,4k-32x32,1080p-mixed,2160p-mixed";
    const char *dirs = "fwd,inv", *streams = "1-8", *tc = "on,off";
    const char *pinned = NULL, *download = "auto", *alloc4 = "warp";
    BenchOpts o = {.source = "real", .frames = 2, .runs = 15, .max_seconds = 1};
    o.frames_lo = 1, o.frames_hi = 64, o.runs_hi = MAX_SAMPLES;
    long qp = 32;
    int ret = 1;
    char list[MAX_WL][40];
    int n;
    bench_notes_init(&b->notes, MAX_NOTES, 400);
    const BenchArg args[] = {{"--cuda-emu", .flag = &b->cuda_emu},
                             {"--workloads", .str = &workloads},
                             {"--direction|--directions", .str = &dirs},
                             {"--streams", .str = &streams},
                             {"--tc", .str = &tc},
                             {"--pinned", .str = &pinned},
                             {"--download", .str = &download},
                             {"--alloc4", .str = &alloc4},
                             {"--qp", .num = &qp, .lo = 0, .hi = 51},
                             {NULL}};
    const int pr = bench_parse_args(&o, &c, CMD, argc, argv, args, help);
    if (pr) { /* --help shown (exit 0), or an error */
        ret = pr < 0;
        goto done;
    }
    const char *backends = o.backends, *source = o.source;
    b->frames = (int)o.frames, b->runs = (int)o.runs, b->qp = (int)qp;
    b->max_seconds = o.max_seconds;
    b->quiet = c.quiet, b->threads = c.threads, b->cpumask = c.cpumask, b->device = c.device;
    b->inject = getenv("VIDK_BENCH_HEVC_INJECT");
    if (b->inject && !*b->inject) b->inject = NULL;
    if (c.backend != VIDK_BACKEND_AUTO) {
        cli_error(CMD, "use --backends LIST here, not --backend");
        goto done;
    }
    /* workloads */
    if ((b->nwl = bench_split_list(CMD, "--workloads", workloads, list[0], sizeof(list[0]),
                                   MAX_WL)) < 0)
        goto done;
    for (int i = 0; i < b->nwl; i++) {
        char err[200];
        if (hw_parse(list[i], &b->spec[i], err, sizeof(err)) < 0) {
            cli_error(CMD, "--workloads: %s", err);
            goto done;
        }
    }
    /* directions */
    if ((n = bench_split_list(CMD, "--direction", dirs, list[0], sizeof(list[0]), MAX_WL)) < 0)
        goto done;
    for (int i = 0; i < n; i++) {
        const int d = bench_choice(CMD, "--direction", list[i], "fwd|inv"); /* DIR_* */
        if (d < 0) goto done;
        b->dir_on[d] = 1;
    }
    if (parse_streams(b, streams) < 0) goto done;
    if ((n = bench_split_list(CMD, "--tc", tc, list[0], sizeof(list[0]), MAX_WL)) < 0)
        goto done;
    for (int i = 0; i < n; i++) {
        const int t = bench_choice(CMD, "--tc", list[i], "on|off|none");
        if (t < 0) goto done;
        if (t < 2) b->tc_on[1 - t] = 1; /* tc_on[1]: on */
    }
    if (pinned && bench_choice(CMD, "--pinned", pinned, "on|off") < 0) goto done;
    /* opts.compact: 0 dense, 1 compact, 2 auto; opts.alloc4: 0 warp, 1 block */
    const int dl = bench_choice(CMD, "--download", download, "auto|compact|dense");
    const int a4 = dl < 0 ? -1 : bench_choice(CMD, "--alloc4", alloc4, "block|warp");
    if (a4 < 0 || bench_choice(CMD, "--source", source, "real|gen") < 0) goto done;
    b->download = 2 - dl, b->alloc4 = a4 == 0;
    /* backends */
    int want[IM_COUNT] = {0};
    if (backends) {
        if ((n = bench_split_list(CMD, "--backends", backends, list[0], sizeof(list[0]),
                                  MAX_WL)) < 0)
            goto done;
        for (int i = 0; i < n; i++) {
            int k = -1;
            for (int j = 0; j < IM_COUNT; j++)
                if (!strcmp(list[i], im_names[j])) k = j;
            if (k < 0) {
                cli_error(CMD, "--backends: unknown '%s' (c, simd, threads, cuda, cublas)",
                          list[i]);
                goto done;
            }
            want[k] = 1;
        }
    } else {
        for (int j = 0; j < IM_COUNT; j++)
            want[j] = 1;
    }
    bench_meta_fill(&b->mt, "vidkern-bench hevc", argc, argv,
                    vidk_cuda_device_count() > 0 ? b->device : -1);
    /* Contexts: c is always opened (the reference of the cross-check). */
    static const VidkBackend be_of[4] = {VIDK_BACKEND_C, VIDK_BACKEND_SIMD,
                                         VIDK_BACKEND_THREADS, VIDK_BACKEND_CUDA};
    if (b->cuda_emu && !BENCH_HEVC_HOOKS) {
        cli_error(CMD, "--cuda-emu needs a build with CUDA (the emulation is part of the CUDA "
                       "HEVC backend)");
        goto done;
    }
    for (int j = 0; j < 4; j++) {
        if (!want[j] && j != IM_C) continue;
        if (j == IM_CUDA && b->cuda_emu) {
            b->im_on[j] = 1;
            bench_note(
                &b->notes,
                "cuda rows run through the host emulation (--cuda-emu): outputs are checked, "
                "times are CPU times of the emulation, no device figures");
            continue;
        }
        b->ctx[j] = open_ctx(b, be_of[j], 0);
        if (!b->ctx[j]) {
            if (j == IM_C) {
                cli_error(CMD, "cannot open the c backend");
                goto done;
            }
            bench_note(&b->notes, "backend %s skipped: not usable on this machine/build",
                       im_names[j]);
            if (!c.quiet)
                fprintf(stderr, "vidkern-bench " CMD ": backend %s not usable here, skipped\n",
                        im_names[j]);
            continue;
        }
        b->im_on[j] = want[j];
    }
    b->prep = b->ctx[IM_THREADS] ? b->ctx[IM_THREADS] : open_ctx(b, VIDK_BACKEND_THREADS, 0);
    if (!b->prep) b->prep = b->ctx[IM_C];
    if (want[IM_CUBLAS]) {
#if VIDK_BENCH_CUBLAS
        char err[300];
        if (vidk_cuda_device_count() > 0 &&
            hcb_open(&b->hcb, b->device, err, sizeof(err)) == 0) {
            b->im_on[IM_CUBLAS] = 1;
            b->hcb_frame = -1;
            if (hcb_bandwidth(b->hcb, &b->meas_d2d, &b->meas_h2d, &b->meas_d2h, err,
                              sizeof(err)) == 0)
                b->have_meas = 1;
        } else {
            bench_note(&b->notes, "cuBLAS baseline unavailable: %s",
                       vidk_cuda_device_count() > 0 ? err : "no CUDA device");
        }
#else
        bench_note(&b->notes, "cuBLAS baseline unavailable: this build has no CUDA");
#endif
    }
    b->have_tc_switch = BENCH_HEVC_HOOKS;
    b->have_kernel_only = BENCH_HEVC_HOOKS && !b->cuda_emu;
    /* the pinned rows: on by default on a device; through the emulation only on request */
    b->pinned_on = BENCH_HEVC_HOOKS && (pinned ? !strcmp(pinned, "on") : !b->cuda_emu);
    if (b->im_on[IM_CUDA] && !BENCH_HEVC_HOOKS)
        bench_note(
            &b->notes,
            "this build has no CUDA HEVC options (src/cuda/hevc.cu): cuda runs its default "
            "configuration only (no device-only, tensor-core, kernel-only or stream-sweep "
            "runs)");
    if (b->im_on[IM_CUDA] && BENCH_HEVC_HOOKS && (b->download != 2 || b->alloc4))
        bench_note(&b->notes,
                   "cuda configurations other than default: --download %s --alloc4 %s",
                   download, alloc4);
    set_ceilings(b);
    /* sources */
    b->source = !strcmp(source, "gen") ? HW_SOURCE_GEN : HW_SOURCE_REAL;
    if (b->source == HW_SOURCE_REAL) {
        const char *dir = o.video ? o.video : mosaic_default_video_dir();
        if (bench_open_mosaic(&b->mosaic, dir, CMD, c.quiet) < 0) {
            b->source = HW_SOURCE_GEN;
            bench_note(&b->notes, "no real clips found (%s): generated video",
                       dir ? dir : "no folder");
        }
    }
    bench_note(
        &b->notes,
        "residuals: frame 0 intra (I slice, open-loop DC/H/V prediction per TB), frames 1.. "
        "inter (P slice, vidk_me_search R=16 16x16, integer-pel); QP %d",
        b->qp);
    bench_say_start(CMD, &b->mt, c.quiet);
    const double t_start = cli_now();
    int failed_wl = 0;
    for (int i = 0; i < b->nwl; i++)
        if (run_workload(b, i, t_start) < 0) failed_wl++;
    bhevc_write_text(stdout, b, 0);
    ret = 0;
    if (bench_write_outputs(CMD, o.csv, o.json, o.md, bhevc_write_report, b) < 0) ret = 1;
    int mism = 0, fails = 0;
    for (int i = 0; i < b->nres; i++) {
        mism += b->res[i].mismatch;
        /* ENOSYS (a backend without this path yet) is reported, not a failure */
        fails += !b->res[i].done && !strstr(b->res[i].err, "ENOSYS");
    }
    if (mism) {
        cli_error(CMD, "%d configuration(s) differ from the c backend", mism);
        ret = 1;
    }
    if (fails || failed_wl) {
        cli_error(CMD, "%d configuration(s) and %d workload(s) failed", fails, failed_wl);
        ret = 1;
    }
done:
    mosaic_close(&b->mosaic);
    if (b->prep != b->ctx[IM_THREADS] && b->prep != b->ctx[IM_C]) vidk_close(&b->prep);
    for (int i = 0; i < IM_COUNT; i++)
        vidk_close(&b->ctx[i]);
    vidk_close(&b->sweep_ctx);
#if VIDK_BENCH_CUBLAS
    hcb_close(&b->hcb);
#endif
    free(b->res);
    free(b);
    return ret;
}
