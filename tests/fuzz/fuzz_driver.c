/* Runs the fuzz target without libFuzzer, so ctest exercises it with any compiler:
 *
 *   fuzz_y4m_driver [--iterations N] [--write-seeds DIR] [FILE|DIR]...
 *
 * Every FILE (and every regular file of each DIR) is fed to LLVMFuzzerTestOneInput once.
 * Then generated inputs are: valid streams of every chroma tag and bit depth, ffmpeg-like
 * headers, bad headers and frames, and N (default 3000) deterministic mutations of them
 * (byte flips, cuts, insertions, duplicated spans, swapped header tokens). The target
 * aborts on a broken invariant, and the sanitizer build catches memory errors.
 * --write-seeds DIR writes the generated seeds as files (a starting corpus for libFuzzer).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Input {
    uint8_t *p;
    size_t n;
} Input;

static Input seeds[256];
static int n_seeds;

static void add_seed(const void *d, size_t n) {
    if (n_seeds == (int)(sizeof(seeds) / sizeof(seeds[0]))) return;
    Input *s = &seeds[n_seeds++];
    s->p = malloc(n ? n : 1);
    if (!s->p) exit(1);
    if (n) memcpy(s->p, d, n);
    s->n = n;
}

/* header + `frames` frames (the last one cut by `cut` bytes) of a pattern. */
static void add_stream(const char *header, size_t frame_bytes, int frames, size_t cut,
                       const char *frame_line) {
    const size_t hl = strlen(header), fl = strlen(frame_line);
    const size_t total = hl + (size_t)frames * (fl + frame_bytes);
    uint8_t *b = malloc(total + 1);
    if (!b) exit(1);
    memcpy(b, header, hl);
    size_t o = hl;
    for (int i = 0; i < frames; i++) {
        memcpy(b + o, frame_line, fl);
        o += fl;
        /* Even bytes small, odd bytes zero: valid for every bit depth. */
        for (size_t k = 0; k < frame_bytes; k++)
            b[o + k] = (uint8_t)(k & 1 ? 0 : (k * 7 + i) & 0xff);
        o += frame_bytes;
    }
    add_seed(b, total - (cut < total - hl ? cut : 0));
    free(b);
}

static void make_seeds(void) {
    static const struct {
        const char *c;
        int bytes_4x4; /* frame bytes of a 4x4 picture */
    } tags[] = {{"420jpeg", 24}, {"420paldv", 24}, {"420mpeg2", 24}, {"420", 24},
                {"422", 32},     {"444", 48},      {"mono", 16},     {"420p10", 48},
                {"422p10", 64},  {"444p12", 96},   {"mono16", 32},   {"420p16", 48}};
    char h[256];
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
        snprintf(h, sizeof(h), "YUV4MPEG2 W4 H4 F30:1 Ip A1:1 C%s\n", tags[i].c);
        add_stream(h, (size_t)tags[i].bytes_4x4, 2, 0, "FRAME\n");
    }
    add_stream("YUV4MPEG2 W5 H3 F30000:1001 It A0:0 C420jpeg XYSCSS=420JPEG "
               "XCOLORRANGE=LIMITED\n",
               15 + 2 * 3 * 2, 3, 0, "FRAME Ib\n");
    add_stream("YUV4MPEG2 W3 H3 XYSCSS=420P10\n", 2 * (9 + 2 * 4), 1, 0, "FRAME\n");
    add_stream("YUV4MPEG2 W4 H4\n", 24, 2, 7, "FRAME\n");
    add_stream("YUV4MPEG2 W4 H4 C420jpeg\n", 24, 1, 0, "FRAMX\n");
    add_stream("YUV4MPEG2 W16384 H16384 C444p16\n", 0, 0, 0, "");
    static const char *const bad[] = {
        "",
        "YUV4MPEG2",
        "YUV4MPEG2 W0 H4\n",
        "YUV4MPEG2 W99999999999999999999 H4\n",
        "YUV4MPEG2 W4 H4 C411\n",
        "YUV4MPEG2 W4 H4 F30:0\n",
        "YUV4MPEG2 W4 H4 A1:0 Ix\n",
        "YUV4MPEG2 W4 H4\r\n",
        "not y4m at all\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        add_seed(bad[i], strlen(bad[i]));
}

static const char *const tokens[] = {
    " W4",
    " H4",
    " W0",
    " H1",
    " W16385",
    " C420p10",
    " Cmono",
    " C444p16",
    " C422",
    " F1:1",
    " F0:0",
    " A0:0",
    " Im",
    " I?",
    " XYSCSS=422P12",
    " X",
    "FRAME\n",
    "FRAME ",
    "\n",
    " ",
    "YUV4MPEG2 ",
    "99999999999999999999",
    ":",
    "\xff",
};

