/* The test-video generator (tools/gen.h) and `vidkern gen`.
 *
 *   test_gen                      generator tests (ctest `gen`)
 *   test_gen --video DIR          also compare block statistics with the real clips in DIR
 *   test_gen --cli VIDKERN TMPDIR CLI end-to-end tests (ctest `cli_gen`)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gen.h"
#include "picio.h"
#include "test_util.h"

/* ---- helpers ------------------------------------------------------------------------ */

static int sample(const VidkPicture *p, int plane, int x, int y) {
    const uint8_t *row = (const uint8_t *)p->data[plane] + (ptrdiff_t)y * p->stride[plane];
    return p->bitdepth > 8 ? ((const uint16_t *)row)[x] : row[x];
}

static int pic_planes(const VidkPicture *p) {
    return p->chroma == VIDK_CHROMA_400 ? 1 : 3;
}

/* Visible samples equal? */
static int pic_equal(const VidkPicture *a, const VidkPicture *b) {
    for (int c = 0; c < pic_planes(a); c++) {
        int w, h;
        vidk_picture_plane_size(a, c, &w, &h);
        const size_t bytes = (size_t)w * (a->bitdepth > 8 ? 2 : 1);
        for (int y = 0; y < h; y++)
            if (memcmp((const uint8_t *)a->data[c] + y * a->stride[c],
                       (const uint8_t *)b->data[c] + y * b->stride[c], bytes))
                return 0;
    }
    return 1;
}

static VidkGen *gen_open(int w, int h, int bd, VidkChroma c, uint32_t seed) {
    VidkGenParams p;
    vidk_gen_default(&p);
    p.w = w;
    p.h = h;
    p.bitdepth = bd;
    p.chroma = c;
    p.seed = seed;
    VidkGen *g = NULL;
    CHECK(vidk_gen_open(&g, &p) == 0);
    return g;
}

static int pic_alloc(VidkPicture *p, int w, int h, int bd, VidkChroma c, int pad) {
    const int e = vidk_picture_alloc(p, w, h, c, bd, pad);
    CHECK(e == 0);
    return e;
}

/* 8-bit luma SAD of the bw x bh block at (x, y) of cur against ref at (x+dx, y+dy);
 * the caller keeps both inside the picture. */
static uint32_t sad_block(const VidkPicture *cur, const VidkPicture *ref, int x, int y, int dx,
                          int dy, int bw, int bh) {
    uint32_t s = 0;
    for (int j = 0; j < bh; j++)
        for (int i = 0; i < bw; i++) {
            const int d = sample(cur, 0, x + i, y + j) - sample(ref, 0, x + dx + i, y + dy + j);
            s += (uint32_t)(d < 0 ? -d : d);
        }
    return s;
}

/* Does the rectangle [x, x+w) x [y, y+h) touch any object of frame t? */
static int hits_object(const VidkGen *g, int t, int x, int y, int w, int h) {
    VidkGenObject obj[16];
    const int n = vidk_gen_objects(g, t, obj, 16);
    CHECK(n >= 4 && n <= 8);
    for (int k = 0; k < n && k < 16; k++)
        if (x < obj[k].x + obj[k].w && obj[k].x < x + w && y < obj[k].y + obj[k].h &&
            obj[k].y < y + h)
            return 1;
    return 0;
}

/* SAD of the B x B block at (x, y) of cur against ref interpolated bilinearly at
 * (x + dx16 / 16, y + dy16 / 16), 1/16-sample weights, rounded. */
static uint32_t sad_subpel(const VidkPicture *cur, const VidkPicture *ref, int x, int y,
                           int64_t dx16, int64_t dy16, int B) {
    const int ix = (int)((dx16 + 1024) / 16 - 64), iy = (int)((dy16 + 1024) / 16 - 64);
    const int fx = (int)(dx16 - 16 * ix), fy = (int)(dy16 - 16 * iy);
    uint32_t s = 0;
    for (int j = 0; j < B; j++)
        for (int i = 0; i < B; i++) {
            const int rx = x + ix + i, ry = y + iy + j;
            const int v = (sample(ref, 0, rx, ry) * (16 - fx) * (16 - fy) +
                           sample(ref, 0, rx + 1, ry) * fx * (16 - fy) +
                           sample(ref, 0, rx, ry + 1) * (16 - fx) * fy +
                           sample(ref, 0, rx + 1, ry + 1) * fx * fy + 128) >>
                          8;
            const int d = sample(cur, 0, x + i, y + j) - v;
            s += (uint32_t)(d < 0 ? -d : d);
        }
    return s;
}

static int64_t div_round(int64_t a, int64_t b) /* b > 0 */
{
    return a >= 0 ? (a + b / 2) / b : -((-a + b / 2) / b);
}

/* ---- tests --------------------------------------------------------------------------- */

