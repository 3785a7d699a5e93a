/* `vidkern-bench h264` (bench_h264.c), its results: the rows measured, the tables of
 * Wang et al. 2013 and the targets of issue 3 built from them, and the report files (CSV,
 * JSON, markdown). See docs/BENCH_H264.md for what every table means. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_h264.h"
#include "bench_util.h"
#include "h264_workload.h"

/* x264 on one Zen 3 core (issue 3): add4x4_idct and add8x8_idct8, ns per block. */
#define X264_ADD4_NS 3.6
#define X264_ADD8_NS 14.0

/* ---- results ------------------------------------------------------------------------ */

void bh264_note(Bench *b, const char *fmt, const char *arg) {
    bench_note(&b->notes, fmt, arg);
    if (!b->quiet) {
        fprintf(stderr, "vidkern-bench h264: ");
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
}

Row *bh264_add_row(Bench *b, int wl, const char *backend, const char *variant, int kind) {
    if (b->nrows == b->caprows) {
        const int nc = b->caprows ? 2 * b->caprows : 64;
        Row *r = realloc(b->rows, (size_t)nc * sizeof(*r));
        if (!r) return NULL;
        b->rows = r, b->caprows = nc;
    }
    Row *r = &b->rows[b->nrows++];
    memset(r, 0, sizeof(*r));
    r->wl = wl, r->kind = kind;
    snprintf(r->backend, sizeof(r->backend), "%s", backend);
    snprintf(r->variant, sizeof(r->variant), "%s", variant);
    return r;
}

static const Stat *find(const Bench *b, int wl, const char *backend, const char *variant,
                        int kind) {
    for (int i = 0; i < b->nrows; i++) {
        const Row *r = &b->rows[i];
        if (r->wl == wl && r->kind == kind && !strcmp(r->backend, backend) &&
            !strcmp(r->variant, variant))
            return r->st.done ? &r->st : NULL;
    }
    return NULL;
}

/* The cuda rows' backend label: "cuda", or "cuda-emu" for the host emulation. */
const char *bh264_gpu_label(const Bench *b) {
    return b->cuda_emu ? "cuda-emu" : "cuda";
}

void bh264_report(Bench *b, const Live *lv, const Row *r) {
    if (r->st.mismatch) {
        b->mismatches++;
        fprintf(stderr,
                "vidkern-bench h264: %s %s (%s) on %s %s differs from the c backend's "
                "reconstruction\n",
                r->backend, r->variant, kind_name[r->kind], b->wls[lv->wl].size_name,
                b->wls[lv->wl].mode_name);
    }
    if (!r->st.done) {
        b->failures++;
        fprintf(stderr, "vidkern-bench h264: %s %s (%s) on %s %s failed: %s\n", r->backend,
                r->variant, kind_name[r->kind], b->wls[lv->wl].size_name,
                b->wls[lv->wl].mode_name, r->st.err);
    }
    if (b->quiet) return;
    fprintf(stderr, "[%.0fs] %s %s  %-8s %-10s %-3s  ", cli_now() - b->t_start,
            b->wls[lv->wl].size_name, b->wls[lv->wl].mode_name, r->backend, r->variant,
            kind_name[r->kind]);
    if (r->st.done)
        fprintf(stderr, "%.4f ms/frame (%d passes)%s\n", r->st.ms, r->st.runs,
                r->st.mismatch ? "  MISMATCH" : "");
    else
        fprintf(stderr, "failed\n");
}

/* ---- device / command description ---------------------------------------------------------
 */

void bh264_meta_fill(Bench *b, int argc, char **argv) {
    bench_meta_fill(&b->mt, "vidkern-bench h264", argc, argv,
                    b->ctx[VIDK_BACKEND_CUDA] ? b->device : -1);
    if (b->hbm_gbs <= 0)
        b->hbm_gbs = strstr(b->mt.gpu, "H200")   ? HBM_GBS_H200
                     : strstr(b->mt.gpu, "H100") ? HBM_GBS_H100
                                                 : 0;
    if (!b->ctx[VIDK_BACKEND_CUDA] && b->cuda_emu)
        snprintf(b->mt.gpu, sizeof(b->mt.gpu),
                 "none (cuda rows: host emulation of the kernels)");
}

/* ---- tables --------------------------------------------------------------------------------
 */

/* heads: "a|b|c"; lead: columns of text (left-aligned in the text output). */
static void tab_init(Tab *t, const char *title, const char *heads, int lead,
                     const char *legend) {
    memset(t, 0, sizeof(*t));
    snprintf(t->title, sizeof(t->title), "%s", title);
    snprintf(t->legend, sizeof(t->legend), "%s", legend ? legend : "");
    t->lead = lead;
    const char *p = heads;
    while (*p && t->ncol < TAB_MAXC) {
        const size_t l = strcspn(p, "|");
        snprintf(t->head[t->ncol++], sizeof(Cell), "%.*s", (int)l, p);
        p += l;
        if (*p) p++;
    }
}

/* A new row, its first cells c0, c1, c2 where not NULL (NULL when out of memory). */
static Cell *tab_add(Tab *t, const char *c0, const char *c1, const char *c2) {
    if (t->nrow == t->cap) {
        const int nc = t->cap ? 2 * t->cap : 16;
        Cell(*r)[TAB_MAXC] = realloc(t->row, (size_t)nc * sizeof(*r));
        if (!r) return NULL;
        t->row = r, t->cap = nc;
    }
    memset(t->row[t->nrow], 0, sizeof(t->row[0]));
    const char *lead[3] = {c0, c1, c2};
    for (int c = 0; c < 3; c++)
        if (lead[c]) snprintf(t->row[t->nrow][c], sizeof(Cell), "%s", lead[c]);
    return t->row[t->nrow++];
}

void bh264_tab_free(Tab *t) {
    free(t->row);
    t->row = NULL;
}

void bh264_tab_print(FILE *f, const Tab *t, int md) {
    if (!t->nrow) return;
    if (md) {
        fprintf(f, "\n## %s\n\n|", t->title);
        for (int c = 0; c < t->ncol; c++)
            fprintf(f, " %s |", t->head[c]);
        fprintf(f, "\n|");
        for (int c = 0; c < t->ncol; c++)
            fprintf(f, "%s|", c < t->lead ? "---" : "---:");
        fprintf(f, "\n");
        for (int r = 0; r < t->nrow; r++) {
            fprintf(f, "|");
            for (int c = 0; c < t->ncol; c++)
                fprintf(f, " %s |", t->row[r][c][0] ? t->row[r][c] : "-");
            fprintf(f, "\n");
        }
        if (t->legend[0]) fprintf(f, "\n%s\n", t->legend);
        return;
    }
    int wd[TAB_MAXC];
    for (int c = 0; c < t->ncol; c++) {
        wd[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->nrow; r++) {
            const int l = t->row[r][c][0] ? (int)strlen(t->row[r][c]) : 1;
            if (l > wd[c]) wd[c] = l;
        }
    }
    fprintf(f, "\n%s\n", t->title);
    for (int c = 0; c < t->ncol; c++)
        fprintf(f, c < t->lead ? "%-*s  " : "%*s  ", wd[c], t->head[c]);
    fprintf(f, "\n");
    for (int r = 0; r < t->nrow; r++) {
        for (int c = 0; c < t->ncol; c++)
            fprintf(f, c < t->lead ? "%-*s  " : "%*s  ", wd[c],
                    t->row[r][c][0] ? t->row[r][c] : "-");
        fprintf(f, "\n");
    }
    if (t->legend[0]) fprintf(f, "%s\n", t->legend);
}

static void fms(Cell c, double ms) {
    snprintf(c, sizeof(Cell), ms >= 100 ? "%.1f" : ms >= 1 ? "%.3f" : "%.4f", ms);
}

static void fx(Cell c, double x) {
    if (!(x > 0) || !isfinite(x))
        c[0] = 0;
    else
        snprintf(c, sizeof(Cell), x >= 100 ? "%.0fx" : x >= 0.95 ? "%.2fx" : "%.2gx", x);
}

static void fpct(Cell c, double num, double den) {
    if (den > 0)
        snprintf(c, sizeof(Cell), "%.1f%%", 100.0 * num / den);
    else
        c[0] = 0;
}

static void fkb(Cell c, double bytes) {
    snprintf(c, sizeof(Cell), bytes >= 1e7 ? "%.0f" : "%.1f", bytes / 1e3);
}

static const Stat *cpu_best_simd(const Bench *b, int wl, const char **which) {
    const Stat *x = find(b, wl, "simd", "batch", KIND_ALL),
               *y = find(b, wl, "simd", "dense", KIND_ALL);
    if (x && (!y || x->ms <= y->ms)) {
        *which = "batch";
        return x;
    }
    *which = "dense";
    return y;
}

/* The cuda throughput variants, the first the original measurement. */
#define TPUT_VARIANTS 4
static const char *const tput_variant[TPUT_VARIANTS] = {
    "throughput", "throughput-frame", "throughput-pinned", "throughput-pinned-batch"};

/* The fastest cuda throughput row of workload w (*which: its variant). */
static const Stat *best_tput(const Bench *b, int w, const char **which) {
    const Stat *best = NULL;
    for (int i = 0; i < TPUT_VARIANTS; i++) {
        const Stat *s = find(b, w, bh264_gpu_label(b), tput_variant[i], KIND_ALL);
        if (s && s->ms > 0 && (!best || s->ms < best->ms)) best = s, *which = tput_variant[i];
    }
    return best;
}

/* The all-core CPU path of workload w: the faster of the threads backend's batch and dense. */
static const Stat *cpu_best_threads(const Bench *b, int w) {
    const Stat *th = find(b, w, "threads", "batch", KIND_ALL),
               *thd = find(b, w, "threads", "dense", KIND_ALL);
    return !th || (thd && thd->ms < th->ms) ? thd : th;
}

/* HBM floor of a device-timed row: (H2D + D2H bytes) / the device-memory ceiling, ms. */
static double hbm_floor_ms(const Bench *b, const Stat *s) {
    return b->hbm_gbs > 0 ? (s->h2d_bytes + s->d2h_bytes) / (b->hbm_gbs * 1e9) * 1e3 : 0;
}

void bh264_build_tables(Bench *b, Tab *t) {
    const char *g = bh264_gpu_label(b);
    const int kctx = b->ngpu_ctx ? b->ngpu_ctx : b->gpu_contexts;
    Cell *r;
    char legend[1400];
    /* Workloads and Fig. 2. */
    tab_init(&t[T_WL], "Workloads and non-zero block ratio (Fig. 2)",
             "size|mode|frames|MB 4x4/8x8/I16|8x8 MVs|non-zero 4x4|non-zero 8x8|non-zero all|"
             "DC groups/frame|levels/frame|PSNR-Y dB|made in s",
             2,
             "MB: share of macroblocks with the 4x4 transform, the 8x8 transform, Intra16x16. "
             "8x8 MVs: inter macroblocks predicted with four 8x8 vectors. non-zero: transform "
             "blocks with a non-zero level / all blocks of that size (luma and chroma; Fig. 2 "
             "of the paper). PSNR-Y: reconstruction vs source (workloads made by this run).");
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        if (!(r = tab_add(&t[T_WL], wi->size_name, wi->mode_name, NULL))) break;
        snprintf(r[2], sizeof(Cell), "%d", wi->nframes);
        const double mbt = s->mb_total ? (double)s->mb_total : 1;
        snprintf(r[3], sizeof(Cell), "%.0f/%.0f/%.0f%%",
                 100.0 * (s->mb_total - s->mb_8x8 - s->mb_i16) / mbt, 100.0 * s->mb_8x8 / mbt,
                 100.0 * s->mb_i16 / mbt);
        if (s->mb_split >= 0 && s->mb_intra < s->mb_total)
            fpct(r[4], (double)s->mb_split, (double)(s->mb_total - s->mb_intra));
        fpct(r[5], (double)s->blocks[0], (double)s->blocks_total[0]);
        fpct(r[6], (double)s->blocks[1], (double)s->blocks_total[1]);
        fpct(r[7], (double)(s->blocks[0] + s->blocks[1]),
             (double)(s->blocks_total[0] + s->blocks_total[1]));
        snprintf(r[8], sizeof(Cell), "%.0f", (double)s->dc_groups / wi->nframes);
        snprintf(r[9], sizeof(Cell), "%.0f", (double)s->nonzero / wi->nframes);
        if (s->psnr_y > 0) snprintf(r[10], sizeof(Cell), "%.2f", s->psnr_y);
        snprintf(r[11], sizeof(Cell), "%.2f", s->prep_s);
    }
    /* Bytes. */
    snprintf(legend, sizeof(legend),
             "dense / compacted / sparse: vidk_h264_bytes() per frame (the levels and side "
             "information each representation moves to the device). %s up+down: bytes that "
             "crossed PCIe per frame, measured (H2D + D2H of the timing API) for the dense "
             "baseline, the compacted kernel (int16 residuals back), the sparse upload and "
             "the fused path (prediction up, 8-bit samples back).",
             g);
    tab_init(&t[T_BYTES], "Bytes per frame (KB)",
             "size|mode|dense|compacted|sparse|dense/sparse|up+down dense|up+down compact|"
             "up+down sparse|up+down fused",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        if (!(r = tab_add(&t[T_BYTES], wi->size_name, wi->mode_name, NULL))) break;
        fkb(r[2], (double)s->bytes_dense / wi->nframes);
        fkb(r[3], (double)s->bytes_compacted / wi->nframes);
        fkb(r[4], (double)s->bytes_sparse / wi->nframes);
        fx(r[5], s->bytes_sparse ? (double)s->bytes_dense / (double)s->bytes_sparse : 0);
        static const char *const v[4] = {"dense", "compact", "sparse", "fused"};
        for (int i = 0; i < 4; i++) {
            const Stat *x = find(b, w, g, v[i], KIND_ALL);
            if (x && x->has_dev) fkb(r[6 + i], x->h2d_bytes + x->d2h_bytes);
        }
    }
    /* Fig. 5: complete IDCT. */
    snprintf(legend, sizeof(legend),
             "ms per frame, median of the passes after warm-up (host clock, one call per "
             "frame; the prediction is in the picture before the call). c/simd/threads: "
             "vidk_h264_batch_inverse on the compacted batch; \"simd dense\": "
             "vidk_h264_frame_inverse (dense frame, zero blocks skipped by a SIMD test). "
             "%s no-ovl / ovl: the complete IDCT (host packing + H2D + kernel + D2H + "
             "write-back into the picture, pinned), one chunk per size class on one stream "
             "vs the library's settings (chunks pipelined over the streams). tput: %d host "
             "threads with a cuda context each, frames back to back (ms per frame = wall / "
             "frames). x: speed-up over c (the paper's scalar code).",
             g, kctx);
    tab_init(&t[T_FIG5], "Complete IDCT per frame (Fig. 5), ms",
             "size|mode|c|simd|threads|simd dense|gpu no-ovl|gpu ovl|gpu tput|simd x|threads x|"
             "no-ovl x|ovl x|tput x",
             2, legend);
    snprintf(t[T_FIG5].head[6], sizeof(Cell), "%s no-ovl", g);
    snprintf(t[T_FIG5].head[7], sizeof(Cell), "%s ovl", g);
    snprintf(t[T_FIG5].head[8], sizeof(Cell), "%s tput", g);
    for (int w = 0; w < b->nwl; w++) {
        if (!(r = tab_add(&t[T_FIG5], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        const Stat *s[8] = {
            find(b, w, "c", "batch", KIND_ALL),       find(b, w, "simd", "batch", KIND_ALL),
            find(b, w, "threads", "batch", KIND_ALL), find(b, w, "simd", "dense", KIND_ALL),
            find(b, w, g, "no-overlap", KIND_ALL),    find(b, w, g, "default", KIND_ALL),
            find(b, w, g, "throughput", KIND_ALL)};
        for (int i = 0; i < 7; i++)
            if (s[i]) fms(r[2 + i], s[i]->ms);
        const int sp[5] = {1, 2, 4, 5, 6};
        for (int i = 0; i < 5; i++)
            if (s[0] && s[sp[i]]) fx(r[9 + i], s[0]->ms / s[sp[i]]->ms);
    }
    /* Table 3. */
    snprintf(legend, sizeof(legend),
             "Device times per frame from CUDA events (vidk_cuda_last_timing), medians. "
             "Baseline: the dense coefficient frame up, one thread per 4x4/8x8 block of the "
             "frame, int16 residual planes down (step \"dense\"). Compacted: the zero blocks "
             "squeezed out, lists separated by size, one thread per block, int16 residuals "
             "of the coded blocks down (step \"compact\"). x: baseline / compacted. HBM%%: "
             "(H2D + D2H bytes, what the kernel reads and writes in device memory) / kernel "
             "time, against the device-memory ceiling (%.0f GB/s; 0 = unknown GPU, see "
             "--hbm-gbs).",
             b->hbm_gbs);
    tab_init(&t[T_T3], "Table 3: dense baseline vs compacted (ms per frame)",
             "size|mode|base kernel|base H2D|base D2H|comp kernel|comp H2D|comp D2H|kernel x|"
             "H2D x|D2H x|base HBM%|comp HBM%",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *d = find(b, w, g, "dense", KIND_ALL),
                   *c = find(b, w, g, "compact", KIND_ALL);
        if (!(d && d->has_dev) && !(c && c->has_dev)) continue;
        if (!(r = tab_add(&t[T_T3], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        if (d && d->has_dev)
            fms(r[2], d->kernel_ms), fms(r[3], d->h2d_ms), fms(r[4], d->d2h_ms);
        if (c && c->has_dev)
            fms(r[5], c->kernel_ms), fms(r[6], c->h2d_ms), fms(r[7], c->d2h_ms);
        if (d && c && d->has_dev && c->has_dev) {
            fx(r[8], c->kernel_ms > 0 ? d->kernel_ms / c->kernel_ms : 0);
            fx(r[9], c->h2d_ms > 0 ? d->h2d_ms / c->h2d_ms : 0);
            fx(r[10], c->d2h_ms > 0 ? d->d2h_ms / c->d2h_ms : 0);
        }
        const Stat *hs[2] = {d, c};
        for (int i = 0; i < 2; i++)
            if (hs[i] && hs[i]->has_dev && hs[i]->kernel_ms > 0 && b->hbm_gbs > 0)
                fpct(r[11 + i], (hs[i]->h2d_bytes + hs[i]->d2h_bytes) / hs[i]->kernel_ms / 1e6,
                     b->hbm_gbs);
    }
    /* Table 4: kernel time per step, per size class. */
    tab_init(&t[T_T4K],
             "Table 4: GPU optimisations in turn, kernel ms per frame (x = speed-up over the "
             "previous step)",
             "size|mode|class|compact|line|larger|coalesced|sparse|fused|pipeline|graphs|host|"
             "planes|coalesced/compact|fused/compact",
             3,
             "Kernel stage of CUDA events per frame, medians. Steps (src/cuda/h264_cuda.h): "
             "compact = compacted lists, one thread per block; line = one thread per block "
             "row, warp-synchronous transpose (the paper's sync removal); larger = 256-thread "
             "blocks, 2 rounds per thread (work-group size + granularity); coalesced = "
             "write-back through padded shared memory; sparse = mask + offset + non-zero "
             "levels up; fused = prediction up, 8-bit samples down; pipeline = chunks over "
             "the streams; graphs = one CUDA graph per call; host = host staging over a "
             "thread pool, levels dense or sparse per chunk; planes = prediction up and "
             "reconstruction down as whole planes. Kernel times compare up to "
             "\"fused\": with the pipeline the kernel stage spans overlapping chunks (it "
             "waits for their copies), and a graph's copies and kernels all read as its "
             "kernel stage. The paper's Table 4 total is compact -> coalesced (1.51x for "
             "4x4, 1.08x for 8x8 on a GT430).");
    for (int w = 0; w < b->nwl; w++)
        for (int k = 0; k < KINDS; k++) {
            const Stat *s[STEPS];
            int any = 0;
            for (int i = 1; i < STEPS; i++) {
                s[i] = find(b, w, g, step_name[i], k);
                any |= s[i] && s[i]->has_dev;
            }
            if (!any) continue;
            if (!(r = tab_add(&t[T_T4K], b->wls[w].size_name, b->wls[w].mode_name,
                              kind_name[k])))
                break;
            for (int i = 1; i < STEPS; i++) {
                if (!s[i] || !s[i]->has_dev) continue;
                Cell x;
                fx(x, i > 1 && s[i - 1] && s[i - 1]->has_dev && s[i]->kernel_ms > 0
                          ? s[i - 1]->kernel_ms / s[i]->kernel_ms
                          : 0);
                Cell m;
                fms(m, s[i]->kernel_ms);
                snprintf(r[2 + i], sizeof(Cell), x[0] ? "%s (%s)" : "%s", m, x);
            }
            if (s[1] && s[4] && s[1]->has_dev && s[4]->has_dev && s[4]->kernel_ms > 0)
                fx(r[3 + STEPS - 1], s[1]->kernel_ms / s[4]->kernel_ms);
            if (s[1] && s[6] && s[1]->has_dev && s[6]->has_dev && s[6]->kernel_ms > 0)
                fx(r[3 + STEPS], s[1]->kernel_ms / s[6]->kernel_ms);
        }
    /* Table 4 continued: complete time per step. */
    snprintf(legend, sizeof(legend),
             "Host-clock ms per frame of the whole call (packing, copies, kernels, "
             "write-back), each step with the ones before it; x = speed-up over the previous "
             "step. \"default\" = the library's settings (what vidk_h264_batch_inverse uses).");
    tab_init(&t[T_T4W], "Table 4 (complete IDCT): ms per frame per step, whole frames",
             "size|mode|dense|compact|line|larger|coalesced|sparse|fused|pipeline|graphs|host|"
             "planes|"
             "default",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *s[STEPS + 1];
        int any = 0;
        for (int i = 0; i <= STEPS; i++) {
            s[i] = find(b, w, g, i < STEPS ? step_name[i] : "default", KIND_ALL);
            any |= s[i] != NULL;
        }
        if (!any) continue;
        if (!(r = tab_add(&t[T_T4W], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        for (int i = 0; i <= STEPS; i++) {
            if (!s[i]) continue;
            Cell x, m;
            fx(x, i > 0 && i < STEPS && s[i - 1] ? s[i - 1]->ms / s[i]->ms : 0);
            fms(m, s[i]->ms);
            snprintf(r[2 + i], sizeof(Cell), x[0] ? "%s (%s)" : "%s", m, x);
        }
    }
    /* Fig. 4: kernels per size class vs the CPU. */
    snprintf(legend, sizeof(legend),
             "ms per frame for one size class alone (the other list emptied). CPU: "
             "vidk_h264_batch_inverse (dequantise + IDCT + add, like the fused kernel). %s "
             "kernel: the kernel stage of step \"fused\" (dequantise + IDCT + add on the "
             "device, no pipelining), i.e. without transfers, as the paper's Fig. 4. x: "
             "speed-up over c.",
             g);
    tab_init(&t[T_FIG4], "Kernel speed-up over scalar code per transform size (Fig. 4)",
             "size|mode|class|c|simd|threads|gpu kernel|simd x|threads x|gpu x", 3, legend);
    snprintf(t[T_FIG4].head[6], sizeof(Cell), "%s kernel", g);
    snprintf(t[T_FIG4].head[9], sizeof(Cell), "%s x", g);
    for (int w = 0; w < b->nwl; w++)
        for (int k = KIND_4; k <= KIND_8; k++) {
            const Stat *c = find(b, w, "c", "batch", k), *s = find(b, w, "simd", "batch", k),
                       *th = find(b, w, "threads", "batch", k), *f = find(b, w, g, "fused", k);
            if (!c && !s && !th && !f) continue;
            if (!(r = tab_add(&t[T_FIG4], b->wls[w].size_name, b->wls[w].mode_name,
                              kind_name[k])))
                break;
            if (c) fms(r[3], c->ms);
            if (s) fms(r[4], s->ms);
            if (th) fms(r[5], th->ms);
            if (f && f->has_dev) fms(r[6], f->kernel_ms);
            if (c && s) fx(r[7], c->ms / s->ms);
            if (c && th) fx(r[8], c->ms / th->ms);
            if (c && f && f->has_dev && f->kernel_ms > 0) fx(r[9], c->ms / f->kernel_ms);
        }
    /* Latency vs throughput, PCIe. */
    snprintf(legend, sizeof(legend),
             "latency: one frame, one call, the library's settings (host clock, median). "
             "tput: %d contexts in %d host threads, frames back to back. device total: first "
             "to last device operation of the call. H2D / D2H KB: bytes of the call. GB/s: "
             "bytes / H2D or D2H span of step \"fused\" (same bytes, copies not overlapped "
             "with kernels nor inside a graph, so the spans time the copies alone), against "
             "the pinned PCIe ceiling of %.0f GB/s per direction.",
             kctx, kctx, b->pcie_gbs);
    tab_init(&t[T_LAT], "Single-frame latency vs pipelined throughput (cuda)",
             "size|mode|latency ms|tput ms/frame|frames/s|legacy tput|device total ms|H2D KB|"
             "D2H KB|H2D GB/s|D2H GB/s",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *d = find(b, w, g, "default", KIND_ALL),
                   *tp = find(b, w, g, "throughput", KIND_ALL);
        if (!d) continue;
        if (!(r = tab_add(&t[T_LAT], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        fms(r[2], d->ms);
        if (tp) {
            fms(r[3], tp->ms);
            snprintf(r[4], sizeof(Cell), "%.0f", 1e3 / tp->ms);
        }
        const Stat *tl = find(b, w, g, "throughput-legacy", KIND_ALL);
        if (tl) fms(r[5], tl->ms);
        if (d->has_dev) {
            fms(r[6], d->total_ms);
            fkb(r[7], d->h2d_bytes);
            fkb(r[8], d->d2h_bytes);
        }
        const Stat *fu = find(b, w, g, "fused", KIND_ALL);
        if (fu && fu->has_dev) {
            if (fu->h2d_ms > 0)
                snprintf(r[9], sizeof(Cell), "%.1f (%.0f%%)", fu->h2d_bytes / fu->h2d_ms / 1e6,
                         100 * fu->h2d_bytes / fu->h2d_ms / 1e6 / b->pcie_gbs);
            if (fu->d2h_ms > 0)
                snprintf(r[10], sizeof(Cell), "%.1f (%.0f%%)", fu->d2h_bytes / fu->d2h_ms / 1e6,
                         100 * fu->d2h_bytes / fu->d2h_ms / 1e6 / b->pcie_gbs);
        }
    }
    /* Past issue 3: registered caller memory and the fast dense kernel. */
    snprintf(legend, sizeof(legend),
             "ms per frame, host clock, medians. frame compact: vidk_cuda_h264_frame_inverse "
             "as before the fast dense kernel (dense_vec 0: compaction on the host, then the "
             "batch path); frame: with the library's settings (the fast dense kernel on the "
             "dense frame, bands pipelined over the streams, unregistered memory staged "
             "through pinned buffers); pinned: "
             "the same with the picture and the coefficient frames registered "
             "(vidk_picture_register / vidk_host_register, outside the timing: copies go "
             "straight between them and the device); pinned batch: "
             "vidk_cuda_h264_batch_inverse with the picture registered (plane mode copies "
             "it directly). tput columns: %d contexts in %d host threads as \"tput\" "
             "(frames back to back, ms per frame = wall / frames); best / simd, best / "
             "threads: the fastest tput column against the faster simd (1 core) and threads "
             "(all cores) variant. vec kernel: kernel stage (CUDA events) of the fast dense "
             "kernel as one launch (pipeline off); floor: its H2D + D2H bytes (what it reads "
             "and writes in device memory) / %.0f GB/s; x floor: kernel / floor.",
             kctx, kctx, b->hbm_gbs);
    tab_init(&t[T_PIN], "Registered (pinned) caller memory and the fast dense kernel (cuda)",
             "size|mode|frame compact ms|frame ms|pinned ms|pinned batch ms|tput|frame tput|"
             "pinned tput|pinned batch tput|best/simd|best/threads|vec kernel ms|floor ms|"
             "x floor",
             2, legend);
    for (int w = 0; w < b->nwl; w++) {
        const Stat *lat[4] = {
            find(b, w, g, "frame-compact", KIND_ALL), find(b, w, g, "frame-default", KIND_ALL),
            find(b, w, g, "pinned", KIND_ALL), find(b, w, g, "pinned-batch", KIND_ALL)};
        const Stat *vec = find(b, w, g, "dense-vec", KIND_ALL);
        if (!lat[0] && !lat[1] && !lat[2] && !lat[3] && !vec) continue;
        if (!(r = tab_add(&t[T_PIN], b->wls[w].size_name, b->wls[w].mode_name, NULL))) break;
        for (int i = 0; i < 4; i++)
            if (lat[i]) fms(r[2 + i], lat[i]->ms);
        for (int i = 0; i < TPUT_VARIANTS; i++) {
            const Stat *x = find(b, w, g, tput_variant[i], KIND_ALL);
            if (x) fms(r[6 + i], x->ms);
        }
        const char *which = "", *sw = "";
        const Stat *bt = best_tput(b, w, &which), *sm = cpu_best_simd(b, w, &sw),
                   *th = cpu_best_threads(b, w);
        if (bt && sm) fx(r[10], sm->ms / bt->ms);
        if (bt && th) fx(r[11], th->ms / bt->ms);
        if (vec && vec->has_dev) {
            fms(r[12], vec->kernel_ms);
            const double fl = hbm_floor_ms(b, vec);
            if (fl > 0) {
                fms(r[13], fl);
                snprintf(r[14], sizeof(Cell), "%.2fx", vec->kernel_ms / fl);
            }
        }
    }
    /* Micro-benchmark. */
    tab_init(&t[T_MICRO], "CPU DSP functions, ns per block (median)",
             "function|backend|ns/block|x264 (Zen 3)|ratio", 2,
             "One call per block over 2048 real blocks of the first workload (flat scaling, "
             "their QPs) added into a 64x64 area (cache resident), as checkasm times "
             "x264's add4x4_idct / add8x8_idct8. idct_add takes int32 dequantised input, "
             "idct_add16 int16 (x264's interface); both prove the 16-bit shortcut per "
             "block. x264's figures are for a Zen 3 core, not this CPU: the ratio is "
             "indicative only.");
    for (int i = 0; i < b->nmicro; i++) {
        const Micro *m = &b->micro[i];
        if (!(r = tab_add(&t[T_MICRO], m->fn, m->backend, NULL))) break;
        snprintf(r[2], sizeof(Cell), "%.2f", m->ns);
        const double ref =
            !strcmp(m->fn, "idct_add_4x4") || !strcmp(m->fn, "idct_add16_4x4")   ? X264_ADD4_NS
            : !strcmp(m->fn, "idct_add_8x8") || !strcmp(m->fn, "idct_add16_8x8") ? X264_ADD8_NS
                                                                                 : 0;
        if (ref > 0) {
            snprintf(r[3], sizeof(Cell), "%.1f", ref);
            snprintf(r[4], sizeof(Cell), "%.2f", m->ns / ref);
        }
    }
    /* Targets. */
    tab_init(&t[T_TGT], "Targets of issue 3", "target|workload|measured|met", 2,
             "met: yes / no; \"-\" = not measured in this run (backend not run or skipped).");
    for (int i = 0; i < b->ntargets; i++) {
        const Target *x = &b->targets[i];
        if (!(r = tab_add(&t[T_TGT], x->what, x->where, x->value))) break;
        snprintf(r[3], sizeof(Cell), "%s", x->met < 0 ? "-" : x->met ? "yes" : "no");
    }
}

static Target *add_target(Bench *b, const char *what, const char *where) {
    if (b->ntargets >= MAX_TARGETS) return NULL;
    Target *t = &b->targets[b->ntargets++];
    memset(t, 0, sizeof(*t));
    snprintf(t->what, sizeof(t->what), "%s", what);
    snprintf(t->where, sizeof(t->where), "%.63s", where);
    snprintf(t->value, sizeof(t->value), "not measured");
    t->met = -1;
    return t;
}

void bh264_eval_targets(Bench *b) {
    const char *g = bh264_gpu_label(b);
    const int emu = b->cuda_emu;
    /* The gpu throughput against the best CPU paths; then the same with the best cuda
     * throughput variant (frame inverse, registered memory; see the "Registered (pinned)"
     * table). */
    for (int best = 0; best < 2; best++)
        for (int w = 0; w < b->nwl; w++) {
            char where[80];
            snprintf(where, sizeof(where), "%s %s", b->wls[w].size_name, b->wls[w].mode_name);
            Target *t = add_target(b,
                                   best ? "best gpu tput >= 5x simd (1 thread) and > threads"
                                        : "gpu tput >= 5x simd (1 thread) and > threads",
                                   where);
            if (!t) return;
            const char *sw = "", *tw = "";
            /* The all-core path: the faster of its batch and dense variants. */
            const Stat *s = cpu_best_simd(b, w, &sw), *th = cpu_best_threads(b, w),
                       *tp =
                           best ? best_tput(b, w, &tw) : find(b, w, g, "throughput", KIND_ALL);
            if (!best && !tp) tp = find(b, w, g, "default", KIND_ALL);
            if (emu) {
                snprintf(t->value, sizeof(t->value), "n/a (emulation)");
            } else if (s && th && tp) {
                const double x = s->ms / tp->ms, y = th->ms / tp->ms;
                if (best)
                    snprintf(t->value, sizeof(t->value), "%s: %.2fx simd, %.2fx threads", tw, x,
                             y);
                else
                    snprintf(t->value, sizeof(t->value), "%.2fx simd %s, %.2fx threads", x, sw,
                             y);
                t->met = x >= 5 && y > 1;
            }
        }
    /* The fast dense kernel, then the dense baseline, against the HBM floor. */
    for (int v = 0; v < 2; v++)
        for (int w = 0; w < b->nwl; w++) {
            if (strcmp(b->wls[w].size_name, "1080p") || strcmp(b->wls[w].mode_name, "intra"))
                continue;
            Target *t = add_target(b,
                                   v ? "dense kernel <= 2x HBM floor"
                                     : "fast dense kernel (dense_vec) <= 2x HBM floor",
                                   "1080p intra");
            if (!t) return;
            const Stat *d = find(b, w, g, v ? "dense" : "dense-vec", KIND_ALL);
            if (emu) {
                snprintf(t->value, sizeof(t->value), "n/a (emulation)");
            } else if (d && d->has_dev && b->hbm_gbs > 0) {
                const double floor_ms = hbm_floor_ms(b, d);
                snprintf(t->value, sizeof(t->value), "%.4f ms = %.2fx floor %.4f ms",
                         d->kernel_ms, d->kernel_ms / floor_ms, floor_ms);
                t->met = d->kernel_ms <= 2 * floor_ms;
            } else if (d && d->has_dev) {
                snprintf(t->value, sizeof(t->value), "no HBM ceiling for this GPU (--hbm-gbs)");
            }
        }
    /* Per size, the faster simd interface: idct_add (int32 input) or idct_add16 (int16,
     * x264's). */
    for (int is8 = 0; is8 < 2; is8++) {
        const Micro *best = NULL;
        for (int i = 0; i < b->nmicro; i++) {
            const Micro *m = &b->micro[i];
            if (strcmp(m->backend, "simd")) continue;
            if (strcmp(m->fn, is8 ? "idct_add_8x8" : "idct_add_4x4") &&
                strcmp(m->fn, is8 ? "idct_add16_8x8" : "idct_add16_4x4"))
                continue;
            if (!best || m->ns < best->ns) best = m;
        }
        if (!best) continue;
        Target *t = add_target(b,
                               is8 ? "simd add8x8_idct8 vs x264 ~14 ns (Zen 3): <= 1.5x"
                                   : "simd add4x4_idct vs x264 ~3.6 ns (Zen 3): <= 1.5x",
                               "per block");
        if (!t) return;
        const double ref = is8 ? X264_ADD8_NS : X264_ADD4_NS;
        snprintf(t->value, sizeof(t->value), "%s %.2f ns = %.2fx (other CPU)", best->fn,
                 best->ns, best->ns / ref);
        t->met = best->ns <= 1.5 * ref; /* the issue: within 1.5x of x264 */
    }
}

/* ---- files ---------------------------------------------------------------------------------
 */

static void csv_str(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* One CSV line: section,size,mode,backend,variant,class,value, then the 9 columns of a
 * measurement (empty without one), then a note. */
static void csv_line(FILE *f, const char *section, const WlInfo *wi, const char *backend,
                     const char *variant, const char *cls, const char *value, const Stat *s,
                     const char *nt) {
    const char *const fields[6] = {
        section, wi ? wi->size_name : "", wi ? wi->mode_name : "", backend, variant, cls};
    for (int i = 0; i < 6; i++) {
        csv_str(f, fields[i]);
        fputc(',', f);
    }
    fprintf(f, "%s,", value);
    if (s && s->done) {
        fprintf(f, "%.6g,", s->ms);
        if (s->has_dev)
            fprintf(f, "%.6g,%.6g,%.6g,%.6g,%.0f,%.0f,", s->kernel_ms, s->h2d_ms, s->d2h_ms,
                    s->total_ms, s->h2d_bytes, s->d2h_bytes);
        else
            fprintf(f, ",,,,,,");
        fprintf(f, "%d,%d,", s->runs, s->mismatch);
    } else {
        fprintf(f, ",,,,,,,,%s,", s && s->mismatch ? "1" : "");
    }
    csv_str(f, nt ? nt : s && !s->done ? s->err : "");
    fputc('\n', f);
}

static void write_csv(FILE *f, const Bench *b) {
    fprintf(f, "section,size,mode,backend,variant,class,value,ms,kernel_ms,h2d_ms,d2h_ms,"
               "total_ms,h2d_bytes,d2h_bytes,runs,mismatch,note\n");
    char v[64];
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        for (int k = 0; k < KINDS; k++) {
            const double nz = k == KIND_ALL ? (double)(s->blocks[0] + s->blocks[1])
                                            : (double)s->blocks[k - 1];
            const double tot = k == KIND_ALL ? (double)(s->blocks_total[0] + s->blocks_total[1])
                                             : (double)s->blocks_total[k - 1];
            snprintf(v, sizeof(v), "%.6g", tot > 0 ? nz / tot : 0);
            csv_line(f, "workload", wi, "", "nonzero_ratio", kind_name[k], v, NULL, NULL);
        }
        const size_t by[3] = {s->bytes_dense, s->bytes_compacted, s->bytes_sparse};
        static const char *const bn[3] = {"bytes_dense", "bytes_compacted", "bytes_sparse"};
        for (int i = 0; i < 3; i++) {
            snprintf(v, sizeof(v), "%.0f", (double)by[i] / wi->nframes);
            csv_line(f, "workload", wi, "", bn[i], "all", v, NULL, NULL);
        }
        snprintf(v, sizeof(v), "%d", wi->nframes);
        csv_line(f, "workload", wi, "", "frames", "all", v, NULL, wi->source);
        snprintf(v, sizeof(v), "%.4g", s->psnr_y);
        csv_line(f, "workload", wi, "", "psnr_y", "all", v, NULL, NULL);
    }
    for (int i = 0; i < b->nrows; i++) {
        const Row *r = &b->rows[i];
        csv_line(f, "time", &b->wls[r->wl], r->backend, r->variant, kind_name[r->kind], "",
                 &r->st, NULL);
    }
    for (int i = 0; i < b->nmicro; i++) {
        snprintf(v, sizeof(v), "%.4g", b->micro[i].ns);
        csv_line(f, "micro", NULL, b->micro[i].backend, b->micro[i].fn, "", v, NULL,
                 "ns per block");
    }
    for (int i = 0; i < b->ntargets; i++) {
        const Target *t = &b->targets[i];
        char nt[200];
        snprintf(nt, sizeof(nt), "%s: %s",
                 t->met < 0 ? "not measured"
                 : t->met   ? "met"
                            : "missed",
                 t->value);
        csv_line(f, "target", NULL, "", t->what, t->where, "", NULL, nt);
    }
}

static void json_stat(FILE *f, const Stat *s) {
    fprintf(f, "\"done\": %s", s->done ? "true" : "false");
    if (s->done) {
        fprintf(f, ", \"ms_per_frame\": %.6g, \"runs\": %d, \"mismatch\": %s", s->ms, s->runs,
                s->mismatch ? "true" : "false");
        if (s->has_dev)
            fprintf(f,
                    ", \"kernel_ms\": %.6g, \"h2d_ms\": %.6g, \"d2h_ms\": %.6g, \"total_ms\": "
                    "%.6g, \"h2d_bytes\": %.0f, \"d2h_bytes\": %.0f",
                    s->kernel_ms, s->h2d_ms, s->d2h_ms, s->total_ms, s->h2d_bytes,
                    s->d2h_bytes);
    } else {
        fprintf(f, ", \"error\": %s", bench_jq(s->err));
    }
}

static void write_json(FILE *f, const Bench *b) {
    fprintf(f,
            "{\n  \"tool\": \"vidkern-bench h264\",\n  \"version\": %s,\n  \"command\": %s,\n  "
            "\"date\": %s,\n  \"commit\": %s,\n  \"device\": {\"cpu\": %s, \"cores\": %d, "
            "\"threads\": %d, \"gpu\": %s",
            bench_jq(vidk_version()), bench_jq(b->mt.command), bench_jq(b->mt.date),
            bench_jq(VIDK_GIT_COMMIT), bench_jq(b->mt.cpu), b->mt.cores,
            b->gen_ctx ? vidk_get_threads(b->gen_ctx) : 0, bench_jq(b->mt.gpu));
    fprintf(f,
            ", \"hbm_gbs\": %.6g, \"pcie_gbs\": %.6g, \"gpu_contexts\": %d},\n  \"notes\": [",
            b->hbm_gbs, b->pcie_gbs, b->ngpu_ctx);
    bench_notes_json(f, &b->notes);
    fprintf(f, "],\n  \"workloads\": [");
    for (int w = 0; w < b->nwl; w++) {
        const WlInfo *wi = &b->wls[w];
        const H264wStats *s = &wi->stats;
        fprintf(f,
                "%s\n    {\"size\": %s, \"mode\": %s, \"width\": %d, \"height\": %d, "
                "\"frames\": %d, \"source\": %s",
                w ? "," : "", bench_jq(wi->size_name), bench_jq(wi->mode_name), wi->w, wi->h,
                wi->nframes, bench_jq(wi->source));
        fprintf(
            f,
            ",\n     \"blocks\": {\"4x4\": [%zu, %zu], \"8x8\": [%zu, %zu]}, \"dc_groups\": "
            "%zu, \"nonzero_levels\": %zu,\n     \"bytes_per_frame\": {\"dense\": %.0f, "
            "\"compacted\": %.0f, \"sparse\": %.0f},\n     \"macroblocks\": {\"total\": "
            "%zu, \"intra\": %zu, \"i16x16\": %zu, \"t8x8\": %zu, \"mv8x8\": %ld}, "
            "\"psnr_y\": %.4g, \"prep_s\": %.3g,\n     \"results\": [",
            s->blocks[0], s->blocks_total[0], s->blocks[1], s->blocks_total[1], s->dc_groups,
            s->nonzero, (double)s->bytes_dense / wi->nframes,
            (double)s->bytes_compacted / wi->nframes, (double)s->bytes_sparse / wi->nframes,
            s->mb_total, s->mb_intra, s->mb_i16, s->mb_8x8, s->mb_split, s->psnr_y, s->prep_s);
        int first = 1;
        for (int i = 0; i < b->nrows; i++) {
            const Row *r = &b->rows[i];
            if (r->wl != w) continue;
            fprintf(f, "%s\n       {\"backend\": %s, \"variant\": %s, \"class\": \"%s\", ",
                    first ? "" : ",", bench_jq(r->backend), bench_jq(r->variant),
                    kind_name[r->kind]);
            json_stat(f, &r->st);
            fprintf(f, "}");
            first = 0;
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n  ],\n  \"microbench\": [");
    for (int i = 0; i < b->nmicro; i++) {
        fprintf(f, "%s{\"backend\": \"%s\", \"function\": \"%s\", \"ns_per_block\": %.4g}",
                i ? ", " : "", b->micro[i].backend, b->micro[i].fn, b->micro[i].ns);
    }
    fprintf(f, "],\n  \"targets\": [");
    for (int i = 0; i < b->ntargets; i++) {
        const Target *t = &b->targets[i];
        fprintf(f, "%s\n    {\"target\": %s, \"workload\": %s, \"measured\": %s, \"met\": %s}",
                i ? "," : "", bench_jq(t->what), bench_jq(t->where), bench_jq(t->value),
                t->met < 0 ? "null"
                : t->met   ? "true"
                           : "false");
    }
    fprintf(f, "\n  ],\n  \"mismatches\": %d,\n  \"failures\": %d\n}\n", b->mismatches,
            b->failures);
}

void bh264_write_header(FILE *f, const Bench *b, int md) {
    char thr[48];
    snprintf(thr, sizeof(thr), " (threads backend: %d)",
             b->gen_ctx ? vidk_get_threads(b->gen_ctx) : 0);
    bench_print_header(f, &b->mt, "h264", "h264 (Wang et al. 2013 on this machine)", thr, md);
    if (b->hbm_gbs > 0)
        fprintf(f, "%seilings: PCIe %.0f GB/s pinned per direction, device memory %.0f GB/s\n",
                md ? "- C" : "c", b->pcie_gbs, b->hbm_gbs);
    bench_notes_print(f, &b->notes, md ? "- Note: " : "note: ");
}

void bh264_write_report(FILE *f, int what, void *arg) {
    const Report *r = arg;
    if (what == BENCH_CSV) {
        write_csv(f, r->b);
    } else if (what == BENCH_JSON) {
        write_json(f, r->b);
    } else {
        bh264_write_header(f, r->b, 1);
        for (int i = 0; i < T_COUNT; i++)
            bh264_tab_print(f, &r->t[i], 1);
    }
}
