/* H.264 transforms, AVX2.
 * - idct_add_8x8: the 16-bit-lane path of src/x86/h264_tx8.h behind the same per-block
 *   tests as SSE2; the blocks that fail them take 32-bit rows (eight lanes per register).
 *   The other 16-bit-lane kernels (4x4, idct_add16, dequant_idct_add) stay SSE2: their
 *   VEX builds measured no faster (the shuffle and ALU ports bound them, not decoding), and
 *   dequantising with 256-bit rows then repacking to 16 bits was slower.
 * - idct_8x8, fdct_8x8: 32-bit rows, exactly the C reference's arithmetic (wrapping 32-bit,
 *   arithmetic shifts) for every input, so no range test is needed.
 * - 64-bit-exact quantisation. */
#include <immintrin.h>
#include <string.h>

#include "internal.h"
#include "x86/h264_tx8.h"

/* GCC turns the loops that load a block into registers (x[k] = load(p + k)) into an
 * inline memcpy to a stack array, then reads the registers back from it: that roughly
 * doubles the time of the 8x8 kernels. Keep the loads as loads. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif

#define ADD _mm256_add_epi32
#define SUB _mm256_sub_epi32
#define SRA _mm256_srai_epi32

/* 1-D inverse / forward 8-point transforms across x[0..7] (src/x86/h264_tx8.h). */
#define ITX8(x) H264_ITX8(__m256i, ADD, SUB, SRA, x)

#define FTX8(x) H264_FTX8(__m256i, ADD, SUB, SRA, x)

/* Transpose an 8x8 int32 matrix, one row per register. */
static inline void tr8(__m256i *r) {
    __m256i t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        u[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]);
        u[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
        u[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]);
        u[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x20);
        r[k + 4] = _mm256_permute2x128_si256(u[k], u[k + 4], 0x31);
    }
}

/* Rows of d -> rows of r = (h + 32) >> 6. */
static inline void itx8(__m256i *x) {
    tr8(x);
    ITX8(x);
    tr8(x);
    ITX8(x);
    const __m256i rnd = _mm256_set1_epi32(32);
    for (int k = 0; k < 8; k++)
        x[k] = _mm256_srai_epi32(_mm256_add_epi32(x[k], rnd), 6);
}

static decl_h264_idct_fn(idct_8x8_avx2) {
    __m256i x[8];
    for (int k = 0; k < 8; k++)
        x[k] = _mm256_loadu_si256((const __m256i *)(d + 8 * k));
    itx8(x);
    for (int k = 0; k < 8; k++)
        _mm256_storeu_si256((__m256i *)(r + 8 * k), x[k]);
}

/* dst = Clip1(dst + r): saturating to 16 bits and adding with saturation clips exactly. */
static inline void add8(uint8_t *dst, ptrdiff_t stride, const __m256i *x) {
    for (int k = 0; k < 8; k += 2) {
        uint8_t *p0 = dst + k * stride, *p1 = p0 + stride;
        const __m256i r = _mm256_permute4x64_epi64(_mm256_packs_epi32(x[k], x[k + 1]), 0xd8);
        const __m128i pix = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)p0),
                                               _mm_loadl_epi64((const __m128i *)p1));
        const __m256i s = _mm256_adds_epi16(_mm256_cvtepu8_epi16(pix), r);
        const __m256i o = _mm256_packus_epi16(s, s);
        _mm_storel_epi64((__m128i *)p0, _mm256_castsi256_si128(o));
        _mm_storel_epi64((__m128i *)p1, _mm256_extracti128_si256(o, 1));
    }
}

/* Blocks that failed the max test (w: their saturated rows): the sum test, else the
 * 32-bit rows x[]. */
static NOINLINE void itx8_add_big(uint8_t *dst, ptrdiff_t stride, __m256i *x, __m128i *w) {
    if (h264_sum8_ok(w)) {
        h264_itx8_w(w);
        h264_add8(dst, stride, w);
        return;
    }
    itx8(x);
    add8(dst, stride, x);
}

