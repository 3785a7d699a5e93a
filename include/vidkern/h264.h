/** @file h264.h  vidkern public API: the h264 family (included by vidkern.h). */
#ifndef VIDKERN_H264_H
#define VIDKERN_H264_H
/* Declarations are added by the h264 family. Include vidkern/vidkern.h, not this file. */
#endif
