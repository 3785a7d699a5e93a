/* Deterministic synthetic test video (see gen.h).
 *
 * Everything is integer arithmetic on 12-bit texture values (0..4095): textures are
 * built once per generator into periodic tiles (a power of two on a side, so panning
 * wraps with a mask), and a frame is the tile sampled at the pan offset (bilinear at
 * 1/16 sample), the objects drawn over it, then gain, noise and rounding to the output
 * bit depth. Right shifts of negative values go through sra32() (floor), so nothing
 * depends on implementation-defined behaviour. */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

#define TEX_MAX  4095 /* textures are 12-bit */
#define TEX_MID  2048
#define N_SEG    16 /* pan segments in one period of the pan path */
#define MAX_OBJ  8
#define MIN_TILE 256
#define MAX_TILE 2048

typedef struct GenObject {
    int w, h;
    int shape;      /* 0 rectangle, 1 ellipse, 2 diamond */
    int style;      /* 0 inverted, 1 stripes, 2 checkerboard, 3 high contrast */
    int bounce;     /* 1: reflected at the borders; 0: leaves and re-enters (wraps) */
    int64_t x0, y0; /* position at frame 0 on the motion path, 1/16 sample */
    int64_t vx, vy; /* 1/16 sample per frame */
    int tox, toy;   /* where the object's texture is taken from in the tile */
    int amp;        /* pattern amplitude */
    int sa, sb, ssh;
    int du, dv; /* chroma tint */
} GenObject;

struct VidkGen {
    VidkGenParams p;
    int tile, mask;
    uint16_t *tex[3]; /* Y, U, V tiles (U/V NULL for 4:0:0); coordinates in luma samples */
    int seg_start[N_SEG + 1];
    int64_t seg_vx[N_SEG], seg_vy[N_SEG];
    int64_t seg_px[N_SEG + 1], seg_py[N_SEG + 1];
    int64_t pan_x0, pan_y0;
    int gain_amp, gain_period, gain_phase;
    int nobj;
    GenObject obj[MAX_OBJ];
};

/* ---- integer helpers --------------------------------------------------------------- */

static inline int32_t sra32(int32_t v, int s) {
    /* floor(v / 2^s) without relying on the implementation's signed shift */
    return v >= 0 ? v >> s : ~(~v >> s);
}

static inline int64_t floordiv64(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return q - (a % b < 0);
}

static inline int64_t floormod64(int64_t a, int64_t b) /* b > 0; result in [0, b) */
{
    int64_t r = a % b;
    return r < 0 ? r + b : r;
}

static inline int clip_tex(int v) {
    return v < 0 ? 0 : v > TEX_MAX ? TEX_MAX : v;
}

static uint64_t isqrt64(uint64_t v) {
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > v)
        bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

/* 32-bit integer finaliser (xor-shift-multiply); drives every random choice. */
static inline uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

typedef struct Rng {
    uint32_t s;
} Rng;

static inline uint32_t rng_next(Rng *r) {
    return mix32(r->s += 0x9e3779b9U);
}

/* uniform-ish integer in [lo, hi] */
static int rng_range(Rng *r, int lo, int hi) {
    return lo + (int)(rng_next(r) % (uint32_t)(hi - lo + 1));
}

static int ilog2(int v) {
    int l = 0;
    while ((1 << (l + 1)) <= v)
        l++;
    return l;
}

static void chroma_shift(VidkChroma c, int *sx, int *sy) {
    *sx = c == VIDK_CHROMA_420 || c == VIDK_CHROMA_422;
    *sy = c == VIDK_CHROMA_420;
}

/* ---- textures -------------------------------------------------------------------- */

/* Add one octave of periodic value noise (random lattice every `cell` samples, smoothstep
 * interpolation, values in [-amp, amp]) to acc. lat and colv are scratch. */
