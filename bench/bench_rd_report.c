/* `vidkern-bench rd` (bench_rd.c), its report: the BD-rate of every source and their
 * means, the text / Markdown tables of every point and the JSON / CSV files. See
 * docs/BENCH_RD.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bdrate.h"
#include "bench_rd.h"
#include "bench_util.h"

/* ---- BD-rate ------------------------------------------------------------------------- */
void brd_compute_bd(const Rd *b, RdSource *s) {
    for (int r = 0; r < b->nranges; r++)
        for (int p = 0; p < b->npresets; p++) {
            double rr[MAX_LIST], pr[MAX_LIST], rt[MAX_LIST], ptt[MAX_LIST];
            double prc[MAX_LIST], ptc[MAX_LIST];
            int ok = b->use_x264;
            for (int q = 0; q < b->nqps; q++) {
                const RdPoint *x = &s->x[p][q], *v = &s->vk[r][q];
                ok &= x->done && v->done;
                rr[q] = x->kbits, pr[q] = x->psnr[0], rt[q] = v->kbits, ptt[q] = v->psnr[0];
                prc[q] = x->psnr_yuv, ptc[q] = v->psnr_yuv;
            }
            s->bd[r][p] = s->bdc[r][p] = NAN;
            if (ok) bd_rate(rr, pr, b->nqps, rt, ptt, b->nqps, &s->bd[r][p]);
            if (ok) bd_rate(rr, prc, b->nqps, rt, ptc, b->nqps, &s->bdc[r][p]);
        }
}

static int range_estimated(const Rd *b, const RdSource *s, int r) {
    int e = 0;
    for (int q = 0; q < b->nqps; q++)
        e |= s->vk[r][q].estimate;
    return e;
}

int brd_any_estimated(const Rd *b) {
    int e = 0;
    for (int i = 0; i < b->nsrc; i++)
        for (int r = 0; r < b->nranges; r++)
            e |= range_estimated(b, &b->src[i], r);
    return e;
}

/* Mean BD-rate over the sources where it exists (yuv: on PSNR-YUV); *n of them. */
static double mean_bd(const Rd *b, int r, int p, int yuv, int *n) {
    double sum = 0;
    *n = 0;
    for (int i = 0; i < b->nsrc; i++) {
        const double v = yuv ? b->src[i].bdc[r][p] : b->src[i].bd[r][p];
        if (!isnan(v)) sum += v, (*n)++;
    }
    return *n ? sum / *n : NAN;
}

/* Mean frames/s of an encoder's points of one source (0 when none ran). */
static double mean_fps(const Rd *b, const RdPoint *row) {
    double sum = 0;
    int n = 0;
    for (int q = 0; q < b->nqps; q++)
        if (row[q].done) sum += row[q].fps, n++;
    return n ? sum / n : 0;
}

/* ---- text / markdown ------------------------------------------------------------------ */
static void fmt_bd(char *buf, size_t n, double v) {
    if (isnan(v))
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "%+.2f%%", v);
}

static void source_desc(const RdSource *s, char *buf, size_t n) {
    if (!strcmp(s->kind, "clip") && s->read < s->frames)
        snprintf(buf, n,
                 "%dx%d, %d frames (%d read, played forwards then backwards), %d/%d fps", s->w,
                 s->h, s->frames, s->read, s->fps_num, s->fps_den);
    else
        snprintf(buf, n, "%dx%d, %d frames, %d/%d fps", s->w, s->h, s->frames, s->fps_num,
                 s->fps_den);
}

static void print_point(FILE *f, int md, const char *label, int qp, const RdPoint *x) {
    if (!x->done) {
        char fail[sizeof(x->err) + 8];
        snprintf(fail, sizeof(fail), "failed: %s", x->err);
        bench_row(f, md, "%-16s %3d %s\n", label, qp, fail);
        return;
    }
    char kb[32];
    snprintf(kb, sizeof(kb), "%.3f%s", x->kbits, x->estimate ? "*" : "");
    bench_row(f, md, "%-16s %3d %11s %8.3f %8.3f %10.1f %5d %5d\n", label, qp, kb, x->psnr[0],
              x->psnr_yuv, x->fps, x->intra, x->bfr);
}

