/* Test input shared by the encoder tests: generated frames and the first frames of a real
 * clip (tools' generator and Y4M reader). Include after test_util.h, gen.h and picio.h. */
#ifndef VIDK_TEST_FRAMES_H
#define VIDK_TEST_FRAMES_H

static inline int gen_frames(VidkPicture *f, int n, int w, int h) {
    VidkGenParams gp;
    VidkGen *g = NULL;
    vidk_gen_default(&gp);
    gp.w = w, gp.h = h, gp.frames = n;
    if (vidk_gen_open(&g, &gp) < 0) return -1;
    for (int i = 0; i < n; i++) {
        CHECK(vidk_picture_alloc(&f[i], w, h, VIDK_CHROMA_420, 8, 0) == 0);
        CHECK(vidk_gen_frame(g, i, &f[i]) == 0);
    }
    vidk_gen_close(&g);
    return 0;
}

static inline int clip_frames(VidkPicture *f, int n, const char *dir, const char *name) {
    char path[1024], err[256];
    VioReader *r = NULL;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) return -1;
    int k = 0;
    for (; k < n; k++) {
        if (vio_picture_alloc(&f[k], vio_reader_format(r)) < 0) break;
        if (vio_reader_read(r, &f[k]) != 1) {
            vidk_picture_free(&f[k]);
            break;
        }
    }
    vio_reader_close(&r);
    return k;
}

static inline void free_frames(VidkPicture *f, int n) {
    for (int i = 0; i < n; i++)
        vidk_picture_free(&f[i]);
}

#endif
