/* `vidkern me`: full-search motion estimation of a sequence (docs/ME.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gen.h"
#include "mvfile.h"
#include "mvpng.h"
#include "picio.h"
#include "report.h"

#define CMD "me"

static void help(void) {
    printf(
        "usage: vidkern me [IN.y4m|-] [options]\n"
        "       vidkern me --read MV.bin [-o OUT.csv|OUT.json|OUT.bin] [--png F.png]\n\n"
        "Full-search integer-pel motion estimation of every frame against the previous\n"
        "one (or of frame i of IN against frame i of --ref). Without IN the built-in\n"
        "generated video (352x288, 30 frames) is searched. See docs/ME.md.\n\n"
        "options:\n"
        "  --ref REF.y4m       reference sequence (same size and format as IN)\n"
        "  --range R           search range: vectors in [-R, R]^2, 0..%d (default 16)\n"
        "  --search-area N     N x N search area for 4x4 blocks as in Monteiro et al.:\n"
        "                      R = (N - 4) / 2 (128 -> 62); N even, 4..%d\n"
        "  --shapes LIST       comma list of 4x4 8x4 4x8 8x8 16x8 8x16 16x16 32x32 64x64,\n"
        "                      h264 (the seven H.264 shapes, 41 partitions), all\n"
        "                      (default 16x16)\n"
        "  --lambda L          cost = SAD + L * bits(mv), 0..%d (default 0 = pure SAD)\n"
        "  --frames N          read at most N frames of IN\n"
        "  -o FILE             write the fields: .bin (VKMV, docs/MVFORMAT.md), .csv, .json\n"
        "  --png FILE.png      picture of a field; a name with %%d (e.g. f_%%04d.png) writes\n"
        "                      one picture per frame pair\n"
        "  --png-frame K       which frame pair for --png (default 0: frames 1 vs 0)\n"
        "  --png-mode M        wheel (colour = direction, saturation = length; default) or\n"
        "                      arrows (over the dimmed current frame)\n"
        "  --png-shape S       shape to draw (default 16x16, else the smallest requested)\n"
        "  --png-norm N        vector length drawn at full saturation (default: longest)\n"
        "  --input-size WxH    raw (headerless) input of this size ...\n"
        "  --input-format F    ... and pixel format (default yuv420p; gray, yuv420p10le, ...)\n"
        "  --gen-size WxH      size of the generated video when no IN is given\n"
        "  --read MV.bin       read a VKMV file: print a summary, convert with -o\n"
        "  --assume-progressive  accept interlaced Y4M input (It, Ib, Im; refused by\n"
        "                      default) and search each frame as one progressive picture\n\n"
        "Output files (-o, --png) are written under temporary names and appear only when\n"
        "the run succeeds (a failed run leaves no picture behind); a FIFO or device is\n"
        "written in place, a symbolic link is written through; a .bin needs a regular\n"
        "file. An output naming an input is refused. Options with a value also take the\n"
        "form --option=value.\n\n",
        VIDK_ME_MAX_RANGE, 2 * VIDK_ME_MAX_RANGE + 4, VIDK_ME_MAX_LAMBDA);
    cli_common_help(stdout);
}

/* ---- option helpers --------------------------------------------------------- */
static int parse_shapes(const char *s, unsigned *mask) {
    unsigned m = 0;
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, ',');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        unsigned bit = 0;
        if (n == 4 && !strncmp(p, "h264", 4))
            bit = VIDK_ME_SHAPES_H264;
        else if (n == 3 && !strncmp(p, "all", 3))
            bit = VIDK_ME_SHAPES_ALL;
        else
            for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
                const char *name = vidk_block_name((VidkBlockSize)bs);
                if (strlen(name) == n && !strncmp(p, name, n)) bit = VIDK_ME_SHAPE(bs);
            }
        if (!bit) {
            cli_error(CMD,
                      "--shapes: unknown shape '%.*s' (4x4 8x4 4x8 8x8 16x8 8x16 16x16 "
                      "32x32 64x64 h264 all)",
                      (int)n, p);
            return -1;
        }
        m |= bit;
        p += n;
        if (*p == ',') p++;
    }
    if (!m) {
        cli_error(CMD, "--shapes: empty list");
        return -1;
    }
    *mask = m;
    return 0;
}

