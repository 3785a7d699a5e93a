#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_util.h"
#include "cli.h"
#include "gen.h"
#include "picio.h"

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_dev_add(BenchDevTimes *d, double kernel, double h2d, double d2h, double total) {
    if (d->n >= BENCH_MAX_SAMPLES) return;
    d->v[0][d->n] = kernel, d->v[1][d->n] = h2d, d->v[2][d->n] = d2h, d->v[3][d->n] = total;
    d->n++;
}

void bench_dev_medians(BenchDevTimes *d, double *kernel, double *h2d, double *d2h,
                       double *total) {
    *kernel = bench_median(d->v[0], d->n), *h2d = bench_median(d->v[1], d->n);
    *d2h = bench_median(d->v[2], d->n), *total = bench_median(d->v[3], d->n);
}

int bench_split_list(const char *cmd, const char *opt, const char *s, char *out, size_t item,
                     int max) {
    int n = 0;
    const char *p = s;
    while (*p) {
        const size_t l = strcspn(p, ",");
        if (!l || l >= item || n >= max) {
            cli_error(cmd, "%s: bad list '%s'", opt, s);
            return -1;
        }
        memcpy(out + (size_t)n * item, p, l);
        out[(size_t)n++ * item + l] = 0;
        p += l;
        if (*p) p++;
    }
    if (!n) cli_error(cmd, "%s: empty list", opt);
    return n ? n : -1;
}

void bench_meta_fill(BenchMeta *mt, const char *prefix, int argc, char **argv, int device) {
    report_cpu_name(mt->cpu, sizeof(mt->cpu));
    mt->cores = vidk_cpu_count_online();
    snprintf(mt->gpu, sizeof(mt->gpu), "none");
    VidkDeviceInfo di;
    if (device >= 0 && vidk_cuda_device_info(device, &di) == 0)
        snprintf(mt->gpu, sizeof(mt->gpu), "%s (%d SMs, compute %d.%d)", di.name,
                 di.multiprocessors, di.major, di.minor);
    report_utc_date(mt->date, sizeof(mt->date));
    report_command_line(mt->command, sizeof(mt->command), prefix, argc, argv);
}

void bench_say_start(const char *cmd, const BenchMeta *mt, int quiet) {
    if (!quiet)
        fprintf(stderr, "vidkern-bench %s: %s; %s, %d cores; GPU %s\n", cmd, mt->command,
                mt->cpu, mt->cores, mt->gpu);
}

void bench_print_header(FILE *f, const BenchMeta *mt, const char *title, const char *md_title,
                        const char *extra, int md) {
    if (md)
        fprintf(f,
                "# vidkern-bench %s\n\n- Device: %s, %d cores online%s; GPU: %s\n- Date: %s\n"
                "- Commit: %s\n- vidkern %s\n- Command: `%s`\n",
                md_title, mt->cpu, mt->cores, extra, mt->gpu, mt->date, VIDK_GIT_COMMIT,
                vidk_version(), mt->command);
    else
        fprintf(f,
                "vidkern-bench %s  (%s)\ndevice: %s, %d cores online%s; GPU: %s\ndate: %s  "
                "commit: %s\n",
                title, mt->command, mt->cpu, mt->cores, extra, mt->gpu, mt->date,
                VIDK_GIT_COMMIT);
}

void bench_notes_init(BenchNotes *nt, int max, size_t len) {
    nt->n = 0, nt->max = max, nt->len = len;
}

void bench_note(BenchNotes *nt, const char *fmt, ...) {
    if (nt->n >= nt->max) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nt->text[nt->n++], nt->len, fmt, ap);
    va_end(ap);
}

void bench_notes_print(FILE *f, const BenchNotes *nt, const char *prefix) {
    for (int i = 0; i < nt->n; i++)
        fprintf(f, "%s%s\n", prefix, nt->text[i]);
}

void bench_notes_json(FILE *f, const BenchNotes *nt) {
    for (int i = 0; i < nt->n; i++) {
        fprintf(f, "%s", i ? ", " : "");
        report_json_str(f, nt->text[i]);
    }
}

int bench_open_backends(const CliCommon *c, const char *cmd, int quiet_open,
                        VidkBackend *backends, int *n, VidkContext **ctx, BenchNotes *notes) {
    for (int k = 0; k < *n; k++) {
        const VidkBackend be = backends[k];
        CliCommon cc = *c;
        cc.backend = be;
        if (quiet_open) cc.quiet = 1;
        if (vidk_backend_available(be)) ctx[be] = cli_open(&cc, cmd);
        if (!ctx[be]) {
            bench_note(notes, "backend %s skipped: not usable on this machine/build",
                       vidk_backend_name(be));
            if (!c->quiet)
                fprintf(stderr, "vidkern-bench %s: backend %s not usable here, skipped\n", cmd,
                        vidk_backend_name(be));
            memmove(&backends[k], &backends[k + 1], sizeof(backends[0]) * (size_t)(*n - k - 1));
            (*n)--;
            k--;
        }
    }
    return *n ? 0 : (cli_error(cmd, "no usable backend"), -1);
}

