/* B slices in the host H.264 stream writer (src/enc/h264_stream.c with
 * vidk_h264_stream_set_bframes): synthetic decisions of every kind a B picture may carry
 * (B_Skip, B_Direct_16x16, B_L0 / B_L1 / B_Bi in one 16x16 or two 16x8 / 8x16 partitions with
 * either transform, Intra_16x16, I_NxN with Intra_4x4 and Intra_8x8) with random vectors in a
 * small range and random sparse levels,
 * in a short sequence (coding order I P B B P B, display indices 0 3 1 2 5 4) with several
 * slices, CAVLC and CABAC. FFmpeg must decode each stream printing nothing and give the
 * frame types in display order (I B B P B P); the slice headers are read back with FFmpeg's
 * trace_headers (slice_type, frame_num, pic_order_cnt_lsb, nal_ref_idc). Without ffmpeg /
 * ffprobe on PATH the test says so and exits 77 (ctest SKIP). The pixels are not checked
 * here (the decisions are random; the coding loop's reconstruction is checked against
 * FFmpeg's decoding elsewhere).
 *
 *   test_h264_bslice
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "enc/enc_core.h"
#include "enc/h264_stream.h"
#include "enc/h264_stream_core.h"
#include "test_util.h"

enum { W = 112, H = 96, MBW = W / 16, MBH = H / 16, NMB = MBW * MBH, S4 = W / 4 };

typedef struct Frame {
    uint16_t mbi[NMB];
    VidkMv mv[2][S4 * (H / 4)]; /* list 0, list 1 */
    int16_t lev[3][W * H];
    uint8_t im4[S4 * (H / 4)];
} Frame;

static uint32_t rnd(uint32_t *s, uint32_t n) {
    return test_rand(s) % n;
}

static VidkMv rnd_mv(uint32_t *s) {
    VidkMv v = {(int16_t)((int)rnd(s, 49) - 24), (int16_t)((int)rnd(s, 33) - 16)};
    return v;
}

/* An intra prediction mode whose neighbours exist (FFmpeg refuses the others): Intra_16x16
 * (0 V, 1 H, 2 DC, 3 plane) and chroma (0 DC, 1 H, 2 V, 3 plane) from left / top. */
static unsigned i16_mode(uint32_t *s, int left, int top) {
    const unsigned m[4] = {2, left ? 1u : 2u, top ? 0u : 2u, left && top ? 3u : 2u};
    return m[rnd(s, 4)];
}
static unsigned chroma_mode(uint32_t *s, int left, int top) {
    const unsigned m[4] = {0, left ? 1u : 0u, top ? 2u : 0u, left && top ? 3u : 0u};
    return m[rnd(s, 4)];
}
/* Intra4x4PredMode / Intra8x8PredMode for a block with (or without) left and upper samples. */
static uint8_t nxn_mode(uint32_t *s, int left, int top) {
    static const uint8_t only_left[3] = {1, 2, 8}, only_top[4] = {0, 2, 3, 7};
    if (left && top) return (uint8_t)rnd(s, 9);
    if (left) return only_left[rnd(s, 3)];
    if (top) return only_top[rnd(s, 4)];
    return 2;
}

/* Macroblock (x, y) intra; row0: its slice's first row. */
static void make_intra(Frame *f, uint32_t *s, int x, int y, int row0) {
    const int left = x > 0, top = y > row0;
    uint16_t w = (uint16_t)(ENC_MBI_INTRA | chroma_mode(s, left, top) << 2);
    if (rnd(s, 2)) {
        w |= (uint16_t)i16_mode(s, left, top);
    } else {
        const int tx8 = (int)rnd(s, 2), n = tx8 ? 2 : 1;
        w |= ENC_MBI_NXN | (tx8 ? ENC_MBI_TX8 : 0);
        for (int by = 0; by < 4; by += n)
            for (int bx = 0; bx < 4; bx += n) {
                const uint8_t m = nxn_mode(s, bx > 0 || left, by > 0 || top);
                for (int j = 0; j < n; j++)
                    for (int i = 0; i < n; i++)
                        f->im4[(y * 4 + by + j) * S4 + x * 4 + bx + i] = m;
            }
    }
    f->mbi[y * MBW + x] = w;
}

/* The vectors of list l of macroblock (x, y): one per 4x4 block from v[] by partition. */
static void put_mv(Frame *f, int l, int x, int y, const int8_t *order, const VidkMv *v) {
    for (int b = 0; b < 16; b++)
        f->mv[l][(y * 4 + b / 4) * S4 + x * 4 + b % 4] = v[order[b]];
}

/* Sparse random levels of macroblock (x, y), or none at all. */
static void make_levels(Frame *f, uint32_t *s, int x, int y) {
    if (rnd(s, 5) < 2) return; /* no level: B_Skip where the word is direct */
    const int dens = 4 + (int)rnd(s, 40);
    for (int p = 0; p < 3; p++) {
        const int n = p ? 8 : 16, stride = p ? W / 2 : W;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                if (rnd(s, 1000) < (uint32_t)dens * (p ? 2u : 1u)) {
                    int v = 1 + (int)rnd(s, rnd(s, 8) ? 3 : 60);
                    if (rnd(s, 2)) v = -v;
                    f->lev[p][(y * n + j) * stride + x * n + i] = (int16_t)v;
                }
    }
}

