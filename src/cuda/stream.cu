// The H.264 CAVLC entropy coder on the device (docs/ENCODE_CUDA.md, "Entropy coding on the
// GPU"). The arithmetic is src/enc/h264_stream_core.h (macroblocks) and src/enc/h264_nal_core.h
// (slice header, NAL units, emulation prevention), the sources of the host writer: each
// kernel below is one call of a core function per macroblock (or lane), slice or byte. Per
// frame, on one stream:
//   count  (one warp per macroblock, a lane per block): TotalCoeff of its 4x4 blocks into
//          the maps (nC);
//   code   (one warp per macroblock, a lane per piece: the header, each residual block,
//          coded on their own, then ORed in at their offsets): its macroblock_layer() into
//          its slot, its bit count, P_Skip flag and scan key; a macroblock that does not fit
//          its slot raises the overflow flag (the caller then codes the frame on the host);
//   scan   (CUB, inclusive max of the keys): the last coded macroblock at or before each one
//          in its slice, which gives every mb_skip_run;
//   len    (one thread per macroblock): the bits it adds to its slice (ue(mb_skip_run) +
//          macroblock_layer(), and the slice's final mb_skip_run);
//   scan   (CUB, exclusive sum of the lengths): its bit position in its slice's data;
//   head   (one thread per slice): start code, NAL unit header and slice_header() into the
//          slice's header slot; the NAL unit's length in bytes (header, data, trailing bits);
//   scan   (CUB, exclusive sum of the NAL lengths): each NAL unit's first byte;
//   zero   the NAL bytes up to the frame's length;
//   pack   (one thread per macroblock): its bits ORed into the NAL bytes (atomicOr: two
//          macroblocks may share a word); the first macroblock of a slice ORs the header
//          slot in, the last one the rbsp_stop_one_bit;
//   ep     emulation prevention over the frame's bytes, 4096 per block (h264_nal_core.h):
//          reduce (each block composes its bytes' state maps), scan (one block: the
//          exclusive scan of the blocks' maps; the frame's final size), put (each block
//          rescans its bytes from its prefix and writes each byte, with an 0x03 before it
//          where the rule says, at its output position);
// then the overflow flag and the final size go down (vidk_cuda_stream_code), and after the
// caller's synchronisation exactly the frame's slice NAL units (vidk_cuda_stream_fetch),
// which the host puts behind the SPS / PPS of an IDR picture (vidk_h264_stream_frame_nals).
#include "cuda_common.cuh"
#include "stream_cuda.cuh"

#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <stdlib.h>
#include <string.h>

#include "enc/h264_nal_core.h"
#include "enc/h264_stream_cabac.h"
#include "enc/h264_stream_core.h"

// Emulation prevention: EP_T threads of EP_V bytes per block, a chunk of EP_CHUNK bytes.
// EP_GRID: the blocks of the reduce and put kernels (a frame of up to 4 MiB of NAL units in
// one round).
enum {
    EP_T = 256,
    EP_V = 16,
    EP_CHUNK = EP_T * EP_V,
    EP_GRID = 1024,
    HDR_SLOT = VIDK_H264_HDR_SLOT
};
static_assert(HDR_SLOT * 8 >= 8 * VIDK_H264_NAL_PREFIX + VIDK_H264_SLICE_HDR_MAX_BITS + 32,
              "header slot too small");

struct VidkCuStream {
    int mbw, mbh, slices, n;
    int cabac, qp;     // entropy_coding_mode_flag; the picture's QP (CABAC's contexts)
    size_t slot_bytes; // CAVLC: a macroblock's slot; CABAC: its bins' (2 bytes each)
    // CABAC (docs/ENCODE_CUDA.md): what each macroblock leaves its neighbours, its bins and
    // their count, the slices' NAL units (an area of area_bytes each)
    VidkCabacMb *d_cmb;
    uint8_t *d_amvd, *d_amvd1; // |mvd| per 4x4 block: list 0, list 1 (B slices)
    uint16_t *d_bins;
    uint32_t *d_nbins; // n + 1 (the last 0)
    // CABAC's engine on the host (host_engine: vidk_cuda_stream_host_engine): the bins'
    // first indexes (the exclusive sum of nbins, n + 1) and the bins back to back, on the
    // device and pinned
    int host_engine;
    uint32_t *d_boff, *h_boff;
    uint16_t *d_cbins, *h_cbins;
    size_t h_cbins_cap;
    uint8_t *d_area;
    size_t area_bytes;
    uint8_t *d_tc;     // TotalCoeff maps: luma (16 n), Cb (4 n), Cr (4 n)
    uint8_t *d_slots;  // n slots of slot_bytes
    uint32_t *d_bits;  // per macroblock: bits of its macroblock_layer()
    uint8_t *d_skip;   // per macroblock: P_Skip
    int32_t *d_key;    // per macroblock: scan key (vidk_h264s_key)
    int32_t *d_last;   // inclusive max-scan of the keys
    uint64_t *d_len;   // n + 1 lengths (the last 0), then the bit positions in the NAL bytes
    uint64_t *d_off;   // n + 1 bit positions in the slices' data
    uint8_t *d_hdr;    // per slice: HDR_SLOT bytes, start code + NAL header + slice_header()
    uint32_t *d_hbits; // per slice: the bits of its header slot
    uint64_t *d_nlen;  // slices + 1 NAL unit lengths in bytes (the last 0)
    uint64_t *d_noff;  // slices + 1 NAL unit starts in the raw bytes (the last: their end)
    uint64_t *d_soff;  // slices + 1: vidk_h264s_pack's slice starts (not used)
    uint32_t *d_words; // the NAL units before emulation prevention (raw bytes)
    size_t raw_cap;    // its size in bytes, a multiple of EP_CHUNK
    VidkH264Ep *d_agg; // per chunk of the raw bytes: its map, then the maps before it
    uint8_t *d_nal;    // the NAL units after emulation prevention
    size_t nal_cap;    // its size in bytes
    uint64_t *d_res;   // [0] overflow flag, [1] bytes of the NAL units
    void *d_temp;      // CUB scratch
    size_t temp_bytes;
    uint64_t *h_res; // pinned copy of d_res
    uint8_t *h_nal;  // pinned NAL units
    size_t h_nal_cap;
    // The frame's work as a CUDA graph, by intra (captured at its first use with the
    // inputs in key): one launch instead of 17 calls (CUB's scans query the device each),
    // which cost the host more than the device's frame before. The slice header goes up
    // from h_hdr (pinned) at the graph's start.
    VidkH264SliceHdr *h_hdr, *d_hdr_in;
    cudaGraphExec_t gx[3];    // per picture type: P, I, B
    const void *gx_key[3][7]; // the inputs each was captured with
};

