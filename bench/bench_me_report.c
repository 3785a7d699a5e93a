/* `vidkern-bench me` (bench_me.c), its report: the derived numbers, the table rows,
 * complexity and targets printed, and the report files (CSV, JSON, markdown). See
 * docs/ME.md ("Benchmark") for what every column means. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_me.h"
#include "bench_util.h"

/* VABSDIFF4 on sm_90: ~16 T instructions/s = 64 T byte absolute differences/s
 * (DESIGN.md, measured on the GPU machines here). */
#define CEIL_BYTE_AD_PER_S 64e12

/* ---- derived numbers -------------------------------------------------------------- */
static double cand_axis(int r) {
    return 2.0 * r + 1;
}

/* Byte absolute differences per frame: every sample of the padded macroblock grid
 * against every candidate (the 4x4-SAD base; larger shapes are sums of those). */
static double byte_ads(const BSource *s, int r) {
    return (double)((s->w + 15) / 16 * 16) * ((s->h + 15) / 16 * 16) * cand_axis(r) *
           cand_axis(r);
}

static double blocks_of(const BSource *s, unsigned shapes) {
    int gw, gh;
    const int bs = bme_smallest_shape(shapes);
    const int bw = vidk_block_width((VidkBlockSize)bs),
              bh = vidk_block_height((VidkBlockSize)bs);
    if (bw > 16) {
        gw = (s->w + bw - 1) / bw, gh = (s->h + bh - 1) / bh;
    } else {
        gw = (s->w + 15) / 16 * (16 / bw), gh = (s->h + 15) / 16 * (16 / bh);
    }
    return (double)gw * gh;
}

/* Speed-up of result x against backend `vs` of the same configuration; 0 if not run. */
static double speedup_of(Bench *b, int s, int m, int r, double ms, VidkBackend vs, int *est);
static double speedup(Bench *b, int s, int m, int r, int k, VidkBackend vs, int *est) {
    const BResult *x = bme_result(b, s, m, r, k);
    if (b->backends[k] == vs || !x->done) return 0;
    const double v = speedup_of(b, s, m, r, x->ms, vs, est);
    if (v > 0) *est |= x->est_rows != 0;
    return v;
}

void bme_fmt_time(char *buf, size_t n, const BResult *x) {
    if (!x->done) {
        snprintf(buf, n, "failed: %.60s", x->err);
        return;
    }
    const double ms = x->ms;
    const char *f = ms >= 100 ? "%.1f" : ms >= 1 ? "%.3f" : "%.4f";
    int o = snprintf(buf, n, f, ms);
    if (x->est_rows && o > 0 && (size_t)o < n)
        snprintf(buf + o, n - (size_t)o, " (est. from %d rows)", x->est_rows);
}

static void fmt_speedup(char *buf, size_t n, double v, int est) {
    if (v <= 0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n,
                 v >= 100    ? "%s%.0fx"
                 : v >= 0.95 ? "%s%.1fx"
                             : "%s%.2gx",
                 est ? "~" : "", v);
}

/* ---- device / command description ----------------------------------------------- */
/* Speed-up of a time `ms` of configuration (s, m, r) against backend `vs`; 0 if not run. */
static double speedup_of(Bench *b, int s, int m, int r, double ms, VidkBackend vs, int *est) {
    for (int j = 0; j < b->nbackends; j++) {
        if (b->backends[j] != vs) continue;
        const BResult *o = bme_result(b, s, m, r, j);
        if (!o->done || ms <= 0) return 0;
        *est = o->est_rows != 0;
        return o->ms / ms;
    }
    return 0;
}