static void print_bd_table(FILE *f, const Rd *b, int md, const char *metric,
                           const double (*bd)[MAX_PRESETS], const int (*cnt)[MAX_PRESETS],
                           int (*est)(const Rd *, int, void *), void *arg) {
    char head[48];
    snprintf(head, sizeof(head), "BD-rate (%s) against x264:", metric);
    if (md) {
        fprintf(f, "| BD-rate (%s) |", metric);
        for (int p = 0; p < b->npresets; p++)
            fprintf(f, " vs x264 %s |", b->presets[p]);
        fprintf(f, "\n|---|");
        for (int p = 0; p < b->npresets; p++)
            fprintf(f, "---:|");
        fprintf(f, "\n");
    } else {
        fprintf(f, "  %-36s", head);
        for (int p = 0; p < b->npresets; p++)
            fprintf(f, " %13s", b->presets[p]);
        fprintf(f, "\n");
    }
    for (int r = 0; r < b->nranges; r++) {
        char label[64];
        snprintf(label, sizeof(label), "vidkern R%d%s", b->ranges[r],
                 est(b, r, arg) ? " (estimate: no stream)" : "");
        fprintf(f, md ? "| %s |" : "  %-36s", label);
        for (int p = 0; p < b->npresets; p++) {
            char v[32], c[48];
            fmt_bd(v, sizeof(v), bd[r][p]);
            if (cnt && !isnan(bd[r][p]))
                snprintf(c, sizeof(c), "%s (%d)", v, cnt[r][p]);
            else
                snprintf(c, sizeof(c), "%s", v);
            fprintf(f, md ? " %s |" : " %13s", c);
        }
        fprintf(f, "\n");
    }
}

static int est_source(const Rd *b, int r, void *arg) {
    return range_estimated(b, arg, r);
}

static int est_any(const Rd *b, int r, void *arg) {
    (void)arg;
    int e = 0;
    for (int i = 0; i < b->nsrc; i++)
        e |= range_estimated(b, &b->src[i], r);
    return e;
}

static void x264_desc(const Rd *b, int md, char *buf, size_t n) {
#if VIDK_BENCH_X264
    if (!b->use_x264) {
        snprintf(buf, n, "x264 %s: not run (--no-x264)", X264_POINTVER);
        return;
    }
    size_t o = (size_t)snprintf(buf, n,
                                "x264 %s: tune psnr, constant QP (ip/pb factors 1), keyint %s, "
                                "scenecut off, threads %s",
                                X264_POINTVER, b->keyint ? "as vidkern" : "= frames",
                                b->x264_threads ? "as given" : "auto");
    for (int p = 0; p < b->npresets && o < n; p++)
        o += (size_t)snprintf(buf + o, n - o, "\n%sx264 %s: %d threads; %s", md ? "  - " : "  ",
                              b->presets[p], b->x264_threads_used[p], b->x264_tools[p]);
#else
    (void)b, (void)md;
    snprintf(buf, n,
             "x264 absent: this vidkern-bench was built without libx264 (pkg-config x264 not "
             "found): vidkern rows only, no BD-rate");
#endif
}

