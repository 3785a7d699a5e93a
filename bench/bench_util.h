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

#ifndef VIDK_GIT_COMMIT
#define VIDK_GIT_COMMIT "unknown"
#endif

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

/* Report lines "vidkern-bench TITLE  (COMMAND)", "device: CPU, N cores onlineEXTRA; GPU: G",
 * "date: D  commit: C" (text), or for markdown (md) "# vidkern-bench MD_TITLE", then
 * "- Device: ...", "- Date:", "- Commit:", "- vidkern VERSION", "- Command: `...`". */
void bench_print_header(FILE *f, const BenchMeta *mt, const char *title, const char *md_title,
                        const char *extra, int md);

/* Unless quiet, "vidkern-bench CMD: COMMAND; CPU, N cores; GPU G" on stderr. */
void bench_say_start(const char *cmd, const BenchMeta *mt, int quiet);

/* The notes of a report: at most `max` (<= BENCH_MAX_NOTES) of `len` (<= 400) bytes. */
#define BENCH_MAX_NOTES 16
typedef struct BenchNotes {
    int n, max;
    size_t len;
    char text[BENCH_MAX_NOTES][400];
} BenchNotes;

void bench_notes_init(BenchNotes *nt, int max, size_t len);
/* Add a note (dropped when full). */
void bench_note(BenchNotes *nt, const char *fmt, ...) CLI_PRINTF(2, 3);
/* One line "PREFIXnote" per note. */
void bench_notes_print(FILE *f, const BenchNotes *nt, const char *prefix);
/* The notes as the items of a JSON array: "a", "b". */
void bench_notes_json(FILE *f, const BenchNotes *nt);

/* The device-stage times of the timed runs, ms: kernel, H2D, D2H, total. */
#define BENCH_MAX_SAMPLES 1024
typedef struct BenchDevTimes {
    int n;
    double v[4][BENCH_MAX_SAMPLES];
} BenchDevTimes;

/* Add one run's stages (dropped beyond BENCH_MAX_SAMPLES). */
void bench_dev_add(BenchDevTimes *d, double kernel, double h2d, double d2h, double total);
/* Their medians (the samples are sorted). */
void bench_dev_medians(BenchDevTimes *d, double *kernel, double *h2d, double *d2h,
                       double *total);

/* Open ctx[be] for each backend be of backends[0..*n-1] from the common options `c`
 * (backend replaced, and quiet too where `quiet_open`). A backend that is not available
 * or does not open is dropped from the list (order kept), noted ("backend %s skipped:
 * not usable on this machine/build") and, unless c->quiet, said on stderr ("vidkern-bench CMD:
 * backend %s not usable here, skipped"). Returns 0, or -1 after "no usable backend" when
 * none is left. */
int bench_open_backends(const CliCommon *c, const char *cmd, int quiet_open,
                        VidkBackend *backends, int *n, VidkContext **ctx, BenchNotes *notes);

/* "LABEL" of backend be in the tables: "threads(N)" for an open threads context. */
const char *bench_backend_label(VidkContext *const *ctx, VidkBackend be, char *buf, size_t n);

/* The options that the benchmarks share: --csv, --json, --markdown (files), --backends,
 * --source, --video (strings), --frames, --runs (integers, checked against [1 or
 * frames_lo, *_hi]) and --max-seconds; the fields hold the defaults before parsing.
 * `no`: BENCH_NO_* of the options this benchmark has not. */
enum { BENCH_NO_CSV = 1, BENCH_NO_RUNS = 2, BENCH_NO_MAX_SECONDS = 4 };
typedef struct BenchOpts {
    const char *csv, *json, *md, *backends, *source, *video;
    long frames, runs, frames_lo, frames_hi, runs_hi;
    double max_seconds;
    unsigned no;
} BenchOpts;

/* One option of a benchmark's own: a flag (*flag = 1), or with a value a string (*str), an
 * integer in [lo, hi] (*num) or a number in [lo, hi] (*dbl); *given (where not NULL) = 1
 * when it is given. name: "--a", or aliases "--a|--b". A list ends with {NULL}. */
typedef struct BenchArg {
    const char *name;
    int *flag;
    const char **str;
    long *num;
    double *dbl;
    double lo, hi;
    int *given;
} BenchArg;

/* Parse argv[1..argc-1] (c: cli_common_init, then these): --help/-h (help() printed,
 * returns 1 at once), the common options of every command (cli_common_opt, but --json
 * takes a file here), those of BenchOpts, then those of `args`. Returns 0, 1 after help, or -1
 * after a message (a value out of range, an unknown option or an argument that is not an
 * option). */
