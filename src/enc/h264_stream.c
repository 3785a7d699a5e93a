/* The H.264 stream writer: SPS / PPS / slice headers (7.3.2, 7.3.3), CAVLC slice data (7.3.4,
 * 7.3.5) with the standard's motion vector prediction (8.4.1) and nC (9.2.1) or CABAC slice
 * data (h264_stream_cabac.h), NAL units with emulation prevention (7.4.1, Annex B).
 * docs/STREAM.md describes the stream. */
#include <stdlib.h>
#include <string.h>

#include "h264_nal_core.h"
#include "h264_stream.h"
#include "h264_stream_cabac.h"
#include "h264_stream_core.h"
#include "internal.h"
#include "thread_pool.h"

enum { LOG2_MAX_FRAME_NUM = 4 }; /* frame_num wraps every 16 pictures */
/* With B-frames: pic_order_cnt_type 0, pic_order_cnt_lsb in 8 bits (2 per frame) */
enum { LOG2_MAX_POC_LSB = 8 };

/* One macroblock row's coded macroblocks (bits back to back, without mb_skip_run). */
typedef struct Row {
    uint8_t *buf;
    size_t cap;
    int err;
    size_t bits; /* CABAC: slice k's RBSP in row k's buffer, its length */
} Row;

struct VidkH264Stream {
    int w, h, W, H, mbw, mbh, qp, slices, fps_num, fps_den, level, deblock, range;
    int64_t last_idr; /* frame index of the last IDR picture */
    unsigned idr_count;
    int bframes;   /* vidk_h264_stream_set_bframes: 0, 1 (B pictures may come: the SPS says
                      so) or 2 (reference B pictures too) */
    uint32_t refs; /* reference pictures coded since the last IDR one, that included */
    int last_bref; /* the last reference picture coded was a B picture */
    uint8_t *rbsp; /* one NAL unit's RBSP */
    size_t rbsp_cap;
    uint8_t *out; /* the access unit */
    size_t out_cap, out_size;
    uint8_t *tcl;      /* TotalCoeff per luma 4x4 block, (mbw * 4) x (mbh * 4) */
    uint8_t *tcc[2];   /* per chroma 4x4 block of Cb / Cr, (mbw * 2) x (mbh * 2) */
    uint8_t *skip;     /* per macroblock: coded as P_Skip */
    uint32_t *mb_bits; /* per macroblock: length of its macroblock_layer() */
    Row *rows;         /* per macroblock row: the rows' macroblock_layer()s, back to back */
    int cabac;         /* entropy_coding_mode_flag (vidk_h264_stream_set_cabac) */
    VidkCabacPic cp;   /* its state */
};

/* Table A-1: level_idc, MaxMBPS, MaxFS, MaxDpbMbs, MaxVmvR (the vertical vector range in
 * luma samples: [-vmv, vmv - 1/4]). */
static const struct {
    int idc;
    int64_t mbps;
    int fs, dpb, vmv;
} levels[] = {{10, 1485, 99, 396, 64},
              {11, 3000, 396, 900, 128},
              {12, 6000, 396, 2376, 128},
              {13, 11880, 396, 2376, 128},
              {20, 11880, 396, 2376, 128},
              {21, 19800, 792, 4752, 256},
              {22, 20250, 1620, 8100, 256},
              {30, 40500, 1620, 8100, 256},
              {31, 108000, 3600, 18000, 512},
              {32, 216000, 5120, 20480, 512},
              {40, 245760, 8192, 32768, 512},
              {41, 245760, 8192, 32768, 512},
              {42, 522240, 8704, 34816, 512},
              {50, 589824, 22080, 110400, 512},
              {51, 983040, 36864, 184320, 512},
              {52, 2073600, 36864, 184320, 512},
              {60, 4177920, 139264, 696320, 512},
              {61, 8355840, 139264, 696320, 512},
              {62, 16711680, 139264, 696320, 512}};

int vidk_h264_stream_level(int mb_w, int mb_h, int fps_num, int fps_den, int range) {
    return vidk_h264_stream_level_refs(mb_w, mb_h, fps_num, fps_den, range, 1);
}

