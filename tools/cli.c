#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void cli_common_init(CliCommon *c) {
    memset(c, 0, sizeof(*c));
    c->backend = VIDK_BACKEND_AUTO;
    c->cpumask = ~0u;
}

const char *cli_program = "vidkern";

int cli_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s %s: ", cli_program, cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static const char *const common_value_opts[] = {"--backend", "--threads", "--cpumask",
                                                "--device", NULL};

static int in_list(const char *a, size_t n, const char *const *list) {
    for (; list && *list; list++)
        if (strlen(*list) == n && !strncmp(a, *list, n)) return 1;
    return 0;
}

int cli_takes_value(const char *a, const char *const *value_opts) {
    const size_t n = strlen(a);
    return in_list(a, n, common_value_opts) || in_list(a, n, value_opts);
}

static char **args_mem;
static void args_free(void) {
    free(args_mem);
    args_mem = NULL;
}

int cli_args(const char *cmd, int *argc, char ***argv, const char *const *value_opts) {
    const int n = *argc;
    char **in = *argv;
    char **out = malloc(sizeof(*out) * (2 * (size_t)n + 1));
    if (!out) return cli_error(cmd, "out of memory"), -1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        char *a = in[i];
        char *eq = i > 0 && !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
        if (eq && (in_list(a, (size_t)(eq - a), common_value_opts) ||
                   in_list(a, (size_t)(eq - a), value_opts))) {
            *eq = 0;
            out[k++] = a;
            out[k++] = eq + 1;
        } else {
            out[k++] = a;
        }
    }
    out[k] = NULL;
    if (!args_mem) atexit(args_free);
    free(args_mem);
    args_mem = out;
    *argc = k;
    *argv = out;
    return 0;
}

int cli_output_is_input(const char *cmd, const char *opt, const char *out,
                        const char *const *ins, int n) {
    if (!out) return 0;
    for (int k = 0; k < n; k++) {
        if (!ins[k] || !vio_same_file(out, ins[k])) continue;
        const int so = !strcmp(out, "-"), si = !strcmp(ins[k], "-");
        return cli_error(cmd, "%s%s%s%s%s is the input file %s%s%s: refusing to overwrite it",
                         opt, *opt ? " " : "", so ? "" : "'", so ? "stdout" : out,
                         so ? "" : "'", si ? "" : "'", si ? "stdin" : ins[k], si ? "" : "'");
    }
    return 0;
}

int cli_outputs_clash(const char *a, const char *b) {
    struct stat st;
    if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-")) return 0;
    if (!strcmp(a, b)) return stat(a, &st) < 0 || S_ISREG(st.st_mode);
    return vio_same_file(a, b);
}

