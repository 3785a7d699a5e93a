/* HEVC transforms and quantisers on x86 vectors, shared by hevc_sse41.c (128-bit),
 * hevc_avx2.c (256-bit) and hevc_avx512.c (512-bit). The includer defines:
 *   VEC, VL (int16 lanes per vector), FN(name) (the ISA suffix),
 *   LOADU(p), STOREU(p, v), SET1_16(x), SET1_32(x), SET1_64(x), ZERO(),
 *   ADD16, SUB16, ADD32, MADD (pmaddwd), UNPACKLO16, UNPACKHI16 (per 128-bit lane),
 *   SUB32, PACKS32 (per lane, signed saturation), SRA32(v, n), SLL16(v, n) (shift counts
 *   are ints), MIN16, MAX16, HADD32 (per lane),
 *   LOAD4x4(p, x01, x23) / STORE4x4(p, a, b): VL / 8 consecutive 4x4 blocks, one per
 *     128-bit lane: x01 holds rows 0-1 of each block, x23 rows 2-3,
 *   LDP(ptrs, off, n) / STP(ptrs, off, n, v): one row of VL / n blocks side by side (only
 *     needed when an n-point size is narrower than a vector),
 *   HEVC_TMPL_QUANT: also build the quantisers and the counter (needs ABS16, SIGN16,
 *     MULLO16, MULHIU16, PACKUS32, MINU16, SRL32(v, n), SLL32(v, n), MIN32, MAX32,
 *     SRAI16_15(v) (sign mask), ZEROS16(v): the number of zero int16 lanes of v).
 *
 * Arithmetic (src/hevc.h has the bounds): sums of products use pmaddwd on int16 pairs
 * and 32-bit adds; int16 adds appear only in the first forward stage up to the third
 * butterfly level (at most 8 residuals of |r| <= 4095: |sum| <= 32760); everything
 * that can exceed 16 bits is a pmaddwd pair instead. Packs saturate exactly where the
 * C reference clips (Clip3 to 16 bits); elsewhere values provably fit. */

#include "hevc_pairs.h"

#if defined(__GNUC__)
#define HT_INLINE static inline __attribute__((always_inline))
#else
#define HT_INLINE static inline
#endif

/* A pmaddwd coefficient pair (a, b) in each 32-bit lane. */
HT_INLINE VEC pair16(int a, int b) {
    return SET1_32((int32_t)(((uint32_t)(uint16_t)b << 16) | (uint16_t)a));
}

HT_INLINE VEC rshift_pack(VEC lo, VEC hi, VEC rnd, int s) {
    return PACKS32(SRA32(ADD32(lo, rnd), s), SRA32(ADD32(hi, rnd), s));
}

/* ------------------------------------------------------------------ 4x4 */

/* Row k of a 4x4 matrix (m[k][0..3]) in each 64-bit lane. */
HT_INLINE VEC row4(const int8_t m[4][4], int k) {
    return SET1_64((int64_t)((uint64_t)(uint16_t)m[k][0] | (uint64_t)(uint16_t)m[k][1] << 16 |
                             (uint64_t)(uint16_t)m[k][2] << 32 |
                             (uint64_t)(uint16_t)m[k][3] << 48));
}
/* Column y (m[0..3][y]). */
HT_INLINE VEC col4(const int8_t m[4][4], int y) {
    return SET1_64((int64_t)((uint64_t)(uint16_t)m[0][y] | (uint64_t)(uint16_t)m[1][y] << 16 |
                             (uint64_t)(uint16_t)m[2][y] << 32 |
                             (uint64_t)(uint16_t)m[3][y] << 48));
}

/* Forward: x01/x23 rows -> c01/c23 rows. Per lane, madd+hadd of the rows with row k of
 * the matrix gives column k of the row transform ([t0k t1k t2k t3k]); packed in pairs
 * these are the columns the second stage dots with the matrix rows, giving rows of C. */