int vidk_h264_stream_level_refs(int mb_w, int mb_h, int fps_num, int fps_den, int range,
                                int refs) {
    const int64_t fs = (int64_t)mb_w * mb_h;
    if (refs < 1) refs = 1;
    const int n = (int)(sizeof(levels) / sizeof(levels[0]));
    if (fps_num <= 0 || fps_den <= 0) fps_num = 25, fps_den = 1;
    for (int i = 0; i < n; i++) {
        const int64_t side = (int64_t)mb_w > mb_h ? mb_w : mb_h;
        /* A.3.1: MaxFS, each side <= sqrt(8 MaxFS), MaxMBPS, `refs` frames in the DPB
         * (max_dec_frame_buffering <= MaxDpbFrames = MaxDpbMbs / frame size), and vectors
         * inside MaxVmvR's [-vmv, vmv - 1/4]: the search's in [-range, range], refined by
         * at most 3/4 of a sample, so range < vmv */
        if (fs <= levels[i].fs && side * side <= 8 * (int64_t)levels[i].fs &&
            fs * fps_num <= levels[i].mbps * fps_den && fs * refs <= levels[i].dpb &&
            range < levels[i].vmv)
            return levels[i].idc;
    }
    return levels[n - 1].idc; /* beyond level 6.2: the largest level (decoders still play it) */
}

VidkH264Stream *vidk_h264_stream_new(int w, int h, int W, int H, int qp, int slices,
                                     int fps_num, int fps_den, int range, int deblock) {
    VidkH264Stream *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->w = w, s->h = h, s->W = W, s->H = H, s->qp = qp, s->deblock = deblock, s->range = range;
    s->mbw = W / 16, s->mbh = H / 16;
    s->slices = vidk_imax(1, vidk_imin(slices, s->mbh));
    s->fps_num = fps_num > 0 ? fps_num : 25;
    s->fps_den = fps_num > 0 ? fps_den : 1;
    s->level = vidk_h264_stream_level(s->mbw, s->mbh, s->fps_num, s->fps_den, range);
    const size_t nmb = (size_t)s->mbw * s->mbh;
    s->tcl = calloc(nmb, 16);
    s->tcc[0] = calloc(nmb, 4);
    s->tcc[1] = calloc(nmb, 4);
    s->skip = calloc(nmb, 1);
    s->mb_bits = calloc(nmb, sizeof(*s->mb_bits));
    s->rows = calloc((size_t)s->mbh, sizeof(*s->rows));
    s->rbsp_cap = 4096 + nmb * 64;
    s->rbsp = malloc(s->rbsp_cap);
    if (!s->tcl || !s->tcc[0] || !s->tcc[1] || !s->skip || !s->mb_bits || !s->rows ||
        !s->rbsp) {
        vidk_h264_stream_free(s);
        return NULL;
    }
    return s;
}

void vidk_h264_stream_free(VidkH264Stream *s) {
    if (!s) return;
    free(s->tcl);
    free(s->tcc[0]);
    free(s->tcc[1]);
    free(s->skip);
    free(s->mb_bits);
    if (s->rows)
        for (int r = 0; r < s->mbh; r++)
            free(s->rows[r].buf);
    free(s->rows);
    free(s->rbsp);
    free(s->out);
    free(s->cp.mb);
    free(s->cp.amvd);
    free(s->cp.amvd1);
    free(s);
}

int vidk_h264_stream_set_cabac(VidkH264Stream *s, int on) {
    if (on && !s->cp.mb) {
        const size_t nmb = (size_t)s->mbw * s->mbh;
        s->cp.mb = calloc(nmb, sizeof(*s->cp.mb));
        s->cp.amvd = calloc(nmb * 16, 2);
        s->cp.amvd1 = calloc(nmb * 16, 2);
        if (!s->cp.mb || !s->cp.amvd || !s->cp.amvd1) return VIDK_ERR(ENOMEM);
    }
    s->cabac = !!on;
    return 0;
}

/* max_num_ref_frames: 1; with B pictures their two references; with reference B pictures
 * four: a B picture's anchors and the reference B picture of its run, and the one of the run
 * before (decoded after the earlier anchor: the sliding window (8.2.5.3) must not drop it). */
static int dpb_frames(const VidkH264Stream *s) {
    return s->bframes == 2 ? 4 : 1 + s->bframes;
}

int vidk_h264_stream_set_bframes(VidkH264Stream *s, int on) {
    s->bframes = on < 0 ? 0 : on > 2 ? 2 : on;
    s->level = vidk_h264_stream_level_refs(s->mbw, s->mbh, s->fps_num, s->fps_den, s->range,
                                           dpb_frames(s));
    return 0;
}

/* ---- NAL units ---- */

