/* H.264 transforms, SSE2.
 *
 * Inverse transforms: the spec's arithmetic is 32-bit (wrapping, see src/h264.h). The
 * fast path runs in 16-bit lanes when the block provably cannot overflow them, else a
 * 32-bit-lane path runs; both equal the C reference bit for bit.
 *
 * The 16-bit proof: for the 4x4 transform every intermediate and output of a 1-D pass is
 * a sum of the inputs with weights of magnitude <= 1 (a floor shift x >> 1 has
 * |x >> 1| <= |x|), so |value| <= sum |input| of the row, and after both passes
 * |h| <= S = sum |d| over the block; with S <= 32767 - 32 the rounding add fits too.
 * For 8x8 the weights reach 1.5 plus < 1 per floor, giving |h| <= 2.25 S + 52 (see
 * docs/H264.md); S <= 14500 keeps h + 32 <= 32767. S is computed on the 16-bit
 * saturated values with saturating adds, so values that do not fit 16 bits always fail
 * the test. */
#include <emmintrin.h>
#include <string.h>

#include "internal.h"
#include "x86/h264_tx8.h"

/* GCC turns the loops that load a block into registers (x[k] = load(p + k)) into an
 * inline memcpy to a stack array, then reads the registers back from it: that roughly
 * doubles the time of the 8x8 kernels. Keep the loads as loads. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif

#define T4 (32767 - 32)
#define T8 14500

/* ---- small helpers ---------------------------------------------------------------- */

static inline __m128i load32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtsi32_si128(v);
}

static inline void store32(uint8_t *p, __m128i v) {
    const int32_t x = _mm_cvtsi128_si32(v);
    memcpy(p, &x, 4);
}

static inline __m128i abs16(__m128i v) {
    return _mm_max_epi16(v, _mm_sub_epi16(_mm_setzero_si128(), v));
}

/* Horizontal saturating sum of 8 unsigned 16-bit lanes. */
static inline unsigned hsum_sat(__m128i s) {
    s = _mm_adds_epu16(s, _mm_srli_si128(s, 8));
    s = _mm_adds_epu16(s, _mm_srli_si128(s, 4));
    s = _mm_adds_epu16(s, _mm_srli_si128(s, 2));
    return (unsigned)_mm_cvtsi128_si32(s) & 0xffff;
}

/* Number of 0xff bytes of m (each byte 0 or 0xff): no POPCNT needed. */
static inline int count_ff(__m128i m) {
    const __m128i s = _mm_sad_epu8(_mm_and_si128(m, _mm_set1_epi8(1)), _mm_setzero_si128());
    return _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_srli_si128(s, 8));
}

/* Sign-extend 8 int16 to two registers of 4 int32. */
static inline void widen(__m128i v, __m128i *lo, __m128i *hi) {
    const __m128i s = _mm_srai_epi16(v, 15);
    *lo = _mm_unpacklo_epi16(v, s);
    *hi = _mm_unpackhi_epi16(v, s);
}

#define ADD16 _mm_add_epi16
#define SUB16 _mm_sub_epi16
#define SRA16 _mm_srai_epi16
#define ADD32 _mm_add_epi32
#define SUB32 _mm_sub_epi32
#define SRA32 _mm_srai_epi32

/* 1-D inverse 4-point transform (8.5.12.2) across four registers. */
#define ITX4(ADD, SUB, SRA, x0, x1, x2, x3)                                                    \
    do {                                                                                       \
        const __m128i e0_ = ADD(x0, x2), e1_ = SUB(x0, x2);                                    \
        const __m128i e2_ = SUB(SRA(x1, 1), x3), e3_ = ADD(x1, SRA(x3, 1));                    \
        x0 = ADD(e0_, e3_);                                                                    \
        x1 = ADD(e1_, e2_);                                                                    \
        x2 = SUB(e1_, e2_);                                                                    \
        x3 = SUB(e0_, e3_);                                                                    \
    } while (0)

