/* The coding loop's decisions against answers known in advance, written from docs/ENCODE.md
 * and the standards, never from the source:
 *
 *   - lambda: vidk_enc_lambda(qp) against round(sqrt(0.85 * 2^((qp - 12) / 3))), every QP;
 *   - chroma QP: H.264 Table 8-15 and HEVC Table 8-10, typed here from the standards, seen
 *     through the chroma DC level of a flat chroma block coded at every QP (the level is
 *     computed here from the forward transform and quantiser formulas);
 *   - Exp-Golomb lengths: vidk_ue_bits / vidk_se_bits (the loop's bit estimates, an internal
 *     header) against a count of the codewords in the order of H.264 9.1 / Table 9-3;
 *   - H.264 and HEVC partitions: the current frame is the previous reconstruction moved
 *     by known vectors per region, so the partition, every vector, the mode bits and a
 *     zero luma residual are known (QP 0, lambda 0, where the tie rules decide, and QP 24);
 *   - intra modes: flat pictures (every mode ties: the first in the documented order wins,
 *     seen in the mode bits), vertical stripes, horizontal stripes and a gradient (the
 *     energy map equals that of the vertical / horizontal / plane prediction computed here
 *     from the reconstruction).
 *
 * Everything runs on the c backend; the backends are compared with each other elsewhere.
 * Random texture is seeded (VIDK_TEST_SEED replays).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc/enc_core.h"
#include "test_h264_ref.h"
#include "test_util.h"

static uint32_t g_seed;

/* ------------------------------------------------------------------ an encoder run */

typedef struct Run {
    VidkContext *ctx;
    VidkEncoder *e;
    VidkEncGeometry g;
    VidkEncMaps maps;
    VidkPicture rec;
} Run;

static int run_open(Run *r, VidkCodec codec, int qp, int range, int w, int h) {
    memset(r, 0, sizeof(*r));
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = VIDK_BACKEND_C;
    if (vidk_open(&r->ctx, &s) < 0) return -1;
    VidkEncParams p;
    vidk_enc_default_params(&p);
    p.codec = codec;
    p.qp = qp;
    p.range = range;
    p.deblock = 0; /* the models below predict the unfiltered reconstruction */
    p.outputs = VIDK_ENC_OUT_ALL;
    if (vidk_enc_open(r->ctx, &r->e, &p, w, h) < 0) return -1;
    vidk_enc_geometry(r->e, &r->g);
    r->maps.mv = calloc((size_t)r->g.mv_w * r->g.mv_h, sizeof(VidkMv));
    r->maps.energy = calloc((size_t)r->g.mb_w * r->g.mb_h, sizeof(uint32_t));
    const size_t n = (size_t)r->g.coded_w * r->g.coded_h;
    r->maps.levels[0] = calloc(n, sizeof(int16_t));
    r->maps.levels[1] = calloc(n / 4, sizeof(int16_t));
    r->maps.levels[2] = calloc(n / 4, sizeof(int16_t));
    return vidk_picture_alloc(&r->rec, w, h, VIDK_CHROMA_420, 8, 0);
}

static int run_frame(Run *r, const VidkPicture *src, VidkEncFrameInfo *info) {
    int err = vidk_enc_send(r->e, src);
    if (err >= 0) err = vidk_enc_receive(r->e, &r->rec, &r->maps, info);
    CHECK(err >= 0);
    return err;
}

/* An encoder (search range 6) and two W x H pictures for its frames. */
static void open_two(Run *r, VidkCodec codec, int qp, int W, int H, VidkPicture *f0,
                     VidkPicture *f1) {
    CHECK(run_open(r, codec, qp, 6, W, H) == 0);
    CHECK(vidk_picture_alloc(f0, W, H, VIDK_CHROMA_420, 8, 0) == 0);
    CHECK(vidk_picture_alloc(f1, W, H, VIDK_CHROMA_420, 8, 0) == 0);
}

static void run_close(Run *r) {
    vidk_enc_close(&r->e);
    vidk_close(&r->ctx);
    free(r->maps.mv);
    free(r->maps.energy);
    for (int k = 0; k < 3; k++)
        free(r->maps.levels[k]);
    vidk_picture_free(&r->rec);
}

static uint8_t *px(const VidkPicture *p, int pl, int x, int y) {
    return (uint8_t *)p->data[pl] + (ptrdiff_t)y * p->stride[pl] + x;
}

static void fill_plane(VidkPicture *p, int pl, int v) {
    const int w = pl ? p->w / 2 : p->w, h = pl ? p->h / 2 : p->h;
    for (int y = 0; y < h; y++)
        memset(px(p, pl, 0, y), v, (size_t)w);
}

/* ------------------------------------------------------------------ lambda */

static void test_lambda(void) {
    for (int qp = 0; qp <= 51; qp++) {
        const double l = sqrt(0.85 * pow(2.0, (qp - 12) / 3.0));
        CHECK(fabs(l - floor(l) - 0.5) > 1e-6); /* no value sits on a rounding edge */
        const int want = (int)floor(l + 0.5);
        if (vidk_enc_lambda(qp) != want)
            fprintf(stderr, "lambda(%d) = %d, formula %d\n", qp, vidk_enc_lambda(qp), want);
        CHECK_EQ_U(vidk_enc_lambda(qp), want);
    }
    CHECK_EQ_U(vidk_enc_lambda(-3), vidk_enc_lambda(0));
    CHECK_EQ_U(vidk_enc_lambda(60), vidk_enc_lambda(51));
}

/* ------------------------------------------------------------------ Exp-Golomb lengths */

static void test_expgolomb(void) {
    /* H.264 9.1: the codewords of 2m + 1 bits (m leading zeros) are codeNum 2^m - 1 ..
     * 2^(m+1) - 2; count them in order. */
    enum { N = 1 << 17 };
    static unsigned len[N];
    unsigned k = 0;
    for (unsigned m = 0; k < N; m++)
        for (unsigned i = 0; i < (1u << m) && k < N; i++)
            len[k++] = 2 * m + 1;
    for (k = 0; k < N; k++)
        if (vidk_ue_bits(k) != len[k]) {
            fprintf(stderr, "ue(%u): %u bits, expected %u\n", k, vidk_ue_bits(k), len[k]);
            CHECK(0);
            break;
        }
    /* Table 9-3: codeNum k carries se value (-1)^(k+1) * Ceil(k / 2). */
    for (k = 0; k < N; k++) {
        const int v = (k & 1) ? (int)((k + 1) / 2) : -(int)(k / 2);
        if (vidk_se_bits(v) != len[k]) {
            fprintf(stderr, "se(%d): %u bits, expected %u\n", v, vidk_se_bits(v), len[k]);
            CHECK(0);
            break;
        }
    }
    VidkMv a = {3, -2}, b = {1, 1};
    CHECK_EQ_U(enc_mvd_bits(a, b), len[3] + len[6]); /* se(2) + se(-3) */
    const int16_t lev[16] = {0, 5, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    int nnz = 0;
    CHECK_EQ_U(enc_block_bits(lev, 16, &nnz), len[3] + len[9] + len[2] + len[3]);
    CHECK_EQ_U(nnz, 3);
}

/* ------------------------------------------------------------------ chroma QP */

/* Typed from the standards: H.264 Table 8-15 and HEVC Table 8-10 (ChromaArrayType 1),
 * qPI 30..51; below 30 QPc = qPI. */
static const int h264_qpc_tab[22] = {29, 30, 31, 32, 32, 33, 34, 34, 35, 35, 36,
                                     36, 37, 37, 37, 38, 38, 38, 39, 39, 39, 39};
static int hevc_qpc(int q) {
    static const int t[14] = {29, 30, 31, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37};
    return q < 30 ? q : q > 43 ? q - 6 : t[q - 30];
}

/* The chroma DC level of a flat chroma residual r in the first (neighbourless) block of an
 * intra frame, from docs/ENCODE.md §9 / §10 at chroma QP qc. */
static int h264_chroma_dc_level(int r, int qc) {
    static const int mf0[6] = {13107, 11916, 10082, 9362, 8192, 7282};
    /* 4x4 forward of a constant: 16 r at (0, 0); 2x2 DC of four equal w0: 64 r. */
    const long w = 64L * r, a = w < 0 ? -w : w;
    const int qbits = 16 + qc / 6;
    long l = (a * mf0[qc % 6] + (1L << qbits) / 3) >> qbits;
    if (l > 32767) l = 32767;
    return (int)(w < 0 ? -l : l);
}

static int hevc_chroma_dc_level(int r, int qc) {
    static const int q6[6] = {26214, 23302, 20560, 18396, 16384, 14564};
    /* 8x8 DCT of a constant: rows (512 r + 2) >> 2, columns (8 * 64 * 128 r + 256) >> 9. */
    const long c = (8L * 64 * ((512L * r + 2) >> 2) + 256) >> 9, a = c < 0 ? -c : c;
    const int qbits = 14 + qc / 6 + (15 - 8 - 3);
    long l = (a * q6[qc % 6] + (171L << (qbits - 9))) >> qbits;
    if (l > 32767) l = 32767;
    return (int)(c < 0 ? -l : l);
}

static void test_chroma_qp(void) {
    VidkPicture src;
    CHECK(vidk_picture_alloc(&src, 32, 32, VIDK_CHROMA_420, 8, 0) == 0);
    fill_plane(&src, 0, 128);
    const int rb = 100, rr = -37;
    fill_plane(&src, 1, 128 + rb);
    fill_plane(&src, 2, 128 + rr);
    for (int codec = 0; codec < 2; codec++)
        for (int qp = 0; qp <= 51; qp++) {
            Run r;
            VidkEncFrameInfo info;
            CHECK(run_open(&r, (VidkCodec)codec, qp, 4, 32, 32) == 0);
            if (run_frame(&r, &src, &info) < 0) {
                run_close(&r);
                continue;
            }
            const int qc = codec == VIDK_CODEC_H264 ? (qp < 30 ? qp : h264_qpc_tab[qp - 30])
                                                    : hevc_qpc(qp);
            for (int pl = 1; pl < 3; pl++) {
                const int res = pl == 1 ? rb : rr;
                const int want = codec == VIDK_CODEC_H264 ? h264_chroma_dc_level(res, qc)
                                                          : hevc_chroma_dc_level(res, qc);
                const int got = r.maps.levels[pl][0];
                if (got != want)
                    fprintf(stderr,
                            "%s QP %d plane %d: chroma DC level %d, expected %d (QPc %d)\n",
                            codec ? "hevc" : "h264", qp, pl, got, want, qc);
                CHECK(got == want);
            }
            if (codec == VIDK_CODEC_H264) CHECK_EQ_U(vidk_h264_chroma_qp(qp, 0, 8), qc);
            run_close(&r);
        }
    vidk_picture_free(&src);
}

/* ------------------------------------------------------------------ inter partitions */

/* Fill the luma of cur with ref moved by a vector per 4x4 block: cur(x, y) =
 * ref(clamp(x + vx), clamp(y + vy)); chroma 128. */
static void make_moved(VidkPicture *cur, const VidkPicture *ref, const VidkMv *mv4) {
    const int W = cur->w, H = cur->h;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const VidkMv v = mv4[(y / 4) * (W / 4) + x / 4];
            const int rx = TCLIP(x + v.x, 0, W - 1), ry = TCLIP(y + v.y, 0, H - 1);
            *px(cur, 0, x, y) = *px(ref, 0, rx, ry);
        }
    fill_plane(cur, 1, 128);
    fill_plane(cur, 2, 128);
}

