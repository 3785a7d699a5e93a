/* The H.264 stream writer: SPS / PPS / slice headers (7.3.2, 7.3.3), CAVLC slice data (7.3.4,
 * 7.3.5) with the standard's motion vector prediction (8.4.1) and nC (9.2.1), NAL units with
 * emulation prevention (7.4.1, Annex B). docs/STREAM.md describes the stream. */
#include <stdlib.h>
#include <string.h>

#include "h264_cavlc_core.h"
#include "h264_stream.h"
#include "internal.h"
#include "thread_pool.h"
#include "enc_core.h"

enum { LOG2_MAX_FRAME_NUM = 4 }; /* frame_num wraps every 16 pictures */

/* One macroblock row's coded macroblocks (bits back to back, without mb_skip_run). */
typedef struct Row {
    uint8_t *buf;
    size_t cap;
    int err;
} Row;

struct VidkH264Stream {
    int w, h, W, H, mbw, mbh, qp, slices, fps_num, fps_den, level;
    int64_t last_idr; /* frame index of the last IDR picture */
    unsigned idr_count;
    uint8_t *rbsp; /* one NAL unit's RBSP */
    size_t rbsp_cap;
    uint8_t *out; /* the access unit */
    size_t out_cap, out_size;
    uint8_t *tcl;      /* TotalCoeff per luma 4x4 block, (mbw * 4) x (mbh * 4) */
    uint8_t *tcc[2];   /* per chroma 4x4 block of Cb / Cr, (mbw * 2) x (mbh * 2) */
    uint8_t *skip;     /* per macroblock: coded as P_Skip */
    uint32_t *mb_bits; /* per macroblock: length of its macroblock_layer() */
    Row *rows;         /* per macroblock row: the rows' macroblock_layer()s, back to back */
};

/* 4x4 and 8x8 zig-zag scans (8.5.6, 8.5.7, frame macroblocks): scan index -> raster. */
static const uint8_t zz4[16] = {0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15};
static const uint8_t zz8[64] = {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
                                12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,
                                35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
                                58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};
/* coded_block_pattern -> codeNum of me(v) for inter macroblocks (Table 9-4, ChromaArrayType
 * 1), the inverse of the table's codeNum -> cbp column. */
static const uint8_t inter_cbp_code[48] = {0,  2,  3,  7,  4,  8,  17, 13, 5,  18, 9,  14,
                                           10, 15, 16, 11, 1,  32, 33, 36, 34, 37, 44, 40,
                                           35, 45, 38, 41, 39, 42, 43, 19, 6,  24, 25, 20,
                                           26, 21, 46, 28, 27, 47, 22, 29, 23, 30, 31, 12};

/* Table A-1: level_idc, MaxMBPS, MaxFS, MaxDpbMbs. */
static const struct {
    int idc;
    int64_t mbps;
    int fs, dpb;
} levels[] = {
    {10, 1485, 99, 396},           {11, 3000, 396, 900},          {12, 6000, 396, 2376},
    {13, 11880, 396, 2376},        {20, 11880, 396, 2376},        {21, 19800, 792, 4752},
    {22, 20250, 1620, 8100},       {30, 40500, 1620, 8100},       {31, 108000, 3600, 18000},
    {32, 216000, 5120, 20480},     {40, 245760, 8192, 32768},     {41, 245760, 8192, 32768},
    {42, 522240, 8704, 34816},     {50, 589824, 22080, 110400},   {51, 983040, 36864, 184320},
    {52, 2073600, 36864, 184320},  {60, 4177920, 139264, 696320}, {61, 8355840, 139264, 696320},
    {62, 16711680, 139264, 696320}};

int vidk_h264_stream_level(int mb_w, int mb_h, int fps_num, int fps_den) {
    const int64_t fs = (int64_t)mb_w * mb_h;
    const int n = (int)(sizeof(levels) / sizeof(levels[0]));
    for (int i = 0; i < n; i++) {
        const int64_t side = (int64_t)mb_w > mb_h ? mb_w : mb_h;
        /* A.3.1: MaxFS, each side <= sqrt(8 MaxFS), MaxMBPS, one frame in the DPB */
        if (fs <= levels[i].fs && side * side <= 8 * (int64_t)levels[i].fs &&
            fs * fps_num <= levels[i].mbps * fps_den && fs <= levels[i].dpb)
            return levels[i].idc;
    }
    return levels[n - 1].idc; /* beyond level 6.2: the largest level (decoders still play it) */
}

