/* HEVC transforms and quantisers on AVX2 (256-bit vectors: two 4x4 or two 8x8 blocks
 * per vector, one 16-point row, half a 32-point row): the template hevc_tmpl.h, the
 * scaling-list quantiser, and 16 / 32-wide pixel rows. */
#include <immintrin.h>
#include <string.h>

#include "internal.h"

#define VEC          __m256i
#define VL           16
#define FN(x)        x##_avx2
#define LOADU(p)     _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define STOREU(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))
#define SET1_16(x)   _mm256_set1_epi16((int16_t)(x))
#define SET1_32(x)   _mm256_set1_epi32(x)
#define SET1_64(x)   _mm256_set1_epi64x(x)
#define ADD16        _mm256_add_epi16
#define SUB16        _mm256_sub_epi16
#define ADD32        _mm256_add_epi32
#define SUB32        _mm256_sub_epi32
#define MADD         _mm256_madd_epi16
#define UNPACKLO16   _mm256_unpacklo_epi16
#define UNPACKHI16   _mm256_unpackhi_epi16
#define PACKS32      _mm256_packs_epi32
#define PACKUS32     _mm256_packus_epi32
#define SRA32(v, n)  _mm256_sra_epi32((v), _mm_cvtsi32_si128(n))
#define SRL32(v, n)  _mm256_srl_epi32((v), _mm_cvtsi32_si128(n))
#define SLL32(v, n)  _mm256_sll_epi32((v), _mm_cvtsi32_si128(n))
#define SLL16(v, n)  _mm256_sll_epi16((v), _mm_cvtsi32_si128(n))
#define SRAI16_15(v) _mm256_srai_epi16((v), 15)
#define MIN16        _mm256_min_epi16
#define MAX16        _mm256_max_epi16
#define MINU16       _mm256_min_epu16
#define MIN32        _mm256_min_epi32
#define MAX32        _mm256_max_epi32
#define HADD32       _mm256_hadd_epi32
#define ABS16        _mm256_abs_epi16
#define SIGN16       _mm256_sign_epi16
#define MULLO16      _mm256_mullo_epi16
#define MULHIU16     _mm256_mulhi_epu16
#define ZEROS16(v)                                                                             \
    (_mm_popcnt_u32(                                                                           \
         (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16((v), _mm256_setzero_si256()))) >>   \
     1)
/* two consecutive 4x4 blocks A, B: [A rows 0-1 | B rows 0-1], [A rows 2-3 | B rows 2-3] */
#define LOAD4x4(p, a, b)                                                                       \
    do {                                                                                       \
        const __m256i y0_ = LOADU(p), y1_ = LOADU((p) + 16);                                   \
        (a) = _mm256_permute2x128_si256(y0_, y1_, 0x20);                                       \
        (b) = _mm256_permute2x128_si256(y0_, y1_, 0x31);                                       \
    } while (0)
#define STORE4x4(p, a, b)                                                                      \
    do {                                                                                       \
        STOREU((p), _mm256_permute2x128_si256((a), (b), 0x20));                                \
        STOREU((p) + 16, _mm256_permute2x128_si256((a), (b), 0x31));                           \
    } while (0)
/* a row of two 8-point blocks side by side */
#define LDP(ptrs, off, n)                                                                      \
    _mm256_inserti128_si256(                                                                   \
        _mm256_castsi128_si256(                                                                \
            _mm_loadu_si128((const __m128i *)(const void *)((ptrs)[0] + (off)))),              \
        _mm_loadu_si128((const __m128i *)(const void *)((ptrs)[1] + (off))), 1)
#define STP(ptrs, off, n, v)                                                                   \
    do {                                                                                       \
        _mm_storeu_si128((__m128i *)(void *)((ptrs)[0] + (off)), _mm256_castsi256_si128(v));   \
        _mm_storeu_si128((__m128i *)(void *)((ptrs)[1] + (off)),                               \
                         _mm256_extracti128_si256((v), 1));                                    \
    } while (0)
#define HEVC_TMPL_QUANT 1

#include "hevc_tmpl.h"

static inline __m256i quant64(__m256i a32, __m256i q32, __m256i off, __m128i cnt) {
    __m256i ev = _mm256_mul_epu32(a32, q32);
    __m256i od = _mm256_mul_epu32(_mm256_srli_epi64(a32, 32), _mm256_srli_epi64(q32, 32));
    ev = _mm256_srl_epi64(_mm256_add_epi64(ev, off), cnt);
    od = _mm256_srl_epi64(_mm256_add_epi64(od, off), cnt);
    return _mm256_or_si256(ev, _mm256_slli_epi64(od, 32)); /* results < 2^23 */
}

