// The device coding loop's state (src/cuda/encode.cu: the frames' launches and receive;
// encode_open.cu: its allocation and release). Host code only; included by those two.
#ifndef VIDK_CUDA_ENCODE_CUDA_CUH
#define VIDK_CUDA_ENCODE_CUDA_CUH

#include "cuda_common.cuh"
#include "exec.cuh"
#include "stream_cuda.cuh"

#include "enc/enc.h"
#include "enc/h264_stream.h"

namespace vidk_encc {

// Counters of the statistics kernel: nnz[3], bits (mode, mv, level), parts[6], sse[3].
enum {
    SUM_NNZ = 0,
    SUM_BITS = 3,
    SUM_PARTS = 6,
    SUM_SSE = 6 + VIDK_ENC_PART_COUNT,
    SUM_COUNT = SUM_SSE + 3
};

// deblock_kernel's mailbox words a macroblock: luma 16, then chroma 8
constexpr int kDbkMail = 24;

// A frame's events: those before EV_I time its stages (info->stage_ms: created with timing),
// those from EV_I on only order streams. An event without timing is cheaper to wait for
// and to record on the device: creating these four without it made the whole file 2-3%
// faster at 1080p (session 20, H200, docs/PERFORMANCE.md).
enum { EV_T1, EV_T2, EV_T3, EV_T4, EV_S, EV_T5, EV_I, EV_SUM, EV_D, EV_L, EV_C, EV_COUNT };

// Source slots: frame i's source is in slot i % kSlots from its send to its receive, so that
// the caller can send the frames after the one being coded (their uploads then run while it
// is coded, off the frame-to-frame path).
constexpr int kSlots = 3; // frames in flight (VidkEncGeometry.max_pending)

// A picture of at least this many bytes is copied into the staging buffer by the send on
// EncCuda.up_pool's threads (smaller ones by the caller's thread alone).
constexpr size_t kStageSplit = (size_t)1 << 20;

// With B-frames: the frames coded before one queued ahead (one or two), not written yet (its
// slice header follows theirs), in coding order.
struct Pending {
    int n;
    int64_t index[2];
    VidkH264Pic kind[2];
};

// A frame queued on the device by launch_frame.
struct Launched {
    int64_t index; // -1: none
    EncFrame f;
    bool gpu_st;            // its stream is coded on the device (stream.cu)
    int rec;                // its reconstruction: EncCuda.d_rec[rec]
    unsigned long long d2h; // bytes its launch downloads
};

// Frame i's buffers that its entropy coding reads (on s_ent[i % kSlots]) while frames i + 1 and
// i + 2 are coded (on s_code), and what the host reads after it: one per slot, frame i's [i %
// kSlots].
struct EncCuda {
    int pitch[3]; // device row pitch (samples) per plane
    size_t plane_bytes[3];
    // sources, coded size, one slot per frame sent ahead: kSlots, with B-frames
    // VIDK_ENC_MAX_PENDING (frame i's in slot i % nsrc)
    int nsrc;
    uint8_t *d_src[VIDK_ENC_MAX_PENDING][3];
    // reconstructions: frame i's is [i % 2], its reference the other; with B-frames the
    // anchors' alternate (VidkEncoder.cur, as on the CPU), [2] is the B frames', [3] the
    // reference B frame's (b_pyramid); with B-frames and the filter [4] the B frames' too,
    // every other one (brec_alt: the next is [4]): a B frame that is not a reference is
    // filtered beside the next frame's coding (s_dbk), which then writes the other one
    uint8_t *d_rec[5][3];
    bool brec_alt;
    int last_rec[2]; // with B-frames: the d_rec index of the last frame launched, the one
                     // before
    EncUnitStat *d_stat[kSlots]; // by slot: the unit sums that stats_kernel adds up
    int16_t *d_lev[kSlots][3];   // by slot
    VidkMv *d_mv[kSlots];        // by slot
    uint16_t *d_mbi[kSlots];     // by slot; VIDK_ENC_OUT_STREAM: decision words
    uint8_t *d_im4[kSlots];      // by slot; I_NxN (intra4x4, intra8x8): the blocks' modes
    VidkMv *d_dmv[2];            // H.264 P frames: the decision passes' vectors
    uint16_t *d_dmb[2];          // and words (enc_core.h enc_h264_decide_pass)
    uint32_t *d_dist;            // ENC_H264_DIST_N per macroblock: what they compare
    uint32_t *d_skipc;           // 2 per macroblock: the P_Skip candidate's vector and SATD
    VidkMv *d_part_mv;           // VIDK_ME_NPART per macroblock: the refined vectors
    uint8_t *d_qpl;              // the reference's half-sample planes (EncFrame.qpl)
    int *d_ilist; // P frames' intra macroblocks in raster order (intra_list_kernel),
    int *d_iflag; // per macroblock: 1 once coded (intra_p_kernel),
    int *d_icnt;  // [0] how many, [1] the tickets handed out
    uint32_t *d_energy[kSlots];        // by slot
    unsigned long long *d_sum[kSlots]; // by slot
    int *d_progress;
    uint8_t *d_dbs; // VidkEncParams.deblock: 32 bS values per macroblock (deblock_bs_kernel)
    // the values passed down between rows: deblock_kernel's (on s_dbk) and, with B-frames,
    // b_direct_kernel's (on s_code; the two run at once)
    unsigned long long *d_mail, *d_mail_b;
    unsigned mail_tag, mail_tag_b;          // the tag of the last kernel that used each
    unsigned long long *h_sum[kSlots];      // pinned, by slot
    uint8_t *h_stage[VIDK_ENC_MAX_PENDING]; // pinned source staging (w x h, 3 planes), per slot
    VidkThreadPool *up_pool; // the send's copies into h_stage, on up to 8 host cores
    uint8_t *h_out;          // pinned staging of the downloads
    size_t out_bytes;
    // upload, coding, entropy coding, stream fetch, other downloads, the intra estimate,
    // the statistics, the deblocking filter (with B-frames; else on s_code)
    cudaStream_t s_up, s_code, s_dl, s_out, s_side, s_stat, s_dbk;
    // with B-frames: recorded on s_dbk after each reference picture's filter (and after an
    // unfiltered one's coding), waited for by the next frame's coding
    cudaEvent_t ev_ref;
    cudaStream_t s_ent[kSlots]; // by slot: the entropy coding of consecutive frames overlaps
    cudaEvent_t up_beg[VIDK_ENC_MAX_PENDING], up_end[VIDK_ENC_MAX_PENDING],
        ev[kSlots][EV_COUNT];
    unsigned long long h2d[VIDK_ENC_MAX_PENDING];
    // B-frames (docs/ENCODE_CUDA.md "B frames"; coded one frame at a time, in coding order):
    // list 1's decision vectors, refined vectors and half-sample planes, the frame with
    // list 1's reference (d_f1, from the pinned h_f1), the list-1 vectors of the B frame coded,
    // the last anchor's vectors and words (the co-located picture; col_intra: an I picture)
    // (d_colbmv / d_colbmb: b_pyramid, the reference B frame's, enc_h264_b_mv_of)
    VidkMv *d_dmvb[2], *d_part_mv1, *d_mv4b[kSlots], *d_colmv, *d_colbmv;
    uint8_t *d_qpl1;
    uint16_t *d_colmb, *d_colbmb;
    EncFrame *d_f1[kSlots], *h_f1[kSlots]; // by slot
    bool col_intra;
    // B-frames' adaptive placement (vidk_cuda_enc_still): by source slot, how many 16x16
    // blocks of the frame sent into it have vector (0, 0) against the frame before it (the
    // look-ahead's search on s_up after the upload), la_tag the frame (-1: none), la_ev its end
    unsigned *d_la_zero, *h_la_zero; // [nsrc], the second pinned
    int64_t la_tag[VIDK_ENC_MAX_PENDING];
    cudaEvent_t la_ev[VIDK_ENC_MAX_PENDING];
    // VIDK_ENC_OUT_STREAM: the entropy coder on the device (stream.cu), unless the
    // environment asks for the host writer (VIDK_STREAM_HOST=1: the decisions, vectors and
    // levels go down, as before); st_slices: its slices per picture
    VidkCuStream *st[kSlots]; // by slot
    int st_slices;
    size_t st_slot;       // its slot size (0: no device coder)
    bool inter_waves;     // inter_kernel's grid is more than two blocks per SM
    int dist_grid;        // dist_kernel's blocks resident at once on the device
    Launched pre[kSlots]; // by slot: the frames whose work is queued ahead of their receive
    bool no_ahead; // VIDK_ENC_AHEAD=0 (a test hook): with B-frames no frame is queued ahead
    int pre_err[kSlots];
};

inline EncCuda *state(const VidkEncoder *e) {
    return static_cast<EncCuda *>(e->cuda);
}

// Waits for every stream of the encoder (the close, a failed receive), errors ignored.
void sync_streams(const EncCuda *c);
// The frame's decisions, vectors and levels into the host writer's buffers (encode_open.cu).
int download_decisions(VidkContext *ctx, VidkEncoder *e, int slot, int bf, cudaStream_t s,
                       unsigned long long *bytes);
// The kernels' loading and cache configuration, EncCuda.inter_waves (encode.cu).
int kernels_prepare(VidkContext *ctx, VidkEncoder *e, EncCuda *c);

} // namespace vidk_encc

#endif
