/* checkkern: the H.264 transform family.
 *
 * Block level: every function of VidkH264DSP at every ISA level against the C version,
 * at every qP (0..87: QP 0..51 plus the QpBdOffset of bit depths up to 14), with flat and
 * random custom scaling matrices, on random, sparse (DC only, last coefficient only),
 * extreme (+-32767, -32768, values just past 16 bits, INT32_MIN/MAX for the int32
 * inputs) and 16-bit-overflow inputs (blocks whose sum of |d| sits right at the SIMD
 * fast-path threshold, with adversarial signs; blocks exactly at and just past each bound
 * of the SIMD range tests, built from the transform's worst-case sign patterns, whose
 * just-past versions make a 16-bit value overflow, by exactly 1 where one exists), and on
 * coefficients of real clips (the difference of two frames as residual, forward
 * transformed and quantised).
 * Frame level: vidk_h264_batch_forward / _build / _inverse and vidk_h264_frame_inverse
 * on simd, threads (1, 2, 3 threads) and cuda (where a device exists) against
 * the c backend, on real clips and on random level frames. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "internal.h"

#define MAX_QP  87 /* 51 + 6 * (14 - 8) */
#define N_CASES 400
#define N_KINDS 12
/* Bounds of the SIMD 16-bit range tests (src/x86/h264_tx8.h): sum of |d|, max |d|. */
#define T4 (32767 - 32)
#define T8 14500
#define B4 2672
#define B8 601

static const char *const sz_name[2] = {"4x4", "8x8"};
static const char *const dc_name[3] = {"luma", "chroma", "chroma422"};

/* ------------------------------------------------------------------ real-clip data */

#define POOL 2048
typedef struct Env {
    /* residual blocks of real clips: frame 1 - frame 0, co-located */
    int16_t res4[POOL][16], res8[POOL][64];
    int n_res;
    /* pixel blocks of real clips for sub_fdct: (src, pred) 8x8 blocks, stride 8 */
    uint8_t src8[POOL][64], pred8[POOL][64];
    /* whole frames (multiples of 16) for the batch checks */
    VidkPicture cur[4], ref[4];
    char names[4][64];
    int n_pics;
} Env;

/* Copy a picture into one whose size is rounded up to a multiple of 16 (edge samples
 * repeated), as a coded picture would be. */
static int pic16(const VidkPicture *in, VidkPicture *out) {
    const int w = (in->w + 15) & ~15, h = (in->h + 15) & ~15;
    if (vidk_picture_alloc(out, w, h, VIDK_CHROMA_420, 8, 0) < 0) return -1;
    for (int p = 0; p < 3; p++) {
        int iw, ih, ow, oh;
        vidk_picture_plane_size(in, p, &iw, &ih);
        vidk_picture_plane_size(out, p, &ow, &oh);
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                ((uint8_t *)out->data[p])[y * out->stride[p] + x] =
                    ((const uint8_t *)in->data[p])[vidk_imin(y, ih - 1) * in->stride[p] +
                                                   vidk_imin(x, iw - 1)];
    }
    return 0;
}

static void env_init(Env *e) {
    memset(e, 0, sizeof(*e));
    for (int i = 0; ck_video_clip(i) && e->n_pics < 4; i++) {
        VidkPicture a, b;
        if (ck_load_y4m(ck_video_clip(i), 0, 0, &a) < 0) continue;
        if (ck_load_y4m(ck_video_clip(i), 1, 0, &b) < 0) { /* single-frame clip */
            vidk_picture_free(&a);
            continue;
        }
        const int k = e->n_pics;
        if (!pic16(&b, &e->cur[k]) && !pic16(&a, &e->ref[k])) {
            snprintf(e->names[k], sizeof(e->names[k]), "%s", ck_video_clip(i));
            e->n_pics++;
        }
        vidk_picture_free(&a);
        vidk_picture_free(&b);
    }
    /* Residual pool: random 8x8 positions of every clip's luma and chroma. */
    for (int n = 0; e->n_pics && n < POOL; n++) {
        const int k = n % e->n_pics, p = ck_rand_range(0, 2);
        const VidkPicture *c = &e->cur[k], *r = &e->ref[k];
        int pw, ph;
        vidk_picture_plane_size(c, p, &pw, &ph);
        const int x = ck_rand_range(0, pw - 8), y = ck_rand_range(0, ph - 8);
        const uint8_t *s = (const uint8_t *)c->data[p] + y * c->stride[p] + x;
        const uint8_t *q = (const uint8_t *)r->data[p] + y * r->stride[p] + x;
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < 8; i++) {
                e->src8[n][j * 8 + i] = s[j * c->stride[p] + i];
                e->pred8[n][j * 8 + i] = q[j * r->stride[p] + i];
                e->res8[n][j * 8 + i] =
                    (int16_t)(s[j * c->stride[p] + i] - q[j * r->stride[p] + i]);
                if (j < 4 && i < 4) e->res4[n][j * 4 + i] = e->res8[n][j * 8 + i];
            }
        e->n_res = n + 1;
    }
}

static void env_free(Env *e) {
    for (int k = 0; k < e->n_pics; k++) {
        vidk_picture_free(&e->cur[k]);
        vidk_picture_free(&e->ref[k]);
    }
}

/* ------------------------------------------------------------------ input generators */

static const int32_t extremes32[] = {INT32_MIN, INT32_MAX, INT32_MIN + 1, -65536, 65535, 32768,
                                     -32769,    32767,     -32768,        16384,  -1,    1,
                                     0};
static const int16_t extremes16[] = {32767, -32768, -32767, 16384, -16385,
                                     2047,  -2048,  1,      -1,    0};

static void rand_weights(uint8_t *w, int n, int custom) {
    for (int k = 0; k < n; k++)
        w[k] = custom ? (uint8_t)ck_rand_range(1, 255) : 16;
    if (custom == 2) /* extremes of the weight range */
        for (int k = 0; k < n; k++)
            w[k] = ck_rand() & 1 ? 255 : 1;
}