namespace {

struct MaxOp {
    __host__ __device__ __forceinline__ int32_t operator()(int32_t a, int32_t b) const {
        return a > b ? a : b;
    }
};

// a, then b: the composition of emulation prevention's state maps (h264_nal_core.h).
struct EpOp {
    __host__ __device__ __forceinline__ VidkH264Ep operator()(const VidkH264Ep &a,
                                                              const VidkH264Ep &b) const {
        return vidk_h264_ep_compose(a, b);
    }
};

using EpScan = cub::BlockScan<VidkH264Ep, EP_T>;

// Passes 1 and 2: a warp per macroblock, a lane per piece (h264_stream_core.h).
constexpr int kMbWarps = 4;
__global__ void __launch_bounds__(32 * kMbWarps) count_kernel(const VidkH264sCtx c) {
    const int i = blockIdx.x * kMbWarps + (threadIdx.x >> 5);
    if (i < c.mbw * c.mbh) vidk_h264s_w_count(&c, i, threadIdx.x & 31);
}

__global__ void __launch_bounds__(32 * kMbWarps)
    code_kernel(const VidkH264sCtx c, uint8_t *slots, size_t slot_bytes, uint32_t *bits,
                uint8_t *skip, int32_t *key, uint64_t *res) {
    __shared__ VidkH264sWarp S[kMbWarps];
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31, i = blockIdx.x * kMbWarps + w;
    if (i >= c.mbw * c.mbh) return; // the whole warp
    VidkH264sLane L;
    vidk_h264s_w_gather(&c, i, l, &S[w], &L);
    const unsigned fl = S[w].fl[l], any = __ballot_sync(0xffffffffu, fl & 1),
                   ac = __ballot_sync(0xffffffffu, fl & 2);
    __syncwarp();
    vidk_h264s_w_code(&c, i, l, &S[w], &L, vidk_h264s_cbp_m(any, ac, VIDK_H264S_I16(c.mbi[i])));
    __syncwarp();
    // vidk_h264s_put_of by warp scans: the lane's offset, the total, the overflow
    const uint32_t len = S[w].len[l];
    uint32_t inc = len;
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t v = __shfl_up_sync(0xffffffffu, inc, o);
        if (l >= o) inc += v;
    }
    VidkH264sPut p;
    const uint32_t t = __shfl_sync(0xffffffffu, inc, 31); // each piece < 2^11 bits: no wrap
    p.ovf = __any_sync(0xffffffffu, S[w].ovf[l] != 0) || t > 8 * (uint64_t)slot_bytes;
    p.off = inc - len, p.total = p.ovf ? 0u : t;
    vidk_h264s_w_zero(i, l, p, slots, slot_bytes);
    __syncwarp();
    if (vidk_h264s_w_put(&c, i, l, p, &S[w], &L, slots, slot_bytes, bits, skip, key))
        res[0] = 1; // every writer stores the same value
}

__global__ void __launch_bounds__(256)
    len_kernel(const VidkH264sCtx c, const int32_t *last, const uint8_t *skip,
               const uint32_t *bits, uint64_t *len) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, n = c.mbw * c.mbh;
    if (i < n)
        len[i] = vidk_h264s_len(&c, i, last, skip, bits);
    else if (i == n)
        len[i] = 0; // the exclusive sum's entry n is the frame's total
}

// One thread per slice: its header slot and NAL unit length (vidk_h264_nal_head).
__global__ void __launch_bounds__(64)
    head_kernel(const VidkH264sCtx c, const VidkH264SliceHdr *hp, const uint64_t *off,
                uint8_t *hdr, uint32_t *hbits, uint64_t *nlen) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < c.slices) {
        const VidkH264SliceHdr h = *hp;
        vidk_h264_nal_head(&c, &h, k, off, hdr, hbits, nlen);
    } else if (k == c.slices)
        nlen[k] = 0; // the exclusive sum's entry `slices` is the total
}

