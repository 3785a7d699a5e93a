/* The H.264 entropy coder's device path (src/cuda/stream.cu) emulated on the CPU: the
 * per-macroblock, per-slice and per-run-of-bytes core functions its kernels call
 * (src/enc/h264_stream_core.h, src/enc/h264_nal_core.h), run in the kernels' order, every
 * pass over all macroblocks / slices / chunks / threads in a scrambled order (a device runs
 * them in any order), the scans sequential (CUB's block scans composed in thread order),
 * the slices' NAL units put behind the SPS / PPS by vidk_h264_stream_frame_nals. It must
 * write the host writer's bytes (vidk_h264_stream_frame) on frames of the coding loop (real
 * and generated video, 1 to 3 slices, QP 0 to 51) and on synthetic frames with extreme
 * decisions, vectors and levels; every macroblock stays within VIDK_H264S_MB_MAX_BITS; a
 * small slot raises the overflow flag (the CUDA encoder then codes the frame on the host).
 * The parallel emulation prevention (state maps, scan, positions, scatter) must equal a
 * transcription of the serial rule of 7.4.1 on random and adversarial byte strings, with the
 * device's chunking (256 threads of 16 bytes) and small ones, and the shared slice header
 * core a transcription of the host's former writer.
 *
 *   test_h264_stream_core [VIDEO_DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc/enc.h"
#include "enc/h264_nal_core.h"
#include "enc/h264_stream.h"
#include "enc/h264_stream_cabac.h"
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
    uint8_t *hdr, *nal;
    uint32_t *hbits;
    uint64_t *nlen, *noff;
    size_t raw_cap, nal_cap;
} Emu;

/* The device's emulation prevention chunking (stream.cu EP_T, EP_V). */
enum { DEV_T = 256, DEV_V = 16 };

static uint32_t emu_seed = 1;

static void emu_init(Emu *m, int mbw, int mbh, int slices, size_t slot_bytes) {
    memset(m, 0, sizeof(*m));
    m->mbw = mbw, m->mbh = mbh, m->slices = slices, m->n = mbw * mbh;
    m->slot_bytes = slot_bytes;
    const size_t n = (size_t)m->n;
    /* stream.cu's raw_cap, in words */
    m->words_cap = (n * (slot_bytes + 16) + (size_t)slices * (VIDK_H264_HDR_SLOT + 8) + 64 +
                    DEV_T * DEV_V - 1) /
                   (DEV_T * DEV_V) * (DEV_T * DEV_V) / 4;
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
    m->order = calloc(n > (size_t)slices ? n : (size_t)slices, sizeof(int));
    m->raw_cap = m->words_cap * 4;
    m->nal_cap = m->raw_cap + m->raw_cap / 2 + 16;
    m->hdr = calloc((size_t)slices, VIDK_H264_HDR_SLOT);
    m->nal = calloc(m->nal_cap, 1);
    m->hbits = calloc((size_t)slices, sizeof(uint32_t));
    m->nlen = calloc((size_t)slices + 1, sizeof(uint64_t));
    m->noff = calloc((size_t)slices + 1, sizeof(uint64_t));
    CHECK(m->tc && m->slots && m->skip && m->bits && m->words && m->key && m->last && m->len &&
          m->off && m->slice_off && m->order && m->hdr && m->nal && m->hbits && m->nlen &&
          m->noff);
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
    free(m->hdr);
    free(m->nal);
    free(m->hbits);
    free(m->nlen);
    free(m->noff);
}

