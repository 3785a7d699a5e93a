/* GPU test of the CUDA backend: device info, context open/close and its errors, streams,
 * buffer slots, stage timing, and vidk_sad_frame on the cuda backend against the c
 * backend (bit-exact) and against an independent model of the documented semantics, on
 * random, extreme, odd-stride and real pictures, every block size, odd picture sizes
 * and displacements far outside the picture.
 *
 * Exits 77 (ctest SKIP) when no CUDA device is present, unless VIDK_REQUIRE_GPU=1 (the
 * device check sets it: there a skip is a failure). Real clips come from VIDK_VIDEO_DIR
 * or the configured shared video folder; a VIDK_VIDEO_DIR without any readable clip
 * fails. VIDK_UNDER_SANITIZER=1 leaves out the checks that make CUDA API calls fail on
 * purpose (compute-sanitizer reports those as errors) and runs fewer displacements. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_backend.h"
#include "test_util.h"
#include "vidkern/vidkern.h"

#ifndef VIDK_TEST_VIDEO_DIR
#define VIDK_TEST_VIDEO_DIR ""
#endif

static uint32_t seed;
static int under_sanitizer;
static long n_compared;

static int rnd(int lo, int hi) {
    return lo + (int)(test_rand(&seed) % (uint32_t)(hi - lo + 1));
}

/* ---- logger capture ---------------------------------------------------------------- */

typedef struct LogCap {
    int n_errors;
    char last[1024];
} LogCap;

static void log_cb(void *cookie, VidkLogLevel level, const char *fmt, va_list ap) {
    LogCap *c = cookie;
    vsnprintf(c->last, sizeof(c->last), fmt, ap);
    if (level == VIDK_LOG_ERROR) c->n_errors++;
    fprintf(stderr, "  [vidkern log %d] %s\n", (int)level, c->last);
}

static int open_ctx(VidkContext **ctx, VidkBackend b, int device, int streams, LogCap *cap) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = b;
    s.cuda_device = device;
    s.cuda_streams = streams;
    if (cap) {
        memset(cap, 0, sizeof(*cap));
        s.logger.cookie = cap;
        s.logger.callback = log_cb;
        s.log_level = VIDK_LOG_INFO;
    }
    return vidk_open(ctx, &s);
}

/* ---- pictures ------------------------------------------------------------------------ */

static uint8_t *px(const VidkPicture *p, int x, int y) {
    return (uint8_t *)p->data[0] + y * p->stride[0] + x;
}

static VidkPicture new_pic(int w, int h, int pad) {
    VidkPicture p;
    if (vidk_picture_alloc(&p, w, h, VIDK_CHROMA_400, 8, pad) < 0) {
        fprintf(stderr, "out of memory for a %dx%d picture\n", w, h);
        exit(1);
    }
    return p;
}

static void fill_random(VidkPicture *p) {
    for (int y = 0; y < p->h; y++)
        for (int x = 0; x < p->w; x++)
            *px(p, x, y) = (uint8_t)test_rand(&seed);
}

static void fill_const(VidkPicture *p, uint8_t v) {
    for (int y = 0; y < p->h; y++)
        memset(px(p, 0, y), v, (size_t)p->w);
}

/* ref = cur with a few random changes: realistic small SADs next to large ones. */
static void fill_similar(VidkPicture *dst, const VidkPicture *src) {
    for (int y = 0; y < dst->h; y++)
        for (int x = 0; x < dst->w; x++) {
            int v = *px(src, x, y) + (int)(test_rand(&seed) % 7) - 3;
            *px(dst, x, y) = (uint8_t)TCLIP(v, 0, 255);
        }
}

/* ---- the model: vidk_sad_frame's documented semantics, written independently ----- */

static uint32_t model_block(const VidkPicture *cur, const VidkPicture *ref, int mvx, int mvy,
                            int bw, int bh, int bx, int by) {
    const int w = cur->w, h = cur->h;
    uint32_t s = 0;
    for (int y = 0; y < bh; y++)
        for (int x = 0; x < bw; x++) {
            const int cx = TCLIP(bx * bw + x, 0, w - 1), cy = TCLIP(by * bh + y, 0, h - 1);
            const int rx = TCLIP(bx * bw + x + mvx, 0, w - 1);
            const int ry = TCLIP(by * bh + y + mvy, 0, h - 1);
            const int d = *px(cur, cx, cy) - *px(ref, rx, ry);
            s += (uint32_t)(d < 0 ? -d : d);
        }
    return s;
}

/* ---- one comparison: cuda vs c (all blocks) vs model (sampled blocks) ---------------- */

static VidkContext *g_gpu, *g_c;

