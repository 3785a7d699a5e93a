/* checkkern: the HEVC transform + quantisation family.
 *
 * Block level: every table entry at every ISA level against the C version, with
 * sentinels after the outputs and in-place calls:
 * - forward transforms (DCT 4..32, DST 4x4, transform skip) at bit depths 8, 10, 12 on
 *   random residuals of the domain, extremes (+-(2^bd - 1)), worst cases whose signs
 *   follow a basis function in both directions (the largest stage-1 values and
 *   coefficients: where 16-bit butterflies overflow), raw int16 (outside the domain: the
 *   documented clip), sparse and small blocks, and real-clip residuals (differences of
 *   two frames, scaled to the bit depth);
 * - inverse transforms on any int16 coefficients, extremes, worst cases that drive the
 *   first stage far past 16 bits (the normative clip), sparse blocks and real
 *   coefficients (forward + quant + dequant of real residuals);
 * - quantisers (flat and scaling lists with random matrices) for every qP of 0..51 +
 *   QpBdOffset at bit depths 8, 10, 12, I- and P-slice offsets; dequantisers (flat and
 *   scaling lists) over every qP, size and bit depth (right and left shifts); the
 *   non-zero counters; residual / reconstruction pixel loops (8- and 16-bit samples,
 *   saturating residuals, odd and negative strides).
 * Frame level: vidk_hevc_batch_residual / _forward / _inverse on simd, threads (1, 2, 3
 * threads) and cuda (when it has a device) against the c
 * backend, and the c backend against a TB-by-TB composition of the block API (which
 * checks the batch's grouping, compaction and reconstruction order): real clips with a
 * random quadtree of TBs on all three planes, random qP / flags / scaling lists, and
 * synthetic 10- and 12-bit frames with extreme residuals. --bench adds a DCI 4K luma
 * frame (all 4x4, all 32x32) forward and inverse per backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "internal.h"

#define MAXB  8  /* blocks per call in the checks */
#define GUARD 64 /* sentinel values after an output */
#define BUFV  (MAXB * 1024 + GUARD)
#define SENT  ((int16_t)0x5a5a)

typedef struct HevcEnv {
    VidkPicture pics[8][2]; /* (current, reference) luma + chroma, 8-bit */
    char names[8][64];
    int n_pics;
} HevcEnv;

static const char *const tx_names[VIDK_HEVC_TX_COUNT] = {"4x4",   "8x8",     "16x16",
                                                         "32x32", "dst_4x4", "ts_4x4"};
static int tx_log2(int tx) {
    return tx < 4 ? tx + 2 : 2;
}

/* Basis coefficient (k, n) of a transform kind (TS uses the DCT's for the patterns). */
static int basis(int tx, int k, int n) {
    if (tx == VIDK_HEVC_TX_DST4) return vidk_hevc_dst4[k][n];
    return vidk_hevc_t32[k << (5 - tx_log2(tx))][n];
}
static int sgn(int v) {
    return v < 0 ? -1 : 1;
}

/* ------------------------------------------------------------------ inputs */

enum { P_RANDOM, P_EXTREME, P_WORST, P_SPARSE, P_INT16, P_SMALL, P_REAL, P_COUNT };
static const char *const pat_names[P_COUNT] = {"random", "extreme", "worst", "sparse",
                                               "int16",  "small",   "real"};

/* A real residual block: frame difference at a random place of a random clip, scaled
 * to the bit depth. Returns 0 without clips. */
static int real_residual(const HevcEnv *e, int16_t *r, int n, int bd) {
    if (!e->n_pics) return 0;
    const int p = ck_rand_range(0, e->n_pics - 1),
              pl = ck_rand_range(0, 3) ? 0 : ck_rand_range(1, 2);
    const VidkPicture *a = &e->pics[p][0], *b = &e->pics[p][1];
    int w, h;
    if (vidk_picture_plane_size(a, pl, &w, &h) < 0 || w < n || h < n) return 0;
    const int x = ck_rand_range(0, w - n), y = ck_rand_range(0, h - n);
    /* a displaced reference: the prediction error of a slightly wrong motion vector */
    const int dx = ck_rand_range(-2, 2), dy = ck_rand_range(-2, 2);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const uint8_t *sa = (const uint8_t *)a->data[pl] + (y + i) * a->stride[pl] + x + j;
            const uint8_t *sb =
                (const uint8_t *)b->data[pl] + (y + i + dy) * b->stride[pl] + x + j + dx;
            r[i * n + j] = (int16_t)((*sa - *sb) * (1 << (bd - 8)));
        }
    return 1;
}

static void fill_residual(const HevcEnv *e, int16_t *r, int tx, int bd, int pat) {
    const int n = 1 << tx_log2(tx), len = n * n, lim = (1 << bd) - 1;
    switch (pat) {
    case P_RANDOM:
        for (int i = 0; i < len; i++)
            r[i] = (int16_t)ck_rand_range(-lim, lim);
        break;
    case P_EXTREME:
        for (int i = 0; i < len; i++)
            r[i] = (int16_t)(ck_rand() & 1 ? lim : -lim);
        break;
    case P_WORST: {
        /* signs of basis k along rows and of basis v along columns: the row transform
         * peaks at coefficient k, then stage 2 at v (k = v = 0: a flat +-lim block) */
        const int k = ck_rand_range(0, 3) ? ck_rand_range(0, n - 1) : 0;
        const int v = ck_rand_range(0, 3) ? ck_rand_range(0, n - 1) : 0,
                  s = ck_rand() & 1 ? 1 : -1;
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++)
                r[y * n + x] = (int16_t)(s * lim * sgn(basis(tx, k, x)) * sgn(basis(tx, v, y)));
        break;
    }
    case P_SPARSE:
        memset(r, 0, (size_t)len * sizeof(*r));
        for (int i = ck_rand_range(0, 3); i >= 0; i--)
            r[ck_rand_range(0, len - 1)] = (int16_t)ck_rand_range(-lim, lim);
        break;
    case P_INT16:
        for (int i = 0; i < len; i++)
            r[i] = (int16_t)ck_rand();
        break;
    case P_SMALL:
        for (int i = 0; i < len; i++)
            r[i] = (int16_t)ck_rand_range(-3, 3);
        break;
    default:
        if (!real_residual(e, r, n, bd))
            for (int i = 0; i < len; i++)
                r[i] = (int16_t)ck_rand_range(-lim / 8, lim / 8);
        break;
    }
}

