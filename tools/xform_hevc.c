/* `vidkern xform --codec hevc`: HEVC forward transform + quantisation (or dequantisation
 * + inverse transform) of little-endian int16 blocks from stdin to stdout. A thin layer
 * over vidk_hevc_forward_blocks() / vidk_hevc_inverse_blocks(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CMD          "xform"
#define CHUNK_BLOCKS 1024

static void usage(FILE *f) {
    fprintf(f,
            "usage: vidkern xform --codec hevc --size 4|8|16|32 --qp N [options] < in > out\n"
            "\n"
            "Forward (default): reads residual blocks (N*N little-endian int16 each, raster\n"
            "order, row by row) and writes the quantised levels in the same layout.\n"
            "--inverse: reads levels, writes residuals (dequantisation + inverse transform).\n"
            "Arithmetic: HM's forward transform and quantiser (no RDOQ, no sign hiding),\n"
            "the normative H.265 8.6.2-8.6.4 inverse; see docs/HEVC.md.\n"
            "\n"
            "options:\n"
            "  --size N           transform size: 4, 8, 16 or 32 (required)\n"
            "  --qp N             qP = QP + QpBdOffset: 0..51 + 6 * (bitdepth - 8) (required;\n"
            "                     e.g. QP 22 of a 10-bit stream is --qp 34)\n"
            "  --bitdepth B       8..12 (default 8); forward input is clipped to\n"
            "                     [-(2^B - 1), 2^B - 1]\n"
            "  --intra            I-slice rounding offset 171/512 (default)\n"
            "  --inter            P/B-slice rounding offset 85/512\n"
            "  --dst              4x4 DST-VII (intra luma 4x4) instead of the DCT\n"
            "  --transform-skip   4x4 transform skip\n"
            "  --inverse          levels -> residuals\n"
            "  --stats            print the block and non-zero level counts on stderr (with\n"
            "                     --json: as one JSON object on stderr)\n"
            "  --help             this text\n");
    cli_common_help(f);
}

/* One chunk of blocks through the library (cli_block_stream()). */
typedef struct Job {
    VidkContext *ctx;
    VidkHevcBlockParams p;
    int inverse;
    unsigned long long nonzero;
    uint16_t nnz[CHUNK_BLOCKS];
} Job;

static int run_blocks(void *arg, const int16_t *in, int16_t *out, size_t n) {
    Job *j = arg;
    if (j->inverse) return vidk_hevc_inverse_blocks(j->ctx, &j->p, in, out, n);
    const int e = vidk_hevc_forward_blocks(j->ctx, &j->p, in, out, n, j->nnz);
    for (size_t i = 0; e >= 0 && i < n; i++)
        j->nonzero += j->nnz[i];
    return e;
}

