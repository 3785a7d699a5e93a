/* VKMV motion-field files (docs/MVFORMAT.md): writer, validating reader, CSV/JSON. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mvfile.h"
#include "le_bytes.h"
#include "picio.h"

#if defined(__GNUC__)
#define MVF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MVF_PRINTF(a, b)
#endif

static int fail(char *err, size_t errlen, const char *fmt, ...) MVF_PRINTF(3, 4);
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void mvf_info_init(MvfInfo *info, int w, int h, int bitdepth, unsigned shapes, int range,
                   unsigned lambda) {
    memset(info, 0, sizeof(*info));
    info->w = w;
    info->h = h;
    info->mb_w = (w + 15) / 16;
    info->mb_h = (h + 15) / 16;
    info->bitdepth = bitdepth;
    info->shapes = shapes;
    info->range = range;
    info->lambda = lambda;
}

void mvf_grid(int w, int h, VidkBlockSize bs, int *gw, int *gh) {
    const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
    if (bw > 16) { /* 32x32, 64x64 cover the picture itself */
        *gw = (w + bw - 1) / bw;
        *gh = (h + bh - 1) / bh;
    } else { /* H.264 partitions cover the macroblock grid */
        *gw = (w + 15) / 16 * (16 / bw);
        *gh = (h + 15) / 16 * (16 / bh);
    }
}

uint64_t mvf_frame_records(const MvfInfo *info) {
    uint64_t n = 0;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(info->shapes & VIDK_ME_SHAPE(bs))) continue;
        int gw, gh;
        mvf_grid(info->w, info->h, (VidkBlockSize)bs, &gw, &gh);
        n += (uint64_t)gw * (uint64_t)gh;
    }
    return n;
}

int mvf_info_check(const MvfInfo *info, char *err, size_t errlen) {
    if (info->w < 1 || info->h < 1 || info->w > VIDK_MAX_PICTURE_SIDE ||
        info->h > VIDK_MAX_PICTURE_SIDE)
        return fail(err, errlen, "picture size %dx%d outside 1..%d", info->w, info->h,
                    VIDK_MAX_PICTURE_SIDE);
    if (info->mb_w != (info->w + 15) / 16 || info->mb_h != (info->h + 15) / 16)
        return fail(err, errlen, "macroblock grid %dx%d does not match picture %dx%d",
                    info->mb_w, info->mb_h, info->w, info->h);
    if (info->bitdepth < 8 || info->bitdepth > 16)
        return fail(err, errlen, "bit depth %d outside 8..16", info->bitdepth);
    if (!info->shapes || (info->shapes & ~(unsigned)VIDK_ME_SHAPES_ALL))
        return fail(err, errlen, "bad shapes mask 0x%x", info->shapes);
    if (info->range < 0 || info->range > VIDK_ME_MAX_RANGE)
        return fail(err, errlen, "search range %d outside 0..%d", info->range,
                    VIDK_ME_MAX_RANGE);
    if (info->lambda > VIDK_ME_MAX_LAMBDA)
        return fail(err, errlen, "lambda %u above %d", info->lambda, VIDK_ME_MAX_LAMBDA);
    if (info->flags & ~MVF_FLAGS_KNOWN)
        return fail(err, errlen, "unknown flags 0x%x", (unsigned)info->flags);
    return 0;
}

unsigned mvf_se_bits(int v) {
    /* se(v) maps v > 0 to codeNum 2v - 1 and v <= 0 to -2v; ue length is
     * 2 * floor(log2(codeNum + 1)) + 1. */
    const uint64_t k = v > 0 ? 2 * (uint64_t)v - 1 : 2 * (uint64_t)(-(int64_t)v);
    uint64_t x = k + 1;
    unsigned lz = 0;
    while (x > 1) {
        x >>= 1;
        lz++;
    }
    return 2 * lz + 1;
}

int mvf_format_from_path(const char *path) {
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return -1;
    if (!strcmp(dot, ".bin") || !strcmp(dot, ".vkmv")) return MVF_FORMAT_BIN;
    if (!strcmp(dot, ".csv")) return MVF_FORMAT_CSV;
    if (!strcmp(dot, ".json")) return MVF_FORMAT_JSON;
    return -1;
}

