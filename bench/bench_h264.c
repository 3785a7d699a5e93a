/* `vidkern-bench h264`: the H.264 inverse-transform benchmark of Wang et al. 2013 ("An
 * Optimized Parallel IDCT on Graphics Processing Units") on today's hardware: real-video
 * coefficient workloads in the paper's three modes (bench/h264_workload.h), the non-zero
 * block ratios of its Fig. 2, its Table 3 (dense baseline vs compacted: kernel, H2D, D2H),
 * Table 4 (each GPU optimisation switched on in turn), Fig. 4 (kernel vs scalar, SIMD,
 * all cores) and Fig. 5 (complete IDCT with and without overlap), plus bytes over PCIe,
 * pipelined throughput next to single-frame latency, and the targets of issue 3.
 * Every backend's reconstruction is compared with the c backend's (exit 1 on a mismatch).
 * See docs/BENCH_H264.md for what every table means. The results, their tables and
 * files: bench_h264_report.c; the types both files use: bench_h264.h. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_h264.h"
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

#define MAX_NOTES  16
#define MAX_RUNS   255
#define TPUT_CALLS 16 /* frames per round of the pipelined-throughput measurement */

enum { PATH_API = 0, PATH_CUDA = 1, PATH_EMU = 2 };

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

/* ---- one workload being measured ------------------------------------------------------ */

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

static void run_job(Bench *b, Live *lv, const Job *j, const char *backend,
                    const char *variant) {
    Row *r = bh264_add_row(b, lv->wl, backend, variant, j->kind);
    if (!r) return;
    measure(b, lv, j, backend, &r->st);
    bh264_report(b, lv, r);
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
    Row *r = bh264_add_row(b, lv->wl, bh264_gpu_label(b), variant, KIND_ALL);
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
    bh264_report(b, lv, r);
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
    const char *label = bh264_gpu_label(b);
    Job j;
    for (int s = 0; s < STEPS; s++)
        if (strcmp(vidk_cuda_h264_step_name(s), step_name[s]) && !b->steps_noted++)
            bh264_note(b,
                       "step names differ from src/cuda/h264_cuda.h (%s): update bench_h264.c",
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
        bh264_report(b, lv, &tmp);
    }
    if (!b->cuda_emu) {
        /* The public entry point, once wired by the CUDA backend, must give the same bits. */
        bench_copy_pic(&lv->work, &lv->w->pred[0]);
        const int e = vidk_h264_batch_inverse(ctx, &lv->w->batch[0], &lv->work);
        if (e == VIDK_ERR(ENOSYS)) {
            if (!b->api_noted++)
                bh264_note(
                    b, "%s",
                    "vidk_h264_batch_inverse on a cuda context returns ENOSYS (not wired "
                    "yet): the cuda rows call src/cuda/h264_cuda.h directly");
        } else if (e < 0 ||
                   enc_hash_picture(ENC_HASH_INIT, &lv->work) != lv->ref[KIND_ALL][0]) {
            Row *r = bh264_add_row(b, lv->wl, label, "public-api", KIND_ALL);
            if (r) {
                r->st.done = e >= 0, r->st.runs = 1, r->st.mismatch = e >= 0;
                if (e < 0) snprintf(r->st.err, sizeof(r->st.err), "%s", vidk_strerror(e));
                bh264_report(b, lv, r);
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
                    bh264_note(b, "backend %s skipped: not usable on this machine/build",
                               vidk_backend_name(be));
                }
                memmove(&b->backends[k], &b->backends[k + 1],
                        sizeof(b->backends[0]) * (size_t)(b->nbackends - k - 1));
                b->nbackends--;
                k--;
            }
        }
        if (b->ctx[VIDK_BACKEND_CUDA] && b->cuda_emu) {
            bh264_note(b, "%s", "--cuda-emu ignored: a CUDA device is present");
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
    bh264_meta_fill(b, argc, argv);
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
                bh264_note(b, "no real clips found (%s): generated video instead",
                           dir ? dir : "no folder; set --video DIR or VIDK_VIDEO_DIR");
            } else {
                bh264_note(b, "real video: %s", mosaic_describe(mosaic));
            }
        }
        e = run_made(b, mosaic, save);
    }
    if (e < 0 && !b->nwl) goto done;
    bh264_eval_targets(b);
    bh264_build_tables(b, tabs);
    bh264_write_header(stdout, b, 0);
    for (int i = 0; i < T_COUNT; i++)
        bh264_tab_print(stdout, &tabs[i], 0);
    ret = e < 0;
    Report rep = {b, tabs};
    if (bench_write_outputs(CMD, o.csv, o.json, o.md, bh264_write_report, &rep) < 0) ret = 1;
    if (bench_verdict(CMD, b->mismatches,
                      "configuration(s) gave reconstructions that differ from the c backend",
                      b->failures))
        ret = 1;
done:
    for (int i = 0; i < T_COUNT; i++)
        bh264_tab_free(&tabs[i]);
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
