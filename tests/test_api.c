/* Public API: settings, open/close, backends, errors, pictures, sad_frame on every
 * available CPU backend against the c backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "vidkern/vidkern.h"

static void test_settings(void) {
    VidkSettings s;
    vidk_default_settings(&s);
    CHECK(s.backend == VIDK_BACKEND_AUTO);
    CHECK(s.cpu_mask == ~0u);
    VidkContext *ctx = (VidkContext *)1;
    CHECK(vidk_open(&ctx, NULL) == VIDK_ERR(EINVAL));
    CHECK(ctx == NULL);
    s.n_threads = -1;
    CHECK(vidk_open(&ctx, &s) == VIDK_ERR(EINVAL));
    vidk_default_settings(&s);
    s.reserved[3] = 1;
    CHECK(vidk_open(&ctx, &s) == VIDK_ERR(EINVAL));
    vidk_default_settings(&s);
    s.backend = (VidkBackend)99;
    CHECK(vidk_open(&ctx, &s) == VIDK_ERR(EINVAL));
    CHECK(vidk_open(NULL, &s) == VIDK_ERR(EINVAL));
    vidk_close(NULL);
    ctx = NULL;
    vidk_close(&ctx);
}

static void test_backends(void) {
    CHECK(vidk_backend_available(VIDK_BACKEND_C));
    CHECK(vidk_backend_available(VIDK_BACKEND_THREADS));
    CHECK(!vidk_backend_available((VidkBackend)77));
    CHECK(vidk_backend_from_name("threads") == VIDK_BACKEND_THREADS);
    CHECK(vidk_backend_from_name("gpu") < 0);
    CHECK(!strcmp(vidk_backend_name(VIDK_BACKEND_CUDA), "cuda"));
    for (int b = 0; b < VIDK_BACKEND_COUNT; b++) {
        VidkSettings s;
        vidk_default_settings(&s);
        s.backend = (VidkBackend)b;
        VidkContext *ctx = NULL;
        int err = vidk_open(&ctx, &s);
        if (!vidk_backend_available((VidkBackend)b)) {
            CHECK(err == VIDK_ERR_NODEV);
            CHECK(ctx == NULL);
            continue;
        }
        CHECK(err == 0);
        CHECK(ctx != NULL);
        VidkBackend got = vidk_get_backend(ctx);
        CHECK(got != VIDK_BACKEND_AUTO);
        if (b != VIDK_BACKEND_AUTO) CHECK(got == (VidkBackend)b);
        if (b == VIDK_BACKEND_C) CHECK(vidk_get_cpu_flags(ctx) == 0);
        vidk_close(&ctx);
        CHECK(ctx == NULL);
    }
    /* auto without a device is threads */
    if (vidk_cuda_device_count() == 0) {
        VidkSettings s;
        vidk_default_settings(&s);
        VidkContext *ctx = NULL;
        CHECK(vidk_open(&ctx, &s) == 0);
        CHECK(vidk_get_backend(ctx) == VIDK_BACKEND_THREADS);
        vidk_close(&ctx);
        /* the cuda registry without a device (or without CUDA in the build) */
        VidkDeviceInfo di;
        CHECK(!vidk_backend_available(VIDK_BACKEND_CUDA));
        CHECK(vidk_cuda_device_info(0, &di) == VIDK_ERR_NODEV);
        CHECK(vidk_cuda_device_info(0, NULL) == VIDK_ERR(EINVAL));
        s.backend = VIDK_BACKEND_CUDA;
        CHECK(vidk_open(&ctx, &s) == VIDK_ERR_NODEV && ctx == NULL);
    }
}

static void test_errors(void) {
    CHECK(!strcmp(vidk_strerror(0), "success"));
    CHECK(strlen(vidk_strerror(VIDK_ERR(EINVAL))) > 0);
    CHECK(vidk_strerror(-12345) != NULL);
    CHECK(vidk_version_number() ==
          ((VIDK_VERSION_MAJOR << 16) | (VIDK_VERSION_MINOR << 8) | VIDK_VERSION_PATCH));
    CHECK(!strcmp(vidk_version(), VIDK_VERSION_STRING));
}

