/* H.264 transforms, AVX-512 (F, BW, VL, DQ): a whole 4x4 block of 32-bit values in one
 * register for the quantiser (64-bit-exact products, unsigned 64-bit minimum) and the
 * dequantiser; the inverse 4x4 with pixel add (int32, int16 and dequantising inputs) on
 * the 16-bit path of src/x86/h264_tx8.h with AVX-512 per-lane shifts and mask compares. */
#include <immintrin.h>

#include "internal.h"
#include "x86/h264_tx8.h"

/* 16 levels: sign(w) * min(32767, (|w| * mf + f) >> qbits). */
static inline __m512i quant16(__m512i w, __m512i mf, __m512i f64, __m128i cnt) {
    const __mmask16 neg = _mm512_cmplt_epi32_mask(w, _mm512_setzero_si512());
    const __m512i a = _mm512_abs_epi32(w); /* INT32_MIN -> 2^31 as unsigned */
    __m512i pe = _mm512_mul_epu32(a, mf);
    __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(mf, 32));
    const __m512i lim = _mm512_set1_epi64(32767);
    pe = _mm512_min_epu64(_mm512_srl_epi64(_mm512_add_epi64(pe, f64), cnt), lim);
    po = _mm512_min_epu64(_mm512_srl_epi64(_mm512_add_epi64(po, f64), cnt), lim);
    const __m512i l = _mm512_or_si512(pe, _mm512_slli_epi64(po, 32));
    return _mm512_mask_sub_epi32(l, neg, _mm512_setzero_si512(), l);
}

static inline int quant_n(int16_t *lev, const int32_t *w, const int32_t *mf, int qbits,
                          int32_t f, int n) {
    const __m512i f64 = _mm512_set1_epi64((long long)(uint32_t)f);
    const __m128i cnt = _mm_cvtsi32_si128(qbits);
    int nz = 0;
    for (int k = 0; k < n; k += 16) {
        const __m512i v =
            quant16(_mm512_loadu_si512(w + k), _mm512_loadu_si512(mf + k), f64, cnt);
        _mm256_storeu_si256((__m256i *)(lev + k), _mm512_cvtepi32_epi16(v));
        nz += _mm_popcnt_u32(_mm512_test_epi32_mask(v, v));
    }
    return nz;
}

static decl_h264_quant_fn(quant_4x4_avx512) {
    return quant_n(lev, w, mf, qbits, f, 16);
}
static decl_h264_quant_fn(quant_8x8_avx512) {
    return quant_n(lev, w, mf, qbits, f, 64);
}

/* 8.5.12.1 / 8.5.13.1 on 16 values: ((c * ls + rnd) >> sr) << sl, one shift being 0. */
static inline void dequant_n(int32_t *d, const int16_t *c, const int16_t *ls, int qp, int base,
                             int n) {
    const int per = qp / 6, left = per >= base;
    const __m512i rnd = _mm512_set1_epi32(left ? 0 : 1 << (base - 1 - per));
    const __m128i sr = _mm_cvtsi32_si128(left ? 0 : base - per);
    const __m128i sl = _mm_cvtsi32_si128(left ? per - base : 0);
    for (int k = 0; k < n; k += 16) {
        const __m512i cc = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(c + k)));
        const __m512i ll = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(ls + k)));
        const __m512i p = _mm512_madd_epi16(cc, ll); /* c * ls, exact */
        _mm512_storeu_si512(
            d + k, _mm512_sll_epi32(_mm512_sra_epi32(_mm512_add_epi32(p, rnd), sr), sl));
    }
}

static decl_h264_dequant_fn(dequant_4x4_avx512) {
    dequant_n(d, c, ls, qp, 4, 16);
}
static decl_h264_dequant_fn(dequant_8x8_avx512) {
    dequant_n(d, c, ls, qp, 6, 64);
}

/* Inverse 4x4 with pixel add, int16 input: the 16-bit path of src/x86/h264_tx8.h with
 * the AVX-512 forms of its two costly steps (per-lane shift counts instead of shift +
 * blend in each pass, an unsigned mask compare for the max test). */
H264_DEF_IDCT_ADD16_4X4(idct_add16_4x4_avx512)

static decl_h264_idct_add_fn(idct_add_4x4_avx512) {
    __m128i dd[4];
    for (int k = 0; k < 4; k++)
        dd[k] = _mm_load_si128((const __m128i *)(d + 4 * k));
    h264_itx4_add_d(dst, stride, dd);
}

/* The SSE2 dequantisation (VEX), then the AVX-512 16-bit path; a whole-block 512-bit
 * dequantisation with one saturating pack measured slower. */
static decl_h264_dequant_idct_add_fn(dequant_idct_add_4x4_avx512) {
    __m128i rnd, sr, sl, dd[4];
    h264_dq_params(qp, 4, &rnd, &sr, &sl);
    h264_dq8(_mm_load_si128((const __m128i *)c), _mm_loadu_si128((const __m128i *)ls), rnd, sr,
             sl, &dd[0], &dd[1]);
    h264_dq8(_mm_load_si128((const __m128i *)(c + 8)),
             _mm_loadu_si128((const __m128i *)(ls + 8)), rnd, sr, sl, &dd[2], &dd[3]);
    dd[0] = _mm_mask_set1_epi32(dd[0], dc ? 1 : 0, dc ? *dc : 0);
    h264_itx4_add_d(dst, stride, dd);
}

void vidk_h264_dsp_init_avx512(VidkH264DSP *dsp) {
    dsp->idct_add[0] = idct_add_4x4_avx512;
    dsp->idct_add16[0] = idct_add16_4x4_avx512;
    dsp->dequant_idct_add[0] = dequant_idct_add_4x4_avx512;
    dsp->quant[0] = quant_4x4_avx512;
    dsp->quant[1] = quant_8x8_avx512;
    dsp->dequant[0] = dequant_4x4_avx512;
    dsp->dequant[1] = dequant_8x8_avx512;
}