// Zero the raw bytes up to the frame's length, rounded up to a whole chunk (the ORs of the
// pack kernel need zeros).
__global__ void __launch_bounds__(256)
    zero_kernel(uint32_t *words, size_t cap_words, const uint64_t *noff, int slices) {
    size_t nw = (size_t)((noff[slices] + EP_CHUNK - 1) / EP_CHUNK) * (EP_CHUNK / 4);
    if (nw > cap_words) nw = cap_words;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < nw;
         k += (size_t)gridDim.x * blockDim.x)
        words[k] = 0;
}

// One thread per macroblock: its bits in its slice's NAL unit (vidk_h264_nal_pack; pos:
// d_len, each entry written and read by its own thread).
__global__ void __launch_bounds__(128)
    pack_kernel(const VidkH264sCtx c, const int32_t *last, const uint8_t *skip,
                const uint32_t *bits, const uint8_t *slots, size_t slot_bytes,
                const uint64_t *off, const uint8_t *hdr, const uint32_t *hbits,
                const uint64_t *noff, uint64_t *pos, uint32_t *words, uint64_t *soff) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c.mbw * c.mbh)
        vidk_h264_nal_pack(&c, i, last, skip, bits, slots, slot_bytes, off, hdr, hbits, noff,
                           pos, words, soff);
}

// Pass 1: each chunk's composed map into agg[chunk] (a grid-stride loop over the chunks the
// frame covers).
__global__ void __launch_bounds__(EP_T)
    ep_reduce_kernel(const uint8_t *raw, const uint64_t *noff, int nals, VidkH264Ep *agg) {
    __shared__ typename EpScan::TempStorage tmp;
    const uint64_t total = noff[nals];
    for (uint64_t j = blockIdx.x; j * EP_CHUNK < total; j += gridDim.x) {
        const uint64_t at = j * EP_CHUNK + (uint64_t)threadIdx.x * EP_V;
        const VidkH264Ep m = vidk_h264_ep_run_map(raw, noff, nals, at, EP_V, total);
        VidkH264Ep ex, all;
        EpScan(tmp).ExclusiveScan(m, ex, vidk_h264_ep_identity(), EpOp(), all);
        if (threadIdx.x == 0) agg[j] = all;
        __syncthreads(); // tmp is reused
    }
}

// Pass 2 (one block): agg[j] becomes the composition of the chunks before j; res[1] the
// frame's bytes after emulation prevention.
__global__ void __launch_bounds__(EP_T)
    ep_scan_kernel(VidkH264Ep *agg, const uint64_t *noff, int nals, uint64_t *res) {
    __shared__ typename EpScan::TempStorage tmp;
    const uint64_t total = noff[nals], chunks = (total + EP_CHUNK - 1) / EP_CHUNK;
    VidkH264Ep run = vidk_h264_ep_identity();
    for (uint64_t b = 0; b < chunks; b += EP_T) {
        const uint64_t j = b + threadIdx.x;
        const VidkH264Ep v = j < chunks ? agg[j] : vidk_h264_ep_identity();
        VidkH264Ep ex, all;
        EpScan(tmp).ExclusiveScan(v, ex, vidk_h264_ep_identity(), EpOp(), all);
        if (j < chunks) agg[j] = vidk_h264_ep_compose(run, ex);
        run = vidk_h264_ep_compose(run, all);
        __syncthreads(); // tmp is reused
    }
    if (threadIdx.x == 0) res[1] = total + run.cnt[0];
}

// Pass 3: every byte at its output position, an 0x03 before it where the rule says (the
// same chunks as pass 1).
__global__ void __launch_bounds__(EP_T)
    ep_put_kernel(const uint8_t *raw, const uint64_t *noff, int nals, const VidkH264Ep *agg,
                  uint8_t *out) {
    __shared__ typename EpScan::TempStorage tmp;
    const uint64_t total = noff[nals];
    for (uint64_t j = blockIdx.x; j * EP_CHUNK < total; j += gridDim.x) {
        const uint64_t at = j * EP_CHUNK + (uint64_t)threadIdx.x * EP_V;
        const VidkH264Ep m = vidk_h264_ep_run_map(raw, noff, nals, at, EP_V, total);
        VidkH264Ep ex;
        EpScan(tmp).ExclusiveScan(m, ex, vidk_h264_ep_identity(), EpOp());
        vidk_h264_ep_run_put(raw, noff, nals, at, EP_V, total, vidk_h264_ep_compose(agg[j], ex),
                             out);
        __syncthreads(); // tmp is reused
    }
}

// CABAC pass 1, a thread per macroblock: what it leaves its neighbours' contexts
// (vidk_cabac_mb_info).
__global__ void __launch_bounds__(128) cabac_info_kernel(VidkH264sCtx c, VidkCabacPic cp) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.mbw * c.mbh) return;
    const int mby = i / c.mbw;
    c.row0 = vidk_h264s_slice_row0(c.mbh, c.slices, mby);
    vidk_cabac_mb_info(&c, &cp, i - mby * c.mbw, mby);
}

// CABAC pass 2, a thread per macroblock: its bins (vidk_cabac_mb) into its slot of cap bins,
// their count into nbins; more than cap raises the overflow flag.
__global__ void __launch_bounds__(128)
    cabac_bins_kernel(VidkH264sCtx c, VidkCabacPic cp, uint16_t *bins, uint32_t cap,
                      uint32_t *nbins, uint64_t *res) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= c.mbw * c.mbh) return;
    const int mby = i / c.mbw;
    const VidkH264sPlace p = vidk_h264s_place(&c, i);
    c.row0 = p.first / c.mbw;
    VidkCabacBins o = {bins + (size_t)i * cap, 0, cap};
    vidk_cabac_mb(&c, &cp, &o, i - mby * c.mbw, mby, i == p.last);
    nbins[i] = o.n;
    if (o.n > cap) res[0] = 1; // every writer stores the same value
}

