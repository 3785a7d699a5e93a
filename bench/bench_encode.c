/* `vidkern-bench encode`: the coding loop (include/vidkern/encode.h) at 1080p and 2160p,
 * on real video (mosaics of the shared clips) and the generated video, for both codecs,
 * several search ranges and every backend: frames per second, time per stage, PCIe bytes,
 * quality and estimated bits, and a check that every backend gave the same bits.
 * See docs/BENCH_ENCODE.md for what every column means. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cli.h"
#include "enc_report.h"
#include "gen.h"
#include "mosaic.h"
#include "picio.h"

#define CMD "encode"

#define MAX_LIST     16
#define MAX_FRAMES   48 /* source pictures stay page-locked on cuda: VIDK_MAX_HOST_REGISTERED */
#define MAX_ENCODERS 8

static void help(void) {
    printf(
        "usage: vidkern-bench encode [options]\n\n"
        "Codes sequences with vidk_enc_send / vidk_enc_receive (pipelined: frame i+1 is\n"
        "sent before frame i is received) for every source x codec x R x QP x backend.\n"
        "Reports the steady-state frames/s of the inter frames, the median time of each\n"
        "stage, PCIe bytes per frame, PSNR and estimated bits, the cuda / threads ratio,\n"
        "and checks that every backend gave bit-identical results (exit 1 if not).\n\n"
        "options:\n"
        "  --sizes LIST       1080p, 2160p, 720p, cif or WxH (even, >= 16); default\n"
        "                     1080p,2160p\n"
        "  --codecs LIST      h264,hevc (default both)\n"
        "  --ranges LIST      search ranges R (default 16,32,64; max %d)\n"
        "  --qp LIST          luma QPs (default 30)\n"
        "  --keyint N         intra period (default 0: only the first frame)\n"
        "  --no-deblock       no deblocking filter (default: each codec's, H.264 on)\n"
        "  --cabac            H.264 stream with CABAC (default CAVLC: this benchmark's)\n"
        "  --i4x4, --i8x8     H.264 Intra_4x4 / Intra_8x8 (VidkEncParams.intra4x4, 8x8)\n"
        "  --bframes N        H.264 B-frames between anchors, 0..3 (default 0); the\n"
        "                     inter frames' medians then mix P and B frames (the JSON's\n"
        "                     b_frames counts the B frames of the timed pass)\n"
        "  --b-adapt N        with --bframes: 1 adaptive (default), 0 the fixed pattern\n"
        "  --b-pyramid        with --bframes 2 or 3: reference B-frames\n"
        "  --backends LIST    c,simd,threads,cuda (default simd,threads and cuda where\n"
        "                     usable; c is the slow reference, ask for it by name)\n"
        "  --frames N         frames per sequence, 2..%d (default 8 on CPU backends, 32 on\n"
        "                     cuda)\n"
        "  --check-frames N   frames of the check pass, 1..%d (default 2)\n"
        "  --encoders N       also run N encoders at once (2..%d; each its own context and\n"
        "                     host thread, the same source): their aggregate frames/s\n"
        "                     against one encoder's, both over --encoder-frames frames\n"
        "  --encoder-frames M frames each encoder codes in that pass, the source's\n"
        "                     pictures cycled (default 300, 2..100000)\n"
        "  --outputs LIST     what the timed pass downloads: recon, mvs, energy, levels,\n"
        "                     stream (H.264 only: the coded stream), all, none (default\n"
        "                     recon,stream)\n"
        "  --source S         real (mosaic of the clips), gen (generated), both (default;\n"
        "                     generated only when no clips are found)\n"
        "  --video DIR        folder of the real clips (default $VIDK_VIDEO_DIR or\n"
        "                     ../shared/video)\n"
        "  --quick            small smoke run: --sizes 128x96 --ranges 4,8 --frames 3 and\n"
        "                     c among the default backends (options given explicitly win)\n"
        "  --md FILE          Markdown report (for docs/PERFORMANCE.md); --markdown alias\n"
        "  --json FILE        JSON report (bench/plot_encode.py reads it)\n"
        "  --threads N, --cpumask M, --device N, --quiet   as for every command\n\n"
        "Each configuration runs twice per backend: a check pass over the first\n"
        "--check-frames frames with every output (reconstruction, vectors, energy, levels,\n"
        "statistics hashed; also the warm-up), then the timed pass over --frames frames\n"
        "(its per-frame statistics are hashed too). The test hook\n"
        "VIDK_BENCH_ENCODE_INJECT=<backend> corrupts that backend's hash (proves the check);\n"
        "=encoders corrupts the last of the --encoders pass's hashes.\n",
        VIDK_ME_MAX_RANGE, MAX_FRAMES, MAX_FRAMES, MAX_ENCODERS);
}

/* ---- sources ---------------------------------------------------------------------- */
typedef struct ESource {
    char label[64]; /* "mosaic (real)", "generated" */
    char kind[8];   /* mosaic | gen */
    int w, h, npics;
    VidkPicture pics[MAX_FRAMES];
    int reg[MAX_FRAMES]; /* registered on the cuda context */
} ESource;

static void source_free(ESource *s, VidkContext *cuda) {
    for (int i = 0; i < s->npics; i++) {
        if (cuda && s->reg[i]) vidk_picture_unregister(cuda, &s->pics[i]);
        vidk_picture_free(&s->pics[i]);
    }
    s->npics = 0;
}

/* The mosaic of the real clips (m) or the generated video (m NULL). */
static int load_source(ESource *s, const Mosaic *m, int w, int h, int n) {
    s->w = w, s->h = h;
    snprintf(s->label, sizeof(s->label), m ? "mosaic (real)" : "generated");
    snprintf(s->kind, sizeof(s->kind), m ? "mosaic" : "gen");
    if (bench_make_pics(s->pics, n, m, w, h, VIDK_CHROMA_420) < 0) return -1;
    s->npics = n;
    return 0;
}

/* ---- results ------------------------------------------------------------------------ */
typedef struct EResult {
    int done;
    char err[160];
    int frames;      /* timed frames */
    int b_frames;    /* of them B frames (--bframes) */
    double fps;      /* steady state: inter frames per second of wall clock */
    double fps_all;  /* all frames / (first send .. last receive) */
    double total_ms; /* median send-to-receive of the inter frames */
    double intra_ms; /* median send-to-receive of the intra frames */
    double stage_ms[VIDK_ENC_STAGE_COUNT]; /* medians over the inter frames */
    double h2d, d2h;                       /* mean bytes per inter frame */
    double psnr[3], psnr_seq[3], kbits, nnz_y;
    int stream;               /* kbits are the stream's (1) or the estimate (0) */
    uint64_t out_hash;        /* check pass */
    uint64_t *chain;          /* statistics hash after each timed frame */
    int mismatch;             /* differs from the configuration's first backend */
    double fps_one, fps_many; /* --encoders: aggregate frames/s of 1 and of N encoders */
    int many_differ;          /* --encoders: an encoder's stream differed from the others' */
    const char *mismatch_with;
    const char *mismatch_what;
} EResult;

