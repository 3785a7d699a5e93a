/* The H.264 stream writer (docs/STREAM.md): Annex-B access units, High profile, CAVLC, from
 * the coding loop's decisions (per-macroblock decision words, vectors, levels). Host code,
 * shared by every backend: the same decisions give the same bytes (the cuda backend writes
 * the slices' NAL units on the device with the same cores, src/enc/h264_stream_core.h and
 * src/enc/h264_nal_core.h, from the header of vidk_h264_stream_slice_hdr, and hands them to
 * vidk_h264_stream_frame_nals). Not installed. */
#ifndef VIDK_H264_STREAM_H
#define VIDK_H264_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "thread_pool.h"
#include "vidkern/vidkern.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VidkH264Stream VidkH264Stream;
typedef struct VidkH264SliceHdr VidkH264SliceHdr; /* h264_nal_core.h */

/* One coded frame as the loop left it (coded size W x H; docs/ENCODE.md §12 layouts). */
typedef struct VidkH264StreamFrame {
    int64_t index;         /* frame number from 0 */
    int intra;             /* 1: an IDR picture */
    const uint16_t *mbi;   /* decision word per macroblock (enc_core.h ENC_MBI_*), raster */
    const VidkMv *mv4;     /* vector per 4x4 luma block, W / 4 per row */
    const int16_t *lev[3]; /* level planes, strides W and W / 2 */
    const uint8_t *im4;    /* Intra4x4PredMode per 4x4 luma block (I_NxN), W / 4 per row */
    int bslice;            /* 1: a B picture (vidk_h264_stream_set_bframes on; intra 0) */
    const VidkMv *mv4b;    /* B pictures: the list-1 vector per 4x4 luma block (mv4: list 0) */
    int bref;              /* a reference B picture (vidk_h264_stream_set_bframes 2) */
} VidkH264StreamFrame;

/* Create a writer for w x h pictures coded as W x H (multiples of 16) at QP qp; slices >= 1
 * (at most the macroblock rows), frame rate fps_num / fps_den; deblock: the slices say the
 * loop filters its reconstruction (disable_deblocking_filter_idc 0, else 1). NULL when out
 * of memory. */
VidkH264Stream *vidk_h264_stream_new(int w, int h, int W, int H, int qp, int slices,
                                     int fps_num, int fps_den, int range, int deblock);
void vidk_h264_stream_free(VidkH264Stream *s);
/* CABAC (entropy_coding_mode_flag 1) for the frames from now on, or CAVLC; before the first
 * frame. Returns 0 or VIDK_ERR(ENOMEM). */
int vidk_h264_stream_set_cabac(VidkH264Stream *s, int on);
/* B pictures may come (1: non-reference ones; 2: reference ones too, VidkH264StreamFrame.bref)
 * or not (0, the default); before the first frame. On: the SPS says pic_order_cnt_type 0
 * (8-bit pic_order_cnt_lsb), 2 (on 2: 4) reference frames and frames buffered, `on` frames of
 * reordering (and the level holds such a DPB); every slice header carries pic_order_cnt_lsb =
 * 2 (index - the last IDR's index) mod 256; frame_num counts the reference pictures coded
 * since the last IDR one; B pictures are pictures of B slices (docs/STREAM.md).
 * vidk_h264_stream_frame or, from vidk_h264_stream_slice_hdr_next's header, _frame_nals code
 * such a stream (not vidk_h264_stream_slice_hdr / _ahead). Returns 0. */
int vidk_h264_stream_set_bframes(VidkH264Stream *s, int on);
/* Code one frame (frames in coding order, `index` their display order from 0); the
 * macroblock rows are coded as jobs of `pool` when given, else of ctx's runner (its threads
 * on the threads backend; ctx NULL: one after another). On success *data / *size hold the
 * access unit, valid until the next call or the free. Returns 0, VIDK_ERR(ENOMEM), or
 * VIDK_ERR(EINVAL) for a B picture without set_bframes or marked intra. */
int vidk_h264_stream_frame(VidkH264Stream *s, VidkContext *ctx, VidkThreadPool *pool,
                           const VidkH264StreamFrame *f, const uint8_t **data, size_t *size);
/* The slice header of picture `index` when it is the next one coded (intra: an IDR
 * picture), first_mb_in_slice 0: what vidk_h264_stream_frame writes, slice k with first_mb
 * (k * mb_h / slices) * mb_w. Does not change the writer's state. */