/* Inverse transform inputs (dequantised coefficients, any int16). */
static void fill_coef(const HevcEnv *e, const VidkHevcDSP *c, int16_t *d, int tx, int bd,
                      int pat) {
    const int n = 1 << tx_log2(tx), len = n * n;
    switch (pat) {
    case P_RANDOM:
    case P_INT16:
        for (int i = 0; i < len; i++)
            d[i] = (int16_t)ck_rand();
        break;
    case P_EXTREME:
        for (int i = 0; i < len; i++)
            d[i] = (int16_t)(ck_rand() & 1 ? 32767 : -32768);
        break;
    case P_WORST: {
        /* column sums peak at output row y0 (far beyond 16 bits: the clip after stage 1),
         * and the clipped rows then add up coherently at column x0 */
        const int y0 = ck_rand_range(0, n - 1), x0 = ck_rand_range(0, n - 1);
        for (int k = 0; k < n; k++)
            for (int x = 0; x < n; x++)
                d[k * n + x] =
                    (int16_t)(sgn(basis(tx, k, y0)) * sgn(basis(tx, x, x0)) > 0 ? 32767
                                                                                : -32768);
        break;
    }
    case P_SPARSE:
        memset(d, 0, (size_t)len * sizeof(*d));
        for (int i = ck_rand_range(0, 3); i >= 0; i--)
            d[ck_rand_range(0, len - 1)] = (int16_t)ck_rand();
        if (ck_rand() & 1) d[0] = (int16_t)ck_rand(); /* DC */
        break;
    case P_SMALL:
        for (int i = 0; i < len; i++)
            d[i] = (int16_t)ck_rand_range(-300, 300);
        break;
    default: { /* real: forward, quantise, dequantise a real residual */
        int16_t r[1024];
        uint16_t z;
        const int qp = ck_rand_range(0, VIDK_HEVC_MAX_QP(bd)), l2 = tx_log2(tx);
        const int qb = vidk_hevc_qbits(qp, bd, l2);
        fill_residual(e, r, tx, bd, P_REAL);
        c->fwd[tx](d, r, 1, bd);
        c->quant(d, d, 1, len, vidk_hevc_qscale[qp % 6], qb, vidk_hevc_qoffset(qb, 1), &z);
        c->dequant(d, d, (size_t)len, 16 * vidk_hevc_level_scale[qp % 6],
                   vidk_hevc_dqshift(qp, bd, l2));
        break;
    }
    }
}

static int guard_ok(const int16_t *p) /* the GUARD values after an output */
{
    for (int i = 0; i < GUARD; i++)
        if (p[i] != SENT) return 0;
    return 1;
}

static int first_diff(const int16_t *a, const int16_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return i;
    return -1;
}

/* ------------------------------------------------------------------ transforms */

static int16_t g_in[BUFV], g_a[BUFV], g_b[BUFV], g_c[BUFV];

static void check_fwd(const HevcEnv *e, const VidkHevcDSP *c, int tx, vidk_hevc_fwd_fn ref,
                      vidk_hevc_fwd_fn fn) {
    const int len = 1 << (2 * tx_log2(tx));
    for (int it = 0; it < 42 * P_COUNT; it++) {
        const int bd = 8 + 2 * (it % 3), pat = (it / 3) % P_COUNT;
        const int nb = ck_rand_range(1, MAXB);
        for (int b = 0; b < nb; b++)
            fill_residual(e, g_in + b * len, tx, bd, b ? ck_rand_range(0, P_COUNT - 1) : pat);
        for (int i = 0; i < BUFV; i++)
            g_a[i] = g_b[i] = SENT;
        ref(g_a, g_in, nb, bd);
        fn(g_b, g_in, nb, bd);
        const int d = first_diff(g_a, g_b, nb * len);
        if (d >= 0) {
            ck_fail("%s, bd %d, %d blocks: block %d coefficient %d: %d, expected %d",
                    pat_names[pat], bd, nb, d / len, d % len, g_b[d], g_a[d]);
            continue;
        }
        if (!guard_ok(g_b + nb * len)) ck_fail("wrote past %d blocks", nb);
        /* in place */
        memcpy(g_c, g_in, (size_t)(nb * len) * sizeof(int16_t));
        fn(g_c, g_c, nb, bd);
        if (first_diff(g_a, g_c, nb * len) >= 0)
            ck_fail("%s, bd %d: in-place result differs", pat_names[pat], bd);
    }
    (void)c;
}

static void check_inv(const HevcEnv *e, const VidkHevcDSP *c, int tx, vidk_hevc_inv_fn ref,
                      vidk_hevc_inv_fn fn) {
    const int len = 1 << (2 * tx_log2(tx));
    for (int it = 0; it < 42 * P_COUNT; it++) {
        const int bd = 8 + 2 * (it % 3), pat = (it / 3) % P_COUNT;
        const int nb = ck_rand_range(1, MAXB);
        for (int b = 0; b < nb; b++)
            fill_coef(e, c, g_in + b * len, tx, bd, b ? ck_rand_range(0, P_COUNT - 1) : pat);
        for (int i = 0; i < BUFV; i++)
            g_a[i] = g_b[i] = SENT;
        ref(g_a, g_in, nb, bd);
        fn(g_b, g_in, nb, bd);
        const int d = first_diff(g_a, g_b, nb * len);
        if (d >= 0) {
            ck_fail("%s, bd %d, %d blocks: block %d residual %d: %d, expected %d",
                    pat_names[pat], bd, nb, d / len, d % len, g_b[d], g_a[d]);
            continue;
        }
        if (!guard_ok(g_b + nb * len)) ck_fail("wrote past %d blocks", nb);
        memcpy(g_c, g_in, (size_t)(nb * len) * sizeof(int16_t));
        fn(g_c, g_c, nb, bd);
        if (first_diff(g_a, g_c, nb * len) >= 0)
            ck_fail("%s, bd %d: in-place result differs", pat_names[pat], bd);
    }
}

/* ------------------------------------------------------------------ quantisers */

/* Coefficients for the quantisers: transforms of every residual pattern, raw int16 and
 * the largest magnitudes. */
static void fill_quant_input(const HevcEnv *e, const VidkHevcDSP *c, int16_t *v, int size,
                             int bd, int k) {
    const int len = 16 << (2 * size);
    switch (k % 4) {
    case 0:
        for (int i = 0; i < len; i++)
            v[i] = (int16_t)ck_rand();
        break;
    case 1:
        for (int i = 0; i < len; i++)
            v[i] = (int16_t)(ck_rand() & 1 ? ck_rand_range(32000, 32767)
                                           : -ck_rand_range(32000, 32768));
        break;
    default: {
        int16_t r[1024];
        const int tx = size == 0 ? ck_rand_range(0, 2) == 0 ? VIDK_HEVC_TX_DST4
                                   : ck_rand_range(0, 1)    ? VIDK_HEVC_TX_TS4
                                                            : 0
                                 : size;
        fill_residual(e, r, tx, bd, ck_rand_range(0, P_COUNT - 1));
        c->fwd[tx](v, r, 1, bd);
        break;
    }
    }
}

static void random_matrix(uint8_t *m, int len) {
    const int mode = ck_rand_range(0, 3);
    for (int i = 0; i < len; i++)
        m[i] = (uint8_t)(mode == 0   ? 16
                         : mode == 1 ? (ck_rand() & 1 ? 1 : 255)
                                     : ck_rand_range(1, 255));
}

