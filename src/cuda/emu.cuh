// The host emulation harness shared by the CUDA families. Host-only.
//
// Every device entry point of the h264 and hevc families also runs emulated (their *_emu_*
// entry points) for tests on machines without a GPU, in three parts:
// - the executor (exec.cu): the same calls, streams and events, with memcpy for copies and
//   no CUDA call; its slot buffers are poisoned (emu_poison) when (re)allocated;
// - the family's phase runner (h264_emu.cuh, hevc_emu.cuh): the kernels' phase functions,
//   every lane of a warp through phase k before any lane enters phase k + 1 (what
//   __syncwarp, __syncthreads and the warp collectives guarantee), warps and CUDA blocks
//   one after the other; shared memory and per-lane state are poisoned before each block;
// - the ordering check (debug_order.cuh), the one thing the emulation cannot show by
//   running: whether the copies and kernels it ran in queue order are ordered on the
//   device.
// Poisoning and the ordering check are what VIDK_CUDA_DEBUG (cuda_common.cuh, docs/CUDA.md)
// switches: with 0 neither runs (results of correct code are the same).
//
// src/cuda/me_emu.cuh (the motion-search SIMT emulator, a developer tool built apart with
// g++) does not use this header: it emulates CUDA built-ins for whole kernels.
#ifndef VIDK_CUDA_EMU_CUH
#define VIDK_CUDA_EMU_CUH

#include <stddef.h>
#include <string.h>

#include "cuda_common.cuh"

namespace vidk_cux {

// Poison bytes: a value nobody wrote shows as these.
enum : unsigned char {
    kPoisonShared = 0xA5, // emulated shared memory, before every block / warp
    kPoisonState = 0x5A,  // emulated per-lane state and scratch
    kPoisonBuffer = 0xCD  // the executor's emulated slot buffers
};

inline void emu_poison(void *p, size_t n, unsigned char byte) {
#if VIDK_CUDA_DEBUG
    memset(p, byte, n);
#else
    (void)p;
    (void)n;
    (void)byte;
#endif
}

} // namespace vidk_cux

#endif
