// The coding loop's kernels on the device (docs/ENCODE_CUDA.md "Unit kernels"): the edge
// extension, the H.264 inter frame's passes (distances, intra estimate, decisions,
// inter_kernel, the intra list and intra_p), the HEVC and the intra wavefronts, the
// statistics. Included once, by encode.cu (host side: streams, events, launches).
#ifndef VIDK_CUDA_ENC_KERN_CUH
#define VIDK_CUDA_ENC_KERN_CUH

#include <cub/block/block_scan.cuh>

#include "dbk_kern.cuh"
#include "enc_warp.cuh"

namespace {

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

// H.264 inter frames: what the decision compares, each partition's vector refined to quarter
// samples and its SATD there (enc_h264_part_dist, enc_h264_refine: the sum of its 4x4
// blocks' vidk_satd4 at each candidate). A half warp per macroblock, lane k the 4x4 block k
// (raster), through the partition shapes in turn: each candidate's SATD of the lane's block;
// the blocks of a partition are the lanes that differ from its first in the bits of
// dist_lanes(shape) only, so xor shuffles over those bits sum them (every lane of the
// partition gets the sum and makes the same choice) and the first writes the SATD and the
// vector. Without sub-8x8 partitions (f.no_sub8x8) only the shapes from 8x8 on (their
// entries are all the decision reads). The half warp of a macroblock's 16x16 partition also
// writes decision pass 0, the seed (enc_h264_seed), into seed_mv / seed_mb.
constexpr int kDistShapes =
    7; // 4x4, 8x4, 4x8, 8x8 (P_8x8's sub types 3, 1, 2, 0), 16x8, 8x16, 16x16
__host__ __device__ constexpr int dist_part(int shape, int k) {
    return enc_h264_cand_part(shape < 4    ? 3
                              : shape == 4 ? 1
                              : shape == 5 ? 2
                                           : 0,
                              shape == 0   ? 3
                              : shape == 1 ? 1
                              : shape == 2 ? 2
                                           : 0,
                              k & 3, k >> 2);
}
// The bits of k (4 j + i) along which a partition of the shape extends.
__host__ __device__ constexpr int dist_lanes(int shape) {
    return shape == 0   ? 0
           : shape == 1 ? 1
           : shape == 2 ? 4
           : shape == 3 ? 5
           : shape == 4 ? 7
           : shape == 5 ? 13
                        : 15;
}
__host__ __device__ inline int dist_shape0(const EncFrame &f) {
    return f.no_sub8x8 ? 3 : 0;
}
// Four bytes from any address: the aligned word holding the first and, where they straddle
// two, the next (inside the row: the planes' rows have W + 16 bytes or more, a whole-sample
// read ends at the picture's last column, both in 4-aligned rows).
__device__ inline uint32_t ld_u4(const uint8_t *p) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint32_t *w = reinterpret_cast<const uint32_t *>(a & ~static_cast<uintptr_t>(3));
    const unsigned sh = static_cast<unsigned>(a & 3u) * 8u;
    const uint32_t lo = __ldg(w);
    return sh ? __funnelshift_r(lo, __ldg(w + 1), sh) : lo;
}

// enc_h264_satd_at of the 4x4 block at (x, y) (x a multiple of 4) for vector v, sw: the
// block's four source rows (words). Where enc_qrows reads without clamping, a row of four
// predicted samples as one word (__vavgu4: (A + B + 1) >> 1 per byte; a whole- or
// half-sample vector reads one plane), and returns true; else false (the caller takes the
// core's sample by sample: the same value).
__device__ __forceinline__ bool satd4_fast(const EncFrame &f, int x, int y, VidkMv v,
                                           const uint32_t *sw, uint32_t *out) {
    EncQRows r;
    if (!enc_qrows(&f, x, y, 4, 4, v, &r)) return false;
    int d[16];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint32_t a = ld_u4(r.a + (ptrdiff_t)j * r.sa);
        const uint32_t p = r.a == r.b ? a : __vavgu4(a, ld_u4(r.b + (ptrdiff_t)j * r.sb));
#pragma unroll
        for (int i = 0; i < 4; i++)
            d[4 * j + i] = (int)(sw[j] >> 8 * i & 255u) - (int)(p >> 8 * i & 255u);
    }
    *out = vidk_satd4(d);
    return true;
}
__device__ inline uint32_t satd4_src(const EncFrame &f, int x, int y, VidkMv v,
                                     const uint32_t *sw) {
    uint32_t s;
    return satd4_fast(f, x, y, v, sw, &s) ? s : enc_h264_satd_at(&f, x, y, 4, 4, v);
}
__device__ inline void satd4_rows(const EncFrame &f, int x, int y, uint32_t *sw) {
#pragma unroll
    for (int j = 0; j < 4; j++)
        sw[j] =
            *reinterpret_cast<const uint32_t *>(f.src[0] + (ptrdiff_t)(y + j) * f.ss[0] + x);
}
__device__ inline uint32_t satd4_at(const EncFrame &f, int x, int y, VidkMv v) {
    uint32_t sw[4];
    satd4_rows(f, x, y, sw);
    return satd4_src(f, x, y, v, sw);
}

// The reference's half-sample planes (EncFrame.qpl): a thread per position of row y.
__global__ void __launch_bounds__(128) qpl_kernel(const EncFrame f, uint8_t *qpl) {
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x) - 3, y = (int)blockIdx.y - 3;
    if (x <= f.W + 1) enc_h264_qpl_fill(&f, qpl, x, y);
}

