// The coding loop on the device (docs/ENCODE_CUDA.md). Every frame stays on the GPU: the
// source crosses PCIe once (host to device), and only what the caller asked for comes back
// (reconstruction, vectors, energy, levels) plus 120 bytes of statistics.
//
// Streams and events of one frame i (slot = i % VIDK_ENC_MAX_PENDING: its source buffers,
// events, outputs and entropy coder; parity = i % 2: its reconstruction, the next frame's
// reference):
//   upload stream (vidk_enc_send): source planes -> d_src[slot] (straight from the caller's
//     memory when it is registered / pinned, else through a pinned staging buffer), then the
//     edge extension; event up_end[slot]. The CLI sends frames i + 1 and i + 2 before it
//     receives frame i, so their uploads overlap the frames in progress, off their path.
//   code stream (queued by the receive of frame i - 2, i - 1 or i: the caller sends frames
//     ahead, and each receive queues the frames sent after its own before it waits, so that
//     the GPU never waits for the host): wait for frame i - 2's statistics and downloads
//     (they read the reconstruction this frame overwrites) and up_end[slot]; the
//     motion search against the previous reconstruction (inter frames;
//     vidk_cuda_me_search_dev, results stay on the device); the unit kernels (H.264 inter:
//     the decision passes, then inter_kernel, warps per step, and the macroblocks made
//     intra; HEVC inter: one warp per CTU; intra frames: a wavefront, one block per unit row
//     (H.264: a luma and a chroma warp; HEVC: one warp), rows released by progress
//     counters); then frame i + 1's work.
//   statistics stream: after frame i's unit kernels, the statistics (SSE + unit sums into
//     15 counters) and their download, beside frame i + 1's search.
//   side stream (H.264 P frames): the Intra_16x16 estimate beside the search; the decision
//     passes wait for it.
//   output stream: after frame i's statistics (queued by frame i's receive) the downloads
//     the caller asked for, beside frame i + 1's coding, which uses the other parity's
//     reconstruction and another slot's levels, vectors, maps and sums.
//   entropy stream: with the H.264 stream asked for, after frame i's statistics, its entropy
//     coding (stream.cu: the slices' NAL units are written on the device and only their
//     bytes come down, on a fourth stream; the host puts the SPS / PPS of an IDR picture
//     before them). It runs beside frame i + 1's and i + 2's coding: what it reads (decision
//     words, vectors, levels) and what the host reads back (statistics, events, the coder's
//     buffers) are kept per slot.
// Events between the stages time them.
// The per-unit arithmetic is enc_core.h / enc_tmpl.h, the same source as the CPU backends.
#include "cuda_common.cuh"
#include "exec.cuh"
#include "me_cuda.h"
#include "stream_cuda.cuh"

#include <cub/block/block_scan.cuh>
#include <stdlib.h>
#include <string.h>

#include "enc/enc.h"
#include "enc/h264_stream.h"
#include "enc/h264_stream_core.h"
#include "enc_warp.cuh"

// ---- the unit drivers with the core primitives, on the device ----
struct EncOps {
    int unused;
};
#define ENC_T(n) enc_cu_##n
#include "enc/enc_ops_core.h"
#include "enc/enc_tmpl.h"
#include "thread_pool.h"

namespace {

// Counters of the statistics kernel: nnz[3], bits (mode, mv, level), parts[6], sse[3].
enum {
    SUM_NNZ = 0,
    SUM_BITS = 3,
    SUM_PARTS = 6,
    SUM_SSE = 6 + VIDK_ENC_PART_COUNT,
    SUM_COUNT = SUM_SSE + 3
};

enum { EV_T1, EV_T2, EV_T3, EV_T4, EV_S, EV_T5, EV_I, EV_SUM, EV_COUNT };

// Source slots: frame i's source is in slot i % kSlots from its send to its receive, so that
// the caller can send the frames after the one being coded (their uploads then run while it
// is coded, off the frame-to-frame path).
constexpr int kSlots = VIDK_ENC_MAX_PENDING;

// A frame queued on the device by launch_frame.
struct Launched {
    int64_t index; // -1: none
    EncFrame f;
    bool gpu_st;            // its stream is coded on the device (stream.cu)
    unsigned long long d2h; // bytes its launch downloads
};

// Frame i's buffers that its entropy coding reads (on s_ent) while frames i + 1 and i + 2 are
// coded (on s_code), and what the host reads after it: one per slot, frame i's [i % kSlots].
struct EncCuda {
    int pitch[3]; // device row pitch (samples) per plane
    size_t plane_bytes[3];
    uint8_t *d_src[kSlots][3]; // source, coded size, one slot per frame sent ahead
    uint8_t *d_rec[2][3];      // reconstructions: frame i's is [i % 2], its reference the other
    EncUnitStat *d_stat[kSlots]; // by slot: the unit sums that stats_kernel adds up
    int16_t *d_lev[kSlots][3];   // by slot
    VidkMv *d_mv[kSlots];        // by slot
    uint16_t *d_mbi[kSlots];     // by slot; VIDK_ENC_OUT_STREAM: decision words
    VidkMv *d_dmv[2];            // H.264 P frames: the decision passes' vectors
    uint16_t *d_dmb[2];          // and words (enc_core.h enc_h264_decide_pass)
    uint32_t *d_dist;            // ENC_H264_DIST_N per macroblock: what they compare
    uint32_t *d_skipc;           // 2 per macroblock: the P_Skip candidate's vector and SATD
    int *d_ilist; // P frames' intra macroblocks in raster order (intra_list_kernel),
    int *d_iflag; // per macroblock: 1 once coded (intra_p_kernel),
    int *d_icnt;  // [0] how many, [1] the tickets handed out
    uint32_t *d_energy[kSlots];        // by slot
    unsigned long long *d_sum[kSlots]; // by slot
    int *d_progress;
    unsigned long long *h_sum[kSlots]; // pinned, by slot
    uint8_t *h_stage[kSlots];          // pinned source staging (w x h, 3 planes), per slot
    uint8_t *h_out;                    // pinned staging of the downloads
    size_t out_bytes;
    // upload, coding, entropy coding, stream fetch, other downloads, the intra estimate,
    // the statistics
    cudaStream_t s_up, s_code, s_ent, s_dl, s_out, s_side, s_stat;
    cudaEvent_t up_beg[kSlots], up_end[kSlots], ev[kSlots][EV_COUNT];
    unsigned long long h2d[kSlots];
    // VIDK_ENC_OUT_STREAM: the entropy coder on the device (stream.cu), unless the
    // environment asks for the host writer (VIDK_STREAM_HOST=1: the decisions, vectors and
    // levels go down, as before); st_slices: its slices per picture
    VidkCuStream *st[kSlots]; // by slot
    int st_slices;
    size_t st_slot;       // its slot size (0: no device coder)
    bool inter_waves;     // inter_kernel's grid is more than two blocks per SM
    Launched pre[kSlots]; // by slot: the frames whose work is queued ahead of their receive
    int pre_err[kSlots];
};

inline EncCuda *state(const VidkEncoder *e) {
    return static_cast<EncCuda *>(e->cuda);
}

// Edge extension: samples right of / below the source take the nearest source sample.
// Thread row i extends luma row y0 + i and chroma row y0 / 2 + i: y0 = h when the source
// fills the coded width (only the rows below it), else 0.
__global__ void pad_kernel(uint8_t *y, uint8_t *u, uint8_t *v, int pitch_y, int pitch_c, int w,
                           int h, int W, int H, int y0) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x,
              i = blockIdx.y * blockDim.y + threadIdx.y, r = y0 + i, rc = y0 / 2 + i;
    if (x < W && r < H && (x >= w || r >= h))
        y[(size_t)r * pitch_y + x] = y[(size_t)min(r, h - 1) * pitch_y + min(x, w - 1)];
    const int cw = w / 2, ch = h / 2;
    if (x < W / 2 && rc < H / 2 && (x >= cw || rc >= ch)) {
        const size_t o = (size_t)rc * pitch_c + x,
                     s = (size_t)min(rc, ch - 1) * pitch_c + min(x, cw - 1);
        u[o] = u[s];
        v[o] = v[s];
    }
}

// H.264 inter frames: what the decision compares, the partitions' SATD (enc_h264_part_dist:
// the sum of its 4x4 blocks' enc_satd4). A half warp per macroblock, lane k the 4x4 block k
// (raster), through the partition shapes in turn: at the vector of the shape's partition
// covering it, whose SATD it computes unless an earlier shape gave the block the same vector
// (neighbouring shapes' searches often agree: the same value, computed once); the lane of a
// partition's first block sums its blocks. Without sub-8x8 partitions (f.no_sub8x8) only the
// shapes from 8x8 on (their entries are all the decision reads). Lane 0 of a macroblock
// also writes decision pass 0, the seed (enc_h264_seed), into seed_mv / seed_mb.
constexpr int kDistShapes =
    7; // 4x4, 8x4, 4x8, 8x8 (P_8x8's sub types 3, 1, 2, 0), 16x8, 8x16, 16x16
