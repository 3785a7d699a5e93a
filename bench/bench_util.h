/* Pieces shared by the benchmarks (`vidkern-bench me|h264|hevc|encode`): statistics,
 * lists, machine description, backends and real clips. The report pieces that the CLI
 * uses too are in report.h. */
#ifndef VIDK_BENCH_UTIL_H
#define VIDK_BENCH_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "mosaic.h"
#include "report.h"

/* Median of v[0..n-1] (sorts v in place); 0 for n <= 0. */
double bench_median(double *v, int n);

/* Split a comma list "a,b,c" into `max` items of `item` bytes each at out (items are
 * shorter than `item`). Returns the count, or -1 with a message naming `opt` (empty
 * list, empty or long item, too many items). */
int bench_split_list(const char *cmd, const char *opt, const char *s, char *out, size_t item,
                     int max);

/* Machine and command of a report. */
typedef struct BenchMeta {
    char cpu[256], gpu[256], date[64], command[2048];
    int cores;
} BenchMeta;

/* Fill `mt`: CPU, online cores, date, and the command line "PREFIX args...". gpu is
 * "NAME (N SMs, compute X.Y)" of CUDA device `device`, or "none" when device < 0 or its
 * description cannot be had. */
void bench_meta_fill(BenchMeta *mt, const char *prefix, int argc, char **argv, int device);

/* The note callback of the helpers below: `fmt` holds one %s, for `arg`. */
typedef void (*BenchNoteFn)(void *note_arg, const char *fmt, const char *arg);

/* Open ctx[be] for each backend be of backends[0..*n-1] from the common options `c`
 * (backend replaced, and quiet too where `quiet_open`). A backend that is not available
 * or does not open is dropped from the list (order kept), noted ("backend %s skipped:
 * not usable on this machine/build") and, unless c->quiet, said on stderr ("vidkern-bench CMD:
 * backend %s not usable here, skipped"). */
void bench_open_backends(const CliCommon *c, const char *cmd, int quiet_open,
                         VidkBackend *backends, int *n, VidkContext **ctx, BenchNoteFn note,
                         void *note_arg);

/* Open the mosaic of the real clips of folder `dir` (clips of 2 frames at least) into *m.
 * Returns 0, or -1 (dir NULL or no clips) after saying, unless `quiet`, "vidkern-bench CMD: no
 * real clips found (DIR): generated video only" on stderr; the note is the caller's. */
int bench_open_mosaic(Mosaic **m, const char *dir, const char *cmd, int quiet);

/* The benchmarks of vidkern-bench (bench/bench_<what>.c); argv[0] is the <what> word. */
int vidk_bench_me(int argc, char **argv);
int vidk_bench_h264(int argc, char **argv);
int vidk_bench_hevc(int argc, char **argv);
int vidk_bench_encode(int argc, char **argv);

#endif
