/* Picture I/O of the tools (tools/picio.h): Y4M and raw round trips for every chroma tag
 * and bit depth at odd sizes, header variants, pipes, every kind of bad input (return
 * code AND message), writer failures, PNG output, and the real clips when present.
 *
 * usage: test_io [VIDEO_DIR]   (VIDEO_DIR: the shared real clips; skipped if absent)
 *
 * Streams are built here byte by byte from the format's definition, never by the code
 * under test, so a reader or writer bug cannot hide behind itself. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "picio.h"
#include "test_util.h"

#if VIDK_HAVE_PNG
#include <png.h>
#endif

static char tmpdir[512];
static uint32_t rng;

/* ---- helpers ------------------------------------------------------------------------ */

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
} Buf;

static void buf_put(Buf *b, const void *d, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void buf_printf(Buf *b, const char *fmt, ...) {
    char tmp[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        fprintf(stderr, "buf_printf overflow\n");
        exit(1);
    }
    buf_put(b, tmp, (size_t)n);
}

static void buf_fill(Buf *b, int c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const uint8_t v = (uint8_t)c;
        buf_put(b, &v, 1);
    }
}

static void buf_free(Buf *b) {
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static void tpath(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    Buf b = {0};
    uint8_t tmp[65536];
    size_t k;
    while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0)
        buf_put(&b, tmp, k);
    fclose(f);
    buf_put(&b, "", 0); /* allocated even when empty */
    *n = b.n;
    return b.p;
}

static int same_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    if (na != nb) {
        fprintf(stderr, "  sizes differ: %zu vs %zu\n", na, nb);
        return 0;
    }
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i]) {
            fprintf(stderr, "  first difference at byte %zu: %u vs %u\n", i, a[i], b[i]);
            return 0;
        }
    return 1;
}

/* The test's own model of the planes (not picio's): chroma is ceil(w/2) x ceil(h/2) for
 * 4:2:0, ceil(w/2) x h for 4:2:2. */
static int model_planes(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? 1 : 3;
}
static void model_dims(VidkChroma c, int w, int h, int p, int *pw, int *ph) {
    *pw = p && (c == VIDK_CHROMA_420 || c == VIDK_CHROMA_422) ? (w + 1) / 2 : w;
    *ph = p && c == VIDK_CHROMA_420 ? (h + 1) / 2 : h;
}
static size_t model_frame_bytes(VidkChroma c, int bd, int w, int h) {
    size_t t = 0;
    for (int p = 0; p < model_planes(c); p++) {
        int pw, ph;
        model_dims(c, w, h, p, &pw, &ph);
        t += (size_t)pw * (size_t)ph;
    }
    return t * (bd > 8 ? 2 : 1);
}

/* Random in-range samples (extremes included), little-endian for 9..16 bits. */
static void gen_payload(Buf *b, VidkChroma c, int bd, int w, int h) {
    const size_t n = model_frame_bytes(c, bd, w, h) / (bd > 8 ? 2 : 1);
    const unsigned maxv = (1u << bd) - 1;
    for (size_t i = 0; i < n; i++) {
        const uint32_t r = test_rand(&rng);
        unsigned v = (r >> 8) & maxv;
        if ((r & 15) == 0) v = 0;
        if ((r & 15) == 1) v = maxv;
        const uint8_t s[2] = {(uint8_t)(v & 0xff), (uint8_t)(v >> 8)};
        buf_put(b, s, bd > 8 ? 2 : 1);
    }
}

static unsigned model_sample(const uint8_t *payload, VidkChroma c, int bd, int w, int h, int p,
                             int x, int y) {
    size_t off = 0;
    for (int q = 0; q < p; q++) {
        int pw, ph;
        model_dims(c, w, h, q, &pw, &ph);
        off += (size_t)pw * (size_t)ph;
    }
    int pw, ph;
    model_dims(c, w, h, p, &pw, &ph);
    off += (size_t)y * (size_t)pw + (size_t)x;
    return bd > 8 ? payload[2 * off] | (unsigned)payload[2 * off + 1] << 8 : payload[off];
}

static unsigned pic_sample(const VidkPicture *pic, int p, int x, int y) {
    const uint8_t *row = (const uint8_t *)pic->data[p] + y * pic->stride[p];
    return pic->bitdepth > 8 ? ((const uint16_t *)row)[x] : row[x];
}

/* Every visible sample equals the payload and every margin sample its nearest edge sample
 * (edge replication over the whole VIO_PAD margin). Returns 1 if all match. */
static int pic_equals_payload(const VidkPicture *pic, const uint8_t *payload, VidkChroma c,
                              int bd, int w, int h) {
    if (pic->w != w || pic->h != h || pic->chroma != c || pic->bitdepth != bd) return 0;
    for (int p = 0; p < model_planes(c); p++) {
        int pw, ph;
        model_dims(c, w, h, p, &pw, &ph);
        const int sx = p && (c == VIDK_CHROMA_420 || c == VIDK_CHROMA_422);
        const int sy = p && c == VIDK_CHROMA_420;
        const int mx = pic->pad >> sx, my = pic->pad >> sy;
        for (int y = -my; y < ph + my; y++)
            for (int x = -mx; x < pw + mx; x++) {
                const int cx = TCLIP(x, 0, pw - 1), cy = TCLIP(y, 0, ph - 1);
                const unsigned want = model_sample(payload, c, bd, w, h, p, cx, cy);
                const unsigned got = pic_sample(pic, p, x, y);
                if (want != got) {
                    fprintf(stderr, "  plane %d (%d,%d): %u, expected %u\n", p, x, y, got,
                            want);
                    return 0;
                }
            }
    }
    return 1;
}

/* The message names the input, says what is wrong, and is one line. */
static int msg_ok(const char *msg, const char *name, const char *want) {
    const size_t nl = strlen(name);
    const int ok = !strncmp(msg, name, nl) && !strncmp(msg + nl, ": ", 2) &&
                   strstr(msg, want) && !strchr(msg, '\n');
    if (!ok) fprintf(stderr, "  message '%s' lacks '%s: ...%s...'\n", msg, name, want);
    return ok;
}

/* The one form of an output that cannot be created: "cannot create 'PATH': <strerror>". */
static int create_msg_ok(const char *msg, const char *path) {
    char want[700];
    snprintf(want, sizeof(want), "cannot create '%s': No such file or directory", path);
    const int ok = !strcmp(msg, want);
    if (!ok) fprintf(stderr, "  message '%s' is not '%s'\n", msg, want);
    return ok;
}

/* ---- pixel formats ------------------------------------------------------------------ */

static void test_pixfmt(void) {
    static const struct {
        const char *name;
        VidkChroma c;
        int bd;
    } good[] = {
        {"gray", VIDK_CHROMA_400, 8},         {"gray10le", VIDK_CHROMA_400, 10},
        {"gray16le", VIDK_CHROMA_400, 16},    {"yuv420p", VIDK_CHROMA_420, 8},
        {"yuv422p", VIDK_CHROMA_422, 8},      {"yuv444p", VIDK_CHROMA_444, 8},
        {"yuv420p9le", VIDK_CHROMA_420, 9},   {"yuv420p10le", VIDK_CHROMA_420, 10},
        {"yuv422p10le", VIDK_CHROMA_422, 10}, {"yuv444p10le", VIDK_CHROMA_444, 10},
        {"yuv420p12le", VIDK_CHROMA_420, 12}, {"yuv444p12le", VIDK_CHROMA_444, 12},
        {"yuv420p14le", VIDK_CHROMA_420, 14}, {"yuv420p16le", VIDK_CHROMA_420, 16},
        {"yuv444p16le", VIDK_CHROMA_444, 16}, {"yuvj420p", VIDK_CHROMA_420, 8},
        {"yuvj444p", VIDK_CHROMA_444, 8},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        VioFormat f;
        vio_format_default(&f);
        f.chroma = (VidkChroma)99;
        CHECK(vio_parse_pixfmt(good[i].name, &f) == 0);
        CHECK(f.chroma == good[i].c && f.bitdepth == good[i].bd);
    }
    static const char *const bad[] = {
        "",           "yuv420p10be", "yuv420p10",    "yuv411p",      "nv12",
        "yuv420p8le", "yuv420p17le", "yuv420p010le", "yuvj420p10le", "gray10",
        "rgb24",      "YUV420P",     "yuv420ple",    "yuv420p1le",   "gray8le"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        VioFormat f;
        vio_format_default(&f);
        if (vio_parse_pixfmt(bad[i], &f) != -1) fprintf(stderr, "  accepted '%s'\n", bad[i]);
        CHECK(vio_parse_pixfmt(bad[i], &f) == -1);
        CHECK(f.chroma == VIDK_CHROMA_420 && f.bitdepth == 8);
    }
    CHECK(vio_parse_pixfmt(NULL, NULL) == -1);

    VioFormat f;
    vio_format_default(&f);
    CHECK(f.w == 0 && f.h == 0 && f.chroma == VIDK_CHROMA_420 && f.bitdepth == 8);
    CHECK(f.fps_num == 25 && f.fps_den == 1 && f.par_num == 0 && f.par_den == 0);
    CHECK(f.interlace == 'p' && f.y4m_chroma[0] == 0 && f.y4m_ext[0] == 0);
    CHECK(vio_frame_bytes(&f) == 0); /* 0x0 is not a valid stream format */
    f.w = 17;
    f.h = 9;
    CHECK_EQ_U(vio_frame_bytes(&f), 17 * 9 + 2 * 9 * 5);
    f.chroma = VIDK_CHROMA_422;
    f.bitdepth = 10;
    CHECK_EQ_U(vio_frame_bytes(&f), 2 * (17 * 9 + 2 * 9 * 9));
}

