/* Entry points of the CUDA backend for builds without CUDA. */
#include "internal.h"

#if !VIDK_HAVE_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/me_cuda.h"

int vidk_cuda_count(void) {
    return 0;
}
int vidk_cuda_info(int ordinal, VidkDeviceInfo *info) {
    (void)ordinal;
    return info ? VIDK_ERR_NODEV : VIDK_ERR(EINVAL);
}
int vidk_cuda_open(VidkContext *ctx) {
    vidk_log(ctx, VIDK_LOG_ERROR, "vidkern was built without CUDA");
    return VIDK_ERR_NODEV;
}
void vidk_cuda_close(VidkContext *ctx) {
    (void)ctx;
}
int vidk_cuda_device_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr) {
    (void)ctx, (void)slot, (void)bytes, (void)ptr;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_host_buffer(VidkContext *ctx, int slot, size_t bytes, void **ptr) {
    (void)ctx, (void)slot, (void)bytes, (void)ptr;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_host_register(VidkContext *ctx, void *ptr, size_t bytes) {
    (void)ctx, (void)ptr, (void)bytes;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_host_unregister(VidkContext *ctx, void *ptr) {
    (void)ctx, (void)ptr;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_host_pinned(const VidkContext *ctx, const void *ptr, size_t bytes) {
    (void)ctx, (void)ptr, (void)bytes;
    return 0;
}
int vidk_cuda_stream_count(const VidkContext *ctx) {
    (void)ctx;
    return 0;
}
void *vidk_cuda_stream(const VidkContext *ctx, int i) {
    (void)ctx, (void)i;
    return NULL;
}
int vidk_cuda_last_timing(const VidkContext *ctx, VidkCudaTiming *t) {
    return ctx && t ? VIDK_ERR_NODEV : VIDK_ERR(EINVAL);
}
int vidk_cuda_sad_frame(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        int mvx, int mvy, VidkBlockSize bs, uint32_t *sads) {
    (void)ctx, (void)cur, (void)ref, (void)mvx, (void)mvy, (void)bs, (void)sads;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_me_search(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                        const VidkMeParams *p, VidkMeField *out) {
    (void)ctx, (void)cur, (void)ref, (void)p, (void)out;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_me_search_ex(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                           const VidkMeParams *p, VidkMeField *out, unsigned flags) {
    (void)ctx, (void)cur, (void)ref, (void)p, (void)out, (void)flags;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_me_search_seq(VidkContext *ctx, const VidkPicture *cur, const VidkPicture *ref,
                            const VidkPicture *next, const VidkMeParams *p, VidkMeField *out,
                            unsigned flags) {
    (void)ctx, (void)cur, (void)ref, (void)next, (void)p, (void)out, (void)flags;
    return VIDK_ERR_NODEV;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int vidk_cuda_stub_unused;
#endif

#if !VIDK_HAVE_CUDA
#include "enc.h"
int vidk_cuda_enc_open(VidkEncoder *e) {
    vidk_log(e->ctx, VIDK_LOG_ERROR, "vidkern was built without CUDA");
    return VIDK_ERR_NODEV;
}
int vidk_cuda_enc_send(VidkEncoder *e, const VidkPicture *src) {
    (void)e, (void)src;
    return VIDK_ERR_NODEV;
}
int vidk_cuda_enc_receive(VidkEncoder *e, VidkPicture *recon, VidkEncMaps *maps,
                          VidkEncFrameInfo *info) {
    (void)e, (void)recon, (void)maps, (void)info;
    return VIDK_ERR_NODEV;
}
void vidk_cuda_enc_close(VidkEncoder *e) {
    (void)e;
}
#endif
