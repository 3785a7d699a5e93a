/* libFuzzer target for the picture readers (tools/picio.c).
 *
 * The bytes go to the Y4M reader through fmemopen; every frame it accepts is written
 * back (Y4M, in memory) and read again, which must give the same format and samples, and
 * writing that again must give the same bytes. The same bytes (less two) also go to the
 * raw reader with a small format chosen by the first two bytes. Errors must come back
 * as a negative code with a one-line message naming the stream; anything else aborts.
 *
 * Build: -DVIDK_FUZZ=ON with clang (tests/fuzz/CMakeLists.txt); without libFuzzer,
 * fuzz_driver.c runs this function over files and generated inputs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "picio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Frames larger than this, or far larger than the input (they can only be truncated,
 * which small frames test as well), are not read: allocating their pictures would
 * dominate the run. The header is still parsed. */
#define FUZZ_MAX_FRAME_BYTES ((size_t)4 << 20)
#define FUZZ_SLACK_BYTES     ((size_t)64 << 10)
#define FUZZ_MAX_FRAMES      16

static void require(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz_y4m: broken invariant: %s\n", what);
        abort();
    }
}

static void check_message(const char *msg, const char *name) {
    const size_t n = strlen(name);
    require(!strncmp(msg, name, n) && !strncmp(msg + n, ": ", 2) && msg[n + 2] != 0,
            "error message names the stream");
    require(!strchr(msg, '\n'), "error message is one line");
}

static int same_pictures(const VidkPicture *a, const VidkPicture *b) {
    if (a->w != b->w || a->h != b->h || a->chroma != b->chroma || a->bitdepth != b->bitdepth)
        return 0;
    const int planes = a->chroma == VIDK_CHROMA_400 ? 1 : 3;
    const size_t bps = a->bitdepth > 8 ? 2 : 1;
    for (int p = 0; p < planes; p++) {
        int w, h;
        vidk_picture_plane_size(a, p, &w, &h);
        for (int y = 0; y < h; y++)
            if (memcmp((const uint8_t *)a->data[p] + y * a->stride[p],
                       (const uint8_t *)b->data[p] + y * b->stride[p], (size_t)w * bps))
                return 0;
    }
    return 1;
}

static int same_format(const VioFormat *a, const VioFormat *b) {
    return a->w == b->w && a->h == b->h && a->chroma == b->chroma &&
           a->bitdepth == b->bitdepth && a->fps_num == b->fps_num && a->fps_den == b->fps_den &&
           a->par_num == b->par_num && a->par_den == b->par_den && a->interlace == b->interlace;
}

/* Write frames[0..n) of format f as Y4M into a new memory buffer. */
static char *write_mem(const VioFormat *f, VidkPicture *frames, int n, size_t *len) {
    char *mem = NULL;
    FILE *out = open_memstream(&mem, len);
    if (!out) return NULL;
    char err[2048];
    VioWriter *w = NULL;
    /* A format that came out of the reader is always writable. */
    require(vio_writer_open_stream(&w, out, "mem", f, 0, err, sizeof(err)) == 0,
            "the reader's format can be written");
    for (int i = 0; i < n; i++)
        require(vio_writer_write(w, &frames[i]) == 0, "the reader's frames can be written");
    require(vio_writer_close(&w) == 0, "writer closes");
    fclose(out);
    return mem;
}

static void fuzz_stream(const uint8_t *data, size_t size, const VioFormat *raw) {
    FILE *in = fmemopen((void *)data, size, "rb");
    if (!in) return; /* size 0 on old C libraries */
    char err[2048];
    VioReader *r = NULL;
    const int e = vio_reader_open_stream(&r, in, "fuzz", raw, err, sizeof(err));
    if (e < 0) {
        require(r == NULL, "failed open leaves no reader");
        check_message(err, "fuzz");
        fclose(in);
        return;
    }
    const VioFormat f = *vio_reader_format(r);
    require(vio_frame_bytes(&f) > 0, "opened stream has a valid format");
    if (vio_frame_bytes(&f) > FUZZ_MAX_FRAME_BYTES ||
        vio_frame_bytes(&f) > size + FUZZ_SLACK_BYTES) {
        vio_reader_close(&r);
        fclose(in);
        return;
    }
    VidkPicture frames[FUZZ_MAX_FRAMES];
    memset(frames, 0, sizeof(frames));
    int n = 0, k = 0;
    while (n < FUZZ_MAX_FRAMES) {
        require(vio_picture_alloc(&frames[n], &f) == 0, "picture allocation");
        k = vio_reader_read(r, &frames[n]);
        if (k != 1) break;
        n++;
    }
    if (k < 0) {
        check_message(vio_reader_error(r), "fuzz");
        require(vio_reader_read(r, &frames[n]) == k, "errors are sticky");
    }
    require(vio_reader_frames(r) == n, "frame count");
    vio_reader_close(&r);
    fclose(in);

    /* Write the accepted frames, read them back, write again. */
    size_t len1 = 0, len2 = 0;
    char *mem1 = write_mem(&f, frames, n, &len1);
    if (mem1) {
        FILE *back = fmemopen(mem1, len1, "rb");
        require(back != NULL, "fmemopen");
        VioReader *r2 = NULL;
        require(vio_reader_open_stream(&r2, back, "mem", NULL, err, sizeof(err)) == 0,
                "our own output opens");
        const VioFormat f2 = *vio_reader_format(r2);
        require(same_format(&f, &f2), "format survives a round trip");
        VidkPicture pic, again[FUZZ_MAX_FRAMES];
        require(vio_picture_alloc(&pic, &f2) == 0, "picture allocation");
        int m = 0;
        while (vio_reader_read(r2, &pic) == 1) {
            require(m < n && same_pictures(&pic, &frames[m]), "frames survive a round trip");
            m++;
        }
        require(m == n, "every frame comes back");
        require(vio_reader_error(r2)[0] == 0, "our own output reads cleanly");
        vidk_picture_free(&pic);
        vio_reader_close(&r2);
        fclose(back);
        for (int i = 0; i < n; i++)
            again[i] = frames[i];
        char *mem2 = write_mem(&f2, again, n, &len2);
        require(mem2 && len1 == len2 && !memcmp(mem1, mem2, len1), "writing is canonical");
        free(mem2);
        free(mem1);
    }
    for (int i = 0; i < FUZZ_MAX_FRAMES; i++)
        vidk_picture_free(&frames[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_stream(data, size, NULL);
    if (size >= 2) {
        /* Raw: up to 16x8, any chroma, bit depth 8..16. */
        VioFormat raw;
        vio_format_default(&raw);
        raw.w = 1 + (data[0] & 15);
        raw.h = 1 + (data[0] >> 4 & 7);
        raw.chroma = (VidkChroma)(data[1] & 3);
        raw.bitdepth = 8 + (data[1] >> 2) % 9;
        fuzz_stream(data + 2, size - 2, &raw);
    }
    return 0;
}