static void compare(const VidkPicture *cur, const VidkPicture *ref, int mvx, int mvy,
                    VidkBlockSize bs, const char *what) {
    const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
    const int nbx = (cur->w + bw - 1) / bw, nby = (cur->h + bh - 1) / bh;
    const size_t n = (size_t)nbx * (size_t)nby;
    uint32_t *a = malloc((n + 4) * sizeof(*a)), *b = malloc(n * sizeof(*b));
    if (!a || !b) exit(1);
    /* Poison the output and put a canary past its end. */
    for (size_t i = 0; i < n + 4; i++)
        a[i] = 0xa5a5a5a5u;
    int e1 = vidk_sad_frame(g_gpu, cur, ref, mvx, mvy, bs, a);
    int e2 = vidk_sad_frame(g_c, cur, ref, mvx, mvy, bs, b);
    n_compared++;
    if (e1 || e2) {
        fprintf(stderr, "%s %dx%d %s mv (%d,%d): cuda %d, c %d\n", what, cur->w, cur->h,
                vidk_block_name(bs), mvx, mvy, e1, e2);
        CHECK(e1 == 0 && e2 == 0);
        goto done;
    }
    for (size_t i = n; i < n + 4; i++)
        CHECK_EQ_U(a[i], 0xa5a5a5a5u);
    int bad = 0;
    for (size_t i = 0; i < n && bad < 5; i++)
        if (a[i] != b[i]) {
            fprintf(stderr,
                    "MISMATCH %s %dx%d %s mv (%d,%d) block (%d,%d): cuda %u c %u model %u "
                    "(seed %u)\n",
                    what, cur->w, cur->h, vidk_block_name(bs), mvx, mvy, (int)(i % nbx),
                    (int)(i / nbx), a[i], b[i],
                    model_block(cur, ref, mvx, mvy, bw, bh, (int)(i % nbx), (int)(i / nbx)),
                    seed);
            bad++;
        }
    CHECK(bad == 0);
    /* The c backend against the model: the corners and 64 random blocks. */
    const size_t picks[4] = {0, (size_t)nbx - 1, n - (size_t)nbx, n - 1};
    for (int k = 0; k < 68; k++) {
        const size_t i = k < 4 ? picks[k] : test_rand(&seed) % n;
        const int bx = (int)(i % nbx), by = (int)(i / nbx);
        const uint32_t m = model_block(cur, ref, mvx, mvy, bw, bh, bx, by);
        if (m != b[i]) {
            fprintf(stderr, "MODEL MISMATCH %s %dx%d %s mv (%d,%d) block %zu: c %u model %u\n",
                    what, cur->w, cur->h, vidk_block_name(bs), mvx, mvy, i, b[i], m);
            CHECK(m == b[i]);
            break;
        }
    }
done:
    free(a);
    free(b);
}

/* Displacements: near, block-size multiples, odd, random, and far outside (+-4096). */
static int make_mvs(int w, int h, int mv[][2], int many) {
    int n = 0;
    static const int fixed[][2] = {{0, 0},         {1, 0},        {0, 1},     {-1, -1},
                                   {3, -2},        {-5, 7},       {16, -16},  {4096, 4096},
                                   {-4096, -4096}, {4096, -4096}, {-4096, 3}, {2, 4096}};
    const int nf = many ? 12 : 6;
    for (int i = 0; i < nf; i++)
        mv[n][0] = fixed[i][0], mv[n][1] = fixed[i][1], n++;
    if (!many) {
        mv[n][0] = 4096, mv[n][1] = -4096, n++;
        mv[n][0] = rnd(-40, 40), mv[n][1] = rnd(-40, 40), n++;
        return n;
    }
    mv[n][0] = w, mv[n][1] = h, n++; /* exactly one picture away */
    mv[n][0] = -w - 1, mv[n][1] = 1 - h, n++;
    for (int i = 0; i < 3; i++)
        mv[n][0] = rnd(-70, 70), mv[n][1] = rnd(-70, 70), n++;
    mv[n][0] = rnd(-4096, 4096), mv[n][1] = rnd(-4096, 4096), n++;
    return n;
}

/* ---- tests --------------------------------------------------------------------------- */

static int test_info(void) {
    const int n = vidk_cuda_device_count();
    CHECK(n >= 1);
    CHECK(vidk_backend_available(VIDK_BACKEND_CUDA));
    VidkDeviceInfo di;
    for (int d = 0; d < n; d++) {
        CHECK(vidk_cuda_device_info(d, &di) == 0);
        fprintf(stderr,
                "device %d: %s, compute %d.%d, %d SMs, %zu MiB, L2 %zu KiB, %d kHz, "
                "driver %d, runtime %d\n",
                d, di.name, di.major, di.minor, di.multiprocessors, di.global_mem >> 20,
                di.l2_bytes >> 10, di.clock_khz, di.driver_version, di.runtime_version);
        CHECK(di.ordinal == d);
        CHECK(di.name[0] != '\0' && memchr(di.name, '\0', sizeof(di.name)) != NULL);
        CHECK(di.major >= 7);
        CHECK(di.multiprocessors > 0);
        CHECK(di.global_mem > ((size_t)256 << 20));
        CHECK(di.l2_bytes > 0);
        CHECK(di.clock_khz > 0);
        CHECK(di.driver_version > 0);
        CHECK(di.runtime_version >= 11000);
    }
    CHECK(vidk_cuda_device_info(-1, &di) == VIDK_ERR_NODEV);
    CHECK(vidk_cuda_device_info(n, &di) == VIDK_ERR_NODEV);
    CHECK(vidk_cuda_device_info(0, NULL) == VIDK_ERR(EINVAL));
    return n;
}

