/* SAD family, AVX2: 16-, 32- and 64-wide blocks, sad and sad_x4.
 *
 * sad_x4 16-wide broadcasts the source row to both lanes (vbroadcasti128 is a pure
 * load) and pairs candidates 0|1 and 2|3 in one ymm each (load + vinserti128 from
 * memory), which halves the psadbw count (a port-5 bottleneck on many Intel cores).
 * 32/64-wide: one or two full-row loads per block and row. The 16-wide single SAD is the
 * SSE2 loop in VEX form; the 4- and 8-wide sizes keep the SSE2 versions (a row is already
 * one load; wider registers only add shuffles). 64-bit accumulation: see sad_sse2.c. */
#include <immintrin.h>

#include "internal.h"

void vidk_sad_dsp_init_avx2(VidkSadDSP *dsp);

static inline __m128i load16(const uint8_t *p) {
    return _mm_loadu_si128((const __m128i *)p);
}

static inline __m256i load32(const uint8_t *p) {
    return _mm256_loadu_si256((const __m256i *)p);
}

/* 16 samples at p0 in the low lane, 16 at p1 in the high lane. */
static inline __m256i load_16x2(const uint8_t *p0, const uint8_t *p1) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(load16(p0)), load16(p1), 1);
}

/* vpsadbw leaves four partial sums, in 32-bit elements 0, 2, 4, 6. */
static inline unsigned hsum256(__m256i v) {
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_unpackhi_epi64(x, x));
    return (unsigned)_mm_cvtsi128_si32(x);
}

/* Accumulators a0..a3 (candidate i; partial sums in the even 32-bit elements of each
 * lane) -> scores[0..3]. */
static inline void store4_256(unsigned scores[4], __m256i a0, __m256i a1, __m256i a2,
                              __m256i a3) {
    /* the odd elements are zero: a0 | a1 << 32 interleaves two candidates */
    const __m256i a01 = _mm256_or_si256(a0, _mm256_slli_epi64(a1, 32));
    const __m256i a23 = _mm256_or_si256(a2, _mm256_slli_epi64(a3, 32));
    const __m256i t =
        _mm256_add_epi32(_mm256_unpacklo_epi64(a01, a23), _mm256_unpackhi_epi64(a01, a23));
    const __m128i r = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    _mm_storeu_si128((__m128i *)scores, r);
}

/* ---- single SAD ---- */

/* 16-wide: the SSE2 loop in VEX encoding (unaligned loads fold into vpsadbw). Packing
 * two rows per ymm measured slower: the bound is the two loads per row, and the
 * vinserti128 only adds uops. */
static inline unsigned sad_16xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r, ptrdiff_t rs,
                                int h) {
    __m128i acc0 = _mm_setzero_si128(), acc1 = acc0;
    for (int y = 0; y < h; y += 2, s += 2 * ss, r += 2 * rs) {
        acc0 = _mm_add_epi64(acc0, _mm_sad_epu8(load16(s), load16(r)));
        acc1 = _mm_add_epi64(acc1, _mm_sad_epu8(load16(s + ss), load16(r + rs)));
    }
    acc0 = _mm_add_epi32(acc0, acc1);
    return (unsigned)_mm_cvtsi128_si32(_mm_add_epi32(acc0, _mm_unpackhi_epi64(acc0, acc0)));
}

/* W = 32 * n. */
static inline unsigned sad_32nxh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r, ptrdiff_t rs,
                                 int n, int h) {
    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0;
    for (int y = 0; y < h; y += 2, s += 2 * ss, r += 2 * rs) {
        for (int i = 0; i < n; i++) {
            acc0 =
                _mm256_add_epi64(acc0, _mm256_sad_epu8(load32(s + 32 * i), load32(r + 32 * i)));
            acc1 = _mm256_add_epi64(
                acc1, _mm256_sad_epu8(load32(s + ss + 32 * i), load32(r + rs + 32 * i)));
        }
    }
    return hsum256(_mm256_add_epi32(acc0, acc1));
}

/* ---- x4 ---- */

