/* Shared x86 pieces of the H.264 transforms, compiled into each ISA file with that file's
 * flags (in h264_avx2.c VEX encoding and AVX2 blends; in h264_avx512.c per-lane shift
 * counts and mask compares replace the 4x4 blends and range test):
 * - the 8-point butterflies of the inverse (8.5.13.2) and forward transforms, written once
 *   for any vector type T: ADD, SUB and SRA (arithmetic shift right by an immediate) are
 *   that type's lane operations;
 * - the dequantisation of 8.5.12.1 / 8.5.13.1 on 8 coefficients, the 16-bit-lane inverse
 *   4x4 / 8x8 fast paths with their per-block range tests, the exact 32-bit 4x4 path and
 *   the pixel add of 8.5.14.
 *
 * When 16-bit lanes are exact. The lanes wrap modulo 2^16 and the arithmetic is otherwise
 * the spec's (adds, subtracts, floor shifts). Adds and subtracts are exact modulo 2^16, so
 * a 16-bit result equals the 32-bit one as soon as every value that is SHIFTED (the inputs
 * x1, x3 (4x4) / x1, x2, x3, x5, x6, x7, e1, e3, e5, e7 (8x8) of both passes) and the final
 * h + 32 lie in [-32768, 32767]; the other intermediates may wrap. The rounding 32 is added
 * to d[0][0] up front: d00 reaches every output of both passes with weight +1 and is never
 * shifted, so this equals adding 32 to every h.
 *
 * Max test (one compare per lane, no horizontal sum): with |d| <= M,
 * - 4x4: each 1-D output is +-xa +- xb +- xc +- (xd >> 1) (weights 1, 1, 1, 1/2),
 *   so |row output| <= R = 3M + ceil(M / 2) (|x >> 1| <= ceil(|x| / 2)), and
 *   |h| <= 3R + ceil(R / 2). M = 2672 gives R = 9352 and |h| <= 32732 <= 32767 - 32; M = 2673
 *   gives 32746 and is reached: d = M * sign pattern of output (2, 2) overflows h + 32.
 * - 8x8: every 1-D output has weights of magnitude (8, 12, 8, 10, 8, 6, 4, 3) / 8 in some
 *   order (sum W = 7.375) plus floor errors of at most 1.375 (affine bound of the
 *   butterflies), so |h| <= W (W M + 1.375) + 1.375 = 54.390625 M + 11.52; the shifted
 *   intermediates are smaller (e: weights sum 3.5, 3.5 * (W M + 1.375) + 0.5). M = 601 gives
 *   |h| <= 32700; M = 602 is reached: d = 602 * sign pattern of output (0, 0) overflows
 *   h + 32 by 10.
 * Sum test (kept for the blocks that fail the max test, e.g. a large DC at high qP):
 * - 4x4: every weight is <= 1 in magnitude, so |h| <= S = sum |d|; S <= 32735 suffices
 *   and d00 = 32736 alone overflows h + 32 by 1.
 * - 8x8: the largest 2-D weight is 1.5 * 1.5 = 2.25 (every odd coefficient index has a
 *   weight 12 / 8 on one output; positions with odd i and odd j),
 *   |h| <= 2.25 S + 7.375 * 1.375 + 1.375 <= 2.25 S + 12: S <= 14500 suffices (a single
 *   coefficient at (1, 1) first overflows near 14550).
 * tests/checkkern/check_h264.c builds the inputs at and just past every bound. */
#ifndef VIDK_X86_H264_TX8_H
#define VIDK_X86_H264_TX8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <emmintrin.h>
#if defined(__SSE4_1__) || defined(__AVX2__)
#include <immintrin.h>
#endif