static void set_rect(VidkMv *mv4, int W, int x, int y, int w, int h, int vx, int vy) {
    for (int j = y / 4; j < (y + h) / 4; j++)
        for (int i = x / 4; i < (x + w) / 4; i++) {
            mv4[j * (W / 4) + i].x = (int16_t)vx;
            mv4[j * (W / 4) + i].y = (int16_t)vy;
        }
}

static void noise_frame(VidkPicture *p) {
    for (int y = 0; y < p->h; y++)
        for (int x = 0; x < p->w; x++)
            *px(p, 0, x, y) = (uint8_t)(test_rand(&g_seed) >> 24);
    fill_plane(p, 1, 128);
    fill_plane(p, 2, 128);
}

/* Code a noise picture (intra), then its reconstruction moved by mv4; check the expected
 * partition counts, every vector, the mode bits and a zero luma residual. */
static void check_moved(VidkCodec codec, int qp, int W, int H, const VidkMv *mv4,
                        const uint32_t *want_parts, uint64_t want_bits_mode,
                        int64_t want_bits_mv, const char *what) {
    Run r;
    VidkPicture f0, f1;
    VidkEncFrameInfo info;
    open_two(&r, codec, qp, W, H, &f0, &f1);
    noise_frame(&f0);
    if (run_frame(&r, &f0, &info) < 0) goto done;
    make_moved(&f1, &r.rec, mv4);
    if (run_frame(&r, &f1, &info) < 0) goto done;
    int bad = 0;
    CHECK(!info.intra);
    for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
        if (info.parts[k] != want_parts[k]) bad = 1;
    if (bad) {
        fprintf(stderr, "%s QP %d: parts", what, qp);
        for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
            fprintf(stderr, " %u(want %u)", info.parts[k], want_parts[k]);
        fprintf(stderr, "\n");
        CHECK(0);
    }
    for (int i = 0; i < (W / 4) * (H / 4);
         i++) /* quarter samples: 4 x the whole-sample moves */
        if (r.maps.mv[i].x != 4 * mv4[i].x || r.maps.mv[i].y != 4 * mv4[i].y) {
            fprintf(stderr, "%s QP %d: 4x4 block (%d, %d) vector (%d, %d), expected (%d, %d)\n",
                    what, qp, i % (W / 4), i / (W / 4), r.maps.mv[i].x, r.maps.mv[i].y,
                    4 * mv4[i].x, 4 * mv4[i].y);
            CHECK(0);
            break;
        }
    if (info.bits_mode != want_bits_mode)
        fprintf(stderr, "%s QP %d: bits_mode %llu, expected %llu\n", what, qp,
                (unsigned long long)info.bits_mode, (unsigned long long)want_bits_mode);
    CHECK_EQ_U(info.bits_mode, want_bits_mode);
    if (want_bits_mv >= 0 && info.bits_mv != (uint64_t)want_bits_mv)
        fprintf(stderr, "%s QP %d: bits_mv %llu, expected %lld\n", what, qp,
                (unsigned long long)info.bits_mv, (long long)want_bits_mv);
    if (want_bits_mv >= 0) CHECK_EQ_U(info.bits_mv, (uint64_t)want_bits_mv);
    CHECK_EQ_U(info.sse[0], 0); /* the prediction is the source */
    CHECK_EQ_U(info.nnz[0], 0);
done:
    vidk_picture_free(&f0);
    vidk_picture_free(&f1);
    run_close(&r);
}

/* B macroblocks in two 16x8 or 8x16 partitions (docs/ENCODE.md §16): I0 is noise, P2 other
 * noise, B1 (coded last) made of I0's reconstruction with two whole-sample vectors per
 * macroblock, top / bottom halves or left / right ones by a checkerboard, every vector its
 * own (no neighbour's: direct cannot match). List 0 with the two partitions predicts B1
 * exactly; one 16x16 vector, list 1 (noise) or their average cannot. Every macroblock
 * must be B_L0_L0_16x8 / 8x16 with the vectors (the map's list-0 vectors, quarter samples),
 * no luma residual, mode bits ue(4) / ue(5) + the transform flag each. mixed: the second
 * partition is made of P2's reconstruction (as a P frame after I0 codes it), so B_L0_L1_16x8
 * / 8x16 (ue(8) / ue(9)) predict it exactly, with the second partition's list-1 vectors in
 * the map (a partition predicting from list 1 alone shows them: enc_h264_b_mv_of). */
static void test_h264_b_partitions(int mixed) {
    enum { W = 64, H = 64, MBW = W / 16, MBH = H / 16 };
    static VidkMv mv4[(W / 4) * (H / 4)];
    static uint8_t second[(W / 4) * (H / 4)]; /* 1: the block is in a second partition */
    uint32_t n16x8 = 0, n8x16 = 0;
    for (int my = 0; my < MBH; my++)
        for (int mx = 0; mx < MBW; mx++) {
            const int x = 16 * mx, y = 16 * my, a = mx + MBW * my; /* a: 0 .. 15 */
            const int v0x = a % 5 - 2, v0y = a / 5 - 2, v1x = 2 - a % 4, v1y = a / 4 - 1;
            if ((mx + my) & 1) {
                set_rect(mv4, W, x, y, 16, 8, v0x, v0y);
                set_rect(mv4, W, x, y + 8, 16, 8, v1x + 3, v1y);
                for (int k = 8; k < 16; k++)
                    second[(y / 4 + k / 4) * (W / 4) + x / 4 + k % 4] = 1;
                n16x8++;
            } else {
                set_rect(mv4, W, x, y, 8, 16, v0x, v0y + 3);
                set_rect(mv4, W, x + 8, y, 8, 16, v1x, v1y - 3);
                for (int k = 0; k < 16; k++)
                    second[(y / 4 + k / 4) * (W / 4) + x / 4 + k % 4] = (uint8_t)((k & 3) >= 2);
                n8x16++;
            }
        }
    Run r0, r;
    VidkPicture f[3];
    VidkEncFrameInfo info;
    CHECK(run_open(&r0, VIDK_CODEC_H264, 0, 6, W, H) == 0);
    for (int k = 0; k < 3; k++)
        CHECK(vidk_picture_alloc(&f[k], W, H, VIDK_CHROMA_420, 8, 0) == 0);
    noise_frame(&f[0]);
    noise_frame(&f[2]);
    if (run_frame(&r0, &f[0], &info) < 0) goto done0; /* I0's reconstruction, as below */
    make_moved(&f[1], &r0.rec, mv4);
    if (mixed) { /* the second partitions from P2's reconstruction */
        VidkPicture t;
        CHECK(vidk_picture_alloc(&t, W, H, VIDK_CHROMA_420, 8, 0) == 0);
        if (run_frame(&r0, &f[2], &info) < 0) goto done0;
        make_moved(&t, &r0.rec, mv4);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                if (second[(y / 4) * (W / 4) + x / 4]) *px(&f[1], 0, x, y) = *px(&t, 0, x, y);
        vidk_picture_free(&t);
    }
    memset(&r, 0, sizeof(r));
    {
        VidkSettings st;
        vidk_default_settings(&st);
        st.backend = VIDK_BACKEND_C;
        CHECK(vidk_open(&r.ctx, &st) == 0);
        VidkEncParams p;
        vidk_enc_default_params(&p);
        p.codec = VIDK_CODEC_H264, p.qp = 0, p.range = 6, p.deblock = 0;
        p.outputs = VIDK_ENC_OUT_ALL, p.bframes = 1, p.b_adapt = 0;
        CHECK(vidk_enc_open(r.ctx, &r.e, &p, W, H) == 0);
        vidk_enc_geometry(r.e, &r.g);
        r.maps.mv = calloc((size_t)r.g.mv_w * r.g.mv_h, sizeof(VidkMv));
        CHECK(vidk_picture_alloc(&r.rec, W, H, VIDK_CHROMA_420, 8, 0) == 0);
    }
    for (int k = 0; k < 3; k++)
        CHECK(vidk_enc_send(r.e, &f[k]) == 0);
    CHECK(vidk_enc_send(r.e, NULL) == 0);
    int seen = 0;
    for (int k = 0; k < 3; k++) {
        CHECK(vidk_enc_receive(r.e, &r.rec, &r.maps, &info) == 0);
        if (!info.bframe) continue;
        seen = 1;
        CHECK(info.index == 1);
        if (info.parts[VIDK_ENC_PART_16x8] != n16x8 || info.parts[VIDK_ENC_PART_8x16] != n8x16)
            fprintf(stderr, "h264 B partitions: 16x8 %u (want %u), 8x16 %u (want %u)\n",
                    info.parts[VIDK_ENC_PART_16x8], n16x8, info.parts[VIDK_ENC_PART_8x16],
                    n8x16);
        CHECK_EQ_U(info.parts[VIDK_ENC_PART_16x8], n16x8);
        CHECK_EQ_U(info.parts[VIDK_ENC_PART_8x16], n8x16);
        for (int i = 0; i < (W / 4) * (H / 4); i++)
            if (r.maps.mv[i].x != 4 * mv4[i].x || r.maps.mv[i].y != 4 * mv4[i].y) {
                fprintf(stderr,
                        "h264 B partitions: block (%d, %d) vector (%d, %d), expected "
                        "(%d, %d)\n",
                        i % (W / 4), i / (W / 4), r.maps.mv[i].x, r.maps.mv[i].y, 4 * mv4[i].x,
                        4 * mv4[i].y);
                CHECK(0);
                break;
            }
        /* ue(4), ue(5) 5 bits each (ue(8), ue(9) 7), + transform_size_8x8_flag */
        CHECK_EQ_U(info.bits_mode, (uint64_t)(MBW * MBH) * ((mixed ? 7 : 5) + 1));
        CHECK_EQ_U(info.sse[0], 0);
        CHECK_EQ_U(info.nnz[0], 0);
    }
    CHECK(seen);
    run_close(&r);
done0:
    for (int k = 0; k < 3; k++)
        vidk_picture_free(&f[k]);
    run_close(&r0);
}