/* 1-D inverse / forward 8-point transforms across x[0..7] (src/x86/h264_tx8.h). */
#define ITX8(ADD, SUB, SRA, x) H264_ITX8(__m128i, ADD, SUB, SRA, x)

/* Transpose the 4x4 int16 matrix held in the low halves of a..d. */
static inline void tr4_w(__m128i *a, __m128i *b, __m128i *c, __m128i *d) {
    const __m128i t0 = _mm_unpacklo_epi16(*a, *b), t1 = _mm_unpacklo_epi16(*c, *d);
    const __m128i u0 = _mm_unpacklo_epi32(t0, t1), u1 = _mm_unpackhi_epi32(t0, t1);
    *a = u0;
    *b = _mm_unpackhi_epi64(u0, u0);
    *c = u1;
    *d = _mm_unpackhi_epi64(u1, u1);
}

/* Transpose a 4x4 int32 matrix. */
static inline void tr4_d(__m128i *a, __m128i *b, __m128i *c, __m128i *d) {
    const __m128i t0 = _mm_unpacklo_epi32(*a, *b), t1 = _mm_unpacklo_epi32(*c, *d);
    const __m128i t2 = _mm_unpackhi_epi32(*a, *b), t3 = _mm_unpackhi_epi32(*c, *d);
    *a = _mm_unpacklo_epi64(t0, t1);
    *b = _mm_unpackhi_epi64(t0, t1);
    *c = _mm_unpacklo_epi64(t2, t3);
    *d = _mm_unpackhi_epi64(t2, t3);
}