static int parse_shape1(const char *s, int *bs_out) {
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        if (!strcmp(s, vidk_block_name((VidkBlockSize)bs))) {
            *bs_out = bs;
            return 0;
        }
    cli_error(CMD, "--png-shape: unknown shape '%s'", s);
    return -1;
}

/* The shape the summary (and the default picture) describes: 16x16 if computed, else
 * the smallest computed one (the enum rises with the area). */
static int summary_shape(unsigned shapes) {
    if (shapes & VIDK_ME_SHAPE(VIDK_BLOCK_16x16)) return VIDK_BLOCK_16x16;
    for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
        if (shapes & VIDK_ME_SHAPE(bs)) return bs;
    return VIDK_BLOCK_16x16;
}

/* A --png name with one %d / %0Nd conversion (%% for a literal %), expanded for picture
 * k into out when out is not NULL: 1 = numbered, 0 = plain name, -1 = unusable. Our own
 * expansion: the name is never a printf format. */
static int png_name(const char *pat, int k, char *out, size_t outlen) {
    size_t o = 0;
    int conv = 0;
    char num[48];
    for (const char *p = pat; *p; p++) {
        const char *add = p;
        if (p[0] == '%' && p[1] == '%') {
            add = ++p;
        } else if (*p == '%') {
            int width = 0;
            const int zero = p[1] == '0';
            for (p++; *p >= '0' && *p <= '9'; p++)
                width = width > 20 ? 21 : width * 10 + (*p - '0');
            if (*p != 'd' || conv) return -1;
            conv = 1;
            snprintf(num, sizeof(num), zero ? "%0*d" : "%*d", width > 20 ? 20 : width, k);
            add = num;
        }
        for (size_t n = add == num ? strlen(num) : 1; out && n && o + 1 < outlen; n--)
            out[o++] = *add++;
    }
    if (out) out[o] = 0;
    return conv;
}

/* The --png pictures of a run: each one written and closed when its frame pair is done,
 * under a temporary name (vio_out_open()), and moved into place only when the whole
 * command succeeds, so a failed run leaves no picture behind. */
typedef struct PngSet {
    const char *pat; /* the --png name; NULL = no pictures */
    int numbered;    /* pat has a %d */
    VioOut *first;   /* opened before any work, so an unusable name costs nothing */
    VioOut **done;   /* written, waiting for the commit */
    int n, cap;
    const char *const *ins; /* inputs no picture may overwrite */
    int nin;
    long frame; /* the one frame pair drawn when not numbered (--png-frame) */
    int bs;     /* the shape drawn */
    MvPngMode mode;
    int norm;
    int written; /* pictures written */
} PngSet;

static int pngset_open(PngSet *ps, VioOut **o, int k) {
    char name[4200], err[512];
    if (ps->numbered)
        png_name(ps->pat, k, name, sizeof(name));
    else
        snprintf(name, sizeof(name), "%s", ps->pat);
    if (cli_output_is_input(CMD, "--png", name, ps->ins, ps->nin)) return -1;
    if (vio_out_open(o, name, err, sizeof(err)) < 0) return cli_error(CMD, "%s", err), -1;
    return 0;
}

/* Open the first picture's output (before any work). */
static int pngset_start(PngSet *ps) {
    return ps->pat ? pngset_open(ps, &ps->first, 0) : 0;
}

