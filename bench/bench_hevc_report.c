/* `vidkern-bench hevc`: the reports (bench_hevc.c runs the benchmark). Table 1 and the
 * other lookups of the results, the targets, the text and Markdown tables, CSV and
 * JSON. docs/BENCH_HEVC.md explains every column. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_hevc.h"
#include "bench_util.h"
#include "hevc_workload.h"

/* The paper's Table 1 (Tesla K40c, i5-3570K), ms per DCI 4K luma frame. */
static const double paper_t1[2][5] = {
    /* CPU, GPU overall, GPU kernel, cuBLAS overall, cuBLAS kernel */
    {234.59, 5.9, 0.78, 117.24, 101.75}, /* 4x4 */
    {705.95, 8.77, 3.65, 19.25, 8.97},   /* 32x32 */
};

/* x265 3.5 AVX2, one core of the GPU machine's Xeon, ms per DCI 4K luma frame
 * (issue 4): [direction][4x4, 32x32]. */
static const double x265_ms[2][2] = {{5.1, 9.8}, {4.4, 7.7}};

/* ------------------------------------------------------------------ derived values */

static const Result *find(const Bench *b, int wl, int dir, int impl, int var, int streams) {
    for (int i = 0; i < b->nres; i++) {
        const Result *r = &b->res[i];
        if (r->wl == wl && r->dir == dir && r->impl == impl && r->var == var &&
            r->streams == streams && r->done)
            return r;
    }
    return NULL;
}

/* Table 1 columns: 0 c, 1 simd, 2 threads, 3 GPU overall, 4 GPU kernel, 5 cuBLAS overall,
 * 6 cuBLAS kernel. Returns the value in ms, or -1 when not measured; *src names the
 * result it comes from. */
#define T1_COLS 7
static double table1(const Bench *b, int wl, int dir, int col, const Result **src) {
    const Result *r = NULL;
    double v = -1;
    switch (col) {
    case 0:
    case 1:
    case 2:
        if ((r = find(b, wl, dir, col, VAR_DEFAULT, 0))) v = r->ms;
        break;
    case 3: /* device events H2D .. D2H: the device-only configuration, else the default */
        if (((r = find(b, wl, dir, IM_CUDA, VAR_DEVICE, 0)) && r->has_dev) ||
            ((r = find(b, wl, dir, IM_CUDA, VAR_DEFAULT, 0)) && r->has_dev))
            v = r->dev_total;
        break;
    case 4: /* kernel on resident data: the one-stream configuration (the whole frame in one
             * launch, as the paper times its kernel), else the device-only one (a launch per
             * stream's chunk); else the kernel stage of one stream / the default */
        if ((r = find(b, wl, dir, IM_CUDA, VAR_SWEEP, 1)) && r->has_kernel_only)
            v = r->kernel_only;
        else if ((r = find(b, wl, dir, IM_CUDA, VAR_SWEEP, 1)) && r->has_dev)
            v = r->kernel; /* its single launch, timed by events inside the full call */
        else if ((r = find(b, wl, dir, IM_CUDA, VAR_DEVICE, 0)) && r->has_kernel_only)
            v = r->kernel_only;
        else if (((r = find(b, wl, dir, IM_CUDA, VAR_SWEEP, 1)) && r->has_dev) ||
                 ((r = find(b, wl, dir, IM_CUDA, VAR_DEFAULT, 0)) && r->has_dev))
            v = r->kernel;
        break;
    case 5:
        if ((r = find(b, wl, dir, IM_CUBLAS, VAR_DEFAULT, 0)) && r->has_dev) v = r->dev_total;
        break;
    case 6:
        if ((r = find(b, wl, dir, IM_CUBLAS, VAR_DEFAULT, 0)) && r->has_dev) v = r->kernel;
        break;
    default:
        break;
    }
    if (src) *src = v >= 0 ? r : NULL;
    return v;
}

/* Best device overall of the cuda configurations (default and sweep) of a workload. */
static double best_overall(const Bench *b, int wl, int dir, const Result **src) {
    double best = -1;
    *src = NULL;
    for (int i = 0; i < b->nres; i++) {
        const Result *r = &b->res[i];
        if (r->wl != wl || r->dir != dir || r->impl != IM_CUDA || !r->done || !r->has_dev)
            continue;
        if (best < 0 || r->dev_total < best) best = r->dev_total, *src = r;
    }
    return best;
}

static int is_dci(const HwSpec *s, HwDist d) {
    return s->w == 4096 && s->h == 2160 && s->dist == d;
}

static int find_wl(const Bench *b, HwDist d) {
    for (int i = 0; i < b->nwl; i++)
        if (b->info[i].built && is_dci(&b->spec[i], d)) return i;
    return -1;
}

static double hbm_ratio(const Bench *b, const Result *r) {
    const double ms = r->has_kernel_only ? r->kernel_only : r->kernel;
    return r->has_dev && ms > 0 ? r->kernel_bytes / (ms * 1e-3) / b->hbm_bps : 0;
}

static double gbps(double bytes, double ms) {
    return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0;
}

/* ------------------------------------------------------------------ targets */

typedef struct Target {
    char what[160];
    char value[96];
    char status[48]; /* "met (ratio)", "missed (ratio)", "not run" */
} Target;