/* Transpose an 8x8 int16 matrix (one row per register). */
static inline void tr8_w(__m128i *r) {
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

/* Transpose an 8x8 int32 matrix held as row i = (l[i], h[i]). */
static inline void tr8_d(__m128i *l, __m128i *h) {
    __m128i a[4] = {l[4], l[5], l[6], l[7]}; /* rows 4..7, columns 0..3 */
    tr4_d(&l[0], &l[1], &l[2], &l[3]);       /* -> columns 0..3 of rows 0..3 */
    tr4_d(&a[0], &a[1], &a[2], &a[3]);       /* -> columns 0..3 of rows 4..7 */
    tr4_d(&h[0], &h[1], &h[2], &h[3]);       /* -> columns 4..7 of rows 0..3 */
    tr4_d(&h[4], &h[5], &h[6], &h[7]);       /* -> columns 4..7 of rows 4..7 */
    for (int k = 0; k < 4; k++) {
        l[4 + k] = h[k];
        h[k] = a[k];
    }
}

/* ---- dequantisation ------------------------------------------------------------------- */

/* d = ((c * ls + rnd) >> sr) << sl on 8 coefficients, one of the shifts 0: the rule of
 * 8.5.12.1 / 8.5.13.1, exact in 32 bits (|c * ls| < 2^31; the left shift wraps like the
 * C reference). Branch-free, so the results stay in registers. */
static inline void dq8(__m128i c, __m128i ls, __m128i rnd, __m128i sr, __m128i sl, __m128i *lo,
                       __m128i *hi) {
    const __m128i one = _mm_set1_epi16(1);
    const __m128i a = _mm_madd_epi16(_mm_unpacklo_epi16(c, one), _mm_unpacklo_epi16(ls, rnd));
    const __m128i b = _mm_madd_epi16(_mm_unpackhi_epi16(c, one), _mm_unpackhi_epi16(ls, rnd));
    *lo = _mm_sll_epi32(_mm_sra_epi32(a, sr), sl);
    *hi = _mm_sll_epi32(_mm_sra_epi32(b, sr), sl);
}

/* Rounding constant and shifts of 8.5.12.1 (base 4) / 8.5.13.1 (base 6). */
static inline void dq_params(int qp, int base, __m128i *rnd, __m128i *sr, __m128i *sl) {
    const int per = qp / 6, left = per >= base;
    *rnd = _mm_set1_epi16(left ? 0 : (int16_t)(1 << (base - 1 - per)));
    *sr = _mm_cvtsi32_si128(left ? 0 : base - per);
    *sl = _mm_cvtsi32_si128(left ? per - base : 0);
}

/* ---- 4x4 inverse --------------------------------------------------------------------------
 */

/* Rows of d (int32) -> rows of h (before rounding); 16-bit lanes when S <= T4. Returns 1
 * and 16-bit rounded rows in w[] for the fast path, 0 and 32-bit rounded rows in d[]. */
/* The 16-bit path on rows 0-1 / 2-3 as int16 (the caller proved S <= T4). */
static inline void itx4_fast(__m128i p01, __m128i p23, __m128i w[4]) {
    __m128i x0 = p01, x1 = _mm_unpackhi_epi64(p01, p01), x2 = p23,
            x3 = _mm_unpackhi_epi64(p23, p23);
    tr4_w(&x0, &x1, &x2, &x3);
    ITX4(ADD16, SUB16, SRA16, x0, x1, x2, x3); /* rows */
    tr4_w(&x0, &x1, &x2, &x3);
    ITX4(ADD16, SUB16, SRA16, x0, x1, x2, x3); /* columns */
    const __m128i r = _mm_set1_epi16(32);
    w[0] = _mm_srai_epi16(_mm_add_epi16(x0, r), 6);
    w[1] = _mm_srai_epi16(_mm_add_epi16(x1, r), 6);
    w[2] = _mm_srai_epi16(_mm_add_epi16(x2, r), 6);
    w[3] = _mm_srai_epi16(_mm_add_epi16(x3, r), 6);
}

/* S <= T4 on two registers of 8 int16 (saturated: a value that does not fit fails). */
static inline int fits4(__m128i p01, __m128i p23) {
    return hsum_sat(_mm_adds_epu16(abs16(p01), abs16(p23))) <= T4;
}

static inline int itx4_core(__m128i d[4], __m128i w[4]) {
    const __m128i p01 = _mm_packs_epi32(d[0], d[1]), p23 = _mm_packs_epi32(d[2], d[3]);
    if (fits4(p01, p23)) {
        itx4_fast(p01, p23, w);
        return 1;
    }
    tr4_d(&d[0], &d[1], &d[2], &d[3]);
    ITX4(ADD32, SUB32, SRA32, d[0], d[1], d[2], d[3]);
    tr4_d(&d[0], &d[1], &d[2], &d[3]);
    ITX4(ADD32, SUB32, SRA32, d[0], d[1], d[2], d[3]);
    const __m128i r = _mm_set1_epi32(32);
    for (int k = 0; k < 4; k++)
        d[k] = _mm_srai_epi32(_mm_add_epi32(d[k], r), 6);
    return 0;
}

/* dst = Clip1(dst + r), rows of r as 16-bit (low halves) or 32-bit. */
static inline void add4(uint8_t *dst, ptrdiff_t stride, const __m128i *w, const __m128i *d,
                        int fast) {
    const __m128i z = _mm_setzero_si128();
    __m128i r01, r23;
    if (fast) {
        r01 = _mm_unpacklo_epi64(w[0], w[1]);
        r23 = _mm_unpacklo_epi64(w[2], w[3]);
    } else {
        /* Saturating to 16 bits and adding with saturation clips exactly like 8.5.14. */
        r01 = _mm_packs_epi32(d[0], d[1]);
        r23 = _mm_packs_epi32(d[2], d[3]);
    }
    const __m128i p01 =
        _mm_unpacklo_epi8(_mm_unpacklo_epi32(load32(dst), load32(dst + stride)), z);
    const __m128i p23 = _mm_unpacklo_epi8(
        _mm_unpacklo_epi32(load32(dst + 2 * stride), load32(dst + 3 * stride)), z);
    const __m128i o = _mm_packus_epi16(_mm_adds_epi16(p01, r01), _mm_adds_epi16(p23, r23));
    store32(dst, o);
    store32(dst + stride, _mm_srli_si128(o, 4));
    store32(dst + 2 * stride, _mm_srli_si128(o, 8));
    store32(dst + 3 * stride, _mm_srli_si128(o, 12));
}

/* Residual out in 32 bits: the 32-bit lanes are as fast as packing, testing and
 * widening back. */
static decl_h264_idct_fn(idct_4x4_sse2) {
    __m128i x[4];
    for (int k = 0; k < 4; k++)
        x[k] = _mm_load_si128((const __m128i *)(d + 4 * k));
    tr4_d(&x[0], &x[1], &x[2], &x[3]);
    ITX4(ADD32, SUB32, SRA32, x[0], x[1], x[2], x[3]);
    tr4_d(&x[0], &x[1], &x[2], &x[3]);
    ITX4(ADD32, SUB32, SRA32, x[0], x[1], x[2], x[3]);
    const __m128i rnd = _mm_set1_epi32(32);
    for (int k = 0; k < 4; k++)
        _mm_store_si128((__m128i *)(r + 4 * k), _mm_srai_epi32(_mm_add_epi32(x[k], rnd), 6));
}

static decl_h264_idct_add_fn(idct_add_4x4_sse2) {
    __m128i dd[4], w[4];
    for (int k = 0; k < 4; k++)
        dd[k] = _mm_load_si128((const __m128i *)(d + 4 * k));
    const int fast = itx4_core(dd, w);
    add4(dst, stride, w, dd, fast);
}

static decl_h264_dequant_idct_add_fn(dequant_idct_add_4x4_sse2) {
    __m128i rnd, sr, sl, dd[4], w[4];
    dq_params(qp, 4, &rnd, &sr, &sl);
    dq8(_mm_load_si128((const __m128i *)c), _mm_loadu_si128((const __m128i *)ls), rnd, sr, sl,
        &dd[0], &dd[1]);
    dq8(_mm_load_si128((const __m128i *)(c + 8)), _mm_loadu_si128((const __m128i *)(ls + 8)),
        rnd, sr, sl, &dd[2], &dd[3]);
    const __m128i sel = _mm_cvtsi32_si128(dc ? -1 : 0);
    dd[0] = _mm_or_si128(_mm_andnot_si128(sel, dd[0]),
                         _mm_and_si128(sel, _mm_cvtsi32_si128(dc ? *dc : 0)));
    const int fast = itx4_core(dd, w);
    add4(dst, stride, w, dd, fast);
}

/* ---- 8x8 inverse --------------------------------------------------------------------------
 */

/* l/h: rows of d (columns 0..3 / 4..7), int32. Fast path: returns 1 with 16-bit rounded
 * rows in w[]; else 0 with 32-bit rounded rows in l/h. */
static inline int fits8(const __m128i *w) {
    __m128i sum = _mm_setzero_si128();
    for (int k = 0; k < 8; k++)
        sum = _mm_adds_epu16(sum, abs16(w[k]));
    return hsum_sat(sum) <= T8;
}

static inline int itx8_core(__m128i *l, __m128i *h, __m128i *w) {
    for (int k = 0; k < 8; k++)
        w[k] = _mm_packs_epi32(l[k], h[k]);
    if (fits8(w)) {
        tr8_w(w);
        ITX8(ADD16, SUB16, SRA16, w);
        tr8_w(w);
        ITX8(ADD16, SUB16, SRA16, w);
        const __m128i r = _mm_set1_epi16(32);
        for (int k = 0; k < 8; k++)
            w[k] = _mm_srai_epi16(_mm_add_epi16(w[k], r), 6);
        return 1;
    }
    tr8_d(l, h);
    ITX8(ADD32, SUB32, SRA32, l);
    ITX8(ADD32, SUB32, SRA32, h);
    tr8_d(l, h);
    ITX8(ADD32, SUB32, SRA32, l);
    ITX8(ADD32, SUB32, SRA32, h);
    const __m128i r = _mm_set1_epi32(32);
    for (int k = 0; k < 8; k++) {
        l[k] = _mm_srai_epi32(_mm_add_epi32(l[k], r), 6);
        h[k] = _mm_srai_epi32(_mm_add_epi32(h[k], r), 6);
    }
    return 0;
}

static inline void add8(uint8_t *dst, ptrdiff_t stride, const __m128i *w, const __m128i *l,
                        const __m128i *h, int fast) {
    const __m128i z = _mm_setzero_si128();
    for (int k = 0; k < 8; k += 2) {
        const __m128i r0 = fast ? w[k] : _mm_packs_epi32(l[k], h[k]);
        const __m128i r1 = fast ? w[k + 1] : _mm_packs_epi32(l[k + 1], h[k + 1]);
        uint8_t *p0 = dst + k * stride, *p1 = p0 + stride;
        const __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)p0), z);
        const __m128i b = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)p1), z);
        const __m128i o = _mm_packus_epi16(_mm_adds_epi16(a, r0), _mm_adds_epi16(b, r1));
        _mm_storel_epi64((__m128i *)p0, o);
        _mm_storel_epi64((__m128i *)p1, _mm_srli_si128(o, 8));
    }
}