static void check_quant(const HevcEnv *e, const VidkHevcDSP *c, int size, int sl,
                        const VidkHevcDSP *d) {
    const int len = 16 << (2 * size);
    static int32_t qs[1024];
    static uint8_t m[1024];
    uint16_t za[MAXB + 4], zb[MAXB + 4];
    for (int bd = 8; bd <= 12; bd += 2)
        for (int qp = 0; qp <= VIDK_HEVC_MAX_QP(bd); qp++) {
            const int nb = ck_rand_range(1, size == 3 ? 2 : 4), islice = ck_rand() & 1;
            const int qb = vidk_hevc_qbits(qp, bd, size + 2);
            const int32_t off = vidk_hevc_qoffset(qb, islice);
            for (int b = 0; b < nb; b++)
                fill_quant_input(e, c, g_in + b * len, size, bd, qp + b);
            for (int i = 0; i < BUFV; i++)
                g_a[i] = g_b[i] = SENT;
            for (int i = 0; i < MAXB + 4; i++)
                za[i] = zb[i] = 0xabcd;
            if (sl) {
                random_matrix(m, len);
                vidk_hevc_quant_scales(qs, m, len, qp);
                c->quant_sl(g_a, g_in, nb, len, qs, qb, off, za);
                d->quant_sl(g_b, g_in, nb, len, qs, qb, off, zb);
            } else {
                c->quant(g_a, g_in, nb, len, vidk_hevc_qscale[qp % 6], qb, off, za);
                d->quant(g_b, g_in, nb, len, vidk_hevc_qscale[qp % 6], qb, off, zb);
            }
            const int i = first_diff(g_a, g_b, nb * len);
            if (i >= 0)
                ck_fail("bd %d qp %d %s slice: level %d (coefficient %d): %d, expected %d", bd,
                        qp, islice ? "I" : "P", i, g_in[i], g_b[i], g_a[i]);
            else if (memcmp(za, zb, sizeof(za)))
                ck_fail("bd %d qp %d: non-zero counts differ (first block %u, expected %u)", bd,
                        qp, zb[0], za[0]);
            else if (!guard_ok(g_b + nb * len))
                ck_fail("wrote past %d blocks", nb);
            /* in place */
            memcpy(g_c, g_in, (size_t)(nb * len) * sizeof(int16_t));
            if (sl)
                d->quant_sl(g_c, g_c, nb, len, qs, qb, off, zb);
            else
                d->quant(g_c, g_c, nb, len, vidk_hevc_qscale[qp % 6], qb, off, zb);
            if (first_diff(g_a, g_c, nb * len) >= 0)
                ck_fail("bd %d qp %d: in-place result differs", bd, qp);
        }
}

static void check_dequant(int sl, const VidkHevcDSP *c, const VidkHevcDSP *d) {
    static int16_t ds[1024];
    static uint8_t m[1024];
    for (int bd = 8; bd <= 12; bd += 2)
        for (int size = 0; size < 4; size++)
            for (int qp = 0; qp <= VIDK_HEVC_MAX_QP(bd); qp++) {
                const int len = 16 << (2 * size), nb = size == 3 ? 1 : ck_rand_range(1, 3);
                const int n = nb * len, shift = vidk_hevc_dqshift(qp, bd, size + 2);
                const int mode = ck_rand_range(0, 2);
                for (int i = 0; i < n; i++)
                    g_in[i] = (int16_t)(mode == 0   ? (int)(int16_t)ck_rand()
                                        : mode == 1 ? (ck_rand() & 1 ? 32767 : -32768)
                                                    : ck_rand_range(-64, 64));
                for (int i = 0; i < BUFV; i++)
                    g_a[i] = g_b[i] = SENT;
                if (sl) {
                    random_matrix(m, len);
                    vidk_hevc_dequant_scales(ds, m, len, qp);
                    c->dequant_sl(g_a, g_in, nb, len, ds, shift);
                    d->dequant_sl(g_b, g_in, nb, len, ds, shift);
                } else {
                    c->dequant(g_a, g_in, (size_t)n, 16 * vidk_hevc_level_scale[qp % 6], shift);
                    d->dequant(g_b, g_in, (size_t)n, 16 * vidk_hevc_level_scale[qp % 6], shift);
                }
                const int i = first_diff(g_a, g_b, n);
                if (i >= 0)
                    ck_fail(
                        "bd %d %dx%d qp %d (shift %d): value %d (level %d): %d, expected %d",
                        bd, 4 << size, 4 << size, qp, shift, i, g_in[i], g_b[i], g_a[i]);
                else if (!guard_ok(g_b + n))
                    ck_fail("wrote past %d values", n);
            }
}

static void check_nnz(const VidkHevcDSP *c, const VidkHevcDSP *d) {
    uint16_t za[MAXB + 1], zb[MAXB + 1];
    for (int it = 0; it < 400; it++) {
        const int size = it % 4, len = 16 << (2 * size),
                  nb = ck_rand_range(1, size == 3 ? 2 : MAXB);
        const int k = ck_rand_range(0, len);
        memset(g_in, 0, (size_t)(nb * len) * sizeof(int16_t));
        for (int b = 0; b < nb; b++)
            for (int i = ck_rand_range(0, 2) ? ck_rand_range(0, 3) : k; i > 0; i--)
                g_in[b * len + ck_rand_range(0, len - 1)] = (int16_t)(ck_rand() | 1);
        za[nb] = zb[nb] = 0xabcd;
        c->nnz(za, g_in, nb, len);
        d->nnz(zb, g_in, nb, len);
        if (memcmp(za, zb, (size_t)(nb + 1) * sizeof(uint16_t)))
            ck_fail("%d blocks of %d: counts differ (block 0: %u, expected %u)", nb, len, zb[0],
                    za[0]);
    }
}

/* ------------------------------------------------------------------ pixels */

static VIDK_HEVC_ALIGN(64) uint8_t g_pa[2 * 80 * 80], g_pb[2 * 80 * 80];

