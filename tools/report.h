/* Pieces of the reports that commands write (`vidkern encode --report`, `vidkern me
 * --json`, and the benchmarks of vidkern-bench): JSON strings, the command line, date,
 * CPU name, and files written whole or not at all. */
#ifndef VIDK_TOOLS_REPORT_H
#define VIDK_TOOLS_REPORT_H

#include <stddef.h>
#include <stdio.h>

/* CPU model from /proc/cpuinfo, or "unknown CPU". */
void report_cpu_name(char *buf, size_t n);

/* Current time as "YYYY-MM-DD HH:MM UTC". */
void report_utc_date(char *buf, size_t n);

/* "PREFIX arg1 arg2 ..." with arguments that hold spaces or quotes single-quoted, for
 * the "command" line of a report. */
void report_command_line(char *buf, size_t n, const char *prefix, int argc, char **argv);

/* Write a JSON string literal (quotes and escapes included). */
void report_json_str(FILE *f, const char *s);
/* ",\n  \"KEY\": " and the string s, when s is not NULL (a field of a report's top
 * level after the first). */
void report_json_field(FILE *f, const char *key, const char *s);

/* Write a file through PATH.tmp and a rename, so a failed run leaves no half-written
 * file: `write` fills the stream. Returns 0, or -1 with a message. */
int report_write_file(const char *cmd, const char *path, void (*write)(FILE *f, void *arg),
                      void *arg);

#endif
