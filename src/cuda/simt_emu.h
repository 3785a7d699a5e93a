// A host-side SIMT emulator for CUDA kernels written for it (src/cuda/me_kern.cuh through
// me_emu.cuh, src/cuda/dbk_kern.cuh through tests/test_dbk_emu.cpp): each CUDA thread a
// ucontext fiber, one thread block at a time (blocks in grid order), so the kernels' logic
// runs and is checked on a machine without a GPU. Plain C++17, no CUDA toolkit.
//
// It provides the CUDA built-ins those kernels use (threadIdx, blockIdx, blockDim,
// __syncthreads, __syncwarp, __shfl_sync, __shfl_xor_sync, __ballot_sync, __reduce_add_sync,
// __reduce_min_sync, __popc,
// atomicMin, __ldcg, __align__, uint2, uint4, dynamic shared memory). Barriers are exact: a
// warp shuffle or __syncwarp waits for the 32 lanes of its warp, __syncthreads for the whole
// block; a barrier that not every live thread of its scope reaches, or a shuffle with an exited
// partner, is reported as an error (the kernels' SIMT contract). What it cannot check: timing,
// races between threads in the same barrier interval (fibers run one after another), anything
// between blocks that run at once on a GPU (here each block ends before the next starts), and
// anything about the real device. Defines VIDK_SIMT_EMU 1 for the kernels' few host forms.
#ifndef VIDK_CUDA_SIMT_EMU_H
#define VIDK_CUDA_SIMT_EMU_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <vector>

#define VIDK_SIMT_EMU 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __align__(n) alignas(n)

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(8) uint2 {
    unsigned x, y;
};
inline uint2 make_uint2(unsigned x, unsigned y) {
    return {x, y};
}
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
    return {x, y, z, w};
}

namespace emu {

enum { RUN = 0, WAIT_WARP = 1, WAIT_BLOCK = 2, DONE = 3 };

struct Fiber {
    ucontext_t uc;
    int state;
};

struct Block {
    std::vector<Fiber> f;
    std::vector<char> stacks;
    std::vector<unsigned long long> xch;
    std::vector<unsigned long long> smem;
    ucontext_t sched;
    int cur = 0;
    dim3 bidx, bdim, gdim;
    std::function<void()> body;
    int errors = 0;
};

static Block g_block;
// The order in which a round runs the threads that can run (each until its next barrier):
// 0 by thread index, 1 the reverse, 2 a new random order each round, 3 the warps in a random
// order, each on through its warp barriers up to a block barrier (warps drift apart as far
// as the block's barriers let them); random orders from g_order_seed. Results that change
// with it reveal a missing barrier (a thread reading what another writes in the same
// barrier interval).
static int g_order = 0;
static uint32_t g_order_seed = 1;
static const size_t kStack = 128 * 1024;
// The next value of a xorshift32 state (the thread orders; the emulator tests' inputs).
inline uint32_t xorshift32(uint32_t &s) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    return s;
}

inline void *dyn_smem() { // dynamic shared memory of the block
    return g_block.smem.data();
}
inline void yield_to_sched(int st) {
    Fiber &fb = g_block.f[g_block.cur];
    fb.state = st;
    swapcontext(&fb.uc, &g_block.sched);
}

inline void entry() {
    g_block.body();
    g_block.f[g_block.cur].state = DONE;
    // returning resumes uc_link (the scheduler)
}

inline void fail(const char *what) {
    fprintf(stderr, "emu: SIMT error: %s (block %u,%u thread %d)\n", what, g_block.bidx.x,
            g_block.bidx.y, g_block.cur);
    g_block.errors++;
}