/* Levels: case kind i % 8 (real video uses the pool). */
static void gen_levels(const Env *e, const VidkH264DSP *c, int16_t *lev, int n, int kind,
                       int qp) {
    memset(lev, 0, (size_t)n * sizeof(*lev));
    switch (kind) {
    case 0: /* sparse small, the common case */
        for (int k = 0; k < n; k++)
            if (ck_rand_range(0, 3) == 0) lev[k] = (int16_t)ck_rand_range(-20, 20);
        break;
    case 1: /* full int16 range */
        for (int k = 0; k < n; k++)
            lev[k] = (int16_t)ck_rand();
        break;
    case 2: /* extremes */
        for (int k = 0; k < n; k++)
            lev[k] = extremes16[ck_rand_range(0, (int)(sizeof(extremes16) / 2) - 1)];
        break;
    case 3: /* all at the same extreme */
        for (int k = 0; k < n; k++)
            lev[k] = ck_rand() & 1 ? 32767 : -32768;
        break;
    case 4: /* DC only */
        lev[0] = (int16_t)(ck_rand() & 1 ? ck_rand() : (uint32_t)ck_rand_range(-50, 50));
        break;
    case 5: /* last coefficient only */
        lev[n - 1] = (int16_t)(ck_rand() & 1 ? ck_rand() : (uint32_t)ck_rand_range(-50, 50));
        break;
    case 6: /* medium, dense */
        for (int k = 0; k < n; k++)
            lev[k] = (int16_t)ck_rand_range(-600, 600);
        break;
    default: { /* real video: residual -> transform -> quantise */
        if (!e->n_res) {
            for (int k = 0; k < n; k++)
                lev[k] = (int16_t)ck_rand_range(-3, 3);
            break;
        }
        const int i = ck_rand_range(0, e->n_res - 1), s = n == 64;
        VIDK_ALIGN(16) int32_t w[64];
        VIDK_ALIGN(16) int32_t mf[6][64];
        if (s) {
            vidk_h264_quant_mf8(mf, NULL);
            c->fdct[1](w, e->res8[i]);
        } else {
            vidk_h264_quant_mf4((int32_t(*)[16])mf, NULL);
            c->fdct[0](w, e->res4[i]);
        }
        const int q = qp > 51 ? qp % 52 : qp, qbits = (s ? 16 : 15) + q / 6;
        const int32_t *m = s ? mf[q % 6] : ((int32_t(*)[16])mf)[q % 6];
        c->quant[s](lev, w, m, qbits, vidk_h264_deadzone(qbits, ck_rand() & 1));
    }
    }
}

/* ------------------------------------------------------------------ 16-bit range model */

/* How far a 16-bit-lane version of the inverse transform (as src/x86/h264_tx8.h builds it:
 * adds and subtracts wrap harmlessly, so only the values that are shifted and the final
 * h + 32 must fit) would leave int16 on block d: the largest excess beyond [-32768, 32767]
 * over those values, 0 when 16 bits are exact. Exact 64-bit arithmetic, spec order (rows,
 * then columns). Used to prove that the bound cases below are what they claim. */
static void ex_note(int64_t v, int64_t *worst) {
    const int64_t e = v > 32767 ? v - 32767 : v < -32768 ? -32768 - v : 0;
    if (e > *worst) *worst = e;
}

static int64_t ex_sra(int64_t v, int n, int64_t *worst) {
    ex_note(v, worst);
    return v >> n;
}

static void ex_itx4(int64_t *x, int s, int64_t *w) {
    const int64_t e0 = x[0] + x[2 * s], e1 = x[0] - x[2 * s];
    const int64_t e2 = ex_sra(x[s], 1, w) - x[3 * s], e3 = x[s] + ex_sra(x[3 * s], 1, w);
    x[0] = e0 + e3;
    x[s] = e1 + e2;
    x[2 * s] = e1 - e2;
    x[3 * s] = e0 - e3;
}

static void ex_itx8(int64_t *x, int s, int64_t *w) {
    const int64_t d0 = x[0], d1 = x[s], d2 = x[2 * s], d3 = x[3 * s];
    const int64_t d4 = x[4 * s], d5 = x[5 * s], d6 = x[6 * s], d7 = x[7 * s];
    const int64_t e0 = d0 + d4, e1 = -d3 + d5 - d7 - ex_sra(d7, 1, w);
    const int64_t e2 = d0 - d4, e3 = d1 + d7 - d3 - ex_sra(d3, 1, w);
    const int64_t e4 = ex_sra(d2, 1, w) - d6, e5 = -d1 + d7 + d5 + ex_sra(d5, 1, w);
    const int64_t e6 = d2 + ex_sra(d6, 1, w), e7 = d3 + d5 + d1 + ex_sra(d1, 1, w);
    const int64_t f0 = e0 + e6, f1 = e1 + ex_sra(e7, 2, w), f2 = e2 + e4;
    const int64_t f3 = e3 + ex_sra(e5, 2, w), f4 = e2 - e4, f5 = ex_sra(e3, 2, w) - e5;
    const int64_t f6 = e0 - e6, f7 = e7 - ex_sra(e1, 2, w);
    x[0] = f0 + f7;
    x[s] = f2 + f5;
    x[2 * s] = f4 + f3;
    x[3 * s] = f6 + f1;
    x[4 * s] = f6 - f1;
    x[5 * s] = f4 - f3;
    x[6 * s] = f2 - f5;
    x[7 * s] = f0 - f7;
}

static int64_t excess16(const int32_t *d, int n) {
    const int b = n == 64 ? 8 : 4;
    int64_t t[64], w = 0;
    for (int k = 0; k < n; k++) {
        t[k] = d[k];
        ex_note(t[k], &w);
    }
    for (int i = 0; i < b; i++)
        b == 8 ? ex_itx8(t + 8 * i, 1, &w) : ex_itx4(t + 4 * i, 1, &w);
    for (int j = 0; j < b; j++)
        b == 8 ? ex_itx8(t + j, 8, &w) : ex_itx4(t + j, 4, &w);
    for (int k = 0; k < n; k++)
        ex_note(t[k] + 32, &w);
    return w;
}

/* Sign of the weight of input j in output m of the 1-D transform (every weight is
 * non-zero). */
static int tx_sign(int b, int m, int j) {
    int64_t x[8] = {0}, w = 0;
    x[j] = 1024;
    b == 8 ? ex_itx8(x, 1, &w) : ex_itx4(x, 1, &w);
    return x[m] > 0 ? 1 : -1;
}

/* max |d| = M with the signs that drive output (m, k) furthest (sign sg): the worst case
 * of the max test. */
static void worst_max(int32_t *d, int b, int M, int m, int k, int sg) {
    for (int i = 0; i < b; i++)
        for (int j = 0; j < b; j++)
            d[b * i + j] = sg * M * tx_sign(b, m, i) * tx_sign(b, k, j);
}

/* Bound cases (kinds 10 and 11 of gen_d); sub = which one. The blocks "at" a bound pass
 * that test and must be exact in 16 bits; the blocks "past" it fail the test and overflow
 * 16 bits (a wrong bound makes the SIMD output wrong). */
