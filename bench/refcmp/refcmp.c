/* refcmp: vidkern block kernels against the SIMD of x264, FFmpeg and x265, timed on the
 * same core with the same loop. A local measurement tool (docs/REFCMP.md): it links the
 * reference libraries statically, is never installed and never linked into libvidkern.
 *
 * Each row pairs a reference routine with our equivalent at the best ISA level of this
 * CPU. Before timing, both run on the same inputs and their outputs are compared (where
 * the operation is the same); a difference prints MISMATCH in the row.
 *
 * The loop is checkkern's CK_BENCH: reps calibrated until one sample lasts >= 20 us,
 * 64 samples, the fastest 10% and slowest 20% dropped, the median of the rest, per call.
 * Both columns call through a function pointer read from a volatile, so neither is
 * inlined or turned into a direct call; the pair is measured --repeat times, alternating,
 * and each column reports its lowest median.
 *
 * Layouts: x264 and FFmpeg store H.264 coefficient blocks transposed (element (i, j) at
 * [j * N + i]; their first pass over memory rows is the spec's horizontal pass), so the
 * reference gets the transpose of our raster block. x264 writes pixels with its fixed
 * FDEC_STRIDE (32) and reads the source of sad_x4 with FENC_STRIDE (16): we use the same
 * strides. FFmpeg clears the coefficient block after use: both columns copy the block in
 * before every call. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Helpers that a build without some reference library leaves unused. */
#define MAYBE_UNUSED __attribute__((unused))

/* ---- reference prototypes (only the libraries that were found are linked) ---- */

#if VIDK_REFCMP_X264
void x264_8_add4x4_idct_avx(uint8_t *dst, int16_t dct[16]);
void x264_8_add4x4_idct_sse4(uint8_t *dst, int16_t dct[16]);
void x264_8_add8x8_idct8_avx(uint8_t *dst, int16_t dct[64]);
void x264_8_add8x8_idct8_sse2(uint8_t *dst, int16_t dct[64]);
void x264_8_pixel_sad_x4_16x16_avx512(uint8_t *fenc, uint8_t *p0, uint8_t *p1, uint8_t *p2,
                                      uint8_t *p3, intptr_t stride, int scores[4]);
void x264_8_pixel_sad_x4_16x16_avx2(uint8_t *fenc, uint8_t *p0, uint8_t *p1, uint8_t *p2,
                                    uint8_t *p3, intptr_t stride, int scores[4]);
#endif
#if VIDK_REFCMP_AVCODEC
void ff_h264_idct_add_8_avx(uint8_t *dst, int16_t *block, int stride);
void ff_h264_idct_add_8_sse2(uint8_t *dst, int16_t *block, int stride);
void ff_h264_idct8_add_8_sse2(uint8_t *dst, int16_t *block, int stride);
#endif
#if VIDK_REFCMP_X265
/* x265 primitives (8-bit build): dct (src residual, dst coefficients, srcStride) and idct
 * (src coefficients, dst residual, dstStride), strides in int16 elements. */
void x265_dct4_avx2(const int16_t *src, int16_t *dst, intptr_t stride);
void x265_dct32_avx2(const int16_t *src, int16_t *dst, intptr_t stride);
void x265_dct32_avx512(const int16_t *src, int16_t *dst, intptr_t stride);
void x265_idct4_avx2(const int16_t *src, int16_t *dst, intptr_t stride);
void x265_idct32_avx2(const int16_t *src, int16_t *dst, intptr_t stride);
void x265_idct32_avx512(const int16_t *src, int16_t *dst, intptr_t stride);
#endif

typedef void (*add4_ref_fn)(uint8_t *, int16_t *);
typedef void (*ffadd_fn)(uint8_t *, int16_t *, int);
typedef void (*sadx4_ref_fn)(uint8_t *, uint8_t *, uint8_t *, uint8_t *, uint8_t *, intptr_t,
                             int *);
typedef void (*x265_fn)(const int16_t *, int16_t *, intptr_t);

/* ---- options, output ---- */

static struct {
    int csv, repeat, cpu;
    unsigned isa;
} opt = {0, 3, -1, ~0u};

static int n_mismatch;

static const char *isa_name(unsigned f) {
    return f & VIDK_CPU_AVX512  ? "avx512"
           : f & VIDK_CPU_AVX2  ? "avx2"
           : f & VIDK_CPU_SSE41 ? "sse41"
           : f & VIDK_CPU_SSSE3 ? "ssse3"
           : f & VIDK_CPU_SSE2  ? "sse2"
                                : "c";
}

