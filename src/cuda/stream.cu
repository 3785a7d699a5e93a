// The H.264 CAVLC entropy coder on the device (docs/ENCODE_CUDA.md, "Entropy coding on the
// GPU"). The arithmetic is src/enc/h264_stream_core.h, the source of the host writer: each
// kernel below is one call of a core function per macroblock. Per frame, on one stream:
//   count  (one thread per macroblock): TotalCoeff of its 4x4 blocks into the maps (nC);
//   code   (one thread per macroblock): its macroblock_layer() into its slot, its bit count,
//          P_Skip flag and scan key; a macroblock that does not fit its slot raises the
//          overflow flag (the caller then codes the frame on the host);
//   scan   (CUB, inclusive max of the keys): the last coded macroblock at or before each one
//          in its slice, which gives every mb_skip_run;
//   len    (one thread per macroblock): the bits it adds to its slice (ue(mb_skip_run) +
//          macroblock_layer(), and the slice's final mb_skip_run);
//   scan   (CUB, exclusive sum of the lengths): its bit position in the packed data;
//   zero   the packed words up to the frame's length;
//   pack   (one thread per macroblock): its bits ORed into the packed words (atomicOr: two
//          macroblocks may share a word); the slice offsets;
// then the slice offsets and the flag go down (vidk_cuda_stream_code), and after the
// caller's synchronisation the packed bytes (vidk_cuda_stream_fetch). The host writes the
// slice headers, joins and inserts emulation prevention (vidk_h264_stream_frame_packed).
#include "cuda_common.cuh"
#include "stream_cuda.cuh"

#include <cub/device/device_scan.cuh>
#include <stdlib.h>

#include "enc/h264_stream_core.h"

struct VidkCuStream {
    int mbw, mbh, slices, n;
    size_t slot_bytes;
    uint8_t *d_tc;     // TotalCoeff maps: luma (16 n), Cb (4 n), Cr (4 n)
    uint8_t *d_slots;  // n slots of slot_bytes
    uint32_t *d_bits;  // per macroblock: bits of its macroblock_layer()
    uint8_t *d_skip;   // per macroblock: P_Skip
    int32_t *d_key;    // per macroblock: scan key (vidk_h264s_key)
    int32_t *d_last;   // inclusive max-scan of the keys
    uint64_t *d_len;   // n + 1 lengths (the last 0)
    uint64_t *d_off;   // n + 1 bit positions
    uint32_t *d_words; // the packed slice data
    size_t words_cap;  // its size in words
    uint64_t *d_res;   // [0] overflow flag, [1 .. slices + 1] slice offsets
    void *d_temp;      // CUB scratch
    size_t temp_bytes;
    uint64_t *h_res; // pinned copy of d_res
    uint8_t *h_bits; // pinned packed bytes
    size_t h_bits_cap;
};

namespace {

struct MaxOp {
    __host__ __device__ __forceinline__ int32_t operator()(int32_t a, int32_t b) const {
        return a > b ? a : b;
    }
};

__global__ void __launch_bounds__(128) count_kernel(const VidkH264sCtx c) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c.mbw * c.mbh) vidk_h264s_count(&c, i);
}

__global__ void __launch_bounds__(64)
    code_kernel(const VidkH264sCtx c, uint8_t *slots, size_t slot_bytes, uint32_t *bits,
                uint8_t *skip, int32_t *key, uint64_t *res) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c.mbw * c.mbh && vidk_h264s_code_slot(&c, i, slots, slot_bytes, bits, skip, key))
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

// Zero the words the frame's bits occupy, and a few more (the host reads 8 bytes past).
__global__ void __launch_bounds__(256)
    zero_kernel(uint32_t *words, size_t cap, const uint64_t *off, int n) {
    size_t nw = (size_t)((off[n] + 31) / 32) + 4;
    if (nw > cap) nw = cap;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < nw;
         k += (size_t)gridDim.x * blockDim.x)
        words[k] = 0;
}

