/* Pieces shared by the benchmarks (`vidkern bench me|h264|hevc`) and other commands
 * that write reports: statistics, machine description, report files. */
#ifndef VIDK_TOOLS_BENCH_UTIL_H
#define VIDK_TOOLS_BENCH_UTIL_H

#include <stddef.h>
#include <stdio.h>

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

#endif