static void gen_bound(int32_t *d, int n, int kind, int sub) {
    const int s = n == 64, b = s ? 8 : 4, B = s ? B8 : B4, T = s ? T8 : T4;
    memset(d, 0, (size_t)n * sizeof(*d));
    int64_t want_min = 0, want_max = 0; /* expected excess range */
    if (kind == 10) {
        /* max test: max |d| = B, or B + 1 */
        const int past = sub & 1, sg = sub & 2 ? -1 : 1;
        /* at: any output, either sign; past: an output that overflows (4x4: (2, 2) and
         * its mirrors, 8x8: (0, 0)...), found by trying them from a random start */
        const int start = ck_rand_range(0, n - 1);
        for (int t = 0; t < n; t++) {
            const int o = (start + t) % n;
            worst_max(d, b, past ? B + 1 : B, o / b, o % b, past ? 1 : sg);
            if (!past || excess16(d, n) > 0) break;
        }
        if (past && sub == 1) {
            /* trim entries other than one at B + 1 until the overflow is exactly 1 */
            const int anchor = ck_rand_range(0, n - 1);
            for (int t = 0; t < 2000 && excess16(d, n) > 1; t++) {
                const int p = ck_rand_range(0, n - 1);
                if (p == anchor || !d[p]) continue;
                const int step = d[p] > 0 ? 1 : -1;
                d[p] -= step;
                if (!excess16(d, n)) d[p] += step;
            }
        }
        want_min = past, want_max = past ? INT64_MAX : 0;
    } else { /* sum test: one coefficient where the gain is largest */
        const int past = sub & 1;
        int pos = 0; /* 4x4: the DC reaches every output with weight 1 */
        if (s) {
            /* 8x8: odd row and column: gain 1.5 x 1.5 on some output */
            pos = sub < 2 ? 9 : 8 * (2 * ck_rand_range(0, 3) + 1) + 2 * ck_rand_range(0, 3) + 1;
        }
        if (!past) {
            d[pos] = sub & 2 ? -T : T;
        } else { /* the smallest value past T that overflows */
            int v = T + 1;
            for (d[pos] = v; v < 32767 && !excess16(d, n); d[pos] = ++v) {
            }
        }
        want_min = past, want_max = past ? INT64_MAX : 0;
    }
    const int64_t e = excess16(d, n);
    if (e < want_min || e > want_max)
        ck_fail("bound case %d.%d (%dx%d): 16-bit excess %lld, not the intended %s", kind, sub,
                b, b, (long long)e, want_min ? "overflow" : "exact block");
}

/* Dequantised coefficients for the idct functions. */
static void gen_d(const Env *e, const VidkH264DSP *c, int32_t *d, int n, int kind) {
    const int s = n == 64, T = s ? T8 : T4;
    memset(d, 0, (size_t)n * sizeof(*d));
    if (kind % N_KINDS >= 10) {
        gen_bound(d, n, kind % N_KINDS, (kind / N_KINDS) % 4);
        return;
    }
    switch (kind % N_KINDS) {
    case 0: { /* dequantised levels of any kind at any qP */
        VIDK_ALIGN(16) int16_t lev[64], ls[6][64];
        const int qp = ck_rand_range(0, MAX_QP);
        gen_levels(e, c, lev, n, ck_rand_range(0, 7), qp);
        uint8_t w[64];
        rand_weights(w, n, ck_rand_range(0, 2));
        if (s)
            vidk_h264_level_scale8(ls, w);
        else
            vidk_h264_level_scale4((int16_t(*)[16])ls, w);
        c->dequant[s](d, lev, s ? ls[qp % 6] : ((int16_t(*)[16])ls)[qp % 6], qp);
        break;
    }
    case 1:
    case 2: { /* sum of |d| right at the 16-bit threshold, adversarial signs */
        const int target = T + ck_rand_range(-40, 40), nz = ck_rand_range(1, n);
        const int pattern = ck_rand_range(0, 3);
        int left = target;
        for (int k = 0; k < nz && left > 0; k++) {
            const int pos = k == nz - 1 ? ck_rand_range(0, n - 1) : ck_rand_range(0, n - 1);
            const int v = k == nz - 1 ? left : ck_rand_range(0, left);
            const int x = pos % (s ? 8 : 4), y = pos / (s ? 8 : 4);
            int sign = 1;
            if (pattern == 1)
                sign = -1;
            else if (pattern == 2)
                sign = (x + y) & 1 ? -1 : 1;
            else if (pattern == 3)
                sign = ck_rand() & 1 ? -1 : 1;
            d[pos] += sign * v;
            left -= v;
        }
        break;
    }
    case 3: { /* one value near the threshold: the worst case of the 16-bit bound is a
               * single coefficient; in 8x8 index 1 of a row / column has gain 1.5, so
               * position (1, 1) gains 2.25 (odd rows / columns 1.25 .. 1.5) */
        int pos = ck_rand_range(0, n - 1);
        if (s && ck_rand_range(0, 2))
            pos = ck_rand() & 1 ? 9 : 8 * (2 * ck_rand_range(0, 3) + 1) + 1;
        d[pos] = (ck_rand() & 1 ? 1 : -1) * ck_rand_range(T - 300, T + 300);
        break;
    }
    case 4: /* random 32-bit */
        for (int k = 0; k < n; k++)
            d[k] = (int32_t)ck_rand();
        break;
    case 5: /* extremes */
        for (int k = 0; k < n; k++)
            d[k] = extremes32[ck_rand_range(0, (int)(sizeof(extremes32) / 4) - 1)];
        break;
    case 6: /* DC only */
        d[0] = ck_rand() & 1 ? (int32_t)ck_rand() : ck_rand_range(-5000, 5000);
        break;
    case 7: /* last only */
        d[n - 1] = ck_rand() & 1 ? (int32_t)ck_rand() : ck_rand_range(-5000, 5000);
        break;
    case 8: /* 16-bit range, dense */
        for (int k = 0; k < n; k++)
            d[k] = (int16_t)ck_rand();
        break;
    default: /* small dense */
        for (int k = 0; k < n; k++)
            d[k] = ck_rand_range(-400, 400);
    }
}

/* ------------------------------------------------------------------ pixel blocks */

/* A picture area with a guard band: the kernel must write exactly the 4x4 / 8x8 block. */
#define PB_STRIDE 48
static uint8_t pix_a[PB_STRIDE * 24], pix_b[PB_STRIDE * 24];

static void fill_pixels(int kind) {
    for (size_t k = 0; k < sizeof(pix_a); k++)
        pix_a[k] = kind == 0 ? (uint8_t)ck_rand() : kind == 1 ? 0 : kind == 2 ? 255 : 128;
    memcpy(pix_b, pix_a, sizeof(pix_a));
}

/* Block origin and stride: positive or negative stride, any alignment. */
static void pix_block(int n, uint8_t **a, uint8_t **b, ptrdiff_t *stride) {
    const int x = ck_rand_range(0, PB_STRIDE - n), neg = ck_rand() & 1;
    ptrdiff_t s = ck_rand_range(n, 2 * n);
    const int y0 = neg ? 8 + (n - 1) * 2 : 4;
    *a = pix_a + y0 * PB_STRIDE + x;
    *b = pix_b + y0 * PB_STRIDE + x;
    s = neg ? -s : s;
    /* stride in units that keep the block inside the buffer: rows are s apart */
    *stride = s;
    (void)n;
}

static int pixels_equal(void) {
    return !memcmp(pix_a, pix_b, sizeof(pix_a));
}

/* ------------------------------------------------------------------ block checks */