void brd_print_report(FILE *f, Rd *b, int md) {
    const char *li = md ? "- " : "";
    bench_print_header(f, &b->mt, "rd", "rd", "", md);
    char x[2048];
    x264_desc(b, md, x, sizeof(x));
    char sl[32] = "auto (vidk_enc_slices)";
    if (b->slices) snprintf(sl, sizeof(sl), "%d", b->slices);
    fprintf(f,
            "%svidkern %s: H.264 on %s, keyint %d, B-frames %d%s%s, deblocking %s, %s, %s, "
            "slices %s, "
            "bits from %s\n",
            li, vidk_version(), b->backend, b->keyint, b->bframes,
            !b->bframes  ? ""
            : b->b_adapt ? " (adaptive)"
                         : " (fixed)",
            b->bframes && b->b_pyramid ? " (pyramid)" : "", b->deblock ? "on" : "off",
            b->cabac ? "CABAC" : "CAVLC",
            b->i4x4 && b->i8x8 ? "Intra_4x4, Intra_8x8"
            : b->i4x4          ? "Intra_4x4"
            : b->i8x8          ? "Intra_8x8"
                               : "Intra_16x16 only",
            sl,
            brd_any_estimated(b) ? "the loop's estimate (estimate: no stream)" : "the stream");
    fprintf(f, "%s%s\n", li, x);
    bench_notes_print(f, &b->notes, md ? "- note: " : "note: ");
    for (int i = 0; i < b->nsrc; i++) {
        RdSource *s = &b->src[i];
        char desc[200];
        source_desc(s, desc, sizeof(desc));
        fprintf(f, md ? "\n## %s\n\n%s\n\n" : "\n== %s: %s\n", s->name, desc);
        if (md)
            fprintf(f, "| encoder | QP | kbit/frame | PSNR-Y | PSNR-YUV | frames/s | I | B |\n"
                       "|---|---:|---:|---:|---:|---:|---:|---:|\n");
        else
            fprintf(f, "%-16s %3s %11s %8s %8s %10s %5s %5s\n", "encoder", "QP", "kbit/frame",
                    "PSNR-Y", "PSNR-YUV", "frames/s", "I", "B");
        for (int r = 0; r < b->nranges; r++)
            for (int q = 0; q < b->nqps; q++) {
                char label[32];
                snprintf(label, sizeof(label), "vidkern R%d", b->ranges[r]);
                print_point(f, md, label, b->qps[q], &s->vk[r][q]);
            }
        if (b->use_x264)
            for (int p = 0; p < b->npresets; p++)
                for (int q = 0; q < b->nqps; q++) {
                    char label[32];
                    snprintf(label, sizeof(label), "x264 %s", b->presets[p]);
                    print_point(f, md, label, b->qps[q], &s->x[p][q]);
                }
        if (b->use_x264) {
            fprintf(f, "\n");
            print_bd_table(f, b, md, "PSNR-Y", (const double(*)[MAX_PRESETS])s->bd, NULL,
                           est_source, s);
            print_bd_table(f, b, md, "PSNR-YUV", (const double(*)[MAX_PRESETS])s->bdc, NULL,
                           est_source, s);
        }
    }
    /* Summary over the sources. */
    fprintf(f, md ? "\n## Summary over %d source(s)\n\n" : "\n== summary over %d source(s)\n",
            b->nsrc);
    if (b->use_x264) {
        double bd[2][MAX_LIST][MAX_PRESETS];
        int cnt[2][MAX_LIST][MAX_PRESETS];
        for (int y = 0; y < 2; y++)
            for (int r = 0; r < b->nranges; r++)
                for (int p = 0; p < b->npresets; p++)
                    bd[y][r][p] = mean_bd(b, r, p, y, &cnt[y][r][p]);
        fprintf(f, "%smean BD-rate over the sources (number of sources in brackets):\n",
                md ? "" : "  ");
        if (md) fprintf(f, "\n");
        for (int y = 0; y < 2; y++)
            print_bd_table(f, b, md, y ? "PSNR-YUV" : "PSNR-Y",
                           (const double(*)[MAX_PRESETS])bd[y],
                           (const int(*)[MAX_PRESETS])cnt[y], est_any, NULL);
        fprintf(f, "\n");
    }
    /* frames/s per source and encoder (mean over the QPs). */
    if (md) {
        fprintf(f, "| frames/s (mean over QPs) |");
        for (int r = 0; r < b->nranges; r++)
            fprintf(f, " vidkern R%d |", b->ranges[r]);
        for (int p = 0; b->use_x264 && p < b->npresets; p++)
            fprintf(f, " x264 %s |", b->presets[p]);
        fprintf(f, "\n|---|");
        for (int k = 0; k < b->nranges + (b->use_x264 ? b->npresets : 0); k++)
            fprintf(f, "---:|");
        fprintf(f, "\n");
    } else {
        fprintf(f, "  %-36s", "frames/s (mean over the QPs):");
        for (int r = 0; r < b->nranges; r++) {
            char l[24];
            snprintf(l, sizeof(l), "vidkern R%d", b->ranges[r]);
            fprintf(f, " %11s", l);
        }
        for (int p = 0; b->use_x264 && p < b->npresets; p++)
            fprintf(f, " %11s", b->presets[p]);
        fprintf(f, "\n");
    }
    for (int i = 0; i < b->nsrc; i++) {
        const RdSource *s = &b->src[i];
        char l[160];
        /* The clip's name without ".y4m"; sizes are in the mosaic / generated names. */
        const size_t nl = strlen(s->name);
        const int cut = nl > 4 && !strcmp(s->name + nl - 4, ".y4m") ? (int)nl - 4 : (int)nl;
        snprintf(l, sizeof(l), "%.*s", cut < 34 ? cut : 34, s->name);
        fprintf(f, md ? "| %s |" : "  %-36s", l);
        for (int r = 0; r < b->nranges; r++)
            fprintf(f, md ? " %.1f |" : " %11.1f", mean_fps(b, s->vk[r]));
        for (int p = 0; b->use_x264 && p < b->npresets; p++)
            fprintf(f, md ? " %.1f |" : " %11.1f", mean_fps(b, s->x[p]));
        fprintf(f, "\n");
    }
    fprintf(
        f,
        "\n%skbit/frame: bits of the coded sequence / frames / 1000 (vidkern: its stream, "
        "SPS/PPS included; x264: every NAL unit but SEI); * = estimate: no stream (the "
        "loop's Exp-Golomb estimate, this build writes no stream yet).\n"
        "%sPSNR-Y, PSNR-YUV: averages of the frames' PSNRs, PSNR-YUV = (6 Y + U + V) / 8. "
        "frames/s: frames / wall clock of the encode calls (sources in memory). I, B: intra "
        "and B frames.\n",
        li, li);
    if (b->use_x264)
        fprintf(f,
                "%sBD-rate: Bjontegaard delta rate of vidkern against the x264 preset over the "
                "QPs (PSNR-Y, log10 rate interpolated by pchip, exact integral over the common "
                "PSNR range); negative = vidkern needs fewer bits for the same PSNR-Y.\n",
                li);
}