static inline void sad_x4_16xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r0,
                               const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                               ptrdiff_t rs, unsigned scores[4], int h) {
    /* a01: candidate 0 in the low lane, 1 in the high lane; a23 likewise */
    __m256i a01 = _mm256_setzero_si256(), a23 = a01;
    for (int y = 0; y < h; y++, s += ss) {
        const ptrdiff_t o = y * rs;
        const __m256i v = _mm256_broadcastsi128_si256(load16(s));
        a01 = _mm256_add_epi64(a01, _mm256_sad_epu8(v, load_16x2(r0 + o, r1 + o)));
        a23 = _mm256_add_epi64(a23, _mm256_sad_epu8(v, load_16x2(r2 + o, r3 + o)));
    }
    /* [0.l 0.h | 1.l 1.h] and [2.l 2.h | 3.l 3.h] (64-bit) -> one xmm per candidate pair */
    const __m256i t = _mm256_or_si256(a01, _mm256_slli_epi64(a23, 32));
    /* t = [0.l 2.l 0.h 2.h | 1.l 3.l 1.h 3.h] (32-bit) */
    const __m128i lo = _mm256_castsi256_si128(t), hi = _mm256_extracti128_si256(t, 1);
    const __m128i x = _mm_add_epi32(_mm_unpacklo_epi32(lo, hi), _mm_unpackhi_epi32(lo, hi));
    /* x = [0.l+0.h, 1.l+1.h, 2.l+2.h, 3.l+3.h] */
    _mm_storeu_si128((__m128i *)scores, x);
}

static inline void sad_x4_32nxh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r0,
                                const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                                ptrdiff_t rs, unsigned scores[4], int n, int h) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (int y = 0; y < h; y++, s += ss) {
        const ptrdiff_t o = y * rs;
        for (int i = 0; i < n; i++) {
            const __m256i v = load32(s + 32 * i);
            a0 = _mm256_add_epi64(a0, _mm256_sad_epu8(v, load32(r0 + o + 32 * i)));
            a1 = _mm256_add_epi64(a1, _mm256_sad_epu8(v, load32(r1 + o + 32 * i)));
            a2 = _mm256_add_epi64(a2, _mm256_sad_epu8(v, load32(r2 + o + 32 * i)));
            a3 = _mm256_add_epi64(a3, _mm256_sad_epu8(v, load32(r3 + o + 32 * i)));
        }
    }
    store4_256(scores, a0, a1, a2, a3);
}

#define ARGS    src, src_stride, ref, ref_stride
#define ARGS_X4 src, src_stride, ref0, ref1, ref2, ref3, ref_stride, scores

#define SAD_FNS(W, H, body, body_x4)                                                           \
    static decl_sad_fn(sad_##W##x##H##_avx2) {                                                 \
        return body;                                                                           \
    }                                                                                          \
    static decl_sad_x4_fn(sad_x4_##W##x##H##_avx2) {                                           \
        body_x4;                                                                               \
    }

SAD_FNS(16, 8, sad_16xh(ARGS, 8), sad_x4_16xh(ARGS_X4, 8))
SAD_FNS(16, 16, sad_16xh(ARGS, 16), sad_x4_16xh(ARGS_X4, 16))
SAD_FNS(32, 32, sad_32nxh(ARGS, 1, 32), sad_x4_32nxh(ARGS_X4, 1, 32))
SAD_FNS(64, 64, sad_32nxh(ARGS, 2, 64), sad_x4_32nxh(ARGS_X4, 2, 64))

void vidk_sad_dsp_init_avx2(VidkSadDSP *dsp) {
#define ASSIGN(W, H)                                                                           \
    dsp->sad[VIDK_BLOCK_##W##x##H] = sad_##W##x##H##_avx2;                                     \
    dsp->sad_x4[VIDK_BLOCK_##W##x##H] = sad_x4_##W##x##H##_avx2;
    ASSIGN(16, 8)
    ASSIGN(16, 16)
    ASSIGN(32, 32)
    ASSIGN(64, 64)
#undef ASSIGN
}
