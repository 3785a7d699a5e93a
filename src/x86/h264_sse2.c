/* H.264 transforms, SSE2.
 *
 * Inverse transforms: the spec's arithmetic is 32-bit (wrapping, see src/h264.h). The
 * fast path runs in 16-bit lanes when a per-block test proves that the result equals the
 * 32-bit one, else a 32-bit-lane path runs; both equal the C reference bit for bit.
 * The tests and their bounds are derived in src/x86/h264_tx8.h: first max |d| <= 2672
 * (4x4) / 601 (8x8), one compare per lane; when that fails (large DC at high qP), the sum
 * of |d| <= 32735 (4x4) / 14500 (8x8), computed on the 16-bit saturated values with
 * saturating adds, so values that do not fit 16 bits always fail both tests. */
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

/* ---- small helpers ---------------------------------------------------------------- */

static inline __m128i load32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtsi32_si128(v);
}

/* Number of 0xff bytes of m (each byte 0 or 0xff): no POPCNT needed. */
static inline int count_ff(__m128i m) {
    const __m128i s = _mm_sad_epu8(_mm_and_si128(m, _mm_set1_epi8(1)), _mm_setzero_si128());
    return _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_srli_si128(s, 8));
}

#define ADD16 _mm_add_epi16
#define SUB16 _mm_sub_epi16
#define SRA16 _mm_srai_epi16
#define ADD32 _mm_add_epi32
#define SUB32 _mm_sub_epi32
#define SRA32 _mm_srai_epi32

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

#define tr8_w h264_tr8_w
#define tr4_d h264_tr4_d
#define widen h264_widen

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

#define dq8       h264_dq8
#define dq_params h264_dq_params

/* ---- 4x4 inverse ------------------------------------------------------------------------ */

/* Residual out in 32 bits: the 32-bit lanes are as fast as packing, testing and
 * widening back. */
static decl_h264_idct_fn(idct_4x4_sse2) {
    __m128i x[4];
    for (int k = 0; k < 4; k++)
        x[k] = _mm_load_si128((const __m128i *)(d + 4 * k));
    h264_itx4_d(x);
    for (int k = 0; k < 4; k++)
        _mm_store_si128((__m128i *)(r + 4 * k), x[k]);
}

static decl_h264_idct_add_fn(idct_add_4x4_sse2) {
    __m128i dd[4];
    for (int k = 0; k < 4; k++)
        dd[k] = _mm_load_si128((const __m128i *)(d + 4 * k));
    h264_itx4_add_d(dst, stride, dd);
}

static decl_h264_dequant_idct_add_fn(dequant_idct_add_4x4_sse2) {
    __m128i rnd, sr, sl, dd[4];
    dq_params(qp, 4, &rnd, &sr, &sl);
    dq8(_mm_load_si128((const __m128i *)c), _mm_loadu_si128((const __m128i *)ls), rnd, sr, sl,
        &dd[0], &dd[1]);
    dq8(_mm_load_si128((const __m128i *)(c + 8)), _mm_loadu_si128((const __m128i *)(ls + 8)),
        rnd, sr, sl, &dd[2], &dd[3]);
    const __m128i sel = _mm_cvtsi32_si128(dc ? -1 : 0);
    dd[0] = _mm_or_si128(_mm_andnot_si128(sel, dd[0]),
                         _mm_and_si128(sel, _mm_cvtsi32_si128(dc ? *dc : 0)));
    h264_itx4_add_d(dst, stride, dd);
}

/* int16 input (x264's interface): the rows load as they are. The max test covers the
 * common blocks; the others take the out-of-line path. */
H264_DEF_IDCT_ADD16_4X4(idct_add16_4x4_sse2)

/* ---- 8x8 inverse ------------------------------------------------------------------------ */

/* The 32-bit path on row i = (l[i], h[i]): rounded residual rows, saturated to int16, in
 * w[]. */
static inline void itx8_d(__m128i *l, __m128i *h, __m128i *w) {
    tr8_d(l, h);
    ITX8(ADD32, SUB32, SRA32, l);
    ITX8(ADD32, SUB32, SRA32, h);
    tr8_d(l, h);
    ITX8(ADD32, SUB32, SRA32, l);
    ITX8(ADD32, SUB32, SRA32, h);
    const __m128i r = _mm_set1_epi32(32);
    for (int k = 0; k < 8; k++)
        w[k] = _mm_packs_epi32(_mm_srai_epi32(_mm_add_epi32(l[k], r), 6),
                               _mm_srai_epi32(_mm_add_epi32(h[k], r), 6));
}