void vidk_h264_stream_slice_hdr(const VidkH264Stream *s, int64_t index, int intra,
                                VidkH264SliceHdr *h);
/* The same for picture `index` coded after pictures first .. index - 1 (at most 32), which
 * the writer has not written yet (a pipelined caller): bit k of pending_intra tells whether
 * picture first + k is an IDR picture. */
void vidk_h264_stream_slice_hdr_ahead(const VidkH264Stream *s, int64_t first,
                                      uint32_t pending_intra, int64_t index, int intra,
                                      VidkH264SliceHdr *h);
/* A picture's kind for the functions below: an IDR picture, a P one, a (non-reference) B
 * one, a reference B one (vidk_h264_stream_set_bframes 2). The values are the coding loop's
 * frame types (VIDK_ENC_FRAME_I, _P, _B), the reference B picture after them. */
typedef enum VidkH264Pic {
    VIDK_H264_PIC_I = 0,
    VIDK_H264_PIC_P = 1,
    VIDK_H264_PIC_B = 2,
    VIDK_H264_PIC_BREF = 3
} VidkH264Pic;
/* The slice header of picture `index` of kind `kind` when it is the next one coded, with or
 * without B-frames (vidk_h264_stream_frame's header). Does not change the writer's state. */
void vidk_h264_stream_slice_hdr_next(const VidkH264Stream *s, int64_t index, VidkH264Pic kind,
                                     VidkH264SliceHdr *h);
/* The same when the n pictures prev[0..n-1] (of kinds prev_kind[]) are coded before it, in
 * this order, and not written yet (a pipelined caller with B-frames; n 0: _next's). */
void vidk_h264_stream_slice_hdr_after(const VidkH264Stream *s, int n, const int64_t *prev,
                                      const VidkH264Pic *prev_kind, int64_t index,
                                      VidkH264Pic kind, VidkH264SliceHdr *h);
/* The same access unit from its slices' NAL units written elsewhere (the CUDA entropy coder,
 * src/cuda/stream.cu, from vidk_h264_stream_slice_hdr_next's header, or _ahead's for a
 * pipelined caller without B-frames): n bytes, every slice's start code, NAL unit header and
 * RBSP with emulation prevention, in slice order. The writer puts the SPS and PPS before
 * them in an IDR picture; its state advances as with vidk_h264_stream_frame (frames in
 * order, either function). Returns 0, VIDK_ERR(ENOMEM), or VIDK_ERR(EINVAL) for a B picture
 * without B-frames on (a reference one: without them set to 2). */
int vidk_h264_stream_frame_nals(VidkH264Stream *s, int64_t index, VidkH264Pic kind,
                                const uint8_t *nals, size_t n, const uint8_t **data,
                                size_t *size);
/* The same access unit with CABAC from its macroblocks' bins binarised elsewhere (the CUDA
 * coder's passes, src/cuda/stream.cu, with the engine on the host): bins[boff[i] ..
 * boff[i + 1]) are macroblock i's in raster order (h264_stream_cabac.h's encoding), each
 * slice's arithmetic coding a job on the pool (else ctx's runner). Returns 0,
 * VIDK_ERR(ENOMEM), or VIDK_ERR(EINVAL) without CABAC or for a B picture without B-frames. */
int vidk_h264_stream_frame_bins(VidkH264Stream *s, VidkContext *ctx, VidkThreadPool *pool,
                                int64_t index, VidkH264Pic kind, const uint16_t *bins,
                                const uint32_t *boff, const uint8_t **data, size_t *size);
/* Slices per picture (the one given at creation, clamped to 1..macroblock rows). */
int vidk_h264_stream_slices(const VidkH264Stream *s);
/* The level_idc the SPS carries (Table A-1: the lowest level that holds the frame size, the
 * macroblock rate, one reference frame and vertical vectors in [-range, range]). From
 * level 3.1 on, two consecutive macroblocks may carry at most 16 vectors: the loop then
 * uses no sub-8x8 partitions (docs/ENCODE.md §4). */
int vidk_h264_stream_level(int mb_w, int mb_h, int fps_num, int fps_den, int range);
/* The same for a DPB of `refs` frames (max_dec_frame_buffering; vidk_h264_stream_level: 1). */
int vidk_h264_stream_level_refs(int mb_w, int mb_h, int fps_num, int fps_den, int range,
                                int refs);

#ifdef __cplusplus
}
#endif
#endif