static void fmt_ms(char *buf, size_t n, double ms) {
    if (ms < 0)
        snprintf(buf, n, "-");
    else if (ms < 0.1)
        snprintf(buf, n, "%.1f us", ms * 1e3);
    else
        snprintf(buf, n, ms >= 100 ? "%.1f ms" : ms >= 1 ? "%.3f ms" : "%.4f ms", ms);
}

/* Time target: met when value <= limit (ratio value / limit); speed-up target: met when
 * value > limit (ratio value / limit). */
static void target_time(Target *t, double v, double limit_ms, const char *extra) {
    if (v < 0) {
        snprintf(t->value, sizeof(t->value), "not run");
        snprintf(t->status, sizeof(t->status), "-");
        return;
    }
    fmt_ms(t->value, sizeof(t->value), v);
    if (extra)
        snprintf(t->value + strlen(t->value), sizeof(t->value) - strlen(t->value), " %s",
                 extra);
    snprintf(t->status, sizeof(t->status), "%s (%.2fx the limit)",
             v <= limit_ms ? "met" : "missed", v / limit_ms);
}

static void target_speedup(Target *t, double num, double den, double limit) {
    if (num < 0 || den <= 0) {
        snprintf(t->value, sizeof(t->value), "not run");
        snprintf(t->status, sizeof(t->status), "-");
        return;
    }
    const double sp = num / den;
    snprintf(t->value, sizeof(t->value), "%.1fx", sp);
    snprintf(t->status, sizeof(t->status), "%s (%.2fx the target)",
             sp > limit ? "met" : "missed", sp / limit);
}

static int make_targets(const Bench *b, Target *t) {
    int n = 0;
    const int w4 = find_wl(b, HW_DIST_4x4), w32 = find_wl(b, HW_DIST_32x32);
    const int wl[2] = {w4, w32};
    const char *dn[2] = {"all-4x4", "all-32x32"};
    const double klim[2] = {0.020, 0.030};
    for (int d = 1; d >= 0; d--) {
        snprintf(t[n].what, sizeof(t[n].what), "GPU kernel, DCI 4K %s fwd <= %.0f us", dn[d],
                 klim[d] * 1e3);
        target_time(&t[n++], wl[d] >= 0 ? table1(b, wl[d], DIR_FWD, 4, NULL) : -1, klim[d],
                    NULL);
    }
    for (int d = 1; d >= 0; d--) {
        const Result *src = NULL;
        const double v = wl[d] >= 0 ? best_overall(b, wl[d], DIR_FWD, &src) : -1;
        char extra[64] = "", va[32];
        if (src) snprintf(extra, sizeof(extra), "(%s)", bhevc_variant(src, va, sizeof(va)));
        snprintf(t[n].what, sizeof(t[n].what),
                 "GPU overall (H2D + kernel + D2H), DCI 4K %s fwd <= 0.45 ms", dn[d]);
        target_time(&t[n++], v, 0.45, src ? extra : NULL);
    }
    const double sp_lim[2] = {130.17, 2.46};
    for (int d = 1; d >= 0; d--) {
        snprintf(t[n].what, sizeof(t[n].what),
                 "GPU kernel vs cuBLAS kernel, DCI 4K %s fwd > %.2fx", dn[d], sp_lim[d]);
        target_speedup(&t[n++], wl[d] >= 0 ? table1(b, wl[d], DIR_FWD, 6, NULL) : -1,
                       wl[d] >= 0 ? table1(b, wl[d], DIR_FWD, 4, NULL) : -1, sp_lim[d]);
    }
    for (int dir = 0; dir < 2; dir++)
        for (int d = 0; d < 2; d++) {
            snprintf(t[n].what, sizeof(t[n].what),
                     "simd (one core) %s, DCI 4K %s <= x265 3.5 AVX2 %.1f ms",
                     dir ? "inv" : "fwd", dn[d], x265_ms[dir][d]);
            target_time(&t[n++], wl[d] >= 0 ? table1(b, wl[d], dir, 1, NULL) : -1,
                        x265_ms[dir][d], NULL);
        }
    return n;
}

/* ------------------------------------------------------------------ output helpers */

static const char *impl_label(const Bench *b, int im, char *buf, size_t n) {
    if (im == IM_THREADS && b->ctx[IM_THREADS])
        snprintf(buf, n, "threads(%d)", vidk_get_threads(b->ctx[IM_THREADS]));
    else
        snprintf(buf, n, "%s", im_names[im]);
    return buf;
}

static const char *chroma_name(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? "4:0:0" : c == VIDK_CHROMA_420 ? "4:2:0" : "?";
}

static void fmt_col(char *buf, size_t n, double v) {
    if (v < 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, v >= 100 ? "%.1f" : v >= 1 ? "%.3f" : "%.4f", v);
}