HT_INLINE void fwd4_core(VEC *c01, VEC *c23, VEC x01, VEC x23, const int8_t m[4][4], int bd) {
    const int s1 = 2 + bd - 9, s2 = 8;
    const VEC r1 = SET1_32(1 << (s1 - 1)), r2 = SET1_32(1 << (s2 - 1));
    VEC w[4], t[4], c[4];
    for (int k = 0; k < 4; k++)
        w[k] = row4(m, k);
    for (int k = 0; k < 4; k++)
        t[k] = SRA32(ADD32(HADD32(MADD(x01, w[k]), MADD(x23, w[k])), r1), s1);
    const VEC p01 = PACKS32(t[0], t[1]), p23 = PACKS32(t[2], t[3]);
    for (int v = 0; v < 4; v++)
        c[v] = SRA32(ADD32(HADD32(MADD(p01, w[v]), MADD(p23, w[v])), r2), s2);
    *c01 = PACKS32(c[0], c[1]);
    *c23 = PACKS32(c[2], c[3]);
}

/* 4x4 transpose of int16 (per lane): rows 01/23 <-> columns 01/23. */
HT_INLINE void tr4(VEC *o01, VEC *o23, VEC a01, VEC a23) {
    const VEC a = UNPACKLO16(a01, a23), b = UNPACKHI16(a01, a23);
    *o01 = UNPACKLO16(a, b);
    *o23 = UNPACKHI16(a, b);
}

/* Inverse: columns of D dotted with the matrix columns give rows of G (clipped by the
 * pack, 8.6.4.2); rows of G dotted with the matrix columns give columns of R. */
HT_INLINE void inv4_core(VEC *r01, VEC *r23, VEC d01, VEC d23, const int8_t m[4][4], int bd) {
    const int s2 = 20 - bd;
    const VEC r1 = SET1_32(64), r2 = SET1_32(1 << (s2 - 1));
    VEC w[4], g[4], r[4], c01, c23;
    for (int y = 0; y < 4; y++)
        w[y] = col4(m, y);
    tr4(&c01, &c23, d01, d23);
    for (int y = 0; y < 4; y++)
        g[y] = SRA32(ADD32(HADD32(MADD(c01, w[y]), MADD(c23, w[y])), r1), 7);
    const VEC g01 = PACKS32(g[0], g[1]), g23 = PACKS32(g[2], g[3]);
    for (int x = 0; x < 4; x++)
        r[x] = SRA32(ADD32(HADD32(MADD(g01, w[x]), MADD(g23, w[x])), r2), s2);
    tr4(r01, r23, PACKS32(r[0], r[1]), PACKS32(r[2], r[3]));
}

#define BPV4 (VL / 8) /* 4x4 blocks per vector pair */

/* Runs the body (the variadic part) over groups of BPV4 blocks; a partial group goes through a
 * zeroed copy. */
#define FOR_4x4_GROUPS(out, in, n_blocks, ...)                                                 \
    do {                                                                                       \
        int b_ = 0;                                                                            \
        for (; b_ + BPV4 <= (n_blocks); b_ += BPV4) {                                          \
            const int16_t *ip_ = (in) + 16 * b_;                                               \
            int16_t *op_ = (out) + 16 * b_;                                                    \
            __VA_ARGS__;                                                                       \
        }                                                                                      \
        if (b_ < (n_blocks)) {                                                                 \
            VIDK_HEVC_ALIGN(64) int16_t ti_[16 * BPV4] = {0}, to_[16 * BPV4];                  \
            memcpy(ti_, (in) + 16 * b_, (size_t)((n_blocks)-b_) * 32);                         \
            const int16_t *ip_ = ti_;                                                          \
            int16_t *op_ = to_;                                                                \
            __VA_ARGS__;                                                                       \
            memcpy((out) + 16 * b_, to_, (size_t)((n_blocks)-b_) * 32);                        \
        }                                                                                      \
    } while (0)

