/* Run-time x86 feature detection: cpuid for the instruction sets and xgetbv for the
 * OS's support of the wider register state (a CPU with AVX2 under an OS that does not
 * save YMM registers must not use it). */
#include <pthread.h>

#include "internal.h"

#if VIDK_ARCH_X86_64 && defined(__GNUC__)
#include <cpuid.h>

static uint64_t xgetbv0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

static unsigned detect(void) {
    unsigned a, b, c, d, flags = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (d & (1u << 26)) flags |= VIDK_CPU_SSE2;
    if (c & (1u << 9)) flags |= VIDK_CPU_SSSE3;
    if (c & (1u << 19)) flags |= VIDK_CPU_SSE41;
    const int osxsave = !!(c & (1u << 27)), avx = !!(c & (1u << 28));
    if (!osxsave || !avx) return flags;
    const uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return flags; /* XMM + YMM state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return flags;
    if (b & (1u << 5)) flags |= VIDK_CPU_AVX2;
    /* F(16) DQ(17) BW(30) VL(31), and opmask + ZMM state in XCR0 (bits 5..7). */
    const unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
    if ((flags & VIDK_CPU_AVX2) && (b & avx512) == avx512 && (xcr0 & 0xe0) == 0xe0)
        flags |= VIDK_CPU_AVX512;
    return flags;
}
#else
static unsigned detect(void) {
    return 0;
}
#endif

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static unsigned cpu_flags;

static void cpu_init(void) {
    cpu_flags = detect();
}

unsigned vidk_cpu_detect(void) {
    pthread_once(&cpu_once, cpu_init);
    return cpu_flags;
}

unsigned vidk_cpu_flags(void) {
    return vidk_cpu_detect();
}