/* The "cuda-seq" row (sequence mode) after a cuda row: human (md 0) or markdown (md 1). */
static void print_seq_row(FILE *f, Bench *b, int s, int m, int r, int k, int md) {
    const BResult *x = bme_result(b, s, m, r, k);
    const BSource *src = b->src[s];
    const int R = b->ranges[r];
    if (b->backends[k] != VIDK_BACKEND_CUDA || !x->seq_done) return;
    char tbuf[64], sp[3][16], size[24];
    const VidkBackend vs[3] = {VIDK_BACKEND_C, VIDK_BACKEND_SIMD, VIDK_BACKEND_THREADS};
    for (int j = 0; j < 3; j++) {
        int est = 0;
        const double v = speedup_of(b, s, m, r, x->seq_ms, vs[j], &est);
        fmt_speedup(sp[j], sizeof(sp[j]), v, est);
    }
    const double ms = x->seq_ms, t = ms * 1e-3;
    snprintf(tbuf, sizeof(tbuf), ms >= 100 ? "%.1f" : ms >= 1 ? "%.3f" : "%.4f", ms);
    snprintf(size, sizeof(size), "%dx%d", src->w, src->h);
    const double ads = byte_ads(src, R) / t;
    const double mc = blocks_of(src, b->modes[m]) * cand_axis(R) * cand_axis(R) / t / 1e6;
    bench_row(f, md,
              "%-17s %-9s %-6s %4d %5.0f %-11s %-26s %9.1f %9.1f %7.1f %8s %8s %9s %7.3f%s\n",
              src->label, size, b->mode_names[m], R, cand_axis(R), "cuda-seq", tbuf, mc,
              ads / 1e9, 100 * ads / CEIL_BYTE_AD_PER_S, sp[0], sp[1], sp[2], x->sad_px,
              !x->seq_mismatch ? ""
              : md             ? " MISMATCH"
                               : "  MISMATCH");
}

/* ---- outputs ---------------------------------------------------------------------- */
/* The cells a table row and a Markdown row share: time, speed-ups over c / simd /
 * threads (with their estimate flags), byte ADs per second and the share of the
 * VABSDIFF4 ceiling (cuda only). */
typedef struct RowCells {
    char t[96], sc[16], ss[16], st[16], ceil[16];
    double t_s, ads;
} RowCells;

static void row_cells(RowCells *c, Bench *b, int s, int m, int r, int k) {
    const BSource *src = b->src[s];
    const BResult *x = bme_result(b, s, m, r, k);
    bme_fmt_time(c->t, sizeof(c->t), x);
    int e1 = 0, e2 = 0, e3 = 0;
    /* speed-ups first: the estimate flags are set by speedup() */
    const double v1 = speedup(b, s, m, r, k, VIDK_BACKEND_C, &e1);
    const double v2 = speedup(b, s, m, r, k, VIDK_BACKEND_SIMD, &e2);
    const double v3 = speedup(b, s, m, r, k, VIDK_BACKEND_THREADS, &e3);
    fmt_speedup(c->sc, sizeof(c->sc), v1, e1);
    fmt_speedup(c->ss, sizeof(c->ss), v2, e2);
    fmt_speedup(c->st, sizeof(c->st), v3, e3);
    c->t_s = x->ms * 1e-3;
    c->ads = x->done ? byte_ads(src, b->ranges[r]) / c->t_s : 0;
    if (b->backends[k] == VIDK_BACKEND_CUDA && x->done)
        snprintf(c->ceil, sizeof(c->ceil), "%.1f", 100 * c->ads / CEIL_BYTE_AD_PER_S);
    else
        snprintf(c->ceil, sizeof(c->ceil), "-");
}

/* The rows of the main table (each cuda row followed by its cuda-seq row). */
void bme_print_rows(FILE *f, Bench *b, int md) {
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int r = 0; r < b->nranges; r++)
                for (int k = 0; k < b->nbackends; k++) {
                    const BSource *src = b->src[s];
                    const BResult *x = bme_result(b, s, m, r, k);
                    const int R = b->ranges[r];
                    char be[24], size[24];
                    RowCells c;
                    row_cells(&c, b, s, m, r, k);
                    snprintf(size, sizeof(size), "%dx%d", src->w, src->h);
                    bench_row(f, md,
                              "%-17s %-9s %-6s %4d %5.0f %-11s %-26s %9.1f %9.1f %7s %8s %8s "
                              "%9s %7.3f%s%s\n",
                              src->label, size, b->mode_names[m], R, cand_axis(R),
                              bench_backend_label(b->ctx, b->backends[k], be, sizeof(be)), c.t,
                              x->done ? blocks_of(src, b->modes[m]) * cand_axis(R) *
                                            cand_axis(R) / c.t_s / 1e6
                                      : 0,
                              c.ads / 1e9, c.ceil, c.sc, c.ss, c.st, x->sad_px,
                              x->stats_rows ? "*" : "",
                              !x->mismatch ? ""
                              : md         ? " MISMATCH"
                                           : "  MISMATCH");
                    print_seq_row(f, b, s, m, r, k, md);
                }
}