static decl_h264_idct_fn(idct_8x8_sse2) {
    __m128i l[8], h[8];
    for (int k = 0; k < 8; k++) {
        l[k] = _mm_load_si128((const __m128i *)(d + 8 * k));
        h[k] = _mm_load_si128((const __m128i *)(d + 8 * k + 4));
    }
    tr8_d(l, h);
    ITX8(ADD32, SUB32, SRA32, l);
    ITX8(ADD32, SUB32, SRA32, h);
    tr8_d(l, h);
    ITX8(ADD32, SUB32, SRA32, l);
    ITX8(ADD32, SUB32, SRA32, h);
    const __m128i rnd = _mm_set1_epi32(32);
    for (int k = 0; k < 8; k++) {
        _mm_store_si128((__m128i *)(r + 8 * k), _mm_srai_epi32(_mm_add_epi32(l[k], rnd), 6));
        _mm_store_si128((__m128i *)(r + 8 * k + 4),
                        _mm_srai_epi32(_mm_add_epi32(h[k], rnd), 6));
    }
}

static decl_h264_idct_add_fn(idct_add_8x8_sse2) {
    __m128i l[8], h[8], w[8];
    for (int k = 0; k < 8; k++) {
        l[k] = _mm_load_si128((const __m128i *)(d + 8 * k));
        h[k] = _mm_load_si128((const __m128i *)(d + 8 * k + 4));
    }
    const int fast = itx8_core(l, h, w);
    add8(dst, stride, w, l, h, fast);
}