static void check_dequant(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int n = s ? 64 : 16;
    VIDK_ALIGN(16) int16_t lev[64], ls[6][64];
    VIDK_ALIGN(16) int32_t a[64 + 4], b[64 + 4];
    uint8_t w[64];
    for (int i = 0; i < N_CASES; i++) {
        const int qp = i <= MAX_QP ? i : ck_rand_range(0, MAX_QP);
        rand_weights(w, n, i % 3);
        if (s)
            vidk_h264_level_scale8(ls, w);
        else
            vidk_h264_level_scale4((int16_t(*)[16])ls, w);
        const int16_t *l = s ? ls[qp % 6] : ((int16_t(*)[16])ls)[qp % 6];
        gen_levels(e, c, lev, n, i % 8, qp);
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        c->dequant[s](a, lev, l, qp);
        d->dequant[s](b, lev, l, qp);
        if (memcmp(a, b, sizeof(a))) {
            int k = 0;
            while (k < n + 4 && a[k] == b[k])
                k++;
            ck_fail("qp %d case %d: d[%d] = %d, expected %d (level %d)", qp, i % 8, k, b[k],
                    a[k], k < n ? lev[k] : 0);
        }
    }
}

static void check_idct(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int n = s ? 64 : 16;
    VIDK_ALIGN(16) int32_t in[64], a[64 + 4], b[64 + 4];
    for (int i = 0; i < N_CASES; i++) {
        gen_d(e, c, in, n, i);
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        c->idct[s](a, in);
        d->idct[s](b, in);
        if (memcmp(a, b, sizeof(a))) {
            int k = 0;
            while (k < n + 4 && a[k] == b[k])
                k++;
            ck_fail("case %d: r[%d] = %d, expected %d (d[0] %d, d[%d] %d)", i % N_KINDS, k,
                    b[k], a[k], in[0], k % n, in[k % n]);
        }
    }
}

static void check_idct_add(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int n = s ? 64 : 16, bs = s ? 8 : 4;
    VIDK_ALIGN(16) int32_t in[64];
    for (int i = 0; i < N_CASES; i++) {
        gen_d(e, c, in, n, i);
        fill_pixels(i % 4);
        uint8_t *pa, *pb;
        ptrdiff_t st;
        pix_block(bs, &pa, &pb, &st);
        c->idct_add[s](pa, st, in);
        d->idct_add[s](pb, st, in);
        if (!pixels_equal())
            ck_fail("case %d, stride %td: pixels differ (d[0] %d)", i % N_KINDS, st, in[0]);
    }
}

/* idct_add16: the same inputs saturated to int16 (the extremes become +-32767 / -32768,
 * the S-threshold cases stay as they are). */
static void check_idct_add16(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int n = s ? 64 : 16, bs = s ? 8 : 4;
    VIDK_ALIGN(16) int32_t in[64];
    VIDK_ALIGN(16) int16_t in16[64];
    for (int i = 0; i < N_CASES; i++) {
        gen_d(e, c, in, n, i);
        for (int k = 0; k < n; k++)
            in16[k] = (int16_t)(in[k] < -32768 ? -32768 : in[k] > 32767 ? 32767 : in[k]);
        fill_pixels(i % 4);
        uint8_t *pa, *pb;
        ptrdiff_t st;
        pix_block(bs, &pa, &pb, &st);
        c->idct_add16[s](pa, st, in16);
        d->idct_add16[s](pb, st, in16);
        if (!pixels_equal())
            ck_fail("case %d, stride %td: pixels differ (d[0] %d)", i % N_KINDS, st, in16[0]);
    }
}

static void check_dequant_idct_add(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d,
                                   int s) {
    const int n = s ? 64 : 16, bs = s ? 8 : 4;
    VIDK_ALIGN(16) int16_t lev[64], ls[6][64];
    uint8_t w[64];
    for (int i = 0; i < 2 * N_CASES; i++) {
        const int qp = i <= MAX_QP ? i : ck_rand_range(0, MAX_QP);
        rand_weights(w, n, i % 3);
        if (s)
            vidk_h264_level_scale8(ls, w);
        else
            vidk_h264_level_scale4((int16_t(*)[16])ls, w);
        const int16_t *l = s ? ls[qp % 6] : ((int16_t(*)[16])ls)[qp % 6];
        gen_levels(e, c, lev, n, i % 8, qp);
        int32_t dcv = 0;
        int use_dc = ck_rand_range(0, 2) == 0;
        if (use_dc) {
            const int k = ck_rand_range(0, 2);
            dcv = k == 0   ? (int32_t)ck_rand()
                  : k == 1 ? extremes32[ck_rand_range(0, (int)(sizeof(extremes32) / 4) - 1)]
                           : ck_rand_range(-3000, 3000);
        }
        if (i % 16 == 15) { /* DC alone at and just past the bounds of the range tests */
            static const int32_t dcb[] = {T4, T4 + 1, -T4, -32768, B4, B4 + 1, -B4, -B4 - 1};
            memset(lev, 0, (size_t)n * sizeof(*lev));
            use_dc = 1;
            dcv = dcb[(i / 16) % 8];
        }
        fill_pixels(i % 4);
        uint8_t *pa, *pb;
        ptrdiff_t st;
        pix_block(bs, &pa, &pb, &st);
        c->dequant_idct_add[s](pa, st, lev, l, qp, use_dc ? &dcv : NULL);
        d->dequant_idct_add[s](pb, st, lev, l, qp, use_dc ? &dcv : NULL);
        if (!pixels_equal())
            ck_fail("qp %d case %d%s: pixels differ (level[0] %d)", qp, i % 8,
                    use_dc ? " with dc" : "", lev[0]);
    }
}

static void check_idct_dc(const VidkH264DSP *c, const VidkH264DSP *d, int t) {
    static const int nv[3] = {16, 4, 8};
    VIDK_ALIGN(16) int16_t lev[16];
    VIDK_ALIGN(16) int32_t a[16 + 4], b[16 + 4];
    for (int i = 0; i < N_CASES; i++) {
        const int qp = i <= MAX_QP ? i : ck_rand_range(0, MAX_QP);
        const int w = i % 3 == 0 ? 16 : i % 3 == 1 ? ck_rand_range(1, 255) : 255;
        memset(lev, 0, sizeof(lev));
        const int kind = i % 4;
        for (int k = 0; k < nv[t]; k++)
            lev[k] = kind == 0   ? (int16_t)ck_rand_range(-30, 30)
                     : kind == 1 ? (int16_t)ck_rand()
                     : kind == 2
                         ? extremes16[ck_rand_range(0, (int)(sizeof(extremes16) / 2) - 1)]
                         : (k == 0 ? (int16_t)ck_rand() : 0);
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        c->idct_dc[t](a, lev, w, qp);
        d->idct_dc[t](b, lev, w, qp);
        if (memcmp(a, b, (size_t)nv[t] * 4) || memcmp(a + 16, b + 16, 16))
            ck_fail("qp %d w %d kind %d: outputs differ", qp, w, kind);
    }
}