const char *bench_backend_label(VidkContext *const *ctx, VidkBackend be, char *buf, size_t n) {
    if (be == VIDK_BACKEND_THREADS && ctx[be])
        snprintf(buf, n, "threads(%d)", vidk_get_threads(ctx[be]));
    else
        snprintf(buf, n, "%s", vidk_backend_name(be));
    return buf;
}

#define BENCH_OPT_HELP 2
/* argv[*i]: BENCH_OPT_HELP, 1 when taken (its value consumed), 0 when not one of these, -1
 * after a message. */
static int bench_opt(BenchOpts *o, CliCommon *c, const char *cmd, int argc, char **argv,
                     int *i) {
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return BENCH_OPT_HELP;
    if (strcmp(a, "--json")) {
        const int r = cli_common_opt(c, cmd, argc, argv, i);
        if (r) return r;
    }
    static const char *const names[] = {"--csv",      "--json",   "--markdown",
                                        "--backends", "--source", "--video",
                                        "--frames",   "--runs",   "--max-seconds"};
    int k = 0;
    while (k < 9 && strcmp(a, names[k]))
        k++;
    if (k == 9 || (k == 0 && (o->no & BENCH_NO_CSV)) || (k == 7 && (o->no & BENCH_NO_RUNS)) ||
        (k == 8 && (o->no & BENCH_NO_MAX_SECONDS)))
        return 0;
    if (!(v = cli_value(cmd, argc, argv, i))) return -1;
    const char **str[6] = {&o->csv, &o->json, &o->md, &o->backends, &o->source, &o->video};
    if (k < 6) *str[k] = v;
    if (k == 6)
        return cli_parse_int(cmd, a, v, o->frames_lo, o->frames_hi, &o->frames) < 0 ? -1 : 1;
    if (k == 7) return cli_parse_int(cmd, a, v, 1, o->runs_hi, &o->runs) < 0 ? -1 : 1;
    if (k == 8) return cli_parse_double(cmd, a, v, 0, 1e6, &o->max_seconds) < 0 ? -1 : 1;
    return 1;
}

/* Whether `a` is one of the "|"-separated names. */
static int name_is(const char *names, const char *a) {
    const size_t l = strlen(a);
    for (const char *p = names; *p;) {
        const size_t k = strcspn(p, "|");
        if (k == l && !strncmp(p, a, l)) return 1;
        p += k;
        if (*p) p++;
    }
    return 0;
}

int bench_parse_args(BenchOpts *o, CliCommon *c, const char *cmd, int argc, char **argv,
                     const BenchArg *args, void (*help)(void)) {
    cli_common_init(c);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        const int r = bench_opt(o, c, cmd, argc, argv, &i);
        if (r == BENCH_OPT_HELP) return help(), 1;
        if (r < 0) return -1;
        if (r) continue;
        if (strncmp(a, "--", 2))
            return cli_error(cmd, "unexpected argument '%s' (see --help)", a), -1;
        const BenchArg *k = args;
        while (k->name && !name_is(k->name, a))
            k++;
        if (!k->name) return cli_error(cmd, "unknown option '%s' (see --help)", a), -1;
        if (k->given) *k->given = 1;
        if (k->flag) {
            *k->flag = 1;
            continue;
        }
        if (!(v = cli_value(cmd, argc, argv, &i))) return -1;
        if (k->str)
            *k->str = v;
        else if (k->num ? cli_parse_int(cmd, a, v, (long)k->lo, (long)k->hi, k->num) < 0
                        : cli_parse_double(cmd, a, v, k->lo, k->hi, k->dbl) < 0)
            return -1;
    }
    return 0;
}

int bench_choice(const char *cmd, const char *opt, const char *v, const char *choices) {
    char list[200] = "";
    int k = 0, n = 0;
    for (const char *p = choices; *p; k++) {
        const size_t l = strcspn(p, "|");
        if (strlen(v) == l && !strncmp(v, p, l)) return k;
        p += l;
        /* "a, b or c" */
        n += snprintf(list + n, sizeof(list) - (size_t)n, "%s%.*s",
                      !k   ? ""
                      : *p ? ", "
                           : " or ",
                      (int)l, p - l);
        if (*p) p++;
    }
    return cli_error(cmd, "%s: '%s' is not %s", opt, v, list), -1;
}

