/* Private header of `vidkern-bench me` (bench_me.c: options, sources, measurement;
 * bench_me_report.c: the derived numbers, tables and report files): the constants and
 * types both files use and the functions that cross files. */
#ifndef VIDK_BENCH_ME_H
#define VIDK_BENCH_ME_H

#include <stdio.h>

#include "bench_util.h"
#include "cuda/cuda_backend.h"

#define MAX_LIST    16
#define MAX_SOURCES 32

/* ---- sources ------------------------------------------------------------------ */
typedef struct BSource {
    char label[64];     /* "container (real)", "mosaic (real)", "generated" */
    char size_name[16]; /* "cif", "1080p", "640x360" */
    char kind[8];       /* real | mosaic | gen */
    int w, h;
    int npics;
    VidkPicture pics[64];
} BSource;

/* ---- results ------------------------------------------------------------------- */
typedef struct BResult {
    int done;     /* measured (else err says why not) */
    double ms;    /* median per frame, scaled to the full picture */
    int est_rows; /* 0 = full picture; k = timed on k macroblock rows and scaled */
    int runs;
    double sad_px, zero; /* of the smallest shape, frame pair 0 */
    int stats_rows;      /* 0 = from the full picture, else from a k-row stripe */
    int has_cuda;
    VidkCudaTiming cuda; /* medians */
    int mismatch;        /* field differs from the first full-picture backend */
    const char *mismatch_with;
    /* cuda only, "sequence" mode: frames streamed, reference resident, next upload
     * overlapped (measure_seq); ms is then the throughput per frame. */
    int seq_done, seq_runs, seq_mismatch;
    double seq_ms;
    VidkCudaTiming seq_cuda; /* medians */
    char err[160];
} BResult;

typedef struct Bench {
    /* options */
    int nsizes, nranges, nmodes, nbackends;
    char sizes[MAX_LIST][16];
    int ranges[MAX_LIST];
    unsigned modes[MAX_LIST];
    char mode_names[MAX_LIST][16];
    VidkBackend backends[MAX_LIST];
    int frames, runs, quiet, device;
    double max_seconds;
    /* state */
    VidkContext *ctx[VIDK_BACKEND_COUNT];
    int nsrc;
    BSource *src[MAX_SOURCES];
    BResult *res; /* [src][mode][range][backend] */
    BenchNotes notes;
    BenchMeta mt;
} Bench;

/* ---- bench_me.c ------------------------------------------------------------------ */

/* The result of source s, shapes m, range r, backend k. */
BResult *bme_result(Bench *b, int s, int m, int r, int k);
/* The smallest block size of the shape set `shapes` (16x16 if none). */
int bme_smallest_shape(unsigned shapes);

/* ---- bench_me_report.c ----------------------------------------------------------- */

/* A result's time per frame: "ms[ (est. from k rows)]", or "failed: why". */
void bme_fmt_time(char *buf, size_t n, const BResult *x);
/* The rows of the main table, text (md 0) or markdown (md 1). */
void bme_print_rows(FILE *f, Bench *b, int md);
/* What the columns mean, text or (md) markdown. */
void bme_print_legend(FILE *f, int md);
/* Time against search range beside the O(n^2) model (nothing for one range). */
void bme_print_complexity(FILE *f, Bench *b, int md);
/* The targets of issue 6 with the values measured. */
void bme_print_targets(FILE *f, Bench *b, int md);
/* The writer of bench_write_outputs: CSV, JSON or markdown of arg, a Bench. */
void bme_write_report(FILE *f, int what, void *arg);

#endif