/* The B decision pass's direct bonus (ENC_H264_DIRECT_BONUS), on the core function: one
 * macroblock (no neighbour: direct predicts from both lists with (0, 0)); the source a
 * pattern around 100, both references flat 100, so direct's SATD is the pattern's, S. List
 * 0's 16x16 SATD is set to X at vector (0, 0): cost X + 1.5 lambda x 5 (ue(1), two se(0)).
 * Direct wins when not dearer: at X + 1.5 lambda x 5 == S - 1.5 lambda x 2 it is direct, one
 * below it list 0; every other candidate priced out. */
static void test_h264_direct_bonus(void) {
    enum { W = 16, H = 16 };
    uint8_t src[W * H], ref[W * H];
    uint32_t dist[ENC_H264_DIST_N];
    VidkMv pm0[VIDK_ME_NPART], pm1[VIDK_ME_NPART], mvi[16], mvo0[16], mvo1[16];
    uint16_t mbi[1] = {0}, mbo[1];
    EncFrame f, f1;
    memset(&f, 0, sizeof(f));
    memset(pm0, 0, sizeof(pm0));
    memset(pm1, 0, sizeof(pm1));
    memset(mvi, 0, sizeof(mvi));
    for (int i = 0; i < W * H; i++)
        src[i] = (uint8_t)(100 + (int)((i * 37u + (uint32_t)i / 16u * 11u) % 23u) - 11),
        ref[i] = 100;
    f.codec = VIDK_CODEC_H264, f.qp = 26, f.lambda = 4, f.W = W, f.H = H, f.uw = 1, f.uh = 1;
    f.slices = 1, f.bframe = 1, f.bw0 = f.bw1 = 32;
    f.src[0] = src, f.ss[0] = W, f.ref[0] = ref, f.rs[0] = W;
    f.dist = dist, f.part_mv = pm0;
    f1 = f;
    f1.part_mv = pm1;
    f.l1 = &f1;
    const VidkMv zero4[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
    const uint32_t S = enc_h264_b_satd(&f, 0, 0, zero4, zero4, 0xff);
    const uint32_t X =
        S - enc_h264_lbits(&f, 2) - enc_h264_lbits(&f, 5); /* the bonus: 2 bits */
    CHECK(S > 200);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < ENC_H264_DIST_N; i++)
            dist[i] = 1u << 24; /* list 1, both, the partitions: priced out */
        dist[ENC_H264_DIST_INTRA] = 0xffffffffu;
        dist[ENC_H264_BDIST_L0] = X - (uint32_t)k;
        enc_h264_b_decide_pass(&f, 0, 0, mvi, mvi, mbi, mvo0, mvo1, mbo);
        if (k == 0)
            CHECK(mbo[0] & ENC_MBI_DIRECT);
        else
            CHECK_EQ_U(mbo[0], enc_h264_b_word(1)); /* B_L0_16x16 */
    }
}

/* Length of se(v), counted from the code's bit pattern (H.264 9.1): codeNum k = 2v - 1 or
 * -2v has floor(log2(k + 1)) leading zeros, a one and as many info bits. */
static unsigned se_len(int v) {
    unsigned k = v > 0 ? 2u * (unsigned)v - 1u : 2u * (unsigned)(-v), lz = 0;
    while ((k + 1) >> (lz + 1))
        lz++;
    return 2 * lz + 1;
}

/* The partition vectors of a macroblock of pattern pat (below) at (x, y), in the coding
 * order of docs/ENCODE.md §4. */
/* Partitions of pattern `pat` in decoding order: x, y, w, h in samples (the rest: one). */
static int h264_geom(int pat, int g[16][4]) {
    static const int8_t list[6][8][4] = {
        {{0, 0, 16, 16}},
        {{0, 0, 16, 8}, {0, 8, 16, 8}},
        {{0, 0, 8, 16}, {8, 0, 8, 16}},
        {{0, 0, 8, 8}, {8, 0, 8, 8}, {0, 8, 8, 8}, {8, 8, 8, 8}},
        {{0, 0, 8, 4}, {0, 4, 8, 4}, {8, 0, 8, 8}, {0, 8, 8, 8}, {8, 8, 8, 8}},
        {{0, 0, 8, 8},
         {8, 0, 4, 4},
         {12, 0, 4, 4},
         {8, 4, 4, 4},
         {12, 4, 4, 4},
         {0, 8, 8, 8},
         {8, 8, 4, 8},
         {12, 8, 4, 8}}};
    static const int count[6] = {1, 2, 2, 4, 5, 8};
    const int k = pat >= 1 && pat <= 5 ? pat : 0;
    for (int i = 0; i < count[k]; i++)
        for (int c = 0; c < 4; c++)
            g[i][c] = list[k][i][c];
    return count[k];
}

static int median3(int a, int b, int c) { /* sort three, take the middle */
    if (a > b) {
        const int t = a;
        a = b, b = t;
    }
    return c < a ? a : c > b ? b : c;
}

/* The vector predictor of partition k of macroblock (mx, my), from H.264 8.4.1.3 (one
 * slice, no intra): neighbours A (left), B (above), C (above right, else D above left) of
 * the partition's top-left sample; a 4x4 block is available when it lies in the picture and
 * is decoded before the partition (an earlier macroblock, or an earlier partition of this
 * one); the 16x8 / 8x16 directional rules; B and C take A when only A is available; one
 * neighbour with refIdx 0 gives its vector, else the median. */
static VidkMv ref_mvp(const VidkMv *mv4, int W, int H, int mx, int my, int g[16][4], int k,
                      int dir) {
    VidkMv m[3];
    int av[3];
    const int x = 16 * mx + g[k][0], y = 16 * my + g[k][1];
    const int pos[4][2] = {{x - 1, y}, {x, y - 1}, {x + g[k][2], y - 1}, {x - 1, y - 1}};
    for (int n = 0; n < 4; n++) {
        const int px = pos[n][0], py = pos[n][1], bx = px >> 4, by = py >> 4;
        int a = px >= 0 && py >= 0 && px < W && py < H && (by < my || (by == my && bx < mx));
        if (bx == mx && by == my && px >= 0 && py >= 0)
            for (int i = 0; i < k; i++) /* an earlier partition of this macroblock */
                if (px - 16 * mx >= g[i][0] && px - 16 * mx < g[i][0] + g[i][2] &&
                    py - 16 * my >= g[i][1] && py - 16 * my < g[i][1] + g[i][3])
                    a = 1;
        const VidkMv v = a ? mv4[(py / 4) * (W / 4) + px / 4] : (VidkMv){0, 0};
        if (n < 3) {
            m[n] = v, av[n] = a;
        } else if (!av[2]) {
            m[2] = v, av[2] = a; /* D replaces an unavailable C */
        }
    }
    if (dir == 1 && av[1]) return m[1];
    if ((dir == 2 || dir == 3) && av[0]) return m[0];
    if (dir == 4 && av[2]) return m[2];
    if (!av[1] && !av[2] && av[0]) m[1] = m[2] = m[0], av[1] = av[2] = 1;
    if (av[0] + av[1] + av[2] == 1) return av[0] ? m[0] : av[1] ? m[1] : m[2];
    VidkMv r;
    r.x = (int16_t)median3(m[0].x, m[1].x, m[2].x);
    r.y = (int16_t)median3(m[0].y, m[1].y, m[2].y);
    return r;
}

/* H.264, 80x160 (5 x 10 macroblocks): the border macroblocks keep vector (0, 0)
 * (P_L0_16x16), the interior ones move uniformly, and the right column's interior
 * macroblocks get a pattern whose best partition is known (docs/ENCODE.md §4), with
 * vectors that never point right (no reference sample past the edge). bits_mv, the CAVLC
 * length of the mvds against the standard's predictors, is computed here (ref_mvp). */
