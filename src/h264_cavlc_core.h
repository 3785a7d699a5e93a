/* H.264 entropy coding core: the RBSP bit writer, Exp-Golomb codes (9.1) and CAVLC residual
 * blocks (9.2), written once for every backend. The tables are the standard's (Tables 9-5,
 * 9-7, 9-8, 9-9 and 9-10), stored as (length, value) pairs indexed as the decoder reads them.
 * The writer is a plain byte buffer with a capacity: past it, writes set `overflow` and are
 * dropped, so that a caller can grow the buffer and code again. */
#ifndef VIDK_H264_CAVLC_CORE_H
#define VIDK_H264_CAVLC_CORE_H

#include "vidk_core.h"

typedef struct VidkBits {
    uint8_t *buf;
    size_t cap;   /* bytes */
    size_t pos;   /* bits written */
    int overflow; /* 1: a write went past cap (the content is incomplete) */
    uint32_t
        part; /* the pos % 8 bits of the partial last byte (also in buf): never read back */
} VidkBits;

VIDK_CORE void vidk_bits_init(VidkBits *b, uint8_t *buf, size_t cap) {
    b->buf = buf;
    b->cap = cap;
    b->pos = 0;
    b->overflow = 0;
    b->part = 0;
}

/* n (0..32) low bits of v, most significant first: the partial last byte's bits (kept in
 * b->part, so that the buffer is only written: no store-to-load wait on a GPU) and v go
 * through a 64-bit accumulator, the bytes they cover out (the last one partial, its low
 * bits zero), without a loop: on the GPU the lanes of a warp, each coding its own block,
 * call it at different places, and a loop's trips made them diverge further (20% of
 * code_kernel's samples, session 25). */
VIDK_CORE void vidk_put_bits(VidkBits *b, int n, uint32_t v) {
    if (n <= 0) return;
    if (!b->buf) { /* a counter (vidk_bits_init with no buffer): the length only */
        b->pos += (size_t)n;
        return;
    }
    if (b->pos + (size_t)n > b->cap * 8) {
        b->overflow = 1;
        return;
    }
    uint8_t *p = b->buf + (b->pos >> 3);
    const int tot = (int)(b->pos & 7) + n; /* 1..39 bits from p on */
    const uint64_t acc = (uint64_t)b->part << n | (n == 32 ? v : v & ((1u << n) - 1));
    const uint64_t top = acc << (64 - tot); /* the first bit at bit 63 */
    p[0] = (uint8_t)(top >> 56);
    if (tot > 8) p[1] = (uint8_t)(top >> 48);
    if (tot > 16) p[2] = (uint8_t)(top >> 40);
    if (tot > 24) p[3] = (uint8_t)(top >> 32);
    if (tot > 32) p[4] = (uint8_t)(top >> 24);
    b->part = (uint32_t)(acc & ((1u << (tot & 7)) - 1));
    b->pos += (size_t)n;
}

/* ue(v) (9.1): codeNum k as M zeros, a one and the M low bits of k + 1. */
VIDK_CORE void vidk_put_ue(VidkBits *b, uint32_t k) {
    const uint64_t v = (uint64_t)k + 1;
    int m = 0;
    while ((v >> (m + 1)) != 0)
        m++;
    vidk_put_bits(b, m, 0);
    if (m < 32)
        vidk_put_bits(b, m + 1, (uint32_t)v);
    else { /* k = 2^32 - 1 does not occur in a stream; kept total */
        vidk_put_bits(b, 1, 1);
        vidk_put_bits(b, 32, (uint32_t)(v & 0xffffffffu));
    }
}

/* se(v) (9.1.1): v > 0 -> 2v - 1, v <= 0 -> -2v. */
VIDK_CORE void vidk_put_se(VidkBits *b, int32_t v) {
    vidk_put_ue(b, v > 0 ? 2u * (uint32_t)v - 1u : 2u * (uint32_t)(-(int64_t)v));
}

