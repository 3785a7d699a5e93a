/* The coding loop (vidk_enc_*): every backend reconstructs the same pictures with the same
 * levels, vectors and statistics; the core primitives the device runs (enc_core.h) give
 * the same as the context's dsp kernels; PSNR rises as QP falls on a real clip; API errors.
 *
 *   test_encode [VIDEO_DIR]          CPU backends (c, core path, simd, threads)
 *   test_encode --cuda [VIDEO_DIR]   cuda against c (exit 77 without a device); the H.264
 *                                    stream also alone, through each of cuda's three paths
 *                                    (device, slot-overflow fallback, host writer)
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc/enc.h"
#include "gen.h"
#include "picio.h"
#include "test_util.h"
#include "test_frames.h"

#define MAX_FRAMES 8

/* What one run produced, per frame: a hash of every output and the statistics. */
typedef struct Result {
    int n;
    uint64_t hash[MAX_FRAMES];
    uint64_t shash[MAX_FRAMES]; /* the stream alone */
    VidkEncFrameInfo info[MAX_FRAMES];
} Result;

/* Frames whose stream the cuda backend coded on the host (its debug message). */
static int host_coded;

static void count_host_coded(void *cookie, VidkLogLevel level, const char *fmt, va_list ap) {
    (void)cookie, (void)level, (void)ap;
    if (strstr(fmt, "stream coded on the host")) host_coded++;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Encode n frames; stream_only: ask for the H.264 stream alone (no reconstruction, no maps:
 * on cuda only the stream and the statistics come down). */
static int encode_ex(VidkBackend be, int core, const VidkEncParams *p, VidkPicture *frames,
                     int n, Result *r, int stream_only) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = be;
    s.n_threads = be == VIDK_BACKEND_THREADS ? 3 : 0;
    s.log_level = VIDK_LOG_DEBUG;
    s.logger.callback = count_host_coded;
    VidkContext *ctx = NULL;
    VidkEncoder *e = NULL;
    VidkPicture rec;
    VidkEncMaps maps;
    VidkEncGeometry g;
    int err = vidk_open(&ctx, &s);
    if (err < 0) return err;
    VidkEncParams q = *p;
    q.outputs = (stream_only ? 0u : VIDK_ENC_OUT_ALL) |
                (q.codec == VIDK_CODEC_H264 ? VIDK_ENC_OUT_STREAM : 0u);
    err = vidk_enc_open(ctx, &e, &q, frames[0].w, frames[0].h);
    if (err < 0) {
        vidk_close(&ctx);
        return err;
    }
    vidk_enc_set_core_path(e, core);
    vidk_enc_geometry(e, &g);
    memset(&maps, 0, sizeof(maps));
    const size_t nmv = (size_t)g.mv_w * g.mv_h, nen = (size_t)g.mb_w * g.mb_h;
    const size_t nl[3] = {(size_t)g.coded_w * g.coded_h, (size_t)g.coded_w * g.coded_h / 4,
                          (size_t)g.coded_w * g.coded_h / 4};
    maps.mv = calloc(nmv, sizeof(*maps.mv));
    maps.energy = calloc(nen, sizeof(*maps.energy));
    for (int k = 0; k < 3; k++)
        maps.levels[k] = calloc(nl[k], sizeof(int16_t));
    CHECK(vidk_picture_alloc(&rec, frames[0].w, frames[0].h, VIDK_CHROMA_420, 8, 0) == 0);
    r->n = n;
    int sent = 0, ended = 0;
    for (int i = 0; i < n && err >= 0; i++) {
        /* one frame ahead, as the CLI does (B-frames: the anchor's too), then the end */
        while (sent < n && sent <= i + 1 + q.bframes && err >= 0)
            err = vidk_enc_send(e, &frames[sent++]);
        if (err >= 0 && sent == n && !ended) err = vidk_enc_send(e, NULL), ended = 1;
        if (err < 0) break;
        err = stream_only ? vidk_enc_receive(e, NULL, NULL, &r->info[i])
                          : vidk_enc_receive(e, &rec, &maps, &r->info[i]);
        if (err < 0) break;
        uint64_t h = 0xcbf29ce484222325ull;
        r->shash[i] = r->info[i].stream ? fnv(h, r->info[i].stream, r->info[i].stream_size) : 0;
        for (int pl = 0; pl < 3 && !stream_only; pl++) {
            const int w = pl ? rec.w / 2 : rec.w, hh = pl ? rec.h / 2 : rec.h;
            for (int y = 0; y < hh; y++)
                h = fnv(h, (uint8_t *)rec.data[pl] + (ptrdiff_t)y * rec.stride[pl], (size_t)w);
            h = fnv(h, maps.levels[pl], nl[pl] * sizeof(int16_t));
        }
        if (!stream_only) {
            h = fnv(h, maps.mv, nmv * sizeof(*maps.mv));
            h = fnv(h, maps.energy, nen * sizeof(*maps.energy));
        }
        /* the H.264 stream: the same bytes on every backend */
        CHECK((q.codec == VIDK_CODEC_H264) == (r->info[i].stream && r->info[i].stream_size));
        if (r->info[i].stream) h = fnv(h, r->info[i].stream, r->info[i].stream_size);
        r->info[i].stream = NULL; /* valid only until the next receive */
        r->hash[i] = h;
    }
    vidk_picture_free(&rec);
    free(maps.mv);
    free(maps.energy);
    for (int k = 0; k < 3; k++)
        free(maps.levels[k]);
    vidk_enc_close(&e);
    vidk_close(&ctx);
    return err;
}

