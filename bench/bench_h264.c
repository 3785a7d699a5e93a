/* `vidkern-bench h264`: the H.264 inverse-transform benchmark of Wang et al. 2013 ("An
 * Optimized Parallel IDCT on Graphics Processing Units") on today's hardware: real-video
 * coefficient workloads in the paper's three modes (bench/h264_workload.h), the non-zero
 * block ratios of its Fig. 2, its Table 3 (dense baseline vs compacted: kernel, H2D, D2H),
 * Table 4 (each GPU optimisation switched on in turn), Fig. 4 (kernel vs scalar, SIMD,
 * all cores) and Fig. 5 (complete IDCT with and without overlap), plus bytes over PCIe,
 * pipelined throughput next to single-frame latency, and the targets of issue 3.
 * Every backend's reconstruction is compared with the c backend's (exit 1 on a mismatch).
 * See docs/BENCH_H264.md for what every table means. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "cli.h"
#include "cuda/cuda_backend.h"
#include "cuda/h264_cuda.h"
#include "enc_report.h"
#include "gen.h"
#include "h264_workload.h"
#include "internal.h"
#include "mosaic.h"
#include "picio.h"

#define CMD "h264"

/* Ceilings of the GPU machines here (DESIGN.md): pinned PCIe per direction, HBM. */
#define PCIE_GBS_DEFAULT 55.0
#define HBM_GBS_H100     3000.0
#define HBM_GBS_H200     4300.0
/* x264 on one Zen 3 core (issue 3): add4x4_idct and add8x8_idct8, ns per block. */
#define X264_ADD4_NS 3.6
#define X264_ADD8_NS 14.0

#define MAX_SIZES   8
#define MAX_NOTES   16
#define MAX_RUNS    255
#define MAX_GPU_CTX 8
#define TPUT_CALLS  16 /* frames per round of the pipelined-throughput measurement */
#define MAX_TARGETS 32

enum { KIND_ALL = 0, KIND_4 = 1, KIND_8 = 2, KINDS = 3 };
static const char *const kind_name[KINDS] = {"all", "4x4", "8x8"};

enum { PATH_API = 0, PATH_CUDA = 1, PATH_EMU = 2 };

/* Steps of Table 4 (src/cuda/h264_cuda.h, VidkH264CudaStep). */
#define STEPS 11
_Static_assert(STEPS == VIDK_H264_CUDA_STEPS, "the step names below follow VidkH264CudaStep");
static const char *const step_name[STEPS] = {"dense",     "compact", "line",  "larger",
                                             "coalesced", "sparse",  "fused", "pipeline",
                                             "graphs",    "host",    "planes"};

static void help(void) {
    printf(
        "usage: vidkern-bench h264 [options]\n\n"
        "Times the H.264 inverse transform (dequantise + IDCT + add, vidk_h264_batch_inverse)\n"
        "of whole frames on every backend, on coefficient frames made from video, and\n"
        "prints the tables of Wang et al. 2013 (docs/BENCH_H264.md).\n\n"
        "options:\n"
        "  --sizes LIST      1080p (1920x1088 coded), 2160p, 720p, cif or WxH (default\n"
        "                    1080p,2160p)\n"
        "  --modes LIST      intra (QP 12, intra prediction), qp22, qp37 (P frames, motion-\n"
        "                    compensated) (default: all three)\n"
        "  --backends LIST   c,simd,threads,cuda (default: all usable here)\n"
        "  --frames N        coefficient frames per workload (default 8; also the most\n"
        "                    read from each --load file)\n"
        "  --runs N          timed passes over the frames after warm-up (default 9)\n"
        "  --max-seconds S   time budget per configuration, warm-up included (default 0.5;\n"
        "                    0 = none): fewer passes when a pass is slow\n"
        "  --source S        real (mosaic of the clips of --video) or gen (generated)\n"
        "                    (default real; generated when no clips are found)\n"
        "  --video DIR       folder of the real clips (default $VIDK_VIDEO_DIR or\n"
        "                    ../shared/video)\n"
        "  --save DIR        also write every workload as DIR/<size>_<mode>.vkcf\n"
        "                    (docs/COEFFORMAT.md) + DIR/<size>_<mode>.pred.y4m\n"
        "  --load DIR        use the *.vkcf files of DIR instead of making workloads (a\n"
        "                    matching <stem>.pred.y4m gives the predictions, else flat 128)\n"
        "  --gpu-contexts K  host threads, each with its own cuda context, for the\n"
        "                    pipelined throughput (default 3, 1..%d)\n"
        "  --hbm-gbs X       device-memory ceiling in GB/s (default by GPU name: H100 %g,\n"
        "                    H200 %g)\n"
        "  --pcie-gbs X      pinned PCIe ceiling per direction in GB/s (default %g)\n"
        "  --cuda-emu        (testing) add the cuda rows through the host emulation of the\n"
        "                    CUDA kernels; checks the bits, its times mean nothing\n"
        "  --csv FILE, --json FILE, --markdown FILE   also write the results there\n"
        "  --threads N, --cpumask M, --device N, --quiet   as for every command\n",
        MAX_GPU_CTX, HBM_GBS_H100, HBM_GBS_H200, PCIE_GBS_DEFAULT);
}

/* ---- results ------------------------------------------------------------------------ */

typedef struct Stat {
    int done, runs, mismatch, has_dev;
    double ms;                                  /* wall per frame, median over passes */
    double kernel_ms, h2d_ms, d2h_ms, total_ms; /* device stages per frame, medians */
    double h2d_bytes, d2h_bytes;                /* per frame */
    char err[96];
} Stat;

typedef struct Row {
    int wl;
    char backend[16]; /* c, simd, threads, cuda, cuda-emu */
    char variant[24]; /* batch, dense, <step>, default, no-overlap, throughput */
    int kind;
    Stat st;
} Row;

typedef struct WlInfo {
    char size_name[24], mode_name[48], source[256];
    int w, h, nframes;
    H264wStats stats;
} WlInfo;

typedef struct Micro {
    char backend[16], fn[32];
    double ns;
} Micro;

typedef struct Target {
    char what[128], where[64], value[64];
    int met; /* 1 met, 0 missed, -1 not measured */
} Target;

typedef struct Bench {
    /* options */
    int nsizes, size_w[MAX_SIZES], size_h[MAX_SIZES];
    char size_name[MAX_SIZES][24];
    int nmodes, modes[H264W_MODE_COUNT];
    int nbackends;
    VidkBackend backends[VIDK_BACKEND_COUNT];
    int cuda_emu, frames, runs, quiet, device, gpu_contexts, sizes_given, modes_given;
    double max_seconds, hbm_gbs, pcie_gbs;
    /* state */
    VidkContext *ctx[VIDK_BACKEND_COUNT];
    VidkContext *ref_ctx, *gen_ctx, *gen_own; /* gen_own: opened only to make workloads */
    VidkContext *gpu_ctx[MAX_GPU_CTX];
    int ngpu_ctx;
    BenchMeta mt;
    WlInfo *wls;
    int nwl, capwl;
    Row *rows;
    int nrows, caprows;
    Micro micro[12];
    int nmicro;
    Target targets[MAX_TARGETS];
    int ntargets;
    BenchNotes notes;
    int mismatches, failures;
    double t_start;
    const char *fault; /* $VIDK_BENCH_H264_FAULT: backend label whose output is corrupted */
    int api_noted, steps_noted;
} Bench;