// Run one block to completion.
inline void run_block(dim3 bidx, dim3 bdim, dim3 gdim, size_t smem_bytes,
                      const std::function<void()> &body) {
    Block &B = g_block;
    const int nt = (int)bdim.x;
    B.bidx = bidx, B.bdim = bdim, B.gdim = gdim;
    B.body = body;
    B.f.assign(nt, Fiber());
    if (B.stacks.size() < (size_t)nt * kStack) B.stacks.resize((size_t)nt * kStack);
    B.xch.assign(nt, 0);
    B.smem.assign((smem_bytes + 7) / 8 + 1, 0xcdcdcdcdcdcdcdcdull); // garbage, as on a GPU
    for (int i = 0; i < nt; i++) {
        getcontext(&B.f[i].uc);
        B.f[i].uc.uc_stack.ss_sp = B.stacks.data() + (size_t)i * kStack;
        B.f[i].uc.uc_stack.ss_size = kStack;
        B.f[i].uc.uc_link = &B.sched;
        makecontext(&B.f[i].uc, (void (*)())entry, 0);
        B.f[i].state = RUN;
    }
    // a new random permutation of v (g_order_seed)
    auto shuffle_ids = [](std::vector<int> &v) {
        for (int i = (int)v.size() - 1; i > 0; i--) {
            const int j = (int)(xorshift32(g_order_seed) % (uint32_t)(i + 1)), t = v[i];
            v[i] = v[j], v[j] = t;
        }
    };
    int ran = 0;
    auto run = [&](int i) {
        if (B.f[i].state != RUN) return;
        B.cur = i;
        swapcontext(&B.sched, &B.f[i].uc);
        ran = 1;
    };
    // warp w's lanes go on when every live lane waits at the warp barrier
    auto release_warp = [&](int w) {
        int lanes = 0, waiting = 0, done = 0;
        for (int i = w * 32; i < nt && i < w * 32 + 32; i++) {
            lanes++;
            waiting += B.f[i].state == WAIT_WARP;
            done += B.f[i].state == DONE;
        }
        if (!waiting || waiting != lanes - done) return 0;
        if (done || lanes != 32) {
            B.cur = w * 32;
            fail("shuffle with an exited or missing lane");
        }
        for (int i = w * 32; i < nt && i < w * 32 + 32; i++)
            if (B.f[i].state == WAIT_WARP) B.f[i].state = RUN;
        return 1;
    };
    const int nw = (nt + 31) / 32;
    std::vector<int> order(nt), warps(nw), lanes;
    for (;;) {
        ran = 0;
        if (g_order == 3) { // warps in a random order, each through its warp barriers
            for (int w = 0; w < nw; w++)
                warps[w] = w;
            shuffle_ids(warps);
            for (int w : warps)
                do {
                    lanes.clear();
                    for (int i = w * 32; i < nt && i < w * 32 + 32; i++)
                        lanes.push_back(i);
                    shuffle_ids(lanes);
                    for (int i : lanes)
                        run(i);
                } while (release_warp(w));
        } else {
            for (int i = 0; i < nt; i++)
                order[i] = g_order == 1 ? nt - 1 - i : i;
            if (g_order == 2) shuffle_ids(order);
            for (int i : order)
                run(i);
        }
        int live = 0, at_block = 0;
        for (int i = 0; i < nt; i++) {
            live += B.f[i].state != DONE;
            at_block += B.f[i].state == WAIT_BLOCK;
        }
        if (!live) break;
        int released = 0;
        for (int w = 0; w < nw; w++)
            released |= release_warp(w);
        if (!released && at_block == live) {
            for (int i = 0; i < nt; i++)
                if (B.f[i].state == WAIT_BLOCK) B.f[i].state = RUN;
            released = 1;
        }
        if (!released && !ran) {
            fail("deadlock: threads wait at different barriers");
            break;
        }
    }
}

template <typename F> inline void launch(dim3 grid, dim3 block, size_t smem, F &&fn) {
    for (unsigned y = 0; y < grid.y; y++)
        for (unsigned x = 0; x < grid.x; x++)
            run_block(dim3(x, y, 0), block, grid, smem, fn);
}

} // namespace emu

struct EmuIdx {
    unsigned x, y, z;
};
inline EmuIdx emu_tid() {
    return {(unsigned)emu::g_block.cur, 0, 0};
}
inline EmuIdx emu_bid() {
    return {emu::g_block.bidx.x, emu::g_block.bidx.y, 0};
}
inline EmuIdx emu_bdim() {
    return {emu::g_block.bdim.x, 1, 1};
}
#define threadIdx (emu_tid())
#define blockIdx  (emu_bid())
#define blockDim  (emu_bdim())

inline void __syncthreads() {
    emu::yield_to_sched(emu::WAIT_BLOCK);
}

namespace emu {
// A warp shuffle: lane t's value v, the value of lane src(t) back (every lane of the warp).
template <typename T, typename Src> inline T shuffle(unsigned mask, T v, Src src) {
    static_assert(sizeof(T) <= 8, "shuffle size");
    if (mask != 0xffffffffu) fail("partial shuffle mask");
    const int t = g_block.cur;
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    g_block.xch[t] = bits;
    yield_to_sched(WAIT_WARP);
    bits = g_block.xch[(t & ~31) | (src(t & 31) & 31)];
    yield_to_sched(WAIT_WARP); // nobody overwrites a slot before all have read
    T r;
    memcpy(&r, &bits, sizeof(T));
    return r;
}
} // namespace emu
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int m) {
    return emu::shuffle(mask, v, [m](int lane) { return lane ^ m; });
}
template <typename T> inline T __shfl_sync(unsigned mask, T v, int src_lane) {
    return emu::shuffle(mask, v, [src_lane](int) { return src_lane; });
}

namespace emu {
// Every lane's value v, combined in lane order by op (the same result on each lane).
template <typename Op> inline unsigned warp_fold(unsigned mask, unsigned v, Op op) {
    if (mask != 0xffffffffu) fail("partial warp reduction mask");
    const int t = g_block.cur, w = t & ~31;
    g_block.xch[t] = v;
    yield_to_sched(WAIT_WARP);
    unsigned r = 0;
    for (int i = 0; i < 32; i++)
        r = op(r, (unsigned)g_block.xch[w + i], i);
    yield_to_sched(WAIT_WARP);
    return r;
}
} // namespace emu
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return emu::warp_fold(mask, pred != 0,
                          [](unsigned r, unsigned v, int i) { return r | (v ? 1u << i : 0u); });
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
    return emu::warp_fold(mask, v, [](unsigned r, unsigned x, int) { return r + x; });
}

inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
    return emu::warp_fold(
        mask, v, [](unsigned r, unsigned x, int i) { return i == 0 || x < r ? x : r; });
}
inline int __popc(unsigned v) {
    return __builtin_popcount(v);
}

inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
    const unsigned long long o = *p;
    if (v < o) *p = v;
    return o;
}

inline void __syncwarp(unsigned mask = 0xffffffffu) {
    if (mask != 0xffffffffu) emu::fail("partial warp barrier mask");
    emu::yield_to_sched(emu::WAIT_WARP);
}
template <typename T> inline T __ldcg(const T *p) {
    return *p;
}

#endif