HT_INLINE void fwd4_blocks(int16_t *coef, const int16_t *res, int n_blocks, int bd,
                           const int8_t m[4][4]) {
    const VEC lim = SET1_16((1 << bd) - 1), nlim = SET1_16(-((1 << bd) - 1));
    FOR_4x4_GROUPS(coef, res, n_blocks, {
        VEC x01, x23, c01, c23;
        LOAD4x4(ip_, x01, x23);
        x01 = MIN16(MAX16(x01, nlim), lim);
        x23 = MIN16(MAX16(x23, nlim), lim);
        fwd4_core(&c01, &c23, x01, x23, m, bd);
        STORE4x4(op_, c01, c23);
    });
}

HT_INLINE void inv4_blocks(int16_t *res, const int16_t *coef, int n_blocks, int bd,
                           const int8_t m[4][4]) {
    FOR_4x4_GROUPS(res, coef, n_blocks, {
        VEC d01, d23, r01, r23;
        LOAD4x4(ip_, d01, d23);
        inv4_core(&r01, &r23, d01, d23, m, bd);
        STORE4x4(op_, r01, r23);
    });
}

static decl_hevc_fwd_fn(FN(dct4)) {
    static const int8_t m[4][4] = {
        {64, 64, 64, 64}, {83, 36, -36, -83}, {64, -64, -64, 64}, {36, -83, 83, -36}};
    fwd4_blocks(coef, res, n_blocks, bd, m);
}
static decl_hevc_fwd_fn(FN(dst4)) {
    fwd4_blocks(coef, res, n_blocks, bd, vidk_hevc_dst4);
}
static decl_hevc_inv_fn(FN(idct4)) {
    static const int8_t m[4][4] = {
        {64, 64, 64, 64}, {83, 36, -36, -83}, {64, -64, -64, 64}, {36, -83, 83, -36}};
    inv4_blocks(res, coef, n_blocks, bd, m);
}
static decl_hevc_inv_fn(FN(idst4)) {
    inv4_blocks(res, coef, n_blocks, bd, vidk_hevc_dst4);
}

/* Transform skip: clip, << (13 - bd) (fits: (2^bd - 1) << (13 - bd) < 2^13); inverse
 * ((d << 7) + rnd) >> (20 - bd) as one pmaddwd of (d, 1) with (128, rnd). */
static decl_hevc_fwd_fn(FN(ts4)) {
    const VEC lim = SET1_16((1 << bd) - 1), nlim = SET1_16(-((1 << bd) - 1));
    size_t i = 0, n = (size_t)n_blocks * 16;
    for (; i + VL <= n; i += VL) {
        const VEC x = MIN16(MAX16(LOADU(res + i), nlim), lim);
        STOREU(coef + i, SLL16(x, 13 - bd));
    }
    for (; i < n; i++)
        coef[i] =
            (int16_t)(vidk_iclip(res[i], -((1 << bd) - 1), (1 << bd) - 1) * (1 << (13 - bd)));
}

static decl_hevc_inv_fn(FN(its4)) {
    const int s = 20 - bd;
    const VEC w = pair16(128, 1 << (s - 1)), one = SET1_16(1);
    size_t i = 0, n = (size_t)n_blocks * 16;
    for (; i + VL <= n; i += VL) {
        const VEC d = LOADU(coef + i);
        STOREU(res + i, PACKS32(SRA32(MADD(UNPACKLO16(d, one), w), s),
                                SRA32(MADD(UNPACKHI16(d, one), w), s)));
    }
    for (; i < n; i++)
        res[i] = (int16_t)((coef[i] * 128 + (1 << (s - 1))) >> s);
}

/* ------------------------------------------------------------------ 8, 16, 32 points */