static void print_legend(FILE *f, const Bench *b, int md) {
    const char *p = md ? "- " : "";
    fprintf(
        f,
        "%sms: per frame, median of the timed runs after warm-up; fwd = forward transform "
        "+ quantisation (+ non-zero counts and compaction), inv = dequantisation + inverse "
        "transform to residuals (vidk_hevc_batch_inverse without a picture).\n"
        "%sCPU columns and \"e2e\": host clock around one API call. GPU overall = device "
        "events from the first H2D to the end of the last D2H (the paper's overall); GPU "
        "kernel = %s; cuBLAS: the paper's float baseline (forward only), overall and "
        "kernel from its own events.\n"
        "%sbytes: H2D/D2H as the backend reports them; kernel bytes = a lower bound of "
        "the kernels' device-memory traffic (fwd: residuals in + levels out + 8-byte "
        "records + 2-byte counts; inv: levels in + residuals out + records; cuBLAS: 40 B "
        "per sample). HBM ceiling %.2f TB/s (%s), PCIe ceiling %.0f GB/s each way "
        "(pinned).\n"
        "%smismatch: values that differ from the c backend (library backends must have "
        "none: exit 1 otherwise; the float cuBLAS baseline's are counted and reported).\n"
        "%scuda pinned: the library defaults on batch arrays registered with "
        "vidk_host_register (res, lev, nnz of every list; direct copies, no host staging); "
        "GPU overall = its device span, GPU kernel = its kernel-only runs, e2e = host clock; "
        "direct MB = bytes copied straight between those arrays and the device; download = "
        "how the last forward run's levels came down (--download %s): dense (one D2H phase, "
        "straight into lev), compact/N or mixed/N (compacted classes: N host round trips "
        "before their second D2H phase).\n",
        p, p,
        b->have_kernel_only ? "the kernel on device-resident data"
                            : "the kernel stage of the one-stream configuration "
                              "(first kernel begins .. last ends)",
        p, b->hbm_bps / 1e12, b->hbm_from, b->pcie_bps / 1e9, p, p,
        b->download == 2   ? "auto"
        : b->download == 1 ? "compact"
                           : "dense");
}

/* ------------------------------------------------------------------ human output */

static void print_workloads(FILE *f, const Bench *b, int md) {
    if (md)
        fprintf(
            f, "\n## Workloads\n\n| workload | size | chroma | frames (I) | source | TBs/frame "
               "4x4 / 8x8 / 16x16 / 32x32 | area share | non-zero TBs | mean abs residual "
               "|\n|---|---|---|---|---|---|---|---|---:|\n");
    else
        fprintf(f, "\nworkloads:\n");
    for (int i = 0; i < b->nwl; i++) {
        const WlInfo *in = &b->info[i];
        if (!in->built) {
            if (md)
                fprintf(f, "| %s | failed: %s |||||||\n", in->spec.name, in->err);
            else
                fprintf(f, "  %-14s failed: %s\n", in->spec.name, in->err);
            continue;
        }
        char tbs[96], area[96], nz[96];
        snprintf(tbs, sizeof(tbs), "%.0f / %.0f / %.0f / %.0f", in->tbs[0], in->tbs[1],
                 in->tbs[2], in->tbs[3]);
        snprintf(area, sizeof(area), "%.0f / %.0f / %.0f / %.0f %%", 100 * in->area[0],
                 100 * in->area[1], 100 * in->area[2], 100 * in->area[3]);
        snprintf(nz, sizeof(nz), "%.0f / %.0f / %.0f / %.0f %%", 100 * in->nz[0],
                 100 * in->nz[1], 100 * in->nz[2], 100 * in->nz[3]);
        if (md)
            fprintf(f, "| %s | %dx%d | %s | %d (%d) | %s | %s | %s | %s | %.2f |\n",
                    in->spec.name, in->spec.w, in->spec.h, chroma_name(in->spec.chroma),
                    in->frames, in->intra_frames, in->source, tbs, area, nz, in->mean_abs);
        else
            fprintf(f,
                    "  %-14s %dx%d %s, %d frames (%d intra), %.0f samples/frame, mean |res| "
                    "%.2f\n    TBs/frame 4x4/8x8/16x16/32x32: %s; area %s; non-zero TBs %s\n"
                    "    source: %s\n",
                    in->spec.name, in->spec.w, in->spec.h, chroma_name(in->spec.chroma),
                    in->frames, in->intra_frames, in->samples, in->mean_abs, tbs, area, nz,
                    in->source);
    }
}

