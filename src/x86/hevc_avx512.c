/* HEVC transforms on AVX-512 (F+BW+VL+DQ; 512-bit vectors: four 4x4 blocks, two 16x16
 * blocks or one 32-point row per vector). The 8x8 transforms, quantisers and pixel
 * paths keep the AVX2 versions (no gain measured; no psignw / phaddd at 512 bits). */
#include <immintrin.h>
#include <string.h>

#include "internal.h"

#define VEC          __m512i
#define VL           32
#define FN(x)        x##_avx512
#define LOADU(p)     _mm512_loadu_si512((const void *)(p))
#define STOREU(p, v) _mm512_storeu_si512((void *)(p), (v))
#define SET1_16(x)   _mm512_set1_epi16((int16_t)(x))
#define SET1_32(x)   _mm512_set1_epi32(x)
#define SET1_64(x)   _mm512_set1_epi64(x)
#define ADD16        _mm512_add_epi16
#define SUB16        _mm512_sub_epi16
#define ADD32        _mm512_add_epi32
#define SUB32        _mm512_sub_epi32
#define MADD         _mm512_madd_epi16
#define UNPACKLO16   _mm512_unpacklo_epi16
#define UNPACKHI16   _mm512_unpackhi_epi16
#define PACKS32      _mm512_packs_epi32
#define SRA32(v, n)  _mm512_sra_epi32((v), _mm_cvtsi32_si128(n))
#define SLL16(v, n)  _mm512_sll_epi16((v), _mm_cvtsi32_si128(n))
#define MIN16        _mm512_min_epi16
#define MAX16        _mm512_max_epi16

/* phaddd per 128-bit lane: [a0+a1, a2+a3, b0+b1, b2+b3] */
static inline __m512i hadd32(__m512i a, __m512i b) {
    const __m512 fa = _mm512_castsi512_ps(a), fb = _mm512_castsi512_ps(b);
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(fa, fb, 0x88)),
                            _mm512_castps_si512(_mm512_shuffle_ps(fa, fb, 0xdd)));
}
#define HADD32 hadd32

/* four consecutive 4x4 blocks: 128-bit lane i of the first vector = rows 0-1 of block
 * i, of the second = rows 2-3 */
static inline void load4x4(const int16_t *p, __m512i *a, __m512i *b) {
    const __m512i z0 = LOADU(p), z1 = LOADU(p + 32);
    *a = _mm512_shuffle_i64x2(z0, z1, 0x88); /* lanes 0, 2 of z0, then of z1 */
    *b = _mm512_shuffle_i64x2(z0, z1, 0xdd); /* lanes 1, 3 */
}
static inline void store4x4(int16_t *p, __m512i a, __m512i b) {
    const __m512i i0 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i i1 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    STOREU(p, _mm512_permutex2var_epi64(a, i0, b));
    STOREU(p + 32, _mm512_permutex2var_epi64(a, i1, b));
}
#define LOAD4x4(p, a, b)  load4x4((p), &(a), &(b))
#define STORE4x4(p, a, b) store4x4((p), (a), (b))

/* rows of four 8-point or two 16-point blocks side by side */
static inline __m512i ldp(const int16_t *const *p, int off, int n) {
    if (n == 16)
        return _mm512_inserti64x4(
            _mm512_castsi256_si512(
                _mm256_loadu_si256((const __m256i *)(const void *)(p[0] + off))),
            _mm256_loadu_si256((const __m256i *)(const void *)(p[1] + off)), 1);
    __m512i v =
        _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(p[0] + off)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(p[1] + off)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(p[2] + off)), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(p[3] + off)),
                              3);
}
static inline void stp(int16_t *const *p, int off, int n, __m512i v) {
    if (n == 16) {
        _mm256_storeu_si256((__m256i *)(void *)(p[0] + off), _mm512_castsi512_si256(v));
        _mm256_storeu_si256((__m256i *)(void *)(p[1] + off), _mm512_extracti64x4_epi64(v, 1));
        return;
    }
    _mm_storeu_si128((__m128i *)(void *)(p[0] + off), _mm512_castsi512_si128(v));
    _mm_storeu_si128((__m128i *)(void *)(p[1] + off), _mm512_extracti32x4_epi32(v, 1));
    _mm_storeu_si128((__m128i *)(void *)(p[2] + off), _mm512_extracti32x4_epi32(v, 2));
    _mm_storeu_si128((__m128i *)(void *)(p[3] + off), _mm512_extracti32x4_epi32(v, 3));
}
#define LDP(ptrs, off, n)    ldp((ptrs), (off), (n))
#define STP(ptrs, off, n, v) stp((ptrs), (off), (n), (v))

#include "hevc_tmpl.h"

void vidk_hevc_dsp_init_avx512(VidkHevcDSP *dsp) {
    /* 8x8 stays on AVX2: four blocks per vector cost more in transposes and gathers than
     * the wider pmaddwd saves (measured with checkkern --bench) */
    const vidk_hevc_fwd_fn f8 = dsp->fwd[VIDK_HEVC_TX_DCT8];
    const vidk_hevc_inv_fn i8 = dsp->inv[VIDK_HEVC_TX_DCT8];
    HEVC_TMPL_ASSIGN_TX(dsp);
    dsp->fwd[VIDK_HEVC_TX_DCT8] = f8;
    dsp->inv[VIDK_HEVC_TX_DCT8] = i8;
}