static void test_open(int n_dev) {
    VidkContext *ctx = (VidkContext *)&ctx; /* must be reset to NULL on failure */
    LogCap cap;
    /* A device that does not exist: an error code and a message, never a crash. */
    CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, n_dev, 4, &cap) == VIDK_ERR_NODEV);
    CHECK(ctx == NULL);
    CHECK(cap.n_errors >= 1);
    CHECK(strstr(cap.last, "does not exist") != NULL || strstr(cap.last, "not available"));
    CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, 1000, 4, &cap) == VIDK_ERR_NODEV);
    CHECK(ctx == NULL);
    /* AUTO with a missing device falls back to the threads backend. */
    CHECK(open_ctx(&ctx, VIDK_BACKEND_AUTO, n_dev + 3, 4, &cap) == 0);
    CHECK(ctx && vidk_get_backend(ctx) == VIDK_BACKEND_THREADS);
    CHECK(vidk_cuda_stream_count(ctx) == 0);
    CHECK(vidk_cuda_stream(ctx, 0) == NULL);
    vidk_close(&ctx);
    /* AUTO with a device is cuda. */
    CHECK(open_ctx(&ctx, VIDK_BACKEND_AUTO, 0, 4, NULL) == 0);
    CHECK(ctx && vidk_get_backend(ctx) == VIDK_BACKEND_CUDA);
    vidk_close(&ctx);
    CHECK(ctx == NULL);
    /* Stream counts out of range are bad settings. */
    CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, 0, 0, NULL) == VIDK_ERR(EINVAL));
    CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, 0, 17, NULL) == VIDK_ERR(EINVAL));
    /* Every stream count: distinct non-NULL streams, NULL outside the range. */
    for (int ns = 1; ns <= 16; ns++) {
        CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, n_dev - 1, ns, NULL) == 0);
        if (!ctx) continue;
        CHECK(vidk_get_backend(ctx) == VIDK_BACKEND_CUDA);
        CHECK(vidk_get_threads(ctx) == 1);
        CHECK(vidk_cuda_stream_count(ctx) == ns);
        for (int i = 0; i < ns; i++) {
            CHECK(vidk_cuda_stream(ctx, i) != NULL);
            for (int j = 0; j < i; j++)
                CHECK(vidk_cuda_stream(ctx, i) != vidk_cuda_stream(ctx, j));
        }
        CHECK(vidk_cuda_stream(ctx, -1) == NULL);
        CHECK(vidk_cuda_stream(ctx, ns) == NULL);
        vidk_close(&ctx);
        CHECK(ctx == NULL);
    }
    /* Every device opens (on multi-GPU machines too) and runs a call. */
    for (int d = 0; d < n_dev; d++) {
        CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, d, 2, NULL) == 0);
        if (!ctx) continue;
        VidkPicture a = new_pic(37, 21, 0), b = new_pic(37, 21, 0);
        fill_const(&a, 9);
        fill_const(&b, 200);
        uint32_t s[5 * 3]; /* ceil(37 / 8) x ceil(21 / 8) */
        CHECK(vidk_sad_frame(ctx, &a, &b, 3, -2, VIDK_BLOCK_8x8, s) == 0);
        for (int i = 0; i < 15; i++)
            CHECK_EQ_U(s[i], 191u * 64);
        vidk_picture_free(&a);
        vidk_picture_free(&b);
        vidk_close(&ctx);
    }
}