static int encode(VidkBackend be, int core, const VidkEncParams *p, VidkPicture *frames, int n,
                  Result *r) {
    return encode_ex(be, core, p, frames, n, r, 0);
}

/* cuda's H.264 stream alone against c's, through each of its paths: the entropy coder on the
 * device (src/cuda/stream.cu, CAVLC and CABAC, B slices too; no frame on the host), the host
 * fallback when a macroblock does not fit its slot (VIDK_STREAM_SLOT_BYTES=64: some frames at
 * QP 0, with CABAC at QP 37), the host writer (VIDK_STREAM_HOST=1: every frame). */
static void cuda_stream_paths(const char *what, const VidkEncParams *p, VidkPicture *frames,
                              int n, const Result *ref) {
    static const struct {
        const char *name, *var, *val;
    } paths[] = {{"device", NULL, NULL},
                 {"slot overflow", "VIDK_STREAM_SLOT_BYTES", "64"},
                 {"host writer", "VIDK_STREAM_HOST", "1"}};
    for (int k = 0; k < 3; k++) {
        Result r;
        if (paths[k].var) CHECK(setenv(paths[k].var, paths[k].val, 1) == 0);
        host_coded = 0;
        const int err = encode_ex(VIDK_BACKEND_CUDA, 0, p, frames, n, &r, 1);
        if (paths[k].var) CHECK(unsetenv(paths[k].var) == 0);
        CHECK(err == 0);
        if (err < 0) continue;
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++)
            if (r.shash[i] != ref->shash[i]) bad = i;
        fprintf(stderr,
                "%s %s qp %d: cuda stream path \"%s\": %s (%d of %d frames coded on the "
                "host)\n",
                what, vidk_codec_name(p->codec), p->qp, paths[k].name,
                bad < 0 ? "PASS, equal to c" : "FAIL, differs from c", host_coded, n);
        CHECK(bad < 0);
        if (k == 0) CHECK(host_coded == 0);
        /* slot overflow: CAVLC at QP 0; CABAC (32 bins a macroblock) at QP 37 */
        if (k == 1 && (p->qp == 0 || (p->cabac && p->qp == 37))) CHECK(host_coded > 0);
        if (k == 2) CHECK(host_coded == n);
    }
}

static void same(const char *what, const Result *a, const Result *b) {
    for (int i = 0; i < a->n; i++) {
        const VidkEncFrameInfo *x = &a->info[i], *y = &b->info[i];
        int ok = a->hash[i] == b->hash[i] && x->intra == y->intra && x->bits == y->bits &&
                 x->bits_mv == y->bits_mv && x->bits_mode == y->bits_mode &&
                 !memcmp(x->sse, y->sse, sizeof(x->sse)) &&
                 !memcmp(x->nnz, y->nnz, sizeof(x->nnz)) &&
                 !memcmp(x->parts, y->parts, sizeof(x->parts));
        if (!ok) {
            fprintf(stderr, "%s: frame %d differs (hash %016llx / %016llx, sse %llu / %llu)\n",
                    what, i, (unsigned long long)a->hash[i], (unsigned long long)b->hash[i],
                    (unsigned long long)x->sse[0], (unsigned long long)y->sse[0]);
            CHECK(ok);
            return;
        }
    }
}