/* int16 input (x264's interface): the rows load as they are; the per-block proof picks the
 * 16-bit path, else the values widen to the exact 32-bit path. */
static decl_h264_idct_add16_fn(idct_add16_4x4_sse2) {
    const __m128i p01 = _mm_loadu_si128((const __m128i *)d);
    const __m128i p23 = _mm_loadu_si128((const __m128i *)(d + 8));
    __m128i w[4], dd[4];
    if (fits4(p01, p23)) {
        itx4_fast(p01, p23, w);
        add4(dst, stride, w, w, 1);
        return;
    }
    widen(p01, &dd[0], &dd[1]);
    widen(p23, &dd[2], &dd[3]);
    itx4_core(dd, w); /* fails the proof again: the 32-bit path */
    add4(dst, stride, w, dd, 0);
}

static decl_h264_idct_add16_fn(idct_add16_8x8_sse2) {
    __m128i l[8], h[8], w[8];
    for (int k = 0; k < 8; k++)
        w[k] = _mm_loadu_si128((const __m128i *)(d + 8 * k));
    if (fits8(w)) {
        tr8_w(w);
        ITX8(ADD16, SUB16, SRA16, w);
        tr8_w(w);
        ITX8(ADD16, SUB16, SRA16, w);
        const __m128i r = _mm_set1_epi16(32);
        for (int k = 0; k < 8; k++)
            w[k] = _mm_srai_epi16(_mm_add_epi16(w[k], r), 6);
        add8(dst, stride, w, w, w, 1);
        return;
    }
    for (int k = 0; k < 8; k++)
        widen(w[k], &l[k], &h[k]);
    const int fast = itx8_core(l, h, w); /* 0: the 32-bit path */
    add8(dst, stride, w, l, h, fast);
}