/* ---- JSON / CSV ----------------------------------------------------------------------- */
static void json_num(FILE *f, double v) {
    if (isnan(v) || isinf(v))
        fprintf(f, "null");
    else
        fprintf(f, "%.6f", v);
}

static void json_point(FILE *f, const char *enc, const char *config, int range,
                       const char *preset, int qp, const RdPoint *x, int first) {
    fprintf(f, "%s\n        {\"encoder\": \"%s\", \"config\": %s, ", first ? "" : ",", enc,
            bench_jq(config));
    if (range >= 0)
        fprintf(f, "\"range\": %d, ", range);
    else
        fprintf(f, "\"preset\": %s, ", bench_jq(preset));
    fprintf(f, "\"qp\": %d", qp);
    if (!x->done) {
        fprintf(f, ", \"error\": %s}", bench_jq(x->err));
        return;
    }
    fprintf(f,
            ", \"kbits_per_frame\": %.6f, \"bits_source\": \"%s\", \"psnr_y\": %.6f, "
            "\"psnr_u\": %.6f, \"psnr_v\": %.6f, \"psnr_yuv\": %.6f, \"fps\": %.4f, "
            "\"intra_frames\": %d, \"b_frames\": %d",
            x->kbits, range >= 0 ? (x->estimate ? "estimate" : "stream") : "nal", x->psnr[0],
            x->psnr[1], x->psnr[2], x->psnr_yuv, x->fps, x->intra, x->bfr);
    if (range < 0) fprintf(f, ", \"sei_bytes_excluded\": %.0f", x->sei_bytes);
    fprintf(f, "}");
}