static void check_fdct(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int n = s ? 64 : 16;
    VIDK_ALIGN(16) int16_t res[64];
    VIDK_ALIGN(16) int32_t a[64 + 4], b[64 + 4];
    for (int i = 0; i < N_CASES; i++) {
        const int kind = i % 5;
        for (int k = 0; k < n; k++)
            res[k] = kind == 0   ? (int16_t)ck_rand()
                     : kind == 1 ? (int16_t)ck_rand_range(-255, 255)
                     : kind == 2
                         ? extremes16[ck_rand_range(0, (int)(sizeof(extremes16) / 2) - 1)]
                     : kind == 3 ? (ck_rand() & 1 ? 32767 : -32768)
                                 : (int16_t)ck_rand_range(-64, 64);
        if (kind == 4 && e->n_res) {
            const int j = ck_rand_range(0, e->n_res - 1);
            memcpy(res, s ? e->res8[j] : e->res4[j], (size_t)n * 2);
        }
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        c->fdct[s](a, res);
        d->fdct[s](b, res);
        if (memcmp(a, b, sizeof(a)))
            ck_fail("kind %d: outputs differ (res[0] %d)", kind, res[0]);
    }
}

static void check_sub_fdct(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int bs = s ? 8 : 4;
    VIDK_ALIGN(16) int32_t a[64 + 4], b[64 + 4];
    uint8_t src[24 * 24], pred[24 * 24];
    for (int i = 0; i < N_CASES; i++) {
        const int kind = i % 4;
        const uint8_t *ps, *pp;
        ptrdiff_t ss = ck_rand_range(bs, 24), sp = ck_rand_range(bs, 24);
        if (kind == 3 && e->n_res) {
            const int j = ck_rand_range(0, e->n_res - 1);
            ps = e->src8[j];
            pp = e->pred8[j];
            ss = sp = 8;
        } else {
            for (int k = 0; k < 24 * 24; k++) {
                src[k] = kind == 0   ? (uint8_t)ck_rand()
                         : kind == 1 ? 255
                                     : (uint8_t)(ck_rand() & 1 ? 255 : 0);
                pred[k] = kind == 0   ? (uint8_t)ck_rand()
                          : kind == 1 ? 0
                                      : (uint8_t)(255 - src[k]);
            }
            ps = src;
            pp = pred;
            if (ck_rand() & 1) { /* negative strides */
                ps += (bs - 1) * ss;
                pp += (bs - 1) * sp;
                ss = -ss;
                sp = -sp;
            }
        }
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        c->sub_fdct[s](a, ps, ss, pp, sp);
        d->sub_fdct[s](b, ps, ss, pp, sp);
        if (memcmp(a, b, sizeof(a))) ck_fail("kind %d: outputs differ", kind);
    }
}

static void check_quant(const Env *e, const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int n = s ? 64 : 16;
    VIDK_ALIGN(16) int32_t w[64], mf[6][64];
    VIDK_ALIGN(16) int16_t a[64 + 8], b[64 + 8];
    uint8_t wt[64];
    for (int i = 0; i < N_CASES; i++) {
        const int qp = i <= MAX_QP ? i : ck_rand_range(0, MAX_QP);
        const int kind = i % 6;
        rand_weights(wt, n, i % 3);
        if (s)
            vidk_h264_quant_mf8(mf, wt);
        else
            vidk_h264_quant_mf4((int32_t(*)[16])mf, wt);
        int32_t m[64];
        memcpy(m, s ? mf[qp % 6] : ((int32_t(*)[16])mf)[qp % 6], (size_t)n * 4);
        if (kind == 5) /* arbitrary factors of the contract's range, and a zeroed DC */
            for (int k = 0; k < n; k++)
                m[k] = ck_rand_range(0, (1 << 20) - 1);
        if (i & 1) m[0] = 0;
        int qbits = (s ? 16 : 15) + qp / 6;
        if (kind == 5) qbits = ck_rand_range(15, 31);
        const int32_t f =
            kind == 5 ? (int32_t)(ck_rand() >> 1) : vidk_h264_deadzone(qbits, i & 2);
        for (int k = 0; k < n; k++)
            w[k] = kind == 0   ? (int32_t)ck_rand()
                   : kind == 1 ? ck_rand_range(-20000, 20000)
                   : kind == 2 ? extremes32[ck_rand_range(0, (int)(sizeof(extremes32) / 4) - 1)]
                   : kind == 3 ? ck_rand_range(-(1 << 22), 1 << 22)
                               : ck_rand_range(-300, 300);
        if (kind == 4 && e->n_res) {
            const int j = ck_rand_range(0, e->n_res - 1);
            c->fdct[s](w, s ? e->res8[j] : e->res4[j]);
        }
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        const int na = c->quant[s](a, w, m, qbits, f);
        const int nb = d->quant[s](b, w, m, qbits, f);
        if (na != nb || memcmp(a, b, sizeof(a))) {
            int k = 0;
            while (k < n + 8 && a[k] == b[k])
                k++;
            ck_fail(
                "qp %d kind %d qbits %d: nnz %d / %d, lev[%d] = %d, expected %d (w %d mf %d)",
                qp, kind, qbits, nb, na, k, b[k], a[k], w[k % n], m[k % n]);
        }
    }
}

static void check_fdct_dc(const VidkH264DSP *c, const VidkH264DSP *d, int t) {
    VIDK_ALIGN(16) int32_t w[16], a[16 + 4], b[16 + 4];
    static const int nv[3] = {16, 4, 8};
    for (int i = 0; i < N_CASES; i++) {
        memset(w, 0, sizeof(w));
        for (int k = 0; k < nv[t]; k++)
            w[k] = i % 2 ? ck_rand_range(-(1 << 24), 1 << 24) : ck_rand_range(-4080, 4080);
        memset(a, 0x5a, sizeof(a));
        memset(b, 0x5a, sizeof(b));
        c->fdct_dc[t](a, w);
        d->fdct_dc[t](b, w);
        if (memcmp(a, b, (size_t)nv[t] * 4) || memcmp(a + 16, b + 16, 16))
            ck_fail("case %d differs", i);
    }
}

static void check_nnz(const VidkH264DSP *c, const VidkH264DSP *d, int s) {
    const int bs = s ? 8 : 4;
    static int16_t plane[40 * 40];
    for (int i = 0; i < N_CASES; i++) {
        const int stride = ck_rand_range(bs, 40);
        const int density = ck_rand_range(0, 4);
        for (int k = 0; k < 40 * 40; k++)
            plane[k] =
                (int16_t)(density && ck_rand_range(0, 1 << density) == 0 ? ck_rand() : 0);
        if (i % 5 == 0) /* only one level set */
            for (int k = 0; k < 40 * 40; k++)
                plane[k] = 0, plane[ck_rand_range(0, bs - 1)] = -1;
        const int16_t *blk = plane + ck_rand_range(0, 40 - bs);
        const int a = c->nnz[s](blk, stride * 2), b = d->nnz[s](blk, stride * 2);
        if (a != b) ck_fail("stride %d: %d, expected %d", stride, b, a);
    }
}

