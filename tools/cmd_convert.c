/* vidkern convert: Y4M <-> raw planar YUV, files or pipes ("-"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "picio.h"

static const char *const CMD = "convert";

static void help(void) {
    printf(
        "usage: vidkern convert IN OUT [options]\n\n"
        "Copies the frames of IN to OUT, converting between YUV4MPEG2 (.y4m) and raw\n"
        "planar YUV (.yuv). IN or OUT '-' is stdin / stdout, e.g.\n"
        "  ffmpeg -i clip.mp4 -f yuv4mpegpipe - | vidkern convert - clip.yuv\n\n"
        "The input is raw when its name ends in .yuv or a raw option is given, else Y4M.\n"
        "The output format comes from --output-format, else the extension of OUT (.y4m,\n"
        ".yuv); '-' writes Y4M. Size, chroma format and bit depth are kept.\n\n"
        "options:\n"
        "  --input-size WxH        size of a raw input (required for raw input)\n"
        "  --input-format PIXFMT   pixel format of a raw input (default yuv420p): gray,\n"
        "                          grayNle, yuv420p, yuv422p, yuv444p, yuv4XXpNle (N 9..16)\n"
        "  --output-format F       y4m or yuv\n"
        "  --frames N              convert at most N frames (default all)\n"
        "  --fps N/D               frame rate written to a Y4M output (default: the input's,\n"
        "                          25/1 for raw input)\n"
        "  --quiet, -q             no progress bar or summary\n"
        "  --help, -h              this text\n\n"
        "A truncated or malformed input stops the conversion with an error naming the\n"
        "file and the frame (exit code 1). A file OUT is written under a temporary name\n"
        "and appears only when the conversion succeeds; stdout, a FIFO or a device is\n"
        "written in place (it keeps the frames before an error, never part of a frame).\n"
        "OUT may not be IN. Y4M header tags are copied, and none are added; interlaced\n"
        "input (It, Ib) is copied as it is.\n"
        "Options with a value also take the form --option=value.\n");
}

static int has_ext(const char *path, const char *ext) {
    const size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcasecmp(path + n - e, ext);
}

/* "N/D", "N:D" or "N", both positive. */
static int parse_fps(const char *s, int *num, int *den) {
    char *end;
    long n = strtol(s, &end, 10), d = 1;
    if (end == s || n < 1 || n > 1000000000L) return -1;
    if (*end == '/' || *end == ':') {
        const char *s2 = end + 1;
        d = strtol(s2, &end, 10);
        if (end == s2 || d < 1 || d > 1000000000L) return -1;
    }
    if (*end) return -1;
    *num = (int)n;
    *den = (int)d;
    return 0;
}