static void test_params(void) {
    VidkGenParams p;
    vidk_gen_default(&p);
    CHECK(p.w == 352 && p.h == 288 && p.frames == 30 && p.bitdepth == 8 && p.seed == 1 &&
          p.chroma == VIDK_CHROMA_420);
    VidkGen *g = (VidkGen *)&p;
    CHECK(vidk_gen_open(&g, NULL) == VIDK_ERR(EINVAL));
    CHECK(g == NULL);
    CHECK(vidk_gen_open(NULL, &p) == VIDK_ERR(EINVAL));
    const VidkGenParams good = p;
    p.w = 0;
    CHECK(vidk_gen_open(&g, &p) == VIDK_ERR(EINVAL));
    p = good;
    p.h = VIDK_MAX_PICTURE_SIDE + 1;
    CHECK(vidk_gen_open(&g, &p) == VIDK_ERR(EINVAL));
    p = good;
    p.bitdepth = 7;
    CHECK(vidk_gen_open(&g, &p) == VIDK_ERR(EINVAL));
    p.bitdepth = 16;
    CHECK(vidk_gen_open(&g, &p) == VIDK_ERR(EINVAL));
    p = good;
    p.frames = 0;
    CHECK(vidk_gen_open(&g, &p) == VIDK_ERR(EINVAL));
    p = good;
    p.chroma = (VidkChroma)7;
    CHECK(vidk_gen_open(&g, &p) == VIDK_ERR(EINVAL));
    CHECK(g == NULL);
    vidk_gen_close(NULL);
    vidk_gen_close(&g);

    /* mismatched pictures are refused */
    CHECK(vidk_gen_open(&g, &good) == 0);
    VidkPicture pic;
    if (pic_alloc(&pic, 352, 288, 8, VIDK_CHROMA_420, 0)) return;
    CHECK(vidk_gen_frame(g, -1, &pic) == VIDK_ERR(EINVAL));
    CHECK(vidk_gen_frame(g, 0, NULL) == VIDK_ERR(EINVAL));
    CHECK(vidk_gen_frame(NULL, 0, &pic) == VIDK_ERR(EINVAL));
    pic.w = 351;
    CHECK(vidk_gen_frame(g, 0, &pic) == VIDK_ERR(EINVAL));
    pic.w = 352;
    pic.bitdepth = 10;
    CHECK(vidk_gen_frame(g, 0, &pic) == VIDK_ERR(EINVAL));
    pic.bitdepth = 8;
    pic.chroma = VIDK_CHROMA_444;
    CHECK(vidk_gen_frame(g, 0, &pic) == VIDK_ERR(EINVAL));
    pic.chroma = VIDK_CHROMA_420;
    CHECK(vidk_gen_frame(g, 0, &pic) == 0);
    int64_t x, y;
    CHECK(vidk_gen_pan(g, -1, &x, &y) == VIDK_ERR(EINVAL));
    CHECK(vidk_gen_pan(g, 3, NULL, &y) == VIDK_ERR(EINVAL));
    CHECK(vidk_gen_objects(g, -1, NULL, 0) == VIDK_ERR(EINVAL));
    CHECK(vidk_gen_objects(g, 0, NULL, 1) == VIDK_ERR(EINVAL));
    const int n = vidk_gen_objects(g, 0, NULL, 0);
    CHECK(n >= 4 && n <= 8);
    vidk_picture_free(&pic);
    vidk_gen_close(&g);
    CHECK(g == NULL);
}

/* Same params twice = same bytes; any frame order = same frames; other seeds differ;
 * frames differ from each other. */
static void test_determinism(uint32_t seed) {
    enum { N = 6 };
    const int w = 176, h = 144;
    VidkGen *g1 = gen_open(w, h, 8, VIDK_CHROMA_420, seed);
    VidkGen *g2 = gen_open(w, h, 8, VIDK_CHROMA_420, seed);
    VidkGen *g3 = gen_open(w, h, 8, VIDK_CHROMA_420, seed + 1);
    VidkPicture seq[N], one, other;
    for (int t = 0; t < N; t++)
        pic_alloc(&seq[t], w, h, 8, VIDK_CHROMA_420, 16);
    pic_alloc(&one, w, h, 8, VIDK_CHROMA_420, 0);
    pic_alloc(&other, w, h, 8, VIDK_CHROMA_420, 0);
    if (!g1 || !g2 || !g3) return;
    for (int t = 0; t < N; t++)
        CHECK(vidk_gen_frame(g1, t, &seq[t]) == 0);
    /* a fresh generator, frames in reverse order, into a picture without padding */
    for (int t = N - 1; t >= 0; t--) {
        CHECK(vidk_gen_frame(g2, t, &one) == 0);
        CHECK(pic_equal(&one, &seq[t]));
    }
    /* rendering does not depend on params.frames */
    VidkGenParams p;
    vidk_gen_default(&p);
    p.w = w;
    p.h = h;
    p.seed = seed;
    p.frames = 1000;
    VidkGen *g4 = NULL;
    CHECK(vidk_gen_open(&g4, &p) == 0);
    if (g4) {
        CHECK(vidk_gen_frame(g4, 3, &one) == 0);
        CHECK(pic_equal(&one, &seq[3]));
    }
    vidk_gen_close(&g4);
    for (int t = 0; t < N; t++) {
        CHECK(vidk_gen_frame(g3, t, &other) == 0);
        /* another seed: most samples differ */
        int diff = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                diff += sample(&other, 0, x, y) != sample(&seq[t], 0, x, y);
        CHECK(diff > w * h / 2);
        if (t) CHECK(!pic_equal(&seq[t], &seq[t - 1]));
    }
    for (int t = 0; t < N; t++)
        vidk_picture_free(&seq[t]);
    vidk_picture_free(&one);
    vidk_picture_free(&other);
    vidk_gen_close(&g1);
    vidk_gen_close(&g2);
    vidk_gen_close(&g3);
}