/* Frame pair k: render and write its picture if the set has one for it. */
static int pngset_write(PngSet *ps, int k, const VidkMeField *f, const VidkPicture *pic) {
    if (!ps->pat || (!ps->numbered && k != ps->frame)) return 0;
    const VidkBlockSize bs = (VidkBlockSize)ps->bs;
    char err[512];
    VioOut *o = ps->first;
    ps->first = NULL;
    if (!o && pngset_open(ps, &o, k) < 0) return -1;
    if (ps->n == ps->cap) {
        const int cap = ps->cap ? 2 * ps->cap : 16;
        VioOut **d = realloc(ps->done, sizeof(*d) * (size_t)cap);
        if (!d) {
            vio_out_close(&o, 0, NULL, 0);
            return cli_error(CMD, "out of memory"), -1;
        }
        ps->done = d, ps->cap = cap;
    }
    ps->done[ps->n++] = o;
    uint8_t *rgb = malloc((size_t)f->w * (size_t)f->h * 3);
    if (!rgb) return cli_error(CMD, "out of memory"), -1;
    int e = mvpng_render(f, bs, pic, ps->mode, ps->norm, rgb);
    if (e < 0)
        cli_error(CMD, "%s: shape %s not in the field", vio_out_name(o), vidk_block_name(bs));
    else if ((e = vio_write_png_stream(vio_out_stream(o), vio_out_name(o), rgb, f->w, f->h,
                                       (ptrdiff_t)f->w * 3, 3, err, sizeof(err))) < 0 ||
             (e = vio_out_finish(o, err, sizeof(err))) < 0)
        cli_error(CMD, "%s", err);
    free(rgb);
    ps->written += e >= 0;
    return e < 0 ? -1 : 0;
}

/* commit 1: move every picture into place (0, or -1 with a message); 0: discard them. */
static int pngset_end(PngSet *ps, int commit) {
    char err[512];
    int ret = 0;
    vio_out_close(&ps->first, 0, NULL, 0);
    for (int k = 0; k < ps->n; k++)
        if (vio_out_close(&ps->done[k], commit && !ret, err, sizeof(err)) < 0 && commit && !ret)
            ret = -cli_error(CMD, "%s", err);
    free(ps->done);
    ps->done = NULL;
    ps->n = ps->cap = 0;
    return ret;
}

/* ---- statistics of the summary shape --------------------------------------- */
typedef struct Stats {
    double sad;    /* sum of SADs */
    double pixels; /* samples covered */
    double zero;   /* zero vectors */
    double blocks;
} Stats;

static void stats_add(Stats *s, const VidkMeField *f, int bs) {
    const size_t n = (size_t)f->grid_w[bs] * f->grid_h[bs];
    const double area =
        vidk_block_width((VidkBlockSize)bs) * vidk_block_height((VidkBlockSize)bs);
    for (size_t i = 0; i < n; i++) {
        const VidkMeResult *r = &f->res[bs][i];
        s->sad += r->sad;
        s->zero += !r->mv.x && !r->mv.y;
    }
    s->blocks += (double)n;
    s->pixels += (double)n * area;
}

