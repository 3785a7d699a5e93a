/**
 * @file encode.h
 * @brief vidkern public API: the hybrid coding loop (vidkern's main job).
 *
 * Included by vidkern/vidkern.h; include that, not this file.
 *
 * The encoder runs the core loop of an H.264 or HEVC encoder over 8-bit 4:2:0 pictures
 * and produces the reconstruction a standard decoder would produce from its levels,
 * motion vectors and modes (no bitstream is written; the bit cost is an Exp-Golomb
 * estimate). docs/ENCODE.md defines every decision so that any backend can be checked:
 * - Intra frames (the first, then every keyint-th): H.264 Intra_16x16 luma (V, H, DC,
 *   Plane) with chroma intra (DC, H, V, Plane), 4x4 transforms with the luma and chroma
 *   DC transforms; HEVC 32x32 CTUs of four 16x16 intra CUs (planar, DC, H, V with the
 *   standard reference substitution, smoothing and boundary filters), 16x16 / 8x8 TBs.
 *   Modes are chosen by SAD against the source, from reconstructed neighbours.
 * - Other frames: full-search integer-pel motion estimation against the previous
 *   reconstruction (closed loop); H.264: every partition's vector refined to quarter samples
 *   (SATD + lambda * bits), partition choice by cost, motion compensation with the
 *   standard's 6-tap luma and bilinear chroma filters; HEVC: partition choice by search cost,
 *   whole-sample vectors; then forward transform + quantisation, dequantisation + inverse
 *   transform, reconstruction.
 * - The reconstruction, levels, motion vectors and statistics are identical on every
 *   backend (tested).
 *
 * Pictures are coded at the size rounded up to whole macroblocks (16, H.264) or CTUs
 * (32, HEVC), the source extended by edge replication (the standards' cropping window);
 * outputs are cropped back to the source size.
 *
 * @code
 *   VidkEncParams p;  vidk_enc_default_params(&p);
 *   p.codec = VIDK_CODEC_HEVC;  p.qp = 32;  p.range = 32;
 *   VidkEncoder *e;  vidk_enc_open(ctx, &e, &p, w, h);
 *   vidk_enc_send(e, &pic0);                   // may be called ahead: the next frame
 *   vidk_enc_send(e, &pic1);                   // uploads while the previous is coded
 *   VidkEncFrameInfo info;
 *   vidk_enc_receive(e, &recon, NULL, &info);  // frame 0
 *   ...
 *   vidk_enc_close(&e);
 * @endcode
 */
#ifndef VIDKERN_ENCODE_H
#define VIDKERN_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Codec whose transforms, prediction and block structure the loop follows. */
typedef enum VidkCodec {
    VIDK_CODEC_H264 = 0, /**< H.264/AVC: 16x16 macroblocks, 4x4 / 8x8 transforms */
    VIDK_CODEC_HEVC = 1, /**< HEVC: 32x32 CTUs, 4x4..32x32 transform blocks */
    VIDK_CODEC_COUNT
} VidkCodec;

/** @return "h264" or "hevc"; "?" for other values. */
VIDK_API const char *vidk_codec_name(VidkCodec c);
/** @return the codec of a name ("h264", "avc", "hevc", "h265"), or VIDK_ERR(EINVAL). */
VIDK_API int vidk_codec_from_name(const char *name);

/** Largest QP of the loop (8-bit). */
#define VIDK_ENC_MAX_QP 51
/** Frames that may be sent and not yet received, at most (the encoder's own limit:
 *  VidkEncGeometry.max_pending). */
#define VIDK_ENC_MAX_PENDING 8
/** B-frames between two anchors (VidkEncParams.bframes), at most. */
#define VIDK_ENC_MAX_BFRAMES 3

/** What vidk_enc_receive() can return besides the statistics (VidkEncParams.outputs). */
enum VidkEncOutputs {
    VIDK_ENC_OUT_RECON = 1 << 0,  /**< the reconstructed picture */
    VIDK_ENC_OUT_MVS = 1 << 1,    /**< motion vector per 4x4 luma block */
    VIDK_ENC_OUT_ENERGY = 1 << 2, /**< prediction residual energy per 16x16 block */
    VIDK_ENC_OUT_LEVELS = 1 << 3, /**< quantised levels, one int16 plane per component */
    VIDK_ENC_OUT_ALL = 15,        /**< every map and picture above (not the stream) */
    VIDK_ENC_OUT_STREAM = 1 << 4  /**< the H.264 stream (VidkEncFrameInfo.stream) */
};