__device__ inline int dist_part(int shape, int k) {
    const int mode = shape < 4 ? 3 : shape == 4 ? 1 : shape == 5 ? 2 : 0;
    const int sub = shape == 0 ? 3 : shape == 1 ? 1 : shape == 2 ? 2 : 0;
    return enc_h264_cand_part(mode, sub, k & 3, k >> 2);
}
__host__ __device__ inline int dist_shape0(const EncFrame &f) {
    return f.no_sub8x8 ? 3 : 0;
}
__global__ void __launch_bounds__(128)
    dist_kernel(const EncFrame f, uint32_t *dist, VidkMv *seed_mv, uint16_t *seed_mb) {
    __shared__ uint32_t sd[128];
    const int s0 = dist_shape0(f);
    const int t = blockIdx.x * blockDim.x + threadIdx.x, u = t >> 4, k = t & 15;
    const bool on = u < f.uw * f.uh; // the same for the 16 lanes of a macroblock
    const int mbx = u % f.uw, mby = u / f.uw;
    const uint32_t *h = sd + (threadIdx.x & ~15);
    VidkMv mv[kDistShapes];
    uint32_t v[kDistShapes];
#pragma unroll
    for (int shape = 0; shape < kDistShapes; shape++) {
        mv[shape].x = mv[shape].y = 0, v[shape] = 0;
        if (shape < s0 || !on) continue;
        const int p = dist_part(shape, k);
        const EncPart q = enc_h264_part(mbx, mby, p);
        mv[shape] = enc_me_at(&f, q.bs, q.bx, q.by).mv;
        int same = -1;
#pragma unroll
        for (int o = 0; o < shape; o++)
            if (o >= s0 && mv[o].x == mv[shape].x && mv[o].y == mv[shape].y) same = o;
        if (same >= 0) {
#pragma unroll
            for (int o = 0; o < shape; o++) // a register, not a local array, by index
                v[shape] = o == same ? v[o] : v[shape];
        } else {
            v[shape] = enc_h264_satd_at(&f, 16 * mbx + 4 * (k & 3), 16 * mby + 4 * (k >> 2), 4,
                                        4, mv[shape]);
        }
        __syncwarp(0xffffu << (threadIdx.x & 16)); // the half warp's previous sums are read
        sd[threadIdx.x] = v[shape];
        __syncwarp(0xffffu << (threadIdx.x & 16));
        bool first = true;
        for (int o = 0; o < k; o++)
            first = first && dist_part(shape, o) != p; // the partition's first block sums
        if (first) {
            uint32_t sum = 0;
            for (int o = k; o < 16; o++)
                sum += dist_part(shape, o) == p ? h[o] : 0u;
            dist[ENC_H264_DIST_N * u + p] = sum;
        }
    }
    if (on && k == 0) enc_h264_seed(&f, mbx, mby, seed_mv, seed_mb);
}

// The Intra_16x16 estimate: one thread per macroblock and mode, the lowest of four adjacent
// lanes into the macroblock's entry.
__global__ void __launch_bounds__(128) intra_est_kernel(const EncFrame f, uint32_t *dist) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x, u = t >> 2;
    uint32_t v = u < f.uw * f.uh ? enc_h264_intra_est(&f, u % f.uw, u / f.uw, t & 3) : 0u;
    v = min(v, __shfl_down_sync(0xffffffffu, v, 1, 4));
    v = min(v, __shfl_down_sync(0xffffffffu, v, 2, 4));
    if (u < f.uw * f.uh && !(t & 3)) dist[ENC_H264_DIST_N * u + ENC_H264_DIST_INTRA] = v;
}

