// The H.264 entropy coders (CAVLC, CABAC) on the device (src/cuda/stream.cu,
// docs/ENCODE_CUDA.md), for the coding loop (src/cuda/encode.cu). C++ side only.
#ifndef VIDK_STREAM_CUDA_CUH
#define VIDK_STREAM_CUDA_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "enc/h264_nal_core.h"
#include "internal.h"

struct VidkCuStream;

// CABAC: the device's room for one macroblock's bins by default; a frame with a macroblock of
// more (only at low QPs) is coded on the host.
enum { VIDK_CABAC_SLOT_BINS = 2048 };

// Device buffers for frames of mbw x mbh macroblocks (coded width W = 16 mbw) in `slices`
// slices of macroblock rows (1..mbh), CAVLC or CABAC (cabac 1: the pictures' QP qp), each
// macroblock coded into a slot of slot_bytes (a multiple of 4; CAVLC: VIDK_H264S_SLOT_BYTES
// holds any macroblock; CABAC: its bins, 2 bytes each, 2 VIDK_CABAC_SLOT_BINS by default);
// their initialisation is queued on s (the stream of the later frames, or synchronise it).
// 0 or an error (logged).
int vidk_cuda_stream_open(VidkContext *ctx, VidkCuStream **out, int mbw, int mbh, int slices,
                          size_t slot_bytes, int cabac, int qp, cudaStream_t s);
// Free everything (nullptr: nothing) and clear the pointer.
void vidk_cuda_stream_close(VidkCuStream **st);
// Queue on s, after the kernels that wrote the frame's decision words (d_mbi, raster),
// I_NxN modes (d_im4, W / 4 per row; nullptr without I_NxN), vectors (d_mv4, W / 4 per row;
// B slices, hdr->bslice: list 0's, list 1's in d_mv4b) and levels (d_lev, strides W and
// W / 2): the entropy coding of the frame (I slices in an IDR picture, hdr->intra) into its
// slices' NAL units on the device, complete (start code, NAL header, slice_header() from hdr
// with each slice's first_mb_in_slice, slice data, trailing bits, emulation prevention), then
// the download of the overflow flag and their size, as one CUDA graph per picture type
// (captured at the first call with these inputs). No synchronisation; the previous call's work
// on st must be done (its header is read when the work runs). 0 or an error.
int vidk_cuda_stream_code(VidkContext *ctx, VidkCuStream *st, const VidkH264SliceHdr *hdr,
                          const uint16_t *d_mbi, const uint8_t *d_im4, const VidkMv *d_mv4,
                          const VidkMv *d_mv4b, const int16_t *const d_lev[3], cudaStream_t s);
// Once s has passed vidk_cuda_stream_code (the caller synchronised): 1 when a macroblock did
// not fit its slot (CABAC: or a slice its area) (nothing downloaded: code the frame on the
// host), else 0 after the download of the slices' NAL units on s (synchronous): *nals (valid
// until the next call), *bytes of them, vidk_h264_stream_frame_nals's input. Or an error.
int vidk_cuda_stream_fetch(VidkContext *ctx, VidkCuStream *st, cudaStream_t s,
                           const uint8_t **nals, size_t *bytes);
// CABAC with its arithmetic engine on the host (the default; VIDK_CABAC_ENGINE=device keeps it
// on the device, a thread per slice): vidk_cuda_stream_code stops after the bins (passes 1
// and 2) and packs them back to back; 1 for such a coder, else 0.
int vidk_cuda_stream_host_engine(const VidkCuStream *st);
// Its fetch, once s has passed vidk_cuda_stream_code: 1 when a macroblock did not fit its
// slot (nothing downloaded: code the frame on the host), else 0 after the download on s
// (synchronous) of the bins (*bins, valid until the next call) and their first indexes per
// macroblock in raster order (*boff, n + 1), *bytes downloaded: the input of
// vidk_h264_stream_frame_bins. Or an error.
int vidk_cuda_stream_fetch_bins(VidkContext *ctx, VidkCuStream *st, cudaStream_t s,
                                const uint16_t **bins, const uint32_t **boff, size_t *bytes);
// Bytes downloaded by vidk_cuda_stream_code (the flag and the size).
size_t vidk_cuda_stream_res_bytes(const VidkCuStream *st);

#endif
