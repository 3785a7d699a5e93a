/* Workloads of `vidkern-bench hevc`: prediction-error (residual) frames of real or
 * generated video, cut into HEVC transform blocks (TBs) by a fixed or an energy-driven
 * distribution, as VidkHevcBatch lists ready for the transform + quantisation APIs.
 * Tool-level code: prints nothing; errors come back as negative codes and a message.
 *
 * A workload is "<size>-<distribution>":
 *   size          4k (DCI 4K, 4096x2160), 2160p (3840x2160), 1080p, 720p, cif, or WxH
 *                 (both multiples of 8, 16..8192 x 16..4320)
 *   distribution  4x4, 8x8, 16x16, 32x32: every luma TB of that size (4:0:0, luma only,
 *                 the TB distributions of Cobrnic et al. 2020, Table 1); where the size
 *                 does not fit at the right / bottom edge the remainder takes the largest
 *                 smaller TBs that fit (HEVC's implicit split at picture boundaries: DCI
 *                 4K all-32x32 = 128 x 67 TBs of 32x32 + 256 TBs of 16x16 in the last 16
 *                 rows). mixed: 4:2:0 with chroma, TB sizes chosen per 32x32 block by a
 *                 quadtree on the residual's energy (below).
 *
 * Frames (a GOP "I P P ..."): residual frame k (k = 0..frames-1) is source picture k + 1
 * minus its prediction. Frame 0 is intra coded (I slice): every TB is predicted from the
 * source samples above and to the left of it (open loop: the encoder would use its
 * reconstruction, which at these QPs is close), by the best of DC, horizontal and
 * vertical prediction (least SAD); a missing neighbour row or column takes 2^(bd-1) as
 * in H.265 8.4.4.2.2. Intra luma 4x4 TBs use the DST (H.265 8.6.4.2). Frames 1.. are
 * inter coded (P slice): motion vectors from vidk_me_search (R = 16, 16x16 blocks) of
 * picture k + 1 against picture k, prediction = the reference block at that vector
 * (integer-pel; reference samples outside the picture take the nearest edge sample);
 * chroma (4:2:0) uses the luma vector halved and floored (the full-sample part of the
 * chroma vector; no sub-sample interpolation).
 *
 * Mixed distribution: the luma plane is cut into 32x32 blocks; a block of side N > 4 is
 * split into four when the variance of its residual (energy about its mean) per sample
 * exceeds HW_SPLIT_K * Qstep^2 * (32 / N)^2, Qstep = 2^((QP - 4) / 6); smaller blocks must
 * be busier to be split further. Intra TBs are re-predicted at each candidate size (the
 * residual of a TB is that of its own prediction, as in HEVC). Blocks that cross the
 * picture edge are always split, blocks outside are dropped. Chroma follows the luma
 * tree (4:2:0): a luma leaf of side N >= 8 gives a chroma TB of side N / 2 in each chroma
 * plane; four 4x4 luma leaves of one 8x8 share one chroma 4x4 (H.265 7.3.8.8).
 * Chroma qP: QP'C of H.265 Table 8-10 (4:2:0, no chroma QP offsets).
 *
 * TB order inside each list: plane 0, 1, 2; within a plane by 32x32 block in raster
 * order and z-order inside it (runs of equal transform kind are long: intra luma 4x4
 * DST TBs come before chroma 4x4 DCT TBs). */
#ifndef VIDK_BENCH_HEVC_WORKLOAD_H
#define VIDK_BENCH_HEVC_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "mosaic.h"
#include "vidkern/vidkern.h"

/* Energy threshold of the mixed distribution (see the file comment). */
#define HW_SPLIT_K 0.25

/* TB distributions. Values 0..3 are the fixed sizes (= VidkHevcTbSize). */
typedef enum HwDist {
    HW_DIST_4x4 = 0,
    HW_DIST_8x8 = 1,
    HW_DIST_16x16 = 2,
    HW_DIST_32x32 = 3,
    HW_DIST_MIXED = 4
} HwDist;

typedef struct HwSpec {
    char name[40];      /* as given, e.g. "4k-4x4" */
    char size_name[24]; /* "4k", "1080p", "256x128" */
    int w, h;
    HwDist dist;
    VidkChroma chroma; /* 4:0:0 for the fixed distributions, 4:2:0 for mixed */
} HwSpec;

/* Parse a workload name. Returns 0, or -1 with a message in err. */
int hw_parse(const char *name, HwSpec *s, char *err, size_t errlen);

/* Where the source pictures come from. */
typedef enum HwSource { HW_SOURCE_REAL = 0, HW_SOURCE_GEN = 1 } HwSource;

typedef struct HwParams {
    HwSource source;
    const Mosaic *mosaic; /* for HW_SOURCE_REAL */
    int frames;           /* residual frames, 1..64 (frame 0 intra, the rest inter) */
    int qp;               /* luma QP, 0..51 (8-bit video) */
    int me_range;         /* search range of the inter frames (16) */
    VidkContext *ctx;     /* CPU context for motion search and residuals */
} HwParams;

/* One residual frame: the batch holds TB records and residuals (lev etc. unused). */
typedef struct HwFrame {
    VidkHevcBatch batch;
    int intra;                         /* 1: I frame, 0: P frame */
    uint32_t tbs[VIDK_HEVC_TB_SIZES];  /* TBs per size (= batch.list[s].count) */
    uint64_t samples;                  /* residual samples (all planes) */
    uint64_t area[VIDK_HEVC_TB_SIZES]; /* samples covered by TBs of each size */
    double mean_abs;                   /* mean |residual| per sample */
} HwFrame;

typedef struct HwWorkload {
    HwSpec spec;
    char source[320]; /* "mosaic (real): ..." or "generated" */
    int nframes;
    HwFrame *frames;
    double build_s; /* seconds spent preparing (source pictures, motion search) */
} HwWorkload;

/* Build the workload's frames. Returns 0; a negative error code with a message in err. */
int hw_build(HwWorkload *w, const HwSpec *s, const HwParams *p, char *err, size_t errlen);

/* Free everything of a workload (NULL or an empty one is fine) and zero it. */
void hw_free(HwWorkload *w);

/* QP'C of a luma QP for 4:2:0 (H.265 Table 8-10, offsets 0), 8-bit. */
int hw_chroma_qp(int qp);

/* "4x4" .. "32x32", "mixed". */
const char *hw_dist_name(HwDist d);

#endif
