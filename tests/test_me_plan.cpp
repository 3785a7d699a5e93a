// The CUDA motion search's launch plan (make_plan, src/cuda/me_kern_common.cuh) over a sweep
// of picture sizes, ranges, shape masks, lambdas and SM counts: every plan the fast kernels
// would get must fit what me.cu launches (48 kB of dynamic shared memory a block, 56 kB with
// the shifted copies of F_SHIFT; the window pitch of its kernel) and cover every candidate
// column and row. Plain C++, no GPU.
#include "cuda/me_emu.cuh"

int main(void) {
    using namespace vidk_me;
    const int ws[] = {1, 16, 17, 64, 100, 176, 416, 640, 1280, 1920, 3840, 4096};
    const int hs[] = {1, 16, 50, 144, 240, 720, 1080, 2160};
    const unsigned no4 = VIDK_ME_SHAPE(VIDK_BLOCK_8x8) | VIDK_ME_SHAPE(VIDK_BLOCK_16x8) |
                         VIDK_ME_SHAPE(VIDK_BLOCK_8x16) | VIDK_ME_SHAPE(VIDK_BLOCK_16x16);
    const unsigned masks[] = {no4,
                              VIDK_ME_SHAPES_ALL,
                              VIDK_ME_SHAPES_H264,
                              VIDK_ME_SHAPE(VIDK_BLOCK_4x4),
                              VIDK_ME_SHAPE(VIDK_BLOCK_16x16),
                              VIDK_ME_SHAPE(VIDK_BLOCK_16x16) |
                                  VIDK_ME_SHAPE(VIDK_BLOCK_32x32) |
                                  VIDK_ME_SHAPE(VIDK_BLOCK_64x64),
                              VIDK_ME_SHAPE(VIDK_BLOCK_8x8)};
    const int sms[] = {1, 4, 66, 132};
    long plans = 0, bad = 0, shifted = 0;
    for (int w : ws)
        for (int h : hs)
            for (int R = 0; R <= VIDK_ME_MAX_RANGE; R += R < 40 ? 1 : 7)
                for (unsigned m : masks)
                    for (unsigned lambda : {0u, 7u})
                        for (int s : sms) {
                            VidkMeParams p;
                            memset(&p, 0, sizeof(p));
                            p.range = R, p.shapes = m, p.lambda = lambda;
                            MePlan pl;
                            if (make_plan(&pl, w, h, 8, &p, 8, s) < 0) {
                                if (bad++ < 10)
                                    fprintf(stderr, "%dx%d R %d shapes 0x%x: no plan\n", w, h,
                                            R, m);
                                continue;
                            }
                            plans++;
                            if (pl.path == PATH_GENERIC) continue;
                            const int wide = pl.path == PATH_F41 && (pl.flags & F_NO4);
                            const int shift = (pl.flags & F_SHIFT) != 0;
                            shifted += shift;
                            // F_SHIFT: copy 0 holds the words of every thread's reads
                            // (sx <= 58 + C NP) plus one, from which the others are formed
                            const int cols = pl.C * pl.NP;
                            const char *why =
                                pl.smem > smem_limit(pl.flags) ? "shared memory"
                                : shift && (!wide || pl.smem != f41_smem(pl.L, kWPS, 4))
                                    ? "shifted copies"
                                : shift && pl.WW != ((58 + cols) >> 2) + 3 ? "staged words"
                                : shift && cols > kColsS                   ? "passes"
                                : shift && pl.WP != kWPS                   ? "pitch"
                                : (long)pl.ncb * pl.C * pl.NP < pl.N       ? "columns"
                                : (long)pl.nsl * pl.L < pl.N               ? "rows"
                                : pl.WW > pl.WP                            ? "staged words"
                                : shift                                    ? nullptr
                                : wide && pl.WP != kWP41W                  ? "pitch"
                                : wide && pl.C * pl.NP > kColsW            ? "passes"
                                : !wide && pl.NP != 1                      ? "passes"
                                : pl.path == PATH_F41 && !wide && pl.WP != kWP41 ? "pitch"
                                                                                 : nullptr;
                            if (why && bad++ < 10)
                                fprintf(
                                    stderr,
                                    "%dx%d R %d shapes 0x%x lambda %u sms %d: %s (smem %zu, "
                                    "C %d NP %d ncb %d L %d nsl %d WP %d WW %d)\n",
                                    w, h, R, m, lambda, s, why, pl.smem, pl.C, pl.NP, pl.ncb,
                                    pl.L, pl.nsl, pl.WP, pl.WW);
                        }
    fprintf(stderr, "me_plan: %ld plans, %ld bad, %ld with shifted copies\n", plans, bad,
            shifted);
    return bad != 0 || shifted == 0;
}
