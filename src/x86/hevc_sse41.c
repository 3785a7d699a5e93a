/* HEVC transforms, quantisers and pixel paths on SSE4.1 (128-bit vectors): the
 * template hevc_tmpl.h, the scaling-list quantiser (64-bit products) and the
 * residual / reconstruction pixel loops. */
#include <smmintrin.h>
#include <string.h>

#include "internal.h"

#define VEC          __m128i
#define VL           8
#define FN(x)        x##_sse41
#define LOADU(p)     _mm_loadu_si128((const __m128i *)(const void *)(p))
#define STOREU(p, v) _mm_storeu_si128((__m128i *)(void *)(p), (v))
#define SET1_16(x)   _mm_set1_epi16((int16_t)(x))
#define SET1_32(x)   _mm_set1_epi32(x)
#define SET1_64(x)   _mm_set1_epi64x(x)
#define ADD16        _mm_add_epi16
#define SUB16        _mm_sub_epi16
#define ADD32        _mm_add_epi32
#define SUB32        _mm_sub_epi32
#define MADD         _mm_madd_epi16
#define UNPACKLO16   _mm_unpacklo_epi16
#define UNPACKHI16   _mm_unpackhi_epi16
#define PACKS32      _mm_packs_epi32
#define PACKUS32     _mm_packus_epi32
#define SRA32(v, n)  _mm_sra_epi32((v), _mm_cvtsi32_si128(n))
#define SRL32(v, n)  _mm_srl_epi32((v), _mm_cvtsi32_si128(n))
#define SLL32(v, n)  _mm_sll_epi32((v), _mm_cvtsi32_si128(n))
#define SLL16(v, n)  _mm_sll_epi16((v), _mm_cvtsi32_si128(n))
#define SRAI16_15(v) _mm_srai_epi16((v), 15)
#define MIN16        _mm_min_epi16
#define MAX16        _mm_max_epi16
#define MINU16       _mm_min_epu16
#define MIN32        _mm_min_epi32
#define MAX32        _mm_max_epi32
#define HADD32       _mm_hadd_epi32
#define ABS16        _mm_abs_epi16
#define SIGN16       _mm_sign_epi16
#define MULLO16      _mm_mullo_epi16
#define MULHIU16     _mm_mulhi_epu16
/* zero lanes of v: the compare mask packed to bytes, counted by a table (SSE4.1 has no
 * popcnt) */
static inline int zeros16(__m128i v) {
    static const uint8_t bits[256] = {
#define B2(n) n, n + 1, n + 1, n + 2
#define B4(n) B2(n), B2(n + 1), B2(n + 1), B2(n + 2)
#define B6(n) B4(n), B4(n + 1), B4(n + 1), B4(n + 2)
        B6(0), B6(1), B6(1), B6(2)
#undef B2
#undef B4
#undef B6
    };
    const __m128i z = _mm_cmpeq_epi16(v, _mm_setzero_si128());
    return bits[_mm_movemask_epi8(_mm_packs_epi16(z, z)) & 255];
}
#define ZEROS16(v)        zeros16(v)
#define LOAD4x4(p, a, b)  ((a) = LOADU(p), (b) = LOADU((p) + 8))
#define STORE4x4(p, a, b) (STOREU((p), (a)), STOREU((p) + 8, (b)))
/* every n-point size is at least one vector wide: never two blocks per vector */
#define LDP(ptrs, off, n)    LOADU((ptrs)[0] + (off))
#define STP(ptrs, off, n, v) STOREU((ptrs)[0] + (off), (v))
#define HEVC_TMPL_QUANT      1

#include "hevc_tmpl.h"

/* ---- scaling-list quantiser: (|c| * qs + offset) >> qbits in 64 bits (qs < 2^19) ---- */

static inline __m128i quant64(__m128i a32, __m128i q32, __m128i off, __m128i cnt) {
    __m128i ev = _mm_mul_epu32(a32, q32);
    __m128i od = _mm_mul_epu32(_mm_srli_epi64(a32, 32), _mm_srli_epi64(q32, 32));
    ev = _mm_srl_epi64(_mm_add_epi64(ev, off), cnt);
    od = _mm_srl_epi64(_mm_add_epi64(od, off), cnt);
    /* results < 2^23: the high halves are zero */
    return _mm_or_si128(ev, _mm_slli_epi64(od, 32));
}

static decl_hevc_quant_sl_fn(quant_sl_sse41) {
    const __m128i off = _mm_set1_epi64x(offset), cnt = _mm_cvtsi32_si128(qbits);
    const __m128i mx = _mm_set1_epi16(32767);
    for (int b = 0; b < n_blocks; b++, lev += len, coef += len) {
        int zeros = 0;
        for (int k = 0; k < len; k += 8) {
            const __m128i c = LOADU(coef + k), a = _mm_abs_epi16(c);
            const __m128i m0 = quant64(_mm_cvtepu16_epi32(a), LOADU(qs + k), off, cnt);
            const __m128i m1 =
                quant64(_mm_cvtepu16_epi32(_mm_srli_si128(a, 8)), LOADU(qs + k + 4), off, cnt);
            const __m128i mag = _mm_min_epu16(_mm_packus_epi32(m0, m1),
                                              _mm_sub_epi16(mx, _mm_srai_epi16(c, 15)));
            const __m128i l = _mm_sign_epi16(mag, c);
            STOREU(lev + k, l);
            zeros += ZEROS16(l);
        }
        nnz[b] = (uint16_t)(len - zeros);
    }
}