/* ---- round trips -------------------------------------------------------------------- */

typedef struct Tag {
    const char *tag; /* Y4M C tag */
    const char *ysc; /* the XYSCSS value ffmpeg writes with it */
    VidkChroma c;
    int bd;
} Tag;

static const Tag tags[] = {
    {"420jpeg", "420JPEG", VIDK_CHROMA_420, 8},   {"420paldv", "420PALDV", VIDK_CHROMA_420, 8},
    {"420mpeg2", "420MPEG2", VIDK_CHROMA_420, 8}, {"420", "420JPEG", VIDK_CHROMA_420, 8},
    {"422", "422", VIDK_CHROMA_422, 8},           {"444", "444", VIDK_CHROMA_444, 8},
    {"mono", "400", VIDK_CHROMA_400, 8},          {"420p9", "420P9", VIDK_CHROMA_420, 9},
    {"420p10", "420P10", VIDK_CHROMA_420, 10},    {"422p10", "422P10", VIDK_CHROMA_422, 10},
    {"444p10", "444P10", VIDK_CHROMA_444, 10},    {"420p12", "420P12", VIDK_CHROMA_420, 12},
    {"422p12", "422P12", VIDK_CHROMA_422, 12},    {"444p12", "444P12", VIDK_CHROMA_444, 12},
    {"420p14", "420P14", VIDK_CHROMA_420, 14},    {"420p16", "420P16", VIDK_CHROMA_420, 16},
    {"422p16", "422P16", VIDK_CHROMA_422, 16},    {"444p16", "444P16", VIDK_CHROMA_444, 16},
    {"mono9", "400", VIDK_CHROMA_400, 9},         {"mono10", "400", VIDK_CHROMA_400, 10},
    {"mono12", "400", VIDK_CHROMA_400, 12},       {"mono16", "400", VIDK_CHROMA_400, 16},
};

/* One tag and size: stream -> reader (format + samples + margins) -> Y4M writer (same
 * bytes) and raw writer (the payloads) -> raw reader (same samples). */
static void roundtrip_one(const Tag *t, int w, int h, int with_ext) {
    enum { FRAMES = 3 };
    char in[600], out[600], rawp[600];
    tpath(in, sizeof(in), "rt_in.y4m");
    tpath(out, sizeof(out), "rt_out.y4m");
    tpath(rawp, sizeof(rawp), "rt_out.yuv");
    Buf s = {0}, payload[FRAMES] = {{0}}, rawall = {0};
    /* The field order ffmpeg and our writer use: W H F I A C X. */
    buf_printf(&s, "YUV4MPEG2 W%d H%d F30000:1001 It A128:117 C%s", w, h, t->tag);
    /* ffmpeg's mono XYSCSS is not a chroma tag we know: only write matching ones. */
    const int ysc_ok = t->c != VIDK_CHROMA_400;
    if (with_ext) {
        if (ysc_ok) buf_printf(&s, " XYSCSS=%s", t->ysc);
        buf_printf(&s, " XCOLORRANGE=LIMITED");
    }
    buf_printf(&s, "\n");
    for (int i = 0; i < FRAMES; i++) {
        gen_payload(&payload[i], t->c, t->bd, w, h);
        buf_printf(&s, "FRAME\n");
        buf_put(&s, payload[i].p, payload[i].n);
        buf_put(&rawall, payload[i].p, payload[i].n);
    }
    write_file(in, s.p, s.n);

    char err[1024];
    VioReader *r = NULL;
    VioWriter *wy = NULL, *wr = NULL;
    VidkPicture pic;
    const int e = vio_reader_open(&r, in, NULL, err, sizeof(err));
    CHECK(e == 0);
    if (e < 0) {
        fprintf(stderr, "  C%s %dx%d: %s\n", t->tag, w, h, err);
        goto out;
    }
    const VioFormat *f = vio_reader_format(r);
    CHECK(f->w == w && f->h == h && f->chroma == t->c && f->bitdepth == t->bd);
    CHECK(f->fps_num == 30000 && f->fps_den == 1001 && f->par_num == 128 && f->par_den == 117);
    CHECK(f->interlace == 't' && !strcmp(f->y4m_chroma, t->tag));
    CHECK_EQ_U(vio_frame_bytes(f), model_frame_bytes(t->c, t->bd, w, h));
    if (with_ext) {
        char want[128];
        snprintf(want, sizeof(want), "%s%s%sXCOLORRANGE=LIMITED", ysc_ok ? "XYSCSS=" : "",
                 ysc_ok ? t->ysc : "", ysc_ok ? " " : "");
        CHECK(!strcmp(f->y4m_ext, want));
    } else {
        CHECK(f->y4m_ext[0] == 0);
    }
    CHECK(vio_picture_alloc(&pic, f) == 0);
    CHECK(pic.pad == VIO_PAD);
    CHECK(vio_writer_open(&wy, out, f, 0, err, sizeof(err)) == 0);
    CHECK(vio_writer_open(&wr, rawp, f, 1, err, sizeof(err)) == 0);
    for (int i = 0; i < FRAMES; i++) {
        CHECK(vio_reader_read(r, &pic) == 1);
        CHECK(vio_reader_frames(r) == i + 1);
        if (!pic_equals_payload(&pic, payload[i].p, t->c, t->bd, w, h)) {
            fprintf(stderr, "  C%s %dx%d frame %d differs\n", t->tag, w, h, i);
            CHECK(0);
        }
        CHECK(vio_writer_write(wy, &pic) == 0);
        CHECK(vio_writer_write(wr, &pic) == 0);
    }
    CHECK(vio_reader_read(r, &pic) == 0); /* clean end, and it stays there */
    CHECK(vio_reader_read(r, &pic) == 0);
    CHECK(vio_writer_close(&wy) == 0 && wy == NULL);
    CHECK(vio_writer_close(&wr) == 0);
    vio_reader_close(&r);
    CHECK(r == NULL);

    size_t n;
    uint8_t *got = read_file(out, &n);
    if (!got || !same_bytes(got, n, s.p, s.n)) {
        fprintf(stderr, "  C%s %dx%d: Y4M round trip not byte-identical\n", t->tag, w, h);
        CHECK(0);
    }
    free(got);
    got = read_file(rawp, &n);
    if (!got || !same_bytes(got, n, rawall.p, rawall.n)) {
        fprintf(stderr, "  C%s %dx%d: raw output differs from the payload\n", t->tag, w, h);
        CHECK(0);
    }
    free(got);

    /* Raw back in. */
    VioFormat rf;
    vio_format_default(&rf);
    rf.w = w;
    rf.h = h;
    rf.chroma = t->c;
    rf.bitdepth = t->bd;
    CHECK(vio_reader_open(&r, rawp, &rf, err, sizeof(err)) == 0);
    if (r) {
        CHECK(vio_reader_format(r)->fps_num == 25 && vio_reader_format(r)->interlace == 'p');
        for (int i = 0; i < FRAMES; i++) {
            CHECK(vio_reader_read(r, &pic) == 1);
            CHECK(pic_equals_payload(&pic, payload[i].p, t->c, t->bd, w, h));
        }
        CHECK(vio_reader_read(r, &pic) == 0);
        vio_reader_close(&r);
    }
    vidk_picture_free(&pic);
out:
    vio_reader_close(&r);
    buf_free(&s);
    buf_free(&rawall);
    for (int i = 0; i < FRAMES; i++)
        buf_free(&payload[i]);
}

