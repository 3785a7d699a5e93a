/* SAD family, AVX2: 16-, 32- and 64-wide blocks, sad and sad_x4.
 *
 * sad_x4 16-wide broadcasts the source row to both lanes (vbroadcasti128 is a pure
 * load) and pairs candidates 0|1 and 2|3 in one ymm each (load + vinserti128 from
 * memory), which halves the psadbw count (a port-5 bottleneck on many Intel cores).
 * 32/64-wide: one or two full-row loads per block and row. The 16-wide single SAD is the
 * SSE2 loop in VEX form; the 4- and 8-wide sizes keep the SSE2 versions (a row is already
 * one load; wider registers only add shuffles). 64-bit accumulation: see sad_sse2.c. */
#include <immintrin.h>
#include <string.h>

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

/* satd_avg (sad.h): per strip of four rows, the differences src - avg(a, b) as 16-bit lanes
 * (a row's 4x4 blocks side by side, four lanes each), the Hadamard transform down the four
 * rows lane by lane, then across each block's four lanes (two butterfly stages of swaps and
 * sign flips within 64-bit groups), the absolute values summed per block, each block's
 * (sum + 1) >> 1 (vidk_satd4's rounding) added up. The coefficients are those of
 * vidk_satd4 in another order (the 2-D transform does not depend on the order of its
 * passes); |coefficient| <= 16 x 255 and four rows' sum <= 16320 fit 16 bits. */
static inline __m256i hx4_256(__m256i x) {
    const __m256i s1 =
        _mm256_setr_epi16(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1);
    const __m256i s2 =
        _mm256_setr_epi16(1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1);
    __m256i w = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(x, 0xb1), 0xb1); /* 1 0 3 2 */
    const __m256i y = _mm256_add_epi16(_mm256_sign_epi16(x, s1), w);
    w = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(y, 0x4e), 0x4e); /* 2 3 0 1 */
    return _mm256_abs_epi16(_mm256_add_epi16(_mm256_sign_epi16(y, s2), w));
}

static inline __m128i hx4_128(__m128i x) {
    const __m128i s1 = _mm_setr_epi16(1, -1, 1, -1, 1, -1, 1, -1);
    const __m128i s2 = _mm_setr_epi16(1, 1, -1, -1, 1, 1, -1, -1);
    __m128i w = _mm_shufflehi_epi16(_mm_shufflelo_epi16(x, 0xb1), 0xb1);
    const __m128i y = _mm_add_epi16(_mm_sign_epi16(x, s1), w);
    w = _mm_shufflehi_epi16(_mm_shufflelo_epi16(y, 0x4e), 0x4e);
    return _mm_abs_epi16(_mm_add_epi16(_mm_sign_epi16(y, s2), w));
}

/* Row j of a strip as 16-bit differences: w = 4 (lanes 4..7 zero: an empty block adds
 * (0 + 1) >> 1 = 0), 8 or 16 samples. */
static inline __m128i diff_row_128(const uint8_t *s, const uint8_t *a, const uint8_t *b,
                                   int w) {
    __m128i vs, va, vb;
    if (w == 4) {
        uint32_t x, y, z;
        memcpy(&x, s, 4), memcpy(&y, a, 4), memcpy(&z, b, 4);
        vs = _mm_cvtsi32_si128((int)x), va = _mm_cvtsi32_si128((int)y);
        vb = _mm_cvtsi32_si128((int)z);
    } else {
        vs = _mm_loadl_epi64((const __m128i *)s), va = _mm_loadl_epi64((const __m128i *)a);
        vb = _mm_loadl_epi64((const __m128i *)b);
    }
    return _mm_sub_epi16(_mm_cvtepu8_epi16(vs), _mm_cvtepu8_epi16(_mm_avg_epu8(va, vb)));
}

static decl_satd_avg_fn(satd_avg_avx2) {
    const __m256i one16 = _mm256_set1_epi16(1), one32 = _mm256_set1_epi32(1);
    __m256i acc = _mm256_setzero_si256();
    for (int by = 0; by < h; by += 4) {
        const uint8_t *s = src + by * ss, *pa = a + by * rs, *pb = b + by * rs;
        __m256i d[4];
        if (w == 16) {
            for (int j = 0; j < 4; j++) {
                const __m128i av = _mm_avg_epu8(load16(pa + j * rs), load16(pb + j * rs));
                d[j] = _mm256_sub_epi16(_mm256_cvtepu8_epi16(load16(s + j * ss)),
                                        _mm256_cvtepu8_epi16(av));
            }
        } else {
            for (int j = 0; j < 4; j++)
                d[j] = _mm256_castsi128_si256(
                    diff_row_128(s + j * ss, pa + j * rs, pb + j * rs, w));
        }
        const __m256i a0 = _mm256_add_epi16(d[0], d[3]), a3 = _mm256_sub_epi16(d[0], d[3]);
        const __m256i a1 = _mm256_add_epi16(d[1], d[2]), a2 = _mm256_sub_epi16(d[1], d[2]);
        __m256i t;
        if (w == 16) {
            t = _mm256_add_epi16(_mm256_add_epi16(hx4_256(_mm256_add_epi16(a0, a1)),
                                                  hx4_256(_mm256_sub_epi16(a0, a1))),
                                 _mm256_add_epi16(hx4_256(_mm256_add_epi16(a3, a2)),
                                                  hx4_256(_mm256_sub_epi16(a3, a2))));
        } else {
            const __m128i b0 = _mm256_castsi256_si128(a0), b1 = _mm256_castsi256_si128(a1);
            const __m128i b2 = _mm256_castsi256_si128(a2), b3 = _mm256_castsi256_si128(a3);
            t = _mm256_castsi128_si256(_mm_add_epi16(
                _mm_add_epi16(hx4_128(_mm_add_epi16(b0, b1)), hx4_128(_mm_sub_epi16(b0, b1))),
                _mm_add_epi16(hx4_128(_mm_add_epi16(b3, b2)), hx4_128(_mm_sub_epi16(b3, b2)))));
            /* the upper half of a cast is undefined: clear it */
            t = _mm256_inserti128_si256(t, _mm_setzero_si128(), 1);
        }
        /* per block: pairs, then the pair of pairs (each block's sum twice) */
        const __m256i m = _mm256_madd_epi16(t, one16);
        const __m256i m2 = _mm256_add_epi32(m, _mm256_shuffle_epi32(m, 0xb1));
        acc = _mm256_add_epi32(acc, _mm256_srli_epi32(_mm256_add_epi32(m2, one32), 1));
    }
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return (unsigned)_mm_cvtsi128_si32(x) >> 1; /* every block counted twice */
}

void vidk_sad_dsp_init_avx2(VidkSadDSP *dsp) {
    dsp->satd_avg = satd_avg_avx2;
#define ASSIGN(W, H)                                                                           \
    dsp->sad[VIDK_BLOCK_##W##x##H] = sad_##W##x##H##_avx2;                                     \
    dsp->sad_x4[VIDK_BLOCK_##W##x##H] = sad_x4_##W##x##H##_avx2;
    ASSIGN(16, 8)
    ASSIGN(16, 16)
    ASSIGN(32, 32)
    ASSIGN(64, 64)
#undef ASSIGN
}
