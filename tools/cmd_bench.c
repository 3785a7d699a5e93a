/* `vidkern bench me|h264|hevc|encode ...`: dispatch to the family's benchmark. */
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} benches[] = {
    {"me", vidk_bench_me, "full-search motion estimation (the Monteiro et al. tables)"},
    {"h264", vidk_bench_h264, "H.264 inverse transform (the Wang et al. tables)"},
    {"hevc", vidk_bench_hevc, "HEVC transform + quantisation (the Cobrnic et al. tables)"},
    {"encode", vidk_bench_encode, "the coding loop, 1080p / 2160p, every backend"},
};

int vidk_cmd_bench(int argc, char **argv) {
    const size_t n = sizeof(benches) / sizeof(benches[0]);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: vidkern bench <what> [options]   (vidkern bench <what> --help)\n\n");
        for (size_t i = 0; i < n; i++)
            printf("  %-6s %s\n", benches[i].name, benches[i].summary);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(argv[1], benches[i].name)) return benches[i].fn(argc - 1, argv + 1);
    return cli_error("bench", "unknown benchmark '%s' (me, h264, hevc, encode)", argv[1]);
}
