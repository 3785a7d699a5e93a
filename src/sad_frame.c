/* vidk_sad_frame: whole-frame SAD map for one displacement; the CPU backends' driver. */
#include <string.h>

#include "internal.h"

typedef struct {
    const VidkContext *ctx;
    const uint8_t *cur, *ref;
    ptrdiff_t cs, rs;
    int w, h, bw, bh, nbx, mvx, mvy;
    VidkBlockSize bs;
    uint32_t *sads;
} SadFrameJob;

/* Copy a bw x bh block at (x0, y0) with coordinates clamped into the picture. */
static void gather_clamped(uint8_t *dst, const uint8_t *src, ptrdiff_t stride, int w, int h,
                           int x0, int y0, int bw, int bh) {
    for (int y = 0; y < bh; y++) {
        const uint8_t *row = src + vidk_iclip(y0 + y, 0, h - 1) * stride;
        for (int x = 0; x < bw; x++)
            dst[y * 64 + x] = row[vidk_iclip(x0 + x, 0, w - 1)];
    }
}

static void sad_frame_row(void *arg, int by, int thread) {
    (void)thread;
    const SadFrameJob *j = arg;
    uint8_t tcur[64 * 64], tref[64 * 64];
    const vidk_sad_fn sad = j->ctx->sad.sad[j->bs];
    const int y0 = by * j->bh;
    for (int bx = 0; bx < j->nbx; bx++) {
        const int x0 = bx * j->bw;
        const uint8_t *c = j->cur + y0 * j->cs + x0;
        ptrdiff_t cs = j->cs;
        if (x0 + j->bw > j->w || y0 + j->bh > j->h) {
            gather_clamped(tcur, j->cur, j->cs, j->w, j->h, x0, y0, j->bw, j->bh);
            c = tcur, cs = 64;
        }
        const int rx = x0 + j->mvx, ry = y0 + j->mvy;
        const uint8_t *r;
        ptrdiff_t rs = j->rs;
        if (rx >= 0 && ry >= 0 && rx + j->bw <= j->w && ry + j->bh <= j->h) {
            r = j->ref + ry * j->rs + rx;
        } else {
            gather_clamped(tref, j->ref, j->rs, j->w, j->h, rx, ry, j->bw, j->bh);
            r = tref, rs = 64;
        }
        j->sads[by * j->nbx + bx] = sad(c, cs, r, rs);
    }
}

int vidk_sad_frame(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref, int mvx,
                   int mvy, VidkBlockSize bs, uint32_t *sads) {
    if (!ctx || !cur || !ref || !sads || (unsigned)bs >= VIDK_BLOCK_COUNT)
        return VIDK_ERR(EINVAL);
    if (cur->bitdepth != 8 || ref->bitdepth != 8 || cur->w != ref->w || cur->h != ref->h ||
        cur->w < 1 || cur->h < 1 || !cur->data[0] || !ref->data[0]) {
        vidk_log(ctx, VIDK_LOG_ERROR, "sad_frame: pictures must be 8-bit and of equal size");
        return VIDK_ERR(EINVAL);
    }
    if (mvx < -4096 || mvx > 4096 || mvy < -4096 || mvy > 4096) return VIDK_ERR(EINVAL);
    return ctx->ops.sad.frame(ctx, cur, ref, mvx, mvy, bs, sads);
}

int vidk_sad_frame_cpu(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                       int mvx, int mvy, VidkBlockSize bs, uint32_t *sads) {
    SadFrameJob j = {
        .ctx = ctx,
        .cur = cur->data[0],
        .ref = ref->data[0],
        .cs = cur->stride[0],
        .rs = ref->stride[0],
        .w = cur->w,
        .h = cur->h,
        .bw = vidk_block_width(bs),
        .bh = vidk_block_height(bs),
        .mvx = mvx,
        .mvy = mvy,
        .bs = bs,
        .sads = sads,
    };
    j.nbx = (j.w + j.bw - 1) / j.bw;
    const int nby = (j.h + j.bh - 1) / j.bh;
    ctx->ops.run(ctx, nby, sad_frame_row, &j);
    return 0;
}