static void test_h264_partitions(void) {
    enum { W = 80, H = 160 };
    static VidkMv mv4[(W / 4) * (H / 4)];
    memset(mv4, 0, sizeof(mv4));
    uint32_t parts[VIDK_ENC_PART_COUNT] = {0};
    uint64_t bits = 0;
    int n = 0, pats[(W / 16) * (H / 16)];
    for (int my = 0; my < H / 16; my++)
        for (int mx = 0; mx < W / 16; mx++) {
            const int x = 16 * mx, y = 16 * my;
            const int inner_row = my > 0 && my < H / 16 - 1;
            const int pat = inner_row && mx == W / 16 - 1 ? n++ % 7
                            : inner_row && mx > 0         ? 7
                                                          : -1;
            pats[my * (W / 16) + mx] = pat;
            switch (pat) {
            case 7: /* uniform */
                set_rect(mv4, W, x, y, 16, 16, mx - 2, (my % 3) - 1);
                parts[VIDK_ENC_PART_16x16]++, bits += 1 + 1;
                break;
            case 0: /* one vector: P_L0_16x16 (+1 transform_size_8x8_flag) */
                set_rect(mv4, W, x, y, 16, 16, -2, -1);
                parts[VIDK_ENC_PART_16x16]++, bits += 1 + 1;
                break;
            case 1: /* top / bottom: 16x8 */
                set_rect(mv4, W, x, y, 16, 8, -1, 1);
                set_rect(mv4, W, x, y + 8, 16, 8, -2, 0);
                parts[VIDK_ENC_PART_16x8]++, bits += 3 + 1;
                break;
            case 2: /* left / right: 8x16 */
                set_rect(mv4, W, x, y, 8, 16, 0, 2);
                set_rect(mv4, W, x + 8, y, 8, 16, -3, -1);
                parts[VIDK_ENC_PART_8x16]++, bits += 3 + 1;
                break;
            case 3: /* four quadrants: P_8x8, four 8x8 sub-macroblocks, 8x8 transform */
                set_rect(mv4, W, x, y, 8, 8, -1, 0);
                set_rect(mv4, W, x + 8, y, 8, 8, 0, 1);
                set_rect(mv4, W, x, y + 8, 8, 8, -2, 1);
                set_rect(mv4, W, x + 8, y + 8, 8, 8, 0, -1);
                parts[VIDK_ENC_PART_8x8]++, bits += 5 + 4 * 1 + 1;
                break;
            case 4: /* P_8x8, quadrant 0 as 8x4 (then no 8x8 transform) */
                set_rect(mv4, W, x, y, 8, 4, -1, 2);
                set_rect(mv4, W, x, y + 4, 8, 4, -2, 1);
                set_rect(mv4, W, x + 8, y, 8, 8, -3, 0);
                set_rect(mv4, W, x, y + 8, 8, 8, 0, -3);
                set_rect(mv4, W, x + 8, y + 8, 8, 8, -2, -2);
                parts[VIDK_ENC_PART_8x8]++, bits += 5 + 3 + 1 + 1 + 1;
                break;
            case 5: /* P_8x8: 8x8, 4x4 (four vectors), 8x8, 4x8 */
                set_rect(mv4, W, x, y, 8, 8, -1, -1);
                set_rect(mv4, W, x + 8, y, 4, 4, -1, 0);
                set_rect(mv4, W, x + 12, y, 4, 4, 0, 1);
                set_rect(mv4, W, x + 8, y + 4, 4, 4, -1, 2);
                set_rect(mv4, W, x + 12, y + 4, 4, 4, -2, -2);
                set_rect(mv4, W, x, y + 8, 8, 8, -3, 3);
                set_rect(mv4, W, x + 8, y + 8, 4, 8, -2, 1);
                set_rect(mv4, W, x + 12, y + 8, 4, 8, -1, -2);
                parts[VIDK_ENC_PART_8x8]++, bits += 5 + 1 + 5 + 1 + 3;
                break;
            default: /* border, pattern 6: vector (0, 0) */
                parts[VIDK_ENC_PART_16x16]++, bits += 1 + 1;
                break;
            }
        }
    /* bits_mv: the CAVLC length of every mvd (quarter-sample units: se(4 d) for the
     * whole-sample moves d) against the standard's predictor */
    int64_t bits_mv = 0;
    for (int my = 0; my < H / 16; my++)
        for (int mx = 0; mx < W / 16; mx++) {
            int g[16][4];
            const int pat = pats[my * (W / 16) + mx], np = h264_geom(pat, g);
            for (int i = 0; i < np; i++) {
                const int dir = pat == 1 ? 1 + i : pat == 2 ? 3 + i : 0;
                const VidkMv v =
                    mv4[((16 * my + g[i][1]) / 4) * (W / 4) + (16 * mx + g[i][0]) / 4];
                const VidkMv pr = ref_mvp(mv4, W, H, mx, my, g, i, dir);
                bits_mv += se_len(4 * (v.x - pr.x)) + se_len(4 * (v.y - pr.y));
            }
        }
    for (int q = 0; q < 2; q++)
        check_moved(VIDK_CODEC_H264, q ? 24 : 0, W, H, mv4, parts, bits, bits_mv,
                    "h264 partitions");
}

/* The quarter-sample refinement (docs/ENCODE.md §3): after a noise picture, its
 * reconstruction predicted at one quarter-sample vector v for the whole picture, luma by the
 * standard's filters (tests/test_h264_ref.h, edges clamped as 8.4.2.2.1 says), chroma flat.
 * Whatever whole-sample vector the search finds around v, the half and the quarter step reach
 * v (a diagonal neighbour at most of each half-step candidate around the four whole-sample
 * ones), where the SATD is 0 and on noise nowhere else: every 4x4 block's vector is v, the
 * prediction is the picture (SSE 0 at QP 0, no luma level). At QP 24 the vector bits weigh
 * too; still v. */
static void test_h264_qpel_moves(void) {
    enum { W = 64, H = 48 };
    static const VidkMv vs[] = {{5, -3}, {-7, 2}, {2, 2}, {-1, 0}, {0, 3}, {10, -9}};
    for (int q = 0; q < 2; q++)
        for (size_t t = 0; t < sizeof(vs) / sizeof(vs[0]); t++) {
            const VidkMv v = vs[t];
            Run r;
            VidkPicture f0, f1;
            VidkEncFrameInfo info;
            open_two(&r, VIDK_CODEC_H264, q ? 24 : 0, W, H, &f0, &f1);
            noise_frame(&f0);
            if (run_frame(&r, &f0, &info) == 0) {
                for (int y = 0; y < H; y++)
                    for (int x = 0; x < W; x++)
                        *px(&f1, 0, x, y) = (uint8_t)ref_luma(
                            r.rec.data[0], (int)r.rec.stride[0], W, H, x, y, v);
                fill_plane(&f1, 1, 128);
                fill_plane(&f1, 2, 128);
                if (run_frame(&r, &f1, &info) == 0) {
                    int bad = 0;
                    for (int i = 0; i < (W / 4) * (H / 4); i++)
                        bad += r.maps.mv[i].x != v.x || r.maps.mv[i].y != v.y;
                    if (bad)
                        fprintf(stderr,
                                "qpel QP %d vector (%d, %d): %d blocks elsewhere, e.g. "
                                "(%d, %d)\n",
                                q ? 24 : 0, v.x, v.y, bad, r.maps.mv[0].x, r.maps.mv[0].y);
                    CHECK(!bad);
                    CHECK(!info.intra);
                    CHECK_EQ_U(info.nnz[0], 0);
                    if (!q) CHECK_EQ_U(info.sse[0], 0);
                }
            }
            vidk_picture_free(&f0);
            vidk_picture_free(&f1);
            run_close(&r);
        }
}

/* The P_Skip candidate of the H.264 decision (docs/ENCODE.md §7), on a hand-made frame of
 * 3 x 3 macroblocks: the centre macroblock's 16x16 partition has the (refined) vector me16
 * at distortion d16 (every other partition costs 1000), its neighbours' vectors of the
 * previous pass are A (left), B (above), C (above right), D (above left), all in quarter
 * samples. The planes are flat (the P_Skip candidate's SATD is 0 at any vector) or the
 * reference is noise. Costs: 1.5 lambda = 6 (enc_h264_lbits) x (ue(mb_type) + the mvds' se(d)
 * lengths) with 8.4.1.1 / 8.4.1.3 predictors, computed by hand below. */
static void skip_case(const char *what, VidkMv a, VidkMv b, VidkMv c, VidkMv d, VidkMv me16,
                      uint32_t d16, int noise_ref, int want_word, VidkMv want) {
    enum { W = 48, H = 48 };
    static uint8_t src[W * H], ref[W * H];
    static VidkMeResult res[VIDK_BLOCK_COUNT][16 * 16];
    static uint32_t dist[9 * ENC_H264_DIST_N], skipc[9 * 2];
    static VidkMv part_mv[9 * VIDK_ME_NPART];
    static uint8_t qpl[4 * 64 * (H + 5)];
    static VidkMv mvi[(W / 4) * (H / 4)], mvo[(W / 4) * (H / 4)];
    static uint16_t mbi[9], mbo[9];
    EncFrame f;
    memset(&f, 0, sizeof(f));
    memset(res, 0, sizeof(res));
    memset(mvi, 0, sizeof(mvi));
    memset(mbi, 0, sizeof(mbi));
    for (int i = 0; i < W * H; i++) {
        src[i] = 50;
        ref[i] = noise_ref ? (uint8_t)(test_rand(&g_seed) >> 24) : 50;
    }
    f.codec = VIDK_CODEC_H264, f.qp = 30, f.lambda = 4;
    f.W = W, f.H = H, f.uw = f.uh = 3, f.mb_w = 3, f.slices = 1;
    f.src[0] = src, f.ss[0] = W, f.ref[0] = ref, f.rs[0] = W;
    for (int bs = 0; bs <= VIDK_BLOCK_16x16; bs++) {
        f.me[bs] = res[bs];
        f.me_gw[bs] = W / vidk_block_width((VidkBlockSize)bs);
    }
    memset(part_mv, 0, sizeof(part_mv));
    part_mv[VIDK_ME_PART_16x16 * 9 + 4] = me16; /* partition-major (enc_h264_pmv) */
    f.part_mv = part_mv;
    f.qpl = qpl, f.qps = 64, f.qpn = 64 * (H + 5); /* the half-sample planes of ref */
    for (int y = -3; y <= H + 1; y++)
        for (int x = -3; x <= W + 1; x++)
            enc_h264_qpl_fill(&f, qpl, x, y);
    for (int i = 0; i < 9 * ENC_H264_DIST_N; i++)
        dist[i] = 1000;
    dist[4 * ENC_H264_DIST_N + 40] = d16;
    dist[4 * ENC_H264_DIST_N + ENC_H264_DIST_INTRA] = 0xffffffffu; /* no intra candidate */
    skipc[2 * 4] = 0x80008000u;                                    /* nothing kept */
    f.dist = dist;
    f.skipc = skipc;
    const VidkMv nb[4] = {a, b, c, d}; /* macroblocks (0, 1), (1, 0), (2, 0), (0, 0) */
    const int nx[4] = {0, 1, 2, 0}, ny[4] = {1, 0, 0, 0};
    for (int k = 0; k < 4; k++)
        set_rect(mvi, W, 16 * nx[k], 16 * ny[k], 16, 16, nb[k].x, nb[k].y);
    enc_h264_decide_pass(&f, 1, 1, mvi, mbi, mvo, mbo);
    const VidkMv got = mvo[4 * (W / 4) + 4];
    if (mbo[4] != want_word || got.x != want.x || got.y != want.y)
        fprintf(stderr, "skip %s: word %u vector (%d, %d), expected %d (%d, %d)\n", what,
                mbo[4], got.x, got.y, want_word, want.x, want.y);
    CHECK_EQ_U(mbo[4], want_word);
    CHECK(got.x == want.x && got.y == want.y);
}