/* Room for `more` bytes at the end of the access unit. */
static int out_reserve(VidkH264Stream *s, size_t more) {
    const size_t need = s->out_size + more;
    if (need > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap : 65536;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(s->out, cap);
        if (!p) return VIDK_ERR(ENOMEM);
        s->out = p, s->out_cap = cap;
    }
    return 0;
}

/* Append a NAL unit (4-byte start code, header, the RBSP with emulation prevention): the
 * serial form of the device's scan (h264_nal_core.h). */
static int put_nal(VidkH264Stream *s, int ref_idc, int type, const uint8_t *rbsp, size_t n) {
    const int err = out_reserve(s, VIDK_H264_NAL_PREFIX + n + n / 2 + 1);
    if (err < 0) return err;
    uint8_t *o = s->out + s->out_size;
    VidkBits b;
    vidk_bits_init(&b, o, VIDK_H264_NAL_PREFIX);
    vidk_h264_nal_start(&b, ref_idc, type);
    o += VIDK_H264_NAL_PREFIX;
    int zeros = 0;
    for (size_t i = 0; i < n; i++) {
        int ins;
        zeros = vidk_h264_ep_step(zeros, rbsp[i], &ins);
        if (ins) *o++ = 3; /* emulation_prevention_three_byte */
        *o++ = rbsp[i];
    }
    s->out_size = (size_t)(o - s->out);
    return 0;
}

/* ---- parameter sets ---- */

static void write_sps(const VidkH264Stream *s, VidkBits *b) {
    vidk_put_bits(b, 8, 100); /* profile_idc: High */
    vidk_put_bits(b, 8, 0);   /* constraint_set0..5_flag, reserved_zero_2bits */
    vidk_put_bits(b, 8, (uint32_t)s->level);
    vidk_put_ue(b, 0);      /* seq_parameter_set_id */
    vidk_put_ue(b, 1);      /* chroma_format_idc: 4:2:0 */
    vidk_put_ue(b, 0);      /* bit_depth_luma_minus8 */
    vidk_put_ue(b, 0);      /* bit_depth_chroma_minus8 */
    vidk_put_bits(b, 1, 0); /* qpprime_y_zero_transform_bypass_flag */
    vidk_put_bits(b, 1, 0); /* seq_scaling_matrix_present_flag */
    vidk_put_ue(b, LOG2_MAX_FRAME_NUM - 4);
    if (s->bframes) {
        vidk_put_ue(b, 0); /* pic_order_cnt_type 0: pic_order_cnt_lsb in the slice headers */
        vidk_put_ue(b, LOG2_MAX_POC_LSB - 4);    /* log2_max_pic_order_cnt_lsb_minus4 */
        vidk_put_ue(b, (uint32_t)dpb_frames(s)); /* max_num_ref_frames */
    } else {
        vidk_put_ue(b, 2); /* pic_order_cnt_type 2: output order = decoding order */
        vidk_put_ue(b, 1); /* max_num_ref_frames */
    }
    vidk_put_bits(b, 1, 0); /* gaps_in_frame_num_value_allowed_flag */
    vidk_put_ue(b, (uint32_t)s->mbw - 1);
    vidk_put_ue(b, (uint32_t)s->mbh - 1);
    vidk_put_bits(b, 1, 1); /* frame_mbs_only_flag */
    vidk_put_bits(b, 1, 1); /* direct_8x8_inference_flag */
    const int crop = s->W != s->w || s->H != s->h;
    vidk_put_bits(b, 1, (uint32_t)crop);
    if (crop) { /* in units of 2 luma samples (4:2:0, frames) */
        vidk_put_ue(b, 0);
        vidk_put_ue(b, (uint32_t)(s->W - s->w) / 2);
        vidk_put_ue(b, 0);
        vidk_put_ue(b, (uint32_t)(s->H - s->h) / 2);
    }
    vidk_put_bits(b, 1, 1);                          /* vui_parameters_present_flag */
    vidk_put_bits(b, 1, 0);                          /* aspect_ratio_info_present_flag */
    vidk_put_bits(b, 1, 0);                          /* overscan_info_present_flag */
    vidk_put_bits(b, 1, 0);                          /* video_signal_type_present_flag */
    vidk_put_bits(b, 1, 0);                          /* chroma_loc_info_present_flag */
    vidk_put_bits(b, 1, 1);                          /* timing_info_present_flag */
    vidk_put_bits(b, 32, (uint32_t)s->fps_den);      /* num_units_in_tick */
    vidk_put_bits(b, 32, 2u * (uint32_t)s->fps_num); /* time_scale: two ticks per frame */
    vidk_put_bits(b, 1, 1);                          /* fixed_frame_rate_flag */
    vidk_put_bits(b, 1, 0);                          /* nal_hrd_parameters_present_flag */
    vidk_put_bits(b, 1, 0);                          /* vcl_hrd_parameters_present_flag */
    vidk_put_bits(b, 1, 0);                          /* pic_struct_present_flag */
    vidk_put_bits(b, 1, 1);                          /* bitstream_restriction_flag */
    vidk_put_bits(b, 1, 1); /* motion_vectors_over_pic_boundaries_flag */
    vidk_put_ue(b, 0);      /* max_bytes_per_pic_denom */
    vidk_put_ue(b, 0);      /* max_bits_per_mb_denom */
    vidk_put_ue(b, 11);     /* log2_max_mv_length_horizontal: |mv| <= 256 samples */
    vidk_put_ue(b, 11);     /* log2_max_mv_length_vertical */
    vidk_put_ue(b, (uint32_t)s->bframes);    /* max_num_reorder_frames */
    vidk_put_ue(b, (uint32_t)dpb_frames(s)); /* max_dec_frame_buffering */
    vidk_put_trailing(b);
}