/** Parameters of vidk_enc_open(); fill with vidk_enc_default_params() first. */
typedef struct VidkEncParams {
    VidkCodec codec; /**< default VIDK_CODEC_H264 */
    int qp;     /**< luma QP, 0..VIDK_ENC_MAX_QP; default 30 (chroma QP by the codec's table) */
    int range;  /**< motion search range R: vectors in [-R, R]^2; 0..VIDK_ME_MAX_RANGE; default
                   16 */
    int keyint; /**< an intra frame every keyint frames; 0: only the first; default 0 */
    unsigned outputs; /**< VidkEncOutputs the caller will ask for; default VIDK_ENC_OUT_RECON.
                           On cuda only these cross PCIe. */
    int slices;       /**< stream: slices per picture, each a run of whole macroblock rows
                           (slice k starts at row k * rows / slices); 1..rows (more: the
                           rows), or 0 = auto (default): vidk_enc_slices() says how many.
                           Intra prediction does not cross a slice's top edge. */
    int fps_num, fps_den; /**< stream: frame rate for the SPS's VUI timing and the level;
                               0 / 0 = 25 / 1 (default) */
    int deblock;   /**< the in-loop deblocking filter: -1 = the codec's default (default): on
                        for H.264, off for HEVC (whose filters do not exist yet); 1 = on: H.264's
                        filter (8.7) on the reconstruction, which is then the next frame's
                        reference and what a decoder outputs (disable_deblocking_filter_idc 0);
                        HEVC refuses it (VIDK_ERR(ENOSYS)); 0 = off (H.264 idc 1). */
    int cabac;     /**< H.264 stream: -1 = the codec's default (default): CABAC for H.264;
                        1 = CABAC (entropy_coding_mode_flag 1; serial within a slice: its
                        arithmetic coder is one host thread a slice, so `slices` sets its
                        parallelism; on cuda the bins are made on the device); 0 = CAVLC.
                        HEVC refuses 1 (VIDK_ERR(ENOSYS)). */
    int intra4x4;  /**< H.264 intra macroblocks (of intra frames, and those P frames' decision
                        made intra): 1 = Intra_4x4 (I_NxN) as well as Intra_16x16, chosen per
                        macroblock by SATD + lambda x bits; 0 = not (default). Every backend,
                        the same bytes; HEVC refuses 1. */
    int intra8x8;  /**< H.264 intra macroblocks: 1 = Intra_8x8 (I_NxN with the 8x8 transform)
                        a candidate too; 0 = not (default). As intra4x4 on HEVC. */
    int bframes;   /**< H.264: B-frames between two anchors (I or P pictures), 0 (default) ..
                        VIDK_ENC_MAX_BFRAMES: a fixed pattern (I B B P B B P ... with 2), fewer
                        before an intra frame and at the end of the input; non-reference B
                        pictures (16x16 list 0, list 1, bi-predicted, spatial direct / B_Skip,
                        intra). Frames then come out of vidk_enc_receive() in coding order
                        (VidkEncFrameInfo.index says which, .bframe which are B); the input's
                        end is told by vidk_enc_send(e, NULL). Every H.264 backend; HEVC
                        refuses it (VIDK_ERR(ENOSYS)). */
    int b_adapt;   /**< with bframes: 1 (default) = adaptive: B frames only between still frames
                        (a look-ahead motion search of the sources, docs/ENCODE.md §16), fewer
                        or none where the scene moves; 0 = the fixed pattern */
    int b_pyramid; /**< with bframes >= 2: 1 = in a run of two or more B frames, the middle
                        one (the first of two) is a reference picture, coded right after
                        the anchor, and the others predict from it (as x264's --b-pyramid
                        with up to 3 B-frames; the stream then keeps 4 reference frames);
                        0 (default) = B frames are not references. Every H.264 backend. */
    uint8_t reserved[4]; /**< zero */
} VidkEncParams;

/** @brief Defaults: H.264, QP 30, R = 16, keyint 0, outputs = recon, the codec's deblocking
 * (H.264: on) and entropy coder (H.264: CABAC), slices auto. */
VIDK_API void vidk_enc_default_params(VidkEncParams *p);

/** @brief A preset of H.264 tools, named after the x264 preset whose quality it reaches
 * (BD-rate PSNR-Y on the real clips, docs/ENCODE.md §17): "ultrafast" (CAVLC, Intra_16x16
 * only, no B-frames), "superfast" (CABAC, Intra_16x16 only, no B-frames: the defaults),
 * "veryfast" (CABAC, Intra_4x4 and Intra_8x8, 3 adaptive B-frames with the pyramid). Sets
 * cabac, intra4x4, intra8x8, bframes, b_adapt and b_pyramid (the other fields stay); for
 * HEVC only what exists (none of them). Returns 0, or VIDK_ERR(EINVAL) for another name. */
