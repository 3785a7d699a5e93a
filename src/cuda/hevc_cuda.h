/* C-linkage entry points of the CUDA backend of the HEVC transform family (src/cuda/hevc.cu;
 * design, exactness proof and predicted times in docs/HEVC_CUDA.md).
 *
 * The public batch API (vidk_hevc_batch_forward / vidk_hevc_batch_inverse on a cuda
 * context) calls these with opts NULL: the best settings. Benchmarks and tests call them
 * with explicit options (tensor cores on/off, 1..8 streams, chunking, dense or compacted
 * download, fused or host-side reconstruction, kernel-only runs); every combination gives
 * the same bits as the c backend. Stage times and bytes of the last call:
 * vidk_cuda_last_timing(). */
#ifndef VIDK_HEVC_CUDA_H
#define VIDK_HEVC_CUDA_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most chunks of one call (vidk_cuda_hevc_opts.chunks). */
#define VIDK_HEVC_CUDA_MAX_CHUNKS 64

/** VidkHevcCudaOpts.compact: how a forward call's levels come down, per size class. */
enum {
    VIDK_HEVC_CUDA_DENSE = 0,   /**< every TB's levels, in the first D2H phase (straight into
                                     a registered lev array); no host round trip */
    VIDK_HEVC_CUDA_COMPACT = 1, /**< only the non-zero TBs' levels (packed on the device),
                                     in a second D2H phase once the chunk's counter is on the
                                     host: one host round trip per chunk */
    VIDK_HEVC_CUDA_AUTO = 2     /**< per class: dense when the previous forward call of the
                                     context that had TBs of that class found more than
                                     VIDK_HEVC_CUDA_DENSE_ABOVE_PCT % of them non-zero,
                                     compacted otherwise (and on a context's first call) */
};
/** The AUTO rule's threshold: percentage of non-zero TBs above which a class is dense. */
#define VIDK_HEVC_CUDA_DENSE_ABOVE_PCT 70

/** VidkHevcCudaOpts.alloc4: how the 4x4 forward kernel places compacted levels. */
enum {
    VIDK_HEVC_CUDA_ALLOC4_WARP = 0, /**< one atomicAdd per warp and tile (64 TBs): the
                                         faster on the H200 (19.7 vs 21.2 us per DCI 4K
                                         frame, run 2 of 2026-11-21) */
    VIDK_HEVC_CUDA_ALLOC4_BLOCK = 1 /**< one atomicAdd per CUDA block and round (512 TBs),
                                         after a block-level scan of the warps' counts */
};

/** Bytes a call moved, by route, and the forward's download modes (VidkHevcCudaOpts.stats). */
typedef struct VidkHevcCudaStats {
    size_t direct_h2d, direct_d2h; /**< straight between registered caller arrays and the
                                        device */
    size_t staged_h2d, staged_d2h; /**< through the library's pinned slots */
    /** Forward: bit s set when class s (4x4 << s) had TBs and its levels came down dense /
     *  compacted (VidkHevcCudaOpts.compact); 0 for the inverse. */
    unsigned dense_classes, compact_classes;
    /** Forward: second-phase downloads of compacted levels (one host round trip each). */
    int round_trips;
} VidkHevcCudaStats;

/** A host range (VidkHevcCudaOpts.emu_pinned). */
typedef struct VidkHevcCudaRange {
    const void *ptr;
    size_t bytes;
} VidkHevcCudaRange;

/**
 * Switches of the CUDA HEVC paths. Fill with vidk_cuda_hevc_default_opts(), then change
 * fields. A field a direction does not use is ignored (listed per field).
 */