static void write_pps(const VidkH264Stream *s, VidkBits *b) {
    vidk_put_ue(b, 0);                       /* pic_parameter_set_id */
    vidk_put_ue(b, 0);                       /* seq_parameter_set_id */
    vidk_put_bits(b, 1, (uint32_t)s->cabac); /* entropy_coding_mode_flag */
    vidk_put_bits(b, 1, 0);                  /* bottom_field_pic_order_in_frame_present_flag */
    vidk_put_ue(b, 0);                       /* num_slice_groups_minus1 */
    vidk_put_ue(b, 0);                       /* num_ref_idx_l0_default_active_minus1 */
    vidk_put_ue(b, 0);                       /* num_ref_idx_l1_default_active_minus1 */
    vidk_put_bits(b, 1, 0);                  /* weighted_pred_flag */
    /* weighted_bipred_idc: B-frames: 2, implicit weights by POC distance (8.4.2.3); else 0 */
    vidk_put_bits(b, 2, s->bframes ? 2u : 0u);
    vidk_put_se(b, s->qp - 26); /* pic_init_qp_minus26 */
    vidk_put_se(b, 0);          /* pic_init_qs_minus26 */
    vidk_put_se(b, 0);          /* chroma_qp_index_offset */
    vidk_put_bits(b, 1, 1);     /* deblocking_filter_control_present_flag */
    vidk_put_bits(b, 1, 0);     /* constrained_intra_pred_flag */
    vidk_put_bits(b, 1, 0);     /* redundant_pic_cnt_present_flag */
    vidk_put_bits(b, 1, 1);     /* transform_8x8_mode_flag */
    vidk_put_bits(b, 1, 0);     /* pic_scaling_matrix_present_flag */
    vidk_put_se(b, 0);          /* second_chroma_qp_index_offset */
    vidk_put_trailing(b);
}

/* ---- slice data ---- */

/* What the macroblock layer (h264_stream_core.h) of the slice holding row r reads. */
static VidkH264sCtx mb_ctx(VidkH264Stream *s, const VidkH264StreamFrame *f, int r) {
    const VidkH264sCtx c = {s->mbw,
                            s->mbh,
                            s->W,
                            s->slices,
                            f->intra,
                            vidk_h264s_slice_row0(s->mbh, s->slices, r),
                            f->mbi,
                            f->mv4,
                            {f->lev[0], f->lev[1], f->lev[2]},
                            s->tcl,
                            {s->tcc[0], s->tcc[1]},
                            f->im4,
                            f->bslice,
                            f->mv4b};
    return c;
}

typedef struct Job {
    VidkH264Stream *s;
    const VidkH264StreamFrame *f;
    const VidkH264SliceHdr *h; /* the picture's slice header */
    /* CABAC from bins binarised elsewhere (vidk_h264_stream_frame_bins; f NULL) */
    const uint16_t *bins;
    const uint32_t *boff;
} Job;

/* n jobs on the pool when given, else on ctx's runner, else one after another. */
static void run_jobs(VidkContext *ctx, VidkThreadPool *pool, int n, VidkJobFn fn, void *arg) {
    if (pool)
        vidk_pool_run(pool, n, fn, arg);
    else if (ctx)
        ctx->ops.run(ctx, n, fn, arg);
    else
        for (int k = 0; k < n; k++)
            fn(arg, k, 0);
}