static void add_octave(int16_t *acc, int tile, int cell, int amp, Rng *r, int32_t *lat,
                       int32_t *colv, int32_t *wt) {
    if (cell > tile) cell = tile;
    const int n = tile / cell, lc = ilog2(cell), nm = n - 1;
    for (int i = 0; i < n * n; i++)
        lat[i] = rng_range(r, -amp, amp);
    /* smoothstep 3t^2 - 2t^3 in Q12 */
    for (int f = 0; f < cell; f++) {
        const int64_t t = (int64_t)f << (12 - lc);
        wt[f] = (int32_t)((t * t * (3 * 4096 - 2 * t)) >> 24);
    }
    for (int y = 0; y < tile; y++) {
        const int j = y >> lc, j1 = (j + 1) & nm;
        const int32_t wy = wt[y & (cell - 1)];
        for (int i = 0; i < n; i++) {
            const int32_t a = lat[j * n + i], b = lat[j1 * n + i];
            colv[i] = a + sra32((b - a) * wy, 12);
        }
        colv[n] = colv[0];
        int16_t *row = acc + (size_t)y * (size_t)tile;
        for (int x = 0; x < tile; x++) {
            const int i = x >> lc;
            const int32_t a = colv[i], b = colv[i + 1];
            row[x] = (int16_t)(row[x] + a + sra32((b - a) * wt[x & (cell - 1)], 12));
        }
    }
}

static inline int16_t sat13(int v) {
    return (int16_t)(v < -8191 ? -8191 : v > 8191 ? 8191 : v);
}

/* Hard-edged shapes (rectangles, discs, stripe patches) with one colour offset per
 * shape for all planes: edges in chroma coincide with edges in luma. */
static void add_shapes(int16_t *acc[3], int planes, int tile, Rng *r) {
    const int mask = tile - 1;
    /* radii up to rmax, shapes covering ~60 % of the tile (overlaps included) */
    const int rmax = 22 + tile / 32, ravg = 2 + rmax / 4;
    const int count = (int)((int64_t)tile * tile * 3 / (20 * ravg * ravg));
    for (int k = 0; k < count; k++) {
        /* 40 % rectangles, 40 % discs, 20 % stripe patches */
        const int kind = (int)(rng_next(r) % 5) >> 1;
        const int cx = rng_range(r, 0, mask), cy = rng_range(r, 0, mask);
        /* radii skewed towards small shapes, 2..rmax */
        const int rx = 2 + rng_range(r, 0, rmax) * rng_range(r, 0, rmax) / rmax;
        const int ry = 2 + rng_range(r, 0, rmax) * rng_range(r, 0, rmax) / rmax;
        int d[3];
        d[0] = rng_range(r, 200, 700) * (rng_next(r) & 1 ? 1 : -1);
        d[1] = d[0] / 5 + rng_range(r, -250, 250);
        d[2] = -d[0] / 6 + rng_range(r, -250, 250);
        /* stripe half-periods of 2^ssh / |(sa, sb)| >= 2.8 samples: no aliasing */
        const int sa = rng_range(r, 0, 2), sb = rng_range(r, sa ? 0 : 1, 2);
        const int ssh = rng_range(r, 3, 5);
        const int64_t rr = (int64_t)rx * rx * ry * ry;
        for (int dy = -ry; dy <= ry; dy++) {
            const int y = (cy + dy + tile) & mask; /* no & on negatives */
            for (int dx = -rx; dx <= rx; dx++) {
                int s = 1;
                if (kind == 1) {
                    if ((int64_t)dx * dx * ry * ry + (int64_t)dy * dy * rx * rx > rr) continue;
                } else if (kind == 2) {
                    s = (((dx + rx) * sa + (dy + ry) * sb) >> ssh) & 1 ? 1 : -1;
                }
                const size_t o = (size_t)y * (size_t)tile + (size_t)((cx + dx + tile) & mask);
                for (int p = 0; p < planes; p++)
                    acc[p][o] = sat13(acc[p][o] + s * d[p]);
            }
        }
    }
}

/* [1 2 1] / 4 in both directions (periodic): shape edges a camera would see, not
 * aliased steps, so sub-sample motion stays predictable. rows: 3 * tile scratch. */
static void blur121(int16_t *acc, int tile, int16_t *rows) {
    const int m = tile - 1;
    int16_t *prev = rows, *cur = rows + tile, *first = rows + 2 * tile;
    for (int y = 0; y < tile; y++) {
        int16_t *a = acc + (size_t)y * (size_t)tile;
        memcpy(cur, a, sizeof(int16_t) * (size_t)tile);
        for (int x = 0; x < tile; x++)
            a[x] = (int16_t)sra32(cur[(x + m) & m] + 2 * cur[x] + cur[(x + 1) & m] + 2, 2);
    }
    memcpy(first, acc, sizeof(int16_t) * (size_t)tile);
    memcpy(prev, acc + (size_t)m * (size_t)tile, sizeof(int16_t) * (size_t)tile);
    for (int y = 0; y < tile; y++) {
        int16_t *a = acc + (size_t)y * (size_t)tile;
        const int16_t *next = y < m ? a + tile : first;
        memcpy(cur, a, sizeof(int16_t) * (size_t)tile);
        for (int x = 0; x < tile; x++)
            a[x] = (int16_t)sra32(prev[x] + 2 * cur[x] + next[x] + 2, 2);
        int16_t *t = prev;
        prev = cur;
        cur = t;
    }
}

