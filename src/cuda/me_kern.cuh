// Full-search motion estimation on the device: kernels and the launch plan.
//
// Included by src/cuda/me.cu (nvcc) and by the host-side SIMT emulator
// src/cuda/me_emu.cuh (g++), which runs these kernels on a CPU without a GPU; so this
// file uses only plain C++ plus the CUDA built-ins that the emulator provides
// (threadIdx, blockIdx, blockDim, __syncthreads, __shfl_xor_sync, atomicMin, __ldg,
// __byte_perm, __clz, dynamic shared memory through VK_DYN_SMEM).
//
// Design (docs/ME_CUDA.md has the full text, the numbers and the SASS notes):
// - A thread block owns a group of 4x4 macroblocks (64x64 samples), a slice of C
//   consecutive candidate columns mvx and a slice of L candidate rows mvy. It stages the
//   64x64 current samples and the reference window all its candidates touch in shared
//   memory, clamping coordinates on load (the standards' edge padding, done on the
//   device: nothing outside the plane is ever read).
// - One thread keeps one candidate column mvx of one macroblock (kernel f16: 16x16,
//   32x32, 64x64 only) or one 8x16 half macroblock (kernel f41: the 41 H.264
//   partitions, optionally 32x32 and 64x64), and walks its mvy rows in chunks of K
//   candidates. Each reference row of a chunk is read from shared memory once, aligned
//   with one PRMT per word (__byte_perm), and compared against every current row it
//   meets in the chunk (K candidates share it): the PRMT and LDS cost is paid once per
//   reference row instead of once per candidate and row.
// - 4-byte packed SADs with the native VABSDIFF4 in its accumulating form (inline PTX
//   vabsdiff4.add: one instruction per 4 samples, no separate add).
// - Running minimum per partition and thread as one 32-bit key
//   (cost << 10 | rank(mvy)): with mvx fixed per thread, ordering candidates by
//   (cost, |mvy|, mvy) is exactly the tie rule (cost, |mvx|+|mvy|, raster), so one
//   IMNMX per partition and candidate keeps the winner. Valid while cost < 2^22 (the
//   host checks; otherwise the generic kernel runs).
// - At the end each key is widened to the global 64-bit key
//   (cost << 32 | (|mvx|+|mvy|) << 19 | raster index), reduced per block in shared
//   memory and merged across blocks with a 64-bit atomicMin in global memory. A
//   finalize kernel decodes keys into VidkMeResult (mv, cost, sad).
// - The generic kernel (any bit depth, any lambda, 64-bit keys; one thread per block
//   and candidate, warp shuffles for the minimum) covers 10-bit and inputs whose costs
//   do not fit the 32-bit key.
//
// Split by topic: me_kern_common.cuh (constants, keys, arguments, plan, device helpers),
// me_kern_f16.cuh, me_kern_f41.cuh (the fast kernels), me_kern_gen.cuh (generic and
// finalize kernels). This file includes them all.
#ifndef VIDK_CUDA_ME_KERN_CUH
#define VIDK_CUDA_ME_KERN_CUH

#include "me_kern_common.cuh"
#include "me_kern_f16.cuh"
#include "me_kern_f41.cuh"
#include "me_kern_gen.cuh"

#endif
