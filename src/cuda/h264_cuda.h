/* C-linkage entry points of the CUDA backend of the H.264 transform family
 * (src/cuda/h264.cu; design and numbers in docs/H264_CUDA.md).
 *
 * The public batch API (vidk_h264_batch_inverse, vidk_h264_frame_inverse,
 * vidk_h264_batch_forward on a cuda context) calls these with opts NULL: the best
 * settings. Benchmarks and tests call them with explicit options to switch each GPU
 * optimisation of Wang et al. 2013 (Table 4) and the ones past it on in turn; every
 * combination gives the same bits as the c backend. */
#ifndef VIDK_H264_CUDA_H
#define VIDK_H264_CUDA_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Switches of the CUDA H.264 paths. Fields a path does not use are ignored (listed per
 * field). Fill with vidk_cuda_h264_default_opts() or vidk_cuda_h264_step_opts().
 */
typedef struct VidkH264CudaOpts {
    /** 0: the dense baseline: the whole coefficient frame crosses PCIe and one thread
     *  per 4x4 / 8x8 block of the frame runs (vidk_cuda_h264_frame_inverse only; a batch
     *  is compacted by construction). 1: compacted, size-separated block lists. */
    int compact;
    /** Compact only. 1: one thread per block row (rows, then columns through a padded
     *  per-warp shared-memory transpose with __syncwarp); 0: one thread per block. */
    int line_per_thread;
    /** Compact only. Threads per CUDA block: a multiple of 32, 32..1024 (the paper: 96). */
    int threads;
    /** Compact only. Rounds of blocks per thread (work granularity), 1..16. */
    int work;
    /** Compact only. 1: write back through shared memory with a padded stride, so that
     *  consecutive threads store consecutive words; 0: each thread stores its own. */
    int coalesced;
    /** Compact only. 1: upload per block a significance mask, a value offset and the
     *  non-zero levels; 0: every level of every block (int16). */
    int sparse;
    /** Compact only. 1: upload the prediction of each block and download 8-bit
     *  reconstructed samples (dequantise + inverse transform + add fused on the device);
     *  0: download int16 residuals (clamped to +-512, which keeps the clipped sum) and
     *  add them on the host. Dense: 1 moves the whole picture both ways instead. */
    int fused;
    /** Compact, forward and dense_vec. 1: chunks of blocks (bands of macroblock rows)
     *  pipelined over the streams: host packing of chunk k+1, H2D, kernels and D2H of
     *  earlier chunks overlap; 0: one chunk per size class on stream 0. */
    int pipeline;
    /** Streams of the pipeline: 1..the context's count; 0 = the context's (cuda_streams). */
    int streams;
    /** Blocks per chunk (forward and dense_vec: macroblock rows per band); 0 = automatic. */
    int chunk;
    /** Compact only. 1: the call's copies and kernels are one CUDA graph, kept in the
     *  context and updated in place from call to call (a single chunk per size class;
     *  overrides pipeline). -1: automatic (when the call fits one chunk). 0: off. */
    int graphs;
    /** Compact only. 1: the host staging (validation, packing, write-back) runs over a
     *  pool of host threads, and each chunk's levels go up dense or sparse, whichever is
     *  smaller (overrides sparse); 0: the single-threaded staging of steps 0..8.
     *  dense_vec: 1 = its row copies through the pinned slot run over that pool. */
    int host;
    /** Host threads of that pool (host 1): 1..64; 0 = automatic (the context's
     *  VidkSettings.n_threads when set, else the online CPUs, at most 8). */
    int host_threads;
    /** Compact, fused, line per thread and coalesced only (ignored otherwise). 1: the
     *  prediction goes up as whole picture planes and the reconstruction comes back as
     *  planes (row copies on the host instead of per-block gathers and scatters; no
     *  graph); 0: per-block prediction and samples; -1: automatic (planes when the coded
     *  blocks cover at least half of the picture). */
    int plane;
    /** vidk_cuda_h264_frame_inverse with compact 1 only. 1: the fast dense kernel on the
     *  whole coefficient frame, no compaction on the host: level planes (int16) and
     *  prediction planes up, reconstruction planes down, in bands of macroblock rows
     *  pipelined over the streams (pipeline; chunk = macroblock rows per band); one warp
     *  per 8 macroblocks of one transform type (sorted inside each CUDA block), 16-byte
     *  loads of levels, dequantise + inverse transform + add + clip fused. 0: compaction
     *  on the host (vidk_h264_batch_build), then the batch path. */
    int dense_vec;
    /** 1: always stage through the library's pinned buffers; 0: memory the caller
     *  registered (vidk_host_register / vidk_picture_register) is copied directly:
     *  level planes and macroblocks of the frame inverse (dense_vec), prediction and
     *  reconstruction planes of the frame inverse (dense_vec) and of plane mode. */
    int staged;
} VidkH264CudaOpts;