/* Checksums of a few frames, pinned when the algorithm was finalised. They do not show
 * the output is right (the other tests do that); they show it is the same on every
 * machine, compiler and optimisation level, and catch accidental changes of the stream
 * (a change on purpose re-pins them, from the values printed on failure). */
static uint32_t pic_fnv(const VidkPicture *p) {
    uint32_t hsh = 2166136261u;
    for (int c = 0; c < pic_planes(p); c++) {
        int w, h;
        vidk_picture_plane_size(p, c, &w, &h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                hsh ^= (uint32_t)sample(p, c, x, y);
                hsh *= 16777619u;
            }
    }
    return hsh;
}

/* Sizes (odd ones included), chroma formats, bit depths: values in range, pictures not
 * flat, the margin padded by edge replication. */
static void test_sizes(void) {
    static const int sizes[][2] = {{16, 16}, {17, 9},   {1, 1},
                                   {33, 65}, {100, 17}, {1920, 1080}};
    static const VidkChroma chromas[] = {VIDK_CHROMA_420, VIDK_CHROMA_422, VIDK_CHROMA_444,
                                         VIDK_CHROMA_400};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t c = 0; c < 4; c++)
            for (int bd = 8; bd <= 12; bd += 2) {
                const int w = sizes[s][0], h = sizes[s][1];
                if (w * h > 100000 && (c || bd != 8)) continue; /* HD once */
                VidkGen *g = gen_open(w, h, bd, chromas[c], 7);
                VidkPicture pic;
                if (!g || pic_alloc(&pic, w, h, bd, chromas[c], 8)) continue;
                CHECK(vidk_gen_frame(g, 11, &pic) == 0);
                const int maxv = (1 << bd) - 1;
                for (int pl = 0; pl < pic_planes(&pic); pl++) {
                    int pw, ph;
                    vidk_picture_plane_size(&pic, pl, &pw, &ph);
                    int lo = maxv, hi = 0, bad = 0, pad_bad = 0;
                    for (int y = 0; y < ph; y++)
                        for (int x = 0; x < pw; x++) {
                            const int v = sample(&pic, pl, x, y);
                            bad += v > maxv;
                            lo = v < lo ? v : lo;
                            hi = v > hi ? v : hi;
                        }
                    CHECK(!bad);
                    if (pw * ph >= (pl ? 1024 : 64))
                        CHECK(hi - lo > (maxv + 1) / (pl ? 64 : 16));
                    /* left/right margins of every row, top/bottom rows of the margin */
                    const int px = 8 >> (pl && chromas[c] != VIDK_CHROMA_444);
                    const int py = 8 >> (pl && chromas[c] == VIDK_CHROMA_420);
                    for (int y = -py; y < ph + py; y++) {
                        const int cy = TCLIP(y, 0, ph - 1);
                        for (int x = -px; x < pw + px; x++) {
                            const int cx = TCLIP(x, 0, pw - 1);
                            pad_bad += sample(&pic, pl, x, y) != sample(&pic, pl, cx, cy);
                        }
                    }
                    CHECK(!pad_bad);
                }
                vidk_picture_free(&pic);
                vidk_gen_close(&g);
            }
}

/* The luma plane does not depend on the chroma format. */
static void test_formats(void) {
    const int w = 120, h = 70;
    VidkPicture ref, pic;
    VidkGen *g0 = gen_open(w, h, 8, VIDK_CHROMA_420, 21);
    if (!g0 || pic_alloc(&ref, w, h, 8, VIDK_CHROMA_420, 0)) return;
    CHECK(vidk_gen_frame(g0, 9, &ref) == 0);
    for (int c = VIDK_CHROMA_400; c <= VIDK_CHROMA_444; c++) {
        VidkGen *g = gen_open(w, h, 8, (VidkChroma)c, 21);
        if (!g || pic_alloc(&pic, w, h, 8, (VidkChroma)c, 0)) continue;
        CHECK(vidk_gen_frame(g, 9, &pic) == 0);
        int diff = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                diff += sample(&pic, 0, x, y) != sample(&ref, 0, x, y);
        CHECK(!diff);
        vidk_picture_free(&pic);
        vidk_gen_close(&g);
    }
    vidk_picture_free(&ref);
    vidk_gen_close(&g0);
}

/* 10 bit: in [0, 1023], all 10 bits carry information, and the same picture as 8 bit up
 * to rounding (the same 12-bit image, rounded twice). */
