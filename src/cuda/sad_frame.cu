// vidk_sad_frame on the device: every block's SAD for one displacement (mvx, mvy).
//
// Data path: the caller's pictures are pageable and strided, so each luma plane is first
// copied row by row on the host into a pinned slot laid out with the device pitch, then
// sent with one cudaMemcpyAsync at pinned speed (a pageable cudaMemcpy2DAsync would be
// staged by the driver through its own small pinned buffers instead). The SAD map comes
// back through a pinned slot too. Everything runs on the context's stream 0 and the call
// synchronises before it returns. Stream, slots, copies, launch check and stage timing go
// through the executor (exec.cuh), device only (no emulation, no tracked buffers).
#include "cuda_common.cuh"
#include "exec.cuh"

#include <string.h>

namespace {

// Device plane pitch: a multiple of 64 bytes with at least 4 bytes after the last sample
// of a row, so that the unaligned 4-sample reference read below (two aligned words) and
// the aligned current read never leave the row's allocation.
constexpr int kPitchAlign = 64;
constexpr int kThreads = 256;

// Four samples x..x+3 of one row, each column clamped into [0, w-1] (edge replication),
// packed little-endian as __vsadu4 expects: the sample at x in the low byte.
__device__ __forceinline__ unsigned gather4(const uint8_t *__restrict__ row, int x, int w) {
    unsigned v = 0;
#pragma unroll
    for (int i = 0; i < 4; i++)
        v |= (unsigned)row[min(max(x + i, 0), w - 1)] << (8 * i);
    return v;
}

// One thread sums a 4-sample-wide column strip of one block over all BH rows; the BW/4
// threads of a block are consecutive lanes of one warp and are reduced with shuffles.
// Coordinates follow src/sad_frame.c exactly: current rows/columns past the picture
// (partial blocks) and every reference coordinate are clamped into the picture.
// Launch bounds: 6 blocks of 256 per SM caps ptxas at 40 registers with no spill (see
// docs/CUDA.md); the edge loop stays rolled, it runs only on the frame-edge ring.
template <int BW, int BH>
__global__ void __launch_bounds__(kThreads, 6)
    sad_frame_kernel(const uint8_t *__restrict__ cur, const uint8_t *__restrict__ ref,
                     ptrdiff_t pitch, int w, int h, int nbx, int nblocks, int mvx, int mvy,
                     uint32_t *__restrict__ out) {
    constexpr int G = BW / 4; // 1..16 threads per block, a divisor of the warp size
    static_assert(BW % 4 == 0 && G <= 32 && 32 % G == 0, "block width");
    const int t = blockIdx.x * kThreads + threadIdx.x;
    const int b = t / G, g = t % G;
    unsigned acc = 0;
    if (b < nblocks) {
        const int x0 = (b % nbx) * BW, y0 = (b / nbx) * BH;
        const int cx = x0 + 4 * g; // multiple of 4: aligned in the device plane
        const int rx = cx + mvx;
        const bool cur_in = cx + 4 <= w;
        const bool ref_in = rx >= 0 && rx + 4 <= w;
        if (cur_in && ref_in) {
            // Inside on both pictures (every block but a frame-edge ring): aligned
            // current words; the reference words holding samples rx..rx+3, the funnel
            // shift dropping the (rx & 3) bytes before rx. Rows are still clamped.
            const unsigned sh = 8u * (unsigned)(rx & 3);
#pragma unroll 8
            for (int y = 0; y < BH; y++) {
                const int cy = min(y0 + y, h - 1); // y0 >= 0
                const int ry = min(max(y0 + mvy + y, 0), h - 1);
                const unsigned *c = reinterpret_cast<const unsigned *>(cur + cy * pitch + cx);
                const unsigned *r =
                    reinterpret_cast<const unsigned *>(ref + ry * pitch + (rx & ~3));
                acc = __vsadu4(__ldg(c), __funnelshift_r(__ldg(r), __ldg(r + 1), sh)) + acc;
            }
        } else {
            // Frame edge: every sample's column clamped.
#pragma unroll 1
            for (int y = 0; y < BH; y++) {
                const int cy = min(y0 + y, h - 1);
                const int ry = min(max(y0 + mvy + y, 0), h - 1);
                const unsigned c = gather4(cur + cy * pitch, cx, w);
                acc = __vsadu4(c, gather4(ref + ry * pitch, rx, w)) + acc;
            }
        }
    }
    // Every lane reaches the shuffles (no early return), so the full mask is valid.
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1)
        acc += __shfl_down_sync(0xffffffffu, acc, off, G);
    if (b < nblocks && g == 0) out[b] = acc;
}

template <int BW, int BH>
void launch(const uint8_t *cur, const uint8_t *ref, ptrdiff_t pitch, int w, int h, int nbx,
            int nblocks, int mvx, int mvy, uint32_t *out, cudaStream_t s) {
    const size_t threads = (size_t)nblocks * (BW / 4);
    sad_frame_kernel<BW, BH><<<vidk_cuda_grid(threads, kThreads), kThreads, 0, s>>>(
        cur, ref, pitch, w, h, nbx, nblocks, mvx, mvy, out);
}

// One launcher per VidkBlockSize, in the enum's order (checked against the public
// sizes at run time).
typedef void (*LaunchFn)(const uint8_t *, const uint8_t *, ptrdiff_t, int, int, int, int, int,
                         int, uint32_t *, cudaStream_t);
struct Launcher {
    int bw, bh;
    LaunchFn fn;
};
static_assert(VIDK_BLOCK_COUNT == 9, "one launcher per block size");
const Launcher kLaunch[VIDK_BLOCK_COUNT] = {
    {4, 4, launch<4, 4>},     {8, 4, launch<8, 4>},     {4, 8, launch<4, 8>},
    {8, 8, launch<8, 8>},     {16, 8, launch<16, 8>},   {8, 16, launch<8, 16>},
    {16, 16, launch<16, 16>}, {32, 32, launch<32, 32>}, {64, 64, launch<64, 64>},
};

