/* Mosaic of real clips: tiles frames of the multi-frame clips of a folder (the shared
 * Y4M test clips) into a picture of any size, so that HD benchmarks run on real block
 * statistics and real motion although no real multi-frame HD clip is available.
 *
 * Layout: the picture is cut into MOSAIC_TILE_W x MOSAIC_TILE_H tiles in raster order
 * (the last column/row cropped). Tile (tx, ty) shows a centre crop of clip
 * (tx + s * ty) mod n (s = 1 for n = 2, else 2, so that no two edge neighbours show the
 * same clip when n >= 2), starting at a per-tile frame offset. Mosaic frame k shows
 * frame (offset + k) of every tile's clip, running forwards then backwards (ping-pong)
 * so consecutive mosaic frames are consecutive clip frames: the motion is real. */
#ifndef VIDK_BENCH_MOSAIC_H
#define VIDK_BENCH_MOSAIC_H

#include <stddef.h>

#include "vidkern/vidkern.h"

#define MOSAIC_TILE_W     320
#define MOSAIC_TILE_H     240
#define MOSAIC_MAX_CLIPS  16
#define MOSAIC_MAX_FRAMES 100 /* frames kept per clip */

typedef struct Mosaic Mosaic;

/* Load every *.y4m of `dir` that is 8-bit 4:2:0, at least one tile large and has at
 * least `min_frames` frames (use 2 for motion). Returns 0; VIDK_ERR(ENOENT) with a
 * message when no clip qualifies (or the folder is missing); VIDK_ERR(ENOMEM). */
int mosaic_open(Mosaic **m, const char *dir, int min_frames, char *err, size_t errlen);
void mosaic_close(Mosaic **m);

/* The names in folder dir that end in suffix (and are longer), sorted (strcmp), at most max,
 * into names[] (each to free()). Returns their count, or -1 when dir is NULL or cannot be
 * opened (errno says why). */
int mosaic_list_dir(const char *dir, const char *suffix, char **names, int max);
/* Frame index of a clip of n frames at time t: forwards, then backwards. */
int mosaic_ping_pong(int t, int n);
/* One line: "mosaic of 320x240 crops of: a, b, c". */
const char *mosaic_describe(const Mosaic *m);

/* Render mosaic frame k (any k >= 0) into pic: any size, 4:2:0 or 4:0:0 (chroma planes
 * are filled when present), 8..16 bits (samples scaled by << (bitdepth - 8)). The
 * padding margin is filled by edge replication. 0 or VIDK_ERR(EINVAL). */
int mosaic_frame(const Mosaic *m, int k, VidkPicture *pic);

/* Default folder of the real clips: $VIDK_VIDEO_DIR, else the first of a few known
 * places that exists (../shared/video relative to the source tree), else NULL. */
const char *mosaic_default_video_dir(void);

#endif