static void test_10bit(void) {
    const int w = 352, h = 288;
    VidkGen *g8 = gen_open(w, h, 8, VIDK_CHROMA_420, 3);
    VidkGen *g10 = gen_open(w, h, 10, VIDK_CHROMA_420, 3);
    VidkPicture p8, p10;
    if (!g8 || !g10 || pic_alloc(&p8, w, h, 8, VIDK_CHROMA_420, 0) ||
        pic_alloc(&p10, w, h, 10, VIDK_CHROMA_420, 0))
        return;
    CHECK(vidk_gen_frame(g8, 5, &p8) == 0);
    CHECK(vidk_gen_frame(g10, 5, &p10) == 0);
    static int hist[1024];
    memset(hist, 0, sizeof(hist));
    int out = 0, low_bits = 0, far = 0, hi = 0;
    for (int pl = 0; pl < 3; pl++) {
        int pw, ph;
        vidk_picture_plane_size(&p10, pl, &pw, &ph);
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                const int v = sample(&p10, pl, x, y), v8 = sample(&p8, pl, x, y);
                if (v > 1023) {
                    out++;
                    continue;
                }
                hist[v]++;
                low_bits += (v & 3) != 0;
                hi = v > hi ? v : hi;
                const int d = ((v + 2) >> 2) - v8;
                far += d < -1 || d > 1;
            }
    }
    int distinct = 0;
    for (int v = 0; v < 1024; v++)
        distinct += hist[v] != 0;
    CHECK(!out);
    CHECK(!far);
    CHECK(hi > 900);
    CHECK(distinct > 600);       /* > 256: not 8-bit data shifted */
    CHECK(low_bits > w * h / 2); /* about 3/4 of the samples for real 10-bit data */
    vidk_picture_free(&p8);
    vidk_picture_free(&p10);
    vidk_gen_close(&g8);
    vidk_gen_close(&g10);
}

/* Motion is real and recoverable: for background blocks away from every object, the SAD at
 * the true pan is far below the SAD at zero motion, and a full search finds the true pan
 * (exactly for integer pans, within one sample for sub-sample ones). Object blocks match
 * at the objects' true vectors. */
