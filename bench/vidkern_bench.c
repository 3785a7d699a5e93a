/* vidkern-bench: the frame-level benchmarks of vidkern (bench/README.md), one per file
 * (bench/bench_<what>.c). Not installed: it uses the library's internal headers. */
#include <stdio.h>
#include <string.h>

#include "bench_util.h"
#include "cli.h"

int vidk_bench_rd(int argc, char **argv); /* bench_rd.c */

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} benches[] = {
    {"me", vidk_bench_me, "full-search motion estimation (the Monteiro et al. tables)"},
    {"h264", vidk_bench_h264, "H.264 inverse transform (the Wang et al. tables)"},
    {"hevc", vidk_bench_hevc, "HEVC transform + quantisation (the Cobrnic et al. tables)"},
    {"encode", vidk_bench_encode, "the coding loop, 1080p / 2160p, every backend"},
    {"rd", vidk_bench_rd, "rate-distortion and BD-rate against x264, real clips"},
};

static void usage(FILE *f) {
    fprintf(f,
            "vidkern-bench %s: benchmarks of the vidkern kernels on CPUs and NVIDIA GPUs\n\n"
            "usage: vidkern-bench <what> [options]   (vidkern-bench <what> --help)\n\n",
            vidk_version());
    for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
        fprintf(f, "  %-6s %s\n", benches[i].name, benches[i].summary);
}

int main(int argc, char **argv) {
    cli_program = "vidkern-bench";
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("vidkern-bench %s\n", vidk_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
        if (!strcmp(argv[1], benches[i].name)) return benches[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "vidkern-bench: unknown benchmark '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