/* One random mutation of s into out (capacity cap). */
static size_t mutate(const Input *s, uint8_t *out, size_t cap, uint32_t *rng) {
    size_t n = s->n < cap ? s->n : cap;
    memcpy(out, s->p, n);
    const int k = 1 + (int)(test_rand(rng) % 4);
    for (int m = 0; m < k; m++) {
        const uint32_t r = test_rand(rng);
        const size_t at = n ? test_rand(rng) % (n + 1) : 0;
        switch (r % 6) {
        case 0: /* flip a byte */
            if (at < n) out[at] ^= (uint8_t)(1u << (r >> 8) % 8);
            break;
        case 1: /* cut the end */
            n = at;
            break;
        case 2: { /* insert a token */
            const char *t = tokens[(r >> 8) % (sizeof(tokens) / sizeof(tokens[0]))];
            const size_t tl = strlen(t);
            if (n + tl > cap) break;
            memmove(out + at + tl, out + at, n - at);
            memcpy(out + at, t, tl);
            n += tl;
            break;
        }
        case 3: { /* delete a span */
            const size_t len = 1 + (r >> 8) % 16;
            if (at + len > n) break;
            memmove(out + at, out + at + len, n - at - len);
            n -= len;
            break;
        }
        case 4: { /* duplicate a span */
            const size_t len = 1 + (r >> 8) % 64;
            if (at + len > n || n + len > cap) break;
            memmove(out + at + len, out + at, n - at);
            n += len;
            break;
        }
        default: /* overwrite with a random byte */
            if (at < n) out[at] = (uint8_t)(r >> 16);
            break;
        }
    }
    return n;
}

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_y4m_driver: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0, k;
    uint8_t *b = malloc(cap);
    while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) return -1;
    LLVMFuzzerTestOneInput(b, n);
    free(b);
    return 0;
}

static int run_path(const char *path) {
    struct stat st;
    if (stat(path, &st)) {
        char what[4200];
        snprintf(what, sizeof(what), "fuzz_y4m_driver: %s not found (its files not run)", path);
        test_video_missing(what);
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) return run_file(path) < 0 ? -1 : 1;
    DIR *d = opendir(path);
    if (!d) return -1;
    int count = 0;
    struct dirent *de;
    char p[4096];
    while ((de = readdir(d))) {
        snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
        if (stat(p, &st) || !S_ISREG(st.st_mode)) continue;
        if (run_file(p) < 0) {
            closedir(d);
            return -1;
        }
        count++;
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv) {
    long iterations = 3000;
    const char *seed_dir = NULL;
    int files = 0;
    make_seeds();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
            iterations = strtol(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--write-seeds") && i + 1 < argc) {
            seed_dir = argv[++i];
        } else {
            const int c = run_path(argv[i]);
            if (c < 0) return 1;
            files += c;
        }
    }
    if (seed_dir) {
        for (int i = 0; i < n_seeds; i++) {
            char p[4096];
            snprintf(p, sizeof(p), "%s/seed_%03d.y4m", seed_dir, i);
            FILE *f = fopen(p, "wb");
            if (!f || (seeds[i].n && fwrite(seeds[i].p, 1, seeds[i].n, f) != seeds[i].n) ||
                fclose(f)) {
                fprintf(stderr, "fuzz_y4m_driver: cannot write %s\n", p);
                return 1;
            }
        }
        fprintf(stderr, "fuzz_y4m_driver: wrote %d seeds to %s\n", n_seeds, seed_dir);
    }
    for (int i = 0; i < n_seeds; i++)
        LLVMFuzzerTestOneInput(seeds[i].p, seeds[i].n);
    uint32_t rng = test_seed();
    enum { CAP = 4096 };
    uint8_t *buf = malloc(CAP);
    if (!buf) return 1;
    for (long it = 0; it < iterations; it++) {
        const Input *s = &seeds[test_rand(&rng) % (uint32_t)n_seeds];
        const size_t n = mutate(s, buf, CAP, &rng);
        LLVMFuzzerTestOneInput(buf, n);
    }
    free(buf);
    for (int i = 0; i < n_seeds; i++)
        free(seeds[i].p);
    fprintf(stderr, "fuzz_y4m_driver: %d files, %d seeds, %ld mutations: no failure\n", files,
            n_seeds, iterations);
    return test_finish("fuzz_y4m_driver");
}