MAYBE_UNUSED static void row(const char *routine, const char *ref, const char *ours,
                             double ref_ns, double ours_ns, int same, const char *note) {
    if (!same) n_mismatch++;
    if (opt.csv) {
        printf("\"%s\",\"%s\",\"%s\",%.2f,%.2f,%.3f,%s,\"%s\"\n", routine, ref, ours, ref_ns,
               ours_ns, ours_ns / ref_ns, same ? "ok" : "MISMATCH", note);
        return;
    }
    printf("%-16s %-32s %8.2f  %-30s %8.2f  %6.2f  %s%s%s\n", routine, ref, ref_ns, ours,
           ours_ns, ours_ns / ref_ns, same ? "" : "MISMATCH", same || !*note ? "" : "; ", note);
}

/* ---- timing (checkkern's CK_BENCH statistics) ---- */

#define SAMPLES 64

MAYBE_UNUSED static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median of the samples without the fastest 10% and the slowest 20%, per call. */
MAYBE_UNUSED static double robust_ns(uint64_t *s, int reps) {
    qsort(s, SAMPLES, sizeof(*s), cmp_u64);
    const int lo = SAMPLES / 10, hi = SAMPLES - SAMPLES / 5, n = hi - lo;
    const double med = n & 1 ? (double)s[lo + n / 2]
                             : 0.5 * ((double)s[lo + n / 2 - 1] + (double)s[lo + n / 2]);
    return med / reps;
}

#define BENCH(out, call)                                                                       \
    do {                                                                                       \
        uint64_t s_[SAMPLES];                                                                  \
        int reps_ = 1;                                                                         \
        for (;;) {                                                                             \
            const uint64_t t0_ = now_ns();                                                     \
            for (int r_ = 0; r_ < reps_; r_++) {                                               \
                call;                                                                          \
            }                                                                                  \
            if (now_ns() - t0_ > 20000 || reps_ >= (1 << 20)) break;                           \
            reps_ *= 2;                                                                        \
        }                                                                                      \
        for (int k_ = 0; k_ < SAMPLES; k_++) {                                                 \
            const uint64_t t0_ = now_ns();                                                     \
            for (int r_ = 0; r_ < reps_; r_++) {                                               \
                call;                                                                          \
            }                                                                                  \
            s_[k_] = now_ns() - t0_;                                                           \
        }                                                                                      \
        const double ns_ = robust_ns(s_, reps_);                                               \
        if (ns_ < (out)) (out) = ns_;                                                          \
    } while (0)

/* Time a pair, alternating, opt.repeat times; each column keeps its lowest median. */
#define PAIR(ref_ns, ours_ns, ref_call, ours_call)                                             \
    do {                                                                                       \
        ref_ns = ours_ns = 1e30;                                                               \
        for (int p_ = 0; p_ < opt.repeat; p_++) {                                              \
            BENCH(ref_ns, ref_call);                                                           \
            BENCH(ours_ns, ours_call);                                                         \
        }                                                                                      \
    } while (0)

/* ---- data ---- */

static uint32_t rng = 0x12345678u;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
    return rng;
}
MAYBE_UNUSED static int rnd_range(int lo, int hi) {
    return lo + (int)(rnd() % (uint32_t)(hi - lo + 1));
}

MAYBE_UNUSED static void transpose16(int16_t *t, const int16_t *d, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            t[j * n + i] = d[i * n + j];
}

#define FDEC_STRIDE 32
#define FENC_STRIDE 16

static uint8_t pix_a[FDEC_STRIDE * 8] __attribute__((aligned(64)));
static uint8_t pix_b[FDEC_STRIDE * 8] __attribute__((aligned(64)));
static int16_t blk_a[64] __attribute__((aligned(64))), blk_b[64] __attribute__((aligned(64)));
static int16_t src_d[64] __attribute__((aligned(64))), src_t[64] __attribute__((aligned(64)));

/* The bench block: a typical decoded residual (checkkern's idct bench input). */
MAYBE_UNUSED static void bench_block(int n) {
    memset(src_d, 0, sizeof(src_d));
    src_d[0] = 5, src_d[1] = -2, src_d[2] = 1, src_d[n] = 1;
    transpose16(src_t, src_d, n);
    for (int k = 0; k < (int)sizeof(pix_a); k++)
        pix_a[k] = pix_b[k] = (uint8_t)(k * 7);
}

/* ---- H.264 inverse transform + add ---- */

/* Same pixels on 500 random blocks; 16-bit-safe values (where x264 and FFmpeg, which use
 * 16-bit lanes without a range test, are exact too). ff: 1 when ref clears its block. */