// enc_h264_refine of a partition from the searched vector im on the lanes of its 4x4 blocks
// (lane at block (bx, by); m: the bits of the lane index along which the partition extends,
// dist_lanes; half: the half warp's mask): each candidate's SATD summed over the lanes (every
// lane holds the sum: the same choices on each). sw: the block's source rows. Returns the
// refined vector, its SATD in *sd. (The eight neighbours of a step computed and summed
// together, their loads and shuffles in flight at once, took 96 registers and were slower:
// docs/PERFORMANCE.md "Session 37".)
__device__ __forceinline__ VidkMv lane_refine(const EncFrame &f, int bx, int by, VidkMv im,
                                              unsigned half, int m, const uint32_t *sw,
                                              uint32_t *sdo) {
    VidkMv c = {(int16_t)(4 * im.x), (int16_t)(4 * im.y)};
    uint32_t sd = satd4_src(f, bx, by, c, sw);
#pragma unroll
    for (int b = 1; b < 16; b <<= 1)
        if (m & b) sd += __shfl_xor_sync(half, sd, b);
    uint32_t best = enc_h264_sub_cost(&f, sd, c);
#pragma unroll 1
    for (int step = 2; step >= 1; step >>= 1) {
        const VidkMv o = c;
#pragma unroll 1
        for (int n = 0; n < 8; n++) {
            const VidkMv v = enc_sub_nb(o, n, step);
            uint32_t sv = satd4_src(f, bx, by, v, sw);
#pragma unroll
            for (int b = 1; b < 16; b <<= 1)
                if (m & b) sv += __shfl_xor_sync(half, sv, b);
            const uint32_t cost = enc_h264_sub_cost(&f, sv, v);
            if (cost < best) best = cost, sd = sv, c = v;
        }
    }
    *sdo = sd;
    return c;
}

// A half warp per task, a task one shape of one macroblock (task j: macroblock j / shapes,
// shape s0 + j % shapes: neighbouring half warps take one macroblock's shapes), the tasks
// strided over the grid's half warps: the grid is what the SMs hold at once (kernels_prepare:
// EncCuda.dist_grid), so every half warp takes nearly the same number of equal tasks and the
// kernel ends in one wave instead of a short second one.
__global__ void __launch_bounds__(128)
    dist_kernel(const EncFrame f, uint32_t *dist, VidkMv *seed_mv, uint16_t *seed_mb) {
    vidk_pdl_launch(); // the first decision pass may be made resident
    const int s0 = dist_shape0(f), ns = kDistShapes - s0;
    const int h = (int)(blockIdx.x * blockDim.x + threadIdx.x) >> 4, k = threadIdx.x & 15;
    const int nh = (int)(gridDim.x * blockDim.x) >> 4, tasks = f.uw * f.uh * ns;
    const unsigned half = 0xffffu << (threadIdx.x & 16);
#pragma unroll 1
    for (int j = h; j < tasks; j += nh) { // the same for the 16 lanes of a half warp
        const int u = j / ns, shape = s0 + j % ns, mbx = u % f.uw, mby = u / f.uw;
        const int bx = 16 * mbx + 4 * (k & 3), by = 16 * mby + 4 * (k >> 2); // the lane's block
        uint32_t sw[4];
        satd4_rows(f, bx, by, sw);
        const int p = dist_part(shape, k), m = dist_lanes(shape);
        const EncPart q = enc_h264_part(mbx, mby, p);
        uint32_t sd;
        const VidkMv c =
            lane_refine(f, bx, by, enc_me_at(&f, q.bs, q.bx, q.by).mv, half, m, sw, &sd);
        if (!(k & m)) {
            dist[ENC_H264_DIST_N * u + p] = sd;
            *enc_h264_pmv(&f, u, p) = c;
            // the 16x16 partition's vector, just written by this thread: the seed
            if (shape == kDistShapes - 1) enc_h264_seed(&f, mbx, mby, seed_mv, seed_mb);
        }
    }
}

// The lanes of each shape's partitions (dist_lanes) against its partition map (dist_part):
// the same partition exactly when k differs from the partition's first block in those bits.
__host__ __device__ constexpr bool dist_lanes_ok() {
    for (int shape = 0; shape < kDistShapes; shape++)
        for (int k = 0; k < 16; k++)
            for (int o = 0; o < 16; o++)
                if ((dist_part(shape, k) == dist_part(shape, o)) !=
                    ((k & ~dist_lanes(shape)) == (o & ~dist_lanes(shape))))
                    return false;
    return true;
}
static_assert(dist_lanes_ok(), "dist_lanes");

// The intra estimate of a P frame: a half warp per macroblock (vidk_encw::lane_intra_est),
// lane 0 writes the macroblock's entry; the lanes past the last macroblock repeat it (whole
// warps: the full mask, as the SIMT emulator's test runs it, tests/test_intra_emu.cpp).
constexpr int kIntraEstThreads = vidk_encw::kEstLanes;
__global__ void __launch_bounds__(kIntraEstThreads)
    intra_est_kernel(const EncFrame f, uint32_t *dist) {
    __shared__ vidk_encw::IntraEstShared S;
    if (f.i4x4 || f.i8x8)
        vidk_encw::w_nxn_rule_fill(S.rule4, S.rule8, (int)threadIdx.x, kIntraEstThreads);
    __syncthreads();
    const int n = f.uw * f.uh, t = (int)(blockIdx.x * kIntraEstThreads + threadIdx.x);
    const int u = min(t >> 4, n - 1), k = t & 15;
    const uint32_t v = vidk_encw::lane_intra_est(f, S, u % f.uw, u / f.uw, k, 0xffffffffu);
    if (!k && t >> 4 < n) dist[ENC_H264_DIST_N * u + ENC_H264_DIST_INTRA] = v;
}

