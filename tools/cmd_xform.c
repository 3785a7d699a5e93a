/* `vidkern xform --codec h264|hevc ...`: dispatch to the codec's implementation. */
#include <string.h>

#include "cli.h"

int vidk_cmd_xform(int argc, char **argv) {
    const char *codec = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--codec") && i + 1 < argc) codec = argv[i + 1];
        if (!strncmp(argv[i], "--codec=", 8)) codec = argv[i] + 8;
    }
    if (!codec) {
        for (int i = 1; i < argc; i++)
            if (cli_is_help(argv[i])) {
                printf("usage: vidkern xform --codec h264|hevc [options]\n"
                       "  vidkern xform --codec h264 --help   H.264 options\n"
                       "  vidkern xform --codec hevc --help   HEVC options\n");
                return 0;
            }
        return cli_error("xform", "--codec h264|hevc is required (see --help)");
    }
    if (!strcmp(codec, "h264")) return vidk_xform_h264(argc, argv);
    if (!strcmp(codec, "hevc")) return vidk_xform_hevc(argc, argv);
    return cli_error("xform", "--codec: unknown codec '%s' (h264, hevc)", codec);
}