static decl_h264_dequant_idct_add_fn(dequant_idct_add_8x8_sse2) {
    __m128i rnd, sr, sl, l[8], h[8], w[8];
    dq_params(qp, 6, &rnd, &sr, &sl);
    for (int k = 0; k < 8; k++)
        dq8(_mm_load_si128((const __m128i *)(c + 8 * k)),
            _mm_loadu_si128((const __m128i *)(ls + 8 * k)), rnd, sr, sl, &l[k], &h[k]);
    /* Branch-free DC replacement: a conditional store keeps l[] in memory. */
    const __m128i sel = _mm_cvtsi32_si128(dc ? -1 : 0);
    l[0] = _mm_or_si128(_mm_andnot_si128(sel, l[0]),
                        _mm_and_si128(sel, _mm_cvtsi32_si128(dc ? *dc : 0)));
    const int fast = itx8_core(l, h, w);
    add8(dst, stride, w, l, h, fast);
}

/* ---- forward ------------------------------------------------------------------------------
 */

/* 1-D forward 4-point core transform across four registers. */
#define FTX4(ADD, SUB, x0, x1, x2, x3)                                                         \
    do {                                                                                       \
        const __m128i s03 = ADD(x0, x3), d03 = SUB(x0, x3);                                    \
        const __m128i s12 = ADD(x1, x2), d12 = SUB(x1, x2);                                    \
        x0 = ADD(s03, s12);                                                                    \
        x1 = ADD(ADD(d03, d03), d12);                                                          \
        x2 = SUB(s03, s12);                                                                    \
        x3 = SUB(d03, ADD(d12, d12));                                                          \
    } while (0)

#define FTX8(ADD, SUB, SRA, x) H264_FTX8(__m128i, ADD, SUB, SRA, x)

/* Any int16 residual: 32-bit lanes (the outputs reach 36 * 32768). */
static decl_h264_fdct_fn(fdct_4x4_sse2) {
    __m128i x[4];
    for (int k = 0; k < 4; k += 2)
        widen(_mm_load_si128((const __m128i *)(res + 4 * k)), &x[k], &x[k + 1]);
    tr4_d(&x[0], &x[1], &x[2], &x[3]);
    FTX4(ADD32, SUB32, x[0], x[1], x[2], x[3]); /* rows */
    tr4_d(&x[0], &x[1], &x[2], &x[3]);
    FTX4(ADD32, SUB32, x[0], x[1], x[2], x[3]); /* columns */
    for (int k = 0; k < 4; k++)
        _mm_store_si128((__m128i *)(w + 4 * k), x[k]);
}

static decl_h264_fdct_fn(fdct_8x8_sse2) {
    __m128i l[8], h[8];
    for (int k = 0; k < 8; k++)
        widen(_mm_load_si128((const __m128i *)(res + 8 * k)), &l[k], &h[k]);
    tr8_d(l, h);
    FTX8(ADD32, SUB32, SRA32, l);
    FTX8(ADD32, SUB32, SRA32, h);
    tr8_d(l, h);
    FTX8(ADD32, SUB32, SRA32, l);
    FTX8(ADD32, SUB32, SRA32, h);
    for (int k = 0; k < 8; k++) {
        _mm_store_si128((__m128i *)(w + 8 * k), l[k]);
        _mm_store_si128((__m128i *)(w + 8 * k + 4), h[k]);
    }
}

/* 8-bit samples: |residual| <= 255, so every value fits 16 bits (4x4: <= 36 * 255;
 * 8x8: <= 64 * 255) and 16-bit lanes are exact. */
