/* SAD family, SSE2 (psadbw): every block size, sad and sad_x4.
 *
 * SAD is bound by loads and by psadbw, which issues on a single port on most Intel
 * cores: one load per row and block is the minimum, so 4- and 8-sample rows are packed
 * two or four to a register (movd/movq + unpack) before each psadbw, and the x4
 * versions load each source row once for all four candidates. Accumulators stay in
 * registers; the horizontal reduction runs once per call. Every load is unaligned and
 * reads exactly the W samples of a row (contract in src/sad.h).
 * Accumulation uses 64-bit adds, the lane width psadbw writes: re-typing the sums for a
 * 32-bit add made GCC 12 copy every accumulator on every iteration. */
#include <emmintrin.h>
#include <string.h>

#include "internal.h"

void vidk_sad_dsp_init_sse2(VidkSadDSP *dsp);

static inline __m128i load4(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4); /* movd: no alignment, no over-read */
    return _mm_cvtsi32_si128(v);
}

static inline __m128i load8(const uint8_t *p) {
    return _mm_loadl_epi64((const __m128i *)p);
}

static inline __m128i load16(const uint8_t *p) {
    return _mm_loadu_si128((const __m128i *)p);
}

/* Rows y..y+3 of a 4-wide block in one register. */
static inline __m128i load_4x4(const uint8_t *p, ptrdiff_t s) {
    const __m128i r01 = _mm_unpacklo_epi32(load4(p), load4(p + s));
    const __m128i r23 = _mm_unpacklo_epi32(load4(p + 2 * s), load4(p + 3 * s));
    return _mm_unpacklo_epi64(r01, r23);
}

/* Rows y, y+1 of an 8-wide block in one register. */
static inline __m128i load_8x2(const uint8_t *p, ptrdiff_t s) {
    return _mm_unpacklo_epi64(load8(p), load8(p + s));
}

/* psadbw leaves two partial sums, in 32-bit lanes 0 and 2. */
static inline unsigned hsum(__m128i v) {
    return (unsigned)_mm_cvtsi128_si32(_mm_add_epi32(v, _mm_unpackhi_epi64(v, v)));
}

/* Four psadbw accumulators -> scores[0..3] with one store. */
static inline void store4(unsigned scores[4], __m128i a0, __m128i a1, __m128i a2, __m128i a3) {
    /* [a0.l a0.h a1.l a1.h] and [a2.l a2.h a3.l a3.h], then even + odd elements */
    const __m128 t01 = _mm_shuffle_ps(_mm_castsi128_ps(a0), _mm_castsi128_ps(a1), 0x88);
    const __m128 t23 = _mm_shuffle_ps(_mm_castsi128_ps(a2), _mm_castsi128_ps(a3), 0x88);
    const __m128i lo = _mm_castps_si128(_mm_shuffle_ps(t01, t23, 0x88));
    const __m128i hi = _mm_castps_si128(_mm_shuffle_ps(t01, t23, 0xdd));
    _mm_storeu_si128((__m128i *)scores, _mm_add_epi32(lo, hi));
}

/* ---- single SAD ---- */

static inline unsigned sad_4xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r, ptrdiff_t rs,
                               int h) {
    __m128i acc = _mm_sad_epu8(load_4x4(s, ss), load_4x4(r, rs));
    for (int y = 4; y < h; y += 4) {
        s += 4 * ss, r += 4 * rs;
        acc = _mm_add_epi64(acc, _mm_sad_epu8(load_4x4(s, ss), load_4x4(r, rs)));
    }
    return hsum(acc);
}

static inline unsigned sad_8xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r, ptrdiff_t rs,
                               int h) {
    __m128i acc0 = _mm_sad_epu8(load_8x2(s, ss), load_8x2(r, rs));
    __m128i acc1 = _mm_sad_epu8(load_8x2(s + 2 * ss, ss), load_8x2(r + 2 * rs, rs));
    for (int y = 4; y < h; y += 4) {
        s += 4 * ss, r += 4 * rs;
        acc0 = _mm_add_epi64(acc0, _mm_sad_epu8(load_8x2(s, ss), load_8x2(r, rs)));
        acc1 = _mm_add_epi64(acc1,
                             _mm_sad_epu8(load_8x2(s + 2 * ss, ss), load_8x2(r + 2 * rs, rs)));
    }
    return hsum(_mm_add_epi32(acc0, acc1));
}

/* W = 16 * n: n 16-byte loads per row, two rows per iteration (two dependency chains). */
static inline unsigned sad_16nxh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r, ptrdiff_t rs,
                                 int n, int h) {
    __m128i acc0 = _mm_setzero_si128(), acc1 = _mm_setzero_si128();
    for (int y = 0; y < h; y += 2, s += 2 * ss, r += 2 * rs) {
        for (int i = 0; i < n; i++) {
            acc0 = _mm_add_epi64(acc0, _mm_sad_epu8(load16(s + 16 * i), load16(r + 16 * i)));
            acc1 = _mm_add_epi64(
                acc1, _mm_sad_epu8(load16(s + ss + 16 * i), load16(r + rs + 16 * i)));
        }
    }
    return hsum(_mm_add_epi32(acc0, acc1));
}