static void print_table1(FILE *f, const Bench *b, int md) {
    static const char *const cols[T1_COLS] = {"CPU c",        "CPU simd",   "CPU threads",
                                              "GPU overall",  "GPU kernel", "cuBLAS overall",
                                              "cuBLAS kernel"};
    char thr[32];
    impl_label(b, IM_THREADS, thr, sizeof(thr));
    if (md) {
        fprintf(f, "\n## Table 1: frame processing time [ms]\n\n| workload | dir |");
        for (int c = 0; c < T1_COLS; c++)
            fprintf(f, " %s |", c == 2 ? thr : cols[c]);
        fprintf(f, " GPU kernel vs cuBLAS kernel |\n|---|---|");
        for (int c = 0; c <= T1_COLS; c++)
            fprintf(f, "---:|");
        fprintf(f, "\n");
    } else {
        fprintf(f, "\nTable 1 (ms per frame):\n%-14s %-4s", "workload", "dir");
        for (int c = 0; c < T1_COLS; c++)
            fprintf(f, " %14s", c == 2 ? thr : cols[c]);
        fprintf(f, " %14s\n", "kernel vs cuBLAS");
    }
    for (int i = 0; i < b->nwl; i++) {
        if (!b->info[i].built) continue;
        for (int d = 0; d < 2; d++) {
            if (!b->dir_on[d]) continue;
            double v[T1_COLS];
            char s[T1_COLS][24], sp[24] = "-";
            for (int c = 0; c < T1_COLS; c++) {
                v[c] = table1(b, i, d, c, NULL);
                fmt_col(s[c], sizeof(s[c]), v[c]);
            }
            if (v[4] > 0 && v[6] > 0) snprintf(sp, sizeof(sp), "%.1fx", v[6] / v[4]);
            _Static_assert(T1_COLS == 7, "the row below has the 7 columns of Table 1");
            bench_row(f, md, "%-14s %-4s %14s %14s %14s %14s %14s %14s %14s %14s\n",
                      b->spec[i].name, dir_names[d], s[0], s[1], s[2], s[3], s[4], s[5], s[6],
                      sp);
        }
    }
    /* the paper's row for reference */
    for (int d = 0; d < 2; d++) {
        const char *name = d ? "paper 32x32" : "paper 4x4";
        const double *p = paper_t1[d];
        if (md)
            fprintf(f,
                    "| %s (K40c, i5-3570K) | fwd | %.2f | - | - | %.2f | %.2f | %.2f | %.2f | "
                    "%.2fx |\n",
                    name, p[0], p[1], p[2], p[3], p[4], p[4] / p[2]);
        else
            fprintf(f, "%-14s %-4s %14.2f %14s %14s %14.2f %14.2f %14.2f %14.2f %13.2fx\n",
                    name, "fwd", p[0], "-", "-", p[1], p[2], p[3], p[4], p[4] / p[2]);
    }
}

/* How the last forward run's levels came down: dense, compact (+ round trips), mixed. */
static const char *download_mode(const Result *r, char *buf, size_t n) {
    if (!r || !r->has_direct || r->dir != DIR_FWD || !(r->dense_classes | r->compact_classes))
        snprintf(buf, n, "-");
    else if (!r->compact_classes)
        snprintf(buf, n, "dense");
    else
        snprintf(buf, n, "%s/%d", r->dense_classes ? "mixed" : "compact", r->round_trips);
    return buf;
}

/* The pinned configuration next to the default and device-only ones: device span, kernel,
 * end to end, the bytes that went straight between the registered arrays and the device,
 * and how the forward's levels came down (dense; compact or mixed / host round trips). */
static void print_pinned(FILE *f, const Bench *b, int md) {
    if (!b->pinned_on || !b->im_on[IM_CUDA]) return;
    if (md)
        fprintf(
            f,
            "\n## cuda on pinned batch arrays (registered with vidk_host_register) [ms]\n\n"
            "| workload | dir | GPU overall | GPU kernel | e2e | e2e default | GPU overall "
            "device-only | direct MB up | direct MB down | download |\n|---|---|---:|---:|---:|"
            "---:|---:|---:|---:|---|\n");
    else
        fprintf(f,
                "\ncuda on pinned batch arrays (registered with vidk_host_register), ms per "
                "frame:\n%-14s %-4s %12s %12s %12s %12s %12s %10s %10s  %s\n",
                "workload", "dir", "GPU overall", "GPU kernel", "e2e", "e2e default",
                "dev-only ovl", "direct MB^", "direct MBv", "download");
    for (int i = 0; i < b->nwl; i++)
        for (int d = 0; d < 2; d++) {
            if (!b->info[i].built || !b->dir_on[d]) continue;
            const Result *p = find(b, i, d, IM_CUDA, VAR_PINNED, 0),
                         *df = find(b, i, d, IM_CUDA, VAR_DEFAULT, 0),
                         *dv = find(b, i, d, IM_CUDA, VAR_DEVICE, 0);
            char c[7][24];
            for (int k = 0; k < 7; k++)
                snprintf(c[k], sizeof(c[k]), "-");
            if (p && p->has_dev) fmt_col(c[0], sizeof(c[0]), p->dev_total);
            if (p && p->has_kernel_only) fmt_col(c[1], sizeof(c[1]), p->kernel_only);
            if (p) fmt_col(c[2], sizeof(c[2]), p->ms);
            if (df) fmt_col(c[3], sizeof(c[3]), df->ms);
            if (dv && dv->has_dev) fmt_col(c[4], sizeof(c[4]), dv->dev_total);
            if (p && p->has_direct) {
                snprintf(c[5], sizeof(c[5]), "%.2f", p->direct_h2d / 1e6);
                snprintf(c[6], sizeof(c[6]), "%.2f", p->direct_d2h / 1e6);
            }
            char dm[32];
            download_mode(p, dm, sizeof(dm));
            bench_row(f, md, "%-14s %-4s %12s %12s %12s %12s %12s %10s %10s  %s\n",
                      b->spec[i].name, dir_names[d], c[0], c[1], c[2], c[3], c[4], c[5], c[6],
                      dm);
        }
}