const char *cli_value(const char *cmd, int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_error(cmd, "option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_int_value(const char *cmd, int argc, char **argv, int *i, long lo, long hi, long *out) {
    const char *opt = argv[*i], *v = cli_value(cmd, argc, argv, i);
    return v ? cli_parse_int(cmd, opt, v, lo, hi, out) : -1;
}

int cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi,
                  long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_error(cmd, "%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                     double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        cli_error(cmd, "%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_size(const char *cmd, const char *opt, const char *s, int *w, int *h) {
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X')) goto bad;
    const char *s2 = end + 1;
    long b = strtol(s2, &end, 10);
    if (errno || end == s2 || *end) goto bad;
    if (a < 1 || b < 1 || a > VIDK_MAX_PICTURE_SIDE || b > VIDK_MAX_PICTURE_SIDE) goto bad;
    *w = (int)a;
    *h = (int)b;
    return 0;
bad:
    cli_error(cmd, "%s: '%s' is not a size WxH with sides in [1, %d]", opt, s,
              VIDK_MAX_PICTURE_SIDE);
    return -1;
}

int cli_is_help(const char *a) {
    return !strcmp(a, "--help") || !strcmp(a, "-h");
}

void cli_common_help(FILE *f) {
    fprintf(f,
            "common options:\n"
            "  --backend B      auto|c|simd|threads|cuda (default auto: cuda if a GPU is\n"
            "                   usable, else threads)\n"
            "  --threads N      worker threads for the threads backend (0 = all cores;\n"
            "                   more than %d is lowered to %d, with a note)\n"
            "  --cpumask M      AND the detected CPU flags with M (hex ok): 0 = plain C,\n"
            "                   1 = SSE2, 0x3 = +SSSE3, 0x7 = +SSE4.1, 0xf = +AVX2,\n"
            "                   0x1f = +AVX-512\n"
            "  --device N       CUDA device ordinal (default 0)\n"
            "  --json           machine-readable output on stdout\n"
            "  --quiet          no progress bar\n"
            "Every option with a value also takes the form --option=value.\n",
            CLI_MAX_THREADS, CLI_MAX_THREADS);
}

int cli_common_opt(CliCommon *c, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v;
    long n;
    if (!strcmp(a, "--backend")) {
        if (!(v = cli_value(cmd, argc, argv, i))) return -1;
        int b = vidk_backend_from_name(v);
        if (b < 0) {
            cli_error(cmd, "--backend: unknown backend '%s' (auto, c, simd, threads, cuda)", v);
            return -1;
        }
        c->backend = (VidkBackend)b;
        return 1;
    }
    if (!strcmp(a, "--threads")) {
        if (cli_int_value(cmd, argc, argv, i, 0, INT_MAX, &n) < 0) return -1;
        if (n > CLI_MAX_THREADS) {
            fprintf(stderr,
                    "vidkern %s: note: --threads %ld is above the library's limit: using %d\n",
                    cmd, n, CLI_MAX_THREADS);
            n = CLI_MAX_THREADS;
        }
        c->threads = (int)n;
        return 1;
    }
    if (!strcmp(a, "--cpumask")) {
        if (cli_int_value(cmd, argc, argv, i, 0, 0xffffffffL, &n) < 0) return -1;
        c->cpumask = (unsigned)n;
        return 1;
    }
    if (!strcmp(a, "--device")) {
        if (cli_int_value(cmd, argc, argv, i, 0, 63, &n) < 0) return -1;
        c->device = (int)n;
        return 1;
    }
    if (!strcmp(a, "--json")) return c->json = 1;
    if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) return c->quiet = 1;
    return 0;
}

static void log_to_stderr(void *cookie, VidkLogLevel level, const char *fmt, va_list ap) {
    static const char *const names[] = {"error", "warning", "info", "debug"};
    fprintf(stderr, "%s %s: %s: ", cli_program, (const char *)cookie, names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

VidkContext *cli_open(const CliCommon *c, const char *cmd) {
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = c->backend;
    s.n_threads = c->threads;
    s.cpu_mask = c->cpumask;
    s.cuda_device = c->device;
    s.logger.callback = log_to_stderr;
    s.logger.cookie = (void *)cmd;
    VidkContext *ctx = NULL;
    int err = vidk_open(&ctx, &s);
    if (err < 0) {
        cli_error(cmd, "cannot use backend '%s': %s", vidk_backend_name(c->backend),
                  vidk_strerror(err));
        return NULL;
    }
    return ctx;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_start(CliProgress *p, const char *label, int total, int quiet) {
    p->enabled = !quiet && total > 1 && isatty(STDERR_FILENO);
    p->total = total;
    p->label = label;
    p->t0 = cli_now();
}

void cli_progress_update(CliProgress *p, int done) {
    if (!p->enabled) return;
    if (done > p->total) p->total = done;
    const int width = 30;
    const int fill = p->total ? (int)((long long)done * width / p->total) : width;
    const double el = cli_now() - p->t0;
    fprintf(stderr, "\r%s [", p->label);
    for (int k = 0; k < width; k++)
        fputc(k < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d  %.1f/s ", done, p->total, el > 0 ? done / el : 0.0);
    fflush(stderr);
}

void cli_progress_end(CliProgress *p) {
    if (!p->enabled) return;
    fputc('\n', stderr);
}

/* 1 if s ends with ext. */
static int has_ext(const char *s, const char *ext) {
    const size_t n = strlen(s), m = strlen(ext);
    return n >= m && !strcmp(s + n - m, ext);
}

int cli_source_open_file(CliSource *s, const char *cmd, const char *path,
                         const VioFormat *raw) {
    char err[512];
    s->name = !strcmp(path, "-") ? "stdin" : path;
    const VioFormat *r = raw && !has_ext(path, ".y4m") ? raw : NULL;
    if (!r && has_ext(path, ".yuv"))
        return cli_error(cmd, "%s: raw input needs --input-size WxH (and --input-format)",
                         path),
               -1;
    if (vio_reader_open(&s->rd, path, r, err, sizeof(err)) < 0)
        return cli_error(cmd, "%s", err), -1;
    s->fmt = *vio_reader_format(s->rd);
    const char il = s->fmt.interlace;
    if (!r && !s->assume_progressive && (il == 't' || il == 'b' || il == 'm'))
        return cli_error(cmd,
                         "%s: interlaced input (I%c: %s) is not supported: deinterlace it "
                         "first (e.g. ffmpeg -vf bwdif), or pass --assume-progressive to "
                         "process each frame as one picture",
                         s->name, il,
                         il == 't'   ? "top field first"
                         : il == 'b' ? "bottom field first"
                                     : "mixed field order"),
               -1;
    return 0;
}

int cli_source_open_gen(CliSource *s, int w, int h, int frames) {
    VidkGenParams gp;
    vidk_gen_default(&gp);
    if (w) gp.w = w, gp.h = h;
    if (frames) gp.frames = frames;
    vio_format_default(&s->fmt);
    s->fmt.w = gp.w, s->fmt.h = gp.h, s->fmt.chroma = gp.chroma;
    s->fmt.bitdepth = gp.bitdepth;
    const int e = vidk_gen_open(&s->gen, &gp);
    if (e < 0) return e;
    s->gen_frames = gp.frames;
    snprintf(s->desc, sizeof(s->desc), "built-in generated video %dx%d, %d frames, seed %u",
             gp.w, gp.h, gp.frames, (unsigned)gp.seed);
    return e;
}

int cli_source_read(CliSource *s, const char *cmd, VidkPicture *pic) {
    if (s->gen) {
        if (s->next >= s->gen_frames) return 0;
        const int e = vidk_gen_frame(s->gen, s->next, pic);
        if (e < 0) return cli_error(cmd, "generator: %s", vidk_strerror(e)), -1;
        s->next++;
        return 1;
    }
    const int r = vio_reader_read(s->rd, pic);
    if (r < 0) return cli_error(cmd, "%s", vio_reader_error(s->rd)), -1;
    s->next += r;
    return r;
}

void cli_source_close(CliSource *s) {
    vio_reader_close(&s->rd);
    vidk_gen_close(&s->gen);
}

int cli_raw_format(const char *cmd, const char *in_size, const char *in_fmt, const char *known,
                   VioFormat *raw) {
    if (!in_size) return 0;
    if (cli_parse_size(cmd, "--input-size", in_size, &raw->w, &raw->h) < 0) return -1;
    if (vio_parse_pixfmt(in_fmt ? in_fmt : "yuv420p", raw) < 0)
        return cli_error(cmd, "--input-format: unknown pixel format '%s' (%s)", in_fmt, known),
               -1;
    return 0;
}

/* Frames in a regular file, estimated from its size; 0 unknown. */
static int estimate_frames(const char *path, const VioFormat *f, int y4m) {
    struct stat st;
    const size_t fb = vio_frame_bytes(f);
    if (!strcmp(path, "-") || stat(path, &st) || !S_ISREG(st.st_mode) || !fb) return 0;
    const double n = (double)st.st_size / (double)(fb + (y4m ? 6 : 0));
    return n > 1e6 ? 1000000 : (int)n;
}

int cli_source_total(const CliSource *s, const char *path, int raw, long frames) {
    int total = s->gen ? s->gen_frames
                       : estimate_frames(path, &s->fmt, !(raw && !has_ext(path, ".y4m")));
    if (frames && (total <= 0 || total > frames)) total = (int)frames;
    return total;
}

int cli_block_stream(const char *cmd, size_t nv, size_t chunk, CliBlockFn fn, void *arg,
                     size_t *blocks, size_t *tail) {
    const size_t bytes = nv * 2, want = chunk * bytes;
    uint8_t *buf = malloc(want);
    int16_t *in = malloc(want), *out = malloc(want);
    int rc = -1;
    *blocks = *tail = 0;
    if (!buf || !in || !out) {
        cli_error(cmd, "out of memory");
        goto done;
    }
    for (;;) {
        size_t got = 0, r;
        while (got < want && (r = fread(buf + got, 1, want - got, stdin)) > 0)
            got += r;
        if (ferror(stdin)) {
            cli_error(cmd, "read error on stdin");
            goto done;
        }
        const size_t n = got / bytes;
        if (got % bytes) {
            *tail = got % bytes;
            *blocks += n;
            rc = 1;
            goto done;
        }
        if (!n) break;
        for (size_t k = 0; k < n * nv; k++)
            in[k] = (int16_t)(uint16_t)(buf[2 * k] | buf[2 * k + 1] << 8);
        const int e = fn(arg, in, out, n);
        if (e < 0) {
            cli_error(cmd, "%s", vidk_strerror(e));
            goto done;
        }
        for (size_t k = 0; k < n * nv; k++) {
            buf[2 * k] = (uint8_t)out[k];
            buf[2 * k + 1] = (uint8_t)((uint16_t)out[k] >> 8);
        }
        if (fwrite(buf, 1, n * bytes, stdout) != n * bytes) {
            cli_error(cmd, "write error on stdout");
            goto done;
        }
        *blocks += n;
        if (got < want) break;
    }
    if (fflush(stdout)) {
        cli_error(cmd, "write error on stdout");
        goto done;
    }
    rc = 0;
done:
    free(buf);
    free(in);
    free(out);
    return rc;
}
