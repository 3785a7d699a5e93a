/* search_quad with SSE4.1 mpsadbw: one 16x16 block per vector, 8 candidate columns per
 * instruction. The body is src/x86/me_mpsad_tmpl.h. */
#include <smmintrin.h>

#include "internal.h"

#define FUNC         vidk_me_search_quad_sse41
#define VEC          __m128i
#define BPV          1
#define LOADU(p)     _mm_loadu_si128((const __m128i *)(const void *)(p))
#define STOREU(p, v) _mm_storeu_si128((__m128i *)(void *)(p), v)
#define SET1_16(x)   _mm_set1_epi16(x)
#define ADD16        _mm_add_epi16
#define ADDS16       _mm_adds_epu16
#define MIN16        _mm_min_epu16
#define MAX16        _mm_max_epu16
#define CMPEQ16      _mm_cmpeq_epi16
#define BLENDV8      _mm_blendv_epi8
/* imm8: bits 1:0 select the dword of b, bit 2 the 4-byte offset into a. */
#define MPSAD(a, b, sel, off) _mm_mpsadbw_epu8(a, b, (sel) | (off) << 2)

#include "me_mpsad_tmpl.h"