static void print_sweep(FILE *f, const Bench *b, int md) {
    if (!b->nstreams || !b->im_on[IM_CUDA]) return;
    if (md) {
        fprintf(f, "\n## Stream sweep (Figure 3): GPU overall [ms] (end-to-end in brackets)\n\n"
                   "| workload | dir |");
        for (int k = 0; k < b->nstreams; k++)
            fprintf(f, " %d |", b->streams[k]);
        fprintf(f, "\n|---|---|");
        for (int k = 0; k < b->nstreams; k++)
            fprintf(f, "---:|");
        fprintf(f, "\n");
    } else {
        fprintf(f, "\nstream sweep (Figure 3): GPU overall ms (end-to-end ms)\n%-14s %-4s",
                "workload", "dir");
        for (int k = 0; k < b->nstreams; k++)
            fprintf(f, " %17d", b->streams[k]);
        fprintf(f, "\n");
    }
    for (int i = 0; i < b->nwl; i++)
        for (int d = 0; d < 2; d++) {
            if (!b->info[i].built || !b->dir_on[d]) continue;
            if (md)
                fprintf(f, "| %s | %s |", b->spec[i].name, dir_names[d]);
            else
                fprintf(f, "%-14s %-4s", b->spec[i].name, dir_names[d]);
            for (int k = 0; k < b->nstreams; k++) {
                const Result *r = find(b, i, d, IM_CUDA, VAR_SWEEP, b->streams[k]);
                char s[48] = "-";
                if (r && r->has_dev)
                    snprintf(s, sizeof(s), "%.4f (%.4f)", r->dev_total, r->ms);
                else if (r)
                    snprintf(s, sizeof(s), "(%.4f)", r->ms);
                if (md)
                    fprintf(f, " %s |", s);
                else
                    fprintf(f, " %17s", s);
            }
            fprintf(f, "\n");
        }
}

static void print_details(FILE *f, const Bench *b, int md) {
    if (md)
        fprintf(f,
                "\n## All configurations\n\n| workload | dir | impl | variant | runs | e2e ms "
                "(min) | GPU overall | H2D ms | kernel ms | D2H ms | H2D MB | D2H MB | H2D "
                "GB/s (%% PCIe) | D2H GB/s (%% PCIe) | kernel GB/s (%% HBM) | launches | "
                "checked | mismatches |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
                "---:|---:|---:|---:|---:|---:|---|\n");
    else
        fprintf(f,
                "\nall configurations:\n%-14s %-4s %-11s %-10s %4s %19s %9s %8s %9s %8s %8s "
                "%8s %13s %13s %15s %5s %s\n",
                "workload", "dir", "impl", "variant", "runs", "e2e ms (min)", "overall", "H2D",
                "kernel", "D2H", "H2D MB", "D2H MB", "H2D GB/s(%)", "D2H GB/s(%)",
                "kern GB/s(%HBM)", "chk", "mismatches");
    for (int i = 0; i < b->nres; i++) {
        const Result *r = &b->res[i];
        char im[32], va[32], mism[96];
        impl_label(b, r->impl, im, sizeof(im));
        bhevc_variant(r, va, sizeof(va));
        if (!r->done) {
            if (md)
                fprintf(f, "| %s | %s | %s | %s | failed: %s |||||||||||||\n",
                        b->spec[r->wl].name, dir_names[r->dir], im, va, r->err);
            else
                fprintf(f, "%-14s %-4s %-11s %-10s failed: %s\n", b->spec[r->wl].name,
                        dir_names[r->dir], im, va, r->err);
            continue;
        }
        if (r->impl == IM_C)
            snprintf(mism, sizeof(mism), "reference");
        else if (!r->mism_coefs && !r->mism_tbs)
            snprintf(mism, sizeof(mism), "0");
        else
            snprintf(mism, sizeof(mism), "%llu values in %u TBs (max |diff| %d)%s",
                     (unsigned long long)r->mism_coefs, r->mism_tbs, r->max_diff,
                     r->mismatch ? " MISMATCH" : "");
        char e2e[48], ov[24] = "-", h2[24] = "-", ke[24] = "-", d2[24] = "-", hb[24] = "-",
                      db[24] = "-", hg[32] = "-", dg[32] = "-", kg[32] = "-", la[16] = "-";
        snprintf(e2e, sizeof(e2e), "%.4f (%.4f)", r->ms, r->ms_min);
        if (r->has_dev) {
            snprintf(ov, sizeof(ov), "%.4f", r->dev_total);
            snprintf(h2, sizeof(h2), "%.4f", r->h2d);
            snprintf(ke, sizeof(ke), "%.4f", r->has_kernel_only ? r->kernel_only : r->kernel);
            snprintf(d2, sizeof(d2), "%.4f", r->d2h);
            snprintf(hb, sizeof(hb), "%.2f", r->h2d_bytes / 1e6);
            snprintf(db, sizeof(db), "%.2f", r->d2h_bytes / 1e6);
            const double g1 = gbps((double)r->h2d_bytes, r->h2d),
                         g2 = gbps((double)r->d2h_bytes, r->d2h);
            snprintf(hg, sizeof(hg), "%.1f (%.0f)", g1, 100 * g1 * 1e9 / b->pcie_bps);
            snprintf(dg, sizeof(dg), "%.1f (%.0f)", g2, 100 * g2 * 1e9 / b->pcie_bps);
            const double kms = r->has_kernel_only ? r->kernel_only : r->kernel;
            snprintf(kg, sizeof(kg), "%.0f (%.1f)", gbps(r->kernel_bytes, kms),
                     100 * hbm_ratio(b, r));
        }
        if (r->launches) snprintf(la, sizeof(la), "%d", r->launches);
        if (md)
            fprintf(
                f,
                "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
                "%s | %d | %s |\n",
                b->spec[r->wl].name, dir_names[r->dir], im, va, r->runs, e2e, ov, h2, ke, d2,
                hb, db, hg, dg, kg, la, r->checked, mism);
        else
            fprintf(f,
                    "%-14s %-4s %-11s %-10s %4d %19s %9s %8s %9s %8s %8s %8s %13s %13s %15s "
                    "%5d %s\n",
                    b->spec[r->wl].name, dir_names[r->dir], im, va, r->runs, e2e, ov, h2, ke,
                    d2, hb, db, hg, dg, kg, r->checked, mism);
    }
}