int vidk_cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *v;
    const char *in_size = NULL, *in_pixfmt = NULL, *out_format = NULL;
    long max_frames = 0;
    int fps_num = 0, fps_den = 0, quiet = 0;
    static const char *const value_opts[] = {
        "--input-size", "--input-format", "--output-format", "--frames", "--fps", NULL};
    if (cli_args(CMD, &argc, &argv, value_opts) < 0) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) return help(), 0;
        if (!strcmp(a, "--input-size")) {
            if (!(in_size = cli_value(CMD, argc, argv, &i))) return 1;
        } else if (!strcmp(a, "--input-format")) {
            if (!(in_pixfmt = cli_value(CMD, argc, argv, &i))) return 1;
        } else if (!strcmp(a, "--output-format")) {
            if (!(out_format = cli_value(CMD, argc, argv, &i))) return 1;
        } else if (!strcmp(a, "--frames")) {
            if (cli_int_value(CMD, argc, argv, &i, 1, 0x7fffffffL, &max_frames) < 0) return 1;
        } else if (!strcmp(a, "--fps")) {
            if (!(v = cli_value(CMD, argc, argv, &i))) return 1;
            if (parse_fps(v, &fps_num, &fps_den) < 0)
                return cli_error(CMD, "--fps: '%s' is not a frame rate N/D (N, D > 0)", v);
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_error(CMD, "unknown option '%s' (see --help)", a);
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            return cli_error(CMD, "too many arguments: '%s' (see --help)", a);
        }
    }
    if (!in || !out) return cli_error(CMD, "needs an input and an output (see --help)");

    /* Input kind. */
    const int in_raw = in_size || in_pixfmt || has_ext(in, ".yuv");
    if (in_raw && has_ext(in, ".y4m"))
        return cli_error(CMD, "%s: --input-size/--input-format are for raw input, not .y4m",
                         in);
    VioFormat raw;
    vio_format_default(&raw);
    if (in_raw) {
        if (!in_size) return cli_error(CMD, "%s: raw input needs --input-size WxH", in);
        if (cli_parse_size(CMD, "--input-size", in_size, &raw.w, &raw.h) < 0) return 1;
        if (in_pixfmt && vio_parse_pixfmt(in_pixfmt, &raw) < 0)
            return cli_error(CMD,
                             "--input-format: unknown pixel format '%s' (gray, grayNle, "
                             "yuv420p, yuv422p, yuv444p, yuv420pNle, ... N 9..16)",
                             in_pixfmt);
    }

    /* Output kind. */
    int out_raw;
    if (out_format) {
        if (!strcmp(out_format, "y4m"))
            out_raw = 0;
        else if (!strcmp(out_format, "yuv") || !strcmp(out_format, "raw"))
            out_raw = 1;
        else
            return cli_error(CMD, "--output-format: '%s' is not y4m or yuv", out_format);
    } else if (!strcmp(out, "-") || has_ext(out, ".y4m")) {
        out_raw = 0;
    } else if (has_ext(out, ".yuv")) {
        out_raw = 1;
    } else {
        return cli_error(CMD,
                         "%s: cannot tell the output format from the name (use "
                         "--output-format y4m|yuv)",
                         out);
    }
    if (cli_output_is_input(CMD, "", out, &in, 1)) return 1;

    char err[2048];
    VioReader *rd = NULL;
    VioWriter *wr = NULL;
    VidkPicture pic = {0};
    int ret = 1;
    if (vio_reader_open(&rd, in, in_raw ? &raw : NULL, err, sizeof(err)) < 0) goto fail;
    VioFormat of = *vio_reader_format(rd);
    if (fps_num) {
        of.fps_num = fps_num;
        of.fps_den = fps_den;
        of.y4m_tags |= VIO_Y4M_TAG_F;
    }
    int e = vio_picture_alloc(&pic, &of);
    if (e < 0) {
        cli_error(CMD, "cannot allocate a %dx%d picture: %s", of.w, of.h, vidk_strerror(e));
        goto done;
    }
    if (vio_writer_open(&wr, out, &of, out_raw, err, sizeof(err)) < 0) goto fail;
    CliProgress prog;
    cli_progress_start(&prog, "convert", (int)max_frames, quiet);
    int n = 0;
    while (!max_frames || n < max_frames) {
        const int r = vio_reader_read(rd, &pic);
        if (r < 0) {
            cli_progress_end(&prog);
            cli_error(CMD, "%s", vio_reader_error(rd));
            goto done;
        }
        if (!r) break;
        if (vio_writer_write(wr, &pic) < 0) {
            cli_progress_end(&prog);
            cli_error(CMD, "%s", vio_writer_error(wr));
            goto done;
        }
        cli_progress_update(&prog, ++n);
    }
    cli_progress_end(&prog);
    if (vio_writer_close_msg(&wr, err, sizeof(err)) < 0) goto fail;
    if (!quiet)
        fprintf(stderr, "vidkern convert: %d frame%s %dx%d %s %d-bit, %s -> %s (%s)\n", n,
                n == 1 ? "" : "s", of.w, of.h, vio_chroma_name(of.chroma), of.bitdepth,
                !strcmp(in, "-") ? "stdin" : in, !strcmp(out, "-") ? "stdout" : out,
                out_raw ? "yuv" : "y4m");
    ret = 0;
    goto done;
fail:
    cli_error(CMD, "%s", err);
done:
    /* On an error a file output is not created (an output written in place, such as
     * stdout, keeps the frames before the error). */
    vio_writer_abort(&wr);
    vio_reader_close(&rd);
    vidk_picture_free(&pic);
    return ret;
}