/* Pass 1, one job per macroblock row: the TotalCoeff maps. */
static void count_row(void *arg, int r, int thread) {
    (void)thread;
    const Job *j = arg;
    const VidkH264sCtx c = mb_ctx(j->s, j->f, r);
    for (int x = 0; x < j->s->mbw; x++)
        vidk_h264s_count_mb(&c, x, r);
}

/* Pass 2, one job per macroblock row: each macroblock_layer() into the row's buffer (every
 * macroblock depends only on the frame's decisions, vectors and TotalCoeff maps). */
static void code_row(void *arg, int r, int thread) {
    (void)thread;
    const Job *j = arg;
    VidkH264Stream *s = j->s;
    Row *row = &s->rows[r];
    const VidkH264sCtx c = mb_ctx(s, j->f, r);
    for (;;) {
        VidkBits b;
        vidk_bits_init(&b, row->buf, row->cap);
        for (int x = 0; x < s->mbw; x++) {
            const size_t at = b.pos, mb = (size_t)r * s->mbw + x;
            s->skip[mb] = (uint8_t)vidk_h264s_code_mb(&c, &b, x, r);
            s->mb_bits[mb] = (uint32_t)(b.pos - at);
        }
        if (!b.overflow) return;
        uint8_t *p = realloc(row->buf, 2 * row->cap + 8); /* 8 bytes of slack for reading */
        if (!p) {
            row->err = VIDK_ERR(ENOMEM);
            return;
        }
        row->buf = p, row->cap *= 2;
    }
}

/* Append n bits of src starting at bit `off` (src readable 8 bytes past its bits). */
static void put_bitstr(VidkBits *b, const uint8_t *src, size_t off, size_t n) {
    while (n) {
        const int k = n > 32 ? 32 : (int)n;
        const uint8_t *p = src + (off >> 3);
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = v << 8 | p[i];
        v = v << (off & 7) >> (64 - k);
        vidk_put_bits(b, k, (uint32_t)v);
        off += (size_t)k, n -= (size_t)k;
    }
}

/* The slice header (7.3.3) of the slice of picture h starting at macroblock row row0. */
static void write_slice_header(const VidkH264Stream *s, const VidkH264SliceHdr *h, int row0,
                               VidkBits *b) {
    VidkH264SliceHdr hs = *h;
    hs.first_mb = (uint32_t)(row0 * s->mbw);
    vidk_h264_slice_header(b, &hs);
}

/* One slice's RBSP with CABAC (vidk_cabac_slice_open / _close around the macroblocks in
 * order, each followed by end_of_slice_flag): binarised here (j->f), or from j's bins. */
static void write_slice_cabac(VidkH264Stream *s, const Job *j, VidkBits *b, int row0, int row1,
                              uint16_t *bins) {
    const VidkH264SliceHdr *h = j->h;
    VidkH264SliceHdr hs = *h;
    hs.first_mb = (uint32_t)(row0 * s->mbw);
    VidkCabac e;
    uint8_t st[VIDK_H264_CABAC_CTX];
    vidk_cabac_init_contexts(st, hs.intra, s->qp + hs.slice_qp_delta);
    vidk_cabac_slice_open(b, &hs, st, &e);
    if (!j->f) { /* the slice's macroblocks' bins are consecutive */
        const uint32_t i0 = j->boff[(size_t)row0 * s->mbw], i1 = j->boff[(size_t)row1 * s->mbw];
        vidk_cabac_code_bins(&e, j->bins + i0, i1 - i0);
        vidk_cabac_slice_close(b, &e, (uint64_t)(row1 - row0) * (uint64_t)s->mbw);
        return;
    }
    const VidkH264sCtx c = mb_ctx(s, j->f, row0);
    VidkCabacBins o = {bins, 0, VIDK_CABAC_MB_MAX_BINS};
    for (int y = row0; y < row1; y++)
        for (int x = 0; x < s->mbw; x++) {
            o.n = 0;
            vidk_cabac_mb(&c, &s->cp, &o, x, y, y == row1 - 1 && x == s->mbw - 1);
            vidk_cabac_code_bins(&e, o.b, o.n);
        }
    vidk_cabac_slice_close(b, &e, (uint64_t)(row1 - row0) * (uint64_t)s->mbw);
}