/* Separate random streams for luma, chroma and shapes: the luma texture is the same for
 * every chroma format and bit depth. */
static int build_textures(VidkGen *g) {
    Rng rl = {mix32(g->p.seed ^ 0x1badb002U)}, rc = {mix32(g->p.seed ^ 0x2c0ffee5U)};
    Rng rs = {mix32(g->p.seed ^ 0x3adfacedU)};
    static const int luma_oct[][2] = {{128, 900}, {64, 600}, {32, 340}, {16, 200},
                                      {8, 120},   {4, 75},   {2, 45}};
    static const int chroma_oct[][2] = {{128, 300}, {64, 200}, {32, 110}};
    const int tile = g->tile;
    const size_t n = (size_t)tile * (size_t)tile;
    const int planes = g->p.chroma == VIDK_CHROMA_400 ? 1 : 3;
    int32_t *scratch =
        malloc(sizeof(int32_t) * ((size_t)(tile / 2) * (tile / 2) + 2 * tile + 2));
    if (!scratch) return VIDK_ERR(ENOMEM);
    int32_t *lat = scratch, *colv = lat + (size_t)(tile / 2) * (tile / 2),
            *wt = colv + tile + 1;
    int16_t *acc[3] = {NULL, NULL, NULL};
    for (int p = 0; p < planes; p++) {
        g->tex[p] = calloc(n, sizeof(uint16_t));
        if (!g->tex[p]) {
            free(scratch);
            return VIDK_ERR(ENOMEM);
        }
        /* built signed in place, then offset and clipped (int16/uint16 may alias) */
        acc[p] = (int16_t *)g->tex[p];
    }
    /* shapes first (then softened), value noise on top */
    add_shapes(acc, planes, tile, &rs);
    for (int p = 0; p < planes; p++)
        blur121(acc[p], tile, (int16_t *)lat);
    for (size_t k = 0; k < sizeof(luma_oct) / sizeof(luma_oct[0]); k++)
        add_octave(acc[0], tile, luma_oct[k][0], luma_oct[k][1], &rl, lat, colv, wt);
    for (int p = 1; p < planes; p++) {
        /* chroma = shapes + own low-frequency colour + a seed-chosen share of luma */
        const int kc = rng_range(&rc, -48, 48);
        for (size_t i = 0; i < n; i++)
            acc[p][i] = sat13(acc[p][i] + acc[0][i] * kc / 256);
        for (size_t k = 0; k < sizeof(chroma_oct) / sizeof(chroma_oct[0]); k++)
            add_octave(acc[p], tile, chroma_oct[k][0], chroma_oct[k][1], &rc, lat, colv, wt);
    }
    for (int p = 0; p < planes; p++)
        for (size_t i = 0; i < n; i++)
            g->tex[p][i] = (uint16_t)clip_tex(TEX_MID + acc[p][i]);
    free(scratch);
    return 0;
}

/* ---- motion ------------------------------------------------------------------------ */

static int64_t round_to(int64_t v, int64_t step) {
    const int64_t a = v < 0 ? -v : v;
    const int64_t q = (a + step / 2) / step * step;
    return v < 0 ? -q : q;
}

/* A random vector of length ~s (1/16 units) without trigonometry. */
static void rand_dir(Rng *r, int s, int64_t *vx, int64_t *vy) {
    const int64_t x = rng_range(r, -s, s);
    const int64_t y = (int64_t)isqrt64((uint64_t)((int64_t)s * s - x * x));
    *vx = x;
    *vy = rng_next(r) & 1 ? -y : y;
}