/* ---- pixels: Clip1(pred + res) and src - pred, rows of N samples ---- */

static inline __m128i load32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm_cvtsi32_si128(v);
}

static inline void store32(void *p, __m128i v) {
    const int32_t x = _mm_cvtsi128_si32(v);
    memcpy(p, &x, 4);
}

/* 8-bit: widen, saturating add (the clip to 0..255 after it gives the exact result:
 * a saturated sum is far outside 0..255 on the same side), packus. */
static inline void add8_row(uint8_t *d, const int16_t *r, int n) {
    if (n == 4) {
        const __m128i s = _mm_adds_epi16(_mm_cvtepu8_epi16(load32(d)),
                                         _mm_loadl_epi64((const __m128i *)(const void *)r));
        store32(d, _mm_packus_epi16(s, s));
        return;
    }
    for (int x = 0; x < n; x += 8) {
        const __m128i p =
            _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(d + x)));
        const __m128i s = _mm_adds_epi16(p, LOADU(r + x));
        _mm_storel_epi64((__m128i *)(void *)(d + x), _mm_packus_epi16(s, s));
    }
}

/* d is unsigned (a prediction may exceed 32767, as in the c backend): add in the biased
 * domain d - 32768 with saturation, unbias, and the unsigned min clips to [0, mx]. */
static inline void add16_row(uint16_t *d, const int16_t *r, int n, __m128i mx) {
    const __m128i b = _mm_set1_epi16(INT16_MIN);
    if (n == 4) {
        const __m128i s =
            _mm_adds_epi16(_mm_xor_si128(_mm_loadl_epi64((const __m128i *)(const void *)d), b),
                           _mm_loadl_epi64((const __m128i *)(const void *)r));
        _mm_storel_epi64((__m128i *)(void *)d, _mm_min_epu16(_mm_xor_si128(s, b), mx));
        return;
    }
    for (int x = 0; x < n; x += 8) {
        const __m128i s = _mm_adds_epi16(_mm_xor_si128(LOADU(d + x), b), LOADU(r + x));
        STOREU(d + x, _mm_min_epu16(_mm_xor_si128(s, b), mx));
    }
}

static inline void sub8_row(int16_t *r, const uint8_t *s, const uint8_t *p, int n) {
    if (n == 4) {
        _mm_storel_epi64((__m128i *)(void *)r, _mm_sub_epi16(_mm_cvtepu8_epi16(load32(s)),
                                                             _mm_cvtepu8_epi16(load32(p))));
        return;
    }
    for (int x = 0; x < n; x += 8) {
        const __m128i a =
            _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(s + x)));
        const __m128i b =
            _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(p + x)));
        STOREU(r + x, _mm_sub_epi16(a, b));
    }
}

static inline void sub16_row(int16_t *r, const uint16_t *s, const uint16_t *p, int n) {
    if (n == 4) {
        _mm_storel_epi64((__m128i *)(void *)r,
                         _mm_sub_epi16(_mm_loadl_epi64((const __m128i *)(const void *)s),
                                       _mm_loadl_epi64((const __m128i *)(const void *)p)));
        return;
    }
    for (int x = 0; x < n; x += 8)
        STOREU(r + x, _mm_sub_epi16(LOADU(s + x), LOADU(p + x)));
}

#define PIX(N)                                                                                 \
    static decl_hevc_add8_fn(add8_##N##_sse41) {                                               \
        for (int y = 0; y < N; y++)                                                            \
            add8_row(dst + y * stride, res + y * N, N);                                        \
    }                                                                                          \
    static decl_hevc_add16_fn(add16_##N##_sse41) {                                             \
        const __m128i mx = _mm_set1_epi16((int16_t)((1 << bd) - 1));                           \
        for (int y = 0; y < N; y++)                                                            \
            add16_row((uint16_t *)(void *)((uint8_t *)dst + y * stride), res + y * N, N, mx);  \
    }                                                                                          \
    static decl_hevc_sub8_fn(sub8_##N##_sse41) {                                               \
        for (int y = 0; y < N; y++)                                                            \
            sub8_row(res + y * N, src + y * src_stride, pred + y * pred_stride, N);            \
    }                                                                                          \
    static decl_hevc_sub16_fn(sub16_##N##_sse41) {                                             \
        for (int y = 0; y < N; y++)                                                            \
            sub16_row(                                                                         \
                res + y * N,                                                                   \
                (const uint16_t *)(const void *)((const uint8_t *)src + y * src_stride),       \
                (const uint16_t *)(const void *)((const uint8_t *)pred + y * pred_stride), N); \
    }

PIX(4)
PIX(8)
PIX(16)
PIX(32)

void vidk_hevc_dsp_init_sse41(VidkHevcDSP *dsp) {
    HEVC_TMPL_ASSIGN_TX(dsp);
    dsp->quant = quant_sse41;
    dsp->quant_sl = quant_sl_sse41;
    dsp->dequant = dequant_sse41;
    dsp->dequant_sl = dequant_sl_sse41;
    dsp->nnz = nnz_sse41;
#define ASSIGN(i, N)                                                                           \
    dsp->add8[i] = add8_##N##_sse41;                                                           \
    dsp->add16[i] = add16_##N##_sse41;                                                         \
    dsp->sub8[i] = sub8_##N##_sse41;                                                           \
    dsp->sub16[i] = sub16_##N##_sse41;
    ASSIGN(0, 4)
    ASSIGN(1, 8)
    ASSIGN(2, 16)
    ASSIGN(3, 32)
#undef ASSIGN
}
