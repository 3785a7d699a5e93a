/* Motion field -> PNG: colour wheel or arrows (see mvpng.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mvpng.h"

int mvpng_mode_from_name(const char *name) {
    if (!strcmp(name, "wheel")) return MVPNG_WHEEL;
    if (!strcmp(name, "arrows")) return MVPNG_ARROWS;
    return -1;
}

/* Colour of vector (x, y): hue from the direction, saturation from |v| / norm. */
static void mv_colour(int x, int y, double norm, double sat_floor, uint8_t out[3]) {
    const double len = sqrt((double)x * x + (double)y * y);
    double s = norm > 0 ? len / norm : 0;
    if (s > 1) s = 1;
    if (len > 0 && s < sat_floor) s = sat_floor;
    const double pi = 3.14159265358979323846;
    double h = atan2((double)y, (double)x) / (2 * pi); /* -0.5..0.5, image y down */
    if (h < 0) h += 1;
    mvpng_hsv(h * 6, s, out);
}

void mvpng_hsv(double h6, double s, uint8_t out[3]) {
    const int sector = (int)h6 % 6;
    const double fr = h6 - floor(h6);
    /* 1, up, lo, dn: the six sectors of the hexcone pick three of them. */
    const double val[4] = {1, 1 - s * (1 - fr), 1 - s, 1 - s * fr};
    static const int pick[6][3] = {{0, 1, 2}, {3, 0, 2}, {2, 0, 1},
                                   {2, 3, 0}, {1, 2, 0}, {0, 2, 3}};
    for (int c = 0; c < 3; c++)
        out[c] = (uint8_t)lrint(255 * val[pick[sector][c]]);
}

static void put_px(uint8_t *rgb, int w, int h, int x, int y, const uint8_t c[3]) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    uint8_t *p = rgb + ((size_t)y * w + x) * 3;
    p[0] = c[0], p[1] = c[1], p[2] = c[2];
}

static void line(uint8_t *rgb, int w, int h, int x0, int y0, int x1, int y1,
                 const uint8_t c[3]) {
    /* Bresenham. */
    const int dx = abs(x1 - x0), dy = -abs(y1 - y0);
    const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int e = dx + dy;
    for (;;) {
        put_px(rgb, w, h, x0, y0, c);
        if (x0 == x1 && y0 == y1) break;
        const int e2 = 2 * e;
        if (e2 >= dy) e += dy, x0 += sx;
        if (e2 <= dx) e += dx, y0 += sy;
    }
}

int mvpng_render(const VidkMeField *f, VidkBlockSize bs, const VidkPicture *pic, MvPngMode mode,
                 int norm, uint8_t *rgb) {
    if (!f || !rgb || bs < 0 || bs >= VIDK_BLOCK_COUNT || !f->res[bs] ||
        (pic && (pic->w != f->w || pic->h != f->h)))
        return VIDK_ERR(EINVAL);
    const int w = f->w, h = f->h;
    const int gw = f->grid_w[bs], gh = f->grid_h[bs];
    const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
    const VidkMeResult *res = f->res[bs];
    double nrm = norm;
    if (nrm <= 0) {
        for (size_t i = 0; i < (size_t)gw * gh; i++) {
            const double l =
                sqrt((double)res[i].mv.x * res[i].mv.x + (double)res[i].mv.y * res[i].mv.y);
            if (l > nrm) nrm = l;
        }
        if (nrm <= 0) nrm = 1;
    }
    if (mode == MVPNG_WHEEL) {
        for (int by = 0; by < gh; by++)
            for (int bx = 0; bx < gw; bx++) {
                uint8_t c[3];
                const VidkMeResult *r = &res[(size_t)by * gw + bx];
                mv_colour(r->mv.x, r->mv.y, nrm, 0, c);
                for (int y = by * bh; y < by * bh + bh && y < h; y++)
                    for (int x = bx * bw; x < bx * bw + bw && x < w; x++)
                        put_px(rgb, w, h, x, y, c);
            }
        return 0;
    }
    /* Arrows over the dimmed picture. */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            unsigned v = 0;
            if (pic) {
                const uint8_t *row =
                    (const uint8_t *)pic->data[0] + (ptrdiff_t)y * pic->stride[0];
                v = pic->bitdepth == 8
                        ? row[x]
                        : (unsigned)(((const uint16_t *)row)[x] >> (pic->bitdepth - 8));
            }
            const uint8_t g = (uint8_t)(v * 2 / 5);
            const uint8_t c[3] = {g, g, g};
            put_px(rgb, w, h, x, y, c);
        }
    const int stepx = bw < 8 ? 8 / bw : 1, stepy = bh < 8 ? 8 / bh : 1;
    for (int by = 0; by < gh; by += stepy)
        for (int bx = 0; bx < gw; bx += stepx) {
            const VidkMeResult *r = &res[(size_t)by * gw + bx];
            const int cx = bx * bw + (bw * stepx) / 2, cy = by * bh + (bh * stepy) / 2;
            if (cx >= w || cy >= h) continue;
            uint8_t c[3];
            /* Saturation at least 60 % so short arrows stay visible on the grey. */
            mv_colour(r->mv.x, r->mv.y, nrm, 0.6, c);
            if (!r->mv.x && !r->mv.y) {
                const uint8_t white[3] = {200, 200, 200};
                put_px(rgb, w, h, cx, cy, white);
                continue;
            }
            const int ex = cx + r->mv.x, ey = cy + r->mv.y;
            line(rgb, w, h, cx, cy, ex, ey, c);
            const double len = sqrt((double)r->mv.x * r->mv.x + (double)r->mv.y * r->mv.y);
            const double head = len < 6 ? len / 2 : 3;
            const double ux = r->mv.x / len, uy = r->mv.y / len;
            /* Two barbs at +-30 degrees from the reversed direction. */
            const double cs = 0.8660254037844386, sn = 0.5;
            const int ax = ex - (int)lrint(head * (ux * cs - uy * sn));
            const int ay = ey - (int)lrint(head * (uy * cs + ux * sn));
            const int bx2 = ex - (int)lrint(head * (ux * cs + uy * sn));
            const int by2 = ey - (int)lrint(head * (uy * cs - ux * sn));
            line(rgb, w, h, ex, ey, ax, ay, c);
            line(rgb, w, h, ex, ey, bx2, by2, c);
        }
    return 0;
}