// The executor's settings of this family: its three slots, the slot alignment of
// vidk_cuda_*_buffer, no ordering check.
const vidk_cux::ExecFamily kSadFamily = {"sad_frame", VIDK_SLOT_SAD_CUR, 3, VIDK_CUDA_ALIGN, 0,
                                         nullptr};

// Copy the luma plane into a pinned buffer with the device pitch; the bytes after each
// row are zeroed so that every byte sent to the device is defined.
void stage_plane(uint8_t *dst, ptrdiff_t pitch, const VidkPicture *p) {
    const uint8_t *src = (const uint8_t *)p->data[0];
    for (int y = 0; y < p->h; y++) {
        memcpy(dst + y * pitch, src + y * p->stride[0], (size_t)p->w);
        memset(dst + y * pitch + p->w, 0, (size_t)(pitch - p->w));
    }
}

} // namespace

extern "C" int vidk_cuda_sad_frame(VidkContext *ctx, const VidkPicture *cur,
                                   const VidkPicture *ref, int mvx, int mvy, VidkBlockSize bs,
                                   uint32_t *sads) {
    int err = 0;
    const int bw = vidk_block_width(bs), bh = vidk_block_height(bs);
    const int w = cur ? cur->w : 0, h = cur ? cur->h : 0;
    ptrdiff_t pitch;
    size_t plane, out_bytes;
    int nbx, nblocks;
    vidk_cux::Exec x;
    uint8_t *hc = nullptr, *hr = nullptr, *dc = nullptr, *dr = nullptr;
    uint32_t *ho = nullptr, *dout = nullptr;

    if (!ctx || !ctx->cuda) return VIDK_ERR_NODEV;
    // vidk_sad_frame validated the rest; the size bound keeps every index in int.
    if (!cur || !ref || !bw || !bh || !sads || w < 1 || h < 1 || w > VIDK_MAX_PICTURE_SIDE ||
        h > VIDK_MAX_PICTURE_SIDE || ref->w != w || ref->h != h || kLaunch[bs].bw != bw ||
        kLaunch[bs].bh != bh) {
        vidk_log(ctx, VIDK_LOG_ERROR, "cuda sad_frame: bad arguments (%dx%d, block %d)", w, h,
                 (int)bs);
        return VIDK_ERR(EINVAL);
    }
    pitch = (w + 4 + kPitchAlign - 1) / kPitchAlign * kPitchAlign;
    plane = (size_t)pitch * (size_t)h;
    nbx = (w + bw - 1) / bw;
    nblocks = nbx * ((h + bh - 1) / bh);
    out_bytes = (size_t)nblocks * sizeof(uint32_t);
    vidk_cux::exec_init(&x, ctx, false, &kSadFamily, 0);
    vidk_cux::exec_use_streams(&x, 1); // stream 0

    VIDK_TRY(vidk_cuda_enter(ctx));
    VIDK_TRY(vidk_cux::buf(&x, VIDK_SLOT_SAD_CUR, true, plane, &hc));
    VIDK_TRY(vidk_cux::buf(&x, VIDK_SLOT_SAD_REF, true, plane, &hr));
    VIDK_TRY(vidk_cux::buf(&x, VIDK_SLOT_SAD_OUT, true, out_bytes, &ho));
    VIDK_TRY(vidk_cux::buf(&x, VIDK_SLOT_SAD_CUR, false, plane, &dc));
    VIDK_TRY(vidk_cux::buf(&x, VIDK_SLOT_SAD_REF, false, plane, &dr));
    VIDK_TRY(vidk_cux::buf(&x, VIDK_SLOT_SAD_OUT, false, out_bytes, &dout));
    // Host staging happens before timing starts: the H2D stage is the DMA only.
    stage_plane(hc, pitch, cur);
    stage_plane(hr, pitch, ref);

    VIDK_TRY(vidk_cux::timing_start(&x));
    VIDK_TRY(vidk_cux::stage(&x, VIDK_CUDA_STAGE_H2D, true, 0, 0));
    VIDK_TRY(vidk_cux::h2d(&x, dc, hc, plane, 0));
    VIDK_TRY(vidk_cux::h2d(&x, dr, hr, plane, 0));
    VIDK_TRY(vidk_cux::stage(&x, VIDK_CUDA_STAGE_H2D, false, 0, 2 * plane));

    VIDK_TRY(vidk_cux::stage(&x, VIDK_CUDA_STAGE_KERNEL, true, 0, 0));
    kLaunch[bs].fn(dc, dr, pitch, w, h, nbx, nblocks, mvx, mvy, dout, x.st[0]);
    VIDK_TRY(vidk_cux::exec_launched(&x));
    VIDK_TRY(vidk_cux::stage(&x, VIDK_CUDA_STAGE_KERNEL, false, 0, 0));

    VIDK_TRY(vidk_cux::stage(&x, VIDK_CUDA_STAGE_D2H, true, 0, 0));
    VIDK_TRY(vidk_cux::d2h(&x, ho, dout, out_bytes, 0));
    VIDK_TRY(vidk_cux::stage(&x, VIDK_CUDA_STAGE_D2H, false, 0, out_bytes));
    VIDK_TRY(vidk_cux::finish(&x)); // synchronises stream 0, reads the timing
    memcpy(sads, ho, out_bytes);
cleanup:
    // Nothing queued may outlive the call (the next one rewrites the pinned slots): the
    // executor synchronises stream 0 and clears the last error.
    vidk_cux::exec_end(&x);
    return err;
}