/* rbsp_trailing_bits (7.3.2.11): a one, then zeros to the byte boundary. */
VIDK_CORE void vidk_put_trailing(VidkBits *b) {
    vidk_put_bits(b, 1, 1);
    if (b->pos & 7) vidk_put_bits(b, 8 - (int)(b->pos & 7), 0);
}

/* ---- CAVLC tables ---- */

/* The tables: vidk_core.h's VIDK_CORE_TABLE (a host and a device copy). */
#define VIDK_CAVLC_TABLE     VIDK_CORE_TABLE
#define VIDK_CAVLC_TAB(name) VIDK_CORE_TAB(vidk_cavlc_##name)

// clang-format off
/* coeff_token (Table 9-5), [table][4 * TotalCoeff + TrailingOnes]: table 0 for 0 <= nC < 2,
 * 1 for 2 <= nC < 4, 2 for 4 <= nC < 8, 3 (6-bit fixed length) for nC >= 8. */
#define VIDK_CAVLC_CT_LEN {                                               \
    {1, 0, 0, 0, 6, 2, 0, 0, 8, 6, 3, 0, 9, 8, 7, 5, 10,                  \
     9, 8, 6, 11, 10, 9, 7, 13, 11, 10, 8, 13, 13, 11, 9, 13, 13,         \
     13, 10, 14, 14, 13, 11, 14, 14, 14, 13, 15, 15, 14, 14, 15, 15, 15,  \
     14, 16, 15, 15, 15, 16, 16, 16, 15, 16, 16, 16, 16, 16, 16, 16, 16}, \
    {2, 0, 0, 0, 6, 2, 0, 0, 6, 5, 3, 0, 7, 6, 6, 4, 8,                   \
     6, 6, 4, 8, 7, 7, 5, 9, 8, 8, 6, 11, 9, 9, 6, 11, 11,                \
     11, 7, 12, 11, 11, 9, 12, 12, 12, 11, 12, 12, 12, 11, 13, 13, 13,    \
     12, 13, 13, 13, 13, 13, 14, 13, 13, 14, 14, 14, 13, 14, 14, 14, 14}, \
    {4, 0, 0, 0, 6, 4, 0, 0, 6, 5, 4, 0, 6, 5, 5, 4, 7,                   \
     5, 5, 4, 7, 5, 5, 4, 7, 6, 6, 4, 7, 6, 6, 4, 8, 7,                   \
     7, 5, 8, 8, 7, 6, 9, 8, 8, 7, 9, 9, 8, 8, 9, 9, 9,                   \
     8, 10, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10},     \
    {6, 0, 0, 0, 6, 6, 0, 0, 6, 6, 6, 0, 6, 6, 6, 6, 6,                   \
     6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,                   \
     6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,                   \
     6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6},                  \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_ct_len, [4][68], VIDK_CAVLC_CT_LEN)