/* A scrambled permutation of 0 .. n - 1. */
static void permute(int *order, int n) {
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(test_rand(&emu_seed) % (uint32_t)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
}

static void scramble(Emu *m) {
    permute(m->order, m->n);
}

/* Emulation prevention as stream.cu's three kernels run it, with chunks of T threads of V
 * bytes: the raw NAL units (nals of them, noff[0..nals]) into out; returns the bytes
 * written. Chunks and threads in scrambled orders; the block scans (CUB) composed in thread
 * order. */
static uint64_t emu_ep(const uint8_t *raw, const uint64_t *noff, int nals, int T, int V,
                       uint8_t *out) {
    const uint64_t total = noff[nals], chunk = (uint64_t)T * V;
    const int chunks = (int)((total + chunk - 1) / chunk);
    VidkH264Ep *agg = malloc(((size_t)chunks + 1) * sizeof(*agg));
    VidkH264Ep *pre = malloc((size_t)T * sizeof(*pre));
    int *order = malloc(((size_t)(chunks > T ? chunks : T) + 1) * sizeof(int));
    CHECK(agg && pre && order);
    permute(order, chunks);
    for (int c = 0; c < chunks; c++) { /* ep_reduce_kernel */
        const int j = order[c];
        VidkH264Ep m = vidk_h264_ep_identity();
        for (int t = 0; t < T; t++)
            m = vidk_h264_ep_compose(
                m, vidk_h264_ep_run_map(raw, noff, nals, (uint64_t)j * chunk + (uint64_t)t * V,
                                        V, total));
        agg[j] = m;
    }
    VidkH264Ep run = vidk_h264_ep_identity(); /* ep_scan_kernel */
    for (int j = 0; j < chunks; j++) {
        const VidkH264Ep a = agg[j];
        agg[j] = run;
        run = vidk_h264_ep_compose(run, a);
    }
    const uint64_t size = total + run.cnt[0];
    permute(order, chunks);
    for (int c = 0; c < chunks; c++) { /* ep_put_kernel */
        const int j = order[c];
        VidkH264Ep ex = vidk_h264_ep_identity();
        for (int t = 0; t < T; t++) {
            pre[t] = ex;
            ex = vidk_h264_ep_compose(
                ex, vidk_h264_ep_run_map(raw, noff, nals, (uint64_t)j * chunk + (uint64_t)t * V,
                                         V, total));
        }
        int *th = malloc((size_t)T * sizeof(int));
        CHECK(th != NULL);
        permute(th, T);
        for (int k = 0; k < T; k++) {
            const int t = th[k];
            vidk_h264_ep_run_put(raw, noff, nals, (uint64_t)j * chunk + (uint64_t)t * V, V,
                                 total, vidk_h264_ep_compose(agg[j], pre[t]), out);
        }
        free(th);
    }
    free(agg);
    free(pre);
    free(order);
    return size;
}

/* One frame through the device path's passes; the access unit from the packed writer s.
 * Returns 1 when a macroblock overflowed its slot (then nothing is written), else 0; the
 * largest macroblock_layer() into *max_bits. */
/* A frame's picture kind for the writer's header functions. */
static VidkH264Pic pic_kind(const VidkH264StreamFrame *f) {
    return f->intra     ? VIDK_H264_PIC_I
           : !f->bslice ? VIDK_H264_PIC_P
           : f->bref    ? VIDK_H264_PIC_BREF
                        : VIDK_H264_PIC_B;
}

/* The kind of frame j of test_synthetic's pattern (I every 4 bp frames; with B-frames I P B B,
 * the first B a reference one with bp 2). */
static VidkH264Pic kind_at(int j, int bm, int bp) {
    const int b = bm && j % 4 >= 2;
    return j % (4 * bp) == 0       ? VIDK_H264_PIC_I
           : !b                    ? VIDK_H264_PIC_P
           : bp == 2 && j % 4 == 2 ? VIDK_H264_PIC_BREF
                                   : VIDK_H264_PIC_B;
}

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
                            {m->tc + (size_t)n * 16, m->tc + (size_t)n * 20},
                            f->im4,
                            f->bslice,
                            f->mv4b};
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
    VidkH264SliceHdr h;
    vidk_h264_stream_slice_hdr_next(s, f->index, pic_kind(f), &h);
    permute(m->order, m->slices);
    for (int k = 0; k < m->slices; k++) /* head_kernel */
        vidk_h264_nal_head(&c, &h, m->order[k], m->off, m->hdr, m->hbits, m->nlen);
    m->nlen[m->slices] = 0;
    m->noff[0] = 0;
    for (int k = 0; k < m->slices; k++) /* exclusive sum (CUB) */
        m->noff[k + 1] = m->noff[k] + m->nlen[k];
    /* zero_kernel: whole chunks */
    const size_t chunk = DEV_T * DEV_V;
    size_t nw = (size_t)((m->noff[m->slices] + chunk - 1) / chunk) * (chunk / 4);
    CHECK(nw <= m->words_cap);
    if (nw > m->words_cap) nw = m->words_cap;
    memset(m->words, 0, nw * sizeof(uint32_t));
    memset(m->slice_off, 0xff, ((size_t)m->slices + 1) * sizeof(uint64_t));
    scramble(m);
    for (int k = 0; k < n; k++) /* pack_kernel (len: the bit positions) */
        vidk_h264_nal_pack(&c, m->order[k], m->last, m->skip, m->bits, m->slots, m->slot_bytes,
                           m->off, m->hdr, m->hbits, m->noff, m->len, m->words, m->slice_off);
    for (int k = 0; k < m->slices; k++)
        CHECK(m->slice_off[k] <= m->slice_off[k + 1]);
    /* emulation prevention: the device's chunks, and small ones on the next frames */
    static int small = 0;
    const int T = small % 3 == 0 ? DEV_T : 1 + small % 5,
              V = small % 3 == 0 ? DEV_V : 1 + small % 7;
    small++;
    const uint64_t nb = emu_ep((const uint8_t *)m->words, m->noff, m->slices, T, V, m->nal);
    CHECK(nb <= m->nal_cap);
    CHECK(vidk_h264_stream_frame_nals(s, f->index, pic_kind(f), m->nal, (size_t)nb, data,
                                      size) == 0);
    return 0;
}

