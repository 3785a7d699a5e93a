/* vidkern: command-line front end. One subcommand per file (tools/cmd_<name>.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} Command;

static const Command commands[] = {
    {"info", vidk_cmd_info, "version, backends, CPU flags, GPU devices"},
    {"convert", vidk_cmd_convert, "convert between Y4M and raw YUV (files or - pipes)"},
    {"gen", vidk_cmd_gen, "generate test video with motion (Y4M)"},
    {"encode", vidk_cmd_encode, "the H.264 / HEVC coding loop (the main job)"},
    {"me", vidk_cmd_me, "full-search motion estimation"},
    {"xform", vidk_cmd_xform, "H.264 / HEVC transform + quantisation of int16 blocks"},
};

static void usage(FILE *f) {
    fprintf(f,
            "vidkern %s: video-coding kernels on CPUs and NVIDIA GPUs\n\n"
            "usage: vidkern <command> [options]   (vidkern <command> --help for more)\n\n"
            "commands:\n",
            vidk_version());
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("vidkern %s\n", vidk_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bench")) {
        /* The benchmarks left the installed tool (bench/README.md). */
        fprintf(stderr,
                "vidkern: the benchmarks are a separate program now: vidkern-bench <what> "
                "(me, h264, hevc, encode), built in the build tree's bench/ folder and "
                "not installed\n");
        return 2;
    }
    fprintf(stderr, "vidkern: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
