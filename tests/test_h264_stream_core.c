/* The H.264 entropy coder's device path (src/cuda/stream.cu) emulated on the CPU: the
 * per-macroblock core functions its kernels call (src/enc/h264_stream_core.h), run in the
 * kernels' order, every pass over all macroblocks in a scrambled order (a device runs them
 * in any order), the two scans sequential, the slices joined by
 * vidk_h264_stream_frame_packed. It must write the host writer's bytes
 * (vidk_h264_stream_frame) on frames of the coding loop (real and generated video, 1 to 3
 * slices, QP 0 to 51) and on synthetic frames with extreme decisions, vectors and levels;
 * every macroblock stays within VIDK_H264S_MB_MAX_BITS; a small slot raises the overflow
 * flag (the CUDA encoder then codes the frame on the host).
 *
 *   test_h264_stream_core [VIDEO_DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc/enc.h"
#include "enc/h264_stream.h"
#include "enc/h264_stream_core.h"
#include "gen.h"
#include "picio.h"
#include "test_util.h"
#include "test_frames.h"

/* The device path's buffers (stream.cu), on the host. */
typedef struct Emu {
    int mbw, mbh, slices, n;
    size_t slot_bytes, words_cap;
    uint8_t *tc, *slots, *skip;
    uint32_t *bits, *words;
    int32_t *key, *last;
    uint64_t *len, *off, *slice_off;
    int *order; /* a scrambled permutation of the macroblocks */
} Emu;

static uint32_t emu_seed = 1;

static void emu_init(Emu *m, int mbw, int mbh, int slices, size_t slot_bytes) {
    memset(m, 0, sizeof(*m));
    m->mbw = mbw, m->mbh = mbh, m->slices = slices, m->n = mbw * mbh;
    m->slot_bytes = slot_bytes;
    const size_t n = (size_t)m->n;
    m->words_cap = n * (slot_bytes + 16) / 4 + 16;
    m->tc = calloc(n, 24);
    m->slots = calloc(n, slot_bytes);
    m->skip = calloc(n, 1);
    m->bits = calloc(n, sizeof(uint32_t));
    m->words = calloc(m->words_cap, sizeof(uint32_t));
    m->key = calloc(n, sizeof(int32_t));
    m->last = calloc(n, sizeof(int32_t));
    m->len = calloc(n + 1, sizeof(uint64_t));
    m->off = calloc(n + 1, sizeof(uint64_t));
    m->slice_off = calloc((size_t)slices + 1, sizeof(uint64_t));
    m->order = calloc(n, sizeof(int));
    CHECK(m->tc && m->slots && m->skip && m->bits && m->words && m->key && m->last && m->len &&
          m->off && m->slice_off && m->order);
}

static void emu_free(Emu *m) {
    free(m->tc);
    free(m->slots);
    free(m->skip);
    free(m->bits);
    free(m->words);
    free(m->key);
    free(m->last);
    free(m->len);
    free(m->off);
    free(m->slice_off);
    free(m->order);
}

static void scramble(Emu *m) {
    for (int i = 0; i < m->n; i++)
        m->order[i] = i;
    for (int i = m->n - 1; i > 0; i--) {
        const int j = (int)(test_rand(&emu_seed) % (uint32_t)(i + 1)), t = m->order[i];
        m->order[i] = m->order[j], m->order[j] = t;
    }
}

/* One frame through the device path's passes; the access unit from the packed writer s.
 * Returns 1 when a macroblock overflowed its slot (then nothing is written), else 0; the
 * largest macroblock_layer() into *max_bits. */