MAYBE_UNUSED static int check_idct_add(int n, vidk_h264_idct_add16_fn ours, add4_ref_fn x264,
                                       ffadd_fn ff) {
    const int lim = n == 4 ? 2600 : 590;
    for (int it = 0; it < 500; it++) {
        for (int k = 0; k < n * n; k++)
            src_d[k] = (int16_t)(it & 1 ? rnd_range(-lim, lim) : rnd_range(-40, 40));
        transpose16(src_t, src_d, n);
        for (int k = 0; k < (int)sizeof(pix_a); k++)
            pix_a[k] = pix_b[k] = (uint8_t)rnd();
        memcpy(blk_a, src_d, sizeof(blk_a));
        memcpy(blk_b, src_t, sizeof(blk_b));
        ours(pix_a, FDEC_STRIDE, blk_a);
        if (x264)
            x264(pix_b, blk_b);
        else
            ff(pix_b, blk_b, FDEC_STRIDE);
        if (memcmp(pix_a, pix_b, sizeof(pix_a))) return 0;
    }
    return 1;
}

static void rows_h264(const VidkH264DSP *dsp, const char *lvl) {
    char ours4[48], ours8[48];
    snprintf(ours4, sizeof(ours4), "vidk idct_add16_4x4 (%s)", lvl);
    snprintf(ours8, sizeof(ours8), "vidk idct_add16_8x8 (%s)", lvl);
    vidk_h264_idct_add16_fn volatile vo4 = dsp->idct_add16[0], vo8 = dsp->idct_add16[1];
    double r, o;
    (void)vo4, (void)vo8, (void)r, (void)o, (void)ours4, (void)ours8;
#if VIDK_REFCMP_X264
    {
        static const struct {
            const char *name;
            add4_ref_fn fn;
            int n;
        } x[] = {{"x264 add4x4_idct_avx", x264_8_add4x4_idct_avx, 4},
                 {"x264 add4x4_idct_sse4", x264_8_add4x4_idct_sse4, 4},
                 {"x264 add8x8_idct8_avx", x264_8_add8x8_idct8_avx, 8},
                 {"x264 add8x8_idct8_sse2", x264_8_add8x8_idct8_sse2, 8}};
        for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
            const int n = x[i].n;
            vidk_h264_idct_add16_fn ours = n == 4 ? vo4 : vo8;
            add4_ref_fn volatile vr = x[i].fn;
            const int same = check_idct_add(n, ours, vr, NULL);
            bench_block(n);
            memcpy(blk_a, src_d, sizeof(blk_a));
            memcpy(blk_b, src_t, sizeof(blk_b));
            add4_ref_fn fr = vr;
            PAIR(r, o, fr(pix_b, blk_b), ours(pix_a, FDEC_STRIDE, blk_a));
            row(n == 4 ? "idct_add 4x4" : "idct_add 8x8", x[i].name, n == 4 ? ours4 : ours8, r,
                o, same, "int16 coefficients, add to 8-bit pixels, stride 32");
        }
    }
#endif
#if VIDK_REFCMP_AVCODEC
    {
        static const struct {
            const char *name;
            ffadd_fn fn;
            int n;
        } f[] = {{"ffmpeg h264_idct_add_8_avx", ff_h264_idct_add_8_avx, 4},
                 {"ffmpeg h264_idct_add_8_sse2", ff_h264_idct_add_8_sse2, 4},
                 {"ffmpeg h264_idct8_add_8_sse2", ff_h264_idct8_add_8_sse2, 8}};
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
            const int n = f[i].n;
            const size_t bytes = (size_t)n * n * sizeof(int16_t);
            vidk_h264_idct_add16_fn ours = n == 4 ? vo4 : vo8;
            ffadd_fn volatile vr = f[i].fn;
            const int same = check_idct_add(n, ours, NULL, vr);
            bench_block(n);
            ffadd_fn fr = vr;
            /* FFmpeg clears the block: both columns copy it in before every call */
            PAIR(r, o, (memcpy(blk_b, src_t, bytes), fr(pix_b, blk_b, FDEC_STRIDE)),
                 (memcpy(blk_a, src_d, bytes), ours(pix_a, FDEC_STRIDE, blk_a)));
            row(n == 4 ? "idct_add 4x4" : "idct_add 8x8", f[i].name, n == 4 ? ours4 : ours8, r,
                o, same, "both columns include copying the block in (FFmpeg clears it)");
        }
    }
#endif
}

/* ---- SAD x4 ---- */

