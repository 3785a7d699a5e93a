/* ctest mvfile: VKMV motion-field files (tools/mvfile.c).
 * - random fields round-trip through .bin (header bytes checked independently),
 * - CSV and JSON have the documented shape and carry the same numbers,
 * - every malformed file is rejected with a message: bad magic, version, sizes,
 *   reserved bytes, flags, truncation (header, records, through a pipe-like stream),
 *   trailing data, records out of range or with inconsistent costs,
 * - a writer that is not committed, or cannot create its file, leaves nothing behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mvfile.h"
#include "test_util.h"

static uint32_t seed;
static char dir[256];

static int rnd(int lo, int hi) {
    return lo + (int)(test_rand(&seed) % (uint32_t)(hi - lo + 1));
}

/* Signed Exp-Golomb length written differently from mvfile.c: the ue code of codeNum k
 * has 2 * (number of binary digits of k + 1) - 1 bits (H.264 9.1, Table 9-3). */
static unsigned eg_bits(int v) {
    const unsigned long long k =
        v > 0 ? 2ull * v - 1 : 2ull * (unsigned long long)(-(long long)v);
    unsigned digits = 0;
    for (unsigned long long x = k + 1; x; x >>= 1)
        digits++;
    return 2 * digits - 1;
}

/* Grid of shape bs as documented in vidkern/me.h, computed here independently. */
static void grid(int w, int h, int bs, int *gw, int *gh) {
    static const int bw[VIDK_BLOCK_COUNT] = {4, 8, 4, 8, 16, 8, 16, 32, 64};
    static const int bh[VIDK_BLOCK_COUNT] = {4, 4, 8, 8, 8, 16, 16, 32, 64};
    if (bw[bs] > 16) {
        *gw = (w + bw[bs] - 1) / bw[bs];
        *gh = (h + bh[bs] - 1) / bh[bs];
    } else {
        *gw = (w + 15) / 16 * 16 / bw[bs];
        *gh = (h + 15) / 16 * 16 / bh[bs];
    }
}

static void random_field(VidkMeField *f, const MvfInfo *in, int pred) {
    const uint32_t maxs = (1u << in->bitdepth) - 1;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(in->shapes & VIDK_ME_SHAPE(bs))) continue;
        const uint32_t area = (uint32_t)(vidk_block_width(bs) * vidk_block_height(bs));
        const size_t n = (size_t)f->grid_w[bs] * f->grid_h[bs];
        for (size_t i = 0; i < n; i++) {
            VidkMeResult *r = &f->res[bs][i];
            const int kind = rnd(0, 9);
            /* extremes (+-R, SAD 0 and maximal) as well as random values */
            r->mv.x = (int16_t)(kind == 0   ? -in->range
                                : kind == 1 ? in->range
                                            : rnd(-in->range, in->range));
            r->mv.y = (int16_t)(kind == 2   ? -in->range
                                : kind == 3 ? in->range
                                            : rnd(-in->range, in->range));
            r->sad = kind == 4   ? 0
                     : kind == 5 ? area * maxs
                                 : test_rand(&seed) % (area * maxs + 1);
            unsigned bits = eg_bits(r->mv.x) + eg_bits(r->mv.y);
            if (pred) bits = (unsigned)rnd(2, 40);
            r->cost = r->sad + in->lambda * bits;
        }
    }
}

static int fields_equal(const VidkMeField *a, const VidkMeField *b, unsigned shapes) {
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(shapes & VIDK_ME_SHAPE(bs))) continue;
        const size_t n = (size_t)a->grid_w[bs] * a->grid_h[bs];
        for (size_t i = 0; i < n; i++) {
            const VidkMeResult *x = &a->res[bs][i], *y = &b->res[bs][i];
            if (x->mv.x != y->mv.x || x->mv.y != y->mv.y || x->cost != y->cost ||
                x->sad != y->sad)
                return 0;
        }
    }
    return 1;
}

static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    return n;
}

static int exists(const char *path) {
    return access(path, F_OK) == 0;
}

