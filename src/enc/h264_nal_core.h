/* H.264 NAL units of the coded slices, written once for the host stream writer
 * (src/enc/h264_stream.c) and the CUDA entropy coder (src/cuda/stream.cu), C11 and CUDA host +
 * device code: the Annex-B start code and NAL unit header (7.3.1, B.1), slice_header()
 * (7.3.3) and emulation prevention (7.4.1).
 *
 * Emulation prevention as a scan. Writing a NAL unit's RBSP bytes one after another, the
 * writer's state is the count of zero bytes just written (0, 1, or 2 and more): before a
 * byte <= 3 in state 2 it inserts emulation_prevention_three_byte (0x03) and the count
 * restarts. So each byte acts on the three states by a map (the next state and whether an
 * 0x03 went in, per state) and the maps of consecutive bytes compose associatively
 * (VidkH264Ep: the next states and the count of inserted bytes per starting state). The
 * device takes a scan of the maps over the frame's bytes (every NAL unit back to back, each
 * start code and NAL header byte mapped to "state 0, nothing inserted", which restarts the
 * count at every NAL unit): the scan before byte i, applied to state 0, gives whether an
 * 0x03 goes before byte i and how many went before it, hence its output position. The host
 * writer steps the same maps serially (vidk_h264_ep_step).
 *
 * The device's passes after the macroblocks' (h264_stream_core.h) are the functions at the
 * end of this file, one call per slice, macroblock or run of bytes, the same ones the host
 * emulation runs (tests/test_h264_stream_core.c). */
#ifndef VIDK_H264_NAL_CORE_H
#define VIDK_H264_NAL_CORE_H

#include "h264_cavlc_core.h"
#include "h264_stream_core.h"

/* The fields of a slice header that vary (the rest is fixed by the SPS / PPS the host
 * writes: pic_order_cnt_type 2 or, with B-frames, 0; one active reference per list). */
typedef struct VidkH264SliceHdr {
    uint32_t first_mb;      /* first_mb_in_slice */
    int intra;              /* 1: an IDR picture of I slices, 0: P (or B) slices */
    int nal_ref_idc;        /* 0..3 (0: a non-reference picture, B slices only) */
    int log2_max_frame_num; /* 4..16 */
    uint32_t frame_num;     /* < 2^log2_max_frame_num */
    uint32_t idr_pic_id;    /* 0..65535, IDR pictures only */
    int slice_qp_delta;     /* -51..51 */
    int disable_deblocking; /* disable_deblocking_filter_idc (0..2) */
    int cabac;  /* entropy_coding_mode_flag of the PPS (P and B slices: cabac_init_idc 0) */
    int bslice; /* 1: B slices (intra 0; direct_spatial_mv_pred_flag 1) */
    /* pic_order_cnt_type 0 (the SPS of a stream with B-frames): log2_max_pic_order_cnt_lsb
     * (4..16), else 0 (pic_order_cnt_type 2: no pic_order_cnt_lsb) */
    int log2_max_poc_lsb;
    uint32_t poc_lsb; /* pic_order_cnt_lsb, < 2^log2_max_poc_lsb */
    /* P slices: 0, or abs_diff_pic_num_minus1 + 1 of one ref_pic_list_modification of list 0
     * (modification_of_pic_nums_idc 0: the picture that many reference pictures back first) */
    uint32_t l0_mod;
} VidkH264SliceHdr;

/* nal_unit_type of the header's slices: 5 (IDR) or 1. */
VIDK_CORE int vidk_h264_slice_nal_type(const VidkH264SliceHdr *h) {
    return h->intra ? 5 : 1;
}

/* The Annex-B start code (zero_byte + start_code_prefix_one_3bytes) and the NAL unit header
 * (forbidden_zero_bit, nal_ref_idc, nal_unit_type): 5 bytes, not subject to emulation
 * prevention. */
enum { VIDK_H264_NAL_PREFIX = 5 };
VIDK_CORE void vidk_h264_nal_start(VidkBits *b, int ref_idc, int type) {
    vidk_put_bits(b, 32, 1);
    vidk_put_bits(b, 8, (uint32_t)(ref_idc << 5 | type));
}

