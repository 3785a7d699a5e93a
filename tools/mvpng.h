/* Motion field -> picture (PNG through vio_write_png).
 *
 * wheel:  every block is painted with the colour of its vector: direction = hue
 *         (right = red, down = ..., as the Middlebury flow colour code, image y down),
 *         length = saturation (0 = white, the field's longest vector or `norm` = full
 *         colour).
 * arrows: the current picture's luma at 40 % brightness with one arrow per block from
 *         the block centre to centre + mv (the matching reference position), coloured
 *         by the same wheel; zero vectors are a single dot. Blocks narrower than 8
 *         samples are drawn every 8 samples so the arrows stay readable. */
#ifndef VIDK_TOOLS_MVPNG_H
#define VIDK_TOOLS_MVPNG_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

typedef enum MvPngMode { MVPNG_WHEEL = 0, MVPNG_ARROWS } MvPngMode;

/* "wheel" / "arrows" -> mode, -1 if unknown. */
int mvpng_mode_from_name(const char *name);

/* The colour of hue h6 (0..6: red, yellow, green, cyan, blue, magenta) and saturation s
 * (0..1) at value 1 (HSV), 8-bit RGB. */
void mvpng_hsv(double h6, double s, uint8_t out[3]);

/* Render shape bs of field f into rgb (f->w x f->h x 3 bytes, row stride f->w * 3).
 * pic (luma, 8..16 bits, f's size) is the arrows background; NULL = black. norm = vector
 * length of full saturation; 0 = the field's longest vector. 0 or VIDK_ERR(EINVAL). */
int mvpng_render(const VidkMeField *f, VidkBlockSize bs, const VidkPicture *pic, MvPngMode mode,
                 int norm, uint8_t *rgb);

#endif