/* CABAC pass 1, one job per macroblock row: what each macroblock leaves for its neighbours. */
static void cabac_info_row(void *arg, int r, int thread) {
    (void)thread;
    const Job *j = arg;
    const VidkH264sCtx c = mb_ctx(j->s, j->f, r);
    for (int x = 0; x < j->s->mbw; x++)
        vidk_cabac_mb_info(&c, &j->s->cp, x, r);
}

/* CABAC pass 2: slice k's RBSP into the buffer of row k (slices are independent of each
 * other). */
static void cabac_slice(void *arg, int k, int thread) {
    (void)thread;
    const Job *j = arg;
    VidkH264Stream *s = j->s;
    Row *row = &s->rows[k];
    uint16_t *bins = j->f ? malloc(VIDK_CABAC_MB_MAX_BINS * sizeof(*bins)) : NULL;
    if (j->f && !bins) {
        row->err = VIDK_ERR(ENOMEM);
        return;
    }
    for (;;) {
        VidkBits b;
        vidk_bits_init(&b, row->buf, row->cap);
        write_slice_cabac(s, j, &b, k * s->mbh / s->slices, (k + 1) * s->mbh / s->slices, bins);
        if (!b.overflow) {
            row->bits = b.pos;
            free(bins);
            return;
        }
        uint8_t *p = realloc(row->buf, 2 * row->cap + 8);
        if (!p) {
            row->err = VIDK_ERR(ENOMEM);
            free(bins);
            return;
        }
        row->buf = p, row->cap *= 2;
    }
}

/* One slice's RBSP: the header, then the coded macroblocks with mb_skip_run in P and B
 * slices. */
static void write_slice(const VidkH264Stream *s, const VidkH264StreamFrame *f,
                        const VidkH264SliceHdr *h, VidkBits *b, int row0, int row1) {
    write_slice_header(s, h, row0, b);
    unsigned run = 0;
    for (int y = row0; y < row1; y++) {
        size_t off = 0;
        for (int x = 0; x < s->mbw; x++) {
            const size_t mb = (size_t)y * s->mbw + x;
            if (s->skip[mb]) {
                run++;
                continue;
            }
            if (!f->intra) vidk_put_ue(b, run); /* mb_skip_run */
            run = 0;
            put_bitstr(b, s->rows[y].buf, off, s->mb_bits[mb]);
            off += s->mb_bits[mb];
        }
    }
    if (run) vidk_put_ue(b, run);
    vidk_put_trailing(b);
}

/* The access unit of the current picture (header h): SPS and PPS before an IDR picture,
 * then the slices, from the macroblocks coded by the passes (coded; f: the frame, CAVLC),
 * or the slices' NAL units written elsewhere (nals, n bytes). */
static int write_units(VidkH264Stream *s, const VidkH264StreamFrame *f,
                       const VidkH264SliceHdr *h, int coded, const uint8_t *nals, size_t n,
                       const uint8_t **data, size_t *size) {
    const int last = coded ? s->slices : 0;
    for (int part = h->intra ? -2 : 0; part < last; part++) {
        for (;;) {
            VidkBits b;
            vidk_bits_init(&b, s->rbsp, s->rbsp_cap);
            if (part == -2)
                write_sps(s, &b);
            else if (part == -1)
                write_pps(s, &b);
            else if (s->cabac) /* coded by cabac_slice */
                put_bitstr(&b, s->rows[part].buf, 0, s->rows[part].bits);
            else
                write_slice(s, f, h, &b, part * s->mbh / s->slices,
                            (part + 1) * s->mbh / s->slices);
            if (!b.overflow) {
                const int type = part == -2 ? 7 : part == -1 ? 8 : vidk_h264_slice_nal_type(h);
                const int err =
                    put_nal(s, part < 0 ? 3 : h->nal_ref_idc, type, s->rbsp, b.pos / 8);
                if (err < 0) return err;
                break;
            }
            uint8_t *p = realloc(s->rbsp, s->rbsp_cap * 2);
            if (!p) return VIDK_ERR(ENOMEM);
            s->rbsp = p, s->rbsp_cap *= 2;
        }
    }
    if (!coded && n) {
        const int err = out_reserve(s, n);
        if (err < 0) return err;
        memcpy(s->out + s->out_size, nals, n);
        s->out_size += n;
    }
    *data = s->out;
    *size = s->out_size;
    return 0;
}