typedef struct VidkHevcCudaOpts {
    /** 1 (default): 16x16 and 32x32 TBs on the tensor cores (integer MMA with operands
     *  split into bytes, exact); 0: every size on the CUDA cores (partial butterflies). */
    int tensor;
    /** Streams the chunks are spread over, round robin: 1..the context's cuda_streams;
     *  0 (default) = the context's count. */
    int streams;
    /** Chunks the batch is cut into (each chunk: a share of every size list, one kernel
     *  launch for all sizes); 0 (default) = one per stream. 1..VIDK_HEVC_CUDA_MAX_CHUNKS;
     *  more are used when a chunk would exceed 2^27 values. */
    int chunks;
    /** Forward download of the levels, per size class (the per-TB counts always come):
     *  VIDK_HEVC_CUDA_AUTO (default): dense for classes whose non-zero fraction in the
     *  context's previous forward call was above VIDK_HEVC_CUDA_DENSE_ABOVE_PCT, else
     *  compacted; VIDK_HEVC_CUDA_COMPACT (1): only the levels of TBs with a non-zero level
     *  cross PCIe back (compacted on the device; a host round trip per chunk);
     *  VIDK_HEVC_CUDA_DENSE (0): every TB's levels (one phase). Results never depend on it;
     *  stats reports the modes used. A kernel_only run with AUTO repeats the previous full
     *  call's modes. */
    int compact;
    /** Inverse with a picture. 1 (default): the prediction samples of each non-zero TB go
     *  up and reconstructed samples come down (dequantisation, inverse transform and
     *  Clip1(pred + res) fused in the kernel); 0: int16 residuals come down and are added
     *  on the host. Batches whose non-zero TBs overlap always use 0 (serial order). */
    int fused;
    /** 1 (default): the host staging copy of chunk k+1 overlaps the device work of chunk k
     *  (lowest wall time); 0: every chunk is staged before the first device operation, so
     *  the stage timing shows device time only (H2D + kernel + D2H, the paper's
     *  "overall"). */
    int overlap_host;
    /** 1: run only the kernels, on the device data left by the previous full call of the
     *  same direction on this context with the same batch layout (counts, chunks, bit
     *  depth, options); nothing crosses PCIe and the batch's outputs are not written.
     *  For benchmarks (kernel-only time = vidk_cuda_last_timing().kernel_ms). Returns 0,
     *  or VIDK_ERR(EINVAL) when there is no matching previous call. 0 (default). */
    int kernel_only;
    /** Host threads for the staging copies, the unpacking and the zero-TB scan: 0
     *  (default) = the context's n_threads setting, else min(CPUs, 8); 1 = serial in the
     *  calling thread (the behaviour before the parallel staging); 2..64. Results never
     *  depend on it. The pool of a cuda context is made on first use and kept. */
    int host_threads;
    /** 1 (default): batch arrays the caller registered with vidk_host_register() on this
     *  context are copied straight between them and the device (cudaMemcpyAsync, no host
     *  staging), chunk by chunk and array by array where the chunk's range lies inside one
     *  registered range - forward: res up, nnz down (and lev down with compact 0);
     *  inverse without a picture: when a list's whole lev array is registered, its levels
     *  go up as they are (all-zero TBs included: no host scan) and res comes down straight
     *  where registered. 0: always through the library's pinned slots (as unregistered
     *  memory). Results never depend on it. */
    int direct;
    /** The 4x4 kernels' tiles per warp (forward: 64 TBs, inverse: 32): the grid is cut so
     *  that each warp walks about this many tiles (grid stride). 0 (default) = 1; 1..64.
     *  For tuning; results never depend on it. */
    int tiles4;
    /** 4x4 forward, compacted: VIDK_HEVC_CUDA_ALLOC4_WARP (0, default) or
     *  VIDK_HEVC_CUDA_ALLOC4_BLOCK (one allocation per CUDA block). For A/B timing;
     *  results never depend on it. */
    int alloc4;
    /** Emulation only (vidk_cuda_hevc_emu_*): ranges the emulation treats as registered
     *  (a context without CUDA state has no registered memory), so the direct-copy paths
     *  run on any machine. NULL / 0 (default); ignored on the device. */
    const VidkHevcCudaRange *emu_pinned;
    int emu_pinned_count;
    /** If not NULL, receives the bytes the call moved, by route (zeroed first; partial
     *  after an error). NULL (default). */
    VidkHevcCudaStats *stats;
    int reserved[4]; /**< zero */
} VidkHevcCudaOpts;