// H.264 inter frames: decision pass `pass` >= 1 (pass 0, the seed, is dist_kernel's), one
// thread per macroblock in each of a block's four warps, 32 macroblocks per block
// (enc_core.h enc_h264_decide_pass's steps): each warp fills the neighbourhood (filled by the
// four warps together, a quarter of its entries each, no faster: 14.6 -> 15.0 us) and
// computes four rows of the P_Skip candidate's SATD where its vector changed (40% of a pass
// on one thread, ncu); then the candidates (enc_h264_cand) on the warps: warp 0 16x16 and
// P_Skip, 1 P_8x8, 2 16x8, 3 8x16; each warp picks the winner from the costs
// (enc_h264_pick) and the winner's warp writes it. Measured before (session 8, H100) against
// eight lanes per macroblock (its candidates on parallel lanes) and a warp per macroblock
// (P_8x8's partitions on lanes too): 41 / 46 / 110 us a pass at 1080p: the lanes' shared
// start (the neighbourhood, the partition tables) costs more than they save.
constexpr int kDecideWarps = 4;
__global__ void __launch_bounds__(32 * kDecideWarps)
    decide_kernel(const EncFrame f, const VidkMv *mvi, const uint16_t *mbi, VidkMv *mvo,
                  uint16_t *mbo) {
    __shared__ uint32_t s_satd[kDecideWarps][32], s_c[ENC_H264_CANDS][32];
    __shared__ unsigned s_w[ENC_H264_CANDS][32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, u = blockIdx.x * 32 + lane;
    const bool on = u < f.uw * f.uh;
    const int mbx = u % f.uw, mby = u / f.uw;
    VidkH264MvNb n;
    VidkMv sv = {0, 0};
    uint32_t satd = 0;
    bool fresh = false;
    if (on) {
        enc_h264_decide_nb(&f, mbx, mby, mvi, mbi, &n);
        sv = vidk_h264_skip_mv(&n);
        fresh = !enc_h264_skip_kept(&f, mbx, mby, sv, &satd);
        if (fresh)
            s_satd[w][lane] = enc_h264_satd_at(&f, 16 * mbx, 16 * mby + 4 * w, 16, 4, sv);
    }
    __syncthreads();
    if (on && fresh) {
        satd = s_satd[0][lane] + s_satd[1][lane] + s_satd[2][lane] + s_satd[3][lane];
        if (w == 0) enc_h264_skip_keep(&f, mbx, mby, sv, satd);
    }
    // warp 0: 16x16 (its vectors kept in v0), then P_Skip; the others one candidate each
    const int k = w == 0 ? 0 : w == 1 ? 3 : w - 1;
    unsigned word = 0;
    VidkMv v0[16];
    if (on) {
        s_c[k][lane] = enc_h264_cand(&f, mbx, mby, &n, k, satd, &word);
        s_w[k][lane] = word;
        if (w == 0) {
            for (int b = 0; b < 16; b++)
                v0[b] = n.in[b];
            s_c[4][lane] = enc_h264_cand(&f, mbx, mby, &n, 4, satd, &word);
            s_w[4][lane] = word;
        }
    }
    __syncthreads();
    if (!on) return;
    uint32_t c[ENC_H264_CANDS];
    unsigned words[ENC_H264_CANDS];
    for (int j = 0; j < ENC_H264_CANDS; j++)
        c[j] = s_c[j][lane], words[j] = s_w[j][lane];
    const uint32_t intra = f.dist[ENC_H264_DIST_N * (ptrdiff_t)u + ENC_H264_DIST_INTRA];
    const int win = enc_h264_pick(c, intra);
    const bool mine = win == k || (w == 0 && (win == 4 || win == ENC_H264_CANDS));
    if (!mine) return;
    for (int b = 0; b < 16; b++) {
        VidkMv m = win == 0 ? v0[b] : n.in[b];
        if (win == ENC_H264_CANDS) m.x = m.y = 0; // Intra_16x16
        mvo[(ptrdiff_t)(mby * 4 + b / 4) * (f.W / 4) + mbx * 4 + b % 4] = m;
    }
    mbo[u] = (uint16_t)enc_h264_word(win, words, intra);
}

// An 8x8 block (rows of 8 bytes, 8-aligned: the quadrant's x and the pitch are) into a
// plane: a store per row.
__device__ inline void store8x8(uint8_t *d, int pitch, const uint8_t *b) {
#pragma unroll
    for (int r = 0; r < 8; r++)
        *reinterpret_cast<uint2 *>(d + (ptrdiff_t)r * pitch) =
            *reinterpret_cast<const uint2 *>(b + 8 * r);
}

// H.264 inter frames: enc_tmpl.h h264_p_mb's steps spread over the six warps of a block, 32
// macroblocks per block. Warps 0-3 first form luma quadrant w's prediction of every
// macroblock (lane) into shared memory and measure it for the transform size; meanwhile
// warp 4 codes Cb, warp 5 Cr and then the maps. Then the luma is coded as jobs, a
// (macroblock, quadrant) each, from the predictions in shared memory: the macroblocks that
// chose the 4x4 transform first, those that chose 8x8 after, 32 jobs a warp, so that a warp
// runs one transform size (one warp at most both); warp 4 counts the header's bits (only the
// statistics need them) beside the jobs' transforms (in the three-block build before Cb, as
// until session 17: the same speed at 2160p). The quadrants' decimation scores meet in shared
// memory (h264_luma_try's two steps: the same sums); warp 4 writes the statistics.
//
// Two builds (session 17, H200, docs/PERFORMANCE.md): kMinBlocks = 0 (137 registers, two
// blocks per SM) where the grid has at most two blocks per SM (1080p: the whole file 2.6%
// faster than with three blocks per SM allowed, the kernel alone the same: fewer of the other
// streams' blocks share its SMs); kMinBlocks = 3 (96 registers, 48 bytes spilled) for larger
// grids (2160p: the kernel 8-10% faster than the two-block build, the whole file 1-3%). 9.6 kB
// of shared memory: three blocks fit in the 32 kB configuration (with their 1 kB each). The
// measures' room (until the job list) is taken by the scores and then the bits.
constexpr int kInterWarps = 6;
// Row r (8 bytes) of quadrant prediction i (64 bytes) in shared memory, at row r ^ ((i >> 1)
// & 7) of its place: the rows r of 16 consecutive quadrants fall in distinct bank pairs.
__device__ inline uint2 *pred_row(uint8_t *s, int i, int r) {
    return reinterpret_cast<uint2 *>(s + 64 * i + 8 * (r ^ ((i >> 1) & 7)));
}
template <int kMinBlocks>
__global__ void __launch_bounds__(32 * kInterWarps, kMinBlocks) inter_kernel(const EncFrame f) {
    __shared__ __align__(16) uint8_t s_pred[4 * 32 * 64];
    __shared__ union {
        uint32_t m[2][4][32]; // SATD, SA8D
        struct {
            int score[4][32];
            uint16_t bits[4][32], nz[4][32];
        } c;
    } s_x;
    __shared__ int s_list[32], s_cnt[2];
    __shared__ unsigned s_cr[2][32];
    const int lane = threadIdx.x & 31, role = threadIdx.x >> 5, u = blockIdx.x * 32 + lane;
    const unsigned w = u < f.uw * f.uh ? f.dmb[u] : ENC_MBI_INTRA;
    const bool on = !(w & ENC_MBI_INTRA); // intra: coded by intra_p_kernel
    const EncOps ops = {0};
    const int mbx = u % f.uw, mby = u / f.uw, x0 = 16 * mbx, y0 = 16 * mby, n4 = f.W / 4;
    const int tx8_ok = (w & 3) != 3 || !(w & 0x3fcu);
    const VidkMv *mv4 = f.dmv + (ptrdiff_t)(4 * mby) * n4 + 4 * mbx;
    EncUnitStat st = enc_stat_zero();
    VidkH264MvNb nb;
    constexpr bool head_first = kMinBlocks == 3; // the header before Cb (see above)
    if (head_first && on && role == 4) (void)enc_cu_h264_p_head(&f, mbx, mby, w, &nb, &st);
    if (on && role >= 4) enc_mc_area(&f, x0, y0, 16, 16, mv4, n4, role == 4 ? 2u : 4u);
    if (on && role == 4) enc_cu_h264_chroma_plane(&ops, &f, mbx, mby, 0, 1, &st);
    if (on && role == 5) {
        EncUnitStat c = enc_stat_zero();
        enc_cu_h264_chroma_plane(&ops, &f, mbx, mby, 0, 2, &c);
        s_cr[0][lane] = c.bits_level, s_cr[1][lane] = c.nnz[2];
    }
    ENC_ALIGN(16) int16_t lev[64];
    ENC_ALIGN(16) uint8_t out[64];
    if (on && role < 4) {
        // Quadrant q's prediction (enc_mc_area's, each 4x4 block at its vector) into out, kept
        // for the job that codes it; into rec too for the energy map (enc_h264_p_maps reads it
        // there); its measures.
        const int q = role, xq = x0 + 8 * (q & 1), yq = y0 + 8 * (q >> 1);
        const VidkMv *mq = mv4 + 2 * (q >> 1) * n4 + 2 * (q & 1);
        for (int b = 0; b < 4; b++)
            enc_mc_luma(&f, xq + 4 * (b & 1), yq + 4 * (b >> 1), 4, 4,
                        mq[(b >> 1) * n4 + (b & 1)], out + 32 * (b >> 1) + 4 * (b & 1), 8);
#pragma unroll
        for (int r = 0; r < 8; r++)
            *pred_row(s_pred, q * 32 + lane, r) = reinterpret_cast<const uint2 *>(out)[r];
        if (f.energy) store8x8(f.rec[0] + (ptrdiff_t)yq * f.cs[0] + xq, f.cs[0], out);
        if (tx8_ok)
            enc_h264_tx_measure(f.src[0] + (ptrdiff_t)yq * f.ss[0] + xq, f.ss[0], out, 8,
                                &s_x.m[0][q][lane], &s_x.m[1][q][lane]);
    }
    __syncthreads(); // the measures are known; the prediction is in rec (energy)
    const int t =
        on && tx8_ok &&
        enc_h264_tx8_wins(
            s_x.m[0][0][lane] + s_x.m[0][1][lane] + s_x.m[0][2][lane] + s_x.m[0][3][lane],
            s_x.m[1][0][lane] + s_x.m[1][1][lane] + s_x.m[1][2][lane] + s_x.m[1][3][lane]);
    if (role == 0) { // the macroblocks in job order: 4x4 ones, then 8x8 ones
        const unsigned m0 = __ballot_sync(0xffffffffu, on && !t),
                       m1 = __ballot_sync(0xffffffffu, t);
        const unsigned below = (1u << lane) - 1u;
        const int n0 = __popc(m0);
        if (on) s_list[t ? n0 + __popc(m1 & below) : __popc(m0 & below)] = lane;
        if (lane == 0) s_cnt[0] = n0, s_cnt[1] = n0 + __popc(m1);
    }
    if (on && role == 5) enc_cu_h264_p_maps(&f, mbx, mby, mv4, n4); // before rec is written
    __syncthreads();                                                // the job list
    const int job = role * 32 + lane, k = job >> 2, q = job & 3;
    const bool busy = role < 4 && k < s_cnt[1];
    const int jm = busy ? s_list[k] : 0, jt = k >= s_cnt[0];
    const int ju = blockIdx.x * 32 + jm, jx = 16 * (ju % f.uw), jy = 16 * (ju / f.uw);
    const int xq = jx + 8 * (q & 1), yq = jy + 8 * (q >> 1);
    const uint8_t *src = f.src[0] + (ptrdiff_t)yq * f.ss[0] + xq;
    if (busy) {
#pragma unroll
        for (int r = 0; r < 8; r++)
            reinterpret_cast<uint2 *>(out)[r] = *pred_row(s_pred, q * 32 + jm, r);
        s_x.c.score[q][jm] = enc_cu_h264_lq_quant(&ops, &f, src, f.ss[0], jt, out, 8, lev);
    }
    if (!head_first && on && role == 4) (void)enc_cu_h264_p_head(&f, mbx, mby, w, &nb, &st);
    __syncthreads(); // every quadrant's score is known
    if (busy) {
        const int total =
            s_x.c.score[0][jm] + s_x.c.score[1][jm] + s_x.c.score[2][jm] + s_x.c.score[3][jm];
        int nz = 0;
        s_x.c.bits[q][jm] = (uint16_t)enc_cu_h264_lq_rec(
            &ops, &f, jt, total < 6 || s_x.c.score[q][jm] < 4, lev, out, 8, &nz);
        s_x.c.nz[q][jm] = (uint16_t)nz;
        enc_cu_h264_lq_store(&f, jx, jy, jt, q, lev);
        store8x8(f.rec[0] + (ptrdiff_t)yq * f.cs[0] + xq, f.cs[0], out);
    }
    __syncthreads(); // the quadrants' bits
    if (on && role == 4) {
        for (int b = 0; b < 4; b++)
            st.bits_level += s_x.c.bits[b][lane], st.nnz[0] += s_x.c.nz[b][lane];
        st.bits_level += s_cr[0][lane], st.nnz[2] = s_cr[1][lane];
        f.stat[u] = st;
        if (f.mbi) f.mbi[u] = (uint16_t)(w | (t ? ENC_MBI_TX8 : 0u));
    }
}

// H.264 P frames, the macroblocks the decision made intra (enc_tmpl.h h264_p_mb leaves them):
// their list in raster order, by one block (icnt[0]: how many; icnt[1]: tickets, zeroed).
constexpr int kListThreads = 1024;
__global__ void __launch_bounds__(kListThreads)
    intra_list_kernel(const uint16_t *dmb, int n, int *list, int *icnt) {
    typedef cub::BlockScan<int, kListThreads> Scan;
    __shared__ typename Scan::TempStorage tmp;
    const int per = (n + kListThreads - 1) / kListThreads, t = threadIdx.x;
    const int b = min(n, t * per), e = min(n, b + per);
    int cnt = 0, off, total;
    for (int u = b; u < e; u++)
        cnt += (dmb[u] & ENC_MBI_INTRA) != 0;
    Scan(tmp).ExclusiveSum(cnt, off, total);
    for (int u = b; u < e; u++)
        if (dmb[u] & ENC_MBI_INTRA) list[off++] = u;
    if (t == 0) icnt[0] = total, icnt[1] = 0;
}

// Flags between warps of different blocks (the intra waits below): the waiting lane reads
// with acquire semantics, the releasing lane writes with release semantics after a
// __syncwarp, which orders the other lanes' stores before it (the pattern of a device-wide
// semaphore; lighter than a sequentially consistent __threadfence on both sides).
__device__ inline int flag_acquire(const int *p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline void flag_wait(const int *p, int need) {
    while (flag_acquire(p) < need) {
    }
}
__device__ inline void flag_release(int *p, int v) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Then they are coded, one block of two warps each (enc_warp.cuh w_h264_i_mb: luma and
// chroma), once the intra ones among their left, top-left and top neighbours (what the
// prediction reads) are. A block takes the next ticket and codes that macroblock of the list,
// then the next: a macroblock waits only for ones with lower tickets, taken by running
// blocks that finish them first, so the waits cannot deadlock. Flags cross with acquire /
// release, samples through L2 (ENC_LDREC), as in the wavefront below.
constexpr int kIntraPBlocks = 512;
__global__ void __launch_bounds__(64)
    intra_p_kernel(const EncFrame f, const int *list, int *icnt, int *flag) {
    __shared__ vidk_encw::H264Scratch S;
    __shared__ int s_t;
    const int t = threadIdx.x;
    for (;;) { // tickets until the list is done (a grid of at most kIntraPBlocks blocks)
        if (t == 0) s_t = atomicAdd(&icnt[1], 1);
        __syncthreads();
        const int k = s_t;
        if (k >= icnt[0]) return; // the whole block
        const int u = list[k], x = u % f.uw, y = u / f.uw;
        if (t < 3) {
            const int nx = x - (t != 1), ny = y - (t != 0); // left, top, top-left
            if (nx >= 0 && ny >= 0 && (f.dmb[ny * f.uw + nx] & ENC_MBI_INTRA))
                flag_wait(flag + ny * f.uw + nx, 1);
        }
        __syncthreads();                       // also: every thread has read s_t
        vidk_encw::w_h264_i_mb(f, x, y, S, t); // ends with a block barrier
        if (t == 0) flag_release(flag + u, 1);
    }
}

// HEVC inter frames: one warp per CTU (enc_warp.cuh), two per block.
__global__ void __launch_bounds__(64) hevc_inter_kernel(const EncFrame f) {
    __shared__ vidk_encw::Mats M;
    __shared__ vidk_encw::WarpScratch S[2];
    vidk_encw::build_mats(M);
    __syncthreads();
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, u = blockIdx.x * 2 + w;
    if (u < f.uw * f.uh) vidk_encw::w_hevc_p_ctu(f, u % f.uw, u / f.uw, S[w], M, lane);
}

// Intra frames: a wavefront. Block r codes unit row r left to right; before unit x, thread 0
// waits until row r - 1 has released the units the prediction reads (wave_wait: `need`
// units), then the block's threads meet: HEVC (a warp per block) unit x + 1, the top-right
// one; H.264 (two warps per block) unit x:
// Intra_16x16 and chroma prediction read only the left, top-left and top ones (8.3.3,
// 8.3.4), so its rows follow one macroblock apart and the critical path is uw + uh - 1 units
// instead of uw + 2 uh - 2. Progress counters in global memory, acquire / release. Every
// row's block is resident at once (a few hundred small blocks at most), so the waits cannot
// deadlock. Neighbour samples are read through L2 (ENC_LDREC), never from a stale L1 line.
__device__ inline void wave_wait(const int *prog, int r, int need, int t) {
    if (r > 0 && t == 0) flag_wait(prog + r - 1, need);
}
__device__ inline void wave_release(int *prog, int r, int x, int lane) {
    __syncwarp(); // every lane's reconstruction before the release
    if (lane == 0) flag_release(prog + r, x + 1);
}

// HEVC intra frames: one warp per CTU row (enc_warp.cuh).
__global__ void __launch_bounds__(32) hevc_intra_kernel(const EncFrame f, int *progress) {
    __shared__ vidk_encw::Mats M;
    __shared__ vidk_encw::WarpScratch S;
    vidk_encw::build_mats(M);
    __syncthreads();
    const int r = blockIdx.x, lane = threadIdx.x;
    for (int x = 0; x < f.uw; x++) {
        wave_wait(progress, r, min(x + 2, f.uw), lane);
        __syncwarp();
        vidk_encw::w_hevc_i_ctu(f, x, r, S, M, lane);
        wave_release(progress, r, x, lane);
    }
}

// H.264 intra frames: one block of two warps (luma, chroma) per macroblock row
// (enc_warp.cuh).
__global__ void __launch_bounds__(64) h264_intra_kernel(const EncFrame f, int *progress) {
    __shared__ vidk_encw::H264Scratch S;
    const int r = blockIdx.x, t = threadIdx.x;
    for (int x = 0; x < f.uw; x++) {
        wave_wait(progress, r, x + 1, t); // left, top-left, top
        __syncthreads();
        vidk_encw::w_h264_i_mb(f, x, r, S, t); // ends with a block barrier
        wave_release(progress, r, x, t);
    }
}

// Statistics. The first row_blocks blocks: a warp per visible row (luma rows, then Cb, then
// Cr), squared errors summed per warp; the others: the unit sums, one unit per thread,
// summed per warp (32-bit: 32 units' counts fit). Per block in shared memory, then one atomic
// per counter. Integer sums: the order of the atomics does not change them.
constexpr int kStatThreads = 256, kStatRows = kStatThreads / 32;
__global__ void __launch_bounds__(kStatThreads)
    stats_kernel(const EncFrame f, const uint8_t *src0, const uint8_t *src1,
                 const uint8_t *src2, int w, int h, int row_blocks, unsigned long long *sum) {
    __shared__ unsigned long long acc[SUM_COUNT];
    const int lane = threadIdx.x & 31;
    for (int k = threadIdx.x; k < SUM_COUNT; k += blockDim.x)
        acc[k] = 0;
    __syncthreads();
    if ((int)blockIdx.x < row_blocks) {
        const int b = blockIdx.x * kStatRows + (threadIdx.x >> 5), ch = h / 2;
        if (b < h + 2 * ch) {
            const int p = b < h ? 0 : b < h + ch ? 1 : 2;
            const int y = p == 0 ? b : p == 1 ? b - h : b - h - ch, pw = p ? w / 2 : w;
            const uint8_t *a = (p == 0 ? src0 : p == 1 ? src1 : src2) + (size_t)y * f.ss[p];
            const uint8_t *r = f.rec[p] + (size_t)y * f.cs[p];
            // 16 samples a lane (rows start 64-byte aligned: the planes' pitch), then the
            // last pw % 16 one a lane; |a - r| per byte squared and summed by dp4a (a row's
            // sum, at most 3840 x 255^2, fits 32 bits)
            unsigned s = 0;
            const int pw16 = pw & ~15;
            for (int x = 16 * lane; x < pw16; x += 512) {
                const uint4 va = *reinterpret_cast<const uint4 *>(a + x),
                            vr = *reinterpret_cast<const uint4 *>(r + x);
                const unsigned d0 = __vabsdiffu4(va.x, vr.x), d1 = __vabsdiffu4(va.y, vr.y),
                               d2 = __vabsdiffu4(va.z, vr.z), d3 = __vabsdiffu4(va.w, vr.w);
                s = __dp4a(d0, d0, s), s = __dp4a(d1, d1, s);
                s = __dp4a(d2, d2, s), s = __dp4a(d3, d3, s);
            }
            for (int x = pw16 + lane; x < pw; x += 32) {
                const int d = a[x] - r[x];
                s += (unsigned)(d * d);
            }
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0 && s) atomicAdd(&acc[SUM_SSE + p], (unsigned long long)s);
        }
    } else {
        const int t = ((int)blockIdx.x - row_blocks) * kStatThreads + threadIdx.x;
        const bool on = t < f.uw * f.uh;
        const EncUnitStat *u = &f.stat[on ? t : 0];
        for (int k = 0; k < SUM_SSE; k++) {
            unsigned v = !on             ? 0u
                         : k < SUM_BITS  ? u->nnz[k - SUM_NNZ]
                         : k < SUM_PARTS ? (k == SUM_BITS       ? u->bits_mode
                                            : k == SUM_BITS + 1 ? u->bits_mv
                                                                : u->bits_level)
                                         : u->parts[k - SUM_PARTS];
            for (int o = 16; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
            if (lane == 0 && v) atomicAdd(&acc[k], (unsigned long long)v);
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < SUM_COUNT; k += blockDim.x)
        if (acc[k]) atomicAdd(&sum[k], acc[k]);
}

// The frame's decisions, vectors and levels into the host writer's buffers (e->st_*), for
// a frame the device could not code (a macroblock larger than its slot); synchronous.
int download_decisions(VidkContext *ctx, VidkEncoder *e, int slot, cudaStream_t s,
                       unsigned long long *bytes) {
    int err = 0;
    const EncCuda *c = state(e);
    const size_t nmbi = (size_t)e->uw * e->uh * sizeof(uint16_t),
                 nmv = (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv);
    *bytes = 0;
    CUDA_CHECK(cudaMemcpyAsync(e->st_mbi, c->d_mbi[slot], nmbi, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(e->st_mv4, c->d_mv[slot], nmv, cudaMemcpyDeviceToHost, s));
    *bytes += nmbi + nmv;
    for (int p = 0; p < 3; p++) {
        const size_t n = (size_t)e->W * e->H / (p ? 4 : 1) * sizeof(int16_t);
        CUDA_CHECK(
            cudaMemcpyAsync(e->st_lev[p], c->d_lev[slot][p], n, cudaMemcpyDeviceToHost, s));
        *bytes += n;
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
cleanup:
    return err;
}

void destroy(EncCuda *c) {
    if (!c) return;
    for (int s = 0; s < kSlots; s++)
        for (int p = 0; p < 3; p++)
            cudaFree(c->d_src[s][p]);
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 3; p++)
            cudaFree(c->d_rec[k][p]);
    for (int k = 0; k < 2; k++) {
        cudaFree(c->d_dmv[k]);
        cudaFree(c->d_dmb[k]);
    }
    for (int k = 0; k < kSlots; k++) {
        cudaFree(c->d_stat[k]);
        for (int p = 0; p < 3; p++)
            cudaFree(c->d_lev[k][p]);
        cudaFree(c->d_mv[k]);
        cudaFree(c->d_mbi[k]);
        cudaFreeHost(c->h_sum[k]);
        cudaFree(c->d_energy[k]);
        cudaFree(c->d_sum[k]);
        vidk_cuda_stream_close(&c->st[k]);
        for (int j = 0; j < EV_COUNT; j++)
            vidk_cux::event_destroy(&c->ev[k][j]);
    }
    cudaFree(c->d_dist);
    cudaFree(c->d_skipc);
    cudaFree(c->d_ilist);
    cudaFree(c->d_iflag);
    cudaFree(c->d_icnt);
    cudaFree(c->d_progress);
    cudaFreeHost(c->h_out);
    for (int s = 0; s < kSlots; s++) {
        cudaFreeHost(c->h_stage[s]);
        vidk_cux::event_destroy(&c->up_beg[s]);
        vidk_cux::event_destroy(&c->up_end[s]);
    }
    vidk_cux::stream_destroy(&c->s_up);
    vidk_cux::stream_destroy(&c->s_code);
    vidk_cux::stream_destroy(&c->s_ent);
    vidk_cux::stream_destroy(&c->s_dl);
    vidk_cux::stream_destroy(&c->s_out);
    vidk_cux::stream_destroy(&c->s_side);
    vidk_cux::stream_destroy(&c->s_stat);
    (void)cudaGetLastError();
    free(c);
}

} // namespace

// CUDA loads a kernel at its first launch (lazy loading, its default since 12.2), a fraction
// of a millisecond each: ~6 ms of the first frames at 1080p (H200, session 12: `vidkern
// encode` of 300 frames 2398 -> 2556 frames/s with CUDA_MODULE_LOADING=EAGER). The
// encoder loads its frames' kernels at open instead: its own, the search's (the variant its
// parameters select) and the stream coder's (vidk_cuda_stream_open).
int preload_kernels(VidkContext *ctx, VidkEncoder *e) {
    int err = 0;
    EncFrame f;
    VidkMeParams mp;
    CUDA_CHECK(vidk_cuda_load(pad_kernel, stats_kernel));
    if (e->p.codec == VIDK_CODEC_H264)
        CUDA_CHECK(vidk_cuda_load(h264_intra_kernel, intra_est_kernel, dist_kernel,
                                  decide_kernel, inter_kernel<0>, inter_kernel<3>,
                                  intra_list_kernel, intra_p_kernel));
    else
        CUDA_CHECK(vidk_cuda_load(hevc_intra_kernel, hevc_inter_kernel));
    vidk_enc_frame_setup(e, 0, &f);
    vidk_enc_me_params(e, &f, &mp);
    VIDK_TRY(vidk_cuda_me_preload(ctx, e->W, e->H, &mp));
cleanup:
    return err;
}

extern "C" int vidk_cuda_enc_open(VidkEncoder *e) {
    VidkContext *ctx = e->ctx;
    int err = 0;
    EncCuda *c = static_cast<EncCuda *>(calloc(1, sizeof(EncCuda)));
    if (!c) return VIDK_ERR(ENOMEM);
    e->cuda = c;
    for (int k = 0; k < kSlots; k++)
        c->pre[k].index = -1;
    VIDK_TRY(vidk_cuda_enter(ctx));
    CUDA_CHECK(vidk_cuda_prefer_l1(dist_kernel));
    CUDA_CHECK(vidk_cuda_prefer_l1(decide_kernel));
    CUDA_CHECK(vidk_cuda_prefer_l1(inter_kernel<0>));
    CUDA_CHECK(vidk_cuda_prefer_l1(inter_kernel<3>));
    {
        // VIDK_INTER_KERNEL=0 or 3 forces that build (a test hook: ctest encode_cuda_waves)
        const char *force = getenv("VIDK_INTER_KERNEL");
        c->inter_waves =
            force && *force ? atoi(force) == 3 : (e->uw * e->uh + 31) / 32 > 2 * ctx->cuda->sms;
    }
    CUDA_CHECK(vidk_cuda_prefer_l1(intra_p_kernel));
    CUDA_CHECK(vidk_cuda_prefer_l1(h264_intra_kernel));
    c->pitch[0] = vidk_cuda_me_pitch(e->W);
    c->pitch[1] = c->pitch[2] = (e->W / 2 + 63) / 64 * 64;
    for (int p = 0; p < 3; p++) {
        c->plane_bytes[p] = (size_t)c->pitch[p] * (size_t)(p ? e->H / 2 : e->H);
        for (int s = 0; s < kSlots; s++)
            CUDA_CHECK(cudaMalloc(&c->d_src[s][p], c->plane_bytes[p]));
        for (int k = 0; k < 2; k++)
            CUDA_CHECK(cudaMalloc(&c->d_rec[k][p], c->plane_bytes[p]));
    }
    for (int k = 0; k < kSlots; k++)
        CUDA_CHECK(cudaMalloc(&c->d_stat[k], (size_t)e->uw * e->uh * sizeof(EncUnitStat)));
    if (e->p.codec == VIDK_CODEC_H264) {
        CUDA_CHECK(
            cudaMalloc(&c->d_dist, (size_t)e->uw * e->uh * ENC_H264_DIST_N * sizeof(uint32_t)));
        CUDA_CHECK(cudaMalloc(&c->d_skipc, (size_t)e->uw * e->uh * 2 * sizeof(uint32_t)));
        CUDA_CHECK(cudaMalloc(&c->d_ilist, (size_t)e->uw * e->uh * sizeof(int)));
        CUDA_CHECK(cudaMalloc(&c->d_iflag, (size_t)e->uw * e->uh * sizeof(int)));
        CUDA_CHECK(cudaMalloc(&c->d_icnt, 2 * sizeof(int)));
        for (int k = 0; k < 2; k++) {
            CUDA_CHECK(
                cudaMalloc(&c->d_dmv[k], (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv)));
            CUDA_CHECK(cudaMalloc(&c->d_dmb[k], (size_t)e->uw * e->uh * sizeof(uint16_t)));
        }
    }
    CUDA_CHECK(cudaMalloc(&c->d_progress, (size_t)e->uh * sizeof(int)));
    for (int k = 0; k < kSlots; k++) {
        CUDA_CHECK(cudaMalloc(&c->d_sum[k], SUM_COUNT * sizeof(unsigned long long)));
        CUDA_CHECK(cudaMallocHost(&c->h_sum[k], SUM_COUNT * sizeof(unsigned long long)));
    }
    {
        const size_t src_bytes = (size_t)e->w * e->h * 3 / 2;
        for (int s = 0; s < kSlots; s++)
            CUDA_CHECK(cudaMallocHost(&c->h_stage[s], src_bytes));
        size_t out = 0;
        if (e->p.outputs & VIDK_ENC_OUT_RECON) out += src_bytes;
        // The stream is coded on the device from the decisions, vectors and levels, or on the
        // host (VIDK_STREAM_HOST=1), which then downloads them (st_host).
        const bool st = (e->p.outputs & VIDK_ENC_OUT_STREAM) != 0;
        const char *env_host = getenv("VIDK_STREAM_HOST");
        const bool st_host = st && env_host && !strcmp(env_host, "1");
        if (st) { // the host codes the frames the device cannot: on all its cores
            err = vidk_pool_create(&e->st_pool, vidk_imin(vidk_cpu_count(), 64));
            if (err < 0) goto cleanup;
            for (int k = 0; k < kSlots; k++)
                CUDA_CHECK(cudaMalloc(&c->d_mbi[k], (size_t)e->uw * e->uh * sizeof(uint16_t)));
            if (st_host) out += (size_t)e->uw * e->uh * sizeof(uint16_t);
        }
        if (st && !st_host) {
            // Slot size: VIDK_H264S_SLOT_BYTES holds any macroblock; VIDK_STREAM_SLOT_BYTES
            // (a test hook) makes it smaller, to exercise the host fallback.
            const char *env_slot = getenv("VIDK_STREAM_SLOT_BYTES");
            c->st_slot = VIDK_H264S_SLOT_BYTES;
            if (env_slot && atol(env_slot) > 0)
                c->st_slot = ((size_t)atol(env_slot) + 3) / 4 * 4;
            c->st_slices = vidk_imax(1, vidk_imin(e->p.slices ? e->p.slices : 1, e->uh));
        }
        if ((e->p.outputs & VIDK_ENC_OUT_MVS) || st) {
            for (int k = 0; k < kSlots; k++)
                CUDA_CHECK(
                    cudaMalloc(&c->d_mv[k], (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv)));
            if ((e->p.outputs & VIDK_ENC_OUT_MVS) || st_host)
                out += (size_t)(e->W / 4) * (e->H / 4) * sizeof(VidkMv);
        }
        if (e->p.outputs & VIDK_ENC_OUT_ENERGY) {
            for (int k = 0; k < kSlots; k++)
                CUDA_CHECK(
                    cudaMalloc(&c->d_energy[k], (size_t)e->mb_w * e->mb_h * sizeof(uint32_t)));
            out += (size_t)e->mb_w * e->mb_h * sizeof(uint32_t);
        }
        if ((e->p.outputs & VIDK_ENC_OUT_LEVELS) || st) {
            for (int p = 0; p < 3; p++) {
                const size_t n = (size_t)e->W * e->H / (p ? 4 : 1) * sizeof(int16_t);
                for (int k = 0; k < kSlots; k++)
                    CUDA_CHECK(cudaMalloc(&c->d_lev[k][p], n));
                if ((e->p.outputs & VIDK_ENC_OUT_LEVELS) || st_host) out += n;
            }
        }
        c->out_bytes = out;
        if (out) CUDA_CHECK(cudaMallocHost(&c->h_out, out));
    }
    // Streams and timing events of the encoder (exec.cu); they live until close.
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_up));
    // The frames' chain (search, decision, coding, the intra estimate the decision waits
    // for, the statistics the entropy coding waits for) at the device's highest priority:
    // the entropy coding and the uploads fill the SMs it leaves, not the other way round.
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_code, true));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_side, true));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_stat, true));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_ent));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_dl));
    VIDK_TRY(vidk_cux::stream_create(ctx, &c->s_out));
    for (int s = 0; s < kSlots; s++) {
        VIDK_TRY(vidk_cux::event_create(ctx, &c->up_beg[s], true));
        VIDK_TRY(vidk_cux::event_create(ctx, &c->up_end[s], true));
    }
    for (int k = 0; k < kSlots; k++) {
        for (int j = 0; j < EV_COUNT; j++)
            VIDK_TRY(vidk_cux::event_create(ctx, &c->ev[k][j], true));
        if (c->st_slot)
            VIDK_TRY(vidk_cuda_stream_open(ctx, &c->st[k], e->uw, e->uh, c->st_slices,
                                           c->st_slot, c->s_code));
    }
    VIDK_TRY(preload_kernels(ctx, e));
    // The first reference is never read before it is written; zero it anyway.
    for (int p = 0; p < 3; p++)
        for (int s = 0; s < 2; s++)
            CUDA_CHECK(cudaMemsetAsync(c->d_rec[s][p], 0, c->plane_bytes[p], c->s_code));
    CUDA_CHECK(cudaStreamSynchronize(c->s_code));
    return 0;
