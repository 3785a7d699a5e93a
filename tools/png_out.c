/* PNG output of the tools (vio_write_png in picio.h): libpng's simplified write API when
 * the build found libpng, else a clear ENOSYS. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "picio.h"

#if VIDK_HAVE_PNG
#include <png.h>
#endif

/* 2^24 a side: far beyond any picture here, and w * channels fits png_int_32. */
static int png_args_bad(const char *name, const uint8_t *pixels, int w, int h, ptrdiff_t stride,
                        int channels, char *err, size_t errlen) {
    if (!pixels || w < 1 || h < 1 || w > (1 << 24) || h > (1 << 24) ||
        (channels != 1 && channels != 3) || stride < (ptrdiff_t)w * channels) {
        if (err && errlen)
            snprintf(err, errlen,
                     "%s: bad PNG image (%dx%d, %d channels, stride %td; need 1 or 3 "
                     "channels and stride >= width * channels)",
                     name, w, h, channels, stride);
        return VIDK_ERR(EINVAL);
    }
#if VIDK_HAVE_PNG
    /* The simplified API counts the row stride in components: bytes, for 8-bit samples. */
    if (stride > INT32_MAX) {
        if (err && errlen) snprintf(err, errlen, "%s: PNG row stride too large", name);
        return VIDK_ERR(EINVAL);
    }
    return 0;
#else
    if (err && errlen)
        snprintf(err, errlen, "%s: PNG output is not available (built without libpng)", name);
    return VIDK_ERR(ENOSYS);
#endif
}

int vio_write_png_stream(FILE *f, const char *name, const uint8_t *pixels, int w, int h,
                         ptrdiff_t stride, int channels, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!name) name = "(null)";
    int ret = png_args_bad(name, pixels, w, h, stride, channels, err, errlen);
    if (ret < 0) return ret;
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "%s: no stream", name);
        return VIDK_ERR(EINVAL);
    }
#if VIDK_HAVE_PNG
    png_image img;
    memset(&img, 0, sizeof(img));
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)w;
    img.height = (png_uint_32)h;
    img.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    if (!png_image_write_to_stdio(&img, f, 0, pixels, (png_int_32)stride, NULL)) {
        if (err && errlen) snprintf(err, errlen, "%s: PNG write failed: %s", name, img.message);
        ret = VIDK_ERR(EIO);
    }
    png_image_free(&img);
    errno = 0;
    if (fflush(f) != 0 && !ret) {
        const int e = errno ? errno : EIO;
        if (err && errlen) snprintf(err, errlen, "%s: write error: %s", name, strerror(e));
        ret = VIDK_ERR(e);
    }
#endif
    return ret;
}

int vio_write_png(const char *path, const uint8_t *pixels, int w, int h, ptrdiff_t stride,
                  int channels, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    const char *name = path && !strcmp(path, "-") ? "stdout" : path ? path : "(null)";
    /* Arguments first: a bad picture creates no file. */
    int ret = png_args_bad(name, pixels, w, h, stride, channels, err, errlen);
    if (ret < 0) return ret;
    VioOut *o = NULL;
    if ((ret = vio_out_open(&o, path, err, errlen)) < 0) return ret;
    ret = vio_write_png_stream(vio_out_stream(o), name, pixels, w, h, stride, channels, err,
                               errlen);
    if (ret < 0) {
        vio_out_close(&o, 0, NULL, 0);
        return ret;
    }
    return vio_out_close(&o, 1, err, errlen);
}