static void build_motion(VidkGen *g, Rng *r) {
    static const int steps[4] = {16, 8, 4, 1}; /* integer, half, quarter, 1/16 sample */
    /* Background: N_SEG constant-velocity segments of 12..36 frames at 2..8 samples per
     * frame, repeated. Segment 0 is integer so a clip starts with integer pan. */
    int start = 0;
    int64_t px = 0, py = 0;
    for (int k = 0; k < N_SEG; k++) {
        const int len = rng_range(r, 12, 36);
        const int s = rng_range(r, 32, 128);
        const int64_t step = steps[k ? rng_range(r, 0, 3) : 0];
        int64_t vx, vy;
        rand_dir(r, s, &vx, &vy);
        /* the larger component is >= s / sqrt(2) > 16: never rounds to a standstill */
        g->seg_vx[k] = round_to(vx, step);
        g->seg_vy[k] = round_to(vy, step);
        g->seg_start[k] = start;
        g->seg_px[k] = px;
        g->seg_py[k] = py;
        start += len;
        px += g->seg_vx[k] * len;
        py += g->seg_vy[k] * len;
    }
    g->seg_start[N_SEG] = start;
    g->seg_px[N_SEG] = px;
    g->seg_py[N_SEG] = py;
    g->pan_x0 = (int64_t)rng_range(r, 0, g->mask) * 16;
    g->pan_y0 = (int64_t)rng_range(r, 0, g->mask) * 16;

    /* Slow brightness change: a triangle wave of gain 1 +- 3..7 % over 90..180 frames. */
    g->gain_amp = rng_range(r, 120, 280);
    g->gain_period = rng_range(r, 90, 180);
    g->gain_phase = rng_range(r, 0, g->gain_period - 1);

    /* Objects: speeds spread up to vmax (20 samples per frame, less in small pictures),
     * so one is fast and one slow; sizes 8..35 % of the smaller side. */
    const int W = g->p.w, H = g->p.h, mn = W < H ? W : H;
    const int vmax = mn < 32 ? 32 : mn > 320 ? 320 : mn;
    g->nobj = rng_range(r, 4, MAX_OBJ);
    for (int k = 0; k < g->nobj; k++) {
        GenObject *o = &g->obj[k];
        o->w = mn * rng_range(r, 20, 90) / 256;
        if (o->w < 4) o->w = 4;
        o->h = o->w * rng_range(r, 128, 384) / 256;
        if (o->h < 4) o->h = 4;
        int s = vmax * (k + 1) / g->nobj;
        if (s < 16) s = 16;
        rand_dir(r, s, &o->vx, &o->vy);
        o->bounce = (rng_next(r) & 1) && o->w < W && o->h < H;
        o->x0 = rng_range(r, 0, 2 * 16 * W);
        o->y0 = rng_range(r, 0, 2 * 16 * H);
        o->shape = rng_range(r, 0, 2);
        o->style = rng_range(r, 0, 3);
        o->tox = rng_range(r, 0, g->mask);
        o->toy = rng_range(r, 0, g->mask);
        o->amp = rng_range(r, 250, 600);
        o->sa = rng_range(r, 1, 2);
        o->sb = rng_range(r, 0, 2);
        o->ssh = rng_range(r, 3, 5);
        o->du = rng_range(r, -400, 400);
        o->dv = rng_range(r, -400, 400);
    }
}

static void pan_at(const VidkGen *g, int64_t t, int64_t *x, int64_t *y) {
    const int64_t period = g->seg_start[N_SEG];
    const int64_t q = t / period, rem = t % period;
    int k = 0;
    while (rem >= g->seg_start[k + 1])
        k++;
    const int64_t d = rem - g->seg_start[k];
    *x = g->pan_x0 + q * g->seg_px[N_SEG] + g->seg_px[k] + g->seg_vx[k] * d;
    *y = g->pan_y0 + q * g->seg_py[N_SEG] + g->seg_py[k] + g->seg_vy[k] * d;
}

/* One coordinate of an object on its path: bouncing between 0 and size - osize, or
 * wrapping over [-osize, size) so it leaves on one side and comes back on the other. */
static int obj_axis(int64_t p0, int64_t v, int64_t t, int size, int osize, int bounce) {
    const int64_t p = p0 + v * t;
    if (bounce) {
        const int64_t range = (int64_t)(size - osize) * 16;
        int64_t u = floormod64(p, 2 * range);
        if (u > range) u = 2 * range - u;
        return (int)(u >> 4);
    }
    return (int)(floormod64(p, (int64_t)(size + osize) * 16) >> 4) - osize;
}