int bench_parse_backends(const char *cmd, const char *list, VidkBackend *out, int *n) {
    char item[16][16];
    *n = 0;
    if (!list) {
        for (int be = VIDK_BACKEND_C; be < VIDK_BACKEND_COUNT; be++)
            out[(*n)++] = (VidkBackend)be;
        return 0;
    }
    const int k = bench_split_list(cmd, "--backends", list, item[0], sizeof(item[0]), 16);
    for (int i = 0; i < k; i++) {
        const int be = vidk_backend_from_name(item[i]);
        if (be <= 0)
            return cli_error(cmd, "--backends: unknown backend '%s' (c, simd, threads, cuda)",
                             item[i]),
                   -1;
        int dup = 0;
        for (int j = 0; j < *n; j++)
            dup |= out[j] == (VidkBackend)be;
        if (!dup) out[(*n)++] = (VidkBackend)be;
    }
    return k < 0 ? -1 : 0;
}

int bench_parse_ints(const char *cmd, const char *opt, const char *s, long lo, long hi,
                     int *out, int *n) {
    char list[16][16];
    const int k = bench_split_list(cmd, opt, s, list[0], sizeof(list[0]), 16);
    if (k < 0) return -1;
    for (int i = 0; i < k; i++) {
        long v;
        if (cli_parse_int(cmd, opt, list[i], lo, hi, &v) < 0) return -1;
        out[i] = (int)v;
    }
    *n = k;
    return 0;
}

