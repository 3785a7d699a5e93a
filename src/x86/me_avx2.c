/* search_quad with AVX2 vmpsadbw: two 16x16 blocks per vector (one per 128-bit lane),
 * 16 sliding SADs per instruction. The body is src/x86/me_mpsad_tmpl.h. */
#include <immintrin.h>

#include "internal.h"

#define FUNC         vidk_me_search_quad_avx2
#define VEC          __m256i
#define BPV          2
#define LOADU(p)     _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define STOREU(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
#define SET1_16(x)   _mm256_set1_epi16(x)
#define ADD16        _mm256_add_epi16
#define ADDS16       _mm256_adds_epu16
#define MIN16        _mm256_min_epu16
#define MAX16        _mm256_max_epu16
#define CMPEQ16      _mm256_cmpeq_epi16
#define BLENDV8      _mm256_blendv_epi8
/* imm8 bits 2:0 drive the low lane, bits 5:3 the high lane (same selection in both). */
#define MPSAD(a, b, sel, off) _mm256_mpsadbw_epu8(a, b, ((sel) | (off) << 2) * 9)

#include "me_mpsad_tmpl.h"