static void test_slots(void) {
    VidkContext *ctx = NULL, *cctx = NULL;
    LogCap cap;
    void *p = NULL, *q = NULL;
    CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, 0, 4, &cap) == 0);
    if (!ctx) return;
    /* Bad arguments. */
    CHECK(vidk_cuda_device_buffer(ctx, -1, 16, &p) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_device_buffer(ctx, VIDK_SLOT_COUNT, 16, &p) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_device_buffer(ctx, 0, 0, &p) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_device_buffer(ctx, 0, 16, NULL) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_host_buffer(ctx, -1, 16, &p) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_host_buffer(ctx, VIDK_SLOT_COUNT, 16, &p) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_host_buffer(ctx, 0, 0, &p) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_host_buffer(ctx, 0, 16, NULL) == VIDK_ERR(EINVAL));
    CHECK(open_ctx(&cctx, VIDK_BACKEND_C, 0, 4, NULL) == 0);
    CHECK(vidk_cuda_device_buffer(cctx, 0, 16, &p) == VIDK_ERR_NODEV);
    CHECK(vidk_cuda_host_buffer(cctx, 0, 16, &p) == VIDK_ERR_NODEV);
    vidk_close(&cctx);

    /* Growth and reuse, in every slot (the last slot too), device and host. */
    const int slots[] = {0,
                         1,
                         2,
                         VIDK_SLOT_ME_FIRST,
                         VIDK_SLOT_H264_FIRST,
                         VIDK_SLOT_HEVC_FIRST,
                         VIDK_SLOT_ENC_FIRST,
                         VIDK_SLOT_COUNT - 1};
    for (size_t k = 0; k < sizeof(slots) / sizeof(slots[0]); k++) {
        const int sl = slots[k];
        for (int host = 0; host < 2; host++) {
            int (*get)(VidkContext *, int, size_t, void **) =
                host ? vidk_cuda_host_buffer : vidk_cuda_device_buffer;
            CHECK(get(ctx, sl, 1000, &p) == 0);
            CHECK(p != NULL && ((uintptr_t)p & 255) == 0);
            CHECK(get(ctx, sl, 1, &q) == 0 && q == p); /* smaller: same buffer */
            CHECK(get(ctx, sl, 1000, &q) == 0 && q == p);
            CHECK(get(ctx, sl, 1024, &q) == 0 && q == p); /* within the 256 rounding */
            CHECK(get(ctx, sl, 3 << 20, &q) == 0);        /* grows */
            CHECK(q != NULL && ((uintptr_t)q & 255) == 0);
            if (host) {
                /* The whole pinned buffer is ours to write and read back. */
                memset(q, 0x5a, 3 << 20);
                CHECK(((uint8_t *)q)[0] == 0x5a && ((uint8_t *)q)[(3 << 20) - 1] == 0x5a);
            }
            CHECK(get(ctx, sl, 2 << 20, &p) == 0 && p == q); /* no shrink */
        }
    }
    /* Slots and sad_frame share a context: grown SAD slots keep working. */
    CHECK(vidk_cuda_device_buffer(ctx, VIDK_SLOT_SAD_CUR, 64 << 20, &p) == 0);
    CHECK(vidk_cuda_host_buffer(ctx, VIDK_SLOT_SAD_OUT, 1 << 20, &p) == 0);

    if (!under_sanitizer) {
        /* Out of memory: an error code and a logged CUDA message; the slot is empty and
         * the context keeps working. */
        const size_t huge = (size_t)1 << 50;
        cap.n_errors = 0;
        CHECK(vidk_cuda_device_buffer(ctx, 5, huge, &p) == VIDK_ERR(ENOMEM));
        CHECK(p == NULL);
        CHECK(cap.n_errors == 1);
        CHECK(strstr(cap.last, "cudaMalloc") != NULL);
        CHECK(strstr(cap.last, "cuda_backend.cu:") != NULL);
        CHECK(vidk_cuda_host_buffer(ctx, 5, huge, &p) == VIDK_ERR(ENOMEM));
        CHECK(p == NULL);
        CHECK(strstr(cap.last, "cudaHostAlloc") != NULL);
        /* A grown slot that then fails to grow further is empty, not stale. */
        CHECK(vidk_cuda_device_buffer(ctx, 6, 4096, &p) == 0);
        CHECK(vidk_cuda_device_buffer(ctx, 6, huge, &p) == VIDK_ERR(ENOMEM));
        CHECK(vidk_cuda_device_buffer(ctx, 6, 16, &p) == 0 && p != NULL);
        CHECK(vidk_cuda_device_buffer(ctx, 5, 4096, &p) == 0 && p != NULL);
        CHECK(vidk_cuda_host_buffer(ctx, 5, 4096, &p) == 0 && p != NULL);
    }
    VidkPicture a = new_pic(70, 33, 8), b = new_pic(70, 33, 8);
    fill_const(&a, 0);
    fill_const(&b, 255);
    uint32_t s[5 * 3];
    CHECK(vidk_sad_frame(ctx, &a, &b, 0, 0, VIDK_BLOCK_16x16, s) == 0);
    for (int i = 0; i < 15; i++)
        CHECK_EQ_U(s[i], 255u * 256);
    vidk_picture_free(&a);
    vidk_picture_free(&b);
    vidk_close(&ctx);
}