static void test_motion(uint32_t seed, int w, int h, int bd) {
    enum { B = 16, R = 10 };
    VidkGen *g = gen_open(w, h, bd, VIDK_CHROMA_420, seed);
    VidkPicture cur, ref;
    if (!g || pic_alloc(&cur, w, h, bd, VIDK_CHROMA_420, 0) ||
        pic_alloc(&ref, w, h, bd, VIDK_CHROMA_420, 0))
        return;
    const int verbose = getenv("TEST_GEN_VERBOSE") != NULL;
    int n_int = 0, n_frac = 0, n_obj = 0, n_tie = 0;
    /* [0] integer pans, [1] sub-sample pans; summed over the frames checked */
    uint64_t s_true[2] = {0, 0}, s_zero[2] = {0, 0}, s_samples[2] = {0, 0};
    int found[2] = {0, 0}, searched[2] = {0, 0};
    uint64_t obj_true = 0, obj_zero = 0;
    uint64_t half_true = 0, half_off = 0;
    /* at least 3 frames and 40 searched blocks of each kind of pan (more frames for
     * small pictures) */
#define MOTION_DONE(k) ((k ? n_frac : n_int) >= 3 && searched[k] >= 40)
    for (int t = 1; t < 1000 && !(MOTION_DONE(0) && MOTION_DONE(1)); t++) {
        int64_t x0, y0, x1, y1;
        CHECK(vidk_gen_pan(g, t - 1, &x0, &y0) == 0);
        CHECK(vidk_gen_pan(g, t, &x1, &y1) == 0);
        const int64_t dx16 = x1 - x0, dy16 = y1 - y0;
        CHECK(dx16 || dy16); /* the camera never stops */
        CHECK(dx16 >= -8 * 16 && dx16 <= 8 * 16 && dy16 >= -8 * 16 && dy16 <= 8 * 16);
        const int frac = dx16 % 16 != 0 || dy16 % 16 != 0;
        if (MOTION_DONE(frac)) continue;
        const int mvx = (int)div_round(dx16, 16), mvy = (int)div_round(dy16, 16);
        CHECK(vidk_gen_frame(g, t - 1, &ref) == 0);
        CHECK(vidk_gen_frame(g, t, &cur) == 0);
        uint64_t st = 0, sz = 0;
        int blocks = 0, fnd = 0, srch = 0;
        for (int by = R; by + B + R <= h; by += B)
            for (int bx = R; bx + B + R <= w; bx += B) {
                /* the block and its whole search area are background in both frames */
                if (hits_object(g, t, bx - R, by - R, B + 2 * R, B + 2 * R) ||
                    hits_object(g, t - 1, bx - R, by - R, B + 2 * R, B + 2 * R))
                    continue;
                blocks++;
                st += frac ? sad_subpel(&cur, &ref, bx, by, dx16, dy16, B)
                           : sad_block(&cur, &ref, bx, by, mvx, mvy, B, B);
                sz += sad_block(&cur, &ref, bx, by, 0, 0, B, B);
                if ((bx / B + by / B) % 3) continue; /* full search on a third */
                uint32_t best = UINT32_MAX;
                int bmx = 0, bmy = 0;
                for (int my = -R; my <= R; my++)
                    for (int mx = -R; mx <= R; mx++) {
                        const uint32_t s = sad_block(&cur, &ref, bx, by, mx, my, B, B);
                        if (s < best) best = s, bmx = mx, bmy = my;
                    }
                srch++;
                const int ex = bmx - mvx, ey = bmy - mvy;
                fnd += frac ? ex >= -1 && ex <= 1 && ey >= -1 && ey <= 1 : !ex && !ey;
                if (!frac) continue;
                /* the true sub-sample vector beats the vectors half a sample off it:
                 * rendering really is sub-sample (summed over blocks) */
                const uint32_t s0 = sad_subpel(&cur, &ref, bx, by, dx16, dy16, B);
                uint32_t s1 = UINT32_MAX;
                for (int k = 0; k < 4; k++) {
                    static const int off[4][2] = {{-8, 0}, {8, 0}, {0, -8}, {0, 8}};
                    const uint32_t s =
                        sad_subpel(&cur, &ref, bx, by, dx16 + off[k][0], dy16 + off[k][1], B);
                    s1 = s < s1 ? s : s1;
                }
                half_true += s0;
                half_off += s1;
            }
        if (blocks < 4) continue; /* objects cover nearly everything: nothing to measure */
        frac ? n_frac++ : n_int++;
        s_true[frac] += st;
        s_zero[frac] += sz;
        s_samples[frac] += (uint64_t)blocks * B * B;
        found[frac] += fnd;
        searched[frac] += srch;
        if (verbose)
            fprintf(stderr,
                    "motion seed %u %dx%d frame %d: pan %+.4g,%+.4g: %d blocks, "
                    "SAD true/zero %.3f, search %d/%d\n",
                    seed, w, h, t, dx16 / 16.0, dy16 / 16.0, blocks,
                    (double)st / (double)(sz ? sz : 1), fnd, srch);

        /* objects fully inside both frames and not overlapped by another: the centre
         * 8x8 of the bounding box matches at the object's vector */
        VidkGenObject o[8], op[8];
        const int n = vidk_gen_objects(g, t, o, 8);
        vidk_gen_objects(g, t - 1, op, 8);
        for (int k = 0; k < n; k++) {
            const int cx = o[k].x + o[k].w / 2 - 4, cy = o[k].y + o[k].h / 2 - 4;
            const int rx = cx + o[k].mvx, ry = cy + o[k].mvy;
            if (o[k].w < 16 || o[k].h < 16 || cx < 0 || cy < 0 || cx + 8 > w || cy + 8 > h ||
                rx < 0 || ry < 0 || rx + 8 > w || ry + 8 > h || (!o[k].mvx && !o[k].mvy))
                continue;
            /* a wrap-around jump is no motion to find */
            if (o[k].mvx > 24 || o[k].mvx < -24 || o[k].mvy > 24 || o[k].mvy < -24) continue;
            int covered = 0;
            for (int j = k + 1; j < n; j++) {
                covered |= cx < o[j].x + o[j].w && o[j].x < cx + 8 && cy < o[j].y + o[j].h &&
                           o[j].y < cy + 8;
                covered |= rx < op[j].x + op[j].w && op[j].x < rx + 8 &&
                           ry < op[j].y + op[j].h && op[j].y < ry + 8;
            }
            if (covered) continue;
            const uint32_t ot = sad_block(&cur, &ref, cx, cy, o[k].mvx, o[k].mvy, 8, 8);
            const uint32_t oz = sad_block(&cur, &ref, cx, cy, 0, 0, 8, 8);
            /* An object on a flat stretch of itself (a uniform object, or its flat part
             * under the centre 8x8) matches at (0, 0) exactly as well as at its vector:
             * both vectors are right answers (seed 1795552424 draws one), so an equal SAD
             * counts as equivalent, not as a miss; the true vector must never be worse.
             * Likewise a nearly flat object whose (0, 0) match is itself within the noise
             * bound below (seed 1795570720: 92 at the vector, 85 at zero): the noise, not
             * the motion, decides between them. */
            const uint32_t noise = (uint32_t)(64 * 4) << (bd - 8);
            if (ot == oz || (ot <= noise && oz <= noise)) {
                n_tie++;
                continue;
            }
            n_obj++;
            obj_true += ot;
            obj_zero += oz;
            /* only noise and the brightness change remain: < 4 per sample at 8 bit */
            if (ot > noise || ot > oz) {
                fprintf(stderr, "object %d seed %u frame %d mv %d,%d: SAD %u vs zero %u\n", k,
                        seed, t, o[k].mvx, o[k].mvy, ot, oz);
                CHECK(0);
            }
        }
    }
    CHECK(MOTION_DONE(0) && MOTION_DONE(1));
#undef MOTION_DONE
    double ratio[2], per[2];
    for (int k = 0; k < 2; k++) {
        ratio[k] = (double)s_true[k] / (double)(s_zero[k] ? s_zero[k] : 1);
        /* per sample, at 8-bit scale */
        per[k] =
            (double)s_true[k] / (double)(s_samples[k] ? s_samples[k] : 1) / (1 << (bd - 8));
    }
    const double robj = (double)obj_true / (double)(obj_zero ? obj_zero : 1);
    /* equivalent (flat) object blocks stay the exception: more of them than of the others
     * by over two standard deviations of an even split. Not judged in small pictures: their
     * few objects are the same few blocks frame after frame (at 160x128, seed 1795748491
     * drew 11 flat against 9 and seed 739537233 7 against 0: one flat object) */
    if (w >= 200 && h >= 200 && n_tie > n_obj + 2.0 * sqrt((double)(n_tie + n_obj))) {
        fprintf(stderr, "motion seed %u: %d object blocks flat (true = zero SAD), %d not\n",
                seed, n_tie, n_obj);
        CHECK(0);
    }
    fprintf(stderr,
            "motion seed %u %dx%d %d-bit: integer pans: SAD true/zero %.3f (%.2f per sample), "
            "search %d/%d exact; sub-sample pans: SAD true/zero %.3f, search %d/%d within 1; "
            "SAD true/half-off %.3f; %d object blocks: SAD true/zero %.3f\n",
            seed, w, h, bd, ratio[0], per[0], found[0], searched[0], ratio[1], found[1],
            searched[1], (double)half_true / (double)(half_off ? half_off : 1), n_obj, robj);
    /* integer pan: only noise and the brightness change remain (measured 0.04..0.16) */
    CHECK(ratio[0] < 0.25 && per[0] < 2.0);
    CHECK(found[0] * 20 >= searched[0] * 19);
    /* sub-sample pan, reference interpolated at the true vector (measured 0.07..0.23);
     * the integer search lands next to it, except in a few weakly textured blocks */
    CHECK(ratio[1] < 0.35);
    CHECK(found[1] * 4 >= searched[1] * 3);
    /* measured 0.53..0.75; small pictures, few blocks: 0.877 (160x128, seed 1796125217) */
    CHECK(w < 200 || h < 200 ? half_true * 20 < half_off * 19 : half_true * 20 < half_off * 17);
    /* objects: exact integer motion, only noise and the brightness change remain */
    CHECK(n_obj + n_tie >= 3 ||
          (w < 200 || h < 200)); /* small pictures: few objects >= 16x16 */
    CHECK(robj < 0.5);
    CHECK((double)obj_true / (n_obj ? 64.0 * n_obj : 1.0) / (1 << (bd - 8)) < 2.0);
    vidk_picture_free(&cur);
    vidk_picture_free(&ref);
    vidk_gen_close(&g);
}

