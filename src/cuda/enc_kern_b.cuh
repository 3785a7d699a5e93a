// H.264 B frames on the device (docs/ENCODE.md §16, docs/ENCODE_CUDA.md "B frames"): the
// steps of the CPU driver (src/enc/encode.c), each a kernel over enc_core.h's functions, the
// same source as the CPU backends. f.l1 points to a device copy of the frame with list 1's
// reference (EncCuda.d_f1).
#ifndef VIDK_CUDA_ENC_KERN_B_CUH
#define VIDK_CUDA_ENC_KERN_B_CUH

namespace {

constexpr int kBDistThreads = 128;

// enc_h264_b_dist on a half warp per macroblock and task (blockIdx.y), a lane per 4x4 block;
// the tasks write disjoint entries: 0 both lists' 16x16 vectors refined (lane_refine, as
// dist_kernel's 16x16 partition), the bi-prediction's SATD (enc_h264_b_satd4 summed), then
// lane 0 decision pass 0 (enc_h264_b_seed reads only those); 1, 2 the same for the 16x8
// (shape 4) and the 8x16 (shape 5) partitions, each lane in its own (enc_h264_b_part_dist;
// the partition's lanes: dist_lanes); 3 the intra estimate (lane_intra_est). (One task a
// half warp: four times the warps of one half warp doing all, each a quarter as long.)
constexpr int kBDistTasks = 4;
__global__ void __launch_bounds__(kBDistThreads)
    b_dist_kernel(const EncFrame f, VidkMv *mvo0, VidkMv *mvo1, uint16_t *mbo) {
    __shared__ vidk_encw::IntraEstShared S;
    static_assert(kBDistThreads <= vidk_encw::kEstLanes, "IntraEstShared");
    const int task = (int)blockIdx.y;
    if (task == 3 && (f.i4x4 || f.i8x8)) {
        vidk_encw::w_nxn_rule_fill(S.rule4, S.rule8, (int)threadIdx.x, kBDistThreads);
        __syncthreads();
    }
    const int t = (int)(blockIdx.x * kBDistThreads + threadIdx.x), u = t >> 4, k = t & 15;
    if (u >= f.uw * f.uh) return; // the whole half warp
    const unsigned half = 0xffffu << (threadIdx.x & 16);
    const int mbx = u % f.uw, mby = u / f.uw, bx = 16 * mbx + 4 * (k & 3),
              by = 16 * mby + 4 * (k >> 2);
    const EncFrame &g = *f.l1;
    uint32_t *d = const_cast<uint32_t *>(f.dist) + ENC_H264_DIST_N * (ptrdiff_t)u;
    if (task == 3) {
        const uint32_t iv = vidk_encw::lane_intra_est(f, S, mbx, mby, k, half);
        if (!k) d[ENC_H264_DIST_INTRA] = iv;
        return;
    }
    uint32_t sw[4];
    satd4_rows(f, bx, by, sw); // (g: the same source)
    if (task == 0) {
        uint32_t s0, s1;
        const VidkMv c0 = lane_refine(f, bx, by, enc_me_at(&f, VIDK_BLOCK_16x16, mbx, mby).mv,
                                      half, 15, sw, &s0);
        const VidkMv c1 = lane_refine(g, bx, by, enc_me_at(&g, VIDK_BLOCK_16x16, mbx, mby).mv,
                                      half, 15, sw, &s1);
        const VidkMv a[4] = {c0, c0, c0, c0}, b[4] = {c1, c1, c1, c1};
        uint32_t sb = enc_h264_b_satd4(&f, mbx, mby, k, a, b, 0xff);
#pragma unroll
        for (int o = 1; o < 16; o <<= 1)
            sb += __shfl_xor_sync(half, sb, o);
        if (k) return;
        d[ENC_H264_BDIST_L0] = s0, d[ENC_H264_BDIST_L1] = s1, d[ENC_H264_BDIST_BI] = sb;
        *enc_h264_pmv(&f, u, VIDK_ME_PART_16x16) = c0;
        *enc_h264_pmv(&g, u, VIDK_ME_PART_16x16) = c1;
        enc_h264_b_seed(&f, mbx, mby, mvo0, mvo1, mbo);
        return;
    }
    // enc_h264_b_part_dist: the 16x8 (shape 4) or the 8x16 (shape 5) partitions
    const int shape = 3 + task, pp = dist_part(shape, k), m = dist_lanes(shape),
              p = pp - VIDK_ME_PART_16x8;
    const EncPart q = enc_h264_part(mbx, mby, pp);
    uint32_t t0, t1;
    const VidkMv e0 =
        lane_refine(f, bx, by, enc_me_at(&f, q.bs, q.bx, q.by).mv, half, m, sw, &t0);
    const VidkMv e1 =
        lane_refine(g, bx, by, enc_me_at(&g, q.bs, q.bx, q.by).mv, half, m, sw, &t1);
    const VidkMv pa[4] = {e0, e0, e0, e0}, pb[4] = {e1, e1, e1, e1};
    uint32_t tb = enc_h264_b_satd4(&f, mbx, mby, k, pa, pb, 0xff);
#pragma unroll
    for (int o = 1; o < 16; o <<= 1)
        if (m & o) tb += __shfl_xor_sync(half, tb, o);
    if (!(k & m)) { // the partition's first lane
        uint32_t *dp = d + ENC_H264_BDIST_PART + 3 * p;
        dp[0] = t0, dp[1] = t1, dp[2] = tb;
        *enc_h264_pmv(&f, u, pp) = e0;
        *enc_h264_pmv(&g, u, pp) = e1;
    }
}

// Decision pass >= 1 against the previous pass's planes (enc_h264_b_decide_pass): a half
// warp per macroblock. Its lanes fill the two neighbourhoods in shared memory (an entry and
// list a lane), each derives direct (the same on each), lane k computes the SATD of direct's
// 4x4 block k (summed over the half) and lane j < ENC_H264_B_MVD_TASKS mvd-bits task j, then
// lane 0 decides (enc_h264_b_decide_with) from them. (Until session 45 a thread per
// macroblock: 2 warps an SM at 1080p, 107 us a pass.)
constexpr int kBDecideThreads = 128;
__global__ void __launch_bounds__(kBDecideThreads)
    b_decide_kernel(const EncFrame f, const VidkMv *mvi0, const VidkMv *mvi1,
                    const uint16_t *mbi, VidkMv *mvo0, VidkMv *mvo1, uint16_t *mbo) {
    __shared__ VidkH264MvNb s_n[kBDecideThreads / 16][2];
    const int t = (int)(blockIdx.x * kBDecideThreads + threadIdx.x), u = t >> 4, k = t & 15;
    if (u >= f.uw * f.uh) return; // the whole half warp
    const unsigned half = 0xffffu << (threadIdx.x & 16);
    const int mbx = u % f.uw, mby = u / f.uw, row0 = enc_h264_row0(&f, mby);
    VidkH264MvNb *n = s_n[threadIdx.x >> 4];
    for (int e = k; e < 2 * VIDK_H264_MVNB_ENTRIES; e += 16) {
        const int l = e >= VIDK_H264_MVNB_ENTRIES;
        vidk_h264_mvnb_entry(&n[l], e - l * VIDK_H264_MVNB_ENTRIES, l ? mvi1 : mvi0, f.W / 4,
                             mbi, ENC_MBI_INTRA, l, f.uw, f.uh, row0, mbx, mby);
    }
    __syncwarp(half);
    VidkMv dv0[4], dv1[4];
    const int duse = enc_h264_direct(enc_h264_col_zero4(&f, mbx, mby), &n[0], &n[1], dv0, dv1);
    uint32_t sd = enc_h264_b_satd4(&f, mbx, mby, k, dv0, dv1, duse * 0x55);
#pragma unroll
    for (int o = 1; o < 16; o <<= 1)
        sd += __shfl_xor_sync(half, sd, o);
    const unsigned bj =
        k < ENC_H264_B_MVD_TASKS ? enc_h264_b_mvd_task(&f, u, &n[0], &n[1], k) : 0u;
    unsigned bits[ENC_H264_B_MVD_TASKS];
#pragma unroll
    for (int j = 0; j < ENC_H264_B_MVD_TASKS; j++)
        bits[j] = __shfl_sync(half, bj, j, 16);
    if (!k) enc_h264_b_decide_with(&f, mbx, mby, bits, duse, dv0, dv1, sd, mvo0, mvo1, mbo);
}

// The direct macroblocks' final form (enc_h264_b_direct_final) in raster order's result: a
// warp per macroblock row, every row's block resident at once. Only direct macroblocks change
// ("pending": a word with the direct bit and without the intra bit in init, the words before
// the kernel), so only they are visited. A pending macroblock's outcome goes down to the row
// below through a mailbox (as deblock_kernel's): its final word and the vectors of its
// bottom 4x4 row in both lists (the entries B, C, D of the neighbourhoods below), each 32-bit
// value beside the frame's tag in one 64-bit word (relaxed stores and loads, single-copy
// atomic: a word with this frame's tag is the final one; no fence, no progress counter).
// Everything else a step reads is in shared memory (b_direct_smem), loaded by the warp's
// lanes before the first step: its row's words (each pending macroblock's replaced by its
// outcome when decided), colZeroFlags (enc_h264_col_zero4) and vectors, one per 8x8 quadrant
// and list (a B macroblock's vectors are: 16x16, 16x8, 8x16 and direct ones alike), and of the
// row above the words and the lower quadrants' vectors (those of the macroblocks not pending
// were final before the kernel). So a step waits on global memory only for the mailbox, and
// for the reference samples where two predictions are weighed. The macroblock's two
// neighbourhoods are built an entry a lane (lanes 0-25, both lists: vidk_h264_mvnb_put /
// _own) in shared memory, then every lane derives the vectors (enc_h264_b_direct_from, the
// same result on each); where the explicit and the direct predictions are to be weighed,
// lanes 0-15 compute the explicit one's 4x4 SATDs, lanes 16-31 the direct one's, each half
// summing them; lane 0 writes the outcome to the planes, lanes 0-8 to the row's state and
// post it.
// A macroblock's words of the mailbox (of its kDbkMail): list 0's 4 vectors, list 1's, word.
constexpr int kBMail = 9;
__device__ inline bool b_direct_pending(unsigned w) {
    return !(w & ENC_MBI_INTRA) && (w & ENC_MBI_DIRECT);
}
__device__ inline uint32_t b_mv_bits(VidkMv v) {
    return (uint32_t)(uint16_t)v.x | (uint32_t)(uint16_t)v.y << 16;
}
__device__ inline VidkMv b_bits_mv(uint32_t b) {
    return VidkMv{(int16_t)(b & 0xffffu), (int16_t)(b >> 16)};
}
// A pending macroblock's posted word and its vectors of column c (list 0, list 1), once
// all three carry the frame's tag: the three loads in flight together (one wait on the L2,
// not three in a row), those still stale loaded again.
__device__ inline void b_mail_wait(const unsigned long long *m, int c, unsigned tag,
                                   unsigned *w, VidkMv *v0, VidkMv *v1) {
    unsigned long long a = dbk_mail_ld(m + 8), b = dbk_mail_ld(m + c),
                       d = dbk_mail_ld(m + 4 + c);
    for (;;) {
        const bool sa = (unsigned)(a >> 32) != tag, sb = (unsigned)(b >> 32) != tag,
                   sd = (unsigned)(d >> 32) != tag;
        if (!(sa || sb || sd)) break;
        if (sa) a = dbk_mail_ld(m + 8);
        if (sb) b = dbk_mail_ld(m + c);
        if (sd) d = dbk_mail_ld(m + 4 + c);
    }
    *w = (uint32_t)a, *v0 = b_bits_mv((uint32_t)b), *v1 = b_bits_mv((uint32_t)d);
}
// b_direct_kernel's shared memory for a row of uw macroblocks: the row's quadrant vectors
// [2 lists][uw][4], the row above's lower ones [2][uw][2], the words of both rows, the
// colZeroFlags.
inline __host__ __device__ size_t b_direct_smem(int uw) {
    return (size_t)uw * (12 * sizeof(VidkMv) + 2 * sizeof(uint16_t) + 1);
}
__global__ void __launch_bounds__(32)
    b_direct_kernel(const EncFrame f, VidkMv *mv0, VidkMv *mv1, uint16_t *mbi,
                    const uint16_t *init, unsigned long long *mail, unsigned tag) {
    extern __shared__ __align__(16) unsigned char b_smem[];
    __shared__ VidkH264MvNb s_n[2];
    const int r = blockIdx.x, t = threadIdx.x, row0 = enc_h264_row0(&f, r), uw = f.uw,
              n4 = f.W / 4;
    const bool up = r > row0;
    VidkMv *s_q = (VidkMv *)b_smem, *s_qu = s_q + 8 * uw; // [list][x][quadrant]
    uint16_t *s_w = (uint16_t *)(s_qu + 4 * uw), *s_wu = s_w + uw;
    uint8_t *s_cz = (uint8_t *)(s_wu + uw);
    for (int i = t; i < uw; i += 32) {
        const unsigned w = init[r * uw + i];
        s_w[i] = (uint16_t)w, s_wu[i] = up ? init[(r - 1) * uw + i] : (uint16_t)0;
        s_cz[i] = (uint8_t)(b_direct_pending(w) ? enc_h264_col_zero4(&f, i, r) : 0);
    }
    for (int i = t; i < 8 * uw; i += 32) {
        const int l = i / (4 * uw), x = (i >> 2) % uw, q = i & 3;
        s_q[i] = (l ? mv1 : mv0)[(ptrdiff_t)(4 * r + 2 * (q >> 1)) * n4 + 4 * x + 2 * (q & 1)];
    }
    for (int i = t; up && i < 4 * uw; i += 32) { // quadrants 2 + (i & 1)
        const int l = i / (2 * uw), x = (i >> 1) % uw;
        s_qu[i] = (l ? mv1 : mv0)[(ptrdiff_t)(4 * r - 1) * n4 + 4 * x + 2 * (i & 1)];
    }
    __syncwarp();
    // entries 0-9 (vidk_h264_mvnb_pos): lane t's block and the macroblock it lies in (dx)
    int ex = 0, ey = 0;
    if (t < 10) vidk_h264_mvnb_pos(t, &ex, &ey);
    const int dx = ex < 0 ? -1 : ex >= 4 ? 1 : 0;
    for (int x = 0; x < uw; x++) {
        const unsigned w = s_w[x];
        if (!b_direct_pending(w)) continue;
        if (t < 10) {
            const int nx = x + dx;
            const bool avail = nx >= 0 && nx < uw && (ey >= 0 || up);
            unsigned wn = 0;
            VidkMv v0 = {0, 0}, v1 = {0, 0};
            if (avail && ey >= 0) { // the left macroblock: block (3, ey)
                const int q = (ey >> 1) * 2 + 1;
                wn = s_w[nx], v0 = s_q[4 * nx + q], v1 = s_q[4 * (uw + nx) + q];
            } else if (avail && b_direct_pending(s_wu[nx])) { // above, pending: its post
                const unsigned long long *m = mail + ((size_t)(r - 1) * uw + nx) * kDbkMail;
                b_mail_wait(m, ex & 3, tag, &wn, &v0, &v1);
            } else if (avail) { // above, final before the kernel: block (ex & 3, 3)
                const int q = (ex & 3) >> 1;
                wn = s_wu[nx], v0 = s_qu[2 * nx + q], v1 = s_qu[2 * (uw + nx) + q];
            }
            vidk_h264_mvnb_put(&s_n[0], t, avail, wn, &v0, ENC_MBI_INTRA, 0);
            vidk_h264_mvnb_put(&s_n[1], t, avail, wn, &v1, ENC_MBI_INTRA, 1);
        } else if (t < VIDK_H264_MVNB_ENTRIES) {
            const int k = t - 10, q = (k >> 3) * 2 + ((k & 3) >> 1);
            vidk_h264_mvnb_own(&s_n[0], k, w, s_q[4 * x + q], ENC_MBI_INTRA, 0);
            vidk_h264_mvnb_own(&s_n[1], k, w, s_q[4 * (uw + x) + q], ENC_MBI_INTRA, 1);
        }
        __syncwarp();
        EncDirect d;
        const int kind = enc_h264_b_direct_from(s_cz[x], w, &s_n[0], &s_n[1], &d);
        uint32_t se = 0, sd = 0;
        if (kind == 2) { // the same on every lane
            uint32_t s = t < 16 ? enc_h264_b_satd4(&f, x, r, t & 15, d.c0, d.c1, d.was * 0x55)
                                : enc_h264_b_satd4(&f, x, r, t & 15, d.a, d.b, d.use * 0x55);
#pragma unroll
            for (int o = 1; o < 16; o <<= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            se = __shfl_sync(0xffffffffu, s, 0), sd = __shfl_sync(0xffffffffu, s, 16);
        }
        if (t == 0 && kind) enc_h264_b_direct_apply(&f, x, r, &d, kind, se, sd, mv0, mv1, mbi);
        // the outcome, as enc_h264_b_direct_apply wrote it (explicit: the vectors unchanged)
        const bool ex_ = enc_h264_b_direct_explicit(&f, &d, kind, se, sd), dir = kind && !ex_;
        const unsigned fw = !kind ? w
                            : ex_ ? enc_h264_b_word(d.was)
                                  : ENC_MBI_DIRECT | enc_h264_b_word(d.use);
        if (t < 8 && dir)
            s_q[4 * ((t >> 2) * uw + x) + (t & 3)] = t < 4 ? d.a[t & 3] : d.b[t & 3];
        if (t == 8) s_w[x] = (uint16_t)fw;
        if (t < kBMail && r + 1 < f.uh) {
            uint32_t v;
            if (t == 8)
                v = fw;
            else if (dir)
                v = b_mv_bits(t < 4 ? d.a[2 + ((t & 3) >> 1)] : d.b[2 + ((t & 3) >> 1)]);
            else
                v = b_mv_bits(s_n[t >> 2].in[12 + (t & 3)]);
            dbk_mail_st(mail + ((size_t)r * uw + x) * kDbkMail + t,
                        (unsigned long long)tag << 32 | v);
        }
        __syncwarp(); // every lane has read s_n and the row's state before the next macroblock
    }
}

// b_pyramid: the reference B frame's vectors as the co-located picture of the others
// (enc_h264_b_mv_of), a thread per 4x4 block.
__global__ void __launch_bounds__(256) b_col_kernel(const EncFrame f, VidkMv *colmv) {
    const int k = (int)(blockIdx.x * 256 + threadIdx.x), w4 = f.W / 4;
    if (k < w4 * (f.H / 4)) colmv[k] = enc_h264_b_mv_of(f.mbi, f.uw, w4, f.mv4, f.mv4b, k);
}

} // namespace

#endif