VIDK_API int vidk_enc_preset(VidkEncParams *p, const char *name);

/** @brief The slices per picture of an encoder opened with p for w x h pictures: p->slices
 * up to the macroblock rows; with p->slices 0 (auto) one per 4 macroblock rows for H.264 with
 * CABAC and at least 45 rows (720p and above), so that the slices' arithmetic coders run in
 * parallel (at 1080p 17 slices: about 1.5% more bits than one, docs/STREAM.md), else 1.
 * 1 for invalid arguments. */
VIDK_API int vidk_enc_slices(const VidkEncParams *p, int w, int h);

/** Stages of one frame, as timed in VidkEncFrameInfo.stage_ms. */
typedef enum VidkEncStage {
    VIDK_ENC_STAGE_UPLOAD =
        0, /**< source into the encoder (cuda: host to device + edge extension) */
    VIDK_ENC_STAGE_ME = 1, /**< motion estimation (0 in intra frames) */
    VIDK_ENC_STAGE_CODE =
        2, /**< decision, prediction, transform, quantisation, reconstruction */
    VIDK_ENC_STAGE_STATS = 3,    /**< PSNR sums and statistics */
    VIDK_ENC_STAGE_DOWNLOAD = 4, /**< outputs to the caller (cuda: device to host) */
    VIDK_ENC_STAGE_STREAM = 5,   /**< entropy coding of the stream (VIDK_ENC_OUT_STREAM) */
    VIDK_ENC_STAGE_COUNT
} VidkEncStage;

/** Partition kinds counted in VidkEncFrameInfo.parts (per macroblock / coding unit). */
typedef enum VidkEncPart {
    VIDK_ENC_PART_INTRA = 0, /**< intra macroblock / CU */
    VIDK_ENC_PART_32x32 = 1, /**< HEVC 32x32 CU */
    VIDK_ENC_PART_16x16 = 2, /**< 16x16 (H.264 P_L0_16x16, HEVC 16x16 CU 2Nx2N) */
    VIDK_ENC_PART_16x8 = 3,  /**< 16x8 / HEVC 2NxN */
    VIDK_ENC_PART_8x16 = 4,  /**< 8x16 / HEVC Nx2N */
    VIDK_ENC_PART_8x8 = 5,   /**< split into 8x8 (H.264 P_8x8, HEVC four 8x8 CUs) */
    VIDK_ENC_PART_COUNT
} VidkEncPart;

/** Statistics of one coded frame. */
typedef struct VidkEncFrameInfo {
    int64_t index;      /**< frame number, from 0 */
    int intra;          /**< 1: intra frame */
    int bframe;         /**< 1: B frame (VidkEncParams.bframes; not a reference) */
    int qp;             /**< luma QP used */
    uint64_t sse[3];    /**< sum of squared errors source - recon per plane (visible area) */
    double psnr[3];     /**< PSNR in dB per plane (100 for sse 0) */
    uint64_t nnz[3];    /**< non-zero levels per plane */
    uint64_t bits_mode; /**< estimated bits: mode / partition / split syntax */
    uint64_t bits_mv;   /**< estimated bits: MVDs (signed Exp-Golomb lengths) */
    uint64_t
        bits_level; /**< estimated bits: levels and per-block counts (Exp-Golomb lengths) */
    uint64_t bits;  /**< sum of the three estimates */
    /** Blocks of each kind: one per H.264 macroblock; HEVC: one per 32x32 CU, per 16x16 CU
     *  (2Nx2N, 2NxN, Nx2N) and per 16x16 area split into 8x8 CUs (VIDK_ENC_PART_8x8), and one
     *  per 16x16 intra CU. Weigh by area for shares. */
    uint32_t parts[VIDK_ENC_PART_COUNT];
    double stage_ms[VIDK_ENC_STAGE_COUNT]; /**< time per stage (cuda: events on the device) */
    double total_ms;    /**< vidk_enc_send() to the end of vidk_enc_receive() of this frame,
                             host wall clock: with frames sent ahead, the latency including
                             the wait behind the previous frame */
    uint64_t h2d_bytes; /**< bytes moved host to device for this frame (0 on CPU backends) */
    uint64_t d2h_bytes; /**< bytes moved device to host for this frame (0 on CPU backends) */
    /** VIDK_ENC_OUT_STREAM: the frame's access unit, H.264 Annex-B (start codes; SPS and PPS
     *  before every IDR picture); owned by the encoder, valid until the next
     *  vidk_enc_receive() or vidk_enc_close(). NULL / 0 when the stream was not asked for. */
    const uint8_t *stream;
    size_t stream_size; /**< bytes of `stream` */
} VidkEncFrameInfo;