/* Keeps a rarely taken path out of line (the common path stays small). */
#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* 1-D inverse 8-point transform (8.5.13.2) across x[0..7]. */
#define H264_ITX8(T, ADD, SUB, SRA, x)                                                         \
    do {                                                                                       \
        const T e0 = ADD(x[0], x[4]);                                                          \
        const T e1 = SUB(SUB(SUB(x[5], x[3]), x[7]), SRA(x[7], 1));                            \
        const T e2 = SUB(x[0], x[4]);                                                          \
        const T e3 = SUB(SUB(ADD(x[1], x[7]), x[3]), SRA(x[3], 1));                            \
        const T e4 = SUB(SRA(x[2], 1), x[6]);                                                  \
        const T e5 = ADD(ADD(SUB(x[7], x[1]), x[5]), SRA(x[5], 1));                            \
        const T e6 = ADD(x[2], SRA(x[6], 1));                                                  \
        const T e7 = ADD(ADD(ADD(x[3], x[5]), x[1]), SRA(x[1], 1));                            \
        const T f0 = ADD(e0, e6), f1 = ADD(e1, SRA(e7, 2));                                    \
        const T f2 = ADD(e2, e4), f3 = ADD(e3, SRA(e5, 2));                                    \
        const T f4 = SUB(e2, e4), f5 = SUB(SRA(e3, 2), e5);                                    \
        const T f6 = SUB(e0, e6), f7 = SUB(e7, SRA(e1, 2));                                    \
        x[0] = ADD(f0, f7);                                                                    \
        x[1] = ADD(f2, f5);                                                                    \
        x[2] = ADD(f4, f3);                                                                    \
        x[3] = ADD(f6, f1);                                                                    \
        x[4] = SUB(f6, f1);                                                                    \
        x[5] = SUB(f4, f3);                                                                    \
        x[6] = SUB(f2, f5);                                                                    \
        x[7] = SUB(f0, f7);                                                                    \
    } while (0)

/* 1-D forward 8-point transform across x[0..7] (the butterflies of src/h264.c). */
#define H264_FTX8(T, ADD, SUB, SRA, x)                                                         \
    do {                                                                                       \
        const T s07 = ADD(x[0], x[7]), d07 = SUB(x[0], x[7]);                                  \
        const T s16 = ADD(x[1], x[6]), d16 = SUB(x[1], x[6]);                                  \
        const T s25 = ADD(x[2], x[5]), d25 = SUB(x[2], x[5]);                                  \
        const T s34 = ADD(x[3], x[4]), d34 = SUB(x[3], x[4]);                                  \
        const T a0 = ADD(s07, s34), a1 = ADD(s16, s25);                                        \
        const T a2 = SUB(s07, s34), a3 = SUB(s16, s25);                                        \
        const T b4 = ADD(ADD(d16, d25), ADD(d07, SRA(d07, 1)));                                \
        const T b5 = SUB(SUB(d07, d34), ADD(d25, SRA(d25, 1)));                                \
        const T b6 = SUB(ADD(d07, d34), ADD(d16, SRA(d16, 1)));                                \
        const T b7 = ADD(SUB(d16, d25), ADD(d34, SRA(d34, 1)));                                \
        x[0] = ADD(a0, a1);                                                                    \
        x[1] = ADD(b4, SRA(b7, 2));                                                            \
        x[2] = ADD(a2, SRA(a3, 1));                                                            \
        x[3] = ADD(b5, SRA(b6, 2));                                                            \
        x[4] = SUB(a0, a1);                                                                    \
        x[5] = SUB(b6, SRA(b5, 2));                                                            \
        x[6] = SUB(SRA(a2, 1), a3);                                                            \
        x[7] = SUB(SRA(b4, 2), b7);                                                            \
    } while (0)

/* Bounds of the range tests (derivation above). */
#define H264_MAX4 2672
#define H264_MAX8 601
#define H264_SUM4 (32767 - 32)
#define H264_SUM8 14500

/* ---- 16-bit helpers ---------------------------------------------------------------- */

static inline __m128i h264_abs16(__m128i v) {
    return _mm_max_epi16(v, _mm_sub_epi16(_mm_setzero_si128(), v));
}

/* Horizontal saturating sum of 8 unsigned 16-bit lanes. */
static inline unsigned h264_hsum_sat(__m128i s) {
    s = _mm_adds_epu16(s, _mm_srli_si128(s, 8));
    s = _mm_adds_epu16(s, _mm_srli_si128(s, 4));
    s = _mm_adds_epu16(s, _mm_srli_si128(s, 2));
    return (unsigned)_mm_cvtsi128_si32(s) & 0xffff;
}

/* Sum tests; |-32768| saturates, so a value that was saturated to 16 bits fails. */
static inline int h264_sum4_ok(__m128i a, __m128i b) {
    return h264_hsum_sat(_mm_adds_epu16(h264_abs16(a), h264_abs16(b))) <= H264_SUM4;
}