static void test_h264_skip(void) {
    const VidkMv z = {0, 0}, v = {3, 1}, two = {2, 0}, four = {4, 0};
    /* A = B = C = (3, 1): P_Skip vector (3, 1) at 6 x (1 + 1 + 1) = 18 against 16x16 at
     * (0, 0): d16 + 6 x (1 + se(-3) 5 + se(-1) 3) = d16 + 54. */
    skip_case("flat, d16 100", v, v, v, z, z, 100, 0, 0, v);
    skip_case("flat, d16 0", v, v, v, z, z, 0, 0, 0, v);
    /* A noise reference: the P_Skip candidate's SATD is far above 54. */
    skip_case("noise", v, v, v, z, z, 0, 1, 0, z);
    /* A = (0, 0) makes the P_Skip vector (0, 0) while the 16x16 predictor is median(0, 2, 2)
     * = (2, 0): P_Skip costs 6 x (1 + se(-2) 5 + 1), 16x16 at (4, 0) 6 x (1 + se(2) 5 + 1):
     * a tie, which P_Skip wins. */
    skip_case("tie", z, two, two, z, four, 0, 0, 0, z);
}

/* Intra_16x16 in a P frame (docs/ENCODE.md §4): after a noise picture, a flat bright one
 * (luma 250) that no vector predicts: the macroblock at the top-left has no neighbour, its DC
 * prediction (128) leaves one flat residual (SATD 16 x 976), far below any vector's against
 * the noise; every other one is predicted exactly by its source neighbours (SATD 0). Every
 * macroblock is then intra, the frame stays a P frame, every vector is (0, 0), and the
 * reconstruction is flat (a DC-only residual on flat predictions). */
/* The inter luma rounding offset of docs/ENCODE.md §9: 1/6 of the quantiser step 2^qbits
 * for a macroblock that moves, 1/32 for a still one; and which macroblocks move. */
static void test_h264_inter_round(void) {
    for (int qbits = 15; qbits <= 24; qbits++) {
        CHECK_EQ_U(enc_h264_inter_round(qbits, 0), (1u << qbits) / 32u);
        CHECK_EQ_U(enc_h264_inter_round(qbits, 1), (1u << qbits) / 6u);
    }
    enum { N4 = 7 };
    VidkMv a[4 * N4], b[4 * N4];
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    a[4] = (VidkMv){1, 0}; /* outside the macroblock's four columns */
    CHECK(!enc_h264_mb_moving(a, b, N4, 3));
    for (int k = 0; k < 16; k++)
        for (int l = 0; l < 2; l++) {
            VidkMv *m = l ? b : a;
            const ptrdiff_t o = (ptrdiff_t)(k / 4) * N4 + k % 4;
            m[o] = (VidkMv){(int16_t)(k & 1 ? -1 : 0), (int16_t)(k & 1 ? 0 : 1)};
            CHECK_EQ_U((unsigned)enc_h264_mb_moving(a, b, N4, l ? 2 : 1), 1u);
            CHECK_EQ_U((unsigned)enc_h264_mb_moving(a, b, N4, l ? 1 : 2), 0u); /* unused list */
            m[o] = (VidkMv){0, 0};
        }
}

static void test_h264_intra_in_p(void) {
    enum { W = 64, H = 48 };
    Run r;
    VidkPicture f0, f1;
    VidkEncFrameInfo info;
    open_two(&r, VIDK_CODEC_H264, 24, W, H, &f0, &f1);
    noise_frame(&f0);
    /* the noise below 128, so that no block of its reconstruction predicts the flat 250
     * better than Intra_16x16 does (the top-left macroblock's DC prediction is 128: with
     * noise up to 255 some seeds made it inter, e.g. VIDK_TEST_SEED=4007185461) */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            *px(&f0, 0, x, y) >>= 1;
    fill_plane(&f1, 0, 250);
    fill_plane(&f1, 1, 128);
    fill_plane(&f1, 2, 128);
    if (run_frame(&r, &f0, &info) >= 0 && run_frame(&r, &f1, &info) >= 0) {
        CHECK(!info.intra);
        if (info.parts[VIDK_ENC_PART_INTRA] != (W / 16) * (H / 16))
            fprintf(stderr, "intra in P: %llu intra macroblocks, expected %d\n",
                    (unsigned long long)info.parts[VIDK_ENC_PART_INTRA], (W / 16) * (H / 16));
        CHECK_EQ_U(info.parts[VIDK_ENC_PART_INTRA], (W / 16) * (H / 16));
        for (int i = 0; i < (W / 4) * (H / 4); i++)
            CHECK(!r.maps.mv[i].x && !r.maps.mv[i].y);
        const uint8_t v = *px(&r.rec, 0, 0, 0);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                if (*px(&r.rec, 0, x, y) != v) {
                    fprintf(stderr, "intra in P: reconstruction not flat at (%d, %d)\n", x, y);
                    CHECK(0);
                    y = H;
                    break;
                }
    }
    vidk_picture_free(&f0);
    vidk_picture_free(&f1);
    run_close(&r);
}

/* HEVC, 64x192 (2 x 6 CTUs): the top and bottom rows keep (0, 0) (one 32x32 CU), the left
 * column's other CTUs move uniformly and the right column's carry known coding trees
 * (docs/ENCODE.md §5), with vectors that never point right. Every CTU's left neighbour
 * moves uniformly, so the MVD predictor (its 32x32 vector) and bits_mv are known. */
static void test_hevc_partitions(void) {
    enum { W = 64, H = 192 };
    static VidkMv mv4[(W / 4) * (H / 4)];
    memset(mv4, 0, sizeof(mv4));
    uint32_t parts[VIDK_ENC_PART_COUNT] = {0};
    uint64_t bits = 0;
    int64_t bits_mv = 0;
    /* PU positions (top-left sample inside the CTU) of each pattern, in coding order */
    static const int8_t pus[4][18] = {
        {0, 0},
        {0, 0, 16, 0, 0, 16, 16, 16},
        {0, 0, 0, 8, 16, 0, 24, 0, 0, 16, 8, 16, 0, 24, 8, 24, 16, 16},
        {0, 0, 0, 4, 8, 0, 12, 0, 0, 8, 8, 8, 16, 0, 0, 16, 16, 16}};
    static const int npu[4] = {1, 4, 9, 9};
    for (int cy = 0; cy < H / 32; cy++)
        for (int cx = 0; cx < W / 32; cx++) {
            const int x = 32 * cx, y = 32 * cy;
            const int inner = cy > 0 && cy < H / 32 - 1;
            const int pat = inner && cx == 1 ? cy - 1 : inner ? 4 : -1;
            switch (pat) {
            case 4: /* uniform */
                set_rect(mv4, W, x, y, 32, 32, cy % 3, cy % 2 ? 1 : -1);
                parts[VIDK_ENC_PART_32x32]++, bits += 2;
                break;
            case 0: /* one vector: 32x32 CU */
                set_rect(mv4, W, x, y, 32, 32, -1, -2);
                parts[VIDK_ENC_PART_32x32]++, bits += 2;
                break;
            case 1: /* four 16x16 CUs, 2Nx2N */
                set_rect(mv4, W, x, y, 16, 16, -2, 0);
                set_rect(mv4, W, x + 16, y, 16, 16, 0, 2);
                set_rect(mv4, W, x, y + 16, 16, 16, -1, 1);
                set_rect(mv4, W, x + 16, y + 16, 16, 16, 0, -2);
                parts[VIDK_ENC_PART_16x16] += 4, bits += 1 + 4 * 2;
                break;
            case 2: /* 2NxN, Nx2N, four 8x8 CUs, 2Nx2N */
                set_rect(mv4, W, x, y, 16, 8, -1, 1);
                set_rect(mv4, W, x, y + 8, 16, 8, -2, 1);
                set_rect(mv4, W, x + 16, y, 8, 16, -3, 0);
                set_rect(mv4, W, x + 24, y, 8, 16, 0, 3);
                set_rect(mv4, W, x, y + 16, 8, 8, -1, 0);
                set_rect(mv4, W, x + 8, y + 16, 8, 8, 0, 1);
                set_rect(mv4, W, x, y + 24, 8, 8, -2, 0);
                set_rect(mv4, W, x + 8, y + 24, 8, 8, 0, -1);
                set_rect(mv4, W, x + 16, y + 16, 16, 16, -2, -2);
                parts[VIDK_ENC_PART_16x8]++, parts[VIDK_ENC_PART_8x16]++;
                parts[VIDK_ENC_PART_8x8]++, parts[VIDK_ENC_PART_16x16]++;
                bits += 1 + 4 + 4 + (1 + 4 * 1) + 2;
                break;
            case 3: /* 16x16 split into 8x8 CUs 2NxN, Nx2N, 2Nx2N, 2Nx2N; three 16x16 CUs */
                set_rect(mv4, W, x, y, 8, 4, -1, 2);
                set_rect(mv4, W, x, y + 4, 8, 4, -2, 1);
                set_rect(mv4, W, x + 8, y, 4, 8, -1, -2);
                set_rect(mv4, W, x + 12, y, 4, 8, -2, -1);
                set_rect(mv4, W, x, y + 8, 8, 8, -3, -3);
                set_rect(mv4, W, x + 8, y + 8, 8, 8, -3, 3);
                set_rect(mv4, W, x + 16, y, 16, 16, -1, 0);
                set_rect(mv4, W, x, y + 16, 16, 16, 0, 1);
                set_rect(mv4, W, x + 16, y + 16, 16, 16, -1, -1);
                parts[VIDK_ENC_PART_8x8]++, parts[VIDK_ENC_PART_16x16] += 3;
                bits += 1 + (1 + 3 + 3 + 1 + 1) + 3 * 2;
                break;
            default:
                parts[VIDK_ENC_PART_32x32]++, bits += 2;
                break;
            }
        }
    for (int cy = 0; cy < H / 32; cy++)
        for (int cx = 0; cx < W / 32; cx++) {
            const int inner = cy > 0 && cy < H / 32 - 1, k = inner && cx == 1 ? cy - 1 : 0;
            VidkMv pred = {0, 0};
            if (cx > 0) pred = mv4[(8 * cy) * (W / 4) + 8 * (cx - 1)]; /* uniform left CTU */
            for (int i = 0; i < npu[k]; i++) {
                const VidkMv v = mv4[((32 * cy + pus[k][2 * i + 1]) / 4) * (W / 4) +
                                     (32 * cx + pus[k][2 * i]) / 4];
                bits_mv += se_len(v.x - pred.x) + se_len(v.y - pred.y);
                pred = v;
            }
        }
    for (int q = 0; q < 2; q++)
        check_moved(VIDK_CODEC_HEVC, q ? 24 : 0, W, H, mv4, parts, bits, bits_mv,
                    "hevc partitions");
}