/* The blocks of int32 rows (l[i], h[i]) that failed the max test on their saturated
 * 16-bit rows w[]: the sum test, else 32 bits. */
static NOINLINE void itx8_add_big(uint8_t *dst, ptrdiff_t stride, __m128i *l, __m128i *h,
                                  __m128i *w) {
    if (h264_sum8_ok(w))
        h264_itx8_w(w);
    else
        itx8_d(l, h, w);
    h264_add8(dst, stride, w);
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
    for (int k = 0; k < 8; k++)
        w[k] = _mm_packs_epi32(_mm_load_si128((const __m128i *)(d + 8 * k)),
                               _mm_load_si128((const __m128i *)(d + 8 * k + 4)));
    if (h264_max8_ok(w)) {
        h264_itx8_w(w);
        h264_add8(dst, stride, w);
        return;
    }
    for (int k = 0; k < 8; k++) { /* reloaded: nothing stays live across the test */
        l[k] = _mm_load_si128((const __m128i *)(d + 8 * k));
        h[k] = _mm_load_si128((const __m128i *)(d + 8 * k + 4));
    }
    itx8_add_big(dst, stride, l, h, w);
}

static NOINLINE void idct_add16_8x8_big(uint8_t *dst, ptrdiff_t stride, const int16_t *d) {
    __m128i w[8];
    for (int k = 0; k < 8; k++)
        w[k] = _mm_loadu_si128((const __m128i *)(d + 8 * k));
    if (h264_sum8_ok(w)) {
        h264_itx8_w(w);
    } else {
        __m128i l[8], h[8];
        for (int k = 0; k < 8; k++)
            widen(w[k], &l[k], &h[k]);
        itx8_d(l, h, w);
    }
    h264_add8(dst, stride, w);
}

static decl_h264_idct_add16_fn(idct_add16_8x8_sse2) {
    __m128i w[8];
    for (int k = 0; k < 8; k++)
        w[k] = _mm_loadu_si128((const __m128i *)(d + 8 * k));
    if (!h264_max8_ok(w)) {
        idct_add16_8x8_big(dst, stride, d);
        return;
    }
    h264_itx8_w(w);
    h264_add8(dst, stride, w);
}

/* Dequantised rows of 8.5.13.1, element 0 replaced by *dc when dc is not NULL. */
static inline void dq8x8(__m128i *l, __m128i *h, const int16_t *c, const int16_t *ls, int qp,
                         const int32_t *dc) {
    __m128i rnd, sr, sl;
    dq_params(qp, 6, &rnd, &sr, &sl);
    for (int k = 0; k < 8; k++)
        dq8(_mm_load_si128((const __m128i *)(c + 8 * k)),
            _mm_loadu_si128((const __m128i *)(ls + 8 * k)), rnd, sr, sl, &l[k], &h[k]);
    /* Branch-free DC replacement: a conditional store keeps l[] in memory. */
    const __m128i sel = _mm_cvtsi32_si128(dc ? -1 : 0);
    l[0] = _mm_or_si128(_mm_andnot_si128(sel, l[0]),
                        _mm_and_si128(sel, _mm_cvtsi32_si128(dc ? *dc : 0)));
}

static NOINLINE void dequant_idct_add_8x8_big(uint8_t *dst, ptrdiff_t stride, const int16_t *c,
                                              const int16_t *ls, int qp, const int32_t *dc,
                                              __m128i *w) {
    __m128i l[8], h[8];
    dq8x8(l, h, c, ls, qp, dc);
    itx8_add_big(dst, stride, l, h, w);
}

static decl_h264_dequant_idct_add_fn(dequant_idct_add_8x8_sse2) {
    __m128i l[8], h[8], w[8];
    dq8x8(l, h, c, ls, qp, dc);
    for (int k = 0; k < 8; k++)
        w[k] = _mm_packs_epi32(l[k], h[k]);
    if (h264_max8_ok(w)) {
        h264_itx8_w(w);
        h264_add8(dst, stride, w);
        return;
    }
    /* recomputed: nothing stays live across the test */
    dequant_idct_add_8x8_big(dst, stride, c, ls, qp, dc, w);
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
