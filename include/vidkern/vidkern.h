/**
 * @file vidkern.h
 * @brief vidkern public API: video-coding kernels on CPUs and NVIDIA GPUs.
 *
 * vidkern computes motion estimation, H.264 and HEVC transforms and their inverses,
 * bit-exact with the standards, on several backends (portable C, x86 SIMD, all CPU
 * cores, CUDA) that all give identical output.
 *
 * Usage:
 * @code
 *   VidkSettings s;
 *   vidk_default_settings(&s);
 *   s.backend = VIDK_BACKEND_AUTO;          // cuda when a GPU is usable, else threads
 *   VidkContext *ctx = NULL;
 *   int err = vidk_open(&ctx, &s);
 *   if (err < 0) { fprintf(stderr, "%s\n", vidk_strerror(err)); return 1; }
 *   // ... vidk_sad_frame(ctx, &cur, &ref, 0, 0, VIDK_BLOCK_16x16, sads) ...
 *   vidk_close(&ctx);                       // ctx is NULL afterwards
 * @endcode
 *
 * Conventions: functions return 0 (or a non-negative count) on success and a negative
 * errno value, VIDK_ERR(E...), on failure.
 *
 * Argument order, the same in every header: the context comes first in every call that
 * takes one; the object a call creates or initialises comes next (first where there is
 * no context): vidk_open(&ctx, &s), vidk_enc_open(ctx, &enc, &p, w, h),
 * vidk_h264_batch_build(ctx, &batch, &fr), vidk_picture_alloc(&pic, ...),
 * vidk_default_settings(&s); the object a call acts on likewise comes first
 * (vidk_enc_send(enc, &pic)); then the inputs; results computed into the caller's
 * buffers come last (vidk_me_search(ctx, &cur, &ref, &p, &field),
 * vidk_enc_receive(enc, &recon, &maps, &info)). No public header uses stdio.
 *
 * The library never prints and never exits; messages go to the logger in VidkSettings.
 * Strides are in bytes (ptrdiff_t).
 */
#ifndef VIDKERN_VIDKERN_H
#define VIDKERN_VIDKERN_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "vidkern/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(VIDK_BUILDING_LIB) && defined(__GNUC__)
#define VIDK_API __attribute__((visibility("default")))
#else
/** Marks a symbol exported from the shared library. */
#define VIDK_API
#endif

/** Turns a positive errno value into a vidkern error code (negative). */
#define VIDK_ERR(e) (-(e))

/** Extra error code: no usable device / backend (beyond the errno range). */
#define VIDK_ERR_NODEV VIDK_ERR(ENODEV)

/**
 * @brief A human-readable description of a vidkern error code.
 * @param err a value returned by a vidkern function (negative errno), or 0.
 * @return a static string; never NULL.
 */
VIDK_API const char *vidk_strerror(int err);

/** @return the library version string, e.g. "0.1.0". */
VIDK_API const char *vidk_version(void);

/** @return (MAJOR << 16) | (MINOR << 8) | PATCH of the library that is linked. */
VIDK_API unsigned vidk_version_number(void);

/* ------------------------------------------------------------------------- */
/** @name Logging */
/** Severity of a log message. */
typedef enum VidkLogLevel {
    VIDK_LOG_ERROR = 0,   /**< an operation failed */
    VIDK_LOG_WARNING = 1, /**< something was degraded (e.g. a fallback backend) */
    VIDK_LOG_INFO = 2,    /**< one-time information (device chosen, ...) */
    VIDK_LOG_DEBUG = 3,   /**< details for developers */
} VidkLogLevel;

/**
 * @brief Where the library's messages go.
 *
 * The callback receives a printf-style format and its arguments. With callback NULL
 * nothing is logged (the default: a library does not print on its own).
 */
typedef struct VidkLogger {
    void *cookie; /**< passed back unchanged to the callback */
    /** Called once per message; may be called from worker threads. */
    void (*callback)(void *cookie, VidkLogLevel level, const char *fmt, va_list ap);
} VidkLogger;

/* ------------------------------------------------------------------------- */
/** @name Backends and CPU features */

/** Computation backends. Every backend gives bit-identical results. */
typedef enum VidkBackend {
    VIDK_BACKEND_AUTO = 0,    /**< cuda if a device is usable, else threads */
    VIDK_BACKEND_C = 1,       /**< portable C reference (ground truth), one thread */
    VIDK_BACKEND_SIMD = 2,    /**< x86 SIMD by runtime CPU flags, one thread (the C code
                                   where the build or the CPU has no SIMD) */
    VIDK_BACKEND_THREADS = 3, /**< the SIMD path over all cores */
    VIDK_BACKEND_CUDA = 4,    /**< NVIDIA GPU */
    VIDK_BACKEND_COUNT
} VidkBackend;