/* vidk_host_register on a device context: ranges, overlaps, limits, pictures. */
static void test_register(void) {
    VidkContext *ctx = NULL;
    LogCap cap;
    CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, 0, 2, &cap) == 0);
    if (!ctx) return;
    const size_t n = (size_t)1 << 20;
    uint8_t *a = malloc(n);
    CHECK(a != NULL);
    if (!a) {
        vidk_close(&ctx);
        return;
    }
    CHECK(!vidk_cuda_host_pinned(ctx, a, 16));
    CHECK(vidk_host_register(ctx, a, n / 2) == 0);
    CHECK(vidk_cuda_host_pinned(ctx, a, n / 2));
    CHECK(vidk_cuda_host_pinned(ctx, a + 100, 100));
    CHECK(!vidk_cuda_host_pinned(ctx, a + n / 2 - 1, 2)); /* crosses the end */
    CHECK(!vidk_cuda_host_pinned(ctx, a, 0));
    cap.n_errors = 0;
    CHECK(vidk_host_register(ctx, a + 10, 10) == VIDK_ERR(EEXIST));
    CHECK(cap.n_errors == 1);
    CHECK(vidk_host_unregister(ctx, a + 1) == VIDK_ERR(ENOENT));
    CHECK(vidk_host_unregister(ctx, a) == 0);
    CHECK(!vidk_cuda_host_pinned(ctx, a, 16));
    CHECK(vidk_host_unregister(ctx, a) == VIDK_ERR(ENOENT));
    /* The table is bounded: 64 ranges, then ENOSPC. */
    int ok = 0;
    for (int i = 0; i < VIDK_MAX_HOST_REGISTERED + 1; i++) {
        const int r = vidk_host_register(ctx, a + (size_t)i * 8192, 4096);
        if (i < VIDK_MAX_HOST_REGISTERED)
            ok += r == 0;
        else
            CHECK(r == VIDK_ERR(ENOSPC));
    }
    CHECK(ok == VIDK_MAX_HOST_REGISTERED);
    for (int i = 0; i < VIDK_MAX_HOST_REGISTERED; i++)
        CHECK(vidk_host_unregister(ctx, a + (size_t)i * 8192) == 0);
    /* A picture: every plane (with padding) is inside the registered range. */
    VidkPicture p;
    CHECK(vidk_picture_alloc(&p, 1920, 1080, VIDK_CHROMA_420, 8, 32) == 0);
    CHECK(vidk_picture_register(ctx, &p) == 0);
    CHECK(vidk_cuda_host_pinned(ctx, (uint8_t *)p.data[2] + 539 * p.stride[2], 960));
    CHECK(vidk_cuda_host_pinned(ctx, (uint8_t *)p.data[0] - 32 * p.stride[0] - 32, 64));
    /* Left registered on purpose: vidk_close unpins it. */
    /* Small pictures allocated one after the other, and small arrays between them
     * registered as a set (rounded out to pages): no two share a page, none refused. */
    VidkPicture sp[8];
    uint8_t *small[8];
    VidkHostRange in[8], out[8];
    int nout = 0;
    cap.n_errors = 0;
    for (int i = 0; i < 8; i++) {
        CHECK(vidk_picture_alloc(&sp[i], 16, 16, VIDK_CHROMA_420, 8, 0) == 0);
        small[i] = malloc(200);
        in[i] = (VidkHostRange){small[i], 200};
    }
    for (int i = 0; i < 8; i++)
        CHECK(vidk_picture_register(ctx, &sp[i]) == 0);
    CHECK(vidk_host_register_set(ctx, in, 8, out, &nout) == 0);
    CHECK(cap.n_errors == 0);
    for (int i = 0; i < nout; i++)
        CHECK(vidk_host_unregister(ctx, out[i].ptr) == 0);
    for (int i = 0; i < 8; i++) {
        CHECK(vidk_picture_unregister(ctx, &sp[i]) == 0);
        vidk_picture_free(&sp[i]);
        free(small[i]);
    }
    cap.n_errors = 0;
    vidk_close(&ctx);
    CHECK(cap.n_errors == 0);
    vidk_picture_free(&p);
    free(a);
}