static inline int h264_sum8_ok(const __m128i *w) {
    __m128i sum = _mm_setzero_si128();
    for (int k = 0; k < 8; k++)
        sum = _mm_adds_epu16(sum, h264_abs16(w[k]));
    return h264_hsum_sat(sum) <= H264_SUM8;
}

/* Sign-extend 8 int16 to two registers of 4 int32. */
static inline void h264_widen(__m128i v, __m128i *lo, __m128i *hi) {
    const __m128i s = _mm_srai_epi16(v, 15);
    *lo = _mm_unpacklo_epi16(v, s);
    *hi = _mm_unpackhi_epi16(v, s);
}

/* Transpose a 4x4 int32 matrix. */
static inline void h264_tr4_d(__m128i *a, __m128i *b, __m128i *c, __m128i *d) {
    const __m128i t0 = _mm_unpacklo_epi32(*a, *b), t1 = _mm_unpacklo_epi32(*c, *d);
    const __m128i t2 = _mm_unpackhi_epi32(*a, *b), t3 = _mm_unpackhi_epi32(*c, *d);
    *a = _mm_unpacklo_epi64(t0, t1);
    *b = _mm_unpackhi_epi64(t0, t1);
    *c = _mm_unpacklo_epi64(t2, t3);
    *d = _mm_unpackhi_epi64(t2, t3);
}

/* 1-D inverse 4-point transform (8.5.12.2) across four registers. */
#define H264_ITX4(ADD, SUB, SRA, x0, x1, x2, x3)                                               \
    do {                                                                                       \
        const __m128i e0_ = ADD(x0, x2), e1_ = SUB(x0, x2);                                    \
        const __m128i e2_ = SUB(SRA(x1, 1), x3), e3_ = ADD(x1, SRA(x3, 1));                    \
        x0 = ADD(e0_, e3_);                                                                    \
        x1 = ADD(e1_, e2_);                                                                    \
        x2 = SUB(e1_, e2_);                                                                    \
        x3 = SUB(e0_, e3_);                                                                    \
    } while (0)

/* Inverse 4x4 in 32-bit lanes (exact for every input): rows of d -> rows of
 * (h + 32) >> 6. */
static inline void h264_itx4_d(__m128i *d) {
    h264_tr4_d(&d[0], &d[1], &d[2], &d[3]);
    H264_ITX4(_mm_add_epi32, _mm_sub_epi32, _mm_srai_epi32, d[0], d[1], d[2], d[3]);
    h264_tr4_d(&d[0], &d[1], &d[2], &d[3]);
    H264_ITX4(_mm_add_epi32, _mm_sub_epi32, _mm_srai_epi32, d[0], d[1], d[2], d[3]);
    const __m128i r = _mm_set1_epi32(32);
    for (int k = 0; k < 4; k++)
        d[k] = _mm_srai_epi32(_mm_add_epi32(d[k], r), 6);
}

/* ---- dequantisation (8.5.12.1 / 8.5.13.1) ---- */

/* d = ((c * ls + rnd) >> sr) << sl on 8 coefficients, one of the shifts 0: the rule of
 * 8.5.12.1 / 8.5.13.1, exact in 32 bits (|c * ls| < 2^31; the left shift wraps like the
 * C reference). Branch-free, so the results stay in registers. */
static inline void h264_dq8(__m128i c, __m128i ls, __m128i rnd, __m128i sr, __m128i sl,
                            __m128i *lo, __m128i *hi) {
    const __m128i one = _mm_set1_epi16(1);
    const __m128i a = _mm_madd_epi16(_mm_unpacklo_epi16(c, one), _mm_unpacklo_epi16(ls, rnd));
    const __m128i b = _mm_madd_epi16(_mm_unpackhi_epi16(c, one), _mm_unpackhi_epi16(ls, rnd));
    *lo = _mm_sll_epi32(_mm_sra_epi32(a, sr), sl);
    *hi = _mm_sll_epi32(_mm_sra_epi32(b, sr), sl);
}