int bench_parse_args(BenchOpts *o, CliCommon *c, const char *cmd, int argc, char **argv,
                     const BenchArg *args, void (*help)(void));

/* Index of `v` among `choices` ("a|b|c"), or -1 after "OPT: 'V' is not a, b or c". */
int bench_choice(const char *cmd, const char *opt, const char *v, const char *choices);

/* --backends LIST into out[] (no repeats); every backend when list is NULL. -1 after a
 * message. */
int bench_parse_backends(const char *cmd, const char *list, VidkBackend *out, int *n);

/* A comma list of integers in [lo, hi] (16 at most) into out[0..*n-1]; -1 after a message. */
int bench_parse_ints(const char *cmd, const char *opt, const char *s, long lo, long hi,
                     int *out, int *n);

/* "WxH" with 16 <= W <= 8192, 16 <= H <= max_h: 0, else -1. */
int bench_parse_wxh(const char *s, int max_h, int *w, int *h);

/* A size of --sizes: qcif, cif, 480p, 720p, 1080p, 2160p, 4k or WxH (H <= 4320; both
 * even where `even`): 0, else -1. */
int bench_size_of(const char *name, int even, int *w, int *h);

/* --sizes LIST (bench_split_list into `max` items of `item` bytes at out, each checked with
 * bench_size_of): the count, or -1 after a message. */
int bench_parse_sizes(const char *cmd, const char *s, int even, char *out, size_t item,
                      int max);

/* One table row, from the format of its text line `fmt` (cells separated by blanks, printf
 * widths): printed as is, or for markdown (md) as "| cell | cell |" with the same
 * conversions less their flags and widths. */
void bench_row(FILE *f, int md, const char *fmt, ...) CLI_PRINTF(3, 4);

/* `s` as a JSON string (quoted, escaped), in one of 8 buffers used in turn: at most 8 in
 * one call. */
const char *bench_jq(const char *s);

/* The run's verdict: "N WHAT" where mismatches, "N configuration(s) failed" where failures;
 * 1 when either, else 0. */
int bench_verdict(const char *cmd, int mismatches, const char *what, int failures);

/* Write the report files that are set: fn(f, BENCH_CSV / BENCH_JSON / BENCH_MD, arg) fills
 * each (through FILE.tmp and a rename). 0, or -1 when one could not be written. */
enum { BENCH_CSV, BENCH_JSON, BENCH_MD };
typedef void (*BenchWriteFn)(FILE *f, int what, void *arg);
int bench_write_outputs(const char *cmd, const char *csv, const char *json, const char *md,
                        BenchWriteFn fn, void *arg);

/* pics[0..n-1] (zeroed): frames 0..n-1 of the mosaic `m`, or where m is NULL of the generated
 * video, at w x h, 8-bit, chroma `c`, edges VIO_PAD. 0, or a negative error with every picture
 * freed. */
int bench_make_pics(VidkPicture *pics, int n, const Mosaic *m, int w, int h, VidkChroma c);

/* The visible 8-bit samples of src into dst (same size and chroma). */
void bench_copy_pic(VidkPicture *dst, const VidkPicture *src);

/* Open the mosaic of the real clips of folder `dir` (clips of 2 frames at least) into *m.
 * Returns 0, or -1 (dir NULL or no clips) after saying, unless `quiet`, "vidkern-bench CMD: no
 * real clips found (DIR): generated video only" on stderr; the note is the caller's. */
int bench_open_mosaic(Mosaic **m, const char *dir, const char *cmd, int quiet);

/* Folder dir, made unless it exists: 0, or -1 (not a folder, or cannot be made). */
int bench_make_dir(const char *dir);

/* Frames [0, n) through the encoder e, pipelined (frame i+1 sent before frame i is
 * received, VidkEncGeometry.max_pending at most in flight), then the end of the input:
 * pic(arg, i) gives frame i (its samples unchanged until it is received); after the k-th
 * receive, each(arg, k, &info) (coding order: info.index is the frame; its stream valid
 * until the next receive). recon / maps as for vidk_enc_receive. 0 or a negative error code
 * ("frame I: send / receive: ..." in err). */
int bench_code_frames(VidkEncoder *e, int n, VidkPicture (*pic)(void *, int),
                      VidkPicture *recon, VidkEncMaps *maps,
                      void (*each)(void *, int, const VidkEncFrameInfo *), void *arg, char *err,
                      size_t errlen);

/* The benchmarks of vidkern-bench (bench/bench_<what>.c); argv[0] is the <what> word. */
int vidk_bench_me(int argc, char **argv);
int vidk_bench_h264(int argc, char **argv);
int vidk_bench_hevc(int argc, char **argv);
int vidk_bench_encode(int argc, char **argv);

#endif