static void test_timing(void) {
    VidkContext *ctx = NULL, *cctx = NULL;
    VidkCudaTiming t;
    CHECK(open_ctx(&ctx, VIDK_BACKEND_CUDA, 0, 4, NULL) == 0);
    if (!ctx) return;
    CHECK(vidk_cuda_last_timing(ctx, &t) == VIDK_ERR(EAGAIN));
    CHECK(vidk_cuda_last_timing(NULL, &t) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_last_timing(ctx, NULL) == VIDK_ERR(EINVAL));
    CHECK(open_ctx(&cctx, VIDK_BACKEND_C, 0, 4, NULL) == 0);
    CHECK(vidk_cuda_last_timing(cctx, &t) == VIDK_ERR_NODEV);
    vidk_close(&cctx);

    VidkPicture a = new_pic(1280, 720, 0), b = new_pic(1280, 720, 0);
    fill_random(&a);
    fill_random(&b);
    const size_t n = (1280 / 16) * (720 / 16);
    uint32_t *s = malloc(n * sizeof(*s));
    if (!s) exit(1);
    for (int rep = 0; rep < 3; rep++) {
        CHECK(vidk_sad_frame(ctx, &a, &b, 5, -3, VIDK_BLOCK_16x16, s) == 0);
        CHECK(vidk_cuda_last_timing(ctx, &t) == 0);
        fprintf(stderr,
                "timing 720p 16x16: h2d %.3f ms (%zu B), kernel %.3f ms, d2h %.3f ms "
                "(%zu B), total %.3f ms\n",
                t.h2d_ms, t.h2d_bytes, t.kernel_ms, t.d2h_ms, t.d2h_bytes, t.total_ms);
        CHECK(t.h2d_bytes >= 2 * (size_t)1280 * 720);
        CHECK(t.d2h_bytes == n * sizeof(uint32_t));
        CHECK(t.h2d_ms > 0 && t.kernel_ms > 0 && t.d2h_ms > 0);
        /* total spans every stage (events are read separately: allow rounding) */
        CHECK(t.total_ms + 1e-3 >= t.h2d_ms && t.total_ms + 1e-3 >= t.kernel_ms &&
              t.total_ms + 1e-3 >= t.d2h_ms);
        CHECK(t.total_ms + 1e-3 >= t.h2d_ms + t.kernel_ms + t.d2h_ms - 0.01);
        CHECK(t.total_ms < 10000);
    }
    /* A call rejected before reaching the device leaves the last timing alone. */
    CHECK(vidk_sad_frame(ctx, &a, &b, 5000, 0, VIDK_BLOCK_16x16, s) == VIDK_ERR(EINVAL));
    CHECK(vidk_cuda_last_timing(ctx, &t) == 0);
    free(s);
    vidk_picture_free(&a);
    vidk_picture_free(&b);
    vidk_close(&ctx);
}

static void test_args(void) {
    VidkPicture a = new_pic(40, 30, 0), b = new_pic(41, 30, 0);
    uint32_t s[200];
    CHECK(vidk_sad_frame(g_gpu, &a, &b, 0, 0, VIDK_BLOCK_8x8, s) == VIDK_ERR(EINVAL));
    CHECK(vidk_sad_frame(g_gpu, &a, &a, 0, 0, VIDK_BLOCK_COUNT, s) == VIDK_ERR(EINVAL));
    CHECK(vidk_sad_frame(g_gpu, &a, &a, 0, 4097, VIDK_BLOCK_8x8, s) == VIDK_ERR(EINVAL));
    CHECK(vidk_sad_frame(g_gpu, &a, &a, -4097, 0, VIDK_BLOCK_8x8, s) == VIDK_ERR(EINVAL));
    CHECK(vidk_sad_frame(g_gpu, &a, &a, 0, 0, VIDK_BLOCK_8x8, NULL) == VIDK_ERR(EINVAL));
    CHECK(vidk_sad_frame(g_gpu, NULL, &a, 0, 0, VIDK_BLOCK_8x8, s) == VIDK_ERR(EINVAL));
    /* A caller-made picture larger than any the library allocates is refused before the
     * device reads it (the data pointer covers only 40x30 samples). */
    VidkPicture big = a, big2 = a;
    big.w = big2.w = VIDK_MAX_PICTURE_SIDE + 1;
    CHECK(vidk_cuda_sad_frame(g_gpu, &big, &big2, 0, 0, VIDK_BLOCK_64x64, s) ==
          VIDK_ERR(EINVAL));
    vidk_picture_free(&a);
    vidk_picture_free(&b);
    /* The context still works after rejected calls. */
    VidkPicture c = new_pic(16, 16, 0), d = new_pic(16, 16, 0);
    fill_const(&c, 1);
    fill_const(&d, 3);
    CHECK(vidk_sad_frame(g_gpu, &c, &d, 0, 0, VIDK_BLOCK_4x4, s) == 0);
    for (int i = 0; i < 16; i++)
        CHECK_EQ_U(s[i], 2u * 16);
    vidk_picture_free(&c);
    vidk_picture_free(&d);
}

