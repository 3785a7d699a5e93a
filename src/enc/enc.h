/* The coding loop's encoder object, shared by the CPU driver (src/enc/encode.c) and the CUDA
 * backend (src/cuda/encode.cu). Not installed. */
#ifndef VIDK_ENC_H
#define VIDK_ENC_H

#include "internal.h"
#include "enc_core.h"
#include "enc_core_hevc.h"
#include "h264_stream.h"

#ifdef __cplusplus
extern "C" {
#endif

struct VidkEncoder {
    VidkContext *ctx;
    VidkEncParams p;
    int w, h;           /* source size */
    int W, H;           /* coded size */
    int usz;            /* unit side: 16 (H.264 macroblock) or 32 (HEVC CTU) */
    int uw, uh;         /* units across / down */
    int mb_w, mb_h;     /* 16x16 blocks */
    unsigned shapes;    /* motion-search shapes */
    int no_sub8x8;      /* H.264: no sub-8x8 partitions (level >= 3.1, EncFrame.no_sub8x8) */
    int64_t sent, done; /* frames sent, frames received */
    /* the sent frames not yet received, slot = display index % VIDK_ENC_MAX_PENDING (B-frames:
     * the encoder's copies, bsrc, unless the backend keeps them: ops.enc.still) */
    const VidkPicture *queue[VIDK_ENC_MAX_PENDING];
    double t_send[VIDK_ENC_MAX_PENDING];
    int q_count;     /* sent - done */
    int max_pending; /* VidkEncGeometry.max_pending */
    int flushed;     /* vidk_enc_send(e, NULL) came */
    /* the coding order (vidk_enc_receive): every frame below b_next is coded; anchor: an
     * anchor coded ahead of the B frames before it (-1: none); the frame being coded and its
     * type (VIDK_ENC_FRAME_*); bref: with b_pyramid the reference B frame of the anchor's
     * run (-1: none), coded first of them */
    int64_t b_next, anchor, code_index, bref;
    int code_type, bref_coded;
    VidkPicture bsrc[VIDK_ENC_MAX_PENDING];
    /* CPU backends */
    VidkPicture src, rec[2];
    int cur; /* rec[cur] receives the next anchor's reconstruction; rec[cur ^ 1] is the last
                anchor (P frames' reference, B frames' list 1), rec[cur] the one before it (B
                frames' list 0) */
    /* B frames: their reconstruction, list 1's motion field, decision vectors, refined
     * vectors and half-sample planes; the last anchor's list-0 vectors and words (the
     * co-located picture's), col_intra when it is an intra picture */
    VidkPicture brec;
    VidkMeField field1;
    VidkMv *dmvb[2], *part_mv1, *col_mv;
    uint16_t *col_mb;
    /* b_pyramid: the reference B frame's reconstruction and, as a co-located picture, its
     * vectors (list 0's, list 1's where it predicts from list 1 only) and words */
    VidkPicture brec_ref;
    VidkMv *colb_mv;
    uint16_t *colb_mb;
    uint8_t *qpl1;
    int col_intra;
    int64_t anc[2]; /* the display indices of the anchor before the last one and of the last */
    /* B frames' look-ahead (docs/ENCODE.md §16): two coded-size sources, the 16x16 search
     * between them, and per slot the still share of frame la_idx[slot] (permille) */
    VidkPicture la[2];
    VidkMeField la_field;
    int64_t la_idx[VIDK_ENC_MAX_PENDING];
    int la_still[VIDK_ENC_MAX_PENDING];
    VidkMeField field;
    EncUnitStat *stat;
    VidkMv *dmv[2];   /* H.264 P frames: the decision passes' vectors (W / 4 x H / 4) */
    uint16_t *dmb[2]; /* and decision words (uw x uh), read by one pass, written by the next */
    uint32_t *dist;   /* ENC_H264_DIST_N per macroblock: what the decision compares */
    uint32_t *skipc;  /* 2 per macroblock: the P_Skip candidate's vector and SATD */
    VidkMv *part_mv;  /* VIDK_ME_NPART per macroblock: the refined vectors (EncFrame) */
    uint8_t *qpl;     /* the reference's half-sample planes (EncFrame.qpl), H.264 */
    int *ilevel, *ilist; /* P frames' intra macroblocks: level, and one level's list */
    int core_path;       /* test hook (vidk_enc_set_core_path): units_core of encode.c */
    void *cuda;          /* CUDA backend state (src/cuda/encode.cu) */
    /* VIDK_ENC_OUT_STREAM: the writer and the decisions it codes, filled by either driver */
    struct VidkH264Stream *stream;
    uint16_t *st_mbi;               /* decision word per macroblock */
    VidkMv *st_mv4;                 /* W / 4 x H / 4 */
    VidkMv *st_mv4b;                /* B frames: the list-1 vectors, W / 4 x H / 4 */
    uint8_t *st_im4;                /* Intra4x4PredMode per 4x4 luma block, W / 4 x H / 4 */
    int16_t *st_lev[3];             /* level planes */
    struct VidkThreadPool *st_pool; /* the writer's threads where the context has none (cuda:
                                       the host codes while the GPU waits); NULL: ops.run */
};

/* ---- src/enc/enc_frame.c: backend-independent helpers of both drivers ---- */

/* Reference frames the decoder keeps (max_num_ref_frames): 1; with B-frames 2; with reference
 * B pictures (b_pyramid, bframes >= 2) 4 (h264_stream.c dpb_frames). */
int vidk_enc_dpb(const VidkEncParams *p);
/* Is frame `index` an intra frame? */
int vidk_enc_is_intra(const VidkEncoder *e, int64_t index);
/* Frame types of the coding order (VidkEncoder.code_type). */
enum { VIDK_ENC_FRAME_I = 0, VIDK_ENC_FRAME_P = 1, VIDK_ENC_FRAME_B = 2 };
/* For a driver that queues the next frame ahead, during the receive of the frame
 * e->code_index: when the frame after it in coding order can be planned with the frames sent
 * (a B frame of the run of an anchor coded, or the next anchor, whose planning may run the
 * look-ahead's search: its still shares are kept in e), 1 and *nx the encoder's state as
 * vidk_enc_receive will have it for that frame (nx->code_index, code_type, done, the plan,
 * cur and anc; a shallow copy: only to be read); else 0. */
int vidk_enc_peek_next(VidkEncoder *e, VidkEncoder *nx);
/* The look-ahead's motion-search parameters (docs/ENCODE.md §16: 16x16 only, range R, the
 * lambda of the QP), for every backend's search of a frame against the one before it. */
void vidk_enc_la_params(const VidkEncoder *e, VidkMeParams *mp);
/* Frame parameters (QPs, lambda, quantiser tables, geometry) of an EncFrame; pointers and
 * strides are left for the caller. */
void vidk_enc_frame_setup(const VidkEncoder *e, int intra, EncFrame *f);
/* Motion-search parameters of an inter frame (range, shapes, the frame's lambda). */
void vidk_enc_me_params(const VidkEncoder *e, const EncFrame *f, VidkMeParams *mp);
/* Statistics of a frame from the summed unit statistics and the per-plane SSE. */
void vidk_enc_fill_info(const VidkEncoder *e, int64_t index, int intra, const EncSum *sum,
                        const uint64_t sse[3], VidkEncFrameInfo *info);
/* Check a picture against the encoder's source format. */
int vidk_enc_picture_ok(const VidkEncoder *e, const VidkPicture *pic);
/* Stream output: allocate the writer and the decision buffers when asked for (at open, after
 * the driver's open); free them (at close). */
int vidk_enc_stream_open(VidkEncoder *e);
void vidk_enc_stream_close(VidkEncoder *e);
/* Stream output: code frame `index` from the decisions in e->st_* (or the caller's maps
 * when the driver wrote those instead) into info->stream; times the stage. mv4b: a B
 * picture's list-1 vectors (NULL: an I or P picture). */
int vidk_enc_write_stream(VidkEncoder *e, int64_t index, int intra, const VidkMv *mv4,
                          const VidkMv *mv4b, int16_t *const lev[3], VidkEncFrameInfo *info);
/* B-frames: the caller's vector map of a frame (VidkEncMaps.mv): per 4x4 block list 0's
 * vector (mv4), list 1's (mv4b) where a B frame's macroblock (decision word mbi) predicts from
 * list 1 only. */
void vidk_enc_b_mv_map(const VidkEncoder *e, int bframe, const uint16_t *mbi, const VidkMv *mv4,
                       const VidkMv *mv4b, VidkMv *out);
/* B frame `index`'s references, by display index: list 0's *i0, list 1's *i1 (the anchors
 * around it, or the run's reference B frame, b_pyramid, on its side of it); returns bit 0:
 * list 0's is that B frame, bit 1: list 1's is, bit 2: frame `index` is it. */
int vidk_enc_b_refs(const VidkEncoder *e, int64_t index, int64_t *i0, int64_t *i1);
/* The pictures of a frame of type `type` (VIDK_ENC_FRAME_*), both drivers: the reconstruction
 * slots it reads (ref0, list 1's ref1) and writes (rec): 0 and 1 the anchors' (cur the next
 * anchor's: VidkEncoder.cur, or the driver's parity without B-frames), 2 the B frames', 3 the
 * run's reference B frame's (b_pyramid); colb: its co-located picture is that reference B
 * frame (list 1's reference), else the last anchor. i0, i1, br: vidk_enc_b_refs's for a B
 * frame (0 otherwise). kind: the stream writer's picture kind (a B frame of b_pyramid that is
 * a reference: VIDK_H264_PIC_BREF). */
typedef struct VidkEncPics {
    int64_t i0, i1;
    int br, ref0, ref1, rec, colb;
    VidkH264Pic kind;
} VidkEncPics;
void vidk_enc_pics(const VidkEncoder *e, int64_t index, int type, int cur, VidkEncPics *p);
/* Decision passes of an H.264 P frame (docs/ENCODE.md §4): the seed and the passes that
 * decide against the previous pass's neighbours. */
#define VIDK_ENC_DECIDE_PASSES 2

/* H.264 B frames: the shapes searched against each list (docs/ENCODE.md §16: 16x16, and the
 * 16x8 and 8x16 partitions of mb_types 4 .. 21). */
#define VIDK_ENC_B_SHAPES                                                                      \
    (VIDK_ME_SHAPE(VIDK_BLOCK_16x16) | VIDK_ME_SHAPE(VIDK_BLOCK_16x8) |                        \
     VIDK_ME_SHAPE(VIDK_BLOCK_8x16))
/* H.264: the geometry of the half-sample planes (EncFrame.qpl) of a W x H coded picture:
 * the row stride (W + 5 rounded up to 64) and the bytes of one plane. */
void vidk_enc_qpl_geometry(int W, int H, int *qps, ptrdiff_t *qpn);
/* Host wall clock in ms. */
double vidk_enc_now_ms(void);

/* Test hook (src/enc/encode.c): 1 = the CPU driver codes with enc_core.h's primitives (what
 * the device runs) instead of the context's dsp tables; same bits. No effect on cuda. */
void vidk_enc_set_core_path(VidkEncoder *e, int on);

#ifdef __cplusplus
}
#endif
#endif