static decl_h264_idct_add_fn(idct_add_8x8_avx2) {
    __m128i w[8];
    for (int k = 0; k < 8; k++)
        w[k] = _mm_packs_epi32(_mm_loadu_si128((const __m128i *)(d + 8 * k)),
                               _mm_loadu_si128((const __m128i *)(d + 8 * k + 4)));
    if (h264_max8_ok(w)) {
        h264_itx8_w(w);
        h264_add8(dst, stride, w);
        return;
    }
    __m256i x[8];
    for (int k = 0; k < 8; k++)
        x[k] = _mm256_loadu_si256((const __m256i *)(d + 8 * k));
    itx8_add_big(dst, stride, x, w);
}

static decl_h264_fdct_fn(fdct_8x8_avx2) {
    __m256i x[8];
    for (int k = 0; k < 8; k++)
        x[k] = _mm256_cvtepi16_epi32(_mm_load_si128((const __m128i *)(res + 8 * k)));
    tr8(x);
    FTX8(x); /* rows */
    tr8(x);
    FTX8(x); /* columns */
    for (int k = 0; k < 8; k++)
        _mm256_storeu_si256((__m256i *)(w + 8 * k), x[k]);
}

/* Eight levels: sign(w) * min(32767, (|w| * mf + f) >> qbits), 64-bit exact. */
static inline __m256i quant8(__m256i w, __m256i mf, __m256i f64, __m128i cnt) {
    const __m256i s = _mm256_srai_epi32(w, 31);
    const __m256i a = _mm256_sub_epi32(_mm256_xor_si256(w, s), s);
    __m256i pe = _mm256_mul_epu32(a, mf);
    __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(mf, 32));
    pe = _mm256_srl_epi64(_mm256_add_epi64(pe, f64), cnt);
    po = _mm256_srl_epi64(_mm256_add_epi64(po, f64), cnt);
    const __m256i lo = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xaa);
    const __m256i hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xaa);
    /* a result of 2^32 or more saturates too: force its low half to all ones */
    const __m256i big =
        _mm256_xor_si256(_mm256_cmpeq_epi32(hi, _mm256_setzero_si256()), _mm256_set1_epi32(-1));
    const __m256i l = _mm256_min_epu32(_mm256_or_si256(lo, big), _mm256_set1_epi32(32767));
    return _mm256_sub_epi32(_mm256_xor_si256(l, s), s);
}

static inline int quant_n(int16_t *lev, const int32_t *w, const int32_t *mf, int qbits,
                          int32_t f, int n) {
    const __m256i f64 = _mm256_set1_epi64x((long long)(uint32_t)f);
    const __m128i cnt = _mm_cvtsi32_si128(qbits);
    int zeros = 0;
    for (int k = 0; k < n; k += 16) {
        const __m256i a = quant8(_mm256_loadu_si256((const __m256i *)(w + k)),
                                 _mm256_loadu_si256((const __m256i *)(mf + k)), f64, cnt);
        const __m256i b = quant8(_mm256_loadu_si256((const __m256i *)(w + k + 8)),
                                 _mm256_loadu_si256((const __m256i *)(mf + k + 8)), f64, cnt);
        const __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);
        _mm256_storeu_si256((__m256i *)(lev + k), v);
        zeros += _mm_popcnt_u32(
            (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16(v, _mm256_setzero_si256())));
    }
    return n - zeros / 2;
}

static decl_h264_quant_fn(quant_4x4_avx2) {
    return quant_n(lev, w, mf, qbits, f, 16);
}
static decl_h264_quant_fn(quant_8x8_avx2) {
    return quant_n(lev, w, mf, qbits, f, 64);
}

static decl_h264_nnz_fn(nnz_8x8_avx2) {
    const uint8_t *p = (const uint8_t *)c;
    int zeros = 0;
    for (int k = 0; k < 8; k += 2) {
        const __m256i v = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(p + k * stride))),
            _mm_loadu_si128((const __m128i *)(p + (k + 1) * stride)), 1);
        zeros += _mm_popcnt_u32(
            (unsigned)_mm256_movemask_epi8(_mm256_cmpeq_epi16(v, _mm256_setzero_si256())));
    }
    return 64 - zeros / 2;
}

void vidk_h264_dsp_init_avx2(VidkH264DSP *dsp) {
    dsp->idct[1] = idct_8x8_avx2;
    dsp->idct_add[1] = idct_add_8x8_avx2;
    dsp->fdct[1] = fdct_8x8_avx2;
    dsp->quant[0] = quant_4x4_avx2;
    dsp->quant[1] = quant_8x8_avx2;
    dsp->nnz[1] = nnz_8x8_avx2;
}