static double mean_psnr_y(const Result *r) {
    double s = 0;
    for (int i = 0; i < r->n; i++)
        s += r->info[i].psnr[0];
    return s / r->n;
}

/* Random samples with saturated stripes and flat blocks: extremes of every stage. */
static void noise_frames(VidkPicture *f, int n, int w, int h, uint32_t *seed) {
    for (int i = 0; i < n; i++) {
        CHECK(vidk_picture_alloc(&f[i], w, h, VIDK_CHROMA_420, 8, 0) == 0);
        for (int p = 0; p < 3; p++) {
            const int pw = p ? w / 2 : w, ph = p ? h / 2 : h;
            for (int y = 0; y < ph; y++)
                for (int x = 0; x < pw; x++) {
                    uint8_t *d = (uint8_t *)f[i].data[p] + (ptrdiff_t)y * f[i].stride[p] + x;
                    const uint32_t r = test_rand(seed);
                    *d = ((x / 8 + y / 8 + i) % 5 == 0) ? ((x ^ y) & 4 ? 255 : 0)
                         : ((x / 16 + i) % 3 == 0)      ? (uint8_t)(128 + i * 7)
                                                        : (uint8_t)(r >> 24);
                }
        }
    }
}

/* Every configuration on the backends to compare; reference = c. */
static void compare_set(const char *what, VidkPicture *frames, int n, int cuda) {
    static const int qps[] = {0, 22, 37, 51};
    for (int codec = 0; codec < VIDK_CODEC_COUNT; codec++)
        for (size_t qi = 0; qi < sizeof(qps) / sizeof(qps[0]); qi++) {
            VidkEncParams p;
            vidk_enc_default_params(&p);
            p.codec = (VidkCodec)codec;
            p.qp = qps[qi];
            p.range = 6;
            p.keyint = 3;
            p.slices = qi == 1 || qi == 2 ? 3 : 1; /* they change intra prediction (H.264) */
            /* H.264's deblocking filter at QP 22 (with the slices), 37 and 51 (the strongest:
             * alpha 255); QP 0 filters nothing (indexA < 16) */
            p.deblock = p.codec == VIDK_CODEC_H264 && qi > 0;
            p.cabac = p.codec == VIDK_CODEC_H264 && qi >= 2; /* QP 37, 51 */
            /* Intra_4x4 at QP 0 and 37 (3 slices, CABAC), Intra_8x8 at QP 0 and 51 */
            p.intra4x4 = p.codec == VIDK_CODEC_H264 && (qi == 0 || qi == 2);
            p.intra8x8 = p.codec == VIDK_CODEC_H264 && (qi == 0 || qi == 3);
            /* B-frames: 3 at QP 0 (CAVLC, I_NxN), 2 at QP 22 (3 slices, CAVLC), 3 at QP 51
             * (CABAC) */
            p.bframes = p.codec == VIDK_CODEC_H264 ? (qi == 1 ? 2 : qi != 2 ? 3 : 0) : 0;
            if (p.bframes) p.keyint = qi ? 5 : 9;
            p.b_adapt = qi == 3; /* the fixed pattern at QP 0 and 22, adaptive at 51 */
            p.b_pyramid = qi == 0 || qi == 3; /* reference B frames at QP 0 and 51 */
            Result ref, r;
            char name[160];
            CHECK(encode(VIDK_BACKEND_C, 0, &p, frames, n, &ref) == 0);
            if (cuda) {
                snprintf(name, sizeof(name), "%s %s qp %d: cuda vs c", what,
                         vidk_codec_name(p.codec), p.qp);
                CHECK(encode(VIDK_BACKEND_CUDA, 0, &p, frames, n, &r) == 0);
                same(name, &ref, &r);
                if (p.codec == VIDK_CODEC_H264) cuda_stream_paths(what, &p, frames, n, &ref);
                continue;
            }
            if (p.codec == VIDK_CODEC_H264) { /* the stream alone: the same bytes */
                CHECK(encode_ex(VIDK_BACKEND_C, 0, &p, frames, n, &r, 1) == 0);
                for (int i = 0; i < n; i++)
                    CHECK(r.shash[i] == ref.shash[i]);
            }
            snprintf(name, sizeof(name), "%s %s qp %d: core path vs c", what,
                     vidk_codec_name(p.codec), p.qp);
            CHECK(encode(VIDK_BACKEND_C, 1, &p, frames, n, &r) == 0);
            same(name, &ref, &r);
            if (vidk_backend_available(VIDK_BACKEND_SIMD)) {
                snprintf(name, sizeof(name), "%s %s qp %d: simd vs c", what,
                         vidk_codec_name(p.codec), p.qp);
                CHECK(encode(VIDK_BACKEND_SIMD, 0, &p, frames, n, &r) == 0);
                same(name, &ref, &r);
            }
            snprintf(name, sizeof(name), "%s %s qp %d: threads vs c", what,
                     vidk_codec_name(p.codec), p.qp);
            CHECK(encode(VIDK_BACKEND_THREADS, 0, &p, frames, n, &r) == 0);
            same(name, &ref, &r);
            /* Sanity: a low QP reconstructs closely. */
            if (p.qp == 22)
                for (int i = 0; i < n; i++)
                    CHECK(ref.info[i].psnr[0] > 30.0);
        }
}

