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

static size_t read_full(FILE *f, uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        const size_t r = fread(buf + got, 1, n - got, f);
        if (!r) break;
        got += r;
    }
    return got;
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
        const char *a = argv[i], *v;
        const int c = cli_common_opt(&com, CMD, argc, argv, &i);
        if (c < 0) return 1;
        if (c > 0) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--codec")) {
            i++; /* checked by the dispatcher */
        } else if (!strcmp(a, "--size")) {
            if (!(v = cli_value(CMD, argc, argv, &i)) ||
                cli_parse_int(CMD, a, v, 1, 1024, &size) < 0)
                return 1;
            if (size != 4 && size != 8 && size != 16 && size != 32)
                return cli_error(CMD, "--size: %ld is not a transform size (4, 8, 16, 32)",
                                 size);
        } else if (!strcmp(a, "--qp")) {
            if (!(v = cli_value(CMD, argc, argv, &i)) ||
                cli_parse_int(CMD, a, v, 0, VIDK_HEVC_MAX_QP(VIDK_HEVC_MAX_BITDEPTH), &qp) < 0)
                return 1;
        } else if (!strcmp(a, "--bitdepth")) {
            if (!(v = cli_value(CMD, argc, argv, &i)) ||
                cli_parse_int(CMD, a, v, VIDK_HEVC_MIN_BITDEPTH, VIDK_HEVC_MAX_BITDEPTH, &bd) <
                    0)
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

    VidkContext *ctx = cli_open(&com, CMD);
    if (!ctx) return 1;
    const size_t len = (size_t)size * (size_t)size, bytes = len * 2 * CHUNK_BLOCKS;
    uint8_t *raw = malloc(bytes);
    int16_t *in = malloc(len * CHUNK_BLOCKS * sizeof(int16_t)),
            *out = malloc(len * CHUNK_BLOCKS * sizeof(int16_t));
    uint16_t *nnz = malloc(CHUNK_BLOCKS * sizeof(uint16_t));
    int rc = 0;
    unsigned long long blocks = 0, nonzero = 0;
    if (!raw || !in || !out || !nnz) {
        rc = cli_error(CMD, "out of memory");
        goto done;
    }
    for (;;) {
        const size_t got = read_full(stdin, raw, bytes);
        if (ferror(stdin)) {
            rc = cli_error(CMD, "read error on stdin");
            break;
        }
        const size_t nb = got / (len * 2);
        if (got % (len * 2)) {
            rc = cli_error(
                CMD,
                "stdin ends inside a block: %zu trailing bytes after block %llu (a %ldx%ld "
                "block is %zu bytes)",
                got % (len * 2), blocks + nb, size, size, len * 2);
            break;
        }
        if (!nb) break;
        for (size_t i = 0; i < nb * len; i++)
            in[i] = (int16_t)(uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8);
        const int err = inverse ? vidk_hevc_inverse_blocks(ctx, &p, in, out, nb)
                                : vidk_hevc_forward_blocks(ctx, &p, in, out, nb, nnz);
        if (err < 0) {
            rc = cli_error(CMD, "%s", vidk_strerror(err));
            break;
        }
        for (size_t i = 0; i < nb * len; i++) {
            const uint16_t u = (uint16_t)out[i];
            raw[2 * i] = (uint8_t)(u & 255);
            raw[2 * i + 1] = (uint8_t)(u >> 8);
        }
        if (fwrite(raw, 1, nb * len * 2, stdout) != nb * len * 2) {
            rc = cli_error(CMD, "write error on stdout");
            break;
        }
        for (size_t i = 0; !inverse && i < nb; i++)
            nonzero += nnz[i];
        blocks += nb;
        if (got < bytes) break;
    }
    if (!rc && fflush(stdout)) rc = cli_error(CMD, "write error on stdout");
    if (!rc && com.json) /* stdout carries the blocks: the summary goes to stderr */
        fprintf(stderr, "{\"blocks\": %llu, \"nonzero_levels\": %llu}\n", blocks, nonzero);
    else if (!rc && stats)
        fprintf(stderr, "vidkern xform: %llu blocks, %llu non-zero levels%s\n", blocks, nonzero,
                inverse ? " (forward only)" : "");
done:
    free(raw);
    free(in);
    free(out);
    free(nnz);
    vidk_close(&ctx);
    return rc;
}