static void rows_sad(const VidkSadDSP *dsp, const char *lvl) {
    (void)dsp, (void)lvl;
#if VIDK_REFCMP_X264
    static uint8_t fenc[16 * FENC_STRIDE] __attribute__((aligned(64)));
    static uint8_t win[96 * 64] __attribute__((aligned(64)));
    const ptrdiff_t ws = 96;
    for (size_t k = 0; k < sizeof(fenc); k++)
        fenc[k] = (uint8_t)rnd();
    for (size_t k = 0; k < sizeof(win); k++)
        win[k] = (uint8_t)rnd();
    /* four neighbouring candidates, unaligned, as a search would give */
    uint8_t *p0 = win + 20 * ws + 33, *p1 = p0 + 1, *p2 = p0 + ws, *p3 = p0 + ws + 1;
    vidk_sad_x4_fn volatile vo = dsp->sad_x4[VIDK_BLOCK_16x16];
    static const struct {
        const char *name;
        sadx4_ref_fn fn;
    } x[] = {{"x264 pixel_sad_x4_16x16_avx512", x264_8_pixel_sad_x4_16x16_avx512},
             {"x264 pixel_sad_x4_16x16_avx2", x264_8_pixel_sad_x4_16x16_avx2}};
    char ours[48];
    snprintf(ours, sizeof(ours), "vidk sad_x4 16x16 (%s)", lvl);
    for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
        sadx4_ref_fn volatile vr = x[i].fn;
        sadx4_ref_fn fr = vr;
        vidk_sad_x4_fn fo = vo;
        int sr[4];
        unsigned so[4];
        int same = 1;
        for (int it = 0; it < 200; it++) {
            const int dx = rnd_range(0, 96 - 17), dy = rnd_range(0, 64 - 17);
            uint8_t *q0 = win + dy * ws + dx, *q1 = q0 + 1, *q2 = q0 + ws, *q3 = q0 + ws + 1;
            fr(fenc, q0, q1, q2, q3, ws, sr);
            fo(fenc, FENC_STRIDE, q0, q1, q2, q3, ws, so);
            for (int k = 0; k < 4; k++)
                same &= (unsigned)sr[k] == so[k];
        }
        double r, o;
        PAIR(r, o, fr(fenc, p0, p1, p2, p3, ws, sr),
             fo(fenc, FENC_STRIDE, p0, p1, p2, p3, ws, so));
        row("sad_x4 16x16", x[i].name, ours, r, o, same, "4 SADs, source stride 16");
    }
#endif
}

/* ---- HEVC DCT ---- */

static void rows_hevc(const VidkHevcDSP *dsp, const char *lvl) {
    (void)dsp, (void)lvl;
#if VIDK_REFCMP_X265
    static int16_t in[32 * 32] __attribute__((aligned(64)));
    static int16_t oa[32 * 32] __attribute__((aligned(64))),
        ob[32 * 32] __attribute__((aligned(64)));
    static const struct {
        const char *name;
        x265_fn fn;
        int n, inv;
    } x[] = {{"x265 dct4_avx2", x265_dct4_avx2, 4, 0},
             {"x265 dct32_avx2", x265_dct32_avx2, 32, 0},
             {"x265 dct32_avx512", x265_dct32_avx512, 32, 0},
             {"x265 idct4_avx2", x265_idct4_avx2, 4, 1},
             {"x265 idct32_avx2", x265_idct32_avx2, 32, 1},
             {"x265 idct32_avx512", x265_idct32_avx512, 32, 1}};
    for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
        const int n = x[i].n, kind = n == 4 ? VIDK_HEVC_TX_DCT4 : VIDK_HEVC_TX_DCT32;
        x265_fn volatile vr = x[i].fn;
        x265_fn fr = vr;
        vidk_hevc_fwd_fn volatile vf = dsp->fwd[kind];
        vidk_hevc_inv_fn volatile vi = dsp->inv[kind];
        vidk_hevc_fwd_fn ff = vf;
        vidk_hevc_inv_fn fi = vi;
        int same = 1;
        for (int it = 0; it < 100; it++) {
            /* forward: 8-bit residuals; inverse: dequantised coefficients */
            for (int k = 0; k < n * n; k++)
                in[k] =
                    (int16_t)(x[i].inv ? (it & 1 ? rnd_range(-3000, 3000) : rnd_range(-64, 64))
                                       : rnd_range(-255, 255));
            if (x[i].inv) {
                fr(in, oa, n);
                fi(ob, in, 1, 8);
            } else {
                fr(in, oa, n);
                ff(ob, in, 1, 8);
            }
            same &= !memcmp(oa, ob, (size_t)n * n * sizeof(int16_t));
        }
        char ours[64];
        snprintf(ours, sizeof(ours), "vidk %s %dx%d (%s)", x[i].inv ? "inv" : "fwd", n, n, lvl);
        double r, o;
        if (x[i].inv)
            PAIR(r, o, fr(in, oa, n), fi(ob, in, 1, 8));
        else
            PAIR(r, o, fr(in, oa, n), ff(ob, in, 1, 8));
        row(x[i].inv ? (n == 4 ? "hevc idct 4x4" : "hevc idct 32x32")
                     : (n == 4 ? "hevc dct 4x4" : "hevc dct 32x32"),
            x[i].name, ours, r, o, same,
            x[i].inv ? "transform only, both clip to int16 after each pass (8-bit)"
                     : "transform only; ours also clips residuals to +-255 (a no-op here)");
        if (n != 4) continue;
        /* Ours is a batch function (n_blocks blocks per call): per block in a batch of 64
         * against 64 reference calls. */
        static int16_t bin[64 * 16] __attribute__((aligned(64)));
        static int16_t bout[64 * 16] __attribute__((aligned(64)));
        for (int k = 0; k < 64 * 16; k++)
            bin[k] = (int16_t)(x[i].inv ? rnd_range(-64, 64) : rnd_range(-255, 255));
        if (x[i].inv)
            PAIR(r, o, for (int b_ = 0; b_ < 64; b_++) fr(bin + 16 * b_, bout + 16 * b_, 4),
                 fi(bout, bin, 64, 8));
        else
            PAIR(r, o, for (int b_ = 0; b_ < 64; b_++) fr(bin + 16 * b_, bout + 16 * b_, 4),
                 ff(bout, bin, 64, 8));
        snprintf(ours, sizeof(ours), "vidk %s 4x4, 64 blocks (%s)", x[i].inv ? "inv" : "fwd",
                 lvl);
        row(x[i].inv ? "hevc idct 4x4" : "hevc dct 4x4", x[i].name, ours, r / 64, o / 64, same,
            "ns per block: 64 reference calls vs one call of ours on 64 blocks");
    }