typedef struct Bench {
    int nsizes, ncodecs, nranges, nqps, nbackends;
    char sizes[MAX_LIST][16];
    VidkCodec codecs[MAX_LIST];
    int ranges[MAX_LIST], qps[MAX_LIST];
    VidkBackend backends[MAX_LIST];
    int frames_opt, check_frames, keyint, quiet, device;
    int deblock; /* VidkEncParams.deblock: -1 (the codec's default), 0 with --no-deblock */
    int cabac;   /* VidkEncParams.cabac (H.264; --cabac) */
    /* H.264 tools (--i4x4, --i8x8, --bframes, --b-adapt, --b-pyramid) */
    int i4x4, i8x8, bframes, b_adapt, b_pyramid;
    unsigned outputs;
    const char *inject;
    VidkContext *ctx[VIDK_BACKEND_COUNT];
    int encoders, encoder_frames; /* --encoders (0: off), --encoder-frames */
    VidkContext *xctx[VIDK_BACKEND_COUNT][MAX_ENCODERS]; /* their contexts beyond ctx[] */
    CliCommon common;                                    /* to open them */
    /* results of every source, [src][codec][range][qp][backend] */
    int nsrc, cap_src;
    char (*src_label)[64];
    int (*src_size)[2];
    EResult *res;
    BenchNotes notes;
    BenchMeta mt;
} Bench;

static size_t per_src(const Bench *b) {
    return (size_t)b->ncodecs * b->nranges * b->nqps * b->nbackends;
}

static EResult *result(Bench *b, int s, int c, int r, int q, int k) {
    return &b->res[(size_t)s * per_src(b) +
                   (((size_t)c * b->nranges + r) * b->nqps + q) * b->nbackends + k];
}

static int frames_for(const Bench *b, VidkBackend be) {
    if (b->frames_opt) return b->frames_opt;
    return be == VIDK_BACKEND_CUDA ? 32 : 8;
}

/* Output arrays of one encoder (the optional maps of VidkEncMaps and the recon). */
typedef struct Outs {
    VidkPicture recon;
    VidkEncMaps maps;
    size_t n_mv, n_mb, n_lev[3];
    VidkHostRange pinned[4];
    int npinned, recon_reg;
} Outs;

static void outs_free(Outs *o, VidkContext *ctx) {
    for (int i = 0; i < o->npinned; i++)
        vidk_host_unregister(ctx, o->pinned[i].ptr);
    if (o->recon_reg) vidk_picture_unregister(ctx, &o->recon);
    vidk_picture_free(&o->recon);
    free(o->maps.mv);
    free(o->maps.energy);
    free(o->maps.levels[0]); /* the three planes share one allocation */
    memset(o, 0, sizeof(*o));
}

static int outs_alloc(Outs *o, VidkContext *ctx, const VidkEncGeometry *g, unsigned outputs) {
    memset(o, 0, sizeof(*o));
    o->n_mv = (size_t)g->mv_w * g->mv_h;
    o->n_mb = (size_t)g->mb_w * g->mb_h;
    o->n_lev[0] = (size_t)g->coded_w * g->coded_h;
    o->n_lev[1] = o->n_lev[2] = (size_t)(g->coded_w / 2) * (g->coded_h / 2);
    VidkHostRange in[4];
    int n = 0;
    if (outputs & VIDK_ENC_OUT_RECON) {
        if (vidk_picture_alloc(&o->recon, g->w, g->h, VIDK_CHROMA_420, 8, 0) < 0) return -1;
        o->recon_reg = vidk_picture_register(ctx, &o->recon) == 0;
    }
    if (outputs & VIDK_ENC_OUT_MVS) {
        if (!(o->maps.mv = malloc(o->n_mv * sizeof(VidkMv)))) return -1;
        in[n++] = (VidkHostRange){o->maps.mv, o->n_mv * sizeof(VidkMv)};
    }
    if (outputs & VIDK_ENC_OUT_ENERGY) {
        if (!(o->maps.energy = malloc(o->n_mb * sizeof(uint32_t)))) return -1;
        in[n++] = (VidkHostRange){o->maps.energy, o->n_mb * sizeof(uint32_t)};
    }
    if (outputs & VIDK_ENC_OUT_LEVELS) {
        /* One allocation for the three planes: one range to page-lock. */
        const size_t all = o->n_lev[0] + o->n_lev[1] + o->n_lev[2];
        if (!(o->maps.levels[0] = malloc(all * sizeof(int16_t)))) return -1;
        o->maps.levels[1] = o->maps.levels[0] + o->n_lev[0];
        o->maps.levels[2] = o->maps.levels[1] + o->n_lev[1];
        in[n++] = (VidkHostRange){o->maps.levels[0], all * sizeof(int16_t)};
    }
    /* Page-locking only speeds up cuda copies; a refusal is not an error. */
    if (n) vidk_host_register_set(ctx, in, n, o->pinned, &o->npinned);
    return 0;
}

static uint64_t hash_outputs(uint64_t h, const Outs *o, unsigned outputs) {
    if (outputs & VIDK_ENC_OUT_RECON) h = enc_hash_picture(h, &o->recon);
    if (outputs & VIDK_ENC_OUT_MVS) h = enc_hash_bytes(h, o->maps.mv, o->n_mv * sizeof(VidkMv));
    if (outputs & VIDK_ENC_OUT_ENERGY)
        h = enc_hash_bytes(h, o->maps.energy, o->n_mb * sizeof(uint32_t));
    if (outputs & VIDK_ENC_OUT_LEVELS)
        for (int p = 0; p < 3; p++)
            h = enc_hash_bytes(h, o->maps.levels[p], o->n_lev[p] * sizeof(int16_t));
    return h;
}

/* Picture i of a source (an ESource *), its pictures cycled. */
static VidkPicture source_pic(const ESource *s, int i) {
    return s->pics[i % s->npics];
}

/* What run_pass keeps of each frame. */
typedef struct PassOut {
    const ESource *s;
    const Outs *o;
    unsigned outputs;
    uint64_t *hash;          /* check pass: every output and the statistics */
    VidkEncFrameInfo *infos; /* timed pass */
    double *t_recv;
} PassOut;