void bme_print_legend(FILE *f, int md) {
    fprintf(
        f,
        "%sms/frame: median over the runs after warm-up of one vidk_me_search call (one frame "
        "pair; for cuda including the host<->device copies: \"pair\" mode, both frames "
        "uploaded per call, the latency of one isolated pair).\n"
        "%scuda-seq: \"sequence\" mode, frames streamed (vidk_cuda_me_search_seq): the "
        "reference stays on the device as the previous call's frame and the next frame is "
        "uploaded while the current one is searched; ms/frame = median time per call at "
        "steady state = throughput per frame. vs X compares it with X's pair time.\n"
        "%s\"(est. from k rows)\": timed on a stripe of the k middle macroblock rows (a real "
        "sub-picture) and scaled by rows/k to the full picture: an estimate, not a full-frame "
        "measurement.\n"
        "%sarea: candidates per axis, 2R+1 (the paper's N x N search area for 4x4 blocks is "
        "N = 2R + 4). Mcand/s: blocks of the smallest shape x (2R+1)^2 / time. GbyteAD/s: "
        "(16-aligned width x height) x (2R+1)^2 byte absolute differences / time. ceil%%: "
        "that rate against the VABSDIFF4 ceiling of 64 T byte-ADs/s (cuda only).\n"
        "%svs X: time of backend X / this time, same configuration, same run; \"~\" marks "
        "ratios involving an estimate. SAD/px: mean SAD per pixel of the smallest shape, "
        "frame pair 0 (\"*\": from the stripe).\n",
        md ? "- " : "", md ? "- " : "", md ? "- " : "", md ? "- " : "", md ? "- " : "");
}

void bme_print_complexity(FILE *f, Bench *b, int md) {
    if (b->nranges < 2) return;
    if (md)
        fprintf(f,
                "\n## Complexity: time vs search area (O(n^2) model)\n\n"
                "| source | size | shapes | backend | R | t(R)/t(R0) | ((2R+1)/(2R0+1))^2 |\n"
                "|---|---|---|---|---:|---:|---:|\n");
    else
        fprintf(f,
                "\ncomplexity: t(R)/t(R0) against the O(n^2) prediction ((2R+1)/(2R0+1))^2\n"
                "%-17s %-9s %-6s %-11s %4s %12s %12s\n",
                "source", "size", "shapes", "backend", "R", "t(R)/t(R0)", "predicted");
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int k = 0; k < b->nbackends; k++) {
                const BResult *x0 = bme_result(b, s, m, 0, k);
                if (!x0->done) continue;
                char be[24], size[24];
                bench_backend_label(b->ctx, b->backends[k], be, sizeof(be));
                snprintf(size, sizeof(size), "%dx%d", b->src[s]->w, b->src[s]->h);
                for (int r = 0; r < b->nranges; r++) {
                    const BResult *x = bme_result(b, s, m, r, k);
                    if (!x->done) continue;
                    const double ratio = x->ms / x0->ms;
                    const double pred =
                        pow(cand_axis(b->ranges[r]) / cand_axis(b->ranges[0]), 2);
                    const int est = x->est_rows || x0->est_rows;
                    bench_row(f, md, "%-17s %-9s %-6s %-11s %4d %11s%.2f %12.2f\n",
                              b->src[s]->label, size, b->mode_names[m], be, b->ranges[r],
                              est ? "~" : "", ratio, pred);
                }
            }
}

static int find_idx(const Bench *b, int kind, int v) {
    /* kind 0: range index of R = v; 1: backend index */
    if (kind == 0) {
        for (int i = 0; i < b->nranges; i++)
            if (b->ranges[i] == v) return i;
    } else {
        for (int i = 0; i < b->nbackends; i++)
            if ((int)b->backends[i] == v) return i;
    }
    return -1;
}

static int find_mode(const Bench *b, unsigned shapes) {
    for (int i = 0; i < b->nmodes; i++)
        if (b->modes[i] == shapes) return i;
    return -1;
}