#define VIDK_CAVLC_CT_VAL {                                               \
    {1, 0, 0, 0, 5, 1, 0, 0, 7, 4, 1, 0, 7, 6, 5, 3, 7,                   \
     6, 5, 3, 7, 6, 5, 4, 15, 6, 5, 4, 11, 14, 5, 4, 8, 10,               \
     13, 4, 15, 14, 9, 4, 11, 10, 13, 12, 15, 14, 9, 12, 11, 10, 13,      \
     8, 15, 1, 9, 12, 11, 14, 13, 8, 7, 10, 9, 12, 4, 6, 5, 8},           \
    {3, 0, 0, 0, 11, 2, 0, 0, 7, 7, 3, 0, 7, 10, 9, 5, 7,                 \
     6, 5, 4, 4, 6, 5, 6, 7, 6, 5, 8, 15, 6, 5, 4, 11, 14,                \
     13, 4, 15, 10, 9, 4, 11, 14, 13, 12, 8, 10, 9, 8, 15, 14, 13,        \
     12, 11, 10, 9, 12, 7, 11, 6, 8, 9, 8, 10, 1, 7, 6, 5, 4},            \
    {15, 0, 0, 0, 15, 14, 0, 0, 11, 15, 13, 0, 8, 12, 14, 12, 15,         \
     10, 11, 11, 11, 8, 9, 10, 9, 14, 13, 9, 8, 10, 9, 8, 15, 14,         \
     13, 13, 11, 14, 10, 12, 15, 10, 13, 12, 11, 14, 9, 12, 8, 10, 13,    \
     8, 13, 7, 9, 12, 9, 12, 11, 10, 5, 8, 7, 6, 1, 4, 3, 2},             \
    {3, 0, 0, 0, 0, 1, 0, 0, 4, 5, 6, 0, 8, 9, 10, 11, 12,                \
     13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,  \
     30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46,  \
     47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63}, \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_ct_val, [4][68], VIDK_CAVLC_CT_VAL)
/* coeff_token for the 4:2:0 chroma DC (nC = -1), [4 * TotalCoeff + TrailingOnes]. */
#define VIDK_CAVLC_CDC_LEN {                                   \
    2, 0, 0, 0, 6, 1, 0, 0, 6, 6, 3, 0, 6, 7, 7, 6, 6, 8, 8, 7 \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_cdc_len, [20], VIDK_CAVLC_CDC_LEN)
#define VIDK_CAVLC_CDC_VAL {                                   \
    1, 0, 0, 0, 7, 1, 0, 0, 4, 6, 1, 0, 3, 3, 2, 5, 2, 3, 2, 0 \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_cdc_val, [20], VIDK_CAVLC_CDC_VAL)
/* total_zeros of 4x4 blocks (Tables 9-7, 9-8), [TotalCoeff - 1][total_zeros]. */
#define VIDK_CAVLC_TZ_LEN {                           \
    {1, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 9}, \
    {3, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6},    \
    {4, 3, 3, 3, 4, 4, 3, 3, 4, 5, 5, 6, 5, 6},       \
    {5, 3, 4, 4, 3, 3, 3, 4, 3, 4, 5, 5, 5},          \
    {4, 4, 4, 3, 3, 3, 3, 3, 4, 5, 4, 5},             \
    {6, 5, 3, 3, 3, 3, 3, 3, 4, 3, 6},                \
    {6, 5, 3, 3, 3, 2, 3, 4, 3, 6},                   \
    {6, 4, 5, 3, 2, 2, 3, 3, 6},                      \
    {6, 6, 4, 2, 2, 3, 2, 5},                         \
    {5, 5, 3, 2, 2, 2, 4},                            \
    {4, 4, 3, 3, 1, 3},                               \
    {4, 4, 2, 1, 3},                                  \
    {3, 3, 1, 2},                                     \
    {2, 2, 1},                                        \
    {1, 1},                                           \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_tz_len, [15][16], VIDK_CAVLC_TZ_LEN)
#define VIDK_CAVLC_TZ_VAL {                           \
    {1, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 1}, \
    {7, 6, 5, 4, 3, 5, 4, 3, 2, 3, 2, 3, 2, 1, 0},    \
    {5, 7, 6, 5, 4, 3, 4, 3, 2, 3, 2, 1, 1, 0},       \
    {3, 7, 5, 4, 6, 5, 4, 3, 3, 2, 2, 1, 0},          \
    {5, 4, 3, 7, 6, 5, 4, 3, 2, 1, 1, 0},             \
    {1, 1, 7, 6, 5, 4, 3, 2, 1, 1, 0},                \
    {1, 1, 5, 4, 3, 3, 2, 1, 1, 0},                   \
    {1, 1, 1, 3, 3, 2, 2, 1, 0},                      \
    {1, 0, 1, 3, 2, 1, 1, 1},                         \
    {1, 0, 1, 3, 2, 1, 1},                            \
    {0, 1, 1, 2, 1, 3},                               \
    {0, 1, 1, 1, 1},                                  \
    {0, 1, 1, 1},                                     \
    {0, 1, 1},                                        \
    {0, 1},                                           \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_tz_val, [15][16], VIDK_CAVLC_TZ_VAL)
