/* SAD family, AVX-512BW (vpsadbw zmm): the 32- and 64-wide blocks, sad and sad_x4.
 *
 * 64-wide: one zmm load per block row halves the loads of AVX2 (SAD is load bound).
 * 32-wide: two rows per zmm for sad; sad_x4 broadcasts the source row to both halves
 * (vbroadcasti64x4 is a pure load) and pairs candidates 0|1 and 2|3, halving psadbw.
 * Narrower blocks keep the AVX2/SSE2 versions: packing four 16-byte rows into a zmm
 * costs three port-5 inserts, more than the psadbw it saves. */
#include <immintrin.h>

#include "internal.h"

void vidk_sad_dsp_init_avx512(VidkSadDSP *dsp);

static inline __m256i load32(const uint8_t *p) {
    return _mm256_loadu_si256((const __m256i *)p);
}

static inline __m512i load64(const uint8_t *p) {
    return _mm512_loadu_si512((const void *)p);
}

/* 32 samples at p0 in the low half, 32 at p1 in the high half. */
static inline __m512i load_32x2(const uint8_t *p0, const uint8_t *p1) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(p0)), load32(p1), 1);
}

/* vpsadbw leaves eight partial sums, in the even 32-bit elements. */
static inline unsigned hsum512(__m512i v) {
    const __m256i y =
        _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    x = _mm_add_epi32(x, _mm_unpackhi_epi64(x, x));
    return (unsigned)_mm_cvtsi128_si32(x);
}

/* Partial sums of candidates 0..3 (even 32-bit elements of each 128-bit lane of a0..a3)
 * -> scores[0..3]. */
static inline void store4_512(unsigned scores[4], __m512i a0, __m512i a1, __m512i a2,
                              __m512i a3) {
    /* the odd elements are zero: a0 | a1 << 32 interleaves two candidates */
    const __m512i a01 = _mm512_or_si512(a0, _mm512_slli_epi64(a1, 32));
    const __m512i a23 = _mm512_or_si512(a2, _mm512_slli_epi64(a3, 32));
    const __m512i t =
        _mm512_add_epi32(_mm512_unpacklo_epi64(a01, a23), _mm512_unpackhi_epi64(a01, a23));
    /* every 128-bit lane of t holds partial [s0 s1 s2 s3]: fold the four lanes */
    const __m256i y =
        _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
    const __m128i x = _mm_add_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    _mm_storeu_si128((__m128i *)scores, x);
}

/* ---- single SAD ---- */

static inline unsigned sad_32xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r, ptrdiff_t rs,
                                int h) {
    __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0;
    for (int y = 0; y < h; y += 4, s += 4 * ss, r += 4 * rs) {
        acc0 =
            _mm512_add_epi64(acc0, _mm512_sad_epu8(load_32x2(s, s + ss), load_32x2(r, r + rs)));
        acc1 = _mm512_add_epi64(acc1, _mm512_sad_epu8(load_32x2(s + 2 * ss, s + 3 * ss),
                                                      load_32x2(r + 2 * rs, r + 3 * rs)));
    }
    return hsum512(_mm512_add_epi32(acc0, acc1));
}

static inline unsigned sad_64xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r, ptrdiff_t rs,
                                int h) {
    __m512i acc0 = _mm512_setzero_si512(), acc1 = acc0;
    for (int y = 0; y < h; y += 2, s += 2 * ss, r += 2 * rs) {
        acc0 = _mm512_add_epi64(acc0, _mm512_sad_epu8(load64(s), load64(r)));
        acc1 = _mm512_add_epi64(acc1, _mm512_sad_epu8(load64(s + ss), load64(r + rs)));
    }
    return hsum512(_mm512_add_epi32(acc0, acc1));
}

/* ---- x4 ---- */

static inline void sad_x4_32xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r0,
                               const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                               ptrdiff_t rs, unsigned scores[4], int h) {
    /* a01: candidate 0 in the low half, 1 in the high half; a23 likewise */
    __m512i a01 = _mm512_setzero_si512(), a23 = a01;
    for (int y = 0; y < h; y++, s += ss) {
        const ptrdiff_t o = y * rs;
        const __m512i v = _mm512_broadcast_i64x4(load32(s));
        a01 = _mm512_add_epi64(a01, _mm512_sad_epu8(v, load_32x2(r0 + o, r1 + o)));
        a23 = _mm512_add_epi64(a23, _mm512_sad_epu8(v, load_32x2(r2 + o, r3 + o)));
    }
    /* t = [0 2 0 2 ... | 1 3 1 3 ...] (32-bit elements: partial sums, candidate number) */
    const __m512i t = _mm512_or_si512(a01, _mm512_slli_epi64(a23, 32));
    const __m256i lo = _mm512_castsi512_si256(t), hi = _mm512_extracti64x4_epi64(t, 1);
    /* per lane: [0 1 0 1] + [2 3 2 3] interleaved -> [0 1 2 3] partials */
    const __m256i u =
        _mm256_add_epi32(_mm256_unpacklo_epi32(lo, hi), _mm256_unpackhi_epi32(lo, hi));
    _mm_storeu_si128((__m128i *)scores,
                     _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1)));
}

static inline void sad_x4_64xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r0,
                               const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                               ptrdiff_t rs, unsigned scores[4], int h) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (int y = 0; y < h; y++, s += ss) {
        const ptrdiff_t o = y * rs;
        const __m512i v = load64(s);
        a0 = _mm512_add_epi64(a0, _mm512_sad_epu8(v, load64(r0 + o)));
        a1 = _mm512_add_epi64(a1, _mm512_sad_epu8(v, load64(r1 + o)));
        a2 = _mm512_add_epi64(a2, _mm512_sad_epu8(v, load64(r2 + o)));
        a3 = _mm512_add_epi64(a3, _mm512_sad_epu8(v, load64(r3 + o)));
    }
    store4_512(scores, a0, a1, a2, a3);
}

#define ARGS    src, src_stride, ref, ref_stride
#define ARGS_X4 src, src_stride, ref0, ref1, ref2, ref3, ref_stride, scores

#define SAD_FNS(W, H, body, body_x4)                                                           \
    static decl_sad_fn(sad_##W##x##H##_avx512) {                                               \
        return body;                                                                           \
    }                                                                                          \
    static decl_sad_x4_fn(sad_x4_##W##x##H##_avx512) {                                         \
        body_x4;                                                                               \
    }

SAD_FNS(32, 32, sad_32xh(ARGS, 32), sad_x4_32xh(ARGS_X4, 32))
SAD_FNS(64, 64, sad_64xh(ARGS, 64), sad_x4_64xh(ARGS_X4, 64))

void vidk_sad_dsp_init_avx512(VidkSadDSP *dsp) {
#define ASSIGN(W, H)                                                                           \
    dsp->sad[VIDK_BLOCK_##W##x##H] = sad_##W##x##H##_avx512;                                   \
    dsp->sad_x4[VIDK_BLOCK_##W##x##H] = sad_x4_##W##x##H##_avx512;
    ASSIGN(32, 32)
    ASSIGN(64, 64)
#undef ASSIGN
}
