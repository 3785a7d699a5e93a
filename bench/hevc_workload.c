/* Workloads of `vidkern-bench hevc` (see hevc_workload.h for the rules). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gen.h"
#include "hevc_workload.h"

#define MAX_N 32

const char *hw_dist_name(HwDist d) {
    static const char *const n[] = {"4x4", "8x8", "16x16", "32x32", "mixed"};
    return (unsigned)d <= HW_DIST_MIXED ? n[d] : "?";
}

int hw_chroma_qp(int qp) {
    /* H.265 Table 8-10 (ChromaArrayType 1): qPi < 30 -> qPi, 30..43 -> table, > 43 ->
     * qPi - 6. */
    static const int t[14] = {29, 30, 31, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37};
    if (qp < 30) return qp;
    if (qp > 43) return qp - 6;
    return t[qp - 30];
}

int hw_parse(const char *name, HwSpec *s, char *err, size_t errlen) {
    static const struct {
        const char *n;
        int w, h;
    } named[] = {{"4k", 4096, 2160},    {"dci4k", 4096, 2160}, {"2160p", 3840, 2160},
                 {"1080p", 1920, 1080}, {"720p", 1280, 720},   {"cif", 352, 288}};
    memset(s, 0, sizeof(*s));
    const char *dash = strrchr(name, '-');
    if (!dash || dash == name || strlen(name) >= sizeof(s->name) ||
        (size_t)(dash - name) >= sizeof(s->size_name)) {
        snprintf(err, errlen, "workload '%s' is not SIZE-DIST (e.g. 4k-4x4, 1080p-mixed)",
                 name);
        return -1;
    }
    snprintf(s->name, sizeof(s->name), "%s", name);
    memcpy(s->size_name, name, (size_t)(dash - name));
    s->size_name[dash - name] = 0;
    const char *d = dash + 1;
    s->dist = (HwDist)-1;
    for (int i = 0; i <= HW_DIST_MIXED; i++)
        if (!strcmp(d, hw_dist_name((HwDist)i))) s->dist = (HwDist)i;
    if ((int)s->dist < 0) {
        snprintf(err, errlen,
                 "workload '%s': distribution '%s' is not 4x4, 8x8, 16x16, 32x32 or mixed",
                 name, d);
        return -1;
    }
    int found = 0;
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (!strcmp(s->size_name, named[i].n)) {
            s->w = named[i].w, s->h = named[i].h;
            found = 1;
        }
    if (!found) {
        char *end;
        const long a = strtol(s->size_name, &end, 10);
        const char *s2 = end + 1;
        long c = 0;
        if (end != s->size_name && (*end == 'x' || *end == 'X')) c = strtol(s2, &end, 10);
        if (end == s2 || *end || a < 16 || c < 16 || a > 8192 || c > 4320 || a % 8 || c % 8) {
            snprintf(err, errlen,
                     "workload '%s': size '%s' is not 4k, 2160p, 1080p, 720p, cif or WxH "
                     "(multiples of 8, 16..8192 x 16..4320)",
                     name, s->size_name);
            return -1;
        }
        s->w = (int)a, s->h = (int)c;
    }
    s->chroma = s->dist == HW_DIST_MIXED ? VIDK_CHROMA_420 : VIDK_CHROMA_400;
    return 0;
}

/* ------------------------------------------------------------------ prediction */