static unsigned char *slurp(const char *path, long *n) {
    *n = file_size(path);
    if (*n < 0) return NULL;
    unsigned char *b = malloc((size_t)*n + 1);
    FILE *f = fopen(path, "rb");
    if (!b || !f || fread(b, 1, (size_t)*n, f) != (size_t)*n) {
        free(b);
        if (f) fclose(f);
        return NULL;
    }
    fclose(f);
    b[*n] = 0;
    return b;
}

static void spill(const char *path, const unsigned char *b, long n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, (size_t)n, f) == (size_t)n);
    if (f) fclose(f);
}

static uint32_t le32(const unsigned char *p) {
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void set32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Write `frames` fields to path in format fmt; the fields are kept in fs[]. */
static void write_fields(const char *path, MvfFormat fmt, const MvfInfo *in, VidkMeField *fs,
                         int frames) {
    MvfWriter *w = NULL;
    char err[256] = "";
    remove(path);
    CHECK(mvf_writer_open(&w, path, fmt, in, err, sizeof(err)) == 0);
    for (int i = 0; i < frames; i++)
        CHECK(mvf_writer_frame(w, &fs[i], err, sizeof(err)) == 0);
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    CHECK(exists(tmp) && !exists(path)); /* nothing at PATH until committed */
    CHECK(mvf_writer_close(&w, 1, err, sizeof(err)) == 0);
    CHECK(!w && exists(path) && !exists(tmp));
}

/* Count the data rows of a CSV and check them against the fields. */
static void check_csv(const char *path, const MvfInfo *in, VidkMeField *fs, int frames) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return;
    char line[256];
    CHECK(fgets(line, sizeof(line), f) &&
          !strcmp(line, "frame,shape,bx,by,x,y,mvx,mvy,cost,sad\n"));
    for (int fr = 0; fr < frames; fr++)
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(in->shapes & VIDK_ME_SHAPE(bs))) continue;
            int gw, gh;
            grid(in->w, in->h, bs, &gw, &gh);
            for (int by = 0; by < gh; by++)
                for (int bx = 0; bx < gw; bx++) {
                    const VidkMeResult *r = &fs[fr].res[bs][by * gw + bx];
                    char want[256];
                    snprintf(want, sizeof(want), "%d,%s,%d,%d,%d,%d,%d,%d,%u,%u\n", fr,
                             vidk_block_name(bs), bx, by, bx * vidk_block_width(bs),
                             by * vidk_block_height(bs), r->mv.x, r->mv.y, (unsigned)r->cost,
                             (unsigned)r->sad);
                    if (!fgets(line, sizeof(line), f) || strcmp(line, want)) {
                        CHECK(!"CSV row differs");
                        fprintf(stderr, "  got  %s  want %s", line, want);
                        fclose(f);
                        return;
                    }
                }
        }
    CHECK(!fgets(line, sizeof(line), f)); /* no extra rows */
    fclose(f);
}