/* The issue's targets, with the measured value where this run has it. */
void bme_print_targets(FILE *f, Bench *b, int md) {
    typedef struct {
        const char *what;
        unsigned shapes;
        int range;
        VidkBackend be, vs;
        double limit; /* ms (vs = 0) or minimum speed-up */
    } Target;
    const Target t[] = {
        {"cuda, all 41 partitions, R=64, <= 3 ms", VIDK_ME_SHAPES_H264, 64, VIDK_BACKEND_CUDA,
         0, 3},
        {"cuda, 16x16 only, R=64, <= 1 ms", VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 64,
         VIDK_BACKEND_CUDA, 0, 1},
        {"cuda, 4x4 only, R=64, < 1.17 ms (NVOFA)", VIDK_ME_SHAPE(VIDK_BLOCK_4x4), 64,
         VIDK_BACKEND_CUDA, 0, 1.17},
        {"cuda vs c, h264, R=64, >= 1000x", VIDK_ME_SHAPES_H264, 64, VIDK_BACKEND_CUDA,
         VIDK_BACKEND_C, 1000},
        {"cuda vs threads, h264, R=64, >= 30x", VIDK_ME_SHAPES_H264, 64, VIDK_BACKEND_CUDA,
         VIDK_BACKEND_THREADS, 30},
        {"simd, 16x16 only, R=16, <= 1.5 x 34-50 ms (x264 sad_x4, one Zen 3 core)",
         VIDK_ME_SHAPE(VIDK_BLOCK_16x16), 16, VIDK_BACKEND_SIMD, 0, 75},
    };
    if (md)
        fprintf(f, "\n## Targets of issue 6 (1080p)\n\n| target | source | measured | met "
                   "|\n|---|---|---|---|\n");
    else
        fprintf(f, "\ntargets of issue 6 (1080p):\n");
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const int m = find_mode(b, t[i].shapes), r = find_idx(b, 0, t[i].range);
        const int k = find_idx(b, 1, t[i].be);
        int s = -1;
        for (int j = 0; j < b->nsrc && s < 0; j++)
            if (b->src[j]->w == 1920 && b->src[j]->h == 1080) s = j;
        char val[96] = "not run", met[16] = "-", srcl[64] = "-";
        if (m >= 0 && r >= 0 && k >= 0 && s >= 0 && bme_result(b, s, m, r, k)->done) {
            const BResult *x = bme_result(b, s, m, r, k);
            snprintf(srcl, sizeof(srcl), "%s", b->src[s]->label);
            /* cuda: the sequence mode (streamed frames) where measured, labelled so, with
             * the pair time beside it. */
            const int seq = t[i].be == VIDK_BACKEND_CUDA && x->seq_done;
            if (!t[i].vs) {
                if (seq) {
                    snprintf(val, sizeof(val), "%.3f ms sequence (pair %.3f)", x->seq_ms,
                             x->ms);
                    snprintf(met, sizeof(met), "%s", x->seq_ms <= t[i].limit ? "yes" : "no");
                } else {
                    bme_fmt_time(val, sizeof(val), x);
                    snprintf(val + strlen(val), sizeof(val) - strlen(val), " ms");
                    snprintf(met, sizeof(met), "%s%s", x->est_rows ? "~" : "",
                             x->ms <= t[i].limit ? "yes" : "no");
                }
            } else {
                int est = 0;
                const double sp = seq ? speedup_of(b, s, m, r, x->seq_ms, t[i].vs, &est)
                                      : speedup(b, s, m, r, k, t[i].vs, &est);
                if (sp > 0) {
                    fmt_speedup(val, sizeof(val), sp, est);
                    if (seq) {
                        int e2 = 0;
                        snprintf(val + strlen(val), sizeof(val) - strlen(val),
                                 " sequence (pair %.1fx)",
                                 speedup(b, s, m, r, k, t[i].vs, &e2));
                    }
                    snprintf(met, sizeof(met), "%s%s", est ? "~" : "",
                             sp >= t[i].limit ? "yes" : "no");
                }
            }
        }
        bench_row(f, md, "  %-72s %-16s %-40s %s\n", t[i].what, srcl, val, met);
    }
}