// CABAC with the engine on the host: a warp per macroblock copies its bins from its slot to
// their place in one array (boff: the exclusive sum of the counts); the last macroblock's
// warp writes their total into res[1]. Only read when no slot overflowed (res[0] 0); where
// one did, the sums pass the array's n x cap bins, and nothing is written past them.
__global__ void __launch_bounds__(128)
    cabac_pack_kernel(const uint16_t *bins, uint32_t cap, const uint32_t *nbins,
                      const uint32_t *boff, int n, uint16_t *out, uint64_t *res) {
    const int i = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = threadIdx.x & 31;
    if (i >= n) return;
    const uint64_t lim = (uint64_t)n * cap, at = boff[i];
    const uint32_t m = nbins[i] < cap ? nbins[i] : cap;
    const uint16_t *src = bins + (size_t)i * cap;
    for (uint32_t j = lane; j < m && at + j < lim; j += 32)
        out[at + j] = src[j];
    if (i == n - 1 && lane == 0) res[1] = boff[n];
}

// n bins of a slot (4-byte aligned) through the engine, two per 32-bit word, each word
// loaded two words ahead of its use (the engine's chain does not wait for the loads); one
// copy of the engine in the loop (an unrolled loop's copies would crowd the instruction
// cache).
__device__ void cabac_code_slot(VidkCabac *e, const uint16_t *bins, uint32_t n) {
    const uint32_t *v = reinterpret_cast<const uint32_t *>(bins);
    const uint32_t words = (n + 1) / 2;
    uint32_t w0 = words > 0 ? __ldg(v) : 0u, w1 = words > 1 ? __ldg(v + 1) : 0u, cur = 0;
#pragma unroll 1
    for (uint32_t j = 0; j < n; j++) {
        if (!(j & 1)) {
            cur = w0, w0 = w1;
            if (j / 2 + 2 < words) w1 = __ldg(v + j / 2 + 2);
        }
        vidk_cabac_code_bin(e, (j & 1) ? cur >> 16 : cur & 0xffffu);
    }
}

// CABAC pass 3, one thread of a warp per slice (lanes of one warp taking different slices
// would run their engines one after another), the contexts and the engine's two tables in
// shared memory (the lanes fill them), the engine's other state in registers: its whole NAL
// unit into its area (start code, NAL header, vidk_cabac_slice_open, its macroblocks' bins
// through the engine, vidk_cabac_slice_close), its length in bytes into nlen[k]; an area too
// small raises the overflow flag.
__global__ void __launch_bounds__(32)
    cabac_slice_kernel(const VidkH264sCtx c, const VidkH264SliceHdr *hp, int qp,
                       const uint16_t *bins, uint32_t cap, const uint32_t *nbins, uint8_t *area,
                       size_t area_bytes, uint64_t *nlen, uint64_t *res) {
    __shared__ uint8_t st[VIDK_H264_CABAC_CTX], lps[64][4], tlps[64];
    const int k = blockIdx.x;
    for (int j = threadIdx.x; j < VIDK_H264_CABAC_CTX; j += 32)
        st[j] = vidk_cabac_init_context(j, hp->intra, qp + hp->slice_qp_delta);
    for (int j = threadIdx.x; j < 64; j += 32) {
        for (int r = 0; r < 4; r++)
            lps[j][r] = VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[j][r];
        tlps[j] = VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[j];
    }
    __syncwarp();
    if (threadIdx.x) return;
    if (k == 0) nlen[c.slices] = 0; // the exclusive sum's entry `slices` is the total
    const int row0 = (int)((int64_t)k * c.mbh / c.slices),
              row1 = (int)((int64_t)(k + 1) * c.mbh / c.slices);
    VidkH264SliceHdr h = *hp;
    h.first_mb = (uint32_t)(row0 * c.mbw);
    VidkBits b;
    vidk_bits_init(&b, area + (size_t)k * area_bytes, area_bytes);
    vidk_h264_nal_start(&b, h.nal_ref_idc, vidk_h264_slice_nal_type(&h));
    VidkCabac e;
    vidk_cabac_slice_open(&b, &h, st, &e);
    e.lps = lps, e.tlps = tlps;
    for (int i = row0 * c.mbw; i < row1 * c.mbw; i++)
        cabac_code_slot(&e, bins + (size_t)i * cap, nbins[i] < cap ? nbins[i] : cap);
    vidk_cabac_slice_close(&b, &e, (uint64_t)(row1 - row0) * (uint64_t)c.mbw);
    if (b.overflow) res[0] = 1;
    nlen[k] = b.overflow ? 0 : b.pos / 8;
}

// CABAC pass 4, a block per slice: its NAL unit from its area to its place in the raw bytes.
__global__ void __launch_bounds__(256) cabac_copy_kernel(const uint8_t *area, size_t area_bytes,
                                                         const uint64_t *noff, uint8_t *raw) {
    const int k = blockIdx.x;
    const uint64_t at = noff[k], len = noff[k + 1] - at;
    const uint8_t *src = area + (size_t)k * area_bytes;
    for (uint64_t j = threadIdx.x; j < len; j += blockDim.x)
        raw[at + j] = src[j];
}