static void print_targets(FILE *f, const Bench *b, int md) {
    Target t[16];
    const int n = make_targets(b, t);
    if (md)
        fprintf(f,
                "\n## Targets of issue 4\n\n| target | measured | status |\n|---|---|---|\n");
    else
        fprintf(f, "\ntargets of issue 4:\n");
    for (int i = 0; i < n; i++)
        bench_row(f, md, "  %-70s %-24s %s\n", t[i].what, t[i].value, t[i].status);
}

static void print_header(FILE *f, const Bench *b, int md) {
    bench_print_header(f, &b->mt, "hevc", "hevc", "", md);
    if (b->have_meas)
        fprintf(
            f,
            "%seasured%s: device-to-device copy %.0f GB/s, pinned H2D %.1f GB/s, pinned D2H "
            "%.1f GB/s\n",
            md ? "- M" : "m", md ? " this run" : "", b->meas_d2d / 1e9, b->meas_h2d / 1e9,
            b->meas_d2h / 1e9);
    bench_notes_print(f, &b->notes, md ? "- Note: " : "note: ");
    if (md) print_legend(f, b, 1);
}

/* The report as text (md 0: the legend and the targets last) or Markdown (md 1: the
 * targets before the details, no legend). */
void bhevc_write_text(FILE *f, const Bench *b, int md) {
    print_header(f, b, md);
    print_workloads(f, b, md);
    print_table1(f, b, md);
    print_pinned(f, b, md);
    print_sweep(f, b, md);
    if (md) print_targets(f, b, 1);
    print_details(f, b, md);
    if (md) return;
    fprintf(f, "\n");
    print_legend(f, b, 0);
    print_targets(f, b, 0);
}

/* ------------------------------------------------------------------ CSV, JSON */

/* Which Table 1 cells a result provides: bit 0 the overall / CPU value, bit 1 the kernel. */
static int t1_role(const Bench *b, const Result *r) {
    int role = 0;
    for (int c = 0; c < T1_COLS; c++) {
        const Result *src = NULL;
        table1(b, r->wl, r->dir, c, &src);
        if (src == r) role |= c == 4 || c == 6 ? 2 : 1;
    }
    return role;
}

static void write_csv(FILE *f, const Bench *b) {
    fprintf(f,
            "workload,width,height,chroma,dist,source,frames,direction,impl,variant,tc,streams,"
            "sweep,threads,runs,ms_median,ms_min,device_total_ms,h2d_ms,kernel_ms,d2h_ms,"
            "kernel_only_ms,h2d_bytes,d2h_bytes,kernel_bytes,h2d_gbps,d2h_gbps,kernel_gbps,"
            "hbm_ratio,pcie_h2d_ratio,pcie_d2h_ratio,launches,checked_frames,mismatch_values,"
            "mismatch_tbs,max_abs_diff,mismatch,table1_overall,table1_kernel,error\n");
    for (int i = 0; i < b->nres; i++) {
        const Result *r = &b->res[i];
        const WlInfo *in = &b->info[r->wl];
        char va[32];
        bhevc_variant(r, va, sizeof(va));
        fprintf(f, "%s,%d,%d,%s,%s,%s,%d,%s,%s,%s,%s,%d,%d,%d,", in->spec.name, in->spec.w,
                in->spec.h, chroma_name(in->spec.chroma), hw_dist_name(in->spec.dist), in->kind,
                in->frames, dir_names[r->dir], im_names[r->impl], va,
                r->tc < 0 ? ""
                : r->tc   ? "on"
                          : "off",
                r->streams, r->sweep,
                b->ctx[IM_THREADS] && r->impl == IM_THREADS
                    ? vidk_get_threads(b->ctx[IM_THREADS])
                    : 1);
        if (!r->done) {
            char e[200];
            snprintf(e, sizeof(e), "%s", r->err);
            for (char *p = e; *p; p++)
                if (*p == ',' || *p == '"' || *p == '\n') *p = ' ';
            fprintf(f, ",,,,,,,,,,,,,,,,,,,,,,,0,0,%s\n", e);
            continue;
        }
        fprintf(f, "%d,%.6f,%.6f,", r->runs, r->ms, r->ms_min);
        if (r->has_dev) {
            const double kms = r->has_kernel_only ? r->kernel_only : r->kernel;
            fprintf(f, "%.6f,%.6f,%.6f,%.6f,", r->dev_total, r->h2d, r->kernel, r->d2h);
            if (r->has_kernel_only)
                fprintf(f, "%.6f,", r->kernel_only);
            else
                fprintf(f, ",");
            fprintf(f, "%zu,%zu,%.0f,%.4f,%.4f,%.4f,%.5f,%.5f,%.5f,", r->h2d_bytes,
                    r->d2h_bytes, r->kernel_bytes, gbps((double)r->h2d_bytes, r->h2d),
                    gbps((double)r->d2h_bytes, r->d2h), gbps(r->kernel_bytes, kms),
                    hbm_ratio(b, r), gbps((double)r->h2d_bytes, r->h2d) * 1e9 / b->pcie_bps,
                    gbps((double)r->d2h_bytes, r->d2h) * 1e9 / b->pcie_bps);
        } else {
            fprintf(f, ",,,,,,,%.0f,,,,,,,", r->kernel_bytes);
        }
        const int role = t1_role(b, r);
        fprintf(f, "%d,%d,%llu,%u,%d,%d,%d,%d,\n", r->launches, r->checked,
                (unsigned long long)r->mism_coefs, r->mism_tbs, r->max_diff, r->mismatch,
                role & 1, (role >> 1) & 1);
    }
}