static void obj_pos(const VidkGen *g, const GenObject *o, int64_t t, int *x, int *y) {
    *x = obj_axis(o->x0, o->vx, t, g->p.w, o->w, o->bounce);
    *y = obj_axis(o->y0, o->vy, t, g->p.h, o->h, o->bounce);
}

static int gain_at(const VidkGen *g, int64_t t) {
    const int P = g->gain_period, a = g->gain_amp;
    const int u = (int)((t + g->gain_phase) % P);
    const int d = 2 * u - P < 0 ? P - 2 * u : 2 * u - P; /* |2u - P| in [0, P] */
    return 4096 - a + 2 * a * d / P;                     /* Q12 */
}

/* ---- public API ------------------------------------------------------------------ */

void vidk_gen_default(VidkGenParams *p) {
    if (!p) return;
    memset(p, 0, sizeof(*p));
    p->w = 352;
    p->h = 288;
    p->frames = 30;
    p->bitdepth = 8;
    p->seed = 1;
    p->chroma = VIDK_CHROMA_420;
}

void vidk_gen_close(VidkGen **g) {
    if (!g || !*g) return;
    for (int p = 0; p < 3; p++)
        free((*g)->tex[p]);
    free(*g);
    *g = NULL;
}

int vidk_gen_open(VidkGen **out, const VidkGenParams *p) {
    if (!out) return VIDK_ERR(EINVAL);
    *out = NULL;
    if (!p || p->w < 1 || p->h < 1 || p->w > VIDK_MAX_PICTURE_SIDE ||
        p->h > VIDK_MAX_PICTURE_SIDE || p->frames < 1 || p->bitdepth < 8 || p->bitdepth > 12 ||
        (unsigned)p->chroma > VIDK_CHROMA_444)
        return VIDK_ERR(EINVAL);
    VidkGen *g = calloc(1, sizeof(*g));
    if (!g) return VIDK_ERR(ENOMEM);
    g->p = *p;
    const int side = p->w > p->h ? p->w : p->h;
    g->tile = MIN_TILE;
    while (g->tile < side && g->tile < MAX_TILE)
        g->tile <<= 1;
    g->mask = g->tile - 1;
    Rng r = {mix32(p->seed ^ 0x5eed1234U)};
    build_motion(g, &r);
    const int err = build_textures(g);
    if (err < 0) {
        vidk_gen_close(&g);
        return err;
    }
    *out = g;
    return 0;
}

int vidk_gen_pan(const VidkGen *g, int frame, int64_t *x16, int64_t *y16) {
    if (!g || frame < 0 || !x16 || !y16) return VIDK_ERR(EINVAL);
    pan_at(g, frame, x16, y16);
    return 0;
}

int vidk_gen_objects(const VidkGen *g, int frame, VidkGenObject *obj, int max) {
    if (!g || frame < 0 || max < 0 || (max && !obj)) return VIDK_ERR(EINVAL);
    for (int k = 0; k < g->nobj && k < max; k++) {
        const GenObject *o = &g->obj[k];
        VidkGenObject *d = &obj[k];
        obj_pos(g, o, frame, &d->x, &d->y);
        d->w = o->w;
        d->h = o->h;
        d->mvx = d->mvy = 0;
        if (frame > 0) {
            int px, py;
            obj_pos(g, o, frame - 1, &px, &py);
            d->mvx = px - d->x;
            d->mvy = py - d->y;
        }
    }
    return g->nobj;
}

/* ---- rendering --------------------------------------------------------------------- */