static void test_pictures(void) {
    VidkPicture p;
    CHECK(vidk_picture_alloc(&p, 0, 16, VIDK_CHROMA_420, 8, 0) == VIDK_ERR(EINVAL));
    CHECK(vidk_picture_alloc(&p, 16, VIDK_MAX_PICTURE_SIDE + 1, VIDK_CHROMA_420, 8, 0) ==
          VIDK_ERR(EINVAL));
    CHECK(vidk_picture_alloc(&p, 16, 16, VIDK_CHROMA_420, 7, 0) == VIDK_ERR(EINVAL));
    CHECK(vidk_picture_alloc(&p, 16, 16, VIDK_CHROMA_420, 8, -1) == VIDK_ERR(EINVAL));
    CHECK(vidk_picture_alloc(&p, 17, 9, VIDK_CHROMA_420, 8, 8) == 0);
    /* whole pages of its own (vidk_picture_register pins no page of other memory) */
    const long ps = sysconf(_SC_PAGESIZE);
    CHECK(ps > 0 && (uintptr_t)p.alloc % (uintptr_t)ps == 0);
    int w, h;
    CHECK(vidk_picture_plane_size(&p, 1, &w, &h) == 0 && w == 9 && h == 5);
    CHECK(((uintptr_t)p.stride[0] & 63) == 0);
    uint8_t *y = p.data[0];
    for (int r = 0; r < 9; r++)
        for (int c = 0; c < 17; c++)
            y[r * p.stride[0] + c] = (uint8_t)(r * 17 + c);
    vidk_picture_pad_edges(&p);
    CHECK(y[-8 * p.stride[0] - 8] == y[0]);
    CHECK(y[(9 + 7) * p.stride[0] + 17 + 7] == y[8 * p.stride[0] + 16]);
    CHECK(y[3 * p.stride[0] - 5] == y[3 * p.stride[0]]);
    vidk_picture_free(&p);
    CHECK(p.alloc == NULL);
    CHECK(vidk_picture_alloc(&p, 33, 20, VIDK_CHROMA_400, 10, 4) == 0);
    CHECK(p.data[1] == NULL);
    CHECK(vidk_picture_plane_size(&p, 1, &w, &h) == VIDK_ERR(EINVAL));
    uint16_t *y16 = p.data[0];
    y16[0] = 1023;
    vidk_picture_pad_edges(&p);
    CHECK(y16[-1] == 1023);
    vidk_picture_free(&p);
}

static void fill_random(VidkPicture *p, uint32_t *seed) {
    for (int y = 0; y < p->h; y++) {
        uint8_t *row = (uint8_t *)p->data[0] + y * p->stride[0];
        for (int x = 0; x < p->w; x++)
            row[x] = (uint8_t)(test_rand(seed) >> 24);
    }
}

/* vidk_sad_frame: every CPU backend equals a direct per-pixel computation. */
static void test_sad_frame(void) {
    uint32_t seed = test_seed();
    VidkPicture cur, ref;
    const int w = 83, h = 45; /* not multiples of any block size */
    CHECK(vidk_picture_alloc(&cur, w, h, VIDK_CHROMA_420, 8, 0) == 0);
    CHECK(vidk_picture_alloc(&ref, w, h, VIDK_CHROMA_420, 8, 0) == 0);
    fill_random(&cur, &seed);
    fill_random(&ref, &seed);
    uint32_t *got = malloc(sizeof(uint32_t) * 32 * 32);
    const int mvs[][2] = {{0, 0}, {3, -2}, {-70, 40}, {100, 100}, {-5, 7}};
    for (int b = VIDK_BACKEND_C; b <= VIDK_BACKEND_THREADS; b++) {
        if (!vidk_backend_available((VidkBackend)b)) continue;
        VidkSettings s;
        vidk_default_settings(&s);
        s.backend = (VidkBackend)b;
        s.n_threads = 3;
        VidkContext *ctx;
        CHECK(vidk_open(&ctx, &s) == 0);
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
            for (size_t m = 0; m < sizeof(mvs) / sizeof(mvs[0]); m++) {
                const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
                const int nbx = (w + bw - 1) / bw, nby = (h + bh - 1) / bh;
                CHECK(vidk_sad_frame(ctx, &cur, &ref, mvs[m][0], mvs[m][1], bs, got) == 0);
                for (int by = 0; by < nby; by++)
                    for (int bx = 0; bx < nbx; bx++) {
                        unsigned want = 0;
                        for (int y = 0; y < bh; y++)
                            for (int x = 0; x < bw; x++) {
                                const int cx = bx * bw + x, cy = by * bh + y;
                                const uint8_t *c = cur.data[0], *r = ref.data[0];
                                int a = c[TCLIP(cy, 0, h - 1) * cur.stride[0] +
                                          TCLIP(cx, 0, w - 1)];
                                int d = r[TCLIP(cy + mvs[m][1], 0, h - 1) * ref.stride[0] +
                                          TCLIP(cx + mvs[m][0], 0, w - 1)];
                                want += (unsigned)abs(a - d);
                            }
                        CHECK_EQ_U(got[by * nbx + bx], want);
                    }
            }
        CHECK(vidk_sad_frame(ctx, &cur, &ref, 5000, 0, VIDK_BLOCK_4x4, got) ==
              VIDK_ERR(EINVAL));
        CHECK(vidk_sad_frame(ctx, &cur, &ref, 0, 0, VIDK_BLOCK_COUNT, got) == VIDK_ERR(EINVAL));
        vidk_close(&ctx);
    }
    free(got);
    vidk_picture_free(&cur);
    vidk_picture_free(&ref);
}