static void check_pixels(int size, int kind, const VidkHevcDSP *c, const VidkHevcDSP *d) {
    const int n = 4 << size;
    for (int it = 0; it < 200; it++) {
        const int bd = kind == 1 || kind == 3 ? ck_rand_range(9, 12) : 8;
        const int bps = bd > 8 ? 2 : 1, mx = (1 << bd) - 1;
        const ptrdiff_t st =
            (ptrdiff_t)(n + ck_rand_range(0, 40)) * bps * (ck_rand() & 1 ? 1 : -1);
        const ptrdiff_t st2 = (ptrdiff_t)(n + ck_rand_range(0, 40)) * bps;
        /* the block starts at row 0 (positive stride) or row n - 1 (negative) */
        const size_t o =
            (size_t)(st < 0 ? -st * (n - 1) : 0) + (size_t)(ck_rand_range(0, 3) * bps);
        const int po = ck_rand_range(0, 9); /* an odd pointer for 8-bit predictions */
        for (size_t i = 0; i < sizeof(g_pa); i += (size_t)bps) {
            int v = ck_rand_range(0, 3) ? ck_rand_range(0, mx) : ck_rand() & 1 ? mx : 0;
            /* out-of-range 16-bit predictions too (defined: the sum is clipped to the
             * sample range), incl. values >= 32768 that a signed 16-bit load misreads */
            if (bps == 2 && ck_rand_range(0, 7) == 0) v = ck_rand_range(mx + 1, 65535);
            if (bps == 1)
                g_pa[i] = (uint8_t)v;
            else
                memcpy(g_pa + i, &(uint16_t){(uint16_t)v}, 2);
        }
        memcpy(g_pb, g_pa, sizeof(g_pa));
        const int big = ck_rand_range(0, 2) == 0;
        for (int i = 0; i < n * n; i++)
            g_in[i] =
                (int16_t)(big ? (int)(int16_t)ck_rand() : ck_rand_range(-mx - 20, mx + 20));
        switch (kind) {
        case 0:
            c->add8[size](g_pa + o, st, g_in);
            d->add8[size](g_pb + o, st, g_in);
            break;
        case 1:
            c->add16[size]((uint16_t *)(void *)(g_pa + o), st, g_in, bd);
            d->add16[size]((uint16_t *)(void *)(g_pb + o), st, g_in, bd);
            break;
        case 2:
            for (int i = 0; i < BUFV; i++)
                g_a[i] = g_b[i] = SENT;
            c->sub8[size](g_a, g_pa + o, st, g_pa + 2 * 40 * 80 + po, st2);
            d->sub8[size](g_b, g_pa + o, st, g_pa + 2 * 40 * 80 + po, st2);
            break;
        default:
            for (int i = 0; i < BUFV; i++)
                g_a[i] = g_b[i] = SENT;
            c->sub16[size](g_a, (const uint16_t *)(const void *)(g_pa + o), st,
                           (const uint16_t *)(const void *)(g_pa + 2 * 40 * 80), st2);
            d->sub16[size](g_b, (const uint16_t *)(const void *)(g_pa + o), st,
                           (const uint16_t *)(const void *)(g_pa + 2 * 40 * 80), st2);
            break;
        }
        if (kind < 2) {
            if (memcmp(g_pa, g_pb, sizeof(g_pa)))
                ck_fail("bd %d stride %td: pictures differ%s", bd, st,
                        big ? " (int16 residuals)" : "");
        } else if (first_diff(g_a, g_b, n * n + GUARD) >= 0) {
            ck_fail("bd %d strides %td %td: residuals differ", bd, st, st2);
        }
    }
}

/* ------------------------------------------------------------------ block level */

static void check_blocks(const HevcEnv *e) {
    static const char *const pix_names[4] = {"add8", "add16", "sub8", "sub16"};
    VidkHevcDSP c, prev;
    vidk_hevc_dsp_init(&c, 0);
    memset(&prev, 0, sizeof(prev));
    static int16_t bres[4096], blev[4096];
    uint16_t bz[256];
    for (int i = 0; i < 4096; i++)
        bres[i] = (int16_t)ck_rand_range(-30, 30);
    for (int l = 0; l < ck_level_count(); l++) {
        const CkLevel *lv = ck_level(l);
        VidkHevcDSP d;
        vidk_hevc_dsp_init(&d, lv->flags);
        char name[64];
        for (int tx = 0; tx < VIDK_HEVC_TX_COUNT; tx++) {
            const int len = 1 << (2 * tx_log2(tx)), nb = 4096 / len;
            snprintf(name, sizeof(name), "hevc_fwd_%s", tx_names[tx]);
            if (ck_begin(name, lv->name, (const void *)d.fwd[tx],
                         l ? (const void *)prev.fwd[tx] : NULL)) {
                check_fwd(e, &c, tx, c.fwd[tx], d.fwd[tx]);
                CK_BENCH(d.fwd[tx](blev, bres, nb, 8));
                ck_end();
            }
            snprintf(name, sizeof(name), "hevc_inv_%s", tx_names[tx]);
            if (ck_begin(name, lv->name, (const void *)d.inv[tx],
                         l ? (const void *)prev.inv[tx] : NULL)) {
                check_inv(e, &c, tx, c.inv[tx], d.inv[tx]);
                CK_BENCH(d.inv[tx](blev, bres, nb, 8));
                ck_end();
            }
        }
        for (int size = 0; size < 4; size++) {
            const int len = 16 << (2 * size), nb = 4096 / len, nn = 4 << size;
            snprintf(name, sizeof(name), "hevc_quant_%dx%d", nn, nn);
            if (ck_begin(name, lv->name, (const void *)d.quant,
                         l ? (const void *)prev.quant : NULL)) {
                check_quant(e, &c, size, 0, &d);
                CK_BENCH(d.quant(blev, bres, nb, len, 20560, 21, 171 << 12, bz));
                ck_end();
            }
            snprintf(name, sizeof(name), "hevc_quant_sl_%dx%d", nn, nn);
            if (ck_begin(name, lv->name, (const void *)d.quant_sl,
                         l ? (const void *)prev.quant_sl : NULL)) {
                static int32_t qs[1024];
                check_quant(e, &c, size, 1, &d);
                for (int i = 0; i < len; i++)
                    qs[i] = 20560;
                CK_BENCH(d.quant_sl(blev, bres, nb, len, qs, 21, 171 << 12, bz));
                ck_end();
            }
            snprintf(name, sizeof(name), "hevc_nnz_%dx%d", nn, nn);
            if (ck_begin(name, lv->name, (const void *)d.nnz,
                         l ? (const void *)prev.nnz : NULL)) {
                if (size == 0) check_nnz(&c, &d);
                CK_BENCH(d.nnz(bz, bres, nb, len));
                ck_end();
            }
            for (int k = 0; k < 4; k++) {
                const void *f = k == 0   ? (const void *)d.add8[size]
                                : k == 1 ? (const void *)d.add16[size]
                                : k == 2 ? (const void *)d.sub8[size]
                                         : (const void *)d.sub16[size];
                const void *pf = k == 0   ? (const void *)prev.add8[size]
                                 : k == 1 ? (const void *)prev.add16[size]
                                 : k == 2 ? (const void *)prev.sub8[size]
                                          : (const void *)prev.sub16[size];
                snprintf(name, sizeof(name), "hevc_%s_%dx%d", pix_names[k], nn, nn);
                if (ck_begin(name, lv->name, f, l ? pf : NULL)) {
                    check_pixels(size, k, &c, &d);
                    if (k == 0)
                        CK_BENCH(d.add8[size](g_pa, 80, bres));
                    else if (k == 1)
                        CK_BENCH(d.add16[size]((uint16_t *)(void *)g_pa, 160, bres, 10));
                    else if (k == 2)
                        CK_BENCH(d.sub8[size](blev, g_pa, 80, g_pb, 80));
                    else
                        CK_BENCH(d.sub16[size](blev, (const uint16_t *)(const void *)g_pa, 160,
                                               (const uint16_t *)(const void *)g_pb, 160));
                    ck_end();
                }
            }
        }
        if (ck_begin("hevc_dequant", lv->name, (const void *)d.dequant,
                     l ? (const void *)prev.dequant : NULL)) {
            check_dequant(0, &c, &d);
            CK_BENCH(d.dequant(blev, bres, 4096, 16 * 51, 3));
            ck_end();
        }
        if (ck_begin("hevc_dequant_sl", lv->name, (const void *)d.dequant_sl,
                     l ? (const void *)prev.dequant_sl : NULL)) {
            static int16_t ds[1024];
            check_dequant(1, &c, &d);
            for (int i = 0; i < 1024; i++)
                ds[i] = 16 * 51;
            CK_BENCH(d.dequant_sl(blev, bres, 4, 1024, ds, 3));
            ck_end();
        }
        prev = d;
    }
}

/* ------------------------------------------------------------------ frame level */