/* slice_header() (7.3.3) of a slice of the header's picture; at most 160 bits (ue() of a
 * first_mb_in_slice < 2^26: 53, of idr_pic_id: 33, se() of slice_qp_delta: 13,
 * pic_order_cnt_lsb: 16, a list modification of a small difference: 11, ...). */
enum { VIDK_H264_SLICE_HDR_MAX_BITS = 160 };
VIDK_CORE void vidk_h264_slice_header(VidkBits *b, const VidkH264SliceHdr *h) {
    vidk_put_ue(b, h->first_mb);
    vidk_put_ue(b, h->intra ? 7 : h->bslice ? 6 : 5); /* slice_type: all I / all B / all P */
    vidk_put_ue(b, 0);                                /* pic_parameter_set_id */
    vidk_put_bits(b, h->log2_max_frame_num, h->frame_num);
    if (h->intra) vidk_put_ue(b, h->idr_pic_id);
    if (h->log2_max_poc_lsb) vidk_put_bits(b, h->log2_max_poc_lsb, h->poc_lsb);
    if (!h->intra && h->bslice) vidk_put_bits(b, 1, 1); /* direct_spatial_mv_pred_flag */
    if (!h->intra) {
        vidk_put_bits(b, 1, 0);              /* num_ref_idx_active_override_flag */
        vidk_put_bits(b, 1, h->l0_mod != 0); /* ref_pic_list_modification_flag_l0 */
        if (h->l0_mod) {
            vidk_put_ue(b, 0);              /* modification_of_pic_nums_idc: subtract */
            vidk_put_ue(b, h->l0_mod - 1u); /* abs_diff_pic_num_minus1 */
            vidk_put_ue(b, 3);              /* modification_of_pic_nums_idc: end */
        }
        if (h->bslice) vidk_put_bits(b, 1, 0); /* ref_pic_list_modification_flag_l1 */
    }
    if (h->nal_ref_idc) { /* dec_ref_pic_marking() */
        if (h->intra) {
            vidk_put_bits(b, 1, 0); /* no_output_of_prior_pics_flag */
            vidk_put_bits(b, 1, 0); /* long_term_reference_flag */
        } else {
            vidk_put_bits(b, 1, 0); /* adaptive_ref_pic_marking_mode_flag: sliding window */
        }
    }
    if (h->cabac && !h->intra) vidk_put_ue(b, 0); /* cabac_init_idc (P and B slices) */
    vidk_put_se(b, h->slice_qp_delta);
    vidk_put_ue(b, (uint32_t)h->disable_deblocking);
    /* disable_deblocking_filter_idc 0 and 2 carry the filter offsets (both 0 here) */
    if (h->disable_deblocking != 1) {
        vidk_put_se(b, 0); /* slice_alpha_c0_offset_div2 */
        vidk_put_se(b, 0); /* slice_beta_offset_div2 */
    }
}

/* ---- emulation prevention ---- */

/* One step of the serial rule (7.4.1): in state s (zero bytes just written, 2 meaning two
 * or more), byte x gets an 0x03 before it when s == 2 and x <= 3 (*ins = 1); returns the
 * next state. */
VIDK_CORE int vidk_h264_ep_step(int s, unsigned x, int *ins) {
    *ins = s >= 2 && x <= 3;
    if (*ins) s = 0;
    return x ? 0 : s < 2 ? s + 1 : 2;
}

/* A map of the three states: st holds the next state of state s in bits 2s, 2s + 1; cnt[s]
 * the 0x03 bytes inserted starting from state s. */
typedef struct VidkH264Ep {
    uint32_t st;
    uint32_t cnt[3];
} VidkH264Ep;

VIDK_CORE int vidk_h264_ep_next(VidkH264Ep m, int s) {
    return (int)(m.st >> (2 * s) & 3);
}