static void check_blocks(const Env *e) {
    VidkH264DSP c, prev;
    vidk_h264_dsp_init(&c, 0);
    memset(&prev, 0, sizeof(prev));
    /* bench inputs: typical decoder blocks (sparse, QP 26) */
    VIDK_ALIGN(16) int16_t blev[64] = {0}, bls[6][64], bls4[6][16];
    VIDK_ALIGN(16) int32_t bd[64], br[64], bw[64], bmf[6][64];
    static uint8_t bpix[64 * 16];
    blev[0] = 5, blev[1] = -2, blev[8] = 1, blev[2] = 1;
    vidk_h264_level_scale8(bls, NULL);
    vidk_h264_level_scale4(bls4, NULL);
    vidk_h264_quant_mf8(bmf, NULL);
    for (int k = 0; k < 64; k++)
        bd[k] = (k * 37 % 11) - 5;
    for (int k = 0; k < (int)sizeof(bpix); k++)
        bpix[k] = (uint8_t)(k * 7);
    const int32_t bdc = 77;
    volatile int sink = 0;
    char name[64];
    for (int l = 0; l < ck_level_count(); l++) {
        const CkLevel *lv = ck_level(l);
        VidkH264DSP d;
        vidk_h264_dsp_init(&d, lv->flags);
#define BEGIN(fname, field)                                                                    \
    ck_begin(fname, lv->name, (const void *)d.field, l ? (const void *)prev.field : NULL)
        for (int s = 0; s < 2; s++) {
            const int16_t *ls = s ? bls[2] : bls4[2]; /* qP 26 */
            snprintf(name, sizeof(name), "dequant_%s", sz_name[s]);
            if (BEGIN(name, dequant[s])) {
                check_dequant(e, &c, &d, s);
                CK_BENCH(d.dequant[s](bd, blev, ls, 26));
                ck_end();
            }
            snprintf(name, sizeof(name), "idct_%s", sz_name[s]);
            if (BEGIN(name, idct[s])) {
                check_idct(e, &c, &d, s);
                CK_BENCH(d.idct[s](br, bd));
                ck_end();
            }
            snprintf(name, sizeof(name), "idct_add_%s", sz_name[s]);
            if (BEGIN(name, idct_add[s])) {
                check_idct_add(e, &c, &d, s);
                CK_BENCH(d.idct_add[s](bpix + 64, 64, bd));
                ck_end();
            }
            snprintf(name, sizeof(name), "idct_add16_%s", sz_name[s]);
            if (BEGIN(name, idct_add16[s])) {
                check_idct_add16(e, &c, &d, s);
                CK_BENCH(d.idct_add16[s](bpix + 64, 64, blev));
                ck_end();
            }
            snprintf(name, sizeof(name), "dequant_idct_add_%s", sz_name[s]);
            if (BEGIN(name, dequant_idct_add[s])) {
                check_dequant_idct_add(e, &c, &d, s);
                CK_BENCH(d.dequant_idct_add[s](bpix + 64, 64, blev, ls, 26, NULL));
                if (!s) CK_BENCH(d.dequant_idct_add[s](bpix + 64, 64, blev, ls, 26, &bdc));
                ck_end();
            }
            snprintf(name, sizeof(name), "fdct_%s", sz_name[s]);
            if (BEGIN(name, fdct[s])) {
                check_fdct(e, &c, &d, s);
                CK_BENCH(d.fdct[s](bw, blev));
                ck_end();
            }
            snprintf(name, sizeof(name), "sub_fdct_%s", sz_name[s]);
            if (BEGIN(name, sub_fdct[s])) {
                check_sub_fdct(e, &c, &d, s);
                CK_BENCH(d.sub_fdct[s](bw, bpix, 64, bpix + 192, 64));
                ck_end();
            }
            snprintf(name, sizeof(name), "quant_%s", sz_name[s]);
            if (BEGIN(name, quant[s])) {
                check_quant(e, &c, &d, s);
                CK_BENCH(sink += d.quant[s](blev, bd, bmf[2], (s ? 16 : 15) + 4, 1 << 17));
                ck_end();
            }
            snprintf(name, sizeof(name), "nnz_%s", sz_name[s]);
            if (BEGIN(name, nnz[s])) {
                check_nnz(&c, &d, s);
                CK_BENCH(sink += d.nnz[s](blev, 16));
                ck_end();
            }
        }
        for (int t = 0; t < 3; t++) {
            snprintf(name, sizeof(name), "idct_dc_%s", dc_name[t]);
            if (BEGIN(name, idct_dc[t])) {
                check_idct_dc(&c, &d, t);
                CK_BENCH(d.idct_dc[t](bd, blev, 16, 30));
                ck_end();
            }
            snprintf(name, sizeof(name), "fdct_dc_%s", dc_name[t]);
            if (BEGIN(name, fdct_dc[t])) {
                check_fdct_dc(&c, &d, t);
                CK_BENCH(d.fdct_dc[t](bw, bd));
                ck_end();
            }
        }
#undef BEGIN
        prev = d;
    }
    (void)sink;
}

/* ------------------------------------------------------------------ frame level */

typedef struct FrameCase {
    VidkH264CoefFrame fr; /* mb info + scaling (levels produced per backend) */
    VidkPicture src, pred;
    char name[96];
} FrameCase;

static void random_mbs(VidkH264CoefFrame *fr, int qmin, int qmax) {
    for (int i = 0; i < fr->mb_w * fr->mb_h; i++) {
        VidkH264MbInfo *m = &fr->mb[i];
        m->flags = (uint8_t)(ck_rand() & 1 ? VIDK_H264_MB_INTRA : 0);
        const int k = ck_rand_range(0, 2);
        if (k == 1) m->flags |= VIDK_H264_MB_8x8;
        if (k == 2 && (m->flags & VIDK_H264_MB_INTRA)) m->flags |= VIDK_H264_MB_I16x16;
        m->qp[0] = (uint8_t)ck_rand_range(qmin, qmax);
        if (fr->chroma != VIDK_CHROMA_400) {
            m->qp[1] = (uint8_t)ck_rand_range(qmin, qmax);
            m->qp[2] = (uint8_t)ck_rand_range(qmin, qmax);
        }
    }
}

static void random_scaling(VidkH264Scaling *s) {
    for (int l = 0; l < 6; l++) {
        for (int k = 0; k < 16; k++)
            s->m4[l][k] = (uint8_t)ck_rand_range(1, 255);
        for (int k = 0; k < 64; k++)
            s->m8[l][k] = (uint8_t)ck_rand_range(1, 255);
    }
}

static int same_batch(const VidkH264Batch *a, const VidkH264Batch *b) {
    for (int s = 0; s < 2; s++) {
        const VidkH264BlockList *x = &a->list[s], *y = &b->list[s];
        const size_t n = x->count, nv = s ? 64 : 16;
        if (x->count != y->count) return 0;
        if (n && (memcmp(x->x, y->x, n * 2) || memcmp(x->y, y->y, n * 2) ||
                  memcmp(x->plane, y->plane, n) || memcmp(x->qp, y->qp, n) ||
                  memcmp(x->flags, y->flags, n) || memcmp(x->dc_index, y->dc_index, n * 4) ||
                  memcmp(x->coef, y->coef, n * nv * 2)))
            return 0;
    }
    const size_t n = a->dc.count;
    if (n != b->dc.count) return 0;
    return !n || !(memcmp(a->dc.x, b->dc.x, n * 2) || memcmp(a->dc.y, b->dc.y, n * 2) ||
                   memcmp(a->dc.plane, b->dc.plane, n) || memcmp(a->dc.qp, b->dc.qp, n) ||
                   memcmp(a->dc.type, b->dc.type, n) || memcmp(a->dc.flags, b->dc.flags, n) ||
                   memcmp(a->dc.coef, b->dc.coef, n * 32));
}

