/* Mosaic of real clips (see mosaic.h for the layout). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mosaic.h"
#include "picio.h"

#define TW         MOSAIC_TILE_W
#define TH         MOSAIC_TILE_H
#define TILE_BYTES (TW * TH + 2 * (TW / 2) * (TH / 2))

typedef struct MosaicClip {
    char name[160];
    int frames;
    uint8_t *data; /* frames x TILE_BYTES: Y, then U, then V of the centre crop */
} MosaicClip;

struct Mosaic {
    int n;
    MosaicClip clip[MOSAIC_MAX_CLIPS];
    char desc[1024];
};

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int mosaic_list_dir(const char *dir, const char *suffix, char **names, int max) {
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) return -1;
    const size_t m = strlen(suffix);
    struct dirent *e;
    int n = 0;
    while (n < max && (e = readdir(d))) {
        const size_t l = strlen(e->d_name);
        if (l > m && !strcmp(e->d_name + l - m, suffix) && (names[n] = strdup(e->d_name))) n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
    return n;
}

/* Centre crop of one picture into a tile buffer. */
static void crop_tile(uint8_t *dst, const VidkPicture *pic) {
    const int x0 = ((pic->w - TW) / 2) & ~1, y0 = ((pic->h - TH) / 2) & ~1;
    const uint8_t *y = (const uint8_t *)pic->data[0];
    for (int r = 0; r < TH; r++)
        memcpy(dst + (size_t)r * TW, y + (ptrdiff_t)(y0 + r) * pic->stride[0] + x0, TW);
    for (int p = 1; p <= 2; p++) {
        uint8_t *d = dst + TW * TH + (size_t)(p - 1) * (TW / 2) * (TH / 2);
        const uint8_t *c = (const uint8_t *)pic->data[p];
        for (int r = 0; r < TH / 2; r++)
            memcpy(d + (size_t)r * (TW / 2),
                   c + (ptrdiff_t)(y0 / 2 + r) * pic->stride[p] + x0 / 2, TW / 2);
    }
}

/* Load one clip; 1 = loaded, 0 = not eligible (skipped), <0 = out of memory. */
static int load_clip(MosaicClip *c, const char *path, const char *name, int min_frames) {
    VioReader *r = NULL;
    char err[256];
    if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) return 0;
    const VioFormat *f = vio_reader_format(r);
    int ret = 0;
    VidkPicture pic;
    memset(&pic, 0, sizeof(pic));
    if (f->bitdepth != 8 || f->chroma != VIDK_CHROMA_420 || f->w < TW || f->h < TH) goto done;
    if (vio_picture_alloc(&pic, f) < 0) {
        ret = VIDK_ERR(ENOMEM);
        goto done;
    }
    if (!(c->data = malloc((size_t)MOSAIC_MAX_FRAMES * TILE_BYTES))) {
        ret = VIDK_ERR(ENOMEM);
        goto done;
    }
    c->frames = 0;
    while (c->frames < MOSAIC_MAX_FRAMES && vio_reader_read(r, &pic) == 1)
        crop_tile(c->data + (size_t)c->frames++ * TILE_BYTES, &pic);
    if (c->frames < min_frames || c->frames < 1) {
        free(c->data);
        c->data = NULL;
        goto done;
    }
    snprintf(c->name, sizeof(c->name), "%s (%d frames)", name, c->frames);
    ret = 1;
done:
    vidk_picture_free(&pic);
    vio_reader_close(&r);
    return ret;
}

int mosaic_open(Mosaic **pm, const char *dir, int min_frames, char *err, size_t errlen) {
    *pm = NULL;
    /* Sorted names: the same folder gives the same mosaic everywhere. */
    char *names[256];
    const int nn = mosaic_list_dir(dir, ".y4m", names, 256);
    if (nn < 0) {
        snprintf(err, errlen, "%s: no clip folder", dir ? dir : "(none)");
        return VIDK_ERR(ENOENT);
    }
    Mosaic *m = calloc(1, sizeof(*m));
    int ret = m ? 0 : VIDK_ERR(ENOMEM);
    for (int i = 0; i < nn && m && m->n < MOSAIC_MAX_CLIPS && ret >= 0; i++) {
        const size_t l = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(l);
        if (!path) {
            ret = VIDK_ERR(ENOMEM);
            break;
        }
        snprintf(path, l, "%s/%s", dir, names[i]);
        const int r = load_clip(&m->clip[m->n], path, names[i], min_frames);
        if (r < 0) ret = r;
        if (r > 0) m->n++;
        free(path);
    }
    for (int i = 0; i < nn; i++)
        free(names[i]);
    if (ret < 0 || !m->n) {
        if (ret < 0)
            snprintf(err, errlen, "out of memory loading clips");
        else
            snprintf(err, errlen, "%s: no 8-bit 4:2:0 clip of at least %dx%d and %d frames",
                     dir, TW, TH, min_frames);
        mosaic_close(&m);
        return ret < 0 ? ret : VIDK_ERR(ENOENT);
    }
    int o = snprintf(m->desc, sizeof(m->desc), "mosaic of %dx%d crops of", TW, TH);
    for (int i = 0; i < m->n && o < (int)sizeof(m->desc); i++)
        o += snprintf(m->desc + o, sizeof(m->desc) - (size_t)o, "%s %s", i ? "," : "",
                      m->clip[i].name);
    *pm = m;
    return 0;
}