unsigned blocks(size_t n, unsigned per) {
    return (unsigned)((n + per - 1) / per);
}

} // namespace

void vidk_cuda_stream_close(VidkCuStream **pst) {
    VidkCuStream *st = pst ? *pst : nullptr;
    if (!st) return;
    cudaFree(st->d_tc);
    cudaFree(st->d_cmb);
    cudaFree(st->d_amvd);
    cudaFree(st->d_amvd1);
    cudaFree(st->d_bins);
    cudaFree(st->d_nbins);
    cudaFree(st->d_boff);
    cudaFree(st->d_cbins);
    cudaFreeHost(st->h_boff);
    cudaFreeHost(st->h_cbins);
    cudaFree(st->d_area);
    cudaFree(st->d_slots);
    cudaFree(st->d_bits);
    cudaFree(st->d_skip);
    cudaFree(st->d_key);
    cudaFree(st->d_last);
    cudaFree(st->d_len);
    cudaFree(st->d_off);
    cudaFree(st->d_hdr);
    cudaFree(st->d_hbits);
    cudaFree(st->d_nlen);
    cudaFree(st->d_noff);
    cudaFree(st->d_soff);
    cudaFree(st->d_words);
    cudaFree(st->d_agg);
    cudaFree(st->d_nal);
    cudaFree(st->d_res);
    cudaFree(st->d_temp);
    cudaFree(st->d_hdr_in);
    cudaFreeHost(st->h_res);
    cudaFreeHost(st->h_nal);
    cudaFreeHost(st->h_hdr);
    for (int k = 0; k < 3; k++)
        if (st->gx[k]) cudaGraphExecDestroy(st->gx[k]);
    (void)cudaGetLastError();
    free(st);
    *pst = nullptr;
}