/* The header from the writer's state: the last IDR picture and the IDR pictures so far. */
static void slice_hdr(int64_t last_idr0, uint32_t idr_count, int64_t index, int intra,
                      int deblock, int cabac, VidkH264SliceHdr *h) {
    /* frame_num counts from the last IDR picture, idr_pic_id counts them (start_picture) */
    const int64_t last_idr = intra ? index : last_idr0;
    memset(h, 0, sizeof(*h));
    h->first_mb = 0;
    h->intra = intra;
    h->nal_ref_idc = 3;
    h->log2_max_frame_num = LOG2_MAX_FRAME_NUM;
    h->frame_num = (uint32_t)((index - last_idr) & ((1 << LOG2_MAX_FRAME_NUM) - 1));
    h->idr_pic_id = (idr_count + (intra ? 1u : 0u)) & 0xffff;
    h->slice_qp_delta = 0;
    h->disable_deblocking = deblock ? 0 : 1; /* whether the loop filters (VidkEncParams) */
    h->cabac = cabac;
}

void vidk_h264_stream_slice_hdr(const VidkH264Stream *s, int64_t index, int intra,
                                VidkH264SliceHdr *h) {
    slice_hdr(s->last_idr, (uint32_t)s->idr_count, index, intra, s->deblock, s->cabac, h);
}

void vidk_h264_stream_slice_hdr_ahead(const VidkH264Stream *s, int64_t first,
                                      uint32_t pending_intra, int64_t index, int intra,
                                      VidkH264SliceHdr *h) {
    int64_t last_idr = s->last_idr;
    uint32_t idr_count = (uint32_t)s->idr_count;
    for (int64_t k = first; k < index; k++)
        if (pending_intra >> (k - first) & 1u) last_idr = k, idr_count++;
    slice_hdr(last_idr, idr_count, index, intra, s->deblock, s->cabac, h);
}

/* With B-frames: the header of picture f when it is the next one coded; frame_num counts the
 * reference pictures coded since the last IDR one, pic_order_cnt_lsb is twice the frames
 * since it in display order, B pictures are non-reference pictures but for f->bref ones. A
 * P picture coded after a reference B picture (the last one decoded, so first in the default
 * list 0) moves the anchor before it, coded one reference picture earlier, to the front:
 * abs_diff_pic_num_minus1 1 (docs/STREAM.md). */
static void slice_hdr_b(const VidkH264Stream *s, const VidkH264StreamFrame *f,
                        VidkH264SliceHdr *h) {
    const int64_t last_idr = f->intra ? f->index : s->last_idr;
    vidk_h264_stream_slice_hdr(s, f->index, f->intra, h);
    h->bslice = !!f->bslice;
    h->nal_ref_idc = f->bslice && !f->bref ? 0 : 3;
    h->l0_mod = !f->intra && !f->bslice && s->last_bref ? 2u : 0u;
    h->frame_num = f->intra ? 0u : s->refs & ((1u << LOG2_MAX_FRAME_NUM) - 1);
    h->log2_max_poc_lsb = LOG2_MAX_POC_LSB;
    h->poc_lsb =
        (uint32_t)((uint64_t)(2 * (f->index - last_idr)) & ((1u << LOG2_MAX_POC_LSB) - 1));
}

/* The picture's state: frame_num counts from the last IDR picture (vidk_h264_stream_slice_hdr
 * reads it before the update); refs the reference pictures since it (B pictures are not, but
 * for bref ones). */
static void start_picture(VidkH264Stream *s, int64_t index, int intra, int bslice, int bref) {
    s->out_size = 0;
    if (intra) {
        s->last_idr = index;
        s->idr_count++;
        s->refs = 0;
    }
    if (!bslice || bref) s->refs++, s->last_bref = bslice;
}

/* The rows' buffers (CAVLC: a row's macroblocks; CABAC: a slice's RBSP), allocated at first
 * use. */
static int rows_ready(VidkH264Stream *s) {
    for (int r = 0; r < s->mbh; r++) {
        Row *row = &s->rows[r];
        row->err = 0;
        if (!row->buf) {
            row->cap = 4096 + (size_t)s->mbw * 64;
            if (!(row->buf = malloc(row->cap + 8))) return VIDK_ERR(ENOMEM);
        }
    }
    return 0;
}