/* JSON: balanced structure, the metadata, and the numbers of every block in order. */
static void check_json(const char *path, const MvfInfo *in, VidkMeField *fs, int frames) {
    long n;
    char *s = (char *)slurp(path, &n);
    CHECK(s != NULL);
    if (!s) return;
    int depth = 0, ok = 1, instr = 0;
    for (long i = 0; i < n; i++) {
        const char c = s[i];
        if (instr) {
            if (c == '\\')
                i++;
            else if (c == '"')
                instr = 0;
            continue;
        }
        if (c == '"')
            instr = 1;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            ok &= --depth >= 0;
    }
    CHECK(ok && depth == 0 && !instr && s[0] == '{');
    CHECK(strstr(s, "\"format\": \"vidkern-mv\"") != NULL);
    char want[128];
    snprintf(want, sizeof(want), "\"frame_count\": %d", frames);
    CHECK(strstr(s, want) != NULL);
    snprintf(want, sizeof(want), "\"width\": %d", in->w);
    CHECK(strstr(s, want) != NULL);
    snprintf(want, sizeof(want), "\"range\": %d", in->range);
    CHECK(strstr(s, want) != NULL);
    /* Walk the "blocks" arrays in file order. */
    const char *p = s;
    for (int fr = 0; fr < frames && ok; fr++) {
        snprintf(want, sizeof(want), "{\"frame\": %d, ", fr);
        p = strstr(p, want);
        CHECK(p != NULL);
        if (!p) break;
        for (int bs = 0; bs < VIDK_BLOCK_COUNT && ok; bs++) {
            if (!(in->shapes & VIDK_ME_SHAPE(bs))) continue;
            int gw, gh;
            grid(in->w, in->h, bs, &gw, &gh);
            snprintf(want, sizeof(want), "\"%s\": {\"grid_w\": %d, \"grid_h\": %d,",
                     vidk_block_name(bs), gw, gh);
            p = strstr(p, want);
            CHECK(p != NULL);
            if (!p || !(p = strstr(p, "\"blocks\": ["))) {
                ok = 0;
                break;
            }
            p += strlen("\"blocks\": [");
            for (int i = 0; i < gw * gh; i++) {
                int x, y;
                unsigned c, d, used = 0;
                while (*p == ',' || *p == '\n' || *p == ' ')
                    p++;
                if (sscanf(p, "[%d,%d,%u,%u]%n", &x, &y, &c, &d, &used) != 4 || !used) {
                    CHECK(!"JSON block array malformed");
                    ok = 0;
                    break;
                }
                const VidkMeResult *r = &fs[fr].res[bs][i];
                if (x != r->mv.x || y != r->mv.y || c != r->cost || d != r->sad) {
                    CHECK(!"JSON block differs");
                    ok = 0;
                    break;
                }
                p += used;
            }
            CHECK(ok && *p == ']');
        }
    }
    free(s);
}

/* Read a VKMV file completely; returns 0 if every frame read and matched fs (when given),
 * <0 on the first error (message must be set). */
static int read_all(const char *path, VidkMeField *fs, int frames) {
    MvfReader *r = NULL;
    MvfInfo info;
    char err[512] = "";
    int ret = mvf_reader_open(&r, path, &info, err, sizeof(err));
    if (ret < 0) {
        CHECK(err[0] != 0 && r == NULL);
        if (getenv("VIDK_TEST_VERBOSE")) fprintf(stderr, "  rejected: %s\n", err);
        return ret;
    }
    VidkMeField f;
    CHECK(vidk_me_field_alloc(&f, info.w, info.h, info.shapes) == 0);
    int n = 0;
    for (;;) {
        ret = mvf_reader_frame(r, &f, err, sizeof(err));
        if (ret <= 0) break;
        if (fs && (n >= frames || !fields_equal(&f, &fs[n], info.shapes)))
            CHECK(!"read-back differs");
        n++;
    }
    if (ret < 0) CHECK(err[0] != 0);
    if (ret < 0 && getenv("VIDK_TEST_VERBOSE")) fprintf(stderr, "  rejected: %s\n", err);
    if (!ret && fs) CHECK(n == frames);
    mvf_reader_close(&r);
    vidk_me_field_free(&f);
    return ret;
}

static void path_of(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", dir, name);
}

static void test_bits(void) {
    /* Table 9-3 of H.264: se(v) codeNum 0 -> 1 bit, 1..2 -> 3, 3..6 -> 5, 7..14 -> 7. */
    static const struct {
        int v;
        unsigned bits;
    } t[] = {{0, 1},  {1, 3}, {-1, 3}, {2, 5},    {-2, 5},    {3, 5},      {-3, 5},     {4, 7},
             {-7, 7}, {8, 9}, {-8, 9}, {255, 17}, {-256, 19}, {32767, 31}, {-32768, 33}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        CHECK_EQ_U(mvf_se_bits(t[i].v), t[i].bits);
        CHECK_EQ_U(eg_bits(t[i].v), t[i].bits);
        CHECK_EQ_U(vidk_me_mv_bits(t[i].v), t[i].bits);
    }
    for (int v = -600; v <= 600; v++)
        CHECK_EQ_U(mvf_se_bits(v), eg_bits(v));
}