const char *mvf_format_name(MvfFormat f) {
    return f == MVF_FORMAT_BIN ? "bin" : f == MVF_FORMAT_CSV ? "csv" : "json";
}

/* Header layout (offsets in bytes). */
enum {
    H_MAGIC = 0,
    H_VERSION = 4,
    H_HSIZE = 6,
    H_RSIZE = 8,
    H_BITDEPTH = 10,
    H_W = 12,
    H_H = 16,
    H_MBW = 20,
    H_MBH = 24,
    H_SHAPES = 28,
    H_RANGE = 32,
    H_LAMBDA = 36,
    H_FRAMES = 40,
    H_FLAGS = 44,
    H_RESERVED = 48
};

static void header_pack(uint8_t h[MVF_HEADER_SIZE], const MvfInfo *info) {
    memset(h, 0, MVF_HEADER_SIZE);
    memcpy(h + H_MAGIC, MVF_MAGIC, 4);
    put16(h + H_VERSION, MVF_VERSION);
    put16(h + H_HSIZE, MVF_HEADER_SIZE);
    put16(h + H_RSIZE, MVF_RECORD_SIZE);
    put16(h + H_BITDEPTH, (unsigned)info->bitdepth);
    put32(h + H_W, (uint32_t)info->w);
    put32(h + H_H, (uint32_t)info->h);
    put32(h + H_MBW, (uint32_t)info->mb_w);
    put32(h + H_MBH, (uint32_t)info->mb_h);
    put32(h + H_SHAPES, info->shapes);
    put32(h + H_RANGE, (uint32_t)info->range);
    put32(h + H_LAMBDA, info->lambda);
    put32(h + H_FRAMES, info->frames);
    put32(h + H_FLAGS, info->flags);
}

/* 32-bit header fields read into int must not wrap: clamp to INT32 range for checks. */
static int as_int(uint32_t v) {
    return v > 0x7fffffffu ? -1 : (int)v;
}

static int header_unpack(const uint8_t h[MVF_HEADER_SIZE], MvfInfo *info, char *err,
                         size_t errlen) {
    if (memcmp(h + H_MAGIC, MVF_MAGIC, 4))
        return fail(err, errlen, "not a VKMV motion-field file (bad magic)");
    if (get16(h + H_VERSION) != MVF_VERSION)
        return fail(err, errlen, "unsupported VKMV version %u (this reader knows %d)",
                    get16(h + H_VERSION), MVF_VERSION);
    if (get16(h + H_HSIZE) != MVF_HEADER_SIZE)
        return fail(err, errlen, "bad header size %u (expected %d)", get16(h + H_HSIZE),
                    MVF_HEADER_SIZE);
    if (get16(h + H_RSIZE) != MVF_RECORD_SIZE)
        return fail(err, errlen, "bad record size %u (expected %d)", get16(h + H_RSIZE),
                    MVF_RECORD_SIZE);
    for (int i = H_RESERVED; i < MVF_HEADER_SIZE; i++)
        if (h[i]) return fail(err, errlen, "reserved header byte %d is not zero", i);
    /* Raw 32-bit values first, so huge ones are reported as read, not wrapped. */
    const uint32_t w = get32(h + H_W), hh = get32(h + H_H), range = get32(h + H_RANGE);
    if (w < 1 || hh < 1 || w > VIDK_MAX_PICTURE_SIDE || hh > VIDK_MAX_PICTURE_SIDE)
        return fail(err, errlen, "picture size %ux%u outside 1..%d", (unsigned)w, (unsigned)hh,
                    VIDK_MAX_PICTURE_SIDE);
    if (range > VIDK_ME_MAX_RANGE)
        return fail(err, errlen, "search range %u outside 0..%d", (unsigned)range,
                    VIDK_ME_MAX_RANGE);
    memset(info, 0, sizeof(*info));
    info->bitdepth = (int)get16(h + H_BITDEPTH);
    info->w = as_int(get32(h + H_W));
    info->h = as_int(get32(h + H_H));
    info->mb_w = as_int(get32(h + H_MBW));
    info->mb_h = as_int(get32(h + H_MBH));
    info->shapes = get32(h + H_SHAPES);
    info->range = as_int(get32(h + H_RANGE));
    info->lambda = get32(h + H_LAMBDA);
    info->frames = get32(h + H_FRAMES);
    info->flags = get32(h + H_FLAGS);
    return mvf_info_check(info, err, errlen);
}