// H.264 inter frames: decision pass `pass` >= 1 (pass 0, the seed, is dist_kernel's), one
// thread per macroblock in each of a block's four warps, 32 macroblocks per block
// (enc_core.h enc_h264_decide_pass's steps): each warp fills the neighbourhood (filled by the
// four warps together, a quarter of its entries each, no faster: 14.6 -> 15.0 us); the
// P_Skip candidate's SATD where its vector changed (40% of a pass on one thread, ncu): the
// 16x16 partition's (f.dist) where the P_Skip vector is the searched 16x16 vector (the same
// sum of the same 4x4 SATDs; about 70% of them on the 1080p mosaic), else computed as
// (macroblock, 4x4 block) items spread over the block's 128 threads, which sum them in
// shared memory (until session 19 each warp computed four rows of every such macroblock on
// its lane: a warp ran them for one lane in need); then the candidates (enc_h264_cand) on
// the warps: warp 0 16x16 and P_Skip, 1 P_8x8, 2 16x8, 3 8x16; each warp picks the winner
// from the costs (enc_h264_pick) and the winner's warp writes it. Measured before (session
// 8, H100) against eight lanes per macroblock (its candidates on parallel lanes) and a warp
// per macroblock (P_8x8's partitions on lanes too): 41 / 46 / 110 us a pass at 1080p: the
// lanes' shared start (the neighbourhood, the partition tables) costs more than they save.
constexpr int kDecideWarps = 4;
__global__ void __launch_bounds__(32 * kDecideWarps)
    decide_kernel(const EncFrame f, const VidkMv *mvi, const uint16_t *mbi, VidkMv *mvo,
                  uint16_t *mbo) {
    __shared__ uint32_t s_c[ENC_H264_CANDS][32], s_sk[32];
    __shared__ unsigned s_w[ENC_H264_CANDS][32];
    __shared__ VidkMv s_sv[32];
    __shared__ int s_list[32];
    vidk_pdl_wait(); // the previous kernel (distances or pass) has completed
    vidk_pdl_launch();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, u = blockIdx.x * 32 + lane;
    const bool on = u < f.uw * f.uh;
    const int mbx = u % f.uw, mby = u / f.uw;
    VidkH264MvNb n;
    VidkMv sv = {0, 0};
    uint32_t satd = 0;
    bool fresh = false, known = false;
    if (on) {
        enc_h264_decide_nb(&f, mbx, mby, mvi, mbi, &n);
        sv = vidk_h264_skip_mv(&n);
        fresh = !enc_h264_skip_kept(&f, mbx, mby, sv, &satd);
        if (fresh) {
            const VidkMv m = enc_h264_cand_mv(&f, mbx, mby, 0, 0, 0, 0); // the searched 16x16
            known = m.x == sv.x && m.y == sv.y;
            if (known) satd = f.dist[ENC_H264_DIST_N * (ptrdiff_t)u + VIDK_ME_PART_16x16];
        }
    }
    const unsigned need = __ballot_sync(0xffffffffu, fresh && !known); // the same in each warp
    if (w == 0) {
        s_sk[lane] = 0, s_sv[lane] = sv;
        if (need >> lane & 1) s_list[__popc(need & ((1u << lane) - 1u))] = lane;
    }
    __syncthreads();
    const int items = 16 * __popc(need);
    for (int at = 0; at < items; at += 32 * kDecideWarps) { // the block's threads alike
        const int it = at + (int)threadIdx.x;
        if (it < items) {
            const int l = s_list[it >> 4], b = it & 15, ul = blockIdx.x * 32 + l;
            const uint32_t v = satd4_at(f, 16 * (ul % f.uw) + 4 * (b & 3),
                                        16 * (ul / f.uw) + 4 * (b >> 2), s_sv[l]);
            atomicAdd(&s_sk[l], v);
        }
    }
    __syncthreads();
    if (on && fresh) {
        if (!known) satd = s_sk[lane];
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

// Row r (8 bytes) of quadrant prediction i (64 bytes) in shared memory, at row r ^ ((i >> 1)
// & 7) of its place: the rows r of 16 consecutive quadrants fall in distinct bank pairs.
__device__ inline uint2 *pred_row(uint8_t *s, int i, int r) {
    return reinterpret_cast<uint2 *>(s + 64 * i + 8 * (r ^ ((i >> 1) & 7)));
}

// A luma job's half: lane h of a pair (lanes 2m, 2m + 1) codes columns 4h..4h+3 of its
// quadrant, 8 rows: with the 4x4 transform the quadrant's blocks h and h + 2, with the 8x8
// one half of the block, its 1-D passes split between the pair by rows, then by columns,
// with xor shuffles between them. The arithmetic is h264_lq_quant's and h264_lq_rec's
// (enc_tmpl.h: the same core functions of h264_core.h and enc_core.h, in the same order for
// every value), so the quadrant's score, levels, bits and reconstruction are theirs.

// The pair's exchange between two layouts of a block: rows (lane h: rows 4h + i, 8 columns,
// r[8 i + c]) and columns (lane h: columns 4h + j, 8 rows, c[4 r + j]); kToCols from rows
// to columns, else back. Each lane keeps its own 4x4 corner and swaps the other with its
// partner (xor shuffles).
template <bool kToCols, typename T>
__device__ inline void pair_exchange(unsigned mask, int h, const T *s, T *d) {
    constexpr int ss = kToCols ? 8 : 4, so = kToCols ? 4 : 16;  // the source's corners
    constexpr int ds = kToCols ? 4 : 8, dof = kToCols ? 16 : 4; // the destination's
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const T x = s[ss * i + j], y = s[ss * i + so + j];
            const T got = __shfl_xor_sync(mask, h ? x : y, 1);
            d[ds * i + j] = h ? got : x;
            d[ds * i + dof + j] = h ? y : got;
        }
}

// h264_lq_quant's half: the transforms and the quantiser of lane h's columns of the quadrant
// at src (pred: its prediction, row r of the quadrant at pred_row(s_pred, pi, r); pc: its
// columns, a word per row); lev: 32 levels (4x4: block h, then block h + 2, raster; 8x8:
// rows 0..7 of the columns, lev[4 r + j]); moving: enc_h264_mb_moving of its macroblock.
// Returns the quadrant's decimation score (both lanes). mask: the lanes running the same
// transform size.
__device__ inline int lq_half_quant(unsigned mask, const EncFrame &f, const uint8_t *src,
                                    int ss, int tx8, int h, uint8_t *s_pred, int pi,
                                    const uint32_t *pc, int16_t *lev, int moving) {
    const int qbits = (tx8 ? 16 : 15) + f.qp / 6;
    const int32_t dz = enc_h264_inter_round(qbits, moving);
    if (!tx8) {
        int score = 0;
#pragma unroll
        for (int bi = 0; bi < 2; bi++) {
            ENC_ALIGN(16) int32_t w[16];
            vidk_h264_sub_fdct(4, w, src + 4 * bi * ss + 4 * h, ss,
                               reinterpret_cast<const uint8_t *>(pc + 4 * bi), 4);
            (void)vidk_h264_quant(16, lev + 16 * bi, w, f.mf4y, qbits, dz);
            score += enc_decimate_score(lev + 16 * bi, 4, 0);
        }
        return score + __shfl_xor_sync(mask, score, 1);
    }
    int32_t a[32], b[32];
#pragma unroll
    for (int i = 0; i < 4; i++) { // rows 4h + i: the residual, the row transform
        const int r = 4 * h + i;
        const uint2 s = *reinterpret_cast<const uint2 *>(src + (ptrdiff_t)r * ss);
        const uint2 p = *pred_row(s_pred, pi, r);
#pragma unroll
        for (int c = 0; c < 4; c++) {
            a[8 * i + c] = (int32_t)(s.x >> 8 * c & 255u) - (int32_t)(p.x >> 8 * c & 255u);
            a[8 * i + 4 + c] = (int32_t)(s.y >> 8 * c & 255u) - (int32_t)(p.y >> 8 * c & 255u);
        }
        vidk_h264_ftx8_1d(a + 8 * i, a + 8 * i, 1);
    }
    pair_exchange<true>(mask, h, a, b);
#pragma unroll
    for (int j = 0; j < 4; j++)
        vidk_h264_ftx8_1d(b + j, b + j, 4);
    uint64_t m = 0; // enc_decimate_score's scan-order bits, this lane's columns
    int big = 0;
#pragma unroll
    for (int r = 0; r < 8; r++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int at = 8 * r + j; // + 4 h
            const int v = vidk_h264_quant1(
                b[4 * r + j], (uint32_t)(h ? f.mf8y[at + 4] : f.mf8y[at]), qbits, (uint32_t)dz);
            lev[4 * r + j] = (int16_t)v;
            m |= (uint64_t)(v != 0) << (h ? enc_izz8[at + 4] : enc_izz8[at]);
            big |= v > 1 || v < -1;
        }
    m |= __shfl_xor_sync(mask, m, 1);
    big |= __shfl_xor_sync(mask, big, 1);
    return enc_decimate_m(m, big, 8, 0);
}

// h264_lq_rec's half: the levels zeroed when `zero`, the reconstruction of lane h's columns
// into pc; returns the quadrant's bit estimate and *nnz its non-zero levels (both lanes).
__device__ inline unsigned lq_half_rec(unsigned mask, const EncFrame &f, int tx8, int zero,
                                       int h, int16_t *lev, uint32_t *pc, int *nnz) {
    if (zero)
#pragma unroll
        for (int k = 0; k < 32; k++)
            lev[k] = 0;
    uint8_t *out = reinterpret_cast<uint8_t *>(pc);
    if (!tx8) {
        unsigned bits = 0;
        int n = 0;
#pragma unroll
        for (int bi = 0; bi < 2; bi++) {
            int nz;
            bits += enc_block_bits(lev + 16 * bi, 16, &nz);
            n += nz;
            if (nz)
                vidk_h264_deq_idct_add(4, out + 16 * bi, 4, lev + 16 * bi, f.ls4y, f.qp,
                                       (const int32_t *)0);
        }
        *nnz = n + __shfl_xor_sync(mask, n, 1);
        return bits + __shfl_xor_sync(mask, bits, 1);
    }
    int n;
    unsigned bits = enc_level_bits(lev, 32, &n);
    bits += __shfl_xor_sync(mask, bits, 1);
    n += __shfl_xor_sync(mask, n, 1);
    *nnz = n;
    const unsigned live = __ballot_sync(mask, n != 0); // the pairs with levels
    if (n) {
        const int per = f.qp / 6;
        uint32_t t[32], a[32];
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int at = 8 * r + j;
                t[4 * r + j] =
                    vidk_h264_dequant1(lev[4 * r + j], h ? f.ls8y[at + 4] : f.ls8y[at], per, 6);
            }
        pair_exchange<false>(live, h, t, a);
#pragma unroll
        for (int i = 0; i < 4; i++)
            vidk_h264_itx8_1d(a + 8 * i, a + 8 * i, 1);
        pair_exchange<true>(live, h, a, t);
#pragma unroll
        for (int j = 0; j < 4; j++)
            vidk_h264_itx8_1d(t + j, t + j, 4);
#pragma unroll
        for (int k = 0; k < 32; k++)
            out[k] = (uint8_t)vidk_h264_add_clip(out[k], vidk_h264_round6(t[k]));
    }
    return bits + vidk_ue_bits((unsigned)n);
}