typedef struct FrameCase {
    char name[80];
    VidkPicture src, pred; /* pred: the prediction (c backend reconstructs into a copy) */
    int own;               /* pictures allocated here */
    VidkHevcBatch b;       /* records (+ residuals after vidk_hevc_batch_residual) */
} FrameCase;

/* Random quadtree of TBs inside a plane: 32x32 roots, split with probability p_split. */
static void add_tbs(VidkHevcBatch *b, int plane, int pw, int ph, int x, int y, int n, int bd,
                    int psplit, int qp0) {
    const int fits = x + n <= pw && y + n <= ph;
    if (x >= pw || y >= ph) return;
    if (n > 4 && (!fits || ck_rand_range(0, 99) < psplit)) {
        for (int i = 0; i < 4; i++)
            add_tbs(b, plane, pw, ph, x + (i & 1) * n / 2, y + (i >> 1) * n / 2, n / 2, bd,
                    psplit, qp0);
        return;
    }
    if (!fits) return;
    VidkHevcTb t = {.x = (uint16_t)x, .y = (uint16_t)y, .plane = (uint8_t)plane};
    const int maxqp = VIDK_HEVC_MAX_QP(bd);
    t.qp = (uint8_t)(qp0 >= 0 ? vidk_iclip(qp0 + ck_rand_range(-3, 3), 0, maxqp)
                              : ck_rand_range(0, maxqp));
    t.flags = (uint8_t)((ck_rand() & 1 ? VIDK_HEVC_TB_INTRA : 0) |
                        (ck_rand() & 1 ? VIDK_HEVC_TB_ISLICE : 0));
    if (n == 4) {
        const int k = ck_rand_range(0, 3);
        if (k == 1 && plane == 0 && (t.flags & VIDK_HEVC_TB_INTRA)) t.flags |= VIDK_HEVC_TB_DST;
        if (k == 2) t.flags |= VIDK_HEVC_TB_TSKIP;
    }
    int16_t zero[1024] = {0};
    if (vidk_hevc_batch_add(b,
                            (VidkHevcTbSize)(n == 4    ? 0
                                             : n == 8  ? 1
                                             : n == 16 ? 2
                                                       : 3),
                            &t, zero) < 0)
        ck_fail("vidk_hevc_batch_add failed");
}

static void build_tbs(FrameCase *fc, int psplit, int qp0) {
    for (int p = 0; p < 3; p++) {
        int w, h;
        if (vidk_picture_plane_size(&fc->src, p, &w, &h) < 0) continue;
        for (int y = 0; y < h; y += 32)
            for (int x = 0; x < w; x += 32)
                add_tbs(&fc->b, p, w, h, x, y, 32, fc->b.bitdepth, psplit, qp0);
    }
}

static int clone_batch(VidkHevcBatch *d, const VidkHevcBatch *s) {
    vidk_hevc_batch_init(d, s->bitdepth);
    d->scaling_lists = s->scaling_lists;
    d->compact_levels = s->compact_levels;
    d->scaling = s->scaling;
    for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++) {
        const VidkHevcTbList *l = &s->list[z];
        const size_t len = (size_t)16 << (2 * z);
        if (vidk_hevc_batch_reserve(d, (VidkHevcTbSize)z, l->count ? l->count : 1) < 0)
            return -1;
        d->list[z].count = l->count;
        if (!l->count) continue;
        memcpy(d->list[z].tb, l->tb, l->count * sizeof(VidkHevcTb));
        memcpy(d->list[z].res, l->res, l->count * len * sizeof(int16_t));
        memcpy(d->list[z].lev, l->lev, l->count * len * sizeof(int16_t));
    }
    return 0;
}

static int copy_picture(VidkPicture *d, const VidkPicture *s) {
    if (vidk_picture_alloc(d, s->w, s->h, s->chroma, s->bitdepth, 0) < 0) return -1;
    for (int p = 0; p < 3; p++) {
        int w, h;
        if (vidk_picture_plane_size(s, p, &w, &h) < 0) continue;
        const size_t row = (size_t)w * (s->bitdepth > 8 ? 2 : 1);
        for (int y = 0; y < h; y++)
            memcpy((uint8_t *)d->data[p] + y * d->stride[p],
                   (const uint8_t *)s->data[p] + y * s->stride[p], row);
    }
    return 0;
}

static int pictures_differ(const VidkPicture *a, const VidkPicture *b, int *px, int *py,
                           int *pp) {
    for (int p = 0; p < 3; p++) {
        int w, h;
        if (vidk_picture_plane_size(a, p, &w, &h) < 0) continue;
        const int bps = a->bitdepth > 8 ? 2 : 1;
        for (int y = 0; y < h; y++) {
            const uint8_t *ra = (const uint8_t *)a->data[p] + y * a->stride[p];
            const uint8_t *rb = (const uint8_t *)b->data[p] + y * b->stride[p];
            if (memcmp(ra, rb, (size_t)w * (size_t)bps))
                for (int x = 0; x < w; x++)
                    if (memcmp(ra + x * bps, rb + x * bps, (size_t)bps)) {
                        *px = x, *py = y, *pp = p;
                        return 1;
                    }
        }
    }
    return 0;
}

/* The c backend's batch against the block API, TB by TB: levels, counts, compaction,
 * and the reconstruction in list order (4x4 first) with Clip1 after each TB. */
static void check_c_batch(VidkContext *cref, FrameCase *fc, const VidkHevcBatch *b,
                          const VidkPicture *recon) {
    VidkPicture exp;
    if (copy_picture(&exp, &fc->pred) < 0) {
        ck_fail("out of memory");
        return;
    }
    const int bd = b->bitdepth, mx = (1 << bd) - 1;
    for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++) {
        const VidkHevcTbList *l = &b->list[z];
        const int n = 4 << z, len = n * n;
        uint32_t nz = 0;
        for (uint32_t i = 0; i < l->count; i++) {
            const VidkHevcTb *t = &l->tb[i];
            VidkHevcBlockParams p;
            vidk_hevc_default_block_params(&p);
            p.size = (VidkHevcTbSize)z;
            p.qp = t->qp;
            p.bitdepth = bd;
            p.flags = t->flags;
            p.scaling =
                b->scaling_lists
                    ? vidk_hevc_scaling_matrix(
                          &b->scaling, z, t->plane + (t->flags & VIDK_HEVC_TB_INTRA ? 0 : 3))
                    : NULL;
            int16_t lev[1024], res[1024];
            uint16_t cnt;
            if (vidk_hevc_forward_blocks(cref, &p, l->res + (size_t)i * len, lev, 1, &cnt) <
                    0 ||
                vidk_hevc_inverse_blocks(cref, &p, lev, res, 1) < 0) {
                ck_fail("block API refused TB %u of %dx%d", i, n, n);
                goto out;
            }
            if (memcmp(lev, l->lev + (size_t)i * len, (size_t)len * 2) || cnt != l->nnz[i]) {
                ck_fail(
                    "%s: %dx%d TB %u (qp %d flags %d): batch levels differ from the block API",
                    fc->name, n, n, i, t->qp, t->flags);
                goto out;
            }
            if (cnt) {
                if (nz >= l->nz_count || l->nz_index[nz] != i ||
                    memcmp(l->nz_lev + (size_t)nz * len, lev, (size_t)len * 2)) {
                    ck_fail("%s: %dx%d compacted entry %u is wrong", fc->name, n, n, nz);
                    goto out;
                }
                nz++;
            }
            const ptrdiff_t st = exp.stride[t->plane];
            uint8_t *row = (uint8_t *)exp.data[t->plane] + t->y * st;
            for (int y = 0; y < n; y++, row += st)
                for (int x = 0; x < n; x++) {
                    if (bd == 8) {
                        uint8_t *s = row + t->x + x;
                        *s = (uint8_t)vidk_iclip(*s + res[y * n + x], 0, mx);
                    } else {
                        uint16_t *s = (uint16_t *)(void *)row + t->x + x;
                        *s = (uint16_t)vidk_iclip(*s + res[y * n + x], 0, mx);
                    }
                }
        }
        if (nz != l->nz_count)
            ck_fail("%s: %dx%d: %u compacted TBs, expected %u", fc->name, n, n, l->nz_count,
                    nz);
    }
    int x, y, p;
    if (pictures_differ(&exp, recon, &x, &y, &p))
        ck_fail("%s: c reconstruction differs from the block API at plane %d (%d, %d)",
                fc->name, p, x, y);