void mosaic_close(Mosaic **pm) {
    Mosaic *m = *pm;
    if (!m) return;
    for (int i = 0; i < m->n; i++)
        free(m->clip[i].data);
    free(m);
    *pm = NULL;
}

const char *mosaic_describe(const Mosaic *m) {
    return m->desc;
}

int mosaic_ping_pong(int t, int n) {
    if (n <= 1) return 0;
    const int period = 2 * (n - 1);
    const int j = t % period;
    return j < n ? j : period - j;
}

static void copy_rows(VidkPicture *pic, int plane, int x, int y, int w, int h,
                      const uint8_t *src, int sstride) {
    const int shift = pic->bitdepth - 8;
    for (int r = 0; r < h; r++) {
        const uint8_t *s = src + (size_t)r * sstride;
        uint8_t *row = (uint8_t *)pic->data[plane] + (ptrdiff_t)(y + r) * pic->stride[plane];
        if (pic->bitdepth == 8) {
            memcpy(row + x, s, (size_t)w);
        } else {
            uint16_t *d = (uint16_t *)row + x;
            for (int i = 0; i < w; i++)
                d[i] = (uint16_t)(s[i] << shift);
        }
    }
}

int mosaic_frame(const Mosaic *m, int k, VidkPicture *pic) {
    if (!m || !pic || k < 0 || pic->bitdepth < 8 || pic->bitdepth > 16 ||
        (pic->chroma != VIDK_CHROMA_420 && pic->chroma != VIDK_CHROMA_400))
        return VIDK_ERR(EINVAL);
    const int step = m->n == 2 ? 1 : 2;
    const int tiles_x = (pic->w + TW - 1) / TW, tiles_y = (pic->h + TH - 1) / TH;
    for (int ty = 0; ty < tiles_y; ty++)
        for (int tx = 0; tx < tiles_x; tx++) {
            const int t = ty * tiles_x + tx;
            const MosaicClip *c = &m->clip[(tx + step * ty) % m->n];
            /* Different start frames so repeated clips do not show the same picture. */
            const int f = mosaic_ping_pong((int)((unsigned)t * 37u % 1009u) + k, c->frames);
            const uint8_t *tile = c->data + (size_t)f * TILE_BYTES;
            const int x = tx * TW, y = ty * TH;
            const int w = pic->w - x < TW ? pic->w - x : TW;
            const int h = pic->h - y < TH ? pic->h - y : TH;
            copy_rows(pic, 0, x, y, w, h, tile, TW);
            if (pic->chroma != VIDK_CHROMA_420) continue;
            int cw, ch;
            vidk_picture_plane_size(pic, 1, &cw, &ch);
            const int cx = x / 2, cy = y / 2;
            const int w2 = cw - cx < TW / 2 ? cw - cx : TW / 2;
            const int h2 = ch - cy < TH / 2 ? ch - cy : TH / 2;
            for (int p = 1; p <= 2; p++)
                copy_rows(pic, p, cx, cy, w2, h2,
                          tile + TW * TH + (size_t)(p - 1) * (TW / 2) * (TH / 2), TW / 2);
        }
    vidk_picture_pad_edges(pic);
    return 0;
}

static int is_dir(const char *p) {
    struct stat st;
    return !stat(p, &st) && S_ISDIR(st.st_mode);
}

const char *mosaic_default_video_dir(void) {
    static char from_src[1024];
    const char *env = getenv("VIDK_VIDEO_DIR");
    if (env && *env) return env;
    /* The source tree's sibling ../shared/video (CMake passes absolute paths). */
    const char *file = __FILE__;
    const char *tail = strstr(file, "bench/mosaic.c");
    if (tail && tail > file && (size_t)(tail - file) + 20 < sizeof(from_src)) {
        snprintf(from_src, sizeof(from_src), "%.*s../shared/video", (int)(tail - file), file);
        if (is_dir(from_src)) return from_src;
    }
    static const char *const rel[] = {"../shared/video", "shared/video"};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
        if (is_dir(rel[i])) return rel[i];
    return NULL;
}