static int same_pic(const VidkPicture *a, const VidkPicture *b) {
    for (int p = 0; p < (a->chroma == VIDK_CHROMA_400 ? 1 : 3); p++) {
        int pw, ph;
        vidk_picture_plane_size(a, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            if (memcmp((const uint8_t *)a->data[p] + y * a->stride[p],
                       (const uint8_t *)b->data[p] + y * b->stride[p], (size_t)pw))
                return 0;
    }
    return 1;
}

static void copy_pic(VidkPicture *d, const VidkPicture *s) {
    for (int p = 0; p < (s->chroma == VIDK_CHROMA_400 ? 1 : 3); p++) {
        int pw, ph;
        vidk_picture_plane_size(s, p, &pw, &ph);
        for (int y = 0; y < ph; y++)
            memcpy((uint8_t *)d->data[p] + y * d->stride[p],
                   (const uint8_t *)s->data[p] + y * s->stride[p], (size_t)pw);
    }
}

static int same_levels(const VidkH264CoefFrame *a, const VidkH264CoefFrame *b) {
    for (int p = 0; p < (a->chroma == VIDK_CHROMA_400 ? 1 : 3); p++)
        if (memcmp(a->coef[p], b->coef[p], (size_t)a->plane_w[p] * a->plane_h[p] * 2)) return 0;
    return 1;
}

/* Case list: the real clips (4:2:0 and a 4:2:2 variant), then synthetic frames whose
 * levels are random over the full int16 range (bit depth up to 14 for the qP range). */
static int make_cases(const Env *e, FrameCase *fc, int max) {
    int n = 0;
    for (int k = 0; k < e->n_pics && n < max; k++, n++) {
        FrameCase *f = &fc[n];
        memset(f, 0, sizeof(*f));
        const VidkChroma ch = k == 1 ? VIDK_CHROMA_422 : VIDK_CHROMA_420;
        const int w = e->cur[k].w, h = e->cur[k].h;
        if (vidk_h264_coef_frame_alloc(&f->fr, w, h, ch, 8) < 0 ||
            vidk_picture_alloc(&f->src, w, h, ch, 8, 0) < 0 ||
            vidk_picture_alloc(&f->pred, w, h, ch, 8, 0) < 0)
            return n;
        /* 4:2:2 variant: chroma rows repeated */
        for (int p = 0; p < 3; p++) {
            int pw, ph;
            vidk_picture_plane_size(&f->src, p, &pw, &ph);
            for (int y = 0; y < ph; y++) {
                const int sy = ch == VIDK_CHROMA_422 && p ? y / 2 : y;
                memcpy((uint8_t *)f->src.data[p] + y * f->src.stride[p],
                       (const uint8_t *)e->cur[k].data[p] + sy * e->cur[k].stride[p],
                       (size_t)pw);
                memcpy((uint8_t *)f->pred.data[p] + y * f->pred.stride[p],
                       (const uint8_t *)e->ref[k].data[p] + sy * e->ref[k].stride[p],
                       (size_t)pw);
            }
        }
        random_mbs(&f->fr, 0, 51);
        if (k == 2) random_scaling(&f->fr.scaling);
        snprintf(f->name, sizeof(f->name), "%s%s", e->names[k],
                 ch == VIDK_CHROMA_422 ? " (4:2:2)" : "");
    }
    static const VidkChroma chs[3] = {VIDK_CHROMA_420, VIDK_CHROMA_422, VIDK_CHROMA_400};
    for (int k = 0; k < 3 && n < max; k++, n++) {
        FrameCase *f = &fc[n];
        memset(f, 0, sizeof(*f));
        const int w = 16 * ck_rand_range(1, 6), h = 16 * ck_rand_range(1, 5);
        const int bd = k == 0 ? 8 : ck_rand_range(9, 14);
        if (vidk_h264_coef_frame_alloc(&f->fr, w, h, chs[k], bd) < 0 ||
            vidk_picture_alloc(&f->src, w, h, chs[k], 8, 0) < 0 ||
            vidk_picture_alloc(&f->pred, w, h, chs[k], 8, 0) < 0)
            return n;
        for (int p = 0; p < (chs[k] == VIDK_CHROMA_400 ? 1 : 3); p++) {
            int pw, ph;
            vidk_picture_plane_size(&f->src, p, &pw, &ph);
            for (int y = 0; y < ph; y++)
                for (int x = 0; x < pw; x++) {
                    ((uint8_t *)f->src.data[p])[y * f->src.stride[p] + x] = (uint8_t)ck_rand();
                    ((uint8_t *)f->pred.data[p])[y * f->pred.stride[p] + x] =
                        (uint8_t)ck_rand();
                }
        }
        random_mbs(&f->fr, 0, VIDK_H264_MAX_QP(bd));
        if (k) random_scaling(&f->fr.scaling);
        snprintf(f->name, sizeof(f->name), "random %dx%d chroma %d bitdepth %d", w, h, chs[k],
                 bd);
    }
    return n;
}

/* Random levels everywhere (full int16 range, a third of the blocks zero). */
static void random_levels(VidkH264CoefFrame *fr) {
    for (int p = 0; p < (fr->chroma == VIDK_CHROMA_400 ? 1 : 3); p++)
        for (int ty = 0; ty < fr->plane_h[p] / 4; ty++)
            for (int tx = 0; tx < fr->plane_w[p] / 4; tx++) {
                const int kind = ck_rand_range(0, 5);
                for (int k = 0; k < 16; k++) {
                    int16_t v = 0;
                    if (kind == 1)
                        v = (int16_t)ck_rand();
                    else if (kind == 2)
                        v = ck_rand_range(0, 3) ? 0 : (int16_t)ck_rand_range(-40, 40);
                    else if (kind == 3)
                        v = extremes16[ck_rand_range(0, (int)(sizeof(extremes16) / 2) - 1)];
                    else if (kind == 4 && k == 0)
                        v = (int16_t)ck_rand();
                    fr->coef[p][(size_t)(4 * ty + k / 4) * fr->plane_w[p] + 4 * tx + k % 4] = v;
                }
            }
}

static void check_frames(const Env *e) {
    VidkContext *cref = ck_open(VIDK_BACKEND_C, 0);
    if (!cref) {
        ck_fail("cannot open the c backend");
        return;
    }
    FrameCase fc[8];
    const int nfc = make_cases(e, fc, 8);
    struct {
        VidkBackend b;
        int threads;
        const char *name;
    } bk[] = {{VIDK_BACKEND_C, 0, "c"}, /* against itself: the bench baseline */
              {VIDK_BACKEND_SIMD, 0, "simd"},
              {VIDK_BACKEND_THREADS, 1, "threads1"},
              {VIDK_BACKEND_THREADS, 2, "threads2"},
              {VIDK_BACKEND_THREADS, 3, "threads3"},
              {VIDK_BACKEND_CUDA, 0, "cuda"}};
    VidkH264CoefFrame lev_c, lev_x;
    VidkH264Batch bc, bx;
    VidkPicture rc, rx;
    vidk_h264_batch_init(&bc);
    vidk_h264_batch_init(&bx);
    for (size_t bi = 0; bi < sizeof(bk) / sizeof(bk[0]); bi++) {
        VidkContext *ctx = ck_open(bk[bi].b, bk[bi].threads);
        if (!ctx) continue;
        const int do_fwd = ck_begin("batch_forward", bk[bi].name, NULL, NULL);
        for (int i = 0; do_fwd && i < nfc; i++) {
            FrameCase *f = &fc[i];
            if (vidk_h264_coef_frame_alloc(&lev_c, f->fr.w, f->fr.h, f->fr.chroma,
                                           f->fr.bitdepth) < 0)
                break;
            if (vidk_h264_coef_frame_alloc(&lev_x, f->fr.w, f->fr.h, f->fr.chroma,
                                           f->fr.bitdepth) < 0) {
                vidk_h264_coef_frame_free(&lev_c);
                break;
            }
            memcpy(lev_c.mb, f->fr.mb, (size_t)f->fr.mb_w * f->fr.mb_h * sizeof(*f->fr.mb));
            memcpy(lev_x.mb, f->fr.mb, (size_t)f->fr.mb_w * f->fr.mb_h * sizeof(*f->fr.mb));
            lev_c.scaling = lev_x.scaling = f->fr.scaling;
            const int nc = vidk_h264_batch_forward(cref, &f->src, &f->pred, &lev_c, &bc);
            const int nx = vidk_h264_batch_forward(ctx, &f->src, &f->pred, &lev_x, &bx);
            if (nc < 0 || nx != nc || !same_levels(&lev_c, &lev_x) || !same_batch(&bc, &bx))
                ck_fail("%s: nnz %d, expected %d; levels %s, batch %s", f->name, nx, nc,
                        same_levels(&lev_c, &lev_x) ? "equal" : "differ",
                        same_batch(&bc, &bx) ? "equal" : "differs");
            if (i == 0) CK_BENCH(vidk_h264_batch_forward(ctx, &f->src, &f->pred, &lev_x, NULL));
            vidk_h264_coef_frame_free(&lev_c);
            vidk_h264_coef_frame_free(&lev_x);
        }
        if (do_fwd) ck_end();

        /* Inverse: real-clip levels from the c encoder, then random levels. */
        const int do_inv = ck_begin("batch_inverse", bk[bi].name, NULL, NULL);
        for (int i = 0; do_inv && i < 2 * nfc; i++) {
            FrameCase *f = &fc[i % nfc];
            VidkH264CoefFrame *fr = &f->fr;
            if (i < nfc) {
                if (vidk_h264_batch_forward(cref, &f->src, &f->pred, fr, NULL) < 0) continue;
            } else {
                random_levels(fr);
            }
            if (vidk_picture_alloc(&rc, fr->w, fr->h, fr->chroma, 8, 0) < 0) break;
            if (vidk_picture_alloc(&rx, fr->w, fr->h, fr->chroma, 8, 0) < 0) {
                vidk_picture_free(&rc);
                break;
            }
            int err;
            if ((err = vidk_h264_batch_build(cref, &bc, fr)) < 0 ||
                (err = vidk_h264_batch_build(ctx, &bx, fr)) < 0)
                ck_fail("%s: build failed: %s", f->name, vidk_strerror(err));
            else if (!same_batch(&bc, &bx))
                ck_fail("%s: batch_build differs from the c backend's", f->name);
            copy_pic(&rc, &f->pred);
            copy_pic(&rx, &f->pred);
            if ((err = vidk_h264_batch_inverse(cref, &bc, &rc)) < 0 ||
                (err = vidk_h264_batch_inverse(ctx, &bx, &rx)) < 0)
                ck_fail("%s: batch_inverse failed: %s", f->name, vidk_strerror(err));
            else if (!same_pic(&rc, &rx))
                ck_fail("%s (%s levels): pictures differ", f->name,
                        i < nfc ? "encoded" : "random");
            copy_pic(&rx, &f->pred);
            if ((err = vidk_h264_frame_inverse(ctx, fr, &rx)) < 0)
                ck_fail("%s: frame_inverse failed: %s", f->name, vidk_strerror(err));
            else if (!same_pic(&rc, &rx))
                ck_fail("%s (%s levels): frame_inverse differs from batch_inverse", f->name,
                        i < nfc ? "encoded" : "random");
            if (i == 0) {
                CK_BENCH(vidk_h264_batch_inverse(ctx, &bx, &rx));
                CK_BENCH(vidk_h264_frame_inverse(ctx, fr, &rx));
                CK_BENCH(vidk_h264_batch_build(ctx, &bx, fr));
            }
            vidk_picture_free(&rc);
            vidk_picture_free(&rx);
        }
        if (do_inv) ck_end();
        vidk_close(&ctx);
    }
    /* Backend independent: scatter and the sparse packing round trip. */
    if (ck_begin("sparse_pack", "c", NULL, NULL)) {
        for (int i = 0; i < nfc; i++) {
            VidkH264CoefFrame *fr = &fc[i].fr;
            VidkH264Sparse sp;
            memset(&sp, 0, sizeof(sp));
            random_levels(fr);
            if (vidk_h264_batch_build(cref, &bc, fr) < 0 ||
                vidk_h264_batch_build(cref, &bx, fr) < 0 ||
                vidk_h264_sparse_pack(&sp, &bc) < 0) {
                ck_fail("%s: build/pack failed", fc[i].name);
                continue;
            }
            for (int s = 0; s < 2; s++)
                if (bx.list[s].count)
                    memset(bx.list[s].coef, 0x77, (size_t)bx.list[s].count * (s ? 128 : 32));
            if (vidk_h264_sparse_unpack(&sp, &bx) < 0 || !same_batch(&bc, &bx))
                ck_fail("%s: sparse round trip differs", fc[i].name);
            if (i == 0) CK_BENCH(vidk_h264_sparse_pack(&sp, &bc));
            vidk_h264_sparse_free(&sp);
        }
        ck_end();
    }
    vidk_h264_batch_free(&bc);
    vidk_h264_batch_free(&bx);
    for (int i = 0; i < nfc; i++) {
        vidk_h264_coef_frame_free(&fc[i].fr);
        vidk_picture_free(&fc[i].src);
        vidk_picture_free(&fc[i].pred);
    }
    vidk_close(&cref);
}

void ck_family_h264(void) {
    Env *e = malloc(sizeof(*e));
    if (!e) {
        ck_fail("out of memory");
        return;
    }
    env_init(e);
    check_blocks(e);
    check_frames(e);
    env_free(e);
    free(e);
}