/* Objects move at up to ~20 samples per frame, some leave the picture. */
static void test_objects(void) {
    VidkGen *g = gen_open(1280, 720, 8, VIDK_CHROMA_420, 1);
    if (!g) return;
    int fastest = 0, left = 0, still_inside = 0;
    VidkGenObject o[8];
    const int n = vidk_gen_objects(g, 0, o, 8);
    for (int t = 1; t < 300; t++) {
        CHECK(vidk_gen_objects(g, t, o, 8) == n);
        for (int k = 0; k < n; k++) {
            const int m = abs(o[k].mvx) > abs(o[k].mvy) ? abs(o[k].mvx) : abs(o[k].mvy);
            if (m < 100) fastest = m > fastest ? m : fastest; /* not a wrap jump */
            const int out =
                o[k].x + o[k].w <= 0 || o[k].x >= 1280 || o[k].y + o[k].h <= 0 || o[k].y >= 720;
            left += out;
            still_inside += !out;
        }
    }
    CHECK(fastest >= 12 && fastest <= 21);
    CHECK(left > 0);
    CHECK(still_inside > 0);
    vidk_gen_close(&g);
}

static void test_golden(void) {
    static const struct {
        int w, h, bd;
        VidkChroma c;
        uint32_t seed;
        int frame;
        uint32_t fnv;
    } v[] = {
        {64, 48, 8, VIDK_CHROMA_420, 1, 0, 0xa8e5e6b9},
        {64, 48, 8, VIDK_CHROMA_420, 1, 2, 0x1658eb03},
        {97, 35, 10, VIDK_CHROMA_422, 4000000000u, 77, 0xf22857a8},
        {40, 40, 8, VIDK_CHROMA_444, 12345, 1000, 0x016b0601},
        {31, 18, 12, VIDK_CHROMA_400, 9, 5, 0x6dc94d2e},
        {2100, 20, 8, VIDK_CHROMA_444, 3, 33, 0xa2cbbea3}, /* 2048 tile, wrapped */
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        VidkGen *g = gen_open(v[i].w, v[i].h, v[i].bd, v[i].c, v[i].seed);
        VidkPicture pic;
        if (!g || pic_alloc(&pic, v[i].w, v[i].h, v[i].bd, v[i].c, 0)) continue;
        CHECK(vidk_gen_frame(g, v[i].frame, &pic) == 0);
        const uint32_t f = pic_fnv(&pic);
        if (f != v[i].fnv) {
            fprintf(stderr, "golden %zu: fnv 0x%08x, expected 0x%08x\n", i, f, v[i].fnv);
            CHECK(0);
        }
        vidk_picture_free(&pic);
        vidk_gen_close(&g);
    }
}

/* ---- block statistics vs real video ------------------------------------------------ */

