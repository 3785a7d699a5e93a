#include <stdio.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: vidkern info [--json]\n\n"
           "Prints the library version, the backends usable here, the CPU flags and the\n"
           "CUDA devices (name, memory, SMs).\n\n");
    cli_common_help(stdout);
}

static void print_flags(unsigned f, int json) {
    static const char *const names[] = {"sse2", "ssse3", "sse4.1", "avx2", "avx512"};
    int first = 1;
    for (int i = 0; i < 5; i++) {
        if (!(f & (1u << i))) continue;
        printf(json ? "%s\"%s\"" : "%s%s", first ? "" : json ? ", " : " ", names[i]);
        first = 0;
    }
    if (first && !json) printf("(none)");
}

int vidk_cmd_info(int argc, char **argv) {
    CliCommon c;
    cli_common_init(&c);
    if (cli_args("info", &argc, &argv, NULL) < 0) return 1;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) return help(), 0;
        int r = cli_common_opt(&c, "info", argc, argv, &i);
        if (r < 0) return 1;
        if (!r) return cli_error("info", "unknown option '%s' (see --help)", argv[i]);
    }
    const unsigned flags = vidk_cpu_flags() & c.cpumask;
    const int ndev = vidk_cuda_device_count();
    if (c.json) {
        printf("{\n  \"version\": \"%s\",\n  \"backends\": [", vidk_version());
        int first = 1;
        for (int b = 1; b < VIDK_BACKEND_COUNT; b++)
            if (vidk_backend_available((VidkBackend)b)) {
                printf("%s\"%s\"", first ? "" : ", ", vidk_backend_name((VidkBackend)b));
                first = 0;
            }
        printf("],\n  \"cpu_flags\": [");
        print_flags(flags, 1);
        printf("],\n  \"cuda_devices\": [");
        for (int d = 0; d < ndev; d++) {
            VidkDeviceInfo di;
            if (vidk_cuda_device_info(d, &di) < 0) continue;
            printf("%s\n    {\"ordinal\": %d, \"name\": \"%s\", \"cc\": \"%d.%d\", "
                   "\"sms\": %d, \"memory_bytes\": %zu, \"l2_bytes\": %zu}",
                   d ? "," : "", d, di.name, di.major, di.minor, di.multiprocessors,
                   di.global_mem, di.l2_bytes);
        }
        printf("%s]\n}\n", ndev ? "\n  " : "");
        return 0;
    }
    printf("vidkern %s\n", vidk_version());
    printf("backends:  ");
    for (int b = 1; b < VIDK_BACKEND_COUNT; b++)
        printf("%s%s ", vidk_backend_name((VidkBackend)b),
               vidk_backend_available((VidkBackend)b) ? "" : "(unavailable)");
    printf("\ncpu flags: ");
    print_flags(flags, 0);
    printf("\ncpus:      %d online\n", vidk_cpu_count_online());
    if (!ndev) printf("cuda:      no usable device\n");
    for (int d = 0; d < ndev; d++) {
        VidkDeviceInfo di;
        if (vidk_cuda_device_info(d, &di) < 0) continue;
        printf("cuda %d:    %s, compute %d.%d, %d SMs, %.1f GiB, L2 %.0f MiB, driver %d, "
               "runtime %d\n",
               d, di.name, di.major, di.minor, di.multiprocessors,
               (double)di.global_mem / (1 << 30), (double)di.l2_bytes / (1 << 20),
               di.driver_version, di.runtime_version);
    }
    return 0;
}