static VidkPicture pass_pic(void *arg, int i) {
    return source_pic(((const PassOut *)arg)->s, i);
}

static void pass_frame(void *arg, int i, const VidkEncFrameInfo *fi) {
    PassOut *po = arg;
    if (po->t_recv) po->t_recv[i] = cli_now();
    if (po->infos) {
        po->infos[i] = *fi;
        po->infos[i].stream = NULL; /* valid until the next receive only */
    }
    if (po->hash) {
        *po->hash = enc_hash_info(hash_outputs(*po->hash, po->o, po->outputs), fi);
        if (fi->stream) *po->hash = enc_hash_bytes(*po->hash, fi->stream, fi->stream_size);
    }
}

/* One pass: frames [0, n) of the source through a fresh encoder, pipelined. `check`:
 * every output, hashed into *hash after each frame. Else the timed pass: infos and the
 * receive times are kept. 0 or a negative error code (message in err). */
static int run_pass(VidkContext *ctx, const ESource *s, const VidkEncParams *p, int n,
                    int check, uint64_t *hash, VidkEncFrameInfo *infos, double *t_recv,
                    double *t_start, char *err, size_t errlen) {
    VidkEncoder *e = NULL;
    Outs o;
    memset(&o, 0, sizeof(o));
    int ret = vidk_enc_open(ctx, &e, p, s->w, s->h);
    if (ret < 0) {
        snprintf(err, errlen, "open: %s", vidk_strerror(ret));
        return ret;
    }
    VidkEncGeometry g;
    vidk_enc_geometry(e, &g);
    if (outs_alloc(&o, ctx, &g, p->outputs) < 0) {
        snprintf(err, errlen, "out of memory");
        ret = VIDK_ERR(ENOMEM);
        goto done;
    }
    PassOut po = {s, &o, p->outputs, check ? hash : NULL, infos, t_recv};
    *t_start = cli_now();
    ret = bench_code_frames(e, n, pass_pic, (p->outputs & VIDK_ENC_OUT_RECON) ? &o.recon : NULL,
                            &o.maps, pass_frame, &po, err, errlen);
done:
    vidk_enc_close(&e);
    outs_free(&o, ctx);
    return ret;
}

static double median_of(const double *v, int n) {
    double tmp[MAX_FRAMES];
    for (int i = 0; i < n; i++)
        tmp[i] = v[i];
    return bench_median(tmp, n);
}

static void measure(Bench *b, VidkBackend be, const ESource *s, const VidkEncParams *base,
                    EResult *x) {
    VidkContext *ctx = b->ctx[be];
    const int n = frames_for(b, be);
    VidkEncFrameInfo infos[MAX_FRAMES];
    double t_recv[MAX_FRAMES], t0;
    VidkEncParams p = *base;
    /* Check pass (also the warm-up: device buffers, caches, page faults). */
    /* the stream where the codec has one (H.264) */
    const unsigned stream = p.codec == VIDK_CODEC_H264 ? (unsigned)VIDK_ENC_OUT_STREAM : 0u;
    p.outputs = VIDK_ENC_OUT_ALL | stream;
    x->out_hash = ENC_HASH_INIT;
    const int nc = b->check_frames < s->npics ? b->check_frames : s->npics;
    if (run_pass(ctx, s, &p, nc, 1, &x->out_hash, NULL, NULL, &t0, x->err, sizeof(x->err)) < 0)
        return;
    /* Timed pass. */
    p.outputs = b->outputs & ~(unsigned)VIDK_ENC_OUT_STREAM;
    if (b->outputs & VIDK_ENC_OUT_STREAM) p.outputs |= stream;
    if (run_pass(ctx, s, &p, n, 0, NULL, infos, t_recv, &t0, x->err, sizeof(x->err)) < 0)
        return;
    if (b->inject && !strcmp(b->inject, vidk_backend_name(be))) x->out_hash ^= 1;
    if (!(x->chain = malloc(sizeof(uint64_t) * (size_t)n))) {
        snprintf(x->err, sizeof(x->err), "out of memory");
        return;
    }
    uint64_t h = ENC_HASH_INIT;
    EncAccum a;
    enc_accum_init(&a);
    double tot[MAX_FRAMES], intra[MAX_FRAMES], st[VIDK_ENC_STAGE_COUNT][MAX_FRAMES];
    int np = 0, ni = 0;
    double h2d = 0, d2h = 0;
    for (int i = 0; i < n; i++) {
        const VidkEncFrameInfo *fi = &infos[i];
        x->chain[i] = h = enc_hash_info(h, fi);
        enc_accum_add(&a, fi, s->w, s->h);
        x->b_frames += fi->bframe != 0;
        if (fi->intra) {
            intra[ni++] = fi->total_ms;
            continue;
        }
        tot[np] = fi->total_ms;
        for (int k = 0; k < VIDK_ENC_STAGE_COUNT; k++)
            st[k][np] = fi->stage_ms[k];
        h2d += (double)fi->h2d_bytes, d2h += (double)fi->d2h_bytes;
        np++;
    }
    x->frames = n;
    x->fps = n > 1 && t_recv[n - 1] > t_recv[0] ? (n - 1) / (t_recv[n - 1] - t_recv[0]) : 0;
    x->fps_all = t_recv[n - 1] > t0 ? n / (t_recv[n - 1] - t0) : 0;
    x->total_ms = median_of(tot, np);
    x->intra_ms = median_of(intra, ni);
    for (int k = 0; k < VIDK_ENC_STAGE_COUNT; k++)
        x->stage_ms[k] = median_of(st[k], np);
    x->h2d = np ? h2d / np : 0;
    x->d2h = np ? d2h / np : 0;
    for (int p3 = 0; p3 < 3; p3++) {
        x->psnr[p3] = enc_accum_avg_psnr(&a, p3);
        x->psnr_seq[p3] = enc_accum_seq_psnr(&a, p3);
    }
    /* the stream's own bits when it was written, else the loop's estimate */
    x->stream = a.stream_bytes > 0;
    x->kbits = x->stream ? (double)a.stream_bytes * 8 / n / 1e3 : (double)a.bits / n / 1e3;
    x->nnz_y = (double)a.nnz[0] / n;
    x->done = 1;
}

/* ---- --encoders: several encoders at once ------------------------------------------- */
typedef struct Start { /* the encoders' threads wait for state 1 (go) or 2 (cancel) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
} Start;

typedef struct Par {
    VidkEncoder *e;
    const ESource *s;
    int n;
    Start *go;
    double t_end;
    uint64_t hash; /* of the stream and the statistics */
    int ret;
    char err[96];
} Par;