/* ---- writer ---------------------------------------------------------------- */
struct MvfWriter {
    FILE *f;
    VioOut *out;
    const char *name; /* for messages (owned by out) */
    MvfFormat fmt;
    MvfInfo info;
    uint8_t *buf; /* bin: one shape's records */
};

static int field_matches(const MvfInfo *info, const VidkMeField *f, char *err, size_t errlen) {
    if (f->w != info->w || f->h != info->h)
        return fail(err, errlen, "field size %dx%d does not match the file's %dx%d", f->w, f->h,
                    info->w, info->h);
    if ((f->shapes & info->shapes) != info->shapes)
        return fail(err, errlen, "field lacks shapes (has 0x%x, needs 0x%x)", f->shapes,
                    info->shapes);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(info->shapes & VIDK_ME_SHAPE(bs))) continue;
        int gw, gh;
        mvf_grid(info->w, info->h, (VidkBlockSize)bs, &gw, &gh);
        if (!f->res[bs] || f->grid_w[bs] != gw || f->grid_h[bs] != gh)
            return fail(err, errlen, "field grid of %s is not %dx%d",
                        vidk_block_name((VidkBlockSize)bs), gw, gh);
    }
    return 0;
}

static void json_shapes(FILE *f, unsigned shapes) {
    int first = 1;
    fputc('[', f);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        if (shapes & VIDK_ME_SHAPE(bs)) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", vidk_block_name((VidkBlockSize)bs));
            first = 0;
        }
    fputc(']', f);
}

#define BIN_NOT_REGULAR                                                                        \
    "%s: a .bin output must be a regular file (its header is completed at the end); "          \
    "write .csv or .json to a pipe or device"

int mvf_writer_open(MvfWriter **pw, const char *path, MvfFormat fmt, const MvfInfo *info,
                    char *err, size_t errlen) {
    *pw = NULL;
    if (mvf_info_check(info, err, errlen) < 0) return VIDK_ERR(EINVAL);
    MvfWriter *w = calloc(1, sizeof(*w));
    if (!w) {
        fail(err, errlen, "%s: out of memory", path);
        return VIDK_ERR(ENOMEM);
    }
    w->fmt = fmt;
    w->info = *info;
    w->info.frames = 0;
    /* Before opening: opening a FIFO would wait for its reader. */
    struct stat st;
    if (fmt == MVF_FORMAT_BIN && strcmp(path, "-") && stat(path, &st) == 0 &&
        !S_ISREG(st.st_mode)) {
        free(w);
        return fail(err, errlen, BIN_NOT_REGULAR, path), VIDK_ERR(ESPIPE);
    }
    const int e = vio_out_open(&w->out, path, err, errlen);
    if (e < 0) {
        free(w);
        return e;
    }
    w->f = vio_out_stream(w->out);
    w->name = vio_out_name(w->out);
    /* The header's frame count is written last: a .bin output must be seekable. */
    if (fmt == MVF_FORMAT_BIN && !vio_out_seekable(w->out)) {
        fail(err, errlen, BIN_NOT_REGULAR, w->name);
        mvf_writer_close(&w, 0, NULL, 0);
        return VIDK_ERR(ESPIPE);
    }
    if (fmt == MVF_FORMAT_BIN) {
        uint8_t h[MVF_HEADER_SIZE];
        header_pack(h, &w->info);
        fwrite(h, 1, sizeof(h), w->f);
    } else if (fmt == MVF_FORMAT_CSV) {
        fputs("frame,shape,bx,by,x,y,mvx,mvy,cost,sad\n", w->f);
    } else {
        fprintf(w->f,
                "{\n  \"format\": \"vidkern-mv\",\n  \"version\": %d,\n  \"width\": %d,\n"
                "  \"height\": %d,\n  \"mb_w\": %d,\n  \"mb_h\": %d,\n  \"bitdepth\": %d,\n"
                "  \"range\": %d,\n  \"lambda\": %u,\n  \"reference\": \"%s\",\n"
                "  \"predictor\": %s,\n  \"shapes\": ",
                MVF_VERSION, info->w, info->h, info->mb_w, info->mb_h, info->bitdepth,
                info->range, info->lambda,
                (info->flags & MVF_FLAG_REF_FILE) ? "file" : "previous",
                (info->flags & MVF_FLAG_PRED) ? "true" : "false");
        json_shapes(w->f, info->shapes);
        fputs(",\n  \"frames\": [", w->f);
    }
    if (ferror(w->f)) {
        fail(err, errlen, "%s: write error", w->name);
        mvf_writer_close(&w, 0, NULL, 0);
        return VIDK_ERR(EIO);
    }
    *pw = w;
    return 0;
}