/* total_zeros of the 4:2:0 chroma DC (Table 9-9a), [TotalCoeff - 1][total_zeros]. */
#define VIDK_CAVLC_TZC_LEN { \
    {1, 2, 3, 3},            \
    {1, 2, 2, 0},            \
    {1, 1, 0, 0},            \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_tzc_len, [3][4], VIDK_CAVLC_TZC_LEN)
#define VIDK_CAVLC_TZC_VAL { \
    {1, 1, 1, 0},            \
    {1, 1, 0, 0},            \
    {1, 0, 0, 0},            \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_tzc_val, [3][4], VIDK_CAVLC_TZC_VAL)
/* run_before (Table 9-10), [min(zerosLeft, 7) - 1][run_before]. */
#define VIDK_CAVLC_RB_LEN {                          \
    {1, 1},                                          \
    {1, 2, 2},                                       \
    {2, 2, 2, 2},                                    \
    {2, 2, 2, 3, 3},                                 \
    {2, 2, 3, 3, 3, 3},                              \
    {2, 3, 3, 3, 3, 3, 3},                           \
    {3, 3, 3, 3, 3, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11}, \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_rb_len, [7][15], VIDK_CAVLC_RB_LEN)
#define VIDK_CAVLC_RB_VAL {                        \
    {1, 0},                                        \
    {1, 1, 0},                                     \
    {3, 2, 1, 0},                                  \
    {3, 2, 1, 1, 0},                               \
    {3, 2, 3, 2, 1, 0},                            \
    {3, 0, 1, 3, 2, 5, 4},                         \
    {7, 6, 5, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1}, \
}
VIDK_CAVLC_TABLE(uint8_t, vidk_cavlc_rb_val, [7][15], VIDK_CAVLC_RB_VAL)

// clang-format on

/* One level (9.2.2.1) with the current suffixLength; returns the next suffixLength. `first`:
 * the first level after fewer than three trailing ones (its levelCode is lowered by 2). */
VIDK_CORE int vidk_cavlc_level(VidkBits *b, int level, int sl, int first) {
    const int mag = level < 0 ? -level : level;
    int32_t code = level > 0 ? 2 * level - 2 : -2 * level - 1;
    if (first) code -= 2;
    /* levelCode = (min(15, prefix) << sl) + suffix (+ 15 when sl = 0 and prefix >= 15)
     * (+ (1 << (prefix - 3)) - 4096 when prefix >= 16). */
    if (sl == 0 && code < 14) {
        vidk_put_bits(b, code + 1, 1); /* prefix `code`: code zeros and a one */
    } else if (sl == 0 && code < 30) {
        vidk_put_bits(b, 15, 1); /* prefix 14 */
        vidk_put_bits(b, 4, (uint32_t)(code - 14));
    } else if (sl > 0 && code < (15 << sl)) {
        vidk_put_bits(b, (code >> sl) + 1, 1);
        vidk_put_bits(b, sl, (uint32_t)(code & ((1 << sl) - 1)));
    } else {
        const int32_t base = (15 << sl) + (sl == 0 ? 15 : 0);
        int32_t rest = code - base;
        if (rest < 4096) {
            vidk_put_bits(b, 16, 1); /* prefix 15, 12-bit suffix */
            vidk_put_bits(b, 12, (uint32_t)rest);
        } else {
            /* prefix p >= 16 (High profiles): suffix of p - 3 bits carries
             * rest - ((1 << (p - 3)) - 4096). */
            int p = 16;
            while (rest - ((1 << (p - 3)) - 4096) >= (1 << (p - 3)))
                p++;
            vidk_put_bits(b, p, 0);
            vidk_put_bits(b, 1, 1);
            vidk_put_bits(b, p - 3, (uint32_t)(rest - ((1 << (p - 3)) - 4096)));
        }
    }
    if (sl == 0) sl = 1;
    if (mag > (3 << (sl - 1)) && sl < 6) sl++;
    return sl;
}