/* Constant and edge-marked pictures: expected SADs computed here from the definition. */
static void test_analytic(void) {
    static const int sizes[][2] = {{1, 1}, {5, 3}, {17, 9}, {64, 64}, {100, 37}, {1920, 1080}};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        const int w = sizes[si][0], h = sizes[si][1];
        VidkPicture a = new_pic(w, h, 16), b = new_pic(w, h, 16);
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
            const int nbx = (w + bw - 1) / bw, nby = (h + bh - 1) / bh;
            const size_t n = (size_t)nbx * nby;
            uint32_t *s = malloc(n * sizeof(*s));
            if (!s) exit(1);
            /* Maximal difference everywhere, partial blocks and far displacements too. */
            fill_const(&a, 255);
            fill_const(&b, 0);
            const int mv[][2] = {{0, 0}, {4096, -4096}, {-7, 3}};
            for (int m = 0; m < 3; m++) {
                CHECK(vidk_sad_frame(g_gpu, &a, &b, mv[m][0], mv[m][1], bs, s) == 0);
                for (size_t i = 0; i < n; i++)
                    if (s[i] != 255u * bw * bh) {
                        CHECK_EQ_U(s[i], 255u * bw * bh);
                        break;
                    }
                CHECK(vidk_sad_frame(g_gpu, &b, &a, mv[m][0], mv[m][1], bs, s) == 0);
                CHECK_EQ_U(s[n - 1], 255u * bw * bh);
            }
            /* Only the reference's left column is 200: a displacement of -4096 reads
             * only that column (nearest edge sample); +4096 never reads it (w > 1). */
            fill_const(&a, 0);
            fill_const(&b, 0);
            for (int y = 0; y < h; y++)
                *px(&b, 0, y) = 200;
            CHECK(vidk_sad_frame(g_gpu, &a, &b, -4096, rnd(-4096, 4096), bs, s) == 0);
            for (size_t i = 0; i < n; i++)
                if (s[i] != 200u * bw * bh) {
                    CHECK_EQ_U(s[i], 200u * bw * bh);
                    break;
                }
            if (w > 1) {
                CHECK(vidk_sad_frame(g_gpu, &a, &b, 4096, 0, bs, s) == 0);
                for (size_t i = 0; i < n; i++)
                    if (s[i]) {
                        CHECK_EQ_U(s[i], 0);
                        break;
                    }
            }
            /* Only the current picture's bottom-right sample is 77: the last block sees
             * it replicated over its part outside the picture. */
            fill_const(&b, 0);
            *px(&a, w - 1, h - 1) = 77;
            CHECK(vidk_sad_frame(g_gpu, &a, &b, 0, 0, bs, s) == 0);
            {
                const int rw = bw - (w - 1) % bw, rh = bh - (h - 1) % bh; /* replicated */
                CHECK_EQ_U(s[n - 1], 77u * rw * rh);
            }
            free(s);
        }
        vidk_picture_free(&a);
        vidk_picture_free(&b);
    }
}

static void test_random(void) {
    static const int sizes[][2] = {{1, 1},     {3, 2},       {4, 4},   {7, 1},   {1, 13},
                                   {17, 9},    {63, 65},     {64, 64}, {65, 63}, {176, 144},
                                   {333, 177}, {1920, 1080}, {8, 8}};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        const int w = sizes[si][0], h = sizes[si][1];
        const int big = w * h > 500000;
        VidkPicture a = new_pic(w, h, si & 1 ? 32 : 0), b = new_pic(w, h, si & 1 ? 0 : 8);
        fill_random(&a);
        if (si % 3 == 0)
            fill_random(&b);
        else
            fill_similar(&b, &a);
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            int mv[32][2];
            /* Under compute-sanitizer (slow) every size and block size, fewer vectors. */
            const int nmv = make_mvs(w, h, mv, !big && !under_sanitizer);
            for (int m = 0; m < nmv; m++)
                compare(&a, &b, mv[m][0], mv[m][1], bs, "random");
        }
        vidk_picture_free(&a);
        vidk_picture_free(&b);
    }
}

/* Caller-owned pictures: odd strides, negative (bottom-up) strides, unaligned rows. */
static void test_strides(void) {
    const int w = 45, h = 38;
    const ptrdiff_t odd = w + 13;
    uint8_t *m1 = malloc((size_t)odd * h + 1), *m2 = malloc((size_t)(w + 7) * h);
    if (!m1 || !m2) exit(1);
    VidkPicture a = {0}, b = {0};
    a.w = b.w = w;
    a.h = b.h = h;
    a.bitdepth = b.bitdepth = 8;
    a.chroma = b.chroma = VIDK_CHROMA_400;
    a.data[0] = m1 + 1; /* unaligned first sample */
    a.stride[0] = odd;
    b.data[0] = m2 + (size_t)(w + 7) * (h - 1); /* bottom-up */
    b.stride[0] = -(ptrdiff_t)(w + 7);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            *px(&a, x, y) = (uint8_t)test_rand(&seed);
            *px(&b, x, y) = (uint8_t)(x * 5 + y * 3);
        }
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        compare(&a, &b, 0, 0, bs, "strides");
        compare(&a, &b, -3, 5, bs, "strides");
        compare(&b, &a, 11, -4096, bs, "strides");
        compare(&a, &a, 1, 1, bs, "strides-self");
    }
    free(m1);
    free(m2);
}

/* ---- real clips ---------------------------------------------------------------------- */

typedef struct Y4m {
    FILE *f;
    int w, h;
    size_t chroma_bytes;
} Y4m;