/* The map that changes nothing (the scans' initial value). */
VIDK_CORE VidkH264Ep vidk_h264_ep_identity(void) {
    VidkH264Ep m;
    m.st = 0u | 1u << 2 | 2u << 4;
    m.cnt[0] = m.cnt[1] = m.cnt[2] = 0;
    return m;
}

/* The map of one byte x; prefix: a start code or NAL header byte, which emulation
 * prevention skips and after which the next NAL unit's RBSP starts in state 0. */
VIDK_CORE VidkH264Ep vidk_h264_ep_map(unsigned x, int prefix) {
    VidkH264Ep m;
    m.st = 0;
    for (int s = 0; s < 3; s++) {
        int ins = 0;
        const int t = prefix ? 0 : vidk_h264_ep_step(s, x, &ins);
        m.st |= (uint32_t)t << (2 * s);
        m.cnt[s] = (uint32_t)ins;
    }
    return m;
}

/* a, then b (associative, not commutative). */
VIDK_CORE VidkH264Ep vidk_h264_ep_compose(VidkH264Ep a, VidkH264Ep b) {
    VidkH264Ep r;
    r.st = 0;
    for (int s = 0; s < 3; s++) {
        const int m = vidk_h264_ep_next(a, s);
        r.st |= (uint32_t)vidk_h264_ep_next(b, m) << (2 * s);
        r.cnt[s] = a.cnt[s] + b.cnt[m];
    }
    return r;
}

/* The NAL unit holding byte i of the frame's NAL units (nal_off[0..nals], increasing, the
 * start of each and the end of the last; nal_off[0] <= i < nal_off[nals]). */