/* One 8x8 int16 tile transpose through SSE2 unpacks (src/dst strides in int16). */
HT_INLINE void tr8(int16_t *dst, ptrdiff_t ds, const int16_t *src, ptrdiff_t ss) {
    __m128i r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm_loadu_si128((const __m128i *)(const void *)(src + i * ss));
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
    }
    u[0] = _mm_unpacklo_epi32(t[0], t[2]);
    u[1] = _mm_unpackhi_epi32(t[0], t[2]);
    u[2] = _mm_unpacklo_epi32(t[1], t[3]);
    u[3] = _mm_unpackhi_epi32(t[1], t[3]);
    u[4] = _mm_unpacklo_epi32(t[4], t[6]);
    u[5] = _mm_unpackhi_epi32(t[4], t[6]);
    u[6] = _mm_unpacklo_epi32(t[5], t[7]);
    u[7] = _mm_unpackhi_epi32(t[5], t[7]);
    for (int i = 0; i < 4; i++) {
        _mm_storeu_si128((__m128i *)(void *)(dst + (2 * i) * ds),
                         _mm_unpacklo_epi64(u[i], u[i + 4]));
        _mm_storeu_si128((__m128i *)(void *)(dst + (2 * i + 1) * ds),
                         _mm_unpackhi_epi64(u[i], u[i + 4]));
    }
}

/* Transpose with clipping of the residual (the forward's input). */
HT_INLINE void tr8_clip(int16_t *dst, ptrdiff_t ds, const int16_t *src, ptrdiff_t ss, int lim) {
    VIDK_HEVC_ALIGN(16) int16_t t[64];
    const __m128i hi = _mm_set1_epi16((int16_t)lim), lo = _mm_set1_epi16((int16_t)-lim);
    for (int i = 0; i < 8; i++) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(src + i * ss));
        _mm_store_si128((__m128i *)(void *)(t + 8 * i),
                        _mm_min_epi16(_mm_max_epi16(x, lo), hi));
    }
    tr8(dst, ds, t, 8);
}

/* The 1D stages work on one vector column of rows in memory (row i at p + i * pitch):
 * the working sets (n rows, their interleaved pairs) exceed the register file anyway. */

/* Forward stage 1: n rows of a (row x: residual column x of each block; overwritten
 * by the butterflies) -> rows of o (row k: coefficient k of the row transform of each
 * residual row). Partial butterflies with int16 sums for the first three levels; the
 * last 4 points and every odd part are pmaddwd pairs. */
HT_INLINE void fwd_stage1(int16_t *o, int op, int16_t *a, int ap, int n, int s) {
    const VEC rnd = SET1_32(1 << (s - 1));
    const int sc = 32 / n; /* row stride into the 32-point matrix */
    int m = n, step = 1;
    while (m > 4) {
        VEC plo[8], phi[8];
        for (int i = 0; i < m / 2; i += 2) {
            const VEC o0 = SUB16(LOADU(a + i * ap), LOADU(a + (m - 1 - i) * ap));
            const VEC o1 = SUB16(LOADU(a + (i + 1) * ap), LOADU(a + (m - 2 - i) * ap));
            plo[i / 2] = UNPACKLO16(o0, o1);
            phi[i / 2] = UNPACKHI16(o0, o1);
        }
        for (int j = 0; j < m / 2; j++) {
            const int k = (2 * j + 1) * step;
            const uint32_t *t = vidk_hevc_pairs.pr + k * sc * 16;
            VEC slo = MADD(plo[0], SET1_32((int32_t)t[0])),
                shi = MADD(phi[0], SET1_32((int32_t)t[0]));
            for (int p = 1; p < m / 4; p++) {
                const VEC c = SET1_32((int32_t)t[p]);
                slo = ADD32(slo, MADD(plo[p], c));
                shi = ADD32(shi, MADD(phi[p], c));
            }
            STOREU(o + k * op, rshift_pack(slo, shi, rnd, s));
        }
        for (int i = 0; i < m / 2; i++)
            STOREU(a + i * ap, ADD16(LOADU(a + i * ap), LOADU(a + (m - 1 - i) * ap)));
        m /= 2;
        step *= 2;
    }
    /* 4 points from pairs (a0, a3), (a1, a2): no int16 sum of four values. */
    const VEC a0 = LOADU(a), a1 = LOADU(a + ap), a2 = LOADU(a + 2 * ap), a3 = LOADU(a + 3 * ap);
    const VEC l0 = UNPACKLO16(a0, a3), h0 = UNPACKHI16(a0, a3);
    const VEC l1 = UNPACKLO16(a1, a2), h1 = UNPACKHI16(a1, a2);
    for (int k4 = 0; k4 < 4; k4++) {
        const VEC c0 = SET1_32((int32_t)vidk_hevc_pairs.f4[k4]),
                  c1 = SET1_32((int32_t)vidk_hevc_pairs.f4[4 + k4]);
        STOREU(o + k4 * step * op, rshift_pack(ADD32(MADD(l0, c0), MADD(l1, c1)),
                                               ADD32(MADD(h0, c0), MADD(h1, c1)), rnd, s));
    }
}