/* CABAC with the engine on the host (cuda's default): frame f through writer a's own passes
 * and through writer b from bins binarised as the device's passes 1 and 2 do (a thread per
 * macroblock, each into its own slot, then packed back to back): the same bytes. */
static void compare_frame_bins(VidkH264Stream *a, VidkH264Stream *b,
                               const VidkH264StreamFrame *f, int mbw, int mbh, int slices) {
    const int n = mbw * mbh, W = mbw * 16;
    const uint32_t cap = VIDK_CABAC_MB_MAX_BINS;
    VidkCabacPic cp = {calloc((size_t)n, sizeof(VidkCabacMb)), calloc((size_t)n, 32),
                       f->bslice ? calloc((size_t)n, 32) : NULL};
    uint8_t *tc = calloc((size_t)n, 24);
    uint16_t *slots = malloc((size_t)n * cap * sizeof(uint16_t)),
             *bins = malloc((size_t)n * cap * sizeof(uint16_t));
    uint32_t *boff = malloc(((size_t)n + 1) * sizeof(uint32_t)),
             *nb = malloc((size_t)n * sizeof(uint32_t));
    CHECK(cp.mb && cp.amvd && (!f->bslice || cp.amvd1) && tc && slots && bins && boff && nb);
    if (cp.mb && cp.amvd && (!f->bslice || cp.amvd1) && tc && slots && bins && boff && nb) {
        VidkH264sCtx c = {mbw,
                          mbh,
                          W,
                          slices,
                          f->intra,
                          0,
                          f->mbi,
                          f->mv4,
                          {f->lev[0], f->lev[1], f->lev[2]},
                          tc,
                          {tc + (size_t)n * 16, tc + (size_t)n * 20},
                          f->im4,
                          f->bslice,
                          f->mv4b};
        for (int i = 0; i < n; i++) { /* cabac_info_kernel */
            c.row0 = vidk_h264s_slice_row0(mbh, slices, i / mbw);
            vidk_cabac_mb_info(&c, &cp, i % mbw, i / mbw);
        }
        for (int i = n - 1; i >= 0; i--) { /* cabac_bins_kernel, in another order */
            const VidkH264sPlace pl = vidk_h264s_place(&c, i);
            c.row0 = pl.first / mbw;
            VidkCabacBins o = {slots + (size_t)i * cap, 0, cap};
            vidk_cabac_mb(&c, &cp, &o, i % mbw, i / mbw, i == pl.last);
            CHECK(o.n <= cap);
            nb[i] = o.n;
        }
        boff[0] = 0; /* the exclusive sum, then cabac_pack_kernel */
        for (int i = 0; i < n; i++) {
            boff[i + 1] = boff[i] + nb[i];
            memcpy(bins + boff[i], slots + (size_t)i * cap, nb[i] * sizeof(uint16_t));
        }
        const uint8_t *da, *db;
        size_t na, nbytes;
        CHECK(vidk_h264_stream_frame(a, NULL, NULL, f, &da, &na) == 0);
        CHECK(vidk_h264_stream_frame_bins(b, NULL, NULL, f->index, pic_kind(f), bins, boff, &db,
                                          &nbytes) == 0);
        CHECK(na == nbytes && !memcmp(da, db, na));
    }
    free(cp.mb), free(cp.amvd), free(cp.amvd1), free(tc), free(slots), free(bins), free(boff);
    free(nb);
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
    p.cabac = 0;        /* the CAVLC coder emulated below */
    p.deblock = qp & 1; /* the slice headers' disable_deblocking_filter_idc: both */
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
        vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices, 25, 1, 16, p.deblock);
    VidkH264Stream *b =
        vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices, 25, 1, 16, p.deblock);
    VidkH264Stream *b2 =
        vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices, 25, 1, 16, p.deblock);
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
        const VidkH264StreamFrame f = {i,
                                       info.intra,
                                       e->st_mbi,
                                       e->st_mv4,
                                       {e->st_lev[0], e->st_lev[1], e->st_lev[2]},
                                       e->st_im4,
                                       0,
                                       NULL,
                                       0};
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
        VidkH264Stream *tmp = vidk_h264_stream_new(frames[0].w, frames[0].h, W, H, qp, slices,
                                                   25, 1, 16, p.deblock);
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
 * level at -32768; with B-frames on (bm), B pictures of every macroblock kind (B_Direct /
 * B_Skip, list 0, list 1, bi-predicted, intra) and random list-1 vectors: both writers agree
 * and every macroblock stays within the bound. */