/* Registration is a no-op on CPU contexts (the cuda side: test_cuda.c). */
static void test_host_register(void) {
    VidkContext *ctx = NULL;
    VidkSettings st;
    vidk_default_settings(&st);
    st.backend = VIDK_BACKEND_SIMD;
    CHECK(vidk_open(&ctx, &st) == 0);
    if (!ctx) return;
    VidkPicture p;
    CHECK(vidk_picture_alloc(&p, 64, 32, VIDK_CHROMA_420, 8, 16) == 0);
    uint8_t buf[100];
    CHECK(vidk_host_register(ctx, NULL, 10) == VIDK_ERR(EINVAL));
    CHECK(vidk_host_register(ctx, buf, 0) == VIDK_ERR(EINVAL));
    CHECK(vidk_host_register(NULL, buf, 10) == VIDK_ERR(EINVAL));
    CHECK(vidk_host_register(ctx, buf, sizeof(buf)) == 0);
    CHECK(vidk_host_unregister(ctx, buf) == 0);
    CHECK(vidk_host_unregister(ctx, NULL) == VIDK_ERR(EINVAL));
    CHECK(vidk_picture_register(ctx, &p) == 0);
    CHECK(vidk_picture_unregister(ctx, &p) == 0);
    CHECK(vidk_picture_register(ctx, NULL) == VIDK_ERR(EINVAL));
    CHECK(strcmp(vidk_strerror(VIDK_ERR(EEXIST)), "unknown error") != 0);
    /* register_set: page rounding and merging (nothing is pinned on this backend) */
    {
        static uint8_t big[6 * 65536];
        const long ps = sysconf(_SC_PAGESIZE);
        const uintptr_t pg = ps > 0 && ps <= 65536 ? (uintptr_t)ps : 4096;
        uint8_t *q = (uint8_t *)(((uintptr_t)big + pg - 1) / pg * pg);
        VidkHostRange in[5] = {{q + 10, 100},    /* page 0 */
                               {q + 200, 50},    /* page 0 again */
                               {NULL, 10},       /* skipped */
                               {q + 3 * pg, 1},  /* page 3 */
                               {q + pg - 1, 2}}, /* pages 0 and 1 */
            out[5];
        int n = -1;
        CHECK(vidk_host_register_set(ctx, in, 5, out, &n) == 0);
        CHECK(n == 2);
        if (n == 2) {
            CHECK(out[0].ptr == q && out[0].bytes == 2 * pg);
            CHECK(out[1].ptr == q + 3 * pg && out[1].bytes == pg);
        }
        CHECK(vidk_host_register_set(ctx, in, -1, out, &n) == VIDK_ERR(EINVAL));
        CHECK(vidk_host_register_set(ctx, NULL, 0, out, &n) == 0 && n == 0);
    }
    vidk_picture_free(&p);
    vidk_close(&ctx);
}

int main(void) {
    test_settings();
    test_host_register();
    test_backends();
    test_errors();
    test_pictures();
    test_sad_frame();
    return test_finish("test_api");
}