/* Forward stage 2: rows of in (pitch ip) -> coefficient row v of each of the g_n blocks
 * dst[g] (at column voff when g_n is 1). Straight sums of pmaddwd pairs (y, n - 1 - y):
 * the inputs reach +-32767, so no int16 butterfly here. */
HT_INLINE void fwd_stage2(int16_t *const *dst, int g_n, int voff, const int16_t *in, int ip,
                          int n, int s) {
    const VEC rnd = SET1_32(1 << (s - 1));
    const uint32_t *tab = n == 8    ? vidk_hevc_pairs.f2_8
                          : n == 16 ? vidk_hevc_pairs.f2_16
                                    : vidk_hevc_pairs.f2_32;
    VEC plo[16], phi[16];
    for (int p = 0; p < n / 2; p++) {
        const VEC x = LOADU(in + p * ip), y = LOADU(in + (n - 1 - p) * ip);
        plo[p] = UNPACKLO16(x, y);
        phi[p] = UNPACKHI16(x, y);
    }
    for (int v = 0; v < n; v++) {
        const uint32_t *t = tab + v * (n / 2);
        VEC c = SET1_32((int32_t)t[0]);
        VEC slo = MADD(plo[0], c), shi = MADD(phi[0], c);
        for (int p = 1; p < n / 2; p++) {
            c = SET1_32((int32_t)t[p]);
            slo = ADD32(slo, MADD(plo[p], c));
            shi = ADD32(shi, MADD(phi[p], c));
        }
        const VEC r = rshift_pack(slo, shi, rnd, s);
        if (g_n == 1)
            STOREU(dst[0] + v * n + voff, r);
        else
            STP(dst, v * n, n, r);
    }
}

/* Inverse 1D: rows d[k] (row k of each of the g_n blocks src[g], at column soff when g_n
 * is 1, pitch sp) -> rows of o: (sum_k T[k][y] d[k] + rnd) >> s saturated to int16 (the
 * normative clip). Partial butterflies on 32-bit sums: the 4-point core on rows 0, n/4,
 * n/2, 3n/4, then each level adds its odd rows. */
