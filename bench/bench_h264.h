/* Private header of `vidkern-bench h264` (bench_h264.c: options, workloads, measurement;
 * bench_h264_report.c: the results, their tables and files): the constants and types both
 * files use and the functions of bench_h264_report.c that bench_h264.c calls. */
#ifndef VIDK_BENCH_H264_H
#define VIDK_BENCH_H264_H

#include <stdio.h>

#include "bench_util.h"
#include "cuda/h264_cuda.h"
#include "h264_workload.h"

/* Ceilings of the GPU machines here (DESIGN.md): pinned PCIe per direction, HBM. */
#define PCIE_GBS_DEFAULT 55.0
#define HBM_GBS_H100     3000.0
#define HBM_GBS_H200     4300.0

#define MAX_SIZES   8
#define MAX_GPU_CTX 8
#define MAX_TARGETS 32

enum { KIND_ALL = 0, KIND_4 = 1, KIND_8 = 2, KINDS = 3 };
static const char *const kind_name[KINDS] = {"all", "4x4", "8x8"};

/* Steps of Table 4 (src/cuda/h264_cuda.h, VidkH264CudaStep). */
#define STEPS 11
_Static_assert(STEPS == VIDK_H264_CUDA_STEPS, "the step names below follow VidkH264CudaStep");
static const char *const step_name[STEPS] = {"dense",     "compact", "line",  "larger",
                                             "coalesced", "sparse",  "fused", "pipeline",
                                             "graphs",    "host",    "planes"};

/* ---- results ------------------------------------------------------------------------ */

typedef struct Stat {
    int done, runs, mismatch, has_dev;
    double ms;                                  /* wall per frame, median over passes */
    double kernel_ms, h2d_ms, d2h_ms, total_ms; /* device stages per frame, medians */
    double h2d_bytes, d2h_bytes;                /* per frame */
    char err[96];
} Stat;

typedef struct Row {
    int wl;
    char backend[16]; /* c, simd, threads, cuda, cuda-emu */
    char variant[24]; /* batch, dense, <step>, default, no-overlap, throughput */
    int kind;
    Stat st;
} Row;

typedef struct WlInfo {
    char size_name[24], mode_name[48], source[256];
    int w, h, nframes;
    H264wStats stats;
} WlInfo;

typedef struct Micro {
    char backend[16], fn[32];
    double ns;
} Micro;

typedef struct Target {
    char what[128], where[64], value[64];
    int met; /* 1 met, 0 missed, -1 not measured */
} Target;

typedef struct Bench {
    /* options */
    int nsizes, size_w[MAX_SIZES], size_h[MAX_SIZES];
    char size_name[MAX_SIZES][24];
    int nmodes, modes[H264W_MODE_COUNT];
    int nbackends;
    VidkBackend backends[VIDK_BACKEND_COUNT];
    int cuda_emu, frames, runs, quiet, device, gpu_contexts, sizes_given, modes_given;
    double max_seconds, hbm_gbs, pcie_gbs;
    /* state */
    VidkContext *ctx[VIDK_BACKEND_COUNT];
    VidkContext *ref_ctx, *gen_ctx, *gen_own; /* gen_own: opened only to make workloads */
    VidkContext *gpu_ctx[MAX_GPU_CTX];
    int ngpu_ctx;
    BenchMeta mt;
    WlInfo *wls;
    int nwl, capwl;
    Row *rows;
    int nrows, caprows;
    Micro micro[12];
    int nmicro;
    Target targets[MAX_TARGETS];
    int ntargets;
    BenchNotes notes;
    int mismatches, failures;
    double t_start;
    const char *fault; /* $VIDK_BENCH_H264_FAULT: backend label whose output is corrupted */
    int api_noted, steps_noted;
} Bench;

/* ---- one workload being measured (bench_h264.c) ----------------------------------------- */

typedef struct Live {
    int wl; /* index in b->wls */
    const H264Workload *w;
    VidkH264Batch *sub[KINDS]; /* per kind, per frame: the batch, 4x4 only, 8x8 only */
    uint64_t *ref[KINDS]; /* hashes of the c backend's reconstructions (enc_hash_picture) */
    VidkPicture work;
} Live;

/* ---- tables --------------------------------------------------------------------------------
 */

#define TAB_MAXC 16
typedef char Cell[64];
typedef struct Tab {
    char title[200];
    char legend[1400];
    int ncol, lead, nrow, cap;
    Cell head[TAB_MAXC];
    Cell (*row)[TAB_MAXC];
} Tab;

/* The tables of bh264_build_tables, in their order. */
enum {
    T_WL,
    T_BYTES,
    T_FIG5,
    T_T3,
    T_T4K,
    T_T4W,
    T_FIG4,
    T_LAT,
    T_PIN,
    T_MICRO,
    T_TGT,
    T_COUNT
};

/* The argument of bh264_write_report. */
typedef struct Report {
    const Bench *b;
    const Tab *t;
} Report;

/* ---- bench_h264_report.c ----------------------------------------------------------------- */

/* A note for the report's header, also on stderr unless quiet: fmt with one string. */
void bh264_note(Bench *b, const char *fmt, const char *arg);
/* A new row of results of workload wl, zeroed but for its labels (NULL: out of memory). */
Row *bh264_add_row(Bench *b, int wl, const char *backend, const char *variant, int kind);
/* The cuda rows' backend label: "cuda", or "cuda-emu" for the host emulation. */
const char *bh264_gpu_label(const Bench *b);
/* After row r of lv is measured: counts its mismatch or failure (with a message on
 * stderr), then prints its progress line on stderr unless quiet. */
void bh264_report(Bench *b, const Live *lv, const Row *r);
/* b->mt (machine, date, command line) and, unless --hbm-gbs set it, the HBM ceiling. */
void bh264_meta_fill(Bench *b, int argc, char **argv);
/* The targets of issue 3 (b->targets), from the rows measured. */
void bh264_eval_targets(Bench *b);
/* The tables t[0..T_COUNT-1] of the results, targets included (bh264_eval_targets first;
 * bh264_tab_free each after use). */
void bh264_build_tables(Bench *b, Tab *t);
/* A table as text or (md) markdown; nothing for a table without rows. */
void bh264_tab_print(FILE *f, const Tab *t, int md);
void bh264_tab_free(Tab *t);
/* The report's header lines (machine, command, ceilings, notes), text or (md) markdown. */
void bh264_write_header(FILE *f, const Bench *b, int md);
/* The writer of bench_write_outputs: CSV, JSON or markdown of arg, a Report. */
void bh264_write_report(FILE *f, int what, void *arg);

#endif