// Luma quadrant q's prediction and measures on a pair of lanes: lane h forms rows
// 4h..4h+3 (its 4x4 blocks 2h, 2h + 1, each at its vector mq[h n4 + b]) into shared memory
// (quadrant pi's place) and, for the energy map, into rec; with `measure`, the quadrant's
// enc_h264_tx_measure sums into *s4, *s8 (both lanes): the SATD of its blocks, the 8x8
// Hadamard transform's rows on its rows, then its columns, as enc_h264_tx_measure computes
// them (vidk_satd4, enc_had8_1d; mask: the lanes measuring).
// kB: a B frame's quadrant, from the lists in use with the vectors mq (list 0) and mq1 (list
// 1; enc_h264_b_pred_blk); else from list 0 alone.
template <bool kB>
__device__ inline void luma_pred_half(unsigned mask, const EncFrame &f, int xq, int yq,
                                      const VidkMv *mq, const VidkMv *mq1, int use, int n4,
                                      int h, uint8_t *s_pred, int pi, bool measure,
                                      uint32_t *s4, uint32_t *s8) {
    ENC_ALIGN(16) uint8_t out[32]; // rows 4h..4h+3 of the quadrant, 8 bytes each
#pragma unroll
    for (int b = 0; b < 2; b++)
        if (kB)
            enc_h264_b_pred_blk(&f, xq + 4 * b, yq + 4 * h, 4, mq[h * n4 + b], mq1[h * n4 + b],
                                use, out + 4 * b, 8);
        else
            enc_mc_luma(&f, xq + 4 * b, yq + 4 * h, 4, 4, mq[h * n4 + b], out + 4 * b, 8);
    const uint2 *o = reinterpret_cast<const uint2 *>(out);
#pragma unroll
    for (int r = 0; r < 4; r++)
        *pred_row(s_pred, pi, 4 * h + r) = o[r];
    if (f.energy)
#pragma unroll
        for (int r = 0; r < 4; r++)
            *reinterpret_cast<uint2 *>(f.rec[0] + (ptrdiff_t)(yq + 4 * h + r) * f.cs[0] + xq) =
                o[r];
    if (!measure) return;
    int d[32], e[32];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const uint2 sv = *reinterpret_cast<const uint2 *>(
            f.src[0] + (ptrdiff_t)(yq + 4 * h + r) * f.ss[0] + xq);
#pragma unroll
        for (int c = 0; c < 4; c++) {
            d[8 * r + c] = (int)(sv.x >> 8 * c & 255u) - (int)(o[r].x >> 8 * c & 255u);
            d[8 * r + 4 + c] = (int)(sv.y >> 8 * c & 255u) - (int)(o[r].y >> 8 * c & 255u);
        }
    }
    uint32_t a = 0;