HT_INLINE void inv_1d(int16_t *o, int op, const int16_t *const *src, int g_n, int soff, int sp,
                      int n, int s) {
#define DROW(k) (g_n == 1 ? LOADU(src[0] + (k)*sp + soff) : LDP(src, (k)*sp, n))
    const VEC rnd = SET1_32(1 << (s - 1));
    VEC rlo[32], rhi[32];
    {
        const int q = n / 4;
        const VEC d0 = DROW(0), d1 = DROW(q), d2 = DROW(2 * q), d3 = DROW(3 * q);
        const VEC el = UNPACKLO16(d0, d2), eh = UNPACKHI16(d0, d2);
        const VEC ol = UNPACKLO16(d1, d3), oh = UNPACKHI16(d1, d3);
        for (int y = 0; y < 2; y++) {
            const VEC ce = SET1_32((int32_t)vidk_hevc_pairs.i4[y]),
                      co = SET1_32((int32_t)vidk_hevc_pairs.i4[2 + y]);
            const VEC elo = MADD(el, ce), ehi = MADD(eh, ce), olo = MADD(ol, co),
                      ohi = MADD(oh, co);
            rlo[y] = ADD32(elo, olo);
            rhi[y] = ADD32(ehi, ohi);
            rlo[3 - y] = SUB32(elo, olo);
            rhi[3 - y] = SUB32(ehi, ohi);
        }
    }
    for (int m = 8; m <= n; m *= 2) {
        const int st = n / m; /* odd rows of this level: (2j + 1) * st */
        const uint32_t *tab = m == 8    ? vidk_hevc_pairs.io_8
                              : m == 16 ? vidk_hevc_pairs.io_16
                                        : vidk_hevc_pairs.io_32;
        VEC plo[8], phi[8];
        for (int j = 0; j < m / 2; j += 2) {
            const VEC x = DROW((2 * j + 1) * st), y = DROW((2 * j + 3) * st);
            plo[j / 2] = UNPACKLO16(x, y);
            phi[j / 2] = UNPACKHI16(x, y);
        }
        for (int y = m / 2 - 1; y >= 0; y--) {
            VEC c = SET1_32((int32_t)tab[y]);
            VEC olo = MADD(plo[0], c), ohi = MADD(phi[0], c);
            for (int p = 1; p < m / 4; p++) {
                c = SET1_32((int32_t)tab[p * (m / 2) + y]);
                olo = ADD32(olo, MADD(plo[p], c));
                ohi = ADD32(ohi, MADD(phi[p], c));
            }
            const VEC elo = rlo[y], ehi = rhi[y];
            rlo[y] = ADD32(elo, olo);
            rhi[y] = ADD32(ehi, ohi);
            rlo[m - 1 - y] = SUB32(elo, olo);
            rhi[m - 1 - y] = SUB32(ehi, ohi);
        }
    }
    for (int y = 0; y < n; y++)
        STOREU(o + y * op, rshift_pack(rlo[y], rhi[y], rnd, s));
#undef DROW
}

/* Blocks per group and vectors per row for n points. */
#define GRP(n) ((n) >= VL ? 1 : VL / (n))
#define VPR(n) ((n)*GRP(n) / VL)

/* 2D forward of n_blocks blocks of n x n: groups of GRP(n) blocks side by side.
 * sa: residual columns (X^T), sb: row-transform output (per coefficient k), then sa
 * again: its transpose, whose columns go through stage 2 straight into coef. */
HT_INLINE void fwd_nxn(int16_t *coef, const int16_t *res, int n_blocks, int bd, int n,
                       int log2n) {
    enum { MAXW = 32 };
    const int g_n = GRP(n), w = n * g_n, nv = VPR(n);
    const int s1 = log2n + bd - 9, s2 = log2n + 6, lim = (1 << bd) - 1;
    VIDK_HEVC_ALIGN(64) int16_t sa[32 * MAXW], sb[32 * MAXW], dummy[32 * 32];
    for (int b = 0; b < n_blocks; b += g_n) {
        const int16_t *src[4];
        int16_t *dst[4];
        for (int g = 0; g < g_n; g++) {
            const int bb = b + g < n_blocks ? b + g : n_blocks - 1;
            src[g] = res + (size_t)bb * (size_t)(n * n);
            dst[g] = b + g < n_blocks ? coef + (size_t)bb * (size_t)(n * n) : dummy;
        }
        for (int g = 0; g < g_n; g++)
            for (int ty = 0; ty < n; ty += 8)
                for (int tx = 0; tx < n; tx += 8)
                    tr8_clip(sa + tx * w + g * n + ty, w, src[g] + ty * n + tx, n, lim);
        for (int v = 0; v < nv; v++)
            fwd_stage1(sb + v * VL, w, sa + v * VL, w, n, s1);
        for (int g = 0; g < g_n; g++)
            for (int ty = 0; ty < n; ty += 8)
                for (int tx = 0; tx < n; tx += 8)
                    tr8(sa + tx * w + g * n + ty, w, sb + ty * w + g * n + tx, w);
        for (int v = 0; v < nv; v++)
            fwd_stage2(dst, g_n, v * VL, sa + v * VL, w, n, s2);
    }
}