int bench_parse_wxh(const char *s, int max_h, int *w, int *h) {
    char *end;
    const long a = strtol(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X')) return -1;
    const char *s2 = end + 1;
    const long c = strtol(s2, &end, 10);
    if (end == s2 || *end || a < 16 || c < 16 || a > 8192 || c > max_h) return -1;
    *w = (int)a, *h = (int)c;
    return 0;
}

void bench_copy_pic(VidkPicture *dst, const VidkPicture *src) {
    for (int p = 0; p < (src->chroma == VIDK_CHROMA_400 ? 1 : 3); p++) {
        int pw, ph;
        vidk_picture_plane_size(src, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            memcpy((uint8_t *)dst->data[p] + (ptrdiff_t)y * dst->stride[p],
                   (const uint8_t *)src->data[p] + (ptrdiff_t)y * src->stride[p], (size_t)pw);
    }
}

int bench_size_of(const char *name, int even, int *w, int *h) {
    static const struct {
        const char *n;
        int w, h;
    } named[] = {{"qcif", 176, 144},  {"cif", 352, 288},     {"480p", 854, 480},
                 {"720p", 1280, 720}, {"1080p", 1920, 1080}, {"2160p", 3840, 2160},
                 {"4k", 3840, 2160}};
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (!strcmp(name, named[i].n)) {
            *w = named[i].w, *h = named[i].h;
            return 0;
        }
    int a, c;
    if (bench_parse_wxh(name, 4320, &a, &c) < 0 || (even && (a % 2 || c % 2))) return -1;
    *w = a, *h = c;
    return 0;
}

int bench_parse_sizes(const char *cmd, const char *s, int even, char *out, size_t item,
                      int max) {
    const int n = bench_split_list(cmd, "--sizes", s, out, item, max);
    for (int i = 0; i < n; i++) {
        int w, h;
        if (bench_size_of(out + (size_t)i * item, even, &w, &h) < 0)
            return cli_error(
                       cmd,
                       "--sizes: '%s' is not cif, 720p, 1080p, 2160p or WxH (%s16..8192 x "
                       "16..4320)",
                       out + (size_t)i * item, even ? "even, " : ""),
                   -1;
    }
    return n;
}

void bench_row(FILE *f, int md, const char *fmt, ...) {
    char mdfmt[512];
    size_t o = 0;
    if (md) {
        const char *p = fmt;
        int cells = 0;
        while (*p && o + 8 < sizeof(mdfmt)) {
            while (*p == ' ' || *p == '\n')
                p++;
            if (!*p) break;
            o += (size_t)snprintf(mdfmt + o, sizeof(mdfmt) - o, cells++ ? " | " : "| ");
            while (*p && *p != ' ' && *p != '\n' && o + 8 < sizeof(mdfmt)) {
                mdfmt[o++] = *p;
                if (*p++ != '%') continue;
                if (*p == '%') {
                    mdfmt[o++] = *p++;
                    continue;
                }
                while (*p == '-' || *p == '+' || *p == '0' || (*p >= '1' && *p <= '9'))
                    p++; /* flags and width: the cells of markdown are not aligned */
            }
        }
        snprintf(mdfmt + o, sizeof(mdfmt) - o, " |\n");
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, md ? mdfmt : fmt, ap);
    va_end(ap);
}

const char *bench_jq(const char *s) {
    static char buf[8][6 * 2048 + 16];
    static int next;
    char *o = buf[next], *const end = o + sizeof(buf[0]) - 8;
    next = (next + 1) % 8;
    char *p = o;
    *p++ = '"';
    for (; *s && p < end; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            *p++ = '\\', *p++ = (char)c;
        else if (c < 0x20)
            p += sprintf(p, "\\u%04x", c);
        else
            *p++ = (char)c;
    }
    *p++ = '"';
    *p = 0;
    return o;
}

int bench_verdict(const char *cmd, int mismatches, const char *what, int failures) {
    if (mismatches) cli_error(cmd, "%d %s", mismatches, what);
    if (failures) cli_error(cmd, "%d configuration(s) failed", failures);
    return mismatches || failures;
}

typedef struct {
    BenchWriteFn fn;
    void *arg;
    int what;
} WriteCall;

static void write_call(FILE *f, void *arg) {
    const WriteCall *w = arg;
    w->fn(f, w->what, w->arg);
}

int bench_write_outputs(const char *cmd, const char *csv, const char *json, const char *md,
                        BenchWriteFn fn, void *arg) {
    const char *path[3] = {csv, json, md};
    int ret = 0;
    for (int k = BENCH_CSV; k <= BENCH_MD; k++) {
        WriteCall w = {fn, arg, k};
        if (path[k] && report_write_file(cmd, path[k], write_call, &w) < 0) ret = -1;
    }
    return ret;
}

int bench_make_pics(VidkPicture *pics, int n, const Mosaic *m, int w, int h, VidkChroma c) {
    VidkGen *g = NULL;
    int e = 0;
    if (!m) {
        VidkGenParams gp;
        vidk_gen_default(&gp);
        gp.w = w, gp.h = h, gp.frames = n, gp.chroma = c;
        if ((e = vidk_gen_open(&g, &gp)) < 0) return e;
    }
    for (int i = 0; i < n && e >= 0; i++) {
        if ((e = vidk_picture_alloc(&pics[i], w, h, c, 8, VIO_PAD)) < 0) break;
        e = m ? mosaic_frame(m, i, &pics[i]) : vidk_gen_frame(g, i, &pics[i]);
    }
    vidk_gen_close(&g);
    if (e < 0)
        for (int i = 0; i < n; i++)
            vidk_picture_free(&pics[i]);
    return e < 0 ? e : 0;
}

int bench_open_mosaic(Mosaic **m, const char *dir, const char *cmd, int quiet) {
    char err[256];
    if (dir && mosaic_open(m, dir, 2, err, sizeof(err)) == 0) return 0;
    if (!quiet)
        fprintf(stderr, "vidkern-bench %s: no real clips found (%s): generated video only\n",
                cmd, dir ? dir : "no folder; set --video DIR or VIDK_VIDEO_DIR");
    return -1;
}

int bench_make_dir(const char *dir) {
    struct stat st;
    if (!stat(dir, &st)) return S_ISDIR(st.st_mode) ? 0 : -1;
    return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

int bench_code_frames(VidkEncoder *e, int n, VidkPicture (*pic)(void *, int),
                      VidkPicture *recon, VidkEncMaps *maps,
                      void (*each)(void *, int, const VidkEncFrameInfo *), void *arg, char *err,
                      size_t errlen) {
    VidkPicture ring[VIDK_ENC_MAX_PENDING]; /* the pictures in flight */
    VidkEncGeometry g;
    vidk_enc_geometry(e, &g);
    int nsent = 0, nrecv = 0, ended = 0, ret;
    while (nrecv < n) {
        if (nsent < n && nsent - nrecv < g.max_pending) {
            VidkPicture *p = &ring[nsent % VIDK_ENC_MAX_PENDING];
            *p = pic(arg, nsent);
            if ((ret = vidk_enc_send(e, p)) < 0) {
                snprintf(err, errlen, "frame %d: send: %s", nsent, vidk_strerror(ret));
                return ret;
            }
            nsent++;
            continue;
        }
        if (nsent == n && !ended) { /* the end of the input (B-frames: the last anchor) */
            ended = 1;
            if ((ret = vidk_enc_send(e, NULL)) < 0) {
                snprintf(err, errlen, "end of input: %s", vidk_strerror(ret));
                return ret;
            }
        }
        VidkEncFrameInfo fi;
        memset(&fi, 0, sizeof(fi));
        if ((ret = vidk_enc_receive(e, recon, maps, &fi)) < 0) {
            snprintf(err, errlen, "frame %d: receive: %s", nrecv, vidk_strerror(ret));
            return ret;
        }
        each(arg, nrecv++, &fi);
    }
    return 0;
}