static void test_roundtrips(void) {
    static const int sizes[][2] = {{1, 1}, {17, 9}, {2, 3}, {33, 17}, {64, 48}, {3, 130}};
    for (size_t t = 0; t < sizeof(tags) / sizeof(tags[0]); t++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            roundtrip_one(&tags[t], sizes[s][0], sizes[s][1], (int)(s & 1));
}

/* ---- header variants ---------------------------------------------------------------- */

/* Opens a stream made of `header` + frames of random samples of the format it should
 * announce; returns the reader (NULL on failure, with the message printed). */
static VioReader *open_mem(const char *name, const void *d, size_t n, const VioFormat *raw,
                           char *err, size_t errlen) {
    char p[600];
    tpath(p, sizeof(p), name);
    write_file(p, d, n);
    VioReader *r = NULL;
    vio_reader_open(&r, p, raw, err, errlen);
    return r;
}

static void header_case(const char *hdr, VidkChroma c, int bd, const char *ctag,
                        const char *ext, const char *frame_line, const char *want_written) {
    Buf s = {0}, pl = {0};
    buf_printf(&s, "%s\n", hdr);
    int w = 0, h = 0; /* the last W and H tags count */
    for (const char *t = strstr(hdr, " W"); t; t = strstr(t + 1, " W"))
        w = atoi(t + 2);
    for (const char *t = strstr(hdr, " H"); t; t = strstr(t + 1, " H"))
        h = atoi(t + 2);
    gen_payload(&pl, c, bd, w, h);
    buf_printf(&s, "%s\n", frame_line);
    buf_put(&s, pl.p, pl.n);
    char err[1024];
    VioReader *r = open_mem("hdr.y4m", s.p, s.n, NULL, err, sizeof(err));
    CHECK(r != NULL);
    if (!r) {
        fprintf(stderr, "  header '%s': %s\n", hdr, err);
        goto out;
    }
    const VioFormat *f = vio_reader_format(r);
    if (f->chroma != c || f->bitdepth != bd || strcmp(f->y4m_chroma, ctag) ||
        strcmp(f->y4m_ext, ext)) {
        fprintf(stderr, "  header '%s': chroma %d bd %d C '%s' X '%s'\n", hdr, f->chroma,
                f->bitdepth, f->y4m_chroma, f->y4m_ext);
        CHECK(0);
    }
    VidkPicture pic;
    CHECK(vio_picture_alloc(&pic, f) == 0);
    CHECK(vio_reader_read(r, &pic) == 1);
    CHECK(pic_equals_payload(&pic, pl.p, c, bd, w, h));
    CHECK(vio_reader_read(r, &pic) == 0);
    if (want_written) {
        /* The header our writer produces for the format as read. */
        char p[600];
        tpath(p, sizeof(p), "hdr_out.y4m");
        VioWriter *wr = NULL;
        CHECK(vio_writer_open(&wr, p, f, 0, err, sizeof(err)) == 0);
        CHECK(vio_writer_close(&wr) == 0);
        size_t n;
        uint8_t *got = read_file(p, &n);
        if (!got || n != strlen(want_written) + 1 || memcmp(got, want_written, n - 1) ||
            got[n - 1] != '\n') {
            fprintf(stderr, "  header '%s' written as '%.*s', expected '%s'\n", hdr,
                    got ? (int)n : 0, got ? (const char *)got : "", want_written);
            CHECK(0);
        }
        free(got);
    }
    vidk_picture_free(&pic);
out:
    vio_reader_close(&r);
    buf_free(&s);
    buf_free(&pl);
}

static void test_header_variants(void) {
    /* No C: the spec's default 420jpeg; defaults for F, A, I. The writer adds no tag the
     * source lacked. */
    header_case("YUV4MPEG2 W17 H9", VIDK_CHROMA_420, 8, "", "", "FRAME", "YUV4MPEG2 W17 H9");
    /* No C: ffmpeg's XYSCSS gives the format (any case). */
    header_case("YUV4MPEG2 W17 H9 XYSCSS=420P10", VIDK_CHROMA_420, 10, "", "XYSCSS=420P10",
                "FRAME", "YUV4MPEG2 W17 H9 XYSCSS=420P10");
    header_case("YUV4MPEG2 W5 H4 XYSCSS=422p12", VIDK_CHROMA_422, 12, "", "XYSCSS=422p12",
                "FRAME", NULL);
    header_case("YUV4MPEG2 W5 H4 XYSCSS=444 F1:1", VIDK_CHROMA_444, 8, "", "XYSCSS=444",
                "FRAME", "YUV4MPEG2 W5 H4 F1:1 XYSCSS=444");
    /* An empty XYSCSS says nothing: the earlier one gives the format, and the writer drops
     * the empty one and keeps the format (a fuzzer found it written, C left out). */
    header_case("YUV4MPEG2 W17 H9 XYSCSS=420P10 XYSCSS=", VIDK_CHROMA_420, 10, "",
                "XYSCSS=420P10 XYSCSS=", "FRAME", "YUV4MPEG2 W17 H9 XYSCSS=420P10");
    header_case("YUV4MPEG2 W3 H3 XYSCSS=422p10 XA=1 XYSCSS=", VIDK_CHROMA_422, 10, "",
                "XYSCSS=422p10 XA=1 XYSCSS=", "FRAME", "YUV4MPEG2 W3 H3 XYSCSS=422p10 XA=1");
    /* C wins over a contradicting XYSCSS, which is then dropped when writing; other X
     * fields are kept in order. */
    header_case("YUV4MPEG2 W8 H8 C422 XFOO=1 XYSCSS=420JPEG XCOLORRANGE=FULL", VIDK_CHROMA_422,
                8, "422", "XFOO=1 XYSCSS=420JPEG XCOLORRANGE=FULL", "FRAME",
                "YUV4MPEG2 W8 H8 C422 XFOO=1 XCOLORRANGE=FULL");
    /* Tags in any order, repeated spaces, unknown tags skipped, FRAME parameters
     * skipped. */
    header_case("YUV4MPEG2  C444p12 Zunknown  H3 W7 Im F60:1 A1:1  ", VIDK_CHROMA_444, 12,
                "444p12", "", "FRAME Ib XFRAMEPARAM=3",
                "YUV4MPEG2 W7 H3 F60:1 Im A1:1 C444p12");
    header_case("YUV4MPEG2 W4 H4 I? C420mpeg2", VIDK_CHROMA_420, 8, "420mpeg2", "", "FRAME ",
                "YUV4MPEG2 W4 H4 I? C420mpeg2");
    header_case("YUV4MPEG2 W16 H2 Cmono", VIDK_CHROMA_400, 8, "mono", "", "FRAME",
                "YUV4MPEG2 W16 H2 Cmono");
    /* Later tags win, leading zeros are numbers. */
    header_case("YUV4MPEG2 W99 H3 W007 Ib", VIDK_CHROMA_420, 8, "", "", "FRAME",
                "YUV4MPEG2 W7 H3 Ib");

    /* The largest legal size opens in 8-bit 4:2:0 (no frame read: 384 MiB); in 16-bit
     * (768 MiB a frame) it is over VIO_FRAME_BYTES_MAX and refused before any
     * allocation. */
    char err[1024];
    const char big[] = "YUV4MPEG2 W16384 H16384 C420\n";
    VioReader *r = open_mem("big.y4m", big, sizeof(big) - 1, NULL, err, sizeof(err));
    CHECK(r != NULL);
    if (r) CHECK_EQ_U(vio_frame_bytes(vio_reader_format(r)), (size_t)16384 * 16384 * 3 / 2);
    vio_reader_close(&r);
    const char big16[] = "YUV4MPEG2 W16384 H16384 C420p16\n";
    r = open_mem("big16.y4m", big16, sizeof(big16) - 1, NULL, err, sizeof(err));
    CHECK(r == NULL && strstr(err, "big16.y4m: 16384x16384 4:2:0 16-bit frames of 805306368 "
                                   "bytes are over the limit of 512 MiB a frame"));
    vio_reader_close(&r);
    /* Line limits, newline included: VIO_Y4M_LINE_MAX bytes pass, one more fails. */
    for (int extra = 0; extra < 2; extra++) {
        Buf l = {0};
        buf_printf(&l, "YUV4MPEG2 W2 H2 X");
        buf_fill(&l, 'h', VIO_Y4M_LINE_MAX - 1 - l.n + (size_t)extra);
        buf_printf(&l, "\nFRAME ");
        buf_fill(&l, 'f', VIO_Y4M_LINE_MAX - 7);
        buf_printf(&l, "\n");
        buf_fill(&l, 0, 6);
        r = open_mem("limit.y4m", l.p, l.n, NULL, err, sizeof(err));
        CHECK((r != NULL) == !extra);
        if (extra) CHECK(strstr(err, "Y4M header line too long (over 1024 bytes)"));
        if (r) {
            VidkPicture pic;
            CHECK(vio_picture_alloc(&pic, vio_reader_format(r)) == 0);
            CHECK(vio_reader_read(r, &pic) == 1);
            vidk_picture_free(&pic);
            vio_reader_close(&r);
        }
        buf_free(&l);
        buf_printf(&l, "YUV4MPEG2 W2 H2\nFRAME ");
        buf_fill(&l, 'f', VIO_Y4M_LINE_MAX - 7 + (size_t)extra);
        buf_printf(&l, "\n");
        buf_fill(&l, 0, 6);
        r = open_mem("limit.y4m", l.p, l.n, NULL, err, sizeof(err));
        CHECK(r != NULL);
        if (r) {
            VidkPicture pic;
            CHECK(vio_picture_alloc(&pic, vio_reader_format(r)) == 0);
            const int k = vio_reader_read(r, &pic);
            CHECK(extra ? k == VIDK_ERR(EINVAL) : k == 1);
            if (extra) CHECK(strstr(vio_reader_error(r), "frame 0: FRAME line too long"));
            vidk_picture_free(&pic);
            vio_reader_close(&r);
        }
        buf_free(&l);
    }
    /* A stream with a header and no frame is valid and empty. */
    const char none[] = "YUV4MPEG2 W16 H16\n";
    r = open_mem("none.y4m", none, sizeof(none) - 1, NULL, err, sizeof(err));
    CHECK(r != NULL);
    if (r) {
        VidkPicture pic;
        CHECK(vio_picture_alloc(&pic, vio_reader_format(r)) == 0);
        CHECK(vio_reader_read(r, &pic) == 0);
        vidk_picture_free(&pic);
    }
    vio_reader_close(&r);

    /* Writer: a C tag that contradicts the format is replaced by the default. */
    VioFormat f;
    vio_format_default(&f);
    f.w = 4;
    f.h = 2;
    f.bitdepth = 10;
    snprintf(f.y4m_chroma, sizeof(f.y4m_chroma), "420jpeg");
    snprintf(f.y4m_ext, sizeof(f.y4m_ext), "XYSCSS=420JPEG XA=1");
    char p[600];
    tpath(p, sizeof(p), "ctag.y4m");
    VioWriter *wr = NULL;
    CHECK(vio_writer_open(&wr, p, &f, 0, err, sizeof(err)) == 0);
    CHECK(vio_writer_close(&wr) == 0);
    size_t n;
    uint8_t *got = read_file(p, &n);
    const char want[] = "YUV4MPEG2 W4 H2 F25:1 Ip A0:0 C420p10 XA=1\n";
    CHECK(got && n == sizeof(want) - 1 && !memcmp(got, want, n));
    free(got);
}

/* ---- bad input ---------------------------------------------------------------------- */

typedef struct BadCase {
    const char *data; /* stream bytes (NUL-terminated unless len is given) */
    size_t len;
    int code;         /* expected error code (0: any negative) */
    const char *want; /* expected in the message */
} BadCase;

static void bad_open_case(const BadCase *b, int idx) {
    char p[600], err[2048];
    snprintf(p, sizeof(p), "%s/bad_%d.y4m", tmpdir, idx);
    const size_t n = b->len ? b->len : strlen(b->data);
    write_file(p, b->data, n);
    VioReader *r = (VioReader *)&err; /* must come back NULL */
    memset(err, 'x', sizeof(err));
    const int e = vio_reader_open(&r, p, NULL, err, sizeof(err));
    if (e >= 0 || r != NULL || (b->code && e != b->code) || !msg_ok(err, p, b->want)) {
        fprintf(stderr, "  bad input #%d (%.40s): returned %d, '%s'\n", idx, b->data, e, err);
        CHECK(0);
    }
    if (e >= 0) vio_reader_close(&r); /* else r is NULL, or not to be touched */
}

static void test_bad_headers(void) {
    static char longhdr[3000], longx[3000];
    memset(longhdr, 'a', sizeof(longhdr) - 1);
    memcpy(longhdr, "YUV4MPEG2 W16 H16 X", 19);
    longhdr[sizeof(longhdr) - 2] = '\n';
    memset(longx, 'Q', sizeof(longx) - 1); /* not Y4M, no newline: "not Y4M" wins */
    const int EI = VIDK_ERR(EINVAL);
    const BadCase cases[] = {
        {"", 0, VIDK_ERR(ENODATA), "empty input"},
        {"hello world\n", 0, EI, "not a YUV4MPEG2 stream"},
        {"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16, EI, "not a YUV4MPEG2 stream"},
        {"YUV4MPEG2W16 H16\n", 0, EI, "not a YUV4MPEG2 stream"},
        {"YUV4\n", 0, EI, "not a YUV4MPEG2 stream"},
        {"YUV4MPEG", 0, EI, "no newline"},
        {"FRAME\n", 0, EI, "not a YUV4MPEG2 stream"},
        {longx, 0, EI, "not a YUV4MPEG2 stream"},
        {"YUV4MPEG2 W16 H16", 0, EI, "no newline"},
        {longhdr, 0, EI, "too long"},
        {"YUV4MPEG2\n", 0, EI, "no W (width)"},
        {"YUV4MPEG2 H16\n", 0, EI, "no W (width)"},
        {"YUV4MPEG2 W16\n", 0, EI, "no H (height)"},
        {"YUV4MPEG2 W16 h16\n", 0, EI, "no H (height)"},
        {"YUV4MPEG2 W0 H16\n", 0, EI, "bad width 'W0'"},
        {"YUV4MPEG2 W-16 H16\n", 0, EI, "bad width 'W-16'"},
        {"YUV4MPEG2 W+16 H16\n", 0, EI, "bad width 'W+16'"},
        {"YUV4MPEG2 Wabc H16\n", 0, EI, "bad width 'Wabc'"},
        {"YUV4MPEG2 W H16\n", 0, EI, "bad width 'W'"},
        {"YUV4MPEG2 W16.5 H16\n", 0, EI, "bad width 'W16.5'"},
        {"YUV4MPEG2 W16385 H16\n", 0, EI,
         "bad width 'W16385' in Y4M header (expected W1..W16384)"},
        {"YUV4MPEG2 W99999999999999999999 H16\n", 0, EI, "bad width 'W99999999999999999999'"},
        {"YUV4MPEG2 W4294967312 H16\n", 0, EI, "bad width 'W4294967312'"},
        {"YUV4MPEG2 W16 H0\n", 0, EI, "bad height 'H0'"},
        {"YUV4MPEG2 W16 H-1\n", 0, EI, "bad height 'H-1'"},
        {"YUV4MPEG2 W16 H99999999999999999999\n", 0, EI, "bad height 'H99999999999999999999'"},
        {"YUV4MPEG2 W16 H16 C411\n", 0, EI, "unsupported chroma 'C411'"},
        {"YUV4MPEG2 W16 H16 Cfoo\n", 0, EI, "unsupported chroma 'Cfoo'"},
        {"YUV4MPEG2 W16 H16 C\n", 0, EI, "unsupported chroma 'C'"},
        {"YUV4MPEG2 W16 H16 C420p8\n", 0, EI, "unsupported chroma 'C420p8'"},
        {"YUV4MPEG2 W16 H16 C420p17\n", 0, EI, "unsupported chroma 'C420p17'"},
        {"YUV4MPEG2 W16 H16 C420p010\n", 0, EI, "unsupported chroma 'C420p010'"},
        {"YUV4MPEG2 W16 H16 Cmono17\n", 0, EI, "unsupported chroma 'Cmono17'"},
        {"YUV4MPEG2 W16 H16 C444alpha\n", 0, EI, "unsupported chroma 'C444alpha'"},
        {"YUV4MPEG2 W16 H16 C420JPEG\n", 0, EI, "unsupported chroma 'C420JPEG'"},
        {"YUV4MPEG2 W16 H16 XYSCSS=411\n", 0, EI, "unsupported chroma 'XYSCSS=411'"},
        {"YUV4MPEG2 W16 H16 F0:1\n", 0, EI, "bad frame rate 'F0:1'"},
        {"YUV4MPEG2 W16 H16 F30:0\n", 0, EI, "bad frame rate 'F30:0'"},
        {"YUV4MPEG2 W16 H16 F30\n", 0, EI, "bad frame rate 'F30'"},
        {"YUV4MPEG2 W16 H16 F:1\n", 0, EI, "bad frame rate 'F:1'"},
        {"YUV4MPEG2 W16 H16 F30:\n", 0, EI, "bad frame rate 'F30:'"},
        {"YUV4MPEG2 W16 H16 F-30:1\n", 0, EI, "bad frame rate 'F-30:1'"},
        {"YUV4MPEG2 W16 H16 Fx:1\n", 0, EI, "bad frame rate 'Fx:1'"},
        {"YUV4MPEG2 W16 H16 F30:1:1\n", 0, EI, "bad frame rate 'F30:1:1'"},
        {"YUV4MPEG2 W16 H16 F99999999999:1\n", 0, EI, "bad frame rate 'F99999999999:1'"},
        {"YUV4MPEG2 W16 H16 A1:0\n", 0, EI, "bad aspect ratio 'A1:0'"},
        {"YUV4MPEG2 W16 H16 A0:1\n", 0, EI, "bad aspect ratio 'A0:1'"},
        {"YUV4MPEG2 W16 H16 A1\n", 0, EI, "bad aspect ratio 'A1'"},
        {"YUV4MPEG2 W16 H16 A-1:1\n", 0, EI, "bad aspect ratio 'A-1:1'"},
        {"YUV4MPEG2 W16 H16 Ix\n", 0, EI, "bad interlacing 'Ix'"},
        {"YUV4MPEG2 W16 H16 Ipp\n", 0, EI, "bad interlacing 'Ipp'"},
        {"YUV4MPEG2 W16 H16 I\n", 0, EI, "bad interlacing 'I'"},
        {"YUV4MPEG2 W16 H16\r\n", 0, EI, "control character (0x0D)"},
        {"YUV4MPEG2 W16\0 H16\n", 19, EI, "control character (0x00)"},
        {"YUV4MPEG2 W16 H16 X\tY\n", 0, EI, "control character (0x09)"},
        /* Non-ASCII in a bad tag is quoted, not copied raw into the message. */
        {"YUV4MPEG2 W16 H16 C\xff\x01\n", 0, EI, "control character (0x01)"},
        {"YUV4MPEG2 W16 H16 C\xff\n", 0, EI, "unsupported chroma 'C\\xFF'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        bad_open_case(&cases[i], (int)i);

    /* The OS's errors. */
    char err[2048], p[600];
    VioReader *r = NULL;
    tpath(p, sizeof(p), "does_not_exist.y4m");
    CHECK(vio_reader_open(&r, p, NULL, err, sizeof(err)) == VIDK_ERR(ENOENT));
    CHECK(r == NULL && msg_ok(err, p, "cannot open: "));
    /* A directory opens with fopen on Linux but cannot be read. */
    const int e = vio_reader_open(&r, tmpdir, NULL, err, sizeof(err));
    CHECK(e < 0 && r == NULL && msg_ok(err, tmpdir, ""));
    /* Message buffers: truncated but terminated; none at all. */
    memset(err, 'x', 16);
    CHECK(vio_reader_open(&r, p, NULL, err, 8) == VIDK_ERR(ENOENT));
    CHECK(strlen(err) == 7);
    CHECK(vio_reader_open(&r, p, NULL, NULL, 0) == VIDK_ERR(ENOENT));
    CHECK(vio_reader_open(&r, NULL, NULL, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(vio_reader_open(NULL, p, NULL, err, sizeof(err)) == VIDK_ERR(EINVAL));
    /* A newline in the file name does not break the one-line message. */
    char weird[600];
    snprintf(weird, sizeof(weird), "%s/bad\nname.y4m", tmpdir);
    write_file(weird, "junk\n", 5);
    CHECK(vio_reader_open(&r, weird, NULL, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(!strchr(err, '\n') && strstr(err, "bad?name.y4m: not a YUV4MPEG2 stream"));
    unlink(weird);
}

/* A frame-level failure: the header is fine, frames [0, good) read, then the error. */
static void bad_frame_case(const char *label, const Buf *s, const VioFormat *raw, int good,
                           int code, const char *want) {
    char p[600], err[2048];
    tpath(p, sizeof(p), "badframe.bin");
    write_file(p, s->p, s->n);
    VioReader *r = NULL;
    const int e = vio_reader_open(&r, p, raw, err, sizeof(err));
    if (e < 0) {
        fprintf(stderr, "  %s: open failed: %s\n", label, err);
        CHECK(0);
        return;
    }
    VidkPicture pic;
    CHECK(vio_picture_alloc(&pic, vio_reader_format(r)) == 0);
    for (int i = 0; i < good; i++)
        CHECK(vio_reader_read(r, &pic) == 1);
    const int got = vio_reader_read(r, &pic);
    if (got >= 0 || (code && got != code) || !msg_ok(vio_reader_error(r), p, want)) {
        fprintf(stderr, "  %s: read returned %d, '%s'\n", label, got, vio_reader_error(r));
        CHECK(0);
    }
    /* Sticky: the same failure again, never a later frame. */
    char first[2048];
    snprintf(first, sizeof(first), "%s", vio_reader_error(r));
    CHECK(vio_reader_read(r, &pic) == got);
    CHECK(!strcmp(first, vio_reader_error(r)));
    CHECK(vio_reader_frames(r) == good);
    vidk_picture_free(&pic);
    vio_reader_close(&r);
}

static void test_bad_frames(void) {
    const char hdr[] = "YUV4MPEG2 W16 H16 F25:1 C420jpeg\n"; /* 384-byte frames */
    const int EI = VIDK_ERR(EINVAL);
    Buf s = {0};
#define CASE(label, build, raw, good, code, want)                                              \
    do {                                                                                       \
        buf_free(&s);                                                                          \
        build;                                                                                 \
        bad_frame_case(label, &s, raw, good, code, want);                                      \
    } while (0)
    CASE("bad marker", (buf_printf(&s, "%sFRAMX\n", hdr), buf_fill(&s, 1, 384)), NULL, 0, EI,
         "frame 0: bad FRAME marker 'FRAMX'");
    CASE("lower case", (buf_printf(&s, "%sframe\n", hdr), buf_fill(&s, 1, 384)), NULL, 0, EI,
         "frame 0: bad FRAME marker 'f'");
    CASE("marker+junk", (buf_printf(&s, "%sFRAMEX\n", hdr), buf_fill(&s, 1, 384)), NULL, 0, EI,
         "frame 0: bad FRAME marker 'FRAMEX'");
    CASE("cut marker", buf_printf(&s, "%sFRA", hdr), NULL, 0, EI,
         "frame 0 truncated (input ends inside the FRAME marker)");
    CASE("cut params", buf_printf(&s, "%sFRAME Ip", hdr), NULL, 0, EI,
         "frame 0 truncated (input ends inside the FRAME line)");
    CASE("long params",
         (buf_printf(&s, "%sFRAME ", hdr), buf_fill(&s, 'a', 2000), buf_printf(&s, "\n")), NULL,
         0, EI, "frame 0: FRAME line too long");
    CASE("no payload", buf_printf(&s, "%sFRAME\n", hdr), NULL, 0, EI,
         "frame 0 truncated (got 0 of 384 bytes)");
    CASE("short payload", (buf_printf(&s, "%sFRAME\n", hdr), buf_fill(&s, 7, 100)), NULL, 0, EI,
         "frame 0 truncated (got 100 of 384 bytes)");
    CASE("second frame short",
         (buf_printf(&s, "%sFRAME\n", hdr), buf_fill(&s, 7, 384), buf_printf(&s, "FRAME\n"),
          buf_fill(&s, 9, 383)),
         NULL, 1, EI, "frame 1 truncated (got 383 of 384 bytes)");
    CASE("trailing junk",
         (buf_printf(&s, "%sFRAME\n", hdr), buf_fill(&s, 7, 384), buf_fill(&s, 0, 3)), NULL, 1,
         EI, "frame 1: bad FRAME marker '\\x00'");
    CASE("10-bit out of range",
         (buf_printf(&s, "YUV4MPEG2 W4 H2 C420p10\nFRAME\n"), buf_fill(&s, 0, 6),
          buf_put(&s, "\x00\x04", 2), buf_fill(&s, 0, 16)),
         NULL, 0, VIDK_ERR(ERANGE),
         "frame 0: sample 1024 at plane 0 x 3 y 0 is above the 10-bit maximum 1023");
    CASE("10-bit chroma out of range",
         (buf_printf(&s, "YUV4MPEG2 W4 H2 C420p10\nFRAME\n"), buf_fill(&s, 0, 16 + 4 + 2),
          buf_put(&s, "\xff\xff", 2)),
         NULL, 0, VIDK_ERR(ERANGE), "sample 65535 at plane 2 x 1 y 0");

    VioFormat raw;
    vio_format_default(&raw);
    raw.w = 16;
    raw.h = 16;
    CASE("raw partial last frame", buf_fill(&s, 3, 384 * 2 + 192), &raw, 2, EI,
         "frame 2 truncated (got 192 of 384 bytes)");
    CASE("raw one byte", buf_fill(&s, 3, 1), &raw, 0, EI,
         "frame 0 truncated (got 1 of 384 bytes)");
    raw.bitdepth = 12;
    raw.chroma = VIDK_CHROMA_400;
    CASE("raw 12-bit out of range",
         (buf_fill(&s, 0, 512), buf_fill(&s, 0, 30), buf_put(&s, "\x00\x10", 2)), &raw, 1,
         VIDK_ERR(ERANGE), "frame 1: sample 4096 at plane 0 x 15 y 0");
#undef CASE
    buf_free(&s);

    /* Raw inputs that fail at open. */
    char p[600], err[2048];
    tpath(p, sizeof(p), "empty.yuv");
    write_file(p, "", 0);
    VioReader *r = NULL;
    vio_format_default(&raw);
    raw.w = 16;
    raw.h = 16;
    CHECK(vio_reader_open(&r, p, &raw, err, sizeof(err)) == VIDK_ERR(ENODATA));
    CHECK(r == NULL && msg_ok(err, p, "empty input"));
    const int bad_fmt[][4] = {{0, 16, 1, 8},  {16, 0, 1, 8},   {16, 16, 7, 8},
                              {16, 16, 1, 7}, {16, 16, 1, 17}, {16385, 16, 1, 8},
                              {-4, 16, 1, 8}};
    for (size_t i = 0; i < sizeof(bad_fmt) / sizeof(bad_fmt[0]); i++) {
        raw.w = bad_fmt[i][0];
        raw.h = bad_fmt[i][1];
        raw.chroma = (VidkChroma)bad_fmt[i][2];
        raw.bitdepth = bad_fmt[i][3];
        CHECK(vio_reader_open(&r, p, &raw, err, sizeof(err)) == VIDK_ERR(EINVAL));
        CHECK(r == NULL && msg_ok(err, p, "raw input needs a size"));
    }
    /* Raw: nonsense fps/aspect/interlace fall back to the defaults. */
    tpath(p, sizeof(p), "one.yuv");
    Buf one = {0};
    buf_fill(&one, 5, 384);
    write_file(p, one.p, one.n);
    buf_free(&one);
    vio_format_default(&raw);
    raw.w = raw.h = 16;
    raw.fps_num = 0;
    raw.par_num = 3;
    raw.interlace = 'z';
    CHECK(vio_reader_open(&r, p, &raw, err, sizeof(err)) == 0);
    if (r) {
        const VioFormat *f = vio_reader_format(r);
        CHECK(f->fps_num == 25 && f->fps_den == 1 && f->par_num == 0 && f->interlace == 'p');
        /* A picture of another format is refused (not a stream error). */
        VidkPicture pic;
        CHECK(vidk_picture_alloc(&pic, 16, 8, VIDK_CHROMA_420, 8, 0) == 0);
        CHECK(vio_reader_read(r, &pic) == VIDK_ERR(EINVAL));
        CHECK(msg_ok(vio_reader_error(r), p, "picture does not match"));
        vidk_picture_free(&pic);
        CHECK(vidk_picture_alloc(&pic, 16, 16, VIDK_CHROMA_420, 8, 0) == 0);
        CHECK(vio_reader_read(r, &pic) == 1); /* pad 0 pictures work too */
        CHECK(vio_reader_read(r, &pic) == 0);
        vidk_picture_free(&pic);
        vio_reader_close(&r);
    }
    CHECK(vio_reader_read(NULL, NULL) == VIDK_ERR(EINVAL));
    vio_reader_close(NULL);
}

/* ---- pipes -------------------------------------------------------------------------- */

/* Feeds `d` to stdin through a pipe from a child process and reads it with path "-":
 * nothing may seek. Returns frames read, or the error code (message in err). */
static int read_via_pipe(const uint8_t *d, size_t n, const VioFormat *raw,
                         const uint8_t *payload0, size_t pbytes, char *err, size_t errlen) {
    int fds[2];
    if (pipe(fds)) return -1000;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return -1001;
    if (pid == 0) {
        close(fds[0]);
        size_t o = 0;
        while (o < n) {
            const ssize_t k = write(fds[1], d + o, n - o);
            if (k <= 0) _exit(1);
            o += (size_t)k;
        }
        _exit(0);
    }
    close(fds[1]);
    const int saved = dup(0);
    dup2(fds[0], 0);
    close(fds[0]);
    clearerr(stdin);
    VioReader *r = NULL;
    int ret = vio_reader_open(&r, "-", raw, err, errlen);
    if (ret == 0) {
        CHECK(fseek(stdin, 0, SEEK_SET) != 0); /* really a pipe */
        CHECK(vio_reader_random_access(r) == 0);
        VidkPicture pic;
        const VioFormat *f = vio_reader_format(r);
        CHECK(vio_picture_alloc(&pic, f) == 0);
        int k;
        while ((k = vio_reader_read(r, &pic)) == 1) {
            if (payload0 && pbytes == vio_frame_bytes(f))
                CHECK(pic_equals_payload(&pic, payload0, f->chroma, f->bitdepth, f->w, f->h));
            ret++;
        }
        if (k < 0) {
            snprintf(err, errlen, "%s", vio_reader_error(r));
            ret = k;
        }
        vidk_picture_free(&pic);
        vio_reader_close(&r);
    }
    /* Drain so the child never blocks, then restore stdin. */
    char sink[4096];
    while (fread(sink, 1, sizeof(sink), stdin) > 0) {
    }
    dup2(saved, 0);
    close(saved);
    clearerr(stdin);
    int status;
    waitpid(pid, &status, 0);
    return ret;
}

static void test_pipes(void) {
    /* 3 frames of 320x240 (115200 bytes each: more than a pipe holds). */
    Buf s = {0}, p0 = {0};
    buf_printf(&s, "YUV4MPEG2 W320 H240 F30:1 Ip A1:1 C420jpeg\n");
    gen_payload(&p0, VIDK_CHROMA_420, 8, 320, 240);
    for (int i = 0; i < 3; i++) {
        buf_printf(&s, "FRAME\n");
        buf_put(&s, p0.p, p0.n);
    }
    char err[2048] = "";
    int n = read_via_pipe(s.p, s.n, NULL, p0.p, p0.n, err, sizeof(err));
    if (n != 3) fprintf(stderr, "  pipe Y4M: %d (%s)\n", n, err);
    CHECK(n == 3);
    /* Truncated through a pipe: the third frame is an error naming stdin. */
    n = read_via_pipe(s.p, s.n - 1000, NULL, p0.p, p0.n, err, sizeof(err));
    CHECK(n == VIDK_ERR(EINVAL) &&
          msg_ok(err, "stdin", "frame 2 truncated (got 114200 of 115200 bytes)"));
    n = read_via_pipe(s.p, 0, NULL, NULL, 0, err, sizeof(err));
    CHECK(n == VIDK_ERR(ENODATA) && msg_ok(err, "stdin", "empty input"));
    /* Raw 10-bit 4:2:2 through a pipe. */
    buf_free(&s);
    buf_free(&p0);
    gen_payload(&p0, VIDK_CHROMA_422, 10, 99, 77);
    for (int i = 0; i < 4; i++)
        buf_put(&s, p0.p, p0.n);
    VioFormat raw;
    vio_format_default(&raw);
    CHECK(vio_parse_pixfmt("yuv422p10le", &raw) == 0);
    raw.w = 99;
    raw.h = 77;
    n = read_via_pipe(s.p, s.n, &raw, p0.p, p0.n, err, sizeof(err));
    if (n != 4) fprintf(stderr, "  pipe raw: %d (%s)\n", n, err);
    CHECK(n == 4);
    n = read_via_pipe(s.p, s.n - 2, &raw, p0.p, p0.n, err, sizeof(err));
    CHECK(n == VIDK_ERR(EINVAL) && msg_ok(err, "stdin", "frame 3 truncated"));
    buf_free(&s);
    buf_free(&p0);
}

/* ---- random access (vio_reader_read_at, vio_reader_seek_frame) ------------------------ */

/* Same samples, margins included. */
static int pic_same(const VidkPicture *a, const VidkPicture *b) {
    const int bps = a->bitdepth > 8 ? 2 : 1;
    for (int p = 0; p < model_planes(a->chroma); p++) {
        int pw, ph;
        model_dims(a->chroma, a->w, a->h, p, &pw, &ph);
        const int sx = p && (a->chroma == VIDK_CHROMA_420 || a->chroma == VIDK_CHROMA_422);
        const int sy = p && a->chroma == VIDK_CHROMA_420;
        const int mx = a->pad >> sx, my = a->pad >> sy;
        for (int y = -my; y < ph + my; y++)
            if (memcmp((const uint8_t *)a->data[p] + y * a->stride[p] - mx * bps,
                       (const uint8_t *)b->data[p] + y * b->stride[p] - mx * bps,
                       (size_t)(pw + 2 * mx) * (size_t)bps))
                return 0;
    }
    return 1;
}

#define RA_MAX 16

/* What reading a file gives: the frames, then the end (0) or an error (code, message). */
typedef struct RaRun {
    VidkPicture pic[RA_MAX];
    int n, code, frames_after;
    char err[2048];
} RaRun;

static void ra_run_free(RaRun *o) {
    for (int i = 0; i < RA_MAX; i++)
        vidk_picture_free(&o->pic[i]);
}

/* Read the file as vidkern encode does (par: frame k at its offset while every frame so
 * far was, then vio_reader_seek_frame() and in order; 0: in order only) into o. Returns
 * the frames read at their offsets. */
static int ra_read(const char *p, const VioFormat *raw, int par, RaRun *o) {
    char err[2048];
    VioReader *r = NULL;
    memset(o, 0, sizeof(*o));
    if (vio_reader_open(&r, p, raw, err, sizeof(err)) < 0) {
        fprintf(stderr, "  open %s: %s\n", p, err);
        CHECK(0);
        return 0;
    }
    CHECK(vio_reader_random_access(r) == 1);
    int k = 0, at = 0;
    if (par) {
        for (; k < RA_MAX; k++) {
            CHECK(vio_picture_alloc(&o->pic[k], vio_reader_format(r)) == 0);
            if (vio_reader_read_at(r, k, &o->pic[k]) != 1) break;
        }
        at = k;
        CHECK(vio_reader_frames(r) == 0); /* read_at changes no state */
        if (k < RA_MAX) CHECK(vio_reader_seek_frame(r, k) == 0);
    }
    for (; k < RA_MAX; k++) {
        if (!o->pic[k].data[0]) CHECK(vio_picture_alloc(&o->pic[k], vio_reader_format(r)) == 0);
        const int e = vio_reader_read(r, &o->pic[k]);
        if (e <= 0) {
            o->code = e;
            snprintf(o->err, sizeof(o->err), "%s", vio_reader_error(r));
            break;
        }
    }
    o->n = k;
    o->frames_after = vio_reader_frames(r);
    vio_reader_close(&r);
    return at;
}

/* The file s read at offsets then in order gives what reading in order gives: n frames
 * (at least `at` of them at their offsets), then code. */
static void ra_case(const char *label, const Buf *s, const VioFormat *raw, int n, int at,
                    int code) {
    char p[600];
    tpath(p, sizeof(p), "ra.bin");
    write_file(p, s->p, s->n);
    RaRun seq, par;
    ra_read(p, raw, 0, &seq);
    const int got_at = ra_read(p, raw, 1, &par);
    int ok = seq.n == n && par.n == n && seq.code == code && par.code == code &&
             !strcmp(seq.err, par.err) && seq.frames_after == par.frames_after &&
             got_at >= at && (code || got_at <= n);
    for (int i = 0; ok && i < n; i++)
        ok = pic_same(&seq.pic[i], &par.pic[i]);
    if (!ok)
        fprintf(stderr,
                "  random access %s: in order %d frames, %d '%s'; at offsets (%d of them) %d, "
                "%d '%s'; want %d frames (%d at offsets), %d\n",
                label, seq.n, seq.code, seq.err, got_at, par.n, par.code, par.err, n, at, code);
    CHECK(ok);
    ra_run_free(&seq);
    ra_run_free(&par);
}

typedef struct RaThread {
    const char *path;
    VioReader *r;
    int first, nframes, bad;
    const Buf *payload;
} RaThread;

static void *ra_thread(void *arg) {
    RaThread *t = arg;
    const VioFormat *f = vio_reader_format(t->r);
    VidkPicture pic;
    if (vio_picture_alloc(&pic, f) < 0) {
        t->bad = 1;
        return NULL;
    }
    for (int i = 0; i < 4 * t->nframes; i++) {
        const int k = (t->first + 5 * i) % t->nframes;
        if (vio_reader_read_at(t->r, k, &pic) != 1 ||
            !pic_equals_payload(&pic, t->payload[k].p, f->chroma, f->bitdepth, f->w, f->h))
            t->bad++;
    }
    vidk_picture_free(&pic);
    return NULL;
}

static void test_random_access(void) {
    enum { N = 9 };
    const int EI = VIDK_ERR(EINVAL);
    static const struct {
        const char *hdr;
        VidkChroma c;
        int bd, w, h;
    } fmts[] = {
        {"YUV4MPEG2 W37 H23 F25:1", VIDK_CHROMA_420, 8, 37, 23},
        {"YUV4MPEG2 W16 H16 C420jpeg", VIDK_CHROMA_420, 8, 16, 16},
        {"YUV4MPEG2 W19 H7 C422p10", VIDK_CHROMA_422, 10, 19, 7},
        {"YUV4MPEG2 W700 H3 Cmono", VIDK_CHROMA_400, 8, 700, 3},
    };
    for (size_t fi = 0; fi < sizeof(fmts) / sizeof(fmts[0]); fi++) {
        const int w = fmts[fi].w, h = fmts[fi].h, bd = fmts[fi].bd;
        const VidkChroma c = fmts[fi].c;
        const size_t fb = model_frame_bytes(c, bd, w, h);
        Buf pay[N] = {{0}}, s = {0};
        for (int i = 0; i < N; i++)
            gen_payload(&pay[i], c, bd, w, h);
            /* param: FRAME line of frame param_at; cut: bytes cut off the end; mark: frame
             * whose marker becomes "FRAMX\n"; junk: bytes after the last frame. */
#define BUILD(param_at, param, mark, cut, junk)                                                \
    do {                                                                                       \
        buf_free(&s);                                                                          \
        buf_printf(&s, "%s\n", fmts[fi].hdr);                                                  \
        for (int i = 0; i < N; i++) {                                                          \
            buf_printf(&s, "%s",                                                               \
                       i == (mark)       ? "FRAMX\n"                                           \
                       : i == (param_at) ? (param)                                             \
                                         : "FRAME\n");                                         \
            buf_put(&s, pay[i].p, pay[i].n);                                                   \
        }                                                                                      \
        buf_printf(&s, "%s", junk);                                                            \
        s.n -= (size_t)(cut);                                                                  \
    } while (0)
        BUILD(-1, "", -1, 0, "");
        ra_case("plain", &s, NULL, N, N, 0);
        /* Every frame at its offset, in any order, by several threads at once. */
        {
            char p[600], err[2048];
            tpath(p, sizeof(p), "ra_threads.y4m");
            write_file(p, s.p, s.n);
            VioReader *r = NULL;
            CHECK(vio_reader_open(&r, p, NULL, err, sizeof(err)) == 0);
            RaThread t[4];
            pthread_t th[4];
            for (int i = 0; i < 4; i++) {
                t[i] = (RaThread){p, r, i, N, 0, pay};
                CHECK(pthread_create(&th[i], NULL, ra_thread, &t[i]) == 0);
            }
            for (int i = 0; i < 4; i++) {
                pthread_join(th[i], NULL);
                CHECK(t[i].bad == 0);
            }
            VidkPicture pic;
            CHECK(vio_picture_alloc(&pic, vio_reader_format(r)) == 0);
            CHECK(vio_reader_read_at(r, N, &pic) == 0); /* past the end */
            CHECK(vio_reader_read_at(r, -1, &pic) == 0);
            CHECK(vio_reader_seek_frame(r, 6) == 0); /* then in order from frame 6 */
            for (int i = 6; i < N; i++) {
                CHECK(vio_reader_read(r, &pic) == 1);
                CHECK(pic_equals_payload(&pic, pay[i].p, c, bd, w, h));
            }
            CHECK(vio_reader_read(r, &pic) == 0);
            CHECK(vio_reader_frames(r) == N);
            vidk_picture_free(&pic);
            vio_reader_close(&r);
            /* stdin redirected from the file has random access too (its offsets start
             * where stdin stands: here after 3 bytes already consumed by someone). */
            buf_free(&s);
            buf_printf(&s, "abc");
            BUILD(-1, "", -1, 0, "");
            Buf t3 = {0};
            buf_printf(&t3, "abc");
            buf_put(&t3, s.p, s.n);
            write_file(p, t3.p, t3.n);
            buf_free(&t3);
            const int fd = open(p, O_RDONLY), saved = dup(0);
            char skip[3];
            CHECK(fd >= 0 && read(fd, skip, 3) == 3 && dup2(fd, 0) == 0);
            close(fd);
            CHECK(vio_reader_open(&r, "-", NULL, err, sizeof(err)) == 0);
            CHECK(vio_reader_random_access(r) == 1);
            CHECK(vio_picture_alloc(&pic, vio_reader_format(r)) == 0);
            CHECK(vio_reader_read_at(r, N - 1, &pic) == 1 &&
                  pic_equals_payload(&pic, pay[N - 1].p, c, bd, w, h));
            CHECK(vio_reader_read(r, &pic) == 1 &&
                  pic_equals_payload(&pic, pay[0].p, c, bd, w, h));
            vidk_picture_free(&pic);
            vio_reader_close(&r);
            dup2(saved, 0);
            close(saved);
            BUILD(-1, "", -1, 0, "");
        }
        BUILD(0, "FRAME Ip\n", -1, 0, "");
        ra_case("parameters at frame 0", &s, NULL, N, 0, 0);
        BUILD(4, "FRAME Ib XA=1\n", -1, 0, "");
        ra_case("parameters at frame 4", &s, NULL, N, 4, 0);
        BUILD(N - 1, "FRAME \n", -1, 0, "");
        ra_case("parameters at the last frame", &s, NULL, N, N - 1, 0);
        BUILD(2, "FRAME Ip\n", -1, 1, "");
        ra_case("parameters at frame 2 and the last frame cut", &s, NULL, N - 1, 2, EI);
        BUILD(-1, "", -1, 1, "");
        ra_case("last frame cut by 1", &s, NULL, N - 1, N - 1, EI);
        BUILD(-1, "", -1, (int)fb / 2, "");
        ra_case("last frame cut in half", &s, NULL, N - 1, N - 1, EI);
        BUILD(-1, "", -1, (int)fb + 3, "");
        ra_case("cut in the last FRAME marker", &s, NULL, N - 1, N - 1, EI);
        BUILD(-1, "", 5, 0, "");
        ra_case("bad marker at frame 5", &s, NULL, 5, 5, EI);
        BUILD(-1, "", -1, 0, "F");
        ra_case("junk after the last frame", &s, NULL, N, N, EI);
        BUILD(-1, "", -1, 0, "FRAME\n");
        ra_case("a FRAME line alone at the end", &s, NULL, N, N, EI);
        if (bd > 8) {
            /* A sample above the maximum in frame 3: the error of reading in order. */
            BUILD(-1, "", -1, 0, "");
            const size_t hl = strlen(fmts[fi].hdr) + 1;
            s.p[hl + 3 * (6 + fb) + 6 + ((fb / 2) | 1)] = 0xff; /* a high byte */
            ra_case("sample above the maximum", &s, NULL, 3, 3, VIDK_ERR(ERANGE));
        }
        /* Raw: frames at k * frame_bytes; a cut last frame. */
        VioFormat raw;
        vio_format_default(&raw);
        raw.w = w, raw.h = h, raw.chroma = c, raw.bitdepth = bd;
        buf_free(&s);
        for (int i = 0; i < N; i++)
            buf_put(&s, pay[i].p, pay[i].n);
        ra_case("raw", &s, &raw, N, N, 0);
        s.n -= 1;
        ra_case("raw, last frame cut", &s, &raw, N - 1, N - 1, EI);
#undef BUILD
        buf_free(&s);
        for (int i = 0; i < N; i++)
            buf_free(&pay[i]);
    }
    /* No random access through a stream of the caller. */
    static const char one[] = "YUV4MPEG2 W2 H2\nFRAME\n123456";
    char p[600], err[2048];
    tpath(p, sizeof(p), "ra_stream.y4m");
    write_file(p, one, sizeof(one) - 1);
    FILE *f = fopen(p, "rb");
    VioReader *r = NULL;
    CHECK(f && vio_reader_open_stream(&r, f, "s", NULL, err, sizeof(err)) == 0);
    CHECK(vio_reader_random_access(r) == 0);
    CHECK(vio_reader_seek_frame(r, 0) == VIDK_ERR(EINVAL));
    vio_reader_close(&r);
    if (f) fclose(f);
}

/* ---- writer failures ---------------------------------------------------------------- */

static void test_writer_errors(void) {
    char p[600], err[2048];
    VioWriter *w = NULL;
    VioFormat f;
    vio_format_default(&f);
    tpath(p, sizeof(p), "w.y4m");
    /* Bad formats: nothing created. */
    unlink(p);
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(w == NULL && msg_ok(err, p, "bad output format: 0x0"));
    CHECK(access(p, F_OK) != 0);
    f.w = f.h = 8;
    f.bitdepth = 17;
    CHECK(vio_writer_open(&w, p, &f, 1, err, sizeof(err)) == VIDK_ERR(EINVAL));
    f.bitdepth = 8;
    f.fps_den = 0;
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(msg_ok(err, p, "bad frame rate 25/0") && access(p, F_OK) != 0);
    f.fps_den = 1;
    f.par_num = 1;
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(msg_ok(err, p, "bad aspect ratio 1:0"));
    f.par_num = 0;
    f.interlace = 'x';
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(msg_ok(err, p, "bad interlacing"));
    f.interlace = 'p';
    snprintf(f.y4m_ext, sizeof(f.y4m_ext), "XOK=1 NOTX=2");
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(msg_ok(err, p, "bad Y4M X fields") && access(p, F_OK) != 0);
    snprintf(f.y4m_ext, sizeof(f.y4m_ext), "XA=\n");
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    memset(f.y4m_ext, 'X', sizeof(f.y4m_ext)); /* not terminated */
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    memset(f.y4m_ext, 0, sizeof(f.y4m_ext));
    memset(f.y4m_ext, 'X', sizeof(f.y4m_ext) - 1 - 30); /* header would pass the limit */
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(msg_ok(err, p, "too long"));
    f.y4m_ext[0] = 0;
    /* The OS's errors. */
    char nodir[600];
    tpath(nodir, sizeof(nodir), "no/such/dir.y4m");
    CHECK(vio_writer_open(&w, nodir, &f, 0, err, sizeof(err)) == VIDK_ERR(ENOENT));
    CHECK(create_msg_ok(err, nodir));
    CHECK(vio_writer_open(&w, NULL, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(vio_writer_open(NULL, p, &f, 0, err, sizeof(err)) == VIDK_ERR(EINVAL));

    /* A full disk shows up at a write or at the latest when closing. */
    if (access("/dev/full", W_OK) == 0) {
        for (int big = 0; big < 2; big++) {
            VioFormat g = f;
            g.w = big ? 1920 : 8;
            g.h = big ? 1080 : 8;
            CHECK(vio_writer_open(&w, "/dev/full", &g, 0, err, sizeof(err)) == 0);
            VidkPicture pic;
            CHECK(vio_picture_alloc(&pic, &g) == 0);
            const int we = vio_writer_write(w, &pic);
            if (we < 0) {
                CHECK(we == VIDK_ERR(ENOSPC));
                CHECK(msg_ok(vio_writer_error(w), "/dev/full", "write error: "));
                CHECK(vio_writer_write(w, &pic) == we); /* sticky */
            }
            const int ce = vio_writer_close_msg(&w, err, sizeof(err));
            CHECK(ce == VIDK_ERR(ENOSPC) && w == NULL);
            CHECK(msg_ok(err, "/dev/full", "write error: "));
            CHECK(big == 0 || we < 0); /* 3 MB cannot all sit in a stdio buffer */
            vidk_picture_free(&pic);
        }
    }

    /* Pictures that do not fit the output, samples out of range: refused before any
     * byte of the frame is written. */
    f.w = 6;
    f.h = 4;
    f.bitdepth = 10;
    CHECK(vio_writer_open(&w, p, &f, 0, err, sizeof(err)) == 0);
    VidkPicture pic;
    CHECK(vidk_picture_alloc(&pic, 6, 4, VIDK_CHROMA_420, 8, 0) == 0);
    CHECK(vio_writer_write(w, &pic) == VIDK_ERR(EINVAL));
    CHECK(
        msg_ok(vio_writer_error(w), p, "picture does not match the output (6x4 4:2:0 10-bit"));
    vidk_picture_free(&pic);
    CHECK(vio_picture_alloc(&pic, &f) == 0);
    ((uint16_t *)pic.data[1])[2] = 1024;
    CHECK(vio_writer_write(w, &pic) == VIDK_ERR(ERANGE));
    CHECK(msg_ok(vio_writer_error(w), p, "sample 1024 at plane 1 x 2 y 0"));
    ((uint16_t *)pic.data[1])[2] = 1023;
    CHECK(vio_writer_write(w, &pic) == 0); /* not sticky: the stream is intact */
    CHECK(vio_writer_close(&w) == 0);
    size_t n;
    uint8_t *got = read_file(p, &n);
    const char hdr[] = "YUV4MPEG2 W6 H4 F25:1 Ip A0:0 C420p10\n";
    CHECK(got && n == sizeof(hdr) - 1 + 6 + 2 * (24 + 2 * 6));
    CHECK(got && !memcmp(got, hdr, sizeof(hdr) - 1));
    free(got);
    vidk_picture_free(&pic);
    CHECK(vio_writer_write(NULL, NULL) == VIDK_ERR(EINVAL));
    CHECK(vio_writer_close(NULL) == 0);
}

/* ---- PNG ---------------------------------------------------------------------------- */

static void test_png(void) {
    char p[600], err[1024];
    tpath(p, sizeof(p), "t.png");
    uint8_t img[16 * 9];
    for (int i = 0; i < (int)sizeof(img); i++)
        img[i] = (uint8_t)test_rand(&rng);
    CHECK(vio_write_png(p, img, 5, 3, 4, 1, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(msg_ok(err, p, "bad PNG image"));
    CHECK(vio_write_png(p, img, 5, 3, 16, 2, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(vio_write_png(p, NULL, 5, 3, 16, 1, err, sizeof(err)) == VIDK_ERR(EINVAL));
    CHECK(vio_write_png(p, img, 0, 3, 16, 1, err, sizeof(err)) == VIDK_ERR(EINVAL));
#if VIDK_HAVE_PNG
    /* Gray 13x9 rows 16 apart; RGB 5x3 rows 16 apart (not a whole number of pixels). */
    const int dims[2][4] = {{13, 9, 16, 1}, {5, 3, 16, 3}};
    for (int k = 0; k < 2; k++) {
        const int w = dims[k][0], h = dims[k][1], st = dims[k][2], ch = dims[k][3];
        CHECK(vio_write_png(p, img, w, h, st, ch, err, sizeof(err)) == 0);
        png_image im;
        memset(&im, 0, sizeof(im));
        im.version = PNG_IMAGE_VERSION;
        CHECK(png_image_begin_read_from_file(&im, p) != 0);
        CHECK((int)im.width == w && (int)im.height == h);
        im.format = ch == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
        uint8_t back[16 * 9];
        CHECK(PNG_IMAGE_SIZE(im) <= sizeof(back));
        CHECK(png_image_finish_read(&im, NULL, back, 0, NULL) != 0);
        for (int y = 0; y < h; y++)
            CHECK(!memcmp(back + y * w * ch, img + y * st, (size_t)(w * ch)));
        png_image_free(&im);
    }
    char nodir[600];
    tpath(nodir, sizeof(nodir), "no/such/dir.png");
    CHECK(vio_write_png(nodir, img, 5, 3, 16, 1, err, sizeof(err)) == VIDK_ERR(ENOENT));
    CHECK(create_msg_ok(err, nodir));
#else
    CHECK(vio_write_png(p, img, 5, 3, 16, 1, err, sizeof(err)) == VIDK_ERR(ENOSYS));
    CHECK(msg_ok(err, p, "not available"));
#endif
}

/* ---- real clips --------------------------------------------------------------------- */

/* Every clip of the shared folder: size and frame count as its name says
 * (name_WxH_..._Nf.y4m), and read -> write gives the same file byte for byte. */
static void test_real_clips(const char *dir) {
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) {
        char what[1100];
        snprintf(what, sizeof(what), "real clips: %s not found",
                 dir ? dir : "(no folder given)");
        test_video_missing(what);
        return;
    }
    int clips = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const size_t nl = strlen(de->d_name);
        if (nl < 5 || strcmp(de->d_name + nl - 4, ".y4m")) continue;
        char in[1200], out[600], err[2048];
        snprintf(in, sizeof(in), "%s/%s", dir, de->d_name);
        tpath(out, sizeof(out), "clip.y4m");
        int w = 0, h = 0, frames = -1;
        const char *us = strchr(de->d_name, '_');
        if (us) sscanf(us + 1, "%dx%d", &w, &h);
        const char *last = strrchr(de->d_name, '_');
        if (last) sscanf(last + 1, "%df", &frames);
        VioReader *r = NULL;
        VioWriter *wr = NULL;
        if (vio_reader_open(&r, in, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "  %s\n", err);
            CHECK(0);
            continue;
        }
        const VioFormat *f = vio_reader_format(r);
        CHECK(f->w == w && f->h == h);
        VidkPicture pic;
        CHECK(vio_picture_alloc(&pic, f) == 0);
        CHECK(vio_writer_open(&wr, out, f, 0, err, sizeof(err)) == 0);
        int n = 0, k;
        while ((k = vio_reader_read(r, &pic)) == 1) {
            n++;
            CHECK(vio_writer_write(wr, &pic) == 0);
        }
        CHECK(k == 0);
        CHECK(vio_writer_close(&wr) == 0);
        if (n != frames) fprintf(stderr, "  %s: %d frames, name says %d\n", in, n, frames);
        CHECK(n == frames);
        size_t na, nb;
        uint8_t *a = read_file(in, &na), *b = read_file(out, &nb);
        if (!a || !b || !same_bytes(a, na, b, nb)) {
            fprintf(stderr, "  %s: round trip differs\n", in);
            CHECK(0);
        }
        free(a);
        free(b);
        vidk_picture_free(&pic);
        vio_reader_close(&r);
        fprintf(stderr, "real clip %s: %dx%d, %d frames, round trip identical\n", de->d_name, w,
                h, n);
        clips++;
    }
    closedir(d);
    CHECK(clips > 0);
}

/* ---- main --------------------------------------------------------------------------- */

static int rm_tree_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *de;
    char p[1200];
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        unlink(p);
    }
    closedir(d);
    return rmdir(dir);
}

int main(int argc, char **argv) {
    rng = test_seed();
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/vidk_test_io_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_pixfmt();
    test_roundtrips();
    test_header_variants();
    test_bad_headers();
    test_bad_frames();
    test_pipes();
    test_random_access();
    test_writer_errors();
    test_png();
    test_real_clips(argc > 1 ? argv[1] : NULL);
    rm_tree_files(tmpdir);
    return test_finish("io");
}