/* ---- x4 ---- */

static inline void sad_x4_4xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r0,
                              const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                              ptrdiff_t rs, unsigned scores[4], int h) {
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (int y = 0; y < h; y += 4, s += 4 * ss) {
        const ptrdiff_t o = y * rs;
        const __m128i v = load_4x4(s, ss);
        a0 = _mm_add_epi64(a0, _mm_sad_epu8(load_4x4(r0 + o, rs), v));
        a1 = _mm_add_epi64(a1, _mm_sad_epu8(load_4x4(r1 + o, rs), v));
        a2 = _mm_add_epi64(a2, _mm_sad_epu8(load_4x4(r2 + o, rs), v));
        a3 = _mm_add_epi64(a3, _mm_sad_epu8(load_4x4(r3 + o, rs), v));
    }
    store4(scores, a0, a1, a2, a3);
}

static inline void sad_x4_8xh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r0,
                              const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                              ptrdiff_t rs, unsigned scores[4], int h) {
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (int y = 0; y < h; y += 2, s += 2 * ss) {
        const ptrdiff_t o = y * rs;
        const __m128i v = load_8x2(s, ss);
        a0 = _mm_add_epi64(a0, _mm_sad_epu8(load_8x2(r0 + o, rs), v));
        a1 = _mm_add_epi64(a1, _mm_sad_epu8(load_8x2(r1 + o, rs), v));
        a2 = _mm_add_epi64(a2, _mm_sad_epu8(load_8x2(r2 + o, rs), v));
        a3 = _mm_add_epi64(a3, _mm_sad_epu8(load_8x2(r3 + o, rs), v));
    }
    store4(scores, a0, a1, a2, a3);
}

static inline void sad_x4_16nxh(const uint8_t *s, ptrdiff_t ss, const uint8_t *r0,
                                const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                                ptrdiff_t rs, unsigned scores[4], int n, int h) {
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (int y = 0; y < h; y++, s += ss) {
        const ptrdiff_t o = y * rs;
        for (int i = 0; i < n; i++) {
            const __m128i v = load16(s + 16 * i);
            a0 = _mm_add_epi64(a0, _mm_sad_epu8(load16(r0 + o + 16 * i), v));
            a1 = _mm_add_epi64(a1, _mm_sad_epu8(load16(r1 + o + 16 * i), v));
            a2 = _mm_add_epi64(a2, _mm_sad_epu8(load16(r2 + o + 16 * i), v));
            a3 = _mm_add_epi64(a3, _mm_sad_epu8(load16(r3 + o + 16 * i), v));
        }
    }
    store4(scores, a0, a1, a2, a3);
}

#define SAD_FNS(W, H, body, body_x4)                                                           \
    static decl_sad_fn(sad_##W##x##H##_sse2) {                                                 \
        return body;                                                                           \
    }                                                                                          \
    static decl_sad_x4_fn(sad_x4_##W##x##H##_sse2) {                                           \
        body_x4;                                                                               \
    }

#define ARGS    src, src_stride, ref, ref_stride
#define ARGS_X4 src, src_stride, ref0, ref1, ref2, ref3, ref_stride, scores

SAD_FNS(4, 4, sad_4xh(ARGS, 4), sad_x4_4xh(ARGS_X4, 4))
SAD_FNS(4, 8, sad_4xh(ARGS, 8), sad_x4_4xh(ARGS_X4, 8))
SAD_FNS(8, 4, sad_8xh(ARGS, 4), sad_x4_8xh(ARGS_X4, 4))
SAD_FNS(8, 8, sad_8xh(ARGS, 8), sad_x4_8xh(ARGS_X4, 8))
SAD_FNS(8, 16, sad_8xh(ARGS, 16), sad_x4_8xh(ARGS_X4, 16))
SAD_FNS(16, 8, sad_16nxh(ARGS, 1, 8), sad_x4_16nxh(ARGS_X4, 1, 8))
SAD_FNS(16, 16, sad_16nxh(ARGS, 1, 16), sad_x4_16nxh(ARGS_X4, 1, 16))
SAD_FNS(32, 32, sad_16nxh(ARGS, 2, 32), sad_x4_16nxh(ARGS_X4, 2, 32))
SAD_FNS(64, 64, sad_16nxh(ARGS, 4, 64), sad_x4_16nxh(ARGS_X4, 4, 64))

void vidk_sad_dsp_init_sse2(VidkSadDSP *dsp) {
#define ASSIGN(W, H)                                                                           \
    dsp->sad[VIDK_BLOCK_##W##x##H] = sad_##W##x##H##_sse2;                                     \
    dsp->sad_x4[VIDK_BLOCK_##W##x##H] = sad_x4_##W##x##H##_sse2;
    ASSIGN(4, 4)
    ASSIGN(4, 8)
    ASSIGN(8, 4)
    ASSIGN(8, 8)
    ASSIGN(8, 16)
    ASSIGN(16, 8)
    ASSIGN(16, 16)
    ASSIGN(32, 32)
    ASSIGN(64, 64)
#undef ASSIGN
}
