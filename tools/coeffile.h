/* Coefficient-frame files (docs/COEFFORMAT.md): the file format of
 * vidkern-bench h264 --save / --load and of the tests. Not part of the library. */
#ifndef VIDK_TOOLS_COEFFILE_H
#define VIDK_TOOLS_COEFFILE_H

#include <stdio.h>

#include "vidkern/vidkern.h"

/**
 * @brief Append one coefficient frame to a file (format: docs/COEFFORMAT.md).
 * @return 0; VIDK_ERR(EINVAL) for a NULL argument or an invalid frame;
 *         VIDK_ERR(EIO) on a write error.
 */
int coeffile_write(FILE *f, const VidkH264CoefFrame *fr);

/**
 * @brief Read the next coefficient frame of a file (format: docs/COEFFORMAT.md).
 *
 * The record is fully validated (magic, version, sizes, flags, qP' ranges, scaling
 * values, reserved fields, every mask and count, the trailing checksum) before it is
 * returned. `fr` is (re)allocated to the record's geometry: pass a zeroed frame or
 * one from an earlier read / vidk_h264_coef_frame_alloc(); it is freed and zeroed on
 * failure.
 *
 * @return 1 when a frame was read; 0 at the end of the file (no byte left);
 *         VIDK_ERR(EINVAL) for a malformed, truncated or unsupported record;
 *         VIDK_ERR(EIO) on a read error; VIDK_ERR(ENOMEM).
 */
int coeffile_read(FILE *f, VidkH264CoefFrame *fr);

#endif