/* PSNR rises as QP falls on a real clip; c and the other backend agree. */
static void real_clip(const char *dir, int cuda) {
    VidkPicture frames[MAX_FRAMES];
    const int n = clip_frames(frames, 6, dir, "akiyo_176x144_30fps_30f.y4m");
    if (n < 6) {
        char what[1100];
        snprintf(what, sizeof(what), "real clip %s/akiyo_176x144_30fps_30f.y4m not readable",
                 dir);
        test_video_missing(what);
        if (n > 0) free_frames(frames, n);
        return;
    }
    for (int codec = 0; codec < VIDK_CODEC_COUNT; codec++) {
        double last = 0;
        for (int qp = 42; qp >= 22; qp -= 10) {
            VidkEncParams p;
            vidk_enc_default_params(&p);
            p.codec = (VidkCodec)codec;
            p.qp = qp;
            p.range = 16;
            p.deblock = p.codec == VIDK_CODEC_H264 && qp == 32;
            /* B-frames on the still clip (the look-ahead places them): 2 at QP 32, 1 with
             * CABAC at QP 22 */
            p.bframes = p.codec == VIDK_CODEC_H264 && qp != 42 ? (qp == 32 ? 2 : 1) : 0;
            p.cabac = p.codec == VIDK_CODEC_H264 && qp == 22;
            p.b_pyramid = qp == 32; /* reference B frames */
            Result a, b;
            char name[128];
            snprintf(name, sizeof(name), "akiyo %s qp %d: %s vs c", vidk_codec_name(p.codec),
                     qp, cuda ? "cuda" : "threads");
            CHECK(encode(VIDK_BACKEND_C, 0, &p, frames, n, &a) == 0);
            CHECK(encode(cuda ? VIDK_BACKEND_CUDA : VIDK_BACKEND_THREADS, 0, &p, frames, n,
                         &b) == 0);
            same(name, &a, &b);
            if (p.bframes) { /* B frames were placed: the coding order left the display order */
                int moved = 0;
                for (int i = 0; i < n; i++)
                    moved |= a.info[i].index != i;
                CHECK(moved);
            }
            const double ps = mean_psnr_y(&a);
            fprintf(stderr, "akiyo %s qp %d: PSNR-Y %.2f dB, %llu bits in frame 1\n",
                    vidk_codec_name(p.codec), qp, ps, (unsigned long long)a.info[1].bits);
            CHECK(ps > last + 1.0);
            last = ps;
        }
    }
    free_frames(frames, n);
}