/* Background: n samples of tile row ty, columns tx0 + i * step, bilinear at (fx, fy)/16. */
static void bg_row(uint16_t *dst, const VidkGen *g, const uint16_t *tex, int ty, int tx0,
                   int fx, int fy, int n, int step) {
    const int m = g->mask;
    const uint16_t *r0 = tex + (size_t)(ty & m) * (size_t)g->tile;
    const uint16_t *r1 = tex + (size_t)((ty + 1) & m) * (size_t)g->tile;
    const int w00 = (16 - fx) * (16 - fy), w01 = fx * (16 - fy);
    const int w10 = (16 - fx) * fy, w11 = fx * fy;
    int i = 0;
    if (step == 1) {
        /* runs that do not wrap around the tile: plain loops the compiler vectorises */
        while (i < n) {
            const int a0 = (tx0 + i) & m;
            if (a0 == m) { /* the last tile column: its right neighbour is column 0 */
                dst[i++] =
                    (uint16_t)((r0[m] * w00 + r0[0] * w01 + r1[m] * w10 + r1[0] * w11 + 128) >>
                               8);
                continue;
            }
            const int len = m - a0 < n - i ? m - a0 : n - i;
            const uint16_t *p0 = r0 + a0, *p1 = r1 + a0;
            uint16_t *d = dst + i;
            if (!fx && !fy)
                memcpy(d, p0, sizeof(uint16_t) * (size_t)len);
            else
                for (int k = 0; k < len; k++)
                    d[k] = (uint16_t)((p0[k] * w00 + p0[k + 1] * w01 + p1[k] * w10 +
                                       p1[k + 1] * w11 + 128) >>
                                      8);
            i += len;
        }
    }
    for (; i < n; i++) {
        const int a = (tx0 + i * step) & m, b = (a + 1) & m;
        dst[i] = (uint16_t)((r0[a] * w00 + r0[b] * w01 + r1[a] * w10 + r1[b] * w11 + 128) >> 8);
    }
}

/* The columns [lo, hi) of object-local row ly that lie inside the shape. */
static void obj_span(const GenObject *o, int ly, int *lo, int *hi) {
    const int64_t w = o->w, h = o->h;
    const int64_t dy2 = 2 * (int64_t)ly + 1 - h; /* doubled offset from the centre */
    int64_t s;                                   /* allowed |2 lx + 1 - w| */
    if (o->shape == 0) {
        *lo = 0;
        *hi = o->w;
        return;
    }
    if (o->shape == 1) /* ellipse: (2lx+1-w)^2 h^2 + dy2^2 w^2 <= w^2 h^2 */
        s = (int64_t)isqrt64((uint64_t)(w * w * (h * h - dy2 * dy2) / (h * h)));
    else /* diamond: |2lx+1-w| h + |dy2| w <= w h */
        s = (w * h - (dy2 < 0 ? -dy2 : dy2) * w) / h;
    int64_t a = floordiv64(w - s, 2), b = floordiv64(w - 1 + s, 2) + 1;
    *lo = (int)(a < 0 ? 0 : a);
    *hi = (int)(b > w ? w : b);
}

static inline int obj_pattern(const GenObject *o, int lx, int ly) {
    if (o->style == 1) return ((lx * o->sa + ly * o->sb) >> o->ssh) & 1 ? o->amp : -o->amp;
    return ((lx >> o->ssh) ^ (ly >> o->ssh)) & 1 ? o->amp : -o->amp;
}

/* Draw object o (at ox, oy in luma samples) over row buffer dst of plane p, whose
 * samples are at luma-domain columns i << sx of luma-domain row Y. */
static void obj_row(uint16_t *dst, const VidkGen *g, const GenObject *o, int ox, int oy, int p,
                    int Y, int n, int sx) {
    const int ly = Y - oy;
    if (ly < 0 || ly >= o->h) return;
    int lo, hi;
    obj_span(o, ly, &lo, &hi);
    /* sample columns i with (i << sx) in [ox + lo, ox + hi) */
    const int64_t one = (int64_t)1 << sx;
    int64_t i0 = floordiv64((int64_t)ox + lo + one - 1, one);
    int64_t i1 = floordiv64((int64_t)ox + hi + one - 1, one);
    if (i0 < 0) i0 = 0;
    if (i1 > n) i1 = n;
    const int m = g->mask;
    const uint16_t *trow = g->tex[p] + (size_t)((ly + o->toy) & m) * (size_t)g->tile;
    const int tint = p == 1 ? o->du : p == 2 ? o->dv : 0;
    for (int64_t i = i0; i < i1; i++) {
        const int lx = (int)((i << sx) - ox);
        const int t = trow[(lx + o->tox) & m];
        int v;
        switch (o->style) {
        case 0:
            v = TEX_MAX - t + tint;
            break;
        case 1:
        case 2: {
            const int pat = obj_pattern(o, lx, ly);
            v = t + tint + (p ? pat / 4 : pat);
            break;
        }
        default:
            v = p ? t + tint : TEX_MID + (t - TEX_MID) * 3 / 2 + o->amp - 650;
            break;
        }
        dst[i] = (uint16_t)clip_tex(v);
    }
}

