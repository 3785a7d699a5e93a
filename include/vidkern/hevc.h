/** @file hevc.h  vidkern public API: the hevc family (included by vidkern.h). */
#ifndef VIDKERN_HEVC_H
#define VIDKERN_HEVC_H
/* Declarations are added by the hevc family. Include vidkern/vidkern.h, not this file. */
#endif