/* residual_block_cavlc (7.3.5.3.2 / 9.2) of coef[0..n-1] (scan order, n = maxNumCoeff: 4
 * for the chroma DC, 15 or 16 otherwise) with the predicted nC (-1: chroma DC). Returns
 * TotalCoeff. The non-zero coefficients are visited from the highest frequency down through
 * a bit mask of their positions (no arrays of levels and runs: on a GPU those live in local
 * memory); a run_before is the gap between two consecutive set bits. */
VIDK_CORE int vidk_cavlc_block(VidkBits *b, const int16_t *coef, int n, int nc) {
    uint32_t m = 0;
    int tc = 0, t1 = 0;
    for (int k = 0; k < n; k++) {
        const int nz = coef[k] != 0;
        m |= (uint32_t)nz << k;
        tc += nz;
    }
    /* trailing ones: up to three +-1 levels from the highest frequency down */
    for (uint32_t r = m; r && t1 < 3; t1++) {
        const int k = vidk_hibit32(r);
        if (coef[k] != 1 && coef[k] != -1) break;
        r &= ~((uint32_t)1 << k);
    }
    if (nc < 0) {
        vidk_put_bits(b, VIDK_CAVLC_TAB(cdc_len)[4 * tc + t1],
                      VIDK_CAVLC_TAB(cdc_val)[4 * tc + t1]);
    } else {
        const int t = nc < 2 ? 0 : nc < 4 ? 1 : nc < 8 ? 2 : 3;
        vidk_put_bits(b, VIDK_CAVLC_TAB(ct_len)[t][4 * tc + t1],
                      VIDK_CAVLC_TAB(ct_val)[t][4 * tc + t1]);
    }
    if (!tc) return 0;
    const int top = vidk_hibit32(m);
    /* total_zeros: the zeros below the highest non-zero level */
    const int tz = top + 1 - tc;
    /* the trailing ones' signs, then the other levels */
    int sl = tc > 10 && t1 < 3 ? 1 : 0;
    uint32_t r = m;
    for (int i = 0; i < tc; i++) {
        const int k = vidk_hibit32(r);
        r &= ~((uint32_t)1 << k);
        if (i < t1)
            vidk_put_bits(b, 1, coef[k] < 0);
        else
            sl = vidk_cavlc_level(b, coef[k], sl, i == t1 && t1 < 3);
    }
    if (tc < n) {
        if (nc < 0)
            vidk_put_bits(b, VIDK_CAVLC_TAB(tzc_len)[tc - 1][tz],
                          VIDK_CAVLC_TAB(tzc_val)[tc - 1][tz]);
        else
            vidk_put_bits(b, VIDK_CAVLC_TAB(tz_len)[tc - 1][tz],
                          VIDK_CAVLC_TAB(tz_val)[tc - 1][tz]);
    }
    /* run_before of each coefficient but the last, while zeros are left */
    int left = tz, k = top;
    r = m & ~((uint32_t)1 << top);
    for (int i = 0; i < tc - 1 && left > 0; i++) {
        const int k2 = vidk_hibit32(r), run = k - k2 - 1, z = left > 7 ? 7 : left;
        r &= ~((uint32_t)1 << k2);
        vidk_put_bits(b, VIDK_CAVLC_TAB(rb_len)[z - 1][run],
                      VIDK_CAVLC_TAB(rb_val)[z - 1][run]);
        left -= run;
        k = k2;
    }
    return tc;
}

#endif