static decl_hevc_quant_sl_fn(quant_sl_avx2) {
    const __m256i off = _mm256_set1_epi64x(offset), mx = _mm256_set1_epi16(32767);
    const __m128i cnt = _mm_cvtsi32_si128(qbits);
    for (int b = 0; b < n_blocks; b++, lev += len, coef += len) {
        int zeros = 0;
        for (int k = 0; k < len; k += 16) {
            const __m256i c = LOADU(coef + k), a = _mm256_abs_epi16(c);
            const __m256i m0 = quant64(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(a)),
                                       LOADU(qs + k), off, cnt);
            const __m256i m1 = quant64(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(a, 1)),
                                       LOADU(qs + k + 8), off, cnt);
            /* packus interleaves the lanes: restore element order */
            const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(m0, m1), 0xd8);
            const __m256i mag =
                _mm256_min_epu16(p, _mm256_sub_epi16(mx, _mm256_srai_epi16(c, 15)));
            const __m256i l = _mm256_sign_epi16(mag, c);
            STOREU(lev + k, l);
            zeros += ZEROS16(l);
        }
        nnz[b] = (uint16_t)(len - zeros);
    }
}

/* 16- and 32-wide pixel rows (4 and 8 keep the SSE4.1 versions). */
#define PIX(N)                                                                                 \
    static decl_hevc_add8_fn(add8_##N##_avx2) {                                                \
        for (int y = 0; y < N; y++, dst += stride, res += N)                                   \
            for (int x = 0; x < N; x += 16) {                                                  \
                const __m256i p = _mm256_cvtepu8_epi16(                                        \
                    _mm_loadu_si128((const __m128i *)(const void *)(dst + x)));                \
                const __m256i s = _mm256_adds_epi16(p, LOADU(res + x));                        \
                const __m256i q = _mm256_packus_epi16(s, s);                                   \
                _mm_storeu_si128((__m128i *)(void *)(dst + x),                                 \
                                 _mm256_castsi256_si128(_mm256_permute4x64_epi64(q, 0x08)));   \
            }                                                                                  \
    }                                                                                          \
    static decl_hevc_add16_fn(add16_##N##_avx2) {                                              \
        /* unsigned d (may exceed 32767): biased saturating add, unsigned min (sse41) */       \
        const __m256i mx = _mm256_set1_epi16((int16_t)((1 << bd) - 1)),                        \
                      b = _mm256_set1_epi16(INT16_MIN);                                        \
        for (int y = 0; y < N; y++, res += N) {                                                \
            uint16_t *d = (uint16_t *)(void *)((uint8_t *)dst + y * stride);                   \
            for (int x = 0; x < N; x += 16) {                                                  \
                const __m256i s =                                                              \
                    _mm256_adds_epi16(_mm256_xor_si256(LOADU(d + x), b), LOADU(res + x));      \
                STOREU(d + x, _mm256_min_epu16(_mm256_xor_si256(s, b), mx));                   \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static decl_hevc_sub8_fn(sub8_##N##_avx2) {                                                \
        for (int y = 0; y < N; y++, src += src_stride, pred += pred_stride, res += N)          \
            for (int x = 0; x < N; x += 16) {                                                  \
                const __m256i a = _mm256_cvtepu8_epi16(                                        \
                    _mm_loadu_si128((const __m128i *)(const void *)(src + x)));                \
                const __m256i b = _mm256_cvtepu8_epi16(                                        \
                    _mm_loadu_si128((const __m128i *)(const void *)(pred + x)));               \
                STOREU(res + x, _mm256_sub_epi16(a, b));                                       \
            }                                                                                  \
    }                                                                                          \
    static decl_hevc_sub16_fn(sub16_##N##_avx2) {                                              \
        for (int y = 0; y < N; y++, res += N) {                                                \
            const uint16_t *s =                                                                \
                (const uint16_t *)(const void *)((const uint8_t *)src + y * src_stride);       \
            const uint16_t *p =                                                                \
                (const uint16_t *)(const void *)((const uint8_t *)pred + y * pred_stride);     \
            for (int x = 0; x < N; x += 16)                                                    \
                STOREU(res + x, _mm256_sub_epi16(LOADU(s + x), LOADU(p + x)));                 \
        }                                                                                      \
    }

PIX(16)
PIX(32)

void vidk_hevc_dsp_init_avx2(VidkHevcDSP *dsp) {
    HEVC_TMPL_ASSIGN_TX(dsp);
    dsp->quant = quant_avx2;
    dsp->quant_sl = quant_sl_avx2;
    dsp->dequant = dequant_avx2;
    dsp->dequant_sl = dequant_sl_avx2;
    dsp->nnz = nnz_avx2;
    dsp->add8[2] = add8_16_avx2;
    dsp->add8[3] = add8_32_avx2;
    dsp->add16[2] = add16_16_avx2;
    dsp->add16[3] = add16_32_avx2;
    dsp->sub8[2] = sub8_16_avx2;
    dsp->sub8[3] = sub8_32_avx2;
    dsp->sub16[2] = sub16_16_avx2;
    dsp->sub16[3] = sub16_32_avx2;
}