#pragma unroll
    for (int b = 0; b < 2; b++) {
        int t[16];
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                t[4 * j + i] = d[8 * j + 4 * b + i];
        a += vidk_satd4(t);
    }
#pragma unroll
    for (int r = 0; r < 4; r++)
        enc_had8_1d(d + 8 * r, 1);
    pair_exchange<true>(mask, h, d, e);
#pragma unroll
    for (int j = 0; j < 4; j++)
        enc_had8_1d(e + j, 4);
    uint32_t sum = 0;
#pragma unroll
    for (int k = 0; k < 32; k++)
        sum += (uint32_t)vidk_iabs(e[k]);
    *s4 = a + __shfl_xor_sync(mask, a, 1);
    *s8 = sum + __shfl_xor_sync(mask, sum, 1);
}

// Chroma plane p of an inter macroblock on a pair of lanes (enc_tmpl.h h264_chroma_plane's
// steps): lane h codes its 4x4 blocks 2h, 2h + 1; the pair meets for the plane's decimation
// score and its four DC coefficients (each lane then runs the DC step alike). *bits, *nnz:
// the plane's bit estimate and non-zero levels (both lanes).
__device__ inline void chroma_half(unsigned mask, const EncFrame &f, int mbx, int mby, int p,
                                   int h, unsigned *bits, unsigned *nnz) {
    const EncOps ops = {0};
    ENC_ALIGN(16) int16_t lev[2][16];
    ENC_ALIGN(16) int16_t dcl[16];
    int32_t w2[2], wdc[4], dc[4];
    int score = enc_cu_h264_cp_fwd(&ops, &f, mbx, mby, 0, p, 2 * h, 2, lev, w2);
    score += __shfl_xor_sync(mask, score, 1);
    const int32_t g0 = __shfl_xor_sync(mask, w2[0], 1), g1 = __shfl_xor_sync(mask, w2[1], 1);
    wdc[0] = h ? g0 : w2[0], wdc[1] = h ? g1 : w2[1];
    wdc[2] = h ? w2[0] : g0, wdc[3] = h ? w2[1] : g1;
    int ndc = 0, n = 0;
    const unsigned bdc = enc_cu_h264_cp_dc(&ops, &f, 0, wdc, dcl, dc, &ndc);
    unsigned b =
        enc_cu_h264_cp_rec(&ops, &f, mbx, mby, p, 2 * h, 2, score < 7, lev, dcl, dc, &n);
    b += __shfl_xor_sync(mask, b, 1);
    n += __shfl_xor_sync(mask, n, 1);
    *bits = b + bdc, *nnz = (unsigned)(n + ndc);
}

