/* Shared pieces of the vidkern CLI: common options, context opening, progress bar,
 * messages. Every subcommand is `int vidk_cmd_<name>(int argc, char **argv)` returning
 * the process exit code; argv[0] is the subcommand name. */
#ifndef VIDK_TOOLS_CLI_H
#define VIDK_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "gen.h"
#include "picio.h"
#include "vidkern/vidkern.h"

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

typedef struct CliCommon {
    VidkBackend backend;
    int threads;
    unsigned cpumask;
    int device;
    int json;
    int quiet;
} CliCommon;

void cli_common_init(CliCommon *c);

/* Most worker threads --threads gives (the library's limit); a larger value is lowered to
 * it with a note on stderr. */
#define CLI_MAX_THREADS 1024

/* Command-line conventions, applied by every command before it parses its arguments:
 * "--name=value" of an option that takes a value (value_opts: NULL-terminated list of the
 * command's own such options; the common ones are added here) is split into "--name"
 * "value" (the '=' in the argument string becomes a NUL). Other arguments stay as they
 * are, so "--flag=x" is reported as an unknown option. *argv is replaced by an array
 * freed at exit. 0, or -1 with a message (out of memory). */
int cli_args(const char *cmd, int *argc, char ***argv, const char *const *value_opts);
/* 1 if a (an argument starting with '-') is a common option or one of value_opts that
 * takes a value: check this before cli_value() so that an unknown last option is reported
 * as unknown, not as missing its value. */
int cli_takes_value(const char *a, const char *const *value_opts);

/* Refuse to write an output over an input: 0, or 1 with the message "vidkern CMD: OPT
 * 'OUT' is the input file 'IN': refusing to overwrite it" when out (an output, "-" =
 * stdout) and one of the n inputs ins[] ("-" = stdin; NULL entries skipped) are the same
 * regular file (vio_same_file()). opt names the output in the message ("" for none). */
int cli_output_is_input(const char *cmd, const char *opt, const char *out,
                        const char *const *ins, int n);
/* 1 when two outputs of one run (neither "-") would be the same file: the same name that
 * is not there yet or is a regular file, or the same existing regular file by two names.
 * Devices and FIFOs (/dev/null twice) do not clash. */
int cli_outputs_clash(const char *a, const char *b);
/* Consumes argv[*i] (and its value) if it is a common option: returns 1 if consumed,
 * 0 if not a common option, -1 on a bad value (message printed). */
int cli_common_opt(CliCommon *c, const char *cmd, int argc, char **argv, int *i);
/* 1 if a is --help or -h. */
int cli_is_help(const char *a);
/* Help text lines for the common options. */
void cli_common_help(FILE *f);
/* Open a context from the common options; prints the error and returns NULL on failure. */
VidkContext *cli_open(const CliCommon *c, const char *cmd);

/* The program name that starts every message: "vidkern" (vidkern-bench sets its own). */
extern const char *cli_program;

/* "vidkern CMD: message" on stderr. Returns 1 (for `return cli_error(...)`). */
int cli_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Parse integers with range checks; 0 on success, -1 (message printed) otherwise. */
int cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                     double *out);
/* "WxH" -> w, h. */
int cli_parse_size(const char *cmd, const char *opt, const char *s, int *w, int *h);
/* The value of option argv[*i] (advances *i), or NULL with a message when missing. */
const char *cli_value(const char *cmd, int argc, char **argv, int *i);
/* cli_value() then cli_parse_int() with argv[*i] as the option name: 0 or -1 (printed). */
int cli_int_value(const char *cmd, int argc, char **argv, int *i, long lo, long hi, long *out);

/* Progress bar on stderr when it is a terminal (and not quiet). */
typedef struct CliProgress {
    int enabled;
    int total;
    double t0;
    const char *label;
} CliProgress;
void cli_progress_start(CliProgress *p, const char *label, int total, int quiet);
/* done frames of p->total (raised to done when the estimate was short). */
void cli_progress_update(CliProgress *p, int done);
void cli_progress_end(CliProgress *p);

/* Input pictures of a command: a Y4M/raw file (or "-") or the built-in generator. */
typedef struct CliSource {
    const char *name;       /* for messages */
    int assume_progressive; /* set before opening: accept interlaced (It/Ib/Im) Y4M input
                               and process its frames as progressive pictures */
    VioReader *rd;
    VidkGen *gen;
    int gen_frames, next;
    VioFormat fmt;
    char desc[160]; /* generator: "built-in generated video WxH, N frames, seed S" */
} CliSource;

/* Open file `path` into a zeroed source (assume_progressive may be set); raw (the
 * --input-* format) applies to every name not ending in .y4m, and a *.yuv needs it.
 * Interlaced Y4M input (It, Ib, Im) is refused unless s->assume_progressive. 0, or -1 with
 * a message. */
int cli_source_open_file(CliSource *s, const char *cmd, const char *path, const VioFormat *raw);
/* Open the generator into a zeroed source (name left to the caller): the default video,
 * of size w x h if w, with frames frames if frames; fills s->fmt (also on failure) and
 * s->desc. The vidk_gen_open result (< 0: error, no message). */
int cli_source_open_gen(CliSource *s, int w, int h, int frames);
/* 1 = frame read, 0 = end, -1 = error (printed). */
int cli_source_read(CliSource *s, const char *cmd, VidkPicture *pic);
void cli_source_close(CliSource *s);
/* --input-size WxH and --input-format F (default yuv420p) into *raw (vio_format_default()
 * first; untouched without in_size): 0, or -1 with "--input-format: unknown pixel format
 * 'F' (known)". */
int cli_raw_format(const char *cmd, const char *in_size, const char *in_fmt, const char *known,
                   VioFormat *raw);
/* Frames the progress bar expects from s, opened from path (NULL for the generator) with
 * raw format or not, at most frames (0 = no limit); 0 unknown. */
int cli_source_total(const CliSource *s, const char *path, int raw, long frames);

/* The stream of `vidkern xform`: blocks of nv little-endian int16 values from stdin, chunk
 * blocks at a time, through fn (n blocks in -> out; 0 or a negative error code) to stdout,
 * flushed at the end. 0 = done, 1 = the input ends inside a block (*tail bytes after
 * *blocks whole blocks; no message), -1 = error (message printed). *blocks: blocks done. */
typedef int (*CliBlockFn)(void *arg, const int16_t *in, int16_t *out, size_t n);
int cli_block_stream(const char *cmd, size_t nv, size_t chunk, CliBlockFn fn, void *arg,
                     size_t *blocks, size_t *tail);

/* Monotonic time in seconds. */
double cli_now(void);

/* Subcommands (one file each: tools/cmd_<name>.c). */
int vidk_cmd_info(int argc, char **argv);
int vidk_cmd_gen(int argc, char **argv);
int vidk_cmd_convert(int argc, char **argv);
int vidk_cmd_me(int argc, char **argv);
int vidk_cmd_xform(int argc, char **argv);
int vidk_cmd_encode(int argc, char **argv);

/* `vidkern xform --codec X ...` (tools/xform_<codec>.c); argv[0] is "xform". */
int vidk_xform_h264(int argc, char **argv);
int vidk_xform_hevc(int argc, char **argv);

#endif