static decl_h264_sub_fdct_fn(sub_fdct_4x4_sse2) {
    const __m128i z = _mm_setzero_si128();
    __m128i x[4];
    for (int k = 0; k < 4; k++)
        x[k] = _mm_sub_epi16(_mm_unpacklo_epi8(load32(src + k * src_stride), z),
                             _mm_unpacklo_epi8(load32(pred + k * pred_stride), z));
    tr4_w(&x[0], &x[1], &x[2], &x[3]);
    FTX4(ADD16, SUB16, x[0], x[1], x[2], x[3]);
    tr4_w(&x[0], &x[1], &x[2], &x[3]);
    FTX4(ADD16, SUB16, x[0], x[1], x[2], x[3]);
    for (int k = 0; k < 4; k++) {
        __m128i lo, hi;
        widen(x[k], &lo, &hi);
        _mm_store_si128((__m128i *)(w + 4 * k), lo);
    }
}

static decl_h264_sub_fdct_fn(sub_fdct_8x8_sse2) {
    const __m128i z = _mm_setzero_si128();
    __m128i x[8];
    for (int k = 0; k < 8; k++)
        x[k] = _mm_sub_epi16(
            _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(src + k * src_stride)), z),
            _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(pred + k * pred_stride)), z));
    tr8_w(x);
    FTX8(ADD16, SUB16, SRA16, x);
    tr8_w(x);
    FTX8(ADD16, SUB16, SRA16, x);
    for (int k = 0; k < 8; k++) {
        __m128i lo, hi;
        widen(x[k], &lo, &hi);
        _mm_store_si128((__m128i *)(w + 8 * k), lo);
        _mm_store_si128((__m128i *)(w + 8 * k + 4), hi);
    }
}

/* ---- quantisation ----------------------------------------------------------------------- */

/* Four levels: sign(w) * min(32767, (|w| * mf + f) >> qbits), exact with 64-bit products
 * (|w| <= 2^31, mf < 2^20: the product and f fit 52 bits). */
static inline __m128i quant4(__m128i w, __m128i mf, __m128i f64, __m128i cnt) {
    const __m128i s = _mm_srai_epi32(w, 31);
    const __m128i a = _mm_sub_epi32(_mm_xor_si128(w, s), s); /* |w|, 2^31 as unsigned */
    __m128i pe = _mm_mul_epu32(a, mf);
    __m128i po = _mm_mul_epu32(_mm_srli_epi64(a, 32), _mm_srli_epi64(mf, 32));
    pe = _mm_srl_epi64(_mm_add_epi64(pe, f64), cnt);
    po = _mm_srl_epi64(_mm_add_epi64(po, f64), cnt);
    const __m128i lomask = _mm_set_epi32(0, -1, 0, -1);
    const __m128i lo = _mm_or_si128(_mm_and_si128(pe, lomask), _mm_slli_epi64(po, 32));
    const __m128i hi = _mm_or_si128(_mm_srli_epi64(pe, 32), _mm_andnot_si128(lomask, po));
    /* saturate: any bit at or above 2^15 */
    const __m128i small =
        _mm_cmpeq_epi32(_mm_or_si128(hi, _mm_srli_epi32(lo, 15)), _mm_setzero_si128());
    const __m128i l =
        _mm_or_si128(_mm_and_si128(small, lo), _mm_andnot_si128(small, _mm_set1_epi32(32767)));
    return _mm_sub_epi32(_mm_xor_si128(l, s), s);
}