static int write_bin_shape(MvfWriter *w, const VidkMeResult *res, size_t n) {
    const size_t chunk = 4096;
    if (!w->buf && !(w->buf = malloc(chunk * MVF_RECORD_SIZE))) return VIDK_ERR(ENOMEM);
    for (size_t i = 0; i < n; i += chunk) {
        const size_t m = n - i < chunk ? n - i : chunk;
        for (size_t k = 0; k < m; k++) {
            uint8_t *p = w->buf + k * MVF_RECORD_SIZE;
            const VidkMeResult *r = &res[i + k];
            put16(p, (uint16_t)r->mv.x);
            put16(p + 2, (uint16_t)r->mv.y);
            put32(p + 4, r->cost);
            put32(p + 8, r->sad);
        }
        if (fwrite(w->buf, MVF_RECORD_SIZE, m, w->f) != m) return VIDK_ERR(EIO);
    }
    return 0;
}

int mvf_writer_frame(MvfWriter *w, const VidkMeField *f, char *err, size_t errlen) {
    if (field_matches(&w->info, f, err, errlen) < 0) return VIDK_ERR(EINVAL);
    if (w->info.frames == UINT32_MAX)
        return fail(err, errlen, "%s: too many frames", w->name), VIDK_ERR(EFBIG);
    const uint32_t fr = w->info.frames;
    if (w->fmt == MVF_FORMAT_JSON)
        fprintf(w->f, "%s\n    {\"frame\": %u, \"shapes\": {", fr ? "," : "", (unsigned)fr);
    int firstshape = 1;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(w->info.shapes & VIDK_ME_SHAPE(bs))) continue;
        const int gw = f->grid_w[bs], gh = f->grid_h[bs];
        const VidkMeResult *res = f->res[bs];
        const int bw = vidk_block_width((VidkBlockSize)bs);
        const int bh = vidk_block_height((VidkBlockSize)bs);
        const char *name = vidk_block_name((VidkBlockSize)bs);
        if (w->fmt == MVF_FORMAT_BIN) {
            int e = write_bin_shape(w, res, (size_t)gw * (size_t)gh);
            if (e == VIDK_ERR(ENOMEM)) return fail(err, errlen, "out of memory"), e;
            if (e < 0) break;
        } else if (w->fmt == MVF_FORMAT_CSV) {
            for (int by = 0; by < gh; by++)
                for (int bx = 0; bx < gw; bx++) {
                    const VidkMeResult *r = &res[(size_t)by * gw + bx];
                    fprintf(w->f, "%u,%s,%d,%d,%d,%d,%d,%d,%u,%u\n", (unsigned)fr, name, bx, by,
                            bx * bw, by * bh, r->mv.x, r->mv.y, (unsigned)r->cost,
                            (unsigned)r->sad);
                }
        } else {
            fprintf(w->f,
                    "%s\n      \"%s\": {\"grid_w\": %d, \"grid_h\": %d, "
                    "\"block_w\": %d, \"block_h\": %d, \"blocks\": [",
                    firstshape ? "" : ",", name, gw, gh, bw, bh);
            for (size_t i = 0; i < (size_t)gw * gh; i++) {
                const VidkMeResult *r = &res[i];
                fprintf(w->f, "%s[%d,%d,%u,%u]",
                        i ? (i % 8 ? "," : ",\n        ") : "\n        ", r->mv.x, r->mv.y,
                        (unsigned)r->cost, (unsigned)r->sad);
            }
            fputs("]}", w->f);
        }
        firstshape = 0;
    }
    if (w->fmt == MVF_FORMAT_JSON) fputs("\n    }}", w->f);
    if (ferror(w->f)) return fail(err, errlen, "%s: write error", w->name), VIDK_ERR(EIO);
    w->info.frames++;
    return 0;
}