cleanup:
    destroy(c);
    e->cuda = nullptr;
    return err;
}

extern "C" void vidk_cuda_enc_close(VidkEncoder *e) {
    EncCuda *c = state(e);
    if (!c) return;
    if (vidk_cuda_enter(e->ctx) == 0) {
        (void)cudaStreamSynchronize(c->s_up);
        (void)cudaStreamSynchronize(c->s_code);
        (void)cudaStreamSynchronize(c->s_ent);
        (void)cudaStreamSynchronize(c->s_dl);
        (void)cudaStreamSynchronize(c->s_out);
        (void)cudaStreamSynchronize(c->s_side);
        (void)cudaStreamSynchronize(c->s_stat);
    }
    destroy(c);
    e->cuda = nullptr;
}

extern "C" int vidk_cuda_enc_send(VidkEncoder *e, const VidkPicture *src) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    const int slot = (int)(e->sent % kSlots);
    size_t off = 0;
    VIDK_TRY(vidk_cuda_enter(ctx));
    // The slot's previous frame (kSlots back) was received, so its upload and coding are done.
    CUDA_CHECK(cudaEventRecord(c->up_beg[slot], c->s_up));
    c->h2d[slot] = 0;
    for (int p = 0; p < 3; p++) {
        const int w = p ? e->w / 2 : e->w, h = p ? e->h / 2 : e->h;
        const uint8_t *s = static_cast<const uint8_t *>(src->data[p]);
        const size_t span = (size_t)src->stride[p] * (size_t)(h - 1) + (size_t)w;
        const uint8_t *from = s;
        size_t from_pitch = (size_t)src->stride[p];
        if (!vidk_cuda_host_pinned(ctx, s, span)) {
            uint8_t *st = c->h_stage[slot] + off;
            for (int y = 0; y < h; y++)
                memcpy(st + (size_t)y * w, s + (size_t)y * src->stride[p], (size_t)w);
            from = st, from_pitch = (size_t)w;
        }
        off += (size_t)w * h;
        CUDA_CHECK(cudaMemcpy2DAsync(c->d_src[slot][p], (size_t)c->pitch[p], from, from_pitch,
                                     (size_t)w, (size_t)h, cudaMemcpyHostToDevice, c->s_up));
        c->h2d[slot] += (unsigned long long)w * h;
    }
    if (e->w != e->W || e->h != e->H) { // the edge extension, off the frames' path
        uint8_t *const *d = c->d_src[slot];
        const int y0 = e->w == e->W ? e->h : 0; // the rows below the source, or all
        const dim3 blk(32, 8),
            grid((unsigned)((e->W + 31) / 32), (unsigned)((e->H - y0 + 7) / 8));
        pad_kernel<<<grid, blk, 0, c->s_up>>>(d[0], d[1], d[2], c->pitch[0], c->pitch[1], e->w,
                                              e->h, e->W, e->H, y0);
        CUDA_CHECK_LAUNCH();
    }
    CUDA_CHECK(cudaEventRecord(c->up_end[slot], c->s_up));