#endif
}

static void usage(void) {
    printf("usage: refcmp [--csv] [--repeat N] [--cpu N] [--cpumask M]\n"
           "  --csv        comma-separated output\n"
           "  --repeat N   alternate reference / ours N times, keep each one's lowest median "
           "(3)\n"
           "  --cpu N      pin to CPU N (default: the CPU refcmp starts on)\n"
           "  --cpumask M  limit our ISA levels (vidkern CPU flags, e.g. 0x1 = sse2 only)\n");
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--csv"))
            opt.csv = 1;
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            opt.repeat = atoi(argv[++i]) > 0 ? atoi(argv[i]) : 1;
        else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
            opt.cpu = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpumask") && i + 1 < argc)
            opt.isa = (unsigned)strtoul(argv[++i], NULL, 0);
        else {
            usage();
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    /* one core for both columns */
    const int cpu = opt.cpu >= 0 ? opt.cpu : sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu < 0 ? 0 : cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set))
        fprintf(stderr, "refcmp: cannot pin to CPU %d; timings may move between cores\n", cpu);

    const unsigned flags = vidk_cpu_flags() & opt.isa;
    if (!(vidk_cpu_flags() & VIDK_CPU_AVX2))
        fprintf(stderr, "refcmp: no AVX2 on this CPU: the reference routines would fault\n");
    VidkH264DSP h;
    VidkSadDSP s;
    VidkHevcDSP v;
    vidk_h264_dsp_init(&h, flags);
    vidk_sad_dsp_init(&s, flags);
    vidk_hevc_dsp_init(&v, flags);
    const char *lvl = isa_name(flags);

    if (opt.csv)
        printf("routine,reference,ours,ref_ns,ours_ns,ratio,check,note\n");
    else
        printf("refcmp: CPU %d, our best ISA level %s, ns per call (median), ratio = ours / "
               "reference\n%-16s %-32s %8s  %-30s %8s  %6s  %s\n",
               cpu, lvl, "routine", "reference", "ref ns", "ours", "ours ns", "ratio",
               "check / note");
    rows_h264(&h, lvl);
    rows_sad(&s, lvl);
    rows_hevc(&v, lvl);
#if !VIDK_REFCMP_X264 && !VIDK_REFCMP_AVCODEC && !VIDK_REFCMP_X265
    fprintf(stderr, "refcmp: built without any reference library (see docs/REFCMP.md)\n");
#endif
    if (n_mismatch) fprintf(stderr, "refcmp: %d MISMATCH row(s)\n", n_mismatch);
    return n_mismatch ? 1 : 0;
}