out:
    vidk_picture_free(&exp);
}

static int compare_batches(const char *what, const FrameCase *fc, const VidkHevcBatch *a,
                           const VidkHevcBatch *b, int res) {
    for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++) {
        const VidkHevcTbList *la = &a->list[z], *lb = &b->list[z];
        const size_t len = (size_t)16 << (2 * z), n = la->count * len;
        const int n4 = 4 << z;
        if (!la->count) continue;
        if (res) {
            if (memcmp(la->res, lb->res, n * 2)) {
                ck_fail("%s%s: %dx%d residuals differ", what, fc->name, n4, n4);
                return 1;
            }
            continue;
        }
        if (memcmp(la->lev, lb->lev, n * 2) || memcmp(la->nnz, lb->nnz, la->count * 2)) {
            const int d = first_diff(la->lev, lb->lev, (int)n);
            ck_fail("%s%s: %dx%d levels differ (TB %d value %d: %d, expected %d)", what,
                    fc->name, n4, n4, d < 0 ? -1 : d / (int)len, d < 0 ? -1 : d % (int)len,
                    d < 0 ? 0 : lb->lev[d], d < 0 ? 0 : la->lev[d]);
            return 1;
        }
        if (la->nz_count != lb->nz_count ||
            memcmp(la->nz_index, lb->nz_index, la->nz_count * 4) ||
            (a->compact_levels && memcmp(la->nz_lev, lb->nz_lev, la->nz_count * len * 2))) {
            ck_fail("%s%s: %dx%d compacted output differs", what, fc->name, n4, n4);
            return 1;
        }
    }
    return 0;
}

/* Errors: every backend refuses the same bad batches (and leaves the picture alone). */
static void check_batch_errors(VidkContext *ctx, const FrameCase *fc) {
    VidkHevcBatch b;
    if (clone_batch(&b, &fc->b) < 0) {
        ck_fail("out of memory");
        return;
    }
    int z = 0;
    while (z < 3 && !b.list[z].count)
        z++;
    if (!b.list[z].count) goto out;
    VidkHevcTb *t = &b.list[z].tb[b.list[z].count - 1];
    const VidkHevcTb keep = *t;
    VidkPicture pic;
    if (copy_picture(&pic, &fc->pred) < 0) goto out;
    static const char *const what[] = {"qp",       "plane",      "flags",
                                       "reserved", "misaligned", "outside"};
    for (int k = 0; k < 6; k++) {
        *t = keep;
        switch (k) {
        case 0:
            t->qp = (uint8_t)(VIDK_HEVC_MAX_QP(b.bitdepth) + 1);
            break;
        case 1:
            t->plane = 3;
            break;
        case 2:
            t->flags = z ? VIDK_HEVC_TB_DST : 0x80;
            break;
        case 3:
            t->reserved = 1;
            break;
        case 4:
            t->x = (uint16_t)(t->x + 2);
            break;
        default:
            t->y = (uint16_t)(fc->src.h + 64);
            break;
        }
        const int e1 = k < 4 ? vidk_hevc_batch_forward(ctx, &b) : VIDK_ERR(EINVAL);
        const int e2 = vidk_hevc_batch_inverse(ctx, &b, &pic);
        int x, y, p;
        if (e1 != VIDK_ERR(EINVAL) || e2 != VIDK_ERR(EINVAL))
            ck_fail("bad %s: forward %d, inverse %d, expected EINVAL", what[k], e1, e2);
        else if (pictures_differ(&pic, &fc->pred, &x, &y, &p))
            ck_fail("bad %s: the picture changed although the inverse failed", what[k]);
    }
    *t = keep;
    b.bitdepth = 13;
    if (vidk_hevc_batch_forward(ctx, &b) != VIDK_ERR(EINVAL)) ck_fail("bit depth 13 accepted");
    b.bitdepth = fc->b.bitdepth;
    if (b.bitdepth == 8) {
        b.bitdepth = 10;
        if (vidk_hevc_batch_inverse(ctx, &b, &pic) != VIDK_ERR(EINVAL))
            ck_fail("picture bit depth mismatch accepted");
        b.bitdepth = 8;
    }
    b.scaling_lists = 1;
    b.scaling.m8[4][7] = 0;
    if (vidk_hevc_batch_forward(ctx, &b) != VIDK_ERR(EINVAL))
        ck_fail("scaling factor 0 accepted");
    vidk_picture_free(&pic);
out:
    vidk_hevc_batch_free(&b);
}