cleanup:
    return err;
}

// Queue frame `index`'s work: on the code stream from its upload to its statistics and their
// download; on the entropy stream, after them, its entropy coding (coded on the device: with
// its stream's size). Everything that does not depend on the caller's output buffers, so
// that vidk_cuda_enc_receive can queue frames i + 1 and i + 2 right after frame i's
// downloads, before it waits for them: the GPU then codes them while it entropy-codes frame i
// and while the caller writes frame i and reads the next picture. The maps are computed
// whenever the parameters ask for them (or the stream needs them).
static int launch_frame(VidkEncoder *e, int64_t index, Launched *L) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    const int slot = (int)(index % kSlots), par = (int)(index % 2);
    const int intra = vidk_enc_is_intra(e, index);
    const cudaStream_t s = c->s_code;
    uint8_t *const *src = c->d_src[slot];
    uint8_t *const *ref = c->d_rec[par ^ 1];
    uint8_t *const *rec = c->d_rec[par];
    cudaEvent_t *ev = c->ev[slot];
    EncFrame &f = L->f;
    const unsigned outp = e->p.outputs;
    L->index = index;
    L->d2h = SUM_COUNT * sizeof(unsigned long long);
    L->gpu_st = e->stream && c->st[slot] && vidk_h264_stream_slices(e->stream) == c->st_slices;
    VIDK_TRY(vidk_cuda_enter(ctx));
    vidk_enc_frame_setup(e, intra, &f);
    for (int p = 0; p < 3; p++) {
        f.src[p] = src[p];
        f.ss[p] = c->pitch[p];
        f.ref[p] = ref[p];
        f.rs[p] = c->pitch[p];
        f.rec[p] = rec[p];
        f.cs[p] = c->pitch[p];
        f.lev[p] = (outp & VIDK_ENC_OUT_LEVELS) || e->stream ? c->d_lev[slot][p] : nullptr;
        f.ls_[p] = p ? e->W / 2 : e->W;
    }
    f.mv4 = (outp & VIDK_ENC_OUT_MVS) || e->stream ? c->d_mv[slot] : nullptr;
    f.mbi = e->stream ? c->d_mbi[slot] : nullptr;
    f.energy = (outp & VIDK_ENC_OUT_ENERGY) ? c->d_energy[slot] : nullptr;
    f.stat = c->d_stat[slot];

    // Frame index - 2 (this parity's previous frame) has its statistics and its downloads
    // (its receive has queued them: this call comes from it or later) done before this one
    // overwrites its reconstruction; the events still hold its records (frame index + 1,
    // which reuses them, is queued after this one).
    if (index >= 2) {
        CUDA_CHECK(cudaStreamWaitEvent(s, c->ev[(index - 2) % kSlots][EV_T4], 0));
        CUDA_CHECK(cudaStreamWaitEvent(s, c->ev[(index - 2) % kSlots][EV_T5], 0));
    }
    CUDA_CHECK(cudaStreamWaitEvent(s, c->up_end[slot], 0)); // the upload and edge extension
    CUDA_CHECK(cudaEventRecord(ev[EV_T1], s));
    if (!intra && e->p.codec == VIDK_CODEC_H264) {
        // The Intra_16x16 estimate reads only the (padded) source: on its own stream, beside
        // the search, whose last wave leaves SMs free. d_dist is free: the previous frame's
        // decision passes precede this frame's EV_T1 on the code stream.
        CUDA_CHECK(cudaStreamWaitEvent(c->s_side, ev[EV_T1], 0));
        intra_est_kernel<<<(unsigned)((e->uw * e->uh * 4 + 127) / 128), 128, 0, c->s_side>>>(
            f, c->d_dist);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaEventRecord(ev[EV_I], c->s_side));
    }
    if (!intra) {
        VidkMeParams mp;
        vidk_enc_me_params(e, &f, &mp);
        VIDK_TRY(
            vidk_cuda_me_search_dev(ctx, e->W, e->H, src[0], ref[0], &mp, s, f.me, f.me_gw));
    }
    CUDA_CHECK(cudaEventRecord(ev[EV_T2], s));
    if (intra) {
        CUDA_CHECK(cudaMemsetAsync(c->d_progress, 0, (size_t)e->uh * sizeof(int), s));
        if (e->p.codec == VIDK_CODEC_HEVC)
            hevc_intra_kernel<<<(unsigned)e->uh, 32, 0, s>>>(f, c->d_progress);
        else
            h264_intra_kernel<<<(unsigned)e->uh, 64, 0, s>>>(f, c->d_progress);
        CUDA_CHECK_LAUNCH();
    } else {
        // H.264: the decision kernels, then inter_kernel (32 macroblocks per block, a warp
        // per step), then the macroblocks made intra.
        const int n = e->uw * e->uh;
        if (e->p.codec == VIDK_CODEC_H264) {
            f.skipc = c->d_skipc;
            dist_kernel<<<(unsigned)(((size_t)n * 16 + 127) / 128), 128, 0, s>>>(
                f, c->d_dist, c->d_dmv[0], c->d_dmb[0]);
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cudaStreamWaitEvent(s, ev[EV_I], 0)); // the intra estimate
            f.dist = c->d_dist;
            for (int pass = 1; pass <= VIDK_ENC_DECIDE_PASSES; pass++) {
                const int o = pass & 1, i = o ^ 1;
                decide_kernel<<<(unsigned)((n + 31) / 32), 32 * kDecideWarps, 0, s>>>(
                    f, c->d_dmv[i], c->d_dmb[i], c->d_dmv[o], c->d_dmb[o]);
                CUDA_CHECK_LAUNCH();
            }
            f.dmv = c->d_dmv[VIDK_ENC_DECIDE_PASSES & 1];
            f.dmb = c->d_dmb[VIDK_ENC_DECIDE_PASSES & 1];
        }
        if (e->p.codec == VIDK_CODEC_HEVC)
            hevc_inter_kernel<<<(unsigned)((n + 1) / 2), 64, 0, s>>>(f);
        else if (c->inter_waves)
            inter_kernel<3><<<(unsigned)((n + 31) / 32), 32 * kInterWarps, 0, s>>>(f);
        else
            inter_kernel<0><<<(unsigned)((n + 31) / 32), 32 * kInterWarps, 0, s>>>(f);
        CUDA_CHECK_LAUNCH();
        if (e->p.codec == VIDK_CODEC_H264) {
            intra_list_kernel<<<1, kListThreads, 0, s>>>(f.dmb, n, c->d_ilist, c->d_icnt);
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cudaMemsetAsync(c->d_iflag, 0, (size_t)n * sizeof(int), s));
            intra_p_kernel<<<(unsigned)vidk_imin(n, kIntraPBlocks), 64, 0, s>>>(
                f, c->d_ilist, c->d_icnt, c->d_iflag);
            CUDA_CHECK_LAUNCH();
        }
    }
    CUDA_CHECK(cudaEventRecord(ev[EV_T3], s));
    // The statistics on their own stream: the next frame's search, which needs only the
    // reconstruction, starts before them and before this frame's entropy coding, which
    // waits for them (its blocks would otherwise fill the SMs the search waits for).
    CUDA_CHECK(cudaStreamWaitEvent(c->s_stat, ev[EV_T3], 0));
    CUDA_CHECK(
        cudaMemsetAsync(c->d_sum[slot], 0, SUM_COUNT * sizeof(unsigned long long), c->s_stat));
    {
        const int row_blocks = (2 * e->h + kStatRows - 1) / kStatRows,
                  unit_blocks = (e->uw * e->uh + kStatThreads - 1) / kStatThreads;
        stats_kernel<<<(unsigned)(row_blocks + unit_blocks), kStatThreads, 0, c->s_stat>>>(
            f, src[0], src[1], src[2], e->w, e->h, row_blocks, c->d_sum[slot]);
        CUDA_CHECK_LAUNCH();
    }
    CUDA_CHECK(cudaEventRecord(ev[EV_T4], c->s_stat));
    // Their download behind them (EV_SUM), where nothing of the other frames queues: the
    // output stream takes each frame's downloads in its receive, in order, and frame i + 2
    // waits for frame i's (EV_T5).
    CUDA_CHECK(cudaMemcpyAsync(c->h_sum[slot], c->d_sum[slot],
                               SUM_COUNT * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                               c->s_stat));
    CUDA_CHECK(cudaEventRecord(ev[EV_SUM], c->s_stat));
    if (L->gpu_st) {
        // The entropy coding (stream.cu) on its own stream, after the statistics; its size
        // goes down with it, its NAL units after the receiver's synchronisation. The frames
        // from e->done on may not have been written yet (queued ahead): the header state
        // then comes from their types.
        const int16_t *const lev[3] = {c->d_lev[slot][0], c->d_lev[slot][1], c->d_lev[slot][2]};
        VidkH264SliceHdr hdr;
        uint32_t pending_intra = 0;
        for (int64_t k = e->done; k < index; k++)
            pending_intra |= (uint32_t)(vidk_enc_is_intra(e, k) != 0) << (k - e->done);
        vidk_h264_stream_slice_hdr_ahead(e->stream, e->done, pending_intra, index, intra, &hdr);
        CUDA_CHECK(cudaStreamWaitEvent(c->s_ent, ev[EV_T4], 0));
        VIDK_TRY(vidk_cuda_stream_code(ctx, c->st[slot], &hdr, c->d_mbi[slot], c->d_mv[slot],
                                       lev, c->s_ent));
        L->d2h += vidk_cuda_stream_res_bytes(c->st[slot]);
        CUDA_CHECK(cudaEventRecord(ev[EV_S], c->s_ent));
    }