/* ------------------------------------------------------------------ intra modes */

/* Flat pictures: every mode predicts the same, so the first available mode in the order
 * of docs/ENCODE.md §7 wins: macroblock (0, 0) DC (2), the rest of row 0 Horizontal (1),
 * the others Vertical (0); chroma DC (0). bits_mode = 1 + ue(luma) + ue(chroma). */
static void test_h264_intra_flat(void) {
    enum { W = 64, H = 48 };
    VidkPicture src;
    CHECK(vidk_picture_alloc(&src, W, H, VIDK_CHROMA_420, 8, 0) == 0);
    for (int k = 0; k < 3; k++) {
        const int v = k == 0 ? 77 : k == 1 ? 200 : 128;
        fill_plane(&src, 0, v);
        fill_plane(&src, 1, 255 - v);
        fill_plane(&src, 2, v / 2);
        Run r;
        VidkEncFrameInfo info;
        CHECK(run_open(&r, VIDK_CODEC_H264, 10 + 12 * k, 4, W, H) == 0);
        if (run_frame(&r, &src, &info) == 0) {
            const uint64_t mbs = (W / 16) * (H / 16), row0 = W / 16;
            /* ue(2) = 3, ue(1) = 3, ue(0) = 1 */
            const uint64_t want = (1 + 3 + 1) + (row0 - 1) * (1 + 3 + 1) + (mbs - row0) * 3;
            if (info.bits_mode != want)
                fprintf(stderr, "flat %d: bits_mode %llu, expected %llu\n", v,
                        (unsigned long long)info.bits_mode, (unsigned long long)want);
            CHECK_EQ_U(info.bits_mode, want);
            CHECK_EQ_U(info.parts[VIDK_ENC_PART_INTRA], mbs);
            CHECK_EQ_U(r.maps.energy[0], 256u * (uint32_t)((v - 128) * (v - 128)));
        }
        run_close(&r);
    }
    vidk_picture_free(&src);
}

/* Prediction energy of the 16x16 luma block at (bx, by) under the given H.264 mode, from the
 * reconstruction (docs/ENCODE.md §7: 0 vertical, 1 horizontal, 3 plane). */
static uint32_t h264_energy(const VidkPicture *src, const VidkPicture *rec, int bx, int by,
                            int mode) {
#define P(x, y) ((int)*px(rec, 0, bx + (x), by + (y)))
    int H = 0, V = 0;
    for (int i = 0; i < 8; i++) {
        H += (i + 1) * (P(8 + i, -1) - P(6 - i, -1));
        V += (i + 1) * (P(-1, 8 + i) - P(-1, 6 - i));
    }
    const int a = 16 * (P(-1, 15) + P(15, -1)), b = (5 * H + 32) >> 6, c = (5 * V + 32) >> 6;
    uint32_t e = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            const int pred = mode == 0 ? P(x, -1)
                             : mode == 1
                                 ? P(-1, y)
                                 : TCLIP((a + b * (x - 7) + c * (y - 7) + 16) >> 5, 0, 255);
            const int d = *px(src, 0, bx + x, by + y) - pred;
            e += (uint32_t)(d * d);
        }
    return e;
#undef P
}

/* HEVC mode 26 (vertical) energy of the 16x16 CU at (bx, by) with left and top neighbours
 * (docs/ENCODE.md §8: first column edge filter). */
static uint32_t hevc_vertical_energy(const VidkPicture *src, const VidkPicture *rec, int bx,
                                     int by) {
#define P(x, y) ((int)*px(rec, 0, bx + (x), by + (y)))
    uint32_t e = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            const int pred =
                x ? P(x, -1) : TCLIP(P(0, -1) + ((P(-1, y) - P(-1, -1)) >> 1), 0, 255);
            const int d = *px(src, 0, bx + x, by + y) - pred;
            e += (uint32_t)(d * d);
        }
    return e;
#undef P
}

/* Vertical stripes (vertical mode), horizontal stripes (horizontal mode), a gradient
 * (plane): the energy map of each macroblock that has the needed neighbours equals the
 * energy of that mode's prediction from the reconstruction. */
static void test_intra_structures(void) {
    enum { W = 64, H = 64 };
    VidkPicture src;
    CHECK(vidk_picture_alloc(&src, W, H, VIDK_CHROMA_420, 8, 0) == 0);
    uint8_t col[W], row[H];
    for (int i = 0; i < W; i++)
        col[i] = (uint8_t)(16 + (test_rand(&g_seed) >> 24) * 7 / 8);
    for (int i = 0; i < H; i++)
        row[i] = (uint8_t)(16 + (test_rand(&g_seed) >> 24) * 7 / 8);
    fill_plane(&src, 1, 128);
    fill_plane(&src, 2, 128);
    for (int kind = 0; kind < 4; kind++) {
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                /* HEVC: stripes plus 3 on odd rows, so that mode 26 still wins and its
                 * first-column edge filter (8.4.4.2.6) moves even rows by -2: the energy
                 * shows whether the filter was applied */
                *px(&src, 0, x, y) = kind == 0   ? col[x]
                                     : kind == 3 ? (uint8_t)(col[x] + 3 * (y % 2))
                                     : kind == 1 ? row[y]
                                                 : (uint8_t)(20 + 2 * x + y);
        const VidkCodec codec = kind == 3 ? VIDK_CODEC_HEVC : VIDK_CODEC_H264;
        Run r;
        VidkEncFrameInfo info;
        CHECK(run_open(&r, codec, 18, 4, W, H) == 0);
        if (run_frame(&r, &src, &info) == 0)
            for (int my = 1; my < H / 16; my++)
                for (int mx = 1; mx < W / 16; mx++) {
                    const uint32_t got = r.maps.energy[my * (W / 16) + mx];
                    const uint32_t want =
                        kind == 3 ? hevc_vertical_energy(&src, &r.rec, 16 * mx, 16 * my)
                                  : h264_energy(&src, &r.rec, 16 * mx, 16 * my,
                                                kind == 0   ? 0
                                                : kind == 1 ? 1
                                                            : 3);
                    if (got != want) {
                        fprintf(stderr,
                                "intra kind %d block (%d, %d): energy %u, expected %u\n", kind,
                                mx, my, got, want);
                        CHECK(0);
                    }
                }
        run_close(&r);
    }
    vidk_picture_free(&src);
}

/* The stream of a flat 32x16 picture coded twice, against a transcription of the syntax
 * (7.3.3, 7.3.5, 9.1, Table 9-5) written out by hand: the IDR slice of two Intra_16x16
 * macroblocks without residual (DC prediction, then horizontal: the first mode with the
 * lowest SAD), and the P slice of two P_Skip macroblocks (the (0, 0) vector, no residual). */
static int find_nal(const uint8_t *s, size_t n, uint8_t header, const uint8_t **pay,
                    size_t *len) {
    for (size_t i = 0; i + 4 < n; i++)
        if (!s[i] && !s[i + 1] && !s[i + 2] && s[i + 3] == 1 && s[i + 4] == header) {
            size_t j = i + 5;
            while (j + 3 < n && !(!s[j] && !s[j + 1] && !s[j + 2] && s[j + 3] == 1))
                j++;
            *pay = s + i + 5;
            *len = (j + 3 < n ? j : n) - (i + 5);
            return 1;
        }
    return 0;
}