typedef struct BlockStats {
    double median_std; /* median standard deviation of 8x8 luma blocks (8-bit levels) */
    double flat;       /* fraction of 8x8 blocks with std < 1 */
    double rough;      /* mean |horizontal difference| / mean |sample - block mean|:
                          ~1.4 for white noise, lower for natural images */
} BlockStats;

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void block_stats(const VidkPicture *p, BlockStats *st) {
    const int nbx = p->w / 8, nby = p->h / 8;
    double *stds = malloc(sizeof(double) * (size_t)(nbx * nby));
    if (!stds) return;
    double dsum = 0, asum = 0;
    int n = 0, flat = 0;
    for (int by = 0; by < nby; by++)
        for (int bx = 0; bx < nbx; bx++) {
            double sum = 0, sq = 0;
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++) {
                    const double v = sample(p, 0, bx * 8 + x, by * 8 + y);
                    sum += v;
                    sq += v * v;
                }
            const double mean = sum / 64, var = sq / 64 - mean * mean;
            const double sd = var > 0 ? sqrt(var) : 0;
            stds[n++] = sd;
            flat += sd < 1.0;
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 8; x++) {
                    const double v = sample(p, 0, bx * 8 + x, by * 8 + y);
                    asum += v > mean ? v - mean : mean - v;
                    if (x < 7) dsum += abs(sample(p, 0, bx * 8 + x + 1, by * 8 + y) - (int)v);
                }
        }
    qsort(stds, (size_t)n, sizeof(double), cmp_double);
    st->median_std = stds[n / 2];
    st->flat = (double)flat / n;
    st->rough = (dsum / 7.0) / (asum / 8.0 + 1e-9);
    free(stds);
}

static void test_stats(const char *video_dir) {
    VidkGen *g = gen_open(352, 288, 8, VIDK_CHROMA_420, 1);
    VidkPicture pic;
    if (!g || pic_alloc(&pic, 352, 288, 8, VIDK_CHROMA_420, 0)) return;
    CHECK(vidk_gen_frame(g, 0, &pic) == 0);
    BlockStats gs;
    block_stats(&pic, &gs);
    fprintf(stderr, "generated 352x288: 8x8 median std %.2f, flat %.3f, roughness %.3f\n",
            gs.median_std, gs.flat, gs.rough);
    /* textured, not flat, not white noise */
    CHECK(gs.median_std > 3 && gs.median_std < 40);
    CHECK(gs.flat < 0.05);
    CHECK(gs.rough < 1.0);
    vidk_picture_free(&pic);
    vidk_gen_close(&g);

    /* Real clips: the generated statistics lie within the range spanned by camera video
     * (with a margin), so kernels and benchmarks see realistic blocks. */
    static const char *const clips[] = {
        "basketballpass_416x240_50fps_100f.y4m", "cars_320x240_30fps_30f.y4m",
        "container_352x288_30fps_15f.y4m", "akiyo_176x144_30fps_30f.y4m"};
    double std_lo = 1e9, std_hi = 0, rough_lo = 1e9, rough_hi = 0;
    int nclips = 0;
    for (size_t i = 0; video_dir && i < sizeof(clips) / sizeof(clips[0]); i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", video_dir, clips[i]);
        VioReader *r = NULL;
        char err[512];
        if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "skipping real clip: %s\n", err);
            continue;
        }
        VidkPicture rp;
        if (vio_picture_alloc(&rp, vio_reader_format(r)) == 0) {
            if (vio_reader_read(r, &rp) == 1) {
                BlockStats rs;
                block_stats(&rp, &rs);
                fprintf(stderr, "%s: 8x8 median std %.2f, flat %.3f, roughness %.3f\n",
                        clips[i], rs.median_std, rs.flat, rs.rough);
                std_lo = rs.median_std < std_lo ? rs.median_std : std_lo;
                std_hi = rs.median_std > std_hi ? rs.median_std : std_hi;
                rough_lo = rs.rough < rough_lo ? rs.rough : rough_lo;
                rough_hi = rs.rough > rough_hi ? rs.rough : rough_hi;
                nclips++;
            }
            vidk_picture_free(&rp);
        }
        vio_reader_close(&r);
    }
    if (nclips) {
        CHECK(gs.median_std > std_lo / 2 && gs.median_std < std_hi * 2);
        CHECK(gs.rough > rough_lo / 2 && gs.rough < rough_hi * 1.5);
    }
    if (nclips < (int)(sizeof(clips) / sizeof(clips[0])))
        test_video_missing("real clips missing: statistics not compared with camera video");
}

/* ---- CLI end-to-end ---------------------------------------------------------------- */