static inline int iclip(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

typedef struct Plane {
    const uint8_t *p;
    ptrdiff_t stride;
    int w, h;
} Plane;

static Plane plane_of(const VidkPicture *pic, int i) {
    Plane pl;
    pl.p = (const uint8_t *)pic->data[i];
    pl.stride = pic->stride[i];
    vidk_picture_plane_size(pic, i, &pl.w, &pl.h);
    return pl;
}

/* Residual of an n x n block at (x, y) against the best (least SAD) of DC, horizontal
 * and vertical prediction from the source samples above and left (open loop); a missing
 * neighbour row / column takes 128 (2^(bitDepth - 1), H.265 8.4.4.2.2). */
static void intra_residual(int16_t *res, const Plane *s, int x, int y, int n) {
    int top[MAX_N], left[MAX_N];
    for (int i = 0; i < n; i++) {
        top[i] = y > 0 ? s->p[(ptrdiff_t)(y - 1) * s->stride + x + i] : 128;
        left[i] = x > 0 ? s->p[(ptrdiff_t)(y + i) * s->stride + x - 1] : 128;
    }
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += top[i] + left[i];
    const int dc = (sum + n) / (2 * n); /* H.265 8.4.4.2.5 */
    long sad[3] = {0, 0, 0};
    for (int r = 0; r < n; r++) {
        const uint8_t *row = s->p + (ptrdiff_t)(y + r) * s->stride + x;
        for (int c = 0; c < n; c++) {
            sad[0] += labs((long)row[c] - dc);
            sad[1] += labs((long)row[c] - left[r]);
            sad[2] += labs((long)row[c] - top[c]);
        }
    }
    const int mode = sad[0] <= sad[1] && sad[0] <= sad[2] ? 0 : sad[1] <= sad[2] ? 1 : 2;
    for (int r = 0; r < n; r++) {
        const uint8_t *row = s->p + (ptrdiff_t)(y + r) * s->stride + x;
        for (int c = 0; c < n; c++) {
            const int p = mode == 0 ? dc : mode == 1 ? left[r] : top[c];
            res[r * n + c] = (int16_t)(row[c] - p);
        }
    }
}

/* Residual plane of an inter frame: cur minus the reference block at the vector of the
 * 16x16 luma block (chroma: vector / 2 floored, 8x8 blocks), edge samples replicated. */
static void inter_plane(int16_t *res, const Plane *cur, const Plane *ref, const VidkMeField *f,
                        int shift) {
    const int bs = 16 >> shift;
    const VidkMeResult *mv = f->res[VIDK_BLOCK_16x16];
    const int gw = f->grid_w[VIDK_BLOCK_16x16];
    for (int y = 0; y < cur->h; y++) {
        const uint8_t *c = cur->p + (ptrdiff_t)y * cur->stride;
        int16_t *o = res + (size_t)y * (size_t)cur->w;
        for (int x = 0; x < cur->w; x++) {
            const VidkMeResult *m = &mv[(y / bs) * gw + x / bs];
            const int dx = shift ? m->mv.x >> 1 : m->mv.x, dy = shift ? m->mv.y >> 1 : m->mv.y;
            const int rx = iclip(x + dx, 0, ref->w - 1);
            const int ry = iclip(y + dy, 0, ref->h - 1);
            o[x] = (int16_t)(c[x] - ref->p[(ptrdiff_t)ry * ref->stride + rx]);
        }
    }
}

/* ------------------------------------------------------------------ TB emission */

typedef struct Builder {
    HwFrame *f;
    int intra, qp, qpc;
    double split_k_qstep2; /* HW_SPLIT_K * Qstep^2 */
    HwDist dist;
    const Plane *src;     /* planes of the source picture (intra) */
    const int16_t *rp[3]; /* residual planes (inter) */
    int pw[3], ph[3];
    /* luma leaves of the mixed tree, for the chroma pass */
    uint32_t *leaf;
    size_t nleaf, cap;
    int err;
} Builder;

static void block_residual(Builder *b, int plane, int x, int y, int n, int16_t *res) {
    if (b->intra) {
        intra_residual(res, &b->src[plane], x, y, n);
        return;
    }
    const int16_t *r = b->rp[plane] + (size_t)y * (size_t)b->pw[plane] + (size_t)x;
    for (int i = 0; i < n; i++)
        memcpy(res + i * n, r + (size_t)i * (size_t)b->pw[plane], (size_t)n * sizeof(int16_t));
}

static void emit(Builder *b, int plane, int x, int y, int n, const int16_t *res) {
    if (b->err) return;
    int log2n = 2;
    while ((1 << log2n) < n)
        log2n++;
    const int size = log2n - 2;
    VidkHevcTb tb;
    memset(&tb, 0, sizeof(tb));
    tb.x = (uint16_t)x, tb.y = (uint16_t)y, tb.plane = (uint8_t)plane;
    tb.qp = (uint8_t)(plane ? b->qpc : b->qp);
    tb.flags = b->intra ? VIDK_HEVC_TB_INTRA | VIDK_HEVC_TB_ISLICE : 0;
    if (b->intra && plane == 0 && size == 0) tb.flags |= VIDK_HEVC_TB_DST;
    const int e = vidk_hevc_batch_add(&b->f->batch, (VidkHevcTbSize)size, &tb, res);
    if (e < 0) {
        b->err = e;
        return;
    }
    double abs_sum = 0;
    for (int i = 0; i < n * n; i++)
        abs_sum += abs(res[i]);
    b->f->mean_abs += abs_sum; /* normalised at the end */
    b->f->tbs[size]++;
    b->f->area[size] += (uint64_t)n * (uint64_t)n;
    b->f->samples += (uint64_t)n * (uint64_t)n;
}

static double variance(const int16_t *r, int n) {
    int64_t s = 0, s2 = 0;
    for (int i = 0; i < n * n; i++)
        s += r[i], s2 += (int64_t)r[i] * r[i];
    const double m = (double)s / (n * n);
    return (double)s2 / (n * n) - m * m;
}

static int push_leaf(Builder *b, int x, int y, int n) {
    if (b->nleaf == b->cap) {
        const size_t c = b->cap ? 2 * b->cap : 4096;
        uint32_t *p = realloc(b->leaf, c * sizeof(*p));
        if (!p) return b->err = VIDK_ERR(ENOMEM);
        b->leaf = p, b->cap = c;
    }
    /* x, y <= 8192 (14 bits each), log2n 2..5 */
    int l = 2;
    while ((1 << l) < n)
        l++;
    b->leaf[b->nleaf++] = (uint32_t)x | (uint32_t)y << 14 | (uint32_t)(l - 2) << 28;
    return 0;
}

/* Luma quadtree node (x, y, n): fixed distributions stop at their size, mixed by energy;
 * nodes crossing the picture edge are split, nodes outside dropped. */
static void node(Builder *b, int x, int y, int n) {
    if (b->err || x >= b->pw[0] || y >= b->ph[0]) return;
    const int inside = x + n <= b->pw[0] && y + n <= b->ph[0];
    int16_t res[MAX_N * MAX_N];
    int split = !inside;
    if (inside && n > 4) {
        if (b->dist != HW_DIST_MIXED) {
            split = n > (4 << b->dist);
        } else {
            block_residual(b, 0, x, y, n, res);
            const double t = b->split_k_qstep2 * (32.0 / n) * (32.0 / n);
            split = variance(res, n) > t;
        }
    }
    if (split) {
        if (n == 4) return; /* cannot happen: sizes are multiples of 8 */
        const int h = n / 2;
        node(b, x, y, h);
        node(b, x + h, y, h);
        node(b, x, y + h, h);
        node(b, x + h, y + h, h);
        return;
    }
    if (b->dist != HW_DIST_MIXED || n == 4) block_residual(b, 0, x, y, n, res);
    emit(b, 0, x, y, n, res);
    if (b->dist == HW_DIST_MIXED) push_leaf(b, x, y, n);
}

/* Chroma TBs of plane p from the luma leaves (4:2:0). */
static void chroma_pass(Builder *b, int p) {
    int16_t res[MAX_N * MAX_N];
    for (size_t i = 0; i < b->nleaf && !b->err; i++) {
        const int x = (int)(b->leaf[i] & 0x3fff), y = (int)((b->leaf[i] >> 14) & 0x3fff);
        const int n = 4 << (b->leaf[i] >> 28);
        int cn = n / 2;
        if (n == 4) {
            if ((x & 7) || (y & 7)) continue; /* one chroma 4x4 per split 8x8 */
            cn = 4;
        }
        block_residual(b, p, x / 2, y / 2, cn, res);
        emit(b, p, x / 2, y / 2, cn, res);
    }
}

/* ------------------------------------------------------------------ frames */

static int build_frame(HwFrame *f, const HwSpec *s, const HwParams *p, const VidkPicture *cur,
                       const VidkPicture *ref, int intra, char *err, size_t errlen) {
    Builder b;
    memset(&b, 0, sizeof(b));
    int16_t *rp[3] = {NULL, NULL, NULL};
    VidkMeField field;
    memset(&field, 0, sizeof(field));
    Plane src[3];
    const int np = s->chroma == VIDK_CHROMA_400 ? 1 : 3;
    int e = 0;
    vidk_hevc_batch_init(&f->batch, 8);
    f->intra = intra;
    for (int i = 0; i < np; i++) {
        src[i] = plane_of(cur, i);
        b.pw[i] = src[i].w, b.ph[i] = src[i].h;
    }
    if (!intra) {
        VidkMeParams mp;
        vidk_me_default_params(&mp);
        mp.range = p->me_range;
        mp.shapes = VIDK_ME_SHAPE(VIDK_BLOCK_16x16);
        if ((e = vidk_me_field_alloc(&field, cur->w, cur->h, mp.shapes)) < 0 ||
            (e = vidk_me_search(p->ctx, cur, ref, &mp, &field)) < 0) {
            snprintf(err, errlen, "motion search: %s", vidk_strerror(e));
            goto out;
        }
        for (int i = 0; i < np; i++) {
            const Plane r = plane_of(ref, i);
            if (!(rp[i] = malloc((size_t)src[i].w * (size_t)src[i].h * sizeof(int16_t)))) {
                e = VIDK_ERR(ENOMEM);
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            inter_plane(rp[i], &src[i], &r, &field, i ? 1 : 0);
            b.rp[i] = rp[i];
        }
    }
    b.f = f;
    b.intra = intra;
    b.qp = p->qp;
    b.qpc = hw_chroma_qp(p->qp);
    b.split_k_qstep2 = HW_SPLIT_K * pow(2.0, (p->qp - 4) / 3.0);
    b.dist = s->dist;
    b.src = src;
    /* Fixed distributions walk blocks of their own size (raster), mixed 32x32 blocks. */
    const int root = s->dist == HW_DIST_MIXED ? 32 : 4 << s->dist;
    for (int y = 0; y < s->h && !b.err; y += root)
        for (int x = 0; x < s->w && !b.err; x += root)
            node(&b, x, y, root);
    for (int i = 1; i < np && !b.err; i++)
        chroma_pass(&b, i);
    if ((e = b.err) < 0) {
        snprintf(err, errlen, "building the TB lists: %s", vidk_strerror(e));
        goto out;
    }
    f->mean_abs = f->samples ? f->mean_abs / (double)f->samples : 0;
out:
    free(b.leaf);
    for (int i = 0; i < 3; i++)
        free(rp[i]);
    vidk_me_field_free(&field);
    return e;
}

static int make_picture(VidkPicture *pic, const HwSpec *s, const HwParams *p, VidkGen *g,
                        int k) {
    int e = vidk_picture_alloc(pic, s->w, s->h, s->chroma, 8, 32);
    if (e < 0) return e;
    e = p->source == HW_SOURCE_REAL ? mosaic_frame(p->mosaic, k, pic)
                                    : vidk_gen_frame(g, k, pic);
    if (e < 0) vidk_picture_free(pic);
    return e;
}

int hw_build(HwWorkload *w, const HwSpec *s, const HwParams *p, char *err, size_t errlen) {
    memset(w, 0, sizeof(*w));
    w->spec = *s;
    const double t0 = cli_now();
    if (p->frames < 1 || p->frames > 64 || p->qp < 0 || p->qp > 51 || !p->ctx ||
        (p->source == HW_SOURCE_REAL && !p->mosaic)) {
        snprintf(err, errlen, "bad workload parameters");
        return VIDK_ERR(EINVAL);
    }
    VidkGen *g = NULL;
    VidkPicture pic[2];
    memset(pic, 0, sizeof(pic));
    int e = 0;
    if (p->source == HW_SOURCE_GEN) {
        VidkGenParams gp;
        vidk_gen_default(&gp);
        gp.w = s->w, gp.h = s->h, gp.frames = p->frames + 1, gp.chroma = s->chroma;
        if ((e = vidk_gen_open(&g, &gp)) < 0) {
            snprintf(err, errlen, "generator: %s", vidk_strerror(e));
            return e;
        }
        snprintf(w->source, sizeof(w->source), "generated (vidkern gen, seed %u)",
                 (unsigned)gp.seed);
    } else {
        snprintf(w->source, sizeof(w->source), "%s", mosaic_describe(p->mosaic));
    }
    if (!(w->frames = calloc((size_t)p->frames, sizeof(*w->frames)))) {
        e = VIDK_ERR(ENOMEM);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* Source picture k + 1 is coded against picture k: keep two pictures rolling. */
    if ((e = make_picture(&pic[0], s, p, g, 0)) < 0) {
        snprintf(err, errlen, "source picture 0: %s", vidk_strerror(e));
        goto out;
    }
    for (int k = 0; k < p->frames; k++) {
        VidkPicture *ref = &pic[k & 1], *cur = &pic[(k + 1) & 1];
        vidk_picture_free(cur);
        if ((e = make_picture(cur, s, p, g, k + 1)) < 0) {
            snprintf(err, errlen, "source picture %d: %s", k + 1, vidk_strerror(e));
            goto out;
        }
        w->nframes = k + 1; /* hw_free frees what was built */
        if ((e = build_frame(&w->frames[k], s, p, cur, ref, k == 0, err, errlen)) < 0) goto out;
    }
out:
    vidk_picture_free(&pic[0]);
    vidk_picture_free(&pic[1]);
    vidk_gen_close(&g);
    w->build_s = cli_now() - t0;
    if (e < 0) hw_free(w);
    return e;
}

void hw_free(HwWorkload *w) {
    if (!w) return;
    for (int i = 0; i < w->nframes; i++)
        vidk_hevc_batch_free(&w->frames[i].batch);
    free(w->frames);
    memset(w, 0, sizeof(*w));
}
