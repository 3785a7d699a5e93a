/* The qualifier of the scalar arithmetic cores (src/h264_core.h, src/hevc_core.h, ...):
 * one definition of each of the standards' operations, compiled as C11 (the reference
 * kernels, the CPU coding loop) and as CUDA host + device code (the kernels, their host
 * emulation). Every core function is force-inlined: a CUDA kernel that calls one on a
 * register array with constant indices compiles to the operations written out in place. */
#ifndef VIDK_CORE_H
#define VIDK_CORE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define VIDK_CORE static __host__ __device__ __forceinline__
#else
#define VIDK_CORE static inline
#endif

/* A constant table of the cores, written once (its initializer: the macro's last arguments,
 * commas and all) and defined twice: a host copy (_h) and, in CUDA builds, a device copy
 * (_d); a __host__ __device__ core function reads the copy of the side it runs on through
 * VIDK_CORE_TAB (a device function cannot read a host array). The declarations do not
 * depend on __CUDA_ARCH__, only the choice in the bodies does. */
#if defined(__CUDACC__)
#define VIDK_CORE_TABLE(type, name, dims, ...)                                                 \
    static const type name##_h dims = __VA_ARGS__;                                             \
    static __device__ const type name##_d dims = __VA_ARGS__;
#else
#define VIDK_CORE_TABLE(type, name, dims, ...) static const type name##_h dims = __VA_ARGS__;
#endif
#if defined(__CUDA_ARCH__)
#define VIDK_CORE_TAB(name) name##_d
#else
#define VIDK_CORE_TAB(name) name##_h
#endif

/* Arithmetic right shift (floor division by 2^n) of the two's-complement value of v:
 * the inverse transforms compute on uint32_t so that sums wrap without undefined
 * behaviour; every supported compiler implements signed >> as arithmetic. */
VIDK_CORE uint32_t vidk_sra(uint32_t v, int n) {
    return (uint32_t)((int32_t)v >> n);
}

VIDK_CORE int vidk_clip3(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* Index of the highest set bit of v != 0 (the bit helpers of every core, written once). */
VIDK_CORE int vidk_hibit32(uint32_t v) {
#if defined(__CUDA_ARCH__)
    return 31 - __clz((int)v);
#else
    return 31 - __builtin_clz(v);
#endif
}
VIDK_CORE int vidk_hibit64(uint64_t v) {
#if defined(__CUDA_ARCH__)
    return 63 - __clzll((long long)v);
#else
    return 63 - __builtin_clzll(v);
#endif
}
/* Index of the lowest set bit of v != 0. */
VIDK_CORE int vidk_lobit32(uint32_t v) {
#if defined(__CUDA_ARCH__)
    return __ffs((int)v) - 1;
#else
    return __builtin_ctz(v);
#endif
}

#endif