VidkH264Stream *vidk_h264_stream_new(int w, int h, int W, int H, int qp, int slices,
                                     int fps_num, int fps_den) {
    VidkH264Stream *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->w = w, s->h = h, s->W = W, s->H = H, s->qp = qp;
    s->mbw = W / 16, s->mbh = H / 16;
    s->slices = vidk_imax(1, vidk_imin(slices, s->mbh));
    s->fps_num = fps_num > 0 ? fps_num : 25;
    s->fps_den = fps_num > 0 ? fps_den : 1;
    s->level = vidk_h264_stream_level(s->mbw, s->mbh, s->fps_num, s->fps_den);
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
    free(s);
}

/* ---- NAL units ---- */

/* Append a NAL unit (4-byte start code, header, the RBSP with emulation prevention). */
static int put_nal(VidkH264Stream *s, int ref_idc, int type, const uint8_t *rbsp, size_t n) {
    const size_t need = s->out_size + 5 + n + n / 2 + 1;
    if (need > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap : 65536;
        while (cap < need)
            cap *= 2;
        uint8_t *p = realloc(s->out, cap);
        if (!p) return VIDK_ERR(ENOMEM);
        s->out = p, s->out_cap = cap;
    }
    uint8_t *o = s->out + s->out_size;
    *o++ = 0, *o++ = 0, *o++ = 0, *o++ = 1;
    *o++ = (uint8_t)(ref_idc << 5 | type);
    int zeros = 0;
    for (size_t i = 0; i < n; i++) {
        if (zeros >= 2 && rbsp[i] <= 3) { /* emulation_prevention_three_byte */
            *o++ = 3;
            zeros = 0;
        }
        *o++ = rbsp[i];
        zeros = rbsp[i] ? 0 : zeros + 1;
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
    vidk_put_ue(b, 2);      /* pic_order_cnt_type 2: output order = decoding order */
    vidk_put_ue(b, 1);      /* max_num_ref_frames */
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
    vidk_put_ue(b, 0);      /* max_num_reorder_frames */
    vidk_put_ue(b, 1);      /* max_dec_frame_buffering */
    vidk_put_trailing(b);
}

static void write_pps(const VidkH264Stream *s, VidkBits *b) {
    vidk_put_ue(b, 0);          /* pic_parameter_set_id */
    vidk_put_ue(b, 0);          /* seq_parameter_set_id */
    vidk_put_bits(b, 1, 0);     /* entropy_coding_mode_flag: CAVLC */
    vidk_put_bits(b, 1, 0);     /* bottom_field_pic_order_in_frame_present_flag */
    vidk_put_ue(b, 0);          /* num_slice_groups_minus1 */
    vidk_put_ue(b, 0);          /* num_ref_idx_l0_default_active_minus1 */
    vidk_put_ue(b, 0);          /* num_ref_idx_l1_default_active_minus1 */
    vidk_put_bits(b, 1, 0);     /* weighted_pred_flag */
    vidk_put_bits(b, 2, 0);     /* weighted_bipred_idc */
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

/* ---- macroblock layer ---- */

/* What one slice's coding reads. */
typedef struct Slice {
    VidkH264Stream *s;
    const VidkH264StreamFrame *f;
    int row0; /* first macroblock row of the slice */
} Slice;

/* A neighbouring 4x4 block for vector prediction (8.4.1.3.2). */
typedef struct Nb {
    int avail, ref; /* ref: 0, or -1 for intra / unavailable */
    VidkMv mv;
} Nb;

static int mb_avail(const Slice *c, int mbx, int mby) {
    return mbx >= 0 && mbx < c->s->mbw && mby >= c->row0 && mby < c->s->mbh;
}

static VidkMv mv_at(const Slice *c, int x4, int y4) {
    return c->f->mv4[(ptrdiff_t)y4 * (c->s->W / 4) + x4];
}

/* The 4x4 block at (x, y) (4x4 units relative to macroblock (mbx, mby)); inside the current
 * macroblock it is available when its partition precedes partition `part` (order[] gives
 * each 4x4 block's partition). */
static Nb nb_at(const Slice *c, int mbx, int mby, int x, int y, const int8_t *order, int part) {
    Nb n = {0, -1, {0, 0}};
    if (x >= 0 && x < 4 && y >= 0 && y < 4) {
        if (order[4 * y + x] >= part) return n;
    } else if (y >= 0 && x >= 4) {
        return n; /* right of the macroblock, not yet decoded */
    } else {
        const int nx = mbx + (x < 0 ? -1 : x >= 4 ? 1 : 0), ny = mby + (y < 0 ? -1 : 0);
        if (!mb_avail(c, nx, ny)) return n;
        n.avail = 1;
        if (c->f->mbi[ny * c->s->mbw + nx] & ENC_MBI_INTRA) return n;
    }
    n.avail = 1;
    n.ref = 0;
    n.mv = mv_at(c, mbx * 4 + x, mby * 4 + y);
    return n;
}

static int median3(int a, int b, int c) {
    return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

/* Vector predictor (8.4.1.3) of the partition at (x, y), w wide (4x4 units); dir: 1 16x8
 * upper, 2 16x8 lower, 3 8x16 left, 4 8x16 right, 0 otherwise. */
static VidkMv mvp(const Slice *c, int mbx, int mby, int x, int y, int w, int dir,
                  const int8_t *order, int part) {
    Nb a = nb_at(c, mbx, mby, x - 1, y, order, part);
    Nb b = nb_at(c, mbx, mby, x, y - 1, order, part);
    Nb cc = nb_at(c, mbx, mby, x + w, y - 1, order, part);
    if (!cc.avail) cc = nb_at(c, mbx, mby, x - 1, y - 1, order, part);
    if (dir == 1 && b.ref == 0) return b.mv;
    if ((dir == 2 || dir == 3) && a.ref == 0) return a.mv;
    if (dir == 4 && cc.ref == 0) return cc.mv;
    if (!b.avail && !cc.avail && a.avail) b = a, cc = a;
    const int m = (a.ref == 0) + (b.ref == 0) + (cc.ref == 0);
    if (m == 1) return a.ref == 0 ? a.mv : b.ref == 0 ? b.mv : cc.mv;
    VidkMv r = {(int16_t)median3(a.mv.x, b.mv.x, cc.mv.x),
                (int16_t)median3(a.mv.y, b.mv.y, cc.mv.y)};
    return r;
}

/* The P_Skip vector (8.4.1.1). */
static VidkMv skip_mv(const Slice *c, int mbx, int mby) {
    static const int8_t order[16] = {0};
    const Nb a = nb_at(c, mbx, mby, -1, 0, order, 0), b = nb_at(c, mbx, mby, 0, -1, order, 0);
    const VidkMv zero = {0, 0};
    if (!a.avail || !b.avail || (a.ref == 0 && !a.mv.x && !a.mv.y) ||
        (b.ref == 0 && !b.mv.x && !b.mv.y))
        return zero;
    return mvp(c, mbx, mby, 0, 0, 4, 0, order, 0);
}

/* nC (9.2.1) of the block at (x, y) of a TotalCoeff map with `stride` blocks per row whose
 * macroblocks are `per` blocks wide. */
static int pred_nc(const Slice *c, const uint8_t *tc, int per, int x, int y) {
    const int stride = c->s->mbw * per;
    const int la = x > 0, ta = y > 0 && (y - 1) / per >= c->row0;
    const int na = la ? tc[y * stride + x - 1] : 0, nb = ta ? tc[(y - 1) * stride + x] : 0;
    return la && ta ? (na + nb + 1) >> 1 : la ? na : nb;
}

/* Position (4x4 units) of luma4x4BlkIdx k inside its macroblock (6.4.3). */
static int blk_x(int k) {
    return (k & 1) | ((k >> 1) & 2);
}
static int blk_y(int k) {
    return ((k >> 1) & 1) | ((k >> 2) & 2);
}

/* The levels of one macroblock, in coding order. */
typedef struct MbRes {
    int16_t dc[16];        /* Intra16x16DCLevel, scan order */
    int16_t y[16][16];     /* luma blocks by luma4x4BlkIdx, scan order (AC: [1..15]) */
    int16_t cdc[2][4];     /* chroma DC, c[0][0], c[0][1], c[1][0], c[1][1] */
    int16_t cac[2][4][16]; /* chroma AC by chroma4x4BlkIdx, scan order ([1..15]) */
    int cbp_luma, cbp_chroma;
} MbRes;

static void gather(const Slice *c, int mbx, int mby, int intra16, int tx8, MbRes *r) {
    const VidkH264Stream *s = c->s;
    const int16_t *ly = c->f->lev[0];
    const int W = s->W, x0 = mbx * 16, y0 = mby * 16;
    int any_ac = 0;
    r->cbp_luma = 0;
    for (int k = 0; k < 16; k++) {
        const int bx = x0 + 4 * blk_x(k), by = y0 + 4 * blk_y(k);
        if (tx8 && !intra16) { /* 8x8: the 64 levels interleaved over the quadrant's blocks */
            const int q = k >> 2, i4 = k & 3;
            const int qx = x0 + 8 * (q & 1), qy = y0 + 8 * (q >> 1);
            for (int i = 0; i < 16; i++) {
                const int rr = zz8[4 * i + i4];
                r->y[k][i] = ly[(ptrdiff_t)(qy + rr / 8) * W + qx + rr % 8];
            }
        } else {
            for (int i = 0; i < 16; i++) {
                const int rr = zz4[i];
                r->y[k][i] = ly[(ptrdiff_t)(by + rr / 4) * W + bx + rr % 4];
            }
        }
        if (intra16) {
            for (int i = 1; i < 16; i++)
                any_ac |= r->y[k][i] != 0;
        } else {
            for (int i = 0; i < 16; i++)
                if (r->y[k][i]) r->cbp_luma |= 1 << (k >> 2);
        }
    }
    if (intra16) {
        for (int i = 0; i < 16; i++) {
            /* DC c[i][j] of the 4x4 block in row i, column j sits at its element 0 */
            const int rr = zz4[i];
            r->dc[i] = ly[(ptrdiff_t)(y0 + 4 * (rr / 4)) * W + x0 + 4 * (rr % 4)];
        }
        r->cbp_luma = any_ac ? 15 : 0;
    }
    int dc_nz = 0, ac_nz = 0;
    for (int p = 0; p < 2; p++) {
        const int16_t *lc = c->f->lev[p + 1];
        const int Wc = W / 2, cx = mbx * 8, cy = mby * 8;
        for (int b = 0; b < 4; b++) {
            const int bx = cx + 4 * (b & 1), by = cy + 4 * (b >> 1);
            for (int i = 0; i < 16; i++) {
                const int rr = zz4[i];
                r->cac[p][b][i] = lc[(ptrdiff_t)(by + rr / 4) * Wc + bx + rr % 4];
                if (i) ac_nz |= r->cac[p][b][i] != 0;
            }
            r->cdc[p][b] = r->cac[p][b][0];
            dc_nz |= r->cdc[p][b] != 0;
        }
    }
    r->cbp_chroma = ac_nz ? 2 : dc_nz ? 1 : 0;
}

/* TotalCoeff of every 4x4 block of a macroblock into the maps (what nC reads, 9.2.1): the
 * non-zero levels a block codes (AC only for Intra_16x16 and chroma; 0 for blocks the cbp
 * leaves out, which hold only zeros, and for P_Skip macroblocks, which have none). */
static void count_mb(const Slice *c, int mbx, int mby) {
    VidkH264Stream *s = c->s;
    const unsigned w = c->f->mbi[mby * s->mbw + mbx];
    const int intra16 = !!(w & ENC_MBI_INTRA), ls = s->mbw * 4, cs = s->mbw * 2;
    MbRes r;
    gather(c, mbx, mby, intra16, !!(w & ENC_MBI_TX8), &r);
    for (int k = 0; k < 16; k++) {
        int n = 0;
        for (int i = intra16; i < 16; i++)
            n += r.y[k][i] != 0;
        s->tcl[(mby * 4 + blk_y(k)) * ls + mbx * 4 + blk_x(k)] = (uint8_t)n;
    }
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < 4; k++) {
            int n = 0;
            for (int i = 1; i < 16; i++)
                n += r.cac[p][k][i] != 0;
            s->tcc[p][(mby * 2 + (k >> 1)) * cs + mbx * 2 + (k & 1)] = (uint8_t)n;
        }
}

/* residual() (7.3.5.3) with CAVLC. */
static void write_residual(const Slice *c, VidkBits *b, int mbx, int mby, int intra16,
                           const MbRes *r) {
    const VidkH264Stream *s = c->s;
    if (intra16) (void)vidk_cavlc_block(b, r->dc, 16, pred_nc(c, s->tcl, 4, mbx * 4, mby * 4));
    for (int k = 0; k < 16; k++) {
        if (!(r->cbp_luma & (1 << (k >> 2)))) continue;
        const int nc = pred_nc(c, s->tcl, 4, mbx * 4 + blk_x(k), mby * 4 + blk_y(k));
        if (intra16)
            (void)vidk_cavlc_block(b, r->y[k] + 1, 15, nc);
        else
            (void)vidk_cavlc_block(b, r->y[k], 16, nc);
    }
    if (r->cbp_chroma)
        for (int p = 0; p < 2; p++)
            (void)vidk_cavlc_block(b, r->cdc[p], 4, -1);
    if (r->cbp_chroma == 2)
        for (int p = 0; p < 2; p++)
            for (int k = 0; k < 4; k++)
                (void)vidk_cavlc_block(
                    b, r->cac[p][k] + 1, 15,
                    pred_nc(c, s->tcc[p], 2, mbx * 2 + (k & 1), mby * 2 + (k >> 1)));
}

static void put_mvd(VidkBits *b, VidkMv mv, VidkMv p) {
    vidk_put_se(b, 4 * (mv.x - p.x)); /* quarter-sample units */
    vidk_put_se(b, 4 * (mv.y - p.y));
}

/* An inter macroblock's macroblock_layer(); returns 1 (writing nothing) when it is coded as
 * P_Skip: a 16x16 partition with no residual whose vector is the P_Skip vector. */
static int write_p_mb(const Slice *c, VidkBits *b, int mbx, int mby) {
    VidkH264Stream *s = c->s;
    const unsigned w = c->f->mbi[mby * s->mbw + mbx];
    const int mode = (int)(w & 3), tx8 = !!(w & ENC_MBI_TX8);
    int sub[4];
    for (int q = 0; q < 4; q++)
        sub[q] = mode == 3 ? (int)(w >> (2 + 2 * q)) & 3 : 0;
    MbRes r;
    gather(c, mbx, mby, 0, tx8, &r);
    const int cbp = r.cbp_luma | r.cbp_chroma << 4;
    if (mode == 0 && !cbp) {
        const VidkMv sm = skip_mv(c, mbx, mby), v = mv_at(c, mbx * 4, mby * 4);
        if (sm.x == v.x && sm.y == v.y) return 1;
    }
    vidk_put_ue(b, (uint32_t)mode); /* mb_type: P_L0_16x16, P_L0_L0_16x8, P_L0_L0_8x16, P_8x8 */
    /* Partitions in decoding order: (x, y, w, dir) in 4x4 units, and order[] per 4x4 block. */
    int px[16], py[16], pw[16], pd[16], np = 0;
    int8_t order[16];
    if (mode == 0) {
        px[0] = 0, py[0] = 0, pw[0] = 4, pd[0] = 0, np = 1;
    } else if (mode == 1) {
        for (int k = 0; k < 2; k++)
            px[k] = 0, py[k] = 2 * k, pw[k] = 4, pd[k] = 1 + k;
        np = 2;
    } else if (mode == 2) {
        for (int k = 0; k < 2; k++)
            px[k] = 2 * k, py[k] = 0, pw[k] = 2, pd[k] = 3 + k;
        np = 2;
    } else {
        for (int q = 0; q < 4; q++)
            vidk_put_ue(b, (uint32_t)sub[q]); /* sub_mb_type: 8x8, 8x4, 4x8, 4x4 */
        for (int q = 0; q < 4; q++) {
            const int qx = 2 * (q & 1), qy = 2 * (q >> 1);
            const int n = sub[q] == 0 ? 1 : sub[q] == 3 ? 4 : 2;
            for (int k = 0; k < n; k++) {
                px[np] = qx + (sub[q] == 2 || sub[q] == 3 ? (k & 1) : 0);
                py[np] = qy + (sub[q] == 1 ? k : sub[q] == 3 ? k >> 1 : 0);
                pw[np] = sub[q] == 0 || sub[q] == 1 ? 2 : 1;
                pd[np] = 0;
                np++;
            }
        }
    }
    for (int k = 0; k < np; k++) { /* the 4x4 blocks each partition covers */
        const int ph = mode == 0 || mode == 2 ? 4 : mode == 1 ? 2 : 0;
        int h = ph;
        if (mode == 3) { /* sub-partition height from the quadrant's sub_mb_type */
            const int q = (py[k] / 2) * 2 + px[k] / 2;
            h = sub[q] == 0 || sub[q] == 2 ? 2 : 1;
        }
        for (int y = py[k]; y < py[k] + h; y++)
            for (int x = px[k]; x < px[k] + pw[k]; x++)
                order[4 * y + x] = (int8_t)k;
    }
    for (int k = 0; k < np; k++) {
        const VidkMv p = mvp(c, mbx, mby, px[k], py[k], pw[k], pd[k], order, k);
        put_mvd(b, mv_at(c, mbx * 4 + px[k], mby * 4 + py[k]), p);
    }
    vidk_put_ue(b, inter_cbp_code[cbp]); /* coded_block_pattern, me(v) */
    const int tx8_allowed = mode != 3 || (!sub[0] && !sub[1] && !sub[2] && !sub[3]);
    if (r.cbp_luma && tx8_allowed) vidk_put_bits(b, 1, (uint32_t)tx8);
    if (cbp) {
        vidk_put_se(b, 0); /* mb_qp_delta */
        write_residual(c, b, mbx, mby, 0, &r);
    }
    return 0;
}

/* An Intra_16x16 macroblock in an I slice. */
static void write_i_mb(const Slice *c, VidkBits *b, int mbx, int mby) {
    const unsigned w = c->f->mbi[mby * c->s->mbw + mbx];
    MbRes r;
    gather(c, mbx, mby, 1, 0, &r);
    /* mb_type (Table 7-11): 1 + pred mode + 4 cbp chroma + 12 (cbp luma 15) */
    vidk_put_ue(b, 1 + (w & 3) + 4 * (unsigned)r.cbp_chroma + (r.cbp_luma ? 12u : 0u));
    vidk_put_ue(b, (w >> 2) & 3); /* intra_chroma_pred_mode */
    vidk_put_se(b, 0);            /* mb_qp_delta */
    write_residual(c, b, mbx, mby, 1, &r);
}

/* The first macroblock row of the slice holding row r (slice k starts at k * rows / n). */
static int slice_row0(const VidkH264Stream *s, int r) {
    int k = (int)(((int64_t)r * s->slices + s->slices) / s->mbh);
    while (k > 0 && (int64_t)k * s->mbh / s->slices > r)
        k--;
    return (int)((int64_t)k * s->mbh / s->slices);
}

typedef struct Job {
    VidkH264Stream *s;
    const VidkH264StreamFrame *f;
} Job;

/* Pass 1, one job per macroblock row: the TotalCoeff maps. */
static void count_row(void *arg, int r, int thread) {
    (void)thread;
    const Job *j = arg;
    const Slice c = {j->s, j->f, slice_row0(j->s, r)};
    for (int x = 0; x < j->s->mbw; x++)
        count_mb(&c, x, r);
}

/* Pass 2, one job per macroblock row: each macroblock_layer() into the row's buffer (every
 * macroblock depends only on the frame's decisions, vectors and TotalCoeff maps). */
static void code_row(void *arg, int r, int thread) {
    (void)thread;
    const Job *j = arg;
    VidkH264Stream *s = j->s;
    Row *row = &s->rows[r];
    const Slice c = {s, j->f, slice_row0(s, r)};
    for (;;) {
        VidkBits b;
        vidk_bits_init(&b, row->buf, row->cap);
        for (int x = 0; x < s->mbw; x++) {
            const size_t at = b.pos, mb = (size_t)r * s->mbw + x;
            if (j->f->intra) {
                write_i_mb(&c, &b, x, r);
                s->skip[mb] = 0;
            } else {
                s->skip[mb] = (uint8_t)write_p_mb(&c, &b, x, r);
            }
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

/* One slice's RBSP: the header, then the coded macroblocks with mb_skip_run in P slices. */
static void write_slice(const Slice *c, VidkBits *b, int row1) {
    const VidkH264Stream *s = c->s;
    const VidkH264StreamFrame *f = c->f;
    vidk_put_ue(b, (uint32_t)(c->row0 * s->mbw)); /* first_mb_in_slice */
    vidk_put_ue(b, f->intra ? 7 : 5);             /* slice_type: all I / all P */
    vidk_put_ue(b, 0);                            /* pic_parameter_set_id */
    const int64_t fnum = (f->index - s->last_idr) & ((1 << LOG2_MAX_FRAME_NUM) - 1);
    vidk_put_bits(b, LOG2_MAX_FRAME_NUM, (uint32_t)fnum); /* frame_num */
    if (f->intra) vidk_put_ue(b, s->idr_count & 0xffff);  /* idr_pic_id */
    if (!f->intra) {
        vidk_put_bits(b, 1, 0); /* num_ref_idx_active_override_flag */
        vidk_put_bits(b, 1, 0); /* ref_pic_list_modification_flag_l0 */
    }
    if (f->intra) {
        vidk_put_bits(b, 1, 0); /* no_output_of_prior_pics_flag */
        vidk_put_bits(b, 1, 0); /* long_term_reference_flag */
    } else {
        vidk_put_bits(b, 1, 0); /* adaptive_ref_pic_marking_mode_flag: sliding window */
    }
    vidk_put_se(b, 0); /* slice_qp_delta */
    vidk_put_ue(b, 1); /* disable_deblocking_filter_idc: the loop does not deblock */
    unsigned run = 0;
    for (int y = c->row0; y < row1; y++) {
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

int vidk_h264_stream_frame(VidkH264Stream *s, VidkContext *ctx, VidkThreadPool *pool,
                           const VidkH264StreamFrame *f, const uint8_t **data, size_t *size) {
    s->out_size = 0;
    if (f->intra) {
        s->last_idr = f->index;
        s->idr_count++;
    }
    Job j = {s, f};
    for (int r = 0; r < s->mbh; r++) {
        Row *row = &s->rows[r];
        row->err = 0;
        if (!row->buf) {
            row->cap = 4096 + (size_t)s->mbw * 64;
            if (!(row->buf = malloc(row->cap + 8))) return VIDK_ERR(ENOMEM);
        }
    }
    if (pool) {
        vidk_pool_run(pool, s->mbh, count_row, &j);
        vidk_pool_run(pool, s->mbh, code_row, &j);
    } else if (ctx) {
        ctx->ops.run(ctx, s->mbh, count_row, &j);
        ctx->ops.run(ctx, s->mbh, code_row, &j);
    } else {
        for (int r = 0; r < s->mbh; r++)
            count_row(&j, r, 0);
        for (int r = 0; r < s->mbh; r++)
            code_row(&j, r, 0);
    }
    for (int r = 0; r < s->mbh; r++)
        if (s->rows[r].err < 0) return s->rows[r].err;
    for (int part = f->intra ? -2 : 0; part < s->slices; part++) {
        for (;;) {
            VidkBits b;
            vidk_bits_init(&b, s->rbsp, s->rbsp_cap);
            if (part == -2)
                write_sps(s, &b);
            else if (part == -1)
                write_pps(s, &b);
            else {
                const Slice c = {s, f, part * s->mbh / s->slices};
                write_slice(&c, &b, (part + 1) * s->mbh / s->slices);
            }
            if (!b.overflow) {
                const int type = part == -2 ? 7 : part == -1 ? 8 : f->intra ? 5 : 1;
                const int err = put_nal(s, 3, type, s->rbsp, b.pos / 8);
                if (err < 0) return err;
                break;
            }
            uint8_t *p = realloc(s->rbsp, s->rbsp_cap * 2);
            if (!p) return VIDK_ERR(ENOMEM);
            s->rbsp = p, s->rbsp_cap *= 2;
        }
    }
    *data = s->out;
    *size = s->out_size;
    return 0;
}