static int emu_frame(Emu *m, VidkH264Stream *s, const VidkH264StreamFrame *f, int W,
                     const uint8_t **data, size_t *size, uint32_t *max_bits) {
    const int n = m->n;
    const VidkH264sCtx c = {m->mbw,
                            m->mbh,
                            W,
                            m->slices,
                            f->intra,
                            0,
                            f->mbi,
                            f->mv4,
                            {f->lev[0], f->lev[1], f->lev[2]},
                            m->tc,
                            {m->tc + (size_t)n * 16, m->tc + (size_t)n * 20}};
    int ovf = 0;
    memset(m->tc, 0xee, (size_t)n * 24); /* every entry must be written by pass 1 */
    scramble(m);
    for (int k = 0; k < n; k++) /* count_kernel */
        vidk_h264s_count(&c, m->order[k]);
    scramble(m);
    for (int k = 0; k < n; k++) /* code_kernel */
        ovf |= vidk_h264s_code_slot(&c, m->order[k], m->slots, m->slot_bytes, m->bits, m->skip,
                                    m->key);
    *max_bits = 0;
    for (int i = 0; i < n; i++)
        if (m->bits[i] > *max_bits) *max_bits = m->bits[i];
    for (int i = 0; i < n; i++) /* inclusive max-scan (CUB on the device) */
        m->last[i] = i ? (m->key[i] > m->last[i - 1] ? m->key[i] : m->last[i - 1]) : m->key[0];
    scramble(m);
    for (int k = 0; k < n; k++) /* len_kernel */
        m->len[m->order[k]] = vidk_h264s_len(&c, m->order[k], m->last, m->skip, m->bits);
    m->len[n] = 0;
    m->off[0] = 0;
    for (int i = 0; i < n; i++) /* exclusive sum (CUB) */
        m->off[i + 1] = m->off[i] + m->len[i];
    if (ovf) return 1;
    /* zero_kernel */
    size_t nw = (size_t)((m->off[n] + 31) / 32) + 4;
    CHECK(nw <= m->words_cap);
    if (nw > m->words_cap) nw = m->words_cap;
    memset(m->words, 0, nw * sizeof(uint32_t));
    memset(m->slice_off, 0xff, ((size_t)m->slices + 1) * sizeof(uint64_t));
    scramble(m);
    for (int k = 0; k < n; k++) /* pack_kernel */
        vidk_h264s_pack(&c, m->order[k], m->last, m->skip, m->bits, m->slots, m->slot_bytes,
                        m->off, m->words, m->slice_off);
    for (int k = 0; k < m->slices; k++)
        CHECK(m->slice_off[k] <= m->slice_off[k + 1]);
    CHECK(m->slice_off[0] == 0 && m->slice_off[m->slices] == m->off[n]);
    CHECK(vidk_h264_stream_frame_packed(s, f->index, f->intra, (const uint8_t *)m->words,
                                        m->slice_off, data, size) == 0);
    return 0;
}

/* A frame through the host writer a and the emulated device path (writer b, buffers m, and
 * a second time with small slots in ms when given): the same bytes. */
static void compare_frame(const char *what, VidkH264Stream *a, VidkH264Stream *b, Emu *m,
                          const VidkH264StreamFrame *f, int W, uint32_t *max_bits) {
    const uint8_t *da, *db;
    size_t na, nb;
    uint32_t mb = 0;
    CHECK(vidk_h264_stream_frame(a, NULL, NULL, f, &da, &na) == 0);
    CHECK(emu_frame(m, b, f, W, &db, &nb, &mb) == 0);
    if (na != nb || memcmp(da, db, na)) {
        fprintf(stderr, "%s: frame %lld: emulated device stream differs (%zu / %zu bytes)\n",
                what, (long long)f->index, na, nb);
        CHECK(0);
    }
    CHECK(mb <= VIDK_H264S_MB_MAX_BITS);
    if (mb > *max_bits) *max_bits = mb;
}

/* Frames of the coding loop (c backend): the decisions, vectors and levels the stream
 * writer reads (the encoder's buffers), through both writers. */