/* ---- --read ------------------------------------------------------------------ */
/* (vidk_cmd_me() has checked the names of out and of the pictures of ps.) */
static int cmd_read(const char *path, const char *out, int png_shape, int json, PngSet *ps) {
    char err[512];
    MvfInfo info;
    MvfReader *rd = NULL;
    MvfWriter *wr = NULL;
    VidkMeField f = {0};
    int ret = 1;
    const char *ins[] = {path};
    ps->ins = ins, ps->nin = 1;
    if (cli_output_is_input(CMD, "-o", out, ins, 1)) return 1;
    if (mvf_reader_open(&rd, path, &info, err, sizeof(err)) < 0)
        return cli_error(CMD, "%s", err);
    int e = vidk_me_field_alloc(&f, info.w, info.h, info.shapes);
    if (e < 0) {
        cli_error(CMD, "%s: cannot allocate a %dx%d field: %s", path, info.w, info.h,
                  vidk_strerror(e));
        goto done;
    }
    ps->bs = png_shape >= 0 ? png_shape : summary_shape(info.shapes);
    if (ps->pat && !(info.shapes & VIDK_ME_SHAPE(ps->bs))) {
        cli_error(CMD, "--png-shape: shape not in %s", path);
        goto done;
    }
    if (out && mvf_writer_open(&wr, out, (MvfFormat)mvf_format_from_path(out), &info, err,
                               sizeof(err)) < 0)
        goto fail;
    if (pngset_start(ps) < 0) goto done;
    Stats st[VIDK_BLOCK_COUNT] = {0};
    int n = 0;
    for (;;) {
        const int r = mvf_reader_frame(rd, &f, err, sizeof(err));
        if (r < 0) goto fail;
        if (!r) break;
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
            if (info.shapes & VIDK_ME_SHAPE(bs)) stats_add(&st[bs], &f, bs);
        if (wr && mvf_writer_frame(wr, &f, err, sizeof(err)) < 0) goto fail;
        if (pngset_write(ps, n, &f, NULL) < 0) goto done;
        n++;
    }
    if (ps->pat && !ps->written) {
        cli_error(CMD, "--png-frame %ld: the file has %d frames", ps->frame, n);
        goto done;
    }
    if (wr && mvf_writer_close(&wr, 1, err, sizeof(err)) < 0) goto fail;
    if (pngset_end(ps, 1) < 0) goto done;
    /* A picture on stdout: the summary goes to stderr. */
    FILE *sumf = ps->pat && !strcmp(ps->pat, "-") ? stderr : stdout;
    if (json) {
        fprintf(sumf, "{\n  \"file\": ");
        report_json_str(sumf, path);
        fprintf(
            sumf,
            ",\n  \"width\": %d,\n  \"height\": %d,\n  \"bitdepth\": %d,\n  \"range\": %d,\n"
            "  \"lambda\": %u,\n  \"frames\": %u,\n  \"reference\": \"%s\",\n  \"shapes\": {",
            info.w, info.h, info.bitdepth, info.range, info.lambda, (unsigned)info.frames,
            (info.flags & MVF_FLAG_REF_FILE) ? "file" : "previous");
        int first = 1;
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(info.shapes & VIDK_ME_SHAPE(bs))) continue;
            fprintf(sumf,
                    "%s\n    \"%s\": {\"blocks_per_frame\": %d, \"mean_sad_per_pixel\": %.4f, "
                    "\"zero_mv_share\": %.4f}",
                    first ? "" : ",", vidk_block_name((VidkBlockSize)bs),
                    f.grid_w[bs] * f.grid_h[bs], st[bs].pixels ? st[bs].sad / st[bs].pixels : 0,
                    st[bs].blocks ? st[bs].zero / st[bs].blocks : 0);
            first = 0;
        }
        fprintf(sumf, "\n  }");
        report_json_field(sumf, "output", out);
        fprintf(sumf, "\n}\n");
    } else {
        fprintf(sumf,
                "%s: VKMV v%d, %dx%d (%dx%d macroblocks), %d-bit, R=%d, lambda %u, %u frames, "
                "reference: %s\n",
                path, MVF_VERSION, info.w, info.h, info.mb_w, info.mb_h, info.bitdepth,
                info.range, info.lambda, (unsigned)info.frames,
                (info.flags & MVF_FLAG_REF_FILE) ? "separate sequence" : "previous frame");
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++) {
            if (!(info.shapes & VIDK_ME_SHAPE(bs))) continue;
            fprintf(sumf,
                    "  %-5s %7d blocks/frame  mean SAD %7.3f per pixel  %5.1f%% zero vectors\n",
                    vidk_block_name((VidkBlockSize)bs), f.grid_w[bs] * f.grid_h[bs],
                    st[bs].pixels ? st[bs].sad / st[bs].pixels : 0,
                    st[bs].blocks ? 100 * st[bs].zero / st[bs].blocks : 0);
        }
        if (out) fprintf(sumf, "wrote %s\n", out);
    }
    ret = 0;
    goto done;
fail:
    cli_error(CMD, "%s", err);
done:
    pngset_end(ps, 0);
    mvf_writer_close(&wr, 0, NULL, 0);
    mvf_reader_close(&rd);
    vidk_me_field_free(&f);
    return ret;
}

/* ---- input sources ------------------------------------------------------------ */

