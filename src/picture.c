#include <string.h>
#include <unistd.h>

#include "internal.h"

static void chroma_shift(VidkChroma c, int *sx, int *sy) {
    *sx = c == VIDK_CHROMA_420 || c == VIDK_CHROMA_422;
    *sy = c == VIDK_CHROMA_420;
}

int vidk_picture_plane_size(const VidkPicture *p, int plane, int *w, int *h) {
    if (!p || plane < 0 || plane > 2 || (plane && p->chroma == VIDK_CHROMA_400))
        return VIDK_ERR(EINVAL);
    int sx = 0, sy = 0;
    if (plane) chroma_shift(p->chroma, &sx, &sy);
    if (w) *w = (p->w + sx) >> sx;
    if (h) *h = (p->h + sy) >> sy;
    return 0;
}

/* Layout of a vidk_picture_alloc() picture: per plane the offset of its first row
 * (padding included), stride and padding; the total size. Arguments already checked. */
typedef struct PicLayout {
    int planes;
    size_t offs[3], total, page;
    ptrdiff_t stride[3];
    int ppad[3][2];
} PicLayout;

static void pic_layout(PicLayout *L, int w, int h, VidkChroma chroma, int bitdepth, int pad) {
    const size_t bps = bitdepth > 8 ? 2 : 1;
    int sx, sy;
    chroma_shift(chroma, &sx, &sy);
    L->planes = chroma == VIDK_CHROMA_400 ? 1 : 3;
    L->total = 0;
    for (int i = 0; i < L->planes; i++) {
        const int csx = i ? sx : 0, csy = i ? sy : 0;
        const int pw = (w + csx) >> csx, ph = (h + csy) >> csy;
        const int padx = pad >> csx, pady = pad >> csy;
        /* Sizes are bounded above (16384 + 2 * 1024 samples a side): no overflow. */
        const size_t row = (((size_t)pw + 2 * (size_t)padx) * bps + 63) & ~(size_t)63;
        L->stride[i] = (ptrdiff_t)row;
        L->ppad[i][0] = padx;
        L->ppad[i][1] = pady;
        L->offs[i] = L->total;
        L->total += row * ((size_t)ph + 2 * (size_t)pady);
    }
    L->total += 64; /* slack after the last row */
    /* Whole pages, page-aligned (vidk_picture_alloc): the driver pins whole pages and a page
     * cannot be pinned twice, so a registered picture must not share one with other memory
     * the caller registers (a heap neighbour: vidk_host_register_set rounds its ranges out). */
    const long ps = sysconf(_SC_PAGESIZE);
    L->page = ps > 0 ? (size_t)ps : 4096;
    L->total = (L->total + L->page - 1) / L->page * L->page;
}

int vidk_picture_alloc(VidkPicture *p, int w, int h, VidkChroma chroma, int bitdepth, int pad) {
    if (!p) return VIDK_ERR(EINVAL);
    memset(p, 0, sizeof(*p));
    if (w < 1 || h < 1 || w > VIDK_MAX_PICTURE_SIDE || h > VIDK_MAX_PICTURE_SIDE ||
        (unsigned)chroma > VIDK_CHROMA_444 || bitdepth < 8 || bitdepth > 16 || pad < 0 ||
        pad > 1024)
        return VIDK_ERR(EINVAL);
    const size_t bps = bitdepth > 8 ? 2 : 1;
    PicLayout L;
    pic_layout(&L, w, h, chroma, bitdepth, pad);
    uint8_t *mem = vidk_malloc_aligned(L.page, L.total);
    if (!mem) return VIDK_ERR(ENOMEM);
    memset(mem, 0, L.total);
    p->w = w;
    p->h = h;
    p->chroma = chroma;
    p->bitdepth = bitdepth;
    p->pad = pad;
    p->alloc = mem;
    for (int i = 0; i < L.planes; i++) {
        p->stride[i] = L.stride[i];
        p->data[i] = mem + L.offs[i] + (size_t)L.ppad[i][1] * (size_t)L.stride[i] +
                     (size_t)L.ppad[i][0] * bps;
    }
    return 0;
}

int vidk_picture_register(VidkContext *ctx, VidkPicture *p) {
    if (!ctx || !p) return VIDK_ERR(EINVAL);
    if (!p->alloc) return ctx->cuda ? VIDK_ERR(EINVAL) : 0;
    PicLayout L;
    pic_layout(&L, p->w, p->h, p->chroma, p->bitdepth, p->pad);
    return vidk_host_register(ctx, p->alloc, L.total);
}

int vidk_picture_unregister(VidkContext *ctx, VidkPicture *p) {
    if (!ctx || !p) return VIDK_ERR(EINVAL);
    return p->alloc ? vidk_host_unregister(ctx, p->alloc) : 0;
}

void vidk_picture_free(VidkPicture *p) {
    if (!p) return;
    vidk_free_aligned(p->alloc);
    memset(p, 0, sizeof(*p));
}

void vidk_picture_pad_edges(VidkPicture *p) {
    if (!p || p->pad <= 0) return;
    int sx, sy;
    chroma_shift(p->chroma, &sx, &sy);
    const int planes = p->chroma == VIDK_CHROMA_400 ? 1 : 3;
    const size_t bps = p->bitdepth > 8 ? 2 : 1;
    for (int i = 0; i < planes; i++) {
        int w, h;
        vidk_picture_plane_size(p, i, &w, &h);
        const int padx = p->pad >> (i ? sx : 0), pady = p->pad >> (i ? sy : 0);
        uint8_t *base = p->data[i];
        const ptrdiff_t st = p->stride[i];
        for (int y = 0; y < h; y++) {
            uint8_t *row = base + y * st;
            if (bps == 1) {
                memset(row - padx, row[0], (size_t)padx);
                memset(row + w, row[w - 1], (size_t)padx);
            } else {
                uint16_t *r16 = (uint16_t *)row;
                for (int x = 1; x <= padx; x++) {
                    r16[-x] = r16[0];
                    r16[w - 1 + x] = r16[w - 1];
                }
            }
        }
        const size_t rowbytes = ((size_t)w + 2 * (size_t)padx) * bps;
        uint8_t *first = base - (ptrdiff_t)padx * (ptrdiff_t)bps;
        uint8_t *last = first + (h - 1) * st;
        for (int y = 1; y <= pady; y++) {
            memcpy(first - y * st, first, rowbytes);
            memcpy(last + y * st, last, rowbytes);
        }
    }
}