cleanup:
    return err;
}

extern "C" int vidk_cuda_enc_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                                     VidkEncFrameInfo *info) {
    VidkContext *ctx = e->ctx;
    EncCuda *c = state(e);
    int err = 0;
    const int64_t index = e->done;
    const int slot = (int)(index % kSlots), par = (int)(index % 2);
    const int intra = vidk_enc_is_intra(e, index);
    const cudaStream_t s = c->s_code;
    uint8_t *const *rec = c->d_rec[par];
    cudaEvent_t *ev = c->ev[slot];
    Launched &L = c->pre[slot];
    struct Out {
        void *dst;
        size_t dpitch;
        const void *dev;
        size_t spitch, width, rows;
    } outs[10];
    int nout = 0;
    VidkMv *h_mv;      // where the downloads land: the caller's maps, else the stream's
    int16_t *h_lev[3]; // buffers
    VIDK_TRY(vidk_cuda_enter(ctx));
    if (L.index != index) { // not queued by the previous call
        L.index = -1;
        VIDK_TRY(launch_frame(e, index, &L));
    } else if (c->pre_err[slot]) {
        err = c->pre_err[slot];
        goto cleanup;
    }
    {
        const EncFrame &f = L.f;
        const bool gpu_st = L.gpu_st;
        unsigned long long d2h = L.d2h;
        L.index = -1;
        h_mv = maps && maps->mv ? maps->mv : e->st_mv4;
        for (int p = 0; p < 3; p++)
            h_lev[p] = maps && maps->levels[p] ? maps->levels[p] : e->st_lev[p];
        {
            // Downloads: straight into pinned caller memory, else through h_out. With the
            // stream coded on the device, only what the caller asked for. After the frame's
            // statistics and their download.
            CUDA_CHECK(cudaStreamWaitEvent(c->s_out, ev[EV_SUM], 0));
            size_t off = 0;
            auto add = [&](void *dst, size_t dpitch, const void *dev, size_t spitch,
                           size_t width, size_t rows) {
                outs[nout++] = {dst, dpitch, dev, spitch, width, rows};
            };
            if (recon)
                for (int p = 0; p < 3; p++)
                    add(recon->data[p], (size_t)recon->stride[p], rec[p], (size_t)c->pitch[p],
                        (size_t)(p ? e->w / 2 : e->w), (size_t)(p ? e->h / 2 : e->h));
            if ((maps && maps->mv) || (e->stream && !gpu_st)) {
                const size_t n = (size_t)(e->W / 4) * sizeof(VidkMv);
                add(h_mv, n, c->d_mv[slot], n, n, (size_t)(e->H / 4));
            }
            if (f.mbi && !gpu_st) {
                const size_t n = (size_t)e->uw * sizeof(uint16_t);
                add(e->st_mbi, n, c->d_mbi[slot], n, n, (size_t)e->uh);
            }
            if (maps && maps->energy) {
                const size_t n = (size_t)e->mb_w * sizeof(uint32_t);
                add(maps->energy, n, c->d_energy[slot], n, n, (size_t)e->mb_h);
            }
            for (int p = 0; p < 3; p++)
                if ((maps && maps->levels[p]) || (e->stream && !gpu_st)) {
                    const size_t n = (size_t)(p ? e->W / 2 : e->W) * sizeof(int16_t);
                    add(h_lev[p], n, c->d_lev[slot][p], n, n, (size_t)(p ? e->H / 2 : e->H));
                }
            for (int k = 0; k < nout; k++) {
                Out &o = outs[k];
                const size_t span = o.dpitch * (o.rows - 1) + o.width;
                void *to = o.dst;
                size_t to_pitch = o.dpitch;
                if (!vidk_cuda_host_pinned(ctx, o.dst, span)) {
                    to = c->h_out + off, to_pitch = o.width;
                    off += o.width * o.rows;
                } else {
                    o.dst = nullptr; // nothing to copy afterwards
                }
                CUDA_CHECK(cudaMemcpy2DAsync(to, to_pitch, o.dev, o.spitch, o.width, o.rows,
                                             cudaMemcpyDeviceToHost, c->s_out));
                d2h += o.width * o.rows;
            }
        }
        CUDA_CHECK(cudaEventRecord(ev[EV_T5], c->s_out));
        // Queue the frames sent after this one (i + 1, i + 2; an error is its receive's), then
        // wait for frame i's downloads: the code stream has the next frames' work before the
        // host waits for this one's statistics and stream. They use other slots' buffers, and
        // frame i + 2 overwrites this parity's reconstruction only after these downloads.
        for (int64_t j = index + 1; j < index + e->q_count && j <= index + 2; j++) {
            const int sj = (int)(j % kSlots);
            if (c->pre[sj].index == j) continue;
            c->pre_err[sj] = launch_frame(e, j, &c->pre[sj]);
            if (c->pre_err[sj]) break;
        }
        CUDA_CHECK(cudaEventSynchronize(ev[EV_T5]));
        {
            size_t off = 0;
            for (int k = 0; k < nout; k++) {
                const Out &o = outs[k];
                if (!o.dst) continue;
                for (size_t y = 0; y < o.rows; y++)
                    memcpy(static_cast<uint8_t *>(o.dst) + y * o.dpitch,
                           c->h_out + off + y * o.width, o.width);
                off += o.width * o.rows;
            }
        }
        {
            EncSum sum;
            uint64_t sse[3];
            for (int p = 0; p < 3; p++) {
                sum.nnz[p] = c->h_sum[slot][SUM_NNZ + p];
                sse[p] = c->h_sum[slot][SUM_SSE + p];
            }
            sum.bits_mode = c->h_sum[slot][SUM_BITS + 0];
            sum.bits_mv = c->h_sum[slot][SUM_BITS + 1];
            sum.bits_level = c->h_sum[slot][SUM_BITS + 2];
            for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
                sum.parts[k] = c->h_sum[slot][SUM_PARTS + k];
            vidk_enc_fill_info(e, index, intra, &sum, sse, info);
        }
        info->stage_ms[VIDK_ENC_STAGE_UPLOAD] =
            vidk_cux::event_elapsed(c->up_beg[slot], c->up_end[slot]);
        info->stage_ms[VIDK_ENC_STAGE_ME] = vidk_cux::event_elapsed(ev[EV_T1], ev[EV_T2]);
        info->stage_ms[VIDK_ENC_STAGE_CODE] = vidk_cux::event_elapsed(ev[EV_T2], ev[EV_T3]);
        info->stage_ms[VIDK_ENC_STAGE_STATS] = vidk_cux::event_elapsed(ev[EV_T3], ev[EV_T4]);
        info->stage_ms[VIDK_ENC_STAGE_DOWNLOAD] = vidk_cux::event_elapsed(ev[EV_T4], ev[EV_T5]);
        info->h2d_bytes = c->h2d[slot];
        info->d2h_bytes = d2h;
        if (gpu_st) {
            const double t0 = vidk_enc_now_ms();
            const uint8_t *nals = nullptr;
            size_t nb = 0;
            CUDA_CHECK(cudaEventSynchronize(ev[EV_S])); // its size is here
            VIDK_TRY(vidk_cuda_stream_fetch(ctx, c->st[slot], c->s_dl, &nals, &nb));
            if (err == 0) { // the SPS / PPS of an IDR picture before the slices on the host
                VIDK_TRY(vidk_h264_stream_frame_nals(e->stream, index, intra, nals, nb,
                                                     &info->stream, &info->stream_size));
                info->d2h_bytes += nb;
            } else { // a macroblock did not fit its slot: the host writer codes this frame
                unsigned long long got = 0;
                err = 0;
                vidk_log(ctx, VIDK_LOG_DEBUG, "encode: frame %lld: stream coded on the host",
                         (long long)index);
                VIDK_TRY(download_decisions(ctx, e, slot, c->s_dl, &got));
                info->d2h_bytes += got;
                VIDK_TRY(vidk_enc_write_stream(e, index, intra, e->st_mv4, e->st_lev, info));
            }
            info->stage_ms[VIDK_ENC_STAGE_STREAM] =
                vidk_cux::event_elapsed(ev[EV_T4], ev[EV_S]) + (vidk_enc_now_ms() - t0);
        } else {
            if (e->stream)
                vidk_log(ctx, VIDK_LOG_DEBUG, "encode: frame %lld: stream coded on the host",
                         (long long)index);
            VIDK_TRY(vidk_enc_write_stream(e, index, intra, h_mv, h_lev, info));
        }
    }
cleanup:
    if (err < 0) {
        (void)cudaStreamSynchronize(s);
        (void)cudaStreamSynchronize(c->s_ent);
        (void)cudaStreamSynchronize(c->s_dl);
        (void)cudaStreamSynchronize(c->s_out);
        (void)cudaStreamSynchronize(c->s_side);
        (void)cudaStreamSynchronize(c->s_stat);
        (void)cudaGetLastError();
    }
    return err;
}
