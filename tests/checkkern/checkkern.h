/* checkkern: checkasm-style tester and micro-benchmark for every kernel x backend.
 *
 * A family file (tests/checkkern/check_<family>.c) defines `void ck_family_<family>(void)`
 * and registers it with one line `CK_FAMILY(<family>)` in families.def. Inside:
 *
 *   for (int l = 0; l < ck_level_count(); l++) {          // c, sse2, ..., avx512
 *       const CkLevel *lv = ck_level(l);
 *       VidkSadDSP dsp; vidk_sad_dsp_init(&dsp, lv->flags);
 *       if (!ck_begin("sad_16x16", lv->name, (const void *)dsp.sad[bs], prev)) continue;
 *       ... compare with the C version on random / worst-case / real inputs,
 *           ck_fail("...") on a mismatch (prints the first few, with the seed) ...
 *       CK_BENCH(dsp.sad[bs](a, 64, b, 64));               // only with --bench
 *       ck_end();
 *   }
 *
 * ck_begin returns 0 when the --function filter excludes the name, or when `fn` is the
 * same pointer as `prev_fn` (the level did not change the function: nothing new to
 * test); pass prev_fn NULL to always test. Backend-level checks (batch APIs on threads
 * and cuda against the c backend) use ck_open() and the backend name as the level.
 *
 * Randomness comes from ck_rand(), seeded by --seed (or the clock) and printed, so any
 * failure replays with `checkkern --seed N --function NAME`.
 */
#ifndef VIDK_CHECKKERN_H
#define VIDK_CHECKKERN_H

#include <stdint.h>

#include "vidkern/vidkern.h"

#if defined(__GNUC__)
#define CK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CK_PRINTF(a, b)
#endif

typedef struct CkLevel {
    const char *name; /* "c", "sse2", "ssse3", "sse41", "avx2", "avx512" */
    unsigned flags;   /* VidkCpuFlags for the dsp_init functions */
} CkLevel;

/* ISA levels this CPU supports (and --cpumask allows), "c" first, rising order. */
int ck_level_count(void);
const CkLevel *ck_level(int i);

/* Random numbers from the run's seed. */
uint32_t ck_rand(void);
/* Uniform in [lo, hi]. */
int ck_rand_range(int lo, int hi);

/* Directory of the real clips: --video DIR, else $VIDK_VIDEO_DIR, else the build's
 * VIDK_SHARED_VIDEO (../shared/video); NULL if absent. */
const char *ck_video_dir(void);

/* Name of the i-th Y4M clip (sorted) in ck_video_dir(), NULL past the end or without one. */
const char *ck_video_clip(int i);

/* Read frame `frame` (0-based) of an 8-bit 4:2:0 Y4M clip: `file` is a path, or a name
 * inside ck_video_dir(). Allocates *pic with a `pad`-sample margin filled by edge
 * replication; free with vidk_picture_free(). Returns 0, or a negative error (pic zeroed):
 * VIDK_ERR(ENOENT) no such file, VIDK_ERR(ERANGE) fewer frames, VIDK_ERR(EINVAL) not
 * 8-bit 4:2:0 Y4M. */
int ck_load_y4m(const char *file, int frame, int pad, VidkPicture *pic);

/* Open a context for backend b (threads: n_threads, 0 = all); NULL when the backend is
 * unavailable here or excluded by --backend (the caller skips it, reporting nothing).
 * The c backend is never excluded: it is the reference. Close with vidk_close(). */
VidkContext *ck_open(VidkBackend b, int n_threads);

/* 0 when --backend excludes backend b (c never is), so a family can skip its setup. */
int ck_backend_enabled(VidkBackend b);

/* One check of one function at one level (see above). */
int ck_begin(const char *func, const char *level, const void *fn, const void *prev_fn);
void ck_fail(const char *fmt, ...) CK_PRINTF(1, 2);
void ck_end(void);

/* Is --bench on? Benchmarks time calls only between ck_begin and ck_end. */
int ck_bench_enabled(void);
uint64_t ck_now_ns(void);
/* Record a sample series: `samples` durations (ns) of `reps` calls each. Prints the
 * median ns per call (outliers dropped), cycles where the TSC is usable, and the
 * speed-up against the "c" level of the same function name. */
void ck_bench_report(const uint64_t *samples, int n_samples, int reps);

#define CK_BENCH_SAMPLES 64
#define CK_BENCH(call)                                                                         \
    do {                                                                                       \
        if (ck_bench_enabled()) {                                                              \
            uint64_t ck_s_[CK_BENCH_SAMPLES];                                                  \
            int ck_reps_ = 1;                                                                  \
            for (;;) { /* calibrate: one sample lasts >= ~20 us */                             \
                uint64_t t0_ = ck_now_ns();                                                    \
                for (int r_ = 0; r_ < ck_reps_; r_++) {                                        \
                    call;                                                                      \
                }                                                                              \
                if (ck_now_ns() - t0_ > 20000 || ck_reps_ >= (1 << 20)) break;                 \
                ck_reps_ *= 2;                                                                 \
            }                                                                                  \
            for (int s_ = 0; s_ < CK_BENCH_SAMPLES; s_++) {                                    \
                uint64_t t0_ = ck_now_ns();                                                    \
                for (int r_ = 0; r_ < ck_reps_; r_++) {                                        \
                    call;                                                                      \
                }                                                                              \
                ck_s_[s_] = ck_now_ns() - t0_;                                                 \
            }                                                                                  \
            ck_bench_report(ck_s_, CK_BENCH_SAMPLES, ck_reps_);                                \
        }                                                                                      \
    } while (0)

/* Family entry points (X-macro over families.def). */
#define CK_FAMILY(name) void ck_family_##name(void);
#include "families.def"
#undef CK_FAMILY

#endif