int vidk_cuda_stream_open(VidkContext *ctx, VidkCuStream **out, int mbw, int mbh, int slices,
                          size_t slot_bytes, int cabac, int qp, cudaStream_t s) {
    int err = 0;
    size_t t1 = 0, t2 = 0, t3 = 0, n = 0, ns = 0;
    VidkCuStream *st = static_cast<VidkCuStream *>(calloc(1, sizeof(VidkCuStream)));
    *out = nullptr;
    if (!st) return VIDK_ERR(ENOMEM);
    if (mbw < 1 || mbh < 1 || slices < 1 || slices > mbh || slot_bytes < 4 || slot_bytes % 4 ||
        (int64_t)mbw * mbh > (1 << 26)) {
        free(st);
        return VIDK_ERR(EINVAL);
    }
    st->mbw = mbw, st->mbh = mbh, st->slices = slices, st->n = mbw * mbh;
    st->cabac = !!cabac, st->qp = qp;
    if (st->cabac) slot_bytes = (slot_bytes + 3) / 4 * 4; // whole 32-bit loads of bins
    st->slot_bytes = slot_bytes;
    n = (size_t)st->n, ns = (size_t)slices;
    if (st->cabac) {
        // A slice's NAL unit: its header, at most 8 bits a bin (an LPS bin renormalises at
        // most 6 times; the cabac_zero_words reach 3 / 32 of a byte a bin) and the trailing
        // bytes; whole words.
        const size_t rows = (size_t)(mbh + slices - 1) / (size_t)slices;
        st->area_bytes = (HDR_SLOT + 64 + rows * (size_t)mbw * (slot_bytes / 2) + 3) / 4 * 4;
        CUDA_CHECK(cudaMalloc(&st->d_cmb, n * sizeof(VidkCabacMb)));
        CUDA_CHECK(cudaMalloc(&st->d_amvd, n * 32));
        CUDA_CHECK(cudaMalloc(&st->d_amvd1, n * 32));
        CUDA_CHECK(cudaMalloc(&st->d_bins, n * slot_bytes));
        CUDA_CHECK(cudaMalloc(&st->d_nbins, (n + 1) * sizeof(uint32_t)));
        CUDA_CHECK(cudaMemsetAsync(st->d_nbins, 0, (n + 1) * sizeof(uint32_t), s));
        {
            // the engine on the host cores unless VIDK_CABAC_ENGINE=device
            const char *env = getenv("VIDK_CABAC_ENGINE");
            st->host_engine = !(env && !strcmp(env, "device"));
        }
        if (st->host_engine) {
            CUDA_CHECK(cudaMalloc(&st->d_boff, (n + 1) * sizeof(uint32_t)));
            CUDA_CHECK(cudaMallocHost(&st->h_boff, (n + 1) * sizeof(uint32_t)));
            CUDA_CHECK(cudaMalloc(&st->d_cbins, n * slot_bytes));
        }
        CUDA_CHECK(cudaMalloc(&st->d_area, ns * st->area_bytes));
        slot_bytes = 4; // no CAVLC slots
    }
    CUDA_CHECK(vidk_cuda_prefer_l1(count_kernel));
    CUDA_CHECK(vidk_cuda_prefer_l1(code_kernel));
    // The raw NAL units: at most every slot full plus two ue() codes (< 64 bits each) per
    // macroblock, and per slice the header slot and the trailing bits; whole chunks.
    st->raw_cap =
        (st->cabac ? ns * st->area_bytes : n * (slot_bytes + 16) + ns * (HDR_SLOT + 8) + 64) +
        EP_CHUNK - 1;
    st->raw_cap = st->raw_cap / EP_CHUNK * EP_CHUNK;
    // emulation prevention inserts at most one byte per two of the RBSP
    st->nal_cap = st->raw_cap + st->raw_cap / 2 + 16;
    CUDA_CHECK(cudaMalloc(&st->d_tc, n * 24));
    CUDA_CHECK(cudaMalloc(&st->d_slots, n * slot_bytes));
    CUDA_CHECK(cudaMalloc(&st->d_bits, n * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_skip, n));
    CUDA_CHECK(cudaMalloc(&st->d_key, n * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_last, n * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_len, (n + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_off, (n + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_hdr, ns * HDR_SLOT));
    CUDA_CHECK(cudaMalloc(&st->d_hbits, ns * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_nlen, (ns + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_noff, (ns + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_soff, (ns + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_words, st->raw_cap));
    CUDA_CHECK(cudaMalloc(&st->d_agg, st->raw_cap / EP_CHUNK * sizeof(VidkH264Ep)));
    CUDA_CHECK(cudaMalloc(&st->d_nal, st->nal_cap));
    CUDA_CHECK(cudaMalloc(&st->d_res, 2 * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_hdr_in, sizeof(VidkH264SliceHdr)));
    CUDA_CHECK(cudaMallocHost(&st->h_hdr, sizeof(VidkH264SliceHdr)));
    // The slots' tails are read (and dropped) when the last bits of a macroblock are
    // packed, the header slots' likewise: initialised once, so that nothing reads
    // uninitialised memory.
    CUDA_CHECK(cudaMemsetAsync(st->d_slots, 0, n * slot_bytes, s));
    CUDA_CHECK(cudaMemsetAsync(st->d_hdr, 0, ns * HDR_SLOT, s));
    CUDA_CHECK(
        cub::DeviceScan::InclusiveScan(nullptr, t1, st->d_key, st->d_last, MaxOp(), st->n));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, t2, st->d_len, st->d_off, st->n + 1));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, t3, st->d_nlen, st->d_noff, slices + 1));
    st->temp_bytes = t1 > t2 ? t1 : t2;
    if (t3 > st->temp_bytes) st->temp_bytes = t3;
    if (st->host_engine) {
        size_t t4 = 0;
        CUDA_CHECK(
            cub::DeviceScan::ExclusiveSum(nullptr, t4, st->d_nbins, st->d_boff, st->n + 1));
        if (t4 > st->temp_bytes) st->temp_bytes = t4;
    }
    CUDA_CHECK(cudaMalloc(&st->d_temp, st->temp_bytes ? st->temp_bytes : 1));
    // Every kernel loaded now (CUDA loads a kernel at its first launch, a fraction of a
    // millisecond each, which the first frames paid): the ones here by their attributes, the
    // CUB scans' by one run over zeroed inputs.
    {
        CUDA_CHECK(vidk_cuda_load(len_kernel, head_kernel, zero_kernel, pack_kernel,
                                  ep_reduce_kernel, ep_scan_kernel, ep_put_kernel));
        CUDA_CHECK(vidk_cuda_load(cabac_info_kernel, cabac_bins_kernel, cabac_slice_kernel,
                                  cabac_copy_kernel, cabac_pack_kernel));
        CUDA_CHECK(cudaMemsetAsync(st->d_key, 0, n * sizeof(int32_t), s));
        CUDA_CHECK(cudaMemsetAsync(st->d_len, 0, (n + 1) * sizeof(uint64_t), s));
        CUDA_CHECK(cudaMemsetAsync(st->d_nlen, 0, (ns + 1) * sizeof(uint64_t), s));
        size_t tb = st->temp_bytes;
        CUDA_CHECK(cub::DeviceScan::InclusiveScan(st->d_temp, tb, st->d_key, st->d_last,
                                                  MaxOp(), st->n, s));
        tb = st->temp_bytes;
        CUDA_CHECK(
            cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_len, st->d_off, st->n + 1, s));
        tb = st->temp_bytes;
        CUDA_CHECK(cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_nlen, st->d_noff,
                                                 slices + 1, s));
        if (st->host_engine) {
            tb = st->temp_bytes;
            CUDA_CHECK(cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_nbins, st->d_boff,
                                                     st->n + 1, s));
        }
    }
    CUDA_CHECK(cudaMallocHost(&st->h_res, 2 * sizeof(uint64_t)));
    st->h_nal_cap = n * 64 + 65536;
    CUDA_CHECK(cudaMallocHost(&st->h_nal, st->h_nal_cap));
    *out = st;
    return 0;
cleanup:
    vidk_cuda_stream_close(&st);
    return err;
}

size_t vidk_cuda_stream_res_bytes(const VidkCuStream *st) {
    (void)st;
    return 2 * sizeof(uint64_t);
}

