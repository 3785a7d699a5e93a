/* Pieces shared by `vidkern encode` and `vidkern-bench encode`: totals of the per-frame
 * statistics of the coding loop (VidkEncFrameInfo), their JSON form, a hash of outputs
 * for the backend cross-check, and PNG pictures of the per-block maps (motion vectors
 * as a colour wheel, residual energy as a heat map). */
#ifndef VIDK_TOOLS_ENC_REPORT_H
#define VIDK_TOOLS_ENC_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vidkern/vidkern.h"

/* Sums over the coded frames of a sequence. */
typedef struct EncAccum {
    int64_t frames, intra, bframes;
    double psnr_sum[3];  /* sum of the per-frame PSNRs (average = / frames) */
    uint64_t sse[3];     /* total SSE per plane (sequence PSNR) */
    uint64_t samples[3]; /* visible samples per plane, all frames */
    uint64_t nnz[3];
    uint64_t bits_mode, bits_mv, bits_level, bits;
    uint64_t parts[VIDK_ENC_PART_COUNT];
    double stage_ms[VIDK_ENC_STAGE_COUNT];
    double total_ms;
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t stream_bytes; /* the coded stream (VIDK_ENC_OUT_STREAM), headers included */
} EncAccum;

void enc_accum_init(EncAccum *a);
/* Add frame fi of a w x h (even) 4:2:0 sequence. */
void enc_accum_add(EncAccum *a, const VidkEncFrameInfo *fi, int w, int h);
/* PSNR of plane p over the whole sequence from the total SSE (100 dB when it is 0, as
 * the library does per frame). */
double enc_accum_seq_psnr(const EncAccum *a, int p);
/* Average of the per-frame PSNRs of plane p. */
double enc_accum_avg_psnr(const EncAccum *a, int p);

/* PSNR in dB of an SSE over `samples` 8-bit samples; 100 for sse 0. */
double enc_psnr(uint64_t sse, uint64_t samples);

/* Names: "upload", "me", "code", "stats", "download", "stream"; "intra", "32x32", "16x16",
 * "16x8", "8x16", "8x8" (the JSON keys). */
const char *enc_stage_name(int stage);
const char *enc_part_name(int part);
/* Does partition kind `part` occur in `codec` (32x32 CUs are HEVC only)? */
int enc_part_in_codec(int part, VidkCodec codec);
/* Area of one counted block of kind `part` in 16x16 units: the library counts one per
 * macroblock / 16x16 CU (an 8x8 split counts once per 16x16), and one per 32x32 CU. */
int enc_part_area16(int part);

/* JSON object of one frame (every VidkEncFrameInfo field) on one line, no newline. */
void enc_json_frame(FILE *f, const VidkEncFrameInfo *fi);
/* JSON object of the totals: frames, PSNRs (average and sequence), bits, nnz,
 * partitions, stage averages, transfers, all per frame where it says so. `indent` is
 * prepended to every line after the first; no trailing newline. */
void enc_json_summary(FILE *f, const EncAccum *a, const char *indent);

/* 64-bit hash for the backend cross-check (not cryptographic): start with
 * ENC_HASH_INIT, then feed bytes. */
#define ENC_HASH_INIT 0xcbf29ce484222325ull
uint64_t enc_hash_bytes(uint64_t h, const void *p, size_t n);
/* The visible samples of every plane of an 8-bit picture. */
uint64_t enc_hash_picture(uint64_t h, const VidkPicture *pic);
/* The deterministic fields of a frame's statistics (everything but the times, the
 * transfer counts and the PSNRs, which are functions of the SSEs). */
uint64_t enc_hash_info(uint64_t h, const VidkEncFrameInfo *fi);

/* Motion vectors (one per 4x4 luma block, mv_w x mv_h in raster order) as a w x h RGB
 * PNG: hue = direction (right red, down yellow-green, left cyan, up violet; image y
 * down), saturation 0.2 + 0.8 * length / norm for non-zero vectors (capped at 1; (0, 0)
 * is white); norm <= 0: the 98th percentile of the non-zero lengths of the picture. `intra`
 * paints the frame a flat grey (no vectors in an intra frame). 0 or < 0 with a message in err.
 */
int enc_png_mvs(const char *path, const VidkMv *mv, int mv_w, int mv_h, int w, int h, int norm,
                int intra, char *err, size_t errlen);
/* Residual energy (one sum of squares per 16x16 luma block, mb_w x mb_h) as a w x h RGB
 * heat map on a fixed log scale of the mean squared residual per sample m:
 * log(1 + m) / log(1 + 64^2), black (0) through purple, red, orange to pale yellow
 * (64^2 and above), so that pictures of different frames and runs compare. */
int enc_png_energy(const char *path, const uint32_t *energy, int mb_w, int mb_h, int w, int h,
                   char *err, size_t errlen);

/* Description of the CPU or GPU a context runs on: "Intel(R) Xeon(R) ..., AVX2, 16
 * threads" or "NVIDIA H100 80GB HBM3 (device 0, 132 SMs, compute 9.0)". */
void enc_device_desc(VidkContext *ctx, int device, char *buf, size_t n);
/* Highest CPU feature in a VidkCpuFlags set: "avx512", "avx2", "sse4.1", "ssse3",
 * "sse2" or "none". */
const char *enc_cpu_level(unsigned flags);

#endif