static void note(Bench *b, const char *fmt, const char *arg) {
    bench_note(&b->notes, fmt, arg);
    if (!b->quiet) {
        fprintf(stderr, "vidkern-bench h264: ");
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
}

static Row *add_row(Bench *b, int wl, const char *backend, const char *variant, int kind) {
    if (b->nrows == b->caprows) {
        const int nc = b->caprows ? 2 * b->caprows : 64;
        Row *r = realloc(b->rows, (size_t)nc * sizeof(*r));
        if (!r) return NULL;
        b->rows = r, b->caprows = nc;
    }
    Row *r = &b->rows[b->nrows++];
    memset(r, 0, sizeof(*r));
    r->wl = wl, r->kind = kind;
    snprintf(r->backend, sizeof(r->backend), "%s", backend);
    snprintf(r->variant, sizeof(r->variant), "%s", variant);
    return r;
}

static const Stat *find(const Bench *b, int wl, const char *backend, const char *variant,
                        int kind) {
    for (int i = 0; i < b->nrows; i++) {
        const Row *r = &b->rows[i];
        if (r->wl == wl && r->kind == kind && !strcmp(r->backend, backend) &&
            !strcmp(r->variant, variant))
            return r->st.done ? &r->st : NULL;
    }
    return NULL;
}

/* The cuda rows' backend label: "cuda", or "cuda-emu" for the host emulation. */
static const char *gpu_label(const Bench *b) {
    return b->cuda_emu ? "cuda-emu" : "cuda";
}

/* ---- one workload being measured ------------------------------------------------------ */

typedef struct Live {
    int wl; /* index in b->wls */
    const H264Workload *w;
    VidkH264Batch *sub[KINDS]; /* per kind, per frame: the batch, 4x4 only, 8x8 only */
    uint64_t *ref[KINDS]; /* hashes of the c backend's reconstructions (enc_hash_picture) */
    VidkPicture work;
} Live;

typedef struct Job {
    VidkContext *ctx;
    int kind, dense, path, use_opts;
    int reg; /* cuda: the work picture (and, dense, the coefficient frames) registered with
                vidk_picture_register / vidk_host_register before the timed loop */
    VidkH264CudaOpts opts;
} Job;

/* ---- registered caller memory (the "pinned" rows) -----------------------------------------
 */

/* Bytes of a coefficient frame's one allocation: macroblocks, then the level planes. */
static size_t frame_bytes(const VidkH264CoefFrame *fr) {
    const int np = fr->chroma == VIDK_CHROMA_400 ? 1 : 3;
    const uint8_t *end =
        (const uint8_t *)(fr->coef[np - 1] + (size_t)fr->plane_w[np - 1] * fr->plane_h[np - 1]);
    return (size_t)(end - (const uint8_t *)fr->alloc);
}

/* Register (on) or unregister a coefficient frame on ctx; the emulation keeps its own list. */
static int reg_frame(VidkContext *ctx, int path, const VidkH264CoefFrame *fr, int on) {
#if VIDK_HAVE_CUDA
    if (path == PATH_EMU)
        return vidk_cuda_h264_emu_register(fr->alloc, on ? frame_bytes(fr) : 0);
#endif
    (void)path;
    return on ? vidk_host_register(ctx, fr->alloc, frame_bytes(fr))
              : vidk_host_unregister(ctx, fr->alloc);
}

/* The same for a picture from vidk_picture_alloc (the emulation: each plane's rows). */
static int reg_picture(VidkContext *ctx, int path, VidkPicture *pic, int on) {
#if VIDK_HAVE_CUDA
    if (path == PATH_EMU) {
        int e = 0;
        for (int p = 0; p < (pic->chroma == VIDK_CHROMA_400 ? 1 : 3); p++) {
            int pw, ph;
            vidk_picture_plane_size(pic, p, &pw, &ph);
            const int r = vidk_cuda_h264_emu_register(
                pic->data[p], on ? (size_t)(ph - 1) * (size_t)pic->stride[p] + (size_t)pw : 0);
            if (r < 0) e = r;
        }
        return e;
    }
#endif
    (void)path;
    return on ? vidk_picture_register(ctx, pic) : vidk_picture_unregister(ctx, pic);
}

static int run_call(const Job *j, Live *lv, int i, VidkPicture *pic) {
    const H264Workload *w = lv->w;
    const VidkH264Batch *bt = &lv->sub[j->kind][i];
    if (j->path == PATH_API)
        return j->dense ? vidk_h264_frame_inverse(j->ctx, &w->fr[i], pic)
                        : vidk_h264_batch_inverse(j->ctx, bt, pic);
#if VIDK_HAVE_CUDA
    const VidkH264CudaOpts *o = j->use_opts ? &j->opts : NULL;
    if (j->path == PATH_CUDA)
        return j->dense ? vidk_cuda_h264_frame_inverse(j->ctx, &w->fr[i], pic, o)
                        : vidk_cuda_h264_batch_inverse(j->ctx, bt, pic, o);
    if (j->path == PATH_EMU)
        return j->dense ? vidk_cuda_h264_emu_frame_inverse(j->ctx, &w->fr[i], pic, o)
                        : vidk_cuda_h264_emu_batch_inverse(j->ctx, bt, pic, o);
#endif
    return VIDK_ERR(ENOSYS);
}

static void measure_calls(Bench *b, Live *lv, const Job *j, const char *label, Stat *st);

/* Warm-up pass(es) with the bit-exactness check, then timed passes over every frame. The
 * prediction is copied into the work picture before each call, outside the timed span.
 * j->reg: the work picture and (dense) every coefficient frame registered first, not
 * timed, and unregistered after. */
static void measure(Bench *b, Live *lv, const Job *j, const char *label, Stat *st) {
    int e = 0, pic_done = 0, nfr = 0;
    const int n = lv->w->nframes;
    memset(st, 0, sizeof(*st));
    if (j->reg) {
        if ((e = reg_picture(j->ctx, j->path, &lv->work, 1)) < 0) goto out;
        pic_done = 1;
        for (; j->dense && nfr < n; nfr++)
            if ((e = reg_frame(j->ctx, j->path, &lv->w->fr[nfr], 1)) < 0) goto out;
    }
    measure_calls(b, lv, j, label, st);
out:
    if (e < 0) snprintf(st->err, sizeof(st->err), "registering: %s", vidk_strerror(e));
    while (nfr > 0)
        if ((e = reg_frame(j->ctx, j->path, &lv->w->fr[--nfr], 0)) < 0 && st->done)
            st->done = 0,
            snprintf(st->err, sizeof(st->err), "unregistering: %s", vidk_strerror(e));
    if (pic_done && (e = reg_picture(j->ctx, j->path, &lv->work, 0)) < 0 && st->done)
        st->done = 0, snprintf(st->err, sizeof(st->err), "unregistering: %s", vidk_strerror(e));
}

static void measure_calls(Bench *b, Live *lv, const Job *j, const char *label, Stat *st) {
    const int n = lv->w->nframes;
    const double budget = b->max_seconds > 0 ? b->max_seconds : INFINITY;
    const double t0 = cli_now();
    const int warm = j->path == PATH_CUDA ? 2 : 1; /* the first device call allocates */
    const int rk = j->dense ? KIND_ALL : j->kind;
    int e = 0;
    memset(st, 0, sizeof(*st));
    for (int w = 0; w < warm; w++)
        for (int i = 0; i < n; i++) {
            bench_copy_pic(&lv->work, &lv->w->pred[i]);
            if ((e = run_call(j, lv, i, &lv->work)) < 0) goto fail;
            /* Test hook: a wrong sample must fail the run (tests/cli_bench_h264.sh). */
            if (!w && !i && b->fault && !strcmp(b->fault, label))
                ((uint8_t *)lv->work.data[0])[0] ^= 1;
            if (!w && enc_hash_picture(ENC_HASH_INIT, &lv->work) != lv->ref[rk][i])
                st->mismatch = 1;
        }
    const double t_pass = (cli_now() - t0) / warm;
    int runs = b->runs;
    if (isfinite(budget)) {
        const double fit = floor((budget - (cli_now() - t0)) / (t_pass > 0 ? t_pass : 1e-9));
        runs = fit < 1 ? 1 : fit < runs ? (int)fit : runs;
    }
    double v[MAX_RUNS];
    BenchDevTimes dv;
    dv.n = 0;
    for (int r = 0; r < runs; r++) {
        double sum = 0, dk = 0, dh = 0, dd = 0, dt = 0, hb = 0, db = 0;
        int nd = 0;
        for (int i = 0; i < n; i++) {
            bench_copy_pic(&lv->work, &lv->w->pred[i]);
            const double a = cli_now();
            e = run_call(j, lv, i, &lv->work);
            sum += cli_now() - a;
            if (e < 0) goto fail;
            VidkCudaTiming ct;
            if (j->path == PATH_CUDA && vidk_cuda_last_timing(j->ctx, &ct) == 0) {
                dk += ct.kernel_ms, dh += ct.h2d_ms, dd += ct.d2h_ms, dt += ct.total_ms;
                hb += (double)ct.h2d_bytes, db += (double)ct.d2h_bytes;
                nd++;
            }
        }
        v[r] = 1e3 * sum / n;
        if (nd == n) { /* every call of the pass was timed on the device */
            bench_dev_add(&dv, dk / n, dh / n, dd / n, dt / n);
            st->h2d_bytes += hb / n, st->d2h_bytes += db / n;
        }
    }
    st->ms = bench_median(v, runs);
    st->runs = runs;
    if (dv.n) {
        st->has_dev = 1;
        bench_dev_medians(&dv, &st->kernel_ms, &st->h2d_ms, &st->d2h_ms, &st->total_ms);
        st->h2d_bytes /= dv.n, st->d2h_bytes /= dv.n;
    }
    st->done = 1;
    return;
fail:
    snprintf(st->err, sizeof(st->err), "%s", vidk_strerror(e));
}

static void report(Bench *b, const Live *lv, const Row *r) {
    if (r->st.mismatch) {
        b->mismatches++;
        fprintf(stderr,
                "vidkern-bench h264: %s %s (%s) on %s %s differs from the c backend's "
                "reconstruction\n",
                r->backend, r->variant, kind_name[r->kind], b->wls[lv->wl].size_name,
                b->wls[lv->wl].mode_name);
    }
    if (!r->st.done) {
        b->failures++;
        fprintf(stderr, "vidkern-bench h264: %s %s (%s) on %s %s failed: %s\n", r->backend,
                r->variant, kind_name[r->kind], b->wls[lv->wl].size_name,
                b->wls[lv->wl].mode_name, r->st.err);
    }
    if (b->quiet) return;
    fprintf(stderr, "[%.0fs] %s %s  %-8s %-10s %-3s  ", cli_now() - b->t_start,
            b->wls[lv->wl].size_name, b->wls[lv->wl].mode_name, r->backend, r->variant,
            kind_name[r->kind]);
    if (r->st.done)
        fprintf(stderr, "%.4f ms/frame (%d passes)%s\n", r->st.ms, r->st.runs,
                r->st.mismatch ? "  MISMATCH" : "");
    else
        fprintf(stderr, "failed\n");
}

static void run_job(Bench *b, Live *lv, const Job *j, const char *backend,
                    const char *variant) {
    Row *r = add_row(b, lv->wl, backend, variant, j->kind);
    if (!r) return;
    measure(b, lv, j, backend, &r->st);
    report(b, lv, r);
}

/* ---- pipelined throughput: K host threads, each with its own cuda context ---------------- */
#if VIDK_HAVE_CUDA

typedef struct TputArg {
    VidkContext *ctx;
    const Live *lv;
    VidkPicture *pics;
    const VidkH264CoefFrame *frames; /* dense: the coefficient frame of each call */
    const VidkH264CudaOpts *opts;
    int t, k, calls, err;
} TputArg;

static void *tput_thread(void *p) {
    TputArg *a = p;
    const int n = a->lv->w->nframes;
    for (int c = a->t; c < a->calls && !a->err; c += a->k) {
        const int e = a->frames ? vidk_cuda_h264_frame_inverse(a->ctx, &a->frames[c],
                                                               &a->pics[c], a->opts)
                                : vidk_cuda_h264_batch_inverse(a->ctx, &a->lv->w->batch[c % n],
                                                               &a->pics[c], a->opts);
        if (e < 0) a->err = e;
    }
    return NULL;
}

/* A copy of a coefficient frame (its own allocation, so that another context can register
 * it). */
static int frame_clone(VidkH264CoefFrame *dst, const VidkH264CoefFrame *src) {
    const int e = vidk_h264_coef_frame_alloc(dst, src->w, src->h, src->chroma, src->bitdepth);
    if (e < 0) return e;
    memcpy(dst->mb, src->mb, (size_t)src->mb_w * src->mb_h * sizeof(*src->mb));
    for (int p = 0; p < (src->chroma == VIDK_CHROMA_400 ? 1 : 3); p++)
        memcpy(dst->coef[p], src->coef[p], (size_t)src->plane_w[p] * src->plane_h[p] * 2);
    dst->scaling = src->scaling;
    return 0;
}

/* variant "throughput": the library's settings with the host staging pools splitting the
 * cores between the K contexts (each context's pool has cores / K threads, so that the K
 * calls in flight do not oversubscribe the CPU); "throughput-legacy": the previous defaults
 * (single-threaded host staging), for comparison in the same run. dense: each call is
 * vidk_cuda_h264_frame_inverse on the dense frame (else the batch inverse). reg: before the
 * rounds, every picture is registered on the context that decodes onto it, and (dense) each
 * call gets its own copy of its coefficient frame registered there too (a range is
 * registered on one context only); not timed. */
static void measure_tput(Bench *b, Live *lv, const char *variant, const VidkH264CudaOpts *opts,
                         int dense, int reg) {
    Row *r = add_row(b, lv->wl, gpu_label(b), variant, KIND_ALL);
    if (!r) return;
    Stat *st = &r->st;
    const int k = b->ngpu_ctx, n = lv->w->nframes;
    const int calls = n > TPUT_CALLS ? n : TPUT_CALLS;
    VidkPicture *pics = calloc((size_t)calls, sizeof(*pics));
    VidkH264CoefFrame *frames = NULL;
    int nreg = 0, nfreg = 0, nframes = 0;
    TputArg args[MAX_GPU_CTX];
    pthread_t th[MAX_GPU_CTX];
    const double budget = b->max_seconds > 0 ? b->max_seconds : INFINITY;
    const double t0 = cli_now();
    double times[MAX_RUNS];
    int e = 0, runs = 0;
    if (!pics) {
        e = VIDK_ERR(ENOMEM);
        goto done;
    }
    for (int c = 0; c < calls; c++)
        if ((e = vidk_picture_alloc(&pics[c], lv->w->w, lv->w->h, lv->w->pred[0].chroma, 8,
                                    0)) < 0)
            goto done;
    if (dense && !(frames = calloc((size_t)calls, sizeof(*frames)))) {
        e = VIDK_ERR(ENOMEM);
        goto done;
    }
    for (int c = 0; dense && c < calls; c++, nframes++) {
        if (!reg) { /* shallow: the workload's frames, read-only, shared by the contexts */
            frames[c] = lv->w->fr[c % n];
            continue;
        }
        if ((e = frame_clone(&frames[c], &lv->w->fr[c % n])) < 0) goto done;
    }
    for (; reg && nreg < calls; nreg++)
        if ((e = vidk_picture_register(b->gpu_ctx[nreg % k], &pics[nreg])) < 0) goto done;
    for (; reg && dense && nfreg < calls; nfreg++)
        if ((e = vidk_host_register(b->gpu_ctx[nfreg % k], frames[nfreg].alloc,
                                    frame_bytes(&frames[nfreg]))) < 0)
            goto done;
    /* Round 0 is the warm-up and the check; then timed rounds within the budget. */
    for (int round = 0; round <= b->runs; round++) {
        for (int c = 0; c < calls; c++)
            bench_copy_pic(&pics[c], &lv->w->pred[c % n]);
        for (int t = 0; t < k; t++)
            args[t] = (TputArg){.ctx = b->gpu_ctx[t],
                                .lv = lv,
                                .pics = pics,
                                .frames = frames,
                                .opts = opts,
                                .t = t,
                                .k = k,
                                .calls = calls};
        const double a = cli_now();
        int started = 0;
        for (int t = 0; t < k; t++) {
            if (pthread_create(&th[t], NULL, tput_thread, &args[t])) {
                args[t].err = VIDK_ERR(EAGAIN);
                break;
            }
            started++;
        }
        for (int t = 0; t < started; t++)
            pthread_join(th[t], NULL);
        const double dt = cli_now() - a;
        for (int t = 0; t < k; t++)
            if (args[t].err < 0) e = args[t].err;
        if (e < 0) goto done;
        if (!round) {
            for (int c = 0; c < calls; c++)
                if (enc_hash_picture(ENC_HASH_INIT, &pics[c]) != lv->ref[KIND_ALL][c % n])
                    st->mismatch = 1;
        } else {
            times[runs++] = 1e3 * dt / calls;
        }
        if (round && cli_now() - t0 + dt > budget) break;
    }
    st->ms = bench_median(times, runs);
    st->runs = runs;
    st->done = runs > 0;
done:
    if (e < 0) snprintf(st->err, sizeof(st->err), "%s", vidk_strerror(e));
    while (nfreg > 0) {
        nfreg--;
        const int u = vidk_host_unregister(b->gpu_ctx[nfreg % k], frames[nfreg].alloc);
        if (u < 0 && st->done)
            st->done = 0, snprintf(st->err, sizeof(st->err), "%s", vidk_strerror(u));
    }
    while (nreg > 0) {
        nreg--;
        const int u = vidk_picture_unregister(b->gpu_ctx[nreg % k], &pics[nreg]);
        if (u < 0 && st->done)
            st->done = 0, snprintf(st->err, sizeof(st->err), "%s", vidk_strerror(u));
    }
    for (int c = 0; reg && c < nframes; c++)
        vidk_h264_coef_frame_free(&frames[c]);
    free(frames);
    if (pics)
        for (int c = 0; c < calls; c++)
            vidk_picture_free(&pics[c]);
    free(pics);
    report(b, lv, r);
}
#endif

/* ---- per-block micro-benchmark of the CPU DSP functions -----------------------------------
 */

static double time_blocks(const VidkH264DSP *d, int fn, int t, uint8_t *dst, const int32_t *dq,
                          const int16_t *dq16, const int16_t *lev, const int16_t (*ls4)[16],
                          const int16_t (*ls8)[64], const int *qps, int nb) {
    const int nn = t ? 64 : 16, per_row = 64 / (t ? 8 : 4);
    double best[9];
    long reps = 1;
    for (int m = 0; m < 9;) {
        const double a = cli_now();
        for (long r = 0; r < reps; r++)
            for (int i = 0; i < nb; i++) {
                const int bx = (i % per_row) * (t ? 8 : 4),
                          by = (i / per_row % per_row) * (t ? 8 : 4);
                uint8_t *o = dst + by * 64 + bx;
                if (fn == 0)
                    d->idct_add[t](o, 64, dq + (size_t)i * nn);
                else if (fn == 2)
                    d->idct_add16[t](o, 64, dq16 + (size_t)i * nn);
                else
                    d->dequant_idct_add[t](o, 64, lev + (size_t)i * nn,
                                           t ? ls8[qps[i] % 6] : ls4[qps[i] % 6], qps[i], NULL);
            }
        const double dt = cli_now() - a;
        if (dt < 0.005) { /* calibrate: at least 5 ms per sample */
            reps *= 2;
            continue;
        }
        best[m++] = 1e9 * dt / ((double)reps * nb);
    }
    return bench_median(best, 9);
}

static void micro_bench(Bench *b, const H264Workload *w) {
    enum { NB = 2048 };
    int16_t ls4[6][16], ls8[6][64];
    uint8_t flat[64];
    memset(flat, 16, sizeof(flat));
    vidk_h264_level_scale4(ls4, flat);
    vidk_h264_level_scale8(ls8, flat);
    int32_t *dq = vidk_malloc_aligned(64, sizeof(int32_t) * NB * 64);
    int16_t *dq16 = vidk_malloc_aligned(64, sizeof(int16_t) * NB * 64);
    int16_t *lev = vidk_malloc_aligned(64, sizeof(int16_t) * NB * 64);
    uint8_t *dst = vidk_malloc_aligned(64, 64 * 64);
    int *qps = malloc(sizeof(int) * NB);
    VidkH264DSP cdsp;
    vidk_h264_dsp_init(&cdsp, 0);
    if (!dq || !dq16 || !lev || !dst || !qps) goto done;
    memset(dst, 128, 64 * 64);
    static const char *const backends[2] = {"c", "simd"};
    for (int t = 0; t < 2; t++) {
        /* Real blocks of the first frame, cycled (flat scaling, the block's QP). */
        const VidkH264BlockList *l = &w->batch[0].list[t];
        const int nn = t ? 64 : 16;
        for (int i = 0; i < NB; i++) {
            if (l->count) {
                const uint32_t s = (uint32_t)i % l->count;
                memcpy(lev + (size_t)i * nn, l->coef + (size_t)s * nn, sizeof(int16_t) * nn);
                qps[i] = l->qp[s];
            } else {
                for (int k = 0; k < nn; k++)
                    lev[(size_t)i * nn + k] = (int16_t)((k * 7 + i) % 9 - 4);
                qps[i] = 26;
            }
            cdsp.dequant[t](dq + (size_t)i * nn, lev + (size_t)i * nn,
                            t ? ls8[qps[i] % 6] : ls4[qps[i] % 6], qps[i]);
            /* x264's interface: the dequantised values as int16 (saturated; those of a
             * conforming stream fit). */
            for (int k = 0; k < nn; k++) {
                const int32_t v = dq[(size_t)i * nn + k];
                dq16[(size_t)i * nn + k] = (int16_t)(v < -32768  ? -32768
                                                     : v > 32767 ? 32767
                                                                 : v);
            }
        }
        for (int k = 0; k < 2; k++) {
            const VidkContext *c = k ? b->ctx[VIDK_BACKEND_SIMD] : b->ref_ctx;
            if (!c) continue;
            for (int fn = 0; fn < 3 && b->nmicro < 12; fn++) {
                static const char *const fname[3] = {"idct_add", "dequant_idct_add",
                                                     "idct_add16"};
                Micro *m = &b->micro[b->nmicro++];
                snprintf(m->backend, sizeof(m->backend), "%s", backends[k]);
                snprintf(m->fn, sizeof(m->fn), "%s_%s", fname[fn], t ? "8x8" : "4x4");
                m->ns =
                    time_blocks(&c->h264, fn, t, dst, dq, dq16, lev, (const int16_t(*)[16])ls4,
                                (const int16_t(*)[64])ls8, qps, NB);
            }
        }
    }
done:
    vidk_free_aligned(dq);
    vidk_free_aligned(dq16);
    vidk_free_aligned(lev);
    vidk_free_aligned(dst);
    free(qps);
}

/* ---- measuring one workload -------------------------------------------------------------- */

static int live_init(Bench *b, Live *lv, const H264Workload *w, int wl) {
    memset(lv, 0, sizeof(*lv));
    lv->w = w, lv->wl = wl;
    const int n = w->nframes;
    int e = vidk_picture_alloc(&lv->work, w->w, w->h, w->pred[0].chroma, 8, 0);
    if (e < 0) return e;
    lv->sub[KIND_ALL] = w->batch;
    for (int k = 1; k < KINDS; k++) {
        if (!(lv->sub[k] = calloc((size_t)n, sizeof(VidkH264Batch)))) return VIDK_ERR(ENOMEM);
        for (int i = 0; i < n; i++) {
            /* Shallow copies: one size class only (the DC groups feed 4x4 blocks only). */
            lv->sub[k][i] = w->batch[i];
            lv->sub[k][i].list[k == KIND_4 ? 1 : 0].count = 0;
            if (k == KIND_8) lv->sub[k][i].dc.count = 0;
        }
    }
    for (int k = 0; k < KINDS; k++) {
        if (!(lv->ref[k] = calloc((size_t)n, sizeof(uint64_t)))) return VIDK_ERR(ENOMEM);
        for (int i = 0; i < n; i++) {
            bench_copy_pic(&lv->work, &w->pred[i]);
            if ((e = vidk_h264_batch_inverse(b->ref_ctx, &lv->sub[k][i], &lv->work)) < 0)
                return e;
            lv->ref[k][i] = enc_hash_picture(ENC_HASH_INIT, &lv->work);
        }
    }
    return 0;
}

static void live_free(Live *lv) {
    for (int k = 1; k < KINDS; k++)
        free(lv->sub[k]);
    for (int k = 0; k < KINDS; k++)
        free(lv->ref[k]);
    vidk_picture_free(&lv->work);
    memset(lv, 0, sizeof(*lv));
}

static void measure_gpu(Bench *b, Live *lv) {
#if VIDK_HAVE_CUDA
    const int path = b->cuda_emu ? PATH_EMU : PATH_CUDA;
    VidkContext *ctx =
        b->cuda_emu ? (b->ctx[VIDK_BACKEND_SIMD] ? b->ctx[VIDK_BACKEND_SIMD] : b->ref_ctx)
                    : b->ctx[VIDK_BACKEND_CUDA];
    const char *label = gpu_label(b);
    Job j;
    for (int s = 0; s < STEPS; s++)
        if (strcmp(vidk_cuda_h264_step_name(s), step_name[s]) && !b->steps_noted++)
            note(b, "step names differ from src/cuda/h264_cuda.h (%s): update bench_h264.c",
                 vidk_cuda_h264_step_name(s));
    /* Table 4 and Table 3: every step in turn, the whole frame; then each size class alone
     * (the dense baseline needs the whole frame). */
    for (int kind = 0; kind < KINDS; kind++)
        for (int s = kind == KIND_ALL ? 0 : 1; s < STEPS; s++) {
            memset(&j, 0, sizeof(j));
            j.ctx = ctx, j.kind = kind, j.path = path, j.use_opts = 1, j.dense = s == 0;
            vidk_cuda_h264_step_opts(&j.opts, s);
            run_job(b, lv, &j, label, step_name[s]);
        }
    /* Fig. 5: the library's settings (overlapped), and the same without overlap. */
    memset(&j, 0, sizeof(j));
    j.ctx = ctx, j.kind = KIND_ALL, j.path = path;
    run_job(b, lv, &j, label, "default");
    j.use_opts = 1;
    vidk_cuda_h264_default_opts(&j.opts);
    j.opts.pipeline = 0, j.opts.graphs = 0;
    run_job(b, lv, &j, label, "no-overlap");
    /* Past issue 3 (GPU rows; under the emulation the same calls are only checked, so that
     * the emulated run keeps its rows): the frame inverse as the public API runs it (the
     * fast dense kernel, bands pipelined); that kernel alone (one band on one stream: its
     * kernel stage is the single launch, for the HBM-floor ratio); and both entry points
     * with the caller's memory registered ("pinned": picture and coefficient frames; the
     * batch: the picture, in plane mode); and the frame inverse as it ran before the fast
     * dense kernel (host compaction, then the batch path), for comparison. */
    enum { NV = 5 };
    Job v[NV];
    static const char *const vname[NV] = {"frame-default", "dense-vec", "pinned",
                                          "pinned-batch", "frame-compact"};
    for (int i = 0; i < NV; i++) {
        memset(&v[i], 0, sizeof(v[i]));
        v[i].ctx = ctx, v[i].kind = KIND_ALL, v[i].path = path, v[i].dense = i != 3;
        v[i].reg = i == 2 || i == 3;
    }
    v[1].use_opts = v[4].use_opts = 1;
    vidk_cuda_h264_default_opts(&v[1].opts);
    v[1].opts.pipeline = 0;
    vidk_cuda_h264_default_opts(&v[4].opts);
    v[4].opts.dense_vec = 0;
    for (int i = 0; i < NV; i++) {
        if (!b->cuda_emu) {
            run_job(b, lv, &v[i], label, vname[i]);
            continue;
        }
        Row tmp; /* checked, not listed */
        memset(&tmp, 0, sizeof(tmp));
        tmp.wl = lv->wl, tmp.kind = KIND_ALL;
        snprintf(tmp.backend, sizeof(tmp.backend), "%s", label);
        snprintf(tmp.variant, sizeof(tmp.variant), "%s", vname[i]);
        const int keep = b->runs;
        b->runs = 1;
        measure(b, lv, &v[i], label, &tmp.st);
        b->runs = keep;
        report(b, lv, &tmp);
    }
    if (!b->cuda_emu) {
        /* The public entry point, once wired by the CUDA backend, must give the same bits. */
        bench_copy_pic(&lv->work, &lv->w->pred[0]);
        const int e = vidk_h264_batch_inverse(ctx, &lv->w->batch[0], &lv->work);
        if (e == VIDK_ERR(ENOSYS)) {
            if (!b->api_noted++)
                note(b, "%s",
                     "vidk_h264_batch_inverse on a cuda context returns ENOSYS (not wired "
                     "yet): the cuda rows call src/cuda/h264_cuda.h directly");
        } else if (e < 0 ||
                   enc_hash_picture(ENC_HASH_INIT, &lv->work) != lv->ref[KIND_ALL][0]) {
            Row *r = add_row(b, lv->wl, label, "public-api", KIND_ALL);
            if (r) {
                r->st.done = e >= 0, r->st.runs = 1, r->st.mismatch = e >= 0;
                if (e < 0) snprintf(r->st.err, sizeof(r->st.err), "%s", vidk_strerror(e));
                report(b, lv, r);
            }
        }
        VidkH264CudaOpts to;
        vidk_cuda_h264_default_opts(&to);
        to.host_threads = b->mt.cores / (b->ngpu_ctx > 0 ? b->ngpu_ctx : 1);
        if (to.host_threads < 1) to.host_threads = 1;
        if (to.host_threads > 64) to.host_threads = 64;
        measure_tput(b, lv, "throughput", &to, 0, 0);
        /* Past issue 3: the frame inverse (fast dense kernel) and registered caller memory,
         * the same method (K contexts, pools of cores / K threads). */
        measure_tput(b, lv, "throughput-frame", &to, 1, 0);
        measure_tput(b, lv, "throughput-pinned", &to, 1, 1);
        measure_tput(b, lv, "throughput-pinned-batch", &to, 0, 1);
        vidk_cuda_h264_step_opts(&to, VIDK_H264_CUDA_PIPELINE);
        to.graphs = -1;
        measure_tput(b, lv, "throughput-legacy", &to, 0, 0);
    }
#else
    (void)b, (void)lv;
#endif
}

static void measure_workload(Bench *b, const H264Workload *w) {
    if (b->nwl == b->capwl) {
        const int nc = b->capwl ? 2 * b->capwl : 8;
        WlInfo *p = realloc(b->wls, (size_t)nc * sizeof(*p));
        if (!p) {
            b->failures++;
            return;
        }
        b->wls = p, b->capwl = nc;
    }
    WlInfo *wi = &b->wls[b->nwl];
    memset(wi, 0, sizeof(*wi));
    snprintf(wi->size_name, sizeof(wi->size_name), "%s", w->size_name);
    snprintf(wi->mode_name, sizeof(wi->mode_name), "%s", w->mode_name);
    snprintf(wi->source, sizeof(wi->source), "%s", w->source);
    wi->w = w->w, wi->h = w->h, wi->nframes = w->nframes, wi->stats = w->stats;
    Live lv;
    int e = live_init(b, &lv, w, b->nwl++);
    if (e < 0) {
        fprintf(stderr, "vidkern-bench h264: %s %s: %s\n", w->size_name, w->mode_name,
                vidk_strerror(e));
        b->failures++;
        live_free(&lv);
        return;
    }
    if (!b->nmicro && b->ctx[VIDK_BACKEND_SIMD]) micro_bench(b, w);
    Job j;
    for (int k = 0; k < b->nbackends; k++) {
        const VidkBackend be = b->backends[k];
        if (be == VIDK_BACKEND_CUDA) continue;
        for (int kind = 0; kind < KINDS; kind++) {
            memset(&j, 0, sizeof(j));
            j.ctx = b->ctx[be], j.kind = kind, j.path = PATH_API;
            run_job(b, &lv, &j, vidk_backend_name(be), "batch");
        }
        memset(&j, 0, sizeof(j));
        j.ctx = b->ctx[be], j.kind = KIND_ALL, j.path = PATH_API, j.dense = 1;
        run_job(b, &lv, &j, vidk_backend_name(be), "dense");
    }
    if (b->cuda_emu || b->ctx[VIDK_BACKEND_CUDA]) measure_gpu(b, &lv);
    live_free(&lv);
}

/* ---- sources ------------------------------------------------------------------------------
 */

static int size_of(const char *name, int *w, int *h) {
    static const struct {
        const char *n;
        int w, h;
    } named[] = {{"cif", 352, 288},
                 {"720p", 1280, 720},
                 {"1080p", 1920, 1088},
                 {"2160p", 3840, 2160},
                 {"4k", 3840, 2160}};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (!strcmp(name, named[i].n)) {
            *w = named[i].w, *h = named[i].h;
            return 0;
        }
    if (bench_parse_wxh(name, 4352, w, h) < 0) return -1;
    /* Coded size: whole macroblocks, as an encoder pads the picture. */
    *w = (*w + 15) / 16 * 16, *h = (*h + 15) / 16 * 16;
    return 0;
}

static void free_pics(VidkPicture *p, int n) {
    for (int i = 0; i < n; i++)
        vidk_picture_free(&p[i]);
}

/* n source pictures (w x h, 4:2:0, 8 bit, padded) from the mosaic or the generator. */
static int save_workload(Bench *b, const H264Workload *w, const char *dir) {
    char err[600];
    const int e = h264w_save(w, dir, err, sizeof(err));
    if (e < 0) {
        cli_error(CMD, "--save: %s", err);
        b->failures++;
    }
    return e;
}

static int has_mode(const Bench *b, int m) {
    for (int i = 0; i < b->nmodes; i++)
        if (b->modes[i] == m) return 1;
    return 0;
}

/* Workloads made from video: per size, the sources and their motion once, then each mode. */
static int run_made(Bench *b, const Mosaic *m, const char *save) {
    for (int si = 0; si < b->nsizes; si++) {
        const int w = b->size_w[si], h = b->size_h[si], nsrc = b->frames + 1;
        VidkPicture *src = calloc((size_t)nsrc, sizeof(*src));
        if (!src) return VIDK_ERR(ENOMEM);
        const double t0 = cli_now();
        int e = bench_make_pics(src, nsrc, m, w, h, VIDK_CHROMA_420);
        H264wMotion mo;
        char err[600];
        memset(&mo, 0, sizeof(mo));
        if (e >= 0 && (has_mode(b, H264W_QP22) || has_mode(b, H264W_QP37)))
            e = h264w_motion(b->gen_ctx, src, nsrc, &mo, err, sizeof(err));
        else if (e < 0)
            snprintf(err, sizeof(err), "sources: %s", vidk_strerror(e));
        if (e < 0) {
            cli_error(CMD, "%s %dx%d: %s", b->size_name[si], w, h, err);
            free_pics(src, nsrc);
            free(src);
            return e;
        }
        const double t_src = cli_now() - t0;
        if (!b->quiet)
            fprintf(stderr,
                    "vidkern-bench h264: %s %dx%d: %d source frames and motion in %.1f s\n",
                    b->size_name[si], w, h, nsrc, t_src);
        for (int mi = 0; mi < b->nmodes; mi++) {
            H264Workload wl;
            e = h264w_build(b->gen_ctx, src, nsrc, &mo, b->modes[mi], &wl, err, sizeof(err));
            if (e < 0) {
                cli_error(CMD, "%s %s: %s", b->size_name[si], h264w_mode_name(b->modes[mi]),
                          err);
                break;
            }
            snprintf(wl.size_name, sizeof(wl.size_name), "%s", b->size_name[si]);
            snprintf(wl.source, sizeof(wl.source), "%s",
                     m ? "mosaic of the real clips" : "generated (tools/gen.h, seed 1)");
            if (!b->quiet)
                fprintf(stderr,
                        "vidkern-bench h264: %s %s: %d frames made in %.1f s, PSNR-Y %.1f dB\n",
                        wl.size_name, wl.mode_name, wl.nframes, wl.stats.prep_s,
                        wl.stats.psnr_y);
            if (save) save_workload(b, &wl, save);
            measure_workload(b, &wl);
            h264w_free(&wl);
        }
        h264w_motion_free(&mo);
        free_pics(src, nsrc);
        free(src);
        if (e < 0) return e;
    }
    return 0;
}

/* Workloads from the *.vkcf files of a folder, sorted by name. */
static int run_loaded(Bench *b, const char *dir, const char *save) {
    char *names[256];
    const int n = mosaic_list_dir(dir, ".vkcf", names, 256);
    if (n < 0) return cli_error(CMD, "--load: %s: %s", dir, strerror(errno)), VIDK_ERR(ENOENT);
    int e = 0, used = 0;
    for (int i = 0; i < n; i++) {
        char path[4400], err[700];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        H264Workload wl;
        if ((e = h264w_load(b->gen_ctx, path, b->frames, &wl, err, sizeof(err))) < 0) {
            cli_error(CMD, "--load: %s", err);
            break;
        }
        int keep = 1;
        if (b->sizes_given) {
            keep = 0;
            for (int s = 0; s < b->nsizes; s++)
                keep |= !strcmp(b->size_name[s], wl.size_name) ||
                        (b->size_w[s] == wl.w && b->size_h[s] == wl.h);
        }
        if (b->modes_given) {
            const int m = h264w_mode_from_name(wl.mode_name);
            keep &= m >= 0 && has_mode(b, m);
        }
        if (keep) {
            if (!b->quiet)
                fprintf(stderr, "vidkern-bench h264: loaded %s: %s %s, %d frames\n", path,
                        wl.size_name, wl.mode_name, wl.nframes);
            if (save) save_workload(b, &wl, save);
            measure_workload(b, &wl);
            used++;
        }
        h264w_free(&wl);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    if (e < 0) return e;
    if (!used) {
        cli_error(CMD, "--load: no usable .vkcf file in %s", dir);
        return VIDK_ERR(ENOENT);
    }
    return 0;
}

/* ---- device / command description ---------------------------------------------------------
 */

static void meta_fill(Bench *b, int argc, char **argv) {
    bench_meta_fill(&b->mt, "vidkern-bench h264", argc, argv,
                    b->ctx[VIDK_BACKEND_CUDA] ? b->device : -1);
    if (b->hbm_gbs <= 0)
        b->hbm_gbs = strstr(b->mt.gpu, "H200")   ? HBM_GBS_H200
                     : strstr(b->mt.gpu, "H100") ? HBM_GBS_H100
                                                 : 0;
    if (!b->ctx[VIDK_BACKEND_CUDA] && b->cuda_emu)
        snprintf(b->mt.gpu, sizeof(b->mt.gpu),
                 "none (cuda rows: host emulation of the kernels)");
}

/* ---- tables --------------------------------------------------------------------------------
 */

#define TAB_MAXC 16
typedef char Cell[64];
typedef struct Tab {
    char title[200];
    char legend[1400];
    int ncol, lead, nrow, cap;
    Cell head[TAB_MAXC];
    Cell (*row)[TAB_MAXC];
} Tab;

/* heads: "a|b|c"; lead: columns of text (left-aligned in the text output). */
static void tab_init(Tab *t, const char *title, const char *heads, int lead,
                     const char *legend) {
    memset(t, 0, sizeof(*t));
    snprintf(t->title, sizeof(t->title), "%s", title);
    snprintf(t->legend, sizeof(t->legend), "%s", legend ? legend : "");
    t->lead = lead;
    const char *p = heads;
    while (*p && t->ncol < TAB_MAXC) {
        const size_t l = strcspn(p, "|");
        snprintf(t->head[t->ncol++], sizeof(Cell), "%.*s", (int)l, p);
        p += l;
        if (*p) p++;
    }
}

/* A new row, its first cells c0, c1, c2 where not NULL (NULL when out of memory). */
static Cell *tab_add(Tab *t, const char *c0, const char *c1, const char *c2) {
    if (t->nrow == t->cap) {
        const int nc = t->cap ? 2 * t->cap : 16;
        Cell(*r)[TAB_MAXC] = realloc(t->row, (size_t)nc * sizeof(*r));
        if (!r) return NULL;
        t->row = r, t->cap = nc;
    }
    memset(t->row[t->nrow], 0, sizeof(t->row[0]));
    const char *lead[3] = {c0, c1, c2};
    for (int c = 0; c < 3; c++)
        if (lead[c]) snprintf(t->row[t->nrow][c], sizeof(Cell), "%s", lead[c]);
    return t->row[t->nrow++];
}

static void tab_free(Tab *t) {
    free(t->row);
    t->row = NULL;
}

static void tab_print(FILE *f, const Tab *t, int md) {
    if (!t->nrow) return;
    if (md) {
        fprintf(f, "\n## %s\n\n|", t->title);
        for (int c = 0; c < t->ncol; c++)
            fprintf(f, " %s |", t->head[c]);
        fprintf(f, "\n|");
        for (int c = 0; c < t->ncol; c++)
            fprintf(f, "%s|", c < t->lead ? "---" : "---:");
        fprintf(f, "\n");
        for (int r = 0; r < t->nrow; r++) {
            fprintf(f, "|");
            for (int c = 0; c < t->ncol; c++)
                fprintf(f, " %s |", t->row[r][c][0] ? t->row[r][c] : "-");
            fprintf(f, "\n");
        }
        if (t->legend[0]) fprintf(f, "\n%s\n", t->legend);
        return;
    }
    int wd[TAB_MAXC];
    for (int c = 0; c < t->ncol; c++) {
        wd[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->nrow; r++) {
            const int l = t->row[r][c][0] ? (int)strlen(t->row[r][c]) : 1;
            if (l > wd[c]) wd[c] = l;
        }
    }
    fprintf(f, "\n%s\n", t->title);
    for (int c = 0; c < t->ncol; c++)
        fprintf(f, c < t->lead ? "%-*s  " : "%*s  ", wd[c], t->head[c]);
    fprintf(f, "\n");
    for (int r = 0; r < t->nrow; r++) {
        for (int c = 0; c < t->ncol; c++)
            fprintf(f, c < t->lead ? "%-*s  " : "%*s  ", wd[c],
                    t->row[r][c][0] ? t->row[r][c] : "-");
        fprintf(f, "\n");
    }
    if (t->legend[0]) fprintf(f, "%s\n", t->legend);
}

static void fms(Cell c, double ms) {
    snprintf(c, sizeof(Cell), ms >= 100 ? "%.1f" : ms >= 1 ? "%.3f" : "%.4f", ms);
}

static void fx(Cell c, double x) {
    if (!(x > 0) || !isfinite(x))
        c[0] = 0;
    else
        snprintf(c, sizeof(Cell), x >= 100 ? "%.0fx" : x >= 0.95 ? "%.2fx" : "%.2gx", x);
}

static void fpct(Cell c, double num, double den) {
    if (den > 0)
        snprintf(c, sizeof(Cell), "%.1f%%", 100.0 * num / den);
    else
        c[0] = 0;
}

static void fkb(Cell c, double bytes) {
    snprintf(c, sizeof(Cell), bytes >= 1e7 ? "%.0f" : "%.1f", bytes / 1e3);
}

static const Stat *cpu_best_simd(const Bench *b, int wl, const char **which) {
    const Stat *x = find(b, wl, "simd", "batch", KIND_ALL),
               *y = find(b, wl, "simd", "dense", KIND_ALL);
    if (x && (!y || x->ms <= y->ms)) {
        *which = "batch";
        return x;
    }
    *which = "dense";
    return y;
}

enum {
    T_WL,
    T_BYTES,
    T_FIG5,
    T_T3,
    T_T4K,
    T_T4W,
    T_FIG4,
    T_LAT,
    T_PIN,
    T_MICRO,
    T_TGT,
    T_COUNT
};

/* The cuda throughput variants, the first the original measurement. */
#define TPUT_VARIANTS 4
static const char *const tput_variant[TPUT_VARIANTS] = {
    "throughput", "throughput-frame", "throughput-pinned", "throughput-pinned-batch"};

/* The fastest cuda throughput row of workload w (*which: its variant). */
static const Stat *best_tput(const Bench *b, int w, const char **which) {
    const Stat *best = NULL;
    for (int i = 0; i < TPUT_VARIANTS; i++) {
        const Stat *s = find(b, w, gpu_label(b), tput_variant[i], KIND_ALL);
        if (s && s->ms > 0 && (!best || s->ms < best->ms)) best = s, *which = tput_variant[i];
    }
    return best;
}

/* The all-core CPU path of workload w: the faster of the threads backend's batch and dense. */
static const Stat *cpu_best_threads(const Bench *b, int w) {
    const Stat *th = find(b, w, "threads", "batch", KIND_ALL),
               *thd = find(b, w, "threads", "dense", KIND_ALL);
    return !th || (thd && thd->ms < th->ms) ? thd : th;
}

/* HBM floor of a device-timed row: (H2D + D2H bytes) / the device-memory ceiling, ms. */
static double hbm_floor_ms(const Bench *b, const Stat *s) {
    return b->hbm_gbs > 0 ? (s->h2d_bytes + s->d2h_bytes) / (b->hbm_gbs * 1e9) * 1e3 : 0;
}

static void build_tables(Bench *b, Tab *t) {
    const char *g = gpu_label(b);
    const int kctx = b->ngpu_ctx ? b->ngpu_ctx : b->gpu_contexts;
    Cell *r;
    char legend[1400];
    /* Workloads and Fig. 2. */
    tab_init(&t[T_WL], "Workloads and non-zero block ratio (Fig. 2)",
             "size|mode|frames|MB 4x4/8x8/I16|8x8 MVs|non-zero 4x4|non-zero 8x8|non-zero all|"
             "DC groups/frame|levels/frame|PSNR-Y dB|made in s",
             2,
             "MB: share of macroblocks with the 4x4 transform, the 8x8 transform, Intra16x16. "
             "8x8 MVs: inter macroblocks predicted with four 8x8 vectors. non-zero: transform "
             "blocks with a non-zero level / all blocks of that size (luma and chroma; Fig. 2 "
             "of the paper). PSNR-Y: reconstruction vs source (workloads made by this run).");
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        if (!(r = tab_add(&t[T_WL], wi->size_name, wi->mode_name, NULL))) break;
        snprintf(r[2], sizeof(Cell), "%d", wi->nframes);
        const double mbt = s->mb_total ? (double)s->mb_total : 1;
        snprintf(r[3], sizeof(Cell), "%.0f/%.0f/%.0f%%",
                 100.0 * (s->mb_total - s->mb_8x8 - s->mb_i16) / mbt, 100.0 * s->mb_8x8 / mbt,
                 100.0 * s->mb_i16 / mbt);
        if (s->mb_split >= 0 && s->mb_intra < s->mb_total)
            fpct(r[4], (double)s->mb_split, (double)(s->mb_total - s->mb_intra));
        fpct(r[5], (double)s->blocks[0], (double)s->blocks_total[0]);
        fpct(r[6], (double)s->blocks[1], (double)s->blocks_total[1]);
        fpct(r[7], (double)(s->blocks[0] + s->blocks[1]),
             (double)(s->blocks_total[0] + s->blocks_total[1]));
        snprintf(r[8], sizeof(Cell), "%.0f", (double)s->dc_groups / wi->nframes);
        snprintf(r[9], sizeof(Cell), "%.0f", (double)s->nonzero / wi->nframes);
        if (s->psnr_y > 0) snprintf(r[10], sizeof(Cell), "%.2f", s->psnr_y);
        snprintf(r[11], sizeof(Cell), "%.2f", s->prep_s);
    }
    /* Bytes. */
    snprintf(legend, sizeof(legend),
             "dense / compacted / sparse: vidk_h264_bytes() per frame (the levels and side "
             "information each representation moves to the device). %s up+down: bytes that "
             "crossed PCIe per frame, measured (H2D + D2H of the timing API) for the dense "
             "baseline, the compacted kernel (int16 residuals back), the sparse upload and "
             "the fused path (prediction up, 8-bit samples back).",
             g);
    tab_init(&t[T_BYTES], "Bytes per frame (KB)",
             "size|mode|dense|compacted|sparse|dense/sparse|up+down dense|up+down compact|"
             "up+down sparse|up+down fused",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        if (!(r = tab_add(&t[T_BYTES], wi->size_name, wi->mode_name, NULL))) break;
        fkb(r[2], (double)s->bytes_dense / wi->nframes);
        fkb(r[3], (double)s->bytes_compacted / wi->nframes);
        fkb(r[4], (double)s->bytes_sparse / wi->nframes);
        fx(r[5], s->bytes_sparse ? (double)s->bytes_dense / (double)s->bytes_sparse : 0);
        static const char *const v[4] = {"dense", "compact", "sparse", "fused"};
        for (int i = 0; i < 4; i++) {
            const Stat *x = find(b, w, g, v[i], KIND_ALL);
            if (x && x->has_dev) fkb(r[6 + i], x->h2d_bytes + x->d2h_bytes);
        }
    }
    /* Fig. 5: complete IDCT. */
    snprintf(legend, sizeof(legend),
             "ms per frame, median of the passes after warm-up (host clock, one call per "
             "frame; the prediction is in the picture before the call). c/simd/threads: "
             "vidk_h264_batch_inverse on the compacted batch; \"simd dense\": "
             "vidk_h264_frame_inverse (dense frame, zero blocks skipped by a SIMD test). "
             "%s no-ovl / ovl: the complete IDCT (host packing + H2D + kernel + D2H + "
             "write-back into the picture, pinned), one chunk per size class on one stream "
             "vs the library's settings (chunks pipelined over the streams). tput: %d host "
             "threads with a cuda context each, frames back to back (ms per frame = wall / "
             "frames). x: speed-up over c (the paper's scalar code).",
             g, kctx);
    tab_init(&t[T_FIG5], "Complete IDCT per frame (Fig. 5), ms",
             "size|mode|c|simd|threads|simd dense|gpu no-ovl|gpu ovl|gpu tput|simd x|threads x|"
             "no-ovl x|ovl x|tput x",
             2, legend);
    snprintf(t[T_FIG5].head[6], sizeof(Cell), "%s no-ovl", g);
    snprintf(t[T_FIG5].head[7], sizeof(Cell), "%s ovl", g);
    snprintf(t[T_FIG5].head[8], sizeof(Cell), "%s tput", g);
    for (int w = 0; w < b->nwl; w++) {
        if (!(r = tab_add(&t[T_FIG5], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        const Stat *s[8] = {
            find(b, w, "c", "batch", KIND_ALL),       find(b, w, "simd", "batch", KIND_ALL),
            find(b, w, "threads", "batch", KIND_ALL), find(b, w, "simd", "dense", KIND_ALL),
            find(b, w, g, "no-overlap", KIND_ALL),    find(b, w, g, "default", KIND_ALL),
            find(b, w, g, "throughput", KIND_ALL)};
        for (int i = 0; i < 7; i++)
            if (s[i]) fms(r[2 + i], s[i]->ms);
        const int sp[5] = {1, 2, 4, 5, 6};
        for (int i = 0; i < 5; i++)
            if (s[0] && s[sp[i]]) fx(r[9 + i], s[0]->ms / s[sp[i]]->ms);
    }
    /* Table 3. */
    snprintf(legend, sizeof(legend),
             "Device times per frame from CUDA events (vidk_cuda_last_timing), medians. "
             "Baseline: the dense coefficient frame up, one thread per 4x4/8x8 block of the "
             "frame, int16 residual planes down (step \"dense\"). Compacted: the zero blocks "
             "squeezed out, lists separated by size, one thread per block, int16 residuals "
             "of the coded blocks down (step \"compact\"). x: baseline / compacted. HBM%%: "
             "(H2D + D2H bytes, what the kernel reads and writes in device memory) / kernel "
             "time, against the device-memory ceiling (%.0f GB/s; 0 = unknown GPU, see "
             "--hbm-gbs).",
             b->hbm_gbs);
    tab_init(&t[T_T3], "Table 3: dense baseline vs compacted (ms per frame)",
             "size|mode|base kernel|base H2D|base D2H|comp kernel|comp H2D|comp D2H|kernel x|"
             "H2D x|D2H x|base HBM%|comp HBM%",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *d = find(b, w, g, "dense", KIND_ALL),
                   *c = find(b, w, g, "compact", KIND_ALL);
        if (!(d && d->has_dev) && !(c && c->has_dev)) continue;
        if (!(r = tab_add(&t[T_T3], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        if (d && d->has_dev)
            fms(r[2], d->kernel_ms), fms(r[3], d->h2d_ms), fms(r[4], d->d2h_ms);
        if (c && c->has_dev)
            fms(r[5], c->kernel_ms), fms(r[6], c->h2d_ms), fms(r[7], c->d2h_ms);
        if (d && c && d->has_dev && c->has_dev) {
            fx(r[8], c->kernel_ms > 0 ? d->kernel_ms / c->kernel_ms : 0);
            fx(r[9], c->h2d_ms > 0 ? d->h2d_ms / c->h2d_ms : 0);
            fx(r[10], c->d2h_ms > 0 ? d->d2h_ms / c->d2h_ms : 0);
        }
        const Stat *hs[2] = {d, c};
        for (int i = 0; i < 2; i++)
            if (hs[i] && hs[i]->has_dev && hs[i]->kernel_ms > 0 && b->hbm_gbs > 0)
                fpct(r[11 + i], (hs[i]->h2d_bytes + hs[i]->d2h_bytes) / hs[i]->kernel_ms / 1e6,
                     b->hbm_gbs);
    }
    /* Table 4: kernel time per step, per size class. */
    tab_init(&t[T_T4K],
             "Table 4: GPU optimisations in turn, kernel ms per frame (x = speed-up over the "
             "previous step)",
             "size|mode|class|compact|line|larger|coalesced|sparse|fused|pipeline|graphs|host|"
             "planes|coalesced/compact|fused/compact",
             3,
             "Kernel stage of CUDA events per frame, medians. Steps (src/cuda/h264_cuda.h): "
             "compact = compacted lists, one thread per block; line = one thread per block "
             "row, warp-synchronous transpose (the paper's sync removal); larger = 256-thread "
             "blocks, 2 rounds per thread (work-group size + granularity); coalesced = "
             "write-back through padded shared memory; sparse = mask + offset + non-zero "
             "levels up; fused = prediction up, 8-bit samples down; pipeline = chunks over "
             "the streams; graphs = one CUDA graph per call; host = host staging over a "
             "thread pool, levels dense or sparse per chunk; planes = prediction up and "
             "reconstruction down as whole planes. Kernel times compare up to "
             "\"fused\": with the pipeline the kernel stage spans overlapping chunks (it "
             "waits for their copies), and a graph's copies and kernels all read as its "
             "kernel stage. The paper's Table 4 total is compact -> coalesced (1.51x for "
             "4x4, 1.08x for 8x8 on a GT430).");
    for (int w = 0; w < b->nwl; w++)
        for (int k = 0; k < KINDS; k++) {
            const Stat *s[STEPS];
            int any = 0;
            for (int i = 1; i < STEPS; i++) {
                s[i] = find(b, w, g, step_name[i], k);
                any |= s[i] && s[i]->has_dev;
            }
            if (!any) continue;
            if (!(r = tab_add(&t[T_T4K], b->wls[w].size_name, b->wls[w].mode_name,
                              kind_name[k])))
                break;
            for (int i = 1; i < STEPS; i++) {
                if (!s[i] || !s[i]->has_dev) continue;
                Cell x;
                fx(x, i > 1 && s[i - 1] && s[i - 1]->has_dev && s[i]->kernel_ms > 0
                          ? s[i - 1]->kernel_ms / s[i]->kernel_ms
                          : 0);
                Cell m;
                fms(m, s[i]->kernel_ms);
                snprintf(r[2 + i], sizeof(Cell), x[0] ? "%s (%s)" : "%s", m, x);
            }
            if (s[1] && s[4] && s[1]->has_dev && s[4]->has_dev && s[4]->kernel_ms > 0)
                fx(r[3 + STEPS - 1], s[1]->kernel_ms / s[4]->kernel_ms);
            if (s[1] && s[6] && s[1]->has_dev && s[6]->has_dev && s[6]->kernel_ms > 0)
                fx(r[3 + STEPS], s[1]->kernel_ms / s[6]->kernel_ms);
        }
    /* Table 4 continued: complete time per step. */
    snprintf(legend, sizeof(legend),
             "Host-clock ms per frame of the whole call (packing, copies, kernels, "
             "write-back), each step with the ones before it; x = speed-up over the previous "
             "step. \"default\" = the library's settings (what vidk_h264_batch_inverse uses).");
    tab_init(&t[T_T4W], "Table 4 (complete IDCT): ms per frame per step, whole frames",
             "size|mode|dense|compact|line|larger|coalesced|sparse|fused|pipeline|graphs|host|"
             "planes|"
             "default",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *s[STEPS + 1];
        int any = 0;
        for (int i = 0; i <= STEPS; i++) {
            s[i] = find(b, w, g, i < STEPS ? step_name[i] : "default", KIND_ALL);
            any |= s[i] != NULL;
        }
        if (!any) continue;
        if (!(r = tab_add(&t[T_T4W], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        for (int i = 0; i <= STEPS; i++) {
            if (!s[i]) continue;
            Cell x, m;
            fx(x, i > 0 && i < STEPS && s[i - 1] ? s[i - 1]->ms / s[i]->ms : 0);
            fms(m, s[i]->ms);
            snprintf(r[2 + i], sizeof(Cell), x[0] ? "%s (%s)" : "%s", m, x);
        }
    }
    /* Fig. 4: kernels per size class vs the CPU. */
    snprintf(legend, sizeof(legend),
             "ms per frame for one size class alone (the other list emptied). CPU: "
             "vidk_h264_batch_inverse (dequantise + IDCT + add, like the fused kernel). %s "
             "kernel: the kernel stage of step \"fused\" (dequantise + IDCT + add on the "
             "device, no pipelining), i.e. without transfers, as the paper's Fig. 4. x: "
             "speed-up over c.",
             g);
    tab_init(&t[T_FIG4], "Kernel speed-up over scalar code per transform size (Fig. 4)",
             "size|mode|class|c|simd|threads|gpu kernel|simd x|threads x|gpu x", 3, legend);
    snprintf(t[T_FIG4].head[6], sizeof(Cell), "%s kernel", g);
    snprintf(t[T_FIG4].head[9], sizeof(Cell), "%s x", g);
    for (int w = 0; w < b->nwl; w++)
        for (int k = KIND_4; k <= KIND_8; k++) {
            const Stat *c = find(b, w, "c", "batch", k), *s = find(b, w, "simd", "batch", k),
                       *th = find(b, w, "threads", "batch", k), *f = find(b, w, g, "fused", k);
            if (!c && !s && !th && !f) continue;
            if (!(r = tab_add(&t[T_FIG4], b->wls[w].size_name, b->wls[w].mode_name,
                              kind_name[k])))
                break;
            if (c) fms(r[3], c->ms);
            if (s) fms(r[4], s->ms);
            if (th) fms(r[5], th->ms);
            if (f && f->has_dev) fms(r[6], f->kernel_ms);
            if (c && s) fx(r[7], c->ms / s->ms);
            if (c && th) fx(r[8], c->ms / th->ms);
            if (c && f && f->has_dev && f->kernel_ms > 0) fx(r[9], c->ms / f->kernel_ms);
        }
    /* Latency vs throughput, PCIe. */
    snprintf(legend, sizeof(legend),
             "latency: one frame, one call, the library's settings (host clock, median). "
             "tput: %d contexts in %d host threads, frames back to back. device total: first "
             "to last device operation of the call. H2D / D2H KB: bytes of the call. GB/s: "
             "bytes / H2D or D2H span of step \"fused\" (same bytes, copies not overlapped "
             "with kernels nor inside a graph, so the spans time the copies alone), against "
             "the pinned PCIe ceiling of %.0f GB/s per direction.",
             kctx, kctx, b->pcie_gbs);
    tab_init(&t[T_LAT], "Single-frame latency vs pipelined throughput (cuda)",
             "size|mode|latency ms|tput ms/frame|frames/s|legacy tput|device total ms|H2D KB|"
             "D2H KB|H2D GB/s|D2H GB/s",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *d = find(b, w, g, "default", KIND_ALL),
                   *tp = find(b, w, g, "throughput", KIND_ALL);
        if (!d) continue;
        if (!(r = tab_add(&t[T_LAT], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        fms(r[2], d->ms);
        if (tp) {
            fms(r[3], tp->ms);
            snprintf(r[4], sizeof(Cell), "%.0f", 1e3 / tp->ms);
        }
        const Stat *tl = find(b, w, g, "throughput-legacy", KIND_ALL);
        if (tl) fms(r[5], tl->ms);
        if (d->has_dev) {
            fms(r[6], d->total_ms);
            fkb(r[7], d->h2d_bytes);
            fkb(r[8], d->d2h_bytes);
        }
        const Stat *fu = find(b, w, g, "fused", KIND_ALL);
        if (fu && fu->has_dev) {
            if (fu->h2d_ms > 0)
                snprintf(r[9], sizeof(Cell), "%.1f (%.0f%%)", fu->h2d_bytes / fu->h2d_ms / 1e6,
                         100 * fu->h2d_bytes / fu->h2d_ms / 1e6 / b->pcie_gbs);
            if (fu->d2h_ms > 0)
                snprintf(r[10], sizeof(Cell), "%.1f (%.0f%%)", fu->d2h_bytes / fu->d2h_ms / 1e6,
                         100 * fu->d2h_bytes / fu->d2h_ms / 1e6 / b->pcie_gbs);
        }
    }
    /* Past issue 3: registered caller memory and the fast dense kernel. */
    snprintf(legend, sizeof(legend),
             "ms per frame, host clock, medians. frame compact: vidk_cuda_h264_frame_inverse "
             "as before the fast dense kernel (dense_vec 0: compaction on the host, then the "
             "batch path); frame: with the library's settings (the fast dense kernel on the "
             "dense frame, bands pipelined over the streams, unregistered memory staged "
             "through pinned buffers); pinned: "
             "the same with the picture and the coefficient frames registered "
             "(vidk_picture_register / vidk_host_register, outside the timing: copies go "
             "straight between them and the device); pinned batch: "
             "vidk_cuda_h264_batch_inverse with the picture registered (plane mode copies "
             "it directly). tput columns: %d contexts in %d host threads as \"tput\" "
             "(frames back to back, ms per frame = wall / frames); best / simd, best / "
             "threads: the fastest tput column against the faster simd (1 core) and threads "
             "(all cores) variant. vec kernel: kernel stage (CUDA events) of the fast dense "
             "kernel as one launch (pipeline off); floor: its H2D + D2H bytes (what it reads "
             "and writes in device memory) / %.0f GB/s; x floor: kernel / floor.",
             kctx, kctx, b->hbm_gbs);
    tab_init(&t[T_PIN], "Registered (pinned) caller memory and the fast dense kernel (cuda)",
             "size|mode|frame compact ms|frame ms|pinned ms|pinned batch ms|tput|frame tput|"
             "pinned tput|pinned batch tput|best/simd|best/threads|vec kernel ms|floor ms|"
             "x floor",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *lat[4] = {
            find(b, w, g, "frame-compact", KIND_ALL), find(b, w, g, "frame-default", KIND_ALL),
            find(b, w, g, "pinned", KIND_ALL), find(b, w, g, "pinned-batch", KIND_ALL)};
        const Stat *vec = find(b, w, g, "dense-vec", KIND_ALL);
        if (!lat[0] && !lat[1] && !lat[2] && !lat[3] && !vec) continue;
        if (!(r = tab_add(&t[T_PIN], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        for (int i = 0; i < 4; i++)
            if (lat[i]) fms(r[2 + i], lat[i]->ms);
        for (int i = 0; i < TPUT_VARIANTS; i++) {
            const Stat *x = find(b, w, g, tput_variant[i], KIND_ALL);
            if (x) fms(r[6 + i], x->ms);
        }
        const char *which = "", *sw = "";
        const Stat *bt = best_tput(b, w, &which), *sm = cpu_best_simd(b, w, &sw),
                   *th = cpu_best_threads(b, w);
        if (bt && sm) fx(r[10], sm->ms / bt->ms);
        if (bt && th) fx(r[11], th->ms / bt->ms);
        if (vec && vec->has_dev) {
            fms(r[12], vec->kernel_ms);
            const double fl = hbm_floor_ms(b, vec);
            if (fl > 0) {
                fms(r[13], fl);
                snprintf(r[14], sizeof(Cell), "%.2fx", vec->kernel_ms / fl);
            }
        }
    }
    /* Micro-benchmark. */
    tab_init(&t[T_MICRO], "CPU DSP functions, ns per block (median)",
             "function|backend|ns/block|x264 (Zen 3)|ratio", 2,
             "One call per block over 2048 real blocks of the first workload (flat scaling, "
             "their QPs) added into a 64x64 area (cache resident), as checkasm times "
             "x264's add4x4_idct / add8x8_idct8. idct_add takes int32 dequantised input, "
             "idct_add16 int16 (x264's interface); both prove the 16-bit shortcut per "
             "block. x264's figures are for a Zen 3 core, not this CPU: the ratio is "
             "indicative only.");
    for (int i = 0; i < b->nmicro; i++) {
        const Micro *m = &b->micro[i];
        if (!(r = tab_add(&t[T_MICRO], m->fn, m->backend, NULL))) break;
        snprintf(r[2], sizeof(Cell), "%.2f", m->ns);
        const double ref =
            !strcmp(m->fn, "idct_add_4x4") || !strcmp(m->fn, "idct_add16_4x4")   ? X264_ADD4_NS
            : !strcmp(m->fn, "idct_add_8x8") || !strcmp(m->fn, "idct_add16_8x8") ? X264_ADD8_NS
                                                                                 : 0;
        if (ref > 0) {
            snprintf(r[3], sizeof(Cell), "%.1f", ref);
            snprintf(r[4], sizeof(Cell), "%.2f", m->ns / ref);
        }
    }
    /* Targets. */
    tab_init(&t[T_TGT], "Targets of issue 3", "target|workload|measured|met", 2,
             "met: yes / no; \"-\" = not measured in this run (backend not run or skipped).");
    for (int i = 0; i < b->ntargets; i++) {
        const Target *x = &b->targets[i];
        if (!(r = tab_add(&t[T_TGT], x->what, x->where, x->value))) break;
        snprintf(r[3], sizeof(Cell), "%s", x->met < 0 ? "-" : x->met ? "yes" : "no");
    }
}

static Target *add_target(Bench *b, const char *what, const char *where) {
    if (b->ntargets >= MAX_TARGETS) return NULL;
    Target *t = &b->targets[b->ntargets++];
    memset(t, 0, sizeof(*t));
    snprintf(t->what, sizeof(t->what), "%s", what);
    snprintf(t->where, sizeof(t->where), "%.63s", where);
    snprintf(t->value, sizeof(t->value), "not measured");
    t->met = -1;
    return t;
}

static void eval_targets(Bench *b) {
    const char *g = gpu_label(b);
    const int emu = b->cuda_emu;
    /* The gpu throughput against the best CPU paths; then the same with the best cuda
     * throughput variant (frame inverse, registered memory; see the "Registered (pinned)"
     * table). */
    for (int best = 0; best < 2; best++)
        for (int w = 0; w < b->nwl; w++) {
            char where[80];
            snprintf(where, sizeof(where), "%s %s", b->wls[w].size_name, b->wls[w].mode_name);
            Target *t = add_target(b,
                                   best ? "best gpu tput >= 5x simd (1 thread) and > threads"
                                        : "gpu tput >= 5x simd (1 thread) and > threads",
                                   where);
            if (!t) return;
            const char *sw = "", *tw = "";
            /* The all-core path: the faster of its batch and dense variants. */
            const Stat *s = cpu_best_simd(b, w, &sw), *th = cpu_best_threads(b, w),
                       *tp =
                           best ? best_tput(b, w, &tw) : find(b, w, g, "throughput", KIND_ALL);
            if (!best && !tp) tp = find(b, w, g, "default", KIND_ALL);
            if (emu) {
                snprintf(t->value, sizeof(t->value), "n/a (emulation)");
            } else if (s && th && tp) {
                const double x = s->ms / tp->ms, y = th->ms / tp->ms;
                if (best)
                    snprintf(t->value, sizeof(t->value), "%s: %.2fx simd, %.2fx threads", tw, x,
                             y);
                else
                    snprintf(t->value, sizeof(t->value), "%.2fx simd %s, %.2fx threads", x, sw,
                             y);
                t->met = x >= 5 && y > 1;
            }
        }
    /* The fast dense kernel, then the dense baseline, against the HBM floor. */
    for (int v = 0; v < 2; v++)
        for (int w = 0; w < b->nwl; w++) {
            if (strcmp(b->wls[w].size_name, "1080p") || strcmp(b->wls[w].mode_name, "intra"))
                continue;
            Target *t = add_target(b,
                                   v ? "dense kernel <= 2x HBM floor"
                                     : "fast dense kernel (dense_vec) <= 2x HBM floor",
                                   "1080p intra");
            if (!t) return;
            const Stat *d = find(b, w, g, v ? "dense" : "dense-vec", KIND_ALL);
            if (emu) {
                snprintf(t->value, sizeof(t->value), "n/a (emulation)");
            } else if (d && d->has_dev && b->hbm_gbs > 0) {
                const double floor_ms = hbm_floor_ms(b, d);
                snprintf(t->value, sizeof(t->value), "%.4f ms = %.2fx floor %.4f ms",
                         d->kernel_ms, d->kernel_ms / floor_ms, floor_ms);
                t->met = d->kernel_ms <= 2 * floor_ms;
            } else if (d && d->has_dev) {
                snprintf(t->value, sizeof(t->value), "no HBM ceiling for this GPU (--hbm-gbs)");
            }
        }
    /* Per size, the faster simd interface: idct_add (int32 input) or idct_add16 (int16,
     * x264's). */
    for (int is8 = 0; is8 < 2; is8++) {
        const Micro *best = NULL;
        for (int i = 0; i < b->nmicro; i++) {
            const Micro *m = &b->micro[i];
            if (strcmp(m->backend, "simd")) continue;
            if (strcmp(m->fn, is8 ? "idct_add_8x8" : "idct_add_4x4") &&
                strcmp(m->fn, is8 ? "idct_add16_8x8" : "idct_add16_4x4"))
                continue;
            if (!best || m->ns < best->ns) best = m;
        }
        if (!best) continue;
        Target *t = add_target(b,
                               is8 ? "simd add8x8_idct8 vs x264 ~14 ns (Zen 3): <= 1.5x"
                                   : "simd add4x4_idct vs x264 ~3.6 ns (Zen 3): <= 1.5x",
                               "per block");
        if (!t) return;
        const double ref = is8 ? X264_ADD8_NS : X264_ADD4_NS;
        snprintf(t->value, sizeof(t->value), "%s %.2f ns = %.2fx (other CPU)", best->fn,
                 best->ns, best->ns / ref);
        t->met = best->ns <= 1.5 * ref; /* the issue: within 1.5x of x264 */
    }
}

/* ---- files ---------------------------------------------------------------------------------
 */

static void csv_str(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* One CSV line: section,size,mode,backend,variant,class,value, then the 9 columns of a
 * measurement (empty without one), then a note. */
static void csv_line(FILE *f, const char *section, const WlInfo *wi, const char *backend,
                     const char *variant, const char *cls, const char *value, const Stat *s,
                     const char *nt) {
    const char *const fields[6] = {
        section, wi ? wi->size_name : "", wi ? wi->mode_name : "", backend, variant, cls};
    for (int i = 0; i < 6; i++) {
        csv_str(f, fields[i]);
        fputc(',', f);
    }
    fprintf(f, "%s,", value);
    if (s && s->done) {
        fprintf(f, "%.6g,", s->ms);
        if (s->has_dev)
            fprintf(f, "%.6g,%.6g,%.6g,%.6g,%.0f,%.0f,", s->kernel_ms, s->h2d_ms, s->d2h_ms,
                    s->total_ms, s->h2d_bytes, s->d2h_bytes);
        else
            fprintf(f, ",,,,,,");
        fprintf(f, "%d,%d,", s->runs, s->mismatch);
    } else {
        fprintf(f, ",,,,,,,,%s,", s && s->mismatch ? "1" : "");
    }
    csv_str(f, nt ? nt : s && !s->done ? s->err : "");
    fputc('\n', f);
}

static void write_csv(FILE *f, const Bench *b) {
    fprintf(f, "section,size,mode,backend,variant,class,value,ms,kernel_ms,h2d_ms,d2h_ms,"
               "total_ms,h2d_bytes,d2h_bytes,runs,mismatch,note\n");
    char v[64];
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        for (int k = 0; k < KINDS; k++) {
            const double nz = k == KIND_ALL ? (double)(s->blocks[0] + s->blocks[1])
                                            : (double)s->blocks[k - 1];
            const double tot = k == KIND_ALL ? (double)(s->blocks_total[0] + s->blocks_total[1])
                                             : (double)s->blocks_total[k - 1];
            snprintf(v, sizeof(v), "%.6g", tot > 0 ? nz / tot : 0);
            csv_line(f, "workload", wi, "", "nonzero_ratio", kind_name[k], v, NULL, NULL);
        }
        const size_t by[3] = {s->bytes_dense, s->bytes_compacted, s->bytes_sparse};
        static const char *const bn[3] = {"bytes_dense", "bytes_compacted", "bytes_sparse"};
        for (int i = 0; i < 3; i++) {
            snprintf(v, sizeof(v), "%.0f", (double)by[i] / wi->nframes);
            csv_line(f, "workload", wi, "", bn[i], "all", v, NULL, NULL);
        }
        snprintf(v, sizeof(v), "%d", wi->nframes);
        csv_line(f, "workload", wi, "", "frames", "all", v, NULL, wi->source);
        snprintf(v, sizeof(v), "%.4g", s->psnr_y);
        csv_line(f, "workload", wi, "", "psnr_y", "all", v, NULL, NULL);
    }
    for (int i = 0; i < b->nrows; i++) {
        const Row *r = &b->rows[i];
        csv_line(f, "time", &b->wls[r->wl], r->backend, r->variant, kind_name[r->kind], "",
                 &r->st, NULL);
    }
    for (int i = 0; i < b->nmicro; i++) {
        snprintf(v, sizeof(v), "%.4g", b->micro[i].ns);
        csv_line(f, "micro", NULL, b->micro[i].backend, b->micro[i].fn, "", v, NULL,
                 "ns per block");
    }
    for (int i = 0; i < b->ntargets; i++) {
        const Target *t = &b->targets[i];
        char nt[200];
        snprintf(nt, sizeof(nt), "%s: %s",
                 t->met < 0 ? "not measured"
                 : t->met   ? "met"
                            : "missed",
                 t->value);
        csv_line(f, "target", NULL, "", t->what, t->where, "", NULL, nt);
    }
}

static void json_stat(FILE *f, const Stat *s) {
    fprintf(f, "\"done\": %s", s->done ? "true" : "false");
    if (s->done) {
        fprintf(f, ", \"ms_per_frame\": %.6g, \"runs\": %d, \"mismatch\": %s", s->ms, s->runs,
                s->mismatch ? "true" : "false");
        if (s->has_dev)
            fprintf(f,
                    ", \"kernel_ms\": %.6g, \"h2d_ms\": %.6g, \"d2h_ms\": %.6g, \"total_ms\": "
                    "%.6g, \"h2d_bytes\": %.0f, \"d2h_bytes\": %.0f",
                    s->kernel_ms, s->h2d_ms, s->d2h_ms, s->total_ms, s->h2d_bytes,
                    s->d2h_bytes);
    } else {
        fprintf(f, ", \"error\": %s", bench_jq(s->err));
    }
}

static void write_json(FILE *f, const Bench *b) {
    fprintf(f,
            "{\n  \"tool\": \"vidkern-bench h264\",\n  \"version\": %s,\n  \"command\": %s,\n  "
            "\"date\": %s,\n  \"commit\": %s,\n  \"device\": {\"cpu\": %s, \"cores\": %d, "
            "\"threads\": %d, \"gpu\": %s",
            bench_jq(vidk_version()), bench_jq(b->mt.command), bench_jq(b->mt.date),
            bench_jq(VIDK_GIT_COMMIT), bench_jq(b->mt.cpu), b->mt.cores,
            b->gen_ctx ? vidk_get_threads(b->gen_ctx) : 0, bench_jq(b->mt.gpu));
    fprintf(f,
            ", \"hbm_gbs\": %.6g, \"pcie_gbs\": %.6g, \"gpu_contexts\": %d},\n  \"notes\": [",
            b->hbm_gbs, b->pcie_gbs, b->ngpu_ctx);
    bench_notes_json(f, &b->notes);
    fprintf(f, "],\n  \"workloads\": [");
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        fprintf(f,
                "%s\n    {\"size\": %s, \"mode\": %s, \"width\": %d, \"height\": %d, "
                "\"frames\": %d, \"source\": %s",
                w ? "," : "", bench_jq(wi->size_name), bench_jq(wi->mode_name), wi->w, wi->h,
                wi->nframes, bench_jq(wi->source));
        fprintf(
            f,
            ",\n     \"blocks\": {\"4x4\": [%zu, %zu], \"8x8\": [%zu, %zu]}, \"dc_groups\": "
            "%zu, \"nonzero_levels\": %zu,\n     \"bytes_per_frame\": {\"dense\": %.0f, "
            "\"compacted\": %.0f, \"sparse\": %.0f},\n     \"macroblocks\": {\"total\": "
            "%zu, \"intra\": %zu, \"i16x16\": %zu, \"t8x8\": %zu, \"mv8x8\": %ld}, "
            "\"psnr_y\": %.4g, \"prep_s\": %.3g,\n     \"results\": [",
            s->blocks[0], s->blocks_total[0], s->blocks[1], s->blocks_total[1], s->dc_groups,
            s->nonzero, (double)s->bytes_dense / wi->nframes,
            (double)s->bytes_compacted / wi->nframes, (double)s->bytes_sparse / wi->nframes,
            s->mb_total, s->mb_intra, s->mb_i16, s->mb_8x8, s->mb_split, s->psnr_y, s->prep_s);
        int first = 1;
        for (int i = 0; i < b->nrows; i++) {
            const Row *r = &b->rows[i];
            if (r->wl != w) continue;
            fprintf(f, "%s\n       {\"backend\": %s, \"variant\": %s, \"class\": \"%s\", ",
                    first ? "" : ",", bench_jq(r->backend), bench_jq(r->variant),
                    kind_name[r->kind]);
            json_stat(f, &r->st);
            fprintf(f, "}");
            first = 0;
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n  ],\n  \"microbench\": [");
    for (int i = 0; i < b->nmicro; i++) {
        fprintf(f, "%s{\"backend\": \"%s\", \"function\": \"%s\", \"ns_per_block\": %.4g}",
                i ? ", " : "", b->micro[i].backend, b->micro[i].fn, b->micro[i].ns);
    }
    fprintf(f, "],\n  \"targets\": [");
    for (int i = 0; i < b->ntargets; i++) {
        const Target *t = &b->targets[i];
        fprintf(f, "%s\n    {\"target\": %s, \"workload\": %s, \"measured\": %s, \"met\": %s}",
                i ? "," : "", bench_jq(t->what), bench_jq(t->where), bench_jq(t->value),
                t->met < 0 ? "null"
                : t->met   ? "true"
                           : "false");
    }
    fprintf(f, "\n  ],\n  \"mismatches\": %d,\n  \"failures\": %d\n}\n", b->mismatches,
            b->failures);
}

static void write_header(FILE *f, const Bench *b, int md) {
    char thr[48];
    snprintf(thr, sizeof(thr), " (threads backend: %d)",
             b->gen_ctx ? vidk_get_threads(b->gen_ctx) : 0);
    bench_print_header(f, &b->mt, "h264", "h264 (Wang et al. 2013 on this machine)", thr, md);
    if (b->hbm_gbs > 0)
        fprintf(f, "%seilings: PCIe %.0f GB/s pinned per direction, device memory %.0f GB/s\n",
                md ? "- C" : "c", b->pcie_gbs, b->hbm_gbs);
    bench_notes_print(f, &b->notes, md ? "- Note: " : "note: ");
}

typedef struct Report {
    const Bench *b;
    const Tab *t;
} Report;

static void write_report(FILE *f, int what, void *arg) {
    const Report *r = arg;
    if (what == BENCH_CSV) {
        write_csv(f, r->b);
    } else if (what == BENCH_JSON) {
        write_json(f, r->b);
    } else {
        write_header(f, r->b, 1);
        for (int i = 0; i < T_COUNT; i++)
            tab_print(f, &r->t[i], 1);
    }
}

/* ---- options
 * --------------------------------------------------------------------------------- */

int vidk_bench_h264(int argc, char **argv) {
    Bench *b = calloc(1, sizeof(*b));
    if (!b) return cli_error(CMD, "out of memory");
    CliCommon c; /* set by bench_parse_args */
    const char *sizes = "1080p,2160p", *modes = "intra,qp22,qp37", *save = NULL, *load = NULL;
    BenchOpts o = {.source = "real", .frames = 8, .runs = 9, .max_seconds = 0.5};
    o.frames_lo = 1, o.frames_hi = 64, o.runs_hi = MAX_RUNS;
    long gctx = 3;
    double hbm = 0, pcie = PCIE_GBS_DEFAULT;
    int ret = 1;
    Mosaic *mosaic = NULL;
    Tab tabs[T_COUNT];
    memset(tabs, 0, sizeof(tabs));
    bench_notes_init(&b->notes, MAX_NOTES, 320);
    const BenchArg args[] = {{"--cuda-emu", .flag = &b->cuda_emu},
                             {"--sizes", .str = &sizes, .given = &b->sizes_given},
                             {"--modes", .str = &modes, .given = &b->modes_given},
                             {"--save", .str = &save},
                             {"--load", .str = &load},
                             {"--gpu-contexts", .num = &gctx, .lo = 1, .hi = MAX_GPU_CTX},
                             {"--hbm-gbs", .dbl = &hbm, .lo = 1, .hi = 1e6},
                             {"--pcie-gbs", .dbl = &pcie, .lo = 0.1, .hi = 1e4},
                             {NULL}};
    const int pr = bench_parse_args(&o, &c, CMD, argc, argv, args, help);
    if (pr) { /* --help shown (exit 0), or an error */
        ret = pr < 0;
        goto done;
    }
    b->frames = (int)o.frames, b->runs = (int)o.runs, b->max_seconds = o.max_seconds;
    b->quiet = c.quiet, b->device = c.device, b->hbm_gbs = hbm, b->pcie_gbs = pcie;
    b->gpu_contexts = (int)gctx;
    if (bench_choice(CMD, "--source", o.source, "real|gen") < 0) goto done;
    if (save && load && !strcmp(save, load)) {
        cli_error(CMD, "--save and --load name the same folder");
        goto done;
    }
    char list[MAX_SIZES][24];
    int n;
    if ((n = bench_split_list(CMD, "--sizes", sizes, b->size_name[0], sizeof(b->size_name[0]),
                              MAX_SIZES)) < 0)
        goto done;
    b->nsizes = n;
    for (int i = 0; i < n; i++)
        if (size_of(b->size_name[i], &b->size_w[i], &b->size_h[i]) < 0) {
            cli_error(
                CMD,
                "--sizes: '%s' is not 1080p, 2160p, 720p, cif or WxH (16..8192 x 16..4352)",
                b->size_name[i]);
            goto done;
        }
    if ((n = bench_split_list(CMD, "--modes", modes, list[0], sizeof(list[0]),
                              H264W_MODE_COUNT)) < 0)
        goto done;
    for (int i = 0; i < n; i++) {
        const int m = h264w_mode_from_name(list[i]);
        if (m < 0) {
            cli_error(CMD, "--modes: unknown mode '%s' (intra, qp22, qp37)", list[i]);
            goto done;
        }
        if (!has_mode(b, m)) b->modes[b->nmodes++] = m;
    }
    if (bench_parse_backends(CMD, o.backends, b->backends, &b->nbackends) < 0) goto done;
    if (save && bench_make_dir(save) < 0) {
        cli_error(CMD, "--save: cannot create the folder %s", save);
        goto done;
    }
#if !VIDK_HAVE_CUDA
    if (b->cuda_emu) {
        cli_error(CMD, "--cuda-emu: this build has no CUDA backend");
        goto done;
    }
#endif
    /* Contexts. The reference (c) and the workload maker (fastest CPU) always exist. */
    b->t_start = cli_now();
    b->fault = getenv("VIDK_BENCH_H264_FAULT");
    {
        CliCommon cc = c;
        cc.quiet = 1;
        cc.backend = VIDK_BACKEND_C;
        if (!(b->ref_ctx = cli_open(&cc, CMD))) goto done;
        for (int k = 0; k < b->nbackends; k++) {
            const VidkBackend be = b->backends[k];
            cc.backend = be;
            if (vidk_backend_available(be)) b->ctx[be] = cli_open(&cc, CMD);
            if (!b->ctx[be]) {
                if (be == VIDK_BACKEND_CUDA && b->cuda_emu) {
                    /* the emulation stands in for it */
                } else {
                    note(b, "backend %s skipped: not usable on this machine/build",
                         vidk_backend_name(be));
                }
                memmove(&b->backends[k], &b->backends[k + 1],
                        sizeof(b->backends[0]) * (size_t)(b->nbackends - k - 1));
                b->nbackends--;
                k--;
            }
        }
        if (b->ctx[VIDK_BACKEND_CUDA] && b->cuda_emu) {
            note(b, "%s", "--cuda-emu ignored: a CUDA device is present");
            b->cuda_emu = 0;
        }
        b->gen_ctx = b->ctx[VIDK_BACKEND_THREADS];
        if (!b->gen_ctx) {
            cc.backend = VIDK_BACKEND_THREADS;
            b->gen_ctx = b->gen_own = cli_open(&cc, CMD);
        }
        if (!b->gen_ctx) goto done;
        if (b->ctx[VIDK_BACKEND_CUDA]) {
            b->gpu_ctx[0] = b->ctx[VIDK_BACKEND_CUDA];
            b->ngpu_ctx = 1;
            for (int k = 1; k < gctx; k++) {
                cc.backend = VIDK_BACKEND_CUDA;
                if (!(b->gpu_ctx[k] = cli_open(&cc, CMD))) break;
                b->ngpu_ctx++;
            }
        }
    }
    if (!b->nbackends && !b->cuda_emu) {
        cli_error(CMD, "no usable backend");
        goto done;
    }
    meta_fill(b, argc, argv);
    bench_say_start(CMD, &b->mt, b->quiet);
    int e;
    if (load) {
        e = run_loaded(b, load, save);
    } else {
        const char *dir = o.video ? o.video : mosaic_default_video_dir();
        if (!strcmp(o.source, "real")) {
            char err[256];
            if (!dir || mosaic_open(&mosaic, dir, 2, err, sizeof(err)) < 0) {
                mosaic = NULL;
                note(b, "no real clips found (%s): generated video instead",
                     dir ? dir : "no folder; set --video DIR or VIDK_VIDEO_DIR");
            } else {
                note(b, "real video: %s", mosaic_describe(mosaic));
            }
        }
        e = run_made(b, mosaic, save);
    }
    if (e < 0 && !b->nwl) goto done;
    eval_targets(b);
    build_tables(b, tabs);
    write_header(stdout, b, 0);
    for (int i = 0; i < T_COUNT; i++)
        tab_print(stdout, &tabs[i], 0);
    ret = e < 0;
    Report rep = {b, tabs};
    if (bench_write_outputs(CMD, o.csv, o.json, o.md, write_report, &rep) < 0) ret = 1;
    if (bench_verdict(CMD, b->mismatches,
                      "configuration(s) gave reconstructions that differ from the c backend",
                      b->failures))
        ret = 1;
done:
    for (int i = 0; i < T_COUNT; i++)
        tab_free(&tabs[i]);
    mosaic_close(&mosaic);
    for (int k = 1; k < b->ngpu_ctx; k++)
        vidk_close(&b->gpu_ctx[k]);
    for (int i = 0; i < VIDK_BACKEND_COUNT; i++)
        vidk_close(&b->ctx[i]);
    vidk_close(&b->ref_ctx);
    vidk_close(&b->gen_own);
    free(b->rows);
    free(b->wls);
    free(b);
    return ret;
}