namespace {

// The frame's work on s (vidk_cuda_stream_code), its header from h_hdr.
int enqueue(const VidkContext *ctx, VidkCuStream *st, int intra, int bslice,
            const uint16_t *d_mbi, const uint8_t *d_im4, const VidkMv *d_mv4,
            const VidkMv *d_mv4b, const int16_t *const d_lev[3], cudaStream_t s) {
    int err = 0;
    VidkH264sCtx c;
    const int n = st->n;
    uint8_t *raw_w = reinterpret_cast<uint8_t *>(st->d_words);
    const uint8_t *raw = raw_w;
    // the ep kernels' grid: at most EP_GRID blocks, looping over the chunks of the frame
    const unsigned chunks = (unsigned)(st->raw_cap / EP_CHUNK),
                   ep_grid = chunks < EP_GRID ? chunks : EP_GRID;
    c.mbw = st->mbw, c.mbh = st->mbh, c.W = st->mbw * 16, c.slices = st->slices;
    c.intra = intra, c.row0 = 0;
    c.mbi = d_mbi, c.mv4 = d_mv4;
    for (int p = 0; p < 3; p++)
        c.lev[p] = d_lev[p];
    c.tcl = st->d_tc;
    c.tcc[0] = st->d_tc + (size_t)n * 16;
    c.tcc[1] = st->d_tc + (size_t)n * 20;
    c.im4 = d_im4;
    c.bslice = bslice, c.mv4b = d_mv4b; // B slices: list 1's vectors
    CUDA_CHECK(cudaMemcpyAsync(st->d_hdr_in, st->h_hdr, sizeof(VidkH264SliceHdr),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemsetAsync(st->d_res, 0, sizeof(uint64_t), s)); // the overflow flag
    if (st->cabac) {
        const VidkCabacPic cp = {st->d_cmb, st->d_amvd, bslice ? st->d_amvd1 : nullptr};
        const uint32_t cap = (uint32_t)(st->slot_bytes / 2);
        cabac_info_kernel<<<blocks((size_t)n, 128), 128, 0, s>>>(c, cp);
        CUDA_CHECK_LAUNCH();
        cabac_bins_kernel<<<blocks((size_t)n, 128), 128, 0, s>>>(c, cp, st->d_bins, cap,
                                                                 st->d_nbins, st->d_res);
        CUDA_CHECK_LAUNCH();
        if (st->host_engine) { // the bins back to back, their total; the engine on the host
            size_t tb = st->temp_bytes;
            CUDA_CHECK(cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_nbins, st->d_boff,
                                                     n + 1, s));
            cabac_pack_kernel<<<blocks((size_t)n * 32, 128), 128, 0, s>>>(
                st->d_bins, cap, st->d_nbins, st->d_boff, n, st->d_cbins, st->d_res);
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cudaMemcpyAsync(st->h_res, st->d_res, vidk_cuda_stream_res_bytes(st),
                                       cudaMemcpyDeviceToHost, s));
            return 0;
        }
        cabac_slice_kernel<<<(unsigned)st->slices, 32, 0, s>>>(
            c, st->d_hdr_in, st->qp, st->d_bins, cap, st->d_nbins, st->d_area, st->area_bytes,
            st->d_nlen, st->d_res);
        CUDA_CHECK_LAUNCH();
        {
            size_t tb = st->temp_bytes;
            CUDA_CHECK(cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_nlen, st->d_noff,
                                                     st->slices + 1, s));
        }
        cabac_copy_kernel<<<(unsigned)st->slices, 256, 0, s>>>(st->d_area, st->area_bytes,
                                                               st->d_noff, raw_w);
        CUDA_CHECK_LAUNCH();
    } else {
        count_kernel<<<blocks((size_t)n, kMbWarps), 32 * kMbWarps, 0, s>>>(c);
        CUDA_CHECK_LAUNCH();
        code_kernel<<<blocks((size_t)n, kMbWarps), 32 * kMbWarps, 0, s>>>(
            c, st->d_slots, st->slot_bytes, st->d_bits, st->d_skip, st->d_key, st->d_res);
        CUDA_CHECK_LAUNCH();
        {
            size_t tb = st->temp_bytes;
            CUDA_CHECK(cub::DeviceScan::InclusiveScan(st->d_temp, tb, st->d_key, st->d_last,
                                                      MaxOp(), n, s));
        }
        len_kernel<<<blocks((size_t)n + 1, 256), 256, 0, s>>>(c, st->d_last, st->d_skip,
                                                              st->d_bits, st->d_len);
        CUDA_CHECK_LAUNCH();
        {
            size_t tb = st->temp_bytes;
            CUDA_CHECK(
                cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_len, st->d_off, n + 1, s));
        }
        head_kernel<<<blocks((size_t)st->slices + 1, 64), 64, 0, s>>>(
            c, st->d_hdr_in, st->d_off, st->d_hdr, st->d_hbits, st->d_nlen);
        CUDA_CHECK_LAUNCH();
        {
            size_t tb = st->temp_bytes;
            CUDA_CHECK(cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_nlen, st->d_noff,
                                                     st->slices + 1, s));
        }
        {
            const size_t cap_words = st->raw_cap / 4;
            const unsigned nb = blocks(cap_words, 256), grid = nb < 1024 ? nb : 1024;
            zero_kernel<<<grid, 256, 0, s>>>(st->d_words, cap_words, st->d_noff, st->slices);
            CUDA_CHECK_LAUNCH();
        }
        pack_kernel<<<blocks((size_t)n, 128), 128, 0, s>>>(
            c, st->d_last, st->d_skip, st->d_bits, st->d_slots, st->slot_bytes, st->d_off,
            st->d_hdr, st->d_hbits, st->d_noff, st->d_len, st->d_words, st->d_soff);
        CUDA_CHECK_LAUNCH();
    }
    // Emulation prevention over the chunks the frame covers (known on the device only).
    ep_reduce_kernel<<<ep_grid, EP_T, 0, s>>>(raw, st->d_noff, st->slices, st->d_agg);
    CUDA_CHECK_LAUNCH();
    ep_scan_kernel<<<1, EP_T, 0, s>>>(st->d_agg, st->d_noff, st->slices, st->d_res);
    CUDA_CHECK_LAUNCH();
    ep_put_kernel<<<ep_grid, EP_T, 0, s>>>(raw, st->d_noff, st->slices, st->d_agg, st->d_nal);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpyAsync(st->h_res, st->d_res, vidk_cuda_stream_res_bytes(st),
                               cudaMemcpyDeviceToHost, s));