static void synthetic(void) {
    const int mbw = 5, mbh = 4, W = mbw * 16, H = mbh * 16;
    const size_t nl = (size_t)W * H;
    uint16_t *mbi = calloc((size_t)mbw * mbh, sizeof(uint16_t));
    VidkMv *mv = calloc(nl / 16, sizeof(VidkMv)), *mvb = calloc(nl / 16, sizeof(VidkMv));
    uint8_t *im4 = calloc(nl / 16, 1);
    int16_t *lev[3] = {calloc(nl, 2), calloc(nl / 4, 2), calloc(nl / 4, 2)};
    CHECK(mbi && mv && mvb && im4 && lev[0] && lev[1] && lev[2]);
    uint32_t seed = 12345, max_bits = 0;
    for (int sb = 0; sb < 6; sb++) {
        const int slices = 1 + sb % 3, bm = sb >= 3;
        VidkH264Stream *a = vidk_h264_stream_new(W, H, W, H, 20, slices, 25, 1, 16, 0);
        VidkH264Stream *b = vidk_h264_stream_new(W, H, W, H, 20, slices, 25, 1, 16, 0);
        /* CABAC: the host writer's passes against the engine on bins made elsewhere */
        VidkH264Stream *ca = vidk_h264_stream_new(W, H, W, H, 20, slices, 25, 1, 16, 0);
        VidkH264Stream *cb = vidk_h264_stream_new(W, H, W, H, 20, slices, 25, 1, 16, 0);
        CHECK(a && b && ca && cb);
        CHECK(!vidk_h264_stream_set_cabac(ca, 1) && !vidk_h264_stream_set_cabac(cb, 1));
        const int bp = sb == 5 ? 2 : 1; /* the last: reference B pictures too */
        if (bm)
            CHECK(
                !vidk_h264_stream_set_bframes(a, bp) && !vidk_h264_stream_set_bframes(b, bp) &&
                !vidk_h264_stream_set_bframes(ca, bp) && !vidk_h264_stream_set_bframes(cb, bp));
        VidkH264SliceHdr after; /* the next frame's header from before this one was written */
        VidkH264SliceHdr after2[2]; /* frame fi's from before frame fi - 2 was written */
        Emu m;
        emu_init(&m, mbw, mbh, slices, VIDK_H264S_SLOT_BYTES);
        for (int fi = 0; fi < 12; fi++) {
            /* 0 random, 1 extreme, 2 sparse; with reference B pictures an IDR one every 8 (a P
             * after a reference B: list 0 reordered) */
            const int intra = fi % (4 * bp) == 0, kind = fi % 3;
            const int bslice = bm && fi % 4 >= 2; /* I P B B */
            for (int i = 0; i < mbw * mbh; i++) {
                const uint32_t r = test_rand(&seed);
                if (bslice && (r >> 20) % 6) { /* 1, 2: direct; 3..5: 16x16, 16x8, 8x16 with
                                                  any lists in each partition; 0: intra */
                    const int k = (int)(r >> 20) % 6, u0 = 1 + (int)(r >> 8 & 15) % 3,
                              u1 = 1 + (int)(r >> 12 & 15) % 3;
                    const unsigned bw = k <= 2 ? ENC_MBI_DIRECT | enc_h264_b_word(u0)
                                               : enc_h264_b_word2(k - 3, u0, k > 3 ? u1 : u0);
                    mbi[i] = (uint16_t)(bw | (r >> 16 & 1 ? ENC_MBI_TX8 : 0u));
                } else if (intra || bslice) { /* Intra_16x16, or I_NxN (Intra_4x4 or _8x8) every
                                                 other one */
                    mbi[i] = (uint16_t)(ENC_MBI_INTRA |
                                        (r >> 4 & 1 ? ENC_MBI_NXN | (r & 12) |
                                                          (r >> 5 & 1 ? ENC_MBI_TX8 : 0u)
                                                    : (r & 15)));
                } else {
                    unsigned w = kind == 1 ? 3u | 0xffu << 2 : r & 0x3ffu;
                    const int sub0 = (w & 3) == 3 && (w & 0x3fcu) == 0;
                    if (((w & 3) != 3 || sub0) && (r >> 16 & 1)) w |= ENC_MBI_TX8;
                    mbi[i] = (uint16_t)w;
                }
            }
            for (size_t k = 0; k < nl / 16; k++) {
                const uint32_t r = test_rand(&seed);
                im4[k] = (uint8_t)(kind == 1 ? 8 * (k & 1) : r % 9); /* Intra4x4PredMode */
                if (kind == 1) {
                    const int16_t v = (k + k / (W / 4)) & 1 ? 32767 : -32768;
                    mv[k].x = v, mv[k].y = (int16_t)(-1 - v);
                } else if (kind == 2) {
                    mv[k].x = (int16_t)((r & 3) - 1), mv[k].y = 0; /* many P_Skip */
                } else {
                    mv[k].x = (int16_t)(r & 0xffff), mv[k].y = (int16_t)(r >> 16);
                }
                mvb[k].x = (int16_t)(kind == 1 ? -mv[k].x : (int16_t)(r >> 3 & 0xff) - 128);
                mvb[k].y = (int16_t)(kind == 1 ? mv[k].y : (int16_t)(r >> 11 & 0xff) - 128);
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
            const VidkH264StreamFrame f = {fi,
                                           intra,
                                           mbi,
                                           mv,
                                           {lev[0], lev[1], lev[2]},
                                           im4,
                                           bslice,
                                           mvb,
                                           bslice && bp == 2 && fi % 4 == 2};
            VidkH264SliceHdr next; /* vidk_h264_stream_slice_hdr_after's, checked */
            vidk_h264_stream_slice_hdr_next(a, fi, pic_kind(&f), &next);
            CHECK(fi == 0 || !memcmp(&next, &after, sizeof(next)));
            CHECK(fi < 2 || !memcmp(&next, &after2[fi % 2], sizeof(next)));
            CHECK(pic_kind(&f) == kind_at(fi, bm, bp));
            {
                const int64_t prev[2] = {fi, fi + 1};
                const VidkH264Pic pk[2] = {kind_at(fi, bm, bp), kind_at(fi + 1, bm, bp)};
                vidk_h264_stream_slice_hdr_after(a, 2, prev, pk, fi + 2,
                                                 kind_at(fi + 2, bm, bp), &after2[fi % 2]);
            }
            {
                const int ni = (fi + 1) % (4 * bp) == 0, nb = bm && (fi + 1) % 4 >= 2;
                const VidkH264StreamFrame g = {fi + 1,
                                               ni,
                                               NULL,
                                               NULL,
                                               {NULL, NULL, NULL},
                                               NULL,
                                               nb,
                                               NULL,
                                               nb && bp == 2 && (fi + 1) % 4 == 2};
                const int64_t prev = fi;
                const VidkH264Pic pk = pic_kind(&f);
                vidk_h264_stream_slice_hdr_after(a, 1, &prev, &pk, fi + 1, pic_kind(&g),
                                                 &after);
            }
            compare_frame("synthetic", a, b, &m, &f, W, &max_bits);
            compare_frame_bins(ca, cb, &f, mbw, mbh, slices);
        }
        emu_free(&m);
        vidk_h264_stream_free(a);
        vidk_h264_stream_free(b);
        vidk_h264_stream_free(ca);
        vidk_h264_stream_free(cb);
    }
    fprintf(stderr, "synthetic: largest macroblock %u bits (bound %d)\n", (unsigned)max_bits,
            VIDK_H264S_MB_MAX_BITS);
    free(mbi);
    free(mv);
    free(mvb);
    free(im4);
    for (int p = 0; p < 3; p++)
        free(lev[p]);
}

/* TotalCoeff (vidk_h264s_piece_count, four levels at a time and by position masks) against
 * the count over each piece's levels in scan order (vidk_h264s_piece_lev), on random, sparse
 * and extreme level planes with every kind of macroblock; and the 8x8 position masks
 * against VIDK_H264_ZZ8. */
static void counts(void) {
    static const uint8_t zz8[64] = VIDK_H264_ZZ8, zz4[16] = VIDK_H264_ZZ4;
    for (int i = 0; i < 16; i++)
        CHECK((int)(VIDK_H264S_ZZ4_NIB >> (4 * i) & 15) == zz4[i]);
    for (int i4 = 0; i4 < 4; i4++) {
        uint64_t m = 0;
        for (int i = 0; i < 16; i++)
            m |= (uint64_t)1 << zz8[4 * i + i4];
        CHECK(m == vidk_h264s_zz8_piece(i4));
    }
    const int mbw = 3, mbh = 2, W = mbw * 16, H = mbh * 16, n = mbw * mbh;
    const size_t nl = (size_t)W * H;
    uint16_t mbi[6];
    int16_t *lev[3] = {calloc(nl, 2), calloc(nl / 4, 2), calloc(nl / 4, 2)};
    uint8_t *tc = calloc((size_t)n * 24, 1);
    CHECK(lev[0] && lev[1] && lev[2] && tc);
    VidkH264sCtx c;
    memset(&c, 0, sizeof(c));
    c.mbw = mbw, c.mbh = mbh, c.W = W, c.slices = 1, c.mbi = mbi;
    for (int p = 0; p < 3; p++)
        c.lev[p] = lev[p];
    c.tcl = tc, c.tcc[0] = tc + n * 16, c.tcc[1] = tc + n * 20;
    uint32_t seed = 777;
    for (int round = 0; round < 400; round++) {
        const int kind = round % 4; /* random, sparse, extreme, single level */
        for (int i = 0; i < n; i++) {
            const uint32_t r = test_rand(&seed);
            mbi[i] = (uint16_t)((r & 3) == 0 ? ENC_MBI_INTRA : (r & 1) ? ENC_MBI_TX8 : 0u);
        }
        for (int p = 0; p < 3; p++)
            for (size_t k = 0; k < (p ? nl / 4 : nl); k++) {
                const uint32_t r = test_rand(&seed);
                const int16_t ext[4] = {-32768, 32767, 1, -1};
                lev[p][k] = kind == 0   ? ((r & 1) ? (int16_t)(r >> 16) : 0)
                            : kind == 1 ? ((r & 15) == 0 ? (int16_t)((r >> 8 & 3) - 1) : 0)
                            : kind == 2 ? ext[r >> 8 & 3]
                                        : 0;
            }
        if (kind == 3) { /* one level, every position in turn */
            const uint32_t r = test_rand(&seed);
            lev[r & 1 ? 0 : 1 + (r >> 1 & 1)][(r >> 2) % (r & 1 ? nl : nl / 4)] =
                (int16_t)(r >> 16 | 1);
        }
        memset(tc, 0xee, (size_t)n * 24);
        for (int i = 0; i < n; i++)
            vidk_h264s_count(&c, i);
        for (int i = 0; i < n; i++) {
            const int mbx = i % mbw, mby = i / mbw, intra16 = !!(mbi[i] & ENC_MBI_INTRA);
            for (int j = VIDK_H264S_P_LUMA; j < VIDK_H264S_PIECES; j++) {
                if (j >= VIDK_H264S_P_CDC && j < VIDK_H264S_P_CAC) continue;
                int16_t v[16];
                (void)vidk_h264s_piece_lev(&c, mbx, mby, intra16, !!(mbi[i] & ENC_MBI_TX8), j,
                                           v);
                const int first = j >= VIDK_H264S_P_CAC || intra16;
                int want = 0;
                for (int k = first; k < 16; k++)
                    want += v[k] != 0;
                int got;
                if (j < VIDK_H264S_P_CDC) {
                    const int k = j - VIDK_H264S_P_LUMA;
                    got = tc[(mby * 4 + vidk_h264s_blk_y(k)) * (mbw * 4) + mbx * 4 +
                             vidk_h264s_blk_x(k)];
                } else {
                    const int p = (j - VIDK_H264S_P_CAC) >> 2, k = (j - VIDK_H264S_P_CAC) & 3;
                    got = c.tcc[p][(mby * 2 + (k >> 1)) * (mbw * 2) + mbx * 2 + (k & 1)];
                }
                if (got != want) {
                    fprintf(stderr, "counts: round %d mb %d piece %d: %d, want %d\n", round, i,
                            j, got, want);
                    CHECK(0);
                }
                /* after pass 1 the shortcut of the empty blocks gives the same levels and
                 * flags (the DC piece and chroma DC have no map: read as before) */
                int16_t w[16];
                const int fv = vidk_h264s_piece_lev(&c, mbx, mby, intra16,
                                                    !!(mbi[i] & ENC_MBI_TX8), j, v),
                          fw = vidk_h264s_piece_lev_tc(&c, mbx, mby, intra16,
                                                       !!(mbi[i] & ENC_MBI_TX8), j, w);
                CHECK(fv == fw && !memcmp(v, w, sizeof(v)));
            }
        }
    }
    for (int p = 0; p < 3; p++)
        free(lev[p]);
    free(tc);
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

/* 7.4.1 / Annex B transcribed: the NAL units of rbsp[k] (len[k] bytes) with start code,
 * header byte hb[k] and emulation_prevention_three_byte before any byte 0..3 that follows
 * two zero bytes of the output since the last inserted one. */
static size_t ref_nals(const uint8_t *const *rbsp, const size_t *len, const uint8_t *hb,
                       int nals, uint8_t *out) {
    size_t o = 0;
    for (int k = 0; k < nals; k++) {
        out[o++] = 0, out[o++] = 0, out[o++] = 0, out[o++] = 1, out[o++] = hb[k];
        int zeros = 0;
        for (size_t i = 0; i < len[k]; i++) {
            if (zeros >= 2 && rbsp[k][i] <= 3) {
                out[o++] = 3;
                zeros = 0;
            }
            out[o++] = rbsp[k][i];
            zeros = rbsp[k][i] == 0 ? zeros + 1 : 0;
        }
    }
    return o;
}

/* The parallel emulation prevention (emu_ep: the device's kernels' core functions) against
 * the serial rule on byte strings: all zeros, 00 00 0x patterns, 00 00 03 in the data,
 * random with P(0) = 0.9, uniform random; 1 to 4 NAL units of 0 to 5000 bytes each; the
 * device's chunking and small ones. Returns the 0x03 bytes inserted. */
static uint64_t ep_strings(void) {
    enum { MAXN = 4, MAXL = 5000 };
    uint8_t *rbsp[MAXN], *raw = malloc(MAXN * (MAXL + 5)), *ref = malloc(MAXN * (MAXL * 2 + 5)),
                         *out = malloc(MAXN * (MAXL * 2 + 5));
    CHECK(raw && ref && out);
    for (int k = 0; k < MAXN; k++)
        CHECK((rbsp[k] = malloc(MAXL)) != NULL);
    uint32_t seed = 4242;
    uint64_t inserted = 0;
    static const int cfg[][2] = {{DEV_T, DEV_V}, {1, 1}, {2, 3}, {4, 1}, {3, 7}, {32, 16}};
    for (int t = 0; t < 600; t++) {
        const int nals = 1 + (int)(test_rand(&seed) % MAXN), kind = t % 6;
        size_t len[MAXN];
        uint8_t hb[MAXN];
        uint64_t noff[MAXN + 1];
        const uint8_t *rb[MAXN];
        size_t r = 0;
        for (int k = 0; k < nals; k++) {
            const uint32_t q = test_rand(&seed);
            /* lengths 0..5000, short ones often (the chunk and slice boundaries) */
            len[k] = q % 4 == 0 ? q >> 8 & 7 : q % 4 == 1 ? MAXL : (q >> 8) % (MAXL + 1);
            hb[k] = (uint8_t)(k & 1 ? 0x65 : 0x61);
            for (size_t i = 0; i < len[k]; i++) {
                const uint32_t v = test_rand(&seed);
                uint8_t x;
                switch (kind) {
                case 0:
                    x = 0;
                    break; /* all zeros */
                case 1:
                    x = i % 3 == 2 ? (uint8_t)(v & 3) : 0;
                    break; /* 00 00 0x */
                case 2:
                    x = i % 3 == 2 ? 3 : 0;
                    break; /* 00 00 03 */
                case 3:
                    x = v % 10 ? 0 : (uint8_t)(v >> 8);
                    break; /* P(0) = 0.9 */
                case 4:
                    x = (uint8_t)(v >> 8 & 0x83);
                    break; /* small bytes */
                default:
                    x = (uint8_t)(v >> 8);
                    break; /* uniform */
                }
                rbsp[k][i] = x;
            }
            if (kind == 0 && len[k] && (q & 16)) rbsp[k][len[k] - 1] = 0x80; /* trailing bits */
            rb[k] = rbsp[k];
            noff[k] = r;
            raw[r++] = 0, raw[r++] = 0, raw[r++] = 0, raw[r++] = 1, raw[r++] = hb[k];
            memcpy(raw + r, rbsp[k], len[k]);
            r += len[k];
        }
        noff[nals] = r;
        const size_t nr = ref_nals(rb, len, hb, nals, ref);
        const int c = t / 6 % 6;
        memset(out, 0xcc, MAXN * (MAXL * 2 + 5));
        const uint64_t no = emu_ep(raw, noff, nals, cfg[c][0], cfg[c][1], out);
        if (no != nr || memcmp(out, ref, nr)) {
            fprintf(stderr,
                    "emulation prevention: string %d (kind %d, %d NAL units, chunks %dx%d) "
                    "differs: %llu / %zu bytes\n",
                    t, kind, nals, cfg[c][0], cfg[c][1], (unsigned long long)no, nr);
            CHECK(0);
        }
        /* the serial form (the host writer's put_nal) too */
        size_t o = 0;
        for (int k = 0; k < nals; k++) {
            memcpy(out + o, raw + noff[k], VIDK_H264_NAL_PREFIX);
            o += VIDK_H264_NAL_PREFIX;
            int st = 0;
            for (size_t i = 0; i < len[k]; i++) {
                int ins;
                st = vidk_h264_ep_step(st, rbsp[k][i], &ins);
                if (ins) out[o++] = 3;
                out[o++] = rbsp[k][i];
            }
        }
        CHECK(o == nr && !memcmp(out, ref, nr));
        inserted += nr - r;
    }
    /* the maps compose associatively: (a b) c = a (b c) on random triples */
    for (int t = 0; t < 2000; t++) {
        VidkH264Ep m[3];
        for (int j = 0; j < 3; j++) {
            m[j] = vidk_h264_ep_identity();
            const int n = (int)(test_rand(&seed) % 5);
            for (int i = 0; i < n; i++) {
                const uint32_t v = test_rand(&seed);
                m[j] = vidk_h264_ep_compose(
                    m[j], vidk_h264_ep_map(v & 1 ? 0 : v >> 8 & 7, (v >> 16 & 7) == 0));
            }
        }
        const VidkH264Ep l = vidk_h264_ep_compose(vidk_h264_ep_compose(m[0], m[1]), m[2]),
                         rr = vidk_h264_ep_compose(m[0], vidk_h264_ep_compose(m[1], m[2]));
        CHECK(l.st == rr.st && l.cnt[0] == rr.cnt[0] && l.cnt[1] == rr.cnt[1] &&
              l.cnt[2] == rr.cnt[2]);
    }
    for (int k = 0; k < MAXN; k++)
        free(rbsp[k]);
    free(raw);
    free(ref);
    free(out);
    fprintf(stderr,
            "emulation prevention: 600 strings equal the serial rule, %llu bytes inserted\n",
            (unsigned long long)inserted);
    return inserted;
}

/* The slice header as the host wrote it before the shared core (7.3.3 for this stream:
 * frame_num in 4 bits, nal_ref_idc 3, slice_qp_delta 0, no deblocking). */
static void ref_slice_header(VidkBits *b, uint32_t first_mb, int intra, uint32_t fnum,
                             uint32_t idr) {
    vidk_put_ue(b, first_mb);
    vidk_put_ue(b, intra ? 7 : 5);
    vidk_put_ue(b, 0);
    vidk_put_bits(b, 4, fnum);
    if (intra) vidk_put_ue(b, idr);
    if (!intra) {
        vidk_put_bits(b, 1, 0);
        vidk_put_bits(b, 1, 0);
    }
    if (intra) {
        vidk_put_bits(b, 1, 0);
        vidk_put_bits(b, 1, 0);
    } else {
        vidk_put_bits(b, 1, 0);
    }
    vidk_put_se(b, 0);
    vidk_put_ue(b, 1);
}

/* The shared slice header core against the transcription, with the header of the host
 * writer's pictures (vidk_h264_stream_slice_hdr: frame_num, idr_pic_id), and within its
 * bound at the extremes. */
static void headers(void) {
    VidkH264Stream *s = vidk_h264_stream_new(64, 48, 64, 48, 26, 3, 25, 1, 16, 0);
    CHECK(s != NULL);
    uint32_t seed = 777;
    unsigned idr = 0;
    int64_t last_idr = 0;
    for (int64_t i = 0; i < 300; i++) {
        const int intra = i == 0 || test_rand(&seed) % 7 == 0;
        VidkH264SliceHdr h;
        vidk_h264_stream_slice_hdr(s, i, intra, &h);
        if (intra) idr++, last_idr = i;
        CHECK(h.frame_num == (uint32_t)((i - last_idr) & 15));
        CHECK(!intra || h.idr_pic_id == (idr & 0xffff));
        h.first_mb = test_rand(&seed) % 3 == 0 ? test_rand(&seed) >> 6 : test_rand(&seed) % 64;
        uint8_t a[64], b[64];
        VidkBits ba, bb;
        vidk_bits_init(&ba, a, sizeof(a));
        vidk_bits_init(&bb, b, sizeof(b));
        vidk_h264_slice_header(&ba, &h);
        ref_slice_header(&bb, h.first_mb, intra, h.frame_num, h.idr_pic_id);
        vidk_put_trailing(&ba);
        vidk_put_trailing(&bb);
        CHECK(ba.pos == bb.pos && !memcmp(a, b, ba.pos / 8));
        /* advance the writer's picture state */
        const uint8_t *d;
        size_t n;
        CHECK(vidk_h264_stream_frame_nals(s, i, intra ? VIDK_H264_PIC_I : VIDK_H264_PIC_P, NULL,
                                          0, &d, &n) == 0);
    }
    VidkH264SliceHdr h = {(1u << 26) - 1, 1, 3, 16, 65535, 65535, -51, 0, 0, 0, 16, 65535, 0};
    uint8_t buf[64];
    VidkBits b;
    vidk_bits_init(&b, buf, sizeof(buf));
    vidk_h264_slice_header(&b, &h);
    CHECK(b.pos <= VIDK_H264_SLICE_HDR_MAX_BITS);
    /* a P slice after a reference B picture: its list modification */
    const VidkH264SliceHdr hp = {(1u << 26) - 1, 0, 3, 16, 65535, 0, -51, 0, 1, 0, 16,
                                 65535,          2};
    vidk_bits_init(&b, buf, sizeof(buf));
    vidk_h264_slice_header(&b, &hp);
    CHECK(b.pos <= VIDK_H264_SLICE_HDR_MAX_BITS);
    vidk_h264_stream_free(s);
}

/* coded_block_pattern's me(v) (9.1.2, Table 9-4 for ChromaArrayType 1): the writer's
 * cbp -> codeNum tables against the standard's codeNum -> cbp columns, transcribed here. */
static void cbp_tables(void) {
    static const uint8_t intra[48] = {47, 31, 15, 0,  23, 27, 29, 30, 7,  11, 13, 14,
                                      39, 43, 45, 46, 16, 3,  5,  10, 12, 19, 21, 26,
                                      28, 35, 37, 42, 44, 1,  2,  4,  8,  17, 18, 20,
                                      24, 6,  9,  22, 25, 32, 33, 34, 36, 40, 38, 41};
    static const uint8_t inter[48] = {0,  16, 1,  2,  4,  8,  32, 3,  5,  10, 12, 15,
                                      47, 7,  11, 13, 14, 6,  9,  31, 35, 37, 42, 44,
                                      33, 34, 36, 40, 39, 43, 45, 46, 17, 18, 20, 24,
                                      19, 21, 26, 28, 23, 27, 29, 30, 22, 25, 38, 41};
    for (int k = 0; k < 48; k++) {
        CHECK_EQ_U(VIDK_CAVLC_TAB(intra_cbp)[intra[k]], (unsigned)k);
        CHECK_EQ_U(VIDK_CAVLC_TAB(inter_cbp)[inter[k]], (unsigned)k);
    }
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : NULL;
    emu_seed = test_seed();
    cbp_tables();
    pieces();
    counts();
    headers();
    CHECK(ep_strings() > 0);
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