static VidkPicture par_pic(void *arg, int i) {
    return source_pic(((const Par *)arg)->s, i);
}

static void par_frame(void *arg, int i, const VidkEncFrameInfo *fi) {
    Par *t = arg;
    (void)i;
    t->hash = enc_hash_info(t->hash, fi);
    if (fi->stream) t->hash = enc_hash_bytes(t->hash, fi->stream, fi->stream_size);
}

static void *par_main(void *arg) {
    Par *t = arg;
    pthread_mutex_lock(&t->go->mu);
    while (!t->go->state)
        pthread_cond_wait(&t->go->cv, &t->go->mu);
    const int n = t->go->state == 1 ? t->n : 0;
    pthread_mutex_unlock(&t->go->mu);
    t->hash = ENC_HASH_INIT;
    t->ret =
        bench_code_frames(t->e, n, par_pic, NULL, NULL, par_frame, t, t->err, sizeof(t->err));
    t->t_end = cli_now();
    return NULL;
}

/* ne encoders (contexts ctx[0..ne-1]) over the same frames, opened before the clock starts;
 * the aggregate frames/s from the common start to the last receive, or -1 (message in err).
 * *same: every encoder's stream and statistics equal the first's. */
static double run_many(VidkContext **ctx, int ne, const ESource *s, const VidkEncParams *p,
                       int n, int inject, int *same, char *err, size_t errlen) {
    Par t[MAX_ENCODERS];
    pthread_t th[MAX_ENCODERS];
    Start go = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    double fps = -1;
    int opened = 0, started = 0;
    memset(t, 0, sizeof(t));
    for (; opened < ne; opened++) {
        const int r = vidk_enc_open(ctx[opened], &t[opened].e, p, s->w, s->h);
        if (r < 0) {
            snprintf(err, errlen, "open of encoder %d: %s", opened + 1, vidk_strerror(r));
            goto done;
        }
        t[opened].s = s, t[opened].n = n, t[opened].go = &go;
    }
    for (; started < ne; started++)
        if (pthread_create(&th[started], NULL, par_main, &t[started])) break;
    pthread_mutex_lock(&go.mu);
    go.state = started == ne ? 1 : 2; /* all at once, or none of them */
    pthread_cond_broadcast(&go.cv);
    pthread_mutex_unlock(&go.mu);
    const double t0 = cli_now();
    double t_end = 0;
    for (int k = 0; k < started; k++) {
        pthread_join(th[k], NULL);
        if (t[k].t_end > t_end) t_end = t[k].t_end;
    }
    if (started < ne) {
        snprintf(err, errlen, "cannot start %d threads", ne);
        goto done;
    }
    if (inject) t[ne - 1].hash ^= 1; /* the test hook: the last encoder's hash corrupted */
    *same = 1;
    for (int k = 0; k < ne; k++) {
        if (t[k].ret < 0) {
            snprintf(err, errlen, "encoder %d: %s", k + 1, t[k].err);
            goto done;
        }
        *same &= t[k].hash == t[0].hash;
    }
    fps = t_end > t0 ? (double)ne * n / (t_end - t0) : 0;
done:
    for (int k = 0; k < opened; k++)
        vidk_enc_close(&t[k].e);
    return fps;
}

/* --encoders: one encoder, then b->encoders at once, each over b->encoder_frames frames. */
static void measure_many(Bench *b, VidkBackend be, const ESource *s, const VidkEncParams *base,
                         EResult *x) {
    if (!x->done || b->encoders < 2) return;
    VidkContext *ctx[MAX_ENCODERS];
    ctx[0] = b->ctx[be];
    for (int k = 1; k < b->encoders; k++) {
        if (!b->xctx[be][k]) {
            CliCommon cc = b->common;
            cc.backend = be, cc.quiet = 1;
            b->xctx[be][k] = cli_open(&cc, CMD);
        }
        if (!(ctx[k] = b->xctx[be][k])) {
            snprintf(x->err, sizeof(x->err), "cannot open context %d", k + 1);
            x->done = 0;
            return;
        }
    }
    VidkEncParams p = *base;
    p.outputs = p.codec == VIDK_CODEC_H264 ? (unsigned)VIDK_ENC_OUT_STREAM : 0u;
    int same1 = 0, same = 0;
    const int inject = b->inject && !strcmp(b->inject, "encoders");
    x->fps_one = run_many(ctx, 1, s, &p, b->encoder_frames, 0, &same1, x->err, sizeof(x->err));
    if (x->fps_one >= 0)
        x->fps_many = run_many(ctx, b->encoders, s, &p, b->encoder_frames, inject, &same,
                               x->err, sizeof(x->err));
    if (x->fps_one < 0 || x->fps_many < 0) {
        x->done = 0;
        return;
    }
    x->many_differ = !same;
}

/* Compare x with the configuration's reference result (the first backend that ran). */
static void cross_check(EResult *x, const EResult *ref, const char *ref_name) {
    if (!ref || !x->done) return;
    const int n = x->frames < ref->frames ? x->frames : ref->frames;
    if (x->out_hash != ref->out_hash) {
        x->mismatch = 1;
        x->mismatch_what = "outputs of the check pass";
    } else if (x->chain[n - 1] != ref->chain[n - 1]) {
        x->mismatch = 1;
        x->mismatch_what = "statistics of the timed pass";
    }
    x->mismatch_with = ref_name;
}

/* ---- outputs ----------------------------------------------------------------------- */
/* fps of this result / fps of the threads backend in the same configuration; 0 if none. */
static double vs_threads(Bench *b, int s, int c, int r, int q, int k) {
    const EResult *x = result(b, s, c, r, q, k);
    for (int j = 0; j < b->nbackends; j++) {
        if (b->backends[j] != VIDK_BACKEND_THREADS || j == k) continue;
        const EResult *t = result(b, s, c, r, q, j);
        return x->done && t->done && t->fps > 0 ? x->fps / t->fps : 0;
    }
    return 0;
}

/* Every result of b in table order: source, codec, range, QP, backend. */
#define FOR_EACH_RESULT(b, s, c, r, q, k)                                                      \
    for (int s = 0; s < (b)->nsrc; s++)                                                        \
        for (int c = 0; c < (b)->ncodecs; c++)                                                 \
            for (int r = 0; r < (b)->nranges; r++)                                             \
                for (int q = 0; q < (b)->nqps; q++)                                            \
                    for (int k = 0; k < (b)->nbackends; k++)

/* A row's backend label and size (24 bytes each). */
static void row_names(Bench *b, int s, int k, char *be, char *size) {
    bench_backend_label(b->ctx, b->backends[k], be, 24);
    snprintf(size, 24, "%dx%d", b->src_size[s][0], b->src_size[s][1]);
}