cleanup:
    return err;
}

} // namespace

int vidk_cuda_stream_code(VidkContext *ctx, VidkCuStream *st, const VidkH264SliceHdr *hdr,
                          const uint16_t *d_mbi, const uint8_t *d_im4, const VidkMv *d_mv4,
                          const VidkMv *d_mv4b, const int16_t *const d_lev[3], cudaStream_t s) {
    int err = 0;
    const int intra = hdr->intra ? 1 : 0, bslice = hdr->bslice ? 1 : 0;
    const int kind = bslice ? 2 : intra;
    if (!bslice) d_mv4b = nullptr;
    const void *key[7] = {d_mbi, d_im4, d_mv4, d_mv4b, d_lev[0], d_lev[1], d_lev[2]};
    cudaGraphExec_t &gx = st->gx[kind];
    *st->h_hdr = *hdr; // the previous call's upload is done: the caller synchronised s
    if (gx && memcmp(key, st->gx_key[kind], sizeof(key))) {
        CUDA_CHECK(cudaGraphExecDestroy(gx));
        gx = nullptr;
    }
    if (!gx) { // capture the work once; where capturing fails, queue it directly
        cudaGraph_t g = nullptr;
        CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        const int e = enqueue(ctx, st, intra, bslice, d_mbi, d_im4, d_mv4, d_mv4b, d_lev, s);
        const cudaError_t ec = cudaStreamEndCapture(s, &g);
        if (e == 0 && ec == cudaSuccess && g &&
            cudaGraphInstantiate(&gx, g, 0) == cudaSuccess) {
            memcpy(st->gx_key[kind], key, sizeof(key));
        } else {
            gx = nullptr;
            (void)cudaGetLastError();
        }
        if (g) cudaGraphDestroy(g);
        if (!gx) return enqueue(ctx, st, intra, bslice, d_mbi, d_im4, d_mv4, d_mv4b, d_lev, s);
    }
    CUDA_CHECK(cudaGraphLaunch(gx, s));
cleanup:
    return err;
}

int vidk_cuda_stream_host_engine(const VidkCuStream *st) {
    return st->host_engine;
}

int vidk_cuda_stream_fetch_bins(VidkContext *ctx, VidkCuStream *st, cudaStream_t s,
                                const uint16_t **bins, const uint32_t **boff, size_t *bytes) {
    int err = 0;
    const size_t need = (size_t)st->h_res[1];
    if (st->h_res[0]) return 1;
    if (!st->host_engine || need > st->n * (st->slot_bytes / 2)) return VIDK_ERR(EIO);
    if (need > st->h_cbins_cap || !st->h_cbins) {
        const size_t cap = need > 2 * st->h_cbins_cap ? need + 65536 : 2 * st->h_cbins_cap;
        CUDA_CHECK(cudaFreeHost(st->h_cbins));
        st->h_cbins = nullptr;
        st->h_cbins_cap = 0;
        CUDA_CHECK(cudaMallocHost(&st->h_cbins, cap * sizeof(uint16_t)));
        st->h_cbins_cap = cap;
    }
    CUDA_CHECK(cudaMemcpyAsync(st->h_boff, st->d_boff, ((size_t)st->n + 1) * sizeof(uint32_t),
                               cudaMemcpyDeviceToHost, s));
    if (need)
        CUDA_CHECK(cudaMemcpyAsync(st->h_cbins, st->d_cbins, need * sizeof(uint16_t),
                                   cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    *bins = st->h_cbins;
    *boff = st->h_boff;
    *bytes = need * sizeof(uint16_t) + ((size_t)st->n + 1) * sizeof(uint32_t);
cleanup:
    return err;
}

int vidk_cuda_stream_fetch(VidkContext *ctx, VidkCuStream *st, cudaStream_t s,
                           const uint8_t **nals, size_t *bytes) {
    int err = 0;
    const size_t need = (size_t)st->h_res[1];
    if (st->h_res[0]) return 1;
    if (need > st->nal_cap) return VIDK_ERR(EIO); // cannot happen
    if (need > st->h_nal_cap) {
        const size_t cap = need > 2 * st->h_nal_cap ? need : 2 * st->h_nal_cap;
        CUDA_CHECK(cudaFreeHost(st->h_nal));
        st->h_nal = nullptr;
        st->h_nal_cap = 0;
        CUDA_CHECK(cudaMallocHost(&st->h_nal, cap));
        st->h_nal_cap = cap;
    }
    if (need)
        CUDA_CHECK(cudaMemcpyAsync(st->h_nal, st->d_nal, need, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    *nals = st->h_nal;
    *bytes = need;
cleanup:
    return err;
}