static int y4m_open(Y4m *y, const char *path) {
    char hdr[512];
    memset(y, 0, sizeof(*y));
    if (!(y->f = fopen(path, "rb"))) return -1;
    if (!fgets(hdr, sizeof(hdr), y->f) || strncmp(hdr, "YUV4MPEG2 ", 10)) goto fail;
    const char *cs = "420";
    for (char *t = strtok(hdr + 10, " \n"); t; t = strtok(NULL, " \n")) {
        if (t[0] == 'W') y->w = atoi(t + 1);
        if (t[0] == 'H') y->h = atoi(t + 1);
        if (t[0] == 'C') cs = t + 1;
    }
    if (y->w < 1 || y->h < 1 || y->w > 8192 || y->h > 8192 || strstr(cs, "p1")) goto fail;
    const size_t cw = ((size_t)y->w + 1) / 2, ch = ((size_t)y->h + 1) / 2;
    if (!strncmp(cs, "420", 3))
        y->chroma_bytes = 2 * cw * ch;
    else if (!strncmp(cs, "422", 3))
        y->chroma_bytes = 2 * cw * (size_t)y->h;
    else if (!strncmp(cs, "444", 3))
        y->chroma_bytes = 2 * (size_t)y->w * y->h;
    else if (!strncmp(cs, "mono", 4))
        y->chroma_bytes = 0;
    else
        goto fail;
    return 0;
fail:
    fclose(y->f);
    y->f = NULL;
    return -1;
}

/* Next frame's luma into p (allocated here); -1 at the end. */
static int y4m_read(Y4m *y, VidkPicture *p) {
    char line[256];
    if (!fgets(line, sizeof(line), y->f) || strncmp(line, "FRAME", 5)) return -1;
    *p = new_pic(y->w, y->h, 16);
    for (int r = 0; r < y->h; r++)
        if (fread(px(p, 0, r), 1, (size_t)y->w, y->f) != (size_t)y->w) {
            vidk_picture_free(p);
            return -1;
        }
    if (y->chroma_bytes && fseek(y->f, (long)y->chroma_bytes, SEEK_CUR)) {
        vidk_picture_free(p);
        return -1;
    }
    return 0;
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
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        Y4m y;
        if (y4m_open(&y, path) < 0) {
            fprintf(stderr, "real video: cannot read %s\n", path);
            CHECK(0);
            continue;
        }
        VidkPicture prev, cur;
        if (y4m_read(&y, &prev) < 0) {
            fclose(y.f);
            CHECK(0);
            continue;
        }
        int frames = 1;
        /* Up to 3 consecutive pairs; a single-frame clip is compared with itself. */
        for (int k = 0; k < (under_sanitizer ? 1 : 3); k++) {
            const int have = y4m_read(&y, &cur) == 0;
            const VidkPicture *c = have ? &cur : &prev;
            frames += have;
            for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
                const int mv[][2] = {{0, 0},       {2, -1},   {-7, 5},
                                     {16, 16},     {-33, 20}, {rnd(-64, 64), rnd(-64, 64)},
                                     {-4096, 4096}};
                for (int m = 0; m < 7; m++)
                    compare(c, &prev, mv[m][0], mv[m][1], bs, e->d_name);
            }
            if (!have) break;
            vidk_picture_free(&prev);
            prev = cur;
        }
        vidk_picture_free(&prev);
        fclose(y.f);
        fprintf(stderr, "real video: %s %dx%d, %d frame(s) compared\n", e->d_name, y.w, y.h,
                frames);
        clips++;
    }
    closedir(d);
    CHECK(!(env && *env) || clips > 0);
    return clips;
}

int main(void) {
    const char *req = getenv("VIDK_REQUIRE_GPU");
    const char *san = getenv("VIDK_UNDER_SANITIZER");
    under_sanitizer = san && *san && strcmp(san, "0");
    if (vidk_cuda_device_count() == 0) {
        if (req && *req && strcmp(req, "0")) {
            fprintf(stderr, "test_cuda: no CUDA device, but VIDK_REQUIRE_GPU is set\n");
            return 1;
        }
        fprintf(stderr, "test_cuda: no CUDA device: skipped\n");
        return 77;
    }
    seed = test_seed();
    const int n_dev = test_info();
    test_open(n_dev);
    test_slots();
    test_register();
    test_timing();

    LogCap cap;
    CHECK(open_ctx(&g_gpu, VIDK_BACKEND_CUDA, 0, 4, &cap) == 0);
    CHECK(open_ctx(&g_c, VIDK_BACKEND_C, 0, 4, NULL) == 0);
    if (!g_gpu || !g_c) return test_finish("test_cuda");
    test_args();
    cap.n_errors = 0; /* test_args provoked two logged errors */
    test_analytic();
    test_random();
    test_strides();
    const int clips = test_real();
    /* No error was logged by any call that succeeded. */
    CHECK(cap.n_errors == 0);
    vidk_close(&g_gpu);
    vidk_close(&g_c);
    fprintf(stderr, "test_cuda: %ld frame comparisons, %d real clip(s)\n", n_compared, clips);
    return test_finish("test_cuda");
}