static void test_roundtrip(void) {
    static const int sizes[][2] = {{16, 16},  {17, 33}, {1, 1},   {352, 288},
                                   {100, 37}, {64, 64}, {130, 70}};
    for (int it = 0; it < 24; it++) {
        const int w = it < 7 ? sizes[it][0] : rnd(1, 200),
                  h = it < 7 ? sizes[it][1] : rnd(1, 120);
        unsigned shapes = it % 3 == 0   ? VIDK_ME_SHAPES_ALL
                          : it % 3 == 1 ? VIDK_ME_SHAPE(VIDK_BLOCK_16x16)
                                        : (test_rand(&seed) & VIDK_ME_SHAPES_ALL);
        if (!shapes) shapes = VIDK_ME_SHAPE(VIDK_BLOCK_4x4);
        const int range = it == 0 ? 0 : it == 1 ? VIDK_ME_MAX_RANGE : rnd(0, 140);
        const unsigned lambda = it % 4 == 0 ? 0
                                : it == 5   ? VIDK_ME_MAX_LAMBDA
                                            : (unsigned)rnd(1, 300);
        const int bitdepth = it % 5 == 4 ? 10 : it == 6 ? 16 : 8;
        const int pred = lambda && it % 7 == 3;
        MvfInfo in;
        mvf_info_init(&in, w, h, bitdepth, shapes, range, lambda);
        if (pred) in.flags |= MVF_FLAG_PRED;
        if (it % 2) in.flags |= MVF_FLAG_REF_FILE;
        const int frames = it == 2 ? 0 : rnd(1, 3);
        VidkMeField fs[3];
        memset(fs, 0, sizeof(fs));
        for (int i = 0; i < frames; i++) {
            CHECK(vidk_me_field_alloc(&fs[i], w, h, shapes) == 0);
            for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
                if (!(shapes & VIDK_ME_SHAPE(bs))) continue;
                int gw, gh;
                grid(w, h, bs, &gw, &gh);
                CHECK(fs[i].grid_w[bs] == gw && fs[i].grid_h[bs] == gh);
            }
            random_field(&fs[i], &in, pred);
        }
        char bin[300], csv[300], json[300];
        path_of(bin, sizeof(bin), "rt.bin");
        path_of(csv, sizeof(csv), "rt.csv");
        path_of(json, sizeof(json), "rt.json");
        write_fields(bin, MVF_FORMAT_BIN, &in, fs, frames);
        write_fields(csv, MVF_FORMAT_CSV, &in, fs, frames);
        write_fields(json, MVF_FORMAT_JSON, &in, fs, frames);

        /* Header, checked byte by byte against docs/MVFORMAT.md. */
        long n;
        unsigned char *b = slurp(bin, &n);
        uint64_t recs = 0;
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
            if (shapes & VIDK_ME_SHAPE(bs)) {
                int gw, gh;
                grid(w, h, bs, &gw, &gh);
                recs += (uint64_t)gw * gh;
            }
        CHECK(b && n == (long)(64 + recs * 12 * (uint64_t)frames));
        if (b && n >= 64) {
            CHECK(!memcmp(b, "VKMV", 4));
            CHECK(b[4] == 1 && b[5] == 0 && b[6] == 64 && b[7] == 0 && b[8] == 12 && b[9] == 0);
            CHECK(b[10] == bitdepth && b[11] == 0);
            CHECK(le32(b + 12) == (uint32_t)w && le32(b + 16) == (uint32_t)h);
            CHECK(le32(b + 20) == (uint32_t)(w + 15) / 16 &&
                  le32(b + 24) == (uint32_t)(h + 15) / 16);
            CHECK(le32(b + 28) == shapes && le32(b + 32) == (uint32_t)range);
            CHECK(le32(b + 36) == lambda && le32(b + 40) == (uint32_t)frames);
            CHECK(le32(b + 44) == in.flags);
            for (int i = 48; i < 64; i++)
                CHECK(b[i] == 0);
            /* First record of the first shape: int16 LE mvx, mvy, uint32 cost, sad. */
            if (frames) {
                int bs0 = 0;
                while (!(shapes & VIDK_ME_SHAPE(bs0)))
                    bs0++;
                const VidkMeResult *r = &fs[0].res[bs0][0];
                CHECK((int16_t)(b[64] | b[65] << 8) == r->mv.x);
                CHECK((int16_t)(b[66] | b[67] << 8) == r->mv.y);
                CHECK(le32(b + 68) == r->cost && le32(b + 72) == r->sad);
            }
        }
        free(b);
        CHECK(read_all(bin, fs, frames) == 0);
        /* The reader through a stream without a size check (stdin). */
        if (it < 4 && freopen(bin, "rb", stdin)) CHECK(read_all("-", fs, frames) == 0);
        check_csv(csv, &in, fs, frames);
        check_json(json, &in, fs, frames);
        for (int i = 0; i < frames; i++)
            vidk_me_field_free(&fs[i]);
    }
}