/* ---- the search --------------------------------------------------------------------- */
int vidk_cmd_me(int argc, char **argv) {
    CliCommon c;
    cli_common_init(&c);
    const char *in = NULL, *refp = NULL, *out = NULL, *png = NULL, *readp = NULL;
    long range = 16, lambda = 0, frames = 0, area = -1, png_frame = 0, png_norm = 0;
    int range_set = 0, png_shape = -1, png_frame_set = 0;
    unsigned shapes = VIDK_ME_SHAPE(VIDK_BLOCK_16x16);
    MvPngMode png_mode = MVPNG_WHEEL;
    const char *in_size = NULL, *in_fmt = NULL;
    int gen_w = 0, gen_h = 0, progressive = 0;
    static const char *const value_opts[] = {"--ref",          "-o",         "--output",
                                             "--png",          "--read",     "--input-size",
                                             "--input-format", "--range",    "--search-area",
                                             "--shapes",       "--lambda",   "--frames",
                                             "--png-frame",    "--png-norm", "--png-mode",
                                             "--png-shape",    "--gen-size", NULL};
    if (cli_args(CMD, &argc, &argv, value_opts) < 0) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (cli_is_help(a)) return help(), 0;
        const int r = cli_common_opt(&c, CMD, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        if (!strcmp(a, "--assume-progressive")) {
            progressive = 1;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            if (!cli_takes_value(a, value_opts))
                return cli_error(CMD, "unknown option '%s' (see --help)", a);
            if (!(v = cli_value(CMD, argc, argv, &i))) return 1;
        } else {
            if (in) return cli_error(CMD, "more than one input ('%s' and '%s')", in, a);
            in = a;
            continue;
        }
        if (!strcmp(a, "--ref"))
            refp = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            out = v;
        else if (!strcmp(a, "--png"))
            png = v;
        else if (!strcmp(a, "--read"))
            readp = v;
        else if (!strcmp(a, "--input-size"))
            in_size = v;
        else if (!strcmp(a, "--input-format"))
            in_fmt = v;
        else if (!strcmp(a, "--range")) {
            if (cli_parse_int(CMD, a, v, 0, VIDK_ME_MAX_RANGE, &range) < 0) return 1;
            range_set = 1;
        } else if (!strcmp(a, "--search-area")) {
            if (cli_parse_int(CMD, a, v, -1000000, 1000000, &area) < 0) return 1;
            if (area < 4)
                return cli_error(CMD,
                                 "--search-area %ld: too small (at least 4: the 4x4 "
                                 "block itself, R = 0)",
                                 area);
            if (area % 2)
                return cli_error(CMD, "--search-area %ld: must be even (R = (N - 4) / 2)",
                                 area);
            if ((area - 4) / 2 > VIDK_ME_MAX_RANGE)
                return cli_error(CMD, "--search-area %ld: R = %ld is above the maximum %d",
                                 area, (area - 4) / 2, VIDK_ME_MAX_RANGE);
        } else if (!strcmp(a, "--shapes")) {
            if (parse_shapes(v, &shapes) < 0) return 1;
        } else if (!strcmp(a, "--lambda")) {
            if (cli_parse_int(CMD, a, v, 0, VIDK_ME_MAX_LAMBDA, &lambda) < 0) return 1;
        } else if (!strcmp(a, "--frames")) {
            if (cli_parse_int(CMD, a, v, 1, 100000000, &frames) < 0) return 1;
        } else if (!strcmp(a, "--png-frame")) {
            if (cli_parse_int(CMD, a, v, 0, 100000000, &png_frame) < 0) return 1;
            png_frame_set = 1;
        } else if (!strcmp(a, "--png-norm")) {
            if (cli_parse_int(CMD, a, v, 0, 100000, &png_norm) < 0) return 1;
        } else if (!strcmp(a, "--png-mode")) {
            const int m = mvpng_mode_from_name(v);
            if (m < 0) return cli_error(CMD, "--png-mode: '%s' is not wheel or arrows", v);
            png_mode = (MvPngMode)m;
        } else if (!strcmp(a, "--png-shape")) {
            if (parse_shape1(v, &png_shape) < 0) return 1;
        } else if (!strcmp(a, "--gen-size")) {
            if (cli_parse_size(CMD, a, v, &gen_w, &gen_h) < 0) return 1;
        } else {
            return cli_error(CMD, "unknown option '%s' (see --help)", a);
        }
    }
    if (range_set && area >= 0)
        return cli_error(CMD, "give --range or --search-area, not both");
    if (area >= 0) range = (area - 4) / 2;
    if (png && png_name(png, 0, NULL, 0) < 0)
        return cli_error(
            CMD, "--png '%s': use at most one %%d (or %%0Nd) conversion, %%%% for %%", png);
    if (png && png_name(png, 0, NULL, 0) && png_frame_set)
        return cli_error(CMD, "--png-frame selects one picture; a %%d name writes them all");
    if (out && mvf_format_from_path(out) < 0)
        return cli_error(CMD, "-o %s: unknown extension (.bin, .csv, .json)", out);
    if (cli_outputs_clash(out, png))
        return cli_error(CMD, "-o '%s' and --png '%s' are the same file", out, png);
    if (png && !strcmp(png, "-") && c.json)
        return cli_error(CMD, "--png - and --json both want stdout: write one to a file");

    PngSet ps = {.pat = png,
                 .numbered = png && png_name(png, 0, NULL, 0),
                 .frame = png_frame,
                 .mode = png_mode,
                 .norm = (int)png_norm};
    if (readp) {
        if (in || refp) return cli_error(CMD, "--read takes no input sequence");
        return cmd_read(readp, out, png_shape, c.json, &ps);
    }
    if (png_shape >= 0 && !(shapes & VIDK_ME_SHAPE(png_shape)))
        return cli_error(CMD, "--png-shape %s is not among --shapes",
                         vidk_block_name((VidkBlockSize)png_shape));
    if (refp && !in) return cli_error(CMD, "--ref needs an input sequence");
    if (in_fmt && !in_size) return cli_error(CMD, "--input-format needs --input-size");
    if (gen_w && in) return cli_error(CMD, "--gen-size is for the generated video (no IN)");
    {
        const char *const ins[] = {in, refp};
        if (cli_output_is_input(CMD, "-o", out, ins, 2)) return 1;
    }

    VioFormat raw;
    vio_format_default(&raw);
    if (cli_raw_format(CMD, in_size, in_fmt,
                       "gray, yuv420p, yuv422p, yuv444p, yuv420p10le, ...", &raw) < 0)
        return 1;

    int ret = 1;
    char err[512];
    CliSource src = {.assume_progressive = progressive}, ref = src;
    const char *ins[] = {in, refp};
    ps.ins = ins, ps.nin = 2;
    VidkPicture pa = {0}, pb = {0}, pr = {0};
    VidkMeField field = {0};
    VidkContext *ctx = NULL;
    MvfWriter *wr = NULL;

    if (in) {
        if (cli_source_open_file(&src, CMD, in, in_size ? &raw : NULL) < 0) goto done;
    } else {
        const int e = cli_source_open_gen(&src, gen_w, gen_h, (int)frames);
        if (e < 0) {
            cli_error(CMD, "generator: %s", vidk_strerror(e));
            goto done;
        }
        src.name = "generated";
        if (!c.quiet && !c.json)
            fprintf(stderr, "vidkern me: no input given: searching the %s\n", src.desc);
    }
    const VioFormat *fi = &src.fmt;
    if (refp) {
        if (cli_source_open_file(&ref, CMD, refp, in_size ? &raw : NULL) < 0) goto done;
        const VioFormat *fr = &ref.fmt;
        if (fr->w != fi->w || fr->h != fi->h) {
            cli_error(CMD, "%s is %dx%d but %s is %dx%d: sizes must match", src.name, fi->w,
                      fi->h, ref.name, fr->w, fr->h);
            goto done;
        }
        if (fr->bitdepth != fi->bitdepth || fr->chroma != fi->chroma) {
            cli_error(CMD, "%s is %s %d-bit but %s is %s %d-bit: formats must match", src.name,
                      vio_chroma_name(fi->chroma), fi->bitdepth, ref.name,
                      vio_chroma_name(fr->chroma), fr->bitdepth);
            goto done;
        }
    }
    if (fi->w < 16 || fi->h < 16) {
        cli_error(CMD, "%s: %dx%d is below the smallest searchable picture, 16x16", src.name,
                  fi->w, fi->h);
        goto done;
    }
    /* Validate outputs before any work: no half-written files on a late failure. */
    MvfInfo info;
    mvf_info_init(&info, fi->w, fi->h, fi->bitdepth, shapes, (int)range, (unsigned)lambda);
    if (refp) info.flags |= MVF_FLAG_REF_FILE;
    if (out) {
        if (mvf_writer_open(&wr, out, (MvfFormat)mvf_format_from_path(out), &info, err,
                            sizeof(err)) < 0)
            goto fail;
    }
    if (pngset_start(&ps) < 0) goto done;
    if (!(ctx = cli_open(&c, CMD))) goto done;
    if (vio_picture_alloc(&pa, fi) < 0 || vio_picture_alloc(&pb, fi) < 0 ||
        (refp && vio_picture_alloc(&pr, fi) < 0)) {
        cli_error(CMD, "out of memory for %dx%d pictures", fi->w, fi->h);
        goto done;
    }
    int e = vidk_me_field_alloc(&field, fi->w, fi->h, shapes);
    if (e < 0) {
        cli_error(CMD, "cannot allocate the motion field: %s", vidk_strerror(e));
        goto done;
    }
    VidkMeParams mp;
    vidk_me_default_params(&mp);
    mp.range = (int)range;
    mp.shapes = shapes;
    mp.lambda = (unsigned)lambda;
    const int sbs = summary_shape(shapes);
    ps.bs = png_shape >= 0 ? png_shape : sbs;

    int total = cli_source_total(&src, in, in_size != NULL, frames);
    if (!refp && total > 0) total--; /* frame pairs */
    CliProgress prog;
    cli_progress_start(&prog, "me", total, c.quiet || c.json);

    VidkPicture *cur = &pa, *prev = &pb;
    int nread = 0, npairs = 0, ref_short = 0;
    Stats st = {0};
    double t_search = 0;
    const double t0 = cli_now();
    if (!refp) {
        const int r = cli_source_read(&src, CMD, prev);
        if (r < 0) goto done;
        if (!r) {
            cli_error(CMD, "%s: empty input (0 frames)", src.name);
            goto done;
        }
        nread = 1;
    }
    for (;;) {
        if (frames && nread >= frames) break;
        int r = cli_source_read(&src, CMD, cur);
        if (r < 0) goto done;
        if (!r) break;
        nread++;
        const VidkPicture *refpic = prev;
        if (refp) {
            r = cli_source_read(&ref, CMD, &pr);
            if (r < 0) goto done;
            if (!r) {
                ref_short = 1;
                break;
            }
            refpic = &pr;
        }
        const double ts = cli_now();
        /* Frame k's reference is frame k - 1, the last call's current picture: on cuda it
         * is still on the device and only the new frame crosses PCIe. */
        mp.flags = !refp && npairs > 0 ? VIDK_ME_REF_IS_PREV_CUR : 0;
        e = vidk_me_search(ctx, cur, refpic, &mp, &field);
        t_search += cli_now() - ts;
        if (e < 0) {
            cli_error(CMD, "motion search of frame %d failed: %s", nread - 1, vidk_strerror(e));
            goto done;
        }
        stats_add(&st, &field, sbs);
        if (wr && mvf_writer_frame(wr, &field, err, sizeof(err)) < 0) goto fail;
        if (pngset_write(&ps, npairs, &field, cur) < 0) goto done;
        npairs++;
        cli_progress_update(&prog, npairs);
        if (!refp) {
            VidkPicture *t = cur;
            cur = prev;
            prev = t;
        }
    }
    const double t_total = cli_now() - t0;
    cli_progress_end(&prog);
    if (!npairs) {
        if (refp)
            cli_error(CMD, "%s: empty input (0 frames)", ref_short ? ref.name : src.name);
        else
            cli_error(CMD, "%s: needs at least 2 frames (has 1), or a --ref sequence",
                      src.name);
        goto done;
    }
    if (png && !ps.written) {
        cli_error(CMD, "--png-frame %ld: only %d frame pairs were searched", png_frame, npairs);
        goto done;
    }
    if (ref_short && !c.quiet)
        fprintf(stderr, "vidkern me: note: %s ended after %d frames; stopped there\n", ref.name,
                npairs);
    if (wr && mvf_writer_close(&wr, 1, err, sizeof(err)) < 0) goto fail;
    if (pngset_end(&ps, 1) < 0) goto done;
    const VidkBackend be = vidk_get_backend(ctx);
    const double mean_sad = st.pixels ? st.sad / st.pixels : 0;
    const double zero = st.blocks ? st.zero / st.blocks : 0;
    const double fps = t_total > 0 ? npairs / t_total : 0;
    char shapes_txt[128];
    int so = 0;
    shapes_txt[0] = 0;
    if (shapes == VIDK_ME_SHAPES_ALL || shapes == VIDK_ME_SHAPES_H264)
        snprintf(shapes_txt, sizeof(shapes_txt), "%s",
                 shapes == VIDK_ME_SHAPES_ALL ? "all" : "h264");
    else
        for (int bs = 0; bs < VIDK_BLOCK_COUNT; bs++)
            if (shapes & VIDK_ME_SHAPE(bs))
                so += snprintf(shapes_txt + so, sizeof(shapes_txt) - (size_t)so, "%s%s",
                               so ? "," : "", vidk_block_name((VidkBlockSize)bs));
    FILE *sumf = png && !strcmp(png, "-") ? stderr : stdout;
    if (c.json) {
        fprintf(sumf, "{\n  \"input\": ");
        report_json_str(sumf, in ? src.name : src.desc);
        report_json_field(sumf, "reference", refp ? ref.name : "previous frame");
        fprintf(
            sumf,
            ",\n  \"width\": %d,\n  \"height\": %d,\n  \"bitdepth\": %d,\n  \"range\": %ld,\n"
            "  \"shapes\": \"%s\",\n  \"lambda\": %ld,\n  \"frames\": %d,\n"
            "  \"seconds\": %.6f,\n  \"frames_per_second\": %.3f,\n  \"ms_per_frame\": %.4f,\n"
            "  \"search_ms_per_frame\": %.4f,\n  \"summary_shape\": \"%s\",\n"
            "  \"mean_sad_per_pixel\": %.4f,\n  \"zero_mv_share\": %.4f,\n"
            "  \"backend\": \"%s\",\n  \"threads\": %d",
            fi->w, fi->h, fi->bitdepth, range, shapes_txt, lambda, npairs, t_total, fps,
            1e3 * t_total / npairs, 1e3 * t_search / npairs,
            vidk_block_name((VidkBlockSize)sbs), mean_sad, zero, vidk_backend_name(be),
            vidk_get_threads(ctx));
        report_json_field(sumf, "output", out);
        report_json_field(sumf, "png", png);
        fprintf(sumf, "\n}\n");
    } else {
        fprintf(sumf,
                "%d frame pairs of %s (%dx%d, %d-bit) against %s, R=%ld (%ldx%ld candidates), "
                "shapes %s%s, lambda %ld\n",
                npairs, in ? src.name : src.desc, fi->w, fi->h, fi->bitdepth,
                refp ? ref.name : "the previous frame", range, 2 * range + 1, 2 * range + 1,
                shapes_txt, shapes == VIDK_ME_SHAPES_H264 ? " (41 partitions)" : "", lambda);
        fprintf(sumf, "backend %s", vidk_backend_name(be));
        if (be == VIDK_BACKEND_THREADS) fprintf(sumf, " (%d threads)", vidk_get_threads(ctx));
        fprintf(sumf, ": %.3f s, %.2f frames/s, %.3f ms/frame (search %.3f ms/frame)\n",
                t_total, fps, 1e3 * t_total / npairs, 1e3 * t_search / npairs);
        fprintf(sumf, "%s field: mean SAD %.3f per pixel, %.1f%% zero vectors\n",
                vidk_block_name((VidkBlockSize)sbs), mean_sad, 100 * zero);
        if (out)
            fprintf(sumf, "wrote %s (%s)\n", out,
                    mvf_format_name((MvfFormat)mvf_format_from_path(out)));
        if (png) fprintf(sumf, "wrote %s%s\n", png, ps.numbered ? " (one per frame pair)" : "");
    }
    ret = 0;
    goto done;
fail:
    cli_error(CMD, "%s", err);
done:
    pngset_end(&ps, 0);
    mvf_writer_close(&wr, 0, NULL, 0);
    vidk_me_field_free(&field);
    vidk_picture_free(&pa);
    vidk_picture_free(&pb);
    vidk_picture_free(&pr);
    vidk_close(&ctx);
    cli_source_close(&src);
    cli_source_close(&ref);
    return ret;
}