VIDK_CORE int vidk_h264_ep_nal_of(const uint64_t *nal_off, int nals, uint64_t i) {
    int lo = 0, hi = nals - 1; /* the last k with nal_off[k] <= i */
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (nal_off[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The map of byte i of the frame's NAL units (raw: start code, header and RBSP of each,
 * back to back; nal k holds the bytes nal_off[k] .. nal_off[k + 1] - 1). */
VIDK_CORE VidkH264Ep vidk_h264_ep_map_at(const uint8_t *raw, const uint64_t *nal_off, int k,
                                         uint64_t i) {
    return vidk_h264_ep_map(raw[i], i - nal_off[k] < VIDK_H264_NAL_PREFIX);
}

/* Write byte i (map m, its byte x) to out, the state before it being *s and *cnt bytes
 * inserted before it (the scan of the maps before it, applied to state 0): an 0x03 first
 * when its map inserts one; advance *s and *cnt. */
VIDK_CORE void vidk_h264_ep_put(uint8_t *out, uint64_t i, unsigned x, VidkH264Ep m, int *s,
                                uint64_t *cnt) {
    const uint32_t ins = m.cnt[*s];
    const uint64_t at = i + *cnt + ins;
    if (ins) out[at - 1] = 3;
    out[at] = (uint8_t)x;
    *cnt += ins;
    *s = vidk_h264_ep_next(m, *s);
}

/* ---- the device's passes (src/cuda/stream.cu) ---- */

/* A slice's header slot: start code, NAL header and slice_header(), read 32 bits at a time. */
enum { VIDK_H264_HDR_SLOT = 32 };

/* Slice k of the frame (c: its geometry), its picture's header h (first_mb_in_slice from
 * k): the start code, NAL header and slice_header() into hdr + k * VIDK_H264_HDR_SLOT, their
 * bits into hbits[k], and the NAL unit's bytes into nlen[k]: the header slot, the slice data
 * (bits off[first macroblock] to off[first macroblock of slice k + 1], off: the exclusive
 * sum of vidk_h264s_len) and rbsp_slice_trailing_bits (a one, then zeros to the byte). */
VIDK_CORE void vidk_h264_nal_head(const VidkH264sCtx *c, const VidkH264SliceHdr *h, int k,
                                  const uint64_t *off, uint8_t *hdr, uint32_t *hbits,
                                  uint64_t *nlen) {
    const int row0 = (int)((int64_t)k * c->mbh / c->slices),
              row1 = (int)((int64_t)(k + 1) * c->mbh / c->slices);
    VidkH264SliceHdr hs = *h;
    hs.first_mb = (uint32_t)(row0 * c->mbw);
    VidkBits b;
    vidk_bits_init(&b, hdr + (size_t)k * VIDK_H264_HDR_SLOT, VIDK_H264_HDR_SLOT);
    vidk_h264_nal_start(&b, hs.nal_ref_idc, vidk_h264_slice_nal_type(&hs));
    vidk_h264_slice_header(&b, &hs);
    hbits[k] = (uint32_t)b.pos;
    const uint64_t data = off[(size_t)row1 * c->mbw] - off[(size_t)row0 * c->mbw];
    nlen[k] = ((uint64_t)b.pos + data + 8) / 8;
}

/* Macroblock i's bits at their place in its slice's NAL unit, the NAL units back to back
 * from byte 0 of the words (zeroed beforehand; noff: the exclusive sum of nlen): its bit
 * position into pos[i] (pos[n] too by the last macroblock), then vidk_h264s_pack (soff: its
 * slice starts, not needed); the first macroblock of a slice ORs the header slot in, the last
 * one the rbsp_stop_one_bit. */
VIDK_CORE void vidk_h264_nal_pack(const VidkH264sCtx *c, int i, const int32_t *last,
                                  const uint8_t *skip, const uint32_t *bits,
                                  const uint8_t *slots, size_t slot_bytes, const uint64_t *off,
                                  const uint8_t *hdr, const uint32_t *hbits,
                                  const uint64_t *noff, uint64_t *pos, uint32_t *words,
                                  uint64_t *soff) {
    const int n = c->mbw * c->mbh;
    const VidkH264sPlace p = vidk_h264s_place(c, i);
    const uint64_t data = noff[p.k] * 8 + hbits[p.k]; /* the slice data's first bit */
    pos[i] = data + (off[i] - off[p.first]);
    if (i == n - 1) pos[n] = pos[i] + (off[n] - off[i]);
    vidk_h264s_pack(c, i, last, skip, bits, slots, slot_bytes, pos, words, soff);
    if (i == p.first)
        vidk_h264_nal_or_bitstr(words, noff[p.k] * 8, hdr + (size_t)p.k * VIDK_H264_HDR_SLOT,
                                hbits[p.k]);
    if (i == p.last) vidk_h264s_or_bits(words, data + (off[p.last + 1] - off[p.first]), 1, 1);
}

/* The composed map of the raw bytes at .. at + len - 1 (those at or past total: none). */
VIDK_CORE VidkH264Ep vidk_h264_ep_run_map(const uint8_t *raw, const uint64_t *noff, int nals,
                                          uint64_t at, int len, uint64_t total) {
    VidkH264Ep m = vidk_h264_ep_identity();
    if (at >= total) return m;
    int k = vidk_h264_ep_nal_of(noff, nals, at);
    for (int j = 0; j < len && at + (uint64_t)j < total; j++) {
        const uint64_t i = at + (uint64_t)j;
        while (i >= noff[k + 1])
            k++;
        m = vidk_h264_ep_compose(m, vidk_h264_ep_map_at(raw, noff, k, i));
    }
    return m;
}

/* Write the raw bytes at .. at + len - 1 (below total) to out with emulation prevention, pre
 * being the composed map of every byte before them. */
VIDK_CORE void vidk_h264_ep_run_put(const uint8_t *raw, const uint64_t *noff, int nals,
                                    uint64_t at, int len, uint64_t total, VidkH264Ep pre,
                                    uint8_t *out) {
    if (at >= total) return;
    int s = vidk_h264_ep_next(pre, 0), k = vidk_h264_ep_nal_of(noff, nals, at);
    uint64_t cnt = pre.cnt[0];
    for (int j = 0; j < len && at + (uint64_t)j < total; j++) {
        const uint64_t i = at + (uint64_t)j;
        while (i >= noff[k + 1])
            k++;
        vidk_h264_ep_put(out, i, raw[i], vidk_h264_ep_map_at(raw, noff, k, i), &s, &cnt);
    }
}

#endif