static void write_json(FILE *f, Rd *b) {
    const BenchMeta *mt = &b->mt;
    fprintf(f,
            "{\n  \"benchmark\": \"rd\",\n  \"vidkern\": \"%s\",\n  \"commit\": %s,\n  "
            "\"date\": \"%s\",\n  \"command\": %s,\n  \"device\": {\"cpu\": %s, \"cores\": %d, "
            "\"gpu\": %s},\n  \"backend\": %s,\n  \"keyint\": %d,\n  \"deblock\": %d,\n"
            "  \"cabac\": %d,\n  \"i4x4\": %d,\n  \"i8x8\": %d,\n  \"bframes\": %d,\n  "
            "\"b_adapt\": %d,\n  \"b_pyramid\": %d,\n"
            "  \"slices\": %d,\n"
            "  \"frames\": %d,\n"
            "  \"qps\": [",
            vidk_version(), bench_jq(VIDK_GIT_COMMIT), mt->date, bench_jq(mt->command),
            bench_jq(mt->cpu), mt->cores, bench_jq(mt->gpu), bench_jq(b->backend), b->keyint,
            b->deblock, b->cabac, b->i4x4, b->i8x8, b->bframes, b->b_adapt, b->b_pyramid,
            b->slices, b->frames);
    for (int q = 0; q < b->nqps; q++)
        fprintf(f, "%s%d", q ? ", " : "", b->qps[q]);
    fprintf(f, "],\n  \"ranges\": [");
    for (int r = 0; r < b->nranges; r++)
        fprintf(f, "%s%d", r ? ", " : "", b->ranges[r]);
    fprintf(f, "],\n  \"bits_estimated\": %s,\n  \"x264\": {\"available\": %s",
            brd_any_estimated(b) ? "true" : "false", VIDK_BENCH_X264 ? "true" : "false");
#if VIDK_BENCH_X264
    fprintf(f,
            ", \"version\": %s, \"run\": %s, \"tune\": \"psnr\", \"rc\": \"cqp\", "
            "\"ip_factor\": 1, \"pb_factor\": 1, \"scenecut\": 0, \"presets\": [",
            bench_jq(X264_POINTVER), b->use_x264 ? "true" : "false");
    for (int p = 0; b->use_x264 && p < b->npresets; p++)
        fprintf(f, "%s{\"preset\": %s, \"threads\": %d, \"bframes\": %d, \"tools\": %s}",
                p ? ", " : "", bench_jq(b->presets[p]), b->x264_threads_used[p],
                b->x264_bframes_used[p], bench_jq(b->x264_tools[p]));
    fprintf(f, "]");
#endif
    fprintf(f, "},\n  \"notes\": [");
    bench_notes_json(f, &b->notes);
    fprintf(f, "],\n  \"sources\": [");
    for (int i = 0; i < b->nsrc; i++) {
        const RdSource *s = &b->src[i];
        fprintf(f,
                "%s\n    {\"name\": %s, \"kind\": \"%s\", \"width\": %d, \"height\": %d, "
                "\"frames\": %d, \"frames_read\": %d, \"looped\": %s, \"fps_num\": %d, "
                "\"fps_den\": %d,\n      \"points\": [",
                i ? "," : "", bench_jq(s->name), s->kind, s->w, s->h, s->frames, s->read,
                s->read < s->frames ? "true" : "false", s->fps_num, s->fps_den);
        int first = 1;
        for (int r = 0; r < b->nranges; r++)
            for (int q = 0; q < b->nqps; q++) {
                char cfg[32];
                snprintf(cfg, sizeof(cfg), "R%d", b->ranges[r]);
                json_point(f, "vidkern", cfg, b->ranges[r], NULL, b->qps[q], &s->vk[r][q],
                           first);
                first = 0;
            }
        for (int p = 0; b->use_x264 && p < b->npresets; p++)
            for (int q = 0; q < b->nqps; q++) {
                json_point(f, "x264", b->presets[p], -1, b->presets[p], b->qps[q], &s->x[p][q],
                           first);
                first = 0;
            }
        fprintf(f, "\n      ],\n      \"bdrate\": [");
        first = 1;
        for (int r = 0; r < b->nranges; r++)
            for (int p = 0; b->use_x264 && p < b->npresets; p++) {
                fprintf(f, "%s\n        {\"vidkern\": \"R%d\", \"x264\": %s, \"percent\": ",
                        first ? "" : ",", b->ranges[r], bench_jq(b->presets[p]));
                json_num(f, s->bd[r][p]);
                fprintf(f, ", \"estimate\": %s}", range_estimated(b, s, r) ? "true" : "false");
                first = 0;
            }
        fprintf(f, "\n      ]}");
    }
    fprintf(f, "\n  ],\n  \"summary\": {\"bdrate\": [");
    int first = 1;
    for (int r = 0; r < b->nranges; r++)
        for (int p = 0; b->use_x264 && p < b->npresets; p++) {
            int n, nc;
            const double m = mean_bd(b, r, p, 0, &n), mc = mean_bd(b, r, p, 1, &nc);
            fprintf(f, "%s\n    {\"vidkern\": \"R%d\", \"x264\": %s, \"mean_percent\": ",
                    first ? "" : ",", b->ranges[r], bench_jq(b->presets[p]));
            json_num(f, m);
            fprintf(f, ", \"mean_percent_yuv\": ");
            json_num(f, mc);
            fprintf(f, ", \"sources\": %d}", n);
            first = 0;
        }
    fprintf(f, "\n  ]}\n}\n");
}