__global__ void __launch_bounds__(128)
    pack_kernel(const VidkH264sCtx c, const int32_t *last, const uint8_t *skip,
                const uint32_t *bits, const uint8_t *slots, size_t slot_bytes,
                const uint64_t *off, uint32_t *words, uint64_t *slice_off) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c.mbw * c.mbh)
        vidk_h264s_pack(&c, i, last, skip, bits, slots, slot_bytes, off, words, slice_off);
}

unsigned blocks(size_t n, unsigned per) {
    return (unsigned)((n + per - 1) / per);
}

} // namespace

void vidk_cuda_stream_close(VidkCuStream **pst) {
    VidkCuStream *st = pst ? *pst : nullptr;
    if (!st) return;
    cudaFree(st->d_tc);
    cudaFree(st->d_slots);
    cudaFree(st->d_bits);
    cudaFree(st->d_skip);
    cudaFree(st->d_key);
    cudaFree(st->d_last);
    cudaFree(st->d_len);
    cudaFree(st->d_off);
    cudaFree(st->d_words);
    cudaFree(st->d_res);
    cudaFree(st->d_temp);
    cudaFreeHost(st->h_res);
    cudaFreeHost(st->h_bits);
    (void)cudaGetLastError();
    free(st);
    *pst = nullptr;
}