/** Steps of the paper's Table 4 and past it; vidk_cuda_h264_step_opts(o, s) turns on
 *  every step up to s. */
enum VidkH264CudaStep {
    VIDK_H264_CUDA_DENSE = 0,     /**< dense baseline, 96 threads, residuals back */
    VIDK_H264_CUDA_COMPACT = 1,   /**< + compaction and size separation */
    VIDK_H264_CUDA_LINE = 2,      /**< + line-per-thread mapping */
    VIDK_H264_CUDA_LARGER = 3,    /**< + 256-thread CUDA blocks, 2 rounds per thread */
    VIDK_H264_CUDA_COALESCED = 4, /**< + coalesced write-back through shared memory */
    VIDK_H264_CUDA_SPARSE = 5,    /**< + sparse upload (mask + offset + values) */
    VIDK_H264_CUDA_FUSED = 6,     /**< + prediction up, 8-bit reconstruction down */
    VIDK_H264_CUDA_PIPELINE = 7,  /**< + chunked multi-stream pipeline */
    VIDK_H264_CUDA_GRAPHS = 8,    /**< + CUDA graph replay (single chunk) */
    VIDK_H264_CUDA_HOST = 9,      /**< + parallel host staging, levels dense/sparse per
                                       chunk; graphs back to automatic */
    VIDK_H264_CUDA_PLANES = 10,   /**< + prediction / reconstruction as whole planes */
    VIDK_H264_CUDA_STEPS = 11
};

/** The settings the public API uses: step VIDK_H264_CUDA_PLANES with graphs and plane
 *  mode automatic, plus dense_vec 1 (frame inverse by the fast dense kernel). */
void vidk_cuda_h264_default_opts(VidkH264CudaOpts *o);

/** Every optimisation up to and including `step` (VidkH264CudaStep) on, the rest off.
 *  Returns 0, or VIDK_ERR(EINVAL) for a step outside 0..VIDK_H264_CUDA_STEPS-1. */
int vidk_cuda_h264_step_opts(VidkH264CudaOpts *o, int step);

/** Name of a step ("dense", "compact", ...), "?" for others. */
const char *vidk_cuda_h264_step_name(int step);

/**
 * vidk_h264_batch_inverse on the device. Checks its arguments like the C path
 * (VIDK_ERR(EINVAL)); VIDK_ERR_NODEV without CUDA state; VIDK_ERR(ENOMEM); VIDK_ERR(EIO)
 * for a device error (logged). A batch whose blocks overlap (never made by
 * vidk_h264_batch_build) is computed on the host in list order, as the c backend does.
 * opts NULL = vidk_cuda_h264_default_opts(); compact 0 is treated as 1.
 */
int vidk_cuda_h264_batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic,
                                 const VidkH264CudaOpts *opts);

/** vidk_h264_frame_inverse on the device: opts->compact 0 runs the dense baseline,
 *  otherwise the frame is compacted on the host and runs as a batch. */
int vidk_cuda_h264_frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr,
                                 VidkPicture *pic, const VidkH264CudaOpts *opts);

/** vidk_h264_batch_forward on the device (returns the non-zero level count). */
int vidk_cuda_h264_batch_forward(VidkContext *ctx, const VidkPicture *src,
                                 const VidkPicture *pred, VidkH264CoefFrame *fr,
                                 VidkH264Batch *b, const VidkH264CudaOpts *opts);

/** Host emulation, for tests on machines without a GPU: the same validation, packing,
 *  chunking and kernel code (the kernels' phase functions, run lane by lane between the
 *  barriers) on the CPU, no CUDA call; ctx may be of any backend. Graphs are not
 *  emulated (graphs 1 runs as one chunk per class). Same results and errors as above. */
int vidk_cuda_h264_emu_batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic,
                                     const VidkH264CudaOpts *opts);
int vidk_cuda_h264_emu_frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr,
                                     VidkPicture *pic, const VidkH264CudaOpts *opts);
int vidk_cuda_h264_emu_batch_forward(VidkContext *ctx, const VidkPicture *src,
                                     const VidkPicture *pred, VidkH264CoefFrame *fr,
                                     VidkH264Batch *b, const VidkH264CudaOpts *opts);

/** Emulation only: treat [ptr, ptr + bytes) as memory registered with vidk_host_register
 *  in the emulated entry points (so that the direct-copy paths run without a GPU); bytes
 *  0 forgets the range starting at ptr, ptr NULL forgets every range. Process-wide, not
 *  thread-safe. Returns 0; VIDK_ERR(ENOSPC) beyond 64 ranges; VIDK_ERR(ENOENT) for an
 *  unknown range. */
int vidk_cuda_h264_emu_register(const void *ptr, size_t bytes);

/** Release the family's per-context device state (the cached graph); called by
 *  vidk_cuda_close. Safe on a context without that state. */
void vidk_cuda_h264_release(VidkContext *ctx);

#ifdef __cplusplus
}
#endif
#endif
