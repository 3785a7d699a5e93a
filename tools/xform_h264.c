/* `vidkern xform --codec h264 ...`: H.264 transforms on blocks of little-endian int16
 * values from stdin to stdout (the library's block-array API). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CMD   "xform"
#define CHUNK 4096 /* blocks per read */

static void usage(FILE *f) {
    fprintf(f,
            "usage: vidkern xform --codec h264 --qp N [options] < in > out\n"
            "\n"
            "Reads blocks of little-endian int16 values (raster order, row by row) on stdin\n"
            "and writes the same number of blocks on stdout.\n"
            "  forward (default): residual blocks in, quantised levels out\n"
            "                     (core transform, then quantisation with dead zone)\n"
            "  --inverse:         levels in, residual out (dequantisation + inverse\n"
            "                     transform, (x + 32) >> 6; no prediction is added)\n"
            "\n"
            "options:\n"
            "  --size 4|8         transform size (default 4); 16 or 64 values per block\n"
            "  --qp N             QP, -6*(B-8)..51 (the spec's QPY / QPC range)\n"
            "  --bitdepth B       sample bit depth 8..14 (default 8): qP' = N + 6*(B-8)\n"
            "  --intra | --inter  dead zone of the forward quantiser: 1/3 (default) or 1/6\n"
            "  --dc luma          Intra16x16 luma DC matrices: 16 values (4x4) per block\n"
            "  --dc chroma        4:2:0 chroma DC matrices: 4 values (2x2) per block\n"
            "  --dc chroma422     4:2:2 chroma DC matrices: 8 values (4 rows x 2)\n"
            "                     forward: DC coefficients in, DC levels out; inverse: DC\n"
            "                     levels in, dequantised DC values out\n"
            "Inverse outputs beyond the int16 range are saturated (only possible for\n"
            "levels no conforming stream carries).\n"
            "\n");
    cli_common_help(f);
}

/* One chunk of blocks through the library (cli_block_stream()). */
typedef struct Job {
    VidkContext *ctx;
    VidkH264BlockParams p;
    int inverse;
    size_t nv, nnz;
    int32_t *res; /* inverse: the library's output before saturation to int16 */
} Job;

static int run_blocks(void *arg, const int16_t *in, int16_t *out, size_t n) {
    Job *j = arg;
    if (!j->inverse) {
        size_t nz = 0;
        const int e = vidk_h264_forward_blocks(j->ctx, &j->p, in, out, n, &nz);
        j->nnz += nz;
        return e;
    }
    const int e = vidk_h264_inverse_blocks(j->ctx, &j->p, in, j->res, n);
    for (size_t k = 0; e >= 0 && k < n * j->nv; k++)
        out[k] = (int16_t)(j->res[k] < -32768 ? -32768 : j->res[k] > 32767 ? 32767 : j->res[k]);
    return e;
}

int vidk_xform_h264(int argc, char **argv) {
    CliCommon com;
    cli_common_init(&com);
    VidkH264BlockParams p;
    vidk_h264_default_block_params(&p);
    long size = 4, qp = 0, bitdepth = 8;
    int inverse = 0, have_qp = 0, have_size = 0;
    const char *dc = NULL;
    static const char *const value_opts[] = {"--codec",    "--size", "--qp",
                                             "--bitdepth", "--dc",   NULL};
    if (cli_args(CMD, &argc, &argv, value_opts) < 0) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int c = cli_common_opt(&com, CMD, argc, argv, &i);
        if (c < 0) return 1;
        if (c) continue;
        if (cli_is_help(a)) return usage(stdout), 0;
        if (!strcmp(a, "--codec")) {
            if (!cli_value(CMD, argc, argv, &i)) return 1;
        } else if (!strcmp(a, "--size")) {
            if (cli_int_value(CMD, argc, argv, &i, 4, 8, &size) < 0) return 1;
            if (size != 4 && size != 8) return cli_error(CMD, "--size: 4 or 8, not %ld", size);
            have_size = 1;
        } else if (!strcmp(a, "--qp")) {
            if (cli_int_value(CMD, argc, argv, &i, -36, 51, &qp) < 0) return 1;
            have_qp = 1;
        } else if (!strcmp(a, "--bitdepth")) {
            if (cli_int_value(CMD, argc, argv, &i, 8, VIDK_H264_MAX_BITDEPTH, &bitdepth) < 0)
                return 1;
        } else if (!strcmp(a, "--inverse")) {
            inverse = 1;
        } else if (!strcmp(a, "--intra")) {
            p.intra = 1;
        } else if (!strcmp(a, "--inter")) {
            p.intra = 0;
        } else if (!strcmp(a, "--dc")) {
            if (!(dc = cli_value(CMD, argc, argv, &i))) return 1;
        } else {
            return cli_error(CMD, "unknown option '%s' (see --codec h264 --help)", a);
        }
    }
    /* Blocks go stdin -> stdout: the same file on both sides would be overwritten. */
    const char *const stdin_name[] = {"-"};
    if (cli_output_is_input(CMD, "", "-", stdin_name, 1)) return 1;
    if (!have_qp) return cli_error(CMD, "--qp N is required (see --codec h264 --help)");
    const long bd_off = 6 * (bitdepth - 8);
    if (qp < -bd_off)
        return cli_error(CMD, "--qp %ld is below -%ld, the lowest QP at bit depth %ld", qp,
                         bd_off, bitdepth);
    p.qp = (int)(qp + bd_off);
    p.bitdepth = (int)bitdepth;
    p.type = size == 8 ? VIDK_H264_BLOCK_8x8 : VIDK_H264_BLOCK_4x4;
    if (dc) {
        if (have_size && size != 4) return cli_error(CMD, "--dc works on 4x4 transforms only");
        if (!strcmp(dc, "luma"))
            p.type = VIDK_H264_BLOCK_DC_LUMA;
        else if (!strcmp(dc, "chroma"))
            p.type = VIDK_H264_BLOCK_DC_CHROMA;
        else if (!strcmp(dc, "chroma422"))
            p.type = VIDK_H264_BLOCK_DC_CHROMA422;
        else
            return cli_error(CMD, "--dc: '%s' is not luma, chroma or chroma422", dc);
    }
    Job j = {cli_open(&com, CMD), p, inverse, (size_t)vidk_h264_block_values(p.type), 0, NULL};
    if (!j.ctx) return 1;
    /* The block API runs on the CPU for every backend. */
    size_t blocks, tail;
    int rc = 1;
    if (inverse && !(j.res = malloc(CHUNK * j.nv * sizeof(int32_t)))) {
        cli_error(CMD, "out of memory");
        goto out;
    }
    const int r = cli_block_stream(CMD, j.nv, CHUNK, run_blocks, &j, &blocks, &tail);
    if (r == 1)
        cli_error(CMD,
                  "input ends inside a block: %zu bytes after %zu whole blocks (blocks are "
                  "%zu bytes)",
                  tail, blocks, j.nv * 2);
    if (r) goto out;
    if (!com.quiet && com.json)
        fprintf(stderr,
                "{\"blocks\": %zu, \"values_per_block\": %zu, \"nonzero_levels\": %zu}\n",
                blocks, j.nv, inverse ? (size_t)0 : j.nnz);
    rc = 0;
out:
    free(j.res);
    vidk_close(&j.ctx);
    return rc;
}
