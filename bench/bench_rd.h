/* Private header of `vidkern-bench rd` (bench_rd.c: options, sources, the vidkern and x264
 * encodes; bench_rd_report.c: BD-rate, tables and report files): the types both files use
 * and the functions of bench_rd_report.c that bench_rd.c calls. */
#ifndef VIDK_BENCH_RD_H
#define VIDK_BENCH_RD_H

#include <stdio.h>

#include "bench_util.h"

#ifndef VIDK_BENCH_X264
#define VIDK_BENCH_X264 0
#endif
#if VIDK_BENCH_X264
#include <x264.h>
#endif

#define MAX_LIST    16
#define MAX_PRESETS 10

/* ---- results ------------------------------------------------------------------------ */
typedef struct RdPoint {
    int done;
    char err[160];
    double kbits;     /* per frame */
    double psnr[3];   /* average of the frames' PSNRs */
    double psnr_yuv;  /* (6 Y + U + V) / 8 */
    double fps;       /* frames / wall clock of the encode calls */
    int estimate;     /* vidkern: some frame had no stream (bits estimated) */
    int intra, bfr;   /* intra / B frames */
    double sei_bytes; /* x264: SEI bytes left out of the bits (whole sequence) */
} RdPoint;

typedef struct RdSource {
    char name[128];
    char kind[8]; /* clip | mosaic | gen */
    int w, h, frames, read, fps_num, fps_den;
    RdPoint vk[MAX_LIST][MAX_LIST];   /* [range][qp] */
    RdPoint x[MAX_PRESETS][MAX_LIST]; /* [preset][qp] */
    double bd[MAX_LIST]
             [MAX_PRESETS]; /* BD-rate % (PSNR-Y), NAN where it could not be computed */
    double bdc[MAX_LIST][MAX_PRESETS]; /* the same on PSNR-YUV (chroma included) */
} RdSource;

typedef struct Rd {
    int nqps, nranges, npresets, keyint, frames, x264_threads, x264_bframes, use_x264;
    int deblock;   /* vidkern: VidkEncParams.deblock (1; 0 with --no-deblock) */
    int cabac;     /* vidkern: VidkEncParams.cabac (--cabac) */
    int i4x4;      /* vidkern: VidkEncParams.intra4x4 (--i4x4) */
    int bframes;   /* vidkern: VidkEncParams.bframes (--bframes) */
    int b_adapt;   /* vidkern: VidkEncParams.b_adapt (--b-adapt) */
    int b_pyramid; /* vidkern: VidkEncParams.b_pyramid (--b-pyramid) */
    int i8x8;      /* vidkern: VidkEncParams.intra8x8 (--i8x8) */
    int slices;    /* vidkern: VidkEncParams.slices when > 0 (--slices) */
    int qps[MAX_LIST], ranges[MAX_LIST];
    char presets[MAX_PRESETS][16];
    int x264_threads_used[MAX_PRESETS], x264_bframes_used[MAX_PRESETS];
    char x264_tools[MAX_PRESETS][160]; /* the preset's coding tools as x264 applied them */
    VidkContext *ctx;
    char backend[48];
    int nsrc;
    RdSource *src;
    BenchNotes notes;
    BenchMeta mt;
} Rd;

/* ---- bench_rd_report.c ------------------------------------------------------------- */

/* The BD-rates of source s (s->bd, s->bdc; NAN where they cannot be computed). */
void brd_compute_bd(const Rd *b, RdSource *s);
/* Whether some vidkern point of some source has estimated bits (no stream). */
int brd_any_estimated(const Rd *b);
/* The report as text or (md) Markdown: every source's points and BD-rates, the summary. */
void brd_print_report(FILE *f, Rd *b, int md);
/* The writer of bench_write_outputs: CSV, JSON or Markdown of arg, an Rd. */
void brd_write_report(FILE *f, int what, void *arg);

#endif