static void fmt_num(char *buf, size_t n, double v) {
    snprintf(buf, n, v >= 100 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f", v);
}

static void print_table(FILE *f, Bench *b, int md) {
    if (md)
        fprintf(f, "| source | size | codec | R | QP | backend | frames/s | ms/frame | I ms | "
                   "upload | me | code | stats | download | stream | h2d KB/f | d2h KB/f | "
                   "PSNR-Y | kbit/f | vs threads | check |\n"
                   "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                   "---:|---:|---:|---:|---:|---|\n");
    else
        fprintf(f,
                "\n%-14s %-9s %-5s %3s %3s %-11s %9s %9s %9s %8s %8s %8s %7s %8s %7s %9s %9s "
                "%7s %8s %7s %s\n",
                "source", "size", "codec", "R", "QP", "backend", "frames/s", "ms/frame", "I ms",
                "upload", "me", "code", "stats", "download", "stream", "h2d KB/f", "d2h KB/f",
                "PSNR-Y", "kbit/f", "vs thr", "check");
    FOR_EACH_RESULT(b, s, c, r, q, k) {
        const EResult *x = result(b, s, c, r, q, k);
        char be[24], size[24], v[3 + VIDK_ENC_STAGE_COUNT][24], vs[16], check[64], kb[24];
        row_names(b, s, k, be, size);
        if (!x->done) {
            char fail[sizeof(x->err) + 8];
            snprintf(fail, sizeof(fail), "failed: %s", x->err);
            bench_row(f, md, "%-14s %-9s %-5s %3d %3d %-11s %s\n", b->src_label[s], size,
                      vidk_codec_name(b->codecs[c]), b->ranges[r], b->qps[q], be, fail);
            continue;
        }
        fmt_num(v[0], sizeof(v[0]), x->fps);
        fmt_num(v[1], sizeof(v[1]), x->total_ms);
        fmt_num(v[2], sizeof(v[2]), x->intra_ms);
        for (int t = 0; t < VIDK_ENC_STAGE_COUNT; t++)
            fmt_num(v[3 + t], sizeof(v[3 + t]), x->stage_ms[t]);
        const double sp = vs_threads(b, s, c, r, q, k);
        if (sp > 0)
            snprintf(vs, sizeof(vs), sp >= 10 ? "%.0fx" : "%.2fx", sp);
        else
            snprintf(vs, sizeof(vs), "-");
        if (x->mismatch)
            snprintf(check, sizeof(check), "MISMATCH vs %s", x->mismatch_with);
        else
            snprintf(check, sizeof(check), "%s", x->mismatch_with ? "same" : "ref");
        snprintf(kb, sizeof(kb), "%.2f%s", x->kbits, x->stream ? "" : "*");
        bench_row(f, md,
                  "%-14s %-9s %-5s %3d %3d %-11s %9s %9s %9s %8s %8s %8s %7s "
                  "%8s %7s %9.1f %9.1f %7.3f %8s %7s %s\n",
                  b->src_label[s], size, vidk_codec_name(b->codecs[c]), b->ranges[r], b->qps[q],
                  be, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], x->h2d / 1e3,
                  x->d2h / 1e3, x->psnr[0], kb, vs, check);
    }
}

/* --encoders: a row per configuration and backend. */
static void print_many(FILE *f, Bench *b, int md) {
    if (b->encoders < 2) return;
    fprintf(f,
            "\n%d encoders at once (each its own context and host thread), %d frames each, "
            "the source's pictures cycled:\n",
            b->encoders, b->encoder_frames);
    if (md)
        fprintf(f,
                "\n| source | size | codec | R | QP | backend | 1 encoder frames/s | %d "
                "encoders frames/s | ratio | streams |\n|---|---|---|---:|---:|---|---:|---:|"
                "---:|---|\n",
                b->encoders);
    else
        fprintf(f, "%-14s %-9s %-5s %3s %3s %-11s %12s %12s %6s %s\n", "source", "size",
                "codec", "R", "QP", "backend", "1 enc f/s", "N enc f/s", "ratio", "streams");
    FOR_EACH_RESULT(b, s, c, r, q, k) {
        const EResult *x = result(b, s, c, r, q, k);
        if (!x->done) continue;
        char be[24], size[24];
        row_names(b, s, k, be, size);
        bench_row(f, md, "%-14s %-9s %-5s %3d %3d %-11s %12.1f %12.1f %6.2f %s\n",
                  b->src_label[s], size, vidk_codec_name(b->codecs[c]), b->ranges[r], b->qps[q],
                  be, x->fps_one, x->fps_many, x->fps_one > 0 ? x->fps_many / x->fps_one : 0,
                  x->many_differ ? "DIFFER" : "same");
    }
    fprintf(f,
            "%sframes/s: all frames of all encoders / (start .. last receive), encoders "
            "opened before the clock starts; ratio: N encoders / 1; streams: same = every "
            "encoder's stream and statistics equal the others'.\n",
            md ? "\n- " : "");
}

static void print_legend(FILE *f, int md) {
    const char *li = md ? "- " : "";
    fprintf(f,
            "%sframes/s: steady-state throughput of the inter frames, (frames - 1) / (time "
            "from the receive of frame 0 to the receive of the last frame), with the encoder "
            "pipelined (frame i+1 sent before frame i is received; sources in memory).\n"
            "%sms/frame: median send-to-receive time of the inter frames (latency; with the "
            "pipeline it includes the wait behind the previous frame); I ms: the same for "
            "the intra frames.\n"
            "%supload .. stream: median stage times of the inter frames as the library "
            "reports them (cuda: CUDA events on the device).\n"
            "%sh2d / d2h KB/f: PCIe kilobytes per inter frame (0 on CPU backends). "
            "PSNR-Y: average of the frames' luma PSNRs; kbit/f: the stream's bits per frame "
            "(headers included) when the timed pass wrote it, else the loop's Exp-Golomb "
            "estimate, marked *.\n"
            "%svs thr: frames/s of this backend / frames/s of threads in the same "
            "configuration. check: ref = the configuration's first backend, whose outputs "
            "the others must equal bit for bit (check pass: reconstruction, vectors, energy, "
            "levels, the H.264 stream and statistics of the first frames; timed pass: "
            "statistics of every "
            "frame); same = equal.\n",
            li, li, li, li, li);
}

static void print_header(FILE *f, const Bench *b, int md) {
    const BenchMeta *mt = &b->mt;
    const char *li = md ? "- " : "";
    if (md)
        fprintf(f, "# vidkern-bench encode\n\n");
    else
        fprintf(f, "vidkern-bench encode  (%s)\n", mt->command);
    fprintf(f, "%sdevice: %s, %d cores online; GPU: %s\n", li, mt->cpu, mt->cores, mt->gpu);
    fprintf(f, "%sdate: %s  commit: %s  vidkern %s\n", li, mt->date, VIDK_GIT_COMMIT,
            vidk_version());
    if (md) fprintf(f, "- command: `%s`\n", mt->command);
    fprintf(
        f,
        "%skeyint %d; deblocking %s; H.264 %s%s%s, B-frames %d%s%s; timed pass outputs 0x%x "
        "(1 recon, 2 mvs, 4 energy, 8 levels, 16 stream); check pass %d frames\n",
        li, b->keyint, b->deblock ? "the codec's (H.264 on, HEVC none)" : "off",
        b->cabac ? "CABAC" : "CAVLC", b->i4x4 ? ", Intra_4x4" : "",
        b->i8x8 ? ", Intra_8x8" : "", b->bframes, b->bframes && b->b_adapt ? " (adaptive)" : "",
        b->bframes && b->b_pyramid ? " (pyramid)" : "", b->outputs, b->check_frames);
    bench_notes_print(f, &b->notes, md ? "- note: " : "note: ");
}

static void write_markdown(FILE *f, Bench *b) {
    print_header(f, b, 1);
    fprintf(f, "\n");
    print_table(f, b, 1);
    fprintf(f, "\n");
    print_legend(f, 1);
    print_many(f, b, 1);
}

static void write_json(FILE *f, Bench *b) {
    const BenchMeta *mt = &b->mt;
    fprintf(f,
            "{\n  \"benchmark\": \"encode\",\n  \"vidkern\": \"%s\",\n  \"commit\": %s,\n  "
            "\"date\": \"%s\",\n  \"command\": %s,\n  \"device\": {\"cpu\": %s, \"cores\": %d, "
            "\"gpu\": %s",
            vidk_version(), bench_jq(VIDK_GIT_COMMIT), mt->date, bench_jq(mt->command),
            bench_jq(mt->cpu), mt->cores, bench_jq(mt->gpu));
    fprintf(f,
            "},\n  \"keyint\": %d,\n  \"deblock\": %d,\n  \"cabac\": %d,\n  \"i4x4\": %d,\n"
            "  \"i8x8\": %d,\n  \"bframes\": %d,\n  \"b_adapt\": %d,\n  \"b_pyramid\": %d,\n"
            "  \"outputs\": %u,\n  \"check_frames\": %d,\n  \"notes\": [",
            b->keyint, b->deblock, b->cabac, b->i4x4, b->i8x8, b->bframes, b->b_adapt,
            b->b_pyramid, b->outputs, b->check_frames);
    bench_notes_json(f, &b->notes);
    fprintf(f, "],\n  \"results\": [");
    int first = 1, all_same = 1;
    FOR_EACH_RESULT(b, s, c, r, q, k) {
        const EResult *x = result(b, s, c, r, q, k);
        const VidkBackend be = b->backends[k];
        all_same &= !x->mismatch;
        fprintf(f, "%s\n    {\"source\": %s", first ? "" : ",", bench_jq(b->src_label[s]));
        first = 0;
        fprintf(f,
                ", \"width\": %d, \"height\": %d, \"codec\": \"%s\", "
                "\"range\": %d, \"qp\": %d, \"backend\": \"%s\", "
                "\"threads\": %d",
                b->src_size[s][0], b->src_size[s][1], vidk_codec_name(b->codecs[c]),
                b->ranges[r], b->qps[q], vidk_backend_name(be),
                b->ctx[be] ? vidk_get_threads(b->ctx[be]) : 0);
        if (!x->done) {
            fprintf(f, ", \"error\": %s}", bench_jq(x->err));
            continue;
        }
        fprintf(f,
                ", \"frames\": %d, \"b_frames\": %d, \"fps\": %.4f, \"fps_all_frames\": %.4f, "
                "\"ms_per_frame\": %.5f, \"intra_ms\": %.5f, \"stage_ms\": {",
                x->frames, x->b_frames, x->fps, x->fps_all, x->total_ms, x->intra_ms);
        for (int t = 0; t < VIDK_ENC_STAGE_COUNT; t++)
            fprintf(f, "%s\"%s\": %.5f", t ? ", " : "", enc_stage_name(t), x->stage_ms[t]);
        const double sp = vs_threads(b, s, c, r, q, k);
        fprintf(f,
                "}, \"h2d_bytes_per_frame\": %.1f, \"d2h_bytes_per_frame\": "
                "%.1f, \"psnr\": [%.4f, %.4f, %.4f], \"psnr_sequence\": [%.4f, "
                "%.4f, %.4f], \"kbits_per_frame\": %.4f, \"kbits_source\": "
                "\"%s\", \"nnz_y_per_frame\": %.2f, \"vs_threads\": ",
                x->h2d, x->d2h, x->psnr[0], x->psnr[1], x->psnr[2], x->psnr_seq[0],
                x->psnr_seq[1], x->psnr_seq[2], x->kbits, x->stream ? "stream" : "estimate",
                x->nnz_y);
        if (sp > 0)
            fprintf(f, "%.4f", sp);
        else
            fprintf(f, "null");
        if (b->encoders >= 2)
            fprintf(f,
                    ", \"encoders\": %d, \"encoder_frames\": %d, "
                    "\"fps_one_encoder\": %.4f, \"fps_encoders\": %.4f, "
                    "\"encoders_identical\": %s",
                    b->encoders, b->encoder_frames, x->fps_one, x->fps_many,
                    x->many_differ ? "false" : "true");
        fprintf(f, ", \"hash\": \"%016llx\", \"identical\": %s}",
                (unsigned long long)x->out_hash, x->mismatch ? "false" : "true");
    }
    fprintf(f, "\n  ],\n  \"all_identical\": %s\n}\n", all_same ? "true" : "false");
}

static void write_report(FILE *f, int what, void *arg) {
    if (what == BENCH_JSON)
        write_json(f, arg);
    else
        write_markdown(f, arg);
}

/* ---- options ----------------------------------------------------------------------- */
static int parse_outputs(const char *s, unsigned *out) {
    char list[MAX_LIST][16];
    const int k = bench_split_list(CMD, "--outputs", s, list[0], sizeof(list[0]), MAX_LIST);
    if (k < 0) return -1;
    unsigned o = 0;
    for (int i = 0; i < k; i++) {
        if (!strcmp(list[i], "recon"))
            o |= VIDK_ENC_OUT_RECON;
        else if (!strcmp(list[i], "mvs"))
            o |= VIDK_ENC_OUT_MVS;
        else if (!strcmp(list[i], "energy"))
            o |= VIDK_ENC_OUT_ENERGY;
        else if (!strcmp(list[i], "levels"))
            o |= VIDK_ENC_OUT_LEVELS;
        else if (!strcmp(list[i], "stream"))
            o |= VIDK_ENC_OUT_STREAM;
        else if (!strcmp(list[i], "all"))
            o |= VIDK_ENC_OUT_ALL | VIDK_ENC_OUT_STREAM;
        else if (strcmp(list[i], "none"))
            return cli_error(CMD,
                             "--outputs: unknown '%s' (recon, mvs, energy, levels, stream, "
                             "all, none)",
                             list[i]),
                   -1;
    }
    *out = o;
    return 0;
}

int vidk_bench_encode(int argc, char **argv) {
    Bench *b = calloc(1, sizeof(*b));
    if (!b) return cli_error(CMD, "out of memory");
    CliCommon c; /* set by bench_parse_args */
    const char *sizes = NULL, *ranges = NULL, *codecs = "h264,hevc", *qps = "30";
    const char *outputs = "recon,stream";
    BenchOpts o = {.source = "both", .frames_lo = 2, .frames_hi = MAX_FRAMES};
    o.no = BENCH_NO_CSV | BENCH_NO_RUNS | BENCH_NO_MAX_SECONDS;
    long check_frames = 2, keyint = 0, encoders = 0, encoder_frames = 300, bframes = 0,
         b_adapt = 1;
    int quick = 0, ret = 1, no_deblock = 0, cabac = 0, i4x4 = 0, i8x8 = 0, bpyr = 0;
    Mosaic *mosaic = NULL;
    ESource *src = NULL;
    bench_notes_init(&b->notes, 8, 256);
    const BenchArg args[] = {
        {"--quick", .flag = &quick},
        {"--no-deblock", .flag = &no_deblock},
        {"--cabac", .flag = &cabac},
        {"--i4x4", .flag = &i4x4},
        {"--i8x8", .flag = &i8x8},
        {"--b-pyramid", .flag = &bpyr},
        {"--bframes", .num = &bframes, .lo = 0, .hi = VIDK_ENC_MAX_BFRAMES},
        {"--b-adapt", .num = &b_adapt, .lo = 0, .hi = 1},
        {"--sizes", .str = &sizes},
        {"--ranges", .str = &ranges},
        {"--codecs", .str = &codecs},
        {"--qp", .str = &qps},
        {"--md", .str = &o.md},
        {"--outputs", .str = &outputs},
        {"--check-frames", .num = &check_frames, .lo = 1, .hi = MAX_FRAMES},
        {"--keyint", .num = &keyint, .lo = 0, .hi = 1000000},
        {"--encoders", .num = &encoders, .lo = 2, .hi = MAX_ENCODERS},
        {"--encoder-frames", .num = &encoder_frames, .lo = 2, .hi = 100000},
        {NULL}};
    const int pr = bench_parse_args(&o, &c, CMD, argc, argv, args, help);
    if (pr) { /* --help shown (exit 0), or an error */
        ret = pr < 0;
        goto done;
    }
    if (quick) {
        if (!sizes) sizes = "128x96";
        if (!ranges) ranges = "4,8";
        if (!o.frames) o.frames = 3;
    }
    if (!sizes) sizes = "1080p,2160p";
    if (!ranges) ranges = "16,32,64";
    b->frames_opt = (int)o.frames, b->check_frames = (int)check_frames, b->keyint = (int)keyint;
    b->deblock = no_deblock ? 0 : -1;
    b->cabac = cabac;
    b->i4x4 = i4x4, b->i8x8 = i8x8, b->bframes = (int)bframes, b->b_adapt = (int)b_adapt;
    b->b_pyramid = bpyr;
    b->quiet = c.quiet, b->device = c.device;
    b->encoders = (int)encoders, b->encoder_frames = (int)encoder_frames, b->common = c;
    b->inject = getenv("VIDK_BENCH_ENCODE_INJECT");
    const char *source = o.source;
    if (bench_choice(CMD, "--source", source, "real|gen|both") < 0) goto done;
    if (parse_outputs(outputs, &b->outputs) < 0) goto done;
    if ((b->nsizes =
             bench_parse_sizes(CMD, sizes, 1, b->sizes[0], sizeof(b->sizes[0]), MAX_LIST)) < 0)
        goto done;
    if (bench_parse_ints(CMD, "--ranges", ranges, 0, VIDK_ME_MAX_RANGE, b->ranges,
                         &b->nranges) < 0 ||
        bench_parse_ints(CMD, "--qp", qps, 0, VIDK_ENC_MAX_QP, b->qps, &b->nqps) < 0)
        goto done;
    {
        char list[MAX_LIST][16];
        const int n =
            bench_split_list(CMD, "--codecs", codecs, list[0], sizeof(list[0]), MAX_LIST);
        if (n < 0) goto done;
        for (int i = 0; i < n; i++) {
            const int cd = vidk_codec_from_name(list[i]);
            if (cd < 0) {
                cli_error(CMD, "--codecs: unknown codec '%s' (h264, hevc)", list[i]);
                goto done;
            }
            b->codecs[b->ncodecs++] = (VidkCodec)cd;
        }
    }
    if (o.backends) {
        if (bench_parse_backends(CMD, o.backends, b->backends, &b->nbackends) < 0) goto done;
    } else {
        if (quick) b->backends[b->nbackends++] = VIDK_BACKEND_C;
        b->backends[b->nbackends++] = VIDK_BACKEND_SIMD;
        b->backends[b->nbackends++] = VIDK_BACKEND_THREADS;
        b->backends[b->nbackends++] = VIDK_BACKEND_CUDA;
    }
    /* Contexts: a backend that cannot be opened here is skipped and said so. */
    if (bench_open_backends(&c, CMD, 0, b->backends, &b->nbackends, b->ctx, &b->notes) < 0)
        goto done;
    /* Sources: per size a mosaic of the real clips and/or the generated video. */
    const char *dir = o.video ? o.video : mosaic_default_video_dir();
    const int want_real = strcmp(source, "gen") != 0, want_gen = strcmp(source, "real") != 0;
    int have_clips = 0;
    if (want_real) {
        have_clips = bench_open_mosaic(&mosaic, dir, CMD, c.quiet) == 0;
        if (!have_clips) {
            bench_note(&b->notes, "no real clips found (%s): generated video only",
                       dir ? dir : "no folder");
        } else {
            bench_note(&b->notes, "real video: %s", mosaic_describe(mosaic));
        }
    }
    const int kinds = (want_real && have_clips) + (want_gen || !have_clips);
    b->cap_src = b->nsizes * kinds;
    b->src_label = calloc((size_t)b->cap_src, sizeof(*b->src_label));
    b->src_size = calloc((size_t)b->cap_src, sizeof(*b->src_size));
    b->res = calloc((size_t)b->cap_src * per_src(b), sizeof(EResult));
    src = calloc(1, sizeof(*src));
    if (!b->src_label || !b->src_size || !b->res || !src) goto oom;
    int npics = b->check_frames;
    for (int k = 0; k < b->nbackends; k++)
        if (frames_for(b, b->backends[k]) > npics) npics = frames_for(b, b->backends[k]);

    bench_meta_fill(&b->mt, "vidkern-bench encode", argc, argv,
                    b->ctx[VIDK_BACKEND_CUDA] ? b->device : -1);
    bench_say_start(CMD, &b->mt, c.quiet);
    const int total = b->cap_src * (int)per_src(b);
    int done_n = 0, mismatches = 0, failures = 0;
    const double t_start = cli_now();
    VidkContext *cuda = b->ctx[VIDK_BACKEND_CUDA];
    for (int i = 0; i < b->nsizes; i++)
        for (int kind = 0; kind < 2; kind++) {
            if (kind == 0 && !(want_real && have_clips)) continue;
            if (kind == 1 && !(want_gen || !have_clips)) continue;
            int w, h;
            bench_size_of(b->sizes[i], 1, &w, &h);
            memset(src, 0, sizeof(*src));
            if (load_source(src, kind == 0 ? mosaic : NULL, w, h, npics) < 0) {
                cli_error(CMD, "cannot prepare %d frames of %dx%d (%s): out of memory?", npics,
                          w, h, kind == 0 ? "mosaic" : "generated");
                goto done;
            }
            if (cuda)
                for (int f = 0; f < src->npics; f++)
                    src->reg[f] = vidk_picture_register(cuda, &src->pics[f]) == 0;
            const int s = b->nsrc++;
            snprintf(b->src_label[s], sizeof(b->src_label[s]), "%s", src->label);
            b->src_size[s][0] = w, b->src_size[s][1] = h;
            for (int cd = 0; cd < b->ncodecs; cd++)
                for (int r = 0; r < b->nranges; r++)
                    for (int q = 0; q < b->nqps; q++) {
                        VidkEncParams p;
                        vidk_enc_default_params(&p);
                        p.codec = b->codecs[cd];
                        p.range = b->ranges[r];
                        p.qp = b->qps[q];
                        p.keyint = b->keyint;
                        p.deblock = b->deblock;
                        const int avc = b->codecs[cd] == VIDK_CODEC_H264;
                        p.cabac = b->cabac && avc;
                        p.intra4x4 = b->i4x4 && avc, p.intra8x8 = b->i8x8 && avc;
                        p.bframes = avc ? b->bframes : 0; /* H.264 only */
                        p.b_adapt = b->b_adapt, p.b_pyramid = b->b_pyramid;
                        const EResult *ref = NULL;
                        const char *ref_name = NULL;
                        for (int k = 0; k < b->nbackends; k++) {
                            const VidkBackend be = b->backends[k];
                            EResult *x = result(b, s, cd, r, q, k);
                            measure(b, be, src, &p, x);
                            measure_many(b, be, src, &p, x);
                            mismatches += x->many_differ;
                            if (x->many_differ)
                                cli_error(CMD,
                                          "%s: the %d encoders at once gave different "
                                          "streams on %s %dx%d %s R=%d QP %d",
                                          vidk_backend_name(be), b->encoders, src->label, w, h,
                                          vidk_codec_name(p.codec), p.range, p.qp);
                            cross_check(x, ref, ref_name);
                            if (x->done && !ref) ref = x, ref_name = vidk_backend_name(be);
                            done_n++;
                            mismatches += x->mismatch;
                            failures += !x->done;
                            if (!c.quiet)
                                fprintf(stderr,
                                        "[%d/%d %.0fs] %s %dx%d %s R=%d QP %d %s: %s%.2f "
                                        "frames/s, PSNR-Y %.2f%s\n",
                                        done_n, total, cli_now() - t_start, src->label, w, h,
                                        vidk_codec_name(p.codec), p.range, p.qp,
                                        vidk_backend_name(be), x->done ? "" : "FAILED ", x->fps,
                                        x->psnr[0], x->mismatch ? "  MISMATCH" : "");
                            if (!x->done)
                                cli_error(CMD, "%s %dx%d %s R=%d QP %d %s: %s", src->label, w,
                                          h, vidk_codec_name(p.codec), p.range, p.qp,
                                          vidk_backend_name(be), x->err);
                            if (x->mismatch)
                                cli_error(CMD,
                                          "%s differs from %s (%s) on %s %dx%d %s R=%d "
                                          "QP %d",
                                          vidk_backend_name(be), x->mismatch_with,
                                          x->mismatch_what, src->label, w, h,
                                          vidk_codec_name(p.codec), p.range, p.qp);
                        }
                    }
            source_free(src, cuda);
        }
    print_header(stdout, b, 0);
    print_table(stdout, b, 0);
    printf("\n");
    print_legend(stdout, 0);
    print_many(stdout, b, 0);
    if (!mismatches && !failures && b->nbackends < 2)
        printf("\ncheck: one backend only: nothing to compare\n");
    else if (!mismatches && !failures)
        printf("\ncheck: all %d backends gave bit-identical results in every configuration\n",
               b->nbackends);
    else if (!mismatches)
        printf("\ncheck: the backends that ran gave bit-identical results\n");
    ret = 0;
    if (bench_write_outputs(CMD, NULL, o.json, o.md, write_report, b) < 0) ret = 1;
    if (bench_verdict(CMD, mismatches, "result(s) differ between backends", failures)) ret = 1;
    goto done;
oom:
    cli_error(CMD, "out of memory");
done:
    if (src) {
        source_free(src, b->ctx[VIDK_BACKEND_CUDA]);
        free(src);
    }
    mosaic_close(&mosaic);
    if (b->res)
        for (size_t i = 0; i < (size_t)b->cap_src * per_src(b); i++)
            free(b->res[i].chain);
    for (int i = 0; i < VIDK_BACKEND_COUNT; i++) {
        for (int k = 0; k < MAX_ENCODERS; k++)
            vidk_close(&b->xctx[i][k]);
        vidk_close(&b->ctx[i]);
    }
    free(b->res);
    free(b->src_label);
    free(b->src_size);
    free(b);
    return ret;
}