/* Rounding constant and shifts of 8.5.12.1 (base 4) / 8.5.13.1 (base 6). */
static inline void h264_dq_params(int qp, int base, __m128i *rnd, __m128i *sr, __m128i *sl) {
    const int per = qp / 6, left = per >= base;
    *rnd = _mm_set1_epi16(left ? 0 : (int16_t)(1 << (base - 1 - per)));
    *sr = _mm_cvtsi32_si128(left ? 0 : base - per);
    *sl = _mm_cvtsi32_si128(left ? per - base : 0);
}

/* [lo.lo | hi.hi] (64-bit halves). */
static inline __m128i h264_blend64(__m128i lo, __m128i hi) {
#if defined(__AVX2__)
    return _mm_blend_epi32(lo, hi, 0xc);
#elif defined(__SSE4_1__)
    return _mm_blend_epi16(lo, hi, 0xf0);
#else
    return _mm_castpd_si128(_mm_move_sd(_mm_castsi128_pd(hi), _mm_castsi128_pd(lo)));
#endif
}

/* 1 when every int16 lane of the registers lies in [-bound, bound]: a max / min tree and
 * one compare each way (int16 -32768 fails, which pabsw + a signed compare would miss). */
static inline int h264_in_range(__m128i mx, __m128i mn, int bound) {
    const __m128i o = _mm_or_si128(_mm_cmpgt_epi16(mx, _mm_set1_epi16((int16_t)bound)),
                                   _mm_cmpgt_epi16(_mm_set1_epi16((int16_t)-bound), mn));
    return !_mm_movemask_epi8(o);
}

static inline int h264_max4_ok(__m128i a, __m128i b) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    /* |-32768| = 32768 unsigned: fails */
    const __m128i m = _mm_max_epu16(_mm_abs_epi16(a), _mm_abs_epi16(b));
    return !_mm_cmpgt_epu16_mask(m, _mm_set1_epi16(H264_MAX4));
#else
    return h264_in_range(_mm_max_epi16(a, b), _mm_min_epi16(a, b), H264_MAX4);
#endif
}

static inline int h264_max8_ok(const __m128i *w) {
    const __m128i x0 = _mm_max_epi16(w[0], w[1]), n0 = _mm_min_epi16(w[0], w[1]);
    const __m128i x1 = _mm_max_epi16(w[2], w[3]), n1 = _mm_min_epi16(w[2], w[3]);
    const __m128i x2 = _mm_max_epi16(w[4], w[5]), n2 = _mm_min_epi16(w[4], w[5]);
    const __m128i x3 = _mm_max_epi16(w[6], w[7]), n3 = _mm_min_epi16(w[6], w[7]);
    return h264_in_range(_mm_max_epi16(_mm_max_epi16(x0, x1), _mm_max_epi16(x2, x3)),
                         _mm_min_epi16(_mm_min_epi16(n0, n1), _mm_min_epi16(n2, n3)),
                         H264_MAX8);
}

/* One 1-D inverse 4-point pass (8.5.12.2) on two registers holding x0 | x1 and x2 | x3
 * (each half: one value per lane, four lanes): out s = o0 | o1, d = o3 | o2. */
static inline void h264_itx4_pass(__m128i c01, __m128i c23, __m128i *s, __m128i *d) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    const __m128i n = _mm_set_epi16(1, 1, 1, 1, 0, 0, 0, 0); /* shift the high half only */
    const __m128i p = _mm_add_epi16(c01, _mm_srav_epi16(c23, n));
    const __m128i q = _mm_sub_epi16(_mm_srav_epi16(c01, n), c23);
#else
    const __m128i p = _mm_add_epi16(c01, h264_blend64(c23, _mm_srai_epi16(c23, 1)));
    const __m128i q = _mm_sub_epi16(h264_blend64(c01, _mm_srai_epi16(c01, 1)), c23);
#endif
    /* p = e0 | e3 = x0 + x2 | x1 + (x3 >> 1); q = e1 | e2 = x0 - x2 | (x1 >> 1) - x3 */
    const __m128i r1 = _mm_unpacklo_epi64(p, q), r2 = _mm_unpackhi_epi64(p, q);
    *s = _mm_add_epi16(r1, r2); /* e0 + e3 | e1 + e2 */
    *d = _mm_sub_epi16(r1, r2); /* e0 - e3 | e1 - e2 */
}