static void write_csv(FILE *f, Rd *b) {
    fprintf(f, "source,width,height,frames,encoder,config,qp,kbits_per_frame,psnr_y,psnr_yuv,"
               "fps,bits\n");
    for (int i = 0; i < b->nsrc; i++) {
        const RdSource *s = &b->src[i];
        for (int r = 0; r < b->nranges; r++)
            for (int q = 0; q < b->nqps; q++) {
                const RdPoint *x = &s->vk[r][q];
                if (x->done)
                    fprintf(f, "\"%s\",%d,%d,%d,vidkern,R%d,%d,%.6f,%.6f,%.6f,%.4f,%s\n",
                            s->name, s->w, s->h, s->frames, b->ranges[r], b->qps[q], x->kbits,
                            x->psnr[0], x->psnr_yuv, x->fps,
                            x->estimate ? "estimate" : "stream");
            }
        for (int p = 0; b->use_x264 && p < b->npresets; p++)
            for (int q = 0; q < b->nqps; q++) {
                const RdPoint *x = &s->x[p][q];
                if (x->done)
                    fprintf(f, "\"%s\",%d,%d,%d,x264,%s,%d,%.6f,%.6f,%.6f,%.4f,nal\n", s->name,
                            s->w, s->h, s->frames, b->presets[p], b->qps[q], x->kbits,
                            x->psnr[0], x->psnr_yuv, x->fps);
            }
    }
}

void brd_write_report(FILE *f, int what, void *arg) {
    if (what == BENCH_JSON)
        write_json(f, arg);
    else if (what == BENCH_CSV)
        write_csv(f, arg);
    else
        brd_print_report(f, arg, 1);
}