static void loop_frames(const char *what, VidkPicture *frames, int nf, int qp, int slices,
                        int keyint) {
    VidkSettings set;
    vidk_default_settings(&set);
    set.backend = VIDK_BACKEND_C;
    VidkContext *ctx = NULL;
    VidkEncoder *e = NULL;
    VidkEncParams p;
    vidk_enc_default_params(&p);
    p.qp = qp, p.slices = slices, p.keyint = keyint, p.range = 8;
    p.outputs = VIDK_ENC_OUT_STREAM;
    CHECK(vidk_open(&ctx, &set) == 0);
    CHECK(vidk_enc_open(ctx, &e, &p, frames[0].w, frames[0].h) == 0);
    if (!e) {
        vidk_close(&ctx);
        return;
    }
    VidkEncGeometry g;
    vidk_enc_geometry(e, &g);
    const int W = g.coded_w, H = g.coded_h, mbw = W / 16, mbh = H / 16;
    const int ns = vidk_imax(1, vidk_imin(slices, mbh));
    VidkH264Stream *a =
        vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices, 25, 1, 16);
    VidkH264Stream *b =
        vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices, 25, 1, 16);
    VidkH264Stream *b2 =
        vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices, 25, 1, 16);
    CHECK(a && b && b2);
    Emu m, small;
    emu_init(&m, mbw, mbh, ns, VIDK_H264S_SLOT_BYTES);
    emu_init(&small, mbw, mbh, ns, 64);
    uint32_t max_bits = 0;
    int sent = 0, overflows = 0;
    for (int i = 0; i < nf; i++) {
        VidkEncFrameInfo info;
        while (sent < nf && sent <= i + 1)
            CHECK(vidk_enc_send(e, &frames[sent++]) == 0);
        CHECK(vidk_enc_receive(e, NULL, NULL, &info) == 0);
        const VidkH264StreamFrame f = {
            i, info.intra, e->st_mbi, e->st_mv4, {e->st_lev[0], e->st_lev[1], e->st_lev[2]}};
        compare_frame(what, a, b, &m, &f, W, &max_bits);
        /* the encoder's own stream is the host writer's */
        const uint8_t *d;
        size_t nd;
        CHECK(vidk_h264_stream_frame(b2, NULL, NULL, &f, &d, &nd) == 0);
        CHECK(nd == info.stream_size && !memcmp(d, info.stream, nd));
        /* small slots: the overflow is detected when a macroblock needs more */
        uint32_t mb = 0;
        const uint8_t *ds;
        size_t ns2;
        VidkH264Stream *tmp =
            vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices, 25, 1, 16);
        const int ovf = emu_frame(&small, tmp, &f, W, &ds, &ns2, &mb);
        uint32_t full = 0;
        for (int k = 0; k < m.n; k++)
            if (m.bits[k] > full) full = m.bits[k];
        CHECK(ovf == (full > 64 * 8));
        overflows += ovf;
        vidk_h264_stream_free(tmp);
    }
    fprintf(stderr,
            "%s: qp %d, %d slice(s): %d frames equal, largest macroblock %u bits, %d "
            "frame(s) over 64-byte slots\n",
            what, qp, ns, nf, (unsigned)max_bits, overflows);
    emu_free(&m);
    emu_free(&small);
    vidk_h264_stream_free(a);
    vidk_h264_stream_free(b);
    vidk_h264_stream_free(b2);
    vidk_enc_close(&e);
    vidk_close(&ctx);
}

/* Synthetic frames: random and extreme decision words, vectors and levels (every int16),
 * P_8x8 with 4x4 sub-partitions and alternating extreme vectors, Intra_16x16 with every
 * level at -32768: both writers agree and every macroblock stays within the bound. */
static void synthetic(void) {
    const int mbw = 5, mbh = 4, W = mbw * 16, H = mbh * 16;
    const size_t nl = (size_t)W * H;
    uint16_t *mbi = calloc((size_t)mbw * mbh, sizeof(uint16_t));
    VidkMv *mv = calloc(nl / 16, sizeof(VidkMv));
    int16_t *lev[3] = {calloc(nl, 2), calloc(nl / 4, 2), calloc(nl / 4, 2)};
    CHECK(mbi && mv && lev[0] && lev[1] && lev[2]);
    uint32_t seed = 12345, max_bits = 0;
    for (int slices = 1; slices <= 3; slices++) {
        VidkH264Stream *a = vidk_h264_stream_new(W, H, W, H, 20, slices, 25, 1, 16);
        VidkH264Stream *b = vidk_h264_stream_new(W, H, W, H, 20, slices, 25, 1, 16);
        CHECK(a && b);
        Emu m;
        emu_init(&m, mbw, mbh, slices, VIDK_H264S_SLOT_BYTES);
        for (int fi = 0; fi < 12; fi++) {
            const int intra = fi % 4 == 0, kind = fi % 3; /* 0 random, 1 extreme, 2 sparse */
            for (int i = 0; i < mbw * mbh; i++) {
                const uint32_t r = test_rand(&seed);
                if (intra) {
                    mbi[i] = (uint16_t)(ENC_MBI_INTRA | (r & 15));
                } else {
                    unsigned w = kind == 1 ? 3u | 0xffu << 2 : r & 0x3ffu;
                    const int sub0 = (w & 3) == 3 && (w & 0x3fcu) == 0;
                    if (((w & 3) != 3 || sub0) && (r >> 16 & 1)) w |= ENC_MBI_TX8;
                    mbi[i] = (uint16_t)w;
                }
            }
            for (size_t k = 0; k < nl / 16; k++) {
                const uint32_t r = test_rand(&seed);
                if (kind == 1) {
                    const int16_t v = (k + k / (W / 4)) & 1 ? 32767 : -32768;
                    mv[k].x = v, mv[k].y = (int16_t)(-1 - v);
                } else if (kind == 2) {
                    mv[k].x = (int16_t)((r & 3) - 1), mv[k].y = 0; /* many P_Skip */
                } else {
                    mv[k].x = (int16_t)(r & 0xffff), mv[k].y = (int16_t)(r >> 16);
                }
            }
            for (int p = 0; p < 3; p++)
                for (size_t k = 0; k < (p ? nl / 4 : nl); k++) {
                    const uint32_t r = test_rand(&seed);
                    int16_t v;
                    if (kind == 1)
                        v = -32768;
                    else if (kind == 2)
                        v = (r & 31) == 0 ? (int16_t)((r >> 8 & 3) - 1) : 0;
                    else
                        v = (r & 3) == 0   ? (int16_t)(r >> 16)
                            : (r & 3) == 1 ? (int16_t)((r >> 16 & 7) - 3)
                                           : 0;
                    lev[p][k] = v;
                }
            const VidkH264StreamFrame f = {fi, intra, mbi, mv, {lev[0], lev[1], lev[2]}};
            compare_frame("synthetic", a, b, &m, &f, W, &max_bits);
        }
        emu_free(&m);
        vidk_h264_stream_free(a);
        vidk_h264_stream_free(b);
    }
    fprintf(stderr, "synthetic: largest macroblock %u bits (bound %d)\n", (unsigned)max_bits,
            VIDK_H264S_MB_MAX_BITS);
    free(mbi);
    free(mv);
    for (int p = 0; p < 3; p++)
        free(lev[p]);
}

