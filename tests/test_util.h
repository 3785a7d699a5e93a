/* Minimal assertion helpers for the test programs. */
#ifndef VIDK_TEST_UTIL_H
#define VIDK_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int test_failures;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);           \
            if (++test_failures > 20) exit(1);                                                 \
        }                                                                                      \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                       \
    do {                                                                                       \
        unsigned long long a_ = (a), b_ = (b);                                                 \
        if (a_ != b_) {                                                                        \
            fprintf(stderr, "%s:%d: %s == %llu, expected %llu\n", __FILE__, __LINE__, #a, a_,  \
                    b_);                                                                       \
            if (++test_failures > 20) exit(1);                                                 \
        }                                                                                      \
    } while (0)

#define TCLIP(v, lo, hi) ((v) < (lo) ? (lo) : (v) > (hi) ? (hi) : (v))

/* xorshift32; the seed comes from VIDK_TEST_SEED or the clock, and is printed. */
static inline uint32_t test_rand(uint32_t *s) {
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static inline uint32_t test_seed(void) {
    const char *e = getenv("VIDK_TEST_SEED");
    uint32_t s = e ? (uint32_t)strtoul(e, NULL, 0) : (uint32_t)time(NULL);
    if (!s) s = 1;
    fprintf(stderr, "seed: %u (set VIDK_TEST_SEED to replay)\n", s);
    return s;
}

/* A part of the test that could not run (real clips missing). With VIDK_REQUIRE_VIDEO set
 * (CI, where the clips exist) this is a failure; otherwise test_finish() returns 77 (ctest
 * SKIP) after the other parts ran, so a missing clip never reads "passed". */
static int test_skipped;

static inline void test_video_missing(const char *what) {
    const char *req = getenv("VIDK_REQUIRE_VIDEO");
    if (req && *req && *req != '0') {
        fprintf(stderr, "FAIL: %s, and VIDK_REQUIRE_VIDEO is set\n", what);
        test_failures++;
    } else {
        fprintf(stderr, "SKIP: %s (the test will report SKIP, exit 77)\n", what);
        test_skipped++;
    }
}

/* No CUDA device: 77 (ctest SKIP), or a failure when VIDK_REQUIRE_GPU is set. */
static inline int test_no_gpu(const char *name) {
    const char *req = getenv("VIDK_REQUIRE_GPU");
    if (req && *req && *req != '0') {
        fprintf(stderr, "%s: no CUDA device, but VIDK_REQUIRE_GPU is set\n", name);
        return 1;
    }
    fprintf(stderr, "%s: no CUDA device, skipped\n", name);
    return 77;
}

static inline int test_finish(const char *name) {
    if (test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
        return 1;
    }
    if (test_skipped) {
        fprintf(stderr, "%s: the checks that ran passed; %d part(s) skipped: exit 77\n", name,
                test_skipped);
        return 77;
    }
    fprintf(stderr, "%s: all checks passed\n", name);
    return 0;
}

#endif