/**
 * @brief Is a backend usable on this machine and build?
 * @param b a backend (AUTO is always available).
 * @return 1 if usable, 0 if not (not compiled in, or no CUDA device).
 */
VIDK_API int vidk_backend_available(VidkBackend b);

/** @return "auto", "c", "simd", "threads" or "cuda"; "?" for other values. */
VIDK_API const char *vidk_backend_name(VidkBackend b);

/**
 * @brief Parse a backend name as printed by vidk_backend_name().
 * @return the backend, or a negative error code (VIDK_ERR(EINVAL)) for unknown names.
 */
VIDK_API int vidk_backend_from_name(const char *name);

/** x86 CPU feature flags, as detected at run time (cpuid + xgetbv). */
enum VidkCpuFlags {
    VIDK_CPU_SSE2 = 1 << 0,   /**< SSE2 */
    VIDK_CPU_SSSE3 = 1 << 1,  /**< SSSE3 */
    VIDK_CPU_SSE41 = 1 << 2,  /**< SSE4.1 */
    VIDK_CPU_AVX2 = 1 << 3,   /**< AVX2 (+ OS support of YMM state) */
    VIDK_CPU_AVX512 = 1 << 4, /**< AVX-512 F+BW+VL+DQ (+ OS support of ZMM state) */
};

/** @return the VidkCpuFlags of this CPU, detected once, not masked. */
VIDK_API unsigned vidk_cpu_flags(void);

/** @return the number of online CPU cores (>= 1): the threads backend's default. */
VIDK_API int vidk_cpu_count_online(void);

/* ------------------------------------------------------------------------- */
/** @name Context */

/** Settings for vidk_open(). Always fill with vidk_default_settings() first. */
typedef struct VidkSettings {
    VidkBackend backend;    /**< backend to use; default VIDK_BACKEND_AUTO */
    int n_threads;          /**< worker threads for the threads backend; 0 = one per core */
    unsigned cpu_mask;      /**< ANDed with the detected VidkCpuFlags; default ~0u (all) */
    int cuda_device;        /**< CUDA device ordinal; default 0 */
    int cuda_streams;       /**< CUDA streams for pipelined batch work, 1..16; default 4 */
    VidkLogLevel log_level; /**< messages above this level are dropped; default WARNING */
    VidkLogger logger;      /**< message sink; default: none */
    uint8_t reserved[64];   /**< zero; room for future settings without an ABI break */
} VidkSettings;

/** Opaque library context: dispatch tables, thread pool, device state. */
typedef struct VidkContext VidkContext;

/**
 * @brief Fill settings with defaults (AUTO backend, all cores, all CPU features).
 * @param s settings to fill; must not be NULL.
 */
VIDK_API void vidk_default_settings(VidkSettings *s);

/**
 * @brief Create a context.
 *
 * With backend AUTO, cuda is chosen when a device is usable, else threads. Naming a
 * backend that is not available fails with VIDK_ERR_NODEV (nothing is silently
 * substituted).
 *
 * @param[out] out receives the context; set to NULL on failure.
 * @param s settings from vidk_default_settings(), possibly changed.
 * @return 0 on success; VIDK_ERR(EINVAL) for bad settings; VIDK_ERR_NODEV when the
 *         requested backend is unavailable; VIDK_ERR(ENOMEM) when out of memory.
 */
VIDK_API int vidk_open(VidkContext **out, const VidkSettings *s);

/**
 * @brief Destroy a context and release everything it owns.
 * @param ctx pointer to the context pointer; *ctx is set to NULL. NULL or *ctx NULL is a
 *        no-op.
 */
VIDK_API void vidk_close(VidkContext **ctx);

/** @return the backend the context actually uses (never AUTO). */
VIDK_API VidkBackend vidk_get_backend(const VidkContext *ctx);

/** @return the CPU flags in use by this context (detected AND cpu_mask). */
VIDK_API unsigned vidk_get_cpu_flags(const VidkContext *ctx);

/** @return worker threads used by the context (1 for c, simd and cuda). */
VIDK_API int vidk_get_threads(const VidkContext *ctx);