// H.264 inter frames: enc_tmpl.h h264_p_mb's steps spread over the twelve warps of a block,
// 32 macroblocks per block, every step's work on pairs of lanes (session 25). Warps 0-7
// first form the chroma predictions (quadrant w & 3 of plane 1 + (w >> 2) of every
// macroblock, a lane each) while warp 8 counts the header's bits (only the statistics need
// them). Then warps 0-7 form the luma predictions into shared memory and measure them for
// the transform size, a pair of lanes per (macroblock, quadrant) (luma_pred_half), while
// warps 8-11 code the chroma planes, a pair per (macroblock, plane) (chroma_half). Then the
// luma is coded as jobs, a (macroblock, quadrant) each, on a pair of lanes (lq_half_quant,
// lq_half_rec), from the predictions in shared memory: the macroblocks that chose the 4x4
// transform first, those that chose 8x8 after, four macroblocks a warp, so that a warp runs
// one transform size (one warp at most both); warp 9 writes the maps beside the
// quantisation. The quadrants' decimation scores meet in shared memory (h264_luma_try's two
// steps: the same sums); warp 8 writes the statistics.
//
// Until session 25 six warps, a lane per (macroblock, quadrant) or per (macroblock, plane);
// the pairs halve each lane's chain (H200, docs/PERFORMANCE.md). Capped at 80 registers so
// that two blocks fit an SM (kMinBlocks = 2; 3 where the grid has more than two blocks per
// SM). 9.9 kB of shared memory: three blocks fit in the 32 kB configuration (with their 1 kB
// each). The measures' room (until the job list) is taken by the scores and then the bits.
//
// kB: the inter macroblocks of a B frame (enc_tmpl.h h264_b_mb: the same steps, each quadrant's
// prediction from its lists; since session 45, a thread per macroblock before).
constexpr int kInterWarps = 12, kLumaWarps = 8;
template <int kMinBlocks, bool kB = false>
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
    __shared__ unsigned s_c[2][2][32]; // per chroma plane: bits, non-zero levels
    vidk_pdl_wait();                   // the last decision pass has completed
    const int lane = threadIdx.x & 31, role = threadIdx.x >> 5, u = blockIdx.x * 32 + lane;
    const unsigned w = u < f.uw * f.uh ? f.dmb[u] : ENC_MBI_INTRA;
    const bool on = !(w & ENC_MBI_INTRA); // intra: coded by intra_p_kernel
    const int mbx = u % f.uw, mby = u / f.uw, x0 = 16 * mbx, y0 = 16 * mby, n4 = f.W / 4;
    const int tx8_ok = (w & 3) != 3 || !(w & 0x3fcu);
    const VidkMv *mv4 = f.dmv + (ptrdiff_t)(4 * mby) * n4 + 4 * mbx;
    EncUnitStat st = enc_stat_zero();
    VidkH264MvNb nb;
    if (on && role == 8) { // (see above)
        if (kB)
            enc_cu_h264_b_head(&f, mbx, mby, w, &st);
        else
            (void)enc_cu_h264_p_head(&f, mbx, mby, w, &nb, &st);
    }
    if (on && role < kLumaWarps) { // quadrant role & 3's chroma prediction, one plane, into rec
        const int q = role & 3;
        const ptrdiff_t o = 2 * (q >> 1) * n4 + 2 * (q & 1);
        if (kB)
            enc_h264_b_pred_cq(&f, mbx, mby, 1 + (role >> 2), q, mv4[o],
                               f.dmvb[(ptrdiff_t)(4 * mby) * n4 + 4 * mbx + o],
                               enc_h264_b_use4(w, (q >> 1) * 8 + (q & 1) * 2));
        else
            enc_mc_area(&f, x0 + 8 * (q & 1), y0 + 8 * (q >> 1), 8, 8, mv4 + o, n4,
                        2u << (role >> 2));
    }
    __syncthreads(); // the chroma planes are coded from it
    {
        // the pair's macroblock m of the block: warps 0-7 (m, quadrant, h), 8-11 (m, plane, h)
        const int job = (role < kLumaWarps ? role : role - kLumaWarps) * 32 + lane;
        const int m = role < kLumaWarps ? job >> 3 : job >> 2, h = job & 1;
        const int um = blockIdx.x * 32 + m, mx = um % f.uw, my = um / f.uw;
        const unsigned wm = um < f.uw * f.uh ? f.dmb[um] : ENC_MBI_INTRA;
        const bool onm = !(wm & ENC_MBI_INTRA);
        const bool okm = (wm & 3) != 3 || !(wm & 0x3fcu); // the 8x8 transform allowed
        const unsigned mk = __ballot_sync(0xffffffffu, onm && (role >= kLumaWarps || okm));
        if (onm && role < kLumaWarps) {
            const int q = (job >> 1) & 3, xq = 16 * mx + 8 * (q & 1),
                      yq = 16 * my + 8 * (q >> 1);
            uint32_t s4, s8;
            const ptrdiff_t o = (ptrdiff_t)(yq / 4) * n4 + xq / 4;
            luma_pred_half<kB>(mk, f, xq, yq, f.dmv + o, kB ? f.dmvb + o : f.dmv + o,
                               kB ? enc_h264_b_use4(wm, (q >> 1) * 8 + (q & 1) * 2) : 1, n4, h,
                               s_pred, q * 32 + m, okm, &s4, &s8);
            if (okm && !h) s_x.m[0][q][m] = s4, s_x.m[1][q][m] = s8;
        }
        if (onm && role >= kLumaWarps) {
            const int p = 1 + ((job >> 1) & 1);
            unsigned bits, nz;
            chroma_half(mk, f, mx, my, p, h, &bits, &nz);
            if (!h) s_c[p - 1][0][m] = bits, s_c[p - 1][1][m] = nz;
        }
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
    __syncthreads(); // the job list
    const int job = role * 32 + lane, k = job >> 3, q = (job >> 1) & 3, h = job & 1;
    const bool busy = role < kLumaWarps && k < s_cnt[1];
    const int jm = busy ? s_list[k] : 0, jt = k >= s_cnt[0];
    // the lanes of each transform size (a pair is both in or both out)
    const unsigned m4 = __ballot_sync(0xffffffffu, busy && !jt),
                   m8 = __ballot_sync(0xffffffffu, busy && jt);
    const int ju = blockIdx.x * 32 + jm, jx = 16 * (ju % f.uw), jy = 16 * (ju / f.uw);
    const int xq = jx + 8 * (q & 1), yq = jy + 8 * (q >> 1);
    const VidkMv *jmv = f.dmv + (ptrdiff_t)(jy / 4) * n4 + jx / 4; // the job's vectors
    // (B: list 1's too; a list a block does not use holds (0, 0))
    const VidkMv *jmv1 = kB ? f.dmvb + (ptrdiff_t)(jy / 4) * n4 + jx / 4 : jmv;
    ENC_ALIGN(16) int16_t lev[32];
    uint32_t pc[8]; // the prediction's columns 4h..4h+3, then their reconstruction
    if (busy) {
#pragma unroll
        for (int r = 0; r < 8; r++) {
            const uint2 p = *pred_row(s_pred, q * 32 + jm, r);
            pc[r] = h ? p.y : p.x;
        }
        const int score = lq_half_quant(
            jt ? m8 : m4, f, f.src[0] + (ptrdiff_t)yq * f.ss[0] + xq, f.ss[0], jt, h, s_pred,
            q * 32 + jm, pc, lev, enc_h264_mb_moving(jmv, jmv1, n4, kB ? 3 : 1));
        if (!h) s_x.c.score[q][jm] = score;
    }
    // the maps beside the quantisation (rec still holds the prediction the energy map reads)
    if (on && role == 9) {
        if (kB)
            enc_cu_h264_b_maps(&f, mbx, mby, mv4, f.dmvb + (ptrdiff_t)(4 * mby) * n4 + 4 * mbx,
                               n4);
        else
            enc_cu_h264_p_maps(&f, mbx, mby, mv4, n4);
    }
    __syncthreads(); // every quadrant's score is known
    if (busy) {
        const int total =
            s_x.c.score[0][jm] + s_x.c.score[1][jm] + s_x.c.score[2][jm] + s_x.c.score[3][jm];
        int nz;
        const unsigned bits = lq_half_rec(jt ? m8 : m4, f, jt,
                                          total < 6 || s_x.c.score[q][jm] < 4, h, lev, pc, &nz);
        if (!h) s_x.c.bits[q][jm] = (uint16_t)bits, s_x.c.nz[q][jm] = (uint16_t)nz;
        if (f.lev[0]) { // the levels of the lane's columns (enc_tmpl.h h264_lq_store)
            int16_t *d = f.lev[0] + (ptrdiff_t)yq * f.ls_[0] + xq + 4 * h;
#pragma unroll
            for (int r = 0; r < 8; r++) // 4x4: block h, then h + 2 (4 levels a row each)
                enc_copy_row16(d + (ptrdiff_t)r * f.ls_[0], lev + 4 * r, 4);
        }
        uint8_t *rec = f.rec[0] + (ptrdiff_t)yq * f.cs[0] + xq + 4 * h;
#pragma unroll
        for (int r = 0; r < 8; r++)
            *reinterpret_cast<uint32_t *>(rec + (ptrdiff_t)r * f.cs[0]) = pc[r];
    }
    __syncthreads(); // the quadrants' bits
    if (on && role == 8) {
        for (int b = 0; b < 4; b++)
            st.bits_level += s_x.c.bits[b][lane], st.nnz[0] += s_x.c.nz[b][lane];
        st.bits_level += s_c[0][0][lane] + s_c[1][0][lane];
        st.nnz[1] += s_c[0][1][lane], st.nnz[2] += s_c[1][1][lane];
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
// chroma; with I_NxN three), once the intra ones among their left, top-left and top neighbours
// (what the prediction reads; with I_NxN the top-right one too) are. A block takes the next
// ticket and codes that macroblock of the list, then the next: a macroblock waits only for ones
// with lower tickets, taken by running blocks that finish them first, so the waits cannot
// deadlock. Flags cross with acquire / release, samples through L2 (ENC_LDREC), as in the
// wavefront below.
constexpr int kIntraPBlocks = 512;
// The threads of an H.264 intra block (enc_warp.cuh w_h264_i_mb): luma and chroma warps, and
// with I_NxN a third (the Intra_8x8 candidate).
inline unsigned h264_i_threads(const EncFrame &f) {
    return f.i4x4 || f.i8x8 ? 96u : 64u;
}
__global__ void __launch_bounds__(96)
    intra_p_kernel(const EncFrame f, const int *list, int *icnt, int *flag) {
    __shared__ vidk_encw::H264Scratch S;
    __shared__ int s_t;
    const int t = threadIdx.x;
    bool ruled = !(f.i4x4 || f.i8x8); // the I_NxN rule tables, once the block has work
    for (;;) { // tickets until the list is done (a grid of at most kIntraPBlocks blocks)
        if (t == 0) s_t = atomicAdd(&icnt[1], 1);
        __syncthreads();
        const int k = s_t;
        if (k >= icnt[0]) return; // the whole block
        if (!ruled) vidk_encw::w_h264_nxn_rules(f, S.n, t, (int)blockDim.x), ruled = true;
        const int u = list[k], x = u % f.uw, y = u / f.uw;
        if (t < 4) {
            // left, top, top-left; I_NxN: top-right (its blocks' upper-right neighbours)
            const int nx = t == 3 ? x + 1 : x - (t != 1), ny = y - (t != 0);
            if ((t < 3 || f.i4x4 || f.i8x8) && nx >= 0 && nx < f.uw && ny >= 0 &&
                (ny == y || !enc_h264_slice_start(y, f.uh, f.slices)) &&
                (f.dmb[ny * f.uw + nx] & ENC_MBI_INTRA))
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
// units), then the block's threads meet: HEVC (three warps per block) unit x + 1, the top-right
// one; H.264 (two warps per block) unit x:
// Intra_16x16 and chroma prediction read only the left, top-left and top ones (8.3.3,
// 8.3.4), so its rows follow one macroblock apart and the critical path is uw + uh - 1 units
// instead of uw + 2 uh - 2 (with I_NxN, whose blocks read their upper-right neighbours
// (8.3.1.2, 8.3.2.2), unit x + 1 again). An H.264 row that starts a slice reads nothing
// above (the neighbours outside the slice are not available, 6.4.x) and waits for none: each
// slice is a wavefront of its own (the default CABAC's slices of four rows at 1080p,
// vidk_enc_slices: a critical path of uw + 6 or uw + 3 units instead of uw + 2 uh - 2 or
// uw + uh - 1). Progress counters in global memory, acquire / release.
// Every row's block is resident at once (a few hundred small blocks at most), so the waits
// cannot deadlock. Neighbour samples are read through L2 (ENC_LDREC), never from a stale L1
// line.
__device__ inline void wave_wait(const int *prog, int r, int need, int t) {
    if (r > 0 && t == 0) flag_wait(prog + r - 1, need);
}
__device__ inline void wave_release(int *prog, int r, int x, int lane) {
    __syncwarp(); // every lane's reconstruction before the release
    if (lane == 0) flag_release(prog + r, x + 1);
}

// HEVC intra frames: one block of three warps (luma, Cb, Cr) per CTU row (enc_warp.cuh).
__global__ void __launch_bounds__(vidk_encw::kHevcIThreads)
    hevc_intra_kernel(const EncFrame f, int *progress) {
    __shared__ vidk_encw::Mats M;
    __shared__ vidk_encw::HevcIScratch S;
    vidk_encw::build_mats(M);
    __syncthreads();
    const int r = blockIdx.x, t = threadIdx.x;
    for (int x = 0; x < f.uw; x++) {
        wave_wait(progress, r, min(x + 2, f.uw), t);
        __syncthreads();
        vidk_encw::w_hevc_i_ctu(f, x, r, S, M, t); // its last step ends with a block barrier
        wave_release(progress, r, x, t);
    }
}

// H.264 deblocking filter (VidkEncParams.deblock), in two kernels.
//
// deblock_bs_kernel: every macroblock's 32 bS values (enc_core.h enc_h264_dbk_bs_at: 2
// directions x 4 edges x 4 segments), a thread each, into bs[32 * unit]: they depend only on
// the coded frame, not on the filtering.
constexpr int kDbkBsThreads = 256;
__global__ void __launch_bounds__(kDbkBsThreads)
    deblock_bs_kernel(const EncFrame f, uint8_t *bs) {
    const int t = (int)(blockIdx.x * kDbkBsThreads + threadIdx.x), u = t >> 5;
    if (u < f.uw * f.uh) bs[t] = (uint8_t)enc_h264_dbk_bs_at(&f, u % f.uw, u / f.uw, t & 31);
}

// deblock_kernel: dbk_kern.cuh.

// H.264 intra frames: one block of two warps (luma, chroma; with I_NxN three) per macroblock
// row (enc_warp.cuh).
__global__ void __launch_bounds__(96) h264_intra_kernel(const EncFrame f, int *progress) {
    __shared__ vidk_encw::H264Scratch S;
    const int r = blockIdx.x, t = threadIdx.x, tr = f.i4x4 || f.i8x8;
    const bool top0 = enc_h264_slice_start(r, f.uh, f.slices) != 0;
    if (tr)
        vidk_encw::w_h264_nxn_rules(f, S.n, t, (int)blockDim.x); // (the loop's barrier follows)
    for (int x = 0; x < f.uw; x++) {
        // left, top-left, top (I_NxN: top-right); none above where a slice starts: the
        // slices' wavefronts run side by side
        if (!top0) wave_wait(progress, r, min(x + 1 + tr, f.uw), t);
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

} // namespace

#endif
