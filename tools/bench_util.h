/* Pieces shared by the benchmarks (`vidkern bench me|h264|hevc`) and other commands
 * that write reports: statistics, machine description, report files. */
#ifndef VIDK_TOOLS_BENCH_UTIL_H
#define VIDK_TOOLS_BENCH_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "mosaic.h"

/* Median of v[0..n-1] (sorts v in place); 0 for n <= 0. */
double bench_median(double *v, int n);

/* CPU model from /proc/cpuinfo, or "unknown CPU". */
void bench_cpu_name(char *buf, size_t n);

/* Current time as "YYYY-MM-DD HH:MM UTC". */
void bench_utc_date(char *buf, size_t n);

/* "PREFIX arg1 arg2 ..." with arguments that hold spaces or quotes single-quoted, for
 * the "command" line of a report. */
void bench_command_line(char *buf, size_t n, const char *prefix, int argc, char **argv);

/* Write a JSON string literal (quotes and escapes included). */
void bench_json_str(FILE *f, const char *s);

/* Split a comma list "a,b,c" into `max` items of `item` bytes each at out (items are
 * shorter than `item`). Returns the count, or -1 with a message naming `opt` (empty
 * list, empty or long item, too many items). */
int bench_split_list(const char *cmd, const char *opt, const char *s, char *out, size_t item,
                     int max);

/* Write a file through PATH.tmp and a rename, so a failed run leaves no half-written
 * file: `write` fills the stream. Returns 0, or -1 with a message. */
int bench_write_file(const char *cmd, const char *path, void (*write)(FILE *f, void *arg),
                     void *arg);

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
 * not usable on this machine/build") and, unless c->quiet, said on stderr ("vidkern CMD:
 * backend %s not usable here, skipped"). */
void bench_open_backends(const CliCommon *c, const char *cmd, int quiet_open,
                         VidkBackend *backends, int *n, VidkContext **ctx, BenchNoteFn note,
                         void *note_arg);

/* Open the mosaic of the real clips of folder `dir` (clips of 2 frames at least) into *m.
 * Returns 0, or -1 (dir NULL or no clips) after saying, unless `quiet`, "vidkern CMD: no
 * real clips found (DIR): generated video only" on stderr; the note is the caller's. */
int bench_open_mosaic(Mosaic **m, const char *dir, const char *cmd, int quiet);

#endif
