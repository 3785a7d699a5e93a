#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "cli.h"

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_split_list(const char *cmd, const char *opt, const char *s, char *out, size_t item,
                     int max) {
    int n = 0;
    const char *p = s;
    while (*p) {
        const size_t l = strcspn(p, ",");
        if (!l || l >= item || n >= max) {
            cli_error(cmd, "%s: bad list '%s'", opt, s);
            return -1;
        }
        memcpy(out + (size_t)n * item, p, l);
        out[(size_t)n++ * item + l] = 0;
        p += l;
        if (*p) p++;
    }
    if (!n) cli_error(cmd, "%s: empty list", opt);
    return n ? n : -1;
}

void bench_meta_fill(BenchMeta *mt, const char *prefix, int argc, char **argv, int device) {
    report_cpu_name(mt->cpu, sizeof(mt->cpu));
    mt->cores = vidk_cpu_count_online();
    snprintf(mt->gpu, sizeof(mt->gpu), "none");
    VidkDeviceInfo di;
    if (device >= 0 && vidk_cuda_device_info(device, &di) == 0)
        snprintf(mt->gpu, sizeof(mt->gpu), "%s (%d SMs, compute %d.%d)", di.name,
                 di.multiprocessors, di.major, di.minor);
    report_utc_date(mt->date, sizeof(mt->date));
    report_command_line(mt->command, sizeof(mt->command), prefix, argc, argv);
}

void bench_open_backends(const CliCommon *c, const char *cmd, int quiet_open,
                         VidkBackend *backends, int *n, VidkContext **ctx, BenchNoteFn note,
                         void *note_arg) {
    for (int k = 0; k < *n; k++) {
        const VidkBackend be = backends[k];
        CliCommon cc = *c;
        cc.backend = be;
        if (quiet_open) cc.quiet = 1;
        if (vidk_backend_available(be)) ctx[be] = cli_open(&cc, cmd);
        if (!ctx[be]) {
            note(note_arg, "backend %s skipped: not usable on this machine/build",
                 vidk_backend_name(be));
            if (!c->quiet)
                fprintf(stderr, "vidkern-bench %s: backend %s not usable here, skipped\n", cmd,
                        vidk_backend_name(be));
            memmove(&backends[k], &backends[k + 1], sizeof(backends[0]) * (size_t)(*n - k - 1));
            (*n)--;
            k--;
        }
    }
}

int bench_open_mosaic(Mosaic **m, const char *dir, const char *cmd, int quiet) {
    char err[256];
    if (dir && mosaic_open(m, dir, 2, err, sizeof(err)) == 0) return 0;
    if (!quiet)
        fprintf(stderr, "vidkern-bench %s: no real clips found (%s): generated video only\n",
                cmd, dir ? dir : "no folder; set --video DIR or VIDK_VIDEO_DIR");
    return -1;
}
