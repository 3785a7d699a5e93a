// The cuda backend's table (backend.h): the C-linkage launchers of src/cuda/*_cuda.h with
// the public API's defaults (opts NULL: the best settings). Arguments arrive validated;
// operations the device does not have (hevc residuals, block arrays) run on the CPU code
// with ops.run serial.
#include "cuda/cuda_backend.h"
#include "cuda/h264_cuda.h"
#include "cuda/hevc_cuda.h"
#include "cuda/me_cuda.h"

namespace {

int me_search(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
              const VidkMeParams *p, VidkMeField *out) {
    const unsigned f = p->flags & VIDK_ME_REF_IS_PREV_CUR ? VIDK_CUDA_ME_REF_IS_PREV_CUR : 0;
    return vidk_cuda_me_search_seq(ctx, cur, ref, nullptr, p, out, f);
}

int h264_batch_inverse(VidkContext *ctx, const VidkH264Batch *b, VidkPicture *pic) {
    return vidk_cuda_h264_batch_inverse(ctx, b, pic, nullptr);
}

int h264_frame_inverse(VidkContext *ctx, const VidkH264CoefFrame *fr, VidkPicture *pic) {
    return vidk_cuda_h264_frame_inverse(ctx, fr, pic, nullptr);
}

int h264_batch_forward(VidkContext *ctx, const VidkPicture *src, const VidkPicture *pred,
                       VidkH264CoefFrame *fr, VidkH264Batch *b) {
    return vidk_cuda_h264_batch_forward(ctx, src, pred, fr, b, nullptr);
}

int hevc_forward(VidkContext *ctx, VidkHevcBatch *b) {
    return vidk_cuda_hevc_forward(ctx, b, nullptr);
}

int hevc_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic) {
    return vidk_cuda_hevc_inverse(ctx, b, pic, nullptr);
}

VidkOps make_ops() {
    VidkOps o = {};
    o.run = vidk_run_serial;
    o.sad.frame = vidk_cuda_sad_frame;
    o.me.search = me_search;
    o.h264.batch_inverse = h264_batch_inverse;
    o.h264.frame_inverse = h264_frame_inverse;
    o.h264.batch_forward = h264_batch_forward;
    o.hevc.forward = hevc_forward;
    o.hevc.inverse = hevc_inverse;
    o.enc.open = vidk_cuda_enc_open;
    o.enc.send = vidk_cuda_enc_send;
    o.enc.receive = vidk_cuda_enc_receive;
    o.enc.close = vidk_cuda_enc_close;
    o.enc.still = vidk_cuda_enc_still;
    o.dev.count = vidk_cuda_count;
    o.dev.info = vidk_cuda_info;
    o.dev.open = vidk_cuda_open;
    o.dev.close = vidk_cuda_close;
    o.dev.host_register = vidk_cuda_host_register;
    o.dev.host_unregister = vidk_cuda_host_unregister;
    return o;
}

} // namespace

extern "C" const VidkOps vidk_ops_cuda = make_ops();