/* Inverse 4x4 in 16-bit lanes: a = rows 0 | 1, b = rows 2 | 3 of d (raster). Out: the
 * residual (h + 32) >> 6 as rows 0 | 1 and rows 3 | 2. Exact when the block passes a test. */
static inline void h264_itx4_w(__m128i a, __m128i b, __m128i *r01, __m128i *r32) {
    a = _mm_add_epi16(a, _mm_cvtsi32_si128(32));
    __m128i t0 = _mm_unpacklo_epi16(a, b), t1 = _mm_unpackhi_epi16(a, b), s, d;
    /* columns 0 | 1 and 2 | 3: the row pass runs across them */
    h264_itx4_pass(_mm_unpacklo_epi16(t0, t1), _mm_unpackhi_epi16(t0, t1), &s, &d);
    d = _mm_shuffle_epi32(d, 0x4e); /* o2 | o3 */
    t0 = _mm_unpacklo_epi16(s, d);
    t1 = _mm_unpackhi_epi16(s, d);
    /* rows 0 | 1 and 2 | 3 of the row-pass result: the column pass */
    h264_itx4_pass(_mm_unpacklo_epi16(t0, t1), _mm_unpackhi_epi16(t0, t1), &s, &d);
    *r01 = _mm_srai_epi16(s, 6);
    *r32 = _mm_srai_epi16(d, 6);
}

static inline __m128i h264_load32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtsi32_si128(v);
}

static inline void h264_store32(uint8_t *p, int32_t v) {
    memcpy(p, &v, 4);
}

/* dst = Clip1(dst + r) on 4x4, r as rows 0 | 1 and 3 | 2 (int16, any value: the
 * saturating add and pack clip exactly like 8.5.14). */
static inline void h264_add4(uint8_t *dst, ptrdiff_t stride, __m128i r01, __m128i r32) {
    const __m128i z = _mm_setzero_si128();
    uint8_t *d1 = dst + stride, *d2 = d1 + stride, *d3 = d2 + stride;
    const __m128i p01 = _mm_unpacklo_epi32(h264_load32(dst), h264_load32(d1));
    const __m128i p32 = _mm_unpacklo_epi32(h264_load32(d3), h264_load32(d2));
    const __m128i o = _mm_packus_epi16(_mm_adds_epi16(_mm_unpacklo_epi8(p01, z), r01),
                                       _mm_adds_epi16(_mm_unpacklo_epi8(p32, z), r32));
    h264_store32(dst, _mm_cvtsi128_si32(o));
#if defined(__SSE4_1__) || defined(__AVX2__)
    h264_store32(d1, _mm_extract_epi32(o, 1));
    h264_store32(d3, _mm_extract_epi32(o, 2));
    h264_store32(d2, _mm_extract_epi32(o, 3));
#else
    h264_store32(d1, _mm_cvtsi128_si32(_mm_shuffle_epi32(o, 1)));
    h264_store32(d3, _mm_cvtsi128_si32(_mm_shuffle_epi32(o, 2)));
    h264_store32(d2, _mm_cvtsi128_si32(_mm_shuffle_epi32(o, 3)));
#endif
}

/* Transpose an 8x8 int16 matrix (one row per register). */
static inline void h264_tr8_w(__m128i *r) {
    const __m128i a0 = _mm_unpacklo_epi16(r[0], r[1]), a1 = _mm_unpackhi_epi16(r[0], r[1]);
    const __m128i a2 = _mm_unpacklo_epi16(r[2], r[3]), a3 = _mm_unpackhi_epi16(r[2], r[3]);
    const __m128i a4 = _mm_unpacklo_epi16(r[4], r[5]), a5 = _mm_unpackhi_epi16(r[4], r[5]);
    const __m128i a6 = _mm_unpacklo_epi16(r[6], r[7]), a7 = _mm_unpackhi_epi16(r[6], r[7]);
    const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2);
    const __m128i b2 = _mm_unpacklo_epi32(a1, a3), b3 = _mm_unpackhi_epi32(a1, a3);
    const __m128i b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6);
    const __m128i b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
    r[0] = _mm_unpacklo_epi64(b0, b4);
    r[1] = _mm_unpackhi_epi64(b0, b4);
    r[2] = _mm_unpacklo_epi64(b1, b5);
    r[3] = _mm_unpackhi_epi64(b1, b5);
    r[4] = _mm_unpacklo_epi64(b2, b6);
    r[5] = _mm_unpackhi_epi64(b2, b6);
    r[6] = _mm_unpacklo_epi64(b3, b7);
    r[7] = _mm_unpackhi_epi64(b3, b7);
}

