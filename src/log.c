#include <stdarg.h>

#include "internal.h"

void vidk_log(const VidkContext *ctx, VidkLogLevel level, const char *fmt, ...) {
    if (!ctx || !ctx->s.logger.callback || level > ctx->s.log_level) return;
    va_list ap;
    va_start(ap, fmt);
    ctx->s.logger.callback(ctx->s.logger.cookie, level, fmt, ap);
    va_end(ap);
}