int vidk_cuda_stream_open(VidkContext *ctx, VidkCuStream **out, int mbw, int mbh, int slices,
                          size_t slot_bytes, cudaStream_t s) {
    int err = 0;
    size_t t1 = 0, t2 = 0, n = 0;
    VidkCuStream *st = static_cast<VidkCuStream *>(calloc(1, sizeof(VidkCuStream)));
    *out = nullptr;
    if (!st) return VIDK_ERR(ENOMEM);
    if (mbw < 1 || mbh < 1 || slices < 1 || slices > mbh || slot_bytes < 4 || slot_bytes % 4 ||
        (int64_t)mbw * mbh > (1 << 26)) {
        free(st);
        return VIDK_ERR(EINVAL);
    }
    st->mbw = mbw, st->mbh = mbh, st->slices = slices, st->n = mbw * mbh;
    st->slot_bytes = slot_bytes;
    n = (size_t)st->n;
    // the packed data: at most every slot full plus two ue() codes (< 64 bits each) per
    // macroblock, and slack for the host's 8-byte reads
    st->words_cap = n * (slot_bytes + 16) / 4 + 16;
    CUDA_CHECK(cudaMalloc(&st->d_tc, n * 24));
    CUDA_CHECK(cudaMalloc(&st->d_slots, n * slot_bytes));
    CUDA_CHECK(cudaMalloc(&st->d_bits, n * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_skip, n));
    CUDA_CHECK(cudaMalloc(&st->d_key, n * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_last, n * sizeof(int32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_len, (n + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_off, (n + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMalloc(&st->d_words, st->words_cap * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&st->d_res, (size_t)(slices + 2) * sizeof(uint64_t)));
    // The slots' tails are read (and dropped) when the last bits of a macroblock are
    // packed: initialised once, so that nothing reads uninitialised memory.
    CUDA_CHECK(cudaMemsetAsync(st->d_slots, 0, n * slot_bytes, s));
    CUDA_CHECK(
        cub::DeviceScan::InclusiveScan(nullptr, t1, st->d_key, st->d_last, MaxOp(), st->n));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, t2, st->d_len, st->d_off, st->n + 1));
    st->temp_bytes = t1 > t2 ? t1 : t2;
    CUDA_CHECK(cudaMalloc(&st->d_temp, st->temp_bytes ? st->temp_bytes : 1));
    CUDA_CHECK(cudaMallocHost(&st->h_res, (size_t)(slices + 2) * sizeof(uint64_t)));
    st->h_bits_cap = n * 64 + 65536;
    CUDA_CHECK(cudaMallocHost(&st->h_bits, st->h_bits_cap));
    *out = st;
    return 0;
cleanup:
    vidk_cuda_stream_close(&st);
    return err;
}

size_t vidk_cuda_stream_res_bytes(const VidkCuStream *st) {
    return (size_t)(st->slices + 2) * sizeof(uint64_t);
}

int vidk_cuda_stream_code(VidkContext *ctx, VidkCuStream *st, int intra, const uint16_t *d_mbi,
                          const VidkMv *d_mv4, const int16_t *const d_lev[3], cudaStream_t s) {
    int err = 0;
    VidkH264sCtx c;
    const int n = st->n;
    c.mbw = st->mbw, c.mbh = st->mbh, c.W = st->mbw * 16, c.slices = st->slices;
    c.intra = intra, c.row0 = 0;
    c.mbi = d_mbi, c.mv4 = d_mv4;
    for (int p = 0; p < 3; p++)
        c.lev[p] = d_lev[p];
    c.tcl = st->d_tc;
    c.tcc[0] = st->d_tc + (size_t)n * 16;
    c.tcc[1] = st->d_tc + (size_t)n * 20;
    CUDA_CHECK(cudaMemsetAsync(st->d_res, 0, sizeof(uint64_t), s)); // the overflow flag
    count_kernel<<<blocks((size_t)n, 128), 128, 0, s>>>(c);
    CUDA_CHECK_LAUNCH();
    code_kernel<<<blocks((size_t)n, 64), 64, 0, s>>>(c, st->d_slots, st->slot_bytes, st->d_bits,
                                                     st->d_skip, st->d_key, st->d_res);
    CUDA_CHECK_LAUNCH();
    {
        size_t tb = st->temp_bytes;
        CUDA_CHECK(cub::DeviceScan::InclusiveScan(st->d_temp, tb, st->d_key, st->d_last,
                                                  MaxOp(), n, s));
    }
    len_kernel<<<blocks((size_t)n + 1, 256), 256, 0, s>>>(c, st->d_last, st->d_skip, st->d_bits,
                                                          st->d_len);
    CUDA_CHECK_LAUNCH();
    {
        size_t tb = st->temp_bytes;
        CUDA_CHECK(
            cub::DeviceScan::ExclusiveSum(st->d_temp, tb, st->d_len, st->d_off, n + 1, s));
    }
    {
        const unsigned nb = blocks(st->words_cap, 256), grid = nb < 1024 ? nb : 1024;
        zero_kernel<<<grid, 256, 0, s>>>(st->d_words, st->words_cap, st->d_off, n);
        CUDA_CHECK_LAUNCH();
    }
    pack_kernel<<<blocks((size_t)n, 128), 128, 0, s>>>(c, st->d_last, st->d_skip, st->d_bits,
                                                       st->d_slots, st->slot_bytes, st->d_off,
                                                       st->d_words, st->d_res + 1);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpyAsync(st->h_res, st->d_res, vidk_cuda_stream_res_bytes(st),
                               cudaMemcpyDeviceToHost, s));
cleanup:
    return err;
}

int vidk_cuda_stream_fetch(VidkContext *ctx, VidkCuStream *st, cudaStream_t s,
                           const uint8_t **bits, const uint64_t **off, size_t *bytes) {
    int err = 0;
    size_t need = 0;
    if (st->h_res[0]) return 1;
    // the host reads 8 bytes past the last bit (vidk_h264_stream_frame_packed)
    need = (size_t)((st->h_res[1 + st->slices] + 7) / 8) + 8;
    if (need > st->words_cap * sizeof(uint32_t)) return VIDK_ERR(EIO); // cannot happen
    if (need > st->h_bits_cap) {
        const size_t cap = need > 2 * st->h_bits_cap ? need : 2 * st->h_bits_cap;
        CUDA_CHECK(cudaFreeHost(st->h_bits));
        st->h_bits = nullptr;
        st->h_bits_cap = 0;
        CUDA_CHECK(cudaMallocHost(&st->h_bits, cap));
        st->h_bits_cap = cap;
    }
    CUDA_CHECK(cudaMemcpyAsync(st->h_bits, st->d_words, need, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    *bits = st->h_bits;
    *off = st->h_res + 1;
    *bytes = need;
cleanup:
    return err;
}