static inline int quant_n(int16_t *lev, const int32_t *w, const int32_t *mf, int qbits,
                          int32_t f, int n) {
    const __m128i f64 = _mm_set1_epi64x((long long)(uint32_t)f);
    const __m128i cnt = _mm_cvtsi32_si128(qbits);
    __m128i zeros = _mm_setzero_si128(); /* -1 per zero level, per 16-bit lane */
    for (int k = 0; k < n; k += 8) {
        const __m128i a = quant4(_mm_load_si128((const __m128i *)(w + k)),
                                 _mm_loadu_si128((const __m128i *)(mf + k)), f64, cnt);
        const __m128i b = quant4(_mm_load_si128((const __m128i *)(w + k + 4)),
                                 _mm_loadu_si128((const __m128i *)(mf + k + 4)), f64, cnt);
        const __m128i v = _mm_packs_epi32(a, b);
        _mm_store_si128((__m128i *)(lev + k), v);
        zeros = _mm_sub_epi16(zeros, _mm_cmpeq_epi16(v, _mm_setzero_si128()));
    }
    /* zeros: 16-bit counts (<= 8 each); sum them */
    const __m128i s = _mm_madd_epi16(zeros, _mm_set1_epi16(1));
    const __m128i t = _mm_add_epi32(s, _mm_srli_si128(s, 8));
    return n - _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_srli_si128(t, 4)));
}

static decl_h264_quant_fn(quant_4x4_sse2) {
    return quant_n(lev, w, mf, qbits, f, 16);
}
static decl_h264_quant_fn(quant_8x8_sse2) {
    return quant_n(lev, w, mf, qbits, f, 64);
}

/* ---- zero tests ----------------------------------------------------------------------------
 */

static decl_h264_nnz_fn(nnz_4x4_sse2) {
    const uint8_t *p = (const uint8_t *)c;
    const __m128i a = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)p),
                                         _mm_loadl_epi64((const __m128i *)(p + stride)));
    const __m128i b = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(p + 2 * stride)),
                                         _mm_loadl_epi64((const __m128i *)(p + 3 * stride)));
    const __m128i z = _mm_setzero_si128();
    return 16 - count_ff(_mm_packs_epi16(_mm_cmpeq_epi16(a, z), _mm_cmpeq_epi16(b, z)));
}

static decl_h264_nnz_fn(nnz_8x8_sse2) {
    const uint8_t *p = (const uint8_t *)c;
    const __m128i z = _mm_setzero_si128();
    __m128i acc = z; /* per byte: minus the number of zero levels */
    for (int k = 0; k < 8; k += 2) {
        const __m128i a = _mm_loadu_si128((const __m128i *)(p + k * stride));
        const __m128i b = _mm_loadu_si128((const __m128i *)(p + (k + 1) * stride));
        acc = _mm_add_epi8(acc, _mm_packs_epi16(_mm_cmpeq_epi16(a, z), _mm_cmpeq_epi16(b, z)));
    }
    const __m128i s = _mm_sad_epu8(_mm_sub_epi8(z, acc), z);
    return 64 - (_mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_srli_si128(s, 8)));
}

void vidk_h264_dsp_init_sse2(VidkH264DSP *dsp) {
    /* dequant: the C loops, vectorised by the compiler, are as fast as SSE2 here. */
    dsp->idct[0] = idct_4x4_sse2;
    dsp->idct[1] = idct_8x8_sse2;
    dsp->idct_add[0] = idct_add_4x4_sse2;
    dsp->idct_add[1] = idct_add_8x8_sse2;
    dsp->idct_add16[0] = idct_add16_4x4_sse2;
    dsp->idct_add16[1] = idct_add16_8x8_sse2;
    dsp->dequant_idct_add[0] = dequant_idct_add_4x4_sse2;
    dsp->dequant_idct_add[1] = dequant_idct_add_8x8_sse2;
    dsp->fdct[0] = fdct_4x4_sse2;
    dsp->fdct[1] = fdct_8x8_sse2;
    dsp->sub_fdct[0] = sub_fdct_4x4_sse2;
    dsp->sub_fdct[1] = sub_fdct_8x8_sse2;
    dsp->quant[0] = quant_4x4_sse2;
    dsp->quant[1] = quant_8x8_sse2;
    dsp->nnz[0] = nnz_4x4_sse2;
    dsp->nnz[1] = nnz_8x8_sse2;
}
