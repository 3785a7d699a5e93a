/* Placeholder until this subcommand lands. */
#include "cli.h"

int vidk_cmd_convert(int argc, char **argv)
{
    (void)argc;
    return cli_error(argv[0], "not implemented yet");
}