static void run_frame_case(VidkContext *cref, FrameCase *fc) {
    /* c backend: residual, forward, inverse (picture and residual) */
    VidkPicture rec_c;
    VidkHevcBatch bc;
    if (vidk_hevc_batch_residual(cref, &fc->b, &fc->src, &fc->pred) < 0) {
        ck_fail("%s: vidk_hevc_batch_residual failed on c", fc->name);
        return;
    }
    if (clone_batch(&bc, &fc->b) < 0 || copy_picture(&rec_c, &fc->pred) < 0) {
        ck_fail("out of memory");
        return;
    }
    const int nz_c = vidk_hevc_batch_forward(cref, &bc);
    int err = vidk_hevc_batch_inverse(cref, &bc, &rec_c);
    if (nz_c < 0 || err < 0) {
        ck_fail("%s: c backend failed (%d, %d)", fc->name, nz_c, err);
        goto out;
    }
    VidkHevcBatch bc_res; /* the c residuals of the inverse without a picture */
    if (clone_batch(&bc_res, &bc) < 0) goto out;
    vidk_hevc_batch_inverse(cref, &bc_res, NULL);
    check_c_batch(cref, fc, &bc, &rec_c);

    static const struct {
        VidkBackend b;
        const char *name;
        int threads;
    } bks[] = {{VIDK_BACKEND_SIMD, "simd", 0},
               {VIDK_BACKEND_THREADS, "threads", 1},
               {VIDK_BACKEND_THREADS, "threads", 2},
               {VIDK_BACKEND_THREADS, "threads", 3},
               {VIDK_BACKEND_CUDA, "cuda", 0}};
    for (size_t k = 0; k < sizeof(bks) / sizeof(bks[0]); k++) {
        VidkContext *ctx = ck_open(bks[k].b, bks[k].threads);
        if (!ctx) continue;
        char what[48];
        snprintf(what, sizeof(what), "%s%s%.0d: ", bks[k].name, bks[k].threads ? " x" : "",
                 bks[k].threads);
        VidkHevcBatch bx;
        VidkPicture rec;
        if (clone_batch(&bx, &fc->b) < 0 || copy_picture(&rec, &fc->pred) < 0) {
            ck_fail("out of memory");
            vidk_close(&ctx);
            continue;
        }
        for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++) /* the residual step must rewrite them */
            memset(bx.list[z].res, 0x7f, bx.list[z].count * ((size_t)32 << (2 * z)));
        int nz = 0;
        if ((err = vidk_hevc_batch_residual(ctx, &bx, &fc->src, &fc->pred)) < 0)
            ck_fail("%s%s: residual failed: %s", what, fc->name, vidk_strerror(err));
        else if (!compare_batches(what, fc, &fc->b, &bx, 1)) {
            nz = vidk_hevc_batch_forward(ctx, &bx);
            if (nz < 0) {
                ck_fail("%s%s: forward failed: %s", what, fc->name, vidk_strerror(nz));
            } else if (nz != nz_c) {
                ck_fail("%s%s: %d non-zero TBs, expected %d", what, fc->name, nz, nz_c);
            } else if (!compare_batches(what, fc, &bc, &bx, 0)) {
                int x, y, p;
                if ((err = vidk_hevc_batch_inverse(ctx, &bx, &rec)) < 0)
                    ck_fail("%s%s: inverse failed: %s", what, fc->name, vidk_strerror(err));
                else if (pictures_differ(&rec_c, &rec, &x, &y, &p))
                    ck_fail("%s%s: reconstruction differs at plane %d (%d, %d)", what, fc->name,
                            p, x, y);
                else if ((err = vidk_hevc_batch_inverse(ctx, &bx, NULL)) < 0 ||
                         compare_batches(what, fc, &bc_res, &bx, 1))
                    ck_fail("%s%s: inverse to residuals failed or differs", what, fc->name);
            }
        }
        check_batch_errors(ctx, fc);
        vidk_hevc_batch_free(&bx);
        vidk_picture_free(&rec);
        vidk_close(&ctx);
    }
    check_batch_errors(cref, fc);
    vidk_hevc_batch_free(&bc_res);
out:
    vidk_hevc_batch_free(&bc);
    vidk_picture_free(&rec_c);
}

/* A synthetic frame of bit depth bd: random content, prediction far off in places (the
 * largest residuals). */
static int synth_case(FrameCase *fc, int w, int h, int bd) {
    if (vidk_picture_alloc(&fc->src, w, h, VIDK_CHROMA_420, bd, 0) < 0) return -1;
    if (vidk_picture_alloc(&fc->pred, w, h, VIDK_CHROMA_420, bd, 0) < 0) return -1;
    fc->own = 1;
    const int mx = (1 << bd) - 1;
    for (int p = 0; p < 3; p++) {
        int pw, ph;
        vidk_picture_plane_size(&fc->src, p, &pw, &ph);
        for (int y = 0; y < ph; y++) {
            uint16_t *s =
                (uint16_t *)(void *)((uint8_t *)fc->src.data[p] + y * fc->src.stride[p]);
            uint16_t *q =
                (uint16_t *)(void *)((uint8_t *)fc->pred.data[p] + y * fc->pred.stride[p]);
            const int mode = (y / 8 + p) % 3;
            for (int x = 0; x < pw; x++) {
                s[x] = (uint16_t)(mode == 0 ? ck_rand_range(0, mx) : (x + y) & 1 ? mx : 0);
                q[x] = (uint16_t)(mode == 2 ? mx - s[x]
                                            : vidk_iclip(s[x] + ck_rand_range(-40, 40), 0, mx));
            }
        }
    }
    return 0;
}

/* A w x h luma frame tiled by n x n TBs (a last row of n / 2 when h is not a multiple of
 * n), residuals in [-30, 30], qP 30, inter TBs of a P slice. */
static int uniform_batch(VidkHevcBatch *b, int w, int h, int n) {
    vidk_hevc_batch_init(b, 8);
    for (int y = 0; y < h; y += n) {
        const int nn = y + n <= h ? n : n / 2;
        const VidkHevcTbSize z = nn == 4    ? VIDK_HEVC_TB_4x4
                                 : nn == 8  ? VIDK_HEVC_TB_8x8
                                 : nn == 16 ? VIDK_HEVC_TB_16x16
                                            : VIDK_HEVC_TB_32x32;
        for (int x = 0; x < w; x += nn) {
            const VidkHevcTb t = {.x = (uint16_t)x, .y = (uint16_t)y, .plane = 0, .qp = 30};
            if (vidk_hevc_batch_add(b, z, &t, NULL) < 0) return -1;
        }
    }
    for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++)
        for (size_t i = 0; i < b->list[z].count * ((size_t)16 << (2 * z)); i++)
            b->list[z].res[i] = (int16_t)ck_rand_range(-30, 30);
    return 0;
}

/* Uniform frames per backend: a small one checked against the c backend, and with
 * --bench a DCI 4K luma frame (4096 x 2160: all 4x4, or 32x32 with a last row of 16x16
 * as 2160 = 67 * 32 + 16) timed end to end (forward: transform + quantisation + counts +
 * compaction; inverse: dequantisation + inverse transform + add to the picture). */