/* Gain (luma only), deterministic noise, rounding to the output bit depth. The noise of
 * sample i is a hash of (row key, i), so rows vectorise; luma noise is triangular in
 * [-31, 31] / 4096 of full scale (about +-2 levels at 8 bit), chroma half of that. */
#define FINISH_LOOP(type)                                                                      \
    for (int i = 0; i < n; i++) {                                                              \
        uint32_t h = (uint32_t)i * 0x9e3779b1U + key;                                          \
        h ^= h >> 16;                                                                          \
        h *= 0x7feb352dU;                                                                      \
        h ^= h >> 15;                                                                          \
        const int noise = (int)(h & nm) + (int)((h >> 8) & nm) - (int)nm;                      \
        int v = (int)(((uint32_t)src[i] * (uint32_t)gain) >> 12) + noise;                      \
        v = (clip_tex(v) + rnd) >> shift;                                                      \
        ((type *)out)[i] = (type)(v > maxv ? maxv : v);                                        \
    }

static void finish_row(void *out, const uint16_t *src, int n, int gain, int luma, uint32_t key,
                       int bitdepth) {
    const int shift = 12 - bitdepth, rnd = shift ? 1 << (shift - 1) : 0;
    const int maxv = (1 << bitdepth) - 1;
    const uint32_t nm = luma ? 31 : 15;
    if (bitdepth == 8)
        FINISH_LOOP(uint8_t)
    else
        FINISH_LOOP(uint16_t)
}

int vidk_gen_frame(VidkGen *g, int frame, VidkPicture *pic) {
    if (!g || !pic || frame < 0 || pic->w != g->p.w || pic->h != g->p.h ||
        pic->chroma != g->p.chroma || pic->bitdepth != g->p.bitdepth || !pic->data[0])
        return VIDK_ERR(EINVAL);
    const int planes = g->p.chroma == VIDK_CHROMA_400 ? 1 : 3;
    const size_t bps = g->p.bitdepth > 8 ? 2 : 1;
    for (int p = 0; p < planes; p++) {
        int pw, ph;
        if (vidk_picture_plane_size(pic, p, &pw, &ph) < 0 || !pic->data[p] ||
            pic->stride[p] < (ptrdiff_t)(bps * (size_t)pw))
            return VIDK_ERR(EINVAL);
    }
    /* scratch row: the only mutable state, so frames may be rendered concurrently */
    uint16_t *buf = malloc(sizeof(uint16_t) * (size_t)g->p.w);
    if (!buf) return VIDK_ERR(ENOMEM);

    int64_t px, py;
    pan_at(g, frame, &px, &py);
    const int fx = (int)floormod64(px, 16), fy = (int)floormod64(py, 16);
    const int ix = (int)floormod64(floordiv64(px, 16), g->tile);
    const int iy = (int)floormod64(floordiv64(py, 16), g->tile);
    const int gain = gain_at(g, frame);
    int ox[MAX_OBJ], oy[MAX_OBJ];
    for (int k = 0; k < g->nobj; k++)
        obj_pos(g, &g->obj[k], frame, &ox[k], &oy[k]);
    const uint32_t fseed = mix32(g->p.seed ^ mix32((uint32_t)frame + 0x6a09e667U));

    int csx, csy;
    chroma_shift(g->p.chroma, &csx, &csy);
    for (int p = 0; p < planes; p++) {
        const int sx = p ? csx : 0, sy = p ? csy : 0;
        int pw, ph;
        vidk_picture_plane_size(pic, p, &pw, &ph);
        for (int y = 0; y < ph; y++) {
            const int Y = y << sy;
            bg_row(buf, g, g->tex[p], Y + iy, ix, fx, fy, pw, 1 << sx);
            for (int k = 0; k < g->nobj; k++)
                obj_row(buf, g, &g->obj[k], ox[k], oy[k], p, Y, pw, sx);
            uint8_t *dst = (uint8_t *)pic->data[p] + (ptrdiff_t)y * pic->stride[p];
            finish_row(dst, buf, pw, p ? 4096 : gain, !p,
                       mix32(fseed ^ ((uint32_t)p << 28) ^ (uint32_t)y), g->p.bitdepth);
        }
    }
    free(buf);
    vidk_picture_pad_edges(pic);
    return 0;
}