/* Inverse 8x8 in 16-bit lanes: rows of d in, rows of the residual (h + 32) >> 6 out.
 * Exact when the block passes a test. */
static inline void h264_itx8_w(__m128i *w) {
    w[0] = _mm_add_epi16(w[0], _mm_cvtsi32_si128(32));
    h264_tr8_w(w);
    H264_ITX8(__m128i, _mm_add_epi16, _mm_sub_epi16, _mm_srai_epi16, w); /* rows */
    h264_tr8_w(w);
    H264_ITX8(__m128i, _mm_add_epi16, _mm_sub_epi16, _mm_srai_epi16, w); /* columns */
    for (int k = 0; k < 8; k++)
        w[k] = _mm_srai_epi16(w[k], 6);
}

/* dst = Clip1(dst + r) on 8x8, r as rows (int16, any value). */
static inline void h264_add8(uint8_t *dst, ptrdiff_t stride, const __m128i *r) {
    const __m128i z = _mm_setzero_si128();
    for (int k = 0; k < 8; k += 2) {
        uint8_t *p0 = dst + k * stride, *p1 = p0 + stride;
        const __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)p0), z);
        const __m128i b = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)p1), z);
        const __m128i o =
            _mm_packus_epi16(_mm_adds_epi16(a, r[k]), _mm_adds_epi16(b, r[k + 1]));
        _mm_storel_epi64((__m128i *)p0, o);
        _mm_storeh_pi((__m64 *)p1, _mm_castsi128_ps(o)); /* movhps: no shuffle */
    }
}

/* dst = Clip1(dst + inverse of the int32 rows d) for 4x4: the 16-bit path when a test
 * passes on the saturated values, else 32 bits (packing that residual with saturation and
 * adding with saturation clips exactly like 8.5.14). */
static inline void h264_itx4_add_d(uint8_t *dst, ptrdiff_t stride, __m128i *d) {
    const __m128i a = _mm_packs_epi32(d[0], d[1]), b = _mm_packs_epi32(d[2], d[3]);
    __m128i r01, r32;
    if (h264_max4_ok(a, b) || h264_sum4_ok(a, b)) {
        h264_itx4_w(a, b, &r01, &r32);
    } else {
        h264_itx4_d(d);
        r01 = _mm_packs_epi32(d[0], d[1]);
        r32 = _mm_packs_epi32(d[3], d[2]);
    }
    h264_add4(dst, stride, r01, r32);
}

/* The same on int16 rows 0 | 1 and 2 | 3 that failed the max test. */
static inline void h264_itx4_add_big(uint8_t *dst, ptrdiff_t stride, __m128i a, __m128i b) {
    __m128i d[4];
    h264_widen(a, &d[0], &d[1]);
    h264_widen(b, &d[2], &d[3]);
    h264_itx4_add_d(dst, stride, d);
}

/* idct_add16 4x4 (int16 input, x264's interface) of one ISA file: the max test covers the
 * common blocks on the 16-bit path; the others take an out-of-line exact path (kept out
 * of line so the common path stays small). */
#define H264_DEF_IDCT_ADD16_4X4(name)                                                          \
    static NOINLINE void name##_big(uint8_t *dst, ptrdiff_t stride, __m128i a, __m128i b) {    \
        h264_itx4_add_big(dst, stride, a, b);                                                  \
    }                                                                                          \
    static decl_h264_idct_add16_fn(name) {                                                     \
        const __m128i a = _mm_loadu_si128((const __m128i *)d);                                 \
        const __m128i b = _mm_loadu_si128((const __m128i *)(d + 8));                           \
        if (!h264_max4_ok(a, b)) {                                                             \
            name##_big(dst, stride, a, b);                                                     \
            return;                                                                            \
        }                                                                                      \
        __m128i r01, r32;                                                                      \
        h264_itx4_w(a, b, &r01, &r32);                                                         \
        h264_add4(dst, stride, r01, r32);                                                      \
    }

#endif