static void test_h264_stream_flat(void) {
    /* IDR slice: first_mb_in_slice ue(0) 1, slice_type ue(7) 0001000, pps ue(0) 1,
     * frame_num u(4) 0000, idr_pic_id ue(1) 010, no_output_of_prior_pics 0, long_term 0,
     * slice_qp_delta se(0) 1, disable_deblocking_filter_idc ue(1) 010; macroblock 0:
     * mb_type ue(3) 00100 (I_16x16_2_0_0, DC), intra_chroma_pred_mode ue(0) 1,
     * mb_qp_delta 1, Intra16x16DCLevel coeff_token (0, 0) at nC 0: 1; macroblock 1: mb_type
     * ue(2) 011 (I_16x16_1_0_0, horizontal), 1, 1, 1; rbsp trailing bits 1000. */
    static const uint8_t idr[] = {0x88, 0x82, 0x28, 0x9d, 0xf8};
    /* P slice: 1, slice_type ue(5) 00110, 1, frame_num 0001, num_ref_idx_active_override 0,
     * ref_pic_list_modification_flag_l0 0, adaptive_ref_pic_marking_mode_flag 0, 1, 010,
     * mb_skip_run ue(2) 011, trailing bits 1 and zeros. */
    static const uint8_t p[] = {0x9a, 0x22, 0x9c};
    VidkSettings s;
    vidk_default_settings(&s);
    s.backend = VIDK_BACKEND_C;
    VidkContext *ctx = NULL;
    VidkEncoder *e = NULL;
    VidkPicture src;
    CHECK(vidk_open(&ctx, &s) == 0);
    CHECK(vidk_picture_alloc(&src, 32, 16, VIDK_CHROMA_420, 8, 0) == 0);
    for (int k = 0; k < 3; k++)
        fill_plane(&src, k, 128);
    VidkEncParams q;
    vidk_enc_default_params(&q);
    q.qp = 30;
    q.deblock = 0; /* disable_deblocking_filter_idc 1, as worked out above */
    q.cabac = 0;   /* CAVLC, as worked out above */
    q.outputs = VIDK_ENC_OUT_STREAM;
    CHECK(vidk_enc_open(ctx, &e, &q, 32, 16) == 0);
    for (int f = 0; e && f < 2; f++) {
        VidkEncFrameInfo info;
        const uint8_t *pay = NULL;
        size_t len = 0;
        CHECK(vidk_enc_send(e, &src) == 0);
        CHECK(vidk_enc_receive(e, NULL, NULL, &info) == 0);
        CHECK(info.stream != NULL);
        if (!info.stream) break;
        /* SPS (0x67) and PPS (0x68) before the IDR slice (0x65); a P slice (0x61) alone */
        CHECK(find_nal(info.stream, info.stream_size, 0x67, &pay, &len) == !f);
        CHECK(find_nal(info.stream, info.stream_size, 0x68, &pay, &len) == !f);
        CHECK(find_nal(info.stream, info.stream_size, f ? 0x61 : 0x65, &pay, &len));
        const uint8_t *want = f ? p : idr;
        const size_t n = f ? sizeof(p) : sizeof(idr);
        CHECK_EQ_U(len, n);
        CHECK(len == n && !memcmp(pay, want, n));
    }
    vidk_enc_close(&e);
    vidk_picture_free(&src);
    vidk_close(&ctx);
}

/* The decimation score (docs/ENCODE.md §9) against values worked out by hand from the rule:
 * +-1 levels weighted by the zeros before them in zig-zag order (4x4: 3, 2, 2, 1, 1, 1, 0..;
 * 8x8: 3 x4, 2 x8, 1 x12, 0..), 9 as soon as a level is outside -1..1. */
static void test_decimate_score(void) {
    int16_t b[64];
    memset(b, 0, sizeof(b));
    CHECK_EQ_U(enc_decimate_score(b, 4, 0), 0u);
    b[0] = 1; /* scan 0, no zeros below: run 0 -> 3 */
    CHECK_EQ_U(enc_decimate_score(b, 4, 0), 3u);
    b[1] = -1; /* raster 1 = scan 1: run 0 (scan 0 is non-zero) -> 3 + 3 */
    CHECK_EQ_U(enc_decimate_score(b, 4, 0), 6u);
    memset(b, 0, sizeof(b));
    b[15] = 1; /* scan 15 with 15 zeros below: run 15 -> 0 */
    CHECK_EQ_U(enc_decimate_score(b, 4, 0), 0u);
    b[8] = -1; /* raster 8 = scan 3: 3 zeros below -> 1; scan 15 now has run 11 -> 0 */
    CHECK_EQ_U(enc_decimate_score(b, 4, 0), 1u);
    b[4] = 1; /* raster 4 = scan 2: run 2 -> 2; scan 3 run 0 -> 3; scan 15 -> 0 */
    CHECK_EQ_U(enc_decimate_score(b, 4, 0), 5u);
    b[4] = 2; /* a level of 2: never decimated */
    CHECK_EQ_U(enc_decimate_score(b, 4, 0), 9u);
    memset(b, 0, sizeof(b));
    b[1] = 1; /* chroma AC (from scan 1): scan 1, no zeros above scan 0 counted: run 0 -> 3 */
    CHECK_EQ_U(enc_decimate_score(b, 4, 1), 3u);
    b[0] = 5; /* the DC position is not part of an AC score */
    CHECK_EQ_U(enc_decimate_score(b, 4, 1), 3u);
    memset(b, 0, sizeof(b));
    b[8] = 1; /* 8x8: raster 8 = scan 2, run 2 -> 3 */
    CHECK_EQ_U(enc_decimate_score(b, 8, 0), 3u);
    memset(b, 0, sizeof(b));
    b[4] = -1; /* 8x8: raster 4 = scan 14, run 14 -> 1 */
    CHECK_EQ_U(enc_decimate_score(b, 8, 0), 1u);
    memset(b, 0, sizeof(b));
    b[32] = 1; /* 8x8: raster 32 = scan 10, run 10 -> 2 */
    CHECK_EQ_U(enc_decimate_score(b, 8, 0), 2u);
    memset(b, 0, sizeof(b));
    b[63] = 1; /* 8x8: scan 63, run 63 -> 0 */
    CHECK_EQ_U(enc_decimate_score(b, 8, 0), 0u);
}

/* The cuda backend's pairs of lanes (src/cuda/enc_kern.cuh lq_half_quant / lq_half_rec)
 * code an 8x8 block as two halves of four columns: enc_izz8 inverts enc_zz8, the scan-order
 * bits of the halves ORed give enc_decimate_score through enc_decimate_m, and the halves'
 * enc_level_bits plus the ue(v) of their summed count give enc_block_bits. Random blocks of
 * levels in -2..2 (mostly 0 and +-1, where the score depends on the runs). */
static void test_split_halves(void) {
    for (int k = 0; k < 64; k++)
        CHECK_EQ_U(enc_izz8[enc_zz8[k]], (unsigned)k);
    for (int it = 0; it < 2000; it++) {
        int16_t b[64], half[2][64];
        const unsigned dens = 1 + test_rand(&g_seed) % 16;
        for (int k = 0; k < 64; k++) {
            const unsigned r = test_rand(&g_seed);
            b[k] = (int16_t)(r % 64 < dens ? (r >> 8 & 1 ? 1 : -1) * (r % 97 == 0 ? 2 : 1) : 0);
        }
        uint64_t m = 0;
        int big = 0, nz = 0;
        unsigned se = 0;
        for (int h = 0; h < 2; h++) {
            for (int r = 0; r < 8; r++)
                for (int j = 0; j < 4; j++) {
                    const int at = 8 * r + 4 * h + j, v = b[at];
                    half[h][4 * r + j] = (int16_t)v;
                    m |= (uint64_t)(v != 0) << enc_izz8[at];
                    big |= v > 1 || v < -1;
                }
            int c;
            se += enc_level_bits(half[h], 32, &c);
            nz += c;
        }
        CHECK_EQ_U((unsigned)enc_decimate_m(m, big, 8, 0),
                   (unsigned)enc_decimate_score(b, 8, 0));
        int c;
        CHECK_EQ_U(se + vidk_ue_bits((unsigned)nz), enc_block_bits(b, 64, &c));
        CHECK_EQ_U((unsigned)nz, (unsigned)c);
    }
}

/* From level 3.1 on (Table A-1 MaxMvsPer2Mb 16) no sub-8x8 partition: a 1280x720 picture
 * (level 3.1 at 25 frames/s) moved by a different vector per 4x4 block keeps one vector per
 * 8x8 quadrant; the same pattern at 176x144 (level 1.1 for R 6) keeps every 4x4 vector. */
static void test_h264_level_partitions(void) {
    static const int sizes[2][2] = {{1280, 720}, {176, 144}};
    for (int t = 0; t < 2; t++) {
        const int W = sizes[t][0], H = sizes[t][1];
        VidkMv *mv4 = calloc((size_t)(W / 4) * (H / 4), sizeof(*mv4));
        Run r;
        VidkPicture f0, f1;
        VidkEncFrameInfo info;
        CHECK(mv4 != NULL);
        if (!mv4) return;
        for (int y = 16; y < H - 16; y += 4) /* inner blocks: vectors stay in the picture */
            for (int x = 16; x < W - 16; x += 4)
                set_rect(mv4, W, x, y, 4, 4, ((x / 4) % 3) - 1, ((y / 4) % 3) - 1);
        open_two(&r, VIDK_CODEC_H264, 26, W, H, &f0, &f1);
        noise_frame(&f0);
        if (run_frame(&r, &f0, &info) == 0) {
            make_moved(&f1, &r.rec, mv4);
            if (run_frame(&r, &f1, &info) == 0) {
                int sub8 = 0; /* 8x8 quadrants holding more than one vector */
                for (int y = 0; y < H / 4; y += 2)
                    for (int x = 0; x < W / 4; x += 2) {
                        const VidkMv *m = r.maps.mv + (ptrdiff_t)y * (W / 4) + x;
                        const VidkMv *n = m + W / 4;
                        sub8 += m[1].x != m[0].x || m[1].y != m[0].y || n[0].x != m[0].x ||
                                n[0].y != m[0].y || n[1].x != m[0].x || n[1].y != m[0].y;
                    }
                if (t == 0) CHECK_EQ_U(sub8, 0u);
                if (t == 1) CHECK(sub8 > 0);
            }
        }
        vidk_picture_free(&f0);
        vidk_picture_free(&f1);
        run_close(&r);
        free(mv4);
    }
}