int mvf_writer_close(MvfWriter **pw, int commit, char *err, size_t errlen) {
    MvfWriter *w = *pw;
    int ret = 0;
    if (!w) return 0;
    *pw = NULL;
    if (commit) {
        if (w->fmt == MVF_FORMAT_BIN) {
            uint8_t h[MVF_HEADER_SIZE];
            header_pack(h, &w->info);
            if (fseek(w->f, 0, SEEK_SET) || fwrite(h, 1, sizeof(h), w->f) != sizeof(h))
                ret = fail(err, errlen, "%s: cannot update the header", w->name);
        } else if (w->fmt == MVF_FORMAT_JSON) {
            fprintf(w->f, "%s],\n  \"frame_count\": %u\n}\n", w->info.frames ? "\n  " : "",
                    (unsigned)w->info.frames);
        }
        if (!ret && ferror(w->f)) ret = fail(err, errlen, "%s: write error", w->name);
    }
    char oerr[512];
    const int e = vio_out_close(&w->out, commit && !ret, oerr, sizeof(oerr));
    if (e < 0 && commit && !ret) ret = fail(err, errlen, "%s", oerr);
    free(w->buf);
    free(w);
    return ret < 0 ? VIDK_ERR(EIO) : 0;
}

/* ---- reader ---------------------------------------------------------------- */
struct MvfReader {
    FILE *f;
    int is_stdin;
    char *path;
    MvfInfo info;
    uint32_t frame; /* next frame index */
    uint8_t *buf;
};

#define MVF_READ_CHUNK 4096

int mvf_reader_open(MvfReader **pr, const char *path, MvfInfo *info, char *err, size_t errlen) {
    *pr = NULL;
    MvfReader *r = calloc(1, sizeof(*r));
    const size_t n = strlen(path);
    if (!r || !(r->path = malloc(n + 6)) ||
        !(r->buf = malloc(MVF_READ_CHUNK * MVF_RECORD_SIZE))) {
        if (r) free(r->path);
        free(r);
        fail(err, errlen, "%s: out of memory", path);
        return VIDK_ERR(ENOMEM);
    }
    r->is_stdin = !strcmp(path, "-");
    memcpy(r->path, r->is_stdin ? "stdin" : path, r->is_stdin ? 6 : n + 1);
    r->f = r->is_stdin ? stdin : fopen(path, "rb");
    int ret = 0;
    if (!r->f) {
        const int e = errno;
        fail(err, errlen, "%s: cannot open (%s)", r->path, strerror(e));
        ret = VIDK_ERR(e ? e : EIO);
        goto error;
    }
    uint8_t h[MVF_HEADER_SIZE];
    const size_t got = fread(h, 1, sizeof(h), r->f);
    if (got < sizeof(h)) {
        if (got >= 4 && !memcmp(h, MVF_MAGIC, 4))
            fail(err, errlen, "%s: truncated header (%zu of %d bytes)", r->path, got,
                 MVF_HEADER_SIZE);
        else
            fail(err, errlen, "%s: not a VKMV motion-field file (%zu bytes)", r->path, got);
        ret = VIDK_ERR(EINVAL);
        goto error;
    }
    char msg[200];
    if (header_unpack(h, &r->info, msg, sizeof(msg)) < 0) {
        fail(err, errlen, "%s: %s", r->path, msg);
        ret = VIDK_ERR(EINVAL);
        goto error;
    }
    struct stat st;
    if (!r->is_stdin && !fstat(fileno(r->f), &st) && S_ISREG(st.st_mode)) {
        const uint64_t fb = mvf_frame_records(&r->info) * MVF_RECORD_SIZE;
        const uint64_t have = (uint64_t)st.st_size - MVF_HEADER_SIZE;
        /* frames <= 2^32 and fb < 2^29: the product fits in 64 bits. */
        const uint64_t want = fb * r->info.frames;
        if (have != want) {
            if (have < want)
                fail(err, errlen,
                     "%s: truncated: the header announces %u frames (%llu bytes of "
                     "records) but the file holds %llu",
                     path, (unsigned)r->info.frames, (unsigned long long)want,
                     (unsigned long long)have);
            else
                fail(err, errlen, "%s: %llu bytes of trailing data after %u frames", r->path,
                     (unsigned long long)(have - want), (unsigned)r->info.frames);
            ret = VIDK_ERR(EINVAL);
            goto error;
        }
    }
    *info = r->info;
    *pr = r;
    return 0;
error:
    mvf_reader_close(&r);
    return ret;
}

