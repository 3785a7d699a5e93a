/* H.264 coefficient workloads for `vidkern-bench h264`: frames of quantised levels made
 * from video by our own forward path, in the three modes of Wang et al. 2013 (Fig. 2,
 * Tables 2-3): "intra" (intra prediction only, QP 12: the high-rate Intra-100/400 mode),
 * "qp22" and "qp37" (P frames: motion-compensated prediction from the previous frame;
 * the CRF22 / CRF37 modes). Tool-level code: prints nothing, returns negative errno codes
 * with a one-line message.
 *
 * Encoder model (documented in docs/BENCH_H264.md; simple on purpose, real statistics):
 * - Transform size per macroblock from the source luma activity A (mean absolute
 *   deviation of the 16x16 block from its mean): A < H264W_ACT_I16 -> Intra16x16 (intra
 *   mode only), A < H264W_ACT_8x8 -> 8x8 transform, else 4x4 (the paper separates the
 *   two sizes; smooth macroblocks take the 8x8 transform as in x264).
 * - Intra prediction is open loop, from the *source* neighbours of each prediction block
 *   (16x16 for Intra16x16, 8x8 for the 8x8 transform, 4x4 otherwise; chroma per 8x8):
 *   the best (lowest SAD) of vertical, horizontal and DC, as the H.264 modes 0, 1, 2
 *   define them (DC: the rounded mean of the available neighbours, 128 without any).
 * - Inter: full-search integer-pel motion estimation (vidk_me_search, R = 16, 16x16 and
 *   8x8 vectors, pure SAD) of each source frame against the previous source frame; a
 *   macroblock takes its four 8x8 vectors when their SAD sum plus 24 * lambda(QP) is
 *   below the 16x16 SAD (lambda(QP) = sqrt(0.85 * 2^((QP - 12) / 3)), the SAD lambda of
 *   JM). Prediction is closed loop: integer-pel motion compensation from the
 *   *reconstruction* of the previous frame (chroma vectors: the luma vector >> 1). The
 *   first frame of the sequence is coded intra at the mode's QP and is not part of the
 *   workload. Every macroblock of a P frame is inter coded.
 * - Quantisation: vidk_h264_batch_forward (flat scaling, dead zone 1/3 intra, 1/6 inter),
 *   QP'Y = the mode's QP, QP'C from Table 8-15 with offset 0; 4:2:0, 8 bit.
 */
#ifndef VIDK_BENCH_H264_WORKLOAD_H
#define VIDK_BENCH_H264_WORKLOAD_H

#include <stddef.h>

#include "vidkern/vidkern.h"

/** Activity thresholds of the transform-size rule (mean |x - mean| of the 16x16 luma). */
#define H264W_ACT_I16 1.5
#define H264W_ACT_8x8 5.0
/** Motion search range of the inter modes. */
#define H264W_RANGE 16

/** The paper's three encoding modes. */
typedef enum H264wMode {
    H264W_INTRA = 0, /**< intra prediction only, QP 12 */
    H264W_QP22 = 1,  /**< P frames, QP 22 */
    H264W_QP37 = 2,  /**< P frames, QP 37 */
    H264W_MODE_COUNT
} H264wMode;

/** "intra", "qp22", "qp37" ("?" otherwise). */
const char *h264w_mode_name(int mode);
/** The mode of a name, or -1. */
int h264w_mode_from_name(const char *name);
/** QP of a mode (12, 22, 37). */
int h264w_mode_qp(int mode);

/** Statistics of a workload, summed over its frames. */
typedef struct H264wStats {
    size_t blocks[2], blocks_total[2]; /**< non-zero / all transform blocks, 4x4 and 8x8 */
    size_t dc_groups, nonzero;         /**< DC groups, non-zero levels */
    size_t bytes_dense, bytes_compacted, bytes_sparse; /**< vidk_h264_bytes() */
    size_t mb_total, mb_intra, mb_i16, mb_8x8;         /**< macroblocks by flags */
    long mb_split; /**< inter macroblocks with 8x8 vectors; -1 = unknown (loaded) */
    double psnr_y; /**< mean luma PSNR of the reconstruction vs the source; 0 = unknown */
    double prep_s; /**< seconds spent making or loading the workload */
} H264wStats;

/** One workload: nframes coefficient frames, each with the prediction it decodes onto. */
typedef struct H264Workload {
    char size_name[24]; /**< "1080p", "2160p", "WxH" */
    char mode_name[48]; /**< "intra", "qp22", "qp37", or a loaded file's name */
    char source[256];   /**< where the pictures came from */
    int w, h;           /**< coded luma size (multiples of 16) */
    int nframes;
    VidkH264CoefFrame *fr; /**< [nframes] */
    VidkH264Batch *batch;  /**< [nframes]: compacted, size-separated (vidk_h264_batch_build) */
    VidkPicture *pred;     /**< [nframes]: prediction pictures (8 bit, fr's chroma format) */
    H264wStats stats;
} H264Workload;

/** Motion fields of consecutive source frames, shared by the inter modes. */
typedef struct H264wMotion {
    int n;              /**< fields: field k is frame k + 1 against frame k */
    VidkMeField *field; /**< [n], 16x16 and 8x8 shapes */
    double seconds;     /**< time spent in vidk_me_search */
} H264wMotion;

/**
 * Motion estimation of src[k + 1] against src[k], k = 0..nsrc-2.
 * @return 0 or a negative error code (message in err).
 */
int h264w_motion(VidkContext *ctx, const VidkPicture *src, int nsrc, H264wMotion *mo, char *err,
                 size_t errlen);
void h264w_motion_free(H264wMotion *mo);

/**
 * Make a workload of nsrc - 1 frames from the source pictures src[0..nsrc-1] (8-bit
 * 4:2:0, sides multiples of 16, padding >= 32): intra codes src[1..]; the inter modes code
 * src[0] intra (not kept) and then src[1..] as P frames with the fields of `mo` (from
 * h264w_motion on the same pictures). ctx: any CPU backend (all give the same bits).
 * @return 0 or a negative error code (message in err).
 */
int h264w_build(VidkContext *ctx, const VidkPicture *src, int nsrc, const H264wMotion *mo,
                int mode, H264Workload *wl, char *err, size_t errlen);

/** Recount wl->stats (except psnr_y, mb_split and prep_s) from its frames and batches. */
int h264w_count(H264Workload *wl);

/**
 * Save as DIR/<size>_<mode>.vkcf (coefficient frames, docs/COEFFORMAT.md) and
 * DIR/<size>_<mode>.pred.y4m (the predictions); the folder must exist.
 */
int h264w_save(const H264Workload *wl, const char *dir, char *err, size_t errlen);

/**
 * Load a .vkcf file (at most max_frames records; 0 = all). The predictions come from
 * <stem>.pred.y4m next to it when that file matches (size, chroma, 8 bit, enough frames),
 * else every prediction is flat mid-grey (128) and wl->source says so. The size name is
 * h264w_size_name() of the records; a stem "<that size>_<mode>" gives the mode, any other
 * stem is the mode name itself.
 * ctx builds the batches (NULL = portable C).
 */
int h264w_load(VidkContext *ctx, const char *path, int max_frames, H264Workload *wl, char *err,
               size_t errlen);

/** Free everything of a workload and zero it. NULL is a no-op. */
void h264w_free(H264Workload *wl);

/** Name of a coded size: "1080p" for 1920x1088, "2160p" for 3840x2160, "720p", "cif",
 *  else "WxH". */
void h264w_size_name(int w, int h, char *buf, size_t n);

#endif