/* enc_h264_mvd_bits_quad (the decision's P_8x8 quadrant costs) against the quadrant's terms
 * of the whole macroblock's sum, laid out by vidk_h264_parts (the stream writer's layout):
 * random neighbourhoods (available or not, intra or not, small vectors so that the medians'
 * ties happen), random sub-macroblock types of the other quadrants. */
static void test_h264_mvd_quad(void) {
    int cases = 0;
    for (int t = 0; t < 20000; t++) {
        VidkH264MvNb n;
        memset(&n, 0, sizeof(n)); /* (inoff: every own block uses the list) */
        VidkH264sNb *nb[10] = {&n.a[0], &n.a[1], &n.a[2], &n.a[3], &n.b[0],
                               &n.b[1], &n.b[2], &n.b[3], &n.c,    &n.d};
        for (int k = 0; k < 10; k++) {
            const uint32_t r = test_rand(&g_seed);
            nb[k]->avail = (int)(r & 1);
            nb[k]->ref = nb[k]->avail && (r & 2) ? 0 : -1;
            nb[k]->mv.x = (int16_t)((int)(r >> 8 & 7) - 3);
            nb[k]->mv.y = (int16_t)((int)(r >> 16 & 7) - 3);
        }
        for (int k = 0; k < 16; k++) {
            const uint32_t r = test_rand(&g_seed);
            n.in[k].x = (int16_t)((int)(r >> 8 & 7) - 3);
            n.in[k].y = (int16_t)((int)(r >> 16 & 7) - 3);
        }
        int sub[4];
        for (int q = 0; q < 4; q++)
            sub[q] = (int)(test_rand(&g_seed) >> 30);
        int px[16], py[16], pw[16], pd[16];
        int8_t order[16];
        const int np = vidk_h264_parts(3, sub, px, py, pw, pd, order);
        unsigned want[4] = {0, 0, 0, 0};
        for (int k = 0; k < np; k++)
            want[(py[k] / 2) * 2 + px[k] / 2] +=
                enc_mvd_bits(n.in[4 * py[k] + px[k]],
                             vidk_h264_mvp(&n, px[k], py[k], pw[k], pd[k], order, k));
        unsigned sum = 0;
        for (int q = 0; q < 4; q++) {
            const unsigned got = enc_h264_mvd_bits_quad(&n, q, sub[q]);
            if (got != want[q]) {
                fprintf(stderr,
                        "mvd_bits_quad case %d quadrant %d sub %d %d %d %d: %u, want %u\n", t,
                        q, sub[0], sub[1], sub[2], sub[3], got, want[q]);
                CHECK(0);
                return;
            }
            sum += got;
        }
        CHECK(sum == enc_h264_mvd_bits(&n, 3, sub));
        cases++;
    }
    fprintf(stderr, "mvd_bits_quad: %d random macroblocks, every quadrant equal\n", cases);
}

/* ------------------------------------------------------------------ transform size */

/* Sylvester's Hadamard matrix of order n (n a power of 2): H(i, j) = (-1)^popcount(i & j). */
static int hadamard(int i, int j) {
    int b = i & j, p = 0;
    for (; b; b >>= 1)
        p ^= b & 1;
    return p ? -1 : 1;
}

/* sum |H_n D H_n| of the n x n block at d (stride 8). */
static uint32_t hadamard_abs(const int *d, int n) {
    uint32_t s = 0;
    for (int u = 0; u < n; u++)
        for (int v = 0; v < n; v++) {
            long c = 0;
            for (int y = 0; y < n; y++)
                for (int x = 0; x < n; x++)
                    c += (long)hadamard(u, y) * d[8 * y + x] * hadamard(x, v);
            s += (uint32_t)labs(c);
        }
    return s;
}

/* Measure a quadrant residual d (8x8, stride 8) through enc_h264_tx_measure, against the
 * matrix products: s4 = sum over its 4x4 blocks of (sum |H4 B H4| + 1) >> 1, s8 = sum
 * |H8 D H8|. Returns the measured pair. */
static void measure_quadrant(const int *d, uint32_t *s4, uint32_t *s8) {
    uint8_t src[64], pr[64];
    for (int k = 0; k < 64; k++) {
        pr[k] = (uint8_t)(d[k] < 0 ? 255 : 0);
        src[k] = (uint8_t)(pr[k] + d[k]);
    }
    enc_h264_tx_measure(src, 8, pr, 8, s4, s8);
    uint32_t w4 = 0;
    for (int b = 0; b < 4; b++)
        w4 += (hadamard_abs(d + 32 * (b >> 1) + 4 * (b & 1), 4) + 1) >> 1;
    CHECK_EQ_U(*s4, w4);
    CHECK_EQ_U(*s8, hadamard_abs(d, 8));
}

/* docs/ENCODE.md §4: the 8x8 transform where (s8 + 2) >> 2 < s4 summed over the
 * macroblock's quadrants; cases whose sums are known: a flat residual v (s4 = 16 * 8v,
 * SA8D = 64v: 8x8), the 4x4 blocks of every quadrant at +v, +v / +v, -v (s4 = 128v, SA8D =
 * 128v: a tie, 4x4), one 4x4 block per quadrant at v (s4 = 32v, SA8D = 64v: 4x4). Then an
 * encoder run: those residuals on moved noise, seen in the level map (the 4x4 transform's
 * levels of a residual constant on 4x4 blocks sit at multiples of 4; the 8x8 one's DC of a
 * flat quadrant alone at its corner). */
static void test_h264_transform_size(void) {
    int d[64];
    for (int t = 0; t < 200; t++) { /* random residuals, full range */
        for (int k = 0; k < 64; k++)
            d[k] = (int)(test_rand(&g_seed) % 511) - 255;
        uint32_t a, b;
        measure_quadrant(d, &a, &b);
    }
    static const int pat[3][4] = {{1, 1, 1, 1}, {1, 1, 1, -1}, {1, 0, 0, 0}};
    static const uint32_t want4[3] = {128, 128, 32}, want_sa8d[3] = {64, 128, 64};
    const int v = 20;
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 64; k++)
            d[k] = v * pat[c][2 * ((k >> 3) >= 4) + ((k & 7) >= 4)];
        uint32_t s4 = 0, s8 = 0;
        for (int q = 0; q < 4; q++) {
            uint32_t a, b;
            measure_quadrant(d, &a, &b);
            s4 += a, s8 += b;
        }
        CHECK_EQ_U(s4, want4[c] * v);
        CHECK_EQ_U((s8 + 2) >> 2, want_sa8d[c] * v);
        CHECK_EQ_U(enc_h264_tx8_wins(s4, s8), c == 0);
    }
    /* The encoder: 4x3 macroblocks of noise in [64, 191]; macroblock (1, 1) moved by (2, 1)
     * with the flat residual, (2, 1) by (-1, 2) with the tie pattern; the others still
     * (P_Skip). Neither moved vector is its P_Skip vector (the neighbours' median is 0). */
    enum { W = 64, H = 48 };
    VidkMv mv4[(W / 4) * (H / 4)];
    memset(mv4, 0, sizeof(mv4));
    set_rect(mv4, W, 16, 16, 16, 16, 2, 1);
    set_rect(mv4, W, 32, 16, 16, 16, -1, 2);
    Run r;
    VidkPicture f0, f1;
    VidkEncFrameInfo info;
    open_two(&r, VIDK_CODEC_H264, 24, W, H, &f0, &f1);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            *px(&f0, 0, x, y) = (uint8_t)(64 + (test_rand(&g_seed) >> 25));
    fill_plane(&f0, 1, 128);
    fill_plane(&f0, 2, 128);
    if (run_frame(&r, &f0, &info) == 0) {
        make_moved(&f1, &r.rec, mv4);
        for (int y = 0; y < 16; y++)
            for (int x = 0; x < 16; x++) {
                *px(&f1, 0, 16 + x, 16 + y) += v;
                *px(&f1, 0, 32 + x, 16 + y) += v * pat[1][2 * ((y & 7) >= 4) + ((x & 7) >= 4)];
            }
        if (run_frame(&r, &f1, &info) == 0) {
            for (int m = 0; m < 2; m++) {
                const int16_t *l = r.maps.levels[0] + 16 * (ptrdiff_t)r.g.coded_w + 16 + 16 * m;
                int off4 = 0, corner = 0, dc4 = 0;
                for (int y = 0; y < 16; y++)
                    for (int x = 0; x < 16; x++) {
                        const int nz = l[(ptrdiff_t)y * r.g.coded_w + x] != 0;
                        off4 += nz && ((x & 3) || (y & 3));
                        corner += nz && !(x & 7) && !(y & 7);
                        dc4 += nz && !(x & 3) && !(y & 3) && ((x & 4) || (y & 4));
                    }
                if (m == 0) { /* 8x8: each quadrant's DC alone */
                    CHECK_EQ_U(corner, 4u);
                    CHECK_EQ_U(off4 + dc4, 0u);
                } else { /* 4x4: the 16 blocks' DCs, nothing else */
                    CHECK_EQ_U(off4, 0u);
                    CHECK_EQ_U(corner + dc4, 16u);
                }
            }
            for (int i = 0; i < (W / 4) * (H / 4); i++) /* the vectors as moved */
                CHECK(r.maps.mv[i].x == 4 * mv4[i].x && r.maps.mv[i].y == 4 * mv4[i].y);
        }
    }
    vidk_picture_free(&f0);
    vidk_picture_free(&f1);
    run_close(&r);
}

int main(void) {
    g_seed = test_seed();
    test_lambda();
    test_expgolomb();
    test_chroma_qp();
    test_h264_partitions();
    test_h264_skip();
    test_h264_qpel_moves();
    test_h264_mvd_quad();
    test_h264_intra_in_p();
    test_h264_inter_round();
    test_h264_b_partitions(0);
    test_h264_b_partitions(1);
    test_h264_direct_bonus();
    test_hevc_partitions();
    test_h264_intra_flat();
    test_intra_structures();
    test_h264_stream_flat();
    test_decimate_score();
    test_split_halves();
    test_h264_level_partitions();
    test_h264_transform_size();
    return test_finish("test_enc_decide");
}