/** Description of a CUDA device, filled by vidk_cuda_device_info(). */
typedef struct VidkDeviceInfo {
    char name[128];      /**< device name, e.g. "NVIDIA H100 80GB HBM3" */
    int ordinal;         /**< device number */
    int major, minor;    /**< compute capability */
    int multiprocessors; /**< SM count */
    size_t global_mem;   /**< bytes of device memory */
    size_t l2_bytes;     /**< bytes of L2 cache */
    int clock_khz;       /**< SM clock (kHz) */
    int driver_version;  /**< CUDA driver version, e.g. 13000 */
    int runtime_version; /**< CUDA runtime version the library was built with */
} VidkDeviceInfo;

/**
 * @brief Number of usable CUDA devices.
 * @return the count (0 when there is no device, no driver, or no CUDA in this build).
 */
VIDK_API int vidk_cuda_device_count(void);

/**
 * @brief Describe CUDA device `ordinal`.
 * @return 0, VIDK_ERR_NODEV when absent, VIDK_ERR(EINVAL) for NULL info.
 */
VIDK_API int vidk_cuda_device_info(int ordinal, VidkDeviceInfo *info);

/* ------------------------------------------------------------------------- */
/** @name Pictures */

/** Chroma format of a picture. */
typedef enum VidkChroma {
    VIDK_CHROMA_400 = 0, /**< luma only (monochrome) */
    VIDK_CHROMA_420 = 1, /**< chroma halved in both directions */
    VIDK_CHROMA_422 = 2, /**< chroma halved horizontally */
    VIDK_CHROMA_444 = 3, /**< full-resolution chroma */
} VidkChroma;

/**
 * @brief A planar picture.
 *
 * Samples are uint8_t when bitdepth is 8 and uint16_t (native endian, low bits) for
 * 9..16. Planes with a padding margin have `pad` samples (luma; scaled for chroma)
 * readable around the visible area: data[p] points at the first visible sample.
 */
typedef struct VidkPicture {
    int w, h;            /**< luma size in samples (visible) */
    VidkChroma chroma;   /**< chroma format */
    int bitdepth;        /**< 8..16 */
    int pad;             /**< luma padding margin in samples (>= 0) */
    void *data[3];       /**< first visible sample of Y, U, V (U/V NULL for 4:0:0) */
    ptrdiff_t stride[3]; /**< bytes between rows of each plane */
    void *alloc;         /**< owning allocation (NULL when the caller owns the memory) */
} VidkPicture;

/** Upper bound for a picture side, in samples (fits every standard level). */
#define VIDK_MAX_PICTURE_SIDE 16384

/**
 * @brief Allocate a picture (64-byte aligned rows, contents zeroed; the allocation is
 * page-aligned and a whole number of pages, so that vidk_picture_register() pins no page
 * that holds other memory).
 * @param p picture to fill; its previous contents are ignored (not freed).
 * @param w, h luma size, 1..VIDK_MAX_PICTURE_SIDE.
 * @param chroma chroma format.
 * @param bitdepth 8..16.
 * @param pad padding margin in luma samples, 0..1024.
 * @return 0; VIDK_ERR(EINVAL) for bad arguments; VIDK_ERR(ENOMEM).
 */
VIDK_API int vidk_picture_alloc(VidkPicture *p, int w, int h, VidkChroma chroma, int bitdepth,
                                int pad);

/** @brief Free a picture from vidk_picture_alloc() and zero it. NULL is a no-op. */
VIDK_API void vidk_picture_free(VidkPicture *p);

/**
 * @brief Width and height of plane `plane` (0 luma, 1-2 chroma) of picture p.
 * @return 0 or VIDK_ERR(EINVAL) (no such plane).
 */
VIDK_API int vidk_picture_plane_size(const VidkPicture *p, int plane, int *w, int *h);

/**
 * @brief Fill each plane's padding margin by replicating the nearest edge sample
 * (the standards' reference padding). A picture with pad 0 is left unchanged.
 */
VIDK_API void vidk_picture_pad_edges(VidkPicture *p);

/* ------------------------------------------------------------------------- */
/** @name Page-locked host memory (fast transfers on the cuda backend) */

/** Ranges one context keeps registered at a time. */
#define VIDK_MAX_HOST_REGISTERED 64