int vidk_xform_hevc(int argc, char **argv) {
    CliCommon com;
    cli_common_init(&com);
    VidkHevcBlockParams p;
    vidk_hevc_default_block_params(&p);
    long size = 0, qp = -1, bd = 8;
    int inverse = 0, dst = 0, tskip = 0, intra = -1, stats = 0;
    static const char *const value_opts[] = {"--codec", "--size", "--qp", "--bitdepth", NULL};
    if (cli_args(CMD, &argc, &argv, value_opts) < 0) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int c = cli_common_opt(&com, CMD, argc, argv, &i);
        if (c < 0) return 1;
        if (c > 0) continue;
        if (cli_is_help(a)) return usage(stdout), 0;
        if (!strcmp(a, "--codec")) {
            i++; /* checked by the dispatcher */
        } else if (!strcmp(a, "--size")) {
            if (cli_int_value(CMD, argc, argv, &i, 1, 1024, &size) < 0) return 1;
            if (size != 4 && size != 8 && size != 16 && size != 32)
                return cli_error(CMD, "--size: %ld is not a transform size (4, 8, 16, 32)",
                                 size);
        } else if (!strcmp(a, "--qp")) {
            if (cli_int_value(CMD, argc, argv, &i, 0, VIDK_HEVC_MAX_QP(VIDK_HEVC_MAX_BITDEPTH),
                              &qp) < 0)
                return 1;
        } else if (!strcmp(a, "--bitdepth")) {
            if (cli_int_value(CMD, argc, argv, &i, VIDK_HEVC_MIN_BITDEPTH,
                              VIDK_HEVC_MAX_BITDEPTH, &bd) < 0)
                return 1;
        } else if (!strcmp(a, "--intra") || !strcmp(a, "--inter")) {
            const int want = !strcmp(a, "--intra");
            if (intra >= 0 && intra != want)
                return cli_error(CMD, "--intra and --inter exclude each other");
            intra = want;
        } else if (!strcmp(a, "--dst")) {
            dst = 1;
        } else if (!strcmp(a, "--transform-skip")) {
            tskip = 1;
        } else if (!strcmp(a, "--inverse")) {
            inverse = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else {
            return cli_error(CMD, "unknown option '%s' (see --codec hevc --help)", a);
        }
    }
    /* Blocks go stdin -> stdout: the same file on both sides would be overwritten. */
    const char *const stdin_name[] = {"-"};
    if (cli_output_is_input(CMD, "", "-", stdin_name, 1)) return 1;
    if (!size) return cli_error(CMD, "--size 4|8|16|32 is required");
    if (qp < 0) return cli_error(CMD, "--qp is required");
    if (qp > VIDK_HEVC_MAX_QP(bd))
        return cli_error(
            CMD,
            "--qp %ld is out of range for bit depth %ld (0..%ld: qP = QP + 6 * (bitdepth - 8))",
            qp, bd, VIDK_HEVC_MAX_QP(bd));
    if ((dst || tskip) && size != 4)
        return cli_error(CMD, "%s needs --size 4", dst ? "--dst" : "--transform-skip");
    if (dst && tskip) return cli_error(CMD, "--dst and --transform-skip exclude each other");

    p.size = size == 4    ? VIDK_HEVC_TB_4x4
             : size == 8  ? VIDK_HEVC_TB_8x8
             : size == 16 ? VIDK_HEVC_TB_16x16
                          : VIDK_HEVC_TB_32x32;
    p.qp = (int)qp;
    p.bitdepth = (int)bd;
    p.flags = (intra != 0 ? VIDK_HEVC_TB_INTRA | VIDK_HEVC_TB_ISLICE : 0) |
              (dst ? VIDK_HEVC_TB_DST : 0) | (tskip ? VIDK_HEVC_TB_TSKIP : 0);

    Job *j = calloc(1, sizeof(*j));
    if (!j) return cli_error(CMD, "out of memory");
    j->p = p, j->inverse = inverse;
    size_t blocks, tail;
    int rc = 1;
    if (!(j->ctx = cli_open(&com, CMD))) goto done;
    const int r = cli_block_stream(CMD, (size_t)(size * size), CHUNK_BLOCKS, run_blocks, j,
                                   &blocks, &tail);
    if (r == 1)
        cli_error(CMD,
                  "stdin ends inside a block: %zu trailing bytes after block %llu (a %ldx%ld "
                  "block is %zu bytes)",
                  tail, (unsigned long long)blocks, size, size, (size_t)(size * size * 2));
    if (r) goto done;
    if (com.json) /* stdout carries the blocks: the summary goes to stderr */
        fprintf(stderr, "{\"blocks\": %zu, \"nonzero_levels\": %llu}\n", blocks, j->nonzero);
    else if (stats)
        fprintf(stderr, "vidkern xform: %zu blocks, %llu non-zero levels%s\n", blocks,
                j->nonzero, inverse ? " (forward only)" : "");
    rc = 0;
done:
    vidk_close(&j->ctx);
    free(j);
    return rc;
}