int vidk_h264_stream_frame(VidkH264Stream *s, VidkContext *ctx, VidkThreadPool *pool,
                           const VidkH264StreamFrame *f, const uint8_t **data, size_t *size) {
    VidkH264SliceHdr h;
    if ((f->bslice && (!s->bframes || f->intra)) || (f->bref && (!f->bslice || s->bframes < 2)))
        return VIDK_ERR(EINVAL);
    if (s->bframes)
        slice_hdr_b(s, f, &h);
    else
        vidk_h264_stream_slice_hdr(s, f->index, f->intra, &h);
    start_picture(s, f->index, f->intra, f->bslice, f->bref);
    Job j = {s, f, &h, NULL, NULL};
    const int err = rows_ready(s);
    if (err < 0) return err;
    if (s->cabac) { /* pass 1 by rows, then the slices, each a job */
        run_jobs(ctx, pool, s->mbh, cabac_info_row, &j);
        run_jobs(ctx, pool, s->slices, cabac_slice, &j);
    } else { /* the TotalCoeff maps, then the macroblocks, by rows */
        run_jobs(ctx, pool, s->mbh, count_row, &j);
        run_jobs(ctx, pool, s->mbh, code_row, &j);
    }
    for (int r = 0; r < s->mbh; r++)
        if (s->rows[r].err < 0) return s->rows[r].err;
    return write_units(s, f, &h, 1, NULL, 0, data, size);
}

void vidk_h264_stream_slice_hdr_next(const VidkH264Stream *s, int64_t index, VidkH264Pic kind,
                                     VidkH264SliceHdr *h) {
    VidkH264StreamFrame f;
    memset(&f, 0, sizeof(f));
    f.index = index, f.intra = kind == VIDK_H264_PIC_I;
    f.bslice = kind >= VIDK_H264_PIC_B, f.bref = kind == VIDK_H264_PIC_BREF;
    if (s->bframes)
        slice_hdr_b(s, &f, h);
    else
        vidk_h264_stream_slice_hdr(s, index, f.intra, h);
}

void vidk_h264_stream_slice_hdr_after(const VidkH264Stream *s, int n, const int64_t *prev,
                                      const VidkH264Pic *prev_kind, int64_t index,
                                      VidkH264Pic kind, VidkH264SliceHdr *h) {
    VidkH264Stream t = *s; /* the state only: start_picture touches no buffer */
    for (int k = 0; k < n; k++)
        start_picture(&t, prev[k], prev_kind[k] == VIDK_H264_PIC_I,
                      prev_kind[k] >= VIDK_H264_PIC_B, prev_kind[k] == VIDK_H264_PIC_BREF);
    vidk_h264_stream_slice_hdr_next(&t, index, kind, h);
}

/* A picture of kind `kind` coded elsewhere: its slice header into *h and the writer's state
 * at its start; VIDK_ERR(EINVAL) for a kind the stream was not set up for. */
static int begin_picture(VidkH264Stream *s, int64_t index, VidkH264Pic kind,
                         VidkH264SliceHdr *h) {
    const int b = kind >= VIDK_H264_PIC_B, bref = kind == VIDK_H264_PIC_BREF;
    if ((b && !s->bframes) || (bref && s->bframes < 2)) return VIDK_ERR(EINVAL);
    vidk_h264_stream_slice_hdr_next(s, index, kind, h);
    start_picture(s, index, kind == VIDK_H264_PIC_I, b, bref);
    return 0;
}

int vidk_h264_stream_frame_nals(VidkH264Stream *s, int64_t index, VidkH264Pic kind,
                                const uint8_t *nals, size_t n, const uint8_t **data,
                                size_t *size) {
    VidkH264SliceHdr h;
    const int err = begin_picture(s, index, kind, &h);
    if (err < 0) return err;
    return write_units(s, NULL, &h, 0, nals, n, data, size);
}

int vidk_h264_stream_frame_bins(VidkH264Stream *s, VidkContext *ctx, VidkThreadPool *pool,
                                int64_t index, VidkH264Pic kind, const uint16_t *bins,
                                const uint32_t *boff, const uint8_t **data, size_t *size) {
    VidkH264SliceHdr h;
    if (!s->cabac) return VIDK_ERR(EINVAL);
    int err = begin_picture(s, index, kind, &h);
    if (err >= 0) err = rows_ready(s);
    if (err < 0) return err;
    Job j = {s, NULL, &h, bins, boff};
    run_jobs(ctx, pool, s->slices, cabac_slice, &j);
    for (int r = 0; r < s->slices; r++)
        if (s->rows[r].err < 0) return s->rows[r].err;
    return write_units(s, NULL, &h, 1, NULL, 0, data, size);
}

int vidk_h264_stream_slices(const VidkH264Stream *s) {
    return s->slices;
}