static int run(const char *cmd) {
    const int st = system(cmd);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        const size_t got = fread(buf + n, 1, cap - n, f);
        if (!got) break;
        n += got;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* The frames of a file equal the generator's, byte for byte. */
static void check_frames(const unsigned char *data, size_t len, size_t off, int raw, int w,
                         int h, int bd, VidkChroma c, uint32_t seed, int frames) {
    VidkGen *g = gen_open(w, h, bd, c, seed);
    VidkPicture pic;
    if (!g || pic_alloc(&pic, w, h, bd, c, 0)) return;
    const size_t bps = bd > 8 ? 2 : 1;
    for (int t = 0; t < frames; t++) {
        if (!raw) {
            CHECK(off + 6 <= len && !memcmp(data + off, "FRAME\n", 6));
            off += 6;
        }
        CHECK(vidk_gen_frame(g, t, &pic) == 0);
        for (int pl = 0; pl < pic_planes(&pic); pl++) {
            int pw, ph;
            vidk_picture_plane_size(&pic, pl, &pw, &ph);
            for (int y = 0; y < ph; y++) {
                const size_t n = (size_t)pw * bps;
                if (off + n > len) {
                    CHECK(0);
                    goto done;
                }
                /* 16-bit samples are little-endian in the file */
                int same = 1;
                for (int x = 0; x < pw; x++) {
                    const int v = sample(&pic, pl, x, y);
                    const int f = bps == 1 ? data[off + x]
                                           : data[off + 2 * x] | data[off + 2 * x + 1] << 8;
                    same &= v == f;
                }
                CHECK(same);
                off += n;
            }
        }
    }
    CHECK(off == len);
done:
    vidk_picture_free(&pic);
    vidk_gen_close(&g);
}

static void test_cli(const char *exe, const char *dir) {
    char cmd[8192], path[4096], path2[4096];
    snprintf(path, sizeof(path), "%s/cli_gen_out.y4m", dir);
    snprintf(path2, sizeof(path2), "%s/cli_gen_out.yuv", dir);
    remove(path);
    remove(path2);

    snprintf(cmd, sizeof(cmd), "'%s' gen --size 64x48 --frames 3 -o '%s'", exe, path);
    CHECK(run(cmd) == 0);
    size_t len = 0;
    unsigned char *d = slurp(path, &len);
    CHECK(d != NULL);
    if (d) {
        const unsigned char *nl = memchr(d, '\n', len < 1024 ? len : 1024);
        CHECK(nl != NULL);
        if (nl) {
            const size_t hl = (size_t)(nl - d) + 1;
            char hdr[1024];
            memcpy(hdr, d, hl - 1);
            hdr[hl - 1] = 0;
            fprintf(stderr, "header: %s\n", hdr);
            CHECK(!strncmp(hdr, "YUV4MPEG2 ", 10));
            CHECK(strstr(hdr, " W64 ") && strstr(hdr, " H48 ") && strstr(hdr, " F25:1"));
            CHECK(strstr(hdr, " C420") || !strstr(hdr, " C"));
            CHECK_EQ_U(len, hl + 3 * (6 + 64 * 48 * 3 / 2));
            check_frames(d, len, hl, 0, 64, 48, 8, VIDK_CHROMA_420, 1, 3);
        }
        free(d);
    }

    /* raw 10-bit 4:2:2, to stdout redirected to a file (stdout not a terminal) */
    snprintf(cmd, sizeof(cmd),
             "'%s' gen --size 33x17 --frames 2 --seed 99 --bitdepth 10 --chroma 422 --raw "
             "--fps 30000/1001 > '%s'",
             exe, path2);
    CHECK(run(cmd) == 0);
    d = slurp(path2, &len);
    CHECK(d != NULL);
    if (d) {
        CHECK_EQ_U(len, 2 * 2 * (33 * 17 + 2 * 17 * 17));
        check_frames(d, len, 0, 1, 33, 17, 10, VIDK_CHROMA_422, 99, 2);
        free(d);
    }
    snprintf(cmd, sizeof(cmd), "'%s' gen --size 16x16 --frames 1 --chroma 400 --fps 50 -o '%s'",
             exe, path);
    CHECK(run(cmd) == 0);
    d = slurp(path, &len);
    if (d) {
        CHECK(len > 20 && strstr((const char *)d, " F50:1") != NULL);
        free(d);
    }

    /* help and bad options */
    static const char *const bad[] = {
        "--size 64", "--size 0x16", "--frames 0", "--frames x", "--bitdepth 16", "--chroma 411",
        "--fps 0",   "--fps 25/",   "--seed -1",  "--bogus",    "--size",        "-o",
    };
    snprintf(cmd, sizeof(cmd), "'%s' gen --help > /dev/null", exe);
    CHECK(run(cmd) == 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(cmd, sizeof(cmd), "'%s' gen %s -o /dev/null 2> /dev/null", exe, bad[i]);
        if (!strcmp(bad[i], "-o")) snprintf(cmd, sizeof(cmd), "'%s' gen -o 2>/dev/null", exe);
        const int rc = run(cmd);
        if (rc != 1) fprintf(stderr, "'vidkern gen %s' exited %d, expected 1\n", bad[i], rc);
        CHECK(rc == 1);
    }
    snprintf(cmd, sizeof(cmd), "'%s' gen --frames 1 -o '%s/no/such/dir/x.y4m' 2> /dev/null",
             exe, dir);
    CHECK(run(cmd) == 1);
    remove(path);
    remove(path2);
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--cli")) {
        test_cli(argv[2], argv[3]);
        return test_finish("cli_gen");
    }
    const char *video = argc == 3 && !strcmp(argv[1], "--video") ? argv[2] : NULL;
    const uint32_t seed = test_seed();
    test_params();
    test_determinism(seed);
    test_determinism(1);
    test_golden();
    test_sizes();
    test_formats();
    test_10bit();
    test_objects();
    test_motion(1, 352, 288, 8);
    test_motion(seed, 352, 288, 8);
    test_motion(seed ^ 0x5555, 416, 240, 10);
    test_motion(seed + 77, 160, 128, 8);
    test_stats(video);
    return test_finish("gen");
}
