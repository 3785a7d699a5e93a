/* `vidkern gen`: write deterministic synthetic test video (tools/gen.h) as Y4M or raw. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gen.h"
#include "picio.h"

static void gen_help(FILE *f) {
    fprintf(f,
            "usage: vidkern gen [options]\n"
            "Write synthetic test video with real, known motion: a textured background\n"
            "panning by integer and sub-sample steps, 4..8 independently moving textured\n"
            "objects, mild noise and a slow brightness change. Deterministic: the same\n"
            "options give the same bytes on every machine.\n\n"
            "options:\n"
            "  -o, --output F   output file, '-' = stdout (default: stdout when it is not\n"
            "                   a terminal); a file appears only when complete (written\n"
            "                   under a temporary name), a FIFO or device is written in place\n"
            "  --size WxH       picture size in luma samples (default 352x288, up to %dx%d)\n"
            "  --frames N       number of frames (default 30)\n"
            "  --seed S         random seed, 0..4294967295 (default 1)\n"
            "  --bitdepth B     8 or 10 (default 8; 9, 11, 12 also work)\n"
            "  --chroma C       420, 422, 444 or 400 (default 420)\n"
            "  --fps N[/D]      frame rate written to the Y4M header (default 25/1)\n"
            "  --raw            headerless planar output (.yuv) instead of Y4M\n"
            "  -q, --quiet      no progress bar\n"
            "  -h, --help       this help\n"
            "Options with a value also take the form --option=value.\n\n"
            "example: vidkern gen --size 1920x1080 --frames 60 -o clip.y4m\n",
            VIDK_MAX_PICTURE_SIDE, VIDK_MAX_PICTURE_SIDE);
}

static int parse_fps(const char *cmd, const char *s, int *num, int *den) {
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10), d = 1;
    if (!errno && end != s && *end == '/') {
        const char *s2 = end + 1;
        d = strtol(s2, &end, 10);
        if (end == s2) errno = EINVAL;
    }
    if (errno || end == s || *end || n < 1 || d < 1 || n > 1000000 || d > 1000000) {
        cli_error(cmd, "--fps: '%s' is not a frame rate N or N/D (1..1000000)", s);
        return -1;
    }
    *num = (int)n;
    *den = (int)d;
    return 0;
}

int vidk_cmd_gen(int argc, char **argv) {
    const char *cmd = argv[0];
    const char *out = NULL;
    int raw = 0, quiet = 0, fps_num = 25, fps_den = 1;
    VidkGenParams gp;
    vidk_gen_default(&gp);
    static const char *const value_opts[] = {"-o",       "--output", "--size",
                                             "--frames", "--seed",   "--bitdepth",
                                             "--chroma", "--fps",    NULL};
    if (cli_args(cmd, &argc, &argv, value_opts) < 0) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        if (cli_is_help(a)) return gen_help(stdout), 0;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value(cmd, argc, argv, &i))) return 1;
        } else if (!strcmp(a, "--size")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) ||
                cli_parse_size(cmd, a, v, &gp.w, &gp.h) < 0)
                return 1;
        } else if (!strcmp(a, "--frames")) {
            if (cli_int_value(cmd, argc, argv, &i, 1, 1000000000L, &n) < 0) return 1;
            gp.frames = (int)n;
        } else if (!strcmp(a, "--seed")) {
            if (cli_int_value(cmd, argc, argv, &i, 0, 0xffffffffL, &n) < 0) return 1;
            gp.seed = (uint32_t)n;
        } else if (!strcmp(a, "--bitdepth")) {
            if (cli_int_value(cmd, argc, argv, &i, 8, 12, &n) < 0) return 1;
            gp.bitdepth = (int)n;
        } else if (!strcmp(a, "--chroma")) {
            static const char *const names[] = {"400", "420", "422", "444"}; /* VidkChroma */
            if (!(v = cli_value(cmd, argc, argv, &i))) return 1;
            int k = VIDK_CHROMA_444;
            while (k >= 0 && strcmp(v, names[k]))
                k--;
            if (k < 0)
                return cli_error(cmd, "--chroma: '%s' is not one of 420, 422, 444, 400", v);
            gp.chroma = (VidkChroma)k;
        } else if (!strcmp(a, "--fps")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) ||
                parse_fps(cmd, v, &fps_num, &fps_den) < 0)
                return 1;
        } else if (!strcmp(a, "--raw")) {
            raw = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
        } else {
            cli_error(cmd, "unknown option '%s' (see vidkern gen --help)", a);
            return 1;
        }
    }
    if (!out) {
        if (isatty(STDOUT_FILENO))
            return cli_error(cmd, "stdout is a terminal: give an output file with -o FILE "
                                  "(or -o - to force stdout)");
        out = "-";
    }

    VioFormat f;
    vio_format_default(&f);
    f.w = gp.w;
    f.h = gp.h;
    f.chroma = gp.chroma;
    f.bitdepth = gp.bitdepth;
    f.fps_num = fps_num;
    f.fps_den = fps_den;

    VidkGen *g = NULL;
    VioWriter *w = NULL;
    VidkPicture pic = {0};
    char err[512];
    int ret = 1, e;
    if ((e = vidk_gen_open(&g, &gp)) < 0) {
        cli_error(cmd, "cannot create the generator: %s", vidk_strerror(e));
        goto end;
    }
    if ((e = vio_picture_alloc(&pic, &f)) < 0) {
        cli_error(cmd, "cannot allocate a %dx%d picture: %s", f.w, f.h, vidk_strerror(e));
        goto end;
    }
    if (vio_writer_open(&w, out, &f, raw, err, sizeof(err)) < 0) {
        cli_error(cmd, "%s", err);
        goto end;
    }
    CliProgress prog;
    cli_progress_start(&prog, "gen", gp.frames, quiet);
    for (int t = 0; t < gp.frames; t++) {
        if ((e = vidk_gen_frame(g, t, &pic)) < 0) {
            cli_error(cmd, "frame %d: %s", t, vidk_strerror(e));
            cli_progress_end(&prog);
            goto end;
        }
        if (vio_writer_write(w, &pic) < 0) {
            cli_progress_end(&prog);
            cli_error(cmd, "%s", vio_writer_error(w));
            goto end;
        }
        cli_progress_update(&prog, t + 1);
    }
    cli_progress_end(&prog);
    ret = 0;
end:
    if (ret)
        vio_writer_abort(&w);
    else if (vio_writer_close_msg(&w, err, sizeof(err)) < 0) {
        cli_error(cmd, "%s", err);
        ret = 1;
    }
    vidk_picture_free(&pic);
    vidk_gen_close(&g);
    return ret;
}