/* 2D inverse: rows of the coefficient blocks -> columns transformed (clip) -> transpose
 * -> rows transformed -> transpose into res. */
HT_INLINE void inv_nxn(int16_t *res, const int16_t *coef, int n_blocks, int bd, int n) {
    enum { MAXW = 32 };
    const int g_n = GRP(n), w = n * g_n, nv = VPR(n);
    VIDK_HEVC_ALIGN(64) int16_t sa[32 * MAXW], sb[32 * MAXW], dummy[32 * 32];
    for (int b = 0; b < n_blocks; b += g_n) {
        const int16_t *src[4];
        int16_t *dst[4];
        for (int g = 0; g < g_n; g++) {
            const int bb = b + g < n_blocks ? b + g : n_blocks - 1;
            src[g] = coef + (size_t)bb * (size_t)(n * n);
            dst[g] = b + g < n_blocks ? res + (size_t)bb * (size_t)(n * n) : dummy;
        }
        for (int v = 0; v < nv; v++)
            inv_1d(sa + v * VL, w, src, g_n, v * VL, n, n, 7);
        for (int g = 0; g < g_n; g++)
            for (int ty = 0; ty < n; ty += 8)
                for (int tx = 0; tx < n; tx += 8)
                    tr8(sb + tx * w + g * n + ty, w, sa + ty * w + g * n + tx, w);
        for (int v = 0; v < nv; v++) {
            const int16_t *col = sb + v * VL;
            inv_1d(sa + v * VL, w, &col, 1, 0, w, n, 20 - bd);
        }
        for (int g = 0; g < g_n; g++)
            for (int ty = 0; ty < n; ty += 8)
                for (int tx = 0; tx < n; tx += 8)
                    tr8(dst[g] + ty * n + tx, n, sa + tx * w + g * n + ty, w);
    }
}

static decl_hevc_fwd_fn(FN(dct8)) {
    fwd_nxn(coef, res, n_blocks, bd, 8, 3);
}
static decl_hevc_fwd_fn(FN(dct16)) {
    fwd_nxn(coef, res, n_blocks, bd, 16, 4);
}
static decl_hevc_fwd_fn(FN(dct32)) {
    fwd_nxn(coef, res, n_blocks, bd, 32, 5);
}
static decl_hevc_inv_fn(FN(idct8)) {
    inv_nxn(res, coef, n_blocks, bd, 8);
}
static decl_hevc_inv_fn(FN(idct16)) {
    inv_nxn(res, coef, n_blocks, bd, 16);
}
static decl_hevc_inv_fn(FN(idct32)) {
    inv_nxn(res, coef, n_blocks, bd, 32);
}

#define HEVC_TMPL_ASSIGN_TX(dsp)                                                               \
    do {                                                                                       \
        (dsp)->fwd[VIDK_HEVC_TX_DCT4] = FN(dct4);                                              \
        (dsp)->fwd[VIDK_HEVC_TX_DCT8] = FN(dct8);                                              \
        (dsp)->fwd[VIDK_HEVC_TX_DCT16] = FN(dct16);                                            \
        (dsp)->fwd[VIDK_HEVC_TX_DCT32] = FN(dct32);                                            \
        (dsp)->fwd[VIDK_HEVC_TX_DST4] = FN(dst4);                                              \
        (dsp)->fwd[VIDK_HEVC_TX_TS4] = FN(ts4);                                                \
        (dsp)->inv[VIDK_HEVC_TX_DCT4] = FN(idct4);                                             \
        (dsp)->inv[VIDK_HEVC_TX_DCT8] = FN(idct8);                                             \
        (dsp)->inv[VIDK_HEVC_TX_DCT16] = FN(idct16);                                           \
        (dsp)->inv[VIDK_HEVC_TX_DCT32] = FN(idct32);                                           \
        (dsp)->inv[VIDK_HEVC_TX_DST4] = FN(idst4);                                             \
        (dsp)->inv[VIDK_HEVC_TX_TS4] = FN(its4);                                               \
    } while (0)