static void api_errors(void) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = VIDK_BACKEND_C;
    VidkContext *ctx = NULL;
    VidkEncoder *e = NULL;
    VidkEncParams p;
    VidkEncFrameInfo info;
    CHECK(vidk_open(&ctx, &s) == 0);
    vidk_enc_default_params(&p);
    CHECK(vidk_enc_open(ctx, &e, &p, 17, 32) == VIDK_ERR(EINVAL));
    CHECK(vidk_enc_open(ctx, &e, &p, 8, 8) == VIDK_ERR(EINVAL));
    CHECK(!e);
    p.qp = 52;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.qp = 30, p.range = VIDK_ME_MAX_RANGE + 1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.range = 4, p.codec = VIDK_CODEC_COUNT;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    CHECK(p.deblock == -1);                   /* the codec's default */
    p.codec = VIDK_CODEC_H264, p.deblock = 2; /* -1, 0 or 1 */
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.deblock = -2;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.codec = VIDK_CODEC_HEVC, p.deblock = 1; /* H.264 only */
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(ENOSYS));
    CHECK(!e);
    p.deblock = -1, p.intra4x4 = 1; /* Intra_4x4: H.264 only; 0 or 1 */
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(ENOSYS));
    p.codec = VIDK_CODEC_H264, p.intra4x4 = 2;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.intra4x4 = 0, p.intra8x8 = -1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.codec = VIDK_CODEC_HEVC, p.intra8x8 = 1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(ENOSYS));
    p.intra8x8 = 0;
    CHECK(!e);
    p.codec = VIDK_CODEC_HEVC, p.intra4x4 = 0; /* HEVC's default: no deblocking */
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == 0);
    vidk_enc_close(&e);
    p.codec = VIDK_CODEC_H264, p.deblock = 0;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == 0);
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == VIDK_ERR(EAGAIN));
    VidkPicture a, b;
    CHECK(vidk_picture_alloc(&a, 32, 32, VIDK_CHROMA_420, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&b, 32, 32, VIDK_CHROMA_444, 8, 0) == 0);
    CHECK(vidk_enc_send(e, &b) == VIDK_ERR(EINVAL));
    VidkEncGeometry g;
    vidk_enc_geometry(e, &g);
    CHECK(g.max_pending == 3);
    for (int k = 0; k < g.max_pending; k++)
        CHECK(vidk_enc_send(e, &a) == 0);
    CHECK(vidk_enc_send(e, &a) == VIDK_ERR(EAGAIN));
    VidkEncMaps m;
    memset(&m, 0, sizeof(m));
    VidkMv mv[64];
    m.mv = mv;
    CHECK(vidk_enc_receive(e, NULL, &m, &info) == VIDK_ERR(EINVAL)); /* MVs not asked for */
    CHECK(vidk_enc_receive(e, &b, NULL, &info) == VIDK_ERR(EINVAL)); /* wrong format */
    CHECK(vidk_enc_receive(e, &a, NULL, &info) == 0);
    CHECK(info.index == 0 && info.intra == 1);
    for (int k = 1; k < g.max_pending; k++) {
        CHECK(vidk_enc_receive(e, NULL, NULL, &info) == 0);
        CHECK(info.index == k && info.intra == 0);
    }
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == VIDK_ERR(EAGAIN));
    CHECK(vidk_enc_send(e, NULL) == 0); /* the end: no picture after it */
    CHECK(vidk_enc_send(e, &a) == VIDK_ERR(EINVAL));
    vidk_enc_close(&e);
    /* B-frames: 0..VIDK_ENC_MAX_BFRAMES, H.264; the coding order; the end of the input */
    p.bframes = VIDK_ENC_MAX_BFRAMES + 1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.bframes = -1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.bframes = 2, p.b_adapt = 2;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.b_adapt = 1;
    p.codec = VIDK_CODEC_HEVC, p.deblock = -1, p.bframes = 1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(ENOSYS));
    CHECK(!e);
    p.codec = VIDK_CODEC_H264, p.bframes = 2, p.keyint = 5;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == 0);
    vidk_enc_geometry(e, &g);
    CHECK(g.max_pending == 5);
    /* display 0..6 with keyint 5: I0 P3 B1 B2 P4 I5, then (the end) P6 */
    static const int order[7] = {0, 3, 1, 2, 4, 5, 6};
    int sent = 0, got = 0;
    for (; sent < 3; sent++) /* the picture is copied: one buffer for all */
        CHECK(vidk_enc_send(e, &a) == 0);
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == 0 && info.index == 0 && info.intra);
    got++;
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == VIDK_ERR(EAGAIN)); /* needs frame 3 */
    for (; sent < 7 && sent - got < g.max_pending; sent++)
        CHECK(vidk_enc_send(e, &a) == 0);
    CHECK(sent == 6 && vidk_enc_send(e, &a) == VIDK_ERR(EAGAIN)); /* max_pending waiting */
    while (got < 5) {
        CHECK(vidk_enc_receive(e, NULL, NULL, &info) == 0);
        CHECK(info.index == order[got] && info.intra == (order[got] % 5 == 0));
        got++;
    }
    for (; sent < 7; sent++)
        CHECK(vidk_enc_send(e, &a) == 0);
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == 0 && info.index == 5 && info.intra);
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == VIDK_ERR(EAGAIN)); /* 6: not the end yet */
    CHECK(vidk_enc_send(e, NULL) == 0);
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == 0 && info.index == 6 && !info.intra);
    CHECK(vidk_enc_receive(e, NULL, NULL, &info) == VIDK_ERR(EAGAIN));
    vidk_enc_close(&e);
    /* b_pyramid: 3 fixed B-frames, display 0..10: I0 P4 B2 (the reference one, coded first)
     * B1 B3 P8 B6 B5 B7, then (the end) P10 B9 (a run of one: not a reference); b_pyramid
     * outside 0..1 refused, and where no run of two exists (bframes 1) ignored */
    p.bframes = 3, p.keyint = 0, p.b_adapt = 0, p.b_pyramid = 2;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == VIDK_ERR(EINVAL));
    p.b_pyramid = 1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == 0);
    static const int porder[11] = {0, 4, 2, 1, 3, 8, 6, 5, 7, 10, 9},
                     pb[11] = {0, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1};
    sent = got = 0;
    while (got < 11) {
        int r = sent < 11 ? vidk_enc_send(e, &a) : VIDK_ERR(EAGAIN);
        if (r == 0 && ++sent == 11) CHECK(vidk_enc_send(e, NULL) == 0);
        if (r == 0) continue;
        CHECK(r == VIDK_ERR(EAGAIN));
        if ((r = vidk_enc_receive(e, NULL, NULL, &info)) == VIDK_ERR(EAGAIN) && sent < 11)
            continue;
        CHECK(r == 0);
        if (r) break;
        CHECK(info.index == porder[got] && info.bframe == pb[got]);
        got++;
    }
    vidk_enc_close(&e);
    p.bframes = 1;
    CHECK(vidk_enc_open(ctx, &e, &p, 32, 32) == 0);
    vidk_enc_close(&e);
    p.bframes = 0, p.keyint = 0, p.b_pyramid = 0, p.b_adapt = 1;
    CHECK(!e);
    vidk_enc_close(&e);
    vidk_picture_free(&a);
    vidk_picture_free(&b);
    CHECK(vidk_codec_from_name("hevc") == VIDK_CODEC_HEVC && vidk_codec_from_name("x") < 0);
    CHECK(vidk_enc_lambda(30) == 7 && vidk_enc_lambda(0) == 0);
    vidk_close(&ctx);
}