/* One malformed variant of a good file: must fail on open or on a frame. */
static void expect_bad(const char *what, const unsigned char *b, long n) {
    char p[300];
    path_of(p, sizeof(p), "bad.bin");
    spill(p, b, n);
    if (getenv("VIDK_TEST_VERBOSE")) fprintf(stderr, "%s:\n", what);
    const int r = read_all(p, NULL, 0);
    if (r >= 0) fprintf(stderr, "accepted a malformed file: %s\n", what);
    CHECK(r < 0);
    /* Same bytes through stdin (no size check: truncation found while reading). */
    if (freopen(p, "rb", stdin)) {
        const int r2 = read_all("-", NULL, 0);
        if (r2 >= 0) fprintf(stderr, "accepted a malformed stream: %s\n", what);
        CHECK(r2 < 0);
    }
}

static void test_malformed(void) {
    const int w = 40, h = 24;
    MvfInfo in;
    mvf_info_init(&in, w, h, 8, VIDK_ME_SHAPE(VIDK_BLOCK_16x16) | VIDK_ME_SHAPE(VIDK_BLOCK_4x4),
                  8, 4);
    VidkMeField fs[2];
    for (int i = 0; i < 2; i++) {
        CHECK(vidk_me_field_alloc(&fs[i], w, h, in.shapes) == 0);
        random_field(&fs[i], &in, 0);
    }
    char good[300];
    path_of(good, sizeof(good), "good.bin");
    write_fields(good, MVF_FORMAT_BIN, &in, fs, 2);
    CHECK(read_all(good, fs, 2) == 0);
    long n;
    unsigned char *g = slurp(good, &n);
    CHECK(g != NULL);
    if (!g) return;
    unsigned char *b = malloc((size_t)n + 16);
    const long rec0 = 64; /* first record: a 4x4 block (shape order rises) */
#define VARIANT(what, edit, len)                                                               \
    do {                                                                                       \
        memcpy(b, g, (size_t)n);                                                               \
        memset(b + n, 0, 16);                                                                  \
        edit;                                                                                  \
        expect_bad(what, b, len);                                                              \
    } while (0)
    VARIANT("empty file", (void)0, 0);
    VARIANT("3 bytes", (void)0, 3);
    VARIANT("truncated header", (void)0, 40);
    VARIANT("header only, frames announced", (void)0, 64);
    VARIANT("bad magic", b[0] = 'X', n);
    VARIANT("version 2", b[4] = 2, n);
    VARIANT("version 0", b[4] = 0, n);
    VARIANT("header size 65", b[6] = 65, n);
    VARIANT("record size 16", b[8] = 16, n);
    VARIANT("bit depth 7", b[10] = 7, n);
    VARIANT("bit depth 17", b[10] = 17, n);
    VARIANT("width 0", set32(b + 12, 0), n);
    VARIANT("width 16385", (set32(b + 12, 16385), set32(b + 20, 1025)), n);
    VARIANT("width 2^32-1", set32(b + 12, 0xffffffffu), n);
    VARIANT("height 2^31", set32(b + 16, 0x80000000u), n);
    VARIANT("mb_w mismatch", set32(b + 20, 4), n);
    VARIANT("mb_h mismatch", set32(b + 24, 1), n);
    VARIANT("width changed, mb_w consistent (size mismatch)",
            (set32(b + 12, 80), set32(b + 20, 5)), n);
    VARIANT("shapes 0", set32(b + 28, 0), n);
    VARIANT("unknown shape bit", set32(b + 28, le32(b + 28) | 1u << 9), n);
    VARIANT("range 257", set32(b + 32, 257), n);
    VARIANT("range 2^31", set32(b + 32, 0x80000000u), n);
    VARIANT("lambda 65536", set32(b + 36, 65536), n);
    VARIANT("unknown flag", set32(b + 44, 4), n);
    VARIANT("reserved byte", b[50] = 1, n);
    VARIANT("reserved last byte", b[63] = 1, n);
    VARIANT("one frame more announced", set32(b + 40, 3), n);
    VARIANT("2^32-1 frames announced", set32(b + 40, 0xffffffffu), n);
    VARIANT("one byte short", (void)0, n - 1);
    VARIANT("one record short", (void)0, n - 12);
    VARIANT("one frame short", (void)0, 64 + (n - 64) / 2);
    VARIANT("one byte trailing", (void)0, n + 1);
    VARIANT("one record trailing", (void)0, n + 12);
    VARIANT("fewer frames announced", set32(b + 40, 1), n);
    VARIANT("mvx above range", (b[rec0] = 9, b[rec0 + 1] = 0), n);
    VARIANT("mvy below -range", (b[rec0 + 2] = 0xf7, b[rec0 + 3] = 0xff), n);
    VARIANT("mvx -32768", (b[rec0] = 0, b[rec0 + 1] = 0x80), n);
    VARIANT("sad above 16*255",
            (set32(b + rec0 + 8, 16 * 255 + 1), set32(b + rec0 + 4, 0x7fffffff)), n);
    VARIANT("cost below sad", (set32(b + rec0 + 8, 10), set32(b + rec0 + 4, 9)), n);
    VARIANT("cost != sad + lambda * bits", set32(b + rec0 + 4, le32(b + rec0 + 4) + 1), n);
    VARIANT("lambda 0 but cost != sad",
            (set32(b + 36, 0), set32(b + rec0 + 4, le32(b + rec0 + 8) + 4)), n);
    VARIANT("predictor: cost - sad not a multiple of lambda",
            (set32(b + 44, MVF_FLAG_PRED), set32(b + rec0 + 4, le32(b + rec0 + 8) + 9)), n);
    VARIANT("predictor: cost - sad = lambda (1 bit, below 2)",
            (set32(b + 44, MVF_FLAG_PRED), set32(b + rec0 + 4, le32(b + rec0 + 8) + 4)), n);
    /* Last record of the file corrupted: found only at the end. */
    VARIANT("last record sad too large", set32(b + n - 4, 0xffffffffu), n);
#undef VARIANT
    /* Sanity of the harness: the unmodified bytes still pass, also through stdin. */
    memcpy(b, g, (size_t)n);
    char p[300];
    path_of(p, sizeof(p), "bad.bin");
    spill(p, b, n);
    CHECK(read_all(p, fs, 2) == 0);
    if (freopen(p, "rb", stdin)) CHECK(read_all("-", fs, 2) == 0);
    /* Reading into a field of another size is refused. */
    {
        MvfReader *r = NULL;
        MvfInfo info;
        char err[256];
        VidkMeField other;
        CHECK(mvf_reader_open(&r, p, &info, err, sizeof(err)) == 0);
        CHECK(vidk_me_field_alloc(&other, w + 16, h, info.shapes) == 0);
        CHECK(mvf_reader_frame(r, &other, err, sizeof(err)) < 0);
        vidk_me_field_free(&other);
        mvf_reader_close(&r);
        CHECK(r == NULL);
    }
    char missing[300];
    path_of(missing, sizeof(missing), "does-not-exist.bin");
    CHECK(read_all(missing, NULL, 0) < 0);
    free(b);
    free(g);
    for (int i = 0; i < 2; i++)
        vidk_me_field_free(&fs[i]);
}