static void json_num(FILE *f, const char *key, double v) {
    if (v < 0 || !isfinite(v))
        fprintf(f, ", \"%s\": null", key);
    else
        fprintf(f, ", \"%s\": %.6g", key, v);
}

static void write_json(FILE *f, const Bench *b) {
    const Meta *mt = &b->mt;
    fprintf(f,
            "{\n  \"benchmark\": \"hevc\",\n  \"vidkern_version\": %s,\n  \"commit\": %s,\n  "
            "\"date\": %s,\n  \"command\": %s,\n  \"device\": {\"cpu\": %s, \"cores\": %d, "
            "\"threads\": %d, \"gpu\": %s},\n  \"ceilings\": {\"hbm_bytes_per_s\": %.4g, "
            "\"hbm_from\": ",
            bench_jq(vidk_version()), bench_jq(VIDK_GIT_COMMIT), bench_jq(mt->date),
            bench_jq(mt->command), bench_jq(mt->cpu), mt->cores,
            b->ctx[IM_THREADS] ? vidk_get_threads(b->ctx[IM_THREADS]) : 0, bench_jq(mt->gpu),
            b->hbm_bps);
    fprintf(f, "%s, \"pcie_bytes_per_s\": %.4g", bench_jq(b->hbm_from), b->pcie_bps);
    if (b->have_meas)
        fprintf(f,
                ", \"measured_d2d_bytes_per_s\": %.4g, \"measured_h2d_bytes_per_s\": %.4g, "
                "\"measured_d2h_bytes_per_s\": %.4g",
                b->meas_d2d, b->meas_h2d, b->meas_d2h);
    fprintf(f, "},\n  \"qp\": %d,\n  \"notes\": [", b->qp);
    bench_notes_json(f, &b->notes);
    fprintf(f, "],\n  \"workloads\": [");
    for (int i = 0; i < b->nwl; i++) {
        const WlInfo *in = &b->info[i];
        fprintf(f, "%s\n    {\"name\": %s", i ? "," : "", bench_jq(in->spec.name));
        fprintf(f,
                ", \"width\": %d, \"height\": %d, \"chroma\": \"%s\", \"dist\": \"%s\", "
                "\"built\": %s",
                in->spec.w, in->spec.h, chroma_name(in->spec.chroma),
                hw_dist_name(in->spec.dist), in->built ? "true" : "false");
        if (!in->built) {
            fprintf(f, ", \"error\": %s}", bench_jq(in->err));
            continue;
        }
        fprintf(f, ", \"source_kind\": \"%s\", \"source\": %s", in->kind, bench_jq(in->source));
        fprintf(f,
                ", \"frames\": %d, \"intra_frames\": %d, \"samples_per_frame\": %.0f, "
                "\"mean_abs_residual\": %.4f, \"build_s\": %.3f, \"tbs_per_frame\": [%.1f, "
                "%.1f, %.1f, %.1f], \"area_share\": [%.4f, %.4f, %.4f, %.4f], "
                "\"nonzero_share\": [%.4f, %.4f, %.4f, %.4f]}",
                in->frames, in->intra_frames, in->samples, in->mean_abs, in->build_s,
                in->tbs[0], in->tbs[1], in->tbs[2], in->tbs[3], in->area[0], in->area[1],
                in->area[2], in->area[3], in->nz[0], in->nz[1], in->nz[2], in->nz[3]);
    }
    fprintf(f, "\n  ],\n  \"results\": [");
    for (int i = 0; i < b->nres; i++) {
        const Result *r = &b->res[i];
        char va[32];
        fprintf(f, "%s\n    {\"workload\": %s", i ? "," : "", bench_jq(b->spec[r->wl].name));
        fprintf(
            f,
            ", \"direction\": \"%s\", \"impl\": \"%s\", \"variant\": \"%s\", \"streams\": %d, "
            "\"sweep\": %s",
            dir_names[r->dir], im_names[r->impl], bhevc_variant(r, va, sizeof(va)), r->streams,
            r->sweep ? "true" : "false");
        if (!r->done) {
            fprintf(f, ", \"error\": %s}", bench_jq(r->err));
            continue;
        }
        fprintf(f, ", \"runs\": %d, \"ms_median\": %.6g, \"ms_min\": %.6g", r->runs, r->ms,
                r->ms_min);
        if (r->has_dev) {
            fprintf(f,
                    ", \"device\": {\"total_ms\": %.6g, \"h2d_ms\": %.6g, \"kernel_ms\": %.6g, "
                    "\"d2h_ms\": %.6g, \"h2d_bytes\": %zu, \"d2h_bytes\": %zu",
                    r->dev_total, r->h2d, r->kernel, r->d2h, r->h2d_bytes, r->d2h_bytes);
            if (r->has_kernel_only) fprintf(f, ", \"kernel_only_ms\": %.6g", r->kernel_only);
            json_num(f, "hbm_ratio", hbm_ratio(b, r));
            fprintf(f, "}");
        }
        if (r->has_direct)
            fprintf(f, ", \"direct_h2d_bytes\": %zu, \"direct_d2h_bytes\": %zu", r->direct_h2d,
                    r->direct_d2h);
        fprintf(f,
                ", \"kernel_bytes\": %.0f, \"launches\": %d, \"checked_frames\": %d, "
                "\"mismatch_values\": %llu, \"mismatch_tbs\": %u, \"max_abs_diff\": %d, "
                "\"mismatch\": %s}",
                r->kernel_bytes, r->launches, r->checked, (unsigned long long)r->mism_coefs,
                r->mism_tbs, r->max_diff, r->mismatch ? "true" : "false");
    }
    fprintf(f, "\n  ],\n  \"table1\": [");
    static const char *const keys[T1_COLS] = {"cpu_c",        "cpu_simd",   "cpu_threads",
                                              "gpu_overall",  "gpu_kernel", "cublas_overall",
                                              "cublas_kernel"};
    int first = 1;
    for (int i = 0; i < b->nwl; i++)
        for (int d = 0; d < 2; d++) {
            if (!b->info[i].built || !b->dir_on[d]) continue;
            fprintf(f, "%s\n    {\"workload\": ", first ? "" : ",");
            first = 0;
            fprintf(f, "%s, \"direction\": \"%s\"", bench_jq(b->spec[i].name), dir_names[d]);
            for (int c = 0; c < T1_COLS; c++)
                json_num(f, keys[c], table1(b, i, d, c, NULL));
            fprintf(f, "}");
        }
    fprintf(f, "\n  ],\n  \"pinned\": [");
    first = 1;
    for (int i = 0; i < b->nwl; i++)
        for (int d = 0; d < 2; d++) {
            const Result *p = find(b, i, d, IM_CUDA, VAR_PINNED, 0);
            if (!b->info[i].built || !b->dir_on[d] || !p) continue;
            fprintf(f, "%s\n    {\"workload\": ", first ? "" : ",");
            first = 0;
            fprintf(f, "%s, \"direction\": \"%s\"", bench_jq(b->spec[i].name), dir_names[d]);
            json_num(f, "gpu_overall", p->has_dev ? p->dev_total : -1);
            json_num(f, "gpu_kernel", p->has_kernel_only ? p->kernel_only : -1);
            json_num(f, "e2e", p->ms);
            char dm[32];
            fprintf(f,
                    ", \"direct_h2d_bytes\": %zu, \"direct_d2h_bytes\": %zu, \"download\": %s, "
                    "\"dense_classes\": %u, \"compact_classes\": %u, \"round_trips\": %d}",
                    p->direct_h2d, p->direct_d2h, bench_jq(download_mode(p, dm, sizeof(dm))),
                    p->dense_classes, p->compact_classes, p->round_trips);
        }
    fprintf(f,
            "\n  ],\n  \"paper_table1\": {\"4x4\": [%.2f, %.2f, %.2f, %.2f, %.2f], \"32x32\": "
            "[%.2f, %.2f, %.2f, %.2f, %.2f], \"columns\": [\"cpu\", \"gpu_overall\", "
            "\"gpu_kernel\", \"cublas_overall\", \"cublas_kernel\"]},\n  \"targets\": [",
            paper_t1[0][0], paper_t1[0][1], paper_t1[0][2], paper_t1[0][3], paper_t1[0][4],
            paper_t1[1][0], paper_t1[1][1], paper_t1[1][2], paper_t1[1][3], paper_t1[1][4]);
    Target t[16];
    const int n = make_targets(b, t);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\n    {\"target\": %s, \"measured\": %s, \"status\": %s}", i ? "," : "",
                bench_jq(t[i].what), bench_jq(t[i].value), bench_jq(t[i].status));
    }
    fprintf(f, "\n  ]\n}\n");
}

void bhevc_write_report(FILE *f, int what, void *arg) {
    const Bench *b = arg;
    if (what == BENCH_CSV)
        write_csv(f, b);
    else if (what == BENCH_JSON)
        write_json(f, b);
    else
        bhevc_write_text(f, b, 1);
}
