// The CUDA motion-search kernels (src/cuda/me_kern*.cuh) run on the host through the SIMT
// emulator of src/cuda/me_emu.cuh (each CUDA thread a fiber, exact warp and block barriers)
// against its independent serial reference: the kernels' logic is checked on machines
// without a GPU (CI), plain C++, no CUDA toolkit needed. Arguments: seed, cases; the EMU_*
// variables of me_emu.cuh pick a configuration (ctest me_emu_passes: the coding loop's
// search, whose blocks walk their columns in passes).
#define VIDK_ME_EMU_MAIN
#include "cuda/me_emu.cuh"