static void test_writer_failures(void) {
    MvfInfo in;
    mvf_info_init(&in, 32, 32, 8, VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 4, 0);
    VidkMeField f;
    CHECK(vidk_me_field_alloc(&f, 32, 32, in.shapes) == 0);
    random_field(&f, &in, 0);
    char p[300], tmp[320], err[256];
    /* Not committed: neither PATH nor PATH.tmp remains. */
    path_of(p, sizeof(p), "abort.bin");
    snprintf(tmp, sizeof(tmp), "%s.tmp", p);
    for (int fmt = 0; fmt < 3; fmt++) {
        MvfWriter *w = NULL;
        CHECK(mvf_writer_open(&w, p, (MvfFormat)fmt, &in, err, sizeof(err)) == 0);
        CHECK(mvf_writer_frame(w, &f, err, sizeof(err)) == 0);
        CHECK(mvf_writer_close(&w, 0, err, sizeof(err)) == 0);
        CHECK(!w && !exists(p) && !exists(tmp));
    }
    /* Uncreatable output: a clear error, nothing created. */
    MvfWriter *w = NULL;
    path_of(p, sizeof(p), "no-such-dir/out.bin");
    err[0] = 0;
    CHECK(mvf_writer_open(&w, p, MVF_FORMAT_BIN, &in, err, sizeof(err)) < 0);
    CHECK(!w && err[0] && strstr(err, "no-such-dir") != NULL);
    /* Bad header values are refused by the writer too. */
    MvfInfo bad = in;
    bad.range = VIDK_ME_MAX_RANGE + 1;
    path_of(p, sizeof(p), "badinfo.bin");
    CHECK(mvf_writer_open(&w, p, MVF_FORMAT_BIN, &bad, err, sizeof(err)) < 0 && !exists(p));
    /* A field of another size is refused; the file is then not committed by the caller. */
    CHECK(mvf_writer_open(&w, p, MVF_FORMAT_BIN, &in, err, sizeof(err)) == 0);
    VidkMeField g;
    CHECK(vidk_me_field_alloc(&g, 48, 32, in.shapes) == 0);
    CHECK(mvf_writer_frame(w, &g, err, sizeof(err)) < 0);
    CHECK(mvf_writer_close(&w, 0, err, sizeof(err)) == 0 && !exists(p));
    vidk_me_field_free(&g);
    /* Shapes missing from the field are refused. */
    MvfInfo more = in;
    more.shapes |= VIDK_ME_SHAPE(VIDK_BLOCK_8x8);
    CHECK(mvf_writer_open(&w, p, MVF_FORMAT_CSV, &more, err, sizeof(err)) == 0);
    CHECK(mvf_writer_frame(w, &f, err, sizeof(err)) < 0);
    mvf_writer_close(&w, 0, err, sizeof(err));
    /* Extensions. */
    CHECK(mvf_format_from_path("a.bin") == MVF_FORMAT_BIN);
    CHECK(mvf_format_from_path("a.vkmv") == MVF_FORMAT_BIN);
    CHECK(mvf_format_from_path("x/a.csv") == MVF_FORMAT_CSV);
    CHECK(mvf_format_from_path("a.json") == MVF_FORMAT_JSON);
    CHECK(mvf_format_from_path("a.txt") < 0 && mvf_format_from_path("dir.csv/a") < 0);
    CHECK(mvf_format_from_path("noext") < 0);
    vidk_me_field_free(&f);
}

int main(void) {
    seed = test_seed();
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/vidk_mvfile_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_bits();
    test_roundtrip();
    test_malformed();
    test_writer_failures();
    /* Clean up the scratch folder. */
    static const char *const names[] = {"rt.bin", "rt.csv", "rt.json", "good.bin", "bad.bin"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char p[300];
        path_of(p, sizeof(p), names[i]);
        remove(p);
    }
    rmdir(dir);
    return test_finish("mvfile");
}
