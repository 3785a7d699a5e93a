/* What bench_hevc.c (`vidkern-bench hevc`: options, workloads, references, measurement)
 * and bench_hevc_report.c (Table 1 and the other lookups of the results, the targets,
 * the text, Markdown, CSV and JSON reports) share; private to the benchmark. */
#ifndef VIDK_BENCH_BENCH_HEVC_H
#define VIDK_BENCH_BENCH_HEVC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench_util.h"
#include "cuda/cuda_backend.h"
#include "hevc_workload.h"
#include "mosaic.h"

/* The CUDA HEVC options (src/cuda/hevc_cuda.h: tensor cores, streams, kernel-only runs,
 * host emulation) exist in builds with CUDA. */
#define BENCH_HEVC_HOOKS VIDK_HAVE_CUDA
#if BENCH_HEVC_HOOKS
#include "cuda/hevc_cuda.h"
#endif

#ifndef VIDK_BENCH_CUBLAS
#define VIDK_BENCH_CUBLAS 0
#endif
#if VIDK_BENCH_CUBLAS
#include "cuda/hevc_cublas.h"
#endif

#if BENCH_HEVC_HOOKS
typedef VidkHevcCudaRange PinRange;
#else
typedef struct PinRange {
    const void *ptr;
    size_t bytes;
} PinRange;
#endif

#define MAX_WL      16
#define MAX_STREAMS 8

enum { IM_C = 0, IM_SIMD, IM_THREADS, IM_CUDA, IM_CUBLAS, IM_COUNT };
static const char *const im_names[IM_COUNT] = {"c", "simd", "threads", "cuda", "cublas"};
enum { DIR_FWD = 0, DIR_INV = 1 };
/* cuda configurations: the library defaults (public API); device-only timing (host
 * staging before the first device operation: the stage spans are pure device time, the
 * paper's "overall") with kernel-only runs; the same with the tensor-core path off / on;
 * the stream sweep (device-only, chunks = streams); the library defaults on batch arrays
 * registered with vidk_host_register (direct copies, no staging), with kernel-only runs. */
enum { VAR_DEFAULT = 0, VAR_DEVICE, VAR_TC_OFF, VAR_TC_ON, VAR_SWEEP, VAR_PINNED };

/* Most host ranges the pinned configuration registers (VIDK_MAX_HOST_REGISTERED is 64). */
#define MAX_PINS 60
static const char *const dir_names[2] = {"fwd", "inv"};

/* ------------------------------------------------------------------ results */

typedef struct Result {
    int wl, dir, impl;
    int var;     /* VAR_* (cuda; VAR_DEFAULT for the others) */
    int tc;      /* cuda: -1 default, 0 off, 1 on */
    int streams; /* cuda: 0 = the context default */
    int sweep;   /* 1: a point of the stream sweep */
    int done;
    char err[200];
    int runs;
    double ms, ms_min; /* host clock per frame */
    int has_dev;
    double dev_total, h2d, kernel, d2h; /* medians of the device stages (events) */
    size_t h2d_bytes, d2h_bytes;
    double kernel_bytes; /* modelled minimum device-memory traffic of the kernels */
    int has_kernel_only;
    double kernel_only; /* kernel on device-resident data (when the build has it) */
    int launches;
    int has_direct;                /* cuda with the hooks: bytes by route, last run */
    size_t direct_h2d, direct_d2h; /* straight between registered arrays and the device */
    unsigned dense_classes, compact_classes; /* fwd, last run: how the levels came down */
    int round_trips;                         /* fwd, last run: second-phase downloads */
    int checked;                             /* frames compared with c */
    uint64_t mism_coefs;
    uint32_t mism_tbs;
    int max_diff;
    int mismatch; /* library backend differs from c (fatal) */
} Result;

typedef struct WlInfo {
    HwSpec spec;
    int built;
    char err[240];
    char source[320];
    const char *kind; /* real | gen */
    int frames, intra_frames;
    double tbs[VIDK_HEVC_TB_SIZES];  /* per frame, mean */
    double area[VIDK_HEVC_TB_SIZES]; /* share of the samples */
    double nz[VIDK_HEVC_TB_SIZES];   /* share of TBs with a non-zero level (c) */
    double samples;                  /* per frame */
    double mean_abs;
    double build_s;
} WlInfo;

typedef BenchMeta Meta;

typedef struct Bench {
    int nwl;
    HwSpec spec[MAX_WL];
    WlInfo info[MAX_WL];
    int dir_on[2];
    int im_on[IM_COUNT];
    int nstreams;
    int streams[MAX_STREAMS];
    int tc_on[2]; /* requested tensor-core variants (off, on) */
    int frames, runs, qp, quiet, threads, device;
    unsigned cpumask;
    double max_seconds;
    HwSource source;
    Mosaic *mosaic;
    VidkContext *ctx[IM_COUNT]; /* c, simd, threads, cuda (default settings) */
    VidkContext *sweep_ctx;     /* cuda with MAX_STREAMS streams (the sweep) */
    int public_fallback;        /* the public API said ENOSYS: default = the hook, opts NULL */
    int cuda_emu;               /* --cuda-emu: cuda rows through the host emulation */
    VidkContext *prep;          /* motion search of the workloads: threads, all cores */
#if VIDK_BENCH_CUBLAS
    HcbCtx *hcb;
    int hcb_frame; /* frame staged in the baseline (-1 none) */
#endif
    int have_tc_switch, have_kernel_only;
    int pinned_on; /* the "pinned" cuda configuration */
    int download;  /* forward download mode of the hook configurations (opts.compact) */
    int alloc4;    /* 4x4 forward allocation of the hook configurations (opts.alloc4) */
    /* its registered ranges: the arrays (emulation: passed as opts.emu_pinned), and the
     * page-rounded merged ranges registered on the cuda context */
    PinRange pin[MAX_PINS];
    int npin;
    void *pin_reg[MAX_PINS];
    int npin_reg;
    Result *res;
    int nres, capres;
    BenchNotes notes;
    double hbm_bps, pcie_bps;
    char hbm_from[96];
    int have_meas;
    double meas_d2d, meas_h2d, meas_d2h;
    const char *inject;
    Meta mt;
} Bench;

/* The name of a result's configuration: default, device, tc=off, tc=on, streams=N or
 * pinned (bench_hevc.c). */
const char *bhevc_variant(const Result *r, char *buf, size_t n);

/* The report (bench_hevc_report.c): as text (md 0: the legend and the targets last) or
 * Markdown (md 1); bhevc_write_report is bench_write_outputs' callback (arg: the Bench):
 * CSV, JSON or Markdown. */
void bhevc_write_text(FILE *f, const Bench *b, int md);
void bhevc_write_report(FILE *f, int what, void *arg);

#endif