int mvf_reader_frame(MvfReader *r, VidkMeField *f, char *err, size_t errlen) {
    if (r->frame >= r->info.frames) {
        if (fgetc(r->f) != EOF)
            return fail(err, errlen, "%s: trailing data after %u frames", r->path,
                        (unsigned)r->info.frames),
                   VIDK_ERR(EINVAL);
        return 0;
    }
    char msg[200];
    if (field_matches(&r->info, f, msg, sizeof(msg)) < 0)
        return fail(err, errlen, "%s: %s", r->path, msg), VIDK_ERR(EINVAL);
    const MvfInfo *in = &r->info;
    const uint32_t maxs = (uint32_t)((1u << in->bitdepth) - 1);
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
        if (!(in->shapes & VIDK_ME_SHAPE(bs))) continue;
        const size_t n = (size_t)f->grid_w[bs] * (size_t)f->grid_h[bs];
        const uint32_t area = (uint32_t)(vidk_block_width((VidkBlockSize)bs) *
                                         vidk_block_height((VidkBlockSize)bs));
        const uint64_t max_sad = (uint64_t)area * maxs;
        VidkMeResult *res = f->res[bs];
        for (size_t i = 0; i < n; i += MVF_READ_CHUNK) {
            const size_t m = n - i < MVF_READ_CHUNK ? n - i : MVF_READ_CHUNK;
            if (fread(r->buf, MVF_RECORD_SIZE, m, r->f) != m)
                return fail(err, errlen, "%s: truncated in frame %u (shape %s)", r->path,
                            (unsigned)r->frame, vidk_block_name((VidkBlockSize)bs)),
                       VIDK_ERR(EINVAL);
            for (size_t k = 0; k < m; k++) {
                const uint8_t *p = r->buf + k * MVF_RECORD_SIZE;
                VidkMeResult *o = &res[i + k];
                const int mx = (int)get16(p) - ((get16(p) & 0x8000u) ? 65536 : 0);
                const int my = (int)get16(p + 2) - ((get16(p + 2) & 0x8000u) ? 65536 : 0);
                o->mv.x = (int16_t)mx;
                o->mv.y = (int16_t)my;
                o->cost = get32(p + 4);
                o->sad = get32(p + 8);
                const char *bad = NULL;
                if (mx < -in->range || mx > in->range || my < -in->range || my > in->range)
                    bad = "vector outside the search range";
                else if (o->sad > max_sad)
                    bad = "SAD above the block's maximum";
                else if (o->cost < o->sad)
                    bad = "cost below SAD";
                else if (!in->lambda && o->cost != o->sad)
                    bad = "cost differs from SAD with lambda 0";
                else if (in->lambda && !(in->flags & MVF_FLAG_PRED) &&
                         (uint64_t)o->cost != o->sad + (uint64_t)in->lambda *
                                                           (mvf_se_bits(mx) + mvf_se_bits(my)))
                    bad = "cost does not equal SAD + lambda * bits(mv)";
                else if (in->lambda && (in->flags & MVF_FLAG_PRED) &&
                         ((o->cost - o->sad) % in->lambda ||
                          (o->cost - o->sad) / in->lambda < 2))
                    bad = "cost - SAD is not lambda times a valid bit count";
                if (bad)
                    return fail(err, errlen,
                                "%s: frame %u, shape %s, block %zu: %s (mv %d,%d cost %u sad "
                                "%u)",
                                r->path, (unsigned)r->frame, vidk_block_name((VidkBlockSize)bs),
                                i + k, bad, mx, my, (unsigned)o->cost, (unsigned)o->sad),
                           VIDK_ERR(EINVAL);
            }
        }
    }
    r->frame++;
    return 1;
}

void mvf_reader_close(MvfReader **pr) {
    MvfReader *r = *pr;
    if (!r) return;
    if (r->f && !r->is_stdin) fclose(r->f);
    free(r->buf);
    free(r->path);
    free(r);
    *pr = NULL;
}