/* A picture's decisions: type 0 I (IDR), 1 P, 2 B; slices: its slice count (intra modes
 * must not read across a slice's top edge). */
static void make_frame(Frame *f, uint32_t *s, int type, int slices) {
    memset(f, 0, sizeof(*f));
    for (int y = 0; y < MBH; y++) {
        const int row0 = vidk_h264s_slice_row0(MBH, slices, y);
        for (int x = 0; x < MBW; x++) {
            const int i = y * MBW + x;
            make_levels(f, s, x, y);
            int8_t order[16] = {0};
            VidkMv v[2][16];
            for (int k = 0; k < 16; k++)
                v[0][k] = rnd_mv(s), v[1][k] = rnd_mv(s);
            if (type == 0 || rnd(s, 100) < 15) {
                make_intra(f, s, x, y, row0);
                put_mv(f, 0, x, y, order, v[0]); /* not read: intra */
                put_mv(f, 1, x, y, order, v[1]);
                continue;
            }
            uint16_t w = 0;
            if (type == 1) { /* P: any partition */
                int sub[4] = {0, 0, 0, 0}, px[16], py[16], pw[16], pd[16];
                const int mode = (int)rnd(s, 4);
                for (int q = 0; q < 4 && mode == 3; q++)
                    sub[q] = (int)rnd(s, 4);
                w = (uint16_t)mode;
                for (int q = 0; q < 4; q++)
                    w |= (uint16_t)(sub[q] << (2 + 2 * q));
                (void)vidk_h264_parts(mode, sub, px, py, pw, pd, order);
                if (!sub[0] && !sub[1] && !sub[2] && !sub[3] && rnd(s, 2)) w |= ENC_MBI_TX8;
                put_mv(f, 0, x, y, order, v[0]);
            } else { /* B: direct (its vectors and lists whatever), L0, L1, Bi in one 16x16
                        partition or two 16x8 / 8x16 ones, each with its own lists */
                const int kind = (int)rnd(s, 4), mode = kind ? (int)rnd(s, 3) : 0;
                const int u0 = 1 + (int)rnd(s, 3), u1 = mode ? 1 + (int)rnd(s, 3) : u0;
                w = kind == 0 ? (uint16_t)(ENC_MBI_DIRECT | enc_h264_b_word(u0))
                              : (uint16_t)enc_h264_b_word2(mode, u0, u1);
                if (rnd(s, 2)) w |= ENC_MBI_TX8;
                for (int b = 0; b < 16; b++) /* direct: a vector per 8x8 quadrant */
                    order[b] = (int8_t)(kind == 0   ? (b / 8) * 2 + (b % 4) / 2
                                        : mode == 1 ? b / 8
                                        : mode == 2 ? (b % 4) / 2
                                                    : 0);
                put_mv(f, 0, x, y, order, v[0]);
                put_mv(f, 1, x, y, order, v[1]);
            }
            f->mbi[i] = w;
        }
    }
}