/* The pieces of pass 3: ue() lengths and bit packing at every alignment. */
static void pieces(void) {
    for (uint32_t k = 0; k < 5000; k++) {
        uint8_t buf[16];
        VidkBits b;
        vidk_bits_init(&b, buf, sizeof(buf));
        vidk_put_ue(&b, k);
        CHECK_EQ_U((unsigned)b.pos, (unsigned)vidk_h264s_ue_len(k));
    }
    uint32_t words[8];
    uint8_t ref[32];
    uint32_t seed = 99;
    for (int t = 0; t < 2000; t++) {
        memset(words, 0, sizeof(words));
        VidkBits b;
        vidk_bits_init(&b, ref, sizeof(ref));
        uint64_t pos = 0;
        const int start = (int)(test_rand(&seed) % 40);
        vidk_put_bits(&b, start / 2, 0); /* vidk_put_bits takes at most 32 bits */
        vidk_put_bits(&b, start - start / 2, 0);
        pos = (uint64_t)start;
        for (int j = 0; j < 4; j++) {
            const int n = 1 + (int)(test_rand(&seed) % 32);
            const uint32_t v = test_rand(&seed) & (n == 32 ? 0xffffffffu : (1u << n) - 1);
            vidk_put_bits(&b, n, v);
            vidk_h264s_or_bits(words, pos, v, n);
            pos += (uint64_t)n;
        }
        /* the same bytes, the partial last one included (zeros after the last bit) */
        CHECK(!memcmp(words, ref, (size_t)(pos + 7) / 8));
    }
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : NULL;
    emu_seed = test_seed();
    pieces();
    synthetic();
    VidkPicture f[6];
    CHECK(gen_frames(f, 6, 200, 120) == 0);
    static const int qps[] = {0, 22, 37, 51};
    for (int q = 0; q < 4; q++)
        loop_frames("generated 200x120", f, 6, qps[q], 1 + q % 3, 4);
    for (int i = 0; i < 6; i++)
        vidk_picture_free(&f[i]);
    if (dir) {
        const int n = clip_frames(f, 6, dir, "akiyo_176x144_30fps_30f.y4m");
        if (n == 6) {
            loop_frames("akiyo", f, 6, 26, 1, 0);
            loop_frames("akiyo", f, 6, 4, 3, 3);
        } else {
            test_video_missing("akiyo_176x144_30fps_30f.y4m not readable");
        }
        for (int i = 0; i < n; i++)
            vidk_picture_free(&f[i]);
    } else {
        test_video_missing("no clip folder given: real-clip part not run");
    }
    return test_finish("test_h264_stream_core");
}