static void write_markdown(FILE *f, Bench *b) {
    bench_print_header(f, &b->mt, "me", "me", "", 1);
    bench_notes_print(f, &b->notes, "- Note: ");
    bme_print_legend(f, 1);
    fprintf(
        f, "\n## Time per frame\n\n"
           "| source | size | shapes | R | area | backend | ms/frame | Mcand/s | G byte-AD/s | "
           "%% of ceiling | vs c | vs simd | vs threads | SAD/px |\n"
           "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int any_cuda = 0;
    bme_print_rows(f, b, 1);
    for (int i = 0; i < b->nsrc * b->nmodes * b->nranges * b->nbackends; i++)
        any_cuda |= b->res[i].has_cuda;
    if (any_cuda) {
        fprintf(
            f, "\n## CUDA stages (medians, device events)\n\n"
               "| source | size | shapes | R | kernel ms | H2D ms | D2H ms | device total ms | "
               "H2D MB | D2H MB | end-to-end ms | ceiling ms (byte-ADs / 64 T/s) |\n"
               "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int s = 0; s < b->nsrc; s++)
            for (int m = 0; m < b->nmodes; m++)
                for (int r = 0; r < b->nranges; r++)
                    for (int k = 0; k < b->nbackends; k++) {
                        const BResult *x = bme_result(b, s, m, r, k);
                        /* the pair row, then the sequence row where measured */
                        for (int q = 0; x->has_cuda && q <= x->seq_done; q++) {
                            const VidkCudaTiming *ct = q ? &x->seq_cuda : &x->cuda;
                            fprintf(
                                f,
                                "| %s | %dx%d | %s%s | %d | %.4f | %.4f | %.4f | %.4f | "
                                "%.2f | %.2f | %.4f | %.4f |\n",
                                b->src[s]->label, b->src[s]->w, b->src[s]->h, b->mode_names[m],
                                q ? " (sequence)" : "", b->ranges[r], ct->kernel_ms, ct->h2d_ms,
                                ct->d2h_ms, ct->total_ms, ct->h2d_bytes / 1e6,
                                ct->d2h_bytes / 1e6, q ? x->seq_ms : x->ms,
                                1e3 * byte_ads(b->src[s], b->ranges[r]) / CEIL_BYTE_AD_PER_S);
                        }
                    }
    }
    bme_print_complexity(f, b, 1);
    bme_print_targets(f, b, 1);
}

static void write_csv(FILE *f, Bench *b) {
    fprintf(f,
            "source,kind,width,height,shapes,range,area,backend,threads,ms_per_frame,"
            "estimated_rows,total_rows,runs,candidates_per_s,byte_ads_per_frame,byte_ads_per_s,"
            "vabsdiff4_ops_per_frame,ceiling_ratio,speedup_vs_c,speedup_vs_simd,"
            "speedup_vs_threads,speedup_estimated,mean_sad_per_pixel,zero_mv_share,stats_rows,"
            "mismatch,cuda_kernel_ms,cuda_h2d_ms,cuda_d2h_ms,cuda_total_ms,cuda_h2d_bytes,"
            "cuda_d2h_bytes,cuda_seq_ms_per_frame,cuda_seq_kernel_ms,cuda_seq_h2d_bytes,"
            "cuda_seq_ceiling_ratio,cuda_seq_speedup_vs_threads,cuda_seq_mismatch,error\n");
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int r = 0; r < b->nranges; r++)
                for (int k = 0; k < b->nbackends; k++) {
                    const BSource *src = b->src[s];
                    const BResult *x = bme_result(b, s, m, r, k);
                    const int R = b->ranges[r];
                    const VidkBackend be = b->backends[k];
                    const double t = x->ms * 1e-3;
                    int e1 = 0, e2 = 0, e3 = 0;
                    const double s1 = speedup(b, s, m, r, k, VIDK_BACKEND_C, &e1);
                    const double s2 = speedup(b, s, m, r, k, VIDK_BACKEND_SIMD, &e2);
                    const double s3 = speedup(b, s, m, r, k, VIDK_BACKEND_THREADS, &e3);
                    const double ads = byte_ads(src, R);
                    fprintf(f, "%s,%s,%d,%d,%s,%d,%.0f,%s,%d,", src->label, src->kind, src->w,
                            src->h, b->mode_names[m], R, cand_axis(R), vidk_backend_name(be),
                            b->ctx[be] ? vidk_get_threads(b->ctx[be]) : 0);
                    if (x->done)
                        fprintf(f, "%.6f,%d,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,", x->ms,
                                x->est_rows, (src->h + 15) / 16, x->runs,
                                blocks_of(src, b->modes[m]) * cand_axis(R) * cand_axis(R) / t,
                                ads, ads / t, ads / 4,
                                be == VIDK_BACKEND_CUDA ? ads / t / CEIL_BYTE_AD_PER_S : 0);
                    else
                        fprintf(f, ",,%d,,,%.6g,,%.6g,,", (src->h + 15) / 16, ads, ads / 4);
                    fprintf(f, "%.6g,%.6g,%.6g,%d,%.4f,%.4f,%d,%d,", s1, s2, s3, e1 || e2 || e3,
                            x->sad_px, x->zero, x->stats_rows, x->mismatch);
                    if (x->has_cuda)
                        fprintf(f, "%.5f,%.5f,%.5f,%.5f,%zu,%zu,", x->cuda.kernel_ms,
                                x->cuda.h2d_ms, x->cuda.d2h_ms, x->cuda.total_ms,
                                x->cuda.h2d_bytes, x->cuda.d2h_bytes);
                    else
                        fprintf(f, ",,,,,,");
                    if (x->seq_done) {
                        int est = 0;
                        fprintf(f, "%.6f,%.5f,%zu,%.6g,%.6g,%d,", x->seq_ms,
                                x->seq_cuda.kernel_ms, x->seq_cuda.h2d_bytes,
                                ads / (x->seq_ms * 1e-3) / CEIL_BYTE_AD_PER_S,
                                speedup_of(b, s, m, r, x->seq_ms, VIDK_BACKEND_THREADS, &est),
                                x->seq_mismatch);
                    } else {
                        fprintf(f, ",,,,,,");
                    }
                    fprintf(f, "%s\n", x->done ? "" : x->err);
                }
}

static void write_json(FILE *f, Bench *b) {
    const BenchMeta *mt = &b->mt;
    VidkContext *thr = b->ctx[VIDK_BACKEND_THREADS];
    fprintf(
        f,
        "{\n  \"benchmark\": \"me\",\n  \"vidkern_version\": \"%s\",\n  \"commit\": %s,\n  "
        "\"date\": \"%s\",\n  \"command\": %s,\n  \"device\": {\"cpu\": %s, \"cores\": %d, "
        "\"threads\": %d, \"gpu\": %s},\n  \"ceiling_byte_ads_per_s\": %.3g,\n  \"notes\": [",
        vidk_version(), bench_jq(VIDK_GIT_COMMIT), mt->date, bench_jq(mt->command),
        bench_jq(mt->cpu), mt->cores, thr ? vidk_get_threads(thr) : 0, bench_jq(mt->gpu),
        CEIL_BYTE_AD_PER_S);
    bench_notes_json(f, &b->notes);
    fprintf(f, "],\n  \"results\": [");
    int first = 1;
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int r = 0; r < b->nranges; r++)
                for (int k = 0; k < b->nbackends; k++) {
                    const BSource *src = b->src[s];
                    const BResult *x = bme_result(b, s, m, r, k);
                    const int R = b->ranges[r];
                    const VidkBackend be = b->backends[k];
                    const double ads = byte_ads(src, R);
                    fprintf(f, "%s\n    {\"source\": %s", first ? "" : ",",
                            bench_jq(src->label));
                    first = 0;
                    fprintf(
                        f,
                        ", \"kind\": \"%s\", \"width\": %d, \"height\": %d, \"shapes\": "
                        "\"%s\", "
                        "\"range\": %d, \"area\": %.0f, \"backend\": \"%s\", \"threads\": %d, "
                        "\"byte_ads_per_frame\": %.6g, \"vabsdiff4_ops_per_frame\": %.6g",
                        src->kind, src->w, src->h, b->mode_names[m], R, cand_axis(R),
                        vidk_backend_name(be), b->ctx[be] ? vidk_get_threads(b->ctx[be]) : 0,
                        ads, ads / 4);
                    if (!x->done) {
                        fprintf(f, ", \"error\": %s", bench_jq(x->err));
                        fputc('}', f);
                        continue;
                    }
                    const double t = x->ms * 1e-3;
                    fprintf(
                        f,
                        ", \"ms_per_frame\": %.6f, \"estimated_rows\": %d, \"total_rows\": %d, "
                        "\"runs\": %d, \"candidates_per_s\": %.6g, \"byte_ads_per_s\": %.6g",
                        x->ms, x->est_rows, (src->h + 15) / 16, x->runs,
                        blocks_of(src, b->modes[m]) * cand_axis(R) * cand_axis(R) / t, ads / t);
                    if (be == VIDK_BACKEND_CUDA)
                        fprintf(f, ", \"ceiling_ratio\": %.6g", ads / t / CEIL_BYTE_AD_PER_S);
                    const VidkBackend vs[3] = {VIDK_BACKEND_C, VIDK_BACKEND_SIMD,
                                               VIDK_BACKEND_THREADS};
                    for (int j = 0; j < 3; j++) {
                        int est = 0;
                        const double sp = speedup(b, s, m, r, k, vs[j], &est);
                        if (sp > 0)
                            fprintf(
                                f, ", \"speedup_vs_%s\": %.6g, \"speedup_vs_%s_estimated\": %s",
                                vidk_backend_name(vs[j]), sp, vidk_backend_name(vs[j]),
                                est ? "true" : "false");
                    }
                    fprintf(f,
                            ", \"mean_sad_per_pixel\": %.5f, \"zero_mv_share\": %.5f, "
                            "\"stats_rows\": %d, \"mismatch\": %s",
                            x->sad_px, x->zero, x->stats_rows, x->mismatch ? "true" : "false");
                    if (x->has_cuda)
                        fprintf(f,
                                ", \"cuda\": {\"kernel_ms\": %.5f, \"h2d_ms\": %.5f, "
                                "\"d2h_ms\": %.5f, "
                                "\"total_ms\": %.5f, \"h2d_bytes\": %zu, \"d2h_bytes\": %zu}",
                                x->cuda.kernel_ms, x->cuda.h2d_ms, x->cuda.d2h_ms,
                                x->cuda.total_ms, x->cuda.h2d_bytes, x->cuda.d2h_bytes);
                    if (x->seq_done)
                        fprintf(
                            f,
                            ", \"cuda_sequence\": {\"ms_per_frame\": %.6f, \"runs\": %d, "
                            "\"ceiling_ratio\": %.6g, \"kernel_ms\": %.5f, \"h2d_ms\": %.5f, "
                            "\"d2h_ms\": %.5f, \"total_ms\": %.5f, \"h2d_bytes\": %zu, "
                            "\"d2h_bytes\": %zu, \"mismatch\": %s}",
                            x->seq_ms, x->seq_runs,
                            ads / (x->seq_ms * 1e-3) / CEIL_BYTE_AD_PER_S,
                            x->seq_cuda.kernel_ms, x->seq_cuda.h2d_ms, x->seq_cuda.d2h_ms,
                            x->seq_cuda.total_ms, x->seq_cuda.h2d_bytes, x->seq_cuda.d2h_bytes,
                            x->seq_mismatch ? "true" : "false");
                    fputc('}', f);
                }
    fprintf(f, "\n  ],\n  \"complexity\": [");
    first = 1;
    for (int s = 0; s < b->nsrc; s++)
        for (int m = 0; m < b->nmodes; m++)
            for (int k = 0; k < b->nbackends; k++) {
                const BResult *x0 = bme_result(b, s, m, 0, k);
                if (!x0->done || b->nranges < 2) continue;
                fprintf(f, "%s\n    {\"source\": %s", first ? "" : ",",
                        bench_jq(b->src[s]->label));
                first = 0;
                fprintf(
                    f,
                    ", \"width\": %d, \"height\": %d, \"shapes\": \"%s\", \"backend\": \"%s\", "
                    "\"r0\": %d, \"points\": [",
                    b->src[s]->w, b->src[s]->h, b->mode_names[m],
                    vidk_backend_name(b->backends[k]), b->ranges[0]);
                int fp = 1;
                for (int r = 0; r < b->nranges; r++) {
                    const BResult *x = bme_result(b, s, m, r, k);
                    if (!x->done) continue;
                    fprintf(f,
                            "%s{\"range\": %d, \"ratio\": %.5g, \"predicted\": %.5g, "
                            "\"estimated\": %s}",
                            fp ? "" : ", ", b->ranges[r], x->ms / x0->ms,
                            pow(cand_axis(b->ranges[r]) / cand_axis(b->ranges[0]), 2),
                            x->est_rows || x0->est_rows ? "true" : "false");
                    fp = 0;
                }
                fprintf(f, "]}");
            }
    fprintf(f, "\n  ]\n}\n");
}

void bme_write_report(FILE *f, int what, void *arg) {
    Bench *b = arg;
    if (what == BENCH_CSV)
        write_csv(f, b);
    else if (what == BENCH_JSON)
        write_json(f, b);
    else
        write_markdown(f, b);
}