/**
 * @brief Page-lock ("pin") caller memory for the context's GPU.
 *
 * On a cuda context the device calls then move data between this range and the GPU
 * directly and asynchronously (DMA at the PCIe rate) instead of staging it through the
 * library's own page-locked buffers: register the pictures, coefficient frames and batch
 * arrays that are reused frame after frame. Registering costs about a millisecond per
 * hundred megabytes; do it once, not per frame. On the other backends (and builds without
 * CUDA) this does nothing and returns 0, so calling code need not care about the backend.
 *
 * The memory must stay allocated until vidk_host_unregister() (or vidk_close(), which
 * unregisters what is left). Results never depend on registration.
 *
 * @param ptr, bytes the range (no alignment required; whole pages are pinned).
 * @return 0; VIDK_ERR(EINVAL) for NULL or 0 bytes; VIDK_ERR(EEXIST) when it overlaps a
 *         range registered on this context; VIDK_ERR(ENOSPC) beyond
 *         VIDK_MAX_HOST_REGISTERED ranges; VIDK_ERR(ENOMEM) or VIDK_ERR(EIO) when the
 *         driver refuses (logged).
 */
VIDK_API int vidk_host_register(VidkContext *ctx, void *ptr, size_t bytes);

/** A host memory range (vidk_host_register_set()). */
typedef struct VidkHostRange {
    void *ptr;    /**< first byte */
    size_t bytes; /**< length */
} VidkHostRange;

/**
 * @brief Register several ranges at once, e.g. every array of a batch.
 *
 * The driver pins whole pages and a page cannot be pinned twice, so arrays that share a
 * page cannot be registered one by one. This rounds each range out to whole pages, sorts
 * them, merges those that overlap or touch, and registers each merged range with
 * vidk_host_register(). Unregister with vidk_host_unregister() on each out[i].ptr.
 *
 * @param in, n the ranges (entries with NULL ptr or 0 bytes are skipped); n >= 0.
 * @param out receives the merged ranges that were registered (room for n entries; may
 *        not alias in).
 * @param n_out receives their count.
 * @return 0 (also on non-cuda contexts, where nothing is pinned but out still lists the
 *         merged ranges); the first error of vidk_host_register() (the ranges registered
 *         before it stay registered and are listed in out); VIDK_ERR(EINVAL) for NULL
 *         arguments or n < 0.
 */
VIDK_API int vidk_host_register_set(VidkContext *ctx, const VidkHostRange *in, int n,
                                    VidkHostRange *out, int *n_out);

/**
 * @brief Unpin a range registered with vidk_host_register() (waits for the context's
 * device work first).
 * @param ptr the start passed to vidk_host_register().
 * @return 0 (also on non-cuda contexts); VIDK_ERR(ENOENT) for a range not registered on
 *         this cuda context; VIDK_ERR(EIO) for a driver error (logged).
 */
VIDK_API int vidk_host_unregister(VidkContext *ctx, void *ptr);

/**
 * @brief vidk_host_register() on the whole allocation of a picture from
 * vidk_picture_alloc() (every plane with its padding).
 * @return as vidk_host_register(); VIDK_ERR(EINVAL) for a picture that does not own its
 *         memory (alloc NULL: register the caller's buffer instead).
 */
VIDK_API int vidk_picture_register(VidkContext *ctx, VidkPicture *p);

/** @brief vidk_host_unregister() for a picture registered with vidk_picture_register(). */
VIDK_API int vidk_picture_unregister(VidkContext *ctx, VidkPicture *p);

/* ------------------------------------------------------------------------- */
/** @name Block sizes */

/** Block sizes of the SAD and motion-estimation families (width x height). */
typedef enum VidkBlockSize {
    VIDK_BLOCK_4x4 = 0,
    VIDK_BLOCK_8x4,
    VIDK_BLOCK_4x8,
    VIDK_BLOCK_8x8,
    VIDK_BLOCK_16x8,
    VIDK_BLOCK_8x16,
    VIDK_BLOCK_16x16,
    VIDK_BLOCK_32x32,
    VIDK_BLOCK_64x64,
    VIDK_BLOCK_COUNT
} VidkBlockSize;

/** @return the width of a block size in samples (0 for invalid values). */
VIDK_API int vidk_block_width(VidkBlockSize bs);
/** @return the height of a block size in samples (0 for invalid values). */
VIDK_API int vidk_block_height(VidkBlockSize bs);
/** @return "16x16" etc., or "?" */
VIDK_API const char *vidk_block_name(VidkBlockSize bs);

#ifdef __cplusplus
}
#endif

/* Kernel families, each in its own header. */
#include "vidkern/sad.h"
#include "vidkern/me.h"
#include "vidkern/h264.h"
#include "vidkern/hevc.h"
#include "vidkern/encode.h"

#endif /* VIDKERN_VIDKERN_H */
