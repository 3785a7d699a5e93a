/* The cuBLAS baseline of Cobrnic et al. 2020 (section 3) for `vidkern-bench hevc`:
 * HEVC forward transform + quantisation of a frame's TBs in 32-bit float with
 * cublasSgemmStridedBatched, as the paper describes it. Benchmark code, not part of the
 * library (the library's transforms are integer and exact); compiled into the static
 * library vidkbench_cuda, linked to vidkern-bench only when the build has CUDA.
 *
 * Per TB size (blocks X of N x N, row-major, the HEVC matrix D of that size):
 *   1. T = X x D^T    one cublasSgemmStridedBatched per run of TBs of one transform kind
 *                     (DCT, or DST-VII for intra luma 4x4), the matrix shared by every
 *                     block (stride 0); scaling by 2^-(log2N + bitDepth - 9) as the GEMM's
 *                     alpha (the paper: "scaling ... implemented as a scalar
 *                     multiplication")
 *   2. rounding kernel: floor(x + 0.5) (the paper: "rounded in a separate kernel by
 *                     using the floor command"), equal to HEVC's (x + 2^(s-1)) >> s for
 *                     exact inputs
 *   3. Y = D x T      second GEMM, alpha 2^-(log2N + 6), then the rounding kernel again
 *   4. quantisation kernel in float: sign(c) * floor((|c| * Q + offset) * 2^-qbits),
 *                     clipped to [-32768, 32767], per-TB qP and slice type
 * Data are float32 throughout, as in the paper: residuals are converted to float on the
 * host before the timed part (the paper's data were float), H2D moves 4 bytes per sample
 * (+ the 8-byte TB records), D2H 4 bytes per level. Batches of more than 65535 blocks are
 * cut into GEMM calls of at most 65535 (the grid limit of batched GEMM kernels).
 * Float products and sums above 2^24 are rounded, so levels can differ from the exact
 * integer result: the benchmark counts those mismatches against the c backend.
 * Transform skip TBs and scaling lists are not supported (VIDK_ERR(ENOTSUP)).
 *
 * cuBLAS is loaded at run time: $VIDK_CUBLAS_LIB if set, else libcublas.so.13, .so.12 or
 * .so from the loader's path (or /usr/local/cuda/lib64); without it hcb_open() fails with
 * VIDK_ERR(ENOENT) and the benchmark reports the baseline as unavailable.
 *
 * Every function returns 0 or a negative errno code (VIDK_ERR) with a one-line message
 * in err; nothing is printed. One host thread per context. */
#ifndef VIDK_BENCH_HEVC_CUBLAS_H
#define VIDK_BENCH_HEVC_CUBLAS_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque baseline context: cuBLAS handle, stream, events, device and pinned buffers. */
typedef struct HcbCtx HcbCtx;

/** Device times of one hcb_run() (CUDA events on the baseline's single stream). */
typedef struct HcbTiming {
    double overall_ms; /**< first H2D begins .. last D2H ends */
    double h2d_ms;     /**< residuals + TB records to the device */
    double kernel_ms;  /**< first GEMM begins .. quantisation of the last size ends */
    double d2h_ms;     /**< levels back to the host */
    size_t h2d_bytes, d2h_bytes;
    double kernel_bytes; /**< device-memory traffic of the kernels (model: 40 B/sample) */
    int launches;        /**< GEMM calls + rounding + quantisation kernels */
} HcbTiming;

/**
 * @brief Create a baseline context on CUDA device `device` (cuBLAS handle, FP32 math
 * mode without TF32, one stream).
 * @return 0; VIDK_ERR_NODEV (no device); VIDK_ERR(ENOENT) (no cuBLAS library found);
 *         VIDK_ERR(EIO) (CUDA / cuBLAS failure).
 */
int hcb_open(HcbCtx **c, int device, char *err, size_t errlen);

/** @brief Release everything; *c = NULL. NULL or *c NULL is a no-op. */
void hcb_close(HcbCtx **c);

/**
 * @brief Stage a frame: TB records and residuals (converted to float) into pinned
 * buffers, device buffers sized, GEMM runs planned. Not timed.
 * @return 0; VIDK_ERR(ENOTSUP) for transform skip TBs or scaling lists;
 *         VIDK_ERR(EINVAL); VIDK_ERR(ENOMEM); VIDK_ERR(EIO).
 */
int hcb_prepare(HcbCtx *c, const VidkHevcBatch *b, char *err, size_t errlen);

/**
 * @brief One timed pass over the staged frame: H2D, the GEMMs and kernels, D2H, then a
 * stream synchronisation.
 * @return 0 or VIDK_ERR(EIO).
 */
int hcb_run(HcbCtx *c, HcbTiming *t, char *err, size_t errlen);

/**
 * @brief The levels of the last hcb_run(), as int16, per size list: lev[s] receives
 * count * N * N values of list s (lists with count 0 are skipped; lev[s] may be NULL
 * for them).
 */
int hcb_levels(const HcbCtx *c, int16_t *const lev[VIDK_HEVC_TB_SIZES]);

/**
 * @brief Measured bandwidths of the device: device-to-device copy (bytes read + bytes
 * written per second), pinned host-to-device and device-to-host (bytes per second), each
 * the median of several 256 MB / 64 MB copies.
 * @return 0 or VIDK_ERR(EIO) / VIDK_ERR(ENOMEM).
 */
int hcb_bandwidth(HcbCtx *c, double *d2d, double *h2d, double *d2h, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