/* ------------------------------------------------------------------ quantisers */
#ifdef HEVC_TMPL_QUANT

/* Flat: |c| * scale as an unsigned 16x16 -> 32 product (mullo / mulhi), + offset,
 * >> qbits (all positive, < 2^31), unsigned saturation to 65535, then the magnitude
 * limit 32767 (32768 for negative c: Clip3(-32768, 32767, sign * mag)), sign restored
 * with psignw (c = 0 gives 0: the offset is below 2^qbits). */
static decl_hevc_quant_fn(FN(quant)) {
    const VEC sc = SET1_16((int16_t)scale), off = SET1_32(offset), mx = SET1_16(32767);
    for (int b = 0; b < n_blocks; b++, lev += len, coef += len) {
        int zeros = 0;
        for (int k = 0; k < len; k += VL) {
            const VEC c = LOADU(coef + k), a = ABS16(c);
            const VEC lo = MULLO16(a, sc), hi = MULHIU16(a, sc);
            const VEC q0 = SRL32(ADD32(UNPACKLO16(lo, hi), off), qbits);
            const VEC q1 = SRL32(ADD32(UNPACKHI16(lo, hi), off), qbits);
            const VEC mag = MINU16(PACKUS32(q0, q1), SUB16(mx, SRAI16_15(c)));
            const VEC l = SIGN16(mag, c);
            STOREU(lev + k, l);
            zeros += ZEROS16(l);
        }
        nnz[b] = (uint16_t)(len - zeros);
    }
}

/* Dequantisation: pmaddwd of (level, 1) with (scale, rnd), >> shift, packs = Clip3.
 * shift <= 0: the 32-bit product clamped to +-2^15 first (the final clip is the same,
 * and the left shift cannot overflow). */
HT_INLINE VEC dequant_vec(VEC l, VEC slo, VEC shi, int shift) {
    const VEC one = SET1_16(1);
    VEC a = MADD(UNPACKLO16(l, one), slo), b = MADD(UNPACKHI16(l, one), shi);
    if (shift > 0) return PACKS32(SRA32(a, shift), SRA32(b, shift));
    const VEC lo = SET1_32(-32768), hi = SET1_32(32768);
    a = SLL32(MIN32(MAX32(a, lo), hi), -shift);
    b = SLL32(MIN32(MAX32(b, lo), hi), -shift);
    return PACKS32(a, b);
}

static decl_hevc_dequant_fn(FN(dequant)) {
    const VEC w = pair16(scale, shift > 0 ? 1 << (shift - 1) : 0);
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        STOREU(coef + i, dequant_vec(LOADU(lev + i), w, w, shift));
    for (; i < n; i++) {
        const int64_t x = (int64_t)lev[i] * scale;
        const int64_t v =
            shift > 0 ? (x + (1 << (shift - 1))) >> shift : x * ((int64_t)1 << -shift);
        coef[i] = (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);
    }
}

static decl_hevc_dequant_sl_fn(FN(dequant_sl)) {
    const VEC rnd = SET1_16((int16_t)(shift > 0 ? 1 << (shift - 1) : 0));
    for (int b = 0; b < n_blocks; b++, lev += len, coef += len)
        for (int k = 0; k < len; k += VL) {
            const VEC s = LOADU(ds + k);
            STOREU(coef + k,
                   dequant_vec(LOADU(lev + k), UNPACKLO16(s, rnd), UNPACKHI16(s, rnd), shift));
        }
}

static decl_hevc_nnz_fn(FN(nnz)) {
    for (int b = 0; b < n_blocks; b++, v += len) {
        int zeros = 0;
        for (int k = 0; k < len; k += VL)
            zeros += ZEROS16(LOADU(v + k));
        cnt[b] = (uint16_t)(len - zeros);
    }
}

#endif /* HEVC_TMPL_QUANT */
