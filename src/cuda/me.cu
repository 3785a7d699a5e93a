// Placeholder until the CUDA motion search lands.
#include "me_cuda.h"

extern "C" int vidk_cuda_me_search(VidkContext *ctx, const VidkPicture *cur,
                                   const VidkPicture *ref, const VidkMeParams *p,
                                   VidkMeField *out)
{
    (void)ctx, (void)cur, (void)ref, (void)p, (void)out;
    return VIDK_ERR(ENOSYS);
}