/* B frames' implicit weights (8.4.3 with 8.4.1.2.3), worked by hand: a B frame 1 and 2
 * frames after its list-0 anchor, the list-1 anchor 3 frames after it (POC x 2): tx = 16387 /
 * 6 = 2731, DSF = (2 x 2731 + 32) >> 6 = 85 -> (43, 21) and (4 x 2731 + 32) >> 6 = 171 ->
 * (22, 42); halfway: 32, 32; td 0 or DSF >> 2 beyond 128: the defaults. */
static void implicit_weights(void) {
    static const int cases[][4] = {{2, 6, 43, 21}, {4, 6, 22, 42}, {2, 4, 32, 32},
                                   {6, 8, 16, 48}, {2, 0, 32, 32}, {127, 2, 32, 32}};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        int w0, w1;
        enc_h264_implicit_w(cases[k][0], cases[k][1], &w0, &w1);
        CHECK(w0 == cases[k][2] && w1 == cases[k][3]);
    }
}

/* The closed-form HEVC matrix of enc_core.h is the standard's table. */
static void hevc_matrix(void) {
    for (int k = 0; k < 32; k++)
        for (int n = 0; n < 32; n++)
            CHECK_EQ_U((unsigned)(ec_hevc_t32(k, n) + 128),
                       (unsigned)(vidk_hevc_t32[k][n] + 128));
}

int main(int argc, char **argv) {
    int cuda = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cuda"))
            cuda = 1;
        else
            dir = argv[i];
    }
    if (cuda && !vidk_backend_available(VIDK_BACKEND_CUDA)) return test_no_gpu("test_encode");
    uint32_t seed = test_seed();
    if (!cuda) {
        api_errors();
        hevc_matrix();
        implicit_weights();
    }
    VidkPicture f[MAX_FRAMES];
    CHECK(gen_frames(f, 4, 200, 120) == 0);
    compare_set("generated 200x120", f, 4, cuda);
    free_frames(f, 4);
    noise_frames(f, 3, 64, 48, &seed);
    compare_set("noise 64x48", f, 3, cuda);
    free_frames(f, 3);
    if (dir)
        real_clip(dir, cuda);
    else
        test_video_missing("no clip folder given: real-clip part not run");
    return test_finish("test_encode");
}
