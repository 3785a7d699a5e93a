/* Portable C reference of the SAD family. */
#include <stdlib.h>

#include "internal.h"
#include "sad_core.h"

static const uint8_t block_w[VIDK_BLOCK_COUNT] = {4, 8, 4, 8, 16, 8, 16, 32, 64};
static const uint8_t block_h[VIDK_BLOCK_COUNT] = {4, 4, 8, 8, 8, 16, 16, 32, 64};
static const char *const block_names[VIDK_BLOCK_COUNT] = {
    "4x4", "8x4", "4x8", "8x8", "16x8", "8x16", "16x16", "32x32", "64x64"};

int vidk_block_width(VidkBlockSize bs) {
    return (unsigned)bs < VIDK_BLOCK_COUNT ? block_w[bs] : 0;
}
int vidk_block_height(VidkBlockSize bs) {
    return (unsigned)bs < VIDK_BLOCK_COUNT ? block_h[bs] : 0;
}
const char *vidk_block_name(VidkBlockSize bs) {
    return (unsigned)bs < VIDK_BLOCK_COUNT ? block_names[bs] : "?";
}

#define SAD_C(W, H)                                                                            \
    static decl_sad_fn(sad_##W##x##H##_c) {                                                    \
        return vidk_sad_wxh(src, src_stride, ref, ref_stride, W, H);                           \
    }                                                                                          \
    static decl_sad_x4_fn(sad_x4_##W##x##H##_c) {                                              \
        scores[0] = vidk_sad_wxh(src, src_stride, ref0, ref_stride, W, H);                     \
        scores[1] = vidk_sad_wxh(src, src_stride, ref1, ref_stride, W, H);                     \
        scores[2] = vidk_sad_wxh(src, src_stride, ref2, ref_stride, W, H);                     \
        scores[3] = vidk_sad_wxh(src, src_stride, ref3, ref_stride, W, H);                     \
    }

SAD_C(4, 4)
SAD_C(8, 4)
SAD_C(4, 8)
SAD_C(8, 8)
SAD_C(16, 8)
SAD_C(8, 16)
SAD_C(16, 16)
SAD_C(32, 32)
SAD_C(64, 64)

static decl_satd_avg_fn(satd_avg_c) {
    return vidk_satd_avg_wxh(src, ss, a, b, rs, w, h);
}

void vidk_sad_dsp_init(VidkSadDSP *dsp, unsigned flags) {
    dsp->satd_avg = satd_avg_c;
#define ASSIGN(bs, W, H)                                                                       \
    dsp->sad[VIDK_BLOCK_##bs] = sad_##W##x##H##_c;                                             \
    dsp->sad_x4[VIDK_BLOCK_##bs] = sad_x4_##W##x##H##_c;
    ASSIGN(4x4, 4, 4)
    ASSIGN(8x4, 8, 4)
    ASSIGN(4x8, 4, 8)
    ASSIGN(8x8, 8, 8)
    ASSIGN(16x8, 16, 8)
    ASSIGN(8x16, 8, 16)
    ASSIGN(16x16, 16, 16)
    ASSIGN(32x32, 32, 32)
    ASSIGN(64x64, 64, 64)
#undef ASSIGN
#if VIDK_HAVE_SIMD
    vidk_sad_dsp_init_x86(dsp, flags);
#else
    (void)flags;
#endif
}