/* Run a shell command, its stdout + stderr into out (cap bytes); returns its exit status. */
static int run(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = 0;
    int c;
    while ((c = fgetc(p)) != EOF)
        if (n + 1 < cap) out[n++] = (char)c;
    out[n] = 0;
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The values of syntax element `name` in FFmpeg's trace_headers output, in order. */
static int trace_values(const char *trace, const char *name, long *v, int max) {
    int n = 0;
    const size_t len = strlen(name);
    for (const char *p = trace; (p = strstr(p, name)) != NULL; p += len) {
        const char *e = p + len;
        if (p[-1] != ' ' || *e != ' ') continue; /* the whole name */
        const char *eq = strchr(e, '=');
        const char *nl = strchr(e, '\n');
        if (!eq || (nl && nl < eq)) continue;
        if (n < max) v[n] = strtol(eq + 1, NULL, 10);
        n++;
    }
    return n;
}

int main(void) {
    const char *e = getenv("VIDK_TEST_SEED");
    uint32_t seed = e ? (uint32_t)strtoul(e, NULL, 0) : 20240601u;
    if (!seed) seed = 1;
    fprintf(stderr, "seed: %u (set VIDK_TEST_SEED to replay)\n", seed);
    char *out = malloc(1 << 22);
    if (!out) return 1;
    const int have_ffmpeg = system("command -v ffmpeg >/dev/null 2>&1 && command -v ffprobe "
                                   ">/dev/null 2>&1") == 0;
    /* coding order: I0 P3 B1 B2 P5 B4 */
    static const int64_t index[6] = {0, 3, 1, 2, 5, 4};
    static const int type[6] = {0, 1, 2, 2, 1, 2};
    static const long frame_num[6] = {0, 1, 2, 2, 2, 3};
    Frame *f = malloc(sizeof(Frame));
    CHECK(f != NULL);
    for (int cfg = 0; f && cfg < 4; cfg++) {
        const int cabac = cfg & 1, slices = cfg < 2 ? 3 : 1;
        VidkH264Stream *st = vidk_h264_stream_new(W - 6, H - 2, W, H, 26, slices, 25, 1, 16, 1);
        CHECK(st != NULL);
        if (!st) break;
        CHECK(vidk_h264_stream_set_cabac(st, cabac) == 0);
        CHECK(vidk_h264_stream_set_bframes(st, 1) == 0);
        char path[64];
        snprintf(path, sizeof(path), "bslice_%s_%d.264", cabac ? "cabac" : "cavlc", slices);
        FILE *o = fopen(path, "wb");
        CHECK(o != NULL);
        for (int k = 0; k < 6 && o; k++) {
            make_frame(f, &seed, type[k], slices);
            const VidkH264StreamFrame sf = {
                index[k], type[k] == 0, f->mbi,   f->mv[0], {f->lev[0], f->lev[1], f->lev[2]},
                f->im4,   type[k] == 2, f->mv[1], 0};
            const uint8_t *d;
            size_t n;
            CHECK(vidk_h264_stream_frame(st, NULL, NULL, &sf, &d, &n) == 0);
            CHECK(fwrite(d, 1, n, o) == n);
        }
        if (o) fclose(o);
        /* a B picture is refused without set_bframes */
        VidkH264Stream *nb = vidk_h264_stream_new(W, H, W, H, 26, 1, 25, 1, 16, 1);
        const VidkH264StreamFrame bad = {
            1, 0, f->mbi, f->mv[0], {f->lev[0], f->lev[1], f->lev[2]}, f->im4, 1, f->mv[1], 0};
        const uint8_t *d;
        size_t n;
        CHECK(nb && vidk_h264_stream_frame(nb, NULL, NULL, &bad, &d, &n) < 0);
        vidk_h264_stream_free(nb);
        vidk_h264_stream_free(st);
        if (!have_ffmpeg) continue;
        char cmd[512];
        /* FFmpeg decodes it printing nothing */
        snprintf(cmd, sizeof(cmd), "ffmpeg -nostdin -v error -i %s -f null - 2>&1", path);
        int rc = run(cmd, out, 1 << 22);
        if (rc != 0 || out[0]) fprintf(stderr, "%s: ffmpeg rc %d:\n%.4000s\n", path, rc, out);
        CHECK(rc == 0 && !out[0]);
        /* the frame types in display order */
        snprintf(cmd, sizeof(cmd),
                 "ffprobe -v error -show_entries frame=pict_type -of csv=p=0 %s 2>&1", path);
        rc = run(cmd, out, 1 << 22);
        if (strcmp(out, "I\nB\nB\nP\nB\nP\n") != 0)
            fprintf(stderr, "%s: ffprobe rc %d, frame types:\n%s\n", path, rc, out);
        CHECK(rc == 0 && strcmp(out, "I\nB\nB\nP\nB\nP\n") == 0);
        /* the slice headers as FFmpeg reads them (every slice of each picture) */
        snprintf(cmd, sizeof(cmd),
                 "ffmpeg -nostdin -v trace -i %s -c copy -bsf:v trace_headers -f null - 2>&1 "
                 "| grep -F trace_headers",
                 path);
        rc = run(cmd, out, 1 << 22);
        long v[64];
        const int ns = 6 * slices;
        CHECK_EQ_U(trace_values(out, "slice_type", v, 64), ns);
        for (int k = 0; k < ns && k < 64; k++)
            CHECK_EQ_U(v[k], type[k / slices] == 0 ? 7 : type[k / slices] == 1 ? 5 : 6);
        CHECK_EQ_U(trace_values(out, "frame_num", v, 64), ns);
        for (int k = 0; k < ns && k < 64; k++)
            CHECK_EQ_U(v[k], frame_num[k / slices]);
        CHECK_EQ_U(trace_values(out, "pic_order_cnt_lsb", v, 64), ns);
        for (int k = 0; k < ns && k < 64; k++)
            CHECK_EQ_U(v[k], 2 * index[k / slices]);
        CHECK_EQ_U(trace_values(out, "direct_spatial_mv_pred_flag", v, 64), 3 * slices);
        for (int k = 0; k < 3 * slices && k < 64; k++)
            CHECK_EQ_U(v[k], 1);
        /* nal_ref_idc of the slices' NAL units: the last ones (FFmpeg traces the SPS and
         * PPS of its extradata too, then those of the access unit) */
        const int nn = trace_values(out, "nal_ref_idc", v, 64);
        CHECK(nn >= ns && nn <= 64);
        for (int k = 0; nn >= ns && nn <= 64 && k < ns; k++)
            CHECK_EQ_U(v[nn - ns + k], type[k / slices] == 2 ? 0 : 3);
        fprintf(stderr, "%s: FFmpeg decodes it; I B B P B P; slice headers as written\n", path);
    }
    free(f);
    free(out);
    if (!have_ffmpeg) {
        fprintf(stderr, "test_h264_bslice: ffmpeg / ffprobe not on PATH: the streams were "
                        "written but not judged, skipped (77)\n");
        return test_failures ? 1 : 77;
    }
    return test_finish("test_h264_bslice");
}