/** The settings the public API uses. */
void vidk_cuda_hevc_default_opts(VidkHevcCudaOpts *o);

/**
 * vidk_hevc_batch_forward on the device: same validation and results as the c backend
 * (levels, nnz, nz_count, nz_index, nz_lev; returns the number of non-zero TBs).
 * VIDK_ERR(EINVAL) for a bad batch or options (nothing is written then); VIDK_ERR_NODEV
 * without CUDA state; VIDK_ERR(ENOMEM); VIDK_ERR(EIO) for a device error (logged).
 * opts NULL = vidk_cuda_hevc_default_opts().
 */
int vidk_cuda_hevc_forward(VidkContext *ctx, VidkHevcBatch *b, const VidkHevcCudaOpts *opts);

/**
 * vidk_hevc_batch_inverse on the device (pic NULL: residuals into each list's res).
 * Errors as vidk_cuda_hevc_forward(); pic is unchanged on every error found before the
 * device work starts (all argument errors).
 */
int vidk_cuda_hevc_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic,
                           const VidkHevcCudaOpts *opts);

/**
 * Host emulation, for tests on machines without a GPU: the same validation, layout,
 * staging, chunking and unpacking, and the kernels' own phase functions run lane by lane
 * on the CPU (tensor-core MMAs by an emulation of the PTX fragment layouts); no CUDA call.
 * ctx may be of any backend. kernel_only is refused (VIDK_ERR(EINVAL)). The AUTO download
 * mode uses a non-zero history the emulation keeps per context (a small process-wide table
 * keyed by the context: contexts without CUDA state have no slots).
 */
int vidk_cuda_hevc_emu_forward(VidkContext *ctx, VidkHevcBatch *b,
                               const VidkHevcCudaOpts *opts);
int vidk_cuda_hevc_emu_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic,
                               const VidkHevcCudaOpts *opts);

/** One point of the stream sweep (the paper's Fig. 3). */
typedef struct VidkHevcCudaSweep {
    int streams;     /**< stream count of this point */
    double wall_ms;  /**< median host wall time of one forward call */
    double total_ms; /**< median device span (vidk_cuda_last_timing().total_ms) */
    double h2d_ms, kernel_ms, d2h_ms; /**< medians of the stage spans */
    size_t h2d_bytes, d2h_bytes;      /**< bytes of the last call */
} VidkHevcCudaSweep;

/**
 * Forward transform of batch b with 1..max_streams streams (chunks = streams), `reps`
 * timed calls each after one warm-up; out[i] is the point with i + 1 streams.
 * max_streams 1..8 and at most the context's stream count. base NULL = defaults.
 * Returns 0 or an error of vidk_cuda_hevc_forward (VIDK_ERR(EINVAL) for bad counts).
 */
int vidk_cuda_hevc_sweep_streams(VidkContext *ctx, VidkHevcBatch *b,
                                 const VidkHevcCudaOpts *base, int max_streams, int reps,
                                 VidkHevcCudaSweep *out);

/** Frees what the family keeps in the context's host slots (the host staging pool);
 *  called by vidk_cuda_close() before the slots are freed. */
void vidk_cuda_hevc_release(VidkContext *ctx);

/**
 * Self-check of the backend's compile-time tables against the standard's tables of
 * src/hevc.c (DCT and DST matrices, tensor-core fragment tables). Returns 0 or
 * VIDK_ERR(EIO) (first mismatch logged to ctx, which may be NULL).
 */
int vidk_cuda_hevc_self_check(const VidkContext *ctx);

#ifdef __cplusplus
}
#endif
#endif