/** Geometry of an open encoder (sizes of the optional outputs). */
typedef struct VidkEncGeometry {
    int w, h;             /**< source (visible) luma size */
    int coded_w, coded_h; /**< coded luma size (multiple of 16 / 32) */
    int mv_w, mv_h;       /**< VidkEncMaps.mv: coded_w / 4 x coded_h / 4 vectors */
    int mb_w, mb_h;       /**< VidkEncMaps.energy: coded_w / 16 x coded_h / 16 values */
    int max_pending;      /**< frames that may be sent and not yet received (3, or 3 +
                               bframes; <= VIDK_ENC_MAX_PENDING) */
} VidkEncGeometry;

/**
 * @brief Optional per-block outputs (fill the pointers the params' outputs ask for).
 *
 * Arrays are raster order over the coded size (VidkEncGeometry). Levels: coefficient k
 * (raster inside its transform block) of the block at (bx, by) is at (bx + k % N,
 * by + k / N) of its plane (coded_w x coded_h luma, half each way for chroma); H.264 DC
 * levels sit at element 0 of their 4x4 blocks (docs/ENCODE.md).
 */
typedef struct VidkEncMaps {
    VidkMv *mv; /**< VIDK_ENC_OUT_MVS: mv_w * mv_h vectors in quarter luma samples (HEVC:
                     multiples of 4), (0, 0) in intra blocks */
    uint32_t
        *energy; /**< VIDK_ENC_OUT_ENERGY: mb_w * mb_h sums of (source - prediction)^2, luma */
    int16_t *levels[3]; /**< VIDK_ENC_OUT_LEVELS: planes, coded size (Y), half size (U, V) */
} VidkEncMaps;

typedef struct VidkEncoder VidkEncoder;

/**
 * @brief Open an encoder for w x h 8-bit 4:2:0 pictures on ctx's backend.
 * @param ctx context (first, as in every call that takes one).
 * @param out receives the encoder (NULL on failure): the created object comes right after
 *        the context (vidkern.h, "Argument order").
 * @return 0; VIDK_ERR(EINVAL) for bad parameters or sizes (even, 16..VIDK_MAX_PICTURE_SIDE);
 *         VIDK_ERR(ENOMEM); VIDK_ERR(EIO) for a device error (logged).
 * The context must outlive the encoder and is used by one encoder at a time.
 */
VIDK_API int vidk_enc_open(VidkContext *ctx, VidkEncoder **out, const VidkEncParams *p, int w,
                           int h);

/** @brief Geometry of e. */
VIDK_API void vidk_enc_geometry(const VidkEncoder *e, VidkEncGeometry *g);

/**
 * @brief Queue the next source picture.
 *
 * The picture (w x h, 4:2:0, 8-bit) must stay unchanged until vidk_enc_receive() has
 * returned its frame (with B-frames it is copied here and may be reused at once). On cuda
 * its upload starts now, overlapping the frame in progress. src NULL: the end of the input
 * (with B-frames the last frames are coded then; no picture may follow).
 * @return 0; VIDK_ERR(EINVAL) for a picture of another format or one after the end;
 *         VIDK_ERR(EAGAIN) when VidkEncGeometry.max_pending frames are waiting;
 *         VIDK_ERR(EIO) for a device error.
 */
VIDK_API int vidk_enc_send(VidkEncoder *e, const VidkPicture *src);

/**
 * @brief Code the next picture in coding order and return its results (without B-frames
 *        the oldest queued one; with B-frames an anchor before the B pictures it follows in
 *        display order: VidkEncFrameInfo.index).
 * @param recon NULL, or a w x h 4:2:0 8-bit picture for the reconstruction (needs
 *        VIDK_ENC_OUT_RECON in the params).
 * @param maps NULL, or arrays for the outputs the params ask for (NULL members skip).
 * @param info statistics of the frame (not NULL).
 * @return 0; VIDK_ERR(EAGAIN) when nothing was sent, or (B-frames) when the next picture
 *         needs frames not yet sent (send them, or the end); VIDK_ERR(EINVAL) for an output the
 *         params did not ask for or a recon picture of another format; VIDK_ERR(EIO).
 */
VIDK_API int vidk_enc_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                              VidkEncFrameInfo *info);

/** @brief Close an encoder (pending frames are dropped) and set *e to NULL. */
VIDK_API void vidk_enc_close(VidkEncoder **e);

/** @return the estimated lambda (SAD units) the loop uses at qp (docs/ENCODE.md). */
VIDK_API int vidk_enc_lambda(int qp);

#ifdef __cplusplus
}
#endif
#endif