static void check_uniform_frames(VidkContext *cref) {
    static const char *const names[4] = {"hevc_frame_fwd_4x4", "hevc_frame_fwd_32x32",
                                         "hevc_frame_inv_4x4", "hevc_frame_inv_32x32"};
    static const struct {
        VidkBackend b;
        const char *name;
    } bks[] = {{VIDK_BACKEND_C, "c"},
               {VIDK_BACKEND_SIMD, "simd"},
               {VIDK_BACKEND_THREADS, "threads"},
               {VIDK_BACKEND_CUDA, "cuda"}};
    for (size_t k = 0; k < sizeof(bks) / sizeof(bks[0]); k++) {
        VidkContext *ctx = bks[k].b == VIDK_BACKEND_C ? cref : ck_open(bks[k].b, 0);
        if (!ctx) continue;
        VidkHevcBatch big[2];
        int have_big[2] = {0, 0};
        VidkPicture bigpic = {0};
        for (int f = 0; f < 4; f++) {
            if (!ck_begin(names[f], bks[k].name, NULL, NULL)) continue;
            const int n = f % 2 ? 32 : 4, inv = f >= 2;
            VidkHevcBatch a, b;
            VidkPicture pa, pb;
            if (uniform_batch(&a, 256, 112, n) < 0 || clone_batch(&b, &a) < 0 ||
                vidk_picture_alloc(&pa, 256, 112, VIDK_CHROMA_400, 8, 0) < 0 ||
                vidk_picture_alloc(&pb, 256, 112, VIDK_CHROMA_400, 8, 0) < 0) {
                ck_fail("out of memory");
                ck_end();
                break;
            }
            for (int y = 0; y < 112; y++)
                for (int x = 0; x < 256; x++)
                    ((uint8_t *)pa.data[0])[y * pa.stride[0] + x] =
                        ((uint8_t *)pb.data[0])[y * pb.stride[0] + x] =
                            (uint8_t)ck_rand_range(0, 255);
            int e1 = vidk_hevc_batch_forward(cref, &a), e2 = vidk_hevc_batch_forward(ctx, &b);
            const FrameCase fc = {.name = "uniform frame"};
            if (e1 < 0 || e2 != e1) {
                ck_fail("forward: %d non-zero TBs, expected %d", e2, e1);
            } else if (!compare_batches("", &fc, &a, &b, 0) && inv) {
                int x, y, p;
                e1 = vidk_hevc_batch_inverse(cref, &a, &pa);
                e2 = vidk_hevc_batch_inverse(ctx, &b, &pb);
                if (e1 < 0 || e2 < 0 || pictures_differ(&pa, &pb, &x, &y, &p))
                    ck_fail("inverse: errors %d %d, or the pictures differ", e1, e2);
            }
            if (e2 >= 0 && ck_bench_enabled() && bks[k].b != VIDK_BACKEND_C) {
                /* (the c backend takes seconds per 4K frame: its speed is on the block level)
                 */
                const int i = f % 2;
                if (!have_big[i])
                    have_big[i] = uniform_batch(&big[i], 4096, 2160, n) == 0 ? 1 : -1;
                if (!bigpic.data[0] &&
                    vidk_picture_alloc(&bigpic, 4096, 2160, VIDK_CHROMA_400, 8, 0) < 0)
                    bigpic.data[0] = NULL;
                if (have_big[i] > 0 && bigpic.data[0]) {
                    if (!inv) {
                        CK_BENCH(vidk_hevc_batch_forward(ctx, &big[i]));
                    } else {
                        vidk_hevc_batch_forward(ctx, &big[i]);
                        CK_BENCH(vidk_hevc_batch_inverse(ctx, &big[i], &bigpic));
                    }
                }
            }
            vidk_hevc_batch_free(&a);
            vidk_hevc_batch_free(&b);
            vidk_picture_free(&pa);
            vidk_picture_free(&pb);
            ck_end();
        }
        for (int i = 0; i < 2; i++)
            if (have_big[i]) vidk_hevc_batch_free(&big[i]);
        vidk_picture_free(&bigpic);
        if (ctx != cref) vidk_close(&ctx);
    }
}

static void check_frames(HevcEnv *e) {
    VidkContext *cref = ck_open(VIDK_BACKEND_C, 0);
    if (!cref) {
        ck_fail("cannot open the c backend");
        return;
    }
    if (ck_begin("hevc_batch", "all", NULL, NULL)) {
        FrameCase fc;
        /* real clips (8-bit): small TBs, mixed, large; one with random scaling lists */
        for (int i = 0; i < e->n_pics; i++) {
            memset(&fc, 0, sizeof(fc));
            fc.src = e->pics[i][0];
            fc.pred = e->pics[i][1];
            vidk_hevc_batch_init(&fc.b, 8);
            const int psplit = i % 3 == 0 ? 85 : i % 3 == 1 ? 40 : 5;
            build_tbs(&fc, psplit, ck_rand_range(0, 2) ? ck_rand_range(10, 45) : -1);
            if (i == 0) /* overlapping TBs (legal, unusual): copies of some TBs, other qP */
                for (int z = 0; z < VIDK_HEVC_TB_SIZES; z++)
                    for (uint32_t k = 0, n0 = fc.b.list[z].count; k < n0;
                         k += (uint32_t)ck_rand_range(5, 30)) {
                        VidkHevcTb t = fc.b.list[z].tb[k];
                        t.qp = (uint8_t)ck_rand_range(0, 20);
                        vidk_hevc_batch_add(&fc.b, (VidkHevcTbSize)z, &t, NULL);
                    }
            if (i % 2) {
                fc.b.scaling_lists = 1;
                if (ck_rand() & 1)
                    vidk_hevc_scaling_default(&fc.b.scaling);
                else {
                    uint8_t *m = (uint8_t *)&fc.b.scaling;
                    for (size_t k = 0; k < sizeof(fc.b.scaling); k++)
                        m[k] = (uint8_t)ck_rand_range(1, 255);
                }
            }
            snprintf(fc.name, sizeof(fc.name), "%s (split %d%%%s%s)", e->names[i], psplit,
                     i % 2 ? ", scaling lists" : "", i == 0 ? ", overlaps" : "");
            run_frame_case(cref, &fc);
            vidk_hevc_batch_free(&fc.b);
        }
        /* synthetic high bit depth frames with extreme residuals */
        static const int dims[][3] = {{96, 64, 10}, {72, 40, 12}, {64, 64, 12}};
        for (int i = 0; i < 3; i++) {
            memset(&fc, 0, sizeof(fc));
            if (synth_case(&fc, dims[i][0], dims[i][1], dims[i][2]) < 0) {
                ck_fail("out of memory");
                break;
            }
            vidk_hevc_batch_init(&fc.b, dims[i][2]);
            fc.b.scaling_lists = i == 2;
            if (i == 2) vidk_hevc_scaling_default(&fc.b.scaling);
            build_tbs(&fc, 50, -1);
            snprintf(fc.name, sizeof(fc.name), "synthetic %dx%d %d-bit", dims[i][0], dims[i][1],
                     dims[i][2]);
            run_frame_case(cref, &fc);
            vidk_hevc_batch_free(&fc.b);
            vidk_picture_free(&fc.src);
            vidk_picture_free(&fc.pred);
        }
        ck_end();
    }
    check_uniform_frames(cref);
    vidk_close(&cref);
}

/* ------------------------------------------------------------------ entry */

static void load_clips(HevcEnv *e) {
    for (int i = 0; ck_video_clip(i) && e->n_pics < 8; i++) {
        const char *name = ck_video_clip(i);
        VidkPicture *pp = e->pics[e->n_pics];
        /* frame 1 against frame 0; a single-frame clip against itself (the checks
         * displace the reference) */
        if (ck_load_y4m(name, 1, 8, &pp[0]) < 0 && ck_load_y4m(name, 0, 8, &pp[0]) < 0) {
            ck_fail("cannot read clip %s", name);
            continue;
        }
        if (ck_load_y4m(name, 0, 8, &pp[1]) < 0) {
            vidk_picture_free(&pp[0]);
            ck_fail("cannot read clip %s", name);
            continue;
        }
        snprintf(e->names[e->n_pics], sizeof(e->names[0]), "%s", name);
        e->n_pics++;
    }
}

void ck_family_hevc(void) {
    HevcEnv *e = calloc(1, sizeof(*e));
    if (!e) {
        ck_fail("out of memory");
        return;
    }
    load_clips(e);
    check_blocks(e);
    check_frames(e);
    for (int p = 0; p < e->n_pics; p++) {
        vidk_picture_free(&e->pics[p][0]);
        vidk_picture_free(&e->pics[p][1]);
    }
    free(e);
}
